//! cuRAND: the pseudo-random generators the RNG benchmark compares SFMT against
//! (MTGP32, MT19937, Philox4x32-10), generating into device buffers on the handle's
//! stream.

use cudarc::curand::sys as cr;

use super::{check as check_as, loaded};
use crate::error::{Error, Result, check_device};
use crate::{DeviceSliceMut, Gpu};

const LIB: &str = "cuRAND";

fn check(call: &'static str, status: cr::curandStatus_t) -> Result<()> {
    check_as(
        LIB,
        call,
        status == cr::curandStatus_t::CURAND_STATUS_SUCCESS,
        status,
    )
}

/// The cuRAND generators used as baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CurandKind {
    /// `CURAND_RNG_PSEUDO_MTGP32`: Mersenne Twister for GPUs (period 2^11213 - 1).
    Mtgp32,
    /// `CURAND_RNG_PSEUDO_MT19937`: MT19937 (cuRAND's GPU implementation).
    Mt19937,
    /// `CURAND_RNG_PSEUDO_PHILOX4_32_10`: the counter-based Philox4x32-10.
    Philox4x32_10,
}

impl CurandKind {
    /// Every kind, in the benchmark's order.
    pub const ALL: [CurandKind; 3] = [
        CurandKind::Mtgp32,
        CurandKind::Mt19937,
        CurandKind::Philox4x32_10,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            CurandKind::Mtgp32 => "cuRAND MTGP32",
            CurandKind::Mt19937 => "cuRAND MT19937",
            CurandKind::Philox4x32_10 => "cuRAND Philox4x32-10",
        }
    }

    fn raw(self) -> cr::curandRngType_t {
        match self {
            CurandKind::Mtgp32 => cr::curandRngType_t::CURAND_RNG_PSEUDO_MTGP32,
            CurandKind::Mt19937 => cr::curandRngType_t::CURAND_RNG_PSEUDO_MT19937,
            CurandKind::Philox4x32_10 => cr::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10,
        }
    }
}

/// A cuRAND generator bound to one stream of one GPU.
pub struct Curand {
    gpu: Gpu,
    gen_: cr::curandGenerator_t,
    kind: CurandKind,
}

impl std::fmt::Debug for Curand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Curand").field("kind", &self.kind).finish()
    }
}

impl Curand {
    /// Loads cuRAND and creates a generator of `kind` seeded with `seed` on `gpu`'s
    /// stream. Errors: [`Error::Vendor`] where the library is missing or fails.
    pub fn new(gpu: &Gpu, kind: CurandKind, seed: u64) -> Result<Self> {
        // SAFETY: only tries to dlopen the library.
        loaded(LIB, "libcurand.so", unsafe { cr::is_culib_present() })?;
        gpu.bind_to_thread()?;
        let mut g = std::ptr::null_mut();
        // SAFETY: plain generator creation into a local out-pointer.
        check("curandCreateGenerator", unsafe {
            cr::curandCreateGenerator(&mut g, kind.raw())
        })?;
        // Owned from here on: an error below destroys it in `Drop`.
        let this = Curand {
            gpu: gpu.clone(),
            gen_: g,
            kind,
        };
        // SAFETY: a valid generator; the stream outlives it (`this.gpu` keeps it alive).
        check("curandSetStream", unsafe {
            cr::curandSetStream(g, gpu.raw_stream() as cr::cudaStream_t)
        })?;
        // SAFETY: a valid generator.
        check("curandSetPseudoRandomGeneratorSeed", unsafe {
            cr::curandSetPseudoRandomGeneratorSeed(g, seed)
        })?;
        Ok(this)
    }

    /// The generator's kind.
    pub fn kind(&self) -> CurandKind {
        self.kind
    }

    /// `curandGenerate`: fills `out` with 32-bit outputs, queued on the stream.
    pub fn generate_u32(&self, out: &mut impl DeviceSliceMut<u32>) -> Result<()> {
        check_device("curand::generate_u32", "out", &self.gpu, out.gpu())?;
        self.gpu.bind_to_thread()?;
        // SAFETY: `out` holds out.len() u32 on this generator's device (checked above;
        // the sealed trait guarantees pointer and length); `&mut` excludes aliasing.
        check("curandGenerate", unsafe {
            cr::curandGenerate(self.gen_, out.device_ptr() as *mut u32, out.len())
        })
    }

    /// `curandGenerateNormal` (mean 0, standard deviation 1): fills `out` (even length,
    /// as cuRAND requires for its Box-Muller pairs).
    pub fn generate_normal_f32(&self, out: &mut impl DeviceSliceMut<f32>) -> Result<()> {
        check_device("curand::generate_normal_f32", "out", &self.gpu, out.gpu())?;
        if out.len() % 2 == 1 {
            return Err(Error::InvalidArgument {
                op: "curand::generate_normal_f32",
                reason: format!(
                    "cuRAND's normals come in pairs: length {} is odd",
                    out.len()
                ),
            });
        }
        self.gpu.bind_to_thread()?;
        // SAFETY: as in `generate_u32`, with the even length cuRAND requires.
        check("curandGenerateNormal", unsafe {
            cr::curandGenerateNormal(self.gen_, out.device_ptr() as *mut f32, out.len(), 0.0, 1.0)
        })
    }
}

impl Drop for Curand {
    fn drop(&mut self) {
        let _ = self.gpu.bind_to_thread();
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { cr::curandDestroyGenerator(self.gen_) };
    }
}
