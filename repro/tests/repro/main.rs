//! Tests of the reproductions, one binary with a module per area, CPU and GPU tests side by
//! side (GPU tests skip without a device, or fail with `FERROCUDA_REQUIRE_GPU=1`).

// The library's test helpers (`gpu_or_skip`, random data, comparisons), shared.
#[path = "../../../tests/common/mod.rs"]
mod common;
mod kernels;
mod lu;
mod rng;
mod spmv;
