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
//! Same options, report and controller (`rock4::driver`) as [`super::cpu`], and the
//! same per-element math (`ferrocuda_kernels::rock4`), so on the heat problem the two
//! take the same steps and agree to rounding (the reductions add in different orders).

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, Gpu, LaunchConfig};
use ferrocuda_kernels::blas1::{BLOCK, reduction_blocks};
use ferrocuda_kernels::rock4::{
    ErrorWeights, ROCK4_DIFF_SQ_PARTIAL_F64, ROCK4_ERROR_PARTIAL_F64, ROCK4_FINISH2_F64,
    ROCK4_FINISH3_F64, ROCK4_FINISH4_F64, ROCK4_FIRST_F64, ROCK4_GERSHGORIN_PARTIAL_F64,
    ROCK4_PERSISTENT_F64, ROCK4_PROBE_PARTIAL_F64, ROCK4_RECURRENCE_F64, ROCK4_SHIFT_F64,
    ROCK4_SOLUTION_F64, ROCK4_STENCIL_EVAL_F64, ROCK4_STENCIL_STAGE_F64, Rock4DiffSqPartialF64,
    Rock4ErrorPartialF64, Rock4Finish2F64, Rock4Finish3F64, Rock4Finish4F64, Rock4FirstF64,
    Rock4GershgorinPartialF64, Rock4PersistentF64, Rock4ProbePartialF64, Rock4RecurrenceF64,
    Rock4ShiftF64, Rock4SolutionF64, Rock4StencilEvalF64, Rock4StencilStageF64, Stencil,
};

use super::coeffs::Degree;
use super::driver::{self, SQRTU, UROUND};
use super::{
    Controller, DeviceRhs, Rock4Options, Rock4Report, SpectralRadius, StepRecord, StopReason,
};
use crate::blas1::gpu as b1;
use crate::error::{Error, Result, check_device, check_len};

const OP: &str = "rock4::gpu::integrate";

/// The launch of an element-wise grid-stride kernel over `n > 0` elements.
fn elementwise(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, BLOCK as u32)
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
    if let Some(g2) = g2 {
        check_len(OP, "g2", n, g2.len())?;
        check_device(OP, "g2", out.gpu(), g2.gpu())?;
    }
    if n == 0 {
        return Ok(());
    }
    let gpu = out.gpu().clone();
    let out = out.as_out();
    let args = Rock4RecurrenceF64 {
        n,
        ha,
        c,
        f: f.as_in(),
        g1: g1.as_in(),
        g2: g2.map_or_else(|| out.as_in(), |g2| g2.as_in()),
        out,
    };
    // SAFETY: f, g1, g2 and out have n elements (checked above); `&mut out` excludes
    // aliasing with f and g1, and g2 may be out (each thread reads its element before
    // writing it).
    unsafe { gpu.launch(&ROCK4_RECURRENCE_F64, elementwise(n), args)? };
    Ok(())
}

/// A 5-point stencil on `nx x ny` points (`ferrocuda_kernels::rock4::stencil_point` of
/// `kind`), the device side of the test problems.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StencilLaunch(pub(crate) Stencil);

impl StencilLaunch {
    /// Points `nx ny`.
    pub(crate) fn len(&self) -> usize {
        self.0.nx * self.0.ny
    }

    /// Errors unless `v` has [`StencilLaunch::len`] elements.
    fn check(&self, op: &'static str, what: &'static str, v: &impl DeviceSlice<f64>) -> Result<()> {
        check_len(op, what, self.len(), v.len())
    }

    /// `dy <- f(y)`, queued on `dy`'s stream. Errors: lengths other than `nx ny`.
    pub(crate) fn eval(
        &self,
        y: &impl DeviceSlice<f64>,
        dy: &mut impl DeviceSliceMut<f64>,
    ) -> Result<()> {
        self.check("rock4 stencil eval", "y", y)?;
        self.check("rock4 stencil eval", "dy", dy)?;
        let gpu = dy.gpu().clone();
        let args = Rock4StencilEvalF64 {
            st: self.0,
            y: y.as_in(),
            dy: dy.as_out(),
        };
        // SAFETY: y and dy have nx ny elements (checked above), `&mut dy` excludes
        // aliasing; the kernel touches points i < nx, j < ny only.
        unsafe {
            gpu.launch(
                &ROCK4_STENCIL_EVAL_F64,
                stencil_config(self.0.nx, self.0.ny),
                args,
            )?
        };
        Ok(())
    }

    /// The fused stage `out <- ha f(g1) + (1 + c) g1 - c g2` (`g2 = None`: `out` holds
    /// `g_{j-2}`), queued on `out`'s stream. Errors: lengths other than `nx ny`.
    pub(crate) fn stage(
        &self,
        ha: f64,
        c: f64,
        g1: &impl DeviceSlice<f64>,
        g2: Option<&DeviceView<'_, f64>>,
        out: &mut impl DeviceSliceMut<f64>,
    ) -> Result<()> {
        const OP: &str = "rock4 stencil stage";
        self.check(OP, "g1", g1)?;
        self.check(OP, "out", out)?;
        if let Some(g2) = g2 {
            self.check(OP, "g2", g2)?;
        }
        let gpu = out.gpu().clone();
        let out = out.as_out();
        let args = Rock4StencilStageF64 {
            st: self.0,
            ha,
            c,
            g1: g1.as_in(),
            g2: g2.map_or_else(|| out.as_in(), |g2| g2.as_in()),
            out,
        };
        // SAFETY: g1, g2 and out have nx ny elements (checked above); `&mut out`
        // excludes aliasing with g1 (the stencil reads g1's neighbours), and g2 may be
        // out (each thread reads its element before writing it).
        unsafe {
            gpu.launch(
                &ROCK4_STENCIL_STAGE_F64,
                stencil_config(self.0.nx, self.0.ny),
                args,
            )?
        };
        Ok(())
    }

    /// `max_i gershgorin_row(kind, p, y_i)`: block maxima on the device, their maximum
    /// on the host (waits for the stream; the maximum does not depend on the order).
    pub(crate) fn gershgorin(&self, y: &DeviceView<'_, f64>) -> Result<f64> {
        self.check("rock4 gershgorin", "y", y)?;
        let n = self.len();
        let gpu = y.gpu();
        let mut partials = gpu.alloc::<f64>(reduction_blocks(n))?;
        let args = Rock4GershgorinPartialF64 {
            n,
            kind: self.0.kind,
            coeffs: self.0.coeffs,
            y: y.as_in(),
            partials: partials.as_out(),
        };
        // SAFETY: y has n elements (checked above); the reduction_blocks(n) blocks of
        // the launch write one partial each.
        unsafe { gpu.launch(&ROCK4_GERSHGORIN_PARTIAL_F64, reduction_config(n), args)? };
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
    // Loading the kernels (a JIT compile for a PTX-only build) is not integration time.
    crate::gpu::preload(&gpu, &["rock4", "blas1"])?;
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
        // SAFETY: partials holds eb values (allocated in `new`, written by stage one over
        // n elements), scalar has room for the one set.
        unsafe { b1::finish_sum(&self.gpu, eb, &self.partials, self.scalar.as_out(), 1)? };
        let mut out = [0.0];
        self.scalar.copy_to_host(&mut out)?;
        Ok(out[0])
    }

    /// `sqrt(sum (fz_i - fy_i)^2)` with `fz = gb` (the power iteration's distance).
    fn fz_distance(&mut self) -> Result<f64> {
        let n = self.n;
        let args = Rock4DiffSqPartialF64 {
            n,
            a: self.gb.as_in(),
            b: self.fy.as_in(),
            partials: self.partials.as_out(),
        };
        // SAFETY: gb and fy have n elements and partials reduction_blocks(n) (allocated
        // in `new`), one per block of the launch.
        unsafe {
            self.gpu
                .launch(&ROCK4_DIFF_SQ_PARTIAL_F64, reduction_config(n), args)?
        };
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
            let d = self.fz_distance()?;
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
                let args = Rock4ShiftF64 {
                    n,
                    scale: dz / d,
                    y: self.y.as_in(),
                    a: self.gb.as_in(),
                    b: self.fy.as_in(),
                    out: self.ga.as_out(),
                };
                // SAFETY: y, fz = gb, fy and z = ga are distinct buffers of n elements
                // (allocated in `new`).
                unsafe { self.gpu.launch(&ROCK4_SHIFT_F64, elementwise(n), args)? };
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
        let args = Rock4FirstF64 {
            n,
            ha1: h,
            y: self.y.as_in(),
            f: self.fy.as_in(),
            out: self.k2.as_out(),
        };
        // SAFETY (this launch and the one below): y, fy, k2, k3 are distinct buffers of n
        // elements and partials has reduction_blocks(n), one per block (allocated in
        // `new`).
        unsafe { self.gpu.launch(&ROCK4_FIRST_F64, elementwise(n), args)? };
        eval(self.rhs, &mut self.evals, t + h, &self.k2, &mut self.k3)?;
        let args = Rock4ProbePartialF64 {
            n,
            rtol,
            atol,
            ft: self.k3.as_in(),
            fy: self.fy.as_in(),
            y: self.y.as_in(),
            partials: self.partials.as_out(),
        };
        // SAFETY: as above.
        unsafe {
            self.gpu
                .launch(&ROCK4_PROBE_PARTIAL_F64, reduction_config(n), args)?
        };
        Ok((self.finish_sum()? / n as f64).sqrt())
    }

    fn attempt(&mut self, deg: &Degree<'_>, t: f64, h: f64, atol: f64, rtol: f64) -> Result<f64> {
        let n = self.n;
        let gpu = self.gpu.clone();
        let a1 = deg.a1();
        let first = Rock4FirstF64 {
            n,
            ha1: h * a1,
            y: self.y.as_in(),
            f: self.fy.as_in(),
            out: self.ga.as_out(),
        };
        // SAFETY (this launch and the five below): their vectors are distinct buffers of
        // this backend with n elements each and partials has reduction_blocks(n), one per
        // block (allocated in `new`); `&mut` on each output excludes aliasing.
        unsafe { gpu.launch(&ROCK4_FIRST_F64, elementwise(n), first)? };
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
        eval(self.rhs, &mut self.evals, tau, &self.ga, &mut self.k1)?;
        let finish2 = Rock4Finish2F64 {
            n,
            ha21: h * a21,
            u: self.ga.as_in(),
            k1: self.k1.as_in(),
            out: self.gb.as_out(),
        };
        // SAFETY: as for the first launch of `attempt`.
        unsafe { gpu.launch(&ROCK4_FINISH2_F64, elementwise(n), finish2)? };
        let tau2 = h.mul_add(a21, tau);
        eval(self.rhs, &mut self.evals, tau2, &self.gb, &mut self.k2)?;
        let finish3 = Rock4Finish3F64 {
            n,
            ha31: h * a31,
            ha32: h * a32,
            u: self.ga.as_in(),
            k1: self.k1.as_in(),
            k2: self.k2.as_in(),
            out: self.gb.as_out(),
        };
        // SAFETY: as for the first launch of `attempt`.
        unsafe { gpu.launch(&ROCK4_FINISH3_F64, elementwise(n), finish3)? };
        let tau3 = h.mul_add(a31 + a32, tau);
        eval(self.rhs, &mut self.evals, tau3, &self.gb, &mut self.k3)?;
        let finish4 = Rock4Finish4F64 {
            n,
            ha: [h * a41, h * a42, h * a43],
            u: self.ga.as_in(),
            k1: self.k1.as_in(),
            k2: self.k2.as_in(),
            k3: self.k3.as_in(),
            out: self.gb.as_out(),
        };
        // SAFETY: as for the first launch of `attempt`.
        unsafe { gpu.launch(&ROCK4_FINISH4_F64, elementwise(n), finish4)? };
        let tau4 = h.mul_add(a41 + a42 + a43, tau);
        eval(self.rhs, &mut self.evals, tau4, &self.gb, &mut self.k4)?;
        let b = *deg.fpb;
        let solution = Rock4SolutionF64 {
            n,
            hb: [h * b[0], h * b[1], h * b[2], h * b[3]],
            u: self.ga.as_in(),
            k1: self.k1.as_in(),
            k2: self.k2.as_in(),
            k3: self.k3.as_in(),
            k4: self.k4.as_in(),
            out: self.y_new.as_out(),
        };
        // SAFETY: as for the first launch of `attempt`.
        unsafe { gpu.launch(&ROCK4_SOLUTION_F64, elementwise(n), solution)? };
        eval(self.rhs, &mut self.evals, t + h, &self.y_new, &mut self.k5)?;
        let be = *deg.fpbe;
        let error = Rock4ErrorPartialF64 {
            n,
            weights: ErrorWeights {
                hd: [
                    h * (be[0] - b[0]),
                    h * (be[1] - b[1]),
                    h * (be[2] - b[2]),
                    h * (be[3] - b[3]),
                ],
                hbe5: h * be[4],
                atol,
                rtol,
            },
            k1: self.k1.as_in(),
            k2: self.k2.as_in(),
            k3: self.k3.as_in(),
            k4: self.k4.as_in(),
            k5: self.k5.as_in(),
            y_new: self.y_new.as_in(),
            partials: self.partials.as_out(),
        };
        // SAFETY: as for the first launch of `attempt`.
        unsafe { gpu.launch(&ROCK4_ERROR_PARTIAL_F64, reduction_config(n), error)? };
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
    let n = st.len();
    let shared = ferrocuda_kernels::rock4::PERSISTENT_SHARED_BYTES;
    let resident = gpu.resident_blocks(&ROCK4_PERSISTENT_F64, PERSISTENT_THREADS, shared)?;
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
    let (mut yb, mut fa, mut fb, mut ga, mut gb) = (vec()?, vec()?, vec()?, vec()?, vec()?);
    let mut ks = [vec()?, vec()?, vec()?, vec()?];
    let mut v = vec()?;
    let mut partials = gpu.alloc::<f64>(2 * blocks)?;
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
    let mut barrier = gpu.upload(&[0u32])?;
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
    let mut state = gpu.upload(&to_words(&init))?;
    // Bounded by the device's memory (checked above).
    let mut history = gpu.alloc::<u64>(per_launch * log_words)?;
    let mut s = init;
    let mut report = Rock4Report::start(t0);
    let cfg =
        LaunchConfig::blocks(blocks as u32, PERSISTENT_THREADS).with_shared_bytes(shared as u32);
    loop {
        let params = PersistentParams {
            nx: st.0.nx as u64,
            ny: st.0.ny as u64,
            kind: u64::from(st.0.kind),
            coeffs: st.0.coeffs,
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
        };
        let [k1, k2, k3, k4] = &mut ks;
        let args = Rock4PersistentF64 {
            p: params,
            y0: ya.as_out(),
            y1: yb.as_out(),
            fy0: fa.as_out(),
            fy1: fb.as_out(),
            g0: ga.as_out(),
            g1: gb.as_out(),
            k1: k1.as_out(),
            k2: k2.as_out(),
            k3: k3.as_out(),
            k4: k4.as_out(),
            v: v.as_out(),
            partials: partials.as_out(),
            state: state.as_out(),
            history: history.as_out(),
            barrier: barrier.as_out(),
            recf: recf.as_in(),
            fpa: fpa.as_in(),
            fpb: fpb.as_in(),
            fpbe: fpbe.as_in(),
            ms: ms.as_in(),
            starts: starts.as_in(),
        };
        // SAFETY: every buffer above was allocated for this grid: the vectors with n
        // values, partials 2 blocks, the state's words, per_launch logs (pause_at bounds
        // the attempts of this launch), the barrier zeroed; the tables are the degrees'
        // (`coeffs::tables`); the grid is at most `resident` blocks of
        // PERSISTENT_THREADS with PERSISTENT_SHARED_BYTES, as the kernel needs; the state
        // is read back below (which waits) before any buffer is touched again.
        unsafe { gpu.launch_cooperative(&ROCK4_PERSISTENT_F64, cfg, args)? };
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
        o.progress
            .report(super::driver::thousandths(s.ctl.t, t0, t_end - t0), 1000);
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
