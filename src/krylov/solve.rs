//! `A x = b` from a [`Csr`] matrix in about three calls, on either device:
//! [`Solver::new`] (CPU) or [`DeviceSolver::upload`] (GPU) prepares the system once,
//! `solve(&b, x0)` runs GMRES and returns the solution with a [`SolveReport`].
//!
//! What the preparation does, the same on both devices:
//! 1. checks that `A` is square and finite ([`Csr::check_finite`]), and the options;
//! 2. pads the system to whole blocks where a block size is given and the format may be
//!    blocked ([`Format::Auto`] or a blocked one) or block Jacobi asks for blocks:
//!    `diag(A, I) (x, 0) = (b, 0)` ([`Csr::pad_identity`]), so the solution is the first
//!    `n` entries and the preconditioners stay nonsingular;
//! 3. stores the matrix in the format asked for ([`Format::Auto`]: chosen for the device
//!    from the structure, e.g. SBELL, else BCSR, for block matrices on the GPU; the
//!    [`FormatChoice`] says what and why; rules in [`crate::sparse::auto`]);
//! 4. builds the preconditioner ([`Preconditioner`]): point Jacobi, or block Jacobi with
//!    the given block size, else the block size of the format chosen, else the one the
//!    choice detected; or ILU(0) ([`super::BlockIlu0`], on the GPU
//!    [`super::DeviceBlockIlu0`], the same factors) with the given block size, else the
//!    format's (at most [`MAX_BLOCK`]), else 1 (point ILU(0)).
//!
//! 5. with [`MatrixStorage::F32`] (a double-precision system), also a copy of the
//!    matrix with its values rounded to `f32` ([`crate::sparse::narrow`]; an entry beyond
//!    `f32::MAX` is an error naming it), which GMRES iterates with: vectors and arithmetic
//!    stay in `f64`, each SpMV reads about half the bytes, and refinement with the `f64`
//!    residual brings the true residual to the tolerance, with a full-precision GMRES to
//!    finish where the refinement stalls ([`SolveReport::refinement`] says what happened;
//!    the maths at [`MatrixStorage::F32`]). The preconditioner is built from the
//!    full-precision matrix; its factors are then rounded to `f32` too
//!    ([`BlockJacobi::narrowed`]; ILU(0)'s with Jacobi-sweep solves,
//!    [`BlockIlu0::narrowed`], factored in full precision first). ILU(0)'s factors for
//!    exact (level-scheduled) solves stay in full precision: those solves wait on each
//!    row's chain of dependencies, not on bytes, and ran 16 % slower per application with
//!    f32 factors on case 6 (H200, run 104), while the sweeps, which stream the factors,
//!    ran 12 % faster.
//!    [`super::BasisStorage::F32`] in the GMRES options (CB-GMRES) keeps the Krylov
//!    basis in `f32` the same way, alone or with the matrix.
//!
//! `solve` checks `b` and `x0` (lengths, NaN and infinity, naming the entry), pads them
//! with zeros, runs GMRES ([`super::cpu::gmres`], [`super::gpu::gmres`]) and trims the
//! solution. Non-convergence is a report, not an error, as in GMRES. For vectors that
//! stay on the device, use [`DeviceMatrix`] with [`super::gpu::gmres`] directly.
//!
//! ```
//! use ferrocuda::krylov::{DeviceSolver, Preconditioner, SolveOptions, Solver};
//! use ferrocuda::sparse::{Coo, Csr};
//! // A 1-D convection-diffusion matrix (nonsymmetric), n = 100.
//! let n = 100;
//! let mut coo = Coo::<f64>::empty(n, n)?;
//! for i in 0..n {
//!     coo.push(i, i, 4.0)?;
//!     if i > 0 { coo.push(i, i - 1, -1.5)?; }
//!     if i + 1 < n { coo.push(i, i + 1, -0.5)?; }
//! }
//! let a = Csr::from(&coo);
//! let b = vec![1.0; n];
//! let opts = SolveOptions::default().precond(Preconditioner::Jacobi);
//! let solution = match ferrocuda::gpu::open(0) {
//!     Ok(gpu) => {
//!         println!("on the GPU");
//!         DeviceSolver::upload(&gpu, &a, &opts)?.solve(&b, None)?
//!     }
//!     Err(e) if e.is_no_device() => {
//!         println!("no GPU ({e}): on the CPU");
//!         Solver::new(&a, &opts)?.solve(&b, None)?
//!     }
//!     Err(e) => return Err(e.into()),
//! };
//! let r = &solution.report;
//! assert!(r.gmres.converged, "{r:?}");
//! println!("{} iterations, residual {:.1e}, {}: {}", r.gmres.iterations,
//!     r.gmres.relative_residual, r.format.format, r.format.reason);
//! assert_eq!(solution.x.len(), n);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::time::Instant;

use ferrocuda_host::{DeviceBuffer, Gpu};
use serde::Serialize;

mod refine;

use super::cpu::check_finite;
use super::gpu::KrylovElement;
use super::ilu::IluKernels;
use super::precond::{MAX_BLOCK, PrecondKernels};
use super::{
    BasisStorage, BlockIlu0, BlockJacobi, DeviceBlockIlu0, DeviceBlockJacobi, DeviceLinOp,
    GmresOptions, GmresReport, IluOptions, LinOp, Preconditioner,
};
use crate::blas1::Element;
use crate::error::{Error, Result, check_len};
use crate::sparse::gpu::{DeviceMatrix, SpmvKernels};
use crate::sparse::{
    Bcsr, BlockFit, BlockLayout, Csr, Format, FormatChoice, FormatOptions, Matrix, MatrixScalar,
    Target, padded_size,
};
use crate::staging::Staging;

/// How [`Solver`] and [`DeviceSolver`] store the matrix that GMRES iterates with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MatrixStorage {
    /// In the system's scalar type.
    #[default]
    Full,
    /// Values rounded to `f32` (`Complex<f32>`), vectors and arithmetic in `f64`, the
    /// accuracy recovered by refinement with the full-precision residual:
    ///
    /// GMRES's Arnoldi steps apply `A_32` (`A` rounded to `f32`), each restart computes
    /// the true residual `b - A x` with `A` itself, and the next cycle starts from it
    /// ([`super::gpu::gmres_refined`]): every cycle is a step of iterative refinement,
    /// and the convergence test is `A`'s. What a cycle leaves is about the rounding,
    /// `|A - A_32| |d|` (`6e-8 |A| |d|`), so where `A_32` is a good model of `A` the steps
    /// are those of the full-precision solve, give or take a cycle. Where it is not,
    /// GMRES stagnates (or diverges, the best iterate kept) and GMRES with `A` itself
    /// finishes from there with the steps left (reported, with the reason). A
    /// single-precision system is stored so already: the same as
    /// [`MatrixStorage::Full`].
    F32,
}

impl std::fmt::Display for MatrixStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MatrixStorage::Full => "full",
            MatrixStorage::F32 => "f32",
        })
    }
}

/// Scalars a [`Solver`] or [`DeviceSolver`] can store in single precision
/// ([`MatrixStorage::F32`]): `Stored` is `f32` for `f64` and `Complex<f32>` for
/// `Complex<f64>`; single-precision scalars store themselves.
pub trait StorageScalar: Element<Low: Element + MatrixScalar<Self>> + MatrixScalar<Self> {
    /// The storage type of [`MatrixStorage::F32`].
    type Stored: Element + MatrixScalar<Self>;
    /// `a` with its values rounded to `Stored` ([`crate::sparse::narrow`]; an entry
    /// beyond `f32::MAX` is an error naming it), `None` where `Self` is single already.
    fn stored_csr(a: &Csr<Self>) -> Result<Option<Csr<Self::Stored>>>;
}

impl StorageScalar for f64 {
    type Stored = f32;
    fn stored_csr(a: &Csr<f64>) -> Result<Option<Csr<f32>>> {
        Ok(Some(crate::sparse::narrow::csr_to_f32(a)?))
    }
}

impl StorageScalar for crate::Complex<f64> {
    type Stored = crate::Complex<f32>;
    fn stored_csr(a: &Csr<Self>) -> Result<Option<Csr<crate::Complex<f32>>>> {
        Ok(Some(crate::sparse::narrow::csr_to_f32(a)?))
    }
}

impl StorageScalar for f32 {
    type Stored = f32;
    fn stored_csr(_: &Csr<f32>) -> Result<Option<Csr<f32>>> {
        Ok(None)
    }
}

impl StorageScalar for crate::Complex<f32> {
    type Stored = crate::Complex<f32>;
    fn stored_csr(_: &Csr<Self>) -> Result<Option<Csr<crate::Complex<f32>>>> {
        Ok(None)
    }
}

/// What the refinement of [`MatrixStorage::F32`] or [`BasisStorage::F32`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Refinement {
    /// Arnoldi steps of the GMRES solve in reduced precision (the single-precision
    /// matrix and/or basis; one entry).
    pub steps: Vec<usize>,
    /// The true relative residual `|b - A x| / |b|` (`A` in full precision): at the
    /// start, after the refined solve, and after the fallback where there was one.
    pub residuals: Vec<f64>,
    /// Why a full-precision GMRES finished the solve (the refined solve stagnated or
    /// diverged with steps left); `None` where it was not needed.
    pub fallback: Option<String>,
    /// Arnoldi steps of that full-precision GMRES.
    pub fallback_steps: usize,
}

/// Options of [`Solver`] and [`DeviceSolver`]; `Default`: GMRES's defaults, no
/// preconditioner, [`Format::Auto`], block size detected.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct SolveOptions {
    /// GMRES (restart, tolerances, iteration limit, orthogonalisation).
    pub gmres: GmresOptions,
    /// The right preconditioner.
    pub precond: Preconditioner,
    /// Storage format of the operator ([`Format::Auto`]: chosen for the device).
    pub format: Format,
    /// Block size of the blocked formats and of block Jacobi (at most [`MAX_BLOCK`] for
    /// block Jacobi); where it does not divide `n` the system is padded (module docs).
    /// `None`: detected from the matrix (no padding).
    pub block_size: Option<usize>,
    /// How the matrix GMRES iterates with is stored ([`MatrixStorage::F32`]: refinement).
    pub storage: MatrixStorage,
    /// ILU(0)'s options (shift, pivot tolerance, exact or Jacobi-sweep triangular
    /// solves) where [`SolveOptions::precond`] is [`Preconditioner::Ilu0`].
    pub ilu: IluOptions,
}

impl SolveOptions {
    setters! {
        /// Sets [`SolveOptions::gmres`].
        gmres: GmresOptions;
        /// Sets [`SolveOptions::precond`].
        precond: Preconditioner;
        /// Sets [`SolveOptions::format`].
        format: Format;
        /// Sets [`SolveOptions::storage`].
        storage: MatrixStorage;
        /// Sets [`SolveOptions::ilu`].
        ilu: IluOptions;
    }
    /// Sets [`SolveOptions::block_size`].
    pub fn block_size(mut self, b: usize) -> Self {
        self.block_size = Some(b);
        self
    }
}

/// What a [`Solver`] or [`DeviceSolver`] did: GMRES's report, the format chosen and why,
/// the preconditioner and the sizes.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct SolveReport {
    /// Iterations, residuals, history, timings of the solve.
    pub gmres: GmresReport,
    /// Where it ran.
    pub device: Target,
    /// The operator's format, what was asked, and why ([`Matrix::choice`]).
    pub format: FormatChoice,
    /// The preconditioner.
    pub precond: Preconditioner,
    /// Block size of the preconditioner's blocks (1 for point Jacobi; `None` without one).
    pub precond_block_size: Option<usize>,
    /// Unknowns.
    pub n: usize,
    /// Unknowns after padding to whole blocks (`n` where none was needed).
    pub n_padded: usize,
    /// Seconds of the preparation (conversion, preconditioner, uploads).
    pub setup_seconds: f64,
    /// How the matrix was stored (`full` for a single-precision system asked for `f32`:
    /// it is stored so already).
    pub storage: MatrixStorage,
    /// How the Krylov basis was stored (`full` for a single-precision system asked for
    /// `f32`: it is stored so already).
    pub basis: BasisStorage,
    /// What the refinement of [`MatrixStorage::F32`] or [`BasisStorage::F32`] did
    /// (`None` in full precision).
    pub refinement: Option<Refinement>,
    /// Where the seconds of this solve went.
    pub timing: SolveTiming,
}

/// Where the seconds of one [`Solver::solve`] or [`DeviceSolver::solve`] went: the
/// parts around GMRES that a solve from host vectors pays on every call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SolveTiming {
    /// The whole call.
    pub total: f64,
    /// The checks of `b` and `x0` (lengths, every entry finite).
    pub checks: f64,
    /// `b` and `x0` to the device, padded to whole blocks (GPU); their padded copies
    /// (CPU).
    pub inputs: f64,
    /// GMRES, every pass of a refined solve ([`GmresTiming::total`] of
    /// [`SolveReport::gmres`]).
    ///
    /// [`GmresTiming::total`]: super::GmresTiming::total
    pub gmres: f64,
    /// `x` back in host memory, trimmed to `n` (GPU; zero on the CPU, which solves in its
    /// own vector).
    pub output: f64,
}

/// A solution and how it was found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Solution<T> {
    /// `x`, of length `n` (padding removed).
    pub x: Vec<T>,
    /// The report.
    pub report: SolveReport,
}

/// What both devices prepare on the host: the matrix in its format, the BCSR copy the
/// preconditioner is built from, and the sizes.
struct Prepared<T: StorageScalar> {
    matrix: Matrix<T>,
    /// The matrix in single precision ([`MatrixStorage::F32`] of a double system).
    stored: Option<Matrix<T::Stored>>,
    jacobi: Option<Bcsr<T>>,
    info: Info,
}

/// The parts of the report known before the solve.
#[derive(Clone)]
struct Info {
    opts: SolveOptions,
    n: usize,
    n_padded: usize,
    precond_block_size: Option<usize>,
    setup_seconds: f64,
    storage: MatrixStorage,
    basis: BasisStorage,
}

fn invalid(op: &'static str, reason: String) -> Error {
    Error::InvalidArgument { op, reason }
}

/// Steps 1 to 3 of the module docs, and the BCSR copy of step 4.
fn prepare<T: StorageScalar>(
    op: &'static str,
    a: &Csr<T>,
    opts: &SolveOptions,
    target: Target,
) -> Result<Prepared<T>> {
    let (n, nc) = (a.n_rows(), a.n_cols());
    if n != nc {
        return Err(invalid(
            op,
            format!("the matrix must be square to solve A x = b, it is {n} x {nc}"),
        ));
    }
    opts.gmres.validate()?;
    match opts.block_size {
        Some(0) => {
            return Err(invalid(op, "block size b = 0 (must be at least 1)".into()));
        }
        Some(b) if opts.precond == Preconditioner::BlockJacobi && b > MAX_BLOCK => {
            return Err(invalid(
                op,
                format!(
                    "block size b = {b}: block Jacobi takes blocks of at most {MAX_BLOCK} x {MAX_BLOCK} (point Jacobi has no limit)"
                ),
            ));
        }
        Some(b) if opts.precond == Preconditioner::Ilu0 && b > MAX_BLOCK => {
            return Err(invalid(
                op,
                format!(
                    "block size b = {b}: block ILU(0) takes blocks of at most {MAX_BLOCK} x {MAX_BLOCK} (without a block size, point ILU(0))"
                ),
            ));
        }
        _ => {}
    }
    a.check_finite()?;
    let blocked = opts.format == Format::Auto
        || opts.format.is_blocked()
        || matches!(
            opts.precond,
            Preconditioner::BlockJacobi | Preconditioner::Ilu0
        );
    let n_padded = match opts.block_size {
        Some(b) if blocked => padded_size(n, b)?,
        _ => n,
    };
    let a: Cow<'_, Csr<T>> = if n_padded == n {
        Cow::Borrowed(a)
    } else {
        Cow::Owned(a.pad_identity(n_padded)?)
    };
    let fopts = FormatOptions {
        block_size: opts.block_size,
        ..FormatOptions::default()
    };
    let matrix = Matrix::with_options(&a, opts.format, target, &fopts)?;
    let stored = match opts.storage {
        MatrixStorage::Full => None,
        MatrixStorage::F32 => match T::stored_csr(&a)? {
            Some(a32) => Some(Matrix::with_options(&a32, opts.format, target, &fopts)?),
            None => None,
        },
    };
    let storage = if stored.is_some() {
        MatrixStorage::F32
    } else {
        MatrixStorage::Full
    };
    let precond_block_size = match opts.precond {
        Preconditioner::None => None,
        Preconditioner::Jacobi => Some(1),
        Preconditioner::Ilu0 => Some(
            opts.block_size
                .or(matrix.choice().block_size.filter(|&b| b <= MAX_BLOCK))
                .unwrap_or(1),
        ),
        Preconditioner::BlockJacobi => {
            let choice = matrix.choice();
            let detected = choice
                .candidates
                .iter()
                .find(|c| c.format == Format::Bcsr)
                .and_then(|c| c.block_size);
            let b = opts
                .block_size
                .or(choice.block_size)
                .or(detected)
                .ok_or_else(|| {
                    invalid(
                        op,
                        format!(
                            "block Jacobi needs a block size and none of 2..=8 divides the {n} x {n} matrix (give SolveOptions::block_size)"
                        ),
                    )
                })?;
            if b > MAX_BLOCK {
                return Err(invalid(
                    op,
                    format!(
                        "the matrix's block size {b} exceeds block Jacobi's largest, {MAX_BLOCK} (give SolveOptions::block_size)"
                    ),
                ));
            }
            Some(b)
        }
    };
    let jacobi = match precond_block_size {
        None => None,
        Some(b) => Some(Bcsr::from_csr(
            &a,
            b,
            BlockLayout::RowMajor,
            BlockFit::Exact,
        )?),
    };
    Ok(Prepared {
        matrix,
        stored,
        jacobi,
        info: Info {
            opts: opts.clone(),
            n,
            n_padded,
            precond_block_size,
            setup_seconds: 0.0,
            storage,
            // A compressed basis only where it is smaller (a double-precision system).
            basis: if size_of::<T::Stored>() < size_of::<T>() {
                opts.gmres.basis
            } else {
                BasisStorage::Full
            },
        },
    })
}

impl Info {
    /// What runs in single precision, for the report of a fallback; `None`: nothing.
    fn reduced(&self) -> Option<&'static str> {
        match (self.storage, self.basis) {
            (MatrixStorage::Full, BasisStorage::Full) => None,
            (MatrixStorage::F32, BasisStorage::Full) => Some("the matrix in f32"),
            (MatrixStorage::Full, BasisStorage::F32) => Some("the basis in f32"),
            (MatrixStorage::F32, BasisStorage::F32) => Some("the matrix and the basis in f32"),
        }
    }

    /// Checks `b` and `x0`: lengths `n`, every entry finite (the first bad one named).
    fn check_inputs<T: Element>(&self, op: &'static str, b: &[T], x0: Option<&[T]>) -> Result<()> {
        check_len(op, "b", self.n, b.len())?;
        check_finite("b", b)?;
        if let Some(x0) = x0 {
            check_len(op, "x0", self.n, x0.len())?;
            check_finite("x0", x0)?;
        }
        Ok(())
    }

    /// `b` and `x0` (checked already) padded with zeros to `n_padded`.
    fn padded<T: Element>(
        &self,
        op: &'static str,
        b: &[T],
        x0: Option<&[T]>,
    ) -> Result<[Vec<T>; 2]> {
        let pad = |v: Option<&[T]>| -> Result<Vec<T>> {
            let mut p = crate::alloc::try_with_capacity(op, self.n_padded)?;
            match v {
                Some(v) => p.extend_from_slice(v),
                None => p.resize(self.n, T::ZERO),
            }
            p.resize(self.n_padded, T::ZERO);
            Ok(p)
        };
        Ok([pad(Some(b))?, pad(x0)?])
    }

    /// `v` (`n` entries, `None`: zeros) on the device, padded with zeros to `n_padded`:
    /// copied from the caller's slice (through `staging` where there is one), with no
    /// padded copy on the host.
    fn upload_padded<T: Element>(
        &self,
        gpu: &Gpu,
        staging: Option<&Staging<T>>,
        v: Option<&[T]>,
    ) -> Result<DeviceBuffer<T>> {
        let Some(v) = v else {
            return Ok(gpu.alloc_zeroed(self.n_padded)?);
        };
        let mut d = gpu.alloc::<T>(self.n_padded)?;
        Staging::upload(staging, v, &mut d, 0)?;
        Gpu::memset_zero(&mut d.view_mut(self.n..)?)?;
        Ok(d)
    }

    /// The solution trimmed to `n`, with the report.
    fn solution<T>(
        &self,
        mut x: Vec<T>,
        (gmres, refinement): (GmresReport, Option<Refinement>),
        device: Target,
        choice: &FormatChoice,
        timing: SolveTiming,
    ) -> Solution<T> {
        x.truncate(self.n);
        Solution {
            x,
            report: SolveReport {
                gmres,
                device,
                format: choice.clone(),
                precond: self.opts.precond,
                precond_block_size: self.precond_block_size,
                n: self.n,
                n_padded: self.n_padded,
                setup_seconds: self.setup_seconds,
                storage: self.storage,
                basis: self.basis,
                refinement,
                timing,
            },
        }
    }
}

/// The parts of a solve timed as they end ([`SolveTiming`]).
struct Laps {
    started: Instant,
    last: Instant,
}

impl Laps {
    fn start() -> Self {
        let now = Instant::now();
        Laps {
            started: now,
            last: now,
        }
    }

    /// Seconds since the previous lap.
    fn lap(&mut self) -> f64 {
        let now = Instant::now();
        let s = (now - self.last).as_secs_f64();
        self.last = now;
        s
    }

    fn total(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// A system prepared for GMRES on the CPU (module docs): the matrix in its format and
/// the preconditioner, built once; [`Solver::solve`] for each right-hand side.
pub struct Solver<T> {
    matrix: Matrix<T>,
    /// The matrix GMRES iterates with under [`MatrixStorage::F32`].
    stored: Option<Box<dyn LinOp<T> + Send + Sync>>,
    precond: Option<Box<dyn LinOp<T> + Send + Sync>>,
    info: Info,
}

impl<T: StorageScalar> Solver<T> {
    /// Prepares `A x = b` for the CPU. Errors: `a` not square or not finite, invalid
    /// options, a format or block size the matrix cannot take, a singular diagonal
    /// (block) of a Jacobi preconditioner, a zero or tiny pivot of ILU(0) (naming the
    /// row), sizes beyond what the host may allocate.
    pub fn new(a: &Csr<T>, opts: &SolveOptions) -> Result<Self> {
        let t = Instant::now();
        let p = prepare("Solver::new", a, opts, Target::Cpu)?;
        let narrow = p.info.storage == MatrixStorage::F32;
        // ILU(0) factors in f32 only for the sweeps (module docs).
        let narrow_ilu = narrow && opts.ilu.sweeps.is_some();
        let precond: Option<Box<dyn LinOp<T> + Send + Sync>> = match (&p.jacobi, opts.precond) {
            // The factors in single precision with the matrix (module docs).
            (Some(j), Preconditioner::BlockJacobi) if narrow => {
                Some(Box::new(BlockJacobi::new(j)?.narrowed()))
            }
            (Some(j), Preconditioner::Jacobi) if narrow => {
                Some(Box::new(BlockJacobi::point(j)?.narrowed()))
            }
            (Some(j), Preconditioner::BlockJacobi) => Some(Box::new(BlockJacobi::new(j)?)),
            (Some(j), Preconditioner::Ilu0) if narrow_ilu => {
                Some(Box::new(BlockIlu0::with_options(j, &opts.ilu)?.narrowed()?))
            }
            (Some(j), Preconditioner::Ilu0) => {
                Some(Box::new(BlockIlu0::with_options(j, &opts.ilu)?))
            }
            (Some(j), _) => Some(Box::new(BlockJacobi::point(j)?)),
            (None, _) => None,
        };
        let mut info = p.info;
        info.setup_seconds = t.elapsed().as_secs_f64();
        Ok(Solver {
            matrix: p.matrix,
            stored: p
                .stored
                .map(|m| Box::new(m) as Box<dyn LinOp<T> + Send + Sync>),
            precond,
            info,
        })
    }

    /// The operator (padded where the module docs say), in its format.
    pub fn matrix(&self) -> &Matrix<T> {
        &self.matrix
    }

    /// What format was chosen and why.
    pub fn choice(&self) -> &FormatChoice {
        self.matrix.choice()
    }

    /// Solves `A x = b` from `x0` (`None`: zero). Errors: `b` or `x0` not of length `n`
    /// or not finite (naming the entry), and GMRES's.
    pub fn solve(&self, b: &[T], x0: Option<&[T]>) -> Result<Solution<T>> {
        self.solve_with_progress(b, x0, None)
    }

    /// [`Solver::solve`] calling `progress(iteration, estimated relative residual)`
    /// after every step.
    pub fn solve_with_progress(
        &self,
        b: &[T],
        x0: Option<&[T]>,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<Solution<T>> {
        let mut laps = Laps::start();
        let mut timing = SolveTiming::default();
        self.info.check_inputs("Solver::solve", b, x0)?;
        timing.checks = laps.lap();
        let [b, mut x] = self.info.padded("Solver::solve", b, x0)?;
        timing.inputs = laps.lap();
        let m = self.precond.as_deref().map(|m| m as &dyn LinOp<T>);
        let opts = &self.info.opts.gmres;
        let report = match self.info.reduced() {
            None => (
                super::cpu::gmres_with_progress(&self.matrix, m, &b, &mut x, opts, progress)?,
                None,
            ),
            Some(what) => {
                let mut steps = refine::Cpu {
                    a: &self.matrix,
                    stored: match &self.stored {
                        Some(s) => s.as_ref(),
                        None => &self.matrix,
                    },
                    m,
                    b: &b,
                    x: &mut x,
                };
                let (r, rf) = refine::refine(&mut steps, opts, what, progress)?;
                (r, Some(rf))
            }
        };
        // The CPU's x is the solver's own vector: nothing to bring back (`output` 0).
        timing.gmres = report.0.timing.total;
        timing.total = laps.total();
        Ok(self
            .info
            .solution(x, report, Target::Cpu, self.matrix.choice(), timing))
    }
}

/// A system prepared for GMRES on one GPU (module docs): the matrix in its format and the
/// preconditioner, resident on the device; [`DeviceSolver::solve`] for each right-hand
/// side.
pub struct DeviceSolver<T: DeviceSolveElement> {
    matrix: DeviceMatrix<T>,
    /// The matrix GMRES iterates with under [`MatrixStorage::F32`].
    stored: Option<DeviceMatrix<T::Stored>>,
    precond: Option<DevicePrecond<T>>,
    info: Info,
    /// Page-locked memory for `b`, `x0` and `x` (none for short vectors).
    staging: Option<Staging<T>>,
}

/// The scalars a [`DeviceSolver`] solves with (`f32`, `f64`, `Complex<f32>`,
/// `Complex<f64>`): every kernel family it may launch, in one bound for generic code.
pub trait DeviceSolveElement:
    KrylovElement
    + StorageScalar<Stored: SpmvKernels<Self>, Low: PrecondKernels<Self> + IluKernels<Self>>
    + SpmvKernels<Self>
    + PrecondKernels<Self>
    + IluKernels<Self>
{
}

impl<T> DeviceSolveElement for T where
    T: KrylovElement
        + StorageScalar<Stored: SpmvKernels<T>, Low: PrecondKernels<T> + IluKernels<T>>
        + SpmvKernels<T>
        + PrecondKernels<T>
        + IluKernels<T>
{
}

/// The preconditioner of a [`DeviceSolver`].
enum DevicePrecond<T: DeviceSolveElement> {
    Jacobi(DeviceBlockJacobi<T>),
    /// The factors in single precision ([`MatrixStorage::F32`]).
    Jacobi32(DeviceBlockJacobi<T::Low>),
    Ilu0(Box<DeviceBlockIlu0<T>>),
    /// The factors in single precision ([`MatrixStorage::F32`]).
    Ilu032(Box<DeviceBlockIlu0<T::Low>>),
}

impl<T: DeviceSolveElement> DeviceSolver<T> {
    /// Prepares `A x = b` on the device of `gpu`: the conversion on the host, then one
    /// upload of the matrix and the preconditioner. Errors: as [`Solver::new`], and the
    /// device's.
    pub fn upload(gpu: &Gpu, a: &Csr<T>, opts: &SolveOptions) -> Result<Self> {
        let t = Instant::now();
        let p = prepare("DeviceSolver::upload", a, opts, Target::Gpu)?;
        let matrix = DeviceMatrix::from_matrix(gpu, &p.matrix)?;
        drop(p.matrix);
        let stored = match &p.stored {
            Some(s) => Some(DeviceMatrix::from_matrix(gpu, s)?),
            None => None,
        };
        drop(p.stored);
        let narrow = p.info.storage == MatrixStorage::F32;
        // ILU(0) factors in f32 only for the sweeps (module docs).
        let narrow_ilu = narrow && opts.ilu.sweeps.is_some();
        let precond = match (&p.jacobi, opts.precond) {
            // The factors in single precision with the matrix (module docs).
            (Some(j), Preconditioner::BlockJacobi) if narrow => Some(DevicePrecond::Jacobi32(
                DeviceBlockJacobi::new(gpu, j)?.narrowed()?,
            )),
            (Some(j), Preconditioner::Jacobi) if narrow => Some(DevicePrecond::Jacobi32(
                DeviceBlockJacobi::point(gpu, j)?.narrowed()?,
            )),
            (Some(j), Preconditioner::BlockJacobi) => {
                Some(DevicePrecond::Jacobi(DeviceBlockJacobi::new(gpu, j)?))
            }
            (Some(j), Preconditioner::Ilu0) if narrow_ilu => Some(DevicePrecond::Ilu032(Box::new(
                DeviceBlockIlu0::with_options(gpu, j, &opts.ilu)?.into_narrowed()?,
            ))),
            (Some(j), Preconditioner::Ilu0) => Some(DevicePrecond::Ilu0(Box::new(
                DeviceBlockIlu0::with_options(gpu, j, &opts.ilu)?,
            ))),
            (Some(j), _) => Some(DevicePrecond::Jacobi(DeviceBlockJacobi::point(gpu, j)?)),
            (None, _) => None,
        };
        let staging = Staging::new(gpu, p.info.n);
        gpu.synchronize()?;
        let mut info = p.info;
        info.setup_seconds = t.elapsed().as_secs_f64();
        Ok(DeviceSolver {
            matrix,
            stored,
            precond,
            info,
            staging,
        })
    }

    /// The operator on the device (padded where the module docs say).
    pub fn matrix(&self) -> &DeviceMatrix<T> {
        &self.matrix
    }

    /// What format was chosen and why.
    pub fn choice(&self) -> &FormatChoice {
        self.matrix.choice()
    }

    /// Solves `A x = b` from `x0` (`None`: zero) on the GPU: uploads `b` and `x0`, runs
    /// GMRES on the device, downloads `x`. Errors: as [`Solver::solve`], and the
    /// device's.
    pub fn solve(&self, b: &[T], x0: Option<&[T]>) -> Result<Solution<T>> {
        self.solve_with_progress(b, x0, None)
    }

    /// [`DeviceSolver::solve`] calling `progress(iteration, estimated relative
    /// residual)` after every step.
    pub fn solve_with_progress(
        &self,
        b: &[T],
        x0: Option<&[T]>,
        progress: Option<&mut dyn FnMut(usize, f64)>,
    ) -> Result<Solution<T>> {
        let mut laps = Laps::start();
        let mut timing = SolveTiming::default();
        self.info.check_inputs("DeviceSolver::solve", b, x0)?;
        timing.checks = laps.lap();
        let gpu = self.matrix.gpu();
        let staging = self.staging.as_ref();
        let db = self.info.upload_padded(gpu, staging, Some(b))?;
        let mut dx = self.info.upload_padded(gpu, staging, x0)?;
        timing.inputs = laps.lap();
        let m = self.precond.as_ref().map(|m| match m {
            DevicePrecond::Jacobi(j) => j as &dyn DeviceLinOp<T>,
            DevicePrecond::Jacobi32(j) => j as &dyn DeviceLinOp<T>,
            DevicePrecond::Ilu0(f) => f.as_ref() as &dyn DeviceLinOp<T>,
            DevicePrecond::Ilu032(f) => f.as_ref() as &dyn DeviceLinOp<T>,
        });
        let opts = &self.info.opts.gmres;
        let report = match self.info.reduced() {
            None => (
                super::gpu::gmres_with_progress(&self.matrix, m, &db, &mut dx, opts, progress)?,
                None,
            ),
            Some(what) => {
                let mut steps = refine::Device {
                    a: &self.matrix,
                    stored: match &self.stored {
                        Some(s) => s,
                        None => &self.matrix,
                    },
                    m,
                    b: &db,
                    x: &mut dx,
                };
                let (r, rf) = refine::refine(&mut steps, opts, what, progress)?;
                (r, Some(rf))
            }
        };
        timing.gmres = report.0.timing.total;
        laps.lap(); // the output's lap starts here
        // Only the first n entries come back: no padded copy to trim on the host.
        let x = Staging::download(staging, "DeviceSolver::solve", &dx, 0, self.info.n)?;
        timing.output = laps.lap();
        timing.total = laps.total();
        Ok(self
            .info
            .solution(x, report, Target::Gpu, self.matrix.choice(), timing))
    }
}
