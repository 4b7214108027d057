//! LU with partial pivoting on one GPU, the matrix resident on the device.
//!
//! Blocked right-looking, per panel of `block` columns `k0..pend`:
//! 1. `lu_panel_step` once per panel column `j` (and once more for the last column's
//!    scaling): scales column `j - 1` by its pivot, applies its rank-1 update to the
//!    panel, finds column `j`'s pivot (block maxima; the last block to finish reduces
//!    them, so one launch per column and no host synchronisation) and swaps it into
//!    place within the panel. A zero pivot sets `info` and the factorisation goes on
//!    without dividing by it; the host reads `info` once at the end.
//! 2. `lu_laswp`: the panel's interchanges on every column outside the panel.
//! 3. `lu_trsm`: `U12 = L11^{-1} A12`.
//! 4. the trailing update `A22 -= L21 U12` as a GEMM: `gemm_dmma_f64` on the FP64 tensor
//!    cores (`f64`), `gemm_nn_<t>` on the CUDA cores otherwise.
//!
//! Same options, report and pivoting rule as [`super::cpu`]; the GEMM sums in another
//! order, so the factors agree with the CPU's to rounding.

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig, arg};
use ferrocuda_kernels::dense::{
    DMMA_SHARED_BYTES, DMMA_TILE, GEMM_K, GEMM_TILE, PANEL_MAX_BLOCKS, PANEL_SHARED_BYTES,
    PANEL_THREADS, TRSM_COLS,
};

use super::{Lu, LuOptions, LuReport, LuScalar, Matrix, Pivoting, check_square};
use crate::error::{Error, Result, check_device};

/// Device scratch of one factorisation: pivot partials, the block counter, `info`.
pub struct LuWorkspace {
    part_val: DeviceBuffer<f64>,
    part_idx: DeviceBuffer<u32>,
    counter: DeviceBuffer<u32>,
    info: DeviceBuffer<u32>,
}

impl LuWorkspace {
    /// Allocates the scratch on `gpu`.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(LuWorkspace {
            part_val: gpu.alloc_zeroed(PANEL_MAX_BLOCKS)?,
            part_idx: gpu.alloc_zeroed(PANEL_MAX_BLOCKS)?,
            counter: gpu.alloc_zeroed(1)?,
            info: gpu.alloc_zeroed(1)?,
        })
    }
}

/// Factors `P A = L U` on the GPU: uploads `a`, factors it on the device
/// ([`factor_device`]), downloads the factors and pivots. The report's `factor_ms` is
/// the device time of the factorisation, `total_ms` includes both copies. Errors: as
/// [`super::cpu::factor`], plus the GPU's.
pub fn factor<T: LuScalar>(gpu: &Gpu, a: &Matrix<T>, opts: &LuOptions) -> Result<Lu<T>> {
    const OP: &str = "dense::gpu::factor";
    let n = check_square(OP, a)?;
    opts.check(OP)?;
    let total = std::time::Instant::now();
    let mut d = gpu.upload(a.as_slice())?;
    let mut ipiv = gpu.alloc::<u32>(n)?;
    let mut ws = LuWorkspace::new(gpu)?;
    let timer = gpu.timer()?;
    timer.start()?;
    let status = factor_device(n, &mut d, &mut ipiv, &mut ws, opts);
    timer.stop()?;
    status?;
    let factor_ms = timer.elapsed_ms()?;
    let factors = Matrix::new(n, n, d.download()?)?;
    let ipiv = ipiv.download()?;
    let total_ms = total.elapsed().as_secs_f64() * 1e3;
    let backward_error = if opts.backward_error {
        Some(super::backward_error(a, &factors, &ipiv)?)
    } else {
        None
    };
    Ok(Lu {
        factors,
        ipiv,
        report: LuReport {
            n,
            pivoting: opts.pivoting,
            block: opts.block,
            device: gpu.name()?,
            factor_ms,
            total_ms: Some(total_ms),
            backward_error,
        },
    })
}

/// Solves `A X = B`: factors on the GPU ([`factor`]), then the interchanges and the two
/// triangular solves on the host ([`Lu::solve`], `O(n^2 k)`).
pub fn solve<T: LuScalar>(
    gpu: &Gpu,
    a: &Matrix<T>,
    b: &Matrix<T>,
    opts: &LuOptions,
) -> Result<(Matrix<T>, LuReport)> {
    let n = check_square("dense::gpu::solve", a)?;
    crate::error::check_len("dense::gpu::solve", "rows of B", n, b.nrows())?;
    let lu = factor(gpu, a, opts)?;
    let x = lu.solve(b)?;
    Ok((x, lu.report))
}

/// Factors the column-major `n x n` matrix in `a` in place on its stream (`ipiv` gets
/// the interchanges); synchronises once at the end to read `info`. Errors: lengths,
/// devices, `opts.block`, a zero pivot ([`Error::Singular`], first such column; `a`
/// then holds a partial factorisation).
pub fn factor_device<T: LuScalar>(
    n: usize,
    a: &mut DeviceBuffer<T>,
    ipiv: &mut DeviceBuffer<u32>,
    ws: &mut LuWorkspace,
    opts: &LuOptions,
) -> Result<()> {
    const OP: &str = "dense::gpu::factor_device";
    opts.check(OP)?;
    crate::error::check_len(OP, "a (n * n)", n * n, a.len())?;
    crate::error::check_len(OP, "ipiv", n, ipiv.len())?;
    check_device(OP, "ipiv", a.gpu(), ipiv.gpu())?;
    check_device(OP, "workspace", a.gpu(), ws.info.gpu())?;
    if n == 0 {
        return Err(Error::Empty {
            op: OP,
            what: "matrix",
        });
    }
    let gpu = a.gpu().clone();
    ws.info.copy_from_host(&[0])?;
    ws.counter.copy_from_host(&[0])?;
    let pivot: u32 = (opts.pivoting == Pivoting::Partial) as u32;
    let (ap, pp) = (a.device_ptr(), ipiv.device_ptr());
    let (vp, ip, cp, infop) = (
        ws.part_val.device_ptr(),
        ws.part_idx.device_ptr(),
        ws.counter.device_ptr(),
        ws.info.device_ptr(),
    );
    let size = size_of::<T>() as u64;
    let mut k0 = 0;
    while k0 < n {
        let pend = (k0 + opts.block).min(n);
        for j in k0..=pend {
            if j == n {
                break; // the last column of the matrix has no rows below it to scale
            }
            let rows = n - j;
            let blocks = rows.div_ceil(PANEL_THREADS).clamp(1, PANEL_MAX_BLOCKS);
            let cfg = LaunchConfig::blocks(blocks as u32, PANEL_THREADS as u32)
                .with_shared_bytes(PANEL_SHARED_BYTES as u32);
            // SAFETY: lu_panel_step(n, lda, j0, j, pend, pivot, a, ipiv, info, part_val,
            // part_idx, counter) touches rows j-1..n of columns k0..pend of the n x n
            // matrix, ipiv[j], info, `blocks <= PANEL_MAX_BLOCKS` partials and the
            // counter; all sized above.
            unsafe {
                gpu.launch(
                    T::DENSE.panel_step,
                    cfg,
                    &mut [
                        arg(&n),
                        arg(&n),
                        arg(&k0),
                        arg(&j),
                        arg(&pend),
                        arg(&pivot),
                        arg(&ap),
                        arg(&pp),
                        arg(&infop),
                        arg(&vp),
                        arg(&ip),
                        arg(&cp),
                    ],
                )?;
            }
        }
        if opts.pivoting == Pivoting::Partial && n > pend - k0 {
            let cfg = LaunchConfig::for_elements(n, PANEL_THREADS as u32);
            // SAFETY: lu_laswp(ncols, lda, k0, k1, skip0, skip1, a, ipiv) swaps rows
            // k0..pend with rows ipiv[k] < n in columns < n outside k0..pend.
            unsafe {
                gpu.launch(
                    T::DENSE.laswp,
                    cfg,
                    &mut [
                        arg(&n),
                        arg(&n),
                        arg(&k0),
                        arg(&pend),
                        arg(&k0),
                        arg(&pend),
                        arg(&ap),
                        arg(&pp),
                    ],
                )?;
            }
        }
        if pend < n {
            let kb = pend - k0;
            let cols = n - pend;
            let cfg = LaunchConfig::blocks(cols.div_ceil(TRSM_COLS) as u32, TRSM_COLS as u32)
                .with_shared_bytes((kb * TRSM_COLS * size_of::<T>()) as u32);
            // SAFETY: lu_trsm(ncols, lda, k0, kb, c0, a) reads L11 (rows/cols k0..pend)
            // and rewrites rows k0..pend of columns pend..n.
            unsafe {
                gpu.launch(
                    T::DENSE.trsm,
                    cfg,
                    &mut [arg(&n), arg(&n), arg(&k0), arg(&kb), arg(&pend), arg(&ap)],
                )?;
            }
            let l21 = ap + (pend + k0 * n) as u64 * size;
            let u12 = ap + (k0 + pend * n) as u64 * size;
            let a22 = ap + (pend + pend * n) as u64 * size;
            // SAFETY: L21 (cols x kb), U12 (kb x cols) and A22 (cols x cols) lie inside the
            // n x n matrix with leading dimension n; A22 overlaps neither.
            unsafe {
                gemm_raw::<T>(
                    &gpu,
                    opts.tensor_cores,
                    (cols, cols, kb),
                    -T::ONE,
                    (l21, n),
                    (u12, n),
                    T::ONE,
                    (a22, n),
                )?;
            }
        }
        k0 = pend;
    }
    let mut info = [0u32];
    ws.info.copy_to_host(&mut info)?;
    if info[0] != 0 {
        return Err(Error::Singular {
            op: OP,
            column: info[0] as usize - 1,
        });
    }
    Ok(())
}

/// `C <- alpha A B + beta C` with ferrocuda's GEMM: `A` is `m x k` (leading dimension
/// `lda`), `B` `k x n` (`ldb`), `C` `m x n` (`ldc`), all column-major on one device.
/// `tensor_cores` (`f64` only): the FP64 tensor-core kernel. `beta == 0` does not read
/// `C`. Errors: leading dimensions below the rows, buffers too short, devices differ.
///
/// ```no_run
/// # fn main() -> ferrocuda::Result<()> {
/// let gpu = ferrocuda::gpu::open(0)?;
/// let (m, n, k) = (3, 2, 4);
/// let a = gpu.upload(&vec![1.0f64; m * k])?;
/// let b = gpu.upload(&vec![2.0f64; k * n])?;
/// let mut c = gpu.alloc_zeroed::<f64>(m * n)?;
/// ferrocuda::dense::gpu::gemm(true, (m, n, k), 1.0, (&a, m), (&b, k), 0.0, (&mut c, m))?;
/// assert_eq!(c.download()?, vec![8.0; m * n]);
/// # Ok(()) }
/// ```
#[allow(clippy::type_complexity)]
pub fn gemm<T: LuScalar>(
    tensor_cores: bool,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    (a, lda): (&impl DeviceSlice<T>, usize),
    (b, ldb): (&impl DeviceSlice<T>, usize),
    beta: T,
    (c, ldc): (&mut impl DeviceSliceMut<T>, usize),
) -> Result<()> {
    const OP: &str = "dense::gpu::gemm";
    let need = |rows: usize, cols: usize, ld: usize, what: &'static str, len: usize| {
        if ld < rows.max(1) {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("leading dimension of {what} = {ld} < rows = {rows}"),
            });
        }
        let want = if cols == 0 || rows == 0 {
            0
        } else {
            ld * (cols - 1) + rows
        };
        if len < want {
            return Err(Error::DimensionMismatch {
                op: OP,
                what,
                expected: want,
                found: len,
            });
        }
        Ok(())
    };
    need(m, k, lda, "A", a.len())?;
    need(k, n, ldb, "B", b.len())?;
    need(m, n, ldc, "C", c.len())?;
    check_device(OP, "A", c.gpu(), a.gpu())?;
    check_device(OP, "B", c.gpu(), b.gpu())?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let gpu = c.gpu().clone();
    // SAFETY: the extents were checked against the buffers above; C is `&mut`, so it
    // aliases neither A nor B.
    unsafe {
        gemm_raw::<T>(
            &gpu,
            tensor_cores,
            (m, n, k),
            alpha,
            (a.device_ptr(), lda),
            (b.device_ptr(), ldb),
            beta,
            (c.device_ptr(), ldc),
        )
    }
}

/// The GEMM launch on raw device pointers.
///
/// # Safety
/// The matrices lie inside live allocations of `gpu`'s device; `C` overlaps neither
/// `A` nor `B`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_raw<T: LuScalar>(
    gpu: &Gpu,
    tensor_cores: bool,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    (a, lda): (u64, usize),
    (b, ldb): (u64, usize),
    beta: T,
    (c, ldc): (u64, usize),
) -> Result<()> {
    let (kernel, cfg) = match T::TENSOR_GEMM {
        Some(name) if tensor_cores => {
            // The pipeline needs more than the default 48 KiB of dynamic shared memory.
            gpu.bind_to_thread()?;
            gpu.function(name)?
                .set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    DMMA_SHARED_BYTES as i32,
                )
                .map_err(|e| Error::Vendor {
                    library: "CUDA driver",
                    call: "cuFuncSetAttribute(gemm_dmma_f64, MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    status: format!("{e:?}"),
                })?;
            (
                name,
                grid_2d(m, n, DMMA_TILE, 256).with_shared_bytes(DMMA_SHARED_BYTES as u32),
            )
        }
        _ => (
            T::DENSE.gemm,
            grid_2d(m, n, GEMM_TILE, 256)
                .with_shared_bytes((2 * GEMM_K * GEMM_TILE * size_of::<T>()) as u32),
        ),
    };
    if cfg.grid.1 > ferrocuda_host::MAX_GRID_YZ {
        return Err(Error::InvalidArgument {
            op: "dense::gpu::gemm",
            reason: format!("n = {n} needs more than 65535 block columns"),
        });
    }
    // SAFETY: the caller's promise; both kernels take (m, n, k, alpha, a, lda, b, ldb,
    // beta, c, ldc).
    unsafe {
        gpu.launch(
            kernel,
            cfg,
            &mut [
                arg(&m),
                arg(&n),
                arg(&k),
                arg(&alpha),
                arg(&a),
                arg(&lda),
                arg(&b),
                arg(&ldb),
                arg(&beta),
                arg(&c),
                arg(&ldc),
            ],
        )?;
    }
    Ok(())
}

/// Blocks of `tile x tile` results over an `m x n` output (rows in x, columns in y).
fn grid_2d(m: usize, n: usize, tile: usize, threads: u32) -> LaunchConfig {
    LaunchConfig::blocks(m.div_ceil(tile) as u32, threads).with_grid_y(n.div_ceil(tile) as u32)
}
