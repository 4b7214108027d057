//! TRANSITIONAL: launches by kernel name with untyped arguments, for the library
//! modules not yet converted to typed handles (`Gpu::launch`). Removed once the last
//! caller is gone; nothing new may use it.
#![allow(missing_docs)]

use std::ffi::c_void;

use cudarc::driver::{CudaFunction, result, sys};

use crate::error::{DriverStatus, Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchConfig;

/// The modules an untyped name is looked up in, in order.
const UNTYPED_MODULES: [&str; 2] = ["ferrocuda_kernels", "ferrocuda_kernels::hopper"];

#[doc(hidden)]
pub fn arg<T>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

impl Gpu {
    #[doc(hidden)]
    pub fn function_untyped(&self, kernel: &'static str) -> Result<CudaFunction> {
        let mut last = None;
        for module in UNTYPED_MODULES {
            match self.function_in(module, kernel) {
                Ok(f) => return Ok(f),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("two modules were tried"))
    }

    #[doc(hidden)]
    pub fn with_module(&self, _ptx: &'static str) -> Gpu {
        self.clone()
    }

    /// # Safety
    /// `params` match the kernel's parameters and the pointers are valid.
    #[doc(hidden)]
    pub unsafe fn launch_untyped(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        unsafe { self.untyped_via(kernel, cfg, params, false) }
    }

    /// # Safety
    /// As [`Gpu::launch_untyped`].
    #[doc(hidden)]
    pub unsafe fn launch_cooperative_untyped(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        unsafe { self.untyped_via(kernel, cfg, params, true) }
    }

    unsafe fn untyped_via(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
        cooperative: bool,
    ) -> Result<()> {
        cfg.validate(kernel)?;
        let f = self.function_untyped(kernel)?;
        self.bind_to_thread()?;
        let how = if cooperative {
            result::launch_cooperative_kernel
        } else {
            result::launch_kernel
        };
        unsafe {
            how(
                f.cu_function(),
                cfg.grid,
                cfg.block,
                cfg.shared_bytes,
                self.raw_stream(),
                params,
            )
        }
        .map_err(|e| Error::Launch {
            kernel,
            status: DriverStatus(e),
        })?;
        self.set_last_kernel(kernel);
        Ok(())
    }

    #[doc(hidden)]
    pub fn allow_dynamic_shared_untyped(&self, kernel: &'static str, bytes: usize) -> Result<()> {
        let f = self.function_untyped(kernel)?;
        self.bind_to_thread()?;
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(|e| Error::Driver {
            call: format!("cuFuncSetAttribute({kernel})"),
            status: DriverStatus(e),
        })
    }
}
