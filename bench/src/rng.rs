//! `ferrocuda bench rng`: SFMT19937 streams on the GPU against the device's write
//! bandwidth and cuRAND (MTGP32, MT19937, Philox4x32-10), all measured in the same run,
//! plus seed 004's Table 5.3 setup (1536^2 generators x 8 128-bit outputs, Box-Muller
//! normals in `f32`, including the copy to the host) with the seed's own "amd" scheme.
//!
//! **Write ceiling**: the faster of `cuMemsetD8Async` and ferrocuda's `fill_f32` kernel
//! (write-only, grid-stride) over the same 2^30 x 4 bytes, median of the timed runs. The
//! device copy ceiling (`copy_ceiling_gbps`, read + write) is reported beside it.
//!
//! **Large runs**: 2^30 `u32` (4 GiB) per call, timed with device events (median).
//! SFMT generates `streams * blocks * 624` values, the smallest whole number of blocks
//! that reaches 2^30, and the rate counts what it generated. The stream states come from
//! jump-ahead (`2^64` steps apart) on the CPU before timing.

use crate::output::{ResultsDir, Saved};
use serde::Serialize;

use crate::markdown_table;
use ferrocuda::Result;
use ferrocuda::gpu::{DeviceSlice, Gpu};
use ferrocuda::report::table;
use ferrocuda::rng::gpu::SfmtStreams;
use ferrocuda::rng::{Mexp, Sfmt, cpu, jump};
use ferrocuda::timing::{Stats, copy_ceiling_gbps, time_cpu, time_gpu};
use ferrocuda::vendor::curand::{Curand, CurandKind};
use ferrocuda_repro::rng::amd_normals;

/// Options of the RNG benchmark.
#[derive(Debug, Clone)]
pub struct RngBenchOptions {
    /// log2 of the values per large run.
    pub large_log2: u32,
    /// Timed repetitions per measurement.
    pub reps: usize,
    /// Threads (= streams) per block of the SFMT kernel to compare (0: the most that
    /// fit, `rng::gpu::max_threads`).
    pub threads: Vec<u32>,
    /// Generators of the Table 5.3 setup (1536^2).
    pub thesis_generators: usize,
    /// 128-bit outputs per generator in the Table 5.3 setup (8).
    pub thesis_mul: usize,
    /// Run the CPU twin on the Table 5.3 count.
    pub cpu: bool,
}

impl RngBenchOptions {
    /// Checks the options before anything runs: `--large-log2` in 20..=32, `--reps` at
    /// least 1.
    pub fn validate(&self) -> Result<()> {
        if !(20..=32).contains(&self.large_log2) {
            return Err(crate::invalid(
                "bench rng",
                format!("--large-log2 {} is outside 20..=32", self.large_log2),
            ));
        }
        crate::at_least_one("bench rng", &[("--reps", self.reps)])
    }
}

impl Default for RngBenchOptions {
    fn default() -> Self {
        RngBenchOptions {
            large_log2: 30,
            reps: 10,
            threads: vec![32, 64, 80, 88, 0],
            thesis_generators: 1536 * 1536,
            thesis_mul: 8,
            cpu: true,
        }
    }
}

/// One large `u32` run.
#[derive(Debug, Clone, Serialize)]
pub struct LargeRow {
    /// Generator and configuration.
    pub name: String,
    /// Values generated per call.
    pub values: usize,
    /// Median milliseconds per call.
    pub ms: f64,
    /// Values per second (10^9).
    pub gnums: f64,
    /// Bytes written per second (10^9).
    pub gbps: f64,
    /// `gbps` over the write ceiling of this run.
    pub of_write_ceiling: f64,
}

/// One Table 5.3 row.
#[derive(Debug, Clone, Serialize)]
pub struct ThesisRow {
    /// Generator.
    pub name: String,
    /// Normals generated.
    pub values: usize,
    /// Generation on the device, ms (median, device events); `None` for the CPU row.
    pub generate_ms: Option<f64>,
    /// Generation plus the copy of all normals to the host, ms (median, wall clock).
    pub with_copy_ms: f64,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct RngBenchReport {
    /// GPU name.
    pub device: String,
    /// Write ceiling, GB/s, and how it was measured.
    pub write_ceiling_gbps: f64,
    /// `cuMemsetD8Async`, GB/s.
    pub memset_gbps: f64,
    /// `fill_f32` kernel, GB/s.
    pub fill_gbps: f64,
    /// Device copy ceiling (read + write), GB/s.
    pub copy_gbps: f64,
    /// Large `u32` runs.
    pub large: Vec<LargeRow>,
    /// Table 5.3 setup.
    pub thesis: Vec<ThesisRow>,
    /// Errors of baselines that could not run (e.g. cuRAND missing).
    pub skipped: Vec<String>,
}

fn progress(msg: &str) {
    eprintln!("[bench rng] {msg}");
}

/// The SFMT streams for `n` streams, `2^64` steps apart.
fn make_streams(n: usize) -> Result<Vec<Sfmt>> {
    jump::streams(&Sfmt::new(Mexp::M19937, 20130305), n, 64)
}

/// Streams that fill the device: `threads` per block, as many blocks per SM as the
/// shared memory holds.
fn streams_for(gpu: &Gpu, threads: u32) -> Result<usize> {
    let info = gpu.info()?;
    let per_block = threads as usize * ferrocuda::rng::gpu::SHARED_PER_STREAM + 1024;
    let per_sm = (info.shared_memory_per_multiprocessor as usize / per_block).max(1);
    Ok(info.multiprocessors as usize * per_sm * threads as usize)
}

/// `0` means the most threads per block that fit.
fn resolve(gpu: &Gpu, threads: u32) -> Result<u32> {
    if threads == 0 {
        ferrocuda::rng::gpu::max_threads(gpu)
    } else {
        Ok(threads)
    }
}

/// Runs the benchmark on `gpu`.
pub fn run(gpu: &Gpu, opts: &RngBenchOptions) -> Result<RngBenchReport> {
    let device = gpu.name()?;
    let n = 1usize << opts.large_log2;
    let bytes = 4 * n;
    progress(&format!("{device}: ceilings over {} MiB", bytes >> 20));
    let mut buf = gpu.alloc::<u32>(n)?;
    let memset = time_gpu(gpu, 2, opts.reps, || Ok(Gpu::memset_zero(&mut buf)?))?;
    let mut fbuf = gpu.alloc::<f32>(n)?;
    let fill = time_gpu(gpu, 2, opts.reps, || {
        ferrocuda::blas1::gpu::fill(&mut fbuf, 1.0f32)
    })?;
    drop(fbuf);
    let memset_gbps = memset.gbps(bytes as f64);
    let fill_gbps = fill.gbps(bytes as f64);
    let write_ceiling_gbps = memset_gbps.max(fill_gbps);
    let copy_gbps = copy_ceiling_gbps(gpu, bytes / 2, opts.reps)?;
    let row = |name: String, values: usize, s: Stats| {
        let gbps = s.gbps(4.0 * values as f64);
        LargeRow {
            name,
            values,
            ms: s.median_ms,
            gnums: values as f64 / (s.median_ms * 1e-3) / 1e9,
            gbps,
            of_write_ceiling: gbps / write_ceiling_gbps,
        }
    };
    let mut large = Vec::new();
    let mut skipped = Vec::new();

    // SFMT19937 streams.
    let max_streams = opts
        .threads
        .iter()
        .map(|&t| streams_for(gpu, resolve(gpu, t)?))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or(1);
    progress(&format!("jump-ahead for {max_streams} SFMT19937 streams"));
    let all = make_streams(max_streams)?;
    drop(buf);
    let mut steps =
        crate::progress::steps("bench rng", opts.threads.len() + 2 * CurandKind::ALL.len());
    for &threads in &opts.threads {
        steps.next(format!("SFMT19937, {threads:?} threads/block"));
        let threads = resolve(gpu, threads)?;
        let ns = streams_for(gpu, threads)?;
        let blocks = n.div_ceil(ns * 624);
        let mut dev = SfmtStreams::new(gpu, &all[..ns])?.with_threads(threads)?;
        let mut out = gpu.alloc::<u32>(dev.len_u32(blocks))?;
        let s = time_gpu(gpu, 1, opts.reps, || dev.fill_u32(blocks, &mut out))?;
        let r = row(
            format!("SFMT19937, {ns} streams, {threads} threads/block"),
            out.len(),
            s,
        );
        progress(&format!("{}: {:.1} GB/s", r.name, r.gbps));
        large.push(r);
    }

    // cuRAND.
    let mut buf = gpu.alloc::<u32>(n)?;
    for kind in CurandKind::ALL {
        steps.next(format!("cuRAND {kind:?}, u32"));
        match Curand::new(gpu, kind, 1234) {
            Ok(g) => {
                let s = time_gpu(gpu, 1, opts.reps, || g.generate_u32(&mut buf))?;
                let r = row(kind.name().into(), n, s);
                progress(&format!("{}: {:.1} GB/s", r.name, r.gbps));
                large.push(r);
            }
            Err(e) => skipped.push(format!("{}: {e}", kind.name())),
        }
    }
    drop(buf);

    // Table 5.3: 1536^2 generators x 8 words = 75,497,472 f32 normals, with the copy.
    let count = opts.thesis_generators * opts.thesis_mul * 4;
    let mut thesis = Vec::new();
    let mut host = vec![0f32; count];
    let mut out = gpu.alloc::<f32>(count)?;
    {
        let mut raw = vec![0u32; 4 * opts.thesis_generators];
        Sfmt::new(Mexp::M19937, 2013).fill_u32(&mut raw);
        let seeds = gpu.upload(&raw)?;
        let m = opts.thesis_mul;
        let g = time_gpu(gpu, 1, opts.reps, || amd_normals(&seeds, m, &mut out))?;
        let c = time_cpu(1, opts.reps, || -> Result<()> {
            amd_normals(&seeds, m, &mut out)?;
            out.copy_to_host(&mut host)?;
            Ok(())
        });
        thesis.push(ThesisRow {
            name: format!(
                "seed's \"amd\" scheme, {} generators x {m}",
                opts.thesis_generators
            ),
            values: count,
            generate_ms: Some(g.median_ms),
            with_copy_ms: c.median_ms,
        });
    }
    drop(out);
    {
        let threads = ferrocuda::rng::gpu::default_threads(gpu)?;
        let ns = streams_for(gpu, threads)?.min(all.len());
        let blocks = count.div_ceil(ns * 624);
        let mut dev = SfmtStreams::new(gpu, &all[..ns])?;
        let mut out = gpu.alloc::<f32>(dev.len_u32(blocks))?;
        let mut host = vec![0f32; out.len()];
        let g = time_gpu(gpu, 1, opts.reps, || dev.fill_normal_f32(blocks, &mut out))?;
        let c = time_cpu(1, opts.reps, || -> Result<()> {
            dev.fill_normal_f32(blocks, &mut out)?;
            out.copy_to_host(&mut host)?;
            Ok(())
        });
        thesis.push(ThesisRow {
            name: format!("SFMT19937 streams, {ns} streams x {blocks} blocks"),
            values: out.len(),
            generate_ms: Some(g.median_ms),
            with_copy_ms: c.median_ms,
        });
        if opts.cpu {
            let mut streams = all[..ns].to_vec();
            let c = time_cpu(0, 3, || {
                cpu::fill_normal_f32(&mut streams, blocks, &mut host)
            });
            thesis.push(ThesisRow {
                name: format!(
                    "SFMT19937 streams on the CPU ({} threads)",
                    rayon::current_num_threads()
                ),
                values: host.len(),
                generate_ms: None,
                with_copy_ms: c.median_ms,
            });
        }
    }
    let mut out = gpu.alloc::<f32>(count)?;
    for kind in CurandKind::ALL {
        steps.next(format!("cuRAND {kind:?}, normal f32"));
        match Curand::new(gpu, kind, 1234) {
            Ok(gen_) => {
                let g = time_gpu(gpu, 1, opts.reps, || gen_.generate_normal_f32(&mut out))?;
                let c = time_cpu(1, opts.reps, || -> Result<()> {
                    gen_.generate_normal_f32(&mut out)?;
                    out.copy_to_host(&mut host)?;
                    Ok(())
                });
                thesis.push(ThesisRow {
                    name: format!("{} normals", kind.name()),
                    values: count,
                    generate_ms: Some(g.median_ms),
                    with_copy_ms: c.median_ms,
                });
            }
            Err(e) => skipped.push(format!("{} normals: {e}", kind.name())),
        }
    }
    Ok(RngBenchReport {
        device,
        write_ceiling_gbps,
        memset_gbps,
        fill_gbps,
        copy_gbps,
        large,
        thesis,
        skipped,
    })
}

impl RngBenchReport {
    fn header(&self) -> String {
        format!(
            "Device: {}. Write ceiling {:.1} GB/s (the faster of cuMemsetD8Async {:.1} GB/s and the fill_f32 kernel {:.1} GB/s over the same bytes, this run); device copy {:.1} GB/s (read + write).",
            self.device, self.write_ceiling_gbps, self.memset_gbps, self.fill_gbps, self.copy_gbps
        )
    }

    fn large_cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let h = vec![
            "generator",
            "values",
            "ms",
            "Gnumbers/s",
            "GB/s",
            "% of write ceiling",
        ];
        let rows = self
            .large
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    r.values.to_string(),
                    format!("{:.3}", r.ms),
                    format!("{:.2}", r.gnums),
                    format!("{:.1}", r.gbps),
                    format!("{:.1}", 100.0 * r.of_write_ceiling),
                ]
            })
            .collect();
        (h, rows)
    }

    fn thesis_cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let h = vec![
            "generator",
            "normals",
            "generate ms",
            "with copy to host ms",
        ];
        let rows = self
            .thesis
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    r.values.to_string(),
                    r.generate_ms.map_or("-".into(), |v| format!("{v:.3}")),
                    format!("{:.3}", r.with_copy_ms),
                ]
            })
            .collect();
        (h, rows)
    }

    /// The criteria, computed from this run: the best SFMT row against the write
    /// ceiling, cuRAND MT19937 and MTGP32.
    pub fn verdict(&self) -> String {
        let best = self
            .large
            .iter()
            .filter(|r| r.name.starts_with("SFMT"))
            .max_by(|a, b| a.gnums.total_cmp(&b.gnums));
        let find = |k: CurandKind| self.large.iter().find(|r| r.name == k.name());
        let Some(best) = best else {
            return "no SFMT row".into();
        };
        let mut v = format!(
            "Best SFMT19937 ({}): {:.1}% of the write ceiling (criterion >= 80%: {})",
            best.name,
            100.0 * best.of_write_ceiling,
            if best.of_write_ceiling >= 0.8 {
                "met"
            } else {
                "NOT met"
            }
        );
        if let Some(mt) = find(CurandKind::Mt19937) {
            let r = best.gnums / mt.gnums;
            v.push_str(&format!(
                "; {r:.2}x cuRAND MT19937 (criterion > 1: {})",
                if r > 1.0 { "met" } else { "NOT met" }
            ));
        }
        if let Some(mtgp) = find(CurandKind::Mtgp32) {
            let r = best.gnums / mtgp.gnums;
            v.push_str(&format!(
                "; {r:.2}x cuRAND MTGP32 (criterion >= 3: {})",
                if r >= 3.0 { "met" } else { "NOT met" }
            ));
        }
        v.push('.');
        v
    }

    const LARGE_NOTE: &str = "Large runs: uint32 output into device memory, median of device-event timings; GB/s = 4 bytes per number.";
    const THESIS_NOTE: &str = "Seed 004 Table 5.3 setup: 1536^2 generators x 8 128-bit outputs = 75,497,472 f32 normals (Box-Muller), generation alone (device events) and with the copy of every normal to a pageable host buffer (wall clock), median. The seed's GTX 480 ran 2 outputs per generator (its 128 MB buffer limit); this run uses the full 8. The \"amd\" scheme keeps the seed's quirks (overlapping Box-Muller pairs, per-lane ad-hoc seeding); the SFMT19937 rows use jump-ahead streams and disjoint pairs.";

    /// Plain-text tables.
    pub fn to_text(&self) -> String {
        let (h, r) = self.large_cells();
        let (th, tr) = self.thesis_cells();
        let mut t = format!(
            "{}\n\n{}\n{}\n\n{}\n\n{}\n{}\n",
            self.header(),
            Self::LARGE_NOTE,
            table(&h, &r),
            self.verdict(),
            Self::THESIS_NOTE,
            table(&th, &tr)
        );
        for s in &self.skipped {
            t.push_str(&format!("skipped: {s}\n"));
        }
        t
    }

    /// The Markdown file (docs/results/rng.md).
    pub fn to_markdown(&self) -> String {
        let (h, r) = self.large_cells();
        let (th, tr) = self.thesis_cells();
        let mut t = format!(
            "# Random numbers: SFMT19937 streams against cuRAND and the write ceiling\n\nWritten by `ferrocuda bench rng`; do not edit by hand.\n\n{}\n\n## Large runs\n\n{}\n\n{}\n{}\n\n## Seed 004, Table 5.3 setup\n\n{}\n\n{}\n",
            self.header(),
            Self::LARGE_NOTE,
            markdown_table(&h, &r),
            self.verdict(),
            Self::THESIS_NOTE,
            markdown_table(&th, &tr)
        );
        for s in &self.skipped {
            t.push_str(&format!("\nSkipped: {s}\n"));
        }
        t
    }
}

/// Writes `rng.md` (where `out` allows it: [`ResultsDir::save`]).
pub fn write_results(report: &RngBenchReport, out: &ResultsDir) -> Result<Saved> {
    out.save("rng.md", |out| {
        Ok(vec![out.write_markdown("rng.md", &report.to_markdown())?])
    })
}
