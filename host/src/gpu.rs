//! `Gpu`: one device context, one stream, the embedded kernel module loaded once, and
//! the launch path every kernel goes through.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, result, sys};

use crate::error::{DriverStatus, Error, Result, check};
use crate::launch::LaunchConfig;
use crate::memory::Allocation;

/// Whether the CUDA driver library (`libcuda.so.1`) can be loaded. cudarc panics at the
/// first driver call without it, so every entry point asks this first.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

/// Initialises the driver, or says why there is no device.
fn init_driver() -> Result<()> {
    if !driver_present() {
        return Err(Error::NoDevice {
            reason: "the CUDA driver library (libcuda.so.1) is not installed".into(),
        });
    }
    result::init().map_err(|e| Error::NoDevice {
        reason: format!("cuInit failed: {}", DriverStatus(e)),
    })
}

/// Number of CUDA devices; `Err(NoDevice)` when there is no driver.
pub fn device_count() -> Result<usize> {
    init_driver()?;
    let count = check(CudaContext::device_count(), || "cuDeviceGetCount".into())?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Device state shared by every stream handle of one device.
struct Device {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    ptx: &'static str,
    module: Mutex<Option<Arc<CudaModule>>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
}

/// A handle to one GPU and one of its streams.
///
/// Everything issued through one `Gpu` runs in order on its stream; `Clone` gives
/// another handle to the same stream, [`Gpu::new_stream`] one to a new stream of the
/// same device (order work across streams with [`Gpu::wait_for`]). Kernels come from the
/// PTX given at creation, loaded on first use and cached by name.
#[derive(Clone)]
pub struct Gpu {
    device: Arc<Device>,
    stream: Arc<CudaStream>,
    /// Last kernel launched on this stream, named when a later sync reports a fault.
    last_kernel: Arc<Mutex<&'static str>>,
    /// Reusable device scratch (reduction partials), grown on demand, never shrunk.
    scratch: Arc<Mutex<Option<Allocation>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.device.ordinal)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Gpu {
    /// Opens device `ordinal` with the kernels in `ptx`.
    ///
    /// Errors: [`Error::NoDevice`] without a driver or device, [`Error::InvalidOrdinal`]
    /// for an ordinal past the device count.
    pub fn new(ordinal: usize, ptx: &'static str) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice {
                reason: "the driver reports zero CUDA devices".into(),
            });
        }
        if ordinal >= count {
            return Err(Error::InvalidOrdinal { ordinal, count });
        }
        let ctx = check(CudaContext::new(ordinal), || {
            format!("cuDevicePrimaryCtxRetain(device {ordinal})")
        })?;
        let stream = check(ctx.new_stream(), || "cuStreamCreate".into())?;
        let device = Arc::new(Device {
            ordinal,
            ctx,
            ptx,
            module: Mutex::new(None),
            functions: Mutex::new(HashMap::new()),
        });
        Ok(Self::on_stream(device, stream))
    }

    fn on_stream(device: Arc<Device>, stream: Arc<CudaStream>) -> Self {
        Gpu {
            device,
            stream,
            last_kernel: Arc::new(Mutex::new("(none)")),
            scratch: Arc::new(Mutex::new(None)),
        }
    }

    /// A handle to a new stream of the same device (same module cache).
    pub fn new_stream(&self) -> Result<Gpu> {
        let stream = check(self.device.ctx.new_stream(), || "cuStreamCreate".into())?;
        Ok(Self::on_stream(self.device.clone(), stream))
    }

    /// Makes this handle's stream wait for all work issued so far on `other`'s stream.
    pub fn wait_for(&self, other: &Gpu) -> Result<()> {
        if !Arc::ptr_eq(&self.device, &other.device) {
            return Err(Error::WrongDevice {
                op: "wait_for",
                what: "the other stream",
                expected: self.ordinal(),
                found: other.ordinal(),
            });
        }
        let event = check(other.stream.record_event(None), || "cuEventRecord".into())?;
        check(self.stream.wait(&event), || "cuStreamWaitEvent".into())
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal
    }

    /// Whether two handles belong to the same device context.
    pub fn same_device(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.device, &other.device)
    }

    /// Device name as the driver reports it.
    pub fn name(&self) -> Result<String> {
        check(self.device.ctx.name(), || "cuDeviceGetName".into())
    }

    /// `(free, total)` device memory in bytes.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        check(self.device.ctx.mem_get_info(), || "cuMemGetInfo".into())
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.device.ctx
    }

    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    pub(crate) fn cuda_stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the context current on the calling thread (before raw driver calls).
    pub(crate) fn bind(&self) -> Result<()> {
        check(self.device.ctx.bind_to_thread(), || {
            "cuCtxSetCurrent".into()
        })
    }

    /// Waits for all work on this stream. An asynchronous fault is reported with the
    /// name of the last kernel launched here.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| self.after_kernel("cuStreamSynchronize", e))
    }

    pub(crate) fn after_kernel(&self, call: &'static str, e: cudarc::driver::DriverError) -> Error {
        Error::AfterKernel {
            call,
            kernel: *lock(&self.last_kernel),
            status: DriverStatus(e),
        }
    }

    fn module(&self) -> Result<Arc<CudaModule>> {
        let mut slot = lock(&self.device.module);
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let ptx = cudarc::nvrtc::Ptx::from_src(self.device.ptx);
        let module = check(self.device.ctx.load_module(ptx), || {
            "cuModuleLoadData(embedded PTX)".into()
        })?;
        *slot = Some(module.clone());
        Ok(module)
    }

    /// Looks up a kernel (cached after the first call).
    pub fn function(&self, kernel: &'static str) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.device.functions).get(kernel) {
            return Ok(f.clone());
        }
        let module = self.module()?;
        let f = module.load_function(kernel).map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND {
                Error::KernelNotFound {
                    kernel,
                    status: DriverStatus(e),
                }
            } else {
                Error::Driver {
                    call: format!("cuModuleGetFunction({kernel})"),
                    status: DriverStatus(e),
                }
            }
        })?;
        lock(&self.device.functions).insert(kernel, f.clone());
        Ok(f)
    }

    /// Launches `kernel` on this stream.
    ///
    /// # Safety
    /// `params` must point to values whose types and order match the kernel's
    /// parameters, and every device pointer among them must be valid for what the kernel
    /// reads and writes. Each kernel gets one safe, typed wrapper that checks this; it
    /// is the only caller.
    pub unsafe fn launch(
        &self,
        kernel: &'static str,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        cfg.validate(kernel)?;
        let f = self.function(kernel)?;
        self.bind()?;
        // SAFETY: forwarded from the caller.
        unsafe {
            result::launch_kernel(
                f.cu_function(),
                cfg.grid,
                cfg.block,
                cfg.shared_bytes,
                self.stream.cu_stream(),
                params,
            )
        }
        .map_err(|e| Error::Launch {
            kernel,
            status: DriverStatus(e),
        })?;
        *lock(&self.last_kernel) = kernel;
        Ok(())
    }

    /// Runs `f` with a device scratch area of at least `bytes` bytes, reused across
    /// calls on this stream (stream order makes reuse safe). Grows only when a larger
    /// area is asked for, so steady-state loops allocate nothing.
    pub fn with_scratch<R, E: From<Error>>(
        &self,
        bytes: usize,
        f: impl FnOnce(u64) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let mut slot = lock(&self.scratch);
        let big_enough = slot.as_ref().is_some_and(|a| a.bytes() >= bytes);
        if !big_enough {
            *slot = Some(Allocation::new(self, bytes.max(256))?);
        }
        let ptr = slot.as_ref().map_or(0, Allocation::ptr);
        f(ptr)
    }
}
