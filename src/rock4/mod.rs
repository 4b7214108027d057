//! ROCK4: Abdulle's stabilized explicit Runge-Kutta method of order 4 (2002) for stiff
//! problems with a spectrum near the negative real axis (diffusion-dominated PDEs after
//! space discretisation), on the CPU (rayon, [`cpu::integrate`]) and on the GPU
//! ([`gpu::integrate`]: for the built-in stencil problems one persistent kernel takes the
//! whole integration, step decisions included, see [`Controller`]).
//!
//! One step of size `h` from `y_n` (Jahn 2010, ch. 5, Abdulle 2002):
//! 1. **Degree**: from `h rho` (`rho` = spectral radius of the Jacobian), the stage
//!    count `s0 = floor(sqrt((3 + h rho) / 0.353)) + 1`, capped at 152 (then `h` is
//!    shortened to `0.8 (0.353 152^2 - 3) / rho`), rounded up to a tabulated degree
//!    `m` ([`coeffs`]); the method has `s = m + 4` stages.
//! 2. **Recurrence** (`m - 1` evaluations of `f`): `g_0 = y_n`, `g_1 = y_n + h a_1 f_n`,
//!    `g_j = h a_j f(g_{j-1}) + (1 + c_j) g_{j-1} - c_j g_{j-2}`; only three vectors.
//! 3. **Finishing procedure**: a 4-stage explicit RK method from `u = g_m`:
//!    `y_{n+1} = u + h (b1 k1 + .. + b4 k4)`, then `k5 = f(y_{n+1})` (reused as the next
//!    `f_n` on acceptance).
//! 4. **Error**: the embedded order-3 solution gives
//!    `delta = h (sum_i (be_i - b_i) k_i + be5 k5)` and
//!    `err = sqrt(mean((delta_i / (atol + rtol |y_{n+1,i}|))^2))`; accept if `err < 1`.
//! 5. **Controller**: `fac = err^(-1/4)`, limited by the predictive (Gustafsson)
//!    factor `(h / h_prev) err_prev^(1/4) / err^(1/2)`, safety 0.8, within `[0.1, facmax]`
//!    (`facmax` = 5 at the start, 2 after an accepted step, 1 right after a rejection);
//!    a rejected step is retried with `0.8 h_new`.
//! 6. **Spectral radius**: a bound from the problem ([`Rhs::spectral_radius_bound`],
//!    e.g. Gershgorin) or the nonlinear power iteration of Abdulle's code; refreshed every
//!    5th accepted step and before the retry of a rejected step that used an old
//!    estimate, or only once with [`Rock4Options::jacobian_constant`].
//!
//! The whole step, the controller and the power iteration follow the reference code
//! as described in the project's `ALGORITHM.md` (Abdulle's Fortran `rock4.f`).
//!
//! Users bring their own problem through [`Rhs`]; the test problems are in
//! [`problems`]: the 2D heat equation with its exact semi-discrete solution
//! ([`problems::Heat2d`]) and the reaction-advection-diffusion problem of Jahn (2010)
//! ([`problems::ReactionAdvectionDiffusion`]). Per-element math (stencils and stage
//! updates) lives in `ferrocuda_kernels::rock4`, shared with the coming GPU kernels.
//!
//! ```
//! use ferrocuda::rock4::{Rock4Options, StopReason, cpu, problems::Heat2d};
//! let heat = Heat2d::new(15, 1.0)?;
//! let mut y = heat.initial();
//! let opts = Rock4Options::default().rtol(1e-8).atol(1e-8);
//! let report = cpu::integrate(&heat, 0.0, 0.1, &mut y, &opts)?;
//! assert_eq!(report.reason, StopReason::Finished);
//! let exact = heat.exact(0.1);
//! let err = y.iter().zip(&exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
//! assert!(err < 1e-6, "{err}");
//! // Bad input is an error, not a panic.
//! assert!(cpu::integrate(&heat, 0.0, 0.1, &mut y[..3], &opts).is_err());
//! # Ok::<(), ferrocuda::Error>(())
//! ```

pub mod coeffs;
pub mod cpu;
mod driver;
pub mod gpu;
pub mod problems;

use serde::Serialize;

use ferrocuda_host::{DeviceSlice, DeviceView, DeviceViewMut, Gpu};

use crate::error::{Error, Result, check_device, check_len};

/// The right-hand side `y' = f(t, y)` of an ODE system on the CPU.
///
/// The GPU twin (next) will be a `DeviceRhs` with the same shape on device buffers, as
/// [`crate::krylov::LinOp`] / [`crate::krylov::DeviceLinOp`].
///
/// ```
/// use ferrocuda::rock4::{Rhs, Rock4Options, cpu};
/// /// `y' = -lambda y`, componentwise.
/// struct Decay(f64, usize);
/// impl Rhs for Decay {
///     fn dim(&self) -> usize { self.1 }
///     fn eval(&self, _t: f64, y: &[f64], dy: &mut [f64]) -> ferrocuda::Result<()> {
///         dy.iter_mut().zip(y).for_each(|(d, y)| *d = -self.0 * y);
///         Ok(())
///     }
///     fn spectral_radius_bound(&self, _t: f64, _y: &[f64]) -> Option<f64> { Some(self.0) }
/// }
/// let mut y = vec![1.0; 4];
/// cpu::integrate(&Decay(100.0, 4), 0.0, 0.05, &mut y, &Rock4Options::default().rtol(1e-9))?;
/// assert!((y[0] - (-5.0f64).exp()).abs() < 1e-6);
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub trait Rhs: Sync {
    /// Number of equations `n`.
    fn dim(&self) -> usize;
    /// `dy <- f(t, y)`; `y` and `dy` have length [`Rhs::dim`] (the integrator checks).
    /// Parallel implementations should use rayon: the integrator's single-thread mode
    /// runs them inside a one-thread pool.
    fn eval(&self, t: f64, y: &[f64], dy: &mut [f64]) -> Result<()>;
    /// An upper bound of the spectral radius of the Jacobian `df/dy` at `(t, y)`, if the
    /// problem knows one (e.g. Gershgorin). `None`: the integrator estimates it by power
    /// iteration.
    fn spectral_radius_bound(&self, _t: f64, _y: &[f64]) -> Option<f64> {
        None
    }
}

impl<R: Rhs + ?Sized> Rhs for &R {
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn eval(&self, t: f64, y: &[f64], dy: &mut [f64]) -> Result<()> {
        (**self).eval(t, y, dy)
    }
    fn spectral_radius_bound(&self, t: f64, y: &[f64]) -> Option<f64> {
        (**self).spectral_radius_bound(t, y)
    }
}

/// Where the spectral radius comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpectralRadius {
    /// The problem's bound ([`Rhs::spectral_radius_bound`]) when it has one, else the
    /// power iteration.
    #[default]
    Auto,
    /// Always the nonlinear power iteration (`rockfrho`), even when a bound exists.
    PowerIteration,
}

/// Step-size control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepControl {
    /// Error estimate, controller, accept/reject.
    #[default]
    Adaptive,
    /// Constant steps of [`Rock4Options::h0`] (the last one shortened to end at
    /// `t_end`), every step accepted; the error estimate is still computed and recorded.
    /// For convergence studies.
    Fixed,
}

/// Where the GPU path takes its step decisions ([`gpu::integrate`]; the CPU path ignores
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Controller {
    /// [`Controller::Device`] for the built-in stencil problems ([`DeviceRhs::stencil`])
    /// of up to [`gpu::AUTO_DEVICE_MAX_POINTS`] unknowns (where it is the faster path),
    /// else [`Controller::Host`].
    #[default]
    Auto,
    /// The host decides: it queues each attempt's kernels and reads one scalar (the error
    /// norm) back per attempt, and the spectral radius per refresh.
    Host,
    /// Everything on the device: one persistent cooperative kernel runs the stages, the
    /// error norm, the spectral radius (Gershgorin or power iteration) and the
    /// controller for [`gpu::ATTEMPTS_PER_LAUNCH`] attempts per launch, with a grid
    /// barrier between vector operations; the host waits once per launch. Built-in
    /// stencil problems only (others are an error).
    Device,
}

/// Threads of the CPU integrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Threads {
    /// All cores of the current rayon pool.
    #[default]
    All,
    /// One thread (Jahn's CPU column). Same bits as [`Threads::All`].
    Single,
}

/// ROCK4 options; `Default`: `rtol = atol = 1e-6`, initial step chosen automatically,
/// adaptive steps, spectral radius from the problem's bound or power iteration, all
/// cores, at most 1 000 000 step attempts.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Rock4Options {
    /// Relative tolerance, `> 1e-15`.
    pub rtol: f64,
    /// Absolute tolerance, `> 0`.
    pub atol: f64,
    /// Initial step, `10 uround <= h0 <= t_end - t0`; `None`: the RKC start-up
    /// heuristic (`rkc_init_dt`). Required for [`StepControl::Fixed`].
    pub h0: Option<f64>,
    /// Adaptive or fixed steps.
    pub step_control: StepControl,
    /// Where the spectral radius comes from.
    pub spectral_radius: SpectralRadius,
    /// Estimate the spectral radius once only (a linear problem with constant Jacobian).
    pub jacobian_constant: bool,
    /// Most step attempts (accepted + rejected); then the report says
    /// [`StopReason::MaxSteps`].
    pub max_steps: usize,
    /// All cores or one.
    pub threads: Threads,
    /// Where the GPU path decides the steps.
    pub controller: Controller,
    /// Attempts per launch of the persistent kernel ([`Controller::Device`]; default
    /// [`gpu::ATTEMPTS_PER_LAUNCH`]): the host waits for the device once per this many
    /// attempts, and holds this many attempts' history on the device. At least 1.
    pub attempts_per_launch: usize,
    /// Told thousandths of `[t0, t_end]` done after each step attempt (the device
    /// controller: after each launch) ([`crate::progress`]); none by default.
    #[serde(skip)]
    pub progress: crate::progress::Progress,
}

impl Default for Rock4Options {
    fn default() -> Self {
        Rock4Options {
            rtol: 1e-6,
            atol: 1e-6,
            h0: None,
            step_control: StepControl::Adaptive,
            spectral_radius: SpectralRadius::Auto,
            jacobian_constant: false,
            max_steps: 1_000_000,
            threads: Threads::All,
            controller: Controller::Auto,
            attempts_per_launch: gpu::ATTEMPTS_PER_LAUNCH,
            progress: crate::progress::Progress::none(),
        }
    }
}

impl Rock4Options {
    setters! {
        /// Sets the progress observer (the field `progress`).
        progress: crate::progress::Progress;
        /// Sets the relative tolerance.
        rtol: f64;
        /// Sets the absolute tolerance.
        atol: f64;
    }
    /// Sets the initial step.
    pub fn h0(mut self, h0: f64) -> Self {
        self.h0 = Some(h0);
        self
    }
    /// Constant steps of `h` (sets `h0` and [`StepControl::Fixed`]).
    pub fn fixed_step(mut self, h: f64) -> Self {
        self.h0 = Some(h);
        self.step_control = StepControl::Fixed;
        self
    }
    setters! {
        /// Sets where the spectral radius comes from.
        spectral_radius: SpectralRadius;
        /// Declares the Jacobian constant (one spectral-radius estimate).
        jacobian_constant: bool;
        /// Sets the most step attempts.
        max_steps: usize;
        /// Sets the threads.
        threads: Threads;
        /// Sets where the GPU path decides the steps.
        controller: Controller;
        /// Sets the attempts per launch of the persistent kernel.
        attempts_per_launch: usize;
    }
}

/// Why the integration stopped. Only [`StopReason::Finished`] and
/// [`StopReason::MaxSteps`] come back in a report: a step-size underflow is a failed
/// integration, [`Error::IntegrationFailed`] (its report has
/// [`StopReason::StepTooSmall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Reached `t_end`.
    Finished,
    /// The step size fell below `10 uround` (or `t + h == t`): the integration failed.
    StepTooSmall,
    /// [`Rock4Options::max_steps`] attempts made (the caller's budget; `final_time <
    /// t_end`).
    MaxSteps,
}

/// One step attempt.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepRecord {
    /// Time at the start of the attempt.
    pub t: f64,
    /// Step size tried.
    pub h: f64,
    /// Stages `s = m + 4`.
    pub stages: usize,
    /// Spectral radius used for the degree.
    pub rho: f64,
    /// Weighted error estimate (accepted if `< 1`).
    pub err: f64,
    /// Whether it was accepted.
    pub accepted: bool,
}

/// What an integration did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Rock4Report {
    /// Why it stopped.
    pub reason: StopReason,
    /// The time reached (`t_end` when finished).
    pub final_time: f64,
    /// Accepted steps.
    pub steps_accepted: usize,
    /// Rejected steps.
    pub steps_rejected: usize,
    /// Evaluations of `f`, power iteration included.
    pub f_evals: usize,
    /// Spectral-radius estimates (bounds or power iterations).
    pub rho_evals: usize,
    /// Power iterations that did not converge in 50 iterations (the last estimate is
    /// used, as in Abdulle's code).
    pub rho_unconverged: usize,
    /// Smallest and largest spectral radius used.
    pub rho_min: f64,
    /// Largest spectral radius used.
    pub rho_max: f64,
    /// Largest stage count used.
    pub max_stages: usize,
    /// The step size the controller proposes next.
    pub h_next: f64,
    /// Every attempt in order.
    pub history: Vec<StepRecord>,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Launches of the persistent kernel ([`Controller::Device`]), each followed by one
    /// read of the device state; 0 on the other paths.
    pub device_launches: usize,
}

/// One line: steps accepted and rejected, evaluations of `f`, the most stages, the range
/// of the spectral radius and the seconds.
impl std::fmt::Display for Rock4Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} accepted and {} rejected steps, {} evaluations of f, up to {} stages, spectral radius {:.3e}..{:.3e}, {:.3} s",
            self.steps_accepted,
            self.steps_rejected,
            self.f_evals,
            self.max_stages,
            self.rho_min,
            self.rho_max,
            self.seconds
        )
    }
}

impl Rock4Report {
    /// Whether the integration reached `t_end` ([`StopReason::Finished`]).
    pub fn finished(&self) -> bool {
        self.reason == StopReason::Finished
    }

    /// The report before the first step from `t0`.
    pub(crate) fn start(t0: f64) -> Self {
        Rock4Report {
            reason: StopReason::Finished,
            final_time: t0,
            steps_accepted: 0,
            steps_rejected: 0,
            f_evals: 0,
            rho_evals: 0,
            rho_unconverged: 0,
            rho_min: f64::INFINITY,
            rho_max: 0.0,
            max_stages: 0,
            h_next: 0.0,
            history: Vec::new(),
            seconds: 0.0,
            device_launches: 0,
        }
    }
}

/// Checks what both paths check: a non-empty system, `y` of length `n`, finite
/// `t0 < t_end`, the tolerances, `h0`, `max_steps`.
pub(crate) fn validate(
    op: &'static str,
    n: usize,
    y_len: usize,
    t0: f64,
    t_end: f64,
    o: &Rock4Options,
) -> Result<()> {
    let invalid = |reason: String| Error::InvalidArgument { op, reason };
    if n == 0 {
        return Err(Error::Empty {
            op,
            what: "the system (rhs.dim() = 0)",
        });
    }
    check_len(op, "y", n, y_len)?;
    if !(t0.is_finite() && t_end.is_finite() && t_end > t0) {
        return Err(invalid(format!(
            "need finite t0 < t_end, got t0 = {t0}, t_end = {t_end}"
        )));
    }
    if !(o.rtol.is_finite() && o.rtol > 10.0 * driver::UROUND) {
        return Err(invalid(format!(
            "rtol must be finite and > 1e-15, got {}",
            o.rtol
        )));
    }
    if !(o.atol.is_finite() && o.atol > 0.0) {
        return Err(invalid(format!(
            "atol must be finite and > 0, got {}",
            o.atol
        )));
    }
    match o.h0 {
        Some(h) if !(h.is_finite() && h >= 10.0 * driver::UROUND && h <= t_end - t0) => {
            return Err(invalid(format!(
                "h0 must lie in [1e-15, t_end - t0 = {}], got {h}",
                t_end - t0
            )));
        }
        None if o.step_control == StepControl::Fixed => {
            return Err(invalid("fixed steps need h0".into()));
        }
        _ => {}
    }
    if o.max_steps == 0 {
        return Err(invalid("max_steps must be at least 1".into()));
    }
    if o.attempts_per_launch == 0 {
        return Err(invalid("attempts_per_launch must be at least 1".into()));
    }
    Ok(())
}

/// The end of both paths' integrations: `Ok(report)` when it reached `t_end` or the
/// step budget, [`Error::IntegrationFailed`] (with the report) when the step size fell
/// below the smallest allowed, a message with the time reached, the last step, its error
/// estimate and the spectral radius.
pub(crate) fn finish(
    op: &'static str,
    t0: f64,
    t_end: f64,
    report: Rock4Report,
) -> Result<Rock4Report> {
    if report.reason != StopReason::StepTooSmall {
        return Ok(report);
    }
    let last = report.history.last();
    let step = last.map_or(String::new(), |l| {
        format!(
            "; the last attempt from t = {} with h = {:e} had the error estimate {:e}",
            l.t, l.h, l.err
        )
    });
    let cause = match last {
        Some(l) if !l.err.is_finite() => {
            "f(t, y) produced NaN or infinity (the problem's data or solution overflows)"
        }
        _ => {
            "the problem is too stiff for the tolerances (see the spectral radius) or not smooth enough near this time"
        }
    };
    let reason = format!(
        "the integration failed at t = {} of [{t0}, {t_end}]: the step size fell below the smallest allowed (10 uround = {:e}, or t + h == t) after {} accepted and {} rejected steps{step}; spectral radius up to {:e}: {cause}",
        report.final_time,
        10.0 * driver::UROUND,
        report.steps_accepted,
        report.steps_rejected,
        report.rho_max,
    );
    Err(Error::IntegrationFailed {
        op,
        reason,
        report: Box::new(report),
    })
}

/// `Ok` when `vectors` vectors of `n` `f64` (the integration's workspace) fit what the
/// host may allocate, else [`Error::OutOfHostMemory`] naming `n`.
pub(crate) fn check_workspace(n: usize, vectors: usize) -> Result<String> {
    let what = format!("the ROCK4 workspace ({vectors} vectors of n = {n} unknowns)");
    crate::alloc::check_host_bytes(
        &what,
        crate::alloc::bytes_of(n as u128 * vectors as u128, 8),
    )?;
    Ok(what)
}

/// A problem's spectral-radius bound, checked finite and non-negative.
pub(crate) fn check_bound(op: &'static str, t: f64, b: f64) -> Result<f64> {
    if b.is_finite() && b >= 0.0 {
        Ok(b)
    } else {
        Err(Error::InvalidArgument {
            op,
            reason: format!("the spectral-radius bound at t = {t} is {b}"),
        })
    }
}

/// The right-hand side `y' = f(t, y)` on one GPU: the device twin of [`Rhs`], shaped like
/// [`crate::krylov::DeviceLinOp`]. Work is queued on the problem's stream ([`DeviceRhs::gpu`]).
///
/// An implementor writes `dim`, `gpu` and [`DeviceRhs::eval_unchecked`]; the provided
/// [`DeviceRhs::stage_unchecked`] (one recurrence stage: an evaluation and an element-wise
/// kernel) can be replaced by a fused kernel, as the stencil problems of [`problems`]
/// do, so that a stage reads two vectors and writes one.
pub trait DeviceRhs {
    /// Number of equations `n`.
    fn dim(&self) -> usize;
    /// The device (and stream) the problem lives on.
    fn gpu(&self) -> &Gpu;
    /// `dy <- f(t, y)`; lengths and devices are already checked. Must not synchronise
    /// (the integrator queues a whole step without waiting).
    fn eval_unchecked(
        &self,
        t: f64,
        y: &DeviceView<'_, f64>,
        dy: &mut DeviceViewMut<'_, f64>,
    ) -> Result<()>;
    /// `dy <- f(t, y)`. Errors: lengths other than [`DeviceRhs::dim`], operands on
    /// another device.
    fn eval(&self, t: f64, y: &DeviceView<'_, f64>, dy: &mut DeviceViewMut<'_, f64>) -> Result<()> {
        check_len("DeviceRhs::eval", "y", self.dim(), y.len())?;
        check_len("DeviceRhs::eval", "dy", self.dim(), dy.len())?;
        for (what, gpu) in [("y", y.gpu()), ("dy", dy.gpu())] {
            check_device("DeviceRhs::eval", what, self.gpu(), gpu)?;
        }
        self.eval_unchecked(t, y, dy)
    }
    /// One recurrence stage `out <- ha f(t, g1) + (1 + c) g1 - c g2`, where `g2` is
    /// `Some(g_{j-2})` or `None` for `out` itself (updated in place); `scratch` is a
    /// work vector of length `n` the default implementation stores `f(t, g1)` in.
    /// Lengths and devices are already checked.
    #[allow(clippy::too_many_arguments)]
    fn stage_unchecked(
        &self,
        t: f64,
        ha: f64,
        c: f64,
        g1: &DeviceView<'_, f64>,
        g2: Option<&DeviceView<'_, f64>>,
        out: &mut DeviceViewMut<'_, f64>,
        scratch: &mut DeviceViewMut<'_, f64>,
    ) -> Result<()> {
        self.eval_unchecked(t, g1, scratch)?;
        gpu::recurrence(ha, c, &*scratch, g1, g2, out)
    }
    /// An upper bound of the spectral radius of `df/dy` at `(t, y)`, if the problem knows
    /// one (computed on the device; returning it may wait for the stream). `None`: the
    /// integrator estimates it by power iteration.
    fn spectral_radius_bound(&self, _t: f64, _y: &DeviceView<'_, f64>) -> Result<Option<f64>> {
        Ok(None)
    }
    /// The problem as one of the built-in stencils, which the persistent kernel of
    /// [`Controller::Device`] evaluates itself; `None` (the default) for any other
    /// problem, which then runs with [`Controller::Host`].
    fn stencil(&self) -> Option<gpu::DeviceStencil> {
        None
    }
}
