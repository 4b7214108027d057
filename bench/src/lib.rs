//! The shared benchmark harness: timing (device events or the host clock), statistics,
//! and plain-text tables. Reports are `serde` types so every benchmark can print JSON.

pub mod blas1;
pub mod gmres;
pub mod lu;
pub mod mpc;
pub mod multigrid;
pub mod peer;
pub mod plot;
pub mod rng;
pub mod rock4;
pub mod scaling;
pub mod spmv;
pub mod spmv_thesis;

use std::time::Instant;

use serde::Serialize;

use crate::error::Result;
use crate::gpu::Gpu;

/// Summary of repeated timings, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stats {
    /// Median.
    pub median_ms: f64,
    /// Fastest.
    pub min_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Timed repetitions.
    pub reps: usize,
}

impl Stats {
    /// Summarises samples (at least one).
    pub fn from_samples(mut samples: Vec<f64>) -> Stats {
        samples.sort_by(f64::total_cmp);
        let n = samples.len().max(1);
        let median = if samples.is_empty() {
            f64::NAN
        } else if n % 2 == 1 {
            samples[n / 2]
        } else {
            0.5 * (samples[n / 2 - 1] + samples[n / 2])
        };
        Stats {
            median_ms: median,
            min_ms: samples.first().copied().unwrap_or(f64::NAN),
            max_ms: samples.last().copied().unwrap_or(f64::NAN),
            reps: samples.len(),
        }
    }

    /// Bytes per second at the median time, in GB/s (10^9 bytes).
    pub fn gbps(&self, bytes: f64) -> f64 {
        bytes / (self.median_ms * 1e-3) / 1e9
    }
}

/// Times `f` on the GPU with device events around each repetition, after `warmup`
/// untimed runs (module load and first-touch stay out of the numbers).
pub fn time_gpu(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Stats> {
    for _ in 0..warmup {
        f()?;
    }
    gpu.synchronize()?;
    let timer = gpu.timer()?;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        timer.start()?;
        f()?;
        timer.stop()?;
        samples.push(timer.elapsed_ms()?);
    }
    Ok(Stats::from_samples(samples))
}

/// The device copy ceiling: median bandwidth (GB/s, read + write bytes) of a
/// device-to-device copy (`cuMemcpyDtoD`) of `bytes` bytes, measured now on `gpu`. Every
/// benchmark reports its GPU figures as a fraction of this, taken in the same run.
pub fn copy_ceiling_gbps(gpu: &Gpu, bytes: usize, reps: usize) -> Result<f64> {
    let elems = bytes.div_ceil(size_of::<u32>()).max(1);
    let src = gpu.alloc_zeroed::<u32>(elems)?;
    let mut dst = gpu.alloc::<u32>(elems)?;
    let stats = time_gpu(gpu, 2, reps, || {
        Ok(crate::gpu::copy_device(&src, &mut dst)?)
    })?;
    Ok(stats.gbps(2.0 * (elems * size_of::<u32>()) as f64))
}

/// Times `f` on the host clock after `warmup` untimed runs.
pub fn time_cpu<R>(warmup: usize, reps: usize, mut f: impl FnMut() -> R) -> Stats {
    for _ in 0..warmup {
        std::hint::black_box(f());
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        std::hint::black_box(f());
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Stats::from_samples(samples)
}

/// Renders rows as an aligned plain-text table (first column left, others right).
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    for row in rows {
        out.push('\n');
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Renders rows as a Markdown table.
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "| {} |\n|{}|\n",
        headers.join(" | "),
        headers.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// Random values uniform in [-1, 1] for benchmarks and the tour (seeded: reproducible).
pub fn random_vector<T: crate::blas1::Element>(n: usize, seed: u64) -> Vec<T> {
    use rand::{Rng, SeedableRng, rngs::SmallRng};
    use rayon::prelude::*;
    let chunk = 1 << 16;
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(chunk).enumerate().for_each(|(c, out)| {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for x in out {
            let re = <T::Real as crate::RealScalar>::from_f64(rng.random_range(-1.0..1.0));
            let im = <T::Real as crate::RealScalar>::from_f64(rng.random_range(-1.0..1.0));
            *x = T::from_parts(re, im);
        }
    });
    v
}
