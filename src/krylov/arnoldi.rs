//! The host side of GMRES, shared by the CPU and GPU paths: the restart loop, the
//! Hessenberg matrix and its Givens rotations, the DCGS2 coefficient algebra and the
//! report. The vector work is behind [`Space`]; its CPU and GPU implementations do the
//! same operations in the same order. The small dense algebra runs in `Complex<f64>`
//! whatever the vector type.

use std::time::Instant;

use num_complex::Complex;

use super::{
    DIVERGENCE_FACTOR, GmresOptions, GmresReport, GmresTiming, Orthogonalization,
    STAGNATION_CYCLES, STAGNATION_REDUCTION, StopReason,
};
use crate::error::{Error, Result};

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
}

/// Givens rotation `(c, s)` with `c` real that zeroes `b` in `(a, b)`: `r = c a + s b`,
/// `0 = -conj(s) a + c b`.
fn givens(a: C, b: C) -> (f64, C, C) {
    let (na, nb) = (a.norm(), b.norm());
    if nb == 0.0 {
        return (1.0, C::new(0.0, 0.0), a);
    }
    if na == 0.0 {
        let s = b.conj() / nb;
        return (0.0, s, C::new(nb, 0.0));
    }
    let norm = na.hypot(nb);
    let phase = a / na;
    let c = na / norm;
    let s = phase * b.conj() / norm;
    (c, s, phase * norm)
}

/// The least-squares state of one cycle: rotated columns, rotations and `g`.
struct LeastSquares {
    r: Vec<Vec<C>>,
    rot: Vec<(f64, C)>,
    g: Vec<C>,
}

impl LeastSquares {
    fn new(beta: f64) -> Self {
        LeastSquares {
            r: Vec::new(),
            rot: Vec::new(),
            g: vec![C::new(beta, 0.0)],
        }
    }

    /// Adds Hessenberg column `j` (`j + 2` entries); returns the new residual estimate.
    fn push(&mut self, mut col: Vec<C>) -> f64 {
        let j = self.r.len();
        for (i, &(c, s)) in self.rot.iter().enumerate() {
            let (a, b) = (col[i], col[i + 1]);
            col[i] = a * c + s * b;
            col[i + 1] = -s.conj() * a + b * c;
        }
        let (c, s, rr) = givens(col[j], col[j + 1]);
        col[j] = rr;
        col.truncate(j + 1);
        self.rot.push((c, s));
        let gj = self.g[j];
        self.g[j] = gj * c;
        self.g.push(-s.conj() * gj);
        self.r.push(col);
        self.g[j + 1].norm()
    }

    /// `y` solving `R y = g[..k]` (back substitution).
    fn solve(&self) -> Vec<C> {
        let k = self.r.len();
        let mut y = vec![C::new(0.0, 0.0); k];
        for i in (0..k).rev() {
            let mut s = self.g[i];
            for (j, yj) in y.iter().enumerate().skip(i + 1) {
                s -= self.r[j][i] * yj;
            }
            y[i] = if self.r[i][i] == C::new(0.0, 0.0) {
                C::new(0.0, 0.0)
            } else {
                s / self.r[i][i]
            };
        }
        y
    }
}

/// `v` as `Complex<f64>`.
pub(crate) fn to_c<V: crate::blas1::Element>(v: V) -> C {
    use ferrocuda_kernels::RealScalar;
    C::new(v.re().to_f64(), v.im().to_f64())
}

/// `c` rounded to `V` (the imaginary part dropped for real `V`).
pub(crate) fn from_c<V: crate::blas1::Element>(c: C) -> V {
    use ferrocuda_kernels::RealScalar;
    V::from_parts(V::Real::from_f64(c.re), V::Real::from_f64(c.im))
}

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

/// Runs GMRES(m) on `space`.
pub(crate) fn run(
    space: &mut dyn Space,
    opts: &GmresOptions,
    mut progress: Progress<'_>,
) -> Result<GmresReport> {
    opts.validate()?;
    let start = Instant::now();
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
        return Ok(report);
    }
    let target = (opts.rtol * bnorm).max(opts.atol);
    let eps = space.epsilon();
    let mut watch = Watch::new();
    let mut stalled = false;
    loop {
        let beta = space.residual()?;
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
        let (y, stalled_cycle) = match opts.orthogonalization {
            Orthogonalization::Mgs => mgs_cycle(space, m, beta, &mut cycle)?,
            Orthogonalization::Cgs2 => dcgs2_cycle(space, m, &mut cycle)?,
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

/// One MGS cycle of at most `m` steps; returns `y` and whether the space broke down.
fn mgs_cycle(
    space: &mut dyn Space,
    m: usize,
    beta: f64,
    cycle: &mut Cycle<'_, '_, '_>,
) -> Result<(Vec<C>, bool)> {
    let (target, eps) = (cycle.target, cycle.eps);
    space.scale_first(beta)?;
    let mut ls = LeastSquares::new(beta);
    for k in 0..m {
        let (mut col, w2) = space.mgs(k)?;
        let hn = w2.max(0.0).sqrt();
        let hnorm = col.iter().map(|h| h.norm_sqr()).sum::<f64>().sqrt();
        col.push(C::new(hn, 0.0));
        let est = ls.push(col);
        cycle.record(est);
        if !est.is_finite() {
            break;
        }
        let breakdown = hn <= 16.0 * eps * hnorm;
        if est <= target || breakdown {
            return Ok((ls.solve(), breakdown && est > target));
        }
    }
    Ok((ls.solve(), false))
}

/// One delayed-CGS2 cycle of at most `m` steps (module docs of `ferrocuda_kernels::krylov`
/// for the vector algebra); returns `y` and whether the space broke down.
///
/// Step `k` holds `q_0..q_{k-1}` and the once-projected `u = V_k`; it gets
/// `s = Q^H u`, `|u|^2`, `t = Q^H w`, `u^H w` (`w = A M^{-1} u`) from one pass, so
/// `alpha = |u - Q s|`, column `k - 1` of the Hessenberg matrix is `h'_{k-1} + s` over
/// `alpha`, and `A q_k = (w - A Q s) / alpha` gives the next provisional column
/// `h'_k = ([t; c] - H s) / alpha`, `c = q_k^H w = (u^H w - s^H t) / alpha`.
fn dcgs2_cycle(
    space: &mut dyn Space,
    m: usize,
    cycle: &mut Cycle<'_, '_, '_>,
) -> Result<(Vec<C>, bool)> {
    let (target, eps) = (cycle.target, cycle.eps);
    let mut hess: Vec<Vec<C>> = Vec::new(); // finished, unrotated columns
    let mut ls: Option<LeastSquares> = None;
    let mut pending: Vec<C> = Vec::new(); // h'_{k-1}
    for k in 0..=m {
        let (du, dw) = space.dots(k, k < m)?;
        let s = &du[..k];
        let uu = du[k].re;
        let ss: f64 = s.iter().map(|v| v.norm_sqr()).sum();
        let alpha2 = uu - ss;
        // NaN counts as a breakdown too.
        let breakdown =
            alpha2.partial_cmp(&((16.0 * eps).powi(2) * uu)) != Some(std::cmp::Ordering::Greater);
        let alpha = alpha2.max(0.0).sqrt();
        if k == 0 {
            ls = Some(LeastSquares::new(alpha));
        } else {
            let mut col: Vec<C> = pending.iter().zip(s).map(|(h, s)| h + s).collect();
            col.push(C::new(alpha, 0.0));
            hess.push(col.clone());
            let lsq = ls.as_mut().expect("set at k = 0");
            let est = lsq.push(col);
            cycle.record(est);
            if est <= target || breakdown || k == m || !est.is_finite() {
                return Ok((lsq.solve(), breakdown && est > target));
            }
        }
        if breakdown {
            // Only at k = 0 with a zero residual, which the caller excludes.
            return Ok((Vec::new(), true));
        }
        let t = &dw[..k];
        let uw = dw[k];
        let st: C = s.iter().zip(t).map(|(s, t)| s.conj() * t).sum();
        let c = (uw - st) / alpha;
        // H s over the finished columns (column j has j + 2 entries).
        let mut hs = vec![C::new(0.0, 0.0); k + 1];
        for (j, col) in hess.iter().enumerate() {
            for (i, h) in col.iter().enumerate() {
                hs[i] += h * s[j];
            }
        }
        pending = (0..=k)
            .map(|i| {
                let tc = if i < k { t[i] } else { c };
                (tc - hs[i]) / alpha
            })
            .collect();
        let cu = c / alpha;
        let bcoef: Vec<C> = t.iter().zip(s).map(|(t, s)| t - cu * s).collect();
        space.update(k, s, &bcoef, cu, 1.0 / alpha)?;
    }
    // The loop returns at k = m at the latest.
    Ok((Vec::new(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn givens_zeroes_the_second_entry() {
        for (a, b) in [
            (C::new(3.0, 0.0), C::new(4.0, 0.0)),
            (C::new(1.0, 2.0), C::new(-0.5, 0.7)),
            (C::new(0.0, 0.0), C::new(2.0, -1.0)),
        ] {
            let (c, s, r) = givens(a, b);
            let top = a * c + s * b;
            let bottom = -s.conj() * a + b * c;
            assert!((top - r).norm() < 1e-14, "{a} {b}");
            assert!(bottom.norm() < 1e-14, "{a} {b}");
            assert!((c * c + s.norm_sqr() - 1.0).abs() < 1e-14);
        }
    }
}
