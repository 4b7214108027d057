//! `ferrocuda bench solve`: time to solution on one GPU (issue 25). Each configuration
//! (preconditioner x matrix storage x basis storage) solves the same system to rtol 1e-8 with GMRES(30)
//! through [`DeviceSolver`]: a generated TRACE case (`b = A x_true`) in f64 and in c64,
//! and the real matrices of `data/matrices` (SuiteSparse, embedded; `b = 1`). Each row
//! has the set-up (conversion, preconditioner, uploads) and the solve (the fastest of up
//! to [`SOLVE_REPS`]), the Arnoldi steps (with the refinement passes of `--storage f32`
//! and `--basis f32`)
//! and the true relative residual, recomputed here in f64 (complex f64 for c64) from the
//! CSR arrays. The ratio column "vs full" compares each solve with the full-precision
//! solve of the same preconditioner.
//!
//! Peers in the same run ([`crate::peer`], the embedded `gmres_peer.py`): CuPy's GMRES on
//! the GPU (no preconditioner, Jacobi, ILU(0) on the GPU, SciPy's spilu), SciPy's on the
//! CPU (Jacobi, spilu nearest ILU(0), spilu with its defaults), on the same CSR matrix
//! and `b`, with the same rtol, restart and step budget. "vs CuPy" sets each ferrocuda
//! row against the fastest converged CuPy row of the same system. A peer that cannot run
//! (no Python, no CuPy, no GPU for CuPy) is noted, not an error; a configuration that
//! fails (a zero pivot, the time limit) is a row with its error.
//!
//! Writes `solve.md`, `solve.json` (the rows) and `solve-chart.png`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::markdown_table;
use crate::output::{ResultsDir, Saved};
use crate::peer::{self, PeerError, PeerOptions, PeerResult};
use crate::plot::{BarChart, BarGroup};
use crate::spmv::SpmvCase;
use ferrocuda::Result;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::ilu::DEFAULT_SWEEPS;
use ferrocuda::krylov::{
    BasisStorage, DeviceSolveElement, DeviceSolver, GmresOptions, IluOptions, MatrixStorage,
    Preconditioner, SolveOptions,
};
use ferrocuda::report::table;
use ferrocuda::sparse::{Csr, Element, cpu, mm};
use ferrocuda::{Complex, RealScalar};

/// Solves per configuration; the fastest counts (the first one also loads the modules).
pub const SOLVE_REPS: usize = 3;

/// The tolerance on the true relative residual.
pub const RTOL: f64 = 1e-8;
/// GMRES's restart length.
pub const RESTART: usize = 30;
/// Arnoldi steps at most (every pass together; CuPy: whole cycles, 100 of 30).
pub const MAX_STEPS: usize = 3000;

/// Above this many stored entries a system is "large" for the host-side peers: SciPy
/// runs only its ILU(0)-like spilu, on the f64 system, under the time limit (and not at
/// all with `--quick`), and the host factorisations with fill (`ilu`: SuperLU with its
/// defaults, up to 10x A's entries) are skipped for both peers.
pub const PEER_HOST_NNZ: usize = 5_000_000;

/// The real matrices of `data/matrices` (sources in its README).
const MATRICES: [(&str, &str); 3] = [
    ("sherman1", include_str!("../../data/matrices/sherman1.mtx")),
    ("cdde1", include_str!("../../data/matrices/cdde1.mtx")),
    ("utm1700a", include_str!("../../data/matrices/utm1700a.mtx")),
];

/// Options of `bench solve`.
#[derive(Debug, Clone)]
pub struct SolveBenchOptions {
    /// The generated case (default: case 6).
    pub case: SpmvCase,
    /// Fewer configurations: the generated case's ILU(0) and block-Jacobi rows (c64:
    /// block Jacobi), one real matrix, CuPy without preconditioner and with ILU(0),
    /// SciPy with its ILU(0)-like spilu (not on a large system).
    pub quick: bool,
    /// Run the peers (CuPy, SciPy) too.
    pub peers: bool,
    /// A peer solve (one script run: load, set-up, warm-up, timed solves) is stopped
    /// after this long and reported as such.
    pub peer_timeout: Duration,
    /// Which passes run: the generated case in f64 with the real matrices, the
    /// generated case in c64, or both (a full run on case 6 can exceed a machine's time
    /// slot; the two halves write to two results folders).
    pub scalars: SolvePasses,
}

/// The passes of `bench solve` ([`SolveBenchOptions::scalars`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SolvePasses {
    /// The generated case in f64 and in c64, and the real matrices.
    #[default]
    All,
    /// The generated case in f64 and the real matrices.
    Real,
    /// The generated case in c64.
    Complex,
}

impl Default for SolveBenchOptions {
    fn default() -> Self {
        SolveBenchOptions {
            case: SpmvCase::Thesis(6),
            quick: false,
            peers: true,
            peer_timeout: Duration::from_secs(120),
            scalars: SolvePasses::All,
        }
    }
}

impl SolveBenchOptions {
    /// Checks the options before anything runs: the generated case fits host memory
    /// (the c64 pass, the larger; the f64 pass is freed before it starts), a time limit
    /// of at least a second.
    pub fn validate(&self) -> Result<()> {
        if self.peer_timeout < Duration::from_secs(1) {
            return Err(crate::invalid(
                "bench solve",
                format!(
                    "--peer-timeout must be at least 1 s, got {} s",
                    self.peer_timeout.as_secs_f64()
                ),
            ));
        }
        // The CSR copy, the SBELL matrix, the f32 copy and the factors.
        self.case.check_memory("bench solve", 16, 4, 8)
    }
}

/// Who solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Solver {
    /// ferrocuda's [`DeviceSolver`].
    Ferrocuda,
    /// CuPy's `cupyx.scipy.sparse.linalg.gmres` on the GPU.
    Cupy,
    /// SciPy's `scipy.sparse.linalg.gmres` on the CPU.
    Scipy,
}

impl Solver {
    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Ferrocuda => "ferrocuda",
            Solver::Cupy => "CuPy",
            Solver::Scipy => "SciPy",
        }
    }

    fn backend(self) -> &'static str {
        match self {
            Solver::Ferrocuda => "ferrocuda",
            Solver::Cupy => "cupy",
            Solver::Scipy => "scipy",
        }
    }
}

/// One configuration on one matrix.
#[derive(Debug, Clone, Serialize)]
pub struct SolveRow {
    /// The matrix, e.g. `case6` or `sherman1`.
    pub matrix: String,
    /// The system's scalar: `f64` or `c64`.
    pub scalar: String,
    /// Rows.
    pub rows: usize,
    /// Stored entries of the CSR matrix.
    pub nnz: usize,
    /// Who solved.
    pub solver: Solver,
    /// The solver's version (ferrocuda's, CuPy's, SciPy's; empty where a peer failed
    /// before it said).
    pub version: String,
    /// The preconditioner: ferrocuda's (`none`, `jacobi`, `block-jacobi`, `ilu0`) or the
    /// peer script's (`none`, `jacobi`, `ilu0`, `ilu`; see `precond_detail`).
    pub precond: String,
    /// Peers: what the preconditioner was exactly (the call and its parameters).
    pub precond_detail: Option<String>,
    /// ferrocuda's ILU(0) with Jacobi-sweep triangular solves: the sweeps per factor
    /// (`None`: exact solves, or another preconditioner).
    pub ilu_sweeps: Option<usize>,
    /// How the preconditioner is applied: `right` (ferrocuda, CuPy) or `left` (SciPy);
    /// `None` without one.
    pub side: Option<String>,
    /// Peers' incomplete factors: entries of L and U (L's unit diagonal not counted).
    pub precond_nnz: Option<usize>,
    /// The matrix storage (peers: `full`, the system's precision).
    pub storage: MatrixStorage,
    /// The Krylov basis storage (`f32`: CB-GMRES; peers: `full`).
    pub basis: BasisStorage,
    /// The GPU's name (SciPy: the CPU's).
    pub device: String,
    /// Whether the solver reported convergence to rtol 1e-8 on the true residual
    /// (peers: `info == 0`).
    pub converged: bool,
    /// Arnoldi steps (all passes; CuPy: whole cycles).
    pub steps: usize,
    /// Steps of each refinement pass (`--storage f32`).
    pub passes: Vec<usize>,
    /// Why full precision finished the solve, where it did.
    pub fallback: Option<String>,
    /// `|b - A x| / |b|`: ferrocuda's recomputed here in f64 (complex f64 for c64) from
    /// the CSR arrays, the peers' by the script in the system's precision (`null` where
    /// not finite).
    pub true_residual: f64,
    /// Set-up, milliseconds (ferrocuda: `DeviceSolver::upload`; peers: the arrays in
    /// host memory to the matrix on the device and the preconditioner built).
    pub setup_ms: f64,
    /// Time to solution, milliseconds: the fastest solve from host vectors to host
    /// vectors (ferrocuda: `DeviceSolver::solve`, uploads and download included; CuPy:
    /// `b` uploaded and `x` downloaded in each timed solve; SciPy: one solve).
    pub solve_ms: f64,
    /// Of it, GMRES on the device (all passes), milliseconds (ferrocuda only).
    pub gmres_ms: Option<f64>,
    /// ferrocuda rows: where the fastest solve's milliseconds went.
    pub parts: Option<SolveParts>,
    /// The operator's format (`sbell`, `bcsr`, `csr`, ...; peers: `csr`).
    pub format: String,
    /// Where the configuration failed (e.g. a zero pivot, the peer's time limit), the
    /// error; the numbers are then zero.
    pub error: Option<String>,
    /// ferrocuda rows: the fastest converged CuPy row's `solve_ms` (same matrix and
    /// scalar, any preconditioner) over this row's; above 1: ferrocuda is faster.
    pub vs_cupy: Option<f64>,
    /// The same with set-up plus solve on both sides (the fastest CuPy row by that sum).
    pub vs_cupy_with_setup: Option<f64>,
}

impl SolveRow {
    /// A row of `solver` on `matrix` with every measurement still empty.
    fn empty(solver: Solver, matrix: &str, scalar: &str, rows: usize, nnz: usize) -> Self {
        SolveRow {
            matrix: matrix.into(),
            scalar: scalar.into(),
            rows,
            nnz,
            solver,
            version: String::new(),
            precond: String::new(),
            precond_detail: None,
            ilu_sweeps: None,
            side: None,
            precond_nnz: None,
            storage: MatrixStorage::Full,
            basis: BasisStorage::Full,
            device: String::new(),
            converged: false,
            steps: 0,
            passes: Vec::new(),
            fallback: None,
            true_residual: f64::NAN,
            setup_ms: 0.0,
            solve_ms: 0.0,
            gmres_ms: None,
            parts: None,
            format: String::new(),
            error: None,
            vs_cupy: None,
            vs_cupy_with_setup: None,
        }
    }

    /// Whether the row ran and converged: it may stand as a reference.
    fn usable(&self) -> bool {
        self.error.is_none() && self.converged
    }

    /// The solver and its version, as in the table.
    fn solver_label(&self) -> String {
        if self.version.is_empty() || self.solver == Solver::Ferrocuda {
            self.solver.name().into()
        } else {
            format!("{} {}", self.solver.name(), self.version)
        }
    }
}

/// Where the milliseconds of a ferrocuda solve went (`SolveReport::timing` and GMRES's
/// own timing, whose device parts are timed by events).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SolveParts {
    /// The checks of `b` (every entry finite).
    pub checks_ms: f64,
    /// `b` to the device, padded, and `x0 = 0` there.
    pub inputs_ms: f64,
    /// GMRES's operator applications (SpMV).
    pub spmv_ms: f64,
    /// Its preconditioner applications.
    pub precond_ms: f64,
    /// Its orthogonalisation.
    pub orth_ms: f64,
    /// The rest of GMRES: set-up, restarts' true residuals, waits, host work.
    pub gmres_rest_ms: f64,
    /// `x` back in host memory.
    pub output_ms: f64,
}

impl SolveParts {
    fn of(report: &ferrocuda::krylov::SolveReport) -> Self {
        let (t, g) = (&report.timing, &report.gmres.timing);
        SolveParts {
            checks_ms: t.checks * 1e3,
            inputs_ms: t.inputs * 1e3,
            spmv_ms: g.spmv * 1e3,
            precond_ms: g.precond * 1e3,
            orth_ms: g.orthogonalization * 1e3,
            gmres_rest_ms: g.rest * 1e3,
            output_ms: t.output * 1e3,
        }
    }
}

/// The rows of one run.
#[derive(Debug, Clone, Serialize)]
pub struct SolveBenchReport {
    /// GPU name.
    pub device: String,
    /// Every row.
    pub rows: Vec<SolveRow>,
    /// Peer configurations not run, each with why (`--quick`, the system's size).
    pub skipped: Vec<String>,
    /// Peers that could not run at all here (`"CuPy: cupy not available: ..."`).
    pub peers_not_available: Vec<String>,
}

fn progress(msg: &str) {
    eprintln!("[bench solve] {msg}");
}

/// `|b - A x| / |b|` in the system's precision from the CSR arrays, summed in f64.
fn true_residual<T: Element>(a: &Csr<T>, b: &[T], x: &[T]) -> f64 {
    let (ptr, col, val) = (a.row_ptr(), a.col_idx(), a.values());
    let mut r2 = 0.0;
    for i in 0..a.n_rows() {
        let mut s = b[i];
        for k in ptr[i]..ptr[i + 1] {
            s = s - val[k] * x[col[k] as usize];
        }
        r2 += s.abs2().to_f64();
    }
    let b2: f64 = b.iter().map(|v| v.abs2().to_f64()).sum();
    r2.sqrt() / b2.sqrt()
}

/// ferrocuda's preconditioner of one row: ILU(0) with exact triangular solves or with
/// Jacobi sweeps (`IluOptions::sweeps`), the others as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Precond(Preconditioner, Option<usize>);

impl Precond {
    const NONE: Self = Precond(Preconditioner::None, None);
    const JACOBI: Self = Precond(Preconditioner::Jacobi, None);
    const BLOCK_JACOBI: Self = Precond(Preconditioner::BlockJacobi, None);
    const ILU0: Self = Precond(Preconditioner::Ilu0, None);
    const ILU0_SWEEPS: Self = Precond(Preconditioner::Ilu0, Some(DEFAULT_SWEEPS));
}

impl std::fmt::Display for Precond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            None => write!(f, "{}", self.0),
            Some(s) => write!(f, "{} ({s} sweeps)", self.0),
        }
    }
}

/// Solves `a x = b` with one configuration.
#[allow(clippy::too_many_arguments)]
fn row<T: DeviceSolveElement>(
    gpu: &Gpu,
    device: &str,
    name: &str,
    a: &Csr<T>,
    b: &[T],
    precond: Precond,
    block_size: usize,
    (storage, basis): (MatrixStorage, BasisStorage),
) -> SolveRow {
    progress(&format!(
        "{name} {}: {precond}, matrix {storage}, basis {basis}",
        T::SUFFIX
    ));
    let mut r = SolveRow::empty(Solver::Ferrocuda, name, T::SUFFIX, a.n_rows(), a.nnz());
    r.version = env!("CARGO_PKG_VERSION").into();
    r.precond = precond.to_string();
    r.ilu_sweeps = precond.1;
    let Precond(precond, sweeps) = precond;
    r.side = (precond != Preconditioner::None).then(|| "right".into());
    r.storage = storage;
    r.basis = basis;
    r.device = device.into();
    let opts = SolveOptions::default()
        .precond(precond)
        .ilu(IluOptions::default().sweeps(sweeps))
        .block_size(block_size)
        .storage(storage)
        .gmres(
            GmresOptions::default()
                .restart(RESTART)
                .rtol(RTOL)
                .max_iter(MAX_STEPS)
                .basis(basis),
        );
    let mut run = || -> Result<()> {
        let t = Instant::now();
        let s = DeviceSolver::upload(gpu, a, &opts)?;
        gpu.synchronize()?;
        r.setup_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut best = f64::INFINITY;
        for _ in 0..SOLVE_REPS {
            let t = Instant::now();
            let sol = s.solve(b, None)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if ms < best {
                best = ms;
                let g = &sol.report.gmres;
                r.gmres_ms = Some(g.timing.total * 1e3);
                r.parts = Some(SolveParts::of(&sol.report));
                r.format = sol.report.format.format.name().to_string();
                r.converged = g.converged;
                r.steps = g.iterations;
                r.true_residual = true_residual(a, b, &sol.x);
                if let Some(rf) = &sol.report.refinement {
                    r.passes = rf.steps.clone();
                    r.fallback = rf.fallback.clone();
                }
            }
        }
        r.solve_ms = best;
        Ok(())
    };
    if let Err(e) = run() {
        r.error = Some(e.to_string());
    }
    r
}

/// One peer configuration: who, with which preconditioner (the script's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerConfig {
    /// CuPy or SciPy.
    pub solver: Solver,
    /// `none`, `jacobi`, `ilu0` or `ilu`.
    pub precond: &'static str,
}

/// The peer configurations for a system of `nnz` entries, each with the reason it is
/// skipped where it is (a pure rule, see [`PEER_HOST_NNZ`]).
pub fn peer_plan(quick: bool, complex: bool, nnz: usize) -> Vec<(PeerConfig, Option<String>)> {
    let large = nnz > PEER_HOST_NNZ;
    let cupy: &[&str] = if quick {
        &["none", "ilu0"]
    } else {
        &["none", "jacobi", "ilu0", "ilu"]
    };
    let scipy: &[&str] = if quick {
        &["ilu0"]
    } else {
        &["jacobi", "ilu0", "ilu"]
    };
    let mut plan = Vec::new();
    for &precond in cupy {
        let skip = (large && precond == "ilu").then(|| {
            format!(
                "SuperLU's spilu with its defaults factors on the host with fill up to 10x \
                 A's entries; not run above {PEER_HOST_NNZ} entries"
            )
        });
        plan.push((
            PeerConfig {
                solver: Solver::Cupy,
                precond,
            },
            skip,
        ));
    }
    for &precond in scipy {
        let skip = if !large {
            None
        } else if quick {
            Some(format!(
                "--quick: SciPy on the CPU takes minutes above {PEER_HOST_NNZ} entries"
            ))
        } else if precond != "ilu0" {
            Some(format!(
                "above {PEER_HOST_NNZ} entries SciPy runs its ILU(0)-like spilu only"
            ))
        } else if complex {
            Some(format!(
                "above {PEER_HOST_NNZ} entries SciPy runs on the f64 system only"
            ))
        } else {
            None
        };
        plan.push((
            PeerConfig {
                solver: Solver::Scipy,
                precond,
            },
            skip,
        ));
    }
    plan
}

/// What the run collects.
struct Run<'a> {
    opts: &'a SolveBenchOptions,
    rows: Vec<SolveRow>,
    skipped: Vec<String>,
    /// Peers that cannot run here, with why: `(solver, reason)`.
    unavailable: Vec<(Solver, String)>,
    /// Where systems are exported for the peers.
    export_dir: PathBuf,
}

impl Run<'_> {
    /// The peers on `a x = b` (the same arrays ferrocuda solved).
    fn peers<T: Element>(&mut self, name: &str, a: &Csr<T>, b: &[T]) -> Result<()> {
        if !self.opts.peers {
            return Ok(());
        }
        let plan = peer_plan(self.opts.quick, T::IS_COMPLEX, a.nnz());
        let label = format!("{name} {}", T::SUFFIX);
        let mut exported = false;
        for (cfg, skip) in plan {
            let who = format!("{} {} on {label}", cfg.solver.name(), cfg.precond);
            if let Some(why) = skip {
                self.skipped.push(format!("{who}: {why}"));
                continue;
            }
            if self.unavailable.iter().any(|u| u.0 == cfg.solver) {
                continue;
            }
            if !exported {
                progress(&format!("{label}: exporting the system for the peers"));
                if let Err(e) = peer::export_csr(&self.export_dir, a, b) {
                    // The rows measured so far stay: the peers of this system are noted.
                    let _ = peer::remove_export(&self.export_dir);
                    self.skipped
                        .push(format!("every peer on {label}: the export failed: {e}"));
                    return Ok(());
                }
                exported = true;
            }
            progress(&format!("{who} (peer script)"));
            let mut o = PeerOptions::new(cfg.solver.backend(), RESTART, RTOL, MAX_STEPS);
            o.precond = cfg.precond.into();
            o.host_io = true;
            o.timeout = Some(self.opts.peer_timeout);
            match peer::run_peer_with(&self.export_dir, &o) {
                Ok(r) => self.rows.push(peer_row(cfg, name, T::SUFFIX, &r)),
                Err(e) if e.backend_unavailable() => {
                    progress(&format!("{}: not available ({e})", cfg.solver.name()));
                    self.unavailable.push((cfg.solver, e.to_string()));
                }
                Err(e) => {
                    progress(&format!("{who}: {e}"));
                    self.rows.push(peer_error_row(cfg, name, T::SUFFIX, a, &e));
                }
            }
        }
        if exported {
            let _ = peer::remove_export(&self.export_dir);
        }
        Ok(())
    }
}

/// `text` on one line (a library's message may span several), at most 300 characters.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line,
    }
}

/// A table cell: one line, no `|` (which would end the cell in Markdown).
fn cell(text: &str) -> String {
    one_line(text).replace('|', "/")
}

/// A peer's result as a row.
fn peer_row(cfg: PeerConfig, matrix: &str, scalar: &str, r: &PeerResult) -> SolveRow {
    let mut row = SolveRow::empty(cfg.solver, matrix, scalar, r.n, r.nnz);
    row.version = r.version.clone();
    row.precond = r.precond.clone();
    row.precond_detail = r.precond_detail.clone();
    row.side = r.side.clone();
    row.precond_nnz = r.precond_nnz;
    row.device = r.device.clone();
    row.converged = r.info == 0;
    row.steps = r.steps;
    row.true_residual = r.relative_residual.unwrap_or(f64::NAN);
    row.setup_ms = r.setup_seconds.map_or(f64::NAN, |s| s * 1e3);
    row.solve_ms = r.seconds * 1e3;
    row.format = "csr".into();
    row
}

/// A peer configuration that failed (a zero pivot, the time limit) as a row.
fn peer_error_row<T: Element>(
    cfg: PeerConfig,
    matrix: &str,
    scalar: &str,
    a: &Csr<T>,
    e: &PeerError,
) -> SolveRow {
    let mut row = SolveRow::empty(cfg.solver, matrix, scalar, a.n_rows(), a.nnz());
    row.precond = cfg.precond.into();
    row.format = "csr".into();
    row.error = Some(one_line(&e.to_string()));
    row
}

/// The generated case in `T` (f64 or c64): ferrocuda's configurations, then the peers.
fn case_rows<T: DeviceSolveElement>(gpu: &Gpu, device: &str, run: &mut Run) -> Result<()> {
    let opts = run.opts;
    let spec = opts.case.spec()?;
    let name = opts.case.name();
    progress(&format!("generating {name} as {}", T::SUFFIX));
    let a5 = crate::progress::generate::<T>(&spec)?;
    let xt = ferrocuda::rng::random_vector::<T>(a5.n_rows(), 5);
    let mut b = vec![T::ZERO; a5.n_rows()];
    cpu::spmv_bcsr(T::ONE, &a5, &xt, T::ZERO, &mut b)?;
    let a = a5.to_csr().without_zeros();
    drop((a5, xt));
    let preconds: &[Precond] = match (opts.quick, T::IS_COMPLEX) {
        (true, false) => &[Precond::BLOCK_JACOBI, Precond::ILU0, Precond::ILU0_SWEEPS],
        (true, true) => &[Precond::BLOCK_JACOBI],
        (false, _) => &[
            Precond::NONE,
            Precond::BLOCK_JACOBI,
            Precond::ILU0,
            Precond::ILU0_SWEEPS,
        ],
    };
    for &p in preconds {
        // ILU(0) (the level-scheduled one is slow) and the complex case run fewer
        // combinations.
        let combos = if p.0 == Preconditioner::Ilu0 || T::IS_COMPLEX {
            &STORAGES[..2]
        } else {
            &STORAGES[..]
        };
        for &s in combos {
            run.rows.push(row(gpu, device, &name, &a, &b, p, 5, s));
        }
    }
    run.peers(&name, &a, &b)
}

/// The (matrix, basis) storages of ferrocuda's rows: full, the matrix in f32, the basis
/// in f32 (CB-GMRES), both; the first two where fewer are run.
const STORAGES: [(MatrixStorage, BasisStorage); 4] = [
    (MatrixStorage::Full, BasisStorage::Full),
    (MatrixStorage::F32, BasisStorage::Full),
    (MatrixStorage::Full, BasisStorage::F32),
    (MatrixStorage::F32, BasisStorage::F32),
];

/// Runs every configuration on `gpu`.
pub fn run(gpu: &Gpu, opts: &SolveBenchOptions) -> Result<SolveBenchReport> {
    opts.validate()?;
    let device = gpu.name()?;
    let mut run = Run {
        opts,
        rows: Vec::new(),
        skipped: Vec::new(),
        unavailable: Vec::new(),
        export_dir: std::env::temp_dir()
            .join(format!("ferrocuda-solve-peer-{}", std::process::id())),
    };
    let (real, complex) = match opts.scalars {
        SolvePasses::All => (true, true),
        SolvePasses::Real => (true, false),
        SolvePasses::Complex => (false, true),
    };
    if real {
        case_rows::<f64>(gpu, &device, &mut run)?;
    }
    if complex {
        case_rows::<Complex<f64>>(gpu, &device, &mut run)?;
    }
    let matrices = match (real, opts.quick) {
        (false, _) => 0,
        (true, true) => 1,
        (true, false) => MATRICES.len(),
    };
    for (name, text) in MATRICES.iter().take(matrices) {
        let a = mm::read_csr::<f64, _>(text.as_bytes())?;
        let b = vec![1.0; a.n_rows()];
        for p in [Precond::JACOBI, Precond::ILU0] {
            for &s in &STORAGES {
                run.rows.push(row(gpu, &device, name, &a, &b, p, 1, s));
            }
        }
        if !opts.quick {
            let p = Precond::ILU0_SWEEPS;
            run.rows
                .push(row(gpu, &device, name, &a, &b, p, 1, STORAGES[0]));
        }
        run.peers(name, &a, &b)?;
    }
    let peers_not_available = run
        .unavailable
        .iter()
        .map(|(s, e)| format!("{}: {e}", s.name()))
        .collect();
    Ok(SolveBenchReport::new(
        device,
        run.rows,
        run.skipped,
        peers_not_available,
    ))
}

impl SolveBenchReport {
    const HEADERS: [&'static str; 18] = [
        "matrix",
        "scalar",
        "rows",
        "solver",
        "format",
        "precond",
        "storage",
        "basis",
        "converged",
        "steps",
        "passes",
        "true rel. residual",
        "set-up ms",
        "solve ms",
        "GMRES ms",
        "vs full",
        "vs CuPy",
        "vs CuPy with set-up",
    ];

    /// The report of `rows`, with each ferrocuda row's "vs CuPy" ratios filled in.
    pub fn new(
        device: String,
        mut rows: Vec<SolveRow>,
        skipped: Vec<String>,
        peers_not_available: Vec<String>,
    ) -> Self {
        let ratios: Vec<(Option<f64>, Option<f64>)> =
            rows.iter().map(|r| vs_cupy(&rows, r)).collect();
        for (r, (solve, total)) in rows.iter_mut().zip(ratios) {
            r.vs_cupy = solve;
            r.vs_cupy_with_setup = total;
        }
        SolveBenchReport {
            device,
            rows,
            skipped,
            peers_not_available,
        }
    }

    /// The solve of the same matrix, scalar and preconditioner in full precision.
    fn full_of(&self, r: &SolveRow) -> Option<&SolveRow> {
        if r.solver != Solver::Ferrocuda {
            return None; // the peers store the matrix one way
        }
        self.rows.iter().find(|f| {
            f.solver == r.solver
                && f.matrix == r.matrix
                && f.scalar == r.scalar
                && f.precond == r.precond
                && f.storage == MatrixStorage::Full
                && f.basis == BasisStorage::Full
                && f.error.is_none()
        })
    }

    fn cells(&self) -> Vec<Vec<String>> {
        let ratio = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
        self.rows
            .iter()
            .map(|r| {
                let mut c = vec![
                    r.matrix.clone(),
                    r.scalar.clone(),
                    r.rows.to_string(),
                    r.solver_label(),
                ];
                if let Some(e) = &r.error {
                    c.extend([
                        "-".into(),
                        r.precond.clone(),
                        r.storage.to_string(),
                        r.basis.to_string(),
                        format!("error: {}", cell(e)),
                    ]);
                    c.resize(Self::HEADERS.len(), "-".into());
                    return c;
                }
                let passes = if r.passes.is_empty() {
                    "-".into()
                } else {
                    let mut p = format!("{:?}", r.passes);
                    if r.fallback.is_some() {
                        p.push_str(" + full");
                    }
                    p
                };
                let ms = |v: f64, digits: usize| {
                    if v.is_finite() {
                        format!("{v:.digits$}")
                    } else {
                        "-".into()
                    }
                };
                c.extend([
                    r.format.clone(),
                    r.precond.clone(),
                    r.storage.to_string(),
                    r.basis.to_string(),
                    r.converged.to_string(),
                    r.steps.to_string(),
                    passes,
                    if r.true_residual.is_finite() {
                        format!("{:.2e}", r.true_residual)
                    } else {
                        "-".into()
                    },
                    ms(r.setup_ms, 1),
                    ms(r.solve_ms, 2),
                    r.gmres_ms.map_or("-".into(), |g| ms(g, 2)),
                    ratio(
                        self.full_of(r)
                            .filter(|f| f.solve_ms > 0.0 && r.solve_ms > 0.0)
                            .map(|f| f.solve_ms / r.solve_ms),
                    ),
                    ratio(r.vs_cupy),
                    ratio(r.vs_cupy_with_setup),
                ]);
                c
            })
            .collect()
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let mut notes = String::new();
        for n in self.peers_not_available.iter().chain(&self.skipped) {
            notes.push_str(&format!("- {n}\n"));
        }
        format!(
            "device: {}\n{}{notes}",
            self.device,
            table(&Self::HEADERS, &self.cells())
        )
    }

    /// What each peer's preconditioners were (one line per solver and preconditioner).
    fn peer_details(&self) -> Vec<String> {
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut out = Vec::new();
        for r in self.rows.iter().filter(|r| r.solver != Solver::Ferrocuda) {
            let (Some(detail), Some(side)) = (&r.precond_detail, &r.side) else {
                continue;
            };
            let key = (r.solver_label(), r.precond.clone());
            if seen.contains(&key) {
                continue;
            }
            out.push(format!("- {}: {detail} ({side}-preconditioned)", key.0));
            seen.push(key);
        }
        out
    }

    /// Where the peers ran: `"CuPy on <GPU>; SciPy on <CPU>"` (the first device each
    /// reported), `None` without peer rows.
    fn peer_devices(&self) -> Option<String> {
        let mut out: Vec<String> = Vec::new();
        for s in [Solver::Cupy, Solver::Scipy] {
            if let Some(r) = self
                .rows
                .iter()
                .find(|r| r.solver == s && !r.device.is_empty())
            {
                out.push(format!("{} on {}", s.name(), r.device));
            }
        }
        (!out.is_empty()).then(|| out.join("; "))
    }

    /// The Markdown file.
    pub fn to_markdown(&self) -> String {
        let list = |title: &str, items: Vec<String>| {
            if items.is_empty() {
                String::new()
            } else {
                format!("{title}:\n\n{}\n\n", items.join("\n"))
            }
        };
        let fallbacks: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| {
                r.fallback.as_ref().map(|f| {
                    format!(
                        "- {} {} {} {}: {f}",
                        r.matrix, r.scalar, r.precond, r.storage
                    )
                })
            })
            .collect();
        let dash = |v: &Vec<String>| v.iter().map(|s| format!("- {s}")).collect::<Vec<_>>();
        format!(
            "# Time to solution\n\nWritten by `ferrocuda bench solve`; do not edit by hand.\n\n\
             - device: {device}{peer_devices}\n\
             - GMRES({RESTART}), rtol {RTOL:e} on the true residual, at most {MAX_STEPS} steps; every solver gets the same system: the same CSR arrays (the generated case: its blocks without the zeros stored in them) and the same `b` (generated case, f64 and c64: `b = A x_true`; real matrices: `b = 1`)\n\
             - ferrocuda: `DeviceSolver` (CGS2; SBELL or BCSR for the generated case, block size 5; CSR-derived formats for the real matrices, block size 1), right-preconditioned; set-up: conversion, preconditioner (ILU(0): factored on the device, level-scheduled; its triangular solves level-scheduled too, or, as `ilu0 ({DEFAULT_SWEEPS} sweeps)`, by {DEFAULT_SWEEPS} Jacobi sweeps per factor) and uploads; solve: the fastest of {SOLVE_REPS} `DeviceSolver::solve` calls, host vectors in and out (checks, padding, uploads and the download included), GMRES ms: the device solve within it (all passes; `parts` in the JSON splits the solve into checks, uploads, SpMV, preconditioner, orthogonalisation, the rest of GMRES and the download); true rel. residual: recomputed in f64 (complex f64 for c64) from the CSR arrays\n\
             - storage f32: the matrix values (and the Jacobi factors, and ILU(0)'s for sweep solves) in f32 (c32 for c64), vectors and arithmetic in full precision, refined with the full-precision residual (passes: the steps of each refinement solve; \"+ full\": a full-precision GMRES finished); basis f32: the Krylov basis in f32 (CB-GMRES), the same refinement; vs full: the full-precision solve's time (full matrix and basis) over this one's, same solver, matrix, scalar and preconditioner\n\
             - peers (the script `bench/scripts/gmres_peer.py`, run once per row): CuPy's `cupyx.scipy.sparse.linalg.gmres` on the GPU, right-preconditioned, the residual tested only between cycles of {RESTART} steps (its steps are whole cycles); SciPy's `scipy.sparse.linalg.gmres` on the CPU, left-preconditioned (it minimises the preconditioned residual within a cycle and tests the true residual at each restart); both from `x0 = 0` with `atol = 0`; set-up: from the CSR arrays in host memory to the matrix on the device (CuPy) and the preconditioner built, after a warm-up on a tiny system (CuPy compiles its kernels on first use); solve: CuPy the fastest of up to 5 within 2 s, each uploading `b` and downloading `x` as `DeviceSolver::solve` does; SciPy one solve; true rel. residual: recomputed by the script in the system's precision; converged: the library's `info == 0`\n\
             - peer preconditioners: `jacobi` the reciprocals of the diagonal; `ilu0` the nearest to ILU(0): CuPy `spilu(A, fill_factor=1)` = cuSPARSE's ILU(0) factored on the GPU, its triangular solves on the GPU; SciPy `spilu(drop_tol=0, fill_factor=1, permc_spec='NATURAL', diag_pivot_thresh=0)`, SuperLU's threshold ILU capped at about A's entries without reordering or pivoting, which chooses its own pattern (not ILU(0)'s factors); `ilu`: `spilu` with the library's defaults (drop_tol 1e-4, fill_factor 10, COLAMD ordering, threshold pivoting; CuPy's factors on the host through SciPy, solves on the GPU), a stronger and denser preconditioner than ILU(0); rows of A that store no entry (the generated case's ghost rows, `b` zero there) are the identity's rows in every peer preconditioner, as in ferrocuda's (GMRES iterates with A itself)\n\
             - vs CuPy: the solve ms of the fastest converged CuPy row (any preconditioner) of the same matrix and scalar over this row's; vs CuPy with set-up: the same with set-up + solve on both sides (the fastest CuPy row by that sum); above 1: ferrocuda is faster\n\
             - the peers' limits: systems above {PEER_HOST_NNZ} entries get SciPy's ILU(0)-like spilu only, on the f64 system only (none with `--quick`), and no `ilu` (fill up to 10x on the host); every peer run is stopped at the time limit of `--peer-timeout` (a row with the error)\n\n\
             {table}\n{fallbacks}{unavailable}{skipped}{details}The chart: the solve ms of the converged rows, on a log axis.\n\n![solve](solve-chart.png)\n",
            device = self.device,
            peer_devices = self
                .peer_devices()
                .map_or(String::new(), |d| format!(" (peers: {d})")),
            table = markdown_table(&Self::HEADERS, &self.cells()),
            fallbacks = list("Full-precision fallbacks", fallbacks),
            unavailable = list("Peers not available", dash(&self.peers_not_available)),
            skipped = list("Peer configurations not run", dash(&self.skipped)),
            details = list("Peer preconditioners as run", self.peer_details()),
        )
    }

    /// The chart: the solve time of each configuration, one group per matrix, scalar
    /// and preconditioner, a bar per solver (ferrocuda per storage), on a log axis;
    /// rows that failed or did not converge draw no bar.
    pub fn chart(&self) -> BarChart {
        const SERIES: [&str; 6] = [
            "ferrocuda, full storage",
            "ferrocuda, f32 matrix, refined",
            "ferrocuda, f32 basis (CB-GMRES)",
            "ferrocuda, f32 matrix and basis",
            "CuPy",
            "SciPy",
        ];
        let mut groups: Vec<(String, BarGroup)> = Vec::new();
        for r in &self.rows {
            let series = match (r.solver, r.storage, r.basis) {
                (Solver::Ferrocuda, MatrixStorage::Full, BasisStorage::Full) => 0,
                (Solver::Ferrocuda, MatrixStorage::F32, BasisStorage::Full) => 1,
                (Solver::Ferrocuda, MatrixStorage::Full, BasisStorage::F32) => 2,
                (Solver::Ferrocuda, MatrixStorage::F32, BasisStorage::F32) => 3,
                (Solver::Cupy, ..) => 4,
                (Solver::Scipy, ..) => 5,
            };
            let key = format!("{} {} {}", r.matrix, r.scalar, r.precond);
            let i = match groups.iter().position(|g| g.0 == key) {
                Some(i) => i,
                None => {
                    groups.push((
                        key.clone(),
                        BarGroup {
                            label: key,
                            values: vec![None; SERIES.len()],
                        },
                    ));
                    groups.len() - 1
                }
            };
            // A time to solution only where there was a solution.
            if r.usable() && r.solve_ms.is_finite() && r.solve_ms > 0.0 {
                groups[i].1.values[series] = Some(r.solve_ms);
            }
        }
        BarChart {
            title: format!("Time to solution, rtol 1e-8, {}", self.device),
            value_label: "ms (log scale)".into(),
            groups: groups.into_iter().map(|g| g.1).collect(),
            series: SERIES.iter().map(|s| s.to_string()).collect(),
            reference_lines: Vec::new(),
            // Peers on the CPU and unpreconditioned solves run orders of magnitude
            // longer than the fastest rows.
            log_x: true,
        }
    }
}

/// The "vs CuPy" ratios of row `r` against the converged CuPy rows of its matrix and
/// scalar in `rows`: (the fastest CuPy solve / `r`'s solve, the fastest CuPy set-up +
/// solve / `r`'s). `None` for peer rows, for a row that did not converge, and where no
/// CuPy row converged.
pub fn vs_cupy(rows: &[SolveRow], r: &SolveRow) -> (Option<f64>, Option<f64>) {
    if r.solver != Solver::Ferrocuda || !r.usable() {
        return (None, None);
    }
    let cupy = rows.iter().filter(|c| {
        c.solver == Solver::Cupy && c.usable() && c.matrix == r.matrix && c.scalar == r.scalar
    });
    let best = |f: &dyn Fn(&SolveRow) -> f64| {
        cupy.clone()
            .map(f)
            .filter(|v| v.is_finite() && *v > 0.0)
            .min_by(f64::total_cmp)
    };
    let total = |x: &SolveRow| x.setup_ms + x.solve_ms;
    let ratio = |peer: Option<f64>, ours: f64| {
        peer.filter(|_| ours > 0.0 && ours.is_finite())
            .map(|p| p / ours)
    };
    (
        ratio(best(&|c| c.solve_ms), r.solve_ms),
        ratio(best(&total), total(r)),
    )
}

/// Writes `solve.md`, `solve.json` (the rows) and `solve-chart.png` (with its data,
/// `solve-chart.json`) (where `out` allows it).
pub fn write_results(report: &SolveBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("solve.md", |out| {
        let chart = report.chart();
        // A row per group of up to four bars, within the renderer's largest side.
        let height = (200 + 64 * chart.groups.len()).min(8192) as u32;
        let mut written = crate::plot::write_with_data(
            chart,
            &out.join("solve-chart.png"),
            1200,
            height,
            "ferrocuda bench solve",
        )?;
        let json = serde_json::to_string_pretty(&report.rows)
            .map_err(|e| crate::invalid("bench solve", format!("JSON of the rows: {e}")))?;
        let path = out.join("solve.json");
        crate::output::write_file(&path, json.as_bytes())?;
        written.push(path);
        written.push(out.write_markdown("solve.md", &report.to_markdown())?);
        Ok(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(storage: MatrixStorage, solve_ms: f64) -> SolveRow {
        let mut r = SolveRow::empty(Solver::Ferrocuda, "case1", "f64", 10, 30);
        r.version = "0.1.0".into();
        r.precond = "ilu0".into();
        r.side = Some("right".into());
        r.storage = storage;
        r.device = "test GPU".into();
        r.converged = true;
        r.steps = 12;
        if storage == MatrixStorage::F32 {
            r.passes = vec![10, 2];
        }
        r.true_residual = 9e-9;
        r.setup_ms = 1.0;
        r.solve_ms = solve_ms;
        r.gmres_ms = Some(solve_ms / 2.0);
        r.format = "sbell".into();
        r
    }

    fn peer(solver: Solver, precond: &str, setup_ms: f64, solve_ms: f64) -> SolveRow {
        let mut r = SolveRow::empty(solver, "case1", "f64", 10, 30);
        r.version = if solver == Solver::Cupy {
            "14.2.0"
        } else {
            "1.17.1"
        }
        .into();
        r.precond = precond.into();
        if precond != "none" {
            r.side = Some(
                if solver == Solver::Cupy {
                    "right"
                } else {
                    "left"
                }
                .into(),
            );
            r.precond_detail = Some(format!("{precond}: as the script ran it"));
        }
        r.device = "test device".into();
        r.converged = true;
        r.steps = 30;
        r.true_residual = 5e-9;
        r.setup_ms = setup_ms;
        r.solve_ms = solve_ms;
        r.format = "csr".into();
        r
    }

    /// The table compares each f32 solve with the full-precision one and each ferrocuda
    /// row with the fastest CuPy row; peer rows carry their solver and version; the JSON
    /// is the rows; notes on skipped and unavailable peers; the files are written
    /// together.
    #[test]
    fn writes_rows_markdown_and_chart() {
        let mut failed = row(MatrixStorage::Full, 0.0);
        failed.matrix = "sherman1".into();
        // CB-GMRES: the basis in f32, against the full solve of the same system.
        let mut cb = row(MatrixStorage::Full, 2.4);
        cb.basis = BasisStorage::F32;
        failed.error = Some("row 3: zero pivot".into());
        let mut timed_out = peer(Solver::Scipy, "ilu0", 0.0, 0.0);
        timed_out.version = String::new();
        timed_out.error = Some("gmres_peer.py stopped after the time limit of 300 s".into());
        let r = SolveBenchReport::new(
            "test GPU".into(),
            vec![
                row(MatrixStorage::Full, 3.0),
                row(MatrixStorage::F32, 2.0),
                failed,
                peer(Solver::Cupy, "none", 4.0, 6.0),
                peer(Solver::Cupy, "ilu0", 20.0, 4.5),
                peer(Solver::Scipy, "ilu", 2.0, 50.0),
                timed_out,
                cb,
            ],
            vec!["SciPy jacobi on case6 f64: too large".into()],
            vec!["CuPy: cupy sees no GPU".into()],
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let out = ResultsDir::new(dir.path(), true);
        write_results(&r, &out).expect("write");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("solve.json")).expect("json"),
        )
        .expect("parse");
        let rows = json.as_array().expect("a list");
        assert_eq!(rows.len(), 8);
        assert_eq!(rows[1]["storage"], "f32");
        assert_eq!(rows[1]["basis"], "full");
        assert_eq!(
            (&rows[7]["storage"], &rows[7]["basis"]),
            (&"full".into(), &"f32".into())
        );
        // Its "vs full": 3.0 / 2.4.
        assert!(md_has(dir.path(), "| full | f32 |") && md_has(dir.path(), "1.25x"));
        assert_eq!(rows[0]["solver"], "ferrocuda");
        assert_eq!(rows[0]["scalar"], "f64");
        assert_eq!(rows[0]["vs_cupy"], 1.5);
        assert_eq!(rows[4]["solver"], "cupy");
        assert_eq!(rows[4]["version"], "14.2.0");
        assert_eq!(rows[4]["side"], "right");
        assert!(rows[4]["gmres_ms"].is_null());
        assert!(rows[4]["vs_cupy"].is_null(), "peers have no ratio to CuPy");
        assert_eq!(rows[5]["solver"], "scipy");
        let md = std::fs::read_to_string(dir.path().join("solve.md")).expect("md");
        assert!(md.contains("1.50x"), "{md}");
        assert!(md.contains("[10, 2]"), "{md}");
        assert!(md.contains("error: row 3: zero pivot"), "{md}");
        assert!(md.contains("| CuPy 14.2.0 |"), "{md}");
        assert!(md.contains("| SciPy 1.17.1 |"), "{md}");
        assert!(md.contains("| SciPy | - | ilu0 |"), "{md}");
        assert!(md.contains("error: gmres_peer.py stopped after"), "{md}");
        // vs CuPy with set-up: CuPy none's 4 + 6 over ferrocuda's 1 + 3.
        assert!(md.contains("| 2.50x |"), "{md}");
        assert!(md.contains("- CuPy: cupy sees no GPU"), "{md}");
        assert!(
            md.contains("- SciPy jacobi on case6 f64: too large"),
            "{md}"
        );
        assert!(
            md.contains("- CuPy 14.2.0: ilu0: as the script ran it (right-preconditioned)"),
            "{md}"
        );
        assert!(
            md.contains("(peers: CuPy on test device; SciPy on test device)"),
            "{md}"
        );
        // Peers store the matrix one way: no "vs full".
        assert!(md.contains("| 4.0 | 6.00 | - | - | - | - |"), "{md}");
        assert!(!md.contains("not yet here"), "{md}");
        assert!(dir.path().join("solve-chart.png").is_file());
        let text = r.to_text();
        assert!(text.contains("CuPy 14.2.0"), "{text}");
        assert!(text.contains("- CuPy: cupy sees no GPU"), "{text}");
    }

    fn md_has(dir: &std::path::Path, what: &str) -> bool {
        std::fs::read_to_string(dir.join("solve.md")).is_ok_and(|m| m.contains(what))
    }

    /// "vs CuPy": the fastest converged CuPy row of the same matrix and scalar, by solve
    /// time and by set-up + solve separately; nothing for peers, unconverged rows, or
    /// where no CuPy row converged.
    #[test]
    fn vs_cupy_takes_the_fastest_converged_cupy_row_of_the_same_system() {
        let ours = row(MatrixStorage::Full, 2.0); // set-up 1
        let mut unconverged = peer(Solver::Cupy, "jacobi", 0.5, 1.0);
        unconverged.converged = false;
        let mut other_scalar = peer(Solver::Cupy, "none", 0.1, 0.5);
        other_scalar.scalar = "c64".into();
        let mut other_matrix = peer(Solver::Cupy, "none", 0.1, 0.5);
        other_matrix.matrix = "sherman1".into();
        let mut failed = peer(Solver::Cupy, "ilu", 0.0, 0.1);
        failed.error = Some("boom".into());
        let rows = vec![
            ours.clone(),
            peer(Solver::Cupy, "none", 1.0, 8.0),
            peer(Solver::Cupy, "ilu0", 30.0, 4.0),
            peer(Solver::Scipy, "ilu", 0.1, 0.2),
            unconverged,
            other_scalar,
            other_matrix,
            failed,
        ];
        // By solve: ILU(0)'s 4 ms; by set-up + solve: none's 9 ms against our 3.
        assert_eq!(vs_cupy(&rows, &ours), (Some(2.0), Some(3.0)));
        assert_eq!(vs_cupy(&rows, &rows[1]), (None, None));
        let mut not_ours = ours.clone();
        not_ours.converged = false;
        assert_eq!(vs_cupy(&rows, &not_ours), (None, None));
        assert_eq!(vs_cupy(&rows[..1], &ours), (None, None));
        let mut c64 = ours.clone();
        c64.scalar = "c64".into();
        assert_eq!(vs_cupy(&rows, &c64), (Some(0.25), Some(0.6 / 3.0)));
    }

    fn planned(plan: &[(PeerConfig, Option<String>)]) -> Vec<String> {
        plan.iter()
            .filter(|p| p.1.is_none())
            .map(|p| format!("{} {}", p.0.solver.name(), p.0.precond))
            .collect()
    }

    /// Which peers run: everything on a small system; on a large one no host
    /// factorisation with fill and SciPy's ILU(0)-like spilu on the f64 system only
    /// (none with --quick); every skip says why.
    #[test]
    fn the_peer_plan_follows_the_size_and_quick() {
        let small = PEER_HOST_NNZ;
        let large = PEER_HOST_NNZ + 1;
        let all = [
            "CuPy none",
            "CuPy jacobi",
            "CuPy ilu0",
            "CuPy ilu",
            "SciPy jacobi",
            "SciPy ilu0",
            "SciPy ilu",
        ];
        assert_eq!(planned(&peer_plan(false, false, small)), all);
        assert_eq!(planned(&peer_plan(false, true, small)), all);
        assert_eq!(
            planned(&peer_plan(true, false, small)),
            ["CuPy none", "CuPy ilu0", "SciPy ilu0"]
        );
        assert_eq!(
            planned(&peer_plan(false, false, large)),
            ["CuPy none", "CuPy jacobi", "CuPy ilu0", "SciPy ilu0"]
        );
        assert_eq!(
            planned(&peer_plan(false, true, large)),
            ["CuPy none", "CuPy jacobi", "CuPy ilu0"]
        );
        let quick_large = peer_plan(true, false, large);
        assert_eq!(planned(&quick_large), ["CuPy none", "CuPy ilu0"]);
        let why = quick_large
            .iter()
            .find(|p| p.0.solver == Solver::Scipy)
            .and_then(|p| p.1.clone())
            .expect("SciPy skipped");
        assert!(why.contains("--quick"), "{why}");
        for (_, why) in peer_plan(false, true, large) {
            assert!(why.is_none_or(|w| w.contains(&PEER_HOST_NNZ.to_string())));
        }
    }

    /// The true residual in complex f64: zero for the exact solution, and the norm
    /// worked by hand for another.
    #[test]
    fn true_residual_of_a_complex_system() {
        let c = |re, im| Complex::new(re, im);
        let mut coo = ferrocuda::sparse::Coo::<Complex<f64>>::try_new(2, 2, vec![], vec![], vec![])
            .expect("coo");
        coo.push(0, 0, c(1.0, 1.0)).expect("push");
        coo.push(0, 1, c(0.0, 2.0)).expect("push");
        coo.push(1, 1, c(3.0, 0.0)).expect("push");
        let a = Csr::from(&coo);
        let x = [c(1.0, 0.0), c(0.0, 1.0)];
        // A x = [(1 + i) + 2i * i, 3i] = [-1 + i, 3i].
        let b = [c(-1.0, 1.0), c(0.0, 3.0)];
        assert_eq!(true_residual(&a, &b, &x), 0.0);
        // x = 0: the residual is b itself.
        assert_eq!(true_residual(&a, &b, &[c(0.0, 0.0); 2]), 1.0);
        // x = [1, 0]: r = b - [1 + i, 0] = [-2, 3i], |r| = sqrt(13), |b| = sqrt(11).
        let got = true_residual(&a, &b, &[c(1.0, 0.0), c(0.0, 0.0)]);
        assert!((got - (13.0f64 / 11.0).sqrt()).abs() < 1e-15, "{got}");
    }

    /// An error of several lines (SuperLU's) stays on its row of the table.
    #[test]
    fn errors_stay_on_one_table_line() {
        let mut failed = peer(Solver::Scipy, "ilu0", 0.0, 0.0);
        failed.error = Some("RuntimeError: [0]: singular\n at line 149 | file x.c\n".into());
        let r = SolveBenchReport::new("GPU".into(), vec![failed], Vec::new(), Vec::new());
        let md = r.to_markdown();
        let line = md
            .lines()
            .find(|l| l.contains("error:"))
            .expect("the error's row");
        assert!(
            line.contains("error: RuntimeError: [0]: singular at line 149 / file x.c |"),
            "{md}"
        );
        assert_eq!(
            line.matches('|').count(),
            SolveBenchReport::HEADERS.len() + 1,
            "{line}"
        );
        let long = one_line(&"word ".repeat(100));
        assert!(
            long.ends_with("...") && long.chars().count() == 303,
            "{long}"
        );
    }

    /// The chart: one group per matrix, scalar and preconditioner, ferrocuda's storages
    /// and the peers as series; failed and unconverged rows draw no bar.
    #[test]
    fn chart_groups_peers_with_the_same_preconditioner() {
        let mut c64 = row(MatrixStorage::Full, 5.0);
        c64.scalar = "c64".into();
        let mut failed = peer(Solver::Scipy, "ilu0", 0.0, 0.0);
        failed.error = Some("timed out".into());
        let mut unconverged = peer(Solver::Scipy, "none", 0.1, 60.0);
        unconverged.converged = false;
        let r = SolveBenchReport::new(
            "GPU".into(),
            vec![
                row(MatrixStorage::Full, 3.0),
                row(MatrixStorage::F32, 2.0),
                peer(Solver::Cupy, "ilu0", 1.0, 4.0),
                failed,
                peer(Solver::Cupy, "none", 1.0, 6.0),
                unconverged,
                c64,
            ],
            Vec::new(),
            Vec::new(),
        );
        let chart = r.chart();
        let labels: Vec<&str> = chart.groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(
            labels,
            ["case1 f64 ilu0", "case1 f64 none", "case1 c64 ilu0"]
        );
        assert_eq!(
            chart.groups[0].values,
            [Some(3.0), Some(2.0), None, None, Some(4.0), None]
        );
        assert_eq!(
            chart.groups[1].values,
            [None, None, None, None, Some(6.0), None]
        );
        assert_eq!(chart.series.len(), 6);
    }
}
