//! The timed rate loops that both PTX modules' probe kernels share (the `sm_80` module's
//! [`crate::probe`] and the Hopper module's `probe_dmma_sm90_*` in [`crate::hopper`]),
//! with the constants and CPU twins the host checks their output by.

/// Inner unroll of the arithmetic loops: one loop iteration does `UNROLL` steps per chain.
pub const UNROLL: u32 = 16;
/// `clock64` / `%globaltimer` words each block's thread 0 writes: start clock, end clock,
/// start ns, end ns.
pub const CLOCK_WORDS: usize = 4;

/// Independent accumulator chains per warp of the DMMA kernel.
pub const DMMA_CHAINS: usize = 8;

/// The `f64` MMA instruction shapes the DMMA probe measures: `m8n8k4` (`sm_80` on), and
/// `m16n8k4`, `m16n8k8`, `m16n8k16` (PTX ISA 7.8, `sm_90` on), which the Hopper GEMM
/// uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmmaShape {
    /// `m8n8k4`.
    M8n8k4,
    /// `m16n8k4`.
    M16n8k4,
    /// `m16n8k8`.
    M16n8k8,
    /// `m16n8k16`.
    M16n8k16,
}

impl DmmaShape {
    /// Every shape, the `sm_80` one first.
    pub const ALL: [DmmaShape; 4] = [
        DmmaShape::M8n8k4,
        DmmaShape::M16n8k4,
        DmmaShape::M16n8k8,
        DmmaShape::M16n8k16,
    ];

    /// `(m, n, k)`.
    pub const fn mnk(self) -> (usize, usize, usize) {
        match self {
            DmmaShape::M8n8k4 => (8, 8, 4),
            DmmaShape::M16n8k4 => (16, 8, 4),
            DmmaShape::M16n8k8 => (16, 8, 8),
            DmmaShape::M16n8k16 => (16, 8, 16),
        }
    }

    /// Accumulator registers per lane (`m n / 32`).
    pub const fn c_regs(self) -> usize {
        let (m, n, _) = self.mnk();
        m * n / 32
    }

    /// FLOPs of one warp instruction, `2 m n k`.
    pub const fn flops(self) -> u64 {
        let (m, n, k) = self.mnk();
        (2 * m * n * k) as u64
    }

    /// Whether the shape needs compute capability 9.0 (PTX's `sm_90` shapes).
    pub const fn needs_sm90(self) -> bool {
        !matches!(self, DmmaShape::M8n8k4)
    }

    /// The PTX name of the shape, e.g. `m16n8k8`.
    pub const fn name(self) -> &'static str {
        match self {
            DmmaShape::M8n8k4 => "m8n8k4",
            DmmaShape::M16n8k4 => "m16n8k4",
            DmmaShape::M16n8k8 => "m16n8k8",
            DmmaShape::M16n8k16 => "m16n8k16",
        }
    }
}

/// What the DMMA kernel of `shape` stores per thread after `steps` products with
/// `A = a`, `B = b` from `c0`: every accumulator element holds `c0 + steps k a b` (exact
/// when `a`, `b`, `c0` are small powers of two, whatever the order of the hardware's
/// additions), and a thread stores the sum of its `c_regs * DMMA_CHAINS` elements.
pub fn dmma_value(shape: DmmaShape, steps: u64, a: f64, b: f64, c0: f64) -> f64 {
    let k = shape.mnk().2 as f64;
    (c0 + steps as f64 * k * a * b) * (shape.c_regs() * DMMA_CHAINS) as f64
}

#[cfg(target_arch = "nvptx64")]
use crate::device::{block_idx, global_index, globaltimer, thread_idx};
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `%clock64` of this SM. Volatile (no `pure`): stays where it is written.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn clock64() -> u64 {
    let t: u64;
    unsafe { asm!("mov.u64 {t}, %clock64;", t = out(reg64) t, options(nostack)) };
    t
}

/// Thread 0 of the block writes (clock start, clock end, ns start, ns end).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn record_clocks(clocks: *mut u64, c0: u64, t0: u64) {
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

/// The DMMA rate loop of every shape: each warp runs `DMMA_CHAINS` accumulator chains of
/// `iters * UNROLL` products of the atom `M` (the GEMM's, [`crate::gemm::Mma`]) with
/// `A = a`, `B = b` from `c0`; `out[thread]` gets the sum of the thread's accumulators
/// ([`dmma_value`]), `clocks` as the peak kernels.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn dmma_chains<M: crate::gemm::Mma>(
    iters: u32,
    a: f64,
    b: f64,
    c0: f64,
    out: *mut f64,
    clocks: *mut u64,
) {
    let (k0, t0) = (clock64(), globaltimer());
    let (af, bf) = ([a; 8], [b; 4]);
    let mut acc = [[c0; 4]; DMMA_CHAINS];
    let mut i = 0;
    while i < iters {
        let mut u = 0;
        while u < UNROLL {
            let mut k = 0;
            while k < DMMA_CHAINS {
                M::mma(&mut acc[k], &af, &bf);
                k += 1;
            }
            u += 1;
        }
        i += 1;
    }
    let mut sum = 0.0;
    let mut k = 0;
    while k < DMMA_CHAINS {
        let mut e = 0;
        while e < M::C_REGS {
            sum += acc[k][e];
            e += 1;
        }
        k += 1;
    }
    unsafe { *out.add(global_index()) = sum };
    unsafe { record_clocks(clocks, k0, t0) };
}
