//! `ferrocuda lu --matrix A.mtx [--rhs B.mtx --out X.mtx] [--pivoting partial|none]
//! [--device cpu|gpu|N] [--precision f64|f32] [--block NB] [--force] [--json]`: factors `P A = L U`
//! and, with `--rhs`, solves `A X = B` for every column of `B`.
//!
//! `A` may be a Matrix Market `array` or `coordinate` file (real, general); `B` an
//! `array` (`n x k`) or `coordinate` file. NaN or infinity in either, or (with
//! `--precision f32`) a value beyond `f32`'s range such as `1e39`, is an error naming the
//! file and the entry (1-based row and column), before anything is factorised.
//!
//! The report has `rcond`, the estimated reciprocal condition number in the 1-norm
//! (LAPACK `gecon`), the normwise relative backward error `||P A - L U||_1 / ||A||_1`
//! (and the same divided by `n eps`, named as such) and, with `--rhs`, the largest
//! relative residual `||A x - b||_inf / (||A||_inf ||x||_inf + ||b||_inf)` over the
//! columns. Exit statuses (docs/reliability.md): 2 for a singular matrix (an exactly zero
//! pivot, naming the column) and for one singular to working precision (`rcond < eps`,
//! the message gives `rcond`); `--force` solves the latter anyway, with a warning on
//! stderr. `--pivoting none` on a zero pivot says "zero pivot without pivoting" (exit 1:
//! the matrix may be nonsingular). `--out` is written only on success.
//!
//! ```sh
//! ferrocuda lu --matrix A.mtx --rhs b.mtx --out x.mtx --device gpu --json
//! ```

use std::path::PathBuf;

use clap::ValueEnum;
use serde::Serialize;

use ferrocuda::dense::{LuOptions, LuReport, LuScalar, Matrix, Pivoting, cpu, gpu};
use ferrocuda::{Error, Result};

use crate::device::{DeviceArg, Where};
use crate::files::{self, Input, file_error, mm_error};
use crate::numbers::count;
use crate::report::Report;

const OP: &str = "lu";

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
    /// Where to compute.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Floating-point precision of the factorisation.
    #[arg(long, value_enum, default_value_t = crate::Precision::F64)]
    pub precision: crate::Precision,
    /// Panel width (1..=512).
    #[arg(long, default_value_t = 384, value_parser = count, allow_hyphen_values = true)]
    pub block: usize,
    /// Solve even where the matrix is singular to working precision (rcond below the
    /// machine epsilon): the solution may have no correct digit; a warning says so.
    #[arg(long)]
    pub force: bool,
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
    /// Where it ran: `cpu` or `gpu`.
    pub device: Where,
    /// The factorisation's report (times, pivoting, device name, rcond).
    pub lu: LuReport,
    /// Estimated reciprocal condition number in the 1-norm (LAPACK `gecon`).
    pub rcond: f64,
    /// The normwise relative backward error `||P A - L U||_1 / ||A||_1`.
    pub backward_error: f64,
    /// [`LuCliReport::backward_error`] divided by `n eps` (of order 1 or below for a
    /// stable factorisation).
    pub scaled_backward_error: f64,
    /// Right-hand sides solved.
    pub rhs_columns: usize,
    /// Largest relative residual over the right-hand sides.
    pub max_relative_residual: Option<f64>,
}

impl LuCliReport {
    /// A few lines of text.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "LU of {} ({} x {}, {}) on {}: {:.3} ms, rcond {:.3e} (1-norm estimate), backward error ||P A - L U||_1 / ||A||_1 = {:.3e} ({:.3} n eps)",
            self.matrix,
            self.n,
            self.n,
            self.precision,
            self.lu.device,
            self.lu.factor_ms,
            self.rcond,
            self.backward_error,
            self.scaled_backward_error
        );
        if self.lu.singular_to_working_precision {
            s.push_str(&format!(
                "\nsingular to working precision: rcond below the {} machine epsilon {:.3e} (--force: reported anyway)",
                self.precision, self.lu.eps
            ));
        }
        if let Some(r) = self.max_relative_residual {
            s.push_str(&format!(
                "\nsolved {} right-hand side(s): largest relative residual {r:.3e}",
                self.rhs_columns
            ));
        }
        s
    }
}

impl Report for LuCliReport {
    fn text(&self) -> String {
        self.to_text()
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}

impl LuArgs {
    /// Checks the options alone.
    pub fn validate(&self) -> Result<()> {
        if !(1..=512).contains(&self.block) {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!(
                    "--block: the panel width block = {} is outside 1..=512",
                    self.block
                ),
            });
        }
        Ok(())
    }
}

/// Reads a real Matrix Market file (array or coordinate) as a dense matrix; NaN or
/// infinity (also an `f32` overflow) is an error naming the file and the entry.
fn read_matrix<T: LuScalar>(input: Input, what: &'static str) -> Result<Matrix<T>> {
    let label = input.label().to_string();
    let m = input.read_mm()?;
    if m.is_complex() {
        return Err(file_error(
            OP,
            &label,
            "complex matrices are not supported by lu",
        ));
    }
    let a = m.into_dense::<T>().map_err(|e| mm_error(OP, &label, e))?;
    let a = Matrix::new(a.n_rows, a.n_cols, a.values)?;
    a.check_finite(OP, what).map_err(|e| match e {
        Error::NonFinite {
            row, col, reason, ..
        } => file_error(
            OP,
            &label,
            format!(
                "entry ({}, {}) (1-based row, column) is {}: {reason}",
                row + 1,
                col + 1,
                a.get(row, col).to_f64()
            ),
        ),
        e => e,
    })?;
    Ok(a)
}

/// Runs `ferrocuda lu` (on the GPU with `--device gpu|N`).
pub fn run(args: &LuArgs, on: Where) -> Result<LuCliReport> {
    args.validate()?;
    match args.precision {
        crate::Precision::F64 => run_t::<f64>(args, on),
        crate::Precision::F32 => run_t::<f32>(args, on),
    }
}

fn run_t<T: LuScalar>(args: &LuArgs, on: Where) -> Result<LuCliReport> {
    let ia = Input::open(OP, "--matrix", &args.matrix)?;
    let ib = args
        .rhs
        .as_deref()
        .map(|p| Input::open(OP, "--rhs", p))
        .transpose()?;
    let inputs: Vec<&Input> = [Some(&ia), ib.as_ref()].into_iter().flatten().collect();
    let out = files::optional_output(OP, "--out", args.out.as_ref(), &inputs)?;
    let a: Matrix<T> = read_matrix(ia, "A")?;
    let b: Option<Matrix<T>> = ib.map(|i| read_matrix(i, "B")).transpose()?;
    if let Some(b) = &b
        && b.nrows() != a.nrows()
    {
        return Err(Error::DimensionMismatch {
            op: OP,
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
    let lu = match on.open()? {
        None => cpu::factor(&a, &opts)?,
        Some(g) => gpu::factor(&g, &a, &opts)?,
    };
    // Singular to working precision: exit status 2 with rcond, nothing written, unless
    // the user forces the solve.
    match lu.report.check_conditioning(OP) {
        Err(e) if args.force => eprintln!(
            "warning: {}; going on because of --force",
            crate::report::user_words(&e.to_string())
        ),
        r => r?,
    }
    let backward_error = lu.report.backward_error.unwrap_or(f64::NAN);
    let mut report = LuCliReport {
        matrix: args.matrix.display().to_string(),
        n: a.nrows(),
        precision: T::SUFFIX,
        device: on,
        rcond: lu.report.rcond,
        backward_error,
        scaled_backward_error: lu.report.scaled_backward_error.unwrap_or(f64::NAN),
        lu: lu.report.clone(),
        rhs_columns: 0,
        max_relative_residual: None,
    };
    if let Some(b) = b {
        // Conditioning decided above.
        let x = lu.solve_forced(&b)?;
        report.rhs_columns = b.ncols();
        report.max_relative_residual = Some(max_relative_residual(&a, &x, &b));
        if let Some(out) = &out {
            files::write_array(out, x.nrows(), x.ncols(), x.as_slice())?;
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
