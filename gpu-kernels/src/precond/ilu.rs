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
//!
//! Kernels (host handles: [`IluFactorKernels`], [`IluKernels`]), one thread per (block)
//! row of one level of a level schedule (`ferrocuda::krylov::ilu::LevelSchedule`), the
//! rows of a level given by `rows`; the factors are stored as the CPU stores them (the
//! pattern of `A` plus the diagonal, `row_ptr`/`col_idx`, the slot of each row's
//! diagonal in `diag`, `b b` row-major values per slot, `U_ii^-1` in `inv_diag`):
//! * `ilu0_factor_<t>` ([`ilu0_factor`]): [`factor_row`] for each row of a level of the
//!   lower schedule, its outcome in `flags`;
//! * `ilu0_forward_<a>[_<v>]` ([`ilu0_forward`]): the forward solve's rows of a level of
//!   the lower schedule;
//! * `ilu0_backward_<a>[_<v>]` ([`ilu0_backward`]): the back solve's rows of a level of
//!   the upper schedule, in place.

use num_complex::Complex;

use super::BLOCK_JACOBI_MAX_B;
#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::for_each_index;
use crate::scalar::{RealScalar, Scalar};
use crate::sparse::MatrixScalar;
use crate::{instances, kernel};

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

/// `x_i - sum_t coeffs[t] y(cols[t])`: a chain of fused multiply-adds
/// (`s <- -coeffs[t] y(cols[t]) + s`) in the order of `cols`, starting from `x_i`. Row `i`
/// of both triangular solves: the strictly lower part for the forward solve, the strictly
/// upper part for the back solve. `y(c)` reads entry `c` of the solution so far (a
/// closure, so that a kernel reads the entries of other rows without a slice over the
/// vector its own row writes).
#[inline(always)]
pub fn row_residual<A: MatrixScalar<V>, V: Scalar>(
    x_i: V,
    cols: &[u32],
    coeffs: &[A],
    y: impl Fn(usize) -> V,
) -> V {
    let mut s = x_i;
    for (&c, &a) in cols.iter().zip(coeffs) {
        s = (-a).mul_add_vec(y(c as usize), s);
    }
    s
}

/// Row `i` of the forward solve with unit lower `L`: `y_i = x_i - sum_{k<i} l_ik y_k`
/// ([`row_residual`] over the strictly lower part of row `i`).
#[inline(always)]
pub fn forward_row<A: MatrixScalar<V>, V: Scalar>(
    x_i: V,
    cols: &[u32],
    l: &[A],
    y: impl Fn(usize) -> V,
) -> V {
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
    y: impl Fn(usize) -> V,
) -> V {
    let s = row_residual(z_i, cols, u, y);
    inv_ii.mul_add_vec(s, V::ZERO)
}

/// `s <- s - sum_t B_t y(cols[t] b ..)[..b]` for `b = s.len()` and `b x b` row-major
/// blocks `B_t` (`blocks`, `b b` values each): for each block in the order of `cols`,
/// each row `r` takes `s_r <- -B_t[r][c] y(cols[t] b + c) + s_r` over `c` in increasing
/// order. Block row `I` of the forward solve (`s = x_I` in, `y_I` out) and, before the
/// product with `U_II^-1`, of the back solve.
#[inline(always)]
pub fn block_row_residual<A: MatrixScalar<V>, V: Scalar>(
    s: &mut [V],
    cols: &[u32],
    blocks: &[A],
    y: impl Fn(usize) -> V,
) {
    let b = s.len();
    if b == 0 {
        return;
    }
    for (&col, blk) in cols.iter().zip(blocks.chunks_exact(b * b)) {
        let base = col as usize * b;
        for (r, sr) in s.iter_mut().enumerate() {
            let mut acc = *sr;
            for c in 0..b {
                acc = (-blk[r * b + c]).mul_add_vec(y(base + c), acc);
            }
            *sr = acc;
        }
    }
}

/// Outcome of [`factor_row`] (the device's per-row flags): the row was factored.
pub const ILU_OK: u32 = 0;
/// The pivot (block) `U_ii` is singular: a zero pivot in its Gauss-Jordan inversion, or
/// an inverse with a non-finite entry.
pub const ILU_SINGULAR: u32 = 1;
/// The pivot is tiny ([`pivot_is_tiny`]).
pub const ILU_TINY: u32 = 2;
/// A non-finite entry in the row's factors.
pub const ILU_OVERFLOW: u32 = 3;
/// Set before the factorisation (never by [`factor_row`]): a row that stores entries but
/// no diagonal, without a shift, a zero pivot. The kernel leaves it alone.
pub const ILU_MISSING_DIAGONAL: u32 = 4;
/// Set before the factorisation: a row that stores nothing, the identity's row (its
/// inverse pivot is set to the identity beforehand). The kernel leaves it alone.
pub const ILU_IDENTITY_ROW: u32 = 5;

/// The largest of the scales `row_max` of the `b` scalar rows of a (block) row, from zero
/// (the `max_j |a_ij|` of the pivot test).
#[inline(always)]
pub fn block_row_max<R: RealScalar>(row_max: &[R]) -> R {
    let mut m = R::ZERO;
    for &v in row_max {
        if v > m {
            m = v;
        }
    }
    m
}

/// Factors (block) row `i` in place, Saad's IKJ ILU(0) (module docs): `cols` are the
/// row's (block) columns, `d` the position of its diagonal among them, `cur` its values
/// (`b b` row-major per slot; `L` left of `d` and `U` from `d` on, on return). `upper(k)`
/// gives, for each row `k = cols[s] < i` (`s < d`), already factored: the columns of row
/// `k` right of its diagonal, their values, and `U_kk^-1`. Writes `U_ii^-1` into `inv`
/// (`b b` values) and returns [`ILU_OK`], [`ILU_OVERFLOW`], [`ILU_SINGULAR`] or
/// [`ILU_TINY`] (the test against `row_max`, the scales of the row's `b` scalar rows,
/// with `tol` from [`pivot_tolerance`]). `point`: the point functions (`b = 1`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn factor_row<'a, T: Scalar + 'a>(
    b: usize,
    point: bool,
    cols: &[u32],
    d: usize,
    cur: &mut [T],
    upper: impl Fn(usize) -> (&'a [u32], &'a [T], &'a [T]),
    inv: &mut [T],
    row_max: &[T::Real],
    tol: T::Real,
) -> u32 {
    let bb = b * b;
    for s in 0..d {
        let (k_cols, k_vals, inv_k) = upper(cols[s] as usize);
        let (left, right) = cur.split_at_mut((s + 1) * bb);
        let l = &mut left[s * bb..];
        let i_cols = &cols[s + 1..];
        if point {
            l[0] = scale(l[0], inv_k[0]);
            eliminate_row(l[0], k_cols, k_vals, i_cols, right);
        } else {
            scale_block_sized(b, l, inv_k);
            eliminate_block_row(b, l, k_cols, k_vals, i_cols, right);
        }
    }
    let mut finite = true;
    for &v in cur.iter() {
        finite &= super::is_finite(v);
    }
    if !finite {
        return ILU_OVERFLOW;
    }
    inv.copy_from_slice(&cur[d * bb..(d + 1) * bb]);
    if super::invert_block_sized(b, inv) {
        return ILU_SINGULAR;
    }
    if pivot_is_tiny(inv, block_row_max(row_max), tol) {
        return ILU_TINY;
    }
    ILU_OK
}

/// `eps tol` in the real type of `T`: the threshold [`pivot_is_tiny`] takes, from a
/// tolerance given in multiples of the machine epsilon.
#[inline(always)]
pub fn pivot_tolerance<R: RealScalar>(tol_in_eps: f64) -> R {
    R::from_f64(tol_in_eps) * R::EPSILON
}

/// Threads per block of the ILU(0) kernels (a multiple of 32).
pub const ILU_THREADS: usize = 128;

/// Thread `t` factors row `i = rows[t]` ([`factor_row`]; `point`: the point functions,
/// `b = 1`) unless `flags[i]` is already set (not [`ILU_OK`]: a row left alone), and
/// writes its outcome to `flags[i]`. The rows that row `i` stores left of its diagonal
/// must be factored (an earlier level); `row_max` holds the scale of every scalar row,
/// `tol` the pivot tolerance ([`pivot_tolerance`]). `1 <= b <= ILU_MAX_B`.
#[kernel(args = Ilu0Factor)]
pub unsafe fn ilu0_factor<T: Scalar>(
    n: usize,
    rows: *const u32,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *mut T,
    inv_diag: *mut T,
    row_max: *const T::Real,
    tol: T::Real,
    flags: *mut u32,
) {
    use core::slice::{from_raw_parts, from_raw_parts_mut};
    let bb = b * b;
    for_each_index(n, |t| {
        let i = unsafe { *rows.add(t) } as usize;
        if unsafe { *flags.add(i) } != ILU_OK {
            return;
        }
        // SAFETY: row i's slots and inverse are this thread's alone (one thread per row,
        // rows distinct); the rows it reads are final (an earlier level).
        let (start, end, d) = unsafe { (*row_ptr.add(i), *row_ptr.add(i + 1), *diag.add(i)) };
        let cols = unsafe { from_raw_parts(col_idx.add(start), end - start) };
        let cur = unsafe { from_raw_parts_mut(values.add(start * bb), (end - start) * bb) };
        let inv = unsafe { from_raw_parts_mut(inv_diag.add(i * bb), bb) };
        let scales = unsafe { from_raw_parts(row_max.add(i * b), b) };
        let upper = |k: usize| unsafe {
            let (ku, ke) = (*diag.add(k) + 1, *row_ptr.add(k + 1));
            (
                from_raw_parts(col_idx.add(ku), ke - ku),
                from_raw_parts(values.add(ku * bb) as *const T, (ke - ku) * bb),
                from_raw_parts(inv_diag.add(k * bb) as *const T, bb),
            )
        };
        let flag = factor_row(b, point, cols, d - start, cur, upper, inv, scales, tol);
        unsafe { *flags.add(i) = flag };
    });
}

/// Row `i` of the forward solve: `y_i = x_i - sum_{k<i} L_ik read_k` ([`forward_row`], or
/// [`block_row_residual`] from `x_I`), written to `y`. The level kernel reads the final
/// rows from `y` itself; a Jacobi sweep reads the previous iterate.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn forward_at<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    i: usize,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    x: *const V,
    read: *const V,
    y: *mut V,
) {
    use core::slice::from_raw_parts;
    // A block size fixed at compile time unrolls the block loops and keeps the row's
    // sums in registers (with `b` from the launch they live in local memory).
    let b = if B > 0 { B } else { b };
    let (st, d) = unsafe { (*row_ptr.add(i), *diag.add(i)) };
    let cols = unsafe { from_raw_parts(col_idx.add(st), d - st) };
    let yv = |c: usize| unsafe { *read.add(c) };
    if point {
        let l = unsafe { from_raw_parts(values.add(st), d - st) };
        let v = forward_row(unsafe { *x.add(i) }, cols, l, yv);
        unsafe { *y.add(i) = v };
        return;
    }
    let bb = b * b;
    let mut s = [V::ZERO; ILU_MAX_B];
    let s = &mut s[..b];
    for (r, sr) in s.iter_mut().enumerate() {
        *sr = unsafe { *x.add(i * b + r) };
    }
    let l = unsafe { from_raw_parts(values.add(st * bb), (d - st) * bb) };
    block_row_residual(s, cols, l, yv);
    for (r, &sr) in s.iter().enumerate() {
        unsafe { *y.add(i * b + r) = sr };
    }
}

/// Row `i` of the back solve: `y_i = U_ii^-1 (z_i - sum_{j>i} U_ij read_j)`
/// ([`backward_row`], or [`block_row_residual`] then the rows of [`super::apply_block`]), written to
/// `y`. The level kernel works in place (`z`, `read` and `y` one vector); a Jacobi sweep
/// reads the forward solve's result `z` and the previous iterate.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_at<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    i: usize,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    inv_diag: *const A,
    z: *const V,
    read: *const V,
    y: *mut V,
) {
    use core::slice::from_raw_parts;
    let b = if B > 0 { B } else { b };
    let (d, e) = unsafe { (*diag.add(i) + 1, *row_ptr.add(i + 1)) };
    let cols = unsafe { from_raw_parts(col_idx.add(d), e - d) };
    let yv = |c: usize| unsafe { *read.add(c) };
    if point {
        let u = unsafe { from_raw_parts(values.add(d), e - d) };
        let v = backward_row(
            unsafe { *z.add(i) },
            cols,
            u,
            unsafe { *inv_diag.add(i) },
            yv,
        );
        unsafe { *y.add(i) = v };
        return;
    }
    let bb = b * b;
    let mut s = [V::ZERO; ILU_MAX_B];
    let s = &mut s[..b];
    for (r, sr) in s.iter_mut().enumerate() {
        *sr = unsafe { *z.add(i * b + r) };
    }
    let u = unsafe { from_raw_parts(values.add(d * bb), (e - d) * bb) };
    block_row_residual(s, cols, u, yv);
    let inv = unsafe { from_raw_parts(inv_diag.add(i * bb), bb) };
    // `U_II^-1 s` row by row straight into `y` (the products of [`super::apply_block`]):
    // `s` holds all the row reads, and no second array goes to local memory.
    for r in 0..b {
        let v = super::apply_row(&inv[r * b..(r + 1) * b], s);
        unsafe { *y.add(i * b + r) = v };
    }
}

/// Thread `t` computes (block) row `i = rows[t]` of the forward solve `L y = x`
/// ([`forward_at`]); the rows it reads are final (an earlier level of the lower
/// schedule). `point`: the point functions (`b = 1`).
#[kernel(args = Ilu0Forward)]
pub unsafe fn ilu0_forward<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n: usize,
    rows: *const u32,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    x: *const V,
    y: *mut V,
) {
    for_each_index(n, |t| {
        let i = unsafe { *rows.add(t) } as usize;
        unsafe { forward_at::<A, V, B>(i, b, point, row_ptr, col_idx, diag, values, x, y, y) };
    });
}

/// Thread `t` computes (block) row `i = rows[t]` of the back solve `U y = z` in place
/// (`y` holds `z` on entry, [`backward_at`]); the rows it reads are final (an earlier
/// level of the upper schedule). `point`: the point functions (`b = 1`).
#[kernel(args = Ilu0Backward)]
pub unsafe fn ilu0_backward<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n: usize,
    rows: *const u32,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    inv_diag: *const A,
    y: *mut V,
) {
    for_each_index(n, |t| {
        let i = unsafe { *rows.add(t) } as usize;
        unsafe {
            backward_at::<A, V, B>(
                i, b, point, row_ptr, col_idx, diag, values, inv_diag, y, y, y,
            )
        };
    });
}

/// One Jacobi sweep of the forward solve over all `n` (block) rows at once: `y = x -
/// L_strict y_old` ([`forward_at`] reading `y_old`), the approximate solve of
/// `IluOptions::sweeps`.
#[kernel(args = Ilu0ForwardSweep)]
pub unsafe fn ilu0_forward_sweep<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n: usize,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    x: *const V,
    y_old: *const V,
    y: *mut V,
) {
    for_each_index(n, |i| unsafe {
        forward_at::<A, V, B>(i, b, point, row_ptr, col_idx, diag, values, x, y_old, y)
    });
}

/// One Jacobi sweep of the back solve over all `n` (block) rows at once: `y = U_diag^-1 (z
/// - U_strict y_old)` ([`backward_at`] reading `y_old`).
#[kernel(args = Ilu0BackwardSweep)]
pub unsafe fn ilu0_backward_sweep<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n: usize,
    b: usize,
    point: bool,
    row_ptr: *const usize,
    col_idx: *const u32,
    diag: *const usize,
    values: *const A,
    inv_diag: *const A,
    z: *const V,
    y_old: *const V,
    y: *mut V,
) {
    for_each_index(n, |i| unsafe {
        backward_at::<A, V, B>(
            i, b, point, row_ptr, col_idx, diag, values, inv_diag, z, y_old, y,
        )
    });
}

/// The ILU(0) factorisation kernel of one matrix scalar type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait IluFactorKernels: Scalar {
    /// `ilu0_factor_<a>`
    const FACTOR: Kernel<Ilu0Factor<'static, Self>>;
}

/// Matrix scalars with ILU(0) solve kernels for vectors of `V` (a real matrix on complex
/// vectors shares the factorisation of its real type).
#[cfg(not(target_arch = "nvptx64"))]
pub trait IluKernels<V: Scalar>: MatrixScalar<V> + IluFactorKernels {
    /// `ilu0_forward_<a>[_<v>]`
    const FORWARD: Kernel<Ilu0Forward<'static, Self, V>>;
    /// `ilu0_backward_<a>[_<v>]`
    const BACKWARD: Kernel<Ilu0Backward<'static, Self, V>>;
    /// `ilu0_forward_sweep_<a>[_<v>]`
    const FORWARD_SWEEP: Kernel<Ilu0ForwardSweep<'static, Self, V>>;
    /// `ilu0_backward_sweep_<a>[_<v>]`
    const BACKWARD_SWEEP: Kernel<Ilu0BackwardSweep<'static, Self, V>>;
    /// `ilu0_forward5_<a>[_<v>]`: [`Self::FORWARD`] for 5 x 5 blocks (the TRACE cases;
    /// 2.8x faster level solves on case 6 in run 102; the sweeps ran slower unrolled and
    /// keep the general kernels).
    const FORWARD5: Kernel<Ilu0Forward<'static, Self, V>>;
    /// `ilu0_backward5_<a>[_<v>]`
    const BACKWARD5: Kernel<Ilu0Backward<'static, Self, V>>;
}

instances! {
    impl IluFactorKernels for f32 {
        FACTOR = ilu0_factor::<f32>("ilu0_factor_f32");
    }
    impl IluFactorKernels for f64 {
        FACTOR = ilu0_factor::<f64>("ilu0_factor_f64");
    }
    impl IluFactorKernels for Complex<f32> {
        FACTOR = ilu0_factor::<Complex<f32>>("ilu0_factor_c32");
    }
    impl IluFactorKernels for Complex<f64> {
        FACTOR = ilu0_factor::<Complex<f64>>("ilu0_factor_c64");
    }
}

/// The solve entry points of one (matrix scalar, vector scalar) pair.
macro_rules! solve_instances {
    ($a:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl IluKernels<$v> for $a {
                FORWARD = ilu0_forward::<$a, $v, 0>(concat!("ilu0_forward_", $sfx));
                BACKWARD = ilu0_backward::<$a, $v, 0>(concat!("ilu0_backward_", $sfx));
                FORWARD_SWEEP = ilu0_forward_sweep::<$a, $v, 0>(concat!("ilu0_forward_sweep_", $sfx));
                BACKWARD_SWEEP = ilu0_backward_sweep::<$a, $v, 0>(concat!("ilu0_backward_sweep_", $sfx));
                FORWARD5 = ilu0_forward::<$a, $v, 5>(concat!("ilu0_forward5_", $sfx));
                BACKWARD5 = ilu0_backward::<$a, $v, 5>(concat!("ilu0_backward5_", $sfx));

            }
        }
    };
}

solve_instances!(f32, f32, "f32");
solve_instances!(f64, f64, "f64");
solve_instances!(Complex<f32>, Complex<f32>, "c32");
solve_instances!(Complex<f64>, Complex<f64>, "c64");
solve_instances!(f32, Complex<f32>, "f32_c32");
solve_instances!(f64, Complex<f64>, "f64_c64");
// Mixed-precision storage: factors in single precision, double-precision vectors (half
// the bytes of the factors per solve).
solve_instances!(f32, f64, "f32_f64");
solve_instances!(f32, Complex<f64>, "f32_c64");
solve_instances!(Complex<f32>, Complex<f64>, "c32_c64");

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
        block_row_residual(&mut s, &[1, 0], &[2.0f64, -3.0], |c| y[c]);
        assert_eq!(
            s[0],
            row_residual(Complex::new(4.0, -1.0), &[1, 0], &[2.0, -3.0], |c| y[c])
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
