//! The measurements behind [`super::run`]: each launches its kernel, times it with
//! device events (host transfers: the wall clock), checks the kernel's output against
//! the CPU twin and records a [`Figure`].

use std::time::Instant;

use ferrocuda_kernels::probe::{
    ArithOp, CLOCK_WORDS, DMMA_CHAINS, SHARED_WORDS, UNROLL, chain_value, chase as chase_twin,
    diverge_value, dmma_value,
};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::ceilings::Ceilings;
use super::gpu::{self as k, DmmaShape, LatencyOp, PeakFloat, threads};
use super::{Figure, ProbeOptions, ProbeReport, Sweep, SweepPoint, fit_transfer};
use crate::error::Result;
use crate::gpu::{DeviceBuffer, Gpu};
use crate::timing::{Stats, time_gpu};

fn progress(msg: &str) {
    eprintln!("[probe] {msg}");
}

/// What every measurement needs.
struct Ctx<'a> {
    gpu: &'a Gpu,
    c: &'a Ceilings,
    opts: &'a ProbeOptions,
    /// One full wave of blocks: SMs x resident blocks of `BLOCK` threads.
    blocks: u32,
    l2_bytes: usize,
}

/// Runs every probe on `gpu` (or reports why there is none).
pub fn run(gpu: Option<&Gpu>, skipped: Option<String>, opts: &ProbeOptions) -> Result<ProbeReport> {
    let Some(gpu) = gpu else {
        return Ok(ProbeReport::skipped(
            skipped.unwrap_or_else(|| "no GPU".into()),
        ));
    };
    let info = gpu.info()?;
    // Loaded before any measurement (a JIT compile for a PTX-only build).
    crate::gpu::preload(gpu, &["probe"])?;
    let c = Ceilings::from_info(&info);
    let per_sm =
        (info.max_threads_per_multiprocessor.max(256) as u32) / ferrocuda_kernels::probe::BLOCK;
    let cx = Ctx {
        gpu,
        c: &c,
        opts,
        blocks: c.sms.max(1) * per_sm.max(1),
        l2_bytes: info.l2_cache_bytes.max(1 << 20) as usize,
    };
    let mut r = ProbeReport::skipped(String::new());
    r.gpu_skipped = None;
    r.device = Some(info.name.clone());
    r.quick = opts.quick;
    progress(&format!(
        "{} (cc {}.{}, {} SMs){}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        c.sms,
        if opts.quick { ", quick" } else { "" }
    ));

    compute(&cx, &mut r)?;
    memory(&cx, &mut r)?;
    shared(&cx, &mut r)?;
    latency(&cx, &mut r)?;
    chase(&cx, &mut r)?;
    transfers(&cx, &mut r)?;
    divergence(&cx, &mut r)?;
    r.ceilings = Some(c);
    Ok(r)
}

/// Median SM clock (Hz) over the blocks' (clock64, globaltimer) records.
fn clock_hz(clocks: &[u64]) -> Option<f64> {
    let mut v: Vec<f64> = clocks
        .chunks_exact(CLOCK_WORDS)
        .filter_map(|w| {
            let (cy, ns) = (w[1].wrapping_sub(w[0]), w[3].wrapping_sub(w[2]));
            (ns > 0 && cy > 0).then(|| cy as f64 / ns as f64 * 1e9)
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Sample threads whose output the CPU recomputes: the first, the last, and a few
/// between.
fn samples(n: usize) -> Vec<usize> {
    let mut s = vec![0, 1, n / 3, n / 2 + 7, n - 1];
    s.retain(|&i| i < n);
    s.dedup();
    s
}

fn check_str(bad: usize, total: usize) -> String {
    if bad == 0 {
        format!("ok ({total} checked)")
    } else {
        format!("MISMATCH in {bad} of {total}")
    }
}

fn compute(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    peak::<f32>(cx, r)?;
    peak::<f64>(cx, r)?;
    dmma(cx, r)
}

fn peak<T: PeakFloat + FromF64 + PartialEq>(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let n = threads(cx.blocks);
    let mut out = gpu.alloc::<T>(n)?;
    let mut clocks = gpu.alloc_zeroed::<u64>(cx.blocks as usize * CLOCK_WORDS)?;
    // Steps per thread and chain set: 2^20 (2^18 quick) over all chains.
    let steps: u64 = if cx.opts.quick { 1 << 18 } else { 1 << 20 };
    let fp64 = T::NAME == "f64";
    for op in [ArithOp::Add, ArithOp::Mul, ArithOp::Fma] {
        for wide in [false, true] {
            let w = k::chains(wide) as u64;
            let iters = (steps / (UNROLL as u64 * w)).max(1) as u32;
            let (b, c) = operands::<T>(op);
            progress(&format!(
                "peak {op:?} {} x{w}: {iters} x {UNROLL} steps per chain",
                T::NAME
            ));
            let stats = time_gpu(gpu, 1, cx.opts.reps, || {
                k::peak(gpu, op, wide, cx.blocks, iters, b, c, &mut out, &mut clocks)
            })?;
            let hz = clock_hz(&clocks.download()?).unwrap_or(f64::NAN);
            let ops = n as f64 * w as f64 * iters as f64 * UNROLL as f64;
            let gflops = ops * op.flops() as f64 / (stats.median_ms * 1e-3) / 1e9;
            // The CPU recomputes sample threads.
            let got = out.download()?;
            let s = samples(n);
            let bad = s
                .iter()
                .filter(|&&t| {
                    let want = if wide {
                        chain_value::<T, 8>(op, t as u32, iters, b, c)
                    } else {
                        chain_value::<T, 1>(op, t as u32, iters, b, c)
                    };
                    got[t] != want
                })
                .count();
            let lanes =
                cx.c.rates
                    .map(|r| if fp64 { r.fp64_lanes } else { r.fp32_lanes });
            let ceiling = cx.c.arith_at(fp64, op.flops(), hz).map(|v| {
                (
                    v / 1e9,
                    format!(
                        "{} lanes x {} SMs x {} FLOP x {:.0} MHz (measured)",
                        lanes.unwrap_or(0),
                        cx.c.sms,
                        op.flops(),
                        hz / 1e6
                    ),
                )
            });
            let name = format!(
                "{} {} ({})",
                match op {
                    ArithOp::Add => "add",
                    ArithOp::Mul => "mul",
                    ArithOp::Fma => "FMA",
                },
                T::NAME,
                if wide { "8 chains" } else { "1 chain" }
            );
            r.figures.push(Figure::new(
                "compute",
                name,
                gflops,
                "GFLOP/s",
                ceiling,
                check_str(bad, s.len()),
            ));
            if op == ArithOp::Fma && wide && !fp64 {
                r.measured_clock_hz = Some(hz);
                r.figures.insert(
                    0,
                    Figure::new(
                        "clock",
                        "SM clock during the FP32 FMA kernel (clock64 / globaltimer)",
                        hz / 1e6,
                        "MHz",
                        cx.c.peak_clock_hz
                            .map(|p| (p / 1e6, "driver's peak SM clock".into())),
                        "median over blocks",
                    )
                    // clock64 and globaltimer are different oscillators: on one H100
                    // they put the clock 0.75 % above the driver's peak, run after run
                    // (docs/notes/gpu-runs.md, run 42), so 1 % is what they agree to.
                    .with_tolerance(1.0),
                );
            }
        }
    }
    Ok(())
}

/// `(b, c)` of a peak kernel: values that keep every chain finite and away from
/// denormals for 2^20 steps.
fn operands<T: FromF64>(op: ArithOp) -> (T, T) {
    let from = |v: f64| -> T { T::from_f64(v) };
    match op {
        ArithOp::Add => (from(1.0 / 1024.0), from(0.0)),
        ArithOp::Mul => (from(1.0 - 1.0 / 1048576.0), from(0.0)),
        ArithOp::Fma => (from(1.0 - 1.0 / 1048576.0), from(1.0 / 1048576.0)),
    }
}

/// Conversion from f64 for the operands.
pub trait FromF64 {
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
}
impl FromF64 for f32 {
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}
impl FromF64 for f64 {
    fn from_f64(v: f64) -> f64 {
        v
    }
}

/// Every DMMA shape the device has ([`DmmaShape`]: `m8n8k4`, and on compute capability
/// 9.0 or newer the Hopper GEMM's `m16n8k4/k8/k16`) against the FP64 tensor-core
/// ceiling, so the GEMM's ceiling is measured.
fn dmma(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let hopper = gpu.compute_capability()?.0 >= 9;
    if hopper {
        // Module loading (a JIT compile for a PTX-only build) is not probe time.
        gpu.preload_module("ferrocuda_kernels::hopper")?;
    }
    for shape in DmmaShape::ALL {
        if shape.needs_sm90() && !hopper {
            continue;
        }
        dmma_shape(cx, shape, r)?;
    }
    Ok(())
}

fn dmma_shape(cx: &Ctx, shape: DmmaShape, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let n = threads(cx.blocks);
    let mut out = gpu.alloc::<f64>(n)?;
    let mut clocks = gpu.alloc_zeroed::<u64>(cx.blocks as usize * CLOCK_WORDS)?;
    // The same instructions per run for every shape (k16 does 4x the work of k4).
    let k = shape.mnk().2 as u32;
    let iters: u32 = (if cx.opts.quick { 256 } else { 1024 }) * 4 / k;
    let (a, b, c0) = (0.5, 1.0 / 1048576.0, 1.0);
    progress(&format!(
        "DMMA {}: {iters} x {UNROLL} x {DMMA_CHAINS} per warp",
        shape.name()
    ));
    let stats = time_gpu(gpu, 1, cx.opts.reps, || {
        k::dmma(
            gpu,
            shape,
            cx.blocks,
            iters,
            a,
            b,
            c0,
            &mut out,
            &mut clocks,
        )
    })?;
    let hz = clock_hz(&clocks.download()?).unwrap_or(f64::NAN);
    let warps = n as f64 / 32.0;
    let steps = iters as u64 * UNROLL as u64;
    let flops = warps * DMMA_CHAINS as f64 * steps as f64 * shape.flops() as f64;
    let want = dmma_value(shape, steps, a, b, c0);
    let got = out.download()?;
    let bad = got.iter().filter(|&&v| v != want).count();
    let ceiling = cx.c.fp64_tensor_at(hz).map(|v| {
        (
            v / 1e9,
            format!(
                "{} FLOP/clk/SM (whitepaper) x {} SMs x {:.0} MHz (measured)",
                cx.c.rates.and_then(|r| r.fp64_tensor_flops).unwrap_or(0),
                cx.c.sms,
                hz / 1e6
            ),
        )
    });
    r.figures.push(Figure::new(
        "compute",
        format!("DMMA f64 (mma.sync {}, tensor cores)", shape.name()),
        flops / (stats.median_ms * 1e-3) / 1e9,
        "GFLOP/s",
        ceiling,
        check_str(bad, got.len()),
    ));
    Ok(())
}

/// Sum of `write_pattern(j, value)` over `words` words, wrapping (what a read of a
/// written buffer must add up to per pass).
fn pattern_sum(words: usize, value: u32) -> u32 {
    let n = words as u128;
    let s = n * (n.saturating_sub(1)) / 2 + n * value as u128;
    (s % (1u128 << 32)) as u32
}

fn wrapping_total(v: &[u32]) -> u32 {
    v.iter().fold(0u32, |a, &b| a.wrapping_add(b))
}

/// Times `f` and returns the stats; the closure's errors propagate.
fn timed(cx: &Ctx, f: impl FnMut() -> Result<()>) -> Result<Stats> {
    time_gpu(cx.gpu, 1, cx.opts.reps, f)
}

fn memory(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let bytes: usize = if cx.opts.quick { 256 << 20 } else { 1 << 30 };
    let words = bytes / 4;
    let n = threads(cx.blocks);
    let dram = cx.c.dram.map(|d| {
        (
            d / 1e9,
            "memory clock x 2 x bus width (theoretical DRAM)".to_string(),
        )
    });
    let mut src = gpu.alloc::<u32>(words)?;
    let mut dst = gpu.alloc::<u32>(words)?;
    let mut out = gpu.alloc::<u32>(n)?;
    let value = 12345u32;
    progress(&format!("DRAM: write, read, copy of {} MiB", bytes >> 20));

    let write = timed(cx, || k::write(gpu, cx.blocks, value, &mut src))?;
    let read = timed(cx, || {
        k::read(gpu, true, false, cx.blocks, 1, &src, &mut out)
    })?;
    let read_ok = wrapping_total(&out.download()?) == pattern_sum(words, value);
    // Each copy's output is checked, then overwritten, so the next copy must write it.
    let copy_check = |dst: &mut DeviceBuffer<u32>, out: &mut DeviceBuffer<u32>| -> Result<bool> {
        k::read(gpu, true, false, cx.blocks, 1, dst, out)?;
        let ok = wrapping_total(&out.download()?) == pattern_sum(words, value);
        k::write(gpu, cx.blocks, 0, dst)?;
        Ok(ok)
    };
    // Copy kernels by grid size: one wave of resident blocks looping over the buffer,
    // more waves, and one 16-byte vector per thread (the grid covers the buffer).
    let vecs = (words / 4) as u32;
    let w = cx.blocks;
    let variants = [
        (false, w, "kernel, 1 wave"),
        (
            false,
            vecs.div_ceil(2 * ferrocuda_kernels::probe::BLOCK),
            "kernel, 2 vectors per thread",
        ),
        (true, w, "streaming kernel (ld.cg x4, st.cs), 1 wave"),
        (true, 4 * w, "streaming kernel, 4 waves"),
        (true, 16 * w, "streaming kernel, 16 waves"),
        (
            true,
            vecs.div_ceil(ferrocuda_kernels::probe::BLOCK),
            "streaming kernel, 1 vector per thread",
        ),
    ];
    let mut copies = Vec::new();
    for (stream, blocks, label) in variants {
        let st = timed(cx, || k::copy(gpu, stream, blocks, &src, &mut dst))?;
        let good = copy_check(&mut dst, &mut out)?;
        copies.push((label, blocks, st, good));
    }
    let ok = |b: bool| {
        if b {
            "ok (checksum)"
        } else {
            "MISMATCH (checksum)"
        }
    };
    // The read's checksum covers the write too: it reads back the written pattern.
    for (what, st) in [("read", &read), ("write", &write)] {
        let insn = if what == "read" {
            "ld.global.cg.v4"
        } else {
            "st.global.v4"
        };
        r.figures.push(Figure::new(
            "memory",
            format!("{what} {} MiB ({insn})", bytes >> 20),
            st.gbps(bytes as f64),
            "GB/s",
            dram.clone(),
            ok(read_ok),
        ));
    }
    for (label, blocks, st, good) in copies {
        r.figures.push(Figure::new(
            "memory",
            format!(
                "copy {} MiB ({label}: {blocks} blocks; read + write)",
                bytes >> 20
            ),
            st.gbps(2.0 * bytes as f64),
            "GB/s",
            dram.clone(),
            ok(good),
        ));
    }
    let memcpy = crate::timing::copy_ceiling_gbps(gpu, bytes, cx.opts.reps)?;
    r.figures.push(Figure::new(
        "memory",
        format!("copy {} MiB (cuMemcpyDtoD, read + write)", bytes >> 20),
        memcpy,
        "GB/s",
        dram.clone(),
        "driver copy",
    ));

    // L2-resident: a quarter of L2, read many times through L2 only.
    let l2_words = (cx.l2_bytes / 4 / 4) & !3;
    let mut l2buf = gpu.alloc::<u32>(l2_words)?;
    k::write(gpu, cx.blocks, value, &mut l2buf)?;
    let passes = ((bytes / (l2_words * 4)).max(1) as u32).min(256);
    let l2 = timed(cx, || {
        k::read(gpu, true, false, cx.blocks, passes, &l2buf, &mut out)
    })?;
    let l2_ok =
        wrapping_total(&out.download()?) == pattern_sum(l2_words, value).wrapping_mul(passes);
    r.figures.push(Figure::new(
        "memory",
        format!(
            "L2-resident read ({} KiB x {passes} passes)",
            l2_words / 256
        ),
        l2.gbps((l2_words * 4) as f64 * passes as f64),
        "GB/s",
        None,
        ok(l2_ok),
    ));

    // Gather through a random permutation.
    let g = if cx.opts.quick { 1 << 22 } else { 1 << 24 };
    progress(&format!("gather of {g} words through a random permutation"));
    let mut idx: Vec<u32> = (0..g as u32).collect();
    let mut rng = SmallRng::seed_from_u64(2);
    for i in (1..g).rev() {
        let j = rng.random_range(0..=i);
        idx.swap(i, j);
    }
    let max = k::check_indices(&idx, g)?;
    let didx = gpu.upload(&idx)?;
    let mut gsrc = gpu.alloc::<u32>(g)?;
    k::write(gpu, cx.blocks, value, &mut gsrc)?;
    let gather = timed(cx, || {
        k::gather(gpu, cx.blocks, &didx, max, &gsrc, &mut out)
    })?;
    let gather_ok = wrapping_total(&out.download()?) == pattern_sum(g, value);
    r.figures.push(Figure::new(
        "memory",
        format!(
            "random gather of {} Mi words (index + word = 8 B each)",
            g >> 20
        ),
        gather.gbps(8.0 * g as f64),
        "GB/s",
        dram,
        ok(gather_ok),
    ));
    drop((didx, gsrc, l2buf, dst));

    // Sweeps: L2 vs DRAM (the grid shares the buffer, ld.global.cg) and L1 vs L2 (every
    // block reads the whole buffer through L1).
    let target: f64 = if cx.opts.quick { 1e9 } else { 4e9 };
    let mut grid_sweep = Vec::new();
    let mut size = 1usize << 20;
    while size <= bytes {
        let w = size / 4;
        let sub = sub_buffer(gpu, &src, w)?;
        let passes = ((target / size as f64).ceil() as u32).clamp(1, 4096);
        let s = timed(cx, || {
            k::read(gpu, true, false, cx.blocks, passes, &sub, &mut out)
        })?;
        grid_sweep.push(SweepPoint {
            bytes: size as f64,
            value: s.gbps(size as f64 * passes as f64),
        });
        size *= if cx.opts.quick { 4 } else { 2 };
    }
    let mut block_sweep = Vec::new();
    let mut size = 4usize << 10;
    let per_block_max = if cx.opts.quick { 4 << 20 } else { 16 << 20 };
    let mut l1_figure = None;
    while size <= per_block_max {
        let w = size / 4;
        let sub = sub_buffer(gpu, &src, w)?;
        let total = size as f64 * cx.blocks as f64;
        let passes = ((target / total).ceil() as u32).clamp(1, 4096);
        let s = timed(cx, || {
            k::read(gpu, false, true, cx.blocks, passes, &sub, &mut out)
        })?;
        let gbps = s.gbps(total * passes as f64);
        block_sweep.push(SweepPoint {
            bytes: size as f64,
            value: gbps,
        });
        if size == 32 << 10 {
            let sum_ok = wrapping_total(&out.download()?)
                == pattern_sum(w, value)
                    .wrapping_mul(passes)
                    .wrapping_mul(cx.blocks);
            l1_figure = Some((gbps, passes, sum_ok));
        }
        size *= if cx.opts.quick { 4 } else { 2 };
    }
    if let Some((gbps, passes, sum_ok)) = l1_figure {
        let hz = r.measured_clock_hz.unwrap_or(f64::NAN);
        r.figures.push(Figure::new(
            "memory",
            format!("L1-resident read (32 KiB per block, {passes} passes)"),
            gbps,
            "GB/s",
            Some((
                cx.c.shared_at(hz) / 1e9,
                format!(
                    "128 B/clk/SM (L1/shared data path) x {} SMs x {:.0} MHz (measured)",
                    cx.c.sms,
                    hz / 1e6
                ),
            )),
            ok(sum_ok),
        ));
    }
    r.bandwidth_sweeps.push(Sweep {
        name: "grid shares the buffer (ld.global.cg: L2, then DRAM)".into(),
        points: grid_sweep,
    });
    r.bandwidth_sweeps.push(Sweep {
        name: "every block reads the buffer (ld.global: L1, then L2)".into(),
        points: block_sweep,
    });
    Ok(())
}

/// The first `words` words of `src` as a buffer of their own (a device copy: the read
/// kernels take whole buffers).
fn sub_buffer(gpu: &Gpu, src: &DeviceBuffer<u32>, words: usize) -> Result<DeviceBuffer<u32>> {
    let mut b = gpu.alloc::<u32>(words)?;
    b.copy_from_device(&src.view(0..words)?)?;
    Ok(b)
}

fn shared(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let n = threads(cx.blocks);
    let mut out = gpu.alloc::<u32>(n)?;
    let base: u32 = if cx.opts.quick { 1024 } else { 4096 };
    let hz = r.measured_clock_hz.unwrap_or(f64::NAN);
    progress("shared memory, lane strides 1..32");
    for stride in [1u32, 2, 4, 8, 16, 32] {
        let iters = (base / stride).max(8);
        let s = timed(cx, || k::shared(gpu, cx.blocks, iters, stride, &mut out))?;
        let bytes = n as f64 * iters as f64 * UNROLL as f64 * 4.0;
        let got = out.download()?;
        let loads = iters as usize * UNROLL as usize;
        let bad = (0..32)
            .filter(|&l| {
                let mut at = (l as u32).wrapping_mul(stride) & (SHARED_WORDS - 1);
                let mut acc = 0u32;
                for _ in 0..loads {
                    acc = acc.wrapping_add(at);
                    at = (at + 1) & (SHARED_WORDS - 1);
                }
                got[l] != acc
            })
            .count();
        r.figures.push(Figure::new(
            "shared",
            format!(
                "shared-memory read, lane stride {stride} ({}-way bank conflict)",
                stride.min(32)
            ),
            s.gbps(bytes),
            "GB/s",
            Some((
                cx.c.shared_at(hz) / 1e9,
                format!(
                    "32 banks x 4 B x {} SMs x {:.0} MHz (measured)",
                    cx.c.sms,
                    hz / 1e6
                ),
            )),
            check_str(bad, 32),
        ));
    }
    Ok(())
}

fn latency(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let mut out = gpu.alloc::<u64>(2)?;
    let iters = 256u32;
    let steps = iters as u64 * UNROLL as u64;
    progress("instruction latencies (one thread, dependent chains)");
    for op in LatencyOp::ALL {
        let (x, y) = match op {
            LatencyOp::Fadd => (1.0, 1.0 / 1024.0),
            LatencyOp::Ffma | LatencyOp::Dfma => (0.25, 0.5),
            LatencyOp::Imad => (1.0, 3.0),
            LatencyOp::Sin => (1.0, 0.0),
            LatencyOp::Ex2 => (-1.0, 0.0),
            LatencyOp::Rsqrt => (2.0, 0.0),
        };
        // Warm-up launch (module load, instruction cache), then the median of reps.
        let mut cycles = Vec::new();
        let mut bits = 0;
        for rep in 0..=cx.opts.reps.max(1) {
            k::latency(gpu, op, iters, x, y, &mut out)?;
            let v = out.download()?;
            if rep > 0 {
                cycles.push(v[0] as f64 / steps as f64);
            }
            bits = v[1];
        }
        let per = Stats::from_samples(cycles).median_ms;
        let check = match k::latency_twin(op, steps, x, y) {
            Some(want) if want == bits => "ok (CPU twin)".to_string(),
            Some(_) => "MISMATCH (CPU twin)".to_string(),
            None => "approximate: not compared".to_string(),
        };
        let mut f = Figure::new(
            "latency",
            format!("{} dependent chain", op.ptx()),
            per,
            "cycles",
            None,
            check,
        );
        if per < 1.0 {
            f = f.flag("below 1 cycle per dependent instruction: the chain was not dependent");
        }
        r.figures.push(f);
    }
    Ok(())
}

fn chase(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let mut out = gpu.alloc::<u64>(2)?;
    let max: usize = if cx.opts.quick { 64 << 20 } else { 512 << 20 };
    let steps: u32 = if cx.opts.quick { 4096 } else { 16384 };
    progress(&format!("pointer chase, 16 KiB .. {} MiB", max >> 20));
    let mut size = 16usize << 10;
    let mut rng = SmallRng::seed_from_u64(3);
    while size <= max {
        // One entry per 128-byte line (32 words), a random cycle through all lines.
        let lines = size / 128;
        let mut order: Vec<u32> = (0..lines as u32).collect();
        for i in (1..lines).rev() {
            let j = rng.random_range(0..i); // Sattolo: one cycle
            order.swap(i, j);
        }
        let mut next = vec![0u32; size / 4];
        for i in 0..lines {
            next[order[i] as usize * 32] = order[(i + 1) % lines] * 32;
        }
        let dnext = gpu.upload(&next)?;
        let max_entry = ((lines - 1) * 32) as u32;
        // Each repetition goes on where the last stopped, so in a buffer larger than
        // L2 every repetition meets lines no earlier one touched.
        let mut cycles = Vec::new();
        let (mut at, mut good) = (0u32, true);
        for _ in 0..cx.opts.reps.clamp(1, 3) {
            k::chase(gpu, steps, at, &dnext, max_entry, &mut out)?;
            let v = out.download()?;
            cycles.push(v[0] as f64 / steps as f64);
            good &= v[1] == chase_twin(&next, at, 2 * steps) as u64;
            at = v[1] as u32;
        }
        let per = Stats::from_samples(cycles).median_ms;
        r.chase.push(SweepPoint {
            bytes: size as f64,
            value: per,
        });
        let mut f = Figure::new(
            "chase",
            format!("pointer chase, {}", human(size)),
            per,
            "cycles",
            None,
            if good {
                "ok (CPU twin)"
            } else {
                "MISMATCH (CPU twin)"
            },
        );
        if per < 1.0 {
            f = f.flag("below 1 cycle per dependent load");
        }
        r.figures.push(f);
        size *= 4;
    }
    Ok(())
}

/// Bytes in whole KiB, MiB or GiB (`16 KiB`, `4 MiB`, `1 GiB`): the size column of the
/// sweep tables.
pub fn human(bytes: usize) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn transfers(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let max: usize = if cx.opts.quick { 64 << 20 } else { 256 << 20 };
    progress(&format!("host <-> device, 4 KiB .. {} MiB", max >> 20));
    let mut pinned = gpu.alloc_pinned::<u8>(max)?;
    let mut pageable = vec![1u8; max];
    for (i, b) in pinned.as_mut_slice().iter_mut().enumerate() {
        *b = i as u8;
    }
    let pcie = cx.c.pcie.map(|p| {
        (
            p / 1e9,
            "PCIe line rate per direction (max speed x width)".to_string(),
        )
    });
    let mut sizes = Vec::new();
    let mut s = 4usize << 10;
    while s <= max {
        sizes.push(s);
        s *= 4;
    }
    for (pin, htod) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut points = Vec::new();
        let mut fit_pts = Vec::new();
        for &size in &sizes {
            let mut dev = gpu.alloc::<u8>(size)?;
            let mut samples = Vec::new();
            for rep in 0..=cx.opts.reps {
                let t = Instant::now();
                match (pin, htod) {
                    (true, true) => dev.copy_from_host(&pinned.as_slice()[..size])?,
                    (true, false) => dev.copy_to_host(&mut pinned.as_mut_slice()[..size])?,
                    (false, true) => dev.copy_from_host(&pageable[..size])?,
                    (false, false) => dev.copy_to_host(&mut pageable[..size])?,
                }
                if rep > 0 {
                    samples.push(t.elapsed().as_secs_f64());
                }
            }
            let st = Stats::from_samples(samples);
            points.push(SweepPoint {
                bytes: size as f64,
                value: size as f64 / st.median_ms / 1e9,
            });
            fit_pts.push((size as f64, st.median_ms));
        }
        let name = format!(
            "{} {}",
            if htod {
                "host -> device"
            } else {
                "device -> host"
            },
            if pin { "pinned" } else { "pageable" }
        );
        match fit_transfer(&fit_pts) {
            Some(fit) => {
                r.figures.push(Figure::new(
                    "transfer",
                    format!("{name}: bandwidth (fit t = t0 + bytes/BW)"),
                    fit.bandwidth / 1e9,
                    "GB/s",
                    pcie.clone(),
                    "fit",
                ));
                r.figures.push(Figure::new(
                    "transfer",
                    format!("{name}: t0 (fit)"),
                    fit.t0_s * 1e6,
                    "us",
                    None,
                    "fit",
                ));
            }
            None => r.figures.push(Figure::new(
                "transfer",
                format!("{name}: no fit"),
                f64::NAN,
                "GB/s",
                None,
                "fit failed",
            )),
        }
        r.transfers.push(Sweep { name, points });
    }
    // A round trip proves the bytes arrived.
    let n = 1 << 20;
    let dev = gpu.upload(&pinned.as_slice()[..n])?;
    let back = dev.download()?;
    let intact = back[..] == pinned.as_slice()[..n];
    for f in r.figures.iter_mut().filter(|f| f.group == "transfer") {
        f.check = if intact {
            format!("{}; round trip ok", f.check)
        } else {
            "MISMATCH: round trip changed the data".into()
        };
    }
    Ok(())
}

fn divergence(cx: &Ctx, r: &mut ProbeReport) -> Result<()> {
    let gpu = cx.gpu;
    let n = threads(cx.blocks);
    let mut out = gpu.alloc::<f32>(n)?;
    let iters: u32 = if cx.opts.quick { 64 } else { 256 };
    let (b, c) = (1.0 - 1.0 / 1048576.0, 1.0 / 1048576.0);
    progress("warp divergence, 1..32 paths");
    let mut base = None;
    for paths in [1u32, 2, 4, 8, 16, 32] {
        let s = timed(cx, || {
            k::diverge(gpu, cx.blocks, iters, paths, b, c, &mut out)
        })?;
        let got = out.download()?;
        let smp = samples(n);
        let bad = smp
            .iter()
            .filter(|&&t| got[t] != diverge_value(t as u32, iters, paths, b, c))
            .count();
        let t1 = *base.get_or_insert(s.median_ms);
        let ratio = s.median_ms / t1;
        r.divergence.push((paths, ratio));
        r.figures.push(Figure::new(
            "divergence",
            format!("{paths} paths per warp: time / 1 path (ideal {paths})"),
            ratio,
            "x",
            None,
            check_str(bad, smp.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocuda_kernels::probe::write_pattern;

    #[test]
    fn pattern_sum_matches_a_loop() {
        for (w, v) in [(0usize, 5u32), (1, 7), (1000, 12345), (1 << 20, u32::MAX)] {
            let want = (0..w).fold(0u32, |a, j| a.wrapping_add(write_pattern(j, v)));
            assert_eq!(pattern_sum(w, v), want, "words {w}, value {v}");
        }
    }

    #[test]
    fn clock_is_the_median_ratio() {
        // Two blocks at 1.5 GHz, one at 1 GHz.
        let c = [0, 1500, 0, 1000, 0, 3000, 10, 2010, 0, 1000, 0, 1000];
        assert_eq!(clock_hz(&c), Some(1.5e9));
        assert_eq!(clock_hz(&[]), None);
    }
}
