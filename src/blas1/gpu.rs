//! BLAS-1 on the GPU. Each function checks lengths and devices, then holds the only
//! `unsafe` launch of its kernel. Work is queued on the stream of the output operand;
//! only the functions returning a host value (`dot`, `nrm2`) wait for it. Operands
//! written on another stream of the same device must be ordered first with
//! [`ferrocuda_host::Gpu::wait_for`].

use ferrocuda_host::{DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig, arg};
use ferrocuda_kernels::blas1::{BLOCK, MULTI_DOT_CHUNK, reduction_blocks};

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

/// Launches a grid-stride element-wise kernel over `n` elements; nothing when `n == 0`.
///
/// # Safety
/// `params` match `kernel`'s parameters, and its pointers are valid for `n` elements.
unsafe fn launch_elementwise(
    gpu: &Gpu,
    kernel: &'static str,
    n: usize,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    if n > 0 {
        // SAFETY: forwarded.
        unsafe { gpu.launch(kernel, LaunchConfig::for_elements(n, BLOCK as u32), params)? };
    }
    Ok(())
}

/// `x_i <- value`.
pub fn fill<T: Element>(x: &mut impl DeviceSliceMut<T>, value: T) -> Result<()> {
    let (n, xp) = (x.len(), x.device_ptr());
    // SAFETY: fill_<t>(n, value, x) writes x[0..n]; x has n elements.
    unsafe {
        launch_elementwise(
            x.gpu(),
            T::BLAS1.fill,
            n,
            &mut [arg(&n), arg(&value), arg(&xp)],
        )
    }
}

/// `x <- alpha x`.
pub fn scal<T: Element>(alpha: T, x: &mut impl DeviceSliceMut<T>) -> Result<()> {
    let (n, xp) = (x.len(), x.device_ptr());
    // SAFETY: scal_<t>(n, alpha, x) updates x[0..n].
    unsafe {
        launch_elementwise(
            x.gpu(),
            T::BLAS1.scal,
            n,
            &mut [arg(&n), arg(&alpha), arg(&xp)],
        )
    }
}

/// `y <- alpha x + y`. Errors: lengths differ, devices differ.
pub fn axpy<T: Element>(
    alpha: T,
    x: &impl DeviceSlice<T>,
    y: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    check_pair("axpy", x, y)?;
    let (n, xp, yp) = (y.len(), x.device_ptr(), y.device_ptr());
    let params = &mut [arg(&n), arg(&alpha), arg(&xp), arg(&yp)];
    // SAFETY: axpy_<t>(n, alpha, x, y) reads x[0..n], updates y[0..n]; &mut y excludes aliasing.
    unsafe { launch_elementwise(y.gpu(), T::BLAS1.axpy, n, params) }
}

/// `y <- alpha x + beta y`. Errors: lengths differ, devices differ.
pub fn axpby<T: Element>(
    alpha: T,
    x: &impl DeviceSlice<T>,
    beta: T,
    y: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    check_pair("axpby", x, y)?;
    let (n, xp, yp) = (y.len(), x.device_ptr(), y.device_ptr());
    let params = &mut [arg(&n), arg(&alpha), arg(&xp), arg(&beta), arg(&yp)];
    // SAFETY: axpby_<t>(n, alpha, x, beta, y) reads x[0..n], updates y[0..n].
    unsafe { launch_elementwise(y.gpu(), T::BLAS1.axpby, n, params) }
}

/// `y <- x` with a kernel (see [`ferrocuda_host::copy_device`] for the copy engine).
/// Errors: lengths differ, devices differ.
pub fn copy<T: Element>(x: &impl DeviceSlice<T>, y: &mut impl DeviceSliceMut<T>) -> Result<()> {
    check_pair("copy", x, y)?;
    let (n, xp, yp) = (y.len(), x.device_ptr(), y.device_ptr());
    // SAFETY: copy_<t>(n, x, y) reads x[0..n], writes y[0..n].
    unsafe {
        launch_elementwise(
            y.gpu(),
            T::BLAS1.copy,
            n,
            &mut [arg(&n), arg(&xp), arg(&yp)],
        )
    }
}

/// Stage two of a reduction: `out[s] = finish(sum of partials[s*count..(s+1)*count])`
/// for `s < sets`.
///
/// # Safety
/// `partials` holds `sets * count` values of `R`, `out` has room for `sets`.
pub(crate) unsafe fn finish_reduction<R: Element>(
    gpu: &Gpu,
    kernel: &'static str,
    sets: usize,
    count: usize,
    partials: u64,
    out: u64,
) -> Result<()> {
    let cfg =
        LaunchConfig::blocks(sets as u32, BLOCK as u32).with_shared_bytes(reduce_shared::<R>());
    // SAFETY: forwarded.
    unsafe { gpu.launch(kernel, cfg, &mut [arg(&count), arg(&partials), arg(&out)])? };
    Ok(())
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
    let gpu = out.gpu();
    let n = x.len();
    let blocks = reduction_blocks(n);
    let (xp, yp, op) = (x.device_ptr(), y.device_ptr(), out.device_ptr());
    gpu.with_scratch(blocks * size_of::<T>(), |partials| {
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_shared_bytes(reduce_shared::<T>());
        // SAFETY: dot_partial_<t>(n, x, y, partials) reads x, y [0..n] and writes
        // partials[0..blocks]; the scratch holds `blocks` values; then one set of
        // `blocks` partials is reduced into out[0].
        unsafe {
            gpu.launch(
                T::BLAS1.dot_partial,
                cfg,
                &mut [arg(&n), arg(&xp), arg(&yp), arg(&partials)],
            )?;
            finish_reduction::<T>(gpu, T::BLAS1.sum_partials, 1, blocks, partials, op)
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
    let gpu = out.gpu();
    let n = x.len();
    let blocks = reduction_blocks(n);
    let (xp, op) = (x.device_ptr(), out.device_ptr());
    gpu.with_scratch(blocks * size_of::<T::Real>(), |partials| {
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_shared_bytes(reduce_shared::<T::Real>());
        // SAFETY: nrm2_partial_<t>(n, x, partials) reads x[0..n], writes `blocks` reals.
        unsafe {
            gpu.launch(
                T::BLAS1.nrm2_partial,
                cfg,
                &mut [arg(&n), arg(&xp), arg(&partials)],
            )?;
            finish_reduction::<T::Real>(gpu, T::BLAS1.sqrt_sum_partials, 1, blocks, partials, op)
        }
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
    let gpu = out.gpu();
    let blocks = reduction_blocks(n);
    let (xp, yp, op) = (x.device_ptr(), ys.device_ptr(), out.device_ptr());
    gpu.with_scratch(k * blocks * size_of::<T>(), |partials| {
        let shared = (MULTI_DOT_CHUNK * BLOCK / 32 * size_of::<T>()) as u32;
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_grid_y(groups as u32)
            .with_shared_bytes(shared);
        // SAFETY: multi_dot_partial_<t>(n, k, x, ys, ld = n, partials) reads x[0..n] and
        // ys[0..k n], writes partials[0..k blocks]; then k sets of `blocks` are reduced
        // into out[0..k].
        unsafe {
            gpu.launch(
                T::BLAS1.multi_dot_partial,
                cfg,
                &mut [
                    arg(&n),
                    arg(&k),
                    arg(&xp),
                    arg(&yp),
                    arg(&n),
                    arg(&partials),
                ],
            )?;
            finish_reduction::<T>(gpu, T::BLAS1.sum_partials, k, blocks, partials, op)
        }
    })
}
