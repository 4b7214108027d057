//! The probe kernels compute what they claim (small inputs, every thread's output against
//! the CPU twin), and a quick probe gives positive figures within their ceilings. Skips
//! visibly without a GPU; fails with FERROCUDA_REQUIRE_GPU=1.

use crate::common;

use common::gpu_or_skip;
use ferrocuda::probe::gpu::{self as k, LatencyOp, latency_twin, threads};
use ferrocuda::probe::{ProbeOptions, run};
use ferrocuda_kernels::probe::{
    ArithOp, CLOCK_WORDS, DMMA_CHAINS, DmmaShape, SHARED_WORDS, UNROLL, chain_value, chase,
    diverge_value, dmma_value, write_pattern,
};

const BLOCKS: u32 = 3;

#[test]
fn peak_kernels_match_the_cpu_twin_in_every_thread() {
    let Some(gpu) = gpu_or_skip("peak_kernels_match_the_cpu_twin_in_every_thread") else {
        return;
    };
    let n = threads(BLOCKS);
    fn case<T>(gpu: &ferrocuda::gpu::Gpu, n: usize)
    where
        T: k::PeakFloat + PartialEq + std::fmt::Debug + From<f32>,
    {
        let mut out = gpu.alloc::<T>(n).unwrap();
        let mut clocks = gpu
            .alloc_zeroed::<u64>(BLOCKS as usize * CLOCK_WORDS)
            .unwrap();
        let (b, c): (T, T) = (T::from(0.999), T::from(0.001953125));
        for op in [ArithOp::Add, ArithOp::Mul, ArithOp::Fma] {
            for wide in [false, true] {
                let iters = 5;
                k::peak(gpu, op, wide, BLOCKS, iters, b, c, &mut out, &mut clocks).unwrap();
                let got = out.download().unwrap();
                for (t, g) in got.iter().enumerate() {
                    let want = if wide {
                        chain_value::<T, 8>(op, t as u32, iters, b, c)
                    } else {
                        chain_value::<T, 1>(op, t as u32, iters, b, c)
                    };
                    assert_eq!(*g, want, "{} {op:?} wide={wide} thread {t}", T::NAME);
                }
                let ck = clocks.download().unwrap();
                for blk in ck.chunks_exact(CLOCK_WORDS) {
                    assert!(blk[1] > blk[0], "clock64 advanced: {blk:?}");
                    assert!(blk[3] >= blk[2], "globaltimer does not go back: {blk:?}");
                }
            }
        }
    }
    case::<f32>(&gpu, n);
    case::<f64>(&gpu, n);
}

/// Every DMMA shape the device has adds `k a b` per product to every accumulator (the
/// output poisoned first); a Hopper shape below compute capability 9.0 is an error.
#[test]
fn dmma_adds_k_ab_per_product() {
    let Some(gpu) = gpu_or_skip("dmma_adds_k_ab_per_product") else {
        return;
    };
    let n = threads(BLOCKS);
    let hopper = gpu.compute_capability().unwrap().0 >= 9;
    let iters = 3;
    for shape in DmmaShape::ALL {
        let mut out = gpu.upload(&vec![f64::NAN; n]).unwrap();
        let mut clocks = gpu
            .alloc_zeroed::<u64>(BLOCKS as usize * CLOCK_WORDS)
            .unwrap();
        let r = k::dmma(
            &gpu,
            shape,
            BLOCKS,
            iters,
            0.25,
            0.125,
            2.0,
            &mut out,
            &mut clocks,
        );
        if shape.needs_sm90() && !hopper {
            let e = r.expect_err("a Hopper shape before sm_90").to_string();
            assert!(e.contains("compute capability 9.0"), "{e}");
            continue;
        }
        r.unwrap();
        let want = dmma_value(shape, iters as u64 * UNROLL as u64, 0.25, 0.125, 2.0);
        let k = shape.mnk().2 as f64;
        assert_eq!(
            want,
            (2.0 + 48.0 * k / 4.0 * 0.125) * (shape.c_regs() * DMMA_CHAINS) as f64
        );
        for (t, g) in out.download().unwrap().iter().enumerate() {
            assert_eq!(*g, want, "{}: thread {t}", shape.name());
        }
    }
}

#[test]
fn memory_kernels_write_read_copy_and_gather_exactly() {
    let Some(gpu) = gpu_or_skip("memory_kernels_write_read_copy_and_gather_exactly") else {
        return;
    };
    let n = threads(BLOCKS);
    for words in [4usize, 36, 4 * 1000 + 4, 4 * 4099] {
        let mut src = gpu.upload(&vec![u32::MAX; words]).unwrap();
        k::write(&gpu, BLOCKS, 77, &mut src).unwrap();
        let host = src.download().unwrap();
        for (j, v) in host.iter().enumerate() {
            assert_eq!(*v, write_pattern(j, 77), "write, {words} words, word {j}");
        }
        for stream in [false, true] {
            let mut dst = gpu.upload(&vec![0u32; words]).unwrap();
            k::copy(&gpu, stream, BLOCKS, &src, &mut dst).unwrap();
            assert_eq!(
                dst.download().unwrap(),
                host,
                "copy (stream {stream}) of {words} words"
            );
        }
        let total: u32 = host.iter().fold(0, |a, &b| a.wrapping_add(b));
        let mut out = gpu.upload(&vec![1u32; n]).unwrap();
        for (cg, per_block, passes) in [
            (false, false, 1),
            (true, false, 3),
            (false, true, 2),
            (true, true, 1),
        ] {
            k::read(&gpu, cg, per_block, BLOCKS, passes, &src, &mut out).unwrap();
            let sum = out
                .download()
                .unwrap()
                .iter()
                .fold(0u32, |a, &b| a.wrapping_add(b));
            let copies = passes * if per_block { BLOCKS } else { 1 };
            assert_eq!(
                sum,
                total.wrapping_mul(copies),
                "read cg={cg} per_block={per_block}, {words} words"
            );
        }
        // Gather through a reversal.
        let idx: Vec<u32> = (0..words as u32).rev().collect();
        let didx = gpu.upload(&idx).unwrap();
        let max = k::check_indices(&idx, words).unwrap();
        k::gather(&gpu, BLOCKS, &didx, max, &src, &mut out).unwrap();
        let sum = out
            .download()
            .unwrap()
            .iter()
            .fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(sum, total, "gather of {words} words");
    }
    let src = gpu.alloc::<u32>(6).unwrap();
    let mut out = gpu.alloc::<u32>(n).unwrap();
    assert!(
        k::read(&gpu, false, false, BLOCKS, 1, &src, &mut out).is_err(),
        "6 words are no 16-byte vectors"
    );
    assert!(
        k::check_indices(&[0, 9], 8).is_err(),
        "index 9 past 8 words"
    );
}

#[test]
fn shared_chase_latency_and_divergence_kernels_compute_their_values() {
    let Some(gpu) = gpu_or_skip("shared_chase_latency_and_divergence_kernels_compute_their_values")
    else {
        return;
    };
    let n = threads(BLOCKS);
    let mut out = gpu.alloc::<u32>(n).unwrap();
    for stride in [1u32, 3, 32] {
        let iters = 7;
        k::shared(&gpu, BLOCKS, iters, stride, &mut out).unwrap();
        for (t, g) in out.download().unwrap().iter().enumerate() {
            let mut at = ((t % 32) as u32 * stride) & (SHARED_WORDS - 1);
            let mut acc = 0u32;
            for _ in 0..iters * UNROLL {
                acc = acc.wrapping_add(at);
                at = (at + 1) & (SHARED_WORDS - 1);
            }
            assert_eq!(*g, acc, "shared stride {stride} thread {t}");
        }
    }
    // Chase: a cycle over 4 lines of 32 words.
    let mut next = vec![0u32; 128];
    next[0] = 64;
    next[64] = 32;
    next[32] = 96;
    next[96] = 0;
    let dnext = gpu.upload(&next).unwrap();
    let mut o = gpu.alloc::<u64>(2).unwrap();
    for (steps, start) in [(1u32, 0u32), (5, 0), (6, 32)] {
        k::chase(&gpu, steps, start, &dnext, 96, &mut o).unwrap();
        let v = o.download().unwrap();
        assert_eq!(
            v[1],
            chase(&next, start, 2 * steps) as u64,
            "chase {steps} steps from {start}"
        );
        assert!(v[0] >= steps as u64, "at least a cycle per dependent load");
    }
    for op in LatencyOp::ALL {
        let (x, y) = match op {
            LatencyOp::Imad => (1.0, 3.0),
            LatencyOp::Rsqrt => (2.0, 0.0),
            _ => (0.25, 0.5),
        };
        let iters = 4;
        k::latency(&gpu, op, iters, x, y, &mut o).unwrap();
        let v = o.download().unwrap();
        let steps = iters as u64 * UNROLL as u64;
        assert!(
            v[0] >= steps,
            "{op:?}: {} cycles for {steps} dependent steps",
            v[0]
        );
        if let Some(want) = latency_twin(op, steps, x, y) {
            assert_eq!(v[1], want, "{op:?} result");
        } else {
            let r = f32::from_bits(v[1] as u32);
            assert!(r.is_finite() || op == LatencyOp::Ex2, "{op:?} gave {r}");
        }
    }
    let mut f = gpu.alloc::<f32>(n).unwrap();
    for paths in [1u32, 2, 5, 32] {
        k::diverge(&gpu, BLOCKS, 3, paths, 0.5, 0.25, &mut f).unwrap();
        for (t, g) in f.download().unwrap().iter().enumerate() {
            assert_eq!(
                *g,
                diverge_value(t as u32, 3, paths, 0.5, 0.25),
                "{paths} paths thread {t}"
            );
        }
    }
    assert!(
        k::diverge(&gpu, BLOCKS, 3, 33, 0.5, 0.25, &mut f).is_err(),
        "33 paths"
    );
}

#[test]
fn quick_probe_figures_are_positive_and_within_their_ceilings() {
    let Some(gpu) = gpu_or_skip("quick_probe_figures_are_positive_and_within_their_ceilings")
    else {
        return;
    };
    let _big = common::large_lock();
    let r = run(Some(&gpu), None, &ProbeOptions::quick()).expect("probe");
    assert_eq!(r.device.as_deref(), Some(gpu.name().unwrap().as_str()));
    assert!(
        r.measured_clock_hz.is_some_and(|h| h > 1e8),
        "clock {:?}",
        r.measured_clock_hz
    );
    for f in &r.figures {
        assert!(!f.impossible, "{}: impossible: {f:?}", f.name);
        assert!(!f.check.contains("MISMATCH"), "{}: {}", f.name, f.check);
        if !f.name.contains("t0") {
            assert!(f.value > 0.0, "{}: {}", f.name, f.value);
        }
        if let Some(p) = f.percent {
            assert!(p <= 100.0 + f.tolerance_pct, "{}: {p} %", f.name);
        }
    }
    for g in [
        "clock",
        "compute",
        "memory",
        "shared",
        "latency",
        "chase",
        "transfer",
        "divergence",
    ] {
        assert!(r.figures.iter().any(|f| f.group == g), "no {g} figure");
    }
    let lat = |p: &str| r.figure(p).map(|f| f.value).unwrap_or(f64::NAN);
    for (name, lo, hi) in [
        ("add.rn.f32", 2.0, 40.0),
        ("fma.rn.f32", 2.0, 40.0),
        ("fma.rn.f64", 2.0, 80.0),
        ("mad.lo.u32", 2.0, 40.0),
        ("sin.approx", 4.0, 200.0),
    ] {
        let v = lat(name);
        assert!((lo..=hi).contains(&v), "{name}: {v} cycles is implausible");
    }
}
