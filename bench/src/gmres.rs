//! `ferrocuda bench gmres`: GMRES on a TRACE-like case (thesis Table 4.1), the GPU
//! (SBELL operator, every vector on the device) against the CPU twin on all cores, with
//! the time per Arnoldi step split into SpMV / orthogonalisation / rest and set against
//! the bandwidth floor measured in the same run.
//!
//! Floor of one step: the SBELL SpMV's bytes plus the basis traffic any Gram-Schmidt
//! step must move (one read of the `k + 1` basis vectors for the projections, one for
//! the update, the work vector read and the new vector written), at the device copy
//! bandwidth of this run; averaged over the steps actually taken.

use crate::output::{ResultsDir, Saved};
use serde::Serialize;
use std::path::PathBuf;

use super::peer::{self, PeerResult};
use super::plot::{LineChart, LineSeries};
use super::spmv::SpmvCase;
use crate::markdown_table;
use ferrocuda::Complex;
use ferrocuda::Result;
use ferrocuda::gpu::{Gpu, copy_device};
use ferrocuda::krylov::DeviceSolveElement;
use ferrocuda::krylov::gpu as kgpu;
use ferrocuda::krylov::{
    BlockIlu0, BlockJacobi, CycleControl, DeviceBlockIlu0, DeviceBlockJacobi, DeviceLinOp,
    GmresOptions, GmresReport, LinOp, Orthogonalization, Preconditioner, cpu as kcpu,
};
use ferrocuda::report::table;
use ferrocuda::sparse::gpu::DeviceSbell;
use ferrocuda::sparse::{Sbell, cpu};
use ferrocuda::timing::time_gpu;

/// What to run.
#[derive(Debug, Clone)]
pub struct GmresBenchOptions {
    /// The test case.
    pub case: SpmvCase,
    /// f64 (else f32).
    pub double: bool,
    /// Complex matrix and vectors.
    pub complex: bool,
    /// GMRES options (restart, tolerance, iterations, orthogonalisation).
    pub gmres: GmresOptions,
    /// Right preconditioner, built from the matrix's 5x5 blocks.
    pub precond: Preconditioner,
    /// Also run the CPU twin.
    pub cpu: bool,
    /// Other libraries' GMRES on the same system (through the embedded bench/scripts/gmres_peer.py).
    pub peers: Vec<Peer>,
}

impl GmresBenchOptions {
    /// Checks the options before anything runs: a restart length of at least 1, a
    /// finite tolerance, and the matrix (generated, as SBELL) with the Krylov basis
    /// (`min(restart, max_iter) + 1` vectors) within the host memory this process may
    /// use.
    pub fn validate(&self) -> Result<()> {
        let op = "bench gmres";
        let g = &self.gmres;
        crate::at_least_one(op, &[("--restart", g.restart)])?;
        for (flag, v) in [("--rtol", g.rtol), ("--atol", g.atol)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(crate::invalid(
                    op,
                    format!("{flag} must be finite and >= 0, got {v}"),
                ));
            }
        }
        let elem = if self.double { 8 } else { 4 } * if self.complex { 2 } else { 1 };
        let basis = g.restart.min(g.max_iter) as u128 + 1;
        self.case.check_memory(op, elem, 2, basis + 6)
    }

    /// Thesis cases of `--thesis`: each in 1..=6.
    pub fn validate_thesis_cases(cases: &[usize]) -> Result<()> {
        match cases.iter().find(|c| !(1..=6).contains(*c)) {
            Some(c) => Err(crate::invalid(
                "bench gmres",
                format!("--cases: case {c} does not exist (use 1..6)"),
            )),
            None if cases.is_empty() => Err(crate::invalid(
                "bench gmres",
                "--cases names no case".into(),
            )),
            None => Ok(()),
        }
    }
}

/// Another library's GMRES run on the same system in the same run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Peer {
    /// CuPy's `cupyx.scipy.sparse.linalg.gmres` on the GPU.
    Cupy,
    /// SciPy's `scipy.sparse.linalg.gmres` on the CPU.
    Scipy,
}

impl Peer {
    fn backend(self) -> &'static str {
        match self {
            Peer::Cupy => "cupy",
            Peer::Scipy => "scipy",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Peer::Cupy => "CuPy",
            Peer::Scipy => "SciPy",
        }
    }

    fn kind(self) -> SolverKind {
        match self {
            Peer::Cupy => SolverKind::Cupy,
            Peer::Scipy => SolverKind::Scipy,
        }
    }
}

/// What a peer run gave.
#[derive(Debug, Clone, Serialize)]
pub struct PeerOutcome {
    /// Which peer.
    pub peer: Peer,
    /// The script's result.
    pub result: Option<PeerResult>,
    /// Why it did not run (no Python, no CuPy, ...).
    pub not_available: Option<String>,
}

/// Which solver a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// ferrocuda on the GPU, delayed CGS2.
    GpuCgs2,
    /// ferrocuda on the GPU, MGS.
    GpuMgs,
    /// ferrocuda on the GPU, pipelined (p(1)-GMRES: the operator one step ahead).
    GpuPipelined,
    /// ferrocuda on the GPU, delayed CGS2, whole cycles on the device
    /// ([`CycleControl::Device`]).
    GpuCgs2Device,
    /// ferrocuda on the GPU, delayed CGS2, each cycle one kernel
    /// ([`CycleControl::Fused`]).
    GpuCgs2Fused,
    /// ferrocuda's CPU twin.
    Cpu,
    /// CuPy's `cupyx.scipy.sparse.linalg.gmres` (CSR) on the GPU.
    Cupy,
    /// SciPy's `scipy.sparse.linalg.gmres` (CSR) on the CPU.
    Scipy,
}

/// One solver run.
#[derive(Debug, Clone, Serialize)]
pub struct GmresRow {
    /// Which solver.
    pub kind: SolverKind,
    /// Where and how.
    pub solver: String,
    /// The solve's report.
    pub report: GmresReport,
    /// Milliseconds per Arnoldi step: total, SpMV, preconditioner, orthogonalisation,
    /// rest.
    pub ms_per_step: [f64; 5],
    /// The bandwidth floor per step (GPU rows), ms.
    pub floor_ms_per_step: Option<f64>,
    /// Peer rows: ferrocuda's ms per step at the peer's step count (GPU CGS2 for CuPy,
    /// the CPU twin for SciPy), same system, same run.
    pub same_steps_ms: Option<f64>,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct GmresBenchReport {
    /// Case name and size.
    pub matrix: String,
    /// Scalar type.
    pub scalar: &'static str,
    /// GPU name.
    pub device: Option<String>,
    /// Copy bandwidth of this run, GB/s.
    pub copy_gbps: Option<f64>,
    /// Options used.
    pub options: GmresOptions,
    /// Right preconditioner.
    pub precond: Preconditioner,
    /// CPU threads.
    pub cpu_threads: usize,
    /// The runs.
    pub rows: Vec<GmresRow>,
    /// The peers' raw results.
    pub peers: Vec<PeerOutcome>,
}

fn progress(msg: &str) {
    eprintln!("[bench gmres] {msg}");
}

/// Runs the benchmark (the GPU part where `gpu` is given).
pub fn run(gpu: Option<&Gpu>, opts: &GmresBenchOptions) -> Result<GmresBenchReport> {
    match (opts.double, opts.complex) {
        (true, false) => run_typed::<f64>(gpu, opts),
        (false, false) => run_typed::<f32>(gpu, opts),
        (true, true) => run_typed::<Complex<f64>>(gpu, opts),
        (false, true) => run_typed::<Complex<f32>>(gpu, opts),
    }
}

/// Basis bytes of the steps of `report` (restart `m`): per step `k` of a cycle,
/// `2 (k + 1) + 2` vectors of `n`.
fn basis_bytes(report: &GmresReport, m: usize, n: usize, size: f64) -> f64 {
    (0..report.iterations)
        .map(|i| (2 * (i % m + 1) + 2) as f64 * n as f64 * size)
        .sum()
}

fn run_typed<T>(gpu: Option<&Gpu>, opts: &GmresBenchOptions) -> Result<GmresBenchReport>
where
    T: DeviceSolveElement,
{
    let spec = opts.case.spec()?;
    progress(&format!("generating {} as {}", opts.case.name(), T::SUFFIX));
    let a = crate::progress::generate::<T>(&spec)?;
    let n = a.n_rows();
    let s = Sbell::from_bcsr(&a)?;
    let size = size_of::<T>() as f64;
    let spmv_bytes = s.entries_read() as f64 * size
        + s.blocks() as f64 * 4.0
        + s.n_stored() as f64 * 8.0
        + 2.0 * n as f64 * size;
    // b = A x_true: in the range of A (the ghost rows are empty).
    let xt = ferrocuda::rng::random_vector::<T>(n, 5);
    let mut b = vec![T::ZERO; n];
    cpu::spmv_bcsr(T::ONE, &a, &xt, T::ZERO, &mut b)?;
    // One application reads the inverse blocks and the vector and writes the result.
    let precond_bytes = match opts.precond {
        Preconditioner::None => 0.0,
        Preconditioner::Jacobi => 3.0 * n as f64 * size,
        Preconditioner::BlockJacobi => (a.b() as f64 + 2.0) * n as f64 * size,
        // The factors (A's pattern) and the inverse pivot blocks once, x read, y written
        // by the forward solve and read and written by the back solve.
        Preconditioner::Ilu0 => {
            a.values().len() as f64 * size
                + a.col_idx().len() as f64 * 4.0
                + (a.b() as f64 + 4.0) * n as f64 * size
        }
    };
    let matrix = format!(
        "{} ({} grid blocks of {} x {} x {} cells), {} rows, {} SBELL entries",
        opts.case.name(),
        spec.grid_blocks,
        spec.nx,
        spec.ntheta,
        spec.nr,
        n,
        s.entries_read()
    );
    // The peers get the system as CSR without the zeros inside blocks (their best case).
    let peer_dir = (!opts.peers.is_empty())
        .then(|| std::env::temp_dir().join(format!("ferrocuda-gmres-peer-{}", std::process::id())));
    if let Some(dir) = &peer_dir {
        progress("exporting the system for the peers");
        peer::export_csr(dir, &a.to_csr().without_zeros(), &b)?;
    }
    let m = opts.gmres.restart;
    let mut rows = Vec::new();
    let (mut device, mut copy_gbps) = (None, None);
    let mut peer_results = Vec::new();
    if let Some(gpu) = gpu {
        device = Some(gpu.name()?);
        let elems = (s.entries_read()).max(1);
        let src = gpu.alloc_zeroed::<T>(elems)?;
        let mut dst = gpu.alloc::<T>(elems)?;
        let c = time_gpu(gpu, 2, 10, || Ok(copy_device(&src, &mut dst)?))?;
        drop((src, dst));
        let bw = c.gbps(2.0 * elems as f64 * size);
        copy_gbps = Some(bw);
        progress(&format!("copy ceiling {bw:.0} GB/s"));
        let da = DeviceSbell::upload(gpu, &s)?;
        let db = gpu.upload(&b)?;
        let dm: Option<Box<dyn DeviceLinOp<T>>> = match opts.precond {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(Box::new(DeviceBlockJacobi::point(gpu, &a)?)),
            Preconditioner::BlockJacobi => Some(Box::new(DeviceBlockJacobi::new(gpu, &a)?)),
            Preconditioner::Ilu0 => Some(Box::new(DeviceBlockIlu0::new(gpu, &a)?)),
        };
        let dm = dm.as_deref();
        let floor = |r: &GmresReport| {
            ((spmv_bytes + precond_bytes) * r.iterations as f64 + basis_bytes(r, m, n, size))
                / (bw * 1e9)
                * 1e3
                / r.iterations.max(1) as f64
        };
        let solve = |o: &GmresOptions| -> Result<GmresReport> {
            let mut x = gpu.alloc_zeroed::<T>(n)?;
            kgpu::gmres(&da, dm, &db, &mut x, o)
        };
        // The fastest of a few solves (small systems take well under a millisecond, and
        // one sample would measure the host's scheduling); `cold`: the memory pool
        // trimmed before each, so each solve maps its workspace anew (a first solve).
        let fastest = |o: &GmresOptions, cold: bool| -> Result<GmresReport> {
            let started = std::time::Instant::now();
            let mut best: Option<GmresReport> = None;
            for _ in 0..GPU_REPS {
                if cold {
                    gpu.synchronize()?;
                    gpu.trim_memory_pool()?;
                }
                let r = solve(o)?;
                if best
                    .as_ref()
                    .is_none_or(|b| r.timing.total < b.timing.total)
                {
                    best = Some(r);
                }
                if started.elapsed().as_secs_f64() > GPU_REPS_SECONDS {
                    break;
                }
            }
            Ok(best.expect("at least one solve"))
        };
        // One untimed solve loads the modules and sizes the scratch.
        solve(
            &opts
                .gmres
                .clone()
                .max_iter(2)
                .cycle_control(CycleControl::Host),
        )?;
        for orth in [
            Orthogonalization::Cgs2,
            Orthogonalization::Mgs,
            Orthogonalization::Pipelined,
        ] {
            progress(&format!("GPU {orth:?}"));
            let r = fastest(
                &opts
                    .gmres
                    .clone()
                    .orthogonalization(orth)
                    .cycle_control(CycleControl::Host),
                false,
            )?;
            rows.push(GmresRow {
                kind: match orth {
                    Orthogonalization::Cgs2 => SolverKind::GpuCgs2,
                    Orthogonalization::Mgs => SolverKind::GpuMgs,
                    Orthogonalization::Pipelined => SolverKind::GpuPipelined,
                },
                solver: format!("GPU, SBELL, {orth:?}"),
                // A pipelined step's phases overlap and are not timed: the total only.
                ms_per_step: match orth {
                    Orthogonalization::Pipelined => {
                        [per_step(&r)[0], f64::NAN, f64::NAN, f64::NAN, f64::NAN]
                    }
                    _ => per_step(&r),
                },
                floor_ms_per_step: Some(floor(&r)),
                same_steps_ms: None,
                report: r,
            });
        }
        // Whole cycles on the device: looking at each cycle at its end only, and every
        // few steps (fewer steps wasted past the end of a cycle).
        for check_every in DEVICE_CHECKS {
            progress(&format!(
                "GPU Cgs2, device cycles, check every {check_every}"
            ));
            let o = opts
                .gmres
                .clone()
                .cycle_control(CycleControl::Device { check_every });
            // Untimed: the first launch of each kernel loads it.
            solve(&o.clone().max_iter(2))?;
            let r = fastest(&o, false)?;
            let total = per_step(&r)[0];
            rows.push(GmresRow {
                kind: SolverKind::GpuCgs2Device,
                solver: match check_every {
                    0 => "GPU, SBELL, Cgs2, device cycles".into(),
                    k => format!("GPU, SBELL, Cgs2, device cycles, look every {k}"),
                },
                // The phases are not timed inside a device cycle.
                ms_per_step: [total, f64::NAN, f64::NAN, f64::NAN, f64::NAN],
                floor_ms_per_step: Some(floor(&r)),
                same_steps_ms: None,
                report: r,
            });
        }
        // The whole cycle in one kernel (SBELL, no preconditioner: the kernel's case).
        if opts.precond == Preconditioner::None {
            progress("GPU Cgs2, one kernel per cycle");
            let o = opts.gmres.clone().cycle_control(CycleControl::Fused);
            solve(&o.clone().max_iter(2))?;
            for cold in [false, true] {
                let r = fastest(&o, cold)?;
                rows.push(GmresRow {
                    kind: SolverKind::GpuCgs2Fused,
                    solver: match cold {
                        false => "GPU, SBELL, Cgs2, one kernel per cycle".into(),
                        true => "GPU, SBELL, Cgs2, one kernel per cycle, memory pool trimmed before the solve".into(),
                    },
                    // Its phases are timed inside the kernel.
                    ms_per_step: per_step(&r),
                    floor_ms_per_step: Some(floor(&r)),
                    same_steps_ms: None,
                    report: r,
                });
            }
        }
        if let Some(dir) = &peer_dir {
            for &p in opts.peers.iter().filter(|&&p| p == Peer::Cupy) {
                let row = peer_row(p, dir, opts, &mut peer_results, |steps| {
                    // ferrocuda at the peer's step count (CuPy runs whole cycles).
                    let o = opts.gmres.clone().rtol(0.0).atol(0.0).max_iter(steps);
                    Ok(per_step(&fastest(&o, false)?)[0])
                })?;
                rows.extend(row);
            }
        }
    }
    if opts.cpu {
        let cm: Option<Box<dyn LinOp<T>>> = match opts.precond {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(Box::new(BlockJacobi::point(&a)?)),
            Preconditioner::BlockJacobi => Some(Box::new(BlockJacobi::new(&a)?)),
            Preconditioner::Ilu0 => Some(Box::new(BlockIlu0::new(&a)?)),
        };
        let cm = cm.as_deref();
        let solve = |o: &GmresOptions| -> Result<GmresReport> {
            let mut x = vec![T::ZERO; n];
            kcpu::gmres(&s, cm, &b, &mut x, o)
        };
        progress(&format!("CPU ({} threads)", rayon::current_num_threads()));
        let r = solve(&opts.gmres)?;
        rows.push(GmresRow {
            kind: SolverKind::Cpu,
            solver: "CPU (rayon), SBELL, Cgs2".into(),
            ms_per_step: per_step(&r),
            floor_ms_per_step: None,
            same_steps_ms: None,
            report: r,
        });
        if let Some(dir) = &peer_dir {
            for &p in opts.peers.iter().filter(|&&p| p == Peer::Scipy) {
                let row = peer_row(p, dir, opts, &mut peer_results, |steps| {
                    let o = opts.gmres.clone().rtol(0.0).atol(0.0).max_iter(steps);
                    Ok(per_step(&solve(&o)?)[0])
                })?;
                rows.extend(row);
            }
        }
    }
    if let Some(dir) = &peer_dir {
        let _ = peer::remove_export(dir);
    }
    Ok(GmresBenchReport {
        matrix,
        scalar: T::SUFFIX,
        device,
        copy_gbps,
        options: opts.gmres.clone(),
        precond: opts.precond,
        cpu_threads: rayon::current_num_threads(),
        rows,
        peers: peer_results,
    })
}

/// GPU rows: the fastest of at most this many solves ...
const GPU_REPS: usize = 5;
/// ... stopping after the solve that ends this many seconds.
const GPU_REPS_SECONDS: f64 = 2.0;

/// The `check_every` of the device-cycle rows ([`CycleControl::Device`]).
const DEVICE_CHECKS: [usize; 2] = [0, 4];

/// Milliseconds per Arnoldi step: total, SpMV, preconditioner, orthogonalisation, rest.
fn per_step(r: &GmresReport) -> [f64; 5] {
    let t = &r.timing;
    [t.total, t.spmv, t.precond, t.orthogonalization, t.rest]
        .map(|t| t * 1e3 / r.iterations.max(1) as f64)
}

/// Runs one peer on the exported system and, when it took steps, ferrocuda at the same
/// step count (`ours`); the peer's raw result or why it did not run goes to `results`.
/// CuPy runs with the GPU rows, SciPy with the CPU rows.
fn peer_row(
    p: Peer,
    dir: &std::path::Path,
    opts: &GmresBenchOptions,
    results: &mut Vec<PeerOutcome>,
    ours: impl Fn(usize) -> Result<f64>,
) -> Result<Option<GmresRow>> {
    progress(&format!("{} (peer script)", p.name()));
    let g = &opts.gmres;
    let got = peer::run_peer(p.backend(), dir, g.restart, g.rtol, g.max_iter);
    let r = match got {
        Ok(r) => r,
        Err(e) => {
            progress(&format!("{}: not available ({e})", p.name()));
            results.push(PeerOutcome {
                peer: p,
                result: None,
                not_available: Some(e.to_string()),
            });
            return Ok(None);
        }
    };
    results.push(PeerOutcome {
        peer: p,
        result: Some(r.clone()),
        not_available: None,
    });
    let Some(ms) = r.ms_per_step else {
        return Ok(None);
    };
    let same = ours(r.steps)?;
    let rel = r.relative_residual.unwrap_or(f64::NAN);
    let mut report = GmresReport::empty();
    report.iterations = r.steps;
    report.converged = r.info == 0;
    report.relative_residual = rel;
    report.timing.total = r.seconds;
    Ok(Some(GmresRow {
        kind: p.kind(),
        solver: format!("{} {}, CSR", p.name(), r.version),
        ms_per_step: [ms, f64::NAN, f64::NAN, f64::NAN, f64::NAN],
        floor_ms_per_step: None,
        same_steps_ms: Some(same),
        report,
    }))
}

impl GmresBenchReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "solver",
            "steps",
            "converged",
            "rel. residual",
            "ms/step",
            "SpMV",
            "M",
            "orth.",
            "rest",
            "floor ms/step",
            "x floor",
            "ferrocuda, same steps",
        ];
        let cpu_ms = self
            .rows
            .iter()
            .find(|r| r.kind == SolverKind::Cpu)
            .map(|r| r.ms_per_step[0]);
        let ms = |t: f64| {
            if t.is_finite() {
                format!("{t:.3}")
            } else {
                "-".into()
            }
        };
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![
                    r.solver.clone(),
                    r.report.iterations.to_string(),
                    r.report.converged.to_string(),
                    format!("{:.2e}", r.report.relative_residual),
                ];
                v.extend(r.ms_per_step.iter().map(|&t| ms(t)));
                match r.floor_ms_per_step {
                    Some(f) => {
                        v.push(format!("{f:.3}"));
                        let speed = cpu_ms
                            .map(|c| format!(" ({:.0}x CPU)", c / r.ms_per_step[0]))
                            .unwrap_or_default();
                        v.push(format!("{:.2}{speed}", r.ms_per_step[0] / f));
                    }
                    None => v.extend(["-".into(), "-".into()]),
                }
                v.push(r.same_steps_ms.map_or("-".into(), |o| {
                    format!("{o:.3} ({:.1}x)", r.ms_per_step[0] / o)
                }));
                v
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        let mut text = format!(
            "- matrix: {}, {}\n- device: {}; copy ceiling {}\n- GMRES({}), rtol {:e}, at most {} steps, preconditioner {}; CPU: {} rayon threads\n- ms/step = total / Arnoldi steps (M: preconditioner); floor = (SBELL SpMV bytes + preconditioner bytes + 2 (k + 1) + 2 basis vectors per step) / copy bandwidth\n",
            self.matrix,
            self.scalar,
            self.device.as_deref().unwrap_or("none"),
            self.copy_gbps
                .map_or("-".into(), |c| format!("{c:.0} GB/s (this run)")),
            self.options.restart,
            self.options.rtol,
            self.options.max_iter,
            self.precond,
            self.cpu_threads
        );
        for p in &self.peers {
            text.push_str(&match (&p.result, &p.not_available) {
                (Some(r), _) => format!(
                    "- peer: {} {} on {} ({}, CSR without the zeros inside blocks, {} entries; maxiter={}, restart {}, info {})\n",
                    p.peer.name(), r.version, r.device, r.dtype, r.nnz, r.maxiter_arg, r.restart, r.info
                ),
                (None, why) => format!(
                    "- peer: {} not available ({})\n",
                    p.peer.name(),
                    why.as_deref().unwrap_or("?")
                ),
            });
        }
        if !self.peers.is_empty() {
            text.push_str("- ferrocuda, same steps: ferrocuda's ms/step run again to the peer's step count (CuPy only stops after whole cycles), GPU CGS2 for CuPy, the CPU twin for SciPy; (Nx) = peer / ferrocuda\n");
        }
        text
    }

    /// Plain-text table for the terminal.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        format!("{}\n{}\n", self.header(), table(&h, &r))
    }

    /// File name of the convergence plot, e.g. `gmres-case6-f64-none.png`; a restart
    /// length other than the default 30 is part of the setup, and of the name
    /// (`gmres-case1-c32-none-m100.png`: the thesis setup).
    pub fn plot_name(&self) -> String {
        let restart = match self.options.restart {
            30 => String::new(),
            m => format!("-m{m}"),
        };
        format!(
            "gmres-{}-{}-{}{restart}.png",
            self.matrix.split(' ').next().unwrap_or("case"),
            self.scalar,
            self.precond
        )
    }

    /// Writes the convergence chart (and its data) into `out`, where a row took a step.
    fn write_chart(&self, out: &ResultsDir) -> Result<Vec<PathBuf>> {
        match self.convergence_chart() {
            Some(chart) => crate::plot::write_with_data(
                chart,
                &out.join(&self.plot_name()),
                1024,
                576,
                "ferrocuda bench gmres",
            ),
            None => Ok(Vec::new()),
        }
    }

    /// The residual estimate of every step of every ferrocuda row (log scale), with the
    /// tolerance; `None` when no row took a step.
    pub fn convergence_chart(&self) -> Option<LineChart> {
        let series: Vec<LineSeries> = self
            .rows
            .iter()
            .filter(|r| !r.report.history.is_empty())
            .map(|r| LineSeries {
                name: r.solver.clone(),
                points: (1..)
                    .zip(&r.report.history)
                    .filter(|&(_, &h)| h > 0.0 && h.is_finite())
                    .map(|(i, &h)| (i as f64, h))
                    .collect(),
            })
            .collect();
        if series.iter().all(|s| s.points.is_empty()) {
            return None;
        }
        Some(LineChart {
            title: format!(
                "GMRES({}) on {}, {}, preconditioner {}{}",
                self.options.restart,
                self.matrix.split(' ').next().unwrap_or(""),
                self.scalar,
                self.precond,
                self.device
                    .as_deref()
                    .map_or(String::new(), |d| format!(", {d}"))
            ),
            x_label: "Arnoldi step".into(),
            y_label: "|r| / |b| (estimate)".into(),
            log_y: true,
            series,
            reference_line: (self.options.rtol > 0.0)
                .then(|| (self.options.rtol, format!("rtol {:e}", self.options.rtol))),
        })
    }

    /// Markdown section.
    pub fn to_markdown(&self) -> String {
        let (h, r) = self.cells();
        let plot = match self.convergence_chart() {
            Some(_) => format!("![convergence]({})\n\n", self.plot_name()),
            None => String::new(),
        };
        format!(
            "## {} {}, GMRES({}), preconditioner {}\n\n{}\n{}\n{plot}",
            self.matrix.split(' ').next().unwrap_or(""),
            self.scalar,
            self.options.restart,
            self.precond,
            self.header(),
            markdown_table(&h, &r)
        )
    }
}

/// The thesis setup (seed 000): 100 Arnoldi steps without restart on Table 4.1's cases,
/// single-precision complex as in TRACE and f64.
#[derive(Debug, Clone, Serialize)]
pub struct GmresThesisReport {
    /// GPU name.
    pub device: Option<String>,
    /// One report per case and scalar type.
    pub runs: Vec<GmresBenchReport>,
}

/// Runs the thesis setup on `cases` (1..6), `c32` and `f64` each; `template` gives the
/// CPU and peer choices (its GMRES options are replaced by 100 steps, no restart, no
/// tolerance).
pub fn run_thesis(
    gpu: Option<&Gpu>,
    cases: &[usize],
    template: &GmresBenchOptions,
) -> Result<GmresThesisReport> {
    let mut runs = Vec::new();
    let mut steps = crate::progress::steps("bench gmres --thesis", 2 * cases.len());
    for &case in cases {
        for (double, complex) in [(false, true), (true, false)] {
            steps.next(format!(
                "case {case} {}",
                if complex { "c32" } else { "f64" }
            ));
            let opts = GmresBenchOptions {
                case: SpmvCase::Thesis(case),
                double,
                complex,
                gmres: template
                    .gmres
                    .clone()
                    .restart(100)
                    .max_iter(100)
                    .rtol(0.0)
                    .atol(0.0),
                ..template.clone()
            };
            runs.push(run(gpu, &opts)?);
        }
    }
    Ok(GmresThesisReport {
        device: gpu.map(|g| g.name()).transpose()?,
        runs,
    })
}

impl GmresThesisReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "case",
            "scalar",
            "steps",
            "GPU CGS2 ms/step",
            "x floor",
            "GPU MGS ms/step",
            "x floor",
            "CPU ms/step",
            "CGS2 vs CPU",
            "CuPy ms/step",
            "CGS2 vs CuPy",
        ];
        let rows = self
            .runs
            .iter()
            .map(|r| {
                let find = |k: SolverKind| r.rows.iter().find(|row| row.kind == k);
                let ms = |k| find(k).map(|row| row.ms_per_step[0]);
                let cell = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
                let ratio = |a: Option<f64>, b: Option<f64>| {
                    a.zip(b)
                        .map_or("-".into(), |(a, b)| format!("{:.1}x", b / a))
                };
                let floor = |k| {
                    find(k)
                        .and_then(|row| row.floor_ms_per_step.map(|f| row.ms_per_step[0] / f))
                        .map_or("-".into(), |x| format!("{x:.2}"))
                };
                let cgs2 = ms(SolverKind::GpuCgs2);
                vec![
                    r.matrix.split(' ').next().unwrap_or("").to_string(),
                    r.scalar.to_string(),
                    r.rows
                        .first()
                        .map_or("-".into(), |row| row.report.iterations.to_string()),
                    cell(cgs2),
                    floor(SolverKind::GpuCgs2),
                    cell(ms(SolverKind::GpuMgs)),
                    floor(SolverKind::GpuMgs),
                    cell(ms(SolverKind::Cpu)),
                    ratio(cgs2, ms(SolverKind::Cpu)),
                    cell(ms(SolverKind::Cupy)),
                    find(SolverKind::Cupy)
                        .and_then(|row| row.same_steps_ms.map(|o| (o, row.ms_per_step[0])))
                        .map_or("-".into(), |(o, c)| format!("{:.1}x", c / o)),
                ]
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        let first = self.runs.first();
        format!(
            "- device: {}; the copy ceiling of each run is in its section below\n- GMRES(100), 100 Arnoldi steps without restart, no tolerance (seed 000's setup), SBELL operator, no preconditioner; CPU: {} rayon threads\n- x floor: time per step over (SBELL SpMV bytes + 2 (k + 1) + 2 basis vectors per step) / copy bandwidth of the same run\n",
            self.device.as_deref().unwrap_or("none"),
            first.map_or(0, |r| r.cpu_threads)
        )
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        format!("{}\n{}\n", self.header(), table(&h, &r))
    }

    /// The Markdown file: the summary table, then every run's own section.
    pub fn to_markdown(&self) -> String {
        let (h, r) = self.cells();
        let mut text = format!(
            "# GMRES, the thesis setup\n\nWritten by `ferrocuda bench gmres --thesis`; do not edit by hand.\n\n{}\n{}\n",
            self.header(),
            markdown_table(&h, &r)
        );
        for run in &self.runs {
            text.push_str(&run.to_markdown());
        }
        text
    }
}

/// Puts this run's section into `gmres.md` (in place of its setup's earlier one:
/// [`crate::output::put_section`]) and writes its convergence chart (where `out`
/// allows it: [`ResultsDir::save`]).
pub fn write_results(report: &GmresBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("gmres.md", |out| {
        let mut written = Vec::new();
        let text = out.read_markdown("gmres.md").unwrap_or_else(|| {
            "# GMRES benchmark\n\nWritten by `ferrocuda bench gmres`; do not edit by hand. One section per setup (case, precision, restart, preconditioner): the latest run of each.\n\n".into()
        });
        let text = crate::output::put_section(&text, &out.section(&report.to_markdown()));
        written.extend(report.write_chart(out)?);
        written.push(out.write_markdown("gmres.md", &text)?);
        Ok(written)
    })
}

/// Writes the `--thesis` report: `gmres-thesis.md` for all six cases, else
/// `gmres-thesis-cases<list>.md` (where `out` allows it: [`ResultsDir::save`]).
pub fn write_thesis_results(
    report: &GmresThesisReport,
    cases: &[usize],
    out: &ResultsDir,
) -> Result<Saved> {
    let name = if cases == [1, 2, 3, 4, 5, 6] {
        "gmres-thesis.md".to_string()
    } else {
        let list: Vec<String> = cases.iter().map(|c| c.to_string()).collect();
        format!("gmres-thesis-cases{}.md", list.join("-"))
    };
    out.save(&name, |out| {
        // Every section links its convergence chart.
        let mut written = Vec::new();
        for run in &report.runs {
            written.extend(run.write_chart(out)?);
        }
        written.push(out.write_markdown(&name, &report.to_markdown())?);
        Ok(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU part of the report end to end on case 1: rows, the plot, the Markdown, and
    /// a peer that cannot run reported as such instead of failing the benchmark.
    #[test]
    fn cpu_report_with_plot_and_unavailable_peer() {
        let opts = GmresBenchOptions {
            case: SpmvCase::Thesis(1),
            double: true,
            complex: false,
            gmres: GmresOptions::default().restart(4).max_iter(6),
            precond: Preconditioner::BlockJacobi,
            cpu: true,
            peers: vec![Peer::Scipy],
        };
        let r = run(None, &opts).expect("bench");
        assert_eq!(r.rows[0].kind, SolverKind::Cpu);
        assert_eq!(r.rows[0].report.iterations, 6);
        assert_eq!(r.peers.len(), 1);
        let md = r.to_markdown();
        // Where Python has NumPy and SciPy (the GPU machine) SciPy runs; elsewhere it is
        // reported as not available.
        match (&r.peers[0].result, &r.peers[0].not_available) {
            (Some(p), None) => {
                assert_eq!(r.rows.len(), 2);
                assert_eq!(r.rows[1].kind, SolverKind::Scipy);
                assert!(p.steps > 0 && r.rows[1].same_steps_ms.is_some());
            }
            (None, Some(why)) => {
                eprintln!("SciPy part skipped: {why}");
                assert_eq!(r.rows.len(), 1);
                assert!(md.contains("SciPy not available"), "{md}");
            }
            other => panic!("peer outcome {other:?}"),
        }
        assert!(
            md.contains(&format!("![convergence]({})", r.plot_name())),
            "{md}"
        );
        assert_eq!(r.plot_name(), "gmres-case1-f64-block-jacobi-m4.png");
        let png = r
            .convergence_chart()
            .expect("chart")
            .render_png(640, 360)
            .expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }

    /// The thesis file links one convergence chart per section: each is written, under a
    /// name of its own setup (restart 100), not over the default setup's chart.
    #[test]
    fn thesis_results_write_every_linked_chart() {
        let opts = GmresBenchOptions {
            case: SpmvCase::Thesis(1),
            double: true,
            complex: false,
            gmres: GmresOptions::default().restart(100).max_iter(3).rtol(0.0),
            precond: Preconditioner::None,
            cpu: true,
            peers: Vec::new(),
        };
        let report = GmresThesisReport {
            device: None,
            runs: vec![run(None, &opts).expect("bench")],
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let out = ResultsDir::new(dir.path(), false);
        write_thesis_results(&report, &[1], &out).expect("write");
        let md = std::fs::read_to_string(dir.path().join("gmres-thesis-cases1.md")).expect("md");
        let links: Vec<&str> = md
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
            .collect();
        assert_eq!(links, ["gmres-case1-f64-none-m100.png"], "{md}");
        for link in links {
            assert!(dir.path().join(link).is_file(), "{link} missing");
        }
    }
}
