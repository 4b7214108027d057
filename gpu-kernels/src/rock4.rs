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

#[cfg(target_arch = "nvptx64")]
mod kernels {
    //! Device entry points of ROCK4 (`f64` only). The stencil kernels run a 2D grid: grid
    //! y over the rows `j` (grid-stride), grid x over the columns `i` (grid-stride); the
    //! element-wise ones a 1D grid-stride loop; the reductions give one partial per block
    //! in a fixed order (`block_sum`), reduced by `sum_partials_f64` on the host's call.
    use super::*;
    use crate::device::{
        block_dim, block_idx, block_idx_y, block_max, block_sum, global_index, grid_dim,
        grid_dim_y, grid_stride, thread_idx,
    };

    /// The value at `(i, j)` and its neighbours west, east, south, north, zero outside.
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

    /// Calls `f(i, j)` for the points of this thread.
    #[inline(always)]
    fn for_each_point(nx: usize, ny: usize, mut f: impl FnMut(usize, usize)) {
        let mut j = block_idx_y();
        while j < ny {
            let mut i = block_idx() * block_dim() + thread_idx();
            while i < nx {
                f(i, j);
                i += grid_dim() * block_dim();
            }
            j += grid_dim_y();
        }
    }

    /// `f(y)` of stencil `kind` at point `(i, j)`.
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
    #[inline(always)]
    unsafe fn partial_sum(n: usize, partials: *mut f64, term: impl Fn(usize) -> f64) {
        let mut acc = 0.0;
        let mut i = global_index();
        while i < n {
            acc += term(i);
            i += grid_stride();
        }
        let total = block_sum(acc);
        if thread_idx() == 0 {
            unsafe { *partials.add(block_idx()) = total };
        }
    }

    /// `dy <- f(y)` for stencil `kind` on `nx x ny` points.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_stencil_eval_f64(
        nx: usize,
        ny: usize,
        kind: u32,
        nu: f64,
        rx: f64,
        ry: f64,
        cx: f64,
        cy: f64,
        mu: f64,
        y: *const f64,
        dy: *mut f64,
    ) {
        let p = RadCoeffs {
            nu,
            rx,
            ry,
            cx,
            cy,
            mu,
        };
        for_each_point(nx, ny, |i, j| unsafe {
            *dy.add(j * nx + i) = point(nx, ny, kind, &p, i, j, y).0;
        });
    }

    /// Fused recurrence stage: `out <- ha f(g1) + (1 + c) g1 - c g2` with `f(g1)` from the
    /// stencil at each point (reads `g1`, `g2`, writes `out`; `out` may be `g2`).
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_stencil_stage_f64(
        nx: usize,
        ny: usize,
        kind: u32,
        nu: f64,
        rx: f64,
        ry: f64,
        cx: f64,
        cy: f64,
        mu: f64,
        ha: f64,
        c: f64,
        g1: *const f64,
        g2: *const f64,
        out: *mut f64,
    ) {
        let p = RadCoeffs {
            nu,
            rx,
            ry,
            cx,
            cy,
            mu,
        };
        for_each_point(nx, ny, |i, j| unsafe {
            let k = j * nx + i;
            let (f, g1k) = point(nx, ny, kind, &p, i, j, g1);
            *out.add(k) = recurrence_step(ha, f, c, g1k, *g2.add(k));
        });
    }

    /// Block maxima of the Gershgorin row bounds of stencil `kind` at `y`.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_gershgorin_partial_f64(
        n: usize,
        kind: u32,
        nu: f64,
        rx: f64,
        ry: f64,
        cx: f64,
        cy: f64,
        mu: f64,
        y: *const f64,
        partials: *mut f64,
    ) {
        let p = RadCoeffs {
            nu,
            rx,
            ry,
            cx,
            cy,
            mu,
        };
        let mut acc = 0.0f64;
        let mut i = global_index();
        while i < n {
            let r = gershgorin_row(kind, &p, unsafe { *y.add(i) });
            acc = if r > acc { r } else { acc };
            i += grid_stride();
        }
        let total = block_max(acc);
        if thread_idx() == 0 {
            unsafe { *partials.add(block_idx()) = total };
        }
    }

    /// Generic recurrence stage: `out <- ha f + (1 + c) g1 - c g2` (`out` may be `g2`).
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_recurrence_f64(
        n: usize,
        ha: f64,
        c: f64,
        f: *const f64,
        g1: *const f64,
        g2: *const f64,
        out: *mut f64,
    ) {
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = recurrence_step(ha, *f.add(i), c, *g1.add(i), *g2.add(i)) };
            i += grid_stride();
        }
    }

    /// `out <- y + ha1 f` (first recurrence stage).
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn rock4_first_f64(
        n: usize,
        ha1: f64,
        y: *const f64,
        f: *const f64,
        out: *mut f64,
    ) {
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = recurrence_first(*y.add(i), ha1, *f.add(i)) };
            i += grid_stride();
        }
    }

    /// `out <- u + ha21 k1`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn rock4_finish2_f64(
        n: usize,
        ha21: f64,
        u: *const f64,
        k1: *const f64,
        out: *mut f64,
    ) {
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = finish2(*u.add(i), ha21, *k1.add(i)) };
            i += grid_stride();
        }
    }

    /// `out <- u + ha31 k1 + ha32 k2`.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_finish3_f64(
        n: usize,
        ha31: f64,
        ha32: f64,
        u: *const f64,
        k1: *const f64,
        k2: *const f64,
        out: *mut f64,
    ) {
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = finish3(*u.add(i), ha31, *k1.add(i), ha32, *k2.add(i)) };
            i += grid_stride();
        }
    }

    /// `out <- u + ha41 k1 + ha42 k2 + ha43 k3`.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_finish4_f64(
        n: usize,
        ha41: f64,
        ha42: f64,
        ha43: f64,
        u: *const f64,
        k1: *const f64,
        k2: *const f64,
        k3: *const f64,
        out: *mut f64,
    ) {
        let ha = [ha41, ha42, ha43];
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = finish4(*u.add(i), ha, *k1.add(i), *k2.add(i), *k3.add(i)) };
            i += grid_stride();
        }
    }

    /// `out <- u + hb1 k1 + .. + hb4 k4` (the new solution).
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_solution_f64(
        n: usize,
        hb1: f64,
        hb2: f64,
        hb3: f64,
        hb4: f64,
        u: *const f64,
        k1: *const f64,
        k2: *const f64,
        k3: *const f64,
        k4: *const f64,
        out: *mut f64,
    ) {
        let hb = [hb1, hb2, hb3, hb4];
        let mut i = global_index();
        while i < n {
            unsafe {
                *out.add(i) = finish_solution(
                    *u.add(i),
                    hb,
                    *k1.add(i),
                    *k2.add(i),
                    *k3.add(i),
                    *k4.add(i),
                )
            };
            i += grid_stride();
        }
    }

    /// Block partials of the weighted error sum `sum_i error_term(..)`.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_error_partial_f64(
        n: usize,
        hd1: f64,
        hd2: f64,
        hd3: f64,
        hd4: f64,
        hbe5: f64,
        atol: f64,
        rtol: f64,
        k1: *const f64,
        k2: *const f64,
        k3: *const f64,
        k4: *const f64,
        k5: *const f64,
        y_new: *const f64,
        partials: *mut f64,
    ) {
        let hd = [hd1, hd2, hd3, hd4];
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
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn rock4_probe_partial_f64(
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
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn rock4_diff_sq_partial_f64(
        n: usize,
        a: *const f64,
        b: *const f64,
        partials: *mut f64,
    ) {
        unsafe { partial_sum(n, partials, |i| diff_sq_step(0.0, *a.add(i), *b.add(i))) }
    }

    /// `out <- y + scale (a - b)`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn rock4_shift_f64(
        n: usize,
        scale: f64,
        y: *const f64,
        a: *const f64,
        b: *const f64,
        out: *mut f64,
    ) {
        let mut i = global_index();
        while i < n {
            unsafe { *out.add(i) = shift(scale, *y.add(i), *a.add(i), *b.add(i)) };
            i += grid_stride();
        }
    }
}
