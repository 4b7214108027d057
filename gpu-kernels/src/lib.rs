//! Device code of ferrocuda.
//!
//! One crate, two targets. On the host (stable Rust) this is an ordinary `rlib` whose
//! plain `#[inline]` functions are the per-element math of every algorithm, called by
//! the rayon CPU paths. For `nvptx64-nvidia-cuda` (built by the root `build.rs` with the
//! pinned nightly) the same functions are called from the `extern "ptx-kernel"` entry
//! points, which only exist on that target.
//!
//! # Kernel ABI
//! Arguments follow BLAS order: the length first, then scalars and pointers in the
//! order of the BLAS routine (`axpy(n, alpha, x, y)`), then outputs. Lengths are
//! `usize` (64-bit on both sides), pointers are raw device pointers, scalars are
//! passed by value (`Complex<T>` is `#[repr(C)]`). Every kernel name is a constant in
//! [`names`], and the host checks each against the embedded PTX.
//!
//! # Two PTX modules
//! build.rs compiles this crate twice: for `sm_80` (every kernel; the driver JIT-compiles
//! it for any newer GPU) and for `sm_90` with `--cfg ferrocuda_sm90`, which keeps only
//! [`hopper`] (kernels with instructions that exist from Hopper on) and what it uses.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_intrinsics)
)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(gpu_intrinsics, gpu_launch_sized_workgroup_mem)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

/// Repeats a block for each listed value of an index (a loop the compiler must unroll,
/// so that register arrays indexed by it stay in registers).
#[cfg(target_arch = "nvptx64")]
macro_rules! unroll {
    ($i:ident in [$($v:literal),*] $body:block) => {
        $( { #[allow(clippy::identity_op, clippy::erasing_op)] let $i: usize = $v; $body } )*
    };
}

#[cfg(not(ferrocuda_sm90))]
pub mod blas1;
#[cfg(not(ferrocuda_sm90))]
pub mod dense;
#[cfg(target_arch = "nvptx64")]
pub mod device;
pub mod hopper;
#[cfg(not(ferrocuda_sm90))]
pub mod krylov;
pub mod math;
#[cfg(not(ferrocuda_sm90))]
pub mod mpc;
#[cfg(not(ferrocuda_sm90))]
pub mod multigrid;
#[cfg(not(ferrocuda_sm90))]
pub mod names;
#[cfg(not(ferrocuda_sm90))]
pub mod precond;
#[cfg(not(ferrocuda_sm90))]
pub mod probe;
#[cfg(not(ferrocuda_sm90))]
pub mod rock4;
pub mod scalar;
#[cfg(not(ferrocuda_sm90))]
pub mod sfmt;
#[cfg(not(ferrocuda_sm90))]
pub mod sparse;
#[cfg(not(ferrocuda_sm90))]
pub mod spmv;
#[cfg(not(ferrocuda_sm90))]
pub mod spmv_thesis;

pub use num_complex::Complex;
pub use scalar::{RealScalar, Scalar};

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A panic on the device (an out-of-range index that the bounds checks caught) traps,
    // and the host reports the launch error with the kernel's name.
    unsafe { core::arch::nvptx::trap() }
}
