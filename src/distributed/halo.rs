//! The halo plan of one rank: which entries of `x` it needs from other ranks (its
//! ghosts), which of its own entries each other rank needs, and its rows split into the
//! part that needs no ghost and the part that does.

use std::ops::Range;

use super::partition::RowPartition;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::sparse::{Bcsr, BcsrParts, Element, Index};

/// What one rank exchanges in every distributed SpMV. Block columns, not scalars: a
/// ghost is one block of `b` entries of `x`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaloPlan {
    /// Global block columns this rank reads but does not own, increasing.
    pub ghosts: Vec<usize>,
    /// Per peer, in increasing rank order: the range of `ghosts` it sends us.
    pub recv: Vec<(usize, Range<usize>)>,
    /// Per peer, in increasing rank order: our local block rows it needs, in the order
    /// of its ghosts.
    pub send: Vec<(usize, Vec<Index>)>,
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        op: "HaloPlan::build",
        reason,
    }
}

impl HaloPlan {
    /// Builds the plan of `comm.rank()` from its rows `local` (global block columns, as
    /// [`RowPartition::local_rows`] gives). Collective: every rank calls it; the ranks
    /// tell each other what they need (a count matrix by all-reduce, then the index
    /// lists point to point), so no rank needs the global matrix.
    /// Errors: the partition does not match the communicator or the rows, a column
    /// beyond the matrix, ranks with different block sizes or partitions. Every rank
    /// checks its own input first and the ranks agree on the outcome (one all-reduce)
    /// before any message, so an invalid input on one rank is an error on all of them,
    /// never a wait.
    pub fn build<T: Element>(
        comm: &dyn Communicator,
        part: &RowPartition,
        local: &Bcsr<T>,
    ) -> Result<Self> {
        Self::build_checked(comm, part, local, None)
    }

    /// [`Self::build`], with `caller`: the error of a check the caller made before the
    /// plan (e.g. a communicator on another device), which enters the same agreement:
    /// this rank returns it, every other rank fails too, none waits.
    pub(crate) fn build_checked<T: Element>(
        comm: &dyn Communicator,
        part: &RowPartition,
        local: &Bcsr<T>,
        caller: Option<Error>,
    ) -> Result<Self> {
        let (me, size) = (comm.rank(), comm.size());
        if me >= size {
            // Not a world this rank can take part in: no collective at all.
            return Err(bad(format!(
                "the communicator says rank {me} of {size}: a rank must be below the size"
            )));
        }
        let own = part.range(me);
        let problem = caller.or_else(|| input_problem(me, size, part, local).map(bad));
        // Agree before any message, so no rank waits for a failed one: which ranks
        // failed their checks (one slot each), and whether all have the same block size
        // and partition size (sums and sums of squares: for integers, size * variance =
        // sum(v^2) - sum(v)^2 / size is 0 when all are equal, else at least 1/2; exact
        // in f64 while the sums of squares stay below ~1e14, a loose check beyond).
        let shared = [local.b() as f64, part.n_block_rows() as f64];
        let mut v = vec![0.0; size + 2 * shared.len()];
        v[me] = f64::from(u8::from(problem.is_some()));
        for (i, x) in shared.iter().enumerate() {
            v[size + 2 * i] = *x;
            v[size + 2 * i + 1] = x * x;
        }
        comm.all_reduce_sum(&mut v)?;
        if let Some(e) = problem {
            return Err(e);
        }
        let failed: Vec<String> = (0..size)
            .filter(|&r| v[r] > 0.0)
            .map(|r| r.to_string())
            .collect();
        if !failed.is_empty() {
            return Err(bad(format!(
                "rank(s) {} refused their input (each names the reason in its own error), \
                 so rank {me} stops before the exchange",
                failed.join(", ")
            )));
        }
        let n = size as f64;
        for (i, what) in ["block size", "partition (block rows)"].iter().enumerate() {
            let (sum, squares) = (v[size + 2 * i], v[size + 2 * i + 1]);
            if squares - sum * sum / n > 0.25 + 8.0 * f64::EPSILON * squares {
                return Err(bad(format!(
                    "the ranks disagree on the {what}: rank {me} has {}, the mean over the \
                     ranks is {}",
                    shared[i],
                    sum / n
                )));
            }
        }

        let mut ghosts: Vec<usize> = local
            .col_idx()
            .iter()
            .map(|&c| c as usize)
            .filter(|c| !own.contains(c))
            .collect();
        ghosts.sort_unstable();
        ghosts.dedup();
        // Grouped by owner: partitions are contiguous ranges in rank order.
        let mut recv: Vec<(usize, Range<usize>)> = Vec::new();
        for (i, &g) in ghosts.iter().enumerate() {
            let owner = part.owner(g);
            match recv.last_mut() {
                Some((p, r)) if *p == owner => r.end = i + 1,
                _ => recv.push((owner, i..i + 1)),
            }
        }

        // counts[a * size + b]: ghosts rank a needs from rank b.
        let mut counts = vec![0.0; size * size];
        for (peer, r) in &recv {
            counts[me * size + peer] = r.len() as f64;
        }
        comm.all_reduce_sum(&mut counts)?;
        for (peer, r) in &recv {
            let list: Vec<Index> = ghosts[r.clone()].iter().map(|&g| g as Index).collect();
            comm.send(*peer, bytemuck::cast_slice(&list))?;
        }
        let mut send = Vec::new();
        for peer in (0..size).filter(|&p| p != me) {
            let n = counts[peer * size + me] as usize;
            if n == 0 {
                continue;
            }
            let mut list = vec![0 as Index; n];
            comm.recv(peer, bytemuck::cast_slice_mut(&mut list))?;
            for g in &mut list {
                let gi = *g as usize;
                if !own.contains(&gi) {
                    return Err(bad(format!(
                        "rank {peer} asks rank {me} for block row {gi}, which it does not own"
                    )));
                }
                *g = (gi - own.start) as Index;
            }
            send.push((peer, list));
        }
        Ok(HaloPlan { ghosts, recv, send })
    }

    /// Ghost blocks received per SpMV.
    pub fn ghost_blocks(&self) -> usize {
        self.ghosts.len()
    }

    /// Blocks sent per SpMV.
    pub fn sent_blocks(&self) -> usize {
        self.send.iter().map(|(_, l)| l.len()).sum()
    }
}

/// Why this rank's rows do not fit the partition and the communicator, if they do not.
fn input_problem<T: Element>(
    me: usize,
    size: usize,
    part: &RowPartition,
    local: &Bcsr<T>,
) -> Option<String> {
    let own = part.range(me);
    if part.parts() != size {
        Some(format!(
            "the partition has {} ranks, the communicator {size}",
            part.parts()
        ))
    } else if local.n_block_rows() != own.len() {
        Some(format!(
            "rank {me} holds {} block rows, the partition gives it {}",
            local.n_block_rows(),
            own.len()
        ))
    } else if local.n_block_cols() != part.n_block_rows() {
        Some(format!(
            "the rows have {} block columns, the partition covers {} block rows (square matrices only)",
            local.n_block_cols(),
            part.n_block_rows()
        ))
    } else {
        None
    }
}

/// A rank's rows split for overlap: `interior` (all local block rows, only the blocks
/// in local columns, renumbered from 0) and `halo` (only the block rows that touch a
/// ghost, only those blocks, columns numbered by position in the plan's ghosts; `map`
/// gives each halo row's local block row).
#[derive(Debug, Clone)]
pub struct SplitRows<T> {
    /// Local rows x local columns.
    pub interior: Bcsr<T>,
    /// Rows touching ghosts x ghosts (ghost-compacted).
    pub halo: Bcsr<T>,
    /// Local block row of each halo row, increasing.
    pub map: Vec<Index>,
}

/// Splits `local` (global block columns) by `plan` for the rows `own` of this rank.
pub fn split_rows<T: Element>(
    local: &Bcsr<T>,
    own: &Range<usize>,
    plan: &HaloPlan,
) -> SplitRows<T> {
    let bb = local.b() * local.b();
    let (rp, ci, vals) = (local.row_ptr(), local.col_idx(), local.values());
    let mut inner = (vec![0], Vec::new(), Vec::new());
    let mut halo = (vec![0], Vec::new(), Vec::new());
    let mut map = Vec::new();
    for r in 0..local.n_block_rows() {
        let mut touched = false;
        for k in rp[r]..rp[r + 1] {
            let c = ci[k] as usize;
            let block = &vals[k * bb..(k + 1) * bb];
            if own.contains(&c) {
                inner.1.push((c - own.start) as Index);
                inner.2.extend_from_slice(block);
            } else {
                // Present: the plan's ghosts are exactly the non-local columns.
                let g = plan.ghosts.partition_point(|&x| x < c);
                halo.1.push(g as Index);
                halo.2.extend_from_slice(block);
                touched = true;
            }
        }
        inner.0.push(inner.1.len());
        if touched {
            halo.0.push(halo.1.len());
            map.push(r as Index);
        }
    }
    let parts = |(row_ptr, col_idx, values): (Vec<usize>, Vec<Index>, Vec<T>), rows, cols| {
        Bcsr::from_parts_trusted(BcsrParts {
            b: local.b(),
            layout: local.layout(),
            n_block_rows: rows,
            n_block_cols: cols,
            row_ptr,
            col_idx,
            values,
        })
    };
    let n = local.n_block_rows();
    let rows = map.len();
    SplitRows {
        interior: parts(inner, n, own.len()),
        halo: parts(halo, rows, plan.ghosts.len()),
        map,
    }
}
