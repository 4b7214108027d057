//! The few floating-point primitives that `core` lacks, written once for both targets.
//!
//! On the device they lower to `fma.rn` / `sqrt.rn`; on the host they call `std`, which
//! rounds identically (IEEE-754 fused multiply-add and correctly rounded square root),
//! so the per-element math gives the same bits on the CPU and the GPU.

/// `a * b + c` with a single rounding.
#[inline(always)]
pub fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf64(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `a * b + c` with a single rounding.
#[inline(always)]
pub fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// Correctly rounded square root.
#[inline(always)]
pub fn sqrt_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Correctly rounded square root.
#[inline(always)]
pub fn sqrt_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Transcendental functions for device code come from `libm` (pure Rust, no_std):
/// rustc links no libdevice. Its `sin`/`cos` use a local-memory stack for argument
/// reduction, so keep them out of hot loops.
pub use libm;

/// One element of a rank-1 update, `a - l u`, fused.
#[inline(always)]
pub fn rank1<T: crate::scalar::RealScalar>(a: T, l: T, u: T) -> T {
    (-l).mul_add(u, a)
}
