//! Many SFMT19937 streams on the GPU, one stream per thread, each stream's output equal
//! bit for bit to the CPU stream's ([`super::cpu`] is the twin).
//!
//! **Kernel**: thread `s` holds stream `s`'s 156-word state in shared memory (2496 bytes
//! per thread, laid out word-major so that a warp's accesses are conflict-free), runs the
//! block regeneration in place (`ferrocuda_kernels::sfmt::recursion`, the CPU's function)
//! and streams every new word straight to global memory. There is no communication
//! between threads (SFMT's recursion is serial within a stream: each word needs the one
//! before), so the parallelism is the number of streams, made independent by jump-ahead
//! ([`super::jump::streams`]). Normals ([`SfmtStreams::fill_normal_f32`],
//! [`SfmtStreams::fill_normal_f64`]) take a second pass over the words, in place and at
//! full occupancy, with the CPU's Box-Muller functions: the stream kernel holds a few
//! warps per SM, too few to hide the transform's arithmetic.
//!
//! **Output layout** (interleaved): word `j` (from 0) of stream `s` is 128-bit position
//! `j * n_streams + s`, so a warp writes 512 contiguous bytes per step. As `u32`: lanes
//! `4 (j n + s) .. +4` in lane order; stream `s`'s own sequence is
//! [`super::cpu::stream_of`]. The device state uses the same layout.
//!
//! ```
//! use ferrocuda::rng::{Mexp, Sfmt, cpu, gpu::SfmtStreams, jump};
//! let gpu = match ferrocuda::gpu::open(0) {
//!     Ok(g) => g,
//!     Err(e) if e.is_no_device() => return Ok(()),
//!     Err(e) => return Err(e),
//! };
//! let streams = jump::streams(&Sfmt::new(Mexp::M19937, 1), 64, 40)?;
//! let mut dev = SfmtStreams::new(&gpu, &streams)?;
//! let mut out = gpu.alloc::<u32>(dev.len_u32(2))?;
//! dev.fill_u32(2, &mut out)?;
//! let mut host = streams.clone();
//! let mut want = vec![0u32; dev.len_u32(2)];
//! cpu::fill_u32(&mut host, 2, &mut want)?;
//! assert_eq!(out.download()?, want);
//! # Ok::<(), ferrocuda::Error>(())
//! ```

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, LaunchConfig};
use ferrocuda_kernels::abi::Out;
use ferrocuda_kernels::sfmt::{
    self as k, N19937, Sfmt19937, SfmtKernels, SfmtOutput, SfmtValueKernels, SfmtWordsToValues,
};

use super::cpu::check_streams;
use super::{Mexp, Sfmt, W128};
use crate::error::{Error, Result, check_device, check_len};

/// Shared memory per thread (= stream) of the stream kernels: 156 words of 16 bytes.
pub const SHARED_PER_STREAM: usize = N19937 * 16;

/// Most threads (= streams) per block whose shared memory fits one block's opt-in limit
/// and one SM (93 on an H100, 65 on an A100).
pub fn max_threads(gpu: &Gpu) -> Result<u32> {
    let info = gpu.info()?;
    let block = info.shared_memory_per_block_optin.max(0) as usize / SHARED_PER_STREAM;
    let sm = (info.shared_memory_per_multiprocessor.max(0) as usize).saturating_sub(1024)
        / SHARED_PER_STREAM;
    Ok(block.min(sm).clamp(1, 1024) as u32)
}

/// The default threads (= streams) per block: 80, or [`max_threads`] where fewer fit.
/// On the H100 (run 3 of docs/notes/gpu-runs-rng.md, one block per SM) 80 threads wrote
/// fastest: 32, 64, 80, 88, 93 threads gave 84, 86, 94, 90, 58 % of the write ceiling.
pub fn default_threads(gpu: &Gpu) -> Result<u32> {
    Ok(max_threads(gpu)?.min(80))
}

/// Checks that `s` starts on a 16-byte boundary: the kernels load and store whole
/// 128-bit words, and a view that starts inside one would fault.
#[doc(hidden)]
pub fn check_aligned<T>(
    op: &'static str,
    what: &'static str,
    s: &impl DeviceSlice<T>,
) -> Result<()> {
    let addr = s.device_ptr();
    if addr.is_multiple_of(16) {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op,
        reason: format!(
            "{what} starts at device address {addr:#x}, not on a 16-byte boundary \
             (the kernel accesses 128-bit words)"
        ),
    })
}

/// SFMT19937 streams resident on one device.
pub struct SfmtStreams {
    gpu: Gpu,
    n_streams: usize,
    threads: u32,
    max_threads: u32,
    state: DeviceBuffer<u32>,
}

impl std::fmt::Debug for SfmtStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SfmtStreams")
            .field("n_streams", &self.n_streams)
            .field("threads", &self.threads)
            .finish()
    }
}

impl SfmtStreams {
    /// Uploads `streams` (SFMT19937, each at a block boundary, e.g. fresh from seeding or
    /// [`super::jump::streams`]). Errors: no streams, a stream of another exponent or
    /// inside a block, device errors.
    pub fn new(gpu: &Gpu, streams: &[Sfmt]) -> Result<SfmtStreams> {
        check_streams("rng::gpu::SfmtStreams::new", streams, 0, 4, 0)?;
        // Loaded here, not inside a timed generation.
        crate::gpu::preload(gpu, &["sfmt"])?;
        let ns = streams.len();
        // As large as the streams' states together, which exist.
        let mut packed = crate::alloc::try_vec(
            &format!("the packed state of {ns} SFMT streams"),
            ns * N19937 * 4,
            0u32,
        )?;
        for (s, g) in streams.iter().enumerate() {
            for (i, w) in g.state().iter().enumerate() {
                packed[4 * (i * ns + s)..][..4].copy_from_slice(w);
            }
        }
        Ok(SfmtStreams {
            gpu: gpu.clone(),
            n_streams: ns,
            threads: default_threads(gpu)?,
            max_threads: max_threads(gpu)?,
            state: gpu.upload(&packed)?,
        })
    }

    /// Sets the threads (streams) per block (default [`default_threads`]); the launch
    /// needs `threads * 2496` bytes of shared memory. Errors: 0 or more than
    /// [`max_threads`].
    pub fn with_threads(mut self, threads: u32) -> Result<SfmtStreams> {
        if threads == 0 || threads > self.max_threads {
            return Err(Error::InvalidArgument {
                op: "rng::gpu::SfmtStreams::with_threads",
                reason: format!(
                    "{threads} threads per block: 1..={} fit this device's shared memory",
                    self.max_threads
                ),
            });
        }
        self.threads = threads;
        Ok(self)
    }

    /// Threads (streams) per block.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Number of streams.
    pub fn n_streams(&self) -> usize {
        self.n_streams
    }

    /// `u32` outputs of `blocks` blocks of every stream: `n_streams * blocks * 624`,
    /// saturating at `usize::MAX` (more than any device holds: an allocation of that
    /// length fails with an error).
    pub fn len_u32(&self, blocks: usize) -> usize {
        self.n_streams
            .saturating_mul(blocks)
            .saturating_mul(4 * N19937)
    }

    /// The streams as CPU generators (downloads the state), to continue on the CPU.
    pub fn to_host(&self) -> Result<Vec<Sfmt>> {
        let packed = self.state.download()?;
        let ns = self.n_streams;
        (0..ns)
            .map(|s| {
                let state: Vec<W128> = (0..N19937)
                    .map(|i| {
                        let w = &packed[4 * (i * ns + s)..][..4];
                        [w[0], w[1], w[2], w[3]]
                    })
                    .collect();
                Sfmt::from_state(Mexp::M19937, state, k::SFMT19937.n32())
            })
            .collect()
    }

    /// Runs `blocks` blocks of every stream into `out` as raw words
    /// ([`SfmtKernels::STREAMS`]), `T::PER_WORD` values of `T` per word: the length
    /// `out` must have for values of `T`.
    fn launch<T: SfmtOutput>(
        &mut self,
        op: &'static str,
        blocks: usize,
        out: &mut impl DeviceSliceMut<T>,
    ) -> Result<bool> {
        let want = self
            .n_streams
            .checked_mul(blocks)
            .and_then(|v| v.checked_mul(N19937 * T::PER_WORD))
            .ok_or_else(|| Error::InvalidArgument {
                op,
                reason: format!("{} streams x {blocks} blocks overflow", self.n_streams),
            })?;
        check_len(op, "out", want, out.len())?;
        check_device(op, "out", &self.gpu, out.gpu())?;
        check_aligned(op, "out", out)?;
        if blocks == 0 {
            return Ok(false);
        }
        let gpu = out.gpu().clone();
        let kernel = <u32 as SfmtKernels>::STREAMS;
        let shared = self.threads as usize * SHARED_PER_STREAM;
        // The attribute belongs to the function, shared by every thread of the process:
        // always the same value (room for the largest block), so concurrent launches
        // with other block sizes cannot lower it under this one.
        let limit = self.max_threads as usize * SHARED_PER_STREAM;
        gpu.allow_dynamic_shared(&kernel, limit)?;
        let grid = self.n_streams.div_ceil(self.threads as usize) as u32;
        let cfg = LaunchConfig::blocks(grid, self.threads).with_shared_bytes(shared as u32);
        // The state is read and written on `out`'s stream; order it after the last use.
        if !self.gpu.same_stream(&gpu) {
            gpu.wait_for(&self.gpu)?;
        }
        // SAFETY: the address is `out`'s own memory, borrowed exclusively for this
        // launch (`&mut out`); the kernel writes raw 16-byte words there, and every bit
        // pattern is a valid `T` (`Pod`) until the transform replaces them.
        let words = unsafe { Out::<u32>::from_addr(out.as_out().addr()) };
        let args = Sfmt19937 {
            n_streams: self.n_streams,
            blocks,
            state: self.state.as_out(),
            out: words,
        };
        // SAFETY: thread s < n_streams reads and writes words s, s + n_streams, ... of
        // `state` (n_streams * 156 words, a whole buffer allocated so in `new`) and
        // writes n_streams * blocks * 156 words (16 bytes each: the length of `out`
        // checked above, 16-byte aligned); `shared` bytes hold the block's threads * 156
        // words, allowed above.
        unsafe { gpu.launch(&kernel, cfg, args)? };
        if !self.gpu.same_stream(&gpu) {
            self.gpu.wait_for(&gpu)?;
        }
        Ok(true)
    }

    /// [`launch`](Self::launch), then the raw words of `out` turned into values of `T`
    /// in place ([`SfmtValueKernels::TO_VALUES`]) on `out`'s stream.
    fn launch_values<T: SfmtValueKernels>(
        &mut self,
        op: &'static str,
        blocks: usize,
        out: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        if !self.launch(op, blocks, out)? {
            return Ok(());
        }
        let n_words = out.len() / T::PER_WORD;
        let gpu = out.gpu().clone();
        let cfg = LaunchConfig::for_elements(n_words, 256);
        let args = SfmtWordsToValues {
            n_words,
            out: out.as_out(),
        };
        // SAFETY: thread i < n_words reads and rewrites the 16 bytes of word i of `out`
        // (n_words * PER_WORD values, 16-byte aligned: checked in `launch`).
        unsafe { gpu.launch(&T::TO_VALUES, cfg, args) }.map_err(Into::into)
    }

    /// Generates `blocks` blocks (624 `u32` each) of every stream into `out` in the
    /// interleaved layout, queued on `out`'s stream. Errors: `out.len() != len_u32(blocks)`,
    /// another device, launch errors.
    pub fn fill_u32(&mut self, blocks: usize, out: &mut impl DeviceSliceMut<u32>) -> Result<()> {
        self.launch("rng::gpu::fill_u32", blocks, out).map(|_| ())
    }

    /// Four `f32` normals per word (as [`super::cpu::fill_normal_f32`]); `out` has
    /// `len_u32(blocks)` elements.
    pub fn fill_normal_f32(
        &mut self,
        blocks: usize,
        out: &mut impl DeviceSliceMut<f32>,
    ) -> Result<()> {
        self.launch_values("rng::gpu::fill_normal_f32", blocks, out)
    }

    /// Two `f64` normals per word (as [`super::cpu::fill_normal_f64`]); `out` has
    /// `len_u32(blocks) / 2` elements.
    pub fn fill_normal_f64(
        &mut self,
        blocks: usize,
        out: &mut impl DeviceSliceMut<f64>,
    ) -> Result<()> {
        self.launch_values("rng::gpu::fill_normal_f64", blocks, out)
    }
}
