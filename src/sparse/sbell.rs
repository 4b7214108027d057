//! Sliced masked BELL ("SBELL"): ferrocuda's own format for block-stencil matrices. It
//! stores neither the empty (ghost) block rows, nor the structural zeros inside blocks,
//! nor any per-entry index.
//!
//! # Why
//! BELL (the thesis's best format) moves 25 values per 5x5 block although TRACE-like
//! blocks have fixed zeros (4 of 25 in every off-diagonal block of
//! [`super::generate`]), interleaves ghost rows with real ones (their padding shares the
//! sectors real rows load), and one index per scalar row and slot. SBELL keeps:
//! * **stored block rows only**, with the block-row map of thesis §6.3.1 (`row_index`);
//! * per **slot** `k` one **mask** (`u64`, bit `r b + c`): the union over all rows of the
//!   entries that are nonzero in the block in slot `k`. Slot 0 holds the diagonal block of
//!   each row that has one, the other blocks follow in column order, so on a stencil every
//!   slot `k >= 1` sees the same off-diagonal zero pattern and the masks drop it;
//! * **slices** of [`SLICE`] = 32 consecutive stored block rows (one GPU warp, one block
//!   row per lane), each padded only to its own longest row.
//!
//! # Layout
//! Stored block row `s` (logical block row `row_index[s]`) is lane `l = s % 32` of slice
//! `sl = s / 32`; the slice has `w_sl = (slice_col_ptr[sl+1] - slice_col_ptr[sl]) / 32`
//! slots. Slot `k < row_len[s]` of row `s` is the block at block column
//!
//! `block_col[slice_col_ptr[sl] + k 32 + l]`,
//!
//! and its `e`-th stored entry (the `e`-th set bit of `masks[k]` in row-major order) is
//!
//! `values[slice_val_ptr[sl] + (E_k + e) 32 + l]`, with `E_k = sum_{j<k} popcount(masks[j])`.
//!
//! So at every step the 32 lanes of a warp read 32 consecutive values. Slots `k >=
//! row_len[s]` and rows `s >= row_index.len()` are padding (zeros, block column 0).
//!
//! # Limits
//! `b <= 8` (a mask is one `u64`). A mask is a union: an entry that is zero in one block
//! but nonzero in another block of the same slot is stored (as zero) for both.
//!
//! The product sums row `r` of each block over the set bits in column order, blocks in
//! slot order (diagonal first): not BCSR's order, so results differ from BCSR in the last
//! bits; GPU and CPU of this format agree bit for bit.

use rayon::prelude::*;

use super::pattern::{accept, block_shape_accessors, check_row_list};
use super::{
    Bcsr, BlockLayout, BlockShape, Csr, Element, Index, Rejected, SparseError, check_host_bytes,
    check_len, checked_add, checked_mul, par_try_vec, split_at_ends, storage_bytes,
};

pub use ferrocuda_kernels::spmv::{SBELL_MAX_B as MAX_B, SBELL_SLICE as SLICE};

/// The raw arrays of an [`Sbell`] matrix (layout in the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct SbellParts<T> {
    /// Block size, `1..=8`.
    pub b: usize,
    /// Logical block rows (the product has `n_block_rows b` rows).
    pub n_block_rows: usize,
    /// Block columns.
    pub n_block_cols: usize,
    /// Logical block row of each stored block row, strictly increasing.
    pub row_index: Vec<Index>,
    /// Per slot, the stored entries of its blocks (bit `r b + c`); at least as many slots
    /// as the widest slice.
    pub masks: Vec<u64>,
    /// Real slots of each stored row; `n_slices * 32` entries (padding rows: 0).
    pub row_len: Vec<Index>,
    /// `n_slices + 1` offsets into `block_col` (multiples of 32).
    pub slice_col_ptr: Vec<usize>,
    /// `n_slices + 1` offsets into `values`.
    pub slice_val_ptr: Vec<usize>,
    /// Block column of each slot, slice-major (see the module docs).
    pub block_col: Vec<Index>,
    /// The masked entries, slice-major (see the module docs).
    pub values: Vec<T>,
}

/// A matrix in sliced masked BELL form (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct Sbell<T> {
    p: SbellParts<T>,
}

impl<T: Element> Sbell<T> {
    /// Checks and wraps the arrays. Errors (arrays handed back): `b` outside `1..=8`, a
    /// mask bit outside the block, `row_index` not increasing or out of range, slice
    /// offsets or lengths inconsistent, a row longer than its slice or the masks, a block
    /// column out of range.
    pub fn from_parts(parts: SbellParts<T>) -> Result<Self, Rejected<SbellParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    block_shape_accessors!(p);
    /// Stored (non-empty) block rows.
    pub fn n_stored(&self) -> usize {
        self.p.row_index.len()
    }
    /// Slices of 32 stored block rows.
    pub fn n_slices(&self) -> usize {
        self.p.slice_col_ptr.len() - 1
    }
    /// Logical block row of each stored block row.
    pub fn row_index(&self) -> &[Index] {
        &self.p.row_index
    }
    /// Per-slot masks.
    pub fn masks(&self) -> &[u64] {
        &self.p.masks
    }
    /// Real slots per stored row (padded to whole slices).
    pub fn row_len(&self) -> &[Index] {
        &self.p.row_len
    }
    /// Slice offsets into [`Sbell::block_col`].
    pub fn slice_col_ptr(&self) -> &[usize] {
        &self.p.slice_col_ptr
    }
    /// Slice offsets into [`Sbell::values`].
    pub fn slice_val_ptr(&self) -> &[usize] {
        &self.p.slice_val_ptr
    }
    /// Block columns, slice-major.
    pub fn block_col(&self) -> &[Index] {
        &self.p.block_col
    }
    /// Stored entries, slice-major.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// The arrays.
    pub fn parts(&self) -> &SbellParts<T> {
        &self.p
    }
    /// The arrays, by value.
    pub fn into_parts(self) -> SbellParts<T> {
        self.p
    }

    /// Logical block rows that are not stored (each gets `beta y` in a product), in order.
    /// Errors: a list larger than the host can hold ([`super::ghost_block_rows`]).
    pub fn empty_block_rows(&self) -> Result<Vec<Index>, SparseError> {
        super::ghost_block_rows(&self.p.row_index, self.p.n_block_rows)
    }

    /// Values a product reads: the masked entries of the real slots (padding slots and
    /// rows are not read).
    pub fn entries_read(&self) -> usize {
        let per_slot: Vec<usize> = self
            .p
            .masks
            .iter()
            .map(|m| m.count_ones() as usize)
            .collect();
        let mut prefix = vec![0usize; per_slot.len() + 1];
        for (k, &n) in per_slot.iter().enumerate() {
            prefix[k + 1] = prefix[k] + n;
        }
        (0..self.n_stored())
            .map(|s| prefix[self.p.row_len[s] as usize])
            .sum()
    }

    /// Real slots (blocks) of all stored rows.
    pub fn blocks(&self) -> usize {
        self.p.row_len.iter().map(|&l| l as usize).sum()
    }

    /// Converts a BCSR matrix. Errors: `b > 8` ([`SparseError::InvalidArgument`]).
    pub fn from_bcsr(a: &Bcsr<T>) -> Result<Self, SparseError> {
        let op = "Sbell::from_bcsr";
        let b = a.b();
        if b > MAX_B {
            return Err(SparseError::InvalidArgument {
                op,
                reason: format!(
                    "block size {b} exceeds {MAX_B} (a block's mask is one 64-bit word)"
                ),
            });
        }
        let layout = a.layout();
        let bit = |r: usize, c: usize| 1u64 << (r * b + c);
        // Stored rows and, per row, its blocks in slot order (diagonal first).
        let mut row_index: Vec<Index> = Vec::new();
        let mut order: Vec<usize> = Vec::with_capacity(a.nnz_blocks());
        let mut row_start = vec![0usize];
        for bi in 0..a.n_block_rows() {
            let blocks = a.row_ptr()[bi]..a.row_ptr()[bi + 1];
            if blocks.is_empty() {
                continue;
            }
            // bi < n_block_rows <= Index::MAX (validated by Bcsr).
            row_index.push(bi as Index);
            let diag = blocks.clone().find(|&k| a.col_idx()[k] as usize == bi);
            order.extend(diag);
            order.extend(blocks.filter(|&k| Some(k) != diag));
            row_start.push(order.len());
        }
        let n_stored = row_index.len();
        let len = |s: usize| row_start[s + 1] - row_start[s];
        let width = (0..n_stored).map(len).max().unwrap_or(0);
        // Slot k's mask: every entry that is non-zero in the k-th block of some row (on all
        // cores, each fold over a range of rows, then or-ed together).
        let masks = (0..n_stored)
            .into_par_iter()
            .with_min_len(1024)
            .fold(
                || vec![0u64; width],
                |mut masks, s| {
                    for (k, &blk) in order[row_start[s]..row_start[s + 1]].iter().enumerate() {
                        let v = a.block(blk);
                        for r in 0..b {
                            for c in 0..b {
                                if v[layout.offset(b, r, c)] != T::ZERO {
                                    masks[k] |= bit(r, c);
                                }
                            }
                        }
                    }
                    masks
                },
            )
            .reduce(
                || vec![0u64; width],
                |mut x, y| {
                    x.iter_mut().zip(&y).for_each(|(p, q)| *p |= q);
                    x
                },
            );
        let mut prefix = vec![0usize; width + 1];
        for k in 0..width {
            prefix[k + 1] = prefix[k] + masks[k].count_ones() as usize;
        }
        let n_slices = n_stored.div_ceil(SLICE);
        let mut slice_col_ptr = vec![0usize; n_slices + 1];
        let mut slice_val_ptr = vec![0usize; n_slices + 1];
        for sl in 0..n_slices {
            let w = (sl * SLICE..((sl + 1) * SLICE).min(n_stored))
                .map(len)
                .max()
                .unwrap_or(0);
            slice_col_ptr[sl + 1] =
                checked_add(op, slice_col_ptr[sl], checked_mul(op, "slots", w, SLICE)?)?;
            slice_val_ptr[sl + 1] = checked_add(
                op,
                slice_val_ptr[sl],
                checked_mul(op, "entries", prefix[w], SLICE)?,
            )?;
        }
        // Each slice padded to its longest row: checked before allocating.
        let (n_slots, n_entries) = (slice_col_ptr[n_slices], slice_val_ptr[n_slices]);
        let what = format!(
            "{op}: {n_stored} stored block rows in {n_slices} slices of {SLICE}, {n_slots} block slots and {n_entries} {} entries (block size {b})",
            T::SUFFIX
        );
        check_host_bytes(
            &what,
            storage_bytes(&[
                ((n_slices * SLICE) as u128, size_of::<Index>()),
                (n_slots as u128, size_of::<Index>()),
                (n_entries as u128, size_of::<T>()),
            ]),
        )?;
        let mut row_len = par_try_vec(&what, n_slices * SLICE, 0 as Index)?;
        let mut block_col = par_try_vec(&what, n_slots, 0 as Index)?;
        let mut values = par_try_vec(&what, n_entries, T::ZERO)?;
        // Slice by slice on all cores: each writes its own parts of the three arrays.
        let col_parts = split_at_ends(&mut block_col, slice_col_ptr[1..].iter().copied());
        let val_parts = split_at_ends(&mut values, slice_val_ptr[1..].iter().copied());
        row_len
            .par_chunks_mut(SLICE)
            .zip(col_parts)
            .zip(val_parts)
            .enumerate()
            .for_each(|(sl, ((lens, cols), vals))| {
                for (lane, s) in (sl * SLICE..((sl + 1) * SLICE).min(n_stored)).enumerate() {
                    // len <= nnz_blocks of one row <= n_block_cols <= Index::MAX.
                    lens[lane] = len(s) as Index;
                    for (k, &blk) in order[row_start[s]..row_start[s + 1]].iter().enumerate() {
                        cols[k * SLICE + lane] = a.col_idx()[blk];
                        let v = a.block(blk);
                        let mut e = prefix[k];
                        for r in 0..b {
                            for c in 0..b {
                                if masks[k] & bit(r, c) != 0 {
                                    vals[e * SLICE + lane] = v[layout.offset(b, r, c)];
                                    e += 1;
                                }
                            }
                        }
                    }
                }
            });
        Ok(Self {
            p: SbellParts {
                b,
                n_block_rows: a.n_block_rows(),
                n_block_cols: a.n_block_cols(),
                row_index,
                masks,
                row_len,
                slice_col_ptr,
                slice_val_ptr,
                block_col,
                values,
            },
        })
    }

    /// Back to BCSR: every real slot becomes a block (entries outside its mask are zero),
    /// blocks sorted by column. The inverse of [`Sbell::from_bcsr`] for a matrix whose
    /// blocks hold no entry outside the masks (always true of a converted one).
    pub fn to_bcsr(&self, layout: BlockLayout) -> Bcsr<T> {
        let b = self.p.b;
        let mut prefix = vec![0usize; self.p.masks.len() + 1];
        for (k, m) in self.p.masks.iter().enumerate() {
            prefix[k + 1] = prefix[k] + m.count_ones() as usize;
        }
        let mut row_ptr = vec![0usize; self.p.n_block_rows + 1];
        let mut col_idx = Vec::with_capacity(self.blocks());
        let mut values = Vec::with_capacity(self.blocks() * b * b);
        let mut stored = self.p.row_index.iter().enumerate().peekable();
        let mut blocks: Vec<(Index, Vec<T>)> = Vec::new();
        for bi in 0..self.p.n_block_rows {
            if let Some((s, _)) = stored.next_if(|(_, r)| **r as usize == bi) {
                let (sl, lane) = (s / SLICE, s % SLICE);
                blocks.clear();
                let slots = self.p.row_len[s] as usize;
                for (k, (&mask, &first)) in self.p.masks.iter().zip(&prefix).take(slots).enumerate()
                {
                    let col = self.p.block_col[self.p.slice_col_ptr[sl] + k * SLICE + lane];
                    let mut v = vec![T::ZERO; b * b];
                    let mut e = first;
                    for r in 0..b {
                        for c in 0..b {
                            if mask & (1u64 << (r * b + c)) != 0 {
                                v[layout.offset(b, r, c)] =
                                    self.p.values[self.p.slice_val_ptr[sl] + e * SLICE + lane];
                                e += 1;
                            }
                        }
                    }
                    blocks.push((col, v));
                }
                blocks.sort_by_key(|(c, _)| *c);
                for (c, v) in &blocks {
                    col_idx.push(*c);
                    values.extend_from_slice(v);
                }
            }
            row_ptr[bi + 1] = col_idx.len();
        }
        Bcsr::from_blocks_trusted(self.shape(), layout, row_ptr, col_idx, values)
    }

    /// The scalar CSR matrix (see [`Sbell::to_bcsr`]).
    pub fn to_csr(&self) -> Csr<T> {
        self.to_bcsr(BlockLayout::RowMajor).to_csr()
    }
}

fn validate<T>(p: &SbellParts<T>) -> Result<(), SparseError> {
    let op = "Sbell::from_parts";
    let bad = |reason: String| SparseError::InvalidArgument { op, reason };
    BlockShape::new(p.b, p.n_block_rows, p.n_block_cols).validate(op, Some(MAX_B))?;
    let outside = if p.b * p.b == 64 {
        0
    } else {
        !((1u64 << (p.b * p.b)) - 1)
    };
    if let Some(k) = p.masks.iter().position(|m| m & outside != 0) {
        return Err(bad(format!(
            "mask of slot {k} ({:#x}) has bits outside a {b}x{b} block",
            p.masks[k],
            b = p.b
        )));
    }
    check_row_list(op, "row_index", &p.row_index, p.n_block_rows)?;
    let n_slices = p.row_index.len().div_ceil(SLICE);
    check_len(
        op,
        "slice_col_ptr (slices + 1)",
        n_slices + 1,
        p.slice_col_ptr.len(),
    )?;
    check_len(
        op,
        "slice_val_ptr (slices + 1)",
        n_slices + 1,
        p.slice_val_ptr.len(),
    )?;
    check_len(
        op,
        "row_len (32 per slice)",
        n_slices * SLICE,
        p.row_len.len(),
    )?;
    let mut prefix = vec![0usize; p.masks.len() + 1];
    for (k, m) in p.masks.iter().enumerate() {
        prefix[k + 1] = prefix[k] + m.count_ones() as usize;
    }
    if p.slice_col_ptr[0] != 0 || p.slice_val_ptr[0] != 0 {
        return Err(bad("slice offsets must start at 0".into()));
    }
    for sl in 0..n_slices {
        let cols = p.slice_col_ptr[sl + 1].checked_sub(p.slice_col_ptr[sl]);
        let w = match cols {
            Some(c) if c % SLICE == 0 && c / SLICE <= p.masks.len() => c / SLICE,
            _ => {
                return Err(bad(format!(
                    "slice {sl}: block-column span {:?} is not a multiple of {SLICE} within the {} masked slots",
                    cols,
                    p.masks.len()
                )));
            }
        };
        let want = prefix[w] * SLICE;
        if p.slice_val_ptr[sl + 1].checked_sub(p.slice_val_ptr[sl]) != Some(want) {
            return Err(bad(format!(
                "slice {sl}: value span must be {want} (32 x the entries of its {w} slots)"
            )));
        }
        for s in sl * SLICE..(sl + 1) * SLICE {
            let l = p.row_len[s] as usize;
            if l > w || (s >= p.row_index.len() && l != 0) {
                return Err(SparseError::InvalidStructure {
                    op,
                    what: "row_len",
                    position: s,
                    reason: format!("{l} slots in a slice of width {w} (padding rows: 0)"),
                });
            }
        }
    }
    check_len(
        op,
        "block_col",
        p.slice_col_ptr[n_slices],
        p.block_col.len(),
    )?;
    check_len(op, "values", p.slice_val_ptr[n_slices], p.values.len())?;
    if let Some(k) = p
        .block_col
        .iter()
        .position(|&c| c as usize >= p.n_block_cols)
    {
        return Err(SparseError::IndexOutOfRange {
            op,
            what: "block_col",
            position: k,
            value: p.block_col[k] as usize,
            bound: p.n_block_cols,
        });
    }
    Ok(())
}
