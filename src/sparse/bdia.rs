//! Block-diagonal stencil format ("BDIA", stencil-BELL): for each of `S` fixed block
//! offsets, a dense array of blocks over all stored block rows, and **no column indices**.
//!
//! # When it applies
//! Matrices whose block pattern is a set of fixed block diagonals: block `(I, J)` is
//! stored only where `J - I` is one of a few offsets, the same for every block row — what
//! a structured-grid stencil gives (the 13-point stencil of [`super::generate`] has 13
//! offsets inside a grid block, 17 with the couplings across grid blocks). The kernel
//! then reads no index array at all: the block column is `row + offset`. Where the pattern
//! has many distinct offsets or the diagonals are mostly empty, [`Bdia::from_bcsr`] returns
//! [`SparseError::NotStencil`] (limits in [`BdiaOptions`]).
//!
//! # Layout
//! `offsets[d]` (`d < S`, strictly increasing, `i64`); stored block row `s` is logical
//! block row `R = row_index[s]` (strictly increasing: empty ghost rows need not be
//! stored); `nsr_pad` stored rows rounded up to the alignment. Entry `(r, c)` of the block
//! of diagonal `d` in stored row `s` (block column `R + offsets[d]`) is at
//!
//! `values[(d * b + c) * (nsr_pad * b) + s * b + r]`
//!
//! (contiguous in the scalar row `s b + r`, like [`super::Bell`]). Blocks absent from the
//! matrix, and blocks whose column `R + offsets[d]` lies outside `0..n_block_cols`, are
//! stored as zeros; a kernel must skip the out-of-range ones (their `x` does not exist).

use std::collections::BTreeSet;

use super::pattern::{accept, block_shape_accessors, check_row_list};
use super::{
    Bcsr, BlockLayout, BlockShape, Csr, Element, Index, Rejected, SparseError, check_host_bytes,
    check_len, checked_mul, round_up, storage_bytes, try_vec,
};

/// Options of [`Bdia::from_bcsr`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct BdiaOptions {
    /// Most distinct block offsets accepted (default 32).
    pub max_diagonals: usize,
    /// Least fraction of the stored blocks (`S` per stored block row) that must be real
    /// blocks of the matrix (default 0.5): below it the format wastes more than it saves.
    pub min_fill: f64,
    /// Leave block rows without blocks (ghost rows) out of `row_index` (default true).
    pub drop_empty_rows: bool,
    /// Stored block rows are rounded up to a multiple of this (default 32, >= 1).
    pub block_row_align: usize,
}

impl Default for BdiaOptions {
    fn default() -> Self {
        Self {
            max_diagonals: 32,
            min_fill: 0.5,
            drop_empty_rows: true,
            block_row_align: 32,
        }
    }
}

impl BdiaOptions {
    setters! {
        /// Sets [`BdiaOptions::max_diagonals`].
        max_diagonals: usize;
        /// Sets [`BdiaOptions::min_fill`].
        min_fill: f64;
        /// Sets [`BdiaOptions::drop_empty_rows`].
        drop_empty_rows: bool;
        /// Sets [`BdiaOptions::block_row_align`].
        block_row_align: usize;
    }
}

/// The raw arrays of a [`Bdia`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct BdiaParts<T> {
    /// Block size.
    pub b: usize,
    /// Logical block rows (the output has `n_block_rows b` rows).
    pub n_block_rows: usize,
    /// Block columns.
    pub n_block_cols: usize,
    /// Block offsets `J - I` of the diagonals, strictly increasing.
    pub offsets: Vec<i64>,
    /// Logical block row of each stored block row, strictly increasing.
    pub row_index: Vec<Index>,
    /// Stored block rows including padding (`>= row_index.len()`).
    pub n_stored_pad: usize,
    /// `S * b * b * n_stored_pad` values (layout in the [module docs](self)).
    pub values: Vec<T>,
}

/// A block-stencil matrix (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct Bdia<T> {
    p: BdiaParts<T>,
}

impl<T: Element> Bdia<T> {
    /// Checks and wraps the arrays. Errors (arrays handed back): `b == 0`, offsets not
    /// increasing, `row_index` not increasing or out of range, lengths.
    pub fn from_parts(parts: BdiaParts<T>) -> Result<Self, Rejected<BdiaParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    block_shape_accessors!(p);
    /// Block offsets of the diagonals.
    pub fn offsets(&self) -> &[i64] {
        &self.p.offsets
    }
    /// Logical block row of each stored block row.
    pub fn row_index(&self) -> &[Index] {
        &self.p.row_index
    }
    /// Stored block rows including padding.
    pub fn n_stored_pad(&self) -> usize {
        self.p.n_stored_pad
    }
    /// Values.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// The raw arrays.
    pub fn parts(&self) -> &BdiaParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> BdiaParts<T> {
        self.p
    }

    /// Index of entry `(r, c)` of diagonal `d` in stored row `s` in [`Bdia::values`].
    #[inline(always)]
    pub fn value_index(&self, d: usize, s: usize, r: usize, c: usize) -> usize {
        let b = self.p.b;
        (d * b + c) * (self.p.n_stored_pad * b) + s * b + r
    }

    /// Block column of diagonal `d` in logical block row `row`, if inside the matrix.
    #[inline(always)]
    pub fn block_col(&self, row: usize, d: usize) -> Option<usize> {
        let j = row as i64 + self.p.offsets[d];
        (j >= 0 && (j as usize) < self.p.n_block_cols).then_some(j as usize)
    }

    /// Converts a BCSR matrix whose blocks lie on a few fixed block diagonals. Errors:
    /// [`SparseError::NotStencil`] where it has more than `max_diagonals` distinct offsets
    /// (naming the block row where the limit was passed) or the diagonals are filled below
    /// `min_fill`; `block_row_align == 0`; the diagonals need more memory than the host
    /// may allocate (checked before allocating).
    pub fn from_bcsr(a: &Bcsr<T>, opts: &BdiaOptions) -> Result<Self, SparseError> {
        let op = "Bdia::from_bcsr";
        if opts.block_row_align == 0 {
            return Err(SparseError::InvalidArgument {
                op,
                reason: "block_row_align = 0 (must be at least 1)".into(),
            });
        }
        let (b, nbr) = (a.b(), a.n_block_rows());
        let mut offsets = BTreeSet::new();
        let mut row_index: Vec<Index> = Vec::new();
        for bi in 0..nbr {
            let blocks = a.row_ptr()[bi]..a.row_ptr()[bi + 1];
            if opts.drop_empty_rows && blocks.is_empty() {
                continue;
            }
            // bi < n_block_rows <= Index::MAX.
            row_index.push(bi as Index);
            for k in blocks {
                offsets.insert(a.col_idx()[k] as i64 - bi as i64);
                if offsets.len() > opts.max_diagonals {
                    return Err(SparseError::NotStencil {
                        op,
                        reason: format!(
                            "block row {bi} brings the number of distinct block offsets to {} (more than max_diagonals = {}); offsets so far: {:?}",
                            offsets.len(),
                            opts.max_diagonals,
                            offsets.iter().take(40).collect::<Vec<_>>()
                        ),
                    });
                }
            }
        }
        let offsets: Vec<i64> = offsets.into_iter().collect();
        let s_count = offsets.len();
        let slots = s_count * row_index.len();
        if slots > 0 {
            let fill = a.nnz_blocks() as f64 / slots as f64;
            if fill < opts.min_fill {
                return Err(SparseError::NotStencil {
                    op,
                    reason: format!(
                        "{} blocks on {s_count} diagonals x {} stored block rows fill {:.1}% of the stored blocks, below min_fill = {:.1}%",
                        a.nnz_blocks(),
                        row_index.len(),
                        100.0 * fill,
                        100.0 * opts.min_fill
                    ),
                });
            }
        }
        let nsp = round_up(
            op,
            "stored block rows",
            row_index.len(),
            opts.block_row_align,
        )?;
        let n_pad = checked_mul(op, "stored rows", nsp, b)?;
        // Every diagonal spans every stored block row: checked before allocating.
        let what = format!(
            "{op}: {s_count} block diagonals x {} stored block rows (padded to {nsp}) of {b} x {b} {} blocks (block size {b})",
            row_index.len(),
            T::SUFFIX
        );
        check_host_bytes(
            &what,
            storage_bytes(&[(
                (s_count as u128)
                    .saturating_mul(b as u128 * b as u128)
                    .saturating_mul(nsp as u128),
                size_of::<T>(),
            )]),
        )?;
        let total = checked_mul(
            op,
            "values",
            checked_mul(op, "values", s_count, b * b)?,
            nsp,
        )?;
        let mut values = try_vec(&what, total, T::ZERO)?;
        let layout = a.layout();
        for (s, &bi) in row_index.iter().enumerate() {
            let bi = bi as usize;
            for k in a.row_ptr()[bi]..a.row_ptr()[bi + 1] {
                let off = a.col_idx()[k] as i64 - bi as i64;
                // Every offset was inserted above.
                let d = offsets.binary_search(&off).unwrap_or(0);
                let src = a.block(k);
                for r in 0..b {
                    for c in 0..b {
                        values[(d * b + c) * n_pad + s * b + r] = src[layout.offset(b, r, c)];
                    }
                }
            }
        }
        Ok(Self {
            p: BdiaParts {
                b,
                n_block_rows: nbr,
                n_block_cols: a.n_block_cols(),
                offsets,
                row_index,
                n_stored_pad: nsp,
                values,
            },
        })
    }

    /// Back to BCSR: every in-range block that is not all zeros (absent blocks and stored
    /// all-zero blocks look the same here).
    pub fn to_bcsr(&self, layout: BlockLayout) -> Bcsr<T> {
        let b = self.p.b;
        let mut row_ptr = Vec::with_capacity(self.p.n_block_rows + 1);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        row_ptr.push(0);
        let mut stored = self.p.row_index.iter().enumerate().peekable();
        for bi in 0..self.p.n_block_rows {
            if let Some(&(s, _)) = stored.peek().filter(|(_, r)| **r as usize == bi) {
                stored.next();
                for d in 0..self.p.offsets.len() {
                    let Some(bj) = self.block_col(bi, d) else {
                        continue;
                    };
                    let nonzero = (0..b * b)
                        .any(|e| self.p.values[self.value_index(d, s, e / b, e % b)] != T::ZERO);
                    if !nonzero {
                        continue;
                    }
                    // bj < n_block_cols <= Index::MAX.
                    col_idx.push(bj as Index);
                    layout.push_block(&mut values, b, |r, c| {
                        self.p.values[self.value_index(d, s, r, c)]
                    });
                }
            }
            row_ptr.push(col_idx.len());
        }
        Bcsr::from_blocks_trusted(self.shape(), layout, row_ptr, col_idx, values)
    }

    /// The scalar CSR matrix (see [`Bdia::to_bcsr`]).
    pub fn to_csr(&self) -> Csr<T> {
        self.to_bcsr(BlockLayout::RowMajor).to_csr()
    }
}

fn validate<T>(p: &BdiaParts<T>) -> Result<(), SparseError> {
    let op = "Bdia::from_parts";
    BlockShape::new(p.b, p.n_block_rows, p.n_block_cols).validate(op, None)?;
    for (d, w) in p.offsets.windows(2).enumerate() {
        if w[1] <= w[0] {
            return Err(SparseError::InvalidStructure {
                op,
                what: "offsets",
                position: d + 1,
                reason: format!(
                    "offset {} does not increase over the previous {}",
                    w[1], w[0]
                ),
            });
        }
    }
    check_row_list(op, "row_index", &p.row_index, p.n_block_rows)?;
    if p.n_stored_pad < p.row_index.len() {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!(
                "n_stored_pad = {} is less than the {} stored block rows",
                p.n_stored_pad,
                p.row_index.len()
            ),
        });
    }
    let total = checked_mul(
        op,
        "values",
        checked_mul(
            op,
            "values",
            p.offsets.len(),
            checked_mul(op, "entries per block", p.b, p.b)?,
        )?,
        p.n_stored_pad,
    )?;
    check_len(
        op,
        "values (S * b * b * n_stored_pad)",
        total,
        p.values.len(),
    )
}
