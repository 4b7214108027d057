//! What the CPU and GPU factorisations share after the factors exist: the solves with
//! the factors (and their transposes), LAPACK `gecon`'s condition estimate, the checks of
//! the factors, and the report.

use rayon::prelude::*;

use super::{LuOptions, LuReport, LuScalar, Matrix, Pivoting};
use crate::error::{Error, Result};

/// Rows of the diagonal blocks of the triangular solves below: each block is solved
/// serially, the rows outside it are updated in parallel (or its dot products formed in
/// parallel), in the same order per element as a plain column-oriented solve, so the
/// bits do not depend on the block size or the threads.
const SOLVE_BLOCK: usize = 256;

/// Rows below which the off-block updates run on one thread.
const SOLVE_PARALLEL_FROM: usize = 8192;

/// Rows per task of the off-block updates.
const SOLVE_CHUNK: usize = 2048;

/// `f(lo, rows)` on consecutive chunks of `rows` (first row `lo`), in parallel from
/// `par_from` rows.
fn for_row_chunks<T: Send>(
    lo: usize,
    rows: &mut [T],
    par_from: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    if rows.len() < par_from {
        f(lo, rows);
    } else {
        rows.par_chunks_mut(SOLVE_CHUNK)
            .enumerate()
            .for_each(|(c, r)| f(lo + c * SOLVE_CHUNK, r));
    }
}

/// `x <- A^{-1} x` for one column with the factors `f` (`n x n`, column-major) and the
/// interchanges `ipiv`: the interchanges, then forward (unit `L`) and backward (`U`)
/// substitution, column-oriented and blocked ([`SOLVE_BLOCK`]).
pub(crate) fn solve_column<T: LuScalar>(f: &[T], ipiv: &[u32], x: &mut [T]) {
    solve_column_from(f, ipiv, x, SOLVE_PARALLEL_FROM)
}

/// [`solve_column`], parallel from `par_from` rows.
fn solve_column_from<T: LuScalar>(f: &[T], ipiv: &[u32], x: &mut [T], par_from: usize) {
    let n = x.len();
    for (k, &p) in ipiv.iter().enumerate() {
        x.swap(k, p as usize);
    }
    // L: for every row, the updates of columns p = 0, 1, .. in order.
    for b0 in (0..n).step_by(SOLVE_BLOCK) {
        let b1 = (b0 + SOLVE_BLOCK).min(n);
        for p in b0..b1 {
            let u = x[p];
            if u != T::ZERO {
                for i in p + 1..b1 {
                    x[i] = x[i] - f[p * n + i] * u;
                }
            }
        }
        let (head, tail) = x.split_at_mut(b1);
        let xb = &head[b0..b1];
        for_row_chunks(b1, tail, par_from, |lo, rows| {
            for (p, &u) in (b0..b1).zip(xb) {
                if u != T::ZERO {
                    let l = &f[p * n + lo..p * n + lo + rows.len()];
                    for (x, &l) in rows.iter_mut().zip(l) {
                        *x = *x - l * u;
                    }
                }
            }
        });
    }
    // U: for every row, the updates of columns p = n - 1, n - 2, .. in order.
    let mut b1 = n;
    while b1 > 0 {
        let b0 = b1.saturating_sub(SOLVE_BLOCK);
        for p in (b0..b1).rev() {
            let ucol = &f[p * n..(p + 1) * n];
            let v = x[p] / ucol[p];
            x[p] = v;
            if v != T::ZERO {
                for i in b0..p {
                    x[i] = x[i] - ucol[i] * v;
                }
            }
        }
        let (head, tail) = x.split_at_mut(b0);
        let xb = &tail[..b1 - b0];
        for_row_chunks(0, head, par_from, |lo, rows| {
            for (p, &v) in (b0..b1).zip(xb).rev() {
                if v != T::ZERO {
                    let u = &f[p * n + lo..p * n + lo + rows.len()];
                    for (x, &u) in rows.iter_mut().zip(u) {
                        *x = *x - u * v;
                    }
                }
            }
        });
        b1 = b0;
    }
}

/// `s - sum_i c_i y_i` over `i` in order.
fn minus_dot<T: LuScalar>(s: T, c: &[T], y: &[T]) -> T {
    c.iter().zip(y).fold(s, |s, (&c, &y)| s - c * y)
}

/// `x <- A^{-T} x` for one column: `U^T` and `L^T` solves (dot products with the
/// contiguous columns of the factors; per block the parts over the solved rows in
/// parallel), then the interchanges in reverse order.
fn solve_transposed_column<T: LuScalar>(f: &[T], ipiv: &[u32], x: &mut [T], par_from: usize) {
    let n = x.len();
    let mut part = [T::ZERO; SOLVE_BLOCK];
    // U^T: x_j = (x_j - sum_{i < j} u_ij x_i) / u_jj, i ascending.
    for b0 in (0..n).step_by(SOLVE_BLOCK) {
        let b1 = (b0 + SOLVE_BLOCK).min(n);
        let (done, rest) = x.split_at(b0);
        let dots = |(k, s): (usize, &mut T)| {
            let j = b0 + k;
            *s = minus_dot(rest[k], &f[j * n..j * n + b0], done);
        };
        if b0 < par_from {
            part[..b1 - b0].iter_mut().enumerate().for_each(dots);
        } else {
            part[..b1 - b0].par_iter_mut().enumerate().for_each(dots);
        }
        for j in b0..b1 {
            let s = minus_dot(part[j - b0], &f[j * n + b0..j * n + j], &x[b0..j]);
            x[j] = s / f[j * n + j];
        }
    }
    // L^T: x_j = x_j - sum_{i > j} l_ij x_i, i descending.
    let mut b1 = n;
    while b1 > 0 {
        let b0 = b1.saturating_sub(SOLVE_BLOCK);
        let (open, done) = x.split_at(b1);
        let dots = |(k, s): (usize, &mut T)| {
            let j = b0 + k;
            let col = &f[j * n + b1..(j + 1) * n];
            *s = col
                .iter()
                .zip(done)
                .rev()
                .fold(open[j], |s, (&l, &y)| s - l * y);
        };
        if n - b1 < par_from {
            part[..b1 - b0].iter_mut().enumerate().for_each(dots);
        } else {
            part[..b1 - b0].par_iter_mut().enumerate().for_each(dots);
        }
        for j in (b0..b1).rev() {
            let col = &f[j * n + j + 1..j * n + b1];
            x[j] = col
                .iter()
                .zip(&x[j + 1..b1])
                .rev()
                .fold(part[j - b0], |s, (&l, &y)| s - l * y);
        }
        b1 = b0;
    }
    for (k, &p) in ipiv.iter().enumerate().rev() {
        x.swap(k, p as usize);
    }
}

/// `sum |x_i|` in `f64`.
fn norm1<T: LuScalar>(x: &[T]) -> f64 {
    x.iter().map(|v| v.to_f64().abs()).sum()
}

/// `+1` for `x >= 0` (and NaN), else `-1`, as LAPACK's `lacn2`.
fn sign<T: LuScalar>(x: T) -> T {
    if x < T::ZERO { -T::ONE } else { T::ONE }
}

/// The first index of the largest `|x_i|` (LAPACK `idamax`).
fn argmax_abs<T: LuScalar>(x: &[T]) -> usize {
    let mut best = (0, -1.0f64);
    for (i, v) in x.iter().enumerate() {
        let a = v.to_f64().abs();
        if a > best.1 {
            best = (i, a);
        }
    }
    best.0
}

/// Hager and Higham's estimate of `||A^{-1}||_1` from the factors of `P A = L U` (`f`,
/// `ipiv` as in [`super::Lu`]), as LAPACK's `lacn2` computes it for `gecon`: at most
/// five pairs of solves with `A` and `A^T` (power-method steps towards the column of
/// `A^{-1}` of largest 1-norm), then one solve with the alternating vector
/// `(-1)^i (1 + i / (n - 1))` as a safeguard; `O(n^2)` each, in the working precision.
/// The result is a lower bound of `||A^{-1}||_1` (each value is `||A^{-1} x||_1` for some
/// `||x||_1 <= 1`), almost always within a factor of 3 (Higham, *Accuracy and Stability
/// of Numerical Algorithms*, §15.3). Unlike `lacn2`, the larger of the last two power
/// steps is kept when the last one decreased. Infinite where a solve overflows.
///
/// ```
/// use ferrocuda::dense::{LuOptions, Matrix, cpu, inverse_norm1_estimate};
/// // A = [[2, 0], [0, 0.5]]: ||A^{-1}||_1 = 2, exactly found.
/// let a = Matrix::new(2, 2, vec![2.0f64, 0.0, 0.0, 0.5])?;
/// let lu = cpu::factor(&a, &LuOptions::default())?;
/// assert_eq!(inverse_norm1_estimate(&lu.factors, &lu.ipiv)?, 2.0);
/// assert_eq!(lu.report.rcond, 0.25); // 1 / (||A||_1 ||A^{-1}||_1) = 1 / (2 * 2)
/// # Ok::<(), ferrocuda::Error>(())
/// ```
///
/// Errors: `factors` not square, `ipiv` not of length `n`.
pub fn inverse_norm1_estimate<T: LuScalar>(factors: &Matrix<T>, ipiv: &[u32]) -> Result<f64> {
    const OP: &str = "dense::inverse_norm1_estimate";
    let n = super::check_square(OP, factors)?;
    crate::error::check_len(OP, "ipiv", n, ipiv.len())?;
    if let Some(&p) = ipiv.iter().find(|&&p| p as usize >= n) {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("ipiv holds row {p}, outside the {n} x {n} matrix"),
        });
    }
    let f = factors.as_slice();
    let solve = |x: &mut [T]| solve_column(f, ipiv, x);
    let solve_t = |x: &mut [T]| solve_transposed_column(f, ipiv, x, SOLVE_PARALLEL_FROM);
    let mut x = vec![T::from_f64(1.0 / n as f64); n];
    solve(&mut x);
    if n == 1 {
        return Ok(x[0].to_f64().abs());
    }
    let mut est = norm1(&x);
    let mut signs: Vec<T> = x.iter().map(|&v| sign(v)).collect();
    x.copy_from_slice(&signs);
    solve_t(&mut x);
    let mut j = argmax_abs(&x);
    for iter in 2.. {
        x.fill(T::ZERO);
        x[j] = T::ONE;
        solve(&mut x);
        let old = est;
        est = norm1(&x);
        let repeated = x.iter().zip(&signs).all(|(&v, &s)| sign(v) == s);
        if repeated || est <= old {
            est = est.max(old);
            break;
        }
        for (s, &v) in signs.iter_mut().zip(&x) {
            *s = sign(v);
        }
        x.copy_from_slice(&signs);
        solve_t(&mut x);
        let last = j;
        j = argmax_abs(&x);
        if x[last].to_f64() == x[j].to_f64().abs() || iter >= 5 {
            break;
        }
    }
    let denom = (n - 1) as f64;
    for (i, v) in x.iter_mut().enumerate() {
        let m = 1.0 + i as f64 / denom;
        *v = T::from_f64(if i % 2 == 0 { m } else { -m });
    }
    solve(&mut x);
    let alt = 2.0 * norm1(&x) / (3.0 * n as f64);
    let est = est.max(alt);
    Ok(if est.is_nan() { f64::INFINITY } else { est })
}

/// `1 / (anorm ||A^{-1}||_1)` as LAPACK's `gecon`: 0 for `anorm = 0` or an infinite
/// estimate.
fn rcond(anorm: f64, inv_norm: f64) -> f64 {
    if anorm == 0.0 || inv_norm == 0.0 {
        return if anorm == 0.0 { 0.0 } else { f64::INFINITY };
    }
    1.0 / inv_norm / anorm
}

/// The error of an exactly zero pivot in `column`. With partial pivoting the whole
/// remaining column is zero, so the matrix is singular; without pivoting it is singular
/// only when the rest of the column below the pivot (`below_is_zero`) is zero too: the
/// Schur complement then has a zero column. Otherwise only the factorisation without
/// interchanges broke down ([`Error::ZeroPivot`]).
pub(crate) fn zero_pivot_error(
    op: &'static str,
    column: usize,
    pivoting: Pivoting,
    below_is_zero: bool,
) -> Error {
    if pivoting == Pivoting::Partial || below_is_zero {
        Error::Singular { op, column }
    } else {
        Error::ZeroPivot { op, column }
    }
}

/// What both paths know about a finished factorisation, for [`report`].
pub(crate) struct Finished<'a, T> {
    pub op: &'static str,
    pub a: &'a Matrix<T>,
    /// `||A||_1`.
    pub anorm: f64,
    pub factors: &'a Matrix<T>,
    pub ipiv: &'a [u32],
    pub device: String,
    pub factor_ms: f64,
    pub total_ms: Option<f64>,
}

/// Checks the factors (an overflow to infinity or NaN is [`Error::NonFinite`] naming the
/// first such factor), estimates `rcond` and computes the backward errors where asked:
/// the report of [`super::cpu::factor`] and [`super::gpu::factor`].
pub(crate) fn report<T: LuScalar>(done: Finished<'_, T>, opts: &LuOptions) -> Result<LuReport> {
    let f = done.factors;
    let n = f.nrows();
    if let Some(k) = f
        .as_slice()
        .par_iter()
        .position_first(|x| !x.to_f64().is_finite())
    {
        return Err(Error::NonFinite {
            op: done.op,
            what: "the factors L\\U",
            row: k % n,
            col: k / n,
            value: f.as_slice()[k].to_f64(),
            reason: format!(
                "the factorisation overflowed: the entries of A are too large for {} (||A||_1 = {:e}); scale A",
                T::SUFFIX,
                done.anorm
            ),
        });
    }
    let rcond = rcond(done.anorm, inverse_norm1_estimate(f, done.ipiv)?);
    let eps = T::EPSILON.to_f64();
    let backward_error = if opts.backward_error {
        Some(super::backward_error(done.a, f, done.ipiv)?)
    } else {
        None
    };
    Ok(LuReport {
        n,
        pivoting: opts.pivoting,
        block: opts.block,
        device: done.device,
        factor_ms: done.factor_ms,
        total_ms: done.total_ms,
        backward_error,
        scaled_backward_error: backward_error.map(|b| b / (n as f64 * eps)),
        rcond,
        precision: T::SUFFIX,
        eps,
        singular_to_working_precision: rcond.is_nan() || rcond < eps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain column-oriented `A^{-1} x` and dot-product `A^{-T} x` (the `L^T` sums with
    /// `i` descending): the blocked, parallel solves must give these bits.
    fn plain(f: &[f64], ipiv: &[u32], x: &mut [f64], transposed: bool) {
        let n = x.len();
        if !transposed {
            for (k, &p) in ipiv.iter().enumerate() {
                x.swap(k, p as usize);
            }
            for p in 0..n {
                let u = x[p];
                if u != 0.0 {
                    for i in p + 1..n {
                        x[i] -= f[p * n + i] * u;
                    }
                }
            }
            for p in (0..n).rev() {
                let v = x[p] / f[p * n + p];
                x[p] = v;
                if v != 0.0 {
                    for i in 0..p {
                        x[i] -= f[p * n + i] * v;
                    }
                }
            }
            return;
        }
        for j in 0..n {
            let s = (0..j).fold(x[j], |s, i| s - f[j * n + i] * x[i]);
            x[j] = s / f[j * n + j];
        }
        for j in (0..n).rev() {
            x[j] = (j + 1..n).rev().fold(x[j], |s, i| s - f[j * n + i] * x[i]);
        }
        for (k, &p) in ipiv.iter().enumerate().rev() {
            x.swap(k, p as usize);
        }
    }

    #[test]
    fn blocked_solves_give_the_bits_of_plain_ones() {
        for n in [1usize, 2, 255, 256, 257, 700] {
            let f: Vec<f64> = (0..n * n)
                .map(|k| {
                    let (i, j) = (k % n, k / n);
                    if i == j {
                        2.0 + (k % 7) as f64
                    } else {
                        ((k * 2654435761) % 1000) as f64 / 1000.0 - 0.5
                    }
                })
                .collect();
            let ipiv: Vec<u32> = (0..n).map(|k| ((k * 7 + 3) % n).max(k) as u32).collect();
            let b: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
            for transposed in [false, true] {
                let mut want = b.clone();
                plain(&f, &ipiv, &mut want, transposed);
                for par_from in [1, usize::MAX] {
                    let mut got = b.clone();
                    if transposed {
                        solve_transposed_column(&f, &ipiv, &mut got, par_from);
                    } else {
                        solve_column_from(&f, &ipiv, &mut got, par_from);
                    }
                    assert!(
                        got.iter()
                            .zip(&want)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "n={n} transposed={transposed} par_from={par_from}"
                    );
                }
            }
        }
    }
}
