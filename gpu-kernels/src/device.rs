//! Device support: the one place that knows about thread indices, shared memory,
//! barriers and warp shuffles. Kernels compose these; none repeats them.
//!
//! Only compiled for `nvptx64-nvidia-cuda`. All blocks are one-dimensional in x unless
//! a function says otherwise.

use core::arch::asm;
use core::arch::nvptx;
use core::mem::{MaybeUninit, size_of};

use crate::scalar::Scalar;

/// Threads per warp.
pub const WARP_SIZE: usize = 32;

/// Thread index within the block (x).
#[inline(always)]
pub fn thread_idx() -> usize {
    unsafe { nvptx::_thread_idx_x() as usize }
}
/// Block index within the grid (x).
#[inline(always)]
pub fn block_idx() -> usize {
    unsafe { nvptx::_block_idx_x() as usize }
}
/// Block index within the grid (y).
#[inline(always)]
pub fn block_idx_y() -> usize {
    unsafe { nvptx::_block_idx_y() as usize }
}
/// Block index within the grid (z).
#[inline(always)]
pub fn block_idx_z() -> usize {
    unsafe { nvptx::_block_idx_z() as usize }
}
/// Threads per block (x).
#[inline(always)]
pub fn block_dim() -> usize {
    unsafe { nvptx::_block_dim_x() as usize }
}
/// Blocks per grid (x).
#[inline(always)]
pub fn grid_dim() -> usize {
    unsafe { nvptx::_grid_dim_x() as usize }
}
/// Blocks per grid (y).
#[inline(always)]
pub fn grid_dim_y() -> usize {
    unsafe { nvptx::_grid_dim_y() as usize }
}
/// Global thread index along x: `block_idx * block_dim + thread_idx`.
#[inline(always)]
pub fn global_index() -> usize {
    block_idx() * block_dim() + thread_idx()
}
/// Total threads along x, the step of a grid-stride loop.
#[inline(always)]
pub fn grid_stride() -> usize {
    grid_dim() * block_dim()
}
/// Calls `f(i)` for every `i < n` this thread owns in a grid-stride loop (`i` from
/// [`global_index`] in steps of [`grid_stride`]): the one loop every element-wise
/// kernel runs.
#[inline(always)]
pub fn for_each_index(n: usize, f: impl FnMut(usize)) {
    let stride = grid_stride();
    for_each_strided(global_index(), stride, n, f);
}
/// Calls `f(i)` for every `i < n` this thread owns in a block-stride loop (`i` from
/// [`thread_idx`] in steps of [`block_dim`]): the threads of one block share the work.
#[inline(always)]
pub fn for_each_block_index(n: usize, f: impl FnMut(usize)) {
    for_each_strided(thread_idx(), block_dim(), n, f);
}
/// Calls `f(i)` for `i = first, first + stride, ...` while `i < n`.
#[inline(always)]
pub fn for_each_strided(first: usize, stride: usize, n: usize, mut f: impl FnMut(usize)) {
    let mut i = first;
    while i < n {
        f(i);
        i += stride;
    }
}
/// Calls `f(g, l)` for every group `g` of `width` consecutive threads that this thread
/// is lane `l` of, in a grid-stride loop over `n` groups: group `global_index() / width`,
/// then steps of `grid_stride() / width`. `width` is a power of two of at most 32 and
/// the block a multiple of 32, so a group never straddles two warps. Every lane of a
/// warp makes the same calls (the loop runs while the warp's first group is below `n`),
/// so `f` may shuffle within the warp; `g` may then be `n` or more for a warp's last
/// groups, and `f` must skip those.
#[inline(always)]
pub fn for_each_group(n: usize, width: usize, mut f: impl FnMut(usize, usize)) {
    let shift = width.trailing_zeros();
    let stride = grid_stride() >> shift;
    let mut g = global_index() >> shift;
    let mut warp_first = (global_index() - lane()) >> shift;
    let l = lane() & (width - 1);
    while warp_first < n {
        f(g, l);
        g += stride;
        warp_first += stride;
    }
}
/// The unrolled head of a strided loop: calls `f([i, i + stride, .., i + (U - 1) stride])`
/// for `i = first, first + U stride, ...` while all `U` indices are below `n` (so the
/// `U` loads of a call can be in flight together), and returns the first index it did
/// not cover; the rest is `for_each_strided(that index, stride, n, ..)`.
#[inline(always)]
pub fn for_each_strided_group<const U: usize>(
    first: usize,
    stride: usize,
    n: usize,
    mut f: impl FnMut([usize; U]),
) -> usize {
    let mut i = first;
    while i + (U - 1) * stride < n {
        f(core::array::from_fn(|u| i + u * stride));
        i += U * stride;
    }
    i
}
/// Lane of this thread within its warp.
#[inline(always)]
pub fn lane() -> usize {
    thread_idx() % WARP_SIZE
}
/// Warp of this thread within its block.
#[inline(always)]
pub fn warp() -> usize {
    thread_idx() / WARP_SIZE
}

/// `%globaltimer`, nanoseconds (the device's global clock). Volatile (no `pure`): stays
/// where it is written.
#[inline(always)]
pub fn globaltimer() -> u64 {
    let t: u64;
    unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nostack)) };
    t
}

/// Barrier for all threads of the block (`bar.sync 0`).
#[inline(always)]
pub fn sync_threads() {
    unsafe { nvptx::_syncthreads() }
}

/// Start of the block's dynamic shared memory, sized by the launch's shared-memory bytes.
/// Every call in a block returns the same address.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// `shfl.sync.<mode>.b32` with the full mask: the 32-bit word `$value` of lane
/// `lane + $arg` (`down`) or `lane ^ $arg` (`bfly`).
///
/// Deliberately not `pure`/`nomem`: with those LLVM treats the shuffle as a plain value
/// and sinks it into a branch only some lanes take, where `shfl.sync` hangs or reads
/// garbage. A side-effecting asm block stays where every lane executes it.
macro_rules! shfl_u32 {
    ($mode:literal, $value:expr, $arg:expr) => {{
        let out: u32;
        unsafe {
            asm!(
                concat!("shfl.sync.", $mode, ".b32 {out}, {v}, {d}, 0x1f, 0xffffffff;"),
                out = out(reg32) out,
                v = in(reg32) $value,
                d = in(reg32) $arg,
                options(nostack, preserves_flags)
            );
        }
        out
    }};
}

/// Applies `shfl` to each 32-bit word of a plain value whose size is a multiple of 4
/// bytes (f32, f64, complex, u32).
#[inline(always)]
fn shfl_words<T: Copy>(value: T, shfl: impl Fn(u32) -> u32) -> T {
    const { assert!(size_of::<T>() % 4 == 0) };
    let words = size_of::<T>() / 4;
    let mut out = MaybeUninit::<T>::uninit();
    let src = &value as *const T as *const u32;
    let dst = out.as_mut_ptr() as *mut u32;
    for w in 0..words {
        unsafe { *dst.add(w) = shfl(*src.add(w)) };
    }
    unsafe { out.assume_init() }
}

/// Reads the value held by lane `lane + delta` (`shfl.sync.down.b32`, full mask, one
/// 32-bit word at a time).
#[inline(always)]
pub fn shfl_down<T: Copy>(value: T, delta: u32) -> T {
    shfl_words(value, |w| shfl_u32!("down", w, delta))
}

/// Reads the value held by lane `lane ^ mask` (`shfl.sync.bfly.b32`, full mask, one
/// 32-bit word at a time): after a full butterfly of an associative, commutative choice
/// every lane holds the result.
#[inline(always)]
pub fn shfl_xor<T: Copy>(value: T, mask: u32) -> T {
    shfl_words(value, |w| shfl_u32!("bfly", w, mask))
}

/// `value <- op(value, value of lane + d)` for `d = width / 2, width / 4, .., 1`: a tree
/// over each aligned group of `width` lanes (a power of two, at most 32) in a fixed
/// order; the first lane of each group holds its group's result. Every lane of the warp
/// calls it (the shuffles need the whole warp).
#[inline(always)]
fn group_reduce<T: Copy>(mut value: T, width: usize, op: impl Fn(T, T) -> T) -> T {
    let mut delta = (width / 2) as u32;
    while delta > 0 {
        value = op(value, shfl_down(value, delta));
        delta /= 2;
    }
    value
}

/// Sum over the warp in a fixed tree order; lane 0 holds the result.
#[inline(always)]
pub fn warp_sum<T: Scalar>(value: T) -> T {
    group_sum(value, WARP_SIZE)
}

/// Sum over each aligned group of `width` lanes (a power of two, at most 32) in a fixed
/// tree order; the first lane of each group holds its group's result. Every lane of the
/// warp calls it (the shuffles need the whole warp).
#[inline(always)]
pub fn group_sum<T: Scalar>(value: T, width: usize) -> T {
    group_reduce(value, width, |v, other| v + other)
}

/// Eight sums over the warp at once, by a transposing butterfly: each level halves the
/// values a lane keeps and exchanges the other half with its partner (4 + 2 + 1 + 1 + 1
/// shuffles in all, against 40 for eight [`warp_sum`]s). Returns, in every lane `l`, the
/// sum of value `(l >> 2) & 7` (in a fixed order, the same in the four lanes that hold
/// it). Every lane of the warp calls it.
#[inline(always)]
pub fn warp_sum8<T: Scalar>(p: [T; 8]) -> T {
    let l = lane();
    let (b4, b3, b2) = (l & 16 != 0, l & 8 != 0, l & 4 != 0);
    let mut four = [T::ZERO; 4];
    for i in 0..4 {
        let (keep, send) = if b4 {
            (p[i + 4], p[i])
        } else {
            (p[i], p[i + 4])
        };
        four[i] = keep + shfl_xor(send, 16);
    }
    let mut two = [T::ZERO; 2];
    for i in 0..2 {
        let (keep, send) = if b3 {
            (four[i + 2], four[i])
        } else {
            (four[i], four[i + 2])
        };
        two[i] = keep + shfl_xor(send, 8);
    }
    let (keep, send) = if b2 {
        (two[1], two[0])
    } else {
        (two[0], two[1])
    };
    let mut one = keep + shfl_xor(send, 4);
    one = one + shfl_xor(one, 2);
    one + shfl_xor(one, 1)
}

/// Maximum over the warp (`f64`); lane 0 holds the result. The maximum does not depend
/// on the order, NaN aside (a NaN operand is dropped by `>`).
#[inline(always)]
pub fn warp_max_f64(value: f64) -> f64 {
    group_reduce(
        value,
        WARP_SIZE,
        |v, other| if other > v { other } else { v },
    )
}

/// `warp_op(value)` over the block: each warp's result (lane 0's) through the dynamic
/// shared memory, then `warp_op` over those in warp 0, the missing lanes `identity`.
/// Thread 0 holds the result; every thread of the block calls it; ends with a barrier.
#[inline(always)]
fn block_reduce<T: Copy>(value: T, identity: T, warp_op: impl Fn(T) -> T) -> T {
    let shared = dynamic_shared::<T>();
    let warp_total = warp_op(value);
    if lane() == 0 {
        unsafe { *shared.add(warp()) = warp_total };
    }
    sync_threads();
    let mut total = identity;
    if warp() == 0 {
        let warps = block_dim() / WARP_SIZE;
        let mine = if lane() < warps {
            unsafe { *shared.add(lane()) }
        } else {
            identity
        };
        total = warp_op(mine);
    }
    sync_threads();
    total
}

/// Sum over the block in a fixed order (warp trees, then a tree over the warp sums), so
/// the same inputs give the same bits. Thread 0 holds the result. Needs
/// `block_dim() / 32 * size_of::<T>()` bytes of dynamic shared memory, a block size that
/// is a multiple of 32 and at most 1024, and every thread of the block to call it.
/// Ends with a barrier, so the shared memory may be reused right after.
#[inline(always)]
pub fn block_sum<T: Scalar>(value: T) -> T {
    block_reduce(value, T::ZERO, warp_sum)
}

/// Maximum over the block (`f64`), as [`block_sum`]: thread 0 holds the result, same
/// shared-memory and block-size requirements, ends with a barrier.
#[inline(always)]
pub fn block_max(value: f64) -> f64 {
    block_reduce(value, f64::NEG_INFINITY, warp_max_f64)
}

/// Shared-window address of a generic pointer into shared memory.
#[inline(always)]
pub fn shared_addr<T>(p: *mut T) -> u32 {
    let out: u32;
    unsafe {
        asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {out}, t; }}",
            out = out(reg32) out,
            p = in(reg64) p,
            options(pure, nomem, nostack)
        );
    }
    out
}

/// `cp.async` of one `f64` (8 bytes) from global `src` to shared `dst`; `valid ==
/// false` writes zero and reads nothing.
#[inline(always)]
pub unsafe fn cp_async_8(dst: u32, src: *const f64, valid: bool) {
    let size: u32 = if valid { 8 } else { 0 };
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{d}], [{s}], 8, {n};",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) size,
            options(nostack)
        );
    }
}

/// Closes the group of `cp.async` copies issued so far by this thread.
#[inline(always)]
pub fn cp_async_commit() {
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// Waits until at most `N` committed `cp.async` groups are still in flight.
#[inline(always)]
pub fn cp_async_wait<const N: u32>() {
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
}

/// Makes thread 0's `value` every thread's (through the first word of the dynamic shared
/// memory); every thread of the block calls it. Ends with a barrier.
#[inline(always)]
pub fn block_broadcast(value: f64) -> f64 {
    let shared = dynamic_shared::<f64>();
    sync_threads();
    if thread_idx() == 0 {
        unsafe { *shared = value };
    }
    sync_threads();
    let v = unsafe { *shared };
    sync_threads();
    v
}

/// Barrier for every thread of the grid, with the memory of the grid made visible across
/// it (the pattern of CUDA's cooperative groups: a block barrier, then thread 0 fences,
/// arrives at a counter and spins until the counter's top bit flips, fences again).
///
/// # Safety
/// Every block of the grid must be resident at once (a cooperative launch guarantees it
/// or fails), every thread must call it the same number of times, and `bar` must be a
/// device `u32` used by this grid alone that is zero before the first launch (the
/// counter's low bits return to their value after each barrier, so it stays usable for
/// the next launch with the same or another grid size).
#[inline(always)]
pub unsafe fn grid_sync(bar: *mut u32) {
    sync_threads();
    if thread_idx() == 0 {
        let blocks = grid_dim() as u32;
        let inc = if block_idx() == 0 {
            0x8000_0000u32.wrapping_sub(blocks - 1)
        } else {
            1
        };
        let old: u32;
        unsafe {
            asm!(
                "membar.gl;",
                "atom.add.u32 {old}, [{p}], {inc};",
                old = out(reg32) old,
                p = in(reg64) bar,
                inc = in(reg32) inc,
                options(nostack, preserves_flags)
            );
        }
        loop {
            let now: u32;
            unsafe {
                asm!(
                    "ld.volatile.u32 {now}, [{p}];",
                    now = out(reg32) now,
                    p = in(reg64) bar,
                    options(nostack, preserves_flags)
                );
            }
            if (old ^ now) & 0x8000_0000 != 0 {
                break;
            }
        }
        unsafe { asm!("membar.gl;", options(nostack, preserves_flags)) };
    }
    sync_threads();
}

/// Arrival of this block at the end of a grid whose last block finishes the work (the
/// "threadfence reduction" pattern: no block waits for another, so any grid size and
/// graph replay work). Thread 0 fences the block's global writes and counts the block at
/// `counter`; returns, in every thread, whether this block came last among `blocks`. The
/// last block resets the counter to 0 for the next launch. Every thread of the block
/// calls it; it ends with a barrier. The last block must read the other blocks' results
/// with `ld.volatile` (or other L1-bypassing loads), see [`load_volatile_f64`].
///
/// # Safety
/// `counter` is a device `u32` that is zero before the first launch and used by this
/// grid's `blocks` blocks alone.
#[inline(always)]
pub unsafe fn last_block_arrives(counter: *mut u32, blocks: u32) -> bool {
    let flag = dynamic_shared::<u32>();
    sync_threads();
    if thread_idx() == 0 {
        let old: u32;
        unsafe {
            asm!(
                "membar.gl;",
                "atom.add.u32 {old}, [{p}], 1;",
                old = out(reg32) old,
                p = in(reg64) counter,
                options(nostack, preserves_flags)
            );
        }
        let last = old == blocks - 1;
        if last {
            unsafe {
                asm!(
                    "st.volatile.u32 [{p}], 0;",
                    "membar.gl;",
                    p = in(reg64) counter,
                    options(nostack, preserves_flags)
                );
            }
        }
        unsafe { *flag = last as u32 };
    }
    sync_threads();
    let last = unsafe { *flag } != 0;
    sync_threads();
    last
}

/// `*p` from global memory, bypassing the (non-coherent) L1 cache (`ld.volatile`): for
/// values other blocks of the same grid wrote.
///
/// # Safety
/// `p` points to a valid device `f64`.
#[inline(always)]
pub unsafe fn load_volatile_f64(p: *const f64) -> f64 {
    let v: f64;
    unsafe {
        asm!(
            "ld.volatile.global.f64 {v}, [{p}];",
            v = out(reg64) v,
            p = in(reg64) p,
            options(nostack, preserves_flags, readonly)
        );
    }
    v
}

/// A GEMM epilogue for 16 results of one thread: `*at(i) <- alpha acc[i] + beta *at(i)`
/// for every `i` where `at` gives an address (`beta == 0` reads nothing). All loads are
/// issued before the first store: stores through the same pointer would otherwise keep
/// each load behind the previous store (one memory round trip per element). Unrolled by
/// hand so that the values stay in registers.
///
/// # Safety
/// Every address `at` returns is a valid, distinct device element.
#[inline(always)]
pub unsafe fn scale_store<T: Scalar>(
    acc: &[T; 16],
    at: impl Fn(usize) -> Option<*mut T>,
    alpha: T,
    beta: T,
) {
    let mut old = [T::ZERO; 16];
    if beta != T::ZERO {
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if let Some(p) = at(i) {
                old[i] = unsafe { *p };
            }
        });
    }
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        if let Some(p) = at(i) {
            let v = if beta == T::ZERO {
                alpha * acc[i]
            } else {
                alpha.mul_add(acc[i], beta * old[i])
            };
            unsafe { *p = v };
        }
    });
}
