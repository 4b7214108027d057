//! The communication a distributed solve needs, behind one trait: an all-reduce of a few
//! scalars (dot products, norms) and point-to-point messages (halo exchange).
//!
//! It sits below both users: `krylov` sums its dot products through it and `distributed`
//! exchanges halos through it, so `distributed` may call `krylov` and never the reverse.
//! The public path `ferrocuda::distributed::comm` re-exports this module.
//!
//! [`ThreadComm`] runs the ranks as threads of one process: the CPU tests and CI check
//! the partitioning, the halo plan and the distributed solvers with it, and it is the
//! reference the GPU engines (NCCL) are compared against.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ferrocuda_host::NcclComm;

use crate::error::{Error, Result};

/// The ranks of one distributed solve, seen from one rank.
///
/// Sends are buffered (they return before the peer receives), so every rank may post
/// all its sends before it waits for a receive: the halo exchange cannot deadlock and
/// the interior work overlaps it.
pub trait Communicator: Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// `v <- sum over all ranks of v`, element-wise; every rank gets the same bits.
    /// Every rank must call it with the same length, in the same order.
    fn all_reduce_sum(&self, v: &mut [f64]) -> Result<()>;
    /// Posts `data` to rank `peer` (buffered; returns at once).
    fn send(&self, peer: usize, data: &[u8]) -> Result<()>;
    /// Receives the next message from rank `peer` into `data`, which must have the
    /// message's length. Messages between two ranks arrive in the order they were sent.
    fn recv(&self, peer: usize, data: &mut [u8]) -> Result<()>;
    /// The NCCL communicator of this rank, where the ranks have one
    /// ([`crate::distributed::WithNccl`]): the GPU operator then moves its halo GPU to GPU, and the
    /// GPU GMRES sums its dot products on the devices. `None` (the default): everything
    /// goes through the host calls above.
    fn nccl(&self) -> Option<&NcclComm> {
        None
    }
    /// Whether the GPU GMRES sums its dot products with NCCL on the devices (default:
    /// where there is an NCCL communicator) rather than with [`Self::all_reduce_sum`]
    /// after downloading them.
    fn sums_on_device(&self) -> bool {
        self.nccl().is_some()
    }
}

/// One rank alone: the all-reduce is the identity, and there is no peer to talk to.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleRank;

impl Communicator for SingleRank {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_reduce_sum(&self, _v: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn send(&self, peer: usize, _data: &[u8]) -> Result<()> {
        Err(no_peer("send", peer))
    }
    fn recv(&self, peer: usize, _data: &mut [u8]) -> Result<()> {
        Err(no_peer("recv", peer))
    }
}

fn no_peer(op: &'static str, peer: usize) -> Error {
    Error::InvalidArgument {
        op,
        reason: format!("rank {peer} does not exist: a single rank has no peers"),
    }
}

/// Messages in flight, per (from, to), oldest first.
type Mailboxes = HashMap<(usize, usize), VecDeque<Vec<u8>>>;

/// A barrier that spins briefly before it yields: an all-reduce in a GMRES step waits
/// twice, and a sleeping thread's wake-up (tens of microseconds) would cost more than
/// the step's arithmetic on a GPU.
#[derive(Debug)]
struct SpinBarrier {
    size: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    /// Spins before each `yield_now` once the first spins did not suffice.
    const SPINS: u32 = 1 << 14;

    fn new(size: usize) -> Self {
        SpinBarrier {
            size,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.size {
            // Reset before the release, so the next round counts from zero.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < Self::SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// State shared by the ranks of a [`ThreadComm`] world.
#[derive(Debug)]
struct Shared {
    size: usize,
    barrier: SpinBarrier,
    /// One contribution per rank for the all-reduce in progress.
    slots: Mutex<Vec<Vec<f64>>>,
    mail: Mutex<Mailboxes>,
    arrived: Condvar,
}

/// Ranks as threads of one process, for tests and for single-node runs on the CPU.
///
/// The all-reduce adds the contributions in rank order, so the result does not depend
/// on timing. A `recv` that waits longer than the timeout (default 60 s) is an error
/// instead of a hang (a peer that failed, or mismatched calls).
///
/// ```
/// use ferrocuda::distributed::{Communicator, ThreadComm};
/// let sums: Vec<f64> = std::thread::scope(|s| {
///     let handles: Vec<_> = ThreadComm::world(3)
///         .into_iter()
///         .map(|c| s.spawn(move || {
///             let mut v = [c.rank() as f64 + 1.0];
///             c.all_reduce_sum(&mut v).unwrap();
///             v[0]
///         }))
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap()).collect()
/// });
/// assert_eq!(sums, [6.0, 6.0, 6.0]);
/// ```
#[derive(Debug, Clone)]
pub struct ThreadComm {
    rank: usize,
    shared: Arc<Shared>,
    timeout: Duration,
}

impl ThreadComm {
    /// `size` communicators, one per rank (hand each to its own thread). `size` 0 gives
    /// none.
    pub fn world(size: usize) -> Vec<ThreadComm> {
        let shared = Arc::new(Shared {
            size,
            barrier: SpinBarrier::new(size.max(1)),
            slots: Mutex::new(vec![Vec::new(); size]),
            mail: Mutex::new(HashMap::new()),
            arrived: Condvar::new(),
        });
        (0..size)
            .map(|rank| ThreadComm {
                rank,
                shared: Arc::clone(&shared),
                timeout: Duration::from_secs(60),
            })
            .collect()
    }

    /// The same rank with another receive timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn check_peer(&self, op: &'static str, peer: usize) -> Result<()> {
        if peer < self.shared.size && peer != self.rank {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "rank {} cannot talk to rank {peer} (ranks 0..{}, not itself)",
                    self.rank, self.shared.size
                ),
            })
        }
    }
}

fn poisoned(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        reason: "another rank panicked while holding the communicator".into(),
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_reduce_sum(&self, v: &mut [f64]) -> Result<()> {
        const OP: &str = "ThreadComm::all_reduce_sum";
        let s = &self.shared;
        s.slots.lock().map_err(|_| poisoned(OP))?[self.rank] = v.to_vec();
        s.barrier.wait();
        let lengths_agree;
        {
            let slots = s.slots.lock().map_err(|_| poisoned(OP))?;
            lengths_agree = slots.iter().all(|c| c.len() == v.len());
            if lengths_agree {
                for (i, vi) in v.iter_mut().enumerate() {
                    // Rank order, from zero: the same bits on every rank.
                    *vi = slots.iter().fold(0.0, |acc, c| acc + c[i]);
                }
            }
        }
        // Nobody refills a slot before everyone has read them all.
        s.barrier.wait();
        if lengths_agree {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op: OP,
                reason: format!(
                    "rank {} reduced {} values, but the ranks disagree on the length",
                    self.rank,
                    v.len()
                ),
            })
        }
    }

    fn send(&self, peer: usize, data: &[u8]) -> Result<()> {
        const OP: &str = "ThreadComm::send";
        self.check_peer(OP, peer)?;
        let s = &self.shared;
        s.mail
            .lock()
            .map_err(|_| poisoned(OP))?
            .entry((self.rank, peer))
            .or_default()
            .push_back(data.to_vec());
        s.arrived.notify_all();
        Ok(())
    }

    fn recv(&self, peer: usize, data: &mut [u8]) -> Result<()> {
        const OP: &str = "ThreadComm::recv";
        self.check_peer(OP, peer)?;
        let s = &self.shared;
        let mut mail = s.mail.lock().map_err(|_| poisoned(OP))?;
        let deadline = std::time::Instant::now() + self.timeout;
        loop {
            if let Some(msg) = mail.get_mut(&(peer, self.rank)).and_then(|q| q.pop_front()) {
                if msg.len() != data.len() {
                    return Err(Error::InvalidArgument {
                        op: OP,
                        reason: format!(
                            "rank {} expected {} bytes from rank {peer}, the message has {}",
                            self.rank,
                            data.len(),
                            msg.len()
                        ),
                    });
                }
                data.copy_from_slice(&msg);
                return Ok(());
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(Error::InvalidArgument {
                    op: OP,
                    reason: format!(
                        "rank {} waited {:?} for a message from rank {peer}",
                        self.rank, self.timeout
                    ),
                });
            }
            mail = s
                .arrived
                .wait_timeout(mail, left)
                .map_err(|_| poisoned(OP))?
                .0;
        }
    }
}

/// Runs `f(comm)` on `size` ranks, each on its own thread with a [`ThreadComm`], and
/// returns the results in rank order. A panic on a rank becomes an error.
pub fn run_on_threads<T: Send>(
    size: usize,
    f: impl Fn(&ThreadComm) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::world(size)
            .into_iter()
            .map(|c| s.spawn(move || f(&c)))
            .collect();
        join_ranks("run_on_threads", handles)
    })
}

/// Joins one thread per rank and returns their results in rank order; a rank that
/// panicked becomes an error of `op`.
pub(crate) fn join_ranks<T>(
    op: &'static str,
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>,
) -> Result<Vec<T>> {
    handles
        .into_iter()
        .enumerate()
        .map(|(rank, h)| {
            h.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument {
                    op,
                    reason: format!("rank {rank} panicked"),
                })
            })
        })
        .collect()
}
