//! The library's integration tests as one binary (one link instead of one per file, as
//! nalgebra-sparse does): a module per domain, each domain's GPU tests in its `gpu`
//! submodule beside the CPU tests they mirror (`krylov::gpu::...` next to `krylov::...`).
//! Run one domain with a filter: `cargo test --release --test integration krylov::`.
//!
//! One separate binary, for the reason stated in its header: `distributed_mpi` (needs the
//! `mpi` feature and runs itself under `mpirun`). The reproductions' tests live in the
//! `repro` crate (`repro/tests/repro/`).
//!
//! Every test passes from any working directory (the packed binaries run on a GPU machine
//! without the source tree): inputs are embedded with `include_str!`, and what needs the
//! repository itself (`examples`) says so and skips where it is absent.

#[path = "../common/mod.rs"]
mod common;

mod blas1;
mod distributed;
mod examples;
mod host;
mod kernels;
mod krylov;
mod lu;
mod mm;
mod mpc;
mod multigrid;
mod precond;
mod probe;
mod real_matrices;
mod rng;
mod rock4;
mod sparse;
