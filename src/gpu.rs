//! Opening a GPU with ferrocuda's kernels, and the runtime types re-exported.

pub use ferrocuda_host::{
    CUDA_BINDINGS_VERSION, DeviceBuffer, DeviceInfo, DeviceSlice, DeviceSliceMut, DeviceView,
    DeviceViewMut, EventTimer, Gpu, Graph, LaunchConfig, ModuleImage, ModuleSource, NcclComm,
    NcclId, PcieLink, PinnedBuffer, copy_device, device_count, driver_cuda_version, driver_present,
    nccl_available, nccl_version, register_module,
};

use crate::error::Result;
use crate::kernels::{FATBIN, FATBIN_SM90, PTX, PTX_SM90};

/// Registers the embedded kernel modules with the runtime (once): kernels declared in
/// `ferrocuda_kernels` load from [`FATBIN`] (machine code) or [`PTX`], the Hopper-only
/// ones from [`FATBIN_SM90`] or [`PTX_SM90`].
pub fn register_modules() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        ferrocuda_host::register_module(
            "ferrocuda_kernels",
            ModuleImage {
                ptx: PTX,
                fatbin: FATBIN,
            },
        );
        ferrocuda_host::register_module(
            "ferrocuda_kernels::hopper",
            ModuleImage {
                ptx: PTX_SM90,
                fatbin: FATBIN_SM90,
            },
        );
    });
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
