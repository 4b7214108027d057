//! `J`, `g` and their gradients on one GPU, for a batch of independent problems per
//! launch (same model, each with its own `x0` and `u`).
//!
//! - **Exact, small swarms** (adjoint, [`ExactKernels::Fused`], the default up to
//!   [`FUSED_MAX_OBJECTS`] objects per launch): `mpc_fused_f64`, the whole evaluation in one
//!   launch. Each block copies the controls to shared memory, rolls the whole swarm out
//!   there, sums the pair terms of its own few objects at every step (all its threads on
//!   the pair loop) and runs their adjoint sweep; the last block of a problem to finish
//!   adds the blocks' shares of `J` and `g` in a fixed order. The evaluation's time is
//!   then one launch and four short phases, where the tiled path below pays for two or
//!   three dependent kernels and global-memory round trips between them.
//! - **Exact, tiled** (adjoint, [`ExactKernels::Tiled`]): `mpc_pairs_f64` (positions, pair sums and their gradients at
//!   every step: one thread per object, the other objects streamed through shared
//!   memory in tiles of 64, so `M` is limited only by memory; for small swarms the other
//!   objects are split into slices so the grid still fills the device),
//!   `mpc_adjoint_f64` (local terms, the backward sweep, block partials) and, for more
//!   than 256 objects, `mpc_reduce_f64` (partials in a fixed order). Evaluation alone
//!   runs the same kernels without the sweep.
//! - **Forward differences as Jahn**: `mpc_fd_nominal_f64` (one block per
//!   problem, one thread per object: trajectory and per-step sums) and
//!   `mpc_fd_gradient_f64` (one block per component: from the stored nominal state at
//!   the component's step, `sum_{i > i0} (S'(i) - S(i)) / h`); `M <= 1024`.
//!
//! Buffers are allocated once per evaluator and poisoned with NaN, so a value no kernel
//! wrote shows; all reductions run in a fixed order (bit-identical results run to run).

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, Graph, LaunchConfig};
use ferrocuda_kernels::mpc::{
    AdjointParams, BLOCK, FD_MAX_OBJECTS, FUSED_BLOCK, FdParams, FusedParams, MPC_ADJOINT_F64,
    MPC_FD_GRADIENT_F64, MPC_FD_NOMINAL_F64, MPC_FUSED_F64, MPC_PAIRS_F64, MPC_REDUCE_F64,
    MpcAdjointF64, MpcFdGradientF64, MpcFdNominalF64, MpcFusedF64, MpcPairsF64, MpcReduceF64, NU,
    NX, PAIR_BLOCK, PairsParams, SwarmParams, fused_shared_doubles,
};

use serde::Serialize;

use super::{Evaluation, Evaluator, FD_STEP, Gradient, SwarmModel};
use crate::error::{Error, Result, check_len};

const OP: &str = "mpc::gpu";

/// Device buffers of one evaluator (`P` problems).
struct Buffers {
    x0: DeviceBuffer<f64>,
    u: DeviceBuffer<f64>,
    traj: DeviceBuffer<f64>,
    pair_v: DeviceBuffer<f64>,
    pair_g: DeviceBuffer<f64>,
    grad_j: DeviceBuffer<f64>,
    grad_g: DeviceBuffer<f64>,
    partials: DeviceBuffer<f64>,
    steps: DeviceBuffer<f64>,
    out: DeviceBuffer<f64>,
    /// Per-block shares of the fused kernel (`P G 2`) and its arrival counters (`P`).
    fused_partials: DeviceBuffer<f64>,
    counters: DeviceBuffer<u32>,
}

/// Most objects per launch (`M` times the batch) that [`ExactKernels::Auto`] evaluates
/// with the fused kernel (every block rolls its whole swarm out, so the redundant work
/// grows with `M`, and many problems per launch fill the device with the tiled kernels:
/// 64 problems of `M = 256` ran 1.5x faster tiled on an H100).
pub const FUSED_MAX_OBJECTS: usize = 512;

/// Which kernels compute the exact path (`J`, `g` and adjoint gradients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExactKernels {
    /// [`ExactKernels::Fused`] up to [`FUSED_MAX_OBJECTS`] objects per launch (all
    /// problems together) when its shared memory fits the device,
    /// [`ExactKernels::Tiled`] otherwise.
    #[default]
    Auto,
    /// One launch of `mpc_fused_f64` (an error when its shared memory,
    /// `8 (32 + 2 N M + ...)` bytes, does not fit the device).
    Fused,
    /// `mpc_pairs_f64`, `mpc_adjoint_f64` (and `mpc_reduce_f64`), replayed as a CUDA
    /// graph.
    Tiled,
}

/// How the fused kernel splits a problem: `per_block` objects per block, `blocks`
/// blocks per problem, `shared` bytes of dynamic shared memory per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FusedPlan {
    /// Objects each block owns (pair rows and sweep).
    pub per_block: usize,
    /// Blocks per problem.
    pub blocks: usize,
    /// Dynamic shared memory per block, bytes.
    pub shared: usize,
}

impl FusedPlan {
    /// The plan with `per_block` objects per block (clamped to `1..=m`, then evened out
    /// over the blocks).
    pub fn with_per_block(m: usize, n: usize, per_block: usize) -> FusedPlan {
        let blocks = m.div_ceil(per_block.clamp(1, m.max(1)));
        let per_block = m.div_ceil(blocks);
        FusedPlan {
            per_block,
            blocks,
            shared: fused_shared_doubles(m, n, per_block) * size_of::<f64>(),
        }
    }

    /// The default plan for `batch` problems on a device of `sms` multiprocessors: about
    /// two blocks per multiprocessor over the whole batch, at least one object per block
    /// (each block reads all the controls of its problem from L2, so more blocks cost
    /// bandwidth, fewer cost pair work per block; on an H100 at `M = 256`, `N = 10` one
    /// object per block measured fastest, see `docs/results/mpc.md`).
    pub fn auto(m: usize, n: usize, batch: usize, sms: usize) -> FusedPlan {
        FusedPlan::with_per_block(m, n, (m * batch).div_ceil(2 * sms.max(1)))
    }
}

/// Evaluates `J`, `g` and their gradients of `batch` problems of one model on a GPU.
///
/// ```
/// use ferrocuda::mpc::{Gradient, SwarmModel, gpu::GpuEvaluator};
/// let model = SwarmModel::new(32, 5)?;
/// match ferrocuda::gpu::open(0) {
///     Ok(g) => {
///         let mut ev = GpuEvaluator::new(&g, model, Gradient::Exact, 1)?;
///         let x0 = model.thesis_initial_state();
///         let e = ev.evaluate_batch(&x0, &vec![0.0; model.controls()])?;
///         assert!(e[0].cost > 0.0);
///     }
///     Err(e) if e.is_no_device() => {}
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub struct GpuEvaluator {
    gpu: Gpu,
    model: SwarmModel,
    params: SwarmParams,
    method: Gradient,
    batch: usize,
    slices: usize,
    chunk: usize,
    /// The fused kernel's plan, when it computes the exact path.
    fused: Option<FusedPlan>,
    /// Replays of the tiled exact path (`[values, gradients]`), captured on the second
    /// call.
    graphs: [Option<Graph>; 2],
    calls: [usize; 2],
    use_graphs: bool,
    buf: Buffers,
}

/// Streaming multiprocessors worth of blocks the pair kernel aims for (two waves on a
/// 132-SM H100; more slices only add partial sums).
const PAIR_TARGET_BLOCKS: usize = 264;

/// How the other objects are split for the pair kernel: `(slices, chunk)` with `chunk`
/// a multiple of [`PAIR_BLOCK`], so small swarms still fill the device.
fn pair_slices(m: usize, n: usize, p: usize) -> (usize, usize) {
    let jblocks = m.div_ceil(PAIR_BLOCK);
    let tiles = jblocks;
    let want = PAIR_TARGET_BLOCKS
        .div_ceil(jblocks.saturating_mul(n).saturating_mul(p))
        .clamp(1, tiles)
        .min(ferrocuda_host::MAX_GRID_YZ as usize / p);
    let chunk = tiles.div_ceil(want.max(1)) * PAIR_BLOCK;
    (m.div_ceil(chunk), chunk)
}

impl std::fmt::Debug for GpuEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuEvaluator")
            .field("model", &self.model)
            .field("method", &self.method)
            .field("batch", &self.batch)
            .finish()
    }
}

/// The fused kernel's plan for `kernels`, or `None` for the tiled kernels; allows the
/// plan's shared memory beyond the default 48 KiB.
fn fused_plan(
    gpu: &Gpu,
    m: usize,
    n: usize,
    p: usize,
    kernels: ExactKernels,
    per_block: Option<usize>,
) -> Result<Option<FusedPlan>> {
    if kernels == ExactKernels::Tiled
        || (kernels == ExactKernels::Auto && m * p > FUSED_MAX_OBJECTS)
    {
        return Ok(None);
    }
    let plan = match per_block {
        Some(r) => FusedPlan::with_per_block(m, n, r),
        None => FusedPlan::auto(m, n, p, gpu.multiprocessors()?),
    };
    let limit = gpu.shared_memory_per_block_optin()?;
    if plan.shared > limit {
        return match kernels {
            ExactKernels::Fused => Err(Error::InvalidArgument {
                op: OP,
                reason: format!(
                    "the fused kernel needs {} bytes of shared memory per block for M = {m}, N = {n}; the device allows {limit} (use the tiled kernels)",
                    plan.shared
                ),
            }),
            _ => Ok(None),
        };
    }
    if plan.shared > 48 * 1024 {
        // The device's whole limit, not this plan's bytes: another evaluator with a larger
        // plan may share the function.
        gpu.allow_dynamic_shared(&MPC_FUSED_F64, limit)?;
    }
    Ok(Some(plan))
}

/// `len` (at least 1) NaNs on the device, filled there (no host buffer of that size).
fn poisoned(gpu: &Gpu, len: usize) -> Result<DeviceBuffer<f64>> {
    let mut b = gpu.alloc::<f64>(len.max(1))?;
    crate::blas1::gpu::fill(&mut b, f64::NAN)?;
    Ok(b)
}

impl GpuEvaluator {
    /// An evaluator for `batch` problems of `model` on `gpu`, gradients by `method`
    /// (`Exact` or `Forward`; `Forward` needs `M <= 1024`), the exact path on the
    /// kernels [`ExactKernels::Auto`] picks.
    pub fn new(gpu: &Gpu, model: SwarmModel, method: Gradient, batch: usize) -> Result<Self> {
        Self::with_kernels(gpu, model, method, batch, ExactKernels::Auto, None)
    }

    /// As [`GpuEvaluator::new`], the exact path on `kernels`; `per_block` overrides the
    /// fused kernel's objects per block (default: [`FusedPlan::auto`]). Errors as `new`,
    /// and [`ExactKernels::Fused`] where its shared memory does not fit the device.
    pub fn with_kernels(
        gpu: &Gpu,
        model: SwarmModel,
        method: Gradient,
        batch: usize,
        kernels: ExactKernels,
        per_block: Option<usize>,
    ) -> Result<Self> {
        model.validate()?;
        // Loaded here, not inside the optimiser's timed evaluations.
        crate::gpu::preload(gpu, &["mpc", "blas1"])?;
        if batch == 0 || batch > ferrocuda_host::MAX_GRID_YZ as usize {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("batch must be in 1..=65535, got {batch}"),
            });
        }
        if model.horizon > ferrocuda_host::MAX_GRID_YZ as usize {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("horizon must be at most 65535, got {}", model.horizon),
            });
        }
        match method {
            Gradient::Central => {
                return Err(Error::InvalidArgument {
                    op: OP,
                    reason: "central differences are CPU-only (a check); use exact or fd".into(),
                });
            }
            Gradient::Forward if model.objects > FD_MAX_OBJECTS => {
                return Err(Error::InvalidArgument {
                    op: OP,
                    reason: format!(
                        "forward differences run one thread per object, at most {FD_MAX_OBJECTS} objects; got {} (use exact gradients)",
                        model.objects
                    ),
                });
            }
            _ => {}
        }
        // Its own stream: the exact path is replayed as a CUDA graph, captured on a
        // stream no other thread issues work to.
        let gpu = &gpu.new_stream()?;
        let (m, n, p) = (model.objects, model.horizon, batch);
        model.check_memory()?;
        let blocks = m.div_ceil(BLOCK);
        let (slices, chunk) = pair_slices(m, n, p);
        let fused = if method == Gradient::Exact {
            fused_plan(gpu, m, n, p, kernels, per_block)?
        } else {
            None
        };
        // Every buffer below, counted exactly before any is allocated (the sizes are
        // then bounded by the device's memory).
        let (mu, nu, pu) = (m as u128, n as u128, p as u128);
        let values = pu
            * (mu * NX as u128
                + 3 * nu * mu * NU as u128
                + (nu + 1) * mu * NX as u128
                + 3 * slices as u128 * nu * mu
                + 2 * blocks as u128
                + 2 * (nu + 1)
                + 2
                + 2 * fused.map_or(1, |f| f.blocks) as u128);
        crate::alloc::check_device_bytes(
            gpu,
            &format!("the MPC evaluator for objects = {m}, horizon = {n}, batch = {p}"),
            values * 8 + pu * 4,
        )?;
        let buf = Buffers {
            x0: poisoned(gpu, p * m * NX)?,
            u: poisoned(gpu, p * n * m * NU)?,
            traj: poisoned(gpu, p * (n + 1) * m * NX)?,
            pair_v: poisoned(gpu, p * slices * n * m)?,
            pair_g: poisoned(gpu, p * slices * n * m * 2)?,
            grad_j: poisoned(gpu, p * n * m * NU)?,
            grad_g: poisoned(gpu, p * n * m * NU)?,
            partials: poisoned(gpu, p * blocks * 2)?,
            steps: poisoned(gpu, p * (n + 1) * 2)?,
            out: poisoned(gpu, p * 2)?,
            fused_partials: poisoned(gpu, p * fused.map_or(1, |f| f.blocks) * 2)?,
            counters: gpu.alloc_zeroed::<u32>(p)?,
        };
        Ok(GpuEvaluator {
            gpu: gpu.clone(),
            model,
            params: model.params(),
            method,
            batch,
            slices,
            chunk,
            fused,
            graphs: [None, None],
            calls: [0, 0],
            use_graphs: true,
            buf,
        })
    }

    /// The device, on the evaluator's own stream (time its work with events on it).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Problems per launch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The fused kernel's plan when it computes the exact path (`None`: the tiled
    /// kernels, or forward differences).
    pub fn fused_plan(&self) -> Option<FusedPlan> {
        self.fused
    }

    /// Copies `batch` initial states (`P M 4`) and control sequences (`P N M 2`) to the
    /// device. Errors: lengths, non-finite values.
    pub fn upload(&mut self, x0: &[f64], u: &[f64]) -> Result<()> {
        let (sx, su) = (self.model.states(), self.model.controls());
        check_len(OP, "x0", self.batch * sx, x0.len())?;
        check_len(OP, "u", self.batch * su, u.len())?;
        for q in 0..self.batch {
            self.model
                .check_inputs(OP, &x0[q * sx..(q + 1) * sx], &u[q * su..(q + 1) * su])?;
        }
        self.buf.x0.copy_from_host(x0)?;
        self.buf.u.copy_from_host(u)?;
        Ok(())
    }

    /// Queues `J` and `g` of the uploaded problems (no host synchronisation); with
    /// `gradient`, also their gradients by this evaluator's method.
    ///
    /// The fused exact path is one launch. The tiled exact path runs its two or three
    /// kernels directly on the first call and is replayed as a CUDA graph (one launch)
    /// from the second on; if the capture fails, it keeps launching directly.
    pub fn launch(&mut self, gradient: bool) -> Result<()> {
        if self.method == Gradient::Forward {
            return self.launch_fd(gradient);
        }
        if let Some(plan) = self.fused {
            return self.launch_fused(plan, gradient);
        }
        let slot = gradient as usize;
        self.calls[slot] += 1;
        if self.use_graphs && self.graphs[slot].is_none() && self.calls[slot] >= 2 {
            let gpu = self.gpu.clone();
            // SAFETY: the captured kernels touch only this evaluator's buffers, which
            // live as long as the graph (both are fields of `self`, and the graphs are
            // dropped when the parameters change); the stream is this evaluator's own.
            let captured = unsafe { gpu.capture::<Error>(|_| self.launch_exact(gradient)) };
            match captured {
                Ok(g) => self.graphs[slot] = Some(g),
                Err(_) => self.use_graphs = false,
            }
        }
        match &self.graphs[slot] {
            Some(g) => Ok(g.launch()?),
            None => self.launch_exact(gradient),
        }
    }

    fn launch_exact(&mut self, gradient: bool) -> Result<()> {
        let (m, n, p) = (self.model.objects, self.model.horizon, self.batch);
        let (slices, chunk) = (self.slices, self.chunk);
        let blocks = m.div_ceil(BLOCK);
        let model = self.params;
        let gpu = &self.gpu;
        let b = &mut self.buf;
        let pairs = MpcPairsF64 {
            params: PairsParams {
                m,
                n,
                slices,
                chunk,
                model,
            },
            x0: b.x0.as_in(),
            u: b.u.as_in(),
            traj: b.traj.as_out(),
            pair_v: b.pair_v.as_out(),
            pair_g: b.pair_g.as_out(),
        };
        let cfg = LaunchConfig::blocks(m.div_ceil(PAIR_BLOCK) as u32, PAIR_BLOCK as u32)
            .with_grid_y(n as u32)
            .with_grid_z((p * slices) as u32)
            .with_shared_bytes((2 * PAIR_BLOCK * size_of::<f64>()) as u32);
        // SAFETY: the buffers were allocated for (m, n, p, slices) in `new`: x0 p m 4,
        // u p n m 2, traj p (n + 1) m 4, pair_v p slices n m, pair_g p slices n m 2;
        // slices * chunk >= m and p * slices <= 65535 (`pair_slices`); the shared memory
        // holds one tile of PAIR_BLOCK positions.
        unsafe { gpu.launch(&MPC_PAIRS_F64, cfg, pairs)? };
        // One block per problem: the adjoint kernel's partials are the results.
        let partials = if blocks == 1 {
            b.out.as_out()
        } else {
            b.partials.as_out()
        };
        let adjoint = MpcAdjointF64 {
            params: AdjointParams {
                m,
                n,
                slices,
                model,
                grad: gradient as u32,
            },
            traj: b.traj.as_in(),
            pair_v: b.pair_v.as_in(),
            pair_g: b.pair_g.as_in(),
            grad_j: b.grad_j.as_out(),
            grad_g: b.grad_g.as_out(),
            partials,
        };
        let cfg = LaunchConfig::blocks(blocks as u32, BLOCK as u32)
            .with_grid_y(p as u32)
            .with_shared_bytes((BLOCK / 32 * size_of::<f64>()) as u32);
        // SAFETY: as above, and grad_* p n m 2, partials p blocks 2 (out p 2 when
        // blocks == 1); the shared memory holds the block sum's BLOCK / 32 values.
        unsafe { gpu.launch(&MPC_ADJOINT_F64, cfg, adjoint)? };
        if blocks > 1 {
            let reduce = MpcReduceF64 {
                blocks,
                partials: b.partials.as_in(),
                out: b.out.as_out(),
            };
            // SAFETY: block q < p reads partials[q blocks 2 ..][..blocks 2] (p blocks 2
            // values) and writes out[2 q], out[2 q + 1] (p 2 values).
            unsafe { gpu.launch(&MPC_REDUCE_F64, LaunchConfig::blocks(p as u32, 32), reduce)? };
        }
        Ok(())
    }

    fn launch_fused(&mut self, plan: FusedPlan, gradient: bool) -> Result<()> {
        let (m, n, p) = (self.model.objects, self.model.horizon, self.batch);
        let b = &mut self.buf;
        let args = MpcFusedF64 {
            params: FusedParams {
                m,
                n,
                per_block: plan.per_block,
                model: self.params,
                grad: gradient as u32,
            },
            x0: b.x0.as_in(),
            u: b.u.as_in(),
            grad_j: b.grad_j.as_out(),
            grad_g: b.grad_g.as_out(),
            partials: b.fused_partials.as_out(),
            counters: b.counters.as_out(),
            out: b.out.as_out(),
        };
        let cfg = LaunchConfig::blocks(plan.blocks as u32, FUSED_BLOCK as u32)
            .with_grid_y(p as u32)
            .with_shared_bytes(plan.shared as u32);
        // SAFETY: the buffers were allocated for (m, n, p, plan) in `new`: x0 p m 4, u
        // p n m 2, grad_* p n m 2, fused_partials p blocks 2, counters p (zeroed, reset
        // by the kernel's last block), out p 2; plan.blocks * per_block >= m; the shared
        // memory is `fused_shared_doubles(m, n, per_block)` doubles, allowed in
        // `fused_plan`.
        unsafe { self.gpu.launch(&MPC_FUSED_F64, cfg, args)? };
        Ok(())
    }

    fn launch_fd(&mut self, gradient: bool) -> Result<()> {
        let (m, n, p) = (self.model.objects, self.model.horizon, self.batch);
        let threads = m.next_multiple_of(32) as u32;
        let shared = ((32 + 2 * m) * size_of::<f64>()) as u32;
        let params = FdParams {
            m,
            n,
            model: self.params,
        };
        let gpu = &self.gpu;
        let b = &mut self.buf;
        let nominal = MpcFdNominalF64 {
            params,
            x0: b.x0.as_in(),
            u: b.u.as_in(),
            traj: b.traj.as_out(),
            steps: b.steps.as_out(),
            out: b.out.as_out(),
        };
        let cfg = LaunchConfig::blocks(p as u32, threads).with_shared_bytes(shared);
        // SAFETY: as in `launch_exact`; steps has p (n + 1) 2 values; m <= 1024 (checked
        // in `new`), so one thread per object fits a block, and the shared memory holds
        // the reduction scratch and 2 m positions.
        unsafe { gpu.launch(&MPC_FD_NOMINAL_F64, cfg, nominal)? };
        if gradient {
            let grad = MpcFdGradientF64 {
                params,
                h: FD_STEP,
                u: b.u.as_in(),
                traj: b.traj.as_in(),
                steps: b.steps.as_in(),
                grad_j: b.grad_j.as_out(),
                grad_g: b.grad_g.as_out(),
            };
            let cfg = LaunchConfig::blocks((n * m * NU) as u32, threads)
                .with_grid_y(p as u32)
                .with_shared_bytes(shared);
            // SAFETY: as the nominal run; block (c, q) writes grad_*[q n m 2 + c], c < n m 2.
            unsafe { gpu.launch(&MPC_FD_GRADIENT_F64, cfg, grad)? };
        }
        Ok(())
    }

    /// Reads back `(J, g)` of every problem (synchronises).
    pub fn download_values(&self) -> Result<Vec<Evaluation>> {
        let out = self.buf.out.download()?;
        Ok(out
            .chunks_exact(2)
            .map(|c| Evaluation {
                cost: c[0],
                constraint: c[1],
            })
            .collect())
    }

    /// `J` and `g` of `batch` problems (`x0`: `P M 4`, `u`: `P N M 2`).
    pub fn evaluate_batch(&mut self, x0: &[f64], u: &[f64]) -> Result<Vec<Evaluation>> {
        self.upload(x0, u)?;
        self.launch(false)?;
        self.download_values()
    }

    /// `J`, `g` and their gradients of `batch` problems; the gradients go to
    /// `grad_cost` and `grad_constraint` (`P N M 2` each, the layout of `u`).
    pub fn gradient_batch(
        &mut self,
        x0: &[f64],
        u: &[f64],
        grad_cost: &mut [f64],
        grad_constraint: &mut [f64],
    ) -> Result<Vec<Evaluation>> {
        let len = self.batch * self.model.controls();
        check_len(OP, "grad_cost", len, grad_cost.len())?;
        check_len(OP, "grad_constraint", len, grad_constraint.len())?;
        self.upload(x0, u)?;
        self.launch(true)?;
        self.buf.grad_j.copy_to_host(grad_cost)?;
        self.buf.grad_g.copy_to_host(grad_constraint)?;
        self.download_values()
    }
}

impl Evaluator for GpuEvaluator {
    fn model(&self) -> &SwarmModel {
        &self.model
    }
    fn device(&self) -> String {
        self.gpu.name().unwrap_or_else(|_| "GPU".into())
    }
    fn set_reference(&mut self, reference: [f64; 4]) -> Result<()> {
        let mut model = self.model;
        model.reference = reference;
        model.validate()?;
        self.model = model;
        self.params = model.params();
        // The graphs hold the old parameters.
        self.graphs = [None, None];
        self.calls = [0, 0];
        Ok(())
    }
    fn evaluate(&mut self, x0: &[f64], u: &[f64]) -> Result<Evaluation> {
        self.single()?;
        Ok(self.evaluate_batch(x0, u)?[0])
    }
    fn gradient(
        &mut self,
        x0: &[f64],
        u: &[f64],
        grad_cost: &mut [f64],
        grad_constraint: &mut [f64],
    ) -> Result<Evaluation> {
        self.single()?;
        Ok(self.gradient_batch(x0, u, grad_cost, grad_constraint)?[0])
    }
}

impl GpuEvaluator {
    fn single(&self) -> Result<()> {
        if self.batch == 1 {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op: OP,
                reason: format!(
                    "the Evaluator interface takes one problem; this evaluator has batch {}",
                    self.batch
                ),
            })
        }
    }
}
