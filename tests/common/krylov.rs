//! Systems for the GMRES tests: a nonsymmetric sparse matrix and nalgebra's dense LU
//! as the reference solution.

use ferrocuda::blas1::Element;
use ferrocuda::sparse::Coo;
use ferrocuda::{Complex, RealScalar};
use nalgebra::DMatrix;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::random_scalar_from;

/// A nonsymmetric sparse `n x n` matrix: diagonal `4 + |random|`, about six random
/// off-diagonal entries per row in [-1, 1], so it is well conditioned but far from normal.
pub fn nonsymmetric<T: Element>(n: usize, seed: u64) -> Coo<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut a = Coo::empty(n, n).expect("empty");
    for i in 0..n {
        let d: f64 = 4.0 + rng.random_range(0.0..1.0);
        a.push(i, i, T::from_real(<T::Real as RealScalar>::from_f64(d)))
            .expect("push");
        for _ in 0..6 {
            let j = rng.random_range(0..n);
            if j != i {
                a.push(i, j, random_scalar_from::<T>(&mut rng))
                    .expect("push");
            }
        }
    }
    a
}

pub fn to_c64<T: Element>(v: T) -> Complex<f64> {
    Complex::new(v.re().to_f64(), v.im().to_f64())
}

/// `A^{-1} b` by nalgebra's dense LU, in `Complex<f64>`.
pub fn dense_solve<A: Element, V: Element>(a: &Coo<A>, b: &[V]) -> Vec<Complex<f64>> {
    let n = a.n_rows();
    let mut m = DMatrix::<Complex<f64>>::zeros(n, n);
    for ((&r, &c), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        m[(r as usize, c as usize)] += to_c64(v);
    }
    let rhs = nalgebra::DVector::from_iterator(n, b.iter().map(|&v| to_c64(v)));
    let x = m.lu().solve(&rhs).expect("nonsingular");
    x.iter().copied().collect()
}

pub fn rel_err<V: Element>(x: &[V], want: &[Complex<f64>]) -> f64 {
    let num: f64 = x
        .iter()
        .zip(want)
        .map(|(&a, b)| (to_c64(a) - b).norm_sqr())
        .sum();
    let den: f64 = want.iter().map(|b| b.norm_sqr()).sum();
    (num / den).sqrt()
}

/// The system of the problem-level solve tests: `n = 123` (3 x 41: `Format::Auto`
/// detects `b = 3`; blocks of 5 pad it to 125), a right-hand side, and the dense LU's
/// solution.
pub fn solve_system<T: Element>() -> (ferrocuda::sparse::Csr<T>, Vec<T>, Vec<Complex<f64>>) {
    let coo = nonsymmetric::<T>(123, 5);
    let b: Vec<T> = super::random_vec(123, 6);
    let want = dense_solve(&coo, &b);
    (ferrocuda::sparse::Csr::from(&coo), b, want)
}

/// Named options of the problem-level solve tests: every preconditioner with each
/// `(format, block size)`, GMRES(20) to `rtol = 1e-12`.
pub fn solve_cases(
    formats: &[(ferrocuda::sparse::Format, Option<usize>)],
) -> Vec<(String, ferrocuda::krylov::SolveOptions)> {
    use ferrocuda::krylov::{GmresOptions, Preconditioner, SolveOptions};
    let gmres = GmresOptions::default().restart(20).rtol(1e-12);
    let mut cases = Vec::new();
    for precond in [
        Preconditioner::None,
        Preconditioner::Jacobi,
        Preconditioner::BlockJacobi,
    ] {
        for &(format, bs) in formats {
            let mut opts = SolveOptions::default()
                .gmres(gmres.clone())
                .precond(precond)
                .format(format);
            if let Some(bs) = bs {
                opts = opts.block_size(bs);
            }
            cases.push((format!("{precond} {format} {bs:?}"), opts));
        }
    }
    cases
}

/// Singular systems on which GMRES cannot converge for a random `b` (inconsistent):
/// `("copied row", A)` with the last row of [`nonsymmetric`] replaced by its first row,
/// and `("zero diagonal", diag(1, 2, .., n - 1, 0))`.
pub fn singular_cases<T: Element>(n: usize, seed: u64) -> Vec<(&'static str, Coo<T>)> {
    let base = nonsymmetric::<T>(n, seed);
    let mut copied = Coo::empty(n, n).expect("empty");
    for ((&r, &c), &v) in base.rows().iter().zip(base.cols()).zip(base.values()) {
        if r as usize != n - 1 {
            copied.push(r as usize, c as usize, v).expect("push");
        }
        if r == 0 {
            copied.push(n - 1, c as usize, v).expect("push");
        }
    }
    let mut diag = Coo::empty(n, n).expect("empty");
    for i in 0..n - 1 {
        let d = <T::Real as RealScalar>::from_f64((i + 1) as f64);
        diag.push(i, i, T::from_real(d)).expect("push");
    }
    vec![("copied row", copied), ("zero diagonal", diag)]
}

/// `(|b - A x|, || |A| |x| ||)` in `f64`: the residual and the scale of its rounding
/// error (the residual of a large `x` cannot be known better than `eps || |A| |x| ||`).
pub fn true_residual<A: Element, V: Element>(a: &Coo<A>, b: &[V], x: &[V]) -> (f64, f64) {
    let mut r: Vec<Complex<f64>> = b.iter().map(|&v| to_c64(v)).collect();
    let mut s = vec![0.0f64; r.len()];
    for ((&i, &j), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        let p = to_c64(v) * to_c64(x[j as usize]);
        r[i as usize] -= p;
        s[i as usize] += p.norm();
    }
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|t| t * t).sum::<f64>().sqrt();
    (
        norm(&mut r.iter().map(|z| z.norm())),
        norm(&mut s.into_iter()),
    )
}
