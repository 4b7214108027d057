//! Shared by the CLI tests: the binary under test and the GPU check for tests that run it
//! with `--device gpu`.

use std::process::Command;

/// The binary under test: `FERROCUDA_BIN` where set (packed test binaries on a GPU
/// machine, see scripts/gpu-pack), else the one cargo built.
pub fn ferrocuda() -> Command {
    let bin =
        std::env::var_os("FERROCUDA_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_ferrocuda").into());
    Command::new(bin)
}

/// Whether a GPU is present; with `FERROCUDA_REQUIRE_GPU=1` its absence is a failure.
pub fn gpu_present(test: &str) -> bool {
    if ferrocuda::gpu::count() > 0 {
        return true;
    }
    assert!(
        std::env::var("FERROCUDA_REQUIRE_GPU").as_deref() != Ok("1"),
        "{test}: FERROCUDA_REQUIRE_GPU=1 but no GPU"
    );
    eprintln!("SKIPPED {test}: no GPU");
    false
}
