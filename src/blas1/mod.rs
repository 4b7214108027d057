//! BLAS level 1 on the CPU (rayon) and the GPU, with matching signatures.
//!
//! | operation | math | [`cpu`] | [`gpu`] |
//! |---|---|---|---|
//! | fill | `x_i <- value` | [`cpu::fill`] | [`gpu::fill`] |
//! | scal | `x <- alpha x` | [`cpu::scal`] | [`gpu::scal`] |
//! | axpy | `y <- alpha x + y` | [`cpu::axpy`] | [`gpu::axpy`] |
//! | axpby | `y <- alpha x + beta y` | [`cpu::axpby`] | [`gpu::axpby`] |
//! | copy | `y <- x` | [`cpu::copy`] | [`gpu::copy`] |
//! | dot | `sum conj(x_i) y_i` | [`cpu::dot`] | [`gpu::dot`], [`gpu::dot_into`] |
//! | nrm2 | `sqrt(sum abs(x_i)^2)` | [`cpu::nrm2`] | [`gpu::nrm2`], [`gpu::nrm2_into`] |
//! | multi-dot | `out_j = dot(x, y_j)`, `y_j = ys[j n .. (j+1) n]` | [`cpu::multi_dot`] | [`gpu::multi_dot`] |
//!
//! Scalars: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`. The per-element math is
//! `ferrocuda_kernels::blas1`, shared by both paths, so element-wise results agree bit
//! for bit; reductions agree within rounding (different summation trees), and each path
//! is deterministic on its own: same input, same bits. [`reference`](mod@reference) is a serial oracle
//! that accumulates in `f64` for the tests.
//!
//! ```
//! use ferrocuda::blas1::cpu;
//! let x = vec![1.0_f64, 2.0, 3.0];
//! let mut y = vec![1.0_f64; 3];
//! cpu::axpy(2.0, &x, &mut y)?;
//! assert_eq!(y, [3.0, 5.0, 7.0]);
//! assert_eq!(cpu::dot(&x, &y)?, 3.0 + 10.0 + 21.0);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

pub mod cpu;
pub mod gpu;
pub mod reference;

use bytemuck::Pod;

use crate::error::{Error, Result, check_len};
use ferrocuda_kernels::blas1::Blas1Kernels;
use ferrocuda_kernels::krylov::CompressedBasis;
pub use ferrocuda_kernels::{Complex, RealScalar, Scalar};

/// A scalar type with CPU and GPU BLAS-1 paths: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub trait Element: Scalar<Real: Pod> + Blas1Kernels + Pod + CompressedBasis {}
impl<T: Scalar<Real: Pod> + Blas1Kernels + Pod + CompressedBasis> Element for T {}

/// `k * n`, the length `ys` must have, or an error where it overflows.
fn multi_dot_len(k: usize, n: usize) -> Result<usize> {
    k.checked_mul(n).ok_or_else(|| Error::InvalidArgument {
        op: "multi_dot",
        reason: format!("{k} vectors of length {n} overflow the address space"),
    })
}

/// The shape rules of `multi_dot`, shared by the CPU and GPU paths: `k = out_len >= 1`
/// vectors, `ys_len == k * n`.
pub(crate) fn check_multi_dot_shape(n: usize, ys_len: usize, out_len: usize) -> Result<()> {
    if out_len == 0 {
        return Err(Error::Empty {
            op: "multi_dot",
            what: "out (one entry per vector)",
        });
    }
    check_len(
        "multi_dot",
        "ys (out.len() vectors of x.len())",
        multi_dot_len(out_len, n)?,
        ys_len,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_dot_length_overflow_is_an_error() {
        assert!(super::multi_dot_len(usize::MAX, 2).is_err());
        assert_eq!(super::multi_dot_len(3, 5).ok(), Some(15));
    }
}
