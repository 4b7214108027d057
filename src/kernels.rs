//! The PTX that `build.rs` compiled from `gpu-kernels/`, embedded in the library.

/// PTX of every kernel in `ferrocuda-kernels` but the Hopper-only and the reproduction
/// ones.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The architecture the PTX was generated for (`FERROCUDA_PTX_ARCH`, default `sm_80`);
/// the driver JIT-compiles it for this and every newer GPU.
pub const PTX_ARCH: &str = env!("FERROCUDA_PTX_ARCH");

/// Machine code of every kernel in `ferrocuda-kernels`: a compressed fatbin with SASS
/// for [`cubin_archs`] and the PTX for newer architectures, assembled by `ptxas` at build
/// time so that the first GPU use does not wait for the driver's JIT. Empty when the
/// build found no `ptxas` (then [`PTX`] is loaded and JIT-compiled).
pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.fatbin"));

/// Machine code of the Hopper-only kernels, like [`FATBIN`] ([`cubin_archs_sm90`]).
pub const FATBIN_SM90: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_sm90.fatbin"));

/// The architectures [`FATBIN`] holds SASS for (`sm_80`, `sm_90`, ...); empty for a
/// PTX-only build. SASS of `sm_XY` also runs on `sm_XZ` with `Z >= Y`.
pub fn cubin_archs() -> Vec<&'static str> {
    split_list(env!("FERROCUDA_CUBIN_ARCHS"))
}

/// The architectures [`FATBIN_SM90`] holds SASS for.
pub fn cubin_archs_sm90() -> Vec<&'static str> {
    split_list(env!("FERROCUDA_CUBIN_ARCHS_SM90"))
}

/// The `ptxas` release that assembled the machine code (empty for a PTX-only build).
pub const CUBIN_TOOL: &str = env!("FERROCUDA_CUBIN_TOOL");

fn split_list(list: &'static str) -> Vec<&'static str> {
    list.split(',').filter(|a| !a.is_empty()).collect()
}

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

/// Byte sizes of the parameters of entry `name` in `ptx`, in order (`None` where there
/// is no such entry): what the PTX says a launch must pass, to compare with a kernel's
/// declaration on the host.
pub fn entry_param_sizes(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let head = format!(".entry {name}(");
    let mut lines = ptx.lines().skip_while(|l| !l.trim_start().contains(&head));
    let first = lines.next()?;
    let mut sizes = Vec::new();
    let mut parse = |line: &str| {
        let line = line.trim();
        if let Some(decl) = line.strip_prefix(".param") {
            sizes.push(param_size(decl));
        }
    };
    // `.entry name(` may carry no parameter on the same line; parameters follow, one a
    // line, until the closing parenthesis.
    if let Some(rest) = first.split_once('(').map(|(_, r)| r)
        && !rest.trim().is_empty()
        && rest.trim() != ")"
    {
        parse(rest);
    }
    if !first.trim_end().ends_with(')') {
        for line in lines {
            if line.trim_start().starts_with(')') {
                break;
            }
            parse(line);
        }
    }
    Some(sizes)
}

/// Bytes of one `.param` declaration: `.u64 .ptr .align 1 p` or `.align 8 .b8 p[16]`.
fn param_size(decl: &str) -> usize {
    if let Some(open) = decl.rfind('[') {
        return decl[open + 1..]
            .trim_end_matches([',', ']'])
            .trim_end_matches(']')
            .parse()
            .unwrap_or(0);
    }
    decl.split_whitespace()
        .find_map(|t| {
            let bits: usize = t
                .strip_prefix(".u")
                .or_else(|| t.strip_prefix(".s"))
                .or_else(|| t.strip_prefix(".b"))
                .or_else(|| t.strip_prefix(".f"))?
                .parse()
                .ok()?;
            Some(bits / 8)
        })
        .unwrap_or(0)
}

/// The reproduction module (`ferrocuda_kernels::repro`), compiled by the same build but
/// not part of the library: the `ferrocuda-repro` crate embeds and registers it. Public
/// only so that it can; a program that does not name these constants does not carry the
/// bytes.
#[doc(hidden)]
pub mod repro {
    /// PTX of the reproduction kernels (same architecture as [`super::PTX`]).
    pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_repro.ptx"));
    /// Their machine code, like [`super::FATBIN`] ([`cubin_archs`]).
    pub const FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_repro.fatbin"));

    /// The architectures [`FATBIN`] holds SASS for.
    pub fn cubin_archs() -> Vec<&'static str> {
        super::split_list(env!("FERROCUDA_CUBIN_ARCHS_REPRO"))
    }

    /// Names of all kernel entries in [`PTX`].
    pub fn entries() -> Vec<&'static str> {
        super::entries_of(PTX).collect()
    }
}
