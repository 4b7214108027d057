//! `ferrocuda rock4 --problem heat|jahn --n N --t-end T [--rtol R] [--atol A] [--nu NU]
//! [--advection central|forward] [--threads all|single] [--device cpu|gpu|N]
//! [--controller auto|host|device] [--out y.mtx]
//! [--json]`:
//! integrates one of the built-in problems with ROCK4 and reports the steps taken.
//!
//! - `heat`: `u_t = nu Laplace(u)` on the unit square, `n x n` interior points, Dirichlet
//!   zero, `u0 = sin(pi x) sin(pi y)`; the report has the largest error against the exact
//!   semi-discrete solution.
//! - `jahn`: seed 001's reaction-advection-diffusion problem (5.1), spacing 0.01,
//!   diffusion 0.1, `y(., 0) = 1` (`--nu` does not apply).
//!
//! ```sh
//! ferrocuda rock4 --problem heat --n 255 --t-end 0.1 --rtol 1e-8 --json
//! ```
//!
//! `--out` writes the final solution as a Matrix Market array (`n^2 x 1`, row by row of
//! the grid); it appears only on success. An integration that fails (the step size
//! falls below the smallest allowed) is an error (exit status 1); one that uses up
//! `--max-steps` before `t_end` exits with status 3 and writes no `--out`.

use ferrocuda_bench::progress::{self, Cleared};
use std::path::PathBuf;
use std::time::Instant;

use clap::ValueEnum;
use serde::Serialize;

use ferrocuda::gpu::Gpu;
use ferrocuda::rock4::problems::{Advection, Heat2d, ReactionAdvectionDiffusion};
use ferrocuda::rock4::{
    Controller, DeviceRhs, Rhs, Rock4Options, Rock4Report, StopReason, Threads, cpu,
};
use ferrocuda::{Error, Result};

use crate::device::{DeviceArg, Where};
use crate::numbers::count;
use crate::report::{Report, Status};

/// Which problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rock4Problem {
    /// The 2D heat equation with its exact semi-discrete solution.
    Heat,
    /// Seed 001's reaction-advection-diffusion problem (5.1).
    Jahn,
}

/// Advection differences of the `jahn` problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rock4Advection {
    /// Central differences (5.2).
    Central,
    /// The thesis code's one-sided differences.
    Forward,
}

/// Where the GPU path decides the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rock4Controller {
    /// The device for the built-in problems (the default).
    Auto,
    /// The host: one read back per step.
    Host,
    /// The device: the persistent kernel, one host wait per many steps.
    Device,
}

/// CPU threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rock4Threads {
    /// All cores (rayon).
    All,
    /// One thread (the thesis's CPU column).
    Single,
}

/// Arguments of `ferrocuda rock4`.
#[derive(Debug, Clone, clap::Args)]
pub struct Rock4Args {
    /// The problem.
    #[arg(long, value_enum)]
    pub problem: Rock4Problem,
    /// Interior grid points per direction (the system has n^2 unknowns).
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub n: usize,
    /// Final time (the integration starts at 0).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub t_end: f64,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-6, allow_hyphen_values = true)]
    pub rtol: f64,
    /// Absolute tolerance [default: the relative tolerance].
    #[arg(long, allow_hyphen_values = true)]
    pub atol: Option<f64>,
    /// Diffusion coefficient of `heat`.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub nu: f64,
    /// Advection differences of `jahn`.
    #[arg(long, value_enum, default_value_t = Rock4Advection::Central)]
    pub advection: Rock4Advection,
    /// CPU threads.
    #[arg(long, value_enum, default_value_t = Rock4Threads::All)]
    pub threads: Rock4Threads,
    /// Where the GPU path decides the steps (`--device gpu`).
    #[arg(long, value_enum, default_value_t = Rock4Controller::Auto)]
    pub controller: Rock4Controller,
    /// Where to compute.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Most step attempts.
    #[arg(long, default_value_t = 1_000_000, value_parser = count, allow_hyphen_values = true)]
    pub max_steps: usize,
    /// Write the final solution here (Matrix Market array).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// What `ferrocuda rock4` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Rock4CliReport {
    /// The problem.
    pub problem: Rock4Problem,
    /// Grid points per direction.
    pub n: usize,
    /// Unknowns.
    pub unknowns: usize,
    /// Where it ran: `cpu` or `gpu`.
    pub device: Where,
    /// GPU name, when it ran on one.
    pub gpu_name: Option<String>,
    /// Threads on the CPU.
    pub threads: Rock4Threads,
    /// Tolerances.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Why it stopped.
    pub reason: StopReason,
    /// The time reached.
    pub final_time: f64,
    /// Accepted steps.
    pub steps_accepted: usize,
    /// Rejected steps.
    pub steps_rejected: usize,
    /// Evaluations of the right-hand side.
    pub f_evals: usize,
    /// Largest stage count.
    pub max_stages: usize,
    /// `heat`: the largest `|y - exact|` at the final time.
    pub max_abs_error: Option<f64>,
    /// Smallest and largest value of the solution.
    pub solution_range: (f64, f64),
    /// Seconds in the integrator.
    pub seconds: f64,
    /// The integrator's full report (every step attempt).
    pub report: Rock4Report,
}

const OP: &str = "rock4";

fn invalid(reason: String) -> Error {
    Error::InvalidArgument { op: OP, reason }
}

/// Vectors of the grid's size that an integration holds at least (the solution, the
/// stages, the error estimate, the power iteration's).
const VECTORS: u128 = 9;

impl Rock4Args {
    /// Checks the options alone, and the grid's vectors against the host memory this
    /// process may use.
    pub fn validate(&self) -> Result<()> {
        if self.n == 0 {
            return Err(invalid("--n must be at least 1 (got 0)".into()));
        }
        if !(self.t_end >= 0.0 && self.t_end.is_finite()) {
            return Err(invalid(format!(
                "--t-end must be finite and >= 0, got {}",
                self.t_end
            )));
        }
        let atol = self.atol.unwrap_or(self.rtol);
        for (flag, v) in [("--rtol", self.rtol), ("--atol", atol), ("--nu", self.nu)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(invalid(format!(
                    "{flag} must be finite and positive, got {v}"
                )));
            }
        }
        let unknowns = self.n as u128 * self.n as u128;
        ferrocuda::alloc::check_host_bytes(
            &format!(
                "rock4 --n {}: the {} x {} grid's {unknowns} unknowns ({VECTORS} vectors of f64)",
                self.n, self.n, self.n
            ),
            ferrocuda::alloc::bytes_of(unknowns, 8).saturating_mul(VECTORS),
        )
    }
}

/// Runs `ferrocuda rock4` (on the GPU with `--device gpu|N`).
pub fn run(args: &Rock4Args, on: Where) -> Result<Rock4CliReport> {
    args.validate()?;
    let out = args
        .out
        .as_ref()
        .map(|p| crate::files::output(OP, "--out", p, &[]))
        .transpose()?;
    let gpu = on.open()?;
    let gpu = gpu.as_ref();
    let atol = args.atol.unwrap_or(args.rtol);
    let opts = Rock4Options::default()
        .rtol(args.rtol)
        .atol(atol)
        .max_steps(args.max_steps)
        .threads(match args.threads {
            Rock4Threads::All => Threads::All,
            Rock4Threads::Single => Threads::Single,
        })
        .controller(match args.controller {
            Rock4Controller::Auto => Controller::Auto,
            Rock4Controller::Host => Controller::Host,
            Rock4Controller::Device => Controller::Device,
        });
    let (report, y, exact) = match args.problem {
        Rock4Problem::Heat => {
            let p = Heat2d::new(args.n, args.nu)?;
            let mut y = p.initial();
            let r = match gpu {
                Some(g) => integrate_gpu(&p.on_device(g), g, args.t_end, &mut y, &opts)?,
                None => integrate(&p, args.t_end, &mut y, &opts)?,
            };
            let exact = p.exact(r.final_time);
            (r, y, Some(exact))
        }
        Rock4Problem::Jahn => {
            let adv = match args.advection {
                Rock4Advection::Central => Advection::Central,
                Rock4Advection::Forward => Advection::Forward,
            };
            let p = ReactionAdvectionDiffusion::thesis(args.n, adv)?;
            let mut y = p.initial();
            let r = match gpu {
                Some(g) => integrate_gpu(&p.on_device(g), g, args.t_end, &mut y, &opts)?,
                None => integrate(&p, args.t_end, &mut y, &opts)?,
            };
            (r, y, None)
        }
    };
    // A step size below the smallest allowed came back as Error::IntegrationFailed
    // above (exit status 1, --out not written).
    if let Some(out) = &out
        && report.reason == StopReason::Finished
    {
        crate::files::write_array(out, y.len(), 1, &y)?;
    }
    let max_abs_error = exact.map(|e| {
        y.iter()
            .zip(&e)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
    });
    let range = y
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if report.reason != StopReason::Finished {
        eprintln!(
            "warning: ROCK4 stopped at t = {} before t_end = {} ({:?}){} (exit status 3)",
            report.final_time,
            args.t_end,
            report.reason,
            if out.is_some() {
                "; --out not written"
            } else {
                ""
            }
        );
    }
    Ok(Rock4CliReport {
        problem: args.problem,
        n: args.n,
        unknowns: y.len(),
        device: on,
        gpu_name: gpu.map(|g| g.name()).transpose()?,
        threads: args.threads,
        rtol: args.rtol,
        atol,
        reason: report.reason,
        final_time: report.final_time,
        steps_accepted: report.steps_accepted,
        steps_rejected: report.steps_rejected,
        f_evals: report.f_evals,
        max_stages: report.max_stages,
        max_abs_error,
        solution_range: range,
        seconds: report.seconds,
        report,
    })
}

fn integrate(rhs: &dyn Rhs, t_end: f64, y: &mut [f64], opts: &Rock4Options) -> Result<Rock4Report> {
    let start = Instant::now();
    eprintln!(
        "[rock4] integrating {} unknowns to t = {t_end} on the CPU",
        rhs.dim()
    );
    let bar = Cleared(progress::bar(1000, "rock4"));
    bar.set_message(format!("t = 0 .. {t_end} (thousandths)"));
    let opts = opts.clone().progress(progress::observer(&bar));
    let r = cpu::integrate(rhs, 0.0, t_end, y, &opts)?;
    drop(bar);
    eprintln!(
        "[rock4] {} steps accepted, {} rejected, {:.3} s",
        r.steps_accepted,
        r.steps_rejected,
        start.elapsed().as_secs_f64()
    );
    Ok(r)
}

fn integrate_gpu(
    rhs: &dyn DeviceRhs,
    gpu: &Gpu,
    t_end: f64,
    y: &mut [f64],
    opts: &Rock4Options,
) -> Result<Rock4Report> {
    eprintln!(
        "[rock4] integrating {} unknowns to t = {t_end} on {}",
        rhs.dim(),
        gpu.name()?
    );
    let mut dy = gpu.upload(y)?;
    let bar = Cleared(progress::bar(1000, "rock4"));
    bar.set_message(format!("t = 0 .. {t_end} (thousandths)"));
    let opts = opts.clone().progress(progress::observer(&bar));
    let r = ferrocuda::rock4::gpu::integrate(rhs, 0.0, t_end, &mut dy, &opts)?;
    drop(bar);
    dy.copy_to_host(y)?;
    eprintln!(
        "[rock4] {} steps accepted, {} rejected, {:.3} s",
        r.steps_accepted, r.steps_rejected, r.seconds
    );
    Ok(r)
}

impl Report for Rock4CliReport {
    fn text(&self) -> String {
        self.to_text()
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// Stopped before `t_end` (the step budget): exit status 3.
    fn status(&self) -> Status {
        if self.reason == StopReason::Finished {
            Status::Success
        } else {
            Status::NotConverged
        }
    }
}

impl Rock4CliReport {
    /// A short summary.
    pub fn to_text(&self) -> String {
        let err = self
            .max_abs_error
            .map_or(String::new(), |e| format!(", max |y - exact| = {e:.3e}"));
        // The names the JSON uses (`heat`, `all`, `finished`).
        let name = |v: serde_json::Value| v.as_str().unwrap_or("?").to_string();
        format!(
            "ROCK4 {} n = {} ({} unknowns) on {} ({} threads): t = {} reached ({}), {} steps accepted, {} rejected, {} f evaluations, at most {} stages, {:.3} s; solution in [{:.4}, {:.4}]{err}",
            name(serde_json::json!(self.problem)),
            self.n,
            self.unknowns,
            match &self.gpu_name {
                Some(g) => g.clone(),
                None => "CPU".into(),
            },
            name(serde_json::json!(self.threads)),
            self.final_time,
            name(serde_json::json!(self.reason)),
            self.steps_accepted,
            self.steps_rejected,
            self.f_evals,
            self.max_stages,
            self.seconds,
            self.solution_range.0,
            self.solution_range.1,
        )
    }
}
