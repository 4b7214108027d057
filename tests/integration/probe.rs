//! `ferrocuda probe` on the CPU: the ceiling table against known devices, the transfer
//! fit, the >100 % flag, and the kernels' CPU twins.

use ferrocuda::gpu::PcieLink;
use ferrocuda::probe::ceilings::{Ceilings, arch_rates};
use ferrocuda::probe::{Figure, ProbeReport, fit_transfer};
use ferrocuda_kernels::probe::{
    ArithOp, DmmaShape, UNROLL, chain_value, chase, diverge_value, dmma_value,
};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn table_rows_of_known_architectures() {
    let row = |ma, mi| {
        let r = arch_rates(ma, mi).unwrap_or_else(|| panic!("cc {ma}.{mi} in the table"));
        (r.fp32_lanes, r.fp64_lanes, r.fp64_tensor_flops)
    };
    assert_eq!(row(7, 0), (64, 32, None), "V100");
    assert_eq!(row(8, 0), (64, 32, Some(128)), "A100");
    assert_eq!(row(8, 6), (128, 2, None), "RTX 30xx");
    assert_eq!(row(8, 9), (128, 2, None), "RTX 40xx / L40");
    assert_eq!(row(9, 0), (128, 64, Some(256)), "H100 / H200");
    assert!(arch_rates(3, 5).is_none(), "Kepler is not in the table");
    assert!(
        arch_rates(9, 1).is_none(),
        "unknown minor versions are not guessed"
    );
}

#[test]
fn ceilings_reproduce_the_datasheets() {
    // A100 SXM4 40GB: 108 SMs, 1410 MHz, HBM2 1215 MHz x 5120 bit.
    let a100 = Ceilings::from_parts((8, 0), 108, Some(1_410_000), Some(1_215_000), 5120, None);
    assert!(
        close(a100.fp32_fma.unwrap(), 19.49e12, 1e-3),
        "A100 FP32 19.5 TFLOP/s"
    );
    assert!(
        close(a100.fp64_fma.unwrap(), 9.746e12, 1e-3),
        "A100 FP64 9.7 TFLOP/s"
    );
    assert!(
        close(a100.fp64_tensor.unwrap(), 19.49e12, 1e-3),
        "A100 FP64 TC 19.5 TFLOP/s"
    );
    assert!(close(a100.dram.unwrap(), 1555.2e9, 1e-3), "A100 1555 GB/s");
    // H100 SXM5: 132 SMs, 1980 MHz, HBM3 2619 MHz x 5120 bit.
    let h100 = Ceilings::from_parts((9, 0), 132, Some(1_980_000), Some(2_619_000), 5120, None);
    assert!(
        close(h100.fp32_fma.unwrap(), 66.9e12, 1e-3),
        "H100 FP32 67 TFLOP/s"
    );
    assert!(
        close(h100.fp64_fma.unwrap(), 33.45e12, 1e-3),
        "H100 FP64 34 TFLOP/s"
    );
    assert!(
        close(h100.fp64_tensor.unwrap(), 66.9e12, 1e-3),
        "H100 FP64 TC 67 TFLOP/s"
    );
    assert!(close(h100.dram.unwrap(), 3352.3e9, 1e-3), "H100 3.35 TB/s");
    assert!(close(h100.shared.unwrap(), 33.45e12, 1e-3), "128 B/clk/SM");
    // At a measured clock the rates scale with it.
    assert!(close(
        h100.arith_at(true, 2, 1.5e9).unwrap(),
        25.34e12,
        1e-3
    ));
    assert!(
        close(h100.arith_at(false, 1, 1.5e9).unwrap(), 25.34e12, 1e-3),
        "FP32 add: 1 FLOP"
    );
    // No clock, no table row: no compute ceiling rather than a guess.
    let unknown = Ceilings::from_parts((3, 5), 14, None, Some(2_600_000), 384, None);
    assert!(unknown.fp32_fma.is_none() && unknown.arith_at(false, 2, 1e9).is_none());
    assert!(close(unknown.dram.unwrap(), 249.6e9, 1e-3), "K20X 250 GB/s");
    // The thesis's two impossible figures against their ceilings: R9 280X FP64 add
    // (2048 lanes at 1/4 rate x 1 GHz = 512 GFLOP/s) and global write (288 GB/s).
    assert!(
        Figure::new(
            "compute",
            "R9 280X f64 add",
            930.283,
            "GFLOP/s",
            Some((512.0, "1/4 rate".into())),
            ""
        )
        .impossible
    );
    assert!(
        Figure::new(
            "memory",
            "R9 280X write",
            1640.25,
            "GB/s",
            Some((288.0, "384 bit GDDR5".into())),
            ""
        )
        .impossible
    );
}

#[test]
fn pcie_links_parse_and_rate() {
    let l =
        PcieLink::parse("16.0 GT/s PCIe\n", "16\n", "32.0 GT/s PCIe\n", "16\n").expect("parses");
    assert_eq!(l.generation(), Some(4));
    assert_eq!(PcieLink::generation_of(l.max_gts), Some(5));
    assert!(
        close(l.max_bandwidth(), 63.015e9, 1e-4),
        "gen5 x16 = 63 GB/s per direction"
    );
    assert!(close(l.current_bandwidth(), 31.508e9, 1e-4), "gen4 x16");
    assert!(
        close(PcieLink::bandwidth_of(5.0, 16), 8e9, 1e-9),
        "gen2 x16 = 8 GB/s (seed 002)"
    );
    assert!(PcieLink::parse("Unknown", "16", "32.0 GT/s", "16").is_none());
    assert!(PcieLink::parse("8.0 GT/s", "0", "8.0 GT/s", "16").is_none());
    let c = Ceilings::from_parts((9, 0), 132, Some(1_980_000), Some(2_619_000), 5120, Some(l));
    assert!(close(c.pcie.unwrap(), 63.015e9, 1e-4));
}

#[test]
fn transfer_fit_recovers_latency_and_bandwidth() {
    let pts: Vec<(f64, f64)> = (0..8)
        .map(|k| {
            let b = 4096.0 * 4f64.powi(k);
            (b, 8e-6 + b / 50e9)
        })
        .collect();
    let f = fit_transfer(&pts).expect("fit");
    assert!(
        close(f.t0_s, 8e-6, 1e-9) && close(f.bandwidth, 50e9, 1e-9),
        "{f:?}"
    );
    // 5 % noise alternating in sign still gives the bandwidth within 10 %.
    let noisy: Vec<(f64, f64)> = pts
        .iter()
        .enumerate()
        .map(|(i, &(b, t))| (b, t * if i % 2 == 0 { 1.05 } else { 0.95 }))
        .collect();
    let g = fit_transfer(&noisy).expect("fit");
    assert!(close(g.bandwidth, 50e9, 0.1), "{g:?}");
    assert!(
        fit_transfer(&[(1e6, 1e-3)]).is_none(),
        "one point fixes no line"
    );
    assert!(
        fit_transfer(&[(1e6, 1e-3), (1e6, 2e-3)]).is_none(),
        "one size fixes no line"
    );
    assert!(
        fit_transfer(&[(1e3, 2e-3), (1e6, 1e-3)]).is_none(),
        "falling time: no bandwidth"
    );
}

#[test]
fn figures_above_their_ceiling_are_flagged() {
    let ok = Figure::new(
        "memory",
        "copy",
        2900.0,
        "GB/s",
        Some((3352.0, "DRAM".into())),
        "ok",
    );
    assert!(!ok.impossible);
    assert!(close(ok.percent.unwrap(), 86.5, 1e-3));
    let at = Figure::new(
        "memory",
        "copy",
        3352.0,
        "GB/s",
        Some((3352.0, "DRAM".into())),
        "ok",
    );
    assert!(!at.impossible, "exactly 100 % is possible");
    let bug = Figure::new(
        "memory",
        "copy",
        3353.0,
        "GB/s",
        Some((3352.0, "DRAM".into())),
        "ok",
    );
    assert!(bug.impossible);
    let none = Figure::new("latency", "fadd", 4.0, "cycles", None, "ok");
    assert!(!none.impossible && none.percent.is_none());
    assert!(none.flag("below 1 cycle").impossible);
    let clock = Figure::new(
        "clock",
        "SM clock",
        1980.5,
        "MHz",
        Some((1980.0, "peak".into())),
        "",
    );
    assert!(clock.impossible, "above 100 % without a tolerance");
    assert!(
        !clock.clone().with_tolerance(0.1).impossible,
        "0.03 % within 0.1 %"
    );
    assert!(
        Figure::new(
            "clock",
            "SM clock",
            1990.0,
            "MHz",
            Some((1980.0, "peak".into())),
            ""
        )
        .with_tolerance(0.1)
        .impossible
    );
    let nan = Figure::new("memory", "copy", f64::NAN, "GB/s", None, "");
    assert!(nan.impossible, "a NaN figure is no result");
    let mut r = ProbeReport::skipped("test".into());
    r.figures = vec![ok, bug];
    assert_eq!(r.impossible().len(), 1);
    let text = r.to_text();
    assert!(text.contains("MEASUREMENT BUG"), "{text}");
}

#[test]
fn twins_compute_known_values() {
    // Adds of 2^-10 to seed (tid + 1) / 1024: exact, so the sum is known in closed form.
    let steps = 4 * UNROLL;
    let v = chain_value::<f64, 1>(ArithOp::Add, 5, 4, 1.0 / 1024.0, 0.0);
    assert_eq!(v, (6.0 + steps as f64) / 1024.0);
    // Two chains: seeds (tid + 1) / 1024 and (tid + 18) / 1024.
    let w = chain_value::<f32, 2>(ArithOp::Add, 0, 4, 1.0 / 1024.0, 0.0);
    assert_eq!(w, (1.0 + 18.0 + 2.0 * steps as f32) / 1024.0);
    // fma(a, 0, c) = c after any step.
    assert_eq!(chain_value::<f32, 8>(ArithOp::Fma, 3, 1, 0.0, 0.5), 4.0);
    // Multiplying by 1 keeps the seed.
    assert_eq!(chain_value::<f64, 1>(ArithOp::Mul, 1023, 7, 1.0, 0.0), 1.0);
    assert_eq!(ArithOp::Fma.flops(), 2);
    assert_eq!(ArithOp::Add.flops() + ArithOp::Mul.flops(), 2);
    // DMMA: each m8n8k4 product adds 4 a b to all 2 x 8 accumulators, each m16n8k16
    // one 16 a b to all 4 x 8.
    assert_eq!(
        dmma_value(DmmaShape::M8n8k4, 1024, 0.5, 1.0 / 1048576.0, 1.0),
        (1.0 + 1024.0 / 524288.0) * 16.0
    );
    assert_eq!(
        dmma_value(DmmaShape::M16n8k16, 1024, 0.5, 1.0 / 1048576.0, 1.0),
        (1.0 + 4096.0 / 524288.0) * 32.0
    );
    assert_eq!(DmmaShape::M8n8k4.flops(), 512);
    assert_eq!(DmmaShape::M16n8k8.flops(), 2048);
    assert!(!DmmaShape::M8n8k4.needs_sm90() && DmmaShape::M16n8k4.needs_sm90());
    // Divergence: lane 5 of 4 paths takes path 1, i.e. c + 1.
    assert_eq!(
        diverge_value(37, 2, 4, 0.5, 0.25),
        chain_value::<f32, 4>(ArithOp::Fma, 37, 2, 0.5, 1.25)
    );
    // Chase: a cycle 0 -> 2 -> 1 -> 0.
    assert_eq!(chase(&[2, 0, 1], 0, 1), 2);
    assert_eq!(chase(&[2, 0, 1], 0, 3), 0);
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
