//! The probe report as a table, Markdown (docs/results/probe.md) and PNG plots.

use std::path::{Path, PathBuf};

use super::{Figure, ProbeReport, Sweep, SweepPoint};
use crate::bench::plot::{LineChart, LineSeries};
use crate::bench::{markdown_table, table};
use crate::error::{Error, Result};

fn cells(f: &Figure) -> Vec<String> {
    let num = |v: f64| {
        if !v.is_finite() {
            "-".to_string()
        } else if v.abs() >= 100.0 {
            format!("{v:.0}")
        } else if v.abs() >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    vec![
        f.name.clone(),
        format!("{} {}", num(f.value), f.unit),
        f.ceiling
            .map_or("-".into(), |c| format!("{} {}", num(c), f.unit)),
        match (f.percent, f.impossible) {
            (_, true) => format!(
                "{} MEASUREMENT BUG",
                f.percent.map_or("-".into(), |p| format!("{p:.1} %"))
            ),
            (Some(p), false) => format!("{p:.1} %"),
            (None, false) => "-".into(),
        },
        f.check.clone(),
    ]
}

const HEADERS: [&str; 5] = ["figure", "measured", "ceiling", "% of ceiling", "check"];

fn x_of(p: &SweepPoint) -> f64 {
    (p.bytes / 1024.0).log2()
}

impl ProbeReport {
    fn header(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match (&self.device, &self.gpu_skipped) {
            (Some(d), _) => lines.push(format!("device: {d}")),
            (None, why) => lines.push(format!(
                "no GPU: {} (nothing measured)",
                why.clone().unwrap_or_default()
            )),
        }
        if let Some(c) = &self.ceilings {
            lines.push(format!(
                "compute capability {}.{}, {} SMs, peak SM clock {}",
                c.compute_capability.0,
                c.compute_capability.1,
                c.sms,
                c.peak_clock_hz
                    .map_or("not reported".into(), |h| format!("{:.0} MHz", h / 1e6))
            ));
        }
        if let Some(hz) = self.measured_clock_hz {
            lines.push(format!(
                "SM clock measured during the FP32 FMA kernel: {:.0} MHz (compute ceilings use the clock measured in each kernel)",
                hz / 1e6
            ));
        }
        let bad = self.impossible();
        if !bad.is_empty() {
            lines.push(format!(
                "{} figure(s) above their ceiling or otherwise impossible: measurement bugs, not results",
                bad.len()
            ));
        }
        lines
    }

    /// Plain-text report: the header and one table of figures.
    pub fn to_text(&self) -> String {
        let rows: Vec<Vec<String>> = self.figures.iter().map(cells).collect();
        let mut out = self.header().join("\n");
        out.push('\n');
        if !rows.is_empty() {
            out.push('\n');
            out.push_str(&table(&HEADERS, &rows));
            out.push('\n');
        }
        out
    }

    /// Markdown for docs/results/probe.md; `plots` are image file names to link.
    pub fn to_markdown(&self, plots: &[String]) -> String {
        let mut out = String::from(
            "# ferrocuda probe\n\nWritten by `ferrocuda probe`; do not edit by hand. What each figure means: `docs/probe.md`.\n\n",
        );
        for line in self.header() {
            out.push_str(&format!("- {line}\n"));
        }
        if self.quick {
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
            let rows: Vec<Vec<String>> = self
                .figures
                .iter()
                .filter(|f| f.group == g)
                .map(cells)
                .collect();
            if rows.is_empty() {
                continue;
            }
            out.push_str(&format!("## {title}\n\n"));
            out.push_str(&markdown_table(&HEADERS, &rows));
            let sources: Vec<String> = self
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
        for s in &self.bandwidth_sweeps {
            sweep_table(
                &mut out,
                &format!("Read sweep: {}", s.name),
                "GB/s",
                &s.points,
            );
        }
        for s in &self.transfers {
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
    pub fn charts(&self) -> Vec<(String, LineChart)> {
        let dev = self.device.clone().unwrap_or_else(|| "GPU".into());
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
        if !self.bandwidth_sweeps.is_empty() {
            out.push((
                "probe-bandwidth.png".to_string(),
                LineChart {
                    title: format!("Read bandwidth by buffer size, {dev}"),
                    x_label: "log2(buffer KiB)".into(),
                    y_label: "GB/s".into(),
                    log_y: true,
                    series: self.bandwidth_sweeps.iter().map(series).collect(),
                    reference_line: self
                        .ceilings
                        .as_ref()
                        .and_then(|c| c.dram)
                        .map(|d| (d / 1e9, "DRAM (theoretical)".into())),
                },
            ));
        }
        if !self.chase.is_empty() {
            out.push((
                "probe-latency.png".to_string(),
                LineChart {
                    title: format!("Pointer-chase latency by buffer size, {dev}"),
                    x_label: "log2(buffer KiB)".into(),
                    y_label: "cycles per load".into(),
                    log_y: true,
                    series: vec![series(&Sweep {
                        name: "dependent loads, random 128-byte lines".into(),
                        points: self.chase.clone(),
                    })],
                    reference_line: None,
                },
            ));
        }
        if !self.transfers.is_empty() {
            out.push((
                "probe-transfer.png".to_string(),
                LineChart {
                    title: format!("Host <-> device copies by size, {dev}"),
                    x_label: "log2(KiB per copy)".into(),
                    y_label: "GB/s".into(),
                    log_y: true,
                    series: self.transfers.iter().map(series).collect(),
                    reference_line: self
                        .ceilings
                        .as_ref()
                        .and_then(|c| c.pcie)
                        .map(|p| (p / 1e9, "PCIe line rate".into())),
                },
            ));
        }
        if !self.divergence.is_empty() {
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
                            points: self
                                .divergence
                                .iter()
                                .map(|&(p, r)| (p as f64, r))
                                .collect(),
                        },
                        LineSeries {
                            name: "ideal (paths run one after another)".into(),
                            points: self
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

    /// Writes probe.md and the plots into `dir`; returns the paths written.
    pub fn write_results(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        let mut names = Vec::new();
        for (name, chart) in self.charts() {
            let path = dir.join(&name);
            chart.write_png(&path, 1200, 640)?;
            written.push(path);
            names.push(name);
        }
        let md = dir.join("probe.md");
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&md, self.to_markdown(&names)))
            .map_err(|e| Error::InvalidArgument {
                op: "writing results",
                reason: format!("{}: {e}", md.display()),
            })?;
        written.push(md);
        Ok(written)
    }
}

fn sweep_table(out: &mut String, title: &str, unit: &str, points: &[SweepPoint]) {
    if points.is_empty() {
        return;
    }
    out.push_str(&format!("### {title}\n\n"));
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                super::measure::human(p.bytes as usize),
                format!("{:.1}", p.value),
            ]
        })
        .collect();
    out.push_str(&markdown_table(&["size", unit], &rows));
    out.push('\n');
}
