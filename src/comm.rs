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
//!
//! A rank that fails must not leave its peers waiting: a [`ThreadComm`] world keeps its
//! first failure ([`ThreadComm::fail`], set by [`run_on_threads`] and
//! [`crate::distributed::run_on_gpus`] when a rank's function returns an error or
//! panics), and every pending or later call of the other ranks returns
//! [`Error::RankFailed`] naming it; waits (the all-reduce's barrier, a receive) also end
//! after the world's timeout. See `docs/reliability.md`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

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

    /// Waits until every rank has arrived; stops early when `failed` is set (checked on
    /// every spin: one load) or after `timeout` (the clock is read only once the spins
    /// have turned into yields). Either way the barrier is broken for good: its caller
    /// marks the world failed, so that no rank waits on it again.
    fn wait(&self, failed: &OnceLock<Failure>, timeout: Duration) -> std::result::Result<(), Stop> {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.size {
            // Reset before the release, so the next round counts from zero.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return Ok(());
        }
        let mut spins = 0u32;
        let mut deadline = None;
        while self.generation.load(Ordering::Acquire) == generation {
            if failed.get().is_some() {
                return Err(Stop::Failed);
            }
            if spins < Self::SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                let now = Instant::now();
                if now >= *deadline.get_or_insert(now + timeout) {
                    return Err(Stop::TimedOut(self.arrived.load(Ordering::Relaxed)));
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }
}

/// Why a barrier wait ended without every rank.
#[derive(Debug)]
enum Stop {
    /// The world has failed.
    Failed,
    /// The timeout passed with this many ranks arrived.
    TimedOut(usize),
}

/// The first failure of a [`ThreadComm`] world.
#[derive(Debug)]
struct Failure {
    rank: usize,
    reason: String,
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
    /// Set once, by the first rank that fails; every wait checks it.
    failed: OnceLock<Failure>,
}

/// Ranks as threads of one process, for tests and for single-node runs on the CPU.
///
/// The all-reduce adds the contributions in rank order, so the result does not depend
/// on timing. A `recv` or an all-reduce that waits longer than the timeout (default
/// 60 s, or `FERROCUDA_COMM_TIMEOUT` seconds from the environment; [`Self::with_timeout`])
/// is an error instead of a hang (a peer that failed, or mismatched calls). A rank that
/// fails ([`Self::fail`], done by [`run_on_threads`] for a rank whose function returns
/// an error or panics) ends every other rank's pending and later calls at once with
/// [`Error::RankFailed`] naming it. An all-reduce that times out marks its own rank
/// failed (its barrier is broken), so the others stop too.
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
            failed: OnceLock::new(),
        });
        let timeout = default_timeout();
        (0..size)
            .map(|rank| ThreadComm {
                rank,
                shared: Arc::clone(&shared),
                timeout,
            })
            .collect()
    }

    /// The same rank with another timeout for its waits (a receive, an all-reduce).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The timeout of this rank's waits.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Marks this rank failed with `reason` (its error): every other rank's pending or
    /// later call ends with [`Error::RankFailed`] naming this rank, at once. Only the
    /// first failure of a world is kept; later ones change nothing. [`run_on_threads`]
    /// and [`crate::distributed::run_on_gpus`] call it for a rank whose function returns
    /// an error or panics; call it directly where ranks run on threads of your own.
    pub fn fail(&self, reason: impl std::fmt::Display) {
        let s = &self.shared;
        let _ = s.failed.set(Failure {
            rank: self.rank,
            reason: reason.to_string(),
        });
        // Under the mailbox lock, so that no receiver misses the wake-up between its
        // check and its wait.
        let _guard = s.mail.lock();
        s.arrived.notify_all();
    }

    /// The rank that failed first in this world, with its error, once one has.
    pub fn failure(&self) -> Option<(usize, &str)> {
        self.shared
            .failed
            .get()
            .map(|f| (f.rank, f.reason.as_str()))
    }

    /// `Err` naming the failed rank once the world has failed.
    fn check_failed(&self, op: &'static str) -> Result<()> {
        match self.shared.failed.get() {
            None => Ok(()),
            Some(f) => Err(Error::RankFailed {
                op,
                rank: f.rank,
                reason: f.reason.clone(),
            }),
        }
    }

    /// The all-reduce's barrier; a timeout marks this rank failed (the barrier is
    /// broken) and is its error.
    fn barrier(&self, op: &'static str) -> Result<()> {
        let s = &self.shared;
        match s.barrier.wait(&s.failed, self.timeout) {
            Ok(()) => Ok(()),
            Err(Stop::Failed) => self.check_failed(op),
            Err(Stop::TimedOut(arrived)) => {
                let reason = format!(
                    "rank {} waited {:?} in an all-reduce for the other ranks ({arrived} of \
                     {} had arrived)",
                    self.rank, self.timeout, s.size
                );
                self.fail(&reason);
                Err(Error::InvalidArgument { op, reason })
            }
        }
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
        self.check_failed(OP)?;
        let s = &self.shared;
        s.slots.lock().map_err(|_| poisoned(OP))?[self.rank] = v.to_vec();
        self.barrier(OP)?;
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
        self.barrier(OP)?;
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
        self.check_failed(OP)?;
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
        let deadline = Instant::now() + self.timeout;
        loop {
            self.check_failed(OP)?;
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
            let left = deadline.saturating_duration_since(Instant::now());
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

/// The timeout of a new world's waits: `FERROCUDA_COMM_TIMEOUT` (seconds, e.g. `5` or
/// `0.5`) where it is set to a positive number, else 60 s.
fn default_timeout() -> Duration {
    std::env::var("FERROCUDA_COMM_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(60), Duration::from_secs_f64)
}

/// Runs `f(comm)` on `size` ranks, each on its own thread with a [`ThreadComm`], and
/// returns the results in rank order. A panic on a rank becomes an error. A rank that
/// fails (an error or a panic) ends the others' communication with
/// [`Error::RankFailed`]; the error returned is then the failed rank's own.
pub fn run_on_threads<T: Send>(
    size: usize,
    f: impl Fn(&ThreadComm) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let world = ThreadComm::world(size);
    let first = world.first().cloned();
    let results = run_world(world, f);
    collect_ranks(
        results,
        first.as_ref().and_then(|c| c.failure()).map(|f| f.0),
    )
}

/// Runs `f(comm)` on each rank of `world` (from [`ThreadComm::world`], with the
/// timeouts you choose), each on its own thread, and returns every rank's result in
/// rank order. A rank whose `f` returns an error or panics is marked failed
/// ([`ThreadComm::fail`]) at once, so the others' communication ends with
/// [`Error::RankFailed`] instead of waiting; a panic becomes an error naming the rank.
pub fn run_world<T: Send>(
    world: Vec<ThreadComm>,
    f: impl Fn(&ThreadComm) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = world
            .into_iter()
            .map(|c| s.spawn(move || run_rank(&c, || f(&c))))
            .collect();
        join_ranks("run_on_threads", handles)
    })
}

/// Runs one rank's `f`, marking the world failed through `comm` when it returns an
/// error or panics (during the unwinding, before the thread is joined).
pub(crate) fn run_rank<T>(comm: &ThreadComm, f: impl FnOnce() -> Result<T>) -> Result<T> {
    struct OnPanic<'a>(&'a ThreadComm);
    impl Drop for OnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.fail(format!("rank {} panicked", self.0.rank));
            }
        }
    }
    let _guard = OnPanic(comm);
    let result = f();
    if let Err(e) = &result {
        comm.fail(e);
    }
    result
}

/// Joins one thread per rank and returns their results in rank order; a rank that
/// panicked becomes an error of `op` (with the panic's message).
pub(crate) fn join_ranks<T>(
    op: &'static str,
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>,
) -> Vec<Result<T>> {
    handles
        .into_iter()
        .enumerate()
        .map(|(rank, h)| {
            h.join().unwrap_or_else(|payload| {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(Error::InvalidArgument {
                    op,
                    reason: format!("rank {rank} panicked: {message}"),
                })
            })
        })
        .collect()
}

/// Every rank's value, or one error: the one of the rank that failed first
/// (`failed`, the root cause), else the first in rank order.
pub(crate) fn collect_ranks<T>(results: Vec<Result<T>>, failed: Option<usize>) -> Result<Vec<T>> {
    let (mut root, mut first, mut values) = (None, None, Vec::with_capacity(results.len()));
    for (rank, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => values.push(v),
            Err(e) if Some(rank) == failed => root = Some(e),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    match root.or(first) {
        Some(e) => Err(e),
        None => Ok(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world of `size` ranks whose waits end after `timeout`.
    fn world(size: usize, timeout: Duration) -> Vec<ThreadComm> {
        ThreadComm::world(size)
            .into_iter()
            .map(|c| c.with_timeout(timeout))
            .collect()
    }

    fn names_rank(r: &Result<()>, rank: usize) -> bool {
        matches!(r, Err(Error::RankFailed { rank: f, .. }) if *f == rank)
    }

    #[test]
    fn a_failed_rank_ends_the_others_all_reduce_at_once() {
        // The waits would last a minute: the failure, not the timeout, ends them.
        let started = Instant::now();
        let res = run_world(world(3, Duration::from_secs(60)), |c| {
            let mut v = [1.0];
            c.all_reduce_sum(&mut v)?;
            if c.rank() == 1 {
                return Err(Error::InvalidArgument {
                    op: "test",
                    reason: "injected".into(),
                });
            }
            // Ranks 0 and 2 wait here for rank 1, which has gone.
            c.all_reduce_sum(&mut v)?;
            Ok(())
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            res[1]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("injected")
        );
        for r in [0, 2] {
            assert!(names_rank(&res[r], 1), "rank {r}: {:?}", res[r]);
            let msg = res[r].as_ref().unwrap_err().to_string();
            assert!(msg.contains("rank 1 failed: test: injected"), "{msg}");
        }
    }

    #[test]
    fn a_panicking_rank_ends_the_others_receive_and_all_reduce() {
        let started = Instant::now();
        let res = run_world(world(3, Duration::from_secs(60)), |c| {
            match c.rank() {
                1 => panic!("injected panic"),
                // Waits for a message rank 1 never sends.
                0 => c.recv(1, &mut [0u8; 8]),
                _ => c.all_reduce_sum(&mut [0.0]),
            }
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        let msg = res[1].as_ref().unwrap_err().to_string();
        assert!(msg.contains("rank 1 panicked: injected panic"), "{msg}");
        assert!(names_rank(&res[0], 1) && names_rank(&res[2], 1), "{res:?}");
    }

    #[test]
    fn a_rank_that_never_arrives_ends_the_others_after_the_timeout() {
        // Rank 2 returns without its all-reduce and without an error: rank 0 or 1 times
        // out, marks itself failed, and the other then stops at once.
        let started = Instant::now();
        let res = run_world(world(3, Duration::from_millis(200)), |c| {
            if c.rank() < 2 {
                c.all_reduce_sum(&mut [1.0])?;
            }
            Ok(())
        });
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");
        assert!(res[2].is_ok());
        let timed_out: Vec<usize> = (0..2)
            .filter(|&r| {
                res[r]
                    .as_ref()
                    .is_err_and(|e| e.to_string().contains("waited"))
            })
            .collect();
        assert!(!timed_out.is_empty(), "{res:?}");
        for (r, result) in res.iter().enumerate().take(2) {
            assert!(
                timed_out.contains(&r) || names_rank(result, timed_out[0]),
                "rank {r}: {result:?}"
            );
        }
        // The world stays failed: a later call is an error at once.
        let c = ThreadComm::world(1).pop().unwrap();
        c.fail("gone");
        assert!(matches!(
            c.all_reduce_sum(&mut [0.0]),
            Err(Error::RankFailed { rank: 0, .. })
        ));
        assert_eq!(c.failure(), Some((0, "gone")));
    }

    #[test]
    fn run_on_threads_returns_the_failed_ranks_own_error() {
        let e = run_on_threads(4, |c| {
            if c.rank() == 2 {
                return Err(Error::InvalidArgument {
                    op: "test",
                    reason: "the root cause".into(),
                });
            }
            c.all_reduce_sum(&mut [0.0])
        })
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("the root cause"), "{e}");
        // Without failures, the all-reduce still works, every rank the same bits.
        let sums = run_on_threads(3, |c| {
            let mut v = [0.1 * (c.rank() + 1) as f64];
            c.all_reduce_sum(&mut v)?;
            c.all_reduce_sum(&mut v)?;
            Ok(v[0].to_bits())
        })
        .unwrap();
        assert!(sums.iter().all(|&s| s == sums[0]));
    }
}
