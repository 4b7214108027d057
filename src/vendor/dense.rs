//! cuBLAS GEMM and cuSOLVER `getrf` through cudarc's raw bindings: the baselines of the
//! dense LU benchmark, run on the same device buffers in the same run.

use cudarc::cublas::sys as cb;
use cudarc::cusolver::sys as cs;
use ferrocuda_host::{DeviceBuffer, DeviceSlice, Gpu};

use crate::dense::LuScalar;
use crate::error::{Error, Result};

fn to_i32(op: &'static str, what: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::InvalidArgument {
        op,
        reason: format!("{what} = {v} exceeds the vendor library's 32-bit sizes"),
    })
}

fn missing(library: &'static str, file: &str) -> Error {
    Error::Vendor {
        library,
        call: "load",
        status: format!("{file} not found"),
    }
}

/// Scalars with cuBLAS GEMM and cuSOLVER getrf.
pub trait VendorDense: LuScalar {
    /// `cublas<t>gemm_v2`.
    ///
    /// # Safety
    /// As the cuBLAS function.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        h: cb::cublasHandle_t,
        m: i32,
        n: i32,
        k: i32,
        alpha: &Self,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        beta: &Self,
        c: u64,
        ldc: i32,
    ) -> cb::cublasStatus_t;
    /// `cusolverDn<t>getrf_bufferSize`.
    ///
    /// # Safety
    /// As the cuSOLVER function.
    unsafe fn getrf_buffer(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: u64,
        lwork: &mut i32,
    ) -> cs::cusolverStatus_t;
    /// `cusolverDn<t>getrf`.
    ///
    /// # Safety
    /// As the cuSOLVER function.
    unsafe fn getrf(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: u64,
        work: u64,
        ipiv: u64,
        info: u64,
    ) -> cs::cusolverStatus_t;
}

macro_rules! vendor_dense {
    ($t:ty, $gemm:ident, $buf:ident, $getrf:ident) => {
        impl VendorDense for $t {
            unsafe fn gemm(
                h: cb::cublasHandle_t,
                m: i32,
                n: i32,
                k: i32,
                alpha: &Self,
                a: u64,
                lda: i32,
                b: u64,
                ldb: i32,
                beta: &Self,
                c: u64,
                ldc: i32,
            ) -> cb::cublasStatus_t {
                let op = cb::cublasOperation_t::CUBLAS_OP_N;
                // SAFETY: forwarded.
                unsafe {
                    cb::$gemm(
                        h,
                        op,
                        op,
                        m,
                        n,
                        k,
                        alpha,
                        a as *const $t,
                        lda,
                        b as *const $t,
                        ldb,
                        beta,
                        c as *mut $t,
                        ldc,
                    )
                }
            }
            unsafe fn getrf_buffer(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: u64,
                lwork: &mut i32,
            ) -> cs::cusolverStatus_t {
                // SAFETY: forwarded.
                unsafe { cs::$buf(h, n, n, a as *mut $t, n, lwork) }
            }
            unsafe fn getrf(
                h: cs::cusolverDnHandle_t,
                n: i32,
                a: u64,
                work: u64,
                ipiv: u64,
                info: u64,
            ) -> cs::cusolverStatus_t {
                // SAFETY: forwarded.
                unsafe {
                    cs::$getrf(
                        h,
                        n,
                        n,
                        a as *mut $t,
                        n,
                        work as *mut $t,
                        ipiv as *mut i32,
                        info as *mut i32,
                    )
                }
            }
        }
    };
}

vendor_dense!(
    f32,
    cublasSgemm_v2,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf
);
vendor_dense!(
    f64,
    cublasDgemm_v2,
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf
);

/// A cuBLAS handle on one stream.
pub struct Cublas {
    gpu: Gpu,
    handle: cb::cublasHandle_t,
}

impl Cublas {
    /// Loads cuBLAS and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`].
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cb::is_culib_present() } {
            return Err(missing("cuBLAS", "libcublas.so"));
        }
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation.
        let st = unsafe { cb::cublasCreate_v2(&mut handle) };
        if st != cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(vendor("cuBLAS", "cublasCreate_v2", st));
        }
        let this = Cublas {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: the stream outlives the handle (the Gpu clone keeps it alive).
        let st = unsafe { cb::cublasSetStream_v2(handle, gpu.raw_stream() as cb::cudaStream_t) };
        if st != cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(vendor("cuBLAS", "cublasSetStream_v2", st));
        }
        Ok(this)
    }

    /// `C <- alpha A B + beta C` (no transposes), `A` `m x k`, `B` `k x n`, `C` `m x n`,
    /// column-major with leading dimensions equal to the rows. Errors: lengths.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm<T: VendorDense>(
        &self,
        (m, n, k): (usize, usize, usize),
        alpha: T,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        beta: T,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        const OP: &str = "cuBLAS gemm";
        crate::error::check_len(OP, "A", m * k, a.len())?;
        crate::error::check_len(OP, "B", k * n, b.len())?;
        crate::error::check_len(OP, "C", m * n, c.len())?;
        let (mi, ni, ki) = (
            to_i32(OP, "m", m)?,
            to_i32(OP, "n", n)?,
            to_i32(OP, "k", k)?,
        );
        self.gpu.bind_to_thread()?;
        // SAFETY: buffers of the checked lengths on this handle's device.
        let st = unsafe {
            T::gemm(
                self.handle,
                mi,
                ni,
                ki,
                &alpha,
                a.device_ptr(),
                mi.max(1),
                b.device_ptr(),
                ki.max(1),
                &beta,
                c.device_ptr(),
                mi.max(1),
            )
        };
        if st != cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(vendor("cuBLAS", "cublas<t>gemm_v2", st));
        }
        Ok(())
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        let _ = self.gpu.bind_to_thread();
        // SAFETY: created in `new`, destroyed once.
        unsafe { cb::cublasDestroy_v2(self.handle) };
    }
}

/// A cuSOLVER dense handle on one stream, with the `getrf` workspace of one size.
pub struct Cusolver {
    gpu: Gpu,
    handle: cs::cusolverDnHandle_t,
}

fn vendor(library: &'static str, call: &'static str, status: impl std::fmt::Debug) -> Error {
    Error::Vendor {
        library,
        call,
        status: format!("{status:?}"),
    }
}

impl Cusolver {
    /// Loads cuSOLVER and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`].
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cs::is_culib_present() } {
            return Err(missing("cuSOLVER", "libcusolver.so"));
        }
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation.
        let st = unsafe { cs::cusolverDnCreate(&mut handle) };
        if st != cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(vendor("cuSOLVER", "cusolverDnCreate", st));
        }
        let this = Cusolver {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: the stream outlives the handle.
        let st = unsafe { cs::cusolverDnSetStream(handle, gpu.raw_stream() as cs::cudaStream_t) };
        if st != cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(vendor("cuSOLVER", "cusolverDnSetStream", st));
        }
        Ok(this)
    }

    /// A `getrf` workspace for `n x n` matrices (`cusolverDn<t>getrf_bufferSize`).
    pub fn getrf_workspace<T: VendorDense>(
        &self,
        n: usize,
        a: &DeviceBuffer<T>,
    ) -> Result<GetrfWorkspace<T>> {
        const OP: &str = "cuSOLVER getrf";
        crate::error::check_len(OP, "A", n * n, a.len())?;
        let ni = to_i32(OP, "n", n)?;
        let mut lwork = 0i32;
        self.gpu.bind_to_thread()?;
        // SAFETY: a is n x n on this device.
        let st = unsafe { T::getrf_buffer(self.handle, ni, a.device_ptr(), &mut lwork) };
        if st != cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(vendor("cuSOLVER", "cusolverDn<t>getrf_bufferSize", st));
        }
        Ok(GetrfWorkspace {
            n,
            work: self.gpu.alloc(lwork.max(1) as usize)?,
            ipiv: self.gpu.alloc(n)?,
            info: self.gpu.alloc_zeroed(1)?,
        })
    }

    /// `P A = L U` in place with partial pivoting (`cusolverDn<t>getrf`), queued on the
    /// stream; `info` is read with [`GetrfWorkspace::info`].
    pub fn getrf<T: VendorDense>(
        &self,
        a: &mut DeviceBuffer<T>,
        ws: &mut GetrfWorkspace<T>,
    ) -> Result<()> {
        const OP: &str = "cuSOLVER getrf";
        crate::error::check_len(OP, "A", ws.n * ws.n, a.len())?;
        let ni = to_i32(OP, "n", ws.n)?;
        self.gpu.bind_to_thread()?;
        // SAFETY: a is n x n, the workspace was sized for n by getrf_workspace.
        let st = unsafe {
            T::getrf(
                self.handle,
                ni,
                a.device_ptr(),
                ws.work.device_ptr(),
                ws.ipiv.device_ptr(),
                ws.info.device_ptr(),
            )
        };
        if st != cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(vendor("cuSOLVER", "cusolverDn<t>getrf", st));
        }
        Ok(())
    }
}

impl Drop for Cusolver {
    fn drop(&mut self) {
        let _ = self.gpu.bind_to_thread();
        // SAFETY: created in `new`, destroyed once.
        unsafe { cs::cusolverDnDestroy(self.handle) };
    }
}

/// Workspace, pivots and `info` of cuSOLVER's `getrf` for one size.
pub struct GetrfWorkspace<T> {
    n: usize,
    work: DeviceBuffer<T>,
    ipiv: DeviceBuffer<i32>,
    info: DeviceBuffer<i32>,
}

impl<T: VendorDense> GetrfWorkspace<T> {
    /// `getrf`'s `info` (synchronises): 0, or the 1-based column of a zero pivot.
    pub fn info(&self) -> Result<i32> {
        let mut i = [0i32];
        self.info.copy_to_host(&mut i)?;
        Ok(i[0])
    }
    /// The pivots (1-based, LAPACK's convention).
    pub fn ipiv(&self) -> Result<Vec<i32>> {
        Ok(self.ipiv.download()?)
    }
}
