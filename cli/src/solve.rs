//! `ferrocuda solve --matrix A.mtx --rhs b.mtx --out x.mtx`: solves `A x = b` by restarted
//! GMRES ([`ferrocuda::krylov`]) on the CPU or the GPU and writes `x` as a Matrix Market
//! array file.
//!
//! ```text
//! ferrocuda solve --matrix A.mtx --rhs b.mtx --out x.mtx \
//!     [--x0 x0.mtx] [--restart 30] [--tol 1e-8] [--atol 0] [--max-iter 1000] \
//!     [--orth cgs2|mgs] [--precond none|jacobi|block-jacobi] [--block-size 5] \
//!     [--device cpu|gpu] [--json] [--quiet] [--progress-interval 0.5]
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
//!   infinity in any file is an error naming the file and the entry.
//! * **Convergence**: `|b - A x| <= max(tol |b|, atol)` (`--tol` is relative). Not
//!   converging within `--max-iter` Arnoldi steps (or stagnating) is a result, not an
//!   error: the last iterate is written, a warning goes to stderr, the JSON says
//!   `"converged": false` with the `reason`, and the exit status is 0. A zero `b` gives
//!   `x = 0`.
//! * **Operator format**: CSR on the CPU; SBELL on the GPU (block size `--block-size`, at
//!   most 8), falling back to BCSR where SBELL cannot take the matrix (the fallback and why
//!   are reported). `--block-size` is also the block size of block Jacobi (at most 8);
//!   point Jacobi has none. Where a blocked format or block Jacobi is used and `n` is not
//!   a multiple of the block size, the system is padded with identity rows
//!   (`A_pad = diag(A, I)`, `b_pad = (b, 0)`, so `x_pad = (x, 0)` and the
//!   preconditioners stay nonsingular) and the solution trimmed back.
//! * **Output**: `x` goes to a temporary file that is renamed to `--out` only on success,
//!   so a failed run leaves an existing `--out` untouched. Without `--quiet`, progress
//!   (iteration and estimated relative residual) goes to stderr at most every
//!   `--progress-interval` seconds, and a short summary to stdout; `--json` prints the
//!   report as JSON to stdout instead of the summary.
//! * **GPU**: `--device gpu` here picks the GPU over the CPU; which GPU is the global
//!   ordinal given before the subcommand (`ferrocuda --device 1 solve ... --device gpu`),
//!   0 by default.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;
use serde::Serialize;

use ferrocuda::Complex;
use ferrocuda::RealScalar;
use ferrocuda::blas1::Element;
use ferrocuda::gpu;
use ferrocuda::krylov::gpu::KrylovElement;
use ferrocuda::krylov::precond::MAX_BLOCK;
use ferrocuda::krylov::{
    BlockJacobi, DeviceBlockJacobi, DeviceLinOp, GmresOptions, GmresReport, LinOp,
    Orthogonalization, Preconditioner, StopReason, cpu as kcpu, gpu as kgpu,
};
use ferrocuda::sparse::gpu::{DeviceBcsr, DeviceSbell};
use ferrocuda::sparse::{Bcsr, BlockFit, BlockLayout, Coo, CooParts, Csr, MatrixScalar, Sbell, mm};
use ferrocuda::{Error, Result};
use ferrocuda_kernels::names::{PrecondKernels, SpmvKernels};

use crate::choices::{PrecondArg, choice};

/// Where `ferrocuda solve` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveDevice {
    /// All CPU cores.
    Cpu,
    /// The GPU (the global `--device N` before the subcommand picks which).
    Gpu,
}

/// Orthogonalisation of `ferrocuda solve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolveOrth {
    /// Classical Gram-Schmidt twice, the second pass delayed (DCGS2): one host round trip
    /// per step.
    Cgs2,
    /// Modified Gram-Schmidt.
    Mgs,
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
    #[arg(long, default_value_t = 30)]
    pub restart: usize,
    /// Relative tolerance: stop when |b - A x| <= max(tol |b|, atol).
    #[arg(long, default_value_t = 1e-8)]
    pub tol: f64,
    /// Absolute tolerance on |b - A x|.
    #[arg(long, default_value_t = 0.0)]
    pub atol: f64,
    /// Most Arnoldi steps in total (over all restart cycles).
    #[arg(long, default_value_t = 1000)]
    pub max_iter: usize,
    /// Orthogonalisation.
    #[arg(long, value_enum, default_value_t = SolveOrth::Cgs2)]
    pub orth: SolveOrth,
    /// Right preconditioner.
    #[arg(long, value_parser = choice::<PrecondArg, Preconditioner>(), default_value = "none")]
    pub precond: Preconditioner,
    /// Block size of the GPU's SBELL format (at most 8; larger ones run BCSR) and of
    /// block Jacobi (at most 8).
    #[arg(long, default_value_t = 5)]
    pub block_size: usize,
    /// CPU or GPU.
    #[arg(long = "device", value_enum, default_value_t = SolveDevice::Cpu)]
    pub on: SolveDevice,
    /// Print the report as JSON on stdout (instead of the summary).
    #[arg(long)]
    pub json: bool,
    /// No progress lines and no summary (warnings and errors still go to stderr).
    #[arg(long)]
    pub quiet: bool,
    /// Seconds between progress lines on stderr (0: every iteration).
    #[arg(long, default_value_t = 0.5)]
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
    /// `converged`, `zero_rhs`, `max_iterations` or `stagnation`.
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
    pub device: &'static str,
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
        format!(
            "{status}, relative residual {:.3e} (|b - A x| = {:.3e}, tol {:e}{atol})\n\
             wrote {} ({} x 1, {}); A {n} x {n}, {} stored entries; {} on the {}{}, GMRES({}) {}, precond {}\n\
             time: solve {:.4} s (spmv {:.4}, orthogonalization {:.4}, rest {:.4}), set-up {:.4} s, reading {:.4} s",
            self.relative_residual,
            self.residual,
            self.tol,
            self.out.display(),
            self.n,
            self.scalar,
            self.nnz,
            self.format,
            self.device,
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

fn file_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op: "solve",
        reason: format!("{}: {e}", path.display()),
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "solve",
        reason,
    }
}

/// Runs `ferrocuda solve` on GPU `ordinal` (where `--device gpu`): solves, writes `--out`,
/// prints progress and the warning for non-convergence to stderr; returns the report.
pub fn run(args: &SolveArgs, ordinal: usize) -> Result<SolveReport> {
    let mut complex =
        super::is_complex("solve", &args.matrix)? || super::is_complex("solve", &args.rhs)?;
    if let Some(x0) = &args.x0 {
        complex |= super::is_complex("solve", x0)?;
    }
    let report = if complex {
        run_typed::<Complex<f64>>(args, ordinal)?
    } else {
        run_typed::<f64>(args, ordinal)?
    };
    if !report.converged {
        eprintln!(
            "warning: GMRES did not converge ({}) after {} iterations: relative residual {:.3e}, |b - A x| = {:.3e}, above max(tol |b|, atol) with tol {:e}, atol {:e}; {} holds the last iterate",
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

/// `Err` naming the file and the first NaN or infinity of a vector file.
fn check_finite_vector<T: Element>(path: &Path, v: &[T]) -> Result<()> {
    match v.iter().position(|&e| !finite(e)) {
        None => Ok(()),
        Some(i) => Err(file_error(
            path,
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

/// Reads an `n x 1` array file.
fn read_vector<T: Element>(path: &Path, what: &str, n: usize, a_path: &Path) -> Result<Vec<T>> {
    let f = File::open(path).map_err(|e| file_error(path, e))?;
    let (rows, cols, v) =
        mm::read_dense::<T, _>(BufReader::new(f)).map_err(|e| file_error(path, e))?;
    if cols != 1 {
        return Err(file_error(
            path,
            format!("{what} must be a column vector (n x 1), the file is {rows} x {cols}"),
        ));
    }
    if rows != n {
        return Err(file_error(
            path,
            format!(
                "dimension mismatch: {what} has length {rows}, but A ({}) is {n} x {n}, so expected {n}",
                a_path.display()
            ),
        ));
    }
    check_finite_vector(path, &v)?;
    Ok(v)
}

/// `a` (square, `n x n`) with identity rows and columns appended up to `np`.
fn pad_identity<T: Element>(a: Coo<T>, np: usize) -> Result<Coo<T>> {
    let n = a.n_rows();
    if np == n {
        return Ok(a);
    }
    let mut p: CooParts<T> = a.into_parts();
    p.n_rows = np;
    p.n_cols = np;
    for i in n..np {
        let i = ferrocuda::sparse::Index::try_from(i)
            .map_err(|_| invalid(format!("padded size {np} exceeds the index type")))?;
        p.rows.push(i);
        p.cols.push(i);
        p.values.push(T::ONE);
    }
    Coo::from_parts(p).map_err(|r| Error::from(r.error))
}

/// The system as read and padded.
struct System<T> {
    /// `n_padded x n_padded`.
    a: Csr<T>,
    b: Vec<T>,
    x0: Vec<T>,
    n: usize,
    nnz: usize,
}

/// The result of one solve on either device.
struct Solved<T> {
    x: Vec<T>,
    report: GmresReport,
    format: &'static str,
    format_note: Option<String>,
    gpu_name: Option<String>,
    setup: f64,
}

fn run_typed<T>(args: &SolveArgs, ordinal: usize) -> Result<SolveReport>
where
    T: KrylovElement + MatrixScalar<T> + SpmvKernels<T> + PrecondKernels<T>,
{
    let bs = args.block_size;
    if bs == 0 {
        return Err(invalid("--block-size must be at least 1".into()));
    }
    if args.precond == Preconditioner::BlockJacobi && bs > MAX_BLOCK {
        return Err(invalid(format!(
            "--block-size {bs}: block Jacobi takes blocks of at most {MAX_BLOCK} x {MAX_BLOCK} (point Jacobi, --precond jacobi, has no limit)"
        )));
    }
    if args.restart == 0 {
        return Err(invalid("--restart must be at least 1".into()));
    }
    for (flag, v) in [("--tol", args.tol), ("--atol", args.atol)] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(invalid(format!("{flag} must be finite and >= 0, got {v}")));
        }
    }
    if !(args.progress_interval >= 0.0 && args.progress_interval.is_finite()) {
        return Err(invalid(format!(
            "--progress-interval must be finite and >= 0, got {}",
            args.progress_interval
        )));
    }
    let opts = GmresOptions::default()
        .restart(args.restart)
        .rtol(args.tol)
        .atol(args.atol)
        .max_iter(args.max_iter)
        .orthogonalization(match args.orth {
            SolveOrth::Cgs2 => Orthogonalization::Cgs2,
            SolveOrth::Mgs => Orthogonalization::Mgs,
        });

    // Read and check everything before any work.
    let t_read = Instant::now();
    let f = File::open(&args.matrix).map_err(|e| file_error(&args.matrix, e))?;
    let coo: Coo<T> = mm::read_coo(BufReader::new(f)).map_err(|e| file_error(&args.matrix, e))?;
    let (n, nc) = (coo.n_rows(), coo.n_cols());
    if n != nc {
        return Err(file_error(
            &args.matrix,
            format!("the matrix must be square to solve A x = b, it is {n} x {nc}"),
        ));
    }
    if let Some(k) = coo.values().iter().position(|&v| !finite(v)) {
        return Err(file_error(
            &args.matrix,
            format!(
                "entry ({}, {}) is {:?}: NaN and infinity are not allowed",
                coo.rows()[k] as usize + 1,
                coo.cols()[k] as usize + 1,
                coo.values()[k]
            ),
        ));
    }
    let b: Vec<T> = read_vector(&args.rhs, "the right-hand side b", n, &args.matrix)?;
    let x0: Vec<T> = match &args.x0 {
        Some(p) => read_vector(p, "the initial guess x0", n, &args.matrix)?,
        None => vec![T::ZERO; n],
    };
    let read = t_read.elapsed().as_secs_f64();

    // Blocked formats (the GPU's) and block Jacobi need whole blocks.
    let blocked = args.on == SolveDevice::Gpu || args.precond == Preconditioner::BlockJacobi;
    let np = if blocked {
        n.div_ceil(bs)
            .checked_mul(bs)
            .ok_or_else(|| invalid(format!("{n} rows padded to blocks of {bs} overflow")))?
    } else {
        n
    };
    let t_setup = Instant::now();
    let coo = pad_identity(coo, np)?;
    let a = Csr::from(&coo);
    drop(coo);
    let nnz = a.nnz() - (np - n);
    let mut sys = System { a, b, x0, n, nnz };
    sys.b.resize(np, T::ZERO);
    sys.x0.resize(np, T::ZERO);
    let setup_read = t_setup.elapsed().as_secs_f64();

    let progress_every = args.progress_interval;
    let start = Instant::now();
    let mut last = start;
    let mut printer = |it: usize, rel: f64| {
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

    let mut solved = match args.on {
        SolveDevice::Cpu => solve_cpu(&sys, args, &opts, progress)?,
        SolveDevice::Gpu => solve_gpu(&sys, args, ordinal, &opts, progress)?,
    };
    solved.setup += setup_read;
    let mut x = solved.x;
    x.truncate(n);

    // Write next to the target, then rename: a failure leaves an existing file as it was.
    let tmp = args.out.with_extension("mtx.partial");
    let written = File::create(&tmp)
        .map_err(|e| file_error(&tmp, e))
        .and_then(|f| {
            mm::write_dense(BufWriter::new(f), x.len(), 1, &x).map_err(|e| file_error(&tmp, e))
        })
        .and_then(|()| std::fs::rename(&tmp, &args.out).map_err(|e| file_error(&args.out, e)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;

    let r = solved.report;
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
        device: match args.on {
            SolveDevice::Cpu => "cpu",
            SolveDevice::Gpu => "gpu",
        },
        gpu_name: solved.gpu_name,
        precond: args.precond,
        format: solved.format,
        format_note: solved.format_note,
        block_size: bs,
        scalar: T::SUFFIX,
        n: sys.n,
        n_padded: np,
        nnz: sys.nnz,
        restart: args.restart,
        tol: args.tol,
        atol: args.atol,
        max_iter: args.max_iter,
        orth: match args.orth {
            SolveOrth::Cgs2 => "cgs2",
            SolveOrth::Mgs => "mgs",
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
            setup: solved.setup,
            read,
        },
        history: r.history,
    })
}

/// The padded matrix in BCSR with `--block-size` blocks.
fn to_bcsr<T: Element>(sys: &System<T>, bs: usize) -> Result<Bcsr<T>> {
    Ok(Bcsr::from_csr(
        &sys.a,
        bs,
        BlockLayout::RowMajor,
        BlockFit::Exact,
    )?)
}

fn solve_cpu<T>(
    sys: &System<T>,
    args: &SolveArgs,
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<Solved<T>>
where
    T: KrylovElement + MatrixScalar<T>,
{
    let t = Instant::now();
    let m: Option<BlockJacobi<T>> = match args.precond {
        Preconditioner::None => None,
        // Point Jacobi needs no blocks: 1 x 1 keeps the copy as small as CSR.
        Preconditioner::Jacobi => Some(BlockJacobi::point(&to_bcsr(sys, 1)?)?),
        Preconditioner::BlockJacobi => Some(BlockJacobi::new(&to_bcsr(sys, args.block_size)?)?),
    };
    let setup = t.elapsed().as_secs_f64();
    let mut x = sys.x0.clone();
    let report = kcpu::gmres_with_progress(
        &sys.a,
        m.as_ref().map(|m| m as &dyn LinOp<T>),
        &sys.b,
        &mut x,
        opts,
        progress,
    )?;
    Ok(Solved {
        x,
        report,
        format: "csr",
        format_note: None,
        gpu_name: None,
        setup,
    })
}

fn solve_gpu<T>(
    sys: &System<T>,
    args: &SolveArgs,
    ordinal: usize,
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<Solved<T>>
where
    T: KrylovElement + MatrixScalar<T> + SpmvKernels<T> + PrecondKernels<T>,
{
    let g = gpu::open(ordinal)?;
    let gpu_name = g.name().ok();
    let t = Instant::now();
    let bcsr = to_bcsr(sys, args.block_size)?;
    let (op, format, format_note): (Box<dyn DeviceLinOp<T>>, _, _) = match Sbell::from_bcsr(&bcsr) {
        Ok(s) => (Box::new(DeviceSbell::upload(&g, &s)?), "sbell", None),
        Err(e) => {
            let note = format!("SBELL cannot take this matrix ({e}); using BCSR");
            if !args.quiet {
                eprintln!("[solve] {note}");
            }
            (Box::new(DeviceBcsr::upload(&g, &bcsr)?), "bcsr", Some(note))
        }
    };
    let m: Option<DeviceBlockJacobi<T>> = match args.precond {
        Preconditioner::None => None,
        Preconditioner::Jacobi => Some(DeviceBlockJacobi::point(&g, &bcsr)?),
        Preconditioner::BlockJacobi => Some(DeviceBlockJacobi::new(&g, &bcsr)?),
    };
    drop(bcsr);
    let db = g.upload(&sys.b)?;
    let mut dx = g.upload(&sys.x0)?;
    g.synchronize()?;
    let setup = t.elapsed().as_secs_f64();
    let report = kgpu::gmres_with_progress(
        op.as_ref(),
        m.as_ref().map(|m| m as &dyn DeviceLinOp<T>),
        &db,
        &mut dx,
        opts,
        progress,
    )?;
    let x = dx.download()?;
    Ok(Solved {
        x,
        report,
        format,
        format_note,
        gpu_name,
        setup,
    })
}
