//! Serial oracle for the tests: plain loops over a [`Csr`] matrix, accumulation in
//! `Complex<f64>`. Zero entries add nothing, as in every SpMV of [`super::cpu`] (so a NaN
//! or infinity in `x` reaches a row only through a nonzero entry).

use super::{Coo, Csr, Element};
use crate::Complex;
use crate::blas1::reference::widen;

/// `alpha (A x)_i + beta y_i` for every row, in `Complex<f64>` (the old `y` is ignored
/// where `beta` is zero, as in [`super::cpu`]).
pub fn spmv<A: Element, V: Element>(
    alpha: V,
    a: &Csr<A>,
    x: &[V],
    beta: V,
    y: &[V],
) -> Vec<Complex<f64>> {
    let (al, be) = (widen(alpha), widen(beta));
    (0..a.n_rows())
        .map(|i| {
            let (c, v) = a.row(i);
            let s: Complex<f64> = c
                .iter()
                .zip(v)
                .filter(|(_, v)| widen(**v) != Complex::new(0.0, 0.0))
                .map(|(&c, &v)| widen(v) * widen(x[c as usize]))
                .fold(Complex::new(0.0, 0.0), |a, b| a + b);
            if be == Complex::new(0.0, 0.0) {
                al * s
            } else {
                al * s + be * widen(y[i])
            }
        })
        .collect()
}

/// `|alpha| sum_j |a_ij| |x_j| + |beta| |y_i|` per row: the scale of the rounding error.
pub fn spmv_magnitude<A: Element, V: Element>(
    alpha: V,
    a: &Csr<A>,
    x: &[V],
    beta: V,
    y: &[V],
) -> Vec<f64> {
    (0..a.n_rows())
        .map(|i| {
            let (c, v) = a.row(i);
            let s: f64 = c
                .iter()
                .zip(v)
                .filter(|(_, v)| widen(**v) != Complex::new(0.0, 0.0))
                .map(|(&c, &v)| widen(v).norm() * widen(x[c as usize]).norm())
                .sum();
            widen(alpha).norm() * s + widen(beta).norm() * widen(y[i]).norm()
        })
        .collect()
}

/// The dense row-major matrix of a COO in `Complex<f64>`, duplicates summed.
pub fn dense<T: Element>(a: &Coo<T>) -> Vec<Complex<f64>> {
    let mut d = vec![Complex::new(0.0, 0.0); a.n_rows() * a.n_cols()];
    for ((&r, &c), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        d[r as usize * a.n_cols() + c as usize] += widen(v);
    }
    d
}
