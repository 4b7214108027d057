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
    /// The PCIe link to the host as Linux reports it (`/sys/bus/pci/devices/<id>/`), or
    /// `None` where that is not readable (no sysfs, a container without it, not PCIe).
    pub pcie: Option<PcieLink>,
}

/// A PCIe link: the speed per lane and the lane count, now and at most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PcieLink {
    /// Transfer rate per lane now, GT/s (an idle GPU may have trained the link down).
    pub current_gts: f64,
    /// Lanes now.
    pub current_width: u32,
    /// Highest rate per lane the device supports, GT/s.
    pub max_gts: f64,
    /// Most lanes the device supports.
    pub max_width: u32,
}

impl PcieLink {
    /// Parses sysfs's `current_link_speed`, `current_link_width`, `max_link_speed` and
    /// `max_link_width` texts (e.g. `"16.0 GT/s PCIe"`, `"16"`).
    ///
    /// ```
    /// let l = ferrocuda_host::PcieLink::parse("32.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16").unwrap();
    /// assert_eq!((l.generation(), l.current_width), (Some(5), 16));
    /// ```
    pub fn parse(
        current_speed: &str,
        current_width: &str,
        max_speed: &str,
        max_width: &str,
    ) -> Option<PcieLink> {
        let gts = |s: &str| {
            s.split_whitespace()
                .next()?
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0)
        };
        let width = |s: &str| s.trim().parse::<u32>().ok().filter(|w| *w > 0);
        Some(PcieLink {
            current_gts: gts(current_speed)?,
            current_width: width(current_width)?,
            max_gts: gts(max_speed)?,
            max_width: width(max_width)?,
        })
    }

    /// PCIe generation of a per-lane rate: 2.5 GT/s is 1, 5 is 2, 8 is 3, 16 is 4, 32 is
    /// 5, 64 is 6.
    pub fn generation_of(gts: f64) -> Option<u32> {
        [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .position(|&g| (gts - g).abs() < 0.1)
            .map(|i| i as u32 + 1)
    }

    /// Generation of the link now.
    pub fn generation(&self) -> Option<u32> {
        Self::generation_of(self.current_gts)
    }

    /// Payload-independent line rate in bytes/s per direction of `lanes` lanes at `gts`:
    /// `gts x lanes x encoding / 8`, encoding 8b/10b up to 5 GT/s, 128b/130b from 8 to
    /// 32 GT/s, 242/256 (FLIT) at 64 GT/s. Packet headers cost a few percent more, so
    /// no transfer reaches it.
    pub fn bandwidth_of(gts: f64, lanes: u32) -> f64 {
        let encoding = if gts <= 5.0 {
            0.8
        } else if gts <= 32.0 {
            128.0 / 130.0
        } else {
            242.0 / 256.0
        };
        gts * 1e9 * lanes as f64 * encoding / 8.0
    }

    /// Line rate per direction at the highest speed and width both ends of this
    /// device's side support (the link trains up under load), bytes/s.
    pub fn max_bandwidth(&self) -> f64 {
        Self::bandwidth_of(self.max_gts, self.max_width)
    }

    /// Line rate per direction of the link as it is now, bytes/s.
    pub fn current_bandwidth(&self) -> f64 {
        Self::bandwidth_of(self.current_gts, self.current_width)
    }
}

/// Reads the link of the PCI function `domain:bus:device.0` from sysfs.
fn pcie_link(domain: i32, bus: i32, device: i32) -> Option<PcieLink> {
    let dir = std::path::PathBuf::from(format!(
        "/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.0"
    ));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    PcieLink::parse(
        &read("current_link_speed")?,
        &read("current_link_width")?,
        &read("max_link_speed")?,
        &read("max_link_width")?,
    )
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
    /// `(major, minor)` compute capability (two attribute queries; cheaper than
    /// [`Gpu::info`]).
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        check(self.context().compute_capability(), || {
            "cuDeviceGetAttribute(compute capability)".into()
        })
    }

    /// Number of streaming multiprocessors (one attribute query).
    pub fn multiprocessors(&self) -> Result<usize> {
        let ctx = self.context();
        let v = check(
            ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            || "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)".into(),
        )?;
        Ok(usize::try_from(v).unwrap_or(1).max(1))
    }

    /// Largest dynamic shared memory one block may opt in to, in bytes (one attribute
    /// query).
    pub fn shared_memory_per_block_optin(&self) -> Result<usize> {
        let ctx = self.context();
        let v = check(
            ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            || "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)".into(),
        )?;
        Ok(usize::try_from(v).unwrap_or(0))
    }

    /// Queries this device's properties.
    pub fn info(&self) -> Result<DeviceInfo> {
        let ctx = self.context();
        let attr = |a: A| check(ctx.attribute(a), || format!("cuDeviceGetAttribute({a:?})"));
        let opt = |a: A| ctx.attribute(a).ok().filter(|&v| v > 0);
        let (domain, bus, device) = (
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
        );
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
            pci_bus_id: format!("{domain:04x}:{bus:02x}:{device:02x}"),
            driver_cuda_version: driver_cuda_version()?,
            pcie: pcie_link(domain, bus, device),
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
