//! GMRES on one GPU, every vector resident on the device: the basis, the work vectors
//! and the reduction partials are allocated once before the first step; each Arnoldi
//! step makes one small device-to-host transfer (its dot products, a few hundred bytes)
//! and no allocation. Work runs on the stream of `x`. Same options, report and
//! per-element math as [`super::cpu`].
//!
//! Host waits: one before the first cycle (`|b|`, `|x0|` and the first residual in one
//! download); then per cycle one per host-stepped step and one for its true residual,
//! or, for a cycle run on the device ([`CycleControl::Device`], [`CycleControl::Fused`])
//! without a preconditioner, one per look and none more: the solution update and the
//! next true residual are queued on the device behind the cycle (the least-squares
//! solve by [`cyc::solve`] on one device thread), and the state comes back with the
//! residual's norm in one download.

use std::time::Instant;

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, EventTimer, Gpu, LaunchConfig, NcclScalar, Snapshots,
};
use ferrocuda_kernels::blas1::reduction_blocks;
use ferrocuda_kernels::krylov::cycle::{self as cyc, Header};
use ferrocuda_kernels::krylov::fused::{
    CYCLE_PHASES, CYCLE_THREADS, CycleKernels, CycleSbellScalars, GmresCycleSbell,
    cycle_shared_bytes,
};
use ferrocuda_kernels::krylov::{
    BLOCK, BasisCombine, BasisCombineCb, BasisNarrow, BasisWiden, CompressedBasis,
    CompressedBasisKernels, DOTS_CHUNK, GmresDcgs2Step, GmresMgsStep, GmresPipePass,
    GmresSolutionCoefficients, GmresSolutionUpdate, GsDotsPartial, GsDotsPartialCb, GsUpdate,
    GsUpdateCb, GsUpdateDevice, GsUpdateDeviceScalars, GsUpdateScalars, KrylovKernels,
    MgsEliminate, MgsNormalize, PIPE_DOTS, PIPE_LAST, PIPE_THREADS, PIPE_UPDATE, PipeScalars,
    dcgs2_scratch_len, device_coef_len, pipe_sets, pipe_shared_bytes, solution_scratch_len,
};
use ferrocuda_kernels::spmv::sbell_row_threads;
use ferrocuda_kernels::{RealScalar, Scalar};

use super::arnoldi::{self, C, PipeDots, Space, from_c, to_c};
use super::cpu::{agree, check_system};
use super::{
    BasisStorage, CycleControl, CyclePhases, DeviceLinOp, FUSED_AUTO_MAX_ROWS,
    FUSED_FALLBACK_CHECK_EVERY, GmresOptions, GmresReport, Orthogonalization, SbellRef,
};
use crate::blas1::{Element, gpu as b1};
use crate::comm::Communicator;
use crate::error::{Error, Result, check_device};
use crate::sparse::gpu::DeviceSbell;

/// Scalar types GMRES runs on the GPU for: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub trait KrylovElement:
    Element<Real: Element + NcclScalar + CycleKernels<Self>>
    + KrylovKernels
    + CycleKernels<Self>
    + CompressedBasis<Low: Element + CompressedBasisKernels<Self>>
{
}
impl<T> KrylovElement for T where
    T: Element<Real: Element + NcclScalar + CycleKernels<T>>
        + KrylovKernels
        + CycleKernels<T>
        + CompressedBasis<Low: Element + CompressedBasisKernels<T>>
{
}

/// Solves `A x = b` by GMRES(m) on the GPU with the right preconditioner `m` (`None`:
/// none); `x` holds the initial guess and receives the solution. Errors (with `x`
/// unchanged): shapes that do not fit (`A` square), operands on different devices,
/// NaN or infinity in `b` or `x`, invalid options, a non-finite residual.
pub fn gmres<V: KrylovElement>(
    a: &dyn DeviceLinOp<V>,
    m: Option<&dyn DeviceLinOp<V>>,
    b: &DeviceBuffer<V>,
    x: &mut DeviceBuffer<V>,
    opts: &GmresOptions,
) -> Result<GmresReport> {
    gmres_with_progress(a, m, b, x, opts, None)
}

/// [`gmres`] calling `progress(iteration, estimated relative residual)` after every step.
pub fn gmres_with_progress<V: KrylovElement>(
    a: &dyn DeviceLinOp<V>,
    m: Option<&dyn DeviceLinOp<V>>,
    b: &DeviceBuffer<V>,
    x: &mut DeviceBuffer<V>,
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    single(a, None, m, b, x, opts, progress)
}

/// [`gmres`] whose Arnoldi steps apply `a`, a lower-precision copy of `a_true` (e.g. the
/// matrix with its values in f32 on f64 vectors), while every restart's true residual,
/// and so the convergence test and the next cycle's start, is `b - a_true x`: each cycle
/// is a step of iterative refinement, and the solve meets the tolerance for `a_true`. A
/// copy too far from `a_true` ends in [`super::StopReason::Stagnation`] (the caller may
/// then finish with `a_true` itself). Errors as [`gmres`], and `a_true` of another shape
/// or on another device.
pub fn gmres_refined<V: KrylovElement>(
    a: &dyn DeviceLinOp<V>,
    a_true: &dyn DeviceLinOp<V>,
    m: Option<&dyn DeviceLinOp<V>>,
    b: &DeviceBuffer<V>,
    x: &mut DeviceBuffer<V>,
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    single(a, Some(a_true), m, b, x, opts, progress)
}

/// [`gmres_with_progress`] (`a_true` `None`: `a` itself) and [`gmres_refined`].
fn single<V: KrylovElement>(
    a: &dyn DeviceLinOp<V>,
    a_true: Option<&dyn DeviceLinOp<V>>,
    m: Option<&dyn DeviceLinOp<V>>,
    b: &DeviceBuffer<V>,
    x: &mut DeviceBuffer<V>,
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    let started = Instant::now();
    let (mr, mc) = m.map_or((a.nrows(), a.ncols()), |m| (m.nrows(), m.ncols()));
    let n = check_system(a.nrows(), a.ncols(), mr, mc, b.len(), x.len())?;
    if let Some(t) = a_true {
        super::cpu::check_true_shape(t.nrows(), t.ncols(), n)?;
    }
    opts.validate()?;
    let gpu = x.gpu().clone();
    for (what, other) in [("b", b.gpu()), ("the operator", a.gpu())]
        .into_iter()
        .chain(a_true.map(|t| ("the full-precision operator", t.gpu())))
        .chain(m.map(|m| ("the preconditioner", m.gpu())))
    {
        check_device("gmres", what, &gpu, other)?;
    }
    // The operators may run on other streams of the device: order them after x and b.
    gpu.wait_for(a.gpu())?;
    if let Some(t) = a_true {
        gpu.wait_for(t.gpu())?;
    }
    preload(&gpu, m.is_some())?;
    let mut space = GpuSpace::new(&gpu, a, m, n, opts, b, x)?;
    space.true_op = a_true.unwrap_or(a);
    space.begin_solve()?;
    let report = arnoldi::run(&mut space, opts, progress, started)?;
    x.copy_from_device(&space.x)?;
    Ok(report)
}

/// GPU GMRES on one rank of a distributed system: `a` maps this rank's part of `x` to
/// its part of `y` on this rank's GPU (e.g.
/// [`crate::distributed::DeviceDistributedBcsr`]), `m` is rank-local, `b` and `x` are
/// this rank's parts. The dot products of each step are downloaded as usual and summed
/// over the ranks through `comm` before the host uses them, so every rank takes the same
/// steps; `arnoldi::run` is unchanged. CGS2 or pipelined ([`Orthogonalization::Pipelined`], whose all-reduce overlaps the
/// next operator application on the host transport); MGS would need one all-reduce per
/// basis vector inside a step. Collective; errors as [`gmres`], on every rank when any
/// rank's input is invalid.
pub fn gmres_distributed<V: KrylovElement>(
    comm: &dyn Communicator,
    a: &dyn DeviceLinOp<V>,
    m: Option<&dyn DeviceLinOp<V>>,
    b: &DeviceBuffer<V>,
    x: &mut DeviceBuffer<V>,
    opts: &GmresOptions,
) -> Result<GmresReport> {
    let started = Instant::now();
    let local = (|| {
        if opts.orthogonalization == super::Orthogonalization::Mgs {
            return Err(Error::InvalidArgument {
                op: "gmres",
                reason: "distributed GPU GMRES orthogonalises by CGS2 or pipelined (MGS needs an all-reduce per basis vector)".into(),
            });
        }
        if opts.basis == BasisStorage::F32 {
            return Err(Error::InvalidArgument {
                op: "gmres",
                reason: "distributed GPU GMRES keeps its basis in full precision (a basis stored in f32 runs on one device)".into(),
            });
        }
        let (mr, mc) = m.map_or((a.nrows(), a.ncols()), |m| (m.nrows(), m.ncols()));
        let n = check_system(a.nrows(), a.ncols(), mr, mc, b.len(), x.len())?;
        opts.validate()?;
        let gpu = x.gpu();
        for (what, other) in [("b", b.gpu()), ("the operator", a.gpu())]
            .into_iter()
            .chain(m.map(|m| ("the preconditioner", m.gpu())))
        {
            check_device("gmres", what, gpu, other)?;
        }
        gpu.wait_for(a.gpu())?;
        check_finite(b, x)?;
        preload(gpu, m.is_some())?;
        let mut space = GpuSpace::new(gpu, a, m, n, opts, b, x)?;
        // Distributed cycles are stepped from the host, and timed.
        space.comm = Some(comm);
        space.timed = true;
        Ok::<_, Error>(space)
    })();
    // Agree on failure first (the workspace included): a rank that stopped would leave
    // the others waiting.
    let mut space = agree(comm, local)?;
    let report = arnoldi::run(&mut space, opts, None, started)?;
    x.copy_from_device(&space.x)?;
    Ok(report)
}

/// Loads the modules GMRES launches kernels of (the library's operators: SpMV, and the
/// Jacobi preconditioners where there is one), so that the reported times do not
/// include loading them.
fn preload(gpu: &Gpu, precond: bool) -> Result<()> {
    crate::gpu::preload(gpu, &["blas1", "krylov", "spmv"])?;
    if precond {
        crate::gpu::preload(gpu, &["precond"])?;
    }
    Ok(())
}

/// The launch of a cycle step kernel: one block of 256 threads (at least `m + 1` for
/// the parallel phases up to `m = 255`) and the dynamic shared memory it is given, in
/// `f64` (the `staged` argument): the DCGS2 scratch ([`dcgs2_scratch_len`]) and the
/// cycle's state where both fit the default 48 KiB (restart lengths up to 36), else the
/// scratch alone (the state then stays in global memory).
fn step_config(m: usize) -> (LaunchConfig, usize) {
    const THREADS: u32 = 256;
    let scratch = dcgs2_scratch_len(m);
    let full = scratch + cyc::state_len(m);
    let len = if full * size_of::<f64>() <= 48 * 1024 {
        full
    } else {
        scratch
    };
    (
        LaunchConfig::blocks(1, THREADS).with_shared_bytes((len * size_of::<f64>()) as u32),
        len,
    )
}

/// `f64` of the device state buffer of restart length `m`: the cycle's state
/// ([`cyc::state_len`]), the one-kernel cycle's phase times ([`CYCLE_PHASES`], after the
/// state of the cycle's own length), and last the norm of the true residual that the
/// device restart leaves there (in the vectors' real type, in the slot's first bytes).
fn state_buffer_len(m: usize) -> usize {
    cyc::state_len(m) + CYCLE_PHASES + 1
}

/// `Err` when `b` or `x0` holds NaN or infinity (their norms say so).
fn check_finite<V: KrylovElement>(b: &DeviceBuffer<V>, x: &DeviceBuffer<V>) -> Result<()> {
    check_norms(b1::nrm2(b)?.to_f64(), b1::nrm2(x)?.to_f64())
}

/// `Err` naming `b` or `x0` where its norm is not finite.
fn check_norms(b: f64, x0: f64) -> Result<()> {
    for (what, norm) in [("b", b), ("x0", x0)] {
        if !norm.is_finite() {
            return Err(Error::InvalidArgument {
                op: "gmres",
                reason: format!("{what} holds NaN or infinity (its norm is {norm})"),
            });
        }
    }
    Ok(())
}

struct GpuSpace<'a, V: KrylovElement> {
    gpu: Gpu,
    /// The ranks of a distributed solve (`None`: one device owns the whole vectors).
    comm: Option<&'a dyn Communicator>,
    a: &'a dyn DeviceLinOp<V>,
    /// The operator of the true residual at restarts: `a`, or the full-precision matrix
    /// of which `a` is a lower-precision copy ([`gmres_refined`]).
    true_op: &'a dyn DeviceLinOp<V>,
    m: Option<&'a dyn DeviceLinOp<V>>,
    n: usize,
    restart: usize,
    b: &'a DeviceBuffer<V>,
    x: DeviceBuffer<V>,
    /// The iterate with the smallest true residual so far.
    best: DeviceBuffer<V>,
    /// The basis, `restart + 1` columns of `n` (empty where `low` holds it).
    basis: DeviceBuffer<V>,
    /// The basis stored in `V::Low` ([`BasisStorage::F32`], a double-precision `V`).
    low: Option<DeviceBuffer<V::Low>>,
    w: DeviceBuffer<V>,
    z: DeviceBuffer<V>,
    partials: DeviceBuffer<V>,
    dots_out: DeviceBuffer<V>,
    dots_host: Vec<V>,
    /// `a` in `[0, m)`, `b` in `[m, 2m)` (DCGS2); `y` in `[0, k)` (solution update).
    coef: DeviceBuffer<V>,
    coef_host: Vec<V>,
    /// MGS column `h_0..=h_{k+1}`.
    h: DeviceBuffer<V>,
    /// A pipelined solve's second basis `Z = A M^{-1} V` (empty otherwise).
    zbasis: DeviceBuffer<V>,
    /// A pipelined solve's dots, copied to the host without waiting for the operator
    /// queued behind them, and its coefficients' page-locked source (the copy engine
    /// reads them when the stream gets there, so the host does not wait for the operator
    /// to upload them); allocated on first use.
    pipe_dots: Option<(Snapshots<V>, ferrocuda_host::PinnedBuffer<V>)>,
    /// Blocks of the pipelined pass: one wave of resident blocks (the columns it reads
    /// twice stay in L1 between the reads).
    pipe_blocks: usize,
    timers: [EventTimer; 4],
    pending: [bool; 4],
    ms: [f64; 4],
    /// Who takes each step's algebra.
    control: CycleControl,
    /// Whether the phases are timed (not inside a cycle run on the device).
    timed: bool,
    /// A cycle run on the device (allocated on its first use): its state
    /// ([`cyc::state_len`] of the restart length), its current step's update coefficients
    /// ([`device_coef_len`]), and copies of the state's header taken while it runs.
    on_device: Option<DeviceCycle<V>>,
    /// The phases of the one-kernel cycles so far.
    phases: CyclePhases,
    /// `|b|` and `|b - A x|` (with `V_0 = b - A x`) where the device computed them with
    /// other work and the host already has them: [`GpuSpace::begin_solve`] and the restart
    /// queued behind a device cycle. Taken by the next `rhs_norm` and `residual`.
    known_rhs_norm: Option<f64>,
    known_residual: Option<f64>,
    /// Whether the restart queued behind the last device cycle already added `V y` to `x`
    /// (the next `update_solution`, with the same `y`, then has nothing to do).
    solution_updated: bool,
    /// The one-kernel cycle's grid for a restart length `m`: `(m, Some((blocks, shared
    /// bytes)))`, or `(m, None)` where the device cannot hold it (the driver's answers
    /// do not change within a solve).
    fused_grid: Option<(usize, Option<(u32, u32)>)>,
}

impl<V: KrylovElement> Drop for GpuSpace<'_, V> {
    fn drop(&mut self) {
        // The page-locked buffers back to the device's cache for the next solve.
        if let Some((snaps, coef)) = self.pipe_dots.take() {
            // The last upload from `coef` ran before the last snapshot, waited for here.
            if snaps.release() {
                self.gpu.give_pinned(coef);
            }
        }
    }
}

struct DeviceCycle<V> {
    state: DeviceBuffer<f64>,
    coef: DeviceBuffer<V>,
    header: Option<Snapshots<f64>>,
    /// The grid barrier of the one-kernel cycle.
    barrier: DeviceBuffer<u32>,
}

const SPMV: usize = 0;
const DOTS: usize = 1;
const UPDATE: usize = 2;
const PRECOND: usize = 3;
const ALL: [usize; 4] = [SPMV, DOTS, UPDATE, PRECOND];

impl<'a, V: KrylovElement> GpuSpace<'a, V> {
    /// The workspace of a solve from `x0` ([`GmresOptions::basis_vectors`] basis vectors,
    /// `x`, `best`, `w`, `z` and the reduction partials), checked against the device's
    /// free memory before allocating.
    fn new(
        gpu: &Gpu,
        a: &'a dyn DeviceLinOp<V>,
        m: Option<&'a dyn DeviceLinOp<V>>,
        n: usize,
        opts: &GmresOptions,
        b: &'a DeviceBuffer<V>,
        x0: &DeviceBuffer<V>,
    ) -> Result<Self> {
        let eb = reduction_blocks(n);
        let basis = opts.basis_vectors();
        // A compressed basis only where it is smaller (a double-precision V).
        let compressed = opts.basis == BasisStorage::F32 && size_of::<V::Low>() < size_of::<V>();
        let basis_bytes = crate::alloc::bytes_of(
            basis as u128 * n as u128,
            if compressed {
                size_of::<V::Low>()
            } else {
                size_of::<V>()
            },
        );
        let pipelined = opts.orthogonalization == Orthogonalization::Pipelined;
        let zvectors = if pipelined { basis } else { 0 };
        if pipelined && pipe_shared_bytes(basis - 1, PIPE_THREADS, size_of::<V>()) > 48 * 1024 {
            return Err(Error::InvalidArgument {
                op: "gmres",
                reason: format!(
                    "pipelined GMRES keeps its dots in 48 KiB of shared memory: restart {} is too long for this scalar type (at most {})",
                    opts.restart,
                    48 * 1024 / (PIPE_THREADS / 32 * size_of::<V>()) - 3
                ),
            });
        }
        let elems = 4 * n as u128 + 2 * basis as u128 * eb as u128 + zvectors as u128 * n as u128;
        crate::alloc::check_device_bytes(
            gpu,
            &opts.workspace_name(n),
            crate::alloc::bytes_of(elems, size_of::<V>()).saturating_add(basis_bytes),
        )?;
        // As many blocks as are resident on the device at once (one wave: the occupancy
        // calculator's answer at the pass's registers and its largest shared memory), at
        // most one per reduction block (the partials' room).
        let pipe_blocks = if pipelined {
            let shared = pipe_shared_bytes(basis - 1, PIPE_THREADS, size_of::<V>());
            let resident = gpu.resident_blocks(&V::GMRES_PIPE_PASS, PIPE_THREADS as u32, shared)?;
            eb.min(resident.max(1))
        } else {
            eb
        };
        // The check bounds every size below by the device's memory.
        let restart = basis - 1;
        let mut x = gpu.alloc::<V>(n)?;
        x.copy_from_device(x0)?;
        Ok(GpuSpace {
            gpu: gpu.clone(),
            comm: None,
            a,
            true_op: a,
            m,
            n,
            restart,
            b,
            x,
            best: gpu.alloc(n)?,
            basis: gpu.alloc(if compressed { 0 } else { basis * n })?,
            low: if compressed {
                Some(gpu.alloc(basis * n)?)
            } else {
                None
            },
            w: gpu.alloc(n)?,
            z: gpu.alloc(n)?,
            partials: gpu.alloc(2 * (restart + 1) * eb)?,
            dots_out: gpu.alloc(2 * (restart + 1))?,
            dots_host: vec![V::ZERO; 2 * (restart + 1)],
            coef: gpu.alloc(2 * restart)?,
            coef_host: vec![V::ZERO; 2 * restart],
            h: gpu.alloc(restart + 2)?,
            zbasis: gpu.alloc(zvectors * n)?,
            pipe_dots: None,
            pipe_blocks,
            timers: [gpu.timer()?, gpu.timer()?, gpu.timer()?, gpu.timer()?],
            pending: [false; 4],
            ms: [0.0; 4],
            control: opts.cycle_control,
            // Inside device cycles nothing is timed (no event waits): the total only; nor
            // in pipelined steps (a wait for the operator would end its overlap).
            timed: matches!(opts.cycle_control, CycleControl::Host | CycleControl::Auto)
                && !pipelined,
            on_device: None,
            phases: CyclePhases::default(),
            known_rhs_norm: None,
            known_residual: None,
            solution_updated: false,
            fused_grid: None,
        })
    }

    /// The solve's only wait before its first cycle: `|b|`, `|x0|` and the first residual
    /// `V_0 = b - A x0` with its norm, queued together and downloaded at once. Errors:
    /// `b` or `x0` not finite (a single device; distributed solves check with
    /// [`check_finite`] before they agree).
    fn begin_solve(&mut self) -> Result<()> {
        let mut norms = self.gpu.alloc::<V::Real>(3)?;
        b1::nrm2_into(self.b, &mut norms.view_mut(0..1)?)?;
        b1::nrm2_into(&self.x, &mut norms.view_mut(1..2)?)?;
        self.queue_residual()?;
        b1::nrm2_into(&self.residual_vector()?, &mut norms.view_mut(2..3)?)?;
        let v: Vec<f64> = norms.download()?.into_iter().map(|v| v.to_f64()).collect();
        check_norms(v[0], v[1])?;
        self.known_rhs_norm = Some(v[0]);
        self.known_residual = Some(v[2]);
        Ok(())
    }

    /// `V_0 <- b - A x`, queued. With a compressed basis the residual is computed in
    /// `w` (its norm is taken there, in full precision) and `V_0` is its rounding.
    fn queue_residual(&mut self) -> Result<()> {
        let n = self.n;
        let op = self.true_op;
        self.start(SPMV)?;
        {
            let mut r = match self.low {
                Some(_) => self.w.view_mut(..)?,
                None => self.basis.view_mut(..n)?,
            };
            op.apply_unchecked(&self.x.view(..)?, &mut r)?;
        }
        self.stop(SPMV)?;
        let mut r = match self.low {
            Some(_) => self.w.view_mut(..)?,
            None => self.basis.view_mut(..n)?,
        };
        b1::axpby(V::ONE, self.b, -V::ONE, &mut r)?;
        let grid = self.grid();
        if let Some(low) = &mut self.low {
            let mut first = low.view_mut(..n)?;
            let args = BasisNarrow {
                n,
                x: self.w.as_in(),
                y: first.as_out(),
            };
            // SAFETY: the kernel reads w and writes column 0 of the basis (n elements
            // each, the view checked it).
            unsafe { self.gpu.launch(&V::Low::BASIS_NARROW, grid, args)? };
        }
        Ok(())
    }

    /// Where [`queue_residual`](Self::queue_residual) left the full-precision residual.
    fn residual_vector(&self) -> Result<ferrocuda_host::DeviceView<'_, V>> {
        Ok(match self.low {
            Some(_) => self.w.view(..)?,
            None => self.basis.view(..self.n)?,
        })
    }

    fn start(&mut self, t: usize) -> Result<()> {
        if self.timed {
            self.timers[t].start()?;
        }
        Ok(())
    }

    fn stop(&mut self, t: usize) -> Result<()> {
        if self.timed {
            self.timers[t].stop()?;
            self.pending[t] = true;
        }
        Ok(())
    }

    /// Adds the elapsed time of timer `t` where one is pending (after a sync it costs
    /// no wait).
    fn collect(&mut self, t: usize) -> Result<()> {
        if self.pending[t] {
            self.ms[t] += self.timers[t].elapsed_ms()?;
            self.pending[t] = false;
        }
        Ok(())
    }

    /// `w <- A M^{-1} V_k`.
    fn apply(&mut self, k: usize) -> Result<()> {
        let column = k * self.n..(k + 1) * self.n;
        if let Some(low) = &self.low {
            // V_k widened into the operator's (or the preconditioner's) input.
            let grid = self.grid();
            let input = match self.m {
                Some(_) => &mut self.w,
                None => &mut self.z,
            };
            let vk = low.view(column)?;
            let args = BasisWiden {
                n: self.n,
                x: vk.as_in(),
                y: input.as_out(),
            };
            // SAFETY: the kernel reads column k of the basis and writes w or z (n elements
            // each; the view checked the column).
            unsafe { self.gpu.launch(&V::Low::BASIS_WIDEN, grid, args)? };
            if let Some(m) = self.m {
                self.start(PRECOND)?;
                m.apply_unchecked(&self.w.view(..)?, &mut self.z.view_mut(..)?)?;
                self.stop(PRECOND)?;
            }
            self.start(SPMV)?;
            self.a
                .apply_unchecked(&self.z.view(..)?, &mut self.w.view_mut(..)?)?;
            return self.stop(SPMV);
        }
        if let Some(m) = self.m {
            self.start(PRECOND)?;
            m.apply_unchecked(&self.basis.view(column.clone())?, &mut self.z.view_mut(..)?)?;
            self.stop(PRECOND)?;
        }
        self.start(SPMV)?;
        {
            let v = match self.m {
                Some(_) => self.z.view(..)?,
                None => self.basis.view(column)?,
            };
            self.a.apply_unchecked(&v, &mut self.w.view_mut(..)?)?;
        }
        self.stop(SPMV)
    }

    /// DCGS2 step `k`'s dots, left in `dots_out` (`V_j^H u`, then `V_j^H w`, `j <= k`;
    /// where `apply`, `w <- A M^{-1} V_k` first), summed over the ranks where NCCL sums
    /// on the devices; returns `k + 1` and whether it did.
    fn queue_dots(&mut self, k: usize, apply: bool) -> Result<(usize, bool)> {
        if apply {
            self.apply(k)?;
        }
        let n = self.n;
        let k1 = k + 1;
        let eb = reduction_blocks(n);
        let groups = k1.div_ceil(DOTS_CHUNK);
        let grid = self.grid();
        self.start(DOTS)?;
        let shared = (2 * DOTS_CHUNK * BLOCK / 32 * size_of::<V>()) as u32;
        let cfg =
            LaunchConfig::blocks((eb * groups) as u32, BLOCK as u32).with_shared_bytes(shared);
        let sets = 2 * k1;
        if let Some(low) = &self.low {
            let u = low.view(k * n..(k + 1) * n)?;
            if !apply {
                // The second set is V^H u again: u widened into w (free at a cycle's end).
                let args = BasisWiden {
                    n,
                    x: u.as_in(),
                    y: self.w.as_out(),
                };
                // SAFETY: column k of the basis in, w out (n elements each).
                unsafe { self.gpu.launch(&V::Low::BASIS_WIDEN, grid, args)? };
            }
            let args = GsDotsPartialCb {
                n,
                k1,
                u: u.as_in(),
                w: self.w.as_in(),
                basis: low.as_in(),
                ld: n,
                partials: self.partials.as_out(),
            };
            // SAFETY: as the full-precision launch below, over the compressed basis
            // ((restart + 1) n elements).
            unsafe { self.gpu.launch(&V::Low::GS_DOTS_PARTIAL_CB, cfg, args)? };
        } else {
            let u = self.basis.view(k * n..(k + 1) * n)?;
            let args = GsDotsPartial {
                n,
                k1,
                u: u.as_in(),
                // Without a new vector (`apply` false) the second set is `V^H u` again.
                w: if apply { self.w.as_in() } else { u.as_in() },
                basis: self.basis.as_in(),
                ld: n,
                partials: self.partials.as_out(),
            };
            // SAFETY: the kernel reads columns 0..=k of the basis ((restart + 1) n
            // elements, k <= restart), u (column k) and w (n elements each), and writes
            // 2 k1 eb <= 2 (restart + 1) eb = partials.len() partials: all sizes fixed in
            // `GpuSpace::new` from n and the restart length.
            unsafe { self.gpu.launch(&V::GS_DOTS_PARTIAL, cfg, args)? };
        }
        // SAFETY: partials holds the 2 k1 sets of eb values written above; dots_out has
        // room for 2 (restart + 1) >= 2 k1 sums (sizes from `GpuSpace::new`).
        unsafe { b1::finish_sum(&self.gpu, eb, &self.partials, self.dots_out.as_out(), sets)? };
        self.stop(DOTS)?;
        let on_devices = self.sum_dots_on_devices(sets)?;
        Ok((k1, on_devices))
    }

    /// Sums the first `sets` values of `dots_out` over the ranks on the devices where the
    /// communicator does that (NCCL: complex values as their parts), so the host downloads
    /// the global dots with no host-side exchange; returns whether it did.
    fn sum_dots_on_devices(&mut self, sets: usize) -> Result<bool> {
        let nccl = self
            .comm
            .filter(|c| c.sums_on_device())
            .and_then(|c| c.nccl());
        if let Some(nc) = nccl {
            nc.all_reduce_sum(&mut self.dots_out.view_mut(..sets)?.cast::<V::Real>()?)?;
        }
        Ok(nccl.is_some())
    }

    /// Sums downloaded dots over the ranks on the host, unless the devices did
    /// (`on_devices`) or there is one rank.
    fn sum_dots_on_host(&self, c: &mut [C], on_devices: bool) -> Result<()> {
        if let (Some(comm), false) = (self.comm, on_devices) {
            let mut flat: Vec<f64> = c.iter().flat_map(|z| [z.re, z.im]).collect();
            comm.all_reduce_sum(&mut flat)?;
            for (z, p) in c.iter_mut().zip(flat.chunks_exact(2)) {
                *z = C::new(p[0], p[1]);
            }
        }
        Ok(())
    }

    /// `dst <- A M^{-1} src` (`M^{-1}` into `z` first where there is a preconditioner).
    fn apply_to(
        a: &dyn DeviceLinOp<V>,
        m: Option<&dyn DeviceLinOp<V>>,
        z: &mut DeviceBuffer<V>,
        src: &ferrocuda_host::DeviceView<'_, V>,
        dst: &mut ferrocuda_host::DeviceViewMut<'_, V>,
    ) -> Result<()> {
        match m {
            Some(m) => {
                m.apply_unchecked(src, &mut z.view_mut(..)?)?;
                a.apply_unchecked(&z.view(..)?, dst)?;
            }
            None => a.apply_unchecked(src, dst)?,
        }
        Ok(())
    }

    /// MGS step `k` on the device: `w <- A M^{-1} V_k`, `h_j = V_j^H w` and `w <- w - h_j
    /// V_j` for `j <= k` in order, `h_{k+1} = |w|^2`, `V_{k+1} <- w / |w|`.
    fn queue_mgs(&mut self, k: usize) -> Result<()> {
        self.apply(k)?;
        let n = self.n;
        let cfg = self.grid();
        self.start(DOTS)?;
        for j in 0..=k {
            let vj = self.basis.view(j * n..(j + 1) * n)?;
            {
                let mut hj = self.h.view_mut(j..j + 1)?;
                b1::dot_into(&vj, &self.w, &mut hj)?;
            }
            let args = MgsEliminate {
                n,
                h: self.h.as_in(),
                j,
                x: vj.as_in(),
                w: self.w.as_out(),
            };
            // SAFETY: the kernel reads h[j] (j <= k < restart + 2 = h.len()) and x = column
            // j, and updates w (n elements each; sizes from `GpuSpace::new`).
            unsafe { self.gpu.launch(&V::MGS_ELIMINATE, cfg, args)? };
        }
        {
            let mut hk = self.h.view_mut(k + 1..k + 2)?;
            b1::dot_into(&self.w, &self.w, &mut hk)?;
        }
        {
            let mut next = self.basis.view_mut((k + 1) * n..(k + 2) * n)?;
            let args = MgsNormalize {
                n,
                h: self.h.as_in(),
                j: k + 1,
                x: self.w.as_in(),
                y: next.as_out(),
            };
            // SAFETY: the kernel reads h[k + 1] (< restart + 2 = h.len()) and w, and writes
            // column k + 1 <= restart of the basis (n elements each; the view checked it).
            unsafe { self.gpu.launch(&V::MGS_NORMALIZE, cfg, args)? };
        }
        self.stop(DOTS)
    }

    /// Runs a cycle on the device ([`Space::device_cycle`]); `check_every` as in
    /// [`CycleControl::Device`]. Returns the final state.
    fn queue_cycle(
        &mut self,
        orthogonalization: Orthogonalization,
        m: usize,
        check_every: usize,
        start: &[f64],
    ) -> Result<Vec<f64>> {
        let last = match orthogonalization {
            Orthogonalization::Cgs2 => m,
            Orthogonalization::Mgs => m - 1,
            Orthogonalization::Pipelined => {
                return Err(Error::InvalidArgument {
                    op: "gmres",
                    reason: "pipelined cycles are stepped from the host".into(),
                });
            }
        };
        let dc = self.device_cycle_buffers()?;
        // SAFETY: `start` is a Vec (pageable): the driver stages it before returning.
        unsafe { dc.state.copy_from_host_staged(start)? };
        let mut previous = None;
        for k in 0..=last {
            match orthogonalization {
                Orthogonalization::Cgs2 => self.queue_dcgs2_step(k, m)?,
                _ => self.queue_mgs_step(k, m)?,
            }
            if check_every > 0 && (k + 1) % check_every == 0 && k < last {
                // Look at the check before this one: the GPU still has the steps since.
                let dc = self.on_device.as_mut().expect("allocated above");
                // Pinned host memory is slow to allocate: only cycles that look need it.
                let header = match &mut dc.header {
                    Some(h) => h,
                    None => dc.header.insert(self.gpu.snapshots(Header::LEN, 2)?),
                };
                let slot = header.take(&dc.state.view(..Header::LEN)?)?;
                if let Some(p) = previous.replace(slot)
                    && cyc::done(header.read(p)?)
                {
                    break;
                }
            }
        }
        self.finish_on_device()
    }

    /// DCGS2 step `k` of a cycle of `m` steps on the device: the dots, the step's algebra
    /// on one thread, the update (skipped on the device where the cycle has ended).
    fn queue_dcgs2_step(&mut self, k: usize, m: usize) -> Result<()> {
        self.queue_dots(k, k < m)?;
        let n = self.n;
        let grid = self.grid();
        let dc = self.on_device.as_mut().expect("allocated by queue_cycle");
        let (cfg, staged) = step_config(m);
        let args = GmresDcgs2Step {
            k,
            staged,
            dots: self.dots_out.as_in(),
            state: dc.state.as_out(),
            coef: dc.coef.as_out(),
        };
        // SAFETY: the kernel reads 2 (k + 1) <= 2 (restart + 1) = dots_out.len() dots and
        // the state (sized `cyc::state_len(restart)` >= `state_len(m)`, the layout its
        // header names), and writes 2 m + 2 <= coef.len() coefficients.
        unsafe { self.gpu.launch(&V::GMRES_DCGS2_STEP, cfg, args)? };
        if k < m {
            let args = GsUpdateDevice {
                p: GsUpdateDeviceScalars { n, k, ld: n, m },
                coef: dc.coef.as_in(),
                state: dc.state.as_in(),
                w: self.w.as_in(),
                basis: self.basis.as_out(),
            };
            // SAFETY: as `update`'s kernel, with its coefficients at coef[0..2 m + 2]
            // (m <= restart) and the state's header read.
            unsafe { self.gpu.launch(&V::GS_UPDATE_DEVICE, grid, args)? };
        }
        Ok(())
    }

    /// MGS step `k` on the device: the vector work, then the step's algebra on one thread.
    fn queue_mgs_step(&mut self, k: usize, m: usize) -> Result<()> {
        self.queue_mgs(k)?;
        let dc = self.on_device.as_mut().expect("allocated by queue_cycle");
        let (cfg, staged) = step_config(m);
        let args = GmresMgsStep {
            k,
            staged,
            h: self.h.as_in(),
            state: dc.state.as_out(),
        };
        // SAFETY: the kernel reads h[0..=k + 1] (k < restart, h has restart + 2) and the
        // state (as in `queue_dcgs2_step`).
        unsafe { self.gpu.launch(&V::GMRES_MGS_STEP, cfg, args) }?;
        Ok(())
    }

    fn grid(&self) -> LaunchConfig {
        LaunchConfig::for_elements(self.n, BLOCK as u32)
    }

    /// Runs a DCGS2 cycle of `m` steps from the state `start` in one cooperative kernel
    /// ([`CycleControl::Fused`]), then its restart ([`finish_on_device`](Self::finish_on_device)),
    /// and returns its final state; `None` (nothing queued) where the operator is not a
    /// device SBELL matrix or the kernel cannot hold the cycle.
    fn fused_cycle(&mut self, m: usize, start: &[f64]) -> Result<Option<Vec<f64>>> {
        let a = self.a;
        let launched = match a.as_sbell() {
            None => false,
            Some(SbellRef::Same(s)) => self.launch_fused::<V>(s, m, start)?,
            Some(SbellRef::Real(s)) => self.launch_fused::<V::Real>(s, m, start)?,
        };
        if !launched {
            return Ok(None);
        }
        let end = self.finish_on_device()?;
        // The kernel's phase times follow the state, in nanoseconds.
        let at = cyc::state_len(m);
        let ns = |p: usize| end[at + p] * 1e-9;
        self.ms[SPMV] += ns(0) * 1e3;
        self.ms[DOTS] += (1..CYCLE_PHASES).map(ns).sum::<f64>() * 1e3;
        let ph = &mut self.phases;
        (ph.dots, ph.sums, ph.algebra, ph.update) = (
            ph.dots + ns(1),
            ph.sums + ns(2),
            ph.algebra + ns(3),
            ph.update + ns(4),
        );
        Ok(Some(end))
    }

    /// The end of a cycle run on the device: without a preconditioner, queues its
    /// restart behind it (`y` by [`cyc::solve`] on one device thread, `x <- x + V y`,
    /// `V_0 <- b - A x` and its norm into the state buffer's last slot), so that the
    /// next `update_solution` and `residual` have nothing left to do; then downloads the
    /// state buffer: the cycle's one wait at its end. With a preconditioner the host
    /// updates as after a host-stepped cycle.
    fn finish_on_device(&mut self) -> Result<Vec<f64>> {
        let restart = self.m.is_none();
        if restart {
            self.queue_restart()?;
        }
        let dc = self.on_device.as_ref().expect("a cycle ran on the device");
        let mut end = vec![0.0; dc.state.len()];
        dc.state.copy_to_host(&mut end)?;
        if restart {
            let slot: &[V::Real] = bytemuck::cast_slice(&end[end.len() - 1..]);
            self.known_residual = Some(slot[0].to_f64());
            self.solution_updated = cyc::steps(&end) > 0;
        }
        Ok(end)
    }

    /// Queues the restart of the ended cycle in the device state (no preconditioner):
    /// the same kernels and per-element math as `update_solution` and `residual`, with
    /// the coefficients solved on the device.
    fn queue_restart(&mut self) -> Result<()> {
        let (n, m, grid) = (self.n, self.restart, self.grid());
        let dc = self.on_device.as_mut().expect("a cycle ran on the device");
        let scratch = solution_scratch_len(m);
        // The state staged in shared memory where it fits the default 48 KiB.
        let staged = if scratch * size_of::<f64>() <= 48 * 1024 {
            scratch
        } else {
            2 * m
        };
        let cfg = LaunchConfig::blocks(1, BLOCK as u32)
            .with_shared_bytes((staged * size_of::<f64>()) as u32);
        let args = GmresSolutionCoefficients {
            staged,
            state: dc.state.as_in(),
            coef: dc.coef.as_out(),
        };
        // SAFETY: the kernel reads the state (`state_len` of its restart length <= m,
        // the buffer holds `state_buffer_len(m)`), stages it in `staged` f64 of shared
        // memory where that is `solution_scratch_len(m)`, keeps y in the first 2 m, and
        // writes steps <= m coefficients (coef holds `device_coef_len(m) = 2 m + 2`).
        unsafe {
            self.gpu
                .launch(&V::GMRES_SOLUTION_COEFFICIENTS, cfg, args)?
        };
        let args = GmresSolutionUpdate {
            n,
            ld: n,
            state: dc.state.as_in(),
            basis: self.basis.as_in(),
            coef: dc.coef.as_in(),
            x: self.x.as_out(),
        };
        // SAFETY: the kernel reads steps <= m coefficients, columns 0..steps of the
        // basis ((restart + 1) n elements) and x, and updates x (n elements).
        unsafe { self.gpu.launch(&V::GMRES_SOLUTION_UPDATE, grid, args)? };
        self.queue_residual()?;
        let dc = self.on_device.as_mut().expect("a cycle ran on the device");
        let last = dc.state.len() - 1;
        let mut slot = dc
            .state
            .view_mut(last..)?
            .cast::<V::Real>()?
            .into_range(..1)?;
        b1::nrm2_into(&self.basis.view(..n)?, &mut slot)
    }

    /// Queues [`fused_cycle`](Self::fused_cycle)'s kernel for the matrix `s`; `false`
    /// (nothing queued) where its shared memory or grid does not fit the device.
    fn launch_fused<A: Element + CycleKernels<V>>(
        &mut self,
        s: &DeviceSbell<A>,
        m: usize,
        start: &[f64],
    ) -> Result<bool> {
        let o = s.operands();
        let kernel = if o.b == 5 { A::SBELL5 } else { A::SBELL };
        let grid = match self.fused_grid {
            Some((for_m, grid)) if for_m == m => grid,
            _ => {
                let grid = self.fused_grid_for(&kernel, &o, m)?;
                self.fused_grid = Some((m, grid));
                grid
            }
        };
        let Some((blocks, bytes)) = grid else {
            return Ok(false);
        };
        self.device_cycle_buffers()?;
        let dc = self.on_device.as_mut().expect("allocated above");
        // SAFETY: `start` is a Vec (pageable): the driver stages it before returning.
        unsafe { dc.state.copy_from_host_staged(start)? };
        let cfg = LaunchConfig::blocks(blocks, CYCLE_THREADS as u32).with_shared_bytes(bytes);
        let args = GmresCycleSbell {
            p: CycleSbellScalars {
                n: self.n,
                m,
                element_blocks: reduction_blocks(self.n),
                n_stored: o.n_stored,
                n_stored_pad: o.n_stored_pad,
                n_empty: o.n_empty,
                b: o.b,
            },
            row_index: o.row_index,
            empty_rows: o.empty_rows,
            row_len: o.row_len,
            masks: o.masks,
            slice_col_ptr: o.slice_col_ptr,
            slice_val_ptr: o.slice_val_ptr,
            block_col: o.block_col,
            values: o.values,
            basis: self.basis.as_out(),
            w: self.w.as_out(),
            partials: self.partials.as_out(),
            dots: self.dots_out.as_out(),
            state: dc.state.as_out(),
            barrier: dc.barrier.as_out(),
        };
        // SAFETY: the matrix's arrays were validated by `Sbell` (as for `spmv_sbell`) and
        // it is square with n rows (`check_system`); the kernel reads and writes columns
        // 0..=m of the basis ((restart + 1) n elements, m <= restart), w (n), 2 (m + 1)
        // element_blocks partials and 2 (m + 1) dots (sized for the restart length in
        // `GpuSpace::new`), the state (`state_buffer_len(restart)` f64, begun for m, the
        // phase times after `state_len(m)`) and the barrier word (zeroed when allocated,
        // left at its start value by every launch); the grid is at most the resident
        // blocks with the shared memory it needs (`fused_grid_for`), launched
        // cooperatively.
        unsafe { self.gpu.launch_cooperative(&kernel, cfg, args)? };
        Ok(true)
    }

    /// The one-kernel cycle's grid for restart length `m`: enough blocks for one matrix
    /// row per thread, no more (fewer blocks meet at each grid barrier sooner), at most
    /// those resident at once; `None` where its shared memory or one block does not fit.
    fn fused_grid_for<A: Element + CycleKernels<V>>(
        &self,
        kernel: &ferrocuda_host::Kernel<GmresCycleSbell<'static, A, V>>,
        o: &crate::sparse::gpu::SbellOperands<'_, A>,
        m: usize,
    ) -> Result<Option<(u32, u32)>> {
        let bytes = cycle_shared_bytes(m, size_of::<V>());
        if bytes > 48 * 1024
            && (bytes > self.gpu.shared_memory_per_block_optin()?
                || self.gpu.allow_dynamic_shared(kernel, bytes).is_err())
        {
            return Ok(None);
        }
        let resident = self
            .gpu
            .resident_blocks(kernel, CYCLE_THREADS as u32, bytes)?;
        if resident == 0 {
            return Ok(None);
        }
        let wanted = sbell_row_threads(o.n_stored_pad, o.n_empty, o.b).div_ceil(CYCLE_THREADS);
        Ok(Some((wanted.clamp(1, resident) as u32, bytes as u32)))
    }

    /// The buffers of cycles run on the device, allocated on first use.
    fn device_cycle_buffers(&mut self) -> Result<&mut DeviceCycle<V>> {
        if self.on_device.is_none() {
            self.on_device = Some(DeviceCycle {
                state: self.gpu.alloc(state_buffer_len(self.restart))?,
                coef: self.gpu.alloc(device_coef_len(self.restart))?,
                header: None,
                barrier: self.gpu.alloc_zeroed(1)?,
            });
        }
        Ok(self.on_device.as_mut().expect("allocated above"))
    }
}

impl<V: KrylovElement> GpuSpace<'_, V> {
    /// A local norm made global: `sqrt(sum over ranks of norm^2)`.
    fn global_norm(&self, local: f64) -> Result<f64> {
        match self.comm {
            None => Ok(local),
            Some(c) => {
                let mut s = [local * local];
                c.all_reduce_sum(&mut s)?;
                Ok(s[0].sqrt())
            }
        }
    }
}

impl<V: KrylovElement> Space for GpuSpace<'_, V> {
    fn rhs_norm(&mut self) -> Result<f64> {
        let local = match self.known_rhs_norm.take() {
            Some(norm) => norm,
            None => b1::nrm2(self.b)?.to_f64(),
        };
        self.global_norm(local)
    }

    fn zero_solution(&mut self) -> Result<()> {
        b1::fill(&mut self.x, V::ZERO)
    }

    fn residual(&mut self) -> Result<f64> {
        let norm = match self.known_residual.take() {
            Some(norm) => norm,
            None => {
                self.queue_residual()?;
                b1::nrm2(&self.residual_vector()?)?.to_f64()
            }
        };
        self.collect(SPMV)?;
        self.global_norm(norm)
    }

    fn scale_first(&mut self, beta: f64) -> Result<()> {
        let n = self.n;
        b1::scal(
            from_c::<V>(C::new(1.0 / beta, 0.0)),
            &mut self.basis.view_mut(..n)?,
        )
    }

    fn dots(&mut self, k: usize, apply: bool) -> Result<(Vec<C>, Vec<C>)> {
        let (k1, nccl) = self.queue_dots(k, apply)?;
        let sets = 2 * k1;
        self.dots_out.copy_to_host(&mut self.dots_host)?;
        for t in ALL {
            self.collect(t)?;
        }
        let mut c: Vec<C> = self.dots_host[..sets].iter().map(|&v| to_c(v)).collect();
        self.sum_dots_on_host(&mut c, nccl)?;
        Ok((c[..k1].to_vec(), c[k1..].to_vec()))
    }

    fn update(&mut self, k: usize, a: &[C], b: &[C], c: C, inv_alpha: f64) -> Result<()> {
        let (n, m) = (self.n, self.restart);
        for (j, (&aj, &bj)) in a.iter().zip(b).enumerate() {
            self.coef_host[j] = from_c(aj);
            self.coef_host[m + j] = from_c(bj);
        }
        // SAFETY: coef_host is a Vec (pageable): the driver stages it before returning.
        unsafe { self.coef.copy_from_host_staged(&self.coef_host)? };
        let p = GsUpdateScalars {
            n,
            k,
            ld: n,
            c: from_c::<V>(c),
            inv_alpha: V::Real::from_f64(inv_alpha),
        };
        let cfg = self.grid();
        self.start(UPDATE)?;
        if let Some(low) = &mut self.low {
            let (a, b) = (self.coef.view(..m)?, self.coef.view(m..)?);
            let args = GsUpdateCb {
                p,
                a: a.as_in(),
                b: b.as_in(),
                w: self.w.as_in(),
                basis: low.as_out(),
            };
            // SAFETY: as the full-precision launch below, over the compressed basis
            // ((restart + 1) n elements).
            unsafe { self.gpu.launch(&V::Low::GS_UPDATE_CB, cfg, args)? };
        } else {
            let (a, b) = (self.coef.view(..m)?, self.coef.view(m..)?);
            let args = GsUpdate {
                p,
                a: a.as_in(),
                b: b.as_in(),
                w: self.w.as_in(),
                basis: self.basis.as_out(),
            };
            // SAFETY: the kernel reads columns 0..=k of the basis, a[0..k], b[0..k] (k <= m,
            // each view m long) and w[0..n], and writes columns k and k + 1 <= restart of
            // the (restart + 1)-column basis (sizes from `GpuSpace::new`).
            unsafe { self.gpu.launch(&V::GS_UPDATE, cfg, args)? };
        }
        self.stop(UPDATE)
    }

    fn mgs(&mut self, k: usize) -> Result<(Vec<C>, f64)> {
        self.queue_mgs(k)?;
        let h = self.h.download()?;
        for t in ALL {
            self.collect(t)?;
        }
        Ok((
            h[..=k].iter().map(|&v| to_c(v)).collect(),
            to_c(h[k + 1]).re,
        ))
    }

    fn pipe_begin(&mut self) -> Result<()> {
        let n = self.n;
        let v0 = self.basis.view(..n)?;
        Self::apply_to(
            self.a,
            self.m,
            &mut self.z,
            &v0,
            &mut self.zbasis.view_mut(..n)?,
        )
    }

    fn pipe_step(
        &mut self,
        k: usize,
        prev: Option<(&[C], f64)>,
        last: bool,
        ahead: bool,
    ) -> Result<PipeDots> {
        let n = self.n;
        let len = pipe_sets(self.restart);
        if self.pipe_dots.is_none() {
            self.pipe_dots = Some((
                Snapshots::cached(&self.gpu, len, 1)?,
                self.gpu.take_pinned(self.coef.len())?,
            ));
        }
        let (_, coef_host) = self.pipe_dots.as_mut().expect("allocated above");
        let (mode, inv_alpha) = match prev {
            Some((h, inv)) => {
                for (c, &hj) in coef_host.as_mut_slice().iter_mut().zip(h) {
                    *c = from_c(hj);
                }
                // SAFETY: the page-locked source is next written at the next step, after
                // the host waited for this step's snapshot, which the stream takes after
                // this copy.
                unsafe { self.coef.copy_from_host_async(coef_host.as_slice())? };
                (if last { PIPE_LAST } else { PIPE_UPDATE }, inv)
            }
            None => (PIPE_DOTS, 0.0),
        };
        let blocks = self.pipe_blocks;
        let sets = pipe_sets(k);
        let cfg = LaunchConfig::blocks(blocks as u32, PIPE_THREADS as u32)
            .with_shared_bytes(pipe_shared_bytes(k, PIPE_THREADS, size_of::<V>()) as u32);
        let args = GmresPipePass {
            p: PipeScalars {
                n,
                k,
                ld: n,
                mode,
                inv_alpha: V::Real::from_f64(inv_alpha),
            },
            h: self.coef.as_in(),
            q: self.w.as_in(),
            basis: self.basis.as_out(),
            zbasis: self.zbasis.as_out(),
            partials: self.partials.as_out(),
        };
        // SAFETY: the kernel reads h[0..k] (coef holds 2 restart >= k), q = w (n), columns
        // 0..=k of both bases (each (restart + 1) n elements, k <= restart) and writes
        // column k of them where it updates, and (k + 3) blocks partials, blocks <= eb
        // (partials hold 2 (restart + 1) eb >= (k + 3) blocks for k <= restart, restart
        // >= 1); its shared memory is `pipe_shared_bytes(k)`, checked against 48 KiB for
        // the restart length in `GpuSpace::new`.
        unsafe { self.gpu.launch(&V::GMRES_PIPE_PASS, cfg, args)? };
        // SAFETY: partials hold the sets' `blocks` values each; dots_out has room for
        // 2 (restart + 1) >= k + 3 sums.
        unsafe {
            b1::finish_sum(
                &self.gpu,
                blocks,
                &self.partials,
                self.dots_out.as_out(),
                sets,
            )?
        };
        let on_devices = self.sum_dots_on_devices(sets)?;
        let (snaps, _) = self.pipe_dots.as_mut().expect("allocated above");
        let slot = snaps.take(&self.dots_out.view(..len)?)?;
        // The next operator application, queued before the host waits for the dots.
        if ahead {
            let col = self.zbasis.view(k * n..(k + 1) * n)?;
            Self::apply_to(self.a, self.m, &mut self.z, &col, &mut self.w.view_mut(..)?)?;
        }
        let (snaps, _) = self.pipe_dots.as_mut().expect("allocated above");
        let mut c: Vec<C> = snaps.read(slot)?[..sets].iter().map(|&v| to_c(v)).collect();
        self.sum_dots_on_host(&mut c, on_devices)?;
        let (zz, vv) = (c[k + 1].re, c[k + 2].re);
        c.truncate(k + 1);
        Ok(PipeDots { d: c, zz, vv })
    }

    fn update_solution(&mut self, y: &[C]) -> Result<()> {
        if std::mem::take(&mut self.solution_updated) {
            // The device restart added V y to x: the same y (`cyc::solve` on the same
            // state), the same per-element math.
            return Ok(());
        }
        let n = self.n;
        let k = y.len();
        for (j, &yj) in y.iter().enumerate() {
            self.coef_host[j] = from_c(yj);
        }
        // SAFETY: coef_host is a Vec (pageable): the driver stages it before returning.
        unsafe { self.coef.copy_from_host_staged(&self.coef_host)? };
        let cfg = self.grid();
        if let Some(low) = &self.low {
            let args = BasisCombineCb {
                n,
                k,
                basis: low.as_in(),
                ld: n,
                coef: self.coef.as_in(),
                z: self.w.as_out(),
            };
            // SAFETY: as the full-precision launch below, over the compressed basis.
            unsafe { self.gpu.launch(&V::Low::BASIS_COMBINE_CB, cfg, args)? };
        } else {
            let args = BasisCombine {
                n,
                k,
                basis: self.basis.as_in(),
                ld: n,
                coef: self.coef.as_in(),
                z: self.w.as_out(),
            };
            // SAFETY: the kernel reads columns 0..k of the basis (k <= restart) and
            // coef[0..k] (k <= 2 restart), and writes w[0..n] (sizes from `GpuSpace::new`).
            unsafe { self.gpu.launch(&V::BASIS_COMBINE, cfg, args)? };
        }
        match self.m {
            Some(m) => {
                self.start(PRECOND)?;
                m.apply_unchecked(&self.w.view(..)?, &mut self.z.view_mut(..)?)?;
                self.stop(PRECOND)?;
                b1::axpy(V::ONE, &self.z, &mut self.x)
            }
            None => b1::axpy(V::ONE, &self.w, &mut self.x),
        }
    }

    fn save_best(&mut self) -> Result<()> {
        Ok(self.best.copy_from_device(&self.x)?)
    }

    fn restore_best(&mut self) -> Result<()> {
        Ok(self.x.copy_from_device(&self.best)?)
    }

    fn take_times(&mut self) -> Result<[f64; 3]> {
        for t in ALL {
            self.collect(t)?;
        }
        let ms = self.ms;
        let out = [ms[SPMV], ms[PRECOND], ms[DOTS] + ms[UPDATE]].map(|t| t / 1e3);
        self.ms = [0.0; 4];
        Ok(out)
    }

    fn epsilon(&self) -> f64 {
        match self.low {
            // Breakdown at the precision the basis is kept in.
            Some(_) => <V::Low as Scalar>::Real::EPSILON.to_f64(),
            None => V::Real::EPSILON.to_f64(),
        }
    }

    fn take_cycle_phases(&mut self) -> CyclePhases {
        std::mem::take(&mut self.phases)
    }

    fn device_cycle(
        &mut self,
        orthogonalization: Orthogonalization,
        m: usize,
        beta: f64,
        target: f64,
        eps: f64,
    ) -> Result<Option<Vec<f64>>> {
        // Distributed, compressed-basis and pipelined cycles are stepped from the host.
        if self.comm.is_some()
            || self.low.is_some()
            || orthogonalization == Orthogonalization::Pipelined
        {
            return Ok(None);
        }
        let fusable = orthogonalization == Orthogonalization::Cgs2 && self.m.is_none();
        // Where the one-kernel cycle cannot run: Fused looks every few steps, Auto steps
        // from the host.
        let check_every = match self.control {
            CycleControl::Device { check_every } => Some(check_every),
            CycleControl::Fused => Some(FUSED_FALLBACK_CHECK_EVERY),
            CycleControl::Auto | CycleControl::Host => None,
        };
        let fused = match self.control {
            CycleControl::Fused => fusable,
            CycleControl::Auto => fusable && self.n <= FUSED_AUTO_MAX_ROWS,
            _ => false,
        };
        if check_every.is_none() && !fused {
            return Ok(None);
        }
        // The state, the one-kernel cycle's phase times, the restart's residual norm.
        let mut start = vec![0.0; state_buffer_len(self.restart)];
        cyc::begin(&mut start, m, target, eps);
        if fused && let Some(end) = self.fused_cycle(m, &start)? {
            return Ok(Some(end));
        }
        let Some(check_every) = check_every else {
            return Ok(None);
        };
        if orthogonalization == Orthogonalization::Mgs {
            cyc::mgs_begin(&mut start, beta);
            self.scale_first(beta)?;
        }
        self.queue_cycle(orthogonalization, m, check_every, &start)
            .map(Some)
    }
}
