//! Micro-benchmark kernels of `ferrocuda probe` (seed 002), with the CPU twins that give
//! the values each kernel must produce, so a test can prove the work was done (a
//! compiler that deleted the loop would store the wrong number).
//!
//! - **Peak arithmetic** ([`chain_value`]): every thread runs `W` independent chains of
//!   `iters * UNROLL` dependent steps of one operation (`a + b`, `a * b`, `fma(a, b, c)`)
//!   and stores the sum of its chains. Thread 0 of every block also records `clock64` and
//!   `%globaltimer` at its start and end, so the host knows the SM clock *during* the run.
//! - **FP64 tensor cores** (`mma.sync.aligned.m8n8k4.row.col.f64`): `W` independent
//!   accumulator chains per warp; with `A = a`, `B = b` everywhere each step adds exactly
//!   `4 a b` to every accumulator ([`dmma_value`]).
//! - **Memory**: linear read (plain `ld.global` and `ld.global.cg`, which skips L1) of
//!   16-byte words, write, copy, gather through an index buffer, shared memory with a
//!   chosen word stride between lanes (bank conflicts), a pointer chase.
//! - **Latency**: one thread, one dependent chain of inline-assembly instructions between
//!   two `clock64` reads.
//! - **Divergence**: the lanes of a warp split into `paths` groups; each group's chain runs
//!   while the others wait.

use crate::math::{fma_f32, fma_f64};

/// Inner unroll of the arithmetic loops: one loop iteration does `UNROLL` steps per chain.
pub const UNROLL: u32 = 16;
/// Threads per block of the probe kernels (the host launches them with this).
pub const BLOCK: u32 = 256;
/// Words (`u32`) of dynamic shared memory the shared-memory kernel uses: 32 KiB.
pub const SHARED_WORDS: u32 = 8192;
/// `clock64` / `%globaltimer` words each block's thread 0 writes: start clock, end clock,
/// start ns, end ns.
pub const CLOCK_WORDS: usize = 4;

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

/// Independent accumulator chains per warp of the DMMA kernel.
pub const DMMA_CHAINS: usize = 8;

/// What every accumulator element of the DMMA kernel holds after `steps` products with
/// `A = a`, `B = b` from `c0`: `c0 + steps * 4 a b` (exact when `a`, `b`, `c0` are small
/// powers of two, whatever the order of the hardware's additions). The kernel stores
/// the sum of a thread's `2 * DMMA_CHAINS` elements.
pub fn dmma_value(steps: u64, a: f64, b: f64, c0: f64) -> f64 {
    (c0 + steps as f64 * 4.0 * a * b) * (2 * DMMA_CHAINS) as f64
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

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use core::arch::asm;

    use super::*;
    use crate::device::{
        block_dim, block_idx, dynamic_shared, global_index, grid_stride, lane, sync_threads,
        thread_idx,
    };

    /// `%clock64` of this SM. Volatile (no `pure`): stays where it is written.
    #[inline(always)]
    fn clock64() -> u64 {
        let t: u64;
        unsafe { asm!("mov.u64 {t}, %clock64;", t = out(reg64) t, options(nostack)) };
        t
    }

    /// `%globaltimer`, nanoseconds.
    #[inline(always)]
    fn globaltimer() -> u64 {
        let t: u64;
        unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nostack)) };
        t
    }

    /// Thread 0 of the block writes (clock start, clock end, ns start, ns end).
    #[inline(always)]
    unsafe fn record_clocks(clocks: *mut u64, c0: u64, t0: u64) {
        let (c1, t1) = (clock64(), globaltimer());
        if thread_idx() == 0 {
            let base = unsafe { clocks.add(block_idx() * CLOCK_WORDS) };
            unsafe {
                *base = c0;
                *base.add(1) = c1;
                *base.add(2) = t0;
                *base.add(3) = t1;
            }
        }
    }

    #[inline(always)]
    unsafe fn peak<T: ProbeFloat, const W: usize>(
        op: ArithOp,
        iters: u32,
        b: T,
        c: T,
        out: *mut T,
        clocks: *mut u64,
    ) {
        let (c0, t0) = (clock64(), globaltimer());
        let tid = global_index();
        let v = chain_value::<T, W>(op, tid as u32, iters, b, c);
        unsafe { *out.add(tid) = v };
        unsafe { record_clocks(clocks, c0, t0) };
    }

    macro_rules! peak_kernel {
        ($name:ident, $t:ty, $op:expr, $w:literal) => {
            /// Peak kernel: `(iters, b, c, out[threads], clocks[blocks * 4])`.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                iters: u32,
                b: $t,
                c: $t,
                out: *mut $t,
                clocks: *mut u64,
            ) {
                unsafe { peak::<$t, $w>($op, iters, b, c, out, clocks) }
            }
        };
    }
    peak_kernel!(probe_add_f32_w1, f32, ArithOp::Add, 1);
    peak_kernel!(probe_add_f32_w8, f32, ArithOp::Add, 8);
    peak_kernel!(probe_mul_f32_w1, f32, ArithOp::Mul, 1);
    peak_kernel!(probe_mul_f32_w8, f32, ArithOp::Mul, 8);
    peak_kernel!(probe_fma_f32_w1, f32, ArithOp::Fma, 1);
    peak_kernel!(probe_fma_f32_w8, f32, ArithOp::Fma, 8);
    peak_kernel!(probe_add_f64_w1, f64, ArithOp::Add, 1);
    peak_kernel!(probe_add_f64_w8, f64, ArithOp::Add, 8);
    peak_kernel!(probe_mul_f64_w1, f64, ArithOp::Mul, 1);
    peak_kernel!(probe_mul_f64_w8, f64, ArithOp::Mul, 8);
    peak_kernel!(probe_fma_f64_w1, f64, ArithOp::Fma, 1);
    peak_kernel!(probe_fma_f64_w8, f64, ArithOp::Fma, 8);

    /// One `mma.sync.aligned.m8n8k4.row.col.f64`: `(d0, d1) <- A B + (d0, d1)`.
    #[inline(always)]
    fn dmma(a: f64, b: f64, d: &mut (f64, f64)) {
        unsafe {
            asm!(
                "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {{{d0}, {d1}}}, {{{a}}}, {{{b}}}, {{{d0}, {d1}}};",
                d0 = inout(reg64) d.0,
                d1 = inout(reg64) d.1,
                a = in(reg64) a,
                b = in(reg64) b,
                options(nostack, preserves_flags)
            );
        }
    }

    /// DMMA rate: `(iters, a, b, c0, out[threads], clocks[blocks * 4])`; every warp runs
    /// `DMMA_CHAINS` accumulator chains of `iters * UNROLL` products each.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_dmma_f64(
        iters: u32,
        a: f64,
        b: f64,
        c0: f64,
        out: *mut f64,
        clocks: *mut u64,
    ) {
        let (k0, t0) = (clock64(), globaltimer());
        let mut acc = [(c0, c0); DMMA_CHAINS];
        let mut i = 0;
        while i < iters {
            let mut u = 0;
            while u < UNROLL {
                let mut k = 0;
                while k < DMMA_CHAINS {
                    dmma(a, b, &mut acc[k]);
                    k += 1;
                }
                u += 1;
            }
            i += 1;
        }
        let mut sum = 0.0;
        let mut k = 0;
        while k < DMMA_CHAINS {
            sum += acc[k].0 + acc[k].1;
            k += 1;
        }
        unsafe { *out.add(global_index()) = sum };
        unsafe { record_clocks(clocks, k0, t0) };
    }

    /// 16-byte global load `ld.global{cache}.v4.u32`.
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
    load4!(load_ca, "ld.global.v4.u32");
    load4!(load_cg, "ld.global.cg.v4.u32");

    /// 16-byte global store `st.global{cache}.v4.u32`.
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
    store4!(store4, "st.global.v4.u32");
    // Streaming store (evict first: the copy's output is not read again).
    store4!(store4_cs, "st.global.cs.v4.u32");

    #[inline(always)]
    fn fold(acc: u32, v: Word4) -> u32 {
        acc.wrapping_add(v.0[0])
            .wrapping_add(v.0[1])
            .wrapping_add(v.0[2])
            .wrapping_add(v.0[3])
    }

    /// Reads `src[0..n]` `passes` times (four 16-byte loads in flight per thread); each
    /// thread stores the wrapping sum of what it read. `per_block == 0`: one grid-stride
    /// loop shares the buffer among all threads; otherwise every block reads all of it
    /// (so each SM's working set is the whole buffer: the L1 test).
    #[inline(always)]
    unsafe fn read(
        n: usize,
        passes: u32,
        per_block: u32,
        src: *const Word4,
        out: *mut u32,
        cg: bool,
    ) {
        let load = |p: *const Word4| unsafe { if cg { load_cg(p) } else { load_ca(p) } };
        let (first, stride) = if per_block != 0 {
            (thread_idx(), block_dim())
        } else {
            (global_index(), grid_stride())
        };
        let mut acc = 0u32;
        let mut pass = 0;
        while pass < passes {
            let mut i = first;
            while i + 3 * stride < n {
                let (v0, v1, v2, v3) = unsafe {
                    (
                        load(src.add(i)),
                        load(src.add(i + stride)),
                        load(src.add(i + 2 * stride)),
                        load(src.add(i + 3 * stride)),
                    )
                };
                acc = fold(fold(fold(fold(acc, v0), v1), v2), v3);
                i += 4 * stride;
            }
            while i < n {
                acc = fold(acc, unsafe { load(src.add(i)) });
                i += stride;
            }
            pass += 1;
        }
        unsafe { *out.add(global_index()) = acc };
    }

    /// Linear read through L1 and L2: `(n, passes, per_block, src[n], out[threads])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_read(
        n: usize,
        passes: u32,
        per_block: u32,
        src: *const Word4,
        out: *mut u32,
    ) {
        unsafe { read(n, passes, per_block, src, out, false) }
    }

    /// Linear read through L2 only (`ld.global.cg`): same arguments as `probe_read`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_read_cg(
        n: usize,
        passes: u32,
        per_block: u32,
        src: *const Word4,
        out: *mut u32,
    ) {
        unsafe { read(n, passes, per_block, src, out, true) }
    }

    /// Linear write `dst[i].0[k] = write_pattern(4 i + k, value)`: `(n, value, dst[n])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_write(n: usize, value: u32, dst: *mut Word4) {
        let stride = grid_stride();
        let mut i = global_index();
        while i < n {
            let j = 4 * i;
            let w = Word4([
                write_pattern(j, value),
                write_pattern(j + 1, value),
                write_pattern(j + 2, value),
                write_pattern(j + 3, value),
            ]);
            unsafe { store4(dst.add(i), w) };
            i += stride;
        }
    }

    /// Linear copy `dst <- src`: `(n, src[n], dst[n])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_copy(n: usize, src: *const Word4, dst: *mut Word4) {
        let stride = grid_stride();
        let mut i = global_index();
        while i + stride < n {
            unsafe {
                let (a, b) = (load_ca(src.add(i)), load_ca(src.add(i + stride)));
                store4(dst.add(i), a);
                store4(dst.add(i + stride), b);
            }
            i += 2 * stride;
        }
        if i < n {
            unsafe { store4(dst.add(i), load_ca(src.add(i))) };
        }
    }

    /// Streaming copy `dst <- src`: four `ld.global.cg` loads in flight per thread, then
    /// four `st.global.cs` stores. `(n, src[n], dst[n])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_copy_stream(
        n: usize,
        src: *const Word4,
        dst: *mut Word4,
    ) {
        let stride = grid_stride();
        let mut i = global_index();
        while i + 3 * stride < n {
            unsafe {
                let a = load_cg(src.add(i));
                let b = load_cg(src.add(i + stride));
                let c = load_cg(src.add(i + 2 * stride));
                let d = load_cg(src.add(i + 3 * stride));
                store4_cs(dst.add(i), a);
                store4_cs(dst.add(i + stride), b);
                store4_cs(dst.add(i + 2 * stride), c);
                store4_cs(dst.add(i + 3 * stride), d);
            }
            i += 4 * stride;
        }
        while i < n {
            unsafe { store4_cs(dst.add(i), load_cg(src.add(i))) };
            i += stride;
        }
    }

    /// Gather `sum src[idx[i]]` over a grid-stride loop: `(n, idx[n], src, out[threads])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_gather(
        n: usize,
        idx: *const u32,
        src: *const u32,
        out: *mut u32,
    ) {
        let stride = grid_stride();
        let mut acc = 0u32;
        let mut i = global_index();
        while i < n {
            acc = acc.wrapping_add(unsafe { *src.add(*idx.add(i) as usize) });
            i += stride;
        }
        unsafe { *out.add(global_index()) = acc };
    }

    /// Shared-memory reads: lane `l` of every warp reads word `(l * stride + j) mod
    /// SHARED_WORDS` for `j` in `0..iters * UNROLL`. `stride` 1: no bank conflicts; 32:
    /// all lanes in one bank. Word `w` holds `w`. `(iters, stride, out[threads])`, with
    /// `SHARED_WORDS * 4` bytes of dynamic shared memory.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_shared(iters: u32, stride: u32, out: *mut u32) {
        let shared = dynamic_shared::<u32>();
        let mut w = thread_idx();
        while w < SHARED_WORDS as usize {
            unsafe { *shared.add(w) = w as u32 };
            w += block_dim();
        }
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
    /// the caches), then `steps` timed ones. Writes `[cycles, final index]`.
    /// `(steps, start, next, out[2])`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_chase(
        steps: u32,
        start: u32,
        next: *const u32,
        out: *mut u64,
    ) {
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

    /// One dependent chain of `iters * UNROLL` steps of `op` between two clock reads, by
    /// one thread; writes `[cycles, bits of the result]`.
    #[inline(always)]
    unsafe fn latency<T: Copy>(
        iters: u32,
        x: T,
        out: *mut u64,
        op: impl Fn(T) -> T,
        bits: impl Fn(T) -> u64,
    ) {
        if global_index() != 0 {
            return;
        }
        let mut a = x;
        let c0 = clock64();
        let mut i = 0;
        while i < iters {
            let mut u = 0;
            while u < UNROLL {
                a = op(a);
                u += 1;
            }
            i += 1;
        }
        let c1 = clock64();
        unsafe {
            *out = c1.wrapping_sub(c0);
            *out.add(1) = bits(a);
        }
    }

    macro_rules! latency_kernel {
        ($name:ident, $t:ty, $reg:ident, $asm:literal, $bits:expr) => {
            /// Latency chain: `(iters, x, y, out[2])`; one step is the instruction on `a`
            /// (and `y` where it takes a second operand).
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(iters: u32, x: $t, y: $t, out: *mut u64) {
                unsafe {
                    latency(
                        iters,
                        x,
                        out,
                        |a: $t| {
                            let r: $t;
                            // Not `pure`: a side-effecting asm keeps its place between
                            // the clock reads.
                            asm!($asm, r = out($reg) r, a = in($reg) a, y = in($reg) y,
                                options(nostack, preserves_flags));
                            r
                        },
                        $bits,
                    )
                }
            }
        };
    }
    latency_kernel!(
        probe_lat_fadd,
        f32,
        reg32,
        "add.rn.f32 {r}, {a}, {y};",
        |a: f32| a.to_bits() as u64
    );
    latency_kernel!(
        probe_lat_ffma,
        f32,
        reg32,
        "fma.rn.f32 {r}, {a}, {y}, {y};",
        |a: f32| a.to_bits() as u64
    );
    latency_kernel!(
        probe_lat_dfma,
        f64,
        reg64,
        "fma.rn.f64 {r}, {a}, {y}, {y};",
        |a: f64| a.to_bits()
    );
    latency_kernel!(
        probe_lat_imad,
        u32,
        reg32,
        "mad.lo.u32 {r}, {a}, {y}, {y};",
        |a: u32| a as u64
    );
    latency_kernel!(
        probe_lat_sin,
        f32,
        reg32,
        "sin.approx.f32 {r}, {a}; // {y}",
        |a: f32| a.to_bits() as u64
    );
    latency_kernel!(
        probe_lat_ex2,
        f32,
        reg32,
        "ex2.approx.ftz.f32 {r}, {a}; // {y}",
        |a: f32| a.to_bits() as u64
    );
    latency_kernel!(
        probe_lat_rsqrt,
        f32,
        reg32,
        "rsqrt.approx.f32 {r}, {a}; // {y}",
        |a: f32| a.to_bits() as u64
    );

    /// Divergence: lanes split into `paths` groups by `lane % paths`; the warp runs the
    /// groups one after another, group `p` an FMA chain ([`chain_value`], 4 chains) with
    /// `c + p`, so no two paths are the same code. `(iters, paths, b, c, out[threads])`;
    /// `out` holds [`diverge_value`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_diverge(
        iters: u32,
        paths: u32,
        b: f32,
        c: f32,
        out: *mut f32,
    ) {
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
}
