//! `ferrocuda bench gmres`: GMRES on a TRACE-like case (thesis Table 4.1), the GPU
//! (SBELL operator, every vector on the device) against the CPU twin on all cores, with
//! the time per Arnoldi step split into SpMV / orthogonalisation / rest and set against
//! the bandwidth floor measured in the same run.
//!
//! Floor of one step: the SBELL SpMV's bytes plus the basis traffic any Gram-Schmidt
//! step must move (one read of the `k + 1` basis vectors for the projections, one for
//! the update, the work vector read and the new vector written), at the device copy
//! bandwidth of this run; averaged over the steps actually taken.

use serde::Serialize;

use super::spmv::SpmvCase;
use super::{markdown_table, table, time_gpu};
use crate::Complex;
use crate::error::Result;
use crate::gpu::{Gpu, copy_device};
use crate::krylov::gpu::{self as kgpu, KrylovElement};
use crate::krylov::{
    BlockJacobi, DeviceBlockJacobi, DeviceLinOp, GmresOptions, GmresReport, LinOp,
    Orthogonalization, Preconditioner, cpu as kcpu,
};
use crate::sparse::gpu::DeviceSbell;
use crate::sparse::{MatrixScalar, Sbell, cpu, generate};
use ferrocuda_kernels::names::{PrecondKernels, SpmvKernels};

/// What to run.
#[derive(Debug, Clone)]
pub struct GmresBenchOptions {
    /// The test case.
    pub case: SpmvCase,
    /// f64 (else f32).
    pub double: bool,
    /// Complex matrix and vectors.
    pub complex: bool,
    /// GMRES options (restart, tolerance, iterations, orthogonalisation).
    pub gmres: GmresOptions,
    /// Right preconditioner, built from the matrix's 5x5 blocks.
    pub precond: Preconditioner,
    /// Also run the CPU twin.
    pub cpu: bool,
}

/// Which solver a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// ferrocuda on the GPU, delayed CGS2.
    GpuCgs2,
    /// ferrocuda on the GPU, MGS.
    GpuMgs,
    /// ferrocuda's CPU twin.
    Cpu,
    /// CuPy's `cupyx.scipy.sparse.linalg.gmres` (CSR) on the GPU.
    Cupy,
    /// SciPy's `scipy.sparse.linalg.gmres` (CSR) on the CPU.
    Scipy,
}

/// One solver run.
#[derive(Debug, Clone, Serialize)]
pub struct GmresRow {
    /// Which solver.
    pub kind: SolverKind,
    /// Where and how.
    pub solver: String,
    /// The solve's report.
    pub report: GmresReport,
    /// Milliseconds per Arnoldi step: total, SpMV, preconditioner, orthogonalisation,
    /// rest.
    pub ms_per_step: [f64; 5],
    /// The bandwidth floor per step (GPU rows), ms.
    pub floor_ms_per_step: Option<f64>,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct GmresBenchReport {
    /// Case name and size.
    pub matrix: String,
    /// Scalar type.
    pub scalar: &'static str,
    /// GPU name.
    pub device: Option<String>,
    /// Copy bandwidth of this run, GB/s.
    pub copy_gbps: Option<f64>,
    /// Options used.
    pub options: GmresOptions,
    /// Right preconditioner.
    pub precond: Preconditioner,
    /// CPU threads.
    pub cpu_threads: usize,
    /// The runs.
    pub rows: Vec<GmresRow>,
}

fn progress(msg: &str) {
    eprintln!("[bench gmres] {msg}");
}

/// Runs the benchmark (the GPU part where `gpu` is given).
pub fn run(gpu: Option<&Gpu>, opts: &GmresBenchOptions) -> Result<GmresBenchReport> {
    match (opts.double, opts.complex) {
        (true, false) => run_typed::<f64>(gpu, opts),
        (false, false) => run_typed::<f32>(gpu, opts),
        (true, true) => run_typed::<Complex<f64>>(gpu, opts),
        (false, true) => run_typed::<Complex<f32>>(gpu, opts),
    }
}

/// Basis bytes of the steps of `report` (restart `m`): per step `k` of a cycle,
/// `2 (k + 1) + 2` vectors of `n`.
fn basis_bytes(report: &GmresReport, m: usize, n: usize, size: f64) -> f64 {
    (0..report.iterations)
        .map(|i| (2 * (i % m + 1) + 2) as f64 * n as f64 * size)
        .sum()
}

fn run_typed<T>(gpu: Option<&Gpu>, opts: &GmresBenchOptions) -> Result<GmresBenchReport>
where
    T: KrylovElement + MatrixScalar<T> + SpmvKernels<T> + PrecondKernels<T>,
{
    let spec = opts.case.spec()?;
    progress(&format!("generating {} as {}", opts.case.name(), T::SUFFIX));
    let a = generate::trace_like::<T>(&spec)?;
    let n = a.n_rows();
    let s = Sbell::from_bcsr(&a)?;
    let size = size_of::<T>() as f64;
    let spmv_bytes = s.entries_read() as f64 * size
        + s.blocks() as f64 * 4.0
        + s.n_stored() as f64 * 8.0
        + 2.0 * n as f64 * size;
    // b = A x_true: in the range of A (the ghost rows are empty).
    let xt = super::random_vector::<T>(n, 5);
    let mut b = vec![T::ZERO; n];
    cpu::spmv_bcsr(T::ONE, &a, &xt, T::ZERO, &mut b)?;
    let build_cpu_precond = || match opts.precond {
        Preconditioner::None => Ok(None),
        Preconditioner::Jacobi => BlockJacobi::point(&a).map(Some),
        Preconditioner::BlockJacobi => BlockJacobi::new(&a).map(Some),
    };
    let build_gpu_precond = |gpu: &Gpu| match opts.precond {
        Preconditioner::None => Ok(None),
        Preconditioner::Jacobi => DeviceBlockJacobi::point(gpu, &a).map(Some),
        Preconditioner::BlockJacobi => DeviceBlockJacobi::new(gpu, &a).map(Some),
    };
    // One application reads the inverse blocks and the vector and writes the result.
    let precond_bytes = match opts.precond {
        Preconditioner::None => 0.0,
        Preconditioner::Jacobi => 3.0 * n as f64 * size,
        Preconditioner::BlockJacobi => (a.b() as f64 + 2.0) * n as f64 * size,
    };
    let matrix = format!(
        "{} (8 grid blocks of {} x {} x {} cells), {} rows, {} SBELL entries",
        opts.case.name(),
        spec.nx,
        spec.ntheta,
        spec.nr,
        n,
        s.entries_read()
    );
    let m = opts.gmres.restart;
    let per_step = |r: &GmresReport| {
        let t = &r.timing;
        [t.total, t.spmv, t.precond, t.orthogonalization, t.rest]
            .map(|t| t * 1e3 / r.iterations.max(1) as f64)
    };
    let mut rows = Vec::new();
    let (mut device, mut copy_gbps) = (None, None);
    if let Some(gpu) = gpu {
        device = Some(gpu.name()?);
        let elems = (s.entries_read()).max(1);
        let src = gpu.alloc_zeroed::<T>(elems)?;
        let mut dst = gpu.alloc::<T>(elems)?;
        let c = time_gpu(gpu, 2, 10, || Ok(copy_device(&src, &mut dst)?))?;
        drop((src, dst));
        let bw = c.gbps(2.0 * elems as f64 * size);
        copy_gbps = Some(bw);
        progress(&format!("copy ceiling {bw:.0} GB/s"));
        let da = DeviceSbell::upload(gpu, &s)?;
        let db = gpu.upload(&b)?;
        let dm = build_gpu_precond(gpu)?;
        let dm = dm.as_ref().map(|m| m as &dyn DeviceLinOp<T>);
        for orth in [Orthogonalization::Cgs2, Orthogonalization::Mgs] {
            let o = opts.gmres.clone().orthogonalization(orth);
            // One untimed solve loads the modules and sizes the scratch.
            let mut x = gpu.alloc_zeroed::<T>(n)?;
            kgpu::gmres(&da, dm, &db, &mut x, &o.clone().max_iter(2))?;
            let mut x = gpu.alloc_zeroed::<T>(n)?;
            progress(&format!("GPU {orth:?}"));
            let r = kgpu::gmres(&da, dm, &db, &mut x, &o)?;
            let floor = ((spmv_bytes + precond_bytes) * r.iterations as f64
                + basis_bytes(&r, m, n, size))
                / (bw * 1e9)
                * 1e3
                / r.iterations.max(1) as f64;
            rows.push(GmresRow {
                kind: match orth {
                    Orthogonalization::Cgs2 => SolverKind::GpuCgs2,
                    Orthogonalization::Mgs => SolverKind::GpuMgs,
                },
                solver: format!("GPU, SBELL, {orth:?}"),
                ms_per_step: per_step(&r),
                floor_ms_per_step: Some(floor),
                report: r,
            });
        }
    }
    if opts.cpu {
        let o = opts
            .gmres
            .clone()
            .orthogonalization(Orthogonalization::Cgs2);
        progress(&format!("CPU ({} threads)", rayon::current_num_threads()));
        let cm = build_cpu_precond()?;
        let mut x = vec![T::ZERO; n];
        let r = kcpu::gmres(&s, cm.as_ref().map(|m| m as &dyn LinOp<T>), &b, &mut x, &o)?;
        rows.push(GmresRow {
            kind: SolverKind::Cpu,
            solver: "CPU (rayon), SBELL, Cgs2".into(),
            ms_per_step: per_step(&r),
            floor_ms_per_step: None,
            report: r,
        });
    }
    Ok(GmresBenchReport {
        matrix,
        scalar: T::SUFFIX,
        device,
        copy_gbps,
        options: opts.gmres.clone(),
        precond: opts.precond,
        cpu_threads: rayon::current_num_threads(),
        rows,
    })
}

impl GmresBenchReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "solver",
            "steps",
            "converged",
            "rel. residual",
            "ms/step",
            "SpMV",
            "M",
            "orth.",
            "rest",
            "floor ms/step",
            "x floor",
        ];
        let cpu_ms = self
            .rows
            .iter()
            .find(|r| r.floor_ms_per_step.is_none())
            .map(|r| r.ms_per_step[0]);
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![
                    r.solver.clone(),
                    r.report.iterations.to_string(),
                    r.report.converged.to_string(),
                    format!("{:.2e}", r.report.relative_residual),
                ];
                v.extend(r.ms_per_step.iter().map(|t| format!("{t:.3}")));
                match r.floor_ms_per_step {
                    Some(f) => {
                        v.push(format!("{f:.3}"));
                        let speed = cpu_ms
                            .map(|c| format!(" ({:.0}x CPU)", c / r.ms_per_step[0]))
                            .unwrap_or_default();
                        v.push(format!("{:.2}{speed}", r.ms_per_step[0] / f));
                    }
                    None => v.extend(["-".into(), "-".into()]),
                }
                v
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        format!(
            "- matrix: {}, {}\n- device: {}; copy ceiling {}\n- GMRES({}), rtol {:e}, at most {} steps, preconditioner {:?}; CPU: {} rayon threads\n- ms/step = total / Arnoldi steps (M: preconditioner); floor = (SBELL SpMV bytes + preconditioner bytes + 2 (k + 1) + 2 basis vectors per step) / copy bandwidth\n",
            self.matrix,
            self.scalar,
            self.device.as_deref().unwrap_or("none"),
            self.copy_gbps
                .map_or("-".into(), |c| format!("{c:.0} GB/s (this run)")),
            self.options.restart,
            self.options.rtol,
            self.options.max_iter,
            self.precond,
            self.cpu_threads
        )
    }

    /// Plain-text table for the terminal.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        format!("{}\n{}\n", self.header(), table(&h, &r))
    }

    /// Markdown section.
    pub fn to_markdown(&self) -> String {
        let (h, r) = self.cells();
        format!(
            "## {} {}, GMRES({})\n\n{}\n{}\n",
            self.matrix.split(' ').next().unwrap_or(""),
            self.scalar,
            self.options.restart,
            self.header(),
            markdown_table(&h, &r)
        )
    }
}

/// The thesis setup (seed 000): 100 Arnoldi steps without restart on Table 4.1's cases,
/// single-precision complex as in TRACE and f64.
#[derive(Debug, Clone, Serialize)]
pub struct GmresThesisReport {
    /// GPU name.
    pub device: Option<String>,
    /// One report per case and scalar type.
    pub runs: Vec<GmresBenchReport>,
}

/// Runs the thesis setup on `cases` (1..6), `c32` and `f64` each; `template` gives the
/// CPU and peer choices (its GMRES options are replaced by 100 steps, no restart, no
/// tolerance).
pub fn run_thesis(
    gpu: Option<&Gpu>,
    cases: &[usize],
    template: &GmresBenchOptions,
) -> Result<GmresThesisReport> {
    let mut runs = Vec::new();
    for &case in cases {
        for (double, complex) in [(false, true), (true, false)] {
            let opts = GmresBenchOptions {
                case: SpmvCase::Thesis(case),
                double,
                complex,
                gmres: template
                    .gmres
                    .clone()
                    .restart(100)
                    .max_iter(100)
                    .rtol(0.0)
                    .atol(0.0),
                ..template.clone()
            };
            runs.push(run(gpu, &opts)?);
        }
    }
    Ok(GmresThesisReport {
        device: gpu.map(|g| g.name()).transpose()?,
        runs,
    })
}

impl GmresThesisReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "case",
            "scalar",
            "steps",
            "GPU CGS2 ms/step",
            "x floor",
            "GPU MGS ms/step",
            "x floor",
            "CPU ms/step",
            "CGS2 vs CPU",
            "CuPy ms/step",
            "CGS2 vs CuPy",
        ];
        let rows = self
            .runs
            .iter()
            .map(|r| {
                let find = |k: SolverKind| r.rows.iter().find(|row| row.kind == k);
                let ms = |k| find(k).map(|row| row.ms_per_step[0]);
                let cell = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
                let ratio = |a: Option<f64>, b: Option<f64>| {
                    a.zip(b)
                        .map_or("-".into(), |(a, b)| format!("{:.1}x", b / a))
                };
                let floor = |k| {
                    find(k)
                        .and_then(|row| row.floor_ms_per_step.map(|f| row.ms_per_step[0] / f))
                        .map_or("-".into(), |x| format!("{x:.2}"))
                };
                let cgs2 = ms(SolverKind::GpuCgs2);
                vec![
                    r.matrix.split(' ').next().unwrap_or("").to_string(),
                    r.scalar.to_string(),
                    r.rows
                        .first()
                        .map_or("-".into(), |row| row.report.iterations.to_string()),
                    cell(cgs2),
                    floor(SolverKind::GpuCgs2),
                    cell(ms(SolverKind::GpuMgs)),
                    floor(SolverKind::GpuMgs),
                    cell(ms(SolverKind::Cpu)),
                    ratio(cgs2, ms(SolverKind::Cpu)),
                    cell(ms(SolverKind::Cupy)),
                    ratio(cgs2, ms(SolverKind::Cupy)),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        let first = self.runs.first();
        format!(
            "- device: {}; the copy ceiling of each run is in its section below\n- GMRES(100), 100 Arnoldi steps without restart, no tolerance (seed 000's setup), SBELL operator, no preconditioner; CPU: {} rayon threads\n- x floor: time per step over (SBELL SpMV bytes + 2 (k + 1) + 2 basis vectors per step) / copy bandwidth of the same run\n",
            self.device.as_deref().unwrap_or("none"),
            first.map_or(0, |r| r.cpu_threads)
        )
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        format!("{}\n{}\n", self.header(), table(&h, &r))
    }

    /// The Markdown file: the summary table, then every run's own section.
    pub fn to_markdown(&self) -> String {
        let (h, r) = self.cells();
        let mut text = format!(
            "# GMRES, the thesis setup\n\nWritten by `ferrocuda bench gmres --thesis`; do not edit by hand.\n\n{}\n{}\n",
            self.header(),
            markdown_table(&h, &r)
        );
        for run in &self.runs {
            text.push_str(&run.to_markdown());
        }
        text
    }
}
