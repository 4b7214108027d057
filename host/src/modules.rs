//! Where each kernel's code comes from. A kernel handle names the Rust module that
//! declared it (`ferrocuda_kernels::blas1`); the crate that embeds the code compiled
//! from those modules registers it here under a module-path prefix, and a launch loads
//! the image of the longest registered prefix (on first use, once per device). The
//! library registers one image per domain (`ferrocuda_kernels::blas1`,
//! `ferrocuda_kernels::dense`, ...), so a program loads only the domains whose kernels
//! it launches; [`crate::Gpu::preload_module`] loads one ahead of a timed region, and
//! [`crate::Gpu::loaded_modules`] lists what a device loaded, how and how long it took.
//!
//! An image is PTX and, where the build had `ptxas`, a fatbin of machine code for the
//! common architectures (with the PTX inside for the others). The fatbin is loaded
//! first: the driver picks the SASS for the device and needs no JIT; the PTX alone is
//! the fallback, and is forced by `FERROCUDA_LOAD_PTX=1` (to measure the JIT, or to work
//! around a driver that rejects the machine code).

use std::sync::{PoisonError, RwLock};

/// The code of one group of kernels, as embedded by the crate that compiled them.
#[derive(Debug, Clone, Copy)]
pub struct ModuleImage {
    /// PTX text of every kernel (always present; JIT-compiled by the driver).
    pub ptx: &'static str,
    /// A fatbin with SASS and PTX (`cuModuleLoadData` input), or empty for PTX only.
    pub fatbin: &'static [u8],
}

/// Registered `(module-path prefix, image)` pairs.
static REGISTRY: RwLock<Vec<(&'static str, ModuleImage)>> = RwLock::new(Vec::new());

/// Makes kernels declared in `prefix` (a Rust module path such as `ferrocuda_kernels`
/// or `ferrocuda_kernels::hopper`, and its submodules) load from `image`. Registering
/// the same pair again does nothing; a new image for a registered prefix replaces the
/// old one for devices that have not loaded it yet.
pub fn register_module(prefix: &'static str, image: ModuleImage) {
    let mut reg = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    match reg.iter_mut().find(|(p, _)| *p == prefix) {
        Some(entry) => entry.1 = image,
        None => reg.push((prefix, image)),
    }
}

/// [`register_module`] with PTX only (no machine code).
pub fn register_ptx(prefix: &'static str, ptx: &'static str) {
    register_module(prefix, ModuleImage { ptx, fatbin: &[] });
}

/// The image registered for the module `module`: the longest registered prefix that is
/// `module` itself or one of its parents.
pub fn registered_module(module: &str) -> Option<ModuleImage> {
    registered_prefix(module).map(|(_, image)| image)
}

/// The longest registered prefix of `module` (itself or a parent) and its image.
pub fn registered_prefix(module: &str) -> Option<(&'static str, ModuleImage)> {
    let reg = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    reg.iter()
        .filter(|(p, _)| {
            module == *p
                || module
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(p, _)| p.len())
        .copied()
}

/// The PTX registered for the module `module` (see [`registered_module`]).
pub fn registered_ptx(module: &str) -> Option<&'static str> {
    registered_module(module).map(|image| image.ptx)
}

/// Whether `FERROCUDA_LOG_MODULES` asks to report each module load on standard error
/// (`1`, `true`, `yes`): which module, from machine code or PTX, how long it took.
pub(crate) fn log_loads() -> bool {
    std::env::var("FERROCUDA_LOG_MODULES")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// Whether `FERROCUDA_LOAD_PTX` asks to skip the machine code (`1`, `true`, `yes`).
pub(crate) fn ptx_forced() -> bool {
    std::env::var("FERROCUDA_LOAD_PTX")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_registered_parent_module_wins() {
        register_ptx("test_kernels", "A");
        register_ptx("test_kernels::hopper", "B");
        assert_eq!(registered_ptx("test_kernels::blas1"), Some("A"));
        assert_eq!(registered_ptx("test_kernels"), Some("A"));
        assert_eq!(registered_ptx("test_kernels::hopper"), Some("B"));
        assert_eq!(registered_ptx("test_kernels::hopper::gemm"), Some("B"));
        assert_eq!(registered_ptx("test_kernelsx::blas1"), None);
        assert_eq!(registered_ptx("other"), None);
        assert_eq!(
            registered_prefix("test_kernels::hopper::gemm").map(|(p, _)| p),
            Some("test_kernels::hopper")
        );
    }
}
