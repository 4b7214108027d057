//! Compressed sparse rows.

use super::pattern::accept;
use super::{
    Coo, CooParts, Element, Index, Rejected, SparseError, check_host_bytes, check_index_range,
    check_len, check_ptr, check_rows_sorted, storage_bytes, try_vec, try_with_capacity,
};

/// The raw arrays of a [`Csr`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrParts<T> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// `n_rows + 1` offsets: row `i` is `row_ptr[i]..row_ptr[i+1]`.
    pub row_ptr: Vec<usize>,
    /// Column of each entry, strictly increasing within a row.
    pub col_idx: Vec<Index>,
    /// Value of each entry.
    pub values: Vec<T>,
}

/// A sparse matrix in compressed sparse row form: row `i` holds the entries
/// `k in row_ptr[i]..row_ptr[i+1]`, at columns `col_idx[k]` (strictly increasing within the
/// row, so no duplicates), values `values[k]`. Rectangular shapes and empty rows are fine;
/// both dimensions fit [`Index`].
#[derive(Debug, Clone, PartialEq)]
pub struct Csr<T> {
    p: CsrParts<T>,
}

impl<T: Element> Csr<T> {
    /// Checks and wraps the arrays. Errors (with the arrays handed back): `row_ptr` not
    /// `n_rows + 1` long, not starting at 0, decreasing, or not ending at `nnz`; a column
    /// out of range or not increasing within its row; `values` not `nnz` long.
    pub fn try_new(
        n_rows: usize,
        n_cols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<Index>,
        values: Vec<T>,
    ) -> Result<Self, Rejected<CsrParts<T>>> {
        Self::from_parts(CsrParts {
            n_rows,
            n_cols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// [`Csr::try_new`] from a [`CsrParts`].
    pub fn from_parts(parts: CsrParts<T>) -> Result<Self, Rejected<CsrParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    /// Wraps arrays already known to be valid (built by a converter).
    pub(crate) fn from_parts_trusted(parts: CsrParts<T>) -> Self {
        debug_assert!(validate(&parts).is_ok());
        Self { p: parts }
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.p.n_rows
    }
    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.p.n_cols
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.p.values.len()
    }
    /// Row offsets (`n_rows + 1`).
    pub fn row_ptr(&self) -> &[usize] {
        &self.p.row_ptr
    }
    /// Column indices.
    pub fn col_idx(&self) -> &[Index] {
        &self.p.col_idx
    }
    /// Values.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// The raw arrays.
    pub fn parts(&self) -> &CsrParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> CsrParts<T> {
        self.p
    }

    /// Row `i` as (columns, values); empty where `i` is out of range.
    pub fn row(&self, i: usize) -> (&[Index], &[T]) {
        match (self.p.row_ptr.get(i), self.p.row_ptr.get(i + 1)) {
            (Some(&s), Some(&e)) => (&self.p.col_idx[s..e], &self.p.values[s..e]),
            _ => (&[], &[]),
        }
    }

    /// The same matrix without stored entries whose value is exactly zero (NaN stays).
    pub fn without_zeros(&self) -> Self {
        let mut row_ptr = Vec::with_capacity(self.p.n_rows + 1);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        row_ptr.push(0);
        for i in 0..self.p.n_rows {
            let (c, v) = self.row(i);
            for (&c, &v) in c.iter().zip(v) {
                if v != T::ZERO {
                    col_idx.push(c);
                    values.push(v);
                }
            }
            row_ptr.push(values.len());
        }
        Self::from_parts_trusted(CsrParts {
            n_rows: self.p.n_rows,
            n_cols: self.p.n_cols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// `Err(`[`SparseError::NonFinite`]`)` naming the first stored NaN or infinity (in
    /// row order, 0-based row and column): a system to solve must be finite.
    pub fn check_finite(&self) -> Result<(), SparseError> {
        let ptr = &self.p.row_ptr;
        super::check_finite_entries("Csr::check_finite", &self.p.values, |k| {
            // The row of entry k: the last offset at or below k.
            let row = ptr.partition_point(|&o| o <= k) - 1;
            (row, self.p.col_idx[k] as usize)
        })
    }

    /// The square matrix `diag(A, I)` of size `n`: `A` (square) with rows and columns
    /// `n_rows..n` holding the identity. Padding a system `A x = b` this way to whole blocks
    /// ([`super::padded_size`]) gives `diag(A, I) (x, 0) = (b, 0)`: the solution comes back
    /// in the first `n_rows` entries, and block preconditioners stay nonsingular. Errors:
    /// `A` not square, `n` below its size, `n` beyond [`Index`], memory.
    ///
    /// ```
    /// use ferrocuda::sparse::{Csr, padded_size};
    /// let a = Csr::try_new(2, 2, vec![0, 1, 2], vec![0, 1], vec![4.0_f64, 5.0])?;
    /// let p = a.pad_identity(padded_size(2, 3)?)?;
    /// assert_eq!(p.to_dense()?, [4.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 1.0]);
    /// # Ok::<(), ferrocuda::sparse::SparseError>(())
    /// ```
    pub fn pad_identity(&self, n: usize) -> Result<Self, SparseError> {
        let op = "Csr::pad_identity";
        let m = self.p.n_rows;
        if m != self.p.n_cols || n < m {
            return Err(SparseError::InvalidArgument {
                op,
                reason: format!(
                    "pads a square matrix to a larger size: the matrix is {m} x {}, the size {n}",
                    self.p.n_cols
                ),
            });
        }
        check_index_range(op, "padded size", n)?;
        let extra = n - m;
        let what = format!("{op}: a {m} x {m} matrix padded to {n}");
        let nnz = self.nnz() + extra;
        check_host_bytes(
            &what,
            storage_bytes(&[
                (n as u128 + 1, size_of::<usize>()),
                (nnz as u128, size_of::<Index>() + size_of::<T>()),
            ]),
        )?;
        let mut row_ptr = try_with_capacity(&what, n + 1)?;
        let mut col_idx = try_with_capacity(&what, nnz)?;
        let mut values = try_with_capacity(&what, nnz)?;
        row_ptr.extend_from_slice(&self.p.row_ptr);
        col_idx.extend_from_slice(&self.p.col_idx);
        values.extend_from_slice(&self.p.values);
        for i in m..n {
            // i < n <= Index::MAX (checked above).
            col_idx.push(i as Index);
            values.push(T::ONE);
            row_ptr.push(values.len());
        }
        Ok(Self::from_parts_trusted(CsrParts {
            n_rows: n,
            n_cols: n,
            row_ptr,
            col_idx,
            values,
        }))
    }

    /// The dense row-major `n_rows x n_cols` array (for tests and small matrices).
    /// Errors: the size overflows.
    pub fn to_dense(&self) -> Result<Vec<T>, SparseError> {
        let n = super::checked_mul("Csr::to_dense", "dense size", self.p.n_rows, self.p.n_cols)?;
        let mut d = vec![T::ZERO; n];
        for i in 0..self.p.n_rows {
            let (c, v) = self.row(i);
            for (&c, &v) in c.iter().zip(v) {
                d[i * self.p.n_cols + c as usize] = v;
            }
        }
        Ok(d)
    }
}

fn validate<T>(p: &CsrParts<T>) -> Result<(), SparseError> {
    let op = "Csr::try_new";
    check_index_range(op, "n_rows", p.n_rows)?;
    check_index_range(op, "n_cols", p.n_cols)?;
    check_ptr(
        op,
        "row_ptr",
        &p.row_ptr,
        p.n_rows,
        p.col_idx.len(),
        "col_idx",
    )?;
    check_len(
        op,
        "values (one per column index)",
        p.col_idx.len(),
        p.values.len(),
    )?;
    check_rows_sorted(op, "col_idx", &p.row_ptr, &p.col_idx, p.n_cols)
}

/// Sorts the triplets by row, then column, and sums duplicates (in triplet order). An
/// allocation failure panics, as any `Vec`'s; [`Csr::try_from_coo`] returns it as an error.
impl<T: Element> From<&Coo<T>> for Csr<T> {
    fn from(a: &Coo<T>) -> Self {
        match Csr::try_from_coo(a) {
            Ok(c) => c,
            Err(e) => panic!("Csr::from(&Coo): {e}"),
        }
    }
}

impl<T: Element> Csr<T> {
    /// [`Csr::from`]`(&Coo)`, with the memory it needs (row offsets for every row, even
    /// where a file announces billions of rows and stores one entry) checked first:
    /// errors with [`SparseError::OutOfHostMemory`] instead of aborting.
    pub fn try_from_coo(a: &Coo<T>) -> Result<Self, SparseError> {
        let (n_rows, n_cols, nnz) = (a.n_rows(), a.n_cols(), a.nnz());
        let what = format!(
            "Csr::try_from_coo: a {n_rows} x {n_cols} {} matrix with {nnz} entries",
            T::SUFFIX
        );
        let ptrs = n_rows as u128 + 1;
        check_host_bytes(
            &what,
            storage_bytes(&[
                (3 * ptrs, size_of::<usize>()),
                (
                    nnz as u128,
                    size_of::<usize>() + size_of::<Index>() + size_of::<T>(),
                ),
            ]),
        )?;
        // Counting sort by row (stable, so duplicates keep their triplet order).
        let mut count = try_vec(&what, n_rows + 1, 0usize)?;
        for &r in a.rows() {
            count[r as usize + 1] += 1;
        }
        for i in 0..n_rows {
            count[i + 1] += count[i];
        }
        let mut next = try_with_capacity(&what, n_rows + 1)?;
        next.extend_from_slice(&count);
        let mut order = try_vec(&what, nnz, 0usize)?;
        for (k, &r) in a.rows().iter().enumerate() {
            order[next[r as usize]] = k;
            next[r as usize] += 1;
        }
        drop(next);
        let mut row_ptr = try_with_capacity(&what, n_rows + 1)?;
        let mut col_idx = try_with_capacity(&what, nnz)?;
        let mut values = try_with_capacity(&what, nnz)?;
        row_ptr.push(0);
        for i in 0..n_rows {
            let seg = &mut order[count[i]..count[i + 1]];
            seg.sort_by_key(|&k| a.cols()[k]); // stable
            let start = values.len();
            for &k in seg.iter() {
                let (c, v) = (a.cols()[k], a.values()[k]);
                if values.len() > start && col_idx.last() == Some(&c) {
                    if let Some(last) = values.last_mut() {
                        *last = *last + v;
                    }
                } else {
                    col_idx.push(c);
                    values.push(v);
                }
            }
            row_ptr.push(values.len());
        }
        Ok(Csr::from_parts_trusted(CsrParts {
            n_rows,
            n_cols,
            row_ptr,
            col_idx,
            values,
        }))
    }
}

/// Triplets in row-major order.
impl<T: Element> From<&Csr<T>> for Coo<T> {
    fn from(a: &Csr<T>) -> Self {
        let mut rows = Vec::with_capacity(a.nnz());
        for i in 0..a.n_rows() {
            let len = a.row_ptr()[i + 1] - a.row_ptr()[i];
            // i < n_rows <= Index::MAX (checked by every constructor).
            rows.extend(std::iter::repeat_n(i as Index, len));
        }
        Coo::from_parts_trusted(CooParts {
            n_rows: a.n_rows(),
            n_cols: a.n_cols(),
            rows,
            cols: a.col_idx().to_vec(),
            values: a.values().to_vec(),
        })
    }
}
