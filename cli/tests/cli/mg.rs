//! `ferrocuda mg` and `ferrocuda bench mg --quick` as users call them: the JSON has
//! per-cycle `residual_norm` and `error_norm` arrays and timing, every option of the
//! issue's command line is accepted and lands in the options, bad input exits non-zero
//! with a message naming the value, and the GPU gives the CPU twin's norms. GPU parts
//! skip visibly without a GPU (`FERROCUDA_REQUIRE_GPU=1` turns that into a failure).

use crate::common;

use common::cli::{ferrocuda, gpu_present};

fn json(args: &[&str]) -> serde_json::Value {
    common::cli::json(&["mg"], args)
}

fn floats(v: &serde_json::Value, key: &str) -> Vec<f64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// Runs `ferrocuda mg ARGS`, expects a failure, returns stderr.
fn fails(args: &[&str]) -> String {
    common::cli::run_fails(&["mg"], args)
}

#[test]
fn json_has_per_cycle_norms_and_timing() {
    let v = json(&["--n", "33", "--base", "2", "--cycles", "4"]);
    let r = floats(&v, "residual_norm");
    let e = floats(&v, "error_norm");
    let a = floats(&v, "algebraic_error_norm");
    let s = floats(&v, "cycle_seconds");
    assert!(
        r.len() == 4 && e.len() == 4 && a.len() == 4 && s.len() == 4,
        "{v}"
    );
    assert!(r[1] < r[0] && r[0] < v["initial_residual_norm"].as_f64().unwrap());
    assert!(s.iter().all(|&t| t > 0.0));
    for key in ["setup_seconds", "solve_seconds", "discretisation_error"] {
        assert!(v[key].as_f64().expect(key) > 0.0, "{key}: {v}");
    }
    // After 4 cycles the error is the discretisation error (f32, 33^3).
    let d = v["discretisation_error"].as_f64().unwrap();
    assert!((e[3] / d - 1.0).abs() < 0.1, "{e:?} vs {d}");
    assert_eq!(v["cycles_to_discretisation"].as_u64(), Some(3), "{a:?}");
    assert!(v["seconds_to_discretisation"].as_f64().unwrap() > 0.0);
    assert_eq!(v["precision"], "f32");
    assert_eq!(v["sizes"], serde_json::json!([3, 5, 9, 17, 33]));
    // Without --json: a summary with one line per cycle.
    let out = ferrocuda()
        .args(["mg", "--n", "17", "--cycles", "2"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("||r||_h") && text.contains("discretisation error"),
        "{text}"
    );
}

#[test]
fn every_option_is_accepted_and_used() {
    for smoother in ["abl", "sbl", "sbl-racy", "jacobi", "rbgs"] {
        for cycle in ["v", "w", "fmg"] {
            for precision in ["f32", "f64"] {
                let v = json(&[
                    "--n",
                    "28",
                    "--base",
                    "3",
                    "--smoother",
                    smoother,
                    "--cycle",
                    cycle,
                    "--cycles",
                    "3",
                    "--inner",
                    "4",
                    "--nu1",
                    "2",
                    "--nu2",
                    "1",
                    "--precision",
                    precision,
                    "--device",
                    "cpu",
                ]);
                let o = &v["options"];
                assert_eq!(o["smoother"], smoother);
                assert_eq!(o["cycle"], cycle);
                assert_eq!(o["inner"], 4);
                assert_eq!((o["nu1"].as_u64(), o["nu2"].as_u64()), (Some(2), Some(1)));
                assert_eq!(o["base"], 3);
                assert_eq!(v["precision"], precision);
                let r = floats(&v, "residual_norm");
                assert_eq!(r.len(), 3, "{smoother} {cycle} {precision}");
                // Converging (point Jacobi with one sweep per step only slowly: it keeps
                // about 0.45 of the residual per V(2,1)-cycle on this grid).
                assert!(
                    r[2] < 0.5 * v["initial_residual_norm"].as_f64().unwrap(),
                    "{smoother} {cycle} {precision}: {r:?}"
                );
            }
        }
    }
    // --block, --omega, --until-discretisation.
    let v = json(&[
        "--n",
        "65",
        "--base",
        "4",
        "--block",
        "2",
        "--omega",
        "0.9",
        "--cycles",
        "10",
        "--until-discretisation",
    ]);
    assert_eq!(v["block"], 2);
    assert_eq!(v["omega"], 0.9);
    let c = v["cycles_to_discretisation"].as_u64().expect("reached");
    assert_eq!(floats(&v, "residual_norm").len() as u64, c);
}

#[test]
fn bad_input_exits_non_zero_with_a_clear_message() {
    let e = fails(&["--n", "16", "--base", "2"]);
    assert!(
        e.contains("n = 16") && e.contains("b^k + 1") && e.contains("17 = 2^4 + 1"),
        "{e}"
    );
    let e = fails(&["--n", "65", "--base", "3"]);
    assert!(e.contains("n = 65") && e.contains("base b = 3"), "{e}");
    let e = fails(&["--n", "9", "--base", "1"]);
    assert!(e.contains("base must be at least 2 (got 1)"), "{e}");
    let e = fails(&["--n", "9", "--base", "0"]);
    assert!(e.contains("got 0"), "{e}");
    // 4097^3 in f64 needs about 1.8 TB: refused before anything is allocated.
    let e = fails(&["--n", "4097", "--base", "2", "--precision", "f64"]);
    assert!(
        e.contains("n = 4097") && e.contains("GiB") && e.contains("host memory"),
        "{e}"
    );
    let e = fails(&["--n", "33", "--smoother", "gauss"]);
    assert!(
        e.contains("'gauss'") && e.contains("abl") && e.contains("sbl"),
        "{e}"
    );
    let e = fails(&["--n", "33", "--cycle", "x"]);
    assert!(e.contains("'x'") && e.contains("fmg"), "{e}");
    let e = fails(&["--n", "33", "--precision", "f16"]);
    assert!(e.contains("'f16'"), "{e}");
    let e = fails(&["--n", "33", "--inner", "0"]);
    assert!(e.contains("B must be at least 1"), "{e}");
    let e = fails(&["--n", "33", "--omega", "2.5"]);
    assert!(e.contains("omega") && e.contains("2.5"), "{e}");
    let e = fails(&["--n", "33", "--block", "0"]);
    assert!(e.contains("block edge"), "{e}");
    let e = fails(&["--base", "2"]);
    assert!(e.contains("--n"), "{e}");
}

#[test]
fn gpu_gives_the_cpu_twins_norms_and_refuses_what_does_not_fit() {
    if !gpu_present("gpu_gives_the_cpu_twins_norms_and_refuses_what_does_not_fit") {
        return;
    }
    for (smoother, n, base) in [("abl", "65", "4"), ("sbl", "33", "2"), ("sbl", "37", "6")] {
        for precision in ["f32", "f64"] {
            let args = [
                "--n",
                n,
                "--base",
                base,
                "--smoother",
                smoother,
                "--precision",
                precision,
                "--cycles",
                "4",
            ];
            let c = json(&args);
            let mut ga = args.to_vec();
            ga.extend(["--device", "gpu"]);
            let g = json(&ga);
            assert_ne!(g["device"], c["device"]);
            for key in ["residual_norm", "error_norm"] {
                for (a, b) in floats(&c, key).iter().zip(floats(&g, key)) {
                    assert!(
                        (a - b).abs() <= 1e-10 * a.abs(),
                        "{smoother} {n} {precision} {key}: CPU {a} GPU {b}"
                    );
                }
            }
        }
    }
    let e = fails(&["--n", "4097", "--base", "2", "--device", "gpu"]);
    assert!(
        e.contains("n = 4097") && e.contains("GiB") && e.contains("free GPU memory"),
        "{e}"
    );
    // Issue 6: 1025^3 in f32 to the discretisation error on the GPU (the time is the
    // benchmark's business; here that it is reached).
    let v = json(&[
        "--n",
        "1025",
        "--device",
        "gpu",
        "--cycle",
        "fmg",
        "--nu1",
        "2",
        "--nu2",
        "2",
        "--inner",
        "4",
        "--until-discretisation",
    ]);
    let c = v["cycles_to_discretisation"]
        .as_u64()
        .expect("1025^3 reached");
    eprintln!(
        "1025^3 f32 on {}: {c} cycles, {:.3} s",
        v["device"],
        v["seconds_to_discretisation"].as_f64().unwrap()
    );
}

#[test]
fn bench_mg_quick_writes_tables_and_plots() {
    let dir = common::cli::scratch("mg-bench");
    let v = common::cli::json(
        &["bench", "mg"],
        &[
            "--quick",
            "--results-dir",
            dir.to_str().expect("UTF-8 path"),
        ],
    );
    let md = std::fs::read_to_string(dir.join("multigrid.md")).expect("multigrid.md");
    for t in [
        "Table 6.1",
        "Table 6.2",
        "Table 6.3",
        "Table 6.4",
        "Table 6.7",
        "Table 6.8",
    ] {
        assert!(md.contains(t), "{t} missing");
    }
    // The thesis's figures stand beside ours: 0.295447 is Table 6.1's first residual.
    assert!(md.contains("0.295447") && md.contains("6.679e-2"), "{md}");
    let thesis = v["thesis"].as_array().expect("thesis runs");
    assert_eq!(thesis.len(), 8);
    for r in thesis {
        let ours = if r["gpu"].is_null() {
            &r["cpu"]
        } else {
            &r["gpu"]
        };
        let res = floats(ours, "residual_norm");
        assert_eq!(res.len(), 10);
        assert!(ours["cycles_to_discretisation"].as_u64().is_some(), "{r}");
    }
    assert_eq!(v["sweep"].as_array().unwrap().len(), 3);
    assert!(!v["large_cpu"].is_null());
    for png in [
        "multigrid-table-6-1-residual.png",
        "multigrid-table-6-4-error.png",
    ] {
        let bytes = std::fs::read(dir.join(png)).expect(png);
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
    if gpu_present("bench_mg_quick_writes_tables_and_plots (GPU part)") {
        let copy = v["copy_gbps"].as_f64().expect("copy bandwidth");
        assert!(copy > 0.0);
        let rows = v["smoother"].as_array().expect("smoother rows");
        assert_eq!(rows.len(), 3);
        for r in rows {
            let f = r["fraction_of_copy"].as_f64().unwrap();
            assert!(f > 0.0 && f < 1.5, "{r}");
        }
        assert_eq!(v["large"].as_array().unwrap().len(), 4);
        assert!(dir.join("multigrid-65-error.png").exists());
    } else {
        assert!(v["device"].is_null() && v["large"].as_array().unwrap().is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
