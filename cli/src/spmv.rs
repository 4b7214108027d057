//! `ferrocuda spmv --matrix A.mtx --x x.mtx --out y.mtx [--format F] [--block-size B]
//! [--device cpu|gpu|N]`: writes `A x` as a Matrix Market array file.
//!
//! Real or complex is taken from the files (a complex matrix or vector makes the product
//! complex; real values read into complex get zero imaginary parts); precision is f64.
//! Each file is read once (pipes work). The conversion and the product are the library's
//! ([`ferrocuda::sparse::Matrix`] on the CPU, [`ferrocuda::sparse::gpu::DeviceMatrix`]
//! on the GPU; `--format csr` on the GPU runs cuSPARSE); `--format auto` lets the
//! structure choose ([`Format::Auto`]) and the summary says what and why. Blocked formats
//! pad the matrix to a multiple of the block size with zeros and trim the result back;
//! zero entries, stored or padding, add nothing in every format. The output appears only
//! on success ([`crate::files`]).

use std::path::PathBuf;

use clap::ValueEnum;

use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::gpu::Gpu;
use ferrocuda::sparse::gpu::{DeviceMatrix, SpmvKernels};
use ferrocuda::sparse::mm::MmObject;
use ferrocuda::sparse::{
    BlockFit, Csr, Format, FormatChoice, FormatOptions, Matrix, MatrixScalar, Target,
};
use ferrocuda::vendor::cusparse::{Cusparse, CusparseScalar};
use ferrocuda::{Error, Result};

use crate::device::{DeviceArg, Where};
use crate::files::{self, Input, file_error, mm_error};
use crate::numbers::count;

const OP: &str = "spmv";

/// Storage format for `ferrocuda spmv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpmvFormat {
    /// Chosen from the structure of the matrix for the device (the summary says what and
    /// why): blocks where they pay (SBELL or BCSR on the GPU, BCSR on the CPU), else ELL
    /// or CSR. The block size is `--block-size`, or detected.
    Auto,
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
    /// Whether `--block-size` applies (and must fit the matrix).
    fn blocked(self) -> bool {
        !matches!(self, SpmvFormat::Csr | SpmvFormat::Ell)
    }

    /// The library's format.
    fn format(self) -> Format {
        match self {
            SpmvFormat::Auto => Format::Auto,
            SpmvFormat::Csr => Format::Csr,
            SpmvFormat::Bcsr => Format::Bcsr,
            SpmvFormat::Ell => Format::Ell,
            SpmvFormat::Bell => Format::Bell,
            SpmvFormat::Bdia => Format::Bdia,
            SpmvFormat::Sbell => Format::Sbell,
        }
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

    /// The block size for an `rows x cols` matrix (`None`: `--format auto` detects it).
    fn block_size(&self, rows: usize, cols: usize) -> Result<Option<usize>> {
        let smaller = [rows, cols]
            .into_iter()
            .filter(|&d| d > 0)
            .min()
            .unwrap_or(1);
        match self.block_size {
            None if self.format == SpmvFormat::Auto => Ok(None),
            None => Ok(Some(DEFAULT_BLOCK.min(smaller))),
            Some(b) if b > smaller && self.format.blocked() => Err(invalid(format!(
                "--block-size {b} is larger than the {rows} x {cols} matrix of --matrix {}: the blocked formats take at most {smaller}",
                self.matrix.display()
            ))),
            Some(b) => Ok(Some(b)),
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
    let (nnz, scalar, choice) = if complex {
        run_typed::<Complex<f64>>(files, args, b, on, &out)?
    } else {
        run_typed::<f64>(files, args, b, on, &out)?
    };
    let chosen = match choice {
        Some(c) if args.format == SpmvFormat::Auto => format!(
            " -> {}{} ({})",
            c.format,
            c.block_size
                .map_or(String::new(), |b| format!(" with {b} x {b} blocks")),
            c.reason
        ),
        _ => String::new(),
    };
    Ok(format!(
        "wrote {} ({rows} x 1, {scalar}) = A x with A {rows} x {cols}, {nnz} stored entries, format {:?}{chosen} on {}",
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

/// Converts, multiplies and writes `y`; returns the stored entries, the scalar type and
/// the library's format choice (none for cuSPARSE).
fn run_typed<T>(
    f: Files,
    args: &SpmvArgs,
    b: Option<usize>,
    on: Where,
    out: &ferrocuda_bench::output::Target,
) -> Result<(usize, &'static str, Option<FormatChoice>)>
where
    T: Element + MatrixScalar<T> + SpmvKernels<T> + CusparseScalar,
{
    let a: Csr<T> = f.a.into_csr().map_err(|e| mm_error(OP, &f.la, e))?;
    let x: Vec<T> = f.x.into_array().map_err(|e| mm_error(OP, &f.lx, e))?.values;
    let gpu = on.open()?;
    let (y, choice) = match &gpu {
        Some(g) if args.format == SpmvFormat::Csr => (spmv_cusparse(g, &a, &x)?, None),
        _ => {
            let (y, choice) = spmv(gpu.as_ref(), &a, &x, args.format.format(), b)?;
            (y, Some(choice))
        }
    };
    files::write_array(out, y.len(), 1, &y)?;
    Ok((a.nnz(), T::SUFFIX, choice))
}

/// `A x` by the library: `a` in `format` (blocked ones padded with zeros to whole blocks
/// of `b`, `x` padded to match and `y` trimmed back) on the GPU `gpu`, else the CPU.
fn spmv<T>(
    gpu: Option<&Gpu>,
    a: &Csr<T>,
    x: &[T],
    format: Format,
    b: Option<usize>,
) -> Result<(Vec<T>, FormatChoice)>
where
    T: Element + MatrixScalar<T> + SpmvKernels<T>,
{
    let mut opts = FormatOptions::default().fit(BlockFit::Pad);
    if let Some(b) = b {
        opts = opts.block_size(b);
    }
    let target = if gpu.is_some() {
        Target::Gpu
    } else {
        Target::Cpu
    };
    let m = Matrix::with_options(a, format, target, &opts)?;
    let mut xp = ferrocuda::alloc::try_with_capacity("x padded to whole blocks", m.n_cols())?;
    xp.extend_from_slice(x);
    xp.resize(m.n_cols(), T::ZERO);
    let (one, zero) = (T::ONE, T::ZERO);
    let (mut y, choice) = match gpu {
        None => {
            let mut y = ferrocuda::alloc::try_vec("y", m.n_rows(), T::ZERO)?;
            m.spmv(one, &xp, zero, &mut y)?;
            (y, m.choice().clone())
        }
        Some(g) => {
            let dm = DeviceMatrix::from_matrix(g, &m)?;
            let dx = g.upload(&xp)?;
            let mut dy = g.alloc::<T>(dm.n_rows())?;
            dm.spmv(one, &dx, zero, &mut dy)?;
            (dy.download()?, dm.choice().clone())
        }
    };
    y.truncate(a.n_rows());
    Ok((y, choice))
}

/// `A x` by cuSPARSE's generic CSR SpMV (the baseline `--format csr` runs on the GPU).
/// It multiplies stored zeros; without them it follows the rule of the other formats.
fn spmv_cusparse<T: Element + CusparseScalar>(g: &Gpu, a: &Csr<T>, x: &[T]) -> Result<Vec<T>> {
    let cs = Cusparse::new(g)?;
    let mut m = cs.upload_csr(&a.without_zeros())?;
    let dx = g.upload(x)?;
    let mut dy = g.alloc::<T>(a.n_rows())?;
    cs.spmv_csr(T::ONE, &mut m, &dx, T::ZERO, &mut dy)?;
    Ok(dy.download()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--format auto` on a matrix of full 2 x 2 blocks: the library's choice (BCSR on the
    /// CPU) and its reason in the summary, and the product.
    #[test]
    fn format_auto_reports_the_choice_and_multiplies() {
        let dir =
            std::env::temp_dir().join(format!("ferrocuda-cli-spmv-auto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, x, y) = (dir.join("A.mtx"), dir.join("x.mtx"), dir.join("y.mtx"));
        std::fs::write(
            &a,
            "%%MatrixMarket matrix coordinate real general\n4 4 8\n\
             1 1 1\n1 2 2\n2 1 3\n2 2 4\n3 3 5\n3 4 6\n4 3 7\n4 4 8\n",
        )
        .unwrap();
        std::fs::write(
            &x,
            "%%MatrixMarket matrix array real general\n4 1\n1\n1\n1\n1\n",
        )
        .unwrap();
        let args = SpmvArgs {
            matrix: a,
            x,
            out: y.clone(),
            format: SpmvFormat::Auto,
            block_size: None,
            device: DeviceArg::default(),
        };
        let summary = run(&args, Where::Cpu).unwrap();
        assert!(
            summary.contains("format Auto -> bcsr with 2 x 2 blocks (") && summary.contains("full"),
            "{summary}"
        );
        let f = std::io::BufReader::new(std::fs::File::open(&y).unwrap());
        let (n, m, v) = ferrocuda::sparse::mm::read_dense::<f64, _>(f).unwrap();
        assert_eq!((n, m, v), (4, 1, vec![3.0, 7.0, 11.0, 15.0]));
        // An explicit format says nothing more.
        let csr = SpmvArgs {
            format: SpmvFormat::Csr,
            ..args
        };
        let summary = run(&csr, Where::Cpu).unwrap();
        assert!(summary.contains("format Csr on Cpu"), "{summary}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
