//! MPI as the host communicator of one process per GPU on clusters (cargo feature
//! `mpi`, over the `mpi` crate and the system's MPI library, e.g. Debian's
//! `libopenmpi-dev`), and NCCL bootstrapped over it ([`nccl_over_mpi`]).
//!
//! ```no_run
//! # #[cfg(feature = "mpi")] {
//! use ferrocuda::distributed::mpi::{MpiComm, nccl_over_mpi};
//! use ferrocuda::distributed::Communicator;
//! let mpi = MpiComm::init()?;
//! // One GPU per process of a node: the node-local rank picks it.
//! let gpu = ferrocuda::gpu::open(mpi.local_rank())?;
//! let comm = nccl_over_mpi(mpi, &gpu)?;
//! println!("rank {} of {}", comm.rank(), comm.size());
//! # }
//! # Ok::<(), ferrocuda::Error>(())
//! ```
//!
//! MPI has no timeout: a rank that stops while its peers wait in a collective or a
//! receive would leave them waiting for ever. A rank that fails after [`MpiComm::init`]
//! therefore ends the whole job: [`MpiComm::abort`] (or [`MpiComm::or_abort`] on a
//! result) prints the error with the rank and calls `MPI_Abort`, and an `MpiComm`
//! dropped while its thread panics does the same; `mpirun` then ends every process and
//! exits with a non-zero status.

use std::sync::{Mutex, PoisonError};

use ::mpi::Threading;
use ::mpi::collective::SystemOperation;
use ::mpi::datatype::Equivalence;
use ::mpi::environment::Universe;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::Communicator as _;
use ::mpi::traits::*;
use ferrocuda_host::{NcclComm, NcclId};

use super::nccl::WithNccl;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// Room for buffered sends at first (grown when a message would not fit).
const INITIAL_BUFFER: usize = 16 << 20;
/// Bytes MPI adds to each buffered message, generously (`MPI_BSEND_OVERHEAD` is ~100).
const OVERHEAD: usize = 1024;

struct Inner {
    universe: Universe,
    world: SimpleCommunicator,
}

/// The processes of `MPI_COMM_WORLD` as a [`Communicator`]. Sends are buffered
/// (`MPI_Bsend`), as the trait requires; the all-reduce is `MPI_Allreduce`. Dropped
/// while its thread panics, it aborts the job ([`MpiComm::abort`]) instead of
/// finalising MPI, which would wait for the other ranks.
pub struct MpiComm {
    inner: Mutex<Inner>,
    rank: usize,
    size: usize,
    local_rank: usize,
    local_size: usize,
}

// SAFETY: every MPI call goes through `inner`'s lock, and MPI was initialised with at
// least `MPI_THREAD_SERIALIZED` (checked in `init`), so calls from any thread, one at a
// time, are allowed.
unsafe impl Send for MpiComm {}
// SAFETY: as above.
unsafe impl Sync for MpiComm {}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("local_rank", &self.local_rank)
            .field("local_size", &self.local_size)
            .finish()
    }
}

fn invalid(op: &'static str, reason: String) -> Error {
    Error::InvalidArgument { op, reason }
}

impl MpiComm {
    /// Initialises MPI (once per process; finalised when this is dropped).
    pub fn init() -> Result<Self> {
        const OP: &str = "MpiComm::init";
        let (mut universe, threading) = ::mpi::initialize_with_threading(Threading::Serialized)
            .ok_or_else(|| invalid(OP, "MPI is already initialised in this process".into()))?;
        if threading < Threading::Serialized {
            return Err(invalid(
                OP,
                format!("the MPI library offers {threading:?}, ferrocuda needs Serialized"),
            ));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        // Processes sharing a node get consecutive local ranks: one GPU each.
        let node = world.split_shared(world.rank());
        let (local_rank, local_size) = (node.rank() as usize, node.size() as usize);
        universe.set_buffer_size(INITIAL_BUFFER);
        Ok(MpiComm {
            inner: Mutex::new(Inner { universe, world }),
            rank,
            size,
            local_rank,
            local_size,
        })
    }

    /// This process's rank among those on its node (the GPU it should use).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// How many processes of the job share this node: with at least as many GPUs each
    /// can have its own (NCCL), with fewer they share them (host transport).
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// Ends the whole MPI job because this rank failed: prints
    /// `ferrocuda: rank R of N failed: REASON; aborting the MPI job` on stderr and calls
    /// `MPI_Abort` on `MPI_COMM_WORLD` with error code 1, so that no rank waits for
    /// this one (`mpirun` ends them all and exits with a non-zero status). For an error
    /// after which this rank cannot take part in its peers' next collective or
    /// message; errors the ranks have agreed on (every rank fails) can simply return.
    pub fn abort(&self, reason: impl std::fmt::Display) -> ! {
        let inner = self.lock();
        {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "ferrocuda: rank {} of {} failed: {reason}; aborting the MPI job",
                self.rank, self.size
            );
            let _ = err.flush();
        }
        inner.world.abort(1)
    }

    /// `result`'s value, or, on an error, [`Self::abort`] with it: the job ends.
    pub fn or_abort<T, E: std::fmt::Display>(&self, result: std::result::Result<T, E>) -> T {
        match result {
            Ok(v) => v,
            Err(e) => self.abort(e),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check_peer(&self, op: &'static str, peer: usize) -> Result<()> {
        if peer < self.size && peer != self.rank {
            Ok(())
        } else {
            Err(invalid(
                op,
                format!(
                    "rank {} cannot talk to rank {peer} (ranks 0..{}, not itself)",
                    self.rank, self.size
                ),
            ))
        }
    }
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        // Finalising MPI waits for the other ranks, which may be waiting for this one:
        // a panicking rank ends the job instead.
        if std::thread::panicking() {
            self.abort(format!("rank {} panicked", self.rank));
        }
    }
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_reduce_sum(&self, v: &mut [f64]) -> Result<()> {
        let send = v.to_vec();
        self.lock()
            .world
            .all_reduce_into(&send[..], v, SystemOperation::sum());
        Ok(())
    }

    fn send(&self, peer: usize, data: &[u8]) -> Result<()> {
        self.check_peer("MpiComm::send", peer)?;
        let mut inner = self.lock();
        // A quarter of the buffer per message leaves room for the others in flight.
        let need = 4 * (data.len() + OVERHEAD);
        if inner.universe.buffer_size() < need {
            // Detaching waits until the buffered messages have left.
            inner.universe.set_buffer_size(need.max(2 * INITIAL_BUFFER));
        }
        inner.world.process_at_rank(peer as i32).buffered_send(data);
        Ok(())
    }

    fn recv(&self, peer: usize, data: &mut [u8]) -> Result<()> {
        const OP: &str = "MpiComm::recv";
        self.check_peer(OP, peer)?;
        let inner = self.lock();
        let (msg, status) = inner.world.process_at_rank(peer as i32).matched_probe();
        let count = status.count(u8::equivalent_datatype()) as usize;
        if count != data.len() {
            // Take it off the queue anyway, so the next message can be received.
            let mut sink = vec![0u8; count];
            msg.matched_receive_into(&mut sink[..]);
            return Err(invalid(
                OP,
                format!(
                    "rank {} expected {} bytes from rank {peer}, the message has {count}",
                    self.rank,
                    data.len()
                ),
            ));
        }
        msg.matched_receive_into(data);
        Ok(())
    }
}

/// NCCL over MPI: rank 0 makes the NCCL identifier, MPI broadcasts it, and every rank
/// opens its NCCL communicator on `gpu` (one GPU per process). Collective. A rank
/// whose NCCL initialisation fails aborts the job ([`MpiComm::abort`]): its peers would
/// wait for it in theirs.
pub fn nccl_over_mpi(comm: MpiComm, gpu: &Gpu) -> Result<WithNccl<MpiComm>> {
    // Every rank learns whether rank 0 could make an identifier before anyone waits in
    // NCCL's initialisation.
    let made = if comm.rank() == 0 {
        Some(NcclId::new())
    } else {
        None
    };
    let mut bytes = [0u8; 129];
    if let Some(Ok(id)) = &made {
        bytes[..128].copy_from_slice(&id.0);
        bytes[128] = 1;
    }
    comm.lock()
        .world
        .process_at_rank(0)
        .broadcast_into(&mut bytes[..]);
    if bytes[128] != 1 {
        return Err(match made {
            Some(Err(e)) => e.into(),
            _ => invalid(
                "nccl_over_mpi",
                "rank 0 could not create the NCCL identifier".into(),
            ),
        });
    }
    let mut id = [0u8; 128];
    id.copy_from_slice(&bytes[..128]);
    // A rank whose initialisation fails would leave the others waiting in theirs.
    let nccl = comm.or_abort(NcclComm::from_id(
        gpu,
        comm.rank(),
        comm.size(),
        &NcclId(id),
    ));
    WithNccl::new(comm, nccl)
}
