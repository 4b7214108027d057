//! Coordinate format: a list of `(row, column, value)` triplets.

use super::pattern::accept;
use super::{Element, Index, Rejected, SparseError, check_index_range, check_len};

/// The raw arrays of a [`Coo`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct CooParts<T> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// Row of each triplet.
    pub rows: Vec<Index>,
    /// Column of each triplet.
    pub cols: Vec<Index>,
    /// Value of each triplet.
    pub values: Vec<T>,
}

/// A sparse matrix as triplets `A[rows[k], cols[k]] += values[k]`: any order, and
/// **duplicate positions are summed** (by every converter and by SpMV). Explicit zeros are
/// kept as stored entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Coo<T> {
    p: CooParts<T>,
}

impl<T: Element> Coo<T> {
    /// An `n_rows x n_cols` matrix without entries. Errors: a dimension exceeds [`Index`].
    pub fn empty(n_rows: usize, n_cols: usize) -> Result<Self, SparseError> {
        Self::try_new(n_rows, n_cols, Vec::new(), Vec::new(), Vec::new()).map_err(|r| r.error)
    }

    /// Checks and wraps triplets. Errors (with the arrays handed back): lengths differ, a
    /// row or column out of range, a dimension that exceeds [`Index`].
    pub fn try_new(
        n_rows: usize,
        n_cols: usize,
        rows: Vec<Index>,
        cols: Vec<Index>,
        values: Vec<T>,
    ) -> Result<Self, Rejected<CooParts<T>>> {
        Self::from_parts(CooParts {
            n_rows,
            n_cols,
            rows,
            cols,
            values,
        })
    }

    /// [`Coo::try_new`] from a [`CooParts`].
    pub fn from_parts(parts: CooParts<T>) -> Result<Self, Rejected<CooParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    /// Wraps triplets known to be valid (built by a converter).
    pub(crate) fn from_parts_trusted(parts: CooParts<T>) -> Self {
        debug_assert!(validate(&parts).is_ok());
        Self { p: parts }
    }

    /// `Err(`[`SparseError::NonFinite`]`)` naming the first NaN or infinity among the
    /// triplets (in triplet order, 0-based row and column).
    pub fn check_finite(&self) -> Result<(), SparseError> {
        super::check_finite_entries("Coo::check_finite", &self.p.values, |k| {
            (self.p.rows[k] as usize, self.p.cols[k] as usize)
        })
    }

    /// Appends one triplet. Errors: the position is out of range (the matrix is unchanged).
    pub fn push(&mut self, row: usize, col: usize, value: T) -> Result<(), SparseError> {
        let op = "Coo::push";
        let position = self.p.rows.len();
        check_position(
            op,
            position,
            ("row", row, self.p.n_rows),
            ("col", col, self.p.n_cols),
        )?;
        // Both fit Index: the dimensions were checked against it.
        self.p.rows.push(row as Index);
        self.p.cols.push(col as Index);
        self.p.values.push(value);
        Ok(())
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.p.n_rows
    }
    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.p.n_cols
    }
    /// Stored triplets (duplicates counted separately).
    pub fn nnz(&self) -> usize {
        self.p.values.len()
    }
    /// Row of each triplet.
    pub fn rows(&self) -> &[Index] {
        &self.p.rows
    }
    /// Column of each triplet.
    pub fn cols(&self) -> &[Index] {
        &self.p.cols
    }
    /// Value of each triplet.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// The raw arrays.
    pub fn parts(&self) -> &CooParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> CooParts<T> {
        self.p
    }
}

fn validate<T>(p: &CooParts<T>) -> Result<(), SparseError> {
    let op = "Coo::try_new";
    check_index_range(op, "n_rows", p.n_rows)?;
    check_index_range(op, "n_cols", p.n_cols)?;
    check_len(op, "cols (one per row index)", p.rows.len(), p.cols.len())?;
    check_len(
        op,
        "values (one per row index)",
        p.rows.len(),
        p.values.len(),
    )?;
    for (k, (&r, &c)) in p.rows.iter().zip(&p.cols).enumerate() {
        check_position(
            op,
            k,
            ("rows", r as usize, p.n_rows),
            ("cols", c as usize, p.n_cols),
        )?;
    }
    Ok(())
}

/// Triplet `position`'s row and column, each `(what, value, bound)`, below their bounds.
fn check_position(
    op: &'static str,
    position: usize,
    row: (&'static str, usize, usize),
    col: (&'static str, usize, usize),
) -> Result<(), SparseError> {
    for (what, value, bound) in [row, col] {
        if value >= bound {
            return Err(SparseError::IndexOutOfRange {
                op,
                what,
                position,
                value,
                bound,
            });
        }
    }
    Ok(())
}
