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

use super::{Lu, LuOptions, LuReport, LuScalar, Matrix, Pivoting, check_square};
use crate::error::{Error, Result};
use ferrocuda_kernels::dense::{better_pivot, multiplier};

/// Factors `P A = L U` on the CPU. Errors: `A` not square ([`Error::NotSquare`]) or
/// empty, `opts.block` outside `1..=`[`super::MAX_BLOCK`], an exactly zero pivot ([`Error::Singular`]
/// naming the first such column). `a` is not modified.
///
/// ```
/// use ferrocuda::dense::{Matrix, LuOptions, cpu};
/// use ferrocuda::Error;
/// let a = Matrix::new(2, 2, vec![1.0f64, 2.0, 2.0, 4.0])?; // rank 1
/// match cpu::factor(&a, &LuOptions::default()) {
///     Err(Error::Singular { column, .. }) => assert_eq!(column, 1),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn factor<T: LuScalar>(a: &Matrix<T>, opts: &LuOptions) -> Result<Lu<T>> {
    const OP: &str = "dense::cpu::factor";
    let n = check_square(OP, a)?;
    opts.check(OP)?;
    let mut f = a.clone();
    let mut ipiv = vec![0u32; n];
    let t = Instant::now();
    factor_in_place(
        n,
        f.as_mut_slice(),
        &mut ipiv,
        opts.block,
        opts.pivoting == Pivoting::Partial,
    )
    .map_err(|column| Error::Singular { op: OP, column })?;
    let factor_ms = t.elapsed().as_secs_f64() * 1e3;
    let backward_error = if opts.backward_error {
        Some(super::backward_error(a, &f, &ipiv)?)
    } else {
        None
    };
    Ok(Lu {
        factors: f,
        ipiv,
        report: LuReport {
            n,
            pivoting: opts.pivoting,
            block: opts.block,
            device: "cpu".into(),
            factor_ms,
            total_ms: None,
            backward_error,
        },
    })
}

/// The blocked factorisation of the column-major `n x n` matrix `a` in place; `Err(j)`:
/// column `j`'s pivot is exactly zero (the first such column; `a` is then partly
/// factorised).
pub(crate) fn factor_in_place<T: LuScalar>(
    n: usize,
    a: &mut [T],
    ipiv: &mut [u32],
    nb: usize,
    pivot: bool,
) -> std::result::Result<(), usize> {
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
) -> std::result::Result<(), usize> {
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
            return Err(j);
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
