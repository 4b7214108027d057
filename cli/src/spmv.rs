//! `ferrocuda spmv --matrix A.mtx --x x.mtx --out y.mtx [--format F] [--block-size B]
//! [--device cpu|gpu|N]`: writes `A x` as a Matrix Market array file.
//!
//! Real or complex is taken from the files (a complex matrix or vector makes the product
//! complex; real values read into complex get zero imaginary parts); precision is f64.
//! Each file is read once (pipes work). Blocked formats pad the matrix to a multiple of
//! the block size with zeros and trim the result back; zero entries, stored or padding,
//! add nothing in every format. The output appears only on success
//! ([`crate::files`]).

use std::path::PathBuf;

use clap::ValueEnum;

use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::gpu::Gpu;
use ferrocuda::sparse::gpu::SpmvKernels;
use ferrocuda::sparse::gpu::{
    DeviceBcsr, DeviceBdia, DeviceBell, DeviceEll, DeviceSbell, spmv_bcsr, spmv_bdia, spmv_bell,
    spmv_ell, spmv_sbell,
};
use ferrocuda::sparse::mm::MmObject;
use ferrocuda::sparse::{
    Bcsr, Bdia, BdiaOptions, Bell, BellOptions, BlockFit, BlockLayout, Csr, Ell, EllOptions, Sbell,
    cpu,
};
use ferrocuda::vendor::cusparse::{Cusparse, CusparseScalar};
use ferrocuda::{Error, Result};
use ferrocuda_kernels::sparse::MatrixScalar;

use crate::device::{DeviceArg, Where};
use crate::files::{self, Input, file_error, mm_error};
use crate::numbers::count;
use ferrocuda_bench::output::Target;

const OP: &str = "spmv";

/// Storage format for `ferrocuda spmv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpmvFormat {
    /// Compressed sparse rows.
    Csr,
    /// Block CSR (`--block-size`, row-major blocks).
    Bcsr,
    /// Scalar ELLPACK.
    Ell,
    /// Blocked ELLPACK.
    Bell,
    /// ferrocuda's fixed-offset block-stencil format (block diagonals, no column indices).
    Bdia,
    /// ferrocuda's sliced masked BELL (no empty block rows, no in-block zeros; `--block-size`
    /// at most 8). The fastest on block-stencil matrices.
    Sbell,
}

impl SpmvFormat {
    fn blocked(self) -> bool {
        !matches!(self, SpmvFormat::Csr | SpmvFormat::Ell)
    }
}

/// The default block size of the blocked formats (smaller matrices take their smaller
/// nonzero dimension).
pub const DEFAULT_BLOCK: usize = 5;

/// Arguments of `ferrocuda spmv`.
#[derive(Debug, Clone, clap::Args)]
pub struct SpmvArgs {
    /// Matrix Market coordinate file of A.
    #[arg(long)]
    pub matrix: PathBuf,
    /// Matrix Market array file of x (n x 1).
    #[arg(long)]
    pub x: PathBuf,
    /// Where to write y = A x (Matrix Market array).
    #[arg(long)]
    pub out: PathBuf,
    /// Storage format.
    #[arg(long, value_enum, default_value_t = SpmvFormat::Csr)]
    pub format: SpmvFormat,
    /// Block size of the blocked formats, at most the matrix's smaller nonzero dimension
    /// [default: 5, or that dimension where it is smaller].
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub block_size: Option<usize>,
    /// Where to compute.
    #[command(flatten)]
    pub device: DeviceArg,
}

impl SpmvArgs {
    /// Checks the options alone.
    pub fn validate(&self) -> Result<()> {
        if self.block_size == Some(0) {
            return Err(invalid("--block-size must be at least 1 (got 0)".into()));
        }
        Ok(())
    }

    /// The block size for an `rows x cols` matrix.
    fn block_size(&self, rows: usize, cols: usize) -> Result<usize> {
        let smaller = [rows, cols]
            .into_iter()
            .filter(|&d| d > 0)
            .min()
            .unwrap_or(1);
        match self.block_size {
            None => Ok(DEFAULT_BLOCK.min(smaller)),
            Some(b) if b > smaller && self.format.blocked() => Err(invalid(format!(
                "--block-size {b} is larger than the {rows} x {cols} matrix of --matrix {}: the blocked formats take at most {smaller}",
                self.matrix.display()
            ))),
            Some(b) => Ok(b),
        }
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument { op: OP, reason }
}

/// Runs `ferrocuda spmv`; returns a one-line summary.
pub fn run(args: &SpmvArgs, on: Where) -> Result<String> {
    args.validate()?;
    let (ia, ix) = (
        Input::open(OP, "--matrix", &args.matrix)?,
        Input::open(OP, "--x", &args.x)?,
    );
    let out = files::output(OP, "--out", &args.out, &[&ia, &ix])?;
    let (la, lx) = (ia.label().to_string(), ix.label().to_string());
    let (a, x) = (ia.read_mm()?, ix.read_mm()?);
    // Shapes first: a file that announces a huge matrix costs nothing until converted.
    let ((rows, cols), (xr, xc)) = (a.shape(), x.shape());
    if xc != 1 {
        return Err(file_error(
            OP,
            &lx,
            format!("x must be a column vector (n x 1), the file is {xr} x {xc}"),
        ));
    }
    if xr != cols {
        return Err(file_error(
            OP,
            &lx,
            format!("x has length {xr}, but A ({la}) is {rows} x {cols}, so expected {cols}"),
        ));
    }
    let b = args.block_size(rows, cols)?;
    let complex = a.is_complex() || x.is_complex();
    let files = Files { a, x, la, lx };
    let (nnz, scalar) = if complex {
        run_typed::<Complex<f64>>(files, args, b, on, &out)?
    } else {
        run_typed::<f64>(files, args, b, on, &out)?
    };
    Ok(format!(
        "wrote {} ({rows} x 1, {scalar}) = A x with A {rows} x {cols}, {nnz} stored entries, format {:?} on {}",
        args.out.display(),
        args.format,
        match on {
            Where::Cpu => "Cpu",
            Where::Gpu(_) => "Gpu",
        }
    ))
}

/// The files as read, with their labels.
struct Files {
    a: MmObject,
    x: MmObject,
    la: String,
    lx: String,
}

/// Converts, multiplies and writes `y`; returns the stored entries and the scalar type.
fn run_typed<T>(
    f: Files,
    args: &SpmvArgs,
    b: usize,
    on: Where,
    out: &Target,
) -> Result<(usize, &'static str)>
where
    T: Element + MatrixScalar<T> + SpmvKernels<T> + CusparseScalar,
{
    let a: Csr<T> = f.a.into_csr().map_err(|e| mm_error(OP, &f.la, e))?;
    let x: Vec<T> = f.x.into_array().map_err(|e| mm_error(OP, &f.lx, e))?.values;
    let y = match on.open()? {
        None => spmv_cpu(&a, &x, args.format, b)?,
        Some(g) => spmv_gpu(&g, &a, &x, args.format, b)?,
    };
    files::write_array(out, y.len(), 1, &y)?;
    Ok((a.nnz(), T::SUFFIX))
}

/// `A` padded to blocks of `b` and `x` padded to match.
fn blocked<T: Element>(a: &Csr<T>, x: &[T], b: usize) -> Result<(Bcsr<T>, Vec<T>)> {
    let m = Bcsr::from_csr(a, b, BlockLayout::RowMajor, BlockFit::Pad)?;
    let mut xp = ferrocuda::alloc::try_with_capacity("x padded to whole blocks", m.n_cols())?;
    xp.extend_from_slice(x);
    xp.resize(m.n_cols(), T::ZERO);
    Ok((m, xp))
}

/// `y` of `rows` zeros, allocated fallibly.
fn zeros<T: Element>(rows: usize) -> Result<Vec<T>> {
    ferrocuda::alloc::try_vec("y", rows, T::ZERO)
}

fn spmv_cpu<T: Element + MatrixScalar<T>>(
    a: &Csr<T>,
    x: &[T],
    format: SpmvFormat,
    b: usize,
) -> Result<Vec<T>> {
    let (one, zero) = (T::ONE, T::ZERO);
    let mut y = match format {
        SpmvFormat::Csr => {
            let mut y = zeros(a.n_rows())?;
            cpu::spmv_csr(one, a, x, zero, &mut y)?;
            y
        }
        SpmvFormat::Ell => {
            let m = Ell::from_csr(a, &EllOptions::default())?;
            let mut y = zeros(a.n_rows())?;
            cpu::spmv_ell(one, &m, x, zero, &mut y)?;
            y
        }
        SpmvFormat::Bcsr => {
            let (m, xp) = blocked(a, x, b)?;
            let mut y = zeros(m.n_rows())?;
            cpu::spmv_bcsr(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Bell => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Bell::from_bcsr(&m, &BellOptions::default())?;
            let mut y = zeros(m.n_rows())?;
            cpu::spmv_bell(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Bdia => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Bdia::from_bcsr(&m, &BdiaOptions::default())?;
            let mut y = zeros(m.n_rows())?;
            cpu::spmv_bdia(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Sbell => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Sbell::from_bcsr(&m)?;
            let mut y = zeros(m.n_rows())?;
            cpu::spmv_sbell(one, &m, &xp, zero, &mut y)?;
            y
        }
    };
    y.truncate(a.n_rows());
    Ok(y)
}

fn spmv_gpu<T: Element + MatrixScalar<T> + SpmvKernels<T> + CusparseScalar>(
    g: &Gpu,
    a: &Csr<T>,
    x: &[T],
    format: SpmvFormat,
    b: usize,
) -> Result<Vec<T>> {
    let (one, zero) = (T::ONE, T::ZERO);
    if format == SpmvFormat::Csr {
        // CSR on the GPU is the vendor's: cuSPARSE's generic SpMV, which multiplies
        // stored zeros; without them it follows the rule of the other formats.
        let cs = Cusparse::new(g)?;
        let mut m = cs.upload_csr(&a.without_zeros())?;
        let dx = g.upload(x)?;
        let mut dy = g.alloc::<T>(a.n_rows())?;
        cs.spmv_csr(one, &mut m, &dx, zero, &mut dy)?;
        return Ok(dy.download()?);
    }
    if format == SpmvFormat::Ell {
        let m = Ell::from_csr(a, &EllOptions::default())?;
        let dx = g.upload(x)?;
        let mut dy = g.alloc::<T>(a.n_rows())?;
        spmv_ell(one, &DeviceEll::upload(g, &m)?, &dx, zero, &mut dy)?;
        return Ok(dy.download()?);
    }
    let (m, xp) = blocked(a, x, b)?;
    let dx = g.upload(&xp)?;
    let mut dy = g.alloc::<T>(m.n_rows())?;
    match format {
        SpmvFormat::Bell => {
            let m = Bell::from_bcsr(&m, &BellOptions::default())?;
            spmv_bell(one, &DeviceBell::upload(g, &m)?, &dx, zero, &mut dy)?;
        }
        SpmvFormat::Sbell => {
            let m = Sbell::from_bcsr(&m)?;
            spmv_sbell(one, &DeviceSbell::upload(g, &m)?, &dx, zero, &mut dy)?;
        }
        SpmvFormat::Bdia => {
            let m = Bdia::from_bcsr(&m, &BdiaOptions::default())?;
            spmv_bdia(one, &DeviceBdia::upload(g, &m)?, &dx, zero, &mut dy)?;
        }
        _ => spmv_bcsr(one, &DeviceBcsr::upload(g, &m)?, &dx, zero, &mut dy)?,
    }
    let mut y = dy.download()?;
    y.truncate(a.n_rows());
    Ok(y)
}
