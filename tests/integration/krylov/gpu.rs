//! GMRES on the GPU: the same systems as the CPU tests against nalgebra's dense LU, the
//! GPU against the CPU twin on the TRACE-like case (SBELL operator), and the errors.

use crate::common;

use common::gpu_or_skip;
use common::krylov::{dense_solve, nonsymmetric, rel_err, singular_cases, true_residual};
use common::random_vec;
use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::gpu::{self as kgpu, KrylovElement};
use ferrocuda::krylov::precond::PrecondKernels;
use ferrocuda::krylov::{
    BlockJacobi, CycleControl, DeviceBlockJacobi, DeviceLinOp, GmresOptions, LinOp,
    Orthogonalization, StopReason, cpu,
};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::gpu::SpmvKernels;
use ferrocuda::sparse::gpu::{DeviceBcsr, DeviceSbell};
use ferrocuda::sparse::{Bcsr, BlockFit, BlockLayout, Csr, MatrixScalar, Sbell};

fn solves_against_dense<A, V>(gpu: &Gpu, name: &str, n: usize, restart: usize, rtol: f64, tol: f64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: KrylovElement,
{
    let coo = nonsymmetric::<A>(n, 7 + n as u64);
    let csr = Csr::from(&coo);
    let bcsr = Bcsr::from_csr(&csr, 1, BlockLayout::RowMajor, BlockFit::Exact).expect("bcsr");
    let a = DeviceBcsr::upload(gpu, &bcsr).expect("upload");
    let b: Vec<V> = random_vec(n, 11);
    let want = dense_solve(&coo, &b);
    let db = gpu.upload(&b).expect("upload b");
    for orth in [
        Orthogonalization::Cgs2,
        Orthogonalization::Mgs,
        Orthogonalization::Pipelined,
    ] {
        let opts = GmresOptions::default()
            .restart(restart)
            .rtol(rtol)
            .orthogonalization(orth);
        let mut x = gpu.alloc_zeroed::<V>(n).expect("x");
        let r = kgpu::gmres(&a, None, &db, &mut x, &opts).expect("gmres");
        assert!(r.converged, "{name} {orth:?}: {r:?}");
        assert!(
            r.relative_residual <= rtol,
            "{name} {orth:?}: {}",
            r.relative_residual
        );
        let e = rel_err(&x.download().expect("x"), &want);
        assert!(
            e <= tol,
            "{name} {orth:?} m={restart}: error {e:e} against the dense LU"
        );
    }
}

#[test]
fn gmres_gpu_matches_dense_lu() {
    let Some(gpu) = gpu_or_skip("gmres_gpu_matches_dense_lu") else {
        return;
    };
    for (n, m) in [(1, 5), (2, 1), (50, 60), (50, 10), (257, 30), (257, 5)] {
        solves_against_dense::<f64, f64>(&gpu, &format!("f64 n={n}"), n, m, 1e-10, 1e-8);
        solves_against_dense::<Complex<f64>, Complex<f64>>(
            &gpu,
            &format!("c64 n={n}"),
            n,
            m,
            1e-10,
            1e-8,
        );
        solves_against_dense::<f64, Complex<f64>>(
            &gpu,
            &format!("f64 x c64 n={n}"),
            n,
            m,
            1e-10,
            1e-8,
        );
        solves_against_dense::<f32, f32>(&gpu, &format!("f32 n={n}"), n, m, 1e-5, 1e-4);
        solves_against_dense::<Complex<f32>, Complex<f32>>(
            &gpu,
            &format!("c32 n={n}"),
            n,
            m,
            1e-5,
            1e-4,
        );
    }
}

/// A preconditioner's name with its CPU and GPU operators.
type Pair<'a, V> = (
    &'a str,
    Option<&'a dyn LinOp<V>>,
    Option<&'a dyn DeviceLinOp<V>>,
);

/// A small TRACE-like system (seed `case_seed`) with `b = A x_true` (`x_true` from
/// `x_seed`: in the range of A; ghost rows are empty, so b is zero there): the matrix,
/// its SBELL form, both on the GPU, and `b` on both sides.
#[allow(clippy::type_complexity)]
fn trace_system<A, V>(
    gpu: &Gpu,
    case_seed: u64,
    x_seed: u64,
) -> (
    Bcsr<A>,
    Sbell<A>,
    DeviceSbell<A>,
    Vec<V>,
    ferrocuda::gpu::DeviceBuffer<V>,
)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: KrylovElement,
{
    let spec = TraceSpec::new(6, 5, 4, 3).seed(case_seed);
    let a = generate::trace_like::<A>(&spec).expect("case");
    let s = Sbell::from_bcsr(&a).expect("sbell");
    let da = DeviceSbell::upload(gpu, &s).expect("upload");
    let xt: Vec<V> = random_vec(a.n_cols(), x_seed);
    let mut b = vec![V::ZERO; a.n_rows()];
    ferrocuda::sparse::cpu::spmv_bcsr(V::ONE, &a, &xt, V::ZERO, &mut b).expect("spmv");
    let db = gpu.upload(&b).expect("b");
    (a, s, da, b, db)
}

fn gpu_matches_cpu_on_trace_case<A, V>(gpu: &Gpu, name: &str, rtol: f64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V> + PrecondKernels<V> + PrecondKernels<A>,
    V: KrylovElement,
{
    let (a, s, da, b, db) = trace_system::<A, V>(gpu, 5, 3);
    let (cpu_point, cpu_block) = (
        BlockJacobi::point(&a).expect("point"),
        BlockJacobi::new(&a).expect("block"),
    );
    let (gpu_point, gpu_block) = (
        DeviceBlockJacobi::point(gpu, &a).expect("point"),
        DeviceBlockJacobi::new(gpu, &a).expect("block"),
    );
    let preconds: [Pair<V>; 3] = [
        ("none", None, None),
        ("point Jacobi", Some(&cpu_point), Some(&gpu_point)),
        ("block Jacobi", Some(&cpu_block), Some(&gpu_block)),
    ];
    for ((precond, cm, gm), orth) in preconds.into_iter().flat_map(|p| {
        [
            (p, Orthogonalization::Cgs2),
            (p, Orthogonalization::Mgs),
            (p, Orthogonalization::Pipelined),
        ]
    }) {
        let name = format!("{name} {precond}");
        let opts = GmresOptions::default()
            .restart(20)
            .rtol(rtol)
            .orthogonalization(orth);
        let mut xc = vec![V::ZERO; a.n_cols()];
        let rc = cpu::gmres(&s, cm, &b, &mut xc, &opts).expect("cpu gmres");
        let mut xg = gpu.alloc_zeroed::<V>(a.n_cols()).expect("x");
        let rg = kgpu::gmres(&da, gm, &db, &mut xg, &opts).expect("gpu gmres");
        assert!(
            rc.converged && rg.converged,
            "{name} {orth:?}: cpu {rc:?} gpu {rg:?}"
        );
        assert!(
            rg.iterations.abs_diff(rc.iterations) <= 2,
            "{name} {orth:?}: gpu {} iterations, cpu {}",
            rg.iterations,
            rc.iterations
        );
        assert!(
            rg.relative_residual <= rtol,
            "{name} {orth:?}: {}",
            rg.relative_residual
        );
        // The estimates of the first steps agree closely (same algorithm, different
        // summation trees).
        for (i, (g, c)) in rg.history.iter().zip(&rc.history).take(5).enumerate() {
            assert!(
                (g - c).abs() <= 1e-3 * c,
                "{name} {orth:?} step {i}: gpu {g} cpu {c}"
            );
        }
    }
}

#[test]
fn gmres_gpu_matches_cpu_on_the_trace_like_case() {
    let Some(gpu) = gpu_or_skip("gmres_gpu_matches_cpu_on_the_trace_like_case") else {
        return;
    };
    gpu_matches_cpu_on_trace_case::<f64, f64>(&gpu, "f64", 1e-9);
    gpu_matches_cpu_on_trace_case::<Complex<f64>, Complex<f64>>(&gpu, "c64", 1e-9);
    gpu_matches_cpu_on_trace_case::<Complex<f32>, Complex<f32>>(&gpu, "c32", 1e-4);
    gpu_matches_cpu_on_trace_case::<f32, Complex<f32>>(&gpu, "f32 x c32", 1e-4);
}

/// Pipelined GMRES against the classical DCGS2 on the GPU (the oracle), on TRACE-like
/// cases with and without block Jacobi: the same steps within a few, the tolerance met on
/// the true residual (recomputed on the CPU), the first cycle's estimates alike, and the
/// solution poisoned before the solve.
fn pipelined_matches_classical<A, V>(gpu: &Gpu, name: &str, rtol: f64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V> + PrecondKernels<V> + PrecondKernels<A>,
    V: KrylovElement,
{
    for case_seed in [5, 11] {
        let (a, _, da, b, db) = trace_system::<A, V>(gpu, case_seed, 3);
        let coo = ferrocuda::sparse::Coo::from(&Csr::from(&a));
        let block = DeviceBlockJacobi::new(gpu, &a).expect("block");
        for (precond, m) in [("none", None), ("block Jacobi", Some(&block))] {
            let m = m.map(|m| m as &dyn DeviceLinOp<V>);
            let what = format!("{name} case {case_seed} {precond}");
            let classical = GmresOptions::default().restart(20).rtol(rtol);
            let pipelined = classical
                .clone()
                .orthogonalization(Orthogonalization::Pipelined);
            let mut x = gpu.alloc_zeroed::<V>(a.n_cols()).expect("x");
            let rc = kgpu::gmres(&da, m, &db, &mut x, &classical).expect("classical");
            let mut x = gpu.alloc_zeroed::<V>(a.n_cols()).expect("x");
            let rp = kgpu::gmres(&da, m, &db, &mut x, &pipelined).expect("pipelined");
            assert!(rc.converged && rp.converged, "{what}: {rc:?} {rp:?}");
            assert!(
                rp.iterations <= rc.iterations + rc.iterations / 10 + 2,
                "{what}: pipelined {} steps, classical {}",
                rp.iterations,
                rc.iterations
            );
            let xh = x.download().expect("x");
            let (res, _) = true_residual(&coo, &b, &xh);
            let bn = b.iter().map(|&v| as_c64(v).norm_sqr()).sum::<f64>().sqrt();
            assert!(
                res <= 1.5 * rtol * bn,
                "{what}: true residual {res:e} of |b| {bn:e}"
            );
            for (i, (p, c)) in rp.history.iter().zip(&rc.history).take(8).enumerate() {
                assert!(
                    (p - c).abs() <= 1e-3 * c,
                    "{what} step {i}: {p} against {c}"
                );
            }
        }
    }
}

#[test]
fn gmres_pipelined_gpu_matches_classical_convergence() {
    let Some(gpu) = gpu_or_skip("gmres_pipelined_gpu_matches_classical_convergence") else {
        return;
    };
    pipelined_matches_classical::<f64, f64>(&gpu, "f64", 1e-9);
    pipelined_matches_classical::<Complex<f64>, Complex<f64>>(&gpu, "c64", 1e-9);
    pipelined_matches_classical::<f32, f32>(&gpu, "f32", 1e-4);
    pipelined_matches_classical::<f64, Complex<f64>>(&gpu, "f64 x c64", 1e-9);
}

fn as_c64<V: Element>(v: V) -> Complex<f64> {
    use ferrocuda::RealScalar;
    Complex::new(v.re().to_f64(), v.im().to_f64())
}

/// Cycles run on the device take the host-stepped cycles' steps (the same algebra,
/// `ferrocuda_kernels::krylov::cycle`, from the same dots), end where they end, and wait
/// for the GPU at most `1 + m / check_every` times per cycle (once at its end with 0).
fn device_cycles_match_host_cycles<A, V>(gpu: &Gpu, name: &str, rtol: f64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V> + PrecondKernels<V> + PrecondKernels<A>,
    V: KrylovElement,
{
    let (a, _, da, _, db) = trace_system::<A, V>(gpu, 9, 4);
    let block = DeviceBlockJacobi::new(gpu, &a).expect("block");
    let x0: Vec<V> = random_vec(a.n_cols(), 6);
    let eps = ferrocuda::RealScalar::to_f64(<V::Real as ferrocuda::RealScalar>::EPSILON);
    // m = 8: the state staged in shared memory; m = 40: too large for it, the step
    // kernels work on global memory (DCGS2's with its parallel phases, MGS's on one
    // thread).
    for (m, (precond, pm)) in [8, 40].into_iter().flat_map(|m| {
        [
            ("none", None),
            ("block Jacobi", Some(&block as &dyn DeviceLinOp<V>)),
        ]
        .map(|p| (m, p))
    }) {
        for orth in [Orthogonalization::Cgs2, Orthogonalization::Mgs] {
            let base = GmresOptions::default()
                .cycle_control(CycleControl::Host)
                .restart(m)
                .rtol(rtol)
                .max_iter(300)
                .orthogonalization(orth);
            let solve = |opts: &GmresOptions| {
                let mut x = gpu.upload(&x0).expect("x0");
                let before = ferrocuda::gpu::host_waits();
                let r = kgpu::gmres(&da, pm, &db, &mut x, opts).expect("gmres");
                let waits = ferrocuda::gpu::host_waits() - before;
                (r, x.download().expect("x"), waits)
            };
            let (rh, xh, waits_h) = solve(&base);
            assert!(rh.converged, "{name} m {m} {precond} {orth:?} host: {rh:?}");
            assert!(
                waits_h >= rh.iterations as u64,
                "{name}: the host-stepped solve waited {waits_h} times for {} steps",
                rh.iterations
            );
            // One kernel per cycle where it can (CGS2, no preconditioner), else device
            // cycles looked at every 4 steps.
            let fused = orth == Orthogonalization::Cgs2 && pm.is_none();
            let controls = [0, 1, 3, 8]
                .map(|check_every| CycleControl::Device { check_every })
                .into_iter()
                .chain([CycleControl::Fused]);
            let mut device_end = None;
            for control in controls {
                let check_every = match control {
                    CycleControl::Device { check_every } => check_every,
                    _ if fused => usize::MAX,
                    _ => 4,
                };
                let what = format!("{name} m {m} {precond} {orth:?} {control:?}");
                let opts = base.clone().cycle_control(control);
                let (rd, xd, waits) = solve(&opts);
                assert_eq!(
                    (rd.iterations, rd.cycles, rd.reason, rd.converged),
                    (rh.iterations, rh.cycles, rh.reason, rh.converged),
                    "{what}"
                );
                let bitwise = rd.history == rh.history && xd == xh;
                eprintln!(
                    "{what}: {} steps, bit for bit with the host's: {bitwise}",
                    rd.iterations
                );
                // The one-kernel cycle computes what the device-cycle kernels compute, in
                // the same order: the same bits.
                match control {
                    CycleControl::Device { check_every: 0 } => {
                        device_end = Some((rd.history.clone(), xd.clone()))
                    }
                    CycleControl::Fused if fused => {
                        let (h0, x0) = device_end.as_ref().expect("device cycles ran first");
                        assert!(
                            &rd.history == h0 && &xd == x0,
                            "{what}: not bit for bit with the device cycles"
                        );
                    }
                    _ => {}
                }
                for (i, (d, h)) in rd.history.iter().zip(&rh.history).enumerate() {
                    assert!(
                        (d - h).abs() <= 1e-9 * h.abs(),
                        "{what} step {i}: {d} vs {h}"
                    );
                }
                let want: Vec<Complex<f64>> = xh.iter().map(|&v| as_c64(v)).collect();
                let e = rel_err(&xd, &want);
                assert!(e <= 1e3 * eps, "{what}: x differs by {e:e}");
                // Setup: one wait (|b|, |x0| and the first true residual); then per
                // cycle the cycle's own looks (its end where it looks at nothing), and
                // with a preconditioner its true residual (without one, the restart
                // is queued on the device behind the cycle).
                let looks = match check_every {
                    0 | usize::MAX => 1,
                    k => m.div_ceil(k).max(1) as u64,
                };
                let per_cycle = looks + u64::from(pm.is_some());
                let bound = 1 + rd.cycles as u64 * per_cycle;
                assert!(waits <= bound, "{what}: {waits} waits, bound {bound}");
                assert!(
                    waits < waits_h,
                    "{what}: {waits} waits, host-stepped {waits_h}"
                );
            }
        }
    }
}

#[test]
fn gmres_device_cycles_match_host_cycles_with_fewer_waits() {
    let Some(gpu) = gpu_or_skip("gmres_device_cycles_match_host_cycles_with_fewer_waits") else {
        return;
    };
    device_cycles_match_host_cycles::<f64, f64>(&gpu, "f64", 1e-10);
    device_cycles_match_host_cycles::<Complex<f64>, Complex<f64>>(&gpu, "c64", 1e-10);
    device_cycles_match_host_cycles::<f32, f32>(&gpu, "f32", 1e-4);
    device_cycles_match_host_cycles::<Complex<f32>, Complex<f32>>(&gpu, "c32", 1e-4);
}

#[test]
fn gmres_gpu_behaviour_on_special_and_bad_input() {
    let Some(gpu) = gpu_or_skip("gmres_gpu_behaviour_on_special_and_bad_input") else {
        return;
    };
    let n = 64;
    let coo = nonsymmetric::<f64>(n, 9);
    let bcsr =
        Bcsr::from_csr(&Csr::from(&coo), 1, BlockLayout::RowMajor, BlockFit::Exact).expect("bcsr");
    let a = DeviceBcsr::upload(&gpu, &bcsr).expect("upload");
    let opts = GmresOptions::default();
    // Zero b: x = 0.
    let zero = gpu.upload(&vec![0.0; n]).expect("b");
    let mut x = gpu.upload(&vec![1.5; n]).expect("x");
    let r = kgpu::gmres(&a, None, &zero, &mut x, &opts).expect("gmres");
    assert_eq!(r.reason, StopReason::ZeroRhs);
    assert!(x.download().expect("x").iter().all(|&v| v == 0.0));
    // NaN in b: an error, x unchanged.
    let mut b: Vec<f64> = random_vec(n, 1);
    b[5] = f64::NAN;
    let db = gpu.upload(&b).expect("b");
    let mut x = gpu.upload(&vec![0.25; n]).expect("x");
    let e = kgpu::gmres(&a, None, &db, &mut x, &opts).unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
    assert!(x.download().expect("x").iter().all(|&v| v == 0.25));
    // Dimension mismatch.
    let db = gpu.upload(&random_vec::<f64>(n, 1)).expect("b");
    let mut short = gpu.alloc_zeroed::<f64>(n - 1).expect("x");
    assert!(kgpu::gmres(&a, None, &db, &mut short, &opts).is_err());
    // Non-convergence is a result.
    let mut x = gpu.alloc_zeroed::<f64>(n).expect("x");
    let r =
        kgpu::gmres(&a, None, &db, &mut x, &opts.clone().max_iter(3).rtol(1e-14)).expect("gmres");
    assert!(!r.converged);
    assert_eq!(r.reason, StopReason::MaxIterations);
    assert_eq!(r.iterations, 3);
    // A workspace beyond the device's memory: an error naming restart, n and the bytes,
    // refused before allocating; x unchanged.
    for restart in [usize::MAX, 1 << 40] {
        let opts = GmresOptions::default()
            .restart(restart)
            .max_iter(usize::MAX);
        let mut x = gpu.upload(&vec![0.5; n]).expect("x");
        let e = kgpu::gmres(&a, None, &db, &mut x, &opts).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, ferrocuda::Error::OutOfDeviceMemory { .. })
                && msg.contains(&format!("restart = {restart}"))
                && msg.contains("n = 64"),
            "{msg}"
        );
        assert!(x.download().expect("x").iter().all(|&v| v == 0.5));
    }
}

/// On singular, inconsistent systems the GPU takes the CPU twin's decisions: the same
/// reason (stagnation or divergence), about the same number of steps, the best iterate
/// kept, never worse than `x0`, and the true residual of what it returns.
#[test]
fn gmres_gpu_on_singular_systems_matches_the_cpu_reason_and_keeps_the_best_iterate() {
    let Some(gpu) = gpu_or_skip("gmres_gpu_on_singular_systems_matches_the_cpu_reason") else {
        return;
    };
    let n = 60;
    let b: Vec<f64> = random_vec(n, 5);
    let db = gpu.upload(&b).expect("b");
    for (name, coo) in singular_cases::<f64>(n, 3) {
        let bcsr = Bcsr::from_csr(&Csr::from(&coo), 1, BlockLayout::RowMajor, BlockFit::Exact)
            .expect("bcsr");
        let a = DeviceBcsr::upload(&gpu, &bcsr).expect("upload");
        for m in [5, 30] {
            let opts = GmresOptions::default().restart(m).max_iter(5000);
            let mut want = vec![0.0; n];
            let c = cpu::gmres(&coo, None, &b, &mut want, &opts).expect("cpu");
            let mut x = gpu.upload(&vec![0.0; n]).expect("x0");
            let r = kgpu::gmres(&a, None, &db, &mut x, &opts).expect("gpu");
            let case = format!("{name} m={m}");
            assert!(!r.converged, "{case}: {r:?}");
            assert_eq!(r.reason, c.reason, "{case}: cpu {c:?}");
            assert!(r.iterations.abs_diff(c.iterations) <= 2 * m, "{case}");
            assert!(r.residual <= r.initial_residual, "{case}: {r:?}");
            let x = x.download().expect("x");
            let (got, scale) = true_residual(&coo, &b, &x);
            assert!(
                (got - r.residual).abs() <= 1e-10 * r.rhs_norm + 1e-13 * scale,
                "{case}: report {:e}, |b - A x| = {got:e}",
                r.residual
            );
        }
    }
}

/// The problem-level solve on the GPU ([`ferrocuda::krylov::DeviceSolver`]) against its
/// CPU twin ([`ferrocuda::krylov::Solver`]): same padding and preconditioner, the format
/// the GPU's `Format::Auto` rules name, and both solutions within GMRES's tolerance of
/// the dense LU.
fn device_solver_case<T>(gpu: &Gpu, name: &str, tol: f64)
where
    T: ferrocuda::krylov::DeviceSolveElement,
{
    use common::krylov::{solve_cases, solve_system};
    use ferrocuda::krylov::{DeviceSolver, Solver};
    use ferrocuda::sparse::{Format, FormatOptions, Matrix, Target};
    let (a, b, want) = solve_system::<T>();
    let n = a.n_rows();
    let formats = [
        (Format::Auto, Some(5)),
        (Format::Sbell, Some(5)),
        (Format::Auto, None),
    ];
    for (case, opts) in solve_cases(&formats) {
        let (format, bs) = (opts.format, opts.block_size);
        let case = format!("{name} {case}");
        let ds =
            DeviceSolver::upload(gpu, &a, &opts).unwrap_or_else(|e| panic!("{case}: upload: {e}"));
        let sol = ds.solve(&b, None).unwrap_or_else(|e| panic!("{case}: {e}"));
        let cpu_sol = Solver::new(&a, &opts)
            .and_then(|s| s.solve(&b, None))
            .unwrap_or_else(|e| panic!("{case}: cpu: {e}"));
        let (r, c) = (&sol.report, &cpu_sol.report);
        assert!(r.gmres.converged, "{case}: {r:?}");
        assert_eq!(r.device, Target::Gpu, "{case}");
        assert_eq!(
            (r.n, r.n_padded, r.precond_block_size, sol.x.len()),
            (c.n, c.n_padded, c.precond_block_size, n),
            "{case}"
        );
        // The GPU's choice for the padded matrix, as the host computes it.
        let padded = if r.n_padded == n {
            a.clone()
        } else {
            a.pad_identity(r.n_padded).expect("pad")
        };
        let fopts = match bs {
            Some(bs) => FormatOptions::default().block_size(bs),
            None => FormatOptions::default(),
        };
        let host = Matrix::with_options(&padded, format, Target::Gpu, &fopts).expect("choice");
        assert_eq!(&r.format, host.choice(), "{case}");
        for (which, x) in [("gpu", &sol.x), ("cpu", &cpu_sol.x)] {
            let e = rel_err(x, &want);
            assert!(e <= tol, "{case} {which}: error {e:e} against the dense LU");
        }
    }
}

#[test]
fn device_solver_matches_cpu_solver_and_dense_lu() {
    let Some(gpu) = gpu_or_skip("device_solver_matches_cpu_solver_and_dense_lu") else {
        return;
    };
    device_solver_case::<f64>(&gpu, "f64", 1e-9);
    device_solver_case::<Complex<f64>>(&gpu, "c64", 1e-9);
}

/// `DeviceSolver` on vectors long enough to be copied through its page-locked staging
/// (over 1 MB): the solution against the CPU twin's, a restart from that solution (a
/// non-zero `x0` through the staging) that stops at once and hands `x0` back bit for
/// bit, and the timing's parts within the total.
fn device_solver_staged_case<T>(gpu: &Gpu, name: &str)
where
    T: ferrocuda::krylov::DeviceSolveElement,
{
    use ferrocuda::krylov::{DeviceSolver, Preconditioner, SolveOptions, Solver};
    // 10 x 40 x 20 x 2 blocks: 147,840 rows, 1.2 MB of f64 per vector.
    let a: Csr<T> = generate::trace_like::<T>(&TraceSpec::new(10, 40, 20, 2))
        .expect("case")
        .to_csr()
        .without_zeros();
    let n = a.n_rows();
    assert!(
        n * size_of::<T>() > 1 << 20,
        "{name}: the case must be staged"
    );
    // b = A x_true: a random b has parts the TRACE-like operator barely reaches (GMRES
    // stagnates near 1 on it, as on the CPU).
    let xt: Vec<T> = random_vec(n, 29);
    let mut b = vec![T::ZERO; n];
    ferrocuda::sparse::cpu::spmv_csr(T::ONE, &a, &xt, T::ZERO, &mut b).expect("b");
    let opts = SolveOptions::default()
        .precond(Preconditioner::BlockJacobi)
        .gmres(GmresOptions::default().rtol(1e-9));
    let ds = DeviceSolver::upload(gpu, &a, &opts).expect("upload");
    let sol = ds.solve(&b, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    let cpu_sol = Solver::new(&a, &opts)
        .and_then(|s| s.solve(&b, None))
        .unwrap_or_else(|e| panic!("{name}: cpu: {e}"));
    assert!(sol.report.gmres.converged, "{name}: {:?}", sol.report.gmres);
    assert_eq!(sol.x.len(), n, "{name}");
    let cpu_x: Vec<Complex<f64>> = cpu_sol
        .x
        .iter()
        .map(|&v| common::krylov::to_c64(v))
        .collect();
    let e = rel_err(&sol.x, &cpu_x);
    assert!(e <= 1e-6, "{name}: GPU against CPU {e:e}");
    let r = csr_relative_residual(&a, &b, &sol.x);
    assert!(r <= 1.5e-9, "{name}: true residual {r:e}");
    let again = ds.solve(&b, Some(&sol.x)).expect("restart");
    assert_eq!(
        again.report.gmres.iterations, 0,
        "{name}: from the solution"
    );
    assert!(again.x == sol.x, "{name}: x0 did not come back bit for bit");
    let t = sol.report.timing;
    let parts = t.checks + t.inputs + t.gmres + t.output;
    assert!(
        [t.checks, t.inputs, t.gmres, t.output]
            .iter()
            .all(|&p| p >= 0.0)
            && parts <= t.total * (1.0 + 1e-9),
        "{name}: {t:?}"
    );
}

/// `|b - A x| / |b|` in `Complex<f64>` from the CSR arrays.
fn csr_relative_residual<T: Element>(a: &Csr<T>, b: &[T], x: &[T]) -> f64 {
    use common::krylov::to_c64;
    let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
    let (mut r2, mut b2) = (0.0, 0.0);
    for i in 0..a.n_rows() {
        let mut s = to_c64(b[i]);
        for k in ptr[i]..ptr[i + 1] {
            s -= to_c64(val[k]) * to_c64(x[col[k] as usize]);
        }
        r2 += s.norm_sqr();
        b2 += to_c64(b[i]).norm_sqr();
    }
    (r2 / b2).sqrt()
}

#[test]
fn device_solver_stages_long_vectors() {
    let Some(gpu) = gpu_or_skip("device_solver_stages_long_vectors") else {
        return;
    };
    device_solver_staged_case::<f64>(&gpu, "f64");
    device_solver_staged_case::<Complex<f64>>(&gpu, "c64");
}

/// GMRES with `CycleControl::Fused` on `da` against device cycles looked at only at their
/// end: the same steps, bit for bit, and one host wait per cycle besides the restarts.
fn fused_matches_device_cycles<A, V>(gpu: &Gpu, what: &str, da: &DeviceSbell<A>, b: &[V])
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: KrylovElement,
{
    let db = gpu.upload(b).expect("b");
    let x0: Vec<V> = random_vec(b.len(), 3);
    let base = GmresOptions::default().restart(12).rtol(1e-9).max_iter(200);
    let solve = |control: CycleControl| {
        let mut x = gpu.upload(&x0).expect("x0");
        let before = ferrocuda::gpu::host_waits();
        let r = kgpu::gmres(da, None, &db, &mut x, &base.clone().cycle_control(control))
            .expect("gmres");
        let waits = ferrocuda::gpu::host_waits() - before;
        (r, x.download().expect("x"), waits)
    };
    let (rd, xd, _) = solve(CycleControl::Device { check_every: 0 });
    let (rf, xf, waits) = solve(CycleControl::Fused);
    assert!(rf.cycles > 1, "{what}: {rf:?}");
    assert_eq!(
        (rf.iterations, rf.cycles, rf.reason),
        (rd.iterations, rd.cycles, rd.reason),
        "{what}"
    );
    assert!(
        rf.history == rd.history && xf == xd,
        "{what}: not bit for bit"
    );
    // One wait before the first cycle (|b|, |x0|, the first true residual), then one per
    // cycle: its end, with the restart (x += V y, the next true residual) queued behind it.
    let bound = 1 + rf.cycles as u64;
    assert!(waits <= bound, "{what}: {waits} waits, bound {bound}");
    let ph = rf.timing.cycle_phases;
    assert!(
        ph.dots > 0.0 && ph.sums > 0.0 && ph.algebra > 0.0 && ph.update > 0.0,
        "{what}: {ph:?}"
    );
}

/// The one-kernel cycle beyond the device-cycle test's pairs: a real matrix with complex
/// vectors (`SbellRef::Real`) and a block size other than 5 (the kernel's run-time `b`).
/// Small enough for compute-sanitizer's racecheck.
#[test]
fn gmres_fused_cycles_match_device_cycles_on_mixed_pairs_and_other_block_sizes() {
    let Some(gpu) =
        gpu_or_skip("gmres_fused_cycles_match_device_cycles_on_mixed_pairs_and_other_block_sizes")
    else {
        return;
    };
    let (_, _, da, _, _) = trace_system::<f64, Complex<f64>>(&gpu, 5, 1);
    let b: Vec<Complex<f64>> = random_vec(da.n_rows(), 8);
    fused_matches_device_cycles(&gpu, "f64 x c64", &da, &b);
    let coo = nonsymmetric::<f64>(300, 4);
    let bc =
        Bcsr::from_csr(&Csr::from(&coo), 3, BlockLayout::RowMajor, BlockFit::Exact).expect("bcsr");
    let s = Sbell::from_bcsr(&bc).expect("sbell");
    let ds = DeviceSbell::upload(&gpu, &s).expect("upload");
    let b: Vec<f64> = random_vec(300, 9);
    fused_matches_device_cycles(&gpu, "f64 b=3", &ds, &b);
}

/// The device's least-squares solve (`gmres_solution_coefficients`, one thread per row)
/// gives the host's `cycle::solve` bit for bit: states of random Hessenberg columns,
/// staged in shared memory (m = 8) and read from global memory (m = 40), with fewer
/// threads than rows (the stride loop) and a full block, the output poisoned first.
fn least_squares_on_device_matches_host<V: KrylovElement>(gpu: &Gpu, name: &str) {
    use ferrocuda::gpu::{DeviceSlice, DeviceSliceMut, LaunchConfig};
    use ferrocuda_kernels::krylov::cycle::{self as cyc, C};
    use ferrocuda_kernels::krylov::{
        BLOCK, GmresSolutionCoefficients, device_coef_len, solution_scratch_len,
    };
    for (m, steps) in [(8, 8), (8, 5), (40, 40), (40, 37), (40, 1)] {
        let mut st = vec![f64::NAN; cyc::state_len(m)];
        cyc::begin(&mut st, m, 0.0, f64::EPSILON);
        let beta = 1.5;
        cyc::mgs_begin(&mut st, beta);
        let re: Vec<f64> = random_vec((m + 1) * m, 40 + m as u64);
        let im: Vec<f64> = random_vec((m + 1) * m, 80 + m as u64);
        for k in 0..steps {
            let col = |i: usize| {
                let at = k * (m + 1) + i;
                if i == k + 1 {
                    // MGS's subdiagonal entry |w|: real and positive.
                    C::new(0.5 + re[at].abs(), 0.0)
                } else {
                    C::new(re[at], im[at])
                }
            };
            let w2 = col(k + 1).norm_sqr();
            cyc::mgs_step(&mut st, k, col, w2);
        }
        assert_eq!(cyc::steps(&st), steps, "{name} m {m}");
        let mut y = vec![C::new(0.0, 0.0); steps];
        cyc::solve(&st, &mut y);
        let want: Vec<V> = y.iter().map(|&v| cyc::to_scalar(v)).collect();
        let state = gpu.upload(&st).expect("state");
        let scratch = solution_scratch_len(m);
        let staged = if scratch * 8 <= 48 * 1024 {
            scratch
        } else {
            2 * m
        };
        for threads in [32, BLOCK as u32] {
            let poison: V = cyc::to_scalar(C::new(f64::NAN, f64::NAN));
            let mut coef = gpu.upload(&vec![poison; device_coef_len(m)]).expect("coef");
            let cfg = LaunchConfig::blocks(1, threads).with_shared_bytes((staged * 8) as u32);
            let args = GmresSolutionCoefficients {
                staged,
                state: state.as_in(),
                coef: coef.as_out(),
            };
            // SAFETY: the state holds state_len(m) f64 for its restart length m, the
            // launch gives `staged` f64 of shared memory (>= 2 m, the whole scratch where
            // it fits 48 KiB), and coef holds device_coef_len(m) >= steps values.
            unsafe { gpu.launch(&V::GMRES_SOLUTION_COEFFICIENTS, cfg, args) }.expect("launch");
            let got = coef.download().expect("coef");
            let same = got[..steps]
                .iter()
                .zip(&want)
                .all(|(g, w)| bytemuck::bytes_of(g) == bytemuck::bytes_of(w));
            assert!(
                same,
                "{name} m {m} steps {steps} threads {threads}: {:?} vs {:?}",
                &got[..steps.min(4)],
                &want[..steps.min(4)]
            );
            assert!(
                got[steps..]
                    .iter()
                    .all(|&v| cyc::from_scalar(v).re.is_nan()),
                "{name}: wrote past the steps"
            );
        }
    }
}

#[test]
fn gmres_least_squares_on_the_device_matches_the_host_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("gmres_least_squares_on_the_device_matches_the_host_bit_for_bit")
    else {
        return;
    };
    least_squares_on_device_matches_host::<f64>(&gpu, "f64");
    least_squares_on_device_matches_host::<Complex<f64>>(&gpu, "c64");
    least_squares_on_device_matches_host::<f32>(&gpu, "f32");
    least_squares_on_device_matches_host::<Complex<f32>>(&gpu, "c32");
}
