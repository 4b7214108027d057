//! ferrocuda's benchmarks: every benchmark behind `ferrocuda bench`, the peer solvers
//! (CuPy, SciPy), the probe's Markdown report, PNG charts (drawn by `plotters`, with their
//! data as JSON so [`redraw`] can draw them again), and Markdown tables.
//! Timing and statistics come from [`ferrocuda::timing`], plain-text tables from
//! [`ferrocuda::report`]. Reports are `serde` types so every benchmark can print JSON.

pub mod blas1;
pub mod gmres;
pub mod latency;
pub mod lu;
pub mod mpc;
pub mod multigrid;
pub mod output;
pub mod peer;
pub mod plot;
pub mod probe;
pub mod progress;
pub mod redraw;
pub mod rng;
pub mod rock4;
pub mod scale_model;
pub mod scaling;
pub mod solve;
pub mod spmv;
pub mod spmv_thesis;

/// The error of a benchmark option out of range (`op` is the command, e.g. `bench lu`).
pub(crate) fn invalid(op: &'static str, reason: String) -> ferrocuda::Error {
    ferrocuda::Error::InvalidArgument { op, reason }
}

/// `Err` naming the first option of `counts` (`("--reps", value)`) that is zero.
pub(crate) fn at_least_one(op: &'static str, counts: &[(&str, usize)]) -> ferrocuda::Result<()> {
    match counts.iter().find(|c| c.1 == 0) {
        Some((flag, _)) => Err(invalid(op, format!("{flag} must be at least 1 (got 0)"))),
        None => Ok(()),
    }
}

/// `Ok` when `count` values of `elem_bytes` each, `copies` times (what a benchmark holds
/// at once), fit the host memory this process may use ([`ferrocuda::alloc`]); the error
/// names `what` and the bytes.
pub(crate) fn check_memory(
    what: String,
    count: u128,
    elem_bytes: usize,
    copies: u128,
) -> ferrocuda::Result<()> {
    let bytes = ferrocuda::alloc::bytes_of(count, elem_bytes).saturating_mul(copies);
    ferrocuda::alloc::check_host_bytes(&what, bytes)
}

/// Renders rows as a Markdown table.
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "| {} |\n|{}|\n",
        headers.join(" | "),
        headers.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}
