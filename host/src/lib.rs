//! The GPU runtime of ferrocuda: a small, typed, safe layer over cudarc's driver API.
//!
//! It knows nothing of numerics: a [`Gpu`] (device context, stream, module cache),
//! typed [`DeviceBuffer`]s and views, page-locked host memory ([`PinnedBuffer`]),
//! [`LaunchConfig`] and the one `unsafe` launch path, which takes a kernel's typed
//! handle and its arguments by name ([`Gpu::launch`], handles from `ferrocuda-kernels`;
//! modules registered with [`register_module`] by domain and loaded lazily, each on the
//! first launch of one of its kernels),
//! [`EventTimer`], CUDA-graph capture ([`Graph`]), device queries ([`DeviceInfo`]), NCCL
//! communicators on their own streams ([`NcclComm`]), the vendor libraries used as
//! baselines ([`vendor`]: cuSPARSE, cuRAND, cuBLAS, cuSOLVER) and
//! one [`Error`] type whose messages name the failing driver call or kernel.
//!
//! The driver is loaded at run time (`dynamic-loading`): programs build and start with
//! no CUDA installed, and [`Gpu::new`] returns [`Error::NoDevice`] there.
#![deny(missing_docs)]

mod error;
mod gpu;
mod graph;
mod info;
mod launch;
mod memory;
mod modules;
mod nccl;
mod pinned;
mod timing;
pub mod vendor;

pub use bytemuck::Pod;
pub use error::{DriverStatus, Error, Result, check_device, check_len};
pub use ferrocuda_kernels::abi::{In, Kernel, Out};
pub use gpu::{Gpu, ModuleLoad, ModuleSource, device_count, driver_present, host_waits};
pub use graph::Graph;
pub use info::{DeviceInfo, PcieLink, driver_cuda_version};
pub use launch::{LaunchConfig, MAX_BLOCK_THREADS, MAX_GRID_X, MAX_GRID_YZ};
pub use memory::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, copy_device,
    copy_host_to_window, copy_window_to_host,
};
pub use modules::{
    ModuleImage, register_module, register_ptx, registered_module, registered_prefix,
    registered_ptx,
};
pub use nccl::{NcclComm, NcclId, NcclScalar, nccl_available, nccl_version};
pub use pinned::{PinnedBuffer, Snapshots};
pub use timing::EventTimer;

/// Version of the CUDA driver API these bindings were generated for.
pub const CUDA_BINDINGS_VERSION: &str = "12.8";
