//! cuSPARSE: CSR SpMV with the generic API (`cusparseSpMV`) and BSR SpMV with the legacy
//! `cusparse<t>bsrmv`. The raw calls live in the host crate
//! ([`ferrocuda_host::vendor::cusparse`]); this module converts ferrocuda's formats.
//!
//! Index arrays are converted to `i32` on upload (cuSPARSE's 32-bit index type), so
//! matrices with more than `i32::MAX` stored entries are rejected.

use ferrocuda_host::vendor::cusparse as raw;
use ferrocuda_host::{DeviceBuffer, Gpu};

pub use raw::{CusparseBsr, CusparseCsr};

use crate::blas1::Element;
use crate::error::{Error, Result};
use crate::sparse::{Bcsr, BlockLayout, Csr, Index};

/// Scalars cuSPARSE computes with: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub trait CusparseScalar: Element + raw::CusparseScalar {}

impl<T: Element + raw::CusparseScalar> CusparseScalar for T {}

/// A cuSPARSE handle bound to one stream of one GPU.
#[derive(Debug)]
pub struct Cusparse(raw::Cusparse);

/// `v` as cuSPARSE's `i32`, naming the value where it does not fit.
fn to_i32(what: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::InvalidArgument {
        op: "cuSPARSE upload",
        reason: format!("{what} = {v} exceeds cuSPARSE's 32-bit indices"),
    })
}

/// Offsets and column indices as cuSPARSE's `i32`.
fn indices(row_ptr: &[usize], col_idx: &[Index]) -> Result<(Vec<i32>, Vec<i32>)> {
    to_i32("stored entries", col_idx.len())?;
    let rows = row_ptr
        .iter()
        .map(|&p| to_i32("row offset", p))
        .collect::<Result<_>>()?;
    let cols = col_idx
        .iter()
        .map(|&c| to_i32("column", c as usize))
        .collect::<Result<_>>()?;
    Ok((rows, cols))
}

impl Cusparse {
    /// Loads cuSPARSE and creates a handle on `gpu`'s stream. Errors:
    /// [`Error::Vendor`] where the library is missing or does not initialise.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Cusparse(raw::Cusparse::new(gpu)?))
    }

    /// Uploads a CSR matrix in cuSPARSE's form (`i32` indices).
    pub fn upload_csr<T: CusparseScalar>(&self, a: &Csr<T>) -> Result<CusparseCsr<T>> {
        let (row_ptr, col_idx) = indices(a.row_ptr(), a.col_idx())?;
        Ok(self.0.upload_csr(&raw::Compressed {
            rows: a.n_rows(),
            cols: a.n_cols(),
            block: 1,
            order: raw::BlockOrder::RowMajor,
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: a.values(),
        })?)
    }

    /// `y <- alpha A x + beta y` with `cusparseSpMV` (default algorithm). The first call
    /// allocates the workspace cuSPARSE asks for; later calls reuse it.
    pub fn spmv_csr<T: CusparseScalar>(
        &self,
        alpha: T,
        a: &mut CusparseCsr<T>,
        x: &DeviceBuffer<T>,
        beta: T,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Ok(self.0.spmv_csr(alpha, a, x, beta, y)?)
    }

    /// Uploads a BCSR matrix as cuSPARSE BSR (`i32` indices, same block layout).
    pub fn upload_bsr<T: CusparseScalar>(&self, a: &Bcsr<T>) -> Result<CusparseBsr<T>> {
        let (row_ptr, col_idx) = indices(a.row_ptr(), a.col_idx())?;
        Ok(self.0.upload_bsr(&raw::Compressed {
            rows: a.n_block_rows(),
            cols: a.n_block_cols(),
            block: a.b(),
            order: match a.layout() {
                BlockLayout::RowMajor => raw::BlockOrder::RowMajor,
                BlockLayout::ColMajor => raw::BlockOrder::ColMajor,
            },
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: a.values(),
        })?)
    }

    /// `y <- alpha A x + beta y` with `cusparse<t>bsrmv`.
    pub fn spmv_bsr<T: CusparseScalar>(
        &self,
        alpha: T,
        a: &CusparseBsr<T>,
        x: &DeviceBuffer<T>,
        beta: T,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Ok(self.0.spmv_bsr(alpha, a, x, beta, y)?)
    }
}
