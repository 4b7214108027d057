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

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    WARP_SIZE, block_dim, block_idx, block_idx_y, block_sum, dynamic_shared, for_each_index,
    global_index, grid_stride, lane, sync_threads, thread_idx, warp, warp_sum,
};
use crate::scalar::RealScalar;
use crate::{instances, kernel};

/// `x_i <- value` for `i < n`.
#[kernel]
pub unsafe fn fill<T: Scalar>(n: usize, value: T, x: *mut T) {
    for_each_index(n, |i| unsafe { *x.add(i) = value });
}

/// `x_i <- alpha x_i` for `i < n`.
#[kernel(args = Scal)]
pub unsafe fn scal_kernel<T: Scalar>(n: usize, alpha: T, x: *mut T) {
    for_each_index(n, |i| unsafe { *x.add(i) = scal(alpha, *x.add(i)) });
}

/// `y_i <- alpha x_i + y_i` for `i < n`.
#[kernel(args = Axpy)]
pub unsafe fn axpy_kernel<T: Scalar>(n: usize, alpha: T, x: *const T, y: *mut T) {
    for_each_index(n, |i| unsafe {
        *y.add(i) = axpy(alpha, *x.add(i), *y.add(i))
    });
}

/// `y_i <- alpha x_i + beta y_i` for `i < n`.
#[kernel(args = Axpby)]
pub unsafe fn axpby_kernel<T: Scalar>(n: usize, alpha: T, x: *const T, beta: T, y: *mut T) {
    for_each_index(n, |i| unsafe {
        *y.add(i) = axpby(alpha, *x.add(i), beta, *y.add(i))
    });
}

/// `y_i <- x_i` for `i < n`.
#[kernel(args = CopyVec)]
pub unsafe fn copy_kernel<T: Scalar>(n: usize, x: *const T, y: *mut T) {
    for_each_index(n, |i| unsafe { *y.add(i) = *x.add(i) });
}

/// Stage one of `dot`: block `b` writes its partial sum of `conj(x_i) y_i` to
/// `partials[b]`. Four independent accumulators keep four loads per operand in flight;
/// their order is fixed, so the result stays deterministic.
#[kernel]
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
#[kernel]
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
#[kernel]
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

/// The block sums `partials[set * count .. (set + 1) * count]` (thread 0 holds the
/// result): stage two of every reduction, and of the GMRES cycle kernel's dots.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn sum_partials_of<T: Scalar>(count: usize, partials: *const T, set: usize) -> T {
    let mut acc = T::ZERO;
    let mut i = thread_idx();
    while i < count {
        acc = acc + unsafe { *partials.add(set * count + i) };
        i += block_dim();
    }
    block_sum(acc)
}

/// What [`sum_partials_of`] gives for `count <= 32` partials, computed by one warp whose
/// lane `l < count` holds partial `l` (the other lanes anything): the same additions in
/// the same order (in that block, thread `t < count` adds partial `t` alone to zero, warp
/// 0's tree sums them, every other warp's sum is zero, and the tree over the warp sums
/// adds those). Lane 0 holds the result; every lane of the warp calls it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn sum_partials_in_warp<T: Scalar>(partial: T, count: usize) -> T {
    let mine = if lane() < count {
        T::ZERO + partial
    } else {
        T::ZERO
    };
    let first = warp_sum(mine);
    warp_sum(if lane() == 0 { first } else { T::ZERO })
}

/// Stage two of a reduction: block `s` writes the sum of
/// `partials[s * count .. (s + 1) * count]` to `out[s]`.
#[kernel]
pub unsafe fn sum_partials<T: Scalar>(count: usize, partials: *const T, out: *mut T) {
    let total = unsafe { sum_partials_of(count, partials, block_idx()) };
    if thread_idx() == 0 {
        unsafe { *out.add(block_idx()) = total };
    }
}

/// Stage two of `nrm2`: as [`sum_partials`], then the square root.
#[kernel]
pub unsafe fn sqrt_sum_partials<R: RealScalar>(count: usize, partials: *const R, out: *mut R) {
    let total = unsafe { sum_partials_of(count, partials, block_idx()) };
    if thread_idx() == 0 {
        unsafe { *out.add(block_idx()) = total.sqrt() };
    }
}

/// The BLAS-1 kernels of one scalar type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Blas1Kernels: Scalar<Real: RealBlas1Kernels> {
    /// `fill_<t>`
    const FILL: Kernel<Fill<'static, Self>>;
    /// `scal_<t>`
    const SCAL: Kernel<Scal<'static, Self>>;
    /// `axpy_<t>`
    const AXPY: Kernel<Axpy<'static, Self>>;
    /// `axpby_<t>`
    const AXPBY: Kernel<Axpby<'static, Self>>;
    /// `copy_<t>`
    const COPY: Kernel<CopyVec<'static, Self>>;
    /// `dot_partial_<t>`
    const DOT_PARTIAL: Kernel<DotPartial<'static, Self>>;
    /// `nrm2_partial_<t>`
    const NRM2_PARTIAL: Kernel<Nrm2Partial<'static, Self>>;
    /// `multi_dot_partial_<t>`
    const MULTI_DOT_PARTIAL: Kernel<MultiDotPartial<'static, Self>>;
    /// `sum_partials_<t>`
    const SUM_PARTIALS: Kernel<SumPartials<'static, Self>>;
}

/// The BLAS-1 kernels that exist per real type only (the second stage of `nrm2`).
#[cfg(not(target_arch = "nvptx64"))]
pub trait RealBlas1Kernels: RealScalar {
    /// `sqrt_sum_partials_<real>`
    const SQRT_SUM_PARTIALS: Kernel<SqrtSumPartials<'static, Self>>;
}

macro_rules! blas1_instances {
    ($t:ty, $sfx:literal) => {
        instances! {
            impl Blas1Kernels for $t {
                FILL = fill::<$t>(concat!("fill_", $sfx));
                SCAL = scal_kernel::<$t>(concat!("scal_", $sfx));
                AXPY = axpy_kernel::<$t>(concat!("axpy_", $sfx));
                AXPBY = axpby_kernel::<$t>(concat!("axpby_", $sfx));
                COPY = copy_kernel::<$t>(concat!("copy_", $sfx));
                DOT_PARTIAL = dot_partial::<$t>(concat!("dot_partial_", $sfx));
                NRM2_PARTIAL = nrm2_partial::<$t>(concat!("nrm2_partial_", $sfx));
                MULTI_DOT_PARTIAL = multi_dot_partial::<$t>(concat!("multi_dot_partial_", $sfx));
                SUM_PARTIALS = sum_partials::<$t>(concat!("sum_partials_", $sfx));
            }
        }
    };
}

blas1_instances!(f32, "f32");
blas1_instances!(f64, "f64");
blas1_instances!(num_complex::Complex<f32>, "c32");
blas1_instances!(num_complex::Complex<f64>, "c64");

instances! {
    impl RealBlas1Kernels for f32 {
        SQRT_SUM_PARTIALS = sqrt_sum_partials::<f32>("sqrt_sum_partials_f32");
    }
    impl RealBlas1Kernels for f64 {
        SQRT_SUM_PARTIALS = sqrt_sum_partials::<f64>("sqrt_sum_partials_f64");
    }
}
