//! [`MatrixStorage::F32`](super::MatrixStorage::F32): GMRES iterates with the matrix
//! stored in single precision (half the bytes of every SpMV; vectors and arithmetic stay
//! in full precision), and refinement with the full-precision residual recovers the
//! accuracy:
//!
//! ```text
//! r = b - A x                     (A in full precision)
//! while |r| > max(rtol |b|, atol):
//!     d = GMRES(A_32, r, rtol = target / |r|)     (A_32: A rounded to f32, from d = 0)
//!     x = x + d;  r = b - A x
//! ```
//!
//! Each pass solves the stored system as far as the target, so its error is that of the
//! rounding, `|A - A_32| |d|` (about `6e-8 |A| |d|`), and the next pass starts from a
//! residual that much smaller: one or two passes where `A_32` is a good model of `A`. A
//! pass that leaves more than [`REFINEMENT_STALL`] of its starting residual, or
//! [`MAX_REFINEMENTS`] passes without reaching the target, hands the solve to GMRES with
//! `A` itself from the current `x` (the fallback, reported with its reason). All passes
//! share the iteration limit.

use std::time::Instant;

use ferrocuda_host::{DeviceBuffer, Gpu};

use super::{MAX_REFINEMENTS, REFINEMENT_STALL, Refinement};
use crate::RealScalar;
use crate::blas1::Element;
use crate::error::Result;
use crate::krylov::gpu::KrylovElement;
use crate::krylov::{DeviceLinOp, GmresOptions, GmresReport, GmresTiming, LinOp, StopReason};
use crate::sparse::Matrix;
use crate::sparse::gpu::{DeviceMatrix, SpmvKernels};

/// The device-specific parts of one refined solve.
pub(super) trait Steps {
    /// `r = b - A x` with the full-precision `A`, kept for the next [`Steps::correct`];
    /// returns `|r|`.
    fn residual(&mut self) -> Result<f64>;
    /// GMRES with the stored matrix on `A_32 d = r` from `d = 0`, then `x += d`.
    fn correct(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport>;
    /// GMRES with the full-precision `A` on `A x = b` from `x`.
    fn finish(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport>;
}

/// Runs the refinement (module docs); `bnorm = |b|`. The report sums the passes: steps,
/// cycles and times; the history is every pass's estimates relative to `|b|`; the
/// residual is the last true one.
pub(super) fn refine(
    steps: &mut impl Steps,
    opts: &GmresOptions,
    bnorm: f64,
    mut progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<(GmresReport, Refinement)> {
    let started = Instant::now();
    if bnorm == 0.0 {
        // x = 0 exactly: GMRES's own zero right-hand side.
        let r = steps.finish(opts, progress)?;
        return Ok((r, Refinement::default()));
    }
    let target = (opts.rtol * bnorm).max(opts.atol);
    let mut rnorm = steps.residual()?;
    let initial = rnorm;
    let mut rf = Refinement {
        residuals: vec![rnorm / bnorm],
        ..Refinement::default()
    };
    let mut passes: Vec<(GmresReport, f64)> = Vec::new();
    let mut budget = opts.max_iter;
    let mut why = None;
    while rnorm > target && budget > 0 {
        if rf.steps.len() == MAX_REFINEMENTS {
            why = Some(format!(
                "{MAX_REFINEMENTS} refinement solves left the true relative residual at {:.2e}",
                rnorm / bnorm
            ));
            break;
        }
        let inner = opts
            .clone()
            .rtol((target / rnorm).min(1.0))
            .atol(0.0)
            .max_iter(budget);
        let done = opts.max_iter - budget;
        let scale = rnorm / bnorm;
        let mut relay = |i: usize, est: f64| {
            if let Some(p) = progress.as_mut() {
                p(done + i, est * scale);
            }
        };
        let pass = steps.correct(&inner, Some(&mut relay))?;
        budget = budget.saturating_sub(pass.iterations);
        let before = rnorm;
        rnorm = steps.residual()?;
        rf.steps.push(pass.iterations);
        rf.residuals.push(rnorm / bnorm);
        passes.push((pass, before));
        if rnorm > target && rnorm > REFINEMENT_STALL * before {
            why = Some(format!(
                "refinement solve {} reduced the true residual only by a factor {:.2} (from {:.2e} to {:.2e} of |b|): the matrix in f32 is too far from A for this system",
                rf.steps.len(),
                before / rnorm,
                before / bnorm,
                rnorm / bnorm
            ));
            break;
        }
    }
    let mut last_reason = passes.last().map(|(p, _)| p.reason);
    if rnorm > target && budget > 0 {
        let why = why.unwrap_or_else(|| "the refinement stopped early".into());
        let done = opts.max_iter - budget;
        let mut relay = |i: usize, est: f64| {
            if let Some(p) = progress.as_mut() {
                p(done + i, est);
            }
        };
        let f = steps.finish(&opts.clone().max_iter(budget), Some(&mut relay))?;
        rnorm = f.residual;
        rf.fallback = Some(why);
        rf.fallback_steps = f.iterations;
        rf.residuals.push(rnorm / bnorm);
        last_reason = Some(f.reason);
        passes.push((f, bnorm));
    }
    let converged = rnorm <= target;
    let mut report = GmresReport::empty();
    report.converged = converged;
    report.reason = if converged {
        StopReason::Converged
    } else if budget == 0 {
        StopReason::MaxIterations
    } else {
        last_reason.unwrap_or(StopReason::Stagnation)
    };
    report.rhs_norm = bnorm;
    report.initial_residual = initial;
    report.residual = rnorm;
    report.relative_residual = rnorm / bnorm;
    let mut timing = GmresTiming::default();
    for (p, start) in &passes {
        report.iterations += p.iterations;
        report.cycles += p.cycles;
        // A pass's estimates are relative to its right-hand side, |r| = start.
        let scale = start / bnorm;
        report.history.extend(p.history.iter().map(|h| h * scale));
        timing.spmv += p.timing.spmv;
        timing.precond += p.timing.precond;
        timing.orthogonalization += p.timing.orthogonalization;
        timing.setup += p.timing.setup;
    }
    timing.total = started.elapsed().as_secs_f64();
    timing.rest = timing.total - timing.spmv - timing.precond - timing.orthogonalization;
    report.timing = timing;
    Ok((report, rf))
}

/// The refinement's steps on the CPU.
pub(super) struct Cpu<'a, T> {
    pub a: &'a Matrix<T>,
    pub stored: &'a dyn LinOp<T>,
    pub m: Option<&'a dyn LinOp<T>>,
    pub b: &'a [T],
    pub x: &'a mut [T],
    pub r: Vec<T>,
    pub d: Vec<T>,
}

impl<T: Element + crate::sparse::MatrixScalar<T>> Steps for Cpu<'_, T> {
    fn residual(&mut self) -> Result<f64> {
        self.a.spmv(-T::ONE, self.x, T::ZERO, &mut self.r)?;
        crate::blas1::cpu::axpy(T::ONE, self.b, &mut self.r)?;
        Ok(crate::blas1::cpu::nrm2(&self.r).to_f64())
    }

    fn correct(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        self.d.fill(T::ZERO);
        let rep = crate::krylov::cpu::gmres_with_progress(
            self.stored,
            self.m,
            &self.r,
            &mut self.d,
            opts,
            progress,
        )?;
        crate::blas1::cpu::axpy(T::ONE, &self.d, self.x)?;
        Ok(rep)
    }

    fn finish(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        crate::krylov::cpu::gmres_with_progress(self.a, self.m, self.b, self.x, opts, progress)
    }
}

/// The refinement's steps on the GPU.
pub(super) struct Device<'a, T> {
    pub a: &'a DeviceMatrix<T>,
    pub stored: &'a dyn DeviceLinOp<T>,
    pub m: Option<&'a dyn DeviceLinOp<T>>,
    pub b: &'a DeviceBuffer<T>,
    pub x: &'a mut DeviceBuffer<T>,
    pub r: DeviceBuffer<T>,
    pub d: DeviceBuffer<T>,
}

impl<'a, T: KrylovElement + SpmvKernels<T>> Device<'a, T> {
    /// The steps with the work vectors allocated on the device of `b`.
    pub fn new(
        a: &'a DeviceMatrix<T>,
        stored: &'a dyn DeviceLinOp<T>,
        m: Option<&'a dyn DeviceLinOp<T>>,
        b: &'a DeviceBuffer<T>,
        x: &'a mut DeviceBuffer<T>,
    ) -> Result<Self> {
        let gpu: &Gpu = ferrocuda_host::DeviceSlice::gpu(b);
        let n = ferrocuda_host::DeviceSlice::len(b);
        let (r, d) = (gpu.alloc::<T>(n)?, gpu.alloc::<T>(n)?);
        Ok(Device {
            a,
            stored,
            m,
            b,
            x,
            r,
            d,
        })
    }
}

impl<T: KrylovElement + SpmvKernels<T>> Steps for Device<'_, T>
where
    T::Real: Element,
{
    fn residual(&mut self) -> Result<f64> {
        crate::blas1::gpu::copy(self.b, &mut self.r)?;
        crate::sparse::gpu::spmv_matrix(-T::ONE, self.a, self.x, T::ONE, &mut self.r)?;
        Ok(crate::blas1::gpu::nrm2(&self.r)?.to_f64())
    }

    fn correct(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        ferrocuda_host::Gpu::memset_zero(&mut self.d)?;
        let rep = crate::krylov::gpu::gmres_with_progress(
            self.stored,
            self.m,
            &self.r,
            &mut self.d,
            opts,
            progress,
        )?;
        crate::blas1::gpu::axpy(T::ONE, &self.d, self.x)?;
        Ok(rep)
    }

    fn finish(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        crate::krylov::gpu::gmres_with_progress(self.a, self.m, self.b, self.x, opts, progress)
    }
}
