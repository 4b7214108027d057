//! ferrocuda's benchmarks: every benchmark behind `ferrocuda bench`, the peer solvers
//! (CuPy, SciPy), the probe's Markdown report, PNG charts, and Markdown tables.
//! Timing and statistics come from [`ferrocuda::timing`], plain-text tables from
//! [`ferrocuda::report`]. Reports are `serde` types so every benchmark can print JSON.

pub mod blas1;
pub mod gmres;
pub mod lu;
pub mod mpc;
pub mod multigrid;
pub mod peer;
pub mod plot;
pub mod probe;
pub mod rng;
pub mod rock4;
pub mod scaling;
pub mod spmv;
pub mod spmv_thesis;

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
