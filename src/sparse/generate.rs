//! Test matrices shaped like the linear systems of the TRACE flow solver (thesis Table 4.1):
//! 3D Euler, 5 conservative variables per cell, 13-point stencil, 5x5 blocks in BCSR.
//!
//! # Structure
//! * `grid_blocks` grid blocks (8 in every thesis case), each of `nx x ntheta x nr` cells,
//!   stacked along `r`.
//! * Index space: each grid block is surrounded by a **2-cell ghost layer**, so it spans
//!   `(nx+4)(ntheta+4)(nr+4)` block rows; cell `(ix, it, ir)` of grid block `g` is block
//!   row `g G + ((ir+2)(ntheta+4) + it+2)(nx+4) + ix+2` with `G = (nx+4)(ntheta+4)(nr+4)`
//!   (x fastest). Ghost block rows are **completely empty**, and no block column points at
//!   a ghost cell (ghost rows are what [`super::Bcsr::compact_empty_block_rows`] removes).
//! * Stencil: each cell couples to itself and to the cells at `+-1`, `+-2` along x, theta
//!   and r (13 points), one 5x5 block each. Couplings that leave the domain along x or theta
//!   are dropped. Along r, with [`TraceSpec::connect_grid_blocks`] (the default) a coupling
//!   that leaves grid block `g` connects to the neighbouring grid block `g +- 1` (the
//!   global r index `g nr + ir` moves by the offset) and is dropped only at the ends of the
//!   stack; without it, every grid block is independent (block-diagonal matrix).
//! * Nonzero blocks ([`TraceSpec::nonzero_blocks`]): `cells + p(nx) ntheta R + p(ntheta) nx R
//!   + p_r nx ntheta`, with `p(n) = 2 max(n-1, 0) + 2 max(n-2, 0)` the ordered pairs at
//!   distance 1 or 2 on a line of `n` cells, `R = grid_blocks nr`, and `p_r = p(R)`
//!   (connected) or `grid_blocks p(nr)` (independent).
//! * Values, seeded and independent of the thread count: off-diagonal blocks have parts
//!   uniform in [-1, 1] except the fixed pattern [`OFFDIAG_ZEROS`] (4 of 25 = 16% structural
//!   zeros, "about 17%"); diagonal blocks are dense, their off-diagonal entries uniform
//!   in [-1, 1] and their diagonal entries real, `1 + sum of |a_ij|` over the rest of the
//!   row, so the matrix is strictly row diagonally dominant by a margin of 1 (GMRES and
//!   block Jacobi converge). Real types take the real parts of the same draws.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::{
    Bcsr, BlockLayout, BlockShape, Element, Index, SparseError, check_host_bytes,
    check_index_range, checked_mul, storage_bytes, try_vec, try_with_capacity,
};
use crate::RealScalar;
use crate::blas1::reference::widen;

/// Block size of the generated matrices (5 conservative variables).
pub const B: usize = 5;
/// Width of the ghost layer, in cells, on every side of a grid block.
pub const GHOST: usize = 2;
/// `(row, col)` positions that are zero inside every off-diagonal block (4 of 25 = 16%).
pub const OFFDIAG_ZEROS: [(usize, usize); 4] = [(0, 3), (1, 4), (3, 0), (4, 2)];

/// Geometry and seed of a TRACE-like test matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceSpec {
    /// Cells along x per grid block.
    pub nx: usize,
    /// Cells along theta per grid block.
    pub ntheta: usize,
    /// Cells along r per grid block.
    pub nr: usize,
    /// Grid blocks (stacked along r).
    pub grid_blocks: usize,
    /// Whether couplings along r cross into the neighbouring grid block (default true).
    pub connect_grid_blocks: bool,
    /// Seed of the values.
    pub seed: u64,
}

/// Thesis Table 4.1: `(nx, ntheta, nr)` of cases 1 to 6, 8 grid blocks each.
pub const CASES: [(usize, usize, usize); 6] = [
    (10, 40, 20),
    (10, 40, 40),
    (20, 40, 20),
    (10, 40, 80),
    (10, 80, 40),
    (40, 80, 40),
];

/// Test case `id` (1..=6) of thesis Table 4.1: 8 grid blocks of `CASES[id-1]` cells.
/// Case 1 has 64,000 cells (about 0.8 M blocks, 20 M stored entries); case 6 has
/// 1,024,000 cells (about 13 M blocks, 330 M stored entries: GiBs, not for unit tests).
/// Errors: `id` outside 1..=6.
pub fn case(id: usize) -> Result<TraceSpec, SparseError> {
    match id.checked_sub(1).and_then(|i| CASES.get(i)) {
        Some(&(nx, ntheta, nr)) => Ok(TraceSpec::new(nx, ntheta, nr, 8)),
        None => Err(SparseError::InvalidArgument {
            op: "generate::case",
            reason: format!("test case {id} does not exist (1..=6)"),
        }),
    }
}

/// A preset with more than 1e8 structural nonzeros: 8 grid blocks of 20 x 80 x 40 cells
/// (512,000 cells, about 6.6 M blocks, 166 M stored entries, 140 M nonzeros). Several GiB
/// in complex double: for benchmarks on big machines only.
pub fn large() -> TraceSpec {
    TraceSpec::new(20, 80, 40, 8)
}

/// Ordered pairs of cells at distance 1 or 2 on a line of `n` cells.
fn pairs(n: usize) -> usize {
    mul(&[2, n.saturating_sub(1)]).saturating_add(mul(&[2, n.saturating_sub(2)]))
}

/// The product of `f`, saturating at `usize::MAX`.
fn mul(f: &[usize]) -> usize {
    f.iter().fold(1usize, |p, &x| p.saturating_mul(x))
}

impl TraceSpec {
    /// `grid_blocks` grid blocks of `nx x ntheta x nr` cells, connected along r, seed 0.
    pub fn new(nx: usize, ntheta: usize, nr: usize, grid_blocks: usize) -> Self {
        Self {
            nx,
            ntheta,
            nr,
            grid_blocks,
            connect_grid_blocks: true,
            seed: 0,
        }
    }
    setters! {
        /// Sets [`TraceSpec::seed`].
        seed: u64;
        /// Sets [`TraceSpec::connect_grid_blocks`].
        connect_grid_blocks: bool;
    }
    // The counts below saturate at `usize::MAX` (a spec too large for any machine, which
    // `trace_like` refuses) instead of overflowing.

    /// Real cells (`grid_blocks nx ntheta nr`).
    pub fn cells(&self) -> usize {
        mul(&[self.grid_blocks, self.nx, self.ntheta, self.nr])
    }
    /// Block rows of one grid block including its ghost layer.
    pub fn block_rows_per_grid_block(&self) -> usize {
        let g = |n: usize| n.saturating_add(2 * GHOST);
        mul(&[g(self.nx), g(self.ntheta), g(self.nr)])
    }
    /// Block rows (= block columns) of the matrix, ghosts included.
    pub fn block_rows(&self) -> usize {
        mul(&[self.grid_blocks, self.block_rows_per_grid_block()])
    }
    /// Nonzero blocks (formula in the [module docs](self)).
    pub fn nonzero_blocks(&self) -> usize {
        let rr = mul(&[self.grid_blocks, self.nr]);
        let pr = if self.connect_grid_blocks {
            pairs(rr)
        } else {
            mul(&[self.grid_blocks, pairs(self.nr)])
        };
        self.cells()
            .saturating_add(mul(&[pairs(self.nx), self.ntheta, rr]))
            .saturating_add(mul(&[pairs(self.ntheta), self.nx, rr]))
            .saturating_add(mul(&[pr, self.nx, self.ntheta]))
    }
    /// Structural nonzero entries: 25 per diagonal block, 21 per off-diagonal block.
    pub fn nonzero_entries(&self) -> usize {
        let off = self.nonzero_blocks() - self.cells();
        mul(&[self.cells(), B * B]).saturating_add(mul(&[off, B * B - OFFDIAG_ZEROS.len()]))
    }
    /// The block row of cell `(ix, it, ir)` of grid block `g`.
    pub fn block_row(&self, g: usize, ix: usize, it: usize, ir: usize) -> usize {
        let (px, pt) = (self.nx + 2 * GHOST, self.ntheta + 2 * GHOST);
        g * self.block_rows_per_grid_block() + ((ir + GHOST) * pt + it + GHOST) * px + ix + GHOST
    }
    /// The cell `(g, ix, it, ir)` of a block row, or `None` for a ghost row.
    pub fn cell_of(&self, row: usize) -> Option<(usize, usize, usize, usize)> {
        let (px, pt) = (self.nx + 2 * GHOST, self.ntheta + 2 * GHOST);
        let per = self.block_rows_per_grid_block();
        if per == 0 {
            return None;
        }
        let (g, l) = (row / per, row % per);
        let (x, t, r) = (l % px, (l / px) % pt, l / (px * pt));
        let inside = |v: usize, n: usize| v >= GHOST && v < n + GHOST;
        (g < self.grid_blocks && inside(x, self.nx) && inside(t, self.ntheta) && inside(r, self.nr))
            .then(|| (g, x - GHOST, t - GHOST, r - GHOST))
    }
    /// Whether a block row is a ghost row (empty).
    pub fn is_ghost_block_row(&self, row: usize) -> bool {
        self.cell_of(row).is_none()
    }

    /// Sorted block columns of the couplings of a cell.
    fn columns(&self, (g, ix, it, ir): (usize, usize, usize, usize), out: &mut Vec<usize>) {
        out.clear();
        out.push(self.block_row(g, ix, it, ir));
        for d in [-2i64, -1, 1, 2] {
            let x = ix as i64 + d;
            if x >= 0 && (x as usize) < self.nx {
                out.push(self.block_row(g, x as usize, it, ir));
            }
            let t = it as i64 + d;
            if t >= 0 && (t as usize) < self.ntheta {
                out.push(self.block_row(g, ix, t as usize, ir));
            }
            let (r, n, base) = if self.connect_grid_blocks {
                ((g * self.nr + ir) as i64 + d, self.grid_blocks * self.nr, 0)
            } else {
                (ir as i64 + d, self.nr, g * self.nr)
            };
            if r >= 0 && (r as usize) < n {
                let gr = base + r as usize;
                out.push(self.block_row(gr / self.nr, ix, it, gr % self.nr));
            }
        }
        out.sort_unstable();
    }
}

/// Block rows per rayon task of the generator.
const GEN_CHUNK: usize = 256;

/// Generates the matrix of `spec` as BCSR with `b = 5`, row-major blocks (structure and
/// values in the [module docs](self)). Errors: the size exceeds the index type or memory
/// addressing, or needs more memory than the host may allocate (checked before
/// allocating: `300 x 300 x 300 x 1` is 28 M block rows and 350 M blocks, 140 GB in
/// complex double).
pub fn trace_like<T: Element>(spec: &TraceSpec) -> Result<Bcsr<T>, SparseError> {
    trace_like_with_progress(spec, &crate::progress::Progress::none())
}

/// [`trace_like`], telling `progress` the block rows filled of all of them as it goes
/// (from the worker threads, once per chunk of rows; [`crate::progress`]). The matrix is
/// the same.
pub fn trace_like_with_progress<T: Element>(
    spec: &TraceSpec,
    progress: &crate::progress::Progress,
) -> Result<Bcsr<T>, SparseError> {
    let op = "generate::trace_like";
    let with_ghosts = |n: usize| n.checked_add(2 * GHOST);
    let nbr = with_ghosts(spec.nx)
        .zip(with_ghosts(spec.ntheta))
        .zip(with_ghosts(spec.nr))
        .and_then(|((px, pt), pr)| {
            spec.grid_blocks
                .checked_mul(px)?
                .checked_mul(pt)?
                .checked_mul(pr)
        })
        .ok_or_else(|| SparseError::InvalidArgument {
            op,
            reason: format!("{spec:?} overflows the address space"),
        })?;
    check_index_range(op, "n_rows", checked_mul(op, "rows", nbr, B)?)?;
    // nbr * 5 fits Index, so the block count (at most 13 per cell) cannot overflow.
    let nnzb = spec.nonzero_blocks();
    let what = format!(
        "{op}: {} x {} x {} cells x {} grid blocks, {nbr} block rows with {nnzb} blocks of 5 x 5 {} values",
        spec.nx,
        spec.ntheta,
        spec.nr,
        spec.grid_blocks,
        T::SUFFIX
    );
    check_host_bytes(
        &what,
        storage_bytes(&[
            (2 * nbr as u128 + 1, size_of::<usize>()),
            (nnzb as u128, size_of::<Index>()),
            (nnzb as u128 * (B * B) as u128, size_of::<T>()),
        ]),
    )?;
    // Block counts per row, then offsets.
    let mut counts = try_with_capacity::<usize>(&what, nbr)?;
    (0..nbr)
        .into_par_iter()
        .map_init(Vec::new, |buf, row| match spec.cell_of(row) {
            Some(cell) => {
                spec.columns(cell, buf);
                buf.len()
            }
            None => 0,
        })
        .collect_into_vec(&mut counts);
    let mut row_ptr = try_with_capacity(&what, nbr + 1)?;
    row_ptr.push(0usize);
    for c in &counts {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + c);
    }
    drop(counts);
    debug_assert_eq!(row_ptr[nbr], nnzb);
    let nnzb = row_ptr[nbr];
    let mut col_idx: Vec<Index> = try_vec(&what, nnzb, 0)?;
    let mut values = try_vec(&what, checked_mul(op, "values", nnzb, B * B)?, T::ZERO)?;
    // Split the arrays into per-task pieces (each a contiguous range of block rows).
    let mut tasks = Vec::with_capacity(nbr.div_ceil(GEN_CHUNK));
    {
        let (mut ci, mut vs) = (col_idx.as_mut_slice(), values.as_mut_slice());
        for t in 0..nbr.div_ceil(GEN_CHUNK) {
            let (r0, r1) = (t * GEN_CHUNK, ((t + 1) * GEN_CHUNK).min(nbr));
            let nb = row_ptr[r1] - row_ptr[r0];
            let (c_here, c_rest) = ci.split_at_mut(nb);
            let (v_here, v_rest) = vs.split_at_mut(nb * B * B);
            tasks.push((r0, r1, c_here, v_here));
            ci = c_rest;
            vs = v_rest;
        }
    }
    let filled = std::sync::atomic::AtomicU64::new(0);
    tasks.into_par_iter().for_each(|(r0, r1, ci, vs)| {
        let mut cols = Vec::with_capacity(13);
        let mut pos = 0;
        for row in r0..r1 {
            let Some(cell) = spec.cell_of(row) else {
                continue;
            };
            spec.columns(cell, &mut cols);
            fill_row::<T>(
                spec.seed,
                row,
                &cols,
                &mut ci[pos..pos + cols.len()],
                &mut vs[pos * B * B..(pos + cols.len()) * B * B],
            );
            pos += cols.len();
        }
        if progress.is_some() {
            let rows = (r1 - r0) as u64;
            let done = filled.fetch_add(rows, std::sync::atomic::Ordering::Relaxed) + rows;
            progress.report(done, nbr as u64);
        }
    });
    Ok(Bcsr::from_blocks_trusted(
        BlockShape::new(B, nbr, nbr),
        BlockLayout::RowMajor,
        row_ptr,
        col_idx,
        values,
    ))
}

/// Fills the blocks of one block row (columns sorted, the diagonal among them).
fn fill_row<T: Element>(seed: u64, row: usize, cols: &[usize], ci: &mut [Index], vs: &mut [T]) {
    let mut rng =
        SmallRng::seed_from_u64(seed ^ (row as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let draw = |rng: &mut SmallRng| -> T {
        let re: f64 = rng.random_range(-1.0..=1.0);
        let im: f64 = rng.random_range(-1.0..=1.0);
        T::from_parts(
            <T::Real as RealScalar>::from_f64(re),
            <T::Real as RealScalar>::from_f64(im),
        )
    };
    let mut diag_slot = 0;
    for (k, (&c, slot)) in cols.iter().zip(ci.iter_mut()).enumerate() {
        // Columns are block rows of real cells, < n_block_rows <= Index::MAX.
        *slot = c as Index;
        let blk = &mut vs[k * B * B..(k + 1) * B * B];
        if c == row {
            diag_slot = k;
            for (e, v) in blk.iter_mut().enumerate() {
                if e / B != e % B {
                    *v = draw(&mut rng);
                }
            }
        } else {
            for (e, v) in blk.iter_mut().enumerate() {
                *v = if OFFDIAG_ZEROS.contains(&(e / B, e % B)) {
                    T::ZERO
                } else {
                    draw(&mut rng)
                };
            }
        }
    }
    for r in 0..B {
        let mut s = 1.0f64;
        for k in 0..cols.len() {
            for c in 0..B {
                if !(k == diag_slot && c == r) {
                    s += widen(vs[k * B * B + r * B + c]).norm();
                }
            }
        }
        vs[diag_slot * B * B + r * B + r] = T::from_real(<T::Real as RealScalar>::from_f64(s));
    }
}
