//! Beyond one process: row-partitioned matrices, the halo exchange and GMRES over
//! several ranks.
//!
//! A matrix is split by contiguous ranges of block rows ([`RowPartition`]: even, by
//! stored blocks, or whole TRACE grid blocks per rank). Each rank keeps its rows; a
//! collective [`HaloPlan`] tells it which blocks of `x` it needs from which peer
//! (its ghosts) and which of its own blocks to send. [`DistributedBcsr`] is a
//! [`LinOp`](crate::krylov::LinOp) on the rank's part of the vectors: it posts its sends,
//! runs the interior SpMV while they travel, then adds the ghost part. GMRES runs on it
//! unchanged ([`crate::krylov::cpu::gmres_distributed`]), with dot products and norms
//! summed over the ranks.
//!
//! On GPUs, [`DeviceDistributedBcsr`] is the same operator with each rank's rows on its
//! device (a [`DeviceLinOp`](crate::krylov::DeviceLinOp); GMRES by
//! [`crate::krylov::gpu::gmres_distributed`]); the halo spans travel GPU to GPU through
//! NCCL where the communicator has one ([`WithNccl`]), else through the host.
//!
//! Communication goes through [`Communicator`]: [`ThreadComm`] runs the ranks as threads
//! of one process (tests, CI, single-node CPU runs), [`SingleRank`] is the trivial
//! world of one, and [`WithNccl`] adds an NCCL communicator for the GPU data;
//! [`run_on_gpus`] starts one thread per GPU with either transport. With the cargo
//! feature `mpi`, `mpi::MpiComm` runs one process per GPU under `mpirun`/`srun` and
//! `mpi::nccl_over_mpi` bootstraps NCCL over it.
//!
//! ```
//! use ferrocuda::distributed::{Communicator, DistributedBcsr, RowPartition, run_on_threads};
//! use ferrocuda::krylov::{GmresOptions, LinOp, cpu};
//! use ferrocuda::sparse::generate::{TraceSpec, trace_like};
//! let spec = TraceSpec::new(4, 4, 3, 4);
//! let a = trace_like::<f64>(&spec)?;
//! let part = RowPartition::grid_blocks(&spec, 2)?;
//! // A consistent right-hand side (the ghost rows of the layout are empty).
//! let mut b = vec![0.0; a.n_rows()];
//! a.apply(&vec![1.0; a.n_cols()], &mut b)?;
//! let reports = run_on_threads(2, |comm| {
//!     let rank = comm.rank();
//!     let op = DistributedBcsr::new(comm, &part, part.local_rows(&a, rank)?)?;
//!     let b_local = part.local(rank, 5, &b)?;
//!     let mut x = vec![0.0; b_local.len()];
//!     cpu::gmres_distributed(comm, &op, None, b_local, &mut x, &GmresOptions::default())
//! })?;
//! assert!(reports.iter().all(|r| r.converged && r.iterations == reports[0].iterations));
//! # Ok::<(), ferrocuda::Error>(())
//! ```

pub mod gpu;
pub mod halo;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod nccl;
pub mod op;
pub mod partition;

/// The communicator lives below `krylov` ([`crate::comm`]); this keeps its old path.
pub use crate::comm;
pub use crate::comm::{Communicator, SingleRank, ThreadComm, run_on_threads, run_world};
pub use gpu::DeviceDistributedBcsr;
pub use halo::{HaloPlan, SplitRows, split_rows};
pub use nccl::{Transport, WithNccl, run_on_gpus};
pub use op::DistributedBcsr;
pub use partition::RowPartition;
