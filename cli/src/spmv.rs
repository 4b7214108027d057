//! `ferrocuda spmv --matrix A.mtx --x x.mtx --out y.mtx [--format F] [--block-size B]
//! [--device cpu|gpu]`: writes `A x` as a Matrix Market array file.
//!
//! Real or complex is taken from the files (a complex matrix or vector makes the product
//! complex; real values read into complex get zero imaginary parts); precision is f64.
//! Blocked formats pad the matrix to a multiple of the block size with zeros and trim
//! the result back. The output appears only on success (written to a temporary file
//! first, then renamed), so a failed run leaves an existing `--out` untouched.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::gpu;
use ferrocuda::sparse::gpu::{
    DeviceBcsr, DeviceBdia, DeviceBell, DeviceEll, DeviceSbell, spmv_bcsr, spmv_bdia, spmv_bell,
    spmv_ell, spmv_sbell,
};
use ferrocuda::sparse::{
    Bcsr, Bdia, BdiaOptions, Bell, BellOptions, BlockFit, BlockLayout, Csr, Ell, EllOptions, Sbell,
    cpu, mm,
};
use ferrocuda::vendor::cusparse::{Cusparse, CusparseScalar};
use ferrocuda::{Error, Result};
use ferrocuda_kernels::names::SpmvKernels;
use ferrocuda_kernels::sparse::MatrixScalar;

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

/// Where `ferrocuda spmv` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpmvDevice {
    /// All CPU cores.
    Cpu,
    /// The GPU (`--device-ordinal` picks which).
    Gpu,
}

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
    /// Block size of the blocked formats.
    #[arg(long, default_value_t = 5)]
    pub block_size: usize,
    /// CPU or GPU.
    #[arg(long = "device", value_enum, default_value_t = SpmvDevice::Cpu)]
    pub on: SpmvDevice,
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op: "spmv",
        reason: format!("{}: {e}", path.display()),
    }
}

/// Runs `ferrocuda spmv`; returns a one-line summary.
pub fn run(args: &SpmvArgs, ordinal: usize) -> Result<String> {
    if super::is_complex("spmv", &args.matrix)? || super::is_complex("spmv", &args.x)? {
        run_typed::<Complex<f64>>(args, ordinal)
    } else {
        run_typed::<f64>(args, ordinal)
    }
}

fn run_typed<T: Element + MatrixScalar<T> + SpmvKernels<T> + CusparseScalar>(
    args: &SpmvArgs,
    ordinal: usize,
) -> Result<String> {
    let open = |p: &Path| {
        File::open(p)
            .map(BufReader::new)
            .map_err(|e| file_error(p, e))
    };
    let a: Csr<T> = mm::read_csr(open(&args.matrix)?).map_err(|e| file_error(&args.matrix, e))?;
    let (rows, cols, x) =
        mm::read_dense::<T, _>(open(&args.x)?).map_err(|e| file_error(&args.x, e))?;
    if cols != 1 {
        return Err(file_error(
            &args.x,
            format!("x must be a column vector (n x 1), the file is {rows} x {cols}"),
        ));
    }
    if rows != a.n_cols() {
        return Err(Error::DimensionMismatch {
            op: "spmv",
            what: "x",
            expected: a.n_cols(),
            found: rows,
        });
    }
    if args.block_size == 0
        && matches!(
            args.format,
            SpmvFormat::Bcsr | SpmvFormat::Bell | SpmvFormat::Bdia | SpmvFormat::Sbell
        )
    {
        return Err(Error::InvalidArgument {
            op: "spmv",
            reason: "--block-size must be at least 1".into(),
        });
    }
    let y = match args.on {
        SpmvDevice::Cpu => spmv_cpu(&a, &x, args)?,
        SpmvDevice::Gpu => spmv_gpu(&a, &x, args, ordinal)?,
    };
    // Write next to the target, then rename: a failure leaves an existing file as it was.
    let tmp = args.out.with_extension("mtx.partial");
    let written = File::create(&tmp)
        .map_err(|e| file_error(&tmp, e))
        .and_then(|f| {
            mm::write_dense(BufWriter::new(f), y.len(), 1, &y).map_err(|e| file_error(&tmp, e))
        })
        .and_then(|()| std::fs::rename(&tmp, &args.out).map_err(|e| file_error(&args.out, e)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    Ok(format!(
        "wrote {} ({} x 1, {}) = A x with A {} x {}, {} stored entries, format {:?} on {:?}",
        args.out.display(),
        y.len(),
        T::SUFFIX,
        a.n_rows(),
        a.n_cols(),
        a.nnz(),
        args.format,
        args.on
    ))
}

/// `A` padded to blocks of `b` and `x` padded to match.
fn blocked<T: Element>(a: &Csr<T>, x: &[T], b: usize) -> Result<(Bcsr<T>, Vec<T>)> {
    let m = Bcsr::from_csr(a, b, BlockLayout::RowMajor, BlockFit::Pad)?;
    let mut xp = x.to_vec();
    xp.resize(m.n_cols(), T::ZERO);
    Ok((m, xp))
}

fn spmv_cpu<T: Element + MatrixScalar<T>>(a: &Csr<T>, x: &[T], args: &SpmvArgs) -> Result<Vec<T>> {
    let b = args.block_size;
    let (one, zero) = (T::ONE, T::ZERO);
    let mut y = match args.format {
        SpmvFormat::Csr => {
            let mut y = vec![zero; a.n_rows()];
            cpu::spmv_csr(one, a, x, zero, &mut y)?;
            y
        }
        SpmvFormat::Ell => {
            let m = Ell::from_csr(a, &EllOptions::default())?;
            let mut y = vec![zero; a.n_rows()];
            cpu::spmv_ell(one, &m, x, zero, &mut y)?;
            y
        }
        SpmvFormat::Bcsr => {
            let (m, xp) = blocked(a, x, b)?;
            let mut y = vec![zero; m.n_rows()];
            cpu::spmv_bcsr(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Bell => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Bell::from_bcsr(&m, &BellOptions::default())?;
            let mut y = vec![zero; m.n_rows()];
            cpu::spmv_bell(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Bdia => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Bdia::from_bcsr(&m, &BdiaOptions::default())?;
            let mut y = vec![zero; m.n_rows()];
            cpu::spmv_bdia(one, &m, &xp, zero, &mut y)?;
            y
        }
        SpmvFormat::Sbell => {
            let (m, xp) = blocked(a, x, b)?;
            let m = Sbell::from_bcsr(&m)?;
            let mut y = vec![zero; m.n_rows()];
            cpu::spmv_sbell(one, &m, &xp, zero, &mut y)?;
            y
        }
    };
    y.truncate(a.n_rows());
    Ok(y)
}

fn spmv_gpu<T: Element + MatrixScalar<T> + SpmvKernels<T> + CusparseScalar>(
    a: &Csr<T>,
    x: &[T],
    args: &SpmvArgs,
    ordinal: usize,
) -> Result<Vec<T>> {
    let (one, zero) = (T::ONE, T::ZERO);
    if args.format == SpmvFormat::Csr {
        // CSR on the GPU is the vendor's: cuSPARSE's generic SpMV.
        let g = gpu::open(ordinal)?;
        let cs = Cusparse::new(&g)?;
        let mut m = cs.upload_csr(a)?;
        let dx = g.upload(x)?;
        let mut dy = g.alloc::<T>(a.n_rows())?;
        cs.spmv_csr(one, &mut m, &dx, zero, &mut dy)?;
        return Ok(dy.download()?);
    }
    if args.format == SpmvFormat::Ell {
        let g = gpu::open(ordinal)?;
        let m = Ell::from_csr(a, &EllOptions::default())?;
        let dx = g.upload(x)?;
        let mut dy = g.alloc::<T>(a.n_rows())?;
        spmv_ell(one, &DeviceEll::upload(&g, &m)?, &dx, zero, &mut dy)?;
        return Ok(dy.download()?);
    }
    let g = gpu::open(ordinal)?;
    let (m, xp) = blocked(a, x, args.block_size)?;
    let dx = g.upload(&xp)?;
    let mut dy = g.alloc::<T>(m.n_rows())?;
    match args.format {
        SpmvFormat::Bell => {
            let m = Bell::from_bcsr(&m, &BellOptions::default())?;
            spmv_bell(one, &DeviceBell::upload(&g, &m)?, &dx, zero, &mut dy)?;
        }
        SpmvFormat::Sbell => {
            let m = Sbell::from_bcsr(&m)?;
            spmv_sbell(one, &DeviceSbell::upload(&g, &m)?, &dx, zero, &mut dy)?;
        }
        SpmvFormat::Bdia => {
            let m = Bdia::from_bcsr(&m, &BdiaOptions::default())?;
            spmv_bdia(one, &DeviceBdia::upload(&g, &m)?, &dx, zero, &mut dy)?;
        }
        _ => spmv_bcsr(one, &DeviceBcsr::upload(&g, &m)?, &dx, zero, &mut dy)?,
    }
    let mut y = dy.download()?;
    y.truncate(a.n_rows());
    Ok(y)
}
