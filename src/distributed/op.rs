//! The distributed BCSR operator on the CPU: each rank's rows, `y_local <- A x` with the
//! halo exchange overlapped with the interior SpMV. It is a [`LinOp`], so GMRES runs on
//! it unchanged (with [`crate::krylov::cpu::gmres_distributed`] for the reductions).

use std::sync::Mutex;

use super::halo::{HaloPlan, SplitRows, split_rows};
use super::partition::RowPartition;
use crate::blas1::Element;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::krylov::LinOp;
use crate::sparse::{Bcsr, MatrixScalar, cpu};

/// One rank's part of a distributed square BCSR matrix.
///
/// ```
/// use ferrocuda::distributed::{DistributedBcsr, RowPartition, run_on_threads};
/// use ferrocuda::krylov::LinOp;
/// use ferrocuda::sparse::generate::{TraceSpec, trace_like};
/// let spec = TraceSpec::new(3, 4, 2, 4);
/// let a = trace_like::<f64>(&spec)?;
/// let part = RowPartition::grid_blocks(&spec, 2)?;
/// let x: Vec<f64> = (0..a.n_rows()).map(|i| (i % 7) as f64).collect();
/// let mut y = vec![0.0; a.n_rows()];
/// a.apply(&x, &mut y)?;
/// let parts = run_on_threads(2, |comm| {
///     let rank = comm.rank();
///     let op = DistributedBcsr::new(comm, &part, part.local_rows(&a, rank)?)?;
///     let mut y_local = vec![0.0; LinOp::<f64>::nrows(&op)];
///     op.apply(part.local(rank, 5, &x)?, &mut y_local)?;
///     Ok(y_local)
/// })?;
/// let y_dist = part.gather(5, &parts)?;
/// assert!(y.iter().zip(&y_dist).all(|(a, b)| (a - b).abs() <= 1e-12 * a.abs().max(1.0)));
/// # use ferrocuda::distributed::Communicator;
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub struct DistributedBcsr<'c, A> {
    comm: &'c dyn Communicator,
    rows: SplitRows<A>,
    plan: HaloPlan,
    /// Received ghost blocks, reused between applications (holds `V`s; `u64` words so
    /// that any element type is aligned).
    ghosts: Mutex<Vec<u64>>,
}

impl<A: Element> std::fmt::Debug for DistributedBcsr<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedBcsr")
            .field("rank", &self.comm.rank())
            .field("ranks", &self.comm.size())
            .field("block_rows", &self.rows.interior.n_block_rows())
            .field("ghosts", &self.plan.ghosts.len())
            .finish()
    }
}

impl<'c, A: Element> DistributedBcsr<'c, A> {
    /// The operator of `comm.rank()` from its rows `local` (global block columns, from
    /// [`RowPartition::local_rows`] or built by the rank itself). Collective (the halo
    /// plan is agreed on). Errors: as [`HaloPlan::build`].
    pub fn new(comm: &'c dyn Communicator, part: &RowPartition, local: Bcsr<A>) -> Result<Self> {
        let plan = HaloPlan::build(comm, part, &local)?;
        let rows = split_rows(&local, &part.range(comm.rank()), &plan);
        Ok(DistributedBcsr {
            comm,
            rows,
            plan,
            ghosts: Mutex::new(Vec::new()),
        })
    }
}

impl<A: Element> DistributedBcsr<'_, A> {
    /// The halo plan.
    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// The local rows split into interior and halo parts.
    pub fn rows(&self) -> &SplitRows<A> {
        &self.rows
    }

    /// Block size.
    pub fn b(&self) -> usize {
        self.rows.interior.b()
    }

    /// The communicator.
    pub fn comm(&self) -> &dyn Communicator {
        self.comm
    }
}

impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for DistributedBcsr<'_, A> {
    fn nrows(&self) -> usize {
        self.rows.interior.n_rows()
    }

    fn ncols(&self) -> usize {
        self.rows.interior.n_cols()
    }

    /// Posts the blocks the peers need, runs the interior SpMV while they travel, then
    /// adds the halo rows' ghost part.
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        let b = self.b();
        let mut buf: Vec<V> = Vec::new();
        for (peer, list) in &self.plan.send {
            buf.clear();
            for &r in list {
                let r = r as usize;
                buf.extend_from_slice(&x[r * b..(r + 1) * b]);
            }
            self.comm.send(*peer, bytemuck::cast_slice(&buf))?;
        }
        cpu::spmv_bcsr(V::ONE, &self.rows.interior, x, V::ZERO, y)?;
        if self.plan.ghosts.is_empty() {
            return Ok(());
        }
        let mut ghosts = self.ghosts.lock().map_err(|_| Error::InvalidArgument {
            op: "DistributedBcsr::apply",
            reason: "a previous application panicked".into(),
        })?;
        let bytes = self.plan.ghosts.len() * b * std::mem::size_of::<V>();
        // Zeroed words are valid `V`s (Pod).
        ghosts.resize(bytes.div_ceil(8), 0);
        let words: &mut [u8] = bytemuck::cast_slice_mut(&mut ghosts[..]);
        let xg: &mut [V] = bytemuck::cast_slice_mut(&mut words[..bytes]);
        for (peer, r) in &self.plan.recv {
            let part = &mut xg[r.start * b..r.end * b];
            self.comm.recv(*peer, bytemuck::cast_slice_mut(part))?;
        }
        cpu::spmv_bcsr_mapped(V::ONE, &self.rows.halo, &self.rows.map, xg, V::ONE, y)?;
        Ok(())
    }
}
