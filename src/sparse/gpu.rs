//! SpMV on the GPU: a matrix is uploaded once ([`DeviceBcsr::upload`], ...) and stays on
//! the device; `y <- alpha A x + beta y` runs on the stream of `y` without synchronising.
//! [`DeviceMatrix::upload`] picks the format from the matrix's structure
//! ([`super::Format::Auto`]).
//!
//! | format | kernel | thread mapping |
//! |---|---|---|
//! | CSR (any matrix) | `spmv_csr_<t>` | `lanes` threads per row (a power of two up to 32, from the mean row length), lanes summed in a fixed tree |
//! | BCSR, `b = 5`, row- or column-major blocks | `spmv_bcsr5_{rm,cm}_<t>` | one thread per matrix row |
//! | BCSR, any `b` | `spmv_bcsr_{rm,cm}_<t>` | one thread per matrix row |
//! | ELL (scalar, column-major) | `spmv_ell_<t>` | one thread per matrix row, coalesced |
//! | BELL (blocked ELL), `b = 5` or any `b` | `spmv_bell5_<t>`, `spmv_bell_<t>` | one thread per matrix row, coalesced |
//! | SBELL (sliced masked BELL), `b = 5` or `b <= 8` | `spmv_sbell5_<t>`, `spmv_sbell_<t>` | one thread per stored block row (`b` accumulators), a warp per slice, coalesced |
//! | SBELL, small matrices ([`SbellThreads`]) | `spmv_sbell5_rows_<t>`, `spmv_sbell_rows_<t>` | one thread per matrix row, `b` warps per slice, coalesced |
//! | BDIA (block stencil), `b = 5` or any `b` | `spmv_bdia5_<t>`, `spmv_bdia_<t>` | one thread per stored matrix row, coalesced |
//!
//! The per-row sum is the CPU path's fused multiply-add chain in the same order, so GPU
//! and CPU results agree bit for bit (CSR: the order of [`super::cpu::spmv_csr_lanes`]
//! with the matrix's [`DeviceCsr::lanes`]). Where `beta` is exactly zero the old `y` is
//! not read.
//!
//! Each `spmv_*` checks the operands (lengths, devices), then holds the one `unsafe`
//! launch of its kernel; the matrix's own indices were checked by its host format's
//! constructor before the upload.

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, In, Kernel, LaunchConfig, Out,
};
use ferrocuda_kernels::abi::Signature;
use ferrocuda_kernels::spmv::{
    CSR_MAX_LANES, CSR_THREADS, SBELL_THREADS, SPMV_ROW_BLOCK, SpmvBcsr, SpmvBdia, SpmvBell,
    SpmvCsr, SpmvEll, SpmvSbell, csr_lanes, sbell_row_threads,
};

pub use ferrocuda_kernels::spmv::SpmvKernels;

use super::pattern::block_shape_accessors;
use super::{
    Bcsr, Bdia, Bell, BlockLayout, BlockShape, Csr, Element, Ell, Format, FormatChoice,
    FormatOptions, Index, Matrix, Sbell, Storage, Target,
};
use crate::error::{Error, Result, check_device, check_len};

/// A [`Csr`] matrix resident on one GPU (same arrays), with the number of threads that
/// share a row in [`spmv_csr`].
///
/// ```
/// use ferrocuda::sparse::{Csr, cpu, gpu::{DeviceCsr, spmv_csr}};
/// // [[2, 1], [0, 3]]
/// let a = Csr::try_new(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![2.0_f64, 1.0, 3.0])?;
/// let x = [1.0, 2.0];
/// let mut want = [0.0; 2];
/// cpu::spmv_csr(1.0, &a, &x, 0.0, &mut want)?;
/// match ferrocuda::gpu::open(0) {
///     Ok(gpu) => {
///         let da = DeviceCsr::upload(&gpu, &a)?;
///         let (dx, mut dy) = (gpu.upload(&x)?, gpu.alloc::<f64>(2)?);
///         spmv_csr(1.0, &da, &dx, 0.0, &mut dy)?;
///         assert_eq!(dy.download()?, want);
///     }
///     Err(e) if e.is_no_device() => println!("no GPU ({e}); the CPU gives {want:?}"),
///     Err(e) => return Err(e.into()),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DeviceCsr<A> {
    n_rows: usize,
    n_cols: usize,
    lanes: usize,
    row_ptr: DeviceBuffer<usize>,
    col_idx: DeviceBuffer<u32>,
    values: DeviceBuffer<A>,
}

impl<A: Element> DeviceCsr<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays to the device of `gpu`; rows get
    /// [`ferrocuda_kernels::spmv::csr_lanes`] threads each (the power of two at or above
    /// the mean row length, at most 32).
    pub fn upload(gpu: &Gpu, a: &Csr<A>) -> Result<Self> {
        Self::upload_with_lanes(gpu, a, csr_lanes(a.nnz(), a.n_rows()))
    }

    /// [`DeviceCsr::upload`] with `lanes` threads per row. Errors: `lanes` is not a power
    /// of two from 1 to 32.
    pub fn upload_with_lanes(gpu: &Gpu, a: &Csr<A>, lanes: usize) -> Result<Self> {
        check_lanes("DeviceCsr::upload_with_lanes", lanes)?;
        Ok(DeviceCsr {
            n_rows: a.n_rows(),
            n_cols: a.n_cols(),
            lanes,
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            values: gpu.upload(a.values())?,
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Threads per row in [`spmv_csr`]; the CPU twin with the same bits is
    /// [`super::cpu::spmv_csr_lanes`] with this count.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// Device memory of the matrix in bytes (values and indices).
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * size_of::<usize>()
            + self.col_idx.len() * size_of::<u32>()
            + self.values.len() * size_of::<A>()
    }
}

/// `Err` unless `lanes` is a power of two from 1 to [`CSR_MAX_LANES`].
pub(crate) fn check_lanes(op: &'static str, lanes: usize) -> Result<()> {
    if lanes.is_power_of_two() && lanes <= CSR_MAX_LANES {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            reason: format!(
                "lanes = {lanes} threads per row (must be a power of two from 1 to {CSR_MAX_LANES})"
            ),
        })
    }
}

/// `y <- alpha A x + beta y` for a device CSR matrix; same contract as [`spmv_bcsr`], and
/// the same bits as [`super::cpu::spmv_csr_lanes`] with [`DeviceCsr::lanes`] (one lane:
/// the same bits as `cpu::spmv_csr`).
pub fn spmv_csr<A, V>(
    alpha: V,
    a: &DeviceCsr<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    // n_rows <= Index::MAX and lanes <= 32: the thread count fits.
    let cfg = LaunchConfig::for_elements(a.n_rows * a.lanes, CSR_THREADS as u32);
    let kernel = <A as SpmvKernels<V>>::CSR;
    // SAFETY: the kernel reads row_ptr[0..=n_rows] and, for each row, col_idx and values
    // at row_ptr[i]..row_ptr[i+1] (offsets monotone up to nnz, columns < n_cols: checked
    // by `Csr`), x[0..n_cols] and writes y[0..n_rows] (checked by launch_spmv); lanes is
    // a power of two <= 32 (checked at upload) and CSR_THREADS a multiple of 32, as its
    // warp-uniform loop needs.
    unsafe {
        launch_spmv(
            "spmv_csr",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvCsr {
                n_rows: a.n_rows,
                lanes: a.lanes,
                alpha,
                row_ptr: a.row_ptr.as_in(),
                col_idx: a.col_idx.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// A [`Bcsr`] matrix resident on one GPU (same arrays, same layout).
pub struct DeviceBcsr<A> {
    shape: BlockShape,
    layout: BlockLayout,
    row_ptr: DeviceBuffer<usize>,
    col_idx: DeviceBuffer<u32>,
    values: DeviceBuffer<A>,
}

impl<A: Element> DeviceBcsr<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Bcsr<A>) -> Result<Self> {
        Ok(DeviceBcsr {
            shape: a.shape(),
            layout: a.layout(),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            values: gpu.upload(a.values())?,
        })
    }

    block_shape_accessors!(shape);

    /// Device memory of the matrix in bytes (values and indices).
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * size_of::<usize>()
            + self.col_idx.len() * size_of::<u32>()
            + self.values.len() * size_of::<A>()
    }
}

/// A [`Bell`] matrix resident on one GPU (same arrays, same layout).
pub struct DeviceBell<A> {
    shape: BlockShape,
    n_block_rows_pad: usize,
    row_len: DeviceBuffer<u32>,
    block_col: DeviceBuffer<u32>,
    values: DeviceBuffer<A>,
}

impl<A: Element> DeviceBell<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Bell<A>) -> Result<Self> {
        Ok(DeviceBell {
            shape: a.shape(),
            n_block_rows_pad: a.n_block_rows_pad(),
            row_len: gpu.upload(a.row_len())?,
            block_col: gpu.upload(a.block_col())?,
            values: gpu.upload(a.values())?,
        })
    }

    block_shape_accessors!(shape);
}

/// An [`Ell`] matrix resident on one GPU (same arrays, same layout).
pub struct DeviceEll<A> {
    n_rows: usize,
    n_cols: usize,
    n_rows_pad: usize,
    row_len: DeviceBuffer<u32>,
    col_idx: DeviceBuffer<u32>,
    values: DeviceBuffer<A>,
}

impl<A: Element> DeviceEll<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Ell<A>) -> Result<Self> {
        Ok(DeviceEll {
            n_rows: a.n_rows(),
            n_cols: a.n_cols(),
            n_rows_pad: a.n_rows_pad(),
            row_len: gpu.upload(a.row_len())?,
            col_idx: gpu.upload(a.col_idx())?,
            values: gpu.upload(a.values())?,
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
}

/// `y <- alpha A x + beta y` for a device ELL matrix; same contract as [`spmv_bcsr`],
/// and the same bits as `cpu::spmv_ell`.
pub fn spmv_ell<A, V>(
    alpha: V,
    a: &DeviceEll<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    let cfg = LaunchConfig::for_elements(a.n_rows, SPMV_ROW_BLOCK as u32);
    let kernel = <A as SpmvKernels<V>>::ELL;
    // SAFETY: the kernel reads the arrays validated by `Ell` (row_len <= width, slots at
    // k n_rows_pad + i inside width n_rows_pad, columns < n_cols), x[0..n_cols], and
    // writes y[0..n_rows] (checked by launch_spmv).
    unsafe {
        launch_spmv(
            "spmv_ell",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvEll {
                n_rows: a.n_rows,
                n_rows_pad: a.n_rows_pad,
                alpha,
                row_len: a.row_len.as_in(),
                col_idx: a.col_idx.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// Lengths of `x` and `y`, and `x` and the matrix on the device of `y`. Public for
/// `ferrocuda-repro`'s SpMV variants, which check their operands the same way.
#[doc(hidden)]
pub fn check_operands<V>(
    op: &'static str,
    n_rows: usize,
    n_cols: usize,
    matrix: &Gpu,
    x: &impl DeviceSlice<V>,
    y: &impl DeviceSlice<V>,
) -> Result<()> {
    check_len(op, "x", n_cols, x.len())?;
    check_len(op, "y", n_rows, y.len())?;
    for (what, gpu) in [("x", x.gpu()), ("matrix", matrix)] {
        check_device(op, what, y.gpu(), gpu)?;
    }
    Ok(())
}

/// The rows and columns of a device matrix and the device holding it: what
/// [`launch_spmv`] checks the operands against.
type Shape<'a> = (usize, usize, &'a Gpu);

/// The body every `spmv_*` shares: checks the operands of `op` against the matrix
/// ([`check_operands`]), then, unless the matrix has no rows, launches `kernel` on the
/// stream of `y` with the arguments `args` makes from `x` (read) and `y` (written).
///
/// # Safety
/// As [`Gpu::launch`]: given `x` of `n_cols` and `y` of `n_rows` elements (checked
/// here), the kernel stays inside the arrays `args` hands it.
unsafe fn launch_spmv<'a, S: Signature, V: Element>(
    op: &'static str,
    (n_rows, n_cols, matrix): Shape<'_>,
    x: &'a impl DeviceSlice<V>,
    y: &'a mut impl DeviceSliceMut<V>,
    kernel: &Kernel<S>,
    cfg: LaunchConfig,
    args: impl FnOnce(In<'a, V>, Out<'a, V>) -> S::Args<'a>,
) -> Result<()> {
    check_operands(op, n_rows, n_cols, matrix, x, y)?;
    if n_rows == 0 {
        return Ok(());
    }
    let gpu = y.gpu().clone();
    let args = args(x.as_in(), y.as_out());
    // SAFETY: forwarded from the caller; `&mut y` excludes aliasing with `x` and the
    // matrix.
    unsafe { gpu.launch(kernel, cfg, args) }.map_err(Into::into)
}

/// `y <- alpha A x + beta y` for a device blocked-ELL matrix; same contract as
/// [`spmv_bcsr`], and the same bits.
pub fn spmv_bell<A, V>(
    alpha: V,
    a: &DeviceBell<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    let kernel = if a.shape.b == 5 {
        <A as SpmvKernels<V>>::BELL5
    } else {
        <A as SpmvKernels<V>>::BELL
    };
    let cfg = LaunchConfig::for_elements(a.n_rows(), SPMV_ROW_BLOCK as u32);
    // SAFETY: the kernel reads the arrays validated by `Bell` (row_len <= width, block
    // columns < n_block_cols, values of width b b n_block_rows_pad), x[0..n_cols], and
    // writes y[0..n_rows] (checked by launch_spmv); bell5 only runs with b = 5.
    unsafe {
        launch_spmv(
            "spmv_bell",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvBell {
                n_block_rows: a.shape.n_block_rows,
                n_block_rows_pad: a.n_block_rows_pad,
                b: a.shape.b,
                alpha,
                row_len: a.row_len.as_in(),
                block_col: a.block_col.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// `y <- alpha A x + beta y` for a device BCSR matrix. `A` and `V` may be the same
/// scalar, or a real matrix with complex vectors. Errors: `x.len() != A.n_cols()`,
/// `y.len() != A.n_rows()`, operands on different devices.
pub fn spmv_bcsr<A, V>(
    alpha: V,
    a: &DeviceBcsr<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    let kernel = match (a.shape.b, a.layout) {
        (5, BlockLayout::RowMajor) => <A as SpmvKernels<V>>::BCSR5_RM,
        (5, BlockLayout::ColMajor) => <A as SpmvKernels<V>>::BCSR5_CM,
        (_, BlockLayout::RowMajor) => <A as SpmvKernels<V>>::BCSR_RM,
        (_, BlockLayout::ColMajor) => <A as SpmvKernels<V>>::BCSR_CM,
    };
    let cfg = LaunchConfig::for_elements(a.n_rows(), SPMV_ROW_BLOCK as u32);
    // SAFETY: the kernel reads the matrix arrays validated by `Bcsr` (offsets monotone up
    // to nnzb, block columns < n_block_cols, b b values per block), x[0..n_cols], and
    // writes y[0..n_rows] (checked by launch_spmv); the bcsr5 kernels only run with b = 5.
    unsafe {
        launch_spmv(
            "spmv_bcsr",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvBcsr {
                n_block_rows: a.shape.n_block_rows,
                b: a.shape.b,
                alpha,
                row_ptr: a.row_ptr.as_in(),
                col_idx: a.col_idx.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// An [`Sbell`] matrix resident on one GPU, with the list of its empty block rows.
pub struct DeviceSbell<A> {
    shape: BlockShape,
    n_stored: usize,
    n_empty: usize,
    row_index: DeviceBuffer<Index>,
    empty_rows: DeviceBuffer<Index>,
    row_len: DeviceBuffer<Index>,
    masks: DeviceBuffer<u64>,
    slice_col_ptr: DeviceBuffer<usize>,
    slice_val_ptr: DeviceBuffer<usize>,
    block_col: DeviceBuffer<Index>,
    values: DeviceBuffer<A>,
    threads: SbellThreads,
    /// What [`SbellThreads::Auto`] picks for this matrix on its device (one thread per
    /// row), decided at the upload.
    auto_rows: bool,
}

/// How [`spmv_sbell`] maps threads to a [`DeviceSbell`] matrix. Every choice gives the
/// same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SbellThreads {
    /// One thread per matrix row below a size that fills the device with block rows
    /// (four blocks of 128 threads per multiprocessor), else one per block row.
    #[default]
    Auto,
    /// One thread per stored block row, `b` accumulators (the large-matrix kernel: 93-95 %
    /// of the copy bandwidth on case 6).
    BlockRows,
    /// One thread per matrix row (`b` times the threads, each with a `b`-th of the
    /// chain): for matrices that leave most multiprocessors idle otherwise.
    Rows,
}

impl<A: Element> DeviceSbell<A> {
    /// Sets the thread mapping of the products ([`SbellThreads::Auto`] unless set).
    pub fn set_threads(&mut self, threads: SbellThreads) {
        self.threads = threads;
    }

    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays (and the list of its empty block rows) to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Sbell<A>) -> Result<Self> {
        let empty = a.empty_block_rows()?;
        let auto_rows = sbell_by_rows(a.row_len().len(), gpu.multiprocessors()?);
        Ok(DeviceSbell {
            shape: a.shape(),
            n_stored: a.n_stored(),
            n_empty: empty.len(),
            row_index: gpu.upload(a.row_index())?,
            empty_rows: gpu.upload(&empty)?,
            row_len: gpu.upload(a.row_len())?,
            masks: gpu.upload(a.masks())?,
            slice_col_ptr: gpu.upload(a.slice_col_ptr())?,
            slice_val_ptr: gpu.upload(a.slice_val_ptr())?,
            block_col: gpu.upload(a.block_col())?,
            values: gpu.upload(a.values())?,
            threads: SbellThreads::Auto,
            auto_rows,
        })
    }

    block_shape_accessors!(shape);

    /// The arrays and sizes as the kernels take them (GMRES's cycle kernel runs the
    /// product itself).
    pub(crate) fn operands(&self) -> SbellOperands<'_, A> {
        SbellOperands {
            n_stored: self.n_stored,
            n_stored_pad: self.row_len.len(),
            n_empty: self.n_empty,
            b: self.shape.b,
            row_index: self.row_index.as_in(),
            empty_rows: self.empty_rows.as_in(),
            row_len: self.row_len.as_in(),
            masks: self.masks.as_in(),
            slice_col_ptr: self.slice_col_ptr.as_in(),
            slice_val_ptr: self.slice_val_ptr.as_in(),
            block_col: self.block_col.as_in(),
            values: self.values.as_in(),
        }
    }
}

/// A [`DeviceSbell`]'s kernel operands (`ferrocuda_kernels::spmv::spmv_sbell`'s
/// parameters between `b` and `x`, and the sizes).
pub(crate) struct SbellOperands<'a, A> {
    pub n_stored: usize,
    pub n_stored_pad: usize,
    pub n_empty: usize,
    pub b: usize,
    pub row_index: In<'a, Index>,
    pub empty_rows: In<'a, Index>,
    pub row_len: In<'a, Index>,
    pub masks: In<'a, u64>,
    pub slice_col_ptr: In<'a, usize>,
    pub slice_val_ptr: In<'a, usize>,
    pub block_col: In<'a, Index>,
    pub values: In<'a, A>,
}

/// Stored block rows below which the SBELL product runs one thread per matrix row
/// (`spmv_sbell[5]_rows_<t>`) rather than one per block row: a grid of one thread per
/// block row would leave most multiprocessors idle (`n_stored_pad` threads, 128 a block,
/// against at least a few blocks per multiprocessor), and each thread would walk the
/// whole row's chain of loads alone. Same sums, same bits, either way.
pub(crate) fn sbell_by_rows(n_stored_pad: usize, multiprocessors: usize) -> bool {
    n_stored_pad < 4 * SBELL_THREADS * multiprocessors
}

/// `y <- alpha A x + beta y` for a device sliced masked BELL matrix; same contract as
/// [`spmv_bcsr`], and the same bits as `cpu::spmv_sbell`.
pub fn spmv_sbell<A, V>(
    alpha: V,
    a: &DeviceSbell<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    // With beta = 1 an empty block row keeps y as it is: no thread needs to touch it
    // (the halo part of a distributed matrix is nearly all empty rows).
    let n_empty = if beta == V::ONE { 0 } else { a.n_empty };
    let n_stored_pad = a.row_len.len();
    let b = a.shape.b;
    let rows = match a.threads {
        SbellThreads::Auto => a.auto_rows,
        SbellThreads::BlockRows => false,
        SbellThreads::Rows => true,
    };
    let kernel = match (b == 5, rows) {
        (true, false) => <A as SpmvKernels<V>>::SBELL5,
        (false, false) => <A as SpmvKernels<V>>::SBELL,
        (true, true) => <A as SpmvKernels<V>>::SBELL5_ROWS,
        (false, true) => <A as SpmvKernels<V>>::SBELL_ROWS,
    };
    let threads = if rows {
        sbell_row_threads(n_stored_pad, n_empty, b)
    } else {
        n_stored_pad + n_empty
    };
    let cfg = LaunchConfig::for_elements(threads, SBELL_THREADS as u32);
    // SAFETY: the kernel reads the arrays validated by `Sbell` (slots within the masks and
    // slices, block columns < n_block_cols, row_index < n_block_rows; empty_rows is its
    // complement, n_empty <= its length), x[0..n_cols], and writes y[0..n_rows] (checked
    // by launch_spmv); 1 <= b <= 8 (checked by `Sbell`).
    unsafe {
        launch_spmv(
            "spmv_sbell",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvSbell {
                n_stored: a.n_stored,
                n_stored_pad,
                n_empty,
                b: a.shape.b,
                alpha,
                row_index: a.row_index.as_in(),
                empty_rows: a.empty_rows.as_in(),
                row_len: a.row_len.as_in(),
                masks: a.masks.as_in(),
                slice_col_ptr: a.slice_col_ptr.as_in(),
                slice_val_ptr: a.slice_val_ptr.as_in(),
                block_col: a.block_col.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// A [`Bdia`] matrix resident on one GPU, with the list of its empty block rows.
pub struct DeviceBdia<A> {
    shape: BlockShape,
    n_stored: usize,
    n_stored_pad: usize,
    n_empty: usize,
    offsets: DeviceBuffer<i64>,
    row_index: DeviceBuffer<Index>,
    empty_rows: DeviceBuffer<Index>,
    values: DeviceBuffer<A>,
}

impl<A: Element> DeviceBdia<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays (and the list of its unstored block rows) to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Bdia<A>) -> Result<Self> {
        let empty = super::ghost_block_rows(a.row_index(), a.n_block_rows())?;
        Ok(DeviceBdia {
            shape: a.shape(),
            n_stored: a.row_index().len(),
            n_stored_pad: a.n_stored_pad(),
            n_empty: empty.len(),
            offsets: gpu.upload(a.offsets())?,
            row_index: gpu.upload(a.row_index())?,
            empty_rows: gpu.upload(&empty)?,
            values: gpu.upload(a.values())?,
        })
    }

    block_shape_accessors!(shape);
}

/// `y <- alpha A x + beta y` for a device block-stencil matrix; same contract as
/// [`spmv_bcsr`], and the same bits as `cpu::spmv_bdia`.
pub fn spmv_bdia<A, V>(
    alpha: V,
    a: &DeviceBdia<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    let kernel = if a.shape.b == 5 {
        <A as SpmvKernels<V>>::BDIA5
    } else {
        <A as SpmvKernels<V>>::BDIA
    };
    let threads = (a.n_stored_pad + a.n_empty) * a.shape.b;
    let cfg = LaunchConfig::for_elements(threads, SPMV_ROW_BLOCK as u32);
    // SAFETY: the kernel reads the arrays validated by `Bdia` (values of S b b
    // n_stored_pad, row_index < n_block_rows; empty_rows its complement), skips diagonals
    // outside 0..n_block_cols, reads x[0..n_cols] and writes y[0..n_rows] (checked by
    // launch_spmv).
    unsafe {
        launch_spmv(
            "spmv_bdia",
            (a.n_rows(), a.n_cols(), a.gpu()),
            x,
            y,
            &kernel,
            cfg,
            |x, y| SpmvBdia {
                n_stored: a.n_stored,
                n_stored_pad: a.n_stored_pad,
                n_empty: a.n_empty,
                b: a.shape.b,
                n_block_cols: a.shape.n_block_cols,
                n_diagonals: a.offsets.len(),
                alpha,
                offsets: a.offsets.as_in(),
                row_index: a.row_index.as_in(),
                empty_rows: a.empty_rows.as_in(),
                values: a.values.as_in(),
                x,
                beta,
                y,
            },
        )
    }
}

/// A matrix on one GPU in the format a [`FormatChoice`] names: the problem-level entry
/// point. [`DeviceMatrix::upload`] with [`Format::Auto`] picks SBELL, BCSR, ELL or CSR
/// from the structure (rules in [`super::auto`]) and keeps the report of what it chose
/// and why ([`DeviceMatrix::choice`]); it multiplies with [`DeviceMatrix::spmv`] and is
/// the operator GMRES takes ([`crate::krylov::DeviceLinOp`]).
///
/// ```
/// use ferrocuda::sparse::{Csr, Format, Matrix, gpu::DeviceMatrix};
/// let a = Csr::try_new(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![2.0_f64, 1.0, 3.0])?;
/// match ferrocuda::gpu::open(0) {
///     Ok(gpu) => {
///         let da = DeviceMatrix::upload(&gpu, &a, Format::Auto)?;
///         println!("{}: {}", da.format(), da.choice().reason);
///         let (dx, mut dy) = (gpu.upload(&[1.0, 2.0])?, gpu.alloc::<f64>(2)?);
///         da.spmv(1.0, &dx, 0.0, &mut dy)?;
///         assert_eq!(dy.download()?, [4.0, 6.0]);
///     }
///     Err(e) if e.is_no_device() => {
///         // The same choice and product on the CPU.
///         let m = Matrix::new(&a, Format::Auto)?;
///         let mut y = [0.0; 2];
///         m.spmv(1.0, &[1.0, 2.0], 0.0, &mut y)?;
///         println!("no GPU ({e}); CPU {}: {y:?}", m.format());
///     }
///     Err(e) => return Err(e.into()),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DeviceMatrix<A> {
    storage: DeviceStorage<A>,
    choice: FormatChoice,
}

/// The device arrays of a [`DeviceMatrix`] (boxed: the formats differ in size, and a
/// matrix is made once).
enum DeviceStorage<A> {
    Csr(Box<DeviceCsr<A>>),
    Ell(Box<DeviceEll<A>>),
    Bcsr(Box<DeviceBcsr<A>>),
    Bell(Box<DeviceBell<A>>),
    Sbell(Box<DeviceSbell<A>>),
    Bdia(Box<DeviceBdia<A>>),
}

impl<A: Element> DeviceMatrix<A> {
    /// The matrix where it is stored as SBELL.
    pub(crate) fn sbell_storage(&self) -> Option<&DeviceSbell<A>> {
        match &self.storage {
            DeviceStorage::Sbell(s) => Some(s),
            _ => None,
        }
    }

    /// Converts `a` to `format` ([`Format::Auto`]: chosen for the GPU) and copies it to
    /// the device of `gpu`. Errors: as [`Matrix::with_options`], and the device's.
    pub fn upload(gpu: &Gpu, a: &Csr<A>, format: Format) -> Result<Self> {
        Self::upload_with(gpu, a, format, &FormatOptions::default())
    }

    /// [`DeviceMatrix::upload`] with options (block size, layout, padding).
    pub fn upload_with(
        gpu: &Gpu,
        a: &Csr<A>,
        format: Format,
        opts: &FormatOptions,
    ) -> Result<Self> {
        let m = Matrix::with_options(a, format, Target::Gpu, opts)?;
        Self::from_matrix(gpu, &m)
    }

    /// Copies a host [`Matrix`] (its format and choice) to the device of `gpu`.
    pub fn from_matrix(gpu: &Gpu, m: &Matrix<A>) -> Result<Self> {
        let storage = match m.storage() {
            Storage::Csr(a) => DeviceStorage::Csr(Box::new(DeviceCsr::upload(gpu, a)?)),
            Storage::Ell(a) => DeviceStorage::Ell(Box::new(DeviceEll::upload(gpu, a)?)),
            Storage::Bcsr(a) => DeviceStorage::Bcsr(Box::new(DeviceBcsr::upload(gpu, a)?)),
            Storage::Bell(a) => DeviceStorage::Bell(Box::new(DeviceBell::upload(gpu, a)?)),
            Storage::Sbell(a) => DeviceStorage::Sbell(Box::new(DeviceSbell::upload(gpu, a)?)),
            Storage::Bdia(a) => DeviceStorage::Bdia(Box::new(DeviceBdia::upload(gpu, a)?)),
        };
        Ok(DeviceMatrix {
            storage,
            choice: m.choice().clone(),
        })
    }

    /// What was chosen and why.
    pub fn choice(&self) -> &FormatChoice {
        &self.choice
    }

    /// The format on the device.
    pub fn format(&self) -> Format {
        self.choice.format
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.choice.n_rows
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.choice.n_cols
    }

    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        match &self.storage {
            DeviceStorage::Csr(a) => a.gpu(),
            DeviceStorage::Ell(a) => a.gpu(),
            DeviceStorage::Bcsr(a) => a.gpu(),
            DeviceStorage::Bell(a) => a.gpu(),
            DeviceStorage::Sbell(a) => a.gpu(),
            DeviceStorage::Bdia(a) => a.gpu(),
        }
    }

    /// `y <- alpha A x + beta y`: [`spmv_matrix`].
    pub fn spmv<V>(
        &self,
        alpha: V,
        x: &impl DeviceSlice<V>,
        beta: V,
        y: &mut impl DeviceSliceMut<V>,
    ) -> Result<()>
    where
        A: SpmvKernels<V>,
        V: Element,
    {
        spmv_matrix(alpha, self, x, beta, y)
    }
}

/// `y <- alpha A x + beta y` for a [`DeviceMatrix`] by the kernel of its format; same
/// contract as [`spmv_bcsr`], and the same bits as [`Matrix::spmv`] on the CPU copy of
/// the same format (CSR: as [`super::cpu::spmv_csr_lanes`] with the lanes of
/// [`DeviceCsr::upload`]).
pub fn spmv_matrix<A, V>(
    alpha: V,
    a: &DeviceMatrix<A>,
    x: &impl DeviceSlice<V>,
    beta: V,
    y: &mut impl DeviceSliceMut<V>,
) -> Result<()>
where
    A: Element + SpmvKernels<V>,
    V: Element,
{
    match &a.storage {
        DeviceStorage::Csr(a) => spmv_csr(alpha, a, x, beta, y),
        DeviceStorage::Ell(a) => spmv_ell(alpha, a, x, beta, y),
        DeviceStorage::Bcsr(a) => spmv_bcsr(alpha, a, x, beta, y),
        DeviceStorage::Bell(a) => spmv_bell(alpha, a, x, beta, y),
        DeviceStorage::Sbell(a) => spmv_sbell(alpha, a, x, beta, y),
        DeviceStorage::Bdia(a) => spmv_bdia(alpha, a, x, beta, y),
    }
}
