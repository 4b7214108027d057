//! SpMV kernels on the device. The per-row math is the same fused multiply-add chain as
//! the CPU path (`crate::sparse`): blocks in storage order, columns in order, one
//! [`spmv_term`] per entry (zero entries, padding included, add nothing), then
//! [`finish`]. So GPU and CPU results agree bit for bit.
//!
//! [`spmv_term`]: crate::sparse::spmv_term
//! [`finish`]: crate::sparse::finish
//!
//! BCSR kernels map one thread to one matrix row: thread `i` computes `y[i]` for block
//! row `i / b`, row `i % b` inside the block. The `b` threads of a block row are
//! consecutive lanes; with column-major blocks (the thesis's "permuted" BCSR) their loads
//! of one block column are contiguous, with row-major blocks each thread reads its own
//! contiguous row of `b` values.

#[cfg(target_arch = "nvptx64")]
use crate::scalar::Scalar;
#[cfg(target_arch = "nvptx64")]
use crate::sparse::{MatrixScalar, spmv_term, write_row};
#[cfg(target_arch = "nvptx64")]
use num_complex::Complex;

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

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::device::{global_index, grid_stride};

    /// `y[i] <- alpha (A x)_i + beta y[i]` for BCSR with `b x b` blocks (`B = 0`: block
    /// size from `b` at run time; `B > 0`: compile-time block size, `b` ignored).
    /// `COL_MAJOR`: blocks stored column-major.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bcsr<A: MatrixScalar<V>, V: Scalar, const B: usize, const COL_MAJOR: bool>(
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
        let n_rows = n_block_rows * b;
        let mut i = global_index();
        while i < n_rows {
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
            i += grid_stride();
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod bell_kernels {
    use super::*;
    use crate::device::{global_index, grid_stride};

    /// `y[i] <- alpha (A x)_i + beta y[i]` for blocked ELL (`crate::sparse` layout):
    /// entry `(r, c)` of slot `k` of block row `I` at `(k b + c) n_pad + I b + r`, so
    /// consecutive threads (rows) read consecutive addresses. Slots run in the same order
    /// as BCSR's blocks: the same chain, the same bits.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bell<A: MatrixScalar<V>, V: Scalar, const B: usize>(
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
        let n_rows = n_block_rows * b;
        let mut i = global_index();
        while i < n_rows {
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
            i += grid_stride();
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod ell_kernels {
    use super::*;
    use crate::device::{global_index, grid_stride};

    /// `y[i] <- alpha (A x)_i + beta y[i]` for scalar ELL: slot `k` of row `i` at
    /// `k n_rows_pad + i` (coalesced across rows), slots in order: the CPU's chain.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn ell<A: MatrixScalar<V>, V: Scalar>(
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
        let mut i = global_index();
        while i < n_rows {
            let len = unsafe { *row_len.add(i) } as usize;
            let mut acc = V::ZERO;
            for k in 0..len {
                let at = k * n_rows_pad + i;
                let col = unsafe { *col_idx.add(at) } as usize;
                acc = spmv_term(unsafe { *values.add(at) }, unsafe { *x.add(col) }, acc);
            }
            unsafe { write_row(y, i, alpha, acc, beta) };
            i += grid_stride();
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod sbell_kernels {
    use super::*;
    use crate::device::global_index;
    use crate::sparse::masked_block_mul_add;

    /// Sliced masked BELL (`ferrocuda::sparse::Sbell`), one thread per stored block row
    /// `s` (lane `s % 32` of slice `s / 32`), `b` accumulators: slot `k`'s block column at
    /// `slice_col_ptr[sl] + k 32 + lane`, its stored entries (the set bits of `masks[k]`,
    /// row-major) at `slice_val_ptr[sl] + (E_k + e) 32 + lane`, `E_k` the entries of the
    /// slots before `k`. Threads `n_stored_pad..` write the empty (ghost) block rows listed
    /// in `empty_rows`: `beta y`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sbell<A: MatrixScalar<V>, V: Scalar, const N: usize>(
        b: usize,
        n_stored: usize,
        n_stored_pad: usize,
        n_empty: usize,
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

    /// Block-stencil format (`ferrocuda::sparse::Bdia`), one thread per stored scalar row
    /// `i = s b + r`: diagonal `d`'s block column is `row_index[s] + offsets[d]` (skipped
    /// outside `0..n_block_cols`), entry `(r, c)` at `(d b + c) n_pad + i`, `n_pad =
    /// n_stored_pad b`. Threads `n_pad..` write the rows of the block rows in `empty_rows`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bdia<A: MatrixScalar<V>, V: Scalar, const B: usize>(
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
}

/// Instantiates the BCSR SpMV entry points of one (matrix scalar, vector scalar) pair.
#[cfg(target_arch = "nvptx64")]
macro_rules! spmv_entries {
    ($module:ident, $a:ty, $v:ty, $sfx:literal) => {
        mod $module {
            use super::kernels;
            #[allow(unused_imports)]
            use num_complex::Complex;

            macro_rules! bcsr_entry {
                ($name:literal, $b:literal, $cm:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn entry(
                        n_block_rows: usize,
                        b: usize,
                        alpha: $v,
                        row_ptr: *const usize,
                        col_idx: *const u32,
                        values: *const $a,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        unsafe {
                            kernels::bcsr::<$a, $v, $b, $cm>(
                                n_block_rows,
                                b,
                                alpha,
                                row_ptr,
                                col_idx,
                                values,
                                x,
                                beta,
                                y,
                            )
                        }
                    }
                };
            }
            mod bcsr5_rm {
                use super::*;
                bcsr_entry!("spmv_bcsr5_rm_", 5, false);
            }
            mod bcsr5_cm {
                use super::*;
                bcsr_entry!("spmv_bcsr5_cm_", 5, true);
            }
            mod bcsr_rm {
                use super::*;
                bcsr_entry!("spmv_bcsr_rm_", 0, false);
            }
            mod bcsr_cm {
                use super::*;
                bcsr_entry!("spmv_bcsr_cm_", 0, true);
            }
            macro_rules! bell_entry {
                ($name:literal, $b:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn entry(
                        n_block_rows: usize,
                        n_block_rows_pad: usize,
                        b: usize,
                        alpha: $v,
                        row_len: *const u32,
                        block_col: *const u32,
                        values: *const $a,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        unsafe {
                            super::super::bell_kernels::bell::<$a, $v, $b>(
                                n_block_rows,
                                n_block_rows_pad,
                                b,
                                alpha,
                                row_len,
                                block_col,
                                values,
                                x,
                                beta,
                                y,
                            )
                        }
                    }
                };
            }
            mod bell5 {
                use super::*;
                bell_entry!("spmv_bell5_", 5);
            }
            mod bell {
                use super::*;
                bell_entry!("spmv_bell_", 0);
            }
            macro_rules! sbell_entry {
                ($name:literal, $b:literal) => {
                    /// `b` is the block size (`1..=SBELL_MAX_B`); `sbell5_*` ignores it.
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn entry(
                        n_stored: usize,
                        n_stored_pad: usize,
                        n_empty: usize,
                        b: usize,
                        alpha: $v,
                        row_index: *const u32,
                        empty_rows: *const u32,
                        row_len: *const u32,
                        masks: *const u64,
                        slice_col_ptr: *const usize,
                        slice_val_ptr: *const usize,
                        block_col: *const u32,
                        values: *const $a,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        const N: usize = if $b > 0 { $b } else { crate::spmv::SBELL_MAX_B };
                        let b = if $b > 0 { $b } else { b.min(N) };
                        unsafe {
                            super::super::sbell_kernels::sbell::<$a, $v, N>(
                                b,
                                n_stored,
                                n_stored_pad,
                                n_empty,
                                alpha,
                                row_index,
                                empty_rows,
                                row_len,
                                masks,
                                slice_col_ptr,
                                slice_val_ptr,
                                block_col,
                                values,
                                x,
                                beta,
                                y,
                            )
                        }
                    }
                };
            }
            mod sbell5 {
                use super::*;
                sbell_entry!("spmv_sbell5_", 5);
            }
            mod sbell {
                use super::*;
                sbell_entry!("spmv_sbell_", 0);
            }
            macro_rules! bdia_entry {
                ($name:literal, $b:literal) => {
                    #[unsafe(export_name = concat!($name, $sfx))]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn entry(
                        n_stored: usize,
                        n_stored_pad: usize,
                        n_empty: usize,
                        b: usize,
                        n_block_cols: usize,
                        n_diagonals: usize,
                        alpha: $v,
                        offsets: *const i64,
                        row_index: *const u32,
                        empty_rows: *const u32,
                        values: *const $a,
                        x: *const $v,
                        beta: $v,
                        y: *mut $v,
                    ) {
                        unsafe {
                            super::super::sbell_kernels::bdia::<$a, $v, $b>(
                                n_stored,
                                n_stored_pad,
                                n_empty,
                                b,
                                n_block_cols,
                                n_diagonals,
                                alpha,
                                offsets,
                                row_index,
                                empty_rows,
                                values,
                                x,
                                beta,
                                y,
                            )
                        }
                    }
                };
            }
            mod bdia5 {
                use super::*;
                bdia_entry!("spmv_bdia5_", 5);
            }
            mod bdia {
                use super::*;
                bdia_entry!("spmv_bdia_", 0);
            }
            #[unsafe(export_name = concat!("spmv_ell_", $sfx))]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn ell(
                n_rows: usize,
                n_rows_pad: usize,
                alpha: $v,
                row_len: *const u32,
                col_idx: *const u32,
                values: *const $a,
                x: *const $v,
                beta: $v,
                y: *mut $v,
            ) {
                unsafe {
                    super::ell_kernels::ell::<$a, $v>(
                        n_rows, n_rows_pad, alpha, row_len, col_idx, values, x, beta, y,
                    )
                }
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_f32, f32, f32, "f32");
#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_f64, f64, f64, "f64");
#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_c32, Complex<f32>, Complex<f32>, "c32");
#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_c64, Complex<f64>, Complex<f64>, "c64");
#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_f32_c32, f32, Complex<f32>, "f32_c32");
#[cfg(target_arch = "nvptx64")]
spmv_entries!(spmv_f64_c64, f64, Complex<f64>, "f64_c64");
