//! `ferrocuda bench scaling`: distributed SpMV and GMRES on 1, 2, 4, .. GPUs of one
//! node, ranks as threads ([`ferrocuda::distributed::run_on_threads`]), one GPU per rank, TRACE-like matrices
//! split by whole grid blocks.
//!
//! - **Weak scaling**: each rank owns the same number of grid blocks, so the problem
//!   grows with the ranks; efficiency `t(1) / t(P)`.
//! - **Strong scaling**: one fixed problem; speedup `t(1) / t(P)`, efficiency
//!   `t(1) / (P t(P))`.
//!
//! Each timing is the slowest rank's median wall time of one SpMV (`f64`, SBELL
//! interior) or one GMRES(m) iteration (`f64`, CGS2, no preconditioner, `m` steps
//! without restart), every repetition starting after an all-reduce so the ranks start
//! together. The halo moves GPU to GPU through NCCL or through the host, as asked
//! ([`Transport`]; see [`ferrocuda::distributed::gpu`]); both in one run by default.

use crate::output::{ResultsDir, Saved};
use std::time::Instant;

use serde::Serialize;

use crate::markdown_table;
use ferrocuda::distributed::{
    Communicator, DeviceDistributedBcsr, RowPartition, Transport, run_on_gpus,
};
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{DeviceLinOp, GmresOptions, gpu as kgpu};
use ferrocuda::report::table;
use ferrocuda::sparse::Bcsr;
use ferrocuda::sparse::generate::TraceSpec;
use ferrocuda::timing::Stats;
use ferrocuda::{Error, Result};

/// What to run.
#[derive(Debug, Clone)]
pub struct ScalingOptions {
    /// Rank (GPU) counts; those above the devices present are left out.
    pub ranks: Vec<usize>,
    /// One grid block (cells `nx x ntheta x nr`) of the TRACE-like matrices.
    pub block: (usize, usize, usize),
    /// Grid blocks per rank in the weak-scaling runs.
    pub blocks_per_rank: usize,
    /// Grid blocks of the strong-scaling problem.
    pub strong_blocks: usize,
    /// Timed repetitions (median).
    pub reps: usize,
    /// GMRES steps timed (one cycle, no restart).
    pub gmres_steps: usize,
    /// Transports measured, each a full series.
    pub transports: Vec<Transport>,
}

impl ScalingOptions {
    /// Checks the options before anything runs: positive rank counts, cells, block
    /// counts and `--reps`.
    pub fn validate(&self) -> Result<()> {
        let op = "bench scaling";
        let (x, t, r) = self.block;
        crate::at_least_one(
            op,
            &[
                ("--block (NX)", x),
                ("--block (NTHETA)", t),
                ("--block (NR)", r),
                ("--blocks-per-gpu", self.blocks_per_rank),
                ("--strong-blocks", self.strong_blocks),
                ("--reps", self.reps),
            ],
        )?;
        if self.ranks.is_empty() || self.ranks.contains(&0) {
            return Err(crate::invalid(
                op,
                format!("--gpus {:?}: rank counts must be at least 1", self.ranks),
            ));
        }
        Ok(())
    }
}

impl Default for ScalingOptions {
    fn default() -> Self {
        ScalingOptions {
            ranks: vec![1, 2, 4],
            block: (40, 80, 40),
            blocks_per_rank: 4,
            strong_blocks: 8,
            reps: 20,
            gmres_steps: 30,
            transports: vec![Transport::Nccl, Transport::NcclHostSums, Transport::Host],
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingRow {
    /// "nccl" or "host".
    pub transport: String,
    /// "weak" or "strong".
    pub mode: &'static str,
    /// "spmv" or "gmres iteration".
    pub what: &'static str,
    /// Ranks (GPUs).
    pub ranks: usize,
    /// Grid blocks of the whole problem.
    pub grid_blocks: usize,
    /// Rows of the whole problem.
    pub rows: usize,
    /// Ghost blocks received per SpMV, largest over the ranks.
    pub ghost_blocks: usize,
    /// Slowest rank's median, ms.
    pub ms: f64,
    /// `t(1) / t(P)` (strong: the speedup).
    pub speedup: f64,
    /// Weak: `t(1) / t(P)`; strong: `t(1) / (P t(P))`.
    pub efficiency: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingReport {
    /// Device names, one per GPU used.
    pub devices: Vec<String>,
    /// Cells of one grid block.
    pub block: (usize, usize, usize),
    /// Rows.
    pub rows: Vec<ScalingRow>,
    /// Rank counts asked for but not run (too few GPUs).
    pub skipped_ranks: Vec<usize>,
    /// Version of the NCCL used (e.g. 22703), where the run used NCCL.
    pub nccl_version: Option<i32>,
}

/// Times one SpMV and one GMRES iteration on `ranks` GPUs for `spec`; returns
/// `(spmv ms, gmres ms, largest ghost count)`, slowest rank's medians.
fn measure(
    spec: &TraceSpec,
    a: &Bcsr<f64>,
    ranks: usize,
    transport: Transport,
    opts: &ScalingOptions,
) -> Result<(f64, f64, usize)> {
    let part = RowPartition::grid_blocks(spec, ranks)?;
    let per_rank = run_on_gpus(ranks, transport, |comm, gpu| {
        let rank = comm.rank();
        let gpu = gpu.clone();
        let local = part.local_rows(a, rank)?;
        let op = DeviceDistributedBcsr::<f64, f64>::new(comm, &gpu, &part, &local)?;
        drop(local);
        let n = op.nrows();
        let x = gpu.upload(&vec![1.0; n])?;
        let mut y = gpu.alloc::<f64>(n)?;
        let spmv = timed(comm, &gpu, opts.reps, || {
            op.apply(&x.view(..)?, &mut y.view_mut(..)?)
        })?;
        // b = A 1 (consistent), GMRES from x = 0 for a fixed number of steps.
        let gm = GmresOptions::default()
            .restart(opts.gmres_steps)
            .rtol(0.0)
            .max_iter(opts.gmres_steps);
        let mut xg = gpu.alloc_zeroed::<f64>(n)?;
        let gmres = timed(comm, &gpu, opts.reps.div_ceil(4).max(2), || {
            ferrocuda::blas1::gpu::fill(&mut xg, 0.0)?;
            let r = kgpu::gmres_distributed(comm, &op, None, &y, &mut xg, &gm)?;
            if r.iterations == 0 {
                return Err(Error::InvalidArgument {
                    op: "bench scaling",
                    reason: "GMRES took no step".into(),
                });
            }
            Ok(())
        })?;
        Ok((
            spmv,
            gmres / opts.gmres_steps as f64,
            op.plan().ghost_blocks(),
        ))
    })?;
    let worst = |f: fn(&(f64, f64, usize)) -> f64| per_rank.iter().map(f).fold(0.0, f64::max);
    Ok((
        worst(|r| r.0),
        worst(|r| r.1),
        per_rank.iter().map(|r| r.2).max().unwrap_or(0),
    ))
}

/// Median wall time (ms) of `f` on this rank, all ranks starting each repetition
/// together, after one untimed run.
fn timed(
    comm: &dyn Communicator,
    gpu: &Gpu,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    f()?;
    gpu.synchronize()?;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        comm.all_reduce_sum(&mut [0.0])?;
        let t = Instant::now();
        f()?;
        gpu.synchronize()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Stats::from_samples(samples).median_ms)
}

/// Runs the weak- and strong-scaling series. Errors: no GPU, invalid options.
pub fn run(opts: &ScalingOptions) -> Result<ScalingReport> {
    let devices = ferrocuda::gpu::count();
    if devices == 0 {
        return Err(Error::InvalidArgument {
            op: "bench scaling",
            reason: "no GPU: the scaling benchmark needs at least one".into(),
        });
    }
    let (run_ranks, skipped_ranks): (Vec<usize>, Vec<usize>) =
        opts.ranks.iter().partition(|&&r| r >= 1 && r <= devices);
    let names = (0..run_ranks.iter().copied().max().unwrap_or(1))
        .map(|d| ferrocuda::gpu::open(d).and_then(|g| Ok(g.name()?)))
        .collect::<Result<Vec<_>>>()?;
    if opts.transports.iter().any(|&t| t != Transport::Host) {
        ferrocuda::gpu::nccl_available().map_err(|e| Error::InvalidArgument {
            op: "bench scaling",
            reason: format!("{e} (or measure only the host transport: --transport host)"),
        })?;
    }
    let (nx, nt, nr) = opts.block;
    let mut rows = Vec::new();
    let mut matrix: Option<(TraceSpec, Bcsr<f64>)> = None;
    let mut steps =
        crate::progress::steps("bench scaling", opts.transports.len() * 2 * run_ranks.len());
    for &transport in &opts.transports {
        for (mode, blocks_for) in [
            (
                "weak",
                Box::new(|p: usize| opts.blocks_per_rank * p) as Box<dyn Fn(usize) -> usize>,
            ),
            ("strong", Box::new(|_| opts.strong_blocks)),
        ] {
            let mut base: Option<(f64, f64)> = None;
            for &p in &run_ranks {
                steps.next(format!("{transport:?}, {mode}, {p} GPUs"));
                let spec = TraceSpec::new(nx, nt, nr, blocks_for(p));
                eprintln!(
                    "[bench scaling] {transport}, {mode}: {p} GPU(s), {} grid blocks of {nx} x {nt} x {nr}",
                    spec.grid_blocks
                );
                // The strong series reuses its matrix (generating a large one takes
                // longer than measuring it).
                if matrix.as_ref().is_none_or(|(s, _)| *s != spec) {
                    drop(matrix.take()); // free the old one first
                    matrix = Some((spec, crate::progress::generate::<f64>(&spec)?));
                }
                let a = &matrix.as_ref().expect("just generated").1;
                let (spmv, gmres, ghosts) = measure(&spec, a, p, transport, opts)?;
                let (s1, g1) = *base.get_or_insert((spmv, gmres));
                for (what, t, t1) in [("spmv", spmv, s1), ("gmres iteration", gmres, g1)] {
                    let speedup = t1 / t;
                    rows.push(ScalingRow {
                        transport: transport.to_string(),
                        mode,
                        what,
                        ranks: p,
                        grid_blocks: spec.grid_blocks,
                        rows: spec.block_rows() * 5,
                        ghost_blocks: ghosts,
                        ms: t,
                        speedup,
                        efficiency: if mode == "weak" {
                            speedup
                        } else {
                            speedup / p as f64
                        },
                    });
                }
            }
        }
    }
    let nccl_version = match opts.transports.iter().any(|&t| t != Transport::Host) {
        true => Some(ferrocuda::gpu::nccl_version()?),
        false => None,
    };
    Ok(ScalingReport {
        nccl_version,
        devices: names,
        block: opts.block,
        rows,
        skipped_ranks,
    })
}

impl ScalingReport {
    fn cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                vec![
                    r.transport.clone(),
                    r.mode.to_string(),
                    r.what.to_string(),
                    r.ranks.to_string(),
                    r.grid_blocks.to_string(),
                    r.rows.to_string(),
                    r.ghost_blocks.to_string(),
                    format!("{:.4}", r.ms),
                    format!("{:.2}x", r.speedup),
                    format!("{:.1}%", 100.0 * r.efficiency),
                ]
            })
            .collect()
    }

    /// The table's columns (the scale model reads the first eight by these names).
    pub(crate) const HEADERS: [&'static str; 10] = [
        "transport",
        "mode",
        "what",
        "GPUs",
        "grid blocks",
        "rows",
        "ghost blocks / rank",
        "ms",
        "t(1) / t(P)",
        "efficiency",
    ];

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        table(&Self::HEADERS, &self.cells())
    }

    /// `docs/results/scaling.md`.
    pub fn to_markdown(&self) -> String {
        let (nx, nt, nr) = self.block;
        let mut s = String::from(
            "# Distributed SpMV and GMRES: weak and strong scaling\n\n\
             Written by `ferrocuda bench scaling`; do not edit by hand.\n\n",
        );
        s += &format!(
            "- devices: {}\n- matrices: TRACE-like, grid blocks of {nx} x {nt} x {nr} cells \
             (5x5 blocks, 13-point stencil), f64, split by whole grid blocks (one rank per GPU, \
             ranks as threads of one process)\n- transport: `nccl` moves the halo spans GPU \
             to GPU (NCCL send/recv on a second stream, overlapped with the interior SpMV) \
             and sums GMRES's dots on the devices (NCCL all-reduce); `nccl-host-sums` moves the \
             halo through NCCL and sums the dots on the host (after their download); `host` stages the spans \
             through host memory and sums the dots on the host\n- SpMV: one `y = A x` incl. \
             the halo exchange, slowest rank's median; GMRES: one CGS2 iteration, no \
             preconditioner, dots all-reduced\n- weak: efficiency t(1) / t(P) at a fixed \
             number of grid blocks per GPU; strong: efficiency t(1) / (P t(P))\n",
            self.devices.join(", ")
        );
        if let Some(v) = self.nccl_version {
            s += &format!("- NCCL {}.{}.{}\n", v / 10000, v / 100 % 100, v % 100);
        }
        if !self.skipped_ranks.is_empty() {
            s += &format!("- not run (fewer GPUs present): {:?}\n", self.skipped_ranks);
        }
        s += "\n";
        s += &markdown_table(&Self::HEADERS, &self.cells());
        s
    }
}

/// Writes `scaling.md` (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &ScalingReport, out: &ResultsDir) -> Result<Saved> {
    out.save("scaling.md", |out| {
        Ok(vec![
            out.write_markdown("scaling.md", &report.to_markdown())?,
        ])
    })
}
