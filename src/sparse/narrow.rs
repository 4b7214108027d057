//! Mixed-precision matrix storage: an `f64` (or `Complex<f64>`) matrix with its values
//! rounded to `f32` (or `Complex<f32>`), to be multiplied with `f64` vectors (the
//! `f32` x `f64` pairs of [`MatrixScalar`](super::MatrixScalar): the value is widened
//! exactly, then the `f64` math, so SpMV moves about half the bytes of the matrix).
//!
//! Rounding is to nearest. A finite value above `f32::MAX` in magnitude is an error that
//! names the entry (never a silent infinity). Values below the smallest normal `f32`
//! (about `1.18e-38`) become subnormal or zero: documented, not an error (their
//! contribution is below `f32`'s relative precision of any row with a normal entry).
//! NaN and infinity stay what they are (solvers reject them before this).
//!
//! ```
//! use ferrocuda::sparse::{Coo, Csr, narrow};
//! let mut coo = Coo::<f64>::empty(2, 2)?;
//! coo.push(0, 0, 0.1)?;
//! coo.push(1, 1, 1e300)?;
//! let a = Csr::from(&coo);
//! let err = narrow::csr_to_f32(&a).unwrap_err();
//! assert!(err.to_string().contains("(1, 1)"));
//! coo = Coo::<f64>::empty(1, 1)?;
//! coo.push(0, 0, 0.1)?;
//! let a32 = narrow::csr_to_f32(&Csr::from(&coo))?;
//! assert_eq!(a32.values(), &[0.1f32]);
//! # Ok::<(), ferrocuda::sparse::SparseError>(())
//! ```

use num_complex::Complex;

use super::{Bcsr, BcsrParts, Csr, CsrParts, Element, SparseError};

/// A full-precision scalar with a single-precision storage type.
pub trait Narrow: Element {
    /// The storage type (`f32` for `f64`, `Complex<f32>` for `Complex<f64>`).
    type Narrow: Element;
    /// Rounded to nearest; `None` where a finite value overflows the narrow type.
    fn narrow(self) -> Option<Self::Narrow>;
    /// The exact widening back (what the mixed SpMV multiplies with).
    fn widen(n: Self::Narrow) -> Self;
}

fn narrow_f64(v: f64) -> Option<f32> {
    let n = v as f32;
    (n.is_finite() || !v.is_finite()).then_some(n)
}

impl Narrow for f64 {
    type Narrow = f32;
    fn narrow(self) -> Option<f32> {
        narrow_f64(self)
    }
    fn widen(n: f32) -> f64 {
        n as f64
    }
}

impl Narrow for Complex<f64> {
    type Narrow = Complex<f32>;
    fn narrow(self) -> Option<Complex<f32>> {
        Some(Complex::new(narrow_f64(self.re)?, narrow_f64(self.im)?))
    }
    fn widen(n: Complex<f32>) -> Complex<f64> {
        Complex::new(n.re as f64, n.im as f64)
    }
}

fn overflow<T: Element>(op: &'static str, row: usize, col: usize, v: T) -> SparseError {
    SparseError::InvalidArgument {
        op,
        reason: format!(
            "entry ({row}, {col}) = {v:?} overflows f32 (|value| > f32::MAX = {:e}); \
             store this matrix in full precision",
            f32::MAX
        ),
    }
}

/// The CSR matrix with its values narrowed (same pattern). Errors: a finite entry beyond
/// `f32::MAX`, named by row and column.
pub fn csr_to_f32<T: Narrow>(a: &Csr<T>) -> Result<Csr<T::Narrow>, SparseError> {
    use rayon::prelude::*;
    const OP: &str = "csr_to_f32";
    const CHUNK: usize = 1 << 16;
    let vals = a.values();
    // The first overflow, named by its row and column; then every value rounds.
    let bad = vals
        .par_chunks(CHUNK)
        .enumerate()
        .find_map_first(|(c, chunk)| {
            let k = chunk.iter().position(|v| v.narrow().is_none())?;
            Some(c * CHUNK + k)
        });
    if let Some(k) = bad {
        let row = a.row_ptr().partition_point(|&o| o <= k) - 1;
        return Err(overflow(OP, row, a.col_idx()[k] as usize, vals[k]));
    }
    let mut values = super::try_with_capacity("f32 values", a.nnz())?;
    values.par_extend(vals.par_iter().map(|v| {
        v.narrow()
            .unwrap_or(<T::Narrow as ferrocuda_kernels::Scalar>::ZERO)
    }));
    let p = a.parts();
    let parts = CsrParts {
        n_rows: p.n_rows,
        n_cols: p.n_cols,
        row_ptr: p.row_ptr.clone(),
        col_idx: p.col_idx.clone(),
        values,
    };
    Csr::from_parts(parts).map_err(|r| r.error)
}

/// The BCSR matrix with its values narrowed (same blocks, same layout). Errors: a finite
/// entry beyond `f32::MAX`, named by scalar row and column.
pub fn bcsr_to_f32<T: Narrow>(a: &Bcsr<T>) -> Result<Bcsr<T::Narrow>, SparseError> {
    const OP: &str = "bcsr_to_f32";
    let p = a.parts();
    let b = p.b;
    let mut values = super::try_with_capacity("f32 values", p.values.len())?;
    for bi in 0..p.n_block_rows {
        for k in p.row_ptr[bi]..p.row_ptr[bi + 1] {
            let block = a.block(k);
            // Storage order, so the narrow blocks keep the layout.
            for r in 0..b {
                for c in 0..b {
                    let v = block[p.layout.offset(b, r, c)];
                    if v.narrow().is_none() {
                        let col = p.col_idx[k] as usize * b + c;
                        return Err(overflow(OP, bi * b + r, col, v));
                    }
                }
            }
            for &v in block {
                values.extend(v.narrow());
            }
        }
    }
    let parts = BcsrParts {
        b,
        layout: p.layout,
        n_block_rows: p.n_block_rows,
        n_block_cols: p.n_block_cols,
        row_ptr: p.row_ptr.clone(),
        col_idx: p.col_idx.clone(),
        values,
    };
    Bcsr::from_parts(parts).map_err(|r| r.error)
}
