//! SFMT (SIMD-oriented Fast Mersenne Twister, Saito & Matsumoto 2006): the parameter sets
//! of MEXP 19937 and 607, the 128-bit recursion written once on four `u32` lanes, the
//! uniform and Box-Muller transforms. Shared by
//! the CPU generator (`ferrocuda::rng`) and the kernels below, so both give the same bits.
//!
//! A 128-bit word is `[u32; 4]` with lane 0 the least significant
//! (`w0 + w1 2^32 + w2 2^64 + w3 2^96`), as in the reference's little-endian layout.
//!
//! # Kernels
//! `sfmt19937` (arguments [`Sfmt19937`]; entry `sfmt19937_u32`, handle
//! [`SfmtKernels::STREAMS`]): thread `s` runs stream `s` (one SFMT19937 state per
//! thread, held in shared memory, `N * 16` bytes per thread of dynamic shared memory). It
//! regenerates its state `blocks` times (`N = 156` words each) and writes word `j` (from
//! 0) of stream `s` at word position `j * n_streams + s` of `out`: the streams are
//! interleaved word by word, so a warp writes 512 contiguous bytes per step. `state` is
//! `n_streams * N` words in the same interleaved layout (word `i` of stream `s` at
//! `i * n_streams + s`), read at the start and written back at the end, so consecutive
//! launches continue each stream.
//!
//! `sfmt_words_to_values` (arguments [`SfmtWordsToValues`]; entries
//! `sfmt_words_to_normal_f32`, `sfmt_words_to_normal_f64`, handles
//! [`SfmtValueKernels::TO_VALUES`]): the raw words turned into values in place, per
//! word: four `f32` normals (Box-Muller on the disjoint pairs (lane 0, lane 1) and
//! (lane 2, lane 3)) or two `f64` normals (from the pair of 64-bit halves). A second
//! pass, at full occupancy: fused into the stream kernel, whose few warps per SM cannot
//! hide the transform's latency, the normals ran at 2 % of the memory bandwidth (run 85
//! in docs/notes/gpu-runs.md).
//!
//! The per-thread "amd" scheme of Mißbach (2013), built on [`recursion`], is in
//! [`crate::repro::rng`].

use crate::fastmath::{ln_unit_f32, ln_unit_f64, sincos_2pi_f32, sincos_2pi_f64};
use crate::math::{sqrt_f32, sqrt_f64};

/// One SFMT parameter set (PARAMS.md §2). Shifts `sl2`, `sr2` are in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SfmtParams {
    /// Mersenne exponent: the period is a multiple of `2^mexp - 1`.
    pub mexp: u32,
    /// 128-bit words in the state, `mexp / 128 + 1`.
    pub n: usize,
    /// Offset of the `b` word in the recursion.
    pub pos1: usize,
    /// Per-lane left shift of `d`, bits.
    pub sl1: u32,
    /// Whole-word left shift of `a`, bytes.
    pub sl2: u32,
    /// Per-lane right shift of `b`, bits.
    pub sr1: u32,
    /// Whole-word right shift of `c`, bytes.
    pub sr2: u32,
    /// Lane masks applied to `b >> sr1`.
    pub msk: [u32; 4],
    /// Period-certification parity words.
    pub parity: [u32; 4],
}

impl SfmtParams {
    /// 32-bit words in the state.
    pub const fn n32(&self) -> usize {
        4 * self.n
    }
    /// 64-bit words in the state.
    pub const fn n64(&self) -> usize {
        2 * self.n
    }
}

/// SFMT19937 (N = 156, POS1 = 122).
pub const SFMT19937: SfmtParams = SfmtParams {
    mexp: 19937,
    n: 156,
    pos1: 122,
    sl1: 18,
    sl2: 1,
    sr1: 11,
    sr2: 1,
    msk: [0xdfff_ffef, 0xddfe_cb7f, 0xbffa_ffff, 0xbfff_fff6],
    parity: [0x0000_0001, 0, 0, 0x13c9_e684],
};

/// SFMT607 (N = 5, POS1 = 2).
pub const SFMT607: SfmtParams = SfmtParams {
    mexp: 607,
    n: 5,
    pos1: 2,
    sl1: 15,
    sl2: 3,
    sr1: 13,
    sr2: 3,
    msk: [0xfdff_37ff, 0xef7f_3f7d, 0xff77_7b7d, 0x7ff7_fb2f],
    parity: [0x0000_0001, 0, 0, 0x5986_f054],
};

/// Words of the SFMT19937 state (for the kernels' shared memory).
pub const N19937: usize = SFMT19937.n;

/// A 128-bit word, lane 0 least significant.
pub type W128 = [u32; 4];

/// The whole word shifted left by `bits` (`0 < bits < 32`), zeros in.
#[inline(always)]
pub fn lshift128(w: W128, bits: u32) -> W128 {
    let inv = 32 - bits;
    [
        w[0] << bits,
        (w[1] << bits) | (w[0] >> inv),
        (w[2] << bits) | (w[1] >> inv),
        (w[3] << bits) | (w[2] >> inv),
    ]
}

/// The whole word shifted right by `bits` (`0 < bits < 32`), zeros in.
#[inline(always)]
pub fn rshift128(w: W128, bits: u32) -> W128 {
    let inv = 32 - bits;
    [
        (w[0] >> bits) | (w[1] << inv),
        (w[1] >> bits) | (w[2] << inv),
        (w[2] >> bits) | (w[3] << inv),
        w[3] >> bits,
    ]
}

/// One step of the recursion (PARAMS.md §4):
/// `a ^ (a <<128 8 sl2) ^ ((b >>32 sr1) & msk) ^ (c >>128 8 sr2) ^ (d <<32 sl1)` with
/// `a = x_k, b = x_{k+pos1}, c = x_{k+N-2}, d = x_{k+N-1}`; returns `x_{k+N}`.
#[inline(always)]
pub fn recursion(p: &SfmtParams, a: W128, b: W128, c: W128, d: W128) -> W128 {
    let x = lshift128(a, 8 * p.sl2);
    let y = rshift128(c, 8 * p.sr2);
    let mut r = [0u32; 4];
    for k in 0..4 {
        r[k] = a[k] ^ x[k] ^ ((b[k] >> p.sr1) & p.msk[k]) ^ y[k] ^ (d[k] << p.sl1);
    }
    r
}

/// Regenerates a state block in place (the reference `gen_rand_all`): `w` holds `N`
/// consecutive words oldest first and afterwards holds the next `N`.
#[inline(always)]
pub fn regenerate(p: &SfmtParams, w: &mut [W128]) {
    let n = p.n;
    let mut c = w[n - 2];
    let mut d = w[n - 1];
    for i in 0..n {
        let b = w[if i + p.pos1 < n {
            i + p.pos1
        } else {
            i + p.pos1 - n
        }];
        let r = recursion(p, w[i], b, c, d);
        w[i] = r;
        c = d;
        d = r;
    }
}

/// `2^-24`.
pub const TWO_POW_M24: f32 = 1.0 / 16_777_216.0;
/// `2^-53`.
pub const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// Uniform on `[0, 1)` with 24 bits: `(x >> 8) 2^-24` (exact in `f32`).
#[inline(always)]
pub fn uniform_f32(x: u32) -> f32 {
    (x >> 8) as f32 * TWO_POW_M24
}

/// Uniform on `(0, 1]` with 24 bits: `((x >> 8) + 1) 2^-24` (never 0, for logarithms).
#[inline(always)]
pub fn uniform_open0_f32(x: u32) -> f32 {
    ((x >> 8) + 1) as f32 * TWO_POW_M24
}

/// Uniform on `[0, 1)` with 53 bits: `(x >> 11) 2^-53` (the reference's `res53`).
#[inline(always)]
pub fn uniform_f64(x: u64) -> f64 {
    (x >> 11) as f64 * TWO_POW_M53
}

/// Uniform on `(0, 1]` with 53 bits: `((x >> 11) + 1) 2^-53`.
#[inline(always)]
pub fn uniform_open0_f64(x: u64) -> f64 {
    ((x >> 11) + 1) as f64 * TWO_POW_M53
}

/// Box-Muller on one pair: `u1 = uniform_open0(x)` in (0, 1], `u2 = uniform(y)` in
/// [0, 1), `r = sqrt(-2 ln u1)`, returns `(r cos 2 pi u2, r sin 2 pi u2)`. `ln` and
/// `sincos` are [`crate::fastmath`]'s, for exactly these arguments (no large-argument
/// reduction, no stack), each within 1 ulp; every output is within 4.1 ulp of an `f64`
/// Box-Muller of the same uniforms (a bound from the exhaustive errors of the radius and
/// of `sincos`; 2.5 ulp is the largest seen on 2^21 sampled pairs), as close as a few
/// roundings in `f32` allow (tests/integration/rng/accuracy.rs). Explicit FMAs
/// and correctly rounded `sqrt` give the same bits on the CPU and the GPU. Every output
/// is finite: `|z| <= sqrt(-2 ln 2^-24) < 5.8`.
#[inline(always)]
pub fn box_muller_f32(x: u32, y: u32) -> (f32, f32) {
    let r = sqrt_f32(-2.0 * ln_unit_f32(uniform_open0_f32(x)));
    let (s, c) = sincos_2pi_f32(uniform_f32(y));
    (r * c, r * s)
}

/// Box-Muller in `f64` from two 64-bit draws (53-bit uniforms), on [`crate::fastmath`]'s
/// `f64` `ln` and `sincos` (on 2^22 sampled draws within 1 and 2 ulp of `std`, the
/// normals within 3 ulp of the same Box-Muller in `std`); `|z| < 8.6`.
#[inline(always)]
pub fn box_muller_f64(x: u64, y: u64) -> (f64, f64) {
    let u1 = uniform_open0_f64(x);
    let u2 = uniform_f64(y);
    let r = sqrt_f64(-2.0 * ln_unit_f64(u1));
    let (s, c) = sincos_2pi_f64(u2);
    (r * c, r * s)
}

/// Four `f32` normals from one word: Box-Muller on (lane 0, lane 1) and (lane 2, lane 3).
#[inline(always)]
pub fn normals_f32(w: W128) -> [f32; 4] {
    let (a, b) = box_muller_f32(w[0], w[1]);
    let (c, d) = box_muller_f32(w[2], w[3]);
    [a, b, c, d]
}

/// Two `f64` normals from one word: Box-Muller on its two 64-bit halves
/// (`w0 | w1 << 32`, `w2 | w3 << 32`), the 64-bit output order.
#[inline(always)]
pub fn normals_f64(w: W128) -> [f64; 2] {
    let x = w[0] as u64 | (w[1] as u64) << 32;
    let y = w[2] as u64 | (w[3] as u64) << 32;
    let (a, b) = box_muller_f64(x, y);
    [a, b]
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(all(target_arch = "nvptx64", not(ferrocuda_repro)))]
use crate::device::{block_dim, dynamic_shared, for_each_index, global_index, thread_idx};
#[cfg(not(ferrocuda_repro))]
use crate::{instances, kernel};

/// A value aligned to 16 bytes, so that shared and global accesses of a 128-bit word
/// are single 128-bit loads and stores.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Align16<T>(pub(crate) T);

/// What the stream kernels make of each 128-bit word: the lanes as `u32`, four `f32`
/// normals ([`normals_f32`]) or two `f64` normals ([`normals_f64`]).
pub trait SfmtOutput: Copy {
    /// Values per 128-bit word.
    const PER_WORD: usize;

    /// Writes the values of word `w` at 128-bit position `at` of `out` (one 16-byte
    /// store).
    ///
    /// # Safety
    /// `out` is 16-byte aligned and holds at least `(at + 1) * PER_WORD` values.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn store(out: *mut Self, at: usize, w: W128);
}

impl SfmtOutput for u32 {
    const PER_WORD: usize = 4;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn store(out: *mut u32, at: usize, w: W128) {
        unsafe { *(out as *mut Align16<W128>).add(at) = Align16(w) };
    }
}

impl SfmtOutput for f32 {
    const PER_WORD: usize = 4;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn store(out: *mut f32, at: usize, w: W128) {
        unsafe { *(out as *mut Align16<[f32; 4]>).add(at) = Align16(normals_f32(w)) };
    }
}

impl SfmtOutput for f64 {
    const PER_WORD: usize = 2;
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn store(out: *mut f64, at: usize, w: W128) {
        unsafe { *(out as *mut Align16<[f64; 2]>).add(at) = Align16(normals_f64(w)) };
    }
}

/// Runs stream `global_index()` for `blocks` blocks; `emit(j, word)` gets its words
/// in order (`j` from 0).
#[cfg(all(target_arch = "nvptx64", not(ferrocuda_repro)))]
#[inline(always)]
unsafe fn run_streams(
    n_streams: usize,
    blocks: usize,
    state: *mut u32,
    mut emit: impl FnMut(usize, W128),
) {
    const N: usize = N19937;
    const POS1: usize = SFMT19937.pos1;
    const { assert!(N % 2 == 0 && (N - POS1) % 2 == 0) };
    let s = global_index();
    if s >= n_streams {
        return;
    }
    let t = thread_idx();
    let tb = block_dim();
    let sh = dynamic_shared::<Align16<W128>>();
    let st = state as *mut Align16<W128>;
    unsafe {
        for i in 0..N {
            *sh.add(i * tb + t) = *st.add(i * n_streams + s);
        }
        let mut c = (*sh.add((N - 2) * tb + t)).0;
        let mut d = (*sh.add((N - 1) * tb + t)).0;
        // Two words per iteration, and the four loads of the next pair issued before
        // this pair is computed and stored (software pipelining, so the shared-memory
        // latency overlaps the arithmetic). Legal because no slot the next pair reads
        // is one this pair writes: N - POS1 and N are even, the first region reads
        // `b` slots >= POS1 + 2 > i + 1, the second reads slots i + 2 + POS1 - N
        // written 32 steps before, and the next block's first pair reads slots 0, 1,
        // POS1, POS1 + 1, all written earlier in this pass.
        let w = |i: usize| sh.add(i * tb + t);
        let load = |i: usize| {
            let (b0, b1) = if i < N - POS1 {
                (i + POS1, i + 1 + POS1)
            } else {
                (i + POS1 - N, i + 1 + POS1 - N)
            };
            ((*w(i)).0, (*w(b0)).0, (*w(i + 1)).0, (*w(b1)).0)
        };
        let mut j = 0;
        let mut cur = load(0);
        for _ in 0..blocks {
            let mut i = 0;
            while i < N {
                let next = load(if i + 2 < N { i + 2 } else { 0 });
                let r0 = recursion(&SFMT19937, cur.0, cur.1, c, d);
                let r1 = recursion(&SFMT19937, cur.2, cur.3, d, r0);
                *w(i) = Align16(r0);
                *w(i + 1) = Align16(r1);
                emit(j, r0);
                emit(j + 1, r1);
                j += 2;
                c = r0;
                d = r1;
                cur = next;
                i += 2;
            }
        }
        for i in 0..N {
            *st.add(i * n_streams + s) = *sh.add(i * tb + t);
        }
    }
}

// Not in the reproduction module, which needs only the recursion of this file.
#[cfg(not(ferrocuda_repro))]
/// SFMT19937 streams, one per thread: word `j` of stream `s` becomes
/// [`SfmtOutput::PER_WORD`] values at 128-bit position `j * n_streams + s` of `out`;
/// `state` (`n_streams * N19937` words, interleaved the same way) is read at the start
/// and written back at the end. Needs `N19937 * 16` bytes of dynamic shared memory per
/// thread.
#[kernel(args = Sfmt19937)]
pub unsafe fn sfmt19937<T: SfmtOutput>(
    n_streams: usize,
    blocks: usize,
    state: *mut u32,
    out: *mut T,
) {
    let s = global_index();
    unsafe {
        run_streams(n_streams, blocks, state, |j, w| {
            T::store(out, j * n_streams + s, w)
        })
    }
}

/// Word `i` of `out` (its 16 bytes as raw SFMT output, as [`sfmt19937`] for `u32`
/// wrote them) replaced by its [`SfmtOutput::PER_WORD`] values, for `i < n_words`, in
/// place. The normals are a second pass: the stream kernel runs one thread per stream,
/// a few warps per SM (each stream's state fills shared memory), too few to hide the
/// latency of the transform's arithmetic; this pass runs at full occupancy.
#[cfg(not(ferrocuda_repro))]
#[kernel(args = SfmtWordsToValues)]
pub unsafe fn sfmt_words_to_values<T: SfmtOutput>(n_words: usize, out: *mut T) {
    for_each_index(n_words, |i| unsafe {
        let w = (*(out as *const Align16<W128>).add(i)).0;
        T::store(out, i, w)
    });
}

/// The stream kernel: raw words (`u32`).
#[cfg(not(target_arch = "nvptx64"))]
pub trait SfmtKernels: SfmtOutput + 'static {
    /// `sfmt19937_u32`.
    const STREAMS: Kernel<Sfmt19937<'static, Self>>;
}

/// The transform of raw words into values in place, per value type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SfmtValueKernels: SfmtOutput + 'static {
    /// `sfmt_words_to_normal_f32`, `sfmt_words_to_normal_f64`.
    const TO_VALUES: Kernel<SfmtWordsToValues<'static, Self>>;
}

#[cfg(not(ferrocuda_repro))]
instances! {
    impl SfmtKernels for u32 {
        STREAMS = sfmt19937::<u32>("sfmt19937_u32");
    }
    impl SfmtValueKernels for f32 {
        TO_VALUES = sfmt_words_to_values::<f32>("sfmt_words_to_normal_f32");
    }
    impl SfmtValueKernels for f64 {
        TO_VALUES = sfmt_words_to_values::<f64>("sfmt_words_to_normal_f64");
    }
}
