//! The reproduction modules: registered for every kernel declared in
//! `ferrocuda_kernels::repro`, each of which loads from its domain's module on a GPU.

use crate::common::gpu_or_skip;
use ferrocuda_kernels::abi::KERNELS;

fn repro_kernels() -> impl Iterator<Item = &'static ferrocuda_kernels::abi::KernelInfo> {
    KERNELS
        .iter()
        .filter(|k| k.module.starts_with(ferrocuda_repro::KERNEL_MODULE))
}

#[test]
fn register_module_serves_every_repro_declaration_from_its_repro_domain() {
    ferrocuda_repro::register_module();
    assert!(repro_kernels().count() > 0, "no repro kernel is declared");
    for k in repro_kernels() {
        let module = ferrocuda::kernels::repro::module_for(k.module)
            .unwrap_or_else(|| panic!("{} ({}) has no repro module", k.name, k.module));
        let ptx = ferrocuda_host::registered_ptx(k.module);
        assert!(
            ptx.is_some_and(|p| std::ptr::eq(p, module.ptx)),
            "{} ({}) is not served from the {} module",
            k.name,
            k.module,
            module.domain
        );
        assert!(
            module.has_entry(k.name),
            "{} is not an entry of the {} module",
            k.name,
            module.domain
        );
    }
    // The library's kernels still load from the library's modules.
    let blas1 = ferrocuda::kernels::module("blas1").expect("a blas1 module");
    assert!(
        ferrocuda_host::registered_ptx("ferrocuda_kernels::blas1")
            .is_some_and(|p| std::ptr::eq(p, blas1.ptx))
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
