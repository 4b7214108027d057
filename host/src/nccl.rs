//! NCCL communicators on the runtime's streams: the transport of multi-GPU solves.
//!
//! One [`NcclComm`] per rank, each on its own GPU, with a stream of its own for the
//! communication so that kernels on the rank's main stream overlap it. Work is ordered
//! between the two streams with events: [`NcclComm::exchange`] starts after the work
//! queued so far on its buffers' stream, and [`NcclComm::join`] makes a stream wait for
//! the communication queued so far. No host thread waits in between.
//!
//! The library is loaded at run time (cudarc's `dynamic-loading`): programs build and
//! start without NCCL, and [`nccl_available`] says why it cannot be used. Single process:
//! [`NcclComm::world`] (`ncclCommInitAll`, one thread per rank afterwards). Several
//! processes: rank 0 makes an [`NcclId`] with [`NcclId::new`], sends its bytes to the
//! others (over MPI, say), and every rank calls [`NcclComm::from_id`].
//!
//! Keep NVLink multicast off on shared machines: `NCCL_NVLS_ENABLE=0` in the
//! environment before the first communicator is made (the `ferrocuda` CLI sets it when
//! it is unset).

use std::ffi::CStr;
use std::ops::Range;
use std::sync::{Mutex, OnceLock, PoisonError};

use bytemuck::Pod;
use cudarc::nccl::{result, sys};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::memory::{DeviceSlice, DeviceSliceMut};

/// Whether libnccl can be loaded; the error names the library and what to install.
/// Checked once per process.
pub fn nccl_available() -> Result<()> {
    static FOUND: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            // The same names, in the same order, as cudarc's loader tries.
            let names = cudarc::get_lib_name_candidates("nccl");
            for name in &names {
                // SAFETY: loading libnccl runs only its own initialisers.
                if unsafe { libloading::Library::new(name) }.is_ok() {
                    return Ok(());
                }
            }
            Err(format!(
                "libnccl is not on the library search path (tried {}); install NCCL \
                 (Debian's libnccl2, or the nvidia-nccl pip package) and point \
                 LD_LIBRARY_PATH at a folder that holds libnccl.so",
                names.join(", ")
            ))
        })
        .clone()
        .map_err(|reason| Error::Nccl {
            call: "load libnccl",
            reason,
        })
}

fn nccl_error(call: &'static str, e: result::NcclError) -> Error {
    // SAFETY: ncclGetErrorString returns a pointer to a static C string.
    let text = unsafe {
        let p = sys::ncclGetErrorString(e.0);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Error::Nccl {
        call,
        reason: format!("{text} ({:?})", e.0),
    }
}

fn check(
    call: &'static str,
    r: std::result::Result<result::NcclStatus, result::NcclError>,
) -> Result<()> {
    r.map(|_| ()).map_err(|e| nccl_error(call, e))
}

/// The version of the loaded NCCL, e.g. 22703 for 2.27.3.
pub fn nccl_version() -> Result<i32> {
    nccl_available()?;
    result::get_nccl_version().map_err(|e| nccl_error("ncclGetVersion", e))
}

/// Element types NCCL reduces.
pub trait NcclScalar: Pod {
    /// NCCL's name of the type.
    const TYPE: sys::ncclDataType_t;
}

impl NcclScalar for f32 {
    const TYPE: sys::ncclDataType_t = sys::ncclDataType_t::ncclFloat32;
}

impl NcclScalar for f64 {
    const TYPE: sys::ncclDataType_t = sys::ncclDataType_t::ncclFloat64;
}

/// The identifier that ties the ranks of a multi-process communicator together (128
/// opaque bytes: make it on one rank, send the bytes to the others).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId(pub [u8; 128]);

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NcclId(..)")
    }
}

impl NcclId {
    /// A fresh identifier (`ncclGetUniqueId`; on the rank that bootstraps).
    pub fn new() -> Result<Self> {
        nccl_available()?;
        let id = result::get_uniqueid().map_err(|e| nccl_error("ncclGetUniqueId", e))?;
        Ok(NcclId(id.internal.map(|c| c as u8)))
    }
}

/// One rank of an NCCL communicator, on one GPU, with its own communication stream.
///
/// Calls on one `NcclComm` are serialised by a lock (NCCL does not allow two threads on
/// one communicator at a time); every rank must issue the collective calls in the same
/// order and matching sends and receives, as NCCL requires.
pub struct NcclComm {
    comm: sys::ncclComm_t,
    rank: usize,
    size: usize,
    /// The communication stream, on the rank's device.
    stream: Gpu,
    /// Serialises the calls; `true` once [`NcclComm::abort`]ed (the handle is then freed:
    /// no call may use it again).
    lock: Mutex<bool>,
}

// SAFETY: the communicator handle is only used under `lock` (or with `&mut self` in
// drop); NCCL allows a communicator to be used from any thread, one at a time.
unsafe impl Send for NcclComm {}
// SAFETY: as above, every use takes `lock`.
unsafe impl Sync for NcclComm {}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.stream.ordinal())
            .finish()
    }
}

impl NcclComm {
    /// One communicator per GPU of this process, rank `r` on `gpus[r]`
    /// (`ncclCommInitAll`). The GPUs must be distinct devices. Hand each to its own
    /// thread.
    pub fn world(gpus: &[Gpu]) -> Result<Vec<NcclComm>> {
        nccl_available()?;
        for (i, a) in gpus.iter().enumerate() {
            if let Some(j) = gpus[..i].iter().position(|b| b.same_device(a)) {
                return Err(Error::Nccl {
                    call: "ncclCommInitAll",
                    reason: format!(
                        "ranks {j} and {i} are both on device {}: NCCL needs one GPU per rank",
                        a.ordinal()
                    ),
                });
            }
        }
        if gpus.is_empty() {
            return Ok(Vec::new());
        }
        let ordinals: Vec<i32> = gpus.iter().map(|g| g.ordinal() as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); gpus.len()];
        gpus[0].bind()?;
        // SAFETY: `comms` has one slot per ordinal; NCCL fills them all or fails.
        check("ncclCommInitAll", unsafe {
            result::comm_init_all(comms.as_mut_ptr(), gpus.len() as i32, ordinals.as_ptr())
        })?;
        let size = gpus.len();
        let mut out = Vec::with_capacity(size);
        let mut streams = Vec::with_capacity(size);
        for g in gpus {
            streams.push(g.new_stream());
        }
        for (rank, (comm, stream)) in comms.into_iter().zip(streams).enumerate() {
            match stream {
                Ok(stream) => out.push(NcclComm {
                    comm,
                    rank,
                    size,
                    stream,
                    lock: Mutex::new(false),
                }),
                Err(e) => {
                    // SAFETY: a communicator from ncclCommInitAll, used by nobody else.
                    let _ = unsafe { result::comm_destroy(comm) };
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// Rank `rank` of `size` in a multi-process communicator (`ncclCommInitRank`).
    /// Collective: blocks until every rank has called it with the same `id`.
    pub fn from_id(gpu: &Gpu, rank: usize, size: usize, id: &NcclId) -> Result<NcclComm> {
        nccl_available()?;
        if rank >= size {
            return Err(Error::Nccl {
                call: "ncclCommInitRank",
                reason: format!("rank {rank} is not below the size {size}"),
            });
        }
        let stream = gpu.new_stream()?;
        gpu.bind()?;
        let id = sys::ncclUniqueId {
            internal: id.0.map(|b| b as std::ffi::c_char),
        };
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` receives the new communicator.
        check("ncclCommInitRank", unsafe {
            result::comm_init_rank(&mut comm, size as i32, id, rank as i32)
        })?;
        Ok(NcclComm {
            comm,
            rank,
            size,
            stream,
            lock: Mutex::new(false),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the communicator.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The communication stream (on this rank's GPU).
    pub fn stream(&self) -> &Gpu {
        &self.stream
    }

    fn same_device(&self, op: &'static str, what: &'static str, gpu: &Gpu) -> Result<()> {
        crate::error::check_device(op, what, &self.stream, gpu)
    }

    fn check_peer(&self, op: &'static str, peer: usize) -> Result<()> {
        if peer < self.size && peer != self.rank {
            Ok(())
        } else {
            Err(Error::Nccl {
                call: op,
                reason: format!(
                    "rank {} cannot exchange with rank {peer} (ranks 0..{}, not itself)",
                    self.rank, self.size
                ),
            })
        }
    }

    /// `buf <- sum over the ranks of buf`, element-wise, in place, on the device; every
    /// rank gets the same bits. Ordered after the work queued so far on `buf`'s stream,
    /// and that stream waits for it: use `buf` afterwards as usual.
    pub fn all_reduce_sum<T: NcclScalar>(&self, buf: &mut impl DeviceSliceMut<T>) -> Result<()> {
        const OP: &str = "ncclAllReduce";
        self.same_device(OP, "the buffer", buf.gpu())?;
        self.stream.wait_for(buf.gpu())?;
        {
            let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.check_live(OP, *guard)?;
            self.stream.bind()?;
            let p = buf.device_ptr() as *mut std::ffi::c_void;
            // SAFETY: `buf` holds len() elements of T on this device; in place is allowed.
            check(OP, unsafe {
                result::all_reduce(
                    p,
                    p,
                    buf.len(),
                    T::TYPE,
                    sys::ncclRedOp_t::ncclSum,
                    self.comm,
                    self.stream.raw_stream() as sys::cudaStream_t,
                )
            })?;
        }
        buf.gpu().wait_for(&self.stream)
    }

    /// Queues, on the communication stream and after the work queued so far on the
    /// buffers' streams, one NCCL group that sends the windows `sends` of `from` (peer,
    /// element range) and receives the windows `recvs` of `into` (peer, element range).
    /// `meanwhile` is called after that starting point is fixed and before the NCCL
    /// calls: work it queues (on any stream) overlaps the exchange, also while NCCL's
    /// host side prepares it. The host does not wait. Call [`NcclComm::join`] before a
    /// kernel reads `into` or writes `from`. Every peer must post the matching calls
    /// (same lengths, same order per pair of ranks).
    pub fn exchange<T: Pod, E: From<Error>>(
        &self,
        from: &impl DeviceSlice<T>,
        sends: &[(usize, Range<usize>)],
        into: &mut impl DeviceSliceMut<T>,
        recvs: &[(usize, Range<usize>)],
        meanwhile: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        const OP: &str = "ncclSend/ncclRecv";
        self.same_device(OP, "the send buffer", from.gpu())?;
        self.same_device(OP, "the receive buffer", into.gpu())?;
        for (list, len, what) in [
            (sends, from.len(), "send window end"),
            (recvs, into.len(), "receive window end"),
        ] {
            for (peer, r) in list {
                self.check_peer(OP, *peer)?;
                if r.start > r.end || r.end > len {
                    return Err(Error::DimensionMismatch {
                        op: "NcclComm::exchange",
                        what,
                        expected: len,
                        found: r.end,
                    }
                    .into());
                }
            }
        }
        self.stream.wait_for(from.gpu())?;
        if !into.gpu().same_stream(from.gpu()) {
            self.stream.wait_for(into.gpu())?;
        }
        meanwhile()?;
        let size = std::mem::size_of::<T>();
        let raw = self.stream.raw_stream() as sys::cudaStream_t;
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.check_live(OP, *guard)?;
        self.stream.bind()?;
        check("ncclGroupStart", result::group_start())?;
        // Sends first, then receives, all in one group; the first failed call stops the
        // queueing. Byte windows: NCCL moves `r.len() * size` bytes at `start * size`.
        let from_ptr = from.device_ptr();
        let into_ptr = into.device_ptr();
        let window = |base: u64, r: &Range<usize>| (base + (r.start * size) as u64, r.len() * size);
        let queued = sends
            .iter()
            .map(|(peer, r)| (true, *peer, window(from_ptr, r)))
            .chain(
                recvs
                    .iter()
                    .map(|(peer, r)| (false, *peer, window(into_ptr, r))),
            )
            .try_for_each(|(send, peer, (p, bytes))| {
                let (dtype, peer) = (sys::ncclDataType_t::ncclUint8, peer as i32);
                // SAFETY: each window lies inside its buffer (checked above); `into` is
                // held by `&mut` for the receives.
                if send {
                    check("ncclSend", unsafe {
                        result::send(
                            p as *const std::ffi::c_void,
                            bytes,
                            dtype,
                            peer,
                            self.comm,
                            raw,
                        )
                    })
                } else {
                    check("ncclRecv", unsafe {
                        result::recv(
                            p as *mut std::ffi::c_void,
                            bytes,
                            dtype,
                            peer,
                            self.comm,
                            raw,
                        )
                    })
                }
            });
        // The group is closed even after a failed call (NCCL needs the end).
        let ended = check("ncclGroupEnd", result::group_end());
        Ok(queued.and(ended)?)
    }

    /// Aborts the communicator (`ncclCommAbort`): its queued and running operations
    /// end (the kernels on the communication stream stop, so host waits on the streams
    /// that wait for them return, with whatever the buffers then hold), and every later
    /// call on it is an error. For a peer that failed: call it from any thread, also
    /// while this rank's own thread waits on its streams (it waits for a call in
    /// progress on another thread to return first). Calling it again does nothing.
    pub fn abort(&self) {
        let mut aborted = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if !*aborted {
            *aborted = true;
            // SAFETY: our own communicator; the lock keeps every other call out, and
            // `aborted` keeps them out afterwards.
            let _ = unsafe { result::comm_abort(self.comm) };
        }
    }

    /// Whether [`NcclComm::abort`] has been called.
    pub fn is_aborted(&self) -> bool {
        *self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check_live(&self, op: &'static str, aborted: bool) -> Result<()> {
        if aborted {
            Err(Error::Nccl {
                call: op,
                reason: format!(
                    "the communicator of rank {} of {} was aborted (a rank failed)",
                    self.rank, self.size
                ),
            })
        } else {
            Ok(())
        }
    }

    /// Makes `gpu`'s stream (same device) wait for the communication queued so far.
    pub fn join(&self, gpu: &Gpu) -> Result<()> {
        self.same_device("NcclComm::join", "the stream", gpu)?;
        gpu.wait_for(&self.stream)
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        if *self.lock.get_mut().unwrap_or_else(PoisonError::into_inner) {
            return;
        }
        // Let the operations queued so far finish, except while a panic unwinds: its
        // peers may never post their side, and the abort below ends them instead of a
        // wait without end. Errors cannot be reported from drop; a failed sync still
        // frees the handle.
        if !std::thread::panicking() {
            let _ = self.stream.synchronize();
        }
        // Abort, not destroy: it never waits for peers that are gone.
        // SAFETY: our own communicator, no longer used by anyone.
        let _ = unsafe { result::comm_abort(self.comm) };
    }
}
