//! `ferrocuda probe [--json] [--quick] [--reps N] [--results-dir DIR] [--no-write]
//! [--device N]`: the device's ceilings and micro-benchmarks, every figure beside its
//! ceiling; writes `<results-dir>/probe.md` and PNG plots of the sweeps. Without a GPU
//! it says so and exits 0.

use std::path::PathBuf;

use ferrocuda::Result;
use ferrocuda::probe::{ProbeOptions, ProbeReport};
use ferrocuda_bench::output::ResultsDir;

use crate::device::{DeviceChoice, Where, parse_device};
use crate::numbers::count;

/// Arguments of `ferrocuda probe`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProbeArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Smaller sizes and fewer repetitions (seconds instead of a minute).
    #[arg(long)]
    pub quick: bool,
    /// Timed repetitions per measurement [default: 5, quick 3].
    #[arg(long, value_parser = count, allow_hyphen_values = true)]
    pub reps: Option<usize>,
    /// Where probe.md and the plots go (only when a GPU ran).
    #[arg(long, default_value = "docs/results")]
    pub results_dir: PathBuf,
    /// Write nothing.
    #[arg(long)]
    pub no_write: bool,
    /// The GPU to probe: an ordinal N (gpu:N), or gpu (0) [default: 0].
    #[arg(long, value_name = "N", value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
}

impl ProbeArgs {
    /// Checks the options alone.
    pub fn validate(&self) -> Result<()> {
        if self.reps == Some(0) {
            return Err(ferrocuda::Error::InvalidArgument {
                op: "probe",
                reason: "--reps must be at least 1".into(),
            });
        }
        Ok(())
    }
}

/// Runs the probe on `on`; a machine without a GPU gets a report that says so.
pub fn run(args: &ProbeArgs, on: Where) -> Result<ProbeReport> {
    args.validate()?;
    let mut opts = if args.quick {
        ProbeOptions::quick()
    } else {
        ProbeOptions::default()
    };
    if let Some(reps) = args.reps {
        opts.reps = reps;
    }
    let (gpu, skipped) = on.open_optional()?;
    let report = ferrocuda::probe::run(gpu.as_ref(), skipped, &opts)?;
    // The probe measures the GPU: without one there is nothing to record.
    if let Some(g) = gpu.as_ref().filter(|_| !args.no_write) {
        let saved = ferrocuda_bench::probe::write_results(
            &report,
            &ResultsDir::new(&args.results_dir, true).on(ferrocuda_bench::output::gpu_device(g)),
        )?;
        eprintln!("[probe] {saved}");
    }
    Ok(report)
}
