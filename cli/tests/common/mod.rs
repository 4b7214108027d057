//! Helpers of the CLI tests: the root package's test helpers (`tests/common`: the GPU
//! check, seeded data, the GMRES test systems), shared by path rather than copied, and
//! the binary under test ([`cli`]).
#![allow(dead_code)]

#[path = "../../../tests/common/mod.rs"]
mod shared;

// Each test binary uses a subset, some none of them.
#[allow(unused_imports)]
pub use shared::*;

pub mod cli;
