//! `ferrocuda probe`: the device's parameters and micro-benchmarks, every figure beside
//! the hardware's limit (Staudenmaier 2015, the CUDA version of its OpenCL library).
//!
//! [`ceilings`] derives the limits from the driver's attributes and one table of per-SM
//! throughputs; [`run`] measures, with one Rust PTX kernel per benchmark
//! (`ferrocuda_kernels::probe`), and returns a [`ProbeReport`]: a list of [`Figure`]s
//! (value, ceiling, percent) plus the sweeps behind the plots.
//!
//! # What each number means
//! - **SM clock**: `clock64` cycles / `%globaltimer` nanoseconds, read by thread 0 of
//!   every block at the start and end of the peak kernels; the median over the blocks.
//!   Compute ceilings use this *measured* clock (boost clocks vary with power and
//!   temperature), so a percentage says how well the kernel uses the hardware, not how
//!   high the card clocked.
//! - **Peak add / mul / FMA, f32 / f64**: every thread runs 1 or 8 independent chains
//!   (the "scalar" and "vector" forms; PTX has no vector FP arithmetic, a vector of 8 is
//!   8 independent registers) of dependent steps; FLOPs = threads x chains x steps x
//!   (2 for an FMA, 1 otherwise) over the event-timed kernel. Ceiling: lanes per SM x
//!   SMs x FLOPs per op x measured clock.
//! - **DMMA**: `mma.sync.aligned.<shape>.row.col.f64`, `2 m n k` FLOPs per warp
//!   instruction: `m8n8k4` on every device with FP64 tensor cores, and on compute
//!   capability 9.0 or newer also `m16n8k4`, `m16n8k8`, `m16n8k16`, the shapes of the
//!   Hopper GEMM (so its ceiling is measured, not assumed).
//!   Its ceiling is the FP64 tensor-core rate of the whitepapers, reached on sm_90 only
//!   with the larger `m16n8k16` shape, which the `sm_80` PTX cannot use; the
//!   percentage shows what the portable shape gets.
//! - **Memory**: bytes the kernel must move (a copy counts read + write) over the event
//!   time, against `memory clock x 2 x bus width`. L2-resident read: a buffer of a
//!   quarter of L2 read many times with `ld.global.cg` (no documented ceiling). L1 read:
//!   every block reads the same small buffer, against the 128 B/clk/SM data path of
//!   L1/shared memory. Gather: 4-byte words through a random permutation, counting the
//!   index and the word (8 useful bytes per element) while DRAM moves whole 32-byte
//!   sectors, so a low percentage is the point.
//! - **Shared memory**: lane `l` reads word `l x stride + j`; stride 1 spreads a warp
//!   over 32 banks, stride 32 puts it in one bank (32-way conflict, 1/32 of the rate).
//! - **Latency** (cycles): one thread, one chain of 4096 dependent instructions between
//!   two `clock64` reads; cycles / 4096 is the time from issuing an instruction to the
//!   moment its result can be used by the next one. Below 1 cycle the chain was not
//!   dependent: flagged.
//! - **Pointer chase** (cycles per load): `p = next[p]` through a random cycle over
//!   128-byte lines of a buffer, after one untimed walk; small buffers hit L1, up to L2's
//!   size L2, beyond it DRAM (plus TLB misses at the largest sizes).
//! - **Host transfers**: wall time of `cuMemcpy*Async` + synchronisation for pinned
//!   (page-locked) and pageable host memory over a size sweep; the weighted least-squares
//!   fit `t = t0 + bytes / BW` gives the fixed cost `t0` and the asymptotic bandwidth,
//!   against the PCIe line rate per direction.
//! - **Divergence**: the lanes of a warp take `paths` different paths (1..32); the time
//!   relative to 1 path. A warp runs its paths one after another, so the ideal ratio is
//!   `paths`. Staudenmaier's (2015) branching ratio (data-dependent add or subtract, 1.40 on an AMD
//!   R9 280X) corresponds to 2 paths.
//!
//! A figure above 100 % of its ceiling is impossible and is flagged as a measurement
//! bug (Staudenmaier (2015) published two: see `docs/probe.md`).

pub mod ceilings;
pub mod gpu;
mod measure;
mod report;

use serde::Serialize;

pub use ceilings::Ceilings;
pub use measure::{human, run};
pub use report::TABLE_HEADERS;

/// What `ferrocuda probe` measures and how long.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// Smaller sizes and fewer repetitions (a few seconds).
    pub quick: bool,
    /// Timed repetitions per measurement (median reported).
    pub reps: usize,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            quick: false,
            reps: 5,
        }
    }
}

impl ProbeOptions {
    /// The quick variant (`--quick`).
    pub fn quick() -> Self {
        ProbeOptions {
            quick: true,
            reps: 3,
        }
    }
}

/// One measured figure beside its ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// `clock`, `compute`, `memory`, `shared`, `latency`, `chase`, `transfer` or
    /// `divergence`.
    pub group: &'static str,
    /// What was measured.
    pub name: String,
    /// The value, in `unit`.
    pub value: f64,
    /// `GFLOP/s`, `GB/s`, `MHz`, `cycles`, `us`, `x`.
    pub unit: &'static str,
    /// The hardware's limit in the same unit, where one exists.
    pub ceiling: Option<f64>,
    /// How the ceiling was derived.
    pub ceiling_source: String,
    /// `100 x value / ceiling`.
    pub percent: Option<f64>,
    /// Above 100 % (plus `tolerance_pct`) of the ceiling, or otherwise impossible (a
    /// latency below one cycle): a measurement bug, never a result.
    pub impossible: bool,
    /// Percentage points above 100 % that the measurement's own resolution allows (the
    /// clock figure: two timers; 0 for everything else).
    pub tolerance_pct: f64,
    /// Whether the kernel's output was checked against the CPU, and what came out.
    pub check: String,
}

impl Figure {
    /// A figure; `percent` and `impossible` follow from the value and the ceiling.
    ///
    /// ```
    /// use ferrocuda::probe::Figure;
    /// let f = Figure::new("memory", "copy", 3500.0, "GB/s", Some((3352.0, "DRAM".into())), "ok");
    /// assert!(f.impossible && f.percent.unwrap() > 100.0);
    /// let g = Figure::new("memory", "copy", 3000.0, "GB/s", Some((3352.0, "DRAM".into())), "ok");
    /// assert!(!g.impossible);
    /// ```
    pub fn new(
        group: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
        ceiling: Option<(f64, String)>,
        check: impl Into<String>,
    ) -> Figure {
        let percent = ceiling
            .as_ref()
            .filter(|(c, _)| *c > 0.0)
            .map(|(c, _)| 100.0 * value / c);
        Figure {
            group,
            name: name.into(),
            value,
            unit,
            ceiling: ceiling.as_ref().map(|c| c.0),
            ceiling_source: ceiling.map(|c| c.1).unwrap_or_default(),
            percent,
            impossible: percent.is_some_and(|p| p > 100.0) || !value.is_finite(),
            tolerance_pct: 0.0,
            check: check.into(),
        }
    }

    /// Allows `pct` percentage points above 100 % before the figure counts as
    /// impossible (for figures whose resolution is coarser than the ceiling).
    pub fn with_tolerance(mut self, pct: f64) -> Figure {
        self.tolerance_pct = pct;
        self.impossible = self.percent.is_some_and(|p| p > 100.0 + pct) || !self.value.is_finite();
        self
    }

    /// Marks the figure impossible for a reason of its own (e.g. a latency below 1
    /// cycle), noted in `check`.
    pub fn flag(mut self, why: &str) -> Figure {
        self.impossible = true;
        self.check = format!("{}; {why}", self.check);
        self
    }
}

/// One point of a size sweep.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SweepPoint {
    /// Buffer bytes.
    pub bytes: f64,
    /// The measured value (GB/s, cycles, ...).
    pub value: f64,
}

/// A named series of sweep points.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// What was swept.
    pub name: String,
    /// Points by increasing size.
    pub points: Vec<SweepPoint>,
}

/// The fit `t = t0 + bytes / bandwidth` of one transfer kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TransferFit {
    /// Fixed cost per transfer, seconds.
    pub t0_s: f64,
    /// Asymptotic bandwidth, bytes/s.
    pub bandwidth: f64,
}

/// Weighted least-squares fit of `t = t0 + bytes / bandwidth` to `(bytes, seconds)`
/// points, each weighted by `1 / t^2` (relative errors count alike, so small transfers
/// fix `t0` and large ones the bandwidth). `None` with fewer than two distinct sizes or
/// a non-positive slope.
///
/// ```
/// use ferrocuda::probe::fit_transfer;
/// let pts: Vec<(f64, f64)> = [1e3, 1e6, 1e8].iter().map(|&b| (b, 10e-6 + b / 25e9)).collect();
/// let f = fit_transfer(&pts).unwrap();
/// assert!((f.t0_s - 10e-6).abs() < 1e-12 && (f.bandwidth / 25e9 - 1.0).abs() < 1e-9);
/// ```
pub fn fit_transfer(points: &[(f64, f64)]) -> Option<TransferFit> {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y) in points {
        if !(x.is_finite() && y.is_finite() && y > 0.0) {
            continue;
        }
        let w = 1.0 / (y * y);
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    let det = sw * sxx - sx * sx;
    if !(det.is_finite() && det > 0.0 && det > 1e-12 * sw * sxx) {
        return None;
    }
    let slope = (sw * sxy - sx * sy) / det;
    let t0 = (sy - slope * sx) / sw;
    (slope > 0.0).then_some(TransferFit {
        t0_s: t0,
        bandwidth: 1.0 / slope,
    })
}

/// Everything `ferrocuda probe` measured.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    /// Device name, `None` without a GPU.
    pub device: Option<String>,
    /// Why nothing was measured, if so.
    pub gpu_skipped: Option<String>,
    /// Quick mode.
    pub quick: bool,
    /// The derived ceilings at the peak clock.
    pub ceilings: Option<Ceilings>,
    /// SM clock measured during the FP32 FMA kernel, Hz.
    pub measured_clock_hz: Option<f64>,
    /// The figures, in table order.
    pub figures: Vec<Figure>,
    /// Read bandwidth sweeps (GB/s by buffer size).
    pub bandwidth_sweeps: Vec<Sweep>,
    /// Pointer-chase latency (cycles per load by buffer size).
    pub chase: Vec<SweepPoint>,
    /// Host-device transfers (GB/s by size), one series per direction and memory kind.
    pub transfers: Vec<Sweep>,
    /// Divergence: `(paths, time / time of 1 path)`.
    pub divergence: Vec<(u32, f64)>,
}

impl ProbeReport {
    /// The report of a machine without a GPU.
    pub fn skipped(why: String) -> ProbeReport {
        ProbeReport {
            device: None,
            gpu_skipped: Some(why),
            quick: false,
            ceilings: None,
            measured_clock_hz: None,
            figures: Vec::new(),
            bandwidth_sweeps: Vec::new(),
            chase: Vec::new(),
            transfers: Vec::new(),
            divergence: Vec::new(),
        }
    }

    /// The figures flagged impossible.
    pub fn impossible(&self) -> Vec<&Figure> {
        self.figures.iter().filter(|f| f.impossible).collect()
    }

    /// The first figure whose name starts with `prefix`.
    pub fn figure(&self, prefix: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name.starts_with(prefix))
    }
}
