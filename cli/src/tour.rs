//! `ferrocuda` with no arguments: a small problem of every module on the CPU and (if
//! present) the GPU, with times, speedups and a correctness check. Each module adds
//! its steps to [`run`].

use serde::Serialize;

use ferrocuda::Result;
use ferrocuda::blas1::{cpu, gpu as gpu_blas1, reference};
use ferrocuda::gpu::Gpu;
use ferrocuda::report::table;
use ferrocuda::rng::random_vector;
use ferrocuda::timing::{time_cpu, time_gpu};

/// One step of the tour.
#[derive(Debug, Clone, Serialize)]
pub struct TourRow {
    /// Module.
    pub module: &'static str,
    /// What ran.
    pub problem: String,
    /// CPU median time (all cores), ms.
    pub cpu_ms: f64,
    /// GPU median time, ms.
    pub gpu_ms: Option<f64>,
    /// CPU / GPU.
    pub speedup: Option<f64>,
    /// Relative difference of the GPU result from the CPU result.
    pub gpu_vs_cpu: Option<f64>,
}

/// The tour's results.
#[derive(Debug, Clone, Serialize)]
pub struct TourReport {
    /// Device name, if a GPU ran.
    pub device: Option<String>,
    /// Why the GPU part was skipped, if it was.
    pub gpu_skipped: Option<String>,
    /// CPU threads.
    pub cpu_threads: usize,
    /// Steps.
    pub rows: Vec<TourRow>,
}

/// Runs every module's small problem.
pub fn run(gpu: Option<&Gpu>, gpu_skipped: Option<String>) -> Result<TourReport> {
    let mut rows = Vec::new();
    blas1_steps(gpu, &mut rows)?;
    spmv_steps(gpu, &mut rows)?;
    gmres_steps(gpu, &mut rows)?;
    rock4_steps(gpu, &mut rows)?;
    mpc_steps(gpu, &mut rows)?;
    mg_steps(gpu, &mut rows)?;
    lu_steps(gpu, &mut rows)?;
    rng_steps(gpu, &mut rows)?;
    probe_steps(gpu, &mut rows)?;
    Ok(TourReport {
        device: gpu.map(|g| g.name()).transpose()?,
        gpu_skipped,
        cpu_threads: rayon::current_num_threads(),
        rows,
    })
}

fn blas1_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    const N: usize = 1 << 22;
    let x = random_vector::<f64>(N, 11);
    let y = random_vector::<f64>(N, 12);
    let mut y_cpu = y.clone();
    let cpu_axpy = time_cpu(1, 10, || cpu::axpy(0.5, &x, &mut y_cpu));
    let cpu_dot = time_cpu(1, 10, || cpu::dot(&x, &y));
    let dot_cpu = cpu::dot(&x, &y)?;
    let scale = reference::dot_magnitude(&x, &y);

    let (mut gpu_axpy, mut gpu_dot, mut axpy_diff, mut dot_diff) = (None, None, None, None);
    if let Some(gpu) = gpu {
        let dx = gpu.upload(&x)?;
        let mut dy = gpu.upload(&y)?;
        let mut out = gpu.alloc::<f64>(1)?;
        gpu_axpy = Some(time_gpu(gpu, 2, 10, || gpu_blas1::axpy(0.5, &dx, &mut dy))?.median_ms);
        gpu_dot = Some(time_gpu(gpu, 2, 10, || gpu_blas1::dot_into(&dx, &dx, &mut out))?.median_ms);
        // Check: one axpy from the same start on both sides, and the dot product.
        let mut y1 = y.clone();
        cpu::axpy(0.5, &x, &mut y1)?;
        dy.copy_from_host(&y)?;
        gpu_blas1::axpy(0.5, &dx, &mut dy)?;
        let g = dy.download()?;
        axpy_diff = Some(
            g.iter()
                .zip(&y1)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max),
        );
        let dyy = gpu.upload(&y)?;
        dot_diff = Some((gpu_blas1::dot(&dx, &dyy)? - dot_cpu).abs() / scale);
    }
    let row = |problem: &str, cpu_ms: f64, gpu_ms: Option<f64>, diff: Option<f64>| TourRow {
        module: "blas1",
        problem: problem.to_string(),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    };
    rows.push(row(
        "axpy f64, n = 2^22",
        cpu_axpy.median_ms,
        gpu_axpy,
        axpy_diff,
    ));
    rows.push(row(
        "dot f64, n = 2^22",
        cpu_dot.median_ms,
        gpu_dot,
        dot_diff,
    ));
    Ok(())
}

fn spmv_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::sparse::Sbell;
    use ferrocuda::sparse::generate::{self, TraceSpec};
    use ferrocuda::sparse::gpu::{DeviceSbell, spmv_sbell};
    // Thesis case 1 geometry with 2 grid blocks: 16,000 cells, about 0.2 M 5x5 blocks.
    let spec = TraceSpec::new(10, 40, 20, 2);
    // In SBELL, ferrocuda's fastest format on this structure.
    let a = Sbell::from_bcsr(&generate::trace_like::<f64>(&spec)?)?;
    let x = random_vector::<f64>(a.n_cols(), 13);
    let mut y = vec![0.0; a.n_rows()];
    let cpu_ms = time_cpu(1, 10, || {
        ferrocuda::sparse::cpu::spmv_sbell(1.0, &a, &x, 0.0, &mut y)
    })
    .median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(gpu) = gpu {
        let da = DeviceSbell::upload(gpu, &a)?;
        let dx = gpu.upload(&x)?;
        let mut dy = gpu.alloc::<f64>(a.n_rows())?;
        gpu_ms = Some(time_gpu(gpu, 2, 10, || spmv_sbell(1.0, &da, &dx, 0.0, &mut dy))?.median_ms);
        let g = dy.download()?;
        diff = Some(
            g.iter()
                .zip(&y)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max),
        );
    }
    rows.push(TourRow {
        module: "sparse",
        problem: format!("SpMV SBELL 5x5 f64, {} blocks", a.blocks()),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// GMRES(30) with block Jacobi to 1e-8 on the tour's SpMV matrix; the check is the
/// difference of the two solutions relative to the CPU's.
fn gmres_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::krylov::{
        BlockJacobi, DeviceBlockJacobi, GmresOptions, cpu as kcpu, gpu as kgpu,
    };
    use ferrocuda::sparse::Sbell;
    use ferrocuda::sparse::generate::{self, TraceSpec};
    use ferrocuda::sparse::gpu::DeviceSbell;
    let bcsr = generate::trace_like::<f64>(&TraceSpec::new(10, 40, 20, 2))?;
    let a = Sbell::from_bcsr(&bcsr)?;
    // b = A x_true, so b is in the range of A (the ghost rows are empty).
    let xt = random_vector::<f64>(a.n_cols(), 17);
    let mut b = vec![0.0; a.n_rows()];
    ferrocuda::sparse::cpu::spmv_sbell(1.0, &a, &xt, 0.0, &mut b)?;
    let opts = GmresOptions::default();
    let m = BlockJacobi::new(&bcsr)?;
    let mut x = vec![0.0; a.n_cols()];
    let steps = kcpu::gmres(&a, Some(&m), &b, &mut x, &opts)?.iterations;
    let mut scratch = x.clone();
    let cpu_ms = time_cpu(0, 3, || {
        scratch.fill(0.0);
        kcpu::gmres(&a, Some(&m), &b, &mut scratch, &opts)
    })
    .median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(gpu) = gpu {
        let da = DeviceSbell::upload(gpu, &a)?;
        let dm = DeviceBlockJacobi::new(gpu, &bcsr)?;
        let db = gpu.upload(&b)?;
        let mut dx = gpu.alloc_zeroed::<f64>(a.n_cols())?;
        gpu_ms = Some(
            time_gpu(gpu, 1, 3, || {
                ferrocuda::blas1::gpu::fill(&mut dx, 0.0)?;
                kgpu::gmres(&da, Some(&dm), &db, &mut dx, &opts).map(|_| ())
            })?
            .median_ms,
        );
        let g = dx.download()?;
        let num = g
            .iter()
            .zip(&x)
            .map(|(p, q)| (p - q) * (p - q))
            .sum::<f64>();
        let den = x.iter().map(|q| q * q).sum::<f64>();
        diff = Some((num / den).sqrt());
    }
    rows.push(TourRow {
        module: "krylov",
        problem: format!("GMRES(30) + block Jacobi to 1e-8, same matrix, {steps} steps"),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// J, g and exact gradients of the swarm MPC (M = 1024 objects, N = 10) on the CPU twin and the
/// GPU; the check is the largest gradient difference relative to the largest entry.
fn mpc_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::mpc::{Gradient, SwarmModel, cpu as mcpu, gpu::GpuEvaluator};
    let model = SwarmModel::new(1024, 10)?;
    let x0 = model.thesis_initial_state();
    let u: Vec<f64> = (0..model.controls())
        .map(|i| ((i * 7919) % 25) as f64 - 12.0)
        .collect();
    let len = u.len();
    let (mut gj, mut gg) = (vec![0.0; len], vec![0.0; len]);
    let e = mcpu::gradient(&model, &x0, &u, Gradient::Exact, &mut gj, &mut gg)?;
    let cpu_ms = time_cpu(1, 3, || {
        mcpu::gradient(&model, &x0, &u, Gradient::Exact, &mut gj, &mut gg)
    })
    .median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(g) = gpu {
        let mut ev = GpuEvaluator::new(g, model, Gradient::Exact, 1)?;
        let (mut a, mut b) = (vec![f64::NAN; len], vec![f64::NAN; len]);
        let eg = ev.gradient_batch(&x0, &u, &mut a, &mut b)?[0];
        let scale = gj.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let d = a
            .iter()
            .zip(&gj)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
            / scale;
        diff = Some(d.max((eg.cost - e.cost).abs() / e.cost));
        let stream = ev.gpu().clone();
        gpu_ms = Some(time_gpu(&stream, 1, 3, || ev.launch(true))?.median_ms);
    }
    rows.push(TourRow {
        module: "mpc",
        problem: format!(
            "swarm M = 1024, N = 10: J, g and exact gradients (J = {:.4e})",
            e.cost
        ),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// ROCK4 on the 2D heat equation (255 x 255 points) to t = 0.01; the check is the
/// largest error against the exact semi-discrete solution. The GPU runs the default
/// path, the persistent kernel with the step decisions on the device.
fn rock4_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::rock4::problems::Heat2d;
    use ferrocuda::rock4::{Rock4Options, cpu as rcpu};
    let heat = Heat2d::new(255, 1.0)?;
    let opts = Rock4Options::default().rtol(1e-8).atol(1e-8);
    let mut y = heat.initial();
    let r = rcpu::integrate(&heat, 0.0, 0.01, &mut y, &opts)?;
    let exact = heat.exact(r.final_time);
    let err = y
        .iter()
        .zip(&exact)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let cpu_ms = time_cpu(0, 3, || {
        let mut y = heat.initial();
        rcpu::integrate(&heat, 0.0, 0.01, &mut y, &opts)
    })
    .median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(g) = gpu {
        let dp = heat.on_device(g);
        let mut dy = g.upload(&heat.initial())?;
        ferrocuda::rock4::gpu::integrate(&dp, 0.0, 0.01, &mut dy, &opts)?;
        let yg = dy.download()?;
        diff = Some(
            yg.iter()
                .zip(&y)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                / y.iter().fold(0.0, |m: f64, v| m.max(v.abs())),
        );
        gpu_ms = Some(
            time_gpu(g, 0, 3, || {
                dy.copy_from_host(&heat.initial())?;
                ferrocuda::rock4::gpu::integrate(&dp, 0.0, 0.01, &mut dy, &opts).map(|_| ())
            })?
            .median_ms,
        );
    }
    rows.push(TourRow {
        module: "rock4",
        problem: format!(
            "heat 255^2 to t = 0.01, {} steps (GPU: decided on the device), max error vs exact {err:.1e}",
            r.steps_accepted
        ),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

fn rng_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::rng::{Mexp, Sfmt, cpu as rcpu, gpu::SfmtStreams, jump};
    const STREAMS: usize = 256;
    const BLOCKS: usize = 32;
    let streams = jump::streams(&Sfmt::new(Mexp::M19937, 1234), STREAMS, 64)?;
    let mut want = vec![0u32; STREAMS * BLOCKS * 624];
    let cpu_ms = time_cpu(0, 3, || {
        let mut s = streams.clone();
        rcpu::fill_u32(&mut s, BLOCKS, &mut want)
    })
    .median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(g) = gpu {
        let mut dev = SfmtStreams::new(g, &streams)?;
        let mut out = g.alloc::<u32>(want.len())?;
        dev.fill_u32(BLOCKS, &mut out)?;
        let got = out.download()?;
        // Fraction of values that differ from the CPU twin: 0 means bit for bit.
        diff =
            Some(got.iter().zip(&want).filter(|(a, b)| a != b).count() as f64 / want.len() as f64);
        gpu_ms = Some(time_gpu(g, 1, 5, || dev.fill_u32(BLOCKS, &mut out))?.median_ms);
    }
    rows.push(TourRow {
        module: "rng",
        problem: format!(
            "SFMT19937, {STREAMS} jump-ahead streams x {} u32 (GPU vs CPU: fraction of values that differ)",
            BLOCKS * 624
        ),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// The probe's headline: a 256 MiB device copy (streaming kernel) against the
/// theoretical DRAM bandwidth, beside a CPU copy of the same bytes.
fn probe_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    const WORDS: usize = 1 << 26;
    let src: Vec<u32> = (0..WORDS as u32).collect();
    let mut dst = vec![0u32; WORDS];
    // black_box on both ends: otherwise the optimiser drops a copy nobody reads.
    let cpu_ms = time_cpu(1, 5, || {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    })
    .median_ms;
    let (mut gpu_ms, mut diff, mut note) = (None, None, String::new());
    if let Some(g) = gpu {
        let info = g.info()?;
        // One 16-byte vector per thread.
        let blocks = (WORDS / 4).div_ceil(256) as u32;
        let dsrc = g.upload(&src)?;
        let mut ddst = g.alloc_zeroed::<u32>(WORDS)?;
        let ms = time_gpu(g, 2, 10, || {
            ferrocuda::probe::gpu::copy(g, true, blocks, &dsrc, &mut ddst)
        })?
        .median_ms;
        diff = Some((ddst.download()? != src) as u8 as f64);
        let gbps = 2.0 * (WORDS * 4) as f64 / (ms * 1e-3) / 1e9;
        note = match info.theoretical_dram_bandwidth() {
            Some(b) => format!(
                ": {gbps:.0} GB/s = {:.1} % of DRAM {:.0} GB/s (ferrocuda probe: all ceilings)",
                100.0 * gbps * 1e9 / b,
                b / 1e9
            ),
            None => format!(": {gbps:.0} GB/s"),
        };
        gpu_ms = Some(ms);
    }
    rows.push(TourRow {
        module: "probe",
        problem: format!("copy 256 MiB{note}"),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// Multigrid (seed 003's setup: SBL, V(5,5), B = 10) on the 129^3 sine problem in f32
/// until the discretisation error; times are whole solves (setup excluded, norms
/// included), the check the largest difference of the GPU solution from the CPU twin's.
fn mg_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::multigrid::{MgOptions, Stop, cpu as mcpu, gpu as mgpu};
    let opts = MgOptions::new(129, 2).stop(Stop::Discretisation);
    let (want, report) = mcpu::solve::<f32>(&opts)?;
    let cycles = report
        .cycles_to_discretisation
        .unwrap_or(report.residual_norm.len());
    let cpu_ms = report.solve_seconds * 1e3;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(g) = gpu {
        // The first solve loads the module; time the second.
        mgpu::solve::<f32>(g, &opts)?;
        let (got, r) = mgpu::solve::<f32>(g, &opts)?;
        let scale = want
            .iter()
            .fold(0.0f32, |m, v| m.max(v.abs()))
            .max(f32::MIN_POSITIVE);
        let d = got
            .iter()
            .zip(&want)
            .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        diff = Some(f64::from(d / scale));
        gpu_ms = Some(r.solve_seconds * 1e3);
    }
    rows.push(TourRow {
        module: "multigrid",
        problem: format!(
            "Poisson 129^3 f32, SBL V(5,5) B = 10, {cycles} cycles to the discretisation error"
        ),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

/// LU with partial pivoting of a random 1024 x 1024 f64 matrix; the check is the
/// largest difference of the GPU factors from the CPU's, relative to the largest entry.
fn lu_steps(gpu: Option<&Gpu>, rows: &mut Vec<TourRow>) -> Result<()> {
    use ferrocuda::dense::{LuOptions, Matrix, cpu as dcpu, gpu as dgpu};
    let n = 1024;
    let a = Matrix::<f64>::random(n, n, -1.0, 1.0, 1024);
    let opts = LuOptions::default().with_backward_error(false);
    let c = dcpu::factor(&a, &opts.with_backward_error(true))?;
    let be = c.report.backward_error.unwrap_or(f64::NAN);
    let cpu_ms = time_cpu(0, 3, || dcpu::factor(&a, &opts)).median_ms;
    let (mut gpu_ms, mut diff) = (None, None);
    if let Some(g) = gpu {
        let d = dgpu::factor(g, &a, &opts)?;
        diff = Some(d.factors.max_rel_diff(&c.factors)?);
        let orig = g.upload(a.as_slice())?;
        let mut work = g.alloc::<f64>(n * n)?;
        let mut ipiv = g.alloc::<u32>(n)?;
        let mut ws = dgpu::LuWorkspace::new(g)?;
        let mut samples = Vec::new();
        let timer = g.timer()?;
        for r in 0..4 {
            ferrocuda::gpu::copy_device(&orig, &mut work)?;
            timer.start()?;
            dgpu::factor_device(n, &mut work, &mut ipiv, &mut ws, &opts)?;
            timer.stop()?;
            if r > 0 {
                samples.push(timer.elapsed_ms()?);
            }
        }
        gpu_ms = Some(ferrocuda::timing::Stats::from_samples(samples).median_ms);
    }
    rows.push(TourRow {
        module: "dense",
        problem: format!("LU, partial pivoting, random {n}^2 f64, CPU backward error {be:.1e}"),
        cpu_ms,
        gpu_ms,
        speedup: gpu_ms.map(|g| cpu_ms / g),
        gpu_vs_cpu: diff,
    });
    Ok(())
}

impl TourReport {
    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.module.to_string(),
                    r.problem.clone(),
                    format!("{:.3}", r.cpu_ms),
                    opt(r.gpu_ms, &|v| format!("{v:.4}")),
                    opt(r.speedup, &|v| format!("{v:.1}x")),
                    opt(r.gpu_vs_cpu, &|v| format!("{v:.1e}")),
                ]
            })
            .collect();
        let head = match (&self.device, &self.gpu_skipped) {
            (Some(d), _) => format!("ferrocuda tour on {d} and {} CPU threads", self.cpu_threads),
            (None, why) => format!(
                "ferrocuda tour on {} CPU threads; GPU part skipped: {}",
                self.cpu_threads,
                why.as_deref().unwrap_or("no GPU")
            ),
        };
        format!(
            "{head}\n\n{}\n",
            table(
                &[
                    "module",
                    "problem",
                    "CPU ms",
                    "GPU ms",
                    "speedup",
                    "GPU vs CPU"
                ],
                &rows
            )
        )
    }
}
