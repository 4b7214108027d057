//! The rayon CPU twin of [`super::gpu`]: many SFMT19937 streams, `blocks` state blocks
//! each, written in the GPU's interleaved layout (word `j` of stream `s` at 128-bit
//! position `j * streams.len() + s`; within a word, `u32`: its four lanes, `f32`: four
//! normals, `f64`: two normals). Same signatures as the GPU functions with host slices.
//!
//! ```
//! use ferrocuda::rng::{Mexp, Sfmt, cpu, jump};
//! let base = Sfmt::new(Mexp::M19937, 9);
//! let mut streams = jump::streams(&base, 2, 20)?;
//! let mut out = vec![0u32; 2 * 624];
//! cpu::fill_u32(&mut streams, 1, &mut out)?;
//! // Stream 0 is the base generator itself.
//! assert_eq!(out[0], base.clone().next_u32());
//! // Word 0 of stream 1 follows word 0 of stream 0.
//! assert_eq!(cpu::stream_of(&out, 2, 4, 1)[..4], out[4..8]);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use rayon::prelude::*;

use ferrocuda_kernels::sfmt as k;

use super::{Mexp, Sfmt, W128};
use crate::error::{Error, Result, check_len};

/// Checks that every stream is SFMT19937 at a block boundary and that `out_len` is
/// `streams * blocks * N * per_word`.
pub(crate) fn check_streams(
    op: &'static str,
    streams: &[Sfmt],
    blocks: usize,
    per_word: usize,
    out_len: usize,
) -> Result<()> {
    if streams.is_empty() {
        return Err(Error::Empty {
            op,
            what: "streams",
        });
    }
    for (i, s) in streams.iter().enumerate() {
        if s.mexp() != Mexp::M19937 {
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "stream {i} is SFMT{}, the streams are SFMT19937",
                    s.mexp().number()
                ),
            });
        }
        if s.read_index() != k::SFMT19937.n32() {
            return Err(Error::InvalidArgument {
                op,
                reason: format!(
                    "stream {i} is inside a block (read index {} of 624): the streams generate whole blocks",
                    s.read_index()
                ),
            });
        }
    }
    let want = streams
        .len()
        .checked_mul(blocks)
        .and_then(|v| v.checked_mul(k::N19937 * per_word))
        .ok_or_else(|| Error::InvalidArgument {
            op,
            reason: format!("{} streams x {blocks} blocks overflow", streams.len()),
        })?;
    check_len(op, "out", want, out_len)
}

/// Generates every stream's words (a copy of `out`'s size, checked against the host's
/// memory first: the streams do not advance when it does not fit), then writes them
/// interleaved.
fn fill<T: Copy + Send + Sync, const L: usize>(
    streams: &mut [Sfmt],
    blocks: usize,
    out: &mut [T],
    f: impl Fn(W128) -> [T; L] + Sync,
) -> Result<()> {
    let n = k::N19937;
    // blocks * n words per stream: the streams' share of `out`, whose length is checked.
    crate::alloc::check_host_bytes(
        &format!(
            "the words of {} SFMT streams x {blocks} blocks",
            streams.len()
        ),
        crate::alloc::bytes_of(
            streams.len() as u128 * (blocks * n) as u128,
            size_of::<W128>(),
        ),
    )?;
    let words: Vec<Vec<W128>> = streams
        .par_iter_mut()
        .map(|s| {
            let mut w = Vec::with_capacity(blocks * n);
            for _ in 0..blocks {
                k::regenerate(&k::SFMT19937, &mut s.state);
                w.extend_from_slice(&s.state);
            }
            w
        })
        .collect();
    let ns = streams.len();
    out.par_chunks_mut(L * ns).enumerate().for_each(|(j, row)| {
        for (s, o) in row.chunks_exact_mut(L).enumerate() {
            o.copy_from_slice(&f(words[s][j]));
        }
    });
    Ok(())
}

/// `blocks * 624` 32-bit outputs of every stream, interleaved by 128-bit word.
/// Errors: a stream that is not SFMT19937 or not at a block boundary (read index 624),
/// no streams, `out.len() != streams.len() * blocks * 624`.
pub fn fill_u32(streams: &mut [Sfmt], blocks: usize, out: &mut [u32]) -> Result<()> {
    check_streams("rng::cpu::fill_u32", streams, blocks, 4, out.len())?;
    fill(streams, blocks, out, |w| w)
}

/// Four `f32` normals per word (Box-Muller on lanes (0, 1) and (2, 3)); as [`fill_u32`].
pub fn fill_normal_f32(streams: &mut [Sfmt], blocks: usize, out: &mut [f32]) -> Result<()> {
    check_streams("rng::cpu::fill_normal_f32", streams, blocks, 4, out.len())?;
    fill(streams, blocks, out, k::normals_f32)
}

/// Two `f64` normals per word (Box-Muller on its 64-bit halves); as [`fill_u32`] with
/// `blocks * 312` values per stream.
pub fn fill_normal_f64(streams: &mut [Sfmt], blocks: usize, out: &mut [f64]) -> Result<()> {
    check_streams("rng::cpu::fill_normal_f64", streams, blocks, 2, out.len())?;
    fill(streams, blocks, out, k::normals_f64)
}

/// Stream `s`'s values out of an interleaved buffer of `n_streams` streams with
/// `per_word` values per 128-bit word (4 for `u32`/`f32`, 2 for `f64`).
pub fn stream_of<T: Copy>(out: &[T], n_streams: usize, per_word: usize, s: usize) -> Vec<T> {
    out.chunks_exact(per_word * n_streams)
        .flat_map(|row| row[s * per_word..(s + 1) * per_word].iter().copied())
        .collect()
}
