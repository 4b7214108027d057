//! Random numbers: SFMT (SIMD-oriented Fast Mersenne Twister, Saito & Matsumoto 2006)
//! for MEXP 19937 and 607, bit for bit as the reference implementation
//! (`data/sfmt/PARAMS.md`), independent streams by GF(2) jump-ahead ([`jump`]), uniform
//! and normal transforms ([`transforms`]), many SFMT19937 streams on the GPU ([`gpu`])
//! and the rayon CPU twin of the same layout ([`cpu`]).
//!
//! | piece | CPU | GPU |
//! |---|---|---|
//! | [`Sfmt`]: `init_gen_rand`, `init_by_array`, 32/64-bit draws in the reference order | yes | one stream per thread ([`gpu::SfmtStreams`]) |
//! | jump-ahead by `2^k` steps, streams `2^k i` apart ([`jump::streams`]) | yes | states computed on the CPU, uploaded |
//! | uniform `f32` [0,1) 24 bits, `f64` [0,1) 53 bits; Box-Muller on disjoint pairs | yes | normals `f32`, `f64` |
//! | seeded test vectors uniform in [-1, 1] (`rand`, not SFMT): [`random_vector`] | yes | - |
//!
//! The recursion and the transforms are written once in
//! `ferrocuda_kernels::sfmt` and called by both sides, so the GPU output of stream `i`
//! equals the CPU output of stream `i` bit for bit.
//!
//! ```
//! use ferrocuda::rng::{Mexp, Sfmt};
//! // The first output of the reference file sfmt19937_init_gen_rand_1234_first1000.txt.
//! let mut g = Sfmt::new(Mexp::M19937, 1234);
//! assert_eq!(g.next_u32(), 3440181298);
//! // 64-bit draws are pairs of 32-bit draws, low word first.
//! let (mut a, mut b) = (Sfmt::new(Mexp::M607, 7), Sfmt::new(Mexp::M607, 7));
//! let lo = a.next_u32() as u64;
//! let hi = a.next_u32() as u64;
//! assert_eq!(b.next_u64(), lo | hi << 32);
//! ```

pub mod cpu;
pub mod gpu;
pub mod jump;
pub mod transforms;

pub use ferrocuda_kernels::sfmt::{SFMT607, SFMT19937, SfmtParams, W128};

use ferrocuda_kernels::sfmt as k;

use crate::error::{Error, Result};

/// The two supported Mersenne exponents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Mexp {
    /// SFMT19937: period a multiple of `2^19937 - 1`, 156 words of state.
    M19937,
    /// SFMT607: period a multiple of `2^607 - 1`, 5 words of state.
    M607,
}

impl Mexp {
    /// The parameter set.
    pub fn params(self) -> &'static SfmtParams {
        match self {
            Mexp::M19937 => &SFMT19937,
            Mexp::M607 => &SFMT607,
        }
    }

    /// From the exponent's number; any other value is an error.
    ///
    /// ```
    /// use ferrocuda::rng::Mexp;
    /// assert_eq!(Mexp::from_number(607)?, Mexp::M607);
    /// assert!(Mexp::from_number(1279).is_err());
    /// # Ok::<(), ferrocuda::Error>(())
    /// ```
    pub fn from_number(mexp: u32) -> Result<Mexp> {
        match mexp {
            19937 => Ok(Mexp::M19937),
            607 => Ok(Mexp::M607),
            other => Err(Error::InvalidArgument {
                op: "rng::Mexp",
                reason: format!("MEXP {other} is not supported (19937 or 607)"),
            }),
        }
    }

    /// The exponent's number.
    pub fn number(self) -> u32 {
        self.params().mexp
    }
}

/// An SFMT generator on the CPU: the state (`N` 128-bit words, oldest first) and the
/// 32-bit read index (`N32` = block used up, the next draw regenerates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sfmt {
    mexp: Mexp,
    state: Vec<W128>,
    idx: usize,
}

impl Sfmt {
    /// `init_gen_rand(seed)` (PARAMS.md §6): the 1812433253 recurrence over the `N32`
    /// 32-bit words, then period certification.
    pub fn new(mexp: Mexp, seed: u32) -> Sfmt {
        let p = mexp.params();
        let n32 = p.n32();
        let mut s = vec![0u32; n32];
        s[0] = seed;
        for i in 1..n32 {
            let prev = s[i - 1];
            s[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Sfmt::from_words(mexp, &s)
    }

    /// `init_by_array(key)` (PARAMS.md §7), then period certification. Any key length,
    /// the empty key included.
    pub fn from_key(mexp: Mexp, key: &[u32]) -> Sfmt {
        let p = mexp.params();
        let n = p.n32();
        let lag = if n >= 623 {
            11
        } else if n >= 68 {
            7
        } else if n >= 39 {
            5
        } else {
            3
        };
        let mid = (n - lag) / 2;
        let f1 = |x: u32| (x ^ (x >> 27)).wrapping_mul(1_664_525);
        let f2 = |x: u32| (x ^ (x >> 27)).wrapping_mul(1_566_083_941);
        let mut s = vec![0x8b8b_8b8bu32; n];
        let len = key.len();
        let mut count = (len + 1).max(n);
        let mut r = f1(s[0] ^ s[mid] ^ s[n - 1]);
        s[mid] = s[mid].wrapping_add(r);
        r = r.wrapping_add(len as u32);
        s[mid + lag] = s[mid + lag].wrapping_add(r);
        s[0] = r;
        count -= 1;
        let mut i = 1;
        for j in 0..count {
            let word = key.get(j).copied().unwrap_or(0);
            let im = (i + mid) % n;
            let iml = (i + mid + lag) % n;
            let mut r = f1(s[i] ^ s[im] ^ s[(i + n - 1) % n]);
            s[im] = s[im].wrapping_add(r);
            // The key word while there is one (an exhausted key adds nothing).
            r = r.wrapping_add(i as u32).wrapping_add(word);
            s[iml] = s[iml].wrapping_add(r);
            s[i] = r;
            i = (i + 1) % n;
        }
        for _ in 0..n {
            let im = (i + mid) % n;
            let iml = (i + mid + lag) % n;
            let mut r = f2(s[i].wrapping_add(s[im]).wrapping_add(s[(i + n - 1) % n]));
            s[im] ^= r;
            r = r.wrapping_sub(i as u32);
            s[iml] ^= r;
            s[i] = r;
            i = (i + 1) % n;
        }
        Sfmt::from_words(mexp, &s)
    }

    /// A generator from a seeded 32-bit state (certified here), block used up.
    fn from_words(mexp: Mexp, s: &[u32]) -> Sfmt {
        let mut state: Vec<W128> = s
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        certify(mexp.params(), &mut state[0]);
        Sfmt {
            mexp,
            idx: mexp.params().n32(),
            state,
        }
    }

    /// A generator from a raw state (`N` words, oldest first) and a 32-bit read index
    /// (`0..=N32`; `N32` means the next draw regenerates). No certification: the state is
    /// taken as given (e.g. one saved with [`Sfmt::state`]).
    ///
    /// ```
    /// use ferrocuda::rng::{Mexp, Sfmt};
    /// let mut g = Sfmt::new(Mexp::M607, 1);
    /// g.next_u32();
    /// let mut h = Sfmt::from_state(Mexp::M607, g.state().to_vec(), g.read_index())?;
    /// assert_eq!(g.next_u32(), h.next_u32());
    /// assert!(Sfmt::from_state(Mexp::M607, vec![[0; 4]; 4], 0).is_err());
    /// # Ok::<(), ferrocuda::Error>(())
    /// ```
    pub fn from_state(mexp: Mexp, state: Vec<W128>, read_index: usize) -> Result<Sfmt> {
        let p = mexp.params();
        if state.len() != p.n {
            return Err(Error::DimensionMismatch {
                op: "rng::Sfmt::from_state",
                what: "state (128-bit words)",
                expected: p.n,
                found: state.len(),
            });
        }
        if read_index > p.n32() {
            return Err(Error::InvalidArgument {
                op: "rng::Sfmt::from_state",
                reason: format!("read index {read_index} exceeds N32 = {}", p.n32()),
            });
        }
        Ok(Sfmt {
            mexp,
            state,
            idx: read_index,
        })
    }

    /// The exponent.
    pub fn mexp(&self) -> Mexp {
        self.mexp
    }

    /// The state, `N` words oldest first.
    pub fn state(&self) -> &[W128] {
        &self.state
    }

    /// The 32-bit read index (`N32`: block used up).
    pub fn read_index(&self) -> usize {
        self.idx
    }

    /// The next 32-bit output.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let p = self.mexp.params();
        if self.idx >= p.n32() {
            k::regenerate(p, &mut self.state);
            self.idx = 0;
        }
        let v = self.state[self.idx / 4][self.idx % 4];
        self.idx += 1;
        v
    }

    /// The next 64-bit output: `u32[2k] | u32[2k+1] << 32`, the reference's 64-bit view.
    /// At an odd read index (after an odd number of 32-bit draws) one 32-bit value is
    /// skipped first, so 64-bit draws always take whole 64-bit words.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        if self.idx % 2 == 1 {
            self.idx += 1;
        }
        let lo = self.next_u32() as u64;
        let hi = self.next_u32() as u64;
        lo | hi << 32
    }

    /// Fills `out` with the next `out.len()` 32-bit outputs (the same values as that many
    /// [`Sfmt::next_u32`] calls).
    pub fn fill_u32(&mut self, out: &mut [u32]) {
        let p = self.mexp.params();
        let n32 = p.n32();
        let mut pos = 0;
        while pos < out.len() {
            if self.idx >= n32 {
                k::regenerate(p, &mut self.state);
                self.idx = 0;
            }
            let take = (n32 - self.idx).min(out.len() - pos);
            for (o, i) in out[pos..pos + take].iter_mut().zip(self.idx..) {
                *o = self.state[i / 4][i % 4];
            }
            self.idx += take;
            pos += take;
        }
    }

    /// Fills `out` with the next `out.len()` 64-bit outputs (as [`Sfmt::next_u64`]).
    pub fn fill_u64(&mut self, out: &mut [u64]) {
        for o in out {
            *o = self.next_u64();
        }
    }

    /// The next `count` 32-bit outputs in a new vector, allocated fallibly: a `count`
    /// beyond what the host may allocate is [`Error::OutOfHostMemory`] naming it (the
    /// generator is then not advanced).
    ///
    /// ```
    /// use ferrocuda::rng::{Mexp, Sfmt};
    /// let mut g = Sfmt::new(Mexp::M19937, 1234);
    /// assert_eq!(g.generate_u32(3)?, [3440181298, 1564997079, 1510669302]);
    /// assert!(g.generate_u32(usize::MAX).is_err());
    /// # Ok::<(), ferrocuda::Error>(())
    /// ```
    pub fn generate_u32(&mut self, count: usize) -> Result<Vec<u32>> {
        let mut out = crate::alloc::try_vec(&Self::outputs(count, 32), count, 0)?;
        self.fill_u32(&mut out);
        Ok(out)
    }

    /// The next `count` 64-bit outputs (as [`Sfmt::next_u64`]) in a new vector, allocated
    /// fallibly as [`Sfmt::generate_u32`].
    pub fn generate_u64(&mut self, count: usize) -> Result<Vec<u64>> {
        let mut out = crate::alloc::try_vec(&Self::outputs(count, 64), count, 0)?;
        self.fill_u64(&mut out);
        Ok(out)
    }

    /// "1000 SFMT outputs of 32 bits", for the errors of the allocations.
    fn outputs(count: usize, bits: u32) -> String {
        format!("{count} SFMT outputs of {bits} bits")
    }

    /// Moves the stream forward by `words` 128-bit words (`4 words` 32-bit outputs) by
    /// generating and discarding; the read index is kept. For large distances use
    /// [`Sfmt::jump`].
    pub fn discard_words(&mut self, words: u64) {
        let p = self.mexp.params();
        let n = p.n as u64;
        let idx = self.idx;
        // Whole blocks first (the read index stays), then single words on the window.
        for _ in 0..words / n {
            k::regenerate(p, &mut self.state);
        }
        let rest = (words % n) as usize;
        if rest > 0 {
            let mut seq = self.state.clone();
            for i in 0..rest {
                let m = seq.len();
                let r = k::recursion(p, seq[i], seq[i + p.pos1], seq[m - 2], seq[m - 1]);
                seq.push(r);
            }
            self.state.copy_from_slice(&seq[rest..]);
        }
        self.idx = idx;
    }

    /// Jumps ahead by the steps of `poly` (JUMP.md §4): afterwards the draws are those
    /// `4 S` 32-bit positions further on. Errors: `poly` is for another exponent.
    pub fn jump(&mut self, poly: &jump::JumpPoly) -> Result<()> {
        if poly.mexp() != self.mexp {
            return Err(Error::InvalidArgument {
                op: "rng::Sfmt::jump",
                reason: format!(
                    "jump polynomial for MEXP {} applied to an SFMT{} generator",
                    poly.mexp().number(),
                    self.mexp.number()
                ),
            });
        }
        jump::apply(self.mexp.params(), &mut self.state, poly);
        Ok(())
    }
}

/// Period certification (PARAMS.md §8) on the first word.
fn certify(p: &SfmtParams, w0: &mut W128) {
    let inner = w0
        .iter()
        .zip(&p.parity)
        .fold(0u32, |acc, (w, q)| acc ^ (w & q));
    if inner.count_ones() % 2 == 1 {
        return;
    }
    if let Some((w, q)) = w0.iter_mut().zip(&p.parity).find(|(_, q)| **q != 0) {
        *w ^= 1 << q.trailing_zeros();
    }
}

/// Seeded random values uniform in [-1, 1] (both parts of a complex value) for test
/// matrices, benchmarks and the tour: the same vector on every machine and thread count
/// (`rand`'s `SmallRng`, one generator per chunk of 2^16 elements; not SFMT).
pub fn random_vector<T: crate::blas1::Element>(n: usize, seed: u64) -> Vec<T> {
    use rand::{Rng, SeedableRng, rngs::SmallRng};
    use rayon::prelude::*;
    let chunk = 1 << 16;
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(chunk).enumerate().for_each(|(c, out)| {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for x in out {
            let re = <T::Real as crate::RealScalar>::from_f64(rng.random_range(-1.0..1.0));
            let im = <T::Real as crate::RealScalar>::from_f64(rng.random_range(-1.0..1.0));
            *x = T::from_parts(re, im);
        }
    });
    v
}
