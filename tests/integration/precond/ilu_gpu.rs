//! ILU(0) on the GPU against the CPU oracle: the factors (factored on the device, level
//! after level) and the inverse pivots bit for bit, the apply bit for bit with the
//! output poisoned, point (CSR) and block (BCSR, both layouts, b = 1..8), every (matrix,
//! vector) pair; breakdowns name the same row with the same message; GMRES with the
//! device ILU(0) solves the real matrices of data/matrices within 1.2x the CPU twin's
//! steps, the true residual recomputed in f64.

use crate::common;

use common::*;
use ferrocuda::Error;
use ferrocuda::blas1::Element;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::gpu::KrylovElement;
use ferrocuda::krylov::ilu::IluKernels;
use ferrocuda::krylov::{
    BlockIlu0, DeviceBlockIlu0, DeviceIlu0, DeviceLinOp, DeviceSolver, GmresOptions, Ilu0,
    IluOptions, LinOp, Preconditioner, SolveOptions,
};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Bcsr, BlockLayout, Coo, Csr, MatrixScalar};

/// A random square BCSR matrix as sparse as the systems ILU(0) is for: about 3 random
/// entries per scalar row (parts in [-1, 1]) plus a full diagonal block with a diagonal
/// of `2 + b`, except in about every seventh block row, which stays empty (a ghost row).
/// (A dense-ish pattern would chain every row into its own level, a sequential dense LU.)
fn random_bcsr<A: Element>(nbr: usize, b: usize, layout: BlockLayout, seed: u64) -> Bcsr<A> {
    use rand::{Rng, SeedableRng, rngs::SmallRng};
    let n = nbr * b;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut coo = Coo::<A>::empty(n, n).expect("coo");
    for bi in 0..nbr {
        if nbr > 1 && rng.random_range(0..7) == 0 {
            continue;
        }
        for i in bi * b..bi * b + b {
            for c in bi * b..bi * b + b {
                let v = if c == i {
                    A::from_real(<A::Real as ferrocuda::RealScalar>::from_f64(2.0 + b as f64))
                } else {
                    random_scalar_from::<A>(&mut rng)
                };
                coo.push(i, c, v).expect("push");
            }
            for _ in 0..3 {
                let c = rng.random_range(0..n);
                coo.push(i, c, random_scalar_from::<A>(&mut rng))
                    .expect("push");
            }
        }
    }
    Bcsr::from_csr(
        &Csr::from(&coo),
        b,
        layout,
        ferrocuda::sparse::BlockFit::Exact,
    )
    .expect("bcsr")
}

/// `y = M x` on the device, `y` poisoned before.
fn device_apply<V: Element>(gpu: &Gpu, m: &dyn DeviceLinOp<V>, x: &[V]) -> Vec<V> {
    let dx = gpu.upload(x).expect("upload x");
    let mut dy = gpu.upload(&poison::<V>(x.len())).expect("upload y");
    {
        let xv = dx.view(..).expect("view");
        let mut yv = dy.view_mut(..).expect("view_mut");
        m.apply(&xv, &mut yv).expect("device apply");
    }
    dy.download().expect("download y")
}

fn cpu_apply<V: Element>(m: &dyn LinOp<V>, x: &[V]) -> Vec<V> {
    let mut y = poison::<V>(x.len());
    m.apply(x, &mut y).expect("cpu apply");
    y
}

/// Block ILU(0) of `a` on both devices: the same factors and apply, or the same error.
/// Returns whether it factored.
fn check_block<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, seed: u64) -> bool
where
    A: Element + MatrixScalar<V> + IluKernels<V>,
    V: Element,
{
    let cpu = BlockIlu0::new(a);
    let dev = DeviceBlockIlu0::new(gpu, a);
    let (cpu, dev) = match (cpu, dev) {
        (Ok(c), Ok(d)) => (c, d),
        (Err(c), Err(d)) => {
            assert_eq!(d.to_string(), c.to_string(), "{what}: the same error");
            return false;
        }
        (c, d) => panic!(
            "{what}: cpu {:?}, gpu {:?}",
            c.map(|_| "ok"),
            d.map(|_| "ok")
        ),
    };
    let blocks = dev.blocks().download().expect("download");
    assert_bits_eq(&format!("{what}: factors"), &blocks, cpu.blocks());
    let inv = dev.inverse_diagonal_blocks().download().expect("download");
    assert_bits_eq(
        &format!("{what}: inverse pivots"),
        &inv,
        cpu.inverse_diagonal_blocks(),
    );
    let x = random_vec::<V>(cpu.n_rows(), seed);
    let got = device_apply::<V>(gpu, &dev, &x);
    let want = cpu_apply::<V>(&cpu, &x);
    assert_bits_eq(&format!("{what}: apply x {}", tname::<V>()), &got, &want);
    true
}

/// Point ILU(0) of `a` on both devices, as [`check_block`].
fn check_point<A, V>(gpu: &Gpu, what: &str, a: &Csr<A>, seed: u64) -> bool
where
    A: Element + MatrixScalar<V> + IluKernels<V>,
    V: Element,
{
    let (cpu, dev) = match (Ilu0::new(a), DeviceIlu0::new(gpu, a)) {
        (Ok(c), Ok(d)) => (c, d),
        (Err(c), Err(d)) => {
            assert_eq!(d.to_string(), c.to_string(), "{what}: the same error");
            return false;
        }
        (c, d) => panic!(
            "{what}: cpu {:?}, gpu {:?}",
            c.map(|_| "ok"),
            d.map(|_| "ok")
        ),
    };
    let vals = dev.values().download().expect("download");
    assert_bits_eq(&format!("{what}: factors"), &vals, cpu.values());
    let inv = dev.inverse_pivots().download().expect("download");
    assert_bits_eq(
        &format!("{what}: inverse pivots"),
        &inv,
        cpu.inverse_pivots(),
    );
    let x = random_vec::<V>(cpu.n_rows(), seed);
    let got = device_apply::<V>(gpu, &dev, &x);
    let want = cpu_apply::<V>(&cpu, &x);
    assert_bits_eq(&format!("{what}: apply x {}", tname::<V>()), &got, &want);
    true
}

/// ILU(0) of `a` with Jacobi-sweep triangular solves (`IluOptions::sweeps`) on both
/// devices: the apply bit for bit for 1, 2 and 3 sweeps (both parities of the device's
/// ping-pong), and, with as many sweeps as levels, the exact solve's bits.
fn check_sweeps<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, point: bool, seed: u64)
where
    A: Element + MatrixScalar<V> + IluKernels<V>,
    V: Element,
{
    let csr = a.to_csr();
    let (lower, upper) = if point {
        Ilu0::new(&csr).and_then(|f| f.level_schedules())
    } else {
        BlockIlu0::new(a).and_then(|f| f.level_schedules())
    }
    .expect("levels");
    let levels = lower.n_levels().max(upper.n_levels());
    let x = random_vec::<V>(csr.n_rows(), seed);
    for s in [1, 2, 3, levels] {
        let opts = IluOptions::default().sweeps(Some(s));
        let (got, want, exact) = if point {
            let cpu = Ilu0::with_options(&csr, &opts).expect("cpu");
            let dev = DeviceIlu0::with_options(gpu, &csr, &opts).expect("gpu");
            let exact = cpu_apply::<V>(&Ilu0::new(&csr).expect("exact"), &x);
            (
                device_apply::<V>(gpu, &dev, &x),
                cpu_apply::<V>(&cpu, &x),
                exact,
            )
        } else {
            let cpu = BlockIlu0::with_options(a, &opts).expect("cpu");
            let dev = DeviceBlockIlu0::with_options(gpu, a, &opts).expect("gpu");
            let exact = cpu_apply::<V>(&BlockIlu0::new(a).expect("exact"), &x);
            (
                device_apply::<V>(gpu, &dev, &x),
                cpu_apply::<V>(&cpu, &x),
                exact,
            )
        };
        let what = format!("{what}: {s} sweeps x {}", tname::<V>());
        assert_bits_eq(&what, &got, &want);
        if s >= levels {
            assert_bits_eq(
                &format!("{what} (all {levels} levels): exact"),
                &got,
                &exact,
            );
        }
    }
}

fn pair<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + IluKernels<V>,
    V: Element,
{
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    let (mut factored, mut cases) = (0, 0);
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        for b in [1, 2, 3, 5, 8] {
            for nbr in [1, 33, 257] {
                let seed = (b * 1000 + nbr) as u64;
                let a = random_bcsr::<A>(nbr, b, layout, seed);
                let what = format!("block {name} {layout:?} b={b} {nbr} block rows");
                factored += check_block::<A, V>(gpu, &what, &a, seed) as usize;
                cases += 1;
                if layout == BlockLayout::RowMajor {
                    let csr = a.to_csr();
                    let what = format!("point {name} from b={b} {nbr} block rows");
                    factored += check_point::<A, V>(gpu, &what, &csr, seed) as usize;
                    cases += 1;
                }
            }
        }
    }
    // TRACE-like: ghost rows, 13-point stencil, 5x5 blocks, many levels.
    let a = generate::trace_like::<A>(&TraceSpec::new(4, 6, 5, 3).seed(7)).expect("generate");
    assert!(a.empty_block_rows() > 0);
    factored += check_block::<A, V>(gpu, &format!("trace-like block {name}"), &a, 5) as usize;
    factored +=
        check_point::<A, V>(gpu, &format!("trace-like point {name}"), &a.to_csr(), 6) as usize;
    cases += 2;
    check_sweeps::<A, V>(gpu, &format!("trace-like block {name}"), &a, false, 8);
    check_sweeps::<A, V>(gpu, &format!("trace-like point {name}"), &a, true, 9);
    // The comparison of factors must not be vacuous.
    assert!(
        factored * 2 > cases,
        "{name}: only {factored} of {cases} cases factored"
    );
}

#[test]
fn ilu0_gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("ilu0_gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    each_scalar_pair!(pair(&gpu));
}

/// ILU(0) factors narrowed to single precision (`--storage f32`), factored in full
/// precision first: the device's rounding equals the CPU's, bit for bit; the apply to
/// double-precision vectors too (the mixed kernels `ilu0_*_f32_f64`, `_f32_c64`,
/// `_c32_c64`), level solves and sweeps; and it stays within single-precision rounding
/// of the full-precision apply.
fn narrowed<A, V>(gpu: &Gpu)
where
    A: KrylovElement<Low: MatrixScalar<V> + IluKernels<V>> + MatrixScalar<V> + IluKernels<V>,
    V: Element,
{
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    let a = generate::trace_like::<A>(&TraceSpec::new(4, 6, 5, 3).seed(11)).expect("generate");
    let csr = a.to_csr();
    let levels = BlockIlu0::new(&a)
        .and_then(|f| f.level_schedules())
        .map(|(l, u)| l.n_levels().max(u.n_levels()))
        .expect("levels");
    for sweeps in [None, Some(2), Some(levels)] {
        let opts = IluOptions::default().sweeps(sweeps);
        let x = random_vec::<V>(csr.n_rows(), 21);
        let what = format!("narrowed {name}, sweeps {sweeps:?}");
        // Block.
        let full = BlockIlu0::with_options(&a, &opts).expect("cpu");
        let cpu = full.narrowed().expect("narrowed");
        let dev = DeviceBlockIlu0::with_options(gpu, &a, &opts)
            .and_then(|d| d.into_narrowed())
            .expect("gpu");
        let blocks = dev.blocks().download().expect("download");
        assert_bits_eq(&format!("block {what}: factors"), &blocks, cpu.blocks());
        let inv = dev.inverse_diagonal_blocks().download().expect("download");
        assert_bits_eq(
            &format!("block {what}: inverse pivots"),
            &inv,
            cpu.inverse_diagonal_blocks(),
        );
        let got = device_apply::<V>(gpu, &dev, &x);
        assert_bits_eq(
            &format!("block {what}: apply"),
            &got,
            &cpu_apply::<V>(&cpu, &x),
        );
        let exact = cpu_apply::<V>(&full, &x);
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for (g, e) in got.iter().zip(&exact) {
            diff = diff.max(abs(*g - *e));
            norm = norm.max(abs(*e));
        }
        assert!(
            diff <= 1e-4 * norm,
            "block {what}: the f32 factors' apply is {diff:e} from the full one (max {norm:e})"
        );
        // Point.
        let cpu = Ilu0::with_options(&csr, &opts)
            .expect("cpu")
            .narrowed()
            .expect("narrowed");
        let dev = DeviceIlu0::with_options(gpu, &csr, &opts)
            .and_then(|d| d.into_narrowed())
            .expect("gpu");
        let vals = dev.values().download().expect("download");
        assert_bits_eq(&format!("point {what}: factors"), &vals, cpu.values());
        let got = device_apply::<V>(gpu, &dev, &x);
        assert_bits_eq(
            &format!("point {what}: apply"),
            &got,
            &cpu_apply::<V>(&cpu, &x),
        );
    }
}

#[test]
fn ilu0_narrowed_gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("ilu0_narrowed_gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    use ferrocuda::Complex;
    narrowed::<f64, f64>(&gpu);
    narrowed::<Complex<f64>, Complex<f64>>(&gpu);
    narrowed::<f64, Complex<f64>>(&gpu);
}

fn csr(n: usize, entries: &[(usize, usize, f64)]) -> Csr<f64> {
    let mut coo = Coo::<f64>::empty(n, n).expect("coo");
    for &(r, c, v) in entries {
        coo.push(r, c, v).expect("push");
    }
    Csr::from(&coo)
}

#[test]
fn ilu0_gpu_breakdowns_name_the_cpus_row() {
    let Some(gpu) = gpu_or_skip("ilu0_gpu_breakdowns_name_the_cpus_row") else {
        return;
    };
    let cases = [
        // Row 1's pivot is 1 - 1 = 0; row 3 stores no diagonal (later).
        (
            "zero pivot",
            csr(
                4,
                &[
                    (0, 0, 1.0),
                    (0, 1, 1.0),
                    (1, 0, 1.0),
                    (1, 1, 1.0),
                    (2, 2, 2.0),
                    (3, 0, 1.0),
                ],
            ),
            "row 1",
        ),
        // Row 2 stores no diagonal, row 3 a zero pivot later.
        (
            "missing diagonal",
            csr(
                4,
                &[
                    (0, 0, 1.0),
                    (1, 1, 1.0),
                    (2, 0, 1.0),
                    (3, 3, 0.0),
                    (3, 1, 1.0),
                ],
            ),
            "row 2",
        ),
        // u_11 = 1 - (1 - 1e-17) rounds to a tiny (here zero or tiny) pivot.
        (
            "tiny pivot",
            csr(
                3,
                &[
                    (0, 0, 1.0),
                    (0, 1, 1.0),
                    (1, 0, 1.0),
                    (1, 1, 1.0 + 1e-15),
                    (2, 2, 1.0),
                ],
            ),
            "row 1",
        ),
    ];
    for (what, a, row) in cases {
        let cpu = Ilu0::new(&a).expect_err(what).to_string();
        let dev = match DeviceIlu0::new(&gpu, &a) {
            Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
            Err(e) => panic!("{what}: expected InvalidArgument, got {e:?}"),
            Ok(_) => panic!("{what}: the device factored it"),
        };
        // The CPU names its own constructor; the rest is the same.
        let strip = |s: &str| s.split_once(": ").map(|(_, r)| r.to_string()).unwrap();
        assert_eq!(strip(&dev), strip(&cpu), "{what}");
        assert!(
            dev.contains(&format!("{row}:")) || dev.contains(&format!("{row} ")),
            "{what}: {dev}"
        );
        // A shift is the remedy the message names; it factors on both.
        let opts = IluOptions::default().shift(0.1);
        let c = Ilu0::with_options(&a, &opts).expect("shifted cpu");
        let d = DeviceIlu0::with_options(&gpu, &a, &opts).expect("shifted gpu");
        assert_bits_eq(
            &format!("{what}: shifted factors"),
            &d.values().download().expect("download"),
            c.values(),
        );
    }
    // The block form names the block row.
    let a = Bcsr::from_csr(
        &csr(4, &[(0, 0, 1.0), (1, 1, 1.0), (2, 0, 1.0), (3, 3, 1.0)]),
        2,
        BlockLayout::RowMajor,
        ferrocuda::sparse::BlockFit::Exact,
    )
    .expect("bcsr");
    let cpu = BlockIlu0::new(&a).expect_err("block").to_string();
    let dev = DeviceBlockIlu0::new(&gpu, &a)
        .err()
        .expect("block gpu")
        .to_string();
    assert!(dev.contains("block row 1"), "{dev}");
    assert_eq!(
        dev.split_once(": ").map(|p| p.1),
        cpu.split_once(": ").map(|p| p.1)
    );
}

/// GMRES(30) with the device ILU(0) on the real matrices of data/matrices: converges to
/// the true relative residual 1e-8 within 1.2x the CPU twin's steps.
#[test]
fn device_ilu0_solves_real_matrices() {
    let Some(gpu) = gpu_or_skip("device_ilu0_solves_real_matrices") else {
        return;
    };
    for (name, text) in crate::real_matrices::MATRICES {
        let a = crate::real_matrices::read(name, text);
        let (_, cpu_steps, _) = crate::real_matrices::solve(&a, Preconditioner::Ilu0);
        let b = vec![1.0; a.n_rows()];
        let opts = SolveOptions::default()
            .precond(Preconditioner::Ilu0)
            .block_size(1)
            .gmres(GmresOptions::default().rtol(1e-8).max_iter(3000));
        let s = DeviceSolver::upload(&gpu, &a, &opts).expect("upload");
        let sol = s.solve(&b, None).expect("solve");
        let r = crate::real_matrices::true_relative_residual(&a, &b, &sol.x);
        let steps = sol.report.gmres.iterations;
        eprintln!("{name}: device ILU(0) {steps} steps (CPU {cpu_steps}), true residual {r:.2e}");
        assert!(sol.report.gmres.converged, "{name}: {steps} steps, {r:e}");
        assert!(r <= 1.01e-8, "{name}: true relative residual {r:e}");
        assert!(
            steps as f64 <= 1.2 * cpu_steps as f64,
            "{name}: {steps} steps on the GPU against {cpu_steps} on the CPU"
        );
        // The matrix stored in f32, refined to the same true residual.
        let (ok, steps, r, rf) = crate::real_matrices::solve_f32_storage(&a, Some(&gpu));
        eprintln!(
            "{name}: device ILU(0), f32 storage: {steps} steps, passes {:?}, fallback {:?}, true residual {r:.2e}",
            rf.steps, rf.fallback
        );
        assert!(
            ok && r <= 1.01e-8,
            "{name}: f32 storage: {steps} steps, {r:e}"
        );
    }
}
