//! BLAS-1 on the GPU. Each function checks lengths and devices, then holds the only
//! `unsafe` launch of its kernel. Work is queued on the stream of the output operand;
//! only the functions returning a host value (`dot`, `nrm2`) wait for it. Operands
//! written on another stream of the same device must be ordered first with
//! [`ferrocuda_host::Gpu::wait_for`].

use ferrocuda_host::{DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig, Out};
use ferrocuda_kernels::blas1::{
    Axpby, Axpy, CopyVec, DotPartial, Fill, MULTI_DOT_CHUNK, MultiDotPartial, Nrm2Partial, Scal,
    SumPartials, reduction_blocks,
};
use ferrocuda_kernels::blas1::{BLOCK, RealBlas1Kernels, SqrtSumPartials};

use super::Element;
use crate::error::{Error, Result, check_device, check_len};

/// Shared memory of one block-wide reduction of `T`.
fn reduce_shared<T>() -> u32 {
    (BLOCK / 32 * size_of::<T>()) as u32
}

/// Checks that `x` fits `y` (same length, same device) for an element-wise operation.
fn check_pair<T>(op: &'static str, x: &impl DeviceSlice<T>, y: &impl DeviceSlice<T>) -> Result<()> {
    check_len(op, "x", y.len(), x.len())?;
    check_device(op, "x", y.gpu(), x.gpu())
}

/// The grid of an element-wise kernel over `n > 0` elements.
fn elementwise(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, BLOCK as u32)
}

/// `x_i <- value`.
pub fn fill<T: Element>(x: &mut impl DeviceSliceMut<T>, value: T) -> Result<()> {
    let (n, gpu) = (x.len(), x.gpu().clone());
    if n == 0 {
        return Ok(());
    }
    let args = Fill {
        n,
        value,
        x: x.as_out(),
    };
    // SAFETY: fill writes x[0..n]; x has n elements.
    unsafe { gpu.launch(&T::FILL, elementwise(n), args) }.map_err(Into::into)
}

/// `x <- alpha x`.
pub fn scal<T: Element>(alpha: T, x: &mut impl DeviceSliceMut<T>) -> Result<()> {
    let (n, gpu) = (x.len(), x.gpu().clone());
    if n == 0 {
        return Ok(());
    }
    let args = Scal {
        n,
        alpha,
        x: x.as_out(),
    };
    // SAFETY: scal updates x[0..n]; x has n elements.
    unsafe { gpu.launch(&T::SCAL, elementwise(n), args) }.map_err(Into::into)
}

/// `y <- alpha x + y`. Errors: lengths differ, devices differ.
pub fn axpy<T: Element>(
    alpha: T,
    x: &impl DeviceSlice<T>,
    y: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    check_pair("axpy", x, y)?;
    let (n, gpu) = (y.len(), y.gpu().clone());
    if n == 0 {
        return Ok(());
    }
    let args = Axpy {
        n,
        alpha,
        x: x.as_in(),
        y: y.as_out(),
    };
    // SAFETY: axpy reads x[0..n] and updates y[0..n]; both have n elements (checked),
    // and `&mut y` excludes aliasing.
    unsafe { gpu.launch(&T::AXPY, elementwise(n), args) }.map_err(Into::into)
}

/// `y <- alpha x + beta y`. Errors: lengths differ, devices differ.
pub fn axpby<T: Element>(
    alpha: T,
    x: &impl DeviceSlice<T>,
    beta: T,
    y: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    check_pair("axpby", x, y)?;
    let (n, gpu) = (y.len(), y.gpu().clone());
    if n == 0 {
        return Ok(());
    }
    let args = Axpby {
        n,
        alpha,
        x: x.as_in(),
        beta,
        y: y.as_out(),
    };
    // SAFETY: axpby reads x[0..n] and updates y[0..n]; both have n elements (checked).
    unsafe { gpu.launch(&T::AXPBY, elementwise(n), args) }.map_err(Into::into)
}

/// `y <- x` with a kernel (see [`ferrocuda_host::copy_device`] for the copy engine).
/// Errors: lengths differ, devices differ.
pub fn copy<T: Element>(x: &impl DeviceSlice<T>, y: &mut impl DeviceSliceMut<T>) -> Result<()> {
    check_pair("copy", x, y)?;
    let (n, gpu) = (y.len(), y.gpu().clone());
    if n == 0 {
        return Ok(());
    }
    let args = CopyVec {
        n,
        x: x.as_in(),
        y: y.as_out(),
    };
    // SAFETY: copy reads x[0..n] and writes y[0..n]; both have n elements (checked).
    unsafe { gpu.launch(&T::COPY, elementwise(n), args) }.map_err(Into::into)
}

/// The launch of a reduction's stage two: one block per set of partials.
fn finish_config<R>(sets: usize) -> LaunchConfig {
    LaunchConfig::blocks(sets as u32, BLOCK as u32).with_shared_bytes(reduce_shared::<R>())
}

/// Stage two of a reduction: `out[s] = sum of partials[s*count..(s+1)*count]` for
/// `s < sets`, queued on `gpu`.
///
/// # Safety
/// `partials` holds `sets * count` values and `out` has room for `sets`.
pub(crate) unsafe fn finish_sum<T: Element>(
    gpu: &Gpu,
    count: usize,
    partials: &impl DeviceSlice<T>,
    out: Out<'_, T>,
    sets: usize,
) -> Result<()> {
    let args = SumPartials {
        count,
        partials: partials.as_in(),
        out,
    };
    // SAFETY: block s reads partials[s count..(s+1) count] and writes out[s], s < sets.
    unsafe { gpu.launch(&T::SUM_PARTIALS, finish_config::<T>(sets), args) }.map_err(Into::into)
}

/// `out[0] = sum conj(x_i) y_i`, left on the device (no synchronisation).
/// Errors: lengths differ, `out.len() != 1`, devices differ.
pub fn dot_into<T: Element>(
    x: &impl DeviceSlice<T>,
    y: &impl DeviceSlice<T>,
    out: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    check_len("dot", "y", x.len(), y.len())?;
    check_len("dot", "out", 1, out.len())?;
    check_device("dot", "y", x.gpu(), y.gpu())?;
    check_device("dot", "out", x.gpu(), out.gpu())?;
    let gpu = out.gpu().clone();
    let n = x.len();
    let blocks = reduction_blocks(n);
    gpu.with_scratch_of::<T, _, Error>(blocks, |partials| {
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_shared_bytes(reduce_shared::<T>());
        let args = DotPartial {
            n,
            x: x.as_in(),
            y: y.as_in(),
            partials: partials.as_out(),
        };
        // SAFETY: dot_partial reads x, y [0..n] and writes partials[0..blocks] (the grid
        // has `blocks` blocks); then that one set of partials is reduced into out[0].
        unsafe {
            gpu.launch(&T::DOT_PARTIAL, cfg, args)?;
            finish_sum(&gpu, blocks, partials, out.as_out(), 1)
        }
    })
}

/// `sum conj(x_i) y_i`, returned to the host. Errors as [`dot_into`].
pub fn dot<T: Element>(x: &impl DeviceSlice<T>, y: &impl DeviceSlice<T>) -> Result<T> {
    let mut out = x.gpu().alloc::<T>(1)?;
    dot_into(x, y, &mut out)?;
    Ok(out.download()?[0])
}

/// `out[0] = sqrt(sum |x_i|^2)` in the real type, left on the device.
/// Errors: `out.len() != 1`, devices differ.
pub fn nrm2_into<T: Element>(
    x: &impl DeviceSlice<T>,
    out: &mut impl DeviceSliceMut<T::Real>,
) -> Result<()>
where
    T::Real: Element,
{
    check_len("nrm2", "out", 1, out.len())?;
    check_device("nrm2", "out", x.gpu(), out.gpu())?;
    let gpu = out.gpu().clone();
    let n = x.len();
    let blocks = reduction_blocks(n);
    gpu.with_scratch_of::<T::Real, _, Error>(blocks, |partials| {
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_shared_bytes(reduce_shared::<T::Real>());
        let args = Nrm2Partial {
            n,
            x: x.as_in(),
            partials: partials.as_out(),
        };
        // SAFETY: nrm2_partial reads x[0..n] and writes partials[0..blocks].
        unsafe { gpu.launch(&T::NRM2_PARTIAL, cfg, args)? };
        let finish = SqrtSumPartials {
            count: blocks,
            partials: partials.as_in(),
            out: out.as_out(),
        };
        let sqrt_sum = <T::Real as RealBlas1Kernels>::SQRT_SUM_PARTIALS;
        // SAFETY: the one block reduces partials[0..blocks] into out[0].
        unsafe { gpu.launch(&sqrt_sum, finish_config::<T::Real>(1), finish) }.map_err(Into::into)
    })
}

/// `sqrt(sum |x_i|^2)`, returned to the host.
pub fn nrm2<T: Element>(x: &impl DeviceSlice<T>) -> Result<T::Real>
where
    T::Real: Element,
{
    let mut out = x.gpu().alloc::<T::Real>(1)?;
    nrm2_into(x, &mut out)?;
    Ok(out.download()?[0])
}

/// `out_j = dot(x, ys[j n .. (j + 1) n])` for `j < out.len()` (`n = x.len()`), reading
/// `x` once per group of 8 vectors; left on the device.
///
/// Errors: `out` empty ([`crate::Error::Empty`]), `ys.len() != out.len() * n`, devices differ.
pub fn multi_dot<T: Element>(
    x: &impl DeviceSlice<T>,
    ys: &impl DeviceSlice<T>,
    out: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    let (k, n) = (out.len(), x.len());
    super::check_multi_dot_shape(n, ys.len(), k)?;
    check_device("multi_dot", "ys", x.gpu(), ys.gpu())?;
    check_device("multi_dot", "out", x.gpu(), out.gpu())?;
    let groups = k.div_ceil(MULTI_DOT_CHUNK);
    if groups > ferrocuda_host::MAX_GRID_YZ as usize {
        return Err(Error::InvalidArgument {
            op: "multi_dot",
            reason: format!(
                "{k} vectors exceed the limit of {}",
                ferrocuda_host::MAX_GRID_YZ as usize * MULTI_DOT_CHUNK
            ),
        });
    }
    let gpu = out.gpu().clone();
    let blocks = reduction_blocks(n);
    gpu.with_scratch_of::<T, _, Error>(k * blocks, |partials| {
        let shared = (MULTI_DOT_CHUNK * BLOCK / 32 * size_of::<T>()) as u32;
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_grid_y(groups as u32)
            .with_shared_bytes(shared);
        let args = MultiDotPartial {
            n,
            k,
            x: x.as_in(),
            ys: ys.as_in(),
            ld: n,
            partials: partials.as_out(),
        };
        // SAFETY: multi_dot_partial reads x[0..n] and ys[0..k n] (ld = n, checked), and
        // writes partials[0..k blocks]; then k sets of `blocks` are reduced into out[0..k].
        unsafe {
            gpu.launch(&T::MULTI_DOT_PARTIAL, cfg, args)?;
            finish_sum(&gpu, blocks, partials, out.as_out(), k)
        }
    })
}
