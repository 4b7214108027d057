//! Peer solvers in the same run: a system exported as `.npy` files and solved by
//! `bench/scripts/gmres_peer.py` with CuPy's `cupyx.scipy.sparse.linalg.gmres` (GPU) or
//! SciPy's `scipy.sparse.linalg.gmres` (CPU), whose one-line JSON report becomes a
//! [`PeerResult`].
//!
//! The script is embedded in the binary ([`SCRIPT_TEXT`]) and written next to the
//! exported files for each run, so the benchmark finds it from any directory and on a
//! machine that got only the binary; `FERROCUDA_SCRIPTS=DIR` runs `DIR/gmres_peer.py`
//! instead (an edited copy).
//!
//! A missing Python, script or module is an ordinary [`PeerError`]: the benchmark prints
//! it ("CuPy: not available (...)") and goes on.
//!
//! Files written by [`export_csr`] / [`export_bcsr`] into a directory (NumPy format 1.0,
//! little-endian, C order, 1-D): `indptr.npy` (`<i4`, or `<i8` where `nnz` exceeds
//! `i32::MAX`), `indices.npy` (`<i4`, or `<i8` where a column index could exceed
//! `i32::MAX`), `data.npy` (`<f4`, `<f8`, `<c8` or `<c16`) and `b.npy` (the same dtype).
//! The matrix is square with `len(indptr) - 1` rows.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use ferrocuda::sparse::{Bcsr, Csr, Element};
use ferrocuda::{Error, Result};

/// File name of the peer script (in `bench/scripts/`).
pub const SCRIPT: &str = "gmres_peer.py";

/// The peer script itself, embedded at build time.
pub const SCRIPT_TEXT: &str = include_str!("../scripts/gmres_peer.py");

/// The files an export writes, without the `.npy` extension.
pub const FILES: [&str; 4] = ["indptr", "indices", "data", "b"];

/// The `.npy` header (format 1.0) of a 1-D little-endian array of `len` elements of
/// NumPy type `descr` (`"<f8"`, ...): magic, version, header length, the dictionary,
/// spaces and a newline, so that the data starts at a multiple of 64 bytes.
pub fn npy_header(descr: &str, len: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    // magic (6) + version (2) + header length (2) + dict + padding + '\n'
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let header_len = total - 10;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    // A 1-D header is far below 64 KiB, the limit of format 1.0.
    h.extend_from_slice(&(header_len as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// NumPy's type string for a ferrocuda scalar (from its kernel-name suffix).
pub fn npy_descr<T: Element>() -> &'static str {
    match T::SUFFIX {
        "f32" => "<f4",
        "f64" => "<f8",
        "c32" => "<c8",
        _ => "<c16",
    }
}

fn io_error(path: &Path, e: io::Error) -> Error {
    Error::InvalidArgument {
        op: "bench::peer export",
        reason: format!("{}: {e}", path.display()),
    }
}

/// Writes `dir/name.npy`: the header, then `body` writes exactly `len` elements.
fn write_npy(
    dir: &Path,
    name: &str,
    descr: &str,
    len: usize,
    body: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<()> {
    let path = dir.join(format!("{name}.npy"));
    let write = || -> io::Result<()> {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        w.write_all(&npy_header(descr, len))?;
        body(&mut w)?;
        w.flush() // no fsync: the reader is a process on this machine
    };
    write().map_err(|e| io_error(&path, e))
}

/// Writes `indptr.npy`: the `len` offsets, as `<i4` where `nnz` (the last) fits `i32`,
/// else `<i8`.
fn write_offsets(
    dir: &Path,
    len: usize,
    nnz: usize,
    offsets: impl Iterator<Item = usize>,
) -> Result<()> {
    let narrow = nnz <= i32::MAX as usize;
    let descr = if narrow { "<i4" } else { "<i8" };
    write_npy(dir, "indptr", descr, len, |w| {
        for o in offsets {
            if narrow {
                w.write_all(&(o as i32).to_le_bytes())?;
            } else {
                w.write_all(&(o as i64).to_le_bytes())?;
            }
        }
        Ok(())
    })
}

/// Writes the column indices `cols()` (`len` of them, each below `n_cols`).
fn write_columns<I: Iterator<Item = usize>>(
    dir: &Path,
    len: usize,
    n_cols: usize,
    cols: impl FnOnce() -> I,
) -> Result<()> {
    let narrow = n_cols <= i32::MAX as usize;
    let descr = if narrow { "<i4" } else { "<i8" };
    write_npy(dir, "indices", descr, len, |w| {
        for c in cols() {
            if narrow {
                w.write_all(&(c as i32).to_le_bytes())?;
            } else {
                w.write_all(&(c as i64).to_le_bytes())?;
            }
        }
        Ok(())
    })
}

fn check_system(n_rows: usize, n_cols: usize, b: usize) -> Result<()> {
    if cfg!(target_endian = "big") {
        return Err(Error::InvalidArgument {
            op: "bench::peer export",
            reason:
                "the .npy export writes the values' bytes as they are: little-endian hosts only"
                    .into(),
        });
    }
    if n_rows != n_cols {
        return Err(Error::InvalidArgument {
            op: "bench::peer export",
            reason: format!("GMRES needs a square matrix, got {n_rows} x {n_cols}"),
        });
    }
    if b != n_rows {
        return Err(Error::DimensionMismatch {
            op: "bench::peer export",
            what: "b",
            expected: n_rows,
            found: b,
        });
    }
    Ok(())
}

/// Writes `a` and `b` into `dir` (created if missing) as the four `.npy` files of the
/// module docs, streaming from the matrix's own arrays (no copy of the matrix is made).
/// Errors: `a` not square, `b.len() != a.n_rows()`, a file that cannot be written.
pub fn export_csr<T: Element>(dir: &Path, a: &Csr<T>, b: &[T]) -> Result<()> {
    check_system(a.n_rows(), a.n_cols(), b.len())?;
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let descr = npy_descr::<T>();
    write_offsets(dir, a.n_rows() + 1, a.nnz(), a.row_ptr().iter().copied())?;
    write_columns(dir, a.nnz(), a.n_cols(), || {
        a.col_idx().iter().map(|&c| c as usize)
    })?;
    write_npy(dir, "data", descr, a.nnz(), |w| {
        w.write_all(bytemuck::cast_slice(a.values()))
    })?;
    write_npy(dir, "b", descr, b.len(), |w| {
        w.write_all(bytemuck::cast_slice(b))
    })
}

/// [`export_csr`] of `a.to_csr()` (the same bytes), written straight from the blocks:
/// every entry of every stored block, zeros included, row by row.
pub fn export_bcsr<T: Element>(dir: &Path, a: &Bcsr<T>, b: &[T]) -> Result<()> {
    check_system(a.n_rows(), a.n_cols(), b.len())?;
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let (bs, bb, layout) = (a.b(), a.b() * a.b(), a.layout());
    let nnz = a.values().len();
    // Scalar row offsets: row r of block row I starts after the rows above it.
    let row_ptr = std::iter::once(0).chain((0..a.n_block_rows()).flat_map(|bi| {
        let (start, blocks) = (a.row_ptr()[bi], a.row_ptr()[bi + 1] - a.row_ptr()[bi]);
        (1..=bs).map(move |r| (start * bs + r * blocks) * bs)
    }));
    write_offsets(dir, a.n_rows() + 1, nnz, row_ptr)?;
    // (block row, row in block, block) in CSR order, then the b entries of that row.
    let rows = || {
        (0..a.n_block_rows()).flat_map(move |bi| {
            (0..bs).flat_map(move |r| (a.row_ptr()[bi]..a.row_ptr()[bi + 1]).map(move |k| (r, k)))
        })
    };
    write_columns(dir, nnz, a.n_cols(), || {
        rows().flat_map(move |(_, k)| {
            let bj = a.col_idx()[k] as usize;
            (0..bs).map(move |c| bj * bs + c)
        })
    })?;
    write_npy(dir, "data", npy_descr::<T>(), nnz, |w| {
        for (r, k) in rows() {
            let block = &a.values()[k * bb..(k + 1) * bb];
            for c in 0..bs {
                w.write_all(bytemuck::bytes_of(&block[layout.offset(bs, r, c)]))?;
            }
        }
        Ok(())
    })?;
    write_npy(dir, "b", npy_descr::<T>(), b.len(), |w| {
        w.write_all(bytemuck::cast_slice(b))
    })
}

/// Removes the files of an export (and the script written beside them) from `dir`, and
/// `dir` itself if it is then empty.
pub fn remove_export(dir: &Path) -> io::Result<()> {
    let script = std::iter::once(dir.join(SCRIPT));
    for path in FILES
        .iter()
        .map(|f| dir.join(format!("{f}.npy")))
        .chain(script)
    {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    let _ = std::fs::remove_dir(dir); // fails harmlessly where other files remain
    Ok(())
}

/// One peer solve, as the script reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerResult {
    /// `"cupy"` or `"scipy"`.
    pub backend: String,
    /// The library's version.
    pub version: String,
    /// GPU name (CuPy) or CPU model (SciPy).
    pub device: String,
    /// Rows.
    pub n: usize,
    /// Stored entries.
    pub nnz: usize,
    /// NumPy dtype of the values (`float64`, `complex64`, ...).
    pub dtype: String,
    /// Relative tolerance passed.
    pub rtol: f64,
    /// Restart length used (`min(restart, n)`).
    pub restart: usize,
    /// The `maxiter` passed to the library (see the script for the mapping).
    pub maxiter_arg: usize,
    /// Arnoldi steps taken in the timed solve.
    pub steps: usize,
    /// Wall time of the timed solve (host clock; CuPy synchronised before and after).
    pub seconds: f64,
    /// `seconds / steps` in ms (`None` for zero steps).
    pub ms_per_step: Option<f64>,
    /// `|b - A x| / |b|` recomputed after the solve (`None` if not finite).
    pub relative_residual: Option<f64>,
    /// The library's `info` (0: converged; > 0: not converged).
    pub info: i64,
    /// The preconditioner asked for (`none`, `jacobi`, `ilu0`, `ilu`; the script's
    /// docstring says what each is in each library).
    #[serde(default = "no_precond")]
    pub precond: String,
    /// What the preconditioner was exactly (the call and its parameters).
    #[serde(default)]
    pub precond_detail: Option<String>,
    /// How the library applies it: `"right"` (CuPy) or `"left"` (SciPy); `None` without.
    #[serde(default)]
    pub side: Option<String>,
    /// Entries of the incomplete factors L and U (L's unit diagonal not counted).
    #[serde(default)]
    pub precond_nnz: Option<usize>,
    /// Seconds of the set-up: from the arrays in host memory to the matrix on the device
    /// (CuPy) and the preconditioner built.
    #[serde(default)]
    pub setup_seconds: Option<f64>,
    /// Whether each timed solve included uploading `b` and downloading `x` (CuPy with
    /// [`PeerOptions::host_io`]).
    #[serde(default)]
    pub host_io: bool,
}

fn no_precond() -> String {
    "none".into()
}

/// How to run a peer: [`run_peer_with`].
#[derive(Debug, Clone)]
pub struct PeerOptions {
    /// `"cupy"` or `"scipy"`.
    pub backend: String,
    /// GMRES restart length.
    pub restart: usize,
    /// `|b - A x| <= rtol |b|`.
    pub rtol: f64,
    /// Arnoldi steps in total (CuPy: whole cycles, see [`run_peer`]).
    pub max_steps: usize,
    /// The script's `--precond`: `none`, `jacobi`, `ilu0` or `ilu`.
    pub precond: String,
    /// Time the upload of `b` and the download of `x` with each solve (CuPy), as
    /// `DeviceSolver::solve` does.
    pub host_io: bool,
    /// Stop the script after this long ([`PeerError::TimedOut`]); `None`: no limit.
    pub timeout: Option<std::time::Duration>,
}

impl PeerOptions {
    /// `backend`'s GMRES(`restart`) to `rtol` in at most `max_steps` steps, no
    /// preconditioner, no host transfers timed, no time limit.
    pub fn new(backend: &str, restart: usize, rtol: f64, max_steps: usize) -> Self {
        PeerOptions {
            backend: backend.into(),
            restart,
            rtol,
            max_steps,
            precond: "none".into(),
            host_io: false,
            timeout: None,
        }
    }
}

/// Why a peer solve gave no result (printed as `"CuPy: not available (<this>)"`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PeerError {
    /// The interpreter could not be started.
    NoPython {
        /// What was tried.
        python: String,
        /// The OS error.
        reason: String,
    },
    /// The script is in none of the places searched.
    NoScript {
        /// Where it was looked for.
        searched: Vec<PathBuf>,
    },
    /// The embedded script could not be written next to the exported system.
    WriteScript {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The script ran and reported an error (out of memory, a zero pivot, ...).
    Reported(String),
    /// The script reported that the library cannot run here at all (not installed, no
    /// GPU): every other configuration of that backend would fail the same way.
    Unavailable(String),
    /// The script ran longer than [`PeerOptions::timeout`] and was stopped.
    TimedOut {
        /// The limit, seconds.
        seconds: f64,
    },
    /// The script exited with a failure status.
    Failed {
        /// The exit status.
        status: String,
        /// The end of its standard error.
        stderr: String,
    },
    /// The script's output is not the expected JSON.
    BadOutput {
        /// The parse error.
        reason: String,
        /// The last line of standard output.
        line: String,
    },
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::NoPython { python, reason } => write!(
                f,
                "cannot run `{python}` ({reason}); set FERROCUDA_PYTHON to a Python 3"
            ),
            PeerError::NoScript { searched } => {
                let s: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "{SCRIPT} not found in {}; set FERROCUDA_SCRIPTS to its directory",
                    s.join(", ")
                )
            }
            PeerError::WriteScript { path, reason } => {
                write!(f, "cannot write {}: {reason}", path.display())
            }
            PeerError::Reported(e) | PeerError::Unavailable(e) => write!(f, "{e}"),
            PeerError::TimedOut { seconds } => {
                write!(f, "{SCRIPT} stopped after the time limit of {seconds} s")
            }
            PeerError::Failed { status, stderr } => {
                write!(f, "{SCRIPT} failed ({status}): {stderr}")
            }
            PeerError::BadOutput { reason, line } => {
                write!(f, "{SCRIPT} printed no valid report ({reason}): {line:?}")
            }
        }
    }
}

impl std::error::Error for PeerError {}

impl PeerError {
    /// Whether the backend cannot run here at all (no Python, no script, the library
    /// missing, no GPU), as opposed to one configuration failing.
    pub fn backend_unavailable(&self) -> bool {
        matches!(
            self,
            PeerError::NoPython { .. }
                | PeerError::NoScript { .. }
                | PeerError::WriteScript { .. }
                | PeerError::Unavailable(_)
        )
    }
}

/// The script to run for a system exported into `dir`: `override_dir/gmres_peer.py` where
/// an override directory is given (`$FERROCUDA_SCRIPTS`), else the embedded
/// [`SCRIPT_TEXT`] written into `dir` (which [`remove_export`] removes with the export).
fn script_for(dir: &Path, override_dir: Option<&Path>) -> std::result::Result<PathBuf, PeerError> {
    if let Some(d) = override_dir {
        let path = d.join(SCRIPT);
        if !path.is_file() {
            return Err(PeerError::NoScript {
                searched: vec![path],
            });
        }
        return Ok(path);
    }
    let path = dir.join(SCRIPT);
    std::fs::write(&path, SCRIPT_TEXT).map_err(|e| PeerError::WriteScript {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    Ok(path)
}

/// `$FERROCUDA_SCRIPTS` where set and not empty.
fn scripts_override() -> Option<PathBuf> {
    std::env::var_os("FERROCUDA_SCRIPTS")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// The interpreter: `$FERROCUDA_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("FERROCUDA_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// Runs the peer script on the system exported into `dir`: `backend` `"cupy"` or
/// `"scipy"`, GMRES(`restart`) to `|b - A x| <= rtol |b|` from `x0 = 0`, at most
/// `max_steps` Arnoldi steps in total (CuPy: whole cycles only, so at most
/// `restart * max(1, max_steps / restart)`). One untimed warm-up solve precedes the timed
/// one. Blocks until the script ends.
pub fn run_peer(
    backend: &str,
    dir: &Path,
    restart: usize,
    rtol: f64,
    max_steps: usize,
) -> std::result::Result<PeerResult, PeerError> {
    run_peer_with(dir, &PeerOptions::new(backend, restart, rtol, max_steps))
}

/// [`run_peer`] with a preconditioner, host transfers timed and a time limit.
pub fn run_peer_with(dir: &Path, opts: &PeerOptions) -> std::result::Result<PeerResult, PeerError> {
    run_script(
        &python(),
        &script_for(dir, scripts_override().as_deref())?,
        dir,
        opts,
    )
}

fn run_script(
    python: &str,
    script: &Path,
    dir: &Path,
    opts: &PeerOptions,
) -> std::result::Result<PeerResult, PeerError> {
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .arg(dir)
        .args(["--backend", &opts.backend])
        .args(["--restart", &opts.restart.to_string()])
        .args(["--rtol", &format!("{:e}", opts.rtol)])
        .args(["--maxiter", &opts.max_steps.to_string()]);
    // Only where asked, so that an older edited script (FERROCUDA_SCRIPTS) still runs
    // the plain solves.
    if opts.precond != "none" {
        cmd.args(["--precond", &opts.precond]);
    }
    if opts.host_io {
        cmd.arg("--host-io");
    }
    let out = output_within(&mut cmd, opts.timeout).map_err(|e| match e {
        Waited::Spawn(e) => PeerError::NoPython {
            python: python.into(),
            reason: e.to_string(),
        },
        Waited::TimedOut(t) => PeerError::TimedOut {
            seconds: t.as_secs_f64(),
        },
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.trim_end().lines().rev().take(3).collect();
        return Err(PeerError::Failed {
            status: out.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    parse_report(&String::from_utf8_lossy(&out.stdout))
}

/// Why [`output_within`] gave no output.
enum Waited {
    Spawn(io::Error),
    TimedOut(std::time::Duration),
}

/// `cmd.output()`, but the child is killed (and reaped) once `timeout` has passed. Its
/// stdout and stderr are read by two threads meanwhile, so a chatty child cannot block
/// on a full pipe.
fn output_within(
    cmd: &mut Command,
    timeout: Option<std::time::Duration>,
) -> std::result::Result<std::process::Output, Waited> {
    let Some(limit) = timeout else {
        return cmd.stdin(Stdio::null()).output().map_err(Waited::Spawn);
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Waited::Spawn)?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = Read::read_to_end(&mut p, &mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= limit => {
                // Our own child, by its handle. The readers are left to end at EOF,
                // not joined: a grandchild may hold the pipes open longer.
                let _ = child.kill();
                let _ = child.wait();
                return Err(Waited::TimedOut(limit));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(Waited::Spawn(e)),
        }
    };
    Ok(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Parses the script's report: the last non-empty line of its standard output.
fn parse_report(stdout: &str) -> std::result::Result<PeerResult, PeerError> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let bad = |reason: String| PeerError::BadOutput {
        reason,
        line: line.chars().take(200).collect(),
    };
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
    if let Some(e) = v.get("error") {
        let e = e.as_str().map_or_else(|| e.to_string(), str::to_string);
        return Err(
            if v.get("unavailable") == Some(&serde_json::Value::Bool(true)) {
                PeerError::Unavailable(e)
            } else {
                PeerError::Reported(e)
            },
        );
    }
    serde_json::from_value(v).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocuda::Complex;
    use ferrocuda::sparse::{BcsrParts, BlockLayout};

    #[test]
    fn npy_header_exact_bytes() {
        // What NumPy 2.4's `np.save` writes for `np.array([1, 2, 3], dtype='<i4')`: the
        // 57-byte dictionary, spaces up to 127 bytes in all, a newline; header length 118.
        let dict = b"{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
        let mut want = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        want.extend_from_slice(dict);
        want.resize(127, b' ');
        want.push(b'\n');
        assert_eq!(npy_header("<i4", 3), want);
    }

    #[test]
    fn npy_header_is_padded_to_64_with_a_newline() {
        for (descr, len, total) in [
            ("<i4", 0, 128),
            ("<c16", 1, 128),
            ("<f4", 123_456_789, 128),
            ("<i8", usize::MAX, 128),
        ] {
            let h = npy_header(descr, len);
            assert_eq!(h.len(), total, "{descr} {len}");
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, h.len() - 10);
            assert_eq!(h.last(), Some(&b'\n'));
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert!(text.contains(&format!("'shape': ({len},)")), "{text}");
            assert!(text.contains(&format!("'descr': '{descr}'")), "{text}");
        }
        // Longer descriptors move on to the next multiple of 64.
        assert_eq!(npy_header(&"x".repeat(64), 1).len(), 192);
    }

    #[test]
    fn descr_of_each_scalar() {
        assert_eq!(npy_descr::<f32>(), "<f4");
        assert_eq!(npy_descr::<f64>(), "<f8");
        assert_eq!(npy_descr::<Complex<f32>>(), "<c8");
        assert_eq!(npy_descr::<Complex<f64>>(), "<c16");
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ferrocuda-peer-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn read(dir: &Path, name: &str) -> Vec<u8> {
        std::fs::read(dir.join(format!("{name}.npy"))).unwrap()
    }

    /// The 2x2-block matrix [[1 2 0 0] [3 4 0 0] [0 0 5 6] [7 8 0 9]] without zeros
    /// dropped, as BCSR (column-major blocks) and CSR.
    fn small() -> (Bcsr<f64>, Csr<f64>) {
        let a = Bcsr::from_parts(BcsrParts {
            b: 2,
            layout: BlockLayout::ColMajor,
            n_block_rows: 2,
            n_block_cols: 2,
            row_ptr: vec![0, 1, 3],
            col_idx: vec![0, 0, 1],
            values: vec![1., 3., 2., 4., 0., 7., 0., 8., 5., 0., 6., 9.],
        })
        .unwrap();
        let c = a.to_csr();
        (a, c)
    }

    #[test]
    fn export_csr_writes_the_arrays() {
        let (_, c) = small();
        let dir = temp_dir("csr");
        let b = [1.0, 2.0, 3.0, 4.0];
        export_csr(&dir, &c, &b).unwrap();
        let h = npy_header("<i4", 5).len();
        let indptr = read(&dir, "indptr");
        let want: Vec<u8> = [0i32, 2, 4, 8, 12]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(&indptr[..h], &npy_header("<i4", 5)[..]);
        assert_eq!(&indptr[h..], &want[..]);
        let data = read(&dir, "data");
        let want: Vec<u8> = [1., 2., 3., 4., 0., 0., 5., 6., 7., 8., 0., 9.]
            .iter()
            .flat_map(|v: &f64| v.to_le_bytes())
            .collect();
        assert_eq!(&data[..h], &npy_header("<f8", 12)[..]);
        assert_eq!(&data[h..], &want[..]);
        let idx = read(&dir, "indices");
        let want: Vec<u8> = [0i32, 1, 0, 1, 0, 1, 2, 3, 0, 1, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(&idx[h..], &want[..]);
        assert_eq!(read(&dir, "b").len(), h + 32);
        remove_export(&dir).unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn export_bcsr_matches_export_csr() {
        let (a, c) = small();
        let b = [1.0, 2.0, 3.0, 4.0];
        let (d1, d2) = (temp_dir("bcsr1"), temp_dir("bcsr2"));
        export_bcsr(&d1, &a, &b).unwrap();
        export_csr(&d2, &c, &b).unwrap();
        let a_row = a.with_layout(BlockLayout::RowMajor);
        assert_eq!(a_row.layout(), BlockLayout::RowMajor);
        let d3 = temp_dir("bcsr3");
        export_bcsr(&d3, &a_row, &b).unwrap();
        for f in FILES {
            assert_eq!(read(&d1, f), read(&d2, f), "{f}");
            assert_eq!(read(&d3, f), read(&d2, f), "{f}");
        }
        for d in [d1, d2, d3] {
            remove_export(&d).unwrap();
        }
    }

    #[test]
    fn export_rejects_bad_shapes() {
        let (_, c) = small();
        let dir = temp_dir("bad");
        assert!(export_csr(&dir, &c, &[1.0; 3]).is_err());
        assert!(!dir.exists(), "nothing written on failure");
        let rect = Csr::<f64>::try_new(2, 3, vec![0, 0, 0], vec![], vec![]).unwrap();
        assert!(export_csr(&dir, &rect, &[0.0; 2]).is_err());
    }

    #[test]
    fn report_parsing() {
        let ok = r#"{"backend": "scipy", "n": 4, "nnz": 12, "dtype": "float64", "rtol": 1e-08, "version": "1.17.1", "device": "cpu", "restart": 4, "maxiter_arg": 10, "steps": 3, "seconds": 0.001, "relative_residual": 1e-12, "info": 0, "ms_per_step": null}"#;
        let r = parse_report(&format!("noise\n{ok}\n\n")).unwrap();
        assert_eq!((r.steps, r.info, r.ms_per_step), (3, 0, None));
        let e = parse_report(
            r#"{"backend": "cupy", "error": "cupy not available: No module named 'cupy'"}"#,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "cupy not available: No module named 'cupy'");
        let e = parse_report(
            r#"{"backend": "cupy", "error": "cupy sees no GPU", "unavailable": true}"#,
        )
        .unwrap_err();
        assert!(matches!(e, PeerError::Unavailable(_)), "{e:?}");
        assert!(e.backend_unavailable());
        let ok = r#"{"backend": "cupy", "n": 4, "nnz": 12, "dtype": "complex128", "rtol": 1e-08, "version": "14.2.0", "device": "GPU", "restart": 4, "maxiter_arg": 8, "steps": 4, "seconds": 0.01, "relative_residual": 1e-12, "info": 0, "ms_per_step": 2.5, "precond": "ilu0", "precond_detail": "ilu0: cupyx spilu(fill_factor=1)", "side": "right", "precond_nnz": 12, "setup_seconds": 0.5, "host_io": true}"#;
        let r = parse_report(ok).unwrap();
        assert_eq!(r.precond, "ilu0");
        assert_eq!(
            (r.side.as_deref(), r.precond_nnz),
            (Some("right"), Some(12))
        );
        assert_eq!((r.setup_seconds, r.host_io), (Some(0.5), true));
        assert!(matches!(parse_report(""), Err(PeerError::BadOutput { .. })));
        assert!(matches!(
            parse_report(r#"{"backend": "scipy"}"#),
            Err(PeerError::BadOutput { .. })
        ));
    }

    /// Whether `$FERROCUDA_PYTHON` (or `python3`) runs `code` without error.
    fn python_can(code: &str) -> bool {
        let probe = Command::new(python())
            .args(["-c", code])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        matches!(probe, Ok(s) if s.success())
    }

    /// Runs the script's `backend` on a diagonally dominant complex tridiagonal system of
    /// 40 rows (solution all ones): converged, then cut off by a budget of 7 steps.
    fn check_peer(backend: &str) {
        let n = 40;
        let mut coo =
            ferrocuda::sparse::Coo::<Complex<f64>>::try_new(n, n, vec![], vec![], vec![]).unwrap();
        for i in 0..n {
            coo.push(i, i, Complex::new(4.0, 1.0)).unwrap();
            if i > 0 {
                coo.push(i, i - 1, Complex::new(-1.0, 0.5)).unwrap();
            }
            if i + 1 < n {
                coo.push(i, i + 1, Complex::new(-1.0, 0.0)).unwrap();
            }
        }
        let a = Csr::from(&coo);
        let (one, zero) = (Complex::new(1.0, 0.0), Complex::new(0.0, 0.0));
        let mut b = vec![zero; n];
        ferrocuda::sparse::cpu::spmv_csr(one, &a, &vec![one; n], zero, &mut b).unwrap();
        let dir = temp_dir(backend);
        export_csr(&dir, &a, &b).unwrap();
        let solved = run_peer(backend, &dir, 10, 1e-10, 100);
        let cut = run_peer(backend, &dir, 4, 1e-30, 7);
        remove_export(&dir).unwrap();
        let r = solved.unwrap();
        eprintln!("{backend}: {r:?}");
        assert_eq!((r.backend.as_str(), r.n, r.nnz), (backend, n, a.nnz()));
        assert_eq!(r.dtype, "complex128");
        assert_eq!(r.info, 0);
        assert!(r.steps > 0 && r.steps <= 100, "{r:?}");
        assert!(r.relative_residual.unwrap() <= 1e-10, "{r:?}");
        // Not converged within the budget: SciPy stops after exactly 7 steps, CuPy after
        // the one whole cycle of 4 that fits.
        let r = cut.unwrap();
        eprintln!("{backend}: {r:?}");
        assert_eq!(r.steps, if backend == "cupy" { 4 } else { 7 }, "{r:?}");
        assert!(r.info > 0, "{r:?}");
    }

    /// Each preconditioner of the script on the same system: converged to the true
    /// residual, with its set-up time, side and (ILU) factor entries reported, and the
    /// host transfers timed where asked (CuPy). The last row and column store nothing (a
    /// ghost row of the generated cases, `b` zero there): the preconditioners take it as
    /// the identity's row and say so.
    fn check_preconditioned_peer(backend: &str) {
        let n = 41;
        let mut coo =
            ferrocuda::sparse::Coo::<Complex<f64>>::try_new(n, n, vec![], vec![], vec![]).unwrap();
        for i in 0..n - 1 {
            coo.push(i, i, Complex::new(3.0 + i as f64, 1.0)).unwrap();
            if i > 0 {
                coo.push(i, i - 1, Complex::new(-1.0, 0.5)).unwrap();
            }
            if i + 2 < n {
                coo.push(i, i + 1, Complex::new(-1.0, 0.0)).unwrap();
            }
        }
        let a = Csr::from(&coo);
        let mut b = vec![Complex::new(1.0, -1.0); n];
        b[n - 1] = Complex::new(0.0, 0.0);
        let dir = temp_dir(&format!("{backend}-precond"));
        export_csr(&dir, &a, &b).unwrap();
        let side = if backend == "cupy" { "right" } else { "left" };
        let mut results = Vec::new();
        for precond in ["none", "jacobi", "ilu0", "ilu"] {
            let mut o = PeerOptions::new(backend, 10, 1e-10, 200);
            o.precond = precond.into();
            o.host_io = true;
            o.timeout = Some(std::time::Duration::from_secs(120));
            results.push((precond, run_peer_with(&dir, &o)));
        }
        remove_export(&dir).unwrap();
        for (precond, r) in results {
            let r = r.unwrap();
            eprintln!("{backend} {precond}: {r:?}");
            assert_eq!(r.precond, precond);
            assert_eq!(r.info, 0, "{r:?}");
            assert!(r.relative_residual.unwrap() <= 1e-10, "{r:?}");
            assert!(r.setup_seconds.unwrap() >= 0.0, "{r:?}");
            assert_eq!(r.host_io, backend == "cupy", "{r:?}");
            if precond == "none" {
                assert_eq!(r.side, None);
            } else {
                assert_eq!(r.side.as_deref(), Some(side), "{r:?}");
                let detail = r.precond_detail.as_deref().unwrap();
                assert!(detail.starts_with(precond), "{r:?}");
                assert!(detail.contains("rows storing no entry (1)"), "{r:?}");
            }
            if precond == "ilu0" || precond == "ilu" {
                assert!(r.precond_nnz.unwrap() > 0, "{r:?}");
            }
            // A tridiagonal matrix (with an identity row) has an exact LU without fill:
            // CuPy's ILU(0) and SciPy's default spilu find it (one step; CuPy counts its
            // whole cycle). SciPy's ILU(0)-like spilu drops entries of A: more steps.
            if (backend == "cupy" && precond == "ilu0") || precond == "ilu" {
                assert!(r.steps <= if backend == "cupy" { 10 } else { 2 }, "{r:?}");
            }
        }
    }

    /// SciPy's GMRES through the script; skipped (with a message) where the interpreter
    /// has no NumPy and SciPy.
    #[test]
    fn scipy_peer_solves_a_small_system() {
        if !python_can("import numpy, scipy") {
            eprintln!(
                "skipped: scipy_peer_solves_a_small_system: `{}` cannot import numpy and scipy \
                 (set FERROCUDA_PYTHON)",
                python()
            );
            return;
        }
        check_peer("scipy");
        check_preconditioned_peer("scipy");
    }

    /// CuPy's GMRES through the script; skipped (with a message) where the interpreter has
    /// no CuPy or CuPy sees no GPU.
    #[test]
    fn cupy_peer_solves_a_small_system() {
        if !python_can("import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0") {
            eprintln!(
                "skipped: cupy_peer_solves_a_small_system: `{}` has no CuPy with a GPU \
                 (set FERROCUDA_PYTHON)",
                python()
            );
            return;
        }
        check_peer("cupy");
        check_preconditioned_peer("cupy");
    }

    /// Where the interpreter has no CuPy, the script says so as "unavailable" (the
    /// backend, not one configuration), before it reads any file.
    #[test]
    fn a_missing_library_is_reported_as_unavailable() {
        if python_can("import cupy") {
            eprintln!("skipped: a_missing_library_is_reported_as_unavailable: CuPy is here");
            return;
        }
        if !python_can("import json") {
            eprintln!(
                "skipped: a_missing_library_is_reported_as_unavailable: no `{}`",
                python()
            );
            return;
        }
        let dir = temp_dir("unavailable");
        std::fs::create_dir_all(&dir).unwrap();
        let e = run_peer("cupy", &dir, 30, 1e-8, 100).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(e, PeerError::Unavailable(_)), "{e:?}");
        assert!(e.backend_unavailable());
        assert!(e.to_string().contains("cupy"), "{e}");
    }

    /// A script that outlives its time limit is stopped and reported as such.
    #[test]
    fn a_peer_past_its_time_limit_is_stopped() {
        let dir = temp_dir("timeout");
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("sleep.sh");
        std::fs::write(&script, "sleep 30\n").unwrap();
        let mut opts = PeerOptions::new("scipy", 30, 1e-8, 100);
        opts.timeout = Some(std::time::Duration::from_millis(300));
        let t = std::time::Instant::now();
        let e = run_script("sh", &script, &dir, &opts).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(e, PeerError::TimedOut { .. }), "{e:?}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            t.elapsed()
        );
        assert!(!e.backend_unavailable());
        assert!(e.to_string().contains("time limit"), "{e}");
    }

    #[test]
    fn missing_python_is_an_error_not_a_panic() {
        let dir = temp_dir("nopython");
        let mut opts = PeerOptions::new("cupy", 30, 1e-8, 100);
        let e = run_script("/nonexistent/python3", &dir.join(SCRIPT), &dir, &opts).unwrap_err();
        assert!(matches!(e, PeerError::NoPython { .. }), "{e:?}");
        assert!(e.to_string().contains("FERROCUDA_PYTHON"), "{e}");
        assert!(e.backend_unavailable());
        opts.timeout = Some(std::time::Duration::from_secs(5));
        let e = run_script("/nonexistent/python3", &dir.join(SCRIPT), &dir, &opts).unwrap_err();
        assert!(matches!(e, PeerError::NoPython { .. }), "{e:?}");
    }

    /// Without an override the embedded script is written beside the export (whatever
    /// the working directory) and removed with it.
    #[test]
    fn the_embedded_script_is_written_beside_the_export() {
        let (_, c) = small();
        let dir = temp_dir("script");
        export_csr(&dir, &c, &[1.0; 4]).unwrap();
        let path = script_for(&dir, None).unwrap();
        assert_eq!(path, dir.join(SCRIPT));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SCRIPT_TEXT);
        assert!(SCRIPT_TEXT.contains("--backend"), "the peer script itself");
        remove_export(&dir).unwrap();
        assert!(!dir.exists(), "script and export removed together");
    }

    /// `FERROCUDA_SCRIPTS` names a directory: its script is run, and a directory without
    /// one is an error naming the path looked at.
    #[test]
    fn an_override_directory_is_used_or_named() {
        let (over, export) = (temp_dir("override"), temp_dir("override-export"));
        std::fs::create_dir_all(&over).unwrap();
        let e = script_for(&export, Some(&over)).unwrap_err();
        assert!(
            e.to_string()
                .contains(&over.join(SCRIPT).display().to_string()),
            "{e}"
        );
        assert!(e.to_string().contains("FERROCUDA_SCRIPTS"), "{e}");
        std::fs::write(over.join(SCRIPT), "# edited copy").unwrap();
        assert_eq!(script_for(&export, Some(&over)).unwrap(), over.join(SCRIPT));
        assert!(!export.exists(), "nothing written with an override");
        std::fs::remove_dir_all(&over).unwrap();
    }

    #[test]
    fn an_unwritable_export_directory_is_an_error_not_a_panic() {
        let e = script_for(Path::new("/proc/ferrocuda/nope"), None).unwrap_err();
        assert!(matches!(e, PeerError::WriteScript { .. }), "{e:?}");
        assert!(
            e.to_string().contains("/proc/ferrocuda/nope/gmres_peer.py"),
            "{e}"
        );
    }
}
