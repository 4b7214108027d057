//! Measurement API: timing statistics, event timing on the GPU, the host clock, and the
//! device copy ceiling. The probe ([`crate::probe`]) measures with it, and so do the
//! benchmarks of `ferrocuda-bench`, so that every figure is timed the same way.

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
    ///
    /// ```
    /// use ferrocuda::timing::Stats;
    /// let s = Stats::from_samples(vec![4.0, 1.0, 3.0, 2.0]);
    /// assert_eq!((s.median_ms, s.min_ms, s.max_ms, s.reps), (2.5, 1.0, 4.0, 4));
    /// assert_eq!(s.gbps(5e6), 2.0); // 5 MB in 2.5 ms
    /// ```
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
