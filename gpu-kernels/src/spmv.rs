//! SpMV kernels on the device. The per-row math is the same fused multiply-add chain as
//! the CPU path (`crate::sparse`): blocks in storage order, columns in order, one
//! [`spmv_term`] per entry (zero entries, padding included, add nothing), then
//! [`finish`]. So GPU and CPU results agree bit for bit.
//!
//! [`spmv_term`]: crate::sparse::spmv_term
//! [`finish`]: crate::sparse::finish
//!
//! # Parameters
//! Each kernel's parameters are declared once, on its body (`#[kernel]`): the host's
//! launch-arguments struct ([`SpmvBcsr`], [`SpmvSbell`], ...) has one named field per
//! parameter, in the order lengths, `alpha`, the matrix's arrays, `x`, `beta`, `y`. They
//! stay separate kernel parameters rather than one `#[repr(C)]` struct: rustc passes a
//! struct parameter of a `ptx-kernel` as an array of integers, so LLVM no longer knows
//! that the pointers inside point to global memory and every matrix load becomes a
//! generic `ld` instead of `ld.global` (checked on these kernels with nightly-2026-05-20,
//! LLVM 22). A pointer parameter is marked global (`.ptr`, `cvta.to.global`).
//!
//! BCSR kernels map one thread to one matrix row: thread `i` computes `y[i]` for block
//! row `i / b`, row `i % b` inside the block. The `b` threads of a block row are
//! consecutive lanes; with column-major blocks (the "permuted" BCSR) their loads of one
//! block column are contiguous, with row-major blocks each thread reads its own
//! contiguous row of `b` values.
//!
//! The CSR kernel gives each row a group of `lanes` consecutive threads
//! (a power of two up to 32, [`csr_lanes`]): lane `l` sums the row's entries `l, l +
//! lanes, ...` ([`csr_lane_sum`]), the group adds its lanes' sums in a fixed tree order
//! ([`lanes_sum`]). The CPU twin (`ferrocuda::sparse::cpu::spmv_csr_lanes`) runs the
//! same two steps, so the bits agree; with one lane the row is the plain chain of every
//! other format.
//!
//! [`csr_lane_sum`]: crate::sparse::csr_lane_sum
//! [`lanes_sum`]: crate::sparse::lanes_sum

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{for_each_group, for_each_index, global_index, group_sum};
use crate::scalar::Scalar;
use crate::sparse::MatrixScalar;
#[cfg(target_arch = "nvptx64")]
use crate::sparse::{csr_lane_sum, masked_block_mul_add, masked_row, spmv_term, write_row};
use crate::{instances, kernel};

/// Threads per block of the row-per-thread SpMV kernels (a multiple of 5 and of 32).
pub const SPMV_ROW_BLOCK: usize = 160;

/// Block rows per slice of the sliced masked BELL format (one warp: lane `l` of a warp
/// owns block row `l` of a slice, so its loads of one stored entry are 32 consecutive
/// values).
pub const SBELL_SLICE: usize = 32;

/// Largest block size of the sliced masked BELL format (a block's mask is one `u64`).
pub const SBELL_MAX_B: usize = 8;

/// Threads per block of the block-row-per-thread SBELL kernel.
pub const SBELL_THREADS: usize = 128;

/// Threads per block of the CSR kernel (a multiple of 32, so a row's lanes never straddle
/// two warps).
pub const CSR_THREADS: usize = 256;

/// Most lanes per row of the CSR kernel (one warp).
pub const CSR_MAX_LANES: usize = 32;

/// Lanes per row of the CSR kernel for `nnz` entries in `n_rows` rows: the power of two
/// at or above the mean row length, between 1 and [`CSR_MAX_LANES`]. A row of about that
/// length then takes one step of loads over all its lanes, and short rows keep the
/// thread-per-row chain (one lane).
pub const fn csr_lanes(nnz: usize, n_rows: usize) -> usize {
    if n_rows == 0 {
        return 1;
    }
    let mean = nnz.div_ceil(n_rows);
    if mean >= CSR_MAX_LANES {
        CSR_MAX_LANES
    } else {
        mean.next_power_of_two()
    }
}

/// `y[i] <- alpha (A x)_i + beta y[i]` for CSR (`n_rows + 1` offsets `row_ptr`, columns
/// `col_idx`, `values`), `lanes` threads per row (see the [module docs](self)): every lane
/// of a warp takes part in the group sums, so the loop runs warp-uniformly and rows past
/// the end read nothing.
#[kernel(args = SpmvCsr)]
pub unsafe fn spmv_csr<A: MatrixScalar<V>, V: Scalar>(
    n_rows: usize,
    lanes: usize,
    alpha: V,
    row_ptr: *const usize,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    for_each_group(n_rows, lanes, |row, lane| {
        let (start, end) = if row < n_rows {
            unsafe { (*row_ptr.add(row), *row_ptr.add(row + 1)) }
        } else {
            (0, 0)
        };
        let partial = csr_lane_sum(start, end, lane, lanes, |k| unsafe {
            (*values.add(k), *x.add(*col_idx.add(k) as usize))
        });
        let sum = group_sum(partial, lanes);
        if lane == 0 && row < n_rows {
            unsafe { write_row(y, row, alpha, sum, beta) };
        }
    });
}

/// `y[i] <- alpha (A x)_i + beta y[i]` for BCSR with `b x b` blocks (`B = 0`: block size
/// from `b` at run time; `B > 0`: compile-time block size, `b` ignored). `COL_MAJOR`:
/// blocks stored column-major.
#[kernel(args = SpmvBcsr)]
pub unsafe fn spmv_bcsr<A: MatrixScalar<V>, V: Scalar, const B: usize, const COL_MAJOR: bool>(
    n_block_rows: usize,
    b: usize,
    alpha: V,
    row_ptr: *const usize,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let bb = b * b;
    for_each_index(n_block_rows * b, |i| {
        let (br, r) = (i / b, i % b);
        let (start, end) = unsafe { (*row_ptr.add(br), *row_ptr.add(br + 1)) };
        let mut acc = V::ZERO;
        for k in start..end {
            let col = unsafe { *col_idx.add(k) } as usize;
            let block = unsafe { values.add(k * bb) };
            let xs = unsafe { x.add(col * b) };
            for c in 0..b {
                let m = if COL_MAJOR {
                    unsafe { *block.add(c * b + r) }
                } else {
                    unsafe { *block.add(r * b + c) }
                };
                acc = spmv_term(m, unsafe { *xs.add(c) }, acc);
            }
        }
        unsafe { write_row(y, i, alpha, acc, beta) };
    });
}

/// `y[i] <- alpha (A x)_i + beta y[i]` for blocked ELL (`ferrocuda::sparse::Bell`):
/// entry `(r, c)` of slot `k` of block row `I` at `(k b + c) n_pad + I b + r`, so
/// consecutive threads (rows) read consecutive addresses. Slots run in the same order as
/// BCSR's blocks: the same chain, the same bits. `B` as for [`SpmvBcsr`].
#[kernel(args = SpmvBell)]
pub unsafe fn spmv_bell<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n_block_rows: usize,
    n_block_rows_pad: usize,
    b: usize,
    alpha: V,
    row_len: *const u32,
    block_col: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let n_pad = n_block_rows_pad * b;
    for_each_index(n_block_rows * b, |i| {
        let bi = i / b;
        let len = unsafe { *row_len.add(bi) } as usize;
        let mut acc = V::ZERO;
        for k in 0..len {
            let col = unsafe { *block_col.add(k * n_block_rows_pad + bi) } as usize;
            let xs = unsafe { x.add(col * b) };
            let slot = unsafe { values.add(k * b * n_pad + i) };
            for c in 0..b {
                let m = unsafe { *slot.add(c * n_pad) };
                acc = spmv_term(m, unsafe { *xs.add(c) }, acc);
            }
        }
        unsafe { write_row(y, i, alpha, acc, beta) };
    });
}

/// `y[i] <- alpha (A x)_i + beta y[i]` for scalar ELL (`ferrocuda::sparse::Ell`): slot
/// `k` of row `i` at `k n_rows_pad + i` (coalesced across rows), slots in order: the
/// CPU's chain.
#[kernel(args = SpmvEll)]
pub unsafe fn spmv_ell<A: MatrixScalar<V>, V: Scalar>(
    n_rows: usize,
    n_rows_pad: usize,
    alpha: V,
    row_len: *const u32,
    col_idx: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    for_each_index(n_rows, |i| {
        let len = unsafe { *row_len.add(i) } as usize;
        let mut acc = V::ZERO;
        for k in 0..len {
            let at = k * n_rows_pad + i;
            let col = unsafe { *col_idx.add(at) } as usize;
            acc = spmv_term(unsafe { *values.add(at) }, unsafe { *x.add(col) }, acc);
        }
        unsafe { write_row(y, i, alpha, acc, beta) };
    });
}

/// Sliced masked BELL (`ferrocuda::sparse::Sbell`), one thread per stored block row `s`
/// (lane `s % 32` of slice `s / 32`), `N` accumulators (`B = 0`: block size `b`, at most
/// `N`; `B > 0`: built in, `N = B`, `b` ignored): slot `k`'s block column at
/// `slice_col_ptr[sl] + k 32 + lane`, its stored entries (the set bits of `masks[k]`,
/// row-major) at `slice_val_ptr[sl] + (E_k + e) 32 + lane`, `E_k` the entries of the
/// slots before `k`. Threads `n_stored_pad..` write the empty (ghost) block rows listed in
/// `empty_rows`: `beta y` (`n_empty = 0` leaves them as they are).
///
/// `ROWS`: one thread per matrix row instead ([`SbellArrays::rows_product`]): `b` times
/// the threads, each with a `b`-th of the chain, for matrices too small to fill the GPU
/// with one thread per block row. Same sums, same bits.
#[kernel(args = SpmvSbell)]
pub unsafe fn spmv_sbell<
    A: MatrixScalar<V>,
    V: Scalar,
    const B: usize,
    const N: usize,
    const ROWS: bool,
>(
    n_stored: usize,
    n_stored_pad: usize,
    n_empty: usize,
    b: usize,
    alpha: V,
    row_index: *const u32,
    empty_rows: *const u32,
    row_len: *const u32,
    masks: *const u64,
    slice_col_ptr: *const usize,
    slice_val_ptr: *const usize,
    block_col: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    if ROWS {
        let a = SbellArrays {
            n_stored,
            n_stored_pad,
            n_empty,
            b,
            row_index,
            empty_rows,
            row_len,
            masks,
            slice_col_ptr,
            slice_val_ptr,
            block_col,
            values,
        };
        unsafe { a.rows_product::<V, B, N>(alpha, x, beta, y) };
        return;
    }
    let b = if B > 0 { B } else { b.min(N) };
    let s = global_index();
    if s < n_stored {
        let (mut acc, mut xb) = ([V::ZERO; N], [V::ZERO; N]);
        let (sl, lane) = (s / SBELL_SLICE, s % SBELL_SLICE);
        let len = unsafe { *row_len.add(s) } as usize;
        let mut cp = unsafe { block_col.add(*slice_col_ptr.add(sl) + lane) };
        let mut vp = unsafe { values.add(*slice_val_ptr.add(sl) + lane) };
        for k in 0..len {
            let mask = unsafe { *masks.add(k) };
            let xs = unsafe { x.add(*cp as usize * b) };
            for c in 0..b {
                xb[c] = unsafe { *xs.add(c) };
            }
            masked_block_mul_add(
                &mut acc,
                b,
                mask,
                |e| unsafe { *vp.add(e * SBELL_SLICE) },
                &xb,
            );
            cp = unsafe { cp.add(SBELL_SLICE) };
            vp = unsafe { vp.add(mask.count_ones() as usize * SBELL_SLICE) };
        }
        let out = unsafe { *row_index.add(s) } as usize * b;
        #[allow(clippy::needless_range_loop)] // an index loop unrolls; the iterator did not
        for r in 0..b {
            unsafe { write_row(y, out + r, alpha, acc[r], beta) };
        }
    } else if s >= n_stored_pad && s - n_stored_pad < n_empty {
        let out = unsafe { *empty_rows.add(s - n_stored_pad) } as usize * b;
        for r in 0..b {
            unsafe { write_row(y, out + r, alpha, V::ZERO, beta) };
        }
    }
}

/// Threads of [`SbellArrays::rows_product`]: `b` warps per slice of 32 stored block
/// rows (`n_stored_pad` of them), then one per row of the `n_empty` empty block rows.
pub const fn sbell_row_threads(n_stored_pad: usize, n_empty: usize, b: usize) -> usize {
    (n_stored_pad + n_empty) * b
}

/// The arrays of a sliced masked BELL matrix (the parameters of [`spmv_sbell`], layout
/// in `ferrocuda::sparse::sbell`), gathered by a kernel from its own parameters (so
/// that the loads stay `ld.global`).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub(crate) struct SbellArrays<A> {
    pub n_stored: usize,
    pub n_stored_pad: usize,
    pub n_empty: usize,
    pub b: usize,
    pub row_index: *const u32,
    pub empty_rows: *const u32,
    pub row_len: *const u32,
    pub masks: *const u64,
    pub slice_col_ptr: *const usize,
    pub slice_val_ptr: *const usize,
    pub block_col: *const u32,
    pub values: *const A,
}

#[cfg(target_arch = "nvptx64")]
impl<A> SbellArrays<A> {
    /// `y <- alpha A x + beta y`, one thread per matrix row over the grid (stride loop,
    /// [`sbell_row_threads`]): warp `w` computes row `r = w % b` of the 32 block rows of
    /// slice `w / b` (so its loads of one stored entry are 32 consecutive values, as in
    /// the block-row kernel), the rest write the rows of the empty block rows. `B`, `N`
    /// as for [`spmv_sbell`].
    #[inline(always)]
    pub unsafe fn rows_product<V: Scalar, const B: usize, const N: usize>(
        &self,
        alpha: V,
        x: *const V,
        beta: V,
        y: *mut V,
    ) where
        A: MatrixScalar<V>,
    {
        let b = if B > 0 { B } else { self.b.min(N) };
        let stored = self.n_stored_pad * b;
        for_each_index(sbell_row_threads(self.n_stored_pad, self.n_empty, b), |t| {
            if t < stored {
                let w = t / SBELL_SLICE;
                let (sl, r) = (w / b, w % b);
                let s = sl * SBELL_SLICE + t % SBELL_SLICE;
                if s < self.n_stored {
                    let acc = unsafe { self.row::<V, N>(s, r, b, x) };
                    let out = unsafe { *self.row_index.add(s) } as usize * b + r;
                    unsafe { write_row(y, out, alpha, acc, beta) };
                }
            } else {
                let (e, r) = ((t - stored) / b, (t - stored) % b);
                let out = unsafe { *self.empty_rows.add(e) } as usize * b + r;
                unsafe { write_row(y, out, alpha, V::ZERO, beta) };
            }
        });
    }

    /// Row `r` of stored block row `s`: slots in order, each block's row by
    /// [`masked_row`], the chain of the block-row kernel's accumulator `r`. The slots go
    /// in batches of [`ROW_SLOT_BATCH`] whose loads (block columns and masks, then `x`
    /// and the entries) are all issued before the batch's first multiply-add: one slot
    /// at a time, each slot would wait two memory round trips (its block column, then
    /// `x`). Slots past the row's end in the last batch read slot `k`'s column and `x` at
    /// block column 0, with an empty mask: they add nothing.
    #[inline(always)]
    unsafe fn row<V: Scalar, const N: usize>(&self, s: usize, r: usize, b: usize, x: *const V) -> V
    where
        A: MatrixScalar<V>,
    {
        let (sl, lane) = (s / SBELL_SLICE, s % SBELL_SLICE);
        let len = unsafe { *self.row_len.add(s) } as usize;
        let mut cp = unsafe { self.block_col.add(*self.slice_col_ptr.add(sl) + lane) };
        let mut vp = unsafe { self.values.add(*self.slice_val_ptr.add(sl) + lane) };
        let mut acc = V::ZERO;
        let mut k = 0;
        while k < len {
            let mut cols = [0usize; ROW_SLOT_BATCH];
            let mut masks = [0u64; ROW_SLOT_BATCH];
            unroll!(i in [0, 1, 2, 3] {
                let live = k + i < len;
                // SAFETY: slot k < len is real; a slot past the end reads slot k's.
                let (c, m) = unsafe {
                    (*cp.add(if live { i * SBELL_SLICE } else { 0 }), *self.masks.add(if live { k + i } else { k }))
                };
                cols[i] = if live { c as usize } else { 0 };
                masks[i] = if live { m } else { 0 };
            });
            let mut xb = [[V::ZERO; N]; ROW_SLOT_BATCH];
            let mut at = [vp; ROW_SLOT_BATCH];
            unroll!(i in [0, 1, 2, 3] {
                let xs = unsafe { x.add(cols[i] * b) };
                for c in 0..b {
                    xb[i][c] = unsafe { *xs.add(c) };
                }
                at[i] = vp;
                vp = unsafe { vp.add(masks[i].count_ones() as usize * SBELL_SLICE) };
            });
            unroll!(i in [0, 1, 2, 3] {
                let n = masks[i].count_ones() as usize;
                let p = at[i];
                // An empty mask reads nothing and selects no term.
                let value = |e: usize| if n > 0 { unsafe { *p.add(e * SBELL_SLICE) } } else { A::ZERO };
                acc = masked_row(acc, r, b, masks[i], n.max(1), &value, &xb[i]);
            });
            cp = unsafe { cp.add(ROW_SLOT_BATCH * SBELL_SLICE) };
            k += ROW_SLOT_BATCH;
        }
        acc
    }
}

/// Slots per batch of loads in the row-per-thread SBELL product (see `SbellArrays::row`).
pub const ROW_SLOT_BATCH: usize = 4;

/// Block-stencil format (`ferrocuda::sparse::Bdia`), one thread per stored scalar row
/// `i = s b + r`: diagonal `d`'s block column is `row_index[s] + offsets[d]` (skipped
/// outside `0..n_block_cols`), entry `(r, c)` at `(d b + c) n_pad + i`, `n_pad =
/// n_stored_pad b`. Threads `n_pad..` write the rows of the block rows in `empty_rows`.
/// `B` as for [`SpmvBcsr`].
#[kernel(args = SpmvBdia)]
pub unsafe fn spmv_bdia<A: MatrixScalar<V>, V: Scalar, const B: usize>(
    n_stored: usize,
    n_stored_pad: usize,
    n_empty: usize,
    b: usize,
    n_block_cols: usize,
    n_diagonals: usize,
    alpha: V,
    offsets: *const i64,
    row_index: *const u32,
    empty_rows: *const u32,
    values: *const A,
    x: *const V,
    beta: V,
    y: *mut V,
) {
    let b = if B > 0 { B } else { b };
    let n_pad = n_stored_pad * b;
    let i = global_index();
    if i < n_stored * b {
        let (s, r) = (i / b, i % b);
        let row = unsafe { *row_index.add(s) } as usize;
        let mut acc = V::ZERO;
        for d in 0..n_diagonals {
            let j = row as i64 + unsafe { *offsets.add(d) };
            if j < 0 || j as usize >= n_block_cols {
                continue;
            }
            let xs = unsafe { x.add(j as usize * b) };
            let slot = unsafe { values.add(d * b * n_pad + i) };
            for c in 0..b {
                let m = unsafe { *slot.add(c * n_pad) };
                acc = spmv_term(m, unsafe { *xs.add(c) }, acc);
            }
        }
        unsafe { write_row(y, row * b + r, alpha, acc, beta) };
    } else if i >= n_pad && i - n_pad < n_empty * b {
        let (e, r) = ((i - n_pad) / b, (i - n_pad) % b);
        let out = unsafe { *empty_rows.add(e) } as usize * b;
        unsafe { write_row(y, out + r, alpha, V::ZERO, beta) };
    }
}

/// The SpMV kernels of one (matrix scalar, vector scalar) pair: every type with itself,
/// and the real types with their complex counterparts.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SpmvKernels<V: Scalar>: MatrixScalar<V> {
    /// `spmv_csr_<pair>`: CSR, `lanes` threads per row.
    const CSR: Kernel<SpmvCsr<'static, Self, V>>;
    /// `spmv_bcsr5_rm_<pair>`: BCSR, 5x5 row-major blocks.
    const BCSR5_RM: Kernel<SpmvBcsr<'static, Self, V>>;
    /// `spmv_bcsr5_cm_<pair>`: BCSR, 5x5 column-major blocks.
    const BCSR5_CM: Kernel<SpmvBcsr<'static, Self, V>>;
    /// `spmv_bcsr_rm_<pair>`: BCSR, `b x b` row-major blocks, `b` at run time.
    const BCSR_RM: Kernel<SpmvBcsr<'static, Self, V>>;
    /// `spmv_bcsr_cm_<pair>`: BCSR, `b x b` column-major blocks.
    const BCSR_CM: Kernel<SpmvBcsr<'static, Self, V>>;
    /// `spmv_bell5_<pair>`: blocked ELL, 5x5 blocks.
    const BELL5: Kernel<SpmvBell<'static, Self, V>>;
    /// `spmv_bell_<pair>`: blocked ELL, `b` at run time.
    const BELL: Kernel<SpmvBell<'static, Self, V>>;
    /// `spmv_ell_<pair>`: scalar ELL.
    const ELL: Kernel<SpmvEll<'static, Self, V>>;
    /// `spmv_sbell5_<pair>`: sliced masked BELL, 5x5 blocks.
    const SBELL5: Kernel<SpmvSbell<'static, Self, V>>;
    /// `spmv_sbell_<pair>`: sliced masked BELL, `b <= 8` at run time.
    const SBELL: Kernel<SpmvSbell<'static, Self, V>>;
    /// `spmv_sbell5_rows_<pair>`: sliced masked BELL, 5x5 blocks, one thread per row.
    const SBELL5_ROWS: Kernel<SpmvSbell<'static, Self, V>>;
    /// `spmv_sbell_rows_<pair>`: sliced masked BELL, `b <= 8`, one thread per row.
    const SBELL_ROWS: Kernel<SpmvSbell<'static, Self, V>>;
    /// `spmv_bdia5_<pair>`: block stencil, 5x5 blocks.
    const BDIA5: Kernel<SpmvBdia<'static, Self, V>>;
    /// `spmv_bdia_<pair>`: block stencil, `b` at run time.
    const BDIA: Kernel<SpmvBdia<'static, Self, V>>;
}

/// The entry points of one (matrix scalar, vector scalar) pair; the names are those the
/// notes, results and `scripts/ptx-check` refer to.
macro_rules! spmv_instances {
    ($a:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl SpmvKernels<$v> for $a {
                CSR = spmv_csr::<$a, $v>(concat!("spmv_csr_", $sfx));
                BCSR5_RM = spmv_bcsr::<$a, $v, 5, false>(concat!("spmv_bcsr5_rm_", $sfx));
                BCSR5_CM = spmv_bcsr::<$a, $v, 5, true>(concat!("spmv_bcsr5_cm_", $sfx));
                BCSR_RM = spmv_bcsr::<$a, $v, 0, false>(concat!("spmv_bcsr_rm_", $sfx));
                BCSR_CM = spmv_bcsr::<$a, $v, 0, true>(concat!("spmv_bcsr_cm_", $sfx));
                BELL5 = spmv_bell::<$a, $v, 5>(concat!("spmv_bell5_", $sfx));
                BELL = spmv_bell::<$a, $v, 0>(concat!("spmv_bell_", $sfx));
                ELL = spmv_ell::<$a, $v>(concat!("spmv_ell_", $sfx));
                SBELL5 = spmv_sbell::<$a, $v, 5, 5, false>(concat!("spmv_sbell5_", $sfx));
                SBELL = spmv_sbell::<$a, $v, 0, SBELL_MAX_B, false>(concat!("spmv_sbell_", $sfx));
                SBELL5_ROWS = spmv_sbell::<$a, $v, 5, 5, true>(concat!("spmv_sbell5_rows_", $sfx));
                SBELL_ROWS = spmv_sbell::<$a, $v, 0, SBELL_MAX_B, true>(concat!("spmv_sbell_rows_", $sfx));
                BDIA5 = spmv_bdia::<$a, $v, 5>(concat!("spmv_bdia5_", $sfx));
                BDIA = spmv_bdia::<$a, $v, 0>(concat!("spmv_bdia_", $sfx));
            }
        }
    };
}

spmv_instances!(f32, f32, "f32");
spmv_instances!(f64, f64, "f64");
spmv_instances!(num_complex::Complex<f32>, num_complex::Complex<f32>, "c32");
spmv_instances!(num_complex::Complex<f64>, num_complex::Complex<f64>, "c64");
spmv_instances!(f32, num_complex::Complex<f32>, "f32_c32");
spmv_instances!(f64, num_complex::Complex<f64>, "f64_c64");
// Mixed-precision storage: f32 values, f64 vectors (half the matrix bytes).
spmv_instances!(f32, f64, "f32_f64");
spmv_instances!(f32, num_complex::Complex<f64>, "f32_c64");
spmv_instances!(
    num_complex::Complex<f32>,
    num_complex::Complex<f64>,
    "c32_c64"
);

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn csr_lanes_follow_the_mean_row_length() {
        assert_eq!(csr_lanes(0, 0), 1);
        assert_eq!(csr_lanes(0, 10), 1);
        assert_eq!(csr_lanes(10, 10), 1);
        assert_eq!(csr_lanes(11, 10), 2);
        assert_eq!(csr_lanes(27 * 100, 100), 32);
        assert_eq!(csr_lanes(5 * 100, 100), 8);
        assert_eq!(csr_lanes(1000 * 100, 100), CSR_MAX_LANES);
        for n in [1usize, 2, 3, 31, 32, 33, 255, 256, 257] {
            let l = csr_lanes(n * 7, n);
            assert!(l.is_power_of_two() && l <= CSR_MAX_LANES, "{n}: {l}");
        }
    }

    #[test]
    fn every_pair_has_its_entry_names() {
        fn names<A: SpmvKernels<V>, V: Scalar>() -> [&'static str; 14] {
            [
                A::CSR.name(),
                A::BCSR5_RM.name(),
                A::BCSR5_CM.name(),
                A::BCSR_RM.name(),
                A::BCSR_CM.name(),
                A::BELL5.name(),
                A::BELL.name(),
                A::ELL.name(),
                A::SBELL5.name(),
                A::SBELL.name(),
                A::SBELL5_ROWS.name(),
                A::SBELL_ROWS.name(),
                A::BDIA5.name(),
                A::BDIA.name(),
            ]
        }
        use num_complex::Complex;
        assert_eq!(names::<f64, f64>()[1], "spmv_bcsr5_rm_f64");
        assert_eq!(names::<f32, Complex<f32>>()[0], "spmv_csr_f32_c32");
        for (all, sfx) in [
            (names::<f32, f32>(), "_f32"),
            (names::<Complex<f64>, Complex<f64>>(), "_c64"),
            (names::<f64, Complex<f64>>(), "_f64_c64"),
            (names::<f32, f64>(), "_f32_f64"),
            (names::<f32, Complex<f64>>(), "_f32_c64"),
            (names::<Complex<f32>, Complex<f64>>(), "_c32_c64"),
        ] {
            assert!(
                all.iter()
                    .all(|n| n.starts_with("spmv_") && n.ends_with(sfx))
            );
        }
        // BLAS order: lengths, alpha, the matrix, x, beta, y.
        let p: std::vec::Vec<&str> = <f64 as SpmvKernels<f64>>::SBELL
            .params()
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(p.len(), 16);
        assert_eq!((p[4], p[13], p[14], p[15]), ("alpha", "x", "beta", "y"));
    }
}
