//! Sparse matrices: formats, converters, Matrix Market I/O, a block-stencil test-case
//! generator, SpMV on all CPU cores ([`cpu`]) and on the GPU ([`gpu`]).
//!
//! # From a matrix to a product, on either device
//! [`Matrix::new`]`(&csr, `[`Format::Auto`]`)` (CPU) and
//! [`gpu::DeviceMatrix::upload`]`(&gpu, &csr, Format::Auto)` (GPU) choose the storage
//! format from the structure (block size, fill of the blocks, row lengths, bytes; rules in
//! [`auto`]) and report what they chose and why ([`FormatChoice`]); both are operators
//! for GMRES ([`crate::krylov::LinOp`], [`crate::krylov::DeviceLinOp`]). Any matrix runs
//! on the GPU: without block structure as CSR ([`gpu::DeviceCsr`]) or ELL. To solve a
//! system in blocks whose size does not divide `n`, pad it first ([`Csr::pad_identity`],
//! [`padded_size`]); [`Csr::check_finite`] and [`check_finite`] refuse NaN and infinity.
//!
//! Every format is generic over the scalar `T` (`f32`, `f64`, `Complex<f32>`,
//! `Complex<f64>`) and keeps its data in plain arrays (`Vec<usize>` offsets,
//! `Vec<`[`Index`]`>` column indices, `Vec<T>` values) with the layouts below, so a GPU path
//! can upload them as they are (`parts()` / `into_parts()`). Column indices are
//! [`Index`] = `u32` (half the index traffic of `usize`; every constructor checks that the
//! column count fits), row offsets are `usize` (64-bit; they may exceed `u32`).
//!
//! # Formats
//!
//! `n_rows x n_cols` scalar dimensions; block formats have block size `b`, `nbr` block rows,
//! `nbc` block columns (`n_rows = nbr b`, `n_cols = nbc b`). "Padded" counts are rounded up
//! to a multiple of an alignment chosen at conversion time.
//!
//! | format | arrays | entry `(i, j)` / layout |
//! |---|---|---|
//! | [`Coo`] | `rows[k]`, `cols[k]`, `values[k]` | triplet `k` is `A[rows[k], cols[k]] += values[k]`; any order, **duplicates are summed** |
//! | [`Csr`] | `row_ptr[n_rows+1]`, `col_idx[nnz]`, `values[nnz]` | row `i` is `k in row_ptr[i]..row_ptr[i+1]`; columns strictly increasing in a row; empty rows allowed |
//! | [`Bcsr`] | `row_ptr[nbr+1]`, `col_idx[nnzb]` (block columns), `values[nnzb b b]` | block `k` of block row `I` at block column `col_idx[k]`; entry `(r, c)` of block `k` at `k b b + r b + c` ([`BlockLayout::RowMajor`]) or `k b b + c b + r` ([`BlockLayout::ColMajor`], the thesis's "permuted" BCSR) |
//! | [`Ell`] | `col_idx[width n_rows_pad]`, `values[..]`, `row_len[n_rows]` | slot `k` of row `i` at `k * n_rows_pad + i` (column-major); `width` a multiple of the subsection length; slots `k >= row_len[i]` and rows `i >= n_rows` are padding: value 0, a valid column index |
//! | [`Bell`] | `block_col[width_b nbr_pad]`, `values[width_b b b nbr_pad]`, `row_len[nbr]` | slot `k` of block row `I`: block column `block_col[k nbr_pad + I]`; entry `(r, c)` at `(k b + c) (nbr_pad b) + I b + r` (an ELL of the scalar rows whose column index is shared per block); padding blocks are zero |
//! | [`Bdia`] | `offsets[S]`, `row_index[nsr]`, `values[S b b nsr_pad]` | stored block row `s` is logical block row `R = row_index[s]`; diagonal `d` holds the block at block column `R + offsets[d]`, entry `(r, c)` at `(d b + c) (nsr_pad b) + s b + r`; absent / out-of-range blocks are stored as zero; **no column indices** |
//! | [`Sbell`] | `row_index[nsr]`, `masks[w]`, `row_len`, `slice_{col,val}_ptr`, `block_col`, `values` | slices of 32 stored block rows; slot `k` of stored row `s` (lane `l = s % 32` of slice `sl`): block column `block_col[slice_col_ptr[sl] + 32 k + l]`, `e`-th set bit of `masks[k]` at `values[slice_val_ptr[sl] + 32 (E_k + e) + l]`; slot 0 the diagonal block; **no ghost rows, no in-block zeros** ([`sbell`]) |
//!
//! # Zero entries and non-finite values: the same in every format
//! Every SpMV (CPU and GPU) skips entries whose value is exactly zero, whether the matrix
//! stores them or a format padded them in (in-block zeros of BCSR/BELL/BDIA, padding slots
//! of ELL/BELL, zeros inside SBELL masks): `A x` is the product of the matrix with its
//! explicit zeros dropped. So a NaN or infinity in `x` reaches `y_i` only through a
//! nonzero `a_ij`, and every format gives the same NaN/infinity pattern (and, where it
//! sums in the same order, the same bits). NaN and infinity stored in `A` propagate. This
//! differs from SciPy only for an explicitly stored zero facing a non-finite `x_j` (SciPy:
//! `0 * inf = NaN`): the block formats cannot tell a stored zero from padding without a
//! mask per block, so the rule that holds for all of them drops both
//! ([`ferrocuda_kernels::sparse::spmv_term`]). Padded entries of `x` (blocked formats with
//! [`BlockFit::Pad`]) are never read into a sum.
//!
//! # Converters
//!
//! `Coo -> Csr` ([`From`], sums duplicates, sorts), `Csr -> Coo`, `Csr <-> Bcsr`
//! ([`Bcsr::from_csr`] with [`BlockFit::Exact`] or [`BlockFit::Pad`]), `Bcsr -> Ell`
//! ([`Ell::from_bcsr`], optionally dropping in-block zeros), `Bcsr -> Bell`, `Bcsr -> Sbell`, `Bcsr -> Bdia`
//! (fails with [`SparseError::NotStencil`] where the block pattern is not a small set of block
//! diagonals), and each back to [`Csr`] with `to_csr()`. [`Bcsr::compact_empty_block_rows`]
//! removes empty (ghost) block rows and returns the row map for [`cpu::spmv_bcsr_mapped`].
//!
//! Every converter (and [`generate::trace_like`], [`Csr::try_from_coo`], [`mm`]) computes
//! the storage it will need with checked arithmetic before allocating, and returns
//! [`SparseError::OutOfHostMemory`] naming the sizes (rows, block size, width) and the
//! bytes where it exceeds what this process may allocate ([`crate::alloc`]): padding can
//! make a small matrix huge (one dense row makes ELL `n x n`; a block size of 10^5 makes
//! one block 80 GB). [`Bcsr::from_csr`] with [`BlockFit::Pad`] refuses a block size larger
//! than a nonzero dimension.
//!
//! # Errors
//! Every fallible function returns [`SparseError`], naming the operation and the offending
//! value (index, position, file line). Constructors from raw arrays ([`Csr::try_new`] and
//! friends) hand the arrays back inside [`Rejected`] on failure, so nothing the caller gave
//! is lost.
//!
//! ```
//! use ferrocuda::sparse::{Coo, Csr, cpu};
//! // [[1, 0], [0, 2]] with the 2 given as 1.5 + 0.5 (duplicates are summed)
//! let coo = Coo::try_new(2, 2, vec![0, 1, 1], vec![0, 1, 1], vec![1.0_f64, 1.5, 0.5])?;
//! let a = Csr::from(&coo);
//! let mut y = vec![0.0; 2];
//! cpu::spmv_csr(1.0, &a, &[3.0, 4.0], 0.0, &mut y)?;
//! assert_eq!(y, [3.0, 8.0]);
//! # Ok::<(), ferrocuda::sparse::SparseError>(())
//! ```

pub mod auto;
pub mod bcsr;
pub mod bdia;
pub mod bell;
pub mod coo;
pub mod cpu;
pub mod csr;
pub mod ell;
pub mod generate;
pub mod gpu;
pub mod interop;
pub mod mm;
pub mod narrow;
mod pattern;
pub mod reference;
pub mod sbell;

pub use auto::{Candidate, Format, FormatChoice, FormatOptions, Matrix, Storage, Target};
pub use bcsr::{Bcsr, BcsrParts, BlockFit, BlockLayout};
pub use bdia::{Bdia, BdiaOptions, BdiaParts};
pub use bell::{Bell, BellOptions, BellParts};
pub use coo::{Coo, CooParts};
pub use csr::{Csr, CsrParts};
pub use ell::{Ell, EllOptions, EllParts};
pub use ferrocuda_kernels::sparse::MatrixScalar;
pub use pattern::BlockShape;
pub use sbell::{Sbell, SbellParts};

/// Column (and block column) index type of every format: 32-bit, checked at construction.
pub type Index = u32;

/// What a sparse operation can report. Each variant names the operation and the
/// offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SparseError {
    /// An array or vector whose length does not fit the matrix.
    #[error("{op}: {what} has length {found}, expected {expected}")]
    DimensionMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// An index outside its range.
    #[error("{op}: {what}[{position}] = {value} is out of range (must be < {bound})")]
    IndexOutOfRange {
        /// The operation.
        op: &'static str,
        /// Which array.
        what: &'static str,
        /// Position in that array.
        position: usize,
        /// The index found there.
        value: usize,
        /// The exclusive upper bound.
        bound: usize,
    },
    /// An array that breaks a structural rule (row pointers not monotone, columns not
    /// increasing, ...).
    #[error("{op}: {what} is invalid at position {position}: {reason}")]
    InvalidStructure {
        /// The operation.
        op: &'static str,
        /// Which array.
        what: &'static str,
        /// Position in that array.
        position: usize,
        /// What is wrong, with the values.
        reason: String,
    },
    /// An argument outside its valid range (block size 0, dimensions not divisible, a
    /// size that overflows the index type).
    #[error("{op}: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the value.
        reason: String,
    },
    /// A Matrix Market file that cannot be read.
    #[error("{}", if *line == 0 {
        format!("Matrix Market file: {reason}")
    } else {
        format!("Matrix Market line {line}: {reason}")
    })]
    Parse {
        /// 1-based line number (errors found at the end of the file name its last line;
        /// 0 only for a file without any line).
        line: usize,
        /// What is wrong, with the text found.
        reason: String,
    },
    /// An I/O failure while reading or writing a file.
    #[error("{op}: I/O error: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A size (from a file or an argument) that needs more host memory than this process
    /// may allocate: the [`crate::Error::OutOfHostMemory`] of [`crate::alloc`], naming the
    /// request and its bytes, into which it converts.
    #[error(transparent)]
    OutOfHostMemory(Box<crate::Error>),
    /// A NaN or infinity where only finite values are allowed (a system to solve).
    #[error("{op}: {what}{} is {value}: NaN and infinity are not allowed", match col {
        Some(c) => format!(" entry ({row}, {c})"),
        None => format!("[{row}]"),
    })]
    NonFinite {
        /// The operation.
        op: &'static str,
        /// Which matrix or vector.
        what: &'static str,
        /// Row of the entry (0-based), or the vector's index.
        row: usize,
        /// Column of the entry (0-based); `None` for a vector.
        col: Option<usize>,
        /// The value, as `{:?}` prints it.
        value: String,
    },
    /// A matrix the block-stencil format ([`Bdia`]) cannot hold.
    #[error("{op}: not a block-stencil matrix: {reason}")]
    NotStencil {
        /// The operation.
        op: &'static str,
        /// Why, with the numbers.
        reason: String,
    },
}

/// A constructor's error together with the arrays the caller gave, returned unchanged.
/// Converts into [`SparseError`] with `?` (dropping the arrays).
#[derive(Debug)]
pub struct Rejected<P> {
    /// What is wrong.
    pub error: SparseError,
    /// The caller's arrays, untouched (boxed to keep `Result`s small).
    pub parts: Box<P>,
}

impl<P: std::fmt::Debug> std::fmt::Display for Rejected<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

impl<P: std::fmt::Debug> std::error::Error for Rejected<P> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<P> From<Rejected<P>> for SparseError {
    fn from(r: Rejected<P>) -> Self {
        r.error
    }
}

/// A scalar type the sparse module stores: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub use crate::blas1::Element;

/// The block rows `0..n_block_rows` that `map` (strictly increasing, as from
/// [`Bcsr::compact_empty_block_rows`]) does not contain: the ghost rows, which a product sets to
/// `beta y`. Errors: `n_block_rows` beyond [`Index`], or a list larger than the host can
/// hold (a matrix with billions of empty block rows).
pub fn ghost_block_rows(map: &[Index], n_block_rows: usize) -> Result<Vec<Index>, SparseError> {
    let op = "ghost_block_rows";
    check_index_range(op, "n_block_rows", n_block_rows)?;
    let n = n_block_rows.saturating_sub(map.len());
    let mut ghosts = try_with_capacity(
        &format!("{op}: the list of {n} empty block rows of {n_block_rows}"),
        n,
    )?;
    let mut next = map.iter().peekable();
    for bi in 0..n_block_rows {
        if next.peek().is_some_and(|&&m| m as usize == bi) {
            next.next();
        } else {
            // bi < n_block_rows <= Index::MAX (checked above).
            ghosts.push(bi as Index);
        }
    }
    Ok(ghosts)
}

/// Whether a value is finite (both parts of a complex one).
fn is_finite<T: Element>(v: T) -> bool {
    use ferrocuda_kernels::RealScalar;
    v.re().to_f64().is_finite() && v.im().to_f64().is_finite()
}

/// `Err(`[`SparseError::NonFinite`]`)` naming the first NaN or infinity of the vector
/// `what` (0-based index) for operation `op`: the check a solver's right-hand side and
/// initial guess need.
///
/// ```
/// use ferrocuda::sparse::{SparseError, check_finite};
/// assert!(check_finite("solve", "b", &[1.0, 2.0]).is_ok());
/// let e = check_finite("solve", "b", &[1.0, f64::NAN]).unwrap_err();
/// assert!(matches!(e, SparseError::NonFinite { row: 1, col: None, .. }));
/// assert_eq!(e.to_string(), "solve: b[1] is NaN: NaN and infinity are not allowed");
/// ```
pub fn check_finite<T: Element>(
    op: &'static str,
    what: &'static str,
    v: &[T],
) -> Result<(), SparseError> {
    match first_non_finite(v) {
        None => Ok(()),
        Some(i) => Err(SparseError::NonFinite {
            op,
            what,
            row: i,
            col: None,
            value: format!("{:?}", v[i]),
        }),
    }
}

/// The index of the first NaN or infinity in `v`; long slices on all cores (a solve's
/// right-hand side of millions of entries is checked on every call).
fn first_non_finite<T: Element>(v: &[T]) -> Option<usize> {
    use rayon::prelude::*;
    const SERIAL: usize = 1 << 16;
    let serial = |c: &[T]| c.iter().position(|&e| !is_finite(e));
    if v.len() <= SERIAL {
        serial(v)
    } else {
        // Whole chunks per task: `position_first` over single items consults the shared
        // best-so-far for each one and ran 10x slower than one core.
        v.par_chunks(SERIAL)
            .enumerate()
            .find_map_first(|(c, chunk)| serial(chunk).map(|i| c * SERIAL + i))
    }
}

/// The first NaN or infinity among `values`, as the error naming entry `(rows[k],
/// cols[k])` (the matrix checks of [`Csr::check_finite`] and [`Coo::check_finite`]).
pub(crate) fn check_finite_entries<T: Element>(
    op: &'static str,
    values: &[T],
    entry: impl Fn(usize) -> (usize, usize),
) -> Result<(), SparseError> {
    match first_non_finite(values) {
        None => Ok(()),
        Some(k) => {
            let (row, col) = entry(k);
            Err(SparseError::NonFinite {
                op,
                what: "matrix",
                row,
                col: Some(col),
                value: format!("{:?}", values[k]),
            })
        }
    }
}

/// `n` rounded up to a multiple of the block size `b`: the size of a system padded to
/// whole blocks ([`Csr::pad_identity`]). Errors: `b == 0`, or the result overflows.
///
/// ```
/// assert_eq!(ferrocuda::sparse::padded_size(7, 5)?, 10);
/// assert_eq!(ferrocuda::sparse::padded_size(10, 5)?, 10);
/// assert!(ferrocuda::sparse::padded_size(7, 0).is_err());
/// # Ok::<(), ferrocuda::sparse::SparseError>(())
/// ```
pub fn padded_size(n: usize, b: usize) -> Result<usize, SparseError> {
    let op = "padded_size";
    if b == 0 {
        return Err(SparseError::InvalidArgument {
            op,
            reason: "block size b = 0 (must be at least 1)".into(),
        });
    }
    round_up(op, &format!("{n} rows in blocks of {b}"), n, b)
}

/// Bytes of arrays of `(count, bytes per element)`, exact (`u128`, saturating).
pub(crate) fn storage_bytes(arrays: &[(u128, usize)]) -> u128 {
    arrays.iter().fold(0u128, |sum, &(count, size)| {
        sum.saturating_add(crate::alloc::bytes_of(count, size))
    })
}

/// The sparse module's form of an allocation error of [`crate::alloc`].
fn host_memory(e: crate::Error) -> SparseError {
    SparseError::OutOfHostMemory(Box::new(e))
}

/// [`crate::alloc::check_host_bytes`] with the sparse module's error.
pub(crate) fn check_host_bytes(what: &str, bytes: u128) -> Result<(), SparseError> {
    crate::alloc::check_host_bytes(what, bytes).map_err(host_memory)
}

/// [`crate::alloc::try_with_capacity`] with the sparse module's error.
pub(crate) fn try_with_capacity<T>(what: &str, len: usize) -> Result<Vec<T>, SparseError> {
    crate::alloc::try_with_capacity(what, len).map_err(host_memory)
}

/// [`crate::alloc::try_vec`] with the sparse module's error.
pub(crate) fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>, SparseError> {
    crate::alloc::try_vec(what, len, value).map_err(host_memory)
}

/// [`try_vec`] filled by all cores: a format's value array of gigabytes has its pages
/// faulted in (and zeroed by the kernel) in parallel.
pub(crate) fn par_try_vec<T: Clone + Send + Sync>(
    what: &str,
    len: usize,
    value: T,
) -> Result<Vec<T>, SparseError> {
    use rayon::prelude::*;
    let mut v = try_with_capacity(what, len)?;
    v.par_extend(rayon::iter::repeat_n(value, len));
    Ok(v)
}

/// `v` cut at `ends` (increasing offsets into `v`, the last at most `v.len()`): the
/// disjoint parts that parallel tasks fill, part `i` being `v[ends[i-1]..ends[i]]`
/// (`v[..ends[0]]` first).
pub(crate) fn split_at_ends<T>(
    mut v: &mut [T],
    ends: impl IntoIterator<Item = usize>,
) -> Vec<&mut [T]> {
    let mut parts = Vec::new();
    let mut at = 0;
    for end in ends {
        let (part, rest) = v.split_at_mut(end - at);
        parts.push(part);
        v = rest;
        at = end;
    }
    parts
}

/// Makes room for one more element of `v`, doubling fallibly ([`crate::alloc::try_reserve`]):
/// for arrays that grow with what a file really holds.
pub(crate) fn grow_for_push<T>(what: &str, v: &mut Vec<T>) -> Result<(), SparseError> {
    if v.len() == v.capacity() {
        let more = v.len().max(1024);
        crate::alloc::try_reserve(what, v, more).map_err(host_memory)?;
    }
    Ok(())
}

/// Checks that `n` fits [`Index`] (as a count of columns or block columns).
pub(crate) fn check_index_range(op: &'static str, what: &str, n: usize) -> Result<(), SparseError> {
    if n > Index::MAX as usize {
        Err(SparseError::InvalidArgument {
            op,
            reason: format!("{what} = {n} exceeds the index type's limit {}", Index::MAX),
        })
    } else {
        Ok(())
    }
}

/// `Err(DimensionMismatch)` unless `found == expected`. Public for `ferrocuda-repro`.
#[doc(hidden)]
pub fn check_len(
    op: &'static str,
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), SparseError> {
    if expected == found {
        Ok(())
    } else {
        Err(SparseError::DimensionMismatch {
            op,
            what,
            expected,
            found,
        })
    }
}

/// `a * b`, or an error naming the operation where it overflows.
pub(crate) fn checked_mul(
    op: &'static str,
    what: &str,
    a: usize,
    b: usize,
) -> Result<usize, SparseError> {
    a.checked_mul(b)
        .ok_or_else(|| SparseError::InvalidArgument {
            op,
            reason: format!("{what}: {a} x {b} overflows the address space"),
        })
}

/// `a + b`, or an error naming the operation where it overflows.
pub(crate) fn checked_add(op: &'static str, a: usize, b: usize) -> Result<usize, SparseError> {
    a.checked_add(b)
        .ok_or_else(|| SparseError::InvalidArgument {
            op,
            reason: format!("{a} + {b} overflows the address space"),
        })
}

/// `n` rounded up to a multiple of `m >= 1`, or an error where it overflows.
pub(crate) fn round_up(
    op: &'static str,
    what: &str,
    n: usize,
    m: usize,
) -> Result<usize, SparseError> {
    n.div_ceil(m)
        .checked_mul(m)
        .ok_or_else(|| SparseError::InvalidArgument {
            op,
            reason: format!("{what}: {n} rounded up to a multiple of {m} overflows"),
        })
}

/// Checks a CSR-style pointer array: `ptr[0] == 0`, non-decreasing, `ptr[last] == total`.
pub(crate) fn check_ptr(
    op: &'static str,
    what: &'static str,
    ptr: &[usize],
    rows: usize,
    total: usize,
    total_what: &'static str,
) -> Result<(), SparseError> {
    check_len(op, what, rows + 1, ptr.len())?;
    if ptr[0] != 0 {
        return Err(SparseError::InvalidStructure {
            op,
            what,
            position: 0,
            reason: format!("the first offset is {}, must be 0", ptr[0]),
        });
    }
    for (i, w) in ptr.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(SparseError::InvalidStructure {
                op,
                what,
                position: i + 1,
                reason: format!("offset {} is less than the previous {}", w[1], w[0]),
            });
        }
    }
    if ptr[rows] != total {
        return Err(SparseError::InvalidStructure {
            op,
            what,
            position: rows,
            reason: format!(
                "the last offset is {}, but {total_what} has {total} entries",
                ptr[rows]
            ),
        });
    }
    Ok(())
}

/// Checks that each row's indices `idx[ptr[i]..ptr[i+1]]` are `< bound` and strictly
/// increasing.
pub(crate) fn check_rows_sorted(
    op: &'static str,
    what: &'static str,
    ptr: &[usize],
    idx: &[Index],
    bound: usize,
) -> Result<(), SparseError> {
    for w in ptr.windows(2) {
        let end = w[1].min(idx.len());
        let start = w[0].min(end);
        pattern::check_increasing(op, what, &idx[start..end], start, bound, |c, p| {
            format!(
                "index {c} does not increase over the previous {p} in its row (rows must be sorted, without duplicates)"
            )
        })?;
    }
    Ok(())
}
