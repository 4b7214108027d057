//! Opening a GPU with ferrocuda's kernels, and the runtime types re-exported.

pub use ferrocuda_host::{
    CUDA_BINDINGS_VERSION, DeviceBuffer, DeviceInfo, DeviceSlice, DeviceSliceMut, DeviceView,
    DeviceViewMut, EventTimer, Gpu, Graph, LaunchConfig, ModuleImage, ModuleSource, NcclComm,
    NcclId, PcieLink, PinnedBuffer, Snapshots, copy_device, device_count, driver_cuda_version,
    driver_present, host_waits, nccl_available, nccl_version, register_module,
};

use crate::error::Result;
use crate::kernels::MODULES;

/// Registers the embedded kernel modules with the runtime (once): the kernels declared
/// in `ferrocuda_kernels::<domain>` load from the domain's module in [`MODULES`]
/// (machine code, or PTX), on first use.
pub fn register_modules() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for m in MODULES {
            m.register();
        }
    });
}

/// Loads the kernel modules of `domains` (`"blas1"`, `"krylov"`, ... of
/// [`crate::kernels::MODULES`]) on the device of `gpu` now, so that a timed region that
/// follows does not include loading them (a JIT compile, for a PTX-only build or with
/// `FERROCUDA_LOAD_PTX=1`). Each algorithm calls it for the domains it launches kernels
/// of before it starts its clocks.
pub(crate) fn preload(gpu: &Gpu, domains: &[&'static str]) -> Result<()> {
    register_modules();
    for &domain in domains {
        let module = crate::kernels::module(domain)
            .ok_or(ferrocuda_host::Error::NoModule { module: domain })?;
        gpu.preload_module(module.prefix)?;
    }
    Ok(())
}

/// Opens device `ordinal` with ferrocuda's embedded kernels.
///
/// ```
/// match ferrocuda::gpu::open(0) {
///     Ok(gpu) => println!("running on {}", gpu.name().unwrap()),
///     Err(e) if e.is_no_device() => println!("no GPU here: {e}"),
///     Err(e) => panic!("{e}"),
/// }
/// ```
pub fn open(ordinal: usize) -> Result<Gpu> {
    register_modules();
    Ok(Gpu::new(ordinal)?)
}

/// Device count, 0 where there is no CUDA driver.
pub fn count() -> usize {
    device_count().unwrap_or(0)
}
