//! The per-thread "amd" random-number scheme of Mißbach (2013), chapter 5 (the APP SDK's
//! OpenCL `gaussianRand` kernel), with its quirks: ad-hoc seeding of five words, SFMT607
//! steps, Box-Muller on overlapping pairs. [`amd_normals_cpu`] and the GPU's
//! [`amd_normals`] give the same bits: both run `ferrocuda_kernels::repro::rng`
//! (`amd_generate`, `amd_normals`), the GPU as the kernel `sfmt_amd_normal_f32` of the
//! reproduction module. The library's own generators are `ferrocuda::rng`.

use ferrocuda::rng::W128;
use ferrocuda::rng::gpu::check_aligned;
use ferrocuda::{Error, Result};
use ferrocuda_host::{DeviceSlice, DeviceSliceMut, LaunchConfig};
use ferrocuda_kernels::repro::rng::{
    self as k, AMD_MAX_WORDS, SFMT_AMD_NORMAL_F32, SfmtAmdNormalF32,
};

/// The scheme on the CPU, the twin of [`amd_normals`]: generator `g` takes `seeds[g]` and
/// writes `4 mul_factor` floats at `out[4 mul_factor g ..]` (`amd_generate`,
/// `amd_normals` of `ferrocuda_kernels::repro::rng`: overlapping pairs, no certification,
/// infinite values where a lane is 0; documented there). Errors: `mul_factor` not in
/// `1..=8`, `out` of the wrong length.
///
/// ```
/// let seeds = [[1u32, 2, 3, 4], [5, 6, 7, 8]];
/// let mut out = vec![0f32; 2 * 4 * 8];
/// ferrocuda_repro::rng::amd_normals_cpu(&seeds, 8, &mut out)?;
/// assert!(out.iter().all(|z| z.is_finite()));
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn amd_normals_cpu(seeds: &[W128], mul_factor: usize, out: &mut [f32]) -> Result<()> {
    use rayon::prelude::*;
    check_amd(seeds.len(), mul_factor, out.len(), "rng::amd_normals_cpu")?;
    let len = 4 * mul_factor;
    out.par_chunks_mut(len)
        .zip(seeds.par_iter())
        .for_each(|(o, s)| {
            let mut words = [[0u32; 4]; AMD_MAX_WORDS];
            k::amd_generate(*s, mul_factor, &mut words);
            k::amd_normals(&words, mul_factor, o);
        });
    Ok(())
}

/// The scheme on the GPU (twin of [`amd_normals_cpu`]): `seeds` holds one 128-bit seed
/// per generator (4 `u32`, lane 0 first), `out` gets `4 mul_factor` floats per
/// generator. Errors: `mul_factor` not in `1..=8`, `seeds.len()` not a multiple of 4,
/// `out` of the wrong length, devices differ, `seeds` not 16-byte aligned.
pub fn amd_normals(
    seeds: &impl DeviceSlice<u32>,
    mul_factor: usize,
    out: &mut impl DeviceSliceMut<f32>,
) -> Result<()> {
    const OP: &str = "rng::gpu::amd_normals";
    if seeds.len() % 4 != 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("seeds has {} u32, not a multiple of 4", seeds.len()),
        });
    }
    let g = seeds.len() / 4;
    check_amd(g, mul_factor, out.len(), OP)?;
    if !out.gpu().same_device(seeds.gpu()) {
        return Err(Error::WrongDevice {
            op: OP,
            what: "seeds",
            expected: out.gpu().ordinal(),
            found: seeds.gpu().ordinal(),
        });
    }
    check_aligned(OP, "seeds", seeds)?;
    if g == 0 {
        return Ok(());
    }
    crate::register_module();
    let gpu = out.gpu().clone();
    let args = SfmtAmdNormalF32 {
        n_generators: g,
        mul_factor,
        seeds: seeds.as_in(),
        out: out.as_out(),
    };
    // SAFETY: generator i < g reads seed words 4 i .. 4 i + 4 as one 16-byte load (seeds
    // has 4 g words and is 16-byte aligned) and writes out[4 m i .. 4 m (i + 1)] (out
    // has 4 m g, m <= 8): all checked above.
    unsafe {
        gpu.launch(
            &SFMT_AMD_NORMAL_F32,
            LaunchConfig::for_elements(g, 256),
            args,
        )?
    };
    Ok(())
}

/// `mul_factor` in `1..=8` and `out` of `4 mul_factor` floats per generator.
fn check_amd(generators: usize, mul_factor: usize, out_len: usize, op: &'static str) -> Result<()> {
    if !(1..=AMD_MAX_WORDS).contains(&mul_factor) {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("mul_factor {mul_factor} is not in 1..=8"),
        });
    }
    let expected = 4 * mul_factor * generators;
    if out_len != expected {
        return Err(Error::DimensionMismatch {
            op,
            what: "out",
            expected,
            found: out_len,
        });
    }
    Ok(())
}
