//! The per-thread "amd" scheme of Mißbach (2013), chapter 5 (the APP SDK's OpenCL
//! `gaussianRand` kernel), for `ferrocuda-repro`'s `rng`: seeding, SFMT607 steps
//! ([`crate::sfmt::recursion`]) and the overlapping Box-Muller transform, shared by the CPU
//! twin and the kernel `sfmt_amd_normal_f32`.

#[cfg(target_arch = "nvptx64")]
use crate::device::global_index;
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::sfmt::Align16;
use crate::sfmt::{SFMT607, W128, recursion};

/// Most 128-bit words one generator of the "amd" scheme makes.
pub const AMD_MAX_WORDS: usize = 8;

/// The per-thread scheme (ch. 5: the APP SDK's OpenCL `gaussianRand` kernel that
/// Mißbach ran as "amd"), re-implemented from its description, quirks included:
///
/// 1. **Seeding**: five words only, `s_1 = seed` and, lane by lane,
///    `s_{j+1} = 1812433253 (s_j ^ (s_j >> 30)) + j` (`j = 1..4`, the same `j` in every
///    lane, unlike SFMT's `init_gen_rand`, which counts 32-bit positions). No period
///    certification.
/// 2. **Generation**: the SFMT607 recursion (N = 5, POS1 = 2, SL1 = 15, SL2 = SR2 = 3
///    bytes, SR1 = 13, SFMT607's masks) run `m <= 8` steps from that state; the seeded
///    words themselves are not output. Returns the `m` new words in `words[..m]`.
///
/// See [`amd_normals`] for its transform.
#[inline(always)]
pub fn amd_generate(seed: W128, m: usize, words: &mut [W128; AMD_MAX_WORDS]) {
    let mut x = [[0u32; 4]; 5 + AMD_MAX_WORDS];
    x[0] = seed;
    for j in 1..5 {
        let prev = x[j - 1];
        for (v, s) in x[j].iter_mut().zip(prev) {
            *v = 1_812_433_253u32
                .wrapping_mul(s ^ (s >> 30))
                .wrapping_add(j as u32);
        }
    }
    let m = if m < AMD_MAX_WORDS { m } else { AMD_MAX_WORDS };
    for i in 0..m {
        x[i + 5] = recursion(&SFMT607, x[i], x[i + 2], x[i + 3], x[i + 4]);
        words[i] = x[i + 5];
    }
}

/// The "amd" transform (its quirks kept): for `i = 0 .. m/2`, `u = float(x) / 2^32`
/// lane by lane (`f32` rounding: `u` may be 0, giving an infinite radius, or 1) for word
/// `i` (radius) and word `i + 1` (angle): `out[2i] = r cos(2 pi u')`,
/// `out[2i+1] = r sin(2 pi u')`, four lanes each, so `out` gets `4 m` floats (`8 i + 4
/// lane` for the cosines, `8 i + 4 + lane` for the sines). The pairs **overlap** (word 1
/// is the angle of pair 0 and the radius of pair 1), and words `m/2 + 1 .. m` are never
/// used. Odd `m` leaves the last `4` floats unwritten.
#[inline(always)]
pub fn amd_normals(words: &[W128; AMD_MAX_WORDS], m: usize, out: &mut [f32]) {
    let m = if m < AMD_MAX_WORDS { m } else { AMD_MAX_WORDS };
    const INV_2_32: f32 = 1.0 / 4_294_967_296.0;
    for i in 0..m / 2 {
        for k in 0..4 {
            let u1 = words[i][k] as f32 * INV_2_32;
            let u2 = words[i + 1][k] as f32 * INV_2_32;
            let r = libm::sqrtf(-2.0 * libm::logf(u1));
            let (s, c) = libm::sincosf(2.0 * core::f32::consts::PI * u2);
            out[8 * i + k] = r * c;
            out[8 * i + 4 + k] = r * s;
        }
    }
}

/// The "amd" scheme: generator `g` reads `seeds[g]` (a 128-bit word, as four
/// `u32`) and writes `4 * mul_factor` floats at `out[4 * mul_factor * g ..]`
/// ([`amd_generate`], [`amd_normals`]). `mul_factor <= 8`.
#[kernel]
pub unsafe fn sfmt_amd_normal_f32(
    n_generators: usize,
    mul_factor: usize,
    seeds: *const u32,
    out: *mut f32,
) {
    let g = global_index();
    if g >= n_generators {
        return;
    }
    let seed = unsafe { (*(seeds as *const Align16<W128>).add(g)).0 };
    let mut words = [[0u32; 4]; AMD_MAX_WORDS];
    amd_generate(seed, mul_factor, &mut words);
    let len = 4 * mul_factor;
    let dst = unsafe { core::slice::from_raw_parts_mut(out.add(len * g), len) };
    amd_normals(&words, mul_factor, dst);
}
