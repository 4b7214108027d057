//! Device code of ferrocuda.
//!
//! One crate, two targets. On the host (stable Rust) this is an ordinary `rlib` whose
//! plain `#[inline]` functions are the per-element math of every algorithm, called by
//! the rayon CPU paths. For `nvptx64-nvidia-cuda` (built by the root `build.rs` with the
//! pinned nightly) the same functions are called from the `extern "ptx-kernel"` entry
//! points, which only exist on that target.
//!
//! # Declaring a kernel (once)
//! A kernel's parameter list is written once, on its body function, with
//! [`macro@kernel`]. On `nvptx64` the body is compiled; on the host it is replaced by
//! a launch-arguments struct with one public field per parameter (`*const T` becomes
//! [`abi::In`]`<'a, T>`, `*mut T` becomes [`abi::Out`]`<'a, T>`), which `ferrocuda-host`'s
//! `Gpu::launch(&handle, config, args)` takes, so a missing, extra, mistyped or
//! misordered argument does not compile, and whether a buffer is read or written is in
//! its type.
//!
//! ```ignore
//! /// `y_i <- alpha x_i + y_i` for `i < n`.
//! #[kernel(args = Axpy)]
//! pub unsafe fn axpy_kernel<T: Scalar>(n: usize, alpha: T, x: *const T, y: *mut T) {
//!     for_each_index(n, |i| unsafe { *y.add(i) = axpy(alpha, *x.add(i), *y.add(i)) });
//! }
//! instances! {
//!     impl Blas1Kernels for f64 {
//!         AXPY = axpy_kernel::<f64>("axpy_f64");
//!     }
//! }
//! // host: unsafe { gpu.launch(&f64::AXPY, cfg, Axpy { n, alpha, x: x.as_in(), y: y.as_out() }) }
//! ```
//!
//! * A non-generic body is itself the entry point (PTX name = function name); its handle
//!   is the constant `FUNCTION_NAME`.
//! * A generic body (type and const parameters) gets its entry points from
//!   [`instances!`]: one line per instance names the PTX entry and gives the generic
//!   arguments in order; the host handle is an associated constant of a trait the host
//!   code dispatches on (`T::AXPY`), or a free `pub const`.
//! * More than about six parameters: pass one `#[repr(C)]` parameter struct, defined
//!   here and shared by both sides, with device pointers as `In`/`Out` fields.
//! * Lengths are `usize`, scalars by value (`Complex<T>` is `#[repr(C)]`); BLAS order
//!   (length, scalars and inputs, then outputs).
//! * Every declaration lands in [`abi::KERNELS`]; a test compares each with the `.entry`
//!   `.param` list of the PTX it is loaded from, and finds PTX entries nobody declared.
//! * The handle names the Rust module that declared it; the library registers which
//!   module holds which Rust module (`ferrocuda_host::register_module`, one per domain).
//!
//! # Three compiled modules, one loaded module per domain
//! build.rs compiles this crate three times: for `sm_80` (every product kernel; the
//! driver JIT-compiles it for any newer GPU), for `sm_90` with `--cfg ferrocuda_sm90`,
//! which keeps only [`hopper`] (kernels with instructions that exist from Hopper on) and
//! what it uses, and for `sm_80` with `--cfg ferrocuda_repro`, which keeps only [`repro`]
//! (the kernels of the reproductions in `ferrocuda-repro`) and what it uses. A module
//! with kernels is gated `#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]` unless it
//! belongs to one of the two smaller builds.
//!
//! Each compiled PTX is then cut by domain (build/domains.rs): one module per top-level
//! Rust module with kernels ([`blas1`], [`spmv`], [`krylov`], [`precond`], [`dense`],
//! [`multigrid`], [`rock4`], [`mpc`], [`sfmt`], [`probe`]; [`hopper`] whole; `repro::lu`,
//! `repro::rng`, `repro::spmv`), holding that module's entries and the functions and
//! variables they use. Which entry goes where is this crate's own [`abi::KERNELS`]: the
//! Rust module that declares a kernel is the module it is loaded from, on the first
//! launch of one of its kernels. A new top-level module with kernels is a new domain
//! (add it to the list in `tests/integration/kernels.rs`); an entry without a
//! declaration stops the build.
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

// The code `#[kernel]` generates names this crate by its path, here as in other kernel crates.
extern crate self as ferrocuda_kernels;

pub use ferrocuda_kernel_macros::{instances, kernel};

/// Repeats a block for each listed value of an index (a loop the compiler must unroll,
/// so that register arrays indexed by it stay in registers).
#[cfg(target_arch = "nvptx64")]
macro_rules! unroll {
    ($i:ident in [$($v:literal),*] $body:block) => {
        $( { #[allow(clippy::identity_op, clippy::erasing_op)] let $i: usize = $v; $body } )*
    };
}

pub mod abi;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod blas1;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod dense;
#[cfg(target_arch = "nvptx64")]
pub mod device;
#[cfg(not(ferrocuda_sm90))]
pub mod fastmath;
pub mod gemm;
pub mod hopper;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod krylov;
pub mod math;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod mpc;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod multigrid;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod precond;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod probe;
pub mod rate;
// Host: always (handles, serial twins); device: only in the reproduction module.
#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_repro))]
pub mod repro;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod rock4;
pub mod scalar;
// The stream kernels are gated out of the reproduction module, which uses the recursion.
#[cfg(not(ferrocuda_sm90))]
pub mod sfmt;
// No kernels: the per-entry SpMV math, shared with the reproduction module.
#[cfg(not(ferrocuda_sm90))]
pub mod sparse;
#[cfg(not(any(ferrocuda_sm90, ferrocuda_repro)))]
pub mod spmv;

pub use num_complex::Complex;
pub use scalar::{RealScalar, Scalar};

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // A panic on the device (an out-of-range index that the bounds checks caught) traps,
    // and the host reports the launch error with the kernel's name.
    unsafe { core::arch::nvptx::trap() }
}
