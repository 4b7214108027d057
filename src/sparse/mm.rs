//! Matrix Market I/O (<https://math.nist.gov/MatrixMarket/formats.html>).
//!
//! Reads `coordinate` matrices with field `real`, `double`, `integer`, `complex` or
//! `pattern` (every entry 1) and symmetry `general`, `symmetric`, `skew-symmetric` or
//! `hermitian` (the other triangle is generated: mirrored, negated, or conjugated), and
//! `array` files (`general`, column-major) for dense vectors and matrices. Writes
//! `coordinate ... general` and `array ... general`.
//!
//! * **Duplicates**: repeated positions are kept as separate triplets in the [`Coo`] and
//!   summed by every converter and by SpMV.
//! * **NaN / infinity**: accepted (`nan`, `inf`, any case) and propagate through SpMV.
//! * **Empty matrices** (`0 0 0`, or `m n 0`) are valid.
//! * A `complex` file cannot be read into a real type (error); real files read into
//!   complex types get zero imaginary parts.
//!
//! Every error names the 1-based line and what is wrong there ([`SparseError::Parse`];
//! line 0 means the end of the file).

use std::io::{BufRead, Write};
use std::path::Path;

use super::{Coo, CooParts, Csr, Element, Index, SparseError};
use crate::RealScalar;

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
    /// `a_ji = a_ij`, lower triangle stored.
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

fn perr(line: usize, reason: impl Into<String>) -> SparseError {
    SparseError::Parse {
        line,
        reason: reason.into(),
    }
}

fn io(op: &'static str) -> impl Fn(std::io::Error) -> SparseError {
    move |source| SparseError::Io { op, source }
}

/// Lines with their 1-based numbers, skipping comments and blank lines after the banner.
struct Lines<R> {
    inner: std::io::Lines<R>,
    line: usize,
}

impl<R: BufRead> Lines<R> {
    fn next_raw(&mut self) -> Result<Option<String>, SparseError> {
        match self.inner.next() {
            None => Ok(None),
            Some(l) => {
                self.line += 1;
                l.map(Some)
                    .map_err(|e| perr(self.line, format!("cannot read the line: {e}")))
            }
        }
    }
    fn next_data(&mut self) -> Result<Option<String>, SparseError> {
        while let Some(l) = self.next_raw()? {
            let t = l.trim();
            if !t.is_empty() && !t.starts_with('%') {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }
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

fn parse_usize(line: usize, what: &str, t: &str) -> Result<usize, SparseError> {
    t.parse::<usize>()
        .map_err(|_| perr(line, format!("{what}: {t:?} is not a non-negative integer")))
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

/// Parses the value tokens of one entry.
fn parse_value<T: Element>(line: usize, field: MmField, tok: &[&str]) -> Result<T, SparseError> {
    let want = match field {
        MmField::Pattern => 0,
        MmField::Real | MmField::Integer => 1,
        MmField::Complex => 2,
    };
    if tok.len() != want {
        return Err(perr(
            line,
            format!(
                "expected {want} value(s) for field {field:?}, found {} ({:?})",
                tok.len(),
                tok.join(" ")
            ),
        ));
    }
    Ok(match field {
        MmField::Pattern => T::ONE,
        MmField::Real => value(parse_f64(line, "value", tok[0])?, 0.0),
        MmField::Integer => {
            let v = tok[0]
                .parse::<i64>()
                .map_err(|_| perr(line, format!("value: {:?} is not an integer", tok[0])))?;
            value(v as f64, 0.0)
        }
        MmField::Complex => value(
            parse_f64(line, "real part", tok[0])?,
            parse_f64(line, "imaginary part", tok[1])?,
        ),
    })
}

fn check_field<T: Element>(line: usize, field: MmField) -> Result<(), SparseError> {
    if field == MmField::Complex && !T::IS_COMPLEX {
        return Err(perr(
            line,
            format!(
                "the file is complex but the requested scalar type {} is real",
                T::SUFFIX
            ),
        ));
    }
    Ok(())
}

/// Reads a `coordinate` file into triplets (symmetric kinds expanded, duplicates kept).
pub fn read_coo<T: Element, R: BufRead>(reader: R) -> Result<Coo<T>, SparseError> {
    let mut lines = Lines {
        inner: reader.lines(),
        line: 0,
    };
    let banner = lines
        .next_raw()?
        .ok_or_else(|| perr(0, "empty file: no %%MatrixMarket banner"))?;
    let h = parse_header(1, &banner)?;
    if h.format != MmFormat::Coordinate {
        return Err(perr(1, "an array file: use read_dense"));
    }
    check_field::<T>(1, h.field)?;
    let size = lines
        .next_data()?
        .ok_or_else(|| perr(0, "end of file before the size line `rows cols entries`"))?;
    let sl = lines.line;
    let st: Vec<&str> = size.split_whitespace().collect();
    if st.len() != 3 {
        return Err(perr(
            sl,
            format!("the size line must be `rows cols entries`, found {size:?}"),
        ));
    }
    let n_rows = parse_usize(sl, "rows", st[0])?;
    let n_cols = parse_usize(sl, "cols", st[1])?;
    let nnz = parse_usize(sl, "entries", st[2])?;
    for (what, n) in [("rows", n_rows), ("cols", n_cols)] {
        if n > Index::MAX as usize {
            return Err(perr(
                sl,
                format!("{what} = {n} exceeds the index limit {}", Index::MAX),
            ));
        }
    }
    if h.symmetry != MmSymmetry::General && n_rows != n_cols {
        return Err(perr(
            sl,
            format!(
                "a {:?} matrix must be square, found {n_rows} x {n_cols}",
                h.symmetry
            ),
        ));
    }
    let mirror = h.symmetry != MmSymmetry::General;
    let cap = nnz.min(1 << 24) * if mirror { 2 } else { 1 };
    let (mut rows, mut cols, mut values) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    let mut count = 0usize;
    while let Some(l) = lines.next_data()? {
        let ln = lines.line;
        count += 1;
        if count > nnz {
            return Err(perr(
                ln,
                format!("more entries than the {nnz} announced on line {sl}"),
            ));
        }
        let tok: Vec<&str> = l.split_whitespace().collect();
        if tok.len() < 2 {
            return Err(perr(
                ln,
                format!("an entry needs `row col [value]`, found {:?}", l.trim()),
            ));
        }
        let i = parse_usize(ln, "row", tok[0])?;
        let j = parse_usize(ln, "col", tok[1])?;
        if i == 0 || i > n_rows {
            return Err(perr(
                ln,
                format!("row index {i} is out of range 1..={n_rows}"),
            ));
        }
        if j == 0 || j > n_cols {
            return Err(perr(
                ln,
                format!("column index {j} is out of range 1..={n_cols}"),
            ));
        }
        let v: T = parse_value(ln, h.field, &tok[2..])?;
        let (r, c) = ((i - 1) as Index, (j - 1) as Index);
        rows.push(r);
        cols.push(c);
        values.push(v);
        if mirror && r != c {
            rows.push(c);
            cols.push(r);
            values.push(match h.symmetry {
                MmSymmetry::SkewSymmetric => -v,
                MmSymmetry::Hermitian => v.conj(),
                _ => v,
            });
        }
    }
    if count != nnz {
        return Err(perr(
            0,
            format!("end of file after {count} entries, but line {sl} announced {nnz}"),
        ));
    }
    Coo::from_parts(CooParts {
        n_rows,
        n_cols,
        rows,
        cols,
        values,
    })
    .map_err(|r| r.error)
}

/// Reads a `coordinate` file into CSR (duplicates summed).
pub fn read_csr<T: Element, R: BufRead>(reader: R) -> Result<Csr<T>, SparseError> {
    Ok(Csr::from(&read_coo::<T, R>(reader)?))
}

/// [`read_coo`] from a path.
pub fn read_coo_file<T: Element>(path: &Path) -> Result<Coo<T>, SparseError> {
    let f = std::fs::File::open(path).map_err(io("mm::read_coo_file"))?;
    read_coo(std::io::BufReader::new(f))
}

/// Reads an `array ... general` file: returns `(rows, cols, values)` with the values in
/// column-major order (a vector file is `n x 1`).
pub fn read_dense<T: Element, R: BufRead>(
    reader: R,
) -> Result<(usize, usize, Vec<T>), SparseError> {
    let mut lines = Lines {
        inner: reader.lines(),
        line: 0,
    };
    let banner = lines
        .next_raw()?
        .ok_or_else(|| perr(0, "empty file: no %%MatrixMarket banner"))?;
    let h = parse_header(1, &banner)?;
    if h.format != MmFormat::Array {
        return Err(perr(1, "a coordinate file: use read_coo"));
    }
    if h.symmetry != MmSymmetry::General {
        return Err(perr(
            1,
            format!(
                "array files with symmetry {:?} are not supported",
                h.symmetry
            ),
        ));
    }
    check_field::<T>(1, h.field)?;
    let size = lines
        .next_data()?
        .ok_or_else(|| perr(0, "end of file before the size line `rows cols`"))?;
    let sl = lines.line;
    let st: Vec<&str> = size.split_whitespace().collect();
    if st.len() != 2 {
        return Err(perr(
            sl,
            format!("the size line must be `rows cols`, found {size:?}"),
        ));
    }
    let n_rows = parse_usize(sl, "rows", st[0])?;
    let n_cols = parse_usize(sl, "cols", st[1])?;
    let n = n_rows
        .checked_mul(n_cols)
        .ok_or_else(|| perr(sl, format!("{n_rows} x {n_cols} overflows")))?;
    let mut values = Vec::with_capacity(n.min(1 << 24));
    while let Some(l) = lines.next_data()? {
        let ln = lines.line;
        if values.len() == n {
            return Err(perr(
                ln,
                format!("more values than the {n_rows} x {n_cols} = {n} announced on line {sl}"),
            ));
        }
        let tok: Vec<&str> = l.split_whitespace().collect();
        values.push(parse_value(ln, h.field, &tok)?);
    }
    if values.len() != n {
        return Err(perr(
            0,
            format!(
                "end of file after {} values, but line {sl} announced {n_rows} x {n_cols} = {n}",
                values.len()
            ),
        ));
    }
    Ok((n_rows, n_cols, values))
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
