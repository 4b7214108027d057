//! The storage format chosen from the matrix: [`Matrix`] (CPU) and
//! [`super::gpu::DeviceMatrix`] (GPU) take a [`Csr`] and a [`Format`]; with
//! [`Format::Auto`] the structure decides, and a [`FormatChoice`] says what was chosen
//! and why.
//!
//! # The rules of `Format::Auto`
//! SpMV moves every stored byte once per product and little else, so the choice compares
//! the bytes each format stores (values, indices, offsets; padding and in-block zeros
//! included):
//!
//! 1. **Block size**: the one given ([`FormatOptions::block_size`]), or the `b` in `2..=8`
//!    dividing both dimensions whose BCSR stores the fewest bytes (none: no blocks).
//! 2. **Blocks** where they pay: `b >= 2` and BCSR with `b x b` blocks stores no more
//!    bytes than CSR (its zeros inside blocks cost less than the column indices they
//!    save: blocks at least about 70 % full for `f64`, 52 % for `f32`, 81 % for
//!    `Complex<f64>`). Then on the GPU: SBELL (no empty block rows, no in-block zeros
//!    that every block of a slot shares, coalesced slices; the fastest kernel on block
//!    matrices) where `b <= 8`, unless it would read more bytes per product than BCSR or
//!    its slices, padded to their longest row, would store more than twice BCSR's bytes;
//!    else BCSR. On the CPU: BCSR (its `5 x 5` kernel is the CPU's fastest on block
//!    matrices).
//! 3. **No blocks**: on the GPU, ELL where its padding to the longest row leaves it no
//!    larger than CSR (rows of nearly equal length), else CSR ([`super::gpu::DeviceCsr`],
//!    any structure); on the CPU, CSR.
//!
//! An explicit format is built as asked (a blocked one with the given or detected block
//! size), or the conversion's error is returned.
//!
//! ```
//! use ferrocuda::sparse::{Csr, Format, Matrix, generate};
//! // A block-stencil matrix (5 x 5 blocks) and a tridiagonal one.
//! let spec = generate::TraceSpec::new(2, 3, 2, 1);
//! let blocky: Csr<f64> = generate::trace_like(&spec)?.to_csr().without_zeros();
//! let m = Matrix::new(&blocky, Format::Auto)?;
//! assert_eq!((m.format(), m.choice().block_size), (Format::Bcsr, Some(5)));
//! let n = 100;
//! let mut coo = ferrocuda::sparse::Coo::empty(n, n)?;
//! for i in 0..n {
//!     coo.push(i, i, 2.0)?;
//!     if i + 1 < n { coo.push(i, i + 1, -1.0)?; coo.push(i + 1, i, -1.0)?; }
//! }
//! let m = Matrix::new(&Csr::from(&coo), Format::Auto)?;
//! assert_eq!(m.format(), Format::Csr);
//! println!("{}", m.choice().reason);
//! # Ok::<(), ferrocuda::sparse::SparseError>(())
//! ```

use std::fmt;

use serde::Serialize;

use super::{
    Bcsr, Bdia, BdiaOptions, Bell, BellOptions, BlockFit, BlockLayout, Csr, Element, Ell,
    EllOptions, Index, MatrixScalar, Sbell, SparseError, cpu, try_vec,
};

/// A storage format, or [`Format::Auto`] to let the matrix decide (rules in the
/// [module docs](self)). Parses from and prints as its lower-case name (`"sbell"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Format {
    /// Chosen from the structure.
    #[default]
    Auto,
    /// Compressed sparse rows ([`Csr`]).
    Csr,
    /// ELLPACK, rows padded to the longest ([`Ell`]).
    Ell,
    /// Block CSR ([`Bcsr`]).
    Bcsr,
    /// Blocked ELL ([`Bell`]).
    Bell,
    /// Sliced masked BELL ([`Sbell`], block size at most 8).
    Sbell,
    /// Block stencil ([`Bdia`]: a few block diagonals).
    Bdia,
}

impl Format {
    /// Every format, `Auto` first.
    pub const ALL: [Format; 7] = [
        Format::Auto,
        Format::Csr,
        Format::Ell,
        Format::Bcsr,
        Format::Bell,
        Format::Sbell,
        Format::Bdia,
    ];

    /// The lower-case name (`"auto"`, `"csr"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Csr => "csr",
            Format::Ell => "ell",
            Format::Bcsr => "bcsr",
            Format::Bell => "bell",
            Format::Sbell => "sbell",
            Format::Bdia => "bdia",
        }
    }

    /// Whether the format stores `b x b` blocks.
    pub fn is_blocked(self) -> bool {
        matches!(
            self,
            Format::Bcsr | Format::Bell | Format::Sbell | Format::Bdia
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = SparseError;

    /// Parses a name of [`Format::name`] (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, SparseError> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| SparseError::InvalidArgument {
                op: "Format::from_str",
                reason: format!(
                    "unknown format {s:?} (one of {})",
                    Format::ALL.map(Format::name).join(", ")
                ),
            })
    }
}

/// Where the matrix will multiply: the choice of [`Format::Auto`] differs (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// The rayon CPU path ([`cpu`]).
    Cpu,
    /// The GPU kernels ([`super::gpu`]).
    Gpu,
}

/// Options of the format choice and of the conversions it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatOptions {
    /// Block size of the blocked formats; `None` (default): detected (module docs).
    pub block_size: Option<usize>,
    /// Layout of BCSR blocks (default row-major).
    pub layout: BlockLayout,
    /// What to do where a dimension is not a multiple of the block size: with
    /// [`BlockFit::Exact`] (default) `Auto` keeps away from blocks and an explicit blocked
    /// format is an error; with [`BlockFit::Pad`] the matrix is padded with zero rows and
    /// columns (products then need padded vectors; to solve, pad with the identity first:
    /// [`Csr::pad_identity`]).
    pub fit: BlockFit,
}

impl Default for FormatOptions {
    fn default() -> Self {
        Self {
            block_size: None,
            layout: BlockLayout::RowMajor,
            fit: BlockFit::Exact,
        }
    }
}

impl FormatOptions {
    /// Sets [`FormatOptions::block_size`].
    pub fn block_size(mut self, b: usize) -> Self {
        self.block_size = Some(b);
        self
    }
    setters! {
        /// Sets [`FormatOptions::layout`].
        layout: BlockLayout;
        /// Sets [`FormatOptions::fit`].
        fit: BlockFit;
    }
}

/// One format the choice weighed, with the bytes it would store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The format.
    pub format: Format,
    /// Its block size (blocked formats).
    pub block_size: Option<usize>,
    /// Bytes of values, indices and offsets.
    pub stored_bytes: u128,
}

/// What [`Matrix`] / [`super::gpu::DeviceMatrix`] chose and why (`Serialize` for JSON
/// reports).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FormatChoice {
    /// What was asked for.
    pub requested: Format,
    /// CPU or GPU.
    pub target: Target,
    /// The format built.
    pub format: Format,
    /// Its block size (blocked formats).
    pub block_size: Option<usize>,
    /// Rows of the matrix built (the input's, or padded to whole blocks with
    /// [`BlockFit::Pad`]).
    pub n_rows: usize,
    /// Columns of the matrix built.
    pub n_cols: usize,
    /// Entries of the input whose value is not zero.
    pub nonzeros: usize,
    /// Values the format stores (padding, zeros inside blocks and stored zeros included).
    pub stored_values: usize,
    /// Bytes the format stores: values, indices and offsets (a device copy adds the list
    /// of empty block rows of SBELL and BDIA).
    pub stored_bytes: usize,
    /// Bytes one product reads from the matrix ([`Storage::read_bytes`]).
    pub read_bytes: usize,
    /// `nonzeros / stored_values` (1: nothing but nonzeros stored).
    pub fill: f64,
    /// The reason, in words, with the numbers.
    pub reason: String,
    /// The formats weighed (`Auto`), with their bytes.
    pub candidates: Vec<Candidate>,
}

/// A matrix in the storage [`Format`] its [`FormatChoice`] names, for the CPU (or as the
/// host side of [`super::gpu::DeviceMatrix::from_matrix`]).
#[derive(Debug, Clone)]
pub struct Matrix<T> {
    storage: Storage<T>,
    choice: FormatChoice,
}

/// The arrays of a [`Matrix`], in one of the formats.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Storage<T> {
    /// [`Format::Csr`].
    Csr(Csr<T>),
    /// [`Format::Ell`].
    Ell(Ell<T>),
    /// [`Format::Bcsr`].
    Bcsr(Bcsr<T>),
    /// [`Format::Bell`].
    Bell(Bell<T>),
    /// [`Format::Sbell`].
    Sbell(Sbell<T>),
    /// [`Format::Bdia`].
    Bdia(Bdia<T>),
}

impl<T: Element> Storage<T> {
    /// The format.
    pub fn format(&self) -> Format {
        match self {
            Storage::Csr(_) => Format::Csr,
            Storage::Ell(_) => Format::Ell,
            Storage::Bcsr(_) => Format::Bcsr,
            Storage::Bell(_) => Format::Bell,
            Storage::Sbell(_) => Format::Sbell,
            Storage::Bdia(_) => Format::Bdia,
        }
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        match self {
            Storage::Csr(a) => a.n_rows(),
            Storage::Ell(a) => a.n_rows(),
            Storage::Bcsr(a) => a.n_rows(),
            Storage::Bell(a) => a.n_rows(),
            Storage::Sbell(a) => a.n_rows(),
            Storage::Bdia(a) => a.n_rows(),
        }
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        match self {
            Storage::Csr(a) => a.n_cols(),
            Storage::Ell(a) => a.n_cols(),
            Storage::Bcsr(a) => a.n_cols(),
            Storage::Bell(a) => a.n_cols(),
            Storage::Sbell(a) => a.n_cols(),
            Storage::Bdia(a) => a.n_cols(),
        }
    }

    /// Values stored (padding included).
    pub fn stored_values(&self) -> usize {
        match self {
            Storage::Csr(a) => a.values().len(),
            Storage::Ell(a) => a.values().len(),
            Storage::Bcsr(a) => a.values().len(),
            Storage::Bell(a) => a.values().len(),
            Storage::Sbell(a) => a.values().len(),
            Storage::Bdia(a) => a.values().len(),
        }
    }

    /// Bytes of the values, indices and offsets.
    pub fn stored_bytes(&self) -> usize {
        let (us, ix, u8b) = (size_of::<usize>(), size_of::<Index>(), size_of::<u64>());
        let index_bytes = match self {
            Storage::Csr(a) => a.row_ptr().len() * us + a.col_idx().len() * ix,
            Storage::Ell(a) => (a.col_idx().len() + a.row_len().len()) * ix,
            Storage::Bcsr(a) => a.row_ptr().len() * us + a.col_idx().len() * ix,
            Storage::Bell(a) => (a.block_col().len() + a.row_len().len()) * ix,
            Storage::Sbell(a) => {
                (a.row_index().len() + a.row_len().len() + a.block_col().len()) * ix
                    + a.masks().len() * u8b
                    + (a.slice_col_ptr().len() + a.slice_val_ptr().len()) * us
            }
            Storage::Bdia(a) => size_of_val(a.offsets()) + a.row_index().len() * ix,
        };
        index_bytes + self.stored_values() * size_of::<T>()
    }

    /// Bytes one product reads from the matrix: its stored bytes less what the kernels
    /// skip (ELL and BELL padding slots past a row's length, SBELL slots past a row's
    /// length, BDIA diagonals outside the matrix).
    pub fn read_bytes(&self) -> usize {
        let (us, ix, v) = (size_of::<usize>(), size_of::<Index>(), size_of::<T>());
        match self {
            Storage::Csr(_) | Storage::Bcsr(_) => self.stored_bytes(),
            Storage::Ell(a) => a.nnz() * (ix + v) + a.row_len().len() * ix,
            Storage::Bell(a) => {
                let blocks: usize = a.row_len().iter().map(|&l| l as usize).sum();
                blocks * (ix + a.b() * a.b() * v) + a.row_len().len() * ix
            }
            Storage::Sbell(a) => {
                a.entries_read() * v
                    + a.blocks() * ix
                    + a.n_stored() * 2 * ix
                    + size_of_val(a.masks())
                    + (a.slice_col_ptr().len() + a.slice_val_ptr().len()) * us
            }
            Storage::Bdia(a) => {
                let in_range: usize = a
                    .row_index()
                    .iter()
                    .map(|&r| {
                        (0..a.offsets().len())
                            .filter(|&d| a.block_col(r as usize, d).is_some())
                            .count()
                    })
                    .sum();
                in_range * a.b() * a.b() * v + size_of_val(a.offsets()) + a.row_index().len() * ix
            }
        }
    }
}

impl<T: Element> Matrix<T> {
    /// `a` in `format` for the CPU ([`Format::Auto`]: chosen by the rules of the
    /// [module docs](self)). Errors: a conversion's error (an explicit blocked format
    /// whose block size does not divide the dimensions, `b > 8` for SBELL, a matrix BDIA
    /// cannot hold, sizes beyond what the host may allocate).
    pub fn new(a: &Csr<T>, format: Format) -> Result<Self, SparseError> {
        Self::with_options(a, format, Target::Cpu, &FormatOptions::default())
    }

    /// [`Matrix::new`] for `target` with options (block size, layout, padding).
    pub fn with_options(
        a: &Csr<T>,
        format: Format,
        target: Target,
        opts: &FormatOptions,
    ) -> Result<Self, SparseError> {
        build(a, format, target, opts)
    }

    /// What was chosen and why.
    pub fn choice(&self) -> &FormatChoice {
        &self.choice
    }

    /// The format built.
    pub fn format(&self) -> Format {
        self.storage.format()
    }

    /// The arrays.
    pub fn storage(&self) -> &Storage<T> {
        &self.storage
    }

    /// Gives up the arrays.
    pub fn into_storage(self) -> Storage<T> {
        self.storage
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.storage.n_rows()
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.storage.n_cols()
    }

    /// `y <- alpha A x + beta y` on the CPU, by the format's [`cpu`] product.
    pub fn spmv<V: Element>(
        &self,
        alpha: V,
        x: &[V],
        beta: V,
        y: &mut [V],
    ) -> Result<(), SparseError>
    where
        T: MatrixScalar<V>,
    {
        match &self.storage {
            Storage::Csr(a) => cpu::spmv_csr(alpha, a, x, beta, y),
            Storage::Ell(a) => cpu::spmv_ell(alpha, a, x, beta, y),
            Storage::Bcsr(a) => cpu::spmv_bcsr(alpha, a, x, beta, y),
            Storage::Bell(a) => cpu::spmv_bell(alpha, a, x, beta, y),
            Storage::Sbell(a) => cpu::spmv_sbell(alpha, a, x, beta, y),
            Storage::Bdia(a) => cpu::spmv_bdia(alpha, a, x, beta, y),
        }
    }
}

/// Bytes per stored entry of `s`-byte values, for messages.
fn per_entry(bytes: u128, entries: usize) -> f64 {
    bytes as f64 / entries.max(1) as f64
}

/// Bytes of CSR: offsets, column indices, values.
fn csr_bytes(n_rows: usize, nnz: usize, value: usize) -> u128 {
    (n_rows as u128 + 1) * size_of::<usize>() as u128
        + nnz as u128 * (size_of::<Index>() + value) as u128
}

/// Stored blocks of `a` with `b x b` blocks (tiles holding at least one stored entry).
fn count_blocks<T: Element>(a: &Csr<T>, b: usize) -> Result<usize, SparseError> {
    let nbc = a.n_cols().div_ceil(b);
    let what = format!("counting the {b} x {b} blocks of {nbc} block columns");
    let mut last = try_vec(&what, nbc, usize::MAX)?;
    let mut count = 0;
    for bi in 0..a.n_rows().div_ceil(b) {
        for i in bi * b..((bi + 1) * b).min(a.n_rows()) {
            for &c in a.row(i).0 {
                let bj = c as usize / b;
                if last[bj] != bi {
                    last[bj] = bi;
                    count += 1;
                }
            }
        }
    }
    Ok(count)
}

/// Bytes of BCSR with `nnzb` blocks of `b x b`.
fn bcsr_bytes(n_block_rows: usize, nnzb: usize, b: usize, value: usize) -> u128 {
    (n_block_rows as u128 + 1) * size_of::<usize>() as u128
        + nnzb as u128 * (size_of::<Index>() as u128 + (b * b * value) as u128)
}

/// The structure the choice looks at, computed once.
struct Survey {
    nonzeros: usize,
    /// Nonzeros of the longest row (ELL's width) and of the shortest.
    max_row: usize,
    min_row: usize,
    /// ELL's bytes: slots padded to the longest row, rows to a multiple of 32.
    ell_bytes: u128,
    csr_bytes: u128,
}

fn survey<T: Element>(a: &Csr<T>) -> Survey {
    let value = size_of::<T>();
    let (mut nonzeros, mut max_row, mut min_row) = (0, 0, usize::MAX);
    for i in 0..a.n_rows() {
        let n = a.row(i).1.iter().filter(|&&v| v != T::ZERO).count();
        nonzeros += n;
        max_row = max_row.max(n);
        min_row = min_row.min(n);
    }
    let rows_pad = a.n_rows().div_ceil(32) as u128 * 32;
    Survey {
        nonzeros,
        max_row,
        min_row: if a.n_rows() == 0 { 0 } else { min_row },
        ell_bytes: max_row as u128 * rows_pad * (size_of::<Index>() + value) as u128
            + a.n_rows() as u128 * size_of::<Index>() as u128,
        csr_bytes: csr_bytes(a.n_rows(), a.nnz(), value),
    }
}

/// A block size and its BCSR bytes.
#[derive(Clone, Copy)]
struct Blocks {
    b: usize,
    bytes: u128,
    /// Structural entries over stored block values.
    fill: f64,
    detected: bool,
}

/// The given block size, or the best dividing one in `2..=8`; `None` where there is none.
fn block_size<T: Element>(a: &Csr<T>, opts: &FormatOptions) -> Result<Option<Blocks>, SparseError> {
    let value = size_of::<T>();
    let measure = |b: usize, detected: bool| -> Result<Blocks, SparseError> {
        let nnzb = count_blocks(a, b)?;
        Ok(Blocks {
            b,
            bytes: bcsr_bytes(a.n_rows().div_ceil(b), nnzb, b, value),
            fill: a.nnz() as f64 / (nnzb as f64 * (b * b) as f64).max(1.0),
            detected,
        })
    };
    if let Some(b) = opts.block_size {
        if b == 0 {
            return Err(SparseError::InvalidArgument {
                op: "Format::Auto",
                reason: "block size b = 0 (must be at least 1)".into(),
            });
        }
        return measure(b, false).map(Some);
    }
    let mut best: Option<Blocks> = None;
    for b in 2..=8 {
        if !a.n_rows().is_multiple_of(b) || !a.n_cols().is_multiple_of(b) {
            continue;
        }
        let c = measure(b, true)?;
        // Fewest bytes; on a tie the larger block (fewer indices to read).
        if best.is_none_or(|x| c.bytes <= x.bytes) {
            best = Some(c);
        }
    }
    Ok(best)
}

/// Whether `b` fits both dimensions (or padding is allowed).
fn fits<T: Element>(a: &Csr<T>, b: usize, fit: BlockFit) -> bool {
    fit == BlockFit::Pad || (a.n_rows().is_multiple_of(b) && a.n_cols().is_multiple_of(b))
}

/// Where the choice lands before the conversion, with the reason so far.
struct Plan {
    format: Format,
    b: Option<usize>,
    reason: String,
    candidates: Vec<Candidate>,
}

fn plan<T: Element>(
    a: &Csr<T>,
    requested: Format,
    target: Target,
    opts: &FormatOptions,
    s: &Survey,
) -> Result<Plan, SparseError> {
    let blocks = block_size(a, opts)?;
    let mut candidates = vec![Candidate {
        format: Format::Csr,
        block_size: None,
        stored_bytes: s.csr_bytes,
    }];
    if let Some(k) = blocks {
        candidates.push(Candidate {
            format: Format::Bcsr,
            block_size: Some(k.b),
            stored_bytes: k.bytes,
        });
    }
    if target == Target::Gpu {
        candidates.push(Candidate {
            format: Format::Ell,
            block_size: None,
            stored_bytes: s.ell_bytes,
        });
    }
    if requested != Format::Auto {
        let b = if requested.is_blocked() {
            let Some(k) = blocks else {
                return Err(SparseError::InvalidArgument {
                    op: "Format",
                    reason: format!(
                        "{requested} needs a block size and none of 2..=8 divides the {} x {} matrix (give FormatOptions::block_size)",
                        a.n_rows(),
                        a.n_cols()
                    ),
                });
            };
            Some(k.b)
        } else {
            None
        };
        return Ok(Plan {
            format: requested,
            b,
            reason: format!("{requested} as requested"),
            candidates,
        });
    }
    let csr = s.csr_bytes;
    let bytes_note = |k: &Blocks| {
        format!(
            "{b} x {b} blocks ({how}) are {fill:.1} % full and store {per:.2} B per entry against CSR's {csr_per:.2} B",
            b = k.b,
            how = if k.detected {
                "detected: the fewest bytes of the block sizes 2..=8 that divide the dimensions"
            } else {
                "given"
            },
            fill = 100.0 * k.fill,
            per = per_entry(k.bytes, a.nnz()),
            csr_per = per_entry(csr, a.nnz()),
        )
    };
    let blocked =
        blocks.filter(|k| k.b >= 2 && a.nnz() > 0 && k.bytes <= csr && fits(a, k.b, opts.fit));
    if let Some(k) = blocked {
        let (format, which) = match target {
            Target::Gpu if k.b <= super::sbell::MAX_B => {
                (Format::Sbell, "SBELL, the GPU's block format")
            }
            Target::Gpu => (Format::Bcsr, "BCSR (SBELL takes blocks of at most 8 x 8)"),
            Target::Cpu => (Format::Bcsr, "BCSR, the CPU's block format"),
        };
        return Ok(Plan {
            format,
            b: Some(k.b),
            reason: format!("{}: {which}", bytes_note(&k)),
            candidates,
        });
    }
    let why_not_blocks = match blocks {
        None if a.nnz() == 0 => "no stored entries".to_string(),
        None => format!(
            "no block size: none of 2..=8 divides the {} x {} matrix",
            a.n_rows(),
            a.n_cols()
        ),
        Some(k) if k.b < 2 => format!("block size {} is no block", k.b),
        Some(k) if !fits(a, k.b, opts.fit) => format!(
            "block size {} does not divide the {} x {} matrix (pad it: Csr::pad_identity to solve, BlockFit::Pad for products)",
            k.b,
            a.n_rows(),
            a.n_cols()
        ),
        Some(k) if a.nnz() == 0 => format!("block size {}: no stored entries", k.b),
        Some(k) => format!("{}, more than CSR: blocks do not pay", bytes_note(&k)),
    };
    let rows = format!(
        "rows hold {} to {} nonzeros (mean {:.1})",
        s.min_row,
        s.max_row,
        s.nonzeros as f64 / a.n_rows().max(1) as f64
    );
    let (format, tail) = match target {
        Target::Gpu if a.nnz() > 0 && s.ell_bytes <= csr => (
            Format::Ell,
            format!(
                "{rows}: ELL, padded to the longest row, stores {:.2}x CSR's bytes",
                s.ell_bytes as f64 / csr as f64
            ),
        ),
        Target::Gpu => (
            Format::Csr,
            format!(
                "{rows}: ELL would store {:.2}x CSR's bytes; CSR with {} threads per row",
                s.ell_bytes as f64 / csr.max(1) as f64,
                ferrocuda_kernels::spmv::csr_lanes(a.nnz(), a.n_rows())
            ),
        ),
        Target::Cpu => (Format::Csr, format!("{rows}: CSR")),
    };
    Ok(Plan {
        format,
        b: None,
        reason: format!("{why_not_blocks}; {tail}"),
        candidates,
    })
}

/// Chooses and converts (the body of [`Matrix::with_options`]).
fn build<T: Element>(
    a: &Csr<T>,
    requested: Format,
    target: Target,
    opts: &FormatOptions,
) -> Result<Matrix<T>, SparseError> {
    let s = survey(a);
    let mut p = plan(a, requested, target, opts, &s)?;
    let bcsr = |b: usize| Bcsr::from_csr(a, b, opts.layout, opts.fit);
    let storage = match (p.format, p.b) {
        (Format::Csr, _) => Storage::Csr(a.clone()),
        (Format::Ell, _) => Storage::Ell(Ell::from_csr(a, &EllOptions::default())?),
        (Format::Bcsr, Some(b)) => Storage::Bcsr(bcsr(b)?),
        (Format::Bell, Some(b)) => {
            Storage::Bell(Bell::from_bcsr(&bcsr(b)?, &BellOptions::default())?)
        }
        (Format::Bdia, Some(b)) => {
            Storage::Bdia(Bdia::from_bcsr(&bcsr(b)?, &BdiaOptions::default())?)
        }
        (Format::Sbell, Some(b)) => {
            let blocks = bcsr(b)?;
            let sbell = Sbell::from_bcsr(&blocks)?;
            let (sb, bb) = (Storage::Sbell(sbell), Storage::Bcsr(blocks));
            let (s_bytes, b_bytes) = (sb.stored_bytes(), bb.stored_bytes());
            let (s_read, b_read) = (sb.read_bytes(), bb.read_bytes());
            p.candidates.push(Candidate {
                format: Format::Sbell,
                block_size: Some(b),
                stored_bytes: s_bytes as u128,
            });
            let worse = if s_read > b_read {
                Some(format!(
                    "SBELL would read {s_read} bytes per product, more than BCSR's {b_read}"
                ))
            } else if s_bytes / 2 > b_bytes {
                Some(format!(
                    "SBELL's slices, padded to their longest row, would store {s_bytes} bytes, more than twice BCSR's {b_bytes}"
                ))
            } else {
                None
            };
            match worse {
                Some(why) if requested == Format::Auto => {
                    p.format = Format::Bcsr;
                    p.reason = format!("{}; but {why}: BCSR", p.reason);
                    bb
                }
                _ => {
                    if requested == Format::Auto {
                        p.reason = format!(
                            "{} (reads {s_read} bytes per product against BCSR's {b_read})",
                            p.reason
                        );
                    }
                    sb
                }
            }
        }
        (format, _) => {
            // `plan` gives every blocked format its block size and never returns Auto.
            return Err(SparseError::InvalidArgument {
                op: "Format::Auto",
                reason: format!("no conversion to {format} without a block size"),
            });
        }
    };
    let stored_values = storage.stored_values();
    let choice = FormatChoice {
        requested,
        target,
        format: storage.format(),
        block_size: p.b.filter(|_| storage.format().is_blocked()),
        n_rows: storage.n_rows(),
        n_cols: storage.n_cols(),
        nonzeros: s.nonzeros,
        stored_values,
        stored_bytes: storage.stored_bytes(),
        read_bytes: storage.read_bytes(),
        fill: if stored_values == 0 {
            1.0
        } else {
            s.nonzeros as f64 / stored_values as f64
        },
        reason: p.reason,
        candidates: p.candidates,
    };
    Ok(Matrix { storage, choice })
}
