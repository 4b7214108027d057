//! Sparse matrix-vector products: the per-entry and per-block math shared by the rayon
//! CPU path (`ferrocuda::sparse::cpu`) and the GPU kernels (`crate::spmv`).
//!
//! Conventions (written down once): `spmv(alpha, A, x, beta, y)` computes
//! `y <- alpha * (A x) + beta * y`; where `beta` is exactly zero the old `y` is not read
//! (BLAS convention, so a NaN in an uninitialised `y` does not leak into the result).
//! Each row's sum `(A x)_i` is accumulated in storage order of the row, one fused
//! multiply-add per entry ([`spmv_term`]), then finished by [`finish`].
//!
//! **Zero entries add nothing** ([`spmv_term`]): an entry whose value is exactly zero
//! (`+0`, `-0`, or `0 + 0i`) is skipped, whether the matrix stores it or a format padded
//! it in (the zeros inside BCSR/BELL/BDIA blocks, padding slots). So a NaN or infinity in
//! `x` reaches `y_i` only through a nonzero `a_ij`, and the result does not depend on the
//! storage format. This differs from SciPy only for an explicitly stored zero facing a
//! non-finite `x_j` (SciPy: `0 * inf = NaN`): a dense block cannot tell a stored zero from
//! padding without a mask per block. For finite `x` skipping changes no bit: the sums
//! start at `+0` and never become `-0`, so adding `+-0` would leave them unchanged.
//!
//! The matrix scalar `A` and the vector scalar `V` may differ: a real matrix times a
//! complex vector (`f64` x `Complex<f64>`, `f32` x `Complex<f32>`) is the mixed case;
//! an `f32` (or `Complex<f32>`) matrix times `f64` (or `Complex<f64>`) vectors is mixed
//! precision storage: the value is widened exactly, then the `f64` math, so the result
//! is bit for bit the `f64` product of the widened matrix.

use num_complex::Complex;

use crate::scalar::Scalar;

/// A matrix scalar that can multiply vectors of scalar `V`: every type with itself, and
/// the real types with their complex counterparts.
pub trait MatrixScalar<V: Scalar>: Scalar {
    /// `self * x + acc`, fused (one rounding per real component).
    fn mul_add_vec(self, x: V, acc: V) -> V;
}

impl<T: Scalar> MatrixScalar<T> for T {
    #[inline(always)]
    fn mul_add_vec(self, x: T, acc: T) -> T {
        self.mul_add(x, acc)
    }
}

impl MatrixScalar<Complex<f64>> for f64 {
    #[inline(always)]
    fn mul_add_vec(self, x: Complex<f64>, acc: Complex<f64>) -> Complex<f64> {
        let fma = <f64 as Scalar>::mul_add;
        Complex::new(fma(self, x.re, acc.re), fma(self, x.im, acc.im))
    }
}

impl MatrixScalar<Complex<f32>> for f32 {
    #[inline(always)]
    fn mul_add_vec(self, x: Complex<f32>, acc: Complex<f32>) -> Complex<f32> {
        let fma = <f32 as Scalar>::mul_add;
        Complex::new(fma(self, x.re, acc.re), fma(self, x.im, acc.im))
    }
}

/// Mixed-precision storage: an `f32` matrix times `f64` vectors. The value is widened to
/// `f64` (exact), then one `f64` fused multiply-add, so the product is bit for bit the
/// `f64` product of the widened matrix while the matrix moves half the bytes.
impl MatrixScalar<f64> for f32 {
    #[inline(always)]
    fn mul_add_vec(self, x: f64, acc: f64) -> f64 {
        <f64 as Scalar>::mul_add(self as f64, x, acc)
    }
}

/// An `f32` matrix times `Complex<f64>` vectors: widened exactly, then as `f64` x
/// `Complex<f64>` (one fused multiply-add per component).
impl MatrixScalar<Complex<f64>> for f32 {
    #[inline(always)]
    fn mul_add_vec(self, x: Complex<f64>, acc: Complex<f64>) -> Complex<f64> {
        <f64 as MatrixScalar<Complex<f64>>>::mul_add_vec(self as f64, x, acc)
    }
}

/// A `Complex<f32>` matrix times `Complex<f64>` vectors: both parts widened exactly, then
/// the `Complex<f64>` fused multiply-add, bit for bit that of the widened matrix.
impl MatrixScalar<Complex<f64>> for Complex<f32> {
    #[inline(always)]
    fn mul_add_vec(self, x: Complex<f64>, acc: Complex<f64>) -> Complex<f64> {
        <Complex<f64> as Scalar>::mul_add(Complex::new(self.re as f64, self.im as f64), x, acc)
    }
}

/// One term of a row sum: `a x + acc` (fused, [`MatrixScalar::mul_add_vec`]), except that
/// a zero `a` meets `0` instead of `x`: the format-independent rule of the
/// [module docs](self), a zero entry adds nothing, not even `0 * inf`. `(+-0) 0 + acc` is
/// `acc` for every sum that starts at `+0` (such a sum is never `-0`), so this is the
/// sum without the term; selecting `x` rather than the result keeps the select off the
/// chain of fused multiply-adds (no latency added per term).
#[inline(always)]
pub fn spmv_term<A: MatrixScalar<V>, V: Scalar>(a: A, x: V, acc: V) -> V {
    let x = if a == A::ZERO { V::ZERO } else { x };
    a.mul_add_vec(x, acc)
}

/// The final step of one row: `alpha * acc + beta * y`, or `alpha * acc` where `beta` is
/// exactly zero (the old `y` is then not read).
#[inline(always)]
pub fn finish<V: Scalar>(alpha: V, acc: V, beta: V, y: V) -> V {
    if beta == V::ZERO {
        alpha * acc
    } else {
        alpha.mul_add(acc, beta * y)
    }
}

/// `y[i] <- finish(alpha, acc, beta, y[i])`, not reading `y[i]` where `beta == 0` (`y`
/// may be uninitialised then): how every SpMV kernel stores a row.
///
/// # Safety
/// `y.add(i)` must be valid for a read (where `beta != 0`) and a write.
#[inline(always)]
pub unsafe fn write_row<V: Scalar>(y: *mut V, i: usize, alpha: V, acc: V, beta: V) {
    let yi = unsafe { y.add(i) };
    let old = if beta == V::ZERO {
        V::ZERO
    } else {
        unsafe { *yi }
    };
    unsafe { *yi = finish(alpha, acc, beta, old) };
}

/// Lane `lane` (of `lanes`) of a CSR row's sum: the entries `start + lane`,
/// `start + lane + lanes`, ... below `end`, one [`spmv_term`] each, in that order, from
/// `+0`; `entry(k)` gives entry `k`'s value and the `x` it meets. The device CSR kernel
/// runs one lane per thread and adds the lanes' sums by [`lanes_sum`]'s tree; the CPU
/// twin runs the lanes one after another, then the same tree. With one lane this is the
/// row's plain chain, as in every other format.
#[inline(always)]
pub fn csr_lane_sum<A: MatrixScalar<V>, V: Scalar>(
    start: usize,
    end: usize,
    lane: usize,
    lanes: usize,
    entry: impl Fn(usize) -> (A, V),
) -> V {
    let mut acc = V::ZERO;
    let mut k = start + lane;
    while k < end {
        let (a, x) = entry(k);
        acc = spmv_term(a, x, acc);
        k += lanes;
    }
    acc
}

/// The sum of `partials` (a power-of-two count, at most 32) in the fixed tree order of
/// the device's group sum (`device::group_sum`, shuffles down): for `d = len / 2, len / 4,
/// ..., 1`, `p[l] <- p[l] + p[l + d]` for `l < d`; the result is `p[0]`. Overwrites
/// `partials`.
#[inline]
pub fn lanes_sum<V: Scalar>(partials: &mut [V]) -> V {
    let mut d = partials.len() / 2;
    while d > 0 {
        for l in 0..d {
            partials[l] = partials[l] + partials[l + d];
        }
        d /= 2;
    }
    partials.first().copied().unwrap_or(V::ZERO)
}

/// Row `r` of `acc += block x` for a row-major `b x b` block: each row sums its `b` terms
/// in column order, `term` per entry.
#[inline(always)]
fn rows_mul_add<A: Copy, V: Copy>(
    acc: &mut [V],
    block: &[A],
    x: &[V],
    term: impl Fn(A, V, V) -> V,
) {
    let b = acc.len();
    for (a, row) in acc.iter_mut().zip(block.chunks_exact(b)) {
        let mut s = *a;
        for (&m, &xv) in row.iter().zip(x) {
            s = term(m, xv, s);
        }
        *a = s;
    }
}

/// `acc += block x` for a column-major `b x b` block, the terms of each row in column
/// order (the order of [`rows_mul_add`], so both layouts give the same bits).
#[inline(always)]
fn cols_mul_add<A: Copy, V: Copy>(
    acc: &mut [V],
    block: &[A],
    x: &[V],
    term: impl Fn(A, V, V) -> V,
) {
    let b = acc.len();
    for (col, &xv) in block.chunks_exact(b).zip(x) {
        for (a, &m) in acc.iter_mut().zip(col) {
            *a = term(m, xv, *a);
        }
    }
}

/// [`rows_mul_add`] for a 5x5 block, on arrays (fixed sizes: registers on the device).
#[inline(always)]
fn rows5_mul_add<A: Copy, V: Copy>(
    acc: &mut [V; 5],
    block: &[A; 25],
    x: &[V; 5],
    term: impl Fn(A, V, V) -> V,
) {
    for (r, a) in acc.iter_mut().enumerate() {
        let row = &block[r * 5..r * 5 + 5];
        let mut s = *a;
        for (&m, &xv) in row.iter().zip(x) {
            s = term(m, xv, s);
        }
        *a = s;
    }
}

/// `acc_r += sum_c block[r * 5 + c] * x[c]` for a 5x5 block stored row-major, **every**
/// entry multiplied, zeros included: the arithmetic of the BCSR V1 kernel of Kautz (2011)
/// (`crate::repro::spmv`), kept as it was. SpMV uses [`block5_spmv`].
#[inline(always)]
pub fn block5_mul_add<A: MatrixScalar<V>, V: Scalar>(
    acc: &mut [V; 5],
    block: &[A; 25],
    x: &[V; 5],
) {
    rows5_mul_add(acc, block, x, |m: A, xv, s| m.mul_add_vec(xv, s));
}

/// [`block5_mul_add`] for any block size `b` (`acc.len() == x.len() == b`, `block.len() ==
/// b * b`, row-major; extra elements are ignored), every entry multiplied: the reference
/// chain of the block-Jacobi apply (`crate::precond`).
#[inline(always)]
pub fn block_mul_add<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V], block: &[A], x: &[V]) {
    rows_mul_add(acc, block, x, |m: A, xv, s| m.mul_add_vec(xv, s));
}

/// SpMV's `acc_r += sum_c block[r * 5 + c] * x[c]` for a 5x5 row-major block: each row
/// sums its five terms in column order, zero entries skipped ([`spmv_term`]).
#[inline(always)]
pub fn block5_spmv<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V; 5], block: &[A; 25], x: &[V; 5]) {
    rows5_mul_add(acc, block, x, spmv_term);
}

/// [`block5_spmv`] for a 5x5 block stored column-major (the "permuted" BCSR block): the
/// same terms in the same order per row, so both layouts give the same bits.
#[inline(always)]
pub fn block5_spmv_col_major<A: MatrixScalar<V>, V: Scalar>(
    acc: &mut [V; 5],
    block: &[A; 25],
    x: &[V; 5],
) {
    cols_mul_add(acc, block, x, spmv_term);
}

/// [`block5_spmv`] for any block size `b`: `acc.len() == x.len() == b`,
/// `block.len() == b * b`, row-major. Extra elements beyond those lengths are ignored.
#[inline(always)]
pub fn block_spmv<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V], block: &[A], x: &[V]) {
    rows_mul_add(acc, block, x, spmv_term);
}

/// [`block5_spmv_col_major`] for any block size `b` (column-major block).
#[inline(always)]
pub fn block_spmv_col_major<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V], block: &[A], x: &[V]) {
    cols_mul_add(acc, block, x, spmv_term);
}

/// `acc_r += sum_c value(e) * x[c]` over the entries `(r, c)` whose bit `r b + c` is set
/// in `mask` (`b <= N`, `b <= 8`; entries `b..N` of `acc` and `x` are ignored), where `e` numbers the set bits in row-major order:
/// the compact block of the sliced masked BELL format (`ferrocuda::sparse::Sbell`). Rows
/// in order, columns ascending: the chain of [`block_spmv`] without the entries the
/// mask leaves out (a zero inside the mask, stored because a mask is a union over the
/// blocks of a slot, is skipped by [`spmv_term`] as in every format).
///
/// Every `value(e)` is read unconditionally (the index clamped to the block's last entry)
/// and only set bits enter the sum through a select, so the loads of a block carry no
/// branch and can all be in flight at once on the GPU.
#[inline(always)]
pub fn masked_block_mul_add<A: MatrixScalar<V>, V: Scalar, const N: usize>(
    acc: &mut [V; N],
    b: usize,
    mask: u64,
    value: impl Fn(usize) -> A,
    x: &[V; N],
) {
    let n = mask.count_ones() as usize;
    if n == 0 {
        return;
    }
    if b == 5 && N >= 5 {
        // Written out so the 5x5 fast path keeps its accumulators in registers (LLVM
        // does not fully unroll both loops of 25 entries).
        acc[0] = masked_row(acc[0], 0, 5, mask, n, &value, x);
        acc[1] = masked_row(acc[1], 1, 5, mask, n, &value, x);
        acc[2] = masked_row(acc[2], 2, 5, mask, n, &value, x);
        acc[3] = masked_row(acc[3], 3, 5, mask, n, &value, x);
        acc[4] = masked_row(acc[4], 4, 5, mask, n, &value, x);
    } else {
        #[allow(clippy::needless_range_loop)] // index loops unroll on nvptx; iterators did not
        for r in 0..b.min(N) {
            acc[r] = masked_row(acc[r], r, b, mask, n, &value, x);
        }
    }
}

/// Row `r` of [`masked_block_mul_add`], `n` the block's stored entries (`>= 1`): the
/// row-per-thread SBELL kernels call it directly, with the same bits.
#[inline(always)]
pub fn masked_row<A: MatrixScalar<V>, V: Scalar, const N: usize>(
    mut s: V,
    r: usize,
    b: usize,
    mask: u64,
    n: usize,
    value: &impl Fn(usize) -> A,
    x: &[V; N],
) -> V {
    let bits = (mask >> (r * b)) & ((1u64 << b) - 1);
    let first = (mask & ((1u64 << (r * b)) - 1)).count_ones() as usize;
    #[allow(clippy::needless_range_loop)] // index loops unroll on nvptx; iterators did not
    for c in 0..b.min(N) {
        let e = first + (bits & ((1u64 << c) - 1)).count_ones() as usize;
        let v = value(if e < n { e } else { n - 1 });
        let t = spmv_term(v, x[c], s);
        s = if (bits >> c) & 1 != 0 { t } else { s };
    }
    s
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn both_block_layouts_give_the_same_bits() {
        let mut rm = [0.0f64; 25];
        let mut cm = [0.0f64; 25];
        for r in 0..5 {
            for c in 0..5 {
                let v = 0.1 * (r * 7 + c * 3) as f64 - 1.3;
                rm[r * 5 + c] = v;
                cm[c * 5 + r] = v;
            }
        }
        let x = [0.3, -1.7, 2.5, 0.11, -0.9];
        let (mut a, mut b, mut c, mut d) = ([1.0; 5], [1.0; 5], [1.0; 5], [1.0; 5]);
        block5_spmv(&mut a, &rm, &x);
        block5_spmv_col_major(&mut b, &cm, &x);
        block_spmv(&mut c, &rm, &x);
        block_spmv_col_major(&mut d, &cm, &x);
        assert_eq!([a, b, c], [d; 3]);
        // No zero entry: the raw chains (every entry) give the same bits.
        let (mut e, mut f) = ([1.0; 5], [1.0; 5]);
        block5_mul_add(&mut e, &rm, &x);
        block_mul_add(&mut f, &rm, &x);
        assert_eq!([e, f], [a; 2]);
    }

    #[test]
    fn zero_entries_never_touch_x() {
        // A 2x2 block [[0, 2], [-0, 0]] against x = [inf, 3]: the zeros meet the infinity.
        let rm = [0.0f64, 2.0, -0.0, 0.0];
        let cm = [0.0f64, -0.0, 2.0, 0.0];
        let x = [f64::INFINITY, 3.0];
        let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
        block_spmv(&mut a, &rm, &x);
        block_spmv_col_major(&mut b, &cm, &x);
        assert_eq!(a, [6.0, 0.0]);
        assert_eq!(b, a);
        // The raw chain multiplies them: 0 * inf = NaN.
        let mut raw = [0.0; 2];
        block_mul_add(&mut raw, &rm, &x);
        assert!(raw[0].is_nan() && raw[1].is_nan(), "{raw:?}");
        // NaN and infinity in the matrix still propagate; a complex zero is both parts.
        assert!(spmv_term(f64::NAN, 1.0, 0.0).is_nan());
        assert_eq!(spmv_term(f64::INFINITY, 2.0, 1.0), f64::INFINITY);
        let z = Complex::new(0.0, 0.0);
        let xi = Complex::new(f64::NAN, 1.0);
        assert_eq!(
            spmv_term(z, xi, Complex::new(1.0, 2.0)),
            Complex::new(1.0, 2.0)
        );
        assert!(spmv_term(Complex::new(0.0, 1.0), xi, z).re.is_nan());
        assert_eq!(
            spmv_term(0.0f64, xi, Complex::new(1.0, 2.0)),
            Complex::new(1.0, 2.0)
        );
        // A zero inside an SBELL mask (a union over blocks) is skipped the same way.
        let mut m = [0.0; 2];
        masked_block_mul_add(&mut m, 2, 0b1111, |e| rm[e], &x);
        assert_eq!(m, a);
    }

    #[test]
    fn masked_block_skips_exactly_the_masked_entries() {
        // Row-major 3x3 block with (0,1) and (2,0) left out by the mask.
        let full = [1.5, 0.0, -2.0, 0.25, 3.0, 1.0, 0.0, -0.5, 4.0];
        let mask: u64 = 0b111_111_111 & !(1 << 1) & !(1 << 6);
        let compact: [f64; 7] = [1.5, -2.0, 0.25, 3.0, 1.0, -0.5, 4.0];
        let x = [0.7, -1.1, 2.3];
        let (mut a, mut b) = ([0.5; 3], [0.5; 3]);
        block_spmv(&mut a, &full, &x);
        masked_block_mul_add(&mut b, 3, mask, |e| compact[e], &x);
        assert_eq!(a, b);
        let mut c = [0.5; 3];
        masked_block_mul_add(&mut c, 3, 0, |_| f64::NAN, &x);
        assert_eq!(c, [0.5; 3]);
    }

    #[test]
    fn lanes_sum_adds_in_the_tree_order_of_the_group_sum() {
        // (p0 + p2) + (p1 + p3): the big terms cancel first; the sequential order loses 1.
        let mut p = [1e16f64, 1.0, -1e16, 1.0];
        assert_eq!(lanes_sum(&mut p), 2.0);
        assert_eq!(((1e16f64 + 1.0) + -1e16) + 1.0, 1.0);
        let mut one = [3.5f32];
        assert_eq!(lanes_sum(&mut one), 3.5);
        assert_eq!(lanes_sum::<f64>(&mut []), 0.0);
    }

    #[test]
    fn one_lane_is_the_plain_chain_and_lanes_split_by_stride() {
        let vals = [1.5f64, -2.0, 0.0, 4.25, 1e-3, 7.0, -0.5];
        let x = [0.3f64, f64::INFINITY, 2.0, -1.0, 5.0, 0.25, 8.0];
        let entry = |k: usize| (vals[k], x[k]);
        let chain = (0..7).fold(0.0, |acc, k| spmv_term(vals[k], x[k], acc));
        assert_eq!(csr_lane_sum(0, 7, 0, 1, entry), chain);
        // Entry 1 is infinite in x but meets 2.0; lane 1 of 2 holds entries 1, 3, 5.
        let lane1 = csr_lane_sum(0, 7, 1, 2, entry);
        assert_eq!(lane1, f64::NEG_INFINITY);
        let lane0 = csr_lane_sum(0, 7, 0, 2, entry);
        let want0 = [0, 2, 4, 6]
            .iter()
            .fold(0.0, |a, &k| spmv_term(vals[k], x[k], a));
        assert_eq!(lane0, want0);
        // A lane past the row's end sums nothing.
        assert_eq!(csr_lane_sum(2, 3, 4, 8, entry), 0.0);
    }

    #[test]
    fn real_matrix_times_complex_vector() {
        let acc = 2.0f64.mul_add_vec(Complex::new(1.0, -3.0), Complex::new(0.5, 0.5));
        assert_eq!(acc, Complex::new(2.5, -5.5));
    }
}
