//! What the formats share, in the spirit of nalgebra-sparse's `SparsityPattern`: the
//! shape of a blocked matrix ([`BlockShape`]: block size, block rows, block columns) and
//! the checks of the index arrays that several formats hold in the same form (row
//! offsets with sorted columns: [`super::check_ptr`] and [`super::check_rows_sorted`];
//! lists of stored block rows; ELL-style slots). Each format's constructor runs these
//! checks, so the error for a given defect reads the same in every format.

use super::{Index, Rejected, SparseError, check_index_range, checked_mul};

/// The shape of a blocked format ([`super::Bcsr`], [`super::Bell`], [`super::Bdia`],
/// [`super::Sbell`]): `b x b` blocks, `n_block_rows x n_block_cols` of them, so the matrix
/// is `n_block_rows b x n_block_cols b`. Every constructor checks that `b >= 1` and that
/// both scalar dimensions fit [`Index`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct BlockShape {
    /// Block size.
    pub b: usize,
    /// Block rows (formats that leave empty block rows out still count them).
    pub n_block_rows: usize,
    /// Block columns.
    pub n_block_cols: usize,
}

impl BlockShape {
    /// `n_block_rows x n_block_cols` blocks of `b x b` (each format's constructor checks it
    /// where it comes from a user).
    pub fn new(b: usize, n_block_rows: usize, n_block_cols: usize) -> Self {
        BlockShape {
            b,
            n_block_rows,
            n_block_cols,
        }
    }

    /// Scalar rows (`n_block_rows b`).
    pub fn n_rows(&self) -> usize {
        self.n_block_rows * self.b
    }

    /// Scalar columns (`n_block_cols b`).
    pub fn n_cols(&self) -> usize {
        self.n_block_cols * self.b
    }

    /// Checks the shape for operation `op`: `b` from 1 to `max_b` (where the format has a
    /// limit), both scalar dimensions within [`Index`].
    pub(crate) fn validate(
        &self,
        op: &'static str,
        max_b: Option<usize>,
    ) -> Result<(), SparseError> {
        let b = self.b;
        match max_b {
            Some(max) if b == 0 || b > max => {
                return Err(SparseError::InvalidArgument {
                    op,
                    reason: format!("block size b = {b} (must be 1..={max})"),
                });
            }
            None if b == 0 => {
                return Err(SparseError::InvalidArgument {
                    op,
                    reason: "block size b = 0 (must be at least 1)".into(),
                });
            }
            _ => {}
        }
        check_index_range(op, "n_rows", checked_mul(op, "rows", self.n_block_rows, b)?)?;
        check_index_range(
            op,
            "n_cols",
            checked_mul(op, "columns", self.n_block_cols, b)?,
        )
    }
}

/// The shape accessors of a blocked format (host or device) whose field `self.$s` has
/// fields `b`, `n_block_rows`, `n_block_cols`: written once for all of them.
macro_rules! block_shape_accessors {
    ($s:ident) => {
        /// Block size.
        pub fn b(&self) -> usize {
            self.$s.b
        }
        /// Block rows (the matrix has `n_block_rows b` rows; block rows a format leaves
        /// out count too).
        pub fn n_block_rows(&self) -> usize {
            self.$s.n_block_rows
        }
        /// Block columns.
        pub fn n_block_cols(&self) -> usize {
            self.$s.n_block_cols
        }
        /// Scalar rows (`n_block_rows b`).
        pub fn n_rows(&self) -> usize {
            self.$s.n_block_rows * self.$s.b
        }
        /// Scalar columns (`n_block_cols b`).
        pub fn n_cols(&self) -> usize {
            self.$s.n_block_cols * self.$s.b
        }
        /// Block size and block counts.
        pub fn shape(&self) -> $crate::sparse::BlockShape {
            $crate::sparse::BlockShape {
                b: self.$s.b,
                n_block_rows: self.$s.n_block_rows,
                n_block_cols: self.$s.n_block_cols,
            }
        }
    };
}
pub(crate) use block_shape_accessors;

/// `parts` where `validate` accepts them; otherwise the error with the parts handed back
/// unchanged (every `from_parts`).
pub(crate) fn accept<P>(
    parts: P,
    validate: impl FnOnce(&P) -> Result<(), SparseError>,
) -> Result<P, Rejected<P>> {
    match validate(&parts) {
        Ok(()) => Ok(parts),
        Err(error) => Err(Rejected {
            error,
            parts: Box::new(parts),
        }),
    }
}

/// Checks a list of block rows (`what`): each below `bound`, strictly increasing. The
/// stored rows of [`super::Bdia`] and [`super::Sbell`], the row map of
/// [`super::cpu::spmv_bcsr_mapped`].
pub(crate) fn check_row_list(
    op: &'static str,
    what: &'static str,
    rows: &[Index],
    bound: usize,
) -> Result<(), SparseError> {
    check_increasing(op, what, rows, 0, bound, |r, p| {
        format!("block row {r} does not increase over the previous {p}")
    })
}

/// Checks that `list` (positions `first..` of operand `what`) is below `bound` and
/// strictly increasing; `reason(value, previous)` words the second failure.
pub(crate) fn check_increasing(
    op: &'static str,
    what: &'static str,
    list: &[Index],
    first: usize,
    bound: usize,
    reason: impl Fn(Index, Index) -> String,
) -> Result<(), SparseError> {
    for (s, &r) in list.iter().enumerate() {
        if r as usize >= bound {
            return Err(SparseError::IndexOutOfRange {
                op,
                what,
                position: first + s,
                value: r as usize,
                bound,
            });
        }
        if s > 0 && r <= list[s - 1] {
            return Err(SparseError::InvalidStructure {
                op,
                what,
                position: first + s,
                reason: reason(r, list[s - 1]),
            });
        }
    }
    Ok(())
}

/// The slots of an ELL-style format ([`super::Ell`]: scalar rows; [`super::Bell`]: block
/// rows): `width` slots per row, slot `k` of row `i` at `k * stride + i`, rows `i` with
/// `row_len[i]` real slots (missing entries of `row_len`: 0).
pub(crate) struct Slots<'a> {
    /// The operation.
    pub op: &'static str,
    /// The index array's name (`col_idx`, `block_col`).
    pub what: &'static str,
    /// What a row and a column are called in messages (`row`/`column`, `block row`/...).
    pub row: &'static str,
    /// See `row`.
    pub col: &'static str,
    /// `width * stride` indices.
    pub idx: &'a [Index],
    /// Real slots per row.
    pub row_len: &'a [Index],
    /// Slots per row.
    pub width: usize,
    /// Stored rows (the distance between slots `k` and `k + 1` of a row).
    pub stride: usize,
    /// Exclusive bound of every index, padding slots included.
    pub bound: usize,
}

impl Slots<'_> {
    /// Checks every index against `bound`, then rows `0..rows`: at most `width` real slots,
    /// indices strictly increasing over the real slots, then `padding(i, len)` (the
    /// format's check of its padding values) before the next row.
    pub(crate) fn check(
        &self,
        rows: usize,
        mut padding: impl FnMut(usize, usize) -> Result<(), SparseError>,
    ) -> Result<(), SparseError> {
        let (op, what, stride) = (self.op, self.what, self.stride);
        if let Some(s) = self.idx.iter().position(|&c| c as usize >= self.bound) {
            return Err(SparseError::IndexOutOfRange {
                op,
                what,
                position: s,
                value: self.idx[s] as usize,
                bound: self.bound,
            });
        }
        for i in 0..rows {
            let len = self.row_len.get(i).map_or(0, |&l| l as usize);
            if len > self.width {
                return Err(SparseError::IndexOutOfRange {
                    op,
                    what: "row_len",
                    position: i,
                    value: len,
                    bound: self.width + 1,
                });
            }
            for k in 1..len {
                let (a, c) = (self.idx[(k - 1) * stride + i], self.idx[k * stride + i]);
                if c <= a {
                    return Err(SparseError::InvalidStructure {
                        op,
                        what,
                        position: k * stride + i,
                        reason: format!(
                            "{} {i}: {} {c} does not increase over the previous {a}",
                            self.row, self.col
                        ),
                    });
                }
            }
            padding(i, len)?;
        }
        Ok(())
    }
}
