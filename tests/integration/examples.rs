//! The programs in `examples/`: each builds, runs with no arguments within a time bound,
//! says where it ran and passes its own check; `spmv_gmres` also takes a file. The
//! standalone crate (`examples/standalone`, outside the workspace, the library by path)
//! builds, solves a Matrix Market file and rejects bad input with a message.
//!
//! The builds go through the `cargo` that runs the tests, into this test's own target
//! directory, so nothing is compiled twice.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ferrocuda::sparse::{Coo, mm};

/// The examples that run without arguments (`mpi_gmres` needs the `mpi` feature).
const EXAMPLES: [&str; 6] = [
    "spmv_gmres",
    "rock4_heat",
    "multigrid_poisson",
    "lu_solve",
    "sfmt_streams",
    "mpc_swarm",
];

/// Longest a program may run (seconds; each takes well under a few seconds in release).
const TIME_LIMIT: u64 = 120;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Whether the source tree these tests build from is here; where it is not (a packed
/// test binary run on another machine, see scripts/gpu-pack), says so and the test
/// skips: the examples are built from source, so there is nothing to run.
fn source_tree_or_skip(test: &str) -> bool {
    let manifest = root().join("Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // A copy of the source tree without a Rust toolchain (a GPU machine the tests were
    // carried to) cannot build the examples either.
    let has_cargo = Command::new(&cargo)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if manifest.is_file() && has_cargo {
        return true;
    }
    // Straight to stderr: libtest captures the print macros of passing tests.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no source tree at {} or no cargo (a packed run builds no examples)",
        root().display()
    );
    false
}

/// `<target>` of this test binary (`<target>/release/deps/examples-<hash>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.ancestors()
        .nth(3)
        .expect("target directory")
        .to_path_buf()
}

/// Runs `cargo build --release <args>` from the repository root into [`target_dir`].
fn cargo_build(args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .env("CARGO_TARGET_DIR", target_dir())
        .args(["build", "--release", "--quiet"])
        .args(args)
        .output()
        .expect("running cargo");
    assert!(
        out.status.success(),
        "cargo build --release {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `program` with `args`, killing it after [`TIME_LIMIT`] seconds.
fn run_bounded(program: &Path, args: &[&Path]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let start = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().expect("wait") {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > Duration::from_secs(TIME_LIMIT) {
            child.kill().expect("kill");
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!(
                "{} ran longer than {TIME_LIMIT} s; stderr: {err}",
                program.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stdout of a run that must succeed, say where it ran and pass its check.
fn passed(name: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name}: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("device: GPU") || stdout.contains("device: CPU"),
        "{name} does not say where it ran:\n{stdout}"
    );
    assert!(stdout.contains("check: passed"), "{name}:\n{stdout}");
    stdout
}

fn example(name: &str) -> PathBuf {
    target_dir().join("release").join("examples").join(name)
}

#[test]
fn every_example_runs_without_arguments_and_passes_its_check() {
    if !source_tree_or_skip("every_example_runs_without_arguments_and_passes_its_check") {
        return;
    }
    cargo_build(&["-p", "ferrocuda", "--examples"]);
    for name in EXAMPLES {
        let out = run_bounded(&example(name), &[]);
        let stdout = passed(name, &out);
        println!("--- {name}\n{stdout}");
    }
}

/// A 200 x 200 tridiagonal, diagonally dominant and nonsymmetric matrix as a Matrix
/// Market file in a fresh temporary directory.
fn matrix_file(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrocuda-examples-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let n = 200;
    let mut coo = Coo::<f64>::empty(n, n).expect("coo");
    for i in 0..n {
        coo.push(i, i, 3.0).expect("push");
        if i > 0 {
            coo.push(i, i - 1, -1.2).expect("push");
        }
        if i + 1 < n {
            coo.push(i, i + 1, -0.8).expect("push");
        }
    }
    let path = dir.join("tridiagonal.mtx");
    mm::write_coo(std::fs::File::create(&path).expect("create"), &coo).expect("write");
    path
}

#[test]
fn spmv_gmres_reads_the_file_it_is_given() {
    if !source_tree_or_skip("spmv_gmres_reads_the_file_it_is_given") {
        return;
    }
    cargo_build(&["-p", "ferrocuda", "--example", "spmv_gmres"]);
    let path = matrix_file("spmv-gmres");
    let out = run_bounded(&example("spmv_gmres"), &[&path]);
    let stdout = passed("spmv_gmres A.mtx", &out);
    assert!(stdout.contains("200 x 200 with 598 entries"), "{stdout}");
    // A file that is not there: an error naming it, not a panic.
    let missing = path.with_file_name("missing.mtx");
    let out = run_bounded(&example("spmv_gmres"), &[&missing]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{out:?}"
    );
}

#[test]
fn standalone_crate_builds_against_the_library_and_solves_a_file() {
    if !source_tree_or_skip("standalone_crate_builds_against_the_library_and_solves_a_file") {
        return;
    }
    let manifest = root().join("examples/standalone/Cargo.toml");
    cargo_build(&["--manifest-path", manifest.to_str().expect("utf-8 path")]);
    let exe = target_dir().join("release").join("ferrocuda-standalone");
    let path = matrix_file("standalone");
    let out = run_bounded(&exe, &[&path]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("device: GPU") || stdout.contains("device: CPU"),
        "{stdout}"
    );
    assert!(stdout.contains("converged true"), "{stdout}");
    let residual: f64 = stdout
        .rsplit("|b - A x| / |b| = ")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no residual in {stdout}"));
    assert!(residual <= 1e-9, "{stdout}");
    // No file: the usage, exit status 1.
    let out = run_bounded(&exe, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: ferrocuda-standalone A.mtx"));
}
