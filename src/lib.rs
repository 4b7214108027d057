//! ferrocuda: a CUDA-native numerical toolkit in Rust.
//!
//! Kernels are written in Rust (`ferrocuda-kernels`), compiled at build time to PTX and,
//! where `ptxas` can be had, to machine code for the common GPUs, and embedded here as
//! one module per domain ([`kernels::MODULES`]); a thin runtime (`ferrocuda-host`,
//! re-exported in [`gpu`]) loads each domain on first use and launches its kernels.
//! Every numerical module offers the same algorithm on the CPU (rayon) and the GPU with
//! matching signatures.
//!
//! # Modules
//!
//! | module | CPU | GPU | what |
//! |---|---|---|---|
//! | [`blas1`] | yes | yes | fill, scal, axpy, axpby, copy, dot, nrm2, multi-dot; f32, f64, c32, c64 |
//! | [`sparse`] | yes | yes | COO, CSR, ELL, BCSR, BELL, BDIA, SBELL (table below); converters; Matrix Market I/O ([`sparse::mm`]); a block-stencil generator; SpMV in every format on both devices; [`sparse::Matrix`] / [`sparse::gpu::DeviceMatrix`] with [`sparse::Format::Auto`] choose the format from the structure and report why |
//! | [`krylov`] | yes | yes | restarted GMRES (MGS or delayed CGS2) over [`krylov::LinOp`] / [`krylov::DeviceLinOp`]; point and block Jacobi; [`krylov::Solver`] / [`krylov::DeviceSolver`]: `A x = b` from a CSR matrix in about three calls |
//! | [`distributed`] | yes | yes (one GPU per rank, halo through NCCL or the host) | row partitions, halo plans, the distributed BCSR operator and GMRES over ranks: threads of one process, or MPI processes (feature `mpi`) |
//! | [`rock4`] | yes | yes | ROCK4 stabilized explicit Runge-Kutta (order 4) with step control; user problems through [`rock4::Rhs`]; 2D heat and reaction-advection-diffusion problems |
//! | [`multigrid`] | yes | yes | geometric multigrid for 3D Poisson on b^k+1 grids, block smoothers (ABL, SBL), V/W/FMG; f32, f64 |
//! | [`dense`] | yes | yes | LU with partial pivoting (LAPACK getrf), condition estimate, solves with several right-hand sides, FP64 tensor-core GEMM |
//! | [`rng`] | yes | yes | SFMT19937/607 bit-exact (init_gen_rand, init_by_array), jump-ahead streams, uniform and Box-Muller transforms |
//! | [`mpc`] | yes | yes | MPC of an object swarm: cost, one C^2 constraint, exact (adjoint) and forward-difference gradients, batched on the GPU; PANOC/penalty optimiser and the closed loop |
//! | [`probe`] | - | yes | device ceilings (per-SM rate table, DRAM, PCIe) and micro-benchmarks: peak FLOP/s, bandwidths, latencies, transfers, divergence |
//! | [`vendor`] | - | yes | cuSPARSE, cuBLAS/cuSOLVER and cuRAND as baselines, loaded at run time |
//! | [`gpu`] | - | yes | opening a device with the embedded kernels; buffers, streams, events, graphs (re-exported from `ferrocuda-host`) |
//! | [`alloc`] | yes | - | fallible host allocation for sizes that come from users or files |
//!
//! # Sparse formats
//!
//! Every format multiplies on the CPU ([`sparse::cpu`]) and on the GPU ([`sparse::gpu`]);
//! [`sparse::Format::Auto`] picks one by the rules of [`sparse::auto`].
//!
//! | format | CPU | GPU | suits |
//! |---|---|---|---|
//! | [`sparse::Coo`] | build, convert | - | assembling a matrix (duplicates summed), Matrix Market files |
//! | [`sparse::Csr`] | SpMV | [`sparse::gpu::DeviceCsr`] | any structure; the input of every converter and of [`krylov::Solver`] |
//! | [`sparse::Ell`] | SpMV | [`sparse::gpu::DeviceEll`] | rows of nearly equal length, no block structure |
//! | [`sparse::Bcsr`] | SpMV | [`sparse::gpu::DeviceBcsr`] | dense `b x b` blocks, any block size; the CPU's choice for block matrices |
//! | [`sparse::Bell`] | SpMV | [`sparse::gpu::DeviceBell`] | block rows of nearly equal length |
//! | [`sparse::Sbell`] | SpMV | [`sparse::gpu::DeviceSbell`] | block matrices with `b <= 8` on the GPU: no empty block rows, no shared in-block zeros (the GPU's choice for block matrices) |
//! | [`sparse::Bdia`] | SpMV | [`sparse::gpu::DeviceBdia`] | block stencils: a few block diagonals, no column indices |
//!
//! # CPU and GPU: the same concepts
//!
//! Each numerical module offers one algorithm on both devices with matching types;
//! the GPU side keeps its data resident on the device.
//!
//! | concept | CPU | GPU |
//! |---|---|---|
//! | a vector | `Vec<T>`, `&[T]` | [`gpu::DeviceBuffer`] ([`gpu::Gpu::upload`], [`gpu::DeviceBuffer::download`]) |
//! | a sparse matrix in a chosen format | [`sparse::Csr`], [`sparse::Matrix`] | [`sparse::gpu::DeviceMatrix`] |
//! | an operator for GMRES | [`krylov::LinOp`] | [`krylov::DeviceLinOp`] |
//! | GMRES | [`krylov::cpu::gmres`] | [`krylov::gpu::gmres`] |
//! | `A x = b` prepared once, solved per right-hand side | [`krylov::Solver`] | [`krylov::DeviceSolver`] |
//! | a preconditioner | [`krylov::BlockJacobi`] | [`krylov::DeviceBlockJacobi`] |
//! | a right-hand side for ROCK4 | [`rock4::Rhs`] | [`rock4::DeviceRhs`] |
//! | an evaluator for the MPC optimiser | [`mpc::CpuEvaluator`] | [`mpc::gpu::GpuEvaluator`] |
//!
//! # Examples
//!
//! The repository's `examples/` run with no arguments, on GPU 0 when there is one and
//! on the CPU otherwise (saying which), and check their result against a CPU reference
//! or a residual (`cargo run --release --example NAME`):
//!
//! | example | what |
//! |---|---|
//! | `spmv_gmres` | SpMV and GMRES on a Matrix Market file (a small one is written when no path is given) |
//! | `rock4_heat` | ROCK4 on the 2D heat equation against its exact solution |
//! | `multigrid_poisson` | multigrid V-cycles for 3D Poisson down to the discretisation error |
//! | `lu_solve` | dense LU and a solve with two right-hand sides, checked by the residual |
//! | `sfmt_streams` | independent SFMT streams by jump-ahead, normal numbers, moments |
//! | `mpc_swarm` | one MPC optimisation of a swarm, re-evaluated on the CPU |
//! | `mpi_gmres` | GMRES over MPI processes, one GPU each (feature `mpi`) |
//! | `standalone/` | a crate outside the workspace that depends on ferrocuda by path: reads a Matrix Market file and solves it with GMRES |
//!
//! Solving a system, on the GPU when there is one:
//!
//! ```
//! use ferrocuda::krylov::{DeviceSolver, SolveOptions, Solver};
//! use ferrocuda::sparse::{Coo, Csr};
//! let mut coo = Coo::<f64>::empty(3, 3)?;
//! for (i, j, v) in [(0, 0, 4.0), (0, 1, -1.0), (1, 1, 4.0), (2, 1, -1.0), (2, 2, 4.0)] {
//!     coo.push(i, j, v)?;
//! }
//! let a = Csr::from(&coo);
//! let b = [3.0, 4.0, 3.0];
//! let opts = SolveOptions::default();
//! let solution = match ferrocuda::gpu::open(0) {
//!     Ok(gpu) => DeviceSolver::upload(&gpu, &a, &opts)?.solve(&b, None)?,
//!     Err(e) if e.is_no_device() => Solver::new(&a, &opts)?.solve(&b, None)?,
//!     Err(e) => return Err(e),
//! };
//! assert!(solution.report.gmres.converged);
//! assert!(solution.x.iter().all(|x| (x - 1.0).abs() < 1e-8));
//! # Ok::<(), ferrocuda::Error>(())
//! ```
//!
//! [`timing`] (repeated timings on the host clock or GPU events, the device copy
//! ceiling) and [`report`] (plain-text tables) serve the probe and the applications
//! built on this library: the benchmarks (`ferrocuda-bench`) and the `ferrocuda`
//! command line (`ferrocuda-cli`), which live in crates of their own.
//!
//! Without a CUDA driver or device everything on the CPU works, and [`gpu::open`]
//! returns an error for which [`Error::is_no_device`] is true.
#![deny(missing_docs)]

/// Builder methods of option structs, `fn field(mut self, field: T) -> Self` setting one
/// field, with their docs: `setters! { /// Sets x. x: f64; }` inside an `impl`.
macro_rules! setters {
    ($($(#[$attr:meta])* $field:ident: $ty:ty;)*) => {$(
        $(#[$attr])*
        pub fn $field(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
    )*};
}

pub mod alloc;
pub mod blas1;
pub mod comm;
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
pub mod progress;
pub mod report;
pub mod rng;
pub mod rock4;
pub mod sparse;
mod staging;
pub mod timing;
pub mod vendor;

pub use error::{Error, Result};
pub use ferrocuda_kernels::{Complex, RealScalar, Scalar};

/// The Rust blocks of the user's guide (docs/guide.md), compiled and run as doctests so
/// the guide cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
