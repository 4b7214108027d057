//! One safe, typed launch per probe kernel: each checks its buffers' lengths and holds
//! the only `unsafe` launch of its kernel. Buffers of 16-byte words are `u32` buffers
//! whose length is a multiple of 4 (device allocations are 256-byte aligned).

use ferrocuda_host::{DeviceBuffer, DeviceSlice, Gpu, LaunchConfig, arg};
use ferrocuda_kernels::names::PROBE;
use ferrocuda_kernels::probe::{ArithOp, BLOCK, CLOCK_WORDS, SHARED_WORDS};

use crate::error::{Error, Result};

fn at_least(op: &'static str, what: &'static str, need: usize, have: usize) -> Result<()> {
    if have >= need {
        Ok(())
    } else {
        Err(Error::DimensionMismatch {
            op,
            what,
            expected: need,
            found: have,
        })
    }
}

fn positive(op: &'static str, what: &str, v: usize) -> Result<()> {
    if v == 0 {
        Err(Error::InvalidArgument {
            op,
            reason: format!("{what} must be positive"),
        })
    } else {
        Ok(())
    }
}

/// The launch of `blocks` probe blocks whose threads each write one element of an
/// output of `out_len` (checked: at least one block, an element per thread).
fn grid(op: &'static str, blocks: u32, out_len: usize) -> Result<LaunchConfig> {
    positive(op, "blocks", blocks as usize)?;
    at_least(op, "out", threads(blocks), out_len)?;
    Ok(LaunchConfig::blocks(blocks, BLOCK))
}

/// [`grid`] for the kernels that also record each block's clocks in `clocks_len` words.
fn timed_grid(
    op: &'static str,
    blocks: u32,
    out_len: usize,
    clocks_len: usize,
) -> Result<LaunchConfig> {
    at_least(op, "clocks", blocks as usize * CLOCK_WORDS, clocks_len)?;
    grid(op, blocks, out_len)
}

/// Threads of a launch of `blocks` probe blocks.
pub fn threads(blocks: u32) -> usize {
    blocks as usize * BLOCK as usize
}

/// Floats with peak kernels.
pub trait PeakFloat: ferrocuda_kernels::probe::ProbeFloat + ferrocuda_host::Pod {
    /// Kernel names: add, mul, fma, each with 1 and 8 chains.
    const NAMES: [&'static str; 6];
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
}
impl PeakFloat for f32 {
    const NAMES: [&'static str; 6] = PROBE.peak_f32;
    const NAME: &'static str = "f32";
}
impl PeakFloat for f64 {
    const NAMES: [&'static str; 6] = PROBE.peak_f64;
    const NAME: &'static str = "f64";
}

/// Kernel name of a peak kernel.
pub fn peak_name<T: PeakFloat>(op: ArithOp, wide: bool) -> &'static str {
    let i = match op {
        ArithOp::Add => 0,
        ArithOp::Mul => 2,
        ArithOp::Fma => 4,
    };
    T::NAMES[i + wide as usize]
}

/// Chains per thread of a peak kernel.
pub fn chains(wide: bool) -> usize {
    if wide { 8 } else { 1 }
}

/// Runs a peak kernel on `blocks` blocks: every thread `iters * UNROLL` steps per chain,
/// `out[thread]` the sum of its chains, `clocks[4 b..4 b + 4]` block `b`'s clock64 and
/// globaltimer at start and end.
#[allow(clippy::too_many_arguments)]
pub fn peak<T: PeakFloat>(
    gpu: &Gpu,
    op: ArithOp,
    wide: bool,
    blocks: u32,
    iters: u32,
    b: T,
    c: T,
    out: &mut DeviceBuffer<T>,
    clocks: &mut DeviceBuffer<u64>,
) -> Result<()> {
    let cfg = timed_grid("probe peak", blocks, out.len(), clocks.len())?;
    let (o, k) = (out.device_ptr(), clocks.device_ptr());
    // SAFETY: (iters: u32, b: T, c: T, out: *mut T, clocks: *mut u64); lengths checked.
    unsafe {
        gpu.launch_untyped(
            peak_name::<T>(op, wide),
            cfg,
            &mut [arg(&iters), arg(&b), arg(&c), arg(&o), arg(&k)],
        )?
    };
    Ok(())
}

/// Runs the DMMA kernel: every warp `DMMA_CHAINS` chains of `iters * UNROLL`
/// `m8n8k4` products with `A = a`, `B = b`, accumulators starting at `c0`.
#[allow(clippy::too_many_arguments)]
pub fn dmma(
    gpu: &Gpu,
    blocks: u32,
    iters: u32,
    a: f64,
    b: f64,
    c0: f64,
    out: &mut DeviceBuffer<f64>,
    clocks: &mut DeviceBuffer<u64>,
) -> Result<()> {
    let cfg = timed_grid("probe dmma", blocks, out.len(), clocks.len())?;
    let (o, k) = (out.device_ptr(), clocks.device_ptr());
    // SAFETY: (iters, a, b, c0, out, clocks); lengths checked.
    unsafe {
        gpu.launch_untyped(
            PROBE.dmma,
            cfg,
            &mut [arg(&iters), arg(&a), arg(&b), arg(&c0), arg(&o), arg(&k)],
        )?
    };
    Ok(())
}

fn words4(op: &'static str, what: &'static str, len: usize) -> Result<usize> {
    if !len.is_multiple_of(4) {
        return Err(Error::InvalidArgument {
            op,
            reason: format!("{what} has {len} words, not a multiple of 4"),
        });
    }
    Ok(len / 4)
}

/// Reads all of `src` `passes` times; `out[thread]` gets the wrapping sum of the words
/// the thread read. `cg`: `ld.global.cg` (L2 only). `per_block`: every block reads all
/// of `src`, else the grid shares it.
pub fn read(
    gpu: &Gpu,
    cg: bool,
    per_block: bool,
    blocks: u32,
    passes: u32,
    src: &DeviceBuffer<u32>,
    out: &mut DeviceBuffer<u32>,
) -> Result<()> {
    const OP: &str = "probe read";
    let cfg = grid(OP, blocks, out.len())?;
    let n = words4(OP, "src", src.len())?;
    let (s, o, pb) = (src.device_ptr(), out.device_ptr(), per_block as u32);
    let kernel = if cg { PROBE.read_cg } else { PROBE.read };
    // SAFETY: (n: usize, passes: u32, per_block: u32, src: n x 16 B, out); checked.
    unsafe {
        gpu.launch_untyped(
            kernel,
            cfg,
            &mut [arg(&n), arg(&passes), arg(&pb), arg(&s), arg(&o)],
        )?
    };
    Ok(())
}

/// Writes `dst[j] = j + value` (wrapping) for every word `j`.
pub fn write(gpu: &Gpu, blocks: u32, value: u32, dst: &mut DeviceBuffer<u32>) -> Result<()> {
    const OP: &str = "probe write";
    positive(OP, "blocks", blocks as usize)?;
    let n = words4(OP, "dst", dst.len())?;
    let d = dst.device_ptr();
    // SAFETY: (n, value, dst: n x 16 B).
    unsafe {
        gpu.launch_untyped(
            PROBE.write,
            LaunchConfig::blocks(blocks, BLOCK),
            &mut [arg(&n), arg(&value), arg(&d)],
        )?
    };
    Ok(())
}

/// Copies `src` into `dst` (same length); `stream`: the streaming variant (`.cg` loads,
/// `.cs` stores, 4 loads in flight).
pub fn copy(
    gpu: &Gpu,
    stream: bool,
    blocks: u32,
    src: &DeviceBuffer<u32>,
    dst: &mut DeviceBuffer<u32>,
) -> Result<()> {
    const OP: &str = "probe copy";
    positive(OP, "blocks", blocks as usize)?;
    let n = words4(OP, "src", src.len())?;
    crate::error::check_len(OP, "dst", src.len(), dst.len())?;
    let (s, d) = (src.device_ptr(), dst.device_ptr());
    // SAFETY: (n, src, dst), both n x 16 B.
    unsafe {
        gpu.launch_untyped(
            if stream {
                PROBE.copy_stream
            } else {
                PROBE.copy
            },
            LaunchConfig::blocks(blocks, BLOCK),
            &mut [arg(&n), arg(&s), arg(&d)],
        )?
    };
    Ok(())
}

/// `out[thread] = sum src[idx[i]]` over the thread's grid-stride share of `idx`. Every
/// index must be below `src.len()` (checked on the host by the caller that built it:
/// [`check_indices`]).
pub fn gather(
    gpu: &Gpu,
    blocks: u32,
    idx: &DeviceBuffer<u32>,
    max_index: u32,
    src: &DeviceBuffer<u32>,
    out: &mut DeviceBuffer<u32>,
) -> Result<()> {
    const OP: &str = "probe gather";
    let cfg = grid(OP, blocks, out.len())?;
    at_least(OP, "src", max_index as usize + 1, src.len())?;
    let (n, i, s, o) = (
        idx.len(),
        idx.device_ptr(),
        src.device_ptr(),
        out.device_ptr(),
    );
    // SAFETY: (n, idx, src, out); indices below max_index < src.len() by the caller.
    unsafe { gpu.launch_untyped(PROBE.gather, cfg, &mut [arg(&n), arg(&i), arg(&s), arg(&o)])? };
    Ok(())
}

/// The largest index, or an error naming the first one that is `>= len`.
pub fn check_indices(idx: &[u32], len: usize) -> Result<u32> {
    let mut max = 0;
    for (i, &v) in idx.iter().enumerate() {
        if v as usize >= len {
            return Err(Error::InvalidArgument {
                op: "probe index buffer",
                reason: format!("entry {i} is {v}, past the buffer of {len} words"),
            });
        }
        max = max.max(v);
    }
    Ok(max)
}

/// Shared-memory reads with lane stride `stride` (words).
pub fn shared(
    gpu: &Gpu,
    blocks: u32,
    iters: u32,
    stride: u32,
    out: &mut DeviceBuffer<u32>,
) -> Result<()> {
    let cfg = grid("probe shared", blocks, out.len())?;
    let o = out.device_ptr();
    // SAFETY: (iters, stride, out) with SHARED_WORDS words of dynamic shared memory.
    unsafe {
        gpu.launch_untyped(
            PROBE.shared,
            cfg.with_shared_bytes(SHARED_WORDS * 4),
            &mut [arg(&iters), arg(&stride), arg(&o)],
        )?
    };
    Ok(())
}

/// Pointer chase of `steps` steps (after as many untimed ones) from `start`; `out =
/// [cycles, final index]`. Every entry of `next` must be an index into `next`: the
/// caller passes the largest (from [`check_indices`]), checked against the length here.
pub fn chase(
    gpu: &Gpu,
    steps: u32,
    start: u32,
    next: &DeviceBuffer<u32>,
    max_entry: u32,
    out: &mut DeviceBuffer<u64>,
) -> Result<()> {
    const OP: &str = "probe chase";
    at_least(OP, "out", 2, out.len())?;
    at_least(OP, "next", max_entry.max(start) as usize + 1, next.len())?;
    let (n, o) = (next.device_ptr(), out.device_ptr());
    // SAFETY: (steps, start, next, out[2]); entries index `next` (checked by the caller).
    unsafe {
        gpu.launch_untyped(
            PROBE.chase,
            LaunchConfig::blocks(1, 32),
            &mut [arg(&steps), arg(&start), arg(&n), arg(&o)],
        )?
    };
    Ok(())
}

/// The instructions of the latency kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum LatencyOp {
    /// `add.rn.f32`.
    Fadd,
    /// `fma.rn.f32`.
    Ffma,
    /// `fma.rn.f64`.
    Dfma,
    /// `mad.lo.u32`.
    Imad,
    /// `sin.approx.f32` (special-function unit).
    Sin,
    /// `ex2.approx.ftz.f32`.
    Ex2,
    /// `rsqrt.approx.f32`.
    Rsqrt,
}

impl LatencyOp {
    /// All of them, in table order.
    pub const ALL: [LatencyOp; 7] = [
        LatencyOp::Fadd,
        LatencyOp::Ffma,
        LatencyOp::Dfma,
        LatencyOp::Imad,
        LatencyOp::Sin,
        LatencyOp::Ex2,
        LatencyOp::Rsqrt,
    ];

    /// The PTX instruction.
    pub fn ptx(self) -> &'static str {
        match self {
            LatencyOp::Fadd => "add.rn.f32",
            LatencyOp::Ffma => "fma.rn.f32",
            LatencyOp::Dfma => "fma.rn.f64",
            LatencyOp::Imad => "mad.lo.u32",
            LatencyOp::Sin => "sin.approx.f32",
            LatencyOp::Ex2 => "ex2.approx.ftz.f32",
            LatencyOp::Rsqrt => "rsqrt.approx.f32",
        }
    }

    fn kernel(self) -> &'static str {
        PROBE.latency[self as usize]
    }
}

/// Runs a latency chain of `iters * UNROLL` dependent `op`s from `x` (second operand
/// `y`) in one thread; `out = [cycles, bits of the result]`. `x`, `y` are passed as the
/// kernel's type (f32, f64 or u32) converted from f64.
pub fn latency(
    gpu: &Gpu,
    op: LatencyOp,
    iters: u32,
    x: f64,
    y: f64,
    out: &mut DeviceBuffer<u64>,
) -> Result<()> {
    at_least("probe latency", "out", 2, out.len())?;
    let o = out.device_ptr();
    let cfg = LaunchConfig::blocks(1, 32);
    // SAFETY: (iters: u32, x: T, y: T, out: *mut u64[2]) with T the kernel's type.
    unsafe {
        match op {
            LatencyOp::Dfma => gpu.launch_untyped(
                op.kernel(),
                cfg,
                &mut [arg(&iters), arg(&x), arg(&y), arg(&o)],
            )?,
            LatencyOp::Imad => {
                let (xi, yi) = (x as u32, y as u32);
                gpu.launch_untyped(
                    op.kernel(),
                    cfg,
                    &mut [arg(&iters), arg(&xi), arg(&yi), arg(&o)],
                )?
            }
            _ => {
                let (xf, yf) = (x as f32, y as f32);
                gpu.launch_untyped(
                    op.kernel(),
                    cfg,
                    &mut [arg(&iters), arg(&xf), arg(&yf), arg(&o)],
                )?
            }
        }
    };
    Ok(())
}

/// Divergence kernel with `paths` paths per warp (1..=32).
pub fn diverge(
    gpu: &Gpu,
    blocks: u32,
    iters: u32,
    paths: u32,
    b: f32,
    c: f32,
    out: &mut DeviceBuffer<f32>,
) -> Result<()> {
    const OP: &str = "probe diverge";
    let cfg = grid(OP, blocks, out.len())?;
    if !(1..=32).contains(&paths) {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!("paths must be in 1..=32, got {paths}"),
        });
    }
    let o = out.device_ptr();
    // SAFETY: (iters, paths, b, c, out); checked.
    unsafe {
        gpu.launch_untyped(
            PROBE.diverge,
            cfg,
            &mut [arg(&iters), arg(&paths), arg(&b), arg(&c), arg(&o)],
        )?
    };
    Ok(())
}

/// Host CPU twin of the latency chains that are exact (FADD, FFMA, DFMA, IMAD): the
/// result bits after `steps` steps, `None` for the approximate special functions.
pub fn latency_twin(op: LatencyOp, steps: u64, x: f64, y: f64) -> Option<u64> {
    match op {
        LatencyOp::Fadd => {
            let (mut a, y) = (x as f32, y as f32);
            for _ in 0..steps {
                a += y;
            }
            Some(a.to_bits() as u64)
        }
        LatencyOp::Ffma => {
            let (mut a, y) = (x as f32, y as f32);
            for _ in 0..steps {
                a = a.mul_add(y, y);
            }
            Some(a.to_bits() as u64)
        }
        LatencyOp::Dfma => {
            let mut a = x;
            for _ in 0..steps {
                a = a.mul_add(y, y);
            }
            Some(a.to_bits())
        }
        LatencyOp::Imad => {
            let (mut a, y) = (x as u32, y as u32);
            for _ in 0..steps {
                a = a.wrapping_mul(y).wrapping_add(y);
            }
            Some(a as u64)
        }
        _ => None,
    }
}
