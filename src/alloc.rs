//! Fallible host allocation for every size that comes from a user or a file.
//!
//! `Vec::with_capacity` aborts the process when the allocation fails, and on Linux a
//! huge request may even "succeed" (overcommit) and get the process killed later. So a
//! size from outside is first compared with what this process may really allocate
//! ([`host_limit`]: available memory, the cgroup's limit, the address-space limit of
//! `ulimit -v`), then reserved with `try_reserve_exact`; both failures are an
//! [`Error::OutOfHostMemory`] that names the request and the limit. Sizes are counted
//! in `u128` ([`bytes_of`]), so a product of user sizes cannot wrap before it is checked.
//! [`check_device_bytes`] is the same check against a GPU's free memory.

use crate::error::{Error, Result};

/// What this process may still allocate on the host, and where that bound comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimit {
    /// Bytes.
    pub bytes: u64,
    /// Which limit binds: "available memory", "the cgroup's memory.max", "ulimit -v".
    pub source: &'static str,
}

/// The tightest of the host memory limits that can be read now (Linux: `MemAvailable`
/// plus free swap, the cgroup v2 `memory.max` minus `memory.current`, and the address
/// space left under `RLIMIT_AS`). `None` where none can be read (other systems): then
/// only `try_reserve` guards the allocation.
pub fn host_limit() -> Option<HostLimit> {
    let mut best: Option<HostLimit> = None;
    let mut consider = |bytes: Option<u64>, source: &'static str| {
        if let Some(bytes) = bytes
            && best.is_none_or(|b| bytes < b.bytes)
        {
            best = Some(HostLimit { bytes, source });
        }
    };
    consider(meminfo_available(), "available memory");
    consider(cgroup_left(), "the cgroup's memory.max");
    consider(address_space_left(), "ulimit -v");
    best
}

fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let avail = meminfo_field(&text, "MemAvailable:")?;
    Some(avail.saturating_add(meminfo_field(&text, "SwapFree:").unwrap_or(0)))
}

fn cgroup_left() -> Option<u64> {
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?; // "max" does not parse: no limit
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    // "Max address space   <soft>   <hard>   bytes"
    let soft: u64 = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?; // "unlimited" does not parse: no limit
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let used = meminfo_field(&status, "VmSize:").unwrap_or(0);
    Some(soft.saturating_sub(used))
}

/// Bytes of `count` elements of `elem_bytes` each, exact even where it overflows `usize`.
pub fn bytes_of(count: u128, elem_bytes: usize) -> u128 {
    count.saturating_mul(elem_bytes as u128)
}

/// `Ok` when `bytes` (for `what`, e.g. "the 100000 x 100000 f64 matrix") fits what this
/// process may allocate, else [`Error::OutOfHostMemory`] naming both. Use it before
/// allocating several arrays whose sizes come from a user or a file.
pub fn check_host_bytes(what: &str, bytes: u128) -> Result<()> {
    check_bytes_against(what, bytes, host_limit())
}

/// [`check_host_bytes`] against a given limit (the host's changes from one reading to
/// the next while other work runs).
fn check_bytes_against(what: &str, bytes: u128, limit: Option<HostLimit>) -> Result<()> {
    if bytes > isize::MAX as u128 {
        return Err(too_large(what, bytes, None));
    }
    match limit {
        Some(limit) if bytes > limit.bytes as u128 => Err(too_large(what, bytes, Some(limit))),
        _ => Ok(()),
    }
}

/// `Ok` when `bytes` (for `what`) fit the free memory of `gpu`'s device, else
/// [`Error::OutOfDeviceMemory`] naming both (free: [`crate::gpu::Gpu::available_memory`],
/// what freed buffers left in the pool included): the device twin of [`check_host_bytes`],
/// for several allocations whose sizes come from a user (the driver's own
/// out-of-memory error names only the bytes of the one allocation that failed).
pub fn check_device_bytes(gpu: &crate::gpu::Gpu, what: &str, bytes: u128) -> Result<()> {
    // Memory freed into the pool counts: the allocations reuse it.
    let (free, total) = gpu.available_memory()?;
    if bytes > free as u128 {
        return Err(Error::OutOfDeviceMemory {
            what: what.to_string(),
            requested: bytes,
            free,
            total,
            ordinal: gpu.ordinal(),
        });
    }
    Ok(())
}

fn too_large(what: &str, requested: u128, limit: Option<HostLimit>) -> Error {
    Error::OutOfHostMemory {
        what: what.to_string(),
        requested,
        limit: limit.map(|l| l.bytes),
        bound: limit.map_or("the largest allocation an address space can hold", |l| {
            l.source
        }),
    }
}

/// An empty `Vec` with room for `len` elements, reserved fallibly (see the module docs).
pub fn try_with_capacity<T>(what: &str, len: usize) -> Result<Vec<T>> {
    let bytes = bytes_of(len as u128, size_of::<T>());
    check_host_bytes(what, bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| too_large(what, bytes, host_limit()))?;
    Ok(v)
}

/// `vec![value; len]`, allocated fallibly (see the module docs).
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(what, len)?;
    v.resize(len, value);
    Ok(v)
}

/// Grows `v` by `additional` elements' capacity, fallibly.
pub fn try_reserve<T>(what: &str, v: &mut Vec<T>, additional: usize) -> Result<()> {
    let bytes = bytes_of(v.len() as u128 + additional as u128, size_of::<T>());
    check_host_bytes(what, bytes)?;
    v.try_reserve(additional)
        .map_err(|_| too_large(what, bytes, host_limit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_are_errors_naming_the_request() {
        let e = try_vec::<f64>("the test matrix", usize::MAX / 4, 0.0).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("the test matrix"), "{msg}");
        assert!(msg.contains("bytes"), "{msg}");
        let e = check_host_bytes("n^2", u128::MAX).unwrap_err();
        assert!(matches!(e, Error::OutOfHostMemory { .. }), "{e}");
    }

    #[test]
    fn requests_beyond_the_host_limit_are_refused_before_allocating() {
        // One reading of the limit: the free memory changes between readings while
        // other tests run (seen on a GPU machine, where the second reading was larger).
        if let Some(limit) = host_limit() {
            let e = check_bytes_against("a big table", limit.bytes as u128 + 1, Some(limit))
                .unwrap_err();
            assert!(e.to_string().contains(limit.source), "{e}");
            assert!(check_bytes_against("a table", limit.bytes as u128, Some(limit)).is_ok());
        }
        assert_eq!(try_vec("small", 3, 1u8).unwrap(), vec![1, 1, 1]);
    }
}
