//! SpMV `y <- alpha * (A x) + beta * y` on all CPU cores (rayon over rows / block rows).
//!
//! Argument order as in BLAS: `spmv_<format>(alpha, a, x, beta, y)`. The matrix scalar `A`
//! and the vector scalar `V` may differ where `A: MatrixScalar<V>`: a real matrix times a
//! complex vector works for every format, and so does an `f32` (or `Complex<f32>`) matrix
//! times `f64` (or `Complex<f64>`) vectors, mixed-precision storage ([`super::narrow`]):
//! the value is widened exactly, so the product equals that of the widened `f64` matrix
//! bit for bit. Where `beta` is exactly zero, `y` is not read
//! (a NaN there does not leak into the result).
//!
//! **Non-finite values, the same in every format**: a NaN or infinity in the matrix
//! propagates as IEEE arithmetic says; one in `x` reaches `y_i` only through a nonzero
//! `a_ij`. Entries whose value is exactly zero add nothing, whether stored or padding
//! (the zeros inside BCSR/BELL/BDIA blocks, ELL/BELL padding slots, zeros inside SBELL
//! masks), so `A x` is the product of the matrix with its explicit zeros dropped
//! ([`ferrocuda_kernels::sparse::spmv_term`], which gives the reason).
//!
//! Each row's sum runs over the row's stored entries in storage order, one fused
//! multiply-add each (the per-block math of `ferrocuda_kernels::sparse`, shared with the
//! GPU path), so the result does not depend on the thread count: same input, same bits.
//! BCSR with `b = 5` uses the fixed-size block kernels; both block layouts sum in the same
//! order and give the same bits. CSR, COO (one entry per position), ELL, BCSR, BELL and
//! BDIA all sum a row's terms in column order and give the same bits; SBELL sums the
//! diagonal block first; [`spmv_csr_lanes`] (the GPU CSR kernel's order) sums a row in
//! interleaved partial sums.
//!
//! Errors: `x.len()` or `y.len()` does not match the matrix ([`SparseError::DimensionMismatch`]),
//! or an invalid row map ([`spmv_bcsr_mapped`]). `y` is unchanged on error.

use rayon::prelude::*;

use super::pattern::check_row_list;
use super::{
    Bcsr, Bdia, Bell, BlockLayout, Coo, Csr, Element, Ell, Index, MatrixScalar, Sbell, SparseError,
    check_len,
};
use ferrocuda_kernels::sparse as k;
use ferrocuda_kernels::spmv::{CSR_MAX_LANES, SBELL_MAX_B, SBELL_SLICE};

/// Scalar rows per rayon task.
const ROWS_PER_TASK: usize = 512;
/// Block rows per rayon task.
const BLOCK_ROWS_PER_TASK: usize = 128;

fn check_xy(
    op: &'static str,
    n_rows: usize,
    n_cols: usize,
    x: usize,
    y: usize,
) -> Result<(), SparseError> {
    check_len(op, "x (one per matrix column)", n_cols, x)?;
    check_len(op, "y (one per matrix row)", n_rows, y)
}

crate::cpu_dispatch::fma_kernel! {
fn csr_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, row_ptr: &[usize], col_idx: &[Index], values: &[A], x: &[V], beta: V, y: &mut [V]) {
    for (i, yi) in y.iter_mut().enumerate() {
        let mut acc = V::ZERO;
        for kk in row_ptr[i]..row_ptr[i + 1] {
            acc = k::spmv_term(values[kk], x[col_idx[kk] as usize], acc);
        }
        *yi = k::finish(alpha, acc, beta, *yi);
    }
}
}

/// `y <- alpha A x + beta y` for CSR.
pub fn spmv_csr<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Csr<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_csr", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    y.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(t, yc)| {
            let r0 = t * ROWS_PER_TASK;
            let ptr = &a.row_ptr()[r0..r0 + yc.len() + 1];
            csr_rows(alpha, ptr, a.col_idx(), a.values(), x, beta, yc);
        });
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn csr_lane_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, row_ptr: &[usize], col_idx: &[Index], values: &[A], lanes: usize, x: &[V], beta: V, y: &mut [V]) {
    let mut partials = [V::ZERO; CSR_MAX_LANES];
    for (i, yi) in y.iter_mut().enumerate() {
        let (start, end) = (row_ptr[i], row_ptr[i + 1]);
        for (lane, p) in partials[..lanes].iter_mut().enumerate() {
            *p = k::csr_lane_sum(start, end, lane, lanes, |kk| (values[kk], x[col_idx[kk] as usize]));
        }
        *yi = k::finish(alpha, k::lanes_sum(&mut partials[..lanes]), beta, *yi);
    }
}
}

/// `y <- alpha A x + beta y` for CSR, each row summed as `lanes` interleaved partial sums
/// added in a fixed tree ([`ferrocuda_kernels::sparse::csr_lane_sum`],
/// [`ferrocuda_kernels::sparse::lanes_sum`]): the order of the GPU's CSR kernel with that
/// many lanes per row (`sparse::gpu::DeviceCsr::lanes`), so both give the same bits. With
/// one lane this is [`spmv_csr`]. Errors: as [`spmv_csr`], and `lanes` not a power of two
/// from 1 to 32 ([`SparseError::InvalidArgument`]).
pub fn spmv_csr_lanes<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Csr<A>,
    lanes: usize,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    let op = "spmv_csr_lanes";
    if !(lanes.is_power_of_two() && lanes <= CSR_MAX_LANES) {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!("lanes = {lanes} (must be a power of two from 1 to {CSR_MAX_LANES})"),
        });
    }
    check_xy(op, a.n_rows(), a.n_cols(), x.len(), y.len())?;
    y.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(t, yc)| {
            let r0 = t * ROWS_PER_TASK;
            let ptr = &a.row_ptr()[r0..r0 + yc.len() + 1];
            csr_lane_rows(alpha, ptr, a.col_idx(), a.values(), lanes, x, beta, yc);
        });
    Ok(())
}

/// `y <- alpha A x + beta y` for COO (duplicates summed): the products are summed per row
/// in triplet order (serially), then finished on all cores.
pub fn spmv_coo<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Coo<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_coo", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    let mut acc = vec![V::ZERO; a.n_rows()];
    for ((&r, &c), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        acc[r as usize] = k::spmv_term(v, x[c as usize], acc[r as usize]);
    }
    y.par_iter_mut()
        .zip(acc.par_iter())
        .for_each(|(yi, &s)| *yi = k::finish(alpha, s, beta, *yi));
    Ok(())
}

/// One block row of BCSR: `acc (b values) += sum_k block_k x_{col_k}`.
#[inline(always)]
fn bcsr_block_row<A: Element + MatrixScalar<V>, V: Element>(
    a: &Bcsr<A>,
    bi: usize,
    x: &[V],
    acc: &mut [V],
) {
    let b = a.b();
    let blocks = a.row_ptr()[bi]..a.row_ptr()[bi + 1];
    if b == 5 {
        let vals = a.values().as_chunks::<25>().0;
        let xs = x.as_chunks::<5>().0;
        let mut acc5 = [V::ZERO; 5];
        match a.layout() {
            BlockLayout::RowMajor => {
                for kb in blocks {
                    k::block5_spmv(&mut acc5, &vals[kb], &xs[a.col_idx()[kb] as usize]);
                }
            }
            BlockLayout::ColMajor => {
                for kb in blocks {
                    k::block5_spmv_col_major(&mut acc5, &vals[kb], &xs[a.col_idx()[kb] as usize]);
                }
            }
        }
        acc.copy_from_slice(&acc5);
    } else {
        acc.fill(V::ZERO);
        for kb in blocks {
            let bj = a.col_idx()[kb] as usize;
            let xb = &x[bj * b..bj * b + b];
            match a.layout() {
                BlockLayout::RowMajor => k::block_spmv(acc, a.block(kb), xb),
                BlockLayout::ColMajor => k::block_spmv_col_major(acc, a.block(kb), xb),
            }
        }
    }
}

crate::cpu_dispatch::fma_kernel! {
fn bcsr_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Bcsr<A>, first: usize, x: &[V], beta: V, y: &mut [V]) {
    let b = a.b();
    let mut acc = vec![V::ZERO; b];
    for (t, yb) in y.chunks_exact_mut(b).enumerate() {
        bcsr_block_row(a, first + t, x, &mut acc);
        for (yi, &s) in yb.iter_mut().zip(&acc) {
            *yi = k::finish(alpha, s, beta, *yi);
        }
    }
}
}

/// `y <- alpha A x + beta y` for BCSR (either block layout; `b = 5` is the fast path).
pub fn spmv_bcsr<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Bcsr<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_bcsr", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    let b = a.b();
    y.par_chunks_mut(BLOCK_ROWS_PER_TASK * b)
        .enumerate()
        .for_each(|(t, yc)| bcsr_rows(alpha, a, t * BLOCK_ROWS_PER_TASK, x, beta, yc));
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn bcsr_mapped_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Bcsr<A>, map: &[Index], first_out: usize, x: &[V], beta: V, y: &mut [V]) {
    let b = a.b();
    let end_out = first_out + y.len() / b;
    let s0 = map.partition_point(|&m| (m as usize) < first_out);
    let s1 = map.partition_point(|&m| (m as usize) < end_out);
    let mut acc = vec![V::ZERO; b];
    for (s, &m) in map.iter().enumerate().take(s1).skip(s0) {
        bcsr_block_row(a, s, x, &mut acc);
        let o = (m as usize - first_out) * b;
        for (yi, &v) in y[o..o + b].iter_mut().zip(&acc) {
            *yi = k::finish(alpha, v, beta, *yi);
        }
    }
}
}

/// SpMV of a ghost-compacted BCSR ([`Bcsr::compact_empty_block_rows`]): block row `i` of
/// `a` updates `y[map[i] b .. map[i] b + b] <- alpha (A x)_i + beta y[..]`; rows of `y` not
/// in `map` are **not written**. `y.len()` is the uncompacted row count (a multiple of
/// `b`). Errors: `x` or `y` of the wrong length, `map.len() != a.n_block_rows()`, `map` not
/// strictly increasing or an entry beyond `y`.
pub fn spmv_bcsr_mapped<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Bcsr<A>,
    map: &[Index],
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    let op = "spmv_bcsr_mapped";
    let b = a.b();
    check_len(op, "x (one per matrix column)", a.n_cols(), x.len())?;
    check_len(op, "map (one per block row)", a.n_block_rows(), map.len())?;
    if !y.len().is_multiple_of(b) {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!(
                "y has length {}, not a multiple of the block size {b}",
                y.len()
            ),
        });
    }
    check_row_list(op, "map", map, y.len() / b)?;
    y.par_chunks_mut(BLOCK_ROWS_PER_TASK * b)
        .enumerate()
        .for_each(|(t, yc)| bcsr_mapped_rows(alpha, a, map, t * BLOCK_ROWS_PER_TASK, x, beta, yc));
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn ell_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Ell<A>, first: usize, x: &[V], beta: V, y: &mut [V]) {
    let np = a.n_rows_pad();
    let len = &a.row_len()[first..first + y.len()];
    let width = len.iter().map(|&l| l as usize).max().unwrap_or(0);
    let mut acc = vec![V::ZERO; y.len()];
    // Slot-major over the chunk: contiguous reads, and each row still sums in slot order.
    for kk in 0..width {
        let base = kk * np + first;
        let cols = &a.col_idx()[base..base + y.len()];
        let vals = &a.values()[base..base + y.len()];
        for (((s, &c), &v), &l) in acc.iter_mut().zip(cols).zip(vals).zip(len) {
            if kk < l as usize {
                *s = k::spmv_term(v, x[c as usize], *s);
            }
        }
    }
    for (yi, &s) in y.iter_mut().zip(&acc) {
        *yi = k::finish(alpha, s, beta, *yi);
    }
}
}

/// `y <- alpha A x + beta y` for ELL (padding slots are skipped, so a NaN or infinity in
/// `x` does not reach rows through padding).
pub fn spmv_ell<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Ell<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_ell", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    y.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(t, yc)| ell_rows(alpha, a, t * ROWS_PER_TASK, x, beta, yc));
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn bell_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Bell<A>, first: usize, x: &[V], beta: V, y: &mut [V]) {
    let (b, nbp) = (a.b(), a.n_block_rows_pad());
    let mut acc = vec![V::ZERO; b];
    for (t, yb) in y.chunks_exact_mut(b).enumerate() {
        let bi = first + t;
        acc.fill(V::ZERO);
        for kk in 0..a.row_len()[bi] as usize {
            let bj = a.block_col()[kk * nbp + bi] as usize;
            for c in 0..b {
                let xv = x[bj * b + c];
                let base = a.value_index(kk, bi, 0, c);
                for (s, &v) in acc.iter_mut().zip(&a.values()[base..base + b]) {
                    *s = k::spmv_term(v, xv, *s);
                }
            }
        }
        for (yi, &s) in yb.iter_mut().zip(&acc) {
            *yi = k::finish(alpha, s, beta, *yi);
        }
    }
}
}

/// `y <- alpha A x + beta y` for blocked ELL (padding blocks skipped). Same bits as
/// [`spmv_bcsr`] on the matrix it came from.
pub fn spmv_bell<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Bell<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_bell", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    let b = a.b();
    y.par_chunks_mut(BLOCK_ROWS_PER_TASK * b)
        .enumerate()
        .for_each(|(t, yc)| bell_rows(alpha, a, t * BLOCK_ROWS_PER_TASK, x, beta, yc));
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn bdia_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Bdia<A>, first: usize, x: &[V], beta: V, y: &mut [V]) {
    let b = a.b();
    let rows = a.row_index();
    let mut s = rows.partition_point(|&r| (r as usize) < first);
    let mut acc = vec![V::ZERO; b];
    for (t, yb) in y.chunks_exact_mut(b).enumerate() {
        let bi = first + t;
        acc.fill(V::ZERO);
        if rows.get(s).is_some_and(|&r| r as usize == bi) {
            for d in 0..a.offsets().len() {
                let Some(bj) = a.block_col(bi, d) else { continue };
                for c in 0..b {
                    let xv = x[bj * b + c];
                    let base = a.value_index(d, s, 0, c);
                    for (sv, &v) in acc.iter_mut().zip(&a.values()[base..base + b]) {
                        *sv = k::spmv_term(v, xv, *sv);
                    }
                }
            }
            s += 1;
        }
        for (yi, &v) in yb.iter_mut().zip(&acc) {
            *yi = k::finish(alpha, v, beta, *yi);
        }
    }
}
}

/// `y <- alpha A x + beta y` for the block-stencil format. Block rows not stored (dropped
/// empty rows) are rows of zeros: they get `beta y` (0 where `beta` is 0). Absent blocks
/// on a diagonal are stored as zeros, which add nothing (see the [module docs](self)).
pub fn spmv_bdia<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Bdia<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_bdia", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    let b = a.b();
    y.par_chunks_mut(BLOCK_ROWS_PER_TASK * b)
        .enumerate()
        .for_each(|(t, yc)| bdia_rows(alpha, a, t * BLOCK_ROWS_PER_TASK, x, beta, yc));
    Ok(())
}

crate::cpu_dispatch::fma_kernel! {
fn sbell_rows[A: Element + MatrixScalar<V>, V: Element](alpha: V, a: &Sbell<A>, prefix: &[usize], first: usize, x: &[V], beta: V, y: &mut [V]) {
    let b = a.b();
    let rows = a.row_index();
    let mut s = rows.partition_point(|&r| (r as usize) < first);
    let mut xb = [V::ZERO; SBELL_MAX_B];
    for (t, yb) in y.chunks_exact_mut(b).enumerate() {
        let mut acc = [V::ZERO; SBELL_MAX_B];
        if rows.get(s).is_some_and(|&r| r as usize == first + t) {
            let (sl, lane) = (s / SBELL_SLICE, s % SBELL_SLICE);
            let cols = &a.block_col()[a.slice_col_ptr()[sl] + lane..];
            let vals = &a.values()[a.slice_val_ptr()[sl] + lane..];
            for kk in 0..a.row_len()[s] as usize {
                let j = cols[kk * SBELL_SLICE] as usize * b;
                xb[..b].copy_from_slice(&x[j..j + b]);
                let base = prefix[kk];
                k::masked_block_mul_add(&mut acc, b, a.masks()[kk], |e| vals[(base + e) * SBELL_SLICE], &xb);
            }
            s += 1;
        }
        for (yi, &v) in yb.iter_mut().zip(&acc) {
            *yi = k::finish(alpha, v, beta, *yi);
        }
    }
}
}

/// `y <- alpha A x + beta y` for the sliced masked BELL format. Block rows not stored get
/// `beta y` (0 where `beta` is 0). Each row sums its blocks in slot order (diagonal first)
/// over the entries of the slot masks only (zeros inside a mask add nothing, as in every
/// format). Same bits as `sparse::gpu::spmv_sbell`.
pub fn spmv_sbell<A: Element + MatrixScalar<V>, V: Element>(
    alpha: V,
    a: &Sbell<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError> {
    check_xy("spmv_sbell", a.n_rows(), a.n_cols(), x.len(), y.len())?;
    let b = a.b();
    let mut prefix = vec![0usize; a.masks().len() + 1];
    for (kk, m) in a.masks().iter().enumerate() {
        prefix[kk + 1] = prefix[kk] + m.count_ones() as usize;
    }
    y.par_chunks_mut(BLOCK_ROWS_PER_TASK * b)
        .enumerate()
        .for_each(|(t, yc)| sbell_rows(alpha, a, &prefix, t * BLOCK_ROWS_PER_TASK, x, beta, yc));
    Ok(())
}
