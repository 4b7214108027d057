//! Dense LU factorisation `P A = L U` with partial pivoting (LAPACK `getrf` semantics),
//! and triangular solves.
//!
//! Matrices are column-major ([`Matrix`]). `L` is unit lower triangular and stored below
//! the diagonal of [`Lu::factors`], `U` on and above it; `ipiv[k]` is the row that step
//! `k` swapped with row `k` (0-based), so `P` is the product of those interchanges in
//! order, as in LAPACK.
//!
//! | path | what |
//! |---|---|
//! | [`cpu::factor`] | blocked right-looking LU on all cores (rayon): panel, row swaps, TRSM and update per column |
//! | [`gpu::factor`] | the same on one GPU: one kernel per panel column (pivot search, swap, scaling, rank-1 update), then row swaps, TRSM and the trailing GEMM (`f64`: FP64 tensor cores) |
//!
//! What a factorisation checks and reports (CPU and GPU alike):
//! - **Input**: NaN or infinity in `A` (or in `B` of a solve) is [`Error::NonFinite`]
//!   naming the entry, before anything is factorised (as SciPy's `check_finite`). For
//!   `f32`, read or convert `f64` data with [`Matrix::try_convert`], which names an
//!   entry that overflows to infinity (e.g. `1e39`).
//! - **Zero pivot**: with partial pivoting an exactly zero pivot is [`Error::Singular`]
//!   naming the column. Without pivoting a zero pivot is [`Error::ZeroPivot`] ("zero
//!   pivot without pivoting": the matrix may well be nonsingular), unless the rest of its
//!   column is zero too, which does prove the matrix singular ([`Error::Singular`]).
//!   Factors that overflow to infinity or NaN (finite input beyond the range of the
//!   precision) are [`Error::NonFinite`] naming the first such factor.
//! - **Conditioning**: every report has `rcond`, LAPACK `gecon`'s estimate of the
//!   reciprocal condition number `1 / (||A||_1 ||A^{-1}||_1)`: Hager and Higham's
//!   1-norm estimator (LAPACK `lacn2`) with solves by the factors and their transposes,
//!   `O(n^2)` after the factorisation. It is computed on the host from the factors, on
//!   the GPU path too (the factors come back to the host anyway, and the GPU has no
//!   triangular solves with one right-hand side). The estimate of `||A^{-1}||_1` is a
//!   lower bound, almost always within a factor of 3 (so `rcond` is at most about 3
//!   times too large). `rcond < eps` of the working precision
//!   ([`LuReport::singular_to_working_precision`]) means singular to working precision:
//!   the factorisation is returned (callers may inspect or use it), but [`Lu::solve`]
//!   and the `solve` functions refuse with [`Error::SingularToWorkingPrecision`]
//!   carrying `rcond`; [`Lu::solve_forced`] solves anyway.
//! - **Backward error** (optional, `O(n^3)`): the normwise relative backward error of the
//!   factorisation, `||P A - L U||_1 / ||A||_1` ([`LuReport::backward_error`]; of order
//!   `n eps` or below for a stable factorisation), and the same divided by `n eps`
//!   ([`LuReport::scaled_backward_error`], of order 1 or below).
//! - **Sizes**: copies and new matrices whose size comes from the caller are allocated
//!   fallibly ([`crate::alloc`]; [`Matrix::try_zeros`], [`Matrix::try_random`]); the GPU
//!   path checks the device's free memory before uploading.
//!
//! ```
//! use ferrocuda::dense::{Matrix, LuOptions, cpu};
//! let a = Matrix::new(2, 2, vec![0.0f64, 1.0, 2.0, 3.0])?; // [[0, 2], [1, 3]]
//! let lu = cpu::factor(&a, &LuOptions::default())?;
//! assert_eq!(lu.ipiv, vec![1, 1]); // the zero leading entry forced a swap
//! let x = lu.solve(&Matrix::new(2, 1, vec![2.0, 4.0])?)?;
//! assert!((x.get(0, 0) - 1.0).abs() < 1e-15 && (x.get(1, 0) - 1.0).abs() < 1e-15);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

mod condition;
pub mod cpu;
pub mod gpu;

pub use condition::inverse_norm1_estimate;

use rayon::prelude::*;
use serde::Serialize;

use crate::alloc;
use crate::blas1::Element;
use crate::error::{Error, Result};
use ferrocuda_kernels::RealScalar;
use ferrocuda_kernels::abi::Kernel;
use ferrocuda_kernels::dense::{DenseKernels, GEMM_DMMA_F64, Gemm};
use ferrocuda_kernels::hopper::{GemmDmmaSm90, SM90_GEMM_F64};

/// Scalars the LU works in: `f32` and `f64`.
pub trait LuScalar: Element + RealScalar + DenseKernels {
    /// The FP64 tensor-core GEMM (`gemm_dmma_f64`) where this type has one.
    const TENSOR_GEMM: Option<Kernel<Gemm<'static, Self>>>;
    /// The Hopper FP64 tensor-core GEMMs (`gemm_dmma_sm90_k{4,8,16}_f64`) where this type
    /// has them.
    const SM90_GEMM: Option<[Kernel<GemmDmmaSm90<'static, Self>>; 3]>;
}
impl LuScalar for f32 {
    const TENSOR_GEMM: Option<Kernel<Gemm<'static, Self>>> = None;
    const SM90_GEMM: Option<[Kernel<GemmDmmaSm90<'static, Self>>; 3]> = None;
}
impl LuScalar for f64 {
    const TENSOR_GEMM: Option<Kernel<Gemm<'static, Self>>> = Some(GEMM_DMMA_F64);
    const SM90_GEMM: Option<[Kernel<GemmDmmaSm90<'static, Self>>; 3]> = Some(SM90_GEMM_F64);
}

/// A dense column-major matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    nrows: usize,
    ncols: usize,
    data: Vec<T>,
}

impl<T: LuScalar> Matrix<T> {
    /// A matrix from column-major values. Errors: `data.len() != nrows * ncols`.
    pub fn new(nrows: usize, ncols: usize, data: Vec<T>) -> Result<Self> {
        let len = nrows.checked_mul(ncols).ok_or(Error::InvalidArgument {
            op: "Matrix::new",
            reason: format!("{nrows} x {ncols} overflows"),
        })?;
        crate::error::check_len("Matrix::new", "data (rows * cols)", len, data.len())?;
        Ok(Matrix { nrows, ncols, data })
    }

    /// The zero matrix (aborts where it does not fit in memory: for sizes from a user
    /// or a file use [`Matrix::try_zeros`]).
    pub fn zeros(nrows: usize, ncols: usize) -> Self {
        Matrix {
            nrows,
            ncols,
            data: vec![T::ZERO; nrows * ncols],
        }
    }

    /// The zero matrix, allocated fallibly: [`Error::OutOfHostMemory`] naming the
    /// dimensions, the bytes and the limit where it does not fit ([`crate::alloc`]).
    pub fn try_zeros(nrows: usize, ncols: usize) -> Result<Self> {
        let what = Self::describe(nrows, ncols);
        let len = Self::checked_len(&what, nrows, ncols)?;
        Ok(Matrix {
            nrows,
            ncols,
            data: alloc::try_vec(&what, len, T::ZERO)?,
        })
    }

    /// "the 3 x 4 f64 matrix", for the errors of the allocations.
    fn describe(nrows: usize, ncols: usize) -> String {
        format!("the {nrows} x {ncols} {} matrix", T::SUFFIX)
    }

    /// `nrows * ncols`, or [`Error::OutOfHostMemory`] for `what` where the product (in
    /// bytes) does not fit the address space or the host's memory.
    fn checked_len(what: &str, nrows: usize, ncols: usize) -> Result<usize> {
        let len = nrows as u128 * ncols as u128;
        alloc::check_host_bytes(what, alloc::bytes_of(len, size_of::<T>()))?;
        Ok(len as usize) // bounded by isize::MAX bytes above
    }

    /// A copy, allocated fallibly (as [`Matrix::try_zeros`]).
    pub fn try_clone(&self) -> Result<Self> {
        let what = format!("a copy of {}", Self::describe(self.nrows, self.ncols));
        let mut data = alloc::try_with_capacity(&what, self.data.len())?;
        data.extend_from_slice(&self.data);
        Ok(Matrix {
            nrows: self.nrows,
            ncols: self.ncols,
            data,
        })
    }

    /// `Err(`[`Error::NonFinite`]`)` naming the first entry (in column-major order) of
    /// this matrix, operand `what` of `op`, that is NaN or infinite.
    pub fn check_finite(&self, op: &'static str, what: &'static str) -> Result<()> {
        let Some(k) = self
            .data
            .par_iter()
            .position_first(|x| !x.to_f64().is_finite())
        else {
            return Ok(());
        };
        let value = self.data[k].to_f64();
        let mut reason = String::from("NaN and infinity are not allowed");
        if value.is_infinite() && size_of::<T>() == 4 {
            reason.push_str(&format!(
                " (in {} a magnitude above {:e} rounds to infinity)",
                T::SUFFIX,
                f32::MAX
            ));
        }
        Err(Error::NonFinite {
            op,
            what,
            row: k % self.nrows,
            col: k / self.nrows,
            value,
            reason,
        })
    }

    /// Element `(i, j)` from `f(i, j)`.
    pub fn from_fn(nrows: usize, ncols: usize, f: impl Fn(usize, usize) -> T + Sync) -> Self {
        let mut data = vec![T::ZERO; nrows * ncols];
        if nrows > 0 {
            data.par_chunks_mut(nrows)
                .enumerate()
                .for_each(|(j, col)| col.iter_mut().enumerate().for_each(|(i, x)| *x = f(i, j)));
        }
        Matrix { nrows, ncols, data }
    }

    /// Seeded random entries uniform in `[lo, hi)` (the same matrix on every machine and
    /// thread count).
    pub fn random(nrows: usize, ncols: usize, lo: f64, hi: f64, seed: u64) -> Self {
        let v: Vec<f64> = crate::rng::random_vector(nrows * ncols, seed);
        let data = v
            .into_par_iter()
            .map(|x| T::from_f64(lo + (hi - lo) * 0.5 * (x + 1.0)))
            .collect();
        Matrix { nrows, ncols, data }
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Element `(i, j)` (panics outside the matrix, like slice indexing).
    pub fn get(&self, i: usize, j: usize) -> T {
        assert!(
            i < self.nrows && j < self.ncols,
            "({i}, {j}) outside the matrix"
        );
        self.data[i + j * self.nrows]
    }
    /// Sets element `(i, j)` (panics outside the matrix).
    pub fn set(&mut self, i: usize, j: usize, v: T) {
        assert!(
            i < self.nrows && j < self.ncols,
            "({i}, {j}) outside the matrix"
        );
        self.data[i + j * self.nrows] = v;
    }
    /// The column-major values.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }
    /// The column-major values, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }
    /// The column-major values, by value.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
    /// Seeded random entries as [`Matrix::random`], the size checked against the host's
    /// memory first (the generator needs `8` bytes per entry besides the matrix).
    pub fn try_random(nrows: usize, ncols: usize, lo: f64, hi: f64, seed: u64) -> Result<Self> {
        let what = format!("{} (random)", Self::describe(nrows, ncols));
        let len = nrows as u128 * ncols as u128;
        alloc::check_host_bytes(&what, alloc::bytes_of(len, size_of::<T>() + 8))?;
        Ok(Self::random(nrows, ncols, lo, hi, seed))
    }

    /// The same values in precision `U`, refusing what `U` cannot hold: an entry that is
    /// NaN or infinite, or finite but beyond `U`'s range (e.g. `1e39` for `f32`), is
    /// [`Error::NonFinite`] naming it. The copy is allocated fallibly.
    pub fn try_convert<U: LuScalar>(&self) -> Result<Matrix<U>> {
        const OP: &str = "Matrix::try_convert";
        self.check_finite(OP, "A")?;
        let bad = self
            .data
            .par_iter()
            .position_first(|x| !U::from_f64(x.to_f64()).to_f64().is_finite());
        if let Some(k) = bad {
            return Err(Error::NonFinite {
                op: OP,
                what: "A",
                row: k % self.nrows,
                col: k / self.nrows,
                value: self.data[k].to_f64(),
                reason: format!(
                    "beyond the range of {} (largest magnitude {:e}): it would round to infinity",
                    U::SUFFIX,
                    if size_of::<U>() == 4 {
                        f32::MAX as f64
                    } else {
                        f64::MAX
                    }
                ),
            });
        }
        let what = format!("the {} x {} {} copy", self.nrows, self.ncols, U::SUFFIX);
        let mut data = alloc::try_with_capacity(&what, self.data.len())?;
        self.data
            .par_iter()
            .map(|x| U::from_f64(x.to_f64()))
            .collect_into_vec(&mut data);
        Ok(Matrix {
            nrows: self.nrows,
            ncols: self.ncols,
            data,
        })
    }

    /// The same values in the other precision (`f64 -> f32` rounds; values beyond `f32`
    /// become infinite: [`Matrix::try_convert`] refuses them instead).
    pub fn convert<U: LuScalar>(&self) -> Matrix<U> {
        Matrix {
            nrows: self.nrows,
            ncols: self.ncols,
            data: self
                .data
                .par_iter()
                .map(|x| U::from_f64(x.to_f64()))
                .collect(),
        }
    }
    /// `max |self - other| / max |other|` over the entries, in `f64` (0 for a zero
    /// `other` equal to `self`): how far apart two results of the same computation are.
    /// Errors: the shapes differ.
    pub fn max_rel_diff(&self, other: &Matrix<T>) -> Result<f64> {
        crate::error::check_len("Matrix::max_rel_diff", "rows", self.nrows, other.nrows)?;
        crate::error::check_len("Matrix::max_rel_diff", "columns", self.ncols, other.ncols)?;
        let scale = other
            .data
            .iter()
            .fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
        let diff = self
            .data
            .iter()
            .zip(&other.data)
            .fold(0.0f64, |m, (a, b)| m.max((a.to_f64() - b.to_f64()).abs()));
        Ok(if diff == 0.0 { 0.0 } else { diff / scale })
    }

    /// The 1-norm (largest column sum of magnitudes), in `f64`.
    pub fn norm1(&self) -> f64 {
        if self.nrows == 0 {
            return 0.0;
        }
        self.data
            .par_chunks(self.nrows)
            .map(|c| c.iter().map(|x| x.to_f64().abs()).sum::<f64>())
            .reduce(|| 0.0, f64::max)
    }
}

/// Row pivoting of the factorisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Pivoting {
    /// Partial pivoting: the largest magnitude of the column (LAPACK `getrf`).
    #[default]
    Partial,
    /// No pivoting: the diagonal as it comes (fails on a zero pivot; unstable in general).
    None,
}

/// Options of a factorisation.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LuOptions {
    /// Row pivoting.
    pub pivoting: Pivoting,
    /// Panel width (columns factorised before one trailing update), `1..=`[`MAX_BLOCK`];
    /// 384 by default (on the H100 the GPU's trailing GEMM is far from its rate at k = 128).
    pub block: usize,
    /// Compute the backward errors into the report (an `O(n^3)` product on the CPU).
    pub backward_error: bool,
    /// GPU, `f64` only: the trailing update on the FP64 tensor cores (`false`: the CUDA
    /// cores).
    pub tensor_cores: bool,
    /// GPU: factorise each panel in leaves of up to 32 columns, one cooperative launch
    /// per leaf (`lu_leaf_coop`), where a leaf fits in shared memory; `false`: one launch
    /// per column (`lu_panel_step`).
    pub leaf_panel: bool,
    /// GPU: look-ahead; the next panel is factorised on a second stream (of the
    /// greatest priority) while the main stream updates the columns right of it.
    pub lookahead: bool,
}

/// Largest panel width ([`LuOptions::block`]).
pub const MAX_BLOCK: usize = 512;

impl Default for LuOptions {
    fn default() -> Self {
        LuOptions {
            pivoting: Pivoting::Partial,
            block: 384,
            backward_error: true,
            tensor_cores: true,
            leaf_panel: true,
            lookahead: true,
        }
    }
}

impl LuOptions {
    /// These options with `pivoting`.
    pub fn with_pivoting(mut self, pivoting: Pivoting) -> Self {
        self.pivoting = pivoting;
        self
    }
    /// These options with panel width `block`.
    pub fn with_block(mut self, block: usize) -> Self {
        self.block = block;
        self
    }
    /// These options with or without the backward error.
    pub fn with_backward_error(mut self, on: bool) -> Self {
        self.backward_error = on;
        self
    }
    /// These options with or without the tensor-core GEMM.
    pub fn with_tensor_cores(mut self, on: bool) -> Self {
        self.tensor_cores = on;
        self
    }

    /// These options with or without the cooperative leaf panel (GPU).
    pub fn with_leaf_panel(mut self, on: bool) -> Self {
        self.leaf_panel = on;
        self
    }

    /// These options with or without look-ahead (GPU).
    pub fn with_lookahead(mut self, on: bool) -> Self {
        self.lookahead = on;
        self
    }

    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        if !(1..=MAX_BLOCK).contains(&self.block) {
            return Err(Error::InvalidArgument {
                op,
                reason: format!("block = {} is outside 1..={MAX_BLOCK}", self.block),
            });
        }
        Ok(())
    }
}

/// What a factorisation did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LuReport {
    /// Order of the matrix.
    pub n: usize,
    /// Row pivoting used.
    pub pivoting: Pivoting,
    /// Panel width.
    pub block: usize,
    /// `"cpu"` or the GPU's name.
    pub device: String,
    /// Time of the factorisation itself (device events on the GPU), ms.
    pub factor_ms: f64,
    /// Time including the copies to and from the device (GPU only), ms.
    pub total_ms: Option<f64>,
    /// The normwise relative backward error of the factorisation,
    /// `||P A - L U||_1 / ||A||_1`, where computed ([`LuOptions::backward_error`]).
    pub backward_error: Option<f64>,
    /// [`LuReport::backward_error`] divided by `n eps`: of order 1 or below for a
    /// stable factorisation.
    pub scaled_backward_error: Option<f64>,
    /// Estimated reciprocal condition number in the 1-norm,
    /// `1 / (||A||_1 ||A^{-1}||_1)` (LAPACK `gecon`; module docs); 0 for `A = 0`.
    pub rcond: f64,
    /// The working precision, `"f32"` or `"f64"`.
    pub precision: &'static str,
    /// Machine epsilon of the working precision.
    pub eps: f64,
    /// `rcond < eps`: singular to working precision. [`Lu::solve`] then refuses with
    /// [`Error::SingularToWorkingPrecision`]; the factors are still returned.
    pub singular_to_working_precision: bool,
}

impl LuReport {
    /// `Err(`[`Error::SingularToWorkingPrecision`]`)` (naming `op`) when the matrix is
    /// singular to working precision, else `Ok`: for callers that factor without
    /// solving and must not go on with such a matrix.
    pub fn check_conditioning(&self, op: &'static str) -> Result<()> {
        if self.singular_to_working_precision {
            return Err(Error::SingularToWorkingPrecision {
                op,
                rcond: self.rcond,
                eps: self.eps,
                precision: self.precision,
            });
        }
        Ok(())
    }
}

/// A factorisation `P A = L U`.
#[derive(Debug, Clone)]
pub struct Lu<T> {
    /// `L` (unit, strictly below the diagonal) and `U` (on and above) in one matrix.
    pub factors: Matrix<T>,
    /// Row interchanges: step `k` swapped rows `k` and `ipiv[k]` (0-based).
    pub ipiv: Vec<u32>,
    /// What the factorisation did.
    pub report: LuReport,
}

/// `Err(NotSquare)` unless `a` is square and not empty. Public for `ferrocuda-repro`'s
/// LU variants, which check their input the same way.
#[doc(hidden)]
pub fn check_square<T: LuScalar>(op: &'static str, a: &Matrix<T>) -> Result<usize> {
    if a.nrows != a.ncols {
        return Err(Error::NotSquare {
            op,
            rows: a.nrows,
            cols: a.ncols,
        });
    }
    if a.nrows == 0 {
        return Err(Error::Empty { op, what: "matrix" });
    }
    if a.nrows > u32::MAX as usize {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("n = {} exceeds the 32-bit pivot indices", a.nrows),
        });
    }
    Ok(a.nrows)
}

/// The row order `perm` with `(P A)[i, :] = A[perm[i], :]`.
pub fn permutation(ipiv: &[u32]) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..ipiv.len()).collect();
    for (k, &p) in ipiv.iter().enumerate() {
        perm.swap(k, p as usize);
    }
    perm
}

impl<T: LuScalar> Lu<T> {
    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.factors.nrows
    }

    /// Solves `A X = B` for the columns of `B` (`n x k`, any `k`) with the factors:
    /// interchanges, then forward (unit `L`) and backward (`U`) substitution, one column
    /// per task. Errors: `B` has not `n` rows or holds NaN or infinity
    /// ([`Error::NonFinite`] naming the entry); the matrix is singular to working
    /// precision ([`Error::SingularToWorkingPrecision`]; [`Lu::solve_forced`] solves
    /// anyway).
    pub fn solve(&self, b: &Matrix<T>) -> Result<Matrix<T>> {
        self.report.check_conditioning("Lu::solve")?;
        self.solve_forced(b)
    }

    /// [`Lu::solve`] also where the matrix is singular to working precision (the
    /// solution may then have no correct digit). Errors: `B` has not `n` rows or holds
    /// NaN or infinity.
    pub fn solve_forced(&self, b: &Matrix<T>) -> Result<Matrix<T>> {
        let n = self.n();
        crate::error::check_len("Lu::solve", "rows of B", n, b.nrows)?;
        b.check_finite("Lu::solve", "B")?;
        let mut x = b.try_clone()?;
        if b.ncols == 0 {
            return Ok(x);
        }
        x.data
            .par_chunks_mut(n)
            .for_each(|col| condition::solve_column(&self.factors.data, &self.ipiv, col));
        Ok(x)
    }

    /// The normwise relative backward error `||P A - L U||_1 / ||A||_1` for the matrix
    /// `a` these factors came from (computed in `f64`, one column of `L U` per task;
    /// `O(n^3)`).
    pub fn backward_error(&self, a: &Matrix<T>) -> Result<f64> {
        backward_error(a, &self.factors, &self.ipiv)
    }
}

/// The normwise relative backward error `||P A - L U||_1 / ||A||_1` (0 for `A = 0`);
/// see [`Lu::backward_error`]. Divided by `n eps` it is of order 1 for a stable
/// factorisation ([`LuReport::scaled_backward_error`]).
pub fn backward_error<T: LuScalar>(
    a: &Matrix<T>,
    factors: &Matrix<T>,
    ipiv: &[u32],
) -> Result<f64> {
    let n = check_square("backward_error", a)?;
    crate::error::check_len("backward_error", "factors", n * n, factors.data.len())?;
    crate::error::check_len("backward_error", "ipiv", n, ipiv.len())?;
    let perm = permutation(ipiv);
    let f = &factors.data;
    let worst = (0..n)
        .into_par_iter()
        .map(|j| {
            // Column j of L U: sum over p <= j of U[p, j] L[:, p].
            let mut lu = vec![0.0f64; n];
            for p in 0..=j {
                let u = f[p + j * n].to_f64();
                if u == 0.0 {
                    continue;
                }
                lu[p] += u; // L[p, p] = 1
                let l = &f[p * n..(p + 1) * n];
                for i in p + 1..n {
                    lu[i] += l[i].to_f64() * u;
                }
            }
            (0..n)
                .map(|i| (a.data[perm[i] + j * n].to_f64() - lu[i]).abs())
                .sum::<f64>()
        })
        .reduce(|| 0.0, f64::max);
    let norm = a.norm1();
    Ok(if norm == 0.0 { 0.0 } else { worst / norm })
}

/// Solves `A X = B`: factors `A` on the CPU ([`cpu::factor`]) and applies [`Lu::solve`].
/// Errors: `A` not square or empty, `B` without `n` rows, NaN or infinity in `A` or `B`
/// ([`Error::NonFinite`], before factorising), a zero pivot ([`Error::Singular`],
/// [`Error::ZeroPivot`]), a matrix singular to working precision
/// ([`Error::SingularToWorkingPrecision`]).
///
/// ```
/// use ferrocuda::dense::{Matrix, LuOptions, solve};
/// let a = Matrix::new(2, 2, vec![4.0f64, 2.0, 1.0, 3.0])?; // [[4, 1], [2, 3]]
/// let b = Matrix::new(2, 2, vec![5.0, 5.0, 1.0, 2.0])?; // two right-hand sides
/// let (x, report) = solve(&a, &b, &LuOptions::default())?;
/// assert!((x.get(0, 0) - 1.0).abs() < 1e-14 && (x.get(1, 0) - 1.0).abs() < 1e-14);
/// assert!(report.scaled_backward_error.unwrap() < 1.0);
/// assert!(report.rcond > 0.1 && !report.singular_to_working_precision);
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn solve<T: LuScalar>(
    a: &Matrix<T>,
    b: &Matrix<T>,
    opts: &LuOptions,
) -> Result<(Matrix<T>, LuReport)> {
    let n = check_square("dense::solve", a)?;
    crate::error::check_len("dense::solve", "rows of B", n, b.nrows)?;
    b.check_finite("dense::solve", "B")?;
    let lu = cpu::factor(a, opts)?;
    let x = lu.solve(b)?;
    Ok((x, lu.report))
}
