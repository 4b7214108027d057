//! Machine code at build time: the PTX assembled by NVIDIA's `ptxas` for the common GPU
//! architectures and packed, with the PTX itself, into one compressed fatbin per module.
//! The driver then loads the SASS matching the device at once instead of JIT-compiling
//! hundreds of kernels on first use (about 25 s on an H100 with an empty JIT cache); the
//! PTX inside serves architectures that have no SASS here.
//!
//! `ptxas` and `fatbinary` come from `FERROCUDA_PTXAS` (a path to `ptxas`), `ptxas` on
//! `PATH`, `$CUDA_HOME`/`$CUDA_PATH`/`/usr/local/cuda`, or else the NVIDIA Python wheel
//! `nvidia-cuda-nvcc` installed into `<target>/ptxas-venv` (shared with
//! `scripts/ptx-check`). When none can be had the build stays PTX-only and says so; it
//! never fails for that.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Architectures assembled by default (`FERROCUDA_CUBIN_ARCHS` overrides: a comma list,
/// or `none`). SASS of `sm_XY` runs on every `sm_XZ` with `Z >= Y`, so these cover
/// Ampere, Ada, Hopper and Blackwell; newer majors use the PTX.
const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

/// The assemblers found, and their version line.
pub struct Tools {
    ptxas: PathBuf,
    fatbinary: PathBuf,
    pub version: String,
}

/// Finds `ptxas` and `fatbinary`, installing the wheel when nothing else has them.
/// `Err` says why there are none (for the build's warning).
pub fn find_tools(out_dir: &Path) -> Result<Tools, String> {
    println!("cargo:rerun-if-env-changed=FERROCUDA_PTXAS");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = env::var_os("FERROCUDA_PTXAS") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = env::var_os(var) {
            candidates.push(PathBuf::from(root).join("bin/ptxas"));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin/ptxas"));
    if let Some(tools) = candidates.iter().find_map(|p| tools_at(p)) {
        return Ok(tools);
    }
    let venv = venv_dir(out_dir);
    if let Some(tools) = venv_ptxas(&venv).and_then(|p| tools_at(&p)) {
        return Ok(tools);
    }
    install_wheel(&venv)?;
    venv_ptxas(&venv)
        .and_then(|p| tools_at(&p))
        .ok_or_else(|| format!("the wheel installed into {} has no ptxas", venv.display()))
}

/// `<target>`, where `OUT_DIR` is `<target>/<profile>/build/<package>/out` (else
/// `OUT_DIR` itself).
pub fn target_dir(out_dir: &Path) -> &Path {
    out_dir
        .ancestors()
        .nth(4)
        .filter(|t| t.join("CACHEDIR.TAG").exists())
        .unwrap_or(out_dir)
}

/// `<target>/ptxas-venv` (the one `scripts/ptx-check` uses).
fn venv_dir(out_dir: &Path) -> PathBuf {
    target_dir(out_dir).join("ptxas-venv")
}

fn venv_ptxas(venv: &Path) -> Option<PathBuf> {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib).ok()?.flatten().find_map(|py| {
        let nvidia = py.path().join("site-packages/nvidia");
        std::fs::read_dir(nvidia).ok()?.flatten().find_map(|d| {
            let p = d.path().join("bin/ptxas");
            p.is_file().then_some(p)
        })
    })
}

fn install_wheel(venv: &Path) -> Result<(), String> {
    println!(
        "cargo:warning=no ptxas found: installing the NVIDIA wheel nvidia-cuda-nvcc into {} (once) to build machine code",
        venv.display()
    );
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        match cmd.output() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "{what} failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => Err(format!("{what} could not start: {e}")),
        }
    };
    if !venv.join("bin/pip").exists() {
        run(
            Command::new("python3").arg("-m").arg("venv").arg(venv),
            "python3 -m venv",
        )?;
    }
    run(
        Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "nvidia-cuda-nvcc",
        ]),
        "pip install nvidia-cuda-nvcc",
    )
}

/// The tools when `ptxas` at `path` runs and `fatbinary` lies beside it.
fn tools_at(ptxas: &Path) -> Option<Tools> {
    let fatbinary = ptxas.with_file_name("fatbinary");
    if !ptxas.is_file() || !fatbinary.is_file() {
        return None;
    }
    let out = Command::new(ptxas).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("release"))
        .unwrap_or("ptxas")
        .trim()
        .to_string();
    Some(Tools {
        ptxas: ptxas.to_path_buf(),
        fatbinary,
        version,
    })
}

/// The architectures to assemble: `FERROCUDA_CUBIN_ARCHS` or the defaults.
pub fn requested_archs() -> Vec<String> {
    println!("cargo:rerun-if-env-changed=FERROCUDA_CUBIN_ARCHS");
    match env::var("FERROCUDA_CUBIN_ARCHS") {
        Ok(list) if list.trim() == "none" => Vec::new(),
        Ok(list) => list
            .split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect(),
        Err(_) => DEFAULT_ARCHS.iter().map(|a| a.to_string()).collect(),
    }
}

/// `sm_90` -> 90 (`sm_90a` -> 90).
fn arch_number(arch: &str) -> Option<u32> {
    let digits: String = arch
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Assembles `ptx` (written at `ptx_path`, generated for `ptx_arch`) for each of `archs`
/// that the PTX may target and `ptxas` supports, and packs the cubins and the PTX into
/// the compressed fatbin `fatbin`. Returns the architectures with SASS inside; an arch
/// that fails to assemble is left out with a warning. Cubins are kept in `cache` by the
/// hash of their PTX, arch and assembler, so other builds of the same kernels (another
/// profile or feature set) reuse them.
pub fn build_fatbin(
    tools: &Tools,
    ptx_path: &Path,
    ptx_arch: &str,
    archs: &[String],
    fatbin: &Path,
    cache: &Path,
) -> Result<Vec<String>, String> {
    let ptx = std::fs::read(ptx_path).map_err(|e| format!("{}: {e}", ptx_path.display()))?;
    let supported = Command::new(&tools.ptxas)
        .arg("--list-arch")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let min = arch_number(ptx_arch).unwrap_or(0);
    let targets: Vec<&String> = archs
        .iter()
        .filter(|a| arch_number(a).is_some_and(|n| n >= min))
        .filter(|a| {
            let n = a.trim_start_matches("sm_");
            supported
                .split_whitespace()
                .any(|s| s == n || s == a.as_str())
        })
        .collect();

    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let stem = fatbin
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // One ptxas per architecture, side by side; a cubin already made from the same PTX
    // by the same ptxas is reused.
    let results: Vec<(String, Result<PathBuf, String>)> = std::thread::scope(|s| {
        let jobs: Vec<_> = targets
            .iter()
            .map(|arch| {
                let mut h = DefaultHasher::new();
                (&ptx, arch.as_str(), &tools.version).hash(&mut h);
                let cubin = cache.join(format!("{stem}-{arch}-{:016x}.cubin", h.finish()));
                let arch = arch.to_string();
                s.spawn(move || {
                    if cubin.is_file() {
                        return (arch, Ok(cubin));
                    }
                    // Unique per process: two builds may assemble the same cubin at once.
                    let tmp = cubin.with_extension(format!("{}.tmp", std::process::id()));
                    let out = Command::new(&tools.ptxas)
                        .arg(format!("-arch={arch}"))
                        .arg("-O3")
                        .arg(ptx_path)
                        .arg("-o")
                        .arg(&tmp)
                        .output();
                    let result = match out {
                        Ok(o) if o.status.success() => std::fs::rename(&tmp, &cubin)
                            .map(|()| cubin)
                            .map_err(|e| e.to_string()),
                        Ok(o) => Err(String::from_utf8_lossy(&o.stderr)
                            .lines()
                            .take(3)
                            .collect::<Vec<_>>()
                            .join(" / ")),
                        Err(e) => Err(e.to_string()),
                    };
                    (arch, result)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("a ptxas thread panicked"))
            .collect()
    });

    // Cubins of earlier versions of these kernels are not needed again (the cache is
    // shared by the modules: only this one's, `<stem>-sm_*`, are looked at).
    let keep: Vec<&PathBuf> = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .collect();
    if let Ok(entries) = std::fs::read_dir(cache) {
        for old in entries.flatten().map(|e| e.path()) {
            let ours = old
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(stem.as_str()))
                .is_some_and(|rest| rest.starts_with("-sm_"));
            if ours && !keep.contains(&&old) {
                let _ = std::fs::remove_file(old);
            }
        }
    }

    let mut cmd = Command::new(&tools.fatbinary);
    cmd.arg(format!("--create={}", fatbin.display()))
        .args(["-64", "--compress-all"]);
    let mut built = Vec::new();
    for (arch, result) in results {
        match result {
            Ok(cubin) => {
                let n = arch_number(&arch).unwrap_or(0);
                cmd.arg(format!("--image3=kind=elf,sm={n},file={}", cubin.display()));
                built.push(arch);
            }
            Err(e) => {
                println!("cargo:warning=ptxas could not assemble the kernels for {arch}: {e}")
            }
        }
    }
    cmd.arg(format!(
        "--image3=kind=ptx,sm={min},file={}",
        ptx_path.display()
    ));
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(built),
        Ok(o) => Err(format!(
            "fatbinary failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("fatbinary could not start: {e}")),
    }
}
