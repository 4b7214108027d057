//! `ferrocuda solve --matrix A.mtx --rhs b.mtx --out x.mtx`: solves `A x = b` by restarted
//! GMRES ([`ferrocuda::krylov`]) on the CPU or the GPU and writes `x` as a Matrix Market
//! array file.
//!
//! ```text
//! ferrocuda solve --matrix A.mtx --rhs b.mtx --out x.mtx \
//!     [--x0 x0.mtx] [--restart 30] [--tol 1e-8] [--atol 0] [--max-iter 1000] \
//!     [--orth cgs2|mgs|pipelined] [--precond none|jacobi|block-jacobi|ilu0] [--block-size 5] \
//!     [--storage full|f32] [--basis full|f32] \
//!     [--device cpu|gpu|N] [--json] [--quiet] [--progress-interval 0.5]
//!
//! # e.g. block-Jacobi-preconditioned GMRES(50) on the GPU, JSON report on stdout:
//! ferrocuda solve --matrix A.mtx --rhs b.mtx --out x.mtx --restart 50 \
//!     --precond block-jacobi --block-size 5 --device gpu --json
//! ```
//!
//! * **Files** as for `ferrocuda spmv`: `A` is a `coordinate` file, `b` (and `x0`) `n x 1`
//!   `array` files. Real or complex is taken from the banners (any complex file makes the
//!   whole solve `Complex<f64>`; real values read into complex get zero imaginary parts);
//!   precision is f64. `A` must be square, `b` and `x0` as long as `A` has rows; NaN or
//!   infinity in any file is an error naming the file and the entry. Each file is read
//!   once (pipes work); `--out` may be none of the inputs.
//! * **Convergence**: `|b - A x| <= max(tol |b|, atol)` (`--tol` is relative). Not
//!   converging within `--max-iter` Arnoldi steps, stagnating or diverging is a result,
//!   not an error: the best iterate GMRES saw (the smallest true residual; `x0` where
//!   none was better, never a diverged one) is written, a warning with its residual goes
//!   to stderr, the JSON says `"converged": false` with the `reason` (`max_iterations`,
//!   `stagnation`, `diverged`), and the exit status is 3 (docs/reliability.md). A zero
//!   `b` gives `x = 0`.
//! * **Operator format**: the library prepares and solves the system
//!   ([`ferrocuda::krylov::Solver`], [`ferrocuda::krylov::DeviceSolver`]): CSR on the CPU;
//!   SBELL on the GPU (block size `--block-size`, at most 8), falling back to BCSR where
//!   SBELL cannot take the matrix (the fallback and why are reported). `--block-size` is also the block size of block Jacobi (at most 8);
//!   point Jacobi has none. Where a blocked format or block Jacobi is used and `n` is not
//!   a multiple of the block size, the system is padded with identity rows
//!   (`A_pad = diag(A, I)`, `b_pad = (b, 0)`, so `x_pad = (x, 0)` and the
//!   preconditioners stay nonsingular) and the solution trimmed back.
//! * **Reduced precision**: `--storage f32` keeps the matrix values in f32 (half the
//!   bytes of every SpMV), and the Jacobi factors too (ILU(0)'s with `--ilu-sweeps`),
//!   `--basis f32` the Krylov basis (CB-GMRES: half the bytes of
//!   the orthogonalisation; needs `--orth cgs2`); vectors and arithmetic stay in f64, and
//!   every restart's residual is the true f64 one, so `--tol` holds for A itself. Where
//!   the reduced precision stalls, a full-precision GMRES finishes with the steps left;
//!   the JSON's `refinement` says what happened ([`ferrocuda::krylov::MatrixStorage`],
//!   [`ferrocuda::krylov::BasisStorage`]).
//! * **Output**: `x` goes to a temporary file that is renamed to `--out` only on success,
//!   so a failed run leaves an existing `--out` untouched. Without `--quiet`, progress
//!   (iteration and estimated relative residual) goes to stderr at most every
//!   `--progress-interval` seconds, and a short summary to stdout; `--json` prints the
//!   report as JSON to stdout instead of the summary.
//! * **GPU**: `--device gpu` picks GPU 0 (or the one named before the subcommand),
//!   `--device N` GPU `N` ([`crate::device`]).

use std::path::PathBuf;
use std::time::Instant;

use clap::ValueEnum;
use serde::Serialize;

use ferrocuda::Complex;
use ferrocuda::RealScalar;
use ferrocuda::blas1::Element;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::DeviceSolveElement;
use ferrocuda::krylov::gpu::KrylovElement;
use ferrocuda::krylov::precond::MAX_BLOCK;
use ferrocuda::krylov::{
    BasisStorage, DeviceSolver, GmresOptions, IluOptions, MatrixStorage, Orthogonalization,
    Preconditioner, Refinement, Solution, SolveOptions, Solver, StopReason, StorageScalar,
};
use ferrocuda::sparse::mm::MmObject;
use ferrocuda::sparse::{Coo, Csr, Format};
use ferrocuda::{Error, Result};

use crate::choices::{PrecondArg, choice};
use crate::device::{DeviceArg, Where};
use crate::files::{self, Input, file_error, mm_error};
use crate::numbers::count;
use crate::report::{Report, Status};

const OP: &str = "solve";

/// Orthogonalisation of `ferrocuda solve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveOrth {
    /// Classical Gram-Schmidt twice, the second pass delayed (DCGS2): one host round trip
    /// per step.
    Cgs2,
    /// Modified Gram-Schmidt.
    Mgs,
    /// Pipelined GMRES (p(1)-GMRES): classical Gram-Schmidt once, the operator applied
    /// one step ahead while the step's dots travel (for distributed solves).
    Pipelined,
}

/// How `ferrocuda solve` stores the matrix GMRES iterates with (`--storage`) and the
/// Krylov basis (`--basis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveStorage {
    /// In f64 (c64).
    Full,
    /// In f32 (c32), vectors and arithmetic in f64; each restart's residual is the true
    /// f64 one, so the tolerance holds for A itself (a full-precision GMRES finishes
    /// where the reduced precision stalls; reported).
    F32,
}

/// Arguments of `ferrocuda solve`.
#[derive(Debug, Clone, clap::Args)]
pub struct SolveArgs {
    /// Matrix Market coordinate file of A (square).
    #[arg(long)]
    pub matrix: PathBuf,
    /// Matrix Market array file of b (n x 1).
    #[arg(long)]
    pub rhs: PathBuf,
    /// Where to write the solution x (Matrix Market array).
    #[arg(long)]
    pub out: PathBuf,
    /// Matrix Market array file of the initial guess (n x 1); zero without it.
    #[arg(long)]
    pub x0: Option<PathBuf>,
    /// Restart length m of GMRES(m).
    #[arg(long, default_value_t = 30, value_parser = count, allow_hyphen_values = true)]
    pub restart: usize,
    /// Relative tolerance: stop when |b - A x| <= max(tol |b|, atol).
    #[arg(long, default_value_t = 1e-8, allow_hyphen_values = true)]
    pub tol: f64,
    /// Absolute tolerance on |b - A x|.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub atol: f64,
    /// Most Arnoldi steps in total (over all restart cycles).
    #[arg(long, default_value_t = 1000, value_parser = count, allow_hyphen_values = true)]
    pub max_iter: usize,
    /// Orthogonalisation.
    #[arg(long, value_enum, default_value_t = SolveOrth::Cgs2)]
    pub orth: SolveOrth,
    /// Storage of the matrix values in the Krylov iteration.
    #[arg(long, value_enum, default_value_t = SolveStorage::Full)]
    pub storage: SolveStorage,
    /// Storage of the Krylov basis (f32: CB-GMRES; needs --orth cgs2).
    #[arg(long, value_enum, default_value_t = SolveStorage::Full)]
    pub basis: SolveStorage,
    /// Right preconditioner.
    #[arg(long, value_parser = choice::<PrecondArg, Preconditioner>(), default_value = "none")]
    pub precond: Preconditioner,
    /// Block size of the GPU's SBELL format (at most 8; larger ones run BCSR) and of
    /// block Jacobi (at most 8).
    #[arg(long, default_value_t = 5, value_parser = count, allow_hyphen_values = true)]
    pub block_size: usize,
    /// ILU(0)'s triangular solves by N Jacobi sweeps per factor, all rows at once, instead
    /// of exact substitution (one GPU launch per level: slow where the levels are
    /// thousands, as on 3-D grids); 3 is a sensible choice. Needs --precond ilu0
    #[arg(long, value_name = "N", value_parser = count, allow_hyphen_values = true)]
    pub ilu_sweeps: Option<usize>,
    /// Where to compute.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Print the report as JSON on stdout (instead of the summary).
    #[arg(long)]
    pub json: bool,
    /// No progress and no summary (warnings and errors still go to stderr): the global
    /// `--quiet`, which may also be given after `solve` (set by [`crate::run`]).
    #[arg(skip)]
    pub quiet: bool,
    /// Seconds between progress lines on stderr (0: every iteration).
    #[arg(long, default_value_t = 0.5, allow_hyphen_values = true)]
    pub progress_interval: f64,
}

/// Time spent, in seconds: the solver's phases and the set-up before it.
#[derive(Debug, Clone, Serialize)]
pub struct SolveTiming {
    /// The GMRES solve (`spmv + precond + orthogonalization + rest`).
    pub total: f64,
    /// Operator applications.
    pub spmv: f64,
    /// Preconditioner applications.
    pub precond: f64,
    /// Orthogonalisation.
    pub orthogonalization: f64,
    /// Everything else inside the solve.
    pub rest: f64,
    /// Before the solve: conversion to the operator format, building the preconditioner,
    /// uploads (reading the files not included).
    pub setup: f64,
    /// Reading the input files.
    pub read: f64,
}

/// What `ferrocuda solve` did (printed by `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct SolveReport {
    /// Whether `|b - A x| <= max(tol |b|, atol)`.
    pub converged: bool,
    /// `converged`, `zero_rhs`, `max_iterations`, `stagnation` or `diverged`.
    pub reason: &'static str,
    /// Arnoldi steps.
    pub iterations: usize,
    /// Restart cycles started.
    pub cycles: usize,
    /// `|b - A x| / |b|` (0 for a zero `b`).
    pub relative_residual: f64,
    /// `|b - A x|`, computed at the end.
    pub residual: f64,
    /// `|b|`.
    pub rhs_norm: f64,
    /// `|b - A x0|`.
    pub initial_residual: f64,
    /// `cpu` or `gpu`.
    pub device: Where,
    /// The GPU's name (GPU runs only).
    pub gpu_name: Option<String>,
    /// `none`, `jacobi` or `block-jacobi`.
    pub precond: Preconditioner,
    /// The operator's storage format: `csr`, `sbell` or `bcsr`.
    pub format: &'static str,
    /// Why the preferred format was not used, where it was not.
    pub format_note: Option<String>,
    /// `--block-size`.
    pub block_size: usize,
    /// `--ilu-sweeps`: ILU(0)'s Jacobi sweeps per factor (`null`: exact solves).
    pub ilu_sweeps: Option<usize>,
    /// `f64` or `c64`.
    pub scalar: &'static str,
    /// Unknowns.
    pub n: usize,
    /// Unknowns after padding to a multiple of the block size.
    pub n_padded: usize,
    /// Stored entries of A as read (duplicates counted once).
    pub nnz: usize,
    /// The options GMRES ran with.
    pub restart: usize,
    /// Relative tolerance.
    pub tol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Iteration limit.
    pub max_iter: usize,
    /// `cgs2` or `mgs`.
    pub orth: &'static str,
    /// Input and output files.
    pub matrix: PathBuf,
    /// The right-hand side file.
    pub rhs: PathBuf,
    /// The initial-guess file, if any.
    pub x0: Option<PathBuf>,
    /// The solution file written.
    pub out: PathBuf,
    /// Seconds per phase.
    pub timing: SolveTiming,
    /// The estimated relative residual after every Arnoldi step.
    pub history: Vec<f64>,
    /// `full` or `f32` (`--storage`).
    pub storage: MatrixStorage,
    /// `full` or `f32` (`--basis`).
    pub basis: BasisStorage,
    /// With `--storage f32` or `--basis f32`: the steps of each refinement solve, the
    /// true relative residuals, and the full-precision fallback where there was one.
    pub refinement: Option<Refinement>,
}

impl Report for SolveReport {
    fn text(&self) -> String {
        self.to_text()
    }

    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// Not converged (`max_iterations`, `stagnation`, `diverged`): exit status 3.
    fn status(&self) -> Status {
        if self.converged || self.reason == "zero_rhs" {
            Status::Success
        } else {
            Status::NotConverged
        }
    }
}

impl SolveReport {
    /// A few lines for people.
    pub fn to_text(&self) -> String {
        let status = if self.reason == "zero_rhs" {
            "zero right-hand side: x = 0".to_string()
        } else if self.converged {
            format!(
                "converged: {} iterations in {} cycle{}",
                self.iterations,
                self.cycles,
                if self.cycles == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "NOT converged ({}): {} iterations in {} cycle{}",
                self.reason.replace('_', " "),
                self.iterations,
                self.cycles,
                if self.cycles == 1 { "" } else { "s" }
            )
        };
        let atol = if self.atol > 0.0 {
            format!(", atol {:e}", self.atol)
        } else {
            String::new()
        };
        let t = &self.timing;
        let storage = match &self.refinement {
            Some(rf) => format!(
                "\nmatrix {}, basis {}: refinement solves of {:?} steps, true relative residuals {}{}",
                self.storage,
                self.basis,
                rf.steps,
                rf.residuals
                    .iter()
                    .map(|r| format!("{r:.2e}"))
                    .collect::<Vec<_>>()
                    .join(" -> "),
                rf.fallback.as_ref().map_or(String::new(), |w| format!(
                    "; finished in full precision ({} steps): {w}",
                    rf.fallback_steps
                ))
            ),
            None => String::new(),
        };
        format!(
            "{status}, relative residual {:.3e} (|b - A x| = {:.3e}, tol {:e}{atol})\n\
             wrote {} ({} x 1, {}); A {n} x {n}, {} stored entries; {} on the {}{}, GMRES({}) {}, precond {}\n\
             time: solve {:.4} s (spmv {:.4}, orthogonalization {:.4}, rest {:.4}), set-up {:.4} s, reading {:.4} s{storage}",
            self.relative_residual,
            self.residual,
            self.tol,
            self.out.display(),
            self.n,
            self.scalar,
            self.nnz,
            self.format,
            self.device.name(),
            self.gpu_name
                .as_ref()
                .map_or(String::new(), |g| format!(" ({g})")),
            self.restart,
            self.orth,
            self.precond,
            t.total,
            t.spmv,
            t.orthogonalization,
            t.rest,
            t.setup,
            t.read,
            n = self.n,
        )
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument { op: OP, reason }
}

impl SolveArgs {
    /// Checks the options alone (before any file is read).
    pub fn validate(&self) -> Result<()> {
        let bs = self.block_size;
        if bs == 0 {
            return Err(invalid("--block-size must be at least 1 (got 0)".into()));
        }
        if self.precond == Preconditioner::BlockJacobi && bs > MAX_BLOCK {
            return Err(invalid(format!(
                "--block-size {bs}: block Jacobi takes blocks of at most {MAX_BLOCK} x {MAX_BLOCK} (point Jacobi, --precond jacobi, has no limit)"
            )));
        }
        if self.precond == Preconditioner::Ilu0 && bs > MAX_BLOCK {
            return Err(invalid(format!(
                "--block-size {bs}: block ILU(0) takes blocks of at most {MAX_BLOCK} x {MAX_BLOCK} (--block-size 1: point ILU(0))"
            )));
        }
        match self.ilu_sweeps {
            Some(0) => {
                return Err(invalid(
                    "--ilu-sweeps must be at least 1 (without it: exact triangular solves)".into(),
                ));
            }
            Some(_) if self.precond != Preconditioner::Ilu0 => {
                return Err(invalid(format!(
                    "--ilu-sweeps applies to --precond ilu0, not to --precond {}",
                    self.precond
                )));
            }
            _ => {}
        }
        if self.restart == 0 {
            return Err(invalid("--restart must be at least 1 (got 0)".into()));
        }
        for (flag, v) in [("--tol", self.tol), ("--atol", self.atol)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(invalid(format!("{flag} must be finite and >= 0, got {v}")));
            }
        }
        if !(self.progress_interval >= 0.0 && self.progress_interval.is_finite()) {
            return Err(invalid(format!(
                "--progress-interval must be finite and >= 0, got {}",
                self.progress_interval
            )));
        }
        Ok(())
    }
}

/// Runs `ferrocuda solve` on `on`: solves, writes `--out`, prints progress and the
/// warning for non-convergence to stderr; returns the report.
pub fn run(args: &SolveArgs, on: Where) -> Result<SolveReport> {
    args.validate()?;
    let ia = Input::open(OP, "--matrix", &args.matrix)?;
    let ib = Input::open(OP, "--rhs", &args.rhs)?;
    let ix0 = args
        .x0
        .as_deref()
        .map(|p| Input::open(OP, "--x0", p))
        .transpose()?;
    let inputs: Vec<&Input> = [Some(&ia), Some(&ib), ix0.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    let out = files::output(OP, "--out", &args.out, &inputs)?;
    let t_read = Instant::now();
    let label = |i: &Input| i.label().to_string();
    let (la, lb, lx0) = (label(&ia), label(&ib), ix0.as_ref().map(label));
    let a = ia.read_mm()?;
    let b = ib.read_mm()?;
    let x0 = ix0.map(Input::read_mm).transpose()?;
    let complex = a.is_complex() || b.is_complex() || x0.as_ref().is_some_and(MmObject::is_complex);
    let files = Files {
        a: (a, la),
        b: (b, lb),
        x0: x0.zip(lx0),
        read: t_read,
    };
    let report = if complex {
        run_typed::<Complex<f64>>(files, args, on, &out)?
    } else {
        run_typed::<f64>(files, args, on, &out)?
    };
    if report.status() != Status::Success {
        eprintln!(
            "warning: GMRES did not converge ({}) after {} iterations: relative residual {:.3e}, |b - A x| = {:.3e}, above max(tol |b|, atol) with tol {:e}, atol {:e}; {} holds the best iterate (the smallest true residual seen; x0 where none was better) (exit status 3)",
            report.reason.replace('_', " "),
            report.iterations,
            report.relative_residual,
            report.residual,
            report.tol,
            report.atol,
            report.out.display()
        );
    }
    Ok(report)
}

/// The files as read (once), with their labels.
struct Files {
    a: (MmObject, String),
    b: (MmObject, String),
    x0: Option<(MmObject, String)>,
    read: Instant,
}

/// `Err` naming the file and the first NaN or infinity of a vector file.
fn check_finite_vector<T: Element>(label: &str, v: &[T]) -> Result<()> {
    match v.iter().position(|&e| !finite(e)) {
        None => Ok(()),
        Some(i) => Err(file_error(
            OP,
            label,
            format!(
                "entry {} is {:?}: NaN and infinity are not allowed",
                i + 1,
                v[i]
            ),
        )),
    }
}

fn finite<T: Element>(e: T) -> bool {
    e.re().to_f64().is_finite() && e.im().to_f64().is_finite()
}

/// An `n x 1` array file as a vector.
fn read_vector<T: Element>(
    (m, label): (MmObject, String),
    what: &str,
    n: usize,
    a_label: &str,
) -> Result<Vec<T>> {
    let (rows, cols) = m.shape();
    if cols != 1 {
        return Err(file_error(
            OP,
            &label,
            format!("{what} must be a column vector (n x 1), the file is {rows} x {cols}"),
        ));
    }
    if rows != n {
        return Err(file_error(
            OP,
            &label,
            format!(
                "dimension mismatch: {what} has length {rows}, but A ({a_label}) is {n} x {n}, so expected {n}"
            ),
        ));
    }
    let v = m
        .into_array::<T>()
        .map_err(|e| mm_error(OP, &label, e))?
        .values;
    check_finite_vector(&label, &v)?;
    Ok(v)
}

/// The system as read: `A` (square, finite), `b` and `x0` (checked against the files).
struct System<T> {
    a: Csr<T>,
    b: Vec<T>,
    x0: Option<Vec<T>>,
}

fn run_typed<T>(
    f: Files,
    args: &SolveArgs,
    on: Where,
    out: &ferrocuda_bench::output::Target,
) -> Result<SolveReport>
where
    T: DeviceSolveElement,
{
    let bs = args.block_size;
    // A cycle cannot take more than max_iter steps: a larger restart is the same solve
    // with a smaller workspace.
    let gmres = GmresOptions::default()
        .restart(args.restart.min(args.max_iter.max(1)))
        .rtol(args.tol)
        .atol(args.atol)
        .max_iter(args.max_iter)
        .orthogonalization(match args.orth {
            SolveOrth::Cgs2 => Orthogonalization::Cgs2,
            SolveOrth::Mgs => Orthogonalization::Mgs,
            SolveOrth::Pipelined => Orthogonalization::Pipelined,
        })
        .basis(match args.basis {
            SolveStorage::Full => BasisStorage::Full,
            SolveStorage::F32 => BasisStorage::F32,
        });
    let opts = SolveOptions::default()
        .gmres(gmres)
        .precond(args.precond)
        .block_size(bs)
        .ilu(IluOptions::default().sweeps(args.ilu_sweeps))
        .storage(match args.storage {
            SolveStorage::Full => MatrixStorage::Full,
            SolveStorage::F32 => MatrixStorage::F32,
        });

    // Check everything before any work, naming the files.
    let (a, la) = f.a;
    let (n, nc) = a.shape();
    if n != nc {
        return Err(file_error(
            OP,
            &la,
            format!("the matrix must be square to solve A x = b, it is {n} x {nc}"),
        ));
    }
    if on == Where::Cpu {
        // The Krylov basis is the solve's largest allocation: refused here, in the
        // options' words, before anything is converted.
        let basis = args.restart.min(args.max_iter) as u128 + 1;
        ferrocuda::alloc::check_host_bytes(
            &format!(
                "solve --restart {} --max-iter {}: the GMRES workspace of {basis} basis vectors and 4 more of length {n} ({})",
                args.restart,
                args.max_iter,
                T::SUFFIX
            ),
            ferrocuda::alloc::bytes_of(
                (basis + 4).saturating_mul(n as u128 + bs as u128),
                size_of::<T>(),
            ),
        )?;
    }
    let b: Vec<T> = read_vector(f.b, "the right-hand side b", n, &la)?;
    let x0: Option<Vec<T>> = match f.x0 {
        Some(x0) => Some(read_vector(x0, "the initial guess x0", n, &la)?),
        None => None,
    };
    let coo: Coo<T> = a.into_coo().map_err(|e| mm_error(OP, &la, e))?;
    if let Some(k) = coo.values().iter().position(|&v| !finite(v)) {
        return Err(file_error(
            OP,
            &la,
            format!(
                "entry ({}, {}) is {:?}: NaN and infinity are not allowed",
                coo.rows()[k] as usize + 1,
                coo.cols()[k] as usize + 1,
                coo.values()[k]
            ),
        ));
    }
    let a = Csr::try_from_coo(&coo).map_err(|e| mm_error(OP, &la, e))?;
    drop(coo);
    let read = f.read.elapsed().as_secs_f64();
    let sys = System { a, b, x0 };

    let progress_every = args.progress_interval;
    let start = Instant::now();
    let mut last = start;
    // A bar where stderr is a terminal (not with --quiet or --json), else progress lines.
    let bar = if args.quiet {
        ferrocuda_bench::progress::ProgressBar::hidden()
    } else {
        ferrocuda_bench::progress::bar(args.max_iter as u64, "solve")
    };
    let mut printer = |it: usize, rel: f64| {
        if !bar.is_hidden() {
            bar.set_position(it as u64);
            bar.set_message(format!("relative residual {rel:.3e}"));
            return;
        }
        let now = Instant::now();
        if now.duration_since(last).as_secs_f64() >= progress_every {
            last = now;
            eprintln!(
                "[solve] iteration {it}: relative residual {rel:.3e} ({:.1} s)",
                now.duration_since(start).as_secs_f64()
            );
        }
    };
    let progress: Option<&mut dyn FnMut(usize, f64)> =
        if args.quiet { None } else { Some(&mut printer) };

    let gpu = on.open()?;
    let gpu_name = gpu.as_ref().and_then(|g| g.name().ok());
    let solved = match &gpu {
        None => solve_cpu(&sys, &opts, progress).map(|s| (s, None)),
        Some(g) => solve_gpu(&sys, g, &opts, args.quiet, progress),
    };
    bar.finish_and_clear();
    let (solution, format_note) = solved?;
    files::write_array(out, solution.x.len(), 1, &solution.x)?;

    let s = solution.report;
    let r = s.gmres;
    Ok(SolveReport {
        converged: r.converged,
        reason: match r.reason {
            StopReason::Converged => "converged",
            StopReason::ZeroRhs => "zero_rhs",
            StopReason::MaxIterations => "max_iterations",
            StopReason::Stagnation => "stagnation",
            StopReason::Diverged => "diverged",
        },
        iterations: r.iterations,
        cycles: r.cycles,
        relative_residual: r.relative_residual,
        residual: r.residual,
        rhs_norm: r.rhs_norm,
        initial_residual: r.initial_residual,
        device: on,
        gpu_name,
        precond: args.precond,
        format: s.format.format.name(),
        format_note,
        block_size: bs,
        ilu_sweeps: args.ilu_sweeps,
        scalar: T::SUFFIX,
        n: s.n,
        n_padded: s.n_padded,
        nnz: sys.a.nnz(),
        restart: args.restart,
        tol: args.tol,
        atol: args.atol,
        max_iter: args.max_iter,
        orth: match args.orth {
            SolveOrth::Cgs2 => "cgs2",
            SolveOrth::Mgs => "mgs",
            SolveOrth::Pipelined => "pipelined",
        },
        matrix: args.matrix.clone(),
        rhs: args.rhs.clone(),
        x0: args.x0.clone(),
        out: args.out.clone(),
        timing: SolveTiming {
            total: r.timing.total,
            spmv: r.timing.spmv,
            precond: r.timing.precond,
            orthogonalization: r.timing.orthogonalization,
            rest: r.timing.rest,
            setup: s.setup_seconds,
            read,
        },
        history: r.history,
        storage: s.storage,
        basis: s.basis,
        refinement: s.refinement,
    })
}

/// CSR on the CPU ([`Solver`]).
fn solve_cpu<T>(
    sys: &System<T>,
    opts: &SolveOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<Solution<T>>
where
    T: KrylovElement + StorageScalar,
{
    let solver = Solver::new(&sys.a, &opts.clone().format(Format::Csr))?;
    solver.solve_with_progress(&sys.b, sys.x0.as_deref(), progress)
}

/// SBELL on the GPU ([`DeviceSolver`]), BCSR where SBELL cannot take the matrix (then
/// with the note why, also on stderr unless `quiet`).
fn solve_gpu<T>(
    sys: &System<T>,
    g: &Gpu,
    opts: &SolveOptions,
    quiet: bool,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<(Solution<T>, Option<String>)>
where
    T: DeviceSolveElement,
{
    let (solver, note) = match DeviceSolver::upload(g, &sys.a, &opts.clone().format(Format::Sbell))
    {
        Ok(s) => (s, None),
        // A conversion error: the format cannot hold the matrix (device errors pass).
        Err(Error::Sparse(e)) => {
            let note = format!("SBELL cannot take this matrix ({e}); using BCSR");
            if !quiet {
                eprintln!("[solve] {note}");
            }
            let solver = DeviceSolver::upload(g, &sys.a, &opts.clone().format(Format::Bcsr))?;
            (solver, Some(note))
        }
        Err(e) => return Err(e),
    };
    Ok((
        solver.solve_with_progress(&sys.b, sys.x0.as_deref(), progress)?,
        note,
    ))
}
