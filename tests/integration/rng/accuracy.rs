//! Accuracy of Box-Muller's `ln` and `sincos(2 pi u)` (`ferrocuda_kernels::fastmath`)
//! over every argument the uniforms produce (`2^24` each), against `f64` `std`, and of
//! the normals against an `f64` Box-Muller of the same uniforms.
//!
//! Errors are in `f32` ulps of the reference (`2^(floor(log2 |y|) - 23)`). The `f64`
//! reference `sin(2 pi u)` carries the rounding of `2 pi u` in `f64` (about 1e-15
//! absolute); next to its zeros, where `|sin| >= 2 pi 2^-24`, that is below 0.04 `f32`
//! ulp, so the bounds below are those of the `f32` functions to within that.

use ferrocuda_kernels::fastmath::{ln_unit_f32, ln_unit_f64, sincos_2pi_f32, sincos_2pi_f64};
use ferrocuda_kernels::sfmt::{
    box_muller_f32, box_muller_f64, uniform_f32, uniform_f64, uniform_open0_f32, uniform_open0_f64,
};

/// `|got - want|` in `f32` ulps of `want` (`want != 0`).
fn ulps(got: f32, want: f64) -> f64 {
    let e = ((want.abs().to_bits() >> 52) as i32) - 1023;
    (got as f64 - want).abs() / 2f64.powi(e - 23)
}

/// Every `u32` whose top 24 bits are `k`, one per uniform: `k << 8`.
fn all_uniforms() -> impl Iterator<Item = u32> {
    (0u32..1 << 24).map(|k| k << 8)
}

/// The documented bounds (ulps), checked exhaustively.
const LN_ULPS: f64 = 1.0;
const SINCOS_ULPS: f64 = 1.0;
const BOX_MULLER_ULPS: f64 = 4.1;

#[test]
fn ln_unit_f32_exhaustive() {
    let mut worst = (0.0, 0.0f32);
    for x in all_uniforms() {
        let u = uniform_open0_f32(x);
        let got = ln_unit_f32(u);
        if u == 1.0 {
            assert_eq!(got.to_bits(), 0, "ln 1");
            continue;
        }
        let e = ulps(got, (u as f64).ln());
        if e > worst.0 {
            worst = (e, u);
        }
    }
    println!("ln_unit_f32: max {:.3} ulp at u = {:e}", worst.0, worst.1);
    assert!(
        worst.0 <= LN_ULPS,
        "{:.3} ulp at u = {:e}",
        worst.0,
        worst.1
    );
}

#[test]
fn sincos_2pi_f32_exhaustive() {
    let (mut ws, mut wc) = ((0.0, 0.0f32), (0.0, 0.0f32));
    for x in all_uniforms() {
        let u = uniform_f32(x);
        let (s, c) = sincos_2pi_f32(u);
        if (4.0 * u).fract() == 0.0 {
            // Zeros and ones are exact: u = 0, 1/4, 1/2, 3/4.
            let q = (4.0 * u) as usize;
            assert_eq!((s, c), ([0.0, 1.0, 0.0, -1.0][q], [1.0, 0.0, -1.0, 0.0][q]));
            continue;
        }
        let (rs, rc) = (2.0 * std::f64::consts::PI * u as f64).sin_cos();
        let (es, ec) = (ulps(s, rs), ulps(c, rc));
        if es > ws.0 {
            ws = (es, u);
        }
        if ec > wc.0 {
            wc = (ec, u);
        }
    }
    println!(
        "sincos_2pi_f32: sin max {:.3} ulp at u = {:e}, cos max {:.3} ulp at u = {:e}",
        ws.0, ws.1, wc.0, wc.1
    );
    assert!(ws.0 <= SINCOS_ULPS && wc.0 <= SINCOS_ULPS);
}

/// The normals: the largest relative errors of the radius `sqrt(-2 ln u1)` and of the
/// sine and cosine, each over all `2^24` uniforms, bound every output's error (`z = r c`
/// rounds once more); a sample of pairs, edges included, stays within that bound
/// against an `f64` Box-Muller of the same uniforms.
#[test]
fn box_muller_f32_error_bound() {
    let rel = |got: f32, want: f64| (got as f64 - want).abs() / want.abs();
    let mut er: f64 = 0.0;
    for x in all_uniforms() {
        let u = uniform_open0_f32(x) as f64;
        // The radius alone: pair with y = 0, where cos = 1 exactly.
        let (z, _) = box_muller_f32(x, 0);
        if u < 1.0 {
            er = er.max(rel(z, (-2.0 * u.ln()).sqrt()));
        } else {
            assert_eq!(z, 0.0);
        }
    }
    let mut ea: f64 = 0.0;
    for x in all_uniforms() {
        let u = uniform_f32(x) as f64;
        let (s, c) = sincos_2pi_f32(u as f32);
        let (rs, rc) = (2.0 * std::f64::consts::PI * u).sin_cos();
        for (g, w) in [(s, rs), (c, rc)] {
            if g != 0.0 {
                ea = ea.max(rel(g, w));
            }
        }
    }
    // (1 + er)(1 + ea)(1 + 2^-24) - 1, in units of 2^-24 (an ulp is at least 2^-24 |z|).
    let bound = ((1.0 + er) * (1.0 + ea) * (1.0 + 2f64.powi(-24)) - 1.0) * 2f64.powi(24);
    println!(
        "box_muller_f32: radius {:.3}, sin/cos {:.3} (relative, 2^-24 units); bound {bound:.3} ulp",
        er * 2f64.powi(24),
        ea * 2f64.powi(24)
    );
    assert!(bound <= BOX_MULLER_ULPS, "bound {bound:.3} ulp");
    let mut g = ferrocuda::rng::Sfmt::new(ferrocuda::rng::Mexp::M19937, 26);
    let mut raw = vec![0u32; 1 << 22];
    g.fill_u32(&mut raw);
    let edges = [
        0u32,
        255,
        256,
        1 << 30,
        1 << 31,
        3 << 30,
        u32::MAX - 255,
        u32::MAX,
    ];
    let pairs = raw.chunks_exact(2).map(|p| (p[0], p[1])).chain(
        edges
            .iter()
            .flat_map(|&a| edges.iter().map(move |&b| (a, b))),
    );
    let mut worst: f64 = 0.0;
    for (x, y) in pairs {
        let (z0, z1) = box_muller_f32(x, y);
        let r = (-2.0 * (uniform_open0_f32(x) as f64).ln()).sqrt();
        let (s, c) = (2.0 * std::f64::consts::PI * uniform_f32(y) as f64).sin_cos();
        for (got, want) in [(z0, r * c), (z1, r * s)] {
            if want.abs() > 1e-12 {
                worst = worst.max(ulps(got, want));
            } else {
                assert!(got.abs() <= 1e-6, "{got} for {want} at ({x}, {y})");
            }
        }
    }
    println!("box_muller_f32: sampled pairs max {worst:.3} ulp");
    assert!(worst <= bound, "{worst:.3} ulp above the bound {bound:.3}");
}

/// `|got - want|` in `f64` ulps of `want` (`want != 0`).
fn ulps64(got: f64, want: f64) -> f64 {
    let e = ((want.abs().to_bits() >> 52) as i32) - 1023;
    (got - want).abs() / 2f64.powi(e - 52)
}

/// `(sin 2 pi u, cos 2 pi u)` from `std`, reduced another way than `sincos_2pi_f64`:
/// `d = u - k/2` exact in `[-1/4, 1/4]`, `cos 2 pi d = sin 2 pi (1/4 - |d|)`, so every
/// argument is at most `pi/2` and its rounding costs at most about 1 `f64` ulp of the
/// result, zeros included.
fn sincos_2pi_reference(u: f64) -> (f64, f64) {
    let k = (2.0 * u).round();
    let d = u - k / 2.0;
    let sign = if k as i64 % 2 == 0 { 1.0 } else { -1.0 };
    let tau = std::f64::consts::TAU;
    (
        sign * (tau * d).sin(),
        sign * (tau * (0.25 - d.abs())).sin(),
    )
}

/// `f64`: 2^22 sampled draws plus edges (2^53 uniforms are too many to try), against
/// `std`, whose own error (about 0.5 ulp for `ln`, up to about 1 ulp for the reduced
/// `sin`) is inside the bounds, and two `f64` results differ by whole ulps: `ln` within
/// 1 ulp, `sin`/`cos` within 2 ulp, the normals within 3 ulp of the same Box-Muller in
/// `std` `f64`.
#[test]
fn f64_functions_sampled() {
    let mut g = ferrocuda::rng::Sfmt::new(ferrocuda::rng::Mexp::M19937, 64);
    let mut raw = vec![0u64; 1 << 22];
    g.fill_u64(&mut raw);
    let q = |i: u64| i << 62;
    let edges = [
        0,
        1 << 11,
        u64::MAX,
        q(1),
        q(1) - (1 << 11),
        q(2),
        q(2) + (1 << 11),
        q(3),
    ];
    let (mut el, mut es, mut ez) = (0f64, 0f64, 0f64);
    for &x in raw.iter().chain(&edges) {
        let u1 = uniform_open0_f64(x);
        if u1 < 1.0 {
            el = el.max(ulps64(ln_unit_f64(u1), u1.ln()));
        } else {
            assert_eq!(ln_unit_f64(u1).to_bits(), 0, "ln 1");
        }
        let u = uniform_f64(x);
        let (s, c) = sincos_2pi_f64(u);
        let (rs, rc) = sincos_2pi_reference(u);
        for (got, want) in [(s, rs), (c, rc)] {
            if want == 0.0 {
                assert_eq!(got, 0.0, "u = {u}");
            } else {
                es = es.max(ulps64(got, want));
            }
        }
    }
    for p in raw.chunks_exact(2) {
        let (z0, z1) = box_muller_f64(p[0], p[1]);
        let r = (-2.0 * uniform_open0_f64(p[0]).ln()).sqrt();
        let (rs, rc) = sincos_2pi_reference(uniform_f64(p[1]));
        ez = ez.max(ulps64(z0, r * rc)).max(ulps64(z1, r * rs));
    }
    println!("f64: ln {el:.3} ulp, sincos {es:.3} ulp, normals {ez:.3} ulp (sampled)");
    assert!(el <= 1.0 && es <= 2.0 && ez <= 3.0);
}
