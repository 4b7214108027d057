//! BLAS-1 integration tests.
//!
//! CPU part (always runs): every operation for f32, f64, c32, c64 against the serial
//! `f64` oracle in `ferrocuda::blas1::reference`, determinism, errors.
//!
//! GPU part (skipped without a device, a failure with `FERROCUDA_REQUIRE_GPU=1`):
//! element-wise results equal the CPU's bit for bit (the design claim: both paths use
//! the same FMA-based per-element functions); reductions are within rounding of the CPU
//! and the oracle and deterministic; outputs are poisoned with NaN first, so unwritten
//! elements show up; views touch only their window; errors are typed.

use crate::common;

use common::*;
use ferrocuda::blas1::{Element, cpu, gpu, reference};
use ferrocuda::gpu::{DeviceBuffer, DeviceSlice, Gpu};
use ferrocuda::{Complex, Error, RealScalar};

/// Sizes of the CPU tests: empty, single, around a warp, and around the rayon chunk.
const CPU_SIZES: &[usize] = &[0, 1, 31, 32, 33, 1000, cpu::CHUNK, cpu::CHUNK + 1, 100_003];
/// Sizes every GPU operation sees for every type.
const GPU_SIZES: &[usize] = &[0, 1, 31, 32, 33, 1_000_003];
/// The huge size (run under [`LARGE`]).
const LARGE_N: usize = 1 << 27;
/// Above this size the element-wise GPU tests skip the (serial) reference comparison;
/// the bit-for-bit comparison with the CPU still covers every element.
const REFERENCE_LIMIT: usize = 1 << 21;

/// Calls a generic test function for each of the four scalar types.
macro_rules! for_all_types {
    ($f:ident ( $($arg:expr),* )) => {{
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<Complex<f32>>($($arg),*);
        $f::<Complex<f64>>($($arg),*);
    }};
}

// ------------------------------------------------------------------------------------
// Helpers for the GPU part.

fn upload<T: Element>(gpu: &Gpu, data: &[T], ctx: &str) -> DeviceBuffer<T> {
    gpu.upload(data)
        .unwrap_or_else(|e| panic!("{ctx}: upload of {} elements failed: {e}", data.len()))
}

fn download<T: Element>(buf: &DeviceBuffer<T>, ctx: &str) -> Vec<T> {
    buf.download()
        .unwrap_or_else(|e| panic!("{ctx}: download of {} elements failed: {e}", buf.len()))
}

/// The error of a view that must fail (views have no `Debug`, so no `expect_err`).
fn range_err<V>(r: Result<V, ferrocuda_host::Error>, what: &str) -> ferrocuda_host::Error {
    match r {
        Ok(_) => panic!("{what} must fail: the range is outside the buffer"),
        Err(e) => e,
    }
}

fn ok<R>(r: ferrocuda::Result<R>, ctx: &str, call: &str) -> R {
    r.unwrap_or_else(|e| panic!("{ctx}: {call} failed: {e}"))
}

// ------------------------------------------------------------------------------------
// CPU against the reference.

fn fill_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::fill {} n={n}", tname::<T>());
    let value = random_scalar::<T>(seed_for::<T>(n, 1));
    let mut x = random_vec::<T>(n, seed_for::<T>(n, 2));
    cpu::fill(&mut x, value);
    assert_bits_eq(&ctx, &x, &vec![value; n]);
}

#[test]
fn fill_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(fill_cpu_case(n));
    }
}

fn scal_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::scal {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 3));
    let x = random_vec::<T>(n, seed_for::<T>(n, 4));
    let mut got = x.clone();
    cpu::scal(alpha, &mut got);
    let zeros = vec![T::ZERO; n];
    let want = reference::axpby(alpha, &x, T::ZERO, &zeros);
    let scale: Vec<f64> = x.iter().map(|&v| abs(alpha) * abs(v)).collect();
    assert_close_elementwise(&ctx, &got, &want, &scale);
}

#[test]
fn scal_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(scal_cpu_case(n));
    }
}

fn axpy_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::axpy {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 5));
    let x = random_vec::<T>(n, seed_for::<T>(n, 6));
    let y = random_vec::<T>(n, seed_for::<T>(n, 7));
    let mut got = y.clone();
    ok(cpu::axpy(alpha, &x, &mut got), &ctx, "cpu::axpy");
    let want = reference::axpby(alpha, &x, T::ONE, &y);
    let scale: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(&a, &b)| abs(alpha) * abs(a) + abs(b))
        .collect();
    assert_close_elementwise(&ctx, &got, &want, &scale);
    assert_bits_eq(
        &format!("{ctx}: x after the call"),
        &x,
        &random_vec::<T>(n, seed_for::<T>(n, 6)),
    );
}

#[test]
fn axpy_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(axpy_cpu_case(n));
    }
}

fn axpby_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::axpby {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 8));
    let beta = random_scalar::<T>(seed_for::<T>(n, 9));
    let x = random_vec::<T>(n, seed_for::<T>(n, 10));
    let y = random_vec::<T>(n, seed_for::<T>(n, 11));
    let mut got = y.clone();
    ok(cpu::axpby(alpha, &x, beta, &mut got), &ctx, "cpu::axpby");
    let want = reference::axpby(alpha, &x, beta, &y);
    let scale: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(&a, &b)| abs(alpha) * abs(a) + abs(beta) * abs(b))
        .collect();
    assert_close_elementwise(&ctx, &got, &want, &scale);
    assert_bits_eq(
        &format!("{ctx}: x after the call"),
        &x,
        &random_vec::<T>(n, seed_for::<T>(n, 10)),
    );
}

#[test]
fn axpby_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(axpby_cpu_case(n));
    }
}

fn copy_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::copy {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 12));
    let mut y = poison::<T>(n);
    ok(cpu::copy(&x, &mut y), &ctx, "cpu::copy");
    assert_bits_eq(&ctx, &y, &x);
    assert_bits_eq(
        &format!("{ctx}: x after the call"),
        &x,
        &random_vec::<T>(n, seed_for::<T>(n, 12)),
    );
}

#[test]
fn copy_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(copy_cpu_case(n));
    }
}

fn dot_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::dot {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 13));
    let y = random_vec::<T>(n, seed_for::<T>(n, 14));
    let got = ok(cpu::dot(&x, &y), &ctx, "cpu::dot");
    let again = ok(cpu::dot(&x, &y), &ctx, "cpu::dot (second call)");
    assert!(
        same_bits(got, again),
        "{ctx}: two calls gave {got:?} and {again:?}"
    );
    assert_reduction_close(
        &ctx,
        got,
        reference::dot(&x, &y),
        reference::dot_magnitude(&x, &y),
        n,
    );
    // dot(x, x) is |x|^2, the square of nrm2.
    let xx = ok(cpu::dot(&x, &x), &ctx, "cpu::dot(x, x)");
    let nrm = reference::nrm2(&x);
    assert_reduction_close(
        &format!("{ctx}: dot(x, x)"),
        xx,
        Complex::new(nrm * nrm, 0.0),
        nrm * nrm,
        n,
    );
    assert_bits_eq(
        &format!("{ctx}: x after the call"),
        &x,
        &random_vec::<T>(n, seed_for::<T>(n, 13)),
    );
    assert_bits_eq(
        &format!("{ctx}: y after the call"),
        &y,
        &random_vec::<T>(n, seed_for::<T>(n, 14)),
    );
}

#[test]
fn dot_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(dot_cpu_case(n));
    }
}

fn nrm2_cpu_case<T: Element>(n: usize) {
    let ctx = format!("cpu::nrm2 {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 15));
    let got = cpu::nrm2(&x);
    let again = cpu::nrm2(&x);
    assert!(
        got.to_f64().to_bits() == again.to_f64().to_bits(),
        "{ctx}: two calls gave {got:?} and {again:?}"
    );
    assert_nrm2_close::<T>(&ctx, got.to_f64(), reference::nrm2(&x), n);
    assert_bits_eq(
        &format!("{ctx}: x after the call"),
        &x,
        &random_vec::<T>(n, seed_for::<T>(n, 15)),
    );
}

#[test]
fn nrm2_cpu_matches_reference() {
    for &n in CPU_SIZES {
        for_all_types!(nrm2_cpu_case(n));
    }
}

fn multi_dot_cpu_case<T: Element>(k: usize, n: usize) {
    let ctx = format!("cpu::multi_dot {} k={k} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 16 + k as u64));
    let ys = random_vec::<T>(k * n, seed_for::<T>(n, 40 + k as u64));
    let mut out = poison::<T>(k);
    ok(cpu::multi_dot(&x, &ys, &mut out), &ctx, "cpu::multi_dot");
    let mut again = poison::<T>(k);
    ok(
        cpu::multi_dot(&x, &ys, &mut again),
        &ctx,
        "cpu::multi_dot (second call)",
    );
    assert_bits_eq(&format!("{ctx}: two calls"), &out, &again);
    for (j, &o) in out.iter().enumerate() {
        let yj = &ys[j * n..(j + 1) * n];
        let what = format!("{ctx}: vector {j}");
        assert_reduction_close(
            &what,
            o,
            reference::dot(&x, yj),
            reference::dot_magnitude(&x, yj),
            n,
        );
    }
}

#[test]
fn multi_dot_cpu_matches_reference() {
    for &n in &[0, 1, 33, 1000] {
        for &k in &[1, 3, 8, 9, 17] {
            for_all_types!(multi_dot_cpu_case(k, n));
        }
    }
}

/// The CPU reductions sum fixed chunks, so the bits do not depend on the thread count.
fn cpu_thread_count_case<T: Element>(n: usize)
where
    T::Real: Element,
{
    let ctx = format!("cpu {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 17));
    let y = random_vec::<T>(n, seed_for::<T>(n, 18));
    let ys = random_vec::<T>(3 * n, seed_for::<T>(n, 19));
    let run = || {
        let d = cpu::dot(&x, &y).expect("cpu::dot");
        let r = cpu::nrm2(&x);
        let mut m = poison::<T>(3);
        cpu::multi_dot(&x, &ys, &mut m).expect("cpu::multi_dot");
        (d, r, m)
    };
    let (d0, r0, m0) = run();
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        let (d, r, m) = pool.install(run);
        assert!(
            same_bits(d, d0),
            "{ctx}: dot with {threads} threads gave {d:?}, default pool {d0:?}"
        );
        assert!(
            same_bits(r, r0),
            "{ctx}: nrm2 with {threads} threads gave {r:?}, default pool {r0:?}"
        );
        assert_bits_eq(
            &format!("{ctx}: multi_dot with {threads} threads vs default pool"),
            &m,
            &m0,
        );
    }
}

#[test]
fn cpu_reductions_do_not_depend_on_thread_count() {
    for n in [3 * cpu::CHUNK + 5, 100_003] {
        for_all_types!(cpu_thread_count_case(n));
    }
}

fn cpu_errors_case<T: Element>() {
    let t = tname::<T>();
    let alpha = random_scalar::<T>(1);
    let x = random_vec::<T>(10, 2);
    let y0 = random_vec::<T>(11, 3);

    let mut y = y0.clone();
    let e = cpu::axpy(alpha, &x, &mut y).expect_err("cpu::axpy with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "axpy",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "cpu::axpy {t}: wrong error {e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("axpy") && msg.contains("10") && msg.contains("11"),
        "cpu::axpy {t}: message {msg:?}"
    );
    assert_bits_eq(&format!("cpu::axpy {t}: y after the failed call"), &y, &y0);
    assert_bits_eq(
        &format!("cpu::axpy {t}: x after the failed call"),
        &x,
        &random_vec::<T>(10, 2),
    );

    let e = cpu::axpby(alpha, &x, alpha, &mut y)
        .expect_err("cpu::axpby with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "axpby",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "cpu::axpby {t}: wrong error {e:?}"
    );
    assert_bits_eq(&format!("cpu::axpby {t}: y after the failed call"), &y, &y0);

    let e = cpu::copy(&x, &mut y).expect_err("cpu::copy with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "copy",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "cpu::copy {t}: wrong error {e:?}"
    );
    assert_bits_eq(&format!("cpu::copy {t}: y after the failed call"), &y, &y0);

    let e = cpu::dot(&x, &y).expect_err("cpu::dot with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "dot",
                what: "y",
                expected: 10,
                found: 11
            }
        ),
        "cpu::dot {t}: wrong error {e:?}"
    );

    let mut out = poison::<T>(2);
    let ys = random_vec::<T>(21, 4);
    let e =
        cpu::multi_dot(&x, &ys, &mut out).expect_err("cpu::multi_dot with 21 != 2 * 10 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "multi_dot",
                expected: 20,
                found: 21,
                ..
            }
        ),
        "cpu::multi_dot {t}: wrong error {e:?}"
    );
    assert_bits_eq(
        &format!("cpu::multi_dot {t}: out after the failed call"),
        &out,
        &poison::<T>(2),
    );

    let e = cpu::multi_dot(&x, &[], &mut []).expect_err("cpu::multi_dot with empty out must fail");
    assert!(
        matches!(
            e,
            Error::Empty {
                op: "multi_dot",
                ..
            }
        ),
        "cpu::multi_dot {t}: wrong error {e:?}"
    );
    assert!(
        e.to_string().contains("must not be empty"),
        "cpu::multi_dot {t}: message {e}"
    );
    assert!(
        !e.is_no_device(),
        "cpu::multi_dot {t}: an Empty error is not 'no device'"
    );
    assert_bits_eq(
        &format!("cpu {t}: x after all failed calls"),
        &x,
        &random_vec::<T>(10, 2),
    );
}

#[test]
fn cpu_errors_are_typed_and_leave_operands_unchanged() {
    for_all_types!(cpu_errors_case());
}

// ------------------------------------------------------------------------------------
// GPU against the CPU.

fn fill_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::fill {} n={n}", tname::<T>());
    let value = random_scalar::<T>(seed_for::<T>(n, 20));
    let mut buf = upload(gpu, &poison::<T>(n), &ctx);
    ok(gpu::fill(&mut buf, value), &ctx, "gpu::fill");
    let got = download(&buf, &ctx);
    let mut want = poison::<T>(n);
    cpu::fill(&mut want, value);
    assert_bits_eq(&ctx, &got, &want);
}

fn scal_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::scal {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 21));
    let x = random_vec::<T>(n, seed_for::<T>(n, 22));
    let mut dx = upload(gpu, &x, &ctx);
    ok(gpu::scal(alpha, &mut dx), &ctx, "gpu::scal");
    let got = download(&dx, &ctx);
    let mut want = x.clone();
    cpu::scal(alpha, &mut want);
    assert_bits_eq(&format!("{ctx}: GPU vs CPU"), &got, &want);
    if n <= REFERENCE_LIMIT {
        let zeros = vec![T::ZERO; n];
        let scale: Vec<f64> = x.iter().map(|&v| abs(alpha) * abs(v)).collect();
        assert_close_elementwise(
            &ctx,
            &got,
            &reference::axpby(alpha, &x, T::ZERO, &zeros),
            &scale,
        );
    }
}

fn axpy_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::axpy {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 23));
    let x = random_vec::<T>(n, seed_for::<T>(n, 24));
    let y = random_vec::<T>(n, seed_for::<T>(n, 25));
    let dx = upload(gpu, &x, &ctx);
    let mut dy = upload(gpu, &y, &ctx);
    ok(gpu::axpy(alpha, &dx, &mut dy), &ctx, "gpu::axpy");
    let got = download(&dy, &ctx);
    let mut want = y.clone();
    ok(cpu::axpy(alpha, &x, &mut want), &ctx, "cpu::axpy");
    assert_bits_eq(&format!("{ctx}: GPU vs CPU"), &got, &want);
    drop(want);
    if n <= REFERENCE_LIMIT {
        let scale: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| abs(alpha) * abs(a) + abs(b))
            .collect();
        assert_close_elementwise(&ctx, &got, &reference::axpby(alpha, &x, T::ONE, &y), &scale);
    }
    drop(got);
    if n <= REFERENCE_LIMIT {
        assert_bits_eq(
            &format!("{ctx}: x on the device after the call"),
            &download(&dx, &ctx),
            &x,
        );
    }
}

fn axpby_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::axpby {} n={n}", tname::<T>());
    let alpha = random_scalar::<T>(seed_for::<T>(n, 26));
    let beta = random_scalar::<T>(seed_for::<T>(n, 27));
    let x = random_vec::<T>(n, seed_for::<T>(n, 28));
    let y = random_vec::<T>(n, seed_for::<T>(n, 29));
    let dx = upload(gpu, &x, &ctx);
    let mut dy = upload(gpu, &y, &ctx);
    ok(gpu::axpby(alpha, &dx, beta, &mut dy), &ctx, "gpu::axpby");
    let got = download(&dy, &ctx);
    let mut want = y.clone();
    ok(cpu::axpby(alpha, &x, beta, &mut want), &ctx, "cpu::axpby");
    assert_bits_eq(&format!("{ctx}: GPU vs CPU"), &got, &want);
    drop(want);
    if n <= REFERENCE_LIMIT {
        let scale: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| abs(alpha) * abs(a) + abs(beta) * abs(b))
            .collect();
        assert_close_elementwise(&ctx, &got, &reference::axpby(alpha, &x, beta, &y), &scale);
    }
    drop(got);
    if n <= REFERENCE_LIMIT {
        assert_bits_eq(
            &format!("{ctx}: x on the device after the call"),
            &download(&dx, &ctx),
            &x,
        );
    }
}

fn copy_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::copy {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 30));
    let dx = upload(gpu, &x, &ctx);
    let mut dy = upload(gpu, &poison::<T>(n), &ctx);
    ok(gpu::copy(&dx, &mut dy), &ctx, "gpu::copy");
    let mut want = poison::<T>(n);
    ok(cpu::copy(&x, &mut want), &ctx, "cpu::copy");
    assert_bits_eq(&format!("{ctx}: GPU vs CPU"), &download(&dy, &ctx), &want);
    drop(want);
    assert_bits_eq(
        &format!("{ctx}: x on the device after the call"),
        &download(&dx, &ctx),
        &x,
    );
}

fn dot_gpu_case<T: Element>(gpu: &Gpu, n: usize) {
    let ctx = format!("gpu::dot {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 31));
    let y = random_vec::<T>(n, seed_for::<T>(n, 32));
    let dx = upload(gpu, &x, &ctx);
    let dy = upload(gpu, &y, &ctx);
    let got = ok(gpu::dot(&dx, &dy), &ctx, "gpu::dot");
    let again = ok(gpu::dot(&dx, &dy), &ctx, "gpu::dot (second call)");
    assert!(
        same_bits(got, again),
        "{ctx}: not deterministic: two calls gave {got:?} and {again:?}"
    );

    let want = ref_dot(&x, &y);
    let magnitude = ref_dot_magnitude(&x, &y);
    assert_reduction_close(&format!("{ctx}: GPU vs reference"), got, want, magnitude, n);
    let on_cpu = ok(cpu::dot(&x, &y), &ctx, "cpu::dot");
    assert_reduction_close(
        &format!("{ctx}: CPU vs reference"),
        on_cpu,
        want,
        magnitude,
        n,
    );
    let diff = reference::widen(got) - reference::widen(on_cpu);
    let tol = 2.0 * reduction_tol::<T>(n, magnitude);
    assert!(
        diff.re.abs() <= tol && diff.im.abs() <= tol,
        "{ctx}: GPU {got:?} vs CPU {on_cpu:?}, bound {tol:e}"
    );

    // dot_into leaves the result on the device, in a poisoned one-element buffer.
    let mut out = upload(gpu, &[nan::<T>()], &ctx);
    ok(gpu::dot_into(&dx, &dy, &mut out), &ctx, "gpu::dot_into");
    let into = download(&out, &ctx)[0];
    assert!(
        same_bits(into, got),
        "{ctx}: dot_into wrote {into:?}, dot returned {got:?}"
    );

    if n <= REFERENCE_LIMIT {
        assert_bits_eq(
            &format!("{ctx}: x on the device after the call"),
            &download(&dx, &ctx),
            &x,
        );
        assert_bits_eq(
            &format!("{ctx}: y on the device after the call"),
            &download(&dy, &ctx),
            &y,
        );
    }
}

fn nrm2_gpu_case<T: Element>(gpu: &Gpu, n: usize)
where
    T::Real: Element,
{
    let ctx = format!("gpu::nrm2 {} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 33));
    let dx = upload(gpu, &x, &ctx);
    let got = ok(gpu::nrm2(&dx), &ctx, "gpu::nrm2");
    let again = ok(gpu::nrm2(&dx), &ctx, "gpu::nrm2 (second call)");
    assert!(
        same_bits(got, again),
        "{ctx}: not deterministic: two calls gave {got:?} and {again:?}"
    );

    let want = ref_nrm2(&x);
    assert_nrm2_close::<T>(&format!("{ctx}: GPU vs reference"), got.to_f64(), want, n);
    let on_cpu = cpu::nrm2(&x);
    assert_nrm2_close::<T>(
        &format!("{ctx}: CPU vs reference"),
        on_cpu.to_f64(),
        want,
        n,
    );

    let mut out = upload(gpu, &[nan::<T::Real>()], &ctx);
    ok(gpu::nrm2_into(&dx, &mut out), &ctx, "gpu::nrm2_into");
    let into = download(&out, &ctx)[0];
    assert!(
        same_bits(into, got),
        "{ctx}: nrm2_into wrote {into:?}, nrm2 returned {got:?}"
    );

    if n <= REFERENCE_LIMIT {
        assert_bits_eq(
            &format!("{ctx}: x on the device after the call"),
            &download(&dx, &ctx),
            &x,
        );
    }
}

fn multi_dot_gpu_case<T: Element>(gpu: &Gpu, k: usize, n: usize) {
    let ctx = format!("gpu::multi_dot {} k={k} n={n}", tname::<T>());
    let x = random_vec::<T>(n, seed_for::<T>(n, 34 + k as u64));
    let ys = random_vec::<T>(k * n, seed_for::<T>(n, 60 + k as u64));
    let dx = upload(gpu, &x, &ctx);
    let dys = upload(gpu, &ys, &ctx);
    let mut dout = upload(gpu, &poison::<T>(k), &ctx);
    ok(gpu::multi_dot(&dx, &dys, &mut dout), &ctx, "gpu::multi_dot");
    let got = download(&dout, &ctx);

    let mut on_cpu = poison::<T>(k);
    ok(cpu::multi_dot(&x, &ys, &mut on_cpu), &ctx, "cpu::multi_dot");
    for j in 0..k {
        let yj = &ys[j * n..(j + 1) * n];
        let (want, magnitude) = (ref_dot(&x, yj), ref_dot_magnitude(&x, yj));
        assert_reduction_close(
            &format!("{ctx}: GPU vector {j} vs reference"),
            got[j],
            want,
            magnitude,
            n,
        );
        assert_reduction_close(
            &format!("{ctx}: CPU vector {j} vs reference"),
            on_cpu[j],
            want,
            magnitude,
            n,
        );
    }

    let mut dout2 = upload(gpu, &poison::<T>(k), &ctx);
    ok(
        gpu::multi_dot(&dx, &dys, &mut dout2),
        &ctx,
        "gpu::multi_dot (second call)",
    );
    assert_bits_eq(
        &format!("{ctx}: not deterministic"),
        &download(&dout2, &ctx),
        &got,
    );
}

/// Runs `case` for all four types at every size of [`GPU_SIZES`].
macro_rules! gpu_all_sizes {
    ($test:expr, $case:ident) => {{
        let Some(gpu) = gpu_or_skip($test) else {
            return;
        };
        for &n in GPU_SIZES {
            for_all_types!($case(&gpu, n));
        }
    }};
}

/// One test per operation: `case` for all four types at every size of [`GPU_SIZES`].
macro_rules! gpu_all_sizes_tests {
    ($($name:ident: $case:ident;)*) => {
        $(
            #[test]
            fn $name() {
                gpu_all_sizes!(stringify!($name), $case);
            }
        )*
    };
}

gpu_all_sizes_tests! {
    fill_gpu_matches_cpu: fill_gpu_case;
    scal_gpu_matches_cpu: scal_gpu_case;
    axpy_gpu_matches_cpu: axpy_gpu_case;
    axpby_gpu_matches_cpu: axpby_gpu_case;
    copy_gpu_matches_cpu: copy_gpu_case;
    dot_gpu_matches_cpu: dot_gpu_case;
    nrm2_gpu_matches_cpu: nrm2_gpu_case;
}

#[test]
fn multi_dot_gpu_matches_cpu() {
    let Some(gpu) = gpu_or_skip("multi_dot_gpu_matches_cpu") else {
        return;
    };
    for &n in &[0, 1, 33, 100_003] {
        for &k in &[1, 3, 8, 9, 17] {
            for_all_types!(multi_dot_gpu_case(&gpu, k, n));
        }
    }
}

/// The largest number of vectors one multi-dot accepts (65535 block rows of 8) works,
/// one more is an `InvalidArgument`.
fn multi_dot_limit_case<T: Element>(gpu: &Gpu) {
    let limit = ferrocuda_host::MAX_GRID_YZ as usize * ferrocuda_kernels::blas1::MULTI_DOT_CHUNK;
    let ctx = format!("gpu::multi_dot {} k={limit} n=1", tname::<T>());
    let x = random_vec::<T>(1, 70);
    let ys = random_vec::<T>(limit, 71);
    let dx = upload(gpu, &x, &ctx);
    let dys = upload(gpu, &ys, &ctx);
    let mut dout = upload(gpu, &poison::<T>(limit), &ctx);
    ok(gpu::multi_dot(&dx, &dys, &mut dout), &ctx, "gpu::multi_dot");
    let got = download(&dout, &ctx);
    let mut want = poison::<T>(limit);
    ok(cpu::multi_dot(&x, &ys, &mut want), &ctx, "cpu::multi_dot");
    // One term per vector: conj(x0) y_j with one FMA on both sides, then sums of zeros.
    assert_bits_eq(&format!("{ctx}: GPU vs CPU"), &got, &want);

    let empty = upload(gpu, &[] as &[T], &ctx);
    let mut too_many = upload(gpu, &poison::<T>(limit + 1), &ctx);
    let e = gpu::multi_dot(&empty, &empty, &mut too_many)
        .expect_err("multi_dot over the vector limit must fail");
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                op: "multi_dot",
                ..
            }
        ),
        "{ctx}: wrong error {e:?}"
    );
    assert!(
        e.to_string().contains(&(limit + 1).to_string()),
        "{ctx}: message {e} does not name the count"
    );
}

#[test]
fn multi_dot_gpu_handles_the_vector_limit() {
    let Some(gpu) = gpu_or_skip("multi_dot_gpu_handles_the_vector_limit") else {
        return;
    };
    for_all_types!(multi_dot_limit_case(&gpu));
}

// ------------------------------------------------------------------------------------
// GPU at 2^27 elements, one case at a time.

/// One test per operation: `case` for all four types at [`LARGE_N`], holding the lock
/// for huge cases.
macro_rules! gpu_large_tests {
    ($($name:ident: $case:ident;)*) => {
        $(
            #[test]
            fn $name() {
                let Some(gpu) = gpu_or_skip(stringify!($name)) else {
                    return;
                };
                let _guard = large_lock();
                for_all_types!($case(&gpu, LARGE_N));
            }
        )*
    };
}

gpu_large_tests! {
    fill_gpu_matches_cpu_2pow27: fill_gpu_case;
    axpy_gpu_matches_cpu_2pow27: axpy_gpu_case;
    dot_gpu_matches_cpu_2pow27: dot_gpu_case;
    nrm2_gpu_matches_cpu_2pow27: nrm2_gpu_case;
}

#[test]
fn scal_axpby_copy_multi_dot_gpu_match_cpu_2pow27_f64() {
    let Some(gpu) = gpu_or_skip("scal_axpby_copy_multi_dot_gpu_match_cpu_2pow27_f64") else {
        return;
    };
    let _guard = large_lock();
    scal_gpu_case::<f64>(&gpu, LARGE_N);
    axpby_gpu_case::<f64>(&gpu, LARGE_N);
    copy_gpu_case::<f64>(&gpu, LARGE_N);
    multi_dot_gpu_case::<f64>(&gpu, 2, LARGE_N);
}

// ------------------------------------------------------------------------------------
// GPU errors and views.

fn gpu_errors_case<T: Element>(gpu: &Gpu)
where
    T::Real: Element,
{
    let t = tname::<T>();
    let alpha = random_scalar::<T>(80);
    let x = random_vec::<T>(10, 81);
    let y = random_vec::<T>(11, 82);
    let dx = upload(gpu, &x, t);
    let mut dy = upload(gpu, &y, t);

    let e = gpu::axpy(alpha, &dx, &mut dy).expect_err("gpu::axpy with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "axpy",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "gpu::axpy {t}: wrong error {e:?}"
    );
    let e = gpu::axpby(alpha, &dx, alpha, &mut dy)
        .expect_err("gpu::axpby with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "axpby",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "gpu::axpby {t}: wrong error {e:?}"
    );
    let e = gpu::copy(&dx, &mut dy).expect_err("gpu::copy with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "copy",
                what: "x",
                expected: 11,
                found: 10
            }
        ),
        "gpu::copy {t}: wrong error {e:?}"
    );
    assert_bits_eq(
        &format!("gpu {t}: y after the failed calls"),
        &download(&dy, t),
        &y,
    );

    let e = gpu::dot(&dx, &dy).expect_err("gpu::dot with lengths 10 and 11 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "dot",
                what: "y",
                expected: 10,
                found: 11
            }
        ),
        "gpu::dot {t}: wrong error {e:?}"
    );
    let mut out2 = upload(gpu, &poison::<T>(2), t);
    let e = gpu::dot_into(&dx, &dx, &mut out2)
        .expect_err("gpu::dot_into with a 2-element out must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "dot",
                what: "out",
                expected: 1,
                found: 2
            }
        ),
        "gpu::dot_into {t}: wrong error {e:?}"
    );
    assert_bits_eq(
        &format!("gpu::dot_into {t}: out after the failed call"),
        &download(&out2, t),
        &poison::<T>(2),
    );
    let mut rout0 = upload(gpu, &[] as &[T::Real], t);
    let e =
        gpu::nrm2_into(&dx, &mut rout0).expect_err("gpu::nrm2_into with an empty out must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "nrm2",
                what: "out",
                expected: 1,
                found: 0
            }
        ),
        "gpu::nrm2_into {t}: wrong error {e:?}"
    );

    let ys = upload(gpu, &random_vec::<T>(21, 83), t);
    let e = gpu::multi_dot(&dx, &ys, &mut out2)
        .expect_err("gpu::multi_dot with 21 != 2 * 10 must fail");
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                op: "multi_dot",
                expected: 20,
                found: 21,
                ..
            }
        ),
        "gpu::multi_dot {t}: wrong error {e:?}"
    );
    assert_bits_eq(
        &format!("gpu::multi_dot {t}: out after the failed call"),
        &download(&out2, t),
        &poison::<T>(2),
    );
    let mut out0 = upload(gpu, &[] as &[T], t);
    let e =
        gpu::multi_dot(&dx, &ys, &mut out0).expect_err("gpu::multi_dot with empty out must fail");
    assert!(
        matches!(
            e,
            Error::Empty {
                op: "multi_dot",
                ..
            }
        ),
        "gpu::multi_dot {t}: wrong error {e:?}"
    );

    assert_bits_eq(
        &format!("gpu {t}: x after the failed calls"),
        &download(&dx, t),
        &x,
    );
}

#[test]
fn gpu_errors_are_typed_and_leave_operands_unchanged() {
    let Some(gpu) = gpu_or_skip("gpu_errors_are_typed_and_leave_operands_unchanged") else {
        return;
    };
    for_all_types!(gpu_errors_case(&gpu));
}

fn views_case<T: Element>(gpu: &Gpu)
where
    T::Real: Element,
{
    let n = 1000;
    let t = tname::<T>();
    let alpha = random_scalar::<T>(90);
    let beta = random_scalar::<T>(91);
    let x = random_vec::<T>(n, 92);
    let y = random_vec::<T>(n, 93);
    let dx = upload(gpu, &x, t);

    // Out-of-range views, read-only and mutable, plain and wrapped in ferrocuda::Error.
    #[allow(clippy::reversed_empty_ranges)] // the reversed range is the point
    let e = range_err(dx.view(5..3), "view(5..3)");
    assert!(
        matches!(
            e,
            ferrocuda_host::Error::OutOfRange {
                op: "view",
                start: 5,
                end: 3,
                len: 1000
            }
        ),
        "view(5..3) {t}: wrong error {e:?}"
    );
    let wrapped = ferrocuda::Error::from(e);
    assert!(
        matches!(
            wrapped,
            Error::Gpu(ferrocuda_host::Error::OutOfRange { .. })
        ),
        "view(5..3) {t}: wrapped as {wrapped:?}"
    );
    assert!(
        !wrapped.is_no_device(),
        "view(5..3) {t}: OutOfRange is not 'no device'"
    );
    assert!(
        wrapped.to_string().contains("5..3"),
        "view(5..3) {t}: message {wrapped}"
    );
    let e = range_err(dx.view(0..n + 1), "view(0..n+1)");
    assert!(
        matches!(
            e,
            ferrocuda_host::Error::OutOfRange {
                op: "view",
                start: 0,
                end: 1001,
                len: 1000
            }
        ),
        "view(0..n+1) {t}: wrong error {e:?}"
    );
    let e = range_err(dx.view(..=n), "view(..=n)");
    assert!(
        matches!(e, ferrocuda_host::Error::OutOfRange { end: 1001, .. }),
        "view(..=n) {t}: wrong error {e:?}"
    );
    let mut dy = upload(gpu, &y, t);
    let e = range_err(dy.view_mut(n + 1..), "view_mut(n+1..)");
    assert!(
        matches!(
            e,
            ferrocuda_host::Error::OutOfRange {
                op: "view_mut",
                start: 1001,
                end: 1000,
                len: 1000
            }
        ),
        "view_mut(n+1..) {t}: wrong error {e:?}"
    );
    let empty = dx
        .view(n..n)
        .unwrap_or_else(|e| panic!("view(n..n) {t} must be fine: {e}"));
    assert_eq!(empty.len(), 0, "view(n..n) {t}: length");

    // axpy on the window 1..n-1: the borders stay as they were.
    {
        let xv = dx.view(1..n - 1).expect("view(1..n-1)");
        let mut yv = dy.view_mut(1..n - 1).expect("view_mut(1..n-1)");
        ok(gpu::axpy(alpha, &xv, &mut yv), t, "gpu::axpy on views");
    }
    let mut want = y.clone();
    ok(
        cpu::axpy(alpha, &x[1..n - 1], &mut want[1..n - 1]),
        t,
        "cpu::axpy on slices",
    );
    assert_bits_eq(
        &format!("gpu::axpy {t} on view(1..n-1)"),
        &download(&dy, t),
        &want,
    );

    // Windows at different offsets: y[2..] <- alpha x[..n-2] + beta y[2..].
    {
        let xv = dx.view(..n - 2).expect("view(..n-2)");
        let mut yv = dy.view_mut(2..).expect("view_mut(2..)");
        ok(
            gpu::axpby(alpha, &xv, beta, &mut yv),
            t,
            "gpu::axpby on shifted views",
        );
    }
    ok(
        cpu::axpby(alpha, &x[..n - 2], beta, &mut want[2..]),
        t,
        "cpu::axpby on slices",
    );
    assert_bits_eq(
        &format!("gpu::axpby {t} on view(..n-2) -> view_mut(2..)"),
        &download(&dy, t),
        &want,
    );

    // fill, scal and copy on windows.
    let value = random_scalar::<T>(94);
    ok(
        gpu::fill(&mut dy.view_mut(3..7).expect("view_mut(3..7)"), value),
        t,
        "gpu::fill on a view",
    );
    cpu::fill(&mut want[3..7], value);
    ok(
        gpu::scal(alpha, &mut dy.view_mut(10..20).expect("view_mut(10..20)")),
        t,
        "gpu::scal on a view",
    );
    cpu::scal(alpha, &mut want[10..20]);
    {
        let xv = dx.view(0..5).expect("view(0..5)");
        let mut yv = dy.view_mut(n - 5..).expect("view_mut(n-5..)");
        ok(gpu::copy(&xv, &mut yv), t, "gpu::copy on views");
    }
    want[n - 5..].copy_from_slice(&x[..5]);
    ok(
        gpu::fill(&mut dy.view_mut(n..).expect("view_mut(n..)"), value),
        t,
        "gpu::fill on an empty view",
    );
    assert_bits_eq(
        &format!("gpu::fill/scal/copy {t} on views"),
        &download(&dy, t),
        &want,
    );
    assert_bits_eq(
        &format!("gpu {t}: x after the view operations"),
        &download(&dx, t),
        &x,
    );

    // Reductions over windows give the bits of the same reduction over a buffer holding
    // just that window (the summation tree depends on the length alone).
    let dyw = upload(gpu, &want, t);
    let (a, b) = (7, n - 3);
    let xw = upload(gpu, &x[a..b], t);
    let yw = upload(gpu, &want[a..b], t);
    let on_view = ok(
        gpu::dot(
            &dx.view(a..b).expect("view(a..b)"),
            &dyw.view(a..b).expect("view(a..b)"),
        ),
        t,
        "gpu::dot on views",
    );
    let on_copy = ok(gpu::dot(&xw, &yw), t, "gpu::dot on copies of the windows");
    assert!(
        same_bits(on_view, on_copy),
        "gpu::dot {t}: view {on_view:?} vs copy {on_copy:?}"
    );
    let r_view = ok(
        gpu::nrm2(&dx.view(a..b).expect("view(a..b)")),
        t,
        "gpu::nrm2 on a view",
    );
    let r_copy = ok(gpu::nrm2(&xw), t, "gpu::nrm2 on a copy of the window");
    assert!(
        same_bits(r_view, r_copy),
        "gpu::nrm2 {t}: view {r_view:?} vs copy {r_copy:?}"
    );

    // dot_into / nrm2_into into the middle of poisoned buffers: only that element changes.
    let mut outs = upload(gpu, &poison::<T>(5), t);
    ok(
        gpu::dot_into(&xw, &yw, &mut outs.view_mut(2..3).expect("view_mut(2..3)")),
        t,
        "gpu::dot_into a view",
    );
    let mut want_outs = poison::<T>(5);
    want_outs[2] = on_copy;
    assert_bits_eq(
        &format!("gpu::dot_into {t} view(2..3) of 5"),
        &download(&outs, t),
        &want_outs,
    );
    let mut routs = upload(gpu, &poison::<T::Real>(5), t);
    ok(
        gpu::nrm2_into(&xw, &mut routs.view_mut(4..).expect("view_mut(4..)")),
        t,
        "gpu::nrm2_into a view",
    );
    let mut want_routs = poison::<T::Real>(5);
    want_routs[4] = r_copy;
    assert_bits_eq(
        &format!("gpu::nrm2_into {t} view(4..) of 5"),
        &download(&routs, t),
        &want_routs,
    );

    // multi_dot with x, ys and out all windows of larger buffers.
    let (k, m) = (3, 100);
    let ys = random_vec::<T>(k * m + 10, 95);
    let dys = upload(gpu, &ys, t);
    let mut mouts = upload(gpu, &poison::<T>(k + 2), t);
    ok(
        gpu::multi_dot(
            &dx.view(5..5 + m).expect("view(5..5+m)"),
            &dys.view(4..4 + k * m).expect("view(4..4+k m)"),
            &mut mouts.view_mut(1..1 + k).expect("view_mut(1..1+k)"),
        ),
        t,
        "gpu::multi_dot on views",
    );
    let got = download(&mouts, t);
    assert!(
        same_bits(got[0], nan::<T>()) && same_bits(got[k + 1], nan::<T>()),
        "gpu::multi_dot {t}: wrote outside its window: {got:?}"
    );
    let xs = &x[5..5 + m];
    for j in 0..k {
        let yj = &ys[4 + j * m..4 + (j + 1) * m];
        let what = format!("gpu::multi_dot {t} on views, vector {j}");
        assert_reduction_close(
            &what,
            got[1 + j],
            reference::dot(xs, yj),
            reference::dot_magnitude(xs, yj),
            m,
        );
    }
}

#[test]
fn gpu_views_touch_only_their_window() {
    let Some(gpu) = gpu_or_skip("gpu_views_touch_only_their_window") else {
        return;
    };
    for_all_types!(views_case(&gpu));
}

/// Multiplying by `ONE` and adding `ZERO` are exact on the CPU path.
#[test]
fn cpu_identities_are_exact() {
    fn case<T: Element>() {
        let x = random_vec::<T>(33, 1);
        let mut y = x.clone();
        cpu::scal(T::ONE, &mut y);
        assert_bits_eq(&format!("cpu::scal {} by ONE", tname::<T>()), &y, &x);
        let mut z = vec![T::ZERO; 33];
        cpu::axpy(T::ONE, &x, &mut z).expect("cpu::axpy with equal lengths");
        assert_bits_eq(&format!("cpu::axpy {} ONE x + 0", tname::<T>()), &z, &x);
    }
    for_all_types!(case());
}

// ------------------------------------------------------------------------------------
// Exactness on small integers: any dropped, repeated or misplaced term shows up as a
// wrong bit (the tolerances above are loose for f32 at large n).

fn exact_cpu_case<T: Element>(n: usize)
where
    T::Real: Element,
{
    let ctx = format!("cpu {} n={n} (integer data)", tname::<T>());
    let x = small_int_vec::<T>(n, seed_for::<T>(n, 200));
    let y = small_int_vec::<T>(n, seed_for::<T>(n, 201));
    let got = ok(cpu::dot(&x, &y), &ctx, "cpu::dot");
    let want = exact_dot(&x, &y);
    assert!(
        same_bits(got, want),
        "{ctx}: dot is {got:?}, exactly {want:?}"
    );
    let got = cpu::nrm2(&x);
    let want = exact_nrm2(&x);
    assert!(
        same_bits(got, want),
        "{ctx}: nrm2 is {got:?}, correctly rounded {want:?}"
    );
    for k in [1, 9] {
        let ys = small_int_vec::<T>(k * n, seed_for::<T>(n, 202 + k as u64));
        let mut out = poison::<T>(k);
        ok(cpu::multi_dot(&x, &ys, &mut out), &ctx, "cpu::multi_dot");
        let want: Vec<T> = (0..k)
            .map(|j| exact_dot(&x, &ys[j * n..(j + 1) * n]))
            .collect();
        assert_bits_eq(&format!("{ctx}: multi_dot k={k}"), &out, &want);
    }
}

#[test]
fn cpu_reductions_are_exact_on_small_integers() {
    for &n in CPU_SIZES {
        for_all_types!(exact_cpu_case(n));
    }
}

fn exact_gpu_case<T: Element>(gpu: &Gpu, n: usize)
where
    T::Real: Element,
{
    assert!(
        n <= exact_int_limit::<T>(),
        "n={n} is too large for exact {} sums",
        tname::<T>()
    );
    let ctx = format!("gpu {} n={n} (integer data)", tname::<T>());
    let x = small_int_vec::<T>(n, seed_for::<T>(n, 210));
    let y = small_int_vec::<T>(n, seed_for::<T>(n, 211));
    let dx = upload(gpu, &x, &ctx);
    let dy = upload(gpu, &y, &ctx);

    let want = exact_dot(&x, &y);
    let mut out = upload(gpu, &[nan::<T>()], &ctx);
    ok(gpu::dot_into(&dx, &dy, &mut out), &ctx, "gpu::dot_into");
    let got = download(&out, &ctx)[0];
    assert!(
        same_bits(got, want),
        "{ctx}: dot is {got:?}, exactly {want:?}"
    );

    let want = exact_nrm2(&x);
    let got = ok(gpu::nrm2(&dx), &ctx, "gpu::nrm2");
    assert!(
        same_bits(got, want),
        "{ctx}: nrm2 is {got:?}, correctly rounded {want:?}"
    );
    drop(dy);

    if n <= 1 << 20 {
        for k in [1, 8, 9, 17] {
            let ys = small_int_vec::<T>(k * n, seed_for::<T>(n, 212 + k as u64));
            let dys = upload(gpu, &ys, &ctx);
            let mut dout = upload(gpu, &poison::<T>(k), &ctx);
            ok(gpu::multi_dot(&dx, &dys, &mut dout), &ctx, "gpu::multi_dot");
            let want: Vec<T> = (0..k)
                .map(|j| exact_dot(&x, &ys[j * n..(j + 1) * n]))
                .collect();
            assert_bits_eq(
                &format!("{ctx}: multi_dot k={k}"),
                &download(&dout, &ctx),
                &want,
            );
        }
    }
}

#[test]
fn gpu_reductions_are_exact_on_small_integers() {
    gpu_all_sizes!("gpu_reductions_are_exact_on_small_integers", exact_gpu_case);
}

#[test]
fn gpu_reductions_are_exact_on_small_integers_2pow27_f64() {
    let Some(gpu) = gpu_or_skip("gpu_reductions_are_exact_on_small_integers_2pow27_f64") else {
        return;
    };
    let _guard = large_lock();
    exact_gpu_case::<f64>(&gpu, LARGE_N);
    exact_gpu_case::<Complex<f64>>(&gpu, LARGE_N);
}

/// The portable CPU kernels (no FMA instruction) give the same bits as the FMA ones:
/// both round `a * b + c` once. On a CPU without FMA only the portable path exists.
fn portable_path_same_bits<T: Element>() {
    let n = 100_003;
    let x = random_vec::<T>(n, seed_for::<T>(n, 901));
    let y0 = random_vec::<T>(n, seed_for::<T>(n, 902));
    let alpha = random_scalar::<T>(903);
    let beta = random_scalar::<T>(904);
    let run = || {
        let mut y = y0.clone();
        cpu::axpy(alpha, &x, &mut y).expect("axpy");
        let mut z = y0.clone();
        cpu::axpby(alpha, &x, beta, &mut z).expect("axpby");
        let mut s = x.clone();
        cpu::scal(alpha, &mut s);
        (y, z, s, cpu::dot(&x, &y0).expect("dot"), cpu::nrm2(&x))
    };
    let fast = run();
    ferrocuda::cpu_dispatch::force_portable(true);
    let portable = run();
    ferrocuda::cpu_dispatch::force_portable(false);
    let name = tname::<T>();
    assert_bits_eq(
        &format!("axpy {name} portable vs fma"),
        &portable.0,
        &fast.0,
    );
    assert_bits_eq(
        &format!("axpby {name} portable vs fma"),
        &portable.1,
        &fast.1,
    );
    assert_bits_eq(
        &format!("scal {name} portable vs fma"),
        &portable.2,
        &fast.2,
    );
    assert!(
        same_bits(portable.3, fast.3),
        "dot {name}: portable {:?} vs fma {:?}",
        portable.3,
        fast.3
    );
    assert!(
        portable.4 == fast.4,
        "nrm2 {name}: portable {:?} vs fma {:?}",
        portable.4,
        fast.4
    );
}

#[test]
fn cpu_portable_path_gives_the_same_bits() {
    portable_path_same_bits::<f32>();
    portable_path_same_bits::<f64>();
    portable_path_same_bits::<Complex<f32>>();
    portable_path_same_bits::<Complex<f64>>();
}
