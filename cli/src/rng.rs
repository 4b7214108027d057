//! `ferrocuda rng sfmt --mexp 19937|607 (--seed S | --seed-array A,B,C,...) --count N
//! [--bits 32|64] [--device cpu|gpu|N] [--json]`: prints SFMT output, one decimal number
//! per line, in the reference order (`init_gen_rand(S)` or `init_by_array([A, B, C, ...])`,
//! then the first `N` 32-bit or 64-bit draws). Seeds are decimal or `0x` hex.
//!
//! ```sh
//! ferrocuda rng sfmt --mexp 19937 --seed 1234 --count 1000        # = sfmt19937_init_gen_rand_1234_first1000.txt
//! ferrocuda rng sfmt --mexp 607 --seed-array 0x1234,0x5678,0x9abc,0xdef0 --count 5 --bits 64
//! ```
//!
//! `--device gpu` runs one SFMT19937 stream on the GPU (`rng::gpu::SfmtStreams`; 607 is
//! CPU only) and prints the same numbers. Output stops quietly when stdout closes
//! (`... | head`). Numbers are printed as they are generated, with `--json` too (one
//! object written as it goes), so `--count` needs no memory.

use std::io::Write;

use clap::{Args, Subcommand};

use ferrocuda::gpu::DeviceSlice;
use ferrocuda::rng::gpu::SfmtStreams;
use ferrocuda::rng::{Mexp, Sfmt};
use ferrocuda::{Error, Result};

use crate::device::{DeviceArg, Where};
use crate::numbers::{count_u64, u32_value};

/// `ferrocuda rng ...`.
#[derive(Debug, Subcommand)]
pub enum RngCommand {
    /// SFMT output in the reference order, one decimal number per line.
    Sfmt(SfmtArgs),
}

/// Arguments of `ferrocuda rng sfmt`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("seeding").required(true).args(["seed", "seed_array"])))]
pub struct SfmtArgs {
    /// Mersenne exponent: 19937 or 607.
    #[arg(long, default_value_t = 19937)]
    pub mexp: u32,
    /// Seed for init_gen_rand.
    #[arg(long, value_parser = u32_value)]
    pub seed: Option<u32>,
    /// Key for init_by_array (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = u32_value)]
    pub seed_array: Option<Vec<u32>>,
    /// How many numbers.
    #[arg(long, value_parser = count_u64, allow_hyphen_values = true)]
    pub count: u64,
    /// 32-bit or 64-bit draws.
    #[arg(long, default_value_t = 32)]
    pub bits: u32,
    /// Where to generate.
    #[command(flatten)]
    pub device: DeviceArg,
    /// Print one JSON object (with the numbers as an array) instead of lines.
    #[arg(long)]
    pub json: bool,
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "ferrocuda rng sfmt",
        reason,
    }
}

/// Writes lines to stdout; `false` once stdout is closed.
struct Out {
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
    open: bool,
}

impl Out {
    fn new() -> Out {
        Out {
            w: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            open: true,
        }
    }
    fn check(&mut self, r: std::io::Result<()>) -> Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.open = false;
                Ok(())
            }
            Err(e) => Err(invalid(format!("writing to stdout: {e}"))),
        }
    }
    fn line(&mut self, v: u64) -> Result<()> {
        let r = writeln!(self.w, "{v}");
        self.check(r)
    }
    fn text(&mut self, s: &str) -> Result<()> {
        let r = self.w.write_all(s.as_bytes());
        self.check(r)
    }
    fn finish(mut self) -> Result<()> {
        if self.open {
            let r = self.w.flush();
            self.check(r)?;
        }
        Ok(())
    }
}

/// The start of the JSON form, up to the opening bracket of `values` (the numbers
/// follow as they are generated, then `]}`): the keys and order of one object
/// `{"mexp", "seed", "seed_array", "bits", "device", "values"}`.
fn json_head(args: &SfmtArgs, on: Where) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Head<'a> {
        mexp: u32,
        seed: Option<u32>,
        seed_array: Option<&'a [u32]>,
        bits: u32,
        device: Where,
    }
    let head = Head {
        mexp: args.mexp,
        seed: args.seed,
        seed_array: args.seed_array.as_deref(),
        bits: args.bits,
        device: on,
    };
    let text = serde_json::to_string(&head).map_err(|e| invalid(e.to_string()))?;
    // `{...}` without its closing brace, then the array.
    Ok(format!("{},\"values\":[", &text[..text.len() - 1]))
}

/// A source of 32-bit outputs in chunks.
enum Source {
    Cpu(Sfmt),
    Gpu(SfmtStreams, ferrocuda::gpu::DeviceBuffer<u32>),
}

/// 624-value blocks per GPU call.
const GPU_CHUNK_BLOCKS: usize = 1024;

impl Source {
    /// The next chunk of 32-bit outputs (at most `max`, at least 1 for `max > 0`).
    fn next(&mut self, max: usize, buf: &mut Vec<u32>) -> Result<()> {
        match self {
            Source::Cpu(g) => {
                buf.resize(max.min(1 << 16), 0);
                g.fill_u32(buf);
            }
            Source::Gpu(dev, out) => {
                dev.fill_u32(GPU_CHUNK_BLOCKS, out)?;
                buf.resize(out.len(), 0);
                out.copy_to_host(buf)?;
                buf.truncate(max);
            }
        }
        Ok(())
    }
}

impl SfmtArgs {
    /// Checks the options alone.
    pub fn validate(&self) -> Result<()> {
        Mexp::from_number(self.mexp)?;
        if self.bits != 32 && self.bits != 64 {
            return Err(invalid(format!("--bits {} (32 or 64)", self.bits)));
        }
        Ok(())
    }
}

/// Runs `ferrocuda rng sfmt`, printing as it goes.
pub fn run(args: &SfmtArgs, on: Where) -> Result<()> {
    args.validate()?;
    let mexp = Mexp::from_number(args.mexp)?;
    let gen_ = match (&args.seed, &args.seed_array) {
        (Some(s), None) => Sfmt::new(mexp, *s),
        (None, Some(k)) => Sfmt::from_key(mexp, k),
        _ => {
            return Err(invalid(
                "give exactly one of --seed and --seed-array".into(),
            ));
        }
    };
    let per = if args.bits == 64 { 2 } else { 1 };
    let total32 = args
        .count
        .checked_mul(per)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| invalid(format!("--count {} is too large", args.count)))?;
    let mut src = match on {
        Where::Cpu => Source::Cpu(gen_),
        Where::Gpu(n) => {
            if mexp != Mexp::M19937 {
                return Err(invalid(
                    "--device gpu runs SFMT19937 streams (--mexp 607 is CPU only)".into(),
                ));
            }
            let gpu = ferrocuda::gpu::open(n)?;
            let dev = SfmtStreams::new(&gpu, &[gen_])?;
            let out = gpu.alloc::<u32>(dev.len_u32(GPU_CHUNK_BLOCKS))?;
            Source::Gpu(dev, out)
        }
    };
    let mut out = Out::new();
    if args.json {
        out.text(&json_head(args, on)?)?;
    }
    let mut first = true;
    let mut emit = |v: u64, out: &mut Out| -> Result<()> {
        if !args.json {
            return out.line(v);
        }
        let sep = if std::mem::take(&mut first) { "" } else { "," };
        out.text(&format!("{sep}{v}"))
    };
    let mut done = 0usize;
    let mut buf = Vec::new();
    while done < total32 && out.open {
        src.next(total32 - done, &mut buf)?;
        done += buf.len();
        if per == 2 {
            for p in buf.chunks_exact(2) {
                emit(p[0] as u64 | (p[1] as u64) << 32, &mut out)?;
                if !out.open {
                    break;
                }
            }
        } else {
            for &v in buf.iter() {
                emit(v as u64, &mut out)?;
                if !out.open {
                    break;
                }
            }
        }
    }
    if args.json {
        out.text("]}\n")?;
    }
    out.finish()
}
