//! BLAS-1 on all CPU cores (rayon). Reductions sum fixed chunks and then the chunk sums
//! in order, so results do not depend on the number of threads.

use rayon::prelude::*;

use super::Element;
use crate::error::{Error, Result, check_len};
use ferrocuda_kernels::blas1 as k;

/// Elements per rayon task: small vectors stay on one thread, and reductions have a
/// fixed summation tree.
pub const CHUNK: usize = 1 << 14;

/// `x_i <- value`.
pub fn fill<T: Element>(x: &mut [T], value: T) {
    x.par_chunks_mut(CHUNK).for_each(|c| c.fill(value));
}

/// `x <- alpha x`.
pub fn scal<T: Element>(alpha: T, x: &mut [T]) {
    x.par_chunks_mut(CHUNK)
        .for_each(|c| c.iter_mut().for_each(|v| *v = k::scal(alpha, *v)));
}

/// `y <- alpha x + y`. Errors: lengths differ.
pub fn axpy<T: Element>(alpha: T, x: &[T], y: &mut [T]) -> Result<()> {
    check_len("axpy", "x", y.len(), x.len())?;
    y.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .for_each(|(yc, xc)| {
            yc.iter_mut()
                .zip(xc)
                .for_each(|(yi, &xi)| *yi = k::axpy(alpha, xi, *yi));
        });
    Ok(())
}

/// `y <- alpha x + beta y`. Errors: lengths differ.
pub fn axpby<T: Element>(alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
    check_len("axpby", "x", y.len(), x.len())?;
    y.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .for_each(|(yc, xc)| {
            yc.iter_mut()
                .zip(xc)
                .for_each(|(yi, &xi)| *yi = k::axpby(alpha, xi, beta, *yi));
        });
    Ok(())
}

/// `y <- x`. Errors: lengths differ.
pub fn copy<T: Element>(x: &[T], y: &mut [T]) -> Result<()> {
    check_len("copy", "x", y.len(), x.len())?;
    y.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .for_each(|(yc, xc)| yc.copy_from_slice(xc));
    Ok(())
}

/// `sum conj(x_i) y_i`. Errors: lengths differ.
pub fn dot<T: Element>(x: &[T], y: &[T]) -> Result<T> {
    check_len("dot", "y", x.len(), y.len())?;
    let partials: Vec<T> = x
        .par_chunks(CHUNK)
        .zip(y.par_chunks(CHUNK))
        .map(|(xc, yc)| {
            xc.iter()
                .zip(yc)
                .fold(T::ZERO, |acc, (&a, &b)| k::dot_step(acc, a, b))
        })
        .collect();
    Ok(partials.into_iter().fold(T::ZERO, |a, b| a + b))
}

/// `sqrt(sum |x_i|^2)`, accumulated in the real type without scaling.
pub fn nrm2<T: Element>(x: &[T]) -> T::Real {
    use ferrocuda_kernels::RealScalar;
    let zero = <T::Real as ferrocuda_kernels::Scalar>::ZERO;
    let partials: Vec<T::Real> = x
        .par_chunks(CHUNK)
        .map(|c| c.iter().fold(zero, |acc, &v| k::nrm2_step(acc, v)))
        .collect();
    partials.into_iter().fold(zero, |a, b| a + b).sqrt()
}

/// `out_j = dot(x, ys[j n .. (j + 1) n])` for `j < out.len()`, where `n = x.len()`.
///
/// Errors: `out` empty ([`Error::Empty`]); `ys.len() != out.len() * x.len()`.
pub fn multi_dot<T: Element>(x: &[T], ys: &[T], out: &mut [T]) -> Result<()> {
    if out.is_empty() {
        return Err(Error::Empty {
            op: "multi_dot",
            what: "out (one entry per vector)",
        });
    }
    let n = x.len();
    check_len(
        "multi_dot",
        "ys (out.len() vectors of x.len())",
        out.len() * n,
        ys.len(),
    )?;
    for (j, o) in out.iter_mut().enumerate() {
        *o = dot(x, &ys[j * n..(j + 1) * n])?;
    }
    Ok(())
}
