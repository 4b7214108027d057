//! `ferrocuda bench solve`: time to solution on one GPU (issue 25). Each configuration
//! (preconditioner x matrix storage) solves the same system to rtol 1e-8 with GMRES(30)
//! through [`DeviceSolver`]: a generated TRACE case (f64, `b = A x_true`) and the real
//! matrices of `data/matrices` (SuiteSparse, embedded; `b = 1`). Each row has the set-up
//! (conversion, preconditioner, uploads) and the solve (the fastest of up to
//! [`SOLVE_REPS`]), the Arnoldi steps (with the refinement passes of `--storage f32`) and
//! the true relative residual, recomputed here in f64 from the CSR arrays. The ratio
//! column compares each solve with the full-precision solve of the same preconditioner.
//! Writes `solve.md`, `solve.json` (the rows) and `solve-chart.png`.
//!
//! Peers (CuPy's and SciPy's GMRES with their preconditioners) are not in this
//! benchmark yet.

use std::time::Instant;

use serde::Serialize;

use crate::markdown_table;
use crate::output::{ResultsDir, Saved};
use crate::plot::{BarChart, BarGroup};
use crate::spmv::SpmvCase;
use ferrocuda::Result;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{DeviceSolver, GmresOptions, MatrixStorage, Preconditioner, SolveOptions};
use ferrocuda::report::table;
use ferrocuda::sparse::{Csr, cpu, mm};

/// Solves per configuration; the fastest counts (the first one also loads the modules).
pub const SOLVE_REPS: usize = 3;

/// The real matrices of `data/matrices` (sources in its README).
const MATRICES: [(&str, &str); 3] = [
    ("sherman1", include_str!("../../data/matrices/sherman1.mtx")),
    ("cdde1", include_str!("../../data/matrices/cdde1.mtx")),
    ("utm1700a", include_str!("../../data/matrices/utm1700a.mtx")),
];

/// Options of `bench solve`.
#[derive(Debug, Clone)]
pub struct SolveBenchOptions {
    /// The generated case (default: case 6).
    pub case: SpmvCase,
    /// Only the generated case's ILU(0) and block-Jacobi rows, and one real matrix.
    pub quick: bool,
}

impl Default for SolveBenchOptions {
    fn default() -> Self {
        SolveBenchOptions {
            case: SpmvCase::Thesis(6),
            quick: false,
        }
    }
}

impl SolveBenchOptions {
    /// Checks the options before anything runs: the generated case fits host memory.
    pub fn validate(&self) -> Result<()> {
        // The CSR copy, the SBELL matrix, the f32 copy and the factors.
        self.case.check_memory("bench solve", 8, 4, 8)
    }
}

/// One configuration on one matrix.
#[derive(Debug, Clone, Serialize)]
pub struct SolveRow {
    /// The matrix, e.g. `case6` or `sherman1`.
    pub matrix: String,
    /// Rows.
    pub rows: usize,
    /// Stored entries of the CSR matrix.
    pub nnz: usize,
    /// The preconditioner.
    pub precond: Preconditioner,
    /// The matrix storage.
    pub storage: MatrixStorage,
    /// The GPU's name.
    pub device: String,
    /// Whether the true residual met rtol 1e-8.
    pub converged: bool,
    /// Arnoldi steps (all passes).
    pub steps: usize,
    /// Steps of each refinement pass (`--storage f32`).
    pub passes: Vec<usize>,
    /// Why full precision finished the solve, where it did.
    pub fallback: Option<String>,
    /// `|b - A x| / |b|`, recomputed in f64 from the CSR arrays.
    pub true_residual: f64,
    /// Set-up, milliseconds.
    pub setup_ms: f64,
    /// Time to solution, milliseconds (the fastest solve: `DeviceSolver::solve` from host
    /// vectors to host vectors, uploads and download included).
    pub solve_ms: f64,
    /// Of it, GMRES on the device (all passes), milliseconds.
    pub gmres_ms: f64,
    /// The operator's format (`sbell`, `bcsr`, `csr`, ...).
    pub format: String,
    /// Where the configuration failed (e.g. a zero pivot), the error; the numbers are
    /// then zero.
    pub error: Option<String>,
}

/// The rows of one run.
#[derive(Debug, Clone, Serialize)]
pub struct SolveBenchReport {
    /// GPU name.
    pub device: String,
    /// Every row.
    pub rows: Vec<SolveRow>,
}

fn progress(msg: &str) {
    eprintln!("[bench solve] {msg}");
}

/// `|b - A x| / |b|` in f64 from the CSR arrays.
fn true_residual(a: &Csr<f64>, b: &[f64], x: &[f64]) -> f64 {
    let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
    let mut r2 = 0.0;
    for i in 0..a.n_rows() {
        let mut s = b[i];
        for k in ptr[i]..ptr[i + 1] {
            s -= val[k] * x[col[k] as usize];
        }
        r2 += s * s;
    }
    r2.sqrt() / b.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Solves `a x = b` with one configuration.
#[allow(clippy::too_many_arguments)]
fn row(
    gpu: &Gpu,
    device: &str,
    name: &str,
    a: &Csr<f64>,
    b: &[f64],
    precond: Preconditioner,
    block_size: usize,
    storage: MatrixStorage,
) -> SolveRow {
    progress(&format!("{name}: {precond}, storage {storage}"));
    let mut r = SolveRow {
        matrix: name.into(),
        rows: a.n_rows(),
        nnz: a.nnz(),
        precond,
        storage,
        device: device.into(),
        converged: false,
        steps: 0,
        passes: Vec::new(),
        fallback: None,
        true_residual: f64::NAN,
        setup_ms: 0.0,
        solve_ms: 0.0,
        gmres_ms: 0.0,
        format: String::new(),
        error: None,
    };
    let opts = SolveOptions::default()
        .precond(precond)
        .block_size(block_size)
        .storage(storage)
        .gmres(GmresOptions::default().rtol(1e-8).max_iter(3000));
    let mut run = || -> Result<()> {
        let t = Instant::now();
        let s = DeviceSolver::upload(gpu, a, &opts)?;
        gpu.synchronize()?;
        r.setup_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut best = f64::INFINITY;
        for _ in 0..SOLVE_REPS {
            let t = Instant::now();
            let sol = s.solve(b, None)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if ms < best {
                best = ms;
                let g = &sol.report.gmres;
                r.gmres_ms = g.timing.total * 1e3;
                r.format = sol.report.format.format.name().to_string();
                r.converged = g.converged;
                r.steps = g.iterations;
                r.true_residual = true_residual(a, b, &sol.x);
                if let Some(rf) = &sol.report.refinement {
                    r.passes = rf.steps.clone();
                    r.fallback = rf.fallback.clone();
                }
            }
        }
        r.solve_ms = best;
        Ok(())
    };
    if let Err(e) = run() {
        r.error = Some(e.to_string());
    }
    r
}

/// Runs every configuration on `gpu`.
pub fn run(gpu: &Gpu, opts: &SolveBenchOptions) -> Result<SolveBenchReport> {
    opts.validate()?;
    let device = gpu.name()?;
    let storages = [MatrixStorage::Full, MatrixStorage::F32];
    let mut rows = Vec::new();
    let spec = opts.case.spec()?;
    let name = opts.case.name();
    progress(&format!("generating {name}"));
    let a5 = crate::progress::generate::<f64>(&spec)?;
    let xt = ferrocuda::rng::random_vector::<f64>(a5.n_rows(), 5);
    let mut b = vec![0.0; a5.n_rows()];
    cpu::spmv_bcsr(1.0, &a5, &xt, 0.0, &mut b)?;
    let a = a5.to_csr().without_zeros();
    drop((a5, xt));
    let preconds: &[Preconditioner] = if opts.quick {
        &[Preconditioner::BlockJacobi, Preconditioner::Ilu0]
    } else {
        &[
            Preconditioner::None,
            Preconditioner::BlockJacobi,
            Preconditioner::Ilu0,
        ]
    };
    for &p in preconds {
        for s in storages {
            rows.push(row(gpu, &device, &name, &a, &b, p, 5, s));
        }
    }
    drop((a, b));
    for (name, text) in MATRICES.iter().take(if opts.quick { 1 } else { 3 }) {
        let a = mm::read_csr::<f64, _>(text.as_bytes())?;
        let b = vec![1.0; a.n_rows()];
        for p in [Preconditioner::Jacobi, Preconditioner::Ilu0] {
            for s in storages {
                rows.push(row(gpu, &device, name, &a, &b, p, 1, s));
            }
        }
    }
    Ok(SolveBenchReport { device, rows })
}

impl SolveBenchReport {
    const HEADERS: [&'static str; 13] = [
        "matrix",
        "rows",
        "format",
        "precond",
        "storage",
        "converged",
        "steps",
        "passes",
        "true rel. residual",
        "set-up ms",
        "solve ms",
        "GMRES ms",
        "vs full",
    ];

    /// The solve of the same matrix and preconditioner in full precision.
    fn full_of(&self, r: &SolveRow) -> Option<&SolveRow> {
        self.rows.iter().find(|f| {
            f.matrix == r.matrix
                && f.precond == r.precond
                && f.storage == MatrixStorage::Full
                && f.error.is_none()
        })
    }

    fn cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                if let Some(e) = &r.error {
                    let mut c = vec![
                        r.matrix.clone(),
                        r.rows.to_string(),
                        "-".into(),
                        r.precond.to_string(),
                        r.storage.to_string(),
                        format!("error: {e}"),
                    ];
                    c.resize(Self::HEADERS.len(), "-".into());
                    return c;
                }
                let passes = if r.passes.is_empty() {
                    "-".into()
                } else {
                    let mut p = format!("{:?}", r.passes);
                    if r.fallback.is_some() {
                        p.push_str(" + full");
                    }
                    p
                };
                vec![
                    r.matrix.clone(),
                    r.rows.to_string(),
                    r.format.clone(),
                    r.precond.to_string(),
                    r.storage.to_string(),
                    r.converged.to_string(),
                    r.steps.to_string(),
                    passes,
                    format!("{:.2e}", r.true_residual),
                    format!("{:.1}", r.setup_ms),
                    format!("{:.2}", r.solve_ms),
                    format!("{:.2}", r.gmres_ms),
                    self.full_of(r)
                        .filter(|f| f.solve_ms > 0.0 && r.solve_ms > 0.0)
                        .map_or("-".into(), |f| format!("{:.2}x", f.solve_ms / r.solve_ms)),
                ]
            })
            .collect()
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        format!(
            "device: {}\n{}",
            self.device,
            table(&Self::HEADERS, &self.cells())
        )
    }

    /// The Markdown file.
    pub fn to_markdown(&self) -> String {
        let fallbacks: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| {
                r.fallback
                    .as_ref()
                    .map(|f| format!("- {} {} {}: {f}", r.matrix, r.precond, r.storage))
            })
            .collect();
        format!(
            "# Time to solution\n\nWritten by `ferrocuda bench solve`; do not edit by hand.\n\n- device: {}\n- GMRES(30), CGS2, rtol 1e-8 on the true residual, at most 3000 steps, through `DeviceSolver` (SBELL or BCSR for the generated case, block size 5; CSR-derived formats for the real matrices, block size 1); the generated case has `b = A x_true`, the real matrices `b = 1`\n- set-up: conversion, preconditioner (ILU(0): factored on the device, level-scheduled) and uploads; solve: the fastest of {SOLVE_REPS} `DeviceSolver::solve` calls, host vectors in and out (checks, padding, uploads and the download included), GMRES ms: the device solve within it (all passes); true rel. residual: recomputed in f64 from the CSR arrays\n- storage f32: the matrix values in f32, vectors and arithmetic in f64, refined with the f64 residual (passes: the steps of each refinement solve; \"+ full\": a full-precision GMRES finished); vs full: the full-precision solve's time over this one's, same matrix and preconditioner\n- not yet here: CuPy's and SciPy's GMRES with their preconditioners\n\n{}\n{}![solve](solve-chart.png)\n",
            self.device,
            markdown_table(&Self::HEADERS, &self.cells()),
            if fallbacks.is_empty() {
                String::new()
            } else {
                format!("Full-precision fallbacks:\n\n{}\n\n", fallbacks.join("\n"))
            }
        )
    }

    /// The chart: the solve time of each configuration, one group per matrix and
    /// preconditioner, a bar per storage.
    pub fn chart(&self) -> BarChart {
        let mut groups: Vec<BarGroup> = Vec::new();
        for r in self
            .rows
            .iter()
            .filter(|r| r.storage == MatrixStorage::Full)
        {
            let f32_ms = self
                .rows
                .iter()
                .find(|o| {
                    o.matrix == r.matrix
                        && o.precond == r.precond
                        && o.storage == MatrixStorage::F32
                })
                .filter(|o| o.error.is_none())
                .map(|o| o.solve_ms);
            groups.push(BarGroup {
                label: format!("{} {}", r.matrix, r.precond),
                values: vec![r.error.is_none().then_some(r.solve_ms), f32_ms],
            });
        }
        BarChart {
            title: format!("Time to solution, rtol 1e-8, {}", self.device),
            value_label: "ms".into(),
            groups,
            series: vec!["f64 storage".into(), "f32 storage, refined".into()],
            reference_lines: Vec::new(),
        }
    }
}

/// Writes `solve.md`, `solve.json` (the rows) and `solve-chart.png` (with its data,
/// `solve-chart.json`) (where `out` allows it).
pub fn write_results(report: &SolveBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("solve.md", |out| {
        let mut written = crate::plot::write_with_data(
            report.chart(),
            &out.join("solve-chart.png"),
            1200,
            (160 + 48 * report.rows.len()) as u32,
            "ferrocuda bench solve",
        )?;
        let json = serde_json::to_string_pretty(&report.rows)
            .map_err(|e| crate::invalid("bench solve", format!("JSON of the rows: {e}")))?;
        let path = out.join("solve.json");
        crate::output::write_file(&path, json.as_bytes())?;
        written.push(path);
        written.push(out.write_markdown("solve.md", &report.to_markdown())?);
        Ok(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(storage: MatrixStorage, solve_ms: f64) -> SolveRow {
        SolveRow {
            matrix: "case1".into(),
            rows: 10,
            nnz: 30,
            precond: Preconditioner::Ilu0,
            storage,
            device: "test GPU".into(),
            converged: true,
            steps: 12,
            passes: if storage == MatrixStorage::F32 {
                vec![10, 2]
            } else {
                vec![]
            },
            fallback: None,
            true_residual: 9e-9,
            setup_ms: 1.0,
            solve_ms,
            gmres_ms: solve_ms / 2.0,
            format: "sbell".into(),
            error: None,
        }
    }

    /// The table compares each f32 solve with the full-precision one, the JSON is the
    /// rows, and the files are written together.
    #[test]
    fn writes_rows_markdown_and_chart() {
        let mut failed = row(MatrixStorage::Full, 0.0);
        failed.matrix = "sherman1".into();
        failed.error = Some("row 3: zero pivot".into());
        let r = SolveBenchReport {
            device: "test GPU".into(),
            rows: vec![
                row(MatrixStorage::Full, 3.0),
                row(MatrixStorage::F32, 2.0),
                failed,
            ],
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let out = ResultsDir::new(dir.path(), true);
        write_results(&r, &out).expect("write");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("solve.json")).expect("json"),
        )
        .expect("parse");
        assert_eq!(json.as_array().expect("a list").len(), 3);
        assert_eq!(json[1]["storage"], "f32");
        let md = std::fs::read_to_string(dir.path().join("solve.md")).expect("md");
        assert!(md.contains("1.50x"), "{md}");
        assert!(md.contains("[10, 2]"), "{md}");
        assert!(md.contains("error: row 3: zero pivot"), "{md}");
        assert!(dir.path().join("solve-chart.png").is_file());
    }
}
