//! Jump-ahead for SFMT by GF(2) polynomials (`data/sfmt/JUMP.md`).
//!
//! One step of the state transition `F` is linear over GF(2) and its characteristic
//! polynomial `phi` (degree `128 N`) satisfies `phi(F) = 0`, so `F^S = psi(F)` with
//! `psi = t^S mod phi`. Applying `psi = sum c_k t^k` to a state is the sum of state
//! additions `psi(F) x = sum_{c_k = 1} F^k x` (Horner's scheme unrolled: the powers
//! `F^k x` are the windows `x_k .. x_{k+N-1}` of the sequence, the state advanced `k`
//! steps). [`apply`] generates the `deg psi + N` words once and XORs the selected
//! windows (the reference's method, without its circular buffer).
//!
//! The polynomials `psi_k = t^(2^k) mod phi` for `k = 0..=128` are embedded from
//! `data/sfmt/jump{19937,607}_pow2_steps.txt` ([`JumpPoly::pow2`]); any other
//! polynomial in the reference's hex format (least significant nibble first) parses with
//! [`JumpPoly::from_hex`]. Independent streams `2^k i` steps apart: [`streams`].
//!
//! ```
//! use ferrocuda::rng::{Mexp, Sfmt, jump::JumpPoly};
//! // Jump 2^10 steps (4096 32-bit outputs) and compare with serial generation.
//! let mut serial = Sfmt::new(Mexp::M607, 42);
//! let mut jumped = serial.clone();
//! for _ in 0..4 << 10 { serial.next_u32(); }
//! jumped.jump(&JumpPoly::pow2(Mexp::M607, 10)?)?;
//! assert_eq!(serial.next_u32(), jumped.next_u32());
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use std::sync::OnceLock;

use rayon::prelude::*;

use super::{Mexp, Sfmt, SfmtParams, W128};
use crate::error::{Error, Result};

const POW2_19937: &str = include_str!("../../data/sfmt/jump19937_pow2_steps.txt");
const POW2_607: &str = include_str!("../../data/sfmt/jump607_pow2_steps.txt");

/// Largest `k` with an embedded `t^(2^k)` polynomial.
pub const MAX_POW2: u32 = 128;

/// A jump polynomial over GF(2) for one exponent: bit `k` of `bits` is the coefficient
/// of `t^k`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpPoly {
    mexp: Mexp,
    bits: Vec<u64>,
}

impl JumpPoly {
    /// Parses the reference's hex format: character `i` holds the coefficients of
    /// `t^(4i) .. t^(4i+3)`, the bit of value `2^j` that of `t^(4i+j)`. Errors: a
    /// character that is not a hex digit (named with its position), an empty string.
    ///
    /// ```
    /// use ferrocuda::rng::{Mexp, jump::JumpPoly};
    /// let p = JumpPoly::from_hex(Mexp::M607, "01")?; // t^4
    /// assert_eq!(p.degree(), Some(4));
    /// assert!(JumpPoly::from_hex(Mexp::M607, "0x1").is_err());
    /// # Ok::<(), ferrocuda::Error>(())
    /// ```
    pub fn from_hex(mexp: Mexp, hex: &str) -> Result<JumpPoly> {
        let hex = hex.trim();
        if hex.is_empty() {
            return Err(Error::InvalidArgument {
                op: "rng::jump::JumpPoly::from_hex",
                reason: "empty polynomial string".into(),
            });
        }
        let mut bits = vec![0u64; (4 * hex.len()).div_ceil(64)];
        for (i, ch) in hex.chars().enumerate() {
            let v = ch.to_digit(16).ok_or_else(|| Error::InvalidArgument {
                op: "rng::jump::JumpPoly::from_hex",
                reason: format!("character {i} ({ch:?}) is not a hex digit"),
            })? as u64;
            let pos = 4 * i;
            bits[pos / 64] |= v << (pos % 64);
        }
        Ok(JumpPoly { mexp, bits })
    }

    /// `psi_k = t^(2^k) mod phi`: a jump by `2^k` steps (`2^(k+2)` 32-bit outputs), from
    /// the embedded tables. Errors: `k > 128`.
    pub fn pow2(mexp: Mexp, k: u32) -> Result<JumpPoly> {
        let table = pow2_table(mexp);
        table
            .get(k as usize)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument {
                op: "rng::jump::JumpPoly::pow2",
                reason: format!("2^{k} steps: the tables go to 2^{MAX_POW2}"),
            })
    }

    /// The exponent this polynomial belongs to.
    pub fn mexp(&self) -> Mexp {
        self.mexp
    }

    /// Degree (`None` for the zero polynomial).
    pub fn degree(&self) -> Option<usize> {
        (0..self.bits.len())
            .rev()
            .find(|&w| self.bits[w] != 0)
            .map(|w| 64 * w + 63 - self.bits[w].leading_zeros() as usize)
    }

    fn coeff(&self, k: usize) -> bool {
        self.bits[k / 64] >> (k % 64) & 1 == 1
    }
}

fn parse_table(mexp: Mexp, text: &str) -> Vec<JumpPoly> {
    let mut out = Vec::with_capacity(MAX_POW2 as usize + 1);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(k), Some(hex)) = (it.next(), it.next()) else {
            continue;
        };
        // The embedded tables are checked by the tests (k in order, 0..=128).
        let k: usize = k.parse().unwrap_or(usize::MAX);
        if k == out.len()
            && let Ok(p) = JumpPoly::from_hex(mexp, hex)
        {
            out.push(p);
        }
    }
    out
}

fn pow2_table(mexp: Mexp) -> &'static [JumpPoly] {
    static T19937: OnceLock<Vec<JumpPoly>> = OnceLock::new();
    static T607: OnceLock<Vec<JumpPoly>> = OnceLock::new();
    match mexp {
        Mexp::M19937 => T19937.get_or_init(|| parse_table(mexp, POW2_19937)),
        Mexp::M607 => T607.get_or_init(|| parse_table(mexp, POW2_607)),
    }
}

/// Number of embedded `2^k` polynomials for `mexp` (129 when the tables are intact).
pub fn pow2_count(mexp: Mexp) -> usize {
    pow2_table(mexp).len()
}

/// Applies `poly` to a state (`N` words oldest first) in place (JUMP.md §4).
pub fn apply(p: &SfmtParams, state: &mut [W128], poly: &JumpPoly) {
    let n = p.n;
    let Some(deg) = poly.degree() else {
        state.iter_mut().for_each(|w| *w = [0; 4]);
        return;
    };
    let to128 =
        |w: W128| w[0] as u128 | (w[1] as u128) << 32 | (w[2] as u128) << 64 | (w[3] as u128) << 96;
    let mut seq: Vec<W128> = Vec::with_capacity(n + deg);
    seq.extend_from_slice(state);
    for i in 0..deg {
        let m = seq.len();
        let r =
            ferrocuda_kernels::sfmt::recursion(p, seq[i], seq[i + p.pos1], seq[m - 2], seq[m - 1]);
        seq.push(r);
    }
    let wide: Vec<u128> = seq.iter().map(|&w| to128(w)).collect();
    let mut acc = vec![0u128; n];
    for k in 0..=deg {
        if poly.coeff(k) {
            for (a, w) in acc.iter_mut().zip(&wide[k..k + n]) {
                *a ^= *w;
            }
        }
    }
    for (s, a) in state.iter_mut().zip(acc) {
        *s = [
            a as u32,
            (a >> 32) as u32,
            (a >> 64) as u32,
            (a >> 96) as u32,
        ];
    }
}

/// `count` independent streams: stream `i` is `base` jumped ahead by `2^log2_spacing * i`
/// steps (`2^(log2_spacing+2) i` 32-bit outputs), read index kept. Computed in parallel
/// (each worker starts its run of streams by binary jumps, then steps by `2^log2_spacing`).
/// Errors: `log2_spacing + bits(count - 1) > 128` (beyond the embedded tables); `count`
/// generators beyond what the host may allocate ([`Error::OutOfHostMemory`]).
///
/// ```
/// use ferrocuda::rng::{Mexp, Sfmt, jump};
/// let base = Sfmt::new(Mexp::M607, 5);
/// let s = jump::streams(&base, 3, 4)?; // 16 steps = 64 outputs apart
/// let mut serial = base.clone();
/// for _ in 0..2 * 64 { serial.next_u32(); }
/// assert_eq!(s[2].clone().next_u32(), serial.next_u32());
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn streams(base: &Sfmt, count: usize, log2_spacing: u32) -> Result<Vec<Sfmt>> {
    let top = usize::BITS - count.saturating_sub(1).leading_zeros();
    if log2_spacing + top > MAX_POW2 {
        return Err(Error::InvalidArgument {
            op: "rng::jump::streams",
            reason: format!(
                "{count} streams 2^{log2_spacing} steps apart need a jump of 2^{} steps; the tables go to 2^{MAX_POW2}",
                log2_spacing + top
            ),
        });
    }
    let mexp = base.mexp();
    let what = format!("{count} SFMT{} streams", mexp.number());
    let each = size_of::<Sfmt>() + std::mem::size_of_val(base.state());
    crate::alloc::check_host_bytes(&what, crate::alloc::bytes_of(count as u128, each))?;
    let step = JumpPoly::pow2(mexp, log2_spacing)?;
    let workers = rayon::current_num_threads().max(1) * 4;
    let run = count.div_ceil(workers).max(1);
    let what = &what;
    let chunks: Vec<Vec<Sfmt>> = (0..count.div_ceil(run))
        .into_par_iter()
        .map(|c| -> Result<Vec<Sfmt>> {
            let first = c * run;
            let mut g = base.clone();
            for b in 0..usize::BITS - first.leading_zeros() {
                if first >> b & 1 == 1 {
                    g.jump(&JumpPoly::pow2(mexp, log2_spacing + b)?)?;
                }
            }
            let last = (first + run).min(count);
            let mut out = crate::alloc::try_with_capacity(what, last - first)?;
            for i in first..last {
                if i > first {
                    g.jump(&step)?;
                }
                out.push(g.clone());
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    Ok(chunks.into_iter().flatten().collect())
}
