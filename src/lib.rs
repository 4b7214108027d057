//! ferrocuda: a CUDA-native numerical toolkit in Rust.
//!
//! Kernels are written in Rust (`ferrocuda-kernels`), compiled to PTX at build time and
//! embedded here ([`kernels::PTX`]); a thin runtime (`ferrocuda-host`, re-exported in
//! [`gpu`]) loads and launches them. Every numerical module offers the same algorithm on
//! the CPU (rayon) and the GPU with matching signatures.
//!
//! | module | CPU | GPU | what |
//! |---|---|---|---|
//! | [`blas1`] | yes | yes | fill, scal, axpy, axpby, copy, dot, nrm2, multi-dot; f32, f64, c32, c64 |
//! | [`sparse`] | yes | not yet | COO, CSR, BCSR, ELL, BELL, block-stencil formats; converters; Matrix Market I/O; test-case generator; SpMV |
//! | [`multigrid`] | yes | yes | geometric multigrid for 3D Poisson on b^k+1 grids, block smoothers (ABL, SBL), V/W/FMG; f32, f64 |
//! | [`distributed`] | yes | not yet | row partitions, halo plans, the distributed BCSR operator and GMRES over several ranks (threads in one process) |
//! | [`dense`] | yes | yes | LU with partial pivoting (LAPACK getrf), solves with several right-hand sides, FP64 tensor-core GEMM; seed 004's unblocked and blocked LU |
//! | [`probe`] | - | yes | device ceilings (per-SM rate table, DRAM, PCIe) and micro-benchmarks: peak FLOP/s, bandwidths, latencies, transfers, divergence |
//! | [`mpc`] | yes | yes | MPC of an object swarm (seed 001 ch. 7-8): cost, one C^2 constraint, forward-difference and exact (adjoint) gradients, batched on the GPU; PANOC/penalty optimiser and the closed loop |
//! | [`rock4`] | yes | yes | ROCK4 stabilized explicit RK (order 4) with step control; 2D heat and reaction-advection-diffusion test problems |
//! | [`rng`] | yes | yes | SFMT19937/607 bit-exact (init_gen_rand, init_by_array), jump-ahead streams, uniform and Box-Muller transforms, the seed's "amd" scheme |
//!
//! [`timing`] (repeated timings on the host clock or GPU events, the device copy
//! ceiling) and [`report`] (plain-text tables) serve the probe and the applications
//! built on this library: the benchmarks (`ferrocuda-bench`) and the `ferrocuda`
//! command line (`ferrocuda-cli`), which live in crates of their own.
//!
//! Without a CUDA driver or device everything on the CPU works, and [`gpu::open`]
//! returns an error for which [`Error::is_no_device`] is true.
#![deny(missing_docs)]

pub mod alloc;
pub mod blas1;
#[doc(hidden)]
pub mod cpu_dispatch;
pub mod dense;
pub mod distributed;
mod error;
pub mod gpu;
pub mod kernels;
pub mod krylov;
pub mod mpc;
pub mod multigrid;
pub mod probe;
pub mod report;
pub mod rng;
pub mod rock4;
pub mod sparse;
pub mod timing;
pub mod vendor;

pub use error::{Error, Result};
pub use ferrocuda_kernels::{Complex, RealScalar, Scalar};

/// The Rust blocks of the user's guide (docs/guide.md), compiled and run as doctests so
/// the guide cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
