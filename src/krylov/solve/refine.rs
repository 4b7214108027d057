//! [`MatrixStorage::F32`](super::MatrixStorage::F32): GMRES iterates with the matrix
//! stored in single precision (half the bytes of every SpMV; vectors and arithmetic stay
//! in full precision) while each restart's true residual is computed with the
//! full-precision matrix ([`crate::krylov::cpu::gmres_refined`],
//! [`crate::krylov::gpu::gmres_refined`]): every cycle is a step of iterative
//! refinement, and convergence is that of `A` itself. Where the stored matrix is too far
//! from `A` for the refinement to progress, GMRES reports stagnation (or divergence, the
//! best iterate kept) and a full-precision GMRES finishes from there with the steps left
//! (the fallback, reported with its reason). [`BasisStorage::F32`] (CB-GMRES, the
//! Krylov basis in single precision) runs the same way, alone or with the f32 matrix:
//! its restarts see the true residual, and the fallback is full precision throughout
//! (the full matrix and the full basis).

use std::time::Instant;

use ferrocuda_host::DeviceBuffer;

use super::Refinement;
use crate::blas1::Element;
use crate::error::Result;
use crate::krylov::gpu::KrylovElement;
use crate::krylov::{BasisStorage, DeviceLinOp, GmresOptions, GmresReport, LinOp, StopReason};
use crate::sparse::Matrix;
use crate::sparse::gpu::{DeviceMatrix, SpmvKernels};

/// The device-specific parts of one refined solve.
pub(super) trait Steps {
    /// GMRES with the stored matrix and the full-precision restart residual, from `x`.
    fn refined(
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

/// Runs the refined solve and, where it stagnated or diverged with steps left, the
/// full-precision fallback (module docs); the report sums both.
pub(super) fn refine(
    steps: &mut impl Steps,
    opts: &GmresOptions,
    what: &str,
    mut progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<(GmresReport, Refinement)> {
    let started = Instant::now();
    let mut relay = |i: usize, est: f64| {
        if let Some(p) = progress.as_mut() {
            p(i, est);
        }
    };
    let first = steps.refined(opts, Some(&mut relay))?;
    let rel = |r: &GmresReport| {
        if r.rhs_norm > 0.0 {
            r.initial_residual / r.rhs_norm
        } else {
            0.0
        }
    };
    let mut rf = Refinement {
        steps: vec![first.iterations],
        residuals: vec![rel(&first), first.relative_residual],
        ..Refinement::default()
    };
    let left = opts.max_iter.saturating_sub(first.iterations);
    let stalled = matches!(first.reason, StopReason::Stagnation | StopReason::Diverged);
    if first.converged || !stalled || left == 0 {
        return Ok((first, rf));
    }
    let done = first.iterations;
    let mut relay = |i: usize, est: f64| {
        if let Some(p) = progress.as_mut() {
            p(done + i, est);
        }
    };
    // Full precision throughout: the full matrix (in `finish`) and the full basis.
    let full = opts.clone().max_iter(left).basis(BasisStorage::Full);
    let last = steps.finish(&full, Some(&mut relay))?;
    rf.fallback = Some(format!(
        "GMRES with {what} ended in {:?} at a true relative residual of {:.2e} after {} steps: single precision is too coarse for this system",
        first.reason, first.relative_residual, first.iterations
    ));
    rf.fallback_steps = last.iterations;
    rf.residuals.push(last.relative_residual);
    let mut report = last.clone();
    report.iterations += first.iterations;
    report.cycles += first.cycles;
    report.initial_residual = first.initial_residual;
    report.history = first.history;
    report.history.extend(last.history);
    let (t, f) = (&mut report.timing, &first.timing);
    t.spmv += f.spmv;
    t.precond += f.precond;
    t.orthogonalization += f.orthogonalization;
    t.setup += f.setup;
    t.total = started.elapsed().as_secs_f64();
    t.rest = t.total - t.spmv - t.precond - t.orthogonalization;
    Ok((report, rf))
}

/// The refinement's steps on the CPU.
pub(super) struct Cpu<'a, T> {
    pub a: &'a Matrix<T>,
    pub stored: &'a dyn LinOp<T>,
    pub m: Option<&'a dyn LinOp<T>>,
    pub b: &'a [T],
    pub x: &'a mut [T],
}

impl<T: Element + crate::sparse::MatrixScalar<T>> Steps for Cpu<'_, T> {
    fn refined(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        crate::krylov::cpu::gmres_refined(
            self.stored,
            self.a,
            self.m,
            self.b,
            self.x,
            opts,
            progress,
        )
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
}

impl<T: KrylovElement + SpmvKernels<T>> Steps for Device<'_, T> {
    fn refined(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        crate::krylov::gpu::gmres_refined(
            self.stored,
            self.a,
            self.m,
            self.b,
            self.x,
            opts,
            progress,
        )
    }

    fn finish(
        &mut self,
        opts: &GmresOptions,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<GmresReport> {
        crate::krylov::gpu::gmres_with_progress(self.a, self.m, self.b, self.x, opts, progress)
    }
}
