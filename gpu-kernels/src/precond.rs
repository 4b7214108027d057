//! Block-Jacobi preconditioning: the per-block math shared by the rayon CPU path
//! (`ferrocuda::krylov::precond::BlockJacobi`) and, on the device, the kernels.
//!
//! * [`invert_block`]: the inverse of one `b x b` row-major block (`b <= N <= 8`) by
//!   Gauss-Jordan elimination with partial pivoting (the pivot of column `k` is the first
//!   row `i >= k` of largest `|a_ik|^2`), in place, on a work array of capacity `N x N`.
//!   The operations and their order depend on `b` and the values only, not on `N`, so the
//!   CPU and the GPU give the same bits.
//! * [`apply_row`] / [`apply_block`]: `y = D^-1 x` for one block row, each row a chain of
//!   [`MatrixScalar::mul_add_vec`] in column order starting from zero: the same chain as
//!   [`crate::sparse::block_mul_add`] on a zero accumulator.
//!
//! * [`ilu`]: the per-row arithmetic of ILU(0) and block ILU(0) (factorisation and
//!   triangular solves), shared with `ferrocuda::krylov::ilu`.
//!
//! Kernels (host handles: [`InvertKernels`], [`PrecondKernels`]):
//! * `block_jacobi_invert_<t>` (`block_jacobi_invert`): one thread per block, in place.
//! * `block_jacobi_apply_<a>[_<v>]` (`block_jacobi_apply`): one thread per scalar row.

use num_complex::Complex;

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::for_each_index;
use crate::scalar::{RealScalar, Scalar};
use crate::sparse::MatrixScalar;
use crate::{instances, kernel};

pub mod ilu;

/// Largest block size of block Jacobi (the capacity of the kernels' work array).
pub const BLOCK_JACOBI_MAX_B: usize = 8;

/// Threads per block of the block-Jacobi kernels (a multiple of 32).
pub const BLOCK_JACOBI_THREADS: usize = 128;

/// Kernel flag of a block that was inverted.
pub const FLAG_OK: u32 = 0;
/// Kernel flag of a singular block (a zero pivot, or a non-finite entry in the result).
pub const FLAG_SINGULAR: u32 = 1;

/// `|x|` of a real.
#[inline(always)]
fn abs_real<R: RealScalar>(x: R) -> R {
    if x < R::ZERO { -x } else { x }
}

/// Whether both parts of `z` are finite (`x - x` is zero exactly for finite `x`, NaN for
/// infinities and NaN).
#[inline(always)]
#[allow(clippy::eq_op)] // `x - x` is the test itself
pub fn is_finite<T: Scalar>(z: T) -> bool {
    let (re, im) = (z.re(), z.im());
    re - re == T::Real::ZERO && im - im == T::Real::ZERO
}

/// `1 / z`: one correctly rounded division for reals; Smith's algorithm for complex
/// numbers (no overflow of `|z|^2` on the way), with a fused multiply-add for the
/// denominator.
#[inline(always)]
pub fn recip<T: Scalar>(z: T) -> T {
    let one = T::Real::ONE;
    if !T::IS_COMPLEX {
        return T::from_real(one / z.re());
    }
    let (c, d) = (z.re(), z.im());
    if abs_real(c) >= abs_real(d) {
        // 1 / (c + i d) = (1 - i r) / (c + d r), r = d / c
        let r = d / c;
        let den = d.mul_add(r, c);
        T::from_parts(one / den, -(r / den))
    } else {
        // = (r - i) / (c r + d), r = c / d
        let r = c / d;
        let den = c.mul_add(r, d);
        T::from_parts(r / den, -(one / den))
    }
}

/// Inverts the leading `b x b` part of `m` in place (`b <= N`; the rest of `m` is
/// neither read nor written). Gauss-Jordan with partial pivoting: for each column `k`,
/// the pivot is the first row `i >= k` of largest `abs2(m[i][k])`; the rows are swapped,
/// row `k` is scaled by [`recip`] of the pivot, and every other row `i` gets
/// `m[i][j] <- fma(-m[i][k], m[k][j], m[i][j])` (column `k` first set to the identity's,
/// the classic in-place scheme); the row swaps are undone as column swaps at the end.
///
/// Returns `true` where the block is singular: a pivot whose `abs2` is zero (or NaN), or
/// a non-finite entry in the result. `m` then holds an unspecified partial result.
/// Where `b > N` it returns `true` and leaves `m` alone.
#[inline(always)]
pub fn gauss_jordan<T: Scalar, const N: usize>(b: usize, m: &mut [[T; N]; N]) -> bool {
    if b > N {
        return true;
    }
    let mut pivot_row = [0usize; N];
    #[allow(clippy::needless_range_loop)] // index loops unroll on nvptx; iterators did not
    for k in 0..b {
        let mut p = k;
        let mut best = m[k][k].abs2();
        for i in k + 1..b {
            let v = m[i][k].abs2();
            if v > best {
                p = i;
                best = v;
            }
        }
        // `!(best > 0)` also catches a NaN pivot.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(best > T::Real::ZERO) {
            return true;
        }
        pivot_row[k] = p;
        if p != k {
            m.swap(k, p);
        }
        let inv = recip(m[k][k]);
        m[k][k] = T::ONE;
        for j in 0..b {
            m[k][j] = m[k][j] * inv;
        }
        let pivot = m[k];
        for (i, row) in m.iter_mut().enumerate().take(b) {
            if i != k {
                let f = -row[k];
                row[k] = T::ZERO;
                for j in 0..b {
                    row[j] = f.mul_add(pivot[j], row[j]);
                }
            }
        }
    }
    for k in (0..b).rev() {
        let p = pivot_row[k];
        if p != k {
            for row in m.iter_mut().take(b) {
                row.swap(k, p);
            }
        }
    }
    let mut finite = true;
    for row in m.iter().take(b) {
        for &v in row.iter().take(b) {
            finite &= is_finite(v);
        }
    }
    !finite
}

/// Inverts the `b x b` row-major block `block[0..b b]` in place ([`gauss_jordan`] on a
/// work array of capacity `N x N`, `b <= N`). Returns `true` where the block is singular
/// (a zero pivot, or a non-finite result); the block then holds an unspecified partial
/// result. Where `b > N` or `block.len() < b b` it returns `true` and leaves the block
/// alone. `b = 0` is the empty block: `false`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops; see the comment inside
pub fn invert_block<T: Scalar, const N: usize>(b: usize, block: &mut [T]) -> bool {
    if b > N || block.len() < b * b {
        return true;
    }
    // Element loops, not `copy_from_slice`: a copy of run-time length becomes a byte loop
    // (`memcpy`) on nvptx.
    let mut m = [[T::ZERO; N]; N];
    for r in 0..b {
        for c in 0..b {
            m[r][c] = block[r * b + c];
        }
    }
    let singular = gauss_jordan(b, &mut m);
    for r in 0..b {
        for c in 0..b {
            block[r * b + c] = m[r][c];
        }
    }
    singular
}

/// [`invert_block`] with a work array sized for `b`: capacity 1 for point Jacobi, 5 for
/// TRACE's blocks, [`BLOCK_JACOBI_MAX_B`] otherwise (the inside of each arm sees a
/// constant `b`; a smaller array means less local memory on the device). The capacity does
/// not change the bits. Where `b > BLOCK_JACOBI_MAX_B` it returns `true` (singular) and
/// leaves the block alone.
#[inline(always)]
pub fn invert_block_sized<T: Scalar>(b: usize, block: &mut [T]) -> bool {
    match b {
        1 => invert_block::<T, 1>(1, block),
        5 => invert_block::<T, 5>(5, block),
        _ => invert_block::<T, BLOCK_JACOBI_MAX_B>(b, block),
    }
}

/// One row of `D^-1 x`: `sum_c row[c] x[c]`, a chain of fused multiply-adds in column
/// order starting from zero (`row.len() == x.len() == b`; extra elements of the longer
/// one are ignored).
#[inline(always)]
pub fn apply_row<A: MatrixScalar<V>, V: Scalar>(row: &[A], x: &[V]) -> V {
    let mut s = V::ZERO;
    for (&m, &xv) in row.iter().zip(x) {
        s = m.mul_add_vec(xv, s);
    }
    s
}

/// `y = inv x` for one `b x b` row-major block, `b = y.len()`, `inv.len() >= b b`,
/// `x.len() >= b`: [`apply_row`] for each row.
#[inline(always)]
pub fn apply_block<A: MatrixScalar<V>, V: Scalar>(y: &mut [V], inv: &[A], x: &[V]) {
    let b = y.len();
    if b == 0 {
        return;
    }
    for (yi, row) in y.iter_mut().zip(inv.chunks_exact(b)) {
        *yi = apply_row(row, &x[..b]);
    }
}

/// Thread `t` inverts block `t` (`blocks[t b b .. (t + 1) b b]`, row-major) in place
/// ([`invert_block_sized`]) and writes `flags[t]`: [`FLAG_OK`] or [`FLAG_SINGULAR`].
/// `1 <= b <= BLOCK_JACOBI_MAX_B`.
#[kernel(args = BlockJacobiInvert)]
pub unsafe fn block_jacobi_invert<T: Scalar>(
    n_blocks: usize,
    b: usize,
    blocks: *mut T,
    flags: *mut u32,
) {
    let bb = b * b;
    for_each_index(n_blocks, |t| {
        let block = unsafe { core::slice::from_raw_parts_mut(blocks.add(t * bb), bb) };
        let singular = invert_block_sized::<T>(b, block);
        let flag = if singular { FLAG_SINGULAR } else { FLAG_OK };
        unsafe { *flags.add(t) = flag };
    });
}

/// Thread `i` computes `y[i]`, row `i % b` of block row `i / b`:
/// `y[i] = sum_c inv[(i / b) b b + (i % b) b + c] x[(i / b) b + c]` ([`apply_row`]).
#[kernel(args = BlockJacobiApply)]
pub unsafe fn block_jacobi_apply<A: MatrixScalar<V>, V: Scalar>(
    n_rows: usize,
    b: usize,
    inv: *const A,
    x: *const V,
    y: *mut V,
) {
    for_each_index(n_rows, |i| {
        let row = unsafe { core::slice::from_raw_parts(inv.add(i * b), b) };
        let xs = unsafe { core::slice::from_raw_parts(x.add(i / b * b), b) };
        unsafe { *y.add(i) = apply_row(row, xs) };
    });
}

/// The block-Jacobi inversion kernel of one matrix scalar type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait InvertKernels: Scalar {
    /// `block_jacobi_invert_<a>`
    const INVERT: Kernel<BlockJacobiInvert<'static, Self>>;
}

/// Matrix scalars with block-Jacobi kernels for vectors of `V` (the mixed pairs, a real
/// matrix on complex vectors, share the inversion of their real type).
#[cfg(not(target_arch = "nvptx64"))]
pub trait PrecondKernels<V: Scalar>: MatrixScalar<V> + InvertKernels {
    /// `block_jacobi_apply_<a>[_<v>]`
    const APPLY: Kernel<BlockJacobiApply<'static, Self, V>>;
}

instances! {
    impl InvertKernels for f32 {
        INVERT = block_jacobi_invert::<f32>("block_jacobi_invert_f32");
    }
    impl InvertKernels for f64 {
        INVERT = block_jacobi_invert::<f64>("block_jacobi_invert_f64");
    }
    impl InvertKernels for Complex<f32> {
        INVERT = block_jacobi_invert::<Complex<f32>>("block_jacobi_invert_c32");
    }
    impl InvertKernels for Complex<f64> {
        INVERT = block_jacobi_invert::<Complex<f64>>("block_jacobi_invert_c64");
    }
}

/// The apply entry point of one (matrix scalar, vector scalar) pair; the names are those
/// the notes, results and `scripts/ptx-check` refer to.
macro_rules! apply_instances {
    ($a:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl PrecondKernels<$v> for $a {
                APPLY = block_jacobi_apply::<$a, $v>(concat!("block_jacobi_apply_", $sfx));
            }
        }
    };
}

apply_instances!(f32, f32, "f32");
apply_instances!(f64, f64, "f64");
apply_instances!(Complex<f32>, Complex<f32>, "c32");
apply_instances!(Complex<f64>, Complex<f64>, "c64");
apply_instances!(f32, Complex<f32>, "f32_c32");
apply_instances!(f64, Complex<f64>, "f64_c64");
// Single-precision inverse blocks on double-precision vectors (`MatrixStorage::F32`).
apply_instances!(f32, f64, "f32_f64");
apply_instances!(Complex<f32>, Complex<f64>, "c32_c64");

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::sparse::block_mul_add;
    use num_complex::Complex;

    /// `a b` for row-major `n x n` blocks, plain `f64`.
    fn matmul(n: usize, a: &[f64], b: &[f64]) -> std::vec::Vec<f64> {
        let mut c = std::vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    c[i * n + j] += a[i * n + k] * b[k * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn inverts_a_block_that_needs_pivoting() {
        // A zero in the (0, 0) corner forces a row swap.
        let a = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
        let mut inv = a;
        assert!(!invert_block::<f64, 8>(3, &mut inv));
        let id = matmul(3, &a, &inv);
        for i in 0..3 {
            for j in 0..3 {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((id[i * 3 + j] - want).abs() < 1e-14, "{id:?}");
            }
        }
    }

    #[test]
    fn capacity_does_not_change_the_bits() {
        let a = [4.0, -1.0, 0.5, 0.25, 3.0, -2.0, 1.0, 0.5, 5.0];
        let (mut x, mut y) = (a, a);
        assert!(!invert_block::<f64, 3>(3, &mut x));
        assert!(!invert_block::<f64, 8>(3, &mut y));
        assert_eq!(x, y);
    }

    #[test]
    fn singular_and_non_finite_blocks_are_flagged() {
        let mut rank1 = [1.0, 2.0, 2.0, 4.0];
        assert!(invert_block::<f64, 8>(2, &mut rank1));
        let mut zero = [0.0f32; 4];
        assert!(invert_block::<f32, 8>(2, &mut zero));
        let mut nan = [1.0, f64::NAN, 0.0, 1.0];
        assert!(invert_block::<f64, 8>(2, &mut nan));
        // A tiny pivot whose reciprocal overflows f32.
        let mut tiny = [1e-45f32];
        assert!(invert_block::<f32, 8>(1, &mut tiny));
        for b in [1, 5] {
            let mut x: std::vec::Vec<f64> = (0..b * b).map(|e| 1.0 + (e * e % 7) as f64).collect();
            for d in 0..b {
                x[d * b + d] += 10.0;
            }
            let mut y = x.clone();
            assert!(!invert_block_sized(b, &mut x));
            assert!(!invert_block::<f64, 8>(b, &mut y));
            assert_eq!(x, y, "b = {b}: the sized and the generic capacity agree");
        }
        let mut too_big = [1.0f64; 81];
        assert!(invert_block_sized(9, &mut too_big));
        assert!(invert_block::<f64, 8>(9, &mut too_big));
        assert_eq!(too_big, [1.0; 81], "b > N leaves the block alone");
        let mut empty: [f64; 0] = [];
        assert!(!invert_block::<f64, 8>(0, &mut empty));
    }

    #[test]
    fn complex_reciprocal() {
        for z in [
            Complex::new(3.0, 4.0),
            Complex::new(-0.5, 2.0),
            Complex::new(1e300, 1e300),
            Complex::new(0.0, -2.0),
        ] {
            let r: Complex<f64> = recip(z);
            let one = r * z;
            assert!(
                (one.re - 1.0).abs() < 1e-15 && one.im.abs() < 1e-15,
                "{z} {r}"
            );
        }
    }

    #[test]
    fn apply_block_is_block_mul_add_from_zero() {
        let inv = [0.5f64, -1.25, 2.0, 0.125, 1.5, -0.75, 0.3, 0.7, -0.1];
        let x = [
            Complex::new(0.3, -1.0),
            Complex::new(1.7, 0.2),
            Complex::new(-2.5, 0.9),
        ];
        let mut y = [Complex::new(f64::NAN, 0.0); 3];
        apply_block(&mut y, &inv, &x);
        let mut want = [Complex::new(0.0, 0.0); 3];
        block_mul_add(&mut want, &inv, &x);
        assert_eq!(y, want);
    }
}
