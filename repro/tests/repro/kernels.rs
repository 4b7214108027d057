//! The reproduction module: registered for every kernel declared in
//! `ferrocuda_kernels::repro`, which all load from it on a GPU.

use crate::common::gpu_or_skip;
use ferrocuda_kernels::abi::KERNELS;

fn repro_kernels() -> impl Iterator<Item = &'static ferrocuda_kernels::abi::KernelInfo> {
    KERNELS
        .iter()
        .filter(|k| k.module.starts_with(ferrocuda_repro::KERNEL_MODULE))
}

#[test]
fn register_module_serves_every_repro_declaration_from_the_repro_ptx() {
    ferrocuda_repro::register_module();
    let entries = ferrocuda_repro::entries();
    assert!(repro_kernels().count() > 0, "no repro kernel is declared");
    for k in repro_kernels() {
        let ptx = ferrocuda_host::registered_ptx(k.module);
        assert!(
            ptx == Some(ferrocuda_repro::PTX),
            "{} ({}) is not served from the repro module",
            k.name,
            k.module
        );
        assert!(
            entries.contains(&k.name),
            "{} is not a repro PTX entry",
            k.name
        );
    }
    // The library's kernels still load from the library's module.
    assert!(
        ferrocuda_host::registered_ptx("ferrocuda_kernels::blas1") == Some(ferrocuda::kernels::PTX)
    );
}

#[test]
fn every_repro_kernel_loads() {
    let Some(gpu) = gpu_or_skip("every_repro_kernel_loads") else {
        return;
    };
    ferrocuda_repro::register_module();
    for k in repro_kernels() {
        if let Err(e) = gpu.load_declared(k) {
            panic!("repro kernel {} ({}) does not load: {e}", k.name, k.module);
        }
    }
}
