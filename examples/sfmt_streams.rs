//! Independent SFMT19937 streams made by jump-ahead, drawn as normal `f64` numbers, on
//! the GPU when there is one (one stream per thread), else on the CPU (rayon).
//!
//! ```sh
//! cargo run --release --example sfmt_streams
//! ```
//!
//! The check: the CPU twin produces the same bits (on the GPU), and the sample's mean and
//! variance are those of a standard normal within five standard errors.

use ferrocuda::rng::gpu::SfmtStreams;
use ferrocuda::rng::{Mexp, Sfmt, cpu, jump};

fn main() -> ferrocuda::Result<()> {
    // 64 streams 2^100 steps apart: no two overlap in any realistic run.
    let streams = jump::streams(&Sfmt::new(Mexp::M19937, 2026), 64, 100)?;
    let blocks = 64; // state blocks per stream: 64 x 312 normals each
    let len = 64 * blocks * 312;

    // The CPU twin, in the GPU's interleaved layout (word j of stream s at j * 64 + s).
    let mut host = streams.clone();
    let mut want = vec![0.0f64; len];
    cpu::fill_normal_f64(&mut host, blocks, &mut want)?;

    let (z, same_bits) = match ferrocuda::gpu::open(0) {
        Ok(g) => {
            println!("device: GPU 0 ({})", g.name()?);
            let mut dev = SfmtStreams::new(&g, &streams)?;
            let mut out = g.alloc_zeroed::<f64>(len)?;
            dev.fill_normal_f64(blocks, &mut out)?;
            let z = out.download()?;
            let same = z.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            (z, Some(same))
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            (want.clone(), None)
        }
        Err(e) => return Err(e),
    };

    let n = z.len() as f64;
    let mean = z.iter().sum::<f64>() / n;
    let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    // Standard errors of a normal sample's mean and variance: 1/sqrt(n), sqrt(2/n).
    let (se_mean, se_var) = (1.0 / n.sqrt(), (2.0 / n).sqrt());
    println!(
        "{} normals from 64 streams: mean {mean:+.5} (+-{se_mean:.5}), variance {var:.5} (+-{se_var:.5}); first three {:.6?}",
        z.len(),
        &z[..3]
    );
    if let Some(same) = same_bits {
        println!("GPU output equal to the CPU twin bit for bit: {same}");
    }
    let ok =
        mean.abs() < 5.0 * se_mean && (var - 1.0).abs() < 5.0 * se_var && same_bits != Some(false);
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
