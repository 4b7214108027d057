//! ROCK4 (Abdulle 2002): per-element math shared by the rayon CPU path
//! (`ferrocuda::rock4::cpu`) and, next, the device kernels.
//!
//! Two groups of plain functions, all `f64` (the method works at the edge of stability;
//! seed 001 ran it in double precision only):
//! - the stage updates of one ROCK4 step: the three-term recurrence
//!   ([`recurrence_first`], [`recurrence_step`]), the arguments of the finishing
//!   procedure ([`finish2`], [`finish3`], [`finish4`]), the new solution
//!   ([`finish_solution`]) and one term of the weighted error norm ([`error_term`]);
//! - the stencils of the test problems on an `nx x ny` grid of interior points with
//!   Dirichlet zero outside: the 5-point Laplacian ([`laplace5`]), central advection
//!   ([`advection_central`], seed 001 eq. (5.2)), the forward differences of the thesis
//!   code ([`advection_forward`], its `eval_pde`), the reaction `mu (y - y^3)`
//!   ([`reaction`]), and Gershgorin bounds of the Jacobian rows
//!   ([`gershgorin_central`], [`gershgorin_forward`]).
//!
//! Every multiply-add is written as a fused multiply-add ([`crate::math::fma_f64`]), so
//! the CPU and the GPU give the same bits.

use crate::math::fma_f64;

/// `g_1 = y + (h a_1) f`: the first recurrence stage.
#[inline(always)]
pub fn recurrence_first(y: f64, ha1: f64, f: f64) -> f64 {
    fma_f64(ha1, f, y)
}

/// `g_j = (h a_j) f(g_{j-1}) + (1 + c_j) g_{j-1} - c_j g_{j-2}`.
#[inline(always)]
pub fn recurrence_step(ha: f64, f: f64, c: f64, g1: f64, g2: f64) -> f64 {
    fma_f64(ha, f, fma_f64(1.0 + c, g1, -c * g2))
}

/// `u + (h a21) k1`: the argument of the finishing procedure's second stage.
#[inline(always)]
pub fn finish2(u: f64, ha21: f64, k1: f64) -> f64 {
    fma_f64(ha21, k1, u)
}

/// `u + (h a31) k1 + (h a32) k2`.
#[inline(always)]
pub fn finish3(u: f64, ha31: f64, k1: f64, ha32: f64, k2: f64) -> f64 {
    fma_f64(ha32, k2, fma_f64(ha31, k1, u))
}

/// `u + (h a41) k1 + (h a42) k2 + (h a43) k3`.
#[inline(always)]
pub fn finish4(u: f64, ha: [f64; 3], k1: f64, k2: f64, k3: f64) -> f64 {
    fma_f64(ha[2], k3, fma_f64(ha[1], k2, fma_f64(ha[0], k1, u)))
}

/// `y_{n+1} = u + sum_i (h b_i) k_i`, `i = 1..4`.
#[inline(always)]
pub fn finish_solution(u: f64, hb: [f64; 4], k1: f64, k2: f64, k3: f64, k4: f64) -> f64 {
    fma_f64(
        hb[3],
        k4,
        fma_f64(hb[2], k3, fma_f64(hb[1], k2, fma_f64(hb[0], k1, u))),
    )
}

/// One term of the error norm: `(delta / (atol + rtol |y_{n+1}|))^2` with
/// `delta = sum_i (h (be_i - b_i)) k_i + (h be_5) k_5`; `hd = [h (be_i - b_i)]_{i=1..4}`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn error_term(
    hd: [f64; 4],
    hbe5: f64,
    k1: f64,
    k2: f64,
    k3: f64,
    k4: f64,
    k5: f64,
    y_new: f64,
    atol: f64,
    rtol: f64,
) -> f64 {
    let delta = fma_f64(
        hbe5,
        k5,
        fma_f64(
            hd[3],
            k4,
            fma_f64(hd[2], k3, fma_f64(hd[1], k2, hd[0] * k1)),
        ),
    );
    let w = fma_f64(rtol, libm::fabs(y_new), atol);
    let q = delta / w;
    q * q
}

/// The 5-point Laplacian at a point with value `c` and neighbours west, east, south,
/// north; `rx = 1/hx^2`, `ry = 1/hy^2`.
#[inline(always)]
pub fn laplace5(c: f64, w: f64, e: f64, s: f64, n: f64, rx: f64, ry: f64) -> f64 {
    fma_f64(rx, fma_f64(-2.0, c, w + e), ry * fma_f64(-2.0, c, s + n))
}

/// Central advection, seed 001 eq. (5.2): `-(ax (e - w) / (2 hx) + ay (n - s) / (2 hy))`
/// with `cx = ax / (2 hx)`, `cy = ay / (2 hy)`.
#[inline(always)]
pub fn advection_central(w: f64, e: f64, s: f64, n: f64, cx: f64, cy: f64) -> f64 {
    -fma_f64(cx, e - w, cy * (n - s))
}

/// Forward differences of the thesis code (`eval_pde`):
/// `-(ax (e - c) / hx + ay (n - c) / hy)` with `cx = ax / hx`, `cy = ay / hy`.
#[inline(always)]
pub fn advection_forward(c: f64, e: f64, n: f64, cx: f64, cy: f64) -> f64 {
    -fma_f64(cx, e - c, cy * (n - c))
}

/// The reaction `mu (y - y^3)` (seed 001: `mu = 10`).
#[inline(always)]
pub fn reaction(mu: f64, y: f64) -> f64 {
    mu * fma_f64(-y * y, y, y)
}

/// `d reaction / dy = mu (1 - 3 y^2)`.
#[inline(always)]
pub fn reaction_derivative(mu: f64, y: f64) -> f64 {
    mu * fma_f64(-3.0 * y, y, 1.0)
}

/// The Gershgorin bound `|J_ii| + sum_{j != i} |J_ij|` of one row of the Jacobian of
/// `nu Laplace(y) + central advection + mu (y - y^3)` at the value `y`, with the full
/// stencil (an upper bound for rows next to the boundary too); `rx = 1/hx^2`,
/// `cx = ax / (2 hx)`, likewise for y.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn gershgorin_central(nu: f64, rx: f64, ry: f64, cx: f64, cy: f64, mu: f64, y: f64) -> f64 {
    let diag = fma_f64(-2.0 * nu, rx + ry, reaction_derivative(mu, y));
    let (dx, dy) = (nu * rx, nu * ry);
    libm::fabs(diag)
        + libm::fabs(dx - cx)
        + libm::fabs(dx + cx)
        + libm::fabs(dy - cy)
        + libm::fabs(dy + cy)
}

/// The Gershgorin bound of one row for the forward differences (`cx = ax / hx`,
/// `cy = ay / hy`): the thesis's `rho()` kernel (seed 001, Quellcode 6.3) with its
/// dropped last term `|nu / hy^2|` restored (a `;` ends the statement one line early
/// there).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn gershgorin_forward(nu: f64, rx: f64, ry: f64, cx: f64, cy: f64, mu: f64, y: f64) -> f64 {
    let diag = cx + cy + fma_f64(-2.0 * nu, rx + ry, reaction_derivative(mu, y));
    libm::fabs(diag)
        + libm::fabs(nu * rx - cx)
        + libm::fabs(nu * ry - cy)
        + libm::fabs(nu * rx)
        + libm::fabs(nu * ry)
}

/// One point of the 2D heat equation `u_t = nu Laplace(u)` (5-point stencil).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn heat_point(nu: f64, c: f64, w: f64, e: f64, s: f64, n: f64, rx: f64, ry: f64) -> f64 {
    nu * laplace5(c, w, e, s, n, rx, ry)
}

/// The coefficients of the reaction-advection-diffusion right-hand side
/// `nu Laplace(y) - ax y_x1 - ay y_x2 + mu (y - y^3)` on a uniform grid
/// (seed 001 eq. (5.1): `nu = 0.1`, `ax = ay = 1`, `mu = 10`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RadCoeffs {
    /// Diffusion `nu`.
    pub nu: f64,
    /// `1 / hx^2`.
    pub rx: f64,
    /// `1 / hy^2`.
    pub ry: f64,
    /// Advection over the stencil width in x: `ax / (2 hx)` (central) or `ax / hx` (forward).
    pub cx: f64,
    /// The same in y.
    pub cy: f64,
    /// Reaction rate `mu`.
    pub mu: f64,
}

/// One point of the reaction-advection-diffusion equation with central advection
/// (seed 001 eq. (5.2)); `p.cx = ax / (2 hx)`.
#[inline(always)]
pub fn rad_central_point(p: &RadCoeffs, c: f64, w: f64, e: f64, s: f64, n: f64) -> f64 {
    let rest = advection_central(w, e, s, n, p.cx, p.cy) + reaction(p.mu, c);
    fma_f64(p.nu, laplace5(c, w, e, s, n, p.rx, p.ry), rest)
}

/// One point with the thesis code's forward differences (`eval_pde`); `p.cx = ax / hx`.
#[inline(always)]
pub fn rad_forward_point(p: &RadCoeffs, c: f64, w: f64, e: f64, s: f64, n: f64) -> f64 {
    let rest = advection_forward(c, e, n, p.cx, p.cy) + reaction(p.mu, c);
    fma_f64(p.nu, laplace5(c, w, e, s, n, p.rx, p.ry), rest)
}
