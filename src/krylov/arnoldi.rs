//! The host side of GMRES, shared by the CPU and GPU paths: the restart loop, the
//! Hessenberg matrix and its Givens rotations, the DCGS2 coefficient algebra and the
//! report. The vector work is behind [`Space`]; its CPU and GPU implementations do the
//! same operations in the same order. The small dense algebra runs in `Complex<f64>`
//! whatever the vector type.

use std::time::Instant;

use num_complex::Complex;

use super::{
    CyclePhases, DIVERGENCE_FACTOR, GmresOptions, GmresReport, GmresTiming, Orthogonalization,
    STAGNATION_CYCLES, STAGNATION_REDUCTION, StopReason,
};
use crate::error::{Error, Result};
use ferrocuda_kernels::krylov::cycle as cyc;

pub(crate) type C = Complex<f64>;

/// The vector work of one GMRES solve on one backend. Basis column `j` is `V_j`;
/// `w` is the work vector.
pub(crate) trait Space {
    /// `|b|`.
    fn rhs_norm(&mut self) -> Result<f64>;
    /// `x <- 0`.
    fn zero_solution(&mut self) -> Result<()>;
    /// `V_0 <- b - A x`; returns `|V_0|`.
    fn residual(&mut self) -> Result<f64>;
    /// `V_0 <- V_0 / beta` (MGS starts from a normalised vector).
    fn scale_first(&mut self, beta: f64) -> Result<()>;
    /// DCGS2 step `k`: where `apply`, `w <- A M^{-1} V_k`; then `(V_j^H V_k, V_j^H w)`
    /// for `j <= k` (with `w = V_k` where not `apply`). One host round trip.
    fn dots(&mut self, k: usize, apply: bool) -> Result<(Vec<C>, Vec<C>)>;
    /// DCGS2 update: `V_k <- (V_k - sum a_j V_j) inv_alpha`,
    /// `V_{k+1} <- (w - c V_k - sum b_j V_j) inv_alpha`, `j < k`.
    fn update(&mut self, k: usize, a: &[C], b: &[C], c: C, inv_alpha: f64) -> Result<()>;
    /// MGS step `k`: `w <- A M^{-1} V_k`, `h_j = V_j^H w`, `w <- w - h_j V_j` for `j <= k`
    /// in order, `V_{k+1} <- w / |w|`; returns `(h_0..=h_k, |w|^2)`. One round trip.
    fn mgs(&mut self, k: usize) -> Result<(Vec<C>, f64)>;
    /// The start of a pipelined cycle: `Z_0 <- A M^{-1} V_0` (`V_0` normalised).
    fn pipe_begin(&mut self) -> Result<()>;
    /// Pipelined step `k`: where `prev` holds coefficients `c_j` (`j < k`) and a factor
    /// `f`, first `V_k <- (Z_{k-1} - sum_j c_j V_j) f` and, unless `last`, `Z_k <- (q -
    /// sum_j c_j Z_j) f` (`q = A M^{-1} Z_{k-1}`, from the step before); then the dots
    /// ([`PipeDots`]; with `last` only `|V_k|^2`), with `q <- A M^{-1} Z_k` computed
    /// while they are summed where `ahead`. One reduction.
    fn pipe_step(
        &mut self,
        k: usize,
        prev: Option<(&[C], f64)>,
        last: bool,
        ahead: bool,
    ) -> Result<PipeDots>;
    /// `x <- x + M^{-1} sum_j y_j V_j`.
    fn update_solution(&mut self, y: &[C]) -> Result<()>;
    /// `x_best <- x`: keeps the iterate with the smallest true residual so far.
    fn save_best(&mut self) -> Result<()>;
    /// `x <- x_best`.
    fn restore_best(&mut self) -> Result<()>;
    /// Seconds spent in operator applications, preconditioner applications and
    /// orthogonalisation since the last call.
    fn take_times(&mut self) -> Result<[f64; 3]>;
    /// Machine epsilon of the vector type.
    fn epsilon(&self) -> f64;
    /// The phases of one-kernel cycles since the last call (zero where there were none).
    fn take_cycle_phases(&mut self) -> CyclePhases {
        CyclePhases::default()
    }
    /// Runs a whole cycle of at most `m` steps on the device where this backend does so
    /// (the GPU path on one device with [`super::CycleControl::Device`]): the same steps
    /// as the host's cycles, from `V_0 = r_0` (unnormalised) and `|r_0| = beta`; returns
    /// the cycle's final state ([`cyc`]). `None`: the host steps the cycle.
    fn device_cycle(
        &mut self,
        _orthogonalization: Orthogonalization,
        _m: usize,
        _beta: f64,
        _target: f64,
        _eps: f64,
    ) -> Result<Option<Vec<f64>>> {
        Ok(None)
    }
}

/// The reduction of a pipelined step `k` ([`Space::pipe_step`]), over the stored
/// (unnormalised) columns.
pub(crate) struct PipeDots {
    /// `V_j^H Z_k`, `j <= k`.
    pub d: Vec<C>,
    /// `|Z_k|^2`.
    pub zz: f64,
    /// `|V_k|^2`.
    pub vv: f64,
}

/// `v` as `Complex<f64>`.
pub(crate) use ferrocuda_kernels::krylov::cycle::from_scalar as to_c;
/// `c` rounded to `V` (the imaginary part dropped for real `V`).
pub(crate) use ferrocuda_kernels::krylov::cycle::to_scalar as from_c;

/// Progress callback: `(iteration, estimated relative residual)`.
pub(crate) type Progress<'a> = Option<&'a mut dyn FnMut(usize, f64)>;

/// The termination tests at a restart (module docs of [`super`]): the best iterate so
/// far and the progress of the smallest true residual over the last cycles.
struct Watch {
    /// Smallest true residual at a restart (of the saved iterate).
    best: f64,
    /// The smallest residual when the stagnation window started, and the cycle count then.
    anchor: f64,
    anchor_cycle: usize,
}

impl Watch {
    fn new() -> Self {
        Watch {
            best: f64::INFINITY,
            anchor: f64::INFINITY,
            anchor_cycle: 0,
        }
    }

    /// Takes the unconverged true residual `beta` of the current iterate after `cycles`
    /// cycles; saves the iterate when it is the best so far; returns why to stop
    /// (`stalled`: the last cycle found no new direction), if at all.
    fn restart(
        &mut self,
        space: &mut dyn Space,
        beta: f64,
        report: &GmresReport,
        stalled: bool,
        max_iter: usize,
    ) -> Result<Option<StopReason>> {
        if beta < self.best {
            self.best = beta;
            space.save_best()?;
        }
        if beta < (1.0 - STAGNATION_REDUCTION) * self.anchor {
            self.anchor = beta;
            self.anchor_cycle = report.cycles;
        }
        Ok(if beta > DIVERGENCE_FACTOR * report.initial_residual {
            Some(StopReason::Diverged)
        } else if stalled || report.cycles - self.anchor_cycle >= STAGNATION_CYCLES {
            Some(StopReason::Stagnation)
        } else if report.iterations >= max_iter {
            Some(StopReason::MaxIterations)
        } else {
            None
        })
    }
}

/// Runs GMRES(m) on `space`; `start`: when the solve was called (its set-up counts in
/// the total time).
pub(crate) fn run(
    space: &mut dyn Space,
    opts: &GmresOptions,
    mut progress: Progress<'_>,
    start: Instant,
) -> Result<GmresReport> {
    opts.validate()?;
    let mut report = GmresReport::empty();
    let mut times = [0.0; 3];
    let bnorm = space.rhs_norm()?;
    report.rhs_norm = bnorm;
    if bnorm == 0.0 {
        space.zero_solution()?;
        report.converged = true;
        report.reason = StopReason::ZeroRhs;
        report.timing.total = start.elapsed().as_secs_f64();
        report.timing.rest = report.timing.total;
        report.timing.setup = report.timing.total;
        return Ok(report);
    }
    let target = (opts.rtol * bnorm).max(opts.atol);
    let eps = space.epsilon();
    let mut watch = Watch::new();
    let mut stalled = false;
    let mut setup = 0.0;
    loop {
        let beta = space.residual()?;
        if report.cycles == 0 {
            setup = start.elapsed().as_secs_f64();
        }
        add_times(&mut times, space.take_times()?);
        if !beta.is_finite() {
            return Err(Error::InvalidArgument {
                op: "gmres",
                reason: format!(
                    "the residual became {beta} after {} iterations: NaN or infinity in the operator or preconditioner",
                    report.iterations
                ),
            });
        }
        if report.cycles == 0 {
            report.initial_residual = beta;
        }
        report.residual = beta;
        if beta <= target {
            report.converged = true;
            report.reason = StopReason::Converged;
            break;
        }
        if let Some(reason) = watch.restart(space, beta, &report, stalled, opts.max_iter)? {
            report.reason = reason;
            break;
        }
        report.cycles += 1;
        let m = opts.restart.min(opts.max_iter - report.iterations);
        let before = report.iterations;
        let mut cycle = Cycle {
            target,
            eps,
            bnorm,
            report: &mut report,
            progress: &mut progress,
        };
        let on_device = space.device_cycle(opts.orthogonalization, m, beta, target, eps)?;
        let (y, stalled_cycle) = match (on_device, opts.orthogonalization) {
            (Some(st), _) => finish_cycle(&st, 0, &mut cycle),
            (None, Orthogonalization::Mgs) => mgs_cycle(space, m, beta, &mut cycle)?,
            (None, Orthogonalization::Cgs2) => dcgs2_cycle(space, m, &mut cycle)?,
            (None, Orthogonalization::Pipelined) => pipelined_cycle(space, m, beta, &mut cycle)?,
        };
        if !y.is_empty() {
            space.update_solution(&y)?;
        }
        // The space stopped growing: one more true residual, then stop.
        stalled = stalled_cycle || report.iterations == before;
    }
    if !report.converged && watch.best < report.residual {
        space.restore_best()?;
        report.residual = watch.best;
    }
    add_times(&mut times, space.take_times()?);
    report.relative_residual = report.residual / bnorm;
    let total = start.elapsed().as_secs_f64();
    report.timing = GmresTiming {
        total,
        spmv: times[0],
        precond: times[1],
        orthogonalization: times[2],
        rest: (total - times.iter().sum::<f64>()).max(0.0),
        setup,
        cycle_phases: space.take_cycle_phases(),
    };
    Ok(report)
}

fn add_times(acc: &mut [f64; 3], t: [f64; 3]) {
    for (a, t) in acc.iter_mut().zip(t) {
        *a += t;
    }
}

/// What a cycle needs besides its space: the stopping rule (absolute residual `target`,
/// breakdown tolerance `eps`, `|b|` for relative figures) and where each step is recorded.
struct Cycle<'r, 'p, 'f> {
    target: f64,
    eps: f64,
    bnorm: f64,
    report: &'r mut GmresReport,
    progress: &'p mut Progress<'f>,
}

impl Cycle<'_, '_, '_> {
    /// Records one Arnoldi step's estimate.
    fn record(&mut self, estimate: f64) {
        self.report.iterations += 1;
        let rel = estimate / self.bnorm;
        self.report.history.push(rel);
        if let Some(p) = self.progress.as_mut() {
            p(self.report.iterations, rel);
        }
    }
}

/// The estimates a cycle recorded from step `from` on, into the report; then `y` and
/// whether the space stopped growing.
fn finish_cycle(st: &[f64], from: usize, cycle: &mut Cycle<'_, '_, '_>) -> (Vec<C>, bool) {
    for j in from..cyc::steps(st) {
        cycle.record(cyc::estimate(st, j));
    }
    let mut y = vec![C::new(0.0, 0.0); cyc::steps(st)];
    cyc::solve(st, &mut y);
    (y, cyc::stalled(st))
}

/// One MGS cycle of at most `m` steps, stepped from the host; returns `y` and whether
/// the space broke down.
fn mgs_cycle(
    space: &mut dyn Space,
    m: usize,
    beta: f64,
    cycle: &mut Cycle<'_, '_, '_>,
) -> Result<(Vec<C>, bool)> {
    space.scale_first(beta)?;
    let mut st = vec![0.0; cyc::state_len(m)];
    cyc::begin(&mut st, m, cycle.target, cycle.eps);
    cyc::mgs_begin(&mut st, beta);
    for k in 0..m {
        let (col, w2) = space.mgs(k)?;
        let go = cyc::mgs_step(&mut st, k, |i| col[i], w2);
        cycle.record(cyc::estimate(&st, k));
        if !go {
            break;
        }
    }
    Ok(finish_cycle(&st, cyc::steps(&st), cycle))
}

/// One delayed-CGS2 cycle of at most `m` steps, stepped from the host (the algebra:
/// [`cyc::dcgs2_step`]); returns `y` and whether the space broke down.
fn dcgs2_cycle(
    space: &mut dyn Space,
    m: usize,
    cycle: &mut Cycle<'_, '_, '_>,
) -> Result<(Vec<C>, bool)> {
    let mut st = vec![0.0; cyc::state_len(m)];
    cyc::begin(&mut st, m, cycle.target, cycle.eps);
    let mut b = vec![C::new(0.0, 0.0); m];
    for k in 0..=m {
        let (du, dw) = space.dots(k, k < m)?;
        let update = cyc::dcgs2_step(&mut st, k, |j| du[j], |j| dw[j], |j, v| b[j] = v);
        if k > 0 && cyc::steps(&st) == k {
            cycle.record(cyc::estimate(&st, k - 1));
        }
        match update {
            Some(u) => space.update(k, &du[..k], &b[..k], u.c, u.inv_alpha)?,
            None => break,
        }
    }
    Ok(finish_cycle(&st, cyc::steps(&st), cycle))
}

/// One pipelined cycle of at most `m` steps, stepped from the host (the algebra:
/// [`cyc::pipelined_column`]); returns `y` (for the stored columns) and whether the space
/// broke down. The stored `V_j`, `Z_j` are `v_j`, `z_j` over a scale `s_j` (`v_j = s_j
/// V_j`), measured by the pass that makes them: the update needs no exact norm, so
/// Pythagoras only scales it, and each Hessenberg column is finished a step later from
/// the measured norm.
fn pipelined_cycle(
    space: &mut dyn Space,
    m: usize,
    beta: f64,
    cycle: &mut Cycle<'_, '_, '_>,
) -> Result<(Vec<C>, bool)> {
    space.scale_first(beta)?;
    let mut st = vec![0.0; cyc::state_len(m)];
    cyc::begin(&mut st, m, cycle.target, cycle.eps);
    cyc::mgs_begin(&mut st, beta);
    space.pipe_begin()?;
    let mut scale = vec![1.0; m + 1];
    // Step k - 1's projections, alpha (the update's scale) and |z_{k-1}|.
    let mut prev: Option<(Vec<C>, f64, f64)> = None;
    // Whether this step finishes the cycle: its pass makes the last vector alone and no
    // operator runs ahead (at the restart length, or where the column before looked
    // like the end: Pythagoras' alpha gives its estimate a step early).
    let mut last = m == 0;
    for k in 0..=m {
        last |= k == m;
        let coef = prev.as_ref().map(|(h, alpha, _)| {
            let c: Vec<C> = (0..k).map(|j| h[j] * (scale[j] / scale[k - 1])).collect();
            (c, scale[k - 1] / alpha)
        });
        let dots = space.pipe_step(
            k,
            coef.as_ref().map(|(c, f)| (&c[..], *f)),
            last,
            !last && k + 1 < m,
        )?;
        if let Some((h, alpha, znorm)) = prev.take() {
            let nu = dots.vv.sqrt();
            scale[k] = 1.0 / nu;
            let go = cyc::pipelined_column(&mut st, k, |i| h[i], alpha * nu, znorm);
            cycle.record(cyc::estimate(&st, k - 1));
            if !go {
                break;
            }
        }
        if last {
            // The look ahead was wrong (the measured norm kept the cycle going): without
            // the next vector the cycle ends here, and the restart goes on.
            cyc::end(&mut st);
            break;
        }
        // Column k's projections and |z_k|, over the unit vectors.
        let h: Vec<C> = (0..=k).map(|j| dots.d[j] * (scale[j] * scale[k])).collect();
        let z2 = dots.zz * scale[k] * scale[k];
        let alpha2 = z2 - h.iter().map(|v| v.norm_sqr()).sum::<f64>();
        // Only a scale for the update (the next step measures the norm); never below the
        // subtraction's own rounding.
        let alpha = alpha2.max(16.0 * (k + 2) as f64 * cycle.eps * z2).sqrt();
        if !(alpha > 0.0 && alpha.is_finite()) {
            // Nothing left of z (or NaN): column k ends the cycle as a breakdown.
            cyc::pipelined_column(&mut st, k + 1, |i| h[i], 0.0, z2.sqrt());
            cycle.record(cyc::estimate(&st, k));
            break;
        }
        last = cyc::estimate_with(&st, |i| h[i], alpha) <= cycle.target;
        prev = Some((h, alpha, z2.sqrt()));
    }
    let (mut y, stalled) = finish_cycle(&st, cyc::steps(&st), cycle);
    for (yj, s) in y.iter_mut().zip(&scale) {
        *yj *= *s;
    }
    Ok((y, stalled))
}
