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

pub mod blas1;
pub mod dense;
#[cfg(target_arch = "nvptx64")]
pub mod device;
pub mod krylov;
pub mod math;
pub mod mpc;
pub mod multigrid;
pub mod names;
pub mod precond;
pub mod probe;
pub mod rock4;
pub mod scalar;
pub mod sfmt;
pub mod sparse;
pub mod spmv;
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
