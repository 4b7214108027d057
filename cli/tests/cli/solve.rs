//! `ferrocuda solve` as users call it: known solutions (real and complex) with every
//! preconditioner and orthogonalisation, the JSON report, a zero right-hand side,
//! non-convergence as a result, progress output, bad input (clear errors, `--out`
//! untouched), and the same on the GPU where there is one.

use crate::common;

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use common::cli::ferrocuda;
use common::krylov::{nonsymmetric, rel_err, to_c64};
use common::random_vec;
use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::sparse::{Coo, cpu, mm};

/// Whether the GPU variants run: a device is present. Without one the skip is said on
/// stderr (straight to the handle: libtest captures `eprintln!` of passing tests), and
/// with `FERROCUDA_REQUIRE_GPU=1` it is a failure.
fn gpu_present(test: &str) -> bool {
    if ferrocuda::gpu::count() > 0 {
        return true;
    }
    if std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("{test}: FERROCUDA_REQUIRE_GPU=1 but there is no GPU");
    }
    let _ = writeln!(std::io::stderr(), "skipped: no GPU ({test}: GPU part)");
    false
}

/// A nonsymmetric `n x n` system with known solution `x`, written as `A.mtx` and `b.mtx`
/// in `dir`; returns the paths and the solution.
struct Case<T> {
    a: PathBuf,
    b: PathBuf,
    x: Vec<T>,
}

fn write_coo<T: Element>(path: &Path, a: &Coo<T>) {
    let f = std::fs::File::create(path).expect("create matrix file");
    mm::write_coo(BufWriter::new(f), a).expect("write matrix");
}

fn write_vec<T: Element>(path: &Path, v: &[T]) {
    let f = std::fs::File::create(path).expect("create vector file");
    mm::write_dense(BufWriter::new(f), v.len(), 1, v).expect("write vector");
}

fn read_vec<T: Element>(path: &Path) -> Vec<T> {
    let f = std::fs::File::open(path).expect("solution written");
    let (n, m, v) = mm::read_dense::<T, _>(BufReader::new(f)).expect("solution parses");
    assert_eq!((m, v.len()), (1, n), "{}", path.display());
    v
}

fn case<T: Element>(dir: &Path, n: usize, seed: u64) -> Case<T> {
    let a = nonsymmetric::<T>(n, seed);
    let x: Vec<T> = random_vec(n, seed ^ 0x55);
    let mut b = vec![T::ZERO; n];
    cpu::spmv_coo(T::ONE, &a, &x, T::ZERO, &mut b).expect("b = A x");
    let (pa, pb) = (dir.join("A.mtx"), dir.join("b.mtx"));
    write_coo(&pa, &a);
    write_vec(&pb, &b);
    Case { a: pa, b: pb, x }
}

fn solve(a: &Path, b: &Path, out: &Path, extra: &[&str]) -> Output {
    ferrocuda()
        .args(["solve", "--matrix"])
        .arg(a)
        .arg("--rhs")
        .arg(b)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("run ferrocuda solve")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn json(out: &Output, what: &str) -> serde_json::Value {
    assert_ok(out, what);
    parse_json(out, what)
}

/// The JSON report of a solve that ended with exit status 3 (not converged).
fn json_not_converged(out: &Output, what: &str) -> serde_json::Value {
    assert_not_converged(out, what);
    parse_json(out, what)
}

/// Exit status 3: computed, not converged (docs/reliability.md).
fn assert_not_converged(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(3),
        "{what}\nstdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn parse_json(out: &Output, what: &str) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {}", text(&out.stdout)))
}

/// Solves `case` with every preconditioner and both orthogonalisations on `device` and
/// checks the solution against the known one.
fn solves_known_system<T: Element>(name: &str, dir: &Path, c: &Case<T>, device: &str) {
    let want: Vec<Complex<f64>> = c.x.iter().map(|&v| to_c64(v)).collect();
    let out = dir.join(format!("x-{device}.mtx"));
    for precond in ["none", "jacobi", "block-jacobi", "ilu0"] {
        for orth in ["cgs2", "mgs"] {
            for bs in ["5", "3"] {
                let what =
                    format!("{name} on {device}, precond {precond}, {orth}, block size {bs}");
                let _ = std::fs::remove_file(&out);
                let o = solve(
                    &c.a,
                    &c.b,
                    &out,
                    &[
                        "--precond",
                        precond,
                        "--orth",
                        orth,
                        "--block-size",
                        bs,
                        "--tol",
                        "1e-10",
                        "--restart",
                        "20",
                        "--device",
                        device,
                        "--json",
                        "--quiet",
                    ],
                );
                let v = json(&o, &what);
                assert_eq!(v["converged"], true, "{what}: {v}");
                assert_eq!(v["precond"], precond, "{what}");
                assert_eq!(v["device"], device, "{what}");
                let x: Vec<T> = read_vec(&out);
                let err = rel_err(&x, &want);
                assert!(err < 1e-6, "{what}: relative error {err:e}");
            }
        }
    }
    // ILU(0) with Jacobi-sweep triangular solves.
    for sweeps in ["1", "3"] {
        let what = format!("{name} on {device}, --precond ilu0 --ilu-sweeps {sweeps}");
        let _ = std::fs::remove_file(&out);
        let o = solve(
            &c.a,
            &c.b,
            &out,
            &[
                "--precond",
                "ilu0",
                "--ilu-sweeps",
                sweeps,
                "--tol",
                "1e-10",
                "--device",
                device,
                "--json",
                "--quiet",
            ],
        );
        let v = json(&o, &what);
        assert_eq!(v["converged"], true, "{what}: {v}");
        assert_eq!(v["ilu_sweeps"].to_string(), sweeps, "{what}");
        let x: Vec<T> = read_vec(&out);
        let err = rel_err(&x, &want);
        assert!(err < 1e-6, "{what}: relative error {err:e}");
    }
    // The matrix and/or the basis stored in f32, refined with the f64 residual.
    for (precond, storage, basis) in [
        ("none", "f32", "full"),
        ("ilu0", "f32", "full"),
        ("none", "full", "f32"),
        ("block-jacobi", "f32", "f32"),
    ] {
        let what =
            format!("{name} on {device}, --storage {storage} --basis {basis}, precond {precond}");
        let _ = std::fs::remove_file(&out);
        let o = solve(
            &c.a,
            &c.b,
            &out,
            &[
                "--storage",
                storage,
                "--basis",
                basis,
                "--precond",
                precond,
                "--tol",
                "1e-10",
                "--device",
                device,
                "--json",
                "--quiet",
            ],
        );
        let v = json(&o, &what);
        assert_eq!(v["converged"], true, "{what}: {v}");
        assert_eq!(v["storage"], storage, "{what}");
        assert_eq!(v["basis"], basis, "{what}");
        let passes = v["refinement"]["steps"]
            .as_array()
            .expect("refinement steps");
        assert!(!passes.is_empty(), "{what}: {v}");
        let x: Vec<T> = read_vec(&out);
        let err = rel_err(&x, &want);
        assert!(err < 1e-6, "{what}: relative error {err:e}");
    }
}

/// n = 47: not a multiple of the block sizes 5 and 3, so the padded path runs.
#[test]
fn solves_a_real_nonsymmetric_system_with_every_preconditioner() {
    let dir = common::cli::scratch("solve-real");
    let c = case::<f64>(&dir, 47, 3);
    solves_known_system("real", &dir, &c, "cpu");
    if gpu_present("solves_a_real_nonsymmetric_system_with_every_preconditioner") {
        solves_known_system("real", &dir, &c, "gpu");
    }
}

#[test]
fn solves_a_complex_system_with_every_preconditioner() {
    let dir = common::cli::scratch("solve-complex");
    let c = case::<Complex<f64>>(&dir, 43, 5);
    solves_known_system("complex", &dir, &c, "cpu");
    if gpu_present("solves_a_complex_system_with_every_preconditioner") {
        solves_known_system("complex", &dir, &c, "gpu");
    }
}

/// A real matrix file with a complex right-hand side: the solve is complex.
#[test]
fn a_complex_rhs_makes_the_solve_complex() {
    let dir = common::cli::scratch("solve-mixed");
    let n = 30;
    let a = nonsymmetric::<f64>(n, 9);
    let x: Vec<Complex<f64>> = random_vec(n, 10);
    let mut b = vec![Complex::new(0.0, 0.0); n];
    cpu::spmv_coo(
        Complex::new(1.0, 0.0),
        &a,
        &x,
        Complex::new(0.0, 0.0),
        &mut b,
    )
    .unwrap();
    let (pa, pb, out) = (dir.join("A.mtx"), dir.join("b.mtx"), dir.join("x.mtx"));
    write_coo(&pa, &a);
    write_vec(&pb, &b);
    let v = json(
        &solve(&pa, &pb, &out, &["--json", "--tol", "1e-10"]),
        "real A, complex b",
    );
    assert_eq!(v["scalar"], "c64");
    let got: Vec<Complex<f64>> = read_vec(&out);
    let err = rel_err(&got, &x);
    assert!(err < 1e-6, "relative error {err:e}");
}

#[test]
fn json_report_has_the_documented_fields() {
    let dir = common::cli::scratch("solve-json");
    let c = case::<f64>(&dir, 40, 13);
    let out = dir.join("x.mtx");
    // An initial guess close to the solution.
    let x0: Vec<f64> = c.x.iter().map(|v| v + 1e-3).collect();
    let px0 = dir.join("x0.mtx");
    write_vec(&px0, &x0);
    let o = solve(
        &c.a,
        &c.b,
        &out,
        &[
            "--json",
            "--x0",
            px0.to_str().unwrap(),
            "--precond",
            "jacobi",
            "--restart",
            "7",
        ],
    );
    let v = json(&o, "json");
    assert_eq!(v["converged"], true, "{v}");
    assert_eq!(v["reason"], "converged");
    assert_eq!(v["device"], "cpu");
    assert_eq!(v["precond"], "jacobi");
    assert_eq!(v["format"], "csr");
    assert_eq!(v["scalar"], "f64");
    assert_eq!(v["n"], 40);
    assert_eq!(v["restart"], 7);
    assert_eq!(v["orth"], "cgs2");
    let iterations = v["iterations"].as_u64().expect("iterations");
    let cycles = v["cycles"].as_u64().expect("cycles");
    assert!(
        iterations >= 1 && cycles >= 1 && cycles >= iterations.div_ceil(7),
        "{v}"
    );
    let rel = v["relative_residual"].as_f64().expect("relative_residual");
    assert!(rel <= 1e-8, "{v}");
    let res = v["residual"].as_f64().expect("residual");
    let bnorm = v["rhs_norm"].as_f64().expect("rhs_norm");
    assert!((res / bnorm - rel).abs() <= 1e-12 * (1.0 + rel), "{v}");
    assert!(v["initial_residual"].as_f64().unwrap() > res);
    for k in [
        "total",
        "spmv",
        "orthogonalization",
        "rest",
        "setup",
        "read",
    ] {
        let t = v["timing"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("timing.{k}: {v}"));
        assert!(t >= 0.0, "timing.{k} = {t}");
    }
    let history = v["history"].as_array().expect("history");
    assert_eq!(history.len() as u64, iterations);
    assert!(history.iter().all(|h| h.as_f64().is_some()));
    assert!(v["gpu_name"].is_null());
    assert_eq!(v["x0"], px0.to_str().unwrap());

    // Without --json, a short summary on stdout.
    let o = solve(&c.a, &c.b, &out, &[]);
    assert_ok(&o, "summary");
    let s = text(&o.stdout);
    assert!(
        s.contains("converged") && s.contains("relative residual") && s.contains("wrote"),
        "{s}"
    );
}

#[test]
fn zero_rhs_gives_zero_solution() {
    let dir = common::cli::scratch("solve-zero");
    let c = case::<f64>(&dir, 12, 21);
    let zero = dir.join("zero.mtx");
    write_vec(&zero, &[0.0; 12]);
    let px0 = dir.join("x0.mtx");
    write_vec(&px0, &[1.0; 12]);
    let out = dir.join("x.mtx");
    for device in ["cpu"]
        .into_iter()
        .chain(gpu_present("zero_rhs_gives_zero_solution").then_some("gpu"))
    {
        let _ = std::fs::remove_file(&out);
        let v = json(
            &solve(
                &c.a,
                &zero,
                &out,
                &["--json", "--x0", px0.to_str().unwrap(), "--device", device],
            ),
            "zero rhs",
        );
        assert_eq!(v["converged"], true, "{v}");
        assert_eq!(v["reason"], "zero_rhs", "{v}");
        assert_eq!(v["iterations"], 0);
        let x: Vec<f64> = read_vec(&out);
        assert_eq!(x, vec![0.0; 12], "{device}");
    }
}

/// Two Arnoldi steps cannot solve a 60 x 60 system: a result with a reason, exit 0, a
/// warning on stderr, and the last iterate written.
#[test]
fn non_convergence_is_a_result_with_a_reason() {
    let dir = common::cli::scratch("solve-maxiter");
    let c = case::<f64>(&dir, 60, 17);
    let out = dir.join("x.mtx");
    for device in ["cpu"]
        .into_iter()
        .chain(gpu_present("non_convergence_is_a_result_with_a_reason").then_some("gpu"))
    {
        for orth in ["cgs2", "mgs"] {
            let _ = std::fs::remove_file(&out);
            let o = solve(
                &c.a,
                &c.b,
                &out,
                &[
                    "--max-iter",
                    "2",
                    "--json",
                    "--orth",
                    orth,
                    "--device",
                    device,
                ],
            );
            let v = json_not_converged(&o, "max-iter 2");
            assert_eq!(v["converged"], false, "{v}");
            assert_eq!(v["reason"], "max_iterations", "{v}");
            assert_eq!(v["iterations"], 2);
            assert!(v["relative_residual"].as_f64().unwrap() > 1e-8);
            let err = text(&o.stderr);
            assert!(
                err.contains("warning") && err.contains("did not converge"),
                "{device} {orth}: {err}"
            );
            assert_eq!(read_vec::<f64>(&out).len(), 60);
        }
    }
    // The human summary says so too.
    let o = solve(&c.a, &c.b, &out, &["--max-iter", "2"]);
    assert_not_converged(&o, "summary");
    assert!(
        text(&o.stdout).contains("NOT converged"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn progress_goes_to_stderr_unless_quiet() {
    let dir = common::cli::scratch("solve-progress");
    let c = case::<f64>(&dir, 50, 23);
    let out = dir.join("x.mtx");
    let o = solve(
        &c.a,
        &c.b,
        &out,
        &["--progress-interval", "0", "--restart", "5"],
    );
    assert_ok(&o, "progress");
    let err = text(&o.stderr);
    assert!(
        err.contains("[solve] iteration 1: relative residual")
            && err.contains("[solve] iteration 6:"),
        "{err}"
    );
    let o = solve(
        &c.a,
        &c.b,
        &out,
        &["--progress-interval", "0", "--quiet", "--max-iter", "3"],
    );
    assert_not_converged(&o, "quiet");
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(!err.contains("[solve]"), "{err}");
    // Warnings are not silenced by --quiet.
    assert!(err.contains("did not converge"), "{err}");
}

/// Every bad input: non-zero exit, a message naming the problem (and the file), and the
/// previous `--out` untouched, with no temporary file left behind.
#[test]
fn bad_input_is_a_clear_error_and_keeps_the_old_output() {
    let dir = common::cli::scratch("solve-bad");
    let c = case::<f64>(&dir, 10, 29);
    let out = dir.join("x.mtx");
    let keep = "previous result\n";
    let check = |what: &str, o: Output, needles: &[&str]| {
        assert!(
            !o.status.success(),
            "{what}: exit 0\nstdout: {}",
            text(&o.stdout)
        );
        let err = text(&o.stderr);
        assert!(!err.contains("panicked"), "{what}: {err}");
        for n in needles {
            assert!(err.contains(n), "{what}: {n:?} not in {err:?}");
        }
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            keep,
            "{what}: output clobbered"
        );
        assert!(
            !dir.join("x.mtx.partial").exists(),
            "{what}: temporary file left"
        );
    };
    std::fs::write(&out, keep).unwrap();

    // b of the wrong length.
    let short = dir.join("short.mtx");
    write_vec(&short, &[1.0; 9]);
    check(
        "short b",
        solve(&c.a, &short, &out, &[]),
        &["short.mtx", "length 9", "expected 10"],
    );
    // x0 of the wrong length.
    check(
        "short x0",
        solve(&c.a, &c.b, &out, &["--x0", short.to_str().unwrap()]),
        &["short.mtx", "initial guess", "length 9"],
    );
    // b not a column.
    let wide = dir.join("wide.mtx");
    std::fs::write(
        &wide,
        "%%MatrixMarket matrix array real general\n5 2\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
    )
    .unwrap();
    check(
        "b 5 x 2",
        solve(&c.a, &wide, &out, &[]),
        &["wide.mtx", "5 x 2"],
    );
    // A not square.
    let rect = dir.join("rect.mtx");
    std::fs::write(
        &rect,
        "%%MatrixMarket matrix coordinate real general\n10 11 2\n1 1 2.0\n10 11 1.0\n",
    )
    .unwrap();
    check(
        "non-square",
        solve(&rect, &c.b, &out, &[]),
        &["rect.mtx", "square", "10 x 11"],
    );
    // NaN and infinity in A, b, x0.
    let nan_a = dir.join("nan_a.mtx");
    std::fs::write(
        &nan_a,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 2.0\n2 1 NaN\n2 2 1.0\n",
    )
    .unwrap();
    let b2 = dir.join("b2.mtx");
    write_vec(&b2, &[1.0, 2.0]);
    check(
        "NaN in A",
        solve(&nan_a, &b2, &out, &[]),
        &["nan_a.mtx", "NaN", "(2, 1)"],
    );
    let inf_b = dir.join("inf_b.mtx");
    std::fs::write(
        &inf_b,
        "%%MatrixMarket matrix array real general\n10 1\n1\n2\ninf\n4\n5\n6\n7\n8\n9\n10\n",
    )
    .unwrap();
    check(
        "inf in b",
        solve(&c.a, &inf_b, &out, &[]),
        &["inf_b.mtx", "entry 3", "NaN and infinity"],
    );
    check(
        "inf in x0",
        solve(&c.a, &c.b, &out, &["--x0", inf_b.to_str().unwrap()]),
        &["inf_b.mtx", "entry 3"],
    );
    // Missing files.
    let missing = dir.join("missing.mtx");
    check(
        "missing A",
        solve(&missing, &c.b, &out, &[]),
        &["missing.mtx", "No such file"],
    );
    check(
        "missing b",
        solve(&c.a, &missing, &out, &[]),
        &["missing.mtx", "No such file"],
    );
    // A parse error names the line.
    let garbled = dir.join("garbled.mtx");
    std::fs::write(
        &garbled,
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 2.0\n2 x 1.0\n",
    )
    .unwrap();
    check(
        "garbled A",
        solve(&garbled, &b2, &out, &[]),
        &["garbled.mtx", "line 4"],
    );
    // Options.
    check(
        "block size 0",
        solve(
            &c.a,
            &c.b,
            &out,
            &["--block-size", "0", "--precond", "jacobi"],
        ),
        &["--block-size"],
    );
    check(
        "block Jacobi with 9x9 blocks",
        solve(
            &c.a,
            &c.b,
            &out,
            &["--block-size", "9", "--precond", "block-jacobi"],
        ),
        &["--block-size 9", "at most 8"],
    );
    check(
        "block ILU(0) with 9x9 blocks",
        solve(
            &c.a,
            &c.b,
            &out,
            &["--block-size", "9", "--precond", "ilu0"],
        ),
        &["--block-size 9", "at most 8"],
    );
    check(
        "restart 0",
        solve(&c.a, &c.b, &out, &["--restart", "0"]),
        &["--restart"],
    );
    check(
        "no ILU sweeps",
        solve(
            &c.a,
            &c.b,
            &out,
            &["--precond", "ilu0", "--ilu-sweeps", "0"],
        ),
        &["--ilu-sweeps", "at least 1"],
    );
    check(
        "ILU sweeps without ILU(0)",
        solve(
            &c.a,
            &c.b,
            &out,
            &["--precond", "jacobi", "--ilu-sweeps", "3"],
        ),
        &["--ilu-sweeps", "ilu0", "jacobi"],
    );
    check(
        "negative tol",
        solve(&c.a, &c.b, &out, &["--tol=-1"]),
        &["--tol", "-1"],
    );
    // A zero diagonal entry: point Jacobi cannot be built.
    let zero_diag = dir.join("zero_diag.mtx");
    std::fs::write(
        &zero_diag,
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 2.0\n1 2 1.0\n2 1 1.0\n",
    )
    .unwrap();
    check(
        "zero diagonal",
        solve(&zero_diag, &b2, &out, &["--precond", "jacobi"]),
        &["zero diagonal"],
    );
    // The GPU asked for where there is none: a clear error, not a panic.
    if ferrocuda::gpu::count() == 0 {
        check(
            "no GPU",
            solve(&c.a, &c.b, &out, &["--device", "gpu"]),
            &["no CUDA device"],
        );
    }
}

/// The GPU falls back from SBELL to BCSR where SBELL cannot take the block size (> 8)
/// and says so.
#[test]
fn gpu_falls_back_to_bcsr_for_large_blocks() {
    if !gpu_present("gpu_falls_back_to_bcsr_for_large_blocks") {
        return;
    }
    let dir = common::cli::scratch("solve-fallback");
    let c = case::<f64>(&dir, 47, 31);
    let out = dir.join("x.mtx");
    for (bs, format) in [("5", "sbell"), ("9", "bcsr")] {
        let v = json(
            &solve(
                &c.a,
                &c.b,
                &out,
                &[
                    "--device",
                    "gpu",
                    "--block-size",
                    bs,
                    "--precond",
                    "jacobi",
                    "--json",
                    "--tol",
                    "1e-10",
                ],
            ),
            "gpu fallback",
        );
        assert_eq!(v["format"], format, "{v}");
        assert_eq!(v["format_note"].is_null(), format == "sbell", "{v}");
        assert!(v["gpu_name"].is_string(), "{v}");
        let want: Vec<Complex<f64>> = c.x.iter().map(|&v| to_c64(v)).collect();
        let err = rel_err(&read_vec::<f64>(&out), &want);
        assert!(err < 1e-6, "block size {bs}: relative error {err:e}");
    }
}

/// `bench solve --quick` on a small generated case: every ferrocuda row converges to the
/// true residual the benchmark recomputes, in f64 and c64 and with f32 storage; the peers
/// (where this machine's Python has them) solve the same systems, each row naming its
/// solver and version, and ferrocuda's rows are set against CuPy's; the results files are
/// written together.
#[test]
fn bench_solve_quick_writes_results() {
    if !gpu_present("bench_solve_quick_writes_results") {
        return;
    }
    let dir = common::cli::scratch("bench-solve");
    let v = common::cli::json(
        &["bench", "solve"],
        &[
            "--quick",
            "--case",
            "4x8x4x2",
            "--peer-timeout",
            "600",
            "--results-dir",
            dir.to_str().expect("UTF-8 path"),
        ],
    );
    let rows = v["rows"].as_array().expect("rows");
    let ours: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["solver"] == "ferrocuda").collect();
    // On the case in f64: block Jacobi with the matrix and/or the basis in f32 (4), ILU(0)
    // with exact and with Jacobi-sweep solves, each with full and f32 matrix storage (4);
    // in c64 block Jacobi (2); on sherman1 Jacobi and ILU(0), 4 storages each. The basis
    // in f32: 2 on the case, 4 on sherman1.
    assert_eq!(ours.len(), 18, "{v}");
    assert_eq!(
        ours.iter().filter(|r| r["ilu_sweeps"] == 3).count(),
        2,
        "{v}"
    );
    assert_eq!(
        ours.iter().filter(|r| r["basis"] == "f32").count(),
        6,
        "{v}"
    );
    assert_eq!(
        ours.iter().filter(|r| r["scalar"] == "c64").count(),
        2,
        "{v}"
    );
    for r in &ours {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["converged"], true, "{r}");
        let res = r["true_residual"].as_f64().expect("residual");
        assert!(res <= 1.01e-8, "{r}");
        if r["storage"] == "f32" || r["basis"] == "f32" {
            assert!(!r["passes"].as_array().expect("passes").is_empty(), "{r}");
        }
        assert!(r["gmres_ms"].as_f64().is_some(), "{r}");
    }
    // The peers: on a machine without them, a note says why; where they ran, each row
    // took steps and reports its residual and set-up. The small case and sherman1 get
    // SciPy's ILU(0)-like spilu; CuPy runs without preconditioner and with ILU(0).
    let unavailable = v["peers_not_available"].as_array().expect("list");
    let cupy_missing = unavailable
        .iter()
        .any(|u| u.as_str().is_some_and(|u| u.starts_with("CuPy")));
    let scipy_missing = unavailable
        .iter()
        .any(|u| u.as_str().is_some_and(|u| u.starts_with("SciPy")));
    let peers: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["solver"] != "ferrocuda").collect();
    let count = |solver: &str| peers.iter().filter(|r| r["solver"] == solver).count();
    // Three systems (the case in f64 and c64, sherman1).
    assert_eq!(count("cupy"), if cupy_missing { 0 } else { 6 }, "{v}");
    assert_eq!(count("scipy"), if scipy_missing { 0 } else { 3 }, "{v}");
    for r in &peers {
        // The ILU(0) peers factor these small systems, the generated case's ghost rows
        // (rows storing no entry) taken as the identity's rows, and converge.
        if r["precond"] == "ilu0" {
            assert!(r["error"].is_null(), "{r}");
            assert_eq!(r["converged"], true, "{r}");
        }
        if !r["error"].is_null() {
            continue; // reported in the table (a zero pivot, the time limit)
        }
        assert!(!r["version"].as_str().expect("version").is_empty(), "{r}");
        assert!(r["steps"].as_u64().expect("steps") > 0, "{r}");
        assert!(r["setup_ms"].as_f64().expect("set-up") >= 0.0, "{r}");
        if r["converged"] == true {
            assert!(
                r["true_residual"].as_f64().expect("residual") <= 1.01e-8,
                "{r}"
            );
        }
        assert_eq!(r["format"], "csr", "{r}");
        assert!(r["vs_cupy"].is_null(), "{r}");
    }
    if !cupy_missing
        && peers
            .iter()
            .any(|r| r["solver"] == "cupy" && r["converged"] == true)
    {
        assert!(ours.iter().any(|r| r["vs_cupy"].as_f64().is_some()), "{v}");
    }
    for f in ["solve.md", "solve.json", "solve-chart.png"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
}
