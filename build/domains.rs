//! The domain modules: each PTX the kernel crate compiles to is cut into one PTX per
//! domain (`ferrocuda_kernels::blas1`, `::dense`, `::multigrid`, ...), so that a program
//! loads, and a PTX-only build JIT-compiles, only the domains it launches kernels of.
//!
//! Which entry belongs to which domain comes from the kernels' own declarations
//! (`ferrocuda_kernels::abi::KERNELS`, this build script links the kernel crate): the
//! Rust module that declared an entry is the module it is loaded from at run time, so
//! the two cannot disagree. An entry of the PTX that no declaration places is an error
//! of the build, never left out.

use std::collections::{BTreeMap, BTreeSet};

use crate::ptx_split;

/// One PTX the kernel crate is compiled to, and how it is cut.
#[derive(Clone, Copy)]
pub struct Compiled {
    /// The file stem in `OUT_DIR` (`kernels`, `kernels_sm90`, `kernels_repro`).
    pub file: &'static str,
    /// The Rust module whose kernels it holds (with its submodules).
    pub prefix: &'static str,
    /// One domain per submodule of `prefix` (`true`), or the whole as one (`false`).
    pub split: bool,
}

/// One domain module cut from a [`Compiled`] PTX.
pub struct Domain {
    /// The Rust module its kernels are declared in (`ferrocuda_kernels::dense`).
    pub prefix: String,
    /// The PTX: header, the domain's entries, the functions and variables they use.
    pub ptx: String,
    /// The architectures its fatbin holds SASS for (filled in by the machine-code step).
    pub cubin_archs: Vec<String>,
}

impl Domain {
    /// The name shown to people: the prefix under `ferrocuda_kernels::`.
    pub fn name(&self) -> &str {
        self.prefix
            .strip_prefix("ferrocuda_kernels::")
            .unwrap_or(&self.prefix)
    }

    /// A file stem for its PTX, fatbin and cubins: `kernels-dense`, `kernels-repro-lu`.
    pub fn stem(&self) -> String {
        format!("kernels-{}", self.name().replace("::", "-"))
    }
}

/// Whether `module` is `prefix` or one of its submodules.
fn within(module: &str, prefix: &str) -> bool {
    module == prefix
        || module
            .strip_prefix(prefix)
            .is_some_and(|r| r.starts_with("::"))
}

/// The domain (a module prefix) that kernels declared in `module` load from, given the
/// compiled modules `all` and that `module` belongs to `this` (its longest prefix).
pub fn domain_of(module: &str, this: &Compiled) -> Result<String, String> {
    if !this.split {
        return Ok(this.prefix.to_string());
    }
    let rest = module
        .strip_prefix(this.prefix)
        .and_then(|r| r.strip_prefix("::"))
        .ok_or_else(|| {
            format!(
                "a kernel declared in `{module}` directly, not in a submodule of `{}`, has no domain",
                this.prefix
            )
        })?;
    let first = rest.split("::").next().unwrap_or(rest);
    Ok(format!("{}::{first}", this.prefix))
}

/// Cuts `ptx`, compiled as `this` (one of `all`), into its domains. `declared` are the
/// (entry name, declaring module) pairs of every kernel declaration. Errors: an entry no
/// declaration of `this` places, an entry placed twice, a part that does not stand on
/// its own.
pub fn split(
    ptx: &str,
    this: &Compiled,
    all: &[Compiled],
    declared: &[(&str, &str)],
) -> Result<Vec<Domain>, String> {
    // The compiled module each declaration belongs to: its longest prefix.
    let owner = |module: &str| {
        all.iter()
            .filter(|c| within(module, c.prefix))
            .max_by_key(|c| c.prefix.len())
            .map(|c| c.file)
    };
    let mut domain_of_entry: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for &(name, module) in declared {
        if owner(module) == Some(this.file) {
            domain_of_entry
                .entry(name)
                .or_default()
                .insert(domain_of(module, this)?);
        }
    }
    let entries = ptx_split::entry_names(ptx)?;
    let mut by_domain: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    let mut problems = Vec::new();
    for e in &entries {
        match domain_of_entry.get(e).map(|d| d.iter().collect::<Vec<_>>()) {
            Some(d) if d.len() == 1 => {
                by_domain.entry(d[0].to_string()).or_default().insert(*e);
            }
            Some(d) => problems.push(format!(
                "PTX entry {e} of {} is declared in several domains: {d:?}",
                this.file
            )),
            None => problems.push(format!(
                "PTX entry {e} of {} has no #[kernel]/instances! declaration under {}, so it belongs to no domain module",
                this.file, this.prefix
            )),
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    let known: BTreeSet<&str> = ptx_split::parse(ptx)?
        .into_iter()
        .filter(|i| matches!(i.kind, ptx_split::Kind::Func | ptx_split::Kind::Var))
        .map(|i| i.name)
        .collect();
    let mut out = Vec::new();
    let mut placed = 0;
    for (prefix, keep) in by_domain {
        let part = ptx_split::extract(ptx, |e| keep.contains(e))?;
        let got = ptx_split::entry_names(&part)?;
        if got.len() != keep.len() {
            return Err(format!(
                "the {prefix} part of {} has {} entries, not {}",
                this.file,
                got.len(),
                keep.len()
            ));
        }
        ptx_split::check_complete(&part, &known)
            .map_err(|e| format!("the {prefix} part of {} is incomplete: {e}", this.file))?;
        placed += got.len();
        out.push(Domain {
            prefix,
            ptx: part,
            cubin_archs: Vec::new(),
        });
    }
    if placed != entries.len() {
        return Err(format!(
            "{} has {} entries, its domain parts {placed}",
            this.file,
            entries.len()
        ));
    }
    Ok(out)
}
