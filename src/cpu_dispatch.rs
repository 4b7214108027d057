//! Run-time CPU feature dispatch for the rayon paths.
//!
//! The per-element math uses fused multiply-add (`f64::mul_add`). Built for baseline
//! x86-64, that is a call into a library `fma` per element, several times slower than
//! the instruction, and it would make every CPU-vs-GPU speedup look better than it is.
//! `fma_kernel!` compiles a chunk kernel twice, once with the `fma` and `avx2` target
//! features, and picks that twin when the CPU has them. Both give the same bits: `fma`
//! is correctly rounded either way.

use std::sync::atomic::{AtomicBool, Ordering};

static PORTABLE_ONLY: AtomicBool = AtomicBool::new(false);

/// Forces the portable (no FMA instruction) CPU kernels, or lifts that. The results are
/// the same bits either way; this exists so tests can check exactly that, and to compare
/// speeds. Affects every thread.
#[doc(hidden)]
pub fn force_portable(on: bool) {
    PORTABLE_ONLY.store(on, Ordering::Relaxed);
}

/// Whether the FMA kernels may run (CPU support, not forced off).
#[doc(hidden)]
#[inline]
pub fn fma_allowed() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !PORTABLE_ONLY.load(Ordering::Relaxed)
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `fn name<generics>(args) -> Ret { body }` so that the body runs in a frame
/// compiled with FMA and AVX2 where the CPU supports them. The generic parameters go in
/// brackets: `fma_kernel! { fn axpy_chunk[T: Element](alpha: T, x: &[T], y: &mut [T]) { .. } }`.
/// (A closure passed to a feature-enabled function is not reliably inlined into it, so
/// the body is a real `#[inline(always)]` function that both frames call.)
macro_rules! fma_kernel {
    ($(#[$meta:meta])* $vis:vis fn $name:ident [$($gen:tt)*] ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn body<$($gen)*>($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "fma,avx2")]
                #[allow(clippy::too_many_arguments)]
                fn with_fma<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if $crate::cpu_dispatch::fma_allowed() {
                    // SAFETY: the features were just detected on this CPU.
                    return unsafe { with_fma($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

pub(crate) use fma_kernel;
