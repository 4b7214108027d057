//! Multigrid on the CPU: rayon over z-planes (of blocks, for the smoother), the per-point
//! math of `ferrocuda_kernels::multigrid` (the same functions the kernels call, so the
//! deterministic smoothers give the GPU's iterates bit for bit).
//!
//! Arrays are allocated once per hierarchy ([`Solver::new`]): per level `u` (two buffers:
//! the double-buffered smoothers and the residual use the second) and `f`.
//!
//! `SblRacy` cannot race here (a data race is undefined behaviour in Rust): it updates in
//! place, even z-slabs of blocks in parallel, then odd ones, blocks in order inside a
//! slab, so a block reads some neighbours' new values and some old ones, as the thesis's
//! SBL did, but the same ones every run.

use std::time::Instant;

use rayon::prelude::*;

use ferrocuda_kernels::multigrid::{
    COARSE_PASSES, MAX_GPU_BLOCK, NORM_SETS, block_of_thread, block_result, block_rhs,
    blocks_per_dim, coarse_point, gs_update, idx, interp_at, norm_terms, residual_at, restrict_at,
    rhs_at, sixth, smooth_block, smoother_threads_x,
};

use super::grid::{CoarseTables, SineProblem};
use super::{Hierarchy, Levels, MgOptions, MgReal, MgReport, Sweep, precision_name, solve_with};
use crate::alloc;
use crate::cpu_dispatch::fma_kernel;
use crate::error::Result;

/// A raw pointer that may cross threads; every use says why it does not race.
#[derive(Clone, Copy)]
struct Ptr<T>(*mut T);
// SAFETY: the users below only access disjoint elements concurrently, or read.
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}

/// One grid level.
#[derive(Debug)]
struct Level<T> {
    n: usize,
    /// `u[cur]` is the iterate, `u[1 - cur]` the second buffer.
    u: [Vec<T>; 2],
    cur: usize,
    f: Vec<T>,
}

/// A multigrid hierarchy on the CPU with the sine test problem on the finest grid.
#[derive(Debug)]
pub struct Solver<T: MgReal> {
    opts: MgOptions,
    hier: Hierarchy,
    problem: SineProblem,
    coarse: CoarseTables,
    levels: Vec<Level<T>>,
    scratch: [Vec<f64>; 2],
    block: usize,
    inner: u32,
    omega: f64,
    setup_seconds: f64,
}

impl<T: MgReal> Solver<T> {
    /// Validates `opts`, checks that the hierarchy fits in what this process may
    /// allocate ([`crate::alloc::host_limit`]: available memory, the cgroup's limit,
    /// `ulimit -v`), allocates it (fallibly) and sets up `f` on the finest grid. Errors:
    /// invalid options, [`crate::Error::OutOfHostMemory`] naming `n`, the bytes and the
    /// limit.
    pub fn new(opts: &MgOptions) -> Result<Solver<T>> {
        let start = Instant::now();
        let hier = opts.validate()?;
        let what = hier.describe(precision_name::<T>());
        alloc::check_host_bytes(&what, hier.bytes(size_of::<T>()) as u128)?;
        let levels = hier
            .sizes()
            .iter()
            .map(|&n| {
                let len = n * n * n;
                Ok(Level {
                    n,
                    u: [
                        alloc::try_vec(&what, len, T::ZERO)?,
                        alloc::try_vec(&what, len, T::ZERO)?,
                    ],
                    cur: 0,
                    f: alloc::try_vec(&what, len, T::ZERO)?,
                })
            })
            .collect::<Result<Vec<Level<T>>>>()?;
        let coarse = CoarseTables::new(opts.base);
        let m3 = coarse.m.pow(3);
        let mut s = Solver {
            problem: SineProblem::new(opts.n),
            opts: opts.clone(),
            hier,
            coarse,
            levels,
            scratch: [vec![0.0; m3], vec![0.0; m3]],
            block: opts.block_edge(),
            inner: opts.smoother.inner_sweeps(opts.inner) as u32,
            omega: opts.omega_value(),
            setup_seconds: 0.0,
        };
        let n = opts.n;
        let (amp, sine) = (s.problem.amp, &s.problem.sine);
        let top = s.levels.last_mut().expect("a level");
        top.f
            .par_chunks_mut(n * n)
            .enumerate()
            .for_each(|(z, plane)| {
                for y in 0..n {
                    for x in 0..n {
                        // SAFETY: sine has n values and (x, y, z) is in the grid.
                        plane[y * n + x] = unsafe { rhs_at(n, x, y, z, amp, sine.as_ptr()) };
                    }
                }
            });
        s.setup_seconds = start.elapsed().as_secs_f64();
        Ok(s)
    }

    /// Runs the solve of the options from `u = 0`; the solution stays in
    /// [`Solver::solution`].
    pub fn solve(&mut self) -> Result<MgReport> {
        let device = format!("CPU ({} threads)", rayon::current_num_threads());
        let (opts, problem, setup) = (self.opts.clone(), self.problem.clone(), self.setup_seconds);
        solve_with(self, &opts, &problem, device, precision_name::<T>(), setup)
    }

    /// The iterate on the finest grid (`n^3`, x fastest, boundary included).
    pub fn solution(&self) -> &[T] {
        let top = self.levels.last().expect("a level");
        &top.u[top.cur]
    }

    /// The hierarchy.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hier
    }

    /// One smoother sweep on the finest grid (for benchmarks).
    pub fn sweep_finest(&mut self, sweep: Sweep) -> Result<()> {
        let top = self.levels.len() - 1;
        self.sweep(top, sweep)
    }
}

/// Solves the sine test problem with `opts` on the CPU: the solution (`n^3`) and the
/// report.
pub fn solve<T: MgReal>(opts: &MgOptions) -> Result<(Vec<T>, MgReport)> {
    let mut s = Solver::<T>::new(opts)?;
    let report = s.solve()?;
    let top = s.levels.pop().expect("a level");
    let Level { mut u, cur, .. } = top;
    Ok((std::mem::take(&mut u[cur]), report))
}

/// One block update with edge `s` (`<= MAX_GPU_BLOCK`: the kernels' own function;
/// larger: [`smooth_block_dyn`]).
///
/// # Safety
/// As [`smooth_block`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block_update<T: MgReal>(
    s: usize,
    n: usize,
    q: [usize; 3],
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
    scratch: &mut [Vec<T>; 2],
) {
    // SAFETY: forwarded.
    unsafe {
        match s {
            1 => smooth_block::<T, 1>(n, q, iters, h2, omega, u_in, f, u_out),
            2 => smooth_block::<T, 2>(n, q, iters, h2, omega, u_in, f, u_out),
            3 => smooth_block::<T, 3>(n, q, iters, h2, omega, u_in, f, u_out),
            4 => smooth_block::<T, 4>(n, q, iters, h2, omega, u_in, f, u_out),
            5 => smooth_block::<T, 5>(n, q, iters, h2, omega, u_in, f, u_out),
            6 => smooth_block::<T, 6>(n, q, iters, h2, omega, u_in, f, u_out),
            _ => smooth_block_dyn(s, n, q, iters, h2, omega, u_in, f, u_out, scratch),
        }
    }
}

/// [`smooth_block`] for any block edge `s` (CPU only, for `s > MAX_GPU_BLOCK`): the same
/// operations in the same order, with the block in `scratch`.
///
/// # Safety
/// As [`smooth_block`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn smooth_block_dyn<T: MgReal>(
    s: usize,
    n: usize,
    q: [usize; 3],
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
    scratch: &mut [Vec<T>; 2],
) {
    let o = [1 + q[0] * s, 1 + q[1] * s, 1 + q[2] * s];
    let e = [
        s.min(n - 1 - o[0]),
        s.min(n - 1 - o[1]),
        s.min(n - 1 - o[2]),
    ];
    let (hi, lo) = sixth::<T>();
    let nn = n * n;
    let [v, r] = scratch;
    v.clear();
    v.resize(s * s * s, T::ZERO);
    r.clear();
    r.resize(s * s * s, T::ZERO);
    let l = |x: usize, y: usize, z: usize| (z * s + y) * s + x;
    let active = |x: usize, y: usize, z: usize| x < e[0] && y < e[1] && z < e[2];
    for z in 0..s {
        for y in 0..s {
            for x in 0..s {
                if active(x, y, z) {
                    // SAFETY: active points are interior.
                    v[l(x, y, z)] = unsafe { *u_in.add(idx(n, o[0] + x, o[1] + y, o[2] + z)) };
                }
            }
        }
    }
    for z in 0..s {
        for y in 0..s {
            for x in 0..s {
                if active(x, y, z) {
                    let g = idx(n, o[0] + x, o[1] + y, o[2] + z);
                    // SAFETY: active points are interior, so every neighbour is in the grid.
                    let sum = unsafe {
                        (if x > 0 {
                            v[l(x - 1, y, z)]
                        } else {
                            *u_in.add(g - 1)
                        })
                        .to_f64()
                            + (if x + 1 < s {
                                v[l(x + 1, y, z)]
                            } else {
                                *u_in.add(g + 1)
                            })
                            .to_f64()
                            + (if y > 0 {
                                v[l(x, y - 1, z)]
                            } else {
                                *u_in.add(g - n)
                            })
                            .to_f64()
                            + (if y + 1 < s {
                                v[l(x, y + 1, z)]
                            } else {
                                *u_in.add(g + n)
                            })
                            .to_f64()
                            + (if z > 0 {
                                v[l(x, y, z - 1)]
                            } else {
                                *u_in.add(g - nn)
                            })
                            .to_f64()
                            + (if z + 1 < s {
                                v[l(x, y, z + 1)]
                            } else {
                                *u_in.add(g + nn)
                            })
                            .to_f64()
                    };
                    // SAFETY: g is in the grid.
                    r[l(x, y, z)] = block_rhs(h2, unsafe { *f.add(g) }, v[l(x, y, z)], sum);
                }
            }
        }
    }
    v.fill(T::ZERO);
    for _ in 0..iters {
        for z in 0..s {
            for y in 0..s {
                for x in 0..s {
                    if active(x, y, z) {
                        let mut w = -T::ZERO;
                        if x > 0 {
                            w = w + v[l(x - 1, y, z)];
                        }
                        if x + 1 < s {
                            w = w + v[l(x + 1, y, z)];
                        }
                        if y > 0 {
                            w = w + v[l(x, y - 1, z)];
                        }
                        if y + 1 < s {
                            w = w + v[l(x, y + 1, z)];
                        }
                        if z > 0 {
                            w = w + v[l(x, y, z - 1)];
                        }
                        if z + 1 < s {
                            w = w + v[l(x, y, z + 1)];
                        }
                        v[l(x, y, z)] = gs_update(w, hi, lo, r[l(x, y, z)]);
                    }
                }
            }
        }
    }
    for z in 0..s {
        for y in 0..s {
            for x in 0..s {
                if active(x, y, z) {
                    let g = idx(n, o[0] + x, o[1] + y, o[2] + z);
                    // SAFETY: interior point, read before this thread writes it.
                    unsafe { *u_out.add(g) = block_result(*u_in.add(g), v[l(x, y, z)], omega) };
                }
            }
        }
    }
}

fma_kernel! {
    /// The blocks of z-slab `qz` that `mode` updates, in order.
    fn sweep_slab[T: MgReal](
        s: usize,
        n: usize,
        qz: usize,
        mode: u32,
        iters: u32,
        h2: f64,
        omega: f64,
        u_in: Ptr<T>,
        f: Ptr<T>,
        u_out: Ptr<T>
    ) {
        let nb = blocks_per_dim(n, s);
        let mut scratch = [Vec::new(), Vec::new()];
        for qy in 0..nb {
            for t in 0..smoother_threads_x(nb, mode) {
                if let Some(qx) = block_of_thread(mode, t, qy, qz, nb) {
                    // SAFETY: the caller gives this slab to one thread and no other
                    // thread writes the points it reads (see `sweep`).
                    unsafe {
                        block_update(s, n, [qx, qy, qz], iters, h2, omega, u_in.0, f.0, u_out.0, &mut scratch)
                    }
                }
            }
        }
    }
}

fma_kernel! {
    /// Residual of plane `z` into `out` (zero on the boundary).
    fn residual_plane[T: MgReal](n: usize, z: usize, inv_h2: f64, u: &[T], f: &[T], out: &mut [T]) {
        let interior_plane = z > 0 && z < n - 1;
        for y in 0..n {
            for x in 0..n {
                let interior = interior_plane && y > 0 && y < n - 1 && x > 0 && x < n - 1;
                out[y * n + x] = if interior {
                    // SAFETY: interior point of the n^3 grids u and f.
                    T::from_f64(unsafe { residual_at(n, idx(n, x, y, z), inv_h2, u.as_ptr(), f.as_ptr()) })
                } else {
                    T::ZERO
                };
            }
        }
    }
}

fma_kernel! {
    /// Full weighting of the fine grid `r` into coarse plane `zc`.
    fn restrict_plane[T: MgReal](nc: usize, b: usize, zc: usize, r: &[T], out: &mut [T]) {
        let nf = b * (nc - 1) + 1;
        let inv_b6 = 1.0 / (b as f64).powi(6);
        let interior_plane = zc > 0 && zc < nc - 1;
        for y in 0..nc {
            for x in 0..nc {
                let interior = interior_plane && y > 0 && y < nc - 1 && x > 0 && x < nc - 1;
                out[y * nc + x] = if interior {
                    debug_assert_eq!(r.len(), nf * nf * nf);
                    // SAFETY: interior coarse point, r has nf^3 values.
                    unsafe { restrict_at(nf, b, inv_b6, x, y, zc, r.as_ptr()) }
                } else {
                    T::ZERO
                };
            }
        }
    }
}

fma_kernel! {
    /// `out (+)= P uc` on fine plane `z` (interior points only).
    fn prolong_plane[T: MgReal](nf: usize, b: usize, z: usize, add: bool, uc: &[T], out: &mut [T]) {
        if z == 0 || z == nf - 1 {
            return;
        }
        let nc = (nf - 1) / b + 1;
        let inv_b3 = 1.0 / (b as f64).powi(3);
        for y in 1..nf - 1 {
            for x in 1..nf - 1 {
                // SAFETY: interior fine point, uc has nc^3 values.
                let e = unsafe { interp_at(nc, b as u32, inv_b3, x as u32, y as u32, z as u32, uc.as_ptr()) };
                let o = &mut out[y * nf + x];
                *o = if add { T::from_f64(o.to_f64() + e) } else { T::from_f64(e) };
            }
        }
    }
}

fma_kernel! {
    /// The three norm sums of plane `z`.
    fn norms_plane[T: MgReal](n: usize, z: usize, inv_h2: f64, scale: f64, s: &[f64], u: &[T], f: &[T]) -> [f64; NORM_SETS] {
        let mut acc = [0.0; NORM_SETS];
        if z == 0 || z == n - 1 {
            return acc;
        }
        for y in 1..n - 1 {
            for x in 1..n - 1 {
                // SAFETY: interior point; s has n values, u and f n^3.
                let t = unsafe { norm_terms(n, x, y, z, inv_h2, scale, s.as_ptr(), u.as_ptr(), f.as_ptr()) };
                for k in 0..NORM_SETS {
                    acc[k] += t[k];
                }
            }
        }
        acc
    }
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
        let (src, dst) = match sweep {
            Sweep::AllOutOfPlace => (lv.cur, 1 - lv.cur),
            _ => (lv.cur, lv.cur),
        };
        let u_out = Ptr(lv.u[dst].as_mut_ptr());
        let u_in = if src == dst {
            u_out
        } else {
            Ptr(lv.u[src].as_mut_ptr())
        };
        let f = Ptr(lv.f.as_mut_ptr());
        let mode = sweep.mode();
        let run = |qz: usize| sweep_slab(s, n, qz, mode, iters, h2, omega, u_in, f, u_out);
        match sweep {
            // Out of place: every slab reads u_in and writes its own points of u_out.
            // One colour: a block reads its own points and the other colour's, which
            // nobody writes in this sweep.
            Sweep::AllOutOfPlace | Sweep::Red | Sweep::Black => {
                (0..nb).into_par_iter().for_each(run)
            }
            // In place, all blocks: slabs two apart do not touch each other's points.
            Sweep::AllInPlace => {
                for parity in 0..2 {
                    (0..nb)
                        .into_par_iter()
                        .filter(|qz| qz % 2 == parity)
                        .for_each(run)
                }
            }
        }
        lv.cur = dst;
        Ok(())
    }

    fn restrict_residual(&mut self, level: usize) -> Result<()> {
        let b = self.opts.base;
        let (lo, hi) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&mut lo[level - 1], &mut hi[0]);
        let n = fine.n;
        let h = 1.0 / (n - 1) as f64;
        let inv_h2 = 1.0 / (h * h);
        let cur = fine.cur;
        let [u0, u1] = &mut fine.u;
        let (u, r) = if cur == 0 { (&*u0, u1) } else { (&*u1, u0) };
        let f = &fine.f;
        r.par_chunks_mut(n * n)
            .enumerate()
            .for_each(|(z, plane)| residual_plane(n, z, inv_h2, u, f, plane));
        let nc = coarse.n;
        let r = &*r;
        coarse
            .f
            .par_chunks_mut(nc * nc)
            .enumerate()
            .for_each(|(zc, plane)| restrict_plane(nc, b, zc, r, plane));
        coarse.cur = 0;
        coarse.u[0].par_iter_mut().for_each(|v| *v = T::ZERO);
        Ok(())
    }

    fn restrict_rhs(&mut self, level: usize) -> Result<()> {
        let b = self.opts.base;
        let (lo, hi) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&mut lo[level - 1], &hi[0]);
        let nc = coarse.n;
        let f = &fine.f;
        coarse
            .f
            .par_chunks_mut(nc * nc)
            .enumerate()
            .for_each(|(zc, plane)| restrict_plane(nc, b, zc, f, plane));
        Ok(())
    }

    fn prolong(&mut self, level: usize, add: bool) -> Result<()> {
        let b = self.opts.base;
        let (lo, hi) = self.levels.split_at_mut(level);
        let (coarse, fine) = (&lo[level - 1], &mut hi[0]);
        let nf = fine.n;
        let uc = &coarse.u[coarse.cur];
        let cur = fine.cur;
        fine.u[cur]
            .par_chunks_mut(nf * nf)
            .enumerate()
            .for_each(|(z, plane)| prolong_plane(nf, b, z, add, uc, plane));
        Ok(())
    }

    fn solve_coarsest(&mut self) -> Result<()> {
        let m = self.coarse.m;
        let lv = &mut self.levels[0];
        let cur = lv.cur;
        let [a, b] = &mut self.scratch;
        let (tab, w) = (&self.coarse.tab, &self.coarse.w);
        for pass in 0..COARSE_PASSES {
            for l in 0..m * m * m {
                // SAFETY: the tables and scratch have m^2 and m^3 values, the grids
                // (m + 2)^3; the passes run in order.
                unsafe {
                    coarse_point(
                        pass,
                        m,
                        l,
                        tab.as_ptr(),
                        w.as_ptr(),
                        lv.f.as_ptr(),
                        a.as_mut_ptr(),
                        b.as_mut_ptr(),
                        lv.u[cur].as_mut_ptr(),
                    )
                };
            }
        }
        Ok(())
    }

    fn norms(&mut self) -> Result<[f64; 3]> {
        let top = self.levels.last().expect("a level");
        let n = top.n;
        let h = 1.0 / (n - 1) as f64;
        let inv_h2 = 1.0 / (h * h);
        let (scale, sine) = (self.problem.scale, &self.problem.sine);
        let (u, f) = (&top.u[top.cur], &top.f);
        let planes: Vec<[f64; NORM_SETS]> = (0..n)
            .into_par_iter()
            .map(|z| norms_plane(n, z, inv_h2, scale, sine, u, f))
            .collect();
        let mut sums = [0.0; NORM_SETS];
        for p in &planes {
            for k in 0..NORM_SETS {
                sums[k] += p[k];
            }
        }
        let h3 = h * h * h;
        Ok(sums.map(|s| (h3 * s).sqrt()))
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let top = self.levels.last_mut().expect("a level");
        top.cur = 0;
        top.u[0].par_iter_mut().for_each(|v| *v = T::ZERO);
        Ok(())
    }
}

/// The block smoother on one block with any edge: the kernels' function for
/// `s <= MAX_GPU_BLOCK`, the CPU's own loop version above it. For tests.
///
/// # Safety
/// As [`smooth_block`].
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn smooth_block_any<T: MgReal>(
    s: usize,
    dynamic: bool,
    n: usize,
    q: [usize; 3],
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
) {
    let mut scratch = [Vec::new(), Vec::new()];
    // SAFETY: forwarded.
    unsafe {
        if dynamic || s > MAX_GPU_BLOCK {
            smooth_block_dyn(s, n, q, iters, h2, omega, u_in, f, u_out, &mut scratch)
        } else {
            block_update(s, n, q, iters, h2, omega, u_in, f, u_out, &mut scratch)
        }
    }
}
