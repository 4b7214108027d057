//! `ferrocuda probe` and `ferrocuda info` as users call them. Without a GPU the probe
//! says so and exits 0; with one (the GPU machine), a quick probe writes its results and
//! every figure lies within its ceiling.

use crate::common;

use common::cli::ferrocuda;
use std::path::PathBuf;

fn scratch_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrocuda-probe-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn require_gpu() -> bool {
    std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

#[test]
fn probe_quick_json_exits_0_and_reports_every_figure_within_its_ceiling() {
    let dir = scratch_dir("quick");
    let out = ferrocuda()
        .args(["probe", "--quick", "--json", "--results-dir"])
        .arg(&dir)
        .output()
        .expect("run ferrocuda");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    if v["device"].is_null() {
        assert!(
            !require_gpu(),
            "FERROCUDA_REQUIRE_GPU=1 but: {}",
            v["gpu_skipped"]
        );
        assert!(v["gpu_skipped"].is_string(), "{v}");
        assert!(v["figures"].as_array().unwrap().is_empty());
        assert!(!dir.exists(), "nothing is written without a GPU");
        eprintln!("SKIPPED GPU part of probe_quick: {}", v["gpu_skipped"]);
        return;
    }
    let figures = v["figures"].as_array().expect("figures");
    assert!(figures.len() > 30, "{} figures", figures.len());
    for f in figures {
        let (name, value) = (f["name"].as_str().unwrap(), f["value"].as_f64());
        assert_eq!(f["impossible"], false, "{name}: flagged impossible: {f}");
        assert!(
            !f["check"].as_str().unwrap().contains("MISMATCH"),
            "{name}: {f}"
        );
        if !name.contains("t0") {
            assert!(value.is_some_and(|v| v > 0.0), "{name}: not positive: {f}");
        }
        if let Some(p) = f["percent"].as_f64() {
            let tol = f["tolerance_pct"].as_f64().unwrap();
            assert!(p > 0.0 && p <= 100.0 + tol, "{name}: {p} % of its ceiling");
        }
    }
    let md = std::fs::read_to_string(dir.join("probe.md")).expect("probe.md written");
    assert!(
        md.contains(v["device"].as_str().unwrap()),
        "probe.md names the device"
    );
    for png in [
        "probe-bandwidth.png",
        "probe-latency.png",
        "probe-transfer.png",
        "probe-divergence.png",
    ] {
        assert!(dir.join(png).exists(), "{png} written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probe_without_gpu_says_so_in_text() {
    let out = ferrocuda()
        .args(["probe", "--quick", "--no-write"])
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("run ferrocuda");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no GPU"), "{text}");
}

#[test]
fn probe_rejects_zero_reps() {
    let out = ferrocuda()
        .args(["probe", "--reps", "0", "--no-write"])
        .output()
        .expect("run ferrocuda");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reps"));
}

#[test]
fn info_json_has_ceilings_per_device() {
    let out = ferrocuda().args(["info", "--json"]).output().expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let devices = v["devices"].as_array().unwrap();
    let ceilings = v["ceilings"].as_array().unwrap();
    assert_eq!(devices.len(), ceilings.len());
    for c in ceilings {
        assert!(c["dram"].as_f64().is_some_and(|d| d > 1e9), "{c}");
    }
}
