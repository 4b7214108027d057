//! The step-size logic of ROCK4, written once for both paths: start-up step, end of
//! interval, spectral-radius refresh, degree selection, controller, accept/reject. A
//! [`Backend`] (CPU vectors or device buffers) owns the vectors and does the vector
//! work of one attempt; the driver sees one scalar per attempt (the error norm), so the
//! CPU and the GPU take the same decisions from the same errors.

use std::time::Instant;

use super::coeffs::{Degree, MAX_STAGES, tables};
use super::{Rock4Options, Rock4Report, StepControl, StepRecord, StopReason};
use crate::error::Result;

/// Unit roundoff of the reference code (`uround = 1e-16`).
pub(crate) const UROUND: f64 = 1e-16;
/// `sqrt(uround)`, the power iteration's relative perturbation.
pub(crate) const SQRTU: f64 = 1e-8;

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
    let mut report = Rock4Report {
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
    };
    let mut t = t0;
    b.eval_initial(t)?;

    let mut rho = 0.0;
    let mut rho_current = false;

    let span = t_end - t0;
    let mut h = match o.h0 {
        Some(h) => h,
        None => {
            // rkc_init_dt.
            rho = b.estimate_rho(t, &mut report)?;
            rho_current = true;
            let hmax = span;
            let hmin = 10.0 * f64::EPSILON * t0.abs().max(hmax);
            let mut h = if rho * hmax > 1.0 { 1.0 / rho } else { hmax };
            h = h.max(hmin);
            let est = h * b.probe(t, h, o.rtol, o.atol)?;
            if 0.1 * h < hmax * est.sqrt() {
                (0.1 * h / est.sqrt()).max(hmin)
            } else {
                hmax
            }
        }
    };
    let h_fixed = h;

    let (mut facmax, mut errp, mut hp) = (5.0f64, 0.0f64, h);
    let (mut reject, mut last) = (false, false);
    let (mut told, mut nrej, mut nrho) = (0.0f64, 0usize, 0usize);
    let mut rho_known = false;
    let mut attempts = 0usize;

    loop {
        // End of interval, step too small.
        if 1.01 * h >= (t_end - t).abs() {
            h = (t_end - t).abs();
            last = true;
        }
        if h < 10.0 * UROUND || t + h == t {
            report.reason = StopReason::StepTooSmall;
            break;
        }
        if attempts == o.max_steps {
            report.reason = StopReason::MaxSteps;
            break;
        }
        attempts += 1;
        if nrho == 0 && !(o.jacobian_constant && rho_known) {
            if !rho_current {
                rho = b.estimate_rho(t, &mut report)?;
            }
            rho_known = true;
            report.rho_min = report.rho_min.min(rho);
            report.rho_max = report.rho_max.max(rho);
        }
        rho_current = false;

        // Stage selection (mdegre).
        let mut s0 = (((3.0 + h * rho) / 0.353).sqrt() as usize).saturating_add(1);
        if s0 > MAX_STAGES {
            h = 0.8 * (0.353 * (MAX_STAGES * MAX_STAGES) as f64 - 3.0) / rho;
            s0 = MAX_STAGES;
            last = false;
        }
        let m0 = s0.max(5) - 4;
        let deg = tab.degree_for(m0);
        report.max_stages = report.max_stages.max(deg.stages());

        let err = b.attempt(&deg, t, h, o.atol, o.rtol)?;
        report.history.push(StepRecord {
            t,
            h,
            stages: deg.stages(),
            rho,
            err,
            accepted: fixed || err < 1.0,
        });

        if fixed {
            report.steps_accepted += 1;
            t = if last { t_end } else { t + h };
            b.accept()?;
            nrho = (nrho + 2) % 10;
            report.h_next = h_fixed;
            if last {
                break;
            }
            h = h_fixed;
            continue;
        }

        // Controller.
        let mut fac = (1.0 / err).powf(0.25);
        if errp != 0.0 && !reject {
            let facp = errp.powf(0.25) * fac * fac * (h / hp);
            fac = fac.min(facp);
        }
        if reject {
            facmax = 1.0;
        }
        fac = facmax.min((0.8 * fac).max(0.1));
        let mut hnew = h * fac;

        if err < 1.0 {
            report.steps_accepted += 1;
            facmax = 2.0;
            t = if last { t_end } else { t + h };
            if reject {
                hnew = hnew.min(h);
                if t_end < t {
                    hnew = hnew.max(h);
                }
                reject = false;
                nrej = 0;
            }
            hp = h;
            h = hnew;
            nrho = (nrho + 2) % 10;
            b.accept()?;
            report.h_next = h;
            if last {
                break;
            }
            errp = err;
        } else {
            report.steps_rejected += 1;
            reject = true;
            last = false;
            h = 0.8 * hnew;
            if t == told {
                nrej += 1;
                if nrej == 10 {
                    h = 1e-5;
                }
            }
            told = t;
            nrho = if nrho != 0 { 0 } else { 1 };
            report.h_next = h;
        }
    }
    report.final_time = t;
    report.f_evals = b.f_evals();
    if report.rho_min == f64::INFINITY {
        report.rho_min = 0.0;
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
