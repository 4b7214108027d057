//! cuSPARSE through cudarc's raw bindings: CSR SpMV with the generic API
//! (`cusparseSpMV`) and BSR SpMV with the legacy `cusparse<t>bsrmv`.
//!
//! Index arrays are converted to `i32` on upload (cuSPARSE's 32-bit index type), so
//! matrices with more than `i32::MAX` stored entries are rejected.

use std::ffi::c_void;

use cudarc::cusparse::sys as cs;
use ferrocuda_host::{DeviceBuffer, DeviceSlice, Gpu};

use crate::Complex;
use crate::blas1::Element;
use crate::error::{Error, Result, check_len};
use crate::sparse::{Bcsr, BlockLayout, Csr};

const LIB: &str = "cuSPARSE";

/// Host scalars handed to cuSPARSE by pointer. `cuDoubleComplex` is CUDA's `double2`,
/// 16-byte aligned, and cuSPARSE's host code loads it with aligned instructions: a
/// `Complex<f64>` on the stack (8-byte aligned) crashed `cusparseSpMV` with SIGSEGV.
#[repr(C, align(16))]
struct Aligned<T>(T);

fn check(call: &'static str, status: cs::cusparseStatus_t) -> Result<()> {
    if status == cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Vendor {
            library: LIB,
            call,
            status: format!("{status:?}"),
        })
    }
}

fn to_i32(what: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::InvalidArgument {
        op: "cuSPARSE upload",
        reason: format!("{what} = {v} exceeds cuSPARSE's 32-bit indices"),
    })
}

/// Scalars cuSPARSE computes with.
pub trait CusparseScalar: Element {
    /// The `cudaDataType` of the values.
    const DATA_TYPE: cs::cudaDataType;
    /// `cusparse<t>bsrmv` for this type.
    ///
    /// # Safety
    /// As the cuSPARSE function, with device pointers valid for the sizes given.
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
                // SAFETY: forwarded; `$t` and `$ct` have the same layout.
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

/// A cuSPARSE handle bound to one stream of one GPU.
pub struct Cusparse {
    gpu: Gpu,
    handle: cs::cusparseHandle_t,
}

impl Cusparse {
    /// Loads cuSPARSE and creates a handle on `gpu`'s stream. Errors:
    /// [`Error::Vendor`] where the library is missing or does not initialise.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library (cudarc panics later without it).
        if !unsafe { cs::is_culib_present() } {
            return Err(Error::Vendor {
                library: LIB,
                call: "load",
                status: "libcusparse.so not found".into(),
            });
        }
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation; stream set right after.
        check("cusparseCreate", unsafe { cs::cusparseCreate(&mut handle) })?;
        let this = Cusparse {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: the stream outlives the handle (the Gpu clone keeps it alive).
        check("cusparseSetStream", unsafe {
            cs::cusparseSetStream(handle, gpu.raw_stream() as cs::cudaStream_t)
        })?;
        Ok(this)
    }

    /// Uploads a CSR matrix in cuSPARSE's form (`i32` indices).
    pub fn upload_csr<T: CusparseScalar>(&self, a: &Csr<T>) -> Result<CusparseCsr<T>> {
        to_i32("nnz", a.nnz())?;
        let row_ptr: Vec<i32> = a.row_ptr().iter().map(|&p| p as i32).collect();
        let col_idx: Vec<i32> = a
            .col_idx()
            .iter()
            .map(|&c| to_i32("column", c as usize))
            .collect::<Result<_>>()?;
        let mut m = CusparseCsr {
            n_rows: a.n_rows(),
            n_cols: a.n_cols(),
            row_ptr: self.gpu.upload(&row_ptr)?,
            col_idx: self.gpu.upload(&col_idx)?,
            values: self.gpu.upload(a.values())?,
            descr: std::ptr::null_mut(),
            workspace: None,
        };
        self.gpu.bind_to_thread()?;
        // SAFETY: the arrays live as long as the descriptor (both owned by `m`).
        check("cusparseCreateCsr", unsafe {
            cs::cusparseCreateCsr(
                &mut m.descr,
                a.n_rows() as i64,
                a.n_cols() as i64,
                a.nnz() as i64,
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
        check_len("cusparse spmv_csr", "x", a.n_cols, x.len())?;
        check_len("cusparse spmv_csr", "y", a.n_rows, y.len())?;
        self.gpu.bind_to_thread()?;
        let (mut vx, mut vy) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: descriptors over live buffers of the checked lengths, destroyed below.
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
            // SAFETY: valid handle and descriptors.
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

    /// Uploads a BCSR matrix as cuSPARSE BSR (`i32` indices, same block layout).
    pub fn upload_bsr<T: CusparseScalar>(&self, a: &Bcsr<T>) -> Result<CusparseBsr<T>> {
        let nnzb = a.nnz_blocks();
        to_i32("blocks", nnzb)?;
        to_i32("block rows", a.n_block_rows())?;
        to_i32("block columns", a.n_block_cols())?;
        let row_ptr: Vec<i32> = a.row_ptr().iter().map(|&p| p as i32).collect();
        let col_idx: Vec<i32> = a.col_idx().iter().map(|&c| c as i32).collect();
        let mut descr = std::ptr::null_mut();
        self.gpu.bind_to_thread()?;
        // SAFETY: plain descriptor creation (general matrix, base 0 are the defaults).
        check("cusparseCreateMatDescr", unsafe {
            cs::cusparseCreateMatDescr(&mut descr)
        })?;
        Ok(CusparseBsr {
            b: a.b(),
            layout: a.layout(),
            n_block_rows: a.n_block_rows(),
            n_block_cols: a.n_block_cols(),
            nnzb,
            row_ptr: self.gpu.upload(&row_ptr)?,
            col_idx: self.gpu.upload(&col_idx)?,
            values: self.gpu.upload(a.values())?,
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
        check_len("cusparse spmv_bsr", "x", a.n_block_cols * a.b, x.len())?;
        check_len("cusparse spmv_bsr", "y", a.n_block_rows * a.b, y.len())?;
        let dir = match a.layout {
            BlockLayout::RowMajor => cs::cusparseDirection_t::CUSPARSE_DIRECTION_ROW,
            BlockLayout::ColMajor => cs::cusparseDirection_t::CUSPARSE_DIRECTION_COLUMN,
        };
        self.gpu.bind_to_thread()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // SAFETY: arrays of the sizes cuSPARSE reads (checked above and at upload).
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

/// A BCSR matrix uploaded for cuSPARSE's BSR routines.
pub struct CusparseBsr<T> {
    b: usize,
    layout: BlockLayout,
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
