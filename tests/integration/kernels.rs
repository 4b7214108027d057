//! The embedded PTX and the kernel declarations agree (CPU only): every declared kernel is
//! an entry of the PTX module it is loaded from, with the declared parameters, and every
//! entry of each module (default, Hopper, reproduction) is declared.

use std::collections::BTreeSet;

use crate::common::register_all_modules;

use ferrocuda::kernels::{PTX, PTX_ARCH, entries, has_entry};
use ferrocuda_kernels::blas1::{Blas1Kernels, RealBlas1Kernels};
use ferrocuda_kernels::krylov::KrylovKernels;
use ferrocuda_kernels::precond::PrecondKernels;

/// The Rust module whose kernels load from the reproduction PTX module.
const REPRO_MODULE: &str = "ferrocuda_kernels::repro";

#[test]
fn every_ptx_entry_is_defined_once() {
    for (module, found) in [
        ("default", entries()),
        ("sm_90", ferrocuda::kernels::sm90_entries()),
        ("repro", ferrocuda::kernels::repro::entries()),
    ] {
        assert!(!found.is_empty(), "the {module} PTX has no entries");
        let unique: BTreeSet<&str> = found.iter().copied().collect();
        assert_eq!(
            unique.len(),
            found.len(),
            "the {module} PTX defines an entry twice: {found:?}"
        );
    }
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
    let target = PTX
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .expect("the PTX has a .target line");
    assert!(
        target
            .split(',')
            .next()
            .is_some_and(|t| t.trim() == PTX_ARCH),
        ".target {target} does not match PTX_ARCH {PTX_ARCH}"
    );
    assert!(PTX.contains(".address_size 64"), "the PTX is not 64-bit");
}

#[test]
fn the_sm90_module_holds_exactly_the_hopper_kernels() {
    use ferrocuda::kernels::{PTX_SM90, has_sm90_entry, sm90_entries};
    let hopper_gemm_f64 = ferrocuda_kernels::hopper::SM90_GEMM_F64.map(|k| k.name());
    let found: BTreeSet<&str> = sm90_entries().into_iter().collect();
    let known: BTreeSet<&str> = hopper_gemm_f64.into_iter().collect();
    assert_eq!(found, known, "the sm_90 module's entries");
    assert!(hopper_gemm_f64.iter().all(|k| has_sm90_entry(k)));
    assert!(
        !has_sm90_entry("fill_f64"),
        "the sm_90 module has only the Hopper kernels"
    );
    assert!(
        PTX_SM90.lines().any(|l| l.trim() == ".target sm_90"),
        "the Hopper module targets sm_90"
    );
    // None of them leaked into the sm_80 module.
    assert!(hopper_gemm_f64.iter().all(|k| !has_entry(k)));
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
    assert!(
        repro::PTX
            .lines()
            .any(|l| l.trim() == format!(".target {PTX_ARCH}")),
        "the repro module targets {PTX_ARCH}"
    );
}

/// Every kernel declared with `#[kernel]`/`instances!` is an entry of the PTX module it
/// is registered for, with exactly the declared parameter sizes; and every PTX entry is
/// declared once.
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
    let sm90 = ferrocuda::kernels::sm90_entries();
    let repro = ferrocuda::kernels::repro::entries();
    for e in entries().into_iter().chain(sm90).chain(repro) {
        if !declared.contains(e) {
            problems.push(format!("PTX entry {e} has no declaration"));
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
    use ferrocuda::kernels::repro;
    use ferrocuda::kernels::{CUBIN_TOOL, FATBIN, FATBIN_SM90, cubin_archs, cubin_archs_sm90};
    if CUBIN_TOOL.is_empty() {
        // A PTX-only build (no ptxas could be had, or FERROCUDA_CUBIN_ARCHS=none): the
        // fatbins are empty and the library loads the PTX.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED machine-code checks: this build is PTX-only"
        );
        assert!(FATBIN.is_empty() && cubin_archs().is_empty());
        assert!(repro::FATBIN.is_empty() && repro::cubin_archs().is_empty());
        return;
    }
    for (name, fatbin, archs, must) in [
        ("kernels", FATBIN, cubin_archs(), &["sm_80", "sm_90"][..]),
        (
            "kernels_sm90",
            FATBIN_SM90,
            cubin_archs_sm90(),
            &["sm_90"][..],
        ),
        (
            "kernels_repro",
            repro::FATBIN,
            repro::cubin_archs(),
            &["sm_80", "sm_90"][..],
        ),
    ] {
        assert_eq!(
            fatbin.get(..4),
            Some(&FATBIN_MAGIC[..]),
            "{name}: no fatbin header"
        );
        if std::env::var_os("FERROCUDA_CUBIN_ARCHS").is_none() {
            for arch in must {
                assert!(
                    archs.contains(arch),
                    "{name}: no SASS for {arch} in {archs:?}"
                );
            }
        }
    }
    // The Hopper module has no SASS below sm_90 (its PTX needs sm_90 instructions).
    assert!(
        cubin_archs_sm90()
            .iter()
            .all(|a| a != &"sm_80" && a != &"sm_86")
    );
}
