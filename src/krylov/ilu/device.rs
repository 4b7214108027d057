//! ILU(0) on the GPU: [`DeviceIlu0`] (point, from a [`Csr`] matrix) and
//! [`DeviceBlockIlu0`] (block, from a [`Bcsr`] matrix), the device twins of [`Ilu0`] and
//! [`BlockIlu0`], with the same factors bit for bit and the same errors.
//!
//! * **Factorisation on the device, level-scheduled exact ILU(0).** The host copies `A`
//!   into the factors' pattern (the diagonal added where missing, the shift applied: the
//!   CPU's own preparation) and builds the [`LevelSchedule`]s; the device then factors
//!   one level per launch, one thread per (block) row, each row by the per-row function
//!   the CPU runs (`ferrocuda_kernels::precond::ilu::factor_row`). Rows that break down
//!   are flagged; the error names the smallest such row, as the CPU's sequential walk
//!   does (that row reads only earlier rows, which are the same on both).
//! * **Solves on the device, level-scheduled**: `y = U^-1 L^-1 x` is one launch per level
//!   of the lower schedule (forward) and one per level of the upper schedule (back, in
//!   place), the same per-row functions as the CPU, so `apply` gives the CPU's bits.
//!
//! Why levels, not Chow-Patel sweeps or Jacobi-sweep solves: see [`LevelSchedule`]. The
//! cost is one launch per level and pass: [`DeviceBlockIlu0::levels`] says how many.
//!
//! ```
//! use ferrocuda::krylov::{DeviceIlu0, DeviceLinOp, Ilu0, LinOp};
//! use ferrocuda::sparse::{Coo, Csr};
//! // A 1-D convection-diffusion matrix: no fill, so ILU(0) is its exact LU.
//! let n = 50;
//! let mut coo = Coo::<f64>::empty(n, n)?;
//! for i in 0..n {
//!     coo.push(i, i, 4.0)?;
//!     if i > 0 { coo.push(i, i - 1, -1.5)?; }
//!     if i + 1 < n { coo.push(i, i + 1, -0.5)?; }
//! }
//! let a = Csr::from(&coo);
//! let gpu = match ferrocuda::gpu::open(0) {
//!     Ok(g) => g,
//!     Err(e) if e.is_no_device() => return Ok(()), // no GPU here
//!     Err(e) => return Err(e.into()),
//! };
//! let (cpu, dev) = (Ilu0::new(&a)?, DeviceIlu0::new(&gpu, &a)?);
//! // The device's factors are the CPU's, bit for bit; so is the apply.
//! assert_eq!(dev.values().download()?, cpu.values());
//! let x = vec![1.0; n];
//! let mut want = vec![0.0; n];
//! cpu.apply(&x, &mut want)?;
//! let dx = gpu.upload(&x)?;
//! let mut dy = gpu.alloc_zeroed::<f64>(n)?;
//! dev.apply(&dx.view(..)?, &mut dy.view_mut(..)?)?;
//! assert_eq!(dy.download()?, want);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ferrocuda_host::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, Gpu, LaunchConfig,
    copy_device,
};
/// The bound of the device ILU(0): matrix scalars with ILU(0) kernels for vectors of `V`.
pub use ferrocuda_kernels::precond::ilu::IluKernels;
use ferrocuda_kernels::precond::ilu::{
    self as ki, ILU_THREADS, Ilu0Backward, Ilu0BackwardSweep, Ilu0Factor, Ilu0Forward,
    Ilu0ForwardSweep, IluFactorKernels,
};

use super::{BlockIlu0, Breakdown, Factors, Ilu0, IluOptions, LevelSchedule, RowKind, Source};
use crate::blas1::Element;
use crate::error::{Error, Result};
use crate::krylov::gpu::KrylovElement;
use crate::krylov::op::DeviceLinOp;
use crate::krylov::precond::narrow_on_device;
use crate::sparse::{Bcsr, Csr, MatrixScalar};

/// A level schedule with its rows on the device.
struct DeviceLevels {
    /// Offsets of the levels in `rows` (host).
    level_ptr: Vec<usize>,
    rows: DeviceBuffer<u32>,
}

impl DeviceLevels {
    fn upload(gpu: &Gpu, s: &LevelSchedule) -> Result<Self> {
        Ok(DeviceLevels {
            level_ptr: s.level_ptr().to_vec(),
            rows: gpu.upload(s.rows())?,
        })
    }

    /// The levels as `(first, len)` ranges of `rows`, empty levels left out.
    fn ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.level_ptr
            .windows(2)
            .map(|w| (w[0], w[1] - w[0]))
            .filter(|&(_, n)| n > 0)
    }
}

/// The factors on the device, laid out as the CPU's ([`Factors`]), and the schedules.
struct DeviceFactors<A> {
    b: usize,
    n: usize,
    point: bool,
    row_ptr: DeviceBuffer<usize>,
    col_idx: DeviceBuffer<u32>,
    diag: DeviceBuffer<usize>,
    values: DeviceBuffer<A>,
    inv_diag: DeviceBuffer<A>,
    lower: DeviceLevels,
    upper: DeviceLevels,
    /// [`IluOptions::sweeps`].
    sweeps: Option<usize>,
}

impl<A: Element + IluFactorKernels> DeviceFactors<A> {
    /// Prepares `src` on the host, uploads it and factors it on the device, level after
    /// level; a breakdown is the CPU's error for the smallest row that breaks down.
    fn build(
        gpu: &Gpu,
        src: Source<'_, A>,
        point: bool,
        opts: &IluOptions,
        op: &'static str,
    ) -> Result<Self> {
        let super::Unfactored {
            mut f,
            kinds,
            row_max,
            tol,
            shifted,
        } = Factors::unfactored(src, opts, op)?;
        let (b, n) = (f.b, f.n);
        let bb = b * b;
        let lower = LevelSchedule::lower(&f.row_ptr, &f.col_idx, &f.diag)?;
        let upper = LevelSchedule::upper(&f.row_ptr, &f.col_idx, &f.diag)?;
        // Rows the kernel leaves alone, flagged beforehand as the CPU's `factor_row`
        // treats them: the identity's rows (inverse pivot set here), and rows without a
        // diagonal where nothing shifts it in (a zero pivot).
        let mut flags = vec![ki::ILU_OK; n];
        for (i, kind) in kinds.iter().enumerate() {
            match kind {
                RowKind::Empty => {
                    flags[i] = ki::ILU_IDENTITY_ROW;
                    for r in 0..b {
                        f.inv_diag[i * bb + r * b + r] = A::ONE;
                    }
                }
                RowKind::NoDiagonal if !shifted => flags[i] = ki::ILU_MISSING_DIAGONAL,
                _ => {}
            }
        }
        let mut d = DeviceFactors {
            b,
            n,
            point,
            row_ptr: gpu.upload(&f.row_ptr)?,
            col_idx: gpu.upload(&f.col_idx)?,
            diag: gpu.upload(&f.diag)?,
            values: gpu.upload(&f.values)?,
            inv_diag: gpu.upload(&f.inv_diag)?,
            lower: DeviceLevels::upload(gpu, &lower)?,
            upper: DeviceLevels::upload(gpu, &upper)?,
            sweeps: f.sweeps,
        };
        let row_max_d = gpu.upload(&row_max)?;
        let mut flags_d = gpu.upload(&flags)?;
        d.factor(&row_max_d, tol, &mut flags_d)?;
        flags_d.copy_to_host(&mut flags)?;
        let scales = |i: usize| &row_max[i * b..(i + 1) * b];
        let failed = flags.iter().enumerate().find_map(|(i, &g)| {
            Breakdown::from_flag(g, &f.inv_diag[i * bb..(i + 1) * bb], scales(i)).map(|_| i)
        });
        if let Some(i) = failed {
            // The message quotes the pivot: bring the factors back.
            d.values.copy_to_host(&mut f.values)?;
            d.inv_diag.copy_to_host(&mut f.inv_diag)?;
            let inv = &f.inv_diag[i * bb..(i + 1) * bb];
            if let Some(why) = Breakdown::from_flag(flags[i], inv, scales(i)) {
                return Err(f.breakdown_error(op, point, i, why, opts, &row_max));
            }
        }
        Ok(d)
    }

    /// The factors rounded to single precision (the CPU's `Factors::narrowed`), the
    /// pattern and schedules moved over. Errors: factors whose norm exceeds the
    /// single-precision range (a bound on every entry; the CPU names the entry).
    fn narrowed(self, op: &'static str) -> Result<DeviceFactors<A::Low>>
    where
        A: KrylovElement,
    {
        for (what, v) in [
            ("factor values", &self.values),
            ("inverse pivot values", &self.inv_diag),
        ] {
            let norm = crate::RealScalar::to_f64(crate::blas1::gpu::nrm2(v)?);
            if norm.is_nan() || norm > f32::MAX as f64 {
                return Err(Error::InvalidArgument {
                    op,
                    reason: format!(
                        "the ILU(0) {what} have norm {norm:e}, beyond the single-precision range: keep the factors in full precision (MatrixStorage::Full, --storage full)"
                    ),
                });
            }
        }
        Ok(DeviceFactors {
            b: self.b,
            n: self.n,
            point: self.point,
            values: narrow_on_device(&self.values)?,
            inv_diag: narrow_on_device(&self.inv_diag)?,
            row_ptr: self.row_ptr,
            col_idx: self.col_idx,
            diag: self.diag,
            lower: self.lower,
            upper: self.upper,
            sweeps: self.sweeps,
        })
    }

    /// Whether the solves take the kernels built for 5 x 5 blocks (the same arithmetic,
    /// unrolled).
    fn five(&self) -> bool {
        !self.point && self.b == 5
    }

    /// `ilu0_factor_<a>`, one launch per level of the lower schedule.
    fn factor(
        &mut self,
        row_max: &DeviceBuffer<A::Real>,
        tol: A::Real,
        flags: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let gpu = self.values.gpu().clone();
        for (first, len) in self.lower.ranges() {
            let rows = self.lower.rows.view(first..first + len)?;
            let args = Ilu0Factor {
                n: len,
                rows: rows.as_in(),
                b: self.b,
                point: self.point,
                row_ptr: self.row_ptr.as_in(),
                col_idx: self.col_idx.as_in(),
                diag: self.diag.as_in(),
                values: DeviceSliceMut::as_out(&mut self.values),
                inv_diag: DeviceSliceMut::as_out(&mut self.inv_diag),
                row_max: row_max.as_in(),
                tol,
                flags: DeviceSliceMut::as_out(flags),
            };
            let cfg = LaunchConfig::for_elements(len, ILU_THREADS as u32);
            // SAFETY: the buffers hold the pattern built by `Factors::unfactored` (n + 1
            // row offsets, diagonal slots inside their rows, columns < n) with b b values
            // per slot and per row, b scales per row and n flags; `rows` are distinct rows
            // < n whose dependencies lie in earlier levels (LevelSchedule::lower), so no
            // two threads write the same row and every row read is final; 1 <= b <=
            // ILU_MAX_B (checked by the CPU's preparation).
            unsafe { gpu.launch(&A::FACTOR, cfg, args) }?;
        }
        Ok(())
    }

    /// `y = U^-1 L^-1 x`: `ilu0_forward` per level of the lower schedule, then
    /// `ilu0_backward` per level of the upper one, in place, on the stream of `y`; or the
    /// Jacobi sweeps of [`IluOptions::sweeps`].
    fn solve<V: Element>(&self, x: &DeviceView<'_, V>, y: &mut DeviceViewMut<'_, V>) -> Result<()>
    where
        A: IluKernels<V> + MatrixScalar<V>,
    {
        if let Some(s) = self.sweeps {
            return self.sweep_solve(s, x, y);
        }
        let gpu = y.gpu().clone();
        let (forward, backward) = if self.five() {
            (
                &<A as IluKernels<V>>::FORWARD5,
                &<A as IluKernels<V>>::BACKWARD5,
            )
        } else {
            (
                &<A as IluKernels<V>>::FORWARD,
                &<A as IluKernels<V>>::BACKWARD,
            )
        };
        for (first, len) in self.lower.ranges() {
            let rows = self.lower.rows.view(first..first + len)?;
            let args = Ilu0Forward {
                n: len,
                rows: rows.as_in(),
                b: self.b,
                point: self.point,
                row_ptr: self.row_ptr.as_in(),
                col_idx: self.col_idx.as_in(),
                diag: self.diag.as_in(),
                values: self.values.as_in(),
                x: x.as_in(),
                y: DeviceSliceMut::as_out(y),
            };
            let cfg = LaunchConfig::for_elements(len, ILU_THREADS as u32);
            // SAFETY: the factors as in `factor`; x and y hold n b entries (checked by
            // DeviceLinOp::apply) and do not alias (`&mut y`); each thread writes its own
            // row of y and reads rows of earlier levels.
            unsafe { gpu.launch(forward, cfg, args) }?;
        }
        for (first, len) in self.upper.ranges() {
            let rows = self.upper.rows.view(first..first + len)?;
            let args = Ilu0Backward {
                n: len,
                rows: rows.as_in(),
                b: self.b,
                point: self.point,
                row_ptr: self.row_ptr.as_in(),
                col_idx: self.col_idx.as_in(),
                diag: self.diag.as_in(),
                values: self.values.as_in(),
                inv_diag: self.inv_diag.as_in(),
                y: DeviceSliceMut::as_out(y),
            };
            let cfg = LaunchConfig::for_elements(len, ILU_THREADS as u32);
            // SAFETY: as the forward pass, the levels of LevelSchedule::upper.
            unsafe { gpu.launch(backward, cfg, args) }?;
        }
        Ok(())
    }

    /// `y ~ U^-1 L^-1 x` by `sweeps` Jacobi sweeps per factor ([`IluOptions::sweeps`]):
    /// `ilu0_forward_sweep` from `x` (its first sweep), ping-pong in two scratch vectors,
    /// then `ilu0_backward_sweep` from zero in two more, the last iterate copied into `y`.
    fn sweep_solve<V: Element>(
        &self,
        sweeps: usize,
        x: &DeviceView<'_, V>,
        y: &mut DeviceViewMut<'_, V>,
    ) -> Result<()>
    where
        A: IluKernels<V> + MatrixScalar<V>,
    {
        let gpu = y.gpu().clone();
        // The general kernels: unrolled for 5 x 5 blocks the sweeps ran 1.3x slower on
        // case 6 (46 ms in run 100, 57 ms in run 102), the level solves 2.8x faster.
        let (forward, backward) = (
            &<A as IluKernels<V>>::FORWARD_SWEEP,
            &<A as IluKernels<V>>::BACKWARD_SWEEP,
        );
        let len = self.n * self.b;
        let cfg = LaunchConfig::for_elements(self.n, ILU_THREADS as u32);
        let mut fwd = [gpu.alloc::<V>(len)?, gpu.alloc::<V>(len)?];
        for k in 1..sweeps {
            let [p, q] = &mut fwd;
            let (read, out) = if k % 2 == 1 { (&*q, p) } else { (&*p, q) };
            let args = Ilu0ForwardSweep {
                n: self.n,
                b: self.b,
                point: self.point,
                row_ptr: self.row_ptr.as_in(),
                col_idx: self.col_idx.as_in(),
                diag: self.diag.as_in(),
                values: self.values.as_in(),
                x: x.as_in(),
                // The first sweep from zero is x itself: the second reads x.
                y_old: if k == 1 { x.as_in() } else { read.as_in() },
                y: DeviceSliceMut::as_out(out),
            };
            // SAFETY: the factors as in `factor`; x and both scratch vectors hold n b
            // entries; each thread writes its own row of `out`, which no argument reads.
            unsafe { gpu.launch(forward, cfg, args) }?;
        }
        // The forward result: x after one sweep, else the last written.
        let z = match sweeps {
            0 | 1 => None,
            s => Some(&fwd[(s - 2) % 2]),
        };
        let mut back = [gpu.alloc_zeroed::<V>(len)?, gpu.alloc::<V>(len)?];
        for k in 0..sweeps {
            let [p, q] = &mut back;
            let (read, out) = if k % 2 == 0 { (&*p, q) } else { (&*q, p) };
            let args = Ilu0BackwardSweep {
                n: self.n,
                b: self.b,
                point: self.point,
                row_ptr: self.row_ptr.as_in(),
                col_idx: self.col_idx.as_in(),
                diag: self.diag.as_in(),
                values: self.values.as_in(),
                inv_diag: self.inv_diag.as_in(),
                z: z.map_or_else(|| x.as_in(), |z| z.as_in()),
                y_old: read.as_in(),
                y: DeviceSliceMut::as_out(out),
            };
            // SAFETY: as the forward sweeps; `back[0]` starts at zero (the first sweep's
            // previous iterate).
            unsafe { gpu.launch(backward, cfg, args) }?;
        }
        copy_device(&back[sweeps % 2], y)?;
        Ok(())
    }
}

/// The accessors shared by [`DeviceIlu0`] and [`DeviceBlockIlu0`].
macro_rules! device_factor_accessors {
    () => {
        /// The device (and stream) holding the factors.
        pub fn gpu(&self) -> &Gpu {
            self.f.values.gpu()
        }

        /// Levels of the factorisation and forward solve, and of the back solve: the
        /// launches per pass.
        pub fn levels(&self) -> (usize, usize) {
            (self.f.lower.ranges().count(), self.f.upper.ranges().count())
        }
    };
}

/// Point ILU(0) of a square [`Csr`] matrix, factored and applied on the GPU; the
/// device twin of [`Ilu0`] ([ILU(0) docs](super)).
pub struct DeviceIlu0<A> {
    f: DeviceFactors<A>,
}

impl<A: Element + IluFactorKernels> DeviceIlu0<A> {
    /// ILU(0) of `a` on the device of `gpu`, default options. Errors: as [`Ilu0::new`]
    /// (the same row named), and the device's.
    pub fn new(gpu: &Gpu, a: &Csr<A>) -> Result<Self> {
        Self::with_options(gpu, a, &IluOptions::default())
    }

    /// ILU(0) of `a + shift diag(r_i)` on the device; errors as
    /// [`Ilu0::with_options`], and the device's.
    pub fn with_options(gpu: &Gpu, a: &Csr<A>, opts: &IluOptions) -> Result<Self> {
        let op = "DeviceIlu0::new";
        let src = Ilu0::source(a, op)?;
        Ok(DeviceIlu0 {
            f: DeviceFactors::build(gpu, src, true, opts, op)?,
        })
    }

    /// Rows (= columns) of the operator.
    pub fn n_rows(&self) -> usize {
        self.f.n
    }

    device_factor_accessors!();

    /// The factors, laid out as [`Ilu0::values`].
    pub fn values(&self) -> &DeviceBuffer<A> {
        &self.f.values
    }

    /// The inverse pivots, as [`Ilu0::inverse_pivots`].
    pub fn inverse_pivots(&self) -> &DeviceBuffer<A> {
        &self.f.inv_diag
    }

    /// [`Ilu0::narrowed`] on the device, in place of these factors (the same rounding):
    /// single-precision factors for double-precision vectors
    /// ([`crate::krylov::MatrixStorage::F32`]). Errors: factors whose norm exceeds the
    /// single-precision range, the device's.
    pub fn into_narrowed(self) -> Result<DeviceIlu0<A::Low>>
    where
        A: KrylovElement,
    {
        Ok(DeviceIlu0 {
            f: self.f.narrowed("DeviceIlu0::into_narrowed")?,
        })
    }
}

/// Block ILU(0) of a square [`Bcsr`] matrix with `b x b` blocks, factored and applied on
/// the GPU; the device twin of [`BlockIlu0`] ([ILU(0) docs](super)).
pub struct DeviceBlockIlu0<A> {
    f: DeviceFactors<A>,
}

impl<A: Element + IluFactorKernels> DeviceBlockIlu0<A> {
    /// Block ILU(0) of `a` on the device of `gpu`, default options. Errors: as
    /// [`BlockIlu0::new`] (the same block row named), and the device's.
    pub fn new(gpu: &Gpu, a: &Bcsr<A>) -> Result<Self> {
        Self::with_options(gpu, a, &IluOptions::default())
    }

    /// Block ILU(0) of `a + shift diag(r_i)` on the device; errors as
    /// [`BlockIlu0::with_options`], and the device's.
    pub fn with_options(gpu: &Gpu, a: &Bcsr<A>, opts: &IluOptions) -> Result<Self> {
        let op = "DeviceBlockIlu0::new";
        let src = BlockIlu0::source(a, op)?;
        Ok(DeviceBlockIlu0 {
            f: DeviceFactors::build(gpu, src, false, opts, op)?,
        })
    }

    /// Block size `b`.
    pub fn b(&self) -> usize {
        self.f.b
    }

    /// Rows (= columns) of the operator, `n_block_rows b`.
    pub fn n_rows(&self) -> usize {
        self.f.n * self.f.b
    }

    device_factor_accessors!();

    /// The factor blocks, laid out as [`BlockIlu0::blocks`].
    pub fn blocks(&self) -> &DeviceBuffer<A> {
        &self.f.values
    }

    /// The inverted diagonal blocks, as [`BlockIlu0::inverse_diagonal_blocks`].
    pub fn inverse_diagonal_blocks(&self) -> &DeviceBuffer<A> {
        &self.f.inv_diag
    }

    /// [`BlockIlu0::narrowed`] on the device, in place of these factors (the same
    /// rounding).
    pub fn into_narrowed(self) -> Result<DeviceBlockIlu0<A::Low>>
    where
        A: KrylovElement,
    {
        Ok(DeviceBlockIlu0 {
            f: self.f.narrowed("DeviceBlockIlu0::into_narrowed")?,
        })
    }
}

/// Both are `y = U^-1 L^-1 x` on `n b` rows (`b = 1` for points).
macro_rules! device_ilu_op {
    ($($ty:ident),*) => {$(
        impl<A, V> DeviceLinOp<V> for $ty<A>
        where
            A: Element + MatrixScalar<V> + IluKernels<V>,
            V: Element,
        {
            fn nrows(&self) -> usize {
                self.f.n * self.f.b
            }
            fn ncols(&self) -> usize {
                self.f.n * self.f.b
            }
            fn gpu(&self) -> &Gpu {
                self.f.values.gpu()
            }
            /// `y = U^-1 L^-1 x`: one launch per level of each triangular solve.
            fn apply_unchecked(
                &self,
                x: &DeviceView<'_, V>,
                y: &mut DeviceViewMut<'_, V>,
            ) -> Result<()> {
                self.f.solve(x, y)
            }
        }
    )*};
}
device_ilu_op!(DeviceIlu0, DeviceBlockIlu0);
