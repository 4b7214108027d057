//! cuSPARSE: CSR SpMV with the generic API (`cusparseSpMV`) and BSR SpMV with the legacy
//! `cusparse<t>bsrmv`, on matrices uploaded with cuSPARSE's 32-bit indices.
//!
//! The uploads check the index arrays on the host (offsets non-decreasing and ending at
//! the entry count, column indices in range), so a matrix handed to cuSPARSE is always
//! one it reads inside its buffers.

use std::ffi::c_void;

use bytemuck::Pod;
use cudarc::cusparse::sys as cs;
use ferrocuda_kernels::Complex;

use super::{check as check_as, loaded, to_i32};
use crate::error::{Error, Result, check_device, check_len};
use crate::{DeviceBuffer, DeviceSlice, Gpu};

const LIB: &str = "cuSPARSE";

fn check(call: &'static str, status: cs::cusparseStatus_t) -> Result<()> {
    check_as(
        LIB,
        call,
        status == cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS,
        status,
    )
}

/// Host scalars handed to cuSPARSE by pointer. `cuDoubleComplex` is CUDA's `double2`,
/// 16-byte aligned, and cuSPARSE's host code loads it with aligned instructions: a
/// `Complex<f64>` on the stack (8-byte aligned) crashed `cusparseSpMV` with SIGSEGV.
#[repr(C, align(16))]
struct Aligned<T>(T);

mod sealed {
    pub trait Sealed {}
}

/// Scalars cuSPARSE computes with: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
/// Sealed: the data type must match the element's layout, which only this crate vouches for.
pub trait CusparseScalar: Pod + sealed::Sealed {
    /// The `cudaDataType` of the values.
    #[doc(hidden)]
    const DATA_TYPE: cs::cudaDataType;
    /// `cusparse<t>bsrmv` for this type.
    ///
    /// # Safety
    /// As the cuSPARSE function, with device pointers valid for the sizes given.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn bsrmv(
        handle: cs::cusparseHandle_t,
        dir: cs::cusparseDirection_t,
        mb: i32,
        nb: i32,
        nnzb: i32,
        alpha: &Self,
        descr: cs::cusparseMatDescr_t,
        values: u64,
        row_ptr: u64,
        col_ind: u64,
        block_dim: i32,
        x: u64,
        beta: &Self,
        y: u64,
    ) -> cs::cusparseStatus_t;
}

macro_rules! cusparse_scalar {
    ($t:ty, $dt:ident, $bsrmv:ident, $ct:ty) => {
        impl sealed::Sealed for $t {}
        impl CusparseScalar for $t {
            const DATA_TYPE: cs::cudaDataType = cs::cudaDataType::$dt;
            unsafe fn bsrmv(
                handle: cs::cusparseHandle_t,
                dir: cs::cusparseDirection_t,
                mb: i32,
                nb: i32,
                nnzb: i32,
                alpha: &Self,
                descr: cs::cusparseMatDescr_t,
                values: u64,
                row_ptr: u64,
                col_ind: u64,
                block_dim: i32,
                x: u64,
                beta: &Self,
                y: u64,
            ) -> cs::cusparseStatus_t {
                // SAFETY: forwarded under the caller's contract; `$t` and `$ct` have
                // the same layout (CUDA's complex types are `#[repr(C)]` pairs).
                unsafe {
                    cs::$bsrmv(
                        handle,
                        dir,
                        cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                        mb,
                        nb,
                        nnzb,
                        alpha as *const $t as *const $ct,
                        descr,
                        values as *const $ct,
                        row_ptr as *const i32,
                        col_ind as *const i32,
                        block_dim,
                        x as *const $ct,
                        beta as *const $t as *const $ct,
                        y as *mut $ct,
                    )
                }
            }
        }
    };
}

cusparse_scalar!(f32, CUDA_R_32F, cusparseSbsrmv, f32);
cusparse_scalar!(f64, CUDA_R_64F, cusparseDbsrmv, f64);
cusparse_scalar!(Complex<f32>, CUDA_C_32F, cusparseCbsrmv, cs::cuComplex);
cusparse_scalar!(
    Complex<f64>,
    CUDA_C_64F,
    cusparseZbsrmv,
    cs::cuDoubleComplex
);

/// A compressed sparse matrix on the host with cuSPARSE's `i32` indices: CSR where
/// `block == 1`, else BSR with `block x block` blocks stored in `order`.
#[derive(Debug, Clone, Copy)]
pub struct Compressed<'a, T> {
    /// Rows (block rows for BSR).
    pub rows: usize,
    /// Columns (block columns for BSR).
    pub cols: usize,
    /// Block size (1: CSR).
    pub block: usize,
    /// Layout of the entries inside a block (ignored for CSR).
    pub order: BlockOrder,
    /// `rows + 1` offsets into `col_idx`, non-decreasing from 0.
    pub row_ptr: &'a [i32],
    /// Column (block column) of each stored entry (block), below `cols`.
    pub col_idx: &'a [i32],
    /// `block * block` values per entry of `col_idx`.
    pub values: &'a [T],
}

/// The layout of the entries inside a BSR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockOrder {
    /// Row by row.
    RowMajor,
    /// Column by column.
    ColMajor,
}

impl<T> Compressed<'_, T> {
    /// Checks that cuSPARSE reads only inside the arrays, naming the first bad value.
    fn validate(&self, op: &'static str) -> Result<()> {
        let invalid = |reason: String| Error::InvalidArgument { op, reason };
        to_i32(op, "rows", self.rows)?;
        to_i32(op, "columns", self.cols)?;
        to_i32(op, "block size", self.block)?;
        check_len(op, "row offsets", self.rows + 1, self.row_ptr.len())?;
        let entries = self.col_idx.len();
        to_i32(op, "stored entries", entries)?;
        let per_entry = self.block.checked_mul(self.block);
        let values = per_entry.and_then(|p| p.checked_mul(entries));
        check_len(
            op,
            "values",
            values.unwrap_or(usize::MAX),
            self.values.len(),
        )?;
        if self.row_ptr[0] != 0 || self.row_ptr[self.rows] as usize != entries {
            return Err(invalid(format!(
                "row offsets run from {} to {}, expected 0 to {entries}",
                self.row_ptr[0], self.row_ptr[self.rows]
            )));
        }
        if let Some(i) = self.row_ptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(invalid(format!(
                "row offset {} = {} is below offset {} = {}",
                i + 1,
                self.row_ptr[i + 1],
                i,
                self.row_ptr[i]
            )));
        }
        if let Some(k) = self
            .col_idx
            .iter()
            .position(|&c| c < 0 || c as usize >= self.cols)
        {
            return Err(invalid(format!(
                "column index {} of entry {k} is outside 0..{}",
                self.col_idx[k], self.cols
            )));
        }
        Ok(())
    }
}

/// A cuSPARSE handle bound to one stream of one GPU.
pub struct Cusparse {
    gpu: Gpu,
    handle: cs::cusparseHandle_t,
}

impl std::fmt::Debug for Cusparse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cusparse")
            .field("device", &self.gpu.ordinal())
            .finish()
    }
}

impl Cusparse {
    /// Loads cuSPARSE and creates a handle on `gpu`'s stream. Errors:
    /// [`Error::Vendor`] where the library is missing or does not initialise.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        loaded(LIB, "libcusparse.so", unsafe { cs::is_culib_present() })?;
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation into a local out-pointer; stream set right after.
        check("cusparseCreate", unsafe { cs::cusparseCreate(&mut handle) })?;
        // Owned from here on: an error below destroys it in `Drop`.
        let this = Cusparse {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: a valid handle; the stream outlives it (`this.gpu` keeps it alive).
        check("cusparseSetStream", unsafe {
            cs::cusparseSetStream(handle, gpu.raw_stream() as cs::cudaStream_t)
        })?;
        Ok(this)
    }

    /// The handle's GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Uploads a CSR matrix (`a.block` must be 1). Errors: arrays that do not form a
    /// CSR matrix, sizes beyond 32 bits, device memory.
    pub fn upload_csr<T: CusparseScalar>(&self, a: &Compressed<'_, T>) -> Result<CusparseCsr<T>> {
        const OP: &str = "cuSPARSE upload_csr";
        check_len(OP, "block size", 1, a.block)?;
        a.validate(OP)?;
        let mut m = CusparseCsr {
            n_rows: a.rows,
            n_cols: a.cols,
            row_ptr: self.gpu.upload(a.row_ptr)?,
            col_idx: self.gpu.upload(a.col_idx)?,
            values: self.gpu.upload(a.values)?,
            descr: std::ptr::null_mut(),
            workspace: None,
        };
        self.gpu.bind_to_thread()?;
        // SAFETY: arrays validated above, owned by `m`, which also owns (and destroys)
        // the descriptor, so they outlive it.
        check("cusparseCreateCsr", unsafe {
            cs::cusparseCreateCsr(
                &mut m.descr,
                a.rows as i64,
                a.cols as i64,
                a.col_idx.len() as i64,
                m.row_ptr.device_ptr() as *mut c_void,
                m.col_idx.device_ptr() as *mut c_void,
                m.values.device_ptr() as *mut c_void,
                cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                cs::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                T::DATA_TYPE,
            )
        })?;
        Ok(m)
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
        const OP: &str = "cusparse spmv_csr";
        self.check_operands(OP, a.values.gpu(), x, y)?;
        check_len(OP, "x", a.n_cols, x.len())?;
        check_len(OP, "y", a.n_rows, y.len())?;
        self.gpu.bind_to_thread()?;
        let (mut vx, mut vy) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: descriptors over live buffers of the checked lengths on this handle's
        // device, destroyed before they go out of scope.
        unsafe {
            check(
                "cusparseCreateDnVec",
                cs::cusparseCreateDnVec(
                    &mut vx,
                    x.len() as i64,
                    x.device_ptr() as *mut c_void,
                    T::DATA_TYPE,
                ),
            )?;
            let made_y = cs::cusparseCreateDnVec(
                &mut vy,
                y.len() as i64,
                y.device_ptr() as *mut c_void,
                T::DATA_TYPE,
            );
            let result = check("cusparseCreateDnVec", made_y)
                .and_then(|()| self.spmv_with(alpha, a, vx, beta, vy));
            cs::cusparseDestroyDnVec(vx);
            if !vy.is_null() {
                cs::cusparseDestroyDnVec(vy);
            }
            result
        }
    }

    /// Matrix and vectors on this handle's device.
    fn check_operands<T>(
        &self,
        op: &'static str,
        a: &Gpu,
        x: &DeviceBuffer<T>,
        y: &DeviceBuffer<T>,
    ) -> Result<()> {
        check_device(op, "A", &self.gpu, a)?;
        check_device(op, "x", &self.gpu, x.gpu())?;
        check_device(op, "y", &self.gpu, y.gpu())
    }

    /// # Safety
    /// `vx`, `vy`: live dense-vector descriptors of `a`'s column and row counts.
    unsafe fn spmv_with<T: CusparseScalar>(
        &self,
        alpha: T,
        a: &mut CusparseCsr<T>,
        vx: cs::cusparseDnVecDescr_t,
        beta: T,
        vy: cs::cusparseDnVecDescr_t,
    ) -> Result<()> {
        let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let alg = cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        let (ap, bp) = (
            &alpha.0 as *const T as *const c_void,
            &beta.0 as *const T as *const c_void,
        );
        if a.workspace.is_none() {
            let mut bytes = 0usize;
            // SAFETY: valid handle and descriptors (the caller's contract).
            check("cusparseSpMV_bufferSize", unsafe {
                cs::cusparseSpMV_bufferSize(
                    self.handle,
                    op,
                    ap,
                    a.descr,
                    vx,
                    bp,
                    vy,
                    T::DATA_TYPE,
                    alg,
                    &mut bytes,
                )
            })?;
            a.workspace = Some(self.gpu.alloc::<u8>(bytes.max(1))?);
        }
        let ws = a.workspace.as_ref().map_or(0, |w| w.device_ptr());
        // SAFETY: valid handle, descriptors and workspace of the size cuSPARSE asked for.
        check("cusparseSpMV", unsafe {
            cs::cusparseSpMV(
                self.handle,
                op,
                ap,
                a.descr,
                vx,
                bp,
                vy,
                T::DATA_TYPE,
                alg,
                ws as *mut c_void,
            )
        })
    }

    /// Uploads a BSR matrix. Errors: arrays that do not form a BSR matrix, sizes beyond
    /// 32 bits, device memory.
    pub fn upload_bsr<T: CusparseScalar>(&self, a: &Compressed<'_, T>) -> Result<CusparseBsr<T>> {
        a.validate("cuSPARSE upload_bsr")?;
        let row_ptr = self.gpu.upload(a.row_ptr)?;
        let col_idx = self.gpu.upload(a.col_idx)?;
        let values = self.gpu.upload(a.values)?;
        let mut descr = std::ptr::null_mut();
        self.gpu.bind_to_thread()?;
        // SAFETY: plain descriptor creation (general matrix, base 0 are the defaults);
        // the matrix below owns and destroys it.
        check("cusparseCreateMatDescr", unsafe {
            cs::cusparseCreateMatDescr(&mut descr)
        })?;
        Ok(CusparseBsr {
            b: a.block,
            order: a.order,
            n_block_rows: a.rows,
            n_block_cols: a.cols,
            nnzb: a.col_idx.len(),
            row_ptr,
            col_idx,
            values,
            descr,
        })
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
        const OP: &str = "cusparse spmv_bsr";
        self.check_operands(OP, a.values.gpu(), x, y)?;
        check_len(OP, "x", a.n_block_cols * a.b, x.len())?;
        check_len(OP, "y", a.n_block_rows * a.b, y.len())?;
        let dir = match a.order {
            BlockOrder::RowMajor => cs::cusparseDirection_t::CUSPARSE_DIRECTION_ROW,
            BlockOrder::ColMajor => cs::cusparseDirection_t::CUSPARSE_DIRECTION_COLUMN,
        };
        self.gpu.bind_to_thread()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // SAFETY: arrays validated at upload, vectors of the checked lengths, all on
        // this handle's device; sizes fit i32 (checked at upload).
        check("cusparse<t>bsrmv", unsafe {
            T::bsrmv(
                self.handle,
                dir,
                a.n_block_rows as i32,
                a.n_block_cols as i32,
                a.nnzb as i32,
                &alpha.0,
                a.descr,
                a.values.device_ptr(),
                a.row_ptr.device_ptr(),
                a.col_idx.device_ptr(),
                a.b as i32,
                x.device_ptr(),
                &beta.0,
                y.device_ptr(),
            )
        })
    }
}

impl Drop for Cusparse {
    fn drop(&mut self) {
        if self.gpu.bind_to_thread().is_ok() {
            // SAFETY: created in `new`, destroyed once.
            unsafe { cs::cusparseDestroy(self.handle) };
        }
    }
}

/// A CSR matrix uploaded for cuSPARSE.
pub struct CusparseCsr<T> {
    n_rows: usize,
    n_cols: usize,
    row_ptr: DeviceBuffer<i32>,
    col_idx: DeviceBuffer<i32>,
    values: DeviceBuffer<T>,
    descr: cs::cusparseSpMatDescr_t,
    workspace: Option<DeviceBuffer<u8>>,
}

impl<T> CusparseCsr<T> {
    /// Device bytes of values and indices.
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * 4 + self.col_idx.len() * 4 + self.values.len() * size_of::<T>()
    }
}

impl<T> Drop for CusparseCsr<T> {
    fn drop(&mut self) {
        if !self.descr.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once.
            unsafe { cs::cusparseDestroySpMat(self.descr) };
        }
    }
}

/// A BSR matrix uploaded for cuSPARSE.
pub struct CusparseBsr<T> {
    b: usize,
    order: BlockOrder,
    n_block_rows: usize,
    n_block_cols: usize,
    nnzb: usize,
    row_ptr: DeviceBuffer<i32>,
    col_idx: DeviceBuffer<i32>,
    values: DeviceBuffer<T>,
    descr: cs::cusparseMatDescr_t,
}

impl<T> Drop for CusparseBsr<T> {
    fn drop(&mut self) {
        if !self.descr.is_null() {
            // SAFETY: created by cusparseCreateMatDescr, destroyed once.
            unsafe { cs::cusparseDestroyMatDescr(self.descr) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 2 x 3 CSR matrix [[1, 0, 2], [0, 3, 0]], with arrays to break.
    fn csr<'a>(row_ptr: &'a [i32], col_idx: &'a [i32], values: &'a [f64]) -> Compressed<'a, f64> {
        Compressed {
            rows: 2,
            cols: 3,
            block: 1,
            order: BlockOrder::RowMajor,
            row_ptr,
            col_idx,
            values,
        }
    }

    fn reason(a: Compressed<'_, f64>) -> String {
        a.validate("test").unwrap_err().to_string()
    }

    #[test]
    fn valid_arrays_pass() {
        assert!(
            csr(&[0, 2, 3], &[0, 2, 1], &[1.0, 2.0, 3.0])
                .validate("test")
                .is_ok()
        );
    }

    #[test]
    fn arrays_cusparse_would_read_outside_are_rejected() {
        let v = [1.0, 2.0, 3.0];
        assert!(
            reason(csr(&[0, 2], &[0, 2, 1], &v)).contains("row offsets has length 2, expected 3")
        );
        assert!(reason(csr(&[0, 2, 4], &[0, 2, 1], &v)).contains("from 0 to 4, expected 0 to 3"));
        assert!(
            reason(csr(&[0, 3, 3], &[0, 3, 1], &v))
                .contains("column index 3 of entry 1 is outside 0..3")
        );
        assert!(reason(csr(&[0, 2, 3], &[0, -1, 1], &v)).contains("column index -1"));
        assert!(
            reason(csr(&[0, 2, 3], &[0, 2, 1], &v[..2]))
                .contains("values has length 2, expected 3")
        );
        let bsr = Compressed {
            block: 2,
            ..csr(&[0, 2, 3], &[0, 2, 1], &v)
        };
        assert!(reason(bsr).contains("values has length 3, expected 12"));
    }

    #[test]
    fn decreasing_offsets_are_rejected() {
        let a = Compressed {
            rows: 3,
            ..csr(&[0, 2, 1, 3], &[0, 2, 1], &[1.0, 2.0, 3.0])
        };
        assert!(reason(a).contains("row offset 2 = 1 is below offset 1 = 2"));
    }
}
