//! `ferrocuda bench rock4`: seed 001's Table 6.4 measured again: ROCK4 on the thesis
//! problem (5.1) to `t = 1` for `N x N` grids, on one CPU core (the thesis's CPU column),
//! on all cores, and on the GPU where there is one, beside the thesis's own figures
//! (GTX 285 against one core of its 2010 CPU). With a GPU also large grids of the heat
//! equation: the fused stencil stage against the device copy bandwidth of the same run,
//! and a whole step against the sum of its stages. Writes `<results-dir>/rock4.md` with
//! a plot.

use crate::output::{ResultsDir, Saved};
use serde::Serialize;

use super::plot::{HeatMap, HeatPanel, LineChart, LineSeries, write_with_data};
use crate::markdown_table;
use ferrocuda::Result;
use ferrocuda::gpu::{Gpu, copy_device};
use ferrocuda::report::table;
use ferrocuda::rock4::problems::{Advection, Heat2d, ReactionAdvectionDiffusion};
use ferrocuda::rock4::{
    Controller, DeviceRhs, Rhs, Rock4Options, Rock4Report, StopReason, Threads, cpu, gpu as rgpu,
};
use ferrocuda::timing::time_gpu;

/// Seed 001, Table 6.4: `(N, CPU s, GPU s)` for the time to `t = 1`.
pub const THESIS_TABLE_6_4: [(usize, f64, f64); 16] = [
    (16, 0.051, 0.137),
    (32, 0.217, 0.132),
    (48, 0.485, 0.138),
    (64, 0.893, 0.134),
    (80, 1.266, 0.138),
    (96, 1.896, 0.213),
    (112, 2.647, 0.216),
    (128, 3.398, 0.288),
    (144, 4.368, 0.304),
    (160, 5.221, 0.393),
    (176, 6.482, 0.462),
    (192, 7.228, 0.486),
    (208, 9.211, 0.616),
    (224, 10.357, 0.663),
    (240, 12.491, 0.732),
    (256, 12.800, 0.843),
];

/// What to run.
#[derive(Debug, Clone)]
pub struct Rock4BenchOptions {
    /// Grid sizes `N` (`N x N` interior points).
    pub sizes: Vec<usize>,
    /// Tolerance (`rtol = atol`).
    pub tol: f64,
    /// Advection differences (the thesis code: forward).
    pub advection: Advection,
    /// Timed runs per entry (the median counts).
    pub reps: usize,
    /// Large heat grids for the GPU (`N x N`).
    pub large: Vec<usize>,
}

impl Default for Rock4BenchOptions {
    fn default() -> Self {
        Rock4BenchOptions {
            sizes: THESIS_TABLE_6_4.iter().map(|r| r.0).collect(),
            tol: 1e-6,
            advection: Advection::Forward,
            reps: 3,
            large: vec![1024, 4096, 8192],
        }
    }
}

impl Rock4BenchOptions {
    /// Checks the options before anything runs: grid sizes and `--reps` at least 1, a
    /// finite positive `--tol`, and the largest grid's vectors within the host memory
    /// this process may use.
    pub fn validate(&self) -> Result<()> {
        let op = "bench rock4";
        crate::at_least_one(op, &[("--reps", self.reps)])?;
        if self.sizes.contains(&0) {
            return Err(crate::invalid(
                op,
                "--sizes: a grid size must be at least 1 (got 0)".into(),
            ));
        }
        if !(self.tol > 0.0 && self.tol.is_finite()) {
            return Err(crate::invalid(
                op,
                format!("--tol must be finite and positive, got {}", self.tol),
            ));
        }
        for &n in &self.sizes {
            // y and the integrator's work vectors (stages, error estimate, power iteration).
            crate::check_memory(
                format!(
                    "bench rock4 --sizes {n}: ROCK4 on the {n} x {n} grid (y and 8 work vectors)"
                ),
                n as u128 * n as u128,
                8,
                9,
            )?;
        }
        Ok(())
    }
}

/// One grid size.
#[derive(Debug, Clone, Serialize)]
pub struct Rock4Row {
    /// Grid points per direction.
    pub n: usize,
    /// Accepted and rejected steps (the same on both CPU paths).
    pub steps: (usize, usize),
    /// Largest stage count.
    pub max_stages: usize,
    /// Seconds to `t = 1` on one core.
    pub cpu_single_s: f64,
    /// Seconds on all cores.
    pub cpu_all_s: f64,
    /// Seconds on the GPU with the host deciding the steps, and its steps (accepted,
    /// rejected).
    pub gpu: Option<(f64, (usize, usize))>,
    /// Seconds on the GPU with the device deciding (the persistent kernel), and its steps.
    pub gpu_device: Option<(f64, (usize, usize))>,
    /// The thesis's CPU and GPU seconds, where it measured this size.
    pub thesis: Option<(f64, f64)>,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct Rock4BenchReport {
    /// CPU threads of the all-core runs.
    pub cpu_threads: usize,
    /// Tolerance used.
    pub tol: f64,
    /// Advection differences.
    pub advection: &'static str,
    /// One row per size.
    pub rows: Vec<Rock4Row>,
    /// GPU name.
    pub device: Option<String>,
    /// Large grids on the GPU.
    pub large: Vec<LargeRow>,
    /// Solution snapshots (not in the JSON).
    #[serde(skip)]
    pub snapshots: Vec<(String, HeatMap)>,
}

/// One large heat grid on the GPU.
#[derive(Debug, Clone, Serialize)]
pub struct LargeRow {
    /// Grid points per direction.
    pub n: usize,
    /// Device copy bandwidth of this run (read + write of `n^2` f64), GB/s.
    pub copy_gbps: f64,
    /// One fused stencil stage (reads `g_{j-1}`, `g_{j-2}`, writes `g_j`), ms.
    pub stage_ms: f64,
    /// Its bandwidth (3 `n^2` f64 per stage), GB/s.
    pub stage_gbps: f64,
    /// Stages per step of the timed steps.
    pub stages: usize,
    /// Wall time of one whole step (fixed step size, controller included), host
    /// deciding, ms.
    pub step_ms: f64,
    /// The same with the device deciding (the persistent kernel), ms.
    pub step_device_ms: f64,
}

fn progress(msg: &str) {
    eprintln!("[bench rock4] {msg}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark (the GPU parts where `gpu` is given).
pub fn run(gpu: Option<&Gpu>, opts: &Rock4BenchOptions) -> Result<Rock4BenchReport> {
    let mut rows = Vec::new();
    let large_count = if gpu.is_some() { opts.large.len() } else { 0 };
    let mut steps = crate::progress::steps("bench rock4", opts.sizes.len() + large_count + 1);
    for &n in &opts.sizes {
        steps.next(format!("{n} x {n}"));
        let p = ReactionAdvectionDiffusion::thesis(n, opts.advection)?;
        let time = |threads: Threads| -> Result<(f64, Rock4Report)> {
            let o = Rock4Options::default()
                .rtol(opts.tol)
                .atol(opts.tol)
                .threads(threads);
            let mut secs = Vec::new();
            let mut last = None;
            for _ in 0..opts.reps.max(1) {
                let mut y = p.initial();
                let r = cpu::integrate(&p, 0.0, 1.0, &mut y, &o)?;
                secs.push(r.seconds);
                last = Some(r);
            }
            Ok((median(secs), last.expect("at least one run")))
        };
        progress(&format!("N = {n}"));
        let (single, r) = time(Threads::Single)?;
        let (all, _) = time(Threads::All)?;
        let gpu_time = |c: Controller| -> Result<Option<(f64, (usize, usize))>> {
            let Some(g) = gpu else { return Ok(None) };
            let dp = p.on_device(g);
            let o = Rock4Options::default()
                .rtol(opts.tol)
                .atol(opts.tol)
                .controller(c);
            let mut secs = Vec::new();
            let mut steps = (0, 0);
            // One untimed run loads the modules.
            for rep in 0..=opts.reps.max(1) {
                let mut y = g.upload(&p.initial())?;
                let r = rgpu::integrate(&dp, 0.0, 1.0, &mut y, &o)?;
                if rep > 0 {
                    secs.push(r.seconds);
                }
                steps = (r.steps_accepted, r.steps_rejected);
            }
            Ok(Some((median(secs), steps)))
        };
        let (gpu_host, gpu_device) = (gpu_time(Controller::Host)?, gpu_time(Controller::Device)?);
        if r.reason != StopReason::Finished {
            progress(&format!(
                "N = {n}: stopped at t = {} ({:?})",
                r.final_time, r.reason
            ));
        }
        rows.push(Rock4Row {
            n,
            steps: (r.steps_accepted, r.steps_rejected),
            max_stages: r.max_stages,
            cpu_single_s: single,
            cpu_all_s: all,
            gpu: gpu_host,
            gpu_device,
            thesis: THESIS_TABLE_6_4
                .iter()
                .find(|t| t.0 == n)
                .map(|t| (t.1, t.2)),
        });
    }
    let mut large = Vec::new();
    if let Some(g) = gpu {
        for &n in &opts.large {
            progress(&format!("large heat grid {n} x {n}"));
            steps.next(format!("large heat grid {n} x {n}"));
            large.push(large_row(g, n, opts.reps.max(3))?);
        }
    }
    progress("solution snapshots");
    steps.next("solution snapshots");
    let snapshots = snapshots(gpu, opts)?;
    Ok(Rock4BenchReport {
        device: gpu.map(|g| g.name()).transpose()?,
        large,
        snapshots,
        cpu_threads: rayon::current_num_threads(),
        tol: opts.tol,
        advection: match opts.advection {
            Advection::Central => "central",
            Advection::Forward => "forward",
        },
        rows,
    })
}

/// Copy bandwidth, one fused stage, and whole steps of fixed size on an `n x n` heat
/// grid.
fn large_row(g: &Gpu, n: usize, reps: usize) -> Result<LargeRow> {
    let heat = Heat2d::new(n, 1.0)?;
    let dp = heat.on_device(g);
    let len = n * n;
    let bytes = (len * size_of::<f64>()) as f64;
    let src = g.upload(&heat.initial())?;
    let mut a = g.alloc::<f64>(len)?;
    let mut b = g.alloc::<f64>(len)?;
    let mut scratch = g.alloc::<f64>(len)?;
    let copy = time_gpu(g, 2, reps, || Ok(copy_device(&src, &mut a)?))?;
    let copy_gbps = copy.gbps(2.0 * bytes);
    a.copy_from_device(&src)?;
    b.copy_from_device(&src)?;
    let stage = time_gpu(g, 2, reps, || {
        dp.stage_unchecked(
            0.0,
            1e-9,
            0.5,
            &a.view(..)?,
            Some(&src.view(..)?),
            &mut b.view_mut(..)?,
            &mut scratch.view_mut(..)?,
        )
    })?;
    // A few steps of a fixed size that needs many stages (h rho about 2000).
    let h = 2000.0 / Rhs::spectral_radius_bound(&heat, 0.0, &[]).unwrap_or(1.0);
    let steps = 4;
    let o = Rock4Options::default().fixed_step(h);
    let step = |c: Controller| -> Result<(f64, usize)> {
        let o = o.clone().controller(c);
        let mut y = g.upload(&heat.initial())?;
        rgpu::integrate(&dp, 0.0, h, &mut y, &o)?;
        let mut y = g.upload(&heat.initial())?;
        let r = rgpu::integrate(&dp, 0.0, steps as f64 * h, &mut y, &o)?;
        let taken = r.history.len().max(1);
        Ok((r.seconds * 1e3 / taken as f64, r.max_stages))
    };
    let (step_ms, stages) = step(Controller::Host)?;
    let (step_device_ms, _) = step(Controller::Device)?;
    Ok(LargeRow {
        n,
        copy_gbps,
        stage_ms: stage.median_ms,
        stage_gbps: stage.gbps(3.0 * bytes),
        stages,
        step_ms,
        step_device_ms,
    })
}

/// The solution of the thesis problem (N = 128, the benchmark's advection) at
/// t = 0, 0.05, 0.2, 1 and of the heat equation (n = 64) at t = 0, 0.01, 0.03, 0.06,
/// each integrated on from the previous snapshot (on the GPU with the device
/// controller where there is one, else on the CPU).
fn snapshots(gpu: Option<&Gpu>, opts: &Rock4BenchOptions) -> Result<Vec<(String, HeatMap)>> {
    fn series<R: Rhs, D: DeviceRhs>(
        gpu: Option<&Gpu>,
        p: &R,
        d: impl Fn(&Gpu) -> D,
        y0: Vec<f64>,
        n: usize,
        times: &[f64],
        o: &Rock4Options,
    ) -> Result<Vec<HeatPanel>> {
        let mut y = y0;
        let mut panels = Vec::new();
        let mut t = 0.0;
        for &t1 in times {
            if t1 > t {
                match gpu {
                    Some(g) => {
                        let mut dy = g.upload(&y)?;
                        rgpu::integrate(&d(g), t, t1, &mut dy, o)?;
                        y = dy.download()?;
                    }
                    None => {
                        cpu::integrate(p, t, t1, &mut y, o)?;
                    }
                }
                t = t1;
            }
            panels.push(HeatPanel {
                label: format!("t = {t1}"),
                nx: n,
                ny: n,
                values: y.clone(),
            });
        }
        Ok(panels)
    }
    let o = Rock4Options::default().rtol(opts.tol).atol(opts.tol);
    let rad = ReactionAdvectionDiffusion::thesis(128, opts.advection)?;
    let heat = Heat2d::new(64, 1.0)?;
    let advection = match opts.advection {
        Advection::Central => "central",
        Advection::Forward => "forward",
    };
    Ok(vec![
        (
            "rock4-thesis.png".into(),
            HeatMap {
                title: format!("seed 001 problem (5.1), N = 128, {advection} advection: y(x, t)"),
                panels: series(
                    gpu,
                    &rad,
                    |g| rad.on_device(g),
                    rad.initial(),
                    128,
                    &[0.0, 0.05, 0.2, 1.0],
                    &o,
                )?,
            },
        ),
        (
            "rock4-heat.png".into(),
            HeatMap {
                title: "heat equation, n = 64, nu = 1: u(x, t)".into(),
                panels: series(
                    gpu,
                    &heat,
                    |g| heat.on_device(g),
                    heat.initial(),
                    64,
                    &[0.0, 0.01, 0.03, 0.06],
                    &o,
                )?,
            },
        ),
    ])
}

impl Rock4BenchReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "N",
            "steps (rejected)",
            "max stages",
            "CPU 1 core s",
            "CPU all cores s",
            "all / 1 core",
            "GPU host-decided s",
            "GPU device-decided s",
            "GPU vs 1 core",
            "GPU vs all cores",
            "thesis CPU s",
            "thesis GPU s",
            "thesis speedup",
            "1 core vs thesis CPU",
        ];
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![
                    r.n.to_string(),
                    format!("{} ({})", r.steps.0, r.steps.1),
                    r.max_stages.to_string(),
                    format!("{:.4}", r.cpu_single_s),
                    format!("{:.4}", r.cpu_all_s),
                    format!("{:.1}x", r.cpu_single_s / r.cpu_all_s),
                ];
                let secs = |g: Option<(f64, (usize, usize))>| {
                    g.map_or("-".to_string(), |(s, _)| format!("{s:.4}"))
                };
                v.extend([secs(r.gpu), secs(r.gpu_device)]);
                // Speedups of the default path (device-decided where it ran).
                match r.gpu_device.or(r.gpu) {
                    Some((g, _)) => v.extend([
                        format!("{:.1}x", r.cpu_single_s / g),
                        format!("{:.1}x", r.cpu_all_s / g),
                    ]),
                    None => v.extend(["-", "-"].map(String::from)),
                }
                match r.thesis {
                    Some((c, g)) => v.extend([
                        format!("{c:.3}"),
                        format!("{g:.3}"),
                        format!("{:.1}x", c / g),
                        format!("{:.1}x", c / r.cpu_single_s),
                    ]),
                    None => v.extend(["-", "-", "-", "-"].map(String::from)),
                }
                v
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        format!(
            "- problem: seed 001 (5.1), spacing 0.01, N x N interior points, y(., 0) = 1, to t = 1; {} advection differences; rtol = atol = {:e}\n- device: {}; CPU: one thread, and {} rayon threads; seconds are the median of the runs (GPU: after one untimed run)\n- thesis: Table 6.4 (GTX 285 against one core of its CPU, 2010)\n",
            self.advection,
            self.tol,
            self.device.as_deref().unwrap_or("none"),
            self.cpu_threads
        )
    }

    fn large_cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "N",
            "copy GB/s",
            "stage ms",
            "stage GB/s",
            "stage % of copy",
            "stages per step",
            "step ms (host-decided)",
            "step / sum of stages",
            "control overhead per step ms",
            "step ms (device-decided)",
            "step / sum of stages (device)",
            "control overhead per step ms (device)",
        ];
        let rows = self
            .large
            .iter()
            .map(|r| {
                vec![
                    format!("{}^2", r.n),
                    format!("{:.0}", r.copy_gbps),
                    format!("{:.4}", r.stage_ms),
                    format!("{:.0}", r.stage_gbps),
                    format!("{:.1}", 100.0 * r.stage_gbps / r.copy_gbps),
                    r.stages.to_string(),
                    format!("{:.3}", r.step_ms),
                    format!("{:.3}", r.step_ms / (r.stages as f64 * r.stage_ms)),
                    format!("{:.3}", r.step_ms - r.stages as f64 * r.stage_ms),
                    format!("{:.3}", r.step_device_ms),
                    format!("{:.3}", r.step_device_ms / (r.stages as f64 * r.stage_ms)),
                    format!("{:.3}", r.step_device_ms - r.stages as f64 * r.stage_ms),
                ]
            })
            .collect();
        (headers, rows)
    }

    const LARGE_NOTE: &str = "Large grids (GPU): the 2D heat equation (nu = 1), one fused stencil stage (reads g_{j-1} and g_{j-2}, writes g_j: 3 n^2 f64) against the device copy of n^2 f64 in the same run; a whole step of fixed size (h rho = 2000) by wall clock, controller and finishing procedure included, against stages x the fused stage's time; control overhead per step = step - stages x stage (finishing procedure, error norm, decision, launches and waits). Host-decided: one kernel launch per stage and one 8-byte read back per step; device-decided: the persistent kernel (grid barrier between stages, decisions on the device, one host wait per launch).";

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        let mut text = format!("{}\n{}\n", self.header(), table(&h, &r));
        if !self.large.is_empty() {
            let (h, r) = self.large_cells();
            text.push_str(&format!("\n{}\n{}\n", Self::LARGE_NOTE, table(&h, &r)));
        }
        text
    }

    /// The Markdown file.
    pub fn to_markdown(&self, plot: Option<&str>) -> String {
        let (h, r) = self.cells();
        let mut img = plot.map_or(String::new(), |p| format!("\n![time to t = 1]({p})\n"));
        for (file, map) in &self.snapshots {
            img.push_str(&format!("\n![{}]({file})\n", map.title));
        }
        let mut text = format!(
            "# ROCK4, seed 001's Table 6.4\n\nWritten by `ferrocuda bench rock4`; do not edit by hand.\n\n{}\n{}\n{img}",
            self.header(),
            markdown_table(&h, &r)
        );
        if !self.large.is_empty() {
            let (h, r) = self.large_cells();
            text.push_str(&format!(
                "\n## Large grids\n\n{}\n\n{}\n",
                Self::LARGE_NOTE,
                markdown_table(&h, &r)
            ));
        }
        text
    }

    /// Seconds to `t = 1` against `N` (log scale): this run's CPU and GPU paths and the
    /// thesis's columns.
    pub fn chart(&self) -> LineChart {
        let rows: Vec<(usize, [Option<f64>; 6])> = self
            .rows
            .iter()
            .map(|r| {
                (
                    r.n,
                    [
                        Some(r.cpu_single_s),
                        Some(r.cpu_all_s),
                        r.gpu.map(|g| g.0),
                        r.gpu_device.map(|g| g.0),
                        r.thesis.map(|t| t.0),
                        r.thesis.map(|t| t.1),
                    ],
                )
            })
            .collect();
        rock4_chart(self.device.as_deref(), &rows)
    }
}

/// The ROCK4 chart from the table's columns: per `N`, seconds of CPU 1 core, CPU all
/// cores, GPU host-decided, GPU device-decided, thesis CPU, thesis GPU (also used to
/// redraw it from `rock4.md`, [`crate::redraw`]).
pub fn rock4_chart(device: Option<&str>, rows: &[(usize, [Option<f64>; 6])]) -> LineChart {
    let gpu = device.unwrap_or("GPU");
    let names = [
        "CPU, 1 core".to_string(),
        "CPU, all cores".to_string(),
        format!("{gpu}, host-decided"),
        format!("{gpu}, device-decided"),
        "thesis CPU (2010)".to_string(),
        "thesis GTX 285".to_string(),
    ];
    LineChart {
        title: "ROCK4 to t = 1 on seed 001's problem (5.1)".into(),
        x_label: "N (N x N grid)".into(),
        y_label: "seconds".into(),
        log_y: true,
        series: names
            .iter()
            .enumerate()
            .map(|(k, name)| LineSeries {
                name: name.clone(),
                points: rows
                    .iter()
                    .filter_map(|(n, v)| v[k].filter(|&v| v > 0.0).map(|v| (*n as f64, v)))
                    .collect(),
            })
            .collect(),
        reference_line: None,
    }
}

/// Writes `rock4.md`, the chart `rock4.png` and the snapshots (where `out` allows it:
/// [`ResultsDir::save`]).
pub fn write_results(report: &Rock4BenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("rock4.md", |out| {
        let source = "ferrocuda bench rock4";
        let mut written =
            write_with_data(report.chart(), &out.join("rock4.png"), 1280, 640, source)?;
        for (file, map) in &report.snapshots {
            written.extend(write_with_data(
                map.clone(),
                &out.join(file),
                1280,
                400,
                source,
            )?);
        }
        written.push(out.write_markdown("rock4.md", &report.to_markdown(Some("rock4.png")))?);
        Ok(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_match_the_thesis_sizes_and_render() {
        let opts = Rock4BenchOptions {
            sizes: vec![16, 20],
            reps: 1,
            ..Default::default()
        };
        let r = run(None, &opts).expect("bench");
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].thesis, Some((0.051, 0.137)));
        assert_eq!(r.rows[1].thesis, None);
        for row in &r.rows {
            assert!(row.steps.0 > 0 && row.cpu_single_s > 0.0 && row.cpu_all_s > 0.0);
        }
        let md = r.to_markdown(Some("rock4.png"));
        assert!(
            md.contains("| 16 |") && md.contains("![time to t = 1](rock4.png)"),
            "{md}"
        );
        let png = r.chart().render_png(800, 400).expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }
}
