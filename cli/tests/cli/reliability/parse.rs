//! The option parser under random argument vectors (bounded property tests, no GPU):
//! in-process, parsing and checking the options never panics, whatever the words;
//! through the binary, random command lines with real files at hand end with a
//! documented exit status, never a panic or an abort.

use proptest::prelude::*;

/// Words a command line is made of: subcommands, options, values good and bad.
const WORDS: &[&str] = &[
    "tour",
    "info",
    "probe",
    "mg",
    "lu",
    "spmv",
    "solve",
    "rock4",
    "mpc",
    "rng",
    "sfmt",
    "bench",
    "blas1",
    "gmres",
    "scaling",
    "spmv-thesis",
    "--json",
    "--quiet",
    "--device",
    "--matrix",
    "--x",
    "--rhs",
    "--out",
    "--x0",
    "--restart",
    "--tol",
    "--atol",
    "--max-iter",
    "--block-size",
    "--block",
    "--format",
    "--precond",
    "--orth",
    "--n",
    "--base",
    "--cycles",
    "--nu1",
    "--nu2",
    "--inner",
    "--omega",
    "--objects",
    "--horizon",
    "--steps",
    "--margin",
    "--frame-every",
    "--frames",
    "--seed",
    "--seed-array",
    "--count",
    "--bits",
    "--mexp",
    "--sizes",
    "--reps",
    "--case",
    "--cases",
    "--problem",
    "--t-end",
    "--rtol",
    "--nu",
    "--max-steps",
    "--large-log2",
    "--gpus",
    "--results-dir",
    "--thesis",
    "--quick",
    "--precision",
    "--pivoting",
    "--help",
    "-h",
    "--version",
    "0",
    "1",
    "-1",
    "5",
    "1e11",
    "1e400",
    "-1e3",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "0x10",
    "cpu",
    "gpu",
    "gpu:3",
    "heat",
    "jahn",
    "csr",
    "bcsr",
    "sbell",
    "f32",
    "f64",
    "v",
    "w",
    "fmg",
    "abl",
    "jacobi",
    "block-jacobi",
    "300x300x300x1",
    "2x4x2x1",
    "4096,0",
    ",",
    "",
    "=",
    "--tol=-1",
    "--n=1e3",
    "\u{0}",
    "é",
    "A.mtx",
];

fn argv() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(WORDS).prop_map(str::to_string),
            1 => "\\PC{0,12}",
        ],
        0..10,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_command_lines_never_panic(words in argv()) {
        let args = std::iter::once("ferrocuda".to_string()).chain(words);
        if let Ok(cli) = ferrocuda_cli::parse(args) {
            let _ = cli.validate();
        }
    }
}

/// The command definition passes clap's own consistency checks.
#[test]
fn the_command_definition_is_consistent() {
    use clap::CommandFactory;
    ferrocuda_cli::Cli::command().debug_assert();
}

/// How long one random command line may run before the test stops it (a command that
/// takes its time, e.g. a benchmark, is not a failure).
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(4);

/// Runs `ferrocuda args` in `dir` under `ulimit -v` 4 GiB, stdout discarded, stderr
/// kept; `None` where it ran past [`RUN_LIMIT`] and was stopped.
fn run_bounded(
    dir: &std::path::Path,
    args: &[String],
) -> Option<(std::process::ExitStatus, String)> {
    use std::process::{Command, Stdio};
    let bin = crate::common::cli::ferrocuda().get_program().to_os_string();
    let err_path = dir.join("stderr.txt");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn");
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some((
                status,
                std::fs::read_to_string(&err_path).unwrap_or_default(),
            ));
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A subcommand that runs on the CPU, then random words, with real files at hand.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    let head =
        prop::sample::select(&["spmv", "solve", "lu", "rock4", "mg", "mpc", "rng", "bench"][..]);
    let tail = prop::collection::vec(
        prop_oneof![
            // A process's arguments cannot hold a NUL byte.
            3 => prop::sample::select(WORDS)
                .prop_filter("no NUL in an argument", |w| !w.contains('\0'))
                .prop_map(str::to_string),
            2 => prop::sample::select(&["A.mtx", "x.mtx", "y.mtx", "--device", "cpu", "sfmt", "lu"][..])
                .prop_map(str::to_string),
        ],
        0..10,
    );
    (head, tail).prop_map(|(h, t)| std::iter::once(h.to_string()).chain(t).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// Through the binary, with files to read and write: every random command line ends
    /// with a documented exit status (0 to 3), never a panic (101) or a signal (an abort).
    #[test]
    fn random_command_lines_through_the_binary_end_with_a_documented_status(args in command_line()) {
        let d = crate::common::cli::scratch("parse-binary");
        crate::common::cli::small_system(&d);
        if let Some((status, err)) = run_bounded(&d, &args) {
            prop_assert!(
                matches!(status.code(), Some(0..=3)),
                "{args:?}: {status:?}, stderr {err}"
            );
            prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
        }
        let _ = std::fs::remove_dir_all(d);
    }
}
