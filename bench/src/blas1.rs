//! `ferrocuda bench blas1`: axpy, dot and nrm2 at large n against the device-to-device
//! copy bandwidth measured in the same run, and against the CPU path on all cores.

use serde::Serialize;

use ferrocuda::Result;
use ferrocuda::blas1::{Element, cpu, gpu as gpu_blas1, reference};
use ferrocuda::gpu::{Gpu, copy_device};
use ferrocuda::report::table;
use ferrocuda::rng::random_vector;
use ferrocuda::timing::{Stats, time_cpu, time_gpu};

/// What to run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Blas1BenchOptions {
    /// Vector length.
    pub n: usize,
    /// Timed repetitions per measurement (median reported).
    pub reps: usize,
    /// Untimed repetitions first.
    pub warmup: usize,
}

impl Default for Blas1BenchOptions {
    fn default() -> Self {
        Blas1BenchOptions {
            n: 1 << 26,
            reps: 30,
            warmup: 3,
        }
    }
}

impl Blas1BenchOptions {
    /// Checks the options before anything runs: `--n` and `--reps` at least 1, and the
    /// vectors within the host memory this process may use.
    pub fn validate(&self) -> Result<()> {
        crate::at_least_one("bench blas1", &[("--n", self.n), ("--reps", self.reps)])?;
        // x, y, a working copy of y and a download, in c64 (the widest type; one type
        // at a time).
        crate::check_memory(
            format!(
                "bench blas1 --n {}: four vectors of {} c64 values",
                self.n, self.n
            ),
            self.n as u128,
            16,
            4,
        )
    }
}

/// One operation at one scalar type.
#[derive(Debug, Clone, Serialize)]
pub struct Blas1Row {
    /// `axpy`, `dot`, `nrm2`, or `copy (kernel)`.
    pub op: String,
    /// `f64` or `c64`.
    pub scalar: &'static str,
    /// Vector length.
    pub n: usize,
    /// Bytes the operation must move (each input read once, each output written once).
    pub bytes: f64,
    /// GPU timing, if a GPU was used.
    pub gpu: Option<Stats>,
    /// GPU bandwidth at the median time (GB/s).
    pub gpu_gbps: Option<f64>,
    /// GPU bandwidth as a fraction of the copy ceiling of the same byte count.
    pub fraction_of_copy: Option<f64>,
    /// CPU timing (all cores).
    pub cpu: Stats,
    /// CPU bandwidth (GB/s).
    pub cpu_gbps: f64,
    /// CPU median time / GPU median time.
    pub speedup: Option<f64>,
    /// |GPU - CPU| / scale for reductions (0 for bit-identical element-wise results).
    pub gpu_vs_cpu_error: Option<f64>,
}

/// The device-to-device copy used as the bandwidth ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct CopyCeiling {
    /// Scalar type whose vector size was copied.
    pub scalar: &'static str,
    /// Bytes read plus bytes written.
    pub bytes: f64,
    /// Timing of `cuMemcpyDtoDAsync`.
    pub stats: Stats,
    /// Bandwidth (GB/s), counting read and write.
    pub gbps: f64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Blas1Report {
    /// Device name, or `None` without a GPU.
    pub device: Option<String>,
    /// Why there is no GPU part, if there is none.
    pub gpu_skipped: Option<String>,
    /// Rayon threads of the CPU path.
    pub cpu_threads: usize,
    /// Copy ceilings, one per scalar type.
    pub copy_ceilings: Vec<CopyCeiling>,
    /// Results.
    pub rows: Vec<Blas1Row>,
}

fn progress(msg: &str) {
    eprintln!("[bench blas1] {msg}");
}

/// Runs the benchmark. Without a GPU it reports the CPU path alone and says why.
pub fn run(
    gpu: Option<&Gpu>,
    gpu_skipped: Option<String>,
    opts: &Blas1BenchOptions,
) -> Result<Blas1Report> {
    let mut report = Blas1Report {
        device: gpu.map(|g| g.name()).transpose()?,
        gpu_skipped,
        cpu_threads: rayon::current_num_threads(),
        copy_ceilings: Vec::new(),
        rows: Vec::new(),
    };
    bench_type::<f64>(gpu, opts, &mut report)?;
    bench_type::<ferrocuda::Complex<f64>>(gpu, opts, &mut report)?;
    Ok(report)
}

fn relative(a: ferrocuda::Complex<f64>, b: ferrocuda::Complex<f64>, scale: f64) -> f64 {
    (a - b).norm() / scale.max(f64::MIN_POSITIVE)
}

fn bench_type<T: Element>(
    gpu: Option<&Gpu>,
    opts: &Blas1BenchOptions,
    report: &mut Blas1Report,
) -> Result<()>
where
    T::Real: Element,
{
    let n = opts.n;
    let name = T::SUFFIX;
    let size = size_of::<T>() as f64;
    progress(&format!("{name}: generating 2 x {n} random values"));
    let x = random_vector::<T>(n, 1);
    let y0 = random_vector::<T>(n, 2);
    let alpha = T::from_parts(
        <T::Real as ferrocuda::RealScalar>::from_f64(0.5),
        <T::Real as ferrocuda::RealScalar>::from_f64(0.25),
    );

    // CPU (all cores).
    progress(&format!(
        "{name}: CPU axpy, dot, nrm2 on {} threads",
        rayon::current_num_threads()
    ));
    let mut y = y0.clone();
    let cpu_axpy = time_cpu(1, opts.reps.min(10), || cpu::axpy(alpha, &x, &mut y));
    let cpu_dot = time_cpu(1, opts.reps.min(10), || cpu::dot(&x, &y0));
    let cpu_nrm2 = time_cpu(1, opts.reps.min(10), || cpu::nrm2(&x));
    let dot_cpu = reference::widen(cpu::dot(&x, &y0)?);
    let nrm2_cpu = ferrocuda::RealScalar::to_f64(cpu::nrm2(&x));
    let dot_scale = reference::dot_magnitude(&x, &y0);

    let mut gpu_stats = [None, None, None, None];
    let mut errors = [None, None, None];
    if let Some(gpu) = gpu {
        progress(&format!("{name}: uploading"));
        let dx = gpu.upload(&x)?;
        let mut dy = gpu.upload(&y0)?;
        let mut dz = gpu.alloc::<T>(n)?;
        let mut dout = gpu.alloc::<T>(1)?;
        let mut dnorm = gpu.alloc::<T::Real>(1)?;

        progress(&format!(
            "{name}: copy ceiling (cuMemcpyDtoD of {:.2} GB)",
            n as f64 * size / 1e9
        ));
        let copy = time_gpu(gpu, opts.warmup, opts.reps, || {
            Ok(copy_device(&dx, &mut dz)?)
        })?;
        report.copy_ceilings.push(CopyCeiling {
            scalar: name,
            bytes: 2.0 * n as f64 * size,
            gbps: copy.gbps(2.0 * n as f64 * size),
            stats: copy,
        });
        progress(&format!("{name}: GPU axpy, dot, nrm2, copy kernel"));
        gpu_stats[0] = Some(time_gpu(gpu, opts.warmup, opts.reps, || {
            gpu_blas1::axpy(alpha, &dx, &mut dy)
        })?);
        gpu_stats[1] = Some(time_gpu(gpu, opts.warmup, opts.reps, || {
            gpu_blas1::dot_into(&dx, &dz, &mut dout)
        })?);
        gpu_stats[2] = Some(time_gpu(gpu, opts.warmup, opts.reps, || {
            gpu_blas1::nrm2_into(&dx, &mut dnorm)
        })?);
        gpu_stats[3] = Some(time_gpu(gpu, opts.warmup, opts.reps, || {
            gpu_blas1::copy(&dx, &mut dz)
        })?);

        // Check what was timed: one fresh axpy against the CPU (bit-identical by
        // construction), dot and nrm2 against the CPU within rounding.
        dy.copy_from_host(&y0)?;
        gpu_blas1::axpy(alpha, &dx, &mut dy)?;
        let mut y_cpu = y0.clone();
        cpu::axpy(alpha, &x, &mut y_cpu)?;
        let mismatches = dy
            .download()?
            .iter()
            .zip(&y_cpu)
            .filter(|(a, b)| a != b)
            .count();
        errors[0] = Some(mismatches as f64);
        let dy0 = gpu.upload(&y0)?;
        let dot_gpu = reference::widen(gpu_blas1::dot(&dx, &dy0)?);
        errors[1] = Some(relative(dot_gpu, dot_cpu, dot_scale));
        let nrm2_gpu = ferrocuda::RealScalar::to_f64(gpu_blas1::nrm2(&dx)?);
        errors[2] = Some((nrm2_gpu - nrm2_cpu).abs() / nrm2_cpu.max(f64::MIN_POSITIVE));
    }
    let ceiling = report
        .copy_ceilings
        .iter()
        .find(|c| c.scalar == name)
        .map(|c| c.gbps);
    let rows = [
        ("axpy", 3.0, cpu_axpy, gpu_stats[0], errors[0]),
        ("dot", 2.0, cpu_dot, gpu_stats[1], errors[1]),
        ("nrm2", 1.0, cpu_nrm2, gpu_stats[2], errors[2]),
    ];
    for (op, passes, cpu_stats, gpu_stat, err) in rows {
        let bytes = passes * n as f64 * size;
        let gpu_gbps = gpu_stat.map(|s| s.gbps(bytes));
        report.rows.push(Blas1Row {
            op: op.to_string(),
            scalar: name,
            n,
            bytes,
            gpu: gpu_stat,
            gpu_gbps,
            fraction_of_copy: gpu_gbps.zip(ceiling).map(|(g, c)| g / c),
            cpu: cpu_stats,
            cpu_gbps: cpu_stats.gbps(bytes),
            speedup: gpu_stat.map(|g| cpu_stats.median_ms / g.median_ms),
            gpu_vs_cpu_error: err,
        });
    }
    if let Some(copy_kernel) = gpu_stats[3] {
        let bytes = 2.0 * n as f64 * size;
        let g = copy_kernel.gbps(bytes);
        let mut z = y0.clone();
        let cpu_copy = time_cpu(1, opts.reps.min(10), || cpu::copy(&x, &mut z));
        report.rows.push(Blas1Row {
            op: "copy (kernel)".into(),
            scalar: name,
            n,
            bytes,
            gpu: Some(copy_kernel),
            gpu_gbps: Some(g),
            fraction_of_copy: ceiling.map(|c| g / c),
            cpu: cpu_copy,
            cpu_gbps: cpu_copy.gbps(bytes),
            speedup: Some(cpu_copy.median_ms / copy_kernel.median_ms),
            gpu_vs_cpu_error: None,
        });
    }
    Ok(())
}

impl Blas1Report {
    fn rows_as_cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "op",
            "type",
            "n",
            "GPU ms",
            "GPU GB/s",
            "% of copy",
            "CPU ms",
            "CPU GB/s",
            "speedup",
            "GPU vs CPU",
        ];
        let opt =
            |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
        let rows = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.op.clone(),
                    r.scalar.to_string(),
                    r.n.to_string(),
                    opt(r.gpu.map(|s| s.median_ms), 4),
                    opt(r.gpu_gbps, 1),
                    opt(r.fraction_of_copy.map(|f| 100.0 * f), 1),
                    format!("{:.3}", r.cpu.median_ms),
                    format!("{:.1}", r.cpu_gbps),
                    opt(r.speedup, 1),
                    match (r.op.as_str(), r.gpu_vs_cpu_error) {
                        ("axpy", Some(m)) => format!("{m} bits differ"),
                        (_, Some(e)) => format!("{e:.1e}"),
                        _ => "-".into(),
                    },
                ]
            })
            .collect();
        (headers, rows)
    }

    fn header_lines(&self) -> Vec<String> {
        let mut lines = vec![match (&self.device, &self.gpu_skipped) {
            (Some(d), _) => format!("device: {d}"),
            (None, Some(why)) => format!("GPU part skipped: {why}"),
            (None, None) => "GPU part skipped".into(),
        }];
        lines.push(format!("CPU: {} rayon threads", self.cpu_threads));
        if self
            .rows
            .iter()
            .any(|r| r.fraction_of_copy.is_some_and(|f| f > 1.0))
        {
            lines.push(
                "note: above 100 % of copy is possible for read-heavy kernels (dot, nrm2: reads only; axpy: 2 reads per write); \
                 a copy is half writes, and HBM streams reads faster than mixed traffic. 2 x n elements do not fit in L2 at the default n."
                    .into(),
            );
        }
        for c in &self.copy_ceilings {
            lines.push(format!(
                "copy ceiling ({}): cuMemcpyDtoD {:.2} GB in {:.4} ms = {:.1} GB/s (read + write)",
                c.scalar,
                c.bytes / 1e9,
                c.stats.median_ms,
                c.gbps
            ));
        }
        lines
    }

    /// Plain-text table with the device and the ceilings.
    pub fn to_text(&self) -> String {
        let (h, rows) = self.rows_as_cells();
        format!(
            "{}\n\n{}\n",
            self.header_lines().join("\n"),
            table(&h, &rows)
        )
    }

    /// Markdown, for docs/results/blas1.md.
    pub fn to_markdown(&self) -> String {
        let (h, rows) = self.rows_as_cells();
        let mut out = String::from(
            "# BLAS-1 benchmark\n\nWritten by `ferrocuda bench blas1 --markdown`; do not edit by hand.\n\n",
        );
        for line in self.header_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out.push_str("\nBytes counted: axpy 3n, dot 2n, nrm2 n, copy 2n elements; times are medians of event-timed runs; `% of copy` is the bandwidth relative to the device-to-device copy of the same vector size measured in the same run.\n\n");
        out.push_str(&crate::markdown_table(&h, &rows));
        out
    }
}
