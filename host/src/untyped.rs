//! TRANSITIONAL: launches by kernel name with untyped arguments, for the library
//! modules not yet converted to typed handles (`Gpu::launch`). Removed once the last
//! caller is gone; nothing new may use it.
#![allow(missing_docs)]

use std::ffi::c_void;

use cudarc::driver::{CudaFunction, result};

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

    /// # Safety
    /// `params` match the kernel's parameters and the pointers are valid.
    #[doc(hidden)]
    pub unsafe fn launch_untyped(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        cfg.validate(kernel)?;
        let f = self.function_untyped(kernel)?;
        self.bind_to_thread()?;
        unsafe {
            result::launch_kernel(
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
}
