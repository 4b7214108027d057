//! Tells the build scripts of the crates that depend on this one where its source and
//! that of its macros are (`DEP_FERROCUDA_KERNELS_DIR`, `DEP_FERROCUDA_KERNELS_MACROS_DIR`):
//! the `ferrocuda` crate's build compiles this crate for nvptx64 from source, and a
//! packaged `ferrocuda` (crates.io) has no `gpu-kernels/` folder of its own (../build.rs).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:dir={dir}");
    if let Ok(macros) = std::env::var("DEP_FERROCUDA_KERNEL_MACROS_DIR") {
        println!("cargo:macros_dir={macros}");
    }
}
