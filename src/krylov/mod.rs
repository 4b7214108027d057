//! Krylov solvers: restarted GMRES(m) on the CPU (rayon, [`cpu::gmres`]) and on one GPU
//! ([`gpu::gmres`]), written once against linear operators ([`LinOp`],
//! [`DeviceLinOp`]) with one options type ([`GmresOptions`]) and one report
//! ([`GmresReport`]), with point- and block-Jacobi preconditioners ([`BlockJacobi`],
//! [`DeviceBlockJacobi`]) and point and block ILU(0) ([`Ilu0`], [`BlockIlu0`] on the
//! CPU, [`DeviceIlu0`], [`DeviceBlockIlu0`] on the GPU). To solve from a matrix in a few calls (format chosen, padding to
//! blocks, preconditioner built, on either device): [`Solver`] and [`DeviceSolver`]
//! ([`solve`]).
//!
//! GMRES(m) after Saad (seed 000, §5.3): Arnoldi builds an orthonormal basis `V` of the
//! Krylov space of `A M^{-1}` (right preconditioning, so the residual GMRES minimises
//! is the true one), Givens rotations keep the small least-squares problem triangular
//! and give the residual norm after every step, and after `m` steps (or convergence)
//! `x <- x + M^{-1} V y`; then it restarts from the true residual.
//!
//! Orthogonalisation ([`Orthogonalization`]):
//! - [`Mgs`](Orthogonalization::Mgs): modified Gram-Schmidt, the thesis's choice: `k + 1`
//!   dependent dot/update pairs per step.
//! - [`Cgs2`](Orthogonalization::Cgs2) (default): classical Gram-Schmidt with one
//!   reorthogonalisation, with the reorthogonalisation of each vector delayed by one
//!   step and merged into the next projection (DCGS2, Bielich et al. 2022). Every step
//!   makes one multi-dot pass over the basis (all `2 (k + 1)` dot products at once) and
//!   one update pass, and needs one host round trip for the dot products. The norm of
//!   the new vector comes from Pythagoras, `alpha^2 = |u|^2 - |V^H u|^2`.
//! - [`Pipelined`](Orthogonalization::Pipelined): p(1)-GMRES, for distributed solves,
//!   where each step's reduction is a message between ranks. Besides `V` it keeps `Z =
//!   A M^{-1} V`. Step `k` has `z = Z_k = A M^{-1} V_k`; one pass gives `h = V^H z` and
//!   `|z|^2`, and, while those are summed (over the ranks, or downloaded from the GPU),
//!   `q = A M^{-1} z` is already computed. The next step then needs no operator of its
//!   own: with `alpha^2 = |z|^2 - |h|^2`, `V_{k+1} = (z - V h) / alpha` and `Z_{k+1} =
//!   A M^{-1} V_{k+1} = (q - Z h) / alpha`, one pass over both bases that also takes the
//!   next step's dots. Classical Gram-Schmidt once orthogonalises less well than CGS2,
//!   and `Z` drifts from `A M^{-1} V` by rounding over a cycle; the true residual at
//!   every restart keeps the answer honest (the convergence checks are the same), and a
//!   new direction lost in the subtraction ends the cycle early.
//!
//! Convergence: `|r| <= max(rtol |b|, atol)`, `r = b - A x`; the estimate from the
//! rotations drives the iteration, and the true residual is computed at every restart
//! and at the end (that is what the report's `residual` is). A zero `b` gives `x = 0`.
//! NaN or infinity in `b` or `x0` is an error; one appearing in the residual (from the
//! operator or preconditioner) too.
//!
//! Termination ([`StopReason`]; every reason but the first two is a report with
//! `converged = false`, not an error):
//!
//! | reason | when |
//! |---|---|
//! | [`Converged`](StopReason::Converged) | the true residual meets the tolerance |
//! | [`ZeroRhs`](StopReason::ZeroRhs) | `b = 0`: `x = 0` |
//! | [`MaxIterations`](StopReason::MaxIterations) | [`GmresOptions::max_iter`] Arnoldi steps made |
//! | [`Stagnation`](StopReason::Stagnation) | the Krylov space stopped growing (a singular operator or preconditioner, an inconsistent system), or [`STAGNATION_CYCLES`] restart cycles in a row together reduced the smallest true residual by less than the fraction [`STAGNATION_REDUCTION`] |
//! | [`Diverged`](StopReason::Diverged) | the true residual at a restart exceeded [`DIVERGENCE_FACTOR`] times the initial one |
//!
//! In exact arithmetic a restart never raises the residual, so the last two happen only
//! where rounding has taken over (singular or inconsistent systems, tolerances below
//! the attainable accuracy). Whatever the reason, the returned `x` is the iterate with
//! the smallest true residual seen at a restart (`x0` when none was better), and the
//! report's `residual` is the true residual of that `x`: a solve never returns an iterate
//! worse than its start.
//!
//! Workspace: `min(restart, max_iter) + 1` basis vectors and four more of length `n`
//! (a cycle cannot take more steps than `max_iter`), allocated once and checked against
//! the memory the process (or the device) has before allocating.
//!
//! ```
//! use ferrocuda::krylov::{GmresOptions, cpu};
//! use ferrocuda::sparse::Coo;
//! // A small nonsymmetric system with solution (1, 2, 3).
//! let mut a = Coo::<f64>::empty(3, 3)?;
//! for (r, c, v) in [(0, 0, 4.0), (0, 1, 1.0), (1, 0, -1.0), (1, 1, 5.0), (2, 1, 2.0), (2, 2, 3.0)] {
//!     a.push(r, c, v)?;
//! }
//! let b = [6.0, 9.0, 13.0];
//! let mut x = [0.0; 3];
//! let report = cpu::gmres(&a, None, &b, &mut x, &GmresOptions::default())?;
//! assert!(report.converged);
//! assert!((x[0] - 1.0).abs() < 1e-10 && (x[2] - 3.0).abs() < 1e-10);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

mod arnoldi;
pub mod cpu;
pub mod gpu;
pub mod ilu;
pub mod op;
pub mod precond;
pub mod solve;

pub use ilu::{BlockIlu0, DeviceBlockIlu0, DeviceIlu0, Ilu0, IluOptions};
pub use op::{DeviceLinOp, Identity, LinOp, SbellRef};
pub use precond::{BlockJacobi, DeviceBlockJacobi};
pub use solve::{
    DeviceSolveElement, DeviceSolver, MatrixStorage, Refinement, Solution, SolveOptions,
    SolveReport, SolveTiming, Solver, StorageScalar,
};

use serde::Serialize;

/// Which right preconditioner a command-line solve or benchmark uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preconditioner {
    /// None (`M = I`).
    #[default]
    None,
    /// Point Jacobi: the reciprocals of the diagonal ([`BlockJacobi::point`]).
    Jacobi,
    /// Block Jacobi: the inverses of the diagonal blocks ([`BlockJacobi::new`]).
    BlockJacobi,
    /// ILU(0), incomplete LU without fill ([`BlockIlu0`] with the block size given, else
    /// the format's, else 1: point ILU(0)); [`DeviceBlockIlu0`] on the GPU, the same
    /// factors.
    Ilu0,
}

impl std::fmt::Display for Preconditioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Preconditioner::None => "none",
            Preconditioner::Jacobi => "jacobi",
            Preconditioner::BlockJacobi => "block-jacobi",
            Preconditioner::Ilu0 => "ilu0",
        })
    }
}

/// How each new Krylov vector is made orthogonal to the basis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Orthogonalization {
    /// Modified Gram-Schmidt (the thesis).
    Mgs,
    /// Classical Gram-Schmidt twice, the second pass delayed one step (DCGS2).
    Cgs2,
    /// Pipelined GMRES, p(1)-GMRES (Ghysels, Ashby, Meerbergen, Vanroose 2013):
    /// classical Gram-Schmidt once, the norm by Pythagoras, and the operator applied one
    /// step ahead to `z = A M^{-1} V_k` before its dots are known (module docs). Each
    /// step's one reduction (one all-reduce where distributed, one download on a GPU)
    /// overlaps the next operator and preconditioner application. Keeps a second basis
    /// `Z = A M^{-1} V` (twice the basis memory). Host-stepped; not with a basis stored
    /// in f32.
    Pipelined,
}

/// How the Krylov basis is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BasisStorage {
    /// In the vectors' own type.
    #[default]
    Full,
    /// CB-GMRES ("compressed basis"): a double-precision solve keeps its basis vectors
    /// rounded to `f32` (`Complex<f32>`), so the orthogonalisation and the solution
    /// update read half the bytes; every dot product, sum, Hessenberg entry and the
    /// vectors `w`, `x` stay in full precision, and each restart's residual is the true
    /// `b - A x`. The rounding (`6e-8` of each vector) perturbs the Arnoldi relation, so
    /// a cycle's estimate can run ahead of the true residual near the tolerance; the
    /// restart then sees the true residual and goes on (a few more steps at most, in the
    /// measured cases). Breakdown is judged at `f32`'s epsilon. CGS2, and on the GPU
    /// host-stepped cycles ([`CycleControl::Auto`] or [`CycleControl::Host`]); one
    /// device (not distributed). A single-precision solve stores its basis so already:
    /// the same as [`BasisStorage::Full`].
    F32,
}

impl std::fmt::Display for BasisStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BasisStorage::Full => "full",
            BasisStorage::F32 => "f32",
        })
    }
}

/// Who takes the small dense algebra of each Arnoldi step on the GPU (one device; the
/// CPU path and a distributed solve always step from the host). Every choice takes the
/// same steps; `Fused` and `Device` give the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CycleControl {
    /// The default: `Fused` where the one-kernel cycle can run and the system has at
    /// most [`FUSED_AUTO_MAX_ROWS`] rows, else `Host`. Measured on an H200
    /// (docs/notes/gpu-runs.md, run 71): the one-kernel cycle took 0.037 and 0.074 ms
    /// per step on 7,680 and 147,840 rows against 0.080 and 0.093 host-stepped, and
    /// 0.206 against 0.161 on 591,360 rows.
    Auto,
    /// The host, from each step's dot products: one round trip per step; the time of
    /// every phase (operator, preconditioner, orthogonalisation) is measured.
    Host,
    /// One device thread (`ferrocuda_kernels::krylov::cycle`, the same code as the host's):
    /// a whole cycle is queued without waiting. The host looks at the cycle's progress
    /// every `check_every` steps, one check behind (so the GPU never waits for it), and
    /// stops queueing once the cycle has ended; `0` looks only at the end of the cycle.
    /// Steps queued past the end of a cycle change nothing but cost their kernels (at
    /// most about `2 check_every`, or the rest of the cycle with `0`). The host then waits
    /// at most `1 + m / check_every` times per cycle of `m` steps. Phases are not timed
    /// (the report's total only, in `rest`).
    Device {
        /// Steps between the host's looks at the cycle (`0`: at its end only).
        check_every: usize,
    },
    /// The whole cycle in one cooperative kernel (`ferrocuda_kernels::krylov::fused`):
    /// the operator, the dots, the same algebra as the host's and the update, step after
    /// step, with no launch and no host in between; the host waits once per cycle, and a
    /// converged cycle stops where it converged. Needs a device SBELL operator
    /// ([`DeviceLinOp::as_sbell`]), CGS2, no preconditioner, one device and a restart
    /// length whose cycle state fits a block's shared memory (up to about 80 on an H100);
    /// other cycles run as with `Device { check_every: 4 }`. Phases are not timed.
    Fused,
}

/// Most rows for which [`CycleControl::Auto`] runs cycles in one kernel (between the
/// measured cases where it wins and where it loses).
pub const FUSED_AUTO_MAX_ROWS: usize = 300_000;

/// How often the host looks at a cycle that [`CycleControl::Fused`] cannot run in one
/// kernel.
pub(crate) const FUSED_FALLBACK_CHECK_EVERY: usize = 4;

/// GMRES options; `Default` is GMRES(30), `rtol = 1e-8`, CGS2, 1000 iterations, cycles
/// controlled by [`CycleControl::Auto`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GmresOptions {
    /// Restart length `m` (steps per cycle), at least 1; a cycle takes at most
    /// `max_iter` steps, so `m > max_iter` works as `m = max_iter`.
    pub restart: usize,
    /// Relative tolerance on `|b - A x| / |b|`.
    pub rtol: f64,
    /// Absolute tolerance on `|b - A x|`.
    pub atol: f64,
    /// Most Arnoldi steps in total (over all cycles).
    pub max_iter: usize,
    /// Orthogonalisation.
    pub orthogonalization: Orthogonalization,
    /// Who takes each step's small algebra on the GPU.
    pub cycle_control: CycleControl,
    /// How the Krylov basis is stored ([`BasisStorage::F32`]: CB-GMRES).
    pub basis: BasisStorage,
}

impl Default for GmresOptions {
    fn default() -> Self {
        GmresOptions {
            restart: 30,
            rtol: 1e-8,
            atol: 0.0,
            max_iter: 1000,
            orthogonalization: Orthogonalization::Cgs2,
            cycle_control: CycleControl::Auto,
            basis: BasisStorage::Full,
        }
    }
}

impl GmresOptions {
    setters! {
        /// Sets the restart length.
        restart: usize;
        /// Sets the relative tolerance.
        rtol: f64;
        /// Sets the absolute tolerance.
        atol: f64;
        /// Sets the iteration limit.
        max_iter: usize;
        /// Sets the orthogonalisation.
        orthogonalization: Orthogonalization;
        /// Sets who takes each step's small algebra on the GPU.
        cycle_control: CycleControl;
        /// Sets how the Krylov basis is stored.
        basis: BasisStorage;
    }

    /// Basis vectors one cycle can use: `min(restart, max_iter) + 1` (a cycle takes at
    /// most `max_iter` steps).
    pub(crate) fn basis_vectors(&self) -> usize {
        self.restart.min(self.max_iter).saturating_add(1)
    }

    /// What the workspace of a solve on `n` unknowns is, in words, for the errors of the
    /// size checks.
    pub(crate) fn workspace_name(&self, n: usize) -> String {
        let k = self.basis_vectors();
        if self.restart >= self.max_iter {
            format!(
                "the GMRES workspace for restart = {} (cycles of at most max_iter = {} steps: {k} basis vectors) and n = {n}",
                self.restart, self.max_iter
            )
        } else {
            format!(
                "the GMRES workspace for restart = {} ({k} basis vectors) and n = {n}",
                self.restart
            )
        }
    }

    fn validate(&self) -> crate::Result<()> {
        let bad = |reason: String| {
            Err(crate::Error::InvalidArgument {
                op: "gmres",
                reason,
            })
        };
        if self.restart == 0 {
            return bad("restart must be at least 1".into());
        }
        if !(self.rtol >= 0.0 && self.rtol.is_finite()) {
            return bad(format!("rtol must be finite and >= 0, got {}", self.rtol));
        }
        if !(self.atol >= 0.0 && self.atol.is_finite()) {
            return bad(format!("atol must be finite and >= 0, got {}", self.atol));
        }
        if self.basis == BasisStorage::F32 {
            if self.orthogonalization != Orthogonalization::Cgs2 {
                return bad(format!(
                    "a basis stored in f32 (CB-GMRES) needs CGS2 orthogonalisation, not {:?}",
                    self.orthogonalization
                ));
            }
            if !matches!(self.cycle_control, CycleControl::Auto | CycleControl::Host) {
                return bad(format!(
                    "a basis stored in f32 (CB-GMRES) runs host-stepped cycles: cycle control {:?} needs the full-precision basis",
                    self.cycle_control
                ));
            }
        }
        Ok(())
    }
}

/// Why GMRES stopped (module docs: the criteria).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StopReason {
    /// The residual met the tolerance.
    Converged,
    /// `b = 0`: `x = 0` is the exact solution.
    ZeroRhs,
    /// The iteration limit was reached first.
    MaxIterations,
    /// No progress: the Krylov space stopped growing before the tolerance was met (a
    /// singular operator or preconditioner, an inconsistent system), or
    /// [`STAGNATION_CYCLES`] restart cycles in a row reduced the smallest true residual
    /// by less than the fraction [`STAGNATION_REDUCTION`] (rounding at the tolerance's
    /// limit, a singular system).
    Stagnation,
    /// The true residual at a restart exceeded [`DIVERGENCE_FACTOR`] times the initial
    /// one (rounding has taken over, typically on a singular or inconsistent system);
    /// the best iterate seen is returned.
    Diverged,
}

/// [`StopReason::Diverged`]: a true residual at a restart above this factor times the
/// initial residual `|b - A x0|`.
pub const DIVERGENCE_FACTOR: f64 = 1e2;

/// [`StopReason::Stagnation`]: restart cycles in a row without enough reduction of the
/// smallest true residual ([`STAGNATION_REDUCTION`]).
pub const STAGNATION_CYCLES: usize = 5;

/// [`StopReason::Stagnation`]: the relative reduction of the smallest true residual that
/// [`STAGNATION_CYCLES`] restart cycles must achieve together (0.1 %).
pub const STAGNATION_REDUCTION: f64 = 1e-3;

/// Time spent, in seconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct GmresTiming {
    /// The whole solve, set-up included.
    pub total: f64,
    /// Operator applications.
    pub spmv: f64,
    /// Preconditioner applications (zero without one).
    pub precond: f64,
    /// Orthogonalisation (dots, updates, normalisation).
    pub orthogonalization: f64,
    /// Everything else (residuals at restarts, solution updates, host work).
    pub rest: f64,
    /// The part of `rest` before the first step: checks, the workspace (allocated per
    /// solve), `|b|` and the first true residual.
    pub setup: f64,
    /// The parts of `orthogonalization` inside one-kernel cycles
    /// ([`CycleControl::Fused`]; zero otherwise).
    pub cycle_phases: CyclePhases,
}

/// Where a one-kernel cycle ([`CycleControl::Fused`]) spends the time of its
/// orthogonalisation, in seconds, each part with the grid barrier that ends it (timed by
/// the device's clock in the kernel's first block).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CyclePhases {
    /// The dots' first stage (`V^H u`, `V^H w` per block).
    pub dots: f64,
    /// Their sums.
    pub sums: f64,
    /// The step's small algebra (Hessenberg column, rotations, coefficients).
    pub algebra: f64,
    /// The vector update (`q_k` and the next `u`).
    pub update: f64,
}

/// What a GMRES solve did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GmresReport {
    /// Whether `|b - A x| <= max(rtol |b|, atol)` at the end.
    pub converged: bool,
    /// Why it stopped.
    pub reason: StopReason,
    /// Arnoldi steps (operator applications in the Krylov loop).
    pub iterations: usize,
    /// Restart cycles started.
    pub cycles: usize,
    /// `|b|`.
    pub rhs_norm: f64,
    /// `|b - A x0|`.
    pub initial_residual: f64,
    /// `|b - A x|` at the end, computed (not estimated).
    pub residual: f64,
    /// `residual / |b|` (0 for a zero `b`).
    pub relative_residual: f64,
    /// The estimated relative residual after every Arnoldi step.
    pub history: Vec<f64>,
    /// Time per phase.
    pub timing: GmresTiming,
}

impl GmresReport {
    /// A report of no steps (filled in by the solvers and the benchmarks).
    pub fn empty() -> Self {
        GmresReport {
            converged: false,
            reason: StopReason::MaxIterations,
            iterations: 0,
            cycles: 0,
            rhs_norm: 0.0,
            initial_residual: 0.0,
            residual: 0.0,
            relative_residual: 0.0,
            history: Vec::new(),
            timing: GmresTiming::default(),
        }
    }
}
