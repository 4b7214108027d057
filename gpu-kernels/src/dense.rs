//! Dense LU: the per-element pieces shared by the rayon CPU path (`ferrocuda::dense::cpu`)
//! and the device kernels, and the kernels themselves.
//!
//! Matrices are column-major: element `(i, j)` of a matrix with leading dimension `lda`
//! is at `a[i + j * lda]`. Pivot indices are 0-based global row numbers (`u32`); `info`
//! is 0, or `j + 1` for the first column `j` whose pivot was exactly zero (LAPACK's
//! `info`, 1-based so that 0 means "no zero pivot").
//!
//! Kernels (all generic bodies instantiated for `f32` and `f64`):
//! - `lu_panel_step`: one column of the panel factorisation with partial pivoting. It
//!   scales the previous column by its pivot and applies that column's rank-1 update to
//!   the rest of the panel, then finds the next pivot (block maxima, the last block to
//!   finish reduces them: one launch per column) and swaps it into place within the panel.
//! - `lu_leaf_coop`: a whole leaf of up to [`LEAF_MAX`] panel columns in one launch of a
//!   cooperative grid (one block per SM): each block holds its slice of the leaf's rows in
//!   shared memory; per column it publishes its best pivot candidate (and that row), one
//!   grid-wide barrier, then every block reduces the candidates to the same pivot, swaps
//!   and applies the rank-1 update to its rows. One barrier per column instead of one
//!   launch per column.
//! - `lu_swap_plan`: turns a panel's interchanges (applied in order) into one row
//!   permutation: which row ends where, at most two moves per interchange.
//! - `lu_laswp`: applies a swap plan to the columns outside the panel, all of a column's
//!   moves read before any is written (coalesced on the panel's rows).
//! - `lu_trsm`: `X <- L11^{-1} X` (unit lower triangular, up to 64 rows; 32 columns per
//!   block in shared memory, one barrier per row).
//! - `lu_copy`: copies a block of a matrix, or writes an identity.
//! - `gemm_nn`: `C <- alpha A B + beta C` tiled for the CUDA cores (FFMA / DFMA), and
//!   `gemm_dmma_f64`: the same on the FP64 tensor cores (`mma.sync.m8n8k4.f64`), the tile
//!   skeleton of [`crate::gemm`] (128x128 block tiles, eight warps of 64x32) with a
//!   four-stage `cp.async` pipeline.
//!
//! The LU variants without pivoting that `ferrocuda-repro` reproduces are in
//! [`crate::repro::lu`].

use crate::scalar::RealScalar;

/// Threads per block of the panel step and the row-interchange kernel.
pub const PANEL_THREADS: usize = 256;
/// Most blocks of one panel step (the length of the pivot partials).
pub const PANEL_MAX_BLOCKS: usize = 512;
/// Columns per block of `lu_trsm`.
pub const TRSM_COLS: usize = 32;
/// Threads per block of `lu_trsm`.
pub const TRSM_THREADS: usize = 256;
/// Most rows `kb` of one `lu_trsm` (taller triangles are split by the host).
pub const TRSM_MAX_KB: usize = 64;

/// Dynamic shared memory of `lu_trsm` in bytes for `kb` rows of `elem`-byte scalars:
/// `L11` (`kb x kb`) and the right-hand sides (`(kb + 1) x TRSM_COLS`).
pub const fn trsm_shared_bytes(kb: usize, elem: usize) -> usize {
    (kb * kb + (kb + 1) * TRSM_COLS) * elem
}
/// Most interchanges of one swap plan (`lu_swap_plan`, `lu_laswp`): the widest panel.
pub const SWAP_MAX: usize = 512;
/// Threads of the one block of `lu_swap_plan`.
pub const SWAP_PLAN_THREADS: usize = 512;
/// Threads per block of `lu_laswp`; each holds `2 SWAP_MAX / LASWP_THREADS` moves.
pub const LASWP_THREADS: usize = 256;
/// Columns per block of `lu_laswp`.
pub const LASWP_COLS: usize = 8;
/// "No row" in a swap plan.
pub const PLAN_NONE: u32 = u32::MAX;
/// Entries of the swap plan of `w` interchanges: `w` source rows of the panel's rows,
/// then `w` destination rows outside the panel ([`PLAN_NONE`] where unused) and their `w`
/// source rows.
pub const fn swap_plan_len(w: usize) -> usize {
    3 * w
}
/// Dynamic shared memory of `lu_swap_plan` for `w` interchanges.
pub const fn swap_plan_shared_bytes(w: usize) -> usize {
    4 * w * 4
}
/// Largest panel width the kernels accept (shared memory of `lu_panel_step` and `lu_trsm`).
pub const MAX_PANEL: usize = 128;
/// Block tile of `gemm_nn` (rows = columns), with 256 threads of 4x4 results each.
pub const GEMM_TILE: usize = 64;
/// k-step of `gemm_nn`.
pub const GEMM_K: usize = 16;
/// Block tile of `gemm_dmma_f64` (rows = columns), [`crate::gemm::THREADS`] threads.
pub const DMMA_TILE: usize = crate::gemm::TILE;
/// k-step of `gemm_dmma_f64` (one shared-memory stage).
pub const DMMA_K: usize = 8;
/// Shared-memory stages of `gemm_dmma_f64` (tiles in flight: `DMMA_STAGES - 1`).
pub const DMMA_STAGES: usize = 4;
/// Dynamic shared memory of `gemm_dmma_f64` in bytes: [`DMMA_STAGES`] stages of A and B
/// tiles (over the default 48 KiB: the host raises the kernel's limit).
pub const DMMA_SHARED_BYTES: usize = crate::gemm::shared_bytes(DMMA_K, DMMA_STAGES);
/// Dynamic shared memory of `lu_panel_step` in bytes for panels up to [`MAX_PANEL`]
/// wide: the pivot row, then the per-warp maxima (value, index).
pub const PANEL_SHARED_BYTES: usize = MAX_PANEL * 8 + 32 * 8 + 32 * 4;

/// Largest leaf width of `lu_leaf_coop` (columns factorised in one launch).
pub const LEAF_MAX: usize = 32;
/// Most blocks of one `lu_leaf_coop` grid (sizes the pivot partials and candidate rows).
pub const LEAF_MAX_BLOCKS: usize = 256;
/// Elements of `lu_leaf_coop`'s candidate-row buffer: two parities of
/// `LEAF_MAX_BLOCKS + 1` rows (one per block and row `j`) of [`LEAF_MAX`] entries.
pub const LEAF_ROWS_LEN: usize = 2 * (LEAF_MAX_BLOCKS + 1) * LEAF_MAX;

/// Dynamic shared memory of `lu_leaf_coop` in bytes: the block's `rows x w` slice of the
/// leaf and the pivot row (`elem` bytes each), then the block reduction's scratch and two
/// broadcast words.
pub const fn leaf_shared_bytes(rows: usize, w: usize, elem: usize) -> usize {
    leaf_scratch_offset(rows, w, elem) + 32 * 8 + 32 * 4 + 8
}

/// Byte offset of `lu_leaf_coop`'s reduction scratch in its shared memory.
pub const fn leaf_scratch_offset(rows: usize, w: usize, elem: usize) -> usize {
    ((rows * w + w) * elem).div_ceil(8) * 8
}

/// Whether candidate `(v1, i1)` beats `(v2, i2)` as a pivot: larger magnitude wins, ties
/// go to the smaller row (LAPACK's `i_amax` takes the first maximum). Magnitudes are
/// compared as given (callers pass `|a|`); NaN never wins.
#[inline(always)]
pub fn better_pivot(v1: f64, i1: u32, v2: f64, i2: u32) -> bool {
    v1 > v2 || (v1 == v2 && i1 < i2)
}

/// The multiplier `l = a / pivot` of one row below the pivot. A zero pivot leaves `a`
/// unscaled (the factorisation reports the singular column; no infinities or NaN are
/// produced).
#[inline(always)]
pub fn multiplier<T: RealScalar>(a: T, pivot: T) -> T {
    if pivot == T::ZERO { a } else { a / pivot }
}

pub use crate::math::rank1;

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    WARP_SIZE, block_dim, block_idx, block_idx_y, dynamic_shared, for_each_index, global_index,
    grid_dim, grid_stride, lane, scale_store, shfl_down, shfl_xor, sync_threads, thread_idx, warp,
};
#[cfg(target_arch = "nvptx64")]
use crate::gemm::{Operands, Sm80M8n8k4, tile_gemm};
use crate::{instances, kernel};
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

// ---------------------------------------------------------------------------------------
// Device helpers and kernels. Entry points keep their PTX names (`instances!` below).

/// `atom.global.add.u32`: returns the old value.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn atomic_inc(p: *mut u32) -> u32 {
    let old: u32;
    unsafe {
        asm!(
            "atom.global.add.u32 {old}, [{p}], 1;",
            old = out(reg32) old,
            p = in(reg64) p,
            options(nostack)
        );
    }
    old
}

/// `membar.gl`: this thread's global writes become visible to the whole device
/// before its later ones.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fence_device() {
    unsafe { asm!("membar.gl;", options(nostack)) };
}

/// Best `(|a|, row)` over the warp by [`better_pivot`]: lane 0 holds it (a tree of
/// `shfl_down`), or with `ALL` every lane (a butterfly of `shfl_xor`: under a total
/// order every lane ends with the same best candidate).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn warp_argmax<const ALL: bool>(mut v: f64, mut i: u32) -> (f64, u32) {
    let mut delta = (WARP_SIZE / 2) as u32;
    while delta > 0 {
        let (ov, oi) = if ALL {
            (shfl_xor(v, delta), shfl_xor(i, delta))
        } else {
            (shfl_down(v, delta), shfl_down(i, delta))
        };
        if better_pivot(ov, oi, v, i) {
            v = ov;
            i = oi;
        }
        delta /= 2;
    }
    (v, i)
}

/// Best `(|a|, row)` over the block; thread 0 holds the result. Uses the shared
/// memory after `skip` bytes of the dynamic shared memory. Ends with a barrier.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_argmax(mut v: f64, mut i: u32, skip: usize) -> (f64, u32) {
    (v, i) = warp_argmax::<false>(v, i);
    let base = unsafe { dynamic_shared::<u8>().add(skip) };
    let sv = base as *mut f64;
    let si = unsafe { base.add(32 * 8) } as *mut u32;
    if lane() == 0 {
        unsafe {
            *sv.add(warp()) = v;
            *si.add(warp()) = i;
        }
    }
    sync_threads();
    if warp() == 0 {
        let warps = block_dim() / WARP_SIZE;
        if lane() < warps {
            unsafe {
                v = *sv.add(lane());
                i = *si.add(lane());
            }
        } else {
            v = -1.0;
            i = u32::MAX;
        }
        (v, i) = warp_argmax::<false>(v, i);
    }
    sync_threads();
    (v, i)
}

/// See the module docs. `j0 <= j <= pend <= n`; column `j - 1` (if `j > j0`) has its
/// pivot in place; `j < pend` means: find and swap column `j`'s pivot (`pivot == 0`:
/// take the diagonal, no search).
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn lu_panel_step<T: RealScalar>(
    n: usize,
    lda: usize,
    j0: usize,
    j: usize,
    pend: usize,
    pivot: u32,
    a: *mut T,
    ipiv: *mut u32,
    info: *mut u32,
    part_val: *mut f64,
    part_idx: *mut u32,
    counter: *mut u32,
) {
    let at = |i: usize, c: usize| unsafe { a.add(i + c * lda) };
    let urow = dynamic_shared::<T>();
    let has_prev = j > j0;
    let has_next = j < pend;
    let mut best_v = -1.0f64;
    let mut best_i = u32::MAX;
    if has_prev {
        let q = j - 1;
        // The pivot row's entries right of the pivot, for the rank-1 update.
        let mut c = j + thread_idx();
        while c < pend {
            unsafe { *urow.add(c - j) = *at(q, c) };
            c += block_dim();
        }
        sync_threads();
        let piv = unsafe { *at(q, q) };
        // Hand-written grid-stride loops: `for_each_strided` here costs `lu_panel_step_f32`
        // 8 registers on sm_90 (48 -> 56).
        let mut i = j + global_index();
        while i < n {
            let l = multiplier(unsafe { *at(i, q) }, piv);
            unsafe { *at(i, q) = l };
            let mut c = j;
            while c < pend {
                let p = at(i, c);
                unsafe { *p = rank1(*p, l, *urow.add(c - j)) };
                c += 1;
            }
            if has_next && (pivot != 0 || i == j) {
                let v = unsafe { *at(i, j) }.to_f64();
                let v = if v < 0.0 { -v } else { v };
                if better_pivot(v, i as u32, best_v, best_i) {
                    best_v = v;
                    best_i = i as u32;
                }
            }
            i += grid_stride();
        }
    } else if has_next {
        let mut i = j + global_index();
        while i < n {
            let v = unsafe { *at(i, j) }.to_f64();
            let v = if v < 0.0 { -v } else { v };
            if (pivot != 0 || i == j) && better_pivot(v, i as u32, best_v, best_i) {
                best_v = v;
                best_i = i as u32;
            }
            i += grid_stride();
        }
    }
    if !has_next {
        return;
    }
    let (v, i) = unsafe { block_argmax(best_v, best_i, MAX_PANEL * 8) };
    // Thread 0 publishes the block's candidate; the last block to arrive reduces them.
    let last_flag = dynamic_shared::<u32>();
    if thread_idx() == 0 {
        unsafe {
            core::ptr::write_volatile(part_val.add(block_idx()), v);
            core::ptr::write_volatile(part_idx.add(block_idx()), i);
        }
        fence_device();
        let old = unsafe { atomic_inc(counter) };
        unsafe { *last_flag = (old as usize == grid_dim() - 1) as u32 };
    }
    sync_threads();
    let last = unsafe { *last_flag } != 0;
    if !last {
        return;
    }
    fence_device();
    let mut bv = -1.0f64;
    let mut bi = u32::MAX;
    let mut b = thread_idx();
    while b < grid_dim() {
        let (v, i) = unsafe {
            (
                core::ptr::read_volatile(part_val.add(b)),
                core::ptr::read_volatile(part_idx.add(b)),
            )
        };
        if better_pivot(v, i, bv, bi) {
            bv = v;
            bi = i;
        }
        b += block_dim();
    }
    sync_threads(); // the flag word is shared with the reduction's scratch
    let (_, p) = unsafe { block_argmax(bv, bi, MAX_PANEL * 8) };
    let shared_p = dynamic_shared::<u32>();
    if thread_idx() == 0 {
        // No candidate at all (NaN column): keep the diagonal.
        let p = if p == u32::MAX { j as u32 } else { p };
        unsafe {
            *ipiv.add(j) = p;
            *shared_p = p;
            *counter = 0;
            let piv = core::ptr::read_volatile(at(p as usize, j));
            if piv == T::ZERO && *info == 0 {
                *info = (j + 1) as u32;
            }
        }
    }
    sync_threads();
    let p = unsafe { *shared_p } as usize;
    if p != j {
        let mut c = j0 + thread_idx();
        while c < pend {
            unsafe {
                let x = core::ptr::read_volatile(at(j, c));
                let y = core::ptr::read_volatile(at(p, c));
                core::ptr::write_volatile(at(j, c), y);
                core::ptr::write_volatile(at(p, c), x);
            }
            c += block_dim();
        }
    }
}

/// Waits until the grid-wide arrival counter `bar` has reached `target` (wrapping),
/// after adding this block's arrival. Every thread of the block calls it; the
/// block's global writes before it are visible to every block after it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn grid_barrier(bar: *mut u32, target: u32) {
    sync_threads();
    if thread_idx() == 0 {
        fence_device();
        unsafe { atomic_inc(bar) };
        while (unsafe { core::ptr::read_volatile(bar) }.wrapping_sub(target) as i32) < 0 {}
        fence_device();
    }
    sync_threads();
}

/// See the module docs: factorises columns `j0..j0 + w` of rows `j0..n` with partial
/// pivoting (`pivot == 0`: the diagonal), interchanging rows within these columns
/// only. Block `b` of the `G` blocks owns rows `j0 + b R .. j0 + (b + 1) R`,
/// `R = ceil((n - j0) / G)`. Column `c` ends with grid barrier number `c`, which
/// completes when `bar` reaches `bar_base + G (c + 1)`. `part_*` hold `2 G`
/// candidates, `rows` `2 (G + 1) w` entries (both parities alternate by column).
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn lu_leaf_coop<T: RealScalar>(
    n: usize,
    lda: usize,
    j0: usize,
    w: usize,
    pivot: u32,
    a: *mut T,
    ipiv: *mut u32,
    info: *mut u32,
    part_val: *mut f64,
    part_idx: *mut u32,
    rows: *mut T,
    bar: *mut u32,
    bar_base: u32,
) {
    let g = grid_dim();
    let b = block_idx();
    let t = thread_idx();
    let nt = block_dim();
    let r_len = (n - j0).div_ceil(g);
    let r0 = j0 + b * r_len;
    let r1 = (r0 + r_len).min(n);
    let own = r1.saturating_sub(r0);
    let sh = dynamic_shared::<T>();
    let prow = unsafe { sh.add(r_len * w) };
    let skip = leaf_scratch_offset(r_len, w, size_of::<T>());
    let slot = unsafe { dynamic_shared::<u8>().add(skip + 32 * 8 + 32 * 4) } as *mut u32;
    let at = |r: usize, c: usize| unsafe { sh.add(r + c * r_len) };
    let owner = |row: usize| (row - j0) / r_len;

    let mut e = t;
    while e < own * w {
        let (r, c) = (e % own, e / own);
        unsafe { *at(r, c) = *a.add(r0 + r + (j0 + c) * lda) };
        e += nt;
    }
    sync_threads();
    for c in 0..w {
        let j = j0 + c;
        let par = c % 2;
        // This block's best candidate among its rows >= j.
        let mut best_v = -1.0f64;
        let mut best_i = u32::MAX;
        let mut r = t;
        while r < own {
            let row = r0 + r;
            if row >= j && (pivot != 0 || row == j) {
                let v = unsafe { *at(r, c) }.to_f64();
                let v = if v < 0.0 { -v } else { v };
                if better_pivot(v, row as u32, best_v, best_i) {
                    best_v = v;
                    best_i = row as u32;
                }
            }
            r += nt;
        }
        let (v, i) = unsafe { block_argmax(best_v, best_i, skip) };
        if t == 0 {
            unsafe {
                *part_val.add(par * g + b) = v;
                *part_idx.add(par * g + b) = i;
                *slot = i;
            }
        }
        sync_threads();
        let i = unsafe { *slot };
        let cand = unsafe { rows.add((par * (g + 1) + b) * w) };
        let rowj = unsafe { rows.add((par * (g + 1) + g) * w) };
        if t < w {
            if i != u32::MAX {
                unsafe { *cand.add(t) = *at(i as usize - r0, t) };
            }
            if r0 <= j && j < r1 {
                unsafe { *rowj.add(t) = *at(j - r0, t) };
            }
        }
        unsafe { grid_barrier(bar, bar_base.wrapping_add((g * (c + 1)) as u32)) };
        // Every warp of every block reduces the same candidates to the same pivot
        // (a butterfly under a total order: every lane ends with the best one), so
        // no block-wide reduction or barrier is needed for it.
        let mut bv = -1.0f64;
        let mut bi = u32::MAX;
        let mut q = lane();
        while q < g {
            let (v, i) = unsafe {
                (
                    core::ptr::read_volatile(part_val.add(par * g + q)),
                    core::ptr::read_volatile(part_idx.add(par * g + q)),
                )
            };
            if better_pivot(v, i, bv, bi) {
                bv = v;
                bi = i;
            }
            q += WARP_SIZE;
        }
        (bv, bi) = warp_argmax::<true>(bv, bi);
        // No candidate at all (NaN column): keep the diagonal.
        let p = if bi == u32::MAX { j } else { bi as usize };
        let src = if p == j {
            rowj
        } else {
            unsafe { rows.add((par * (g + 1) + owner(p)) * w) }
        };
        if t < w {
            unsafe { *prow.add(t) = core::ptr::read_volatile(src.add(t)) };
        }
        sync_threads();
        if t < w {
            if p != j && r0 <= p && p < r1 {
                unsafe { *at(p - r0, t) = core::ptr::read_volatile(rowj.add(t)) };
            }
            if r0 <= j && j < r1 {
                unsafe { *at(j - r0, t) = *prow.add(t) };
            }
        }
        let piv = unsafe { *prow.add(c) };
        if b == 0 && t == 0 {
            unsafe {
                *ipiv.add(j) = p as u32;
                if piv == T::ZERO && *info == 0 {
                    *info = (j + 1) as u32;
                }
            }
        }
        sync_threads();
        let mut r = t;
        while r < own {
            if r0 + r > j {
                let l = multiplier(unsafe { *at(r, c) }, piv);
                unsafe { *at(r, c) = l };
                const { assert!(LEAF_MAX <= 32) };
                // The row's entries and the pivot row's in registers first (all
                // loads issued before any store), then the update: 16 columns at a
                // time, fixed indices so the arrays stay in registers.
                unroll!(half in [0, 16] {
                    let mut x = [T::ZERO; 16];
                    let mut u = [T::ZERO; 16];
                    unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                        let cc = half + q;
                        if cc > c && cc < w {
                            unsafe {
                                x[q] = *at(r, cc);
                                u[q] = *prow.add(cc);
                            }
                        }
                    });
                    unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                        let cc = half + q;
                        if cc > c && cc < w {
                            unsafe { *at(r, cc) = rank1(x[q], l, u[q]) };
                        }
                    });
                });
            }
            r += nt;
        }
        sync_threads();
    }
    let mut e = t;
    while e < own * w {
        let (r, c) = (e % own, e / own);
        unsafe { *a.add(r0 + r + (j0 + c) * lda) = *at(r, c) };
        e += nt;
    }
}

/// The swap plan of the interchanges `ipiv[k0..k0 + w]` (see [`swap_plan_len`]), one
/// block. Interchange `i` swaps panel row `i` with row `p_i >= i` (relative to `k0`);
/// row `i` is final after it. Rows outside the panel get a slot each (`w + ` the first
/// interchange that chose them). With `S_i` interchange `i`'s slot and `O_i` the
/// original row in panel slot `i` just before interchange `i` (what the last earlier
/// interchange into slot `i` moved there, else row `i`), panel row `i` ends with
/// `O_l` of the last `l < i` with `S_l = S_i` (else the slot's own row), and an outside
/// row with `O_l` of the last `l` that chose it. Each of these is a scan over the
/// interchanges, done by all threads at once; no sequential replay.
#[kernel]
pub unsafe fn lu_swap_plan(k0: usize, w: usize, ipiv: *const u32, plan: *mut u32) {
    let piv = dynamic_shared::<u32>();
    let (slot, prev, orig) = unsafe { (piv.add(w), piv.add(2 * w), piv.add(3 * w)) };
    let (t0, nt) = (thread_idx(), block_dim());
    let get = |p: *mut u32, i: usize| unsafe { *p.add(i) };
    let set = |p: *mut u32, i: usize, v: u32| unsafe { *p.add(i) = v };
    let mut t = t0;
    while t < w {
        set(piv, t, unsafe { *ipiv.add(k0 + t) } - k0 as u32);
        t += nt;
    }
    sync_threads();
    t = t0;
    while t < w {
        let p = get(piv, t);
        let s = if (p as usize) < w {
            p
        } else {
            let mut f = 0;
            while get(piv, f) != p {
                f += 1;
            }
            (w + f) as u32
        };
        set(slot, t, s);
        t += nt;
    }
    sync_threads();
    t = t0;
    while t < w {
        let mut pr = PLAN_NONE;
        let mut i = t;
        while i > 0 {
            i -= 1;
            if get(slot, i) == t as u32 {
                pr = i as u32;
                break;
            }
        }
        set(prev, t, pr);
        t += nt;
    }
    sync_threads();
    t = t0;
    while t < w {
        let mut c = t;
        while get(prev, c) != PLAN_NONE {
            c = get(prev, c) as usize;
        }
        set(orig, t, c as u32);
        t += nt;
    }
    sync_threads();
    t = t0;
    while t < w {
        let s = get(slot, t);
        let mut src = if (s as usize) < w { s } else { get(piv, t) };
        let mut i = t;
        while i > 0 {
            i -= 1;
            if get(slot, i) == s {
                src = get(orig, i);
                break;
            }
        }
        unsafe { *plan.add(t) = k0 as u32 + src };
        let last = (s as usize) >= w && (t + 1..w).all(|i| get(slot, i) != s);
        let (dst, from) = if last {
            (k0 as u32 + get(piv, t), k0 as u32 + get(orig, t))
        } else {
            (PLAN_NONE, PLAN_NONE)
        };
        unsafe {
            *plan.add(w + t) = dst;
            *plan.add(2 * w + t) = from;
        }
        t += nt;
    }
}

/// Applies the swap plan of `w <= SWAP_MAX` interchanges at `k0` to every column
/// `c < ncols` outside `skip0..skip1`: block `b` takes [`LASWP_COLS`] columns, each
/// thread the same (up to four) moves of every one; a column's moves are all read,
/// then (after a barrier) all written.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn lu_laswp<T: RealScalar>(
    ncols: usize,
    lda: usize,
    k0: usize,
    w: usize,
    skip0: usize,
    skip1: usize,
    a: *mut T,
    plan: *const u32,
) {
    const MOVES: usize = 2 * SWAP_MAX / LASWP_THREADS;
    const { assert!(MOVES == 4) };
    let t = thread_idx();
    let mut dst = [usize::MAX; MOVES];
    let mut src = [0usize; MOVES];
    unroll!(q in [0, 1, 2, 3] {
        let s = t + LASWP_THREADS * q;
        if s < w {
            let r = unsafe { *plan.add(s) } as usize;
            if r != k0 + s {
                dst[q] = k0 + s;
                src[q] = r;
            }
        } else if s < 2 * w {
            let d = unsafe { *plan.add(s) };
            if d != PLAN_NONE {
                dst[q] = d as usize;
                src[q] = unsafe { *plan.add(w + s) } as usize;
            }
        }
    });
    let c0 = block_idx() * LASWP_COLS;
    let c1 = (c0 + LASWP_COLS).min(ncols);
    let mut c = c0;
    while c < c1 {
        // Two columns at a time: eight loads in flight per thread.
        let cols = [c, c + 1];
        let mut v = [[T::ZERO; MOVES]; 2];
        let live = |cc: usize| cc < c1 && (cc < skip0 || cc >= skip1);
        unroll!(h in [0, 1] {
            if live(cols[h]) {
                let col = unsafe { a.add(cols[h] * lda) };
                unroll!(q in [0, 1, 2, 3] {
                    if dst[q] != usize::MAX {
                        v[h][q] = unsafe { *col.add(src[q]) };
                    }
                });
            }
        });
        sync_threads();
        unroll!(h in [0, 1] {
            if live(cols[h]) {
                let col = unsafe { a.add(cols[h] * lda) };
                unroll!(q in [0, 1, 2, 3] {
                    if dst[q] != usize::MAX {
                        unsafe { *col.add(dst[q]) = v[h][q] };
                    }
                });
            }
        });
        c += 2;
    }
}

/// `X[0..kb, c] <- L11^{-1} X[0..kb, c]` for `c < ncols`, `L11` the unit lower
/// triangle of the `kb x kb` block at `l` (leading dimension `ldl`), `kb <=
/// TRSM_MAX_KB`, `X` at `x` (leading dimension `ldx`). Block `b` of [`TRSM_THREADS`]
/// threads solves [`TRSM_COLS`] columns: `L11` and its `kb x 32` slice of the
/// right-hand side in shared memory (loaded along the columns, coalesced), then
/// column-oriented forward substitution, every thread updating its share of the rows
/// below row `r` with one barrier per row. Shared memory: [`trsm_shared_bytes`].
#[kernel]
pub unsafe fn lu_trsm<T: RealScalar>(
    ncols: usize,
    kb: usize,
    l: *const T,
    ldl: usize,
    x: *mut T,
    ldx: usize,
) {
    let sl = dynamic_shared::<T>(); // sl[i + p kb], i > p
    let lds = kb + 1;
    let sx = unsafe { sl.add(kb * kb) }; // sx[i + cc lds]
    let t = thread_idx();
    let nt = block_dim();
    let cb = block_idx() * TRSM_COLS;
    let w = TRSM_COLS.min(ncols - cb);
    let mut e = t;
    while e < kb * kb {
        let (i, p) = (e % kb, e / kb);
        if i > p {
            unsafe { *sl.add(e) = *l.add(i + p * ldl) };
        }
        e += nt;
    }
    let mut e = t;
    while e < kb * w {
        let (i, cc) = (e % kb, e / kb);
        unsafe { *sx.add(i + cc * lds) = *x.add(i + (cb + cc) * ldx) };
        e += nt;
    }
    sync_threads();
    for r in 0..kb.saturating_sub(1) {
        let below = kb - r - 1;
        let mut e = t;
        while e < below * w {
            let (i, cc) = (r + 1 + e % below, e / below);
            unsafe {
                let p = sx.add(i + cc * lds);
                *p = rank1(*p, *sl.add(i + r * kb), *sx.add(r + cc * lds));
            }
            e += nt;
        }
        sync_threads();
    }
    let mut e = t;
    while e < kb * w {
        let (i, cc) = (e % kb, e / kb);
        unsafe { *x.add(i + (cb + cc) * ldx) = *sx.add(i + cc * lds) };
        e += nt;
    }
}

/// `D <- S` for a `rows x cols` block (`eye != 0`: `D <- I`, `S` unread), grid-stride
/// along the columns (coalesced).
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn lu_copy<T: RealScalar>(
    rows: usize,
    cols: usize,
    eye: u32,
    s: *const T,
    lds: usize,
    d: *mut T,
    ldd: usize,
) {
    for_each_index(rows * cols, |e| {
        let (i, j) = (e % rows, e / rows);
        let v = if eye == 0 {
            unsafe { *s.add(i + j * lds) }
        } else if i == j {
            T::ONE
        } else {
            T::ZERO
        };
        unsafe { *d.add(i + j * ldd) = v };
    });
}

/// Element `e` (column-major) of the block of `rows` rows at `(r0, c0)` of the
/// column-major `nr x nc` matrix `p` (leading dimension `ld`): its `(row, column)` within
/// the block and its value, zero outside the matrix.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn tile_element<T: RealScalar>(
    p: *const T,
    ld: usize,
    (nr, nc): (usize, usize),
    (r0, c0): (usize, usize),
    rows: usize,
    e: usize,
) -> (usize, usize, T) {
    let (i, j) = (e % rows, e / rows);
    let (gi, gj) = (r0 + i, c0 + j);
    let v = if gi < nr && gj < nc {
        unsafe { *p.add(gi + gj * ld) }
    } else {
        T::ZERO
    };
    (i, j, v)
}

/// `C <- alpha A B + beta C` (`m x k` times `k x n`), [`GEMM_TILE`]-square block tiles,
/// 256 threads with 4x4 results each (rows `tx + 16 i`, columns `ty + 16 j`).
/// `beta == 0` does not read `C`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gemm_nn<T: RealScalar>(g: Operands<T>) {
    let sa = dynamic_shared::<T>();
    let sb = unsafe { sa.add(GEMM_K * GEMM_TILE) };
    let t = thread_idx();
    let (tx, ty) = (t % 16, t / 16);
    let m0 = block_idx() * GEMM_TILE;
    let n0 = block_idx_y() * GEMM_TILE;
    let mut acc = [[T::ZERO; 4]; 4];
    let mut k0 = 0;
    while k0 < g.k {
        for r in 0..4 {
            let e = t + 256 * r;
            let (i, kk, v) = tile_element(g.a, g.lda, (g.m, g.k), (m0, k0), GEMM_TILE, e);
            unsafe { *sa.add(kk * GEMM_TILE + i) = v };
            let (kk, jj, v) = tile_element(g.b, g.ldb, (g.k, g.n), (k0, n0), GEMM_K, e);
            unsafe { *sb.add(kk * GEMM_TILE + jj) = v };
        }
        sync_threads();
        for kk in 0..GEMM_K {
            let mut av = [T::ZERO; 4];
            let mut bv = [T::ZERO; 4];
            for i in 0..4 {
                av[i] = unsafe { *sa.add(kk * GEMM_TILE + tx + 16 * i) };
                bv[i] = unsafe { *sb.add(kk * GEMM_TILE + ty + 16 * i) };
            }
            for i in 0..4 {
                for jn in 0..4 {
                    acc[i][jn] = av[i].mul_add(bv[jn], acc[i][jn]);
                }
            }
        }
        sync_threads();
        k0 += GEMM_K;
    }
    let mut v = [T::ZERO; 16];
    unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        v[e] = acc[e % 4][e / 4];
    });
    let at = |e: usize| {
        let (gi, gj) = (m0 + tx + 16 * (e % 4), n0 + ty + 16 * (e / 4));
        (gi < g.m && gj < g.n).then(|| unsafe { g.c.add(gi + gj * g.ldc) })
    };
    unsafe { scale_store(&v, at, g.alpha, g.beta) };
}

/// `C <- alpha A B + beta C` (see [`gemm_nn`]): with `TENSOR` on the FP64 tensor cores
/// (the tile skeleton of [`crate::gemm`] with the `sm_80` atom `m8n8k4`: [`DMMA_TILE`]-square
/// block tiles, k-steps of [`DMMA_K`] in [`DMMA_STAGES`] stages, [`DMMA_SHARED_BYTES`] of
/// shared memory), else on the CUDA cores. Generic in `T` for both so that the host's
/// generic LU code names one handle type; the `TENSOR` instance exists for `f64` only.
#[kernel(args = Gemm)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm<T: RealScalar, const TENSOR: bool>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
) {
    #[rustfmt::skip]
    let g = Operands { m, n, k, alpha, a, lda, b, ldb, beta, c, ldc };
    if TENSOR {
        unsafe { tile_gemm::<Sm80M8n8k4, DMMA_K, DMMA_STAGES>(g.to_f64()) }
    } else {
        unsafe { gemm_nn(g) }
    }
}

/// The dense LU kernels of one real type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait DenseKernels: RealScalar {
    /// `lu_panel_step_<t>`
    const LU_PANEL_STEP: Kernel<LuPanelStep<'static, Self>>;
    /// `lu_leaf_coop_<t>` (a cooperative launch)
    const LU_LEAF_COOP: Kernel<LuLeafCoop<'static, Self>>;
    /// `lu_laswp_<t>`
    const LU_LASWP: Kernel<LuLaswp<'static, Self>>;
    /// `lu_trsm_<t>`
    const LU_TRSM: Kernel<LuTrsm<'static, Self>>;
    /// `lu_copy_<t>`
    const LU_COPY: Kernel<LuCopy<'static, Self>>;
    /// `gemm_nn_<t>` (CUDA cores)
    const GEMM: Kernel<Gemm<'static, Self>>;
}

macro_rules! dense_instances {
    ($t:ty, $sfx:literal) => {
        instances! {
            impl DenseKernels for $t {
                LU_PANEL_STEP = lu_panel_step::<$t>(concat!("lu_panel_step_", $sfx));
                LU_LEAF_COOP = lu_leaf_coop::<$t>(concat!("lu_leaf_coop_", $sfx));
                LU_LASWP = lu_laswp::<$t>(concat!("lu_laswp_", $sfx));
                LU_TRSM = lu_trsm::<$t>(concat!("lu_trsm_", $sfx));
                LU_COPY = lu_copy::<$t>(concat!("lu_copy_", $sfx));
                GEMM = gemm::<$t, false>(concat!("gemm_nn_", $sfx));
            }
        }
    };
}

dense_instances!(f32, "f32");
dense_instances!(f64, "f64");

instances! {
    pub const GEMM_DMMA_F64 = gemm::<f64, true>("gemm_dmma_f64");
}
