//! The SpMV variants of the thesis (Kautz 2011; digest `docs/notes/seed000-spmv.md` §3-4) on
//! the GPU, for reproduction tables: `y <- alpha A x + beta y` with the same contract as
//! [`ferrocuda::sparse::gpu`] (BLAS order, `y` not read where `beta == 0`, typed errors,
//! runs on the stream of `y` without synchronising). The kernels are
//! `ferrocuda_kernels::repro::spmv`, in the reproduction PTX module.
//!
//! All variants work on **ghost-compacted** data, as the thesis's "Aufbereitung der BCSR
//! Daten" (§6.3.1): the empty (ghost) block rows are removed
//! ([`Bcsr::compact_empty_block_rows`]) and stored block row `s` writes result block row
//! `map[s]` (the "Blockzeilenindex"). The result rows no stored row maps to get `beta y`
//! (0 where `beta == 0`) from a small fill kernel, so every row of `y` is written.
//!
//! | [`ThesisKernel`] | data | kernels (`<pair>` = `f32`, `c64`, `f64_c64`, ...) | thread mapping |
//! |---|---|---|---|
//! | BCSR V1 | BCSR, row-major blocks, temp buffer | `thesis_bcsr_v1[_5]_<pair>` + `thesis_bcsr_reduce[_5]_<pair>` | one per block; reduction one per row |
//! | BCSR V2 | BCSR, row-major blocks, temp buffer | `thesis_bcsr_v2[_5]_<pair>` + reduction | one per (block, row) |
//! | BCSR V3 | BCSR, column-major blocks, temp buffer | `thesis_bcsr_v3[_5]_<pair>` + reduction | one per (block, row), coalesced |
//! | ELL | scalar ELL (in-block zeros dropped, width a multiple of `L`), row index, temp | `thesis_ell_sub_<pair>` + `thesis_ell_reduce_<pair>` | one per (row, subsection) |
//! | ELL V2 | the same ELL arrays, row index | `thesis_ell_v2_<pair>` | one per row |
//! | BELL | [`Bell`] of the compacted matrix, block-row map | `thesis_bell[_5]_<pair>` | one per scalar row |
//! | BELL V2 | the same | `thesis_bell_v2[_5]_<pair>` (`b <= 8`) | one per block row |
//! | BELL V3 | the same, plus one `x` window per CUDA block | `thesis_bell_v3[_5]_<pair>` | one per scalar row, `x` from shared memory |
//!
//! A matrix is prepared on the host ([`ThesisPlan`], no GPU needed: compaction, maps,
//! conversions, BELL V3's windows, the traffic model) and uploaded once
//! ([`ThesisMatrix::upload`]); the temp buffer of the reduction variants is allocated then,
//! like the thesis's "zentraler Datenspeicher" (§6.5.1). [`spmv_thesis`] runs one product
//! (it borrows the matrix mutably: the product writes its temp buffer).
//!
//! The reductions (BCSR V1-V3, ELL) split each row's sum into partials, so their results
//! differ from the CPU path in the last bits; the BELL variants sum each row in the CPU's
//! order and give its bits.

use ferrocuda::Complex;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{
    Bcsr, Bell, BellOptions, BlockLayout, Element, Ell, EllOptions, Index, SparseError, check_len,
};
use ferrocuda::{Error, Result};
use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig};
use ferrocuda_kernels::repro::spmv::{
    BELL_V2_MAX_B, SpmvThesisKernels, THESIS_BLOCK, ThesisBcsrMul, ThesisBcsrReduce, ThesisBell,
    ThesisBellV3, ThesisEllReduce, ThesisEllSub, ThesisEllV2, ThesisFillRows,
};
use ferrocuda_kernels::sparse::MatrixScalar;

/// The thesis's kernel variants, in the order of its chapter 6 (BELL V4, the CUDA port of
/// BELL, is [`ThesisKernel::Bell`] here: every kernel of this crate is CUDA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThesisKernel {
    /// §6.3: one thread per block, partial row sums to a temp buffer, reduction kernel.
    BcsrV1,
    /// §6.4: one thread per (block, row in block), row-major blocks, reduction kernel.
    BcsrV2,
    /// §6.6: as V2 with column-major ("permuted") blocks.
    BcsrV3,
    /// §6.7: scalar ELL, one thread per (row, subsection), reduction kernel.
    Ell,
    /// §6.7: scalar ELL, one thread per row.
    EllV2,
    /// §6.8 / §6.10: blocked ELL, one thread per scalar row.
    Bell,
    /// §6.8: blocked ELL, one thread per block row with `b` accumulators.
    BellV2,
    /// §6.9: BELL with each CUDA block's window of `x` in shared memory.
    BellV3,
}

impl ThesisKernel {
    /// Every variant, in the thesis's order (for benchmark tables).
    pub const ALL: [ThesisKernel; 8] = [
        ThesisKernel::BcsrV1,
        ThesisKernel::BcsrV2,
        ThesisKernel::BcsrV3,
        ThesisKernel::Ell,
        ThesisKernel::EllV2,
        ThesisKernel::Bell,
        ThesisKernel::BellV2,
        ThesisKernel::BellV3,
    ];

    /// The thesis's name of the variant ("BCSR V1", ..., "BELL V3").
    pub fn label(self) -> &'static str {
        match self {
            ThesisKernel::BcsrV1 => "BCSR V1",
            ThesisKernel::BcsrV2 => "BCSR V2",
            ThesisKernel::BcsrV3 => "BCSR V3",
            ThesisKernel::Ell => "ELL",
            ThesisKernel::EllV2 => "ELL V2",
            ThesisKernel::Bell => "BELL",
            ThesisKernel::BellV2 => "BELL V2",
            ThesisKernel::BellV3 => "BELL V3",
        }
    }

    /// Whether the variant has a reduction kernel (and so a temp buffer).
    pub fn has_reduction(self) -> bool {
        matches!(
            self,
            ThesisKernel::BcsrV1 | ThesisKernel::BcsrV2 | ThesisKernel::BcsrV3 | ThesisKernel::Ell
        )
    }
}

impl std::fmt::Display for ThesisKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Tuning of the variants that have parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThesisOptions {
    /// ELL subsection length `L` (slots per thread of [`ThesisKernel::Ell`]; the ELL width
    /// is rounded up to a multiple of it, also for ELL V2). The thesis's best was 20. >= 1.
    pub subsection: usize,
    /// Threads per CUDA block of [`ThesisKernel::BellV3`] (the thesis's work-group size):
    /// a multiple of the block size `b`, at most 1024. Default 160 (a multiple of 5 and 32).
    pub work_group: usize,
}

impl Default for ThesisOptions {
    /// `subsection = 20`, `work_group = 160`.
    fn default() -> Self {
        Self {
            subsection: 20,
            work_group: 160,
        }
    }
}

impl ThesisOptions {
    /// Sets [`ThesisOptions::subsection`].
    pub fn subsection(mut self, l: usize) -> Self {
        self.subsection = l;
        self
    }
    /// Sets [`ThesisOptions::work_group`].
    pub fn work_group(mut self, threads: usize) -> Self {
        self.work_group = threads;
        self
    }
}

/// The bytes one product moves through device memory, by array, assuming every array is
/// read once (a perfect cache for `x` and for indices that several threads share): the
/// compulsory traffic, to divide by the run time and compare with the copy bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// Matrix values (BCSR and BELL: whole blocks; ELL: the real slots).
    pub values: usize,
    /// Column, block column, row pointer, row length, row map, ghost-row and window indices.
    pub indices: usize,
    /// `x`: each column that a stored entry refers to, once.
    pub x: usize,
    /// `y`: every row written, and read too where `beta != 0`.
    pub y: usize,
    /// Temp buffer of the reduction variants: written once and read once.
    pub temp: usize,
}

impl Traffic {
    /// Sum of all parts.
    pub fn total(&self) -> usize {
        self.values + self.indices + self.x + self.y + self.temp
    }
}

/// Sizes behind [`Traffic`], fixed when the matrix is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    value_bytes: usize,
    index_bytes: usize,
    /// Distinct scalar columns referenced.
    x_entries: usize,
    /// Temp values per product.
    temp_entries: usize,
    /// Result rows (ghosts included).
    n_rows: usize,
}

impl Counts {
    fn traffic<V>(&self, beta_is_zero: bool) -> Traffic {
        let v = size_of::<V>();
        Traffic {
            values: self.value_bytes,
            indices: self.index_bytes,
            x: self.x_entries * v,
            y: self.n_rows * v * if beta_is_zero { 1 } else { 2 },
            temp: 2 * self.temp_entries * v,
        }
    }
}

/// The `x` values one CUDA block of BELL V3 copies to shared memory: `x[lo .. lo + len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First scalar column (a multiple of `b`).
    pub lo: usize,
    /// Number of values (a multiple of `b`; 0 where the CUDA block's rows have no blocks).
    pub len: usize,
}

pub use ferrocuda::sparse::ghost_block_rows;

/// The thesis's "Zeilenindex" of ELL: scalar row `i` of the compacted matrix (block row
/// `i / b`, row `i % b` in it) is result row `map[i / b] b + i % b`. Errors: a result row
/// beyond the index type.
pub fn ell_row_index(map: &[Index], b: usize) -> Result<Vec<Index>, SparseError> {
    let mut out = Vec::with_capacity(map.len() * b);
    for &m in map {
        for r in 0..b {
            out.push(to_index("ell_row_index", "result row", m as usize * b + r)?);
        }
    }
    Ok(out)
}

/// BELL V3's window of `x` per CUDA block of `rows_per_cuda_block` scalar rows of `a` (the
/// thesis's per-work-group triple of §6.9.1, without the per-thread count): CUDA block `w`
/// covers block rows `w R / b .. (w + 1) R / b` and needs the scalar columns from the first
/// of its smallest block column to the last of its largest, `(hi - lo + 1) b` values.
/// (The thesis counted `(hi - lo) b`, one block less: its Table 6.10 values are ours minus
/// `b`.) Errors: `rows_per_cuda_block` zero or not a multiple of `b`.
pub fn shared_windows<A: Element>(
    a: &Bcsr<A>,
    rows_per_cuda_block: usize,
) -> Result<Vec<Window>, SparseError> {
    let b = a.b();
    if rows_per_cuda_block == 0 || !rows_per_cuda_block.is_multiple_of(b) {
        return Err(SparseError::InvalidArgument {
            op: "shared_windows",
            reason: format!(
                "{rows_per_cuda_block} rows per CUDA block is not a positive multiple of the block size {b}"
            ),
        });
    }
    let per = rows_per_cuda_block / b;
    let nbr = a.n_block_rows();
    let (row_ptr, col_idx) = (a.row_ptr(), a.col_idx());
    Ok((0..nbr.div_ceil(per))
        .map(|w| {
            let (s0, s1) = (w * per, ((w + 1) * per).min(nbr));
            let cols = &col_idx[row_ptr[s0]..row_ptr[s1]];
            match (cols.iter().min(), cols.iter().max()) {
                (Some(&lo), Some(&hi)) => Window {
                    lo: lo as usize * b,
                    len: (hi as usize - lo as usize + 1) * b,
                },
                _ => Window { lo: 0, len: 0 },
            }
        })
        .collect())
}

/// Thesis Table 6.10 for our matrices: for each work-group size (threads = scalar rows per
/// CUDA block, a multiple of 5), the largest BELL V3 window, in values, of the
/// ghost-compacted TRACE-like matrix of `spec`.
///
/// The thesis's matrices were one grid block each: pass `grid_blocks = 1` to compare
/// (for case 1 that is `TraceSpec::new(10, 40, 20, 1)`). Two differences remain, both
/// documented in the digest (§1.5, §4.9): the thesis ordered the cells theta fastest, then
/// x, then r, where [`generate`] orders x fastest; and it counted one block less per window.
/// With the thesis's ordering and count this computation gives exactly its 12,415 /
/// 13,375 / 13,555 / 13,735 for work groups of 80 / 160 / 320 / 480 (the tests check that
/// on a theta-fastest matrix); with ours it gives 12,440 / 12,820 / 13,060 / 13,280.
/// Errors: a work-group size that is not a positive multiple of 5; the generator's errors.
pub fn table_6_10(spec: &TraceSpec, work_group_sizes: &[usize]) -> Result<Vec<usize>, SparseError> {
    let a = generate::trace_like::<f32>(spec)?;
    let (c, _) = a.compact_empty_block_rows();
    work_group_sizes
        .iter()
        .map(|&wg| {
            Ok(shared_windows(&c, wg)?
                .iter()
                .map(|w| w.len)
                .max()
                .unwrap_or(0))
        })
        .collect()
}

fn to_index(op: &'static str, what: &str, n: usize) -> Result<Index, SparseError> {
    Index::try_from(n).map_err(|_| SparseError::InvalidArgument {
        op,
        reason: format!("{what} {n} exceeds the index type's limit {}", Index::MAX),
    })
}

/// Distinct values in `cols` (all below `bound`).
fn distinct(cols: &[Index], bound: usize) -> usize {
    let mut seen = vec![false; bound];
    let mut n = 0;
    for &c in cols {
        if let Some(s) = seen.get_mut(c as usize)
            && !*s
        {
            *s = true;
            n += 1;
        }
    }
    n
}

/// The prepared arrays of one variant.
#[derive(Debug, Clone)]
enum PlanData<A> {
    /// Compacted BCSR in the variant's block layout.
    Bcsr(Bcsr<A>),
    /// ELL of the compacted matrix and its row index.
    Ell { ell: Ell<A>, row_index: Vec<Index> },
    /// BELL of the compacted matrix and, for V3, the windows.
    Bell { bell: Bell<A>, windows: Vec<Window> },
}

/// A matrix prepared on the host for one [`ThesisKernel`]: compacted, converted, with its
/// maps (no GPU needed; [`ThesisMatrix::from_plan`] uploads it).
#[derive(Debug, Clone)]
pub struct ThesisPlan<A> {
    kernel: ThesisKernel,
    opts: ThesisOptions,
    b: usize,
    n_rows: usize,
    n_cols: usize,
    map: Vec<Index>,
    ghosts: Vec<Index>,
    data: PlanData<A>,
    counts: Counts,
}

impl<A: Element> ThesisPlan<A> {
    /// Compacts `a` and converts it for `kernel`. Errors: BELL V2 with `b > 8`; BELL V3
    /// with a work group that is not a positive multiple of `b` or exceeds 1024 threads;
    /// ELL with `subsection == 0`; sizes beyond the index type.
    pub fn new(
        a: &Bcsr<A>,
        kernel: ThesisKernel,
        opts: &ThesisOptions,
    ) -> Result<Self, SparseError> {
        let op = "ThesisPlan::new";
        let b = a.b();
        let (c, map) = a.compact_empty_block_rows();
        let ghosts = ghost_block_rows(&map, a.n_block_rows())?;
        let (nbr, nnzb) = (c.n_block_rows(), c.nnz_blocks());
        let (sa, si) = (size_of::<A>(), size_of::<Index>());
        let shared_index = (nbr + ghosts.len()) * si; // map + ghost list
        let x_blocks = distinct(c.col_idx(), c.n_block_cols());
        let (data, counts) = match kernel {
            ThesisKernel::BcsrV1 | ThesisKernel::BcsrV2 | ThesisKernel::BcsrV3 => {
                let layout = if kernel == ThesisKernel::BcsrV3 {
                    BlockLayout::ColMajor
                } else {
                    BlockLayout::RowMajor
                };
                let counts = Counts {
                    value_bytes: nnzb * b * b * sa,
                    index_bytes: nnzb * si + (nbr + 1) * size_of::<usize>() + shared_index,
                    x_entries: x_blocks * b,
                    temp_entries: nnzb * b,
                    n_rows: a.n_rows(),
                };
                (PlanData::Bcsr(c.with_layout(layout)), counts)
            }
            ThesisKernel::Ell | ThesisKernel::EllV2 => {
                let ell = Ell::from_bcsr(&c, &EllOptions::default().subsection(opts.subsection))?;
                let row_index = ell_row_index(&map, b)?;
                let nnz = ell.nnz();
                let real_cols: Vec<Index> = (0..ell.n_rows())
                    .flat_map(|i| {
                        let np = ell.n_rows_pad();
                        (0..ell.row_len()[i] as usize).map(move |k| k * np + i)
                    })
                    .map(|s| ell.col_idx()[s])
                    .collect();
                let temp_entries = if kernel == ThesisKernel::Ell {
                    ell.width() / opts.subsection * ell.n_rows()
                } else {
                    0
                };
                let counts = Counts {
                    value_bytes: nnz * sa,
                    index_bytes: nnz * si + 2 * ell.n_rows() * si + ghosts.len() * si,
                    x_entries: distinct(&real_cols, ell.n_cols()),
                    temp_entries,
                    n_rows: a.n_rows(),
                };
                (PlanData::Ell { ell, row_index }, counts)
            }
            ThesisKernel::Bell | ThesisKernel::BellV2 | ThesisKernel::BellV3 => {
                if kernel == ThesisKernel::BellV2 && b > BELL_V2_MAX_B {
                    return Err(SparseError::InvalidArgument {
                        op,
                        reason: format!(
                            "BELL V2 holds one accumulator per row of a block in registers and supports b <= {BELL_V2_MAX_B}, not b = {b}"
                        ),
                    });
                }
                let windows = if kernel == ThesisKernel::BellV3 {
                    if opts.work_group > ferrocuda_host::MAX_BLOCK_THREADS as usize {
                        return Err(SparseError::InvalidArgument {
                            op,
                            reason: format!(
                                "BELL V3 work group of {} threads exceeds {}",
                                opts.work_group,
                                ferrocuda_host::MAX_BLOCK_THREADS
                            ),
                        });
                    }
                    shared_windows(&c, opts.work_group)?
                } else {
                    Vec::new()
                };
                let bell = Bell::from_bcsr(&c, &BellOptions::default())?;
                let counts = Counts {
                    value_bytes: nnzb * b * b * sa,
                    index_bytes: nnzb * si + nbr * si + shared_index + 2 * windows.len() * si,
                    x_entries: x_blocks * b,
                    temp_entries: 0,
                    n_rows: a.n_rows(),
                };
                (PlanData::Bell { bell, windows }, counts)
            }
        };
        Ok(Self {
            kernel,
            opts: *opts,
            b,
            n_rows: a.n_rows(),
            n_cols: a.n_cols(),
            map,
            ghosts,
            data,
            counts,
        })
    }

    /// The variant.
    pub fn kernel(&self) -> ThesisKernel {
        self.kernel
    }
    /// Rows of the result (ghosts included).
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Block size.
    pub fn b(&self) -> usize {
        self.b
    }
    /// The Blockzeilenindex: result block row of each stored block row.
    pub fn block_row_map(&self) -> &[Index] {
        &self.map
    }
    /// The result block rows no stored row maps to.
    pub fn ghost_block_rows(&self) -> &[Index] {
        &self.ghosts
    }
    /// ELL's row index (ELL row -> result row); empty for the other variants.
    pub fn ell_row_index(&self) -> &[Index] {
        match &self.data {
            PlanData::Ell { row_index, .. } => row_index,
            _ => &[],
        }
    }
    /// BELL V3's windows, one per CUDA block; empty for the other variants.
    pub fn windows(&self) -> &[Window] {
        match &self.data {
            PlanData::Bell { windows, .. } => windows,
            _ => &[],
        }
    }
    /// The largest BELL V3 window in values (its shared memory is this times the size of
    /// the vector scalar); 0 for the other variants.
    pub fn max_window(&self) -> usize {
        self.windows().iter().map(|w| w.len).max().unwrap_or(0)
    }
    /// The bytes one product with vectors of `V` moves ([`Traffic`]).
    pub fn traffic<V>(&self, beta_is_zero: bool) -> Traffic {
        self.counts.traffic::<V>(beta_is_zero)
    }
}

/// The serial twin of [`spmv_thesis`]: the GPU kernels' per-thread functions
/// (`ferrocuda_kernels::spmv_thesis`) run one thread after another on the CPU, kernel after
/// kernel in launch order, on the same prepared arrays (BELL V3 copies each window first).
/// It checks the kernels' indexing without a GPU and gives each variant's bits on the
/// CPU; it is serial, not fast. Errors: `x` or `y` of the wrong length.
pub fn spmv_thesis_serial<A, V>(
    alpha: V,
    plan: &ThesisPlan<A>,
    x: &[V],
    beta: V,
    y: &mut [V],
) -> Result<(), SparseError>
where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    use ferrocuda_kernels::repro::spmv as t;
    let op = "spmv_thesis_serial";
    check_len(op, "x (one per matrix column)", plan.n_cols, x.len())?;
    check_len(op, "y (one per matrix row)", plan.n_rows, y.len())?;
    let b = plan.b;
    let five = b == 5;
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    let mp = plan.map.as_ptr();
    // SAFETY (every call below): the arrays come from the plan, whose construction
    // guarantees what the kernels assume (block columns < n_cols / b, map and ghost rows
    // < n_rows / b, row lengths <= width, b <= 8 for BELL V2); x and y have the lengths
    // checked above; `tmp` is sized for its kernel; one "thread" runs at a time.
    for i in 0..plan.ghosts.len() * b {
        unsafe { t::fill_row(i, b, beta, plan.ghosts.as_ptr(), yp) };
    }
    match &plan.data {
        PlanData::Bcsr(c) => {
            let (nbr, nb) = (c.n_block_rows(), c.nnz_blocks());
            let (ci, va) = (c.col_idx().as_ptr(), c.values().as_ptr());
            let mut tmp = vec![V::ZERO; nb * b];
            let tp = tmp.as_mut_ptr();
            match (plan.kernel, five) {
                (ThesisKernel::BcsrV1, true) => (0..nb)
                    .for_each(|k| unsafe { t::bcsr_v1_block::<A, V, 5>(k, b, ci, va, xp, tp) }),
                (ThesisKernel::BcsrV1, false) => (0..nb)
                    .for_each(|k| unsafe { t::bcsr_v1_block::<A, V, 0>(k, b, ci, va, xp, tp) }),
                (ThesisKernel::BcsrV2, true) => (0..nb * b).for_each(|i| unsafe {
                    t::bcsr_v23_row::<A, V, 5, false>(i, b, ci, va, xp, tp)
                }),
                (ThesisKernel::BcsrV2, false) => (0..nb * b).for_each(|i| unsafe {
                    t::bcsr_v23_row::<A, V, 0, false>(i, b, ci, va, xp, tp)
                }),
                (_, true) => (0..nb * b).for_each(|i| unsafe {
                    t::bcsr_v23_row::<A, V, 5, true>(i, b, ci, va, xp, tp)
                }),
                (_, false) => (0..nb * b).for_each(|i| unsafe {
                    t::bcsr_v23_row::<A, V, 0, true>(i, b, ci, va, xp, tp)
                }),
            }
            let rp = c.row_ptr().as_ptr();
            for i in 0..nbr * b {
                if five {
                    unsafe { t::bcsr_reduce_row::<V, 5>(i, b, alpha, rp, mp, tp, beta, yp) };
                } else {
                    unsafe { t::bcsr_reduce_row::<V, 0>(i, b, alpha, rp, mp, tp, beta, yp) };
                }
            }
        }
        PlanData::Ell { ell, row_index } => {
            let (n, np) = (ell.n_rows(), ell.n_rows_pad());
            let (rl, ci, va, ri) = (
                ell.row_len().as_ptr(),
                ell.col_idx().as_ptr(),
                ell.values().as_ptr(),
                row_index.as_ptr(),
            );
            if plan.kernel == ThesisKernel::Ell {
                let l = plan.opts.subsection;
                let ns = ell.width() / l;
                let mut tmp = vec![V::ZERO; n * ns];
                let tp = tmp.as_mut_ptr();
                for i in 0..n * ns {
                    unsafe { t::ell_sub_part::<A, V>(i, n, np, l, rl, ci, va, xp, tp) };
                }
                for i in 0..n {
                    unsafe { t::ell_reduce_row::<V>(i, n, ns, alpha, ri, tp, beta, yp) };
                }
            } else {
                for i in 0..n {
                    unsafe { t::ell_v2_row::<A, V>(i, np, alpha, rl, ci, va, ri, xp, beta, yp) };
                }
            }
        }
        PlanData::Bell { bell, windows } => {
            let (nbr, nbp) = (bell.n_block_rows(), bell.n_block_rows_pad());
            let (rl, bc, va) = (
                bell.row_len().as_ptr(),
                bell.block_col().as_ptr(),
                bell.values().as_ptr(),
            );
            let row = |i: usize, x_at: &dyn Fn(usize) -> *const V| {
                if five {
                    unsafe {
                        t::bell_row::<A, V, 5>(i, b, nbp, alpha, rl, bc, va, mp, x_at, beta, yp)
                    }
                } else {
                    unsafe {
                        t::bell_row::<A, V, 0>(i, b, nbp, alpha, rl, bc, va, mp, x_at, beta, yp)
                    }
                }
            };
            match plan.kernel {
                ThesisKernel::BellV2 => {
                    for s in 0..nbr {
                        if five {
                            unsafe {
                                t::bell_v2_block_row::<A, V, 5, 5>(
                                    s, b, nbp, alpha, rl, bc, va, mp, xp, beta, yp,
                                )
                            };
                        } else {
                            unsafe {
                                t::bell_v2_block_row::<A, V, 0, { t::BELL_V2_MAX_B }>(
                                    s, b, nbp, alpha, rl, bc, va, mp, xp, beta, yp,
                                )
                            };
                        }
                    }
                }
                ThesisKernel::BellV3 => {
                    let wg = plan.opts.work_group;
                    for (w, win) in windows.iter().enumerate() {
                        let rows = w * wg..((w + 1) * wg).min(nbr * b);
                        check_window_covers(op, bell, b, rows.clone(), win)?;
                        let shared: Vec<V> = x
                            .get(win.lo..win.lo + win.len)
                            .ok_or_else(|| SparseError::InvalidStructure {
                                op,
                                what: "windows",
                                position: w,
                                reason: format!("window {win:?} reaches past x ({})", x.len()),
                            })?
                            .to_vec();
                        let x_at = |col: usize| unsafe { shared.as_ptr().add(col * b - win.lo) };
                        rows.for_each(|i| row(i, &x_at));
                    }
                }
                _ => {
                    let x_at = |col: usize| unsafe { xp.add(col * b) };
                    (0..nbr * b).for_each(|i| row(i, &x_at));
                }
            }
        }
    }
    Ok(())
}

/// That the window covers every block column the rows read (what BELL V3's kernel relies
/// on; the serial twin checks it instead of trusting it).
fn check_window_covers<A: Element>(
    op: &'static str,
    bell: &Bell<A>,
    b: usize,
    rows: std::ops::Range<usize>,
    win: &Window,
) -> Result<(), SparseError> {
    let nbp = bell.n_block_rows_pad();
    for bi in rows.start / b..rows.end.div_ceil(b) {
        for k in 0..bell.row_len()[bi] as usize {
            let col = bell.block_col()[k * nbp + bi] as usize;
            if col * b < win.lo || col * b + b > win.lo + win.len {
                return Err(SparseError::InvalidStructure {
                    op,
                    what: "windows",
                    position: bi,
                    reason: format!(
                        "block row {bi} reads block column {col}, outside its window {win:?}"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Device arrays of one variant.
enum DeviceData<A> {
    Bcsr {
        n_block_rows: usize,
        n_blocks: usize,
        row_ptr: DeviceBuffer<usize>,
        col_idx: DeviceBuffer<u32>,
        values: DeviceBuffer<A>,
    },
    Ell {
        n_rows: usize,
        n_rows_pad: usize,
        n_sub: usize,
        row_len: DeviceBuffer<u32>,
        col_idx: DeviceBuffer<u32>,
        values: DeviceBuffer<A>,
        row_index: DeviceBuffer<u32>,
    },
    Bell {
        n_block_rows: usize,
        n_block_rows_pad: usize,
        row_len: DeviceBuffer<u32>,
        block_col: DeviceBuffer<u32>,
        values: DeviceBuffer<A>,
        /// BELL V3: `(lo, len)` per CUDA block.
        windows: DeviceBuffer<u32>,
    },
}

/// BELL V3's shared-memory facts, fixed at upload.
#[derive(Debug, Clone, Copy)]
struct SharedLimits {
    /// Largest window in values.
    max_window: usize,
    /// Bytes a block may use after opting in.
    optin: usize,
    /// Bytes a block may use without opting in.
    default: usize,
}

/// A matrix resident on one GPU, prepared for one [`ThesisKernel`], with its temp buffer
/// (the thesis's central data store).
pub struct ThesisMatrix<A: Element> {
    kernel: ThesisKernel,
    opts: ThesisOptions,
    b: usize,
    n_rows: usize,
    n_cols: usize,
    counts: Counts,
    map: DeviceBuffer<u32>,
    ghosts: DeviceBuffer<u32>,
    data: DeviceData<A>,
    /// Temp values (reduction variants), `tmp_entries` of the widest vector scalar of `A`
    /// (complex of its real type); a product with real vectors uses them as twice as many
    /// real values.
    tmp: DeviceBuffer<Complex<A::Real>>,
    tmp_entries: usize,
    shared: Option<SharedLimits>,
}

impl<A: Element> ThesisMatrix<A> {
    /// Prepares `a` for `kernel` with default [`ThesisOptions`] and uploads it.
    pub fn upload(gpu: &Gpu, a: &Bcsr<A>, kernel: ThesisKernel) -> Result<Self> {
        Self::upload_with(gpu, a, kernel, &ThesisOptions::default())
    }

    /// Prepares `a` for `kernel` and uploads it. Errors: those of [`ThesisPlan::new`] and
    /// [`ThesisMatrix::from_plan`].
    pub fn upload_with(
        gpu: &Gpu,
        a: &Bcsr<A>,
        kernel: ThesisKernel,
        opts: &ThesisOptions,
    ) -> Result<Self> {
        Self::from_plan(gpu, &ThesisPlan::new(a, kernel, opts)?)
    }

    /// Uploads a prepared matrix and allocates its temp buffer. Errors: device memory;
    /// for BELL V3, a window whose values (at the size of `A`) exceed the shared memory a
    /// block of this device may use (the thesis's failure, Table 6.10) — the message gives
    /// the bytes needed and allowed.
    pub fn from_plan(gpu: &Gpu, plan: &ThesisPlan<A>) -> Result<Self> {
        let op = "ThesisMatrix::upload";
        let mut shared = None;
        let data = match &plan.data {
            PlanData::Bcsr(c) => DeviceData::Bcsr {
                n_block_rows: c.n_block_rows(),
                n_blocks: c.nnz_blocks(),
                row_ptr: gpu.upload(c.row_ptr())?,
                col_idx: gpu.upload(c.col_idx())?,
                values: gpu.upload(c.values())?,
            },
            PlanData::Ell { ell, row_index } => DeviceData::Ell {
                n_rows: ell.n_rows(),
                n_rows_pad: ell.n_rows_pad(),
                n_sub: ell.width() / plan.opts.subsection,
                row_len: gpu.upload(ell.row_len())?,
                col_idx: gpu.upload(ell.col_idx())?,
                values: gpu.upload(ell.values())?,
                row_index: gpu.upload(row_index)?,
            },
            PlanData::Bell { bell, windows } => {
                let mut flat = Vec::with_capacity(2 * windows.len());
                for w in windows {
                    flat.push(to_index(op, "window start", w.lo)?);
                    flat.push(to_index(op, "window length", w.len)?);
                }
                if plan.kernel == ThesisKernel::BellV3 {
                    let info = gpu.info()?;
                    let limits = SharedLimits {
                        max_window: plan.max_window(),
                        optin: info
                            .shared_memory_per_block_optin
                            .max(info.shared_memory_per_block)
                            .max(0) as usize,
                        default: info.shared_memory_per_block.max(0) as usize,
                    };
                    check_window(op, &limits, size_of::<A>(), plan, &info.name)?;
                    shared = Some(limits);
                }
                DeviceData::Bell {
                    n_block_rows: bell.n_block_rows(),
                    n_block_rows_pad: bell.n_block_rows_pad(),
                    row_len: gpu.upload(bell.row_len())?,
                    block_col: gpu.upload(bell.block_col())?,
                    values: gpu.upload(bell.values())?,
                    windows: gpu.upload(&flat)?,
                }
            }
        };
        let tmp_entries = plan.counts.temp_entries;
        Ok(Self {
            kernel: plan.kernel,
            opts: plan.opts,
            b: plan.b,
            n_rows: plan.n_rows,
            n_cols: plan.n_cols,
            counts: plan.counts,
            map: gpu.upload(&plan.map)?,
            ghosts: gpu.upload(&plan.ghosts)?,
            data,
            tmp: gpu.alloc(tmp_entries)?,
            tmp_entries,
            shared,
        })
    }

    /// The variant.
    pub fn kernel(&self) -> ThesisKernel {
        self.kernel
    }
    /// Rows (ghosts included): the length of `y`.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Columns: the length of `x`.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Block size.
    pub fn b(&self) -> usize {
        self.b
    }
    /// The bytes one product with vectors of `V` moves ([`Traffic`]).
    pub fn traffic<V>(&self, beta_is_zero: bool) -> Traffic {
        self.counts.traffic::<V>(beta_is_zero)
    }
    /// BELL V3: the shared memory per CUDA block a product with vectors of `V` uses (0 for
    /// the other variants).
    pub fn shared_bytes<V>(&self) -> usize {
        self.shared.map_or(0, |s| s.max_window * size_of::<V>())
    }
    /// Device memory held, in bytes (matrix, maps, temp buffer).
    pub fn device_bytes(&self) -> usize {
        let u = size_of::<u32>();
        let a = size_of::<A>();
        let data = match &self.data {
            DeviceData::Bcsr {
                row_ptr,
                col_idx,
                values,
                ..
            } => row_ptr.len() * size_of::<usize>() + col_idx.len() * u + values.len() * a,
            DeviceData::Ell {
                row_len,
                col_idx,
                values,
                row_index,
                ..
            } => (row_len.len() + col_idx.len() + row_index.len()) * u + values.len() * a,
            DeviceData::Bell {
                row_len,
                block_col,
                values,
                windows,
                ..
            } => (row_len.len() + block_col.len() + windows.len()) * u + values.len() * a,
        };
        data + (self.map.len() + self.ghosts.len()) * u
            + self.tmp.len() * size_of::<Complex<A::Real>>()
    }

    fn values_gpu(&self) -> &Gpu {
        match &self.data {
            DeviceData::Bcsr { values, .. }
            | DeviceData::Ell { values, .. }
            | DeviceData::Bell { values, .. } => values.gpu(),
        }
    }
}

/// BELL V3's window against the device's limit, for vector scalars of `v_bytes` bytes.
fn check_window<A: Element>(
    op: &'static str,
    limits: &SharedLimits,
    v_bytes: usize,
    plan: &ThesisPlan<A>,
    device: &str,
) -> Result<()> {
    let bytes = limits.max_window.saturating_mul(v_bytes);
    if bytes <= limits.optin {
        return Ok(());
    }
    let w = plan
        .windows()
        .iter()
        .position(|w| w.len == limits.max_window)
        .unwrap_or(0);
    Err(Error::InvalidArgument {
        op,
        reason: format!(
            "BELL V3: the x window of CUDA block {w} ({} rows) spans {} values = {bytes} bytes of shared memory, more than the {} bytes a block may use on {device} (thesis Table 6.10); use a smaller work group or another variant",
            plan.opts.work_group, limits.max_window, limits.optin
        ),
    })
}

/// Lengths and devices of the operands; for the reduction variants also that `y` runs on
/// the stream the temp buffer belongs to (two products on different streams would share
/// it).
fn check_operands<A, V>(
    op: &'static str,
    a: &ThesisMatrix<A>,
    x: &impl DeviceSlice<V>,
    y: &impl DeviceSlice<V>,
) -> Result<()>
where
    A: Element,
{
    ferrocuda::sparse::gpu::check_operands(op, a.n_rows, a.n_cols, a.values_gpu(), x, y)?;
    if a.kernel.has_reduction() && !y.gpu().same_stream(a.tmp.gpu()) {
        return Err(Error::InvalidArgument {
            op,
            reason: format!(
                "{} uses the matrix's temp buffer, so it must run on the stream the matrix was uploaded on",
                a.kernel
            ),
        });
    }
    Ok(())
}

/// `y <- alpha A x + beta y` with the matrix's [`ThesisKernel`]. `A` and `V` may be the
/// same scalar, or a real matrix with complex vectors. Every row of `y` is written (ghost
/// rows: `beta y`, or 0 where `beta == 0`); `y` is not read where `beta == 0`. Errors:
/// `x.len() != A.n_cols()`, `y.len() != A.n_rows()`, operands on different devices, a
/// reduction variant on another stream than the matrix's, BELL V3 with a window of `V`
/// values larger than the device's shared memory per block.
pub fn spmv_thesis<A, V>(
    alpha: V,
    a: &mut ThesisMatrix<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + MatrixScalar<V> + SpmvThesisKernels<V>,
    V: Element,
{
    let op = "spmv_thesis";
    check_operands(op, a, x, y)?;
    if a.n_rows == 0 {
        return Ok(());
    }
    crate::register_module();
    let gpu = y.gpu().clone();
    let b = a.b;
    let map = a.map.as_in();
    // The temp buffer as values of `V`: complex of `A`'s real type, or twice as many reals.
    let mut tmp = a.tmp.view_mut(..)?.cast::<V>()?;
    if tmp.len() < a.tmp_entries {
        // Unreachable by construction (sized for the widest V); an error, not UB.
        return Err(Error::InvalidArgument {
            op,
            reason: format!(
                "the temp buffer holds {} values of {} bytes, {} are needed",
                tmp.len(),
                size_of::<V>(),
                a.tmp_entries
            ),
        });
    }
    let rows_cfg = |n: usize| LaunchConfig::for_elements(n, THESIS_BLOCK as u32);

    let n_ghosts = a.ghosts.len();
    if n_ghosts > 0 {
        // SAFETY: the fill kernel reads rows[0..n_ghosts] (each < n_rows / b, from
        // `ghost_block_rows` in the plan) and writes y[rows[j] b + r], r < b, inside y
        // (length checked by `check_operands`).
        unsafe {
            gpu.launch(
                &A::FILL_ROWS,
                rows_cfg(n_ghosts * b),
                ThesisFillRows {
                    n_block_rows: n_ghosts,
                    b,
                    beta,
                    rows: a.ghosts.as_in(),
                    y: y.as_out(),
                },
            )?
        };
    }

    match &a.data {
        DeviceData::Bcsr {
            n_block_rows,
            n_blocks,
            row_ptr,
            col_idx,
            values,
        } => {
            let (nbr, nb) = (*n_block_rows, *n_blocks);
            if nbr == 0 {
                return Ok(());
            }
            let five = b == 5;
            let (mul, threads) = match (a.kernel, five) {
                (ThesisKernel::BcsrV1, true) => (A::BCSR_V1_5, nb),
                (ThesisKernel::BcsrV1, false) => (A::BCSR_V1, nb),
                (ThesisKernel::BcsrV2, true) => (A::BCSR_V2_5, nb * b),
                (ThesisKernel::BcsrV2, false) => (A::BCSR_V2, nb * b),
                (_, true) => (A::BCSR_V3_5, nb * b),
                (_, false) => (A::BCSR_V3, nb * b),
            };
            let reduce = if five {
                A::BCSR_REDUCE_5
            } else {
                A::BCSR_REDUCE
            };
            // SAFETY: the multiply reads the blocks of the compacted `Bcsr` (block columns
            // < n_cols / b, checked by `Bcsr`) and x[0..n_cols] (checked), and writes
            // tmp[0..n_blocks b] (tmp holds tmp_entries = n_blocks b values, checked
            // above). The reduction reads row_ptr[0..=nbr], map[0..nbr] (result block rows
            // < n_rows / b, from the plan) and tmp, and writes rows of y inside y.
            unsafe {
                gpu.launch(
                    &mul,
                    rows_cfg(threads),
                    ThesisBcsrMul {
                        n_blocks: nb,
                        b,
                        col_idx: col_idx.as_in(),
                        values: values.as_in(),
                        x: x.as_in(),
                        tmp: tmp.as_out(),
                    },
                )?;
                gpu.launch(
                    &reduce,
                    rows_cfg(nbr * b),
                    ThesisBcsrReduce {
                        n_block_rows: nbr,
                        b,
                        alpha,
                        row_ptr: row_ptr.as_in(),
                        map,
                        tmp: tmp.as_in(),
                        beta,
                        y: y.as_out(),
                    },
                )?;
            }
        }
        DeviceData::Ell {
            n_rows,
            n_rows_pad,
            n_sub,
            row_len,
            col_idx,
            values,
            row_index,
        } => {
            let (n, np, ns) = (*n_rows, *n_rows_pad, *n_sub);
            if n == 0 {
                return Ok(());
            }
            if a.kernel == ThesisKernel::Ell {
                if ns > 0 {
                    // SAFETY: reads the slots < row_len[i] <= width = n_sub L of the
                    // validated `Ell` (columns < n_cols) and x, writes tmp[0..n_sub n_rows]
                    // (tmp holds tmp_entries = n_sub n_rows values, checked above).
                    unsafe {
                        gpu.launch(
                            &A::ELL_SUB,
                            rows_cfg(n * ns),
                            ThesisEllSub {
                                n_rows: n,
                                n_rows_pad: np,
                                n_sub: ns,
                                sub_len: a.opts.subsection,
                                row_len: row_len.as_in(),
                                col_idx: col_idx.as_in(),
                                values: values.as_in(),
                                x: x.as_in(),
                                tmp: tmp.as_out(),
                            },
                        )?
                    };
                }
                // SAFETY: reads tmp[0..n_sub n_rows] and row_index[0..n_rows] (result rows
                // < y.len(), from the block-row map), writes those rows of y.
                unsafe {
                    gpu.launch(
                        &A::ELL_REDUCE,
                        rows_cfg(n),
                        ThesisEllReduce {
                            n_rows: n,
                            n_sub: ns,
                            alpha,
                            row_index: row_index.as_in(),
                            tmp: tmp.as_in(),
                            beta,
                            y: y.as_out(),
                        },
                    )?
                };
            } else {
                // SAFETY: reads the real slots of the validated `Ell`, x and
                // row_index[0..n_rows] (rows < y.len()), writes those rows of y.
                unsafe {
                    gpu.launch(
                        &A::ELL_V2,
                        rows_cfg(n),
                        ThesisEllV2 {
                            n_rows: n,
                            n_rows_pad: np,
                            alpha,
                            row_len: row_len.as_in(),
                            col_idx: col_idx.as_in(),
                            values: values.as_in(),
                            row_index: row_index.as_in(),
                            x: x.as_in(),
                            beta,
                            y: y.as_out(),
                        },
                    )?
                };
            }
        }
        DeviceData::Bell {
            n_block_rows,
            n_block_rows_pad,
            row_len,
            block_col,
            values,
            windows,
        } => {
            let (nbr, nbp) = (*n_block_rows, *n_block_rows_pad);
            if nbr == 0 {
                return Ok(());
            }
            let five = b == 5;
            match a.kernel {
                ThesisKernel::BellV3 => {
                    let limits = a.shared.ok_or_else(|| Error::InvalidArgument {
                        op,
                        reason: "BELL V3 matrix without its shared-memory limits".into(),
                    })?;
                    let shared = limits.max_window * size_of::<V>();
                    if shared > limits.optin {
                        return Err(Error::InvalidArgument {
                            op,
                            reason: format!(
                                "BELL V3: the largest x window ({} values of {} bytes = {shared} bytes) exceeds the {} bytes of shared memory a block may use (thesis Table 6.10)",
                                limits.max_window,
                                size_of::<V>(),
                                limits.optin
                            ),
                        });
                    }
                    let kernel = if five { A::BELL_V3_5 } else { A::BELL_V3 };
                    if shared > limits.default {
                        // Per launch: the attribute belongs to the function of the current
                        // context, which a later context does not inherit.
                        gpu.allow_dynamic_shared(&kernel, shared)?;
                    }
                    let wg = a.opts.work_group;
                    let blocks = (nbr * b).div_ceil(wg);
                    let cfg = LaunchConfig::blocks(
                        u32::try_from(blocks).map_err(|_| Error::InvalidArgument {
                            op,
                            reason: format!("{blocks} CUDA blocks exceed the grid limit"),
                        })?,
                        wg as u32,
                    )
                    .with_shared_bytes(shared as u32);
                    // SAFETY: one CUDA block per window (windows holds 2 values per
                    // block); each copies x[lo..lo+len] (inside x: from the block columns
                    // of the `Bcsr`) into `shared` bytes (>= len values of V); the rows
                    // read the validated `Bell` and map (rows < y.len()).
                    unsafe {
                        gpu.launch(
                            &kernel,
                            cfg,
                            ThesisBellV3 {
                                n_block_rows: nbr,
                                n_block_rows_pad: nbp,
                                b,
                                alpha,
                                row_len: row_len.as_in(),
                                block_col: block_col.as_in(),
                                values: values.as_in(),
                                map,
                                window: windows.as_in(),
                                x: x.as_in(),
                                beta,
                                y: y.as_out(),
                            },
                        )?
                    };
                }
                kernel => {
                    let (kernel, threads) = match (kernel, five) {
                        (ThesisKernel::BellV2, true) => (A::BELL_V2_5, nbr),
                        (ThesisKernel::BellV2, false) => (A::BELL_V2, nbr),
                        (_, true) => (A::BELL_5, nbr * b),
                        (_, false) => (A::BELL, nbr * b),
                    };
                    // SAFETY: BELL and BELL V2 read the validated `Bell` of the compacted
                    // matrix (b <= 8 for V2, checked by the plan), x, map[0..nbr] (rows <
                    // y.len()), and write those rows of y.
                    unsafe {
                        gpu.launch(
                            &kernel,
                            rows_cfg(threads),
                            ThesisBell {
                                n_block_rows: nbr,
                                n_block_rows_pad: nbp,
                                b,
                                alpha,
                                row_len: row_len.as_in(),
                                block_col: block_col.as_in(),
                                values: values.as_in(),
                                map,
                                x: x.as_in(),
                                beta,
                                y: y.as_out(),
                            },
                        )?
                    };
                }
            }
        }
    }
    Ok(())
}
