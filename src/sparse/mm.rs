//! Matrix Market I/O (<https://math.nist.gov/MatrixMarket/formats.html>).
//!
//! Reads `coordinate` matrices with field `real`, `double`, `integer`, `complex` or
//! `pattern` (every entry 1) and symmetry `general`, `symmetric`, `skew-symmetric` or
//! `hermitian` (the other triangle is generated: mirrored, negated, or conjugated), and
//! `array` files (`general`, column-major) for dense vectors and matrices. Writes
//! `coordinate ... general` and `array ... general`.
//!
//! # Reading once, from a stream
//! Every reader makes one pass over a [`BufRead`] and never reopens or rewinds it, so
//! pipes, `/dev/stdin` and process substitution work. [`read`] takes whatever object a
//! file holds ([`MmObject`]: coordinate or array, real or complex) and lets the caller
//! decide afterwards ([`MmObject::is_complex`], [`MmObject::into_csr`],
//! [`MmObject::into_array`], [`MmObject::into_dense`], ...); [`read_coo`], [`read_csr`] and
//! [`read_dense`] read one kind into a given scalar type.
//!
//! # What is accepted
//! * **Duplicates**: repeated positions are kept as separate triplets in the [`Coo`] and
//!   summed by every converter and by SpMV. The size line may still announce at most one
//!   entry per position (below).
//! * **NaN / infinity**: accepted (`nan`, `inf`, any case); how they propagate through
//!   SpMV is in [`super::cpu`].
//! * **Empty matrices** (`0 0 0`, or `m n 0`) are valid.
//! * A `complex` file cannot be read into a real type (error); real files read into
//!   complex types get zero imaginary parts.
//! * **Symmetric, skew-symmetric and Hermitian files list one triangle**: every entry
//!   `(i, j)` with `i != j` stands for itself and its mirror `(j, i)` (`a_ji = a_ij`,
//!   `-a_ij`, `conj(a_ij)`). The lower triangle (`i > j`) is the Matrix Market convention;
//!   a file listing only the upper one is accepted and mirrored the same way. A file with
//!   entries in both triangles is refused, naming the first entry of each (it would
//!   count a pair listed as `(i, j)` and `(j, i)` twice). A skew-symmetric file lists no
//!   diagonal entry (its diagonal is zero); a Hermitian file's diagonal entries are real.
//!
//! # Limits, checked before anything is allocated
//! * A line is at most [`MAX_LINE_BYTES`] bytes; a NUL byte, another control character
//!   (other than tab, vertical tab, form feed and carriage return) or invalid UTF-8
//!   outside a comment is refused as binary data: a Matrix Market file is text (so
//!   `/dev/zero` or a compressed file is an error at line 1, not an endless read).
//! * Rows and columns at most `u32::MAX` (the [`Index`] type).
//! * A coordinate file announces at most `rows x cols` entries (`n (n + 1) / 2` for a
//!   symmetric or Hermitian, `n (n - 1) / 2` for a skew-symmetric `n x n` file), and the
//!   memory of the announced entries (or of an array's `rows x cols` values) must fit what
//!   this process may allocate ([`crate::alloc`]); storage then grows with the entries
//!   actually read, so a short file that announces much costs nothing.
//! * The number of entries is checked against the size line: an extra entry names its
//!   line, a missing one the end of the file.
//!
//! Every error names the 1-based line and what is wrong there ([`SparseError::Parse`]),
//! or the bytes a too-large size needs ([`SparseError::OutOfHostMemory`]).

use std::any::Any;
use std::fmt;
use std::io::{BufRead, Read, Write};
use std::num::IntErrorKind;
use std::path::Path;

use super::{
    Coo, CooParts, Csr, Element, Index, SparseError, check_host_bytes, grow_for_push,
    storage_bytes, try_vec, try_with_capacity,
};
use crate::{Complex, RealScalar};

/// The longest line accepted, in bytes (1 MiB: a Matrix Market entry is under 100 bytes,
/// comments rarely above a few hundred; the bound stops an endless line such as
/// `/dev/zero`'s before it exhausts memory).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// `coordinate` (sparse) or `array` (dense).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmFormat {
    /// Triplets.
    Coordinate,
    /// Dense, column-major.
    Array,
}

/// The value type of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmField {
    /// Real numbers (`real` or `double`).
    Real,
    /// Integers.
    Integer,
    /// Two numbers per entry.
    Complex,
    /// No values (every entry 1).
    Pattern,
}

/// The symmetry of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmSymmetry {
    /// Every entry stored.
    General,
    /// `a_ji = a_ij`, one triangle stored.
    Symmetric,
    /// `a_ji = -a_ij`.
    SkewSymmetric,
    /// `a_ji = conj(a_ij)`.
    Hermitian,
}

/// The banner line of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmHeader {
    /// Coordinate or array.
    pub format: MmFormat,
    /// Value type.
    pub field: MmField,
    /// Symmetry.
    pub symmetry: MmSymmetry,
}

impl fmt::Display for MmFormat {
    /// The banner's word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmFormat::Coordinate => "coordinate",
            MmFormat::Array => "array",
        })
    }
}

impl fmt::Display for MmField {
    /// The banner's word (`real` for `double` too).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmField::Real => "real",
            MmField::Integer => "integer",
            MmField::Complex => "complex",
            MmField::Pattern => "pattern",
        })
    }
}

impl fmt::Display for MmSymmetry {
    /// The banner's word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmSymmetry::General => "general",
            MmSymmetry::Symmetric => "symmetric",
            MmSymmetry::SkewSymmetric => "skew-symmetric",
            MmSymmetry::Hermitian => "hermitian",
        })
    }
}

/// A dense matrix or vector as an `array` file holds it: `n_rows x n_cols` values in
/// column-major order (a vector is `n x 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct MmArray<T> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// `n_rows * n_cols` values, column-major.
    pub values: Vec<T>,
}

/// The entries of a file in scalar type `T`: sparse triplets or a dense array.
#[derive(Debug, Clone, PartialEq)]
pub enum MmMatrix<T> {
    /// A `coordinate` file (symmetric kinds expanded, duplicates kept).
    Coordinate(Coo<T>),
    /// An `array` file.
    Array(MmArray<T>),
}

/// Whatever a Matrix Market file holds, as [`read`] found it: the banner and the entries,
/// in `f64` for `real`, `integer` and `pattern` files and in `Complex<f64>` for `complex`
/// ones. The `into_*` methods convert to what the caller needs (the scalar type with the
/// parser's own rounding, so the bits are those of reading the file into that type).
#[derive(Debug, Clone, PartialEq)]
pub struct MmObject {
    header: MmHeader,
    data: MmData,
}

#[derive(Debug, Clone, PartialEq)]
enum MmData {
    Real(MmMatrix<f64>),
    Complex(MmMatrix<Complex<f64>>),
}

impl MmObject {
    /// The banner.
    pub fn header(&self) -> MmHeader {
        self.header
    }

    /// Whether the file holds complex values (then only complex types can take them).
    pub fn is_complex(&self) -> bool {
        matches!(self.data, MmData::Complex(_))
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        fn of<T: Element>(m: &MmMatrix<T>) -> (usize, usize) {
            match m {
                MmMatrix::Coordinate(c) => (c.n_rows(), c.n_cols()),
                MmMatrix::Array(a) => (a.n_rows, a.n_cols),
            }
        }
        match &self.data {
            MmData::Real(m) => of(m),
            MmData::Complex(m) => of(m),
        }
    }

    /// The entries in scalar type `T`. Errors: a complex file into a real type.
    pub fn into_matrix<T: Element>(self) -> Result<MmMatrix<T>, SparseError> {
        match self.data {
            MmData::Real(m) => convert_matrix(m),
            MmData::Complex(m) => {
                check_field::<T>(MmField::Complex)?;
                convert_matrix(m)
            }
        }
    }

    /// The triplets of a `coordinate` file. Errors: an `array` file; a complex file into a
    /// real type.
    pub fn into_coo<T: Element>(self) -> Result<Coo<T>, SparseError> {
        expect_format(self.header, MmFormat::Coordinate)?;
        match self.into_matrix()? {
            MmMatrix::Coordinate(c) => Ok(c),
            MmMatrix::Array(_) => Err(format_error(MmFormat::Array, MmFormat::Coordinate)),
        }
    }

    /// [`MmObject::into_coo`] as CSR (duplicates summed; its memory checked first).
    pub fn into_csr<T: Element>(self) -> Result<Csr<T>, SparseError> {
        Csr::try_from_coo(&self.into_coo()?)
    }

    /// The values of an `array` file. Errors: a `coordinate` file; a complex file into a
    /// real type.
    pub fn into_array<T: Element>(self) -> Result<MmArray<T>, SparseError> {
        expect_format(self.header, MmFormat::Array)?;
        match self.into_matrix()? {
            MmMatrix::Array(a) => Ok(a),
            MmMatrix::Coordinate(_) => Err(format_error(MmFormat::Coordinate, MmFormat::Array)),
        }
    }

    /// The matrix as a dense column-major array, from either kind of file (a coordinate
    /// file's duplicates summed). Errors: a complex file into a real type; `rows x cols`
    /// values beyond what the host may allocate (checked before allocating).
    pub fn into_dense<T: Element>(self) -> Result<MmArray<T>, SparseError> {
        match self.into_matrix()? {
            MmMatrix::Array(a) => Ok(a),
            MmMatrix::Coordinate(c) => {
                let (r, n) = (c.n_rows(), c.n_cols());
                let what = format!(
                    "the dense {r} x {n} {} matrix of a coordinate file with {} entries",
                    T::SUFFIX,
                    c.nnz()
                );
                let len = r as u128 * n as u128;
                check_host_bytes(&what, storage_bytes(&[(len, size_of::<T>())]))?;
                // len fits usize: its bytes passed the check (at most isize::MAX).
                let mut values = try_vec(&what, len as usize, T::ZERO)?;
                for ((&i, &j), &v) in c.rows().iter().zip(c.cols()).zip(c.values()) {
                    let x = &mut values[i as usize + j as usize * r];
                    *x = *x + v;
                }
                Ok(MmArray {
                    n_rows: r,
                    n_cols: n,
                    values,
                })
            }
        }
    }
}

fn convert_matrix<S: Element, T: Element>(m: MmMatrix<S>) -> Result<MmMatrix<T>, SparseError> {
    Ok(match m {
        MmMatrix::Coordinate(c) => {
            let p = c.into_parts();
            MmMatrix::Coordinate(Coo::from_parts_trusted(CooParts {
                n_rows: p.n_rows,
                n_cols: p.n_cols,
                rows: p.rows,
                cols: p.cols,
                values: convert_values(p.values)?,
            }))
        }
        MmMatrix::Array(a) => MmMatrix::Array(MmArray {
            n_rows: a.n_rows,
            n_cols: a.n_cols,
            values: convert_values(a.values)?,
        }),
    })
}

/// `v` in scalar type `T` (moved where it already is, else converted as the parser would).
fn convert_values<S: Element, T: Element>(mut v: Vec<S>) -> Result<Vec<T>, SparseError> {
    if let Some(same) = (&mut v as &mut dyn Any).downcast_mut::<Vec<T>>() {
        return Ok(std::mem::take(same));
    }
    let what = format!("{} values converted to {}", v.len(), T::SUFFIX);
    let mut out = try_with_capacity(&what, v.len())?;
    out.extend(
        v.iter()
            .map(|x| value::<T>(x.re().to_f64(), x.im().to_f64())),
    );
    Ok(out)
}

fn perr(line: usize, reason: impl Into<String>) -> SparseError {
    SparseError::Parse {
        line,
        reason: reason.into(),
    }
}

fn io(op: &'static str) -> impl Fn(std::io::Error) -> SparseError {
    move |source| SparseError::Io { op, source }
}

/// A byte that no Matrix Market text holds: a control character other than tab, vertical
/// tab, form feed and carriage return.
fn is_binary(c: u8) -> bool {
    (c < 0x20 && !matches!(c, b'\t' | 0x0b | 0x0c | b'\r')) || c == 0x7f
}

/// The lines of a stream with their 1-based numbers, each bounded by [`MAX_LINE_BYTES`]
/// and checked to be text.
struct Lines<R> {
    reader: R,
    line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R) -> Self {
        Self {
            reader,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// Reads the next line (its terminator dropped) for [`Lines::text`]; `false` at the
    /// end of the stream.
    fn advance(&mut self) -> Result<bool, SparseError> {
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| perr(self.line + 1, format!("cannot read the line: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        let ended = self.buf.last() == Some(&b'\n');
        if ended {
            self.buf.pop();
        }
        if let Some(p) = self.buf.iter().position(|&c| is_binary(c)) {
            let gzip = self.line == 1 && self.buf.starts_with(&[0x1f, 0x8b]);
            return Err(perr(
                self.line,
                format!(
                    "byte {} is {:#04x}, a control character: binary data, not a Matrix Market text file{}",
                    p + 1,
                    self.buf[p],
                    if gzip {
                        " (gzip-compressed? decompress it first)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if !ended && self.buf.len() > MAX_LINE_BYTES {
            return Err(perr(
                self.line,
                format!(
                    "the line is longer than {MAX_LINE_BYTES} bytes (the longest accepted): not a Matrix Market file"
                ),
            ));
        }
        let comment =
            self.line > 1 && self.buf.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'%');
        if let Err(e) = std::str::from_utf8(&self.buf)
            && !comment
        {
            return Err(perr(
                self.line,
                format!(
                    "byte {} is not UTF-8 text: binary data, not a Matrix Market text file",
                    e.valid_up_to() + 1
                ),
            ));
        }
        Ok(true)
    }

    /// The line read last (UTF-8, checked by [`Lines::advance`]; a comment in another
    /// encoding, such as Latin-1, reads as blank).
    fn text(&self) -> &str {
        std::str::from_utf8(&self.buf).unwrap_or_default()
    }

    /// Advances to the next line that is neither blank nor a comment; `false` at the end.
    fn next_data(&mut self) -> Result<bool, SparseError> {
        while self.advance()? {
            let t = self.text().trim();
            if !t.is_empty() && !t.starts_with('%') {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Reads the banner (line 1).
fn open<R: BufRead>(reader: R) -> Result<(Lines<R>, MmHeader), SparseError> {
    let mut lines = Lines::new(reader);
    if !lines.advance()? {
        return Err(perr(0, "empty file: no %%MatrixMarket banner"));
    }
    let h = parse_header(1, lines.text())?;
    Ok((lines, h))
}

fn parse_header(line: usize, text: &str) -> Result<MmHeader, SparseError> {
    let tok: Vec<String> = text
        .split_whitespace()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    if tok.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(perr(
            line,
            format!("the banner must start with %%MatrixMarket, found {text:?}"),
        ));
    }
    if tok.len() != 5 || tok[1] != "matrix" {
        return Err(perr(
            line,
            format!(
                "malformed banner {text:?}: expected `%%MatrixMarket matrix <format> <field> <symmetry>`"
            ),
        ));
    }
    let format = match tok[2].as_str() {
        "coordinate" => MmFormat::Coordinate,
        "array" => MmFormat::Array,
        f => {
            return Err(perr(
                line,
                format!("unknown format {f:?} (coordinate or array)"),
            ));
        }
    };
    let field = match tok[3].as_str() {
        "real" | "double" => MmField::Real,
        "integer" => MmField::Integer,
        "complex" => MmField::Complex,
        "pattern" => MmField::Pattern,
        f => {
            return Err(perr(
                line,
                format!("unknown field {f:?} (real, integer, complex or pattern)"),
            ));
        }
    };
    let symmetry = match tok[4].as_str() {
        "general" => MmSymmetry::General,
        "symmetric" => MmSymmetry::Symmetric,
        "skew-symmetric" => MmSymmetry::SkewSymmetric,
        "hermitian" => MmSymmetry::Hermitian,
        s => {
            return Err(perr(
                line,
                format!("unknown symmetry {s:?} (general, symmetric, skew-symmetric or hermitian)"),
            ));
        }
    };
    if format == MmFormat::Array && field == MmField::Pattern {
        return Err(perr(line, "an array file cannot have field pattern"));
    }
    Ok(MmHeader {
        format,
        field,
        symmetry,
    })
}

/// The error for a file of the other kind than the caller expects.
fn format_error(found: MmFormat, expected: MmFormat) -> SparseError {
    let kind = |f: MmFormat| match f {
        MmFormat::Coordinate => "a sparse matrix",
        MmFormat::Array => "a dense matrix or vector",
    };
    perr(
        1,
        format!(
            "the banner says `{found}` ({}), but {} (`{expected}`) is expected here",
            kind(found),
            kind(expected)
        ),
    )
}

fn expect_format(h: MmHeader, expected: MmFormat) -> Result<(), SparseError> {
    if h.format == expected {
        Ok(())
    } else {
        Err(format_error(h.format, expected))
    }
}

fn check_field<T: Element>(field: MmField) -> Result<(), SparseError> {
    if field == MmField::Complex && !T::IS_COMPLEX {
        return Err(perr(
            1,
            format!(
                "the file holds complex values (field `complex`), but a real ({}) matrix is expected here",
                T::SUFFIX
            ),
        ));
    }
    Ok(())
}

/// A size of the size line: a non-negative integer (`what` names it).
fn parse_size(line: usize, what: &str, t: &str) -> Result<usize, SparseError> {
    match t.parse::<u64>() {
        Ok(v) => usize::try_from(v)
            .map_err(|_| perr(line, format!("{what} = {t} is too large for this machine"))),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Err(perr(
            line,
            format!("{what} = {t} is too large (more than {})", u64::MAX),
        )),
        Err(_) => Err(perr(
            line,
            format!("{what}: {t:?} is not a non-negative integer"),
        )),
    }
}

/// A 1-based row or column index in `1..=n`, returned 0-based.
fn parse_index(line: usize, what: &str, t: &str, n: usize) -> Result<Index, SparseError> {
    match t.parse::<u64>() {
        // v - 1 < n <= Index::MAX (checked on the size line).
        Ok(v) if v >= 1 && v <= n as u64 => Ok((v - 1) as Index),
        Ok(_) => Err(perr(
            line,
            format!("{what} index {t} is out of range 1..={n}"),
        )),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Err(perr(
            line,
            format!("{what} index {t} is out of range 1..={n}"),
        )),
        Err(_) => Err(perr(
            line,
            format!("{what} index: {t:?} is not a positive integer"),
        )),
    }
}

fn parse_f64(line: usize, what: &str, t: &str) -> Result<f64, SparseError> {
    t.parse::<f64>()
        .map_err(|_| perr(line, format!("{what}: {t:?} is not a number")))
}

fn value<T: Element>(re: f64, im: f64) -> T {
    T::from_parts(
        <T::Real as RealScalar>::from_f64(re),
        <T::Real as RealScalar>::from_f64(im),
    )
}

/// The value tokens of one entry as `(re, im)` (a pattern entry is 1).
fn parse_parts(line: usize, field: MmField, tok: &[&str]) -> Result<(f64, f64), SparseError> {
    let want = match field {
        MmField::Pattern => 0,
        MmField::Real | MmField::Integer => 1,
        MmField::Complex => 2,
    };
    if tok.len() != want {
        return Err(perr(
            line,
            format!(
                "an entry of a `{field}` file has {want} value(s), found {}: {:?}",
                tok.len(),
                tok.join(" ")
            ),
        ));
    }
    Ok(match field {
        MmField::Pattern => (1.0, 0.0),
        MmField::Real => (parse_f64(line, "value", tok[0])?, 0.0),
        MmField::Integer => {
            let v = tok[0].parse::<i64>().map_err(|_| {
                perr(
                    line,
                    format!("value: {:?} is not an integer (64-bit)", tok[0]),
                )
            })?;
            (v as f64, 0.0)
        }
        MmField::Complex => (
            parse_f64(line, "real part", tok[0])?,
            parse_f64(line, "imaginary part", tok[1])?,
        ),
    })
}

/// Reads the size line: `names.len()` sizes. Returns its line number and the sizes.
fn size_line<R: BufRead, const N: usize>(
    lines: &mut Lines<R>,
    names: [&str; N],
) -> Result<(usize, [usize; N]), SparseError> {
    let form = format!("`{}`", names.join(" "));
    if !lines.next_data()? {
        return Err(perr(
            lines.line,
            format!("end of file before the size line {form}"),
        ));
    }
    let sl = lines.line;
    let tok: Vec<&str> = lines.text().split_whitespace().collect();
    if tok.len() != N {
        return Err(perr(
            sl,
            format!(
                "the size line must be {form}, found {:?}",
                lines.text().trim()
            ),
        ));
    }
    let mut sizes = [0usize; N];
    for ((s, t), name) in sizes.iter_mut().zip(&tok).zip(names) {
        *s = parse_size(sl, name, t)?;
    }
    Ok((sl, sizes))
}

/// Triplet arrays that grow (fallibly) with the entries read.
struct Triplets<T> {
    what: String,
    rows: Vec<Index>,
    cols: Vec<Index>,
    values: Vec<T>,
}

impl<T> Triplets<T> {
    fn push(&mut self, r: Index, c: Index, v: T) -> Result<(), SparseError> {
        grow_for_push(&self.what, &mut self.rows)?;
        grow_for_push(&self.what, &mut self.cols)?;
        grow_for_push(&self.what, &mut self.values)?;
        self.rows.push(r);
        self.cols.push(c);
        self.values.push(v);
        Ok(())
    }
}

/// The body of a `coordinate` file (after the banner `h`).
fn read_coordinate<T: Element, R: BufRead>(
    lines: &mut Lines<R>,
    h: MmHeader,
) -> Result<Coo<T>, SparseError> {
    let (sl, [n_rows, n_cols, nnz]) = size_line(lines, ["rows", "columns", "entries"])?;
    for (what, n) in [("rows", n_rows), ("columns", n_cols)] {
        if n > Index::MAX as usize {
            return Err(perr(
                sl,
                format!(
                    "{what} = {n} exceeds the largest supported dimension {}",
                    Index::MAX
                ),
            ));
        }
    }
    let sym = h.symmetry;
    if sym != MmSymmetry::General && n_rows != n_cols {
        return Err(perr(
            sl,
            format!("a {sym} matrix must be square, the size line says {n_rows} x {n_cols}"),
        ));
    }
    // At most one entry per position (of the listed triangle).
    let n = n_rows as u128;
    let (positions, which) = match sym {
        MmSymmetry::General => (n * n_cols as u128, "positions"),
        MmSymmetry::Symmetric | MmSymmetry::Hermitian => (
            n * (n + 1) / 2,
            "positions in one triangle, diagonal included",
        ),
        MmSymmetry::SkewSymmetric => (
            n * n.saturating_sub(1) / 2,
            "positions in one triangle, diagonal excluded",
        ),
    };
    if nnz as u128 > positions {
        return Err(perr(
            sl,
            format!(
                "the size line announces {nnz} entries, but a {sym} {n_rows} x {n_cols} matrix has only {positions} {which}"
            ),
        ));
    }
    let what = format!(
        "the {nnz} entries announced on line {sl} (a {n_rows} x {n_cols} {} matrix)",
        T::SUFFIX
    );
    check_host_bytes(
        &what,
        storage_bytes(&[(nnz as u128, 2 * size_of::<Index>() + size_of::<T>())]),
    )?;
    let mirror = sym != MmSymmetry::General;
    let mut t = Triplets {
        what,
        rows: Vec::new(),
        cols: Vec::new(),
        values: Vec::new(),
    };
    // The first off-diagonal entry of a symmetric kind: (line, row, col), 0-based.
    let mut first: Option<(usize, Index, Index)> = None;
    let mut count = 0usize;
    while lines.next_data()? {
        let ln = lines.line;
        count += 1;
        if count > nnz {
            return Err(perr(
                ln,
                format!("entry {count}, but line {sl} announced {nnz} entries"),
            ));
        }
        let tok: Vec<&str> = lines.text().split_whitespace().collect();
        if tok.len() < 2 {
            return Err(perr(
                ln,
                format!(
                    "an entry needs `row column [value]`, found {:?}",
                    lines.text().trim()
                ),
            ));
        }
        let r = parse_index(ln, "row", tok[0], n_rows)?;
        let c = parse_index(ln, "column", tok[1], n_cols)?;
        let (re, im) = parse_parts(ln, h.field, &tok[2..])?;
        if mirror {
            check_symmetric_entry(ln, sym, (r, c), im, &mut first)?;
        }
        let v: T = value(re, im);
        t.push(r, c, v)?;
        if mirror && r != c {
            t.push(
                c,
                r,
                match sym {
                    MmSymmetry::SkewSymmetric => -v,
                    MmSymmetry::Hermitian => v.conj(),
                    _ => v,
                },
            )?;
        }
    }
    if count != nnz {
        return Err(perr(
            lines.line,
            format!("end of file after {count} entries, but line {sl} announced {nnz}"),
        ));
    }
    Ok(Coo::from_parts(CooParts {
        n_rows,
        n_cols,
        rows: t.rows,
        cols: t.cols,
        values: t.values,
    })?)
}

/// The rules of the module docs for an entry `(r, c)` (0-based) of a symmetric,
/// skew-symmetric or Hermitian file: one triangle only (`first` remembers the first
/// off-diagonal entry), no diagonal in a skew-symmetric file, a real diagonal in a
/// Hermitian one (`im` the entry's imaginary part as written).
fn check_symmetric_entry(
    ln: usize,
    sym: MmSymmetry,
    (r, c): (Index, Index),
    im: f64,
    first: &mut Option<(usize, Index, Index)>,
) -> Result<(), SparseError> {
    let (i, j) = (r as u64 + 1, c as u64 + 1);
    if r == c {
        return match sym {
            MmSymmetry::SkewSymmetric => Err(perr(
                ln,
                format!(
                    "diagonal entry ({i}, {j}) in a skew-symmetric file: a skew-symmetric matrix has a zero diagonal, which the file does not list"
                ),
            )),
            MmSymmetry::Hermitian if im != 0.0 => Err(perr(
                ln,
                format!(
                    "diagonal entry ({i}, {j}) has imaginary part {im}: a Hermitian matrix has a real diagonal"
                ),
            )),
            _ => Ok(()),
        };
    }
    let side = |r: Index, c: Index| if r > c { "below" } else { "above" };
    match *first {
        None => *first = Some((ln, r, c)),
        Some((l0, r0, c0)) if (r0 > c0) != (r > c) => {
            return Err(perr(
                ln,
                format!(
                    "entry ({i}, {j}) lies {} the diagonal, but line {l0} listed ({}, {}) {} it: a {sym} file lists one triangle only, each entry standing for itself and its mirror (an entry listed as both (i, j) and (j, i) would count twice)",
                    side(r, c),
                    r0 as u64 + 1,
                    c0 as u64 + 1,
                    side(r0, c0)
                ),
            ));
        }
        Some(_) => {}
    }
    Ok(())
}

/// The body of an `array` file (after the banner `h`).
fn read_array<T: Element, R: BufRead>(
    lines: &mut Lines<R>,
    h: MmHeader,
) -> Result<MmArray<T>, SparseError> {
    if h.symmetry != MmSymmetry::General {
        return Err(perr(
            1,
            format!(
                "array files with symmetry `{}` are not supported (only `general`)",
                h.symmetry
            ),
        ));
    }
    let (sl, [n_rows, n_cols]) = size_line(lines, ["rows", "columns"])?;
    let what = format!(
        "the {n_rows} x {n_cols} array announced on line {sl} ({} values)",
        T::SUFFIX
    );
    let n = n_rows as u128 * n_cols as u128;
    check_host_bytes(&what, storage_bytes(&[(n, size_of::<T>())]))?;
    // n fits usize: its bytes passed the check (at most isize::MAX).
    let n = n as usize;
    let mut values = Vec::new();
    while lines.next_data()? {
        let ln = lines.line;
        if values.len() == n {
            return Err(perr(
                ln,
                format!(
                    "value {}, but line {sl} announced {n_rows} x {n_cols} = {n}",
                    n + 1
                ),
            ));
        }
        let tok: Vec<&str> = lines.text().split_whitespace().collect();
        let (re, im) = parse_parts(ln, h.field, &tok)?;
        grow_for_push(&what, &mut values)?;
        values.push(value(re, im));
    }
    if values.len() != n {
        return Err(perr(
            lines.line,
            format!(
                "end of file after {} values, but line {sl} announced {n_rows} x {n_cols} = {n}",
                values.len()
            ),
        ));
    }
    Ok(MmArray {
        n_rows,
        n_cols,
        values,
    })
}

fn read_body<T: Element, R: BufRead>(
    lines: &mut Lines<R>,
    h: MmHeader,
) -> Result<MmMatrix<T>, SparseError> {
    Ok(match h.format {
        MmFormat::Coordinate => MmMatrix::Coordinate(read_coordinate(lines, h)?),
        MmFormat::Array => MmMatrix::Array(read_array(lines, h)?),
    })
}

/// Reads whatever a file holds, in one pass: coordinate or array, real (`real`,
/// `integer`, `pattern`: `f64`) or complex (`Complex<f64>`). The caller decides what it
/// needs afterwards ([`MmObject`]).
///
/// ```
/// use ferrocuda::sparse::mm;
/// let text = "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 0.5 -1\n";
/// let obj = mm::read(text.as_bytes())?;
/// assert!(obj.is_complex() && obj.shape() == (2, 2));
/// let a = obj.into_csr::<ferrocuda::Complex<f64>>()?;
/// assert_eq!(a.nnz(), 1);
/// # Ok::<(), ferrocuda::sparse::SparseError>(())
/// ```
pub fn read<R: BufRead>(reader: R) -> Result<MmObject, SparseError> {
    let (mut lines, header) = open(reader)?;
    let data = if header.field == MmField::Complex {
        MmData::Complex(read_body(&mut lines, header)?)
    } else {
        MmData::Real(read_body(&mut lines, header)?)
    };
    Ok(MmObject { header, data })
}

/// Reads a `coordinate` file into triplets (symmetric kinds expanded, duplicates kept).
/// Errors: an `array` file, a complex file into a real type, and everything in the
/// [module docs](self).
pub fn read_coo<T: Element, R: BufRead>(reader: R) -> Result<Coo<T>, SparseError> {
    let (mut lines, h) = open(reader)?;
    expect_format(h, MmFormat::Coordinate)?;
    check_field::<T>(h.field)?;
    read_coordinate(&mut lines, h)
}

/// Reads a `coordinate` file into CSR (duplicates summed; its memory checked first).
pub fn read_csr<T: Element, R: BufRead>(reader: R) -> Result<Csr<T>, SparseError> {
    Csr::try_from_coo(&read_coo::<T, R>(reader)?)
}

/// [`read_coo`] from a path.
pub fn read_coo_file<T: Element>(path: &Path) -> Result<Coo<T>, SparseError> {
    let f = std::fs::File::open(path).map_err(io("mm::read_coo_file"))?;
    read_coo(std::io::BufReader::new(f))
}

/// Reads an `array ... general` file: returns `(rows, cols, values)` with the values in
/// column-major order (a vector file is `n x 1`). Errors: a `coordinate` file, a complex
/// file into a real type, and everything in the [module docs](self).
pub fn read_dense<T: Element, R: BufRead>(
    reader: R,
) -> Result<(usize, usize, Vec<T>), SparseError> {
    let (mut lines, h) = open(reader)?;
    expect_format(h, MmFormat::Array)?;
    check_field::<T>(h.field)?;
    let a = read_array(&mut lines, h)?;
    Ok((a.n_rows, a.n_cols, a.values))
}

fn field_name<T: Element>() -> &'static str {
    if T::IS_COMPLEX { "complex" } else { "real" }
}

fn write_value<T: Element, W: Write>(w: &mut W, v: T) -> std::io::Result<()> {
    if T::IS_COMPLEX {
        writeln!(w, " {:e} {:e}", v.re().to_f64(), v.im().to_f64())
    } else {
        writeln!(w, " {:e}", v.re().to_f64())
    }
}

/// Writes triplets as `coordinate <real|complex> general` (shortest round-trip decimal
/// form: reading the file back gives the same bits).
pub fn write_coo<T: Element, W: Write>(mut w: W, a: &Coo<T>) -> Result<(), SparseError> {
    let e = io("mm::write_coo");
    writeln!(
        w,
        "%%MatrixMarket matrix coordinate {} general",
        field_name::<T>()
    )
    .map_err(&e)?;
    writeln!(w, "{} {} {}", a.n_rows(), a.n_cols(), a.nnz()).map_err(&e)?;
    for ((&r, &c), &v) in a.rows().iter().zip(a.cols()).zip(a.values()) {
        write!(w, "{} {}", r as usize + 1, c as usize + 1).map_err(&e)?;
        write_value(&mut w, v).map_err(&e)?;
    }
    w.flush().map_err(&e)
}

/// Writes a CSR matrix as `coordinate` (row-major order).
pub fn write_csr<T: Element, W: Write>(w: W, a: &Csr<T>) -> Result<(), SparseError> {
    write_coo(w, &Coo::from(a))
}

/// Writes a dense column-major `n_rows x n_cols` array as `array <real|complex> general`.
/// Errors: `values.len() != n_rows * n_cols`.
pub fn write_dense<T: Element, W: Write>(
    mut w: W,
    n_rows: usize,
    n_cols: usize,
    values: &[T],
) -> Result<(), SparseError> {
    let op = "mm::write_dense";
    let n = super::checked_mul(op, "array size", n_rows, n_cols)?;
    super::check_len(op, "values (rows * cols)", n, values.len())?;
    let e = io(op);
    writeln!(
        w,
        "%%MatrixMarket matrix array {} general",
        field_name::<T>()
    )
    .map_err(&e)?;
    writeln!(w, "{n_rows} {n_cols}").map_err(&e)?;
    for &v in values {
        write_value(&mut w, v).map_err(&e)?;
    }
    w.flush().map_err(&e)
}
