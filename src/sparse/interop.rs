//! Conversions to and from nalgebra-sparse's `CsrMatrix` and `CooMatrix`.
//!
//! ```
//! use ferrocuda::sparse::{Coo, Csr};
//! let mut coo = Coo::<f64>::empty(2, 3)?;
//! coo.push(0, 2, 1.5)?;
//! let a = Csr::from(&coo);
//! let n = nalgebra_sparse::CsrMatrix::try_from(&a)?;
//! assert_eq!(n.nnz(), 1);
//! assert_eq!(Csr::try_from(&n)?, a);
//! # Ok::<(), ferrocuda::sparse::SparseError>(())
//! ```

use nalgebra_sparse::{CooMatrix, CsrMatrix};

use super::{Coo, Csr, Element, Index, SparseError};

fn index(op: &'static str, what: &'static str, v: usize) -> Result<Index, SparseError> {
    Index::try_from(v).map_err(|_| SparseError::InvalidArgument {
        op,
        reason: format!("{what} {v} exceeds the index type (u32)"),
    })
}

fn rejected(op: &'static str, e: impl std::fmt::Display) -> SparseError {
    SparseError::InvalidArgument {
        op,
        reason: e.to_string(),
    }
}

impl<T: Element + nalgebra::Scalar> TryFrom<&Csr<T>> for CsrMatrix<T> {
    type Error = SparseError;
    /// Copies the arrays; fails only where nalgebra-sparse rejects them (it cannot here:
    /// both formats require sorted, unique columns per row).
    fn try_from(a: &Csr<T>) -> Result<Self, SparseError> {
        let cols = a.col_idx().iter().map(|&c| c as usize).collect();
        CsrMatrix::try_from_csr_data(
            a.n_rows(),
            a.n_cols(),
            a.row_ptr().to_vec(),
            cols,
            a.values().to_vec(),
        )
        .map_err(|e| rejected("CsrMatrix::try_from(&Csr)", e))
    }
}

impl<T: Element + nalgebra::Scalar> TryFrom<&CsrMatrix<T>> for Csr<T> {
    type Error = SparseError;
    /// Copies the arrays. Errors: a dimension or column beyond `u32`.
    fn try_from(a: &CsrMatrix<T>) -> Result<Self, SparseError> {
        let op = "Csr::try_from(&CsrMatrix)";
        index(op, "column count", a.ncols())?;
        index(op, "row count", a.nrows())?;
        let cols = a
            .col_indices()
            .iter()
            .map(|&c| index(op, "column", c))
            .collect::<Result<Vec<_>, _>>()?;
        Csr::try_new(
            a.nrows(),
            a.ncols(),
            a.row_offsets().to_vec(),
            cols,
            a.values().to_vec(),
        )
        .map_err(|r| r.error)
    }
}

impl<T: Element + nalgebra::Scalar> TryFrom<&Coo<T>> for CooMatrix<T> {
    type Error = SparseError;
    /// Copies the triplets (duplicates stay duplicates; both sum them on conversion).
    fn try_from(a: &Coo<T>) -> Result<Self, SparseError> {
        let rows = a.rows().iter().map(|&r| r as usize).collect();
        let cols = a.cols().iter().map(|&c| c as usize).collect();
        CooMatrix::try_from_triplets(a.n_rows(), a.n_cols(), rows, cols, a.values().to_vec())
            .map_err(|e| rejected("CooMatrix::try_from(&Coo)", e))
    }
}

impl<T: Element + nalgebra::Scalar> TryFrom<&CooMatrix<T>> for Coo<T> {
    type Error = SparseError;
    /// Copies the triplets. Errors: a dimension beyond `u32`.
    fn try_from(a: &CooMatrix<T>) -> Result<Self, SparseError> {
        let mut out = Coo::empty(a.nrows(), a.ncols())?;
        for (r, c, &v) in a.triplet_iter() {
            out.push(r, c, v)?;
        }
        Ok(out)
    }
}
