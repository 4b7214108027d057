//! LU with partial pivoting on one GPU, the matrix resident on the device.
//!
//! Blocked right-looking with look-ahead, per panel of `block` columns `k0..k1`:
//! 1. the panel is factorised recursively within its columns: halves down to leaves of
//!    up to 32 columns, each leaf one cooperative launch of `lu_leaf_coop` (or one
//!    `lu_panel_step` per column, [`LuOptions::leaf_panel`] off or too large for shared
//!    memory); between the halves the interchanges (`lu_swap_plan`, `lu_laswp`), `lu_trsm`
//!    and a GEMM at k = w / 2. A zero pivot sets `info` and the factorisation goes on
//!    without dividing by it; the host reads `info` once at the end. Then `L11^{-1}` (the
//!    triangular solve of the identity), for the solves of step 2.
//! 2. the panel's interchanges become one row permutation (`lu_swap_plan`: which row
//!    ends where), applied column by column (`lu_laswp`, coalesced on the panel's rows).
//!    The next panel's columns `k1..k2` get it, `U12 = L11^{-1} A12` (one GEMM on a copy
//!    of `A12`) and the update `A22 -= L21 U12` (a GEMM); then the next panel is
//!    factorised on a second stream of the greatest priority ([`LuOptions::lookahead`])
//!    while the main stream does the same for the columns right of it (and the
//!    interchanges left of the panel); events order the two streams, which touch
//!    disjoint columns and scratch (two `L11^{-1}` slots, panels alternating) in between.
//!
//! The GEMM is `gemm_dmma_sm90_k4_f64` / `gemm_dmma_f64` on the FP64 tensor cores
//! (`f64`), `gemm_nn_<t>` on the CUDA cores otherwise. `FERROCUDA_LU_PHASES=1` prints the
//! device time per phase (leaf, laswp, trsm, GEMM) to standard error, each launch waited
//! for (so without overlap).
//!
//! Same options, report and pivoting rule as [`super::cpu`]; the GEMM sums in another
//! order, so the factors agree with the CPU's to rounding.

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig};
use ferrocuda_kernels::abi::{In, Kernel, Out};
use ferrocuda_kernels::dense::{
    DMMA_SHARED_BYTES, DMMA_TILE, GEMM_K, GEMM_TILE, Gemm, LASWP_COLS, LASWP_THREADS, LEAF_MAX,
    LEAF_MAX_BLOCKS, LEAF_ROWS_LEN, LU_SWAP_PLAN, LuCopy, LuLaswp, LuLeafCoop, LuPanelStep,
    LuSwapPlan, LuTrsm, PANEL_MAX_BLOCKS, PANEL_SHARED_BYTES, PANEL_THREADS, SWAP_MAX,
    SWAP_PLAN_THREADS, TRSM_COLS, TRSM_MAX_KB, TRSM_THREADS, leaf_shared_bytes, swap_plan_len,
    swap_plan_shared_bytes, trsm_shared_bytes,
};
use ferrocuda_kernels::hopper::{GemmDmmaSm90, HOPPER_SHARED_BYTES, HOPPER_THREADS, HOPPER_TILE};

use super::condition::{self, Finished, zero_pivot_error};
use super::{Lu, LuOptions, LuReport, LuScalar, Matrix, Pivoting, check_square};
use crate::error::{Error, Result, check_device};

/// Device scratch of one factorisation: pivot partials, the block counter, `info`.
pub struct LuWorkspace {
    part_val: DeviceBuffer<f64>,
    part_idx: DeviceBuffer<u32>,
    counter: DeviceBuffer<u32>,
    info: DeviceBuffer<u32>,
    /// Candidate rows of `lu_leaf_coop` (8 bytes per entry: fits `f32` and `f64`).
    rows: DeviceBuffer<f64>,
    /// Grid-barrier arrival counter of `lu_leaf_coop`.
    barrier: DeviceBuffer<u32>,
    /// Swap plans (`lu_swap_plan`): the plan of interchanges `k0..k1` at `3 k0`; grown
    /// to `3 n` by [`factor_device`].
    plan: DeviceBuffer<u32>,
    /// Two `L11^{-1}` of `block x block` (panels alternate), then a `block x n` copy of
    /// the rows a triangular solve rewrites (8 bytes per entry: fits `f32` and `f64`);
    /// grown by [`factor_device`].
    scratch: DeviceBuffer<f64>,
}

impl LuWorkspace {
    /// Allocates the scratch on `gpu`.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(LuWorkspace {
            part_val: gpu.alloc_zeroed(PANEL_MAX_BLOCKS)?,
            part_idx: gpu.alloc_zeroed(PANEL_MAX_BLOCKS)?,
            counter: gpu.alloc_zeroed(1)?,
            info: gpu.alloc_zeroed(1)?,
            rows: gpu.alloc_zeroed(LEAF_ROWS_LEN)?,
            barrier: gpu.alloc_zeroed(1)?,
            plan: gpu.alloc_zeroed(1)?,
            scratch: gpu.alloc_zeroed(1)?,
        })
    }

    /// Grows the plan and scratch buffers for an `n x n` factorisation in panels of
    /// `block` columns.
    fn reserve(&mut self, n: usize, block: usize) -> Result<()> {
        let gpu = self.info.gpu().clone();
        if self.plan.len() < swap_plan_len(n) {
            self.plan = gpu.alloc_zeroed(swap_plan_len(n))?;
        }
        let need = 2 * block * block + block * n;
        if self.scratch.len() < need {
            self.scratch = gpu.alloc_zeroed(need)?;
        }
        Ok(())
    }
}

const _: () = assert!(super::MAX_BLOCK <= SWAP_MAX);

/// Factors `P A = L U` on the GPU: uploads `a`, factors it on the device
/// ([`factor_device`]), downloads the factors and pivots; then the condition estimate
/// and the backward error on the host, from the factors (module docs of [`super`]).
/// The report's `factor_ms` is the device time of the factorisation, `total_ms` includes
/// both copies. Errors: as [`super::cpu::factor`] (NaN or infinity in `A` before
/// anything is uploaded), plus the GPU's, and [`Error::OutOfDeviceMemory`] where the
/// matrix does not fit the device.
pub fn factor<T: LuScalar>(gpu: &Gpu, a: &Matrix<T>, opts: &LuOptions) -> Result<Lu<T>> {
    const OP: &str = "dense::gpu::factor";
    let n = check_square(OP, a)?;
    opts.check(OP)?;
    a.check_finite(OP, "A")?;
    let anorm = a.norm1();
    // The matrix, the pivots and the largest scratch (LuWorkspace::reserve).
    let bytes = (n as u128 * n as u128) * size_of::<T>() as u128
        + 4 * n as u128
        + 8 * (2 * (opts.block * opts.block) as u128 + (opts.block * n) as u128);
    crate::alloc::check_device_bytes(
        gpu,
        &format!("the LU of the {n} x {n} {} matrix", T::SUFFIX),
        bytes,
    )?;
    // Module loading (a JIT compile for a PTX-only build) is not factorisation time.
    gpu.preload_module("ferrocuda_kernels::dense")?;
    if gpu.compute_capability()?.0 >= 9 {
        gpu.preload_module("ferrocuda_kernels::hopper")?;
    }
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
    let report = condition::report(
        Finished {
            op: OP,
            a,
            anorm,
            factors: &factors,
            ipiv: &ipiv,
            device: gpu.name()?,
            factor_ms,
            total_ms: Some(total_ms),
        },
        opts,
    )?;
    Ok(Lu {
        factors,
        ipiv,
        report,
    })
}

/// Solves `A X = B`: factors on the GPU ([`factor`]), then the interchanges and the two
/// triangular solves on the host ([`Lu::solve`], `O(n^2 k)`). Errors: as
/// [`super::solve`].
pub fn solve<T: LuScalar>(
    gpu: &Gpu,
    a: &Matrix<T>,
    b: &Matrix<T>,
    opts: &LuOptions,
) -> Result<(Matrix<T>, LuReport)> {
    let n = check_square("dense::gpu::solve", a)?;
    crate::error::check_len("dense::gpu::solve", "rows of B", n, b.nrows())?;
    b.check_finite("dense::gpu::solve", "B")?;
    let lu = factor(gpu, a, opts)?;
    let x = lu.solve(b)?;
    Ok((x, lu.report))
}

/// Factors the column-major `n x n` matrix in `a` in place on its stream (`ipiv` gets
/// the interchanges); synchronises once at the end to read `info`. Errors: lengths,
/// devices, `opts.block`, a zero pivot (first such column; `a` then holds a partial
/// factorisation): [`Error::Singular`] where the matrix is singular (with partial
/// pivoting always; without, where the rest of the column is zero too), else
/// [`Error::ZeroPivot`]. The input is not checked for NaN or infinity (that would cost a
/// pass over the matrix in every timed factorisation; [`factor`] checks on the host), nor
/// is the condition estimated: no report.
pub fn factor_device<T: LuScalar>(
    n: usize,
    a: &mut DeviceBuffer<T>,
    ipiv: &mut DeviceBuffer<u32>,
    ws: &mut LuWorkspace,
    opts: &LuOptions,
) -> Result<()> {
    const OP: &str = "dense::gpu::factor_device";
    opts.check(OP)?;
    let n2 = n.checked_mul(n).ok_or_else(|| Error::InvalidArgument {
        op: OP,
        reason: format!("n = {n}: n * n overflows"),
    })?;
    crate::error::check_len(OP, "a (n * n)", n2, a.len())?;
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
    let gemm_kernel = GemmKernel::pick::<T>(&gpu, opts.tensor_cores)?;
    prepare_gemm::<T>(&gpu, gemm_kernel)?;
    let leaf = if opts.leaf_panel {
        LeafPlan::new::<T>(&gpu, n)?
    } else {
        None
    };
    let trsm_bytes = trsm_shared_bytes(TRSM_MAX_KB, size_of::<T>());
    if trsm_bytes > 48 * 1024 {
        gpu.allow_dynamic_shared(&T::LU_TRSM, trsm_bytes)?;
    }
    ws.reserve(n, opts.block)?;
    ws.info.copy_from_host(&[0])?;
    ws.counter.copy_from_host(&[0])?;
    ws.barrier.copy_from_host(&[0])?;
    let partial = opts.pivoting == Pivoting::Partial;
    // The 8-byte scratch entries viewed as T (f32: two per entry).
    let mut rows = ws.rows.view_mut(..)?.cast::<T>()?;
    let mut scratch = ws.scratch.view_mut(..)?.cast::<T>()?;
    let mut run = Run::<T> {
        n,
        a: a.as_out(),
        ipiv: ipiv.as_out(),
        part_val: ws.part_val.as_out(),
        part_idx: ws.part_idx.as_out(),
        counter: ws.counter.as_out(),
        info: ws.info.as_out(),
        rows: rows.as_out(),
        barrier: ws.barrier.as_out(),
        plan: ws.plan.as_out(),
        scratch: scratch.as_out(),
        nb: opts.block,
        pivot: partial as u32,
        gemm: gemm_kernel,
        leaf,
        bar_base: 0,
        phases: Phases::from_env(),
    };
    let nb = opts.block;
    // Look-ahead: panels are factorised on a second stream of the greatest priority
    // while the main stream applies the previous panel to the columns right of the next.
    let side = if opts.lookahead && n > nb {
        let s = gpu.new_priority_stream()?;
        s.wait_for(&gpu)?; // the workspace resets above
        Some(s)
    } else {
        None
    };
    let pg = side.as_ref().unwrap_or(&gpu);
    let (mut k0, mut k1) = (0, nb.min(n));
    // SAFETY (all launches below): every index range lies inside the n x n matrix with
    // leading dimension n and `ipiv` has n entries (see `Run`); work on the two streams
    // touches disjoint columns between the events that order them: the side stream
    // only columns k1..k2 of the next panel, the main stream the others.
    unsafe {
        run.panel(pg, 0, k1)?;
        if k1 < n {
            run.invert_l11(pg, 0, k1)?;
        }
        loop {
            if let Some(s) = &side {
                gpu.wait_for(s)?;
            }
            if partial && (k0 > 0 || k1 < n) {
                run.swap_plan(&gpu, Phase::Swap, (k0, k1))?;
            }
            if k1 >= n {
                if partial && k0 > 0 {
                    run.laswp(&gpu, (k0, k1), (0, n), (k0, k1))?;
                }
                break;
            }
            let k2 = (k1 + nb).min(n);
            let kb = k1 - k0;
            // The next panel's columns first: swaps, U12, update.
            if partial {
                run.laswp(&gpu, (k0, k1), (k1, k2), (0, 0))?;
            }
            run.trsm_inv(&gpu, (k0, kb), (k1, k2))?;
            run.update(&gpu, Phase::GemmNext, (k1, n), (k1, k2), (k0, k1))?;
            if let Some(s) = &side {
                s.wait_for(&gpu)?;
            }
            run.panel(pg, k1, k2)?;
            if k2 < n {
                run.invert_l11(pg, k1, k2)?;
            }
            // Then every other column: left of the panel (swaps only) and right of the
            // next panel (swaps, U12, update), while the next panel is factorised.
            if partial {
                run.laswp(&gpu, (k0, k1), (0, n), (k0, k2))?;
            }
            if k2 < n {
                run.trsm_inv(&gpu, (k0, kb), (k2, n))?;
                run.update(&gpu, Phase::GemmRest, (k1, n), (k2, n), (k0, k1))?;
            }
            k0 = k1;
            k1 = k2;
        }
    }
    run.phases.report(n, nb, side.is_some());
    let mut info = [0u32];
    ws.info.copy_to_host(&mut info)?;
    if info[0] != 0 {
        let column = info[0] as usize - 1;
        // Without interchanges the rest of the column is left as it was at the zero pivot
        // (not scaled, `multiplier`): all zero proves the matrix singular.
        let below_is_zero = partial || {
            let mut rest = gpu.alloc::<T>(n - column - 1)?;
            rest.copy_from_device(&a.view(column * n + column + 1..(column + 1) * n)?)?;
            rest.download()?.iter().all(|&x| x == T::ZERO)
        };
        return Err(zero_pivot_error(OP, column, opts.pivoting, below_is_zero));
    }
    Ok(())
}

/// Rows of the triangular solve's base case (`lu_trsm`, `O(kb^2)` per column); taller
/// blocks split in halves joined by a GEMM.
const TRSM_BASE: usize = TRSM_MAX_KB;

/// The phases that `FERROCUDA_LU_PHASES=1` times.
#[derive(Clone, Copy)]
enum Phase {
    Leaf,
    Invert,
    PanelSwap,
    PanelTrsm,
    PanelGemm,
    Swap,
    Trsm,
    GemmNext,
    GemmRest,
}

const PHASE_NAMES: [&str; 9] = [
    "leaf (panel factorisation)",
    "inverse of L11",
    "panel laswp",
    "panel trsm",
    "panel gemm",
    "laswp",
    "trsm",
    "gemm (next panel)",
    "gemm (rest)",
];

/// Per-phase device time, for diagnosis: with `FERROCUDA_LU_PHASES=1` every launch
/// of [`factor_device`] is timed by events on its stream and waited for (which
/// serialises the look-ahead), and the totals go to standard error at the end.
struct Phases {
    on: bool,
    ms: [f64; 9],
    calls: [usize; 9],
    start: std::time::Instant,
}

impl Phases {
    fn from_env() -> Self {
        Phases {
            on: std::env::var_os("FERROCUDA_LU_PHASES").is_some_and(|v| v != "0"),
            ms: [0.0; 9],
            calls: [0; 9],
            start: std::time::Instant::now(),
        }
    }

    fn time(&mut self, gpu: &Gpu, phase: Phase, f: impl FnOnce() -> Result<()>) -> Result<()> {
        if !self.on {
            return f();
        }
        let timer = gpu.timer()?;
        timer.start()?;
        f()?;
        timer.stop()?;
        self.ms[phase as usize] += timer.elapsed_ms()?;
        self.calls[phase as usize] += 1;
        Ok(())
    }

    fn report(&self, n: usize, nb: usize, lookahead: bool) {
        if !self.on {
            return;
        }
        let total: f64 = self.ms.iter().sum();
        eprintln!(
            "[lu phases] n = {n}, block = {nb}, look-ahead {}: {total:.2} ms of kernels, {:.2} ms wall",
            if lookahead { "on (serialised)" } else { "off" },
            self.start.elapsed().as_secs_f64() * 1e3
        );
        for (i, name) in PHASE_NAMES.iter().enumerate() {
            eprintln!(
                "[lu phases]   {name:<28} {:>9.2} ms {:>5.1} % {:>6} launches",
                self.ms[i],
                100.0 * self.ms[i] / total.max(1e-30),
                self.calls[i]
            );
        }
    }
}

/// One factorisation's device pointers and plan; its methods issue the launches. The
/// pointers borrow the matrix, the pivots and the workspace for `'a`; blocks of the
/// matrix are offsets from `a` ([`Run::at`]).
struct Run<'a, T> {
    n: usize,
    a: Out<'a, T>,
    ipiv: Out<'a, u32>,
    /// [`LuWorkspace`]'s scratch, as named there.
    part_val: Out<'a, f64>,
    part_idx: Out<'a, u32>,
    counter: Out<'a, u32>,
    info: Out<'a, u32>,
    rows: Out<'a, T>,
    barrier: Out<'a, u32>,
    /// Swap plans ([`LuWorkspace`]).
    plan: Out<'a, u32>,
    /// Two `L11^{-1}` and the triangular solves' copy ([`LuWorkspace`]).
    scratch: Out<'a, T>,
    /// Panel width.
    nb: usize,
    pivot: u32,
    gemm: GemmKernel,
    leaf: Option<LeafPlan>,
    bar_base: u32,
    phases: Phases,
}

impl<'a, T: LuScalar> Run<'a, T> {
    /// Pointer to element `(i, j)` (`i, j <= n`).
    fn at(&self, i: usize, j: usize) -> Out<'a, T> {
        debug_assert!(i <= self.n && j <= self.n);
        // SAFETY: an offset inside the n x n matrix (or one past a column); what a
        // launch reads or writes from it is stated at that launch.
        unsafe { self.a.add(i + j * self.n) }
    }

    /// Factorises columns `c0..c1` (rows `c0..n`) with partial pivoting, interchanging
    /// rows within these columns only: leaves of up to `LEAF_MAX` columns, joined
    /// recursively (left half, its swaps / U12 / update on the right half, right half,
    /// its swaps on the left half), so the GEMMs inside the panel run at k = w / 2.
    ///
    /// # Safety
    /// `c0 < c1 <= n`; the workspace and matrix of this run are live on `g`'s device.
    unsafe fn panel(&mut self, g: &Gpu, c0: usize, c1: usize) -> Result<()> {
        let w = c1 - c0;
        if w <= LEAF_MAX {
            return unsafe { self.leaf(g, c0, c1) };
        }
        let mid = c0 + (w / 2).div_ceil(LEAF_MAX) * LEAF_MAX;
        let mid = if mid >= c1 { c0 + LEAF_MAX } else { mid };
        unsafe {
            self.panel(g, c0, mid)?;
            if self.pivot != 0 {
                self.swap_plan(g, Phase::PanelSwap, (c0, mid))?;
                self.laswp_phase(g, Phase::PanelSwap, (c0, mid), (mid, c1), (0, 0))?;
            }
            let l11 = (self.at(c0, c0), self.n);
            let a12 = (self.at(c0, mid), self.n);
            self.trsm_rec(g, Phase::PanelTrsm, l11, mid - c0, a12, c1 - mid)?;
            self.update(g, Phase::PanelGemm, (mid, self.n), (mid, c1), (c0, mid))?;
            self.panel(g, mid, c1)?;
            if self.pivot != 0 {
                self.swap_plan(g, Phase::PanelSwap, (mid, c1))?;
                self.laswp_phase(g, Phase::PanelSwap, (mid, c1), (c0, mid), (0, 0))?;
            }
        }
        Ok(())
    }

    /// Factorises the leaf `c0..c1` (at most `LEAF_MAX` columns): one cooperative
    /// `lu_leaf_coop` launch, or one `lu_panel_step` per column without a leaf plan.
    ///
    /// # Safety
    /// As [`Run::panel`].
    unsafe fn leaf(&mut self, g: &Gpu, c0: usize, c1: usize) -> Result<()> {
        let n = self.n;
        let (a, ipiv, info) = (self.a, self.ipiv, self.info);
        let (part_val, part_idx) = (self.part_val, self.part_idx);
        let (rows, bar, counter) = (self.rows, self.barrier, self.counter);
        let pivot = self.pivot;
        let lw = c1 - c0;
        if let Some(plan) = &self.leaf {
            let blocks = plan.blocks;
            let cfg = LaunchConfig::blocks(blocks as u32, PANEL_THREADS as u32)
                .with_shared_bytes(plan.shared_bytes(n - c0, lw, size_of::<T>()) as u32);
            let bar_base = self.bar_base;
            self.phases.time(g, Phase::Leaf, || {
                // SAFETY: lu_leaf_coop(n, lda, j0, w, pivot, a, ipiv, info, part_val,
                // part_idx, rows, bar, bar_base) touches rows c0..n of columns c0..c1,
                // ipiv[c0..c1], `blocks <= LEAF_MAX_BLOCKS` partials and candidate
                // rows, and the barrier counter; the caller's promise.
                let args = LuLeafCoop {
                    n,
                    lda: n,
                    j0: c0,
                    w: lw,
                    pivot,
                    a,
                    ipiv,
                    info,
                    part_val,
                    part_idx,
                    rows,
                    bar,
                    bar_base,
                };
                unsafe { g.launch_cooperative(&T::LU_LEAF_COOP, cfg, args)? };
                Ok(())
            })?;
            self.bar_base = bar_base.wrapping_add((blocks * lw) as u32);
            return Ok(());
        }
        self.phases.time(g, Phase::Leaf, || {
            for j in c0..=c1 {
                if j == n {
                    break; // the last column of the matrix has no rows below it to scale
                }
                let rows = n - j;
                let blocks = rows.div_ceil(PANEL_THREADS).clamp(1, PANEL_MAX_BLOCKS);
                let cfg = LaunchConfig::blocks(blocks as u32, PANEL_THREADS as u32)
                    .with_shared_bytes(PANEL_SHARED_BYTES as u32);
                // SAFETY: lu_panel_step(n, lda, j0, j, pend, pivot, a, ipiv, info,
                // part_val, part_idx, counter) touches rows j-1..n of columns c0..c1,
                // ipiv[j], info, `blocks <= PANEL_MAX_BLOCKS` partials and the counter.
                let args = LuPanelStep {
                    n,
                    lda: n,
                    j0: c0,
                    j,
                    pend: c1,
                    pivot,
                    a,
                    ipiv,
                    info,
                    part_val,
                    part_idx,
                    counter,
                };
                unsafe { g.launch(&T::LU_PANEL_STEP, cfg, args)? };
            }
            Ok(())
        })
    }

    /// The swap plan of the interchanges starting at `k0` (`k0 < n`).
    fn plan_at(&self, k0: usize) -> Out<'a, u32> {
        // SAFETY: the workspace holds the plans of all n interchanges (`reserve`).
        unsafe { self.plan.add(swap_plan_len(k0)) }
    }

    /// Panel `k0`'s `L11^{-1}` (`nb x nb`; panels alternate).
    fn linv_at(&self, k0: usize) -> Out<'a, T> {
        // SAFETY: the scratch starts with two nb x nb slots (`reserve`).
        unsafe { self.scratch.add((k0 / self.nb) % 2 * self.nb * self.nb) }
    }

    /// The triangular solves' copy of the rows they rewrite (`nb x n`).
    fn work(&self) -> Out<'a, T> {
        // SAFETY: the scratch holds 2 nb nb + nb n entries of T (`reserve`).
        unsafe { self.scratch.add(2 * self.nb * self.nb) }
    }

    /// The swap plan of `ipiv[k0..k1]` (`lu_swap_plan`), timed as `phase`.
    ///
    /// # Safety
    /// `ipiv[k0..k1]` hold rows in `k0..n`, written by earlier launches on `g`'s stream
    /// or ordered before it; no launch reads plan `k0` meanwhile.
    unsafe fn swap_plan(&mut self, g: &Gpu, phase: Phase, (k0, k1): (usize, usize)) -> Result<()> {
        let (ipiv, plan) = (self.ipiv, self.plan_at(k0));
        // SAFETY: the caller's promise; the plan's 3 w entries at 3 k0 lie inside the
        // workspace's 3 n.
        self.phases.time(g, phase, || unsafe {
            swap_plan_raw(g, (k0, k1), ipiv.as_in(), plan)
        })
    }

    /// Applies the swap plan of `ipiv[k0..k1]` ([`Run::swap_plan`]) to columns `lo..hi`
    /// outside `skip0..skip1`.
    ///
    /// # Safety
    /// The plan of `k0..k1` was made by an earlier launch on `g`'s stream (or ordered
    /// before it); `hi <= n`.
    unsafe fn laswp(
        &mut self,
        g: &Gpu,
        ks: (usize, usize),
        cols: (usize, usize),
        skip: (usize, usize),
    ) -> Result<()> {
        unsafe { self.laswp_phase(g, Phase::Swap, ks, cols, skip) }
    }

    /// [`Run::laswp`] timed as `phase`.
    ///
    /// # Safety
    /// As [`Run::laswp`].
    unsafe fn laswp_phase(
        &mut self,
        g: &Gpu,
        phase: Phase,
        (k0, k1): (usize, usize),
        (lo, hi): (usize, usize),
        (skip0, skip1): (usize, usize),
    ) -> Result<()> {
        if hi <= lo || k1 <= k0 {
            return Ok(());
        }
        // Columns lo..hi as a matrix of their own: the pointer moves by whole columns.
        let a = self.at(0, lo);
        let (skip0, skip1) = (skip0.saturating_sub(lo), skip1.saturating_sub(lo));
        let (n, ncols, plan) = (self.n, hi - lo, self.plan_at(k0));
        // SAFETY: the caller's promise; the plan's rows are all < n.
        self.phases.time(g, phase, || unsafe {
            laswp_raw::<T>(g, (n, ncols, a), (k0, k1), (skip0, skip1), plan.as_in())
        })
    }

    /// `D <- S` (`rows x cols`), or `D <- I` where `s` is `None`, timed as `phase`.
    ///
    /// # Safety
    /// Both blocks lie in live device memory of `g`'s device and do not overlap.
    unsafe fn copy(
        &mut self,
        g: &Gpu,
        phase: Phase,
        (rows, cols): (usize, usize),
        s: Option<(Out<'a, T>, usize)>,
        (d, ldd): (Out<'a, T>, usize),
    ) -> Result<()> {
        // Without a source the kernel reads nothing; it gets the target's address.
        let (eye, (s, lds)) = match s {
            Some(s) => (0u32, s),
            None => (1u32, (d, ldd)),
        };
        let cfg = LaunchConfig::for_elements(rows * cols, 256);
        self.phases.time(g, phase, || {
            let args = LuCopy {
                rows,
                cols,
                eye,
                s: s.as_in(),
                lds,
                d,
                ldd,
            };
            // SAFETY: lu_copy touches the rows x cols blocks at s and d; the caller's
            // promise.
            unsafe { g.launch(&T::LU_COPY, cfg, args) }.map_err(Into::into)
        })
    }

    /// `L11^{-1}` of panel `k0..k1` into its scratch slot ([`Run::linv_at`]): the
    /// triangular solve of the identity.
    ///
    /// # Safety
    /// Panel `k0..k1` is factorised (on `g`'s stream or ordered before it); no launch
    /// reads this parity's slot meanwhile.
    unsafe fn invert_l11(&mut self, g: &Gpu, k0: usize, k1: usize) -> Result<()> {
        let (kb, ld, linv) = (k1 - k0, self.nb, self.linv_at(k0));
        let l11 = (self.at(k0, k0), self.n);
        unsafe {
            self.copy(g, Phase::Invert, (kb, kb), None, (linv, ld))?;
            self.trsm_rec(g, Phase::Invert, l11, kb, (linv, ld), kb)
        }
    }

    /// `A[k0..k0+kb, c0..c1] <- L11^{-1} A[k0..k0+kb, c0..c1]` as one GEMM with panel
    /// `k0`'s inverse ([`Run::invert_l11`]) on a copy of these rows.
    ///
    /// # Safety
    /// `invert_l11(k0, ..)` ran before (ordered on `g`'s stream); `k0 + kb <= n`, `c1 <=
    /// n`, columns `c0..c1` right of the panel; the scratch copy is `g`'s alone.
    unsafe fn trsm_inv(
        &mut self,
        g: &Gpu,
        (k0, kb): (usize, usize),
        (c0, c1): (usize, usize),
    ) -> Result<()> {
        if c1 <= c0 || kb == 0 {
            return Ok(());
        }
        let (n, work, linv, a12) = (self.n, self.work(), self.linv_at(k0), self.at(k0, c0));
        unsafe {
            self.copy(g, Phase::Trsm, (kb, c1 - c0), Some((a12, n)), (work, kb))?;
            self.gemm_ptrs(
                g,
                Phase::Trsm,
                (kb, c1 - c0, kb),
                T::ONE,
                (linv, self.nb),
                (work, kb),
                T::ZERO,
                (a12, n),
            )
        }
    }

    /// `X <- L11^{-1} X` for the `kb x ncols` block `X` and the unit lower triangle of
    /// the `kb x kb` block `l` (pointer and leading dimension each), timed as `phase`:
    /// `lu_trsm` up to [`TRSM_BASE`] rows, otherwise the top half, a GEMM on the bottom
    /// half, the bottom half.
    ///
    /// # Safety
    /// Both blocks lie in live device memory of `g`'s device and do not overlap.
    unsafe fn trsm_rec(
        &mut self,
        g: &Gpu,
        phase: Phase,
        (l, ldl): (Out<'a, T>, usize),
        kb: usize,
        (x, ldx): (Out<'a, T>, usize),
        ncols: usize,
    ) -> Result<()> {
        if ncols == 0 || kb == 0 {
            return Ok(());
        }
        if kb <= TRSM_BASE {
            return self.phases.time(g, phase, || unsafe {
                trsm::<T>(g, ncols, kb, (l.as_in(), ldl), (x, ldx))
            });
        }
        let h = (kb / 2).div_ceil(32) * 32;
        // SAFETY: h < kb rows (and columns) into the kb x kb and kb x ncols blocks.
        let (l21, l22, x2) = unsafe { (l.add(h), l.add(h + h * ldl), x.add(h)) };
        unsafe {
            self.trsm_rec(g, phase, (l, ldl), h, (x, ldx), ncols)?;
            self.gemm_ptrs(
                g,
                phase,
                (kb - h, ncols, h),
                -T::ONE,
                (l21, ldl),
                (x, ldx),
                T::ONE,
                (x2, ldx),
            )?;
            self.trsm_rec(g, phase, (l22, ldl), kb - h, (x2, ldx), ncols)
        }
    }

    /// `C <- alpha A B + beta C` on device pointers with this run's GEMM, timed as `phase`.
    ///
    /// # Safety
    /// As [`gemm_raw`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_ptrs(
        &mut self,
        g: &Gpu,
        phase: Phase,
        mnk: (usize, usize, usize),
        alpha: T,
        (a, lda): (Out<'a, T>, usize),
        (b, ldb): (Out<'a, T>, usize),
        beta: T,
        c: (Out<'a, T>, usize),
    ) -> Result<()> {
        let kernel = self.gemm;
        self.phases.time(g, phase, || unsafe {
            gemm_raw::<T>(
                g,
                kernel,
                mnk,
                alpha,
                (a.as_in(), lda),
                (b.as_in(), ldb),
                beta,
                c,
            )
        })
    }

    /// `A[r0..r1, c0..c1] -= A[r0..r1, p0..p1] A[p0..p1, c0..c1]`, timed as `phase`.
    ///
    /// # Safety
    /// All ranges inside `0..n`; the target block overlaps neither factor.
    unsafe fn update(
        &mut self,
        g: &Gpu,
        phase: Phase,
        (r0, r1): (usize, usize),
        (c0, c1): (usize, usize),
        (p0, p1): (usize, usize),
    ) -> Result<()> {
        if r1 <= r0 || c1 <= c0 || p1 <= p0 {
            return Ok(());
        }
        let n = self.n;
        let (a, b, c) = (self.at(r0, p0), self.at(p0, c0), self.at(r0, c0));
        let mnk = (r1 - r0, c1 - c0, p1 - p0);
        unsafe { self.gemm_ptrs(g, phase, mnk, -T::ONE, (a, n), (b, n), T::ONE, (c, n)) }
    }
}

/// A leaf's share of the multiprocessors: one block on every `LEAF_SM_SHARE`-th.
const LEAF_SM_SHARE: usize = 2;

/// How `lu_leaf_coop` runs on one device: `blocks` blocks (one per SM on a share of
/// them, [`LEAF_SM_SHARE`]; more where the rows would not fit in shared memory; at most
/// `LEAF_MAX_BLOCKS`), each holding `ceil(rows / blocks)` rows of the leaf in shared
/// memory.
struct LeafPlan {
    blocks: usize,
}

impl LeafPlan {
    /// The plan for an `n x n` factorisation, or `None` where the first leaf's slice
    /// does not fit in a block's shared memory (the per-column kernel runs instead).
    fn new<T: LuScalar>(gpu: &Gpu, n: usize) -> Result<Option<LeafPlan>> {
        let sms = gpu.multiprocessors()?.min(LEAF_MAX_BLOCKS);
        // A leaf block and a GEMM block never share a multiprocessor (registers), so the
        // leaf takes only part of the device and the main stream's GEMM goes on beside it
        // on the rest. `FERROCUDA_LU_LEAF_BLOCKS` overrides the share (diagnosis).
        let want = std::env::var("FERROCUDA_LU_LEAF_BLOCKS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(sms.div_ceil(LEAF_SM_SHARE));
        let optin = gpu.shared_memory_per_block_optin()?;
        let bytes = |blocks: usize| leaf_shared_bytes(n.div_ceil(blocks), LEAF_MAX, size_of::<T>());
        // More blocks where the rows of fewer would not fit in shared memory.
        let Some(blocks) = (want.clamp(1, sms)..=sms).find(|&b| bytes(b) <= optin) else {
            return Ok(None);
        };
        if bytes(blocks) > 48 * 1024 {
            gpu.allow_dynamic_shared(&T::LU_LEAF_COOP, bytes(blocks))?;
        }
        Ok(Some(LeafPlan { blocks }))
    }

    /// Shared memory of a leaf of `rows` rows and `w` columns.
    fn shared_bytes(&self, rows: usize, w: usize, elem: usize) -> usize {
        leaf_shared_bytes(rows.div_ceil(self.blocks), w, elem)
    }
}

/// Applies the row interchanges `ipiv[k0..k1]` in order (row `k` with row `ipiv[k]`,
/// LAPACK's `laswp`) to every column of the column-major `nrows x (len / nrows)` matrix
/// in `a`: per at most 512 interchanges one `lu_swap_plan` (which row ends where) and one
/// `lu_laswp` (each column's moves read before any is written).
///
/// Interchanges as [`factor_device`] writes them: `k <= ipiv[k] < nrows`. Errors (`a`
/// then unchanged): a length that is not a multiple of `nrows`, `k1` past `ipiv` or
/// `nrows`, an entry outside `k..nrows`.
///
/// ```no_run
/// # fn main() -> ferrocuda::Result<()> {
/// use ferrocuda::dense::gpu;
/// let g = ferrocuda::gpu::open(0)?;
/// // Rows 0 and 2, then 1 and 2, of a 3 x 2 matrix.
/// let mut a = g.upload(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// gpu::laswp(&mut a, 3, &[2, 2], (0, 2))?;
/// assert_eq!(a.download()?, vec![3.0, 1.0, 2.0, 6.0, 4.0, 5.0]);
/// # Ok(())
/// # }
/// ```
pub fn laswp<T: LuScalar>(
    a: &mut DeviceBuffer<T>,
    nrows: usize,
    ipiv: &[u32],
    (k0, k1): (usize, usize),
) -> Result<()> {
    const OP: &str = "dense::gpu::laswp";
    let bad = |reason: String| Err(Error::InvalidArgument { op: OP, reason });
    if nrows == 0 || !a.len().is_multiple_of(nrows) {
        return bad(format!(
            "{} elements are not whole columns of {nrows} rows",
            a.len()
        ));
    }
    if k0 > k1 || k1 > ipiv.len() || k1 > nrows {
        return bad(format!(
            "interchanges {k0}..{k1} with {} pivots and {nrows} rows",
            ipiv.len()
        ));
    }
    if let Some(k) = (k0..k1).find(|&k| (ipiv[k] as usize) < k || ipiv[k] as usize >= nrows) {
        return bad(format!("ipiv[{k}] = {} is outside {k}..{nrows}", ipiv[k]));
    }
    let ncols = a.len() / nrows;
    if ncols == 0 || k1 == k0 {
        return Ok(());
    }
    let g = a.gpu().clone();
    let dpiv = g.upload(&ipiv[..k1])?;
    let mut plan = g.alloc::<u32>(swap_plan_len(k1))?;
    let mut k = k0;
    while k < k1 {
        let ke = (k + SWAP_MAX).min(k1);
        // SAFETY: the entries of ipiv[k..ke] were checked to lie in k..nrows; the plan
        // of k..ke fits in plan's 3 k1 entries at 3 k; `a` holds ncols whole columns.
        unsafe {
            let at = plan.as_out().add(swap_plan_len(k));
            swap_plan_raw(&g, (k, ke), dpiv.as_in(), at)?;
            laswp_raw::<T>(&g, (nrows, ncols, a.as_out()), (k, ke), (0, 0), at.as_in())?;
        }
        k = ke;
    }
    Ok(())
}

/// `lu_swap_plan`: the plan of the interchanges `k0..k1` (at most [`SWAP_MAX`]) of `ipiv`
/// into `plan` (`3 (k1 - k0)` entries).
///
/// # Safety
/// `ipiv[k0..k1]` on `gpu`'s device hold rows `k <= ipiv[k] < nrows` (ordered before this
/// launch); `plan` has room for the plan.
unsafe fn swap_plan_raw(
    gpu: &Gpu,
    (k0, k1): (usize, usize),
    ipiv: In<'_, u32>,
    plan: Out<'_, u32>,
) -> Result<()> {
    let w = k1 - k0;
    debug_assert!(w <= SWAP_MAX);
    let cfg = LaunchConfig::blocks(1, SWAP_PLAN_THREADS as u32)
        .with_shared_bytes(swap_plan_shared_bytes(w) as u32);
    // SAFETY: lu_swap_plan(k0, w, ipiv, plan) reads ipiv[k0..k1] and writes 3 w entries
    // of the plan; the caller's promise.
    unsafe { gpu.launch(&LU_SWAP_PLAN, cfg, LuSwapPlan { k0, w, ipiv, plan }) }.map_err(Into::into)
}

/// `lu_laswp`: the plan of interchanges `k0..k1` applied to the `ncols` columns (leading
/// dimension `lda`) at `a` outside `skip0..skip1`.
///
/// # Safety
/// The plan (made by [`swap_plan_raw`], ordered before) moves rows `< lda`; `a` holds
/// `ncols` columns on `gpu`'s device.
unsafe fn laswp_raw<T: LuScalar>(
    gpu: &Gpu,
    (lda, ncols, a): (usize, usize, Out<'_, T>),
    (k0, k1): (usize, usize),
    (skip0, skip1): (usize, usize),
    plan: In<'_, u32>,
) -> Result<()> {
    let w = k1 - k0;
    let cfg = LaunchConfig::blocks(ncols.div_ceil(LASWP_COLS) as u32, LASWP_THREADS as u32);
    let args = LuLaswp {
        ncols,
        lda,
        k0,
        w,
        skip0,
        skip1,
        a,
        plan,
    };
    // SAFETY: lu_laswp moves rows of the plan (< lda) in the ncols columns at a; the
    // caller's promise.
    unsafe { gpu.launch(&T::LU_LASWP, cfg, args) }.map_err(Into::into)
}

/// `lu_trsm`: `X <- L11^{-1} X` for `ncols` columns.
///
/// # Safety
/// `l` (`kb x kb`, leading dimension `ldl`) and `x` (`kb x ncols`, `ldx`) are device
/// blocks on `gpu`'s device that do not overlap; `kb <= TRSM_MAX_KB` (the kernel's
/// shared-memory limit raised for it).
unsafe fn trsm<T: LuScalar>(
    gpu: &Gpu,
    ncols: usize,
    kb: usize,
    (l, ldl): (In<'_, T>, usize),
    (x, ldx): (Out<'_, T>, usize),
) -> Result<()> {
    debug_assert!(kb <= TRSM_MAX_KB);
    let cfg = LaunchConfig::blocks(ncols.div_ceil(TRSM_COLS) as u32, TRSM_THREADS as u32)
        .with_shared_bytes(trsm_shared_bytes(kb, size_of::<T>()) as u32);
    // SAFETY: lu_trsm(ncols, kb, l, ldl, x, ldx) reads L11 and rewrites X; the caller's
    // promise.
    let args = LuTrsm {
        ncols,
        kb,
        l,
        ldl,
        x,
        ldx,
    };
    unsafe { gpu.launch(&T::LU_TRSM, cfg, args) }.map_err(Into::into)
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
    let kernel = GemmKernel::pick::<T>(c.gpu(), tensor_cores)?;
    gemm_with(kernel, (m, n, k), alpha, (a, lda), (b, ldb), beta, (c, ldc))
}

/// Checks a GEMM's leading dimensions, buffer lengths and devices.
#[allow(clippy::type_complexity)]
fn check_gemm<T: LuScalar>(
    (m, n, k): (usize, usize, usize),
    (a, lda): (&impl DeviceSlice<T>, usize),
    (b, ldb): (&impl DeviceSlice<T>, usize),
    (c, ldc): (&impl DeviceSlice<T>, usize),
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
    Ok(())
}

/// The GEMM kernels of ferrocuda ([`gemm_with`]); [`gemm`] picks one with
/// [`GemmKernel::pick`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum GemmKernel {
    /// `gemm_nn_<t>`: FFMA / DFMA on the CUDA cores, any type.
    CudaCores,
    /// `gemm_dmma_f64`: FP64 tensor cores with the `sm_80` shape `m8n8k4` (`f64`, any
    /// device of compute capability 8.0 or newer).
    Dmma884,
    /// `gemm_dmma_sm90_k<S>_f64`: FP64 tensor cores with the Hopper shape `m16n8k<S>`,
    /// `S` in 4, 8, 16 (`f64`, compute capability 9.0 or newer; the `sm_90` module).
    Sm90 {
        /// The instruction's k: 4, 8 or 16.
        k: usize,
    },
}

/// The Hopper shape [`GemmKernel::pick`] chooses.
pub const DEFAULT_SM90_K: usize = 4;

impl GemmKernel {
    /// The kernel [`gemm`] runs: with `tensor_cores` and `f64`, the Hopper kernel on
    /// devices of compute capability 9.0 or newer and `gemm_dmma_f64` on older ones;
    /// otherwise the CUDA-core kernel.
    pub fn pick<T: LuScalar>(gpu: &Gpu, tensor_cores: bool) -> Result<GemmKernel> {
        if !tensor_cores || T::TENSOR_GEMM.is_none() {
            return Ok(GemmKernel::CudaCores);
        }
        Ok(if gpu.compute_capability()?.0 >= 9 {
            GemmKernel::Sm90 { k: DEFAULT_SM90_K }
        } else {
            GemmKernel::Dmma884
        })
    }

    /// The kernel's name.
    pub fn name<T: LuScalar>(self) -> Result<&'static str> {
        let tensor = |what: &str| {
            Err(Error::InvalidArgument {
                op: "dense::gpu::gemm",
                reason: format!("{what} is an f64 kernel"),
            })
        };
        match self {
            GemmKernel::CudaCores => Ok(T::GEMM.name()),
            GemmKernel::Dmma884 => T::TENSOR_GEMM
                .map(|k| k.name())
                .map_or_else(|| tensor("gemm_dmma_f64"), Ok),
            GemmKernel::Sm90 { k } => {
                let i = sm90_index(k)?;
                match T::SM90_GEMM {
                    Some(kernels) => Ok(kernels[i].name()),
                    None => tensor(ferrocuda_kernels::hopper::SM90_GEMM_F64[i].name()),
                }
            }
        }
    }
}

/// Index of the Hopper shape `m16n8k<k>` in [`LuScalar::SM90_GEMM`].
fn sm90_index(k: usize) -> Result<usize> {
    match k {
        4 => Ok(0),
        8 => Ok(1),
        16 => Ok(2),
        _ => Err(Error::InvalidArgument {
            op: "dense::gpu::gemm",
            reason: format!("Hopper GEMM shape k = {k} is not 4, 8 or 16"),
        }),
    }
}

/// [`gemm`] with a chosen kernel (the benchmark compares them). Errors: as [`gemm`], and
/// a Hopper kernel on a device older than compute capability 9.0 or for `f32`.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn gemm_with<T: LuScalar>(
    kernel: GemmKernel,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    (a, lda): (&impl DeviceSlice<T>, usize),
    (b, ldb): (&impl DeviceSlice<T>, usize),
    beta: T,
    (c, ldc): (&mut impl DeviceSliceMut<T>, usize),
) -> Result<()> {
    check_gemm((m, n, k), (a, lda), (b, ldb), (&*c, ldc))?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let gpu = c.gpu().clone();
    prepare_gemm::<T>(&gpu, kernel)?;
    // SAFETY: prepared above; the extents were checked against the buffers above; C is
    // `&mut`, so it aliases neither A nor B.
    unsafe {
        gemm_raw::<T>(
            &gpu,
            kernel,
            (m, n, k),
            alpha,
            (a.as_in(), lda),
            (b.as_in(), ldb),
            beta,
            (c.as_out(), ldc),
        )
    }
}

/// Readies `kernel` on `gpu`'s device: refuses a Hopper kernel before compute
/// capability 9.0 and raises the kernel's dynamic shared-memory limit. Once per device
/// and kernel before [`gemm_raw`] (a driver call: not on every launch).
fn prepare_gemm<T: LuScalar>(gpu: &Gpu, kernel: GemmKernel) -> Result<()> {
    let name = kernel.name::<T>()?;
    match kernel {
        GemmKernel::Sm90 { k } => {
            if gpu.compute_capability()?.0 < 9 {
                return Err(Error::InvalidArgument {
                    op: "dense::gpu::gemm",
                    reason: format!("{name} needs compute capability 9.0 or newer"),
                });
            }
            Ok(gpu.allow_dynamic_shared(&sm90_gemm::<T>(k)?, HOPPER_SHARED_BYTES)?)
        }
        GemmKernel::Dmma884 => {
            Ok(gpu.allow_dynamic_shared(&tensor_gemm::<T>()?, DMMA_SHARED_BYTES)?)
        }
        GemmKernel::CudaCores => Ok(()),
    }
}

/// `gemm_dmma_f64`, or the error that `T` has no tensor-core GEMM.
fn tensor_gemm<T: LuScalar>() -> Result<Kernel<Gemm<'static, T>>> {
    T::TENSOR_GEMM.ok_or_else(|| Error::InvalidArgument {
        op: "dense::gpu::gemm",
        reason: "gemm_dmma_f64 is an f64 kernel".into(),
    })
}

/// `gemm_dmma_sm90_k<k>_f64`, or the error that `T` has none or `k` is no shape.
fn sm90_gemm<T: LuScalar>(k: usize) -> Result<Kernel<GemmDmmaSm90<'static, T>>> {
    let i = sm90_index(k)?;
    T::SM90_GEMM
        .map(|kernels| kernels[i])
        .ok_or_else(|| Error::InvalidArgument {
            op: "dense::gpu::gemm",
            reason: format!(
                "{} is an f64 kernel",
                ferrocuda_kernels::hopper::SM90_GEMM_F64[i].name()
            ),
        })
}

/// The GEMM launch.
///
/// # Safety
/// [`prepare_gemm`] ran for `kernel` on this device; the `m x k`, `k x n` and `m x n`
/// blocks at `a`, `b`, `c` (with their leading dimensions) lie inside live allocations
/// of `gpu`'s device; `C` overlaps neither `A` nor `B`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_raw<T: LuScalar>(
    gpu: &Gpu,
    kernel: GemmKernel,
    (m, n, k): (usize, usize, usize),
    alpha: T,
    (a, lda): (In<'_, T>, usize),
    (b, ldb): (In<'_, T>, usize),
    beta: T,
    (c, ldc): (Out<'_, T>, usize),
) -> Result<()> {
    let (tile, threads, shared) = match kernel {
        GemmKernel::Sm90 { .. } => (HOPPER_TILE, HOPPER_THREADS, HOPPER_SHARED_BYTES),
        GemmKernel::Dmma884 => (DMMA_TILE, 256, DMMA_SHARED_BYTES),
        GemmKernel::CudaCores => (GEMM_TILE, 256, 2 * GEMM_K * GEMM_TILE * size_of::<T>()),
    };
    let cfg = grid_2d(m, n, tile, threads as u32).with_shared_bytes(shared as u32);
    if cfg.grid.1 > ferrocuda_host::MAX_GRID_YZ {
        return Err(Error::InvalidArgument {
            op: "dense::gpu::gemm",
            reason: format!("n = {n} needs more than 65535 block columns"),
        });
    }
    let args = Gemm {
        m,
        n,
        k,
        alpha,
        a,
        lda,
        b,
        ldb,
        beta,
        c,
        ldc,
    };
    // SAFETY (each launch): the caller's promise; every GEMM kernel reads the blocks at
    // a and b and writes the one at c, within the extents and leading dimensions given.
    match kernel {
        GemmKernel::CudaCores => unsafe { gpu.launch(&T::GEMM, cfg, args)? },
        GemmKernel::Dmma884 => unsafe { gpu.launch(&tensor_gemm::<T>()?, cfg, args)? },
        GemmKernel::Sm90 { k } => unsafe {
            gpu.launch(&sm90_gemm::<T>(k)?, cfg, GemmDmmaSm90::from(args))?
        },
    }
    Ok(())
}

/// Blocks of `tile x tile` results over an `m x n` output (rows in x, columns in y).
fn grid_2d(m: usize, n: usize, tile: usize, threads: u32) -> LaunchConfig {
    LaunchConfig::blocks(m.div_ceil(tile) as u32, threads).with_grid_y(n.div_ceil(tile) as u32)
}
