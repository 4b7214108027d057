//! The embedded PTX and the kernel declarations agree (CPU only): every declared kernel is
//! an entry of the domain module it is loaded from (and of no other), with the declared
//! parameters; every entry of each module (the library's domains, Hopper, the
//! reproduction domains) is declared; and each domain module, cut from the PTX the
//! kernel crate compiled to (build/ptx_split.rs), stands on its own.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::register_all_modules;

use ferrocuda::kernels::{MODULES, Module, PTX_ARCH, entries, has_entry};
use ferrocuda_kernels::blas1::{Blas1Kernels, RealBlas1Kernels};
use ferrocuda_kernels::krylov::{CompressedBasisKernels, KrylovKernels};
use ferrocuda_kernels::precond::PrecondKernels;

/// The Rust module whose kernels load from the reproduction PTX module.
const REPRO_MODULE: &str = "ferrocuda_kernels::repro";

#[path = "../../build/ptx_split.rs"]
mod ptx_split;

/// Every module, the reproduction ones included.
fn all_modules() -> impl Iterator<Item = &'static Module> {
    MODULES.iter().chain(ferrocuda::kernels::repro::MODULES)
}

#[test]
fn every_ptx_entry_is_defined_once() {
    for m in all_modules() {
        assert!(
            !m.entries().is_empty(),
            "the {} module has no entries",
            m.domain
        );
    }
    for (group, found) in [
        ("library", entries()),
        ("repro", ferrocuda::kernels::repro::entries()),
    ] {
        let unique: BTreeSet<&str> = found.iter().copied().collect();
        assert_eq!(
            unique.len(),
            found.len(),
            "the {group} modules define an entry twice: {found:?}"
        );
    }
}

/// The domains the library is cut into (a new kernel module under `ferrocuda_kernels::`
/// becomes a new domain: add it here and to the docs).
#[test]
fn the_library_is_cut_into_its_domains() {
    let domains: BTreeSet<&str> = MODULES.iter().map(|m| m.domain).collect();
    let expected: BTreeSet<&str> = [
        "blas1",
        "dense",
        "hopper",
        "krylov",
        "mpc",
        "multigrid",
        "precond",
        "probe",
        "rock4",
        "sfmt",
        "spmv",
    ]
    .into_iter()
    .collect();
    assert_eq!(domains, expected, "the library's domain modules");
    assert_eq!(domains.len(), MODULES.len(), "a domain twice");
    let repro: BTreeSet<&str> = ferrocuda::kernels::repro::MODULES
        .iter()
        .map(|m| m.domain)
        .collect();
    assert_eq!(
        repro,
        ["repro::lu", "repro::rng", "repro::spmv"]
            .into_iter()
            .collect(),
        "the reproduction domain modules"
    );
    for m in all_modules() {
        assert_eq!(
            m.prefix,
            format!("ferrocuda_kernels::{}", m.domain),
            "{}",
            m.domain
        );
    }
}

/// Every declared kernel is an entry of exactly one module: the one its declaring Rust
/// module's longest prefix maps to, which is also what the runtime registers for it.
#[test]
fn every_declared_kernel_is_in_exactly_the_module_its_prefix_maps_to() {
    use ferrocuda_kernels::abi::KERNELS;
    register_all_modules();
    let mut problems = Vec::new();
    for k in KERNELS.iter() {
        let Some(home) = ferrocuda::kernels::module_for(k.module)
            .or_else(|| ferrocuda::kernels::repro::module_for(k.module))
        else {
            problems.push(format!(
                "{} ({}): no module for its prefix",
                k.name, k.module
            ));
            continue;
        };
        let holders: Vec<&str> = all_modules()
            .filter(|m| m.has_entry(k.name))
            .map(|m| m.domain)
            .collect();
        if holders != [home.domain] {
            problems.push(format!(
                "{} ({}) maps to {} but is an entry of {holders:?}",
                k.name, k.module, home.domain
            ));
        }
        if !ferrocuda_host::registered_ptx(k.module).is_some_and(|p| std::ptr::eq(p, home.ptx)) {
            problems.push(format!(
                "{} ({}): the runtime does not load it from {}",
                k.name, k.module, home.domain
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each module is complete PTX on its own: balanced braces, one header, every function
/// it calls and every function or variable (of any module) it names defined in it.
#[test]
fn every_domain_module_stands_on_its_own() {
    let parsed: Vec<(&Module, Vec<ptx_split::Item<'static>>)> = all_modules()
        .map(|m| {
            let items = ptx_split::parse(m.ptx)
                .unwrap_or_else(|e| panic!("the {} module does not parse: {e}", m.domain));
            (m, items)
        })
        .collect();
    let known: BTreeSet<&str> = parsed
        .iter()
        .flat_map(|(_, items)| items.iter())
        .filter(|i| matches!(i.kind, ptx_split::Kind::Func | ptx_split::Kind::Var))
        .map(|i| i.name)
        .collect();
    for (m, _) in &parsed {
        if let Err(e) = ptx_split::check_complete(m.ptx, &known) {
            panic!("the {} module is incomplete: {e}", m.domain);
        }
    }
}

/// With `ptxas` at hand (`FERROCUDA_PTXAS`, `PATH`, `target/ptxas-venv`), every module
/// of a PTX-only build assembles. (A build that had `ptxas` assembled each module for
/// every architecture in [`Module::cubin_archs`] already: see
/// `machine_code_is_embedded_when_the_build_had_ptxas`.)
#[test]
fn every_domain_module_assembles_with_ptxas() {
    use std::io::Write;
    if !ferrocuda::kernels::CUBIN_TOOL.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "every_domain_module_assembles_with_ptxas: the build assembled them ({})",
            ferrocuda::kernels::CUBIN_TOOL
        );
        return;
    }
    let Some(ptxas) = find_ptxas() else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED every_domain_module_assembles_with_ptxas: no ptxas here"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("ferrocuda-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for m in all_modules() {
        let ptx = dir.join(format!("{}.ptx", m.domain.replace("::", "-")));
        std::fs::write(&ptx, m.ptx).expect("write the PTX");
        let out = std::process::Command::new(&ptxas)
            .arg(format!("-arch={}", m.ptx_arch))
            .arg(&ptx)
            .arg("-o")
            .arg(ptx.with_extension("cubin"))
            .output()
            .expect("ptxas runs");
        assert!(
            out.status.success(),
            "ptxas rejects the {} module: {}",
            m.domain,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn find_ptxas() -> Option<std::path::PathBuf> {
    let mut candidates: Vec<std::path::PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("FERROCUDA_PTXAS") {
        candidates.push(p.into());
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ptxas-venv/lib");
    if let Ok(pys) = std::fs::read_dir(venv) {
        for py in pys.flatten() {
            let nvidia = py.path().join("site-packages/nvidia");
            if let Ok(ds) = std::fs::read_dir(nvidia) {
                candidates.extend(ds.flatten().map(|d| d.path().join("bin/ptxas")));
            }
        }
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// The cutting itself, on a small PTX: an entry keeps the functions it calls (and what
/// they call) and the variables it names; other entries and unused functions go; text
/// the cutter does not understand is an error.
#[test]
fn ptx_split_keeps_what_an_entry_reaches_and_nothing_else() {
    let ptx = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.0\n.target sm_80\n.address_size 64\n\n\t// .globl\ta\n.func leaf\n(\n\t.param .b64 leaf_param_0\n)\n.noreturn;\n.global .align 1 .b8 table[2] = {1, 2};\n.global .align 8 .u64 refs[1] = {generic(table)};\n.global .align 1 .b8 unused[1] = {9};\n.visible .entry a(\n\t.param .u64 a_param_0\n)\n{\n\tmov.u64 %rd1, refs;\n\t{ // callseq 0, 0\n\tcall.uni mid, (param0);\n\t} // callseq 0\n\tret;\n}\n\t// .globl\tb\n.visible .entry b()\n{\n\tret;\n}\n.func mid(\n\t.param .b64 mid_param_0\n)\n{\n\tcall.uni leaf, (param0);\n\tret;\n}\n.func lonely()\n{\n\tret;\n}\n";
    let items = ptx_split::parse(ptx).expect("parses");
    let names: Vec<&str> = items.iter().map(|i| i.name).collect();
    assert_eq!(
        names,
        [
            "", "", "", "leaf", "table", "refs", "unused", "a", "b", "mid", "lonely"
        ]
    );
    let a = ptx_split::extract(ptx, |e| e == "a").expect("cuts");
    let kept: Vec<&str> = ptx_split::parse(&a)
        .expect("the part parses")
        .iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(kept, ["", "", "", "leaf", "table", "refs", "a", "mid"]);
    let known: BTreeSet<&str> = ["leaf", "table", "refs", "unused", "mid", "lonely"]
        .into_iter()
        .collect();
    ptx_split::check_complete(&a, &known).expect("the part is complete");
    let b = ptx_split::extract(ptx, |e| e == "b").expect("cuts");
    assert_eq!(
        ptx_split::entry_names(&b).expect("parses"),
        ["b"],
        "b alone: {b}"
    );
    assert!(!b.contains("mid") && !b.contains("table"), "{b}");
    // What a part misses is found.
    let broken = a.replace(".func mid(", ".func gone(");
    assert!(ptx_split::check_complete(&broken, &known).is_err());
    // Unbalanced braces, a truncated file and unknown directives are errors.
    assert!(
        ptx_split::parse(&ptx.replace("\tret;\n}\n.func lonely", "\tret;\n}}\n.func lonely"))
            .is_err()
    );
    assert!(ptx_split::parse(&ptx[..ptx.len() - 3]).is_err());
    assert!(ptx_split::parse(&format!("{ptx}.section .debug_info {{ }}\n")).is_err());
}

#[test]
fn has_entry_matches_whole_names_only() {
    assert!(has_entry("fill_f64"), "fill_f64 is an entry");
    assert!(
        !has_entry("fill_f6"),
        "a prefix of an entry is not an entry"
    );
    assert!(!has_entry("fill"), "a prefix of an entry is not an entry");
    assert!(
        !has_entry("ill_f64"),
        "a suffix of an entry is not an entry"
    );
    assert!(
        !has_entry("no_such_kernel"),
        "no_such_kernel is not an entry"
    );
    assert!(!has_entry(""), "the empty name is not an entry");
}

#[test]
fn kernel_names_carry_their_type_suffix() {
    fn check<T: Blas1Kernels>() {
        let per_type = [
            T::FILL.name(),
            T::SCAL.name(),
            T::AXPY.name(),
            T::AXPBY.name(),
            T::COPY.name(),
            T::DOT_PARTIAL.name(),
            T::NRM2_PARTIAL.name(),
            T::MULTI_DOT_PARTIAL.name(),
            T::SUM_PARTIALS.name(),
        ];
        for name in per_type {
            assert!(
                name.ends_with(&format!("_{}", T::SUFFIX)),
                "{name} lacks the suffix _{}",
                T::SUFFIX
            );
        }
        let real = if T::SUFFIX.ends_with("32") {
            "f32"
        } else {
            "f64"
        };
        assert_eq!(
            <T::Real as RealBlas1Kernels>::SQRT_SUM_PARTIALS.name(),
            format!("sqrt_sum_partials_{real}"),
            "nrm2 stage two of {}",
            T::SUFFIX
        );
    }
    check::<f32>();
    check::<f64>();
    check::<ferrocuda::Complex<f32>>();
    check::<ferrocuda::Complex<f64>>();
    fn krylov<T: KrylovKernels>() {
        let names = [
            T::GS_DOTS_PARTIAL.name(),
            T::GS_UPDATE.name(),
            T::BASIS_COMBINE.name(),
            T::MGS_ELIMINATE.name(),
            T::MGS_NORMALIZE.name(),
        ];
        for (name, stem) in names.into_iter().zip([
            "gs_dots_partial",
            "gs_update",
            "basis_combine",
            "mgs_eliminate",
            "mgs_normalize",
        ]) {
            assert_eq!(name, format!("{stem}_{}", T::SUFFIX));
        }
    }
    fn precond<A: PrecondKernels<V>, V: ferrocuda::Scalar>(pair: &str) {
        assert_eq!(
            A::INVERT.name(),
            format!("block_jacobi_invert_{}", A::SUFFIX)
        );
        assert_eq!(A::APPLY.name(), format!("block_jacobi_apply_{pair}"));
    }
    fn compressed<B: CompressedBasisKernels<V>, V: ferrocuda::Scalar>(pair: &str) {
        let names = [
            B::GS_DOTS_PARTIAL_CB.name(),
            B::GS_UPDATE_CB.name(),
            B::BASIS_COMBINE_CB.name(),
            B::BASIS_WIDEN.name(),
            B::BASIS_NARROW.name(),
        ];
        for (name, stem) in names.into_iter().zip([
            "gs_dots_partial",
            "gs_update",
            "basis_combine",
            "basis_widen",
            "basis_narrow",
        ]) {
            assert_eq!(name, format!("{stem}_{pair}"));
        }
    }
    compressed::<f32, f64>("f32_f64");
    compressed::<ferrocuda::Complex<f32>, ferrocuda::Complex<f64>>("c32_c64");
    krylov::<f32>();
    krylov::<f64>();
    krylov::<ferrocuda::Complex<f32>>();
    krylov::<ferrocuda::Complex<f64>>();
    use ferrocuda::Complex;
    precond::<f32, f32>("f32");
    precond::<f64, f64>("f64");
    precond::<Complex<f32>, Complex<f32>>("c32");
    precond::<Complex<f64>, Complex<f64>>("c64");
    precond::<f32, Complex<f32>>("f32_c32");
    precond::<f64, Complex<f64>>("f64_c64");
}

#[test]
fn ptx_targets_the_declared_architecture() {
    assert!(PTX_ARCH.starts_with("sm_"), "PTX_ARCH = {PTX_ARCH:?}");
    for m in all_modules() {
        let expected = if m.domain == "hopper" {
            "sm_90"
        } else {
            PTX_ARCH
        };
        assert_eq!(m.ptx_arch, expected, "{}", m.domain);
        let target = m
            .ptx
            .lines()
            .find_map(|l| l.trim().strip_prefix(".target "))
            .expect("the PTX has a .target line");
        assert!(
            target
                .split(',')
                .next()
                .is_some_and(|t| t.trim() == m.ptx_arch),
            "{}: .target {target} does not match {}",
            m.domain,
            m.ptx_arch
        );
        assert!(
            m.ptx.contains(".address_size 64"),
            "the {} PTX is not 64-bit",
            m.domain
        );
    }
}

#[test]
fn the_sm90_module_holds_exactly_the_hopper_kernels() {
    let hopper = ferrocuda::kernels::module("hopper").expect("a hopper module");
    let hopper_gemm_f64 = ferrocuda_kernels::hopper::SM90_GEMM_F64.map(|k| k.name());
    let hopper_probe = ferrocuda_kernels::hopper::SM90_PROBE_DMMA.map(|k| k.name());
    let found: BTreeSet<&str> = hopper.entries().into_iter().collect();
    let known: BTreeSet<&str> = hopper_gemm_f64.into_iter().chain(hopper_probe).collect();
    assert_eq!(found, known, "the sm_90 module's entries");
    assert!(hopper_gemm_f64.iter().all(|k| hopper.has_entry(k)));
    assert!(
        !hopper.has_entry("fill_f64"),
        "the sm_90 module has only the Hopper kernels"
    );
    assert!(
        hopper.ptx.lines().any(|l| l.trim() == ".target sm_90"),
        "the Hopper module targets sm_90"
    );
    // None of them leaked into an sm_80 module.
    for m in MODULES.iter().filter(|m| m.domain != "hopper") {
        assert!(
            hopper_gemm_f64.iter().all(|k| !m.has_entry(k)),
            "{}",
            m.domain
        );
    }
}

#[test]
fn the_repro_module_holds_exactly_the_repro_kernels() {
    use ferrocuda::kernels::repro;
    let declared: BTreeSet<&str> = ferrocuda_kernels::abi::KERNELS
        .iter()
        .filter(|k| k.module.starts_with(REPRO_MODULE))
        .map(|k| k.name)
        .collect();
    // 18 SpMV variants for 6 scalar pairs, 2 unblocked and 3 Rodinia LU kernels, "amd".
    assert_eq!(declared.len(), 18 * 6 + 5 + 1, "declared repro kernels");
    let found: BTreeSet<&str> = repro::entries().into_iter().collect();
    assert_eq!(found, declared, "the repro module's entries");
    // None of them is left in the default module, and no product kernel is in theirs.
    let leaked: Vec<&str> = declared.iter().copied().filter(|k| has_entry(k)).collect();
    assert!(
        leaked.is_empty(),
        "repro kernels in the default PTX: {leaked:?}"
    );
    assert!(
        !found.contains("fill_f64"),
        "the repro module has only repro kernels"
    );
    for m in repro::MODULES {
        assert!(
            m.ptx
                .lines()
                .any(|l| l.trim() == format!(".target {PTX_ARCH}")),
            "the {} module targets {PTX_ARCH}",
            m.domain
        );
    }
}

/// Every kernel declared with `#[kernel]`/`instances!` is an entry of the domain module
/// it is registered for (the PTX it is loaded from), with exactly the declared parameter
/// sizes; and every PTX entry is declared once.
#[test]
fn declared_kernels_match_the_ptx_param_lists() {
    use ferrocuda_kernels::abi::KERNELS;
    register_all_modules();
    assert!(!KERNELS.is_empty(), "no kernel is declared");
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for k in KERNELS.iter() {
        if !seen.insert((k.module, k.name)) {
            problems.push(format!("{} is declared twice in {}", k.name, k.module));
        }
        let Some(ptx) = ferrocuda_host::registered_ptx(k.module) else {
            problems.push(format!("{}: no PTX registered for {}", k.name, k.module));
            continue;
        };
        let declared: Vec<usize> = k.params.iter().map(|p| p.size).collect();
        match ferrocuda::kernels::entry_param_sizes(ptx, k.name) {
            None => problems.push(format!("{} ({}) is not an entry of its PTX", k.name, k.module)),
            Some(found) if found != declared => problems.push(format!(
                "{}: the PTX takes parameters of {found:?} bytes, the declaration {declared:?} ({:?})",
                k.name,
                k.params.iter().map(|p| p.name).collect::<Vec<_>>()
            )),
            Some(_) => {}
        }
    }
    let declared: BTreeSet<&str> = KERNELS.iter().map(|k| k.name).collect();
    for m in all_modules() {
        for e in m.entries() {
            if !declared.contains(e) {
                problems.push(format!("PTX entry {e} ({}) has no declaration", m.domain));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn entry_param_sizes_reads_scalars_pointers_and_aggregates() {
    let ptx = "\n.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .align 8 .b8 k_param_1[16],\n\t.param .u64 .ptr .align 1 k_param_2,\n\t.param .f32 k_param_3,\n\t.param .u8 k_param_4\n)\n{\n}\n.visible .entry none()\n{\n}\n";
    assert_eq!(
        ferrocuda::kernels::entry_param_sizes(ptx, "k"),
        Some(vec![8, 16, 8, 4, 1])
    );
    assert_eq!(
        ferrocuda::kernels::entry_param_sizes(ptx, "none"),
        Some(vec![])
    );
    assert_eq!(ferrocuda::kernels::entry_param_sizes(ptx, "kk"), None);
}

/// A fatbin starts with this magic (little-endian `0xBA55ED50`).
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];

#[test]
fn machine_code_is_embedded_when_the_build_had_ptxas() {
    use ferrocuda::kernels::{CUBIN_TOOL, cubin_archs, cubin_archs_sm90};
    if CUBIN_TOOL.is_empty() {
        // A PTX-only build (no ptxas could be had, or FERROCUDA_CUBIN_ARCHS=none): the
        // fatbins are empty and the library loads the PTX.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED machine-code checks: this build is PTX-only"
        );
        for m in all_modules() {
            assert!(
                m.fatbin.is_empty() && m.cubin_archs.is_empty(),
                "{}",
                m.domain
            );
        }
        assert!(cubin_archs().is_empty());
        return;
    }
    let mut archs_by_domain = BTreeMap::new();
    for m in all_modules() {
        let must: &[&str] = if m.domain == "hopper" {
            &["sm_90"]
        } else {
            &["sm_80", "sm_90"]
        };
        assert_eq!(
            m.fatbin.get(..4),
            Some(&FATBIN_MAGIC[..]),
            "{}: no fatbin header",
            m.domain
        );
        if std::env::var_os("FERROCUDA_CUBIN_ARCHS").is_none() {
            for arch in must {
                assert!(
                    m.cubin_archs.contains(arch),
                    "{}: no SASS for {arch} in {:?}",
                    m.domain,
                    m.cubin_archs
                );
            }
        }
        archs_by_domain.insert(m.domain, m.cubin_archs);
    }
    // Every sm_80 module was assembled for the same architectures.
    let lib = cubin_archs();
    for m in all_modules().filter(|m| m.domain != "hopper") {
        assert_eq!(
            m.cubin_archs,
            lib.as_slice(),
            "{}: {archs_by_domain:?}",
            m.domain
        );
    }
    // The Hopper module has no SASS below sm_90 (its PTX needs sm_90 instructions).
    assert!(
        cubin_archs_sm90()
            .iter()
            .all(|a| a != &"sm_80" && a != &"sm_86")
    );
}

/// The domains the library preloads before its clocks start (`crate::gpu::preload(gpu,
/// &["krylov", ..])`, `preload_module("ferrocuda_kernels::dense")`) all exist: a typo
/// would be an error on the GPU only.
#[test]
fn every_preloaded_domain_exists() {
    fn visit(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        for e in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                visit(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push((p.clone(), std::fs::read_to_string(&p).expect("source")));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join("src").is_dir() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED every_preloaded_domain_exists: no source tree here"
        );
        return;
    }
    let mut files = Vec::new();
    visit(&root.join("src"), &mut files);
    visit(&root.join("repro/src"), &mut files);
    let mut checked = 0;
    for (path, text) in &files {
        for line in text.lines().filter(|l| {
            (l.contains("preload(")
                || l.contains("preload_module(")
                || l.contains("LU_MODULE: &str"))
                && !l.trim_start().starts_with("//")
        }) {
            for lit in line.split('"').skip(1).step_by(2) {
                let found = if lit.starts_with("ferrocuda_kernels::") {
                    ferrocuda::kernels::module_for(lit)
                        .or_else(|| ferrocuda::kernels::repro::module_for(lit))
                        .is_some()
                } else {
                    ferrocuda::kernels::module(lit).is_some()
                };
                assert!(found, "{}: no module {lit:?}: {line}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} preloaded domains found");
}
