//! Numbers: no silent nonsense (issue 21). Non-finite input is an error naming the
//! entry, LU reports rcond and refuses a matrix singular to working precision, GMRES
//! that stagnates or diverges exits 3 with the best iterate, a failed integration is a
//! failure, and IEEE semantics do not depend on the storage format.

use std::path::Path;

use crate::common::cli::{
    assert_error, heat, read_values, run, scratch, spmv_args, stderr, write_text,
};

/// A dense `n x n` (column-major) Matrix Market array file.
fn array(dir: &Path, name: &str, rows: usize, cols: usize, values: &[&str]) -> String {
    assert_eq!(values.len(), rows * cols);
    let mut text = format!("%%MatrixMarket matrix array real general\n{rows} {cols}\n");
    for v in values {
        text.push_str(v);
        text.push('\n');
    }
    write_text(dir, name, &text)
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn lu_refuses_non_finite_input_naming_the_entry() {
    let d = scratch("numbers-lu-finite");
    let good = array(&d, "A.mtx", 2, 2, &["2", "1", "1", "3"]);
    let nan = array(&d, "nan.mtx", 2, 2, &["2", "NaN", "1", "3"]);
    let b = array(&d, "b.mtx", 2, 1, &["1", "1"]);
    let b_inf = array(&d, "binf.mtx", 2, 1, &["1", "inf"]);
    let big = array(&d, "big.mtx", 2, 2, &["1e39", "0", "0", "1e39"]);
    let out = d.join("x.mtx");
    std::fs::write(&out, "old").unwrap();
    let so = out.to_str().unwrap();
    let r = run(&["lu", "--matrix", &nan, "--rhs", &b, "--out", so]);
    assert_error(
        &r,
        1,
        &["--matrix", "nan.mtx", "entry (2, 1)", "NaN"],
        "NaN in A",
    );
    let r = run(&["lu", "--matrix", &good, "--rhs", &b_inf, "--out", so]);
    assert_error(
        &r,
        1,
        &["--rhs", "binf.mtx", "entry (2, 1)", "inf"],
        "inf in B",
    );
    // 1e39 is finite in f64 and infinite in f32.
    let r = run(&["lu", "--matrix", &big, "--precision", "f32"]);
    assert_error(
        &r,
        1,
        &["--matrix", "big.mtx", "entry (1, 1)", "f32"],
        "f32 overflow",
    );
    assert!(run(&["lu", "--matrix", &big]).status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn lu_reports_rcond_and_the_normwise_backward_error() {
    let d = scratch("numbers-lu-rcond");
    // ||A||_1 = 4, ||A^-1||_1 = 4/5 (A^-1 = [[3, -1], [-1, 2]] / 5): rcond = 5/16.
    let a = array(&d, "A.mtx", 2, 2, &["2", "1", "1", "3"]);
    let r = run(&["lu", "--matrix", &a, "--json"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let v = json(&r);
    let rcond = v["rcond"].as_f64().unwrap();
    assert!((rcond - 5.0 / 16.0).abs() < 1e-12, "{rcond}");
    assert_eq!(v["lu"]["rcond"], v["rcond"]);
    let be = v["backward_error"].as_f64().unwrap();
    let scaled = v["scaled_backward_error"].as_f64().unwrap();
    assert!(
        be < 1e-15 && (scaled - be / (2.0 * f64::EPSILON)).abs() < 1e-12,
        "{v}"
    );
    let r = run(&["lu", "--matrix", &a]);
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        text.contains("rcond 3.125e-1") && text.contains("||P A - L U||_1 / ||A||_1 = "),
        "{text}"
    );
    assert!(text.contains("n eps)"), "{text}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn lu_singular_to_working_precision_exits_2_unless_forced() {
    let d = scratch("numbers-lu-singular");
    // Rank 2 in exact arithmetic; its pivots in f64 are not exactly zero.
    let a = array(
        &d,
        "A.mtx",
        3,
        3,
        &["1", "4", "7", "2", "5", "8", "3", "6", "9"],
    );
    let b = array(&d, "b.mtx", 3, 1, &["1", "1", "1"]);
    let out = d.join("x.mtx");
    let so = out.to_str().unwrap();
    let r = run(&["lu", "--matrix", &a, "--rhs", &b, "--out", so]);
    assert_error(
        &r,
        2,
        &["singular to working precision", "rcond = "],
        "singular",
    );
    assert!(
        !out.exists(),
        "--out written for a matrix singular to working precision"
    );
    let r = run(&["lu", "--matrix", &a]);
    assert_error(&r, 2, &["rcond = "], "singular, no --rhs");
    // Forced: written, with a warning, and the report says so.
    let r = run(&[
        "lu", "--matrix", &a, "--rhs", &b, "--out", so, "--force", "--json",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("warning") && stderr(&r).contains("--force"),
        "{}",
        stderr(&r)
    );
    let v = json(&r);
    assert_eq!(v["lu"]["singular_to_working_precision"], true);
    assert!(v["rcond"].as_f64().unwrap() < f64::EPSILON);
    assert!(out.exists());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn lu_without_pivoting_says_zero_pivot_not_singular() {
    let d = scratch("numbers-lu-zero-pivot");
    let a = array(&d, "A.mtx", 2, 2, &["0", "1", "1", "0"]);
    let r = run(&["lu", "--matrix", &a, "--pivoting", "none"]);
    assert_error(
        &r,
        1,
        &["zero pivot without pivoting", "column 0"],
        "no pivoting",
    );
    assert!(
        !stderr(&r).contains("the matrix is singular:"),
        "{}",
        stderr(&r)
    );
    assert!(run(&["lu", "--matrix", &a]).status.success());
    let _ = std::fs::remove_dir_all(d);
}

/// A singular, inconsistent system: GMRES cannot converge; it must say why, exit 3 and
/// write an iterate no worse than the start.
#[test]
fn gmres_on_an_inconsistent_system_exits_3_with_the_best_iterate() {
    let d = scratch("numbers-gmres");
    let a = write_text(
        &d,
        "A.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n1 2 1\n2 1 1\n2 2 1\n3 3 2\n",
    );
    let b = array(&d, "b.mtx", 3, 1, &["1", "0", "1"]);
    let out = d.join("x.mtx");
    let r = run(&[
        "solve",
        "--matrix",
        &a,
        "--rhs",
        &b,
        "--out",
        out.to_str().unwrap(),
        "--json",
        "--restart",
        "2",
        "--max-iter",
        "200",
    ]);
    assert_eq!(r.status.code(), Some(3), "{}", stderr(&r));
    let v = json(&r);
    assert_eq!(v["converged"], false);
    let reason = v["reason"].as_str().unwrap();
    assert!(["stagnation", "diverged"].contains(&reason), "{reason}");
    let (res, res0) = (
        v["residual"].as_f64().unwrap(),
        v["initial_residual"].as_f64().unwrap(),
    );
    assert!(res <= res0, "residual {res} worse than the start {res0}");
    assert!(stderr(&r).contains("did not converge") && stderr(&r).contains("best iterate"));
    assert!(out.exists());
    let _ = std::fs::remove_dir_all(d);
}

/// `--nu 1e300` makes the step size underflow at t = 0: a failure, not a report with
/// error 0; `--out` keeps what it had.
#[test]
fn a_failed_integration_is_a_failure() {
    let d = scratch("numbers-rock4");
    let out = d.join("y.mtx");
    std::fs::write(&out, "old").unwrap();
    let r = run(&heat(
        "8",
        &["--nu", "1e300", "--out", out.to_str().unwrap()],
    ));
    assert_error(&r, 1, &["integration failed", "t = 0"], "rock4 --nu 1e300");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    let _ = std::fs::remove_dir_all(d);
}

/// With `x = (1, inf, 3)` and row 3 of A free of column 2, `y3 = 2 + 15 = 17` in every
/// format: padding never multiplies `x`.
#[test]
fn ieee_semantics_do_not_depend_on_the_format() {
    let d = scratch("numbers-ieee");
    let a = write_text(
        &d,
        "A.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1\n3 1 2\n3 3 5\n",
    );
    let x = array(&d, "x.mtx", 3, 1, &["1", "inf", "3"]);
    let out = d.join("y.mtx");
    for format in ["csr", "ell", "bcsr", "bell", "bdia", "sbell"] {
        for bs in ["2", "3"] {
            let mut args = spmv_args(&a, &x, out.to_str().unwrap(), &["--format", format]);
            if !["csr", "ell"].contains(&format) {
                args.extend(["--block-size", bs]);
            }
            let r = run(&args);
            assert!(r.status.success(), "{format}: {}", stderr(&r));
            let y = read_values(&out);
            assert_eq!(y[0], 1.0, "{format} {bs}");
            assert_eq!(y[1], f64::INFINITY, "{format} {bs}");
            assert_eq!(y[2], 17.0, "{format} block {bs}: {y:?}");
        }
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Symmetric kinds list one triangle: a pair listed twice, a skew-symmetric diagonal and
/// a non-real Hermitian diagonal are refused, naming the line.
#[test]
fn symmetric_files_that_break_their_kind_are_refused() {
    let d = scratch("numbers-symmetric");
    let x = array(&d, "x.mtx", 2, 1, &["1", "1"]);
    let out = d.join("y.mtx").display().to_string();
    for (name, text, needle) in [
        (
            "both.mtx",
            "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 1\n2 1 1\n1 2 1\n",
            "line 5",
        ),
        (
            "skew.mtx",
            "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n",
            "line 3",
        ),
        (
            "herm.mtx",
            "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n1 1 1 1\n",
            "line 3",
        ),
    ] {
        let a = write_text(&d, name, text);
        let r = run(&["spmv", "--matrix", &a, "--x", &x, "--out", &out]);
        assert_error(&r, 1, &["--matrix", name, needle], name);
    }
    let _ = std::fs::remove_dir_all(d);
}

/// The GPU factorisation reports the same rcond and refuses the same matrix (skipped
/// without a GPU; a failure with FERROCUDA_REQUIRE_GPU=1).
#[test]
fn lu_on_the_gpu_reports_rcond_and_refuses_singular_matrices() {
    if !crate::common::cli::gpu_present("numbers::lu_on_the_gpu_reports_rcond") {
        return;
    }
    let d = scratch("numbers-lu-gpu");
    let a = array(&d, "A.mtx", 2, 2, &["2", "1", "1", "3"]);
    let r = run(&["lu", "--matrix", &a, "--device", "gpu", "--json"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let rcond = json(&r)["rcond"].as_f64().unwrap();
    assert!((rcond - 5.0 / 16.0).abs() < 1e-12, "{rcond}");
    let s = array(
        &d,
        "S.mtx",
        3,
        3,
        &["1", "4", "7", "2", "5", "8", "3", "6", "9"],
    );
    let b = array(&d, "b.mtx", 3, 1, &["1", "1", "1"]);
    let out = d.join("x.mtx");
    let r = run(&[
        "lu",
        "--matrix",
        &s,
        "--rhs",
        &b,
        "--out",
        out.to_str().unwrap(),
        "--device",
        "gpu",
    ]);
    // Singular to working precision (rcond), or an exactly zero pivot where the GPU's
    // rounding makes one: exit 2 either way.
    assert_error(&r, 2, &["singular"], "singular on the GPU");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(d);
}
