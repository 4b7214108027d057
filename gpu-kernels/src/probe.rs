//! Micro-benchmark kernels of `ferrocuda probe` (Staudenmaier 2015), with the CPU twins that give
//! the values each kernel must produce, so a test can prove the work was done (a
//! compiler that deleted the loop would store the wrong number).
//!
//! - **Peak arithmetic** ([`chain_value`]): every thread runs `W` independent chains of
//!   `iters * UNROLL` dependent steps of one operation (`a + b`, `a * b`, `fma(a, b, c)`)
//!   and stores the sum of its chains. Thread 0 of every block also records `clock64` and
//!   `%globaltimer` at its start and end, so the host knows the SM clock *during* the run.
//! - **FP64 tensor cores** (`mma.sync.aligned.<shape>.row.col.f64`, every shape of
//!   [`DmmaShape`]: `m8n8k4` here, the Hopper shapes `m16n8k4/k8/k16` in
//!   [`crate::hopper`]): `W` independent accumulator chains per warp; with `A = a`,
//!   `B = b` everywhere each step adds exactly `k a b` to every accumulator
//!   ([`dmma_value`]).
//! - **Memory**: linear read (plain `ld.global` and `ld.global.cg`, which skips L1) of
//!   16-byte words, write, copy, gather through an index buffer, shared memory with a
//!   chosen word stride between lanes (bank conflicts), a pointer chase.
//! - **Latency**: one thread, one dependent chain of inline-assembly instructions between
//!   two `clock64` reads.
//! - **Divergence**: the lanes of a warp split into `paths` groups; each group's chain runs
//!   while the others wait.

use crate::math::{fma_f32, fma_f64};
pub use crate::rate::{CLOCK_WORDS, DMMA_CHAINS, DmmaShape, UNROLL, dmma_value};
#[cfg(target_arch = "nvptx64")]
use crate::rate::{clock64, dmma_chains, record_clocks};

/// Threads per block of the probe kernels (the host launches them with this).
pub const BLOCK: u32 = 256;
/// Words (`u32`) of dynamic shared memory the shared-memory kernel uses: 32 KiB.
pub const SHARED_WORDS: u32 = 8192;
/// The arithmetic operation of a peak kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    /// `a + b` (1 FLOP).
    Add,
    /// `a * b` (1 FLOP).
    Mul,
    /// `fma(a, b, c)` (2 FLOPs).
    Fma,
}

impl ArithOp {
    /// The operation whose code is `code` (`op as u8`): the peak kernels take their
    /// operation as a const generic parameter, which cannot be an enum on stable Rust.
    pub const fn from_code(code: u8) -> ArithOp {
        match code {
            0 => ArithOp::Add,
            1 => ArithOp::Mul,
            2 => ArithOp::Fma,
            _ => panic!("ArithOp codes are 0 (add), 1 (mul), 2 (fma)"),
        }
    }

    /// Floating-point operations per step (an FMA counts 2).
    pub const fn flops(self) -> u32 {
        match self {
            ArithOp::Fma => 2,
            _ => 1,
        }
    }
}

/// Floats with the three operations, identical on the CPU and the GPU (IEEE, single
/// rounding; the FMA is fused on both sides).
pub trait ProbeFloat: Copy + core::ops::Add<Output = Self> {
    /// `a op (b, c)`.
    fn step(op: ArithOp, a: Self, b: Self, c: Self) -> Self;
    /// Start value of chain `k` of thread `tid`: a small exact binary fraction.
    fn seed(tid: u32, k: u32) -> Self;
}

impl ProbeFloat for f32 {
    #[inline(always)]
    fn step(op: ArithOp, a: f32, b: f32, c: f32) -> f32 {
        match op {
            ArithOp::Add => a + b,
            ArithOp::Mul => a * b,
            ArithOp::Fma => fma_f32(a, b, c),
        }
    }
    #[inline(always)]
    fn seed(tid: u32, k: u32) -> f32 {
        ((tid & 1023) + 17 * k + 1) as f32 * (1.0 / 1024.0)
    }
}

impl ProbeFloat for f64 {
    #[inline(always)]
    fn step(op: ArithOp, a: f64, b: f64, c: f64) -> f64 {
        match op {
            ArithOp::Add => a + b,
            ArithOp::Mul => a * b,
            ArithOp::Fma => fma_f64(a, b, c),
        }
    }
    #[inline(always)]
    fn seed(tid: u32, k: u32) -> f64 {
        ((tid & 1023) + 17 * k + 1) as f64 * (1.0 / 1024.0)
    }
}

/// Runs the `W` chains of thread `tid` for `iters * UNROLL` steps and returns their sum
/// in chain order: what the peak kernel stores for that thread. Written once, called by
/// the kernels and by the CPU check.
#[inline(always)]
pub fn chain_value<T: ProbeFloat, const W: usize>(
    op: ArithOp,
    tid: u32,
    iters: u32,
    b: T,
    c: T,
) -> T {
    let mut a = [T::seed(tid, 0); W];
    let mut k = 0;
    while k < W {
        a[k] = T::seed(tid, k as u32);
        k += 1;
    }
    let mut i = 0;
    while i < iters {
        let mut u = 0;
        while u < UNROLL {
            let mut k = 0;
            while k < W {
                a[k] = T::step(op, a[k], b, c);
                k += 1;
            }
            u += 1;
        }
        i += 1;
    }
    let mut sum = a[0];
    let mut k = 1;
    while k < W {
        sum = sum + a[k];
        k += 1;
    }
    sum
}

/// The next index of a pointer chase: `next[p]` (the CPU twin of the chase kernel).
pub fn chase(next: &[u32], start: u32, steps: u32) -> u32 {
    let mut p = start;
    for _ in 0..steps {
        p = next[p as usize];
    }
    p
}

/// What the divergence kernel stores for global thread `tid` with `paths` paths.
pub fn diverge_value(tid: u32, iters: u32, paths: u32, b: f32, c: f32) -> f32 {
    let p = (tid % 32) % paths.max(1);
    chain_value::<f32, 4>(ArithOp::Fma, tid, iters, b, c + p as f32)
}

/// 16 bytes, 16-aligned, so loads and stores become `ld.global.v4.u32` / `st.global.v4`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Word4(pub [u32; 4]);

/// What the write kernel stores in word `j`: `j + value` (wrapping).
#[inline(always)]
pub fn write_pattern(j: usize, value: u32) -> u32 {
    (j as u32).wrapping_add(value)
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_dim, block_idx, dynamic_shared, for_each_block_index, for_each_index, for_each_strided,
    for_each_strided_group, global_index, globaltimer, grid_stride, lane, sync_threads, thread_idx,
};
use crate::{instances, kernel};
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Peak arithmetic: every thread runs `W` chains of `iters * UNROLL` steps of the
/// operation `ArithOp::from_code(OP)` ([`chain_value`]) and stores their sum at
/// `out[thread]`; thread 0 of block `b` writes its clocks to `clocks[4 b..4 b + 4]`.
#[kernel(args = Peak)]
pub unsafe fn peak_kernel<T: ProbeFloat, const OP: u8, const W: usize>(
    iters: u32,
    b: T,
    c: T,
    out: *mut T,
    clocks: *mut u64,
) {
    let (c0, t0) = (clock64(), globaltimer());
    let tid = global_index();
    let op = const { ArithOp::from_code(OP) };
    let v = chain_value::<T, W>(op, tid as u32, iters, b, c);
    unsafe { *out.add(tid) = v };
    unsafe { record_clocks(clocks, c0, t0) };
}

/// The peak kernels of one float type: each operation with 1 and 8 chains per thread.
#[cfg(not(target_arch = "nvptx64"))]
pub trait PeakKernels: ProbeFloat + 'static {
    /// `probe_add_<t>_w1`
    const ADD_W1: Kernel<Peak<'static, Self>>;
    /// `probe_add_<t>_w8`
    const ADD_W8: Kernel<Peak<'static, Self>>;
    /// `probe_mul_<t>_w1`
    const MUL_W1: Kernel<Peak<'static, Self>>;
    /// `probe_mul_<t>_w8`
    const MUL_W8: Kernel<Peak<'static, Self>>;
    /// `probe_fma_<t>_w1`
    const FMA_W1: Kernel<Peak<'static, Self>>;
    /// `probe_fma_<t>_w8`
    const FMA_W8: Kernel<Peak<'static, Self>>;
}

// The operation codes of the peak instances (a const parameter cannot be an enum).
#[cfg(target_arch = "nvptx64")]
const OP_ADD: u8 = ArithOp::Add as u8;
#[cfg(target_arch = "nvptx64")]
const OP_MUL: u8 = ArithOp::Mul as u8;
#[cfg(target_arch = "nvptx64")]
const OP_FMA: u8 = ArithOp::Fma as u8;

macro_rules! peak_instances {
    ($t:ty, $sfx:literal) => {
        instances! {
            impl PeakKernels for $t {
                ADD_W1 = peak_kernel::<$t, OP_ADD, 1>(concat!("probe_add_", $sfx, "_w1"));
                ADD_W8 = peak_kernel::<$t, OP_ADD, 8>(concat!("probe_add_", $sfx, "_w8"));
                MUL_W1 = peak_kernel::<$t, OP_MUL, 1>(concat!("probe_mul_", $sfx, "_w1"));
                MUL_W8 = peak_kernel::<$t, OP_MUL, 8>(concat!("probe_mul_", $sfx, "_w8"));
                FMA_W1 = peak_kernel::<$t, OP_FMA, 1>(concat!("probe_fma_", $sfx, "_w1"));
                FMA_W8 = peak_kernel::<$t, OP_FMA, 8>(concat!("probe_fma_", $sfx, "_w8"));
            }
        }
    };
}
peak_instances!(f32, "f32");
peak_instances!(f64, "f64");

/// DMMA rate with the `sm_80` shape `m8n8k4` ([`dmma_chains`]).
#[kernel]
pub unsafe fn probe_dmma_f64(iters: u32, a: f64, b: f64, c0: f64, out: *mut f64, clocks: *mut u64) {
    unsafe { dmma_chains::<crate::gemm::Sm80M8n8k4>(iters, a, b, c0, out, clocks) }
}

/// 16-byte global load `ld.global{cache}.v4.u32`.
#[cfg(target_arch = "nvptx64")]
macro_rules! load4 {
    ($name:ident, $op:literal) => {
        #[inline(always)]
        unsafe fn $name(p: *const Word4) -> Word4 {
            let (x, y, z, w): (u32, u32, u32, u32);
            unsafe {
                asm!(
                    concat!($op, " {{{x}, {y}, {z}, {w}}}, [{p}];"),
                    x = out(reg32) x,
                    y = out(reg32) y,
                    z = out(reg32) z,
                    w = out(reg32) w,
                    p = in(reg64) p,
                    options(nostack, readonly, preserves_flags)
                );
            }
            Word4([x, y, z, w])
        }
    };
}
#[cfg(target_arch = "nvptx64")]
load4!(load_ca, "ld.global.v4.u32");
#[cfg(target_arch = "nvptx64")]
load4!(load_cg, "ld.global.cg.v4.u32");

/// 16-byte global store `st.global{cache}.v4.u32`.
#[cfg(target_arch = "nvptx64")]
macro_rules! store4 {
    ($name:ident, $op:literal) => {
        #[inline(always)]
        unsafe fn $name(p: *mut Word4, v: Word4) {
            unsafe {
                asm!(
                    concat!($op, " [{p}], {{{x}, {y}, {z}, {w}}};"),
                    p = in(reg64) p,
                    x = in(reg32) v.0[0],
                    y = in(reg32) v.0[1],
                    z = in(reg32) v.0[2],
                    w = in(reg32) v.0[3],
                    options(nostack, preserves_flags)
                );
            }
        }
    };
}
#[cfg(target_arch = "nvptx64")]
store4!(store4, "st.global.v4.u32");
// Streaming store (evict first: the copy's output is not read again).
#[cfg(target_arch = "nvptx64")]
store4!(store4_cs, "st.global.cs.v4.u32");

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fold(acc: u32, v: Word4) -> u32 {
    acc.wrapping_add(v.0[0])
        .wrapping_add(v.0[1])
        .wrapping_add(v.0[2])
        .wrapping_add(v.0[3])
}

/// Linear read of `src` (`n` 16-byte words, given as `u32`) `passes` times, four
/// 16-byte loads in flight per thread, through L1 and L2 (`ld.global`) or, with `CG`,
/// through L2 only (`ld.global.cg`); each thread stores the wrapping sum of what it read
/// at `out[thread]`. `per_block == 0`: one grid-stride loop shares the buffer among all
/// threads; otherwise every block reads all of it (so each SM's working set is the whole
/// buffer: the L1 test).
#[kernel(args = ProbeRead)]
pub unsafe fn read_kernel<const CG: bool>(
    n: usize,
    passes: u32,
    per_block: u32,
    src: *const u32,
    out: *mut u32,
) {
    let src = src as *const Word4;
    let load = |i: usize| unsafe {
        if CG {
            load_cg(src.add(i))
        } else {
            load_ca(src.add(i))
        }
    };
    let (first, stride) = if per_block != 0 {
        (thread_idx(), block_dim())
    } else {
        (global_index(), grid_stride())
    };
    let mut acc = 0u32;
    let mut pass = 0;
    while pass < passes {
        let rest = for_each_strided_group(first, stride, n, |[i0, i1, i2, i3]| {
            let (v0, v1, v2, v3) = (load(i0), load(i1), load(i2), load(i3));
            acc = fold(fold(fold(fold(acc, v0), v1), v2), v3);
        });
        for_each_strided(rest, stride, n, |i| acc = fold(acc, load(i)));
        pass += 1;
    }
    unsafe { *out.add(global_index()) = acc };
}

instances! {
    pub const PROBE_READ = read_kernel::<false>("probe_read");
    pub const PROBE_READ_CG = read_kernel::<true>("probe_read_cg");
}

/// Linear write of `dst` (`n` 16-byte words, given as `u32`): `u32` word `j` gets
/// [`write_pattern`]`(j, value)`.
#[kernel]
pub unsafe fn probe_write(n: usize, value: u32, dst: *mut u32) {
    let dst = dst as *mut Word4;
    for_each_index(n, |i| {
        let j = 4 * i;
        let w = Word4([
            write_pattern(j, value),
            write_pattern(j + 1, value),
            write_pattern(j + 2, value),
            write_pattern(j + 3, value),
        ]);
        unsafe { store4(dst.add(i), w) };
    });
}

/// Linear copy `dst <- src` of `n` 16-byte words (given as `u32`), two words per
/// thread and step.
#[kernel]
pub unsafe fn probe_copy(n: usize, src: *const u32, dst: *mut u32) {
    let (src, dst) = (src as *const Word4, dst as *mut Word4);
    let stride = grid_stride();
    let i = for_each_strided_group(global_index(), stride, n, |[i0, i1]| unsafe {
        let (a, b) = (load_ca(src.add(i0)), load_ca(src.add(i1)));
        store4(dst.add(i0), a);
        store4(dst.add(i1), b);
    });
    // At most one word is left.
    if i < n {
        unsafe { store4(dst.add(i), load_ca(src.add(i))) };
    }
}

/// Streaming copy `dst <- src` of `n` 16-byte words (given as `u32`): four
/// `ld.global.cg` loads in flight per thread, then four `st.global.cs` stores.
#[kernel]
pub unsafe fn probe_copy_stream(n: usize, src: *const u32, dst: *mut u32) {
    let (src, dst) = (src as *const Word4, dst as *mut Word4);
    let stride = grid_stride();
    let rest = for_each_strided_group(global_index(), stride, n, |[i0, i1, i2, i3]| unsafe {
        let a = load_cg(src.add(i0));
        let b = load_cg(src.add(i1));
        let c = load_cg(src.add(i2));
        let d = load_cg(src.add(i3));
        store4_cs(dst.add(i0), a);
        store4_cs(dst.add(i1), b);
        store4_cs(dst.add(i2), c);
        store4_cs(dst.add(i3), d);
    });
    for_each_strided(rest, stride, n, |i| unsafe {
        store4_cs(dst.add(i), load_cg(src.add(i)))
    });
}

/// Gather: `out[thread]` gets the wrapping sum of `src[idx[i]]` over the thread's
/// grid-stride share of `i < n`.
#[kernel]
pub unsafe fn probe_gather(n: usize, idx: *const u32, src: *const u32, out: *mut u32) {
    let mut acc = 0u32;
    for_each_index(n, |i| {
        acc = acc.wrapping_add(unsafe { *src.add(*idx.add(i) as usize) });
    });
    unsafe { *out.add(global_index()) = acc };
}

/// Shared-memory reads: lane `l` of every warp reads word `(l * stride + j) mod
/// SHARED_WORDS` for `j` in `0..iters * UNROLL`. `stride` 1: no bank conflicts; 32:
/// all lanes in one bank. Word `w` holds `w`; `out[thread]` gets the wrapping sum. Needs
/// `SHARED_WORDS * 4` bytes of dynamic shared memory.
#[kernel]
pub unsafe fn probe_shared(iters: u32, stride: u32, out: *mut u32) {
    let shared = dynamic_shared::<u32>();
    for_each_block_index(SHARED_WORDS as usize, |w| unsafe {
        *shared.add(w) = w as u32
    });
    sync_threads();
    let mask = SHARED_WORDS - 1;
    let mut at = (lane() as u32).wrapping_mul(stride) & mask;
    let mut acc = 0u32;
    let mut i = 0;
    while i < iters {
        let mut u = 0;
        while u < UNROLL {
            acc = acc.wrapping_add(unsafe { *shared.add(at as usize) });
            at = (at + 1) & mask;
            u += 1;
        }
        i += 1;
    }
    unsafe { *out.add(global_index()) = acc };
}

/// Pointer chase by thread 0 of block 0: `steps` untimed steps from `start` (warming
/// the caches), then `steps` timed ones through `next`. Writes `out[0..2] = [cycles,
/// final index]`.
#[kernel]
pub unsafe fn probe_chase(steps: u32, start: u32, next: *const u32, out: *mut u64) {
    if global_index() != 0 {
        return;
    }
    let mut p = start;
    let mut s = 0;
    while s < steps {
        p = unsafe { *next.add(p as usize) };
        s += 1;
    }
    let c0 = clock64();
    let mut s = 0;
    while s < steps {
        p = unsafe { *next.add(p as usize) };
        s += 1;
    }
    // The end read depends on p, so it cannot move above the last load.
    let c1 = clock64().wrapping_add((p & 0) as u64);
    unsafe {
        *out = c1.wrapping_sub(c0);
        *out.add(1) = p as u64;
    }
}

// The instructions of the latency kernels (their `OP` parameter).
#[cfg(target_arch = "nvptx64")]
const LAT_ADD: u8 = 0;
#[cfg(target_arch = "nvptx64")]
const LAT_FMA: u8 = 1;
#[cfg(target_arch = "nvptx64")]
const LAT_SIN: u8 = 2;
#[cfg(target_arch = "nvptx64")]
const LAT_EX2: u8 = 3;
#[cfg(target_arch = "nvptx64")]
const LAT_RSQRT: u8 = 4;

/// Values of a latency chain: one step of instruction `OP` (inline assembly, so that
/// nothing folds or reorders it) and the result's bits. `f32`: add, fma, sin, ex2,
/// rsqrt; `f64`: fma; `u32`: mad.
pub trait LatencyValue: Copy {
    /// `a <- op(a, y)` for the instruction `OP` of this type.
    #[cfg(target_arch = "nvptx64")]
    fn step<const OP: u8>(a: Self, y: Self) -> Self;
    /// The bits of the value.
    #[cfg(target_arch = "nvptx64")]
    fn bits(self) -> u64;
}

/// `{r} <- template({a}, {y})` on values of type `$t` in registers of class `$reg`. Not
/// `pure`: a side-effecting asm keeps its place between the clock reads. Instructions
/// without a second operand name `{y}` in a comment (asm! wants every operand used).
#[cfg(target_arch = "nvptx64")]
macro_rules! asm_step {
    ($t:ty, $reg:ident, $template:literal, $a:expr, $y:expr) => {{
        let r: $t;
        unsafe {
            asm!($template, r = out($reg) r, a = in($reg) $a, y = in($reg) $y,
                options(nostack, preserves_flags))
        };
        r
    }};
}

impl LatencyValue for f32 {
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn step<const OP: u8>(a: f32, y: f32) -> f32 {
        match OP {
            LAT_ADD => asm_step!(f32, reg32, "add.rn.f32 {r}, {a}, {y};", a, y),
            LAT_FMA => asm_step!(f32, reg32, "fma.rn.f32 {r}, {a}, {y}, {y};", a, y),
            LAT_SIN => asm_step!(f32, reg32, "sin.approx.f32 {r}, {a}; // {y}", a, y),
            LAT_EX2 => asm_step!(f32, reg32, "ex2.approx.ftz.f32 {r}, {a}; // {y}", a, y),
            _ => asm_step!(f32, reg32, "rsqrt.approx.f32 {r}, {a}; // {y}", a, y),
        }
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl LatencyValue for f64 {
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn step<const OP: u8>(a: f64, y: f64) -> f64 {
        asm_step!(f64, reg64, "fma.rn.f64 {r}, {a}, {y}, {y};", a, y)
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

impl LatencyValue for u32 {
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn step<const OP: u8>(a: u32, y: u32) -> u32 {
        asm_step!(u32, reg32, "mad.lo.u32 {r}, {a}, {y}, {y};", a, y)
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn bits(self) -> u64 {
        self as u64
    }
}

/// Latency: thread 0 runs one dependent chain of `iters * UNROLL` steps
/// `a <- op(a, y)` from `a = x` between two clock reads and writes
/// `out[0..2] = [cycles, bits of the result]`.
#[kernel(args = Latency)]
pub unsafe fn latency_kernel<T: LatencyValue, const OP: u8>(iters: u32, x: T, y: T, out: *mut u64) {
    if global_index() != 0 {
        return;
    }
    let mut a = x;
    let c0 = clock64();
    let mut i = 0;
    while i < iters {
        let mut u = 0;
        while u < UNROLL {
            a = T::step::<OP>(a, y);
            u += 1;
        }
        i += 1;
    }
    let c1 = clock64();
    unsafe {
        *out = c1.wrapping_sub(c0);
        *out.add(1) = a.bits();
    }
}

instances! {
    pub const PROBE_LAT_FADD = latency_kernel::<f32, LAT_ADD>("probe_lat_fadd");
    pub const PROBE_LAT_FFMA = latency_kernel::<f32, LAT_FMA>("probe_lat_ffma");
    pub const PROBE_LAT_DFMA = latency_kernel::<f64, LAT_FMA>("probe_lat_dfma");
    pub const PROBE_LAT_IMAD = latency_kernel::<u32, LAT_FMA>("probe_lat_imad");
    pub const PROBE_LAT_SIN = latency_kernel::<f32, LAT_SIN>("probe_lat_sin");
    pub const PROBE_LAT_EX2 = latency_kernel::<f32, LAT_EX2>("probe_lat_ex2");
    pub const PROBE_LAT_RSQRT = latency_kernel::<f32, LAT_RSQRT>("probe_lat_rsqrt");
}

/// Divergence: lanes split into `paths` groups by `lane % paths`; the warp runs the
/// groups one after another, group `p` an FMA chain ([`chain_value`], 4 chains) with
/// `c + p`, so no two paths are the same code. `out[thread]` holds [`diverge_value`].
#[kernel]
pub unsafe fn probe_diverge(iters: u32, paths: u32, b: f32, c: f32, out: *mut f32) {
    let tid = global_index();
    let mine = lane() as u32 % paths.max(1);
    let mut v = 0.0f32;
    let mut p = 0;
    while p < paths.max(1) {
        if p == mine {
            v = chain_value::<f32, 4>(ArithOp::Fma, tid as u32, iters, b, c + p as f32);
        }
        p += 1;
    }
    unsafe { *out.add(tid) = v };
}
