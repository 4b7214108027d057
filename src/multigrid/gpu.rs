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

use std::time::Instant;

use ferrocuda_host::{DeviceBuffer, DeviceSlice, Gpu, LaunchConfig, arg};
use ferrocuda_kernels::multigrid::{
    MAX_GPU_BLOCK, NORM_SETS, NORM_THREADS, THREADS, blocks_per_dim,
    smoother_shared_bytes_per_thread, smoother_threads, smoother_threads_x,
};
use ferrocuda_kernels::names::Blas1Kernels;

use super::grid::{CoarseTables, SineProblem};
use super::{Hierarchy, Levels, MgOptions, MgReal, MgReport, Sweep, precision_name, solve_with};
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
        let start = Instant::now();
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
        let (free, _) = gpu.memory_info()?;
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
        };
        let (amp, sp) = (s.problem.amp, s.sine.device_ptr());
        let fp = s.levels.last().expect("a level").f.device_ptr();
        // SAFETY: mg_fill_rhs_<t>(n, amp, s, f) reads s[0..n], writes f[0..n^3].
        unsafe {
            s.gpu.launch_untyped(
                T::MULTIGRID.fill_rhs,
                points_config(n),
                &mut [arg(&n), arg(&amp), arg(&sp), arg(&fp)],
            )?
        };
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

    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// One smoother sweep on the finest grid, queued (for benchmarks).
    pub fn sweep_finest(&mut self, sweep: Sweep) -> Result<()> {
        let top = self.levels.len() - 1;
        self.sweep(top, sweep)
    }

    /// `r <- f - A u` on `level` into its second buffer.
    fn residual(&self, level: usize) -> Result<()> {
        let lv = &self.levels[level];
        let n = lv.n;
        let h = 1.0 / (n - 1) as f64;
        let inv_h2 = 1.0 / (h * h);
        let (u, f, r) = (
            lv.u[lv.cur].device_ptr(),
            lv.f.device_ptr(),
            lv.u[1 - lv.cur].device_ptr(),
        );
        // SAFETY: mg_residual_<t>(n, inv_h2, u, f, r) reads u, f and writes r, n^3 each;
        // r is the other buffer.
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.residual,
                points_config(n),
                &mut [arg(&n), arg(&inv_h2), arg(&u), arg(&f), arg(&r)],
            )?
        };
        Ok(())
    }

    /// `f_{l-1} <- R src` for a fine array `src` of `level`.
    fn restrict_from(&self, level: usize, src: u64) -> Result<()> {
        let b = self.opts.base;
        let nc = self.levels[level - 1].n;
        let inv_b6 = 1.0 / (b as f64).powi(6);
        let fc = self.levels[level - 1].f.device_ptr();
        // SAFETY: mg_restrict_<t>(nc, b, inv_b6, r, fc) reads the fine grid
        // (b (nc - 1) + 1)^3 and writes fc, nc^3.
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.restrict,
                points_config(nc),
                &mut [arg(&nc), arg(&b), arg(&inv_b6), arg(&src), arg(&fc)],
            )?
        };
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
        let (s, iters, omega) = (self.block, self.inner, self.omega);
        let lv = &mut self.levels[level];
        let n = lv.n;
        let h = 1.0 / (n - 1) as f64;
        let h2 = h * h;
        let nb = blocks_per_dim(n, s);
        let mode = sweep.mode();
        let (src, dst) = match sweep {
            Sweep::AllOutOfPlace => (lv.cur, 1 - lv.cur),
            _ => (lv.cur, lv.cur),
        };
        let (u_in, f, u_out) = (
            lv.u[src].device_ptr(),
            lv.f.device_ptr(),
            lv.u[dst].device_ptr(),
        );
        let tx = smoother_threads_x(nb, mode);
        let elem = size_of::<T>();
        let threads = tx.next_multiple_of(32).min(smoother_threads(s, elem));
        let shared = threads * smoother_shared_bytes_per_thread(s, elem);
        let cfg = LaunchConfig::blocks(tx.div_ceil(threads) as u32, threads as u32)
            .with_grid_y(nb as u32)
            .with_grid_z(nb as u32)
            .with_shared_bytes(shared as u32);
        // SAFETY: mg_smooth_s<s>_<t>(n, nblocks, mode, iters, h2, omega, u_in, f, u_out)
        // reads u_in and f and writes the interior of u_out, n^3 each; the shared-memory
        // variants get their bytes per thread for every thread of the launch. In place only for
        // one colour (the other colour's halo is not written) or the racy variant the
        // caller asked for.
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.smooth[s - 1],
                cfg,
                &mut [
                    arg(&n),
                    arg(&nb),
                    arg(&mode),
                    arg(&iters),
                    arg(&h2),
                    arg(&omega),
                    arg(&u_in),
                    arg(&f),
                    arg(&u_out),
                ],
            )?
        };
        lv.cur = dst;
        Ok(())
    }

    fn restrict_residual(&mut self, level: usize) -> Result<()> {
        self.residual(level)?;
        let fine = &self.levels[level];
        self.restrict_from(level, fine.u[1 - fine.cur].device_ptr())?;
        let coarse = &mut self.levels[level - 1];
        coarse.cur = 0;
        crate::blas1::gpu::fill(&mut coarse.u[0], T::ZERO)
    }

    fn restrict_rhs(&mut self, level: usize) -> Result<()> {
        self.restrict_from(level, self.levels[level].f.device_ptr())
    }

    fn prolong(&mut self, level: usize, add: bool) -> Result<()> {
        let b = self.opts.base as u32;
        let inv_b3 = 1.0 / (b as f64).powi(3);
        let (coarse, fine) = (&self.levels[level - 1], &self.levels[level]);
        let nf = fine.n;
        let add = add as u32;
        let (uc, uf) = (
            coarse.u[coarse.cur].device_ptr(),
            fine.u[fine.cur].device_ptr(),
        );
        // SAFETY: mg_interp_<t>(nf, b, inv_b3, add, uc, uf) reads uc ((nf-1)/b + 1)^3 and
        // updates the interior of uf, nf^3.
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.interp,
                points_config(nf),
                &mut [
                    arg(&nf),
                    arg(&b),
                    arg(&inv_b3),
                    arg(&add),
                    arg(&uc),
                    arg(&uf),
                ],
            )?
        };
        Ok(())
    }

    fn solve_coarsest(&mut self) -> Result<()> {
        let m = self.m;
        let lv = &self.levels[0];
        let p = [
            self.tab.device_ptr(),
            self.w.device_ptr(),
            lv.f.device_ptr(),
            self.scratch[0].device_ptr(),
            self.scratch[1].device_ptr(),
            lv.u[lv.cur].device_ptr(),
        ];
        // SAFETY: mg_coarse_solve_<t>(m, tab, w, fc, a, b, uc): tab m^2, w, a, b m^3,
        // fc, uc (m + 2)^3; one block runs the passes in order.
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.coarse_solve,
                LaunchConfig::blocks(1, NORM_THREADS as u32),
                &mut [
                    arg(&m),
                    arg(&p[0]),
                    arg(&p[1]),
                    arg(&p[2]),
                    arg(&p[3]),
                    arg(&p[4]),
                    arg(&p[5]),
                ],
            )?
        };
        Ok(())
    }

    fn norms(&mut self) -> Result<[f64; 3]> {
        let top = self.levels.last().expect("a level");
        let n = top.n;
        let h = 1.0 / (n - 1) as f64;
        let inv_h2 = 1.0 / (h * h);
        let scale = self.problem.scale;
        let (sp, u, f, parts, out) = (
            self.sine.device_ptr(),
            top.u[top.cur].device_ptr(),
            top.f.device_ptr(),
            self.partials.device_ptr(),
            self.sums.device_ptr(),
        );
        let cfg = LaunchConfig::blocks(n as u32, NORM_THREADS as u32)
            .with_shared_bytes((NORM_THREADS / 32 * size_of::<f64>()) as u32);
        // SAFETY: mg_norms_partial_<t>(n, inv_h2, scale, s, u, f, partials) reads s (n),
        // u, f (n^3) and writes NORM_SETS sets of n partials; then each set is summed
        // into sums[set].
        unsafe {
            self.gpu.launch_untyped(
                T::MULTIGRID.norms_partial,
                cfg,
                &mut [
                    arg(&n),
                    arg(&inv_h2),
                    arg(&scale),
                    arg(&sp),
                    arg(&u),
                    arg(&f),
                    arg(&parts),
                ],
            )?;
            crate::blas1::gpu::finish_reduction::<f64>(
                &self.gpu,
                f64::BLAS1.sum_partials,
                NORM_SETS,
                n,
                parts,
                out,
            )?;
        }
        let sums = self.sums.download()?;
        let h3 = h * h * h;
        Ok([0, 1, 2].map(|k| (h3 * sums[k]).sqrt()))
    }

    fn sync(&mut self) -> Result<()> {
        Ok(self.gpu.synchronize()?)
    }

    fn reset(&mut self) -> Result<()> {
        let top = self.levels.last_mut().expect("a level");
        top.cur = 0;
        crate::blas1::gpu::fill(&mut top.u[0], T::ZERO)
    }
}
