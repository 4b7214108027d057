//! Row partitions: which contiguous range of block rows each rank owns, and the rows a
//! rank takes out of a global matrix.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::sparse::generate::TraceSpec;
use crate::sparse::{Bcsr, BcsrParts, Element};

/// Contiguous ranges of block rows (scalar rows for `b = 1`), one per rank, in rank
/// order; vectors are split the same way (block row `i` owns entries `i b .. i b + b`).
///
/// ```
/// use ferrocuda::distributed::RowPartition;
/// let p = RowPartition::even(10, 3)?;
/// assert_eq!((p.range(0), p.range(1), p.range(2)), (0..4, 4..7, 7..10));
/// assert_eq!(p.owner(6), 1);
/// # Ok::<(), ferrocuda::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPartition {
    starts: Vec<usize>,
}

fn bad(op: &'static str, reason: String) -> Error {
    Error::InvalidArgument { op, reason }
}

impl RowPartition {
    /// From the first block row of each rank plus the total, e.g. `[0, 4, 7, 10]`.
    /// Errors: fewer than two entries, not starting at 0, decreasing.
    pub fn from_starts(starts: Vec<usize>) -> Result<Self> {
        const OP: &str = "RowPartition::from_starts";
        if starts.len() < 2 || starts[0] != 0 {
            return Err(bad(
                OP,
                format!("starts must begin at 0 and hold at least one range, got {starts:?}"),
            ));
        }
        if let Some(w) = starts.windows(2).position(|w| w[1] < w[0]) {
            return Err(bad(
                OP,
                format!(
                    "starts decrease at rank {}: {} after {}",
                    w + 1,
                    starts[w + 1],
                    starts[w]
                ),
            ));
        }
        Ok(RowPartition { starts })
    }

    /// `n` block rows over `parts` ranks, the first `n % parts` ranks one row more.
    /// Errors: `parts == 0`.
    pub fn even(n: usize, parts: usize) -> Result<Self> {
        if parts == 0 {
            return Err(bad("RowPartition::even", "zero ranks".into()));
        }
        let (q, r) = (n / parts, n % parts);
        let starts = (0..=parts).map(|p| p * q + p.min(r)).collect();
        Ok(RowPartition { starts })
    }

    /// Ranges with about the same number of stored blocks each (the SpMV work): rank
    /// `p` starts at the first block row where the blocks before it reach `p / parts` of
    /// the total. Errors: `parts == 0`.
    pub fn balanced<T: Element>(a: &Bcsr<T>, parts: usize) -> Result<Self> {
        if parts == 0 {
            return Err(bad("RowPartition::balanced", "zero ranks".into()));
        }
        let rp = a.row_ptr();
        let total = a.nnz_blocks();
        let mut starts = vec![0];
        for p in 1..parts {
            // First row whose preceding blocks reach the target (rows are never split).
            let target = (total as u128 * p as u128).div_ceil(parts as u128) as usize;
            let row = rp.partition_point(|&v| v < target).min(a.n_block_rows());
            starts.push(row.max(*starts.last().unwrap_or(&0)));
        }
        starts.push(a.n_block_rows());
        Ok(RowPartition { starts })
    }

    /// TRACE-like matrices of `spec`: whole grid blocks (with their ghost layers) per
    /// rank, as TRACE distributes them, the grid blocks spread as evenly as possible.
    /// Errors: `parts == 0` or more ranks than grid blocks.
    pub fn grid_blocks(spec: &TraceSpec, parts: usize) -> Result<Self> {
        if parts == 0 || parts > spec.grid_blocks {
            return Err(bad(
                "RowPartition::grid_blocks",
                format!(
                    "{parts} ranks for {} grid blocks: each rank needs at least one whole grid block",
                    spec.grid_blocks
                ),
            ));
        }
        let per = spec.block_rows_per_grid_block();
        let blocks = Self::even(spec.grid_blocks, parts)?;
        Ok(RowPartition {
            starts: blocks.starts.iter().map(|&g| g * per).collect(),
        })
    }

    /// Number of ranks.
    pub fn parts(&self) -> usize {
        self.starts.len() - 1
    }

    /// Block rows of all ranks together.
    pub fn n_block_rows(&self) -> usize {
        *self.starts.last().unwrap_or(&0)
    }

    /// The block rows of `rank` (empty beyond the last rank).
    pub fn range(&self, rank: usize) -> Range<usize> {
        match (self.starts.get(rank), self.starts.get(rank + 1)) {
            (Some(&lo), Some(&hi)) => lo..hi,
            _ => self.n_block_rows()..self.n_block_rows(),
        }
    }

    /// The rank owning block row `row` (`parts()` when `row` is beyond the last).
    pub fn owner(&self, row: usize) -> usize {
        self.starts[1..].partition_point(|&s| s <= row)
    }

    /// The first block row of each rank and the total.
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// `rank`'s part of a global vector with blocks of `b` entries.
    pub fn local<'v, V>(&self, rank: usize, b: usize, global: &'v [V]) -> Result<&'v [V]> {
        self.check_vector("RowPartition::local", b, global.len())?;
        let r = self.range(rank);
        Ok(&global[r.start * b..r.end * b])
    }

    /// The global vector from the ranks' parts, in rank order.
    pub fn gather<V: Copy>(&self, b: usize, parts: &[Vec<V>]) -> Result<Vec<V>> {
        const OP: &str = "RowPartition::gather";
        if parts.len() != self.parts() {
            return Err(bad(
                OP,
                format!("{} parts for {} ranks", parts.len(), self.parts()),
            ));
        }
        for (rank, p) in parts.iter().enumerate() {
            let want = self.range(rank).len() * b;
            if p.len() != want {
                return Err(bad(
                    OP,
                    format!(
                        "rank {rank} holds {} entries, its rows need {want}",
                        p.len()
                    ),
                ));
            }
        }
        Ok(parts.concat())
    }

    fn check_vector(&self, op: &'static str, b: usize, len: usize) -> Result<()> {
        if len == self.n_block_rows() * b {
            Ok(())
        } else {
            Err(bad(
                op,
                format!(
                    "the vector has {len} entries, the partition covers {} block rows of {b}",
                    self.n_block_rows()
                ),
            ))
        }
    }

    /// `rank`'s block rows of `a` (global block-column numbering kept): what each rank
    /// of a distributed solve starts from. Errors: `a` does not have the partition's
    /// block rows.
    pub fn local_rows<T: Element>(&self, a: &Bcsr<T>, rank: usize) -> Result<Bcsr<T>> {
        if a.n_block_rows() != self.n_block_rows() {
            return Err(bad(
                "RowPartition::local_rows",
                format!(
                    "the matrix has {} block rows, the partition {}",
                    a.n_block_rows(),
                    self.n_block_rows()
                ),
            ));
        }
        let r = self.range(rank);
        let rp = a.row_ptr();
        let (first, last) = (rp[r.start], rp[r.end]);
        let bb = a.b() * a.b();
        let parts = BcsrParts {
            b: a.b(),
            layout: a.layout(),
            n_block_rows: r.len(),
            n_block_cols: a.n_block_cols(),
            row_ptr: rp[r.start..=r.end].iter().map(|&p| p - first).collect(),
            col_idx: a.col_idx()[first..last].to_vec(),
            values: a.values()[first * bb..last * bb].to_vec(),
        };
        Ok(Bcsr::from_parts(parts).map_err(|e| e.error)?)
    }
}
