//! Where each kernel's PTX comes from. A kernel handle names the Rust module that
//! declared it (`ferrocuda_kernels::blas1`); the crate that embeds the PTX compiled from
//! those modules registers it here under a module-path prefix, and a launch loads the
//! PTX of the longest registered prefix (on first use, once per device).

use std::sync::{PoisonError, RwLock};

/// Registered `(module-path prefix, PTX)` pairs.
static REGISTRY: RwLock<Vec<(&'static str, &'static str)>> = RwLock::new(Vec::new());

/// Makes kernels declared in `prefix` (a Rust module path such as `ferrocuda_kernels`
/// or `ferrocuda_kernels::hopper`, and its submodules) load from `ptx`. Registering the
/// same pair again does nothing; a new PTX for a registered prefix replaces the old one
/// for devices that have not loaded it yet.
pub fn register_ptx(prefix: &'static str, ptx: &'static str) {
    let mut reg = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    match reg.iter_mut().find(|(p, _)| *p == prefix) {
        Some(entry) => entry.1 = ptx,
        None => reg.push((prefix, ptx)),
    }
}

/// The PTX registered for the module `module`: the longest registered prefix that is
/// `module` itself or one of its parents.
pub fn registered_ptx(module: &str) -> Option<&'static str> {
    let reg = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    reg.iter()
        .filter(|(p, _)| {
            module == *p
                || module
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(p, _)| p.len())
        .map(|&(_, ptx)| ptx)
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
    }
}
