//! Reproductions of the experiments of the theses ferrocuda started from, kept apart from
//! the library: the GPU SpMV variants of Kautz (2011) (BCSR V1-V3, ELL with subsections,
//! BELL V1-V3, [`sparse::gpu_thesis`]) and the LU factorisations without pivoting of
//! Mißbach (2013) (unblocked right-looking and Rodinia's blocked LU, [`dense::thesis`])
//! and its per-thread "amd" random-number scheme ([`rng`]).
//! `ferrocuda bench spmv-thesis`, `bench lu` and `bench rng` print their tables.
//!
//! Their kernels are in `ferrocuda_kernels::repro`, compiled into a PTX module of their
//! own (`kernels_repro.ptx` and its fatbin, built by the library's build script but not
//! embedded in the library): [`register_module`] makes them loadable, and every GPU
//! entry point here calls it first.
#![deny(missing_docs)]

pub mod dense;
pub mod rng;
pub mod sparse;

/// The Rust module whose kernels load from the reproduction module.
pub const KERNEL_MODULE: &str = "ferrocuda_kernels::repro";

/// PTX of the reproduction kernels.
pub const PTX: &str = ferrocuda::kernels::repro::PTX;

/// Machine code of the reproduction kernels (empty for a PTX-only build).
pub const FATBIN: &[u8] = ferrocuda::kernels::repro::FATBIN;

/// Registers the reproduction module with the runtime (once), so that the kernels
/// declared in [`KERNEL_MODULE`] load from [`FATBIN`] or [`PTX`]; the library's own
/// modules are registered by `ferrocuda::gpu::open`.
pub fn register_module() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        ferrocuda::gpu::register_modules();
        ferrocuda_host::register_module(
            KERNEL_MODULE,
            ferrocuda_host::ModuleImage {
                ptx: PTX,
                fatbin: FATBIN,
            },
        );
    });
}

/// Names of the kernel entries of [`PTX`].
pub fn entries() -> Vec<&'static str> {
    ferrocuda::kernels::repro::entries()
}

/// The architectures [`FATBIN`] holds SASS for (empty for a PTX-only build).
pub fn cubin_archs() -> Vec<&'static str> {
    ferrocuda::kernels::repro::cubin_archs()
}
