//! ROCK4 on one GPU, every vector resident on the device (allocated once before the
//! first step, poisoned with NaN so that an element no kernel wrote shows).
//!
//! One attempt queues its `s = m + 4` stages without waiting: the recurrence stages go
//! through [`DeviceRhs::stage_unchecked`] (for the stencil problems of
//! [`super::problems`] one fused kernel per stage that evaluates `f(g_{j-1})` from the
//! stencil and writes `g_j` directly: two vectors read, one written), the finishing
//! procedure is four evaluations and four element-wise kernels, and the error norm is a
//! deterministic two-stage reduction (fixed block partials, then `sum_partials_f64`).
//!
//! **Where the steps are decided** ([`Controller`]):
//! - **Device** (the default for the built-in stencil problems, [`DeviceRhs::stencil`],
//!   up to [`AUTO_DEVICE_MAX_POINTS`] unknowns):
//!   one cooperative launch of `rock4_persistent_f64` runs up to [`ATTEMPTS_PER_LAUNCH`]
//!   attempts: start-up step, spectral radius (Gershgorin bound as a grid maximum, or
//!   the power iteration with its norms reduced and its estimate formed on the device),
//!   degree selection, the `m + 4` stages, the error norm (block partials added in a
//!   fixed order by every block, so every block takes the same decision) and the
//!   controller, with a grid barrier between vector operations. The controller's
//!   arithmetic is the CPU driver's (`ferrocuda_kernels::rock4::{begin_attempt,
//!   stages_needed, finish_attempt, ..}`). The host waits once per launch, reading the
//!   state (a few words) and the attempts' history back.
//! - **Host** (any [`DeviceRhs`]): the host queues each attempt's kernels without
//!   waiting and reads back one scalar per attempt (the error sum, 8 bytes); the spectral
//!   radius is a bound read back as one scalar per refresh, or the power iteration, which
//!   reads back one norm per iteration.
//!
//! Same options, report and controller ([`super::driver`]) as [`super::cpu`], and the
//! same per-element math (`ferrocuda_kernels::rock4`), so on the heat problem the two
//! take the same steps and agree to rounding (the reductions add in different orders).

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, Gpu, LaunchConfig, arg,
};
use ferrocuda_kernels::blas1::{BLOCK, reduction_blocks};
use ferrocuda_kernels::names::{Blas1Kernels, ROCK4};
use ferrocuda_kernels::rock4::RadCoeffs;

use super::coeffs::Degree;
use super::driver::{self, SQRTU, UROUND};
use super::{
    Controller, DeviceRhs, Rock4Options, Rock4Report, SpectralRadius, StepRecord, StopReason,
};
use crate::blas1::gpu as b1;
use crate::error::{Error, Result, check_device, check_len};

const OP: &str = "rock4::gpu::integrate";

/// Launches an element-wise grid-stride kernel over `n > 0` elements.
///
/// # Safety
/// `params` match `kernel`'s parameters, and its pointers are valid for `n` elements.
unsafe fn elementwise(
    gpu: &Gpu,
    kernel: &'static str,
    n: usize,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { gpu.launch_untyped(kernel, LaunchConfig::for_elements(n, BLOCK as u32), params)? };
    Ok(())
}

/// The launch of a stage-one reduction kernel over `n` elements: `reduction_blocks(n)`
/// blocks of [`BLOCK`] threads with the shared memory of one block-wide reduction.
fn reduction_config(n: usize) -> LaunchConfig {
    LaunchConfig::blocks(reduction_blocks(n) as u32, BLOCK as u32)
        .with_shared_bytes((BLOCK / 32 * size_of::<f64>()) as u32)
}

/// The 2D launch of the stencil kernels: a row of points per block row (grid y, capped
/// at 65535 with a grid-stride loop over the rest), the columns over grid x.
fn stencil_config(nx: usize, ny: usize) -> LaunchConfig {
    let threads = nx.next_multiple_of(32).min(BLOCK);
    let bx = nx
        .div_ceil(threads)
        .clamp(1, ferrocuda_host::MAX_GRID_X as usize);
    let gy = ny.clamp(1, ferrocuda_host::MAX_GRID_YZ as usize);
    LaunchConfig::blocks(bx as u32, threads as u32).with_grid_y(gy as u32)
}

/// `out <- ha f + (1 + c) g1 - c g2` (`g2 = None`: `out` holds `g_{j-2}` and is updated
/// in place), queued on `out`'s stream. Errors: lengths differ, devices differ.
pub fn recurrence(
    ha: f64,
    c: f64,
    f: &impl DeviceSlice<f64>,
    g1: &impl DeviceSlice<f64>,
    g2: Option<&DeviceView<'_, f64>>,
    out: &mut impl DeviceSliceMut<f64>,
) -> Result<()> {
    const OP: &str = "rock4::gpu::recurrence";
    let n = out.len();
    check_len(OP, "f", n, f.len())?;
    check_len(OP, "g1", n, g1.len())?;
    check_device(OP, "f", out.gpu(), f.gpu())?;
    check_device(OP, "g1", out.gpu(), g1.gpu())?;
    let g2p = match g2 {
        Some(g2) => {
            check_len(OP, "g2", n, g2.len())?;
            check_device(OP, "g2", out.gpu(), g2.gpu())?;
            g2.device_ptr()
        }
        None => out.device_ptr(),
    };
    if n == 0 {
        return Ok(());
    }
    let (fp, g1p, op) = (f.device_ptr(), g1.device_ptr(), out.device_ptr());
    // SAFETY: rock4_recurrence_f64(n, ha, c, f, g1, g2, out) reads f, g1, g2 and writes
    // out, all n elements; g2 may be out (each thread reads its element before writing it).
    unsafe {
        elementwise(
            out.gpu(),
            ROCK4.recurrence,
            n,
            &mut [
                arg(&n),
                arg(&ha),
                arg(&c),
                arg(&fp),
                arg(&g1p),
                arg(&g2p),
                arg(&op),
            ],
        )
    }
}

/// A 5-point stencil on `nx x ny` points (`ferrocuda_kernels::rock4::stencil_point` of
/// `kind`), the device side of the test problems.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StencilLaunch {
    pub nx: usize,
    pub ny: usize,
    pub kind: u32,
    pub p: RadCoeffs,
}

impl StencilLaunch {
    /// `dy <- f(y)` on `gpu` (the output's stream).
    ///
    /// # Safety
    /// `y` and `dy` are device pointers to `nx ny` elements, `dy` not aliasing `y`.
    pub(crate) unsafe fn eval(&self, gpu: &Gpu, y: u64, dy: u64) -> Result<()> {
        let (nx, ny, kind, p) = (self.nx, self.ny, self.kind, self.p);
        // SAFETY: rock4_stencil_eval_f64(nx, ny, kind, coeffs.., y, dy) reads y and writes
        // dy, nx ny elements each (the caller's promise).
        unsafe {
            gpu.launch_untyped(
                ROCK4.stencil_eval,
                stencil_config(nx, ny),
                &mut [
                    arg(&nx),
                    arg(&ny),
                    arg(&kind),
                    arg(&p.nu),
                    arg(&p.rx),
                    arg(&p.ry),
                    arg(&p.cx),
                    arg(&p.cy),
                    arg(&p.mu),
                    arg(&y),
                    arg(&dy),
                ],
            )?;
        }
        Ok(())
    }

    /// The fused stage `out <- ha f(g1) + (1 + c) g1 - c g2` on `gpu`.
    ///
    /// # Safety
    /// All pointers address `nx ny` elements; `out` does not alias `g1` (it may be `g2`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn stage(
        &self,
        gpu: &Gpu,
        ha: f64,
        c: f64,
        g1: u64,
        g2: u64,
        out: u64,
    ) -> Result<()> {
        let (nx, ny, kind, p) = (self.nx, self.ny, self.kind, self.p);
        // SAFETY: rock4_stencil_stage_f64(nx, ny, kind, coeffs.., ha, c, g1, g2, out) reads
        // g1 (stencil) and g2, writes out, nx ny elements each (the caller's promise).
        unsafe {
            gpu.launch_untyped(
                ROCK4.stencil_stage,
                stencil_config(nx, ny),
                &mut [
                    arg(&nx),
                    arg(&ny),
                    arg(&kind),
                    arg(&p.nu),
                    arg(&p.rx),
                    arg(&p.ry),
                    arg(&p.cx),
                    arg(&p.cy),
                    arg(&p.mu),
                    arg(&ha),
                    arg(&c),
                    arg(&g1),
                    arg(&g2),
                    arg(&out),
                ],
            )?;
        }
        Ok(())
    }

    /// `max_i gershgorin_row(kind, p, y_i)`: block maxima on the device, their maximum
    /// on the host (waits for the stream; the maximum does not depend on the order).
    pub(crate) fn gershgorin(&self, y: &DeviceView<'_, f64>) -> Result<f64> {
        let n = self.nx * self.ny;
        check_len("rock4 gershgorin", "y", n, y.len())?;
        let gpu = y.gpu();
        let blocks = reduction_blocks(n);
        let partials = gpu.alloc::<f64>(blocks)?;
        let (kind, p, yp, pp) = (self.kind, self.p, y.device_ptr(), partials.device_ptr());
        // SAFETY: rock4_gershgorin_partial_f64(n, kind, coeffs.., y, partials) reads
        // y[0..n] and writes `blocks` partials.
        unsafe {
            gpu.launch_untyped(
                ROCK4.gershgorin_partial,
                reduction_config(n),
                &mut [
                    arg(&n),
                    arg(&kind),
                    arg(&p.nu),
                    arg(&p.rx),
                    arg(&p.ry),
                    arg(&p.cx),
                    arg(&p.cy),
                    arg(&p.mu),
                    arg(&yp),
                    arg(&pp),
                ],
            )?;
        }
        let values = partials.download()?;
        Ok(values.into_iter().fold(0.0, f64::max))
    }
}

/// Integrates `y' = f(t, y)` from `t0` to `t_end` with ROCK4 on the GPU, overwriting `y`
/// (the initial value, on the device) with the solution at the final time reached. Work
/// runs on `y`'s stream. Same options and report as [`super::cpu::integrate`]
/// ([`Rock4Options::threads`] does not apply).
///
/// Errors (nothing is modified): those of [`super::cpu::integrate`] (with "y holds NaN or
/// infinity" for a non-finite `y`; a failed integration is [`Error::IntegrationFailed`]
/// with `y` unchanged), `rhs` on another device than `y`, and a workspace beyond the
/// device's free memory ([`Error::OutOfDeviceMemory`]).
pub fn integrate<R: DeviceRhs + ?Sized>(
    rhs: &R,
    t0: f64,
    t_end: f64,
    y: &mut DeviceBuffer<f64>,
    opts: &Rock4Options,
) -> Result<Rock4Report> {
    let n = rhs.dim();
    super::validate(OP, n, y.len(), t0, t_end, opts)?;
    let gpu = y.gpu().clone();
    check_device(OP, "the right-hand side", &gpu, rhs.gpu())?;
    // The problem may have been set up on another stream of the device.
    gpu.wait_for(rhs.gpu())?;
    let norm = b1::nrm2(&*y)?;
    if !norm.is_finite() {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("y holds NaN or infinity (its norm is {norm})"),
        });
    }
    match (opts.controller, rhs.stencil()) {
        (Controller::Device, Some(DeviceStencil(st))) => {
            return integrate_persistent(&st, &gpu, t0, t_end, y, opts);
        }
        (Controller::Auto, Some(DeviceStencil(st))) if n <= AUTO_DEVICE_MAX_POINTS => {
            return integrate_persistent(&st, &gpu, t0, t_end, y, opts);
        }
        (Controller::Device, None) => {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: "the device controller (persistent kernel) needs one of the built-in stencil problems (DeviceRhs::stencil); use Controller::Host".into(),
            });
        }
        _ => {}
    }
    let mut b = GpuBackend::new(rhs, &gpu, n, opts)?;
    b.y.copy_from_device(&*y)?;
    let report = driver::run(&mut b, t0, t_end, opts)?;
    let report = super::finish(OP, t0, t_end, report)?;
    y.copy_from_device(&b.y)?;
    gpu.synchronize()?;
    Ok(report)
}

/// `Ok` when `vectors` device vectors of `n` `f64` and `extra` bytes fit the free memory
/// of `gpu`, else [`Error::OutOfDeviceMemory`] naming `n`.
fn check_device_workspace(gpu: &Gpu, n: usize, vectors: usize, extra: u128) -> Result<()> {
    crate::alloc::check_device_bytes(
        gpu,
        &format!("the ROCK4 workspace ({vectors} device vectors of n = {n} unknowns)"),
        crate::alloc::bytes_of(n as u128 * vectors as u128, 8) + extra,
    )
}

/// The device vectors of one integration.
struct GpuBackend<'a, R: ?Sized> {
    rhs: &'a R,
    gpu: Gpu,
    n: usize,
    evals: usize,
    y: DeviceBuffer<f64>,
    fy: DeviceBuffer<f64>,
    ga: DeviceBuffer<f64>,
    gb: DeviceBuffer<f64>,
    k1: DeviceBuffer<f64>,
    k2: DeviceBuffer<f64>,
    k3: DeviceBuffer<f64>,
    k4: DeviceBuffer<f64>,
    k5: DeviceBuffer<f64>,
    y_new: DeviceBuffer<f64>,
    /// The power iteration's saved direction (after its first convergence).
    v: Option<DeviceBuffer<f64>>,
    partials: DeviceBuffer<f64>,
    scalar: DeviceBuffer<f64>,
    use_bound: bool,
}

/// `dy <- f(t, y)` on whole buffers, counted.
fn eval<R: DeviceRhs + ?Sized>(
    rhs: &R,
    evals: &mut usize,
    t: f64,
    y: &DeviceBuffer<f64>,
    dy: &mut DeviceBuffer<f64>,
) -> Result<()> {
    *evals += 1;
    rhs.eval_unchecked(t, &y.view(..)?, &mut dy.view_mut(..)?)
}

impl<'a, R: DeviceRhs + ?Sized> GpuBackend<'a, R> {
    fn new(rhs: &'a R, gpu: &Gpu, n: usize, o: &Rock4Options) -> Result<Self> {
        // Ten vectors, the power iteration's direction where used, the partials.
        check_device_workspace(gpu, n, 11, 8 * reduction_blocks(n) as u128)?;
        let vec = || -> Result<DeviceBuffer<f64>> {
            let mut b = gpu.alloc::<f64>(n)?;
            b1::fill(&mut b, f64::NAN)?;
            Ok(b)
        };
        Ok(GpuBackend {
            rhs,
            gpu: gpu.clone(),
            n,
            evals: 0,
            y: vec()?,
            fy: vec()?,
            ga: vec()?,
            gb: vec()?,
            k1: vec()?,
            k2: vec()?,
            k3: vec()?,
            k4: vec()?,
            k5: vec()?,
            y_new: vec()?,
            v: None,
            partials: gpu.alloc(reduction_blocks(n))?,
            scalar: gpu.alloc(1)?,
            use_bound: o.spectral_radius == SpectralRadius::Auto,
        })
    }

    /// Stage two of a reduction whose stage one wrote `self.partials`, then the sum on
    /// the host (one 8-byte read back; waits for the stream).
    fn finish_sum(&mut self) -> Result<f64> {
        let eb = reduction_blocks(self.n);
        let (pp, sp) = (self.partials.device_ptr(), self.scalar.device_ptr());
        // SAFETY: partials holds eb values (stage one over n elements), scalar has room
        // for the one set.
        unsafe {
            b1::finish_reduction::<f64>(&self.gpu, f64::BLAS1.sum_partials, 1, eb, pp, sp)?;
        }
        let mut out = [0.0];
        self.scalar.copy_to_host(&mut out)?;
        Ok(out[0])
    }

    /// `sqrt(sum (a_i - b_i)^2)`.
    fn diff_norm(&mut self, a: u64, b: u64) -> Result<f64> {
        let (n, pp) = (self.n, self.partials.device_ptr());
        // SAFETY: rock4_diff_sq_partial_f64(n, a, b, partials) reads a, b (n elements,
        // buffers of this backend) and writes reduction_blocks(n) partials.
        unsafe {
            self.gpu.launch_untyped(
                ROCK4.diff_sq_partial,
                reduction_config(n),
                &mut [arg(&n), arg(&a), arg(&b), arg(&pp)],
            )?;
        }
        Ok(self.finish_sum()?.sqrt())
    }

    /// Abdulle's nonlinear power iteration (`rockfrho`), as [`super::cpu`]'s, with
    /// `z = ga`, `fz = gb`.
    fn power_iteration(&mut self, t: f64) -> Result<(f64, bool)> {
        let n = self.n;
        match &self.v {
            Some(v) => self.ga.copy_from_device(v)?,
            None => eval(self.rhs, &mut self.evals, t, &self.fy, &mut self.ga)?,
        }
        let ynor = b1::nrm2(&self.y)?;
        let znor = b1::nrm2(&self.ga)?;
        let dz;
        if ynor != 0.0 && znor != 0.0 {
            dz = ynor * SQRTU;
            b1::axpby(1.0, &self.y, dz / znor, &mut self.ga)?;
        } else if ynor != 0.0 {
            dz = ynor * SQRTU;
            b1::copy(&self.y, &mut self.ga)?;
            b1::scal(1.0 + SQRTU, &mut self.ga)?;
        } else if znor != 0.0 {
            dz = UROUND;
            b1::scal(dz / znor, &mut self.ga)?;
        } else {
            dz = UROUND;
            b1::fill(&mut self.ga, UROUND)?;
        }
        let mut sig = 0.0;
        for iter in 1..=50 {
            eval(self.rhs, &mut self.evals, t, &self.ga, &mut self.gb)?;
            let d = self.diff_norm(self.gb.device_ptr(), self.fy.device_ptr())?;
            let sig_old = sig;
            sig = 1.2 * d / dz;
            if iter >= 2 && (sig - sig_old).abs() <= 0.05 * sig {
                let mut v = match self.v.take() {
                    Some(v) => v,
                    None => self.gpu.alloc(n)?,
                };
                v.copy_from_device(&self.ga)?;
                b1::axpy(-1.0, &self.y, &mut v)?;
                self.v = Some(v);
                return Ok((sig, true));
            }
            if d != 0.0 {
                let q = dz / d;
                let (yp, fzp, fyp, zp) = (
                    self.y.device_ptr(),
                    self.gb.device_ptr(),
                    self.fy.device_ptr(),
                    self.ga.device_ptr(),
                );
                // SAFETY: rock4_shift_f64(n, q, y, fz, fy, z) reads y, fz, fy and writes
                // z, n elements each, z distinct from the others.
                unsafe {
                    elementwise(
                        &self.gpu,
                        ROCK4.shift,
                        n,
                        &mut [arg(&n), arg(&q), arg(&yp), arg(&fzp), arg(&fyp), arg(&zp)],
                    )?;
                }
            } else {
                // Rare (f constant near y): reflect one component on the host.
                let kk = iter % n;
                let (mut z, y) = (self.ga.download()?, self.y.download()?);
                if z[kk] != y[kk] {
                    z[kk] = y[kk] - (z[kk] - y[kk]);
                    self.ga.copy_from_host(&z)?;
                }
            }
        }
        Ok((sig, false))
    }
}

impl<R: DeviceRhs + ?Sized> driver::Backend for GpuBackend<'_, R> {
    fn eval_initial(&mut self, t: f64) -> Result<()> {
        eval(self.rhs, &mut self.evals, t, &self.y, &mut self.fy)
    }

    fn estimate_rho(&mut self, t: f64, report: &mut Rock4Report) -> Result<f64> {
        report.rho_evals += 1;
        if self.use_bound
            && let Some(b) = self.rhs.spectral_radius_bound(t, &self.y.view(..)?)?
        {
            return super::check_bound(OP, t, b);
        }
        let (rho, converged) = self.power_iteration(t)?;
        if !converged {
            report.rho_unconverged += 1;
        }
        Ok(rho)
    }

    fn probe(&mut self, t: f64, h: f64, rtol: f64, atol: f64) -> Result<f64> {
        let n = self.n;
        let (yp, fyp, ytp) = (
            self.y.device_ptr(),
            self.fy.device_ptr(),
            self.k2.device_ptr(),
        );
        // SAFETY: rock4_first_f64(n, h, y, fy, out = k2), n elements each.
        unsafe {
            elementwise(
                &self.gpu,
                ROCK4.first,
                n,
                &mut [arg(&n), arg(&h), arg(&yp), arg(&fyp), arg(&ytp)],
            )?;
        }
        eval(self.rhs, &mut self.evals, t + h, &self.k2, &mut self.k3)?;
        let (ftp, pp) = (self.k3.device_ptr(), self.partials.device_ptr());
        // SAFETY: rock4_probe_partial_f64(n, rtol, atol, ft = k3, fy, y, partials) reads n
        // elements of each vector, writes reduction_blocks(n) partials.
        unsafe {
            self.gpu.launch_untyped(
                ROCK4.probe_partial,
                reduction_config(n),
                &mut [
                    arg(&n),
                    arg(&rtol),
                    arg(&atol),
                    arg(&ftp),
                    arg(&fyp),
                    arg(&yp),
                    arg(&pp),
                ],
            )?;
        }
        Ok((self.finish_sum()? / n as f64).sqrt())
    }

    fn attempt(&mut self, deg: &Degree<'_>, t: f64, h: f64, atol: f64, rtol: f64) -> Result<f64> {
        let n = self.n;
        let gpu = self.gpu.clone();
        let a1 = deg.a1();
        let ha1 = h * a1;
        let (yp, fyp, gap) = (
            self.y.device_ptr(),
            self.fy.device_ptr(),
            self.ga.device_ptr(),
        );
        // SAFETY: rock4_first_f64(n, ha1, y, fy, out = ga), n elements each.
        unsafe {
            elementwise(
                &gpu,
                ROCK4.first,
                n,
                &mut [arg(&n), arg(&ha1), arg(&yp), arg(&fyp), arg(&gap)],
            )?;
        }
        let (mut t1, mut t2) = (t + h * a1, t);
        for j in 2..=deg.m {
            let (a, c) = deg.ac(j);
            {
                let g1 = self.ga.view(..)?;
                let y = self.y.view(..)?;
                let g2 = if j == 2 { Some(&y) } else { None };
                self.rhs.stage_unchecked(
                    t1,
                    h * a,
                    c,
                    &g1,
                    g2,
                    &mut self.gb.view_mut(..)?,
                    &mut self.k1.view_mut(..)?,
                )?;
            }
            self.evals += 1;
            std::mem::swap(&mut self.ga, &mut self.gb);
            let tn = (1.0 + c).mul_add(t1, h.mul_add(a, -c * t2));
            (t2, t1) = (t1, tn);
        }
        // Finishing procedure from u = g_m (in ga) at tau = t_m; arguments in gb.
        let tau = t1;
        let [a21, a31, a32, a41, a42, a43] = *deg.fpa;
        let (ha21, ha31, ha32) = (h * a21, h * a31, h * a32);
        let (ha41, ha42, ha43) = (h * a41, h * a42, h * a43);
        let (up, gbp) = (self.ga.device_ptr(), self.gb.device_ptr());
        let (k1p, k2p, k3p, k4p, k5p) = (
            self.k1.device_ptr(),
            self.k2.device_ptr(),
            self.k3.device_ptr(),
            self.k4.device_ptr(),
            self.k5.device_ptr(),
        );
        let ynp = self.y_new.device_ptr();
        eval(self.rhs, &mut self.evals, tau, &self.ga, &mut self.k1)?;
        // SAFETY (the four launches below): every pointer addresses one of this backend's
        // n-element buffers; the output (gb or y_new) is none of the inputs.
        unsafe {
            elementwise(
                &gpu,
                ROCK4.finish2,
                n,
                &mut [arg(&n), arg(&ha21), arg(&up), arg(&k1p), arg(&gbp)],
            )?;
        }
        eval(
            self.rhs,
            &mut self.evals,
            h.mul_add(a21, tau),
            &self.gb,
            &mut self.k2,
        )?;
        unsafe {
            elementwise(
                &gpu,
                ROCK4.finish3,
                n,
                &mut [
                    arg(&n),
                    arg(&ha31),
                    arg(&ha32),
                    arg(&up),
                    arg(&k1p),
                    arg(&k2p),
                    arg(&gbp),
                ],
            )?;
        }
        eval(
            self.rhs,
            &mut self.evals,
            h.mul_add(a31 + a32, tau),
            &self.gb,
            &mut self.k3,
        )?;
        unsafe {
            elementwise(
                &gpu,
                ROCK4.finish4,
                n,
                &mut [
                    arg(&n),
                    arg(&ha41),
                    arg(&ha42),
                    arg(&ha43),
                    arg(&up),
                    arg(&k1p),
                    arg(&k2p),
                    arg(&k3p),
                    arg(&gbp),
                ],
            )?;
        }
        eval(
            self.rhs,
            &mut self.evals,
            h.mul_add(a41 + a42 + a43, tau),
            &self.gb,
            &mut self.k4,
        )?;
        let b = *deg.fpb;
        let hb = [h * b[0], h * b[1], h * b[2], h * b[3]];
        unsafe {
            elementwise(
                &gpu,
                ROCK4.solution,
                n,
                &mut [
                    arg(&n),
                    arg(&hb[0]),
                    arg(&hb[1]),
                    arg(&hb[2]),
                    arg(&hb[3]),
                    arg(&up),
                    arg(&k1p),
                    arg(&k2p),
                    arg(&k3p),
                    arg(&k4p),
                    arg(&ynp),
                ],
            )?;
        }
        eval(self.rhs, &mut self.evals, t + h, &self.y_new, &mut self.k5)?;
        let be = *deg.fpbe;
        let hd = [
            h * (be[0] - b[0]),
            h * (be[1] - b[1]),
            h * (be[2] - b[2]),
            h * (be[3] - b[3]),
        ];
        let hbe5 = h * be[4];
        let pp = self.partials.device_ptr();
        // SAFETY: rock4_error_partial_f64(n, hd.., hbe5, atol, rtol, k1..k5, y_new,
        // partials) reads n elements of each vector, writes reduction_blocks(n) partials.
        unsafe {
            gpu.launch_untyped(
                ROCK4.error_partial,
                reduction_config(n),
                &mut [
                    arg(&n),
                    arg(&hd[0]),
                    arg(&hd[1]),
                    arg(&hd[2]),
                    arg(&hd[3]),
                    arg(&hbe5),
                    arg(&atol),
                    arg(&rtol),
                    arg(&k1p),
                    arg(&k2p),
                    arg(&k3p),
                    arg(&k4p),
                    arg(&k5p),
                    arg(&ynp),
                    arg(&pp),
                ],
            )?;
        }
        Ok((self.finish_sum()? / n as f64).sqrt())
    }

    fn accept(&mut self) -> Result<()> {
        std::mem::swap(&mut self.y, &mut self.y_new);
        std::mem::swap(&mut self.fy, &mut self.k5);
        Ok(())
    }

    fn f_evals(&self) -> usize {
        self.evals
    }
}

/// One of the built-in stencil problems ([`super::problems`]) as the persistent kernel
/// evaluates it: what [`DeviceRhs::stencil`] returns for them. Opaque.
#[derive(Debug, Clone, Copy)]
pub struct DeviceStencil(pub(crate) StencilLaunch);

/// The default attempts per launch of the persistent kernel
/// ([`Rock4Options::attempts_per_launch`]): the host reads the device state (and the
/// history of these attempts) back after each launch, so a long integration costs one
/// host wait per this many attempts.
pub const ATTEMPTS_PER_LAUNCH: usize = 4096;

/// [`Controller::Auto`] takes the persistent kernel up to this many unknowns and the
/// host-decided path above. Measured on an H100 (H100 run of the rock4dev branch,
/// docs/notes/gpu-runs-rock4dev.md): the persistent kernel is 1.5-2.7x faster to t = 1
/// on Table 6.4's grids (N <= 256, latency bound), but on 1024^2 and larger its stages
/// run at a lower bandwidth (one or two 256-thread blocks per multiprocessor, the
/// registers of the whole integration) and a step costs 1.3x (1024^2) to 1.7x
/// (4096^2, 8192^2) the host-decided one. The switch lies between 256^2 and 1024^2,
/// at 512^2 (not measured).
pub const AUTO_DEVICE_MAX_POINTS: usize = 512 * 512;

/// Threads per block of the persistent kernel.
const PERSISTENT_THREADS: u32 = 256;

/// Points per thread the persistent grid aims at on small grids (fewer blocks, so a
/// cheaper grid barrier); large grids take every resident block.
const POINTS_PER_THREAD: usize = 4;

/// `value` as its 8-byte words (the device keeps the state in a `u64` buffer).
fn to_words<T: Copy>(value: &T) -> Vec<u64> {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<T>() == 8) };
    // SAFETY: T is a `#[repr(C)]` struct of 8-byte `f64`/`u64` fields (no padding), so
    // its bytes are size_of::<T>() / 8 initialised words.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u64>(), size_of::<T>() / 8) }
        .to_vec()
}

/// The `T` stored in `words` (inverse of [`to_words`]).
fn from_words<T: Copy>(words: &[u64]) -> T {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<T>() == 8) };
    assert!(words.len() * 8 >= size_of::<T>(), "state buffer too short");
    // SAFETY: enough initialised words; every bit pattern is a valid f64/u64 field.
    unsafe { std::ptr::read_unaligned(words.as_ptr().cast::<T>()) }
}

/// The whole integration in the persistent kernel (`rock4_persistent_f64`): one
/// cooperative launch per [`Rock4Options::attempts_per_launch`] attempts, the host reading the state
/// back after each.
fn integrate_persistent(
    st: &StencilLaunch,
    gpu: &Gpu,
    t0: f64,
    t_end: f64,
    y: &mut DeviceBuffer<f64>,
    o: &Rock4Options,
) -> Result<Rock4Report> {
    use ferrocuda_kernels::rock4::{
        AttemptLog, Control, PersistentParams, PersistentState, RUN_FINISHED, RUN_PAUSED,
        RUN_STEP_TOO_SMALL,
    };
    let start = std::time::Instant::now();
    let n = st.nx * st.ny;
    let shared = ferrocuda_kernels::rock4::PERSISTENT_SHARED_BYTES;
    let resident = gpu.resident_blocks_untyped(ROCK4.persistent, PERSISTENT_THREADS, shared)?;
    if resident == 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: "the persistent ROCK4 kernel fits no block on this device".into(),
        });
    }
    let blocks = n
        .div_ceil(PERSISTENT_THREADS as usize * POINTS_PER_THREAD)
        .clamp(1, resident);
    let log_words = size_of::<AttemptLog>() / 8;
    let per_launch = o.attempts_per_launch.min(o.max_steps);
    // Fourteen vectors, the partials and the attempts' history of one launch.
    let history_bytes = per_launch as u128 * log_words as u128 * 8;
    check_device_workspace(gpu, n, 14, 16 * blocks as u128 + history_bytes)?;
    let vec = || -> Result<DeviceBuffer<f64>> {
        let mut b = gpu.alloc::<f64>(n)?;
        b1::fill(&mut b, f64::NAN)?;
        Ok(b)
    };
    let mut ya = vec()?;
    ya.copy_from_device(&*y)?;
    let (yb, fa, fb, ga, gb) = (vec()?, vec()?, vec()?, vec()?, vec()?);
    let ks = [vec()?, vec()?, vec()?, vec()?];
    let v = vec()?;
    let partials = gpu.alloc::<f64>(2 * blocks)?;
    let tab = super::coeffs::tables();
    let recf = gpu.upload(&tab.recf)?;
    let fpa = gpu.upload(&tab.fpa.concat())?;
    let fpb = gpu.upload(&tab.fpb.concat())?;
    let fpbe = gpu.upload(&tab.fpbe.concat())?;
    let ms = gpu.upload(&tab.ms.iter().map(|&m| m as u64).collect::<Vec<_>>())?;
    let starts = gpu.upload(
        &(0..super::coeffs::DEGREES)
            .map(|i| tab.block_start(i) as u64)
            .collect::<Vec<_>>(),
    )?;
    let barrier = gpu.upload(&[0u32])?;
    let init = PersistentState {
        ctl: Control::new(t0, o.h0.unwrap_or(0.0)),
        status: RUN_PAUSED,
        started: 0,
        parity: 0,
        v_valid: 0,
        accepted: 0,
        rejected: 0,
        f_evals: 0,
        rho_evals: 0,
        rho_unconverged: 0,
        max_stages: 0,
        rho_min: f64::INFINITY,
        rho_max: 0.0,
        records: 0,
    };
    let state = gpu.upload(&to_words(&init))?;
    // Bounded by the device's memory (checked above).
    let history = gpu.alloc::<u64>(per_launch * log_words)?;
    let mut s = init;
    let mut report = Rock4Report::start(t0);
    let cfg =
        LaunchConfig::blocks(blocks as u32, PERSISTENT_THREADS).with_shared_bytes(shared as u32);
    loop {
        let params = PersistentParams {
            nx: st.nx as u64,
            ny: st.ny as u64,
            kind: u64::from(st.kind),
            coeffs: st.p,
            t0,
            t_end,
            atol: o.atol,
            rtol: o.rtol,
            fixed: u64::from(o.step_control == super::StepControl::Fixed),
            power: u64::from(o.spectral_radius == SpectralRadius::PowerIteration),
            jacobian_constant: u64::from(o.jacobian_constant),
            h0_given: u64::from(o.h0.is_some()),
            max_attempts: o.max_steps as u64,
            pause_at: s.ctl.attempts + per_launch as u64,
            record_base: s.records,
            y: [ya.device_ptr(), yb.device_ptr()],
            fy: [fa.device_ptr(), fb.device_ptr()],
            g: [ga.device_ptr(), gb.device_ptr()],
            k: [
                ks[0].device_ptr(),
                ks[1].device_ptr(),
                ks[2].device_ptr(),
                ks[3].device_ptr(),
            ],
            v: v.device_ptr(),
            partials: partials.device_ptr(),
            state: state.device_ptr(),
            history: history.device_ptr(),
            barrier: barrier.device_ptr(),
            recf: recf.device_ptr(),
            fpa: fpa.device_ptr(),
            fpb: fpb.device_ptr(),
            fpbe: fpbe.device_ptr(),
            ms: ms.device_ptr(),
            starts: starts.device_ptr(),
        };
        // SAFETY: rock4_persistent_f64(params) by value; every pointer is one of the
        // buffers above with the lengths the struct documents (vectors of n, 2 blocks
        // partials, the state, per_launch logs: pause_at bounds the attempts of
        // this launch), alive until the state is read back below (which waits).
        unsafe { gpu.launch_cooperative_untyped(ROCK4.persistent, cfg, &mut [arg(&params)])? };
        report.device_launches += 1;
        let base = s.records;
        s = from_words(&state.download()?);
        let logs = (s.records - base) as usize;
        if logs > 0 {
            let words = history.download()?;
            for w in words[..logs * log_words].chunks_exact(log_words) {
                let l: AttemptLog = from_words(w);
                report.history.push(StepRecord {
                    t: l.t,
                    h: l.h,
                    stages: l.stages as usize,
                    rho: l.rho,
                    err: l.err,
                    accepted: l.accepted != 0,
                });
            }
        }
        if s.status != RUN_PAUSED {
            break;
        }
    }
    report.reason = match s.status {
        RUN_FINISHED => StopReason::Finished,
        RUN_STEP_TOO_SMALL => StopReason::StepTooSmall,
        _ => StopReason::MaxSteps,
    };
    report.final_time = s.ctl.t;
    report.steps_accepted = s.accepted as usize;
    report.steps_rejected = s.rejected as usize;
    report.f_evals = s.f_evals as usize;
    report.rho_evals = s.rho_evals as usize;
    report.rho_unconverged = s.rho_unconverged as usize;
    report.rho_min = if s.rho_min == f64::INFINITY {
        0.0
    } else {
        s.rho_min
    };
    report.rho_max = s.rho_max;
    report.max_stages = s.max_stages as usize;
    report.h_next = s.ctl.h_next;
    // A failed integration leaves `y` as it was.
    if report.reason != StopReason::StepTooSmall {
        y.copy_from_device(if s.parity == 0 { &ya } else { &yb })?;
        gpu.synchronize()?;
    }
    report.seconds = start.elapsed().as_secs_f64();
    super::finish(OP, t0, t_end, report)
}
