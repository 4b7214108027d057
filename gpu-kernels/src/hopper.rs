//! Kernels for Hopper (compute capability 9.0) and newer: the `f64` GEMM on the FP64
//! tensor cores with the `m16n8k*` shapes that PTX ISA 7.8 added for `sm_90`
//! (`mma.sync.aligned.m16n8k{4,8,16}.row.col.f64`). The `sm_80` shape `m8n8k4` that
//! `gemm_dmma_f64` (in [`crate::dense`]) uses runs at about half the H100's FP64
//! tensor-core rate; these shapes are the full-rate ones.
//!
//! These kernels exist only in the second PTX module, which build.rs compiles for `sm_90`
//! with `--cfg ferrocuda_sm90`; the host loads it on devices of compute capability 9.0 or
//! newer and keeps `gemm_dmma_f64` everywhere else.
//!
//! `gemm_dmma_sm90_k<S>_f64(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`:
//! `C <- alpha A B + beta C`, column-major, `A` `m x k`, `B` `k x n`. [`HOPPER_TILE`]-square
//! block tiles, 256 threads = 8 warps (2 along m, 4 along n) of 64x32 results = 4x4
//! fragments of 16x8; k-steps of [`HOPPER_K`] in [`HOPPER_STAGES`] shared-memory stages
//! filled by `cp.async` (one barrier per k-step); each k-step is `16 / S` instructions
//! of shape `m16n8k<S>` per fragment. `beta == 0` does not read `C`. Needs
//! [`HOPPER_SHARED_BYTES`] of dynamic shared memory.
//!
//! Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k4/k8/k16", `.f64`), with
//! `g = lane / 4`, `t = lane % 4`: `A` register `i` holds `(g + 8 (i % 2), t + 4 (i / 2))`,
//! `B` register `i` holds `(t + 4 i, g)`, the accumulator register `e` holds
//! `(g + 8 (e / 2), 2 t + e % 2)`.

/// Block tile of the Hopper GEMM (rows = columns).
pub const HOPPER_TILE: usize = 128;
/// k-step of the Hopper GEMM (one shared-memory stage).
pub const HOPPER_K: usize = 16;
/// Padding of each shared-memory row (elements): the fragment loads of a half-warp hit
/// 16 different banks.
pub const HOPPER_PAD: usize = 4;
/// Shared-memory stages (tiles in flight: `HOPPER_STAGES - 1`).
pub const HOPPER_STAGES: usize = 3;
/// Threads per block of the Hopper GEMM.
pub const HOPPER_THREADS: usize = 256;
/// Dynamic shared memory of the Hopper GEMM in bytes (over the default 48 KiB: the host
/// raises the kernel's limit).
pub const HOPPER_SHARED_BYTES: usize =
    HOPPER_STAGES * 2 * HOPPER_K * (HOPPER_TILE + HOPPER_PAD) * 8;

#[cfg(all(target_arch = "nvptx64", ferrocuda_sm90))]
mod kernels {
    use super::*;
    use crate::device::{
        block_idx, block_idx_y, cp_async_8, cp_async_commit, cp_async_wait, dynamic_shared, lane,
        scale_store, shared_addr, sync_threads, thread_idx, warp,
    };
    use crate::scalar::Scalar;
    use core::arch::asm;

    /// `d <- a b + d`, shape `m16n8k4` (`a`: 2 registers, `b`: 1).
    #[inline(always)]
    fn mma_k4(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]) {
        unsafe {
            asm!(
                "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}}}, {{{b0}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                d0 = inout(reg64) d[0],
                d1 = inout(reg64) d[1],
                d2 = inout(reg64) d[2],
                d3 = inout(reg64) d[3],
                a0 = in(reg64) a[0],
                a1 = in(reg64) a[1],
                b0 = in(reg64) b[0],
                options(nostack)
            );
        }
    }

    /// `d <- a b + d`, shape `m16n8k8` (`a`: 4 registers, `b`: 2).
    #[inline(always)]
    fn mma_k8(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]) {
        unsafe {
            asm!(
                "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                d0 = inout(reg64) d[0],
                d1 = inout(reg64) d[1],
                d2 = inout(reg64) d[2],
                d3 = inout(reg64) d[3],
                a0 = in(reg64) a[0],
                a1 = in(reg64) a[1],
                a2 = in(reg64) a[2],
                a3 = in(reg64) a[3],
                b0 = in(reg64) b[0],
                b1 = in(reg64) b[1],
                options(nostack)
            );
        }
    }

    /// `d <- a b + d`, shape `m16n8k16` (`a`: 8 registers, `b`: 4).
    #[inline(always)]
    fn mma_k16(d: &mut [f64; 4], a: &[f64; 8], b: &[f64; 4]) {
        unsafe {
            asm!(
                "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}, {a4}, {a5}, {a6}, {a7}}}, {{{b0}, {b1}, {b2}, {b3}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                d0 = inout(reg64) d[0],
                d1 = inout(reg64) d[1],
                d2 = inout(reg64) d[2],
                d3 = inout(reg64) d[3],
                a0 = in(reg64) a[0],
                a1 = in(reg64) a[1],
                a2 = in(reg64) a[2],
                a3 = in(reg64) a[3],
                a4 = in(reg64) a[4],
                a5 = in(reg64) a[5],
                a6 = in(reg64) a[6],
                a7 = in(reg64) a[7],
                b0 = in(reg64) b[0],
                b1 = in(reg64) b[1],
                b2 = in(reg64) b[2],
                b3 = in(reg64) b[3],
                options(nostack)
            );
        }
    }

    /// The GEMM with instructions of shape `m16n8k<S>` (`S` in 4, 8, 16); see the module
    /// docs.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm<const S: usize>(
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: *const f64,
        lda: usize,
        b: *const f64,
        ldb: usize,
        beta: f64,
        c: *mut f64,
        ldc: usize,
    ) {
        const LDS: usize = HOPPER_TILE + HOPPER_PAD;
        const STAGE: usize = 2 * HOPPER_K * LDS;
        let smem = dynamic_shared::<f64>();
        let t = thread_idx();
        let ln = lane();
        let w = warp();
        let (wm, wn) = (w % 2, w / 2);
        let m0 = block_idx() * HOPPER_TILE;
        let n0 = block_idx_y() * HOPPER_TILE;
        let ktiles = k.div_ceil(HOPPER_K);

        let load = |stage: usize, kt: usize| {
            let base = unsafe { smem.add(stage * STAGE) };
            let k0 = kt * HOPPER_K;
            for r in 0..HOPPER_TILE * HOPPER_K / HOPPER_THREADS {
                let e = t + HOPPER_THREADS * r;
                let (i, kk) = (e % HOPPER_TILE, e / HOPPER_TILE);
                let (gi, gk) = (m0 + i, k0 + kk);
                let ok = gi < m && gk < k;
                let src = if ok {
                    unsafe { a.add(gi + gk * lda) }
                } else {
                    a
                };
                unsafe { cp_async_8(shared_addr(base.add(kk * LDS + i)), src, ok) };
                let (kk, jj) = (e % HOPPER_K, e / HOPPER_K);
                let (gk, gj) = (k0 + kk, n0 + jj);
                let ok = gk < k && gj < n;
                let src = if ok {
                    unsafe { b.add(gk + gj * ldb) }
                } else {
                    b
                };
                unsafe {
                    cp_async_8(
                        shared_addr(base.add(HOPPER_K * LDS + kk * LDS + jj)),
                        src,
                        ok,
                    )
                };
            }
        };

        let mut acc = [[[0.0f64; 4]; 4]; 4];
        // Prologue: the first HOPPER_STAGES - 1 tiles in flight, one commit group each.
        for s in 0..HOPPER_STAGES - 1 {
            if s < ktiles {
                load(s, s);
            }
            cp_async_commit();
        }
        let (g, tq) = (ln / 4, ln % 4);
        for kt in 0..ktiles {
            // At most HOPPER_STAGES - 2 groups still in flight: tile kt has landed.
            cp_async_wait::<{ HOPPER_STAGES as u32 - 2 }>();
            sync_threads();
            // The stage refilled now was read in iteration kt - 1, which every warp has
            // finished (the barrier above).
            let next = kt + HOPPER_STAGES - 1;
            if next < ktiles {
                load(next % HOPPER_STAGES, next);
            }
            cp_async_commit();
            let sa = unsafe { smem.add((kt % HOPPER_STAGES) * STAGE + wm * 64 + g) };
            let sb =
                unsafe { smem.add((kt % HOPPER_STAGES) * STAGE + HOPPER_K * LDS + wn * 32 + g) };
            for kc in 0..HOPPER_K / S {
                let kb = kc * S + tq;
                let mut bf = [[0.0f64; 4]; 4];
                unroll!(ni in [0, 1, 2, 3] {
                    for i in 0..S / 4 {
                        bf[ni][i] = unsafe { *sb.add((kb + 4 * i) * LDS + ni * 8) };
                    }
                });
                unroll!(mi in [0, 1, 2, 3] {
                    let mut af = [0.0f64; 8];
                    for i in 0..S / 2 {
                        af[i] = unsafe { *sa.add((kb + 4 * (i / 2)) * LDS + mi * 16 + 8 * (i % 2)) };
                    }
                    unroll!(ni in [0, 1, 2, 3] {
                        match S {
                            4 => mma_k4(&mut acc[mi][ni], &af, &bf[ni]),
                            8 => mma_k8(&mut acc[mi][ni], &af, &bf[ni]),
                            _ => mma_k16(&mut acc[mi][ni], &af, &bf[ni]),
                        }
                    });
                });
            }
        }
        // One fragment row (16 results) at a time, its loads of C before its stores.
        unroll!(mi in [0, 1, 2, 3] {
            let mut v = [0.0f64; 16];
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                v[i] = acc[mi][i / 4][i % 4];
            });
            let at = |i: usize| {
                let (ni, e) = (i / 4, i % 4);
                let gi = m0 + wm * 64 + mi * 16 + g + 8 * (e / 2);
                let gj = n0 + wn * 32 + ni * 8 + 2 * tq + e % 2;
                (gi < m && gj < n).then(|| unsafe { c.add(gi + gj * ldc) })
            };
            unsafe { scale_store(&v, at, alpha, beta) };
        });
    }
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_sm90))]
use crate::{instances, kernel, scalar::RealScalar};

/// `gemm_dmma_sm90_k<S>_f64`: see the module docs. Generic in `T` only so that the
/// host's generic LU code names one handle type; instantiated for `f64` only.
#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_sm90))]
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_dmma_sm90<T: RealScalar, const S: usize>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: *const T,
    lda: usize,
    b: *const T,
    ldb: usize,
    beta: T,
    c: *mut T,
    ldc: usize,
) {
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    unsafe {
        kernels::gemm::<S>(
            m,
            n,
            k,
            alpha,
            a.cast(),
            lda,
            b.cast(),
            ldb,
            beta,
            c.cast(),
            ldc,
        )
    }
}

#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_sm90))]
instances! {
    pub const GEMM_DMMA_SM90_K4_F64 = gemm_dmma_sm90::<f64, 4>("gemm_dmma_sm90_k4_f64");
    pub const GEMM_DMMA_SM90_K8_F64 = gemm_dmma_sm90::<f64, 8>("gemm_dmma_sm90_k8_f64");
    pub const GEMM_DMMA_SM90_K16_F64 = gemm_dmma_sm90::<f64, 16>("gemm_dmma_sm90_k16_f64");
}

/// The Hopper GEMMs by instruction shape `m16n8k4`, `m16n8k8`, `m16n8k16`.
#[cfg(not(target_arch = "nvptx64"))]
pub const SM90_GEMM_F64: [Kernel<GemmDmmaSm90<'static, f64>>; 3] = [
    GEMM_DMMA_SM90_K4_F64,
    GEMM_DMMA_SM90_K8_F64,
    GEMM_DMMA_SM90_K16_F64,
];

/// The same arguments as the `sm_80` GEMMs take ([`crate::dense::Gemm`]).
#[cfg(not(target_arch = "nvptx64"))]
impl<'a, T: RealScalar> From<crate::dense::Gemm<'a, T>> for GemmDmmaSm90<'a, T> {
    fn from(g: crate::dense::Gemm<'a, T>) -> Self {
        GemmDmmaSm90 {
            m: g.m,
            n: g.n,
            k: g.k,
            alpha: g.alpha,
            a: g.a,
            lda: g.lda,
            b: g.b,
            ldb: g.ldb,
            beta: g.beta,
            c: g.c,
            ldc: g.ldc,
        }
    }
}
