//! The step-size logic of ROCK4 on the host: start-up step, end of interval,
//! spectral-radius refresh, degree selection, controller, accept/reject. The arithmetic
//! of each decision is written once in `ferrocuda_kernels::rock4` ([`Control`],
//! `begin_attempt`, `stages_needed`, `finish_attempt`, ...) and shared with the device
//! controller of the persistent kernel ([`super::gpu`]). A
//! [`Backend`] (CPU vectors or device buffers) owns the vectors and does the vector
//! work of one attempt; the driver sees one scalar per attempt (the error norm), so the
//! CPU and the GPU take the same decisions from the same errors.

use std::time::Instant;

use super::coeffs::{Degree, tables};
use super::{Rock4Options, Rock4Report, StepControl, StepRecord, StopReason};
use crate::error::Result;

use ferrocuda_kernels::rock4::{self as k, Control};
pub(crate) use ferrocuda_kernels::rock4::{SQRTU, UROUND};

/// The vector side of one integration: the current solution `y`, `fy = f(t, y)`, and
/// the candidate `y_new`, `k5 = f(t + h, y_new)` of the last attempt.
pub(crate) trait Backend {
    /// `fy <- f(t, y)`.
    fn eval_initial(&mut self, t: f64) -> Result<()>;
    /// A spectral-radius estimate at `(t, y)` (bound or power iteration); counts
    /// estimates and unconverged power iterations in `report`.
    fn estimate_rho(&mut self, t: f64, report: &mut Rock4Report) -> Result<f64>;
    /// The RMS of the start-up probe `((f(t + h, y + h fy) - fy) / (atol + rtol |y|))`.
    fn probe(&mut self, t: f64, h: f64, rtol: f64, atol: f64) -> Result<f64>;
    /// One attempt from `(t, y, fy)`: fills `y_new`, `k5`, returns the weighted error.
    fn attempt(&mut self, deg: &Degree<'_>, t: f64, h: f64, atol: f64, rtol: f64) -> Result<f64>;
    /// `y <- y_new`, `fy <- k5` (an accepted step).
    fn accept(&mut self) -> Result<()>;
    /// Evaluations of `f` so far.
    fn f_evals(&self) -> usize;
}

/// Integrates from `t0` to `t_end` (inputs already validated); the backend holds `y`.
pub(crate) fn run(
    b: &mut impl Backend,
    t0: f64,
    t_end: f64,
    o: &Rock4Options,
) -> Result<Rock4Report> {
    let start = Instant::now();
    let tab = tables();
    let fixed = o.step_control == StepControl::Fixed;
    let mut report = Rock4Report::start(t0);
    b.eval_initial(t0)?;

    let span = t_end - t0;
    let mut c = match o.h0 {
        Some(h) => Control::new(t0, h),
        None => {
            // rkc_init_dt.
            let rho = b.estimate_rho(t0, &mut report)?;
            let (h, hmin) = k::initial_trial_step(rho, t0, span);
            let est = h * b.probe(t0, h, o.rtol, o.atol)?;
            let mut c = Control::new(t0, k::initial_step(h, hmin, span, est));
            c.rho = rho;
            c.rho_current = 1;
            c
        }
    };

    loop {
        match k::begin_attempt(&mut c, t_end, o.max_steps as u64) {
            k::GO => {}
            k::STEP_TOO_SMALL => {
                report.reason = StopReason::StepTooSmall;
                break;
            }
            _ => {
                report.reason = StopReason::MaxSteps;
                break;
            }
        }
        if k::needs_rho(&c, o.jacobian_constant) {
            if c.rho_current == 0 {
                c.rho = b.estimate_rho(c.t, &mut report)?;
            }
            c.rho_known = 1;
            report.rho_min = report.rho_min.min(c.rho);
            report.rho_max = report.rho_max.max(c.rho);
        }
        c.rho_current = 0;

        let m0 = k::stages_needed(&mut c);
        let deg = tab.degree(k::degree_index(m0, |i| tab.ms[i]));
        report.max_stages = report.max_stages.max(deg.stages());

        let (t, h, rho) = (c.t, c.h, c.rho);
        let err = b.attempt(&deg, t, h, o.atol, o.rtol)?;
        let out = k::finish_attempt(&mut c, err, t_end, fixed);
        let accepted = out & k::ACCEPTED != 0;
        report.history.push(StepRecord {
            t,
            h,
            stages: deg.stages(),
            rho,
            err,
            accepted,
        });
        report.h_next = c.h_next;
        if accepted {
            report.steps_accepted += 1;
            b.accept()?;
        } else {
            report.steps_rejected += 1;
        }
        o.progress.report(thousandths(c.t, t0, span), 1000);
        if out & k::DONE != 0 {
            break;
        }
    }
    let t = c.t;
    report.final_time = t;
    report.f_evals = b.f_evals();
    if report.rho_min == f64::INFINITY {
        report.rho_min = 0.0;
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// How far `t` is into `[t0, t0 + span]`, in thousandths (for `Rock4Options::progress`).
pub(crate) fn thousandths(t: f64, t0: f64, span: f64) -> u64 {
    if span > 0.0 {
        ((t - t0) / span * 1000.0).clamp(0.0, 1000.0) as u64
    } else {
        1000
    }
}
