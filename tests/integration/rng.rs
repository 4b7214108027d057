//! SFMT on the CPU: the reference outputs bit for bit, seeding intermediates, jump-ahead
//! against serial generation and the reference jump strings, streams, transforms, and
//! statistics that pass for SFMT and fail for deliberately broken generators.

use crate::common;

use ferrocuda::rng::jump::{self, JumpPoly};
use ferrocuda::rng::{Mexp, Sfmt, cpu, transforms};

fn parse<T: std::str::FromStr>(text: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    text.lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().expect("reference file holds decimal numbers"))
        .collect()
}

const REF_19937_U32: &str =
    include_str!("../../data/sfmt/sfmt19937_init_gen_rand_1234_first1000.txt");
const REF_607_U32: &str = include_str!("../../data/sfmt/sfmt607_init_gen_rand_1234_first1000.txt");
const REF_19937_U64: &str =
    include_str!("../../data/sfmt/sfmt19937_init_gen_rand_4321_first1000_u64.txt");
const REF_607_U64: &str =
    include_str!("../../data/sfmt/sfmt607_init_gen_rand_4321_first1000_u64.txt");
const JUMP_SAMPLES: &str = include_str!("../../data/sfmt/jump_reference_samples.txt");

fn first_mismatch<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> Option<String> {
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .map(|i| format!("index {i}: got {:?}, want {:?}", got[i], want[i]))
}

#[test]
fn reference_outputs_32bit_init_gen_rand_1234() {
    for (mexp, text) in [(Mexp::M19937, REF_19937_U32), (Mexp::M607, REF_607_U32)] {
        let want: Vec<u32> = parse(text);
        assert_eq!(want.len(), 1000);
        let mut g = Sfmt::new(mexp, 1234);
        let got: Vec<u32> = (0..1000).map(|_| g.next_u32()).collect();
        assert_eq!(
            first_mismatch(&got, &want),
            None,
            "SFMT{} next_u32",
            mexp.number()
        );
        // The bulk fill gives the same numbers, for lengths across block boundaries.
        for len in [1, 3, 4, 19, 20, 21, 623, 624, 625, 1000] {
            let mut g = Sfmt::new(mexp, 1234);
            let mut out = vec![0u32; len];
            g.fill_u32(&mut out);
            assert_eq!(out, want[..len], "SFMT{} fill_u32 of {len}", mexp.number());
        }
        // Fills in pieces continue each other.
        let mut g = Sfmt::new(mexp, 1234);
        let mut out = vec![0u32; 1000];
        let (a, b) = out.split_at_mut(333);
        g.fill_u32(a);
        g.fill_u32(b);
        assert_eq!(out, want, "SFMT{} two fills", mexp.number());
    }
}

#[test]
fn reference_outputs_64bit_init_gen_rand_4321() {
    for (mexp, text) in [(Mexp::M19937, REF_19937_U64), (Mexp::M607, REF_607_U64)] {
        let want: Vec<u64> = parse(text);
        assert_eq!(want.len(), 1000);
        let mut g = Sfmt::new(mexp, 4321);
        let got: Vec<u64> = (0..1000).map(|_| g.next_u64()).collect();
        assert_eq!(
            first_mismatch(&got, &want),
            None,
            "SFMT{} next_u64",
            mexp.number()
        );
        let mut g = Sfmt::new(mexp, 4321);
        let mut out = vec![0u64; 1000];
        g.fill_u64(&mut out);
        assert_eq!(out, want);
        // The 64-bit view is pairs of 32-bit draws, low word first.
        let mut g = Sfmt::new(mexp, 4321);
        let pairs: Vec<u64> = (0..1000)
            .map(|_| {
                let lo = g.next_u32() as u64;
                lo | (g.next_u32() as u64) << 32
            })
            .collect();
        assert_eq!(pairs, want);
    }
}

#[test]
fn seeding_intermediates_and_certification() {
    // PARAMS.md §9 (before certification) and §8 (19937/1234 flips bit 0 of s[0]).
    let g = Sfmt::new(Mexp::M19937, 1234);
    let s: Vec<u32> = g.state().iter().flatten().copied().collect();
    assert_eq!(
        s[..8],
        [
            0x4d3, 0xbc5448db, 0xf22bde9f, 0xebb44f8f, 0xb9894e40, 0xa9db320f, 0x2b9eb427,
            0x8516f26a
        ]
    );
    assert_eq!(s[620..], [0x88274b07, 0xe7c94866, 0xc0ea9f47, 0xb6a83c43]);
    let g = Sfmt::new(Mexp::M19937, 4321);
    let s: Vec<u32> = g.state().iter().flatten().copied().collect();
    assert_eq!(s[0], 0x10e1, "19937/4321 is not flipped");
    assert_eq!(s[620..], [0xf8bf6375, 0x0ff665fb, 0xd6a69175, 0x95c98bfd]);
    let g = Sfmt::new(Mexp::M607, 1234);
    let s: Vec<u32> = g.state().iter().flatten().copied().collect();
    assert_eq!(s[0], 0x4d2, "607/1234 is not flipped");
    assert_eq!(s[16..], [0x6633523d, 0x58e58dbd, 0x1b8e873e, 0x004d8989]);
    let g = Sfmt::new(Mexp::M607, 4321);
    let s: Vec<u32> = g.state().iter().flatten().copied().collect();
    assert_eq!(s[16..], [0xb6c53273, 0xb0e25fa6, 0xbbfa7fc6, 0x66904c67]);
    // After certification the parity is odd for every seeding.
    for mexp in [Mexp::M19937, Mexp::M607] {
        let p = mexp.params();
        for g in [
            Sfmt::new(mexp, 1234),
            Sfmt::new(mexp, 0),
            Sfmt::from_key(mexp, &[0x1234, 0x5678, 0x9abc, 0xdef0]),
            Sfmt::from_key(mexp, &[5, 4, 3, 2, 1]),
            Sfmt::from_key(mexp, &[]),
        ] {
            let w = g.state()[0];
            let inner = (0..4).fold(0, |acc, k| acc ^ (w[k] & p.parity[k]));
            assert_eq!(inner.count_ones() % 2, 1, "SFMT{} parity", mexp.number());
        }
    }
}

#[test]
fn init_by_array_is_a_function_of_the_whole_key() {
    // No reference vectors for init_by_array in data/sfmt (PARAMS.md §10): check that the
    // key's length and every word matter, and that keys longer than the state work.
    for mexp in [Mexp::M19937, Mexp::M607] {
        let base = Sfmt::from_key(mexp, &[1, 2, 3, 4]);
        assert_eq!(base, Sfmt::from_key(mexp, &[1, 2, 3, 4]));
        assert_ne!(base, Sfmt::from_key(mexp, &[1, 2, 3]));
        assert_ne!(base, Sfmt::from_key(mexp, &[1, 2, 3, 4, 0]));
        for i in 0..4 {
            let mut k = [1, 2, 3, 4];
            k[i] ^= 1 << 17;
            assert_ne!(base, Sfmt::from_key(mexp, &k), "key word {i}");
        }
        let long: Vec<u32> = (0..2000).collect();
        let mut a = Sfmt::from_key(mexp, &long);
        let mut long2 = long.clone();
        long2[1999] = 7;
        let mut b = Sfmt::from_key(mexp, &long2);
        assert_ne!(a.next_u32(), b.next_u32(), "the last key word matters");
    }
}

/// Serial reference for a jump: draw and drop `4 steps` 32-bit values one by one.
fn serial_skip(g: &mut Sfmt, steps: u64) {
    for _ in 0..4 * steps {
        g.next_u32();
    }
}

#[test]
fn pow2_tables_are_complete() {
    for mexp in [Mexp::M19937, Mexp::M607] {
        assert_eq!(jump::pow2_count(mexp), 129, "SFMT{}", mexp.number());
        // Below the state dimension psi_k is the single term t^(2^k).
        assert_eq!(JumpPoly::pow2(mexp, 3).unwrap().degree(), Some(8));
        assert!(JumpPoly::pow2(mexp, 129).is_err());
    }
}

#[test]
fn jump_equals_serial_generation() {
    for (mexp, ks) in [
        (Mexp::M19937, &[0u32, 5, 15, 16][..]),
        (Mexp::M607, &[0, 9, 10, 12, 14][..]),
    ] {
        for &k in ks {
            for pre in [0usize, 4, 6] {
                let mut serial = Sfmt::new(mexp, 4357);
                for _ in 0..pre {
                    serial.next_u32();
                }
                let mut jumped = serial.clone();
                serial_skip(&mut serial, 1 << k);
                jumped.jump(&JumpPoly::pow2(mexp, k).unwrap()).unwrap();
                let a: Vec<u32> = (0..1000).map(|_| serial.next_u32()).collect();
                let b: Vec<u32> = (0..1000).map(|_| jumped.next_u32()).collect();
                assert_eq!(
                    first_mismatch(&b, &a),
                    None,
                    "SFMT{} jump 2^{k} from read index {pre}",
                    mexp.number()
                );
            }
        }
    }
}

#[test]
fn discard_words_equals_serial_generation() {
    for mexp in [Mexp::M19937, Mexp::M607] {
        for words in [0u64, 1, 2, 5, 155, 156, 157, 1000] {
            let mut a = Sfmt::new(mexp, 99);
            a.next_u32();
            let mut b = a.clone();
            serial_skip(&mut a, words);
            b.discard_words(words);
            assert_eq!(
                a.next_u64(),
                b.next_u64(),
                "SFMT{} {words} words",
                mexp.number()
            );
        }
    }
}

#[test]
fn jump_reference_samples_of_the_sfmt_repository() {
    // jump/sample2.c: MEXP 607, jumps of 2000 and 10000 steps (1279 is not supported).
    let mut checked = 0;
    for line in JUMP_SAMPLES
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[0] != "607" {
            continue;
        }
        let steps: u64 = f[1].parse().unwrap();
        let poly = JumpPoly::from_hex(Mexp::M607, f[3]).unwrap();
        let mut serial = Sfmt::new(Mexp::M607, 1234);
        let mut jumped = serial.clone();
        serial_skip(&mut serial, steps);
        jumped.jump(&poly).unwrap();
        for i in 0..1000 {
            assert_eq!(
                jumped.next_u32(),
                serial.next_u32(),
                "607 jump {steps}, output {i}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 2, "both 607 samples were found");
}

#[test]
fn jump_composition_and_characteristic_polynomial() {
    for mexp in [Mexp::M19937, Mexp::M607] {
        for k in [31, 127] {
            let mut twice = Sfmt::new(mexp, 1);
            let mut once = twice.clone();
            let pk = JumpPoly::pow2(mexp, k).unwrap();
            twice.jump(&pk).unwrap();
            twice.jump(&pk).unwrap();
            once.jump(&JumpPoly::pow2(mexp, k + 1).unwrap()).unwrap();
            assert_eq!(twice, once, "SFMT{} 2 x 2^{k} = 2^{}", mexp.number(), k + 1);
        }
    }
    // phi itself sends a state to zero.
    let text = include_str!("../../data/sfmt/characteristic.607.txt");
    let hex = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap();
    let phi = JumpPoly::from_hex(Mexp::M607, hex).unwrap();
    assert_eq!(phi.degree(), Some(640));
    let mut g = Sfmt::new(Mexp::M607, 3);
    g.jump(&phi).unwrap();
    assert!(g.state().iter().all(|w| *w == [0; 4]));
    // A polynomial of one exponent on a generator of another is an error.
    let mut g = Sfmt::new(Mexp::M19937, 3);
    assert!(g.jump(&JumpPoly::pow2(Mexp::M607, 20).unwrap()).is_err());
}

#[test]
fn streams_are_jumps_of_the_base() {
    let base = Sfmt::new(Mexp::M19937, 2026);
    let k = 9;
    let s = jump::streams(&base, 37, k).unwrap();
    assert_eq!(s.len(), 37);
    for i in [0usize, 1, 2, 17, 36] {
        let mut want = base.clone();
        want.discard_words((i as u64) << k);
        assert_eq!(s[i], want, "stream {i}");
    }
    assert!(
        jump::streams(&base, 1 << 20, 110).is_err(),
        "beyond the tables"
    );
    // The interleaved CPU fill gives each stream's own sequence.
    let mut st = s.clone();
    let mut out = vec![0u32; 37 * 2 * 624];
    cpu::fill_u32(&mut st, 2, &mut out).unwrap();
    for i in [0usize, 5, 36] {
        let mut g = s[i].clone();
        let want: Vec<u32> = (0..2 * 624).map(|_| g.next_u32()).collect();
        assert_eq!(cpu::stream_of(&out, 37, 4, i), want, "stream {i}");
        assert_eq!(st[i], g, "stream {i} state after the fill");
    }
    // Normals of the interleaved fill are the transforms of each stream's output.
    let mut st = s.clone();
    let mut z = vec![0f32; 37 * 624];
    cpu::fill_normal_f32(&mut st, 1, &mut z).unwrap();
    let mut st64 = s.clone();
    let mut z64 = vec![0f64; 37 * 312];
    cpu::fill_normal_f64(&mut st64, 1, &mut z64).unwrap();
    for i in [0usize, 36] {
        let mut g = s[i].clone();
        let mut raw = vec![0u32; 624];
        g.fill_u32(&mut raw);
        let mut want = vec![0f32; 624];
        transforms::normals_f32(&raw, &mut want).unwrap();
        assert_eq!(cpu::stream_of(&z, 37, 4, i), want);
        let mut g = s[i].clone();
        let mut raw = vec![0u64; 312];
        g.fill_u64(&mut raw);
        let mut want = vec![0f64; 312];
        transforms::normals_f64(&raw, &mut want).unwrap();
        assert_eq!(cpu::stream_of(&z64, 37, 2, i), want);
    }
    // Bad input is an error, nothing written.
    let mut out = vec![7u32; 10];
    assert!(cpu::fill_u32(&mut s.clone(), 1, &mut out).is_err());
    assert!(out.iter().all(|&v| v == 7));
    let mut mid = vec![s[0].clone()];
    mid[0].next_u32();
    assert!(
        cpu::fill_u32(&mut mid, 1, &mut vec![0; 624]).is_err(),
        "inside a block"
    );
    let mut small = vec![Sfmt::new(Mexp::M607, 1)];
    assert!(
        cpu::fill_u32(&mut small, 1, &mut vec![0; 624]).is_err(),
        "SFMT607"
    );
}

// ---------------------------------------------------------------------------------------
// Statistics.

/// Standard normal CDF.
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Kolmogorov-Smirnov statistic `sqrt(n) D_n` of `x` against `cdf`.
fn ks(mut x: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &v) in x.iter().enumerate() {
        let f = cdf(v);
        d = d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n);
    }
    d * n.sqrt()
}

/// Pearson chi-square of counts against equal expectations; returns (statistic, df).
fn chi_square(counts: &[u64]) -> (f64, f64) {
    let total: u64 = counts.iter().sum();
    let e = total as f64 / counts.len() as f64;
    let s = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    (s, counts.len() as f64 - 1.0)
}

/// Whether a chi-square statistic is within `df + 6 sqrt(2 df)` (p of about 1e-6 or less).
fn chi_ok((s, df): (f64, f64)) -> bool {
    s < df + 6.0 * (2.0 * df).sqrt()
}

/// KS critical value: sqrt(n) D_n < 1.95 (p = 0.001).
const KS_CRIT: f64 = 1.95;

struct Verdict {
    uniform_mean: bool,
    uniform_var: bool,
    bytes: bool,
    buckets: bool,
    ks_uniform: bool,
    normal_moments: bool,
    ks_normal: bool,
    normal_buckets: bool,
}

impl Verdict {
    fn all(&self) -> bool {
        self.uniform_mean
            && self.uniform_var
            && self.bytes
            && self.buckets
            && self.ks_uniform
            && self.normal_moments
            && self.ks_normal
            && self.normal_buckets
    }
}

/// Runs the battery on `raw` (32-bit outputs).
fn battery(raw: &[u32]) -> Verdict {
    let n = raw.len() as f64;
    let mut u = vec![0f32; raw.len()];
    transforms::uniform_f32(raw, &mut u).unwrap();
    let u: Vec<f64> = u.iter().map(|&v| v as f64).collect();
    let mean = u.iter().sum::<f64>() / n;
    let var = u.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    // sd of the mean sqrt(1/12/n); of the variance sqrt(1/180/n).
    let uniform_mean = (mean - 0.5).abs() < 5.0 * (1.0 / 12.0 / n).sqrt();
    let uniform_var = (var - 1.0 / 12.0).abs() < 5.0 * (1.0 / 180.0 / n).sqrt();
    let mut bytes = vec![0u64; 256];
    for &x in raw {
        for b in x.to_le_bytes() {
            bytes[b as usize] += 1;
        }
    }
    let mut buckets = vec![0u64; 1000];
    for &v in &u {
        buckets[((v * 1000.0) as usize).min(999)] += 1;
    }
    let ks_uniform = ks(u.clone(), |x| x.clamp(0.0, 1.0)) < KS_CRIT;
    let mut z = vec![0f32; raw.len() & !1];
    transforms::normals_f32(&raw[..z.len()], &mut z).unwrap();
    let z: Vec<f64> = z.iter().map(|&v| v as f64).collect();
    let m = z.len() as f64;
    let zm = z.iter().sum::<f64>() / m;
    let m2 = z.iter().map(|v| v * v).sum::<f64>() / m;
    let m3 = z.iter().map(|v| v.powi(3)).sum::<f64>() / m;
    let m4 = z.iter().map(|v| v.powi(4)).sum::<f64>() / m;
    let normal_moments = zm.abs() < 5.0 / m.sqrt()
        && (m2 - 1.0).abs() < 5.0 * (2.0 / m).sqrt()
        && m3.abs() < 5.0 * (15.0 / m).sqrt()
        && (m4 - 3.0).abs() < 5.0 * (96.0 / m).sqrt();
    let mut nb = vec![0u64; 200];
    for &v in &z {
        nb[((phi(v) * 200.0) as usize).min(199)] += 1;
    }
    Verdict {
        uniform_mean,
        uniform_var,
        bytes: chi_ok(chi_square(&bytes)),
        buckets: chi_ok(chi_square(&buckets)),
        ks_uniform,
        normal_moments,
        ks_normal: ks(z, phi) < KS_CRIT,
        normal_buckets: chi_ok(chi_square(&nb)),
    }
}

const STAT_N: usize = 1 << 20;

fn sfmt_output(mexp: Mexp, seed: u32) -> Vec<u32> {
    let mut g = Sfmt::new(mexp, seed);
    let mut raw = vec![0u32; STAT_N];
    g.fill_u32(&mut raw);
    raw
}

#[test]
fn statistics_pass_for_sfmt() {
    for (mexp, seed) in [(Mexp::M19937, 1), (Mexp::M19937, 20261122), (Mexp::M607, 5)] {
        let v = battery(&sfmt_output(mexp, seed));
        assert!(
            v.all(),
            "SFMT{} seed {seed}: mean {} var {} bytes {} buckets {} ks {} normal moments {} ks normal {} normal buckets {}",
            mexp.number(),
            v.uniform_mean,
            v.uniform_var,
            v.bytes,
            v.buckets,
            v.ks_uniform,
            v.normal_moments,
            v.ks_normal,
            v.normal_buckets
        );
    }
    // Jump-ahead streams and the GPU layout's normals pass too.
    let s = jump::streams(&Sfmt::new(Mexp::M19937, 8), 8, 64).unwrap();
    let mut st = s.clone();
    let mut raw = vec![0u32; 8 * 211 * 624];
    cpu::fill_u32(&mut st, 211, &mut raw).unwrap();
    assert!(battery(&raw[..STAT_N]).all(), "8 interleaved streams");
}

#[test]
fn statistics_fail_for_broken_generators() {
    let good = sfmt_output(Mexp::M19937, 77);
    // A stuck low bit: bytes and buckets of the low byte fail (uniforms use the top 24).
    let stuck: Vec<u32> = good.iter().map(|&x| x | 1).collect();
    let v = battery(&stuck);
    assert!(!v.bytes, "a stuck bit passed the byte test");
    // Top bit lost: every uniform test fails.
    let halved: Vec<u32> = good.iter().map(|&x| x >> 1).collect();
    let v = battery(&halved);
    assert!(!v.uniform_mean && !v.uniform_var && !v.ks_uniform && !v.buckets && !v.bytes);
    assert!(!v.ks_normal && !v.normal_moments && !v.normal_buckets);
    // A generator that repeats a short cycle (the state never advances past 4096 words).
    let short: Vec<u32> = (0..STAT_N).map(|i| good[i % 4096]).collect();
    let v = battery(&short);
    assert!(
        !v.ks_uniform || !v.buckets || !v.bytes,
        "a 4096-cycle passed"
    );
    // Correlated normal pairs (the same value twice): the normal tests fail.
    let twins: Vec<u32> = (0..STAT_N).map(|i| good[i / 2]).collect();
    let v = battery(&twins);
    assert!(
        !v.ks_normal || !v.normal_buckets || !v.normal_moments,
        "equal pairs passed"
    );
    // An LCG's weak low half moved to the top (period 2^16): the battery catches it.
    let mut x = 1u32;
    let lcg: Vec<u32> = (0..STAT_N)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            x << 16
        })
        .collect();
    assert!(!battery(&lcg).all(), "an LCG's low half passed");
}

#[test]
fn transforms_ranges_and_errors() {
    let edge = [0u32, 1, 255, 256, u32::MAX - 255, u32::MAX];
    let mut u = vec![0f32; edge.len()];
    transforms::uniform_f32(&edge, &mut u).unwrap();
    assert_eq!(u[0], 0.0);
    assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
    assert_eq!(u[5], 1.0 - 2f32.powi(-24));
    let e64 = [0u64, u64::MAX];
    let mut d = vec![0f64; 2];
    transforms::uniform_f64(&e64, &mut d).unwrap();
    assert_eq!(d, [0.0, 1.0 - 2f64.powi(-53)]);
    let mut z = vec![0f32; edge.len()];
    transforms::normals_f32(&edge, &mut z).unwrap();
    assert!(z.iter().all(|v| v.is_finite()));
    let mut z = vec![0f64; 2];
    transforms::normals_f64(&e64, &mut z).unwrap();
    assert!(z.iter().all(|v| v.is_finite()));
    assert!(
        transforms::normals_f32(&[1, 2, 3], &mut [0.0; 3]).is_err(),
        "odd"
    );
    assert!(
        transforms::uniform_f32(&[1, 2, 3], &mut [0.0; 2]).is_err(),
        "lengths"
    );
}

/// Counts from a user (`rng sfmt --count 1e12 --json`, a million million streams) are
/// checked before allocating: an error naming the count and the bytes, the generator
/// not advanced. In range, the vectors hold the generator's next outputs.
#[test]
fn oversized_counts_are_errors_not_aborts() {
    let fresh = Sfmt::new(Mexp::M19937, 1234);
    let mut g = fresh.clone();
    for e in [
        g.generate_u64(1_000_000_000_000).unwrap_err(),
        g.generate_u32(usize::MAX).unwrap_err(),
    ] {
        common::assert_out_of_host_memory(&e, &["SFMT outputs"]);
    }
    assert_eq!(g, fresh, "advanced by a refused request");
    let mut want = vec![0u32; 1000];
    g.clone().fill_u32(&mut want);
    assert_eq!(g.generate_u32(1000).unwrap(), want);
    let mut h = fresh.clone();
    let mut want = vec![0u64; 77];
    h.clone().fill_u64(&mut want);
    assert_eq!(h.generate_u64(77).unwrap(), want);
    let e = jump::streams(&fresh, 1 << 40, 0).unwrap_err().to_string();
    assert!(
        e.contains("1099511627776 SFMT19937 streams") && e.contains("bytes"),
        "{e}"
    );
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod accuracy;
mod gpu;
