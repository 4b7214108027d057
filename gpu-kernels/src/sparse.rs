//! Sparse matrix-vector products: the per-entry and per-block math shared by the rayon
//! CPU path (`ferrocuda::sparse::cpu`) and the future GPU kernels.
//!
//! Conventions (written down once): `spmv(alpha, A, x, beta, y)` computes
//! `y <- alpha * (A x) + beta * y`; where `beta` is exactly zero the old `y` is not read
//! (BLAS convention, so a NaN in an uninitialised `y` does not leak into the result).
//! Each row's sum `(A x)_i` is accumulated in storage order of the row, one fused
//! multiply-add per stored entry ([`MatrixScalar::mul_add_vec`]), then finished by
//! [`finish`].
//!
//! The matrix scalar `A` and the vector scalar `V` may differ: a real matrix times a
//! complex vector (`f64` x `Complex<f64>`, `f32` x `Complex<f32>`) is the mixed case.

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

/// `acc_r += sum_c block[r * 5 + c] * x[c]` for a 5x5 block stored row-major; each row
/// sums its five products in column order.
#[inline(always)]
pub fn block5_mul_add<A: MatrixScalar<V>, V: Scalar>(
    acc: &mut [V; 5],
    block: &[A; 25],
    x: &[V; 5],
) {
    for (r, a) in acc.iter_mut().enumerate() {
        let row = &block[r * 5..r * 5 + 5];
        let mut s = *a;
        for (&m, &xv) in row.iter().zip(x) {
            s = m.mul_add_vec(xv, s);
        }
        *a = s;
    }
}

/// `acc_r += sum_c block[c * 5 + r] * x[c]` for a 5x5 block stored column-major (the
/// "permuted" BCSR block); the order of the products per row is the same as in
/// [`block5_mul_add`], so both layouts give the same bits.
#[inline(always)]
pub fn block5_mul_add_col_major<A: MatrixScalar<V>, V: Scalar>(
    acc: &mut [V; 5],
    block: &[A; 25],
    x: &[V; 5],
) {
    for (c, &xv) in x.iter().enumerate() {
        let col = &block[c * 5..c * 5 + 5];
        for (a, &m) in acc.iter_mut().zip(col) {
            *a = m.mul_add_vec(xv, *a);
        }
    }
}

/// [`block5_mul_add`] for any block size `b`: `acc.len() == x.len() == b`,
/// `block.len() == b * b`, row-major. Extra elements beyond those lengths are ignored.
#[inline(always)]
pub fn block_mul_add<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V], block: &[A], x: &[V]) {
    let b = acc.len();
    for (a, row) in acc.iter_mut().zip(block.chunks_exact(b)) {
        let mut s = *a;
        for (&m, &xv) in row.iter().zip(x) {
            s = m.mul_add_vec(xv, s);
        }
        *a = s;
    }
}

/// [`block5_mul_add_col_major`] for any block size `b` (column-major block).
#[inline(always)]
pub fn block_mul_add_col_major<A: MatrixScalar<V>, V: Scalar>(acc: &mut [V], block: &[A], x: &[V]) {
    let b = acc.len();
    for (col, &xv) in block.chunks_exact(b).zip(x) {
        for (a, &m) in acc.iter_mut().zip(col) {
            *a = m.mul_add_vec(xv, *a);
        }
    }
}

/// `acc_r += sum_c value(e) * x[c]` over the entries `(r, c)` whose bit `r b + c` is set
/// in `mask` (`b <= N`, `b <= 8`; entries `b..N` of `acc` and `x` are ignored), where `e` numbers the set bits in row-major order:
/// the compact block of the sliced masked BELL format (`ferrocuda::sparse::Sbell`). Rows
/// in order, columns ascending: the chain of [`block_mul_add`] without the entries the
/// mask leaves out.
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

/// Row `r` of [`masked_block_mul_add`], `n` the block's stored entries (`>= 1`).
#[inline(always)]
fn masked_row<A: MatrixScalar<V>, V: Scalar, const N: usize>(
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
        let t = v.mul_add_vec(x[c], s);
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
        let (mut a, mut b, mut c) = ([1.0; 5], [1.0; 5], [1.0; 5]);
        block5_mul_add(&mut a, &rm, &x);
        block5_mul_add_col_major(&mut b, &cm, &x);
        block_mul_add(&mut c, &rm, &x);
        assert_eq!(a, b);
        assert_eq!(a, c);
        let mut d = [1.0; 5];
        block_mul_add_col_major(&mut d, &cm, &x);
        assert_eq!(a, d);
    }

    #[test]
    fn masked_block_skips_exactly_the_masked_entries() {
        // Row-major 3x3 block with (0,1) and (2,0) left out by the mask.
        let full = [1.5, 0.0, -2.0, 0.25, 3.0, 1.0, 0.0, -0.5, 4.0];
        let mask: u64 = 0b111_111_111 & !(1 << 1) & !(1 << 6);
        let compact: [f64; 7] = [1.5, -2.0, 0.25, 3.0, 1.0, -0.5, 4.0];
        let x = [0.7, -1.1, 2.3];
        let (mut a, mut b) = ([0.5; 3], [0.5; 3]);
        block_mul_add(&mut a, &full, &x);
        masked_block_mul_add(&mut b, 3, mask, |e| compact[e], &x);
        assert_eq!(a, b);
        let mut c = [0.5; 3];
        masked_block_mul_add(&mut c, 3, 0, |_| f64::NAN, &x);
        assert_eq!(c, [0.5; 3]);
    }

    #[test]
    fn real_matrix_times_complex_vector() {
        let acc = 2.0f64.mul_add_vec(Complex::new(1.0, -3.0), Complex::new(0.5, 0.5));
        assert_eq!(acc, Complex::new(2.5, -5.5));
    }
}
