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
    entries_of(PTX).collect()
}

/// PTX of the Hopper-only kernels ([`ferrocuda_kernels::hopper`]), compiled for `sm_90`:
/// loaded only on devices of compute capability 9.0 or newer.
pub const PTX_SM90: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90.ptx"));

/// Whether the Hopper PTX ([`PTX_SM90`]) defines the kernel entry `name`.
pub fn has_sm90_entry(name: &str) -> bool {
    entries_of(PTX_SM90).any(|e| e == name)
}

/// Names of all kernel entries in the Hopper PTX.
pub fn sm90_entries() -> Vec<&'static str> {
    entries_of(PTX_SM90).collect()
}

fn entries_of(ptx: &'static str) -> impl Iterator<Item = &'static str> {
    ptx.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
}
