//! `ferrocuda lu --matrix A.mtx [--rhs B.mtx --out X.mtx] [--pivoting partial|none]
//! [--device cpu|gpu] [--precision f64|f32] [--block NB] [--json]`: factors `P A = L U`
//! and, with `--rhs`, solves `A X = B` for every column of `B`.
//!
//! `A` may be a Matrix Market `array` or `coordinate` file (real, general); `B` an
//! `array` (`n x k`) or `coordinate` file. The report has the backward error
//! `||P A - L U||_1 / (||A||_1 n eps)` and, with `--rhs`, the largest relative residual
//! `||A x - b||_inf / (||A||_inf ||x||_inf + ||b||_inf)` over the columns. A singular
//! matrix (an exactly zero pivot) exits with code 2 and names the column; `--out` is
//! written only on success.
//!
//! ```sh
//! ferrocuda lu --matrix A.mtx --rhs b.mtx --out x.mtx --device gpu --json
//! ```

use std::io::BufReader;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Serialize;

use ferrocuda::dense::{LuOptions, LuReport, LuScalar, Matrix, Pivoting, cpu, gpu};
use ferrocuda::sparse::mm;
use ferrocuda::{Error, Result};

/// Where `ferrocuda lu` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LuDevice {
    /// The CPU (all cores).
    Cpu,
    /// The GPU (the global `--device N` before the subcommand picks which).
    Gpu,
}

/// Row pivoting on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LuPivoting {
    /// Partial pivoting (LAPACK getrf).
    Partial,
    /// None (seed 004's algorithms; fails on a zero pivot).
    None,
}

/// Arguments of `ferrocuda lu`.
#[derive(Debug, Clone, clap::Args)]
pub struct LuArgs {
    /// The matrix A (Matrix Market, array or coordinate, real).
    #[arg(long)]
    pub matrix: PathBuf,
    /// Right-hand sides B (Matrix Market, n x k).
    #[arg(long)]
    pub rhs: Option<PathBuf>,
    /// Where the solution X goes (Matrix Market array); needs --rhs.
    #[arg(long, requires = "rhs")]
    pub out: Option<PathBuf>,
    /// Row pivoting.
    #[arg(long, value_enum, default_value_t = LuPivoting::Partial)]
    pub pivoting: LuPivoting,
    /// CPU or GPU.
    #[arg(long = "device", value_enum, default_value_t = LuDevice::Cpu)]
    pub on: LuDevice,
    /// Floating-point precision of the factorisation.
    #[arg(long, value_enum, default_value_t = super::Precision::F64)]
    pub precision: super::Precision,
    /// Panel width (1..=512).
    #[arg(long, default_value_t = 384)]
    pub block: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `ferrocuda lu` reports.
#[derive(Debug, Clone, Serialize)]
pub struct LuCliReport {
    /// The matrix file.
    pub matrix: String,
    /// Order.
    pub n: usize,
    /// Precision.
    pub precision: &'static str,
    /// Where it ran.
    pub device: LuDevice,
    /// The factorisation's report (times, pivoting, device name).
    pub lu: LuReport,
    /// `||P A - L U||_1 / (||A||_1 n eps)`.
    pub backward_error: f64,
    /// Right-hand sides solved.
    pub rhs_columns: usize,
    /// Largest relative residual over the right-hand sides.
    pub max_relative_residual: Option<f64>,
}

impl LuCliReport {
    /// A few lines of text.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "LU of {} ({} x {}, {}) on {}: {:.3} ms, backward error {:.3e}",
            self.matrix,
            self.n,
            self.n,
            self.precision,
            self.lu.device,
            self.lu.factor_ms,
            self.backward_error
        );
        if let Some(r) = self.max_relative_residual {
            s.push_str(&format!(
                "\nsolved {} right-hand side(s): largest relative residual {r:.3e}",
                self.rhs_columns
            ));
        }
        s
    }
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op: "lu",
        reason: format!("{}: {e}", path.display()),
    }
}

/// Reads a real Matrix Market file (array or coordinate) as a dense matrix.
fn read_matrix<T: LuScalar>(path: &Path) -> Result<Matrix<T>> {
    if super::is_complex("lu", path)? {
        return Err(file_error(path, "complex matrices are not supported by lu"));
    }
    let open = || {
        std::fs::File::open(path)
            .map(BufReader::new)
            .map_err(|e| file_error(path, e))
    };
    let mut banner = String::new();
    std::io::BufRead::read_line(&mut open()?, &mut banner).map_err(|e| file_error(path, e))?;
    if banner.to_ascii_lowercase().contains("coordinate") {
        let coo = mm::read_coo::<T, _>(open()?).map_err(|e| file_error(path, e))?;
        let mut m = Matrix::zeros(coo.n_rows(), coo.n_cols());
        let nr = coo.n_rows();
        let data = m.as_mut_slice();
        for ((&r, &c), &v) in coo.rows().iter().zip(coo.cols()).zip(coo.values()) {
            let x = &mut data[r as usize + c as usize * nr];
            *x = *x + v; // duplicates add, as in the sparse readers
        }
        Ok(m)
    } else {
        let (r, c, v) = mm::read_dense::<T, _>(open()?).map_err(|e| file_error(path, e))?;
        Matrix::new(r, c, v)
    }
}

/// Runs `ferrocuda lu` (on GPU `ordinal` with `--device gpu`).
pub fn run(args: &LuArgs, ordinal: usize) -> Result<LuCliReport> {
    match args.precision {
        super::Precision::F64 => run_t::<f64>(args, ordinal),
        super::Precision::F32 => run_t::<f32>(args, ordinal),
    }
}

fn run_t<T: LuScalar>(args: &LuArgs, ordinal: usize) -> Result<LuCliReport> {
    let a: Matrix<T> = read_matrix(&args.matrix)?;
    let b: Option<Matrix<T>> = args.rhs.as_deref().map(read_matrix).transpose()?;
    if let Some(b) = &b
        && b.nrows() != a.nrows()
    {
        return Err(Error::DimensionMismatch {
            op: "lu",
            what: "rows of --rhs",
            expected: a.nrows(),
            found: b.nrows(),
        });
    }
    let opts = LuOptions::default()
        .with_block(args.block)
        .with_pivoting(match args.pivoting {
            LuPivoting::Partial => Pivoting::Partial,
            LuPivoting::None => Pivoting::None,
        });
    let lu = match args.on {
        LuDevice::Cpu => cpu::factor(&a, &opts)?,
        LuDevice::Gpu => gpu::factor(&ferrocuda::gpu::open(ordinal)?, &a, &opts)?,
    };
    let mut report = LuCliReport {
        matrix: args.matrix.display().to_string(),
        n: a.nrows(),
        precision: T::SUFFIX,
        device: args.on,
        backward_error: lu.report.backward_error.unwrap_or(f64::NAN),
        lu: lu.report.clone(),
        rhs_columns: 0,
        max_relative_residual: None,
    };
    if let Some(b) = b {
        let x = lu.solve(&b)?;
        report.rhs_columns = b.ncols();
        report.max_relative_residual = Some(max_relative_residual(&a, &x, &b));
        if let Some(out) = &args.out {
            let f = std::fs::File::create(out).map_err(|e| file_error(out, e))?;
            mm::write_dense(
                std::io::BufWriter::new(f),
                x.nrows(),
                x.ncols(),
                x.as_slice(),
            )
            .map_err(|e| file_error(out, e))?;
        }
    }
    Ok(report)
}

/// `max_j ||A x_j - b_j||_inf / (||A||_inf ||x_j||_inf + ||b_j||_inf)`, in `f64`.
fn max_relative_residual<T: LuScalar>(a: &Matrix<T>, x: &Matrix<T>, b: &Matrix<T>) -> f64 {
    let n = a.nrows();
    let norm_a = (0..n)
        .map(|i| (0..n).map(|j| a.get(i, j).to_f64().abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut worst = 0.0f64;
    for j in 0..b.ncols() {
        let mut r: Vec<f64> = (0..n).map(|i| -b.get(i, j).to_f64()).collect();
        for p in 0..n {
            let xp = x.get(p, j).to_f64();
            for (i, ri) in r.iter_mut().enumerate() {
                *ri += a.get(i, p).to_f64() * xp;
            }
        }
        let rn = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let xn = (0..n).fold(0.0f64, |m, i| m.max(x.get(i, j).to_f64().abs()));
        let bn = (0..n).fold(0.0f64, |m, i| m.max(b.get(i, j).to_f64().abs()));
        let d = norm_a * xn + bn;
        worst = worst.max(if d == 0.0 { 0.0 } else { rn / d });
    }
    worst
}
