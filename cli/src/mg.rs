//! `ferrocuda mg --n N --base B [--smoother abl|sbl|sbl-racy|jacobi|rbgs] [--cycle v|w|fmg]
//! [--cycles C] [--nu1 5] [--nu2 5] [--inner B] [--block S] [--omega W]
//! [--precision f32|f64] [--device cpu|gpu|N] [--until-discretisation] [--json]`:
//! multigrid on the 3D Poisson test problem of seed 003 (`f = 3 pi^2 sin sin sin`,
//! exact `u = sin sin sin`), on `n = b^k + 1` points per dimension.
//!
//! ```sh
//! ferrocuda mg --n 1025 --base 2 --smoother sbl --precision f32 --device gpu --json
//! ```
//!
//! The JSON is the [`MgReport`]: per-cycle arrays `residual_norm`, `error_norm`,
//! `algebraic_error_norm`, `cycle_seconds`, and `cycles_to_discretisation`,
//! `seconds_to_discretisation`, `convergence_factor`, `setup_seconds`, `solve_seconds`.

use ferrocuda::multigrid::{Cycle, MgOptions, MgReport, Smoother, Stop, cpu, gpu};
use ferrocuda::{Error, Result};
use ferrocuda_bench::progress::{self, Cleared};

use crate::Precision;
use crate::choices::{CycleArg, SmootherArg, choice};
use crate::device::{DeviceArg, Where};
use crate::numbers::count;

/// Arguments of `ferrocuda mg`.
#[derive(Debug, Clone, clap::Args)]
pub struct MgArgs {
    /// Points per dimension, b^k + 1 (boundary included).
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub n: usize,
    /// The base b of the grids (b >= 2).
    #[arg(long, default_value_t = 2, value_parser = count, allow_hyphen_values = true)]
    pub base: usize,
    /// The smoother.
    #[arg(long, value_parser = choice::<SmootherArg, Smoother>(), default_value = "sbl")]
    pub smoother: Smoother,
    /// The cycle (fmg: one full-multigrid pass, then V-cycles).
    #[arg(long, value_parser = choice::<CycleArg, Cycle>(), default_value = "v")]
    pub cycle: Cycle,
    /// Cycles on the finest grid (at most, with --until-discretisation).
    #[arg(long, default_value_t = 10, value_parser = count, allow_hyphen_values = true)]
    pub cycles: usize,
    /// Smoothing steps before the coarse-grid correction.
    #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
    pub nu1: usize,
    /// Smoothing steps after it.
    #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
    pub nu2: usize,
    /// Gauss-Seidel sweeps inside a block per block update (B).
    #[arg(long, default_value_t = 10, value_parser = count, allow_hyphen_values = true)]
    pub inner: usize,
    /// Block edge [default: the base].
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub block: Option<usize>,
    /// Damping of the smoother's update [default: 6/7 for jacobi, else 1].
    #[arg(long, allow_hyphen_values = true)]
    pub omega: Option<f64>,
    /// Floating-point precision.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// Where to compute.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Stop after the first cycle that reaches the discretisation error.
    #[arg(long)]
    pub until_discretisation: bool,
    /// Print JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

impl MgArgs {
    /// The solver options.
    pub fn options(&self) -> MgOptions {
        let mut o = MgOptions::new(self.n, self.base)
            .smoother(self.smoother)
            .cycle(self.cycle)
            .smoothing(self.nu1, self.nu2)
            .inner(self.inner)
            .cycles(self.cycles)
            .stop(if self.until_discretisation {
                Stop::Discretisation
            } else {
                Stop::AllCycles
            });
        o.block = self.block;
        o.omega = self.omega;
        o
    }
}

impl MgArgs {
    /// Checks the options alone: at least one cycle (the report's rates are per cycle),
    /// then the solver's own checks.
    pub fn validate(&self) -> Result<()> {
        if self.cycles == 0 {
            return Err(Error::InvalidArgument {
                op: "mg",
                reason: "--cycles must be at least 1 (got 0)".into(),
            });
        }
        self.options().validate().map(|_| ())
    }
}

/// Runs `ferrocuda mg` (on the GPU with `--device gpu|N`).
pub fn run(args: &MgArgs, on: Where) -> Result<MgReport> {
    args.validate()?;
    let bar = Cleared(progress::bar(args.cycles as u64, "mg"));
    bar.set_message(format!("{}^3, cycles", args.n));
    let opts = args.options().progress(progress::observer(&bar));
    let f64 = args.precision == Precision::F64;
    let report = match on.open()? {
        None => {
            // What this process may really allocate (ulimit -v, cgroup), not only the
            // machine's available memory, so that a refusal comes before an abort.
            if let Some(limit) = ferrocuda::alloc::host_limit() {
                let elem = if f64 { 8 } else { 4 };
                let avail = usize::try_from(limit.bytes).unwrap_or(usize::MAX);
                opts.validate()?.check_fits(
                    elem,
                    avail,
                    &format!("host memory ({})", limit.source),
                )?;
            }
            if f64 {
                cpu::Solver::<f64>::new(&opts)?.solve()?
            } else {
                cpu::Solver::<f32>::new(&opts)?.solve()?
            }
        }
        Some(g) => {
            if f64 {
                gpu::Solver::<f64>::new(&g, &opts)?.solve()?
            } else {
                gpu::Solver::<f32>::new(&g, &opts)?.solve()?
            }
        }
    };
    drop(bar);
    if report.cycles_to_discretisation.is_none() {
        eprintln!(
            "warning: the discretisation error {:.3e} was not reached in {} cycles",
            report.discretisation_error,
            report.residual_norm.len()
        );
    }
    Ok(report)
}
