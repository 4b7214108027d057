//! `ferrocuda bench <name>`: each benchmark's options, checked before anything runs,
//! then [`ferrocuda_bench`]'s run, its result files under one rule
//! ([`ferrocuda_bench::output::ResultsDir`]: a run without a GPU never replaces results
//! of a run with one), and its report.

use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use serde::Serialize;

use ferrocuda::Result;
use ferrocuda::krylov::{GmresOptions, Preconditioner};
use ferrocuda_bench::gmres::Peer;
use ferrocuda_bench::output::{ResultsDir, Saved};
use ferrocuda_bench::spmv::SpmvCase;

use crate::Precision;
use crate::choices::{PeerArg, PrecondArg, choice};
use crate::device::{DeviceChoice, Where, parse_device};
use crate::numbers::{count, count_u64};
use crate::report::{Report, shown};

/// `ferrocuda bench ...`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub which: BenchCommand,
    /// The GPU to measure: an ordinal N (gpu:N), gpu (0), or cpu (skip the GPU part)
    /// [default: 0 where present].
    #[arg(long, global = true, value_name = "N", value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
}

/// `bench solve --scalars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveScalars {
    /// The generated case in f64 and c64, and the real matrices.
    All,
    /// The generated case in f64 and the real matrices.
    Real,
    /// The generated case in c64.
    Complex,
}

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Distributed SpMV and GMRES on 1, 2, 4 GPUs of this node: weak and strong scaling
    /// on TRACE-like matrices split by grid blocks; writes <results-dir>/scaling.md.
    /// Needs a GPU per rank (rank counts above the GPUs present are left out).
    Scaling {
        /// Rank (GPU) counts (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4", value_parser = count, allow_hyphen_values = true)]
        gpus: Vec<usize>,
        /// Cells of one grid block, NXxNTHETAxNR.
        #[arg(long, default_value = "40x80x40")]
        block: String,
        /// Grid blocks per GPU in the weak-scaling runs.
        #[arg(long, default_value_t = 4, value_parser = count, allow_hyphen_values = true)]
        blocks_per_gpu: usize,
        /// Grid blocks of the strong-scaling problem.
        #[arg(long, default_value_t = 8, value_parser = count, allow_hyphen_values = true)]
        strong_blocks: usize,
        /// Timed repetitions (median).
        #[arg(long, default_value_t = 20, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Transports to measure (comma-separated): nccl (GPU to GPU, needs libnccl),
        /// nccl-host-sums (halo by NCCL, GMRES's dot sums on the host), host (staged
        /// through host memory).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "nccl,nccl-host-sums,host"
        )]
        transport: Vec<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where scaling.md goes.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// SFMT19937 streams on the GPU against the write ceiling and cuRAND (MTGP32, MT19937,
    /// Philox4x32-10) in one run, and seed 004's Table 5.3 setup; writes
    /// <results-dir>/rng.md. Needs a GPU.
    Rng {
        /// log2 of the numbers per large run.
        #[arg(long, default_value_t = 30)]
        large_log2: u32,
        /// Timed repetitions per measurement.
        #[arg(long, default_value_t = 10, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Skip the CPU twin on the Table 5.3 count.
        #[arg(long)]
        no_cpu: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// SpMV on a TRACE-like matrix (thesis Table 4.1): ferrocuda's kernels, cuSPARSE,
    /// the copy ceiling and the CPU in one run; writes <results-dir>/spmv.md.
    Spmv {
        /// Test case: 1..6 (thesis Table 4.1) or `large` (over 1e8 nonzeros).
        #[arg(long, default_value = "4")]
        case: String,
        /// Floating-point precision.
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        /// Complex matrix and vectors.
        #[arg(long)]
        complex: bool,
        /// Timed repetitions per measurement.
        #[arg(long, default_value_t = 20, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go (never over a GPU run's without a GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 000's Tables 6.1-6.11, 7.1/7.2 and 6.10 measured again: every thesis kernel
    /// variant (and ferrocuda's BELL and SBELL) on cases 1-6 in single-precision complex,
    /// seconds for 100 SpMVs; writes <results-dir>/spmv-thesis.md. Needs a GPU.
    SpmvThesis {
        /// Thesis cases to run (comma-separated, 1..6).
        #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6", value_parser = count, allow_hyphen_values = true)]
        cases: Vec<usize>,
        /// Timed calls per entry (median).
        #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// GMRES on a TRACE-like case: GPU (SBELL, CGS2 and MGS) against the CPU twin, time
    /// per step against the bandwidth floor; puts its section into
    /// <results-dir>/gmres.md (one per setup). With `--thesis`: seed 000's setup (100
    /// steps without restart, c32 and f64) on `--cases`, written to
    /// <results-dir>/gmres-thesis.md.
    Gmres {
        /// Seed 000's setup on every case of `--cases` (ignores `--case`, `--precision`,
        /// `--complex`, `--restart`, `--rtol`, `--max-iter`, `--precond`).
        #[arg(long)]
        thesis: bool,
        /// Thesis cases for `--thesis` (comma-separated, 1..6).
        #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6", value_parser = count, allow_hyphen_values = true)]
        cases: Vec<usize>,
        /// Test case: 1..6 (thesis Table 4.1), `large`, or any size as
        /// NXxNTHETAxNRxBLOCKS (e.g. `10x40x20x2`).
        #[arg(long, default_value = "4")]
        case: String,
        /// Floating-point precision.
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        /// Complex matrix and vectors.
        #[arg(long)]
        complex: bool,
        /// Restart length.
        #[arg(long, default_value_t = 30, value_parser = count, allow_hyphen_values = true)]
        restart: usize,
        /// Relative tolerance [default: 1e-8 in f64, 1e-5 in f32].
        #[arg(long, allow_hyphen_values = true)]
        rtol: Option<f64>,
        /// Most Arnoldi steps.
        #[arg(long, default_value_t = 1000, value_parser = count, allow_hyphen_values = true)]
        max_iter: usize,
        /// Right preconditioner (built from the 5x5 blocks of the matrix).
        #[arg(long, value_parser = choice::<PrecondArg, Preconditioner>(), default_value = "none")]
        precond: Preconditioner,
        /// Skip the CPU twin (and so SciPy, which is compared with it).
        #[arg(long)]
        no_cpu: bool,
        /// Other libraries' GMRES on the same system, through bench/scripts/gmres_peer.py
        /// (Python with NumPy and CuPy / SciPy; a missing one is reported, not an error).
        #[arg(long, value_parser = choice::<PeerArg, Peer>(), value_delimiter = ',', default_value = "cupy,scipy")]
        peers: Vec<Peer>,
        /// No peers.
        #[arg(long, conflicts_with = "peers")]
        no_peers: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go (never over a GPU run's without a GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 001's Tables 8.3 and 8.4 again: swarm-MPC cost, constraint and gradients
    /// (thesis forward differences and exact) on all CPU cores and the GPU, large swarms,
    /// ten MPC steps, the closed loop; writes <results-dir>/mpc.md, mpc.png and
    /// mpc-trajectories.png.
    Mpc {
        /// Timed repetitions per entry (median).
        #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Closed-loop steps of a 32-object swarm (§8.5.3 ran 2000; 0: skip the closed loop).
        #[arg(long, default_value_t = 600, value_parser = count, allow_hyphen_values = true)]
        loop_steps: usize,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go (never over a GPU run's without a GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 001's Table 6.4 again: ROCK4 on the thesis problem to t = 1 for N x N grids,
    /// one core and all cores, beside the thesis's figures; writes <results-dir>/rock4.md,
    /// rock4.png and solution snapshots (rock4-thesis.png, rock4-heat.png).
    Rock4 {
        /// Grid sizes N (comma-separated) [default: the thesis's 16, 32, .., 256].
        #[arg(long, value_delimiter = ',', value_parser = count, allow_hyphen_values = true)]
        sizes: Vec<usize>,
        /// rtol = atol.
        #[arg(long, default_value_t = 1e-6, allow_hyphen_values = true)]
        tol: f64,
        /// Timed runs per entry (median).
        #[arg(long, default_value_t = 3, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go (never over a GPU run's without a GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Dense LU: seed 004's Tables 3.1, 3.2, 4.1, then the pivoting LU against cuSOLVER
    /// getrf and the GEMM against cuBLAS in the same run, the CPU twin beside; writes
    /// <results-dir>/lu.md and lu.png.
    Lu {
        /// Orders of the pivoting-LU comparison (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "4096,8192,16384,32768", value_parser = count, allow_hyphen_values = true)]
        sizes: Vec<usize>,
        /// Timed repetitions per measurement (median).
        #[arg(long, default_value_t = 3, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Skip seed 004's tables.
        #[arg(long)]
        no_thesis: bool,
        /// Skip f32.
        #[arg(long)]
        no_f32: bool,
        /// Largest order the CPU twin runs.
        #[arg(long, default_value_t = 8192, value_parser = count, allow_hyphen_values = true)]
        cpu_max_n: usize,
        /// Panel width of the GPU LU.
        #[arg(long, default_value_t = 384, value_parser = count, allow_hyphen_values = true)]
        block: usize,
        /// GPU LU without look-ahead (panels on the main stream).
        #[arg(long)]
        no_lookahead: bool,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results and the chart go (never over a GPU run's without a
        /// GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Multigrid: seed 003's Tables 6.1-6.8 beside the thesis's figures, then 513^3 and
    /// 1025^3 in f32 and f64 and the fused smoother kernel alone against the copy
    /// bandwidth of the same run, the CPU twin beside; writes <results-dir>/multigrid.md
    /// and its plots (PNG).
    Mg {
        /// CI-sized grids (a smoke run of every part).
        #[arg(long)]
        quick: bool,
        /// Timed launches of the smoother kernel alone (median).
        #[arg(long, default_value_t = 10, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Skip the CPU twin where a GPU runs.
        #[arg(long)]
        no_cpu: bool,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results and the plots go (never over a GPU run's without a
        /// GPU).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// axpy, dot and nrm2 (f64, c64) against the device copy bandwidth and the CPU.
    Blas1 {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Vector length.
        #[arg(long, default_value_t = 1 << 26, value_parser = count, allow_hyphen_values = true)]
        n: usize,
        /// Timed repetitions per measurement.
        #[arg(long, default_value_t = 30, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Also write the report as Markdown to this file (e.g. docs/results/blas1.md;
        /// never over a GPU run's without a GPU).
        #[arg(long)]
        markdown: Option<PathBuf>,
    },
    /// Draws every chart of a results folder again from its data (<name>.json beside
    /// <name>.png; every benchmark writes it with its chart); no GPU, nothing measured.
    /// With --from-results, first rebuilds the data of charts written before that from
    /// the results files the same tools wrote beside them (the Markdown tables, the
    /// multigrid JSON report) and lists the charts whose data no file holds. Marks the
    /// Markdown results files that record no provenance (measured before they did) as
    /// stale under their title.
    /// Small and medium problems, where the GPU waits for the host: GMRES(30) per
    /// step on 4x8x4x2, 10x40x20x2 and case 1 (stepped from the host and with whole
    /// cycles on the device) against CuPy and the bandwidth floor, multigrid V(5,5) per
    /// cycle at 33^3, 65^3, 129^3 (f32, f64), ROCK4 per step at N = 32, 64, 128; writes
    /// <results-dir>/latency.md, latency.json and latency-chart.png. Needs a GPU.
    Latency {
        /// The smallest size of each part only (a smoke run).
        #[arg(long)]
        quick: bool,
        /// Timed runs of the multigrid and ROCK4 parts (the fastest counts).
        #[arg(long, default_value_t = 3, value_parser = count, allow_hyphen_values = true)]
        reps: usize,
        /// Without CuPy.
        #[arg(long)]
        no_peers: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Time to solution, rtol 1e-8 on the true residual: GMRES(30) through DeviceSolver
    /// with each preconditioner (none, block Jacobi, ILU(0) on the device) and matrix
    /// storage (full; f32 refined with the full-precision residual) on a generated case
    /// (default 6) in f64 and c64 and the real matrices of data/matrices, against CuPy's
    /// GMRES (none, Jacobi, ILU(0), spilu) and SciPy's (Jacobi, spilu) on the same
    /// systems; writes <results-dir>/solve.md, solve.json and solve-chart.png. Needs a
    /// GPU; the peers need a Python 3 with CuPy and SciPy (FERROCUDA_PYTHON).
    Solve {
        /// The generated case: 1..6, large, or NXxNTHETAxNRxBLOCKS.
        #[arg(long, default_value = "6", value_parser = SpmvCase::parse)]
        case: SpmvCase,
        /// ILU(0) and block Jacobi on the case (c64: block Jacobi), one real matrix,
        /// fewer peer configurations (a smoke run).
        #[arg(long)]
        quick: bool,
        /// Without CuPy and SciPy.
        #[arg(long)]
        no_peers: bool,
        /// Stop a peer's run (load, set-up, solves) after this many seconds; the row
        /// then says so.
        #[arg(long, default_value_t = 120, value_parser = count_u64, allow_hyphen_values = true)]
        peer_timeout: u64,
        /// Which passes: all, real (the case in f64 and the real matrices) or complex
        /// (the case in c64); a full case-6 run split in two fits shorter time slots.
        #[arg(long, value_enum, default_value_t = SolveScalars::All)]
        scalars: SolveScalars,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// The scale model (docs/scaling-model.md): one distributed GMRES iteration on up to
    /// 1,024 GPUs, fitted to and checked against <results-dir>/scaling.md (and
    /// scaling-transports.md, where present); writes scaling-model.md, scaling-model.json
    /// and two charts (scaling-model-chart.png, scaling-model-check.png) there. Needs no
    /// GPU.
    ScaleModel {
        /// GPUs per node (NVLink inside a node, InfiniBand between nodes) [default: 8].
        #[arg(long, value_parser = count, allow_hyphen_values = true)]
        gpus_per_node: Option<usize>,
        /// Latency of one InfiniBand hop, in microseconds [default: 3].
        #[arg(long, allow_hyphen_values = true)]
        ib_latency_us: Option<f64>,
        /// Largest GPU count predicted.
        #[arg(long, default_value_t = 1024, value_parser = count, allow_hyphen_values = true)]
        max_gpus: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where scaling.md is read and the model's files go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    Redraw {
        /// Rebuild the charts' data from the results files first.
        #[arg(long)]
        from_results: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The results folder (its sub-folders too).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
}

/// A benchmark's options, checked: what runs.
enum Plan {
    Scaling(ferrocuda_bench::scaling::ScalingOptions),
    Rng(ferrocuda_bench::rng::RngBenchOptions),
    Spmv(ferrocuda_bench::spmv::SpmvBenchOptions),
    SpmvThesis(ferrocuda_bench::spmv_thesis::ThesisBenchOptions),
    Gmres(ferrocuda_bench::gmres::GmresBenchOptions),
    GmresThesis(ferrocuda_bench::gmres::GmresBenchOptions, Vec<usize>),
    Mpc(ferrocuda_bench::mpc::MpcBenchOptions),
    Rock4(ferrocuda_bench::rock4::Rock4BenchOptions),
    Lu(ferrocuda_bench::lu::LuBenchOptions),
    Mg(ferrocuda_bench::multigrid::MgBenchOptions),
    Blas1(ferrocuda_bench::blas1::Blas1BenchOptions),
    Latency(ferrocuda_bench::latency::LatencyOptions),
    Solve(ferrocuda_bench::solve::SolveBenchOptions),
    ScaleModel(ferrocuda_bench::scale_model::ScaleModelOptions),
    Redraw,
}

fn invalid(reason: String) -> ferrocuda::Error {
    ferrocuda::Error::InvalidArgument {
        op: "bench",
        reason,
    }
}

impl BenchCommand {
    /// `--json`.
    pub fn json(&self) -> bool {
        match self {
            BenchCommand::Scaling { json, .. }
            | BenchCommand::Rng { json, .. }
            | BenchCommand::Spmv { json, .. }
            | BenchCommand::SpmvThesis { json, .. }
            | BenchCommand::Gmres { json, .. }
            | BenchCommand::Mpc { json, .. }
            | BenchCommand::Rock4 { json, .. }
            | BenchCommand::Lu { json, .. }
            | BenchCommand::Mg { json, .. }
            | BenchCommand::Blas1 { json, .. }
            | BenchCommand::Latency { json, .. }
            | BenchCommand::Solve { json, .. }
            | BenchCommand::ScaleModel { json, .. }
            | BenchCommand::Redraw { json, .. } => *json,
        }
    }

    /// The results folder (`--markdown`'s folder for blas1).
    fn results_dir(&self) -> Option<&Path> {
        match self {
            BenchCommand::Scaling { results_dir, .. }
            | BenchCommand::Rng { results_dir, .. }
            | BenchCommand::Spmv { results_dir, .. }
            | BenchCommand::SpmvThesis { results_dir, .. }
            | BenchCommand::Gmres { results_dir, .. }
            | BenchCommand::Mpc { results_dir, .. }
            | BenchCommand::Rock4 { results_dir, .. }
            | BenchCommand::Lu { results_dir, .. }
            | BenchCommand::Mg { results_dir, .. }
            | BenchCommand::Latency { results_dir, .. }
            | BenchCommand::Solve { results_dir, .. }
            | BenchCommand::ScaleModel { results_dir, .. }
            | BenchCommand::Redraw { results_dir, .. } => Some(results_dir),
            BenchCommand::Blas1 { markdown, .. } => markdown.as_deref().map(|m| {
                m.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
            }),
        }
    }

    /// The benchmark's options, checked (sizes against memory included) without
    /// running anything.
    fn plan(&self) -> Result<Plan> {
        use BenchCommand as B;
        use ferrocuda_bench as b;
        let plan = match self {
            B::Scaling {
                gpus,
                block,
                blocks_per_gpu,
                strong_blocks,
                reps,
                transport,
                ..
            } => {
                let transports = transport
                    .iter()
                    .map(|t| t.parse::<ferrocuda::distributed::Transport>())
                    .collect::<Result<Vec<_>>>()?;
                let dims: Vec<usize> = block
                    .split('x')
                    .map(|v| count(v.trim()).ok())
                    .collect::<Option<_>>()
                    .filter(|d: &Vec<usize>| d.len() == 3)
                    .ok_or_else(|| {
                        invalid(format!(
                            "--block {block:?}: expected NXxNTHETAxNR, e.g. 40x80x40"
                        ))
                    })?;
                Plan::Scaling(b::scaling::ScalingOptions {
                    ranks: gpus.clone(),
                    block: (dims[0], dims[1], dims[2]),
                    blocks_per_rank: *blocks_per_gpu,
                    strong_blocks: *strong_blocks,
                    reps: *reps,
                    transports,
                    ..Default::default()
                })
            }
            B::Rng {
                large_log2,
                reps,
                no_cpu,
                ..
            } => Plan::Rng(b::rng::RngBenchOptions {
                large_log2: *large_log2,
                reps: *reps,
                cpu: !no_cpu,
                ..Default::default()
            }),
            B::Spmv {
                case,
                precision,
                complex,
                reps,
                ..
            } => {
                let mut o = b::spmv::SpmvBenchOptions::default();
                o.case = SpmvCase::parse(case)?;
                o.double = *precision == Precision::F64;
                o.complex = *complex;
                o.reps = *reps;
                Plan::Spmv(o)
            }
            B::SpmvThesis { cases, reps, .. } => {
                let mut o = b::spmv_thesis::ThesisBenchOptions::default();
                o.cases = cases.clone();
                o.reps = *reps;
                Plan::SpmvThesis(o)
            }
            B::Gmres {
                thesis,
                cases,
                case,
                precision,
                complex,
                restart,
                rtol,
                max_iter,
                precond,
                no_cpu,
                peers,
                no_peers,
                ..
            } => {
                let f64 = *precision == Precision::F64;
                let o = b::gmres::GmresBenchOptions {
                    case: SpmvCase::parse(case)?,
                    double: f64,
                    complex: *complex,
                    // A cycle cannot take more than max_iter steps: a larger restart
                    // is the same run with a smaller workspace.
                    gmres: GmresOptions::default()
                        .restart((*restart).min((*max_iter).max(1)))
                        .rtol(rtol.unwrap_or(if f64 { 1e-8 } else { 1e-5 }))
                        .max_iter(*max_iter),
                    precond: *precond,
                    cpu: !no_cpu,
                    peers: if *no_peers { Vec::new() } else { peers.clone() },
                };
                if *thesis {
                    b::gmres::GmresBenchOptions::validate_thesis_cases(cases)?;
                    Plan::GmresThesis(o, cases.clone())
                } else {
                    Plan::Gmres(o)
                }
            }
            B::Mpc {
                reps, loop_steps, ..
            } => Plan::Mpc(b::mpc::MpcBenchOptions {
                reps: *reps,
                loop_steps: *loop_steps,
                ..Default::default()
            }),
            B::Rock4 {
                sizes, tol, reps, ..
            } => {
                let mut o = b::rock4::Rock4BenchOptions {
                    tol: *tol,
                    reps: *reps,
                    ..Default::default()
                };
                if !sizes.is_empty() {
                    o.sizes = sizes.clone();
                }
                Plan::Rock4(o)
            }
            B::Lu {
                sizes,
                reps,
                no_thesis,
                no_f32,
                cpu_max_n,
                block,
                no_lookahead,
                ..
            } => Plan::Lu(b::lu::LuBenchOptions {
                sizes: sizes.clone(),
                reps: *reps,
                thesis: !no_thesis,
                cpu_max_n: *cpu_max_n,
                block: *block,
                f32: !no_f32,
                lookahead: !no_lookahead,
            }),
            B::Mg {
                quick,
                reps,
                no_cpu,
                ..
            } => Plan::Mg(b::multigrid::MgBenchOptions {
                quick: *quick,
                reps: *reps,
                cpu: !no_cpu,
            }),
            B::Latency {
                quick,
                reps,
                no_peers,
                ..
            } => Plan::Latency(b::latency::LatencyOptions {
                quick: *quick,
                reps: *reps,
                peers: !no_peers,
            }),
            B::Blas1 { n, reps, .. } => {
                let mut o = b::blas1::Blas1BenchOptions::default();
                o.n = *n;
                o.reps = *reps;
                Plan::Blas1(o)
            }
            B::Solve {
                case,
                quick,
                no_peers,
                peer_timeout,
                scalars,
                ..
            } => Plan::Solve(b::solve::SolveBenchOptions {
                case: *case,
                quick: *quick,
                peers: !no_peers,
                peer_timeout: std::time::Duration::from_secs(*peer_timeout),
                scalars: match scalars {
                    SolveScalars::All => b::solve::SolvePasses::All,
                    SolveScalars::Real => b::solve::SolvePasses::Real,
                    SolveScalars::Complex => b::solve::SolvePasses::Complex,
                },
            }),
            B::ScaleModel {
                gpus_per_node,
                ib_latency_us,
                max_gpus,
                results_dir,
                ..
            } => {
                let mut o = b::scale_model::ScaleModelOptions {
                    results_dir: results_dir.clone(),
                    max_gpus: *max_gpus,
                    ..Default::default()
                };
                if let Some(g) = gpus_per_node {
                    o.assumptions.gpus_per_node = *g;
                }
                if let Some(us) = ib_latency_us {
                    o.assumptions.ib_latency_ms = us * 1e-3;
                }
                Plan::ScaleModel(o)
            }
            B::Redraw { .. } => Plan::Redraw,
        };
        match &plan {
            Plan::Scaling(o) => o.validate(),
            Plan::Rng(o) => o.validate(),
            Plan::Spmv(o) => o.validate(),
            Plan::SpmvThesis(o) => o.validate(),
            Plan::Gmres(o) => o.validate(),
            Plan::GmresThesis(..) => Ok(()),
            Plan::Mpc(o) => o.validate(),
            Plan::Rock4(o) => o.validate(),
            Plan::Lu(o) => o.validate(),
            Plan::Mg(o) => o.validate(),
            Plan::Blas1(o) => o.validate(),
            Plan::Latency(o) => o.validate(),
            Plan::Solve(o) => o.validate(),
            Plan::ScaleModel(o) => o.validate(),
            Plan::Redraw => Ok(()),
        }?;
        Ok(plan)
    }

    /// Checks the options alone.
    pub fn validate(&self) -> Result<()> {
        self.plan().map(|_| ())
    }
}

/// Where a benchmark's files go and how the saving is announced.
struct Finish<'a> {
    note: &'a dyn Fn(Saved),
    results: &'a ResultsDir,
}

impl Finish<'_> {
    /// How every benchmark ends: write its files, say where, show the report.
    fn save<R: Serialize + 'static>(
        &self,
        report: R,
        write: fn(&R, &ResultsDir) -> Result<Saved>,
        text: fn(&R) -> String,
    ) -> Result<Box<dyn Report>> {
        (self.note)(write(&report, self.results)?);
        Ok(shown(report, text))
    }
}

/// What a GPU-only benchmark reports without a GPU.
#[derive(Debug, Serialize)]
struct NothingToRun {
    no_gpu: String,
}

/// Runs the benchmark on `on` (its GPU part where there is a GPU) and writes its files.
pub fn run(cmd: &BenchCommand, on: Where) -> Result<Box<dyn Report>> {
    use ferrocuda_bench as b;
    let plan = cmd.plan()?;
    if let BenchCommand::Redraw {
        from_results,
        results_dir,
        ..
    } = cmd
    {
        return redraw(results_dir, *from_results);
    }
    if let Plan::ScaleModel(o) = &plan {
        return scale_model(o);
    }
    let name = bench_name(cmd);
    let (gpu, skipped) = on.open_optional()?;
    if let Some(why) = &skipped {
        eprintln!("[bench {name}] GPU part skipped: {why}");
    }
    let note = |saved: Saved| eprintln!("[bench {name}] {saved}");
    let nothing = |what: &str| {
        let why = format!(
            "no GPU: {} ({what}; nothing to run)",
            skipped.clone().unwrap_or_default()
        );
        shown(NothingToRun { no_gpu: why }, |n| n.no_gpu.clone())
    };
    let dir = cmd.results_dir().unwrap_or(Path::new("."));
    let mut results = ResultsDir::new(dir, gpu.is_some());
    if let Some(g) = &gpu {
        results = results.on(ferrocuda_bench::output::gpu_device(g));
    }
    let out = Finish {
        note: &note,
        results: &results,
    };
    let g = gpu.as_ref();
    let report = match plan {
        Plan::Scaling(o) => {
            let report = b::scaling::run(&o)?;
            let mut ran = ResultsDir::new(dir, !report.devices.is_empty());
            if !report.devices.is_empty() {
                ran = ran.on(report.devices.join(", "));
            }
            note(b::scaling::write_results(&report, &ran)?);
            shown(report, b::scaling::ScalingReport::to_text)
        }
        Plan::Rng(o) => match g {
            None => nothing("the RNG benchmark compares GPU generators"),
            Some(g) => {
                let report = b::rng::run(g, &o)?;
                out.save(
                    report,
                    b::rng::write_results,
                    b::rng::RngBenchReport::to_text,
                )?
            }
        },
        Plan::SpmvThesis(o) => match g {
            None => nothing("the thesis tables compare GPU kernels"),
            Some(g) => {
                let report = b::spmv_thesis::run(g, &o)?;
                out.save(
                    report,
                    b::spmv_thesis::write_results,
                    b::spmv_thesis::ThesisReport::to_text,
                )?
            }
        },
        Plan::Spmv(o) => {
            let report = b::spmv::run(g, skipped.clone(), &o)?;
            out.save(report, b::spmv::write_results, b::spmv::SpmvReport::to_text)?
        }
        Plan::Gmres(o) => {
            let report = b::gmres::run(g, &o)?;
            out.save(
                report,
                b::gmres::write_results,
                b::gmres::GmresBenchReport::to_text,
            )?
        }
        Plan::GmresThesis(o, cases) => {
            let report = b::gmres::run_thesis(g, &cases, &o)?;
            note(b::gmres::write_thesis_results(&report, &cases, &results)?);
            shown(report, b::gmres::GmresThesisReport::to_text)
        }
        Plan::Mpc(o) => {
            let report = b::mpc::run(g, &o)?;
            out.save(
                report,
                b::mpc::write_results,
                b::mpc::MpcBenchReport::to_text,
            )?
        }
        Plan::Rock4(o) => {
            let report = b::rock4::run(g, &o)?;
            out.save(
                report,
                b::rock4::write_results,
                b::rock4::Rock4BenchReport::to_text,
            )?
        }
        Plan::Lu(o) => {
            let report = b::lu::run(g, &o)?;
            out.save(report, b::lu::write_results, b::lu::LuBenchReport::to_text)?
        }
        Plan::Mg(o) => {
            let report = b::multigrid::run(g, &o)?;
            out.save(
                report,
                b::multigrid::write_results,
                b::multigrid::MgBenchReport::to_text,
            )?
        }
        Plan::Blas1(o) => {
            let report = b::blas1::run(g, skipped.clone(), &o)?;
            if let BenchCommand::Blas1 {
                markdown: Some(path),
                ..
            } = cmd
            {
                note(write_blas1(&report, path, &results)?);
            }
            shown(report, b::blas1::Blas1Report::to_text)
        }
        Plan::Latency(o) => match g {
            None => nothing("the latency benchmark times the GPU"),
            Some(g) => {
                let report = b::latency::run(g, &o)?;
                out.save(
                    report,
                    b::latency::write_results,
                    b::latency::LatencyReport::to_text,
                )?
            }
        },
        Plan::Solve(o) => match g {
            None => nothing("the solve benchmark times the GPU"),
            Some(g) => {
                let report = b::solve::run(g, &o)?;
                out.save(
                    report,
                    b::solve::write_results,
                    b::solve::SolveBenchReport::to_text,
                )?
            }
        },
        Plan::Redraw => unreachable!("bench redraw returns above"),
        Plan::ScaleModel(_) => unreachable!("bench scale-model returns above"),
    };
    Ok(Box::new(WithProvenance {
        report,
        provenance: results.provenance().clone(),
    }))
}

/// A benchmark's report whose JSON also names when, from what and where it was measured
/// (`"provenance"`, as in its results files: [`ferrocuda_bench::output`]).
struct WithProvenance {
    report: Box<dyn Report>,
    provenance: ferrocuda_bench::output::Provenance,
}

impl Report for WithProvenance {
    fn text(&self) -> String {
        self.report.text()
    }

    /// The report's object with `"provenance"` as its last key (the other keys keep
    /// their order).
    fn json(&self) -> serde_json::Result<String> {
        let json = self.report.json()?;
        let trimmed = json.trim_end();
        let Some(body) = trimmed
            .strip_suffix('}')
            .filter(|_| trimmed.starts_with('{'))
        else {
            return Ok(json);
        };
        let body = body.trim_end();
        let provenance = serde_json::to_string_pretty(&self.provenance)?.replace('\n', "\n  ");
        let comma = if body == "{" { "" } else { "," };
        Ok(format!("{body}{comma}\n  \"provenance\": {provenance}\n}}"))
    }

    fn status(&self) -> crate::report::Status {
        self.report.status()
    }
}

/// What `bench redraw` did.
#[derive(Debug, Serialize)]
struct Redrawn {
    /// Chart data rebuilt from results files (`--from-results`).
    data_rebuilt: Vec<PathBuf>,
    /// Images drawn from their data.
    drawn: Vec<PathBuf>,
    /// Images left as they are (no data file), with the reason.
    kept: Vec<(PathBuf, String)>,
    /// Results files without provenance, now marked as such.
    marked: Vec<PathBuf>,
}

impl Redrawn {
    fn to_text(&self) -> String {
        let mut t = String::new();
        for p in &self.data_rebuilt {
            t.push_str(&format!("data rebuilt: {}\n", p.display()));
        }
        for p in &self.drawn {
            t.push_str(&format!("drawn: {}\n", p.display()));
        }
        for (p, why) in &self.kept {
            t.push_str(&format!("kept as it is: {} ({why})\n", p.display()));
        }
        for p in &self.marked {
            t.push_str(&format!(
                "marked: {} (no provenance: measured before results recorded it)\n",
                p.display()
            ));
        }
        t.push_str(&format!(
            "{} charts drawn, {} kept as they are\n",
            self.drawn.len(),
            self.kept.len()
        ));
        t
    }
}

/// `bench redraw`: no GPU is opened.
fn redraw(dir: &Path, from_results: bool) -> Result<Box<dyn Report>> {
    use ferrocuda_bench::redraw;
    let rebuilt = if from_results {
        redraw::charts_from_results(dir)?
    } else {
        redraw::Rebuilt::default()
    };
    let drawn = redraw::redraw_dir(dir)?;
    let kept = if from_results {
        rebuilt.kept
    } else {
        redraw::charts_without_data(dir)?
    };
    let marked = redraw::mark_unknown_provenance(dir)?;
    Ok(shown(
        Redrawn {
            data_rebuilt: rebuilt.data,
            drawn,
            kept,
            marked,
        },
        Redrawn::to_text,
    ))
}

/// `bench scale-model`: no GPU is opened; its files are CPU-only results
/// ([`ResultsDir`]), their inputs' provenance inside.
fn scale_model(o: &ferrocuda_bench::scale_model::ScaleModelOptions) -> Result<Box<dyn Report>> {
    use ferrocuda_bench::scale_model as sm;
    let report = sm::run(o)?;
    let out = ResultsDir::new(&o.results_dir, false);
    eprintln!("[bench scale-model] {}", sm::write_results(&report, &out)?);
    Ok(Box::new(WithProvenance {
        report: shown(report, sm::ScaleModelReport::to_text),
        provenance: out.provenance().clone(),
    }))
}

/// `--markdown FILE` of `bench blas1`, under the rule of [`ResultsDir`].
fn write_blas1(
    report: &ferrocuda_bench::blas1::Blas1Report,
    path: &Path,
    out: &ResultsDir,
) -> Result<Saved> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| invalid(format!("--markdown {}: not a file name", path.display())))?;
    out.save(&name, |out| {
        Ok(vec![out.write_markdown(&name, &report.to_markdown())?])
    })
}

/// The benchmark's name as typed (`lu`, `spmv-thesis`).
fn bench_name(cmd: &BenchCommand) -> &'static str {
    match cmd {
        BenchCommand::Scaling { .. } => "scaling",
        BenchCommand::Rng { .. } => "rng",
        BenchCommand::Spmv { .. } => "spmv",
        BenchCommand::SpmvThesis { .. } => "spmv-thesis",
        BenchCommand::Gmres { .. } => "gmres",
        BenchCommand::Mpc { .. } => "mpc",
        BenchCommand::Rock4 { .. } => "rock4",
        BenchCommand::Lu { .. } => "lu",
        BenchCommand::Mg { .. } => "mg",
        BenchCommand::Blas1 { .. } => "blas1",
        BenchCommand::Latency { .. } => "latency",
        BenchCommand::Solve { .. } => "solve",
        BenchCommand::ScaleModel { .. } => "scale-model",
        BenchCommand::Redraw { .. } => "redraw",
    }
}
