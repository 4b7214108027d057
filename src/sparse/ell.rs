//! ELLPACK-ITPACK: every row padded to the same width, stored column-major.

use super::pattern::{Slots, accept};
use super::{
    Bcsr, Csr, CsrParts, Element, Index, Rejected, SparseError, check_host_bytes,
    check_index_range, check_len, checked_mul, round_up, storage_bytes, try_vec, try_with_capacity,
};

/// Options of the ELL converters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EllOptions {
    /// The width (slots per row) is rounded up to a multiple of this (the thesis's
    /// subsection length: one GPU thread per subsection of a row; 20 was its best). >= 1.
    pub subsection: usize,
    /// The stored row count `n_rows_pad` is rounded up to a multiple of this (whole warps
    /// of rows). >= 1.
    pub row_align: usize,
    /// Drop stored entries whose value is exactly zero (the zeros inside BCSR blocks).
    pub drop_zeros: bool,
}

impl Default for EllOptions {
    /// `subsection = 1`, `row_align = 32`, `drop_zeros = true`.
    fn default() -> Self {
        Self {
            subsection: 1,
            row_align: 32,
            drop_zeros: true,
        }
    }
}

impl EllOptions {
    setters! {
        /// Sets [`EllOptions::subsection`].
        subsection: usize;
        /// Sets [`EllOptions::row_align`].
        row_align: usize;
        /// Sets [`EllOptions::drop_zeros`].
        drop_zeros: bool;
    }
}

/// The raw arrays of an [`Ell`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct EllParts<T> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// Stored rows, `>= n_rows` (rows `n_rows..` are all padding).
    pub n_rows_pad: usize,
    /// Slots per row.
    pub width: usize,
    /// Column of slot `k` of row `i` at `k * n_rows_pad + i`; padding slots hold a valid
    /// column (the row's last real column, or 0).
    pub col_idx: Vec<Index>,
    /// Value of slot `k` of row `i` at `k * n_rows_pad + i`; padding slots hold 0.
    pub values: Vec<T>,
    /// Real (non-padding) slots of each row: slots `0..row_len[i]`, columns strictly
    /// increasing.
    pub row_len: Vec<Index>,
}

/// A matrix in ELL form (column-major slots, see the table in [`crate::sparse`]). Padding
/// slots hold 0 and a valid column, so a kernel may run all `width` slots: a zero adds
/// nothing (the SpMV rule of [`crate::sparse`]), not even `0 * inf`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ell<T> {
    p: EllParts<T>,
}

impl<T: Element> Ell<T> {
    /// Checks and wraps the arrays. Errors (arrays handed back): lengths, a column out of
    /// range (padding included), `row_len[i] > width`, columns not increasing in a row,
    /// non-zero padding values.
    pub fn from_parts(parts: EllParts<T>) -> Result<Self, Rejected<EllParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.p.n_rows
    }
    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.p.n_cols
    }
    /// Stored rows (multiple of the row alignment).
    pub fn n_rows_pad(&self) -> usize {
        self.p.n_rows_pad
    }
    /// Slots per row.
    pub fn width(&self) -> usize {
        self.p.width
    }
    /// Column indices (`width * n_rows_pad`).
    pub fn col_idx(&self) -> &[Index] {
        &self.p.col_idx
    }
    /// Values (`width * n_rows_pad`).
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// Real slots per row.
    pub fn row_len(&self) -> &[Index] {
        &self.p.row_len
    }
    /// Real (non-padding) entries.
    pub fn nnz(&self) -> usize {
        self.p.row_len.iter().map(|&l| l as usize).sum()
    }
    /// The raw arrays.
    pub fn parts(&self) -> &EllParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> EllParts<T> {
        self.p
    }

    /// Converts a CSR matrix. Errors: `subsection` or `row_align` is 0; the size overflows
    /// or needs more memory than the host may allocate (every row is padded to the
    /// longest: one dense row makes `n_rows x n_cols` slots), checked before allocating.
    pub fn from_csr(a: &Csr<T>, opts: &EllOptions) -> Result<Self, SparseError> {
        let rows = (0..a.n_rows()).map(|i| a.row(i));
        build("Ell::from_csr", a.n_rows(), a.n_cols(), rows, opts)
    }

    /// Converts a BCSR matrix, resolving the blocks into scalar rows (with
    /// `opts.drop_zeros`, the zeros inside blocks are not stored). Errors: as
    /// [`Ell::from_csr`].
    pub fn from_bcsr(a: &Bcsr<T>, opts: &EllOptions) -> Result<Self, SparseError> {
        // Via CSR: simple, and exactly the thesis's conversion (blocks resolved to rows).
        let csr = a.to_csr();
        let rows = (0..csr.n_rows()).map(|i| csr.row(i));
        build("Ell::from_bcsr", csr.n_rows(), csr.n_cols(), rows, opts)
    }

    /// The scalar CSR matrix of the real slots.
    pub fn to_csr(&self) -> Csr<T> {
        let np = self.p.n_rows_pad;
        let mut row_ptr = Vec::with_capacity(self.p.n_rows + 1);
        let mut col_idx = Vec::with_capacity(self.nnz());
        let mut values = Vec::with_capacity(self.nnz());
        row_ptr.push(0);
        for (i, &len) in self.p.row_len.iter().enumerate() {
            for k in 0..len as usize {
                col_idx.push(self.p.col_idx[k * np + i]);
                values.push(self.p.values[k * np + i]);
            }
            row_ptr.push(values.len());
        }
        Csr::from_parts_trusted(CsrParts {
            n_rows: self.p.n_rows,
            n_cols: self.p.n_cols,
            row_ptr,
            col_idx,
            values,
        })
    }
}

fn build<'a, T: Element>(
    op: &'static str,
    n_rows: usize,
    n_cols: usize,
    rows: impl Iterator<Item = (&'a [Index], &'a [T])> + Clone,
    opts: &EllOptions,
) -> Result<Ell<T>, SparseError> {
    if opts.subsection == 0 || opts.row_align == 0 {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!(
                "subsection = {} and row_align = {} must both be at least 1",
                opts.subsection, opts.row_align
            ),
        });
    }
    let keep = |v: &T| !opts.drop_zeros || *v != T::ZERO;
    let max_len = rows
        .clone()
        .map(|(_, v)| v.iter().filter(|v| keep(v)).count())
        .max()
        .unwrap_or(0);
    let width = round_up(op, "width", max_len, opts.subsection)?;
    let n_rows_pad = round_up(op, "n_rows", n_rows, opts.row_align)?;
    // Every row padded to the longest: checked before anything is allocated.
    let slots = (width as u128).saturating_mul(n_rows_pad as u128);
    let what = format!(
        "{op}: {n_rows} rows (padded to {n_rows_pad}) x width {width} (the longest row, {max_len} entries, rounded up to a multiple of {}) of {} values and column indices",
        opts.subsection,
        T::SUFFIX
    );
    check_host_bytes(
        &what,
        storage_bytes(&[
            (slots, size_of::<Index>() + size_of::<T>()),
            (n_rows as u128, size_of::<Index>()),
        ]),
    )?;
    let total = checked_mul(op, "slots", width, n_rows_pad)?;
    let mut col_idx: Vec<Index> = try_vec(&what, total, 0)?;
    let mut values = try_vec(&what, total, T::ZERO)?;
    let mut row_len = try_with_capacity(&what, n_rows)?;
    for (i, (cs, vs)) in rows.enumerate() {
        let mut k = 0;
        let mut last: Index = 0;
        for (&c, v) in cs.iter().zip(vs) {
            if keep(v) {
                col_idx[k * n_rows_pad + i] = c;
                values[k * n_rows_pad + i] = *v;
                last = c;
                k += 1;
            }
        }
        for kk in k..width {
            col_idx[kk * n_rows_pad + i] = last;
        }
        // k <= width <= n_cols... k counts entries of one row, < Index::MAX columns.
        row_len.push(k as Index);
    }
    Ok(Ell {
        p: EllParts {
            n_rows,
            n_cols,
            n_rows_pad,
            width,
            col_idx,
            values,
            row_len,
        },
    })
}

fn validate<T: Element>(p: &EllParts<T>) -> Result<(), SparseError> {
    let op = "Ell::from_parts";
    check_index_range(op, "n_rows", p.n_rows)?;
    check_index_range(op, "n_cols", p.n_cols)?;
    if p.n_rows_pad < p.n_rows {
        return Err(SparseError::InvalidArgument {
            op,
            reason: format!(
                "n_rows_pad = {} is less than n_rows = {}",
                p.n_rows_pad, p.n_rows
            ),
        });
    }
    let total = checked_mul(op, "slots", p.width, p.n_rows_pad)?;
    check_len(op, "col_idx (width * n_rows_pad)", total, p.col_idx.len())?;
    check_len(op, "values (width * n_rows_pad)", total, p.values.len())?;
    check_len(op, "row_len (one per row)", p.n_rows, p.row_len.len())?;
    let slots = Slots {
        op,
        what: "col_idx",
        row: "row",
        col: "column",
        idx: &p.col_idx,
        row_len: &p.row_len,
        width: p.width,
        stride: p.n_rows_pad,
        bound: p.n_cols,
    };
    slots.check(p.n_rows_pad, |i, len| {
        for k in len..p.width {
            let s = k * p.n_rows_pad + i;
            if p.values[s] != T::ZERO {
                return Err(SparseError::InvalidStructure {
                    op,
                    what: "values",
                    position: s,
                    reason: format!(
                        "padding slot {k} of row {i} holds {:?}, must be 0",
                        p.values[s]
                    ),
                });
            }
        }
        Ok(())
    })
}
