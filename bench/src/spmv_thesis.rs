//! `ferrocuda bench spmv-thesis`: the thesis's chapter 6 and 7 tables (seed 000, Tables
//! 6.1-6.11, 7.1, 7.2) measured again on today's GPU, in the thesis's setup.
//!
//! Setup, as the thesis ran it: single-precision complex (its inferred precision), all 8
//! grid blocks as one matrix, seconds for **100 SpMVs** (its 100 GMRES iterations). Each
//! SpMV uploads `x` and downloads `y` (the thesis kept GMRES on the CPU); the "a" variants
//! of BCSR V1/V2 also upload the matrix on every call (its Tables 6.1/6.2), the "b" ones
//! keep it resident. Times are the median of several calls times 100. A second table gives
//! the resident figures (matrix and vectors on the device, kernel time only), which is what
//! a GPU-resident solver sees. The CPU row is this crate's rayon BCSR on all cores, in the
//! place of the thesis's 8-process MPI run.
//!
//! The thesis's own numbers (Quadro 5000, Fermi) are quoted beside ours from the seed, as
//! printed, for comparison; they are not measurements of this crate.

use crate::output::{ResultsDir, Saved};
use serde::Serialize;

use crate::markdown_table;
use ferrocuda::Complex;
use ferrocuda::Result;
use ferrocuda::gpu::{Gpu, copy_device};
use ferrocuda::report::table;
use ferrocuda::rng::random_vector;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::gpu::{DeviceBell, DeviceSbell, spmv_bell, spmv_sbell};
use ferrocuda::sparse::{Bcsr, Bell, BellOptions, Sbell, cpu};
use ferrocuda::timing::{Stats, time_cpu, time_gpu};
use ferrocuda_repro::sparse::gpu_thesis::{
    ThesisKernel, ThesisMatrix, ThesisOptions, ThesisPlan, spmv_thesis, table_6_10,
};

type C32 = Complex<f32>;

/// SpMVs per table entry (the thesis's 100 GMRES iterations).
pub const ITERATIONS: f64 = 100.0;

/// Thesis Tables 6.1-6.11, row "Fermi" (Quadro 5000), seconds for cases 1..=6 (`None`:
/// out of GPU memory in 2011). Quoted from the seed.
const THESIS_FERMI: [(&str, [Option<f64>; 6]); 10] = [
    (
        "BCSR V1a",
        [
            Some(24.1),
            Some(59.77),
            Some(59.67),
            Some(118.28),
            Some(119.07),
            Some(470.95),
        ],
    ),
    (
        "BCSR V2a",
        [
            Some(14.77),
            Some(40.77),
            Some(40.61),
            Some(79.84),
            Some(79.09),
            Some(311.19),
        ],
    ),
    (
        "BCSR V1b",
        [
            Some(12.13),
            Some(24.07),
            Some(24.08),
            Some(47.33),
            Some(48.89),
            None,
        ],
    ),
    (
        "BCSR V2b",
        [
            Some(2.77),
            Some(5.1),
            Some(5.07),
            Some(9.03),
            Some(9.03),
            None,
        ],
    ),
    (
        "BCSR V3",
        [
            Some(2.74),
            Some(5.06),
            Some(5.02),
            Some(8.96),
            Some(8.95),
            None,
        ],
    ),
    (
        "ELL",
        [
            Some(1.61),
            Some(2.86),
            Some(2.76),
            Some(4.73),
            Some(4.7),
            None,
        ],
    ),
    (
        "ELL V2",
        [
            Some(1.71),
            Some(3.02),
            Some(2.94),
            Some(5.11),
            Some(5.03),
            None,
        ],
    ),
    (
        "BELL",
        [
            Some(1.28),
            Some(2.10),
            Some(2.02),
            Some(3.44),
            Some(3.45),
            None,
        ],
    ),
    (
        "BELL V2",
        [
            Some(2.06),
            Some(3.75),
            Some(3.75),
            Some(6.66),
            Some(6.62),
            None,
        ],
    ),
    ("BELL V3", [None; 6]),
];

/// Thesis: TRACE MPI on 8 cores (2x Xeon E5520), seconds, cases 1..=6.
const THESIS_MPI: [f64; 6] = [0.85, 1.67, 1.67, 3.31, 3.31, 13.23];

/// Thesis Table 6.10: values to copy into shared memory for work groups of 80, 160, 320,
/// 480 threads (case 10x40x20).
const THESIS_TABLE_6_10: [(usize, usize); 4] =
    [(80, 12415), (160, 13375), (320, 13555), (480, 13735)];

/// What to run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ThesisBenchOptions {
    /// Thesis cases (1..=6).
    pub cases: Vec<usize>,
    /// Timed calls per entry (median).
    pub reps: usize,
}

impl ThesisBenchOptions {
    /// Checks the options before anything runs: cases in 1..=6, `--reps` at least 1.
    pub fn validate(&self) -> Result<()> {
        let op = "bench spmv-thesis";
        crate::at_least_one(op, &[("--reps", self.reps)])?;
        match self.cases.iter().find(|c| !(1..=6).contains(*c)) {
            Some(c) => Err(crate::invalid(
                op,
                format!("--cases: case {c} does not exist (use 1..6)"),
            )),
            None if self.cases.is_empty() => {
                Err(crate::invalid(op, "--cases names no case".into()))
            }
            None => Ok(()),
        }
    }
}

impl Default for ThesisBenchOptions {
    fn default() -> Self {
        ThesisBenchOptions {
            cases: (1..=6).collect(),
            reps: 5,
        }
    }
}

/// One kernel on one case.
#[derive(Debug, Clone, Serialize)]
pub struct ThesisEntry {
    /// Variant name as the thesis writes it ("BCSR V2b", ...), or ferrocuda's.
    pub kernel: String,
    /// Thesis case (1..=6).
    pub case: usize,
    /// Seconds for 100 SpMVs with the thesis's transfers (see the module docs).
    pub thesis_setup_s: f64,
    /// Seconds for 100 SpMVs with everything resident (kernel time).
    pub resident_s: f64,
    /// Compulsory bytes of one resident product over its kernel time, over the copy
    /// bandwidth of this run.
    pub fraction_of_copy: Option<f64>,
    /// GFLOP/s of the resident product (8 flops per complex multiply-add over the
    /// structural nonzeros).
    pub gflops: f64,
    /// Largest relative difference to the CPU BCSR result.
    pub error_vs_cpu: f64,
    /// The thesis's Quadro 5000 seconds for the same entry, where it has one.
    pub thesis_fermi_s: Option<f64>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct ThesisReport {
    /// Device name.
    pub device: String,
    /// Copy bandwidth of this run (GB/s, read + write).
    pub copy_gbps: f64,
    /// CPU threads of the CPU row.
    pub cpu_threads: usize,
    /// Seconds of 100 CPU SpMVs per case, `(case, s)`.
    pub cpu_s: Vec<(usize, f64)>,
    /// Every kernel on every case.
    pub entries: Vec<ThesisEntry>,
    /// `(kernel, case, note)`: variants that did not run as asked, and why.
    pub notes: Vec<(String, usize, String)>,
    /// Table 6.10 with this crate's cell order (x fastest), `(work group, values)`.
    pub table_6_10: Vec<(usize, usize)>,
    /// Shared memory per block the device offers (opt-in), bytes.
    pub shared_per_block: usize,
}

fn progress(msg: &str) {
    eprintln!("[bench spmv-thesis] {msg}");
}

fn max_rel_error(got: &[C32], want: &[C32], scale: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .zip(scale)
        .map(|((g, w), &s)| {
            let d = Complex::new((g.re - w.re) as f64, (g.im - w.im) as f64);
            d.norm() / s.max(f64::MIN_POSITIVE)
        })
        .fold(0.0, f64::max)
}

/// Runs every variant on every case (GPU required).
pub fn run(gpu: &Gpu, opts: &ThesisBenchOptions) -> Result<ThesisReport> {
    let reps = opts.reps.max(1);
    let mut entries = Vec::new();
    let mut cpu_s = Vec::new();
    let mut not_run = Vec::new();
    let mut copy_gbps: f64 = 0.0;
    let mut steps = crate::progress::steps("bench spmv-thesis", opts.cases.len());
    for &case in &opts.cases {
        steps.next(format!("case {case}"));
        let spec = generate::case(case)?;
        progress(&format!(
            "case {case}: generating ({} cells, c32)",
            spec.cells()
        ));
        let a: Bcsr<C32> = crate::progress::generate(&spec)?;
        let n = a.n_rows();
        let csr = a.to_csr();
        let nonzeros = spec.nonzero_entries() as f64;
        let x = random_vector::<C32>(n, 31);
        let scale: Vec<f64> = (0..n)
            .map(|i| {
                let (cols, vals) = csr.row(i);
                cols.iter()
                    .zip(vals)
                    .map(|(&c, v)| (v.norm() * x[c as usize].norm()) as f64)
                    .sum()
            })
            .collect();
        drop(csr);
        let mut y_cpu = vec![C32::ZERO; n];
        let cpu = time_cpu(1, reps, || {
            cpu::spmv_bcsr(C32::ONE, &a, &x, C32::ZERO, &mut y_cpu)
        });
        cpu::spmv_bcsr(C32::ONE, &a, &x, C32::ZERO, &mut y_cpu)?;
        cpu_s.push((case, cpu.median_ms * 1e-3 * ITERATIONS));

        {
            // Ceiling: a device copy of the BCSR values' size.
            let elems = a.nnz_blocks() * 25;
            let src = gpu.alloc_zeroed::<C32>(elems)?;
            let mut dst = gpu.alloc::<C32>(elems)?;
            let c = time_gpu(gpu, 2, 10, || Ok(copy_device(&src, &mut dst)?))?;
            copy_gbps = copy_gbps.max(c.gbps(2.0 * elems as f64 * 8.0));
        }
        let mut dx = gpu.upload(&x)?;
        let mut dy = gpu.alloc::<C32>(n)?;
        let mut y_host = vec![C32::ZERO; n];
        let fermi = |label: &str| {
            THESIS_FERMI
                .iter()
                .find(|(l, _)| *l == label)
                .and_then(|(_, v)| v[case - 1])
        };
        // One resident product and its figures; `with_transfers` adds x up / y down.
        let record = |kernel: &str,
                      resident: Stats,
                      thesis_setup: Stats,
                      bytes: f64,
                      y: &[C32]|
         -> ThesisEntry {
            ThesisEntry {
                kernel: kernel.into(),
                case,
                thesis_setup_s: thesis_setup.median_ms * 1e-3 * ITERATIONS,
                resident_s: resident.median_ms * 1e-3 * ITERATIONS,
                fraction_of_copy: (copy_gbps > 0.0).then(|| resident.gbps(bytes) / copy_gbps),
                gflops: 8.0 * nonzeros / (resident.median_ms * 1e-3) / 1e9,
                error_vs_cpu: max_rel_error(y, &y_cpu, &scale),
                thesis_fermi_s: fermi(kernel),
            }
        };
        for kernel in ThesisKernel::ALL {
            progress(&format!("case {case}: {kernel}"));
            // BELL V3's x windows may not fit in shared memory (the thesis's Table 6.10
            // problem): then smaller work groups, and if none fits, a note.
            let groups: &[usize] = if kernel == ThesisKernel::BellV3 {
                &[160, 80, 40]
            } else {
                &[160]
            };
            let mut prepared = None;
            let mut why = String::new();
            for &wg in groups {
                let opts = ThesisOptions::default().work_group(wg);
                match ThesisPlan::new(&a, kernel, &opts)
                    .map_err(ferrocuda::Error::from)
                    .and_then(|p| ThesisMatrix::from_plan(gpu, &p).map(|m| (p, m, wg)))
                {
                    Ok(v) => {
                        prepared = Some(v);
                        break;
                    }
                    Err(e) => why = e.to_string(),
                }
            }
            let Some((plan, mut m, wg)) = prepared else {
                progress(&format!("case {case}: {kernel} does not run: {why}"));
                not_run.push((kernel.label().to_string(), case, why));
                continue;
            };
            if wg != 160 {
                not_run.push((
                    kernel.label().to_string(),
                    case,
                    format!("work group of {wg} threads: 160 does not fit in shared memory"),
                ));
            }
            let resident = time_gpu(gpu, 2, reps.max(10), || {
                spmv_thesis(C32::ONE, &mut m, &dx, C32::ZERO, &mut dy)
            })?;
            let with_vectors = time_cpu(1, reps, || -> Result<()> {
                dx.copy_from_host(&x)?;
                spmv_thesis(C32::ONE, &mut m, &dx, C32::ZERO, &mut dy)?;
                Ok(dy.copy_to_host(&mut y_host)?)
            });
            let bytes = m.traffic::<C32>(true).total() as f64;
            let name = |suffix: &str| format!("{}{suffix}", kernel.label());
            let y = dy.download()?;
            match kernel {
                ThesisKernel::BcsrV1 | ThesisKernel::BcsrV2 => {
                    drop(m);
                    // "a": the matrix goes up with every call as well.
                    let with_matrix = time_cpu(0, reps.min(3), || -> Result<()> {
                        let mut m = ThesisMatrix::from_plan(gpu, &plan)?;
                        dx.copy_from_host(&x)?;
                        spmv_thesis(C32::ONE, &mut m, &dx, C32::ZERO, &mut dy)?;
                        Ok(dy.copy_to_host(&mut y_host)?)
                    });
                    entries.push(record(&name("a"), resident, with_matrix, bytes, &y));
                    entries.push(record(&name("b"), resident, with_vectors, bytes, &y));
                }
                _ => entries.push(record(kernel.label(), resident, with_vectors, bytes, &y)),
            }
        }
        // Today's kernels of this crate on the same matrix.
        {
            progress(&format!("case {case}: ferrocuda BELL and SBELL"));
            let bell = Bell::from_bcsr(&a, &BellOptions::default())?;
            let bytes = a.nnz_blocks() as f64 * (25.0 * 8.0 + 4.0) + 2.0 * n as f64 * 8.0;
            let m = DeviceBell::upload(gpu, &bell)?;
            drop(bell);
            let resident = time_gpu(gpu, 2, reps.max(10), || {
                spmv_bell(C32::ONE, &m, &dx, C32::ZERO, &mut dy)
            })?;
            let staged = time_cpu(1, reps, || -> Result<()> {
                dx.copy_from_host(&x)?;
                spmv_bell(C32::ONE, &m, &dx, C32::ZERO, &mut dy)?;
                Ok(dy.copy_to_host(&mut y_host)?)
            });
            let y = dy.download()?;
            entries.push(record("ferrocuda BELL", resident, staged, bytes, &y));
            drop(m);
            let s = Sbell::from_bcsr(&a)?;
            let bytes = s.entries_read() as f64 * 8.0
                + s.blocks() as f64 * 4.0
                + s.n_stored() as f64 * 8.0
                + 2.0 * n as f64 * 8.0;
            let m = DeviceSbell::upload(gpu, &s)?;
            drop(s);
            let resident = time_gpu(gpu, 2, reps.max(10), || {
                spmv_sbell(C32::ONE, &m, &dx, C32::ZERO, &mut dy)
            })?;
            let staged = time_cpu(1, reps, || -> Result<()> {
                dx.copy_from_host(&x)?;
                spmv_sbell(C32::ONE, &m, &dx, C32::ZERO, &mut dy)?;
                Ok(dy.copy_to_host(&mut y_host)?)
            });
            let y = dy.download()?;
            entries.push(record(
                "ferrocuda SBELL (ours)",
                resident,
                staged,
                bytes,
                &y,
            ));
        }
    }
    let sizes: Vec<usize> = THESIS_TABLE_6_10.iter().map(|&(w, _)| w).collect();
    let windows = table_6_10(&TraceSpec::new(10, 40, 20, 8), &sizes)?;
    Ok(ThesisReport {
        device: gpu.name()?,
        copy_gbps,
        cpu_threads: rayon::current_num_threads(),
        cpu_s,
        entries,
        notes: not_run,
        table_6_10: sizes.into_iter().zip(windows).collect(),
        shared_per_block: gpu.info()?.shared_memory_per_block_optin.max(0) as usize,
    })
}

impl ThesisReport {
    fn kernels(&self) -> Vec<String> {
        let mut k: Vec<String> = Vec::new();
        for e in &self.entries {
            if !k.contains(&e.kernel) {
                k.push(e.kernel.clone());
            }
        }
        k
    }

    fn cases(&self) -> Vec<usize> {
        self.cpu_s.iter().map(|&(c, _)| c).collect()
    }

    fn entry(&self, kernel: &str, case: usize) -> Option<&ThesisEntry> {
        self.entries
            .iter()
            .find(|e| e.kernel == kernel && e.case == case)
    }

    /// Rows of a per-case table: one per kernel, `cell` formats an entry.
    fn case_table(&self, cell: &dyn Fn(&ThesisEntry) -> String) -> (Vec<String>, Vec<Vec<String>>) {
        let cases = self.cases();
        let mut headers = vec!["kernel".to_string()];
        for &c in &cases {
            let (nx, nt, nr) = generate::CASES[c - 1];
            headers.push(format!("{nx}x{nt}x{nr}"));
        }
        let mut rows: Vec<Vec<String>> = self
            .kernels()
            .iter()
            .map(|k| {
                let mut row = vec![k.clone()];
                row.extend(
                    cases
                        .iter()
                        .map(|&c| self.entry(k, c).map_or("-".into(), cell)),
                );
                row
            })
            .collect();
        let mut cpu = vec![format!("CPU rayon BCSR ({} threads)", self.cpu_threads)];
        cpu.extend(self.cpu_s.iter().map(|&(_, s)| format!("{s:.3}")));
        rows.push(cpu);
        let mut mpi = vec!["thesis: MPI, 8 cores (2011)".to_string()];
        mpi.extend(cases.iter().map(|&c| format!("{:.2}", THESIS_MPI[c - 1])));
        rows.push(mpi);
        (headers, rows)
    }

    /// Thesis Table 7.1/7.2 layout for case 4 (10x40x80), if it ran.
    fn table_7(&self) -> Option<(Vec<String>, Vec<Vec<String>>)> {
        let case = 4;
        let cpu = self.cpu_s.iter().find(|&&(c, _)| c == case)?.1;
        let headers = [
            "kernel",
            "s, thesis setup",
            "s, resident",
            "GFLOP/s (resident)",
            "% of copy (resident)",
            "thesis Quadro 5000 s",
            "today vs 2011 (thesis setup)",
            "resident vs CPU",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .kernels()
            .iter()
            .filter_map(|k| self.entry(k, case))
            .map(|e| {
                vec![
                    e.kernel.clone(),
                    format!("{:.4}", e.thesis_setup_s),
                    format!("{:.4}", e.resident_s),
                    format!("{:.1}", e.gflops),
                    e.fraction_of_copy
                        .map_or("-".into(), |f| format!("{:.1}", 100.0 * f)),
                    e.thesis_fermi_s.map_or("-".into(), |s| format!("{s:.2}")),
                    e.thesis_fermi_s
                        .map_or("-".into(), |s| format!("{:.0}x", s / e.thesis_setup_s)),
                    format!("{:.1}x", cpu / e.resident_s),
                ]
            })
            .collect();
        Some((headers, rows))
    }

    fn conventions(&self) -> String {
        format!(
            "device: {}; copy ceiling {:.0} GB/s (cuMemcpyDtoD, read + write, this run); CPU: rayon BCSR on {} threads\n\
             setup: single-precision complex, 8 grid blocks, seconds for 100 SpMVs (median of the calls x 100). \
             \"thesis setup\": x uploaded and y downloaded with every SpMV (V1a/V2a: the matrix too); \
             \"resident\": kernel time only. GFLOP/s: 8 flops per complex multiply-add over the structural nonzeros.\n",
            self.device, self.copy_gbps, self.cpu_threads
        )
    }

    fn notes_text(&self) -> String {
        self.notes
            .iter()
            .map(|(k, c, why)| format!("- {k}, case {c}: {why}\n"))
            .collect()
    }

    /// Plain-text report.
    pub fn to_text(&self) -> String {
        let mut out = self.conventions();
        let as_text = |(h, r): (Vec<String>, Vec<Vec<String>>)| {
            table(&h.iter().map(String::as_str).collect::<Vec<_>>(), &r)
        };
        out.push_str("\nTables 6.1-6.11 today: seconds for 100 SpMVs, thesis setup\n");
        out.push_str(&as_text(
            self.case_table(&|e| format!("{:.3}", e.thesis_setup_s)),
        ));
        out.push('\n');
        out.push_str(&self.notes_text());
        out.push_str("\nThe same, resident (kernel time only)\n");
        out.push_str(&as_text(
            self.case_table(&|e| format!("{:.4}", e.resident_s)),
        ));
        if let Some(t) = self.table_7() {
            out.push_str("\n\nTables 7.1/7.2 today: case 10x40x80\n");
            out.push_str(&as_text(t));
        }
        out.push('\n');
        out
    }

    /// Markdown for docs/results/spmv-thesis.md.
    pub fn to_markdown(&self) -> String {
        let md = |(h, r): (Vec<String>, Vec<Vec<String>>)| {
            markdown_table(&h.iter().map(String::as_str).collect::<Vec<_>>(), &r)
        };
        let mut out = String::from(
            "# Seed 000 reproduced: the thesis's SpMV tables on today's GPU\n\n\
             Written by `ferrocuda bench spmv-thesis`. The thesis's figures (Quadro 5000, MPI) are quoted from seed 000 for comparison; every other number was measured in this run.\n\n",
        );
        out.push_str(&self.conventions().replace('\n', "\n\n"));
        out.push_str("## Tables 6.1-6.11: seconds for 100 SpMVs, thesis setup\n\n");
        out.push_str(&md(self.case_table(&|e| format!("{:.3}", e.thesis_setup_s))));
        out.push('\n');
        out.push_str(&self.notes_text());
        out.push_str("\nThesis, Quadro 5000, same layout (seconds; - = did not fit in 2.5 GB, or BELL V3, which never ran):\n\n");
        let cases = self.cases();
        let mut h = vec!["kernel".to_string()];
        h.extend(cases.iter().map(|&c| {
            let (nx, nt, nr) = generate::CASES[c - 1];
            format!("{nx}x{nt}x{nr}")
        }));
        let rows: Vec<Vec<String>> = THESIS_FERMI
            .iter()
            .map(|(k, v)| {
                let mut row = vec![k.to_string()];
                row.extend(
                    cases
                        .iter()
                        .map(|&c| v[c - 1].map_or("-".into(), |s| format!("{s:.2}"))),
                );
                row
            })
            .collect();
        out.push_str(&md((h, rows)));
        out.push_str("\n## The same, resident (kernel time only, seconds for 100 SpMVs)\n\n");
        out.push_str(&md(self.case_table(&|e| format!("{:.4}", e.resident_s))));
        out.push_str("\n## % of the copy bandwidth, resident (compulsory bytes / kernel time)\n\n");
        out.push_str(&md(self.case_table(&|e| {
            e.fraction_of_copy
                .map_or("-".into(), |f| format!("{:.1}", 100.0 * f))
        })));
        if let Some(t) = self.table_7() {
            out.push_str("\n## Tables 7.1/7.2: case 10x40x80\n\n");
            out.push_str(&md(t));
        }
        out.push_str(&format!(
            "\n## Table 6.10: values of x in shared memory per work group (case 10x40x20)\n\n\
             The thesis ordered cells theta fastest; this crate orders x fastest, so its windows differ \
             (a test rebuilds the thesis's order and gets its numbers exactly). In single-precision \
             complex the largest window needs {} bytes; this device offers {} bytes of shared memory \
             per block, so BELL V3 runs now (it could not in 2011: 48 KB).\n\n",
            self.table_6_10.iter().map(|&(_, v)| v).max().unwrap_or(0) * 8,
            self.shared_per_block
        ));
        let rows: Vec<Vec<String>> = self
            .table_6_10
            .iter()
            .map(|&(w, v)| {
                let thesis = THESIS_TABLE_6_10
                    .iter()
                    .find(|&&(tw, _)| tw == w)
                    .map_or("-".into(), |&(_, t)| t.to_string());
                vec![w.to_string(), v.to_string(), thesis]
            })
            .collect();
        out.push_str(&markdown_table(
            &[
                "work group",
                "values (ours, x fastest)",
                "thesis (theta fastest)",
            ],
            &rows,
        ));
        out
    }
}

/// Writes `spmv-thesis.md` (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &ThesisReport, out: &ResultsDir) -> Result<Saved> {
    out.save("spmv-thesis.md", |out| {
        Ok(vec![
            out.write_markdown("spmv-thesis.md", &report.to_markdown())?,
        ])
    })
}
