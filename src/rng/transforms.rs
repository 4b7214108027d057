//! Uniform and normal transforms of raw SFMT output (the per-value functions are
//! `ferrocuda_kernels::sfmt`'s, shared with the GPU kernels).
//!
//! | function | from | to |
//! |---|---|---|
//! | [`uniform_f32`] | `u32` | `[0, 1)`, 24 bits: `(x >> 8) 2^-24` |
//! | [`uniform_f64`] | `u64` | `[0, 1)`, 53 bits: `(x >> 11) 2^-53` (the reference's `res53`) |
//! | [`normals_f32`] | `u32` pairs | Box-Muller on the **disjoint** pairs `(x[2i], x[2i+1])`: `u1 = ((x >> 8) + 1) 2^-24` in (0, 1], `u2` uniform in [0, 1), `r = sqrt(-2 ln u1)`, `(r cos 2 pi u2, r sin 2 pi u2)` |
//! | [`normals_f64`] | `u64` pairs | the same with 53-bit uniforms |
//!
//! Every normal is finite (`u1 > 0`); the largest magnitudes are `sqrt(-2 ln 2^-24)`
//! (`f32`, about 5.77) and `sqrt(-2 ln 2^-53)` (`f64`, about 8.57), so the tails beyond
//! them are cut, as with any Box-Muller on finite-precision uniforms. `ln` and `sincos`
//! are `ferrocuda_kernels::fastmath`'s, made for these arguments: each `f32` normal is
//! within 4.1 ulp of an `f64` Box-Muller of the same uniforms.
//!
//! ```
//! use ferrocuda::rng::{Mexp, Sfmt, transforms};
//! let mut g = Sfmt::new(Mexp::M19937, 1);
//! let mut raw = vec![0u32; 1000];
//! g.fill_u32(&mut raw);
//! let mut z = vec![0f32; 1000];
//! transforms::normals_f32(&raw, &mut z)?;
//! let mean = z.iter().map(|&v| v as f64).sum::<f64>() / 1000.0;
//! assert!(mean.abs() < 0.2);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use ferrocuda_kernels::sfmt as k;

use crate::error::{Error, Result, check_len};

/// `out[i] = (x[i] >> 8) 2^-24`, in `[0, 1)`. Errors: lengths differ.
pub fn uniform_f32(x: &[u32], out: &mut [f32]) -> Result<()> {
    check_len("rng::transforms::uniform_f32", "out", x.len(), out.len())?;
    out.iter_mut()
        .zip(x)
        .for_each(|(o, &v)| *o = k::uniform_f32(v));
    Ok(())
}

/// `out[i] = (x[i] >> 11) 2^-53`, in `[0, 1)`. Errors: lengths differ.
pub fn uniform_f64(x: &[u64], out: &mut [f64]) -> Result<()> {
    check_len("rng::transforms::uniform_f64", "out", x.len(), out.len())?;
    out.iter_mut()
        .zip(x)
        .for_each(|(o, &v)| *o = k::uniform_f64(v));
    Ok(())
}

fn check_pairs(op: &'static str, n: usize, m: usize) -> Result<()> {
    check_len(op, "out", n, m)?;
    if n % 2 == 1 {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("Box-Muller takes pairs: length {n} is odd"),
        });
    }
    Ok(())
}

/// Box-Muller on the disjoint pairs `(x[2i], x[2i+1])`: `out[2i]` the cosine branch,
/// `out[2i+1]` the sine branch. Errors: lengths differ or are odd.
pub fn normals_f32(x: &[u32], out: &mut [f32]) -> Result<()> {
    check_pairs("rng::transforms::normals_f32", x.len(), out.len())?;
    for (o, p) in out.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        let (a, b) = k::box_muller_f32(p[0], p[1]);
        o[0] = a;
        o[1] = b;
    }
    Ok(())
}

/// Box-Muller in `f64` on the disjoint pairs `(x[2i], x[2i+1])`. Errors: lengths differ
/// or are odd.
pub fn normals_f64(x: &[u64], out: &mut [f64]) -> Result<()> {
    check_pairs("rng::transforms::normals_f64", x.len(), out.len())?;
    for (o, p) in out.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        let (a, b) = k::box_muller_f64(p[0], p[1]);
        o[0] = a;
        o[1] = b;
    }
    Ok(())
}
