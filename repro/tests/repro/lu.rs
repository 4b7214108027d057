//! The LU variants without pivoting of Mißbach (2013) (`dense::thesis`) against the CPU
//! factorisation without pivoting.

use crate::common::gpu_or_skip;
use ferrocuda::Error;
use ferrocuda::dense::{LuOptions, LuScalar, Matrix, Pivoting, cpu};
use ferrocuda_repro::dense::thesis;

/// `n eps` of `T`: the unit of the scaled backward error.
fn n_eps<T: LuScalar>(n: usize) -> f64 {
    n as f64 * T::EPSILON.to_f64()
}

#[test]
fn thesis_unblocked_matches_cpu_reference() {
    let Some(g) = gpu_or_skip("thesis_unblocked_matches_cpu_reference") else {
        return;
    };
    for n in [1, 2, 17, 100, 257] {
        // The thesis's generator: uniform in [1, 3].
        let a = Matrix::<f64>::random(n, n, 1.0, 3.0, n as u64);
        let (f, t) = thesis::unblocked_gpu(&g, &a).unwrap();
        let r = cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)).unwrap();
        let d = f.max_rel_diff(&r.factors).unwrap();
        assert!(d < 1e-10, "n={n}: unblocked GPU vs CPU: {d}");
        assert!(t.total_ms >= t.factor_ms);
        let be =
            ferrocuda::dense::backward_error(&a, &f, &(0..n as u32).collect::<Vec<_>>()).unwrap();
        assert!(be < 1e3 * n_eps::<f64>(n), "n={n}: backward error {be}");
    }
}

#[test]
fn thesis_blocked_matches_cpu_reference() {
    let Some(g) = gpu_or_skip("thesis_blocked_matches_cpu_reference") else {
        return;
    };
    for n in [16, 32, 48, 160, 512] {
        // Diagonally dominant, so f32 without pivoting stays accurate.
        let mut a = Matrix::<f32>::random(n, n, -1.0, 1.0, n as u64);
        for k in 0..n {
            a.set(k, k, a.get(k, k) + n as f32);
        }
        let (f, _) = thesis::blocked_gpu(&g, &a).unwrap();
        let r = cpu::factor(&a, &LuOptions::default().with_pivoting(Pivoting::None)).unwrap();
        let d = f.max_rel_diff(&r.factors).unwrap();
        assert!(d < 1e-5, "n={n}: blocked GPU vs CPU: {d}");
    }
    let a = Matrix::<f32>::random(20, 20, 1.0, 3.0, 1);
    assert!(matches!(
        thesis::blocked_gpu(&g, &a),
        Err(Error::InvalidArgument { .. })
    ));
}
