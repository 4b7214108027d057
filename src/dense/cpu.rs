//! The CPU twin: blocked right-looking LU on all cores (rayon).
//!
//! Per panel of `block` columns: the panel is factorised column by column (pivot search
//! with `ferrocuda_kernels::dense::better_pivot`, the same rule as the GPU: the largest
//! magnitude, ties to the first row), then every column right of the panel, one task
//! each, takes the panel's interchanges, the forward substitution with `L11` (TRSM) and
//! the update with `L21` (the trailing GEMM, as `block` AXPYs); the columns left of the
//! panel take the interchanges.

use std::time::Instant;

use rayon::prelude::*;

use super::condition::{self, Finished, zero_pivot_error};
use super::{Lu, LuOptions, LuScalar, Matrix, Pivoting, check_square};
use crate::error::Result;
use ferrocuda_kernels::dense::{better_pivot, multiplier};

/// Factors `P A = L U` on the CPU, estimates the condition number and, where asked,
/// the backward error (the report: module docs of [`super`]). Errors: `A` not square
/// ([`Error::NotSquare`](crate::Error::NotSquare)) or empty, `opts.block` outside `1..=`[`super::MAX_BLOCK`], NaN
/// or infinity in `A` ([`Error::NonFinite`](crate::Error::NonFinite) naming the entry, before factorising), an
/// exactly zero pivot ([`Error::Singular`](crate::Error::Singular), or [`Error::ZeroPivot`](crate::Error::ZeroPivot) without pivoting,
/// naming the first such column), factors that overflow ([`Error::NonFinite`](crate::Error::NonFinite)), too
/// little memory for the copy ([`Error::OutOfHostMemory`](crate::Error::OutOfHostMemory)). A matrix singular to working
/// precision is not an error here: see [`super::LuReport::singular_to_working_precision`].
/// `a` is not modified.
///
/// ```
/// use ferrocuda::dense::{Matrix, LuOptions, Pivoting, cpu};
/// use ferrocuda::Error;
/// let a = Matrix::new(2, 2, vec![1.0f64, 2.0, 2.0, 4.0])?; // rank 1
/// match cpu::factor(&a, &LuOptions::default()) {
///     Err(Error::Singular { column, .. }) => assert_eq!(column, 1),
///     other => panic!("{other:?}"),
/// }
/// // Nonsingular, but a zero pivot for the factorisation without interchanges.
/// let p = Matrix::new(2, 2, vec![0.0f64, 1.0, 1.0, 0.0])?;
/// let none = LuOptions::default().with_pivoting(Pivoting::None);
/// assert!(matches!(cpu::factor(&p, &none), Err(Error::ZeroPivot { column: 0, .. })));
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn factor<T: LuScalar>(a: &Matrix<T>, opts: &LuOptions) -> Result<Lu<T>> {
    const OP: &str = "dense::cpu::factor";
    let n = check_square(OP, a)?;
    opts.check(OP)?;
    a.check_finite(OP, "A")?;
    let anorm = a.norm1();
    let mut f = a.try_clone()?;
    let mut ipiv = vec![0u32; n];
    let t = Instant::now();
    factor_in_place(
        n,
        f.as_mut_slice(),
        &mut ipiv,
        opts.block,
        opts.pivoting == Pivoting::Partial,
    )
    .map_err(|(column, below_is_zero)| {
        zero_pivot_error(OP, column, opts.pivoting, below_is_zero)
    })?;
    let factor_ms = t.elapsed().as_secs_f64() * 1e3;
    let report = condition::report(
        Finished {
            op: OP,
            a,
            anorm,
            factors: &f,
            ipiv: &ipiv,
            device: "cpu".into(),
            factor_ms,
            total_ms: None,
        },
        opts,
    )?;
    Ok(Lu {
        factors: f,
        ipiv,
        report,
    })
}

/// The blocked factorisation of the column-major `n x n` matrix `a` in place;
/// `Err((j, below_is_zero))`: column `j`'s pivot is exactly zero (the first such column;
/// `a` is then partly factorised), and whether the rest of the column below it is zero
/// too.
pub(crate) fn factor_in_place<T: LuScalar>(
    n: usize,
    a: &mut [T],
    ipiv: &mut [u32],
    nb: usize,
    pivot: bool,
) -> std::result::Result<(), (usize, bool)> {
    let mut k0 = 0;
    while k0 < n {
        let kb = nb.min(n - k0);
        let (left, rest) = a.split_at_mut(k0 * n);
        let (panel, right) = rest.split_at_mut(kb * n);
        factor_panel(n, k0, kb, panel, &mut ipiv[k0..k0 + kb], pivot)?;
        let piv = &ipiv[k0..k0 + kb];
        let swap = |col: &mut [T]| {
            for (k, &p) in piv.iter().enumerate() {
                col.swap(k0 + k, p as usize);
            }
        };
        left.par_chunks_mut(n).for_each(swap);
        let panel = &*panel;
        right.par_chunks_mut(n).for_each(|col| {
            swap(col);
            // U12 = L11^{-1} A12 (forward substitution, column-oriented).
            for p in 0..kb {
                let u = col[k0 + p];
                if u == T::ZERO {
                    continue;
                }
                let l = &panel[p * n..(p + 1) * n];
                for r in k0 + p + 1..k0 + kb {
                    col[r] = col[r] - l[r] * u;
                }
            }
            // A22 -= L21 U12.
            for p in 0..kb {
                let u = col[k0 + p];
                if u == T::ZERO {
                    continue;
                }
                let l = &panel[p * n + k0 + kb..(p + 1) * n];
                for (x, &l) in col[k0 + kb..].iter_mut().zip(l) {
                    *x = *x - l * u;
                }
            }
        });
        k0 += kb;
    }
    Ok(())
}

/// Factorises the `n x kb` panel (columns `k0..k0 + kb`, rows `0..n`) unblocked.
fn factor_panel<T: LuScalar>(
    n: usize,
    k0: usize,
    kb: usize,
    panel: &mut [T],
    ipiv: &mut [u32],
    pivot: bool,
) -> std::result::Result<(), (usize, bool)> {
    for jj in 0..kb {
        let j = k0 + jj;
        let p = if pivot {
            let col = &panel[jj * n..(jj + 1) * n];
            let (mut bv, mut bi) = (-1.0f64, u32::MAX);
            for (i, &x) in col.iter().enumerate().skip(j) {
                let v = x.to_f64().abs();
                if better_pivot(v, i as u32, bv, bi) {
                    bv = v;
                    bi = i as u32;
                }
            }
            if bi == u32::MAX { j } else { bi as usize }
        } else {
            j
        };
        ipiv[jj] = p as u32;
        if panel[jj * n + p] == T::ZERO {
            let below = &panel[jj * n + j + 1..(jj + 1) * n];
            return Err((j, below.iter().all(|&x| x == T::ZERO)));
        }
        if p != j {
            for c in 0..kb {
                panel.swap(c * n + j, c * n + p);
            }
        }
        let (done, rest) = panel.split_at_mut((jj + 1) * n);
        let lcol = &mut done[jj * n..];
        let piv = lcol[j];
        for x in &mut lcol[j + 1..] {
            *x = multiplier(*x, piv);
        }
        let lcol = &*lcol;
        if rows_parallel(n - j) {
            rest[..(kb - jj - 1) * n]
                .par_chunks_mut(n)
                .for_each(|col| rank1_column(col, lcol, j));
        } else {
            for col in rest[..(kb - jj - 1) * n].chunks_mut(n) {
                rank1_column(col, lcol, j);
            }
        }
    }
    Ok(())
}

/// Whether a panel column of `rows` rows is worth a parallel rank-1 update.
fn rows_parallel(rows: usize) -> bool {
    rows >= 4096
}

/// `col[j+1..] -= lcol[j+1..] col[j]`.
fn rank1_column<T: LuScalar>(col: &mut [T], lcol: &[T], j: usize) {
    let u = col[j];
    if u == T::ZERO {
        return;
    }
    for (x, &l) in col[j + 1..].iter_mut().zip(&lcol[j + 1..]) {
        *x = *x - l * u;
    }
}
