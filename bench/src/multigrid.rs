//! `ferrocuda bench mg`: seed 003's Tables 6.1-6.8 measured again (3D Poisson multigrid
//! with the ABL and SBL block smoothers, `f32` as in the thesis), beside the thesis's own
//! figures, then grids of `513^3` and `1025^3` in `f32` and `f64`, and the fused block
//! smoother kernel alone against the device copy bandwidth of the same run.
//!
//! **Byte model** (the "GB/s" of a cycle, [`MgReport::cycle_bytes`]): every smoother sweep
//! reads `u` and `f` and writes `u` over the whole level (`3 n^3` values; a red or black
//! sweep touches every 32-byte sector too); the residual reads `u`, `f` and writes `r`,
//! the restriction reads `r` and writes the coarse `f`, the coarse `u` is zeroed; the
//! interpolation reads the coarse `u` and reads and writes the fine `u`. The smoother
//! kernel alone counts `u` read once over the whole grid (the interior and the boundary
//! faces that the outer blocks read as halo), `f` read and `u` written once over the
//! interior: `(n^3 + 2 (n - 2)^3)` values. Halo values that a block reads from its
//! neighbours (`6 s^2` per block of `s^3`, so `3 / s` extra reads per point for blocks of
//! `s = 2`) are **not** counted: neighbouring blocks run in the same or adjacent thread
//! blocks, and these reads are served from L1/L2 (Nsight Compute, gpu-runs.md run 39:
//! 9.07 GB read from DRAM against 8.6 GB of `u` and `f` on `1025^3` `f32`).
//! Every GB/s figure is also given as a fraction of the device-to-device copy bandwidth
//! ([`ferrocuda::timing::copy_ceiling_gbps`]) measured at the start of the same run.
//!
//! **GFLOP/s** are our own flop model ([`MgReport::cycle_flops`]); the thesis counted its
//! own way, so its GFLOPS and ours are not the same measure.
//!
//! The thesis ran the SBL smoother in place, racing between blocks; ours is the
//! deterministic double-buffered SBL (module docs of [`ferrocuda::multigrid`]), so its
//! figures in the SBL tables differ in the digits where the race mattered.

use crate::output::{ResultsDir, Saved};
use serde::Serialize;

use super::plot::{LineChart, LineSeries};
use crate::markdown_table;
use ferrocuda::Result;
use ferrocuda::gpu::Gpu;
use ferrocuda::multigrid::{Cycle, MgOptions, MgReal, MgReport, Smoother, Stop, Sweep, cpu, gpu};
use ferrocuda::report::table;
use ferrocuda::timing::{Stats, copy_ceiling_gbps, time_gpu};

/// One column pair (`||r||_h`, `||e||_h` per V-cycle) of seed 003's Tables 6.1-6.4
/// (Tesla M2050, `f32`, `nu1 = nu2 = 5`, `B = 10`, 10 V-cycles; a missing row is a
/// cycle the thesis could not run for lack of memory).
#[derive(Debug, Clone, Copy)]
pub struct ThesisConvergence {
    /// The table.
    pub table: &'static str,
    /// `abl` or `sbl`.
    pub smoother: Smoother,
    /// The base `b`.
    pub base: usize,
    /// Points per dimension.
    pub n: usize,
    /// `(||r||_h, ||e||_h)` after each V-cycle, as printed.
    pub cycles: &'static [(f64, f64)],
}

/// Seed 003 (Letterer 2013), Tables 6.1-6.4, copied from the thesis (section 6.3).
pub const THESIS_CONVERGENCE: [ThesisConvergence; 12] = [
    ThesisConvergence {
        table: "6.1",
        smoother: Smoother::Abl,
        base: 2,
        n: 33,
        cycles: &[
            (0.295447, 0.006761),
            (0.005873, 0.000144),
            (0.000182, 0.000281),
            (0.000092, 0.000284),
            (0.000092, 0.000284),
            (0.000091, 0.000284),
            (0.000091, 0.000284),
            (0.000091, 0.000284),
            (0.000092, 0.000284),
            (0.000093, 0.000284),
        ],
    },
    ThesisConvergence {
        table: "6.1",
        smoother: Smoother::Abl,
        base: 2,
        n: 65,
        cycles: &[
            (0.307201, 0.007257),
            (0.006389, 0.000081),
            (0.000389, 0.000068),
            (0.000366, 0.000069),
            (0.000365, 0.000069),
            (0.000364, 0.000069),
            (0.000361, 0.000070),
            (0.000362, 0.000070),
            (0.000363, 0.000070),
            (0.000363, 0.000070),
        ],
    },
    ThesisConvergence {
        table: "6.1",
        smoother: Smoother::Abl,
        base: 2,
        n: 129,
        cycles: &[
            (0.310012, 0.007375),
            (0.006857, 0.000138),
            (0.001464, 0.000016),
            (0.001456, 0.000016),
            (0.001455, 0.000017),
            (0.001455, 0.000017),
            (0.001459, 0.000017),
            (0.001455, 0.000017),
            (0.001457, 0.000017),
            (0.001456, 0.000017),
        ],
    },
    ThesisConvergence {
        table: "6.2",
        smoother: Smoother::Sbl,
        base: 2,
        n: 33,
        cycles: &[
            (0.325084, 0.010683),
            (0.010092, 0.000056),
            (0.000348, 0.000273),
            (0.000189, 0.000284),
            (0.000196, 0.000284),
            (0.000205, 0.000284),
            (0.000203, 0.000284),
            (0.000201, 0.000284),
            (0.000199, 0.000284),
            (0.000202, 0.000284),
        ],
    },
    ThesisConvergence {
        table: "6.2",
        smoother: Smoother::Sbl,
        base: 2,
        n: 65,
        cycles: &[
            (0.338528, 0.011355),
            (0.010965, 0.000298),
            (0.000640, 0.000059),
            (0.000656, 0.000070),
            (0.000730, 0.000071),
            (0.000747, 0.000071),
            (0.000753, 0.000071),
            (0.000763, 0.000071),
            (0.000760, 0.000071),
            (0.000767, 0.000071),
        ],
    },
    ThesisConvergence {
        table: "6.2",
        smoother: Smoother::Sbl,
        base: 2,
        n: 129,
        cycles: &[
            (0.341629, 0.011511),
            (0.011362, 0.000359),
            (0.002676, 0.000004),
            (0.002902, 0.000017),
            (0.002935, 0.000017),
            (0.002956, 0.000017),
            (0.002969, 0.000017),
            (0.002980, 0.000017),
            (0.002996, 0.000017),
            (0.003005, 0.000017),
        ],
    },
    ThesisConvergence {
        table: "6.3",
        smoother: Smoother::Abl,
        base: 4,
        n: 65,
        cycles: &[
            (0.909092, 0.018789),
            (0.050275, 0.000934),
            (0.002797, 0.000018),
            (0.000472, 0.000068),
            (0.000417, 0.000070),
            (0.000416, 0.000070),
            (0.000419, 0.000070),
            (0.000418, 0.000070),
            (0.000421, 0.000071),
            (0.000422, 0.000071),
        ],
    },
    ThesisConvergence {
        table: "6.3",
        smoother: Smoother::Abl,
        base: 4,
        n: 257,
        cycles: &[
            (0.966699, 0.018711),
            (0.057140, 0.001001),
            (0.008019, 0.000050),
            (0.006620, 0.000009),
        ],
    },
    ThesisConvergence {
        table: "6.3",
        smoother: Smoother::Abl,
        base: 6,
        n: 217,
        cycles: &[
            (0.259558, 0.023791),
            (0.095446, 0.001611),
            (0.008984, 0.000104),
            (0.005160, 0.000004),
            (0.005110, 0.000003),
            (0.005108, 0.000005),
            (0.005109, 0.000005),
            (0.005108, 0.000005),
            (0.005106, 0.000005),
            (0.005104, 0.000006),
        ],
    },
    ThesisConvergence {
        table: "6.4",
        smoother: Smoother::Sbl,
        base: 4,
        n: 65,
        cycles: &[
            (0.681260, 0.019999),
            (0.039680, 0.001072),
            (0.002346, 0.000006),
            (0.000522, 0.000067),
            (0.000575, 0.000071),
            (0.000587, 0.000071),
            (0.000587, 0.000071),
            (0.000589, 0.000071),
            (0.000592, 0.000071),
            (0.000596, 0.000071),
        ],
    },
    ThesisConvergence {
        table: "6.4",
        smoother: Smoother::Sbl,
        base: 4,
        n: 257,
        cycles: &[(0.696220, 0.019965), (0.042464, 0.001140)],
    },
    ThesisConvergence {
        table: "6.4",
        smoother: Smoother::Sbl,
        base: 6,
        n: 217,
        cycles: &[
            (0.879362, 0.023551),
            (0.065639, 0.001583),
            (0.007198, 0.000101),
            (0.005517, 0.000006),
            (0.005617, 0.000003),
            (0.005649, 0.000005),
            (0.005667, 0.000005),
            (0.005652, 0.000006),
            (0.005677, 0.000006),
            (0.005715, 0.000006),
        ],
    },
];

/// Seed 003, Tables 6.5 (ABL) and 6.6 (SBL): seconds per V-cycle, cycles 1-10, base 2,
/// `(smoother, n, seconds)` (Tesla M2050, `f32`).
pub const THESIS_CYCLE_SECONDS: [(Smoother, usize, [f64; 10]); 6] = [
    (
        Smoother::Abl,
        33,
        [
            0.217761, 0.220698, 0.218811, 0.218063, 0.218133, 0.218147, 0.218382, 0.214308,
            0.208869, 0.211816,
        ],
    ),
    (
        Smoother::Abl,
        65,
        [
            0.405095, 0.405618, 0.405286, 0.351479, 0.337884, 0.338021, 0.338249, 0.335298,
            0.338726, 0.336810,
        ],
    ),
    (
        Smoother::Abl,
        129,
        [
            1.263347, 1.256099, 1.266431, 1.258561, 1.256661, 1.259962, 1.259029, 1.263895,
            1.255149, 1.275359,
        ],
    ),
    (
        Smoother::Sbl,
        33,
        [
            0.169350, 0.170043, 0.169791, 0.170028, 0.168541, 0.168313, 0.168554, 0.167801,
            0.168594, 0.167920,
        ],
    ),
    (
        Smoother::Sbl,
        65,
        [
            0.301999, 0.305373, 0.302413, 0.302427, 0.305216, 0.301295, 0.302572, 0.302587,
            0.302749, 0.300570,
        ],
    ),
    (
        Smoother::Sbl,
        129,
        [
            1.210847, 1.206556, 1.233328, 1.294369, 1.207919, 1.235948, 1.215245, 1.212941,
            1.214567, 1.204142,
        ],
    ),
];

/// Seed 003, section 6.4 (after Table 6.6): the best seconds per V-cycle and the
/// thesis's GFLOPS for bases 4 and 6, `(smoother, base, n, seconds, GFLOPS)`; and the
/// best GFLOPS of Tables 6.5-6.6 for base 2 (the minimum-time cycle).
pub const THESIS_BEST_CYCLE: [(Smoother, usize, usize, f64, f64); 12] = [
    (Smoother::Abl, 2, 33, 0.208869, 1.977875),
    (Smoother::Abl, 2, 65, 0.335298, 9.768047),
    (Smoother::Abl, 2, 129, 1.255149, 20.853308),
    (Smoother::Sbl, 2, 33, 0.167801, 4.446868),
    (Smoother::Sbl, 2, 65, 0.300570, 19.854183),
    (Smoother::Sbl, 2, 129, 1.204142, 39.647110),
    (Smoother::Abl, 4, 65, 0.238837, 12.250450),
    (Smoother::Abl, 4, 257, 5.091857, 36.554632),
    (Smoother::Abl, 6, 217, 3.353493, 32.987157),
    (Smoother::Sbl, 4, 65, 0.215886, 24.571963),
    (Smoother::Sbl, 4, 257, 4.960954, 68.435386),
    (Smoother::Sbl, 6, 217, 2.774216, 72.693519),
];

/// One column of Table 6.7: `(B, (||r||_h, ||e||_h) per V-cycle, best seconds per
/// V-cycle, GFLOPS)`.
pub type ThesisBColumn = (usize, &'static [(f64, f64)], f64, f64);

/// Seed 003, Table 6.7: SBL on `6^3 + 1` points with `B = 1, 2, 3`: `(B, (||r||_h,
/// ||e||_h) per V-cycle to the discretisation error, best seconds per V-cycle, GFLOPS)`.
pub const THESIS_TABLE_6_7: [ThesisBColumn; 3] = [
    (
        1,
        &[
            (2.072854, 0.051332),
            (0.405183, 0.007576),
            (0.083167, 0.001127),
            (0.016660, 0.000163),
            (0.005974, 0.000022),
            (0.005299, 0.000001),
        ],
        1.278621,
        29.445403,
    ),
    (
        2,
        &[
            (1.013558, 0.032961),
            (0.101133, 0.003101),
            (0.011362, 0.000287),
            (0.005043, 0.000026),
            (0.004869, 0.000004),
        ],
        1.426805,
        39.160033,
    ),
    (
        3,
        &[
            (0.907918, 0.029879),
            (0.078784, 0.002546),
            (0.008644, 0.000212),
            (0.005161, 0.000018),
            (0.005097, 0.000001),
        ],
        1.585113,
        46.746162,
    ),
];

/// Seed 003, section 6.5 text after Table 6.7: `(B, V-cycles to the discretisation
/// error, GFLOPS where printed)`: 5 cycles up to `B = 5`, 4 for `B = 10` at 77.65 GFLOPS,
/// still 4 for `B = 50` ("a little over 100 GFLOPS", not a printed figure).
pub const THESIS_B_TEXT: [(usize, usize, Option<f64>); 3] =
    [(5, 5, None), (10, 4, Some(77.650853)), (50, 4, None)];

/// Seed 003, Table 6.8: the thesis's CPU multigrid on `2^8 + 1` points (JUDGE, 2 x
/// Xeon X5650): `||r||_h` per V-cycle and seconds per V-cycle on 1, 2 and 4 CPUs.
pub const THESIS_TABLE_6_8: [(f64, [f64; 3]); 4] = [
    (6.679e-2, [11.4957, 6.1502, 3.0282]),
    (3.881e-3, [11.4993, 6.1505, 3.0292]),
    (1.746e-4, [11.5003, 6.2584, 3.0287]),
    (7.077e-6, [11.4951, 6.1519, 3.0293]),
];

/// What to run.
#[derive(Debug, Clone)]
pub struct MgBenchOptions {
    /// CI-sized grids (`33`, `65`, `6^2 + 1`; large grids `65^3`): a smoke run.
    pub quick: bool,
    /// Timed launches of the smoother kernel alone (median).
    pub reps: usize,
    /// Run the CPU twin (all cores) beside the GPU.
    pub cpu: bool,
}

impl Default for MgBenchOptions {
    fn default() -> Self {
        MgBenchOptions {
            quick: false,
            reps: 10,
            cpu: true,
        }
    }
}

impl MgBenchOptions {
    /// Checks the options before anything runs: `--reps` at least 1.
    pub fn validate(&self) -> Result<()> {
        crate::at_least_one("bench mg", &[("--reps", self.reps)])
    }
}

/// One thesis setup run again: the GPU and the CPU twin, and the thesis's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ThesisRun {
    /// Tables (convergence / performance).
    pub tables: String,
    /// The smoother.
    pub smoother: Smoother,
    /// The base.
    pub base: usize,
    /// Points per dimension.
    pub n: usize,
    /// The GPU run (where there is a GPU).
    pub gpu: Option<MgReport>,
    /// The CPU twin on all cores.
    pub cpu: Option<MgReport>,
    /// Largest relative difference of the per-cycle residual norms, GPU against CPU.
    pub gpu_cpu_residual_rel_diff: Option<f64>,
    /// The thesis's `(||r||_h, ||e||_h)` per cycle (empty where it has none).
    pub thesis: Vec<(f64, f64)>,
    /// The thesis's seconds per cycle (empty where it printed none).
    pub thesis_seconds: Vec<f64>,
    /// The thesis's best seconds per cycle and GFLOPS.
    pub thesis_best: Option<(f64, f64)>,
}

impl ThesisRun {
    /// The run shown in the tables: the GPU's, else the CPU's.
    pub fn ours(&self) -> Option<&MgReport> {
        self.gpu.as_ref().or(self.cpu.as_ref())
    }
}

/// One `B` of the sweep on `6^3 + 1` points (SBL, V(5,5), to the discretisation error).
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// Inner Gauss-Seidel sweeps per block.
    pub inner: usize,
    /// The GPU run.
    pub gpu: Option<MgReport>,
    /// The CPU twin (for the Table 6.7 values of `B`).
    pub cpu: Option<MgReport>,
}

/// One large grid, precision and setup on the GPU.
#[derive(Debug, Clone, Serialize)]
pub struct LargeRun {
    /// Setup name ("V(5,5), B = 10" or "FMG + V(2,1), B = 2").
    pub setup: String,
    /// The GPU run (to the discretisation error).
    pub gpu: MgReport,
    /// Model bytes per second of the cycles as a fraction of the copy bandwidth.
    pub fraction_of_copy: Option<f64>,
}

/// The fused block smoother kernel alone: one launch (one block-Jacobi sweep over the
/// finest grid).
#[derive(Debug, Clone, Serialize)]
pub struct SmootherRow {
    /// Kernel name.
    pub kernel: String,
    /// Points per dimension.
    pub n: usize,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Inner Gauss-Seidel sweeps.
    pub inner: usize,
    /// Launch time (CUDA events).
    pub stats: Stats,
    /// Bytes counted (module docs: `(n^3 + 2 (n - 2)^3)` values).
    pub bytes: f64,
    /// GB/s at the median time.
    pub gbps: f64,
    /// `gbps` over the copy bandwidth of the same run.
    pub fraction_of_copy: f64,
}

/// The benchmark's results.
#[derive(Debug, Clone, Serialize)]
pub struct MgBenchReport {
    /// The GPU's name, where one ran.
    pub device: Option<String>,
    /// Threads of the CPU twin.
    pub cpu_threads: usize,
    /// A `--quick` run.
    pub quick: bool,
    /// Device-to-device copy bandwidth measured at the start, GB/s (read + write).
    pub copy_gbps: Option<f64>,
    /// Tables 6.1-6.6 (and 6.8's grid) run again.
    pub thesis: Vec<ThesisRun>,
    /// Points per dimension of the `B` sweep (`6^3 + 1`).
    pub sweep_n: usize,
    /// Table 6.7 and the `B` sweep.
    pub sweep: Vec<SweepRow>,
    /// Table 6.8: the CPU twin (and the GPU) on `2^8 + 1` points.
    pub table_6_8: ThesisRun,
    /// Large grids on the GPU.
    pub large: Vec<LargeRun>,
    /// The CPU twin on the smallest large grid: one V(5,5) cycle, `f32`.
    pub large_cpu: Option<MgReport>,
    /// The smoother kernel alone.
    pub smoother: Vec<SmootherRow>,
}

/// Solves with `opts` on the GPU (`Some`) or the CPU, in `T`.
fn solve<T: MgReal>(gpu: Option<&Gpu>, opts: &MgOptions) -> Result<MgReport> {
    match gpu {
        Some(g) => gpu::Solver::<T>::new(g, opts)?.solve(),
        None => cpu::Solver::<T>::new(opts)?.solve(),
    }
}

/// GPU (where given) and CPU (where asked) on the same options, `f32`.
fn pair(
    gpu: Option<&Gpu>,
    cpu: bool,
    opts: &MgOptions,
) -> Result<(Option<MgReport>, Option<MgReport>, Option<f64>)> {
    let g = gpu.map(|g| solve::<f32>(Some(g), opts)).transpose()?;
    let c = if cpu || gpu.is_none() {
        Some(solve::<f32>(None, opts)?)
    } else {
        None
    };
    let diff = match (&g, &c) {
        (Some(g), Some(c)) => Some(
            g.residual_norm
                .iter()
                .zip(&c.residual_norm)
                .map(|(a, b)| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE))
                .fold(0.0, f64::max),
        ),
        _ => None,
    };
    Ok((g, c, diff))
}

fn thesis_setup(
    tables: &str,
    smoother: Smoother,
    base: usize,
    n: usize,
    cycles: usize,
) -> (MgOptions, ThesisRun) {
    let opts = MgOptions::new(n, base).smoother(smoother).cycles(cycles);
    let thesis = THESIS_CONVERGENCE
        .iter()
        .find(|t| t.smoother == smoother && t.base == base && t.n == n)
        .map_or(Vec::new(), |t| t.cycles.to_vec());
    let thesis_seconds = THESIS_CYCLE_SECONDS
        .iter()
        .find(|t| t.0 == smoother && t.1 == n && base == 2)
        .map_or(Vec::new(), |t| t.2.to_vec());
    let thesis_best = THESIS_BEST_CYCLE
        .iter()
        .find(|t| t.0 == smoother && t.1 == base && t.2 == n)
        .map(|t| (t.3, t.4));
    (
        opts,
        ThesisRun {
            tables: tables.into(),
            smoother,
            base,
            n,
            gpu: None,
            cpu: None,
            gpu_cpu_residual_rel_diff: None,
            thesis,
            thesis_seconds,
            thesis_best,
        },
    )
}

fn run_thesis(
    gpu: Option<&Gpu>,
    cpu: bool,
    tables: &str,
    smoother: Smoother,
    base: usize,
    n: usize,
    cycles: usize,
) -> Result<ThesisRun> {
    let (opts, mut run) = thesis_setup(tables, smoother, base, n, cycles);
    eprintln!(
        "[bench mg] Table {tables}: {} b = {base}, n = {n}",
        smoother.name()
    );
    let (g, c, d) = pair(gpu, cpu, &opts)?;
    run.gpu = g;
    run.cpu = c;
    run.gpu_cpu_residual_rel_diff = d;
    Ok(run)
}

/// Runs the benchmark (GPU parts only where `gpu` is given).
pub fn run(gpu: Option<&Gpu>, opts: &MgBenchOptions) -> Result<MgBenchReport> {
    let q = opts.quick;
    let copy_gbps = gpu
        .map(|g| copy_ceiling_gbps(g, if q { 64 << 20 } else { 1 << 30 }, 10))
        .transpose()?;
    let mut report = MgBenchReport {
        device: gpu.map(|g| g.name()).transpose()?,
        cpu_threads: rayon::current_num_threads(),
        quick: q,
        copy_gbps,
        thesis: Vec::new(),
        sweep_n: if q { 37 } else { 217 },
        sweep: Vec::new(),
        table_6_8: thesis_setup("6.8", Smoother::Sbl, 2, 257, 4).1,
        large: Vec::new(),
        large_cpu: None,
        smoother: Vec::new(),
    };
    // Tables 6.1-6.6: convergence (6.1-6.4) and time per cycle (6.5-6.6) of the same runs.
    let base2: &[usize] = if q { &[33, 65] } else { &[33, 65, 129] };
    let other: &[(usize, usize)] = if q {
        &[(4, 65), (6, 37)]
    } else {
        &[(4, 65), (4, 257), (6, 217)]
    };
    let large: &[usize] = if q { &[65] } else { &[513, 1025] };
    let large_steps = if gpu.is_some() { large.len() * 6 } else { 0 };
    let mut steps = crate::progress::steps(
        "bench mg",
        2 * base2.len() + 2 * other.len() + 2 + large_steps,
    );
    for (tables, smoother) in [("6.1/6.5", Smoother::Abl), ("6.2/6.6", Smoother::Sbl)] {
        for &n in base2 {
            steps.next(format!("Tables {tables}, n = {n}"));
            report
                .thesis
                .push(run_thesis(gpu, opts.cpu, tables, smoother, 2, n, 10)?);
        }
    }
    for (tables, smoother) in [("6.3", Smoother::Abl), ("6.4", Smoother::Sbl)] {
        for &(b, n) in other {
            steps.next(format!("Table {tables}, b = {b}, n = {n}"));
            report
                .thesis
                .push(run_thesis(gpu, opts.cpu, tables, smoother, b, n, 10)?);
        }
    }
    // Table 6.7 and the B sweep: SBL V(5,5) on 6^3 + 1, to the discretisation error.
    let bs: Vec<usize> = if q || gpu.is_none() {
        vec![1, 2, 3]
    } else {
        (1..=50).collect()
    };
    eprintln!(
        "[bench mg] Table 6.7 / B sweep on n = {}, B = 1..={}",
        report.sweep_n,
        bs.len()
    );
    steps.next("Table 6.7, B sweep");
    for b in bs {
        let o = MgOptions::new(report.sweep_n, 6)
            .inner(b)
            .cycles(10)
            .stop(Stop::Discretisation);
        let with_cpu = b <= 3 && (opts.cpu || gpu.is_none());
        report.sweep.push(SweepRow {
            inner: b,
            gpu: gpu.map(|g| solve::<f32>(Some(g), &o)).transpose()?,
            cpu: if with_cpu {
                Some(solve::<f32>(None, &o)?)
            } else {
                None
            },
        });
    }
    // Table 6.8: the thesis's CPU comparison on 2^8 + 1 (base 2, SBL, V(5,5), B = 10).
    steps.next("Table 6.8");
    report.table_6_8 = run_thesis(
        gpu,
        true,
        "6.8",
        Smoother::Sbl,
        2,
        if q { 33 } else { 257 },
        4,
    )?;
    // Table 6.8 has its own thesis figures (THESIS_TABLE_6_8), not Table 6.6's.
    report.table_6_8.thesis_best = None;
    report.table_6_8.thesis_seconds.clear();
    // Large grids.
    if let Some(g) = gpu {
        for &n in large {
            for f64_ in [false, true] {
                steps.next(format!("{n}^3 {}", if f64_ { "f64" } else { "f32" }));
                for (setup, o) in large_setups(n) {
                    eprintln!(
                        "[bench mg] {n}^3 {}: {setup}",
                        if f64_ { "f64" } else { "f32" }
                    );
                    let r = if f64_ {
                        solve::<f64>(Some(g), &o)?
                    } else {
                        solve::<f32>(Some(g), &o)?
                    };
                    report.large.push(LargeRun {
                        setup: setup.into(),
                        fraction_of_copy: copy_gbps.map(|c| r.cycle_gbps() / c),
                        gpu: r,
                    });
                }
            }
        }
        for &n in large {
            for (f64_, inner) in [(false, 10), (false, 4), (true, 10)] {
                steps.next(format!("{n}^3 smoother alone, B = {inner}"));
                report.smoother.push(if f64_ {
                    smoother_alone::<f64>(g, n, inner, opts.reps, copy_gbps.unwrap_or(f64::NAN))?
                } else {
                    smoother_alone::<f32>(g, n, inner, opts.reps, copy_gbps.unwrap_or(f64::NAN))?
                });
            }
        }
    }
    if opts.cpu || gpu.is_none() {
        let n = large[0];
        eprintln!("[bench mg] CPU twin: one V(5,5) cycle on {n}^3 f32");
        let o = MgOptions::new(n, 2).cycles(1);
        report.large_cpu = Some(solve::<f32>(None, &o)?);
    }
    Ok(report)
}

/// The two setups of the large grids: the thesis's, and the fastest we found.
fn large_setups(n: usize) -> [(&'static str, MgOptions); 2] {
    let base = MgOptions::new(n, 2).cycles(12).stop(Stop::Discretisation);
    [
        ("SBL V(5,5), B = 10", base.clone()),
        // Measured on an H200 (runs 116 and 120, 1025^3 f32 to the discretisation error):
        // FMG + V(2,1), B = 2, 0.170 s; V(1,1), B = 2, 0.173 s (4 cycles); V(2,2), B =
        // 4, 0.208 s.
        (
            "SBL FMG + V(2,1), B = 2",
            base.cycle(Cycle::Fmg).smoothing(2, 1).inner(2),
        ),
    ]
}

/// Times one launch of the block smoother (SBL sweep, blocks of 2) on `n^3`.
fn smoother_alone<T: MgReal>(
    g: &Gpu,
    n: usize,
    inner: usize,
    reps: usize,
    copy_gbps: f64,
) -> Result<SmootherRow> {
    let o = MgOptions::new(n, 2).inner(inner);
    let mut s = gpu::Solver::<T>::new(g, &o)?;
    // Events on the solver's own stream, where its sweeps run.
    let on = s.gpu().clone();
    let stats = time_gpu(&on, 2, reps.max(1), || s.sweep_finest(Sweep::AllOutOfPlace))?;
    let (nf, i) = (n as f64, (n - 2) as f64);
    let bytes = (nf.powi(3) + 2.0 * i.powi(3)) * size_of::<T>() as f64;
    let gbps = stats.gbps(bytes);
    let precision = if size_of::<T>() == 4 { "f32" } else { "f64" };
    Ok(SmootherRow {
        kernel: format!("mg_smooth_s2_{precision}"),
        n,
        precision,
        inner,
        stats,
        bytes,
        gbps,
        fraction_of_copy: gbps / copy_gbps,
    })
}

fn sci(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3e}")
    } else {
        "-".into()
    }
}

fn fixed(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or("-".into(), |v| format!("{:.1} %", 100.0 * v))
}

fn median(v: &[f64]) -> f64 {
    Stats::from_samples(v.to_vec()).median_ms
}

fn min(v: &[f64]) -> f64 {
    Stats::from_samples(v.to_vec()).min_ms
}

fn gflops(r: &MgReport) -> f64 {
    r.cycle_flops.iter().sum::<f64>() / r.cycle_seconds.iter().sum::<f64>() / 1e9
}

fn reached(r: &MgReport) -> String {
    match (r.cycles_to_discretisation, r.seconds_to_discretisation) {
        (Some(c), Some(s)) => format!("{c} ({s:.4} s)"),
        _ => "not reached".into(),
    }
}

impl MgBenchReport {
    fn where_(&self) -> String {
        match &self.device {
            Some(d) => format!("GPU {d}"),
            None => format!("CPU ({} threads)", self.cpu_threads),
        }
    }

    /// Convergence tables: one per thesis table, cycle rows, per grid thesis and ours.
    fn convergence_tables(&self) -> Vec<(String, Vec<String>, Vec<Vec<String>>)> {
        let mut out = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for r in &self.thesis {
            let t = r.tables.split('/').next().unwrap_or("");
            if !names.contains(&t) {
                names.push(t);
            }
        }
        for t in names {
            let runs: Vec<&ThesisRun> = self
                .thesis
                .iter()
                .filter(|r| r.tables.split('/').next() == Some(t))
                .collect();
            let mut headers = vec!["cycle".to_string()];
            for r in &runs {
                let g = format!("{} b{}", r.n, r.base);
                headers.push(format!("{g} thesis r"));
                headers.push(format!("{g} ours r"));
                headers.push(format!("{g} thesis e"));
                headers.push(format!("{g} ours e"));
            }
            let rows = (0..10)
                .map(|c| {
                    let mut row = vec![(c + 1).to_string()];
                    for r in &runs {
                        let th = r.thesis.get(c);
                        let ours = r.ours();
                        row.push(th.map_or("-".into(), |t| format!("{:.6}", t.0)));
                        row.push(
                            ours.and_then(|o| o.residual_norm.get(c))
                                .map_or("-".into(), |&v| sci(v)),
                        );
                        row.push(th.map_or("-".into(), |t| format!("{:.6}", t.1)));
                        row.push(
                            ours.and_then(|o| o.error_norm.get(c))
                                .map_or("-".into(), |&v| sci(v)),
                        );
                    }
                    row
                })
                .collect();
            let smoother = runs.first().map_or("", |r| r.smoother.name());
            out.push((
                format!(
                    "Table {t} ({}): ||r||_h and ||e||_h per V-cycle",
                    smoother.to_uppercase()
                ),
                headers,
                rows,
            ));
        }
        out
    }

    fn summary_rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "tables",
            "smoother",
            "b",
            "n",
            "disc. error",
            "cycles to disc.",
            "factor",
            "GPU s/cycle",
            "GPU GFLOP/s",
            "GPU GB/s",
            "% of copy",
            "CPU s/cycle",
            "GPU speedup",
            "thesis best s/cycle",
            "thesis GFLOPS",
            "GPU vs CPU ||r||",
        ];
        let rows = self
            .thesis
            .iter()
            .chain(std::iter::once(&self.table_6_8))
            .map(|r| {
                let g = r.gpu.as_ref();
                let c = r.cpu.as_ref();
                let gs = g.map(|g| median(&g.cycle_seconds));
                let cs = c.map(|c| median(&c.cycle_seconds));
                vec![
                    r.tables.clone(),
                    r.smoother.name().into(),
                    r.base.to_string(),
                    r.n.to_string(),
                    r.ours().map_or("-".into(), |o| sci(o.discretisation_error)),
                    g.or(c).map_or("-".into(), reached),
                    fixed(g.or(c).map(|o| o.convergence_factor), 3),
                    fixed(gs, 5),
                    fixed(g.map(gflops), 1),
                    fixed(g.map(|g| g.cycle_gbps()), 1),
                    pct(g.zip(self.copy_gbps).map(|(g, c)| g.cycle_gbps() / c)),
                    fixed(cs, 4),
                    fixed(gs.zip(cs).map(|(g, c)| c / g), 1),
                    fixed(r.thesis_best.map(|t| t.0), 6),
                    fixed(r.thesis_best.map(|t| t.1), 2),
                    r.gpu_cpu_residual_rel_diff
                        .map_or("-".into(), |d| format!("{d:.1e}")),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn table_6_7_rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut headers = vec!["cycle".to_string()];
        for b in 1..=3 {
            for h in ["thesis r", "ours r", "thesis e", "ours e"] {
                headers.push(format!("B={b} {h}"));
            }
        }
        let rows = (0..6)
            .map(|c| {
                let mut row = vec![(c + 1).to_string()];
                for b in 1..=3 {
                    let th = THESIS_TABLE_6_7[b - 1].1.get(c);
                    let ours = self
                        .sweep
                        .iter()
                        .find(|s| s.inner == b)
                        .and_then(|s| s.gpu.as_ref().or(s.cpu.as_ref()));
                    row.push(th.map_or("-".into(), |t| format!("{:.6}", t.0)));
                    row.push(
                        ours.and_then(|o| o.residual_norm.get(c))
                            .map_or("-".into(), |&v| sci(v)),
                    );
                    row.push(th.map_or("-".into(), |t| format!("{:.6}", t.1)));
                    row.push(
                        ours.and_then(|o| o.error_norm.get(c))
                            .map_or("-".into(), |&v| sci(v)),
                    );
                }
                row
            })
            .collect();
        (headers, rows)
    }

    fn sweep_rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "B",
            "cycles to disc.",
            "best s/cycle",
            "GFLOP/s",
            "GB/s",
            "% of copy",
            "CPU cycles",
            "CPU best s/cycle",
            "thesis cycles",
            "thesis best s/cycle",
            "thesis GFLOPS",
        ];
        let rows = self
            .sweep
            .iter()
            .map(|s| {
                let g = s.gpu.as_ref();
                let c = s.cpu.as_ref();
                let t67 = THESIS_TABLE_6_7.iter().find(|t| t.0 == s.inner);
                let ttext = THESIS_B_TEXT.iter().find(|t| t.0 == s.inner);
                vec![
                    s.inner.to_string(),
                    g.map_or("-".into(), reached),
                    fixed(g.map(|g| min(&g.cycle_seconds)), 5),
                    fixed(g.map(gflops), 1),
                    fixed(g.map(|g| g.cycle_gbps()), 1),
                    pct(g.zip(self.copy_gbps).map(|(g, c)| g.cycle_gbps() / c)),
                    c.map_or("-".into(), reached),
                    fixed(c.map(|c| min(&c.cycle_seconds)), 4),
                    t67.map(|t| t.1.len())
                        .or(ttext.map(|t| t.1))
                        .map_or("-".into(), |v| v.to_string()),
                    fixed(t67.map(|t| t.2), 6),
                    fixed(t67.map(|t| t.3).or(ttext.and_then(|t| t.2)), 2),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn table_6_8_rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "cycle",
            "thesis r",
            "thesis s (1 CPU)",
            "thesis s (2 CPUs)",
            "thesis s (4 CPUs)",
            "ours CPU r",
            "ours CPU s",
            "ours GPU r",
            "ours GPU s",
        ];
        let r = &self.table_6_8;
        let rows = (0..4)
            .map(|c| {
                let t = THESIS_TABLE_6_8[c];
                let cpu = r.cpu.as_ref();
                let gpu = r.gpu.as_ref();
                vec![
                    (c + 1).to_string(),
                    format!("{:.3e}", t.0),
                    format!("{:.4}", t.1[0]),
                    format!("{:.4}", t.1[1]),
                    format!("{:.4}", t.1[2]),
                    cpu.and_then(|o| o.residual_norm.get(c))
                        .map_or("-".into(), |&v| sci(v)),
                    fixed(cpu.and_then(|o| o.cycle_seconds.get(c).copied()), 4),
                    gpu.and_then(|o| o.residual_norm.get(c))
                        .map_or("-".into(), |&v| sci(v)),
                    fixed(gpu.and_then(|o| o.cycle_seconds.get(c).copied()), 5),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn large_rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "n",
            "prec",
            "setup",
            "cycles to disc.",
            "factor",
            "median s/cycle",
            "GB/s (model)",
            "% of copy",
            "GFLOP/s (model)",
            "final ||e||_h",
            "disc. error",
        ];
        let mut rows: Vec<Vec<String>> = self
            .large
            .iter()
            .map(|l| {
                let r = &l.gpu;
                vec![
                    r.options.n.to_string(),
                    r.precision.into(),
                    l.setup.clone(),
                    reached(r),
                    fixed(Some(r.convergence_factor), 3),
                    fixed(Some(median(&r.cycle_seconds)), 4),
                    fixed(Some(r.cycle_gbps()), 0),
                    pct(l.fraction_of_copy),
                    fixed(Some(gflops(r)), 0),
                    r.error_norm.last().map_or("-".into(), |&v| sci(v)),
                    sci(r.discretisation_error),
                ]
            })
            .collect();
        if let Some(c) = &self.large_cpu {
            rows.push(vec![
                c.options.n.to_string(),
                c.precision.into(),
                format!("CPU twin, {}: one V(5,5) cycle, B = 10", c.device),
                reached(c),
                fixed(Some(c.convergence_factor), 3),
                fixed(Some(median(&c.cycle_seconds)), 4),
                fixed(Some(c.cycle_gbps()), 1),
                "-".into(),
                fixed(Some(gflops(c)), 1),
                c.error_norm.last().map_or("-".into(), |&v| sci(v)),
                sci(c.discretisation_error),
            ]);
        }
        (headers, rows)
    }

    fn per_cycle_rows(r: &MgReport) -> Vec<Vec<String>> {
        (0..r.residual_norm.len())
            .map(|c| {
                vec![
                    (c + 1).to_string(),
                    sci(r.residual_norm[c]),
                    sci(r.error_norm[c]),
                    sci(r.algebraic_error_norm[c]),
                    format!("{:.4}", r.cycle_seconds[c]),
                    format!("{:.0}", r.cycle_bytes[c] / r.cycle_seconds[c] / 1e9),
                ]
            })
            .collect()
    }

    fn smoother_rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "kernel",
            "n",
            "B",
            "median ms",
            "min ms",
            "GB counted",
            "GB/s",
            "% of copy",
        ];
        let rows = self
            .smoother
            .iter()
            .map(|s| {
                vec![
                    s.kernel.clone(),
                    s.n.to_string(),
                    s.inner.to_string(),
                    format!("{:.3}", s.stats.median_ms),
                    format!("{:.3}", s.stats.min_ms),
                    format!("{:.2}", s.bytes / 1e9),
                    format!("{:.0}", s.gbps),
                    pct(Some(s.fraction_of_copy)),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn biggest(&self) -> Option<usize> {
        self.large.iter().map(|l| l.gpu.options.n).max()
    }

    /// Plain-text tables.
    pub fn to_text(&self) -> String {
        let mut t = format!(
            "Multigrid benchmark on {}; CPU twin on {} threads; copy bandwidth {} GB/s\n\n",
            self.where_(),
            self.cpu_threads,
            fixed(self.copy_gbps, 0)
        );
        for (title, h, r) in self.convergence_tables() {
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            t.push_str(&format!("{title}\n{}\n\n", table(&h, &r)));
        }
        let (h, r) = self.summary_rows();
        t.push_str(&format!(
            "Tables 6.5/6.6 and summary\n{}\n\n",
            table(&h, &r)
        ));
        let (h, r) = self.table_6_7_rows();
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        t.push_str(&format!("Table 6.7\n{}\n\n", table(&h, &r)));
        let (h, r) = self.sweep_rows();
        t.push_str(&format!(
            "B sweep on n = {}\n{}\n\n",
            self.sweep_n,
            table(&h, &r)
        ));
        let (h, r) = self.table_6_8_rows();
        t.push_str(&format!("Table 6.8\n{}\n\n", table(&h, &r)));
        let (h, r) = self.large_rows();
        t.push_str(&format!("Large grids\n{}\n\n", table(&h, &r)));
        let (h, r) = self.smoother_rows();
        t.push_str(&format!("Fused smoother kernel alone\n{}\n", table(&h, &r)));
        t
    }

    /// Markdown for `docs/results/multigrid.md`; `pngs` are the chart files written
    /// beside it ([`MgBenchReport::charts`]).
    pub fn to_markdown(&self, pngs: &[(String, String)]) -> String {
        let mut s = format!(
            "# Multigrid (written by `ferrocuda bench mg{}`)\n\n\
             Device: {}; CPU twin on {} threads; device-to-device copy bandwidth measured in \
             this run: {} GB/s (read + write bytes).\n\n\
             Seed 003 (Letterer 2013) ran on a Tesla M2050 in `f32`; its figures are copied \
             from the thesis, ours are measured in this run (`f32` for the thesis tables). \
             Our SBL is the deterministic double-buffered block Jacobi; the thesis's ran in \
             place with races between blocks. \"disc. error\" is `||u_h - u||_h`; \"cycles to \
             disc.\" counts V-cycles until the algebraic error `||u - u_h||_h` is at most 0.1 \
             of it. GB/s and GFLOP/s come from the byte and flop models of \
             `bench/src/multigrid.rs` (module docs); the thesis's GFLOPS used its own count.\n\n",
            if self.quick { " --quick" } else { "" },
            self.device.as_deref().unwrap_or("none (CPU only)"),
            self.cpu_threads,
            fixed(self.copy_gbps, 0)
        );
        s.push_str("## Tables 6.1-6.4: convergence (ours on the GPU where there is one)\n\n");
        for (title, h, r) in self.convergence_tables() {
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            s.push_str(&format!("### {title}\n\n{}\n", markdown_table(&h, &r)));
        }
        let (h, r) = self.summary_rows();
        s.push_str(&format!(
            "## Tables 6.5-6.6 (time per V-cycle) and a summary of every thesis setup\n\n\
             Medians over the cycles; \"GPU vs CPU ||r||\" is the largest relative difference of \
             the per-cycle residual norms of the GPU and the CPU twin (same iterates; the norms \
             are summed in a different order).\n\n{}\n",
            markdown_table(&h, &r)
        ));
        let (h, r) = self.table_6_7_rows();
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        s.push_str(&format!(
            "## Table 6.7: SBL with B = 1, 2, 3 on n = {} (base 6), to the discretisation error\n\n{}\n",
            self.sweep_n,
            markdown_table(&h, &r)
        ));
        let (h, r) = self.sweep_rows();
        s.push_str(&format!(
            "## The B sweep (Figures 6.2-6.3 of the thesis, whose images are lost)\n\n\
             SBL V(5,5) on n = {}, to the discretisation error. Thesis: Table 6.7 and its text \
             (5 cycles up to B = 5, 4 for B = 10 at 77.65 GFLOPS and still 4 for B = 50).\n\n{}\n",
            self.sweep_n,
            markdown_table(&h, &r)
        ));
        let (h, r) = self.table_6_8_rows();
        s.push_str(&format!(
            "## Table 6.8: CPU on n = {} (base 2)\n\n\
             The thesis's CPU code (2 x Xeon X5650) is not its GPU code; ours is the CPU twin \
             of the GPU path (SBL V(5,5), B = 10, `f32`) on all {} threads of this machine.\n\n{}\n",
            self.table_6_8.n,
            self.cpu_threads,
            markdown_table(&h, &r)
        ));
        let (h, r) = self.large_rows();
        s.push_str(&format!(
            "## Large grids on the GPU\n\n\
             Base 2, blocks of 2, to the discretisation error (at most 12 cycles). The CPU twin \
             runs one V-cycle on the smallest grid only (a whole solve of the larger grids would \
             take minutes on the CPU).\n\n{}\n",
            markdown_table(&h, &r)
        ));
        if let Some(n) = self.biggest() {
            for l in self.large.iter().filter(|l| l.gpu.options.n == n) {
                s.push_str(&format!(
                    "### {n}^3 {}, {}: per cycle\n\n{}\n",
                    l.gpu.precision,
                    l.setup,
                    markdown_table(
                        &["cycle", "||r||_h", "||e||_h", "||u - u_h||_h", "s", "GB/s"],
                        &Self::per_cycle_rows(&l.gpu)
                    )
                ));
            }
        }
        let (h, r) = self.smoother_rows();
        s.push_str(&format!(
            "## The fused block smoother kernel alone\n\n\
             One launch = one block-Jacobi sweep (SBL) over the finest grid, blocks of 2, timed \
             with CUDA events (median of the repetitions). Bytes counted: `u` read once over the \
             grid, `f` read and `u` written once over the interior, `(n^3 + 2 (n - 2)^3)` \
             values; halo re-reads between blocks are not counted (module docs). Issue 6 asks for \
             at least 70 % of the copy bandwidth.\n\n{}\n",
            markdown_table(&h, &r)
        ));
        if !pngs.is_empty() {
            s.push_str("## Plots\n\n");
            for (file, caption) in pngs {
                s.push_str(&format!("![{caption}]({file})\n\n"));
            }
        }
        s
    }

    /// The charts: `(file name, caption, chart)`: residual and error per cycle for each
    /// thesis table (ours and the thesis's), the largest grid's cycles, and the `B` sweep.
    pub fn charts(&self) -> Vec<(String, String, LineChart)> {
        let data = MgChartData {
            device: self.device.clone(),
            thesis: self
                .thesis
                .iter()
                .map(|r| MgThesisCurves {
                    tables: r.tables.clone(),
                    smoother: r.smoother.name().to_string(),
                    n: r.n,
                    base: r.base,
                    ours: r
                        .ours()
                        .map(|o| (o.residual_norm.clone(), o.error_norm.clone())),
                    thesis: r.thesis.clone(),
                })
                .collect(),
            large: self
                .large
                .iter()
                .map(|l| MgLargeCurves {
                    n: l.gpu.options.n,
                    precision: l.gpu.precision.to_string(),
                    setup: l.setup.clone(),
                    residual: l.gpu.residual_norm.clone(),
                    error: l.gpu.error_norm.clone(),
                    discretisation_error: l.gpu.discretisation_error,
                })
                .collect(),
            sweep_n: self.sweep_n,
            sweep: self
                .sweep
                .iter()
                .filter_map(|s| s.gpu.as_ref().map(|g| (s.inner, best_ms(&g.cycle_seconds))))
                .collect(),
        };
        multigrid_charts(&data)
    }
}

/// Best milliseconds per cycle of a run's cycle times (seconds), as in the `B` sweep.
pub fn best_ms(cycle_seconds: &[f64]) -> f64 {
    1e3 * min(cycle_seconds)
}

/// What the multigrid charts show, as plain numbers: from a report
/// ([`MgBenchReport::charts`]) or from its JSON ([`crate::redraw`]).
#[derive(Debug, Clone, Default)]
pub struct MgChartData {
    /// The GPU's name.
    pub device: Option<String>,
    /// The thesis setups, in the report's order.
    pub thesis: Vec<MgThesisCurves>,
    /// The large grids.
    pub large: Vec<MgLargeCurves>,
    /// Points per dimension of the `B` sweep.
    pub sweep_n: usize,
    /// `(B, best ms per V-cycle)` of the sweep's GPU runs.
    pub sweep: Vec<(usize, f64)>,
}

/// One thesis setup's curves.
#[derive(Debug, Clone, Default)]
pub struct MgThesisCurves {
    /// Tables, e.g. "6.1/6.5".
    pub tables: String,
    /// The smoother's name ("abl").
    pub smoother: String,
    /// Points per dimension.
    pub n: usize,
    /// The base.
    pub base: usize,
    /// Ours (GPU, else CPU): residual and error norms per cycle.
    pub ours: Option<(Vec<f64>, Vec<f64>)>,
    /// The thesis's `(||r||_h, ||e||_h)` per cycle.
    pub thesis: Vec<(f64, f64)>,
}

/// One large grid's curves.
#[derive(Debug, Clone, Default)]
pub struct MgLargeCurves {
    /// Points per dimension.
    pub n: usize,
    /// `f32` or `f64`.
    pub precision: String,
    /// Setup name.
    pub setup: String,
    /// Residual norm per cycle.
    pub residual: Vec<f64>,
    /// Error norm per cycle.
    pub error: Vec<f64>,
    /// The discretisation error.
    pub discretisation_error: f64,
}

/// The multigrid charts (see [`MgBenchReport::charts`]) from their data.
pub fn multigrid_charts(d: &MgChartData) -> Vec<(String, String, LineChart)> {
    let mut out = Vec::new();
    let pos = |v: f64| v.is_finite() && v > 0.0;
    let mut names: Vec<&str> = Vec::new();
    for r in &d.thesis {
        let t = r.tables.split('/').next().unwrap_or("");
        if !names.contains(&t) {
            names.push(t);
        }
    }
    for t in names {
        let runs: Vec<&MgThesisCurves> = d
            .thesis
            .iter()
            .filter(|r| r.tables.split('/').next() == Some(t))
            .collect();
        for (k, what) in [(0usize, "residual ||r||_h"), (1, "error ||e||_h")] {
            let mut series = Vec::new();
            for r in &runs {
                let g = format!("n = {}, b = {}", r.n, r.base);
                if let Some(o) = &r.ours {
                    let v = if k == 0 { &o.0 } else { &o.1 };
                    series.push(LineSeries {
                        name: format!("ours {g}"),
                        points: v
                            .iter()
                            .enumerate()
                            .filter(|p| pos(*p.1))
                            .map(|(c, &y)| ((c + 1) as f64, y))
                            .collect(),
                    });
                }
                if !r.thesis.is_empty() {
                    series.push(LineSeries {
                        name: format!("thesis {g}"),
                        points: r
                            .thesis
                            .iter()
                            .enumerate()
                            .map(|(c, p)| ((c + 1) as f64, if k == 0 { p.0 } else { p.1 }))
                            .filter(|p| pos(p.1))
                            .collect(),
                    });
                }
            }
            let file = format!(
                "multigrid-table-{}-{}.png",
                t.replace('.', "-"),
                if k == 0 { "residual" } else { "error" }
            );
            out.push((
                file,
                format!("Table {t}: {what} per V-cycle, ours and the thesis's"),
                LineChart {
                    title: format!(
                        "Seed 003 Table {t} ({}): {what}",
                        runs.first()
                            .map_or("", |r| r.smoother.as_str())
                            .to_uppercase()
                    ),
                    x_label: "V-cycle".into(),
                    y_label: what.into(),
                    log_y: true,
                    series,
                    reference_line: None,
                },
            ));
        }
    }
    if let Some(n) = d.large.iter().map(|l| l.n).max() {
        let runs: Vec<&MgLargeCurves> = d.large.iter().filter(|l| l.n == n).collect();
        for (k, what) in [(0usize, "residual ||r||_h"), (1, "error ||e||_h")] {
            let series = runs
                .iter()
                .map(|l| LineSeries {
                    name: format!("{} {}", l.precision, l.setup),
                    points: (if k == 0 { &l.residual } else { &l.error })
                        .iter()
                        .enumerate()
                        .filter(|p| pos(*p.1))
                        .map(|(c, &y)| ((c + 1) as f64, y))
                        .collect(),
                })
                .collect();
            let disc = runs.first().map(|l| l.discretisation_error);
            out.push((
                format!(
                    "multigrid-{n}-{}.png",
                    if k == 0 { "residual" } else { "error" }
                ),
                format!("{n}^3: {what} per cycle"),
                LineChart {
                    title: format!(
                        "{n}^3 on {}: {what} per cycle",
                        d.device.as_deref().unwrap_or("the GPU")
                    ),
                    x_label: "cycle".into(),
                    y_label: what.into(),
                    log_y: true,
                    series,
                    reference_line: if k == 1 {
                        disc.filter(|d| pos(*d))
                            .map(|d| (d, "discretisation error".to_string()))
                    } else {
                        None
                    },
                },
            ));
        }
    }
    let sweep: Vec<(f64, f64)> = d.sweep.iter().map(|&(b, ms)| (b as f64, ms)).collect();
    if sweep.len() > 1 {
        out.push((
            "multigrid-b-sweep.png".into(),
            format!("best time per V-cycle against B on n = {}", d.sweep_n),
            LineChart {
                title: format!(
                    "SBL V(5,5) on {}^3 (base 6) on {}: time per V-cycle",
                    d.sweep_n,
                    d.device.as_deref().unwrap_or("the GPU")
                ),
                x_label: "B (Gauss-Seidel sweeps per block)".into(),
                y_label: "ms per V-cycle".into(),
                log_y: false,
                series: vec![LineSeries {
                    name: "ours".into(),
                    points: sweep,
                }],
                reference_line: None,
            },
        ));
    }
    out
}

/// Writes `multigrid.md` and its charts (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &MgBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("multigrid.md", |out| {
        let charts = report.charts();
        let pngs: Vec<(String, String)> =
            charts.iter().map(|c| (c.0.clone(), c.1.clone())).collect();
        let mut written = Vec::new();
        for (file, _, chart) in charts {
            written.extend(crate::plot::write_with_data(
                chart,
                &out.join(&file),
                1024,
                576,
                "ferrocuda bench multigrid",
            )?);
        }
        written.push(out.write_markdown("multigrid.md", &report.to_markdown(&pngs))?);
        Ok(written)
    })
}
