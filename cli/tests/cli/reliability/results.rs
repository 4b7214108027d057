//! Benchmarks without a GPU never overwrite results recorded with one (one rule for
//! every benchmark: `ferrocuda_bench::output::ResultsDir`). `--device cpu` makes any
//! machine a machine without a GPU.

use std::path::Path;

use crate::common::cli::{run, scratch, stderr};

/// A small `bench lu` (one order, no thesis tables, no f32).
const LU: &[&str] = &[
    "lu",
    "--sizes",
    "32",
    "--no-thesis",
    "--no-f32",
    "--reps",
    "1",
];

const GPU_RECORD: &str = "# recorded on an H100\n";

/// Runs `bench <args> --device cpu --results-dir dir`.
fn bench(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["bench"];
    all.extend(args);
    all.extend(["--device", "cpu", "--results-dir", dir.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

#[test]
fn cpu_only_runs_keep_recorded_gpu_results() {
    let d = scratch("results-kept");
    let runs: [(&str, &[&str], &[&str]); 5] = [
        ("lu.md", LU, &["lu.png"]),
        (
            "rock4.md",
            &["rock4", "--sizes", "16", "--reps", "1"],
            &["rock4.png"],
        ),
        (
            "spmv.md",
            &["spmv", "--case", "2x4x2x1", "--reps", "1"],
            &[],
        ),
        (
            "gmres.md",
            &[
                "gmres",
                "--case",
                "2x4x2x1",
                "--no-peers",
                "--max-iter",
                "20",
            ],
            &[],
        ),
        (
            "multigrid.md",
            &["mg", "--quick", "--reps", "1"],
            &["multigrid-table-6-1-error.png"],
        ),
    ];
    for (record, args, pngs) in runs {
        std::fs::write(d.join(record), GPU_RECORD).unwrap();
        for png in pngs {
            std::fs::write(d.join(png), "recorded plot").unwrap();
        }
        let o = bench(&d, args);
        assert!(stderr(&o).contains("is kept"), "{record}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(d.join(record)).unwrap(),
            GPU_RECORD,
            "{record}"
        );
        for png in pngs {
            assert_eq!(
                std::fs::read_to_string(d.join(png)).unwrap(),
                "recorded plot",
                "{png}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn cpu_only_runs_write_a_fresh_folder_marked_as_such() {
    let d = scratch("results-fresh");
    let args = LU;
    bench(&d, args);
    let md = std::fs::read_to_string(d.join("lu.md")).unwrap();
    assert!(
        md.starts_with(ferrocuda_bench::output::CPU_ONLY_MARK),
        "{md}"
    );
    assert!(d.join("lu.png").exists());
    // A later CPU-only run may replace a CPU-only record.
    let o = bench(&d, args);
    assert!(stderr(&o).contains("wrote"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bench_redraw_draws_a_chart_again_from_its_data() {
    let d = scratch("results-redraw");
    bench(&d, LU);
    let (png, json) = (d.join("lu.png"), d.join("lu.json"));
    assert!(json.exists(), "the chart's data is written beside it");
    let first = std::fs::read(&png).unwrap();
    std::fs::remove_file(&png).unwrap();
    let o = run(&["bench", "redraw", "--results-dir", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("1 charts drawn"), "{out}");
    assert_eq!(std::fs::read(&png).unwrap(), first);
    let _ = std::fs::remove_dir_all(d);
}
