//! The PTX that `build.rs` compiled from `gpu-kernels/`, embedded in the library.

/// PTX of every kernel in `ferrocuda-kernels`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The architecture the PTX was generated for (`FERROCUDA_PTX_ARCH`, default `sm_80`);
/// the driver JIT-compiles it for this and every newer GPU.
pub const PTX_ARCH: &str = env!("FERROCUDA_PTX_ARCH");

/// Whether the embedded PTX defines the kernel entry `name`.
pub fn has_entry(name: &str) -> bool {
    PTX.lines().any(|line| {
        line.trim_start()
            .strip_prefix(".visible .entry ")
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('('))
    })
}

/// Names of all kernel entries in the embedded PTX.
pub fn entries() -> Vec<&'static str> {
    PTX.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .collect()
}
