//! Dense LU factorisation `P A = L U` with partial pivoting (LAPACK `getrf` semantics),
//! triangular solves, and seed 004's unblocked and blocked LU without pivoting.
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
//! | [`thesis`] | seed 004: unblocked right-looking LU (`f64`) and Rodinia's blocked LU (`f32`, block 16), no pivoting |
//!
//! An exactly zero pivot is [`Error::Singular`] naming the column; nothing is returned
//! with infinities or NaN from it. The report's backward error is
//! `||P A - L U||_1 / (||A||_1 n eps)`, a number of order 1 for a stable factorisation.
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

pub mod cpu;
pub mod gpu;
pub mod thesis;

use rayon::prelude::*;
use serde::Serialize;

use crate::blas1::Element;
use crate::error::{Error, Result};
use ferrocuda_kernels::RealScalar;
use ferrocuda_kernels::names::DenseKernels;

/// Scalars the LU works in: `f32` and `f64`.
pub trait LuScalar: Element + RealScalar + DenseKernels {
    /// The FP64 tensor-core GEMM kernel where this type has one.
    const TENSOR_GEMM: Option<&'static str>;
}
impl LuScalar for f32 {
    const TENSOR_GEMM: Option<&'static str> = None;
}
impl LuScalar for f64 {
    const TENSOR_GEMM: Option<&'static str> =
        Some(ferrocuda_kernels::names::DENSE_SPECIAL.gemm_dmma_f64);
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

    /// The zero matrix.
    pub fn zeros(nrows: usize, ncols: usize) -> Self {
        Matrix {
            nrows,
            ncols,
            data: vec![T::ZERO; nrows * ncols],
        }
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
    /// The same values in the other precision (`f64 -> f32` rounds).
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
    /// Compute the backward error into the report (an `O(n^3)` product on the CPU).
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
    /// `||P A - L U||_1 / (||A||_1 n eps)` where computed.
    pub backward_error: Option<f64>,
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

/// `Err(NotSquare)` unless `a` is square and not empty.
pub(crate) fn check_square<T: LuScalar>(op: &'static str, a: &Matrix<T>) -> Result<usize> {
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
    /// per task. Errors: `B` has not `n` rows.
    pub fn solve(&self, b: &Matrix<T>) -> Result<Matrix<T>> {
        let n = self.n();
        crate::error::check_len("Lu::solve", "rows of B", n, b.nrows)?;
        let mut x = b.clone();
        if b.ncols == 0 {
            return Ok(x);
        }
        let f = &self.factors.data;
        let ipiv = &self.ipiv;
        x.data.par_chunks_mut(n).for_each(|col| {
            for (k, &p) in ipiv.iter().enumerate() {
                col.swap(k, p as usize);
            }
            for p in 0..n {
                let u = col[p];
                if u != T::ZERO {
                    let l = &f[p * n..(p + 1) * n];
                    for i in p + 1..n {
                        col[i] = col[i] - l[i] * u;
                    }
                }
            }
            for p in (0..n).rev() {
                let ucol = &f[p * n..(p + 1) * n];
                let v = col[p] / ucol[p];
                col[p] = v;
                if v != T::ZERO {
                    for i in 0..p {
                        col[i] = col[i] - ucol[i] * v;
                    }
                }
            }
        });
        Ok(x)
    }

    /// `||P A - L U||_1 / (||A||_1 n eps)` for the matrix `a` these factors came from
    /// (computed in `f64`, one column of `L U` per task; `O(n^3)`).
    pub fn backward_error(&self, a: &Matrix<T>) -> Result<f64> {
        backward_error(a, &self.factors, &self.ipiv)
    }
}

/// `||P A - L U||_1 / (||A||_1 n eps)` with `eps` of `T`; see [`Lu::backward_error`].
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
    let eps = T::EPSILON.to_f64();
    Ok(if norm == 0.0 {
        0.0
    } else {
        worst / (norm * n as f64 * eps)
    })
}

/// Solves `A X = B`: factors `A` on the CPU ([`cpu::factor`]) and applies [`Lu::solve`].
/// Errors: `A` not square or empty, `B` without `n` rows, a zero pivot
/// ([`Error::Singular`]).
///
/// ```
/// use ferrocuda::dense::{Matrix, LuOptions, solve};
/// let a = Matrix::new(2, 2, vec![4.0f64, 2.0, 1.0, 3.0])?; // [[4, 1], [2, 3]]
/// let b = Matrix::new(2, 2, vec![5.0, 5.0, 1.0, 2.0])?; // two right-hand sides
/// let (x, report) = solve(&a, &b, &LuOptions::default())?;
/// assert!((x.get(0, 0) - 1.0).abs() < 1e-14 && (x.get(1, 0) - 1.0).abs() < 1e-14);
/// assert!(report.backward_error.unwrap() < 1.0);
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn solve<T: LuScalar>(
    a: &Matrix<T>,
    b: &Matrix<T>,
    opts: &LuOptions,
) -> Result<(Matrix<T>, LuReport)> {
    let n = check_square("dense::solve", a)?;
    crate::error::check_len("dense::solve", "rows of B", n, b.nrows)?;
    let lu = cpu::factor(a, opts)?;
    let x = lu.solve(b)?;
    Ok((x, lu.report))
}
