//! The tensor-core GEMM, written once: `C <- alpha A B + beta C` in `f64`, column-major,
//! `A` `m x k`, `B` `k x n`, split as in CUTLASS/CuTe into
//!
//! - **the block tile** (`tile_gemm`, device only): [`TILE`]-square block tiles of `C`,
//!   [`THREADS`] threads = [`WARPS_M`] x [`WARPS_N`] warps of [`WARP_M`] x [`WARP_N`]
//!   results; k-steps of `K` in `STAGES` shared-memory stages filled by `cp.async`
//!   (`STAGES - 1` tiles in flight, one barrier per k-step). Each stage holds `K` rows of the block's `A` tile,
//!   then `K` rows of its `B` tile, each row [`TILE`] + [`PAD`] elements
//!   ([`shared_bytes`]); `k` need not be a multiple of anything (out-of-range elements
//!   are copied as zeros);
//! - **the MMA atom** (the device-only trait `Mma`): one warp-wide `mma.sync` instruction of shape
//!   `M x N x K` and which elements of `A`, `B` and the accumulator each lane holds; a
//!   warp tile is `WARP_M / M x WARP_N / N` fragments, each k-step `K / Mma::K`
//!   instructions per fragment;
//! - **the epilogue**: `C <- alpha acc + beta C` through `device::scale_store`,
//!   16 results of a thread at a time (`beta == 0` does not read `C`).
//!
//! Instances: `gemm_dmma_f64` ([`crate::dense`], `sm_80` module) is
//! `tile_gemm::<Sm80M8n8k4, 8, 4>`; `gemm_dmma_sm90_k<S>_f64` ([`crate::hopper`], `sm_90`
//! module) is `tile_gemm::<Sm90M16n8k<S>, 16, 3>`.

/// Block tile (rows = columns of `C`).
pub const TILE: usize = 128;
/// Threads per block.
pub const THREADS: usize = 256;
/// Warps of a block along m.
pub const WARPS_M: usize = 2;
/// Warps of a block along n.
pub const WARPS_N: usize = THREADS / 32 / WARPS_M;
/// Rows of `C` per warp.
pub const WARP_M: usize = TILE / WARPS_M;
/// Columns of `C` per warp.
pub const WARP_N: usize = TILE / WARPS_N;
/// Padding of each shared-memory row (elements): the fragment loads of a half-warp hit
/// 16 different banks.
pub const PAD: usize = 4;

/// Dynamic shared memory of `tile_gemm` in bytes for k-steps of `k` in `stages` stages
/// (over the default 48 KiB: the host raises the kernel's limit).
pub const fn shared_bytes(k: usize, stages: usize) -> usize {
    stages * 2 * k * (TILE + PAD) * 8
}

#[cfg(target_arch = "nvptx64")]
pub use imp::*;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::*;
    use crate::device::{
        block_idx, block_idx_y, cp_async_8, cp_async_commit, dynamic_shared, lane, scale_store,
        shared_addr, sync_threads, thread_idx, warp,
    };
    use crate::scalar::RealScalar;
    use core::arch::asm;

    /// The operands of `C <- alpha A B + beta C` (column-major, `A` `m x k`, `B` `k x n`)
    /// as a GEMM kernel receives them, for the device functions it calls.
    #[derive(Clone, Copy)]
    pub struct Operands<T> {
        /// Rows of `A` and `C`.
        pub m: usize,
        /// Columns of `B` and `C`.
        pub n: usize,
        /// Columns of `A`, rows of `B`.
        pub k: usize,
        /// Factor of `A B`.
        pub alpha: T,
        /// `A`.
        pub a: *const T,
        /// Leading dimension of `A`.
        pub lda: usize,
        /// `B`.
        pub b: *const T,
        /// Leading dimension of `B`.
        pub ldb: usize,
        /// Factor of `C`.
        pub beta: T,
        /// `C`.
        pub c: *mut T,
        /// Leading dimension of `C`.
        pub ldc: usize,
    }

    impl<T: RealScalar> Operands<T> {
        /// The same operands in `f64` (for the `f64`-only tensor-core kernels, generic in
        /// `T` only so that the host's generic code names one handle type).
        #[inline(always)]
        pub fn to_f64(self) -> Operands<f64> {
            let g = self;
            #[rustfmt::skip]
            let f = Operands {
                m: g.m, n: g.n, k: g.k, alpha: g.alpha.to_f64(), a: g.a.cast(), lda: g.lda,
                b: g.b.cast(), ldb: g.ldb, beta: g.beta.to_f64(), c: g.c.cast(), ldc: g.ldc,
            };
            f
        }
    }

    /// `cp.async.wait_group STAGES - 2`: the oldest of `STAGES - 1` committed groups has
    /// landed.
    #[inline(always)]
    fn cp_async_wait_all_but<const STAGES: usize>() {
        unsafe { asm!("cp.async.wait_group {n};", n = const STAGES - 2, options(nostack)) };
    }

    /// Results of `C` one thread holds (a warp tile over the warp's lanes).
    const RESULTS: usize = WARP_M * WARP_N / 32;

    /// An MMA atom: one warp-wide `d <- a b + d` of shape `M x N x K` in `f64`, `A`
    /// row-major, `B` column-major. Each lane holds [`Mma::A_REGS`] elements of `A`,
    /// [`Mma::B_REGS`] of `B` and [`Mma::C_REGS`] of the accumulator, in the first
    /// registers of the fragment arrays; `a_at`, `b_at`, `c_at` say which (PTX ISA,
    /// "Matrix fragments for mma").
    pub trait Mma {
        /// Rows of the instruction's `A` and accumulator.
        const M: usize;
        /// Columns of the instruction's `B` and accumulator.
        const N: usize;
        /// The instruction's `k`.
        const K: usize;
        /// Registers of `A` per lane (at most 8).
        const A_REGS: usize;
        /// Registers of `B` per lane (at most 4).
        const B_REGS: usize;
        /// Accumulator registers per lane (at most 4).
        const C_REGS: usize;
        /// `(row, k)` of the `A` element in register `r` of `lane`.
        fn a_at(lane: usize, r: usize) -> (usize, usize);
        /// `(k, column)` of the `B` element in register `r` of `lane`.
        fn b_at(lane: usize, r: usize) -> (usize, usize);
        /// `(row, column)` of the accumulator element in register `e` of `lane`.
        fn c_at(lane: usize, e: usize) -> (usize, usize);
        /// `d <- a b + d` (the whole warp executes it together).
        fn mma(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]);
    }

    /// `mma.sync.aligned.<shape>.row.col.f64.f64.f64.f64 {d..}, {a..}, {b..}, {d..}` on
    /// the named `f64` locals (the accumulators updated in place).
    macro_rules! mma_f64 {
        ($shape:literal, [$d0:ident $(, $d:ident)*], [$a0:ident $(, $a:ident)*], [$b0:ident $(, $b:ident)*]) => {
            asm!(
                concat!(
                    "mma.sync.aligned.", $shape, ".row.col.f64.f64.f64.f64 ",
                    "{{{", stringify!($d0), "}" $(, ", {", stringify!($d), "}")*, "}}, ",
                    "{{{", stringify!($a0), "}" $(, ", {", stringify!($a), "}")*, "}}, ",
                    "{{{", stringify!($b0), "}" $(, ", {", stringify!($b), "}")*, "}}, ",
                    "{{{", stringify!($d0), "}" $(, ", {", stringify!($d), "}")*, "}};",
                ),
                $d0 = inout(reg64) $d0, $($d = inout(reg64) $d,)*
                $a0 = in(reg64) $a0, $($a = in(reg64) $a,)*
                $b0 = in(reg64) $b0, $($b = in(reg64) $b,)*
                options(nostack)
            )
        };
    }

    /// The `sm_80` shape `m8n8k4` (`mma.sync.aligned.m8n8k4.row.col.f64`): with
    /// `g = lane / 4`, `t = lane % 4`, `A` holds `(g, t)`, `B` holds `(t, g)`, the
    /// accumulator register `e` holds `(g, 2 t + e)`.
    pub struct Sm80M8n8k4;

    impl Mma for Sm80M8n8k4 {
        const M: usize = 8;
        const N: usize = 8;
        const K: usize = 4;
        const A_REGS: usize = 1;
        const B_REGS: usize = 1;
        const C_REGS: usize = 2;
        #[inline(always)]
        fn a_at(lane: usize, _: usize) -> (usize, usize) {
            (lane / 4, lane % 4)
        }
        #[inline(always)]
        fn b_at(lane: usize, _: usize) -> (usize, usize) {
            (lane % 4, lane / 4)
        }
        #[inline(always)]
        fn c_at(lane: usize, e: usize) -> (usize, usize) {
            (lane / 4, 2 * (lane % 4) + e)
        }
        #[inline(always)]
        fn mma(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]) {
            let ([mut d0, mut d1, ..], [a0, ..], [b0, ..]) = (*d, *a, *b);
            unsafe { mma_f64!("m8n8k4", [d0, d1], [a0], [b0]) };
            (d[0], d[1]) = (d0, d1);
        }
    }

    /// The Hopper shapes `m16n8k<S>`, `S` in 4, 8, 16
    /// (`mma.sync.aligned.m16n8k<S>.row.col.f64`, PTX ISA 7.8, `sm_90`): with
    /// `g = lane / 4`, `t = lane % 4`, `A` register `i` holds `(g + 8 (i % 2), t + 4 (i / 2))`,
    /// `B` register `i` holds `(t + 4 i, g)`, the accumulator register `e` holds
    /// `(g + 8 (e / 2), 2 t + e % 2)`.
    #[cfg(ferrocuda_sm90)]
    pub struct Sm90M16n8k<const S: usize>;

    #[cfg(ferrocuda_sm90)]
    impl<const S: usize> Mma for Sm90M16n8k<S> {
        const M: usize = 16;
        const N: usize = 8;
        const K: usize = S;
        const A_REGS: usize = S / 2;
        const B_REGS: usize = S / 4;
        const C_REGS: usize = 4;
        #[inline(always)]
        fn a_at(lane: usize, r: usize) -> (usize, usize) {
            (lane / 4 + 8 * (r % 2), lane % 4 + 4 * (r / 2))
        }
        #[inline(always)]
        fn b_at(lane: usize, r: usize) -> (usize, usize) {
            (lane % 4 + 4 * r, lane / 4)
        }
        #[inline(always)]
        fn c_at(lane: usize, e: usize) -> (usize, usize) {
            (lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2)
        }
        #[inline(always)]
        fn mma(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]) {
            let [mut d0, mut d1, mut d2, mut d3] = *d;
            let [a0, a1, a2, a3, a4, a5, a6, a7] = *a;
            let [b0, b1, b2, b3] = *b;
            unsafe {
                match S {
                    4 => mma_f64!("m16n8k4", [d0, d1, d2, d3], [a0, a1], [b0]),
                    8 => mma_f64!("m16n8k8", [d0, d1, d2, d3], [a0, a1, a2, a3], [b0, b1]),
                    _ => mma_f64!(
                        "m16n8k16",
                        [d0, d1, d2, d3],
                        [a0, a1, a2, a3, a4, a5, a6, a7],
                        [b0, b1, b2, b3]
                    ),
                }
            }
            *d = [d0, d1, d2, d3];
        }
    }

    /// The GEMM of the module docs with the atom `M`, k-steps of `K` and `STAGES`
    /// shared-memory stages; needs [`shared_bytes`]`(K, STAGES)` of dynamic shared memory
    /// and blocks of [`THREADS`] threads on a grid of `m / TILE x n / TILE` (rounded up).
    ///
    /// # Safety
    /// `g` holds device matrices of its sizes and leading dimensions.
    #[inline(always)]
    pub unsafe fn tile_gemm<M: Mma, const K: usize, const STAGES: usize>(g: Operands<f64>) {
        const LDS: usize = TILE + PAD;
        // Fragments of a warp tile (`MI x NI`), within the register arrays below.
        let (mi_n, ni_n) = (WARP_M / M::M, WARP_N / M::N);
        const {
            assert!(K % M::K == 0 && TILE * K % THREADS == 0 && STAGES >= 2);
            assert!(WARP_M % M::M == 0 && WARP_M / M::M <= 8 && WARP_N / M::N == 4);
            assert!(M::A_REGS <= 8 && M::B_REGS <= 4 && M::C_REGS <= 4);
            assert!(RESULTS == 64 && (WARP_M / M::M) * 4 * M::C_REGS == RESULTS);
        };
        let stage_len = 2 * K * LDS;
        let smem = dynamic_shared::<f64>();
        let t = thread_idx();
        let ln = lane();
        let w = warp();
        let (wm, wn) = (w % WARPS_M, w / WARPS_M);
        let m0 = block_idx() * TILE;
        let n0 = block_idx_y() * TILE;
        let ktiles = g.k.div_ceil(K);

        // cp.async of k-tile `kt` into stage `stage`: `A` as `K` rows of `TILE` (row
        // `kk` holds column `k0 + kk` of the block's rows), then `B` as `K` rows of `TILE`.
        let load = |stage: usize, kt: usize| {
            let base = unsafe { smem.add(stage * stage_len) };
            let k0 = kt * K;
            for r in 0..TILE * K / THREADS {
                let e = t + THREADS * r;
                let (i, kk) = (e % TILE, e / TILE);
                let (gi, gk) = (m0 + i, k0 + kk);
                let ok = gi < g.m && gk < g.k;
                let src = if ok {
                    unsafe { g.a.add(gi + gk * g.lda) }
                } else {
                    g.a
                };
                unsafe { cp_async_8(shared_addr(base.add(kk * LDS + i)), src, ok) };
                let (kk, jj) = (e % K, e / K);
                let (gk, gj) = (k0 + kk, n0 + jj);
                let ok = gk < g.k && gj < g.n;
                let src = if ok {
                    unsafe { g.b.add(gk + gj * g.ldb) }
                } else {
                    g.b
                };
                unsafe { cp_async_8(shared_addr(base.add(K * LDS + kk * LDS + jj)), src, ok) };
            }
        };

        // The thread's results in groups of 16 (the epilogue's unit): fragment
        // `(mi, ni)`'s register `e` is result `(mi NI + ni) C_REGS + e`.
        let mut acc = [[0.0f64; 16]; RESULTS / 16];
        // Prologue: the first STAGES - 1 tiles in flight, one commit group each.
        for s in 0..STAGES - 1 {
            if s < ktiles {
                load(s, s);
            }
            cp_async_commit();
        }
        for kt in 0..ktiles {
            // At most STAGES - 2 groups still in flight: tile kt has landed.
            cp_async_wait_all_but::<{ STAGES }>();
            sync_threads();
            // The stage refilled now was read in iteration kt - 1, which every warp has
            // finished (the barrier above).
            let next = kt + STAGES - 1;
            if next < ktiles {
                load(next % STAGES, next);
            }
            cp_async_commit();
            let sa = unsafe { smem.add((kt % STAGES) * stage_len + wm * WARP_M) };
            let sb = unsafe { smem.add((kt % STAGES) * stage_len + K * LDS + wn * WARP_N) };
            for kc in 0..K / M::K {
                let k0 = kc * M::K;
                // The `A` fragment of row `mi` of the warp tile.
                let a_frag = |mi: usize| {
                    let mut af = [0.0f64; 8];
                    unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7] {
                        if r < M::A_REGS {
                            let (i, kk) = M::a_at(ln, r);
                            af[r] = unsafe { *sa.add((k0 + kk) * LDS + mi * M::M + i) };
                        }
                    });
                    af
                };
                let mut bf = [[0.0f64; 4]; 4];
                unroll!(ni in [0, 1, 2, 3] {
                    unroll!(r in [0, 1, 2, 3] {
                        if r < M::B_REGS {
                            let (kk, j) = M::b_at(ln, r);
                            bf[ni][r] = unsafe { *sb.add((k0 + kk) * LDS + ni * M::N + j) };
                        }
                    });
                });
                unroll!(mi in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if mi < mi_n {
                        let af = a_frag(mi);
                        unroll!(ni in [0, 1, 2, 3] {
                            let f = (mi * ni_n + ni) * M::C_REGS;
                            let mut d = [0.0f64; 4];
                            unroll!(e in [0, 1, 2, 3] {
                                if e < M::C_REGS {
                                    d[e] = acc[(f + e) / 16][(f + e) % 16];
                                }
                            });
                            M::mma(&mut d, &af, &bf[ni]);
                            unroll!(e in [0, 1, 2, 3] {
                                if e < M::C_REGS {
                                    acc[(f + e) / 16][(f + e) % 16] = d[e];
                                }
                            });
                        });
                    }
                });
            }
        }
        // Epilogue: 16 results at a time, their loads of C before their stores.
        unroll!(q in [0, 1, 2, 3] {
            let at = |i: usize| {
                let f = 16 * q + i;
                let (mi, ni, e) = (f / (ni_n * M::C_REGS), (f / M::C_REGS) % ni_n, f % M::C_REGS);
                let (r, cc) = M::c_at(ln, e);
                let gi = m0 + wm * WARP_M + mi * M::M + r;
                let gj = n0 + wn * WARP_N + ni * M::N + cc;
                (gi < g.m && gj < g.n).then(|| unsafe { g.c.add(gi + gj * g.ldc) })
            };
            unsafe { scale_store(&acc[q], at, g.alpha, g.beta) };
        });
    }
}
