//! The SpMV kernel variants of Kautz (2011) (digest `docs/notes/seed000-spmv.md` §3 and
//! §4), for the reproduction tables of `ferrocuda-repro`. All work on ghost-compacted data:
//! a stored block row `s` writes result block row `map[s]` (the thesis's
//! "Blockzeilenindex"); the result rows that no stored row maps to (ghost rows) are written
//! by a fill kernel (`beta y`, or 0).
//!
//! | variant | thread mapping | result |
//! |---|---|---|
//! | BCSR V1 | one thread per `b x b` block, `b` partial row sums | `tmp[k b + r]`, then the BCSR reduction |
//! | BCSR V2 | one thread per (block, row of the block), row-major blocks | `tmp[k b + r]`, then the BCSR reduction |
//! | BCSR V3 | as V2, column-major ("permuted") blocks: coalesced | `tmp[k b + r]`, then the BCSR reduction |
//! | BCSR reduction | one thread per row of the compacted matrix, partials in block order | `y[map[s] b + r]` |
//! | ELL | one thread per (row, subsection of `L` slots) | `tmp[j n_rows + i]`, then the ELL reduction |
//! | ELL reduction | one thread per ELL row, partials in subsection order | `y[row_index[i]]` |
//! | ELL V2 | one thread per ELL row | `y[row_index[i]]` |
//! | BELL | one thread per scalar row (the BELL layout of `crate::sparse`) | `y[map[s] b + r]` |
//! | BELL V2 | one thread per block row, `b` accumulators (`b <= 8`) | `y[map[s] b + r]` |
//! | BELL V3 | BELL, with each CUDA block's window of `x` copied to shared memory first | `y[map[s] b + r]` |
//!
//! The per-entry math is [`MatrixScalar::mul_add_vec`] (5x5 blocks of V1: the CPU's
//! [`block5_mul_add`]) and [`finish`]. The BELL kernels sum each row in the CPU's order and
//! give its bits; the others split the row sum into partials, so the order (and the last
//! bits) differ.
//!
//! # Per-thread bodies
//! Each kernel is a grid-stride loop (BELL V3: one CUDA block per window) over a public
//! per-thread function, compiled for both targets: the host's serial twin
//! (`ferrocuda_repro::sparse::gpu_thesis::spmv_thesis_serial`) runs the same functions one
//! thread after another, which checks their indexing without a GPU.
//!
//! Their safety contract: every pointer is valid for the reads and writes the function's
//! docs name, the index arrays' entries are in range (as the host's preparation
//! guarantees), and no other thread writes what this one reads or writes.
//!
//! [`MatrixScalar::mul_add_vec`]: crate::sparse::MatrixScalar::mul_add_vec
//! [`block5_mul_add`]: crate::sparse::block5_mul_add
//! [`finish`]: crate::sparse::finish

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_dim, block_idx, dynamic_shared, for_each_block_index, for_each_index, sync_threads,
    thread_idx,
};
use crate::scalar::Scalar;
use crate::sparse::{MatrixScalar, block5_mul_add, write_row};
use crate::{instances, kernel};

/// Threads per block of the thesis kernels except BELL V3 (the thesis's 16 x 16 = 256).
pub const THESIS_BLOCK: usize = 256;
/// Largest block size of the run-time-`b` BELL V2 kernel (its accumulators are registers).
pub const BELL_V2_MAX_B: usize = 8;

/// Row `r` of one `b x b` block times `x[0..b]`, columns in order.
#[inline(always)]
unsafe fn block_row_dot<A: MatrixScalar<V>, V: Scalar, const COL_MAJOR: bool>(
    block: *const A,
    xs: *const V,
    b: usize,
    r: usize,
) -> V {
    let mut acc = V::ZERO;
    for c in 0..b {
        let m = if COL_MAJOR {
            unsafe { *block.add(c * b + r) }
        } else {
            unsafe { *block.add(r * b + c) }
        };
        acc = m.mul_add_vec(unsafe { *xs.add(c) }, acc);
    }
    acc
}

/// BCSR V1, thread `k`: block `k` (row-major, block column `col_idx[k]`) times its `x`
/// slice; the `b` row partials go to `tmp[k b .. k b + b]`. `B = 5`: the CPU's 5x5 block
/// kernel; `B = 0`: `b` from the argument.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
pub unsafe fn bcsr_v1_block<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    k: usize,
    b: usize,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    tmp: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let col = unsafe { *col_idx.add(k) } as usize;
    let block = unsafe { values.add(k * b * b) };
    let xs = unsafe { x.add(col * b) };
    let out = unsafe { tmp.add(k * b) };
    if B == 5 {
        // SAFETY: a block is 25 consecutive values, its x slice 5; both aligned.
        let (blk, xv) = unsafe { (&*(block as *const [A; 25]), &*(xs as *const [V; 5])) };
        let mut acc = [V::ZERO; 5];
        block5_mul_add(&mut acc, blk, xv);
        for (r, a) in acc.iter().enumerate() {
            unsafe { *out.add(r) = *a };
        }
    } else {
        for r in 0..b {
            unsafe { *out.add(r) = block_row_dot::<A, V, false>(block, xs, b, r) };
        }
    }
}

/// BCSR V2 (`COL_MAJOR = false`) and V3 (`true`), thread `t`: row `t % b` of block `t / b`
/// times its `x` slice, to `tmp[t]`.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
pub unsafe fn bcsr_v23_row<A: MatrixScalar<V>, V: Scalar, const B: usize, const COL_MAJOR: bool>(
    t: usize,
    b: usize,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    tmp: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let (k, r) = (t / b, t % b);
    let col = unsafe { *col_idx.add(k) } as usize;
    let block = unsafe { values.add(k * b * b) };
    let xs = unsafe { x.add(col * b) };
    unsafe { *tmp.add(t) = block_row_dot::<A, V, COL_MAJOR>(block, xs, b, r) };
}

/// The BCSR reduction, thread `i`: row `r = i % b` of stored block row `s = i / b` sums
/// `tmp[k b + r]` over the blocks `k` of the row in order and writes `y[map[s] b + r]`.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn bcsr_reduce_row<V: Scalar, const B: usize>(
    i: usize,
    b: usize,
    alpha: V,
    row_ptr: *const usize,
    map: *const u32,
    tmp: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let (s, r) = (i / b, i % b);
    let (start, end) = unsafe { (*row_ptr.add(s), *row_ptr.add(s + 1)) };
    let mut acc = V::ZERO;
    for k in start..end {
        acc = acc + unsafe { *tmp.add(k * b + r) };
    }
    let out = unsafe { *map.add(s) } as usize * b + r;
    unsafe { write_row(y, out, alpha, acc, beta) };
}

/// ELL with subsections, thread `t = j n_rows + i`: the real slots (`< row_len[i]`) among
/// `j L .. j L + L` of row `i`, to `tmp[t]`. Consecutive threads are consecutive rows:
/// coalesced reads of the column-major slots and of `tmp`.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ell_sub_part<A: MatrixScalar<V>, V: Scalar>(
    t: usize,
    n_rows: usize,
    n_rows_pad: usize,
    sub_len: usize,
    row_len: *const u32,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    tmp: *mut V,
) {
    let (j, i) = (t / n_rows, t % n_rows);
    let len = unsafe { *row_len.add(i) } as usize;
    let end = len.min(j * sub_len + sub_len);
    let mut acc = V::ZERO;
    for k in j * sub_len..end {
        let at = k * n_rows_pad + i;
        let col = unsafe { *col_idx.add(at) } as usize;
        acc = unsafe { *values.add(at) }.mul_add_vec(unsafe { *x.add(col) }, acc);
    }
    unsafe { *tmp.add(t) = acc };
}

/// The ELL reduction, thread `i`: sums `tmp[j n_rows + i]` over the subsections `j` in
/// order and writes `y[row_index[i]]`.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ell_reduce_row<V: Scalar>(
    i: usize,
    n_rows: usize,
    n_sub: usize,
    alpha: V,
    row_index: *const u32,
    tmp: *const V,
    beta: V,
    y: *mut V,
) {
    let mut acc = V::ZERO;
    for j in 0..n_sub {
        acc = acc + unsafe { *tmp.add(j * n_rows + i) };
    }
    let out = unsafe { *row_index.add(i) } as usize;
    unsafe { write_row(y, out, alpha, acc, beta) };
}

/// ELL V2, thread `i`: the real slots of row `i`, written to `y[row_index[i]]`.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ell_v2_row<A: MatrixScalar<V>, V: Scalar>(
    i: usize,
    n_rows_pad: usize,
    alpha: V,
    row_len: *const u32,
    col_idx: *const u32,
    values: *const A,
    row_index: *const u32,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let len = unsafe { *row_len.add(i) } as usize;
    let mut acc = V::ZERO;
    for k in 0..len {
        let at = k * n_rows_pad + i;
        let col = unsafe { *col_idx.add(at) } as usize;
        acc = unsafe { *values.add(at) }.mul_add_vec(unsafe { *x.add(col) }, acc);
    }
    let out = unsafe { *row_index.add(i) } as usize;
    unsafe { write_row(y, out, alpha, acc, beta) };
}

/// BELL and BELL V3, thread `i`: scalar row `i` of a compacted BELL matrix (the layout of
/// `crate::sparse`), slots in order, block columns in order (the CPU's chain), written to
/// `y[map[i / b] b + i % b]`. `x_at(col)` is the address of `x[col b]` (global memory for
/// BELL, the shared window for V3).
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn bell_row<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    i: usize,
    b: usize,
    n_block_rows_pad: usize,
    alpha: V,
    row_len: *const u32,
    block_col: *const u32,
    values: *const A,
    map: *const u32,
    x_at: impl Fn(usize) -> *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let n_pad = n_block_rows_pad * b;
    let bi = i / b;
    let len = unsafe { *row_len.add(bi) } as usize;
    let mut acc = V::ZERO;
    for k in 0..len {
        let col = unsafe { *block_col.add(k * n_block_rows_pad + bi) } as usize;
        let xb = x_at(col);
        let slot = unsafe { values.add(k * b * n_pad + i) };
        for c in 0..b {
            let m = unsafe { *slot.add(c * n_pad) };
            acc = m.mul_add_vec(unsafe { *xb.add(c) }, acc);
        }
    }
    let out = unsafe { *map.add(bi) } as usize * b + i % b;
    unsafe { write_row(y, out, alpha, acc, beta) };
}

/// BELL V2, thread `s`: stored block row `s` with `b` accumulators, written to
/// `y[map[s] b + r]`. `B = 5`, or `B = 0` with `b <= NB` from the argument; `NB` is the
/// accumulator count (5, or `BELL_V2_MAX_B`): the loops over the accumulators run to that
/// constant with a guard `r < b`, so they unroll and the accumulators stay in registers.
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies), and `b <= NB`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn bell_v2_block_row<A: MatrixScalar<V>, V: Scalar, const B: usize, const NB: usize>(
    s: usize,
    b: usize,
    n_block_rows_pad: usize,
    alpha: V,
    row_len: *const u32,
    block_col: *const u32,
    values: *const A,
    map: *const u32,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let n_pad = n_block_rows_pad * b;
    let len = unsafe { *row_len.add(s) } as usize;
    let mut acc = [V::ZERO; NB];
    for k in 0..len {
        let col = unsafe { *block_col.add(k * n_block_rows_pad + s) } as usize;
        let xs = unsafe { x.add(col * b) };
        let slot = unsafe { values.add(k * b * n_pad + s * b) };
        for c in 0..b {
            let xv = unsafe { *xs.add(c) };
            let col_c = unsafe { slot.add(c * n_pad) };
            #[allow(clippy::needless_range_loop)] // constant indices after unrolling
            for r in 0..NB {
                if r < b {
                    acc[r] = unsafe { *col_c.add(r) }.mul_add_vec(xv, acc[r]);
                }
            }
        }
    }
    let out = unsafe { *map.add(s) } as usize * b;
    #[allow(clippy::needless_range_loop)]
    for r in 0..NB {
        if r < b {
            unsafe { write_row(y, out + r, alpha, acc[r], beta) };
        }
    }
}

/// Ghost rows, thread `t`: `y[rows[t / b] b + t % b] <- beta y[..]`, or 0 where
/// `beta == 0` (then `y` is not read).
///
/// # Safety
/// The [per-thread contract](self#per-thread-bodies).
#[inline(always)]
pub unsafe fn fill_row<V: Scalar>(t: usize, b: usize, beta: V, rows: *const u32, y: *mut V) {
    let out = unsafe { *rows.add(t / b) } as usize * b + t % b;
    let yo = unsafe { y.add(out) };
    unsafe { *yo = if beta == V::ZERO { V::ZERO } else { beta * *yo } };
}

// ---------------------------------------------------------------------------------------
// Entry points: each runs its per-thread body over a grid-stride loop (BELL V3: one CUDA
// block per window). They keep separate parameters rather than one `#[repr(C)]` struct
// for the reason given in `crate::spmv` (a struct parameter loses the global address
// space of its pointers).

/// BCSR V1 (`PER_ROW = false`: one thread per block, [`bcsr_v1_block`]) and V2/V3
/// (`PER_ROW = true`: one thread per row of a block, [`bcsr_v23_row`], `COL_MAJOR` for
/// V3): the partial row sums of the `n_blocks` blocks to `tmp`. `B = 5`: block size 5
/// built in (`b` ignored); `B = 0`: `b` at run time.
#[kernel(args = ThesisBcsrMul)]
pub unsafe fn thesis_bcsr_mul<
    A: MatrixScalar<V>,
    V: Scalar,
    const B: usize,
    const PER_ROW: bool,
    const COL_MAJOR: bool,
>(
    n_blocks: usize,
    b: usize,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    tmp: *mut V,
) {
    if PER_ROW {
        let rows = if B > 0 { B } else { b };
        for_each_index(n_blocks * rows, |t| unsafe {
            bcsr_v23_row::<A, V, B, COL_MAJOR>(t, b, col_idx, values, x, tmp)
        });
    } else {
        for_each_index(n_blocks, |k| unsafe {
            bcsr_v1_block::<A, V, B>(k, b, col_idx, values, x, tmp)
        });
    }
}

/// The BCSR reduction ([`bcsr_reduce_row`]) over the `n_block_rows b` rows.
#[kernel(args = ThesisBcsrReduce)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_bcsr_reduce<V: Scalar, const B: usize>(
    n_block_rows: usize,
    b: usize,
    alpha: V,
    row_ptr: *const usize,
    map: *const u32,
    tmp: *const V,
    beta: V,
    y: *mut V,
) {
    let n = n_block_rows * if B > 0 { B } else { b };
    for_each_index(n, |i| unsafe {
        bcsr_reduce_row::<V, B>(i, b, alpha, row_ptr, map, tmp, beta, y)
    });
}

/// ELL with subsections ([`ell_sub_part`]): `n_rows n_sub` threads.
#[kernel(args = ThesisEllSub)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_ell_sub<A: MatrixScalar<V>, V: Scalar>(
    n_rows: usize,
    n_rows_pad: usize,
    n_sub: usize,
    sub_len: usize,
    row_len: *const u32,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    tmp: *mut V,
) {
    for_each_index(n_rows * n_sub, |t| unsafe {
        ell_sub_part::<A, V>(
            t, n_rows, n_rows_pad, sub_len, row_len, col_idx, values, x, tmp,
        )
    });
}

/// The ELL reduction ([`ell_reduce_row`]): one thread per ELL row.
#[kernel(args = ThesisEllReduce)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_ell_reduce<V: Scalar>(
    n_rows: usize,
    n_sub: usize,
    alpha: V,
    row_index: *const u32,
    tmp: *const V,
    beta: V,
    y: *mut V,
) {
    for_each_index(n_rows, |i| unsafe {
        ell_reduce_row::<V>(i, n_rows, n_sub, alpha, row_index, tmp, beta, y)
    });
}

/// ELL V2 ([`ell_v2_row`]): one thread per ELL row.
#[kernel(args = ThesisEllV2)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_ell_v2<A: MatrixScalar<V>, V: Scalar>(
    n_rows: usize,
    n_rows_pad: usize,
    alpha: V,
    row_len: *const u32,
    col_idx: *const u32,
    values: *const A,
    row_index: *const u32,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    for_each_index(n_rows, |i| unsafe {
        ell_v2_row::<A, V>(
            i, n_rows_pad, alpha, row_len, col_idx, values, row_index, x, beta, y,
        )
    });
}

/// BELL (`NB = 0`: one thread per scalar row, [`bell_row`]) and BELL V2 (`NB > 0`: one
/// thread per block row with `NB` accumulators, [`bell_v2_block_row`], `b <= NB`). `B` as
/// for [`ThesisBcsrMul`].
#[kernel(args = ThesisBell)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_bell<A: MatrixScalar<V>, V: Scalar, const B: usize, const NB: usize>(
    n_block_rows: usize,
    n_block_rows_pad: usize,
    b: usize,
    alpha: V,
    row_len: *const u32,
    block_col: *const u32,
    values: *const A,
    map: *const u32,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    if NB > 0 {
        for_each_index(n_block_rows, |s| unsafe {
            bell_v2_block_row::<A, V, B, NB>(
                s,
                b,
                n_block_rows_pad,
                alpha,
                row_len,
                block_col,
                values,
                map,
                x,
                beta,
                y,
            )
        });
    } else {
        let b = if B > 0 { B } else { b };
        let x_at = |col: usize| unsafe { x.add(col * b) };
        for_each_index(n_block_rows * b, |i| unsafe {
            bell_row::<A, V, B>(
                i,
                b,
                n_block_rows_pad,
                alpha,
                row_len,
                block_col,
                values,
                map,
                x_at,
                beta,
                y,
            )
        });
    }
}

/// BELL V3 (no grid-stride loop: one CUDA block per window). CUDA block `w` first copies
/// `x[window[2w] .. window[2w] + window[2w+1]]` to dynamic shared memory (every thread
/// takes part, then a barrier), then its rows ([`bell_row`]) read `x` there.
#[kernel(args = ThesisBellV3)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn thesis_bell_v3<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n_block_rows: usize,
    n_block_rows_pad: usize,
    b: usize,
    alpha: V,
    row_len: *const u32,
    block_col: *const u32,
    values: *const A,
    map: *const u32,
    window: *const u32,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let w = block_idx();
    let (lo, len) = unsafe { (*window.add(2 * w) as usize, *window.add(2 * w + 1) as usize) };
    let shared = dynamic_shared::<V>();
    for_each_block_index(len, |j| unsafe { *shared.add(j) = *x.add(lo + j) });
    sync_threads();
    let i = w * block_dim() + thread_idx();
    if i < n_block_rows * b {
        // Every block column of this CUDA block's rows lies in the window (the host
        // computed it from exactly these rows), so `col b - lo` is in range.
        let x_at = |col: usize| unsafe { shared.add(col * b - lo) as *const V };
        unsafe {
            bell_row::<A, V, B>(
                i,
                b,
                n_block_rows_pad,
                alpha,
                row_len,
                block_col,
                values,
                map,
                x_at,
                beta,
                y,
            )
        };
    }
}

/// Ghost rows ([`fill_row`]): `n_block_rows b` threads.
#[kernel(args = ThesisFillRows)]
pub unsafe fn thesis_fill_rows<V: Scalar>(
    n_block_rows: usize,
    b: usize,
    beta: V,
    rows: *const u32,
    y: *mut V,
) {
    for_each_index(n_block_rows * b, |t| unsafe {
        fill_row::<V>(t, b, beta, rows, y)
    });
}

/// The SpMV variants of Kautz (2011) for one (matrix scalar, vector scalar) pair: every
/// type with itself, and the real types with their complex counterparts. `_5` kernels
/// have the block size 5 built in; the others take `b`.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SpmvThesisKernels<V: Scalar>: MatrixScalar<V> {
    /// `thesis_bcsr_v1_5_<pair>`: BCSR V1, thread per block.
    const BCSR_V1_5: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_v1_<pair>`: BCSR V1, `b` at run time.
    const BCSR_V1: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_v2_5_<pair>`: BCSR V2, thread per block row, row-major blocks.
    const BCSR_V2_5: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_v2_<pair>`: BCSR V2, `b` at run time.
    const BCSR_V2: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_v3_5_<pair>`: BCSR V3, column-major blocks.
    const BCSR_V3_5: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_v3_<pair>`: BCSR V3, `b` at run time.
    const BCSR_V3: Kernel<ThesisBcsrMul<'static, Self, V>>;
    /// `thesis_bcsr_reduce_5_<pair>`: the BCSR reduction.
    const BCSR_REDUCE_5: Kernel<ThesisBcsrReduce<'static, V>>;
    /// `thesis_bcsr_reduce_<pair>`: the BCSR reduction, `b` at run time.
    const BCSR_REDUCE: Kernel<ThesisBcsrReduce<'static, V>>;
    /// `thesis_ell_sub_<pair>`: ELL subsections.
    const ELL_SUB: Kernel<ThesisEllSub<'static, Self, V>>;
    /// `thesis_ell_reduce_<pair>`: the ELL reduction.
    const ELL_REDUCE: Kernel<ThesisEllReduce<'static, V>>;
    /// `thesis_ell_v2_<pair>`: ELL V2.
    const ELL_V2: Kernel<ThesisEllV2<'static, Self, V>>;
    /// `thesis_bell_5_<pair>`: BELL, thread per scalar row.
    const BELL_5: Kernel<ThesisBell<'static, Self, V>>;
    /// `thesis_bell_<pair>`: BELL, `b` at run time.
    const BELL: Kernel<ThesisBell<'static, Self, V>>;
    /// `thesis_bell_v2_5_<pair>`: BELL V2, thread per block row.
    const BELL_V2_5: Kernel<ThesisBell<'static, Self, V>>;
    /// `thesis_bell_v2_<pair>`: BELL V2, `b <= BELL_V2_MAX_B` at run time.
    const BELL_V2: Kernel<ThesisBell<'static, Self, V>>;
    /// `thesis_bell_v3_5_<pair>`: BELL V3, `x` window in shared memory.
    const BELL_V3_5: Kernel<ThesisBellV3<'static, Self, V>>;
    /// `thesis_bell_v3_<pair>`: BELL V3, `b` at run time.
    const BELL_V3: Kernel<ThesisBellV3<'static, Self, V>>;
    /// `thesis_fill_rows_<pair>`: ghost rows.
    const FILL_ROWS: Kernel<ThesisFillRows<'static, V>>;
}

/// The entry points of one pair, with the PTX names the notes and results refer to.
macro_rules! thesis_instances {
    ($a:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl SpmvThesisKernels<$v> for $a {
                BCSR_V1_5 = thesis_bcsr_mul::<$a, $v, 5, false, false>(concat!("thesis_bcsr_v1_5_", $sfx));
                BCSR_V1 = thesis_bcsr_mul::<$a, $v, 0, false, false>(concat!("thesis_bcsr_v1_", $sfx));
                BCSR_V2_5 = thesis_bcsr_mul::<$a, $v, 5, true, false>(concat!("thesis_bcsr_v2_5_", $sfx));
                BCSR_V2 = thesis_bcsr_mul::<$a, $v, 0, true, false>(concat!("thesis_bcsr_v2_", $sfx));
                BCSR_V3_5 = thesis_bcsr_mul::<$a, $v, 5, true, true>(concat!("thesis_bcsr_v3_5_", $sfx));
                BCSR_V3 = thesis_bcsr_mul::<$a, $v, 0, true, true>(concat!("thesis_bcsr_v3_", $sfx));
                BCSR_REDUCE_5 = thesis_bcsr_reduce::<$v, 5>(concat!("thesis_bcsr_reduce_5_", $sfx));
                BCSR_REDUCE = thesis_bcsr_reduce::<$v, 0>(concat!("thesis_bcsr_reduce_", $sfx));
                ELL_SUB = thesis_ell_sub::<$a, $v>(concat!("thesis_ell_sub_", $sfx));
                ELL_REDUCE = thesis_ell_reduce::<$v>(concat!("thesis_ell_reduce_", $sfx));
                ELL_V2 = thesis_ell_v2::<$a, $v>(concat!("thesis_ell_v2_", $sfx));
                BELL_5 = thesis_bell::<$a, $v, 5, 0>(concat!("thesis_bell_5_", $sfx));
                BELL = thesis_bell::<$a, $v, 0, 0>(concat!("thesis_bell_", $sfx));
                BELL_V2_5 = thesis_bell::<$a, $v, 5, 5>(concat!("thesis_bell_v2_5_", $sfx));
                BELL_V2 = thesis_bell::<$a, $v, 0, BELL_V2_MAX_B>(concat!("thesis_bell_v2_", $sfx));
                BELL_V3_5 = thesis_bell_v3::<$a, $v, 5>(concat!("thesis_bell_v3_5_", $sfx));
                BELL_V3 = thesis_bell_v3::<$a, $v, 0>(concat!("thesis_bell_v3_", $sfx));
                FILL_ROWS = thesis_fill_rows::<$v>(concat!("thesis_fill_rows_", $sfx));
            }
        }
    };
}

thesis_instances!(f32, f32, "f32");
thesis_instances!(f64, f64, "f64");
thesis_instances!(num_complex::Complex<f32>, num_complex::Complex<f32>, "c32");
thesis_instances!(num_complex::Complex<f64>, num_complex::Complex<f64>, "c64");
thesis_instances!(f32, num_complex::Complex<f32>, "f32_c32");
thesis_instances!(f64, num_complex::Complex<f64>, "f64_c64");
