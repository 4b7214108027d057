//! `ferrocuda info [--json]`: every CUDA device's properties and the ceilings derived
//! from them; without a device, why not (exit status 0).

use serde::Serialize;

use ferrocuda::Result;
use ferrocuda::gpu::{self, DeviceInfo};
use ferrocuda::kernels;
use ferrocuda::report::table;

use crate::report::Report;

/// `ferrocuda info --json` output.
#[derive(Debug, Serialize)]
pub struct InfoReport {
    devices: Vec<DeviceInfo>,
    ceilings: Vec<ferrocuda::probe::Ceilings>,
    no_device: Option<String>,
    driver_cuda_version: Option<i32>,
    cuda_bindings_version: &'static str,
    /// The architecture of the embedded PTX (the JIT fallback).
    ptx_arch: &'static str,
    /// Architectures with machine code (SASS) embedded; empty for a PTX-only build.
    cubin_archs: Vec<&'static str>,
    /// The same for the Hopper-only kernels.
    cubin_archs_sm90: Vec<&'static str>,
    /// The `ptxas` release that assembled the machine code.
    cubin_tool: &'static str,
    kernels: usize,
    /// The kernel modules, one per domain, each loaded on the first use of one of its
    /// kernels.
    modules: Vec<ModuleInfo>,
}

/// One domain module of `ferrocuda info --json`.
#[derive(Debug, Serialize)]
pub struct ModuleInfo {
    /// The domain (`dense`, `multigrid`, ...).
    domain: &'static str,
    /// The Rust module whose kernels load from it.
    prefix: &'static str,
    kernels: usize,
    ptx_arch: &'static str,
    ptx_bytes: usize,
    /// Bytes of the fatbin (0 for a PTX-only build).
    fatbin_bytes: usize,
    /// Architectures with machine code (SASS) in the fatbin.
    cubin_archs: &'static [&'static str],
}

impl ModuleInfo {
    fn of(m: &kernels::Module) -> ModuleInfo {
        ModuleInfo {
            domain: m.domain,
            prefix: m.prefix,
            kernels: m.entries().len(),
            ptx_arch: m.ptx_arch,
            ptx_bytes: m.ptx.len(),
            fatbin_bytes: m.fatbin.len(),
            cubin_archs: m.cubin_archs,
        }
    }
}

/// Gathers every device's properties (none is an answer, not an error).
pub fn run() -> Result<InfoReport> {
    let mut report = InfoReport {
        devices: Vec::new(),
        ceilings: Vec::new(),
        no_device: None,
        driver_cuda_version: gpu::driver_cuda_version().ok(),
        cuda_bindings_version: gpu::CUDA_BINDINGS_VERSION,
        ptx_arch: kernels::PTX_ARCH,
        cubin_archs: kernels::cubin_archs(),
        cubin_archs_sm90: kernels::cubin_archs_sm90(),
        cubin_tool: kernels::CUBIN_TOOL,
        kernels: kernels::entries().len(),
        modules: kernels::MODULES.iter().map(ModuleInfo::of).collect(),
    };
    match gpu::device_count() {
        Ok(0) => {
            report.no_device = Some("no CUDA device found: the driver reports zero devices".into())
        }
        Ok(count) => {
            for ordinal in 0..count {
                let d = gpu::open(ordinal)?.info()?;
                report
                    .ceilings
                    .push(ferrocuda::probe::Ceilings::from_info(&d));
                report.devices.push(d);
            }
        }
        Err(e) => report.no_device = Some(e.to_string()),
    }
    Ok(report)
}

impl Report for InfoReport {
    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    fn text(&self) -> String {
        let report = self;
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        if let Some(why) = &report.no_device {
            line(why.clone());
        }
        if report.cubin_archs.is_empty() {
            line(format!(
                "kernels: {} as PTX for {} only (JIT-compiled by the driver on first use: this build found no ptxas); CUDA bindings {}",
                report.kernels, report.ptx_arch, report.cuda_bindings_version
            ));
        } else {
            line(format!(
                "kernels: {} as machine code for {} (Hopper GEMM: {}; {}) and PTX for {} (newer GPUs); CUDA bindings {}",
                report.kernels,
                report.cubin_archs.join(", "),
                report.cubin_archs_sm90.join(", "),
                report.cubin_tool,
                report.ptx_arch,
                report.cuda_bindings_version
            ));
        }
        let kib = |b: usize| format!("{:.0} KiB", b as f64 / 1024.0);
        line(format!(
            "kernel modules (one per domain, each loaded on the first use of one of its kernels): {}",
            report
                .modules
                .iter()
                .map(|m| if m.fatbin_bytes > 0 {
                    format!(
                        "{} ({} kernels, PTX {}, machine code {})",
                        m.domain,
                        m.kernels,
                        kib(m.ptx_bytes),
                        kib(m.fatbin_bytes)
                    )
                } else {
                    format!(
                        "{} ({} kernels, PTX {})",
                        m.domain,
                        m.kernels,
                        kib(m.ptx_bytes)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(v) = report.driver_cuda_version {
            line(format!(
                "driver CUDA version: {}.{}",
                v / 1000,
                (v % 1000) / 10
            ));
        }
        for (d, c) in report.devices.iter().zip(&report.ceilings) {
            line(format!("\ndevice {}: {}", d.ordinal, d.name));
            let kib = |b: i32| format!("{} KiB", b / 1024);
            let mhz =
                |k: Option<i32>| k.map_or("not reported".into(), |k| format!("{} MHz", k / 1000));
            let rows = vec![
                vec![
                    "compute capability".into(),
                    format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
                ],
                vec!["multiprocessors".into(), d.multiprocessors.to_string()],
                vec!["SM clock (peak)".into(), mhz(d.sm_clock_khz)],
                vec!["memory clock (peak)".into(), mhz(d.memory_clock_khz)],
                vec![
                    "memory bus width".into(),
                    format!("{} bit", d.memory_bus_bits),
                ],
                vec![
                    "global memory".into(),
                    format!(
                        "{:.1} GiB",
                        d.total_memory_bytes as f64 / (1u64 << 30) as f64
                    ),
                ],
                vec![
                    "DRAM bandwidth (clock x 2 x bus, theoretical)".into(),
                    d.theoretical_dram_bandwidth()
                        .map_or("-".into(), |b| format!("{:.0} GB/s", b / 1e9)),
                ],
                vec!["L2 cache".into(), kib(d.l2_cache_bytes)],
                vec![
                    "shared memory per block / opt-in".into(),
                    format!(
                        "{} / {}",
                        kib(d.shared_memory_per_block),
                        kib(d.shared_memory_per_block_optin)
                    ),
                ],
                vec![
                    "shared memory per SM".into(),
                    kib(d.shared_memory_per_multiprocessor),
                ],
                vec![
                    "registers per block / per SM".into(),
                    format!(
                        "{} / {}",
                        d.registers_per_block, d.registers_per_multiprocessor
                    ),
                ],
                vec![
                    "max threads per block / per SM".into(),
                    format!(
                        "{} / {}",
                        d.max_threads_per_block, d.max_threads_per_multiprocessor
                    ),
                ],
                vec![
                    "max blocks per SM".into(),
                    d.max_blocks_per_multiprocessor.to_string(),
                ],
                vec!["warp size".into(), d.warp_size.to_string()],
                vec!["async copy engines".into(), d.async_engines.to_string()],
                vec![
                    "ECC".into(),
                    if d.ecc_enabled { "on" } else { "off" }.into(),
                ],
                vec!["PCI bus id".into(), d.pci_bus_id.clone()],
            ];
            line(table(&["property", "value"], &rows));
            line(format!(
                "\nceilings (table of per-SM rates per compute capability: ferrocuda::probe::ceilings)\n{}",
                table(&["ceiling", "value"], &c.rows())
            ));
        }
        out
    }
}
