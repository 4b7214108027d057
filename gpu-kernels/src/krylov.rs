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

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::blas1::dot_step;
    use crate::device::{
        WARP_SIZE, block_dim, block_idx, dynamic_shared, global_index, grid_dim, grid_stride, lane,
        sync_threads, thread_idx, warp, warp_sum,
    };

    /// Stage one of the delayed-CGS2 dots: `V_j^H u` (set `j`) and `V_j^H w` (set
    /// `k1 + j`) for basis columns `j < k1` (column `j` at `basis + j ld`). The grid is
    /// `element_blocks * groups` blocks with the group fastest, so the blocks reading one
    /// range of `u` and `w` for different groups of columns run together and share it in
    /// L2. Partial of set `s`, element block `e`: `partials[s * element_blocks + e]`.
    /// Needs `2 DOTS_CHUNK block_dim / 32 size_of::<T>()` bytes of dynamic shared memory.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gs_dots_partial<T: Scalar>(
        n: usize,
        k1: usize,
        u: *const T,
        w: *const T,
        basis: *const T,
        ld: usize,
        partials: *mut T,
    ) {
        let groups = k1.div_ceil(DOTS_CHUNK);
        let (e, g) = (block_idx() / groups, block_idx() % groups);
        let element_blocks = grid_dim() / groups;
        let first = g * DOTS_CHUNK;
        let count = if k1 - first < DOTS_CHUNK {
            k1 - first
        } else {
            DOTS_CHUNK
        };
        let stride = element_blocks * block_dim();
        let mut au = [T::ZERO; DOTS_CHUNK];
        let mut aw = [T::ZERO; DOTS_CHUNK];
        let mut i = e * block_dim() + thread_idx();
        while i < n {
            let (ui, wi) = unsafe { (*u.add(i), *w.add(i)) };
            for j in 0..DOTS_CHUNK {
                if j < count {
                    let v = unsafe { *basis.add((first + j) * ld + i) };
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
    }

    /// The delayed-CGS2 update over columns `j < k` with coefficients `a`, `b` (device):
    /// `V_k <- (V_k - sum a_j V_j) / alpha`, `V_{k+1} <- (w - c V_k - sum b_j V_j) / alpha`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gs_update_kernel<T: Scalar>(
        n: usize,
        k: usize,
        basis: *mut T,
        ld: usize,
        a: *const T,
        b: *const T,
        c: T,
        inv_alpha: T::Real,
        w: *const T,
    ) {
        let stride = grid_stride();
        let mut i = global_index();
        while i < n {
            let (mut sa, mut sb) = (T::ZERO, T::ZERO);
            for j in 0..k {
                let v = unsafe { *basis.add(j * ld + i) };
                sa = basis_term(sa, unsafe { *a.add(j) }, v);
                sb = basis_term(sb, unsafe { *b.add(j) }, v);
            }
            let u = unsafe { *basis.add(k * ld + i) };
            let (q, next) = gs_update(u, unsafe { *w.add(i) }, sa, sb, c, inv_alpha);
            unsafe {
                *basis.add(k * ld + i) = q;
                *basis.add((k + 1) * ld + i) = next;
            }
            i += stride;
        }
    }

    /// `z <- sum_{j < k} coef_j V_j` (the solution update `V y`).
    #[inline(always)]
    pub unsafe fn combine<T: Scalar>(
        n: usize,
        k: usize,
        basis: *const T,
        ld: usize,
        coef: *const T,
        z: *mut T,
    ) {
        let stride = grid_stride();
        let mut i = global_index();
        while i < n {
            let mut s = T::ZERO;
            for j in 0..k {
                s = basis_term(s, unsafe { *coef.add(j) }, unsafe {
                    *basis.add(j * ld + i)
                });
            }
            unsafe { *z.add(i) = s };
            i += stride;
        }
    }

    /// MGS: `w <- w - h[j] x` with `h[j]` read on the device (no host round trip).
    #[inline(always)]
    pub unsafe fn eliminate_kernel<T: Scalar>(
        n: usize,
        h: *const T,
        j: usize,
        x: *const T,
        w: *mut T,
    ) {
        let hj = unsafe { *h.add(j) };
        let stride = grid_stride();
        let mut i = global_index();
        while i < n {
            unsafe { *w.add(i) = eliminate(*w.add(i), hj, *x.add(i)) };
            i += stride;
        }
    }

    /// MGS: `y <- x / sqrt(re h[j])` (`x` where that is zero), `h[j] = ||x||^2` read on
    /// the device (no host round trip).
    #[inline(always)]
    pub unsafe fn normalize_kernel<T: Scalar>(
        n: usize,
        h: *const T,
        j: usize,
        x: *const T,
        y: *mut T,
    ) {
        let nr = unsafe { (*h.add(j)).re() }.sqrt();
        let stride = grid_stride();
        let mut i = global_index();
        while i < n {
            unsafe { *y.add(i) = normalize(*x.add(i), nr) };
            i += stride;
        }
    }

    macro_rules! krylov_entries {
        ($m:ident, $t:ty, $sfx:literal, $real:ty) => {
            mod $m {
                use super::*;
                #[allow(unused_imports)]
                use num_complex::Complex;

                #[unsafe(export_name = concat!("gs_dots_partial_", $sfx))]
                #[allow(clippy::too_many_arguments)]
                pub unsafe extern "ptx-kernel" fn dots(
                    n: usize,
                    k1: usize,
                    u: *const $t,
                    w: *const $t,
                    basis: *const $t,
                    ld: usize,
                    partials: *mut $t,
                ) {
                    unsafe { gs_dots_partial(n, k1, u, w, basis, ld, partials) }
                }
                #[unsafe(export_name = concat!("gs_update_", $sfx))]
                #[allow(clippy::too_many_arguments)]
                pub unsafe extern "ptx-kernel" fn update(
                    n: usize,
                    k: usize,
                    basis: *mut $t,
                    ld: usize,
                    a: *const $t,
                    b: *const $t,
                    c: $t,
                    inv_alpha: $real,
                    w: *const $t,
                ) {
                    unsafe { gs_update_kernel(n, k, basis, ld, a, b, c, inv_alpha, w) }
                }
                #[unsafe(export_name = concat!("basis_combine_", $sfx))]
                pub unsafe extern "ptx-kernel" fn combine_entry(
                    n: usize,
                    k: usize,
                    basis: *const $t,
                    ld: usize,
                    coef: *const $t,
                    z: *mut $t,
                ) {
                    unsafe { combine(n, k, basis, ld, coef, z) }
                }
                #[unsafe(export_name = concat!("mgs_eliminate_", $sfx))]
                pub unsafe extern "ptx-kernel" fn eliminate_entry(
                    n: usize,
                    h: *const $t,
                    j: usize,
                    x: *const $t,
                    w: *mut $t,
                ) {
                    unsafe { eliminate_kernel(n, h, j, x, w) }
                }
                #[unsafe(export_name = concat!("mgs_normalize_", $sfx))]
                pub unsafe extern "ptx-kernel" fn normalize_entry(
                    n: usize,
                    h: *const $t,
                    j: usize,
                    x: *const $t,
                    y: *mut $t,
                ) {
                    unsafe { normalize_kernel(n, h, j, x, y) }
                }
            }
        };
    }
    krylov_entries!(entries_f32, f32, "f32", f32);
    krylov_entries!(entries_f64, f64, "f64", f64);
    krylov_entries!(entries_c32, Complex<f32>, "c32", f32);
    krylov_entries!(entries_c64, Complex<f64>, "c64", f64);
    #[allow(unused_imports)]
    use num_complex::Complex;
}
