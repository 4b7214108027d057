//! cuBLAS GEMM and cuSOLVER `getrf`: the baselines of the dense LU benchmark, run on
//! the same device buffers in the same run.

use bytemuck::Pod;
use cudarc::cublas::sys as cb;
use cudarc::cusolver::sys as cs;

use super::{check, loaded, to_i32};
use crate::error::{Result, check_device, check_len};
use crate::{DeviceBuffer, DeviceSlice, Gpu};

const CUBLAS: &str = "cuBLAS";
const CUSOLVER: &str = "cuSOLVER";

fn check_cublas(call: &'static str, st: cb::cublasStatus_t) -> Result<()> {
    check(
        CUBLAS,
        call,
        st == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        st,
    )
}

fn check_cusolver(call: &'static str, st: cs::cusolverStatus_t) -> Result<()> {
    check(
        CUSOLVER,
        call,
        st == cs::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS,
        st,
    )
}

mod sealed {
    pub trait Sealed {}
}

/// Scalars with cuBLAS GEMM and cuSOLVER getrf (`f32`, `f64`). Sealed: the functions
/// must match the element type, which only this crate vouches for.
pub trait DenseScalar: Pod + sealed::Sealed {
    /// `cublas<t>gemm_v2` without transposes.
    ///
    /// # Safety
    /// As the cuBLAS function.
    #[doc(hidden)]
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
    #[doc(hidden)]
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
    #[doc(hidden)]
    unsafe fn getrf(
        h: cs::cusolverDnHandle_t,
        n: i32,
        a: u64,
        work: u64,
        ipiv: u64,
        info: u64,
    ) -> cs::cusolverStatus_t;
}

macro_rules! dense_scalar {
    ($t:ty, $gemm:ident, $buf:ident, $getrf:ident) => {
        impl sealed::Sealed for $t {}
        impl DenseScalar for $t {
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
                // SAFETY: forwarded under the caller's contract.
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
                // SAFETY: forwarded under the caller's contract.
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
                // SAFETY: forwarded under the caller's contract.
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

dense_scalar!(
    f32,
    cublasSgemm_v2,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf
);
dense_scalar!(
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
    /// Loads cuBLAS and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`](crate::Error::Vendor).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        loaded(CUBLAS, "libcublas.so", unsafe { cb::is_culib_present() })?;
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation into a local out-pointer.
        check_cublas("cublasCreate_v2", unsafe {
            cb::cublasCreate_v2(&mut handle)
        })?;
        // Owned from here on: an error below destroys it in `Drop`.
        let this = Cublas {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: a valid handle; the stream outlives it (`this.gpu` keeps it alive).
        check_cublas("cublasSetStream_v2", unsafe {
            cb::cublasSetStream_v2(handle, gpu.raw_stream() as cb::cudaStream_t)
        })?;
        Ok(this)
    }

    /// `C <- alpha A B + beta C` (no transposes), `A` `m x k`, `B` `k x n`, `C` `m x n`,
    /// column-major with leading dimensions equal to the rows. Errors: lengths, devices,
    /// sizes beyond 32 bits.
    pub fn gemm<T: DenseScalar>(
        &self,
        (m, n, k): (usize, usize, usize),
        alpha: T,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        beta: T,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        const OP: &str = "cuBLAS gemm";
        let (mi, ni, ki) = (
            to_i32(OP, "m", m)?,
            to_i32(OP, "n", n)?,
            to_i32(OP, "k", k)?,
        );
        for (what, buf, len) in [("A", a, m * k), ("B", b, k * n), ("C", &*c, m * n)] {
            check_device(OP, what, &self.gpu, buf.gpu())?;
            check_len(OP, what, len, buf.len())?;
        }
        self.gpu.bind_to_thread()?;
        // SAFETY: buffers of the checked lengths on this handle's device.
        check_cublas("cublas<t>gemm_v2", unsafe {
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
        })
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        let _ = self.gpu.bind_to_thread();
        // SAFETY: created in `new`, destroyed once.
        unsafe { cb::cublasDestroy_v2(self.handle) };
    }
}

/// A cuSOLVER dense handle on one stream.
pub struct Cusolver {
    gpu: Gpu,
    handle: cs::cusolverDnHandle_t,
}

impl Cusolver {
    /// Loads cuSOLVER and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`](crate::Error::Vendor).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        loaded(CUSOLVER, "libcusolver.so", unsafe {
            cs::is_culib_present()
        })?;
        gpu.bind_to_thread()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain handle creation into a local out-pointer.
        check_cusolver("cusolverDnCreate", unsafe {
            cs::cusolverDnCreate(&mut handle)
        })?;
        // Owned from here on: an error below destroys it in `Drop`.
        let this = Cusolver {
            gpu: gpu.clone(),
            handle,
        };
        // SAFETY: a valid handle; the stream outlives it (`this.gpu` keeps it alive).
        check_cusolver("cusolverDnSetStream", unsafe {
            cs::cusolverDnSetStream(handle, gpu.raw_stream() as cs::cudaStream_t)
        })?;
        Ok(this)
    }

    /// Checks that `a` is an `n x n` matrix on this handle's device.
    fn check_square<T>(&self, n: usize, a: &DeviceBuffer<T>) -> Result<i32> {
        const OP: &str = "cuSOLVER getrf";
        check_device(OP, "A", &self.gpu, a.gpu())?;
        let nn = n.saturating_mul(n);
        check_len(OP, "A", nn, a.len())?;
        to_i32(OP, "n", n)
    }

    /// A `getrf` workspace for `n x n` matrices (`cusolverDn<t>getrf_bufferSize`).
    pub fn getrf_workspace<T: DenseScalar>(
        &self,
        n: usize,
        a: &DeviceBuffer<T>,
    ) -> Result<GetrfWorkspace<T>> {
        let ni = self.check_square(n, a)?;
        let mut lwork = 0i32;
        self.gpu.bind_to_thread()?;
        // SAFETY: `a` is n x n on this device (checked).
        check_cusolver("cusolverDn<t>getrf_bufferSize", unsafe {
            T::getrf_buffer(self.handle, ni, a.device_ptr(), &mut lwork)
        })?;
        Ok(GetrfWorkspace {
            n,
            work: self.gpu.alloc(lwork.max(1) as usize)?,
            ipiv: self.gpu.alloc(n)?,
            info: self.gpu.alloc_zeroed(1)?,
        })
    }

    /// `P A = L U` in place with partial pivoting (`cusolverDn<t>getrf`), queued on the
    /// stream; `info` is read with [`GetrfWorkspace::info`].
    pub fn getrf<T: DenseScalar>(
        &self,
        a: &mut DeviceBuffer<T>,
        ws: &mut GetrfWorkspace<T>,
    ) -> Result<()> {
        let ni = self.check_square(ws.n, a)?;
        check_device("cuSOLVER getrf", "workspace", &self.gpu, ws.work.gpu())?;
        self.gpu.bind_to_thread()?;
        // SAFETY: `a` is n x n on this device, the workspace was sized for n by
        // `getrf_workspace` on the same device.
        check_cusolver("cusolverDn<t>getrf", unsafe {
            T::getrf(
                self.handle,
                ni,
                a.device_ptr(),
                ws.work.device_ptr(),
                ws.ipiv.device_ptr(),
                ws.info.device_ptr(),
            )
        })
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

impl<T: DenseScalar> GetrfWorkspace<T> {
    /// `getrf`'s `info` (synchronises): 0, or the 1-based column of a zero pivot.
    pub fn info(&self) -> Result<i32> {
        let mut i = [0i32];
        self.info.copy_to_host(&mut i)?;
        Ok(i[0])
    }
    /// The pivots (1-based, LAPACK's convention).
    pub fn ipiv(&self) -> Result<Vec<i32>> {
        self.ipiv.download()
    }
}
