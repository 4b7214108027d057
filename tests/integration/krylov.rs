//! GMRES on the CPU: known solutions against a dense LU (nalgebra), both
//! orthogonalisations, real and complex, restarts, and the behaviour on bad input.

use crate::common;

use common::krylov::{dense_solve, nonsymmetric, rel_err, singular_cases, to_c64, true_residual};
use common::random_vec;
use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::krylov::{BlockJacobi, GmresOptions, LinOp, Orthogonalization, StopReason, cpu};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Bcsr, BlockFit, BlockLayout, Coo, Csr, MatrixScalar, Sbell};
use nalgebra::DMatrix;

fn solves_against_dense<A, V>(name: &str, n: usize, restart: usize, rtol: f64, tol: f64)
where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    let a = nonsymmetric::<A>(n, 7 + n as u64);
    let b: Vec<V> = random_vec(n, 11);
    let want = dense_solve(&a, &b);
    for orth in [
        Orthogonalization::Cgs2,
        Orthogonalization::Mgs,
        Orthogonalization::Pipelined,
    ] {
        let opts = GmresOptions::default()
            .restart(restart)
            .rtol(rtol)
            .orthogonalization(orth);
        let mut x = vec![V::ZERO; n];
        let r = cpu::gmres(&a, None, &b, &mut x, &opts).expect("gmres");
        assert!(r.converged, "{name} {orth:?}: {r:?}");
        assert_eq!(r.reason, StopReason::Converged);
        assert!(
            r.relative_residual <= rtol,
            "{name} {orth:?}: {}",
            r.relative_residual
        );
        let e = rel_err(&x, &want);
        assert!(
            e <= tol,
            "{name} {orth:?} m={restart}: error {e:e} against the dense LU"
        );
        assert_eq!(r.history.len(), r.iterations);
        // The true residual of the result agrees with the report.
        let mut ax = vec![V::ZERO; n];
        a.apply(&x, &mut ax).expect("apply");
        let res: f64 = ax
            .iter()
            .zip(&b)
            .map(|(&p, &q)| (to_c64(p) - to_c64(q)).norm_sqr())
            .sum::<f64>()
            .sqrt();
        assert!(
            (res - r.residual).abs() <= 1e-3 * r.residual.max(1e-300) + 1e-12 * r.rhs_norm,
            "{name}: report says {} but |b - A x| = {res}",
            r.residual
        );
    }
}

#[test]
fn gmres_matches_dense_lu_real_and_complex() {
    for (n, m) in [(1, 5), (2, 1), (50, 60), (50, 10), (200, 30), (200, 5)] {
        solves_against_dense::<f64, f64>(&format!("f64 n={n}"), n, m, 1e-10, 1e-8);
        solves_against_dense::<Complex<f64>, Complex<f64>>(
            &format!("c64 n={n}"),
            n,
            m,
            1e-10,
            1e-8,
        );
        solves_against_dense::<f64, Complex<f64>>(&format!("f64 x c64 n={n}"), n, m, 1e-10, 1e-8);
        solves_against_dense::<f32, f32>(&format!("f32 n={n}"), n, m, 1e-5, 1e-4);
        solves_against_dense::<Complex<f32>, Complex<f32>>(&format!("c32 n={n}"), n, m, 1e-5, 1e-4);
    }
}

#[test]
fn gmres_uses_the_initial_guess_and_the_preconditioner() {
    let n = 120;
    let a = nonsymmetric::<f64>(n, 3);
    let b: Vec<f64> = random_vec(n, 5);
    let want = dense_solve(&a, &b);
    // Starting at the solution: converged before the first step.
    let mut x: Vec<f64> = want.iter().map(|c| c.re).collect();
    let r = cpu::gmres(&a, None, &b, &mut x, &GmresOptions::default()).expect("gmres");
    assert!(r.converged);
    assert_eq!(r.iterations, 0);
    // The exact inverse as preconditioner: one step.
    struct Inverse(DMatrix<f64>);
    impl LinOp<f64> for Inverse {
        fn nrows(&self) -> usize {
            self.0.nrows()
        }
        fn ncols(&self) -> usize {
            self.0.ncols()
        }
        fn apply_unchecked(&self, x: &[f64], y: &mut [f64]) -> ferrocuda::Result<()> {
            let v = &self.0 * nalgebra::DVector::from_column_slice(x);
            y.copy_from_slice(v.as_slice());
            Ok(())
        }
    }
    let mut dense = DMatrix::<f64>::zeros(n, n);
    for ((&r, &c), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        dense[(r as usize, c as usize)] += v;
    }
    let inv = Inverse(dense.try_inverse().expect("invertible"));
    for orth in [
        Orthogonalization::Cgs2,
        Orthogonalization::Mgs,
        Orthogonalization::Pipelined,
    ] {
        let mut x = vec![0.0; n];
        let opts = GmresOptions::default().orthogonalization(orth);
        let r = cpu::gmres(&a, Some(&inv), &b, &mut x, &opts).expect("gmres");
        assert!(r.converged, "{orth:?} {r:?}");
        assert!(r.iterations <= 2, "{orth:?}: {} iterations", r.iterations);
        assert!(rel_err(&x, &want) < 1e-9);
    }
}

#[test]
fn gmres_behaviour_on_special_and_bad_input() {
    let n = 30;
    let a = nonsymmetric::<f64>(n, 9);
    let opts = GmresOptions::default();
    // Zero right-hand side: x = 0 whatever the initial guess.
    let mut x = vec![1.5; n];
    let r = cpu::gmres(&a, None, &vec![0.0; n], &mut x, &opts).expect("gmres");
    assert_eq!(r.reason, StopReason::ZeroRhs);
    assert!(r.converged && x.iter().all(|&v| v == 0.0));
    // NaN in b: an error naming it, x unchanged.
    let mut b: Vec<f64> = random_vec(n, 1);
    b[7] = f64::NAN;
    let mut x = vec![0.25; n];
    let e = cpu::gmres(&a, None, &b, &mut x, &opts).unwrap_err();
    assert!(e.to_string().contains("b[7]"), "{e}");
    assert!(x.iter().all(|&v| v == 0.25));
    // Infinity in x0.
    let b: Vec<f64> = random_vec(n, 1);
    x[3] = f64::INFINITY;
    let e = cpu::gmres(&a, None, &b, &mut x, &opts).unwrap_err();
    assert!(e.to_string().contains("x0[3]"), "{e}");
    // Dimension mismatch.
    let mut short = vec![0.0; n - 1];
    assert!(cpu::gmres(&a, None, &b, &mut short, &opts).is_err());
    let rect = Coo::<f64>::empty(n, n + 1).expect("empty");
    let mut x = vec![0.0; n + 1];
    let e = cpu::gmres(&rect, None, &b, &mut x, &opts).unwrap_err();
    assert!(e.to_string().contains("square"), "{e}");
    // Invalid options.
    let mut x = vec![0.0; n];
    assert!(cpu::gmres(&a, None, &b, &mut x, &GmresOptions::default().restart(0)).is_err());
    assert!(
        cpu::gmres(
            &a,
            None,
            &b,
            &mut x,
            &GmresOptions::default().rtol(f64::NAN)
        )
        .is_err()
    );
    // Non-convergence is a result, not an error.
    let r = cpu::gmres(
        &a,
        None,
        &b,
        &mut x,
        &GmresOptions::default().max_iter(3).rtol(1e-14),
    )
    .expect("gmres");
    assert!(!r.converged);
    assert_eq!(r.reason, StopReason::MaxIterations);
    assert_eq!(r.iterations, 3);
    assert!(r.relative_residual < 1.0);
}

#[test]
fn gmres_happy_breakdown_on_a_small_krylov_space() {
    // A diagonal matrix with three distinct values: the Krylov space has dimension 3,
    // so GMRES is exact after three steps whatever the restart length.
    let n = 40;
    let mut a = Coo::<f64>::empty(n, n).expect("empty");
    for i in 0..n {
        a.push(i, i, [1.0, 2.0, 5.0][i % 3]).expect("push");
    }
    let b: Vec<f64> = random_vec(n, 2);
    for orth in [
        Orthogonalization::Cgs2,
        Orthogonalization::Mgs,
        Orthogonalization::Pipelined,
    ] {
        let mut x = vec![0.0; n];
        let opts = GmresOptions::default().orthogonalization(orth).rtol(1e-12);
        let r = cpu::gmres(&a, None, &b, &mut x, &opts).expect("gmres");
        assert!(r.converged, "{orth:?}: {r:?}");
        assert!(r.iterations <= 3, "{orth:?}: {} iterations", r.iterations);
        for i in 0..n {
            assert!((x[i] * [1.0, 2.0, 5.0][i % 3] - b[i]).abs() < 1e-10);
        }
    }
}

#[test]
fn gmres_residual_estimate_does_not_grow_within_a_cycle() {
    let n = 300;
    let a = nonsymmetric::<Complex<f64>>(n, 21);
    let b: Vec<Complex<f64>> = random_vec(n, 4);
    for orth in [
        Orthogonalization::Cgs2,
        Orthogonalization::Mgs,
        Orthogonalization::Pipelined,
    ] {
        let mut x = vec![Complex::new(0.0, 0.0); n];
        let opts = GmresOptions::default().orthogonalization(orth).restart(300);
        let r = cpu::gmres(&a, None, &b, &mut x, &opts).expect("gmres");
        for w in r.history.windows(2) {
            assert!(w[1] <= w[0] * (1.0 + 1e-12), "{orth:?}: {:?}", r.history);
        }
    }
}

/// Right-preconditioned GMRES (point and block Jacobi built from 5x5 blocks) reaches
/// the dense LU's solution, real, complex and mixed.
fn preconditioned_against_dense<A, V>(name: &str, n: usize, rtol: f64, tol: f64)
where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    let coo = nonsymmetric::<A>(n, 21 + n as u64);
    let bcsr =
        Bcsr::from_csr(&Csr::from(&coo), 5, BlockLayout::RowMajor, BlockFit::Exact).expect("bcsr");
    let b: Vec<V> = random_vec(n, 4);
    let want = dense_solve(&coo, &b);
    let point = BlockJacobi::point(&bcsr).expect("point");
    let block = BlockJacobi::new(&bcsr).expect("block");
    for (which, m) in [("point", &point), ("block", &block)] {
        for orth in [
            Orthogonalization::Cgs2,
            Orthogonalization::Mgs,
            Orthogonalization::Pipelined,
        ] {
            let opts = GmresOptions::default()
                .restart(10)
                .rtol(rtol)
                .orthogonalization(orth);
            let mut x = vec![V::ZERO; n];
            let r = cpu::gmres(&bcsr, Some(m as &dyn LinOp<V>), &b, &mut x, &opts).expect("gmres");
            assert!(r.converged, "{name} {which} {orth:?}: {r:?}");
            let e = rel_err(&x, &want);
            assert!(
                e <= tol,
                "{name} {which} {orth:?}: error {e:e} against the dense LU"
            );
        }
    }
}

#[test]
fn gmres_with_point_and_block_jacobi_matches_dense_lu() {
    for n in [5, 100, 255] {
        preconditioned_against_dense::<f64, f64>(&format!("f64 n={n}"), n, 1e-10, 1e-8);
        preconditioned_against_dense::<Complex<f64>, Complex<f64>>(
            &format!("c64 n={n}"),
            n,
            1e-10,
            1e-8,
        );
        preconditioned_against_dense::<f32, Complex<f32>>(
            &format!("f32 x c32 n={n}"),
            n,
            1e-5,
            1e-4,
        );
    }
}

/// On the TRACE-like case (5x5 blocks, empty ghost rows) block Jacobi converges in fewer
/// steps than no preconditioner, and the true residual, recomputed here in f64, meets
/// the tolerance.
#[test]
fn block_jacobi_cuts_the_steps_on_the_trace_like_case() {
    let a = generate::trace_like::<f64>(&TraceSpec::new(8, 6, 4, 3).seed(9)).expect("case");
    let s = Sbell::from_bcsr(&a).expect("sbell");
    let xt: Vec<f64> = random_vec(a.n_cols(), 1);
    let mut b = vec![0.0; a.n_rows()];
    ferrocuda::sparse::cpu::spmv_bcsr(1.0, &a, &xt, 0.0, &mut b).expect("spmv");
    let opts = GmresOptions::default().restart(20).rtol(1e-10);
    let m = BlockJacobi::new(&a).expect("block jacobi");
    let mut steps = Vec::new();
    for precond in [None, Some(&m as &dyn LinOp<f64>)] {
        let mut x = vec![0.0; a.n_cols()];
        let r = cpu::gmres(&s, precond, &b, &mut x, &opts).expect("gmres");
        assert!(r.converged, "{r:?}");
        let mut ax = vec![0.0; a.n_rows()];
        ferrocuda::sparse::cpu::spmv_bcsr(1.0, &a, &x, 0.0, &mut ax).expect("spmv");
        let res = ax
            .iter()
            .zip(&b)
            .map(|(p, q)| (p - q) * (p - q))
            .sum::<f64>()
            .sqrt();
        let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(res <= 1.01e-10 * bn, "true residual {:e}", res / bn);
        assert!((r.relative_residual - res / bn).abs() <= 1e-12, "{r:?}");
        steps.push(r.iterations);
    }
    assert!(
        steps[1] < steps[0],
        "steps without / with block Jacobi: {steps:?}"
    );
    assert!(m.b() == 5 && m.n_rows() == a.n_rows());
}

/// The problem-level solve ([`ferrocuda::krylov::Solver`]): every preconditioner, with and
/// without a block size, padding to whole blocks where the block size does not divide
/// `n` (and only where a blocked format or block Jacobi may use it); the solution against
/// the dense LU and the report's sizes, format and preconditioner.
#[test]
fn solver_pads_to_blocks_and_solves_with_every_preconditioner() {
    use common::krylov::{solve_cases, solve_system};
    use ferrocuda::krylov::{Preconditioner, Solver};
    use ferrocuda::sparse::{Format, Target};
    let (a, b, want) = solve_system::<f64>();
    let n = a.n_rows();
    let formats = [
        (Format::Auto, Some(5)),
        (Format::Bcsr, Some(5)),
        (Format::Csr, Some(5)),
        (Format::Auto, None),
        (Format::Csr, None),
    ];
    for (case, opts) in solve_cases(&formats) {
        let (precond, format, bs) = (opts.precond, opts.format, opts.block_size);
        let s = Solver::new(&a, &opts).unwrap_or_else(|e| panic!("{case}: {e}"));
        let sol = s.solve(&b, None).unwrap_or_else(|e| panic!("{case}: {e}"));
        let r = &sol.report;
        let pads =
            bs.is_some() && (format != Format::Csr || precond == Preconditioner::BlockJacobi);
        let n_padded = if pads { 125 } else { n };
        assert!(r.gmres.converged, "{case}: {r:?}");
        assert_eq!((r.n, r.n_padded, sol.x.len()), (n, n_padded, n), "{case}");
        assert_eq!(
            (r.format.n_rows, r.format.requested),
            (n_padded, format),
            "{case}"
        );
        assert_eq!((r.device, r.precond), (Target::Cpu, precond), "{case}");
        assert_eq!(s.choice(), &r.format, "{case}");
        let want_b = match precond {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(1),
            Preconditioner::BlockJacobi => Some(bs.unwrap_or(3)),
            Preconditioner::Ilu0 => unreachable!("solve_cases has no ILU(0) (krylov::ilu's tests)"),
        };
        assert_eq!(r.precond_block_size, want_b, "{case}");
        let e = rel_err(&sol.x, &want);
        assert!(e <= 1e-9, "{case}: error {e:e} against the dense LU");
        // From the solution, nothing is left to do.
        let again = s.solve(&b, Some(&sol.x)).expect("solve from x");
        assert!(
            again.report.gmres.iterations < r.gmres.iterations,
            "{case}: {} then {} iterations",
            r.gmres.iterations,
            again.report.gmres.iterations
        );
    }
}

/// Bad input to the problem-level solve is an error naming the value; the caller's data
/// are borrowed, never changed.
#[test]
fn solver_rejects_bad_input_naming_it() {
    use ferrocuda::krylov::{Preconditioner, SolveOptions, Solver};
    use ferrocuda::sparse::Format;
    let fails = |a: &Csr<f64>, opts: &SolveOptions| match Solver::new(a, opts) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let d = SolveOptions::default();
    let rect = Csr::<f64>::try_new(2, 3, vec![0, 0, 0], vec![], vec![]).expect("csr");
    let e = fails(&rect, &d);
    assert!(e.contains("square") && e.contains("2 x 3"), "{e}");
    let mut coo = nonsymmetric::<f64>(13, 1);
    let a = Csr::from(&coo);
    coo.push(5, 2, f64::NAN).expect("push");
    let e = fails(&Csr::from(&coo), &d);
    assert!(e.contains("entry (5, 2) is NaN"), "{e}");
    let e = fails(&a, &d.clone().block_size(0));
    assert!(e.contains("b = 0"), "{e}");
    let bj = d.clone().precond(Preconditioner::BlockJacobi);
    let e = fails(&a, &bj.clone().block_size(9));
    assert!(e.contains("b = 9") && e.contains("at most 8"), "{e}");
    // 13 is prime: no block size to detect.
    let e = fails(&a, &bj.clone().format(Format::Csr));
    assert!(
        e.contains("needs a block size") && e.contains("13 x 13"),
        "{e}"
    );
    let e = fails(&a, &d.clone().gmres(GmresOptions::default().restart(0)));
    assert!(e.contains("restart"), "{e}");
    // A zero diagonal entry under point Jacobi: the row is named.
    let mut z = Coo::<f64>::empty(3, 3).expect("coo");
    for (r, c, v) in [(0, 0, 1.0), (1, 2, 1.0), (2, 1, 1.0), (2, 2, 1.0)] {
        z.push(r, c, v).expect("push");
    }
    let e = fails(&Csr::from(&z), &d.clone().precond(Preconditioner::Jacobi));
    assert!(e.contains("row 1"), "{e}");
    // The right-hand side and the initial guess: lengths, then NaN and infinity.
    let s = Solver::new(&a, &d).expect("solver");
    let solve_err =
        |b: &[f64], x0: Option<&[f64]>| s.solve(b, x0).map(drop).unwrap_err().to_string();
    let e = solve_err(&[1.0; 12], None);
    assert!(e.contains("12") && e.contains("13"), "{e}");
    let mut b = vec![1.0; 13];
    b[7] = f64::INFINITY;
    let e = solve_err(&b, None);
    assert!(e.contains("b[7] is inf"), "{e}");
    let e = solve_err(&[1.0; 13], Some(&[0.0; 14]));
    assert!(e.contains("x0") && e.contains("14"), "{e}");
    let mut x0 = vec![0.0; 13];
    x0[3] = f64::NAN;
    let e = solve_err(&[1.0; 13], Some(&x0));
    assert!(e.contains("x0[3] is NaN"), "{e}");
}

/// On singular, inconsistent systems GMRES cannot converge: it stops early with a reason
/// (stagnation or divergence), returns the best iterate seen (never one worse than
/// `x0`) and reports the true residual of what it returns.
#[test]
fn gmres_on_singular_systems_stops_with_a_reason_and_keeps_the_best_iterate() {
    let n = 60;
    let b: Vec<f64> = random_vec(n, 5);
    let mut reasons = Vec::new();
    for (name, a) in singular_cases::<f64>(n, 3) {
        for orth in [
            Orthogonalization::Cgs2,
            Orthogonalization::Mgs,
            Orthogonalization::Pipelined,
        ] {
            for m in [5, 30, 60] {
                let case = format!("{name} {orth:?} m={m}");
                let x0 = vec![0.01; n];
                let mut x = x0.clone();
                let opts = GmresOptions::default()
                    .orthogonalization(orth)
                    .restart(m)
                    .max_iter(5000);
                let r = cpu::gmres(&a, None, &b, &mut x, &opts).expect("gmres");
                assert!(!r.converged, "{case}: {r:?}");
                assert!(
                    matches!(r.reason, StopReason::Stagnation | StopReason::Diverged),
                    "{case}: {:?} after {} iterations",
                    r.reason,
                    r.iterations
                );
                assert!(r.iterations < 5000, "{case}: ran to the limit");
                let (start, _) = true_residual(&a, &b, &x0);
                assert!(
                    (r.initial_residual - start).abs() <= 1e-12 * start,
                    "{case}"
                );
                assert!(
                    r.residual <= r.initial_residual,
                    "{case}: returned residual {:e} above the initial {:e}",
                    r.residual,
                    r.initial_residual
                );
                let (got, scale) = true_residual(&a, &b, &x);
                assert!(
                    (got - r.residual).abs() <= 1e-10 * r.rhs_norm + 1e-13 * scale,
                    "{case}: the report says {:e}, |b - A x| = {got:e}",
                    r.residual
                );
                reasons.push((case, r.reason));
            }
        }
    }
    // Both reasons occur on these cases (fixed data: the same every run).
    let had = |w: StopReason| reasons.iter().any(|(_, r)| *r == w);
    assert!(
        had(StopReason::Diverged) && had(StopReason::Stagnation),
        "{reasons:?}"
    );
}

/// A restart length beyond `max_iter` works as `max_iter` (a cycle cannot take more
/// steps); a workspace beyond any machine is an error naming restart, n and the bytes,
/// refused before allocating, with `x` unchanged.
#[test]
fn gmres_restart_beyond_memory_is_an_error_not_a_panic() {
    let n = 50;
    let a = nonsymmetric::<f64>(n, 8);
    let b: Vec<f64> = random_vec(n, 2);
    let mut want = vec![0.0; n];
    let r = cpu::gmres(
        &a,
        None,
        &b,
        &mut want,
        &GmresOptions::default().restart(1000),
    )
    .expect("gmres");
    let mut x = vec![0.0; n];
    let huge = GmresOptions::default().restart(usize::MAX);
    let s = cpu::gmres(&a, None, &b, &mut x, &huge).expect("restart beyond max_iter");
    assert_eq!((s.iterations, s.residual), (r.iterations, r.residual));
    assert_eq!(x, want);
    for (restart, max_iter) in [(usize::MAX, usize::MAX), (100_000_000_000, 1 << 40)] {
        let opts = GmresOptions::default().restart(restart).max_iter(max_iter);
        let mut x = vec![0.5; n];
        let e = cpu::gmres(&a, None, &b, &mut x, &opts).unwrap_err();
        common::assert_out_of_host_memory(&e, &[&format!("restart = {restart}"), "n = 50"]);
        assert!(x.iter().all(|&v| v == 0.5));
    }
}

/// `BasisStorage::F32` (CB-GMRES), CPU and GPU.
mod basis;
/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
/// `MatrixStorage::F32`'s edges, CPU and GPU.
mod storage;

/// Pipelined GMRES against the classical DCGS2 (the oracle) on TRACE-like cases, real
/// and complex, with and without block Jacobi: the same steps within a few, the tolerance
/// met on the true residual (recomputed in f64), the first cycle's estimates alike.
#[test]
fn gmres_pipelined_matches_classical_convergence() {
    fn case<V: Element>(name: &str, rtol: f64)
    where
        f64: MatrixScalar<V>,
    {
        for seed in [5, 9, 11] {
            let a =
                generate::trace_like::<f64>(&TraceSpec::new(8, 6, 4, 3).seed(seed)).expect("case");
            let coo = Coo::from(&Csr::from(&a));
            let xt: Vec<V> = random_vec(a.n_cols(), 3);
            let mut b = vec![V::ZERO; a.n_rows()];
            a.apply(&xt, &mut b).expect("b");
            let block = BlockJacobi::new(&a).expect("block");
            for (precond, m) in [("none", None), ("block Jacobi", Some(&block))] {
                let m = m.map(|m| m as &dyn LinOp<V>);
                let what = format!("{name} seed {seed} {precond}");
                let classical = GmresOptions::default().restart(20).rtol(rtol);
                let pipelined = classical
                    .clone()
                    .orthogonalization(Orthogonalization::Pipelined);
                let mut x = vec![V::ZERO; a.n_cols()];
                let rc = cpu::gmres(&a, m, &b, &mut x, &classical).expect("classical");
                let mut x = vec![V::ZERO; a.n_cols()];
                let rp = cpu::gmres(&a, m, &b, &mut x, &pipelined).expect("pipelined");
                assert!(rc.converged && rp.converged, "{what}: {rc:?} {rp:?}");
                assert!(
                    rp.iterations <= rc.iterations + rc.iterations / 10 + 2,
                    "{what}: pipelined {} steps, classical {}: {:?} {:?}",
                    rp.iterations,
                    rc.iterations,
                    rp.history,
                    rc.history
                );
                let (res, _) = true_residual(&coo, &b, &x);
                let bn = b.iter().map(|&v| to_c64(v).norm_sqr()).sum::<f64>().sqrt();
                assert!(res <= 1.5 * rtol * bn, "{what}: {res:e} of {bn:e}");
                for (i, (p, c)) in rp.history.iter().zip(&rc.history).take(8).enumerate() {
                    assert!(
                        (p - c).abs() <= 1e-6 * c,
                        "{what} step {i}: {p} against {c}"
                    );
                }
            }
        }
    }
    case::<f64>("f64", 1e-10);
    case::<Complex<f64>>("c64", 1e-10);
}
