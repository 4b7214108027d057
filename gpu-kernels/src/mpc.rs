//! MPC of an object swarm (Jahn 2010, ch. 7-8): per-element math shared by the rayon CPU
//! path (`ferrocuda::mpc::cpu`) and the device kernels below.
//!
//! `M` objects, each a planar double integrator with state `(x, vx, y, vy)` and control
//! `(ax, ay)`, sampled with period `T` (Jahn 2010, §8.3):
//! `x+ = x + T vx + T^2/2 ax`, `vx+ = vx + T ax` (same in `y`).
//!
//! The constraints are folded into one scalar through Jahn's C^2 penalties
//! (Satz 8.3/8.4) `beta_{-a,a}(r) = min(((r^2 - a^2) / a^2)^3, 0)` (forbids `r < a`) and
//! `alpha_{-a,a}(r) = min(-((r^2 - a^2) / a^2)^3, 0)` (forbids `r > a`); they are
//! written on the squared norm `s = r^2`, which is the same function (`64 / (2a)^6 =
//! 1 / a^6` and `(r + a)(r - a) = r^2 - a^2`) without a square root, so their gradients
//! are smooth everywhere, also at `r = 0`.
//!
//! Layouts (all `f64`): an object's state is 4 consecutive values; the controls of a
//! horizon are time-major, `u[(i M + j) 2 + c]` (Jahn's `diffindex`); a trajectory
//! is `traj[(i M + j) 4 + k]` for `i = 0..=N`.

use crate::math::fma_f64;

/// State dimension of one object.
pub const NX: usize = 4;
/// Control dimension of one object.
pub const NU: usize = 2;
/// Number of forbidden discs (Jahn 2010, §8.3).
pub const DISCS: usize = 3;
/// Threads per block of the per-object and pair kernels (the pair tile is one block).
pub const BLOCK: usize = 256;
/// Threads per block of the pair kernel (one tile of other objects per block).
pub const PAIR_BLOCK: usize = 64;
/// Largest swarm of Jahn-style forward-difference kernels (one thread per object).
pub const FD_MAX_OBJECTS: usize = 1024;

/// Every parameter of the swarm model, passed by value to the kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwarmParams {
    /// Sampling period `T`.
    pub t: f64,
    /// Smallest distance of two objects `d`.
    pub d: f64,
    /// Largest speed `v_max`.
    pub vmax: f64,
    /// Radius of the forbidden discs.
    pub disc_radius: f64,
    /// Centres of the forbidden discs, `(x, y)`.
    pub discs: [[f64; 2]; DISCS],
    /// Reference state `(x, vx, y, vy)`.
    pub reference: [f64; NX],
    /// Weight of the velocity terms of the stage cost (`1/50` in §8.3.1).
    pub velocity_weight: f64,
    /// Weight of the terminal cost (`20`).
    pub terminal_weight: f64,
}

/// One step of an object: `x+ = A x + B u`.
#[inline(always)]
pub fn step(t: f64, x: [f64; NX], u: [f64; NU]) -> [f64; NX] {
    let h = 0.5 * t * t;
    [
        fma_f64(t, x[1], fma_f64(h, u[0], x[0])),
        fma_f64(t, u[0], x[1]),
        fma_f64(t, x[3], fma_f64(h, u[1], x[2])),
        fma_f64(t, u[1], x[3]),
    ]
}

/// `A^T lam` added to `local`: one step of the adjoint recursion
/// `lam(i) = grad phi_i(x(i)) + A^T lam(i + 1)`.
#[inline(always)]
pub fn adjoint_step(t: f64, local: [f64; NX], lam: [f64; NX]) -> [f64; NX] {
    [
        local[0] + lam[0],
        local[1] + fma_f64(t, lam[0], lam[1]),
        local[2] + lam[2],
        local[3] + fma_f64(t, lam[2], lam[3]),
    ]
}

/// `B^T lam(i + 1)`: the gradient with respect to `u(i)`.
#[inline(always)]
pub fn control_gradient(t: f64, lam: [f64; NX]) -> [f64; NU] {
    let h = 0.5 * t * t;
    [
        fma_f64(h, lam[0], t * lam[1]),
        fma_f64(h, lam[2], t * lam[3]),
    ]
}

/// Stage cost `l(x)` of §8.3.1 times `weight` (1 for the stages, the terminal weight at
/// `i = N`): `(x - xr)^2 + (y - yr)^2 + w_v ((vx - vxr)^2 + (vy - vyr)^2)`.
#[inline(always)]
pub fn stage_cost(p: &SwarmParams, weight: f64, x: [f64; NX]) -> f64 {
    let e = [
        x[0] - p.reference[0],
        x[1] - p.reference[1],
        x[2] - p.reference[2],
        x[3] - p.reference[3],
    ];
    let pos = fma_f64(e[0], e[0], e[2] * e[2]);
    let vel = fma_f64(e[1], e[1], e[3] * e[3]);
    weight * fma_f64(p.velocity_weight, vel, pos)
}

/// Gradient of [`stage_cost`] with respect to the state.
#[inline(always)]
pub fn stage_cost_gradient(p: &SwarmParams, weight: f64, x: [f64; NX]) -> [f64; NX] {
    let w2 = 2.0 * weight;
    let wv = w2 * p.velocity_weight;
    [
        w2 * (x[0] - p.reference[0]),
        wv * (x[1] - p.reference[1]),
        w2 * (x[2] - p.reference[2]),
        wv * (x[3] - p.reference[3]),
    ]
}

/// `beta_{-a,a}(sqrt(s))` and its derivative with respect to `s`, given `a^2`:
/// `((s - a^2) / a^2)^3` inside the disc `s < a^2`, 0 outside.
#[inline(always)]
pub fn beta_sq(s: f64, a2: f64) -> (f64, f64) {
    if s < a2 {
        let q = (s - a2) / a2;
        let q2 = q * q;
        (q2 * q, 3.0 * q2 / a2)
    } else {
        (0.0, 0.0)
    }
}

/// `alpha_{-a,a}(sqrt(s))` and its derivative with respect to `s`, given `a^2`:
/// `-((s - a^2) / a^2)^3` outside `s > a^2`, 0 inside.
#[inline(always)]
pub fn alpha_sq(s: f64, a2: f64) -> (f64, f64) {
    if s > a2 {
        let q = (s - a2) / a2;
        let q2 = q * q;
        (-(q2 * q), -3.0 * q2 / a2)
    } else {
        (0.0, 0.0)
    }
}

/// The pair penalty `g1 = beta_{-d,d}(|p_i - p_j|)` of two objects `dx = x_i - x_j`,
/// `dy = y_i - y_j` apart, and its gradient with respect to `(dx, dy)` (that is, with
/// respect to object `i`'s position; object `j` gets the negative).
#[inline(always)]
pub fn pair_penalty(d2: f64, dx: f64, dy: f64) -> (f64, f64, f64) {
    let s = fma_f64(dx, dx, dy * dy);
    let (v, ds) = beta_sq(s, d2);
    (v, 2.0 * ds * dx, 2.0 * ds * dy)
}

/// Adds [`pair_penalty`]`(d2, dx, dy)` to `acc` when the pair is closer than `d`;
/// elsewhere all three are zero and nothing is added (the same sums without the adds of
/// zeros, which are most of the pairs).
#[inline(always)]
pub fn add_pair_penalty(acc: &mut [f64; 3], d2: f64, dx: f64, dy: f64) {
    if fma_f64(dx, dx, dy * dy) < d2 {
        let (v, gx, gy) = pair_penalty(d2, dx, dy);
        acc[0] += v;
        acc[1] += gx;
        acc[2] += gy;
    }
}

/// The object penalty `g2(x)` of §8.3.2 (speed at most `v_max`, outside the three
/// discs) and its gradient with respect to the state.
#[inline(always)]
pub fn object_penalty(p: &SwarmParams, x: [f64; NX]) -> (f64, [f64; NX]) {
    let v2 = p.vmax * p.vmax;
    let (va, dva) = alpha_sq(fma_f64(x[1], x[1], x[3] * x[3]), v2);
    let mut g = [0.0, 2.0 * dva * x[1], 0.0, 2.0 * dva * x[3]];
    let mut v = va;
    let r2 = p.disc_radius * p.disc_radius;
    let mut k = 0;
    while k < DISCS {
        let dx = x[0] - p.discs[k][0];
        let dy = x[2] - p.discs[k][1];
        let (vb, gx, gy) = pair_penalty(r2, dx, dy);
        v += vb;
        g[0] += gx;
        g[2] += gy;
        k += 1;
    }
    (v, g)
}

/// Weight of the cost term at horizon step `i` of `n`: 1 for `i < n`, the terminal
/// weight at `i = n`.
#[inline(always)]
pub fn cost_weight(p: &SwarmParams, i: usize, n: usize) -> f64 {
    if i == n { p.terminal_weight } else { 1.0 }
}

/// An object's backward sweep over its horizon (the adjoint recursion), one step at a
/// time from `i = N` down to `i = 0`: accumulates its share of `J` (all its stage costs)
/// and of `g` (its object penalties plus half its pair sums) and, with gradients, the
/// adjoints `lam_J`, `lam_g`. Shared by the CPU twin and every exact kernel, so they add
/// the same terms in the same order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sweep {
    /// The object's share of `J` so far.
    pub cost: f64,
    /// The object's share of `g` so far.
    pub constraint: f64,
    /// Adjoint of `J`, `lam_J(i)`.
    pub lam_cost: [f64; NX],
    /// Adjoint of `g`, `lam_g(i)`.
    pub lam_constraint: [f64; NX],
}

impl Default for Sweep {
    fn default() -> Self {
        Self::new()
    }
}

impl Sweep {
    /// Nothing summed yet.
    #[inline(always)]
    pub const fn new() -> Self {
        Sweep {
            cost: 0.0,
            constraint: 0.0,
            lam_cost: [0.0; NX],
            lam_constraint: [0.0; NX],
        }
    }

    /// Step `i` of `n` at the object's state `x = x(i)`; for `i > 0`, `pair` holds its
    /// pair sums at that step (`sum_k g1`, and the gradient with respect to its
    /// position). With `grad`, advances the adjoints and returns the gradients of `J`
    /// and `g` with respect to `u(i - 1)` (zeros at `i = 0` or without `grad`).
    #[inline(always)]
    pub fn step(
        &mut self,
        p: &SwarmParams,
        i: usize,
        n: usize,
        x: [f64; NX],
        pair: [f64; 3],
        grad: bool,
    ) -> ([f64; NU], [f64; NU]) {
        if i == 0 {
            self.cost += stage_cost(p, cost_weight(p, 0, n), x);
            return ([0.0; NU], [0.0; NU]);
        }
        self.add(p.t, &StageTerms::new(p, i, n, x, pair, grad), grad)
    }

    /// Adds the terms of one step `i >= 1` (in the sweep's order, `i = N` first); with
    /// `grad`, advances the adjoints and returns the gradients of `J` and `g` with
    /// respect to `u(i - 1)`. `t` is the sampling period.
    #[inline(always)]
    pub fn add(&mut self, t: f64, terms: &StageTerms, grad: bool) -> ([f64; NU], [f64; NU]) {
        self.cost += terms.cost;
        self.constraint += terms.constraint;
        if !grad {
            return ([0.0; NU], [0.0; NU]);
        }
        self.lam_cost = adjoint_step(t, terms.grad_cost, self.lam_cost);
        self.lam_constraint = adjoint_step(t, terms.grad_constraint, self.lam_constraint);
        (
            control_gradient(t, self.lam_cost),
            control_gradient(t, self.lam_constraint),
        )
    }
}

/// The local terms of one object at one step `i >= 1` of the horizon: what
/// [`Sweep::add`] needs, independent of the other steps (so they can be computed for all
/// steps at once, and only the adjoint recursion stays sequential).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTerms {
    /// Stage cost (times the terminal weight at `i = N`).
    pub cost: f64,
    /// Object penalty plus half the pair sum.
    pub constraint: f64,
    /// Gradient of the cost with respect to the state.
    pub grad_cost: [f64; NX],
    /// Gradient of the penalties (object and pairs) with respect to the state.
    pub grad_constraint: [f64; NX],
}

impl StageTerms {
    /// Values of this many doubles in [`StageTerms::to_array`].
    pub const LEN: usize = 2 + 2 * NX;

    /// The terms at `x = x(i)`, `i >= 1`, with the pair sums `pair` at that step; the
    /// gradients only with `grad` (zeros otherwise).
    #[inline(always)]
    pub fn new(
        p: &SwarmParams,
        i: usize,
        n: usize,
        x: [f64; NX],
        pair: [f64; 3],
        grad: bool,
    ) -> StageTerms {
        let w = cost_weight(p, i, n);
        let (ov, mut og) = object_penalty(p, x);
        let mut terms = StageTerms {
            cost: stage_cost(p, w, x),
            constraint: fma_f64(0.5, pair[0], ov),
            ..StageTerms::default()
        };
        if grad {
            og[0] += pair[1];
            og[2] += pair[2];
            terms.grad_cost = stage_cost_gradient(p, w, x);
            terms.grad_constraint = og;
        }
        terms
    }

    /// As `[cost, constraint, grad_cost.., grad_constraint..]`.
    #[inline(always)]
    pub fn to_array(&self) -> [f64; Self::LEN] {
        let (c, g) = (self.grad_cost, self.grad_constraint);
        [
            self.cost,
            self.constraint,
            c[0],
            c[1],
            c[2],
            c[3],
            g[0],
            g[1],
            g[2],
            g[3],
        ]
    }

    /// The inverse of [`StageTerms::to_array`].
    #[inline(always)]
    pub fn from_array(a: [f64; Self::LEN]) -> StageTerms {
        StageTerms {
            cost: a[0],
            constraint: a[1],
            grad_cost: [a[2], a[3], a[4], a[5]],
            grad_constraint: [a[6], a[7], a[8], a[9]],
        }
    }
}

/// Threads per block of the fused kernel (`mpc_fused_f64`).
pub const FUSED_BLOCK: usize = 256;

/// Doubles of dynamic shared memory of the fused kernel for `m` objects, horizon `n`
/// and `r` objects per block: the reduction scratch (32), the controls and then the
/// positions of every object at steps `1..=N` (`2 N M`), the block's own states at
/// steps `0..=N` (`4 (N + 1) r`) and their [`StageTerms`] at steps `1..=N`
/// (`10 N r`).
pub const fn fused_shared_doubles(m: usize, n: usize, r: usize) -> usize {
    32 + 2 * n * m + 4 * (n + 1) * r + StageTerms::LEN * n * r
}

/// Lanes per pair row of the fused kernel when a block has `rows` rows (object, step)
/// for `threads` threads: the largest power of two with `rows lanes <= threads`, at
/// least 1 and at most 32 (the lanes of a row share a warp).
pub const fn fused_lanes_per_row(rows: usize, threads: usize) -> usize {
    let mut s = 32;
    while s > 1 && s * rows > threads {
        s /= 2;
    }
    s
}

/// Loads object `j`'s state from `x[4 j..]`.
#[inline(always)]
pub fn load_state(x: &[f64], j: usize) -> [f64; NX] {
    [x[NX * j], x[NX * j + 1], x[NX * j + 2], x[NX * j + 3]]
}

// Device entry points. Exact path: `mpc_pairs_f64` (one thread per object, horizon
// step, slice of the other objects and problem: the positions and the pair sums, tiled
// through shared memory), `mpc_adjoint_f64` (one thread per object: local terms, the
// adjoint sweep, block partials of `J` and `g`) and `mpc_reduce_f64` (one block per
// problem: the partials in a fixed order); or all of it in one launch for small swarms,
// `mpc_fused_f64`. Forward differences as Jahn: `mpc_fd_nominal_f64` (one block
// per problem, its `cudafunckernel`) and `mpc_fd_gradient_f64` (one block per perturbed
// component and problem, its `cadagrakernel`), both running `fd_block`. The problem
// index is grid y (grid z for the pairs).

#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_dim, block_idx, block_idx_y, block_idx_z, block_sum, dynamic_shared, for_each_strided,
    for_each_strided_group, grid_dim, group_sum, last_block_arrives, load_volatile_f64,
    sync_threads, thread_idx,
};
use crate::kernel;

// The kernels' sizes and model travel in one `#[repr(C)]` struct per kernel; the device
// pointers stay kernel parameters of their own. (LLVM knows that a pointer parameter of
// a kernel addresses global memory and emits `ld.global`/`st.global` through it; a
// pointer read from a by-value struct parameter gets generic loads and stores.)

/// Sizes and model of `mpc_pairs_f64` ([`MpcPairsF64`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairsParams {
    /// Objects `M` per problem.
    pub m: usize,
    /// Horizon `N`.
    pub n: usize,
    /// Slices the other objects are split into (grid z is `P slices`).
    pub slices: usize,
    /// Objects per slice, a multiple of [`PAIR_BLOCK`]; `slices * chunk >= M`.
    pub chunk: usize,
    /// The model.
    pub model: SwarmParams,
}

/// Sizes, model and mode of `mpc_adjoint_f64` ([`MpcAdjointF64`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdjointParams {
    /// Objects `M` per problem.
    pub m: usize,
    /// Horizon `N`.
    pub n: usize,
    /// Slices of the pair sums (as [`PairsParams::slices`]).
    pub slices: usize,
    /// The model.
    pub model: SwarmParams,
    /// Nonzero: also the adjoint sweep and the gradients.
    pub grad: u32,
}

/// Sizes, model and mode of `mpc_fused_f64` ([`MpcFusedF64`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedParams {
    /// Objects `M` per problem.
    pub m: usize,
    /// Horizon `N`.
    pub n: usize,
    /// Objects each block owns (grid x times this covers `M`).
    pub per_block: usize,
    /// The model.
    pub model: SwarmParams,
    /// Nonzero: also the gradients.
    pub grad: u32,
}

/// Sizes and model of the forward-difference kernels `mpc_fd_nominal_f64`
/// ([`MpcFdNominalF64`]) and `mpc_fd_gradient_f64` ([`MpcFdGradientF64`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FdParams {
    /// Objects `M` per problem (one thread each: at most the block size).
    pub m: usize,
    /// Horizon `N`.
    pub n: usize,
    /// The model.
    pub model: SwarmParams,
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ld(p: *const f64, i: usize) -> [f64; NX] {
    unsafe { [*p.add(i), *p.add(i + 1), *p.add(i + 2), *p.add(i + 3)] }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn st(p: *mut f64, i: usize, x: [f64; NX]) {
    unsafe {
        *p.add(i) = x[0];
        *p.add(i + 1) = x[1];
        *p.add(i + 2) = x[2];
        *p.add(i + 3) = x[3];
    }
}

/// Object `j`'s state after `steps` steps from `x0` (the same `step` calls as the
/// CPU's trajectory, so the same bits).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn state_at(
    t: f64,
    x0: *const f64,
    u: *const f64,
    m: usize,
    j: usize,
    steps: usize,
) -> [f64; NX] {
    let mut x = unsafe { ld(x0, NX * j) };
    for i in 0..steps {
        let k = (i * m + j) * NU;
        x = step(t, x, unsafe { [*u.add(k), *u.add(k + 1)] });
    }
    x
}

/// Pair sums at horizon step `i + 1` (grid y) for object `j` (grid x, blocks of
/// [`PAIR_BLOCK`] threads) over the objects `k != j` of slice `s` of problem `q`
/// (grid z = `q slices + s`; a slice is `chunk` consecutive objects, a multiple of
/// the block size): `pv = sum g1(p_j, p_k)` and its gradient with respect to `p_j`,
/// written to `pair_v[((q slices + s) N + i) M + j]` and `pair_g[(..) 2 + c]`. The
/// positions are computed from `x0` and `u` on the fly (tiles of the block size in
/// shared memory: `2 PAIR_BLOCK` doubles); slice 0 also writes the trajectory
/// `traj[(q (N + 1) + i + 1) M + j]` (and step 0 at `i = 0`) for the adjoint sweep.
#[kernel]
pub unsafe fn mpc_pairs_f64(
    params: PairsParams,
    x0: *const f64,
    u: *const f64,
    traj: *mut f64,
    pair_v: *mut f64,
    pair_g: *mut f64,
) {
    let PairsParams {
        m,
        n,
        slices,
        chunk,
        model: p,
    } = params;
    let tile = dynamic_shared::<f64>();
    let tid = thread_idx();
    let bd = block_dim();
    let j = block_idx() * bd + tid;
    let i = block_idx_y();
    let qs = block_idx_z();
    let (q, s) = (qs / slices, qs % slices);
    let d2 = p.d * p.d;
    let x0 = unsafe { x0.add(q * m * NX) };
    let u = unsafe { u.add(q * n * m * NU) };
    let me = if j < m {
        unsafe { state_at(p.t, x0, u, m, j, i + 1) }
    } else {
        [0.0; NX]
    };
    if j < m && s == 0 {
        unsafe {
            let traj = traj.add(q * (n + 1) * m * NX);
            st(traj, ((i + 1) * m + j) * NX, me);
            if i == 0 {
                st(traj, NX * j, ld(x0, NX * j));
            }
        }
    }
    let (mx, my) = (me[0], me[2]);
    let mut acc = [0.0; 3];
    let lo = s * chunk;
    let hi = if lo + chunk < m { lo + chunk } else { m };
    let mut base = lo;
    while base < hi {
        let k = base + tid;
        if k < hi {
            let o = unsafe { state_at(p.t, x0, u, m, k, i + 1) };
            unsafe {
                *tile.add(2 * tid) = o[0];
                *tile.add(2 * tid + 1) = o[2];
            }
        }
        sync_threads();
        let count = if hi - base < bd { hi - base } else { bd };
        if j < m {
            for t in 0..count {
                if base + t != j {
                    let (ox, oy) = unsafe { (*tile.add(2 * t), *tile.add(2 * t + 1)) };
                    add_pair_penalty(&mut acc, d2, mx - ox, my - oy);
                }
            }
        }
        sync_threads();
        base += bd;
    }
    if j < m {
        let o = (qs * n + i) * m + j;
        unsafe {
            *pair_v.add(o) = acc[0];
            *pair_g.add(2 * o) = acc[1];
            *pair_g.add(2 * o + 1) = acc[2];
        }
    }
}

/// Per object `j` of problem `q` (grid y): the local cost and penalty terms along the
/// trajectory plus half the pair sums (the slices added in order), summed over the
/// block into
/// `partials[(q blocks + b) 2 + {0: J, 1: g}]`; with `grad != 0` also the adjoint
/// sweep, writing `grad_j` and `grad_g` (`N M 2` per problem, the layout of `u`).
/// Needs `BLOCK / 32` doubles of dynamic shared memory.
#[kernel]
pub unsafe fn mpc_adjoint_f64(
    params: AdjointParams,
    traj: *const f64,
    pair_v: *const f64,
    pair_g: *const f64,
    grad_j: *mut f64,
    grad_g: *mut f64,
    partials: *mut f64,
) {
    let AdjointParams {
        m,
        n,
        slices,
        model: p,
        grad,
    } = params;
    let j = block_idx() * block_dim() + thread_idx();
    let q = block_idx_y();
    let mut sw = Sweep::new();
    if j < m {
        unsafe {
            let traj = traj.add(q * (n + 1) * m * NX);
            let pv = pair_v.add(q * slices * n * m);
            let pg = pair_g.add(q * slices * n * m * 2);
            let gj = grad_j.add(q * n * m * NU);
            let gg = grad_g.add(q * n * m * NU);
            let mut i = n + 1;
            while i > 0 {
                i -= 1;
                let x = ld(traj, (i * m + j) * NX);
                let mut pair = [0.0; 3];
                if i > 0 {
                    let o = (i - 1) * m + j;
                    for sl in 0..slices {
                        let os = sl * n * m + o;
                        pair[0] += *pv.add(os);
                        pair[1] += *pg.add(2 * os);
                        pair[2] += *pg.add(2 * os + 1);
                    }
                }
                let (cj, cg) = sw.step(&p, i, n, x, pair, grad != 0);
                if i > 0 && grad != 0 {
                    let o = (i - 1) * m + j;
                    *gj.add(2 * o) = cj[0];
                    *gj.add(2 * o + 1) = cj[1];
                    *gg.add(2 * o) = cg[0];
                    *gg.add(2 * o + 1) = cg[1];
                }
            }
        }
    }
    let (sj, sg) = (sw.cost, sw.constraint);
    let tj = block_sum(sj);
    let tg = block_sum(sg);
    if thread_idx() == 0 {
        let o = (q * grid_dim() + block_idx()) * 2;
        unsafe {
            *partials.add(o) = tj;
            *partials.add(o + 1) = tg;
        }
    }
}

/// The whole exact path of a small swarm in one launch: block `b` (grid x) of
/// problem `q` (grid y) owns the objects `b r .. b r + r` (`r = per_block`).
///
/// 1. The block copies the problem's controls into shared memory, rolls every object
///    out (one thread per object, in place: each control pair becomes the position it
///    leads to) and keeps its own objects' full states.
/// 2. Pair sums of each own (object, step) row over all other objects: `lanes`
///    consecutive lanes per row ([`fused_lanes_per_row`]), each a strided share of
///    the others, summed by [`group_sum`]; the row's first lane then computes its
///    [`StageTerms`], so every step's local terms are computed at once.
/// 3. One thread per own object runs the backward [`Sweep`] over them (only the
///    adjoint recursion is sequential), writing the gradients
///    (with `grad != 0`); the block's shares of `J` and `g` go to
///    `partials[(q G + b) 2 + {0, 1}]`, and the last block of the problem to arrive
///    ([`last_block_arrives`] on `counters[q]`) sums them in a fixed order into
///    `out[2 q + {0, 1}]`.
///
/// [`FUSED_BLOCK`] threads; [`fused_shared_doubles`]`(m, n, per_block)` doubles of
/// dynamic shared memory.
#[kernel]
pub unsafe fn mpc_fused_f64(
    params: FusedParams,
    x0: *const f64,
    u: *const f64,
    grad_j: *mut f64,
    grad_g: *mut f64,
    partials: *mut f64,
    counters: *mut u32,
    out: *mut f64,
) {
    let FusedParams {
        m,
        n,
        per_block,
        model: p,
        grad,
    } = params;
    let tid = thread_idx();
    let bd = block_dim();
    let b = block_idx();
    let blocks = grid_dim();
    let q = block_idx_y();
    let lo = b * per_block;
    let hi = if lo + per_block < m {
        lo + per_block
    } else {
        m
    };
    let own = hi - lo;
    let base = unsafe { dynamic_shared::<f64>().add(32) };
    let pos = base;
    let states = unsafe { base.add(2 * n * m) };
    let sums = unsafe { states.add(4 * (n + 1) * per_block) };
    let x0 = unsafe { x0.add(q * m * NX) };
    let u = unsafe { u.add(q * n * m * NU) };
    let d2 = p.d * p.d;

    // 1. Controls to shared memory (four loads in flight per thread), then the
    //    rollout in place.
    let total = 2 * n * m;
    let rest = for_each_strided_group(tid, bd, total, |ks: [usize; 4]| unsafe {
        let v = ks.map(|k| *u.add(k));
        for (k, v) in ks.into_iter().zip(v) {
            *pos.add(k) = v;
        }
    });
    for_each_strided(rest, bd, total, |k| unsafe { *pos.add(k) = *u.add(k) });
    sync_threads();
    for_each_strided(tid, bd, m, |j| {
        let mine = j >= lo && j < hi;
        let mut x = unsafe { ld(x0, NX * j) };
        if mine {
            unsafe { st(states, NX * (j - lo), x) };
        }
        for i in 0..n {
            let c = (i * m + j) * NU;
            unsafe {
                x = step(p.t, x, [*pos.add(c), *pos.add(c + 1)]);
                *pos.add(c) = x[0];
                *pos.add(c + 1) = x[2];
                if mine {
                    st(states, NX * ((i + 1) * per_block + j - lo), x);
                }
            }
        }
    });
    sync_threads();

    // 2. Pair sums of the rows (step i + 1, own object lo + r), row = i own + r.
    let rows = n * own;
    let lanes = fused_lanes_per_row(rows, bd);
    let per_pass = bd / lanes;
    let (row0, slot) = (tid / lanes, tid % lanes);
    let passes = rows.div_ceil(per_pass);
    for pass in 0..passes {
        let row = row0 + pass * per_pass;
        let mut acc = [0.0; 3];
        if row < rows {
            let (i, jj) = (row / own, lo + row % own);
            let at = unsafe { pos.add(2 * i * m) };
            let (mx, my) = unsafe { (*at.add(2 * jj), *at.add(2 * jj + 1)) };
            for_each_strided(slot, lanes, m, |k| {
                if k != jj {
                    let (ox, oy) = unsafe { (*at.add(2 * k), *at.add(2 * k + 1)) };
                    add_pair_penalty(&mut acc, d2, mx - ox, my - oy);
                }
            });
        }
        // Every lane of the warp shuffles (rows past the end add zeros).
        let v = group_sum(acc[0], lanes);
        let gx = group_sum(acc[1], lanes);
        let gy = group_sum(acc[2], lanes);
        // The row's first lane: its stage terms, every step at once.
        if row < rows && slot == 0 {
            let (i, r) = (row / own + 1, row % own);
            let x = unsafe { ld(states, NX * (i * per_block + r)) };
            let terms = StageTerms::new(&p, i, n, x, [v, gx, gy], grad != 0).to_array();
            let at = unsafe { sums.add(StageTerms::LEN * row) };
            for (c, t) in terms.iter().enumerate() {
                unsafe { *at.add(c) = *t };
            }
        }
    }
    sync_threads();

    // 3. The backward sweep of each own object.
    let (mut sj, mut sg) = (0.0, 0.0);
    // A hand-written block-stride loop: through `for_each_strided`, ptxas gives this
    // kernel 4 more registers on sm_80.
    let mut r = tid;
    while r < own {
        let jj = lo + r;
        let mut sw = Sweep::new();
        let mut i = n + 1;
        while i > 1 {
            i -= 1;
            let at = unsafe { sums.add(StageTerms::LEN * ((i - 1) * own + r)) };
            let mut a = [0.0; StageTerms::LEN];
            for (c, v) in a.iter_mut().enumerate() {
                *v = unsafe { *at.add(c) };
            }
            let (cj, cg) = sw.add(p.t, &StageTerms::from_array(a), grad != 0);
            if grad != 0 {
                let o = (q * n * m + (i - 1) * m + jj) * NU;
                unsafe {
                    *grad_j.add(o) = cj[0];
                    *grad_j.add(o + 1) = cj[1];
                    *grad_g.add(o) = cg[0];
                    *grad_g.add(o + 1) = cg[1];
                }
            }
        }
        let x = unsafe { ld(states, NX * r) };
        sw.step(&p, 0, n, x, [0.0; 3], false);
        sj += sw.cost;
        sg += sw.constraint;
        r += bd;
    }
    let tj = block_sum(sj);
    let tg = block_sum(sg);
    if blocks == 1 {
        if tid == 0 {
            unsafe {
                *out.add(2 * q) = tj;
                *out.add(2 * q + 1) = tg;
            }
        }
        return;
    }
    let part = unsafe { partials.add(2 * q * blocks) };
    if tid == 0 {
        unsafe {
            *part.add(2 * b) = tj;
            *part.add(2 * b + 1) = tg;
        }
    }
    // SAFETY: counters[q] is this problem's own counter, zeroed at allocation and
    // reset by the last block of every launch.
    if !unsafe { last_block_arrives(counters.add(q), blocks as u32) } {
        return;
    }
    let (mut aj, mut ag) = (0.0, 0.0);
    for_each_strided(tid, bd, blocks, |c| unsafe {
        aj += load_volatile_f64(part.add(2 * c));
        ag += load_volatile_f64(part.add(2 * c + 1));
    });
    let tj = block_sum(aj);
    let tg = block_sum(ag);
    if tid == 0 {
        unsafe {
            *out.add(2 * q) = tj;
            *out.add(2 * q + 1) = tg;
        }
    }
}

/// `out[2 q + c] = sum_b partials[(q blocks + b) 2 + c]` in a fixed order; one block
/// of 32 threads per problem (grid x).
#[kernel]
pub unsafe fn mpc_reduce_f64(blocks: usize, partials: *const f64, out: *mut f64) {
    let q = block_idx();
    let c = thread_idx();
    if c < 2 {
        let mut s = 0.0;
        for b in 0..blocks {
            s += unsafe { *partials.add((q * blocks + b) * 2 + c) };
        }
        unsafe { *out.add(2 * q + c) = s };
    }
}

/// Jahn's block (one thread per object, `m <= blockDim`): from the nominal
/// state at step `i0` (the stored trajectory, or `x0` when `i0 = 0`) runs the horizon
/// with `u(i0)` of object `jp`, component `cp`, raised by `h` (`jp = usize::MAX`: no
/// perturbation), and returns through `f(i, sum_J, sum_g)` the per-step sums of every
/// step `i > i0` (for the nominal block also `i = 0`: the constant first stage cost).
/// With `keep`, the trajectory is written to `traj`. Needs `(32 + 2 m)` doubles of
/// dynamic shared memory: the reduction scratch, then the positions.
#[cfg(target_arch = "nvptx64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn fd_block(
    m: usize,
    n: usize,
    p: &SwarmParams,
    start: *const f64,
    u: *const f64,
    i0: usize,
    jp: usize,
    cp: usize,
    h: f64,
    traj: *mut f64,
    keep: bool,
    mut f: impl FnMut(usize, f64, f64),
) {
    let j = thread_idx();
    let on = j < m;
    let pos = unsafe { dynamic_shared::<f64>().add(32) };
    let d2 = p.d * p.d;
    let mut x = if on {
        unsafe { ld(start, NX * j) }
    } else {
        [0.0; NX]
    };
    if keep && i0 == 0 {
        let c0 = if on { stage_cost(p, 1.0, x) } else { 0.0 };
        let s0 = block_sum(c0);
        f(0, s0, 0.0);
        if on {
            unsafe { st(traj, NX * j, x) };
        }
    }
    for i in i0..n {
        let (mut lj, mut lg) = (0.0, 0.0);
        if on {
            let k = (i * m + j) * NU;
            let mut uu = unsafe { [*u.add(k), *u.add(k + 1)] };
            if i == i0 && j == jp {
                uu[cp] += h;
            }
            x = step(p.t, x, uu);
            unsafe {
                *pos.add(2 * j) = x[0];
                *pos.add(2 * j + 1) = x[2];
            }
        }
        sync_threads();
        if on {
            let mut pv = 0.0;
            for k in 0..m {
                if k != j {
                    let (ox, oy) = unsafe { (*pos.add(2 * k), *pos.add(2 * k + 1)) };
                    pv += pair_penalty(d2, x[0] - ox, x[2] - oy).0;
                }
            }
            let (ov, _) = object_penalty(p, x);
            lg = fma_f64(0.5, pv, ov);
            lj = stage_cost(p, cost_weight(p, i + 1, n), x);
            if keep {
                unsafe { st(traj, ((i + 1) * m + j) * NX, x) };
            }
        }
        let sj = block_sum(lj);
        let sg = block_sum(lg);
        f(i + 1, sj, sg);
    }
}

/// The nominal run of problem `q` (grid x), one block: writes the trajectory and the
/// per-step sums `steps[(q (N + 1) + i) 2 + {0, 1}]` and `out[2 q + {0, 1}] = (J, g)`.
#[kernel]
pub unsafe fn mpc_fd_nominal_f64(
    params: FdParams,
    x0: *const f64,
    u: *const f64,
    traj: *mut f64,
    steps: *mut f64,
    out: *mut f64,
) {
    let FdParams { m, n, model: p } = params;
    let q = block_idx();
    let (mut tj, mut tg) = (0.0, 0.0);
    unsafe {
        let steps = steps.add(q * (n + 1) * 2);
        fd_block(
            m,
            n,
            &p,
            x0.add(q * m * NX),
            u.add(q * n * m * NU),
            0,
            usize::MAX,
            0,
            0.0,
            traj.add(q * (n + 1) * m * NX),
            true,
            |i, sj, sg| {
                if thread_idx() == 0 {
                    *steps.add(2 * i) = sj;
                    *steps.add(2 * i + 1) = sg;
                    tj += sj;
                    tg += sg;
                }
            },
        );
        if thread_idx() == 0 {
            *out.add(2 * q) = tj;
            *out.add(2 * q + 1) = tg;
        }
    }
}

/// Forward differences of component `c` (grid x, `N M 2` of them) of problem `q`
/// (grid y): `grad[c] = sum_{i > i0} (S'(i) - S(i)) / h` for `J` and `g`, the
/// perturbed run starting from the nominal state at `i0 = c / (2 M)`.
#[kernel]
pub unsafe fn mpc_fd_gradient_f64(
    params: FdParams,
    h: f64,
    u: *const f64,
    traj: *const f64,
    steps: *const f64,
    grad_j: *mut f64,
    grad_g: *mut f64,
) {
    let FdParams { m, n, model: p } = params;
    let c = block_idx();
    let q = block_idx_y();
    let i0 = c / (m * NU);
    let jp = (c / NU) % m;
    let cp = c % NU;
    let (mut dj, mut dg) = (0.0, 0.0);
    unsafe {
        let steps = steps.add(q * (n + 1) * 2);
        fd_block(
            m,
            n,
            &p,
            traj.add((q * (n + 1) + i0) * m * NX),
            u.add(q * n * m * NU),
            i0,
            jp,
            cp,
            h,
            core::ptr::null_mut(),
            false,
            |i, sj, sg| {
                if thread_idx() == 0 {
                    dj += sj - *steps.add(2 * i);
                    dg += sg - *steps.add(2 * i + 1);
                }
            },
        );
        if thread_idx() == 0 {
            let o = q * n * m * NU + c;
            *grad_j.add(o) = dj / h;
            *grad_g.add(o) = dg / h;
        }
    }
}
