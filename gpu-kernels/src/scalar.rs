//! The scalar types every kernel is written for: `f32`, `f64`, `Complex<f32>`,
//! `Complex<f64>`.

use core::ops::{Add, Div, Mul, Neg, Sub};
use num_complex::Complex;

use crate::math::{fma_f32, fma_f64, sqrt_f32, sqrt_f64};

/// A field element the kernels compute with. Arithmetic here is the one definition used
/// on both the CPU and the GPU, so element-wise results agree bit for bit.
pub trait Scalar:
    Copy
    + Send
    + Sync
    + PartialEq
    + core::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// The real type underneath (`f64` for `Complex<f64>`).
    type Real: RealScalar;
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Suffix of this type's kernel names (`f32`, `f64`, `c32`, `c64`).
    const SUFFIX: &'static str;
    /// Whether the type is complex.
    const IS_COMPLEX: bool;
    /// `self * a + b`, fused (one rounding per real component product-sum).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Complex conjugate (identity for reals).
    fn conj(self) -> Self;
    /// `|self|^2`.
    fn abs2(self) -> Self::Real;
    /// `|self|^2 + acc`, fused where possible.
    fn abs2_add(self, acc: Self::Real) -> Self::Real;
    /// Embeds a real number.
    fn from_real(r: Self::Real) -> Self;
    /// Builds a value from real and imaginary parts (the imaginary part is ignored for reals).
    fn from_parts(re: Self::Real, im: Self::Real) -> Self;
    /// Real part.
    fn re(self) -> Self::Real;
    /// Imaginary part (zero for reals).
    fn im(self) -> Self::Real;
}

/// A real scalar: `f32` or `f64`. Division is IEEE's correctly rounded one on both
/// targets (`div.rn` on the device).
pub trait RealScalar: Scalar<Real = Self> + PartialOrd + Div<Output = Self> {
    /// Correctly rounded square root.
    fn sqrt(self) -> Self;
    /// Converts from `f64` (rounding for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Converts to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Machine epsilon.
    const EPSILON: Self;
}

macro_rules! real_scalar {
    ($t:ty, $sfx:literal, $fma:ident, $sqrt:ident) => {
        impl Scalar for $t {
            type Real = $t;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const SUFFIX: &'static str = $sfx;
            const IS_COMPLEX: bool = false;
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                $fma(self, a, b)
            }
            #[inline(always)]
            fn conj(self) -> Self {
                self
            }
            #[inline(always)]
            fn abs2(self) -> Self {
                self * self
            }
            #[inline(always)]
            fn abs2_add(self, acc: Self) -> Self {
                $fma(self, self, acc)
            }
            #[inline(always)]
            fn from_real(r: Self) -> Self {
                r
            }
            #[inline(always)]
            fn from_parts(re: Self, _im: Self) -> Self {
                re
            }
            #[inline(always)]
            fn re(self) -> Self {
                self
            }
            #[inline(always)]
            fn im(self) -> Self {
                0.0
            }
        }
        impl RealScalar for $t {
            #[inline(always)]
            fn sqrt(self) -> Self {
                $sqrt(self)
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            const EPSILON: Self = <$t>::EPSILON;
        }
    };
}

real_scalar!(f32, "f32", fma_f32, sqrt_f32);
real_scalar!(f64, "f64", fma_f64, sqrt_f64);

macro_rules! complex_scalar {
    ($r:ty, $sfx:literal) => {
        impl Scalar for Complex<$r> {
            type Real = $r;
            const ZERO: Self = Complex::new(0.0, 0.0);
            const ONE: Self = Complex::new(1.0, 0.0);
            const SUFFIX: &'static str = $sfx;
            const IS_COMPLEX: bool = true;
            /// `(ar + i ai)(br + i bi) + c` with two fused operations per component.
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                let fma = <$r as Scalar>::mul_add;
                let re = fma(self.re, a.re, fma(-self.im, a.im, b.re));
                let im = fma(self.re, a.im, fma(self.im, a.re, b.im));
                Complex::new(re, im)
            }
            #[inline(always)]
            fn conj(self) -> Self {
                Complex::new(self.re, -self.im)
            }
            #[inline(always)]
            fn abs2(self) -> $r {
                <$r as Scalar>::mul_add(self.re, self.re, self.im * self.im)
            }
            #[inline(always)]
            fn abs2_add(self, acc: $r) -> $r {
                let fma = <$r as Scalar>::mul_add;
                fma(self.re, self.re, fma(self.im, self.im, acc))
            }
            #[inline(always)]
            fn from_real(r: $r) -> Self {
                Complex::new(r, 0.0)
            }
            #[inline(always)]
            fn from_parts(re: $r, im: $r) -> Self {
                Complex::new(re, im)
            }
            #[inline(always)]
            fn re(self) -> $r {
                self.re
            }
            #[inline(always)]
            fn im(self) -> $r {
                self.im
            }
        }
    };
}

complex_scalar!(f32, "c32");
complex_scalar!(f64, "c64");
