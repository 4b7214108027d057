//! Test problems on an `nx x ny` grid of interior points with Dirichlet zero outside.
//! Storage is row-major with `x1` fastest: point `(i, j)` (at `((i + 1) hx, (j + 1) hy)`)
//! is element `j nx + i`.
//!
//! - [`Heat2d`]: `u_t = nu Laplace(u)` on the unit square, `u0 = sin(pi x) sin(pi y)`. The
//!   initial value is an eigenvector of the 5-point Laplacian, so the semi-discrete
//!   solution is `exp(lambda t) u0` with `lambda = -8 nu sin^2(pi h / 2) / h^2`
//!   ([`Heat2d::exact`]).
//! - [`ReactionAdvectionDiffusion`]: Jahn's (2010) problem (5.1),
//!   `y_t - 0.1 Laplace(y) + y_x1 + y_x2 = 10 (y - y^3)`, `y = 0` on the boundary,
//!   `y(., 0) = 1`, grid spacing `0.01` in both directions (the domain grows with `N`,
//!   as in Jahn), with central advection (5.2) or the forward differences of
//!   Jahn's code ([`Advection`]); the spectral-radius bound is Gershgorin's, per row.

use std::f64::consts::PI;

use rayon::prelude::*;

use ferrocuda_host::{DeviceView, DeviceViewMut, Gpu};

use super::gpu::StencilLaunch;
use super::{DeviceRhs, Rhs};
use crate::blas1::cpu::CHUNK;
use crate::cpu_dispatch::fma_kernel;
use crate::error::{Error, Result};
use ferrocuda_kernels::rock4::{self as k, RadCoeffs};

/// The discretisation of the advection terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Advection {
    /// Central differences, Jahn (2010) eq. (5.2) (second order).
    #[default]
    Central,
    /// Forward differences `(y_{i+1} - y_i) / h`, as in Jahn's code's `eval_pde`
    /// (first order, downwind for positive velocity).
    Forward,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Heat,
    Rad(Advection),
}

/// A 5-point stencil right-hand side: the shared evaluation of both problems.
#[derive(Debug, Clone, Copy)]
struct Stencil {
    nx: usize,
    ny: usize,
    coeffs: RadCoeffs,
    kind: Kind,
}

fma_kernel! {
/// `out` = rows `j0 ..` of `f(y)`.
fn rows_chunk[](s: &Stencil, y: &[f64], out: &mut [f64], j0: usize) {
    let (nx, ny, p, kind) = (s.nx, s.ny, &s.coeffs, s.kind.code());
    for (jj, orow) in out.chunks_exact_mut(nx).enumerate() {
        let j = j0 + jj;
        let row = &y[j * nx..(j + 1) * nx];
        let south = if j > 0 { Some(&y[(j - 1) * nx..j * nx]) } else { None };
        let north = if j + 1 < ny { Some(&y[(j + 1) * nx..(j + 2) * nx]) } else { None };
        for (i, o) in orow.iter_mut().enumerate() {
            let c = row[i];
            let w = if i > 0 { row[i - 1] } else { 0.0 };
            let e = if i + 1 < nx { row[i + 1] } else { 0.0 };
            let so = south.map_or(0.0, |r| r[i]);
            let no = north.map_or(0.0, |r| r[i]);
            *o = k::stencil_point(kind, p, c, w, e, so, no);
        }
    }
}
}

impl Kind {
    /// The kernels' stencil kind (`ferrocuda_kernels::rock4::KIND_*`).
    fn code(self) -> u32 {
        match self {
            Kind::Heat => k::KIND_HEAT,
            Kind::Rad(Advection::Central) => k::KIND_RAD_CENTRAL,
            Kind::Rad(Advection::Forward) => k::KIND_RAD_FORWARD,
        }
    }
}

impl Stencil {
    fn launch(&self) -> StencilLaunch {
        StencilLaunch(k::Stencil {
            nx: self.nx,
            ny: self.ny,
            kind: self.kind.code(),
            coeffs: self.coeffs,
        })
    }

    fn eval(&self, y: &[f64], dy: &mut [f64]) -> Result<()> {
        let n = self.nx * self.ny;
        crate::error::check_len("rock4 rhs", "y", n, y.len())?;
        crate::error::check_len("rock4 rhs", "dy", n, dy.len())?;
        let rows = (CHUNK / self.nx).max(1);
        let each = |(b, c): (usize, &mut [f64])| rows_chunk(self, y, c, b * rows);
        if n < super::cpu::PARALLEL_FROM {
            dy.chunks_mut(rows * self.nx).enumerate().for_each(each);
        } else {
            dy.par_chunks_mut(rows * self.nx).enumerate().for_each(each);
        }
        Ok(())
    }
}

/// `Ok` for `n >= 1` where one vector of the `n x n` grid fits what the host may
/// allocate (the integrators need about ten): else an error naming `n` and the bytes.
fn check_grid(op: &'static str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument {
            op,
            reason: "the grid needs at least 1 interior point per direction, got n = 0".into(),
        });
    }
    let points = n as u128 * n as u128;
    crate::alloc::check_host_bytes(
        &format!("{op}: one vector of the {n} x {n} grid ({points} unknowns)"),
        crate::alloc::bytes_of(points, size_of::<f64>()),
    )
}

/// `Ok` unless the stencil's coefficients or its Gershgorin bound (at `y = 0` and at the
/// initial `y = 1`) overflow: then no step could be taken, and the error names the
/// parameters (`params`) instead of an integration stopping at `t0`.
fn check_coefficients(op: &'static str, kind: Kind, p: &RadCoeffs, params: &str) -> Result<()> {
    let values = [p.nu, p.rx, p.ry, p.cx, p.cy, p.mu];
    let rho = [0.0, 1.0].map(|y| k::gershgorin_row(kind.code(), p, y));
    if values.iter().chain(&rho).all(|v| v.is_finite()) {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op,
        reason: format!(
            "{params}: the spectral radius (Gershgorin bound) is {:e}, beyond the range of f64, so no step can be taken",
            rho[0].max(rho[1])
        ),
    })
}

fn check_positive(op: &'static str, what: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            reason: format!("{what} must be finite and positive, got {v}"),
        })
    }
}

/// `u_t = nu Laplace(u)` on the unit square with `n x n` interior points
/// (`h = 1 / (n + 1)`), Dirichlet zero, `u0 = sin(pi x) sin(pi y)`.
#[derive(Debug, Clone)]
pub struct Heat2d {
    n: usize,
    nu: f64,
    stencil: Stencil,
}

impl Heat2d {
    /// The problem on `n x n` interior points with diffusion `nu`.
    /// Errors: `n == 0`, a grid of which one vector does not fit the host's memory,
    /// `nu` not finite and positive, or so large that the spectral radius
    /// `8 nu / h^2` overflows.
    pub fn new(n: usize, nu: f64) -> Result<Self> {
        check_grid("Heat2d::new", n)?;
        check_positive("Heat2d::new", "nu", nu)?;
        let h = 1.0 / (n as f64 + 1.0);
        let r = 1.0 / (h * h);
        let coeffs = RadCoeffs {
            nu,
            rx: r,
            ry: r,
            cx: 0.0,
            cy: 0.0,
            mu: 0.0,
        };
        let params = format!("nu = {nu:e} on the {n} x {n} grid (h = {h:e})");
        check_coefficients("Heat2d::new", Kind::Heat, &coeffs, &params)?;
        Ok(Heat2d {
            n,
            nu,
            stencil: Stencil {
                nx: n,
                ny: n,
                coeffs,
                kind: Kind::Heat,
            },
        })
    }
    /// Interior points per direction.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Grid spacing `1 / (n + 1)`.
    pub fn spacing(&self) -> f64 {
        1.0 / (self.n as f64 + 1.0)
    }
    /// `sin(pi x) sin(pi y)` at the grid points.
    pub fn initial(&self) -> Vec<f64> {
        let h = self.spacing();
        let s: Vec<f64> = (1..=self.n).map(|i| (PI * i as f64 * h).sin()).collect();
        let mut u = Vec::with_capacity(self.n * self.n);
        for sy in &s {
            u.extend(s.iter().map(|sx| sx * sy));
        }
        u
    }
    /// The eigenvalue of `nu Laplace_h` for `u0`: `-8 nu sin^2(pi h / 2) / h^2`.
    pub fn eigenvalue(&self) -> f64 {
        let h = self.spacing();
        let s = (PI * h / 2.0).sin();
        -8.0 * self.nu * s * s / (h * h)
    }
    /// The exact semi-discrete solution `exp(lambda t) u0`.
    pub fn exact(&self, t: f64) -> Vec<f64> {
        let g = (self.eigenvalue() * t).exp();
        let mut u = self.initial();
        u.iter_mut().for_each(|v| *v *= g);
        u
    }
}

impl Heat2d {
    /// The problem on `gpu` ([`DeviceRhs`]); its work runs on the stream of the output.
    pub fn on_device(&self, gpu: &Gpu) -> DeviceHeat2d {
        OnDevice::new(self.clone(), self.stencil.launch(), gpu)
    }
}

impl Rhs for Heat2d {
    fn dim(&self) -> usize {
        self.n * self.n
    }
    fn eval(&self, _t: f64, y: &[f64], dy: &mut [f64]) -> Result<()> {
        self.stencil.eval(y, dy)
    }
    /// Gershgorin: `8 nu / h^2`.
    fn spectral_radius_bound(&self, _t: f64, _y: &[f64]) -> Option<f64> {
        Some(k::gershgorin_row(k::KIND_HEAT, &self.stencil.coeffs, 0.0))
    }
}

/// Jahn's (2010) problem (5.1): `y_t = nu Laplace(y) - ax y_x1 - ay y_x2 + mu (y - y^3)` on
/// `n x n` interior points of spacing `h` (thesis: `nu = 0.1`, `ax = ay = 1`, `mu = 10`,
/// `h = 0.01`), `y = 0` on the boundary, `y(., 0) = 1`.
#[derive(Debug, Clone)]
pub struct ReactionAdvectionDiffusion {
    n: usize,
    spacing: f64,
    nu: f64,
    adv: (f64, f64),
    mu: f64,
    advection: Advection,
    stencil: Stencil,
}

impl ReactionAdvectionDiffusion {
    /// Jahn's setup on `n x n` points with the given advection scheme.
    /// Errors: `n == 0`.
    pub fn thesis(n: usize, advection: Advection) -> Result<Self> {
        Self::new(n, 0.01, 0.1, (1.0, 1.0), 10.0, advection)
    }

    /// General coefficients: spacing `h`, diffusion `nu`, velocity `(ax, ay)`, reaction
    /// rate `mu`. Errors: `n == 0`, a grid of which one vector does not fit the host's
    /// memory, `h` or `nu` not finite and positive, `ax`, `ay`, `mu` not finite, or
    /// coefficients whose spectral radius overflows.
    pub fn new(
        n: usize,
        h: f64,
        nu: f64,
        (ax, ay): (f64, f64),
        mu: f64,
        advection: Advection,
    ) -> Result<Self> {
        const OP: &str = "ReactionAdvectionDiffusion::new";
        check_grid(OP, n)?;
        check_positive(OP, "h", h)?;
        check_positive(OP, "nu", nu)?;
        for (what, v) in [("ax", ax), ("ay", ay), ("mu", mu)] {
            if !v.is_finite() {
                return Err(Error::InvalidArgument {
                    op: OP,
                    reason: format!("{what} must be finite, got {v}"),
                });
            }
        }
        let width = match advection {
            Advection::Central => 2.0 * h,
            Advection::Forward => h,
        };
        let r = 1.0 / (h * h);
        let coeffs = RadCoeffs {
            nu,
            rx: r,
            ry: r,
            cx: ax / width,
            cy: ay / width,
            mu,
        };
        let params =
            format!("nu = {nu:e}, (ax, ay) = ({ax:e}, {ay:e}), mu = {mu:e} with h = {h:e}");
        check_coefficients(OP, Kind::Rad(advection), &coeffs, &params)?;
        Ok(ReactionAdvectionDiffusion {
            n,
            spacing: h,
            nu,
            adv: (ax, ay),
            mu,
            advection,
            stencil: Stencil {
                nx: n,
                ny: n,
                coeffs,
                kind: Kind::Rad(advection),
            },
        })
    }
    /// Interior points per direction.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Grid spacing.
    pub fn spacing(&self) -> f64 {
        self.spacing
    }
    /// `(nu, (ax, ay), mu)`.
    pub fn coefficients(&self) -> (f64, (f64, f64), f64) {
        (self.nu, self.adv, self.mu)
    }
    /// The advection scheme.
    pub fn advection(&self) -> Advection {
        self.advection
    }
    /// `y(., 0) = 1`.
    pub fn initial(&self) -> Vec<f64> {
        vec![1.0; self.n * self.n]
    }
    /// The Gershgorin bound `max_i |J_ii| + sum_{j != i} |J_ij|` at `y` (full stencil in
    /// every row); for [`Advection::Forward`] Jahn's `rho()` with its dropped
    /// `|nu / hy^2|` term restored.
    pub fn gershgorin(&self, y: &[f64]) -> f64 {
        let p = self.stencil.coeffs;
        let row = match self.advection {
            Advection::Central => k::gershgorin_central,
            Advection::Forward => k::gershgorin_forward,
        };
        y.par_chunks(CHUNK)
            .map(|c| {
                c.iter()
                    .map(|&v| row(p.nu, p.rx, p.ry, p.cx, p.cy, p.mu, v))
                    .fold(0.0, f64::max)
            })
            .reduce(|| 0.0, f64::max)
    }
}

impl ReactionAdvectionDiffusion {
    /// The problem on `gpu` ([`DeviceRhs`]); its work runs on the stream of the output.
    pub fn on_device(&self, gpu: &Gpu) -> DeviceReactionAdvectionDiffusion {
        OnDevice::new(self.clone(), self.stencil.launch(), gpu)
    }
}

impl Rhs for ReactionAdvectionDiffusion {
    fn dim(&self) -> usize {
        self.n * self.n
    }
    fn eval(&self, _t: f64, y: &[f64], dy: &mut [f64]) -> Result<()> {
        self.stencil.eval(y, dy)
    }
    fn spectral_radius_bound(&self, _t: f64, y: &[f64]) -> Option<f64> {
        Some(self.gershgorin(y))
    }
}

/// A test problem on one GPU: the same stencil through the kernels of
/// `ferrocuda_kernels::rock4` (one launch per evaluation; one fused launch per
/// recurrence stage, [`DeviceRhs::stage_unchecked`]). Made by [`Heat2d::on_device`] and
/// [`ReactionAdvectionDiffusion::on_device`].
#[derive(Debug, Clone)]
pub struct OnDevice<P> {
    problem: P,
    stencil: StencilLaunch,
    gpu: Gpu,
}

/// [`Heat2d`] on the GPU.
pub type DeviceHeat2d = OnDevice<Heat2d>;
/// [`ReactionAdvectionDiffusion`] on the GPU.
pub type DeviceReactionAdvectionDiffusion = OnDevice<ReactionAdvectionDiffusion>;

impl<P> OnDevice<P> {
    fn new(problem: P, stencil: StencilLaunch, gpu: &Gpu) -> Self {
        OnDevice {
            problem,
            stencil,
            gpu: gpu.clone(),
        }
    }
    /// The host problem (initial values, exact solution, parameters).
    pub fn problem(&self) -> &P {
        &self.problem
    }
}

impl<P> DeviceRhs for OnDevice<P> {
    fn dim(&self) -> usize {
        self.stencil.len()
    }
    fn gpu(&self) -> &Gpu {
        &self.gpu
    }
    fn eval_unchecked(
        &self,
        _t: f64,
        y: &DeviceView<'_, f64>,
        dy: &mut DeviceViewMut<'_, f64>,
    ) -> Result<()> {
        self.stencil.eval(y, dy)
    }
    /// The fused kernel: `f(g1)` from the stencil at each point, `g_j` written directly
    /// (`scratch` unused).
    fn stage_unchecked(
        &self,
        _t: f64,
        ha: f64,
        c: f64,
        g1: &DeviceView<'_, f64>,
        g2: Option<&DeviceView<'_, f64>>,
        out: &mut DeviceViewMut<'_, f64>,
        _scratch: &mut DeviceViewMut<'_, f64>,
    ) -> Result<()> {
        self.stencil.stage(ha, c, g1, g2, out)
    }
    fn stencil(&self) -> Option<super::gpu::DeviceStencil> {
        Some(super::gpu::DeviceStencil(self.stencil))
    }
    /// Gershgorin, as the CPU problem's: a constant for the heat equation, for the
    /// reaction-advection-diffusion problem a maximum over `y` computed on the device
    /// (block maxima read back and reduced on the host).
    fn spectral_radius_bound(&self, _t: f64, y: &DeviceView<'_, f64>) -> Result<Option<f64>> {
        let st = self.stencil.0;
        if st.kind == k::KIND_HEAT {
            return Ok(Some(k::gershgorin_row(k::KIND_HEAT, &st.coeffs, 0.0)));
        }
        self.stencil.gershgorin(y).map(Some)
    }
}
