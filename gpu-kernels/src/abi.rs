//! The kernel ABI shared by both sides: typed device pointers ([`In`], [`Out`]) and, on
//! the host, the typed handles that [`kernel`](crate::kernel) and
//! [`instances!`](crate::instances) generate from each kernel's declaration.
//!
//! A kernel's parameter list is written once, on its body function. On the host that
//! declaration becomes a launch-arguments struct (one named field per parameter, device
//! pointers as [`In`]/[`Out`] borrowed from device buffers) implementing [`Signature`],
//! and each entry point a [`Kernel`] handle naming its PTX entry. `ferrocuda-host`
//! launches a `Kernel<S>` with an `S::Args`, so the argument count, types and order are
//! checked by the compiler, and whether a buffer is read or written is in its type.

use core::marker::PhantomData;

/// A device pointer the kernel only reads, valid for the borrow `'a` of the buffer it
/// came from. Same ABI as `*const T` (`#[repr(transparent)]`).
#[repr(transparent)]
pub struct In<'a, T> {
    ptr: *const T,
    _borrow: PhantomData<&'a T>,
}

/// A device pointer the kernel may write (and read), valid for the exclusive borrow `'a`
/// of the buffer it came from. Same ABI as `*mut T`.
#[repr(transparent)]
pub struct Out<'a, T> {
    ptr: *mut T,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> Clone for In<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for In<'_, T> {}
// `Copy` so that parameter structs holding them are `Copy` on both sides; exclusivity
// comes from the `&mut` borrow that produced the pointer.
impl<T> Clone for Out<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Out<'_, T> {}

impl<'a, T> In<'a, T> {
    /// The pointer (on the device: dereference it in the kernel).
    #[inline(always)]
    pub fn ptr(self) -> *const T {
        self.ptr
    }

    /// A pointer from a device address.
    ///
    /// # Safety
    /// `addr` must be 0 or the address of device memory that stays allocated, holds
    /// values of `T` and is not written by anyone for `'a`, as far as the kernel reads it.
    #[inline(always)]
    pub const unsafe fn from_addr(addr: u64) -> Self {
        In {
            ptr: addr as usize as *const T,
            _borrow: PhantomData,
        }
    }

    /// The device address.
    #[inline(always)]
    pub fn addr(self) -> u64 {
        self.ptr as usize as u64
    }

    /// The pointer `count` elements further, same borrow: a block inside a buffer (a
    /// matrix's column, a workspace's slot).
    ///
    /// # Safety
    /// The result must stay inside the buffer the pointer was borrowed from, as far as
    /// the kernel it is given to reads.
    #[inline(always)]
    pub unsafe fn add(self, count: usize) -> Self {
        In {
            ptr: self.ptr.wrapping_add(count),
            _borrow: PhantomData,
        }
    }
}

impl<'a, T> Out<'a, T> {
    /// The pointer (on the device: dereference it in the kernel).
    #[inline(always)]
    pub fn ptr(self) -> *mut T {
        self.ptr
    }

    /// A pointer from a device address.
    ///
    /// # Safety
    /// `addr` must be 0 or the address of device memory that stays allocated, holds
    /// values of `T` and is accessed by nobody else for `'a`, as far as the kernel
    /// accesses it.
    #[inline(always)]
    pub const unsafe fn from_addr(addr: u64) -> Self {
        Out {
            ptr: addr as usize as *mut T,
            _borrow: PhantomData,
        }
    }

    /// The device address.
    #[inline(always)]
    pub fn addr(self) -> u64 {
        self.ptr as usize as u64
    }

    /// The pointer `count` elements further, same borrow (see [`In::add`]).
    ///
    /// # Safety
    /// The result must stay inside the buffer the pointer was borrowed from, as far as
    /// the kernel it is given to accesses.
    #[inline(always)]
    pub unsafe fn add(self, count: usize) -> Self {
        Out {
            ptr: self.ptr.wrapping_add(count),
            _borrow: PhantomData,
        }
    }

    /// The same pointer, read-only, for as long as this one is borrowed.
    #[inline(always)]
    pub fn as_in(&self) -> In<'_, T> {
        In {
            ptr: self.ptr,
            _borrow: PhantomData,
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use core::ffi::c_void;
    use core::marker::PhantomData;

    #[doc(hidden)]
    pub use linkme;

    /// One kernel parameter as the host declares it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Param {
        /// The parameter's name in the declaration.
        pub name: &'static str,
        /// Bytes (`size_of`).
        pub size: usize,
        /// Alignment (`align_of`).
        pub align: usize,
    }

    impl Param {
        /// The parameter `name` of type `T`.
        pub const fn of<T>(name: &'static str) -> Param {
            Param {
                name,
                size: size_of::<T>(),
                align: align_of::<T>(),
            }
        }
    }

    /// A kernel parameter list. Implemented (only) by the structs that `#[kernel]`
    /// generates; `Self` is the struct with its borrows `'static`, `Args<'a>` the same
    /// struct borrowing device memory for `'a`.
    ///
    /// # Safety
    /// `PARAMS` and `Args::with_params` must describe exactly the parameters of every
    /// PTX entry point whose [`Kernel`] handle has this signature.
    pub unsafe trait Signature {
        /// The launch arguments.
        type Args<'a>: KernelArgs;
        /// The parameters in order.
        const PARAMS: &'static [Param];
    }

    /// Launch arguments that can be handed to the driver.
    ///
    /// # Safety
    /// `with_params` passes one pointer per parameter, in order, each to a value of
    /// the parameter's type that lives until `f` returns.
    pub unsafe trait KernelArgs {
        /// Calls `f` with pointers to the arguments (what `cuLaunchKernel` takes).
        fn with_params<R>(self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
    }

    /// A typed handle to one kernel entry point: its PTX name, the Rust module that
    /// declared it (which picks the PTX module it is loaded from) and its signature.
    pub struct Kernel<S> {
        name: &'static str,
        module: &'static str,
        _signature: PhantomData<fn() -> S>,
    }

    impl<S> Clone for Kernel<S> {
        fn clone(&self) -> Self {
            *self
        }
    }
    impl<S> Copy for Kernel<S> {}

    impl<S> core::fmt::Debug for Kernel<S> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "Kernel({} in {})", self.name, self.module)
        }
    }

    impl<S: Signature> Kernel<S> {
        /// The handle of entry point `name`, declared in Rust module `module`.
        ///
        /// # Safety
        /// The entry point must take exactly the parameters `S` describes; `#[kernel]`
        /// and `instances!` are the only callers.
        pub const unsafe fn new(name: &'static str, module: &'static str) -> Self {
            Kernel {
                name,
                module,
                _signature: PhantomData,
            }
        }

        /// The PTX entry point's name.
        pub const fn name(&self) -> &'static str {
            self.name
        }

        /// The Rust module path of the declaration (`ferrocuda_kernels::blas1`, ...).
        pub const fn module(&self) -> &'static str {
            self.module
        }

        /// The declared parameters.
        pub const fn params(&self) -> &'static [Param] {
            S::PARAMS
        }
    }

    /// What the host knows of one declared kernel entry point (see [`KERNELS`]).
    #[derive(Debug, Clone, Copy)]
    pub struct KernelInfo {
        /// The PTX entry point's name.
        pub name: &'static str,
        /// The Rust module path of the declaration.
        pub module: &'static str,
        /// The declared parameters.
        pub params: &'static [Param],
    }

    impl KernelInfo {
        /// The entry `name` with signature `S`, declared in `module`.
        pub const fn of<S: Signature>(name: &'static str, module: &'static str) -> KernelInfo {
            KernelInfo {
                name,
                module,
                params: S::PARAMS,
            }
        }
    }

    /// Every kernel entry point declared with `#[kernel]` / `instances!` in any linked
    /// crate: the list a test compares with the `.entry` declarations of the PTX.
    #[linkme::distributed_slice]
    pub static KERNELS: [KernelInfo];
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::{instances, kernel};
    use num_complex::Complex;

    /// A non-generic kernel: its own entry point, handle `PLAIN`.
    #[kernel]
    pub unsafe fn plain(n: usize, x: *const f32, y: *mut f32) {}

    /// A generic kernel with a const parameter and an associated type in a parameter.
    #[kernel(args = Generic)]
    pub unsafe fn generic_body<T: crate::Scalar, const B: usize>(
        n: usize,
        alpha: T,
        x: *const T,
        norms: *mut T::Real,
    ) {
    }

    instances! {
        pub const GENERIC_C64 = generic_body::<Complex<f64>, 4>("generic_c64_4");
    }

    #[test]
    fn declarations_give_typed_handles_with_their_parameter_sizes() {
        assert_eq!(PLAIN.name(), "plain");
        assert_eq!(PLAIN.module(), module_path!());
        let sizes = |p: &[Param]| {
            p.iter()
                .map(|p| (p.name, p.size))
                .collect::<std::vec::Vec<_>>()
        };
        assert_eq!(sizes(PLAIN.params()), [("n", 8), ("x", 8), ("y", 8)]);
        assert_eq!(GENERIC_C64.name(), "generic_c64_4");
        assert_eq!(
            sizes(GENERIC_C64.params()),
            [("n", 8), ("alpha", 16), ("x", 8), ("norms", 8)]
        );
        // The launch arguments name every parameter; pointers are typed by intent.
        let args: Generic<'static, Complex<f64>> = Generic {
            n: 3,
            alpha: Complex::new(1.0, 2.0),
            x: unsafe { In::from_addr(16) },
            norms: unsafe { Out::from_addr(32) },
        };
        let addrs = args.with_params(|p| p.len());
        assert_eq!(addrs, 4);
        // A block inside a buffer: the address moves by whole elements, the borrow stays.
        let x: In<'static, Complex<f64>> = unsafe { In::from_addr(4096) };
        assert_eq!(unsafe { x.add(3) }.addr(), 4096 + 3 * 16);
        let y: Out<'static, f32> = unsafe { Out::from_addr(4096) };
        assert_eq!(unsafe { y.add(5) }.addr(), 4096 + 5 * 4);
        let names: std::vec::Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
        assert!(
            names.contains(&"plain") && names.contains(&"generic_c64_4"),
            "{names:?}"
        );
    }
}
