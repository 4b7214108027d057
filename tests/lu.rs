//! Dense LU on the CPU: backward error on random, need-pivoting and ill-conditioned
//! matrices, agreement with nalgebra, solves with several right-hand sides, singular
//! matrices and argument errors.

use ferrocuda::Error;
use ferrocuda::dense::{LuOptions, LuScalar, Matrix, Pivoting, cpu, permutation, solve};

const SIZES: [usize; 12] = [1, 2, 3, 31, 32, 33, 64, 65, 127, 128, 129, 200];

fn random<T: LuScalar>(n: usize, seed: u64) -> Matrix<T> {
    Matrix::random(n, n, -1.0, 1.0, seed)
}

fn check_backward<T: LuScalar>(what: &str, a: &Matrix<T>, opts: &LuOptions, bound: f64) {
    let lu = cpu::factor(a, opts).unwrap_or_else(|e| panic!("{what}: {e}"));
    let be = lu.report.backward_error.expect("backward error requested");
    assert!(
        be.is_finite() && be < bound,
        "{what} n={}: backward error {be} >= {bound}",
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
    match cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)) {
        Err(Error::Singular { column, .. }) => assert_eq!(column, 0),
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
        nopiv.report.backward_error.unwrap() > 1e3,
        "no pivoting on a tiny diagonal should be unstable: {:?}",
        nopiv.report.backward_error
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
        assert!(report.backward_error.unwrap() < 2.0);
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
