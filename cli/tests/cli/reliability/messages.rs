//! Messages in the user's words, `--device` as documented, exit statuses.

use crate::common::cli::{
    assert_error, heat, run, scratch, small_system, small_system_args, spmv_args, stderr,
};

/// Negative numbers reach the option's own check (clap would say "unexpected argument").
#[test]
fn negative_numbers_get_the_values_own_message() {
    let (d, a, x, out) = small_system_args("messages-negative", "z.mtx");
    let solve = |flag: &'static str| {
        vec![
            "solve", "--matrix", &a, "--rhs", &x, "--out", &out, flag, "-1",
        ]
    };
    for (args, needles) in [
        (
            solve("--tol"),
            vec!["--tol must be finite and >= 0, got -1"],
        ),
        (
            solve("--max-iter"),
            vec!["--max-iter", "cannot be negative"],
        ),
        (
            vec!["rock4", "--problem", "heat", "--n", "-1"],
            vec!["--n", "cannot be negative"],
        ),
        (vec!["mg", "--n", "-1"], vec!["--n", "cannot be negative"]),
        (
            vec!["rng", "sfmt", "--seed", "-1", "--count", "3"],
            vec!["--seed", "cannot be negative"],
        ),
        (
            vec!["mpc", "--objects", "-1"],
            vec!["--objects", "cannot be negative"],
        ),
        (
            vec!["rock4", "--problem", "heat", "--n", "3", "--rtol", "-1e-3"],
            vec!["--rtol must be finite and positive"],
        ),
    ] {
        let r = run(&args);
        assert_error(&r, 1, &needles, &format!("{args:?}"));
        assert!(
            !stderr(&r).contains("unexpected argument"),
            "{args:?}: {}",
            stderr(&r)
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

/// `--device N` works after a subcommand, before it, and as `gpu:N`; help lists one
/// `--device` and no `--device-ordinal`.
#[test]
fn device_n_works_after_a_subcommand() {
    let (d, a, x, out) = small_system_args("messages-device", "y.mtx");
    let spmv = |device: &[&str], tail: &[&str]| {
        let mut args: Vec<&str> = device.to_vec();
        args.extend(["spmv", "--matrix", &a, "--x", &x, "--out", &out]);
        args.extend(tail);
        run(&args)
    };
    let gpus = ferrocuda::gpu::count();
    // Parsed as a GPU ordinal everywhere: either it runs or the GPU is missing.
    for (before, after) in [
        (vec![], vec!["--device", "7"]),
        (vec![], vec!["--device", "gpu:7"]),
        (vec!["--device", "7"], vec!["--device", "gpu"]),
    ] {
        let r = spmv(&before, &after);
        if gpus > 7 {
            assert!(r.status.success(), "{}", stderr(&r));
        } else {
            let err = stderr(&r);
            assert_eq!(r.status.code(), Some(1), "{err}");
            assert!(
                !err.contains("invalid value"),
                "{before:?} {after:?}: {err}"
            );
        }
    }
    let r = spmv(&["--device", "1"], &["--device", "2"]);
    assert_error(
        &r,
        1,
        &["--device 1", "--device 2", "different GPUs"],
        "two ordinals",
    );
    let r = spmv(&[], &["--device", "cpu"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let r = spmv(&[], &["--device", "-1"]);
    assert_error(&r, 1, &["GPU ordinal is 0 or more"], "--device -1");
    for cmd in [
        &["spmv"][..],
        &["solve"],
        &["lu"],
        &["bench", "lu"],
        &["rng", "sfmt"],
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let help = String::from_utf8(run(&args).stdout).unwrap();
        assert_eq!(help.matches("--device").count(), 1, "{cmd:?}: {help}");
        assert!(!help.contains("device-ordinal"), "{cmd:?}: {help}");
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Errors name what the user gave, in the user's words: no library function names.
#[test]
fn errors_speak_the_users_language() {
    let d = scratch("messages-words");
    let (a, x) = small_system(&d);
    let rect = d.join("rect.mtx");
    std::fs::write(
        &rect,
        "%%MatrixMarket matrix array real general\n2 1\n1\n2\n",
    )
    .unwrap();
    let (a, x, rect) = (
        a.display().to_string(),
        x.display().to_string(),
        rect.display().to_string(),
    );
    let out = d.join("y.mtx").display().to_string();
    for args in [
        spmv_args(&a, &x, &out, &["--format", "bcsr", "--block-size", "4"]),
        spmv_args(&x, &x, &out, &[]),
        vec!["lu", "--matrix", &rect],
        vec!["solve", "--matrix", &a, "--rhs", &a, "--out", &out],
        vec!["mg", "--n", "10"],
    ] {
        let r = run(&args);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            !err.contains("::") && !err.contains("read_dense"),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

/// 0 done, 1 error (a command line not understood included), 2 singular, 3 not
/// converged (docs/reliability.md).
#[test]
fn exit_statuses_are_the_documented_ones() {
    let d = scratch("messages-status");
    let (a, x) = small_system(&d);
    let (sa, sx) = (a.to_str().unwrap(), x.to_str().unwrap());
    let out = d.join("z.mtx");
    let so = out.to_str().unwrap();
    assert_eq!(
        run(&["solve", "--matrix", sa, "--rhs", sx, "--out", so])
            .status
            .code(),
        Some(0)
    );
    let r = run(&[
        "solve",
        "--matrix",
        sa,
        "--rhs",
        sx,
        "--out",
        so,
        "--max-iter",
        "1",
        "--restart",
        "1",
    ]);
    assert_eq!(r.status.code(), Some(3), "{}", stderr(&r));
    assert!(stderr(&r).contains("did not converge"));
    assert_eq!(run(&["solve", "--no-such-option"]).status.code(), Some(1));
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    let singular = d.join("s.mtx");
    std::fs::write(
        &singular,
        "%%MatrixMarket matrix array real general\n2 2\n1\n1\n1\n1\n",
    )
    .unwrap();
    let r = run(&["lu", "--matrix", singular.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let r = run(&heat(
        "8",
        &[
            "--t-end",
            "1",
            "--max-steps",
            "2",
            "--out",
            d.join("r.mtx").to_str().unwrap(),
        ],
    ));
    assert_eq!(r.status.code(), Some(3), "{}", stderr(&r));
    assert!(!d.join("r.mtx").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// With `--json` an error is also a JSON object on stdout (where the report would have
/// been): `{"error": {"kind", "message", "exit_status", ...numbers}}`; the human line
/// stays on stderr and the exit status is the same as without `--json`.
#[test]
fn json_errors_are_one_object_on_stdout() {
    let d = scratch("messages-json");
    let singular = d.join("s.mtx");
    std::fs::write(
        &singular,
        "%%MatrixMarket matrix array real general\n2 2\n1\n1\n0\n0\n",
    )
    .unwrap();
    let s = singular.to_str().unwrap();
    let error_of = |r: &std::process::Output, code: i32| -> serde_json::Value {
        assert_eq!(r.status.code(), Some(code), "{}", stderr(r));
        assert!(stderr(r).starts_with("error"), "{}", stderr(r));
        let text = String::from_utf8_lossy(&r.stdout);
        assert_eq!(text.lines().count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON on stdout");
        assert_eq!(v["error"]["exit_status"], code, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
        v["error"].clone()
    };
    let e = error_of(&run(&["lu", "--matrix", s, "--json"]), 2);
    assert_eq!(e["kind"], "singular");
    assert_eq!(e["column"], 1);
    let e = error_of(
        &run(&["lu", "--matrix", s, "--json", "--no-such-option"]),
        1,
    );
    assert_eq!(e["kind"], "usage");
    assert!(
        e["message"].as_str().unwrap().contains("--no-such-option"),
        "{e}"
    );
    let e = error_of(&run(&["mpc", "--objects", "-1", "--json"]), 1);
    assert_eq!(e["kind"], "usage");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot be negative"),
        "{e}"
    );
    let e = error_of(&run(&heat("3", &["--rtol", "0", "--json"])), 1);
    assert_eq!(e["kind"], "invalid_argument");
    assert!(e["message"].as_str().unwrap().contains("--rtol"), "{e}");
    let r = crate::common::cli::run_limited(4 << 20, &["mpc", "--objects", "1e8", "--json"]);
    let e = error_of(&r, 1);
    assert_eq!(e["kind"], "out_of_host_memory");
    let requested: u128 = e["requested_bytes"].as_str().unwrap().parse().unwrap();
    assert!(
        requested > e["limit_bytes"].as_u64().unwrap() as u128,
        "{e}"
    );
    assert_eq!(e["limit"], "ulimit -v");
    // Without --json nothing goes to stdout.
    assert_error(&run(&["lu", "--matrix", s]), 2, &["singular"], "text");
    let _ = std::fs::remove_dir_all(d);
}
