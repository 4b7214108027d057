//! ILU(0): the per-row arithmetic of the incomplete factorisation and of its triangular
//! solves, point (`1 x 1`) and block (`b x b`, row-major, `b <= ILU_MAX_B`). The CPU
//! oracle (`ferrocuda::krylov::ilu`) drives these functions row after row; a device
//! kernel is to call the same ones, so both give the same bits.
//!
//! Factorisation of row `i` (Saad's IKJ ILU(0), restricted to the pattern): for each
//! stored `k < i` in increasing order, `l_ik = a_ik u_kk^-1` ([`scale`],
//! [`scale_block`]), then row `i` is eliminated against row `k`: `a_ij <- a_ij - l_ik u_kj`
//! for the columns `j > k` that both rows store ([`eliminate_row`],
//! [`eliminate_block_row`]); the fill outside the pattern of row `i` is dropped.
//!
//! Solves with `L` unit lower and `U` upper: row `i` of the forward solve is
//! `y_i = x_i - sum_{k<i} l_ik y_k` ([`forward_row`], [`block_row_residual`]); of the
//! back solve, `y_i = u_ii^-1 (z_i - sum_{j>i} u_ij y_j)` ([`backward_row`], then
//! [`super::apply_block`] for blocks).
//!
//! Every sum is a chain of fused multiply-adds in storage order (increasing column, then
//! increasing column inside a block), so the block functions with `b = 1` compute what
//! the point functions compute.

use super::BLOCK_JACOBI_MAX_B;
use crate::scalar::{RealScalar, Scalar};
use crate::sparse::MatrixScalar;

/// Largest block size of block ILU(0) (that of the block inversion it shares with block
/// Jacobi, [`super::invert_block_sized`]).
pub const ILU_MAX_B: usize = BLOCK_JACOBI_MAX_B;

/// `|z|` measured as `max(|Re z|, |Im z|)` (exact for reals, within a factor `sqrt 2` of
/// the modulus for complex numbers, and never overflowing). NaN gives NaN.
#[inline(always)]
#[allow(clippy::eq_op)] // `re != re`: NaN
pub fn magnitude<T: Scalar>(z: T) -> T::Real {
    let abs = |x: T::Real| if x < T::Real::ZERO { -x } else { x };
    let (re, im) = (abs(z.re()), abs(z.im()));
    if re != re || im <= re { re } else { im }
}

/// The largest [`magnitude`] of `values`, NaN where one of them is NaN, zero for none.
#[inline(always)]
#[allow(clippy::eq_op)] // `a != a`: NaN
pub fn max_magnitude<T: Scalar>(values: &[T]) -> T::Real {
    let mut m = T::Real::ZERO;
    let mut nan = None;
    for &v in values {
        let a = magnitude(v);
        if a > m {
            m = a;
        } else if a != a {
            nan = Some(a); // NaN compares false both ways
        }
    }
    nan.unwrap_or(m)
}

/// The pivot test of ILU(0): `true` where the inverse pivot (block) `inv` is unusable:
/// an entry is not finite, or `tol max_magnitude(inv) row_max >= 1` (also where that
/// product is NaN). For `1 x 1` pivots `u`, the second part is `|u| <= tol row_max`: a
/// pivot that is tiny relative to the largest entry `row_max` of its row of `A`.
#[inline(always)]
pub fn pivot_is_tiny<T: Scalar>(inv: &[T], row_max: T::Real, tol: T::Real) -> bool {
    let mut finite = true;
    for &v in inv {
        finite &= super::is_finite(v);
    }
    let growth = tol * max_magnitude(inv) * row_max;
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is tiny too
    let tiny = !(growth < T::Real::ONE);
    !finite || tiny
}

/// `l_ik = a_ik u_kk^-1` for a point pivot: one rounded product with the inverse pivot.
#[inline(always)]
pub fn scale<T: Scalar>(a_ik: T, inv_kk: T) -> T {
    a_ik * inv_kk
}

/// `a_ij - l_ik u_kj`, one fused multiply-add.
#[inline(always)]
pub fn update<T: Scalar>(a_ij: T, l_ik: T, u_kj: T) -> T {
    (-l_ik).mul_add(u_kj, a_ij)
}

/// Eliminates row `i` against row `k < i` with the multiplier `l = l_ik` (point ILU(0)):
/// for every column `j` of `k_cols` that `i_cols` also holds, `i_vals[p] <- update(i_vals[p],
/// l, k_vals[q])`. `k_cols`/`k_vals`: the entries of row `k` right of its diagonal;
/// `i_cols`/`i_vals`: the entries of row `i` right of column `k`; both strictly increasing
/// (a merge: `O(len_k + len_i)`). Columns of row `k` that row `i` does not store are fill
/// and are dropped. Extra elements of the longer of each pair of slices are ignored.
#[inline(always)]
pub fn eliminate_row<T: Scalar>(
    l: T,
    k_cols: &[u32],
    k_vals: &[T],
    i_cols: &[u32],
    i_vals: &mut [T],
) {
    let n_i = i_cols.len().min(i_vals.len());
    let mut p = 0;
    for (&j, &u) in k_cols.iter().zip(k_vals) {
        while p < n_i && i_cols[p] < j {
            p += 1;
        }
        if p == n_i {
            return;
        }
        if i_cols[p] == j {
            i_vals[p] = update(i_vals[p], l, u);
        }
    }
}

/// `a <- a inv` for `b x b` row-major blocks (`l_ik = a_ik u_kk^-1`), in place: entry
/// `(r, c)` is a chain of fused multiply-adds over `m` in increasing order, starting from
/// zero, on a work row of capacity `N` (`b <= N`; where `b > N`, or a slice is shorter
/// than `b b`, the block is left alone).
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops unroll on nvptx
pub fn scale_block<T: Scalar, const N: usize>(b: usize, a: &mut [T], inv: &[T]) {
    if b > N || a.len() < b * b || inv.len() < b * b {
        return;
    }
    for r in 0..b {
        let mut row = [T::ZERO; N];
        for c in 0..b {
            let mut s = T::ZERO;
            for m in 0..b {
                s = a[r * b + m].mul_add(inv[m * b + c], s);
            }
            row[c] = s;
        }
        for c in 0..b {
            a[r * b + c] = row[c];
        }
    }
}

/// [`scale_block`] with the work row sized for `b`: capacity 1, 5 (TRACE's blocks) or
/// [`ILU_MAX_B`]; the capacity does not change the bits.
#[inline(always)]
pub fn scale_block_sized<T: Scalar>(b: usize, a: &mut [T], inv: &[T]) {
    match b {
        1 => scale_block::<T, 1>(1, a, inv),
        5 => scale_block::<T, 5>(5, a, inv),
        _ => scale_block::<T, ILU_MAX_B>(b, a, inv),
    }
}

/// `a_ij <- a_ij - l_ik u_kj` for `b x b` row-major blocks: entry `(r, c)` is a chain of
/// [`update`]s over `m` in increasing order, starting from `a_ij[r][c]`. Where a slice is
/// shorter than `b b`, nothing is done.
#[inline(always)]
pub fn update_block<T: Scalar>(b: usize, a_ij: &mut [T], l_ik: &[T], u_kj: &[T]) {
    let bb = b * b;
    if a_ij.len() < bb || l_ik.len() < bb || u_kj.len() < bb {
        return;
    }
    for r in 0..b {
        for c in 0..b {
            let mut s = a_ij[r * b + c];
            for m in 0..b {
                s = update(s, l_ik[r * b + m], u_kj[m * b + c]);
            }
            a_ij[r * b + c] = s;
        }
    }
}

/// [`eliminate_row`] for block rows: `l` is the `b x b` block `L_ik`, `k_vals` and `i_vals`
/// hold `b b` values per block column (row-major) and each matching block gets
/// [`update_block`].
#[inline(always)]
pub fn eliminate_block_row<T: Scalar>(
    b: usize,
    l: &[T],
    k_cols: &[u32],
    k_vals: &[T],
    i_cols: &[u32],
    i_vals: &mut [T],
) {
    let bb = b * b;
    if bb == 0 {
        return;
    }
    let n_i = i_cols.len().min(i_vals.len() / bb);
    let mut p = 0;
    for (&j, u) in k_cols.iter().zip(k_vals.chunks_exact(bb)) {
        while p < n_i && i_cols[p] < j {
            p += 1;
        }
        if p == n_i {
            return;
        }
        if i_cols[p] == j {
            update_block(b, &mut i_vals[p * bb..(p + 1) * bb], l, u);
        }
    }
}

/// `x_i - sum_t coeffs[t] y[cols[t]]`: a chain of fused multiply-adds
/// (`s <- -coeffs[t] y[cols[t]] + s`) in the order of `cols`, starting from `x_i`. Row `i`
/// of both triangular solves: the strictly lower part for the forward solve, the strictly
/// upper part for the back solve. `cols` must index `y`.
#[inline(always)]
pub fn row_residual<A: MatrixScalar<V>, V: Scalar>(
    x_i: V,
    cols: &[u32],
    coeffs: &[A],
    y: &[V],
) -> V {
    let mut s = x_i;
    for (&c, &a) in cols.iter().zip(coeffs) {
        s = (-a).mul_add_vec(y[c as usize], s);
    }
    s
}

/// Row `i` of the forward solve with unit lower `L`: `y_i = x_i - sum_{k<i} l_ik y_k`
/// ([`row_residual`] over the strictly lower part of row `i`).
#[inline(always)]
pub fn forward_row<A: MatrixScalar<V>, V: Scalar>(x_i: V, cols: &[u32], l: &[A], y: &[V]) -> V {
    row_residual(x_i, cols, l, y)
}

/// Row `i` of the back solve with upper `U`: `y_i = u_ii^-1 (z_i - sum_{j>i} u_ij y_j)`,
/// `inv_ii = u_ii^-1`; the product is the chain of [`super::apply_row`] (from zero), so
/// it equals the block back solve with `b = 1`.
#[inline(always)]
pub fn backward_row<A: MatrixScalar<V>, V: Scalar>(
    z_i: V,
    cols: &[u32],
    u: &[A],
    inv_ii: A,
    y: &[V],
) -> V {
    let s = row_residual(z_i, cols, u, y);
    inv_ii.mul_add_vec(s, V::ZERO)
}

/// `s <- s - sum_t B_t y[cols[t] b ..][..b]` for `b = s.len()` and `b x b` row-major
/// blocks `B_t` (`blocks`, `b b` values each): for each block in the order of `cols`,
/// each row `r` takes `s_r <- -B_t[r][c] y_c + s_r` over `c` in increasing order. Block
/// row `I` of the forward solve (`s = x_I` in, `y_I` out) and, before the product with
/// `U_II^-1`, of the back solve. `cols[t] b + b` must not exceed `y.len()`.
#[inline(always)]
pub fn block_row_residual<A: MatrixScalar<V>, V: Scalar>(
    s: &mut [V],
    cols: &[u32],
    blocks: &[A],
    y: &[V],
) {
    let b = s.len();
    if b == 0 {
        return;
    }
    for (&col, blk) in cols.iter().zip(blocks.chunks_exact(b * b)) {
        let yj = &y[col as usize * b..col as usize * b + b];
        for (r, sr) in s.iter_mut().enumerate() {
            let mut acc = *sr;
            for c in 0..b {
                acc = (-blk[r * b + c]).mul_add_vec(yj[c], acc);
            }
            *sr = acc;
        }
    }
}

/// `eps tol` in the real type of `T`: the threshold [`pivot_is_tiny`] takes, from a
/// tolerance given in multiples of the machine epsilon.
#[inline(always)]
pub fn pivot_tolerance<R: RealScalar>(tol_in_eps: f64) -> R {
    R::from_f64(tol_in_eps) * R::EPSILON
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use num_complex::Complex;

    #[test]
    fn blocks_of_one_are_points() {
        let (a, inv, u) = (3.25f64, 0.125, -1.5);
        let mut blk = [a];
        scale_block_sized(1, &mut blk, &[inv]);
        assert_eq!(blk[0], scale(a, inv));
        let mut aij = [0.75];
        update_block(1, &mut aij, &[a], &[u]);
        assert_eq!(aij[0], update(0.75, a, u));
        let y = [Complex::new(1.0, 2.0), Complex::new(-0.5, 0.25)];
        let mut s = [Complex::new(4.0, -1.0)];
        block_row_residual(&mut s, &[1, 0], &[2.0f64, -3.0], &y);
        assert_eq!(
            s[0],
            row_residual(Complex::new(4.0, -1.0), &[1, 0], &[2.0, -3.0], &y)
        );
    }

    #[test]
    fn eliminate_merges_sorted_columns() {
        // Row k's upper part at columns 2, 4, 7; row i stores 3, 4, 7 right of k.
        let mut vi = [1.0f64, 10.0, 100.0];
        eliminate_row(2.0, &[2, 4, 7], &[5.0, 1.0, 3.0], &[3, 4, 7], &mut vi);
        assert_eq!(vi, [1.0, 8.0, 94.0]);
        // Same with 1x1 blocks.
        let mut bi = [1.0f64, 10.0, 100.0];
        eliminate_block_row(1, &[2.0], &[2, 4, 7], &[5.0, 1.0, 3.0], &[3, 4, 7], &mut bi);
        assert_eq!(bi, vi);
    }

    #[test]
    fn scale_block_multiplies() {
        let mut a = [1.0f64, 2.0, 3.0, 4.0];
        scale_block_sized(2, &mut a, &[0.0, 1.0, 1.0, 0.0]); // swaps columns
        assert_eq!(a, [2.0, 1.0, 4.0, 3.0]);
        let mut big = [1.0f64; 81];
        scale_block_sized(9, &mut big, &[0.0; 81]);
        assert_eq!(big, [1.0; 81], "b > N leaves the block alone");
    }

    #[test]
    fn tiny_pivots() {
        let tol = pivot_tolerance::<f64>(100.0);
        assert!(!pivot_is_tiny(&[1.0f64], 1.0, tol));
        assert!(pivot_is_tiny(&[1e15f64], 1.0, tol)); // |u| = 1e-15 of the row
        assert!(pivot_is_tiny(&[f64::INFINITY], 1.0, tol));
        assert!(pivot_is_tiny(&[f64::NAN], 1.0, tol));
        assert!(pivot_is_tiny(&[f64::INFINITY], 0.0, 0.0));
        assert!(
            !pivot_is_tiny(&[1e300f64], 1.0, 0.0),
            "tol 0: only non-finite"
        );
        assert_eq!(magnitude(Complex::new(-3.0f64, 2.0)), 3.0);
        assert!(max_magnitude(&[1.0, f64::NAN, 2.0]).is_nan());
        assert!(magnitude(Complex::new(1.0f64, f64::NAN)).is_nan());
        assert!(magnitude(Complex::new(f64::NAN, 1.0f64)).is_nan());
    }
}
