//! `ferrocuda lu` as users call it: a solve checked against the known solution, array and
//! coordinate input, the singular exit code, bad input, and the GPU (skipped without one).

use crate::common;

use common::cli::ferrocuda;
use std::path::{Path, PathBuf};

use ferrocuda::dense::Matrix;
use ferrocuda::sparse::mm;

fn write_array(path: &Path, m: &Matrix<f64>) {
    let f = std::fs::File::create(path).unwrap();
    mm::write_dense(f, m.nrows(), m.ncols(), m.as_slice()).unwrap();
}

/// A = random with zero diagonal (needs pivoting), X = known, B = A X.
fn problem(dir: &Path, n: usize, k: usize) -> (PathBuf, PathBuf, Matrix<f64>) {
    let mut a = Matrix::<f64>::random(n, n, -1.0, 1.0, 7);
    for i in 0..n {
        a.set(i, i, 0.0);
    }
    let x = Matrix::<f64>::random(n, k, -1.0, 1.0, 8);
    let b = Matrix::from_fn(n, k, |i, j| (0..n).map(|p| a.get(i, p) * x.get(p, j)).sum());
    let (pa, pb) = (dir.join("a.mtx"), dir.join("b.mtx"));
    write_array(&pa, &a);
    write_array(&pb, &b);
    (pa, pb, x)
}

fn run_json(args: &[&str]) -> serde_json::Value {
    common::cli::json(&["lu"], args)
}

fn check_solution(out: &Path, x: &Matrix<f64>) {
    let f = std::fs::File::open(out).unwrap();
    let (r, c, v) = mm::read_dense::<f64, _>(std::io::BufReader::new(f)).unwrap();
    assert_eq!((r, c), (x.nrows(), x.ncols()));
    for (got, want) in v.iter().zip(x.as_slice()) {
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }
}

fn solve_on(device: &str, test: &str) {
    let d = common::cli::scratch(&format!("lu-{test}"));
    let (a, b, x) = problem(&d, 60, 3);
    let out = d.join("x.mtx");
    let system = common::cli::system_args(&a, &b, &out);
    let v = run_json(&[&system[..], &["--device", device, "--block", "16"]].concat());
    let be = v["backward_error"].as_f64().expect("backward_error");
    assert!(be < 2.0, "backward error {be}");
    assert_eq!(v["n"], 60);
    assert_eq!(v["rhs_columns"], 3);
    assert!(v["max_relative_residual"].as_f64().unwrap() < 1e-14);
    check_solution(&out, &x);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn solves_on_the_cpu() {
    solve_on("cpu", "cpu");
}

#[test]
fn solves_on_the_gpu() {
    if common::gpu_or_skip("cli_lu::solves_on_the_gpu").is_none() {
        return;
    }
    solve_on("gpu", "gpu");
}

#[test]
fn reads_coordinate_files_and_f32() {
    let d = common::cli::scratch("lu-coo");
    let p = d.join("a.mtx");
    // [[4, 0], [2, 3]] with an explicit duplicate split of the 4 (at most one entry per
    // position is announced: 4 of the 2 x 2 positions).
    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 3\n1 1 1\n2 1 2\n2 2 3\n",
    )
    .unwrap();
    let v = run_json(&["--matrix", p.to_str().unwrap()]);
    assert_eq!(v["n"], 2);
    assert!(v["backward_error"].as_f64().unwrap() < 1.0);
    let v = run_json(&["--matrix", p.to_str().unwrap(), "--precision", "f32"]);
    assert_eq!(v["precision"], "f32");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn singular_matrix_exits_with_code_2_naming_the_column() {
    let d = common::cli::scratch("lu-singular");
    let p = d.join("a.mtx");
    // Column 2 (0-based) is twice column 0 plus column 1... simpler: a zero column 1.
    write_array(
        &p,
        &Matrix::new(3, 3, vec![1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 4.0, 5.0, 7.0]).unwrap(),
    );
    let out = d.join("x.mtx");
    let b = d.join("b.mtx");
    write_array(&b, &Matrix::new(3, 1, vec![1.0, 1.0, 1.0]).unwrap());
    let r = ferrocuda()
        .args([
            "lu",
            "--matrix",
            p.to_str().unwrap(),
            "--rhs",
            b.to_str().unwrap(),
        ])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("singular") && err.contains("column 1"),
        "{err}"
    );
    assert!(!out.exists(), "--out written for a singular matrix");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_input_is_a_clear_error() {
    let d = common::cli::scratch("lu-bad");
    let rect = d.join("rect.mtx");
    write_array(&rect, &Matrix::<f64>::zeros(2, 3));
    let r = ferrocuda()
        .args(["lu", "--matrix", rect.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("not square"));
    let missing = d.join("missing.mtx");
    let r = ferrocuda()
        .args(["lu", "--matrix", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("missing.mtx"));
    // B with the wrong number of rows.
    let a = d.join("a.mtx");
    write_array(&a, &Matrix::new(2, 2, vec![1.0, 0.0, 0.0, 1.0]).unwrap());
    let b = d.join("b.mtx");
    write_array(&b, &Matrix::<f64>::zeros(3, 1));
    let r = ferrocuda()
        .args([
            "lu",
            "--matrix",
            a.to_str().unwrap(),
            "--rhs",
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("rows of --rhs"));
    // A block size out of range.
    let r = ferrocuda()
        .args(["lu", "--matrix", a.to_str().unwrap(), "--block", "0"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("block = 0"));
    let _ = std::fs::remove_dir_all(d);
}
