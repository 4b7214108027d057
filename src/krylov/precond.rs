//! Point- and block-Jacobi preconditioners on the CPU ([`BlockJacobi`], rayon) and the GPU
//! ([`DeviceBlockJacobi`]), both linear operators for GMRES.
//!
//! # Maths
//! A square BCSR matrix `A` with `b x b` blocks `A_IJ` has the block diagonal
//! `D = diag(A_11, ..., A_nn)`; block Jacobi is the operator `M^-1 = D^-1`:
//! `y_I = A_II^-1 x_I` for each block row `I`. Point Jacobi is the same with the scalar
//! diagonal: `y_i = x_i / a_ii` (stored as `b = 1` blocks holding `1 / a_ii`).
//!
//! * The inverses are computed once, at construction: Gauss-Jordan elimination with
//!   partial pivoting on each block (`ferrocuda_kernels::precond::invert_block_sized`, the one
//!   function both the CPU and the GPU run, so both give the same bits). Blocks up to
//!   `8 x 8` ([`MAX_BLOCK`]).
//! * Applying is a block-diagonal product: each row is a chain of fused multiply-adds in
//!   column order from zero (`ferrocuda_kernels::precond::apply_row`), the same on the
//!   CPU and the GPU, bit for bit. A real preconditioner applies to complex vectors
//!   (`A: MatrixScalar<V>`).
//!
//! # Rules
//! * The matrix must be square in blocks (`n_block_rows == n_block_cols`).
//! * A block row that stores no block at all (a ghost row of TRACE's matrices, see
//!   [`crate::sparse::generate`]) gets the identity: `y_I = x_I`.
//! * A block row that stores blocks but whose diagonal block is singular (a zero pivot, or
//!   an inverse with a non-finite entry; a diagonal block that is not stored is zero) is an
//!   [`Error::InvalidArgument`] naming the first such block row; for point Jacobi, the
//!   first row with a zero diagonal entry (or one without a finite reciprocal).
//!
//! ```
//! use ferrocuda::krylov::{BlockJacobi, LinOp};
//! use ferrocuda::sparse::{Bcsr, BcsrParts, BlockLayout};
//! // 3 block rows of 2x2 blocks: diagonal blocks [[2, 1], [0, 4]] and [[2, 0], [0, 0.5]],
//! // one off-diagonal block (ignored by Jacobi), block row 2 empty (a ghost row).
//! let a = Bcsr::from_parts(BcsrParts {
//!     b: 2,
//!     layout: BlockLayout::RowMajor,
//!     n_block_rows: 3,
//!     n_block_cols: 3,
//!     row_ptr: vec![0, 2, 3, 3],
//!     col_idx: vec![0, 1, 1],
//!     values: vec![2.0, 1.0, 0.0, 4.0, 9.0, 9.0, 9.0, 9.0, 2.0, 0.0, 0.0, 0.5],
//! })
//! .map_err(|r| r.error)?;
//! let x = [1.0, 2.0, 5.0, 6.0, 7.0, 8.0];
//! let mut y = [0.0; 6];
//! let m = BlockJacobi::new(&a)?;
//! assert_eq!(m.inverse_blocks()[..4], [0.5, -0.125, 0.0, 0.25]);
//! m.apply(&x, &mut y)?;
//! assert_eq!(y, [0.25, 0.5, 2.5, 12.0, 7.0, 8.0]);
//! BlockJacobi::point(&a)?.apply(&x, &mut y)?; // x_i / a_ii
//! assert_eq!(y, [0.5, 0.5, 2.5, 12.0, 7.0, 8.0]);
//!
//! // A singular diagonal block in a row that stores blocks is an error naming the row.
//! let mut p = a.into_parts();
//! p.values[8..12].copy_from_slice(&[1.0, 2.0, 2.0, 4.0]);
//! let singular = Bcsr::from_parts(p).map_err(|r| r.error)?;
//! let e = BlockJacobi::new(&singular).unwrap_err();
//! assert!(e.to_string().contains("block row 1"), "{e}");
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, Gpu, LaunchConfig,
};
use ferrocuda_kernels::krylov::{BasisNarrow, BasisScalar, CompressedBasisKernels};
/// The bound of the device block Jacobi: matrix scalars with block-Jacobi kernels for
/// vectors of `V`.
pub use ferrocuda_kernels::precond::PrecondKernels;
use ferrocuda_kernels::precond::{
    self as kp, BLOCK_JACOBI_MAX_B, BLOCK_JACOBI_THREADS, BlockJacobiApply, BlockJacobiInvert,
    FLAG_SINGULAR, InvertKernels,
};
use rayon::prelude::*;

use super::op::{DeviceLinOp, LinOp};
use crate::blas1::Element;
use crate::error::{Error, Result, check_device, check_len};
use crate::sparse::{Bcsr, MatrixScalar};

/// Largest block size of [`BlockJacobi::new`] and [`DeviceBlockJacobi::new`].
pub const MAX_BLOCK: usize = BLOCK_JACOBI_MAX_B;

/// Block rows per rayon task (inversion and apply).
const BLOCK_ROWS_PER_TASK: usize = 256;

/// Point or block Jacobi.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Block,
    Point,
}

impl Kind {
    fn op(self, device: bool) -> &'static str {
        match (self, device) {
            (Kind::Block, false) => "BlockJacobi::new",
            (Kind::Point, false) => "BlockJacobi::point",
            (Kind::Block, true) => "DeviceBlockJacobi::new",
            (Kind::Point, true) => "DeviceBlockJacobi::point",
        }
    }
}

/// The diagonal of `a`, gathered on the host: row-major `bp x bp` blocks, `bp = b` (block
/// Jacobi) or 1 (point Jacobi), identity for the rows of empty block rows.
struct Diagonal<A> {
    bp: usize,
    n_blocks: usize,
    blocks: Vec<A>,
}

/// Slot of the diagonal block of block row `i` (`col_idx` is sorted within the row).
fn diagonal_slot<A: Element>(a: &Bcsr<A>, i: usize) -> Option<usize> {
    let (s, e) = (a.row_ptr()[i], a.row_ptr()[i + 1]);
    a.col_idx()[s..e]
        .binary_search(&(i as crate::sparse::Index))
        .ok()
        .map(|k| s + k)
}

fn is_empty_block_row<A: Element>(a: &Bcsr<A>, i: usize) -> bool {
    a.row_ptr()[i] == a.row_ptr()[i + 1]
}

/// Checks the shape rules and gathers the diagonal.
fn gather<A: Element>(a: &Bcsr<A>, kind: Kind, op: &'static str) -> Result<Diagonal<A>> {
    let (nbr, nbc, b) = (a.n_block_rows(), a.n_block_cols(), a.b());
    if nbr != nbc {
        return Err(Error::InvalidArgument {
            op,
            reason: format!(
                "the matrix has {nbr} block rows but {nbc} block columns ({} x {}); Jacobi preconditioners need a square matrix",
                a.n_rows(),
                a.n_cols()
            ),
        });
    }
    if kind == Kind::Block && b > MAX_BLOCK {
        return Err(Error::InvalidArgument {
            op,
            reason: format!(
                "block size b = {b} exceeds the largest supported, {MAX_BLOCK} (point Jacobi has no limit)"
            ),
        });
    }
    let layout = a.layout();
    let (bp, n_blocks) = match kind {
        Kind::Block => (b, nbr),
        Kind::Point => (1, nbr * b),
    };
    let mut blocks = vec![A::ZERO; n_blocks * bp * bp];
    // Per block row of `a`, `b * b` values for block Jacobi, `b` for point Jacobi.
    let per_row = match kind {
        Kind::Block => b * b,
        Kind::Point => b,
    };
    if per_row > 0 {
        blocks
            .par_chunks_mut(per_row)
            .enumerate()
            .for_each(|(i, out)| {
                if is_empty_block_row(a, i) {
                    for r in 0..b {
                        out[match kind {
                            Kind::Block => r * b + r,
                            Kind::Point => r,
                        }] = A::ONE;
                    }
                    return;
                }
                let Some(k) = diagonal_slot(a, i) else {
                    return; // not stored: zero, reported as singular
                };
                let blk = a.block(k);
                for r in 0..b {
                    match kind {
                        Kind::Block => {
                            for c in 0..b {
                                out[r * b + c] = blk[layout.offset(b, r, c)];
                            }
                        }
                        Kind::Point => out[r] = blk[layout.offset(b, r, r)],
                    }
                }
            });
    }
    Ok(Diagonal {
        bp,
        n_blocks,
        blocks,
    })
}

/// The error for the first singular block (`first`, in the numbering of the gathered
/// blocks: block rows for block Jacobi, scalar rows for point Jacobi).
fn singular_error<A: Element>(a: &Bcsr<A>, kind: Kind, op: &'static str, first: usize) -> Error {
    let b = a.b();
    let reason = match kind {
        Kind::Block => match diagonal_slot(a, first) {
            None => format!(
                "block row {first} stores blocks but no diagonal block (block column {first}), so its diagonal block is zero and singular"
            ),
            Some(_) => format!(
                "the {b}x{b} diagonal block of block row {first} is singular (a zero pivot in Gauss-Jordan elimination, or an inverse with a non-finite entry)"
            ),
        },
        Kind::Point => {
            let (i, r) = (first / b.max(1), first % b.max(1));
            let d = diagonal_slot(a, i).map(|k| a.block(k)[a.layout().offset(b, r, r)]);
            match d {
                None => format!(
                    "row {first} has a zero diagonal entry (block row {i} stores no diagonal block)"
                ),
                Some(d) if d == A::ZERO => format!("row {first} has a zero diagonal entry"),
                Some(d) => {
                    format!("row {first}: the diagonal entry {d:?} has no finite reciprocal")
                }
            }
        }
    };
    Error::InvalidArgument { op, reason }
}

crate::cpu_dispatch::fma_kernel! {
fn invert_chunk[A: Element](bp: usize, blocks: &mut [A], singular: &mut [bool]) {
    for (blk, s) in blocks.chunks_exact_mut(bp * bp).zip(singular.iter_mut()) {
        *s = kp::invert_block_sized(bp, blk);
    }
}
}

crate::cpu_dispatch::fma_kernel! {
fn apply_chunk[A: Element + MatrixScalar<V>, V: Element](b: usize, inv: &[A], x: &[V], y: &mut [V]) {
    for ((yb, ib), xb) in y.chunks_exact_mut(b).zip(inv.chunks_exact(b * b)).zip(x.chunks_exact(b)) {
        kp::apply_block(yb, ib, xb);
    }
}
}

/// The shape accessors of [`BlockJacobi`] and its device twin [`DeviceBlockJacobi`].
macro_rules! inverse_block_accessors {
    () => {
        /// Block size of the inverse blocks (`a.b()` for block Jacobi, 1 for point Jacobi).
        pub fn b(&self) -> usize {
            self.b
        }

        /// Number of inverse blocks (`a.n_block_rows()` for block Jacobi, `a.n_rows()`
        /// for point Jacobi).
        pub fn n_block_rows(&self) -> usize {
            self.n_block_rows
        }

        /// Rows (= columns) of the operator.
        pub fn n_rows(&self) -> usize {
            self.n_block_rows * self.b
        }
    };
}

/// Point or block Jacobi on the CPU: the inverses of the diagonal blocks of a square
/// [`Bcsr`] matrix, applied with rayon ([module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockJacobi<A> {
    b: usize,
    n_block_rows: usize,
    inv: Vec<A>,
}

impl<A: Element> BlockJacobi<A> {
    /// Block Jacobi: inverts the `b x b` diagonal blocks of `a` (block row `i`, block
    /// column `i`; zero where not stored) on all cores. Block rows that store no block get
    /// the identity. Errors ([`Error::InvalidArgument`]): `a` not square in blocks,
    /// `b > `[`MAX_BLOCK`], a singular diagonal block in a block row that stores blocks
    /// (the message names the first such block row).
    pub fn new(a: &Bcsr<A>) -> Result<Self> {
        Self::build(a, Kind::Block)
    }

    /// Point Jacobi: the reciprocals of the scalar diagonal entries of `a` (as `1 x 1`
    /// blocks; any block size `b`). The rows of block rows that store no block get 1.
    /// Errors ([`Error::InvalidArgument`]): `a` not square in blocks, a zero diagonal entry
    /// (or one without a finite reciprocal) in a block row that stores blocks (the message
    /// names the first such row).
    pub fn point(a: &Bcsr<A>) -> Result<Self> {
        Self::build(a, Kind::Point)
    }

    fn build(a: &Bcsr<A>, kind: Kind) -> Result<Self> {
        let op = kind.op(false);
        let Diagonal {
            bp,
            n_blocks,
            mut blocks,
        } = gather(a, kind, op)?;
        let mut singular = vec![false; n_blocks];
        if bp > 0 {
            blocks
                .par_chunks_mut(BLOCK_ROWS_PER_TASK * bp * bp)
                .zip(singular.par_chunks_mut(BLOCK_ROWS_PER_TASK))
                .for_each(|(blk, s)| invert_chunk(bp, blk, s));
        }
        if let Some(first) = singular.iter().position(|&s| s) {
            return Err(singular_error(a, kind, op, first));
        }
        Ok(BlockJacobi {
            b: bp,
            n_block_rows: n_blocks,
            inv: blocks,
        })
    }

    inverse_block_accessors!();

    /// The inverse blocks, `b b` values each, row-major, in block-row order.
    pub fn inverse_blocks(&self) -> &[A] {
        &self.inv
    }

    /// The same preconditioner with its inverse blocks rounded to single precision
    /// (`f32` for `f64`, `Complex<f32>` for `Complex<f64>`; a single-precision one is
    /// copied): half the bytes per application on double-precision vectors
    /// ([`super::MatrixStorage::F32`]). The inverse is taken in full precision first.
    pub fn narrowed(&self) -> BlockJacobi<A::Low> {
        BlockJacobi {
            b: self.b,
            n_block_rows: self.n_block_rows,
            inv: self.inv.par_iter().map(|&v| A::Low::narrow(v)).collect(),
        }
    }
}

impl<A: Element + MatrixScalar<V>, V: Element> LinOp<V> for BlockJacobi<A> {
    fn nrows(&self) -> usize {
        self.n_rows()
    }
    fn ncols(&self) -> usize {
        self.n_rows()
    }
    /// `y_I = D_I^-1 x_I` for every block row, on all cores.
    fn apply_unchecked(&self, x: &[V], y: &mut [V]) -> Result<()> {
        let b = self.b;
        if b == 0 {
            return Ok(());
        }
        let rows = BLOCK_ROWS_PER_TASK * b;
        y.par_chunks_mut(rows)
            .zip(x.par_chunks(rows))
            .zip(self.inv.par_chunks(BLOCK_ROWS_PER_TASK * b * b))
            .for_each(|((yc, xc), ic)| apply_chunk(b, ic, xc, yc));
        Ok(())
    }
}

/// Point or block Jacobi on one GPU: the same inverse blocks as [`BlockJacobi`] (computed
/// on the device by the same function, bit for bit), resident on the device; applying is
/// one kernel launch on the stream of `y`.
pub struct DeviceBlockJacobi<A> {
    b: usize,
    n_block_rows: usize,
    inv: DeviceBuffer<A>,
}

impl<A: Element> DeviceBlockJacobi<A> {
    /// Block Jacobi on the device of `gpu`: gathers the diagonal blocks of `a` on the host
    /// (identity for block rows that store no block), uploads them, inverts them on the GPU
    /// (`block_jacobi_invert_<t>`) and downloads only one flag per block. Same rules and
    /// errors as [`BlockJacobi::new`] (the same first block row is named), plus GPU errors.
    pub fn new(gpu: &Gpu, a: &Bcsr<A>) -> Result<Self>
    where
        A: PrecondKernels<A>,
    {
        Self::build(gpu, a, Kind::Block)
    }

    /// Point Jacobi on the device of `gpu`; same rules and errors as
    /// [`BlockJacobi::point`].
    pub fn point(gpu: &Gpu, a: &Bcsr<A>) -> Result<Self>
    where
        A: PrecondKernels<A>,
    {
        Self::build(gpu, a, Kind::Point)
    }

    fn build(gpu: &Gpu, a: &Bcsr<A>, kind: Kind) -> Result<Self>
    where
        A: PrecondKernels<A>,
    {
        let op = kind.op(true);
        let Diagonal {
            bp,
            n_blocks,
            blocks,
        } = gather(a, kind, op)?;
        let mut inv = gpu.upload(&blocks)?;
        drop(blocks);
        if n_blocks > 0 && bp > 0 {
            let mut flags = gpu.alloc::<u32>(n_blocks)?;
            block_jacobi_invert(bp, &mut inv, &mut flags)?;
            let flags = flags.download()?;
            if let Some(first) = flags.iter().position(|&f| f == FLAG_SINGULAR) {
                return Err(singular_error(a, kind, op, first));
            }
        }
        Ok(DeviceBlockJacobi {
            b: bp,
            n_block_rows: n_blocks,
            inv,
        })
    }

    /// The device (and stream) holding the inverse blocks.
    pub fn gpu(&self) -> &Gpu {
        self.inv.gpu()
    }

    inverse_block_accessors!();

    /// The inverse blocks on the device, laid out as [`BlockJacobi::inverse_blocks`].
    pub fn inverse_blocks(&self) -> &DeviceBuffer<A> {
        &self.inv
    }

    /// [`BlockJacobi::narrowed`] on the device (the same rounding, one kernel).
    pub fn narrowed(&self) -> Result<DeviceBlockJacobi<A::Low>>
    where
        A::Low: CompressedBasisKernels<A> + Element,
    {
        Ok(DeviceBlockJacobi {
            b: self.b,
            n_block_rows: self.n_block_rows,
            inv: narrow_on_device(&self.inv)?,
        })
    }
}

/// `values` rounded to single precision in a new buffer on the same stream (one
/// kernel, the CPU's rounding): the device side of the `narrowed` preconditioners.
pub(crate) fn narrow_on_device<A>(values: &DeviceBuffer<A>) -> Result<DeviceBuffer<A::Low>>
where
    A: Element,
    A::Low: CompressedBasisKernels<A> + Element,
{
    let gpu = values.gpu();
    let len = values.len();
    let mut low = gpu.alloc::<A::Low>(len)?;
    if len > 0 {
        let args = BasisNarrow {
            n: len,
            x: values.as_in(),
            y: low.as_out(),
        };
        let cfg = LaunchConfig::for_elements(len, 256);
        // SAFETY: the kernel reads `len` entries of `values` and writes `len` into `low`.
        unsafe { gpu.launch(&A::Low::BASIS_NARROW, cfg, args)? };
    }
    Ok(low)
}

impl<A, V> DeviceLinOp<V> for DeviceBlockJacobi<A>
where
    A: Element + MatrixScalar<V> + PrecondKernels<V>,
    V: Element,
{
    fn nrows(&self) -> usize {
        self.n_rows()
    }
    fn ncols(&self) -> usize {
        self.n_rows()
    }
    fn gpu(&self) -> &Gpu {
        self.inv.gpu()
    }
    /// `block_jacobi_apply_<a>[_<v>]` on the stream of `y`.
    fn apply_unchecked(&self, x: &DeviceView<'_, V>, y: &mut DeviceViewMut<'_, V>) -> Result<()> {
        block_jacobi_apply(self.b, &self.inv, x, y)
    }
}

/// `block_jacobi_invert_<a>`: inverts the `flags.len()` row-major `b x b` blocks of
/// `blocks` in place on their stream and sets `flags[t]` (0 inverted, 1 singular).
fn block_jacobi_invert<A: Element + InvertKernels>(
    b: usize,
    blocks: &mut DeviceBuffer<A>,
    flags: &mut DeviceBuffer<u32>,
) -> Result<()> {
    let op = "block_jacobi_invert";
    if b == 0 || b > BLOCK_JACOBI_MAX_B {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("block size b = {b} outside 1..={BLOCK_JACOBI_MAX_B}"),
        });
    }
    let n = flags.len();
    check_len(op, "blocks (b*b per flag)", n * b * b, blocks.len())?;
    check_device(op, "flags", blocks.gpu(), flags.gpu())?;
    if n == 0 {
        return Ok(());
    }
    let gpu = blocks.gpu().clone();
    let cfg = LaunchConfig::for_elements(n, BLOCK_JACOBI_THREADS as u32);
    let args = BlockJacobiInvert {
        n_blocks: n,
        b,
        blocks: blocks.as_out(),
        flags: flags.as_out(),
    };
    // SAFETY: the kernel reads and writes blocks[0..n b b] and writes flags[0..n]; both
    // lengths and 1 <= b <= BLOCK_JACOBI_MAX_B are checked above; the two `&mut`
    // borrows exclude aliasing.
    unsafe { gpu.launch(&A::INVERT, cfg, args) }.map_err(Into::into)
}

/// `block_jacobi_apply_<a>[_<v>]`: `y = D^-1 x` for the row-major `b x b` inverse blocks
/// `inv`, on the stream of `y`.
fn block_jacobi_apply<A, V>(
    b: usize,
    inv: &DeviceBuffer<A>,
    x: &impl DeviceSlice<V>,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + MatrixScalar<V> + PrecondKernels<V>,
    V: Element,
{
    let op = "block_jacobi_apply";
    let n = y.len();
    if b == 0 || n % b != 0 {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("y has {n} rows, not a multiple of the block size {b}"),
        });
    }
    check_len(op, "x", n, x.len())?;
    check_len(op, "inverse blocks (b*b per block row)", n * b, inv.len())?;
    for (what, gpu) in [("x", x.gpu()), ("inverse blocks", inv.gpu())] {
        check_device(op, what, y.gpu(), gpu)?;
    }
    if n == 0 {
        return Ok(());
    }
    let gpu = y.gpu().clone();
    let cfg = LaunchConfig::for_elements(n, BLOCK_JACOBI_THREADS as u32);
    let args = BlockJacobiApply {
        n_rows: n,
        b,
        inv: inv.as_in(),
        x: x.as_in(),
        y: y.as_out(),
    };
    // SAFETY: the kernel reads inv[0..n b] and x[0..n] and writes y[0..n]; the lengths,
    // and n a multiple of b >= 1, are checked above; `&mut y` excludes aliasing with x
    // and inv.
    unsafe { gpu.launch(&<A as PrecondKernels<V>>::APPLY, cfg, args) }.map_err(Into::into)
}
