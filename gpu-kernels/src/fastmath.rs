//! `ln x` on `(0, 1]` and `sin`/`cos` of `2 pi u` for `u` in `[0, 1)`: the two
//! transcendental functions of Box-Muller, for exactly the arguments it has.
//!
//! General-purpose `logf`/`sincosf` (the `libm` crate) pay for arguments Box-Muller never
//! has: the large-argument range reduction of `sin`/`cos` (a 560-byte local-memory stack
//! in the normals kernel) and the special cases of `log`. Here the argument is reduced
//! exactly by bit manipulation (`ln`) or by subtracting the nearest quarter from `u`
//! itself (`sincos`), then short minimax polynomials are evaluated with explicit FMAs
//! (`crate::math`), straight-line code with selects, no tables. Both targets run the
//! same operations, so the CPU and the GPU give the same bits.
//!
//! The coefficients are weighted minimax (Remez) fits of the relative error on the
//! reduced ranges, rounded to `f32` or `f64`; the accuracy, measured over every argument
//! the `f32` uniforms produce and on a sample of the `f64` ones, is in the doc of each
//! function (tests/integration/rng/accuracy.rs).

use crate::math::{fma_f32, fma_f64};
use crate::scalar::Scalar;

/// `sum c[i] x^i` by Horner's rule, one FMA per coefficient.
#[inline(always)]
fn horner<T: Scalar, const N: usize>(x: T, c: [T; N]) -> T {
    let mut p = c[N - 1];
    for i in (0..N - 1).rev() {
        p = p.mul_add(x, c[i]);
    }
    p
}

/// Bits of `2/3` as `f32` (0x3f2aaaab): `ln` splits `x = 2^e m` with `m` in `[2/3, 4/3)`.
const TWO_THIRDS_BITS: i32 = 0x3f2a_aaab;
/// `ln 2 - LN_2` (`f32`), the rest of `ln 2` beyond its `f32` rounding.
const LN2_LO_F32: f32 = -1.904_654_2e-9;
/// `(ln(1 + f) - f) / f^2` on `[-1/3, 1/3]`: minimax for the relative error of
/// `ln(1 + f)` (degree 8, weighted error 2^-27.7 before rounding to `f32`).
const LN_F32: [f32; 9] = [
    -0.5,
    0.333_332_1,
    -0.249_997_17,
    0.200_107_47,
    -0.166_823_06,
    0.140_011_61,
    -0.121_671_55,
    0.140_047_57,
    -0.129_489_62,
];

/// `ln x` for `x` in `(0, 1]` (normal, as every `uniform_open0_f32` is).
///
/// `x = 2^e m` with `m` in `[2/3, 4/3)` from the bits; `f = m - 1` is exact (Sterbenz),
/// `ln x = e ln 2 + f + f^2 Q(f)` with `ln 2` in two parts, so `ln 1 = 0` exactly and
/// the result keeps its relative accuracy near 1. Error at most 1 ulp over all
/// `2^24` values of `uniform_open0_f32` (measured: 0.91 ulp).
#[inline(always)]
pub fn ln_unit_f32(x: f32) -> f32 {
    let ix = x.to_bits() as i32;
    let e = (ix - TWO_THIRDS_BITS) >> 23;
    let f = f32::from_bits((ix - (e << 23)) as u32) - 1.0;
    let ef = e as f32;
    let q = horner(f, LN_F32);
    let tail = fma_f32(f * f, q, fma_f32(ef, LN2_LO_F32, f));
    fma_f32(ef, core::f32::consts::LN_2, tail)
}

/// `2 pi - TAU` (`f32`) as the fit has it: the leading sine coefficient in two parts.
const SIN_LO_F32: f32 = -1.953_303_2e-7;
/// `(sin(2 pi t) / t - 2 pi) / t^2` in powers of `t^2`, `|t| <= 1/8` (with the leading
/// term: degree 7 in `t`, relative error 2^-28.2 before rounding).
const SIN_F32: [f32; 3] = [-41.341_66, 81.592_35, -75.393_24];
/// `(cos(2 pi t) - 1) / t^2` in powers of `t^2`, `|t| <= 1/8` (degree 8 in `t`, error
/// 2^-33.9 before rounding).
const COS_F32: [f32; 4] = [-19.739_208, 64.939_32, -85.443_24, 59.229_244];

/// `(sin 2 pi u, cos 2 pi u)` for `u` in `[0, 1)` a multiple of `2^-24` (as every
/// `uniform_f32` is).
///
/// `q` is the nearest integer to `4 u` and `t = u - q/4` in `[-1/8, 1/8]` is exact, so
/// no argument reduction by `pi` is needed; the quadrant `q mod 4` swaps and negates
/// `sin 2 pi t`, `cos 2 pi t` (selects). Zeros of the results (`u` = 0, 1/4, 1/2, 3/4)
/// come out exactly, and near them the result is `t P(t^2)` with `t` exact, so the
/// relative accuracy holds there too: error at most 1 ulp for both over all `2^24`
/// values of `uniform_f32` (measured: 0.99 ulp for both, where the result is
/// `cos 2 pi t` near `t = 1/8`).
#[inline(always)]
pub fn sincos_2pi_f32(u: f32) -> (f32, f32) {
    // 4 u + 1.5 2^23 rounds 4 u to an integer, which lands in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let big = fma_f32(u, 4.0, ROUND);
    let q = big.to_bits();
    let t = fma_f32(big - ROUND, -0.25, u);
    let t2 = t * t;
    let s = fma_f32(
        t,
        core::f32::consts::TAU,
        t * fma_f32(t2, horner(t2, SIN_F32), SIN_LO_F32),
    );
    let c = fma_f32(t2, horner(t2, COS_F32), 1.0);
    let (a, b) = if q & 1 == 0 { (s, c) } else { (c, s) };
    // Quadrants 2, 3 negate the sine; 1, 2 the cosine.
    let neg = |v: f32, k: u32| f32::from_bits(v.to_bits() ^ ((k & 2) << 30));
    (neg(a, q), neg(b, q + 1))
}

/// Bits of `2/3` as `f64`.
const TWO_THIRDS_BITS_F64: i64 = 0x3fe5_5555_5555_5555;
/// `ln 2 - LN_2` (`f64`).
const LN2_LO_F64: f64 = 2.319_046_813_846_299_6e-17;
/// As [`LN_F32`], degree 19 (weighted error 2^-56.9 before rounding to `f64`).
const LN_F64: [f64; 20] = [
    -0.499_999_999_999_999_56,
    0.333_333_333_333_331_3,
    -0.250_000_000_000_294_5,
    0.200_000_000_000_838_53,
    -0.166_666_666_608_920_38,
    0.142_857_142_734_525,
    -0.125_000_005_145_626_06,
    0.111_111_120_070_829_84,
    -0.099_999_749_368_253_34,
    0.090_908_713_542_849_64,
    -0.083_340_633_092_233_12,
    0.076_932_902_393_661_89,
    -0.071_296_200_740_491_09,
    0.066_503_781_743_275_63,
    -0.063_999_716_552_357_2,
    0.060_537_418_867_423_16,
    -0.045_347_641_105_901_65,
    0.041_675_504_034_116_316,
    -0.086_951_080_362_538_49,
    0.085_130_989_971_664_67,
];

/// [`ln_unit_f32`] in `f64`, for `x` in `(0, 1]` normal (every `uniform_open0_f64`):
/// within 1 ulp of `std`'s `ln` on 2^22 sampled uniforms.
#[inline(always)]
pub fn ln_unit_f64(x: f64) -> f64 {
    let ix = x.to_bits() as i64;
    let e = (ix - TWO_THIRDS_BITS_F64) >> 52;
    let f = f64::from_bits((ix - (e << 52)) as u64) - 1.0;
    let ef = e as f64;
    let q = horner(f, LN_F64);
    let tail = fma_f64(f * f, q, fma_f64(ef, LN2_LO_F64, f));
    fma_f64(ef, core::f64::consts::LN_2, tail)
}

/// `2 pi - TAU` (`f64`).
const SIN_LO_F64: f64 = 2.236_516_570_629_116_4e-16;
/// As [`SIN_F32`], degree 13 in `t` (relative error 2^-58.1 before rounding).
const SIN_F64: [f64; 6] = [
    -41.341_702_240_399_634,
    81.605_249_275_944_09,
    -76.705_859_703_223_91,
    42.058_684_892_382_27,
    -15.093_797_012_451_397,
    3.780_716_507_426_981_3,
];
/// As [`COS_F32`], degree 14 in `t` (error 2^-64.5 before rounding).
const COS_F64: [f64; 7] = [
    -19.739_208_802_178_716,
    64.939_394_022_667_98,
    -85.456_817_206_528_29,
    60.244_641_329_385_73,
    -26.426_250_927_313_795,
    7.903_091_591_292_859,
    -1.696_834_757_248_271_4,
];

/// [`sincos_2pi_f32`] in `f64`, for `u` in `[0, 1)` a multiple of `2^-53` (every
/// `uniform_f64`): within 2 ulp of `std`'s `sin` of an exactly reduced argument on 2^22
/// sampled uniforms, zeros exact.
#[inline(always)]
pub fn sincos_2pi_f64(u: f64) -> (f64, f64) {
    const ROUND: f64 = 6_755_399_441_055_744.0; // 1.5 2^52
    let big = fma_f64(u, 4.0, ROUND);
    let q = big.to_bits();
    let t = fma_f64(big - ROUND, -0.25, u);
    let t2 = t * t;
    let s = fma_f64(
        t,
        core::f64::consts::TAU,
        t * fma_f64(t2, horner(t2, SIN_F64), SIN_LO_F64),
    );
    let c = fma_f64(t2, horner(t2, COS_F64), 1.0);
    let (a, b) = if q & 1 == 0 { (s, c) } else { (c, s) };
    let neg = |v: f64, k: u64| f64::from_bits(v.to_bits() ^ ((k & 2) << 62));
    (neg(a, q), neg(b, q + 1))
}
