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

impl<T: Pod> PinnedBuffer<T> {
    /// The same allocation as `len` elements of `U` (at most its bytes; cuMemHostAlloc
    /// aligns to pages); `None` where it does not hold them.
    fn recast<U: Pod>(self, len: usize) -> Option<PinnedBuffer<U>> {
        let bytes = self.len.checked_mul(size_of::<T>())?;
        if len == 0 || size_of::<U>() == 0 || len.checked_mul(size_of::<U>())? > bytes {
            return None;
        }
        let me = std::mem::ManuallyDrop::new(self);
        Some(PinnedBuffer {
            // SAFETY: moved out of `me`, which is never used or dropped again.
            ctx: unsafe { std::ptr::read(&me.ctx) },
            ptr: me.ptr as *mut U,
            len,
            _t: PhantomData,
        })
    }
}

/// Page-locked buffers the device cache keeps at most.
const PINNED_CACHE: usize = 8;

impl Gpu {
    /// `len` elements of page-locked host memory, from this device's cache of buffers
    /// given back ([`Gpu::give_pinned`]) where one is large enough, else newly allocated:
    /// allocating page-locked memory takes long enough to show in a call that needs a
    /// few values of it each time. The contents are unspecified.
    pub fn take_pinned<T: Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let bytes = self.bytes_of::<T>(len)?;
        if bytes > 0 {
            let mut cache = self
                .device()
                .pinned_cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(at) = cache.iter().position(|b| b.len() >= bytes) {
                let b = cache.swap_remove(at);
                drop(cache);
                let total = b.len();
                return match b.recast::<T>(len) {
                    Some(t) => Ok(t),
                    None => Err(Error::InvalidArgument {
                        op: "Gpu::take_pinned",
                        reason: format!(
                            "a cached buffer of {total} bytes does not hold {len} elements"
                        ),
                    }),
                };
            }
        }
        self.alloc_pinned(len)
    }

    /// Gives `buf` to this device's cache for a later [`Gpu::take_pinned`] (the copies
    /// from or into it must have completed). The cache keeps a few, the largest.
    pub fn give_pinned<T: Pod>(&self, buf: PinnedBuffer<T>) {
        let bytes = buf.len().saturating_mul(size_of::<T>());
        let Some(b) = buf.recast::<u8>(bytes) else {
            return;
        };
        let mut cache = self
            .device()
            .pinned_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.push(b);
        if cache.len() > PINNED_CACHE {
            let smallest = (0..cache.len())
                .min_by_key(|&i| cache[i].len())
                .expect("not empty");
            cache.swap_remove(smallest);
        }
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

/// Copies of a few device values taken on a stream without waiting for it, for a host
/// that looks at the GPU's progress while more work stays queued: [`Snapshots::take`]
/// enqueues a copy into the next page-locked slot and marks it with an event;
/// [`Snapshots::read`] waits for that event only. The slots are reused in turn, so a
/// slot's copy should be read before as many more are taken.
pub struct Snapshots<T> {
    gpu: Gpu,
    len: usize,
    slots: Vec<(PinnedBuffer<T>, cudarc::driver::CudaEvent)>,
    next: usize,
}

impl<T> std::fmt::Debug for Snapshots<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshots").field("len", &self.len).finish()
    }
}

impl Gpu {
    /// `slots` page-locked copies of `len` elements each, taken on this stream.
    pub fn snapshots<T: Pod>(&self, len: usize, slots: usize) -> Result<Snapshots<T>> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let slots = (0..slots.max(1))
            .map(|_| {
                let event = crate::error::check(self.context().new_event(flags), || {
                    "cuEventCreate".into()
                })?;
                Ok((self.alloc_pinned::<T>(len)?, event))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Snapshots {
            gpu: self.clone(),
            len,
            slots,
            next: 0,
        })
    }
}

impl<T: Pod> Snapshots<T> {
    /// [`Gpu::snapshots`] in page-locked buffers from the device's cache
    /// ([`Gpu::take_pinned`]); [`Snapshots::release`] gives them back.
    pub fn cached(gpu: &Gpu, len: usize, slots: usize) -> Result<Snapshots<T>> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let slots = (0..slots.max(1))
            .map(|_| {
                let event =
                    crate::error::check(gpu.context().new_event(flags), || "cuEventCreate".into())?;
                Ok((gpu.take_pinned::<T>(len)?, event))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Snapshots {
            gpu: gpu.clone(),
            len,
            slots,
            next: 0,
        })
    }

    /// Waits for the copies in flight and gives the page-locked slots to the device's
    /// cache ([`Gpu::give_pinned`]); `false` where a wait failed (that slot is freed, not
    /// cached).
    pub fn release(mut self) -> bool {
        let mut all = true;
        for (host, event) in std::mem::take(&mut self.slots) {
            if event.synchronize().is_ok() {
                self.gpu.give_pinned(host);
            } else {
                all = false;
            }
        }
        all
    }

    /// Enqueues a copy of `src` (the snapshots' length, on their stream) into the next
    /// slot, after the work queued so far; returns the slot.
    pub fn take(&mut self, src: &impl crate::DeviceSlice<T>) -> Result<usize> {
        crate::error::check_len("Snapshots::take", "src", self.len, src.len())?;
        if !src.gpu().same_stream(&self.gpu) {
            return Err(Error::InvalidArgument {
                op: "Snapshots::take",
                reason: "the source belongs to another stream than the snapshots".into(),
            });
        }
        let slot = self.next;
        self.next = (self.next + 1) % self.slots.len();
        let (host, event) = &mut self.slots[slot];
        if self.len > 0 {
            self.gpu.bind()?;
            // SAFETY: lengths checked; the pinned slot lives in self, and every copy into
            // it is waited for before it is read (`read` takes &mut self), reused (copies
            // on one stream run in order) or freed (Drop waits).
            unsafe {
                result::memcpy_dtoh_async(
                    host.as_mut_slice(),
                    src.device_ptr(),
                    self.gpu.cu_stream(),
                )
            }
            .map_err(|e| self.gpu.after_kernel("cuMemcpyDtoHAsync", e))?;
        }
        crate::error::check(event.record(self.gpu.cuda_stream()), || {
            "cuEventRecord".into()
        })?;
        Ok(slot)
    }

    /// Waits for the copy last taken into `slot` and returns it.
    pub fn read(&mut self, slot: usize) -> Result<&[T]> {
        let (host, event) = self.slots.get(slot).ok_or_else(|| Error::InvalidArgument {
            op: "Snapshots::read",
            reason: format!("slot {slot} of {}", self.slots.len()),
        })?;
        crate::gpu::count_host_wait();
        event
            .synchronize()
            .map_err(|e| self.gpu.after_kernel("cuEventSynchronize", e))?;
        Ok(host.as_slice())
    }
}

impl<T> Drop for Snapshots<T> {
    fn drop(&mut self) {
        // A copy still in flight must land before its pinned slot is freed.
        for (_, event) in &self.slots {
            let _ = event.synchronize();
        }
    }
}
