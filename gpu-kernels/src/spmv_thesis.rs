//! The SpMV kernel variants of the thesis (Kautz 2011, digest `docs/notes/seed000-spmv.md`
//! §3 and §4), for reproduction tables. All work on ghost-compacted data: a stored block row
//! `s` writes result block row `map[s]` (the thesis's "Blockzeilenindex"); the result rows
//! that no stored row maps to (ghost rows) are written by a fill kernel (`beta y`, or 0).
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
//! (`ferrocuda::sparse::gpu_thesis::spmv_thesis_serial`) runs the same functions one
//! thread after another, which checks their indexing without a GPU.
//!
//! Their safety contract: every pointer is valid for the reads and writes the function's
//! docs name, the index arrays' entries are in range (as the host's preparation
//! guarantees), and no other thread writes what this one reads or writes.
//!
//! [`MatrixScalar::mul_add_vec`]: crate::sparse::MatrixScalar::mul_add_vec
//! [`block5_mul_add`]: crate::sparse::block5_mul_add
//! [`finish`]: crate::sparse::finish

use crate::scalar::Scalar;
use crate::sparse::{MatrixScalar, block5_mul_add, write_row};

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

#[cfg(target_arch = "nvptx64")]
mod kernels {
    //! Grid-stride loops over the per-thread bodies.
    use super::*;
    use crate::device::{
        block_dim, block_idx, dynamic_shared, global_index, grid_stride, sync_threads, thread_idx,
    };

    /// Runs `body(i)` for every `i < n` of the grid-stride loop.
    #[inline(always)]
    pub fn each(n: usize, mut body: impl FnMut(usize)) {
        let mut i = global_index();
        while i < n {
            body(i);
            i += grid_stride();
        }
    }

    /// BELL V3 (no grid-stride loop: one CUDA block per window). CUDA block `w` first
    /// copies `x[window[2w] .. window[2w] + window[2w+1]]` to dynamic shared memory (every
    /// thread takes part, then a barrier), then its rows read `x` there.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bell_v3<A: MatrixScalar<V>, V: Scalar, const B: usize>(
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
        let mut j = thread_idx();
        while j < len {
            unsafe { *shared.add(j) = *x.add(lo + j) };
            j += block_dim();
        }
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
}

/// Instantiates the thesis entry points of one (matrix scalar, vector scalar) pair: each
/// runs its per-thread body over a grid-stride loop (BELL V3: one CUDA block per window).
#[cfg(target_arch = "nvptx64")]
macro_rules! thesis_entries {
    ($module:ident, $a:ty, $v:ty, $sfx:literal) => {
        mod $module {
            use super::kernels::{self, each};
            use super::*;

            macro_rules! bcsr_mul_entry {
                ($fn:ident, $name:literal, $threads:ident, $body:path) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    pub unsafe extern "ptx-kernel" fn $fn(
                        n_blocks: usize,
                        b: usize,
                        col_idx: *const u32,
                        values: *const $a,
                        x: *const $v,
                        tmp: *mut $v,
                    ) {
                        let n = $threads(n_blocks, b);
                        each(n, |t| unsafe { $body(t, b, col_idx, values, x, tmp) });
                    }
                };
            }
            /// V1: one thread per block.
            fn per_block(n_blocks: usize, _b: usize) -> usize {
                n_blocks
            }
            /// V2, V3: one thread per row of a block (`b` fixed at 5 for the `_5` kernels).
            fn per_row5(n_blocks: usize, _b: usize) -> usize {
                n_blocks * 5
            }
            fn per_row(n_blocks: usize, b: usize) -> usize {
                n_blocks * b
            }
            bcsr_mul_entry!(
                bcsr_v1_5,
                "thesis_bcsr_v1_5_",
                per_block,
                bcsr_v1_block::<$a, $v, 5>
            );
            bcsr_mul_entry!(
                bcsr_v1,
                "thesis_bcsr_v1_",
                per_block,
                bcsr_v1_block::<$a, $v, 0>
            );
            bcsr_mul_entry!(
                bcsr_v2_5,
                "thesis_bcsr_v2_5_",
                per_row5,
                bcsr_v23_row::<$a, $v, 5, false>
            );
            bcsr_mul_entry!(
                bcsr_v2,
                "thesis_bcsr_v2_",
                per_row,
                bcsr_v23_row::<$a, $v, 0, false>
            );
            bcsr_mul_entry!(
                bcsr_v3_5,
                "thesis_bcsr_v3_5_",
                per_row5,
                bcsr_v23_row::<$a, $v, 5, true>
            );
            bcsr_mul_entry!(
                bcsr_v3,
                "thesis_bcsr_v3_",
                per_row,
                bcsr_v23_row::<$a, $v, 0, true>
            );

            macro_rules! bcsr_reduce_entry {
                ($fn:ident, $name:literal, $b:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn $fn(
                        n_block_rows: usize,
                        b: usize,
                        alpha: $v,
                        row_ptr: *const usize,
                        map: *const u32,
                        tmp: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        let n = n_block_rows * if $b > 0 { $b } else { b };
                        each(n, |i| unsafe {
                            bcsr_reduce_row::<$v, $b>(i, b, alpha, row_ptr, map, tmp, beta, y)
                        });
                    }
                };
            }
            bcsr_reduce_entry!(bcsr_reduce_5, "thesis_bcsr_reduce_5_", 5);
            bcsr_reduce_entry!(bcsr_reduce, "thesis_bcsr_reduce_", 0);

            #[unsafe(export_name = concat!("thesis_ell_sub_", $sfx))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn ell_sub(
                n_rows: usize,
                n_rows_pad: usize,
                n_sub: usize,
                sub_len: usize,
                row_len: *const u32,
                col_idx: *const u32,
                values: *const $a,
                x: *const $v,
                tmp: *mut $v,
            ) {
                each(n_rows * n_sub, |t| unsafe {
                    ell_sub_part::<$a, $v>(
                        t, n_rows, n_rows_pad, sub_len, row_len, col_idx, values, x, tmp,
                    )
                });
            }

            #[unsafe(export_name = concat!("thesis_ell_reduce_", $sfx))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn ell_reduce(
                n_rows: usize,
                n_sub: usize,
                alpha: $v,
                row_index: *const u32,
                tmp: *const $v,
                beta: $v,
                y: *mut $v,
            ) {
                each(n_rows, |i| unsafe {
                    ell_reduce_row::<$v>(i, n_rows, n_sub, alpha, row_index, tmp, beta, y)
                });
            }

            #[unsafe(export_name = concat!("thesis_ell_v2_", $sfx))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn ell_v2(
                n_rows: usize,
                n_rows_pad: usize,
                alpha: $v,
                row_len: *const u32,
                col_idx: *const u32,
                values: *const $a,
                row_index: *const u32,
                x: *const $v,
                beta: $v,
                y: *mut $v,
            ) {
                each(n_rows, |i| unsafe {
                    ell_v2_row::<$a, $v>(
                        i, n_rows_pad, alpha, row_len, col_idx, values, row_index, x, beta, y,
                    )
                });
            }

            macro_rules! bell_entry {
                ($fn:ident, $name:literal, $b:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn $fn(
                        n_block_rows: usize,
                        n_block_rows_pad: usize,
                        b: usize,
                        alpha: $v,
                        row_len: *const u32,
                        block_col: *const u32,
                        values: *const $a,
                        map: *const u32,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        let b = if $b > 0 { $b } else { b };
                        let x_at = |col: usize| unsafe { x.add(col * b) };
                        each(n_block_rows * b, |i| unsafe {
                            bell_row::<$a, $v, $b>(
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
                };
            }
            bell_entry!(bell_5, "thesis_bell_5_", 5);
            bell_entry!(bell, "thesis_bell_", 0);

            macro_rules! bell_v2_entry {
                ($fn:ident, $name:literal, $b:literal, $nb:expr) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn $fn(
                        n_block_rows: usize,
                        n_block_rows_pad: usize,
                        b: usize,
                        alpha: $v,
                        row_len: *const u32,
                        block_col: *const u32,
                        values: *const $a,
                        map: *const u32,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        each(n_block_rows, |s| unsafe {
                            bell_v2_block_row::<$a, $v, $b, $nb>(
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
                    }
                };
            }
            bell_v2_entry!(bell_v2_5, "thesis_bell_v2_5_", 5, 5);
            bell_v2_entry!(bell_v2, "thesis_bell_v2_", 0, BELL_V2_MAX_B);

            macro_rules! bell_v3_entry {
                ($fn:ident, $name:literal, $b:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn $fn(
                        n_block_rows: usize,
                        n_block_rows_pad: usize,
                        b: usize,
                        alpha: $v,
                        row_len: *const u32,
                        block_col: *const u32,
                        values: *const $a,
                        map: *const u32,
                        window: *const u32,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        unsafe {
                            kernels::bell_v3::<$a, $v, $b>(
                                n_block_rows,
                                n_block_rows_pad,
                                b,
                                alpha,
                                row_len,
                                block_col,
                                values,
                                map,
                                window,
                                x,
                                beta,
                                y,
                            )
                        }
                    }
                };
            }
            bell_v3_entry!(bell_v3_5, "thesis_bell_v3_5_", 5);
            bell_v3_entry!(bell_v3, "thesis_bell_v3_", 0);

            #[unsafe(export_name = concat!("thesis_fill_rows_", $sfx))]
            pub unsafe extern "ptx-kernel" fn fill_rows(
                n_block_rows: usize,
                b: usize,
                beta: $v,
                rows: *const u32,
                y: *mut $v,
            ) {
                each(n_block_rows * b, |t| unsafe {
                    fill_row::<$v>(t, b, beta, rows, y)
                });
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
thesis_entries!(thesis_f32, f32, f32, "f32");
#[cfg(target_arch = "nvptx64")]
thesis_entries!(thesis_f64, f64, f64, "f64");
#[cfg(target_arch = "nvptx64")]
thesis_entries!(
    thesis_c32,
    num_complex::Complex<f32>,
    num_complex::Complex<f32>,
    "c32"
);
#[cfg(target_arch = "nvptx64")]
thesis_entries!(
    thesis_c64,
    num_complex::Complex<f64>,
    num_complex::Complex<f64>,
    "c64"
);
#[cfg(target_arch = "nvptx64")]
thesis_entries!(thesis_f32_c32, f32, num_complex::Complex<f32>, "f32_c32");
#[cfg(target_arch = "nvptx64")]
thesis_entries!(thesis_f64_c64, f64, num_complex::Complex<f64>, "f64_c64");
