//! `Gpu`: one device context, one stream, the kernel modules loaded on first use (one per
//! domain), and the launch path every kernel goes through.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, result, sys};

use ferrocuda_kernels::abi::{Kernel, KernelArgs, Signature};

use crate::error::{DriverStatus, Error, Result, check};
use crate::launch::LaunchConfig;
use crate::memory::Allocation;
use crate::modules::{log_loads, ptx_forced, registered_prefix};

/// `cuLaunchKernel` or `cuLaunchCooperativeKernel` as cudarc wraps them.
type LaunchFn = unsafe fn(
    sys::CUfunction,
    (u32, u32, u32),
    (u32, u32, u32),
    u32,
    sys::CUstream,
    &mut [*mut c_void],
) -> std::result::Result<(), cudarc::driver::DriverError>;

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

/// How a module's kernels were loaded onto a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleSource {
    /// From the fatbin assembled at build time: the driver picked the SASS for the
    /// device (or, for an architecture without SASS there, JIT-compiled its PTX).
    MachineCode,
    /// From the PTX text, JIT-compiled by the driver (no fatbin, the driver rejected
    /// it, or `FERROCUDA_LOAD_PTX=1`).
    Ptx,
}

/// One module a device loaded ([`Gpu::loaded_modules`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModuleLoad {
    /// The registered module-path prefix it serves (`ferrocuda_kernels::dense`).
    pub prefix: &'static str,
    /// From machine code or from PTX.
    pub source: ModuleSource,
    /// Wall-clock seconds `cuModuleLoadData` took (a PTX JIT compile included).
    pub seconds: f64,
}

/// Device state shared by every handle of one device: opening the same ordinal twice
/// gives handles on the same context, module cache and main stream.
pub(crate) struct Device {
    ordinal: usize,
    pub(crate) ctx: Arc<CudaContext>,
    /// Loaded modules by the address of their PTX text, with how each was loaded.
    modules: Mutex<HashMap<usize, (Arc<CudaModule>, ModuleLoad)>>,
    /// Kernels by (declaring Rust module, name).
    functions: Mutex<HashMap<(&'static str, &'static str), CudaFunction>>,
    /// Set once a second stream exists: from then on, a free is ordered after the work
    /// issued so far on every other stream (a buffer may still be read there).
    pub(crate) multi_stream: AtomicBool,
    main: Mutex<Weak<StreamState>>,
    /// Every stream of this device that is still alive.
    streams: Mutex<Vec<Weak<StreamState>>>,
    /// Frees hold it shared while they look at other streams' capture status and record
    /// events on them; `capture` holds it exclusively while it begins a capture. So no
    /// capture can start between that check and the event (the event would join the
    /// capture, pull the freeing stream into it, and another thread's synchronisation of
    /// that stream then crashed inside the driver).
    pub(crate) capture_gate: RwLock<()>,
    /// Page-locked buffers given back for reuse ([`Gpu::take_pinned`]).
    pub(crate) pinned_cache: Mutex<Vec<crate::pinned::PinnedBuffer<u8>>>,
}

impl Device {
    /// Makes `stream` wait for the work issued so far on every other live stream of the
    /// device, without blocking the host. Streams that are being captured into a graph
    /// are skipped: their work runs only when the graph is launched, which
    /// [`Gpu::capture`]'s safety contract covers. (A device-wide synchronisation here
    /// would invalidate a capture running on another thread.)
    pub(crate) fn order_after_other_streams(&self, stream: &CudaStream) {
        let _gate = self
            .capture_gate
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let others: Vec<Arc<StreamState>> = lock(&self.streams)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for other in others {
            if std::ptr::eq(other.stream.as_ref(), stream) {
                continue;
            }
            let capturing = other
                .stream
                .capture_status()
                .map(|s| s != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
                .unwrap_or(true);
            if capturing {
                continue;
            }
            if let Ok(event) = other.stream.record_event(None) {
                let _ = stream.wait(&event);
            }
        }
    }
}

/// One stream with what belongs to it.
pub(crate) struct StreamState {
    pub(crate) stream: Arc<CudaStream>,
    /// Last kernel launched here, named when a later sync reports a fault.
    last_kernel: Mutex<&'static str>,
    /// Reusable device scratch (reduction partials), grown on demand, never shrunk.
    /// Graphs keep the area they captured alive through the `Arc`.
    scratch: Mutex<Option<Arc<Allocation>>>,
}

type Registry = Mutex<Vec<(usize, Weak<Device>)>>;
/// Open devices by ordinal, so every `Gpu::new` of one device shares its state.
static DEVICES: Registry = Mutex::new(Vec::new());

/// A handle to one GPU and one of its streams.
///
/// Everything issued through one `Gpu` runs in order on its stream. `Clone` and
/// another [`Gpu::new`] of the same ordinal give handles to the same (main) stream;
/// [`Gpu::new_stream`] gives one to a new stream of the same device (order work across
/// streams with [`Gpu::wait_for`]). Kernels come from the module registered for the Rust
/// module that declared them ([`crate::register_module`]: one per domain), loaded on the
/// first use of one of its kernels and cached.
#[derive(Clone)]
pub struct Gpu {
    device: Arc<Device>,
    state: Arc<StreamState>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.device.ordinal)
            .finish_non_exhaustive()
    }
}

/// The device's default stream-ordered memory pool, where buffers come from.
fn memory_pool(device: &Device) -> Result<sys::CUmemoryPool> {
    check(device.ctx.bind_to_thread(), || "cuCtxSetCurrent".into())?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: writes one handle for the device the context belongs to.
    check(
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device.ctx.cu_device()) }.result(),
        || "cuDeviceGetDefaultMemPool".into(),
    )?;
    Ok(pool)
}

/// Makes the default pool keep freed memory instead of returning it to the driver at
/// every synchronisation (its release threshold, 0 by default, set to the maximum).
fn retain_freed_memory(device: &Device) -> Result<()> {
    let pool = memory_pool(device)?;
    let mut threshold = u64::MAX;
    // SAFETY: the attribute takes a cuuint64_t, read from `threshold`.
    check(
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        }
        .result(),
        || "cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)".into(),
    )
}

/// A `cuuint64_t` attribute of `pool`.
fn pool_attribute(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute) -> Result<u64> {
    let mut value = 0u64;
    // SAFETY: the reserved/used/threshold attributes are cuuint64_t, written to `value`.
    check(
        unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&mut value as *mut u64).cast()) }.result(),
        || format!("cuMemPoolGetAttribute({attr:?})"),
    )?;
    Ok(value)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Gpu {
    /// Opens device `ordinal`. The first open of a device sets its default memory pool
    /// to keep freed memory for reuse ([`Gpu::trim_memory_pool`] gives it back).
    ///
    /// Errors: [`Error::NoDevice`] without a driver or device, [`Error::InvalidOrdinal`]
    /// for an ordinal past the device count.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice {
                reason: "the driver reports zero CUDA devices".into(),
            });
        }
        if ordinal >= count {
            return Err(Error::InvalidOrdinal { ordinal, count });
        }
        let mut registry = lock(&DEVICES);
        registry.retain(|(_, weak)| weak.strong_count() > 0);
        let device = match registry.iter().find(|(o, _)| *o == ordinal) {
            Some((_, weak)) => weak.upgrade(),
            None => None,
        };
        let device = match device {
            Some(d) => d,
            None => {
                let ctx = check(CudaContext::new(ordinal), || {
                    format!("cuDevicePrimaryCtxRetain(device {ordinal})")
                })?;
                let d = Arc::new(Device {
                    ordinal,
                    ctx,
                    modules: Mutex::new(HashMap::new()),
                    functions: Mutex::new(HashMap::new()),
                    multi_stream: AtomicBool::new(false),
                    main: Mutex::new(Weak::new()),
                    streams: Mutex::new(Vec::new()),
                    capture_gate: RwLock::new(()),
                    pinned_cache: Mutex::new(Vec::new()),
                });
                retain_freed_memory(&d)?;
                registry.push((ordinal, Arc::downgrade(&d)));
                d
            }
        };
        drop(registry);
        let mut main = lock(&device.main);
        let state = match main.upgrade() {
            Some(state) => state,
            None => {
                let state = StreamState::new(&device)?;
                *main = Arc::downgrade(&state);
                state
            }
        };
        drop(main);
        Ok(Gpu { device, state })
    }

    /// A handle to a new stream of the same device (same module cache).
    ///
    /// From then on, freeing a buffer is ordered (on the device, without blocking the
    /// host) after the work issued so far on every other stream, since a kernel there
    /// may still read it: correct, at the cost of an event per stream and free.
    pub fn new_stream(&self) -> Result<Gpu> {
        self.device.multi_stream.store(true, Ordering::SeqCst);
        let state = StreamState::new(&self.device)?;
        Ok(Gpu {
            device: self.device.clone(),
            state,
        })
    }

    /// A handle to a new stream of the same device with the device's greatest stream
    /// priority: when both have blocks waiting, the block scheduler starts this stream's
    /// first, so short work on a critical path (a look-ahead panel) overtakes a long
    /// kernel queued on a stream from [`Gpu::new`] or [`Gpu::new_stream`].
    pub fn new_priority_stream(&self) -> Result<Gpu> {
        self.bind_to_thread()?;
        let (_, greatest) = check(cudarc::driver::result::stream::get_priority_range(), || {
            "cuCtxGetStreamPriorityRange".into()
        })?;
        self.device.multi_stream.store(true, Ordering::SeqCst);
        let state = StreamState::with_priority(&self.device, Some(greatest))?;
        Ok(Gpu {
            device: self.device.clone(),
            state,
        })
    }

    /// Makes this handle's stream wait for all work issued so far on `other`'s stream.
    pub fn wait_for(&self, other: &Gpu) -> Result<()> {
        crate::error::check_device("wait_for", "the other stream", self, other)?;
        let event = check(other.state.stream.record_event(None), || {
            "cuEventRecord".into()
        })?;
        check(self.state.stream.wait(&event), || {
            "cuStreamWaitEvent".into()
        })
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal
    }

    /// Whether two handles belong to the same device context.
    pub fn same_device(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.device, &other.device)
    }

    /// Whether two handles issue work to the same stream.
    pub fn same_stream(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Device name as the driver reports it.
    pub fn name(&self) -> Result<String> {
        check(self.device.ctx.name(), || "cuDeviceGetName".into())
    }

    /// The device's UUID: the same in every process that uses this device, whichever
    /// devices each of them sees (`CUDA_VISIBLE_DEVICES`, Slurm's cgroups), so processes
    /// can tell whether they share a GPU.
    pub fn uuid(&self) -> Result<[u8; 16]> {
        let u = check(self.device.ctx.uuid(), || "cuDeviceGetUuid".into())?;
        Ok(u.bytes.map(|b| b as u8))
    }

    /// `(free, total)` device memory in bytes, as the driver reports it: memory that
    /// freed buffers left in the memory pool counts as used ([`Gpu::available_memory`]
    /// counts it as free).
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        check(self.device.ctx.mem_get_info(), || "cuMemGetInfo".into())
    }

    /// `(available, total)` device memory in bytes: the driver's free memory plus what
    /// freed buffers left in the memory pool, which the next allocations reuse. Use it,
    /// not [`Gpu::memory_info`], to ask whether allocations will fit.
    pub fn available_memory(&self) -> Result<(usize, usize)> {
        let (free, total) = self.memory_info()?;
        Ok((free.saturating_add(self.pool_idle_bytes()?), total))
    }

    /// Bytes the device's memory pool holds for reuse: freed, not yet returned to the
    /// driver.
    pub fn pool_idle_bytes(&self) -> Result<usize> {
        let pool = memory_pool(&self.device)?;
        let reserved = pool_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
        )?;
        let used = pool_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
        )?;
        Ok(usize::try_from(reserved.saturating_sub(used)).unwrap_or(usize::MAX))
    }

    /// Returns the memory that freed buffers left in the pool to the driver (for other
    /// processes, or a library with its own allocator). Buffers allocate from the
    /// device's default stream-ordered pool, which ferrocuda sets to keep freed memory
    /// ([`Gpu::new`]): a solve that allocates its workspace again then reuses it instead
    /// of mapping new memory (tens to hundreds of microseconds per solve). An allocation
    /// that finds the device full trims the pool and tries once more by itself.
    pub fn trim_memory_pool(&self) -> Result<()> {
        let pool = memory_pool(&self.device)?;
        // SAFETY: a live pool handle; trimming releases only memory no allocation uses.
        check(unsafe { sys::cuMemPoolTrimTo(pool, 0) }.result(), || {
            "cuMemPoolTrimTo".into()
        })
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.device.ctx
    }

    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.state.stream.cu_stream()
    }

    /// The raw stream, for vendor libraries (cuSPARSE, cuRAND, ...) that take one. Make
    /// the context current first with [`Gpu::bind_to_thread`].
    pub fn raw_stream(&self) -> sys::CUstream {
        self.state.stream.cu_stream()
    }

    /// Makes this device's context current on the calling thread (before calling a
    /// vendor library on [`Gpu::raw_stream`]).
    pub fn bind_to_thread(&self) -> Result<()> {
        self.bind()
    }

    pub(crate) fn cuda_stream(&self) -> &Arc<CudaStream> {
        &self.state.stream
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
        count_host_wait();
        self.state
            .stream
            .synchronize()
            .map_err(|e| self.after_kernel("cuStreamSynchronize", e))
    }

    pub(crate) fn after_kernel(&self, call: &'static str, e: cudarc::driver::DriverError) -> Error {
        Error::AfterKernel {
            call,
            kernel: *lock(&self.state.last_kernel),
            status: DriverStatus(e),
        }
    }

    /// The loaded module that holds the kernels declared in Rust module `module`: its
    /// machine code (fatbin) where there is one, else its PTX (JIT-compiled).
    fn module(&self, module: &'static str) -> Result<Arc<CudaModule>> {
        let (prefix, image) = registered_prefix(module).ok_or(Error::NoModule { module })?;
        let key = image.ptx.as_ptr() as usize;
        let mut modules = lock(&self.device.modules);
        if let Some((m, _)) = modules.get(&key) {
            return Ok(m.clone());
        }
        let start = std::time::Instant::now();
        // A driver older than the assembler may reject the machine code; the PTX (of
        // an older ISA) still loads then.
        let from_fatbin = (!image.fatbin.is_empty() && !ptx_forced())
            .then(|| {
                self.device
                    .ctx
                    .load_module(cudarc::nvrtc::Ptx::from_binary(image.fatbin.to_vec()))
                    .ok()
            })
            .flatten();
        let (loaded, source) = match from_fatbin {
            Some(m) => (m, ModuleSource::MachineCode),
            None => (
                check(
                    self.device
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_src(image.ptx)),
                    || format!("cuModuleLoadData(PTX of {prefix})"),
                )?,
                ModuleSource::Ptx,
            ),
        };
        let load = ModuleLoad {
            prefix,
            source,
            seconds: start.elapsed().as_secs_f64(),
        };
        if log_loads() {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "ferrocuda: device {} loaded {prefix} from {} in {:.1} ms",
                self.device.ordinal,
                match source {
                    ModuleSource::MachineCode => "machine code",
                    ModuleSource::Ptx => "PTX (JIT)",
                },
                load.seconds * 1e3
            );
        }
        modules.insert(key, (loaded.clone(), load));
        Ok(loaded)
    }

    /// How the module holding the kernels of Rust module `module` was loaded on this
    /// device, or `None` before its first kernel was used.
    pub fn module_source(&self, module: &str) -> Option<ModuleSource> {
        let (_, image) = registered_prefix(module)?;
        lock(&self.device.modules)
            .get(&(image.ptx.as_ptr() as usize))
            .map(|(_, load)| load.source)
    }

    /// The modules this device has loaded so far (one per domain whose kernels were
    /// used or preloaded), by prefix: which, how, and how long it took.
    pub fn loaded_modules(&self) -> Vec<ModuleLoad> {
        let modules = lock(&self.device.modules);
        let mut loads: Vec<ModuleLoad> = modules.values().map(|&(_, load)| load).collect();
        drop(modules);
        loads.sort_by(|a, b| a.prefix.cmp(b.prefix));
        loads
    }

    /// Looks up a kernel (cached after the first call).
    fn function<S: Signature>(&self, kernel: &Kernel<S>) -> Result<CudaFunction> {
        self.function_in(kernel.module(), kernel.name())
    }

    /// Looks up kernel `name` declared in Rust module `module` (cached).
    pub(crate) fn function_in(
        &self,
        module: &'static str,
        name: &'static str,
    ) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.device.functions).get(&(module, name)) {
            return Ok(f.clone());
        }
        let f = self.module(module)?.load_function(name).map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND {
                Error::KernelNotFound {
                    kernel: name,
                    status: DriverStatus(e),
                }
            } else {
                Error::Driver {
                    call: format!("cuModuleGetFunction({name})"),
                    status: DriverStatus(e),
                }
            }
        })?;
        lock(&self.device.functions).insert((module, name), f.clone());
        Ok(f)
    }

    /// Records the kernel a later synchronisation names if a fault surfaces.
    pub(crate) fn set_last_kernel(&self, name: &'static str) {
        *lock(&self.state.last_kernel) = name;
    }

    /// Loads a declared kernel (an entry of `ferrocuda_kernels::abi::KERNELS`) now: its
    /// module is registered and the PTX holds it, or the error says which is missing.
    pub fn load_declared(&self, info: &ferrocuda_kernels::abi::KernelInfo) -> Result<()> {
        self.function_in(info.module, info.name).map(drop)
    }

    /// Loads the module holding the kernels declared in Rust module `module` (such as
    /// `ferrocuda_kernels::dense`: that domain only) now, so that a timed region that
    /// follows does not pay for loading it (a PTX-only module is JIT-compiled here).
    pub fn preload_module(&self, module: &'static str) -> Result<()> {
        self.module(module).map(drop)
    }

    /// [`Gpu::preload_module`] for each of `modules`.
    pub fn preload_modules(&self, modules: &[&'static str]) -> Result<()> {
        modules.iter().try_for_each(|m| self.preload_module(m))
    }

    /// Loads the module of `kernel` and looks the kernel up now, so that a later launch
    /// (or a timed region) does not pay for it.
    pub fn preload<S: Signature>(&self, kernel: &Kernel<S>) -> Result<()> {
        self.function(kernel).map(drop)
    }

    /// Launches `kernel` with `args` on this stream. The arguments are the kernel's
    /// declared parameters by name, so their number, types and order are checked by the
    /// compiler; device memory enters as [`ferrocuda_kernels::abi::In`] (read) or
    /// [`ferrocuda_kernels::abi::Out`] (written), borrowed from buffers.
    ///
    /// # Safety
    /// The launch is only as safe as what the kernel does with its arguments: every
    /// index it derives from them (lengths, strides, offsets, the grid) must stay inside
    /// the buffers it was given, and buffers it writes must not be read or written by
    /// other work while it runs. Each kernel has one safe wrapper in the library that
    /// checks this; it is the only caller.
    pub unsafe fn launch<S: Signature>(
        &self,
        kernel: &Kernel<S>,
        cfg: LaunchConfig,
        args: S::Args<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_via(kernel, cfg, args, result::launch_kernel) }
    }

    /// The body of [`Gpu::launch`] and [`Gpu::launch_cooperative`]: validates, looks the
    /// kernel up, binds the context, launches with `how`, records the kernel's name.
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    unsafe fn launch_via<S: Signature>(
        &self,
        kernel: &Kernel<S>,
        cfg: LaunchConfig,
        args: S::Args<'_>,
        how: LaunchFn,
    ) -> Result<()> {
        let name = kernel.name();
        cfg.validate(name)?;
        let f = self.function(kernel)?;
        self.bind()?;
        // SAFETY: the parameter pointers come from the declaration's own field list
        // (`KernelArgs`); the rest is forwarded from the caller.
        args.with_params(|params| unsafe {
            how(
                f.cu_function(),
                cfg.grid,
                cfg.block,
                cfg.shared_bytes,
                self.state.stream.cu_stream(),
                params,
            )
        })
        .map_err(|e| Error::Launch {
            kernel: name,
            status: DriverStatus(e),
        })?;
        self.set_last_kernel(name);
        Ok(())
    }

    /// Launches `kernel` cooperatively on this stream (`cuLaunchCooperativeKernel`): all
    /// blocks are resident at once, or the launch fails, so the kernel may synchronise the
    /// whole grid. Size the grid with [`Gpu::resident_blocks`].
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub unsafe fn launch_cooperative<S: Signature>(
        &self,
        kernel: &Kernel<S>,
        cfg: LaunchConfig,
        args: S::Args<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_via(kernel, cfg, args, result::launch_cooperative_kernel) }
    }

    /// Lets `kernel` use up to `bytes` of dynamic shared memory per block
    /// (`cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`): above 48 KiB the driver
    /// wants this opt-in before the launch.
    pub fn allow_dynamic_shared<S: Signature>(
        &self,
        kernel: &Kernel<S>,
        bytes: usize,
    ) -> Result<()> {
        let f = self.function(kernel)?;
        self.bind()?;
        let value = i32::try_from(bytes).map_err(|_| Error::InvalidLaunch {
            kernel: kernel.name(),
            reason: format!("{bytes} bytes of dynamic shared memory"),
        })?;
        check(
            f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            ),
            || {
                format!(
                    "cuFuncSetAttribute({}, MAX_DYNAMIC_SHARED_SIZE_BYTES, {bytes})",
                    kernel.name()
                )
            },
        )
    }

    /// How many blocks of `threads` threads and `shared_bytes` bytes of dynamic shared
    /// memory of `kernel` can be resident on the whole device at once (multiprocessors x
    /// the occupancy calculator's blocks per multiprocessor): the largest cooperative grid.
    pub fn resident_blocks<S: Signature>(
        &self,
        kernel: &Kernel<S>,
        threads: u32,
        shared_bytes: usize,
    ) -> Result<usize> {
        let f = self.function(kernel)?;
        let kernel = kernel.name();
        self.bind()?;
        let per_sm = check(
            f.occupancy_max_active_blocks_per_multiprocessor(threads, shared_bytes, None),
            || format!("cuOccupancyMaxActiveBlocksPerMultiprocessor({kernel})"),
        )?;
        Ok(per_sm as usize * self.multiprocessors()?)
    }

    /// Runs `f` with a device scratch area of at least `bytes` bytes, reused across
    /// calls on this stream (stream order makes reuse safe). Grows only when a larger
    /// area is asked for, so steady-state loops allocate nothing. Growing while the
    /// stream is being captured into a graph is an error (run the work once first).
    pub fn with_scratch<R, E: From<Error>>(
        &self,
        bytes: usize,
        f: impl FnOnce(u64) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let mut slot = lock(&self.state.scratch);
        let big_enough = slot.as_ref().is_some_and(|a| a.bytes() >= bytes);
        if !big_enough {
            if self.is_capturing()? {
                return Err(Error::Capture {
                    reason: format!(
                        "the reduction scratch must grow to {bytes} bytes during capture; run the same work once before capturing"
                    ),
                }
                .into());
            }
            *slot = Some(Arc::new(Allocation::new(self, bytes.max(256))?));
        }
        let ptr = slot.as_ref().map_or(0, |a| a.ptr());
        f(ptr)
    }

    /// [`Gpu::with_scratch`] as a typed view of `len` elements of `T` (contents
    /// unspecified).
    pub fn with_scratch_of<T: bytemuck::Pod, R, E: From<Error>>(
        &self,
        len: usize,
        f: impl FnOnce(&mut crate::DeviceViewMut<'_, T>) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let bytes = self.bytes_of::<T>(len)?;
        self.with_scratch(bytes, |ptr| {
            // SAFETY: the scratch area holds at least `bytes` bytes, is this stream's
            // alone and stays allocated while `f` runs (stream order covers its work).
            let mut view = unsafe { crate::memory::DeviceViewMut::from_raw(self, ptr, len) };
            f(&mut view)
        })
    }

    /// The scratch area as it is now (graphs keep it alive).
    pub(crate) fn current_scratch(&self) -> Option<Arc<Allocation>> {
        lock(&self.state.scratch).clone()
    }

    /// Whether this stream is capturing into a graph.
    pub fn is_capturing(&self) -> Result<bool> {
        let status = check(self.state.stream.capture_status(), || {
            "cuStreamIsCapturing".into()
        })?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }
}

impl StreamState {
    fn new(device: &Arc<Device>) -> Result<Arc<StreamState>> {
        Self::with_priority(device, None)
    }

    /// A stream of `device`, with `priority` (lower is more urgent) where given.
    fn with_priority(device: &Arc<Device>, priority: Option<i32>) -> Result<Arc<StreamState>> {
        let stream = match priority {
            None => check(device.ctx.new_stream(), || "cuStreamCreate".into())?,
            Some(p) => check(device.ctx.new_stream_with_priority(p), || {
                format!("cuStreamCreateWithPriority({p})")
            })?,
        };
        let state = Arc::new(StreamState {
            stream,
            last_kernel: Mutex::new("(none)"),
            scratch: Mutex::new(None),
        });
        let mut streams = lock(&device.streams);
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(&state));
        Ok(state)
    }
}

thread_local! {
    static HOST_WAITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times this thread has waited for the GPU so far: stream synchronisations
/// (every download is one), event waits ([`crate::EventTimer::elapsed_ms`],
/// [`crate::Snapshots::read`]). Take the difference around a call to count its round
/// trips (GMRES's per cycle, for example).
pub fn host_waits() -> u64 {
    HOST_WAITS.with(|c| c.get())
}

pub(crate) fn count_host_wait() {
    HOST_WAITS.with(|c| c.set(c.get() + 1));
}
