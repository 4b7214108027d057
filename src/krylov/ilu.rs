//! Incomplete LU factorisation without fill, ILU(0), point ([`Ilu0`], from a [`Csr`]
//! matrix) and block ([`BlockIlu0`], from a [`Bcsr`] matrix with `b x b` blocks), on the
//! CPU: the exact factorisation, the oracle of a device version. Both are linear
//! operators applying `M^-1 = (L U)^-1`, the right preconditioner of GMRES.
//!
//! # Maths
//! ILU(0) computes a unit lower triangular `L` and an upper triangular `U` whose nonzeros
//! lie in the pattern `P` of `A` (the diagonal always included, see the rules), such that
//! `(L U)_ij = a_ij` for every `(i, j)` in `P`. It is Gaussian elimination that drops
//! every fill entry outside `P`, in Saad's IKJ order (*Iterative Methods for Sparse
//! Linear Systems*, 2nd ed., Algorithm 10.4), row after row:
//!
//! ```text
//! for i = 1 .. n-1:
//!     for k < i with (i, k) in P, in increasing order:
//!         a_ik <- a_ik u_kk^-1                      (l_ik)
//!         for j > k with (i, j) in P and (k, j) in P:
//!             a_ij <- a_ij - l_ik u_kj
//! ```
//!
//! The factors overwrite a copy of `A`: `L` below the diagonal (its unit diagonal not
//! stored), `U` on and above it. Block ILU(0) is the same algorithm on `b x b` blocks,
//! `A_ik <- A_ik U_kk^-1` with the diagonal blocks inverted (Gauss-Jordan with partial
//! pivoting, `ferrocuda_kernels::precond::invert_block_sized`, the inversion of block
//! Jacobi); the inverted diagonal blocks are kept for the solves. Applying the
//! preconditioner, `y = (L U)^-1 x`, is a forward solve with `L` and a back solve with
//! `U`:
//!
//! ```text
//! z_i = x_i - sum_{k<i} l_ik z_k          (i = 0, 1, ..., n-1)
//! y_i = u_ii^-1 (z_i - sum_{j>i} u_ij y_j)  (i = n-1, ..., 0)
//! ```
//!
//! The arithmetic of one row (scaling by the inverse pivot, eliminating row `i` against
//! row `k`, one row of either solve) is in `ferrocuda_kernels::precond::ilu`, so that a
//! device version computes the same bits: every sum is a chain of fused multiply-adds in
//! increasing column order, `l_ik` is `a_ik` times the inverse pivot (rounded once for
//! points), and with `b = 1` the block version gives the point version's values.
//!
//! For the device, [`LevelSchedule`] groups the rows into levels whose rows depend only
//! on earlier levels ([`Ilu0::level_schedules`]); factoring level after level, each row
//! by the same per-row functions, gives these factors bit for bit (tested on the CPU).
//!
//! # Rules
//! * The matrix must be square (in blocks for [`BlockIlu0`]), with finite entries; block
//!   size `b <= `[`MAX_BLOCK`] for [`BlockIlu0`]. The columns of a [`Csr`] or [`Bcsr`] row
//!   are strictly increasing (checked when it is built), which the elimination relies
//!   on: a matrix assembled from unsorted triplets is sorted by [`Csr::from`]`(&Coo)`.
//! * A (block) row that stores no entry at all (a ghost row of TRACE's matrices, see
//!   [`crate::sparse::generate`]) is taken as the identity's row: `u_ii = 1` (`U_II = I`),
//!   no other entry, so `y_i = x_i` where no other row couples to it; as block Jacobi does.
//! * **Diagonal shift** ([`IluOptions::shift`], `alpha >= 0`, default 0): the factorised
//!   matrix is `A + alpha diag(r_1, ..., r_n)` with `r_i = max_j |a_ij|`, the largest
//!   entry of scalar row `i` (each scalar row of a block row its own). The shift is
//!   relative to each row's scale, and it also shifts a zero or missing diagonal entry
//!   (a shift of `|a_ii|` would not); with `alpha > 0` a diagonal that `A` does not store
//!   is added to the pattern. Here and below, `|z|` is `max(|Re z|, |Im z|)`.
//! * **Pivots**: with `alpha = 0`, a row that stores entries but no diagonal entry
//!   (block) is a zero pivot. The pivot `u_ii` (block `U_II`) of each row is checked once
//!   its elimination is done: it is an error where it is zero (a zero pivot in the
//!   Gauss-Jordan inversion of `U_II`), where its inverse has a non-finite entry, or where
//!   it is tiny: `tol max|U_II^-1| max_j |a_ij| >= 1`, `tol = pivot_tol eps` (the machine
//!   epsilon of the matrix's real type, [`IluOptions::pivot_tol`], default
//!   [`DEFAULT_PIVOT_TOL`] = 100) and `max_j |a_ij|` the largest entry of (block) row `i`
//!   of `A`. For points that reads `|u_ii| <= 100 eps max_j |a_ij|`: a pivot at the level
//!   of the rounding of its row, whose true value may be zero. A row whose factors
//!   overflow (a non-finite entry) is an error too. Every such error is an
//!   [`Error::InvalidArgument`] naming the first (block) row where the factorisation
//!   breaks down; a positive shift is the usual remedy.
//!
//! ```
//! use ferrocuda::krylov::{Ilu0, IluOptions, LinOp};
//! use ferrocuda::sparse::{Coo, Csr};
//! // A tridiagonal matrix: no fill, so ILU(0) is its exact LU factorisation.
//! let mut coo = Coo::<f64>::empty(3, 3)?;
//! for (r, c, v) in [(0, 0, 2.0), (0, 1, -1.0), (1, 0, -1.0), (1, 1, 2.0), (1, 2, -1.0),
//!                   (2, 1, -1.0), (2, 2, 2.0)] {
//!     coo.push(r, c, v)?;
//! }
//! let a = Csr::from(&coo);
//! let m = Ilu0::new(&a)?;
//! // L = [1 0 0; -1/2 1 0; 0 -2/3 1], U = [2 -1 0; 0 3/2 -1; 0 0 4/3], row by row:
//! let lu = m.values();
//! assert_eq!((lu[2], lu[3]), (-0.5, 1.5));
//! let x = [1.0, 0.0, 1.0];
//! let mut y = [0.0; 3];
//! m.apply(&x, &mut y)?; // y = A^-1 x = (1, 1, 1)
//! assert!(y.iter().all(|v| (v - 1.0).abs() < 1e-15), "{y:?}");
//!
//! // [1 1; 1 1]: the second pivot is 1 - 1 = 0, an error naming row 1.
//! let mut coo = Coo::<f64>::empty(2, 2)?;
//! for (r, c) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
//!     coo.push(r, c, 1.0)?;
//! }
//! let singular = Csr::from(&coo);
//! let e = Ilu0::new(&singular).unwrap_err();
//! assert!(e.to_string().contains("row 1"), "{e}");
//! // A shift of 10 % of each row's largest entry: A + 0.1 I here.
//! let shifted = Ilu0::with_options(&singular, &IluOptions::default().shift(0.1))?;
//! assert!((shifted.values()[3] - (1.1 - 1.0 / 1.1)).abs() < 1e-15);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ferrocuda_kernels::precond::{self as kp, ilu as ki};
use serde::Serialize;

use super::op::LinOp;
use crate::blas1::Element;
use crate::error::{Error, Result, check_len};
use crate::sparse::{Bcsr, BlockLayout, Csr, Index, MatrixScalar};
use crate::{RealScalar, Scalar};

mod device;
mod levels;
pub use device::{DeviceBlockIlu0, DeviceIlu0, IluKernels};
pub use levels::LevelSchedule;

/// Largest block size of [`BlockIlu0`].
pub const MAX_BLOCK: usize = ki::ILU_MAX_B;

/// Default of [`IluOptions::pivot_tol`], in multiples of the machine epsilon.
pub const DEFAULT_PIVOT_TOL: f64 = 100.0;

/// Options of [`Ilu0::with_options`] and [`BlockIlu0::with_options`]; `Default`: no
/// shift, pivot tolerance [`DEFAULT_PIVOT_TOL`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct IluOptions {
    /// Diagonal shift `alpha >= 0`: factor `A + alpha diag(r_i)`, `r_i = max_j |a_ij|`
    /// ([module docs](self)).
    pub shift: f64,
    /// Tiny-pivot tolerance `>= 0`, in multiples of the machine epsilon of the matrix's
    /// real type: a pivot (block) with `pivot_tol eps max|U_ii^-1| max_j |a_ij| >= 1` is an
    /// error. `0` refuses only zero pivots and non-finite inverses.
    pub pivot_tol: f64,
    /// How `apply` solves with `L` and `U`. `None` (the default): exactly, by
    /// substitution (on the GPU one launch per level of each factor, which is slow where
    /// the levels are many: thousands on a 3-D grid). `Some(s)`, `s >= 1`: `s` Jacobi
    /// sweeps per factor from zero, every row at once (one launch per sweep): `y_k = x -
    /// L_strict y_(k-1)` (the first is `x` itself), then `z_k = U_diag^-1 (y - U_strict
    /// z_(k-1))` (the first reads zeros). An approximation of the exact solve that GMRES
    /// tolerates as a preconditioner; exact once `s` reaches the number of levels
    /// ([`LevelSchedule`]; the iteration matrices are nilpotent), then with the exact
    /// solve's bits. [`DEFAULT_SWEEPS`] is a sensible choice.
    pub sweeps: Option<usize>,
}

/// A sensible number of Jacobi sweeps ([`IluOptions::sweeps`]): on the generated TRACE
/// case it keeps ILU(0)'s step count within about one step of the exact solves.
pub const DEFAULT_SWEEPS: usize = 3;

impl Default for IluOptions {
    fn default() -> Self {
        IluOptions {
            shift: 0.0,
            pivot_tol: DEFAULT_PIVOT_TOL,
            sweeps: None,
        }
    }
}

impl IluOptions {
    setters! {
        /// Sets the diagonal shift.
        shift: f64;
        /// Sets the tiny-pivot tolerance (multiples of the machine epsilon).
        pivot_tol: f64;
        /// Sets the triangular solves: exact (`None`) or `s` Jacobi sweeps.
        sweeps: Option<usize>;
    }

    fn validate(&self, op: &'static str) -> Result<()> {
        for (name, v) in [("shift", self.shift), ("pivot_tol", self.pivot_tol)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::InvalidArgument {
                    op,
                    reason: format!("IluOptions::{name} must be finite and >= 0, got {v}"),
                });
            }
        }
        if self.sweeps == Some(0) {
            return Err(Error::InvalidArgument {
                op,
                reason: "IluOptions::sweeps = Some(0): at least one Jacobi sweep per factor (None: exact triangular solves)".into(),
            });
        }
        Ok(())
    }
}

/// The matrix to factor, seen as `n x n` blocks of `b x b` (`b = 1`: a CSR matrix).
struct Source<'a, A> {
    b: usize,
    n: usize,
    row_ptr: &'a [usize],
    col_idx: &'a [Index],
    values: &'a [A],
    layout: BlockLayout,
}

/// The factors in the pattern of `A` plus the diagonal, `b b` row-major values per slot.
#[derive(Debug, Clone, PartialEq)]
struct Factors<A> {
    b: usize,
    n: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<Index>,
    values: Vec<A>,
    /// Slot of the diagonal (block) of each row.
    diag: Vec<usize>,
    /// `U_ii^-1`, `b b` row-major values per row.
    inv_diag: Vec<A>,
    /// [`IluOptions::sweeps`].
    sweeps: Option<usize>,
}

/// The order in which [`Factors::build`] factors the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowOrder {
    /// Row after row, stopping at the first breakdown: the library's.
    Sequential,
    /// Level after level of [`LevelSchedule::lower`], the rows of a level in decreasing
    /// order, every row (breakdowns flagged): the device's walk, on the CPU, for tests.
    #[cfg_attr(not(test), allow(dead_code))]
    LevelsReversed,
}

/// How a row was stored before the factorisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    /// Stores entries, the diagonal among them.
    Full,
    /// Stores entries but no diagonal: a zero (shifted) diagonal was added.
    NoDiagonal,
    /// Stores nothing: the identity's row.
    Empty,
}

/// Why the factorisation stopped, at which (block) row.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Breakdown {
    /// A row without its diagonal and no shift.
    MissingDiagonal,
    /// Gauss-Jordan met a zero pivot inverting `U_ii` (for points: `u_ii = 0`), or the
    /// inverse has a non-finite entry.
    Singular,
    /// `tol max|U_ii^-1| r_i >= 1`; the value is `max|U_ii^-1| r_i`.
    Tiny(f64),
    /// A non-finite entry in the row's factors.
    Overflow,
}

impl Breakdown {
    /// The breakdown a row's flag (`ferrocuda_kernels::precond::ilu::ILU_*`) reports,
    /// `None` for a row that factored (or the identity's row); `inv`: the row's inverse
    /// pivot, `scales`: the scales of its scalar rows.
    fn from_flag<R: RealScalar, A: Scalar<Real = R>>(
        flag: u32,
        inv: &[A],
        scales: &[R],
    ) -> Option<Self> {
        match flag {
            ki::ILU_OK | ki::ILU_IDENTITY_ROW => None,
            ki::ILU_MISSING_DIAGONAL => Some(Breakdown::MissingDiagonal),
            ki::ILU_OVERFLOW => Some(Breakdown::Overflow),
            ki::ILU_SINGULAR => Some(Breakdown::Singular),
            _ => Some(Breakdown::Tiny(
                ki::max_magnitude(inv).to_f64() * ki::block_row_max(scales).to_f64(),
            )),
        }
    }
}

/// The scalar type `T`'s `|.|` ([`ki::magnitude`]) as `f64`, for messages.
fn mag_f64<T: Element>(v: T) -> f64 {
    ki::magnitude(v).to_f64()
}

/// The factors' pattern and values before the factorisation (`A` plus the shift, the
/// diagonal added where missing), with what the factorisation needs besides.
struct Unfactored<A: Element> {
    f: Factors<A>,
    kinds: Vec<RowKind>,
    /// The scale `max_j |a_ij|` of every scalar row.
    row_max: Vec<A::Real>,
    /// The pivot tolerance, `pivot_tol eps`.
    tol: A::Real,
    shifted: bool,
}

impl<A: Element> Factors<A> {
    /// The same factors with their values rounded to `A::Low` (single precision; a
    /// single-precision one is copied), the pattern and sweeps kept. Errors: an entry
    /// beyond the single-precision range (named).
    fn narrowed(&self, op: &'static str) -> Result<Factors<A::Low>> {
        use ferrocuda_kernels::krylov::BasisScalar;
        use rayon::prelude::*;
        let narrow =
            |v: &[A]| -> Vec<A::Low> { v.par_iter().map(|&v| A::Low::narrow(v)).collect() };
        let (values, inv_diag) = (narrow(&self.values), narrow(&self.inv_diag));
        for (what, low, full) in [
            ("factor value", &values, &self.values),
            ("inverse pivot value", &inv_diag, &self.inv_diag),
        ] {
            if let Some(p) = low.par_iter().position_first(|&v| !kp::is_finite(v)) {
                return Err(Error::InvalidArgument {
                    op,
                    reason: format!(
                        "ILU(0) {what} {p} is {:?}, beyond the single-precision range: keep the factors in full precision (MatrixStorage::Full, --storage full)",
                        full[p]
                    ),
                });
            }
        }
        Ok(Factors {
            b: self.b,
            n: self.n,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values,
            diag: self.diag.clone(),
            inv_diag,
            sweeps: self.sweeps,
        })
    }

    /// Checks, copies and factors `src` (`point`: with the point functions).
    fn build(
        src: Source<'_, A>,
        point: bool,
        opts: &IluOptions,
        op: &'static str,
        order: RowOrder,
    ) -> Result<Self> {
        let Unfactored {
            mut f,
            kinds,
            row_max,
            tol,
            shifted,
        } = Self::unfactored(src, opts, op)?;
        let n = f.n;
        let levels = match order {
            RowOrder::Sequential => None,
            RowOrder::LevelsReversed => {
                let s = LevelSchedule::lower(&f.row_ptr, &f.col_idx, &f.diag)?;
                let mut rows = Vec::with_capacity(n);
                for l in 0..s.n_levels() {
                    rows.extend(s.level(l).iter().rev());
                }
                Some(rows)
            }
        };
        if let Err((i, why)) = factor_rows(
            &mut f,
            point,
            &kinds,
            &row_max,
            tol,
            shifted,
            levels.as_deref(),
        ) {
            return Err(f.breakdown_error(op, point, i, why, opts, &row_max));
        }
        Ok(f)
    }

    /// Checks and copies `src` into the factors' pattern, shifted (module docs).
    fn unfactored(
        src: Source<'_, A>,
        opts: &IluOptions,
        op: &'static str,
    ) -> Result<Unfactored<A>> {
        opts.validate(op)?;
        let Source {
            b,
            n,
            row_ptr,
            col_idx,
            values,
            layout,
        } = src;
        let bb = b * b;
        // The largest entry of every scalar row, and the shift of its diagonal entry.
        let mut row_max = crate::alloc::try_vec(
            &format!("{op}: the row scales of {} rows", n * b),
            n * b,
            A::Real::ZERO,
        )?;
        for i in 0..n {
            for k in row_ptr[i]..row_ptr[i + 1] {
                let blk = &values[k * bb..(k + 1) * bb];
                for (r, m) in row_max[i * b..(i + 1) * b].iter_mut().enumerate() {
                    for c in 0..b {
                        let v = ki::magnitude(blk[layout.offset(b, r, c)]);
                        if v > *m {
                            *m = v;
                        }
                    }
                }
            }
        }
        let alpha = A::Real::from_f64(opts.shift);
        let shifted = opts.shift > 0.0;

        // The pattern of A plus the diagonal, values row-major.
        let kinds: Vec<RowKind> = (0..n)
            .map(|i| {
                let cols = &col_idx[row_ptr[i]..row_ptr[i + 1]];
                if cols.is_empty() {
                    RowKind::Empty
                } else if cols.binary_search(&(i as Index)).is_ok() {
                    RowKind::Full
                } else {
                    RowKind::NoDiagonal
                }
            })
            .collect();
        let added = kinds.iter().filter(|&&k| k != RowKind::Full).count();
        let slots = col_idx.len() + added;
        let what = format!("{op}: the factors of {n} block rows of {b} x {b}, {slots} blocks");
        crate::alloc::check_host_bytes(
            &what,
            (slots as u128 * bb as u128 + n as u128 * bb as u128) * size_of::<A>() as u128
                + slots as u128 * size_of::<Index>() as u128,
        )?;
        let mut f_ptr = crate::alloc::try_with_capacity(&what, n + 1)?;
        let mut f_col = crate::alloc::try_with_capacity(&what, slots)?;
        let mut f_val = crate::alloc::try_with_capacity(&what, slots * bb)?;
        let mut diag = crate::alloc::try_with_capacity(&what, n)?;
        f_ptr.push(0);
        for i in 0..n {
            let mut placed = false;
            let put_diagonal =
                |f_col: &mut Vec<Index>, f_val: &mut Vec<A>, diag: &mut Vec<usize>, one: A| {
                    diag.push(f_col.len());
                    f_col.push(i as Index);
                    let base = f_val.len();
                    f_val.resize(base + bb, A::ZERO);
                    for r in 0..b {
                        f_val[base + r * b + r] = one;
                    }
                };
            if kinds[i] == RowKind::Empty {
                put_diagonal(&mut f_col, &mut f_val, &mut diag, A::ONE);
                f_ptr.push(f_col.len());
                continue;
            }
            for k in row_ptr[i]..row_ptr[i + 1] {
                let j = col_idx[k] as usize;
                if !placed && j > i {
                    put_diagonal(&mut f_col, &mut f_val, &mut diag, A::ZERO);
                    placed = true;
                }
                if j == i {
                    diag.push(f_col.len());
                    placed = true;
                }
                f_col.push(j as Index);
                let blk = &values[k * bb..(k + 1) * bb];
                for r in 0..b {
                    for c in 0..b {
                        f_val.push(blk[layout.offset(b, r, c)]);
                    }
                }
            }
            if !placed {
                put_diagonal(&mut f_col, &mut f_val, &mut diag, A::ZERO);
            }
            if shifted {
                let d = diag[i] * bb;
                for r in 0..b {
                    let s = A::from_real(alpha * row_max[i * b + r]);
                    f_val[d + r * b + r] = f_val[d + r * b + r] + s;
                }
            }
            f_ptr.push(f_col.len());
        }
        let inv_diag = crate::alloc::try_vec(&what, n * bb, A::ZERO)?;
        let f = Factors {
            b,
            n,
            row_ptr: f_ptr,
            col_idx: f_col,
            values: f_val,
            diag,
            inv_diag,
            sweeps: opts.sweeps,
        };
        Ok(Unfactored {
            f,
            kinds,
            row_max,
            tol: ki::pivot_tolerance::<A::Real>(opts.pivot_tol),
            shifted,
        })
    }

    /// The error of a breakdown at (block) row `i`.
    fn breakdown_error(
        &self,
        op: &'static str,
        point: bool,
        i: usize,
        why: Breakdown,
        opts: &IluOptions,
        row_max: &[A::Real],
    ) -> Error {
        let b = self.b;
        let bb = b * b;
        let (row, pivot) = if point {
            (format!("row {i}"), "pivot".to_string())
        } else {
            (format!("block row {i}"), format!("{b}x{b} pivot block"))
        };
        let r_i = row_max[i * b..(i + 1) * b]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.to_f64()));
        let remedy = "a positive IluOptions::shift avoids it";
        let u = &self.values[self.diag[i] * bb..(self.diag[i] + 1) * bb];
        let reason = match why {
            Breakdown::MissingDiagonal => format!(
                "{row} stores entries but no diagonal {} (column {i}): a zero pivot in ILU(0); {remedy}",
                if point { "entry" } else { "block" }
            ),
            Breakdown::Singular if point => format!(
                "{row}: zero pivot u_ii = {:?} after elimination (or one without a finite reciprocal); {remedy}",
                u[0]
            ),
            Breakdown::Singular => format!(
                "{row}: the {pivot} U_ii after elimination is singular (a zero pivot in its Gauss-Jordan inversion, or an inverse with a non-finite entry); {remedy}"
            ),
            Breakdown::Tiny(growth) => {
                let tol = opts.pivot_tol * <A::Real as RealScalar>::EPSILON.to_f64();
                if point {
                    format!(
                        "{row}: tiny pivot u_ii = {:?}: |u_ii| = {:.3e} <= pivot_tol eps max_j |a_ij| = {:.3e} (pivot_tol = {}, max_j |a_ij| = {r_i:.3e}); {remedy}",
                        u[0],
                        mag_f64(u[0]),
                        tol * r_i,
                        opts.pivot_tol
                    )
                } else {
                    format!(
                        "{row}: the {pivot} U_ii is nearly singular: max|U_ii^-1| max_j |a_ij| = {growth:.3e} >= 1 / (pivot_tol eps) = {:.3e} (pivot_tol = {}, max_j |a_ij| = {r_i:.3e}); {remedy}",
                        1.0 / tol,
                        opts.pivot_tol
                    )
                }
            }
            Breakdown::Overflow => format!(
                "{row}: the factors overflowed (a non-finite entry in {row} of L or U); {remedy}"
            ),
        };
        Error::InvalidArgument { op, reason }
    }

    /// `y = (L U)^-1 x`.
    fn solve<V: Element>(&self, point: bool, op: &'static str, x: &[V], y: &mut [V]) -> Result<()>
    where
        A: MatrixScalar<V>,
    {
        let rows = self.n * self.b;
        check_len(op, "x", rows, x.len())?;
        check_len(op, "y", rows, y.len())?;
        match (rows, self.sweeps) {
            (0, _) => {}
            (_, None) => solve_rows(self, point, x, y),
            (_, Some(s)) => sweep_rows(self, point, s, x, y),
        }
        Ok(())
    }
}

crate::cpu_dispatch::fma_kernel! {
/// Factors the rows of `f` in place (see the module docs): in order where `order` is
/// `None`, stopping at the first breakdown; else in the order given (a topological order
/// of the rows, such as a [`LevelSchedule`]'s, as the device walks them), every row, the
/// breakdown reported being that of the smallest row that breaks down (the same as in
/// order: that row reads only earlier rows, which are the same). On a breakdown, the row
/// and why.
fn factor_rows[A: Element](
    f: &mut Factors<A>,
    point: bool,
    kinds: &[RowKind],
    row_max: &[A::Real],
    tol: A::Real,
    shifted: bool,
    order: Option<&[u32]>,
) -> std::result::Result<(), (usize, Breakdown)> {
    let mut first: Option<(usize, Breakdown)> = None;
    for t in 0..f.n {
        let i = order.map_or(t, |o| o[t] as usize);
        if let Err(why) = factor_row(f, i, point, kinds[i], row_max, tol, shifted) {
            if order.is_none() {
                return Err((i, why));
            }
            if first.is_none_or(|(r, _)| i < r) {
                first = Some((i, why));
            }
        }
    }
    first.map_or(Ok(()), Err)
}
}

/// Factors row `i` of `f` in place; the rows it stores left of its diagonal are final.
#[inline(always)]
fn factor_row<A: Element>(
    f: &mut Factors<A>,
    i: usize,
    point: bool,
    kind: RowKind,
    row_max: &[A::Real],
    tol: A::Real,
    shifted: bool,
) -> std::result::Result<(), Breakdown> {
    let b = f.b;
    let bb = b * b;
    let (start, end, d) = (f.row_ptr[i], f.row_ptr[i + 1], f.diag[i]);
    match kind {
        RowKind::Empty => {
            let inv = &mut f.inv_diag[i * bb..(i + 1) * bb];
            for r in 0..b {
                inv[r * b + r] = A::ONE;
            }
            return Ok(());
        }
        RowKind::NoDiagonal if !shifted => return Err(Breakdown::MissingDiagonal),
        _ => {}
    }
    // Rows stored before i (those row i reads are final): `done`; row i: `cur`.
    let (done, rest) = f.values.split_at_mut(start * bb);
    let cur = &mut rest[..(end - start) * bb];
    let (inv_done, inv_rest) = f.inv_diag.split_at_mut(i * bb);
    let done: &[A] = done;
    let inv_done: &[A] = inv_done;
    let (col_idx, diag, row_ptr) = (&f.col_idx[..], &f.diag[..], &f.row_ptr[..]);
    let upper = move |k: usize| {
        let (ku, ke) = (diag[k] + 1, row_ptr[k + 1]);
        (
            &col_idx[ku..ke],
            &done[ku * bb..ke * bb],
            &inv_done[k * bb..(k + 1) * bb],
        )
    };
    let inv = &mut inv_rest[..bb];
    let scales = &row_max[i * b..(i + 1) * b];
    let flag = ki::factor_row(
        b,
        point,
        &col_idx[start..end],
        d - start,
        cur,
        upper,
        inv,
        scales,
        tol,
    );
    Breakdown::from_flag(flag, inv, scales).map_or(Ok(()), Err)
}

crate::cpu_dispatch::fma_kernel! {
/// `y = U^-1 L^-1 x`: the forward solve into `y`, then the back solve in place.
fn solve_rows[A: Element + MatrixScalar<V>, V: Element](
    f: &Factors<A>,
    point: bool,
    x: &[V],
    y: &mut [V],
) {
    let (b, n) = (f.b, f.n);
    let bb = b * b;
    if point {
        for i in 0..n {
            let (s, d) = (f.row_ptr[i], f.diag[i]);
            y[i] = ki::forward_row(x[i], &f.col_idx[s..d], &f.values[s..d], |c| y[c]);
        }
        for i in (0..n).rev() {
            let (d, e) = (f.diag[i] + 1, f.row_ptr[i + 1]);
            y[i] = ki::backward_row(y[i], &f.col_idx[d..e], &f.values[d..e], f.inv_diag[i], |c| y[c]);
        }
        return;
    }
    let mut s = [V::ZERO; MAX_BLOCK];
    let mut t = [V::ZERO; MAX_BLOCK];
    let (s, t) = (&mut s[..b], &mut t[..b]);
    for i in 0..n {
        let (st, d) = (f.row_ptr[i], f.diag[i]);
        s.copy_from_slice(&x[i * b..(i + 1) * b]);
        ki::block_row_residual(s, &f.col_idx[st..d], &f.values[st * bb..d * bb], |c| y[c]);
        y[i * b..(i + 1) * b].copy_from_slice(s);
    }
    for i in (0..n).rev() {
        let (d, e) = (f.diag[i] + 1, f.row_ptr[i + 1]);
        s.copy_from_slice(&y[i * b..(i + 1) * b]);
        ki::block_row_residual(s, &f.col_idx[d..e], &f.values[d * bb..e * bb], |c| y[c]);
        kp::apply_block(t, &f.inv_diag[i * bb..(i + 1) * bb], s);
        y[i * b..(i + 1) * b].copy_from_slice(t);
    }
}
}

crate::cpu_dispatch::fma_kernel! {
/// `y ~ U^-1 L^-1 x` by `sweeps` Jacobi sweeps per factor from zero
/// ([`IluOptions::sweeps`]): each sweep computes every row from the previous iterate by
/// the row functions of the exact solve; the forward solve's first sweep is `x` itself,
/// the back solve's first reads zeros.
fn sweep_rows[A: Element + MatrixScalar<V>, V: Element](
    f: &Factors<A>,
    point: bool,
    sweeps: usize,
    x: &[V],
    y: &mut [V],
) {
    let (b, n) = (f.b, f.n);
    let bb = b * b;
    let mut s = [V::ZERO; MAX_BLOCK];
    let mut t = [V::ZERO; MAX_BLOCK];
    let (s, t) = (&mut s[..b], &mut t[..b]);
    let mut cur = x.to_vec();
    let mut next = vec![V::ZERO; n * b];
    for _ in 1..sweeps {
        for i in 0..n {
            let (st, d) = (f.row_ptr[i], f.diag[i]);
            if point {
                next[i] = ki::forward_row(x[i], &f.col_idx[st..d], &f.values[st..d], |c| cur[c]);
                continue;
            }
            s.copy_from_slice(&x[i * b..(i + 1) * b]);
            ki::block_row_residual(s, &f.col_idx[st..d], &f.values[st * bb..d * bb], |c| cur[c]);
            next[i * b..(i + 1) * b].copy_from_slice(s);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    let z = cur;
    let mut prev = next;
    prev.fill(V::ZERO);
    for _ in 0..sweeps {
        for i in 0..n {
            let (d, e) = (f.diag[i] + 1, f.row_ptr[i + 1]);
            if point {
                y[i] = ki::backward_row(z[i], &f.col_idx[d..e], &f.values[d..e], f.inv_diag[i], |c| prev[c]);
                continue;
            }
            s.copy_from_slice(&z[i * b..(i + 1) * b]);
            ki::block_row_residual(s, &f.col_idx[d..e], &f.values[d * bb..e * bb], |c| prev[c]);
            kp::apply_block(t, &f.inv_diag[i * bb..(i + 1) * bb], s);
            y[i * b..(i + 1) * b].copy_from_slice(t);
        }
        prev.copy_from_slice(y);
    }
}
}

/// The accessors shared by [`Ilu0`] and [`BlockIlu0`].
macro_rules! factor_accessors {
    () => {
        /// Row offsets of the factors (`n + 1` for `n` (block) rows): (block) row `i` is
        /// `row_ptr[i]..row_ptr[i + 1]`.
        pub fn row_ptr(&self) -> &[usize] {
            &self.f.row_ptr
        }

        /// (Block) column of each stored entry (block) of the factors, strictly increasing
        /// within a row: the pattern of `A`, plus the diagonal where `A` does not store it
        /// (a row that stores nothing holds only its diagonal).
        pub fn col_idx(&self) -> &[Index] {
            &self.f.col_idx
        }

        /// Slot (index into [`Self::col_idx`]) of the diagonal of each (block) row: `L`
        /// before it, `U` from it on.
        pub fn diagonal_slots(&self) -> &[usize] {
            &self.f.diag
        }

        /// The level schedules of the factors' pattern: of the factorisation and forward
        /// solve ([`LevelSchedule::lower`]) and of the back solve
        /// ([`LevelSchedule::upper`]), as the device walks them.
        pub fn level_schedules(&self) -> Result<(LevelSchedule, LevelSchedule)> {
            let f = &self.f;
            Ok((
                LevelSchedule::lower(&f.row_ptr, &f.col_idx, &f.diag)?,
                LevelSchedule::upper(&f.row_ptr, &f.col_idx, &f.diag)?,
            ))
        }
    };
}

/// Point ILU(0) of a square [`Csr`] matrix on the CPU, applying `(L U)^-1`
/// ([module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct Ilu0<A> {
    f: Factors<A>,
}

impl<A: Element> Ilu0<A> {
    /// ILU(0) of `a` with the default options (no shift). Errors
    /// ([`Error::InvalidArgument`] unless said otherwise): `a` not square, a non-finite
    /// entry ([`Error::Sparse`], naming it), a zero, missing or tiny pivot or an overflow
    /// (the message names the first row where the factorisation breaks down), memory.
    pub fn new(a: &Csr<A>) -> Result<Self> {
        Self::build(a, &IluOptions::default(), "Ilu0::new", RowOrder::Sequential)
    }

    /// ILU(0) of `a + shift diag(r_i)` with the given options; errors as [`Ilu0::new`],
    /// plus an option that is negative or not finite.
    pub fn with_options(a: &Csr<A>, opts: &IluOptions) -> Result<Self> {
        Self::build(a, opts, "Ilu0::with_options", RowOrder::Sequential)
    }

    fn build(a: &Csr<A>, opts: &IluOptions, op: &'static str, order: RowOrder) -> Result<Self> {
        Ok(Ilu0 {
            f: Factors::build(Self::source(a, op)?, true, opts, op, order)?,
        })
    }

    /// `a` checked (square, finite) as the factorisation's source.
    fn source<'a>(a: &'a Csr<A>, op: &'static str) -> Result<Source<'a, A>> {
        if a.n_rows() != a.n_cols() {
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "the matrix is {} x {}; ILU(0) needs a square matrix",
                    a.n_rows(),
                    a.n_cols()
                ),
            });
        }
        a.check_finite()?;
        Ok(Source {
            b: 1,
            n: a.n_rows(),
            row_ptr: a.row_ptr(),
            col_idx: a.col_idx(),
            values: a.values(),
            layout: BlockLayout::RowMajor,
        })
    }

    /// Rows (= columns) of the operator.
    pub fn n_rows(&self) -> usize {
        self.f.n
    }

    factor_accessors!();

    /// The factors, one value per slot of [`Self::col_idx`]: `l_ij` left of the diagonal
    /// slot, `u_ij` from it on.
    pub fn values(&self) -> &[A] {
        &self.f.values
    }

    /// The inverse pivots `1 / u_ii`, one per row.
    pub fn inverse_pivots(&self) -> &[A] {
        &self.f.inv_diag
    }

    /// The same preconditioner with its factors rounded to single precision (`f32` for
    /// `f64`, `Complex<f32>` for `Complex<f64>`; a single-precision one is copied): half
    /// the bytes per application on double-precision vectors
    /// ([`super::MatrixStorage::F32`]). The factorisation ran in full precision first.
    /// Errors: a factor beyond the single-precision range (named).
    pub fn narrowed(&self) -> Result<Ilu0<A::Low>> {
        Ok(Ilu0 {
            f: self.f.narrowed("Ilu0::narrowed")?,
        })
    }
}

impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for Ilu0<A> {
    fn nrows(&self) -> usize {
        self.f.n
    }
    fn ncols(&self) -> usize {
        self.f.n
    }
    /// `y = U^-1 L^-1 x`: a forward and a back solve, one row after the other.
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        self.f.solve(true, "Ilu0::apply", x, y)
    }
}

/// Block ILU(0) of a square [`Bcsr`] matrix with `b x b` blocks on the CPU, applying
/// `(L U)^-1` ([module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockIlu0<A> {
    f: Factors<A>,
}

impl<A: Element> BlockIlu0<A> {
    /// Block ILU(0) of `a` with the default options (no shift). Errors
    /// ([`Error::InvalidArgument`]): `a` not square in blocks, `b > `[`MAX_BLOCK`], a
    /// non-finite entry (named), a missing or singular diagonal block, a nearly singular
    /// pivot block or an overflow (the message names the first block row where the
    /// factorisation breaks down), memory.
    pub fn new(a: &Bcsr<A>) -> Result<Self> {
        Self::build(
            a,
            &IluOptions::default(),
            "BlockIlu0::new",
            RowOrder::Sequential,
        )
    }

    /// Block ILU(0) of `a + shift diag(r_i)` with the given options; errors as
    /// [`BlockIlu0::new`], plus an option that is negative or not finite.
    pub fn with_options(a: &Bcsr<A>, opts: &IluOptions) -> Result<Self> {
        Self::build(a, opts, "BlockIlu0::with_options", RowOrder::Sequential)
    }

    fn build(a: &Bcsr<A>, opts: &IluOptions, op: &'static str, order: RowOrder) -> Result<Self> {
        Ok(BlockIlu0 {
            f: Factors::build(Self::source(a, op)?, false, opts, op, order)?,
        })
    }

    /// `a` checked (square in blocks, `b <= MAX_BLOCK`, finite) as the factorisation's
    /// source.
    fn source<'a>(a: &'a Bcsr<A>, op: &'static str) -> Result<Source<'a, A>> {
        let (nbr, nbc, b) = (a.n_block_rows(), a.n_block_cols(), a.b());
        if nbr != nbc {
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "the matrix has {nbr} block rows but {nbc} block columns ({} x {}); ILU(0) needs a square matrix",
                    a.n_rows(),
                    a.n_cols()
                ),
            });
        }
        if b > MAX_BLOCK {
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "block size b = {b} exceeds the largest supported, {MAX_BLOCK} (Ilu0 on the CSR form has no limit)"
                ),
            });
        }
        if let Some(p) = a.values().iter().position(|&v| !kp::is_finite(v)) {
            let bb = b * b;
            let k = p / bb;
            let i = a.row_ptr().partition_point(|&o| o <= k) - 1;
            let j = a.col_idx()[k] as usize;
            let (r, c) = (0..b)
                .flat_map(|r| (0..b).map(move |c| (r, c)))
                .find(|&(r, c)| a.layout().offset(b, r, c) == p % bb)
                .unwrap_or((0, 0));
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "the entry ({}, {}) (0-based; entry ({r}, {c}) of block ({i}, {j})) is {:?}: the matrix must be finite",
                    i * b + r,
                    j * b + c,
                    a.values()[p]
                ),
            });
        }
        Ok(Source {
            b,
            n: nbr,
            row_ptr: a.row_ptr(),
            col_idx: a.col_idx(),
            values: a.values(),
            layout: a.layout(),
        })
    }

    /// Block size `b`.
    pub fn b(&self) -> usize {
        self.f.b
    }

    /// Block rows (= block columns).
    pub fn n_block_rows(&self) -> usize {
        self.f.n
    }

    /// Rows (= columns) of the operator, `n_block_rows b`.
    pub fn n_rows(&self) -> usize {
        self.f.n * self.f.b
    }

    factor_accessors!();

    /// The factor blocks, `b b` row-major values per slot of [`Self::col_idx`] (whatever
    /// the layout of `A`): `L_ij` left of the diagonal slot, `U_ij` from it on.
    pub fn blocks(&self) -> &[A] {
        &self.f.values
    }

    /// The inverted diagonal blocks `U_ii^-1`, `b b` row-major values per block row.
    pub fn inverse_diagonal_blocks(&self) -> &[A] {
        &self.f.inv_diag
    }

    /// [`Ilu0::narrowed`] for blocks: the factor blocks and inverted diagonal blocks
    /// rounded to single precision. Errors: as [`Ilu0::narrowed`].
    pub fn narrowed(&self) -> Result<BlockIlu0<A::Low>> {
        Ok(BlockIlu0 {
            f: self.f.narrowed("BlockIlu0::narrowed")?,
        })
    }
}

impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for BlockIlu0<A> {
    fn nrows(&self) -> usize {
        self.n_rows()
    }
    fn ncols(&self) -> usize {
        self.n_rows()
    }
    /// `y = U^-1 L^-1 x`: a forward and a back solve, one block row after the other.
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        self.f.solve(false, "BlockIlu0::apply", x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Complex;
    use crate::krylov::{BlockJacobi, GmresOptions, cpu};
    use crate::sparse::generate::{self, TraceSpec};
    use crate::sparse::{BcsrParts, BlockFit, Coo};
    use rand::rngs::SmallRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    /// A random `n x n` matrix: off-diagonal entries with probability `density`, the
    /// diagonal with probability `diag_p`, values uniform in [-1, 1]; `dominant`: the
    /// diagonal is `+-(1 + sum_j |a_ij|)`, else `+-(0.3 + 0.3 sum_j |a_ij|)` (not
    /// dominant). The triplets go into the COO matrix in random order (unsorted columns).
    fn random_csr(
        rng: &mut SmallRng,
        n: usize,
        density: f64,
        diag_p: f64,
        dominant: bool,
    ) -> Csr<f64> {
        let mut t = Vec::new();
        for i in 0..n {
            let mut sum = 0.0;
            for j in 0..n {
                if j != i && rng.random_bool(density) {
                    let v: f64 = rng.random_range(-1.0..1.0);
                    sum += v.abs();
                    t.push((i, j, v));
                }
            }
            if rng.random_bool(diag_p) {
                let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
                let d = if dominant { 1.0 + sum } else { 0.3 + 0.3 * sum };
                t.push((i, i, sign * d));
            }
        }
        t.shuffle(rng);
        let mut coo = Coo::empty(n, n).expect("coo");
        for (i, j, v) in t {
            coo.push(i, j, v).expect("push");
        }
        Csr::from(&coo)
    }

    /// The dense copy of `a` and its pattern (row-major `n x n`), with the diagonal
    /// shifted as [`IluOptions::shift`] says (and added to the pattern where `alpha > 0`).
    fn dense_shifted(a: &Csr<f64>, alpha: f64) -> (Vec<f64>, Vec<bool>) {
        let n = a.n_rows();
        let mut d = vec![0.0; n * n];
        let mut p = vec![false; n * n];
        for i in 0..n {
            let (cols, vals) = a.row(i);
            let r = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (&c, &v) in cols.iter().zip(vals) {
                d[i * n + c as usize] = v;
                p[i * n + c as usize] = true;
            }
            if cols.is_empty() {
                d[i * n + i] = 1.0; // the identity's row
                p[i * n + i] = true;
            } else if alpha > 0.0 {
                d[i * n + i] += alpha * r;
                p[i * n + i] = true;
            }
        }
        (d, p)
    }

    /// Textbook ILU(0), Saad's Algorithm 10.4, on a dense copy `d` with pattern `p`:
    /// for each `i`, each `k < i` in the pattern: `a_ik /= a_kk`; for `j > k` in the
    /// pattern of rows `i` and `k`: `a_ij -= a_ik a_kj`. `library_rounding`: `a_ik (1 /
    /// a_kk)` and a fused `a_ij - a_ik a_kj`, the library's rounding (so the results must
    /// be the same bits); else plain division and separate operations.
    fn textbook_ilu0(n: usize, d: &mut [f64], p: &[bool], library_rounding: bool) {
        for i in 1..n {
            for k in 0..i {
                if !p[i * n + k] {
                    continue;
                }
                let l = if library_rounding {
                    d[i * n + k] * (1.0 / d[k * n + k])
                } else {
                    d[i * n + k] / d[k * n + k]
                };
                d[i * n + k] = l;
                for j in k + 1..n {
                    if p[i * n + j] && p[k * n + j] {
                        d[i * n + j] = if library_rounding {
                            (-l).mul_add(d[k * n + j], d[i * n + j])
                        } else {
                            d[i * n + j] - l * d[k * n + j]
                        };
                    }
                }
            }
        }
    }

    /// The factors of `m` as dense `n x n` arrays (`L` with its unit diagonal).
    fn dense_factors(m: &Ilu0<f64>) -> (Vec<f64>, Vec<f64>) {
        let n = m.n_rows();
        let (mut l, mut u) = (vec![0.0; n * n], vec![0.0; n * n]);
        for i in 0..n {
            l[i * n + i] = 1.0;
            for s in m.row_ptr()[i]..m.row_ptr()[i + 1] {
                let j = m.col_idx()[s] as usize;
                if s < m.diagonal_slots()[i] {
                    l[i * n + j] = m.values()[s];
                } else {
                    u[i * n + j] = m.values()[s];
                }
            }
        }
        (l, u)
    }

    /// `(L U)_ij = a_ij` on the pattern, to rounding: `|(L U)_ij - a_ij| <= 1e-13 (sum_k
    /// |l_ik| |u_kj| + |a_ij|)`; and `L U` is zero where the pattern holds no entry only
    /// in the sense that the factors themselves stay in the pattern.
    fn assert_lu_is_a_on_the_pattern(m: &Ilu0<f64>, d: &[f64], p: &[bool], what: &str) {
        let n = m.n_rows();
        let (l, u) = dense_factors(m);
        for i in 0..n {
            for j in 0..n {
                if !p[i * n + j] {
                    assert!(
                        l[i * n + j] == 0.0 && u[i * n + j] == 0.0,
                        "{what}: ({i}, {j}) outside the pattern"
                    );
                    continue;
                }
                let (mut s, mut scale) = (0.0, d[i * n + j].abs());
                for k in 0..n {
                    s += l[i * n + k] * u[k * n + j];
                    scale += (l[i * n + k] * u[k * n + j]).abs();
                }
                assert!(
                    (s - d[i * n + j]).abs() <= 1e-13 * scale,
                    "{what}: (LU)_{i}{j} = {s}, a_ij = {}",
                    d[i * n + j]
                );
            }
        }
    }

    /// `x - L U y`, computed from the stored factors (point or block, `b b` values per
    /// slot), and a scale for it: `|x| + |L| |U| |y|` entry by entry.
    fn lu_residual<A: Element + MatrixScalar<V>, V: Element>(
        b: usize,
        row_ptr: &[usize],
        col_idx: &[Index],
        diag: &[usize],
        vals: &[A],
        x: &[V],
        y: &[V],
    ) -> (f64, f64) {
        let n = row_ptr.len() - 1;
        let bb = b * b;
        let abs = |v: V| (v.abs2()).to_f64().sqrt();
        let absa = |v: A| (v.abs2()).to_f64().sqrt();
        // w = U y, then z = L w.
        let mut w = vec![V::ZERO; n * b];
        let mut ws = vec![0.0; n * b];
        for i in 0..n {
            for s in diag[i]..row_ptr[i + 1] {
                let j = col_idx[s] as usize;
                for r in 0..b {
                    for c in 0..b {
                        let a = vals[s * bb + r * b + c];
                        w[i * b + r] = a.mul_add_vec(y[j * b + c], w[i * b + r]);
                        ws[i * b + r] += absa(a) * abs(y[j * b + c]);
                    }
                }
            }
        }
        let (mut err, mut scale) = (0.0f64, 0.0f64);
        for i in 0..n {
            for r in 0..b {
                let mut z = w[i * b + r];
                let mut zs = ws[i * b + r];
                for s in row_ptr[i]..diag[i] {
                    let k = col_idx[s] as usize;
                    for c in 0..b {
                        let a = vals[s * bb + r * b + c];
                        z = a.mul_add_vec(w[k * b + c], z);
                        zs += absa(a) * ws[k * b + c];
                    }
                }
                err = err.max(abs(z - x[i * b + r]));
                scale = scale.max(zs + abs(x[i * b + r]));
            }
        }
        (err, scale)
    }

    fn random_vec<V: Element>(rng: &mut SmallRng, n: usize) -> Vec<V> {
        (0..n)
            .map(|_| {
                V::from_parts(
                    V::Real::from_f64(rng.random_range(-1.0..1.0)),
                    V::Real::from_f64(rng.random_range(-1.0..1.0)),
                )
            })
            .collect()
    }

    fn message(e: Error) -> String {
        e.to_string()
    }

    /// ILU(0) equals the textbook on a dense copy, bit for bit with the same rounding and
    /// to rounding with plain division, on random matrices (dominant or not, some rows
    /// without a diagonal, others empty, columns pushed unsorted), with and without a
    /// shift; `L U = A` on the pattern. A breakdown names the row where the textbook's
    /// pivot is tiny too.
    #[test]
    fn ilu0_equals_the_textbook_on_random_matrices() {
        let mut rng = SmallRng::seed_from_u64(1);
        let (mut ok, mut broke) = (0, 0);
        for &n in &[1usize, 2, 3, 7, 31, 33, 64] {
            for trial in 0..8 {
                let dominant = trial % 2 == 0;
                let density = [0.05, 0.15, 0.4, 1.0][trial / 2];
                let diag_p = if trial >= 4 { 0.9 } else { 1.0 };
                let a = random_csr(&mut rng, n, density, diag_p, dominant);
                for alpha in [0.0, 0.5] {
                    let what = format!("n = {n}, trial {trial}, shift {alpha}");
                    let opts = IluOptions::default().shift(alpha);
                    let (d0, p) = dense_shifted(&a, alpha);
                    let mut same = d0.clone();
                    textbook_ilu0(n, &mut same, &p, true);
                    match Ilu0::with_options(&a, &opts) {
                        Ok(m) => {
                            ok += 1;
                            let mut plain = d0.clone();
                            textbook_ilu0(n, &mut plain, &p, false);
                            let big = plain.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                            for i in 0..n {
                                for s in m.row_ptr()[i]..m.row_ptr()[i + 1] {
                                    let j = m.col_idx()[s] as usize;
                                    assert!(p[i * n + j], "{what}: ({i}, {j}) not in the pattern");
                                    let v = m.values()[s];
                                    assert_eq!(v, same[i * n + j], "{what}: ({i}, {j})");
                                    assert!(
                                        (v - plain[i * n + j]).abs() <= 1e-10 * big,
                                        "{what}: ({i}, {j})"
                                    );
                                }
                                let stored = m.row_ptr()[i + 1] - m.row_ptr()[i];
                                assert_eq!(
                                    stored,
                                    (0..n).filter(|&j| p[i * n + j]).count(),
                                    "{what}"
                                );
                                assert_eq!(m.inverse_pivots()[i], 1.0 / same[i * n + i], "{what}");
                            }
                            assert_lu_is_a_on_the_pattern(&m, &d0, &p, &what);
                        }
                        Err(e) => {
                            broke += 1;
                            let e = message(e);
                            // The first row whose textbook pivot is missing, zero or tiny.
                            let first = (0..n)
                                .find(|&i| {
                                    let r = a.row(i).1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                                    let u = same[i * n + i];
                                    !p[i * n + i]
                                        || u.abs() <= 100.0 * f64::EPSILON * r
                                        || !(1.0 / u).is_finite()
                                })
                                .unwrap_or_else(|| {
                                    panic!("{what}: {e}, but the textbook has no bad pivot")
                                });
                            assert!(e.contains(&format!("row {first}")), "{what}: {e}");
                        }
                    }
                }
            }
        }
        eprintln!("random matrices: {ok} factored, {broke} broke down");
        assert!(ok > 5 * broke, "{ok} factored, {broke} broke down");
    }

    /// The block version with `b = 1` computes the point version's bits (factors, inverse
    /// pivots, applications), also with ghost rows and a shift.
    #[test]
    fn block_ilu0_with_b1_is_ilu0() {
        let mut rng = SmallRng::seed_from_u64(2);
        for &n in &[1usize, 5, 40] {
            for (diag_p, alpha) in [(1.0, 0.0), (0.8, 0.25)] {
                let a = random_csr(&mut rng, n, 0.2, diag_p, true);
                let opts = IluOptions::default().shift(alpha);
                let p = Ilu0::with_options(&a, &opts).expect("point");
                for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
                    let ab = Bcsr::from_csr(&a, 1, layout, BlockFit::Exact).expect("bcsr");
                    let m = BlockIlu0::with_options(&ab, &opts).expect("block");
                    assert_eq!((m.b(), m.n_block_rows(), m.n_rows()), (1, n, n));
                    assert_eq!(m.row_ptr(), p.row_ptr());
                    assert_eq!(m.col_idx(), p.col_idx());
                    assert_eq!(m.diagonal_slots(), p.diagonal_slots());
                    assert_eq!(m.blocks(), p.values());
                    assert_eq!(m.inverse_diagonal_blocks(), p.inverse_pivots());
                    let x: Vec<Complex<f64>> = random_vec(&mut rng, n);
                    let (mut yp, mut yb) = (
                        vec![Complex::new(f64::NAN, 0.0); n],
                        vec![Complex::new(0.0, f64::NAN); n],
                    );
                    p.apply(&x, &mut yp).expect("apply");
                    m.apply(&x, &mut yb).expect("apply");
                    assert_eq!(yp, yb);
                }
            }
        }
    }

    /// Random block matrices for [`block_ilu0_equals_the_dense_block_textbook`]: `nb` block
    /// rows, off-diagonal blocks with probability `density`, block row `ghost` (if any)
    /// empty; diagonal blocks random plus `(1 + sum of the row's off-diagonal blocks'
    /// largest entries) b I`.
    fn random_bcsr(
        rng: &mut SmallRng,
        nb: usize,
        b: usize,
        density: f64,
        ghost: Option<usize>,
        layout: BlockLayout,
    ) -> Bcsr<f64> {
        let bb = b * b;
        let (mut row_ptr, mut col_idx, mut values) = (vec![0], Vec::new(), Vec::new());
        for i in 0..nb {
            if Some(i) != ghost {
                let cols: Vec<usize> = (0..nb)
                    .filter(|&j| j == i || rng.random_bool(density))
                    .collect();
                let off = (cols.len() - 1) as f64;
                for &j in &cols {
                    let mut blk: Vec<f64> = (0..bb).map(|_| rng.random_range(-1.0..1.0)).collect();
                    if j == i {
                        for r in 0..b {
                            blk[r * b + r] += (1.0 + off) * b as f64;
                        }
                    }
                    col_idx.push(j as Index);
                    for r in 0..b {
                        for c in 0..b {
                            values.push(blk[layout.offset(b, r, c)]);
                        }
                    }
                }
            }
            row_ptr.push(col_idx.len());
        }
        Bcsr::from_parts(BcsrParts {
            b,
            layout,
            n_block_rows: nb,
            n_block_cols: nb,
            row_ptr,
            col_idx,
            values,
        })
        .map_err(|r| r.error)
        .expect("bcsr")
    }

    fn matmul(b: usize, x: &[f64], y: &[f64]) -> Vec<f64> {
        (0..b * b)
            .map(|e| (0..b).map(|m| x[e / b * b + m] * y[m * b + e % b]).sum())
            .collect()
    }

    /// Textbook block ILU(0) on a dense array of optional blocks (row-major), the
    /// diagonal blocks inverted by nalgebra's LU: for each `i`, `k < i` stored:
    /// `A_ik <- A_ik A_kk^-1`; for `j > k` stored in rows `i` and `k`: `A_ij -= A_ik A_kj`.
    fn textbook_block_ilu0(nb: usize, b: usize, d: &mut [Option<Vec<f64>>]) {
        for i in 1..nb {
            for k in 0..i {
                let Some(aik) = d[i * nb + k].clone() else {
                    continue;
                };
                let ukk = d[k * nb + k].clone().expect("diagonal");
                let inv = nalgebra::DMatrix::from_row_slice(b, b, &ukk)
                    .try_inverse()
                    .expect("invertible");
                let inv: Vec<f64> = (0..b * b).map(|e| inv[(e / b, e % b)]).collect();
                let l = matmul(b, &aik, &inv);
                for j in k + 1..nb {
                    if d[i * nb + j].is_none() {
                        continue;
                    }
                    if let Some(ukj) = d[k * nb + j].clone() {
                        let lu = matmul(b, &l, &ukj);
                        if let Some(aij) = d[i * nb + j].as_mut() {
                            aij.iter_mut().zip(&lu).for_each(|(a, p)| *a -= p);
                        }
                    }
                }
                d[i * nb + k] = Some(l);
            }
        }
    }

    /// The dense array of optional row-major blocks of `a` (ghost rows: the identity).
    fn dense_blocks(a: &Bcsr<f64>) -> Vec<Option<Vec<f64>>> {
        let (nb, b) = (a.n_block_rows(), a.b());
        let mut d = vec![None; nb * nb];
        for i in 0..nb {
            if a.row_ptr()[i] == a.row_ptr()[i + 1] {
                d[i * nb + i] = Some(
                    (0..b * b)
                        .map(|e| if e / b == e % b { 1.0 } else { 0.0 })
                        .collect(),
                );
            }
            for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
                let blk = a.block(k);
                d[i * nb + a.col_idx()[k] as usize] = Some(
                    (0..b * b)
                        .map(|e| blk[a.layout().offset(b, e / b, e % b)])
                        .collect(),
                );
            }
        }
        d
    }

    fn assert_block_factors_match(
        m: &BlockIlu0<f64>,
        want: &[Option<Vec<f64>>],
        tol: f64,
        what: &str,
    ) {
        let (nb, b) = (m.n_block_rows(), m.b());
        let bb = b * b;
        for i in 0..nb {
            let stored = m.row_ptr()[i + 1] - m.row_ptr()[i];
            assert_eq!(
                stored,
                (0..nb).filter(|&j| want[i * nb + j].is_some()).count(),
                "{what}: block row {i}"
            );
            for s in m.row_ptr()[i]..m.row_ptr()[i + 1] {
                let j = m.col_idx()[s] as usize;
                let w = want[i * nb + j]
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: ({i}, {j}) outside the pattern"));
                let got = &m.blocks()[s * bb..(s + 1) * bb];
                let scale = w.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                for (g, v) in got.iter().zip(w) {
                    assert!(
                        (g - v).abs() <= tol * scale,
                        "{what}: block ({i}, {j}): {got:?} vs {w:?}"
                    );
                }
            }
            // The stored inverse is the inverse of U_ii.
            let d = m.diagonal_slots()[i];
            let id = matmul(
                b,
                &m.blocks()[d * bb..(d + 1) * bb],
                &m.inverse_diagonal_blocks()[i * bb..(i + 1) * bb],
            );
            for (e, v) in id.iter().enumerate() {
                let one = if e / b == e % b { 1.0 } else { 0.0 };
                assert!(
                    (v - one).abs() <= 1e-12,
                    "{what}: U_ii U_ii^-1 at block row {i}: {id:?}"
                );
            }
        }
    }

    /// Block ILU(0) equals a textbook block ILU(0) on a dense array of blocks for
    /// `b = 2, 3, 5, 8`, both layouts, a ghost row; and on a TRACE-like case of the
    /// generator.
    #[test]
    fn block_ilu0_equals_the_dense_block_textbook() {
        let mut rng = SmallRng::seed_from_u64(3);
        for &b in &[2usize, 3, 5, 8] {
            for (nb, density, ghost) in [
                (1, 0.0, None),
                (6, 0.5, Some(2)),
                (25, 0.15, Some(24)),
                (20, 0.3, None),
            ] {
                for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
                    let what = format!("b = {b}, {nb} block rows, {layout:?}");
                    let a = random_bcsr(&mut rng, nb, b, density, ghost, layout);
                    let m = BlockIlu0::new(&a).expect(&what);
                    let mut want = dense_blocks(&a);
                    textbook_block_ilu0(nb, b, &mut want);
                    assert_block_factors_match(&m, &want, 1e-12, &what);
                }
            }
        }
        let spec = TraceSpec::new(3, 2, 2, 2).seed(4);
        let a = generate::trace_like::<f64>(&spec).expect("trace");
        assert!(a.empty_block_rows() > 0);
        let m = BlockIlu0::new(&a).expect("trace");
        let mut want = dense_blocks(&a);
        textbook_block_ilu0(a.n_block_rows(), 5, &mut want);
        assert_block_factors_match(&m, &want, 1e-12, "TRACE-like");
        for i in (0..a.n_block_rows()).filter(|&i| spec.is_ghost_block_row(i)) {
            let inv = &m.inverse_diagonal_blocks()[i * 25..(i + 1) * 25];
            assert!(
                inv.iter()
                    .enumerate()
                    .all(|(e, &v)| v == if e / 5 == e % 5 { 1.0 } else { 0.0 })
            );
        }
    }

    /// Applying solves `L U y = x`: `L U y` multiplied back equals `x` to rounding, for
    /// point and block factors, real and complex vectors, a complex matrix.
    #[test]
    fn apply_solves_lu_y_equals_x() {
        let mut rng = SmallRng::seed_from_u64(5);
        for &n in &[1usize, 8, 50] {
            let a = random_csr(&mut rng, n, 0.2, 0.9, true);
            let m = Ilu0::with_options(&a, &IluOptions::default().shift(0.1)).expect("ilu");
            let x: Vec<f64> = random_vec(&mut rng, n);
            let mut y = vec![f64::NAN; n];
            m.apply(&x, &mut y).expect("apply");
            let (err, scale) = lu_residual(
                1,
                m.row_ptr(),
                m.col_idx(),
                m.diagonal_slots(),
                m.values(),
                &x,
                &y,
            );
            assert!(err <= 1e-14 * scale, "n = {n}: {err:e} of {scale:e}");
            let xc: Vec<Complex<f64>> = random_vec(&mut rng, n);
            let mut yc = vec![Complex::new(f64::NAN, 0.0); n];
            m.apply(&xc, &mut yc).expect("apply");
            let (err, scale) = lu_residual(
                1,
                m.row_ptr(),
                m.col_idx(),
                m.diagonal_slots(),
                m.values(),
                &xc,
                &yc,
            );
            assert!(
                err <= 1e-14 * scale,
                "n = {n}, complex: {err:e} of {scale:e}"
            );
        }
        for &b in &[2usize, 5] {
            let a = random_bcsr(&mut rng, 30, b, 0.2, Some(7), BlockLayout::ColMajor);
            let m = BlockIlu0::new(&a).expect("block ilu");
            let x: Vec<Complex<f64>> = random_vec(&mut rng, a.n_rows());
            let mut y = vec![Complex::new(f64::NAN, 0.0); a.n_rows()];
            m.apply(&x, &mut y).expect("apply");
            let (err, scale) = lu_residual(
                b,
                m.row_ptr(),
                m.col_idx(),
                m.diagonal_slots(),
                m.blocks(),
                &x,
                &y,
            );
            assert!(err <= 1e-13 * scale, "b = {b}: {err:e} of {scale:e}");
            // The ghost rows of a block matrix pass x through where nothing couples to them.
            assert_eq!(&y[7 * b..8 * b], &x[7 * b..8 * b]);
        }
        // A complex matrix.
        let mut coo = Coo::<Complex<f64>>::empty(20, 20).expect("coo");
        for i in 0..20 {
            coo.push(i, i, Complex::new(4.0, 1.0)).expect("push");
            coo.push(i, (i * 7 + 3) % 20, Complex::new(0.5, -1.0))
                .expect("push");
            coo.push(i, (i * 3 + 1) % 20, Complex::new(-1.0, 0.25))
                .expect("push");
        }
        let a = Csr::from(&coo);
        let m = Ilu0::new(&a).expect("complex ilu");
        let x: Vec<Complex<f64>> = random_vec(&mut rng, 20);
        let mut y = vec![Complex::new(0.0, 0.0); 20];
        m.apply(&x, &mut y).expect("apply");
        let (err, scale) = lu_residual(
            1,
            m.row_ptr(),
            m.col_idx(),
            m.diagonal_slots(),
            m.values(),
            &x,
            &y,
        );
        assert!(err <= 1e-14 * scale, "complex matrix: {err:e} of {scale:e}");
    }

    /// Factors narrowed to single precision: each value the f64 one rounded, the pattern
    /// and sweeps kept; the apply to f64 vectors within single-precision rounding of the
    /// full one; an entry beyond the f32 range is an error naming it.
    #[test]
    fn narrowed_factors_are_the_rounded_ones() {
        let mut rng = SmallRng::seed_from_u64(23);
        let a = generate::trace_like::<f64>(&TraceSpec::new(4, 6, 5, 3).seed(5)).expect("case");
        let opts = IluOptions::default().sweeps(Some(2));
        let full = BlockIlu0::with_options(&a, &opts).expect("ilu");
        let low = full.narrowed().expect("narrowed");
        assert_eq!(low.col_idx(), full.col_idx());
        assert_eq!(low.f.sweeps, Some(2));
        for (l, f) in low.blocks().iter().zip(full.blocks()) {
            assert_eq!(*l, *f as f32);
        }
        for (l, f) in low
            .inverse_diagonal_blocks()
            .iter()
            .zip(full.inverse_diagonal_blocks())
        {
            assert_eq!(*l, *f as f32);
        }
        let n = a.n_rows();
        let x: Vec<f64> = random_vec(&mut rng, n);
        let (mut y, mut z) = (vec![f64::NAN; n], vec![f64::NAN; n]);
        full.apply(&x, &mut y).expect("apply");
        low.apply(&x, &mut z).expect("apply");
        let d = y
            .iter()
            .zip(&z)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        let m = y.iter().map(|p| p.abs()).fold(0.0, f64::max);
        assert!(d > 0.0 && d <= 1e-5 * m, "{d:e} of {m:e}");
        // Point ILU(0) whose pivot 1e-40 inverts beyond f32.
        let mut coo = Coo::<f64>::empty(2, 2).expect("coo");
        coo.push(0, 0, 1e-40).expect("push");
        coo.push(1, 1, 1.0).expect("push");
        let m = Ilu0::new(&Csr::from(&coo)).expect("ilu");
        let e = m.narrowed().expect_err("beyond f32").to_string();
        assert!(
            e.contains("inverse pivot value 0") && e.contains("single-precision range"),
            "{e}"
        );
    }

    /// Jacobi-sweep triangular solves ([`IluOptions::sweeps`]): one sweep is the
    /// block-diagonal `U_diag^-1 x`; more sweeps approach the exact solve and, from as many
    /// sweeps as levels on, give its bits; GMRES preconditioned with 3 sweeps reaches the
    /// tolerance on the TRACE-like case within 1.5x the exact ILU(0)'s steps; `Some(0)`
    /// is an error.
    #[test]
    fn jacobi_sweeps_approach_and_reach_the_exact_solve() {
        let mut rng = SmallRng::seed_from_u64(17);
        let a = generate::trace_like::<f64>(&TraceSpec::new(4, 6, 5, 3).seed(3)).expect("case");
        let exact = BlockIlu0::new(&a).expect("ilu");
        let (lower, upper) = exact.level_schedules().expect("levels");
        let levels = lower.n_levels().max(upper.n_levels());
        let n = a.n_rows();
        let x: Vec<f64> = random_vec(&mut rng, n);
        let mut want = vec![f64::NAN; n];
        exact.apply(&x, &mut want).expect("apply");
        let dist = |y: &[f64]| {
            let d: f64 = y.iter().zip(&want).map(|(p, q)| (p - q) * (p - q)).sum();
            let w: f64 = want.iter().map(|q| q * q).sum();
            (d / w).sqrt()
        };
        let sweep = |s: usize| {
            let m =
                BlockIlu0::with_options(&a, &IluOptions::default().sweeps(Some(s))).expect("ilu");
            assert_eq!(m.blocks(), exact.blocks(), "the same factors");
            let mut y = vec![f64::NAN; n];
            m.apply(&x, &mut y).expect("apply");
            y
        };
        // One sweep: the inverted diagonal blocks times x.
        let one = sweep(1);
        let (b, inv) = (a.b(), exact.inverse_diagonal_blocks());
        for i in 0..n / b {
            let mut t = vec![0.0; b];
            kp::apply_block(
                &mut t,
                &inv[i * b * b..(i + 1) * b * b],
                &x[i * b..(i + 1) * b],
            );
            assert_eq!(&one[i * b..(i + 1) * b], &t[..], "block row {i}");
        }
        let errs: Vec<f64> = [1, 2, 3, 6].iter().map(|&s| dist(&sweep(s))).collect();
        assert!(
            errs.windows(2).all(|w| w[1] < w[0]) && errs[0] > 1e-3,
            "sweeps 1, 2, 3, 6: {errs:?}"
        );
        assert!(
            levels > 6,
            "{levels} levels: the case must need many sweeps"
        );
        assert_eq!(sweep(levels), want, "{levels} sweeps: the exact bits");
        // GMRES: 3 sweeps against exact solves.
        let xt: Vec<f64> = random_vec(&mut rng, n);
        let mut rhs = vec![0.0; n];
        crate::sparse::cpu::spmv_bcsr(1.0, &a, &xt, 0.0, &mut rhs).expect("spmv");
        let op = crate::sparse::Matrix::new(&a.to_csr(), crate::sparse::Format::Auto).expect("op");
        let opts = GmresOptions::default().rtol(1e-8);
        let steps = |m: &BlockIlu0<f64>| {
            let mut y = vec![0.0; n];
            let r = cpu::gmres(&op, Some(m), &rhs, &mut y, &opts).expect("gmres");
            assert!(r.converged, "{r:?}");
            r.iterations
        };
        let three =
            BlockIlu0::with_options(&a, &IluOptions::default().sweeps(Some(3))).expect("ilu");
        let (e, s3) = (steps(&exact), steps(&three));
        assert!(s3 * 2 <= e * 3, "3 sweeps: {s3} steps, exact: {e}");
        let err = BlockIlu0::with_options(&a, &IluOptions::default().sweeps(Some(0)))
            .map(|_| ())
            .expect_err("0 sweeps")
            .to_string();
        assert!(err.contains("IluOptions::sweeps"), "{err}");
    }

    fn csr(n: usize, entries: &[(usize, usize, f64)]) -> Csr<f64> {
        let mut coo = Coo::empty(n, n).expect("coo");
        for &(i, j, v) in entries {
            coo.push(i, j, v).expect("push");
        }
        Csr::from(&coo)
    }

    /// Zero, tiny and missing pivots are errors naming the first row where the
    /// factorisation breaks down; a shift fixes them; `pivot_tol = 0` accepts the tiny one.
    #[test]
    fn zero_and_missing_pivots_name_the_row_and_the_shift_fixes_them() {
        let shift = IluOptions::default().shift(0.1);
        // Row 1's pivot is 1 - 1 = 0.
        let ones = csr(
            3,
            &[
                (0, 0, 1.0),
                (0, 1, 1.0),
                (1, 0, 1.0),
                (1, 1, 1.0),
                (2, 2, 1.0),
            ],
        );
        let e = message(Ilu0::new(&ones).unwrap_err());
        assert!(
            e.contains("Ilu0::new") && e.contains("row 1: zero pivot"),
            "{e}"
        );
        let m = Ilu0::with_options(&ones, &shift).expect("shifted");
        assert!((m.values()[3] - (1.1 - 1.0 / 1.1)).abs() < 1e-15);
        // Row 2 stores no diagonal; row 3 would be fine.
        let missing = csr(
            4,
            &[
                (0, 0, 2.0),
                (0, 2, 1.0),
                (1, 1, 2.0),
                (2, 0, 1.0),
                (2, 1, 1.0),
                (3, 3, 1.0),
            ],
        );
        let e = message(Ilu0::new(&missing).unwrap_err());
        assert!(
            e.contains("row 2 stores entries but no diagonal entry"),
            "{e}"
        );
        let m = Ilu0::with_options(&missing, &shift).expect("shifted");
        assert_eq!(
            m.col_idx()[m.diagonal_slots()[2]],
            2,
            "the shift adds the diagonal"
        );
        // u_22 = 0.1 - (1 / 2.2) 1.
        assert!((m.values()[m.diagonal_slots()[2]] - (0.1 - 1.0 / 2.2)).abs() < 1e-15);
        // A tiny pivot (1e-15 of its row) at row 1 comes before a missing diagonal at row 2.
        let tiny = csr(
            3,
            &[
                (0, 0, 1.0),
                (0, 1, 1.0),
                (1, 0, 1.0),
                (1, 1, 1.0 + 1e-15),
                (2, 0, 1.0),
            ],
        );
        let e = message(Ilu0::new(&tiny).unwrap_err());
        assert!(e.contains("row 1: tiny pivot"), "{e}");
        let e =
            message(Ilu0::with_options(&tiny, &IluOptions::default().pivot_tol(0.0)).unwrap_err());
        assert!(e.contains("row 2 stores entries but no diagonal"), "{e}");
        Ilu0::with_options(&tiny, &shift).expect("shifted");
        // A zero diagonal entry that is stored.
        let zero = csr(2, &[(0, 0, 0.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0)]);
        let e = message(Ilu0::new(&zero).unwrap_err());
        assert!(e.contains("row 0: zero pivot"), "{e}");
        Ilu0::with_options(&zero, &shift).expect("shifted");

        // Blocks: [I I; I I] has U_11 = I - I = 0.
        let id = [1.0, 0.0, 0.0, 1.0];
        let blocks = |n_block_rows, row_ptr: Vec<usize>, col_idx: Vec<Index>, values: Vec<f64>| {
            Bcsr::from_parts(BcsrParts {
                b: 2,
                layout: BlockLayout::RowMajor,
                n_block_rows,
                n_block_cols: n_block_rows,
                row_ptr,
                col_idx,
                values,
            })
            .map_err(|r| r.error)
            .expect("bcsr")
        };
        let a = blocks(2, vec![0, 2, 4], vec![0, 1, 0, 1], [id; 4].concat());
        let e = message(BlockIlu0::new(&a).unwrap_err());
        assert!(
            e.contains("BlockIlu0::new") && e.contains("block row 1:") && e.contains("singular"),
            "{e}"
        );
        BlockIlu0::with_options(&a, &shift).expect("shifted");
        // Block row 1 without its diagonal block.
        let a = blocks(2, vec![0, 1, 2], vec![0, 0], [id; 2].concat());
        let e = message(BlockIlu0::new(&a).unwrap_err());
        assert!(
            e.contains("block row 1 stores entries but no diagonal block"),
            "{e}"
        );
        BlockIlu0::with_options(&a, &shift).expect("shifted");
        // A nearly singular pivot block.
        let a = blocks(
            2,
            vec![0, 2, 4],
            vec![0, 1, 0, 1],
            [id, id, id, [1.0 + 1e-15, 0.0, 0.0, 2.0]].concat(),
        );
        let e = message(BlockIlu0::new(&a).unwrap_err());
        assert!(
            e.contains("block row 1: the 2x2 pivot block U_ii is nearly singular"),
            "{e}"
        );
    }

    /// Bad input is an error, never a panic.
    #[test]
    fn bad_input_is_an_error() {
        let rect = Csr::try_new(2, 3, vec![0, 1, 2], vec![0, 1], vec![1.0f64, 1.0]).expect("csr");
        assert!(message(Ilu0::new(&rect).unwrap_err()).contains("square"));
        let nan = csr(2, &[(0, 0, 1.0), (1, 1, f64::NAN)]);
        assert!(matches!(Ilu0::new(&nan), Err(Error::Sparse(_))));
        let a = csr(2, &[(0, 0, 1.0), (1, 1, 1.0)]);
        for opts in [
            IluOptions::default().shift(-1.0),
            IluOptions::default().shift(f64::NAN),
            IluOptions::default().pivot_tol(f64::INFINITY),
        ] {
            let e = message(Ilu0::with_options(&a, &opts).unwrap_err());
            assert!(e.contains("must be finite and >= 0"), "{e}");
        }
        let m = Ilu0::new(&a).expect("ilu");
        let mut y = [0.0; 3];
        assert!(matches!(
            m.apply(&[1.0, 2.0], &mut y),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(matches!(
            m.apply_unchecked(&[1.0, 2.0], &mut y),
            Err(Error::DimensionMismatch { .. })
        ));
        // An empty matrix factors and applies.
        let empty = Csr::<f64>::try_new(0, 0, vec![0], vec![], vec![]).expect("empty");
        let m = Ilu0::new(&empty).expect("empty");
        LinOp::<f64>::apply(&m, &[], &mut []).expect("apply");

        let p = |b: usize, nbc: usize, v: f64| BcsrParts {
            b,
            layout: BlockLayout::ColMajor,
            n_block_rows: 1,
            n_block_cols: nbc,
            row_ptr: vec![0, 1],
            col_idx: vec![0],
            values: (0..b * b).map(|e| if e == 1 { v } else { 1.0 }).collect(),
        };
        let bcsr = |p| Bcsr::from_parts(p).map_err(|r| r.error).expect("bcsr");
        assert!(message(BlockIlu0::new(&bcsr(p(2, 2, 1.0))).unwrap_err()).contains("square"));
        assert!(
            message(BlockIlu0::new(&bcsr(p(9, 1, 1.0))).unwrap_err())
                .contains("exceeds the largest")
        );
        // Entry 1 of a column-major block is (1, 0).
        let e = message(BlockIlu0::new(&bcsr(p(2, 1, f64::INFINITY))).unwrap_err());
        assert!(
            e.contains("entry (1, 0) (0-based; entry (1, 0) of block (0, 0)) is inf"),
            "{e}"
        );
    }

    /// `m x m` grid, `-div(k grad u) + beta . grad u` with zero Dirichlet boundaries,
    /// five-point diffusion (harmonic mean of `k` on each face) and first-order upwinding
    /// (`h beta = (5, 3)`); `k` is 1 or 100 on a checkerboard of 10 x 10 patches, so the
    /// diagonal varies and point Jacobi is more than a scaling. Nonsymmetric, an M-matrix.
    fn convection_diffusion(m: usize) -> Csr<f64> {
        let (px, py) = (5.0, 3.0); // h beta_x, h beta_y
        let k = |ix: usize, iy: usize| {
            if (ix / 10 + iy / 10).is_multiple_of(2) {
                1.0
            } else {
                100.0
            }
        };
        let mut t = Vec::new();
        for iy in 0..m {
            for ix in 0..m {
                let i = iy * m + ix;
                let ki = k(ix, iy);
                let mut diag = px + py;
                for (dx, dy) in [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)] {
                    let (jx, jy) = (ix as i64 + dx, iy as i64 + dy);
                    if jx < 0 || jy < 0 || jx >= m as i64 || jy >= m as i64 {
                        diag += ki; // the boundary face
                        continue;
                    }
                    let (jx, jy) = (jx as usize, jy as usize);
                    let kj = k(jx, jy);
                    let kf = 2.0 * ki * kj / (ki + kj);
                    diag += kf;
                    let upwind = match (dx, dy) {
                        (-1, 0) => px,
                        (0, -1) => py,
                        _ => 0.0,
                    };
                    t.push((i, jy * m + jx, -kf - upwind));
                }
                t.push((i, i, diag));
            }
        }
        csr(m * m, &t)
    }

    /// GMRES(30) to `rtol = 1e-8` with ILU(0) as the right preconditioner takes far fewer
    /// steps than with point Jacobi or none: on a convection-diffusion matrix (point) and
    /// on a TRACE-like matrix (block, against block and point Jacobi). The true residual
    /// is recomputed.
    #[test]
    fn gmres_with_ilu0_takes_far_fewer_steps() {
        let opts = GmresOptions::default().max_iter(3000);
        let solve = |a: &dyn LinOp<f64>, m: Option<&dyn LinOp<f64>>, b: &[f64]| {
            let mut x = vec![0.0; b.len()];
            let r = cpu::gmres(a, m, b, &mut x, &opts).expect("gmres");
            let mut ax = vec![0.0; b.len()];
            a.apply(&x, &mut ax).expect("apply");
            let res = ax
                .iter()
                .zip(b)
                .map(|(p, q)| (p - q) * (p - q))
                .sum::<f64>()
                .sqrt();
            let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
            (r.converged && res <= 1.01e-8 * bn, r.iterations)
        };
        let mut rng = SmallRng::seed_from_u64(6);

        let a = convection_diffusion(40);
        let xt: Vec<f64> = random_vec(&mut rng, a.n_rows());
        let mut b = vec![0.0; a.n_rows()];
        a.apply(&xt, &mut b).expect("spmv");
        let ilu = Ilu0::new(&a).expect("ilu");
        let jacobi = BlockJacobi::point(
            &Bcsr::from_csr(&a, 1, BlockLayout::RowMajor, BlockFit::Exact).expect("bcsr"),
        )
        .expect("jacobi");
        let none = solve(&a, None, &b);
        let jac = solve(&a, Some(&jacobi as &dyn LinOp<f64>), &b);
        let il = solve(&a, Some(&ilu as &dyn LinOp<f64>), &b);
        eprintln!(
            "convection-diffusion 40x40: steps none {none:?}, point Jacobi {jac:?}, ILU(0) {il:?}"
        );
        assert!(il.0 && jac.0, "{il:?} {jac:?}");
        assert!(3 * il.1 <= jac.1, "ILU(0) {il:?} against Jacobi {jac:?}");

        let a = generate::trace_like::<f64>(&TraceSpec::new(8, 6, 4, 3).seed(9)).expect("trace");
        let xt: Vec<f64> = random_vec(&mut rng, a.n_rows());
        let mut b = vec![0.0; a.n_rows()];
        a.apply(&xt, &mut b).expect("spmv"); // zero on the ghost rows
        let ilu = BlockIlu0::new(&a).expect("block ilu");
        let bj = BlockJacobi::new(&a).expect("block jacobi");
        let pj = BlockJacobi::point(&a).expect("point jacobi");
        let none = solve(&a, None, &b);
        let point = solve(&a, Some(&pj as &dyn LinOp<f64>), &b);
        let block = solve(&a, Some(&bj as &dyn LinOp<f64>), &b);
        let il = solve(&a, Some(&ilu as &dyn LinOp<f64>), &b);
        eprintln!(
            "TRACE-like 8x6x4x3: steps none {none:?}, point Jacobi {point:?}, block Jacobi {block:?}, block ILU(0) {il:?}"
        );
        assert!(il.0 && block.0 && point.0, "{il:?} {block:?} {point:?}");
        assert!(
            2 * il.1 <= block.1,
            "block ILU(0) {il:?} against block Jacobi {block:?}"
        );
    }

    /// `Preconditioner::Ilu0` through `Solver`: point ILU(0) without a block size (the
    /// same steps as `Ilu0` by hand), block ILU(0) with one that needs padding; the GPU's
    /// solver refuses it before touching the device (checked where there is one).
    #[test]
    fn solver_takes_ilu0() {
        use crate::krylov::{Preconditioner, SolveOptions, Solver};
        let a = convection_diffusion(20);
        let n = a.n_rows();
        let mut rng = SmallRng::seed_from_u64(7);
        let xt: Vec<f64> = random_vec(&mut rng, n);
        let mut b = vec![0.0; n];
        a.apply(&xt, &mut b).expect("spmv");
        let gmres = GmresOptions::default().rtol(1e-10).max_iter(2000);
        let opts = SolveOptions::default()
            .gmres(gmres.clone())
            .precond(Preconditioner::Ilu0)
            .format(crate::sparse::Format::Csr);
        let sol = Solver::new(&a, &opts)
            .and_then(|s| s.solve(&b, None))
            .expect("solve");
        let r = &sol.report;
        assert!(r.gmres.converged, "{r:?}");
        assert_eq!(
            (r.precond, r.precond_block_size),
            (Preconditioner::Ilu0, Some(1))
        );
        let by_hand = {
            let m = Ilu0::new(&a).expect("ilu");
            let mut x = vec![0.0; n];
            cpu::gmres(&a, Some(&m as &dyn LinOp<f64>), &b, &mut x, &gmres).expect("gmres")
        };
        assert_eq!(r.gmres.iterations, by_hand.iterations);
        let err = sol
            .x
            .iter()
            .zip(&xt)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-6, "error {err:e}");
        // Blocks of 3 do not divide n = 400: padded, block ILU(0).
        let sol = Solver::new(&a, &opts.clone().block_size(3))
            .and_then(|s| s.solve(&b, None))
            .expect("block solve");
        assert!(sol.report.gmres.converged, "{:?}", sol.report);
        assert_eq!(
            (sol.report.precond_block_size, sol.report.n_padded),
            (Some(3), 402)
        );
        assert_eq!(sol.x.len(), n);
        let e = Solver::new(&a, &opts.clone().block_size(9))
            .err()
            .expect("b = 9");
        assert!(e.to_string().contains("at most 8"), "{e}");
        if let Ok(gpu) = crate::gpu::open(0) {
            let e = crate::krylov::DeviceSolver::upload(&gpu, &a, &opts)
                .err()
                .expect("the GPU refuses ILU(0)");
            assert!(e.to_string().contains("ILU(0)"), "{e}");
        }
    }

    /// Factoring level after level of [`LevelSchedule::lower`], each level's rows in
    /// decreasing order and every row even after a breakdown (the device's walk), gives
    /// the sequential factors bit for bit, and a breakdown names the same row with the
    /// same message: point (random, some breaking down, with and without a shift) and
    /// block (`b = 1..=8`, ghost rows, both layouts).
    #[test]
    fn level_order_gives_the_sequential_bits_and_breakdown_row() {
        let mut rng = SmallRng::seed_from_u64(25);
        let (mut same_ok, mut same_err) = (0, 0);
        for &n in &[1usize, 2, 3, 7, 31, 33, 64, 200] {
            for trial in 0..8 {
                let density = [0.02, 0.1, 0.3, 1.0][trial / 2];
                let diag_p = if trial >= 4 { 0.95 } else { 1.0 };
                let a = random_csr(&mut rng, n, density, diag_p, trial % 2 == 0);
                for alpha in [0.0, 0.25] {
                    let opts = IluOptions::default().shift(alpha);
                    let seq = Ilu0::build(&a, &opts, "t", RowOrder::Sequential);
                    let lev = Ilu0::build(&a, &opts, "t", RowOrder::LevelsReversed);
                    let what = format!("n = {n}, trial {trial}, shift {alpha}");
                    match (seq, lev) {
                        (Ok(s), Ok(l)) => {
                            assert_eq!(s, l, "{what}");
                            same_ok += 1;
                        }
                        (Err(s), Err(l)) => {
                            assert_eq!(message(s), message(l), "{what}");
                            same_err += 1;
                        }
                        (s, l) => panic!("{what}: {:?} vs {:?}", s.err(), l.err()),
                    }
                }
            }
        }
        eprintln!("level order: {same_ok} equal factors, {same_err} equal breakdowns");
        assert!(same_ok > 0 && same_err > 0, "{same_ok} {same_err}");
        for b in 1..=MAX_BLOCK {
            for (nb, ghost, layout) in [
                (1usize, None, BlockLayout::RowMajor),
                (17, Some(3), BlockLayout::ColMajor),
                (40, None, BlockLayout::RowMajor),
            ] {
                let a = random_bcsr(&mut rng, nb, b, 0.2, ghost, layout);
                for alpha in [0.0, 0.5] {
                    let opts = IluOptions::default().shift(alpha);
                    let s = BlockIlu0::build(&a, &opts, "t", RowOrder::Sequential).unwrap();
                    let l = BlockIlu0::build(&a, &opts, "t", RowOrder::LevelsReversed).unwrap();
                    assert_eq!(s, l, "b = {b}, nb = {nb}, shift {alpha}");
                    let (lo, up) = s.level_schedules().unwrap();
                    assert_eq!(lo.rows().len(), nb);
                    assert_eq!(up.rows().len(), nb);
                }
            }
        }
    }
}
