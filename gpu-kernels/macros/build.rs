//! Tells the build scripts of the crates that depend on this one where its source is
//! (`DEP_FERROCUDA_KERNEL_MACROS_DIR`): the `ferrocuda` crate's build compiles the kernel
//! crate, which uses these macros, for nvptx64 from source (../../build.rs).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:dir={dir}");
}
