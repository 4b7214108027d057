//! `ferrocuda bench scale-model`: a model of one GMRES(m) iteration of the distributed
//! GPU solver on P GPUs, fitted to and checked against the points `ferrocuda bench
//! scaling` measured (1 and 2 GPUs), predicting weak and strong efficiency up to 1,024
//! GPUs for the classical solver as implemented and a pipelined one. CPU only: it reads
//! the results files, it runs nothing on a GPU.
//!
//! # The model (`docs/scaling-model.md` has the full statement and sources)
//!
//! Each rank's load comes from the library's partition ([`loads()`]). On rank `r`:
//!
//! * SpMV: `t0 + max(B_int / BW, T_x) + [peers] (t_halo + B_halo / BW)`, where the
//!   exchange `T_x` (one span message per peer, NVLink or InfiniBand: latency + bytes /
//!   link bandwidth) runs on a second stream while the interior SpMV runs.
//! * Iteration, classical: `S T_spmv + V 8 n / BW_orth + T_host + (A_step + A_solve)
//!   T_ar(P)`; pipelined: the step all-reduces overlap the SpMV (`A_step max(0, T_ar -
//!   T_spmv)`) and `V` grows by the second basis ([`model::Counts`]).
//! * `T_ar(P)`: nothing on one GPU, the measured 2-GPU cost inside a node plus an
//!   assumed step per doubling, and `2 log2(nodes)` InfiniBand hops between nodes.
//!
//! The slowest rank sets the time. Parameters: `t0, BW` from the 1-GPU SpMV points,
//! `T_host, BW_orth` from the 1-GPU GMRES points, `t_halo` from the multi-GPU SpMV
//! points, `T_ar(2)` from the multi-GPU GMRES points (least squares in relative
//! error); the node and fabric are stated assumptions ([`model::Assumptions`]).

pub mod loads;
pub mod measured;
pub mod model;
mod report;

pub use report::write_results;

use std::path::PathBuf;

use ferrocuda::sparse::generate::{self, B, TraceSpec};
use ferrocuda::{Error, Result};
use serde::Serialize;

use loads::{RankLoad, loads};
use measured::{MeasuredFile, MeasuredPoint, What};
use model::{Assumptions, Counts, Params, Parts, Variant};

/// The rows of the strong-scaling prediction: a fixed problem of at least this many
/// rows (whole grid blocks of case 6's size).
pub const STRONG_ROWS: usize = 1_000_000_000;

/// The largest check error allowed (relative), and the test's bound.
pub const TOLERANCE: f64 = 0.15;

/// The measured results read: the first is required, the others are read where they
/// exist (both written by `ferrocuda bench scaling`).
pub const INPUTS: [&str; 2] = ["scaling.md", "scaling-transports.md"];

/// The transport modelled (GPU to GPU halo, dots summed on the devices).
pub const TRANSPORT: &str = "nccl";

/// What to run.
#[derive(Debug, Clone)]
pub struct ScaleModelOptions {
    /// Folder of the measured results (and of the files written).
    pub results_dir: PathBuf,
    /// The node and fabric.
    pub assumptions: Assumptions,
    /// Largest GPU count predicted (powers of two up to it).
    pub max_gpus: usize,
}

impl Default for ScaleModelOptions {
    fn default() -> Self {
        ScaleModelOptions {
            results_dir: PathBuf::from("docs/results"),
            assumptions: Assumptions::default(),
            max_gpus: 1024,
        }
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        op: "bench scale-model",
        reason,
    }
}

impl ScaleModelOptions {
    /// Checks the options: at least one GPU per node and one GPU, positive finite
    /// latencies and bandwidths.
    pub fn validate(&self) -> Result<()> {
        let a = &self.assumptions;
        crate::at_least_one(
            "bench scale-model",
            &[
                ("--gpus-per-node", a.gpus_per_node),
                ("--max-gpus", self.max_gpus),
            ],
        )?;
        // (flag, value as the user gives it)
        for (flag, v) in [
            ("--ib-latency-us", a.ib_latency_ms * 1e3),
            ("the InfiniBand bandwidth (GB/s)", a.ib_gbps),
            ("the NVLink latency (ms)", a.nvlink_latency_ms),
            ("the NVLink bandwidth (GB/s)", a.nvlink_gbps),
            ("the GPU memory (GB)", a.gpu_memory_gb),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(format!("{flag} must be positive and finite (got {v})")));
            }
        }
        if !(a.nvlink_allreduce_step_ms.is_finite() && a.nvlink_allreduce_step_ms >= 0.0) {
            return Err(bad(format!(
                "the NVLink all-reduce step must be finite and not negative (got {})",
                a.nvlink_allreduce_step_ms
            )));
        }
        Ok(())
    }
}

/// A results file read.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// Its name in the results folder.
    pub file: String,
    /// Its provenance line.
    pub provenance: Option<String>,
    /// Points of the modelled transport.
    pub points: usize,
}

/// One measured point beside the model.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    /// The measured point.
    pub measured: MeasuredPoint,
    /// The model's time, ms.
    pub model_ms: f64,
    /// `model / measured - 1`.
    pub error: f64,
    /// Ghost blocks per rank from the partition (largest over the ranks).
    pub model_ghost_blocks: usize,
}

/// One predicted configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// Which series (e.g. `weak, case 6 x P`).
    pub series: String,
    /// `weak` or `strong`.
    pub mode: &'static str,
    /// GPUs.
    pub gpus: usize,
    /// Nodes of [`Assumptions::gpus_per_node`].
    pub nodes: usize,
    /// Grid blocks of the whole problem.
    pub grid_blocks: usize,
    /// Rows of the whole problem.
    pub rows: usize,
    /// Grid blocks of the busiest rank.
    pub max_blocks_per_gpu: usize,
    /// Mean grid blocks per rank over the busiest's: the balance bound of efficiency.
    pub balance: f64,
    /// One SpMV, ms.
    pub spmv_ms: f64,
    /// One iteration of each variant, ms: classical, pipelined, overlap bound.
    pub iteration_ms: [f64; 3],
    /// SpMV efficiency.
    pub spmv_efficiency: f64,
    /// Iteration efficiency of each variant against the classical solver's 1-GPU time
    /// (so the variants compare: a pipelined iteration that does more work on one GPU
    /// starts below 100 %).
    pub efficiency: [f64; 3],
    /// Iteration efficiency of each variant against its own 1-GPU time.
    pub efficiency_own: [f64; 3],
    /// The classical iteration's parts on the slowest rank.
    pub classical: Parts,
    /// Device memory of the busiest rank, GB (classical; pipelined).
    pub memory_gb: [f64; 2],
}

/// A series' headline: its efficiencies at the largest GPU count and where it stops
/// scaling.
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    /// The series.
    pub series: String,
    /// The GPU count of the figures below.
    pub gpus: usize,
    /// Efficiency of classical, pipelined, overlap bound there.
    pub efficiency: [f64; 3],
    /// Per variant: the first GPU count where efficiency falls below 50 % (`None`: never
    /// up to the largest).
    pub below_half_at: [Option<usize>; 3],
    /// Per variant: the GPU count of the shortest iteration.
    pub fastest_at: [usize; 3],
    /// The smallest GPU count from which the pipelined iteration is the faster one.
    pub pipelined_faster_from: Option<usize>,
    /// The balance of the partition there (mean over largest grid blocks per GPU).
    pub balance: f64,
    /// Share of the classical iteration spent in all-reduces there.
    pub allreduce_share: f64,
    /// Share of the classical iteration spent in the per-iteration host overhead there.
    pub overhead_share: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleModelReport {
    /// The measured results read.
    pub inputs: Vec<Input>,
    /// The transport modelled.
    pub transport: String,
    /// Stated assumptions.
    pub assumptions: Assumptions,
    /// Per-iteration counts: classical, pipelined.
    pub counts: [Counts; 2],
    /// Fitted parameters.
    pub params: Params,
    /// Every measured point of the transport beside the model.
    pub check: Vec<CheckRow>,
    /// The largest `|error|` of the check.
    pub max_error: f64,
    /// Whether every point is within [`TOLERANCE`].
    pub within_tolerance: bool,
    /// Predictions, series after series.
    pub predictions: Vec<Prediction>,
    /// One per series.
    pub headlines: Vec<Headline>,
    /// Measured GMRES-iteration efficiencies of the first input (series, GPUs,
    /// efficiency), for the chart.
    pub measured_efficiency: Vec<(String, usize, f64)>,
}

/// The restart length `bench scaling` times (its only setting; the results table does
/// not state it).
fn restart() -> usize {
    crate::scaling::ScalingOptions::default().gmres_steps
}

/// A measured point with its ranks' loads.
struct Fitting<'a> {
    point: &'a MeasuredPoint,
    loads: Vec<RankLoad>,
}

fn ghost_max(l: &[RankLoad]) -> usize {
    l.iter().map(|r| r.ghost_blocks).max().unwrap_or(0)
}

/// Fits the parameters to `pts` (see the module docs).
fn fit(pts: &[Fitting<'_>], m: usize, a: &Assumptions) -> Result<Params> {
    let classical = Counts::classical(m);
    let one_gpu = |what: What| -> Vec<&Fitting<'_>> {
        pts.iter()
            .filter(|f| f.point.gpus == 1 && f.point.what == what)
            .collect()
    };
    let more = |what: What| -> Vec<&Fitting<'_>> {
        pts.iter()
            .filter(|f| f.point.gpus > 1 && f.point.what == what)
            .collect()
    };
    let sizes = |v: &[&Fitting<'_>]| {
        let mut s: Vec<usize> = v.iter().map(|f| f.point.grid_blocks).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    let need = |v: &[&Fitting<'_>], what: &str, two_sizes: bool| -> Result<()> {
        if v.is_empty() || (two_sizes && sizes(v) < 2) {
            return Err(bad(format!(
                "the model needs {what} measured by `ferrocuda bench scaling` (transport {TRANSPORT}); the inputs {INPUTS:?} have {} such points of {} sizes",
                v.len(),
                sizes(v)
            )));
        }
        Ok(())
    };
    let mut p = Params {
        spmv_floor_ms: 0.0,
        spmv_gbps: 1.0,
        iteration_overhead_ms: 0.0,
        orth_gbps: 1.0,
        halo_overhead_ms: 0.0,
        allreduce_2_ms: 0.0,
    };
    let to_gbps = |ms_per_byte: f64| 1.0 / ms_per_byte / 1e6;

    // 1. SpMV on one GPU: t0 + bytes / BW.
    let s1 = one_gpu(What::Spmv);
    need(&s1, "1-GPU SpMV points of two sizes", true)?;
    let rows: Vec<_> = s1
        .iter()
        .map(|f| {
            (
                f.point.ms,
                0.0,
                1.0,
                f.loads[0].interior_bytes(model::VALUE),
            )
        })
        .collect();
    let (t0, per_byte) = model::fit_two(&rows).ok_or_else(|| {
        bad("the 1-GPU SpMV points do not determine a floor and a bandwidth".into())
    })?;
    p.spmv_floor_ms = t0;
    p.spmv_gbps = to_gbps(per_byte);

    // 2. GMRES on one GPU: S T_spmv + T_host + V 8 n / BW_orth.
    let g1 = one_gpu(What::GmresIteration);
    need(&g1, "1-GPU GMRES-iteration points of two sizes", true)?;
    let rows: Vec<_> = g1
        .iter()
        .map(|f| {
            let spmv = model::spmv_ms(0, &f.loads[0], &p, a).0;
            let bytes = classical.vectors * (f.loads[0].rows * model::VALUE) as f64;
            (f.point.ms, classical.spmvs * spmv, 1.0, bytes)
        })
        .collect();
    let (host, per_byte) = model::fit_two(&rows).ok_or_else(|| {
        bad("the 1-GPU GMRES points do not determine an overhead and a bandwidth".into())
    })?;
    p.iteration_overhead_ms = host;
    p.orth_gbps = to_gbps(per_byte);

    // 3. The distributed SpMV's fixed cost: multi-GPU SpMV points.
    let s2 = more(What::Spmv);
    need(&s2, "multi-GPU SpMV points", false)?;
    let rows: Vec<_> = s2
        .iter()
        .map(|f| {
            (
                f.point.ms,
                model::predict(&f.loads, What::Spmv, m, &p, a),
                1.0,
            )
        })
        .collect();
    p.halo_overhead_ms = model::fit_one(&rows).unwrap_or(0.0).max(0.0);

    // 4. The 2-GPU all-reduce: multi-GPU GMRES points (it enters every all-reduce).
    let g2 = more(What::GmresIteration);
    need(&g2, "multi-GPU GMRES-iteration points", false)?;
    let per_iter = classical.step_allreduces + classical.solve_allreduces;
    let rows: Vec<_> = g2
        .iter()
        .map(|f| {
            let base = model::predict(&f.loads, What::GmresIteration, m, &p, a);
            (f.point.ms, base, per_iter)
        })
        .collect();
    p.allreduce_2_ms = model::fit_one(&rows).unwrap_or(0.0).max(0.0);
    for (name, v) in [
        ("SpMV bandwidth", p.spmv_gbps),
        ("orthogonalisation bandwidth", p.orth_gbps),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(format!(
                "the fit gives a {name} of {v} GB/s: the measured points do not fit the model's form"
            )));
        }
    }
    Ok(p)
}

/// The GPU counts predicted: powers of two up to `max` (and `max`), at most `blocks`.
fn gpu_counts(max: usize, blocks: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&p| p.checked_mul(2))
        .take_while(|&p| p <= max && p <= blocks)
        .collect();
    if max <= blocks && v.last() != Some(&max) {
        v.push(max);
    }
    v
}

/// Predicts one series.
fn series(
    name: &str,
    mode: &'static str,
    block: (usize, usize, usize),
    blocks_for: &dyn Fn(usize) -> usize,
    opts: &ScaleModelOptions,
    m: usize,
    params: &Params,
) -> Result<Vec<Prediction>> {
    let a = &opts.assumptions;
    let variants = [
        Variant::Classical,
        Variant::Pipelined,
        Variant::OverlapBound,
    ];
    let mut out: Vec<Prediction> = Vec::new();
    let limit = if mode == "strong" {
        blocks_for(1)
    } else {
        usize::MAX
    };
    for p in gpu_counts(opts.max_gpus, limit) {
        let spec = TraceSpec::new(block.0, block.1, block.2, blocks_for(p));
        let l = loads(&spec, p)?;
        let max_blocks = l.iter().map(|r| r.grid_blocks).max().unwrap_or(0);
        let times = variants.map(|v| model::iteration(&l, v, m, params, a));
        let spmv = model::predict(&l, What::Spmv, m, params, a);
        let busiest = l
            .iter()
            .max_by_key(|r| r.rows)
            .ok_or_else(|| bad(format!("no ranks for {p} GPUs")))?;
        let base = out.first();
        let eff = |t1: f64, t: f64| match mode {
            "weak" => t1 / t,
            _ => t1 / (p as f64 * t),
        };
        let iteration_ms = times.map(|t| t.total);
        let (b_spmv, b_iter) = match base {
            Some(b) => (b.spmv_ms, b.iteration_ms),
            None => (spmv, iteration_ms),
        };
        out.push(Prediction {
            series: name.to_string(),
            mode,
            gpus: p,
            nodes: p.div_ceil(a.gpus_per_node),
            grid_blocks: spec.grid_blocks,
            rows: spec.block_rows() * B,
            max_blocks_per_gpu: max_blocks,
            balance: spec.grid_blocks as f64 / (p * max_blocks) as f64,
            spmv_ms: spmv,
            iteration_ms,
            spmv_efficiency: eff(b_spmv, spmv),
            efficiency: [0, 1, 2].map(|i| eff(b_iter[0], iteration_ms[i])),
            efficiency_own: [0, 1, 2].map(|i| eff(b_iter[i], iteration_ms[i])),
            classical: times[0],
            memory_gb: [
                model::memory_gb(busiest, m, Variant::Classical),
                model::memory_gb(busiest, m, Variant::Pipelined),
            ],
        });
    }
    Ok(out)
}

fn headline(rows: &[Prediction]) -> Option<Headline> {
    let last = rows.last()?;
    let c = &last.classical;
    Some(Headline {
        series: last.series.clone(),
        gpus: last.gpus,
        efficiency: last.efficiency,
        below_half_at: [0, 1, 2]
            .map(|i| rows.iter().find(|r| r.efficiency[i] < 0.5).map(|r| r.gpus)),
        fastest_at: [0, 1, 2].map(|i| {
            rows.iter()
                .min_by(|a, b| a.iteration_ms[i].total_cmp(&b.iteration_ms[i]))
                .map_or(1, |r| r.gpus)
        }),
        pipelined_faster_from: rows
            .iter()
            .position(|r| r.iteration_ms[1] < r.iteration_ms[0])
            .filter(|&i| {
                rows[i..]
                    .iter()
                    .all(|r| r.iteration_ms[1] < r.iteration_ms[0])
            })
            .map(|i| rows[i].gpus),
        balance: last.balance,
        allreduce_share: c.allreduce / c.total,
        overhead_share: c.overhead / c.total,
    })
}

/// Reads the measured results, fits, checks and predicts. Errors: no `scaling.md` (or
/// a malformed one), too few points to fit, invalid options.
pub fn run(opts: &ScaleModelOptions) -> Result<ScaleModelReport> {
    opts.validate()?;
    let mut files: Vec<MeasuredFile> = Vec::new();
    for (i, name) in INPUTS.iter().enumerate() {
        let path = opts.results_dir.join(name);
        if i > 0 && !path.exists() {
            continue;
        }
        files.push(measured::read(&path)?);
    }
    let m = restart();
    let a = &opts.assumptions;
    let mut fitting = Vec::new();
    for f in &files {
        for p in f.points.iter().filter(|p| p.transport == TRANSPORT) {
            fitting.push(Fitting {
                point: p,
                loads: loads(&f.spec(p), p.gpus)?,
            });
        }
    }
    let params = fit(&fitting, m, a)?;
    let check: Vec<CheckRow> = fitting
        .iter()
        .map(|f| {
            let model_ms = model::predict(&f.loads, f.point.what, m, &params, a);
            CheckRow {
                measured: f.point.clone(),
                model_ms,
                error: model_ms / f.point.ms - 1.0,
                model_ghost_blocks: ghost_max(&f.loads),
            }
        })
        .collect();
    let max_error = check.iter().map(|c| c.error.abs()).fold(0.0, f64::max);

    // The predicted problems: case 6's grid blocks, case 6 per GPU (weak) and a billion
    // rows (strong); and the two measured set-ups of the first input carried on.
    let case6 = generate::case(6)?;
    let block6 = (case6.nx, case6.ntheta, case6.nr);
    let per_gpu6 = case6.grid_blocks;
    let rows_per_block = case6.block_rows_per_grid_block() * B;
    let strong_blocks = STRONG_ROWS.div_ceil(rows_per_block);
    let mut predictions = Vec::new();
    let mut headlines = Vec::new();
    let mut add = |rows: Vec<Prediction>, headline_too: bool| {
        if headline_too && let Some(h) = headline(&rows) {
            headlines.push(h);
        }
        predictions.extend(rows);
    };
    add(
        series(
            &format!("weak, case 6 x P ({per_gpu6} grid blocks per GPU)"),
            "weak",
            block6,
            &|p| per_gpu6 * p,
            opts,
            m,
            &params,
        )?,
        true,
    );
    add(
        series(
            &format!(
                "strong, {strong_blocks} grid blocks ({} rows)",
                strong_blocks * rows_per_block
            ),
            "strong",
            block6,
            &|_| strong_blocks,
            opts,
            m,
            &params,
        )?,
        true,
    );
    // The measured set-ups: the 1-GPU GMRES points of the first input, per mode.
    let first = &files[0];
    let mut measured_efficiency = Vec::new();
    for mode in ["weak", "strong"] {
        let pts: Vec<&MeasuredPoint> = first
            .points
            .iter()
            .filter(|p| {
                p.transport == TRANSPORT && p.mode == mode && p.what == What::GmresIteration
            })
            .collect();
        let Some(base) = pts.iter().find(|p| p.gpus == 1) else {
            continue;
        };
        let name = match mode {
            "weak" => format!(
                "weak, as measured ({} grid blocks per GPU)",
                base.grid_blocks
            ),
            _ => format!("strong, as measured ({} grid blocks)", base.grid_blocks),
        };
        let g = base.grid_blocks;
        let mode_static: &'static str = if mode == "weak" { "weak" } else { "strong" };
        let blocks_for: Box<dyn Fn(usize) -> usize> = if mode == "weak" {
            Box::new(move |p| g * p)
        } else {
            Box::new(move |_| g)
        };
        add(
            series(
                &name,
                mode_static,
                first.block,
                &*blocks_for,
                opts,
                m,
                &params,
            )?,
            false,
        );
        for p in &pts {
            let e = if mode == "weak" {
                base.ms / p.ms
            } else {
                base.ms / (p.gpus as f64 * p.ms)
            };
            measured_efficiency.push((name.clone(), p.gpus, e));
        }
    }
    let inputs = files
        .iter()
        .map(|f| Input {
            file: f.file.clone(),
            provenance: f.provenance.clone(),
            points: f.points.iter().filter(|p| p.transport == TRANSPORT).count(),
        })
        .collect();
    Ok(ScaleModelReport {
        inputs,
        transport: TRANSPORT.into(),
        assumptions: a.clone(),
        counts: [Counts::classical(m), Counts::pipelined(m)],
        params,
        within_tolerance: max_error <= TOLERANCE,
        max_error,
        check,
        predictions,
        headlines,
        measured_efficiency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/results")
    }

    /// The model reproduces every measured point of docs/results/scaling.md (and of
    /// scaling-transports.md) within 15 %: read at test time, so a new `bench scaling`
    /// run is checked too.
    #[test]
    fn model_reproduces_every_measured_point() {
        let opts = ScaleModelOptions {
            results_dir: results_dir(),
            ..Default::default()
        };
        let r = run(&opts).unwrap();
        let from_scaling = r
            .check
            .iter()
            .filter(|c| c.measured.file == "scaling.md")
            .count();
        assert!(from_scaling >= 8, "{from_scaling} points of scaling.md");
        for c in &r.check {
            let p = &c.measured;
            assert!(
                c.error.abs() <= TOLERANCE,
                "{}:{} ({} {} on {} GPUs): model {:.4} ms, measured {:.4} ms, error {:+.1} %",
                p.file,
                p.line,
                p.mode,
                p.what.label(),
                p.gpus,
                c.model_ms,
                p.ms,
                100.0 * c.error
            );
            assert_eq!(
                c.model_ghost_blocks, p.ghost_blocks,
                "{}:{}",
                p.file, p.line
            );
        }
        assert!(r.within_tolerance);
    }

    #[test]
    fn predictions_cover_1_to_1024_gpus() {
        let r = run(&ScaleModelOptions {
            results_dir: results_dir(),
            ..Default::default()
        })
        .unwrap();
        for h in &r.headlines {
            assert_eq!(h.gpus, 1024, "{}", h.series);
        }
        let weak: Vec<&Prediction> = r
            .predictions
            .iter()
            .filter(|p| p.series.starts_with("weak, case 6"))
            .collect();
        assert_eq!(
            weak.iter().map(|p| p.gpus).collect::<Vec<_>>(),
            gpu_counts(1024, usize::MAX)
        );
        assert!(weak.iter().all(|p| p.rows == 6_504_960 * p.gpus));
        let strong = r
            .predictions
            .iter()
            .find(|p| p.series.starts_with("strong, 1230"))
            .unwrap();
        assert!(strong.rows >= STRONG_ROWS);
        // Efficiency at 1 GPU is 1; weak efficiency never rises above it (each variant's
        // against its own 1-GPU time: against the classical solver's, a variant faster on
        // one GPU starts above 1).
        assert!(
            weak.iter()
                .all(|p| p.efficiency_own.iter().all(|&e| e <= 1.0 + 1e-12))
        );
        assert!(weak.iter().all(|p| p.efficiency[0] <= 1.0 + 1e-12));
        assert!(r.to_markdown().contains("## Check"));
        r.chart().render_png(1280, 720).unwrap();
        r.check_chart().render_png(1280, 640).unwrap();
    }

    #[test]
    fn missing_or_malformed_inputs_are_errors() {
        let dir =
            std::env::temp_dir().join(format!("ferrocuda-scale-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = ScaleModelOptions {
            results_dir: dir.clone(),
            ..Default::default()
        };
        let e = run(&opts).unwrap_err().to_string();
        assert!(e.contains("scaling.md"), "{e}");
        std::fs::write(dir.join("scaling.md"), "# Distributed\n\n- matrices: TRACE-like, grid blocks of 4 x 4 x 4 cells\n\n| transport | mode |\n|---|---|\n| nccl | weak |\n").unwrap();
        let e = run(&opts).unwrap_err().to_string();
        assert!(e.contains("no column \"what\""), "{e}");
        // One size only: the fit is refused with the reason.
        let one = "# x\n\n- matrices: TRACE-like, grid blocks of 4 x 4 x 4 cells\n\n\
                   | transport | mode | what | GPUs | grid blocks | rows | ghost blocks / rank | ms |\n|---|---|---|---|---|---|---|---|\n\
                   | nccl | weak | spmv | 1 | 2 | 5120 | 0 | 0.1 |\n";
        std::fs::write(dir.join("scaling.md"), one).unwrap();
        let e = run(&opts).unwrap_err().to_string();
        assert!(e.contains("1-GPU SpMV points of two sizes"), "{e}");
        let bad = ScaleModelOptions {
            max_gpus: 0,
            ..opts.clone()
        };
        assert!(run(&bad).unwrap_err().to_string().contains("--max-gpus"));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// What docs/scaling-model.md copies from the tool's results file is still there,
    /// word for word (a new run of the tool makes the copies stale: copy them again).
    #[test]
    fn the_design_docs_copies_match_the_results_file() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let doc = std::fs::read_to_string(root.join("docs/scaling-model.md")).unwrap();
        let results = std::fs::read_to_string(root.join("docs/results/scaling-model.md")).unwrap();
        let mut copying = false;
        let mut copied = 0;
        for line in doc.lines() {
            match line.trim() {
                "<!-- copied from results/scaling-model.md -->" => copying = true,
                "<!-- end of copy -->" => copying = false,
                "" => {}
                l if copying => {
                    assert!(
                        results.lines().any(|r| r.trim() == l),
                        "docs/scaling-model.md copies a line that docs/results/scaling-model.md no longer has: {l}"
                    );
                    copied += 1;
                }
                _ => {}
            }
        }
        assert!(!copying, "a copy in docs/scaling-model.md is not closed");
        assert!(copied >= 10, "{copied} lines copied");
    }

    #[test]
    fn gpu_counts_are_powers_of_two_within_the_blocks() {
        assert_eq!(gpu_counts(8, 100), vec![1, 2, 4, 8]);
        assert_eq!(gpu_counts(1024, 128), vec![1, 2, 4, 8, 16, 32, 64, 128]);
        assert_eq!(gpu_counts(12, 100), vec![1, 2, 4, 8, 12]);
    }
}
