//! Dense LU on the CPU: backward error on random, need-pivoting and ill-conditioned
//! matrices, agreement with nalgebra, solves with several right-hand sides, singular
//! matrices and argument errors.

use crate::common;

use ferrocuda::Error;
use ferrocuda::dense::{
    LuOptions, LuScalar, Matrix, Pivoting, cpu, inverse_norm1_estimate, permutation, solve,
};
use nalgebra::DMatrix;

const SIZES: [usize; 12] = [1, 2, 3, 31, 32, 33, 64, 65, 127, 128, 129, 200];

fn random<T: LuScalar>(n: usize, seed: u64) -> Matrix<T> {
    Matrix::random(n, n, -1.0, 1.0, seed)
}

fn check_backward<T: LuScalar>(what: &str, a: &Matrix<T>, opts: &LuOptions, bound: f64) {
    let lu = cpu::factor(a, opts).unwrap_or_else(|e| panic!("{what}: {e}"));
    let be = lu
        .report
        .scaled_backward_error
        .expect("backward error requested");
    assert!(
        be.is_finite() && be < bound,
        "{what} n={}: backward error {be} n eps >= {bound}",
        a.nrows()
    );
    // The pivots are row indices at or below their step.
    for (k, &p) in lu.ipiv.iter().enumerate() {
        assert!(
            p as usize >= k && (p as usize) < a.nrows(),
            "{what}: ipiv[{k}] = {p}"
        );
    }
}

#[test]
fn backward_error_is_small_on_random_matrices() {
    for n in SIZES {
        for block in [1, 7, 32, 64, 128] {
            let opts = LuOptions::default().with_block(block);
            check_backward("f64", &random::<f64>(n, n as u64), &opts, 2.0);
            check_backward("f32", &random::<f32>(n, n as u64 + 1), &opts, 2.0);
        }
    }
}

#[test]
fn factors_do_not_depend_on_the_block_size() {
    // Every element receives its updates in the same order whatever the panel width.
    let a = random::<f64>(157, 3);
    let base = cpu::factor(&a, &LuOptions::default().with_block(1)).unwrap();
    for block in [2, 16, 64, 100, 128] {
        let lu = cpu::factor(&a, &LuOptions::default().with_block(block)).unwrap();
        assert_eq!(lu.ipiv, base.ipiv, "block {block}: pivots");
        assert_eq!(lu.factors, base.factors, "block {block}: factors");
    }
}

#[test]
fn matrices_that_need_pivoting() {
    // Zero leading entry: without pivoting the first step fails.
    let mut a = random::<f64>(50, 11);
    a.set(0, 0, 0.0);
    check_backward("zero a00", &a, &LuOptions::default(), 2.0);
    // The matrix is nonsingular: "zero pivot without pivoting", not "singular".
    match cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)) {
        Err(e @ Error::ZeroPivot { column: 0, .. }) => {
            assert!(e.to_string().contains("zero pivot without pivoting"), "{e}")
        }
        other => panic!("no pivoting on a zero a00: {other:?}"),
    }
    // Tiny leading entries: without pivoting the growth destroys the factors, with
    // partial pivoting the backward error stays of order 1.
    let mut a = random::<f64>(60, 12);
    for k in 0..60 {
        a.set(k, k, 1e-14 * a.get(k, k));
    }
    check_backward("tiny diagonal", &a, &LuOptions::default(), 2.0);
    let nopiv = cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)).unwrap();
    assert!(
        nopiv.report.scaled_backward_error.unwrap() > 1e3,
        "no pivoting on a tiny diagonal should be unstable: {:?}",
        nopiv.report.scaled_backward_error
    );
    // A permutation matrix: P A = I, so L = U = I.
    let n = 40;
    let a = Matrix::<f64>::from_fn(n, n, |i, j| if (i + 7) % n == j { 1.0 } else { 0.0 });
    let lu = cpu::factor(&a, &LuOptions::default()).unwrap();
    assert_eq!(
        lu.factors,
        Matrix::from_fn(n, n, |i, j| (i == j) as u8 as f64)
    );
    let perm = permutation(&lu.ipiv);
    for (i, &r) in perm.iter().enumerate() {
        assert_eq!(a.get(r, i), 1.0, "row {i} of P A");
    }
}

#[test]
fn ill_conditioned_matrices_stay_backward_stable() {
    // Hilbert matrices (cond ~ 1e16 at n = 12) and a graded matrix.
    for n in [8, 12, 20] {
        let h = Matrix::<f64>::from_fn(n, n, |i, j| 1.0 / (i + j + 1) as f64);
        check_backward("hilbert", &h, &LuOptions::default(), 2.0);
    }
    // Rows scaled over 16 orders of magnitude (cond ~ 1e16).
    let r = random::<f64>(80, 77);
    let g = Matrix::<f64>::from_fn(80, 80, |i, j| {
        10f64.powi(-((i * 16 / 80) as i32)) * r.get(i, j)
    });
    check_backward("graded", &g, &LuOptions::default(), 2.0);
}

#[test]
fn solutions_match_nalgebra() {
    for n in [1, 5, 33, 100, 129] {
        let a = random::<f64>(n, 100 + n as u64);
        let b = Matrix::<f64>::random(n, 3, -1.0, 1.0, 200 + n as u64);
        let (x, report) = solve(&a, &b, &LuOptions::default().with_block(16)).unwrap();
        assert!(report.scaled_backward_error.unwrap() < 2.0);
        let na = nalgebra::DMatrix::from_column_slice(n, n, a.as_slice());
        let nb = nalgebra::DMatrix::from_column_slice(n, 3, b.as_slice());
        let nx = na.clone().lu().solve(&nb).expect("nalgebra: nonsingular");
        let xn = nalgebra::DMatrix::from_column_slice(n, 3, x.as_slice());
        let diff = (&xn - &nx).norm() / nx.norm();
        // Both are backward stable; the difference is of order cond(A) eps.
        let cond = na.clone().svd(false, false).singular_values;
        let cond = cond.max() / cond.min();
        assert!(
            diff < 100.0 * cond * f64::EPSILON,
            "n={n}: |x - x_nalgebra| / |x| = {diff} (cond {cond:.2e})"
        );
        // The residual of every column.
        let r = &na * &xn - &nb;
        assert!(
            r.norm() <= 1e3 * f64::EPSILON * na.norm() * xn.norm(),
            "n={n}: residual {}",
            r.norm()
        );
    }
}

#[test]
fn pivoting_none_equals_partial_on_diagonally_dominant_matrices() {
    let n = 70;
    let mut a = random::<f64>(n, 5);
    for j in 0..n {
        let s: f64 = (0..n).map(|i| a.get(i, j).abs()).sum();
        a.set(j, j, s + 1.0);
    }
    let p = cpu::factor(&a, &LuOptions::default()).unwrap();
    let q = cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)).unwrap();
    assert_eq!(p.ipiv, (0..n as u32).collect::<Vec<_>>());
    assert_eq!(p.factors, q.factors);
}

#[test]
fn singular_matrices_name_the_column() {
    let a = Matrix::new(2, 2, vec![1.0f64, 2.0, 2.0, 4.0]).unwrap();
    match cpu::factor(&a, &LuOptions::default()) {
        Err(e @ Error::Singular { column: 1, .. }) => {
            assert!(e.to_string().contains("column 1"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    for k in [0, 5, 39] {
        let mut a = random::<f64>(40, 9);
        for i in 0..40 {
            a.set(i, k, 0.0);
        }
        for block in [1, 8, 64] {
            match cpu::factor(&a, &LuOptions::default().with_block(block)) {
                Err(Error::Singular { column, .. }) => assert_eq!(column, k, "block {block}"),
                other => panic!("zero column {k}: {other:?}"),
            }
        }
    }
    let z = Matrix::<f32>::zeros(3, 3);
    assert!(matches!(
        cpu::factor(&z, &LuOptions::default()),
        Err(Error::Singular { column: 0, .. })
    ));
}

#[test]
fn argument_errors() {
    let r = Matrix::<f64>::zeros(3, 4);
    assert!(matches!(
        cpu::factor(&r, &LuOptions::default()),
        Err(Error::NotSquare {
            rows: 3,
            cols: 4,
            ..
        })
    ));
    let e = Matrix::<f64>::zeros(0, 0);
    assert!(matches!(
        cpu::factor(&e, &LuOptions::default()),
        Err(Error::Empty { .. })
    ));
    let a = random::<f64>(4, 1);
    for block in [0, 513] {
        assert!(matches!(
            cpu::factor(&a, &LuOptions::default().with_block(block)),
            Err(Error::InvalidArgument { .. })
        ));
    }
    let lu = cpu::factor(&a, &LuOptions::default()).unwrap();
    let b = Matrix::<f64>::zeros(5, 1);
    assert!(matches!(
        lu.solve(&b),
        Err(Error::DimensionMismatch {
            expected: 4,
            found: 5,
            ..
        })
    ));
    assert!(matches!(
        solve(&a, &b, &LuOptions::default()),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(Matrix::new(2, 2, vec![1.0f64; 3]).is_err());
    // Zero right-hand sides is a valid, empty solve.
    assert_eq!(lu.solve(&Matrix::zeros(4, 0)).unwrap().ncols(), 0);
}

fn to_nalgebra<T: LuScalar>(a: &Matrix<T>) -> DMatrix<f64> {
    DMatrix::from_fn(a.nrows(), a.ncols(), |i, j| a.get(i, j).to_f64())
}

fn norm1(a: &DMatrix<f64>) -> f64 {
    a.column_iter()
        .map(|c| c.iter().map(|v| v.abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The exact `1 / (||A||_1 ||A^{-1}||_1)` by nalgebra's inverse (in `f64`).
fn exact_rcond<T: LuScalar>(a: &Matrix<T>) -> f64 {
    let na = to_nalgebra(a);
    let inv = na.clone().try_inverse().expect("invertible");
    1.0 / (norm1(&na) * norm1(&inv))
}

/// `A = X Y` with `X` `n x r`, `Y` `r x n` random: rank `r < n`.
fn rank_deficient(n: usize, r: usize, seed: u64) -> Matrix<f64> {
    let x = to_nalgebra(&Matrix::<f64>::random(n, r, -1.0, 1.0, seed));
    let y = to_nalgebra(&Matrix::<f64>::random(r, n, -1.0, 1.0, seed + 1));
    let p = x * y;
    Matrix::from_fn(n, n, |i, j| p[(i, j)])
}

/// LAPACK's estimator against the exact condition number: never below it (the estimate
/// of `||A^{-1}||_1` is a lower bound, so `rcond` is an upper bound), within the usual
/// factor of 3, on random, ill-conditioned and graded matrices, `f64` and `f32`.
#[test]
fn rcond_estimate_matches_the_exact_condition_number() {
    let mut cases: Vec<(String, Matrix<f64>)> = Vec::new();
    for n in [1, 2, 3, 10, 31, 64, 100] {
        for seed in 0..4 {
            cases.push((
                format!("random n={n} seed={seed}"),
                random::<f64>(n, 1000 + 10 * n as u64 + seed),
            ));
        }
    }
    for n in [4, 6, 8, 10] {
        let h = Matrix::<f64>::from_fn(n, n, |i, j| 1.0 / (i + j + 1) as f64);
        cases.push((format!("hilbert n={n}"), h));
    }
    let r = random::<f64>(40, 7);
    cases.push((
        "graded rows".into(),
        Matrix::from_fn(40, 40, |i, j| 10f64.powi(-((i / 4) as i32)) * r.get(i, j)),
    ));
    cases.push((
        "diagonal".into(),
        Matrix::from_fn(5, 5, |i, j| {
            if i == j {
                [3.0, 1e-4, 2.0, 7.0, 0.5][i]
            } else {
                0.0
            }
        }),
    ));
    for (what, a) in &cases {
        let lu = cpu::factor(a, &LuOptions::default()).unwrap();
        let (est, exact) = (lu.report.rcond, exact_rcond(a));
        // The "exact" value is itself only known to about cond(A) eps relatively.
        let known = 1e-8 + 10.0 * f64::EPSILON / exact;
        assert!(
            est >= exact * (1.0 - known) && est <= 3.0 * exact,
            "{what}: rcond {est:e}, exact {exact:e}"
        );
        assert_eq!(
            lu.report.singular_to_working_precision,
            est < f64::EPSILON,
            "{what}"
        );
        let inv = inverse_norm1_estimate(&lu.factors, &lu.ipiv).unwrap();
        assert!(
            (1.0 / (inv * a.norm1()) - est).abs() <= 1e-12 * est,
            "{what}"
        );
    }
    for n in [3, 50, 120] {
        let a = random::<f32>(n, n as u64 + 3);
        let lu = cpu::factor(&a, &LuOptions::default()).unwrap();
        let (est, exact) = (lu.report.rcond, exact_rcond(&a));
        assert!(
            est >= exact * 0.99 && est <= 3.0 * exact,
            "f32 n={n}: rcond {est:e}, exact {exact:e}"
        );
        assert_eq!(
            (lu.report.eps, lu.report.precision),
            (f32::EPSILON as f64, "f32")
        );
    }
}

/// Rank-deficient matrices (pivots of order 1e-16, not exactly zero) are singular to
/// working precision: the factors are returned with the state and `rcond`, but solves
/// are refused unless forced.
#[test]
fn singular_to_working_precision_is_a_distinct_state() {
    for (n, r) in [(10, 5), (30, 29), (80, 40)] {
        let a = rank_deficient(n, r, n as u64);
        let lu = cpu::factor(&a, &LuOptions::default()).expect("factors are returned");
        let rep = &lu.report;
        assert!(
            rep.singular_to_working_precision && rep.rcond < rep.eps,
            "n={n} rank {r}: {rep:?}"
        );
        let b = Matrix::<f64>::random(n, 2, -1.0, 1.0, 9);
        for e in [
            lu.solve(&b).unwrap_err(),
            solve(&a, &b, &LuOptions::default()).unwrap_err(),
        ] {
            match &e {
                Error::SingularToWorkingPrecision { rcond, eps, .. } => {
                    assert_eq!((*rcond, *eps), (rep.rcond, f64::EPSILON), "{e}")
                }
                other => panic!("n={n}: {other:?}"),
            }
            let msg = e.to_string();
            assert!(
                msg.contains("singular to working precision") && msg.contains("rcond"),
                "{msg}"
            );
        }
        assert!(rep.check_conditioning("test").is_err());
        let x = lu.solve_forced(&b).expect("forced");
        assert_eq!(x.nrows(), n);
    }
    // A well-conditioned matrix is not.
    let lu = cpu::factor(&random::<f64>(30, 4), &LuOptions::default()).unwrap();
    assert!(!lu.report.singular_to_working_precision && lu.report.rcond > 1e-6);
    assert!(lu.report.check_conditioning("test").is_ok());
}

/// NaN or infinity anywhere in `A` or `B` is an error naming the entry, before
/// factorising: no "backward error 0" with an all-NaN solution, no "zero pivot" for a
/// NaN pivot. In `f32`, a value beyond its range is refused when converting.
#[test]
fn non_finite_input_is_an_error_naming_the_entry() {
    for (i, j, v) in [
        (3, 5, f64::NAN),
        (0, 0, f64::NAN),
        (7, 2, f64::INFINITY),
        (9, 9, f64::NEG_INFINITY),
    ] {
        let mut a = random::<f64>(10, 1);
        a.set(i, j, v);
        for pivoting in [Pivoting::Partial, Pivoting::None] {
            let e = cpu::factor(&a, &LuOptions::default().with_pivoting(pivoting)).unwrap_err();
            match e {
                Error::NonFinite {
                    row,
                    col,
                    what: "A",
                    ..
                } => assert_eq!((row, col), (i, j), "{e}"),
                other => panic!("{v} at ({i}, {j}): {other:?}"),
            }
        }
        let b = Matrix::<f64>::random(10, 1, -1.0, 1.0, 2);
        assert!(matches!(
            solve(&a, &b, &LuOptions::default()),
            Err(Error::NonFinite { .. })
        ));
    }
    let a = random::<f64>(10, 1);
    let mut b = Matrix::<f64>::random(10, 3, -1.0, 1.0, 2);
    b.set(4, 2, f64::NAN);
    let lu = cpu::factor(&a, &LuOptions::default()).unwrap();
    for e in [
        lu.solve(&b).unwrap_err(),
        lu.solve_forced(&b).unwrap_err(),
        solve(&a, &b, &LuOptions::default()).unwrap_err(),
    ] {
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                Error::NonFinite {
                    what: "B",
                    row: 4,
                    col: 2,
                    ..
                }
            ) && msg.contains("B[4, 2]"),
            "{msg}"
        );
    }
    // f64 data for an f32 factorisation: 1e39 overflows f32.
    let mut a = random::<f64>(6, 3);
    a.set(2, 4, 1e39);
    let e = a.try_convert::<f32>().unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::NonFinite { row: 2, col: 4, .. }) && msg.contains("f32"),
        "{msg}"
    );
    assert!(a.try_convert::<f64>().is_ok());
    a.set(2, 4, 0.5);
    let c = a.try_convert::<f32>().unwrap();
    assert_eq!(c, a.convert::<f32>());
    // An f32 matrix that already holds the overflow (read as f32): the entry and why.
    let mut a = random::<f32>(6, 3);
    a.set(1, 5, f32::INFINITY);
    let msg = cpu::factor(&a, &LuOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("A[1, 5]") && msg.contains("rounds to infinity"),
        "{msg}"
    );
}

/// Finite input whose factorisation overflows is an error, not factors with infinities.
#[test]
fn overflowing_factors_are_an_error() {
    let a = Matrix::new(2, 2, vec![1e308f64, -1e308, 1e308, 1e308]).unwrap();
    let e = cpu::factor(&a, &LuOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::NonFinite { .. }) && msg.contains("overflowed"),
        "{msg}"
    );
}

/// Without pivoting: a zero pivot on a nonsingular matrix is "zero pivot without
/// pivoting"; a zero pivot whose column is zero below it too is a singular matrix.
#[test]
fn zero_pivot_without_pivoting_is_not_called_singular() {
    let none = LuOptions::default().with_pivoting(Pivoting::None);
    // A cyclic permutation (zero diagonal), nonsingular: partial pivoting factors it.
    let n = 12;
    let p = Matrix::<f64>::from_fn(n, n, |i, j| if (i + 1) % n == j { 1.0 } else { 0.0 });
    assert!(cpu::factor(&p, &LuOptions::default()).is_ok());
    for block in [1, 4, 64] {
        match cpu::factor(&p, &none.with_block(block)) {
            Err(Error::ZeroPivot { column: 0, .. }) => {}
            other => panic!("block {block}: {other:?}"),
        }
    }
    // A zero pivot later on: [[1, 1, 0], [1, 1, 1], [0, 1, 1]] is nonsingular (det -1),
    // its second pivot is 0 with a 1 below it.
    let a = Matrix::new(3, 3, vec![1.0f64, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]).unwrap();
    assert!(matches!(
        cpu::factor(&a, &none),
        Err(Error::ZeroPivot { column: 1, .. })
    ));
    // A zero column: singular, with or without pivoting.
    let mut z = random::<f64>(20, 5);
    for i in 0..20 {
        z.set(i, 6, 0.0);
    }
    for opts in [none, LuOptions::default()] {
        assert!(
            matches!(
                cpu::factor(&z, &opts),
                Err(Error::Singular { column: 6, .. })
            ),
            "{opts:?}"
        );
    }
}

/// The backward error is the normwise relative one, `||P A - L U||_1 / ||A||_1`
/// (checked with nalgebra in `f64` on `f32` factors, where `f64` evaluates it almost
/// exactly), and its scaled twin is that over `n eps`.
#[test]
fn backward_error_is_the_normwise_relative_one() {
    for n in [2, 17, 90] {
        let a = random::<f32>(n, 50 + n as u64);
        let lu = cpu::factor(&a, &LuOptions::default()).unwrap();
        let f = |i, j| lu.factors.get(i, j) as f64;
        let l = DMatrix::from_fn(n, n, |i, j| match i.cmp(&j) {
            std::cmp::Ordering::Greater => f(i, j),
            std::cmp::Ordering::Equal => 1.0,
            std::cmp::Ordering::Less => 0.0,
        });
        let u = DMatrix::from_fn(n, n, |i, j| if i <= j { f(i, j) } else { 0.0 });
        let perm = permutation(&lu.ipiv);
        let pa = DMatrix::from_fn(n, n, |i, j| a.get(perm[i], j) as f64);
        let want = norm1(&(pa - l * u)) / a.norm1();
        let be = lu.report.backward_error.unwrap();
        assert!(
            want > 0.0 && (be - want).abs() <= 1e-6 * want,
            "n={n}: {be:e} vs {want:e}"
        );
        let eps = f32::EPSILON as f64;
        assert!(be < 4.0 * n as f64 * eps, "n={n}: {be:e}");
        let scaled = lu.report.scaled_backward_error.unwrap();
        assert_eq!(scaled, be / (n as f64 * eps));
    }
}

/// Sizes from a user are checked before anything is allocated: an error naming the
/// dimensions and the bytes, never an abort.
#[test]
fn oversized_matrices_are_errors_not_aborts() {
    for (r, c) in [
        (4_294_967_295usize, 4_294_967_295usize),
        (usize::MAX, 3),
        (1 << 20, 1 << 20),
    ] {
        let e = Matrix::<f64>::try_zeros(r, c).unwrap_err();
        common::assert_out_of_host_memory(&e, &[&format!("{r} x {c} f64 matrix")]);
        let e = Matrix::<f32>::try_random(r, c, -1.0, 1.0, 1).unwrap_err();
        assert!(e.to_string().contains(&format!("{r} x {c} f32")), "{e}");
    }
    assert_eq!(Matrix::<f64>::try_zeros(3, 2).unwrap(), Matrix::zeros(3, 2));
    assert_eq!(
        Matrix::<f32>::try_random(4, 5, 0.0, 1.0, 3).unwrap(),
        Matrix::random(4, 5, 0.0, 1.0, 3)
    );
}

/// Each GEMM kernel resolves to its own typed handle's PTX entry (CPU only); kernels of
/// the wrong type or shape are refused with the name of what was asked.
#[test]
fn gemm_kernels_name_their_entries() {
    use ferrocuda::dense::gpu::GemmKernel;
    assert_eq!(GemmKernel::CudaCores.name::<f32>().unwrap(), "gemm_nn_f32");
    assert_eq!(GemmKernel::CudaCores.name::<f64>().unwrap(), "gemm_nn_f64");
    assert_eq!(GemmKernel::Dmma884.name::<f64>().unwrap(), "gemm_dmma_f64");
    for k in [4, 8, 16] {
        assert_eq!(
            GemmKernel::Sm90 { k }.name::<f64>().unwrap(),
            format!("gemm_dmma_sm90_k{k}_f64")
        );
    }
    let msg = |r: ferrocuda::Result<&str>| r.unwrap_err().to_string();
    assert!(msg(GemmKernel::Dmma884.name::<f32>()).contains("gemm_dmma_f64 is an f64 kernel"));
    assert!(
        msg(GemmKernel::Sm90 { k: 8 }.name::<f32>())
            .contains("gemm_dmma_sm90_k8_f64 is an f64 kernel")
    );
    assert!(msg(GemmKernel::Sm90 { k: 5 }.name::<f64>()).contains("k = 5"));
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
