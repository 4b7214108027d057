//! Blocked ELLPACK: every block row padded with zero blocks to the same number of blocks,
//! stored so that neighbouring rows' entries are adjacent.
//!
//! # Layout
//! With block size `b`, `nbr` block rows padded to `nbr_pad`, `width` block slots per block
//! row and `n_pad = nbr_pad b` stored scalar rows:
//!
//! * block column of slot `k` of block row `I`: `block_col[k * nbr_pad + I]`;
//! * entry `(r, c)` of that block: `values[(k * b + c) * n_pad + I * b + r]`.
//!
//! So for a fixed slot `k` and block column `c`, the entries of all scalar rows
//! `i = I b + r` are contiguous in `i`: one thread per scalar row (the thesis's kernel
//! *BELL*) reads coalesced, and reads one block column index per block instead of one per
//! entry. It is an ELL matrix of width `width b` whose column index is shared by the `b`
//! consecutive slots of a block. Padding blocks hold zeros and a valid block column (the
//! block row's last real one, or 0).

use super::pattern::{Slots, accept, block_shape_accessors};
use super::{
    Bcsr, BlockLayout, BlockShape, Csr, Element, Index, Rejected, SparseError, check_host_bytes,
    check_len, checked_mul, round_up, storage_bytes, try_vec, try_with_capacity,
};

/// Options of [`Bell::from_bcsr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BellOptions {
    /// The stored block-row count is rounded up to a multiple of this (>= 1).
    pub block_row_align: usize,
}

impl Default for BellOptions {
    /// `block_row_align = 32`.
    fn default() -> Self {
        Self {
            block_row_align: 32,
        }
    }
}

impl BellOptions {
    /// Sets [`BellOptions::block_row_align`].
    pub fn block_row_align(mut self, a: usize) -> Self {
        self.block_row_align = a;
        self
    }
}

/// The raw arrays of a [`Bell`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct BellParts<T> {
    /// Block size.
    pub b: usize,
    /// Block rows.
    pub n_block_rows: usize,
    /// Block columns.
    pub n_block_cols: usize,
    /// Stored block rows (`>= n_block_rows`).
    pub n_block_rows_pad: usize,
    /// Block slots per block row.
    pub width: usize,
    /// `width * n_block_rows_pad` block columns, slot `k` of block row `I` at
    /// `k * n_block_rows_pad + I`.
    pub block_col: Vec<Index>,
    /// `width * b * b * n_block_rows_pad` values, entry `(r, c)` of slot `k` of block row
    /// `I` at `(k b + c) (n_block_rows_pad b) + I b + r`.
    pub values: Vec<T>,
    /// Real blocks per block row (slots `0..row_len[I]`, block columns increasing).
    pub row_len: Vec<Index>,
}

/// A blocked ELL matrix (layout in the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct Bell<T> {
    p: BellParts<T>,
}

impl<T: Element> Bell<T> {
    /// Checks and wraps the arrays. Errors (arrays handed back): lengths, `b == 0`, a block
    /// column out of range, `row_len[I] > width`, block columns not increasing, a non-zero
    /// value in a padding block.
    pub fn from_parts(parts: BellParts<T>) -> Result<Self, Rejected<BellParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    block_shape_accessors!(p);
    /// Stored block rows.
    pub fn n_block_rows_pad(&self) -> usize {
        self.p.n_block_rows_pad
    }
    /// Block slots per block row.
    pub fn width(&self) -> usize {
        self.p.width
    }
    /// Block column indices.
    pub fn block_col(&self) -> &[Index] {
        &self.p.block_col
    }
    /// Values.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// Real blocks per block row.
    pub fn row_len(&self) -> &[Index] {
        &self.p.row_len
    }
    /// The raw arrays.
    pub fn parts(&self) -> &BellParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> BellParts<T> {
        self.p
    }

    /// Index of entry `(r, c)` of slot `k` of block row `bi` in [`Bell::values`].
    #[inline(always)]
    pub fn value_index(&self, k: usize, bi: usize, r: usize, c: usize) -> usize {
        let b = self.p.b;
        (k * b + c) * (self.p.n_block_rows_pad * b) + bi * b + r
    }

    /// Converts a BCSR matrix (either block layout). Errors: `block_row_align == 0`; the
    /// size overflows or needs more memory than the host may allocate (every block row is
    /// padded to the longest), checked before allocating.
    pub fn from_bcsr(a: &Bcsr<T>, opts: &BellOptions) -> Result<Self, SparseError> {
        let op = "Bell::from_bcsr";
        if opts.block_row_align == 0 {
            return Err(SparseError::InvalidArgument {
                op,
                reason: "block_row_align = 0 (must be at least 1)".into(),
            });
        }
        let (b, nbr) = (a.b(), a.n_block_rows());
        let width = a
            .row_ptr()
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0);
        let nbr_pad = round_up(op, "n_block_rows", nbr, opts.block_row_align)?;
        let n_pad = checked_mul(op, "stored rows", nbr_pad, b)?;
        // Every block row padded to the longest: checked before anything is allocated.
        let what = format!(
            "{op}: {nbr} block rows (padded to {nbr_pad}) x width {width} (the longest block row) of {b} x {b} {} blocks (block size {b})",
            T::SUFFIX
        );
        let n_slots = (width as u128).saturating_mul(nbr_pad as u128);
        check_host_bytes(
            &what,
            storage_bytes(&[
                (n_slots, size_of::<Index>()),
                (
                    n_slots.saturating_mul(b as u128 * b as u128),
                    size_of::<T>(),
                ),
                (nbr as u128, size_of::<Index>()),
            ]),
        )?;
        let slots = checked_mul(op, "block slots", width, nbr_pad)?;
        let total = checked_mul(op, "values", slots, b * b)?;
        let mut block_col: Vec<Index> = try_vec(&what, slots, 0)?;
        let mut values = try_vec(&what, total, T::ZERO)?;
        let mut row_len = try_with_capacity(&what, nbr)?;
        let layout = a.layout();
        for bi in 0..nbr {
            let blocks = a.row_ptr()[bi]..a.row_ptr()[bi + 1];
            let mut last = 0;
            for (k, kb) in blocks.clone().enumerate() {
                last = a.col_idx()[kb];
                block_col[k * nbr_pad + bi] = last;
                let src = a.block(kb);
                for r in 0..b {
                    for c in 0..b {
                        values[(k * b + c) * n_pad + bi * b + r] = src[layout.offset(b, r, c)];
                    }
                }
            }
            for k in blocks.len()..width {
                block_col[k * nbr_pad + bi] = last;
            }
            // blocks.len() <= n_block_cols <= Index::MAX.
            row_len.push(blocks.len() as Index);
        }
        Ok(Self {
            p: BellParts {
                b,
                n_block_rows: nbr,
                n_block_cols: a.n_block_cols(),
                n_block_rows_pad: nbr_pad,
                width,
                block_col,
                values,
                row_len,
            },
        })
    }

    /// Back to BCSR (real blocks only) in the given block layout.
    pub fn to_bcsr(&self, layout: BlockLayout) -> Bcsr<T> {
        let (b, nbr, np) = (self.p.b, self.p.n_block_rows, self.p.n_block_rows_pad);
        let mut row_ptr = Vec::with_capacity(nbr + 1);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        row_ptr.push(0);
        for bi in 0..nbr {
            for k in 0..self.p.row_len[bi] as usize {
                col_idx.push(self.p.block_col[k * np + bi]);
                layout.push_block(&mut values, b, |r, c| {
                    self.p.values[self.value_index(k, bi, r, c)]
                });
            }
            row_ptr.push(col_idx.len());
        }
        Bcsr::from_blocks_trusted(self.shape(), layout, row_ptr, col_idx, values)
    }

    /// The scalar CSR matrix of the real blocks (zeros inside blocks stay stored).
    pub fn to_csr(&self) -> Csr<T> {
        self.to_bcsr(BlockLayout::RowMajor).to_csr()
    }
}

fn validate<T: Element>(p: &BellParts<T>) -> Result<(), SparseError> {
    let op = "Bell::from_parts";
    BlockShape::new(p.b, p.n_block_rows, p.n_block_cols).validate(op, None)?;
    if p.n_block_rows_pad < p.n_block_rows {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!(
                "n_block_rows_pad = {} is less than n_block_rows = {}",
                p.n_block_rows_pad, p.n_block_rows
            ),
        });
    }
    let slots = checked_mul(op, "block slots", p.width, p.n_block_rows_pad)?;
    check_len(
        op,
        "block_col (width * n_block_rows_pad)",
        slots,
        p.block_col.len(),
    )?;
    let bb = checked_mul(op, "entries per block", p.b, p.b)?;
    let total = checked_mul(op, "values", slots, bb)?;
    check_len(
        op,
        "values (width * b * b * n_block_rows_pad)",
        total,
        p.values.len(),
    )?;
    check_len(
        op,
        "row_len (one per block row)",
        p.n_block_rows,
        p.row_len.len(),
    )?;
    let np = p.n_block_rows_pad;
    let slots = Slots {
        op,
        what: "block_col",
        row: "block row",
        col: "block column",
        idx: &p.block_col,
        row_len: &p.row_len,
        width: p.width,
        stride: np,
        bound: p.n_block_cols,
    };
    slots.check(p.n_block_rows, |bi, len| {
        for k in len..p.width {
            for e in 0..bb {
                let (r, c) = (e / p.b, e % p.b);
                let s = (k * p.b + c) * (np * p.b) + bi * p.b + r;
                if p.values[s] != T::ZERO {
                    return Err(SparseError::InvalidStructure {
                        op,
                        what: "values",
                        position: s,
                        reason: format!(
                            "padding block {k} of block row {bi} holds {:?} at ({r}, {c}), must be 0",
                            p.values[s]
                        ),
                    });
                }
            }
        }
        Ok(())
    })
}
