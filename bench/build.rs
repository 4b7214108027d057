//! Records the source tree's `git describe --always --dirty` at build time as
//! `FERROCUDA_GIT_DESCRIBE` (the commit every results file names, `src/output.rs`);
//! "unknown" where git or the repository is absent (a packaged or copied source tree).

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest_dir);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FERROCUDA_GIT_DESCRIBE");
    let describe = std::env::var("FERROCUDA_GIT_DESCRIBE")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| describe(dir))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FERROCUDA_GIT_DESCRIBE={describe}");
}

/// `git describe --always --dirty` where this crate's manifest is tracked by git (not a
/// copy under `target/package` or a registry), with reruns on a new commit, a changed
/// index and changed sources of the workspace.
fn describe(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .current_dir(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    git(&["ls-files", "--error-unmatch", "Cargo.toml"])?;
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--git-path", "index"]),
        git(&["rev-parse", "--git-path", "refs"]),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ]
    .into_iter()
    .flatten()
    {
        let p = dir.join(path);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    // Edits that are not staged change `--dirty` too: rerun on the workspace's sources.
    if let Some(root) = dir.parent() {
        for sub in [
            "src",
            "host/src",
            "gpu-kernels/src",
            "gpu-kernels/macros/src",
            "bench/src",
            "cli/src",
            "repro/src",
            "build.rs",
            "Cargo.toml",
        ] {
            let p = root.join(sub);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    git(&["describe", "--always", "--dirty"]).filter(|s| !s.is_empty())
}
