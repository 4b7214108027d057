//! Krylov solvers: restarted GMRES(m) on the CPU (rayon) and the GPU, written once
//! against linear operators ([`LinOp`], [`DeviceLinOp`]).

pub mod op;

pub use op::{DeviceLinOp, Identity, LinOp};
