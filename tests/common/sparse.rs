//! Sparse fixtures shared by the CPU and GPU tests of `Format::Auto`: seeded matrices of
//! the structures the choice tells apart, and the f64 CSR reference check.

use ferrocuda::blas1::Element;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Coo, Csr, cpu};

use super::{abs, random_coo, random_scalar};

/// Named `n x n` matrices (`n = 240`, a multiple of every block size 2..=8 but 7, or the
/// generator's size): 5 x 5 blocks, a tridiagonal band, irregular rows with empty ones and
/// duplicates, one dense row, and mostly empty rows.
pub fn structures<T: Element>(seed: u64) -> Vec<(&'static str, Csr<T>)> {
    let n = 240;
    let block = generate::trace_like::<T>(&TraceSpec::new(3, 4, 3, 2).seed(seed))
        .expect("generate")
        .to_csr()
        .without_zeros();
    let mut band = Coo::empty(n, n).expect("coo");
    let mut arrow = Coo::empty(n, n).expect("coo");
    let mut sparse_rows = Coo::empty(n, n).expect("coo");
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            band.push(i, j, random_scalar::<T>(seed + (i * n + j) as u64))
                .expect("push");
        }
        arrow
            .push(0, i, random_scalar::<T>(seed + i as u64))
            .expect("push");
        if i > 0 {
            arrow
                .push(i, i, random_scalar::<T>(seed + 7 * i as u64))
                .expect("push");
        }
        if i % 9 == 4 {
            sparse_rows
                .push(i, (i * 31) % n, random_scalar::<T>(seed + 3 * i as u64))
                .expect("push");
        }
    }
    vec![
        ("block", block),
        ("banded", Csr::from(&band)),
        ("irregular", Csr::from(&random_coo::<T>(n, n, 0.04, seed))),
        ("one dense row", Csr::from(&arrow)),
        ("empty rows", Csr::from(&sparse_rows)),
    ]
}

/// `got` against `alpha a x + beta y0` by [`cpu::spmv_csr`] in `f64`, row by row within
/// `2 (k + 2) eps` times the row's magnitude `|alpha| sum |a_ij| |x_j| + |beta| |y0_i|`
/// (`k` entries in the row; the two sums may add in different orders and with padding
/// zeros). `got` must be finite where the reference is (poisoned rows left unwritten
/// fail).
#[allow(clippy::too_many_arguments)]
pub fn assert_matches_csr_reference(
    what: &str,
    a: &Csr<f64>,
    alpha: f64,
    x: &[f64],
    beta: f64,
    y0: &[f64],
    got: &[f64],
) {
    let mut want = y0.to_vec();
    cpu::spmv_csr(alpha, a, x, beta, &mut want).expect("reference spmv");
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..a.n_rows() {
        let (cols, vals) = a.row(i);
        let mag: f64 = alpha.abs()
            * cols
                .iter()
                .zip(vals)
                .map(|(&c, &v)| abs(v) * abs(x[c as usize]))
                .sum::<f64>()
            + if beta == 0.0 {
                0.0
            } else {
                beta.abs() * abs(y0[i])
            };
        let tol = 2.0 * (cols.len() + 2) as f64 * f64::EPSILON * mag;
        assert!(
            (got[i] - want[i]).abs() <= tol,
            "{what}: row {i}: got {:?}, want {:?} (tolerance {tol:e})",
            got[i],
            want[i]
        );
    }
}
