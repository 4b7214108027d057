//! Shared by the CLI tests: the binary under test and the GPU check for tests that run it
//! with `--device gpu`.

use std::process::Command;

/// The binary under test: `FERROCUDA_BIN` where set (packed test binaries on a GPU
/// machine, see scripts/gpu-pack), else the one cargo built.
pub fn ferrocuda() -> Command {
    let bin =
        std::env::var_os("FERROCUDA_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_ferrocuda").into());
    Command::new(bin)
}

/// Whether a GPU is present; with `FERROCUDA_REQUIRE_GPU=1` its absence is a failure.
pub fn gpu_present(test: &str) -> bool {
    if ferrocuda::gpu::count() > 0 {
        return true;
    }
    assert!(
        std::env::var("FERROCUDA_REQUIRE_GPU").as_deref() != Ok("1"),
        "{test}: FERROCUDA_REQUIRE_GPU=1 but no GPU"
    );
    eprintln!("SKIPPED {test}: no GPU");
    false
}

/// A fresh folder for one test's files (removed and recreated).
pub fn scratch(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ferrocuda-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `ferrocuda args...`, its output.
pub fn run(args: &[&str]) -> std::process::Output {
    ferrocuda().args(args).output().expect("run ferrocuda")
}

/// `ferrocuda command... args...`, which must succeed; its output.
pub fn run_ok(command: &[&str], args: &[&str]) -> std::process::Output {
    let out = run(&[command, args].concat());
    assert!(
        out.status.success(),
        "{command:?} {args:?}: {}",
        stderr(&out)
    );
    out
}

/// The report of `ferrocuda command... args... --json`, which must succeed.
pub fn json(command: &[&str], args: &[&str]) -> serde_json::Value {
    let out = run_ok(command, &[args, &["--json"]].concat());
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `ferrocuda command... args...`, which must fail with nothing on stdout; its stderr.
pub fn run_fails(command: &[&str], args: &[&str]) -> String {
    let out = run(&[command, args].concat());
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "{command:?} {args:?} succeeded: {err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{command:?} {args:?} printed to stdout"
    );
    err
}

/// `ferrocuda args...` under `ulimit -v kib` (the address space a process may use).
pub fn run_limited(kib: u64, args: &[&str]) -> std::process::Output {
    let bin = ferrocuda().get_program().to_os_string();
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(bin)
        .args(args)
        .output()
        .expect("run sh")
}

/// stderr as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An error as the contract says (docs/reliability.md): exit status `code`, no panic,
/// no abort, a message containing every needle, nothing on stdout.
pub fn assert_error(out: &std::process::Output, code: i32, needles: &[&str], what: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: status {:?}, stderr {err}",
        out.status
    );
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{what}: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{what}: {err:?} lacks {n:?}");
    }
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `A = diag(1, 2, 3)` and `x = (1, 2, 3)` in `dir`.
pub fn small_system(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, x) = (dir.join("A.mtx"), dir.join("x.mtx"));
    std::fs::write(
        &a,
        "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n3 3 3\n",
    )
    .unwrap();
    std::fs::write(
        &x,
        "%%MatrixMarket matrix array real general\n3 1\n1\n2\n3\n",
    )
    .unwrap();
    (a, x)
}

/// [`small_system`] in a fresh [`scratch`] folder: the folder, then the paths of `A.mtx`,
/// `x.mtx` and an output `out` in it, as text for argument lists.
pub fn small_system_args(test: &str, out: &str) -> (std::path::PathBuf, String, String, String) {
    let d = scratch(test);
    let (a, x) = small_system(&d);
    let out = d.join(out).display().to_string();
    (d, a.display().to_string(), x.display().to_string(), out)
}

/// `ferrocuda solve` of [`small_system`] in a fresh [`scratch`] folder (the output
/// `z.mtx` there) with `options`; the folder and the run's output.
pub fn solve_small(test: &str, options: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    let (d, a, x, out) = small_system_args(test, "z.mtx");
    let r = run(&[
        &["solve", "--matrix", &a, "--rhs", &x, "--out", &out],
        options,
    ]
    .concat());
    (d, r)
}

/// `ferrocuda solve --matrix a --rhs b --out out` followed by `extra`.
pub fn solve_args<'a>(a: &'a str, b: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [
        &["solve", "--matrix", a, "--rhs", b, "--out", out][..],
        extra,
    ]
    .concat()
}

/// [`small_system`] in a fresh [`scratch`] folder: the folder, `A.mtx`, `x.mtx` and the
/// path of an output `y.mtx` there.
pub fn small_system_in(
    test: &str,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let d = scratch(test);
    let (a, x) = small_system(&d);
    let out = d.join("y.mtx");
    (d, a, x, out)
}

/// `--matrix a --rhs b --out out`: the system and the output of `solve` and `lu`.
pub fn system_args<'a>(
    a: &'a std::path::Path,
    b: &'a std::path::Path,
    out: &'a std::path::Path,
) -> [&'a str; 6] {
    let text = |p: &'a std::path::Path| p.to_str().expect("a test path in UTF-8");
    ["--matrix", text(a), "--rhs", text(b), "--out", text(out)]
}

/// `ferrocuda rock4 --problem heat --n n` followed by `extra`: a small integration.
pub fn heat<'a>(n: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["rock4", "--problem", "heat", "--n", n][..], extra].concat()
}

/// `ferrocuda bench <args> --device cpu --results-dir results`.
pub fn bench_on_cpu<'a>(args: &[&'a str], results: &'a str) -> Vec<&'a str> {
    [
        &["bench"],
        args,
        &["--device", "cpu", "--results-dir", results],
    ]
    .concat()
}

/// `ferrocuda spmv --matrix a --x x --out out` followed by `extra`.
pub fn spmv_args<'a>(a: &'a str, x: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["spmv", "--matrix", a, "--x", x, "--out", out][..], extra].concat()
}

/// Writes `text` to `dir/name`; returns the path as text (for argument lists).
pub fn write_text(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The values of a Matrix Market array file the command wrote.
pub fn read_values(path: &std::path::Path) -> Vec<f64> {
    let f = std::fs::File::open(path).expect("output written");
    let (_, _, v) = ferrocuda::sparse::mm::read_dense::<f64, _>(std::io::BufReader::new(f))
        .expect("output parses");
    v
}
