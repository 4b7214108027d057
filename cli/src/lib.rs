//! The `ferrocuda` command line: parse the arguments, call the library (or a
//! benchmark), print the report. Every command returns a [`report::Report`], printed by
//! one function as text or JSON; the exit status follows docs/reliability.md (0 done,
//! 1 error, 2 a singular matrix, 3 not converged).
// The argument docs are clap's --help texts, which name placeholders as `<results-dir>`.
#![allow(rustdoc::invalid_html_tags)]

pub mod bench;
pub mod choices;
pub mod device;
pub mod files;
pub mod info;
pub mod lu;
pub mod mg;
pub mod mpc;
pub mod numbers;
pub mod probe;
pub mod report;
pub mod rng;
pub mod rock4;
pub mod solve;
pub mod spmv;
pub mod tour;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use ferrocuda::Result;

use device::{DeviceArg, DeviceChoice, Where, parse_device};
use report::{Format, Report, Status, shown};

/// ferrocuda: numerics on NVIDIA GPUs in Rust, with CPU twins and speedup benchmarks.
#[derive(Debug, Parser)]
#[command(name = "ferrocuda", version, about, long_about = None)]
pub struct Cli {
    /// What to run; without a command, the tour.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The GPU (ordinal N, or gpu:N) for the subcommand; its own --device may say cpu,
    /// gpu or N after it.
    #[arg(long, value_name = "N", value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
    /// No progress bars (they are drawn on stderr only where it is a terminal, and never
    /// with --json) and no progress lines; `solve` prints no summary either. Warnings
    /// and errors still go to stderr.
    #[arg(long, global = true)]
    pub quiet: bool,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// A small problem of every module on the CPU and the GPU, with speedups (the default).
    Tour {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The GPU: an ordinal N (gpu:N), gpu (0), or cpu (skip the GPU part)
        /// [default: 0 where present].
        #[arg(long, value_name = "N", value_parser = parse_device)]
        device: Option<DeviceChoice>,
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
    /// LU with partial pivoting of a Matrix Market matrix, and solves A X = B; a matrix
    /// singular (to working precision) exits with code 2.
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
    Bench(bench::BenchArgs),
}

/// Floating-point precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Single precision.
    F32,
    /// Double precision.
    F64,
}

/// `command` with negative numbers accepted as option values everywhere (so that
/// `--tol -1` reaches the option's own check), recursively.
fn negative_numbers_as_values(command: clap::Command) -> clap::Command {
    command
        .allow_negative_numbers(true)
        .mut_subcommands(negative_numbers_as_values)
}

/// Parses a command line (the first item is the program name).
pub fn parse<I, T>(args: I) -> std::result::Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = negative_numbers_as_values(Cli::command()).try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

impl Cli {
    /// Whether the command prints JSON (`--json`), also for its errors.
    pub fn json(&self) -> bool {
        match &self.command {
            None => false,
            Some(Command::Tour { json, .. } | Command::Info { json }) => *json,
            Some(Command::Probe(a)) => a.json,
            Some(Command::Mg(a)) => a.json,
            Some(Command::Lu(a)) => a.json,
            Some(Command::Spmv(_)) => false,
            Some(Command::Solve(a)) => a.json,
            Some(Command::Rock4(a)) => a.json,
            Some(Command::Mpc(a)) => a.json,
            Some(Command::Rng {
                which: rng::RngCommand::Sfmt(a),
            }) => a.json,
            Some(Command::Bench(b)) => b.which.json(),
        }
    }

    /// Checks every option without reading a file or opening a device (what [`run`]
    /// checks first).
    pub fn validate(&self) -> Result<()> {
        let before = self.device;
        let after = |d: &DeviceArg| Where::resolve(before, d.device, Where::Cpu).map(|_| ());
        match &self.command {
            None | Some(Command::Info { .. }) => Ok(()),
            Some(Command::Tour { device, .. }) => {
                Where::resolve(before, *device, Where::Gpu(0)).map(|_| ())
            }
            Some(Command::Probe(a)) => {
                Where::resolve(before, a.device, Where::Gpu(0))?;
                a.validate()
            }
            Some(Command::Mg(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Lu(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Spmv(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Solve(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Rock4(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Mpc(a)) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Rng {
                which: rng::RngCommand::Sfmt(a),
            }) => after(&a.device).and_then(|()| a.validate()),
            Some(Command::Bench(b)) => {
                Where::resolve(before, b.device, Where::Gpu(0))?;
                b.which.validate()
            }
        }
    }
}

/// Runs the command line; returns the process exit status. Errors go to stderr as one
/// line; with `--json` an error object also goes to stdout, where the report would have
/// gone ([`report::print_error_json`]).
pub fn main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match parse(args.iter().cloned()) {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                // Help and version are answers.
                let _ = e.print();
                return 0;
            }
            // A command line not understood is an error (status 1, as every other
            // error: 2 means a singular matrix).
            let _ = e.print();
            if asks_for_json(&args) {
                report::print_error_json("usage", &report::clap_message(&e), 1, None);
            }
            return 1;
        }
    };
    let json = cli.json();
    ferrocuda_bench::progress::set_enabled(!cli.quiet && !json);
    match run(cli) {
        Ok(status) => status.code(),
        Err(e) => {
            let message = report::user_words(&e.to_string());
            eprintln!("error: {message}");
            let code = report::exit_code(&e);
            if json {
                report::print_error_json(report::error_kind(&e), &message, code, Some(&e));
            }
            code
        }
    }
}

/// Whether a command line that clap did not understand asked for `--json` (before any
/// `--`).
fn asks_for_json(args: &[OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// Executes a parsed command line: the command, then its report on stdout; returns the
/// exit status the report implies.
pub fn run(cli: Cli) -> Result<Status> {
    let before = cli.device;
    let on = |d: &DeviceArg| Where::resolve(before, d.device, Where::Cpu);
    let command = cli.command.unwrap_or(Command::Tour {
        json: false,
        device: None,
    });
    let (report, format): (Box<dyn Report>, Format) = match command {
        Command::Tour { json, device } => {
            let (gpu, skipped) = Where::resolve(before, device, Where::Gpu(0))?.open_optional()?;
            let report = tour::run(gpu.as_ref(), skipped)?;
            (shown(report, tour::TourReport::to_text), Format::of(json))
        }
        Command::Info { json } => (Box::new(info::run()?), Format::of(json)),
        Command::Probe(a) => {
            let report = probe::run(&a, Where::resolve(before, a.device, Where::Gpu(0))?)?;
            (
                shown(report, ferrocuda::probe::ProbeReport::to_text),
                Format::of(a.json),
            )
        }
        Command::Spmv(a) => {
            let line = spmv::run(&a, on(&a.device)?)?;
            (shown(line, String::clone), Format::Text)
        }
        Command::Rng {
            which: rng::RngCommand::Sfmt(a),
        } => {
            rng::run(&a, on(&a.device)?)?;
            (shown((), |_| String::new()), Format::Nothing)
        }
        Command::Lu(a) => (Box::new(lu::run(&a, on(&a.device)?)?), Format::of(a.json)),
        Command::Mpc(a) => (Box::new(mpc::run(&a, on(&a.device)?)?), Format::of(a.json)),
        Command::Rock4(a) => (
            Box::new(rock4::run(&a, on(&a.device)?)?),
            Format::of(a.json),
        ),
        Command::Mg(a) => (
            shown(
                mg::run(&a, on(&a.device)?)?,
                ferrocuda::multigrid::MgReport::to_text,
            ),
            Format::of(a.json),
        ),
        Command::Solve(mut a) => {
            a.quiet |= cli.quiet;
            let format = match (a.json, a.quiet) {
                (true, _) => Format::Json,
                (false, true) => Format::Nothing,
                (false, false) => Format::Text,
            };
            (Box::new(solve::run(&a, on(&a.device)?)?), format)
        }
        Command::Bench(b) => {
            let gpu = Where::resolve(before, b.device, Where::Gpu(0))?;
            (bench::run(&b.which, gpu)?, Format::of(b.which.json()))
        }
    };
    report::print(report.as_ref(), format)?;
    Ok(report.status())
}
