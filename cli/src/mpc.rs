//! `ferrocuda mpc --objects M --horizon N --steps S [--gradient fd|exact]
//! [--device cpu|gpu|N] [--margin F] [--plot out.png] [--frames DIR [--frame-every K]]
//! [--json]`: the closed loop of seed 001
//! §8.5.3 for a swarm of `M` objects: start at `x_j(0) = (0.12 j, 0, 1, 0)`, reference 0
//! for the first half of the steps, then `(3, 0, 0, 0)`; each step solves the MPC
//! problem (horizon `N`) and applies the first control.
//!
//! ```sh
//! ferrocuda mpc --objects 32 --horizon 5 --steps 200 --device gpu --json
//! ```
//!
//! The report has `constraint_violations` (true constraints, summed over all steps),
//! `final_distance_to_reference` (mean over objects) and the time split between the
//! evaluations (`evaluation_seconds`) and the optimiser itself (`optimizer_seconds`).
//! `--plot` writes the trajectories as a PNG, `--frames` one PNG per `K`-th step (and the
//! last) into `DIR` as `frame-00000.png`, ... for an animation (both written only on
//! success).

use std::path::PathBuf;

use serde::Serialize;

use ferrocuda::mpc::gpu::GpuEvaluator;
use ferrocuda::mpc::optimize::{LoopReport, MpcOptions, closed_loop};
use ferrocuda::mpc::{CpuEvaluator, Evaluator, Gradient, SwarmModel};
use ferrocuda::{Error, Result};
use ferrocuda_bench::output::Target;

use crate::device::{DeviceArg, Where};
use crate::numbers::count;
use crate::report::Report;

/// Gradients of `ferrocuda mpc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MpcGradient {
    /// The thesis's forward differences.
    Fd,
    /// Exact (adjoint sweep).
    Exact,
}

/// Arguments of `ferrocuda mpc`.
#[derive(Debug, Clone, clap::Args)]
pub struct MpcArgs {
    /// Objects M.
    #[arg(long, default_value_t = 32, value_parser = count, allow_hyphen_values = true)]
    pub objects: usize,
    /// Horizon N.
    #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
    pub horizon: usize,
    /// MPC steps (the reference switches half way).
    #[arg(long, default_value_t = 200, value_parser = count, allow_hyphen_values = true)]
    pub steps: usize,
    /// Gradients.
    #[arg(long, value_enum, default_value_t = MpcGradient::Exact)]
    pub gradient: MpcGradient,
    /// Where to evaluate.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Relative safety margin of the constraints the optimiser sees.
    #[arg(long, default_value_t = 0.02, allow_hyphen_values = true)]
    pub margin: f64,
    /// Write the trajectories here (PNG).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write animation frames (one PNG per `--frame-every` steps) into this directory.
    #[arg(long)]
    pub frames: Option<PathBuf>,
    /// Steps between two frames (default: about 50 frames over the loop).
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub frame_every: Option<usize>,
    /// Print JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// What `ferrocuda mpc` reports.
#[derive(Debug, Clone, Serialize)]
pub struct MpcCliReport {
    /// Where it ran: `cpu` or `gpu`.
    pub device: Where,
    /// Gradients.
    pub gradient: MpcGradient,
    /// The closed loop's report (`constraint_violations`, `final_distance_to_reference`,
    /// `evaluation_seconds`, `optimizer_seconds`, ...).
    #[serde(flatten)]
    pub report: LoopReport,
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument { op: "mpc", reason }
}

/// Bytes of doubles per control the closed loop holds at least (the optimiser's
/// vectors and bounds, gradients, its quasi-Newton memory).
const DOUBLES_PER_CONTROL: u128 = 32;

impl MpcArgs {
    /// Checks the options alone, and the swarm's vectors against the host memory this
    /// process may use.
    pub fn validate(&self) -> Result<()> {
        for (flag, v) in [
            ("--objects", self.objects),
            ("--horizon", self.horizon),
            ("--steps", self.steps),
        ] {
            if v == 0 {
                return Err(invalid(format!("{flag} must be at least 1 (got 0)")));
            }
        }
        if !(0.0..0.5).contains(&self.margin) {
            return Err(invalid(format!(
                "--margin must be in [0, 0.5), got {}",
                self.margin
            )));
        }
        if self.frame_every == Some(0) {
            return Err(invalid("--frame-every must be at least 1 (got 0)".into()));
        }
        if self.frame_every.is_some() && self.frames.is_none() {
            return Err(invalid("--frame-every needs --frames DIR".into()));
        }
        let (m, n, s) = (
            self.objects as u128,
            self.horizon as u128,
            self.steps as u128,
        );
        // Controls (2 per object and step) with the optimiser's vectors, the predicted
        // trajectory (4 states per object and step), the positions of every step.
        let doubles = (m * n * 2)
            .saturating_mul(DOUBLES_PER_CONTROL)
            .saturating_add((n + 1).saturating_mul(m).saturating_mul(8))
            .saturating_add((s + 1).saturating_mul(m).saturating_mul(2));
        ferrocuda::alloc::check_host_bytes(
            &format!(
                "mpc --objects {} --horizon {} --steps {}: the swarm's controls, trajectories and the optimiser's vectors",
                self.objects, self.horizon, self.steps
            ),
            ferrocuda::alloc::bytes_of(doubles, 8),
        )
    }
}

/// Runs `ferrocuda mpc` (on the GPU with `--device gpu|N`).
pub fn run(args: &MpcArgs, on: Where) -> Result<MpcCliReport> {
    args.validate()?;
    let plot = args
        .plot
        .as_ref()
        .map(|p| Target::new(format!("--plot {}", p.display()), p))
        .transpose()?;
    let model = SwarmModel::new(args.objects, args.horizon)?;
    let mut opts = MpcOptions::with_steps(args.steps);
    opts.margin = args.margin;
    let method = match args.gradient {
        MpcGradient::Fd => Gradient::Forward,
        MpcGradient::Exact => Gradient::Exact,
    };
    let tight = model.tightened(opts.margin);
    let mut ev: Box<dyn Evaluator> = match on.open()? {
        None => Box::new(CpuEvaluator::new(tight, method)?),
        Some(gpu) => Box::new(GpuEvaluator::new(&gpu, tight, method, 1)?),
    };
    eprintln!(
        "[mpc] {} objects, horizon {}, {} steps on {}",
        args.objects,
        args.horizon,
        args.steps,
        ev.device()
    );
    let every = (args.steps / 10).max(1);
    let report = closed_loop(ev.as_mut(), &model, &opts, |k, r| {
        if (k + 1) % every == 0 {
            eprintln!(
                "[mpc] step {}: J = {:.4e}, g = {:.2e}, {} + {} evaluations",
                k + 1,
                r.evaluation.cost,
                r.evaluation.constraint,
                r.value_evaluations,
                r.gradient_evaluations
            );
        }
    })?;
    if let Some(plot) = &plot {
        let png =
            ferrocuda_bench::mpc::trajectory_chart(&model, &report, &opts).render_png(1280, 640)?;
        plot.write(&png)?;
    }
    if let Some(dir) = &args.frames {
        let every = args.frame_every.unwrap_or((args.steps / 50).max(1));
        let mut steps: Vec<usize> = (0..=args.steps).step_by(every).collect();
        if steps.last() != Some(&args.steps) {
            steps.push(args.steps);
        }
        for &k in &steps {
            let (chart, points) = ferrocuda_bench::mpc::frame_chart(&model, &report, &opts, k);
            chart.write_png_with_points(
                &dir.join(format!("frame-{k:05}.png")),
                960,
                540,
                &points,
            )?;
        }
        eprintln!("[mpc] wrote {} frames into {}", steps.len(), dir.display());
    }
    Ok(MpcCliReport {
        device: on,
        gradient: args.gradient,
        report,
    })
}

impl Report for MpcCliReport {
    fn text(&self) -> String {
        self.to_text()
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}

impl MpcCliReport {
    /// A short summary.
    pub fn to_text(&self) -> String {
        let r = &self.report;
        format!(
            "MPC swarm: {} objects, horizon {}, {} steps on {}: {} constraint violations (smallest pair distance {:.4}, largest speed {:.4}, closest disc centre {:.4}); final distance to the reference {:.4} (mean), {:.4} (max); {} + {} evaluations, {:.3} s evaluating, {:.3} s in the optimiser, {} unconverged steps",
            r.objects,
            r.horizon,
            r.steps,
            r.device_name,
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
            r.unconverged_steps,
        )
    }
}
