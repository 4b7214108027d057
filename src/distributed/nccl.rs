//! NCCL as the transport between GPUs: a host [`Communicator`] paired with a
//! [`NcclComm`] ([`WithNccl`]), and [`run_on_gpus`], which starts one thread per GPU of
//! this process with either transport.
//!
//! With NCCL, [`super::DeviceDistributedBcsr`] sends its halo spans straight from `x`
//! into the peers' ghost buffers on a communication stream while the interior SpMV runs,
//! and [`crate::krylov::gpu::gmres_distributed`] sums the dot products of each step on
//! the devices. The host communicator still carries the rare host-side messages (the
//! halo plan at set-up, failure agreement, norms at restarts).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ferrocuda_host::NcclComm;

use crate::comm::{Communicator, ThreadComm};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// A host communicator and this rank's NCCL communicator (same rank, same size).
#[derive(Debug)]
pub struct WithNccl<C> {
    host: C,
    /// Shared with [`run_on_gpus`]'s watchdog, which aborts it when another rank fails.
    nccl: Arc<NcclComm>,
    device_sums: bool,
}

impl<C: Communicator> WithNccl<C> {
    /// Pairs `host` with `nccl`; they must agree on the rank and the number of ranks.
    pub fn new(host: C, nccl: NcclComm) -> Result<Self> {
        Self::shared(host, Arc::new(nccl))
    }

    /// [`Self::new`] with a communicator that others may abort.
    pub(crate) fn shared(host: C, nccl: Arc<NcclComm>) -> Result<Self> {
        if host.rank() != nccl.rank() || host.size() != nccl.size() {
            return Err(Error::InvalidArgument {
                op: "WithNccl::new",
                reason: format!(
                    "the host communicator is rank {} of {}, the NCCL one rank {} of {}",
                    host.rank(),
                    host.size(),
                    nccl.rank(),
                    nccl.size()
                ),
            });
        }
        Ok(WithNccl {
            host,
            nccl,
            device_sums: true,
        })
    }

    /// Sums GMRES's dot products on the host (after their download) instead of with
    /// NCCL on the devices; the halo still goes through NCCL. For a fast host
    /// all-reduce (threads of one process, MPI within a node) this can be the quicker
    /// one: the sums are a few dozen numbers.
    pub fn host_sums(mut self) -> Self {
        self.device_sums = false;
        self
    }

    /// The host communicator (e.g. an `MpiComm` of the `mpi` feature, to abort
    /// the job on an error).
    pub fn host(&self) -> &C {
        &self.host
    }
}

impl<C: Communicator> Communicator for WithNccl<C> {
    fn rank(&self) -> usize {
        self.host.rank()
    }
    fn size(&self) -> usize {
        self.host.size()
    }
    fn all_reduce_sum(&self, v: &mut [f64]) -> Result<()> {
        self.host.all_reduce_sum(v)
    }
    fn send(&self, peer: usize, data: &[u8]) -> Result<()> {
        self.host.send(peer, data)
    }
    fn recv(&self, peer: usize, data: &mut [u8]) -> Result<()> {
        self.host.recv(peer, data)
    }
    fn nccl(&self) -> Option<&NcclComm> {
        Some(&self.nccl)
    }
    fn sums_on_device(&self) -> bool {
        self.device_sums
    }
}

/// How the ranks of [`run_on_gpus`] move data between GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// NCCL, GPU to GPU (needs libnccl and one GPU per rank): the halo, and GMRES's
    /// dot products summed on the devices.
    #[default]
    Nccl,
    /// The halo through NCCL, the dot products summed on the host
    /// ([`WithNccl::host_sums`]).
    NcclHostSums,
    /// Through host memory and [`ThreadComm`] (no NCCL needed; ranks may share a GPU).
    Host,
}

impl std::str::FromStr for Transport {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "nccl" => Ok(Transport::Nccl),
            "nccl-host-sums" => Ok(Transport::NcclHostSums),
            "host" => Ok(Transport::Host),
            other => Err(Error::InvalidArgument {
                op: "transport",
                reason: format!(
                    "unknown transport `{other}` (expected nccl, nccl-host-sums or host)"
                ),
            }),
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Nccl => "nccl",
            Transport::NcclHostSums => "nccl-host-sums",
            Transport::Host => "host",
        })
    }
}

/// Runs `f(comm, gpu)` on `ranks` ranks, each on its own thread, and returns the results
/// in rank order. Rank `r` runs on GPU `r` ([`Transport::Nccl`]: there must be a GPU per
/// rank) or GPU `r % count` ([`Transport::Host`]). A panic on a rank becomes an error.
/// A rank that fails (an error or a panic) ends the others: their host calls return
/// [`Error::RankFailed`] naming it, and with NCCL a watchdog thread aborts every rank's
/// NCCL communicator ([`NcclComm::abort`]) so that no rank waits on its GPU for the
/// failed one; the error returned is the failed rank's own (see `docs/reliability.md`).
///
/// ```no_run
/// use ferrocuda::distributed::{Communicator, Transport, run_on_gpus};
/// let ranks = run_on_gpus(2, Transport::Nccl, |comm, gpu| {
///     Ok((comm.rank(), gpu.ordinal()))
/// })?;
/// assert_eq!(ranks, [(0, 0), (1, 1)]);
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn run_on_gpus<T: Send>(
    ranks: usize,
    transport: Transport,
    f: impl Fn(&dyn Communicator, &Gpu) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let devices = crate::gpu::count();
    if devices == 0 {
        return Err(Error::InvalidArgument {
            op: "run_on_gpus",
            reason: "no GPU found".into(),
        });
    }
    if transport != Transport::Host && ranks > devices {
        return Err(Error::InvalidArgument {
            op: "run_on_gpus",
            reason: format!(
                "{ranks} ranks over NCCL need {ranks} GPUs, this machine has {devices} \
                 (the host transport lets ranks share a GPU)"
            ),
        });
    }
    let gpus = (0..ranks)
        .map(|r| crate::gpu::open(r % devices))
        .collect::<Result<Vec<_>>>()?;
    let nccl: Vec<Option<Arc<NcclComm>>> = match transport {
        Transport::Nccl | Transport::NcclHostSums => NcclComm::world(&gpus)?
            .into_iter()
            .map(|c| Some(Arc::new(c)))
            .collect(),
        Transport::Host => (0..ranks).map(|_| None).collect(),
    };
    let f = &f;
    let world = ThreadComm::world(ranks);
    let first = world.first().cloned();
    let finished = AtomicUsize::new(0);
    let results = std::thread::scope(|s| {
        if let Some(watched) = &first
            && nccl.iter().any(Option::is_some)
        {
            let (finished, nccl) = (&finished, &nccl);
            s.spawn(move || watchdog(watched, nccl, finished, ranks));
        }
        let handles: Vec<_> = world
            .into_iter()
            .zip(gpus.iter())
            .zip(nccl.iter().cloned())
            .map(|((host, gpu), nc)| {
                let finished = &finished;
                s.spawn(move || -> Result<T> {
                    // A rank that fails marks the world failed at once: the others'
                    // host calls end with an error naming it, and the watchdog aborts
                    // every NCCL communicator, which ends their NCCL waits.
                    let marker = host.clone();
                    let aborted = nc.clone();
                    let result = crate::comm::run_rank(&marker, || match nc {
                        Some(nc) if transport == Transport::NcclHostSums => {
                            f(&WithNccl::shared(host, nc)?.host_sums(), gpu)
                        }
                        Some(nc) => f(&WithNccl::shared(host, nc)?, gpu),
                        None => f(&host, gpu),
                    });
                    finished.fetch_add(1, Ordering::Release);
                    // Another rank failed and this one's communicator was aborted under
                    // it: a value it computed cannot be trusted, and an error it met
                    // (an aborted call, numbers from an aborted exchange) is a
                    // consequence. Either way the failed rank is named.
                    match (result, marker.failure()) {
                        (Err(e @ Error::RankFailed { .. }), _) => Err(e),
                        (_, Some((rank, reason)))
                            if rank != marker.rank()
                                && aborted.as_ref().is_some_and(|c| c.is_aborted()) =>
                        {
                            Err(Error::RankFailed {
                                op: "run_on_gpus",
                                rank,
                                reason: reason.to_string(),
                            })
                        }
                        (result, _) => result,
                    }
                })
            })
            .collect();
        crate::comm::join_ranks("run_on_gpus", handles)
    });
    crate::comm::collect_ranks(
        results,
        first.as_ref().and_then(|c| c.failure()).map(|f| f.0),
    )
}

/// Watches the ranks of [`run_on_gpus`] until they have all `finished`: once the world
/// has failed (a rank's error or panic), it aborts every NCCL communicator, so that a
/// rank waiting for an NCCL operation its failed peer will never join stops waiting
/// (its next NCCL or host call is then an error). Polls every millisecond: the ranks'
/// own calls stay as fast as without it.
fn watchdog(
    world: &ThreadComm,
    nccl: &[Option<Arc<NcclComm>>],
    finished: &AtomicUsize,
    ranks: usize,
) {
    while finished.load(Ordering::Acquire) < ranks {
        if world.failure().is_some() {
            for c in nccl.iter().flatten() {
                c.abort();
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
