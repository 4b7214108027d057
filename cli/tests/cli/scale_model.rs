//! `ferrocuda bench scale-model`: no GPU needed; it reads the scaling tables, writes the
//! model's files beside them, and refuses missing or malformed tables with the reason.

use crate::common::cli::{assert_error, run, scratch, stderr};

/// The measured tables as committed (embedded, so the test needs no source tree).
const SCALING: &str = include_str!("../../../docs/results/scaling.md");

#[test]
fn the_model_checks_the_measured_points_and_writes_its_files() {
    let d = scratch("scale-model");
    std::fs::write(d.join("scaling.md"), SCALING).unwrap();
    let o = run(&[
        "bench",
        "scale-model",
        "--json",
        "--results-dir",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["within_tolerance"], true, "{json}");
    assert_eq!(json["check"].as_array().map(Vec::len), Some(8));
    for f in [
        "scaling-model.md",
        "scaling-model.json",
        "scaling-model-chart.png",
        "scaling-model-check.png",
    ] {
        assert!(d.join(f).exists(), "{f} not written: {}", stderr(&o));
    }
    let md = std::fs::read_to_string(d.join("scaling-model.md")).unwrap();
    assert!(md.contains("scaling.md:24"), "the check names its rows");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn missing_or_malformed_tables_are_refused() {
    let d = scratch("scale-model-bad");
    let dir = d.to_str().unwrap();
    let o = run(&["bench", "scale-model", "--results-dir", dir]);
    assert_error(&o, 1, &["scaling.md", "ferrocuda bench scaling"], "missing");
    std::fs::write(
        d.join("scaling.md"),
        SCALING.replace("| 0.8873 |", "| 0.88x73 |"),
    )
    .unwrap();
    let o = run(&["bench", "scale-model", "--results-dir", dir]);
    assert_error(&o, 1, &["scaling.md:20", "0.88x73"], "malformed");
    let _ = std::fs::remove_dir_all(d);
}
