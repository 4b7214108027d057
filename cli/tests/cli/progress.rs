//! Progress bars and provenance as users meet them (issue 23, item 6): run from a pipe,
//! as here, no command draws a bar, with or without `--quiet` (before or after the
//! subcommand); JSON on stdout stays valid; every results file and every benchmark's
//! JSON names the date, the commit, the version and the device; a file that keeps
//! sections from earlier runs marks each with its own.

use crate::common;
use common::cli::{heat, run, scratch, stderr};

/// Whether `bytes` hold anything a progress bar draws: carriage returns, terminal
/// escapes, indicatif's bar characters.
fn has_bar(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains('\r') || text.contains('\x1b') || text.contains("[=") || text.contains("=>")
}

fn assert_no_bar(what: &str, out: &std::process::Output) {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    assert!(
        !has_bar(&out.stdout),
        "{what}: stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!has_bar(&out.stderr), "{what}: stderr {:?}", stderr(out));
}

#[test]
fn no_bars_from_a_pipe_with_or_without_quiet() {
    let mg = ["mg", "--n", "17", "--base", "2", "--cycles", "2"];
    assert_no_bar("mg", &run(&mg));
    assert_no_bar("mg --quiet", &run(&[&mg[..], &["--quiet"]].concat()));
    assert_no_bar("--quiet mg", &run(&[&["--quiet"], &mg[..]].concat()));
    let rock4 = heat("16", &["--t-end", "0.001"]);
    assert_no_bar("rock4", &run(&rock4));
    assert_no_bar("rock4 --quiet", &run(&[&rock4[..], &["--quiet"]].concat()));
    // JSON with --quiet stays one valid document.
    let out = run(&[&mg[..], &["--json", "--quiet"]].concat());
    assert_no_bar("mg --json --quiet", &out);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON");
}

#[test]
fn bench_results_and_json_carry_provenance_and_mark_sections() {
    let dir = scratch("provenance");
    let d = dir.to_str().expect("UTF-8 path");
    let args = [
        "bench",
        "gmres",
        "--case",
        "4x8x4x2",
        "--max-iter",
        "6",
        "--no-peers",
        "--results-dir",
        d,
        "--device",
        "cpu",
    ];
    let out = run(&[&args[..], &["--json"]].concat());
    assert_no_bar("bench gmres --json", &out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let p = &v["provenance"];
    for key in ["date", "commit", "version", "device"] {
        assert!(p[key].as_str().is_some_and(|s| !s.is_empty()), "{key}: {p}");
    }
    assert!(p["date"].as_str().unwrap().ends_with(" UTC"), "{p}");
    assert!(p["device"].as_str().unwrap().starts_with("CPU only"), "{p}");
    // The report's own keys are still there.
    assert!(v["rows"].is_array(), "{v}");

    assert_no_bar(
        "bench gmres --quiet",
        &run(&[&args[..], &["--quiet"]].concat()),
    );
    let md = std::fs::read_to_string(dir.join("gmres.md")).expect("gmres.md");
    assert_eq!(md.matches("<!-- ferrocuda-results: ").count(), 1, "{md}");
    // The same setup measured twice keeps one section, the second run's: fresh (this
    // build on this machine), not stale.
    assert_eq!(md.matches("<!-- ferrocuda-section: ").count(), 1, "{md}");
    assert_eq!(md.matches("\n## 4x8x4x2 f64, GMRES(").count(), 1, "{md}");
    assert!(!md.contains("**Stale:**"), "{md}");
    assert_eq!(md.matches("\n_Measured ").count(), 2, "{md}");
    for key in ["date", "commit", "version", "device"] {
        assert!(
            md.contains(p[key].as_str().unwrap().split(' ').next().unwrap()),
            "{key}: {md}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
