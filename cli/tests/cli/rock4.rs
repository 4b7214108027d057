//! `ferrocuda rock4` as users call it: the heat problem against its exact solution, the
//! thesis problem, `--out`, and bad input.

use crate::common;

use common::cli::{ferrocuda, gpu_present};

fn json(args: &[&str]) -> serde_json::Value {
    common::cli::json(&["rock4"], args)
}

/// The heat problem on 31 x 31 unknowns to t = 0.1 with tolerance `rtol`.
fn heat_31(rtol: &str) -> [&str; 8] {
    [
        "--problem",
        "heat",
        "--n",
        "31",
        "--t-end",
        "0.1",
        "--rtol",
        rtol,
    ]
}

#[test]
fn heat_reaches_t_end_within_tolerance_of_the_exact_solution() {
    let v = json(&heat_31("1e-8"));
    assert_eq!(v["reason"], "finished");
    assert_eq!(v["final_time"], 0.1);
    assert_eq!(v["unknowns"], 961);
    let err = v["max_abs_error"].as_f64().expect("max_abs_error");
    assert!(err > 0.0 && err < 1e-6, "max |y - exact| = {err}");
    let acc = v["steps_accepted"].as_u64().expect("steps");
    assert!(acc > 0);
    assert_eq!(
        v["report"]["history"].as_array().expect("history").len() as u64,
        acc + v["steps_rejected"].as_u64().unwrap()
    );
    // A looser tolerance: fewer steps, a larger error.
    let loose = json(&heat_31("1e-4"));
    assert!(loose["steps_accepted"].as_u64().unwrap() < acc);
    assert!(loose["max_abs_error"].as_f64().unwrap() > err);
}

#[test]
fn thesis_problem_stays_bounded_with_both_advection_schemes_and_thread_modes() {
    let mut finals = Vec::new();
    for adv in ["central", "forward"] {
        for threads in ["all", "single"] {
            let v = json(&[
                "--problem",
                "jahn",
                "--n",
                "60",
                "--advection",
                adv,
                "--threads",
                threads,
            ]);
            assert_eq!(v["reason"], "finished", "{adv} {threads}");
            assert!(v["max_abs_error"].is_null());
            let (lo, hi) = (
                v["solution_range"][0].as_f64().unwrap(),
                v["solution_range"][1].as_f64().unwrap(),
            );
            assert!(
                (-1e-6..=1.0 + 1e-6).contains(&lo) && hi <= 1.0 + 1e-6,
                "{adv}: [{lo}, {hi}]"
            );
            finals.push((
                adv,
                v["steps_accepted"].clone(),
                v["solution_range"].clone(),
            ));
        }
    }
    // One thread and all cores take the same steps to the same bits.
    assert_eq!(finals[0].1, finals[1].1);
    assert_eq!(finals[0].2, finals[1].2);
    assert_eq!(finals[2].2, finals[3].2);
}

#[test]
fn out_is_written_on_success_only() {
    let dir = common::cli::scratch("rock4-out");
    let out = dir.join("y.mtx");
    let o = out.to_str().unwrap();
    // The heat problem on 4 x 4 unknowns with `options`, written to `out`.
    let heat = |options: &[&str]| {
        common::cli::run(
            &[
                &["rock4", "--problem", "heat", "--n", "4"],
                options,
                &["--out", o],
            ]
            .concat(),
        )
    };
    let r = heat(&["--t-end", "0.01"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(
        text.starts_with("%%MatrixMarket matrix array real general"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| !l.starts_with('%')).count(), 1 + 16);
    // A failing run leaves it as it was.
    let r = heat(&["--rtol", "-1"]);
    assert!(!r.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_is_a_clear_error() {
    for (args, want) in [
        (vec!["--problem", "heat", "--n", "0"], "--n"),
        (
            vec!["--problem", "heat", "--n", "8", "--rtol", "-1"],
            "rtol",
        ),
        (vec!["--problem", "heat", "--n", "8", "--atol", "0"], "atol"),
        (
            vec!["--problem", "heat", "--n", "8", "--t-end", "-1"],
            "t-end",
        ),
        (vec!["--problem", "heat", "--n", "8", "--nu", "-2"], "nu"),
        (
            vec!["--problem", "heat", "--n", "8", "--t-end", "nan"],
            "t-end",
        ),
        (vec!["--problem", "wave", "--n", "8"], "wave"),
    ] {
        let r = ferrocuda().arg("rock4").args(&args).output().expect("run");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `--device gpu` takes the CPU's steps on the heat problem and meets the same accuracy;
/// on the thesis problem it finishes within the same bounds.
#[test]
fn gpu_matches_the_cpu() {
    if !gpu_present("gpu_matches_the_cpu") {
        let r = ferrocuda()
            .args(["rock4", "--problem", "heat", "--n", "8", "--device", "gpu"])
            .output()
            .expect("run");
        assert!(!r.status.success());
        assert!(String::from_utf8_lossy(&r.stderr).contains("no CUDA device"));
        return;
    }
    let args = heat_31("1e-8");
    let cpu = json(&args);
    for controller in ["auto", "host", "device"] {
        let mut g = args.to_vec();
        g.extend(["--device", "gpu", "--controller", controller]);
        let gpu = json(&g);
        assert_eq!(gpu["device"], "gpu");
        assert!(gpu["gpu_name"].is_string());
        assert_eq!(gpu["steps_accepted"], cpu["steps_accepted"], "{controller}");
        assert_eq!(gpu["steps_rejected"], cpu["steps_rejected"], "{controller}");
        assert_eq!(gpu["final_time"], 0.1);
        assert!(gpu["max_abs_error"].as_f64().unwrap() < 1e-6);
        let launches = gpu["report"]["device_launches"].as_u64().unwrap();
        assert_eq!(
            launches == 0,
            controller == "host",
            "{controller}: {launches}"
        );
    }
    let jahn = json(&["--problem", "jahn", "--n", "100", "--device", "gpu"]);
    assert_eq!(jahn["reason"], "finished");
    let hi = jahn["solution_range"][1].as_f64().unwrap();
    assert!(hi > 0.5 && hi <= 1.0 + 1e-6, "{hi}");
}
