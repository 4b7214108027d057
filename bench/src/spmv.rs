//! `ferrocuda bench spmv`: the thesis's Tables 6.1-6.11 and 7.1 in today's terms. On one
//! generated TRACE-like matrix, in one run: ferrocuda's GPU kernels (the block formats and
//! its own CSR kernel, beside cuSPARSE's on the same CSR), cuSPARSE (CSR with the generic
//! API, BSR with `bsrmv`), the device copy bandwidth as the ceiling, and the CPU path on
//! all cores.
//!
//! Conventions, written into the report: GFLOP/s count 2 flops per real and 8 per complex
//! multiply-add, over the structural nonzeros (zeros stored inside blocks are not
//! counted, so every format is credited with the same work). Bytes moved count the
//! matrix's values and indices, `x` and `y` once each (`beta = 0`: `y` is only written).

use serde::Serialize;

use ferrocuda::Complex;
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::gpu::{DeviceBuffer, Gpu, copy_device};
use ferrocuda::report::table;
use ferrocuda::rng::random_vector;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::gpu::{
    DeviceBcsr, DeviceBdia, DeviceBell, DeviceCsr, DeviceEll, DeviceSbell, SpmvKernels, spmv_bcsr,
    spmv_bdia, spmv_bell, spmv_csr, spmv_ell, spmv_sbell,
};
use ferrocuda::sparse::{
    Bcsr, Bdia, BdiaOptions, Bell, BellOptions, BlockLayout, Ell, EllOptions, MatrixScalar, Sbell,
    cpu,
};
use ferrocuda::timing::{Stats, time_cpu, time_gpu};
use ferrocuda::vendor::cusparse::{Cusparse, CusparseScalar};
use ferrocuda::{Error, Result};

use crate::output::{ResultsDir, Saved};

/// Which matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SpmvCase {
    /// Thesis Table 4.1, case 1..=6.
    Thesis(usize),
    /// [`generate::large`]: more than 1e8 structural nonzeros.
    Large,
    /// Any size: `grid_blocks` grid blocks of `nx x ntheta x nr` cells.
    Grid {
        /// Cells along x per grid block.
        nx: usize,
        /// Cells along theta per grid block.
        ntheta: usize,
        /// Cells along r per grid block.
        nr: usize,
        /// Grid blocks.
        grid_blocks: usize,
    },
}

impl SpmvCase {
    /// Parses `1`..`6`, `large`, or `NXxNTHETAxNRxBLOCKS` (e.g. `10x40x20x2`: 2 grid
    /// blocks of 10 x 40 x 20 cells).
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || Error::InvalidArgument {
            op: "bench",
            reason: format!(
                "case {s:?} does not exist: use 1..6, large, or NXxNTHETAxNRxBLOCKS such as 10x40x20x2"
            ),
        };
        let t = s.trim();
        if t == "large" {
            return Ok(SpmvCase::Large);
        }
        if t.contains('x') {
            let v: Vec<usize> = t
                .split('x')
                .map(|p| p.parse::<usize>().ok().filter(|&n| n > 0))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            return match v[..] {
                [nx, ntheta, nr, grid_blocks] => Ok(SpmvCase::Grid {
                    nx,
                    ntheta,
                    nr,
                    grid_blocks,
                }),
                _ => Err(bad()),
            };
        }
        match t.parse::<usize>() {
            Ok(n) if (1..=6).contains(&n) => Ok(SpmvCase::Thesis(n)),
            _ => Err(bad()),
        }
    }

    pub(crate) fn spec(self) -> Result<TraceSpec> {
        Ok(match self {
            SpmvCase::Thesis(n) => generate::case(n)?,
            SpmvCase::Large => generate::large(),
            SpmvCase::Grid {
                nx,
                ntheta,
                nr,
                grid_blocks,
            } => TraceSpec::new(nx, ntheta, nr, grid_blocks),
        })
    }

    /// Bytes of the case's BCSR matrix with values of `elem_bytes` each (exact, also
    /// beyond `usize`), and its rows.
    pub fn matrix_bytes(self, elem_bytes: usize) -> Result<(u128, u128)> {
        let spec = self.spec()?;
        let (nbr, nnzb) = (spec.block_rows() as u128, spec.nonzero_blocks() as u128);
        let bytes = nnzb
            .saturating_mul(25 * elem_bytes as u128 + 4)
            .saturating_add(nbr.saturating_mul(16));
        Ok((bytes, nbr.saturating_mul(5)))
    }

    /// `Ok` when `copies` copies of the case's matrix and `vectors` vectors of its rows
    /// fit the host memory this process may use; the error names `op --case` and the bytes.
    pub fn check_memory(
        self,
        op: &str,
        elem_bytes: usize,
        copies: u128,
        vectors: u128,
    ) -> Result<()> {
        let (matrix, rows) = self.matrix_bytes(elem_bytes)?;
        let bytes = matrix.saturating_mul(copies).saturating_add(
            rows.saturating_mul(vectors)
                .saturating_mul(elem_bytes as u128),
        );
        ferrocuda::alloc::check_host_bytes(
            &format!(
                "{op} --case {}: the {rows}-row matrix ({copies} copies) and {vectors} vectors",
                self.name()
            ),
            bytes,
        )
    }

    pub(crate) fn name(self) -> String {
        match self {
            SpmvCase::Thesis(n) => format!("case{n}"),
            SpmvCase::Large => "large".into(),
            SpmvCase::Grid {
                nx,
                ntheta,
                nr,
                grid_blocks,
            } => format!("{nx}x{ntheta}x{nr}x{grid_blocks}"),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SpmvBenchOptions {
    /// The matrix.
    pub case: SpmvCase,
    /// `true`: f64, `false`: f32.
    pub double: bool,
    /// Complex matrix and vectors.
    pub complex: bool,
    /// Timed repetitions (median reported).
    pub reps: usize,
}

impl Default for SpmvBenchOptions {
    fn default() -> Self {
        SpmvBenchOptions {
            case: SpmvCase::Thesis(4),
            double: true,
            complex: false,
            reps: 20,
        }
    }
}

impl SpmvBenchOptions {
    /// Checks the options before anything runs: `--reps` at least 1, and the matrix in
    /// its formats (BCSR, BELL, SBELL, CSR for cuSPARSE) within the host memory this
    /// process may use.
    pub fn validate(&self) -> Result<()> {
        crate::at_least_one("bench spmv", &[("--reps", self.reps)])?;
        let elem = if self.double { 8 } else { 4 } * if self.complex { 2 } else { 1 };
        self.case.check_memory("bench spmv", elem, 4, 4)
    }
}

/// One format/kernel.
#[derive(Debug, Clone, Serialize)]
pub struct SpmvRow {
    /// Storage format.
    pub format: String,
    /// Implementation.
    pub kernel: String,
    /// `GPU` or `CPU`.
    pub device: &'static str,
    /// Timing.
    pub stats: Stats,
    /// GFLOP/s at the median time (convention in the module docs).
    pub gflops: f64,
    /// Bytes the product must move in this format.
    pub bytes: f64,
    /// Bandwidth at the median time (GB/s).
    pub gbps: f64,
    /// Bandwidth over the copy ceiling of this run (GPU rows).
    pub fraction_of_copy: Option<f64>,
    /// CPU BCSR median over this row's median.
    pub speedup_over_cpu: f64,
    /// cuSPARSE CSR median over this row's median (GPU rows).
    pub speedup_over_cusparse_csr: Option<f64>,
    /// Largest `|y - y_cpu| / scale` over the rows (0 = same bits as the CPU).
    pub error_vs_cpu: f64,
}

/// The report of one case and scalar type.
#[derive(Debug, Clone, Serialize)]
pub struct SpmvReport {
    /// Device name, if a GPU ran.
    pub device: Option<String>,
    /// Why the GPU part was skipped.
    pub gpu_skipped: Option<String>,
    /// Why the cuSPARSE part was skipped.
    pub cusparse_skipped: Option<String>,
    /// `case4`, `large`, ...
    pub case: String,
    /// Cells per grid block and grid blocks.
    pub geometry: String,
    /// Matrix rows (ghost rows included).
    pub rows: usize,
    /// Stored 5x5 blocks.
    pub blocks: usize,
    /// Structural nonzeros (in-block zeros excluded).
    pub nonzeros: usize,
    /// Scalar type (`f64`, `c64`, ...).
    pub scalar: &'static str,
    /// CPU threads.
    pub cpu_threads: usize,
    /// Copy ceiling (GB/s, read + write), measured with `cuMemcpyDtoD` in this run.
    pub copy_gbps: Option<f64>,
    /// Results.
    pub results: Vec<SpmvRow>,
}

fn progress(msg: &str) {
    eprintln!("[bench spmv] {msg}");
}

/// Runs the benchmark for the scalar type the options select.
pub fn run(
    gpu: Option<&Gpu>,
    gpu_skipped: Option<String>,
    opts: &SpmvBenchOptions,
) -> Result<SpmvReport> {
    match (opts.double, opts.complex) {
        (true, false) => run_typed::<f64>(gpu, gpu_skipped, opts),
        (false, false) => run_typed::<f32>(gpu, gpu_skipped, opts),
        (true, true) => run_typed::<Complex<f64>>(gpu, gpu_skipped, opts),
        (false, true) => run_typed::<Complex<f32>>(gpu, gpu_skipped, opts),
    }
}

/// `max_i |got_i - want_i| / scale_i`.
fn max_rel_error<T: Element>(got: &[T], want: &[T], scale: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .zip(scale)
        .map(|((&g, &w), &s)| (bref::widen(g) - bref::widen(w)).norm() / s.max(f64::MIN_POSITIVE))
        .fold(0.0, f64::max)
}

/// Times `f` (which writes `dy`) with device events, then checks its result against the
/// CPU's: `(timing, max_rel_error)`.
fn measure<T: Element>(
    gpu: &Gpu,
    reps: usize,
    dy: &mut DeviceBuffer<T>,
    y_cpu: &[T],
    scale: &[f64],
    mut f: impl FnMut(&mut DeviceBuffer<T>) -> Result<()>,
) -> Result<(Stats, f64)> {
    let stats = time_gpu(gpu, 2, reps, || f(dy))?;
    Ok((stats, max_rel_error(&dy.download()?, y_cpu, scale)))
}

fn run_typed<T>(
    gpu: Option<&Gpu>,
    gpu_skipped: Option<String>,
    opts: &SpmvBenchOptions,
) -> Result<SpmvReport>
where
    T: Element + CusparseScalar + MatrixScalar<T> + SpmvKernels<T>,
{
    let spec = opts.case.spec()?;
    progress(&format!(
        "generating {} ({} cells) as {}",
        opts.case.name(),
        spec.cells(),
        T::SUFFIX
    ));
    let a: Bcsr<T> = crate::progress::generate(&spec)?;
    let csr = a.to_csr().without_zeros();
    let (n, nnz, blocks) = (a.n_rows(), csr.nnz(), a.nnz_blocks());
    let size = size_of::<T>() as f64;
    let flops = if T::IS_COMPLEX { 8.0 } else { 2.0 } * nnz as f64;
    let vectors = 2.0 * n as f64 * size;
    let bcsr_bytes =
        blocks as f64 * (25.0 * size + 4.0) + (a.n_block_rows() + 1) as f64 * 8.0 + vectors;
    let csr_bytes = nnz as f64 * (size + 4.0) + (n + 1) as f64 * 4.0 + vectors;
    let bsr_bytes =
        blocks as f64 * (25.0 * size + 4.0) + (a.n_block_rows() + 1) as f64 * 4.0 + vectors;
    let x = random_vector::<T>(n, 21);
    let (alpha, beta) = (T::ONE, T::ZERO);
    // |A| |x| per row: the scale of the rounding error of each row's sum.
    let scale: Vec<f64> = (0..n)
        .map(|i| {
            let (cols, vals) = csr.row(i);
            cols.iter()
                .zip(vals)
                .map(|(&c, &v)| bref::widen(v).norm() * bref::widen(x[c as usize]).norm())
                .sum::<f64>()
        })
        .collect();

    progress(&format!(
        "CPU ({} threads): BCSR and CSR",
        rayon::current_num_threads()
    ));
    let reps_cpu = opts.reps.clamp(1, 10);
    let mut y_cpu = vec![T::ZERO; n];
    let cpu_bcsr = time_cpu(1, reps_cpu, || {
        cpu::spmv_bcsr(alpha, &a, &x, beta, &mut y_cpu)
    });
    cpu::spmv_bcsr(alpha, &a, &x, beta, &mut y_cpu)?;
    let mut y_csr = vec![T::ZERO; n];
    let cpu_csr = time_cpu(1, reps_cpu, || {
        cpu::spmv_csr(alpha, &csr, &x, beta, &mut y_csr)
    });
    cpu::spmv_csr(alpha, &csr, &x, beta, &mut y_csr)?;

    let mut results = Vec::new();
    let row =
        |format: &str, kernel: &str, device: &'static str, stats: Stats, bytes: f64, err: f64| {
            SpmvRow {
                format: format.into(),
                kernel: kernel.into(),
                device,
                stats,
                gflops: flops / (stats.median_ms * 1e-3) / 1e9,
                bytes,
                gbps: stats.gbps(bytes),
                fraction_of_copy: None,
                speedup_over_cpu: cpu_bcsr.median_ms / stats.median_ms,
                speedup_over_cusparse_csr: None,
                error_vs_cpu: err,
            }
        };
    results.push(row(
        "BCSR 5x5",
        "rayon, row-major blocks",
        "CPU",
        cpu_bcsr,
        bcsr_bytes,
        0.0,
    ));
    results.push(row(
        "CSR",
        "rayon",
        "CPU",
        cpu_csr,
        csr_bytes,
        max_rel_error(&y_csr, &y_cpu, &scale),
    ));

    let (mut copy_gbps, mut cusparse_skipped) = (None, None);
    if let Some(gpu) = gpu {
        let dx = gpu.upload(&x)?;
        let mut dy = gpu.alloc::<T>(n)?;
        {
            // Ceiling: a device-to-device copy of the BCSR values' size (read + write).
            let elems = (blocks * 25).max(1);
            progress(&format!(
                "copy ceiling: {:.2} GB",
                elems as f64 * size / 1e9
            ));
            let src = gpu.alloc_zeroed::<T>(elems)?;
            let mut dst = gpu.alloc::<T>(elems)?;
            let c = time_gpu(gpu, 2, opts.reps, || Ok(copy_device(&src, &mut dst)?))?;
            copy_gbps = Some(c.gbps(2.0 * elems as f64 * size));
        }
        for (layout, label) in [
            (BlockLayout::RowMajor, "row-major blocks"),
            (BlockLayout::ColMajor, "column-major blocks"),
        ] {
            progress(&format!("ferrocuda BCSR 5x5, {label}"));
            let m = a.with_layout(layout);
            let dm = DeviceBcsr::upload(gpu, &m)?;
            drop(m);
            let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                spmv_bcsr(alpha, &dm, &dx, beta, dy)
            })?;
            results.push(row(
                "BCSR 5x5",
                &format!("ferrocuda, thread per row, {label}"),
                "GPU",
                stats,
                bcsr_bytes,
                err,
            ));
        }
        {
            progress("ferrocuda BELL 5x5 (blocked ELL, coalesced)");
            let m = Bell::from_bcsr(&a, &BellOptions::default())?;
            let bell_bytes =
                blocks as f64 * (25.0 * size + 4.0) + a.n_block_rows() as f64 * 4.0 + vectors;
            let dm = DeviceBell::upload(gpu, &m)?;
            drop(m);
            let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                spmv_bell(alpha, &dm, &dx, beta, dy)
            })?;
            results.push(row(
                "BELL 5x5",
                "ferrocuda, thread per row, interleaved blocks",
                "GPU",
                stats,
                bell_bytes,
                err,
            ));
        }
        {
            progress("ferrocuda SBELL (sliced masked BELL: no ghost rows, no in-block zeros)");
            let m = Sbell::from_bcsr(&a)?;
            let sbell_bytes = m.entries_read() as f64 * size
                + m.blocks() as f64 * 4.0
                + m.n_stored() as f64 * 8.0
                + vectors;
            let dm = DeviceSbell::upload(gpu, &m)?;
            drop(m);
            let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                spmv_sbell(alpha, &dm, &dx, beta, dy)
            })?;
            results.push(row(
                "SBELL 5x5 (ours)",
                "ferrocuda, thread per block row, masked slices",
                "GPU",
                stats,
                sbell_bytes,
                err,
            ));
        }
        match Bdia::from_bcsr(&a, &BdiaOptions::default()) {
            Ok(m) => {
                progress("ferrocuda BDIA (block stencil, no column indices)");
                let in_range: usize = m
                    .row_index()
                    .iter()
                    .map(|&r| {
                        (0..m.offsets().len())
                            .filter(|&d| m.block_col(r as usize, d).is_some())
                            .count()
                    })
                    .sum();
                let bdia_bytes =
                    in_range as f64 * 25.0 * size + m.row_index().len() as f64 * 4.0 + vectors;
                let dm = DeviceBdia::upload(gpu, &m)?;
                drop(m);
                let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                    spmv_bdia(alpha, &dm, &dx, beta, dy)
                })?;
                results.push(row(
                    "BDIA 5x5 (ours)",
                    "ferrocuda, thread per row, fixed block diagonals",
                    "GPU",
                    stats,
                    bdia_bytes,
                    err,
                ));
            }
            Err(e) => progress(&format!("BDIA skipped: {e}")),
        }
        {
            progress("ferrocuda ELL (scalar, in-block zeros dropped)");
            let m = Ell::from_bcsr(&a, &EllOptions::default())?;
            let ell_bytes = nnz as f64 * (size + 4.0) + n as f64 * 4.0 + vectors;
            let dm = DeviceEll::upload(gpu, &m)?;
            drop(m);
            let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                spmv_ell(alpha, &dm, &dx, beta, dy)
            })?;
            results.push(row(
                "ELL",
                "ferrocuda, thread per row, zeros dropped",
                "GPU",
                stats,
                ell_bytes,
                err,
            ));
        }
        {
            // The same CSR as cuSPARSE's row below (no stored zeros), so the two compare.
            let dm = DeviceCsr::upload(gpu, &csr)?;
            let lanes = dm.lanes();
            // 64-bit row offsets (cuSPARSE's row below reads 32-bit ones).
            let ours_bytes = csr_bytes + (n + 1) as f64 * 4.0;
            progress(&format!("ferrocuda CSR ({lanes} threads per row)"));
            let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                spmv_csr(alpha, &dm, &dx, beta, dy)
            })?;
            results.push(row(
                "CSR",
                &format!("ferrocuda, {lanes} threads per row"),
                "GPU",
                stats,
                ours_bytes,
                err,
            ));
        }
        match Cusparse::new(gpu) {
            Ok(cs) => {
                progress("cuSPARSE CSR (cusparseSpMV)");
                let mut m = cs.upload_csr(&csr)?;
                let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                    cs.spmv_csr(alpha, &mut m, &dx, beta, dy)
                })?;
                drop(m);
                results.push(row(
                    "CSR",
                    "cuSPARSE SpMV (generic API)",
                    "GPU",
                    stats,
                    csr_bytes,
                    err,
                ));
                progress(
                    "cuSPARSE CSR with the stored in-block zeros (the literal CSR of the BCSR)",
                );
                let full = a.to_csr();
                let full_bytes = full.nnz() as f64 * (size + 4.0) + (n + 1) as f64 * 4.0 + vectors;
                let mut m = cs.upload_csr(&full)?;
                drop(full);
                let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                    cs.spmv_csr(alpha, &mut m, &dx, beta, dy)
                })?;
                drop(m);
                results.push(row(
                    "CSR + stored zeros",
                    "cuSPARSE SpMV (generic API)",
                    "GPU",
                    stats,
                    full_bytes,
                    err,
                ));
                progress("cuSPARSE BSR (bsrmv)");
                let m = cs.upload_bsr(&a)?;
                let (stats, err) = measure(gpu, opts.reps, &mut dy, &y_cpu, &scale, |dy| {
                    cs.spmv_bsr(alpha, &m, &dx, beta, dy)
                })?;
                results.push(row(
                    "BCSR 5x5",
                    "cuSPARSE bsrmv, row-major blocks",
                    "GPU",
                    stats,
                    bsr_bytes,
                    err,
                ));
            }
            Err(e) => cusparse_skipped = Some(e.to_string()),
        }
        // The baseline is cuSPARSE on the CSR without stored zeros: its best case.
        let csr_ms = results
            .iter()
            .find(|r| r.format == "CSR" && r.kernel.starts_with("cuSPARSE SpMV"))
            .map(|r| r.stats.median_ms);
        for r in results.iter_mut().filter(|r| r.device == "GPU") {
            r.fraction_of_copy = copy_gbps.map(|c| r.gbps / c);
            r.speedup_over_cusparse_csr = csr_ms.map(|c| c / r.stats.median_ms);
        }
    }
    Ok(SpmvReport {
        device: gpu.map(|g| g.name()).transpose()?,
        gpu_skipped,
        cusparse_skipped,
        case: opts.case.name(),
        geometry: format!(
            "{} grid blocks of {} x {} x {} cells",
            spec.grid_blocks, spec.nx, spec.ntheta, spec.nr
        ),
        rows: n,
        blocks,
        nonzeros: nnz,
        scalar: T::SUFFIX,
        cpu_threads: rayon::current_num_threads(),
        copy_gbps,
        results,
    })
}

impl SpmvReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "format",
            "kernel",
            "on",
            "ms",
            "GFLOP/s",
            "GB/s",
            "% of copy",
            "vs CPU",
            "vs cuSPARSE CSR",
            "error vs CPU",
        ];
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
        let rows = self
            .results
            .iter()
            .map(|r| {
                vec![
                    r.format.clone(),
                    r.kernel.clone(),
                    r.device.to_string(),
                    format!("{:.4}", r.stats.median_ms),
                    format!("{:.1}", r.gflops),
                    format!("{:.1}", r.gbps),
                    opt(r.fraction_of_copy, &|f| format!("{:.1}", 100.0 * f)),
                    format!("{:.1}x", r.speedup_over_cpu),
                    opt(r.speedup_over_cusparse_csr, &|f| format!("{f:.2}x")),
                    if r.error_vs_cpu == 0.0 {
                        "same bits".into()
                    } else {
                        format!("{:.1e}", r.error_vs_cpu)
                    },
                ]
            })
            .collect();
        (headers, rows)
    }

    fn header_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "matrix: {} ({}), {} rows, {} blocks of 5x5, {} structural nonzeros, {}",
                self.case, self.geometry, self.rows, self.blocks, self.nonzeros, self.scalar
            ),
            match (&self.device, &self.gpu_skipped) {
                (Some(d), _) => format!("device: {d}"),
                (None, why) => format!("GPU part skipped: {}", why.as_deref().unwrap_or("no GPU")),
            },
            format!("CPU: {} rayon threads", self.cpu_threads),
        ];
        if let Some(c) = self.copy_gbps {
            lines.push(format!(
                "copy ceiling: {c:.1} GB/s (cuMemcpyDtoD of the BCSR values' size, read + write)"
            ));
        }
        if let Some(why) = &self.cusparse_skipped {
            lines.push(format!("cuSPARSE skipped: {why}"));
        }
        lines.push("GFLOP/s: 2 flops per real, 8 per complex multiply-add, over the structural nonzeros; bytes: values + indices + x + y once each (beta = 0)".into());
        lines.push("vs cuSPARSE CSR: against cuSPARSE on the CSR without the zeros stored inside blocks (its best case)".into());
        lines
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let (h, rows) = self.cells();
        format!(
            "{}\n\n{}\n",
            self.header_lines().join("\n"),
            table(&h, &rows)
        )
    }

    /// Markdown section for this case and scalar type.
    pub fn to_markdown(&self) -> String {
        let (h, rows) = self.cells();
        let mut out = format!("## {} {}\n\n", self.case, self.scalar);
        for line in self.header_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
        out.push_str(&crate::markdown_table(&h, &rows));
        out
    }

    /// Bar chart: bandwidth of every kernel (coloured by CPU, ferrocuda on the GPU and
    /// the vendor library), with the copy ceiling and cuSPARSE on the CSR (the baseline
    /// of "vs cuSPARSE CSR") as reference lines.
    pub fn chart(&self) -> super::plot::BarChart {
        let rows: Vec<(String, String, String, f64)> = self
            .results
            .iter()
            .map(|r| {
                (
                    r.format.clone(),
                    r.kernel.clone(),
                    r.device.to_string(),
                    r.gbps,
                )
            })
            .collect();
        spmv_chart(
            &self.case,
            self.scalar,
            self.device.as_deref(),
            self.copy_gbps,
            &rows,
        )
    }

    /// File stem of this run's results (`spmv-case4-f64`).
    pub fn stem(&self) -> String {
        format!("spmv-{}-{}", self.case, self.scalar)
    }
}

/// The SpMV chart from a results table's columns: `(format, kernel, on, GB/s)` per row
/// (also used to redraw it from a results file, [`crate::redraw`]).
pub fn spmv_chart(
    case: &str,
    scalar: &str,
    device: Option<&str>,
    copy_gbps: Option<f64>,
    rows: &[(String, String, String, f64)],
) -> super::plot::BarChart {
    use super::plot::{BarChart, BarGroup};
    let series = ["CPU (rayon)", "GPU, ferrocuda", "GPU, cuSPARSE"];
    let class = |kernel: &str, on: &str| {
        if on != "GPU" {
            0
        } else if kernel.starts_with("cuSPARSE") {
            2
        } else {
            1
        }
    };
    let vendor = rows
        .iter()
        .find(|r| r.0 == "CSR" && r.1.starts_with("cuSPARSE SpMV"))
        .map(|r| (r.3, "cuSPARSE on the CSR".to_string()));
    BarChart {
        title: format!(
            "SpMV {case} {scalar} on {}: bytes moved / time",
            device.unwrap_or("CPU only")
        ),
        value_label: "GB/s (values + indices + x + y once each)".into(),
        groups: rows
            .iter()
            .map(|(format, kernel, on, gbps)| {
                let mut values = vec![None; series.len()];
                values[class(kernel, on)] = Some(*gbps);
                BarGroup {
                    label: format!("{format}: {kernel}"),
                    values,
                }
            })
            .collect(),
        series: series.iter().map(|s| s.to_string()).collect(),
        reference_lines: copy_gbps
            .map(|c| (c, "device copy (ceiling)".to_string()))
            .into_iter()
            .chain(vendor)
            .collect(),
        log_x: false,
    }
}

/// Width and height of the SpMV charts, in pixels.
pub const SPMV_CHART_SIZE: (u32, u32) = (1400, 720);

/// Writes `<dir>/<stem>.md` and its chart for this run and rebuilds `<dir>/spmv.md` from
/// every `spmv-*.md` in `dir`, so one file holds all runs (where `out` allows it:
/// [`ResultsDir::save`]).
pub fn write_results(report: &SpmvReport, out: &ResultsDir) -> Result<Saved> {
    out.save("spmv.md", |out| {
        let png = format!("{}.png", report.stem());
        let mut written = crate::plot::write_with_data(
            report.chart(),
            &out.join(&png),
            SPMV_CHART_SIZE.0,
            SPMV_CHART_SIZE.1,
            "ferrocuda bench spmv",
        )?;
        let section = out.section(&format!(
            "{}\n![{}]({png})\n",
            report.to_markdown(),
            report.stem()
        ));
        written.push(out.write_markdown(&format!("{}.md", report.stem()), &section)?);
        written.push(out.write_markdown("spmv.md", &spmv_index(out)?)?);
        Ok(written)
    })
}

/// `spmv.md`: every `spmv-*.md` of the folder, in name order.
fn spmv_index(out: &ResultsDir) -> Result<String> {
    let dir = out.dir();
    let io = |e: std::io::Error| Error::InvalidArgument {
        op: "writing results",
        reason: format!("{}: {}", dir.display(), crate::output::plain(&e)),
    };
    let mut parts: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                // One file per case and type; spmv-thesis.md is another tool's.
                n.starts_with("spmv-") && n.ends_with(".md") && n != "spmv-thesis.md"
            })
        })
        .collect();
    parts.sort();
    let mut index = String::from(
        "# SpMV benchmark\n\nWritten by `ferrocuda bench spmv`; do not edit by hand. One section per case and scalar type (each from its own run).\n\n",
    );
    for p in &parts {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        index.push_str(&out.read_markdown(name).unwrap_or_default());
        index.push('\n');
    }
    Ok(index)
}

#[cfg(test)]
mod case_tests {
    use super::SpmvCase;

    #[test]
    fn cases_parse_and_name_themselves() {
        assert_eq!(SpmvCase::parse("6").unwrap(), SpmvCase::Thesis(6));
        assert_eq!(SpmvCase::parse(" large ").unwrap(), SpmvCase::Large);
        let g = SpmvCase::parse("10x40x20x2").unwrap();
        assert_eq!(g.name(), "10x40x20x2");
        let spec = g.spec().unwrap();
        assert_eq!(
            (spec.nx, spec.ntheta, spec.nr, spec.grid_blocks),
            (10, 40, 20, 2)
        );
        for bad in [
            "0",
            "7",
            "10x40x20",
            "10x0x20x2",
            "axbxcxd",
            "",
            "1x2x3x4x5",
        ] {
            let e = SpmvCase::parse(bad).unwrap_err().to_string();
            assert!(e.contains("NXxNTHETAxNRxBLOCKS"), "{bad:?}: {e}");
        }
    }
}
