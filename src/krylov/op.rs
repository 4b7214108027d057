//! Linear operators (Ginkgo's `LinOp`): anything with `y <- A x`. Every sparse format,
//! a user's own operator and the preconditioners implement [`LinOp`] (CPU slices) and
//! [`DeviceLinOp`] (device buffers); GMRES is written once against them.
//!
//! An implementor writes `nrows`, `ncols` and the unchecked apply; the provided
//! [`LinOp::apply`] checks the shapes first.
//!
//! ```
//! use ferrocuda::krylov::LinOp;
//! /// The operator `2 I` on vectors of length `n`.
//! struct Twice(usize);
//! impl LinOp<f64> for Twice {
//!     fn nrows(&self) -> usize { self.0 }
//!     fn ncols(&self) -> usize { self.0 }
//!     fn apply_unchecked(&self, x: &[f64], y: &mut [f64]) -> ferrocuda::Result<()> {
//!         y.iter_mut().zip(x).for_each(|(y, x)| *y = 2.0 * x);
//!         Ok(())
//!     }
//! }
//! let mut y = [0.0; 3];
//! Twice(3).apply(&[1.0, 2.0, 3.0], &mut y)?;
//! assert_eq!(y, [2.0, 4.0, 6.0]);
//! assert!(Twice(3).apply(&[1.0], &mut y).is_err());
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use std::any::Any;

use ferrocuda_host::{DeviceSlice, DeviceView, DeviceViewMut, Gpu};

use crate::blas1::Element;
use crate::error::{Result, check_device, check_len};
use crate::sparse::gpu::{
    self as sgpu, DeviceBcsr, DeviceBdia, DeviceBell, DeviceCsr, DeviceEll, DeviceMatrix,
    DeviceSbell, SpmvKernels,
};
use crate::sparse::{Bcsr, Bdia, Bell, Coo, Csr, Ell, Matrix, MatrixScalar, Sbell, cpu};

/// `y <- A x` on the CPU for vectors of `V`.
pub trait LinOp<V: Element>: Sync {
    /// Rows (length of `y`).
    fn nrows(&self) -> usize;
    /// Columns (length of `x`).
    fn ncols(&self) -> usize;
    /// `y <- A x`; the lengths are already checked.
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()>;
    /// `y <- A x`. Errors: `x.len() != ncols`, `y.len() != nrows`.
    fn apply(&self, x: &[V], y: &mut [V]) -> Result<()> {
        check_len("LinOp::apply", "x", self.ncols(), x.len())?;
        check_len("LinOp::apply", "y", self.nrows(), y.len())?;
        self.apply_unchecked(x, y)
    }
}

/// `y <- A x` on one GPU for device vectors of `V`, queued on `y`'s stream.
pub trait DeviceLinOp<V: Element> {
    /// Rows (length of `y`).
    fn nrows(&self) -> usize;
    /// Columns (length of `x`).
    fn ncols(&self) -> usize;
    /// The device (and stream) the operator lives on.
    fn gpu(&self) -> &Gpu;
    /// `y <- A x`; lengths and devices are already checked.
    fn apply_unchecked(&self, x: &DeviceView<'_, V>, y: &mut DeviceViewMut<'_, V>) -> Result<()>;
    /// The operator as a device SBELL matrix, where it is one: GMRES can then run a whole
    /// restart cycle in one kernel ([`super::CycleControl::Fused`]). Other operators keep
    /// the default, `None`.
    fn as_sbell(&self) -> Option<SbellRef<'_, V>> {
        None
    }
    /// `y <- A x`. Errors: lengths as [`LinOp::apply`], operands on another device.
    fn apply(&self, x: &DeviceView<'_, V>, y: &mut DeviceViewMut<'_, V>) -> Result<()> {
        check_len("DeviceLinOp::apply", "x", self.ncols(), x.len())?;
        check_len("DeviceLinOp::apply", "y", self.nrows(), y.len())?;
        for (what, gpu) in [("x", x.gpu()), ("y", y.gpu())] {
            check_device("DeviceLinOp::apply", what, self.gpu(), gpu)?;
        }
        self.apply_unchecked(x, y)
    }
}

/// A device SBELL matrix acting on vectors of `V` ([`DeviceLinOp::as_sbell`]).
pub enum SbellRef<'a, V: Element> {
    /// Entries of `V`.
    Same(&'a DeviceSbell<V>),
    /// Real entries, complex `V` (for real `V` the matrix is [`SbellRef::Same`]).
    Real(&'a DeviceSbell<V::Real>),
}

impl<'a, V: Element> SbellRef<'a, V> {
    /// `a` as a matrix acting on `V`, where its entries are `V` or `V`'s real type.
    pub fn of<A: 'static>(a: &'a DeviceSbell<A>) -> Option<Self> {
        let any: &dyn Any = a;
        match any.downcast_ref::<DeviceSbell<V>>() {
            Some(same) => Some(SbellRef::Same(same)),
            None => any
                .downcast_ref::<DeviceSbell<V::Real>>()
                .map(SbellRef::Real),
        }
    }
}

/// The identity (no preconditioner).
#[derive(Debug, Clone, Copy)]
pub struct Identity(pub usize);

impl<V: Element> LinOp<V> for Identity {
    fn nrows(&self) -> usize {
        self.0
    }
    fn ncols(&self) -> usize {
        self.0
    }
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        y.copy_from_slice(x);
        Ok(())
    }
}

macro_rules! cpu_format_op {
    ($($ty:ident => $f:ident),* $(,)?) => {$(
        impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for $ty<A> {
            fn nrows(&self) -> usize {
                self.n_rows()
            }
            fn ncols(&self) -> usize {
                self.n_cols()
            }
            fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
                Ok(cpu::$f(V::ONE, self, x, V::ZERO, y)?)
            }
        }
    )*};
}
cpu_format_op!(Coo => spmv_coo, Csr => spmv_csr, Bcsr => spmv_bcsr, Ell => spmv_ell,
    Bell => spmv_bell, Bdia => spmv_bdia, Sbell => spmv_sbell);

/// The automatically chosen format: the operator lives here, not in `sparse`, so that
/// `krylov` depends on `sparse` and never the reverse.
impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for Matrix<A> {
    fn nrows(&self) -> usize {
        self.n_rows()
    }
    fn ncols(&self) -> usize {
        self.n_cols()
    }
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        Ok(self.spmv(V::ONE, x, V::ZERO, y)?)
    }
}

macro_rules! gpu_format_op {
    ($($ty:ident => $f:ident $({ $($extra:tt)* })?),* $(,)?) => {$(
        impl<A, V> DeviceLinOp<V> for $ty<A>
        where
            A: Element + MatrixScalar<V> + SpmvKernels<V>,
            V: Element,
        {
            fn nrows(&self) -> usize {
                self.n_rows()
            }
            fn ncols(&self) -> usize {
                self.n_cols()
            }
            fn gpu(&self) -> &Gpu {
                self.gpu()
            }
            fn apply_unchecked(
                &self,
                x: &DeviceView<'_, V>,
                y: &mut DeviceViewMut<'_, V>,
            ) -> Result<()> {
                sgpu::$f(V::ONE, self, x, V::ZERO, y)
            }
            $($($extra)*)?
        }
    )*};
}
gpu_format_op!(DeviceBcsr => spmv_bcsr, DeviceEll => spmv_ell, DeviceBell => spmv_bell,
    DeviceBdia => spmv_bdia, DeviceCsr => spmv_csr);

gpu_format_op!(DeviceSbell => spmv_sbell {
    fn as_sbell(&self) -> Option<SbellRef<'_, V>> {
        SbellRef::of(self)
    }
});

gpu_format_op!(DeviceMatrix => spmv_matrix {
    fn as_sbell(&self) -> Option<SbellRef<'_, V>> {
        self.sbell_storage().and_then(SbellRef::of)
    }
});
