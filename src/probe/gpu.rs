//! One safe, typed launch per probe kernel: each checks its buffers' lengths and that
//! they live on the device of the `gpu` it launches on, and holds the only `unsafe`
//! launch of its kernel. Buffers of 16-byte words are whole `u32` buffers whose length
//! is a multiple of 4 (device allocations are 256-byte aligned).

use ferrocuda_host::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Gpu, Kernel, LaunchConfig};
use ferrocuda_kernels::probe::{
    ArithOp, BLOCK, CLOCK_WORDS, Latency, PROBE_CHASE, PROBE_COPY, PROBE_COPY_STREAM,
    PROBE_DIVERGE, PROBE_DMMA_F64, PROBE_GATHER, PROBE_LAT_DFMA, PROBE_LAT_EX2, PROBE_LAT_FADD,
    PROBE_LAT_FFMA, PROBE_LAT_IMAD, PROBE_LAT_RSQRT, PROBE_LAT_SIN, PROBE_READ, PROBE_READ_CG,
    PROBE_SHARED, PROBE_WRITE, Peak, PeakKernels, ProbeChase, ProbeCopy, ProbeCopyStream,
    ProbeDiverge, ProbeDmmaF64, ProbeGather, ProbeRead, ProbeShared, ProbeWrite, SHARED_WORDS,
};

use ferrocuda_kernels::hopper::{ProbeDmmaSm90, SM90_PROBE_DMMA};
pub use ferrocuda_kernels::probe::DmmaShape;

use crate::error::{Error, Result, check_device};

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

/// Checks that every operand lives on `gpu`'s device (the launch goes to `gpu`).
fn on_device(op: &'static str, gpu: &Gpu, operands: &[(&'static str, &Gpu)]) -> Result<()> {
    operands
        .iter()
        .try_for_each(|&(what, g)| check_device(op, what, gpu, g))
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
pub trait PeakFloat: PeakKernels + ferrocuda_host::Pod {
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
}
impl PeakFloat for f32 {
    const NAME: &'static str = "f32";
}
impl PeakFloat for f64 {
    const NAME: &'static str = "f64";
}

/// The peak kernel of `op` with 8 chains per thread (`wide`) or 1.
pub fn peak_kernel<T: PeakFloat>(op: ArithOp, wide: bool) -> Kernel<Peak<'static, T>> {
    match (op, wide) {
        (ArithOp::Add, false) => T::ADD_W1,
        (ArithOp::Add, true) => T::ADD_W8,
        (ArithOp::Mul, false) => T::MUL_W1,
        (ArithOp::Mul, true) => T::MUL_W8,
        (ArithOp::Fma, false) => T::FMA_W1,
        (ArithOp::Fma, true) => T::FMA_W8,
    }
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
    const OP: &str = "probe peak";
    let cfg = timed_grid(OP, blocks, out.len(), clocks.len())?;
    on_device(OP, gpu, &[("out", out.gpu()), ("clocks", clocks.gpu())])?;
    let args = Peak {
        iters,
        b,
        c,
        out: out.as_out(),
        clocks: clocks.as_out(),
    };
    // SAFETY: thread t writes out[t], thread 0 of block k writes clocks[4 k..4 k + 4];
    // `timed_grid` checked that out has a value per thread and clocks 4 per block.
    unsafe { gpu.launch(&peak_kernel::<T>(op, wide), cfg, args)? };
    Ok(())
}

/// Runs the DMMA kernel of `shape`: every warp `DMMA_CHAINS` chains of `iters * UNROLL`
/// products with `A = a`, `B = b`, accumulators starting at `c0`. Errors: a Hopper shape
/// on a device below compute capability 9.0, buffers too short or on another device.
#[allow(clippy::too_many_arguments)]
pub fn dmma(
    gpu: &Gpu,
    shape: DmmaShape,
    blocks: u32,
    iters: u32,
    a: f64,
    b: f64,
    c0: f64,
    out: &mut DeviceBuffer<f64>,
    clocks: &mut DeviceBuffer<u64>,
) -> Result<()> {
    const OP: &str = "probe dmma";
    let cfg = timed_grid(OP, blocks, out.len(), clocks.len())?;
    on_device(OP, gpu, &[("out", out.gpu()), ("clocks", clocks.gpu())])?;
    let sm90 = match shape {
        DmmaShape::M8n8k4 => None,
        DmmaShape::M16n8k4 => Some(0),
        DmmaShape::M16n8k8 => Some(1),
        DmmaShape::M16n8k16 => Some(2),
    };
    let Some(i) = sm90 else {
        let args = ProbeDmmaF64 {
            iters,
            a,
            b,
            c0,
            out: out.as_out(),
            clocks: clocks.as_out(),
        };
        // SAFETY: as `peak` (a value per thread, 4 clocks per block, checked by `timed_grid`).
        unsafe { gpu.launch(&PROBE_DMMA_F64, cfg, args)? };
        return Ok(());
    };
    let cc = gpu.compute_capability()?;
    if cc.0 < 9 {
        return Err(Error::InvalidArgument {
            op: OP,
            reason: format!(
                "the shape {} needs compute capability 9.0 or newer; this device has {}.{}",
                shape.name(),
                cc.0,
                cc.1
            ),
        });
    }
    let args = ProbeDmmaSm90 {
        iters,
        a,
        b,
        c0,
        out: out.as_out(),
        clocks: clocks.as_out(),
    };
    // SAFETY: as above; the Hopper module exists on this device (compute capability >= 9).
    unsafe { gpu.launch(&SM90_PROBE_DMMA[i], cfg, args)? };
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
    on_device(OP, gpu, &[("src", src.gpu()), ("out", out.gpu())])?;
    let kernel = if cg { PROBE_READ_CG } else { PROBE_READ };
    let args = ProbeRead {
        n,
        passes,
        per_block: per_block as u32,
        src: src.as_in(),
        out: out.as_out(),
    };
    // SAFETY: the kernel reads the n 16-byte words of src (a whole buffer: 256-byte
    // aligned, 4 n u32, checked by `words4`) and writes out[thread] (checked by `grid`).
    unsafe { gpu.launch(&kernel, cfg, args)? };
    Ok(())
}

/// Writes `dst[j] = j + value` (wrapping) for every word `j`.
pub fn write(gpu: &Gpu, blocks: u32, value: u32, dst: &mut DeviceBuffer<u32>) -> Result<()> {
    const OP: &str = "probe write";
    positive(OP, "blocks", blocks as usize)?;
    let n = words4(OP, "dst", dst.len())?;
    on_device(OP, gpu, &[("dst", dst.gpu())])?;
    let args = ProbeWrite {
        n,
        value,
        dst: dst.as_out(),
    };
    // SAFETY: the kernel writes the n 16-byte words of dst (a whole buffer of 4 n u32).
    unsafe { gpu.launch(&PROBE_WRITE, LaunchConfig::blocks(blocks, BLOCK), args)? };
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
    on_device(OP, gpu, &[("src", src.gpu()), ("dst", dst.gpu())])?;
    let cfg = LaunchConfig::blocks(blocks, BLOCK);
    let (src, dst) = (src.as_in(), dst.as_out());
    // SAFETY: the kernel reads the n 16-byte words of src and writes those of dst (whole
    // buffers of 4 n u32 each, checked above).
    unsafe {
        if stream {
            gpu.launch(&PROBE_COPY_STREAM, cfg, ProbeCopyStream { n, src, dst })?
        } else {
            gpu.launch(&PROBE_COPY, cfg, ProbeCopy { n, src, dst })?
        }
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
    let operands = [("idx", idx.gpu()), ("src", src.gpu()), ("out", out.gpu())];
    on_device(OP, gpu, &operands)?;
    let args = ProbeGather {
        n: idx.len(),
        idx: idx.as_in(),
        src: src.as_in(),
        out: out.as_out(),
    };
    // SAFETY: the kernel reads idx[0..n] and src[idx[i]], each index at most max_index
    // (the caller's promise, from `check_indices`), max_index < src.len() (checked);
    // thread t writes out[t] (checked by `grid`).
    unsafe { gpu.launch(&PROBE_GATHER, cfg, args)? };
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
    const OP: &str = "probe shared";
    let cfg = grid(OP, blocks, out.len())?.with_shared_bytes(SHARED_WORDS * 4);
    on_device(OP, gpu, &[("out", out.gpu())])?;
    let args = ProbeShared {
        iters,
        stride,
        out: out.as_out(),
    };
    // SAFETY: thread t writes out[t] (checked by `grid`); shared indices are masked to
    // SHARED_WORDS, the words of dynamic shared memory the launch gives.
    unsafe { gpu.launch(&PROBE_SHARED, cfg, args)? };
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
    on_device(OP, gpu, &[("next", next.gpu()), ("out", out.gpu())])?;
    let args = ProbeChase {
        steps,
        start,
        next: next.as_in(),
        out: out.as_out(),
    };
    // SAFETY: the chase reads next[p] for p = start and entries of next, all at most
    // max(start, max_entry) < next.len() (the entries by the caller's promise, the
    // bound checked above); it writes out[0..2] (checked).
    unsafe { gpu.launch(&PROBE_CHASE, LaunchConfig::blocks(1, 32), args)? };
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

/// A latency kernel with the type of its operands.
enum LatencyKernel {
    F32(Kernel<Latency<'static, f32>>),
    F64(Kernel<Latency<'static, f64>>),
    U32(Kernel<Latency<'static, u32>>),
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

    fn kernel(self) -> LatencyKernel {
        match self {
            LatencyOp::Fadd => LatencyKernel::F32(PROBE_LAT_FADD),
            LatencyOp::Ffma => LatencyKernel::F32(PROBE_LAT_FFMA),
            LatencyOp::Dfma => LatencyKernel::F64(PROBE_LAT_DFMA),
            LatencyOp::Imad => LatencyKernel::U32(PROBE_LAT_IMAD),
            LatencyOp::Sin => LatencyKernel::F32(PROBE_LAT_SIN),
            LatencyOp::Ex2 => LatencyKernel::F32(PROBE_LAT_EX2),
            LatencyOp::Rsqrt => LatencyKernel::F32(PROBE_LAT_RSQRT),
        }
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
    const OP: &str = "probe latency";
    at_least(OP, "out", 2, out.len())?;
    on_device(OP, gpu, &[("out", out.gpu())])?;
    let cfg = LaunchConfig::blocks(1, 32);
    let out = out.as_out();
    // SAFETY: each latency kernel writes out[0..2] only (out has at least 2, checked).
    unsafe {
        match op.kernel() {
            LatencyKernel::F32(k) => {
                let (x, y) = (x as f32, y as f32);
                gpu.launch(&k, cfg, Latency { iters, x, y, out })
            }
            LatencyKernel::F64(k) => gpu.launch(&k, cfg, Latency { iters, x, y, out }),
            LatencyKernel::U32(k) => {
                let (x, y) = (x as u32, y as u32);
                gpu.launch(&k, cfg, Latency { iters, x, y, out })
            }
        }?
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
    on_device(OP, gpu, &[("out", out.gpu())])?;
    let args = ProbeDiverge {
        iters,
        paths,
        b,
        c,
        out: out.as_out(),
    };
    // SAFETY: thread t writes out[t] (checked by `grid`).
    unsafe { gpu.launch(&PROBE_DIVERGE, cfg, args)? };
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
