//! The hardware's limits, derived from what the driver reports and one table of
//! per-SM throughputs per compute capability.
//!
//! # The table
//! Results per clock per multiprocessor, from the CUDA C++ Programming Guide, section
//! "Arithmetic Instructions" (throughput of 32-bit and 64-bit floating-point add,
//! multiply, multiply-add), and for the FP64 tensor cores from NVIDIA's A100 and H100
//! architecture whitepapers (A100: 19.5 TFLOP/s on 108 SMs at 1410 MHz = 128 FLOP per
//! clock per SM; H100 SXM5: 67 TFLOP/s on 132 SMs at 1980 MHz = 256):
//!
//! | compute capability | FP32 lanes/SM | FP64 lanes/SM | FP64 tensor FLOP/clk/SM |
//! |---|---|---|---|
//! | 5.0, 5.2, 5.3 | 128 | 4 | - |
//! | 6.0 | 64 | 32 | - |
//! | 6.1, 6.2 | 128 | 4 | - |
//! | 7.0, 7.2 | 64 | 32 | - |
//! | 7.5 | 64 | 2 | - |
//! | 8.0 | 64 | 32 | 128 |
//! | 8.6, 8.7, 8.9 | 128 | 2 | - |
//! | 9.0 | 128 | 64 | 256 |
//! | 10.0, 10.3 | 128 | 64 | - |
//! | 12.0 | 128 | 2 | - |
//!
//! A lane retires one add, one multiply or one fused multiply-add per clock; an FMA
//! counts 2 FLOPs, an add or a multiply 1. So the FP32 FMA rate is
//! `2 x lanes x SMs x clock`.
//!
//! DRAM: `memory clock x 2 (double data rate) x bus width / 8`, the formula behind the
//! datasheets (H100 SXM5: 2619 MHz x 2 x 5120 bit / 8 = 3.35 TB/s). PCIe: the line rate
//! per direction, [`PcieLink::bandwidth_of`].

use serde::Serialize;

use crate::gpu::{DeviceInfo, PcieLink};

/// Throughput of one multiprocessor per clock, for one compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchRates {
    /// FP32 lanes: adds, multiplies or FMAs retired per clock per SM.
    pub fp32_lanes: u32,
    /// FP64 lanes.
    pub fp64_lanes: u32,
    /// FP64 tensor-core FLOPs per clock per SM (`None`: no FP64 tensor cores, or not in
    /// the table).
    pub fp64_tensor_flops: Option<u32>,
}

/// The table's row for compute capability `major.minor`, `None` where it has none.
///
/// ```
/// use ferrocuda::probe::ceilings::arch_rates;
/// let h100 = arch_rates(9, 0).unwrap();
/// assert_eq!((h100.fp32_lanes, h100.fp64_lanes, h100.fp64_tensor_flops), (128, 64, Some(256)));
/// assert!(arch_rates(1, 0).is_none());
/// ```
pub fn arch_rates(major: i32, minor: i32) -> Option<ArchRates> {
    let r = |fp32_lanes, fp64_lanes, fp64_tensor_flops| {
        Some(ArchRates {
            fp32_lanes,
            fp64_lanes,
            fp64_tensor_flops,
        })
    };
    match (major, minor) {
        (5, 0 | 2 | 3) => r(128, 4, None),
        (6, 0) => r(64, 32, None),
        (6, 1 | 2) => r(128, 4, None),
        (7, 0 | 2) => r(64, 32, None),
        (7, 5) => r(64, 2, None),
        (8, 0) => r(64, 32, Some(128)),
        (8, 6 | 7 | 9) => r(128, 2, None),
        (9, 0) => r(128, 64, Some(256)),
        (10, 0 | 3) => r(128, 64, None),
        (12, 0) => r(128, 2, None),
        _ => None,
    }
}

/// FLOP/s of `lanes` lanes per SM on `sms` SMs at `clock_hz`, `flops_per_op` FLOPs per
/// lane and clock (2 for an FMA).
pub fn flops(lanes: u32, flops_per_op: u32, sms: u32, clock_hz: f64) -> f64 {
    lanes as f64 * flops_per_op as f64 * sms as f64 * clock_hz
}

/// A device's ceilings at its reported peak clock. Rates in FLOP/s and bytes/s.
#[derive(Debug, Clone, Serialize)]
pub struct Ceilings {
    /// Compute capability.
    pub compute_capability: (i32, i32),
    /// Multiprocessors.
    pub sms: u32,
    /// The driver's peak SM clock, Hz.
    pub peak_clock_hz: Option<f64>,
    /// The table's row.
    pub rates: Option<ArchRates>,
    /// FP32 FMA FLOP/s at the peak clock.
    pub fp32_fma: Option<f64>,
    /// FP64 FMA FLOP/s at the peak clock.
    pub fp64_fma: Option<f64>,
    /// FP64 tensor-core FLOP/s at the peak clock.
    pub fp64_tensor: Option<f64>,
    /// DRAM bytes/s (memory clock x 2 x bus width).
    pub dram: Option<f64>,
    /// Shared-memory bytes/s: 32 banks x 4 bytes per clock per SM at the peak clock.
    pub shared: Option<f64>,
    /// PCIe bytes/s per direction at the link's highest speed and width.
    pub pcie: Option<f64>,
    /// The link.
    pub pcie_link: Option<PcieLink>,
}

/// Bytes per clock per SM of shared memory: 32 banks of 4 bytes.
pub const SHARED_BYTES_PER_CLOCK: u32 = 128;

impl Ceilings {
    /// Ceilings from raw parameters: compute capability, SMs, peak SM clock (kHz),
    /// memory clock (kHz), memory bus width (bits), PCIe link.
    ///
    /// ```
    /// use ferrocuda::probe::ceilings::Ceilings;
    /// // H100 SXM5 as its driver reports it.
    /// let c = Ceilings::from_parts((9, 0), 132, Some(1_980_000), Some(2_619_000), 5120, None);
    /// assert!((c.fp64_fma.unwrap() / 1e12 - 33.45).abs() < 0.01);
    /// assert!((c.dram.unwrap() / 1e12 - 3.352).abs() < 0.001);
    /// ```
    pub fn from_parts(
        compute_capability: (i32, i32),
        sms: u32,
        sm_clock_khz: Option<i32>,
        memory_clock_khz: Option<i32>,
        memory_bus_bits: i32,
        pcie_link: Option<PcieLink>,
    ) -> Ceilings {
        let rates = arch_rates(compute_capability.0, compute_capability.1);
        let peak_clock_hz = sm_clock_khz.map(|k| k as f64 * 1e3);
        let at_peak = |lanes: Option<u32>, per: u32| {
            lanes
                .zip(peak_clock_hz)
                .map(|(l, hz)| flops(l, per, sms, hz))
        };
        Ceilings {
            compute_capability,
            sms,
            peak_clock_hz,
            rates,
            fp32_fma: at_peak(rates.map(|r| r.fp32_lanes), 2),
            fp64_fma: at_peak(rates.map(|r| r.fp64_lanes), 2),
            fp64_tensor: at_peak(rates.and_then(|r| r.fp64_tensor_flops), 1),
            dram: memory_clock_khz.map(|khz| khz as f64 * 1e3 * 2.0 * memory_bus_bits as f64 / 8.0),
            shared: at_peak(Some(SHARED_BYTES_PER_CLOCK), 1),
            pcie: pcie_link.map(|l| l.max_bandwidth()),
            pcie_link,
        }
    }

    /// Ceilings of a device the driver described.
    pub fn from_info(d: &DeviceInfo) -> Ceilings {
        Ceilings::from_parts(
            d.compute_capability,
            d.multiprocessors.max(0) as u32,
            d.sm_clock_khz,
            d.memory_clock_khz,
            d.memory_bus_bits,
            d.pcie,
        )
    }

    /// FLOP/s of `op_flops`-FLOP operations on `fp64` or FP32 lanes at `clock_hz` (the
    /// clock measured during a run).
    pub fn arith_at(&self, fp64: bool, op_flops: u32, clock_hz: f64) -> Option<f64> {
        self.rates.map(|r| {
            let lanes = if fp64 { r.fp64_lanes } else { r.fp32_lanes };
            flops(lanes, op_flops, self.sms, clock_hz)
        })
    }

    /// FP64 tensor-core FLOP/s at `clock_hz`.
    pub fn fp64_tensor_at(&self, clock_hz: f64) -> Option<f64> {
        self.rates
            .and_then(|r| r.fp64_tensor_flops)
            .map(|f| flops(f, 1, self.sms, clock_hz))
    }

    /// Shared-memory bytes/s at `clock_hz`.
    pub fn shared_at(&self, clock_hz: f64) -> f64 {
        flops(SHARED_BYTES_PER_CLOCK, 1, self.sms, clock_hz)
    }

    /// `(property, value)` rows for `ferrocuda info`.
    pub fn rows(&self) -> Vec<Vec<String>> {
        let t = |v: Option<f64>, unit: &str, scale: f64| {
            v.map_or("- (not in the table)".into(), |v| {
                format!("{:.1} {unit}", v / scale)
            })
        };
        let mut rows = vec![
            vec![
                "FP32 FMA peak (2 FLOP x lanes x SMs x peak clock)".into(),
                t(self.fp32_fma, "TFLOP/s", 1e12),
            ],
            vec!["FP64 FMA peak".into(), t(self.fp64_fma, "TFLOP/s", 1e12)],
            vec![
                "FP64 tensor-core peak".into(),
                if self.rates.is_some() && self.fp64_tensor.is_none() {
                    "- (no FP64 tensor cores)".into()
                } else {
                    t(self.fp64_tensor, "TFLOP/s", 1e12)
                },
            ],
            vec![
                "shared memory (128 B/clk/SM)".into(),
                t(self.shared, "GB/s", 1e9),
            ],
        ];
        if let Some(r) = self.rates {
            rows.insert(
                0,
                vec![
                    "FP32 / FP64 lanes per SM".into(),
                    format!("{} / {}", r.fp32_lanes, r.fp64_lanes),
                ],
            );
        }
        rows.push(vec![
            "PCIe link now / at most".into(),
            self.pcie_link.map_or("- (sysfs not readable)".into(), |l| {
                format!(
                    "{} GT/s x{} / {} GT/s x{} (gen {})",
                    l.current_gts,
                    l.current_width,
                    l.max_gts,
                    l.max_width,
                    PcieLink::generation_of(l.max_gts).map_or("?".into(), |g| g.to_string())
                )
            }),
        ]);
        rows.push(vec![
            "PCIe line rate per direction (max)".into(),
            t(self.pcie, "GB/s", 1e9),
        ]);
        rows
    }
}
