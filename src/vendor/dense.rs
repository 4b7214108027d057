//! cuBLAS GEMM and cuSOLVER `getrf`: the baselines of the dense LU benchmark, run on the
//! same device buffers in the same run. The raw calls live in the host crate
//! ([`ferrocuda_host::vendor::dense`]); these wrappers report ferrocuda's [`Error`].

use ferrocuda_host::vendor::dense as raw;
use ferrocuda_host::{DeviceBuffer, Gpu};

use crate::dense::LuScalar;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;

/// Scalars with both ferrocuda's LU and the vendor baselines (`f32`, `f64`).
pub trait VendorDense: LuScalar + raw::DenseScalar {}

impl<T: LuScalar + raw::DenseScalar> VendorDense for T {}

/// A cuBLAS handle on one stream.
pub struct Cublas(raw::Cublas);

impl Cublas {
    /// Loads cuBLAS and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`].
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Cublas(raw::Cublas::new(gpu)?))
    }

    /// `C <- alpha A B + beta C` (no transposes), `A` `m x k`, `B` `k x n`, `C` `m x n`,
    /// column-major with leading dimensions equal to the rows. Errors: lengths.
    pub fn gemm<T: VendorDense>(
        &self,
        mnk: (usize, usize, usize),
        alpha: T,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        beta: T,
        c: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Ok(self.0.gemm(mnk, alpha, a, b, beta, c)?)
    }
}

/// A cuSOLVER dense handle on one stream.
pub struct Cusolver(raw::Cusolver);

impl Cusolver {
    /// Loads cuSOLVER and creates a handle on `gpu`'s stream. Errors: [`Error::Vendor`].
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Cusolver(raw::Cusolver::new(gpu)?))
    }

    /// A `getrf` workspace for `n x n` matrices (`cusolverDn<t>getrf_bufferSize`).
    pub fn getrf_workspace<T: VendorDense>(
        &self,
        n: usize,
        a: &DeviceBuffer<T>,
    ) -> Result<GetrfWorkspace<T>> {
        Ok(GetrfWorkspace(self.0.getrf_workspace(n, a)?))
    }

    /// `P A = L U` in place with partial pivoting (`cusolverDn<t>getrf`), queued on the
    /// stream; `info` is read with [`GetrfWorkspace::info`].
    pub fn getrf<T: VendorDense>(
        &self,
        a: &mut DeviceBuffer<T>,
        ws: &mut GetrfWorkspace<T>,
    ) -> Result<()> {
        Ok(self.0.getrf(a, &mut ws.0)?)
    }
}

/// Workspace, pivots and `info` of cuSOLVER's `getrf` for one size.
pub struct GetrfWorkspace<T>(raw::GetrfWorkspace<T>);

impl<T: VendorDense> GetrfWorkspace<T> {
    /// `getrf`'s `info` (synchronises): 0, or the 1-based column of a zero pivot.
    pub fn info(&self) -> Result<i32> {
        Ok(self.0.info()?)
    }
    /// The pivots (1-based, LAPACK's convention).
    pub fn ipiv(&self) -> Result<Vec<i32>> {
        Ok(self.0.ipiv()?)
    }
}
