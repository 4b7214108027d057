//! The `ferrocuda` command line: `info`, `probe`, `bench <name>`, `spmv`, `solve`, and the
//! tour (no arguments).

pub mod choices;
pub mod lu;
pub mod mg;
pub mod mpc;
pub mod probe;
pub mod rng;
pub mod rock4;
pub mod solve;
pub mod spmv;
pub mod tour;

/// `print!` that ends quietly when stdout is a closed pipe (`ferrocuda ... | head`)
/// instead of panicking.
macro_rules! say {
    ($($t:tt)*) => { write_stdout(&format!($($t)*)) };
}

/// `println!` through [`say!`].
macro_rules! sayln {
    () => { write_stdout("\n") };
    ($($t:tt)*) => { write_stdout(&format!("{}\n", format_args!($($t)*))) };
}

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde::Serialize;

use ferrocuda::Result;
use ferrocuda::gpu::{self, DeviceInfo, Gpu};
use ferrocuda::kernels;
use ferrocuda::krylov::Preconditioner;
use ferrocuda::report::table;
use ferrocuda_bench::blas1::{self as bench_blas1, Blas1BenchOptions};
use ferrocuda_bench::gmres::Peer;

use choices::{PeerArg, PrecondArg, choice};

/// ferrocuda: numerics on NVIDIA GPUs in Rust, with CPU twins and speedup benchmarks.
#[derive(Debug, Parser)]
#[command(name = "ferrocuda", version, about, long_about = None)]
pub struct Cli {
    /// What to run; without a command, the tour.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// GPU ordinal to use.
    #[arg(long, global = true, default_value_t = 0)]
    pub device: usize,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// A small problem of every module on the CPU and the GPU, with speedups (the default).
    Tour {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Properties of every CUDA device, with the ceilings derived from them.
    Info {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Micro-benchmarks against the hardware's ceilings (peak FLOP/s, bandwidths,
    /// latencies, transfers, divergence); writes <results-dir>/probe.md and plots.
    Probe(probe::ProbeArgs),
    /// Multigrid with block smoothers on seed 003's 3D Poisson problem, CPU or GPU.
    Mg(mg::MgArgs),
    /// LU with partial pivoting of a Matrix Market matrix, and solves A X = B; a singular
    /// matrix exits with code 2.
    Lu(lu::LuArgs),
    /// y = A x for Matrix Market files, in a chosen format, on the CPU or the GPU.
    Spmv(spmv::SpmvArgs),
    /// Solves A x = b (Matrix Market files) by restarted GMRES on the CPU or the GPU.
    Solve(solve::SolveArgs),
    /// ROCK4 on the 2D heat equation or seed 001's reaction-advection-diffusion problem.
    Rock4(rock4::Rock4Args),
    /// The closed-loop MPC of an object swarm (seed 001 §8.5.3), CPU or GPU.
    Mpc(mpc::MpcArgs),
    /// Random numbers: SFMT19937/607 output in the reference order.
    Rng {
        /// Which generator.
        #[command(subcommand)]
        which: rng::RngCommand,
    },
    /// Benchmarks against the hardware's ceilings and the CPU.
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        which: BenchCommand,
    },
}

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Distributed SpMV and GMRES on 1, 2, 4 GPUs of this node: weak and strong scaling
    /// on TRACE-like matrices split by grid blocks; writes <results-dir>/scaling.md.
    /// Needs a GPU per rank (rank counts above the GPUs present are left out).
    Scaling {
        /// Rank (GPU) counts (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        gpus: Vec<usize>,
        /// Cells of one grid block, NXxNTHETAxNR.
        #[arg(long, default_value = "40x80x40")]
        block: String,
        /// Grid blocks per GPU in the weak-scaling runs.
        #[arg(long, default_value_t = 4)]
        blocks_per_gpu: usize,
        /// Grid blocks of the strong-scaling problem.
        #[arg(long, default_value_t = 8)]
        strong_blocks: usize,
        /// Timed repetitions (median).
        #[arg(long, default_value_t = 20)]
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
        #[arg(long, default_value_t = 10)]
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
        #[arg(long, default_value_t = 20)]
        reps: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go (only when a GPU ran).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 000's Tables 6.1-6.11, 7.1/7.2 and 6.10 measured again: every thesis kernel
    /// variant (and ferrocuda's BELL and SBELL) on cases 1-6 in single-precision complex,
    /// seconds for 100 SpMVs; writes <results-dir>/spmv-thesis.md. Needs a GPU.
    SpmvThesis {
        /// Thesis cases to run (comma-separated, 1..6).
        #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6")]
        cases: Vec<usize>,
        /// Timed calls per entry (median).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// GMRES on a TRACE-like case: GPU (SBELL, CGS2 and MGS) against the CPU twin, time
    /// per step against the bandwidth floor; appends to <results-dir>/gmres.md. With
    /// `--thesis`: seed 000's setup (100 steps without restart, c32 and f64) on
    /// `--cases`, written to <results-dir>/gmres-thesis.md.
    Gmres {
        /// Seed 000's setup on every case of `--cases` (ignores `--case`, `--precision`,
        /// `--complex`, `--restart`, `--rtol`, `--max-iter`, `--precond`).
        #[arg(long)]
        thesis: bool,
        /// Thesis cases for `--thesis` (comma-separated, 1..6).
        #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5,6")]
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
        #[arg(long, default_value_t = 30)]
        restart: usize,
        /// Relative tolerance [default: 1e-8 in f64, 1e-5 in f32].
        #[arg(long)]
        rtol: Option<f64>,
        /// Most Arnoldi steps.
        #[arg(long, default_value_t = 1000)]
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
        /// Where the Markdown results go (only when a GPU ran).
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 001's Tables 8.3 and 8.4 again: swarm-MPC cost, constraint and gradients
    /// (thesis forward differences and exact) on all CPU cores and the GPU, large swarms,
    /// ten MPC steps, the closed loop; writes <results-dir>/mpc.md, mpc.png and
    /// mpc-trajectories.png.
    Mpc {
        /// Timed repetitions per entry (median).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Closed-loop steps of a 32-object swarm (§8.5.3 ran 2000; 0: skip the closed loop).
        #[arg(long, default_value_t = 600)]
        loop_steps: usize,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Seed 001's Table 6.4 again: ROCK4 on the thesis problem to t = 1 for N x N grids,
    /// one core and all cores, beside the thesis's figures; writes <results-dir>/rock4.md,
    /// rock4.png and solution snapshots (rock4-thesis.png, rock4-heat.png).
    Rock4 {
        /// Grid sizes N (comma-separated) [default: the thesis's 16, 32, .., 256].
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<usize>,
        /// rtol = atol.
        #[arg(long, default_value_t = 1e-6)]
        tol: f64,
        /// Timed runs per entry (median).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// Dense LU: seed 004's Tables 3.1, 3.2, 4.1, then the pivoting LU against cuSOLVER
    /// getrf and the GEMM against cuBLAS in the same run, the CPU twin beside; writes
    /// <results-dir>/lu.md and lu.png.
    Lu {
        /// Orders of the pivoting-LU comparison (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "4096,8192,16384,32768")]
        sizes: Vec<usize>,
        /// Timed repetitions per measurement (median).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Skip seed 004's tables.
        #[arg(long)]
        no_thesis: bool,
        /// Skip f32.
        #[arg(long)]
        no_f32: bool,
        /// Largest order the CPU twin runs.
        #[arg(long, default_value_t = 8192)]
        cpu_max_n: usize,
        /// Panel width of the GPU LU.
        #[arg(long, default_value_t = 384)]
        block: usize,
        /// GPU LU without look-ahead (panels on the main stream).
        #[arg(long)]
        no_lookahead: bool,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results and the chart go.
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
        #[arg(long, default_value_t = 10)]
        reps: usize,
        /// Skip the CPU twin where a GPU runs.
        #[arg(long)]
        no_cpu: bool,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Where the Markdown results and the plots go.
        #[arg(long, default_value = "docs/results")]
        results_dir: PathBuf,
    },
    /// axpy, dot and nrm2 (f64, c64) against the device copy bandwidth and the CPU.
    Blas1 {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Vector length.
        #[arg(long, default_value_t = 1 << 26)]
        n: usize,
        /// Timed repetitions per measurement.
        #[arg(long, default_value_t = 30)]
        reps: usize,
        /// Also write the report as Markdown to this file (e.g. docs/results/blas1.md).
        #[arg(long)]
        markdown: Option<PathBuf>,
    },
}

/// Floating-point precision of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Single precision.
    F32,
    /// Double precision.
    F64,
}

/// Opens the GPU, or returns why there is none (other errors are real errors).
fn open_gpu(device: usize) -> Result<(Option<Gpu>, Option<String>)> {
    match gpu::open(device) {
        Ok(g) => Ok((Some(g), None)),
        Err(e) if e.is_no_device() => Ok((None, Some(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            // A singular matrix is an answer about the input, not a failure of the tool.
            if matches!(e, ferrocuda::Error::Singular { .. }) {
                2
            } else {
                1
            }
        }
    }
}

/// Whether a Matrix Market file's banner says `complex` (errors name `op` and the file).
fn is_complex(op: &'static str, path: &std::path::Path) -> Result<bool> {
    use std::io::BufRead;
    let err = |e: std::io::Error| ferrocuda::Error::InvalidArgument {
        op,
        reason: format!("{}: {e}", path.display()),
    };
    let mut banner = String::new();
    std::io::BufReader::new(std::fs::File::open(path).map_err(err)?)
        .read_line(&mut banner)
        .map_err(err)?;
    Ok(banner
        .to_ascii_lowercase()
        .split_whitespace()
        .any(|w| w == "complex"))
}

/// Writes `text` to stdout; a closed pipe is not an error (the reader has what it
/// wanted), any other failure is reported on stderr.
fn write_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: writing to stdout: {e}");
    }
}

fn print_json(value: &impl Serialize) -> Result<()> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| ferrocuda::Error::InvalidArgument {
            op: "json output",
            reason: e.to_string(),
        })?;
    sayln!("{text}");
    Ok(())
}

/// Executes a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command.unwrap_or(Command::Tour { json: false }) {
        Command::Tour { json } => {
            let (gpu, skipped) = open_gpu(cli.device)?;
            let report = crate::tour::run(gpu.as_ref(), skipped)?;
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Info { json } => info(json),
        Command::Probe(args) => {
            let report = probe::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Spmv(args) => {
            sayln!("{}", spmv::run(&args, cli.device)?);
            Ok(())
        }
        Command::Rng {
            which: rng::RngCommand::Sfmt(args),
        } => rng::run(&args, cli.device),
        Command::Bench {
            which:
                BenchCommand::Rng {
                    large_log2,
                    reps,
                    no_cpu,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::rng::{RngBenchOptions, run};
            if !(20..=32).contains(&large_log2) || reps == 0 {
                return Err(ferrocuda::Error::InvalidArgument {
                    op: "bench rng",
                    reason: format!(
                        "--large-log2 {large_log2} (20..=32) and --reps {reps} (at least 1)"
                    ),
                });
            }
            let (gpu, skipped) = open_gpu(cli.device)?;
            let Some(gpu) = gpu else {
                sayln!(
                    "no GPU: {} (the RNG benchmark compares GPU generators; nothing to run)",
                    skipped.unwrap_or_default()
                );
                return Ok(());
            };
            let opts = RngBenchOptions {
                large_log2,
                reps,
                cpu: !no_cpu,
                ..Default::default()
            };
            let report = run(&gpu, &opts)?;
            let path = results_dir.join("rng.md");
            write_file(&path, &report.to_markdown())?;
            eprintln!("[bench rng] wrote {}", path.display());
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Lu(args) => {
            let report = lu::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                sayln!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Lu {
                    sizes,
                    reps,
                    no_thesis,
                    no_f32,
                    cpu_max_n,
                    block,
                    no_lookahead,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::lu::{LuBenchOptions, run};
            let opts = LuBenchOptions {
                sizes,
                reps,
                thesis: !no_thesis,
                cpu_max_n,
                block,
                f32: !no_f32,
                lookahead: !no_lookahead,
            };
            let (gpu, skipped) = open_gpu(cli.device)?;
            if let Some(why) = skipped {
                eprintln!("[bench lu] GPU part skipped: {why}");
            }
            let report = run(gpu.as_ref(), &opts)?;
            let png = results_dir.join("lu.png");
            report.chart().write_png(&png, 1280, 640)?;
            write_file(
                &results_dir.join("lu.md"),
                &report.to_markdown(Some("lu.png")),
            )?;
            eprintln!("[bench lu] wrote {} and lu.md", png.display());
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Mg {
                    quick,
                    reps,
                    no_cpu,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::multigrid::{MgBenchOptions, run};
            if reps == 0 {
                return Err(ferrocuda::Error::InvalidArgument {
                    op: "bench mg",
                    reason: "--reps must be at least 1 (got 0)".into(),
                });
            }
            let opts = MgBenchOptions {
                quick,
                reps,
                cpu: !no_cpu,
            };
            let (gpu, skipped) = open_gpu(cli.device)?;
            if let Some(why) = skipped {
                eprintln!("[bench mg] GPU part skipped: {why}");
            }
            let report = run(gpu.as_ref(), &opts)?;
            let charts = report.charts();
            let pngs: Vec<(String, String)> =
                charts.iter().map(|c| (c.0.clone(), c.1.clone())).collect();
            let md = results_dir.join("multigrid.md");
            write_file(&md, &report.to_markdown(&pngs))?;
            for (file, _, chart) in &charts {
                chart.write_png(&results_dir.join(file), 1024, 576)?;
            }
            eprintln!(
                "[bench mg] wrote {} and {} plots",
                md.display(),
                charts.len()
            );
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Mpc(args) => {
            let report = mpc::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                sayln!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Mpc {
                    reps,
                    loop_steps,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::mpc::{MpcBenchOptions, run, trajectory_chart};
            let opts = MpcBenchOptions {
                reps,
                loop_steps,
                ..Default::default()
            };
            let (gpu, skipped) = open_gpu(cli.device)?;
            if let Some(why) = skipped {
                eprintln!("[bench mpc] GPU part skipped: {why}");
            }
            let report = run(gpu.as_ref(), &opts)?;
            let png = results_dir.join("mpc.png");
            report.chart().write_png(&png, 1280, 640)?;
            let mut plots = ("mpc.png", "");
            if let Some(r) = &report.closed_loop {
                let model = ferrocuda::mpc::SwarmModel::new(r.objects, r.horizon)?;
                let mopts = ferrocuda::mpc::optimize::MpcOptions::with_steps(r.steps);
                trajectory_chart(&model, r, &mopts).write_png(
                    &results_dir.join("mpc-trajectories.png"),
                    1280,
                    640,
                )?;
                plots.1 = "mpc-trajectories.png";
            }
            write_file(
                &results_dir.join("mpc.md"),
                &report.to_markdown(Some(plots)),
            )?;
            eprintln!("[bench mpc] wrote {} and mpc.md", png.display());
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Rock4(args) => {
            let report = rock4::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                sayln!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Mg(args) => {
            let report = mg::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Solve(args) => {
            let report = solve::run(&args, cli.device)?;
            if args.json {
                print_json(&report)
            } else {
                if !args.quiet {
                    sayln!("{}", report.to_text());
                }
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Spmv {
                    case,
                    precision,
                    complex,
                    reps,
                    json,
                    results_dir,
                },
        } => {
            let mut opts = ferrocuda_bench::spmv::SpmvBenchOptions::default();
            opts.case = ferrocuda_bench::spmv::SpmvCase::parse(&case)?;
            opts.double = precision == Precision::F64;
            opts.complex = complex;
            opts.reps = reps;
            let (gpu, skipped) = open_gpu(cli.device)?;
            let report = ferrocuda_bench::spmv::run(gpu.as_ref(), skipped, &opts)?;
            if gpu.is_some() {
                let path = ferrocuda_bench::spmv::write_results(&report, &results_dir)?;
                eprintln!("[bench spmv] wrote {}", path.display());
            } else {
                eprintln!("[bench spmv] no GPU: results not written");
            }
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::SpmvThesis {
                    cases,
                    reps,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::spmv_thesis::{ThesisBenchOptions, run};
            if let Some(bad) = cases.iter().find(|c| !(1..=6).contains(*c)) {
                return Err(ferrocuda::Error::InvalidArgument {
                    op: "bench spmv-thesis",
                    reason: format!("case {bad} does not exist: use 1..6"),
                });
            }
            let (gpu, skipped) = open_gpu(cli.device)?;
            let Some(gpu) = gpu else {
                sayln!(
                    "no GPU: {} (the thesis tables compare GPU kernels; nothing to run)",
                    skipped.unwrap_or_default()
                );
                return Ok(());
            };
            let mut opts = ThesisBenchOptions::default();
            opts.cases = cases;
            opts.reps = reps;
            let report = run(&gpu, &opts)?;
            let path = results_dir.join("spmv-thesis.md");
            write_file(&path, &report.to_markdown())?;
            eprintln!("[bench spmv-thesis] wrote {}", path.display());
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Scaling {
                    gpus,
                    block,
                    blocks_per_gpu,
                    strong_blocks,
                    reps,
                    transport,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::scaling::{ScalingOptions, run};
            let transports = transport
                .iter()
                .map(|t| t.parse::<ferrocuda::distributed::Transport>())
                .collect::<ferrocuda::Result<Vec<_>>>()?;
            let dims: Vec<usize> = block
                .split('x')
                .map(|v| v.trim().parse::<usize>())
                .collect::<std::result::Result<_, _>>()
                .ok()
                .filter(|d: &Vec<usize>| d.len() == 3 && d.iter().all(|&v| v > 0))
                .ok_or_else(|| ferrocuda::Error::InvalidArgument {
                    op: "bench scaling",
                    reason: format!("--block {block:?}: expected NXxNTHETAxNR with positive sizes"),
                })?;
            if blocks_per_gpu == 0 || strong_blocks == 0 || gpus.contains(&0) {
                return Err(ferrocuda::Error::InvalidArgument {
                    op: "bench scaling",
                    reason: "--gpus, --blocks-per-gpu and --strong-blocks must be positive".into(),
                });
            }
            let opts = ScalingOptions {
                ranks: gpus,
                block: (dims[0], dims[1], dims[2]),
                blocks_per_rank: blocks_per_gpu,
                strong_blocks,
                reps,
                transports,
                ..Default::default()
            };
            let report = run(&opts)?;
            let path = results_dir.join("scaling.md");
            write_file(&path, &report.to_markdown())?;
            eprintln!("[bench scaling] wrote {}", path.display());
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Rock4 {
                    sizes,
                    tol,
                    reps,
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::rock4::{Rock4BenchOptions, run};
            let mut opts = Rock4BenchOptions {
                tol,
                reps,
                ..Default::default()
            };
            if !sizes.is_empty() {
                opts.sizes = sizes;
            }
            let (gpu, skipped) = open_gpu(cli.device)?;
            if let Some(why) = skipped {
                eprintln!("[bench rock4] GPU part skipped: {why}");
            }
            let report = run(gpu.as_ref(), &opts)?;
            report.write_files(&results_dir)?;
            eprintln!(
                "[bench rock4] wrote rock4.md, rock4.png and the snapshots into {}",
                results_dir.display()
            );
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Gmres {
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
                    json,
                    results_dir,
                },
        } => {
            use ferrocuda_bench::gmres::{GmresBenchOptions, run};
            let opts = GmresBenchOptions {
                case: ferrocuda_bench::spmv::SpmvCase::parse(&case)?,
                double: precision == Precision::F64,
                complex,
                gmres: ferrocuda::krylov::GmresOptions::default()
                    .restart(restart)
                    .rtol(rtol.unwrap_or(if precision == Precision::F64 {
                        1e-8
                    } else {
                        1e-5
                    }))
                    .max_iter(max_iter),
                precond,
                cpu: !no_cpu,
                peers: if no_peers { Vec::new() } else { peers },
            };
            let (gpu, _) = open_gpu(cli.device)?;
            if thesis {
                let report = ferrocuda_bench::gmres::run_thesis(gpu.as_ref(), &cases, &opts)?;
                if gpu.is_some() {
                    // Runs of a subset of the cases get their own file.
                    let name = if cases == [1, 2, 3, 4, 5, 6] {
                        "gmres-thesis.md".to_string()
                    } else {
                        let list: Vec<String> = cases.iter().map(|c| c.to_string()).collect();
                        format!("gmres-thesis-cases{}.md", list.join("-"))
                    };
                    let path = results_dir.join(name);
                    write_file(&path, &report.to_markdown())?;
                    eprintln!("[bench gmres] wrote {}", path.display());
                }
                return if json {
                    print_json(&report)
                } else {
                    say!("{}", report.to_text());
                    Ok(())
                };
            }
            let report = run(gpu.as_ref(), &opts)?;
            if gpu.is_some() {
                let path = results_dir.join("gmres.md");
                let mut text = std::fs::read_to_string(&path).unwrap_or_else(|_| {
                    "# GMRES benchmark\n\nWritten by `ferrocuda bench gmres`; do not edit by hand. One section per run.\n\n".into()
                });
                text.push_str(&report.to_markdown());
                if let Some(chart) = report.convergence_chart() {
                    let png = results_dir.join(report.plot_name());
                    chart.write_png(&png, 1024, 576)?;
                    eprintln!("[bench gmres] wrote {}", png.display());
                }
                write_file(&path, &text)?;
                eprintln!("[bench gmres] wrote {}", path.display());
            }
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
        Command::Bench {
            which:
                BenchCommand::Blas1 {
                    json,
                    n,
                    reps,
                    markdown,
                },
        } => {
            let (gpu, skipped) = open_gpu(cli.device)?;
            let mut opts = Blas1BenchOptions::default();
            opts.n = n;
            opts.reps = reps;
            let report = bench_blas1::run(gpu.as_ref(), skipped, &opts)?;
            if let Some(path) = markdown {
                write_file(&path, &report.to_markdown())?;
                eprintln!("[bench blas1] wrote {}", path.display());
            }
            if json {
                print_json(&report)
            } else {
                say!("{}", report.to_text());
                Ok(())
            }
        }
    }
}

fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    let io = |e: std::io::Error| ferrocuda::Error::InvalidArgument {
        op: "writing results",
        reason: format!("{}: {e}", path.display()),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

/// `ferrocuda info --json` output.
#[derive(Debug, Serialize)]
struct InfoReport {
    devices: Vec<DeviceInfo>,
    ceilings: Vec<ferrocuda::probe::Ceilings>,
    no_device: Option<String>,
    driver_cuda_version: Option<i32>,
    cuda_bindings_version: &'static str,
    ptx_arch: &'static str,
    kernels: usize,
}

fn info(json: bool) -> Result<()> {
    let mut report = InfoReport {
        devices: Vec::new(),
        ceilings: Vec::new(),
        no_device: None,
        driver_cuda_version: gpu::driver_cuda_version().ok(),
        cuda_bindings_version: gpu::CUDA_BINDINGS_VERSION,
        ptx_arch: kernels::PTX_ARCH,
        kernels: kernels::entries().len(),
    };
    match gpu::device_count() {
        Ok(0) => {
            report.no_device = Some("no CUDA device found: the driver reports zero devices".into())
        }
        Ok(count) => {
            for ordinal in 0..count {
                let d = gpu::open(ordinal)?.info()?;
                report
                    .ceilings
                    .push(ferrocuda::probe::Ceilings::from_info(&d));
                report.devices.push(d);
            }
        }
        Err(e) => report.no_device = Some(e.to_string()),
    }
    if json {
        return print_json(&report);
    }
    if let Some(why) = &report.no_device {
        sayln!("{why}");
    }
    sayln!(
        "PTX: {} kernels for {} (JIT-compiled by the driver for newer GPUs); CUDA bindings {}",
        report.kernels,
        report.ptx_arch,
        report.cuda_bindings_version
    );
    if let Some(v) = report.driver_cuda_version {
        sayln!("driver CUDA version: {}.{}", v / 1000, (v % 1000) / 10);
    }
    for (d, c) in report.devices.iter().zip(&report.ceilings) {
        sayln!("\ndevice {}: {}", d.ordinal, d.name);
        let kib = |b: i32| format!("{} KiB", b / 1024);
        let mhz = |k: Option<i32>| k.map_or("not reported".into(), |k| format!("{} MHz", k / 1000));
        let rows = vec![
            vec![
                "compute capability".into(),
                format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            ],
            vec!["multiprocessors".into(), d.multiprocessors.to_string()],
            vec!["SM clock (peak)".into(), mhz(d.sm_clock_khz)],
            vec!["memory clock (peak)".into(), mhz(d.memory_clock_khz)],
            vec![
                "memory bus width".into(),
                format!("{} bit", d.memory_bus_bits),
            ],
            vec![
                "global memory".into(),
                format!(
                    "{:.1} GiB",
                    d.total_memory_bytes as f64 / (1u64 << 30) as f64
                ),
            ],
            vec![
                "DRAM bandwidth (clock x 2 x bus, theoretical)".into(),
                d.theoretical_dram_bandwidth()
                    .map_or("-".into(), |b| format!("{:.0} GB/s", b / 1e9)),
            ],
            vec!["L2 cache".into(), kib(d.l2_cache_bytes)],
            vec![
                "shared memory per block / opt-in".into(),
                format!(
                    "{} / {}",
                    kib(d.shared_memory_per_block),
                    kib(d.shared_memory_per_block_optin)
                ),
            ],
            vec![
                "shared memory per SM".into(),
                kib(d.shared_memory_per_multiprocessor),
            ],
            vec![
                "registers per block / per SM".into(),
                format!(
                    "{} / {}",
                    d.registers_per_block, d.registers_per_multiprocessor
                ),
            ],
            vec![
                "max threads per block / per SM".into(),
                format!(
                    "{} / {}",
                    d.max_threads_per_block, d.max_threads_per_multiprocessor
                ),
            ],
            vec![
                "max blocks per SM".into(),
                d.max_blocks_per_multiprocessor.to_string(),
            ],
            vec!["warp size".into(), d.warp_size.to_string()],
            vec!["async copy engines".into(), d.async_engines.to_string()],
            vec![
                "ECC".into(),
                if d.ecc_enabled { "on" } else { "off" }.into(),
            ],
            vec!["PCI bus id".into(), d.pci_bus_id.clone()],
        ];
        sayln!("{}", table(&["property", "value"], &rows));
        sayln!(
            "\nceilings (table of per-SM rates per compute capability: ferrocuda::probe::ceilings)\n{}",
            table(&["ceiling", "value"], &c.rows())
        );
    }
    Ok(())
}
