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
    fn real_matrix_times_complex_vector() {
        let acc = 2.0f64.mul_add_vec(Complex::new(1.0, -3.0), Complex::new(0.5, 0.5));
        assert_eq!(acc, Complex::new(2.5, -5.5));
    }
}
