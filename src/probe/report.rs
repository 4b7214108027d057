//! The probe report as plain text; the Markdown page and the PNG plots of the sweeps are
//! written by `ferrocuda-bench` (`ferrocuda_bench::probe`) from the same pieces.

use super::{Figure, ProbeReport};
use crate::report::table;

/// Column headers of the figure tables (see [`Figure::cells`]).
pub const TABLE_HEADERS: [&str; 5] = ["figure", "measured", "ceiling", "% of ceiling", "check"];

impl Figure {
    /// The figure as table cells under [`TABLE_HEADERS`]; an impossible figure says
    /// "MEASUREMENT BUG" in its percentage cell.
    pub fn cells(&self) -> Vec<String> {
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
            self.name.clone(),
            format!("{} {}", num(self.value), self.unit),
            self.ceiling
                .map_or("-".into(), |c| format!("{} {}", num(c), self.unit)),
            match (self.percent, self.impossible) {
                (_, true) => format!(
                    "{} MEASUREMENT BUG",
                    self.percent.map_or("-".into(), |p| format!("{p:.1} %"))
                ),
                (Some(p), false) => format!("{p:.1} %"),
                (None, false) => "-".into(),
            },
            self.check.clone(),
        ]
    }
}

impl ProbeReport {
    /// The summary lines above the tables: the device (or why there is none), compute
    /// capability and SMs, the measured clock, and how many figures are impossible.
    pub fn header_lines(&self) -> Vec<String> {
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
        let rows: Vec<Vec<String>> = self.figures.iter().map(Figure::cells).collect();
        let mut out = self.header_lines().join("\n");
        out.push('\n');
        if !rows.is_empty() {
            out.push('\n');
            out.push_str(&table(&TABLE_HEADERS, &rows));
            out.push('\n');
        }
        out
    }
}
