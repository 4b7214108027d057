//! The report of `bench scale-model`: plain text, `scaling-model.md`, the charts and
//! the files written.

use serde::Serialize;

use super::{Prediction, ScaleModelReport, TOLERANCE, bad};
use crate::markdown_table;
use crate::output::{ResultsDir, Saved};
use crate::plot::{Chart, LineChart, LineSeries};
use ferrocuda::Result;

fn pct(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

fn signed_pct(v: f64) -> String {
    format!("{:+.1}%", 100.0 * v)
}

impl ScaleModelReport {
    const CHECK_HEADERS: [&'static str; 9] = [
        "file",
        "mode",
        "what",
        "GPUs",
        "grid blocks",
        "ghost blocks / rank (measured, model)",
        "measured ms",
        "model ms",
        "error",
    ];

    fn check_cells(&self) -> Vec<Vec<String>> {
        self.check
            .iter()
            .map(|c| {
                let p = &c.measured;
                vec![
                    format!("{}:{}", p.file, p.line),
                    p.mode.clone(),
                    p.what.label().into(),
                    p.gpus.to_string(),
                    p.grid_blocks.to_string(),
                    format!("{}, {}", p.ghost_blocks, c.model_ghost_blocks),
                    format!("{:.4}", p.ms),
                    format!("{:.4}", c.model_ms),
                    signed_pct(c.error),
                ]
            })
            .collect()
    }

    const PREDICTION_HEADERS: [&'static str; 14] = [
        "GPUs",
        "nodes",
        "blocks / GPU (max)",
        "balance",
        "SpMV ms",
        "SpMV eff.",
        "classical ms",
        "pipelined ms",
        "pipelined / classical",
        "classical eff.",
        "pipelined eff.",
        "overlap bound eff.",
        "classical: SpMVs / orth. / host / all-reduce ms",
        "GB / GPU",
    ];

    fn prediction_cells(rows: &[&Prediction]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| {
                let c = &r.classical;
                vec![
                    r.gpus.to_string(),
                    r.nodes.to_string(),
                    r.max_blocks_per_gpu.to_string(),
                    pct(r.balance),
                    format!("{:.4}", r.spmv_ms),
                    pct(r.spmv_efficiency),
                    format!("{:.4}", r.iteration_ms[0]),
                    format!("{:.4}", r.iteration_ms[1]),
                    format!("{:.3}", r.iteration_ms[1] / r.iteration_ms[0]),
                    pct(r.efficiency[0]),
                    pct(r.efficiency[1]),
                    pct(r.efficiency[2]),
                    format!(
                        "{:.3} / {:.3} / {:.3} / {:.3}",
                        c.spmvs, c.orth, c.overhead, c.allreduce
                    ),
                    format!("{:.1}", r.memory_gb[0]),
                ]
            })
            .collect()
    }

    fn series_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in &self.predictions {
            if !names.contains(&p.series) {
                names.push(p.series.clone());
            }
        }
        names
    }

    fn headline_lines(&self) -> String {
        let mut s = String::new();
        let names = ["classical", "pipelined", "overlap bound"];
        for h in &self.headlines {
            s += &format!(
                "- **{}**, {} GPUs: efficiency {} classical, {} pipelined, {} overlap bound; the partition's balance {}; all-reduces take {} and the per-iteration host overhead {} of the classical iteration; the pipelined iteration is faster {}.",
                h.series,
                h.gpus,
                pct(h.efficiency[0]),
                pct(h.efficiency[1]),
                pct(h.efficiency[2]),
                pct(h.balance),
                pct(h.allreduce_share),
                pct(h.overhead_share),
                match h.pipelined_faster_from {
                    Some(p) => format!("from {p} GPUs on"),
                    None => format!("at no count up to {}", h.gpus),
                }
            );
            if h.series.starts_with("strong") {
                let notes: Vec<String> = (0..3)
                    .map(|i| {
                        let below = match h.below_half_at[i] {
                            Some(p) => format!("below 50 % from {p} GPUs"),
                            None => "never below 50 %".into(),
                        };
                        format!("{} {below}, fastest at {} GPUs", names[i], h.fastest_at[i])
                    })
                    .collect();
                s += &format!(" {}.", notes.join("; "));
            }
            s += "\n";
        }
        s
    }

    /// Plain text: the check and the predictions.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "scale model of one GMRES({}) iteration, transport {}: every measured point within {} ({}; largest error {})\n\n",
            self.counts[0].m,
            self.transport,
            pct(TOLERANCE),
            if self.within_tolerance { "yes" } else { "NO" },
            pct(self.max_error)
        );
        s += &ferrocuda::report::table(&Self::CHECK_HEADERS, &self.check_cells());
        for name in self.series_names() {
            let rows: Vec<&Prediction> = self
                .predictions
                .iter()
                .filter(|p| p.series == name)
                .collect();
            s += &format!("\n{name}\n");
            s += &ferrocuda::report::table(
                &Self::PREDICTION_HEADERS,
                &Self::prediction_cells(&rows),
            );
        }
        s += "\n";
        s += &self.headline_lines();
        s
    }

    /// `scaling-model.md`.
    pub fn to_markdown(&self) -> String {
        let a = &self.assumptions;
        let p = &self.params;
        let [c, pc] = &self.counts;
        let mut s = String::from(
            "# Scale model: one distributed GMRES iteration on up to 1,024 GPUs\n\n\
             Written by `ferrocuda bench scale-model` (no GPU: a model fitted to measured \
             results); do not edit by hand. The model and its sources: `docs/scaling-model.md`.\n\n",
        );
        s += "## Inputs\n\n";
        for i in &self.inputs {
            s += &format!(
                "- `{}` ({} points of transport `{}`): {}\n",
                i.file,
                i.points,
                self.transport,
                i.provenance.as_deref().unwrap_or("provenance not recorded")
            );
        }
        s += &format!(
            "- GMRES({m}) as `bench scaling` times it: one `gmres_distributed` call of {m} steps over {m}; per iteration {:.4} SpMVs, {:.2} vector passes (pipelined: {:.2}), {:.4} step all-reduces and {:.4} set-up all-reduces\n\n",
            c.spmvs,
            c.vectors,
            pc.vectors,
            c.step_allreduces,
            c.solve_allreduces,
            m = c.m
        );
        s += "## Parameters\n\n";
        let rows = vec![
            vec![
                "SpMV launch floor t0".into(),
                format!("{:.4} ms", p.spmv_floor_ms),
                "fitted: 1-GPU SpMV points".into(),
            ],
            vec![
                "SpMV bandwidth BW".into(),
                format!("{:.0} GB/s", p.spmv_gbps),
                "fitted: 1-GPU SpMV points".into(),
            ],
            vec![
                "host and launch overhead per iteration T_host".into(),
                format!("{:.4} ms", p.iteration_overhead_ms),
                "fitted: 1-GPU GMRES points".into(),
            ],
            vec![
                "orthogonalisation bandwidth BW_orth".into(),
                format!("{:.0} GB/s", p.orth_gbps),
                "fitted: 1-GPU GMRES points".into(),
            ],
            vec![
                "distributed SpMV overhead t_halo".into(),
                format!("{:.4} ms", p.halo_overhead_ms),
                "fitted: multi-GPU SpMV points".into(),
            ],
            vec![
                "all-reduce on 2 GPUs of a node T_ar(2)".into(),
                format!("{:.4} ms", p.allreduce_2_ms),
                "fitted: multi-GPU GMRES points".into(),
            ],
            vec![
                "GPUs per node".into(),
                a.gpus_per_node.to_string(),
                "assumed".into(),
            ],
            vec![
                "intra-node all-reduce step per doubling".into(),
                format!("{:.4} ms", a.nvlink_allreduce_step_ms),
                "assumed".into(),
            ],
            vec![
                "NVLink halo message: latency, bandwidth".into(),
                format!("{:.4} ms, {:.0} GB/s", a.nvlink_latency_ms, a.nvlink_gbps),
                "assumed".into(),
            ],
            vec![
                "InfiniBand hop: latency, bandwidth".into(),
                format!("{:.4} ms, {:.0} GB/s", a.ib_latency_ms, a.ib_gbps),
                "assumed".into(),
            ],
            vec![
                "GPU memory".into(),
                format!("{:.0} GB", a.gpu_memory_gb),
                "assumed".into(),
            ],
        ];
        s += &markdown_table(&["parameter", "value", "source"], &rows);
        s += &format!(
            "\n## Check: every measured point of transport `{}`\n\nModel against measurement, the error `model / measured - 1`; largest {}, {} the {} allowed.\n\n",
            self.transport,
            pct(self.max_error),
            if self.within_tolerance {
                "within"
            } else {
                "**beyond**"
            },
            pct(TOLERANCE)
        );
        s += &markdown_table(&Self::CHECK_HEADERS, &self.check_cells());
        s += "\n![the model beside the measurements](scaling-model-check.png)\n";
        s += "\n## Predictions\n\n\
              Efficiency: weak `t(1) / t(P)`, strong `t(1) / (P t(P))`, every variant against the classical \
              solver's 1-GPU time `t(1)` (a variant that does more work on one GPU starts below 100 %); \
              balance: mean over largest grid blocks per GPU (whole grid blocks per rank); \
              the parts are the classical iteration's on the slowest rank; GB / GPU: matrix and classical solver vectors \
              of the busiest rank (a row above the GPU memory does not fit).\n\n";
        s += &self.headline_lines();
        for name in self.series_names() {
            let rows: Vec<&Prediction> = self
                .predictions
                .iter()
                .filter(|p| p.series == name)
                .collect();
            s += &format!("\n### {name}\n\n");
            s += &markdown_table(&Self::PREDICTION_HEADERS, &Self::prediction_cells(&rows));
        }
        s += "\n![predicted efficiency](scaling-model-chart.png)\n";
        s
    }

    /// One series' efficiency of variant `i` against log2 of the GPUs.
    fn efficiency_line(&self, series: &str, i: usize, label: String) -> LineSeries {
        LineSeries {
            name: label,
            points: self
                .predictions
                .iter()
                .filter(|p| p.series == series)
                .map(|r| ((r.gpus as f64).log2(), 100.0 * r.efficiency[i]))
                .collect(),
        }
    }

    fn line_chart(&self, title: &str, series: Vec<LineSeries>) -> LineChart {
        LineChart {
            title: format!("GMRES({}) iteration on P GPUs: {title}", self.counts[0].m),
            x_label: "log2 P (0 = 1 GPU, 10 = 1,024 GPUs)".into(),
            y_label: "efficiency against the classical 1-GPU time, %".into(),
            log_y: false,
            series,
            reference_line: None,
        }
    }

    /// The predictions: efficiency of each variant for the predicted problems.
    pub fn chart(&self) -> Chart {
        let mut lines = Vec::new();
        for name in self
            .series_names()
            .iter()
            .filter(|n| !n.contains("as measured"))
        {
            for (i, v) in ["classical", "pipelined", "overlap bound"]
                .iter()
                .enumerate()
            {
                lines.push(self.efficiency_line(name, i, format!("{name}: {v}")));
            }
        }
        Chart::Line(self.line_chart("predicted efficiency", lines))
    }

    /// The model beside the measurements: the measured set-ups carried on by the model
    /// (lines) and the measured efficiencies (markers).
    pub fn check_chart(&self) -> Chart {
        let lines = self
            .series_names()
            .iter()
            .filter(|n| n.contains("as measured"))
            .map(|n| self.efficiency_line(n, 0, format!("{n}: model")))
            .collect();
        let mut clouds: Vec<LineSeries> = Vec::new();
        for (name, gpus, e) in &self.measured_efficiency {
            let label = format!("{name}: measured");
            let point = ((*gpus as f64).log2(), 100.0 * e);
            match clouds.iter_mut().find(|c| c.name == label) {
                Some(c) => c.points.push(point),
                None => clouds.push(LineSeries {
                    name: label,
                    points: vec![point],
                }),
            }
        }
        Chart::LineWithPoints {
            chart: self.line_chart("the model beside the measurements (classical)", lines),
            points: clouds,
        }
    }
}

/// Writes `scaling-model.md`, `scaling-model.json` (the report with this run's
/// provenance), `scaling-model-chart.png` (predictions) and `scaling-model-check.png`
/// (the model beside the measurements), each chart with its data (where `out` allows
/// it: [`ResultsDir::save`]).
pub fn write_results(report: &ScaleModelReport, out: &ResultsDir) -> Result<Saved> {
    out.save("scaling-model.md", |out| {
        let mut written = crate::plot::write_with_data(
            report.chart(),
            &out.join("scaling-model-chart.png"),
            1280,
            720,
            "ferrocuda bench scale-model",
        )?;
        written.extend(crate::plot::write_with_data(
            report.check_chart(),
            &out.join("scaling-model-check.png"),
            1280,
            640,
            "ferrocuda bench scale-model",
        )?);
        #[derive(Serialize)]
        struct Written<'a> {
            #[serde(flatten)]
            report: &'a ScaleModelReport,
            provenance: &'a crate::output::Provenance,
        }
        let mut json = serde_json::to_string_pretty(&Written {
            report,
            provenance: out.provenance(),
        })
        .map_err(|e| bad(format!("JSON of the report: {e}")))?;
        json.push('\n');
        let path = out.join("scaling-model.json");
        crate::output::write_file(&path, json.as_bytes())?;
        written.push(path);
        written.push(out.write_markdown("scaling-model.md", &report.to_markdown())?);
        Ok(written)
    })
}
