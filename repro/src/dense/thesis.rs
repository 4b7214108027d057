//! Mißbach (2013), chapters 3 and 4, reproduced: LU without pivoting. The kernels are
//! `ferrocuda_kernels::repro::lu`, in the reproduction PTX module.
//!
//! - [`unblocked_gpu`]: the right-looking unblocked LU in `f64` of chapter 3 (its
//!   `DECOMPOSE_L` / `DECOMPOSE_R` skeletons): per step `k` one kernel scales column `k`
//!   and one updates the trailing `(n-k-1)^2` block with 16x16 thread blocks. The thesis
//!   ran `n = 4000` (Tables 3.1, 3.2).
//! - [`blocked_gpu`]: the blocked LU of chapter 4 with Rodinia's three kernels (diagonal
//!   block, perimeter blocks, interior blocks) in `f32` with block size 16; `n` must be a
//!   multiple of 16, as in the thesis. The thesis ran `n = 8192` (Table 4.1).
//!
//! Both report the device time of the factorisation and the total with the copies to
//! and from the device, the two columns of the thesis's tables. The references are
//! [`ferrocuda::dense::cpu::factor`] with [`ferrocuda::dense::Pivoting::None`]. Without pivoting a zero
//! pivot divides by zero: both check the factors and return [`Error::ZeroPivot`] at the
//! first zero or non-finite diagonal entry instead of handing back infinities or NaN
//! (a zero pivot without pivoting does not mean that the matrix is singular).

use ferrocuda::dense::{LuScalar, Matrix, check_square};
use ferrocuda::{Error, Result};
use std::time::Instant;

use ferrocuda_host::{DeviceBuffer, DeviceSliceMut, EventTimer, Gpu, LaunchConfig};
use ferrocuda_kernels::repro::lu::{
    RODINIA_BS, RODINIA_LUD_DIAGONAL_F32, RODINIA_LUD_INTERNAL_F32, RODINIA_LUD_PERIMETER_F32,
    RodiniaLudDiagonalF32, RodiniaLudInternalF32, RodiniaLudPerimeterF32, THESIS_LU_SCALE_F64,
    THESIS_LU_UPDATE_F64, ThesisLuScaleF64, ThesisLuUpdateF64,
};
use serde::Serialize;

/// Times of one reproduction run, ms.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ThesisTiming {
    /// The factorisation on the device (events).
    pub factor_ms: f64,
    /// Upload, factorisation and download (host clock).
    pub total_ms: f64,
}

/// Fails with [`Error::ZeroPivot`] at the first diagonal entry of `f` that is zero or not
/// finite (a zero pivot the unpivoted algorithms divided by).
fn check_factors<T: LuScalar>(op: &'static str, f: &Matrix<T>) -> Result<()> {
    let n = f.nrows();
    for j in 0..n {
        let d = f.get(j, j).to_f64();
        if d == 0.0 || !d.is_finite() {
            return Err(Error::ZeroPivot { op, column: j });
        }
    }
    if f.as_slice().iter().any(|x| !x.to_f64().is_finite()) {
        return Err(Error::InvalidArgument {
            op,
            reason: "the factors overflowed (no pivoting): use partial pivoting".into(),
        });
    }
    Ok(())
}

/// Mißbach (2013) chapter 3: unblocked LU without pivoting in `f64` on the GPU. Returns the
/// factors (`L` unit lower below the diagonal, `U` on and above) and the times.
pub fn unblocked_gpu(gpu: &Gpu, a: &Matrix<f64>) -> Result<(Matrix<f64>, ThesisTiming)> {
    const OP: &str = "dense::thesis::unblocked_gpu";
    let n = check_square(OP, a)?;
    crate::register_module();
    if n.div_ceil(16) > ferrocuda_host::MAX_GRID_YZ as usize {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("n = {n} needs more than 65535 block columns"),
        });
    }
    // Module loading (a JIT compile for a PTX-only build) is not factorisation time.
    gpu.preload_module(LU_MODULE)?;
    let total = Instant::now();
    let mut d = gpu.upload(a.as_slice())?;
    let timer = gpu.timer()?;
    timer.start()?;
    for k in 0..n - 1 {
        let m = n - k - 1;
        // SAFETY: thesis_lu_scale_f64(n, k, a) / thesis_lu_update_f64(n, k, a) touch
        // rows and columns k..n of the n x n matrix `d`.
        unsafe {
            gpu.launch(
                &THESIS_LU_SCALE_F64,
                LaunchConfig::for_elements(m, 256),
                ThesisLuScaleF64 {
                    n,
                    k,
                    a: d.as_out(),
                },
            )?;
            let b = m.div_ceil(16) as u32;
            gpu.launch(
                &THESIS_LU_UPDATE_F64,
                LaunchConfig::blocks(b, 256).with_grid_y(b),
                ThesisLuUpdateF64 {
                    n,
                    k,
                    a: d.as_out(),
                },
            )?;
        }
    }
    finish(OP, n, &d, &timer, total)
}

/// Mißbach (2013) chapter 4: Rodinia's blocked LU without pivoting in `f32`, block size 16,
/// on the GPU. Errors: `n` not a multiple of 16, plus those of [`unblocked_gpu`].
pub fn blocked_gpu(gpu: &Gpu, a: &Matrix<f32>) -> Result<(Matrix<f32>, ThesisTiming)> {
    const OP: &str = "dense::thesis::blocked_gpu";
    const BS: usize = RODINIA_BS;
    let n = check_square(OP, a)?;
    crate::register_module();
    if n % BS != 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("n = {n} is not a multiple of the block size {BS}"),
        });
    }
    if n / BS > ferrocuda_host::MAX_GRID_YZ as usize {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("n = {n} needs more than 65535 block columns"),
        });
    }
    // Module loading (a JIT compile for a PTX-only build) is not factorisation time.
    gpu.preload_module(LU_MODULE)?;
    let total = Instant::now();
    let mut d = gpu.upload(a.as_slice())?;
    let fsize = size_of::<f32>() as u32;
    let bs2 = (BS * BS) as u32;
    let timer = gpu.timer()?;
    timer.start()?;
    let mut i = 0;
    while i < n {
        // SAFETY: the Rodinia kernels (n, offset, a) touch blocks at offsets >= i of the
        // n x n matrix `d` (n a multiple of 16).
        unsafe {
            gpu.launch(
                &RODINIA_LUD_DIAGONAL_F32,
                LaunchConfig::blocks(1, BS as u32).with_shared_bytes(bs2 * fsize),
                RodiniaLudDiagonalF32 {
                    n,
                    offset: i,
                    a: d.as_out(),
                },
            )?;
            if i + BS < n {
                let nb = ((n - i) / BS - 1) as u32;
                gpu.launch(
                    &RODINIA_LUD_PERIMETER_F32,
                    LaunchConfig::blocks(nb, 2 * BS as u32).with_shared_bytes(3 * bs2 * fsize),
                    RodiniaLudPerimeterF32 {
                        n,
                        offset: i,
                        a: d.as_out(),
                    },
                )?;
                gpu.launch(
                    &RODINIA_LUD_INTERNAL_F32,
                    LaunchConfig::blocks(nb, bs2)
                        .with_grid_y(nb)
                        .with_shared_bytes(2 * bs2 * fsize),
                    RodiniaLudInternalF32 {
                        n,
                        offset: i,
                        a: d.as_out(),
                    },
                )?;
            }
        }
        i += BS;
    }
    finish(OP, n, &d, &timer, total)
}

/// The Rust module of the thesis LU kernels: their domain module is loaded before the
/// clocks start.
const LU_MODULE: &str = "ferrocuda_kernels::repro::lu";

/// The tail both variants share: stops the device timer, downloads the `n x n` factors,
/// takes the host time since `total` and checks the factors.
fn finish<T: LuScalar>(
    op: &'static str,
    n: usize,
    d: &DeviceBuffer<T>,
    timer: &EventTimer,
    total: Instant,
) -> Result<(Matrix<T>, ThesisTiming)> {
    timer.stop()?;
    let factors = Matrix::new(n, n, d.download()?)?;
    let factor_ms = timer.elapsed_ms()?;
    let total_ms = total.elapsed().as_secs_f64() * 1e3;
    check_factors(op, &factors)?;
    Ok((
        factors,
        ThesisTiming {
            factor_ms,
            total_ms,
        },
    ))
}
