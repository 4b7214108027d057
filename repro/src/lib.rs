//! Reproductions of the experiments of the theses ferrocuda started from, kept apart from
//! the library: the GPU SpMV variants of Kautz (2011) (BCSR V1-V3, ELL with subsections,
//! BELL V1-V3, [`sparse::gpu_thesis`]) and the LU factorisations without pivoting of
//! Mißbach (2013) (unblocked right-looking and Rodinia's blocked LU, [`dense::thesis`])
//! and its per-thread "amd" random-number scheme ([`rng`]).
//! `ferrocuda bench spmv-thesis`, `bench lu` and `bench rng` print their tables.
//!
//! Their kernels are in `ferrocuda_kernels::repro`, compiled into PTX modules of their
//! own, one per domain (`repro::lu`, `repro::rng`, `repro::spmv`; built by the library's
//! build script but not embedded in the library): [`register_module`] makes them
//! loadable, and every GPU entry point here calls it first.
#![deny(missing_docs)]

pub mod dense;
pub mod rng;
pub mod sparse;

/// The Rust module whose kernels load from the reproduction module.
pub const KERNEL_MODULE: &str = "ferrocuda_kernels::repro";

/// The reproduction kernels' modules, one per domain (PTX and machine code).
pub const MODULES: &[ferrocuda::kernels::Module] = ferrocuda::kernels::repro::MODULES;

/// Registers the reproduction modules with the runtime (once), so that the kernels
/// declared in [`KERNEL_MODULE`] load from [`MODULES`] (each domain on its first use);
/// the library's own modules are registered by `ferrocuda::gpu::open`.
pub fn register_module() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        ferrocuda::gpu::register_modules();
        ferrocuda::kernels::repro::register();
    });
}

/// Names of the kernel entries of [`MODULES`].
pub fn entries() -> Vec<&'static str> {
    ferrocuda::kernels::repro::entries()
}

/// The architectures every module of [`MODULES`] holds SASS for (empty for a PTX-only
/// build).
pub fn cubin_archs() -> Vec<&'static str> {
    ferrocuda::kernels::repro::cubin_archs()
}
