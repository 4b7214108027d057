//! `ferrocuda bench latency`: the small and medium problems where the GPU mostly waits
//! for the host (issue 24), in one run on one GPU: GMRES(30) per Arnoldi step on
//! 4x8x4x2, 10x40x20x2 and case 1 (f64, no preconditioner; stepped from the host and
//! with whole cycles on the device), against CuPy's GMRES on the same system and the
//! bandwidth floor of the same steps; the time of one SBL V(5,5) multigrid cycle at
//! 33^3, 65^3, 129^3 (f32 and f64); the time of one ROCK4 step on the thesis's
//! reaction-advection-diffusion problem at N = 32, 64, 128 (the device-side controller).
//! Writes `latency.md`, `latency.json` (the rows) and the chart `latency-chart.png`.

use serde::Serialize;

use crate::gmres::{self as bgmres, GmresBenchOptions, Peer, SolverKind};
use crate::markdown_table;
use crate::output::{ResultsDir, Saved};
use crate::plot::{BarChart, BarGroup};
use crate::spmv::SpmvCase;
use ferrocuda::Result;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{GmresOptions, Preconditioner};
use ferrocuda::multigrid::{MgOptions, MgReal, gpu as mgpu};
use ferrocuda::report::table;
use ferrocuda::rock4::problems::{Advection, ReactionAdvectionDiffusion};
use ferrocuda::rock4::{Controller, Rock4Options, gpu as rgpu};

/// Options of `bench latency`.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// The smallest size of each part only (a smoke run).
    pub quick: bool,
    /// Timed repetitions of the multigrid and ROCK4 runs (the best counts).
    pub reps: usize,
    /// CuPy's GMRES on the same systems (where Python has CuPy).
    pub peers: bool,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            quick: false,
            reps: 3,
            peers: true,
        }
    }
}

impl LatencyOptions {
    /// Checks the options before anything runs: `--reps` at least 1.
    pub fn validate(&self) -> Result<()> {
        crate::at_least_one("bench latency", &[("--reps", self.reps)])
    }
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyRow {
    /// What was timed, e.g. `GMRES(30) ms/step, device cycles`.
    pub what: String,
    /// The problem's size, e.g. `7680 rows` or `33^3`.
    pub size: String,
    /// The GPU's name.
    pub device: String,
    /// ferrocuda, milliseconds.
    pub ours_ms: f64,
    /// The bandwidth floor of the same work, milliseconds, where modelled.
    pub floor_ms: Option<f64>,
    /// The peer of the same run, where one exists.
    pub peer: Option<String>,
    /// The peer's milliseconds for the same unit of work.
    pub peer_ms: Option<f64>,
}

/// The rows of one run.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    /// GPU name.
    pub device: String,
    /// Every measurement.
    pub rows: Vec<LatencyRow>,
}

const GMRES_CASES: [&str; 3] = ["4x8x4x2", "10x40x20x2", "1"];
const MG_SIZES: [usize; 3] = [33, 65, 129];
const ROCK4_SIZES: [usize; 3] = [32, 64, 128];

fn progress(msg: &str) {
    eprintln!("[bench latency] {msg}");
}

/// Runs every part on `gpu`.
pub fn run(gpu: &Gpu, opts: &LatencyOptions) -> Result<LatencyReport> {
    opts.validate()?;
    let device = gpu.name()?;
    let take = |n: usize| if opts.quick { 1 } else { n };
    let mut rows = Vec::new();
    for case in GMRES_CASES.iter().take(take(GMRES_CASES.len())) {
        progress(&format!("GMRES(30) on {case}"));
        rows.extend(gmres_rows(gpu, case, &device, opts.peers)?);
    }
    for &n in MG_SIZES.iter().take(take(MG_SIZES.len())) {
        progress(&format!("multigrid V(5,5) at {n}^3"));
        rows.push(mg_row::<f32>(gpu, n, &device, opts.reps, Launch::Default)?);
        rows.push(mg_row::<f64>(gpu, n, &device, opts.reps, Launch::Default)?);
        rows.push(mg_row::<f32>(
            gpu,
            n,
            &device,
            opts.reps,
            Launch::GraphsOnly,
        )?);
        rows.push(mg_row::<f32>(
            gpu,
            n,
            &device,
            opts.reps,
            Launch::EachOperation,
        )?);
    }
    for &n in ROCK4_SIZES.iter().take(take(ROCK4_SIZES.len())) {
        progress(&format!("ROCK4 at N = {n}"));
        rows.push(rock4_row(gpu, n, &device, opts.reps)?);
    }
    Ok(LatencyReport { device, rows })
}

/// `bench gmres`'s GPU rows on one case: ms per Arnoldi step, each against the floor
/// and CuPy's ms per step in the same run.
fn gmres_rows(gpu: &Gpu, case: &str, device: &str, peers: bool) -> Result<Vec<LatencyRow>> {
    let opts = GmresBenchOptions {
        case: SpmvCase::parse(case)?,
        double: true,
        complex: false,
        gmres: GmresOptions::default(),
        precond: Preconditioner::None,
        cpu: false,
        peers: if peers { vec![Peer::Cupy] } else { Vec::new() },
    };
    let r = bgmres::run(Some(gpu), &opts)?;
    // "case1 (8 grid blocks ...), 591360 rows, ...": the name and the rows.
    let name = r.matrix.split(' ').next().unwrap_or(case);
    let size = match r.matrix.split(", ").find(|p| p.ends_with(" rows")) {
        Some(rows) => format!("{name}, {rows}"),
        None => name.to_string(),
    };
    let cupy = r
        .rows
        .iter()
        .find(|row| row.kind == SolverKind::Cupy)
        .map(|row| (row.solver.clone(), row.ms_per_step[0]));
    Ok(r.rows
        .iter()
        .filter(|row| {
            matches!(
                row.kind,
                SolverKind::GpuCgs2
                    | SolverKind::GpuCgs2Device
                    | SolverKind::GpuCgs2Fused
                    | SolverKind::GpuMgs
                    | SolverKind::GpuPipelined
            )
        })
        .map(|row| LatencyRow {
            what: format!("GMRES(30) ms/step, {}", row.solver),
            size: size.clone(),
            device: device.to_string(),
            ours_ms: row.ms_per_step[0],
            floor_ms: row.floor_ms_per_step,
            peer: cupy.as_ref().map(|c| c.0.clone()),
            peer_ms: cupy.as_ref().map(|c| c.1),
        })
        .collect())
}

/// How a multigrid row's cycles reach the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launch {
    /// The solver's default: the coarse levels in the operation-list kernel, each cycle
    /// replayed as a CUDA graph.
    Default,
    /// Graphs, with every level's operations launched one by one inside them.
    GraphsOnly,
    /// Every operation launched from the host (the baseline).
    EachOperation,
}

/// The fastest SBL V(5,5) cycle of `reps` solves of 5 cycles on `n^3` points (seed
/// 003's setup, base 2), launched as `how` says.
fn mg_row<T: MgReal>(
    gpu: &Gpu,
    n: usize,
    device: &str,
    reps: usize,
    how: Launch,
) -> Result<LatencyRow> {
    let mut opts = MgOptions::new(n, 2);
    opts.cycles = 5;
    let mut best = f64::INFINITY;
    let (mut graphs, mut fused) = (0, 0);
    // One untimed solve loads the modules.
    for rep in 0..=reps {
        let mut solver = mgpu::Solver::<T>::new(gpu, &opts)?;
        solver.set_cycle_graphs(how != Launch::EachOperation);
        solver.set_fused_levels(how == Launch::Default);
        let r = solver.solve()?;
        (graphs, fused) = (solver.cycle_graphs(), solver.fused_levels());
        if rep > 0 {
            best = best.min(crate::multigrid::best_ms(&r.cycle_seconds));
        }
    }
    let what = match how {
        Launch::EachOperation => ", every operation launched from the host".to_string(),
        _ if graphs == 0 => ", graph capture failed: launched from the host".to_string(),
        Launch::GraphsOnly => {
            ", one graph per cycle, every level's operations launched in it".into()
        }
        // The default keeps the plain name: it is what a user of the solver gets.
        Launch::Default if fused > 0 => String::new(),
        Launch::Default => ", no level small enough for the operation-list kernel".into(),
    };
    Ok(LatencyRow {
        what: format!("multigrid SBL V(5,5) ms/cycle, {}{what}", T::SUFFIX),
        size: format!("{n}^3"),
        device: device.to_string(),
        ours_ms: best,
        floor_ms: None,
        peer: None,
        peer_ms: None,
    })
}

/// ms per ROCK4 step (accepted and rejected) on the thesis problem at `n x n`, tol
/// 1e-7, the controller on the device; the fastest of `reps` runs.
fn rock4_row(gpu: &Gpu, n: usize, device: &str, reps: usize) -> Result<LatencyRow> {
    let p = ReactionAdvectionDiffusion::thesis(n, Advection::Forward)?;
    let dp = p.on_device(gpu);
    let o = Rock4Options::default()
        .rtol(1e-7)
        .atol(1e-7)
        .controller(Controller::Device);
    let mut best = f64::INFINITY;
    for rep in 0..=reps {
        let mut y = gpu.upload(&p.initial())?;
        let r = rgpu::integrate(&dp, 0.0, 1.0, &mut y, &o)?;
        let steps = (r.steps_accepted + r.steps_rejected).max(1);
        if rep > 0 {
            best = best.min(r.seconds * 1e3 / steps as f64);
        }
    }
    Ok(LatencyRow {
        what: "ROCK4 ms/step (device controller)".into(),
        size: format!("N = {n}"),
        device: device.to_string(),
        ours_ms: best,
        floor_ms: None,
        peer: None,
        peer_ms: None,
    })
}

impl LatencyReport {
    const HEADERS: [&'static str; 7] = [
        "what",
        "size",
        "ours ms",
        "floor ms",
        "x floor",
        "peer",
        "peer / ours",
    ];

    fn cells(&self) -> Vec<Vec<String>> {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
        self.rows
            .iter()
            .map(|r| {
                vec![
                    r.what.clone(),
                    r.size.clone(),
                    format!("{:.4}", r.ours_ms),
                    opt(r.floor_ms),
                    r.floor_ms
                        .map_or("-".into(), |f| format!("{:.2}", r.ours_ms / f)),
                    match (&r.peer, r.peer_ms) {
                        (Some(p), Some(ms)) => format!("{p}: {ms:.4} ms"),
                        _ => "-".into(),
                    },
                    r.peer_ms
                        .map_or("-".into(), |p| format!("{:.1}x", p / r.ours_ms)),
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
        format!(
            "# Latency: small and medium problems\n\nWritten by `ferrocuda bench latency`; do not edit by hand.\n\n- device: {}\n- GMRES(30), f64, no preconditioner, rtol 1e-8, SBELL operator: ms per Arnoldi step, the fastest of up to 5 solves (ours and CuPy's alike; \"memory pool trimmed\": each solve maps its workspace anew, as a first solve does); floor: the bytes of the same steps over the copy bandwidth of the run; peer: CuPy's GMRES per step in the same run (its own steps: it stops only after whole cycles)\n- multigrid: seed 003's SBL V(5,5), B = 10, base 2; the fastest cycle of the runs, in f32 three ways: the default (each cycle one CUDA graph, the levels of at most 9^3 points run by one thread block), graphs alone, and every operation launched from the host (the baseline)\n- ROCK4: the thesis's reaction-advection-diffusion problem on N x N points, tol 1e-7, step-size controller on the device; ms per step (accepted and rejected)\n\n{}\n![latency](latency-chart.png)\n",
            self.device,
            markdown_table(&Self::HEADERS, &self.cells())
        )
    }

    /// The chart: ours, the floor and the peer per row (ms, one group per row).
    pub fn chart(&self) -> BarChart {
        BarChart {
            title: format!("Small problems: time per step or cycle, {}", self.device),
            value_label: "ms".into(),
            groups: self
                .rows
                .iter()
                .map(|r| BarGroup {
                    label: format!("{} ({})", r.what, r.size),
                    values: vec![Some(r.ours_ms), r.floor_ms, r.peer_ms],
                })
                .collect(),
            series: vec!["ferrocuda".into(), "bandwidth floor".into(), "peer".into()],
            reference_lines: Vec::new(),
            log_x: false,
        }
    }
}

/// Writes `latency.md`, `latency.json` (the rows) and `latency-chart.png` (with its
/// data, `latency-chart.json`) (where `out` allows it).
pub fn write_results(report: &LatencyReport, out: &ResultsDir) -> Result<Saved> {
    out.save("latency.md", |out| {
        let mut written = crate::plot::write_with_data(
            report.chart(),
            &out.join("latency-chart.png"),
            1200,
            (160 + 48 * report.rows.len()) as u32,
            "ferrocuda bench latency",
        )?;
        let json = serde_json::to_string_pretty(&report.rows)
            .map_err(|e| crate::invalid("bench latency", format!("JSON of the rows: {e}")))?;
        let path = out.join("latency.json");
        crate::output::write_file(&path, json.as_bytes())?;
        written.push(path);
        written.push(out.write_markdown("latency.md", &report.to_markdown())?);
        Ok(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> LatencyReport {
        LatencyReport {
            device: "test GPU".into(),
            rows: vec![
                LatencyRow {
                    what: "GMRES(30) ms/step, GPU, SBELL, Cgs2, device cycles".into(),
                    size: "4x8x4x2, 7680 rows".into(),
                    device: "test GPU".into(),
                    ours_ms: 0.02,
                    floor_ms: Some(0.013),
                    peer: Some("CuPy 14.2.0, CSR".into()),
                    peer_ms: Some(0.25),
                },
                LatencyRow {
                    what: "multigrid SBL V(5,5) ms/cycle, f32".into(),
                    size: "33^3".into(),
                    device: "test GPU".into(),
                    ours_ms: 0.1,
                    floor_ms: None,
                    peer: None,
                    peer_ms: None,
                },
            ],
        }
    }

    /// The JSON is a list of rows with the fields the issue names, and the files are
    /// written together.
    #[test]
    fn writes_rows_markdown_and_chart() {
        let r = report();
        let dir = tempfile::tempdir().expect("tempdir");
        let out = ResultsDir::new(dir.path(), true);
        write_results(&r, &out).expect("write");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("latency.json")).expect("json"),
        )
        .expect("parse");
        let rows = json.as_array().expect("a list");
        assert_eq!(rows.len(), 2);
        for key in [
            "what", "size", "device", "ours_ms", "floor_ms", "peer", "peer_ms",
        ] {
            assert!(rows[0].get(key).is_some(), "{key} missing");
        }
        assert_eq!(rows[1]["peer"], serde_json::Value::Null);
        let md = std::fs::read_to_string(dir.path().join("latency.md")).expect("md");
        assert!(md.contains("12.5x"), "{md}");
        assert!(md.contains("1.54"), "{md}");
        assert!(dir.path().join("latency-chart.png").is_file());
    }
}
