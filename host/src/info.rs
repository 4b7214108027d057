//! Device properties as the driver reports them (the platform-parameter queries of
//! seed 002).

use cudarc::driver::sys::{self, CUdevice_attribute as A};
use serde::Serialize;

use crate::error::{Result, check};
use crate::gpu::{Gpu, device_count};

/// What the driver tells about one device. Sizes in bytes, clocks in kHz.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
    /// Peak SM clock in kHz (None where the driver no longer reports it).
    pub sm_clock_khz: Option<i32>,
    /// Peak memory clock in kHz.
    pub memory_clock_khz: Option<i32>,
    /// Global memory bus width in bits.
    pub memory_bus_bits: i32,
    /// Global memory in bytes.
    pub total_memory_bytes: usize,
    /// L2 cache in bytes.
    pub l2_cache_bytes: i32,
    /// Shared memory a block may use without opting in.
    pub shared_memory_per_block: i32,
    /// Shared memory a block may use after opting in.
    pub shared_memory_per_block_optin: i32,
    /// Shared memory per multiprocessor.
    pub shared_memory_per_multiprocessor: i32,
    /// 32-bit registers per block.
    pub registers_per_block: i32,
    /// 32-bit registers per multiprocessor.
    pub registers_per_multiprocessor: i32,
    /// Threads per block.
    pub max_threads_per_block: i32,
    /// Resident threads per multiprocessor.
    pub max_threads_per_multiprocessor: i32,
    /// Resident blocks per multiprocessor.
    pub max_blocks_per_multiprocessor: i32,
    /// Threads per warp.
    pub warp_size: i32,
    /// Copy engines that can overlap with kernels.
    pub async_engines: i32,
    /// Whether ECC is on.
    pub ecc_enabled: bool,
    /// PCI domain:bus:device.
    pub pci_bus_id: String,
    /// Driver's CUDA version, e.g. 13000 for 13.0.
    pub driver_cuda_version: i32,
}

/// Version of the installed driver's CUDA API (e.g. 13000), without opening a context.
pub fn driver_cuda_version() -> Result<i32> {
    device_count()?;
    let mut v = 0;
    // SAFETY: writes one int.
    check(unsafe { sys::cuDriverGetVersion(&mut v) }.result(), || {
        "cuDriverGetVersion".into()
    })?;
    Ok(v)
}

impl Gpu {
    /// Queries this device's properties.
    pub fn info(&self) -> Result<DeviceInfo> {
        let ctx = self.context();
        let attr = |a: A| check(ctx.attribute(a), || format!("cuDeviceGetAttribute({a:?})"));
        let opt = |a: A| ctx.attribute(a).ok().filter(|&v| v > 0);
        Ok(DeviceInfo {
            ordinal: self.ordinal(),
            name: self.name()?,
            compute_capability: check(ctx.compute_capability(), || {
                "cuDeviceGetAttribute(compute capability)".into()
            })?,
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            sm_clock_khz: opt(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            memory_clock_khz: opt(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            total_memory_bytes: check(ctx.total_mem(), || "cuDeviceTotalMem".into())?,
            l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            shared_memory_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            shared_memory_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            shared_memory_per_multiprocessor: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            registers_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            registers_per_multiprocessor: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            )?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_multiprocessor: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            max_blocks_per_multiprocessor: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            )?,
            warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            async_engines: attr(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?,
            ecc_enabled: attr(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED)? != 0,
            pci_bus_id: format!(
                "{:04x}:{:02x}:{:02x}",
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
            ),
            driver_cuda_version: driver_cuda_version()?,
        })
    }
}

impl DeviceInfo {
    /// Theoretical DRAM bandwidth in bytes/s: memory clock x 2 (double data rate) x bus
    /// width. A datasheet-style lead; measured copy bandwidth is the ceiling to quote.
    pub fn theoretical_dram_bandwidth(&self) -> Option<f64> {
        self.memory_clock_khz
            .map(|khz| khz as f64 * 1e3 * 2.0 * self.memory_bus_bits as f64 / 8.0)
    }
}
