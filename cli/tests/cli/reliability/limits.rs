//! Oversized requests are errors naming the request and the limit (exit status 1),
//! never a panic or an abort; options are checked before any work.

use crate::common::cli::{
    assert_error, bench_on_cpu, run, run_limited, scratch, small_system, small_system_args,
    solve_args, solve_small, spmv_args, write_text,
};

/// A little more than the binary needs, far less than any request below: the tests
/// see the refusal, not the machine's memory.
const KIB_4G: u64 = 4 << 20;

#[test]
fn files_claiming_huge_sizes_are_refused_before_allocating() {
    let d = scratch("limits-files");
    let (_, x) = small_system(&d);
    let x = x.display().to_string();
    let huge = write_text(
        &d,
        "huge.mtx",
        "%%MatrixMarket matrix coordinate real general\n4294967295 4294967295 1\n1 1 1\n",
    );
    let big = write_text(
        &d,
        "big.mtx",
        "%%MatrixMarket matrix coordinate real general\n100000 100000 1\n1 1 1\n",
    );
    let out = d.join("y.mtx").display().to_string();
    // LU densifies: 4294967295^2 and 100000^2 values.
    let r = run_limited(KIB_4G, &["lu", "--matrix", &huge]);
    assert_error(
        &r,
        1,
        &["--matrix", "huge.mtx", "4294967295 x 4294967295", "bytes"],
        "lu huge",
    );
    let r = run_limited(KIB_4G, &["lu", "--matrix", &big]);
    assert_error(
        &r,
        1,
        &["big.mtx", "80000000000 bytes", "ulimit -v"],
        "lu big",
    );
    // SpMV checks x against the announced size before converting anything.
    let r = run_limited(
        KIB_4G,
        &["spmv", "--matrix", &huge, "--x", &x, "--out", &out],
    );
    assert_error(&r, 1, &["--x", "expected 4294967295"], "spmv huge");
    // /dev/zero is one endless line of NUL bytes: refused at line 1.
    for args in [
        vec!["spmv", "--matrix", "/dev/zero", "--x", &x, "--out", &out],
        vec!["spmv", "--matrix", &big, "--x", "/dev/zero", "--out", &out],
        vec!["lu", "--matrix", "/dev/zero"],
        vec!["solve", "--matrix", "/dev/zero", "--rhs", &x, "--out", &out],
    ] {
        let r = run_limited(KIB_4G, &args);
        assert_error(
            &r,
            1,
            &["/dev/zero", "line 1", "binary data"],
            &format!("{args:?}"),
        );
    }
    assert!(!d.join("y.mtx").exists());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_block_size_beyond_the_matrix_names_both() {
    let (d, a, x, out) = small_system_args("limits-block", "y.mtx");
    for format in ["bcsr", "bell", "bdia", "sbell"] {
        let r = run(&spmv_args(
            &a,
            &x,
            &out,
            &["--format", format, "--block-size", "100000"],
        ));
        assert_error(
            &r,
            1,
            &["--block-size 100000", "3 x 3", "at most 3"],
            format,
        );
        // The default block size (5) fits a 3 x 3 matrix by taking 3.
        let r = run(&spmv_args(&a, &x, &out, &["--format", format]));
        assert!(
            r.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn oversized_requests_name_the_request_and_the_limit() {
    let (d, a, x, out) = small_system_args("limits-requests", "z.mtx");
    let res = d.join("results").display().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            solve_args(&a, &x, &out, &["--restart", "1e11", "--max-iter", "1e11"]),
            vec!["--restart 100000000000", "GMRES workspace", "bytes"],
        ),
        (
            vec!["rock4", "--problem", "heat", "--n", "100000"],
            vec!["--n 100000", "bytes"],
        ),
        (
            vec!["mpc", "--objects", "1e8"],
            vec!["--objects 100000000", "bytes"],
        ),
        (
            vec!["mpc", "--horizon", "1e9"],
            vec!["--horizon 1000000000", "bytes"],
        ),
        (
            vec!["bench", "blas1", "--n", "1e12", "--device", "cpu"],
            vec!["--n 1000000000000", "bytes"],
        ),
        (
            bench_on_cpu(&["lu", "--sizes", "100000"], &res),
            vec!["--sizes 100000", "bytes"],
        ),
        (
            bench_on_cpu(&["spmv", "--case", "300x300x300x1"], &res),
            vec!["--case 300x300x300x1", "bytes"],
        ),
        (
            bench_on_cpu(&["gmres", "--case", "300x300x300x1", "--no-peers"], &res),
            vec!["--case 300x300x300x1", "bytes"],
        ),
        (
            bench_on_cpu(
                &[
                    "gmres",
                    "--case",
                    "2x4x2x1",
                    "--restart",
                    "1e11",
                    "--max-iter",
                    "1e11",
                    "--no-peers",
                ],
                &res,
            ),
            vec!["bench gmres", "bytes"],
        ),
        (
            bench_on_cpu(&["rock4", "--sizes", "100000"], &res),
            vec!["--sizes 100000", "bytes"],
        ),
        (
            bench_on_cpu(&["solve", "--case", "300x300x300x1"], &res),
            vec!["bench solve --case 300x300x300x1", "bytes"],
        ),
    ];
    for (args, needles) in cases {
        let r = run_limited(KIB_4G, &args);
        assert_error(&r, 1, &needles, &format!("{args:?}"));
        // The limit is named too.
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains("ulimit -v") || err.contains("address space"),
            "{args:?}: {err}"
        );
    }
    assert!(!d.join("z.mtx").exists() && !d.join("results").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// The README's own example under a per-process limit: refused by the memory check
/// that knows `ulimit -v`, not aborted by the allocator.
#[test]
fn multigrid_under_ulimit_is_refused_not_aborted() {
    let r = run_limited(2 << 20, &["mg", "--n", "1025", "--base", "2"]);
    assert_error(&r, 1, &["n = 1025", "GiB", "ulimit -v"], "mg --n 1025");
}

/// A restart length larger than the iteration limit is the same solve (a cycle has at
/// most max_iter steps), not a workspace that wraps around.
#[test]
fn a_huge_restart_with_a_small_iteration_limit_solves() {
    let (d, r) = solve_small(
        "limits-restart",
        &["--restart", "18446744073709551615", "--json"],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["converged"], true);
    assert_eq!(v["restart"], 18446744073709551615u64);
    let r = run(&[
        "bench",
        "gmres",
        "--case",
        "2x4x2x1",
        "--restart",
        "18446744073709551615",
        "--no-peers",
        "--device",
        "cpu",
        "--max-iter",
        "20",
        "--results-dir",
        d.join("res").to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let _ = std::fs::remove_dir_all(d);
}

/// `rng sfmt --count 1e12 --json` streams (it holds no array of a trillion numbers):
/// a reader that stops early ends it quietly, under a small address-space limit.
#[test]
fn rng_json_streams_without_holding_the_numbers() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let bin = crate::common::cli::ferrocuda().get_program().to_os_string();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" rng sfmt --seed 1 --count 1e12 --json")
        .arg(bin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut head = vec![0u8; 1 << 16];
    child
        .stdout
        .take()
        .unwrap()
        .read_exact(&mut head)
        .expect("64 KiB of output");
    // stdout dropped: the next write fails with a broken pipe.
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&head);
    assert!(
        text.starts_with("{\"mexp\":19937,\"seed\":1,"),
        "{}",
        &text[..80]
    );
    assert!(
        text.contains("\"device\":\"cpu\",\"values\":[1453390500,"),
        "{}",
        &text[..120]
    );
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Options are checked before any work, each naming itself.
#[test]
fn options_are_validated_up_front() {
    let (d, a, x, out) = small_system_args("limits-options", "z.mtx");
    let res = d.join("results").display().to_string();
    for (args, needle) in [
        (vec!["mg", "--n", "9", "--cycles", "0"], "--cycles"),
        (bench_on_cpu(&["lu", "--sizes", "0"], &res), "--sizes"),
        (bench_on_cpu(&["lu", "--block", "0"], &res), "--block"),
        (bench_on_cpu(&["mg", "--reps", "0"], &res), "--reps"),
        (bench_on_cpu(&["rock4", "--sizes", "0"], &res), "--sizes"),
        (bench_on_cpu(&["rock4", "--tol", "-1"], &res), "--tol"),
        (vec!["bench", "blas1", "--n", "0", "--device", "cpu"], "--n"),
        (bench_on_cpu(&["spmv", "--reps", "0"], &res), "--reps"),
        (
            bench_on_cpu(&["gmres", "--restart", "0"], &res),
            "--restart",
        ),
        (
            bench_on_cpu(&["gmres", "--thesis", "--cases", "7"], &res),
            "case 7",
        ),
        (
            bench_on_cpu(&["rng", "--large-log2", "40"], &res),
            "--large-log2",
        ),
        (solve_args(&a, &x, &out, &["--restart", "0"]), "--restart"),
        (
            spmv_args(&a, &x, &out, &["--block-size", "0"]),
            "--block-size",
        ),
        (vec!["rock4", "--problem", "heat", "--n", "0"], "--n"),
        (vec!["mpc", "--steps", "0"], "--steps"),
        (vec!["lu", "--matrix", &a, "--block", "600"], "--block"),
    ] {
        let r = run(&args);
        assert_error(&r, 1, &[needle], &format!("{args:?}"));
    }
    assert!(!d.join("z.mtx").exists() && !d.join("results").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// On a GPU, a workspace beyond the device's memory is an error naming the bytes, not
/// an abort (skipped without a GPU; a failure with FERROCUDA_REQUIRE_GPU=1).
#[test]
fn a_gpu_workspace_beyond_memory_is_an_error_naming_the_bytes() {
    if !crate::common::cli::gpu_present("limits::a_gpu_workspace_beyond_memory") {
        return;
    }
    let (d, r) = solve_small(
        "limits-gpu",
        &["--device", "gpu", "--restart", "1e11", "--max-iter", "1e11"],
    );
    assert_error(
        &r,
        1,
        &["GMRES workspace", "bytes"],
        "solve --device gpu --restart 1e11",
    );
    assert!(!d.join("z.mtx").exists());
    let _ = std::fs::remove_dir_all(d);
}
