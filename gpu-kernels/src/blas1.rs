//! BLAS level 1: the per-element math and, on the device, the kernels.
//!
//! Conventions (written down once): `dot(x, y) = sum conj(x_i) * y_i` (BLAS `dotc`),
//! `nrm2(x) = sqrt(sum |x_i|^2)` accumulated in the real type without scaling (so
//! `f32` overflows for |x_i| above about 1e19), `axpy: y <- alpha x + y`,
//! `axpby: y <- alpha x + beta y`, `scal: x <- alpha x`.
//!
//! Reductions are two-stage and deterministic: stage one gives each block a fixed
//! slice of the grid-stride loop and reduces it in a fixed tree order into one partial;
//! stage two reduces the partials in a fixed order. The number of partials depends on
//! `n` alone ([`reduction_blocks`]), so the same input gives the same bits on the same
//! device, run after run.

use crate::scalar::Scalar;

/// Threads per block of the BLAS-1 kernels (a multiple of 32, at most 1024).
pub const BLOCK: usize = 256;
/// Largest number of stage-one partials of a reduction.
pub const MAX_PARTIALS: usize = 1024;
/// Elements each thread reduces before the grid grows (keeps loads in flight).
pub const ELEMENTS_PER_THREAD: usize = 8;
/// Vectors one multi-dot block handles at once (accumulators held in registers).
pub const MULTI_DOT_CHUNK: usize = 8;

/// Number of stage-one blocks (= partials) for a reduction over `n` elements: a function
/// of `n` only, which is what makes the reductions deterministic.
#[inline]
pub const fn reduction_blocks(n: usize) -> usize {
    let wanted = n.div_ceil(BLOCK * ELEMENTS_PER_THREAD);
    if wanted == 0 {
        1
    } else if wanted > MAX_PARTIALS {
        MAX_PARTIALS
    } else {
        wanted
    }
}

/// `alpha * x + y`.
#[inline(always)]
pub fn axpy<T: Scalar>(alpha: T, x: T, y: T) -> T {
    alpha.mul_add(x, y)
}

/// `alpha * x + beta * y`.
#[inline(always)]
pub fn axpby<T: Scalar>(alpha: T, x: T, beta: T, y: T) -> T {
    alpha.mul_add(x, beta * y)
}

/// `alpha * x`.
#[inline(always)]
pub fn scal<T: Scalar>(alpha: T, x: T) -> T {
    alpha * x
}

/// One step of a dot product: `acc + conj(x) * y`.
#[inline(always)]
pub fn dot_step<T: Scalar>(acc: T, x: T, y: T) -> T {
    x.conj().mul_add(y, acc)
}

/// One step of a squared norm: `acc + |x|^2`.
#[inline(always)]
pub fn nrm2_step<T: Scalar>(acc: T::Real, x: T) -> T::Real {
    x.abs2_add(acc)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    //! Generic kernel bodies; the `extern "ptx-kernel"` entry points below instantiate
    //! them per scalar type.
    use super::*;
    use crate::device::{
        WARP_SIZE, block_dim, block_idx, block_idx_y, block_sum, dynamic_shared, global_index,
        grid_stride, lane, sync_threads, thread_idx, warp, warp_sum,
    };
    use crate::scalar::RealScalar;

    #[inline(always)]
    pub unsafe fn fill<T: Scalar>(n: usize, value: T, x: *mut T) {
        let mut i = global_index();
        while i < n {
            unsafe { *x.add(i) = value };
            i += grid_stride();
        }
    }

    #[inline(always)]
    pub unsafe fn scal<T: Scalar>(n: usize, alpha: T, x: *mut T) {
        let mut i = global_index();
        while i < n {
            unsafe { *x.add(i) = super::scal(alpha, *x.add(i)) };
            i += grid_stride();
        }
    }

    #[inline(always)]
    pub unsafe fn axpy<T: Scalar>(n: usize, alpha: T, x: *const T, y: *mut T) {
        let mut i = global_index();
        while i < n {
            unsafe { *y.add(i) = super::axpy(alpha, *x.add(i), *y.add(i)) };
            i += grid_stride();
        }
    }

    #[inline(always)]
    pub unsafe fn axpby<T: Scalar>(n: usize, alpha: T, x: *const T, beta: T, y: *mut T) {
        let mut i = global_index();
        while i < n {
            unsafe { *y.add(i) = super::axpby(alpha, *x.add(i), beta, *y.add(i)) };
            i += grid_stride();
        }
    }

    #[inline(always)]
    pub unsafe fn copy<T: Scalar>(n: usize, x: *const T, y: *mut T) {
        let mut i = global_index();
        while i < n {
            unsafe { *y.add(i) = *x.add(i) };
            i += grid_stride();
        }
    }

    /// Stage one of `dot`: four independent accumulators keep four loads per operand
    /// in flight; their order is fixed, so the result stays deterministic.
    #[inline(always)]
    pub unsafe fn dot_partial<T: Scalar>(n: usize, x: *const T, y: *const T, partials: *mut T) {
        let stride = grid_stride();
        let mut i = global_index();
        let mut acc = [T::ZERO; 4];
        while i + 3 * stride < n {
            for (u, a) in acc.iter_mut().enumerate() {
                let j = i + u * stride;
                *a = unsafe { dot_step(*a, *x.add(j), *y.add(j)) };
            }
            i += 4 * stride;
        }
        while i < n {
            acc[0] = unsafe { dot_step(acc[0], *x.add(i), *y.add(i)) };
            i += stride;
        }
        let total = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
        if thread_idx() == 0 {
            unsafe { *partials.add(block_idx()) = total };
        }
    }

    /// Stage one of `nrm2`: partial sums of `|x_i|^2` in the real type.
    #[inline(always)]
    pub unsafe fn nrm2_partial<T: Scalar>(n: usize, x: *const T, partials: *mut T::Real) {
        let stride = grid_stride();
        let mut i = global_index();
        let mut acc = [<T::Real as Scalar>::ZERO; 4];
        while i + 3 * stride < n {
            for (u, a) in acc.iter_mut().enumerate() {
                *a = unsafe { nrm2_step(*a, *x.add(i + u * stride)) };
            }
            i += 4 * stride;
        }
        while i < n {
            acc[0] = unsafe { nrm2_step(acc[0], *x.add(i)) };
            i += stride;
        }
        let total = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
        if thread_idx() == 0 {
            unsafe { *partials.add(block_idx()) = total };
        }
    }

    /// Stage one of `multi_dot`: block row `block_idx_y` handles vectors
    /// `[y * CHUNK, y * CHUNK + CHUNK)` of `ys` (column `j` starts at `j * ld`), reading
    /// `x` once for all of them. Partial of vector `j`, block `b`: `partials[j * grid + b]`.
    /// Needs `MULTI_DOT_CHUNK * block_dim / 32 * size_of::<T>()` bytes of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn multi_dot_partial<T: Scalar>(
        n: usize,
        k: usize,
        x: *const T,
        ys: *const T,
        ld: usize,
        partials: *mut T,
    ) {
        let first = block_idx_y() * MULTI_DOT_CHUNK;
        let count = if k - first < MULTI_DOT_CHUNK {
            k - first
        } else {
            MULTI_DOT_CHUNK
        };
        let stride = grid_stride();
        let mut acc = [T::ZERO; MULTI_DOT_CHUNK];
        let mut i = global_index();
        while i < n {
            let xi = unsafe { *x.add(i) };
            for (j, a) in acc.iter_mut().enumerate() {
                if j < count {
                    *a = unsafe { dot_step(*a, xi, *ys.add((first + j) * ld + i)) };
                }
            }
            i += stride;
        }
        // Reduce all accumulators with constant indices only (a run-time index would
        // put `acc` in local memory): warp sums to shared memory, one barrier, then
        // warp `w` finishes vectors w, w + warps, ...
        let shared = dynamic_shared::<T>();
        let warps = block_dim() / WARP_SIZE;
        for (j, a) in acc.iter().enumerate() {
            let s = warp_sum(*a);
            if lane() == 0 && j < count {
                unsafe { *shared.add(j * warps + warp()) = s };
            }
        }
        sync_threads();
        let blocks = stride / block_dim();
        let mut j = warp();
        while j < count {
            let v = if lane() < warps {
                unsafe { *shared.add(j * warps + lane()) }
            } else {
                T::ZERO
            };
            let total = warp_sum(v);
            if lane() == 0 {
                unsafe { *partials.add((first + j) * blocks + block_idx()) = total };
            }
            j += warps;
        }
    }

    /// Stage two: block `s` sums `partials[s * count .. (s + 1) * count]` into `out[s]`.
    #[inline(always)]
    pub unsafe fn sum_partials<T: Scalar>(count: usize, partials: *const T) -> T {
        let set = block_idx();
        let mut acc = T::ZERO;
        let mut i = thread_idx();
        while i < count {
            acc = acc + unsafe { *partials.add(set * count + i) };
            i += block_dim();
        }
        block_sum(acc)
    }

    #[inline(always)]
    pub unsafe fn sum_partials_into<T: Scalar>(count: usize, partials: *const T, out: *mut T) {
        let total = unsafe { sum_partials(count, partials) };
        if thread_idx() == 0 {
            unsafe { *out.add(block_idx()) = total };
        }
    }

    #[inline(always)]
    pub unsafe fn sqrt_sum_partials_into<R: RealScalar>(
        count: usize,
        partials: *const R,
        out: *mut R,
    ) {
        let total = unsafe { sum_partials(count, partials) };
        if thread_idx() == 0 {
            unsafe { *out.add(block_idx()) = total.sqrt() };
        }
    }
}

/// Instantiates the BLAS-1 entry points of one scalar type. The exported names are the
/// ones [`crate::names::Blas1Names`] lists for that type.
#[cfg(target_arch = "nvptx64")]
macro_rules! blas1_entries {
    ($module:ident, $t:ty, $sfx:literal, $real:ty) => {
        mod $module {
            use super::kernels;
            #[allow(unused_imports)]
            use num_complex::Complex;

            #[unsafe(export_name = concat!("fill_", $sfx))]
            pub unsafe extern "ptx-kernel" fn fill(n: usize, value: $t, x: *mut $t) {
                unsafe { kernels::fill(n, value, x) }
            }
            #[unsafe(export_name = concat!("scal_", $sfx))]
            pub unsafe extern "ptx-kernel" fn scal(n: usize, alpha: $t, x: *mut $t) {
                unsafe { kernels::scal(n, alpha, x) }
            }
            #[unsafe(export_name = concat!("axpy_", $sfx))]
            pub unsafe extern "ptx-kernel" fn axpy(n: usize, alpha: $t, x: *const $t, y: *mut $t) {
                unsafe { kernels::axpy(n, alpha, x, y) }
            }
            #[unsafe(export_name = concat!("axpby_", $sfx))]
            pub unsafe extern "ptx-kernel" fn axpby(
                n: usize,
                alpha: $t,
                x: *const $t,
                beta: $t,
                y: *mut $t,
            ) {
                unsafe { kernels::axpby(n, alpha, x, beta, y) }
            }
            #[unsafe(export_name = concat!("copy_", $sfx))]
            pub unsafe extern "ptx-kernel" fn copy(n: usize, x: *const $t, y: *mut $t) {
                unsafe { kernels::copy(n, x, y) }
            }
            #[unsafe(export_name = concat!("dot_partial_", $sfx))]
            pub unsafe extern "ptx-kernel" fn dot_partial(
                n: usize,
                x: *const $t,
                y: *const $t,
                partials: *mut $t,
            ) {
                unsafe { kernels::dot_partial(n, x, y, partials) }
            }
            #[unsafe(export_name = concat!("nrm2_partial_", $sfx))]
            pub unsafe extern "ptx-kernel" fn nrm2_partial(
                n: usize,
                x: *const $t,
                partials: *mut $real,
            ) {
                unsafe { kernels::nrm2_partial(n, x, partials) }
            }
            #[unsafe(export_name = concat!("multi_dot_partial_", $sfx))]
            pub unsafe extern "ptx-kernel" fn multi_dot_partial(
                n: usize,
                k: usize,
                x: *const $t,
                ys: *const $t,
                ld: usize,
                partials: *mut $t,
            ) {
                unsafe { kernels::multi_dot_partial(n, k, x, ys, ld, partials) }
            }
            #[unsafe(export_name = concat!("sum_partials_", $sfx))]
            pub unsafe extern "ptx-kernel" fn sum_partials(
                count: usize,
                partials: *const $t,
                out: *mut $t,
            ) {
                unsafe { kernels::sum_partials_into(count, partials, out) }
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
blas1_entries!(entries_f32, f32, "f32", f32);
#[cfg(target_arch = "nvptx64")]
blas1_entries!(entries_f64, f64, "f64", f64);
#[cfg(target_arch = "nvptx64")]
blas1_entries!(entries_c32, Complex<f32>, "c32", f32);
#[cfg(target_arch = "nvptx64")]
blas1_entries!(entries_c64, Complex<f64>, "c64", f64);

#[cfg(target_arch = "nvptx64")]
mod sqrt_entries {
    use super::kernels;

    #[unsafe(export_name = "sqrt_sum_partials_f32")]
    pub unsafe extern "ptx-kernel" fn sqrt_sum_partials_f32(
        count: usize,
        partials: *const f32,
        out: *mut f32,
    ) {
        unsafe { kernels::sqrt_sum_partials_into(count, partials, out) }
    }
    #[unsafe(export_name = "sqrt_sum_partials_f64")]
    pub unsafe extern "ptx-kernel" fn sqrt_sum_partials_f64(
        count: usize,
        partials: *const f64,
        out: *mut f64,
    ) {
        unsafe { kernels::sqrt_sum_partials_into(count, partials, out) }
    }
}
