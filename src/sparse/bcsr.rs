//! Block compressed sparse rows with a run-time block size `b` (5 is the fast path).

use rayon::prelude::*;

use super::pattern::{accept, block_shape_accessors};
use super::{
    BlockShape, Csr, CsrParts, Element, Index, Rejected, SparseError, check_host_bytes,
    check_index_range, check_len, check_ptr, check_rows_sorted, checked_mul, par_try_vec,
    split_at_ends, storage_bytes, try_with_capacity,
};

/// How the `b x b` entries of one block are laid out in `values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockLayout {
    /// Entry `(r, c)` of block `k` at `k b b + r b + c` (TRACE's BCSR).
    #[default]
    RowMajor,
    /// Entry `(r, c)` of block `k` at `k b b + c b + r` (the thesis's "permuted" BCSR: the
    /// `b` threads that own the rows of a block read one column contiguously).
    ColMajor,
}

impl BlockLayout {
    /// Offset of entry `(r, c)` inside a `b x b` block.
    #[inline(always)]
    pub fn offset(self, b: usize, r: usize, c: usize) -> usize {
        match self {
            BlockLayout::RowMajor => r * b + c,
            BlockLayout::ColMajor => c * b + r,
        }
    }

    /// Appends one `b x b` block to `values` in this layout, entry `(r, c)` from
    /// `entry(r, c)`: how every format converts its blocks to BCSR.
    pub(crate) fn push_block<T: Element>(
        self,
        values: &mut Vec<T>,
        b: usize,
        entry: impl Fn(usize, usize) -> T,
    ) {
        let base = values.len();
        values.resize(base + b * b, T::ZERO);
        for r in 0..b {
            for c in 0..b {
                values[base + self.offset(b, r, c)] = entry(r, c);
            }
        }
    }
}

/// What [`Bcsr::from_csr`] does when a dimension is not a multiple of `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockFit {
    /// Error ([`SparseError::InvalidArgument`] naming the dimension).
    #[default]
    Exact,
    /// Round the dimensions up to multiples of `b`; the added rows and columns are zero
    /// (the result is the padded matrix: vectors must be padded to match, and
    /// [`Bcsr::to_csr`] returns the padded shape).
    Pad,
}

/// The raw arrays of a [`Bcsr`] matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct BcsrParts<T> {
    /// Block size `b >= 1`.
    pub b: usize,
    /// Layout of the entries inside each block.
    pub layout: BlockLayout,
    /// Block rows `nbr` (the matrix has `nbr b` rows).
    pub n_block_rows: usize,
    /// Block columns `nbc` (the matrix has `nbc b` columns).
    pub n_block_cols: usize,
    /// `nbr + 1` offsets into the blocks: block row `I` is `row_ptr[I]..row_ptr[I+1]`.
    pub row_ptr: Vec<usize>,
    /// Block column of each block, strictly increasing within a block row.
    pub col_idx: Vec<Index>,
    /// `b b` values per block, laid out per [`BlockLayout`].
    pub values: Vec<T>,
}

/// A block sparse matrix: `b x b` dense blocks in CSR order (see the format table in
/// [`crate::sparse`]). All stored blocks are dense, including their zeros.
#[derive(Debug, Clone, PartialEq)]
pub struct Bcsr<T> {
    p: BcsrParts<T>,
}

impl<T: Element> Bcsr<T> {
    /// Checks and wraps the arrays. Errors (with the arrays handed back): `b == 0`; scalar
    /// dimensions exceed [`Index`]; `row_ptr` invalid; a block column out of range or not
    /// increasing within its block row; `values.len() != nnzb b b`.
    pub fn from_parts(parts: BcsrParts<T>) -> Result<Self, Rejected<BcsrParts<T>>> {
        accept(parts, validate).map(|p| Self { p })
    }

    /// Wraps block rows built by a converter from a valid matrix of `shape`.
    pub(crate) fn from_blocks_trusted(
        shape: BlockShape,
        layout: BlockLayout,
        row_ptr: Vec<usize>,
        col_idx: Vec<Index>,
        values: Vec<T>,
    ) -> Self {
        Self::from_parts_trusted(BcsrParts {
            b: shape.b,
            layout,
            n_block_rows: shape.n_block_rows,
            n_block_cols: shape.n_block_cols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Wraps arrays known to be valid.
    pub(crate) fn from_parts_trusted(parts: BcsrParts<T>) -> Self {
        debug_assert!(validate(&parts).is_ok());
        Self { p: parts }
    }

    block_shape_accessors!(p);
    /// Block layout.
    pub fn layout(&self) -> BlockLayout {
        self.p.layout
    }
    /// Stored blocks.
    pub fn nnz_blocks(&self) -> usize {
        self.p.col_idx.len()
    }
    /// Block row offsets.
    pub fn row_ptr(&self) -> &[usize] {
        &self.p.row_ptr
    }
    /// Block column of each block.
    pub fn col_idx(&self) -> &[Index] {
        &self.p.col_idx
    }
    /// All values, `b b` per block.
    pub fn values(&self) -> &[T] {
        &self.p.values
    }
    /// The `b b` values of block `k` (empty where `k` is out of range).
    pub fn block(&self, k: usize) -> &[T] {
        let bb = self.p.b * self.p.b;
        self.p.values.get(k * bb..(k + 1) * bb).unwrap_or(&[])
    }
    /// The raw arrays.
    pub fn parts(&self) -> &BcsrParts<T> {
        &self.p
    }
    /// Gives up the raw arrays.
    pub fn into_parts(self) -> BcsrParts<T> {
        self.p
    }

    /// Blocks `a` with block size `b`: every `b x b` tile holding at least one stored entry
    /// of `a` becomes a dense block (missing entries zero). Errors: `b == 0`; with
    /// [`BlockFit::Exact`], a dimension not divisible by `b`; with [`BlockFit::Pad`], `b`
    /// larger than a nonzero dimension (the blocks would be mostly padding); blocks that
    /// need more memory than the host may allocate ([`SparseError::OutOfHostMemory`],
    /// checked before the values are allocated).
    pub fn from_csr(
        a: &Csr<T>,
        b: usize,
        layout: BlockLayout,
        fit: BlockFit,
    ) -> Result<Self, SparseError> {
        let op = "Bcsr::from_csr";
        if b == 0 {
            return Err(SparseError::InvalidArgument {
                op,
                reason: "block size b = 0 (must be at least 1)".into(),
            });
        }
        for (what, name, n) in [
            ("n_rows", "rows", a.n_rows()),
            ("n_cols", "columns", a.n_cols()),
        ] {
            if fit == BlockFit::Exact && n % b != 0 {
                return Err(SparseError::InvalidArgument {
                    op,
                    reason: format!(
                        "{what} = {n} is not a multiple of the block size {b} (use BlockFit::Pad to pad with zeros)"
                    ),
                });
            }
            if fit == BlockFit::Pad && n > 0 && b > n {
                return Err(SparseError::InvalidArgument {
                    op,
                    reason: format!(
                        "block size {b} is larger than the matrix's {n} {name}: each block would be mostly padding (use a block size of at most {n})"
                    ),
                });
            }
        }
        let bb = checked_mul(op, "entries per block", b, b)?;
        let (nbr, nbc) = (a.n_rows().div_ceil(b), a.n_cols().div_ceil(b));
        check_index_range(op, "padded n_rows", checked_mul(op, "padded rows", nbr, b)?)?;
        check_index_range(
            op,
            "padded n_cols",
            checked_mul(op, "padded columns", nbc, b)?,
        )?;
        // Tasks of whole block rows, many per core.
        let task_rows = nbr.div_ceil(256).clamp(1, 4096);
        let tasks = nbr.div_ceil(task_rows);
        let rows_of = |t: usize| t * task_rows..((t + 1) * task_rows).min(nbr);
        // Pass 1: each task's block rows, their sorted distinct block columns.
        let parts: Vec<(Vec<usize>, Vec<Index>)> = (0..tasks)
            .into_par_iter()
            .map(|t| {
                let (mut lens, mut cols) = (Vec::new(), Vec::new());
                for bi in rows_of(t) {
                    let start = cols.len();
                    for i in bi * b..((bi + 1) * b).min(a.n_rows()) {
                        cols.extend(a.row(i).0.iter().map(|&c| c / b as Index));
                    }
                    cols[start..].sort_unstable();
                    let mut kept = start;
                    for k in start..cols.len() {
                        if k == start || cols[k] != cols[kept - 1] {
                            cols[kept] = cols[k];
                            kept += 1;
                        }
                    }
                    cols.truncate(kept);
                    lens.push(kept - start);
                }
                (lens, cols)
            })
            .collect();
        let nnzb: usize = parts.iter().map(|p| p.1.len()).sum();
        let mut row_ptr = Vec::with_capacity(nbr + 1);
        let mut col_idx: Vec<Index> = try_with_capacity(op, nnzb)?;
        row_ptr.push(0);
        for (lens, cols) in parts {
            for len in lens {
                row_ptr.push(row_ptr[row_ptr.len() - 1] + len);
            }
            col_idx.extend_from_slice(&cols);
        }
        // The values, checked before they are allocated: b^2 per block.
        let n_values = (nnzb as u128).saturating_mul(bb as u128);
        let what = format!(
            "{op}: {nnzb} blocks of {b} x {b} {} values (block size {b}, a {} x {} matrix)",
            T::SUFFIX,
            a.n_rows(),
            a.n_cols()
        );
        check_host_bytes(&what, storage_bytes(&[(n_values, size_of::<T>())]))?;
        // n_values fits usize: its bytes passed the check above (at most isize::MAX).
        let mut values = par_try_vec(&what, n_values as usize, T::ZERO)?;
        // Pass 2: each entry into its block; a row's columns and its block row's block
        // columns both increase, so one cursor per row finds the slots. Each task fills
        // the values of its own block rows.
        let ends = (0..tasks).map(|t| row_ptr[rows_of(t).end] * bb);
        split_at_ends(&mut values, ends)
            .into_par_iter()
            .enumerate()
            .for_each(|(t, part)| {
                let base = row_ptr[rows_of(t).start];
                for bi in rows_of(t) {
                    let blocks = &col_idx[row_ptr[bi]..row_ptr[bi + 1]];
                    for i in bi * b..((bi + 1) * b).min(a.n_rows()) {
                        let r = i - bi * b;
                        let mut slot = 0;
                        let (cs, vs) = a.row(i);
                        for (&c, &v) in cs.iter().zip(vs) {
                            let (bj, cc) = (c as usize / b, c as usize % b);
                            while blocks[slot] as usize != bj {
                                slot += 1;
                            }
                            part[(row_ptr[bi] - base + slot) * bb + layout.offset(b, r, cc)] = v;
                        }
                    }
                }
            });
        Ok(Self::from_blocks_trusted(
            BlockShape::new(b, nbr, nbc),
            layout,
            row_ptr,
            col_idx,
            values,
        ))
    }

    /// The scalar CSR matrix with every entry of every block (zeros inside blocks stay
    /// stored; [`Csr::without_zeros`] drops them).
    pub fn to_csr(&self) -> Csr<T> {
        let (b, bb) = (self.p.b, self.p.b * self.p.b);
        let n_rows = self.n_rows();
        let mut row_ptr = Vec::with_capacity(n_rows + 1);
        let mut col_idx = Vec::with_capacity(self.p.values.len());
        let mut values = Vec::with_capacity(self.p.values.len());
        row_ptr.push(0);
        for bi in 0..self.p.n_block_rows {
            let blocks = self.p.row_ptr[bi]..self.p.row_ptr[bi + 1];
            for r in 0..b {
                for k in blocks.clone() {
                    let bj = self.p.col_idx[k] as usize;
                    for c in 0..b {
                        col_idx.push((bj * b + c) as Index);
                        values.push(self.p.values[k * bb + self.p.layout.offset(b, r, c)]);
                    }
                }
                row_ptr.push(values.len());
            }
        }
        Csr::from_parts_trusted(CsrParts {
            n_rows,
            n_cols: self.n_cols(),
            row_ptr,
            col_idx,
            values,
        })
    }

    /// The same matrix with its blocks in `layout` (transposes each block where it differs).
    pub fn with_layout(&self, layout: BlockLayout) -> Self {
        let mut p = self.p.clone();
        if layout != self.p.layout {
            let b = self.p.b;
            for (dst, src) in p
                .values
                .chunks_exact_mut(b * b)
                .zip(self.p.values.chunks_exact(b * b))
            {
                for r in 0..b {
                    for c in 0..b {
                        dst[layout.offset(b, r, c)] = src[self.p.layout.offset(b, r, c)];
                    }
                }
            }
            p.layout = layout;
        }
        Self::from_parts_trusted(p)
    }

    /// Ghost-row compaction: removes the block rows without blocks. Returns the compacted
    /// matrix (`map.len()` block rows, same block columns) and `map`, strictly increasing,
    /// where `map[i]` is the original block row of compacted block row `i`: the result of
    /// row `i` belongs in `y[map[i] b .. map[i] b + b]` ([`super::cpu::spmv_bcsr_mapped`]).
    pub fn compact_empty_block_rows(&self) -> (Self, Vec<Index>) {
        let mut map = Vec::new();
        let mut row_ptr = vec![0];
        for bi in 0..self.p.n_block_rows {
            if self.p.row_ptr[bi + 1] > self.p.row_ptr[bi] {
                // bi < n_block_rows <= Index::MAX (checked at construction).
                map.push(bi as Index);
                row_ptr.push(self.p.row_ptr[bi + 1]);
            }
        }
        let p = BcsrParts {
            b: self.p.b,
            layout: self.p.layout,
            n_block_rows: map.len(),
            n_block_cols: self.p.n_block_cols,
            row_ptr,
            col_idx: self.p.col_idx.clone(),
            values: self.p.values.clone(),
        };
        (Self::from_parts_trusted(p), map)
    }

    /// Number of block rows without blocks (ghost rows).
    pub fn empty_block_rows(&self) -> usize {
        self.p.row_ptr.windows(2).filter(|w| w[0] == w[1]).count()
    }
}

fn validate<T>(p: &BcsrParts<T>) -> Result<(), SparseError> {
    let op = "Bcsr::from_parts";
    BlockShape::new(p.b, p.n_block_rows, p.n_block_cols).validate(op, None)?;
    check_ptr(
        op,
        "row_ptr",
        &p.row_ptr,
        p.n_block_rows,
        p.col_idx.len(),
        "col_idx",
    )?;
    let bb = checked_mul(op, "entries per block", p.b, p.b)?;
    let want = checked_mul(op, "values", p.col_idx.len(), bb)?;
    check_len(op, "values (b*b per block)", want, p.values.len())?;
    check_rows_sorted(op, "col_idx", &p.row_ptr, &p.col_idx, p.n_block_cols)
}

impl<T: Element> From<&Bcsr<T>> for Csr<T> {
    fn from(a: &Bcsr<T>) -> Self {
        a.to_csr()
    }
}
