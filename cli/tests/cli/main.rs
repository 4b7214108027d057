//! The CLI's tests as one binary (one link instead of one per file): a module per command
//! (`lu`, `mg`, `mpc`, `probe`, `rng`, `rock4`, `solve`, `spmv` with `info`), the user's
//! guide (`guide`: every `sh` block of docs/guide.md) and the reliability contract of
//! docs/reliability.md (`reliability::...`). Run one module with a filter:
//! `cargo test --release -p ferrocuda-cli --test cli reliability::`.
//!
//! They run the binary `FERROCUDA_BIN` names (the packed one on a GPU machine, see
//! scripts/gpu-pack), else the one cargo built, from any working directory.

#[path = "../common/mod.rs"]
mod common;

mod guide;
mod lu;
mod mg;
mod mpc;
mod probe;
mod progress;
mod reliability;
mod rng;
mod rock4;
mod scale_model;
mod solve;
mod spmv;
