//! Serial oracle for the tests: plain loops, accumulation in `f64` / `Complex<f64>`.

use super::{Complex, Element};
use ferrocuda_kernels::{RealScalar, Scalar};

/// Widens a value to `Complex<f64>` (exact for all four scalar types).
pub fn widen<T: Element>(v: T) -> Complex<f64> {
    Complex::new(v.re().to_f64(), v.im().to_f64())
}

/// `sum conj(x_i) y_i` in `Complex<f64>`.
pub fn dot<T: Element>(x: &[T], y: &[T]) -> Complex<f64> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| widen(a).conj() * widen(b))
        .sum()
}

/// `sum |x_i| |y_i|`: the scale that bounds the rounding error of a dot product.
pub fn dot_magnitude<T: Element>(x: &[T], y: &[T]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| widen(a).norm() * widen(b).norm())
        .sum()
}

/// `sqrt(sum |x_i|^2)` in `f64`.
pub fn nrm2<T: Element>(x: &[T]) -> f64 {
    x.iter()
        .map(|&a| widen(a).norm_sqr())
        .fold(0.0, |s, v| s + v)
        .sqrt()
}

/// `alpha x_i + beta y_i` in `Complex<f64>`.
pub fn axpby<T: Element>(alpha: T, x: &[T], beta: T, y: &[T]) -> Vec<Complex<f64>> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| widen(alpha) * widen(a) + widen(beta) * widen(b))
        .collect()
}

/// Unit roundoff of `T`.
pub fn eps<T: Element>() -> f64 {
    <T::Real as RealScalar>::EPSILON.to_f64()
}

/// Zero of `T` (for generic test code).
pub fn zero<T: Element>() -> T {
    T::ZERO
}
