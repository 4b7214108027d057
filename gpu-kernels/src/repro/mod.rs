//! Kernels that reproduce the experiments of the theses the project started from, apart
//! from the product's: the SpMV variants of Kautz (2011) ([`spmv`]), the LU
//! factorisations without pivoting of Mißbach (2013) ([`lu`]) and its per-thread "amd"
//! random-number scheme ([`rng`]).
//!
//! They form their own PTX module: build.rs compiles this crate a third time with
//! `--cfg ferrocuda_repro`, which keeps only this module and what it uses, and the
//! `ferrocuda-repro` crate registers that module for `ferrocuda_kernels::repro`. The
//! default module does not contain them. On the host this module is always compiled:
//! its per-thread bodies run in the serial twins, and its declarations give the handles.

pub mod lu;
pub mod rng;
pub mod spmv;
