//! The probe's results page: `probe.md` (Markdown tables of the figures and sweeps) and
//! PNG plots of the sweeps, from the [`ProbeReport`] that [`ferrocuda::probe::run`]
//! returns (its plain-text form is [`ProbeReport::to_text`]).

use crate::markdown_table;
use crate::output::{ResultsDir, Saved};
use crate::plot::{LineChart, LineSeries};
use ferrocuda::Result;
use ferrocuda::probe::{Figure, ProbeReport, Sweep, SweepPoint, TABLE_HEADERS, human};

fn x_of(p: &SweepPoint) -> f64 {
    (p.bytes / 1024.0).log2()
}

/// Markdown for docs/results/probe.md; `plots` are image file names to link.
pub fn to_markdown(report: &ProbeReport, plots: &[String]) -> String {
    let mut out = String::from(
        "# ferrocuda probe\n\nWritten by `ferrocuda probe`; do not edit by hand. What each figure means: `docs/probe.md`.\n\n",
    );
    for line in report.header_lines() {
        out.push_str(&format!("- {line}\n"));
    }
    if report.quick {
        out.push_str("- quick mode (`--quick`): smaller sizes, fewer repetitions\n");
    }
    out.push('\n');
    let groups = [
        ("clock", "Clock"),
        ("compute", "Arithmetic peaks (an FMA counts 2 FLOPs)"),
        ("memory", "Memory bandwidth"),
        ("shared", "Shared memory"),
        (
            "latency",
            "Instruction latency (cycles per dependent instruction)",
        ),
        ("chase", "Memory latency (pointer chase, cycles per load)"),
        ("transfer", "Host <-> device"),
        ("divergence", "Warp divergence"),
    ];
    for (g, title) in groups {
        let rows: Vec<Vec<String>> = report
            .figures
            .iter()
            .filter(|f| f.group == g)
            .map(Figure::cells)
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("## {title}\n\n"));
        out.push_str(&markdown_table(&TABLE_HEADERS, &rows));
        let sources: Vec<String> = report
            .figures
            .iter()
            .filter(|f| f.group == g && !f.ceiling_source.is_empty())
            .map(|f| f.ceiling_source.clone())
            .fold(Vec::new(), |mut v, s| {
                if !v.contains(&s) {
                    v.push(s)
                }
                v
            });
        for s in sources {
            out.push_str(&format!("\nCeiling: {s}.\n"));
        }
        out.push('\n');
    }
    for s in &report.bandwidth_sweeps {
        sweep_table(
            &mut out,
            &format!("Read sweep: {}", s.name),
            "GB/s",
            &s.points,
        );
    }
    for s in &report.transfers {
        sweep_table(
            &mut out,
            &format!("Transfer sweep: {}", s.name),
            "GB/s",
            &s.points,
        );
    }
    for p in plots {
        out.push_str(&format!("![{p}]({p})\n\n"));
    }
    out
}

/// The PNG charts of the sweeps: `(file name, chart)`.
pub fn charts(report: &ProbeReport) -> Vec<(String, LineChart)> {
    let ceilings = report.ceilings.as_ref();
    charts_with_ceilings(
        report,
        ceilings.and_then(|c| c.dram).map(|d| d / 1e9),
        ceilings.and_then(|c| c.pcie).map(|p| p / 1e9),
    )
}

/// [`charts`] with the theoretical DRAM and PCIe bandwidths (GB/s) given (also used to
/// redraw them from `probe.md`, [`crate::redraw`], whose report has no ceilings).
pub fn charts_with_ceilings(
    report: &ProbeReport,
    dram_gbps: Option<f64>,
    pcie_gbps: Option<f64>,
) -> Vec<(String, LineChart)> {
    let dev = report.device.clone().unwrap_or_else(|| "GPU".into());
    let series = |s: &Sweep| LineSeries {
        name: s.name.clone(),
        points: s
            .points
            .iter()
            .filter(|p| p.value > 0.0 && p.value.is_finite())
            .map(|p| (x_of(p), p.value))
            .collect(),
    };
    let mut out = Vec::new();
    if !report.bandwidth_sweeps.is_empty() {
        out.push((
            "probe-bandwidth.png".to_string(),
            LineChart {
                title: format!("Read bandwidth by buffer size, {dev}"),
                x_label: "log2(buffer KiB)".into(),
                y_label: "GB/s".into(),
                log_y: true,
                series: report.bandwidth_sweeps.iter().map(series).collect(),
                reference_line: dram_gbps.map(|d| (d, "DRAM (theoretical)".into())),
            },
        ));
    }
    if !report.chase.is_empty() {
        out.push((
            "probe-latency.png".to_string(),
            LineChart {
                title: format!("Pointer-chase latency by buffer size, {dev}"),
                x_label: "log2(buffer KiB)".into(),
                y_label: "cycles per load".into(),
                log_y: true,
                series: vec![series(&Sweep {
                    name: "dependent loads, random 128-byte lines".into(),
                    points: report.chase.clone(),
                })],
                reference_line: None,
            },
        ));
    }
    if !report.transfers.is_empty() {
        out.push((
            "probe-transfer.png".to_string(),
            LineChart {
                title: format!("Host <-> device copies by size, {dev}"),
                x_label: "log2(KiB per copy)".into(),
                y_label: "GB/s".into(),
                log_y: true,
                series: report.transfers.iter().map(series).collect(),
                reference_line: pcie_gbps.map(|p| (p, "PCIe line rate".into())),
            },
        ));
    }
    if !report.divergence.is_empty() {
        out.push((
            "probe-divergence.png".to_string(),
            LineChart {
                title: format!("Warp divergence, {dev}"),
                x_label: "paths per warp".into(),
                y_label: "time / time of 1 path".into(),
                log_y: true,
                series: vec![
                    LineSeries {
                        name: "measured".into(),
                        points: report
                            .divergence
                            .iter()
                            .map(|&(p, r)| (p as f64, r))
                            .collect(),
                    },
                    LineSeries {
                        name: "ideal (paths run one after another)".into(),
                        points: report
                            .divergence
                            .iter()
                            .map(|&(p, _)| (p as f64, p as f64))
                            .collect(),
                    },
                ],
                reference_line: None,
            },
        ));
    }
    out
}

/// Writes probe.md and the plots (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &ProbeReport, out: &ResultsDir) -> Result<Saved> {
    out.save("probe.md", |out| {
        let mut written = Vec::new();
        let mut names = Vec::new();
        for (name, chart) in charts(report) {
            let path = out.join(&name);
            written.extend(crate::plot::write_with_data(
                chart,
                &path,
                1200,
                640,
                "ferrocuda probe",
            )?);
            names.push(name);
        }
        written.push(out.write_markdown("probe.md", &to_markdown(report, &names))?);
        Ok(written)
    })
}

fn sweep_table(out: &mut String, title: &str, unit: &str, points: &[SweepPoint]) {
    if points.is_empty() {
        return;
    }
    out.push_str(&format!("### {title}\n\n"));
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| vec![human(p.bytes as usize), format!("{:.1}", p.value)])
        .collect();
    out.push_str(&markdown_table(&["size", unit], &rows));
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report with one figure within its ceiling and one above it, and one sweep.
    fn report() -> ProbeReport {
        let ceiling = || Some((3352.0, "DRAM".to_string()));
        let mut r = ProbeReport::skipped("test".into());
        r.figures = vec![
            Figure::new("memory", "copy", 2900.0, "GB/s", ceiling(), "ok"),
            Figure::new("memory", "read", 3353.0, "GB/s", ceiling(), "ok"),
        ];
        r.bandwidth_sweeps = vec![Sweep {
            name: "read".into(),
            points: vec![SweepPoint {
                bytes: 4194304.0,
                value: 2500.0,
            }],
        }];
        r
    }

    #[test]
    fn markdown_flags_impossible_figures_and_lists_sweeps_and_plots() {
        let md = to_markdown(&report(), &["probe-bandwidth.png".into()]);
        assert!(md.starts_with("# ferrocuda probe\n"), "{md}");
        assert!(md.contains("- no GPU: test (nothing measured)\n"), "{md}");
        assert!(md.contains("## Memory bandwidth\n"), "{md}");
        assert!(
            md.contains("| read | 3353 GB/s | 3352 GB/s | 100.0 % MEASUREMENT BUG | ok |"),
            "{md}"
        );
        assert!(md.contains("Ceiling: DRAM.\n"), "{md}");
        assert!(md.contains("### Read sweep: read\n"), "{md}");
        assert!(md.contains("| 4 MiB | 2500.0 |"), "{md}");
        assert!(
            md.contains("![probe-bandwidth.png](probe-bandwidth.png)"),
            "{md}"
        );
    }

    #[test]
    fn charts_only_for_the_sweeps_measured() {
        let names: Vec<String> = charts(&report()).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["probe-bandwidth.png"]);
        assert!(charts(&ProbeReport::skipped("none".into())).is_empty());
    }

    #[test]
    fn write_results_writes_the_page_and_the_plots() {
        let dir = std::env::temp_dir().join(format!("ferrocuda-probe-md-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let results = ResultsDir::new(&dir, true);
        let written = write_results(&report(), &results).unwrap();
        assert_eq!(
            written,
            Saved::Wrote(vec![
                dir.join("probe-bandwidth.png"),
                dir.join("probe-bandwidth.json"),
                dir.join("probe.md")
            ])
        );
        // The page as written, less the provenance lines the results set adds.
        let md = results.read_markdown("probe.md").unwrap();
        assert_eq!(md, to_markdown(&report(), &["probe-bandwidth.png".into()]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
