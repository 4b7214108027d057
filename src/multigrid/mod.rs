//! Geometric multigrid for the 3D Poisson problem with block smoothers (seed 003), on
//! the CPU ([`cpu`], rayon) and the GPU ([`gpu`]), `f32` and `f64`.
//!
//! **Problem**: `-Laplace(u) = f` on `(0,1)^3`, `u = 0` on the boundary, 7-point
//! stencil, test case `f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z)` with exact solution
//! `u = sin sin sin` (seed 003 prints the sign of `f` wrongly). Its discrete solution is
//! known too (`c_h u`, [`grid::SineProblem`]), so every cycle reports the residual
//! `||f - A u||_h`, the error `||u - u_exact||_h` and the algebraic error
//! `||u - u_h||_h`, all in the grid norm `||v||_h = sqrt(h^3 sum v^2)` over the interior.
//!
//! **Grids**: `b^k + 1` points per dimension for any base `b >= 2` ([`Hierarchy`]);
//! coarse operators by rediscretisation; generalised full weighting (per dimension the
//! fine points at distance `d < b` weigh `(b - d) / b^2`) and trilinear interpolation
//! for base `b`; the coarsest grid (`b + 1` points) is solved exactly (discrete sine
//! transform). Per-point math: `ferrocuda_kernels::multigrid`, shared with the kernels.
//!
//! **Smoothers** ([`Smoother`]) on blocks of `s` points per dimension (default `s = b`):
//!
//! | smoother | one smoothing step | in place | deterministic |
//! |---|---|---|---|
//! | `Abl` (thesis: Advanced-Block-Layout) | red blocks, then black blocks, `B` Gauss-Seidel sweeps in each | yes | yes |
//! | `Sbl` (thesis: Simplified-Block-Layout) | two block-Jacobi sweeps over all blocks, `B` Gauss-Seidel sweeps in each | no (double buffer) | yes |
//! | `SblRacy` (the thesis's SBL code) | the same two sweeps in place: a block may read a neighbour's old or new values | yes | GPU: no |
//! | `Jacobi` | one damped point-Jacobi sweep (`omega = 6/7`) | no | yes |
//! | `Rbgs` | red points, then black points | yes | yes |
//!
//! A block update solves the block's residual equation with `B` lexicographic
//! Gauss-Seidel sweeps, all on chip: on the GPU one thread holds its block and the
//! block's constant terms in registers, reads the block and its halo once, and writes it
//! once ([`ferrocuda_kernels::multigrid::smooth_block`]). The SBL step counts two sweeps
//! as in seed 003 (Algorithm 5.3), so `nu` SBL steps do twice the work of `nu` ABL steps.
//!
//! **Cycles** ([`Cycle`]): V (the thesis), W, and full multigrid (FMG: `f` restricted to
//! every level, the coarsest solved, then per level trilinear interpolation of the
//! solution and one V-cycle; later cycles are V-cycles).
//!
//! **f32**: the smoother never forms `f - A u` (module docs of
//! `ferrocuda_kernels::multigrid`), and the residual that goes to the coarse grid is
//! formed in `f64` from the stored `f32` values and rounded once. Formed in `f32`, its
//! noise (`ulp(u) / h^2`, about 0.4 at `1025^3`) would come back through the coarse grid
//! as an error of about `1e-6`, more than the discretisation error `2.8e-7`.
//!
//! ```
//! use ferrocuda::multigrid::{MgOptions, Smoother, cpu};
//! let opts = MgOptions::new(17, 2).smoother(Smoother::Abl).cycles(6);
//! let (u, report) = cpu::solve::<f64>(&opts)?;
//! assert_eq!(u.len(), 17 * 17 * 17);
//! assert!(report.cycles_to_discretisation.is_some());
//! // Bad input is an error that says why.
//! assert!(cpu::solve::<f64>(&MgOptions::new(16, 2)).is_err());
//! # Ok::<(), ferrocuda::Error>(())
//! ```

pub mod cpu;
pub mod gpu;
pub mod grid;

use std::time::Instant;

use serde::Serialize;

use ferrocuda_kernels::multigrid::{MODE_ALL, MODE_BLACK, MODE_RED, MultigridKernels};

use crate::error::{Error, Result};
pub use grid::Hierarchy;

/// A real scalar with multigrid paths on the CPU and the GPU: `f32`, `f64`.
pub trait MgReal: crate::blas1::Element + crate::RealScalar + MultigridKernels {}
impl MgReal for f32 {}
impl MgReal for f64 {}

/// The smoother (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Smoother {
    /// Block Gauss-Seidel in red-black block order (seed 003's ABL).
    Abl,
    /// Block Jacobi over all blocks, double-buffered (seed 003's SBL, deterministic).
    #[default]
    Sbl,
    /// Seed 003's SBL as its code ran: in place, racy on the GPU.
    SblRacy,
    /// Damped point Jacobi (`omega = 6/7` unless given).
    Jacobi,
    /// Red-black point Gauss-Seidel.
    Rbgs,
}

impl Smoother {
    /// Block edge this smoother uses for a requested edge (`Jacobi`, `Rbgs`: 1).
    pub fn block_edge(self, requested: usize) -> usize {
        match self {
            Smoother::Jacobi | Smoother::Rbgs => 1,
            _ => requested,
        }
    }

    /// Gauss-Seidel sweeps inside a block for a requested count (point smoothers: 1).
    pub fn inner_sweeps(self, requested: usize) -> usize {
        match self {
            Smoother::Jacobi | Smoother::Rbgs => 1,
            _ => requested,
        }
    }

    /// Default damping: `6/7` for point Jacobi, 1 (none) otherwise.
    pub fn default_omega(self) -> f64 {
        match self {
            Smoother::Jacobi => 6.0 / 7.0,
            _ => 1.0,
        }
    }

    /// The sweeps of one smoothing step.
    pub(crate) fn sweeps(self) -> &'static [Sweep] {
        const RB: &[Sweep] = &[Sweep::Red, Sweep::Black];
        match self {
            Smoother::Abl | Smoother::Rbgs => RB,
            Smoother::Sbl => &[Sweep::AllOutOfPlace, Sweep::AllOutOfPlace],
            Smoother::SblRacy => &[Sweep::AllInPlace, Sweep::AllInPlace],
            Smoother::Jacobi => &[Sweep::AllOutOfPlace],
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Smoother::Abl => "abl",
            Smoother::Sbl => "sbl",
            Smoother::SblRacy => "sbl-racy",
            Smoother::Jacobi => "jacobi",
            Smoother::Rbgs => "rbgs",
        }
    }
}

/// One sweep of a smoother over a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// Red blocks in place.
    Red,
    /// Black blocks in place.
    Black,
    /// All blocks, from one buffer into the other.
    AllOutOfPlace,
    /// All blocks in place (racy on the GPU).
    AllInPlace,
}

impl Sweep {
    /// The kernel mode (`ferrocuda_kernels::multigrid::MODE_*`).
    pub fn mode(self) -> u32 {
        match self {
            Sweep::Red => MODE_RED,
            Sweep::Black => MODE_BLACK,
            _ => MODE_ALL,
        }
    }
}

/// The cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cycle {
    /// V-cycle (seed 003).
    #[default]
    V,
    /// W-cycle.
    W,
    /// Full multigrid, then V-cycles.
    Fmg,
}

/// When a solve stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// After all [`MgOptions::cycles`] (the thesis tables).
    #[default]
    AllCycles,
    /// After the first cycle that reaches the discretisation error
    /// ([`MgReport::cycles_to_discretisation`]), at most [`MgOptions::cycles`].
    Discretisation,
}

/// Options of a multigrid solve. [`MgOptions::new`] gives seed 003's setup (SBL,
/// V-cycles, `nu1 = nu2 = 5`, `B = 10`, blocks of `b`, 10 cycles).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MgOptions {
    /// Points per dimension, `b^k + 1`.
    pub n: usize,
    /// The base `b >= 2`.
    pub base: usize,
    /// The smoother.
    pub smoother: Smoother,
    /// The cycle.
    pub cycle: Cycle,
    /// Smoothing steps before the coarse-grid correction.
    pub nu1: usize,
    /// Smoothing steps after it.
    pub nu2: usize,
    /// Gauss-Seidel sweeps inside a block per block update (`B`, at least 1).
    pub inner: usize,
    /// Block edge; `None`: the base.
    pub block: Option<usize>,
    /// Damping of the smoother's update; `None`: [`Smoother::default_omega`].
    pub omega: Option<f64>,
    /// Cycles on the finest grid (the first is the FMG pass for [`Cycle::Fmg`]), at
    /// least 1.
    pub cycles: usize,
    /// When to stop.
    pub stop: Stop,
    /// "Reached the discretisation error" means the algebraic error `||u - u_h||_h` is
    /// at most this fraction of the discretisation error `||u_h - u||_h`, so the error
    /// `||u - u_exact||_h` is within this fraction of the discretisation error.
    pub target: f64,
    /// Told the cycles done of `cycles` after each cycle
    /// ([`crate::progress`]); none by default.
    #[serde(skip)]
    pub progress: crate::progress::Progress,
}

impl MgOptions {
    /// Seed 003's setup on `n = b^k + 1` points per dimension.
    pub fn new(n: usize, base: usize) -> MgOptions {
        MgOptions {
            n,
            base,
            smoother: Smoother::Sbl,
            cycle: Cycle::V,
            nu1: 5,
            nu2: 5,
            inner: 10,
            block: None,
            omega: None,
            cycles: 10,
            stop: Stop::AllCycles,
            target: 0.1,
            progress: crate::progress::Progress::none(),
        }
    }
    setters! {
        /// Sets the progress observer (the field `progress`).
        progress: crate::progress::Progress;
        /// Sets the smoother.
        smoother: Smoother;
        /// Sets the cycle.
        cycle: Cycle;
    }
    /// Sets `nu1` and `nu2`.
    pub fn smoothing(mut self, nu1: usize, nu2: usize) -> Self {
        self.nu1 = nu1;
        self.nu2 = nu2;
        self
    }
    /// Sets the inner Gauss-Seidel sweeps `B`.
    pub fn inner(mut self, b: usize) -> Self {
        self.inner = b;
        self
    }
    /// Sets the block edge.
    pub fn block(mut self, s: usize) -> Self {
        self.block = Some(s);
        self
    }
    /// Sets the damping.
    pub fn omega(mut self, w: f64) -> Self {
        self.omega = Some(w);
        self
    }
    setters! {
        /// Sets the number of cycles.
        cycles: usize;
        /// Sets the stopping rule.
        stop: Stop;
    }

    /// The block edge in use.
    pub fn block_edge(&self) -> usize {
        self.smoother.block_edge(self.block.unwrap_or(self.base))
    }

    /// The damping in use.
    pub fn omega_value(&self) -> f64 {
        self.omega.unwrap_or(self.smoother.default_omega())
    }

    /// Validates everything but the memory (sizes, `cycles >= 1`, `B >= 1`, block edge,
    /// damping, target); returns the hierarchy.
    pub fn validate(&self) -> Result<Hierarchy> {
        let h = Hierarchy::new(self.n, self.base)?;
        let bad = |reason: String| {
            Err(Error::InvalidArgument {
                op: "multigrid",
                reason,
            })
        };
        if self.cycles == 0 {
            return bad("cycles must be at least 1 (got 0)".into());
        }
        if self.inner == 0 {
            return bad("inner Gauss-Seidel sweeps B must be at least 1 (got 0)".into());
        }
        if self.block == Some(0) {
            return bad("the block edge must be at least 1 (got 0)".into());
        }
        let w = self.omega_value();
        if !(w > 0.0 && w < 2.0) {
            return bad(format!("the damping omega must lie in (0, 2) (got {w})"));
        }
        if !(self.target > 0.0 && self.target.is_finite()) {
            return bad(format!(
                "the target fraction must be positive (got {})",
                self.target
            ));
        }
        if self.inner > u32::MAX as usize {
            return bad(format!("B = {} is too large", self.inner));
        }
        Ok(h)
    }
}

/// What a solve reports. Per-cycle arrays have one entry per cycle run (entry `c` after
/// cycle `c + 1`); norms are grid norms over the interior of the finest grid.
#[derive(Debug, Clone, Serialize)]
pub struct MgReport {
    /// Where it ran ("CPU (16 threads)" or the GPU's name).
    pub device: String,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// The options.
    pub options: MgOptions,
    /// Levels (grids) of the hierarchy.
    pub levels: usize,
    /// Points per dimension of every level, coarsest first.
    pub sizes: Vec<usize>,
    /// Unknowns on the finest grid, `(n - 2)^3`.
    pub unknowns: usize,
    /// Block edge used.
    pub block: usize,
    /// Damping used.
    pub omega: f64,
    /// `||u_h - u||_h`: the error of the exact discrete solution.
    pub discretisation_error: f64,
    /// `||f||_h` (the residual of `u = 0`).
    pub initial_residual_norm: f64,
    /// `||u_exact||_h` (the error of `u = 0`).
    pub initial_error_norm: f64,
    /// `||f - A u||_h` after each cycle.
    pub residual_norm: Vec<f64>,
    /// `||u - u_exact||_h` after each cycle.
    pub error_norm: Vec<f64>,
    /// `||u - u_h||_h` after each cycle.
    pub algebraic_error_norm: Vec<f64>,
    /// Seconds of each cycle (the GPU synchronised at its end; norms not included).
    pub cycle_seconds: Vec<f64>,
    /// First cycle after which the discretisation error is reached
    /// ([`MgOptions::target`]).
    pub cycles_to_discretisation: Option<usize>,
    /// Seconds of the cycles up to and including that one.
    pub seconds_to_discretisation: Option<f64>,
    /// Mean residual reduction per cycle, `(r_m / r_0)^(1/m)`, `m` the cycles to the
    /// discretisation error (all cycles if it was not reached).
    pub convergence_factor: f64,
    /// Seconds to build the hierarchy (allocation, right-hand side).
    pub setup_seconds: f64,
    /// Wall seconds of the whole solve, per-cycle norms included.
    pub solve_seconds: f64,
    /// Bytes one cycle moves (a model: every full-grid read and write of the kernels,
    /// see `docs/results/multigrid.md`), per cycle run.
    pub cycle_bytes: Vec<f64>,
    /// Floating-point operations of one cycle (a model), per cycle run.
    pub cycle_flops: Vec<f64>,
}

impl MgReport {
    /// Mean bandwidth of the cycles (model bytes over cycle seconds), GB/s.
    pub fn cycle_gbps(&self) -> f64 {
        let b: f64 = self.cycle_bytes.iter().sum();
        let s: f64 = self.cycle_seconds.iter().sum();
        b / s / 1e9
    }

    /// A short human-readable summary with one line per cycle.
    pub fn to_text(&self) -> String {
        let o = &self.options;
        let mut t = format!(
            "multigrid on {} ({}): n = {} (base {}, levels {:?}), {} smoother, blocks of {}, B = {}, {}-cycle, nu1 = {}, nu2 = {}, omega = {}\n\
             discretisation error ||u_h - u||_h = {:.3e}; initial ||r||_h = {:.4e}, ||e||_h = {:.4e}\n",
            self.device,
            self.precision,
            o.n,
            o.base,
            self.sizes,
            o.smoother.name(),
            self.block,
            o.inner,
            match o.cycle {
                Cycle::V => "V",
                Cycle::W => "W",
                Cycle::Fmg => "FMG+V",
            },
            o.nu1,
            o.nu2,
            self.omega,
            self.discretisation_error,
            self.initial_residual_norm,
            self.initial_error_norm
        );
        let rows: Vec<Vec<String>> = (0..self.residual_norm.len())
            .map(|c| {
                vec![
                    (c + 1).to_string(),
                    format!("{:.6e}", self.residual_norm[c]),
                    format!("{:.6e}", self.error_norm[c]),
                    format!("{:.3e}", self.algebraic_error_norm[c]),
                    format!("{:.6}", self.cycle_seconds[c]),
                ]
            })
            .collect();
        t.push_str(&crate::report::table(
            &["cycle", "||r||_h", "||e||_h", "||u - u_h||_h", "seconds"],
            &rows,
        ));
        t.push('\n');
        t.push_str(&format!(
            "mean over the cycles: {:.1} GB/s, {:.1} GFLOP/s (model bytes and flops); setup {:.3} s, solve {:.3} s with the norms\n",
            self.cycle_gbps(),
            self.cycle_flops.iter().sum::<f64>() / self.cycle_seconds.iter().sum::<f64>() / 1e9,
            self.setup_seconds,
            self.solve_seconds
        ));
        match (self.cycles_to_discretisation, self.seconds_to_discretisation) {
            (Some(c), Some(s)) => t.push_str(&format!(
                "discretisation error reached after {c} cycles, {s:.4} s; convergence factor {:.3}\n",
                self.convergence_factor
            )),
            _ => t.push_str(&format!(
                "discretisation error not reached; convergence factor {:.3}\n",
                self.convergence_factor
            )),
        }
        t
    }
}

/// The operations a multigrid path offers on its hierarchy (level 0 the coarsest); the
/// cycles are written once against it ([`solve_with`]).
pub(crate) trait Levels {
    /// Number of levels.
    fn depth(&self) -> usize;
    /// Points per dimension of `level`.
    fn n(&self, level: usize) -> usize;
    /// Bytes of one scalar.
    fn elem(&self) -> usize;
    /// One smoother sweep on `level`.
    fn sweep(&mut self, level: usize, sweep: Sweep) -> Result<()>;
    /// `f_{l-1} <- R (f_l - A u_l)`, `u_{l-1} <- 0`.
    fn restrict_residual(&mut self, level: usize) -> Result<()>;
    /// `f_{l-1} <- R f_l` (FMG).
    fn restrict_rhs(&mut self, level: usize) -> Result<()>;
    /// `u_l <- u_l + P u_{l-1}` (`add`) or `u_l <- P u_{l-1}`.
    fn prolong(&mut self, level: usize, add: bool) -> Result<()>;
    /// Exact solve on level 0.
    fn solve_coarsest(&mut self) -> Result<()>;
    /// `[||r||_h, ||u - u_exact||_h, ||u - u_h||_h]` on the finest level.
    fn norms(&mut self) -> Result<[f64; 3]>;
    /// Waits until queued work is done (the GPU).
    fn sync(&mut self) -> Result<()>;
    /// `u <- 0` on the finest level.
    fn reset(&mut self) -> Result<()>;
    /// Queues one whole V or W cycle, which `queue` issues on this hierarchy; returns
    /// whether `queue` ran. The default runs it. The GPU replays a CUDA graph of the
    /// same launches where it captured one from the buffers' current state, and
    /// captures one where not (one launch per cycle instead of one per operation).
    fn queue_cycle(&mut self, queue: &mut dyn FnMut(&mut Self) -> Result<()>) -> Result<bool>
    where
        Self: Sized,
    {
        queue(self)?;
        Ok(true)
    }
}

/// A hierarchy's sizes without its arrays: runs a [`Driver`] for the cost model of a
/// cycle whose launches were replayed.
struct Sizes<'a> {
    sizes: &'a [usize],
    elem: usize,
}

impl Levels for Sizes<'_> {
    fn depth(&self) -> usize {
        self.sizes.len()
    }
    fn n(&self, level: usize) -> usize {
        self.sizes[level]
    }
    fn elem(&self) -> usize {
        self.elem
    }
    fn sweep(&mut self, _: usize, _: Sweep) -> Result<()> {
        Ok(())
    }
    fn restrict_residual(&mut self, _: usize) -> Result<()> {
        Ok(())
    }
    fn restrict_rhs(&mut self, _: usize) -> Result<()> {
        Ok(())
    }
    fn prolong(&mut self, _: usize, _: bool) -> Result<()> {
        Ok(())
    }
    fn solve_coarsest(&mut self) -> Result<()> {
        Ok(())
    }
    fn norms(&mut self) -> Result<[f64; 3]> {
        Ok([0.0; 3])
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn reset(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Model bytes and flops of the operations of one cycle.
#[derive(Debug, Default, Clone, Copy)]
struct Cost {
    bytes: f64,
    flops: f64,
}

/// Runs cycles against a [`Levels`] and keeps the cost model.
struct Driver<'a, L: Levels> {
    lv: &'a mut L,
    opts: &'a MgOptions,
    sweeps: &'static [Sweep],
    inner: usize,
    cost: Cost,
}

impl<'a, L: Levels> Driver<'a, L> {
    fn new(lv: &'a mut L, opts: &'a MgOptions) -> Self {
        Driver {
            lv,
            opts,
            sweeps: opts.smoother.sweeps(),
            inner: opts.smoother.inner_sweeps(opts.inner),
            cost: Cost::default(),
        }
    }

    fn points(&self, level: usize) -> f64 {
        (self.lv.n(level) as f64).powi(3)
    }

    fn smooth(&mut self, level: usize, steps: usize) -> Result<()> {
        let pts = self.points(level);
        let e = self.lv.elem() as f64;
        for _ in 0..steps {
            for &s in self.sweeps {
                self.lv.sweep(level, s)?;
                // Every sweep reads u and f and writes u over the whole grid: one colour's
                // blocks are narrower than a 32-byte memory sector, so a red sweep touches
                // every sector too.
                self.cost.bytes += 3.0 * pts * e;
                let updated = if s.mode() == MODE_ALL { pts } else { pts / 2.0 };
                // Per point: constant term (mul, up to 6 adds, mul) and B updates of up to
                // 6 adds and one FMA.
                self.cost.flops += updated * (8.0 + 8.0 * self.inner as f64);
            }
        }
        Ok(())
    }

    fn cycle(&mut self, level: usize, gamma: usize) -> Result<()> {
        if level == 0 {
            return self.lv.solve_coarsest();
        }
        let (fine, coarse) = (self.points(level), self.points(level - 1));
        let e = self.lv.elem() as f64;
        self.smooth(level, self.opts.nu1)?;
        self.lv.restrict_residual(level)?;
        let b = self.opts.base as f64;
        // Residual: read u, f, write r; restriction: read r, write f_c; zero u_c.
        self.cost.bytes += (4.0 * fine + 2.0 * coarse) * e;
        self.cost.flops += 9.0 * fine + 2.0 * (2.0 * b - 1.0).powi(3) * coarse;
        let reps = if level == 1 { 1 } else { gamma };
        for _ in 0..reps {
            self.cycle(level - 1, gamma)?;
        }
        self.lv.prolong(level, true)?;
        self.cost.bytes += (2.0 * fine + coarse) * e;
        self.cost.flops += 17.0 * fine;
        self.smooth(level, self.opts.nu2)
    }

    fn fmg(&mut self) -> Result<()> {
        let top = self.lv.depth() - 1;
        let e = self.lv.elem() as f64;
        for l in (1..=top).rev() {
            self.lv.restrict_rhs(l)?;
            self.cost.bytes += (self.points(l) + self.points(l - 1)) * e;
        }
        self.lv.solve_coarsest()?;
        for l in 1..=top {
            self.lv.prolong(l, false)?;
            self.cost.bytes += (self.points(l) + self.points(l - 1)) * e;
            self.cycle(l, 1)?;
        }
        Ok(())
    }
}

/// Solves on a prepared hierarchy: `u <- 0`, then the cycles of `opts`, with the norms
/// after each. `device`, `precision`, `sizes` and the setup time go into the report.
pub(crate) fn solve_with<L: Levels>(
    lv: &mut L,
    opts: &MgOptions,
    problem: &grid::SineProblem,
    device: String,
    precision: &'static str,
    setup_seconds: f64,
) -> Result<MgReport> {
    let h = opts.validate()?;
    let start = Instant::now();
    lv.reset()?;
    let [r0, e0, _] = lv.norms()?;
    let mut report = MgReport {
        device,
        precision,
        options: opts.clone(),
        levels: h.depth(),
        sizes: h.sizes().to_vec(),
        unknowns: (opts.n - 2).pow(3),
        block: opts.block_edge(),
        omega: opts.omega_value(),
        discretisation_error: problem.discretisation_error,
        initial_residual_norm: r0,
        initial_error_norm: e0,
        residual_norm: Vec::new(),
        error_norm: Vec::new(),
        algebraic_error_norm: Vec::new(),
        cycle_seconds: Vec::new(),
        cycles_to_discretisation: None,
        seconds_to_discretisation: None,
        convergence_factor: f64::NAN,
        setup_seconds,
        solve_seconds: 0.0,
        cycle_bytes: Vec::new(),
        cycle_flops: Vec::new(),
    };
    let gamma = if opts.cycle == Cycle::W { 2 } else { 1 };
    let top = h.depth() - 1;
    for c in 0..opts.cycles {
        let t = Instant::now();
        let mut cost = Cost::default();
        if c == 0 && opts.cycle == Cycle::Fmg {
            let mut driver = Driver::new(lv, opts);
            driver.fmg()?;
            cost = driver.cost;
        } else {
            let queued = lv.queue_cycle(&mut |lv| {
                let mut driver = Driver::new(lv, opts);
                driver.cycle(top, gamma)?;
                cost = driver.cost;
                Ok(())
            })?;
            if !queued {
                // Replayed: the same operations, so the same model cost.
                let mut sizes = Sizes {
                    sizes: h.sizes(),
                    elem: lv.elem(),
                };
                let mut driver = Driver::new(&mut sizes, opts);
                driver.cycle(top, gamma)?;
                cost = driver.cost;
            }
        }
        lv.sync()?;
        report.cycle_seconds.push(t.elapsed().as_secs_f64());
        report.cycle_bytes.push(cost.bytes);
        report.cycle_flops.push(cost.flops);
        let [r, e, a] = lv.norms()?;
        report.residual_norm.push(r);
        report.error_norm.push(e);
        report.algebraic_error_norm.push(a);
        opts.progress.report(c as u64 + 1, opts.cycles as u64);
        if report.cycles_to_discretisation.is_none()
            && a <= opts.target * problem.discretisation_error
        {
            report.cycles_to_discretisation = Some(c + 1);
            report.seconds_to_discretisation = Some(report.cycle_seconds.iter().sum());
            if opts.stop == Stop::Discretisation {
                break;
            }
        }
    }
    let m = report
        .cycles_to_discretisation
        .unwrap_or(report.residual_norm.len());
    if m > 0 && r0 > 0.0 {
        report.convergence_factor = (report.residual_norm[m - 1] / r0).powf(1.0 / m as f64);
    }
    report.solve_seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Name of a precision.
pub(crate) fn precision_name<T: MgReal>() -> &'static str {
    if size_of::<T>() == 4 { "f32" } else { "f64" }
}
