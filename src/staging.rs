//! Copies of long vectors between the caller's memory and the device through page-locked
//! memory, with the host side on all cores.
//!
//! A copy from or into pageable memory is staged by the driver on one thread, and a fresh
//! output vector faults its pages in on that thread too: for the 52 MB right-hand side
//! of a 6.5 M-row f64 system that is tens of milliseconds, several times the GMRES solve
//! it surrounds. Here the caller's slice is copied into (out of) a page-locked buffer by
//! all cores and the copy engine moves the locked bytes at the link's speed.

use std::sync::Mutex;

use ferrocuda_host::{
    DeviceSlice, DeviceSliceMut, Gpu, PinnedBuffer, Pod, copy_host_to_window, copy_window_to_host,
};
use rayon::prelude::*;

use crate::error::Result;

/// Below this many bytes a plain pageable copy is as fast (one thread, no fan-out).
const PARALLEL_BYTES: usize = 1 << 20;

/// A page-locked buffer of a fixed length for the copies of one system's vectors; one
/// copy at a time (the lock), as on the one stream they share.
pub(crate) struct Staging<T> {
    buf: Mutex<PinnedBuffer<T>>,
}

impl<T: Pod + Send + Sync> Staging<T> {
    /// A staging buffer of `len` elements, or `None` where staging would not pay (short
    /// vectors) or page-locked memory cannot be had (the plain copies then run, slower).
    pub(crate) fn new(gpu: &Gpu, len: usize) -> Option<Self> {
        if len * size_of::<T>() < PARALLEL_BYTES {
            return None;
        }
        let buf = gpu.alloc_pinned::<T>(len).ok()?;
        Some(Staging {
            buf: Mutex::new(buf),
        })
    }

    /// Copies `src` into `dst` from `offset` on and waits for the copy.
    pub(crate) fn upload(
        this: Option<&Self>,
        src: &[T],
        dst: &mut impl DeviceSliceMut<T>,
        offset: usize,
    ) -> Result<()> {
        let Some(mut buf) = this.and_then(|s| s.lock(src.len())) else {
            return Ok(copy_host_to_window(src, dst, offset)?);
        };
        let locked = &mut buf.as_mut_slice()[..src.len()];
        locked
            .par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
        Ok(copy_host_to_window(locked, dst, offset)?)
    }

    /// `len` elements of `src` from `offset` on, in a new vector (its pages touched by
    /// all cores as they are filled).
    pub(crate) fn download(
        this: Option<&Self>,
        what: &str,
        src: &impl DeviceSlice<T>,
        offset: usize,
        len: usize,
    ) -> Result<Vec<T>> {
        let mut out = crate::alloc::try_with_capacity(what, len)?;
        let Some(mut buf) = this.and_then(|s| s.lock(len)) else {
            out.resize(len, T::zeroed());
            copy_window_to_host(src, offset, &mut out)?;
            return Ok(out);
        };
        let locked = &mut buf.as_mut_slice()[..len];
        copy_window_to_host(src, offset, locked)?;
        out.par_extend(locked.par_iter().copied());
        Ok(out)
    }

    /// The buffer, where it holds `len` elements (a poisoned lock only means an earlier
    /// copy panicked mid-way: the bytes are overwritten before every use).
    fn lock(&self, len: usize) -> Option<std::sync::MutexGuard<'_, PinnedBuffer<T>>> {
        let buf = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        (buf.len() >= len).then_some(buf)
    }
}

/// Elements per parallel copy task: 256 KiB of `f64`, many tasks per core.
const CHUNK: usize = 1 << 15;
