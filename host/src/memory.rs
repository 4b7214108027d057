//! Device memory: raw allocations and the typed [`DeviceBuffer`] with its views.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytemuck::Pod;
use cudarc::driver::{CudaStream, result, sys};
use ferrocuda_kernels::abi::{In, Out};

use crate::error::{DriverStatus, Error, Result};
use crate::gpu::{Device, Gpu};

/// Raw device memory, freed in stream order on the stream that allocated it. Holds
/// only what freeing needs (no `Gpu`), so a stream's scratch area does not keep its
/// own stream alive.
pub(crate) struct Allocation {
    device: Arc<Device>,
    stream: Arc<CudaStream>,
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl Allocation {
    pub(crate) fn new(gpu: &Gpu, bytes: usize) -> Result<Self> {
        let (device, stream) = (gpu.device().clone(), gpu.cuda_stream().clone());
        if bytes == 0 {
            return Ok(Allocation {
                device,
                stream,
                ptr: 0,
                bytes: 0,
            });
        }
        gpu.bind()?;
        // SAFETY: plain stream-ordered allocation on a live stream.
        let mut got = unsafe { result::malloc_async(gpu.cu_stream(), bytes) };
        if got
            .as_ref()
            .is_err_and(|e| DriverStatus(*e).is_out_of_memory())
        {
            // The pool keeps freed memory (`Gpu::trim_memory_pool`): give it back and
            // try once more.
            gpu.trim_memory_pool()?;
            // SAFETY: as above.
            got = unsafe { result::malloc_async(gpu.cu_stream(), bytes) };
        }
        let ptr = got.map_err(|e| {
            let status = DriverStatus(e);
            if status.is_out_of_memory() {
                let (free, total) = gpu.memory_info().unwrap_or((0, 0));
                Error::OutOfMemory {
                    ordinal: gpu.ordinal(),
                    requested: bytes,
                    free,
                    total,
                }
            } else {
                Error::Driver {
                    call: format!("cuMemAllocAsync({bytes} bytes)"),
                    status,
                }
            }
        })?;
        Ok(Allocation {
            device,
            stream,
            ptr,
            bytes,
        })
    }

    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if self.ptr == 0 || self.device.ctx.bind_to_thread().is_err() {
            return;
        }
        // With several streams, a kernel on another stream may still read this memory:
        // order the free after their work. Errors cannot be reported from drop.
        if self.device.multi_stream.load(Ordering::SeqCst) {
            self.device.order_after_other_streams(&self.stream);
        }
        // SAFETY: allocated by malloc_async on this stream; work queued on it before
        // this free still sees the memory (stream order).
        let _ = unsafe { result::free_async(self.ptr, self.stream.cu_stream()) };
    }
}

mod sealed {
    /// Only this crate's buffers and views are device slices: the launch path trusts
    /// their address and length, so user code must not be able to make up one.
    pub trait Sealed {}
}

/// Anything the GPU can read: a buffer or a view of one. Sealed: implemented only by
/// [`DeviceBuffer`], [`DeviceView`] and [`DeviceViewMut`], whose address and length
/// always describe memory they own or borrow.
pub trait DeviceSlice<T>: sealed::Sealed {
    /// Elements.
    fn len(&self) -> usize;
    /// Whether it holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device address of the first element (0 when empty). Reading it is harmless;
    /// kernels get pointers through [`DeviceSlice::as_in`] and
    /// [`DeviceSliceMut::as_out`].
    fn device_ptr(&self) -> u64;
    /// The device (and stream) it belongs to.
    fn gpu(&self) -> &Gpu;
    /// A read-only kernel argument pointing at the first element, borrowing `self`.
    fn as_in(&self) -> In<'_, T> {
        // SAFETY: the address is this slice's own memory (sealed trait), which stays
        // allocated and unwritten (shared borrow) while the pointer lives.
        unsafe { In::from_addr(self.device_ptr()) }
    }
}

/// Anything the GPU may write: a buffer or a mutable view. Having `&mut` of it is the
/// proof that no other operand aliases it.
pub trait DeviceSliceMut<T>: DeviceSlice<T> {
    /// A writable kernel argument pointing at the first element, borrowing `self`
    /// exclusively.
    fn as_out(&mut self) -> Out<'_, T> {
        // SAFETY: the address is this slice's own memory (sealed trait); the exclusive
        // borrow keeps every other handle to it away while the pointer lives.
        unsafe { Out::from_addr(self.device_ptr()) }
    }
}

/// A typed array in device memory. Its contents after [`Gpu::alloc`] are unspecified
/// (any bit pattern is a valid `T`, since `T: Pod`).
pub struct DeviceBuffer<T> {
    gpu: Gpu,
    mem: Allocation,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .field("device", &self.gpu.ordinal())
            .finish()
    }
}

fn resolve(range: impl RangeBounds<usize>, len: usize, op: &'static str) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::OutOfRange {
            op,
            start,
            end,
            len,
        });
    }
    Ok((start, end))
}

impl Gpu {
    /// The bytes of `len` elements of `T`; a count whose bytes overflow `usize` is an
    /// allocation no device can satisfy ([`Error::OutOfMemory`]), for every allocator.
    pub(crate) fn bytes_of<T>(&self, len: usize) -> Result<usize> {
        len.checked_mul(size_of::<T>()).ok_or(Error::OutOfMemory {
            ordinal: self.ordinal(),
            requested: usize::MAX,
            free: 0,
            total: 0,
        })
    }

    /// Allocates `len` elements with unspecified contents.
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = self.bytes_of::<T>(len)?;
        Ok(DeviceBuffer {
            gpu: self.clone(),
            mem: Allocation::new(self, bytes)?,
            len,
            _t: PhantomData,
        })
    }

    /// Allocates `len` elements set to all-zero bytes.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc::<T>(len)?;
        Gpu::memset_zero(&mut buf)?;
        Ok(buf)
    }

    /// Sets every byte of `buf` to zero on `buf`'s own stream with the driver's memset
    /// (`cuMemsetD8Async`: no kernel), without waiting. The copy engine's fill rate, the
    /// ceiling a fill kernel is compared with.
    pub fn memset_zero<T: Pod>(buf: &mut impl DeviceSliceMut<T>) -> Result<()> {
        let bytes = buf.len() * size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let gpu = buf.gpu();
        gpu.bind()?;
        // SAFETY: the sealed `DeviceSliceMut` is `len` elements of this device's memory,
        // borrowed exclusively here, so nobody else uses those bytes meanwhile.
        unsafe { result::memset_d8_async(buf.device_ptr(), 0, bytes, gpu.cu_stream()) }.map_err(
            |e| Error::Driver {
                call: format!("cuMemsetD8Async({bytes} bytes)"),
                status: DriverStatus(e),
            },
        )
    }

    /// Copies a host slice into a new device buffer.
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc::<T>(data.len())?;
        buf.copy_from_host(data)?;
        Ok(buf)
    }
}

impl<T: Pod> DeviceBuffer<T> {
    /// Copies `data` (same length) into the buffer. Returns once `data` may be reused.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        // SAFETY: the synchronisation below makes any source safe to reuse, pinned ones
        // included.
        unsafe { self.queue_htod("copy_from_host", data)? };
        self.gpu.synchronize()
    }

    /// [`copy_from_host`](Self::copy_from_host) without waiting for the copy: it is
    /// queued on the stream, ordered before later work, and the call returns as soon as
    /// the driver has taken `data` (saves a stream synchronisation per call, which shows
    /// in loops that upload a few scalars per iteration).
    ///
    /// # Safety
    /// `data` must be ordinary pageable memory (a `Vec`, a slice of one, a stack array),
    /// which the driver stages before returning; memory page-locked by any CUDA library
    /// would instead be read when the stream reaches the copy, so it would have to stay
    /// unchanged until then.
    pub unsafe fn copy_from_host_staged(&mut self, data: &[T]) -> Result<()> {
        // SAFETY: the caller guarantees a pageable source, which the driver copies to
        // staging memory before this returns.
        unsafe { self.queue_htod("copy_from_host_staged", data) }
    }

    /// Queues the copy of `data` (same length) into the buffer on its stream and returns
    /// at once: from page-locked memory ([`crate::PinnedBuffer`]) the copy engine reads
    /// `data` when the stream reaches the copy, with no wait on the host.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the stream has run the copy (e.g. until
    /// an event recorded after it has completed).
    pub unsafe fn copy_from_host_async(&mut self, data: &[T]) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.queue_htod("copy_from_host_async", data) }
    }

    /// Queues the copy of `data` (same length) into the buffer on its stream.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the stream has run the copy (always
    /// true for pageable memory, which the driver stages before returning).
    unsafe fn queue_htod(&mut self, op: &'static str, data: &[T]) -> Result<()> {
        crate::error::check_len(op, "host slice", self.len, data.len())?;
        if self.len == 0 {
            return Ok(());
        }
        let gpu = &self.gpu;
        gpu.bind()?;
        // SAFETY: lengths checked; the source's lifetime is the caller's promise.
        unsafe { result::memcpy_htod_async(self.mem.ptr, data, gpu.cu_stream()) }
            .map_err(|e| gpu.after_kernel("cuMemcpyHtoDAsync", e))
    }

    /// Copies the buffer into `out` (same length), waiting for pending work first.
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        crate::error::check_len("copy_to_host", "host slice", self.len, out.len())?;
        if self.len == 0 {
            return Ok(());
        }
        let gpu = &self.gpu;
        gpu.bind()?;
        // SAFETY: lengths checked; we synchronise before `out` is used again.
        unsafe { result::memcpy_dtoh_async(out, self.mem.ptr, gpu.cu_stream()) }
            .map_err(|e| gpu.after_kernel("cuMemcpyDtoHAsync", e))?;
        gpu.synchronize()
    }

    /// Copies the buffer into a new `Vec`.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        self.copy_to_host(&mut out)?;
        Ok(out)
    }

    /// Device-to-device copy of `src` (same length, same device) into this buffer,
    /// through the copy engine (`cuMemcpyDtoDAsync`).
    pub fn copy_from_device(&mut self, src: &impl DeviceSlice<T>) -> Result<()> {
        copy_device(src, self)
    }

    /// A read-only view of `range`.
    pub fn view(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, end) = resolve(range, self.len, "view")?;
        Ok(DeviceView {
            gpu: &self.gpu,
            ptr: self.mem.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            _t: PhantomData,
        })
    }

    /// A mutable view of `range`.
    pub fn view_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, end) = resolve(range, self.len, "view_mut")?;
        Ok(DeviceViewMut {
            gpu: &self.gpu,
            ptr: self.mem.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            _t: PhantomData,
        })
    }
}

/// `cuMemcpyDtoDAsync` between two device slices of the same length and device.
pub fn copy_device<T: Pod>(
    src: &impl DeviceSlice<T>,
    dst: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    crate::error::check_len("copy_device", "source", dst.len(), src.len())?;
    crate::error::check_device("copy_device", "source", dst.gpu(), src.gpu())?;
    if src.is_empty() {
        return Ok(());
    }
    let gpu = dst.gpu();
    gpu.bind()?;
    // SAFETY: both ranges are valid for len elements; &mut dst excludes aliasing.
    unsafe {
        result::memcpy_dtod_async(
            dst.device_ptr(),
            src.device_ptr(),
            src.len() * size_of::<T>(),
            gpu.cu_stream(),
        )
    }
    .map_err(|e| Error::Driver {
        call: "cuMemcpyDtoDAsync".into(),
        status: DriverStatus(e),
    })
}

impl<T> sealed::Sealed for DeviceBuffer<T> {}
impl<T> sealed::Sealed for DeviceView<'_, T> {}
impl<T> sealed::Sealed for DeviceViewMut<'_, T> {}

impl<T> DeviceSlice<T> for DeviceBuffer<T> {
    fn len(&self) -> usize {
        self.len
    }
    fn device_ptr(&self) -> u64 {
        self.mem.ptr
    }
    fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}
impl<T> DeviceSliceMut<T> for DeviceBuffer<T> {}

/// A read-only window into a [`DeviceBuffer`].
#[derive(Clone, Copy, Debug)]
pub struct DeviceView<'a, T> {
    gpu: &'a Gpu,
    ptr: u64,
    len: usize,
    _t: PhantomData<&'a T>,
}

/// A mutable window into a [`DeviceBuffer`].
#[derive(Debug)]
pub struct DeviceViewMut<'a, T> {
    gpu: &'a Gpu,
    ptr: u64,
    len: usize,
    _t: PhantomData<&'a mut T>,
}

impl<'a, T> DeviceViewMut<'a, T> {
    /// A view of `len` elements at `ptr` on `gpu`.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `T` on `gpu`'s device that nobody else
    /// accesses for `'a`.
    pub(crate) unsafe fn from_raw(gpu: &'a Gpu, ptr: u64, len: usize) -> Self {
        DeviceViewMut {
            gpu,
            ptr,
            len,
            _t: PhantomData,
        }
    }

    /// The part `range` of this window (e.g. one element of a [`DeviceViewMut::cast`]).
    /// Errors: `range` outside the window.
    pub fn into_range(self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'a, T>> {
        let (start, end) = resolve(range, self.len, "into_range")?;
        Ok(DeviceViewMut {
            gpu: self.gpu,
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            _t: PhantomData,
        })
    }
}

impl<'a, T: Pod> DeviceViewMut<'a, T> {
    /// The same bytes as elements of `U`, whose size divides `T`'s (a complex array as
    /// its real and imaginary parts, for a library that only knows real types).
    pub fn cast<U: Pod>(self) -> Result<DeviceViewMut<'a, U>> {
        let (t, u) = (size_of::<T>(), size_of::<U>());
        if u == 0 || t % u != 0 || align_of::<U>() > align_of::<T>().max(u) {
            return Err(Error::DimensionMismatch {
                op: "DeviceViewMut::cast",
                what: "element size",
                expected: t,
                found: u,
            });
        }
        Ok(DeviceViewMut {
            gpu: self.gpu,
            ptr: self.ptr,
            len: self.len * (t / u),
            _t: PhantomData,
        })
    }
}

// Both views are a (device, address, length) triple taken from a live buffer.
macro_rules! view_is_a_device_slice {
    ($($view:ident),*) => {$(
        impl<T> DeviceSlice<T> for $view<'_, T> {
            fn len(&self) -> usize {
                self.len
            }
            fn device_ptr(&self) -> u64 {
                self.ptr
            }
            fn gpu(&self) -> &Gpu {
                self.gpu
            }
        }
    )*};
}
view_is_a_device_slice!(DeviceView, DeviceViewMut);
impl<T> DeviceSliceMut<T> for DeviceViewMut<'_, T> {}

/// The device and address of `len` elements of `s` from `offset` on, the device bound
/// to this thread; `None` for an empty window. Errors: a window past the end of `s`.
fn window<'a, T>(
    op: &'static str,
    s: &'a impl DeviceSlice<T>,
    offset: usize,
    len: usize,
) -> Result<Option<(&'a Gpu, u64)>> {
    if offset.checked_add(len).is_none_or(|end| end > s.len()) {
        return Err(Error::DimensionMismatch {
            op,
            what: "window end",
            expected: s.len(),
            found: offset.saturating_add(len),
        });
    }
    if len == 0 {
        return Ok(None);
    }
    let gpu = s.gpu();
    gpu.bind()?;
    Ok(Some((
        gpu,
        s.device_ptr() + (offset * size_of::<T>()) as u64,
    )))
}

/// Copies `out.len()` elements of `src` from `offset` into `out`, waiting for the work
/// queued before it (a window of a buffer or view: halo exchanges send part of `x`).
pub fn copy_window_to_host<T: Pod>(
    src: &impl DeviceSlice<T>,
    offset: usize,
    out: &mut [T],
) -> Result<()> {
    let Some((gpu, ptr)) = window("copy_window_to_host", src, offset, out.len())? else {
        return Ok(());
    };
    // SAFETY: window checked; we synchronise before `out` is used again.
    unsafe { result::memcpy_dtoh_async(out, ptr, gpu.cu_stream()) }
        .map_err(|e| gpu.after_kernel("cuMemcpyDtoHAsync", e))?;
    gpu.synchronize()
}

/// Copies `data` into `dst` from `offset` on, and waits for the copy.
pub fn copy_host_to_window<T: Pod>(
    data: &[T],
    dst: &mut impl DeviceSliceMut<T>,
    offset: usize,
) -> Result<()> {
    let Some((gpu, ptr)) = window("copy_host_to_window", &*dst, offset, data.len())? else {
        return Ok(());
    };
    // SAFETY: window checked, `&mut dst` excludes aliasing; synchronised before return.
    unsafe { result::memcpy_htod_async(ptr, data, gpu.cu_stream()) }
        .map_err(|e| gpu.after_kernel("cuMemcpyHtoDAsync", e))?;
    gpu.synchronize()
}
