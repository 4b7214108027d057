//! Page-locked (pinned) host memory, which the copy engines read and write directly.

use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use cudarc::driver::{CudaContext, result};

use crate::error::{DriverStatus, Error, Result};
use crate::gpu::Gpu;

/// A zero-initialised array of `T` in page-locked host memory (`cuMemHostAlloc`), freed
/// on drop. Copies between it and a [`crate::DeviceBuffer`] run at the link's speed
/// without the driver's staging copy that pageable memory needs.
///
/// ```no_run
/// # fn main() -> ferrocuda_host::Result<()> {
/// # let gpu: ferrocuda_host::Gpu = unimplemented!();
/// let mut host = gpu.alloc_pinned::<f32>(1 << 20)?;
/// host.as_mut_slice()[0] = 1.0;
/// let mut dev = gpu.alloc::<f32>(1 << 20)?;
/// dev.copy_from_host(host.as_slice())?;
/// # Ok(()) }
/// ```
pub struct PinnedBuffer<T> {
    ctx: Arc<CudaContext>,
    ptr: *mut T,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its memory like a `Vec<T>`.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: shared access only reads.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .finish()
    }
}

impl Gpu {
    /// Allocates `len` zeroed elements of page-locked host memory.
    pub fn alloc_pinned<T: Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let bytes = self.bytes_of::<T>(len)?;
        self.bind()?;
        let ptr = if bytes == 0 {
            std::ptr::NonNull::<T>::dangling().as_ptr()
        } else {
            // SAFETY: plain allocation; flags 0 (cached, not portable).
            let p = unsafe { result::malloc_host(bytes, 0) }.map_err(|e| Error::Driver {
                call: format!("cuMemHostAlloc({bytes} bytes)"),
                status: DriverStatus(e),
            })? as *mut T;
            // SAFETY: `bytes` bytes were just allocated; all-zero is a valid `T: Pod`.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes) };
            p
        };
        Ok(PinnedBuffer {
            ctx: self.context().clone(),
            ptr,
            len,
            _t: PhantomData,
        })
    }
}

impl<T> PinnedBuffer<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` initialised elements owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The contents, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if self.len == 0 || size_of::<T>() == 0 || self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: allocated by cuMemHostAlloc; every copy from or into it was synchronised
        // before the borrow that queued it ended (DeviceBuffer's copies wait).
        let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}
