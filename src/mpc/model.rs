//! The swarm model of Jahn (2010) §8.3: sizes, parameters, checks of inputs and of the
//! constraints themselves (not their penalties).

use ferrocuda_kernels::mpc::{DISCS, NU, NX, SwarmParams};

use crate::error::{Error, Result};

/// A swarm of `objects` planar double integrators over a horizon of `horizon` steps,
/// with every parameter of Jahn's model. `Default` is §8.3 with `M = 32`, `N = 5`.
///
/// ```
/// use ferrocuda::mpc::SwarmModel;
/// let m = SwarmModel::new(64, 5)?;
/// assert_eq!(m.controls(), 5 * 64 * 2);
/// assert!(SwarmModel::new(0, 5).is_err());
/// # Ok::<(), ferrocuda::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwarmModel {
    /// Objects `M`.
    pub objects: usize,
    /// Horizon `N` (steps).
    pub horizon: usize,
    /// Sampling period `T` (0.02).
    pub t: f64,
    /// Smallest distance of two objects `d` (0.1).
    pub min_distance: f64,
    /// Largest speed (1).
    pub max_speed: f64,
    /// Radius of the forbidden discs (0.3).
    pub disc_radius: f64,
    /// Centres of the forbidden discs ((1.4, 0.4), (1.4, -0.4), (2.1, 0)).
    pub discs: [[f64; 2]; DISCS],
    /// Bound of each control component: `u in [-u_max, u_max]^2` (12).
    pub max_control: f64,
    /// Reference state `(x, vx, y, vy)` (0).
    pub reference: [f64; NX],
    /// Weight of the velocity terms in the stage cost: `1/50` as in the formula of
    /// §8.3.1 (Jahn's code squares `0.02 (v - v_ref)`, a weight of `4e-4`).
    pub velocity_weight: f64,
    /// Weight of the terminal cost (20).
    pub terminal_weight: f64,
}

impl Default for SwarmModel {
    fn default() -> Self {
        SwarmModel {
            objects: 32,
            horizon: 5,
            t: 0.02,
            min_distance: 0.1,
            max_speed: 1.0,
            disc_radius: 0.3,
            discs: [[1.4, 0.4], [1.4, -0.4], [2.1, 0.0]],
            max_control: 12.0,
            reference: [0.0; NX],
            velocity_weight: 1.0 / 50.0,
            terminal_weight: 20.0,
        }
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "mpc::SwarmModel",
        reason,
    }
}

impl SwarmModel {
    /// Jahn's model with `objects` objects and horizon `horizon`, checked
    /// ([`SwarmModel::validate`], [`SwarmModel::check_memory`]).
    pub fn new(objects: usize, horizon: usize) -> Result<Self> {
        let m = SwarmModel {
            objects,
            horizon,
            ..Default::default()
        };
        m.validate()?;
        m.check_memory()?;
        Ok(m)
    }

    /// Bytes of host memory a solve with this model works in (a model): the trajectory,
    /// `(N + 1) M 4` values, and 16 sequences of `N M 2` (the controls, both gradients,
    /// the evaluation's pair sums and per-object gradients, the optimiser's bounds and
    /// its L-BFGS vectors), in `f64`; exact in `u128`.
    pub fn host_bytes(&self) -> u128 {
        let (m, n) = (self.objects as u128, self.horizon as u128);
        let values = (n + 1) * m * NX as u128 + 16 * n * m * NU as u128;
        crate::alloc::bytes_of(values, size_of::<f64>())
    }

    /// `Ok` when [`SwarmModel::host_bytes`] fit what this process may allocate
    /// ([`crate::alloc::check_host_bytes`]), else [`Error::OutOfHostMemory`] naming
    /// `objects`, `horizon` and the bytes. The evaluators and the closed loop check it
    /// once before allocating.
    pub fn check_memory(&self) -> Result<()> {
        crate::alloc::check_host_bytes(
            &format!(
                "the MPC problem with objects = {}, horizon = {} (its trajectory and control sequences)",
                self.objects, self.horizon
            ),
            self.host_bytes(),
        )
    }

    /// Checks sizes and parameters: at least one object and one step, a trajectory of
    /// `(N + 1) M 4` values that `usize` can count, positive finite `T`, distance, speed,
    /// radius and control bound, finite weights, centres and reference. (Cheap: every
    /// evaluation calls it; the memory is [`SwarmModel::check_memory`].)
    pub fn validate(&self) -> Result<()> {
        if self.objects == 0 {
            return Err(invalid("the swarm needs at least 1 object, got 0".into()));
        }
        if self.horizon == 0 {
            return Err(invalid("the horizon needs at least 1 step, got 0".into()));
        }
        let states = (self.horizon as u128 + 1) * self.objects as u128 * NX as u128;
        if states > isize::MAX as u128 / 8 {
            return Err(invalid(format!(
                "objects = {} and horizon = {} need a trajectory of {states} values, more than any address space holds",
                self.objects, self.horizon
            )));
        }
        for (name, v) in [
            ("T", self.t),
            ("min_distance", self.min_distance),
            ("max_speed", self.max_speed),
            ("disc_radius", self.disc_radius),
            ("max_control", self.max_control),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(format!(
                    "{name} must be positive and finite, got {v}"
                )));
            }
        }
        for (name, v) in [
            ("velocity_weight", self.velocity_weight),
            ("terminal_weight", self.terminal_weight),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(format!(
                    "{name} must be non-negative and finite, got {v}"
                )));
            }
        }
        if self
            .discs
            .iter()
            .flatten()
            .chain(&self.reference)
            .any(|v| !v.is_finite())
        {
            return Err(invalid(
                "disc centres and the reference must be finite".into(),
            ));
        }
        Ok(())
    }

    /// Length of a control sequence: `N M 2`.
    pub fn controls(&self) -> usize {
        self.horizon * self.objects * NU
    }

    /// Length of a swarm state: `M 4`.
    pub fn states(&self) -> usize {
        self.objects * NX
    }

    /// The parameters as the kernels take them.
    pub fn params(&self) -> SwarmParams {
        SwarmParams {
            t: self.t,
            d: self.min_distance,
            vmax: self.max_speed,
            disc_radius: self.disc_radius,
            discs: self.discs,
            reference: self.reference,
            velocity_weight: self.velocity_weight,
            terminal_weight: self.terminal_weight,
        }
    }

    /// The same model with the constraints tightened by the relative `margin`: distance
    /// and disc radius times `1 + margin`, speed times `1 - margin`. The closed loop
    /// optimises against it so that the penalty's small residual stays clear of the
    /// true constraints.
    pub fn tightened(&self, margin: f64) -> SwarmModel {
        SwarmModel {
            min_distance: self.min_distance * (1.0 + margin),
            disc_radius: self.disc_radius * (1.0 + margin),
            max_speed: self.max_speed * (1.0 - margin),
            ..*self
        }
    }

    /// §8.5.2's initial swarm (8.6): object `j` at `(0.12 j, 0, 1, 0)`.
    pub fn thesis_initial_state(&self) -> Vec<f64> {
        (0..self.objects)
            .flat_map(|j| [0.12 * j as f64, 0.0, 1.0, 0.0])
            .collect()
    }

    /// `Err` unless `x0` has `M 4` and `u` `N M 2` finite values (`op` names the caller).
    pub(crate) fn check_inputs(&self, op: &'static str, x0: &[f64], u: &[f64]) -> Result<()> {
        crate::error::check_len(op, "x0", self.states(), x0.len())?;
        crate::error::check_len(op, "u", self.controls(), u.len())?;
        if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op,
                reason: format!("x0[{i}] = {} is not finite", x0[i]),
            });
        }
        if let Some(i) = u.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op,
                reason: format!("u[{i}] = {} is not finite", u[i]),
            });
        }
        Ok(())
    }

    /// How the swarm state `x` (`M 4` values) stands against the true constraints.
    pub fn check_state(&self, x: &[f64]) -> ConstraintCheck {
        let m = x.len() / NX;
        let mut c = ConstraintCheck {
            min_pair_distance: f64::INFINITY,
            max_speed: 0.0,
            min_disc_distance: f64::INFINITY,
            violations: 0,
        };
        for j in 0..m {
            let s = &x[NX * j..NX * j + NX];
            let speed = s[1].hypot(s[3]);
            c.max_speed = c.max_speed.max(speed);
            if speed > self.max_speed {
                c.violations += 1;
            }
            for d in &self.discs {
                let r = (s[0] - d[0]).hypot(s[2] - d[1]);
                c.min_disc_distance = c.min_disc_distance.min(r);
                if r < self.disc_radius {
                    c.violations += 1;
                }
            }
            for k in j + 1..m {
                let o = &x[NX * k..NX * k + NX];
                let r = (s[0] - o[0]).hypot(s[2] - o[2]);
                c.min_pair_distance = c.min_pair_distance.min(r);
                if r < self.min_distance {
                    c.violations += 1;
                }
            }
        }
        c
    }
}

/// A swarm state against the true constraints of the model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ConstraintCheck {
    /// Smallest distance of two objects.
    pub min_pair_distance: f64,
    /// Largest speed.
    pub max_speed: f64,
    /// Smallest distance of an object to a disc centre.
    pub min_disc_distance: f64,
    /// Violated constraints: pairs too close, objects too fast, objects inside a disc.
    pub violations: usize,
}
