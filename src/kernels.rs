//! The kernels that `build.rs` compiled from `gpu-kernels/`, embedded in the library as
//! one module per domain ([`MODULES`]): `blas1`, `spmv`, `krylov`, `precond`, `dense`,
//! `hopper`, `multigrid`, `rock4`, `mpc`, `sfmt`, `probe`. Each holds the kernels declared
//! in its Rust module (`ferrocuda_kernels::<domain>`) and what they use, as PTX and, where
//! the build had `ptxas`, a fatbin of machine code. [`crate::gpu::open`] registers them
//! all; a device loads a domain on the first launch of one of its kernels, so a command
//! loads (and a PTX-only build JIT-compiles) only the domains it uses.

use ferrocuda_host::ModuleImage;

/// One domain module: the kernels declared in Rust module [`Module::prefix`], as PTX and
/// machine code.
#[derive(Debug, Clone, Copy)]
pub struct Module {
    /// The domain: the Rust module under `ferrocuda_kernels::` (`dense`, `repro::lu`).
    pub domain: &'static str,
    /// The Rust module whose kernels (and its submodules') load from this module
    /// (`ferrocuda_kernels::dense`).
    pub prefix: &'static str,
    /// The architecture the PTX was generated for; the driver JIT-compiles it for this
    /// and every newer GPU.
    pub ptx_arch: &'static str,
    /// The PTX of the domain's entries and the functions and variables they use.
    pub ptx: &'static str,
    /// A compressed fatbin with SASS for [`Module::cubin_archs`] and the PTX for newer
    /// architectures, assembled by `ptxas` at build time so that the first GPU use does
    /// not wait for the driver's JIT. Empty when the build found no `ptxas`.
    pub fatbin: &'static [u8],
    /// The architectures [`Module::fatbin`] holds SASS for (`sm_80`, `sm_90`, ...);
    /// empty for a PTX-only build. SASS of `sm_XY` also runs on `sm_XZ` with `Z >= Y`.
    pub cubin_archs: &'static [&'static str],
}

impl Module {
    /// Names of the kernel entries of this module's PTX.
    pub fn entries(&self) -> Vec<&'static str> {
        entries_of(self.ptx).collect()
    }

    /// Whether this module's PTX defines the kernel entry `name`.
    pub fn has_entry(&self, name: &str) -> bool {
        entries_of(self.ptx).any(|e| e == name)
    }

    /// What the runtime loads ([`ferrocuda_host::register_module`]).
    pub fn image(&self) -> ModuleImage {
        ModuleImage {
            ptx: self.ptx,
            fatbin: self.fatbin,
        }
    }

    /// Registers this module for the kernels declared in [`Module::prefix`].
    pub fn register(&self) {
        ferrocuda_host::register_module(self.prefix, self.image());
    }
}

/// The library's domain modules, by domain name; the Hopper-only kernels
/// (`ferrocuda_kernels::hopper`, compiled for `sm_90`) are the module `hopper`, loaded
/// only on devices of compute capability 9.0 or newer.
pub static MODULES: &[Module] = &include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The domain module `domain` (`"dense"`, `"hopper"`, ...).
pub fn module(domain: &str) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.domain == domain)
}

/// The module that kernels declared in Rust module `rust_module`
/// (`ferrocuda_kernels::dense`, or a submodule) load from: the longest matching prefix.
pub fn module_for(rust_module: &str) -> Option<&'static Module> {
    longest_prefix(MODULES, rust_module)
}

fn longest_prefix(modules: &'static [Module], rust_module: &str) -> Option<&'static Module> {
    modules
        .iter()
        .filter(|m| {
            rust_module == m.prefix
                || rust_module
                    .strip_prefix(m.prefix)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|m| m.prefix.len())
}

/// The architecture the PTX was generated for (`FERROCUDA_PTX_ARCH`, default `sm_80`);
/// the driver JIT-compiles it for this and every newer GPU. (The `hopper` module's is
/// `sm_90`.)
pub const PTX_ARCH: &str = env!("FERROCUDA_PTX_ARCH");

/// The architectures every module of [`PTX_ARCH`] holds SASS for (`sm_80`, `sm_90`,
/// ...); empty for a PTX-only build.
pub fn cubin_archs() -> Vec<&'static str> {
    common_archs(MODULES.iter().filter(|m| m.ptx_arch == PTX_ARCH))
}

/// The architectures the Hopper-only module holds SASS for.
pub fn cubin_archs_sm90() -> Vec<&'static str> {
    module("hopper").map_or(Vec::new(), |m| m.cubin_archs.to_vec())
}

/// The architectures that all of `modules` have SASS for, in the first one's order.
fn common_archs<'a>(mut modules: impl Iterator<Item = &'a Module>) -> Vec<&'static str> {
    let Some(first) = modules.next() else {
        return Vec::new();
    };
    let mut archs = first.cubin_archs.to_vec();
    for m in modules {
        archs.retain(|a| m.cubin_archs.contains(a));
    }
    archs
}

/// The `ptxas` release that assembled the machine code (empty for a PTX-only build).
pub const CUBIN_TOOL: &str = env!("FERROCUDA_CUBIN_TOOL");

/// Whether any module defines the kernel entry `name`.
pub fn has_entry(name: &str) -> bool {
    MODULES.iter().any(|m| m.has_entry(name))
}

/// Names of all kernel entries of all modules.
pub fn entries() -> Vec<&'static str> {
    MODULES.iter().flat_map(|m| m.entries()).collect()
}

/// Bytes of PTX and of machine code of all modules.
pub fn total_bytes() -> (usize, usize) {
    MODULES
        .iter()
        .fold((0, 0), |(p, f), m| (p + m.ptx.len(), f + m.fatbin.len()))
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

/// The reproduction modules (`ferrocuda_kernels::repro::{lu, rng, spmv}`), compiled by
/// the same build but not part of the library: the `ferrocuda-repro` crate registers
/// them. Public only so that it can; a program that does not name [`repro::MODULES`]
/// does not carry the bytes.
#[doc(hidden)]
pub mod repro {
    use super::Module;

    /// The reproduction domain modules (same architecture as [`super::PTX_ARCH`]).
    pub static MODULES: &[Module] = &include!(concat!(env!("OUT_DIR"), "/repro_modules.rs"));

    /// Registers every reproduction module for its Rust module.
    pub fn register() {
        for m in MODULES {
            m.register();
        }
    }

    /// The reproduction module that kernels declared in `rust_module` load from.
    pub fn module_for(rust_module: &str) -> Option<&'static Module> {
        super::longest_prefix(MODULES, rust_module)
    }

    /// The architectures every reproduction module holds SASS for.
    pub fn cubin_archs() -> Vec<&'static str> {
        super::common_archs(MODULES.iter())
    }

    /// Names of all kernel entries of the reproduction modules.
    pub fn entries() -> Vec<&'static str> {
        MODULES.iter().flat_map(|m| m.entries()).collect()
    }
}
