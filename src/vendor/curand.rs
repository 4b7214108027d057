//! cuRAND: the pseudo-random generators the RNG benchmark compares SFMT against
//! (MTGP32, MT19937, Philox4x32-10). The raw calls live in the host crate
//! ([`ferrocuda_host::vendor::curand`]); this wrapper reports ferrocuda's [`Error`].

use ferrocuda_host::vendor::curand as raw;
use ferrocuda_host::{DeviceSliceMut, Gpu};

pub use raw::CurandKind;

#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;

/// A cuRAND generator bound to one stream of one GPU.
#[derive(Debug)]
pub struct Curand(raw::Curand);

impl Curand {
    /// Loads cuRAND and creates a generator of `kind` seeded with `seed` on `gpu`'s
    /// stream. Errors: [`Error::Vendor`] where the library is missing or fails.
    pub fn new(gpu: &Gpu, kind: CurandKind, seed: u64) -> Result<Self> {
        Ok(Curand(raw::Curand::new(gpu, kind, seed)?))
    }

    /// The generator's kind.
    pub fn kind(&self) -> CurandKind {
        self.0.kind()
    }

    /// `curandGenerate`: fills `out` with 32-bit outputs, queued on the stream.
    pub fn generate_u32(&self, out: &mut impl DeviceSliceMut<u32>) -> Result<()> {
        Ok(self.0.generate_u32(out)?)
    }

    /// `curandGenerateNormal` (mean 0, standard deviation 1): fills `out` (even length,
    /// as cuRAND requires for its Box-Muller pairs).
    pub fn generate_normal_f32(&self, out: &mut impl DeviceSliceMut<f32>) -> Result<()> {
        Ok(self.0.generate_normal_f32(out)?)
    }
}
