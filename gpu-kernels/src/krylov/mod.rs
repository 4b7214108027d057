//! The vector work of GMRES's Arnoldi step: per-element math shared by the rayon CPU
//! path (`ferrocuda::krylov::cpu`) and, on the device, the kernels.
//!
//! Delayed CGS2 (`ferrocuda::krylov`): the basis `V` holds the finished vectors
//! `q_0 .. q_{k-1}` in columns `0..k` and the once-projected, unnormalised vector `u` in
//! column `k`. One pass over `V` gives every dot product the step needs
//! (kernel `gs_dots_partial`: `V_j^H u` and `V_j^H w` for `j <= k`); one more pass
//! ([`gs_update`]) reorthogonalises and normalises `u` into
//! `q_k` and projects `w` into the next `u`:
//!
//! `q_k = (u - sum_j a_j V_j) / alpha`, `u' = (w - c u - sum_j b_j V_j) / alpha`.

pub mod cycle;
pub mod fused;

use crate::scalar::{RealScalar, Scalar};

/// Threads per block of the Krylov kernels.
pub const BLOCK: usize = 256;
/// Basis vectors one dots block handles (two accumulators each, in registers).
pub const DOTS_CHUNK: usize = 8;

/// One element of [`gs_update`]: `(q, u')` from `u_i`, `w_i`, the sums
/// `sa = sum_j a_j V_ji`, `sb = sum_j b_j V_ji`, `c` and `1 / alpha`.
#[inline(always)]
pub fn gs_update<T: Scalar>(u: T, w: T, sa: T, sb: T, c: T, inv_alpha: T::Real) -> (T, T) {
    let inv = T::from_real(inv_alpha);
    let q = (u - sa) * inv;
    let next = ((-c).mul_add(u, w) - sb) * inv;
    (q, next)
}

/// One element of the pipelined step's update ([`gmres_pipe_pass`]): from `z = Z_{k-1}`,
/// `q = A M^{-1} Z_{k-1}`, the sums `sv = sum_j h_j V_j`, `sz = sum_j h_j Z_j` (`j < k`)
/// and `1 / alpha`: `(V_k, Z_k) = ((z - sv) / alpha, (q - sz) / alpha)`.
#[inline(always)]
pub fn pipe_update<T: Scalar>(z: T, q: T, sv: T, sz: T, inv_alpha: T::Real) -> (T, T) {
    let inv = T::from_real(inv_alpha);
    ((z - sv) * inv, (q - sz) * inv)
}

/// `acc + coef * v`: one term of the basis sums, in basis order.
#[inline(always)]
pub fn basis_term<T: Scalar>(acc: T, coef: T, v: T) -> T {
    coef.mul_add(v, acc)
}

/// `w - h x`: one MGS elimination step.
#[inline(always)]
pub fn eliminate<T: Scalar>(w: T, h: T, x: T) -> T {
    (-h).mul_add(x, w)
}

/// `x / norm`, or `x` where `norm` is zero (a breakdown the host sees and stops on).
#[inline(always)]
pub fn normalize<T: Scalar>(x: T, norm: T::Real) -> T {
    if norm == T::Real::ZERO {
        x
    } else {
        x * T::from_real(T::Real::from_f64(1.0 / norm.to_f64()))
    }
}

/// How a basis vector's entries are stored (CB-GMRES, "compressed basis"): in the
/// vectors' own type `V` (identity), or rounded to single precision for a
/// double-precision solve (`f32` for `f64`, `Complex<f32>` for `Complex<f64>`): the
/// orthogonalisation reads half the bytes, and every sum is still taken in `V`.
pub trait BasisScalar<V: Scalar>: Scalar {
    /// The stored entry as `V` (exact).
    fn widen(self) -> V;
    /// `v` rounded to the storage type (to nearest).
    fn narrow(v: V) -> Self;
}

impl<T: Scalar> BasisScalar<T> for T {
    #[inline(always)]
    fn widen(self) -> T {
        self
    }
    #[inline(always)]
    fn narrow(v: T) -> T {
        v
    }
}

impl BasisScalar<f64> for f32 {
    #[inline(always)]
    fn widen(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn narrow(v: f64) -> f32 {
        v as f32
    }
}

impl BasisScalar<num_complex::Complex<f64>> for num_complex::Complex<f32> {
    #[inline(always)]
    fn widen(self) -> num_complex::Complex<f64> {
        num_complex::Complex::new(self.re as f64, self.im as f64)
    }
    #[inline(always)]
    fn narrow(v: num_complex::Complex<f64>) -> Self {
        num_complex::Complex::new(v.re as f32, v.im as f32)
    }
}

/// The compressed basis type of each vector type: `f32` for `f64`, `Complex<f32>` for
/// `Complex<f64>`; single-precision vectors store themselves.
pub trait CompressedBasis: Scalar {
    /// The type a compressed basis stores.
    type Low: BasisScalar<Self>;
}
impl CompressedBasis for f64 {
    type Low = f32;
}
impl CompressedBasis for f32 {
    type Low = f32;
}
impl CompressedBasis for num_complex::Complex<f64> {
    type Low = num_complex::Complex<f32>;
}
impl CompressedBasis for num_complex::Complex<f32> {
    type Low = num_complex::Complex<f32>;
}

/// `v` rounded to its compressed basis type and back (exact widening): the value a
/// compressed basis holds, in `T` (the CPU's CB-GMRES keeps its basis so).
#[inline(always)]
pub fn basis_round<T: CompressedBasis>(v: T) -> T {
    T::Low::narrow(v).widen()
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::blas1::dot_step;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    WARP_SIZE, block_dim, block_idx, dynamic_shared, for_each_block_index, for_each_index,
    grid_dim, lane, sync_threads, thread_idx, warp, warp_sum, warp_sum8,
};
use crate::{instances, kernel};

/// Stage one of the delayed-CGS2 dots: `V_j^H u` (set `j`) and `V_j^H w` (set
/// `k1 + j`) for basis columns `j < k1` (column `j` at `basis + j ld`). The grid is
/// `element_blocks * groups` blocks with the group fastest, so the blocks reading one
/// range of `u` and `w` for different groups of columns run together and share it in
/// L2. Partial of set `s`, element block `e`: `partials[s * element_blocks + e]`.
/// Needs `2 DOTS_CHUNK block_dim / 32 size_of::<T>()` bytes of dynamic shared memory.
#[kernel(args = GsDotsPartial)]
pub unsafe fn gs_dots_partial<T: Scalar>(
    n: usize,
    k1: usize,
    u: *const T,
    w: *const T,
    basis: *const T,
    ld: usize,
    partials: *mut T,
) {
    unsafe {
        gs_dots_block::<T, T, false>(block_idx(), grid_dim(), n, k1, u, w, basis, ld, partials)
    };
}

/// [`gs_dots_partial`] over a compressed basis ([`BasisScalar`]): `u` (column `k`) and
/// the columns in `B`, `w` and the sums in `T`.
#[kernel(args = GsDotsPartialCb)]
pub unsafe fn gs_dots_partial_cb<B: BasisScalar<T>, T: Scalar>(
    n: usize,
    k1: usize,
    u: *const B,
    w: *const T,
    basis: *const B,
    ld: usize,
    partials: *mut T,
) {
    unsafe {
        gs_dots_block::<T, B, false>(block_idx(), grid_dim(), n, k1, u, w, basis, ld, partials)
    };
}

/// Block `vb` of a [`gs_dots_partial`] grid of `blocks` blocks, run by this block (the
/// cycle kernel runs several in turn): the same partial, the same bits. `PAIRED`: two
/// elements' loads at a time (more registers; the cycle kernel's choice). Ends with a
/// barrier, so the shared memory may be reused right after.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gs_dots_block<T: Scalar, B: BasisScalar<T>, const PAIRED: bool>(
    vb: usize,
    blocks: usize,
    n: usize,
    k1: usize,
    u: *const B,
    w: *const T,
    basis: *const B,
    ld: usize,
    partials: *mut T,
) {
    let groups = k1.div_ceil(DOTS_CHUNK);
    let (e, g) = (vb / groups, vb % groups);
    let element_blocks = blocks / groups;
    let first = g * DOTS_CHUNK;
    let count = if k1 - first < DOTS_CHUNK {
        k1 - first
    } else {
        DOTS_CHUNK
    };
    let stride = element_blocks * block_dim();
    let mut au = [T::ZERO; DOTS_CHUNK];
    let mut aw = [T::ZERO; DOTS_CHUNK];
    // A plain loop, not `device::for_each_strided`: with the closure LLVM hoists the
    // eight column addresses (f32 40 -> 56, f64 64 -> 72 registers on sm_80: fewer
    // resident blocks for the hottest GMRES kernel).
    let mut i = e * block_dim() + thread_idx();
    if PAIRED {
        // Two elements' loads before their sums (same order of sums): a small grid has
        // few elements per thread, and each would otherwise wait its own round trip.
        while i + stride < n {
            let i2 = i + stride;
            let (u1, w1, u2, w2) = unsafe {
                (
                    (*u.add(i)).widen(),
                    *w.add(i),
                    (*u.add(i2)).widen(),
                    *w.add(i2),
                )
            };
            let (mut v1, mut v2) = ([T::ZERO; DOTS_CHUNK], [T::ZERO; DOTS_CHUNK]);
            for j in 0..DOTS_CHUNK {
                if j < count {
                    let col = unsafe { basis.add((first + j) * ld) };
                    (v1[j], v2[j]) = unsafe { ((*col.add(i)).widen(), (*col.add(i2)).widen()) };
                }
            }
            for j in 0..DOTS_CHUNK {
                if j < count {
                    au[j] = dot_step(dot_step(au[j], v1[j], u1), v2[j], u2);
                    aw[j] = dot_step(dot_step(aw[j], v1[j], w1), v2[j], w2);
                }
            }
            i += 2 * stride;
        }
    }
    while i < n {
        let (ui, wi) = unsafe { ((*u.add(i)).widen(), *w.add(i)) };
        for j in 0..DOTS_CHUNK {
            if j < count {
                let v = unsafe { (*basis.add((first + j) * ld + i)).widen() };
                au[j] = dot_step(au[j], v, ui);
                aw[j] = dot_step(aw[j], v, wi);
            }
        }
        i += stride;
    }
    // Warp sums to shared memory, one barrier, then warp `w` finishes sets w, w +
    // warps, ... (constant indices into the accumulators keep them in registers).
    let shared = dynamic_shared::<T>();
    let warps = block_dim() / WARP_SIZE;
    for j in 0..DOTS_CHUNK {
        let (su, sw) = (warp_sum(au[j]), warp_sum(aw[j]));
        if lane() == 0 && j < count {
            unsafe {
                *shared.add(j * warps + warp()) = su;
                *shared.add((DOTS_CHUNK + j) * warps + warp()) = sw;
            }
        }
    }
    sync_threads();
    let mut s = warp();
    while s < 2 * DOTS_CHUNK {
        let j = s % DOTS_CHUNK;
        if j < count {
            let v = if lane() < warps {
                unsafe { *shared.add(s * warps + lane()) }
            } else {
                T::ZERO
            };
            let total = warp_sum(v);
            if lane() == 0 {
                let set = if s < DOTS_CHUNK {
                    first + j
                } else {
                    k1 + first + j
                };
                unsafe { *partials.add(set * element_blocks + e) = total };
            }
        }
        s += warps;
    }
    sync_threads();
}

/// The scalars of `gs_update_kernel` (more than six parameters in all; the device
/// pointers stay direct parameters so that their loads remain `ld.global`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GsUpdateScalars<T: Scalar> {
    /// Rows of the basis vectors.
    pub n: usize,
    /// The column being finished (`0 <= k`, `k + 1` columns of the basis hold data).
    pub k: usize,
    /// Elements between the starts of two basis columns.
    pub ld: usize,
    /// The coefficient `c` of `u` in the next vector.
    pub c: T,
    /// `1 / alpha`, the norm of the reorthogonalised `u`.
    pub inv_alpha: T::Real,
}

/// The delayed-CGS2 update over columns `j < k` with coefficients `a`, `b` (device):
/// `V_k <- (V_k - sum a_j V_j) / alpha`, `V_{k+1} <- (w - c V_k - sum b_j V_j) / alpha`
/// (column `j` at `basis + j ld`).
#[kernel(args = GsUpdate)]
pub unsafe fn gs_update_kernel<T: Scalar>(
    p: GsUpdateScalars<T>,
    a: *const T,
    b: *const T,
    w: *const T,
    basis: *mut T,
) {
    unsafe { gs_update_columns(p.n, p.k, p.ld, p.c, p.inv_alpha, a, b, w, basis) };
}

/// [`gs_update_kernel`] over a compressed basis ([`BasisScalar`]): columns read in `B`
/// and widened, the sums in `T`, the two new columns rounded to `B`.
#[kernel(args = GsUpdateCb)]
pub unsafe fn gs_update_cb<B: BasisScalar<T>, T: Scalar>(
    p: GsUpdateScalars<T>,
    a: *const T,
    b: *const T,
    w: *const T,
    basis: *mut B,
) {
    unsafe { gs_update_columns(p.n, p.k, p.ld, p.c, p.inv_alpha, a, b, w, basis) };
}

/// The body of the update kernels.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gs_update_columns<T: Scalar, B: BasisScalar<T>>(
    n: usize,
    k: usize,
    ld: usize,
    c: T,
    inv_alpha: T::Real,
    a: *const T,
    b: *const T,
    w: *const T,
    basis: *mut B,
) {
    for_each_index(n, |i| {
        let (mut sa, mut sb) = (T::ZERO, T::ZERO);
        for j in 0..k {
            let v = unsafe { (*basis.add(j * ld + i)).widen() };
            sa = basis_term(sa, unsafe { *a.add(j) }, v);
            sb = basis_term(sb, unsafe { *b.add(j) }, v);
        }
        let u = unsafe { (*basis.add(k * ld + i)).widen() };
        let (q, next) = gs_update(u, unsafe { *w.add(i) }, sa, sb, c, inv_alpha);
        unsafe {
            *basis.add(k * ld + i) = B::narrow(q);
            *basis.add((k + 1) * ld + i) = B::narrow(next);
        }
    });
}

/// Where a cycle that runs on the device keeps the update coefficients of its current
/// step (`coef`, `2 m + 2` values): `a_j` at `j`, `b_j` at `m + j` (`j < k`), `c / alpha`
/// at `2 m`, `1 / alpha` at `2 m + 1`.
pub const fn device_coef_len(m: usize) -> usize {
    2 * m + 2
}

/// The restart length and the state's length of the cycle at `state`, or `None` once it
/// has ended.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn live_cycle(state: *const f64) -> Option<(usize, usize)> {
    if unsafe { *state.add(cycle::Header::DONE) } != 0.0 {
        return None;
    }
    let m = unsafe { *state.add(cycle::Header::M) } as usize;
    Some((m, cycle::state_len(m)))
}

/// Runs `step` on one thread over the cycle state at `state`, unless the cycle has
/// ended. Where the host gave `staged >= cycle::state_len(m)` f64 of dynamic shared
/// memory, the block copies the state there first and back after (the step's serial
/// loops then wait on shared memory, not on global-memory round trips); otherwise the
/// thread works on global memory. Every thread of the block calls it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn on_cycle_state(state: *mut f64, staged: usize, step: impl FnOnce(&mut [f64])) {
    let Some((_, len)) = (unsafe { live_cycle(state) }) else {
        return;
    };
    if staged < len {
        if thread_idx() == 0 {
            // SAFETY: the host sized `state` for its restart length, and one thread uses it.
            step(unsafe { core::slice::from_raw_parts_mut(state, len) });
        }
        return;
    }
    let shared = dynamic_shared::<f64>();
    unsafe { copy_in_block(shared, state, len) };
    sync_threads();
    if thread_idx() == 0 {
        // SAFETY: `staged >= len` f64 of dynamic shared memory, used by this thread alone
        // between the barriers.
        step(unsafe { core::slice::from_raw_parts_mut(shared, len) });
    }
    sync_threads();
    unsafe { copy_out_block(state, shared, len) };
}

/// Dynamic shared memory (in `f64`) a DCGS2 cycle step needs besides a staged state:
/// phase one's result for the other threads (4), then the step's dots as `f64` pairs
/// (`4 (m + 1)`), so that the serial loops over them wait on shared memory, not on
/// global-memory round trips. A staged state follows them.
pub const fn dcgs2_scratch_len(m: usize) -> usize {
    4 + 4 * (m + 1)
}

/// Delayed-CGS2 step `k` of the cycle in `state` ([`cycle`]) from the step's summed dots
/// (`2 (k + 1)` values: `V_j^H u`, then `V_j^H w`): records the step and writes the
/// update's coefficients ([`device_coef_len`]), or ends the cycle (the update kernel
/// then skips). `staged` is the dynamic shared memory the launch gave, in `f64`: at
/// least [`dcgs2_scratch_len`] of `m`, and the state is worked on in place; at least
/// that plus `cycle::state_len(m)`, and it is copied there first and back after.
/// Thread 0 runs phase one ([`cycle::dcgs2_column`]), thread `i` entry `i` of phase two
/// (the `O(k^2)` part) and coefficient `i` of phase three: the same sums in the same
/// order as one thread's. Launch one block of at least `m + 1` threads; with less
/// shared memory or fewer threads, one thread runs the whole step on global memory.
#[kernel(args = GmresDcgs2Step)]
pub unsafe fn gmres_dcgs2_step<T: Scalar>(
    k: usize,
    staged: usize,
    dots: *const T,
    state: *mut f64,
    coef: *mut T,
) {
    let Some((m, len)) = (unsafe { live_cycle(state) }) else {
        return;
    };
    let scratch = dcgs2_scratch_len(m);
    if staged < scratch || block_dim() < k + 1 {
        if thread_idx() == 0 {
            let du = |j: usize| cycle::from_scalar(unsafe { *dots.add(j) });
            let dw = |j: usize| cycle::from_scalar(unsafe { *dots.add(k + 1 + j) });
            // SAFETY: the host sized `state` for `m`, and one thread uses it.
            let st = unsafe { core::slice::from_raw_parts_mut(state, len) };
            let sink = |j: usize, v: cycle::C| unsafe { *coef.add(m + j) = cycle::to_scalar(v) };
            if let Some(u) = cycle::dcgs2_step(st, k, du, dw, sink) {
                for j in 0..k {
                    unsafe { *coef.add(j) = *dots.add(j) };
                }
                unsafe { write_update_scalars(m, coef, u) };
            }
        }
        return;
    }
    let shared = dynamic_shared::<f64>();
    let copy = staged >= scratch + len;
    let st = if copy {
        // SAFETY: `staged >= scratch + len` f64 of dynamic shared memory.
        let s = unsafe { shared.add(scratch) };
        unsafe { copy_in_block(s, state, len) };
        s
    } else {
        state
    };
    // SAFETY: `staged >= scratch` f64 at `shared`; the state (`len` f64) is the live
    // cycle's, in shared memory after the scratch or in place.
    unsafe { dcgs2_step_block(k, m, len, dots, shared, st, coef) };
    if copy {
        sync_threads();
        unsafe { copy_out_block(state, st, len) };
    }
}

/// Delayed-CGS2 step `k` of the live cycle of restart length `m` whose state (`len`
/// f64) is at `st`, by every thread of the block: the step's dots (`2 (k + 1)` at
/// `dots`) are staged as `f64` pairs in `scratch` ([`dcgs2_scratch_len`] f64 of shared
/// memory), then thread 0 runs phase one, thread `i` entry `i` of phase two and
/// coefficient `i` of phase three, written to `coef` ([`device_coef_len`]). The block
/// needs at least `k + 1` threads. Does not end with a barrier: synchronise before
/// reading `coef` or the state.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dcgs2_step_block<T: Scalar>(
    k: usize,
    m: usize,
    len: usize,
    dots: *const T,
    scratch: *mut f64,
    st: *mut f64,
    coef: *mut T,
) {
    let extra = scratch;
    // SAFETY (every scratch access below): the caller gave `dcgs2_scratch_len(m)` f64.
    let pairs = unsafe { scratch.add(4) };
    for_each_block_index(2 * (k + 1), |j| {
        let z = cycle::from_scalar(unsafe { *dots.add(j) });
        unsafe {
            *pairs.add(2 * j) = z.re;
            *pairs.add(2 * j + 1) = z.im;
        }
    });
    sync_threads();
    let pair = |j: usize| unsafe { cycle::C::new(*pairs.add(2 * j), *pairs.add(2 * j + 1)) };
    let du = |j: usize| pair(j);
    let dw = |j: usize| pair(k + 1 + j);
    if thread_idx() == 0 {
        // SAFETY: the state has `len` f64; only this thread touches it between the
        // barriers.
        let s = unsafe { core::slice::from_raw_parts_mut(st, len) };
        let next = cycle::dcgs2_column(s, k, du, dw);
        unsafe {
            match next {
                Some(n) => {
                    *extra = 1.0;
                    *extra.add(1) = n.alpha;
                    *extra.add(2) = n.c.re;
                    *extra.add(3) = n.c.im;
                }
                None => *extra = 0.0,
            }
        }
    }
    sync_threads();
    let go = unsafe { *extra } != 0.0;
    let next = unsafe {
        cycle::Dcgs2Next {
            alpha: *extra.add(1),
            c: cycle::C::new(*extra.add(2), *extra.add(3)),
        }
    };
    let t = thread_idx();
    let mut entry = cycle::C::new(0.0, 0.0);
    if go && t <= k {
        // SAFETY: reads only, until the barrier below.
        let s = unsafe { core::slice::from_raw_parts(st, len) };
        entry = cycle::dcgs2_pending(s, k, t, du, dw, next);
    }
    sync_threads();
    if go && t <= k {
        let at = {
            let s = unsafe { core::slice::from_raw_parts(st, len) };
            cycle::pending_index(s, t)
        };
        unsafe {
            *st.add(at) = entry.re;
            *st.add(at + 1) = entry.im;
        }
    }
    if go && t < k {
        // The update's a_t = s_t and b_t.
        unsafe {
            *coef.add(t) = *dots.add(t);
            *coef.add(m + t) = cycle::to_scalar(cycle::dcgs2_b(t, du, dw, next));
        }
    }
    if go && t == 0 {
        unsafe { write_update_scalars(m, coef, next.update()) };
    }
}

/// The update's `c / alpha` and `1 / alpha` into `coef`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn write_update_scalars<T: Scalar>(m: usize, coef: *mut T, u: cycle::Dcgs2Update) {
    unsafe {
        *coef.add(2 * m) = cycle::to_scalar(u.c);
        *coef.add(2 * m + 1) = T::from_real(T::Real::from_f64(u.inv_alpha));
    }
}

/// `dst[i] = src[i]` for `i < n` by the threads of the block, four loads in flight per
/// thread before their stores (one load at a time would wait a global round trip each).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_in_block(dst: *mut f64, src: *const f64, n: usize) {
    let (t, s) = (thread_idx(), block_dim());
    let mut i = t;
    while i + 3 * s < n {
        let v = unsafe {
            [
                *src.add(i),
                *src.add(i + s),
                *src.add(i + 2 * s),
                *src.add(i + 3 * s),
            ]
        };
        for (j, x) in v.into_iter().enumerate() {
            unsafe { *dst.add(i + j * s) = x };
        }
        i += 4 * s;
    }
    while i < n {
        unsafe { *dst.add(i) = *src.add(i) };
        i += s;
    }
}

/// [`copy_in_block`] back to global memory (stores do not wait: one at a time is fine).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn copy_out_block(dst: *mut f64, src: *const f64, n: usize) {
    for_each_block_index(n, |i| unsafe { *dst.add(i) = *src.add(i) });
}

/// The scalars of `gs_update_device`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GsUpdateDeviceScalars {
    /// Rows of the basis vectors.
    pub n: usize,
    /// The column being finished.
    pub k: usize,
    /// Elements between the starts of two basis columns.
    pub ld: usize,
    /// Restart length of the cycle (the layout of `coef`).
    pub m: usize,
}

/// [`gs_update_kernel`] with its coefficients read on the device ([`device_coef_len`]);
/// nothing where the cycle in `state` has ended.
#[kernel(args = GsUpdateDevice)]
pub unsafe fn gs_update_device<T: Scalar>(
    p: GsUpdateDeviceScalars,
    coef: *const T,
    state: *const f64,
    w: *const T,
    basis: *mut T,
) {
    if unsafe { *state.add(cycle::Header::DONE) } != 0.0 {
        return;
    }
    let GsUpdateDeviceScalars { n, k, ld, m } = p;
    let (c, inv_alpha) = unsafe { (*coef.add(2 * m), (*coef.add(2 * m + 1)).re()) };
    unsafe { gs_update_columns(n, k, ld, c, inv_alpha, coef, coef.add(m), w, basis) };
}

/// MGS step `k` of the cycle in `state` ([`cycle`]), on one thread: `h[i]`, `i <= k`,
/// are the projections of the step, `h[k + 1]` the squared norm of what is left.
/// Launch one block; `staged`: as `on_cycle_state`.
#[kernel(args = GmresMgsStep)]
pub unsafe fn gmres_mgs_step<T: Scalar>(k: usize, staged: usize, h: *const T, state: *mut f64) {
    unsafe {
        on_cycle_state(state, staged, |st| {
            let w2 = (*h.add(k + 1)).re().to_f64();
            cycle::mgs_step(st, k, |i| cycle::from_scalar(*h.add(i)), w2);
        })
    };
}

/// `z <- sum_{j < k} coef_j V_j` (the solution update `V y`; column `j` at
/// `basis + j ld`).
#[kernel(args = BasisCombine)]
pub unsafe fn basis_combine<T: Scalar>(
    n: usize,
    k: usize,
    basis: *const T,
    ld: usize,
    coef: *const T,
    z: *mut T,
) {
    unsafe { combine_columns(n, k, basis, ld, coef, z) };
}

/// The body of both combine kernels: `z <- sum_{j < k} coef_j V_j`, columns widened.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn combine_columns<T: Scalar, B: BasisScalar<T>>(
    n: usize,
    k: usize,
    basis: *const B,
    ld: usize,
    coef: *const T,
    z: *mut T,
) {
    for_each_index(n, |i| {
        let mut s = T::ZERO;
        for j in 0..k {
            s = basis_term(s, unsafe { *coef.add(j) }, unsafe {
                (*basis.add(j * ld + i)).widen()
            });
        }
        unsafe { *z.add(i) = s };
    });
}

/// [`basis_combine`] over a compressed basis ([`BasisScalar`]): columns widened, sums
/// in `T`.
#[kernel(args = BasisCombineCb)]
pub unsafe fn basis_combine_cb<B: BasisScalar<T>, T: Scalar>(
    n: usize,
    k: usize,
    basis: *const B,
    ld: usize,
    coef: *const T,
    z: *mut T,
) {
    unsafe { combine_columns(n, k, basis, ld, coef, z) };
}

/// `y <- x` widened: a compressed basis vector as the operator's input.
#[kernel(args = BasisWiden)]
pub unsafe fn basis_widen<B: BasisScalar<T>, T: Scalar>(n: usize, x: *const B, y: *mut T) {
    for_each_index(n, |i| unsafe { *y.add(i) = (*x.add(i)).widen() });
}

/// `y <- x` rounded to the single-precision type: the residual as a compressed basis's
/// first column, and the single-precision copy of block-Jacobi factors.
#[kernel(args = BasisNarrow)]
pub unsafe fn basis_narrow<B: BasisScalar<T>, T: Scalar>(n: usize, x: *const T, y: *mut B) {
    for_each_index(n, |i| unsafe { *y.add(i) = B::narrow(*x.add(i)) });
}

/// Dynamic shared memory (in `f64`) of [`gmres_solution_coefficients`] for restart
/// length `m`: `y` as `f64` pairs (`2 m`), then room to stage the state.
pub const fn solution_scratch_len(m: usize) -> usize {
    2 * m + cycle::state_len(m)
}

/// The solution update of the ended cycle at `state` ([`cycle`]), on the device:
/// `coef[j] = y_j` (as `T`, [`cycle::to_scalar`]) for `j < steps`, `y` by the host's
/// back substitution ([`cycle::solve`]) with one thread per row: column `j` is
/// eliminated from every `y_i`, `i < j`, in parallel, and the thread of row `j - 1`
/// finishes it ([`cycle::solve_pivot`]) in the same pass; one barrier per column. Each
/// `y_i` meets the host's operations in the host's order: the same bits. Launch one
/// block with `staged` f64 of dynamic shared memory: at least `2 m`; where at least
/// [`solution_scratch_len`], the block stages the state there first (the substitution
/// then reads `R` from shared memory, not global).
#[kernel(args = GmresSolutionCoefficients)]
pub unsafe fn gmres_solution_coefficients<T: Scalar>(
    staged: usize,
    state: *const f64,
    coef: *mut T,
) {
    let m = unsafe { *state.add(cycle::Header::M) } as usize;
    let len = cycle::state_len(m);
    let y = dynamic_shared::<f64>();
    let st = if staged >= solution_scratch_len(m) {
        let s = unsafe { y.add(2 * m) };
        unsafe { copy_in_block(s, state, len) };
        sync_threads();
        s as *const f64
    } else {
        state
    };
    // SAFETY: the host sized `state` for its restart length; `y` has 2 m >= 2 steps f64,
    // and row i is written by thread i mod blockDim only, between barriers.
    let st = unsafe { core::slice::from_raw_parts(st, len) };
    let k = cycle::steps(st);
    let y = y as *mut cycle::C;
    let (t, threads) = (thread_idx(), block_dim());
    for_each_block_index(k, |i| unsafe {
        let s = cycle::solve_rhs(st, i);
        *y.add(i) = if i + 1 == k {
            cycle::solve_pivot(st, i, s)
        } else {
            s
        };
    });
    sync_threads();
    for j in (1..k).rev() {
        let yj = unsafe { *y.add(j) };
        let mut i = t;
        while i < j {
            let s = cycle::solve_eliminate(st, j, i, unsafe { *y.add(i) }, yj);
            // Row j - 1 has now met every later column: finish it for the next pass.
            let s = if i + 1 == j {
                cycle::solve_pivot(st, i, s)
            } else {
                s
            };
            unsafe { *y.add(i) = s };
            i += threads;
        }
        sync_threads();
    }
    for_each_block_index(k, |j| unsafe { *coef.add(j) = cycle::to_scalar(*y.add(j)) });
}

/// `x <- x + sum_{j < steps} coef_j V_j` with `steps` read from the ended cycle at
/// `state`, nothing without steps: what `basis_combine` and `axpy` compute from the
/// host's coefficients, in one pass ([`gmres_solution_coefficients`] writes `coef`).
#[kernel(args = GmresSolutionUpdate)]
pub unsafe fn gmres_solution_update<T: Scalar>(
    n: usize,
    ld: usize,
    state: *const f64,
    basis: *const T,
    coef: *const T,
    x: *mut T,
) {
    let k = unsafe { *state.add(cycle::Header::STEPS) } as usize;
    if k == 0 {
        return;
    }
    for_each_index(n, |i| {
        let mut s = T::ZERO;
        for j in 0..k {
            s = basis_term(s, unsafe { *coef.add(j) }, unsafe {
                *basis.add(j * ld + i)
            });
        }
        unsafe { *x.add(i) = crate::blas1::axpy(T::ONE, s, *x.add(i)) };
    });
}

/// The scalars of [`gmres_pipe_pass`].
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PipeScalars<T: Scalar> {
    /// Rows of the basis vectors.
    pub n: usize,
    /// The step: the pass leaves the dots of `Z_k`.
    pub k: usize,
    /// Elements between the starts of two columns (of `V` and of `Z`).
    pub ld: usize,
    /// [`PIPE_DOTS`], [`PIPE_UPDATE`] or [`PIPE_LAST`].
    pub mode: usize,
    /// The factor of the update (read where `mode` updates).
    pub inv_alpha: T::Real,
}

/// [`gmres_pipe_pass`]: `V_k` and `Z_k` are there; the dots only.
pub const PIPE_DOTS: usize = 0;
/// [`gmres_pipe_pass`]: `V_k` and `Z_k` from step `k - 1`, then the dots.
pub const PIPE_UPDATE: usize = 1;
/// [`gmres_pipe_pass`]: the cycle's last pass: `V_k` alone and its squared norm.
pub const PIPE_LAST: usize = 2;

/// Threads per block of [`gmres_pipe_pass`]: at its register count, blocks of 128 fit
/// more warps on an SM than blocks of 256 (20 against 16 on sm_90), and its loads wait.
pub const PIPE_THREADS: usize = 128;

/// Dots (sets) of a [`gmres_pipe_pass`] at step `k`: `V_j^H Z_k` (`j <= k`), `|Z_k|^2`,
/// `|V_k|^2`.
pub const fn pipe_sets(k: usize) -> usize {
    k + 3
}

/// Dynamic shared memory of a [`gmres_pipe_pass`] block of `threads` threads at step
/// `k`, in bytes: one accumulator per dot and warp.
pub const fn pipe_shared_bytes(k: usize, threads: usize, elem: usize) -> usize {
    pipe_sets(k) * (threads / 32) * elem
}

/// Pipelined GMRES (p(1)-GMRES, Ghysels et al. 2013): one pass over the bases `V` and
/// `Z = A M^{-1} V` (column `j` at `basis + j ld`, `zbasis + j ld`; stored unnormalised,
/// the host keeps their scales) per step `k`. With [`PIPE_UPDATE`] it first makes the
/// step's vectors from step `k - 1` ([`pipe_update`]: coefficients `h[j]`, `j < k`, `q =
/// A M^{-1} Z_{k-1}`); then it takes the dots the host needs: `V_j^H Z_k` (set `j <= k`),
/// `Z_k^H Z_k` (set `k + 1`) and `V_k^H V_k` (set `k + 2`, the new vector's measured
/// norm), partial per block: `partials[set * grid + block]`. [`PIPE_LAST`] makes `V_k`
/// alone and its norm (the other sets are zero). The columns `V_j`, `j < k`, are read a
/// second time for the dots right after the update read them (from L2 where the grid is
/// small, as the host launches it). Needs [`pipe_shared_bytes`] of dynamic shared
/// memory.
#[kernel(args = GmresPipePass)]
pub unsafe fn gmres_pipe_pass<T: Scalar>(
    p: PipeScalars<T>,
    h: *const T,
    q: *const T,
    basis: *mut T,
    zbasis: *mut T,
    partials: *mut T,
) {
    let PipeScalars {
        n,
        k,
        ld,
        mode,
        inv_alpha,
    } = p;
    let sets = pipe_sets(k);
    let warps = block_dim() / WARP_SIZE;
    let acc = dynamic_shared::<T>();
    let mut s = thread_idx();
    while s < sets * warps {
        unsafe { *acc.add(s) = T::ZERO };
        s += block_dim();
    }
    sync_threads();
    let stride = grid_dim() * block_dim();
    // A trip count the same for the whole warp: every lane reaches every warp sum.
    let mut base = block_idx() * block_dim();
    while base < n {
        let i = base + thread_idx();
        let live = i < n;
        let (vk, zk) = if !live {
            (T::ZERO, T::ZERO)
        } else if mode == PIPE_DOTS {
            unsafe { (*basis.add(k * ld + i), *zbasis.add(k * ld + i)) }
        } else {
            let with_z = mode == PIPE_UPDATE;
            let (sv, sz) = unsafe { pipe_sums(k, h, basis, zbasis, ld, i, with_z) };
            let qi = if with_z {
                unsafe { *q.add(i) }
            } else {
                T::ZERO
            };
            let zprev = unsafe { *zbasis.add((k - 1) * ld + i) };
            let (vk, zk) = pipe_update(zprev, qi, sv, sz, inv_alpha);
            unsafe { *basis.add(k * ld + i) = vk };
            if with_z {
                unsafe { *zbasis.add(k * ld + i) = zk };
            }
            (vk, zk)
        };
        if mode != PIPE_LAST {
            // The products of a chunk of columns summed over the warp together (their
            // shuffles independent of each other); the accumulators stay in shared
            // memory, one per dot and warp, whatever the restart length.
            let mut j = 0;
            while j < k {
                let mut prod = [T::ZERO; DOTS_CHUNK];
                for (c, pc) in prod.iter_mut().enumerate() {
                    let v = if live && j + c < k {
                        unsafe { *basis.add((j + c) * ld + i) }
                    } else {
                        T::ZERO
                    };
                    *pc = dot_step(T::ZERO, v, zk);
                }
                // Lane 4 c holds column j + c's sum.
                let sum = warp_sum8(prod);
                let c = (lane() >> 2) & 7;
                if lane() & 3 == 0 && j + c < k {
                    unsafe {
                        let a = acc.add((j + c) * warps + warp());
                        *a = *a + sum;
                    }
                }
                j += DOTS_CHUNK;
            }
            unsafe {
                pipe_accumulate(acc, k * warps, vk, zk);
                pipe_accumulate(acc, (k + 1) * warps, zk, zk);
            }
        }
        unsafe { pipe_accumulate(acc, (k + 2) * warps, vk, vk) };
        base += stride;
    }
    sync_threads();
    // Warp w sums sets w, w + warps, ... over the warps, in warp order.
    let mut set = warp();
    while set < sets {
        let v = if lane() < warps {
            unsafe { *acc.add(set * warps + lane()) }
        } else {
            T::ZERO
        };
        let t = warp_sum(v);
        if lane() == 0 {
            unsafe { *partials.add(set * grid_dim() + block_idx()) = t };
        }
        set += warps;
    }
}

/// Adds the warp's sum of `conj(x) y` to its accumulator of the set starting at `at`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn pipe_accumulate<T: Scalar>(acc: *mut T, at: usize, x: T, y: T) {
    let t = warp_sum(dot_step(T::ZERO, x, y));
    if lane() == 0 {
        unsafe {
            let a = acc.add(at + warp());
            *a = *a + t;
        }
    }
}

/// Row `i` of the pipelined update's sums `(sum_j h_j V_j, sum_j h_j Z_j)`, `j < k`, in
/// basis order ([`basis_term`]), [`DOTS_CHUNK`] columns' loads before their sums; the
/// second zero unless `with_z`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn pipe_sums<T: Scalar>(
    k: usize,
    h: *const T,
    basis: *const T,
    zbasis: *const T,
    ld: usize,
    i: usize,
    with_z: bool,
) -> (T, T) {
    let (mut sv, mut sz) = (T::ZERO, T::ZERO);
    let mut j = 0;
    while j < k {
        let mut v = [T::ZERO; DOTS_CHUNK];
        let mut z = [T::ZERO; DOTS_CHUNK];
        for c in 0..DOTS_CHUNK {
            if j + c < k {
                let at = (j + c) * ld + i;
                v[c] = unsafe { *basis.add(at) };
                if with_z {
                    z[c] = unsafe { *zbasis.add(at) };
                }
            }
        }
        for c in 0..DOTS_CHUNK {
            if j + c < k {
                let hj = unsafe { *h.add(j + c) };
                sv = basis_term(sv, hj, v[c]);
                sz = basis_term(sz, hj, z[c]);
            }
        }
        j += DOTS_CHUNK;
    }
    (sv, sz)
}

/// MGS: `w <- w - h[j] x` with `h[j]` read on the device (no host round trip).
#[kernel(args = MgsEliminate)]
pub unsafe fn mgs_eliminate<T: Scalar>(n: usize, h: *const T, j: usize, x: *const T, w: *mut T) {
    let hj = unsafe { *h.add(j) };
    for_each_index(n, |i| unsafe {
        *w.add(i) = eliminate(*w.add(i), hj, *x.add(i))
    });
}

/// MGS: `y <- x / sqrt(re h[j])` (`x` where that is zero), `h[j] = ||x||^2` read on
/// the device (no host round trip).
#[kernel(args = MgsNormalize)]
pub unsafe fn mgs_normalize<T: Scalar>(n: usize, h: *const T, j: usize, x: *const T, y: *mut T) {
    let nr = unsafe { (*h.add(j)).re() }.sqrt();
    for_each_index(n, |i| unsafe { *y.add(i) = normalize(*x.add(i), nr) });
}

/// The GMRES vector kernels of one scalar type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait KrylovKernels: Scalar {
    /// `gs_dots_partial_<t>`
    const GS_DOTS_PARTIAL: Kernel<GsDotsPartial<'static, Self>>;
    /// `gs_update_<t>`
    const GS_UPDATE: Kernel<GsUpdate<'static, Self>>;
    /// `basis_combine_<t>`
    const BASIS_COMBINE: Kernel<BasisCombine<'static, Self>>;
    /// `mgs_eliminate_<t>`
    const MGS_ELIMINATE: Kernel<MgsEliminate<'static, Self>>;
    /// `mgs_normalize_<t>`
    const MGS_NORMALIZE: Kernel<MgsNormalize<'static, Self>>;
    /// `gmres_dcgs2_step_<t>`
    const GMRES_DCGS2_STEP: Kernel<GmresDcgs2Step<'static, Self>>;
    /// `gs_update_device_<t>`
    const GS_UPDATE_DEVICE: Kernel<GsUpdateDevice<'static, Self>>;
    /// `gmres_mgs_step_<t>`
    const GMRES_MGS_STEP: Kernel<GmresMgsStep<'static, Self>>;
    /// `gmres_solution_coefficients_<t>`
    const GMRES_SOLUTION_COEFFICIENTS: Kernel<GmresSolutionCoefficients<'static, Self>>;
    /// `gmres_solution_update_<t>`
    const GMRES_SOLUTION_UPDATE: Kernel<GmresSolutionUpdate<'static, Self>>;
    /// `gmres_pipe_pass_<t>`
    const GMRES_PIPE_PASS: Kernel<GmresPipePass<'static, Self>>;
}

/// The entry points of one scalar type; the names are those the notes, results and
/// `scripts/ptx-check` refer to.
macro_rules! krylov_instances {
    ($t:ty, $sfx:literal) => {
        instances! {
            impl KrylovKernels for $t {
                GS_DOTS_PARTIAL = gs_dots_partial::<$t>(concat!("gs_dots_partial_", $sfx));
                GS_UPDATE = gs_update_kernel::<$t>(concat!("gs_update_", $sfx));
                BASIS_COMBINE = basis_combine::<$t>(concat!("basis_combine_", $sfx));
                MGS_ELIMINATE = mgs_eliminate::<$t>(concat!("mgs_eliminate_", $sfx));
                MGS_NORMALIZE = mgs_normalize::<$t>(concat!("mgs_normalize_", $sfx));
                GMRES_DCGS2_STEP = gmres_dcgs2_step::<$t>(concat!("gmres_dcgs2_step_", $sfx));
                GS_UPDATE_DEVICE = gs_update_device::<$t>(concat!("gs_update_device_", $sfx));
                GMRES_MGS_STEP = gmres_mgs_step::<$t>(concat!("gmres_mgs_step_", $sfx));
                GMRES_SOLUTION_COEFFICIENTS = gmres_solution_coefficients::<$t>(
                    concat!("gmres_solution_coefficients_", $sfx)
                );
                GMRES_SOLUTION_UPDATE = gmres_solution_update::<$t>(concat!("gmres_solution_update_", $sfx));
                GMRES_PIPE_PASS = gmres_pipe_pass::<$t>(concat!("gmres_pipe_pass_", $sfx));
            }
        }
    };
}

/// The GMRES kernels over a compressed basis of `Self` for vectors of `V` (CB-GMRES).
#[cfg(not(target_arch = "nvptx64"))]
pub trait CompressedBasisKernels<V: Scalar>: BasisScalar<V> {
    /// `gs_dots_partial_<b>_<v>`
    const GS_DOTS_PARTIAL_CB: Kernel<GsDotsPartialCb<'static, Self, V>>;
    /// `gs_update_<b>_<v>`
    const GS_UPDATE_CB: Kernel<GsUpdateCb<'static, Self, V>>;
    /// `basis_combine_<b>_<v>`
    const BASIS_COMBINE_CB: Kernel<BasisCombineCb<'static, Self, V>>;
    /// `basis_widen_<b>_<v>`
    const BASIS_WIDEN: Kernel<BasisWiden<'static, Self, V>>;
    /// `basis_narrow_<b>_<v>`
    const BASIS_NARROW: Kernel<BasisNarrow<'static, Self, V>>;
}

/// The compressed-basis entry points of one (basis, vector) pair.
macro_rules! compressed_basis_instances {
    ($b:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl CompressedBasisKernels<$v> for $b {
                GS_DOTS_PARTIAL_CB = gs_dots_partial_cb::<$b, $v>(concat!("gs_dots_partial_", $sfx));
                GS_UPDATE_CB = gs_update_cb::<$b, $v>(concat!("gs_update_", $sfx));
                BASIS_COMBINE_CB = basis_combine_cb::<$b, $v>(concat!("basis_combine_", $sfx));
                BASIS_WIDEN = basis_widen::<$b, $v>(concat!("basis_widen_", $sfx));
                BASIS_NARROW = basis_narrow::<$b, $v>(concat!("basis_narrow_", $sfx));
            }
        }
    };
}

// f32 and c32 store themselves: their pairs exist for generic code, and a solve in
// single precision uses the plain kernels.
compressed_basis_instances!(f32, f64, "f32_f64");
compressed_basis_instances!(
    num_complex::Complex<f32>,
    num_complex::Complex<f64>,
    "c32_c64"
);
compressed_basis_instances!(f32, f32, "f32_f32");
compressed_basis_instances!(
    num_complex::Complex<f32>,
    num_complex::Complex<f32>,
    "c32_c32"
);

krylov_instances!(f32, "f32");
krylov_instances!(f64, "f64");
krylov_instances!(num_complex::Complex<f32>, "c32");
krylov_instances!(num_complex::Complex<f64>, "c64");
