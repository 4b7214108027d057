//! Multigrid on one GPU. Every array is allocated once per hierarchy
//! ([`Solver::new`]: per level `u` in two buffers and `f`, the coarse-solve tables and
//! scratch, the norm partials) and stays on the device; a cycle queues its kernels
//! without waiting, and only the norms after each cycle (three `f64`) come back.
//!
//! Kernels (`ferrocuda_kernels::multigrid`): the fused block smoother (one thread per
//! block, the block and its constant terms in registers, all `B` Gauss-Seidel sweeps on
//! chip, one read and one write of the block; block edges 1..=6 built in), the residual,
//! full weighting, trilinear interpolation, the exact coarsest solve (one thread block)
//! and a deterministic norm reduction (one partial per z-plane, then
//! `sum_partials_f64`). The same per-point functions as [`super::cpu`], so the
//! deterministic smoothers give the CPU's iterates bit for bit.
//!
//! On base-2 hierarchies the residual and its restriction run as one launch
//! (`mg_residual_restrict_<t>`: each thread block forms its tile's fine residuals in shared
//! memory and restricts from there), so the residual is never written to the grid and
//! read back; [`Solver::set_fused_restriction`] turns that off (same bits).
//!
//! A V or W cycle is some 20 launches per level, each a few microseconds of host work
//! for kernels that run about as long on small grids. Two things cut that, each giving
//! the same bits ([`Solver::set_cycle_graphs`] and [`Solver::set_fused_levels`] turn
//! them off):
//! - the levels of at most 9^3 points and 64 smoother blocks record their operations
//!   instead of launching them, and one thread block runs each stretch of them in order
//!   (`mg_ops_s<S>_<t>`, block edges 1 and 2), block barriers in place of launches;
//! - a cycle's launches are captured as a CUDA graph on the solver's own stream the
//!   second time it starts from given buffers (the first run puts its operation lists on
//!   the device), and replayed after: one launch per cycle.

use std::time::Instant;

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, Graph, LaunchConfig};
use ferrocuda_kernels::multigrid::{
    MAX_GPU_BLOCK, MgCoarseSolve, MgFillRhs, MgInterp, MgNormsPartial, MgOp, MgOps, MgResidual,
    MgResidualRestrict, MgRestrict, MgSmooth, NORM_SETS, NORM_THREADS, OPS_LEVEL_WORDS,
    OPS_MAX_BLOCK, OPS_MAX_N, OPS_MAX_SMOOTHER_BLOCKS, OPS_THREADS, OpsParams, RR_THREADS,
    SmoothParams, THREADS, blocks_per_dim, interp_points_per_thread, rr_grid, rr_shared_bytes,
    smoother_shared_bytes_per_thread, smoother_threads, smoother_threads_x,
};

use super::grid::{CoarseTables, SineProblem};
use super::{Hierarchy, Levels, MgOptions, MgReal, MgReport, Sweep, precision_name, solve_with};
use crate::blas1::gpu::finish_sum;
use crate::error::{Error, Result};

/// One grid level on the device.
#[derive(Debug)]
struct Level<T> {
    n: usize,
    /// `u[cur]` is the iterate, `u[1 - cur]` the second buffer.
    u: [DeviceBuffer<T>; 2],
    cur: usize,
    f: DeviceBuffer<T>,
}

/// A multigrid hierarchy on one GPU with the sine test problem on the finest grid.
#[derive(Debug)]
pub struct Solver<T: MgReal> {
    gpu: Gpu,
    opts: MgOptions,
    hier: Hierarchy,
    problem: SineProblem,
    m: usize,
    tab: DeviceBuffer<f64>,
    w: DeviceBuffer<f64>,
    scratch: [DeviceBuffer<f64>; 2],
    sine: DeviceBuffer<f64>,
    partials: DeviceBuffer<f64>,
    sums: DeviceBuffer<f64>,
    levels: Vec<Level<T>>,
    block: usize,
    inner: u32,
    omega: f64,
    setup_seconds: f64,
    /// Whether cycles are captured and replayed as graphs.
    use_graphs: bool,
    graphs: Vec<CycleGraph>,
    /// Cycle starting states met once and not captured yet.
    seen: Vec<Vec<usize>>,
    /// Whether the residual and its restriction run as one launch (base 2).
    fused_restriction: bool,
    /// Levels `0..=t` record their operations for the operation-list kernel (`None`:
    /// every operation is its own launch); `fusable` is where they can.
    fused_top: Option<usize>,
    fusable: Option<usize>,
    /// The operation-list kernel's levels table (`OPS_LEVEL_WORDS` per fusable level).
    level_table: DeviceBuffer<u64>,
    /// Operations recorded since the last launch.
    ops: Vec<u32>,
    /// Operation lists on the device, by content (graphs replay their addresses).
    op_lists: Vec<(Vec<u32>, DeviceBuffer<u32>)>,
}

/// The launches of one cycle that starts with the levels' iterates in the buffers
/// `start` (`Level::cur` per level) and leaves them in `end`.
#[derive(Debug)]
struct CycleGraph {
    start: Vec<usize>,
    end: Vec<usize>,
    graph: Graph,
}

/// The launch of a point-wise kernel over an `n^3` grid.
fn points_config(n: usize) -> LaunchConfig {
    let threads = n.next_multiple_of(32).min(THREADS);
    LaunchConfig::blocks(n.div_ceil(threads) as u32, threads as u32)
        .with_grid_y(n as u32)
        .with_grid_z(n as u32)
}

impl<T: MgReal> Solver<T> {
    /// Validates `opts` (block edge at most 6 on the GPU), checks that the hierarchy fits
    /// in the device's free memory, allocates it and sets up `f` on the finest grid.
    pub fn new(gpu: &Gpu, opts: &MgOptions) -> Result<Solver<T>> {
        // Loading the kernels (a JIT compile for a PTX-only build) is not setup time.
        crate::gpu::preload(gpu, &["multigrid", "blas1"])?;
        let start = Instant::now();
        // Its own stream: cycles are captured as graphs, which needs a stream that no
        // other thread issues work to meanwhile.
        let gpu = &gpu.new_stream()?;
        let hier = opts.validate()?;
        let block = opts.block_edge();
        if block > MAX_GPU_BLOCK {
            return Err(Error::InvalidArgument {
                op: "multigrid::gpu",
                reason: format!(
                    "block edge {block} is not built for the GPU (1..={MAX_GPU_BLOCK}); use a smaller --block or the CPU"
                ),
            });
        }
        let (free, _) = gpu.available_memory()?;
        // Keep some room for the context, the reduction scratch and the tables.
        hier.check_fits(
            size_of::<T>(),
            free.saturating_sub(256 << 20),
            "free GPU memory",
        )?;
        let mut levels = Vec::with_capacity(hier.depth());
        for &n in hier.sizes() {
            let len = n * n * n;
            levels.push(Level {
                n,
                u: [gpu.alloc_zeroed::<T>(len)?, gpu.alloc_zeroed::<T>(len)?],
                cur: 0,
                f: gpu.alloc_zeroed::<T>(len)?,
            });
        }
        let coarse = CoarseTables::new(opts.base);
        let m3 = coarse.m.pow(3);
        // The levels that fit the operation-list kernel (sizes grow with the level).
        let fits =
            |n: usize| n <= OPS_MAX_N && blocks_per_dim(n, block).pow(3) <= OPS_MAX_SMOOTHER_BLOCKS;
        let fusable = if block <= OPS_MAX_BLOCK {
            hier.sizes().iter().rposition(|&n| fits(n))
        } else {
            None
        };
        let mut table = Vec::new();
        for lv in &levels[..fusable.map_or(0, |t| t + 1)] {
            table.extend([
                lv.n as u64,
                lv.u[0].device_ptr(),
                lv.u[1].device_ptr(),
                lv.f.device_ptr(),
            ]);
        }
        debug_assert_eq!(table.len() % OPS_LEVEL_WORDS, 0);
        table.resize(table.len().max(1), 0);
        let problem = SineProblem::new(opts.n);
        let n = opts.n;
        let mut s = Solver {
            gpu: gpu.clone(),
            opts: opts.clone(),
            m: coarse.m,
            tab: gpu.upload(&coarse.tab)?,
            w: gpu.upload(&coarse.w)?,
            scratch: [gpu.alloc_zeroed(m3)?, gpu.alloc_zeroed(m3)?],
            sine: gpu.upload(&problem.sine)?,
            partials: gpu.alloc_zeroed(NORM_SETS * n)?,
            sums: gpu.alloc_zeroed(NORM_SETS)?,
            problem,
            hier,
            levels,
            block,
            inner: opts.smoother.inner_sweeps(opts.inner) as u32,
            omega: opts.omega_value(),
            setup_seconds: 0.0,
            use_graphs: true,
            fused_restriction: true,
            graphs: Vec::new(),
            seen: Vec::new(),
            fused_top: fusable,
            fusable,
            level_table: gpu.upload(&table)?,
            ops: Vec::new(),
            op_lists: Vec::new(),
        };
        let args = MgFillRhs {
            n,
            amp: s.problem.amp,
            s: s.sine.as_in(),
            f: s.levels.last_mut().expect("a level").f.as_out(),
        };
        // SAFETY: the finest level's f was allocated with n^3 values and the sine table
        // with n (`SineProblem::new(n)`) above; the grid covers x < n (checked in the
        // kernel), y, z < n.
        unsafe { s.gpu.launch(&T::FILL_RHS, points_config(n), args)? };
        s.gpu.synchronize()?;
        s.setup_seconds = start.elapsed().as_secs_f64();
        Ok(s)
    }

    /// Runs the solve of the options from `u = 0`; the solution stays on the device.
    pub fn solve(&mut self) -> Result<MgReport> {
        let device = self.gpu.name()?;
        let (opts, problem, setup) = (self.opts.clone(), self.problem.clone(), self.setup_seconds);
        solve_with(self, &opts, &problem, device, precision_name::<T>(), setup)
    }

    /// The iterate on the finest grid.
    pub fn solution(&self) -> &DeviceBuffer<T> {
        let top = self.levels.last().expect("a level");
        &top.u[top.cur]
    }

    /// The hierarchy.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hier
    }

    /// The device, on the solver's own stream (time its work with events on it).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Whether V and W cycles are captured as CUDA graphs and replayed (the default:
    /// `true`); `false` launches every operation of every cycle from the host, as a
    /// baseline. Either gives the same bits.
    pub fn set_cycle_graphs(&mut self, on: bool) {
        self.use_graphs = on;
        self.graphs.clear();
        self.seen.clear();
    }

    /// How many cycle graphs were captured (one per starting buffer state met twice;
    /// zero where graphs are off or the capture failed and the cycles were launched
    /// directly).
    pub fn cycle_graphs(&self) -> usize {
        self.graphs.len()
    }

    /// Whether the coarsest levels (at most 9^3 points and 64 smoother blocks) run their
    /// operations in one thread block per stretch (the default: `true`, for block edges
    /// 1 and 2) or launch each operation (`false`, the baseline). Either gives the same
    /// bits.
    pub fn set_fused_levels(&mut self, on: bool) {
        self.fused_top = if on { self.fusable } else { None };
        self.graphs.clear();
        self.seen.clear();
    }

    /// Whether the residual and its restriction run as one launch that keeps the fine
    /// residual in shared memory (the default: `true`; base 2 only, on the levels outside
    /// the operation-list kernel), or as two launches through the grid (`false`, the
    /// baseline). Either gives the same bits.
    pub fn set_fused_restriction(&mut self, on: bool) {
        self.fused_restriction = on;
        self.graphs.clear();
        self.seen.clear();
    }

    /// How many levels (the coarsest ones) run in the operation-list kernel: 0 where
    /// that is off or the block edge is above 2.
    pub fn fused_levels(&self) -> usize {
        self.fused_top.map_or(0, |t| t + 1)
    }

    /// Whether `level`'s operations are recorded for the operation-list kernel.
    fn fused(&self, level: usize) -> bool {
        self.fused_top.is_some_and(|t| level <= t)
    }

    fn record(&mut self, op: MgOp) {
        self.ops.push(op.encode());
    }

    /// Launches the operations recorded so far (one thread block runs them in order).
    /// A list met for the first time is uploaded, which a graph capture refuses: the
    /// first run of a cycle is never captured (`queue_cycle`).
    fn flush(&mut self) -> Result<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut self.ops);
        let at = match self.op_lists.iter().position(|(o, _)| *o == ops) {
            Some(i) => i,
            None => {
                let on_device = self.gpu.upload(&ops)?;
                self.op_lists.push((ops, on_device));
                self.op_lists.len() - 1
            }
        };
        let base = self.opts.base;
        let [sa, sb] = &mut self.scratch;
        let (list, on_device) = &self.op_lists[at];
        let args = MgOps {
            p: OpsParams {
                count: list.len(),
                base,
                iters: self.inner,
                omega: self.omega,
                inv_b6: 1.0 / (base as f64).powi(6),
                inv_b3: 1.0 / (base as f64).powi(3),
                m: self.m,
            },
            list: on_device.as_in(),
            levels: self.level_table.as_in(),
            tab: self.tab.as_in(),
            w: self.w.as_in(),
            a: sa.as_out(),
            b: sb.as_out(),
        };
        // SAFETY: the list names only levels 0..=fusable (`fused`), whose rows of the
        // table hold n <= OPS_MAX_N and the addresses of the level's own buffers (n^3
        // values each, allocated in `new` and never moved); block edge `self.block` <=
        // OPS_MAX_BLOCK (`fusable`); the coarse tables and scratch as for
        // `solve_coarsest`; one block of OPS_THREADS runs the list in order.
        let cfg = LaunchConfig::blocks(1, OPS_THREADS as u32);
        unsafe { self.gpu.launch(&T::OPS[self.block - 1], cfg, args)? };
        Ok(())
    }

    /// The buffer that holds each level's iterate.
    fn iterates(&self) -> Vec<usize> {
        self.levels.iter().map(|l| l.cur).collect()
    }

    fn set_iterates(&mut self, cur: &[usize]) {
        for (l, &c) in self.levels.iter_mut().zip(cur) {
            l.cur = c;
        }
    }

    /// One smoother sweep on the finest grid, queued (for benchmarks).
    pub fn sweep_finest(&mut self, sweep: Sweep) -> Result<()> {
        let top = self.levels.len() - 1;
        self.sweep(top, sweep)?;
        self.flush()
    }

    /// `r <- f - A u` on `level` into its second buffer.
    fn residual(&mut self, level: usize) -> Result<()> {
        let lv = &mut self.levels[level];
        let n = lv.n;
        let h = 1.0 / (n - 1) as f64;
        let [u0, u1] = &mut lv.u;
        let (u, r) = if lv.cur == 0 { (u0, u1) } else { (u1, u0) };
        let args = MgResidual {
            n,
            inv_h2: 1.0 / (h * h),
            u: u.as_in(),
            f: lv.f.as_in(),
            r: r.as_out(),
        };
        // SAFETY: u, f and r (the level's other buffer, so no alias) hold n^3 values
        // (allocated per level in `new`); the grid covers x < n (checked in the kernel),
        // y, z < n.
        unsafe { self.gpu.launch(&T::RESIDUAL, points_config(n), args)? };
        Ok(())
    }

    /// `f_{l-1} <- R (f_l - A u_l)` in one launch (base 2), the fine residual in shared
    /// memory only.
    fn residual_restrict(&mut self, level: usize) -> Result<()> {
        let (coarse, fine) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&mut coarse[level - 1], &fine[0]);
        let (nf, nc) = (fine.n, coarse.n);
        debug_assert_eq!(nf, 2 * (nc - 1) + 1);
        let h = 1.0 / (nf - 1) as f64;
        let [gx, gy, gz] = rr_grid(nc);
        let cfg = LaunchConfig::blocks(gx as u32, RR_THREADS as u32)
            .with_grid_y(gy as u32)
            .with_grid_z(gz as u32)
            .with_shared_bytes(rr_shared_bytes(size_of::<T>()) as u32);
        let args = MgResidualRestrict {
            nc,
            inv_h2: 1.0 / (h * h),
            inv_b6: 1.0 / 64.0,
            u: fine.u[fine.cur].as_in(),
            f: fine.f.as_in(),
            fc: coarse.f.as_out(),
        };
        // SAFETY: base 2 (the caller), so the fine level has (2 (nc - 1) + 1)^3 values in
        // u and f and the coarse f nc^3 (the hierarchy's sizes); rr_grid(nc) tiles cover
        // every coarse point, each block gets RR_THREADS threads and its tile's shared
        // memory; fc is another level's array than u and f.
        unsafe { self.gpu.launch(&T::RESIDUAL_RESTRICT, cfg, args)? };
        Ok(())
    }

    /// `f_{l-1} <- R src` for an array `src` of the fine `level`: its `f` (`from_rhs`)
    /// or its residual (in the second buffer of its `u`).
    fn restrict_from(&mut self, level: usize, from_rhs: bool) -> Result<()> {
        let b = self.opts.base;
        let (coarse, fine) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&mut coarse[level - 1], &fine[0]);
        let nc = coarse.n;
        let src = if from_rhs {
            &fine.f
        } else {
            &fine.u[1 - fine.cur]
        };
        let args = MgRestrict {
            nc,
            b,
            inv_b6: 1.0 / (b as f64).powi(6),
            r: src.as_in(),
            fc: coarse.f.as_out(),
        };
        // SAFETY: the fine level has (b (nc - 1) + 1)^3 values (the hierarchy's sizes,
        // `Hierarchy`), the coarse f nc^3; the grid covers x < nc (checked in the
        // kernel), y, z < nc.
        unsafe { self.gpu.launch(&T::RESTRICT, points_config(nc), args)? };
        Ok(())
    }
}

/// Solves the sine test problem with `opts` on the GPU: the solution (`n^3`, downloaded)
/// and the report.
pub fn solve<T: MgReal>(gpu: &Gpu, opts: &MgOptions) -> Result<(Vec<T>, MgReport)> {
    let mut s = Solver::<T>::new(gpu, opts)?;
    let report = s.solve()?;
    Ok((s.solution().download()?, report))
}

impl<T: MgReal> Levels for Solver<T> {
    fn depth(&self) -> usize {
        self.levels.len()
    }

    fn n(&self, level: usize) -> usize {
        self.levels[level].n
    }

    fn elem(&self) -> usize {
        size_of::<T>()
    }

    fn sweep(&mut self, level: usize, sweep: Sweep) -> Result<()> {
        if self.fused(level) {
            let lv = &mut self.levels[level];
            let src = lv.cur;
            if matches!(sweep, Sweep::AllOutOfPlace) {
                lv.cur = 1 - src;
            }
            let (mode, dst) = (sweep.mode(), lv.cur);
            self.record(MgOp::Sweep {
                level,
                mode,
                src,
                dst,
            });
            return Ok(());
        }
        self.flush()?;
        let (s, iters, omega) = (self.block, self.inner, self.omega);
        let lv = &mut self.levels[level];
        let n = lv.n;
        let h = 1.0 / (n - 1) as f64;
        let h2 = h * h;
        let nb = blocks_per_dim(n, s);
        let mode = sweep.mode();
        let out_of_place = matches!(sweep, Sweep::AllOutOfPlace);
        let cur = lv.cur;
        let [u0, u1] = &mut lv.u;
        let (u_cur, u_other) = if cur == 0 { (u0, u1) } else { (u1, u0) };
        // Out of place: read the iterate, write the other buffer; else both in the iterate.
        let (src, dst) = if out_of_place {
            (Some(&*u_cur), u_other)
        } else {
            (None, u_cur)
        };
        let u_out = dst.as_out();
        let u_in = src.map_or_else(|| u_out.as_in(), |u| u.as_in());
        let tx = smoother_threads_x(nb, mode);
        let elem = size_of::<T>();
        let threads = tx.next_multiple_of(32).min(smoother_threads(s, elem));
        let shared = threads * smoother_shared_bytes_per_thread(s, elem);
        let cfg = LaunchConfig::blocks(tx.div_ceil(threads) as u32, threads as u32)
            .with_grid_y(nb as u32)
            .with_grid_z(nb as u32)
            .with_shared_bytes(shared as u32);
        let args = MgSmooth {
            params: SmoothParams {
                n,
                nblocks: nb,
                mode,
                iters,
                h2,
                omega,
            },
            u_in,
            f: lv.f.as_in(),
            u_out,
        };
        // SAFETY: u_in, f and u_out hold n^3 values (allocated per level in `new`); the
        // kernel of edge s (1..=MAX_GPU_BLOCK, checked in `new`) updates blocks q <
        // nblocks = blocks_per_dim(n, s) per dimension (grid y, z = nb; threads past the
        // row's blocks do nothing); the shared-memory variants get their bytes per
        // thread for every thread of the launch. In place only for one colour (the other
        // colour's halo is not written) or the racy variant the caller asked for.
        unsafe { self.gpu.launch(&T::SMOOTH[s - 1], cfg, args)? };
        if out_of_place {
            lv.cur = 1 - cur;
        }
        Ok(())
    }

    fn restrict_residual(&mut self, level: usize) -> Result<()> {
        if self.fused(level) {
            let cur = self.levels[level].cur;
            self.record(MgOp::Residual {
                level,
                src: cur,
                dst: 1 - cur,
            });
            self.record(MgOp::Restrict {
                level,
                from_rhs: false,
                src: 1 - cur,
            });
            self.levels[level - 1].cur = 0;
            self.record(MgOp::Zero {
                level: level - 1,
                buf: 0,
            });
            return Ok(());
        }
        self.flush()?;
        if self.fused_restriction && self.opts.base == 2 {
            self.residual_restrict(level)?;
        } else {
            self.residual(level)?;
            self.restrict_from(level, false)?;
        }
        let coarse = &mut self.levels[level - 1];
        coarse.cur = 0;
        crate::blas1::gpu::fill(&mut coarse.u[0], T::ZERO)
    }

    fn restrict_rhs(&mut self, level: usize) -> Result<()> {
        if self.fused(level) {
            self.record(MgOp::Restrict {
                level,
                from_rhs: true,
                src: 0,
            });
            return Ok(());
        }
        self.flush()?;
        self.restrict_from(level, true)
    }

    fn prolong(&mut self, level: usize, add: bool) -> Result<()> {
        if self.fused(level) {
            let (coarse, fine) = (self.levels[level - 1].cur, self.levels[level].cur);
            self.record(MgOp::Interp {
                level,
                add,
                coarse,
                fine,
            });
            return Ok(());
        }
        self.flush()?;
        let b = self.opts.base as u32;
        let inv_b3 = 1.0 / (b as f64).powi(3);
        let (coarse, fine) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&coarse[level - 1], &mut fine[0]);
        let nf = fine.n;
        let args = MgInterp {
            nf,
            b,
            inv_b3,
            add: add as u32,
            uc: coarse.u[coarse.cur].as_in(),
            uf: fine.u[fine.cur].as_out(),
        };
        // SAFETY: the coarse u holds ((nf - 1) / b + 1)^3 values, the fine u nf^3 (the
        // hierarchy's sizes); the kernel touches interior fine points only (x, y, z <
        // nf - 1, checked in the kernel).
        // Base 2: a thread per pair of fine points along x (`interp_points_per_thread`).
        let cfg = match interp_points_per_thread(b) {
            1 => points_config(nf),
            per => {
                let nx = nf.div_ceil(per);
                let threads = nx.next_multiple_of(32).min(THREADS);
                LaunchConfig::blocks(nx.div_ceil(threads) as u32, threads as u32)
                    .with_grid_y(nf as u32)
                    .with_grid_z(nf as u32)
            }
        };
        unsafe { self.gpu.launch(&T::INTERP, cfg, args)? };
        Ok(())
    }

    fn solve_coarsest(&mut self) -> Result<()> {
        if self.fused(0) {
            let buf = self.levels[0].cur;
            self.record(MgOp::Coarse { buf });
            return Ok(());
        }
        self.flush()?;
        let lv = &mut self.levels[0];
        let [a, b] = &mut self.scratch;
        let args = MgCoarseSolve {
            m: self.m,
            tab: self.tab.as_in(),
            w: self.w.as_in(),
            fc: lv.f.as_in(),
            a: a.as_out(),
            b: b.as_out(),
            uc: lv.u[lv.cur].as_out(),
        };
        // SAFETY: `CoarseTables::new(base)` gave tab m^2 and w m^3 values, a and b were
        // allocated with m^3, and the coarsest level has m + 2 points per dimension
        // (f and u (m + 2)^3); one block runs the passes in order.
        let cfg = LaunchConfig::blocks(1, NORM_THREADS as u32);
        unsafe { self.gpu.launch(&T::COARSE_SOLVE, cfg, args)? };
        Ok(())
    }

    fn norms(&mut self) -> Result<[f64; 3]> {
        self.flush()?;
        let top = self.levels.last().expect("a level");
        let n = top.n;
        let h = 1.0 / (n - 1) as f64;
        let inv_h2 = 1.0 / (h * h);
        let scale = self.problem.scale;
        let shared = (NORM_THREADS / 32 * size_of::<f64>()) as u32;
        let args = MgNormsPartial {
            n,
            inv_h2,
            scale,
            s: self.sine.as_in(),
            u: top.u[top.cur].as_in(),
            f: top.f.as_in(),
            partials: self.partials.as_out(),
        };
        let cfg = LaunchConfig::blocks(n as u32, NORM_THREADS as u32).with_shared_bytes(shared);
        // SAFETY: the sine table has n values, u and f n^3 (allocated in `new` for the
        // finest n), partials NORM_SETS n; block z < n writes partials[k n + z].
        unsafe { self.gpu.launch(&T::NORMS_PARTIAL, cfg, args)? };
        // SAFETY: partials holds NORM_SETS sets of n values, sums NORM_SETS.
        unsafe { finish_sum(&self.gpu, n, &self.partials, self.sums.as_out(), NORM_SETS)? };
        let sums = self.sums.download()?;
        let h3 = h * h * h;
        Ok([0, 1, 2].map(|k| (h3 * sums[k]).sqrt()))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        Ok(self.gpu.synchronize()?)
    }

    fn reset(&mut self) -> Result<()> {
        // Every level from its first buffer: a cycle sets a coarse level's iterate before
        // it reads it, and each solve then meets the starting states of the last one,
        // whose graphs it replays.
        self.flush()?;
        self.set_iterates(&vec![0; self.levels.len()]);
        let top = self.levels.last_mut().expect("a level");
        crate::blas1::gpu::fill(&mut top.u[0], T::ZERO)
    }

    fn queue_cycle(&mut self, queue: &mut dyn FnMut(&mut Self) -> Result<()>) -> Result<bool> {
        let start = self.iterates();
        if self.use_graphs {
            if let Some(i) = self.graphs.iter().position(|g| g.start == start) {
                self.graphs[i].graph.launch()?;
                let end = self.graphs[i].end.clone();
                self.set_iterates(&end);
                return Ok(false);
            }
            if !self.seen.contains(&start) {
                // The first run from these buffers launches directly (and puts its
                // operation lists on the device); the second is captured.
                self.seen.push(start);
                queue(self)?;
                self.flush()?;
                return Ok(true);
            }
            let gpu = self.gpu.clone();
            // SAFETY: the captured kernels touch only this solver's buffers and
            // operation lists, allocated once and dropped with the graphs (fields of
            // the same struct); the stream is the solver's own (`new`), and a replay
            // runs on it, ordered with the solver's other work.
            let captured = unsafe {
                gpu.capture::<Error>(|_| {
                    queue(self)?;
                    self.flush()
                })
            };
            match captured {
                Ok(graph) => {
                    let end = self.iterates();
                    graph.launch()?;
                    self.graphs.push(CycleGraph { start, end, graph });
                    return Ok(true);
                }
                Err(_) => {
                    // Nothing ran: launch directly from the same buffers from now on.
                    self.ops.clear();
                    self.set_iterates(&start);
                    self.use_graphs = false;
                }
            }
        }
        queue(self)?;
        self.flush()?;
        Ok(true)
    }
}
