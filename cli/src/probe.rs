//! `ferrocuda probe [--json] [--quick] [--reps N] [--results-dir DIR] [--no-write]`: the
//! device's ceilings and micro-benchmarks, every figure beside its ceiling; writes
//! `<results-dir>/probe.md` and PNG plots of the sweeps. Without a GPU it says so and
//! exits 0.

use std::path::PathBuf;

use ferrocuda::Result;
use ferrocuda::probe::{ProbeOptions, ProbeReport};

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
    #[arg(long)]
    pub reps: Option<usize>,
    /// Where probe.md and the plots go (only when a GPU ran).
    #[arg(long, default_value = "docs/results")]
    pub results_dir: PathBuf,
    /// Write nothing.
    #[arg(long)]
    pub no_write: bool,
}

/// Runs the probe on device `device`; a machine without a GPU gets a report that says so.
pub fn run(args: &ProbeArgs, device: usize) -> Result<ProbeReport> {
    let mut opts = if args.quick {
        ProbeOptions::quick()
    } else {
        ProbeOptions::default()
    };
    if let Some(reps) = args.reps {
        if reps == 0 {
            return Err(ferrocuda::Error::InvalidArgument {
                op: "probe",
                reason: "--reps must be at least 1".into(),
            });
        }
        opts.reps = reps;
    }
    let (gpu, skipped) = super::open_gpu(device)?;
    let report = ferrocuda::probe::run(gpu.as_ref(), skipped, &opts)?;
    if gpu.is_some() && !args.no_write {
        for path in ferrocuda_bench::probe::write_results(&report, &args.results_dir)? {
            eprintln!("[probe] wrote {}", path.display());
        }
    }
    Ok(report)
}
