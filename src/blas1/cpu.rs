//! BLAS-1 on all CPU cores (rayon).
//!
//! Work is split into fixed chunks of [`CHUNK`] elements; reductions sum each chunk with
//! eight interleaved accumulators (independent dependency chains, so the FMA latency is
//! hidden), then the chunk sums in order. The summation tree depends on `n` alone, not
//! on the number of threads: same input, same bits.

use rayon::prelude::*;

use super::Element;
use crate::cpu_dispatch::fma_kernel;
use crate::error::{Result, check_len};
use ferrocuda_kernels::Scalar;
use ferrocuda_kernels::blas1 as k;

/// Elements per rayon task: small vectors stay on one thread, and reductions have a
/// fixed summation tree.
pub const CHUNK: usize = 1 << 14;
/// Independent accumulators per chunk in reductions.
const LANES: usize = 8;

fma_kernel! {
fn scal_chunk[T: Element](alpha: T, x: &mut [T]) {
    x.iter_mut().for_each(|v| *v = k::scal(alpha, *v));
}
}

fma_kernel! {
fn axpy_chunk[T: Element](alpha: T, x: &[T], y: &mut [T]) {
    y.iter_mut().zip(x).for_each(|(yi, &xi)| *yi = k::axpy(alpha, xi, *yi));
}
}

fma_kernel! {
fn axpby_chunk[T: Element](alpha: T, x: &[T], beta: T, y: &mut [T]) {
    y.iter_mut().zip(x).for_each(|(yi, &xi)| *yi = k::axpby(alpha, xi, beta, *yi));
}
}

/// `x_i <- value`.
pub fn fill<T: Element>(x: &mut [T], value: T) {
    x.par_chunks_mut(CHUNK).for_each(|c| c.fill(value));
}

/// `x <- alpha x`.
pub fn scal<T: Element>(alpha: T, x: &mut [T]) {
    x.par_chunks_mut(CHUNK).for_each(|c| scal_chunk(alpha, c));
}

/// `y <- alpha x + y`. Errors: lengths differ.
pub fn axpy<T: Element>(alpha: T, x: &[T], y: &mut [T]) -> Result<()> {
    check_len("axpy", "x", y.len(), x.len())?;
    y.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .for_each(|(yc, xc)| axpy_chunk(alpha, xc, yc));
    Ok(())
}

/// `y <- alpha x + beta y`. Errors: lengths differ.
pub fn axpby<T: Element>(alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
    check_len("axpby", "x", y.len(), x.len())?;
    y.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .for_each(|(yc, xc)| axpby_chunk(alpha, xc, beta, yc));
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

/// Sums a chunk with [`LANES`] interleaved accumulators, then the lanes in a fixed tree.
#[inline(always)]
fn lane_sum<S: Scalar, T: Copy>(items: &[T], step: impl Fn(S, T) -> S) -> S {
    let mut acc = [S::ZERO; LANES];
    let mut blocks = items.chunks_exact(LANES);
    for block in &mut blocks {
        for (a, &v) in acc.iter_mut().zip(block) {
            *a = step(*a, v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(blocks.remainder()) {
        *a = step(*a, v);
    }
    tree_sum(acc)
}

/// Sum of the lanes in a fixed pairwise order.
#[inline(always)]
fn tree_sum<S: Scalar>(a: [S; LANES]) -> S {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

fma_kernel! {
/// `sum conj(x_i) y_i` over one chunk, [`LANES`] interleaved accumulators.
pub(crate) fn dot_chunk[T: Element](x: &[T], y: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let (xb, yb) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let (xr, yr) = (xb.remainder(), yb.remainder());
    for (xs, ys) in xb.zip(yb) {
        for l in 0..LANES {
            acc[l] = k::dot_step(acc[l], xs[l], ys[l]);
        }
    }
    for (l, (&a, &b)) in xr.iter().zip(yr).enumerate() {
        acc[l] = k::dot_step(acc[l], a, b);
    }
    tree_sum(acc)
}
}

fma_kernel! {
/// `(sum conj(v_i) u_i, sum conj(v_i) w_i)` over one chunk: two dot products sharing
/// the reads of `v`, [`LANES`] interleaved accumulators each (Gram-Schmidt's projections).
pub(crate) fn dot2_chunk[T: Element](v: &[T], u: &[T], w: &[T]) -> (T, T) {
    let (mut au, mut aw) = ([T::ZERO; LANES], [T::ZERO; LANES]);
    let (vb, ub, wb) = (v.chunks_exact(LANES), u.chunks_exact(LANES), w.chunks_exact(LANES));
    let (vr, ur, wr) = (vb.remainder(), ub.remainder(), wb.remainder());
    for ((vs, us), ws) in vb.zip(ub).zip(wb) {
        for l in 0..LANES {
            au[l] = k::dot_step(au[l], vs[l], us[l]);
            aw[l] = k::dot_step(aw[l], vs[l], ws[l]);
        }
    }
    for (l, ((&a, &b), &c)) in vr.iter().zip(ur).zip(wr).enumerate() {
        au[l] = k::dot_step(au[l], a, b);
        aw[l] = k::dot_step(aw[l], a, c);
    }
    (tree_sum(au), tree_sum(aw))
}
}

fma_kernel! {
/// `sum |x_i|^2` over one chunk.
fn nrm2_chunk[T: Element](x: &[T]) -> T::Real {
    lane_sum(x, |acc: T::Real, v: T| k::nrm2_step(acc, v))
}
}

/// `sum conj(x_i) y_i`. Errors: lengths differ.
pub fn dot<T: Element>(x: &[T], y: &[T]) -> Result<T> {
    check_len("dot", "y", x.len(), y.len())?;
    let partials: Vec<T> = x
        .par_chunks(CHUNK)
        .zip(y.par_chunks(CHUNK))
        .map(|(xc, yc)| dot_chunk(xc, yc))
        .collect();
    Ok(partials.into_iter().fold(T::ZERO, |a, b| a + b))
}

/// `sqrt(sum |x_i|^2)`, accumulated in the real type without scaling.
pub fn nrm2<T: Element>(x: &[T]) -> T::Real {
    use ferrocuda_kernels::RealScalar;
    let partials: Vec<T::Real> = x.par_chunks(CHUNK).map(|c| nrm2_chunk(c)).collect();
    partials
        .into_iter()
        .fold(<T::Real as Scalar>::ZERO, |a, b| a + b)
        .sqrt()
}

/// `out_j = dot(x, ys[j n .. (j + 1) n])` for `j < out.len()`, where `n = x.len()`.
///
/// Errors: `out` empty ([`crate::Error::Empty`]); `ys.len() != out.len() * x.len()`.
pub fn multi_dot<T: Element>(x: &[T], ys: &[T], out: &mut [T]) -> Result<()> {
    let n = x.len();
    super::check_multi_dot_shape(n, ys.len(), out.len())?;
    for (j, o) in out.iter_mut().enumerate() {
        *o = dot(x, &ys[j * n..(j + 1) * n])?;
    }
    Ok(())
}
