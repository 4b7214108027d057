//! `ferrocuda bench rock4`: seed 001's Table 6.4 measured again: ROCK4 on the thesis
//! problem (5.1) to `t = 1` for `N x N` grids, on one CPU core (the thesis's CPU column),
//! on all cores, and on the GPU where there is one, beside the thesis's own figures
//! (GTX 285 against one core of its 2010 CPU). Writes `<results-dir>/rock4.md` with a
//! speedup plot.

use serde::Serialize;

use super::plot::{BarChart, BarGroup};
use super::{markdown_table, table};
use crate::error::Result;
use crate::rock4::problems::{Advection, ReactionAdvectionDiffusion};
use crate::rock4::{Rock4Options, Rock4Report, StopReason, Threads, cpu};

/// Seed 001, Table 6.4: `(N, CPU s, GPU s)` for the time to `t = 1`.
pub const THESIS_TABLE_6_4: [(usize, f64, f64); 16] = [
    (16, 0.051, 0.137),
    (32, 0.217, 0.132),
    (48, 0.485, 0.138),
    (64, 0.893, 0.134),
    (80, 1.266, 0.138),
    (96, 1.896, 0.213),
    (112, 2.647, 0.216),
    (128, 3.398, 0.288),
    (144, 4.368, 0.304),
    (160, 5.221, 0.393),
    (176, 6.482, 0.462),
    (192, 7.228, 0.486),
    (208, 9.211, 0.616),
    (224, 10.357, 0.663),
    (240, 12.491, 0.732),
    (256, 12.800, 0.843),
];

/// What to run.
#[derive(Debug, Clone)]
pub struct Rock4BenchOptions {
    /// Grid sizes `N` (`N x N` interior points).
    pub sizes: Vec<usize>,
    /// Tolerance (`rtol = atol`).
    pub tol: f64,
    /// Advection differences (the thesis code: forward).
    pub advection: Advection,
    /// Timed runs per entry (the median counts).
    pub reps: usize,
}

impl Default for Rock4BenchOptions {
    fn default() -> Self {
        Rock4BenchOptions {
            sizes: THESIS_TABLE_6_4.iter().map(|r| r.0).collect(),
            tol: 1e-6,
            advection: Advection::Forward,
            reps: 3,
        }
    }
}

/// One grid size.
#[derive(Debug, Clone, Serialize)]
pub struct Rock4Row {
    /// Grid points per direction.
    pub n: usize,
    /// Accepted and rejected steps (the same on both CPU paths).
    pub steps: (usize, usize),
    /// Largest stage count.
    pub max_stages: usize,
    /// Seconds to `t = 1` on one core.
    pub cpu_single_s: f64,
    /// Seconds on all cores.
    pub cpu_all_s: f64,
    /// The thesis's CPU and GPU seconds, where it measured this size.
    pub thesis: Option<(f64, f64)>,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct Rock4BenchReport {
    /// CPU threads of the all-core runs.
    pub cpu_threads: usize,
    /// Tolerance used.
    pub tol: f64,
    /// Advection differences.
    pub advection: &'static str,
    /// One row per size.
    pub rows: Vec<Rock4Row>,
}

fn progress(msg: &str) {
    eprintln!("[bench rock4] {msg}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark on the CPU.
pub fn run(opts: &Rock4BenchOptions) -> Result<Rock4BenchReport> {
    let mut rows = Vec::new();
    for &n in &opts.sizes {
        let p = ReactionAdvectionDiffusion::thesis(n, opts.advection)?;
        let time = |threads: Threads| -> Result<(f64, Rock4Report)> {
            let o = Rock4Options::default()
                .rtol(opts.tol)
                .atol(opts.tol)
                .threads(threads);
            let mut secs = Vec::new();
            let mut last = None;
            for _ in 0..opts.reps.max(1) {
                let mut y = p.initial();
                let r = cpu::integrate(&p, 0.0, 1.0, &mut y, &o)?;
                secs.push(r.seconds);
                last = Some(r);
            }
            Ok((median(secs), last.expect("at least one run")))
        };
        progress(&format!("N = {n}"));
        let (single, r) = time(Threads::Single)?;
        let (all, _) = time(Threads::All)?;
        if r.reason != StopReason::Finished {
            progress(&format!(
                "N = {n}: stopped at t = {} ({:?})",
                r.final_time, r.reason
            ));
        }
        rows.push(Rock4Row {
            n,
            steps: (r.steps_accepted, r.steps_rejected),
            max_stages: r.max_stages,
            cpu_single_s: single,
            cpu_all_s: all,
            thesis: THESIS_TABLE_6_4
                .iter()
                .find(|t| t.0 == n)
                .map(|t| (t.1, t.2)),
        });
    }
    Ok(Rock4BenchReport {
        cpu_threads: rayon::current_num_threads(),
        tol: opts.tol,
        advection: match opts.advection {
            Advection::Central => "central",
            Advection::Forward => "forward",
        },
        rows,
    })
}

impl Rock4BenchReport {
    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let headers = vec![
            "N",
            "steps (rejected)",
            "max stages",
            "CPU 1 core s",
            "CPU all cores s",
            "all / 1 core",
            "thesis CPU s",
            "thesis GPU s",
            "thesis speedup",
            "1 core vs thesis CPU",
        ];
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut v = vec![
                    r.n.to_string(),
                    format!("{} ({})", r.steps.0, r.steps.1),
                    r.max_stages.to_string(),
                    format!("{:.4}", r.cpu_single_s),
                    format!("{:.4}", r.cpu_all_s),
                    format!("{:.1}x", r.cpu_single_s / r.cpu_all_s),
                ];
                match r.thesis {
                    Some((c, g)) => v.extend([
                        format!("{c:.3}"),
                        format!("{g:.3}"),
                        format!("{:.1}x", c / g),
                        format!("{:.1}x", c / r.cpu_single_s),
                    ]),
                    None => v.extend(["-", "-", "-", "-"].map(String::from)),
                }
                v
            })
            .collect();
        (headers, rows)
    }

    fn header(&self) -> String {
        format!(
            "- problem: seed 001 (5.1), spacing 0.01, N x N interior points, y(., 0) = 1, to t = 1; {} advection differences; rtol = atol = {:e}\n- CPU: one thread, and {} rayon threads; seconds are the median of the runs\n- thesis: Table 6.4 (GTX 285 against one core of its CPU, 2010)\n",
            self.advection, self.tol, self.cpu_threads
        )
    }

    /// Plain-text table.
    pub fn to_text(&self) -> String {
        let (h, r) = self.cells();
        format!("{}\n{}\n", self.header(), table(&h, &r))
    }

    /// The Markdown file.
    pub fn to_markdown(&self, plot: Option<&str>) -> String {
        let (h, r) = self.cells();
        let img = plot.map_or(String::new(), |p| format!("\n![time to t = 1]({p})\n"));
        format!(
            "# ROCK4, seed 001's Table 6.4\n\nWritten by `ferrocuda bench rock4`; do not edit by hand.\n\n{}\n{}\n{img}",
            self.header(),
            markdown_table(&h, &r)
        )
    }

    /// Seconds to `t = 1` per grid size: this run's CPU paths and the thesis's columns.
    pub fn chart(&self) -> BarChart {
        BarChart {
            title: "ROCK4 to t = 1, seed 001 problem (5.1)".into(),
            y_label: "seconds".into(),
            series: vec![
                "CPU 1 core".into(),
                "CPU all cores".into(),
                "thesis CPU (2010)".into(),
                "thesis GPU (GTX 285)".into(),
            ],
            groups: self
                .rows
                .iter()
                .map(|r| BarGroup {
                    label: format!("N={}", r.n),
                    values: vec![
                        Some(r.cpu_single_s),
                        Some(r.cpu_all_s),
                        r.thesis.map(|t| t.0),
                        r.thesis.map(|t| t.1),
                    ],
                })
                .collect(),
            reference_line: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_match_the_thesis_sizes_and_render() {
        let opts = Rock4BenchOptions {
            sizes: vec![16, 20],
            reps: 1,
            ..Default::default()
        };
        let r = run(&opts).expect("bench");
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].thesis, Some((0.051, 0.137)));
        assert_eq!(r.rows[1].thesis, None);
        for row in &r.rows {
            assert!(row.steps.0 > 0 && row.cpu_single_s > 0.0 && row.cpu_all_s > 0.0);
        }
        let md = r.to_markdown(Some("rock4.png"));
        assert!(
            md.contains("| 16 |") && md.contains("![time to t = 1](rock4.png)"),
            "{md}"
        );
        let png = r.chart().render_png(800, 400).expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }
}
