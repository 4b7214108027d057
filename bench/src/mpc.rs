//! `ferrocuda bench mpc`: seed 001's Tables 8.3 and 8.4 measured again, then beyond.
//!
//! - **Table 8.3**: for `M = 32..256`, `N = 5..10` the time of `J, g` alone (the thesis's
//!   first series) and of `J, g` plus both gradients by the thesis's forward differences
//!   (second series), CPU on all cores against the GPU, and the exact (adjoint)
//!   gradient on both. GPU figures are the device time of the queued kernels (CUDA
//!   events, inputs already on the device: the thesis's "Nettolaufzeiten"); the exact
//!   gradient is also timed end to end (upload, kernels, download) on the host clock.
//!   The thesis's figures (GTX 285 against one core of its 2010 CPU) stand beside.
//! - **Large swarms**: exact gradients for `M = 1024, 4096` (`N = 10`), and many
//!   problems per launch (`M = 256`, `N = 10`).
//! - **Exact kernels** at `M = 256`, `N = 10`: the tiled kernels (graph replay) against
//!   the fused kernel with several objects per block, device time.
//! - **Table 8.4**: ten MPC steps from (8.6) (reference 0) with exact gradients, CPU and
//!   GPU: total time, the optimiser's own share, and the evaluation counts.
//! - **Closed loop** (§8.5.3): the swarm to 0 and then to (3, 0, 0, 0), counting
//!   constraint violations; a trajectory plot.
//!
//! Every GPU figure carries the device's name and its ratio to the CPU twin measured in
//! the same run. Writes `<results-dir>/mpc.md` with plots.

use crate::output::{ResultsDir, Saved};
use std::time::Instant;

use serde::Serialize;

use super::plot::{LineChart, LineSeries, write_with_data};
use crate::markdown_table;
use ferrocuda::Result;
use ferrocuda::gpu::Gpu;
use ferrocuda::mpc::gpu::{ExactKernels, GpuEvaluator};
use ferrocuda::mpc::optimize::{LoopReport, MpcOptions, closed_loop};
use ferrocuda::mpc::{CpuEvaluator, Evaluator, Gradient, SwarmModel, cpu};
use ferrocuda::report::table;
use ferrocuda::timing::{Stats, time_cpu, time_gpu};

/// Seed 001, Table 8.3: `(M, N, CPU s, GPU s)` of `J, g` (first series), then of
/// `J, g` and their forward-difference gradients (second series).
pub const THESIS_TABLE_8_3: [(usize, usize, f64, f64, f64, f64); 24] = [
    (32, 5, 1.796e-4, 3.815e-4, 3.412e-2, 1.348e-3),
    (32, 6, 2.106e-4, 4.458e-4, 4.767e-2, 1.728e-3),
    (32, 7, 2.454e-4, 5.102e-4, 6.235e-2, 2.144e-3),
    (32, 8, 2.790e-4, 5.748e-4, 8.048e-2, 2.648e-3),
    (32, 9, 3.121e-4, 6.394e-4, 9.969e-2, 3.179e-3),
    (32, 10, 3.456e-4, 7.040e-4, 1.210e-1, 3.786e-3),
    (64, 5, 6.268e-4, 7.054e-4, 2.322e-1, 5.881e-3),
    (64, 6, 7.585e-4, 8.314e-4, 3.248e-1, 8.015e-3),
    (64, 7, 8.518e-4, 9.599e-4, 4.327e-1, 1.040e-2),
    (64, 8, 9.685e-4, 1.089e-3, 5.538e-1, 1.316e-2),
    (64, 9, 1.088e-3, 1.217e-3, 6.900e-1, 1.623e-2),
    (64, 10, 1.204e-3, 1.345e-3, 8.414e-1, 1.960e-2),
    (128, 5, 2.245e-3, 1.737e-3, 1.723, 3.966e-2),
    (128, 6, 2.707e-3, 2.067e-3, 2.410, 5.490e-2),
    (128, 7, 3.201e-3, 2.401e-3, 3.212, 7.243e-2),
    (128, 8, 3.600e-3, 2.735e-3, 4.118, 9.254e-2),
    (128, 9, 3.995e-3, 3.071e-3, 5.138, 1.149e-1),
    (128, 10, 4.403e-3, 3.403e-3, 6.270, 1.399e-1),
    (256, 5, 8.523e-3, 5.719e-3, 1.358e1, 2.974e-1),
    (256, 6, 1.045e-2, 6.844e-3, 1.839e1, 4.135e-1),
    (256, 7, 1.208e-2, 7.970e-3, 2.453e1, 5.485e-1),
    (256, 8, 1.416e-2, 9.097e-3, 3.148e1, 7.025e-1),
    (256, 9, 1.597e-2, 1.022e-2, 3.932e1, 8.754e-1),
    (256, 10, 1.747e-2, 1.135e-2, 4.804e1, 1.067),
];

/// Seed 001, Table 8.4 (ten MPC steps with Ipopt): `(M, N, CPU s, GPU s, Ipopt s,
/// evaluations of J, g, evaluations of the gradients)`; the CPU column was extrapolated
/// from Table 8.3 in the thesis.
pub const THESIS_TABLE_8_4: [(usize, usize, f64, f64, f64, usize, usize); 24] = [
    (32, 5, 2.579e1, 2.572, 1.328, 741, 713),
    (32, 6, 4.723e1, 4.100, 2.027, 992, 944),
    (32, 7, 8.778e1, 6.869, 3.256, 1408, 1350),
    (32, 8, 1.664e2, 1.183e1, 5.356, 2076, 1994),
    (32, 9, 2.421e2, 1.604e1, 6.987, 2475, 2351),
    (32, 10, 4.214e2, 2.617e1, 1.088e1, 3545, 3381),
    (64, 5, 2.950e2, 1.236e1, 4.111, 1279, 1249),
    (64, 6, 4.049e2, 1.564e1, 4.730, 1270, 1229),
    (64, 7, 6.228e2, 2.247e1, 6.279, 1470, 1422),
    (64, 8, 1.431e3, 4.924e1, 1.273e1, 2635, 2557),
    (64, 9, 1.988e3, 6.571e1, 1.579e1, 2966, 2854),
    (64, 10, 3.211e3, 1.023e2, 2.290e1, 3949, 3783),
    (128, 5, 3.155e3, 8.565e1, 1.010e1, 1871, 1823),
    (128, 6, 6.080e3, 1.598e2, 1.650e1, 2569, 2513),
    (128, 7, 8.757e3, 2.241e2, 2.060e1, 2792, 2717),
    (128, 8, 9.430e3, 2.374e2, 1.974e1, 2353, 2283),
    (128, 9, 2.004e4, 4.969e2, 3.727e1, 4016, 3891),
    (128, 10, 3.627e4, 8.887e2, 6.111e1, 5933, 5771),
    (256, 5, 6.683e4, 1.532e3, 4.209e1, 5065, 4914),
    (256, 6, 9.917e4, 2.321e3, 5.530e1, 5492, 5387),
    (256, 7, 1.236e5, 2.862e3, 5.999e1, 5161, 5034),
    (256, 8, 2.408e5, 5.546e3, 1.037e2, 7885, 7644),
    (256, 9, 3.332e5, 7.631e3, 1.288e2, 8726, 8468),
    (256, 10, 4.841e5, 1.103e4, 1.701e2, 10351, 10069),
];

/// The thesis's time for `J, g` and forward-difference gradients at `M = 256, N = 10`
/// (GTX 285), the reference of the criterion.
pub const THESIS_GRADIENT_256_10_S: f64 = 1.067;

/// What to run.
#[derive(Debug, Clone)]
pub struct MpcBenchOptions {
    /// Table 8.3's swarm sizes.
    pub objects: Vec<usize>,
    /// Table 8.3's horizons.
    pub horizons: Vec<usize>,
    /// Large swarms (exact gradients, horizon [`MpcBenchOptions::large_horizon`]).
    pub large_objects: Vec<usize>,
    /// Horizon of the large swarms.
    pub large_horizon: usize,
    /// Problems per launch of the batched measurement (`M = 256`, `N = 10`).
    pub batch: usize,
    /// Table 8.4's swarm sizes and horizons.
    pub mpc_cases: Vec<(usize, usize)>,
    /// MPC steps per Table 8.4 entry (10).
    pub mpc_steps: usize,
    /// Closed-loop steps (§8.5.3 ran 2000; 0: skip), the reference switching half way.
    pub loop_steps: usize,
    /// Objects of the closed loop (the thesis's figures show 64).
    pub loop_objects: usize,
    /// Timed repetitions per entry (median).
    pub reps: usize,
}

impl MpcBenchOptions {
    /// Checks the options before anything runs: `--reps` at least 1.
    pub fn validate(&self) -> Result<()> {
        crate::at_least_one("bench mpc", &[("--reps", self.reps)])
    }
}

impl Default for MpcBenchOptions {
    fn default() -> Self {
        MpcBenchOptions {
            objects: vec![32, 64, 128, 256],
            horizons: (5..=10).collect(),
            large_objects: vec![1024, 4096],
            large_horizon: 10,
            batch: 64,
            mpc_cases: vec![
                (32, 5),
                (32, 10),
                (64, 5),
                (64, 10),
                (128, 5),
                (128, 10),
                (256, 5),
                (256, 10),
            ],
            mpc_steps: 10,
            loop_steps: 600,
            loop_objects: 32,
            reps: 5,
        }
    }
}

/// One `(M, N)` of Table 8.3; times in milliseconds (medians).
#[derive(Debug, Clone, Serialize)]
pub struct Table83Row {
    /// Objects.
    pub m: usize,
    /// Horizon.
    pub n: usize,
    /// The thesis's `(CPU, GPU)` seconds, first and second series.
    pub thesis: Option<(f64, f64, f64, f64)>,
    /// `J, g` on all CPU cores.
    pub cpu_eval_ms: f64,
    /// `J, g` on the GPU (exact path's kernels, device time).
    pub gpu_eval_ms: Option<f64>,
    /// `J, g` and forward-difference gradients on all CPU cores.
    pub cpu_fd_ms: f64,
    /// The same on the GPU (the thesis's two kernels, device time).
    pub gpu_fd_ms: Option<f64>,
    /// `J, g` and exact gradients on all CPU cores.
    pub cpu_exact_ms: f64,
    /// The same on the GPU (device time).
    pub gpu_exact_ms: Option<f64>,
    /// The same on the GPU end to end (upload, kernels, download; host clock).
    pub gpu_exact_e2e_ms: Option<f64>,
}

/// Exact gradients of a large swarm; milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct LargeRow {
    /// Objects.
    pub m: usize,
    /// Horizon.
    pub n: usize,
    /// All CPU cores.
    pub cpu_exact_ms: f64,
    /// GPU device time.
    pub gpu_exact_ms: Option<f64>,
    /// GPU end to end.
    pub gpu_exact_e2e_ms: Option<f64>,
}

/// Many problems per launch.
#[derive(Debug, Clone, Serialize)]
pub struct BatchRow {
    /// Objects.
    pub m: usize,
    /// Horizon.
    pub n: usize,
    /// Problems per launch.
    pub batch: usize,
    /// Device time of the whole batch (exact gradients), ms.
    pub gpu_batch_ms: f64,
    /// The same per problem.
    pub gpu_per_problem_ms: f64,
    /// All CPU cores, one problem after the other, per problem.
    pub cpu_per_problem_ms: f64,
    /// The whole batch on the fused kernel (its default plan), when the default is the
    /// tiled kernels, ms.
    pub fused_batch_ms: Option<f64>,
}

/// The exact gradient at `M = 256`, `N = 10` on one set of kernels (device time).
#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    /// `"tiled"`, or `"fused"` with its plan.
    pub kernels: String,
    /// Objects per block of the fused kernel.
    pub per_block: Option<usize>,
    /// Blocks per problem of the fused kernel.
    pub blocks: Option<usize>,
    /// Device time, ms.
    pub gpu_ms: f64,
    /// Whether [`ExactKernels::Auto`] picks this one.
    pub default: bool,
}

/// Ten MPC steps (Table 8.4) on one device.
#[derive(Debug, Clone, Serialize)]
pub struct Table84Row {
    /// Objects.
    pub m: usize,
    /// Horizon.
    pub n: usize,
    /// `"cpu"` or `"gpu"`.
    pub device: String,
    /// Seconds in total.
    pub total_s: f64,
    /// Seconds in the optimiser itself.
    pub optimizer_s: f64,
    /// Evaluations of `J, g`.
    pub value_evaluations: usize,
    /// Evaluations of the gradients.
    pub gradient_evaluations: usize,
    /// Constraint violations over the ten steps.
    pub violations: usize,
}

/// The criterion at `M = 256`, `N = 10`.
#[derive(Debug, Clone, Serialize)]
pub struct Criterion {
    /// GPU exact gradient, device time, ms.
    pub gpu_exact_ms: f64,
    /// GPU exact gradient end to end, ms.
    pub gpu_exact_e2e_ms: f64,
    /// CPU twin on all cores, ms.
    pub cpu_exact_ms: f64,
    /// `1.067 s / GPU device time`.
    pub speedup_vs_thesis: f64,
    /// `CPU / GPU device time`.
    pub speedup_vs_cpu: f64,
    /// `CPU / GPU end to end`.
    pub speedup_vs_cpu_e2e: f64,
    /// Per problem with [`MpcBenchOptions::batch`] problems per launch: `CPU / GPU`.
    pub batched_speedup_vs_cpu: Option<f64>,
    /// `>= 100x` the thesis and `>= 20x` the CPU (device time).
    pub met: bool,
}

/// Everything `ferrocuda bench mpc` measured.
#[derive(Debug, Clone, Serialize)]
pub struct MpcBenchReport {
    /// GPU name, when one ran.
    pub device: Option<String>,
    /// CPU threads of the twin.
    pub cpu_threads: usize,
    /// Table 8.3.
    pub table83: Vec<Table83Row>,
    /// Large swarms.
    pub large: Vec<LargeRow>,
    /// Many problems per launch.
    pub batch: Option<BatchRow>,
    /// The exact kernels compared at `M = 256`, `N = 10`.
    pub kernels: Vec<KernelRow>,
    /// Table 8.4.
    pub table84: Vec<Table84Row>,
    /// The closed loop.
    pub closed_loop: Option<LoopReport>,
    /// The criterion.
    pub criterion: Option<Criterion>,
}

fn ms(s: Stats) -> f64 {
    s.median_ms
}

/// Seeded controls in `[-3, 3]` and the thesis's initial swarm.
fn inputs(model: &SwarmModel, batch: usize) -> (Vec<f64>, Vec<f64>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed_0001 ^ model.objects as u64);
    let x0: Vec<f64> = (0..batch)
        .flat_map(|_| model.thesis_initial_state())
        .collect();
    let u = (0..batch * model.controls())
        .map(|_| rng.random_range(-3.0..3.0))
        .collect();
    (x0, u)
}

fn time_cpu_gradient(model: &SwarmModel, method: Gradient, reps: usize) -> Result<f64> {
    let (x0, u) = inputs(model, 1);
    let (mut a, mut b) = (vec![0.0; u.len()], vec![0.0; u.len()]);
    cpu::gradient(model, &x0, &u, method, &mut a, &mut b)?;
    Ok(ms(time_cpu(1, reps, || {
        cpu::gradient(model, &x0, &u, method, &mut a, &mut b)
    })))
}

/// `(device ms, end-to-end ms)` of `J, g` (with gradients if `grad`) on the GPU.
fn time_gpu_path(
    gpu: &Gpu,
    model: &SwarmModel,
    method: Gradient,
    grad: bool,
    reps: usize,
) -> Result<(f64, f64)> {
    let ev = GpuEvaluator::new(gpu, *model, method, 1)?;
    time_evaluator(ev, model, grad, reps)
}

/// `(device ms, end-to-end ms)` of one evaluator (one problem).
fn time_evaluator(
    mut ev: GpuEvaluator,
    model: &SwarmModel,
    grad: bool,
    reps: usize,
) -> Result<(f64, f64)> {
    let (x0, u) = inputs(model, 1);
    ev.upload(&x0, &u)?;
    let stream = ev.gpu().clone();
    let dev = ms(time_gpu(&stream, 2, reps, || ev.launch(grad))?);
    let (mut a, mut b) = (vec![0.0; u.len()], vec![0.0; u.len()]);
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) + 1 {
        let t = Instant::now();
        if grad {
            ev.gradient_batch(&x0, &u, &mut a, &mut b)?;
        } else {
            ev.evaluate_batch(&x0, &u)?;
        }
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    samples.remove(0);
    Ok((dev, Stats::from_samples(samples).median_ms))
}

/// Runs the benchmark (the GPU parts only with `gpu`).
pub fn run(gpu: Option<&Gpu>, opts: &MpcBenchOptions) -> Result<MpcBenchReport> {
    let reps = opts.reps.max(1);
    let mut table83 = Vec::new();
    let mut steps = crate::progress::steps(
        "bench mpc",
        opts.objects.len() * opts.horizons.len() + opts.large_objects.len() + opts.mpc_cases.len(),
    );
    for &m in &opts.objects {
        for &n in &opts.horizons {
            steps.next(format!("Table 8.3: M = {m}, N = {n}"));
            let model = SwarmModel::new(m, n)?;
            eprintln!("[bench mpc] table 8.3: M = {m}, N = {n}");
            let (x0, u) = inputs(&model, 1);
            cpu::evaluate(&model, &x0, &u)?;
            let cpu_eval_ms = ms(time_cpu(1, reps, || cpu::evaluate(&model, &x0, &u)));
            let cpu_fd_ms = time_cpu_gradient(&model, Gradient::Forward, reps.min(3))?;
            let cpu_exact_ms = time_cpu_gradient(&model, Gradient::Exact, reps)?;
            let (mut gpu_eval_ms, mut gpu_fd_ms, mut gpu_exact_ms, mut gpu_exact_e2e_ms) =
                (None, None, None, None);
            if let Some(g) = gpu {
                gpu_eval_ms = Some(time_gpu_path(g, &model, Gradient::Exact, false, reps)?.0);
                gpu_fd_ms = Some(time_gpu_path(g, &model, Gradient::Forward, true, reps)?.0);
                let (d, e) = time_gpu_path(g, &model, Gradient::Exact, true, reps)?;
                gpu_exact_ms = Some(d);
                gpu_exact_e2e_ms = Some(e);
            }
            table83.push(Table83Row {
                m,
                n,
                thesis: THESIS_TABLE_8_3
                    .iter()
                    .find(|r| r.0 == m && r.1 == n)
                    .map(|r| (r.2, r.3, r.4, r.5)),
                cpu_eval_ms,
                gpu_eval_ms,
                cpu_fd_ms,
                gpu_fd_ms,
                cpu_exact_ms,
                gpu_exact_ms,
                gpu_exact_e2e_ms,
            });
        }
    }
    let mut large = Vec::new();
    for &m in &opts.large_objects {
        steps.next(format!("large: M = {m}"));
        let model = SwarmModel::new(m, opts.large_horizon)?;
        eprintln!("[bench mpc] large: M = {m}, N = {}", opts.large_horizon);
        let cpu_exact_ms = time_cpu_gradient(&model, Gradient::Exact, reps.min(3))?;
        let (mut d, mut e) = (None, None);
        if let Some(g) = gpu {
            let (a, b) = time_gpu_path(g, &model, Gradient::Exact, true, reps)?;
            d = Some(a);
            e = Some(b);
        }
        large.push(LargeRow {
            m,
            n: opts.large_horizon,
            cpu_exact_ms,
            gpu_exact_ms: d,
            gpu_exact_e2e_ms: e,
        });
    }
    let mut batch = None;
    if let Some(g) = gpu
        && opts.batch > 1
    {
        let model = SwarmModel::new(256, 10)?;
        eprintln!("[bench mpc] batch of {} at M = 256, N = 10", opts.batch);
        let mut ev = GpuEvaluator::new(g, model, Gradient::Exact, opts.batch)?;
        let (x0, u) = inputs(&model, opts.batch);
        ev.upload(&x0, &u)?;
        let stream = ev.gpu().clone();
        let t = ms(time_gpu(&stream, 2, reps, || ev.launch(true))?);
        let cpu_one = time_cpu_gradient(&model, Gradient::Exact, reps)?;
        // The fused kernel on the same batch, for comparison (Auto leaves it to the
        // tiled kernels).
        let mut fused_ms = None;
        if ev.fused_plan().is_none() {
            let fused = GpuEvaluator::with_kernels(
                g,
                model,
                Gradient::Exact,
                opts.batch,
                ExactKernels::Fused,
                None,
            );
            if let Ok(mut fev) = fused {
                fev.upload(&x0, &u)?;
                let stream = fev.gpu().clone();
                fused_ms = Some(ms(time_gpu(&stream, 2, reps, || fev.launch(true))?));
            }
        }
        batch = Some(BatchRow {
            m: 256,
            n: 10,
            batch: opts.batch,
            gpu_batch_ms: t,
            gpu_per_problem_ms: t / opts.batch as f64,
            cpu_per_problem_ms: cpu_one,
            fused_batch_ms: fused_ms,
        });
    }
    let mut kernels = Vec::new();
    if let Some(g) = gpu {
        let model = SwarmModel::new(256, 10)?;
        eprintln!("[bench mpc] exact kernels at M = 256, N = 10");
        let auto = GpuEvaluator::new(g, model, Gradient::Exact, 1)?.fused_plan();
        let mut plans = vec![(ExactKernels::Tiled, None)];
        plans.extend([1, 2, 4, 8, 16].map(|r| (ExactKernels::Fused, Some(r))));
        for (k, per_block) in plans {
            let ev = GpuEvaluator::with_kernels(g, model, Gradient::Exact, 1, k, per_block)?;
            let plan = ev.fused_plan();
            let gpu_ms = time_evaluator(ev, &model, true, reps)?.0;
            kernels.push(KernelRow {
                kernels: if plan.is_some() { "fused" } else { "tiled" }.into(),
                per_block: plan.map(|p| p.per_block),
                blocks: plan.map(|p| p.blocks),
                gpu_ms,
                default: plan == auto,
            });
        }
    }
    let mut table84 = Vec::new();
    for &(m, n) in &opts.mpc_cases {
        steps.next(format!("Table 8.4: M = {m}, N = {n}"));
        let model = SwarmModel::new(m, n)?;
        let mut mopts = MpcOptions::default();
        mopts.steps = opts.mpc_steps;
        mopts.switch_step = opts.mpc_steps;
        let tight = model.tightened(mopts.margin);
        eprintln!("[bench mpc] table 8.4: M = {m}, N = {n}");
        let mut devices: Vec<(String, Box<dyn Evaluator>)> = vec![(
            "cpu".into(),
            Box::new(CpuEvaluator::new(tight, Gradient::Exact)?) as Box<dyn Evaluator>,
        )];
        if let Some(g) = gpu {
            devices.push((
                "gpu".into(),
                Box::new(GpuEvaluator::new(g, tight, Gradient::Exact, 1)?) as Box<dyn Evaluator>,
            ));
        }
        for (name, mut ev) in devices {
            let r = closed_loop(ev.as_mut(), &model, &mopts, |_, _| {})?;
            table84.push(Table84Row {
                m,
                n,
                device: name,
                total_s: r.total_seconds,
                optimizer_s: r.optimizer_seconds,
                value_evaluations: r.value_evaluations,
                gradient_evaluations: r.gradient_evaluations,
                violations: r.constraint_violations,
            });
        }
    }
    let mut closed = None;
    if opts.loop_steps > 0 {
        let model = SwarmModel::new(opts.loop_objects, 5)?;
        let mopts = MpcOptions::with_steps(opts.loop_steps);
        let tight = model.tightened(mopts.margin);
        let mut ev: Box<dyn Evaluator> = match gpu {
            Some(g) => Box::new(GpuEvaluator::new(g, tight, Gradient::Exact, 1)?),
            None => Box::new(CpuEvaluator::new(tight, Gradient::Exact)?),
        };
        eprintln!(
            "[bench mpc] closed loop: M = {}, N = 5, {} steps on {}",
            opts.loop_objects,
            opts.loop_steps,
            ev.device()
        );
        closed = Some(closed_loop(ev.as_mut(), &model, &mopts, |_, _| {})?);
    }
    let criterion = table83
        .iter()
        .find(|r| r.m == 256 && r.n == 10)
        .and_then(|r| {
            let (g, e) = (r.gpu_exact_ms?, r.gpu_exact_e2e_ms?);
            let vs_thesis = THESIS_GRADIENT_256_10_S * 1e3 / g;
            let vs_cpu = r.cpu_exact_ms / g;
            Some(Criterion {
                gpu_exact_ms: g,
                gpu_exact_e2e_ms: e,
                cpu_exact_ms: r.cpu_exact_ms,
                speedup_vs_thesis: vs_thesis,
                speedup_vs_cpu: vs_cpu,
                speedup_vs_cpu_e2e: r.cpu_exact_ms / e,
                batched_speedup_vs_cpu: batch
                    .as_ref()
                    .map(|b| b.cpu_per_problem_ms / b.gpu_per_problem_ms),
                met: vs_thesis >= 100.0 && vs_cpu >= 20.0,
            })
        });
    Ok(MpcBenchReport {
        device: gpu.map(|g| g.name()).transpose()?,
        cpu_threads: rayon::current_num_threads(),
        table83,
        large,
        batch,
        kernels,
        table84,
        closed_loop: closed,
        criterion,
    })
}

fn f(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.4}"))
}

fn ratio(a: f64, b: Option<f64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}x", a / b))
}

impl MpcBenchReport {
    fn header(&self) -> String {
        format!(
            "Device: {}; CPU twin on {} threads. GPU times are device time of one evaluation, CUDA events around its launch (inputs on the device; the exact path is one fused kernel up to 512 objects per launch, the tiled kernels replayed as one CUDA graph above) unless marked end to end; ratios are CPU / GPU of this run.",
            self.device.as_deref().unwrap_or("no GPU"),
            self.cpu_threads
        )
    }

    fn cells83(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let h = vec![
            "M",
            "N",
            "thesis J,g CPU/GPU ms",
            "J,g CPU ms",
            "J,g GPU ms",
            "x",
            "thesis +FD grad CPU/GPU ms",
            "+FD CPU ms",
            "+FD GPU ms",
            "x",
            "+exact CPU ms",
            "+exact GPU ms",
            "x",
            "+exact GPU e2e ms",
        ];
        let rows = self
            .table83
            .iter()
            .map(|r| {
                vec![
                    r.m.to_string(),
                    r.n.to_string(),
                    r.thesis.map_or("-".into(), |t| {
                        format!("{:.3} / {:.3}", t.0 * 1e3, t.1 * 1e3)
                    }),
                    format!("{:.4}", r.cpu_eval_ms),
                    f(r.gpu_eval_ms),
                    ratio(r.cpu_eval_ms, r.gpu_eval_ms),
                    r.thesis.map_or("-".into(), |t| {
                        format!("{:.1} / {:.2}", t.2 * 1e3, t.3 * 1e3)
                    }),
                    format!("{:.3}", r.cpu_fd_ms),
                    f(r.gpu_fd_ms),
                    ratio(r.cpu_fd_ms, r.gpu_fd_ms),
                    format!("{:.4}", r.cpu_exact_ms),
                    f(r.gpu_exact_ms),
                    ratio(r.cpu_exact_ms, r.gpu_exact_ms),
                    f(r.gpu_exact_e2e_ms),
                ]
            })
            .collect();
        (h, rows)
    }

    fn cells_large(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let h = vec!["M", "N", "exact CPU ms", "exact GPU ms", "x", "GPU e2e ms"];
        let rows = self
            .large
            .iter()
            .map(|r| {
                vec![
                    r.m.to_string(),
                    r.n.to_string(),
                    format!("{:.3}", r.cpu_exact_ms),
                    f(r.gpu_exact_ms),
                    ratio(r.cpu_exact_ms, r.gpu_exact_ms),
                    f(r.gpu_exact_e2e_ms),
                ]
            })
            .collect();
        (h, rows)
    }

    fn cells_kernels(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let cpu = self
            .table83
            .iter()
            .find(|r| r.m == 256 && r.n == 10)
            .map(|r| r.cpu_exact_ms);
        let h = vec![
            "kernels",
            "objects per block",
            "blocks",
            "exact GPU ms",
            "CPU / GPU",
            "default",
        ];
        let rows = self
            .kernels
            .iter()
            .map(|r| {
                vec![
                    r.kernels.clone(),
                    r.per_block.map_or("-".into(), |v| v.to_string()),
                    r.blocks.map_or("-".into(), |v| v.to_string()),
                    format!("{:.4}", r.gpu_ms),
                    cpu.map_or("-".into(), |c| format!("{:.1}x", c / r.gpu_ms)),
                    if r.default { "yes" } else { "" }.into(),
                ]
            })
            .collect();
        (h, rows)
    }

    fn cells84(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let h = vec![
            "M",
            "N",
            "device",
            "total s",
            "optimiser s",
            "optimiser share",
            "J,g evals",
            "gradient evals",
            "violations",
            "thesis GPU s / Ipopt s / evals",
        ];
        let rows = self
            .table84
            .iter()
            .map(|r| {
                let t = THESIS_TABLE_8_4
                    .iter()
                    .find(|t| t.0 == r.m && t.1 == r.n)
                    .map_or("-".into(), |t| {
                        format!("{:.4} / {:.4} / {} + {}", t.3, t.4, t.5, t.6)
                    });
                vec![
                    r.m.to_string(),
                    r.n.to_string(),
                    r.device.clone(),
                    format!("{:.4}", r.total_s),
                    format!("{:.4}", r.optimizer_s),
                    format!("{:.0} %", 100.0 * r.optimizer_s / r.total_s.max(1e-300)),
                    r.value_evaluations.to_string(),
                    r.gradient_evaluations.to_string(),
                    r.violations.to_string(),
                    t,
                ]
            })
            .collect();
        (h, rows)
    }

    fn criterion_text(&self) -> String {
        match &self.criterion {
            None => "Criterion (exact gradient, M = 256, N = 10): not measured (no GPU).".into(),
            Some(c) => format!(
                "Criterion (exact gradient, M = 256, N = 10, on {}): GPU {:.4} ms (device time; {:.4} ms end to end), {:.0}x the thesis's {} s (needs >= 100x), {:.1}x the CPU twin's {:.4} ms on all cores (needs >= 20x; end to end {:.1}x{}): {}.",
                self.device.as_deref().unwrap_or("?"),
                c.gpu_exact_ms,
                c.gpu_exact_e2e_ms,
                c.speedup_vs_thesis,
                THESIS_GRADIENT_256_10_S,
                c.speedup_vs_cpu,
                c.cpu_exact_ms,
                c.speedup_vs_cpu_e2e,
                c.batched_speedup_vs_cpu.map_or(String::new(), |b| format!(
                    "; {b:.1}x per problem with many problems per launch"
                )),
                if c.met { "met" } else { "NOT met" }
            ),
        }
    }

    fn batch_text(&self) -> String {
        self.batch.as_ref().map_or(String::new(), |b| {
            format!(
                "Many problems per launch: {} problems of M = {}, N = {} with exact gradients in {:.4} ms ({:.5} ms per problem; the CPU twin {:.4} ms per problem, {:.1}x){}.",
                b.batch,
                b.m,
                b.n,
                b.gpu_batch_ms,
                b.gpu_per_problem_ms,
                b.cpu_per_problem_ms,
                b.cpu_per_problem_ms / b.gpu_per_problem_ms,
                b.fused_batch_ms.map_or(String::new(), |f| format!(
                    "; the same batch on the fused kernel: {f:.4} ms"
                ))
            )
        })
    }

    fn loop_text(&self) -> String {
        self.closed_loop.as_ref().map_or(String::new(), |r| {
            format!(
                "Closed loop (§8.5.3) on {}: M = {}, N = {}, {} steps (reference 0, then (3, 0, 0, 0) from step {}): {} constraint violations; smallest pair distance {:.4} (d = 0.1), largest speed {:.4} (<= 1), closest disc centre {:.4} (radius 0.3); final mean distance to the reference {:.4} (max {:.4}); {} + {} evaluations, {:.2} s evaluating, {:.2} s in the optimiser, {} steps hit an iteration limit.",
                r.device_name,
                r.objects,
                r.horizon,
                r.steps,
                r.steps / 2,
                r.constraint_violations,
                r.worst.min_pair_distance,
                r.worst.max_speed,
                r.worst.min_disc_distance,
                r.final_distance_to_reference,
                r.final_max_distance_to_reference,
                r.value_evaluations,
                r.gradient_evaluations,
                r.evaluation_seconds,
                r.optimizer_seconds,
                r.unconverged_steps
            )
        })
    }

    /// Plain-text tables.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells83();
        let (hl, rl) = self.cells_large();
        let (h4, r4) = self.cells84();
        let (hk, rk) = self.cells_kernels();
        format!(
            "{}\n\nTable 8.3\n{}\nLarge swarms (exact gradients)\n{}\n{}\n\nExact kernels, M = 256, N = 10\n{}\nTable 8.4 (10 MPC steps, exact gradients)\n{}\n{}\n\n{}\n",
            self.header(),
            table(&h, &r),
            table(&hl, &rl),
            self.batch_text(),
            table(&hk, &rk),
            table(&h4, &r4),
            self.loop_text(),
            self.criterion_text()
        )
    }

    /// The Markdown file; `plots` are the timing chart and the trajectory chart.
    pub fn to_markdown(&self, plots: Option<(&str, &str)>) -> String {
        let (h, r) = self.cells83();
        let (hl, rl) = self.cells_large();
        let (h4, r4) = self.cells84();
        let (hk, rk) = self.cells_kernels();
        let (p1, p2) = plots.map_or((String::new(), String::new()), |(a, b)| {
            (
                format!("\n![exact gradient time]({a})\n"),
                format!("\n![closed-loop trajectories]({b})\n"),
            )
        });
        format!(
            "# MPC of an object swarm, seed 001's Tables 8.3 and 8.4\n\nWritten by `ferrocuda bench mpc`; do not edit by hand.\n\n{}\n\n{}\n\n## Table 8.3: J, g and their gradients\n\nThe thesis's columns are its GTX 285 and one core of its 2010 CPU (cited data); `x` is CPU / GPU of this run.\n\n{}\n{p1}\n## Large swarms (exact gradients)\n\n{}\n\n{}\n\n## Exact kernels at M = 256, N = 10\n\nThe tiled kernels (pair kernel, adjoint kernel, replayed as one CUDA graph) against the fused kernel (one launch: rollout, pair sums and sweep of a block's own objects, the last block adds up) with several objects per block; device time of one evaluation with gradients.\n\n{}\n\n## Table 8.4: ten MPC steps\n\nFrom (8.6) with reference 0; PANOC with a penalty on `g` (optimization_engine) instead of Ipopt, exact gradients. The thesis's last column: GPU seconds / Ipopt seconds / evaluations of J,g + gradients.\n\n{}\n\n## Closed loop\n\n{}\n{p2}",
            self.header(),
            self.criterion_text(),
            markdown_table(&h, &r),
            markdown_table(&hl, &rl),
            self.batch_text(),
            markdown_table(&hk, &rk),
            markdown_table(&h4, &r4),
            self.loop_text(),
        )
    }

    /// Exact-gradient time against `M` (N = 10), CPU and GPU, with the thesis's
    /// forward-difference times.
    pub fn chart(&self) -> LineChart {
        let mut cpu = Vec::new();
        let mut gpu = Vec::new();
        let mut thesis = Vec::new();
        for r in self.table83.iter().filter(|r| r.n == 10) {
            cpu.push((r.m as f64, r.cpu_exact_ms));
            if let Some(g) = r.gpu_exact_ms {
                gpu.push((r.m as f64, g));
            }
            if let Some(t) = r.thesis {
                thesis.push((r.m as f64, t.3 * 1e3));
            }
        }
        for r in &self.large {
            cpu.push((r.m as f64, r.cpu_exact_ms));
            if let Some(g) = r.gpu_exact_ms {
                gpu.push((r.m as f64, g));
            }
        }
        mpc_chart(self.device.as_deref(), self.cpu_threads, [cpu, gpu, thesis])
    }
}

/// The MPC chart from the tables' columns: milliseconds against `M` of the CPU twin,
/// the GPU (both exact gradients) and the thesis's forward differences on its GTX 285
/// (also used to redraw it from `mpc.md`, [`crate::redraw`]).
pub fn mpc_chart(
    device: Option<&str>,
    cpu_threads: usize,
    [cpu, gpu, thesis]: [Vec<(f64, f64)>; 3],
) -> LineChart {
    let name = device.unwrap_or("GPU");
    LineChart {
        title: "Swarm MPC, N = 10: J, g and gradients".into(),
        x_label: "objects M".into(),
        y_label: "milliseconds".into(),
        log_y: true,
        series: vec![
            LineSeries {
                name: format!("CPU, {cpu_threads} threads, exact"),
                points: cpu,
            },
            LineSeries {
                name: format!("{name}, exact"),
                points: gpu,
            },
            LineSeries {
                name: "thesis GTX 285, forward differences".into(),
                points: thesis,
            },
        ],
        reference_line: None,
    }
}

/// A few objects' paths of a closed loop (spread over the swarm) and the forbidden discs.
pub fn trajectory_chart(model: &SwarmModel, r: &LoopReport, opts: &MpcOptions) -> LineChart {
    paths_chart(model, r, opts, 5)
}

/// One animation frame of a closed loop: every object at step `k` (markers), over the
/// whole paths of three objects (first, middle, last) and the forbidden discs, so every
/// frame of a loop has the same axes. Write it with
/// [`LineChart::write_png_with_points`] and the returned points.
pub fn frame_chart(
    model: &SwarmModel,
    r: &LoopReport,
    opts: &MpcOptions,
    k: usize,
) -> (LineChart, Vec<LineSeries>) {
    let mut chart = paths_chart(model, r, opts, 3);
    let reference = if k <= opts.switch_step {
        opts.first_reference
    } else {
        opts.second_reference
    };
    chart.title = format!(
        "Swarm MPC: M = {}, N = {}, step {k} of {} (t = {:.2}), reference ({}, {})",
        model.objects,
        model.horizon,
        r.steps,
        k as f64 * model.t,
        reference[0],
        reference[2]
    );
    let at = &r.positions[k.min(r.positions.len() - 1)];
    let swarm = LineSeries {
        name: format!("swarm at step {k}"),
        points: at.chunks_exact(2).map(|p| (p[0], p[1])).collect(),
    };
    (chart, vec![swarm])
}

/// The paths of `count` objects spread over the swarm, and the discs.
fn paths_chart(model: &SwarmModel, r: &LoopReport, opts: &MpcOptions, count: usize) -> LineChart {
    let m = model.objects;
    let picks: Vec<usize> = if m <= count {
        (0..m).collect()
    } else {
        (0..count).map(|i| i * (m - 1) / (count - 1)).collect()
    };
    let mut series: Vec<LineSeries> = picks
        .iter()
        .map(|&j| LineSeries {
            name: format!("object {j}"),
            points: r
                .positions
                .iter()
                .map(|p| (p[2 * j], p[2 * j + 1]))
                .collect(),
        })
        .collect();
    for (k, c) in model.discs.iter().enumerate() {
        series.push(LineSeries {
            name: format!("disc {}", k + 1),
            points: (0..=48)
                .map(|i| {
                    let a = i as f64 / 48.0 * std::f64::consts::TAU;
                    (
                        c[0] + model.disc_radius * a.cos(),
                        c[1] + model.disc_radius * a.sin(),
                    )
                })
                .collect(),
        });
    }
    LineChart {
        title: format!(
            "Swarm MPC closed loop: M = {m}, N = {}, {} steps, reference ({}, {}) then ({}, {})",
            model.horizon,
            r.steps,
            opts.first_reference[0],
            opts.first_reference[2],
            opts.second_reference[0],
            opts.second_reference[2]
        ),
        x_label: "x".into(),
        y_label: "y".into(),
        log_y: false,
        series,
        reference_line: None,
    }
}

/// Writes `mpc.md`, the chart `mpc.png` and, with a closed loop, `mpc-trajectories.png`
/// (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &MpcBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("mpc.md", |out| {
        let source = "ferrocuda bench mpc";
        let mut written = write_with_data(report.chart(), &out.join("mpc.png"), 1280, 640, source)?;
        let mut plots = ("mpc.png", "");
        if let Some(r) = &report.closed_loop {
            let model = SwarmModel::new(r.objects, r.horizon)?;
            let mopts = MpcOptions::with_steps(r.steps);
            let png = out.join("mpc-trajectories.png");
            written.extend(write_with_data(
                trajectory_chart(&model, r, &mopts),
                &png,
                1280,
                640,
                source,
            )?);
            plots.1 = "mpc-trajectories.png";
        }
        written.push(out.write_markdown("mpc.md", &report.to_markdown(Some(plots)))?);
        Ok(written)
    })
}
