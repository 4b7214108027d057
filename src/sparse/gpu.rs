//! SpMV on the GPU: a matrix is uploaded once ([`DeviceBcsr::upload`]) and stays on the
//! device; `y <- alpha A x + beta y` runs on the stream of `y` without synchronising.
//!
//! | format | kernel | thread mapping |
//! |---|---|---|
//! | BCSR, `b = 5`, row- or column-major blocks | `spmv_bcsr5_{rm,cm}_<t>` | one thread per matrix row |
//! | BCSR, any `b` | `spmv_bcsr_{rm,cm}_<t>` | one thread per matrix row |
//! | ELL (scalar, column-major) | `spmv_ell_<t>` | one thread per matrix row, coalesced |
//! | BELL (blocked ELL), `b = 5` or any `b` | `spmv_bell5_<t>`, `spmv_bell_<t>` | one thread per matrix row, coalesced |
//! | SBELL (sliced masked BELL), `b = 5` or `b <= 8` | `spmv_sbell5_<t>`, `spmv_sbell_<t>` | one thread per stored block row (`b` accumulators), a warp per slice, coalesced |
//! | BDIA (block stencil), `b = 5` or any `b` | `spmv_bdia5_<t>`, `spmv_bdia_<t>` | one thread per stored matrix row, coalesced |
//!
//! The per-row sum is the CPU path's fused multiply-add chain in the same order, so GPU
//! and CPU results agree bit for bit. Where `beta` is exactly zero the old `y` is not read.

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig, arg};
use ferrocuda_kernels::names::SpmvKernels;
use ferrocuda_kernels::sparse::MatrixScalar;
use ferrocuda_kernels::spmv::{SBELL_THREADS, SPMV_ROW_BLOCK};

use super::{Bcsr, Bdia, Bell, BlockLayout, Element, Ell, Index, Sbell};
use crate::error::{Error, Result, check_len};

/// A [`Bcsr`] matrix resident on one GPU (same arrays, same layout).
pub struct DeviceBcsr<A> {
    b: usize,
    layout: BlockLayout,
    n_block_rows: usize,
    n_block_cols: usize,
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
            b: a.b(),
            layout: a.layout(),
            n_block_rows: a.n_block_rows(),
            n_block_cols: a.n_block_cols(),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            values: gpu.upload(a.values())?,
        })
    }

    /// Rows (`n_block_rows * b`).
    pub fn n_rows(&self) -> usize {
        self.n_block_rows * self.b
    }

    /// Columns (`n_block_cols * b`).
    pub fn n_cols(&self) -> usize {
        self.n_block_cols * self.b
    }

    /// Block size.
    pub fn b(&self) -> usize {
        self.b
    }

    /// Device memory of the matrix in bytes (values and indices).
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * size_of::<usize>()
            + self.col_idx.len() * size_of::<u32>()
            + self.values.len() * size_of::<A>()
    }
}

/// A [`Bell`] matrix resident on one GPU (same arrays, same layout).
pub struct DeviceBell<A> {
    b: usize,
    n_block_rows: usize,
    n_block_cols: usize,
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
            b: a.b(),
            n_block_rows: a.n_block_rows(),
            n_block_cols: a.n_block_cols(),
            n_block_rows_pad: a.n_block_rows_pad(),
            row_len: gpu.upload(a.row_len())?,
            block_col: gpu.upload(a.block_col())?,
            values: gpu.upload(a.values())?,
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_block_rows * self.b
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_block_cols * self.b
    }
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
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    check_operands("spmv_ell", a.n_rows, a.n_cols, a.values.gpu(), x, y)?;
    if a.n_rows == 0 {
        return Ok(());
    }
    let (n, np) = (a.n_rows, a.n_rows_pad);
    let (rl, ci, va) = (
        a.row_len.device_ptr(),
        a.col_idx.device_ptr(),
        a.values.device_ptr(),
    );
    let (xp, yp) = (x.device_ptr(), y.device_ptr());
    let cfg = LaunchConfig::for_elements(n, SPMV_ROW_BLOCK as u32);
    // SAFETY: spmv_ell_<a>_<v>(n_rows, n_rows_pad, alpha, row_len, col_idx, values, x, beta,
    // y) reads the arrays validated by `Ell` (row_len <= width, columns < n_cols),
    // x[0..n_cols], writes y[0..n_rows]; lengths checked.
    unsafe {
        y.gpu().launch_untyped(
            <A as SpmvKernels<V>>::SPMV.ell,
            cfg,
            &mut [
                arg(&n),
                arg(&np),
                arg(&alpha),
                arg(&rl),
                arg(&ci),
                arg(&va),
                arg(&xp),
                arg(&beta),
                arg(&yp),
            ],
        )?
    };
    Ok(())
}

/// Lengths of `x` and `y`, and `x` and the matrix on the device of `y`.
pub(crate) fn check_operands<V>(
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
        if !y.gpu().same_device(gpu) {
            return Err(Error::WrongDevice {
                op,
                what,
                expected: y.gpu().ordinal(),
                found: gpu.ordinal(),
            });
        }
    }
    Ok(())
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
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    check_operands("spmv_bell", a.n_rows(), a.n_cols(), a.values.gpu(), x, y)?;
    let n_rows = a.n_rows();
    if n_rows == 0 {
        return Ok(());
    }
    let names = <A as SpmvKernels<V>>::SPMV;
    let kernel = if a.b == 5 { names.bell5 } else { names.bell };
    let (nbr, nbr_pad, b) = (a.n_block_rows, a.n_block_rows_pad, a.b);
    let (rl, bc, va) = (
        a.row_len.device_ptr(),
        a.block_col.device_ptr(),
        a.values.device_ptr(),
    );
    let (xp, yp) = (x.device_ptr(), y.device_ptr());
    let cfg = LaunchConfig::for_elements(n_rows, SPMV_ROW_BLOCK as u32);
    // SAFETY: spmv_bell*_<a>_<v>(n_block_rows, n_block_rows_pad, b, alpha, row_len,
    // block_col, values, x, beta, y) reads the arrays validated by `Bell` (row_len <= width,
    // block columns < n_block_cols), x[0..n_cols], writes y[0..n_rows]; lengths checked.
    unsafe {
        y.gpu().launch_untyped(
            kernel,
            cfg,
            &mut [
                arg(&nbr),
                arg(&nbr_pad),
                arg(&b),
                arg(&alpha),
                arg(&rl),
                arg(&bc),
                arg(&va),
                arg(&xp),
                arg(&beta),
                arg(&yp),
            ],
        )?
    };
    Ok(())
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
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    check_operands("spmv_bcsr", a.n_rows(), a.n_cols(), a.values.gpu(), x, y)?;
    let n_rows = a.n_rows();
    if n_rows == 0 {
        return Ok(());
    }
    let names = <A as SpmvKernels<V>>::SPMV;
    let kernel = match (a.b, a.layout) {
        (5, BlockLayout::RowMajor) => names.bcsr5_rm,
        (5, BlockLayout::ColMajor) => names.bcsr5_cm,
        (_, BlockLayout::RowMajor) => names.bcsr_rm,
        (_, BlockLayout::ColMajor) => names.bcsr_cm,
    };
    let (nbr, b) = (a.n_block_rows, a.b);
    let (rp, ci, va) = (
        a.row_ptr.device_ptr(),
        a.col_idx.device_ptr(),
        a.values.device_ptr(),
    );
    let (xp, yp) = (x.device_ptr(), y.device_ptr());
    let cfg = LaunchConfig::for_elements(n_rows, SPMV_ROW_BLOCK as u32);
    // SAFETY: spmv_bcsr*_<a>_<v>(n_block_rows, b, alpha, row_ptr, col_idx, values, x, beta, y)
    // reads the matrix arrays validated by `Bcsr` (block columns < n_block_cols), x[0..n_cols]
    // and writes y[0..n_rows]; lengths were checked above; &mut y excludes aliasing.
    unsafe {
        y.gpu().launch_untyped(
            kernel,
            cfg,
            &mut [
                arg(&nbr),
                arg(&b),
                arg(&alpha),
                arg(&rp),
                arg(&ci),
                arg(&va),
                arg(&xp),
                arg(&beta),
                arg(&yp),
            ],
        )?
    };
    Ok(())
}

/// An [`Sbell`] matrix resident on one GPU, with the list of its empty block rows.
pub struct DeviceSbell<A> {
    b: usize,
    n_block_rows: usize,
    n_block_cols: usize,
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
}

impl<A: Element> DeviceSbell<A> {
    /// The device (and stream) holding the matrix.
    pub fn gpu(&self) -> &Gpu {
        self.values.gpu()
    }

    /// Copies `a`'s arrays (and the list of its empty block rows) to the device of `gpu`.
    pub fn upload(gpu: &Gpu, a: &Sbell<A>) -> Result<Self> {
        let empty = a.empty_block_rows()?;
        Ok(DeviceSbell {
            b: a.b(),
            n_block_rows: a.n_block_rows(),
            n_block_cols: a.n_block_cols(),
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
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_block_rows * self.b
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_block_cols * self.b
    }
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
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    check_operands("spmv_sbell", a.n_rows(), a.n_cols(), a.values.gpu(), x, y)?;
    if a.n_rows() == 0 {
        return Ok(());
    }
    let names = <A as SpmvKernels<V>>::SPMV;
    let kernel = if a.b == 5 { names.sbell5 } else { names.sbell };
    // With beta = 1 an empty block row keeps y as it is: no thread needs to touch it
    // (the halo part of a distributed matrix is nearly all empty rows).
    let ne = if beta == V::ONE { 0 } else { a.n_empty };
    let (ns, b) = (a.n_stored, a.b);
    let nsp = a.row_len.len();
    let ptrs = [
        a.row_index.device_ptr(),
        a.empty_rows.device_ptr(),
        a.row_len.device_ptr(),
        a.masks.device_ptr(),
        a.slice_col_ptr.device_ptr(),
        a.slice_val_ptr.device_ptr(),
        a.block_col.device_ptr(),
        a.values.device_ptr(),
    ];
    let (xp, yp) = (x.device_ptr(), y.device_ptr());
    let cfg = LaunchConfig::for_elements(nsp + ne, SBELL_THREADS as u32);
    // SAFETY: spmv_sbell*_<a>_<v>(n_stored, n_stored_pad, n_empty, b, alpha, row_index,
    // empty_rows, row_len, masks, slice_col_ptr, slice_val_ptr, block_col, values, x, beta,
    // y) reads the arrays validated by `Sbell` (slots within the masks and slices, block
    // columns < n_block_cols, row_index < n_block_rows; empty_rows is its complement),
    // x[0..n_cols], writes y[0..n_rows]; 1 <= b <= 8; lengths checked.
    unsafe {
        y.gpu().launch_untyped(
            kernel,
            cfg,
            &mut [
                arg(&ns),
                arg(&nsp),
                arg(&ne),
                arg(&b),
                arg(&alpha),
                arg(&ptrs[0]),
                arg(&ptrs[1]),
                arg(&ptrs[2]),
                arg(&ptrs[3]),
                arg(&ptrs[4]),
                arg(&ptrs[5]),
                arg(&ptrs[6]),
                arg(&ptrs[7]),
                arg(&xp),
                arg(&beta),
                arg(&yp),
            ],
        )?
    };
    Ok(())
}

/// A [`Bdia`] matrix resident on one GPU, with the list of its empty block rows.
pub struct DeviceBdia<A> {
    b: usize,
    n_block_rows: usize,
    n_block_cols: usize,
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
            b: a.b(),
            n_block_rows: a.n_block_rows(),
            n_block_cols: a.n_block_cols(),
            n_stored: a.row_index().len(),
            n_stored_pad: a.n_stored_pad(),
            n_empty: empty.len(),
            offsets: gpu.upload(a.offsets())?,
            row_index: gpu.upload(a.row_index())?,
            empty_rows: gpu.upload(&empty)?,
            values: gpu.upload(a.values())?,
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_block_rows * self.b
    }

    /// Columns.
    pub fn n_cols(&self) -> usize {
        self.n_block_cols * self.b
    }
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
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    check_operands("spmv_bdia", a.n_rows(), a.n_cols(), a.values.gpu(), x, y)?;
    if a.n_rows() == 0 {
        return Ok(());
    }
    let names = <A as SpmvKernels<V>>::SPMV;
    let kernel = if a.b == 5 { names.bdia5 } else { names.bdia };
    let (ns, nsp, ne, b, nbc) = (a.n_stored, a.n_stored_pad, a.n_empty, a.b, a.n_block_cols);
    let nd = a.offsets.len();
    let (of, ri, er, va) = (
        a.offsets.device_ptr(),
        a.row_index.device_ptr(),
        a.empty_rows.device_ptr(),
        a.values.device_ptr(),
    );
    let (xp, yp) = (x.device_ptr(), y.device_ptr());
    let cfg = LaunchConfig::for_elements((nsp + ne) * b, SPMV_ROW_BLOCK as u32);
    // SAFETY: spmv_bdia*_<a>_<v>(n_stored, n_stored_pad, n_empty, b, n_block_cols,
    // n_diagonals, alpha, offsets, row_index, empty_rows, values, x, beta, y) reads the
    // arrays validated by `Bdia` (values of S b b n_stored_pad, row_index < n_block_rows),
    // skips diagonals outside 0..n_block_cols, reads x[0..n_cols], writes y[0..n_rows].
    unsafe {
        y.gpu().launch_untyped(
            kernel,
            cfg,
            &mut [
                arg(&ns),
                arg(&nsp),
                arg(&ne),
                arg(&b),
                arg(&nbc),
                arg(&nd),
                arg(&alpha),
                arg(&of),
                arg(&ri),
                arg(&er),
                arg(&va),
                arg(&xp),
                arg(&beta),
                arg(&yp),
            ],
        )?
    };
    Ok(())
}
