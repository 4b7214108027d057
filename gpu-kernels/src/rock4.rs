//! ROCK4 (Abdulle 2002): per-element math shared by the rayon CPU path
//! (`ferrocuda::rock4::cpu`) and, next, the device kernels.
//!
//! Two groups of plain functions, all `f64` (the method works at the edge of stability;
//! Jahn (2010) ran it in double precision only):
//! - the stage updates of one ROCK4 step: the three-term recurrence
//!   ([`recurrence_first`], [`recurrence_step`]), the arguments of the finishing
//!   procedure ([`finish2`], [`finish3`], [`finish4`]), the new solution
//!   ([`finish_solution`]) and one term of the weighted error norm ([`error_term`]);
//! - the stencils of the test problems on an `nx x ny` grid of interior points with
//!   Dirichlet zero outside: the 5-point Laplacian ([`laplace5`]), central advection
//!   ([`advection_central`], Jahn (2010) eq. (5.2)), the forward differences of Jahn's
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

/// Central advection, Jahn (2010) eq. (5.2): `-(ax (e - w) / (2 hx) + ay (n - s) / (2 hy))`
/// with `cx = ax / (2 hx)`, `cy = ay / (2 hy)`.
#[inline(always)]
pub fn advection_central(w: f64, e: f64, s: f64, n: f64, cx: f64, cy: f64) -> f64 {
    -fma_f64(cx, e - w, cy * (n - s))
}

/// Forward differences of Jahn's code (`eval_pde`):
/// `-(ax (e - c) / hx + ay (n - c) / hy)` with `cx = ax / hx`, `cy = ay / hy`.
#[inline(always)]
pub fn advection_forward(c: f64, e: f64, n: f64, cx: f64, cy: f64) -> f64 {
    -fma_f64(cx, e - c, cy * (n - c))
}

/// The reaction `mu (y - y^3)` (Jahn 2010: `mu = 10`).
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
/// `cy = ay / hy`): Jahn's `rho()` kernel (Jahn 2010, Quellcode 6.3) with its
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
/// (Jahn 2010, eq. (5.1): `nu = 0.1`, `ax = ay = 1`, `mu = 10`).
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
/// (Jahn 2010, eq. (5.2)); `p.cx = ax / (2 hx)`.
#[inline(always)]
pub fn rad_central_point(p: &RadCoeffs, c: f64, w: f64, e: f64, s: f64, n: f64) -> f64 {
    let rest = advection_central(w, e, s, n, p.cx, p.cy) + reaction(p.mu, c);
    fma_f64(p.nu, laplace5(c, w, e, s, n, p.rx, p.ry), rest)
}

/// One point with Jahn's code's forward differences (`eval_pde`); `p.cx = ax / hx`.
#[inline(always)]
pub fn rad_forward_point(p: &RadCoeffs, c: f64, w: f64, e: f64, s: f64, n: f64) -> f64 {
    let rest = advection_forward(c, e, n, p.cx, p.cy) + reaction(p.mu, c);
    fma_f64(p.nu, laplace5(c, w, e, s, n, p.rx, p.ry), rest)
}

/// Stencil kind of [`stencil_point`]: the 2D heat equation ([`heat_point`]).
pub const KIND_HEAT: u32 = 0;
/// Stencil kind: reaction-advection-diffusion, central advection ([`rad_central_point`]).
pub const KIND_RAD_CENTRAL: u32 = 1;
/// Stencil kind: reaction-advection-diffusion, forward differences ([`rad_forward_point`]).
pub const KIND_RAD_FORWARD: u32 = 2;

/// One point of the right-hand side of stencil kind `kind` ([`KIND_HEAT`],
/// [`KIND_RAD_CENTRAL`], [`KIND_RAD_FORWARD`]; any other value is treated as forward) at a
/// point with value `c` and neighbours west, east, south, north (zero outside the grid).
/// The one dispatch the CPU rows and the device kernels share.
#[inline(always)]
pub fn stencil_point(kind: u32, p: &RadCoeffs, c: f64, w: f64, e: f64, s: f64, n: f64) -> f64 {
    match kind {
        KIND_HEAT => heat_point(p.nu, c, w, e, s, n, p.rx, p.ry),
        KIND_RAD_CENTRAL => rad_central_point(p, c, w, e, s, n),
        _ => rad_forward_point(p, c, w, e, s, n),
    }
}

/// The Gershgorin bound of one Jacobian row of stencil kind `kind` at the value `y`:
/// `4 nu (rx + ry)` for the heat equation, else [`gershgorin_central`] /
/// [`gershgorin_forward`].
#[inline(always)]
pub fn gershgorin_row(kind: u32, p: &RadCoeffs, y: f64) -> f64 {
    match kind {
        KIND_HEAT => 4.0 * p.nu * (p.rx + p.ry),
        KIND_RAD_CENTRAL => gershgorin_central(p.nu, p.rx, p.ry, p.cx, p.cy, p.mu, y),
        _ => gershgorin_forward(p.nu, p.rx, p.ry, p.cx, p.cy, p.mu, y),
    }
}

/// `y + scale (a - b)`: the power iteration's next perturbed point.
#[inline(always)]
pub fn shift(scale: f64, y: f64, a: f64, b: f64) -> f64 {
    fma_f64(scale, a - b, y)
}

/// `acc + (a - b)^2`.
#[inline(always)]
pub fn diff_sq_step(acc: f64, a: f64, b: f64) -> f64 {
    let d = a - b;
    fma_f64(d, d, acc)
}

/// One term of the start-up probe of `rkc_init_dt`:
/// `((f(t + h, y + h f) - f)_i / (atol + rtol |y_i|))^2`.
#[inline(always)]
pub fn probe_term(ft: f64, fy: f64, y: f64, rtol: f64, atol: f64) -> f64 {
    let q = (ft - fy) / fma_f64(rtol, libm::fabs(y), atol);
    q * q
}

// ---------------------------------------------------------------------------------------
// The step-size logic, written once: the CPU driver (`ferrocuda::rock4`) and the device
// controller of the persistent kernel call these, so both take the same decisions from
// the same error estimates.

/// Unit roundoff of the reference code (`uround = 1e-16`).
pub const UROUND: f64 = 1e-16;
/// `sqrt(uround)`, the power iteration's relative perturbation.
pub const SQRTU: f64 = 1e-8;
/// The largest stage count `s = m + 4` (m = 148).
pub const MAX_STAGES: usize = 152;
/// Number of tabulated degrees.
pub const DEGREES: usize = 50;

/// The controller's state between attempts (all words 8 bytes: the device keeps it in a
/// buffer of `u64`). Flags are `0`/`1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Control {
    /// Time of the current solution.
    pub t: f64,
    /// Step size of the next attempt.
    pub h: f64,
    /// Spectral radius in use.
    pub rho: f64,
    /// Error of the last accepted step (`0`: none yet).
    pub errp: f64,
    /// Size of the last accepted step.
    pub hp: f64,
    /// Largest step growth factor now (5 at the start, 2 after an acceptance, 1 after a
    /// rejection).
    pub facmax: f64,
    /// Time of the last rejection.
    pub told: f64,
    /// The step size of fixed-step runs.
    pub h_fixed: f64,
    /// The step size the controller proposes next.
    pub h_next: f64,
    /// Attempts made.
    pub attempts: u64,
    /// Rejections in a row at the same time.
    pub nrej: u64,
    /// Spectral-radius refresh counter (refresh when 0).
    pub nrho: u64,
    /// The last attempt was rejected.
    pub reject: u64,
    /// The next attempt ends the interval.
    pub last: u64,
    /// A spectral radius has been estimated.
    pub rho_known: u64,
    /// `rho` was estimated at the current `(t, y)` already (the start-up heuristic).
    pub rho_current: u64,
}

/// [`begin_attempt`]: go on.
pub const GO: u32 = 0;
/// [`begin_attempt`]: the step size fell below `10 uround` (or `t + h == t`).
pub const STEP_TOO_SMALL: u32 = 1;
/// [`begin_attempt`]: the most attempts are made.
pub const MAX_ATTEMPTS: u32 = 2;
/// [`finish_attempt`] flag: the attempt was accepted.
pub const ACCEPTED: u32 = 1;
/// [`finish_attempt`] flag: the interval is done.
pub const DONE: u32 = 2;

impl Control {
    /// The state before the first attempt from `t0` with step `h`.
    pub fn new(t0: f64, h: f64) -> Self {
        Control {
            t: t0,
            h,
            rho: 0.0,
            errp: 0.0,
            hp: h,
            facmax: 5.0,
            told: 0.0,
            h_fixed: h,
            h_next: 0.0,
            attempts: 0,
            nrej: 0,
            nrho: 0,
            reject: 0,
            last: 0,
            rho_known: 0,
            rho_current: 0,
        }
    }
}

/// The start-up heuristic's (`rkc_init_dt`) trial step from `rho` on an interval of
/// length `span` starting at `t0`: `(h, hmin)`; the probe is then taken at `h`.
#[inline(always)]
pub fn initial_trial_step(rho: f64, t0: f64, span: f64) -> (f64, f64) {
    let hmin = 10.0 * f64::EPSILON * libm::fabs(t0).max(span);
    let h = if rho * span > 1.0 { 1.0 / rho } else { span };
    (h.max(hmin), hmin)
}

/// The start-up step from the trial `(h, hmin)` and `est = h * probe`.
#[inline(always)]
pub fn initial_step(h: f64, hmin: f64, span: f64, est: f64) -> f64 {
    let r = crate::math::sqrt_f64(est);
    if 0.1 * h < span * r {
        (0.1 * h / r).max(hmin)
    } else {
        span
    }
}

/// Start of an attempt: shortens the last step to end at `t_end`, checks the step size
/// and the attempt count (returns [`GO`], [`STEP_TOO_SMALL`] or [`MAX_ATTEMPTS`]) and
/// counts the attempt.
#[inline(always)]
pub fn begin_attempt(c: &mut Control, t_end: f64, max_attempts: u64) -> u32 {
    if 1.01 * c.h >= libm::fabs(t_end - c.t) {
        c.h = libm::fabs(t_end - c.t);
        c.last = 1;
    }
    if c.h < 10.0 * UROUND || c.t + c.h == c.t {
        return STEP_TOO_SMALL;
    }
    if c.attempts == max_attempts {
        return MAX_ATTEMPTS;
    }
    c.attempts += 1;
    GO
}

/// Whether this attempt refreshes the spectral radius (every 5th accepted step, before
/// the retry of a rejected step that used an old estimate, once only for a constant
/// Jacobian).
#[inline(always)]
pub fn needs_rho(c: &Control, jacobian_constant: bool) -> bool {
    c.nrho == 0 && !(jacobian_constant && c.rho_known != 0)
}

/// The recurrence degree `m0` this attempt needs (`mdegre`): from
/// `s0 = floor(sqrt((3 + h rho) / 0.353)) + 1`, capped at [`MAX_STAGES`] (then `h` is
/// shortened to fit and the attempt no longer ends the interval); `m0 = max(s0, 5) - 4`.
#[inline(always)]
pub fn stages_needed(c: &mut Control) -> usize {
    let mut s0 = (crate::math::sqrt_f64((3.0 + c.h * c.rho) / 0.353) as usize).saturating_add(1);
    if s0 > MAX_STAGES {
        c.h = 0.8 * (0.353 * (MAX_STAGES * MAX_STAGES) as f64 - 3.0) / c.rho;
        s0 = MAX_STAGES;
        c.last = 0;
    }
    s0.max(5) - 4
}

/// The first tabulated degree index `i < DEGREES` with `m_of(i) >= m0` (the last one if
/// none is).
#[inline(always)]
pub fn degree_index(m0: usize, m_of: impl Fn(usize) -> usize) -> usize {
    let mut i = 0;
    while i + 1 < DEGREES && m_of(i) < m0 {
        i += 1;
    }
    i
}

/// The controller after an attempt with weighted error `err`: accept if `err < 1` (always
/// with `fixed` steps), then the next step size (`fac = err^(-1/4)` limited by the
/// predictive factor, safety 0.8, within `[0.1, facmax]`), or a retry with `0.8 h_new`.
/// Returns [`ACCEPTED`] and [`DONE`] flags.
#[inline(always)]
pub fn finish_attempt(c: &mut Control, err: f64, t_end: f64, fixed: bool) -> u32 {
    let h = c.h;
    let sqrt = crate::math::sqrt_f64;
    if fixed {
        c.t = if c.last != 0 { t_end } else { c.t + h };
        c.nrho = (c.nrho + 2) % 10;
        c.h_next = c.h_fixed;
        if c.last != 0 {
            return ACCEPTED | DONE;
        }
        c.h = c.h_fixed;
        return ACCEPTED;
    }
    let mut fac = sqrt(sqrt(1.0 / err));
    if c.errp != 0.0 && c.reject == 0 {
        let facp = sqrt(sqrt(c.errp)) * fac * fac * (h / c.hp);
        fac = fac.min(facp);
    }
    if c.reject != 0 {
        c.facmax = 1.0;
    }
    fac = c.facmax.min((0.8 * fac).max(0.1));
    let mut hnew = h * fac;
    if err < 1.0 {
        c.facmax = 2.0;
        c.t = if c.last != 0 { t_end } else { c.t + h };
        if c.reject != 0 {
            hnew = hnew.min(h);
            if t_end < c.t {
                hnew = hnew.max(h);
            }
            c.reject = 0;
            c.nrej = 0;
        }
        c.hp = h;
        c.h = hnew;
        c.nrho = (c.nrho + 2) % 10;
        c.h_next = hnew;
        if c.last != 0 {
            return ACCEPTED | DONE;
        }
        c.errp = err;
        ACCEPTED
    } else {
        c.reject = 1;
        c.last = 0;
        c.h = 0.8 * hnew;
        if c.t == c.told {
            c.nrej += 1;
            if c.nrej == 10 {
                c.h = 1e-5;
            }
        }
        c.told = c.t;
        c.nrho = if c.nrho != 0 { 0 } else { 1 };
        c.h_next = c.h;
        0
    }
}

/// How the persistent kernel stopped ([`PersistentState::status`]).
pub const RUN_PAUSED: u64 = 0;
/// Reached `t_end`.
pub const RUN_FINISHED: u64 = 1;
/// The step size fell below `10 uround`.
pub const RUN_STEP_TOO_SMALL: u64 = 2;
/// The most attempts were made.
pub const RUN_MAX_ATTEMPTS: u64 = 3;

/// The device state of a persistent integration (in a buffer of `u64`, read by the host
/// between launches).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PersistentState {
    /// The controller.
    pub ctl: Control,
    /// `RUN_*`.
    pub status: u64,
    /// `fy = f(y)` and the start-up step are done.
    pub started: u64,
    /// `1`: `y`, `fy` are in the second buffers of their pairs.
    pub parity: u64,
    /// The power iteration's saved direction `v` is set.
    pub v_valid: u64,
    /// Accepted attempts.
    pub accepted: u64,
    /// Rejected attempts.
    pub rejected: u64,
    /// Evaluations of `f`.
    pub f_evals: u64,
    /// Spectral-radius estimates.
    pub rho_evals: u64,
    /// Power iterations that did not converge.
    pub rho_unconverged: u64,
    /// Largest stage count.
    pub max_stages: u64,
    /// Smallest spectral radius used.
    pub rho_min: f64,
    /// Largest spectral radius used.
    pub rho_max: f64,
    /// Attempts recorded in the history.
    pub records: u64,
}

/// Dynamic shared memory of a `rock4_persistent_f64` block: the reductions' area (32
/// words), the block's copy of the [`PersistentState`] and its per-attempt decisions
/// (3 words).
pub const PERSISTENT_SHARED_BYTES: usize = 32 * 8 + core::mem::size_of::<PersistentState>() + 3 * 8;

/// One attempt as the persistent kernel records it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptLog {
    /// Time at the start.
    pub t: f64,
    /// Step size.
    pub h: f64,
    /// Spectral radius used.
    pub rho: f64,
    /// Weighted error.
    pub err: f64,
    /// Stages `m + 4`.
    pub stages: u64,
    /// `1` if accepted.
    pub accepted: u64,
}

/// The scalars of `rock4_persistent_f64` ([`Rock4PersistentF64`]), passed by value; its
/// vectors and tables are kernel parameters of their own.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PersistentParams {
    /// Grid columns.
    pub nx: u64,
    /// Grid rows.
    pub ny: u64,
    /// Stencil kind (`KIND_*`).
    pub kind: u64,
    /// Stencil coefficients.
    pub coeffs: RadCoeffs,
    /// Start of the interval.
    pub t0: f64,
    /// End of the interval.
    pub t_end: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// `1`: fixed steps.
    pub fixed: u64,
    /// `1`: power iteration instead of the Gershgorin bound.
    pub power: u64,
    /// `1`: one spectral-radius estimate only.
    pub jacobian_constant: u64,
    /// `1`: the state's `ctl.h` is the user's initial step; `0`: start-up heuristic.
    pub h0_given: u64,
    /// Most attempts in all.
    pub max_attempts: u64,
    /// This launch stops (paused) when `ctl.attempts` reaches this.
    pub pause_at: u64,
    /// `records` at this launch: the history is written from `history[records - base]`.
    pub record_base: u64,
}

/// A 5-point stencil problem on `nx x ny` points as the stencil kernels take it: the
/// kind ([`KIND_HEAT`], [`KIND_RAD_CENTRAL`], [`KIND_RAD_FORWARD`]) and the coefficients
/// of [`stencil_point`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stencil {
    /// Grid columns.
    pub nx: usize,
    /// Grid rows.
    pub ny: usize,
    /// Stencil kind (`KIND_*`).
    pub kind: u32,
    /// Stencil coefficients.
    pub coeffs: RadCoeffs,
}

/// The scalars of the error-norm kernel `rock4_error_partial_f64`
/// ([`Rock4ErrorPartialF64`]): the weights of [`error_term`] and the tolerances.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorWeights {
    /// `h (be_i - b_i)`, `i = 1..4`.
    pub hd: [f64; 4],
    /// `h be_5`.
    pub hbe5: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

// ---------------------------------------------------------------------------------------
// Kernels (`f64` only). The stencil kernels run a 2D grid: grid y over the rows `j`
// (grid-stride), grid x over the columns `i` (grid-stride); the element-wise ones a 1D
// grid-stride loop; the reductions give one partial per block in a fixed order
// (`block_sum`), reduced by `sum_partials_f64` on the host's call. Device pointers are
// kernel parameters of their own (LLVM knows those address global memory and emits
// `ld.global`/`st.global`; a pointer read from a by-value struct gets generic accesses).

#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_broadcast, block_idx, block_idx_y, block_max, block_sum, for_each_block_index,
    for_each_index, for_each_strided, global_index, grid_dim, grid_dim_y, grid_sync, sync_threads,
    thread_idx,
};
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::math::sqrt_f64;

/// The value at `(i, j)` and its neighbours west, east, south, north, zero outside.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gather(nx: usize, ny: usize, i: usize, j: usize, y: *const f64) -> [f64; 5] {
    let k = j * nx + i;
    unsafe {
        [
            *y.add(k),
            if i > 0 { *y.add(k - 1) } else { 0.0 },
            if i + 1 < nx { *y.add(k + 1) } else { 0.0 },
            if j > 0 { *y.add(k - nx) } else { 0.0 },
            if j + 1 < ny { *y.add(k + nx) } else { 0.0 },
        ]
    }
}

/// Calls `f(i, j)` for the points of this thread: rows from grid y, columns from grid x
/// (both grid-stride).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn for_each_point(nx: usize, ny: usize, mut f: impl FnMut(usize, usize)) {
    for_each_strided(block_idx_y(), grid_dim_y(), ny, |j| {
        for_each_index(nx, |i| f(i, j))
    });
}

/// `(f(y), y)` of stencil `kind` at point `(i, j)`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn point(
    nx: usize,
    ny: usize,
    kind: u32,
    p: &RadCoeffs,
    i: usize,
    j: usize,
    y: *const f64,
) -> (f64, f64) {
    let [c, w, e, s, n] = unsafe { gather(nx, ny, i, j, y) };
    (stencil_point(kind, p, c, w, e, s, n), c)
}

/// Sums `term(i)` over the grid-stride loop; one partial per block.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn partial_sum(n: usize, partials: *mut f64, term: impl Fn(usize) -> f64) {
    let mut acc = 0.0;
    for_each_index(n, |i| acc += term(i));
    let total = block_sum(acc);
    if thread_idx() == 0 {
        unsafe { *partials.add(block_idx()) = total };
    }
}

/// `dy <- f(y)` for stencil `st` on `nx x ny` points.
#[kernel]
pub unsafe fn rock4_stencil_eval_f64(st: Stencil, y: *const f64, dy: *mut f64) {
    let Stencil {
        nx,
        ny,
        kind,
        coeffs: p,
    } = st;
    for_each_point(nx, ny, |i, j| unsafe {
        *dy.add(j * nx + i) = point(nx, ny, kind, &p, i, j, y).0;
    });
}

/// Fused recurrence stage: `out <- ha f(g1) + (1 + c) g1 - c g2` with `f(g1)` from the
/// stencil at each point (reads `g1`, `g2`, writes `out`; `out` may be `g2`).
#[kernel]
pub unsafe fn rock4_stencil_stage_f64(
    st: Stencil,
    ha: f64,
    c: f64,
    g1: *const f64,
    g2: *const f64,
    out: *mut f64,
) {
    let Stencil {
        nx,
        ny,
        kind,
        coeffs: p,
    } = st;
    for_each_point(nx, ny, |i, j| unsafe {
        let k = j * nx + i;
        let (f, g1k) = point(nx, ny, kind, &p, i, j, g1);
        *out.add(k) = recurrence_step(ha, f, c, g1k, *g2.add(k));
    });
}

/// Block maxima of the Gershgorin row bounds of stencil `kind` at `y` (`n` values).
#[kernel]
pub unsafe fn rock4_gershgorin_partial_f64(
    n: usize,
    kind: u32,
    coeffs: RadCoeffs,
    y: *const f64,
    partials: *mut f64,
) {
    let mut acc = 0.0f64;
    for_each_index(n, |i| {
        let r = gershgorin_row(kind, &coeffs, unsafe { *y.add(i) });
        acc = if r > acc { r } else { acc };
    });
    let total = block_max(acc);
    if thread_idx() == 0 {
        unsafe { *partials.add(block_idx()) = total };
    }
}

/// Generic recurrence stage: `out <- ha f + (1 + c) g1 - c g2` (`out` may be `g2`).
#[kernel]
pub unsafe fn rock4_recurrence_f64(
    n: usize,
    ha: f64,
    c: f64,
    f: *const f64,
    g1: *const f64,
    g2: *const f64,
    out: *mut f64,
) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = recurrence_step(ha, *f.add(i), c, *g1.add(i), *g2.add(i))
    });
}

/// `out <- y + ha1 f` (first recurrence stage).
#[kernel]
pub unsafe fn rock4_first_f64(n: usize, ha1: f64, y: *const f64, f: *const f64, out: *mut f64) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = recurrence_first(*y.add(i), ha1, *f.add(i))
    });
}

/// `out <- u + ha21 k1`.
#[kernel]
pub unsafe fn rock4_finish2_f64(n: usize, ha21: f64, u: *const f64, k1: *const f64, out: *mut f64) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = finish2(*u.add(i), ha21, *k1.add(i))
    });
}

/// `out <- u + ha31 k1 + ha32 k2`.
#[kernel]
pub unsafe fn rock4_finish3_f64(
    n: usize,
    ha31: f64,
    ha32: f64,
    u: *const f64,
    k1: *const f64,
    k2: *const f64,
    out: *mut f64,
) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = finish3(*u.add(i), ha31, *k1.add(i), ha32, *k2.add(i))
    });
}

/// `out <- u + ha41 k1 + ha42 k2 + ha43 k3` with `ha = [ha41, ha42, ha43]`.
#[kernel]
pub unsafe fn rock4_finish4_f64(
    n: usize,
    ha: [f64; 3],
    u: *const f64,
    k1: *const f64,
    k2: *const f64,
    k3: *const f64,
    out: *mut f64,
) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = finish4(*u.add(i), ha, *k1.add(i), *k2.add(i), *k3.add(i))
    });
}

/// `out <- u + hb1 k1 + .. + hb4 k4` (the new solution).
#[kernel]
pub unsafe fn rock4_solution_f64(
    n: usize,
    hb: [f64; 4],
    u: *const f64,
    k1: *const f64,
    k2: *const f64,
    k3: *const f64,
    k4: *const f64,
    out: *mut f64,
) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = finish_solution(
            *u.add(i),
            hb,
            *k1.add(i),
            *k2.add(i),
            *k3.add(i),
            *k4.add(i),
        )
    });
}

/// Block partials of the weighted error sum `sum_i error_term(..)`.
#[kernel]
pub unsafe fn rock4_error_partial_f64(
    n: usize,
    weights: ErrorWeights,
    k1: *const f64,
    k2: *const f64,
    k3: *const f64,
    k4: *const f64,
    k5: *const f64,
    y_new: *const f64,
    partials: *mut f64,
) {
    let ErrorWeights {
        hd,
        hbe5,
        atol,
        rtol,
    } = weights;
    unsafe {
        partial_sum(n, partials, |i| {
            error_term(
                hd,
                hbe5,
                *k1.add(i),
                *k2.add(i),
                *k3.add(i),
                *k4.add(i),
                *k5.add(i),
                *y_new.add(i),
                atol,
                rtol,
            )
        })
    }
}

/// Block partials of the start-up probe `sum_i probe_term(..)`.
#[kernel]
pub unsafe fn rock4_probe_partial_f64(
    n: usize,
    rtol: f64,
    atol: f64,
    ft: *const f64,
    fy: *const f64,
    y: *const f64,
    partials: *mut f64,
) {
    unsafe {
        partial_sum(n, partials, |i| {
            probe_term(*ft.add(i), *fy.add(i), *y.add(i), rtol, atol)
        })
    }
}

/// Block partials of `sum_i (a_i - b_i)^2`.
#[kernel]
pub unsafe fn rock4_diff_sq_partial_f64(
    n: usize,
    a: *const f64,
    b: *const f64,
    partials: *mut f64,
) {
    unsafe { partial_sum(n, partials, |i| diff_sq_step(0.0, *a.add(i), *b.add(i))) }
}

/// `out <- y + scale (a - b)`.
#[kernel]
pub unsafe fn rock4_shift_f64(
    n: usize,
    scale: f64,
    y: *const f64,
    a: *const f64,
    b: *const f64,
    out: *mut f64,
) {
    for_each_index(n, |i| unsafe {
        *out.add(i) = shift(scale, *y.add(i), *a.add(i), *b.add(i))
    });
}

// ----------------------------------------------------------------------------------
// The persistent integration: one cooperative launch runs attempt after attempt,
// every block taking the same decisions from the same grid-wide reductions (the
// block partials are added in a fixed order by every block), with a grid barrier
// after each vector operation.

/// The coefficient tables of the degrees on the device: `recf` (`f64`), `fpa` (6 per
/// degree), `fpb` (4), `fpbe` (5), `ms` and the `recf` block starts (`u64`, one per
/// degree).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct Tables {
    recf: *const f64,
    fpa: *const f64,
    fpb: *const f64,
    fpbe: *const f64,
    ms: *const u64,
    starts: *const u64,
}

/// One launch's view of its parameters.
#[cfg(target_arch = "nvptx64")]
struct Persist<'a> {
    p: &'a PersistentParams,
    n: usize,
    nx: u32,
    bar: *mut u32,
    /// `2 gridDim` reduction partials.
    partials: *mut f64,
    /// Recurrence vectors (the power iteration's `z`, `f(z)`).
    g: [*mut f64; 2],
    /// Finishing-procedure stages `k1 .. k4`.
    k: [*mut f64; 4],
    /// The power iteration's saved direction.
    v: *mut f64,
    tab: Tables,
    /// Reductions so far: they alternate between two partial areas, so one block's
    /// next partial never overwrites one that another block is still adding.
    red: usize,
}

/// `pair[parity]`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn pick(pair: [*mut f64; 2], parity: u64) -> *mut f64 {
    if parity == 0 { pair[0] } else { pair[1] }
}

#[cfg(target_arch = "nvptx64")]
impl Persist<'_> {
    #[inline(always)]
    fn sync(&self) {
        unsafe { grid_sync(self.bar) }
    }

    /// `f(k)` for this thread's elements (grid-stride).
    #[inline(always)]
    fn each(&self, f: impl FnMut(usize)) {
        for_each_index(self.n, f);
    }

    /// `(f(y)_k, y_k)` of the stencil.
    #[inline(always)]
    unsafe fn f_at(&self, y: *const f64, k: usize) -> (f64, f64) {
        let k32 = k as u32;
        let (i, j) = ((k32 % self.nx) as usize, (k32 / self.nx) as usize);
        let p = self.p;
        let kind = p.kind as u32;
        unsafe { point(p.nx as usize, p.ny as usize, kind, &p.coeffs, i, j, y) }
    }

    /// `dy <- f(y)`, then a grid barrier.
    #[inline(always)]
    unsafe fn eval(&self, y: *const f64, dy: *mut f64) {
        self.each(|k| unsafe { *dy.add(k) = self.f_at(y, k).0 });
        self.sync();
    }

    /// Block totals (thread 0's `block`) to the partials, a grid barrier, then the
    /// sum (or maximum) of the partials in a fixed order, in every thread.
    #[inline(always)]
    unsafe fn combine(&mut self, block: f64, max: bool) -> f64 {
        let area = unsafe { self.partials.add((self.red % 2) * grid_dim()) };
        self.red += 1;
        if thread_idx() == 0 {
            unsafe { *area.add(block_idx()) = block };
        }
        self.sync();
        let mut acc = 0.0f64;
        for_each_block_index(grid_dim(), |b| {
            let v = unsafe { *area.add(b) };
            acc = if max {
                if v > acc { v } else { acc }
            } else {
                acc + v
            };
        });
        let total = if max { block_max(acc) } else { block_sum(acc) };
        block_broadcast(total)
    }

    /// `sum_k term(k)`, in every thread.
    #[inline(always)]
    unsafe fn sum(&mut self, term: impl Fn(usize) -> f64) -> f64 {
        let mut acc = 0.0;
        self.each(|k| acc += term(k));
        let block = block_sum(acc);
        unsafe { self.combine(block, false) }
    }

    /// `max(0, max_k term(k))`, in every thread.
    #[inline(always)]
    unsafe fn max(&mut self, term: impl Fn(usize) -> f64) -> f64 {
        let mut acc = 0.0f64;
        self.each(|k| {
            let r = term(k);
            acc = if r > acc { r } else { acc };
        });
        let block = block_max(acc);
        unsafe { self.combine(block, true) }
    }

    /// Abdulle's nonlinear power iteration (`rockfrho`) at `(y, fy)`, as the CPU's,
    /// with `z = g[0]`, `fz = g[1]`: `(estimate, converged)`.
    #[inline(always)]
    unsafe fn power(
        &mut self,
        s: *mut PersistentState,
        yp: *const f64,
        fyp: *const f64,
    ) -> (f64, bool) {
        let (z, fz, v) = (self.g[0], self.g[1], self.v);
        unsafe {
            if (*s).v_valid != 0 {
                self.each(|k| *z.add(k) = *v.add(k));
                self.sync();
            } else {
                self.eval(fyp, z);
                count(s, |s| s.f_evals += 1);
            }
            let ynor = sqrt_f64(self.sum(|k| diff_sq_step(0.0, *yp.add(k), 0.0)));
            let znor = sqrt_f64(self.sum(|k| diff_sq_step(0.0, *z.add(k), 0.0)));
            let dz;
            if ynor != 0.0 && znor != 0.0 {
                dz = ynor * SQRTU;
                let q = dz / znor;
                self.each(|k| *z.add(k) = fma_f64(q, *z.add(k), *yp.add(k)));
            } else if ynor != 0.0 {
                dz = ynor * SQRTU;
                self.each(|k| *z.add(k) = *yp.add(k) * (1.0 + SQRTU));
            } else if znor != 0.0 {
                dz = UROUND;
                let q = dz / znor;
                self.each(|k| *z.add(k) *= q);
            } else {
                dz = UROUND;
                self.each(|k| *z.add(k) = UROUND);
            }
            self.sync();
            let mut sig = 0.0;
            let mut iter = 1;
            while iter <= 50 {
                self.eval(z, fz);
                count(s, |s| s.f_evals += 1);
                let d = sqrt_f64(self.sum(|k| diff_sq_step(0.0, *fz.add(k), *fyp.add(k))));
                let sig_old = sig;
                sig = 1.2 * d / dz;
                if iter >= 2 && libm::fabs(sig - sig_old) <= 0.05 * sig {
                    self.each(|k| *v.add(k) = *z.add(k) - *yp.add(k));
                    self.sync();
                    update(s, |s| s.v_valid = 1);
                    return (sig, true);
                }
                if d != 0.0 {
                    let q = dz / d;
                    self.each(|k| *z.add(k) = shift(q, *yp.add(k), *fz.add(k), *fyp.add(k)));
                } else if global_index() == 0 {
                    let kk = iter % self.n;
                    if *z.add(kk) != *yp.add(kk) {
                        *z.add(kk) = *yp.add(kk) - (*z.add(kk) - *yp.add(kk));
                    }
                }
                self.sync();
                iter += 1;
            }
            (sig, false)
        }
    }

    /// A spectral-radius estimate at `(y, fy)`: Gershgorin's bound (a constant for
    /// the heat equation) or the power iteration.
    #[inline(always)]
    unsafe fn rho(&mut self, s: *mut PersistentState, y: *const f64, fy: *const f64) -> f64 {
        unsafe { count(s, |s| s.rho_evals += 1) };
        let p = self.p;
        let kind = p.kind as u32;
        if p.power == 0 {
            if kind == KIND_HEAT {
                return gershgorin_row(KIND_HEAT, &p.coeffs, 0.0);
            }
            return unsafe { self.max(|k| gershgorin_row(kind, &p.coeffs, *y.add(k))) };
        }
        let (r, converged) = unsafe { self.power(s, y, fy) };
        if !converged {
            unsafe { count(s, |s| s.rho_unconverged += 1) };
        }
        r
    }

    /// One attempt of degree index `d` with step `h` from `(y, fy)`: fills `y_new`,
    /// `k5 = f(y_new)` and returns the weighted error; the same kernels' math as the
    /// host-decided path.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn attempt(
        &mut self,
        d: usize,
        h: f64,
        yp: *const f64,
        fyp: *const f64,
        yn: *mut f64,
        k5: *mut f64,
        s: *mut PersistentState,
    ) -> f64 {
        let p = self.p;
        let tab = self.tab;
        unsafe {
            let m = *tab.ms.add(d) as usize;
            let recf = tab.recf.add(*tab.starts.add(d) as usize);
            let (mut ga, mut gb) = (self.g[0], self.g[1]);
            let ha1 = h * *recf;
            self.each(|k| *ga.add(k) = recurrence_first(*yp.add(k), ha1, *fyp.add(k)));
            self.sync();
            let mut j = 2;
            while j <= m {
                let o = 2 * (j - 2) + 1;
                let (ha, c) = (h * *recf.add(o), *recf.add(o + 1));
                let g2 = if j == 2 { yp } else { gb as *const f64 };
                let (g1, out) = (ga as *const f64, gb);
                self.each(|k| {
                    let (f, g1k) = self.f_at(g1, k);
                    *out.add(k) = recurrence_step(ha, f, c, g1k, *g2.add(k));
                });
                self.sync();
                core::mem::swap(&mut ga, &mut gb);
                j += 1;
            }
            count(s, |s| s.f_evals += (m + 4) as u64);
            // Finishing procedure from u = g_m; its arguments in gb.
            let fpa = tab.fpa.add(6 * d);
            let a = |i: usize| *fpa.add(i);
            let u = ga as *const f64;
            let [k1, k2, k3, k4] = self.k;
            let k5p = k5 as *const f64;
            self.eval(u, k1);
            let ha21 = h * a(0);
            self.each(|k| *gb.add(k) = finish2(*u.add(k), ha21, *k1.add(k)));
            self.sync();
            self.eval(gb, k2);
            let (ha31, ha32) = (h * a(1), h * a(2));
            self.each(|k| *gb.add(k) = finish3(*u.add(k), ha31, *k1.add(k), ha32, *k2.add(k)));
            self.sync();
            self.eval(gb, k3);
            let ha4 = [h * a(3), h * a(4), h * a(5)];
            self.each(|k| *gb.add(k) = finish4(*u.add(k), ha4, *k1.add(k), *k2.add(k), *k3.add(k)));
            self.sync();
            self.eval(gb, k4);
            let fpb = tab.fpb.add(4 * d);
            let b = |i: usize| *fpb.add(i);
            let hb = [h * b(0), h * b(1), h * b(2), h * b(3)];
            self.each(|k| {
                *yn.add(k) = finish_solution(
                    *u.add(k),
                    hb,
                    *k1.add(k),
                    *k2.add(k),
                    *k3.add(k),
                    *k4.add(k),
                )
            });
            self.sync();
            self.eval(yn, k5);
            let fpbe = tab.fpbe.add(5 * d);
            let be = |i: usize| *fpbe.add(i);
            let hd = [
                h * (be(0) - b(0)),
                h * (be(1) - b(1)),
                h * (be(2) - b(2)),
                h * (be(3) - b(3)),
            ];
            let hbe5 = h * be(4);
            let (atol, rtol) = (p.atol, p.rtol);
            let sum = self.sum(|k| {
                error_term(
                    hd,
                    hbe5,
                    *k1.add(k),
                    *k2.add(k),
                    *k3.add(k),
                    *k4.add(k),
                    *k5p.add(k),
                    *yn.add(k),
                    atol,
                    rtol,
                )
            });
            sqrt_f64(sum / self.n as f64)
        }
    }
}

/// The per-block decisions of one attempt, beside the state in shared memory.
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
struct Step {
    /// Leave the loop.
    stop: u64,
    /// The attempt refreshes the spectral radius.
    need: u64,
    /// Degree index.
    d: u64,
}

/// Words of dynamic shared memory before the block's state: the reductions' area
/// (one `f64` per warp of up to 1024 threads; see [`PERSISTENT_SHARED_BYTES`]).
#[cfg(target_arch = "nvptx64")]
const SHARED_REDUCE_WORDS: usize = 32;

/// Counts in the block's state (thread 0 only; counters nobody reads during the run).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn count(s: *mut PersistentState, f: impl FnOnce(&mut PersistentState)) {
    if thread_idx() == 0 {
        f(unsafe { &mut *s });
    }
}

/// Changes the block's state (thread 0, between two block barriers, so every thread
/// reads the old values before and the new ones after).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn update<R>(s: *mut PersistentState, f: impl FnOnce(&mut PersistentState) -> R) {
    sync_threads();
    if thread_idx() == 0 {
        f(unsafe { &mut *s });
    }
    sync_threads();
}

/// The whole integration of a stencil problem (or the next `pause_at - attempts`
/// attempts of it): start-up (`f(y)`, spectral radius, initial step), then per
/// attempt the spectral-radius refresh, the degree, the `m + 4` stages, the error
/// norm and the controller's decision, all on the device; the state goes back to
/// `state` at the end. Each block keeps the state in its shared memory, thread 0
/// takes the decisions (from grid-wide values every block has identically), so every
/// block takes the same ones. Launch cooperatively (all blocks resident), 1D blocks
/// of a multiple of 32 threads, with `PERSISTENT_SHARED_BYTES` of dynamic shared memory.
///
/// Vectors (`nx ny` values): the solution pair `y0`/`y1` (`y` and `y_new`, by the
/// state's parity), the pair `fy0`/`fy1` (`f(y)` and `k5`), the recurrence vectors
/// `g0`, `g1`, the finishing stages `k1 .. k4` and the power iteration's saved direction
/// `v`. `partials`: `2 gridDim` values; `state`: the [`PersistentState`] as words;
/// `history`: room for `pause_at - ctl.attempts` [`AttemptLog`]s as words; `barrier`:
/// the grid barrier's counter (zero before the first launch); the coefficient tables
/// `recf`, `fpa` (6 per degree), `fpb` (4), `fpbe` (5), `ms` and the `recf` block starts
/// `starts` (one per degree).
#[kernel]
pub unsafe fn rock4_persistent_f64(
    p: PersistentParams,
    y0: *mut f64,
    y1: *mut f64,
    fy0: *mut f64,
    fy1: *mut f64,
    g0: *mut f64,
    g1: *mut f64,
    k1: *mut f64,
    k2: *mut f64,
    k3: *mut f64,
    k4: *mut f64,
    v: *mut f64,
    partials: *mut f64,
    state: *mut u64,
    history: *mut u64,
    barrier: *mut u32,
    recf: *const f64,
    fpa: *const f64,
    fpb: *const f64,
    fpbe: *const f64,
    ms: *const u64,
    starts: *const u64,
) {
    let mut r = Persist {
        p: &p,
        n: (p.nx * p.ny) as usize,
        nx: p.nx as u32,
        bar: barrier,
        partials,
        g: [g0, g1],
        k: [k1, k2, k3, k4],
        v,
        tab: Tables {
            recf,
            fpa,
            fpb,
            fpbe,
            ms,
            starts,
        },
        red: 0,
    };
    let (ys, fys) = ([y0, y1], [fy0, fy1]);
    let st = state.cast::<PersistentState>();
    let fixed = p.fixed != 0;
    let n = r.n;
    unsafe {
        let s = crate::device::dynamic_shared::<f64>()
            .add(SHARED_REDUCE_WORDS)
            .cast::<PersistentState>();
        let step = s.add(1).cast::<Step>();
        if thread_idx() == 0 {
            *s = core::ptr::read_volatile(st);
        }
        sync_threads();
        if (*s).started == 0 {
            let par = (*s).parity;
            let (y, fy) = (pick(ys, par), pick(fys, par));
            r.eval(y, fy);
            count(s, |s| s.f_evals += 1);
            if p.h0_given == 0 {
                let rho = r.rho(s, y, fy);
                let span = p.t_end - p.t0;
                let (h, hmin) = initial_trial_step(rho, p.t0, span);
                let (yt, ft) = (k2, k3);
                r.each(|k| *yt.add(k) = recurrence_first(*y.add(k), h, *fy.add(k)));
                r.sync();
                r.eval(yt, ft);
                count(s, |s| s.f_evals += 1);
                let (atol, rtol) = (p.atol, p.rtol);
                let sum = r.sum(|k| probe_term(*ft.add(k), *fy.add(k), *y.add(k), rtol, atol));
                let est = h * sqrt_f64(sum / n as f64);
                update(s, |s| {
                    s.ctl = Control::new(p.t0, initial_step(h, hmin, span, est));
                    s.ctl.rho = rho;
                    s.ctl.rho_current = 1;
                });
            }
            update(s, |s| s.started = 1);
        }
        loop {
            update(s, |s| {
                let st = &mut *step;
                st.stop = 1;
                if s.ctl.attempts >= p.pause_at {
                    s.status = RUN_PAUSED;
                    return;
                }
                let go = begin_attempt(&mut s.ctl, p.t_end, p.max_attempts);
                if go != GO {
                    s.status = if go == STEP_TOO_SMALL {
                        RUN_STEP_TOO_SMALL
                    } else {
                        RUN_MAX_ATTEMPTS
                    };
                    return;
                }
                st.stop = 0;
                st.need = u64::from(
                    needs_rho(&s.ctl, p.jacobian_constant != 0) && s.ctl.rho_current == 0,
                );
            });
            if (*step).stop != 0 {
                break;
            }
            let par = (*s).parity;
            let (y, fy) = (pick(ys, par), pick(fys, par));
            let (y_new, k5) = (pick(ys, 1 - par), pick(fys, 1 - par));
            let fresh = if (*step).need != 0 {
                r.rho(s, y, fy)
            } else {
                0.0
            };
            update(s, |s| {
                if needs_rho(&s.ctl, p.jacobian_constant != 0) {
                    if s.ctl.rho_current == 0 {
                        s.ctl.rho = fresh;
                    }
                    s.ctl.rho_known = 1;
                    s.rho_min = s.rho_min.min(s.ctl.rho);
                    s.rho_max = s.rho_max.max(s.ctl.rho);
                }
                s.ctl.rho_current = 0;
                let m0 = stages_needed(&mut s.ctl);
                let d = degree_index(m0, |i| *ms.add(i) as usize);
                (*step).d = d as u64;
                s.max_stages = s.max_stages.max(*ms.add(d) + 4);
            });
            let d = (*step).d as usize;
            let (t, h, rho) = ((*s).ctl.t, (*s).ctl.h, (*s).ctl.rho);
            let err = r.attempt(d, h, y, fy, y_new, k5, s);
            update(s, |s| {
                let out = finish_attempt(&mut s.ctl, err, p.t_end, fixed);
                if block_idx() == 0 {
                    let log = history
                        .cast::<AttemptLog>()
                        .add((s.records - p.record_base) as usize);
                    *log = AttemptLog {
                        t,
                        h,
                        rho,
                        err,
                        stages: *ms.add(d) + 4,
                        accepted: (out & ACCEPTED) as u64,
                    };
                }
                s.records += 1;
                if out & ACCEPTED != 0 {
                    s.accepted += 1;
                    s.parity = 1 - s.parity;
                } else {
                    s.rejected += 1;
                }
                (*step).stop = 0;
                if out & DONE != 0 {
                    s.status = RUN_FINISHED;
                    (*step).stop = 1;
                }
            });
            if (*step).stop != 0 {
                break;
            }
        }
        // Every block has read the state at its start before block 0 writes it back.
        r.sync();
        if global_index() == 0 {
            core::ptr::write_volatile(st, *s);
        }
    }
}
