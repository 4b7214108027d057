//! Model predictive control of an object swarm (Jahn 2010, ch. 7-8): the cost `J`, one
//! scalar constraint `g` and their gradients on the CPU (rayon, [`cpu`]) and the GPU
//! ([`gpu`]), an optimiser over them ([`optimize`]) and the closed loop of §8.5.
//!
//! **Model** ([`SwarmModel`], §8.3): `M` objects, each a planar double integrator with
//! state `(x, vx, y, vy)`, control `u in [-12, 12]^2`, `x+ = x + T vx + T^2/2 u_x`,
//! `vx+ = vx + T u_x` (same in `y`), `T = 0.02`. Over a horizon of `N` steps from the
//! swarm state `x(0)`:
//!
//! - `J(u) = sum_j (sum_{i=0}^{N-1} l(x_j(i)) + 20 l(x_j(N)))`, with
//!   `l(x) = (x - x_r)^2 + (y - y_r)^2 + (1/50) ((vx - vx_r)^2 + (vy - vy_r)^2)`;
//! - `g(u) = sum_{i=1}^{N} (sum_{j<k} beta_{-d,d}(|p_j - p_k|) + sum_j g2(x_j(i)))` with
//!   `g2 = alpha_{-1,1}(|v|) + sum_{discs} beta_{-0.3,0.3}(|p - c|)` and Jahn's C^2
//!   penalties `beta_{-a,a}(r) = min(((r^2 - a^2)/a^2)^3, 0)` (zero iff `r >= a`),
//!   `alpha_{-a,a}(r) = min(-((r^2 - a^2)/a^2)^3, 0)` (zero iff `r <= a`). So `g <= 0`
//!   always, and `g = 0` exactly when every constraint holds at every step
//!   (`d = 0.1`, `|v| <= 1`, outside the discs of radius 0.3 at (1.4, 0.4),
//!   (1.4, -0.4), (2.1, 0)).
//!
//! **Gradients** ([`Gradient`]): `Forward` is Jahn's method (step `1e-7`, one run
//! per component from the nominal state at that component's step, `N M 2` runs of
//! `O(N M^2)`); `Exact` is an adjoint sweep over the horizon,
//! `lam(i) = grad phi_i(x(i)) + A^T lam(i + 1)`, `dJ/du(i) = B^T lam(i + 1)`, at the cost
//! of one evaluation (`O(N M^2)` for the pair terms, which are tiled through shared
//! memory on the GPU so `M` reaches thousands); `Central` is for checks.
//!
//! ```
//! use ferrocuda::mpc::{Gradient, SwarmModel, cpu};
//! let model = SwarmModel::new(16, 5)?;
//! let x0 = model.thesis_initial_state();
//! let u = vec![0.5; model.controls()];
//! let mut gj = vec![0.0; u.len()];
//! let mut gg = vec![0.0; u.len()];
//! let e = cpu::gradient(&model, &x0, &u, Gradient::Exact, &mut gj, &mut gg)?;
//! assert!(e.cost > 0.0);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

pub mod cpu;
pub mod gpu;
mod model;
pub mod optimize;

use serde::Serialize;

pub use model::{ConstraintCheck, SwarmModel};

use crate::error::Result;

/// Jahn's forward-difference step (`cudiffh = 1E-7`).
pub const FD_STEP: f64 = 1e-7;

/// `J` and `g` at one control sequence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evaluation {
    /// The cost `J`.
    pub cost: f64,
    /// The constraint `g` (`<= 0`; `0` when every constraint holds).
    pub constraint: f64,
}

/// How gradients are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gradient {
    /// Adjoint sweep: exact to rounding, the cost of one evaluation.
    Exact,
    /// Jahn's forward differences (step [`FD_STEP`]).
    #[serde(rename = "fd")]
    Forward,
    /// Central differences of full evaluations (CPU only; for checks).
    Central,
}

/// Something that evaluates `J`, `g` and their gradients for one model: the CPU twin
/// ([`CpuEvaluator`]) or the GPU ([`gpu::GpuEvaluator`]). The optimiser is written once
/// against it.
pub trait Evaluator {
    /// The model.
    fn model(&self) -> &SwarmModel;
    /// Where it runs, in words.
    fn device(&self) -> String;
    /// Sets the reference state `(x, vx, y, vy)` of the cost.
    fn set_reference(&mut self, reference: [f64; 4]) -> Result<()>;
    /// `J` and `g` at `u` from `x0`.
    fn evaluate(&mut self, x0: &[f64], u: &[f64]) -> Result<Evaluation>;
    /// `J`, `g` and both gradients at `u` from `x0`.
    fn gradient(
        &mut self,
        x0: &[f64],
        u: &[f64],
        grad_cost: &mut [f64],
        grad_constraint: &mut [f64],
    ) -> Result<Evaluation>;
}

/// The CPU twin as an [`Evaluator`].
#[derive(Debug, Clone)]
pub struct CpuEvaluator {
    model: SwarmModel,
    method: Gradient,
}

impl CpuEvaluator {
    /// Evaluates `model` on all cores, gradients by `method`. Errors: an invalid model, or
    /// one whose arrays do not fit the host's memory ([`SwarmModel::check_memory`]).
    pub fn new(model: SwarmModel, method: Gradient) -> Result<Self> {
        model.validate()?;
        model.check_memory()?;
        Ok(CpuEvaluator { model, method })
    }
}

impl Evaluator for CpuEvaluator {
    fn model(&self) -> &SwarmModel {
        &self.model
    }
    fn device(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }
    fn set_reference(&mut self, reference: [f64; 4]) -> Result<()> {
        self.model.reference = reference;
        self.model.validate()
    }
    fn evaluate(&mut self, x0: &[f64], u: &[f64]) -> Result<Evaluation> {
        cpu::evaluate(&self.model, x0, u)
    }
    fn gradient(
        &mut self,
        x0: &[f64],
        u: &[f64],
        grad_cost: &mut [f64],
        grad_constraint: &mut [f64],
    ) -> Result<Evaluation> {
        cpu::gradient(&self.model, x0, u, self.method, grad_cost, grad_constraint)
    }
}
