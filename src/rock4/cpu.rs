//! ROCK4 on the CPU: rayon over fixed chunks of [`CHUNK`] elements, per-element math
//! from `ferrocuda_kernels::rock4` in FMA frames ([`crate::cpu_dispatch`]). The error
//! norm sums each chunk in order, then the chunk sums in order: the result depends on
//! `n` alone, so one thread and all cores give the same bits.

use std::ops::Range;

use rayon::prelude::*;

use super::coeffs::Degree;
use super::driver::{self, SQRTU, UROUND};
use super::{Rhs, Rock4Options, Rock4Report, SpectralRadius, Threads};
use crate::alloc;
use crate::blas1::cpu::CHUNK;
use crate::cpu_dispatch::fma_kernel;
use crate::error::{Error, Result, check_len};
use ferrocuda_kernels::rock4 as k;

fma_kernel! {
fn first_chunk[](ha1: f64, y: &[f64], f: &[f64], out: &mut [f64]) {
    for ((o, &y), &f) in out.iter_mut().zip(y).zip(f) {
        *o = k::recurrence_first(y, ha1, f);
    }
}
}

fma_kernel! {
/// `out <- g_j` from `g_{j-1}` and `g_{j-2}` (in `out`).
fn recurrence_inplace_chunk[](ha: f64, c: f64, f: &[f64], g1: &[f64], out: &mut [f64]) {
    for ((o, &f), &g1) in out.iter_mut().zip(f).zip(g1) {
        *o = k::recurrence_step(ha, f, c, g1, *o);
    }
}
}

fma_kernel! {
fn recurrence_chunk[](ha: f64, c: f64, f: &[f64], g1: &[f64], g2: &[f64], out: &mut [f64]) {
    for (((o, &f), &g1), &g2) in out.iter_mut().zip(f).zip(g1).zip(g2) {
        *o = k::recurrence_step(ha, f, c, g1, g2);
    }
}
}

fma_kernel! {
fn finish2_chunk[](ha21: f64, u: &[f64], k1: &[f64], out: &mut [f64]) {
    for ((o, &u), &k1) in out.iter_mut().zip(u).zip(k1) {
        *o = k::finish2(u, ha21, k1);
    }
}
}

fma_kernel! {
fn finish3_chunk[](ha31: f64, ha32: f64, u: &[f64], k1: &[f64], k2: &[f64], out: &mut [f64]) {
    for (((o, &u), &k1), &k2) in out.iter_mut().zip(u).zip(k1).zip(k2) {
        *o = k::finish3(u, ha31, k1, ha32, k2);
    }
}
}

fma_kernel! {
fn finish4_chunk[](ha: [f64; 3], u: &[f64], k1: &[f64], k2: &[f64], k3: &[f64], out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = k::finish4(u[i], ha, k1[i], k2[i], k3[i]);
    }
}
}

fma_kernel! {
fn solution_chunk[](hb: [f64; 4], u: &[f64], k1: &[f64], k2: &[f64], k3: &[f64], k4: &[f64], out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = k::finish_solution(u[i], hb, k1[i], k2[i], k3[i], k4[i]);
    }
}
}

fma_kernel! {
fn error_chunk[](hd: [f64; 4], hbe5: f64, ks: [&[f64]; 5], y: &[f64], atol: f64, rtol: f64) -> f64 {
    let mut sum = 0.0;
    for (i, &yi) in y.iter().enumerate() {
        sum += k::error_term(hd, hbe5, ks[0][i], ks[1][i], ks[2][i], ks[3][i], ks[4][i], yi, atol, rtol);
    }
    sum
}
}

fma_kernel! {
/// `sum (a_i - b_i)^2`.
fn diff_sq_chunk[](a: &[f64], b: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&a, &b) in a.iter().zip(b) {
        sum = k::diff_sq_step(sum, a, b);
    }
    sum
}
}

fma_kernel! {
/// `sum a_i^2`.
fn sq_chunk[](a: &[f64]) -> f64 {
    let mut sum = 0.0;
    for &a in a {
        sum = a.mul_add(a, sum);
    }
    sum
}
}

fma_kernel! {
/// `out = y + scale (a - b)`.
fn shift_chunk[](scale: f64, y: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = k::shift(scale, y[i], a[i], b[i]);
    }
}
}

/// Vectors shorter than this run their chunks on the calling thread: a stage over a
/// few chunks costs less than waking the pool (measured in run 35: all cores were
/// slower than one for N = 144..240). Same chunks either way, so the same bits.
pub(crate) const PARALLEL_FROM: usize = 8 * CHUNK;

/// `f(range, chunk)` over `out` in chunks of [`CHUNK`].
fn par_map(out: &mut [f64], f: impl Fn(Range<usize>, &mut [f64]) + Sync) {
    let each = |(i, c): (usize, &mut [f64])| {
        let lo = i * CHUNK;
        f(lo..lo + c.len(), c)
    };
    if out.len() < PARALLEL_FROM {
        out.chunks_mut(CHUNK).enumerate().for_each(each);
    } else {
        out.par_chunks_mut(CHUNK).enumerate().for_each(each);
    }
}

/// `sum_chunks f(range)`, the chunk sums added in order.
fn par_sum(n: usize, f: impl Fn(Range<usize>) -> f64 + Sync) -> f64 {
    let part = |i: usize| f(i * CHUNK..n.min((i + 1) * CHUNK));
    let parts: Vec<f64> = if n < PARALLEL_FROM {
        (0..n.div_ceil(CHUNK)).map(part).collect()
    } else {
        (0..n.div_ceil(CHUNK)).into_par_iter().map(part).collect()
    };
    parts.into_iter().fold(0.0, |a, b| a + b)
}

fn norm(x: &[f64]) -> f64 {
    par_sum(x.len(), |r| sq_chunk(&x[r])).sqrt()
}

fn diff_norm(a: &[f64], b: &[f64]) -> f64 {
    par_sum(a.len(), |r| diff_sq_chunk(&a[r.clone()], &b[r])).sqrt()
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "rock4::cpu::integrate",
        reason,
    }
}

/// The right-hand side with an evaluation counter and a non-finite check of nothing
/// (the error estimate catches NaN: `err < 1` is false).
struct Counted<'a, R: ?Sized> {
    rhs: &'a R,
    evals: usize,
}

impl<R: Rhs + ?Sized> Counted<'_, R> {
    fn eval(&mut self, t: f64, y: &[f64], dy: &mut [f64]) -> Result<()> {
        self.evals += 1;
        self.rhs.eval(t, y, dy)
    }
}

/// The result of one power iteration.
#[derive(Debug, Clone, Copy)]
pub struct PowerEstimate {
    /// The estimate `1.2 |f(y + dz) - f(y)| / |dz|` at the last iteration.
    pub rho: f64,
    /// Whether two successive estimates agreed within 5 %.
    pub converged: bool,
    /// Iterations made (evaluations of `f`, plus one for the start vector when no
    /// previous vector was given).
    pub iterations: usize,
}

/// Abdulle's nonlinear power iteration (`rockfrho`): estimates the spectral radius of
/// `df/dy` at `(t, y)` with `fy = f(t, y)`. `v` is the saved direction of the previous
/// converged call (updated on convergence); empty: start from `f(t, fy)`. `z`, `fz` are
/// work vectors of length `n`.
#[allow(clippy::too_many_arguments)]
fn power_iteration<R: Rhs + ?Sized>(
    f: &mut Counted<'_, R>,
    t: f64,
    y: &[f64],
    fy: &[f64],
    v: &mut Vec<f64>,
    z: &mut [f64],
    fz: &mut [f64],
) -> Result<PowerEstimate> {
    let n = y.len();
    let mut iterations = 0;
    if v.len() == n {
        z.copy_from_slice(v);
    } else {
        f.eval(t, fy, z)?;
        iterations += 1;
    }
    let ynor = norm(y);
    let znor = norm(z);
    let dz;
    if ynor != 0.0 && znor != 0.0 {
        dz = ynor * SQRTU;
        let q = dz / znor;
        par_map(z, |r, c| {
            for (zi, &yi) in c.iter_mut().zip(&y[r]) {
                *zi = q.mul_add(*zi, yi);
            }
        });
    } else if ynor != 0.0 {
        dz = ynor * SQRTU;
        par_map(z, |r, c| {
            for (zi, &yi) in c.iter_mut().zip(&y[r]) {
                *zi = yi * (1.0 + SQRTU);
            }
        });
    } else if znor != 0.0 {
        dz = UROUND;
        let q = dz / znor;
        z.par_iter_mut().for_each(|zi| *zi *= q);
    } else {
        dz = UROUND;
        z.par_iter_mut().for_each(|zi| *zi = UROUND);
    }
    let mut sig = 0.0;
    for iter in 1..=50 {
        f.eval(t, z, fz)?;
        iterations += 1;
        let d = diff_norm(fz, fy);
        let sig_old = sig;
        sig = 1.2 * d / dz;
        if iter >= 2 && (sig - sig_old).abs() <= 0.05 * sig {
            v.resize(n, 0.0);
            par_map(v, |r, c| {
                for ((vi, &zi), &yi) in c.iter_mut().zip(&z[r.clone()]).zip(&y[r]) {
                    *vi = zi - yi;
                }
            });
            return Ok(PowerEstimate {
                rho: sig,
                converged: true,
                iterations,
            });
        }
        if d != 0.0 {
            let q = dz / d;
            par_map(z, |r, c| {
                shift_chunk(q, &y[r.clone()], &fz[r.clone()], &fy[r], c)
            });
        } else {
            let kk = iter % n;
            if z[kk] != y[kk] {
                z[kk] = y[kk] - (z[kk] - y[kk]);
            }
        }
    }
    Ok(PowerEstimate {
        rho: sig,
        converged: false,
        iterations,
    })
}

/// The spectral radius of `df/dy` at `(t, y)` by the power iteration of the integrator
/// (from `f(t, f(t, y))`, as on the first step). Errors: `y.len() != rhs.dim()`, and
/// whatever `rhs` returns.
pub fn spectral_radius<R: Rhs + ?Sized>(rhs: &R, t: f64, y: &[f64]) -> Result<PowerEstimate> {
    let n = rhs.dim();
    check_len("rock4::cpu::spectral_radius", "y", n, y.len())?;
    let mut f = Counted { rhs, evals: 0 };
    let mut fy = vec![0.0; n];
    f.eval(t, y, &mut fy)?;
    let (mut z, mut fz) = (vec![0.0; n], vec![0.0; n]);
    power_iteration(&mut f, t, y, &fy, &mut Vec::new(), &mut z, &mut fz)
}

/// Work vectors of one step.
struct Work {
    ga: Vec<f64>,
    gb: Vec<f64>,
    k1: Vec<f64>,
    k2: Vec<f64>,
    k3: Vec<f64>,
    k4: Vec<f64>,
    y_new: Vec<f64>,
    k5: Vec<f64>,
}

/// One ROCK4 attempt from `(t, y, fy)` with step `h` and degree `deg`: fills
/// `w.y_new`, `w.k5 = f(t + h, y_new)` and returns the weighted error.
#[allow(clippy::too_many_arguments)]
fn attempt<R: Rhs + ?Sized>(
    f: &mut Counted<'_, R>,
    deg: &Degree<'_>,
    t: f64,
    h: f64,
    y: &[f64],
    fy: &[f64],
    w: &mut Work,
    atol: f64,
    rtol: f64,
) -> Result<f64> {
    let n = y.len();
    let a1 = deg.a1();
    par_map(&mut w.ga, |r, c| {
        first_chunk(h * a1, &y[r.clone()], &fy[r], c)
    });
    let (mut t1, mut t2) = (t + h * a1, t);
    for j in 2..=deg.m {
        let (a, c) = deg.ac(j);
        f.eval(t1, &w.ga, &mut w.k1)?;
        let (ga, fz) = (&w.ga, &w.k1);
        if j == 2 {
            par_map(&mut w.gb, |r, o| {
                recurrence_chunk(h * a, c, &fz[r.clone()], &ga[r.clone()], &y[r], o)
            });
        } else {
            par_map(&mut w.gb, |r, o| {
                recurrence_inplace_chunk(h * a, c, &fz[r.clone()], &ga[r], o)
            });
        }
        std::mem::swap(&mut w.ga, &mut w.gb);
        let tn = (1.0 + c).mul_add(t1, h.mul_add(a, -c * t2));
        (t2, t1) = (t1, tn);
    }
    // Finishing procedure from u = g_m at tau = t_m.
    let tau = t1;
    let [a21, a31, a32, a41, a42, a43] = *deg.fpa;
    let u = &w.ga;
    f.eval(tau, u, &mut w.k1)?;
    let k1 = &w.k1;
    par_map(&mut w.gb, |r, o| {
        finish2_chunk(h * a21, &u[r.clone()], &k1[r], o)
    });
    f.eval(h.mul_add(a21, tau), &w.gb, &mut w.k2)?;
    let k2 = &w.k2;
    par_map(&mut w.gb, |r, o| {
        finish3_chunk(h * a31, h * a32, &u[r.clone()], &k1[r.clone()], &k2[r], o)
    });
    f.eval(h.mul_add(a31 + a32, tau), &w.gb, &mut w.k3)?;
    let k3 = &w.k3;
    let ha4 = [h * a41, h * a42, h * a43];
    par_map(&mut w.gb, |r, o| {
        finish4_chunk(
            ha4,
            &u[r.clone()],
            &k1[r.clone()],
            &k2[r.clone()],
            &k3[r],
            o,
        )
    });
    f.eval(h.mul_add(a41 + a42 + a43, tau), &w.gb, &mut w.k4)?;
    let k4 = &w.k4;
    let b = *deg.fpb;
    let hb = [h * b[0], h * b[1], h * b[2], h * b[3]];
    par_map(&mut w.y_new, |r, o| {
        solution_chunk(
            hb,
            &u[r.clone()],
            &k1[r.clone()],
            &k2[r.clone()],
            &k3[r.clone()],
            &k4[r],
            o,
        )
    });
    f.eval(t + h, &w.y_new, &mut w.k5)?;
    let be = *deg.fpbe;
    let hd = [
        h * (be[0] - b[0]),
        h * (be[1] - b[1]),
        h * (be[2] - b[2]),
        h * (be[3] - b[3]),
    ];
    let (k5, y_new) = (&w.k5, &w.y_new);
    let sum = par_sum(n, |r| {
        error_chunk(
            hd,
            h * be[4],
            [
                &k1[r.clone()],
                &k2[r.clone()],
                &k3[r.clone()],
                &k4[r.clone()],
                &k5[r.clone()],
            ],
            &y_new[r],
            atol,
            rtol,
        )
    });
    Ok((sum / n as f64).sqrt())
}

fn validate<R: Rhs + ?Sized>(
    rhs: &R,
    t0: f64,
    t_end: f64,
    y: &[f64],
    o: &Rock4Options,
) -> Result<()> {
    super::validate("rock4::cpu::integrate", rhs.dim(), y.len(), t0, t_end, o)?;
    if let Some(i) = y.iter().position(|v| !v.is_finite()) {
        return Err(invalid(format!("y[{i}] = {} is not finite", y[i])));
    }
    Ok(())
}

/// Integrates `y' = f(t, y)` from `t0` to `t_end` with ROCK4, overwriting `y` (the
/// initial value) with the solution at the final time reached.
///
/// Errors (nothing is modified): `rhs.dim() == 0`; `y.len() != rhs.dim()`; `t0`,
/// `t_end` not finite or `t_end <= t0`; `rtol <= 1e-15`, `atol <= 0` or not finite;
/// `h0` outside `[1e-15, t_end - t0]`; [`super::StepControl::Fixed`] without `h0`;
/// `max_steps == 0`; a non-finite `y`; a workspace (10 vectors of `n`) beyond the host's
/// memory ([`Error::OutOfHostMemory`]). Errors from `rhs` are passed on (then `y` is
/// unchanged too). A failed integration, the step size fallen below the smallest
/// allowed ([`super::StopReason::StepTooSmall`]), is [`Error::IntegrationFailed`] with the
/// report, `y` unchanged. Reaching [`Rock4Options::max_steps`] first is a report
/// ([`super::StopReason::MaxSteps`]) with `y` at the last accepted step.
pub fn integrate<R: Rhs + ?Sized>(
    rhs: &R,
    t0: f64,
    t_end: f64,
    y: &mut [f64],
    opts: &Rock4Options,
) -> Result<Rock4Report> {
    validate(rhs, t0, t_end, y, opts)?;
    match opts.threads {
        Threads::All => run(rhs, t0, t_end, y, opts),
        Threads::Single => rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(|e| invalid(format!("cannot start a one-thread pool: {e}")))?
            .install(|| run(rhs, t0, t_end, y, opts)),
    }
}

fn run<R: Rhs + ?Sized>(
    rhs: &R,
    t0: f64,
    t_end: f64,
    y_out: &mut [f64],
    o: &Rock4Options,
) -> Result<Rock4Report> {
    let n = y_out.len();
    // y, fy, the eight work vectors, and the power iteration's direction where used.
    let what = super::check_workspace(n, 11)?;
    let vec = || alloc::try_vec(&what, n, 0.0);
    let mut y = alloc::try_with_capacity(&what, n)?;
    y.extend_from_slice(y_out);
    let mut b = CpuBackend {
        f: Counted { rhs, evals: 0 },
        y,
        fy: vec()?,
        w: Work {
            ga: vec()?,
            gb: vec()?,
            k1: vec()?,
            k2: vec()?,
            k3: vec()?,
            k4: vec()?,
            y_new: vec()?,
            k5: vec()?,
        },
        v: Vec::new(),
        use_bound: o.spectral_radius == SpectralRadius::Auto,
    };
    let report = driver::run(&mut b, t0, t_end, o)?;
    let report = super::finish("rock4::cpu::integrate", t0, t_end, report)?;
    y_out.copy_from_slice(&b.y);
    Ok(report)
}

/// The CPU vectors of one integration.
struct CpuBackend<'a, R: ?Sized> {
    f: Counted<'a, R>,
    y: Vec<f64>,
    fy: Vec<f64>,
    w: Work,
    /// The power iteration's saved direction.
    v: Vec<f64>,
    use_bound: bool,
}

impl<R: Rhs + ?Sized> driver::Backend for CpuBackend<'_, R> {
    fn eval_initial(&mut self, t: f64) -> Result<()> {
        self.f.eval(t, &self.y, &mut self.fy)
    }

    fn estimate_rho(&mut self, t: f64, report: &mut Rock4Report) -> Result<f64> {
        report.rho_evals += 1;
        if self.use_bound
            && let Some(b) = self.f.rhs.spectral_radius_bound(t, &self.y)
        {
            return super::check_bound("rock4::cpu::integrate", t, b);
        }
        let w = &mut self.w;
        let p = power_iteration(
            &mut self.f,
            t,
            &self.y,
            &self.fy,
            &mut self.v,
            &mut w.ga,
            &mut w.gb,
        )?;
        if !p.converged {
            report.rho_unconverged += 1;
        }
        Ok(p.rho)
    }

    fn probe(&mut self, t: f64, h: f64, rtol: f64, atol: f64) -> Result<f64> {
        let n = self.y.len();
        let (y, fy) = (&self.y, &self.fy);
        let (yt, ft) = (&mut self.w.k2, &mut self.w.k3);
        par_map(yt, |r, c| first_chunk(h, &y[r.clone()], &fy[r], c));
        self.f.eval(t + h, yt, ft)?;
        let ft = &*ft;
        let sum = par_sum(n, |r| {
            r.map(|i| k::probe_term(ft[i], fy[i], y[i], rtol, atol))
                .sum::<f64>()
        });
        Ok((sum / n as f64).sqrt())
    }

    fn attempt(&mut self, deg: &Degree<'_>, t: f64, h: f64, atol: f64, rtol: f64) -> Result<f64> {
        attempt(
            &mut self.f,
            deg,
            t,
            h,
            &self.y,
            &self.fy,
            &mut self.w,
            atol,
            rtol,
        )
    }

    fn accept(&mut self) -> Result<()> {
        std::mem::swap(&mut self.y, &mut self.w.y_new);
        std::mem::swap(&mut self.fy, &mut self.w.k5);
        Ok(())
    }

    fn f_evals(&self) -> usize {
        self.f.evals
    }
}
