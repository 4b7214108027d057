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
//! `C <- alpha A B + beta C`, column-major, `A` `m x k`, `B` `k x n`: the tile skeleton of
//! [`crate::gemm`] with the atom `m16n8k<S>` (`Sm90M16n8k<S>`, its fragment layouts
//! documented there). [`HOPPER_TILE`]-square block tiles, [`HOPPER_THREADS`] threads =
//! 8 warps (2 along m, 4 along n) of 64x32 results = 4x4 fragments of 16x8; k-steps of
//! [`HOPPER_K`] in [`HOPPER_STAGES`] shared-memory stages filled by `cp.async` (one
//! barrier per k-step); each k-step is `16 / S` instructions per fragment. `beta == 0`
//! does not read `C`. Needs [`HOPPER_SHARED_BYTES`] of dynamic shared memory.

/// Block tile of the Hopper GEMM (rows = columns).
pub const HOPPER_TILE: usize = crate::gemm::TILE;
/// k-step of the Hopper GEMM (one shared-memory stage).
pub const HOPPER_K: usize = 16;
/// Shared-memory stages (tiles in flight: `HOPPER_STAGES - 1`).
pub const HOPPER_STAGES: usize = 3;
/// Threads per block of the Hopper GEMM.
pub const HOPPER_THREADS: usize = crate::gemm::THREADS;
/// Dynamic shared memory of the Hopper GEMM in bytes (over the default 48 KiB: the host
/// raises the kernel's limit).
pub const HOPPER_SHARED_BYTES: usize = crate::gemm::shared_bytes(HOPPER_K, HOPPER_STAGES);

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
    #[rustfmt::skip]
    let g = crate::gemm::Operands { m, n, k, alpha, a, lda, b, ldb, beta, c, ldc };
    unsafe {
        crate::gemm::tile_gemm::<crate::gemm::Sm90M16n8k<S>, HOPPER_K, HOPPER_STAGES>(g.to_f64())
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

/// `probe_dmma_sm90_k<S>_f64`: the DMMA rate probe ([`crate::rate::dmma_chains`]) with the
/// Hopper shape `m16n8k<S>`, the atom of [`gemm_dmma_sm90`]: what `ferrocuda probe`
/// measures as the ceiling of that GEMM. The arguments of `probe_dmma_f64`.
#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_sm90))]
#[kernel]
pub unsafe fn probe_dmma_sm90<const S: usize>(
    iters: u32,
    a: f64,
    b: f64,
    c0: f64,
    out: *mut f64,
    clocks: *mut u64,
) {
    unsafe { crate::rate::dmma_chains::<crate::gemm::Sm90M16n8k<S>>(iters, a, b, c0, out, clocks) }
}

#[cfg(any(not(target_arch = "nvptx64"), ferrocuda_sm90))]
instances! {
    pub const PROBE_DMMA_SM90_K4_F64 = probe_dmma_sm90::<4>("probe_dmma_sm90_k4_f64");
    pub const PROBE_DMMA_SM90_K8_F64 = probe_dmma_sm90::<8>("probe_dmma_sm90_k8_f64");
    pub const PROBE_DMMA_SM90_K16_F64 = probe_dmma_sm90::<16>("probe_dmma_sm90_k16_f64");
}

/// The DMMA probes by instruction shape `m16n8k4`, `m16n8k8`, `m16n8k16`.
#[cfg(not(target_arch = "nvptx64"))]
pub const SM90_PROBE_DMMA: [Kernel<ProbeDmmaSm90<'static>>; 3] = [
    PROBE_DMMA_SM90_K4_F64,
    PROBE_DMMA_SM90_K8_F64,
    PROBE_DMMA_SM90_K16_F64,
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
