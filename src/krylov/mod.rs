//! Krylov solvers: restarted GMRES(m) on the CPU (rayon) and the GPU, written once
//! against linear operators ([`LinOp`], [`DeviceLinOp`]), with point- and block-Jacobi
//! preconditioners ([`BlockJacobi`], [`DeviceBlockJacobi`]).

pub mod op;
pub mod precond;

pub use op::{DeviceLinOp, Identity, LinOp};
pub use precond::{BlockJacobi, DeviceBlockJacobi};
