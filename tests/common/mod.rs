//! Shared helpers of the integration tests: opening the GPU (or skipping), seeded random
//! data, NaN poison, the lock for the huge cases, and comparisons that name the case.
//!
//! Each test crate uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod krylov;
pub mod sparse;

use std::sync::{Mutex, MutexGuard, PoisonError};

use ferrocuda::blas1::{Element, reference};
use ferrocuda::gpu::Gpu;
use ferrocuda::{Complex, RealScalar};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// Opens device 0, or returns `None` (after saying so on stderr) where this machine has
/// no CUDA driver or device. With `FERROCUDA_REQUIRE_GPU=1` a missing GPU is a failure.
/// Any other error opening the device is a failure too.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match ferrocuda::gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) if e.is_no_device() => {
            if std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: FERROCUDA_REQUIRE_GPU=1 but {e}");
            }
            // Straight to the stderr handle, not `eprintln!`: libtest captures the print
            // macros of passing tests, and a skip must be visible in every run.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: GPU part skipped ({e})");
            None
        }
        Err(e) => panic!("{test}: opening GPU 0 failed: {e}"),
    }
}

/// Registers every module the build made, the reproduction modules
/// (`ferrocuda_kernels::repro::*`) included, which in a program only `ferrocuda-repro`
/// registers: for the tests that check or load every declared kernel.
pub fn register_all_modules() {
    ferrocuda::gpu::register_modules();
    ferrocuda::kernels::repro::register();
}

/// Held by every test while it works at size 2^27, so that at most one huge case (a few
/// GiB of host memory) runs at a time. A panicking holder does not poison it for others.
pub static LARGE: Mutex<()> = Mutex::new(());

/// Takes [`LARGE`], ignoring poisoning.
pub fn large_lock() -> MutexGuard<'static, ()> {
    LARGE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Short name of a scalar type for messages: `f32`, `f64`, `c32`, `c64`.
pub fn tname<T: Element>() -> &'static str {
    T::SUFFIX
}

/// A seed that differs per scalar type, size and purpose, so no two cases share data.
pub fn seed_for<T: Element>(n: usize, salt: u64) -> u64 {
    let t = match T::SUFFIX {
        "f32" => 1,
        "f64" => 2,
        "c32" => 3,
        _ => 4,
    };
    (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ t
}

/// One value with real and imaginary parts uniform in [-1, 1] (real types ignore the
/// imaginary draw).
pub fn random_scalar_from<T: Element>(rng: &mut SmallRng) -> T {
    let re: f64 = rng.random_range(-1.0..=1.0);
    let im: f64 = rng.random_range(-1.0..=1.0);
    T::from_parts(
        <T::Real as RealScalar>::from_f64(re),
        <T::Real as RealScalar>::from_f64(im),
    )
}

/// One seeded random value (for `alpha`, `beta`, fill values).
pub fn random_scalar<T: Element>(seed: u64) -> T {
    random_scalar_from(&mut SmallRng::seed_from_u64(seed))
}

/// `n` seeded random values, parts uniform in [-1, 1]. Generated in fixed chunks, each
/// from its own seeded generator, so the result does not depend on the thread count.
pub fn random_vec<T: Element>(n: usize, seed: u64) -> Vec<T> {
    const CHUNK: usize = 1 << 16;
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x94D0_49BB_1331_11EB));
        chunk
            .iter_mut()
            .for_each(|v| *v = random_scalar_from(&mut rng));
    });
    v
}

/// NaN in every part: uploaded into output buffers before a GPU call, so any element the
/// call fails to write shows up.
pub fn nan<T: Element>() -> T {
    let n = <T::Real as RealScalar>::from_f64(f64::NAN);
    T::from_parts(n, n)
}

/// `n` copies of [`nan`].
pub fn poison<T: Element>(n: usize) -> Vec<T> {
    vec![nan::<T>(); n]
}

/// Whether two values have identical bits.
pub fn same_bits<T: Element>(a: T, b: T) -> bool {
    bytemuck::bytes_of(&a) == bytemuck::bytes_of(&b)
}

/// Asserts `got` and `want` are equal bit for bit, naming the first differing element.
pub fn assert_bits_eq<T: Element>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let (g, w): (&[u8], &[u8]) = (bytemuck::cast_slice(got), bytemuck::cast_slice(want));
    if g == w {
        return;
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| !same_bits(got[i], want[i]))
        .collect();
    let i = bad[0];
    panic!(
        "{what}: {} of {} elements differ in their bits; first at index {i}: got {:?}, want {:?}",
        bad.len(),
        got.len(),
        got[i],
        want[i]
    );
}

/// [`assert_bits_eq`], except that a NaN part matches any NaN: the GPU returns the
/// canonical NaN where the CPU keeps an operand's payload.
pub fn assert_bits_eq_nan<T: Element>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let part = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
    let same = |a: T, b: T| {
        let (a, b) = (reference::widen(a), reference::widen(b));
        part(a.re, b.re) && part(a.im, b.im)
    };
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(got[i], want[i])).collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{what}: {} of {} elements differ (NaN matching any NaN); first at index {i}: got {:?}, want {:?}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// The request and bytes of the [`ferrocuda::Error::OutOfHostMemory`] that `r` must be
/// (in its sparse form); panics with what `r` is otherwise.
pub fn out_of_host_memory<T: std::fmt::Debug>(
    r: Result<T, ferrocuda::sparse::SparseError>,
) -> (String, u128) {
    match r.map_err(ferrocuda::Error::from) {
        Err(ferrocuda::Error::OutOfHostMemory {
            what, requested, ..
        }) => (what, requested),
        other => panic!("expected an out-of-memory error, got {other:?}"),
    }
}

/// `|v|` in `f64` (complex modulus for complex types)./// `|v|` in `f64` (complex modulus for complex types).
pub fn abs<T: Element>(v: T) -> f64 {
    reference::widen(v).norm()
}

/// Rounding bound of one element-wise op, in units of `eps * scale`: the FMA-based result
/// and the `f64` reference each contribute; complex products add a few roundings more.
pub fn elementwise_factor<T: Element>() -> f64 {
    if T::IS_COMPLEX { 4.0 } else { 2.0 }
}

/// Asserts each `got[i]` is within `factor * eps * scale[i]` of the exact-ish reference
/// `want[i]`, component by component.
pub fn assert_close_elementwise<T: Element>(
    what: &str,
    got: &[T],
    want: &[Complex<f64>],
    scale: &[f64],
) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let factor = elementwise_factor::<T>() * reference::eps::<T>();
    for (i, ((&g, w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let g = reference::widen(g);
        let tol = factor * s;
        let (dre, dim) = ((g.re - w.re).abs(), (g.im - w.im).abs());
        assert!(
            dre <= tol && dim <= tol,
            "{what}: element {i} is {g} but the f64 reference is {w} (error {dre:e}, {dim:e} > bound {tol:e})"
        );
    }
}

/// Error bound of a reduction over `n` terms whose absolute values sum to `magnitude`:
/// `(4 sqrt(n) + 4) eps magnitude` (a generous multiple of the statistical error of the
/// summation orders used; the worst case of a serial sum would be `n eps magnitude`).
pub fn reduction_tol<T: Element>(n: usize, magnitude: f64) -> f64 {
    (4.0 * (n as f64).sqrt() + 4.0) * reference::eps::<T>() * magnitude
}

/// Asserts a dot-like reduction is within [`reduction_tol`] of the reference, per component.
pub fn assert_reduction_close<T: Element>(
    what: &str,
    got: T,
    want: Complex<f64>,
    magnitude: f64,
    n: usize,
) {
    let g = reference::widen(got);
    let tol = reduction_tol::<T>(n, magnitude);
    let (dre, dim) = ((g.re - want.re).abs(), (g.im - want.im).abs());
    assert!(
        dre <= tol && dim <= tol,
        "{what}: got {g}, the f64 reference is {want} (error {dre:e}, {dim:e} > bound {tol:e}, n = {n}, magnitude {magnitude:e})"
    );
}

/// Asserts a 2-norm is within the reduction bound of the reference: the sum of squares is
/// off by at most [`reduction_tol`] of `want^2`, the square root halves that, plus one
/// rounding of the root.
pub fn assert_nrm2_close<T: Element>(what: &str, got: f64, want: f64, n: usize) {
    let tol = reduction_tol::<T>(n, want * want) / (2.0 * want).max(f64::MIN_POSITIVE)
        + reference::eps::<T>() * want;
    let err = (got - want).abs();
    assert!(
        err <= tol,
        "{what}: got {got}, the f64 reference is {want} (error {err:e} > bound {tol:e}, n = {n})"
    );
}

/// Chunk of the parallel evaluation of the reference at large sizes.
const REFERENCE_CHUNK: usize = 1 << 16;

/// [`reference::dot`] evaluated chunk-wise on all cores, the chunk sums added in order in
/// `f64` (for `n <= 65536` it is `reference::dot` itself). Keeps the 2^27 cases fast.
pub fn ref_dot<T: Element>(x: &[T], y: &[T]) -> Complex<f64> {
    let parts: Vec<Complex<f64>> = x
        .par_chunks(REFERENCE_CHUNK)
        .zip(y.par_chunks(REFERENCE_CHUNK))
        .map(|(a, b)| reference::dot(a, b))
        .collect();
    parts.into_iter().fold(Complex::new(0.0, 0.0), |a, b| a + b)
}

/// [`reference::dot_magnitude`], chunk-wise on all cores like [`ref_dot`].
pub fn ref_dot_magnitude<T: Element>(x: &[T], y: &[T]) -> f64 {
    let parts: Vec<f64> = x
        .par_chunks(REFERENCE_CHUNK)
        .zip(y.par_chunks(REFERENCE_CHUNK))
        .map(|(a, b)| reference::dot_magnitude(a, b))
        .collect();
    parts.into_iter().fold(0.0, |a, b| a + b)
}

/// [`reference::nrm2`], chunk-wise on all cores like [`ref_dot`] (the chunks' squared
/// norms are summed in `f64`, then the root taken).
pub fn ref_nrm2<T: Element>(x: &[T]) -> f64 {
    if x.len() <= REFERENCE_CHUNK {
        return reference::nrm2(x);
    }
    let parts: Vec<f64> = x
        .par_chunks(REFERENCE_CHUNK)
        .map(|c| {
            let r = reference::nrm2(c);
            r * r
        })
        .collect();
    parts.into_iter().fold(0.0, |a, b| a + b).sqrt()
}

/// `n` seeded values whose parts are drawn from {-2, -1, 1, 2}. Every product and every
/// partial sum of a dot product or squared norm over them is an integer of magnitude at
/// most `8 n`, exact in `f32` for `n <= 2^21` and in `f64` for `n <= 2^50`, so any
/// summation order gives the exact result: reductions must match it bit for bit.
pub fn small_int_vec<T: Element>(n: usize, seed: u64) -> Vec<T> {
    const CHUNK: usize = 1 << 16;
    const VALUES: [f64; 4] = [-2.0, -1.0, 1.0, 2.0];
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        chunk.iter_mut().for_each(|v| {
            let re = VALUES[rng.random_range(0..4)];
            let im = VALUES[rng.random_range(0..4)];
            *v = T::from_parts(
                <T::Real as RealScalar>::from_f64(re),
                <T::Real as RealScalar>::from_f64(im),
            );
        });
    });
    v
}

/// Largest `n` for which [`small_int_vec`] reductions are exact in `T`'s precision.
pub fn exact_int_limit<T: Element>() -> usize {
    if reference::eps::<T>() > 1e-10 {
        1 << 21
    } else {
        1 << 50
    }
}

/// The exact dot product of integer-valued vectors as a `T` (the `f64` reference is exact
/// for them, and so is the conversion to `T` below [`exact_int_limit`]).
pub fn exact_dot<T: Element>(x: &[T], y: &[T]) -> T {
    let d = ref_dot(x, y);
    T::from_parts(
        <T::Real as RealScalar>::from_f64(d.re),
        <T::Real as RealScalar>::from_f64(d.im),
    )
}

/// The correctly rounded 2-norm of an integer-valued vector: the square root (correctly
/// rounded on both paths) of the exact sum of squares.
pub fn exact_nrm2<T: Element>(x: &[T]) -> T::Real {
    // (A plain f64 `sum` of nothing is -0.0; the norm of nothing is +0.0.)
    let s: f64 = x
        .par_iter()
        .map(|&v| reference::widen(v).norm_sqr())
        .reduce(|| 0.0, |a, b| a + b);
    <T::Real as RealScalar>::from_f64(s).sqrt()
}

/// A random `m x n` COO matrix: about 20% empty rows, entry probability `p` elsewhere,
/// and about 5% duplicate entries (summed by the formats).
pub fn random_coo<T: Element>(m: usize, n: usize, p: f64, seed: u64) -> ferrocuda::sparse::Coo<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut a = ferrocuda::sparse::Coo::empty(m, n).expect("empty COO");
    for i in 0..m {
        if rng.random_bool(0.2) {
            continue; // empty row
        }
        for j in 0..n {
            if rng.random_bool(p) {
                a.push(i, j, random_scalar_from::<T>(&mut rng))
                    .expect("push");
                if rng.random_bool(0.05) {
                    a.push(i, j, random_scalar_from::<T>(&mut rng))
                        .expect("push");
                }
            }
        }
    }
    a
}

/// Asserts that `e` is [`ferrocuda::Error::OutOfHostMemory`] and that its message names
/// every one of `names` (the request's dimensions) and the bytes.
pub fn assert_out_of_host_memory(e: &ferrocuda::Error, names: &[&str]) {
    let msg = e.to_string();
    assert!(
        matches!(e, ferrocuda::Error::OutOfHostMemory { .. })
            && msg.contains("bytes")
            && names.iter().all(|n| msg.contains(n)),
        "expected an out-of-host-memory error naming {names:?}: {msg}"
    );
}

/// Calls `f::<A, V>(args)` for every (matrix, vector) scalar pair the library supports:
/// the four same-type pairs, then real matrices with complex vectors.
#[allow(unused_macros)]
macro_rules! each_scalar_pair {
    ($f:ident($($arg:expr),*)) => {{
        use ::ferrocuda::Complex;
        $f::<f32, f32>($($arg),*);
        $f::<f64, f64>($($arg),*);
        $f::<Complex<f32>, Complex<f32>>($($arg),*);
        $f::<Complex<f64>, Complex<f64>>($($arg),*);
        $f::<f32, Complex<f32>>($($arg),*);
        $f::<f64, Complex<f64>>($($arg),*);
    }};
}
#[allow(unused_imports)]
pub(crate) use each_scalar_pair;

/// A row-major BCSR matrix of `b x b` blocks, `n_block_rows x n_block_cols` blocks, from
/// its arrays; panics (naming the test's mistake) where they are not valid.
pub fn bcsr<T: Element>(
    b: usize,
    (n_block_rows, n_block_cols): (usize, usize),
    row_ptr: Vec<usize>,
    col_idx: Vec<ferrocuda::sparse::Index>,
    values: Vec<T>,
) -> ferrocuda::sparse::Bcsr<T> {
    use ferrocuda::sparse::{Bcsr, BcsrParts, BlockLayout};
    Bcsr::from_parts(BcsrParts {
        b,
        layout: BlockLayout::RowMajor,
        n_block_rows,
        n_block_cols,
        row_ptr,
        col_idx,
        values,
    })
    .unwrap_or_else(|r| panic!("a test built an invalid BCSR matrix: {}", r.error))
}
