//! The optimiser and the closed loop of Jahn (2010) §8.5.
//!
//! **One MPC step** minimises `J(u)` over the box `u in [-u_max, u_max]^{N M 2}` subject
//! to `g(u) = 0` (every constraint holds; `g <= 0` always). Jahn ran Ipopt; here the
//! pure-Rust `optimization_engine` crate (PANOC with L-BFGS inside its penalty/ALM outer
//! loop) drives the [`Evaluator`]. Its penalty part takes an equality `F2(u) = 0` and
//! minimises `psi = J + (c/2) |F2|^2`, raising `c` until `|F2| <= delta`; with
//! `F2 = sqrt(-g)` that is `psi = J - (c/2) g`, a C^2 function because Jahn's
//! penalties are (its gradient `grad J - (c/2) grad g` needs no square root), and the
//! stopping rule reads `-g <= delta^2`. The constraints are optimised with a small
//! safety margin ([`MpcOptions::margin`], [`SwarmModel::tightened`]) so that the
//! residual the penalty leaves stays clear of the true constraints, which the closed
//! loop counts separately ([`SwarmModel::check_state`]).
//!
//! **Closed loop** (§8.5.3): `x_j(0) = (0.12 j, 0, 1, 0)`, reference 0 for the first
//! [`MpcOptions::switch_step`] steps, then `(3, 0, 0, 0)`; each step applies `u(0)` of the
//! optimum to the swarm and warm-starts the next problem with the shifted sequence and
//! the penalty one growth step below where the previous problem ended.

use std::cell::RefCell;
use std::time::Instant;

use optimization_engine::alm::{AlmCache, AlmOptimizer, AlmProblem, NO_MAPPING, NO_SET};
use optimization_engine::constraints::Rectangle;
use optimization_engine::core::ExitStatus;
use optimization_engine::panoc::PANOCCache;
use optimization_engine::{FunctionCallResult, SolverError};
use serde::Serialize;

use ferrocuda_kernels::mpc::{NU, NX, step};

use super::{ConstraintCheck, Evaluation, Evaluator, SwarmModel};
use crate::error::{Error, Result};

/// Options of the optimiser and the closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MpcOptions {
    /// MPC steps of the closed loop.
    pub steps: usize,
    /// The step from which the reference is [`MpcOptions::second_reference`] (§8.5.3: after
    /// 1000 of 2000 steps).
    pub switch_step: usize,
    /// The reference of the first phase.
    pub first_reference: [f64; NX],
    /// The reference of the second phase.
    pub second_reference: [f64; NX],
    /// Relative safety margin of the constraints the optimiser sees (0.02).
    pub margin: f64,
    /// Inner (PANOC) tolerance on the fixed-point residual.
    pub tolerance: f64,
    /// Constraint tolerance: stop when `sqrt(-g) <= delta`.
    pub delta: f64,
    /// Initial penalty `c`.
    pub initial_penalty: f64,
    /// Penalty growth per outer iteration.
    pub penalty_factor: f64,
    /// Outer iterations at most.
    pub max_outer_iterations: usize,
    /// PANOC iterations per outer iteration at most.
    pub max_inner_iterations: usize,
    /// L-BFGS memory.
    pub lbfgs_memory: usize,
}

impl Default for MpcOptions {
    fn default() -> Self {
        MpcOptions {
            steps: 2000,
            switch_step: 1000,
            first_reference: [0.0; NX],
            second_reference: [3.0, 0.0, 0.0, 0.0],
            margin: 0.02,
            tolerance: 1e-3,
            delta: 1e-3,
            initial_penalty: 100.0,
            penalty_factor: 10.0,
            max_outer_iterations: 12,
            max_inner_iterations: 1000,
            lbfgs_memory: 10,
        }
    }
}

impl MpcOptions {
    /// `steps` closed-loop steps, the reference switching half way.
    pub fn with_steps(steps: usize) -> Self {
        MpcOptions {
            steps,
            switch_step: steps / 2,
            ..Default::default()
        }
    }
}

/// What one optimisation did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SolveReport {
    /// `J` and `g` at the returned controls.
    pub evaluation: Evaluation,
    /// Whether the optimiser converged (else it hit an iteration limit).
    pub converged: bool,
    /// Outer (penalty) iterations.
    pub outer_iterations: usize,
    /// Inner (PANOC) iterations, all outer iterations together.
    pub inner_iterations: usize,
    /// Evaluations of `J` and `g` alone.
    pub value_evaluations: usize,
    /// Evaluations of `J`, `g` and their gradients.
    pub gradient_evaluations: usize,
    /// Seconds in the evaluator (values and gradients).
    pub evaluation_seconds: f64,
    /// Seconds in total.
    pub total_seconds: f64,
    /// The penalty `c` at the end (the closed loop starts the next step from it).
    pub penalty: f64,
}

impl SolveReport {
    /// Seconds in the optimiser itself (total minus evaluations).
    pub fn optimizer_seconds(&self) -> f64 {
        (self.total_seconds - self.evaluation_seconds).max(0.0)
    }
}

/// Counting, caching wrapper of an evaluator for the optimiser's closures.
struct Counted<'a> {
    ev: &'a mut dyn Evaluator,
    x0: &'a [f64],
    values: usize,
    gradients: usize,
    seconds: f64,
    last_u: Vec<f64>,
    last: Option<Evaluation>,
    grad_j: Vec<f64>,
    grad_g: Vec<f64>,
    have_grad: bool,
    error: Option<Error>,
}

impl Counted<'_> {
    fn value(&mut self, u: &[f64]) -> std::result::Result<Evaluation, SolverError> {
        if let Some(e) = self.last
            && self.last_u == u
        {
            return Ok(e);
        }
        let t = Instant::now();
        let r = self.ev.evaluate(self.x0, u);
        self.seconds += t.elapsed().as_secs_f64();
        self.values += 1;
        self.store(u, r, false)
    }

    fn gradient(&mut self, u: &[f64]) -> std::result::Result<Evaluation, SolverError> {
        if let Some(e) = self.last
            && self.have_grad
            && self.last_u == u
        {
            return Ok(e);
        }
        let t = Instant::now();
        let r = self
            .ev
            .gradient(self.x0, u, &mut self.grad_j, &mut self.grad_g);
        self.seconds += t.elapsed().as_secs_f64();
        self.gradients += 1;
        self.store(u, r, true)
    }

    fn store(
        &mut self,
        u: &[f64],
        r: Result<Evaluation>,
        grad: bool,
    ) -> std::result::Result<Evaluation, SolverError> {
        match r {
            Ok(e) => {
                self.last_u.clear();
                self.last_u.extend_from_slice(u);
                self.last = Some(e);
                self.have_grad = grad;
                Ok(e)
            }
            Err(e) => {
                self.last = None;
                self.error = Some(e);
                Err(SolverError::Cost("the MPC evaluator failed"))
            }
        }
    }
}

/// Minimises `J` subject to `g = 0` and the control box, from the swarm state `x0`,
/// starting at (and returning in) `u`.
///
/// ```
/// use ferrocuda::mpc::{CpuEvaluator, Gradient, SwarmModel};
/// use ferrocuda::mpc::optimize::{MpcOptions, solve};
/// let model = SwarmModel::new(4, 5)?;
/// let mut ev = CpuEvaluator::new(model, Gradient::Exact)?;
/// let x0 = model.thesis_initial_state();
/// let mut u = vec![0.0; model.controls()];
/// let r = solve(&mut ev, &x0, &mut u, &MpcOptions::default())?;
/// assert!(r.evaluation.constraint > -1e-6);
/// assert!(u.iter().all(|v| v.abs() <= 12.0));
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn solve(
    ev: &mut dyn Evaluator,
    x0: &[f64],
    u: &mut [f64],
    opts: &MpcOptions,
) -> Result<SolveReport> {
    const OP: &str = "mpc::optimize::solve";
    let model = *ev.model();
    model.check_inputs(OP, x0, u)?;
    if !(opts.delta > 0.0 && opts.tolerance > 0.0 && opts.initial_penalty > 0.0)
        || opts.penalty_factor <= 1.0
        || opts.lbfgs_memory == 0
    {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!(
                "delta, tolerance and initial_penalty must be positive, penalty_factor above 1 and lbfgs_memory at least 1 (got {opts:?})"
            ),
        });
    }
    let n = model.controls();
    let start = Instant::now();
    let lo = vec![-model.max_control; n];
    let hi = vec![model.max_control; n];
    let bounds = Rectangle::new(Some(&lo), Some(&hi));
    let state = RefCell::new(Counted {
        ev,
        x0,
        values: 0,
        gradients: 0,
        seconds: 0.0,
        last_u: Vec::with_capacity(n),
        last: None,
        grad_j: vec![0.0; n],
        grad_g: vec![0.0; n],
        have_grad: false,
        error: None,
    });
    let psi = |u: &[f64], xi: &[f64], cost: &mut f64| -> FunctionCallResult {
        let e = state.borrow_mut().value(u)?;
        *cost = e.cost - 0.5 * xi[0] * e.constraint;
        Ok(())
    };
    let d_psi = |u: &[f64], xi: &[f64], grad: &mut [f64]| -> FunctionCallResult {
        let mut s = state.borrow_mut();
        s.gradient(u)?;
        let half_c = 0.5 * xi[0];
        for ((g, a), b) in grad.iter_mut().zip(&s.grad_j).zip(&s.grad_g) {
            *g = a - half_c * b;
        }
        Ok(())
    };
    let f2 = |u: &[f64], out: &mut [f64]| -> FunctionCallResult {
        let e = state.borrow_mut().value(u)?;
        out[0] = (-e.constraint).max(0.0).sqrt();
        Ok(())
    };
    let problem = AlmProblem::new(
        bounds,
        NO_SET,
        NO_SET,
        psi,
        d_psi,
        NO_MAPPING,
        Some(f2),
        0,
        1,
    );
    let mut cache = AlmCache::new(PANOCCache::new(n, opts.tolerance, opts.lbfgs_memory), 0, 1);
    let status = AlmOptimizer::new(&mut cache, problem)
        .with_delta_tolerance(opts.delta)
        .with_epsilon_tolerance(opts.tolerance)
        .with_initial_penalty(opts.initial_penalty)
        .with_penalty_update_factor(opts.penalty_factor)
        .with_max_outer_iterations(opts.max_outer_iterations)
        .with_max_inner_iterations(opts.max_inner_iterations)
        .solve(u);
    let mut s = state.into_inner();
    if let Some(e) = s.error.take() {
        return Err(e);
    }
    let status = status.map_err(|e| Error::InvalidArgument {
        op: OP,
        reason: format!("the optimiser failed: {e:?}"),
    })?;
    let evaluation = s.value(u).map_err(|_| Error::InvalidArgument {
        op: OP,
        reason: "the final evaluation failed".into(),
    })?;
    if let Some(e) = s.error.take() {
        return Err(e);
    }
    Ok(SolveReport {
        evaluation,
        converged: status.exit_status() == ExitStatus::Converged,
        outer_iterations: status.num_outer_iterations(),
        inner_iterations: status.num_inner_iterations(),
        value_evaluations: s.values,
        gradient_evaluations: s.gradients,
        evaluation_seconds: s.seconds,
        total_seconds: start.elapsed().as_secs_f64(),
        penalty: status.penalty(),
    })
}

/// Everything the closed loop reports.
#[derive(Debug, Clone, Serialize)]
pub struct LoopReport {
    /// Where the evaluations ran, in words.
    pub device_name: String,
    /// Objects.
    pub objects: usize,
    /// Horizon.
    pub horizon: usize,
    /// MPC steps done.
    pub steps: usize,
    /// Violated constraints summed over every step's new state (true constraints, no
    /// margin): pairs closer than `d`, objects faster than `v_max`, objects in a disc.
    pub constraint_violations: usize,
    /// Mean distance of the objects' positions to the final reference position.
    pub final_distance_to_reference: f64,
    /// Largest such distance.
    pub final_max_distance_to_reference: f64,
    /// The worst values over the whole run: smallest pair distance, largest speed,
    /// smallest distance to a disc centre.
    pub worst: ConstraintCheck,
    /// Steps whose optimisation hit an iteration limit.
    pub unconverged_steps: usize,
    /// Evaluations of `J`, `g`.
    pub value_evaluations: usize,
    /// Evaluations of `J`, `g` and gradients.
    pub gradient_evaluations: usize,
    /// Seconds in the evaluator.
    pub evaluation_seconds: f64,
    /// Seconds in the optimiser itself.
    pub optimizer_seconds: f64,
    /// Seconds in total.
    pub total_seconds: f64,
    /// Per step.
    pub per_step: Vec<SolveReport>,
    /// Positions `(x, y)` of every object after every step (`steps + 1` rows of `M 2`
    /// values), for plots.
    #[serde(skip)]
    pub positions: Vec<Vec<f64>>,
}

/// Applies `u(0)` of the optimum (first `M 2` values of `u`) to the swarm state `x`.
pub fn apply_first_control(model: &SwarmModel, x: &mut [f64], u: &[f64]) {
    for j in 0..model.objects {
        let s = [x[NX * j], x[NX * j + 1], x[NX * j + 2], x[NX * j + 3]];
        let next = step(model.t, s, [u[NU * j], u[NU * j + 1]]);
        x[NX * j..NX * j + NX].copy_from_slice(&next);
    }
}

/// Runs the closed loop of §8.5.3 with `ev` (its model, tightened by the margin, is the
/// optimiser's; `model` is the true one the violations are counted against). `progress`
/// sees each step's index and report.
pub fn closed_loop(
    ev: &mut dyn Evaluator,
    model: &SwarmModel,
    opts: &MpcOptions,
    mut progress: impl FnMut(usize, &SolveReport),
) -> Result<LoopReport> {
    let start = Instant::now();
    model.validate()?;
    model.check_memory()?;
    let mut x = model.thesis_initial_state();
    let mut u = vec![0.0; model.controls()];
    let (m, mn) = (model.objects, model.objects * NU);
    let positions_of =
        |x: &[f64]| -> Vec<f64> { (0..m).flat_map(|j| [x[NX * j], x[NX * j + 2]]).collect() };
    let mut positions = vec![positions_of(&x)];
    let mut per_step = Vec::with_capacity(opts.steps);
    let mut violations = 0;
    let mut worst = model.check_state(&x);
    let mut step_opts = *opts;
    for k in 0..opts.steps {
        let reference = if k < opts.switch_step {
            opts.first_reference
        } else {
            opts.second_reference
        };
        ev.set_reference(reference)?;
        let r = solve(ev, &x, &mut u, &step_opts)?;
        // Warm start of the penalty: one growth step below where this step ended.
        step_opts.initial_penalty = (r.penalty / opts.penalty_factor).max(opts.initial_penalty);
        apply_first_control(model, &mut x, &u);
        let c = model.check_state(&x);
        violations += c.violations;
        worst.min_pair_distance = worst.min_pair_distance.min(c.min_pair_distance);
        worst.max_speed = worst.max_speed.max(c.max_speed);
        worst.min_disc_distance = worst.min_disc_distance.min(c.min_disc_distance);
        worst.violations += c.violations;
        positions.push(positions_of(&x));
        progress(k, &r);
        per_step.push(r);
        // Warm start: shift by one step, repeat the last.
        if model.horizon > 1 {
            u.copy_within(mn.., 0);
            let len = u.len();
            u.copy_within(len - 2 * mn..len - mn, len - mn);
        }
    }
    let reference = if opts.steps > opts.switch_step {
        opts.second_reference
    } else {
        opts.first_reference
    };
    let dists: Vec<f64> = (0..m)
        .map(|j| (x[NX * j] - reference[0]).hypot(x[NX * j + 2] - reference[2]))
        .collect();
    let evaluation_seconds: f64 = per_step.iter().map(|r| r.evaluation_seconds).sum();
    let total_seconds = start.elapsed().as_secs_f64();
    Ok(LoopReport {
        device_name: ev.device(),
        objects: m,
        horizon: model.horizon,
        steps: opts.steps,
        constraint_violations: violations,
        final_distance_to_reference: dists.iter().sum::<f64>() / m as f64,
        final_max_distance_to_reference: dists.iter().copied().fold(0.0, f64::max),
        worst,
        unconverged_steps: per_step.iter().filter(|r| !r.converged).count(),
        value_evaluations: per_step.iter().map(|r| r.value_evaluations).sum(),
        gradient_evaluations: per_step.iter().map(|r| r.gradient_evaluations).sum(),
        evaluation_seconds,
        optimizer_seconds: per_step.iter().map(|r| r.optimizer_seconds()).sum(),
        total_seconds,
        per_step,
        positions,
    })
}
