//! What each rank holds and exchanges in one distributed SpMV of a TRACE-like matrix
//! split by whole grid blocks: the inputs of the scale model.
//!
//! [`loads`] takes the ranks' ranges from the library's partition
//! ([`RowPartition::grid_blocks`]) and counts each rank's nonzero blocks with the
//! generator's own count ([`TraceSpec::nonzero_blocks`] of the rank's chain of grid
//! blocks) and its halo from the stencil's reach along `r` ([`GHOST`] cell planes), so
//! it runs in microseconds for a billion rows over 1,024 ranks. [`loads_from_library`]
//! computes the same numbers the slow way, from a generated matrix, the collective
//! [`HaloPlan::build`] and [`split_rows`], and the span rule of the GPU operator
//! ([`ferrocuda::distributed::DeviceDistributedBcsr`]: a peer gets the block rows from
//! the first to the last it needs); the tests hold the two equal on many partitions.

use ferrocuda::distributed::{HaloPlan, RowPartition, run_on_threads, split_rows};
use ferrocuda::sparse::generate::{B, GHOST, TraceSpec, trace_like};
use ferrocuda::{Error, Result};
use serde::Serialize;

/// Couplings along `r` reach this many cell planes (the 13-point stencil's `+-1, +-2`).
const REACH: usize = 2;

/// Stored entries of a diagonal block (dense) and of an off-diagonal block (its fixed
/// structural zeros left out), as SBELL stores them ([`ferrocuda::sparse::generate`]).
const DIAG_ENTRIES: usize = B * B;
const OFFDIAG_ENTRIES: usize = B * B - ferrocuda::sparse::generate::OFFDIAG_ZEROS.len();

/// One rank's part of a distributed SpMV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankLoad {
    /// Grid blocks owned.
    pub grid_blocks: usize,
    /// Local rows (vector entries), ghost-layer rows included as the vectors hold them.
    pub rows: usize,
    /// Non-empty block rows (the real cells): the rows SBELL stores.
    pub stored_rows: usize,
    /// Nonzero blocks in local columns (the interior SpMV).
    pub interior_blocks: usize,
    /// Stored entries of the interior blocks.
    pub interior_entries: usize,
    /// Nonzero blocks in ghost columns (the halo SpMV).
    pub halo_blocks: usize,
    /// Block rows with at least one ghost column.
    pub halo_rows: usize,
    /// Ghost blocks received ([`HaloPlan::ghost_blocks`]).
    pub ghost_blocks: usize,
    /// Blocks received as spans (the GPU operator's messages, ghost cells included).
    pub recv_span_blocks: usize,
    /// Blocks sent as spans.
    pub send_span_blocks: usize,
    /// Largest span to or from one peer, in blocks.
    pub largest_span_blocks: usize,
    /// Peers exchanged with (one message each way per SpMV).
    pub peers: Vec<usize>,
}

impl RankLoad {
    /// Bytes one interior SpMV moves with values of `value` bytes: the SBELL entries,
    /// one 4-byte column per block, one 8-byte row index per stored row, `x` read and
    /// `y` written (the convention of `bench gmres`'s floor).
    pub fn interior_bytes(&self, value: usize) -> f64 {
        (self.interior_entries * value
            + self.interior_blocks * 4
            + self.stored_rows * 8
            + 2 * self.rows * value) as f64
    }

    /// Bytes of the rank's matrix on the device: both SBELL parts (entries, columns,
    /// row indices).
    pub fn matrix_bytes(&self, value: usize) -> f64 {
        (self.interior_entries * value
            + self.interior_blocks * 4
            + self.stored_rows * 8
            + self.halo_blocks * (OFFDIAG_ENTRIES * value + 4)
            + self.halo_rows * 8) as f64
    }

    /// Bytes of the halo SpMV (`y += A_halo x_ghost` over the halo rows only): its
    /// entries and columns, its row indices, the received spans read, `y` of its rows
    /// read and written. Zero without peers.
    pub fn halo_bytes(&self, value: usize) -> f64 {
        if self.peers.is_empty() {
            return 0.0;
        }
        (self.halo_blocks * (OFFDIAG_ENTRIES * value + 4)
            + self.halo_rows * 8
            + self.recv_span_blocks * B * value
            + 2 * self.halo_rows * B * value) as f64
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        op: "bench scale-model",
        reason,
    }
}

/// Stored entries of `blocks` nonzero blocks of which `cells` are diagonal.
fn entries(blocks: usize, cells: usize) -> usize {
    cells * DIAG_ENTRIES + (blocks - cells) * OFFDIAG_ENTRIES
}

/// The blocks of one span: the block rows of a grid block from the first cell of plane
/// `lo` to the last cell of plane `hi` (the generator's numbering, ghost cells between
/// them included).
fn span(spec: &TraceSpec, lo: usize, hi: usize) -> usize {
    spec.block_row(0, spec.nx - 1, spec.ntheta - 1, hi) - spec.block_row(0, 0, 0, lo) + 1
}

/// Each rank's load for `spec` split over `parts` ranks by whole grid blocks
/// ([`RowPartition::grid_blocks`]), in rank order. Errors: the partition's (more ranks
/// than grid blocks, zero ranks), a grid block with an empty side, or fewer than two
/// cell planes along `r` (the stencil would then reach past the neighbouring rank).
pub fn loads(spec: &TraceSpec, parts: usize) -> Result<Vec<RankLoad>> {
    if spec.nx == 0 || spec.ntheta == 0 || spec.nr < REACH {
        return Err(bad(format!(
            "grid blocks of {} x {} x {} cells: the model needs at least 1 x 1 x {REACH}",
            spec.nx, spec.ntheta, spec.nr
        )));
    }
    let part = RowPartition::grid_blocks(spec, parts)?;
    let per = spec.block_rows_per_grid_block();
    let plane = spec.nx * spec.ntheta;
    // Rows and span of one boundary: the REACH planes next to it.
    let boundary_span = span(spec, 0, REACH - 1);
    let connected = spec.connect_grid_blocks;
    Ok((0..parts)
        .map(|rank| {
            let r = part.range(rank);
            let (g0, g1) = (r.start / per, r.end / per);
            let k = g1 - g0;
            let chain =
                TraceSpec::new(spec.nx, spec.ntheta, spec.nr, k).connect_grid_blocks(connected);
            let stored_rows = chain.cells();
            let interior_blocks = chain.nonzero_blocks();
            let peers: Vec<usize> = [
                (connected && g0 > 0).then(|| rank - 1),
                (connected && g1 < spec.grid_blocks).then_some(rank + 1),
            ]
            .into_iter()
            .flatten()
            .collect();
            let np = peers.len();
            RankLoad {
                grid_blocks: k,
                rows: r.len() * B,
                stored_rows,
                interior_blocks,
                interior_entries: entries(interior_blocks, stored_rows),
                // Across a boundary a cell couples to the cells 1 and 2 planes away:
                // 1 + 2 blocks per (x, theta) column and neighbour.
                halo_blocks: np * plane * (1..=REACH).sum::<usize>(),
                // The rows within REACH planes of a boundary (both boundaries' rows
                // overlap where the rank has fewer than 2 REACH planes).
                halo_rows: plane * (np * REACH).min(k * spec.nr),
                ghost_blocks: np * plane * GHOST,
                recv_span_blocks: np * boundary_span,
                send_span_blocks: np * boundary_span,
                largest_span_blocks: if np > 0 { boundary_span } else { 0 },
                peers,
            }
        })
        .collect())
}

/// [`loads`] computed from the library's own objects: `spec`'s matrix generated (in
/// `f32`), each rank's rows taken by [`RowPartition::local_rows`], its [`HaloPlan`]
/// agreed on by threads as ranks, its rows split by [`split_rows`], and the spans of
/// the GPU operator. For checking [`loads`] on small matrices (it holds the whole
/// matrix).
pub fn loads_from_library(spec: &TraceSpec, parts: usize) -> Result<Vec<RankLoad>> {
    let a = trace_like::<f32>(spec)?;
    let part = RowPartition::grid_blocks(spec, parts)?;
    let per = spec.block_rows_per_grid_block();
    run_on_threads(parts, |comm| {
        use ferrocuda::distributed::Communicator;
        let rank = comm.rank();
        let own = part.range(rank);
        let local = part.local_rows(&a, rank)?;
        let plan = HaloPlan::build(comm, &part, &local)?;
        let split = split_rows(&local, &own, &plan);
        let rp = local.row_ptr();
        let stored_rows = (0..local.n_block_rows())
            .filter(|&i| rp[i + 1] > rp[i])
            .count();
        let recv: Vec<usize> = plan
            .recv
            .iter()
            .map(|(_, r)| plan.ghosts[r.end - 1] - plan.ghosts[r.start] + 1)
            .collect();
        let send: Vec<usize> = plan
            .send
            .iter()
            .map(|(_, list)| {
                let lo = list.iter().min().copied().unwrap_or(0) as usize;
                let hi = list.iter().max().copied().unwrap_or(0) as usize;
                hi - lo + 1
            })
            .collect();
        let mut peers: Vec<usize> = plan
            .recv
            .iter()
            .map(|(p, _)| *p)
            .chain(plan.send.iter().map(|(p, _)| *p))
            .collect();
        peers.sort_unstable();
        peers.dedup();
        let interior_blocks = split.interior.nnz_blocks();
        Ok(RankLoad {
            grid_blocks: own.len() / per,
            rows: own.len() * B,
            stored_rows,
            interior_blocks,
            interior_entries: entries(interior_blocks, stored_rows),
            halo_blocks: split.halo.nnz_blocks(),
            halo_rows: split.map.len(),
            ghost_blocks: plan.ghost_blocks(),
            recv_span_blocks: recv.iter().sum(),
            send_span_blocks: send.iter().sum(),
            largest_span_blocks: recv.iter().chain(&send).copied().max().unwrap_or(0),
            peers,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick count equals the library's plan, split and spans on small matrices:
    /// 16 to 64 grid blocks over 1 to 16 ranks (even and uneven splits), and shapes
    /// with the fewest planes the model takes.
    #[test]
    fn loads_match_the_library_partition() {
        let shapes = [(3, 4, 2), (4, 3, 5), (2, 2, 3)];
        for (i, &(nx, nt, nr)) in shapes.iter().enumerate() {
            for (blocks, ranks) in [(16, 1), (16, 2), (16, 3), (16, 16), (24, 5), (64, 16)] {
                if i > 0 && blocks == 64 {
                    continue; // one large case is enough
                }
                let spec = TraceSpec::new(nx, nt, nr, blocks);
                let quick = loads(&spec, ranks).unwrap();
                let slow = loads_from_library(&spec, ranks).unwrap();
                assert_eq!(
                    quick, slow,
                    "{nx}x{nt}x{nr}, {blocks} grid blocks, {ranks} ranks"
                );
            }
        }
        // Independent grid blocks: no halo at all.
        let spec = TraceSpec::new(3, 4, 3, 16).connect_grid_blocks(false);
        assert_eq!(
            loads(&spec, 4).unwrap(),
            loads_from_library(&spec, 4).unwrap()
        );
    }

    /// The measured geometry (grid blocks of 40 x 80 x 40): a middle rank receives two
    /// planes from each side, 6,400 ghost blocks per neighbour as `bench scaling`
    /// reported, in spans of 7,212 blocks.
    #[test]
    fn trace_geometry_halo() {
        let spec = TraceSpec::new(40, 80, 40, 12);
        let l = loads(&spec, 3).unwrap();
        assert_eq!(l[0].ghost_blocks, 6400);
        assert_eq!(l[1].ghost_blocks, 12_800);
        assert_eq!(l[1].peers, vec![0, 2]);
        assert_eq!(l[1].largest_span_blocks, (84 + 80 - 1) * 44 + 40);
        assert_eq!(l[1].rows, 4 * 44 * 84 * 44 * 5);
        let whole = loads(&spec, 1).unwrap();
        let interior: usize = l.iter().map(|r| r.interior_blocks + r.halo_blocks).sum();
        assert_eq!(interior, whole[0].interior_blocks);
        assert_eq!(whole[0].interior_blocks, spec.nonzero_blocks());
    }

    #[test]
    fn bad_shapes_are_refused() {
        let e = loads(&TraceSpec::new(3, 3, 1, 4), 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 x 3 x 1"), "{e}");
        let e = loads(&TraceSpec::new(3, 3, 3, 4), 5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("5 ranks for 4 grid blocks"), "{e}");
    }
}
