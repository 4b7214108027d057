//! Dense LU on the GPU against the CPU twin and an f64 reference: GEMM kernels on odd
//! sizes with poisoned outputs, the pivoting LU (pivots equal, factors to rounding,
//! backward error), singular matrices, and seed 004's two reproductions.

use crate::common;

use common::gpu_or_skip;
use ferrocuda::Error;
use ferrocuda::dense::{LuOptions, LuScalar, Matrix, Pivoting, cpu, gpu};

/// `C = alpha A B + beta C` in f64 on the host (the reference).
#[allow(clippy::too_many_arguments)]
fn gemm_ref(
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    b: &[f64],
    beta: f64,
    c: &[f64],
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            let mut s = 0.0;
            for p in 0..k {
                s += a[i + p * m] * b[p + j * k];
            }
            out[i + j * m] = alpha * s
                + if beta == 0.0 {
                    0.0
                } else {
                    beta * c[i + j * m]
                };
        }
    }
    out
}

fn check_gemm<T: LuScalar>(tensor: bool, tol: f64) {
    let Some(g) = gpu_or_skip("gemm_gpu_matches_reference") else {
        return;
    };
    let kernel = gpu::GemmKernel::pick::<T>(&g, tensor).unwrap();
    check_gemm_with::<T>(kernel, tol);
}

fn check_gemm_with<T: LuScalar>(kernel: gpu::GemmKernel, tol: f64) {
    let Some(g) = gpu_or_skip("gemm_gpu_matches_reference") else {
        return;
    };
    for &(m, n, k) in &[
        (1, 1, 1),
        (3, 5, 7),
        (33, 31, 17),
        (127, 129, 64),
        (128, 128, 128),
        (257, 130, 9),
        (200, 300, 255),
    ] {
        for &(alpha, beta) in &[(1.0, 0.0), (-1.0, 1.0), (0.5, -2.0)] {
            let a = Matrix::<T>::random(m, k, -1.0, 1.0, (m * 7 + k) as u64);
            let b = Matrix::<T>::random(k, n, -1.0, 1.0, (n * 13 + k) as u64);
            let c0 = Matrix::<T>::random(m, n, -1.0, 1.0, (m * n) as u64);
            let da = g.upload(a.as_slice()).unwrap();
            let db = g.upload(b.as_slice()).unwrap();
            let mut dc = if beta == 0.0 {
                // Poison: beta = 0 must not read C, and every element must be written.
                g.upload(&vec![T::from_f64(f64::NAN); m * n]).unwrap()
            } else {
                g.upload(c0.as_slice()).unwrap()
            };
            gpu::gemm_with(
                kernel,
                (m, n, k),
                T::from_f64(alpha),
                (&da, m),
                (&db, k),
                T::from_f64(beta),
                (&mut dc, m),
            )
            .unwrap();
            let got = dc.download().unwrap();
            let f = |x: &Matrix<T>| x.as_slice().iter().map(|v| v.to_f64()).collect::<Vec<_>>();
            let want = gemm_ref(m, n, k, alpha, &f(&a), &f(&b), beta, &f(&c0));
            for (idx, (&x, &w)) in got.iter().zip(&want).enumerate() {
                let x = x.to_f64();
                assert!(
                    (x - w).abs() <= tol * (k as f64 + 2.0),
                    "{} {kernel:?} m={m} n={n} k={k} alpha={alpha} beta={beta}: C[{idx}] = {x}, want {w}",
                    T::SUFFIX
                );
            }
        }
    }
}

#[test]
fn gemm_dmma_f64_matches_reference() {
    check_gemm::<f64>(true, 1e-15);
}

#[test]
fn gemm_dmma_884_f64_matches_reference() {
    check_gemm_with::<f64>(gpu::GemmKernel::Dmma884, 1e-15);
}

#[test]
fn gemm_sm90_f64_matches_reference_or_is_refused() {
    let Some(g) = gpu_or_skip("gemm_sm90_f64_matches_reference_or_is_refused") else {
        return;
    };
    let hopper = g.compute_capability().unwrap().0 >= 9;
    for k in [4, 8, 16] {
        let kernel = gpu::GemmKernel::Sm90 { k };
        if hopper {
            check_gemm_with::<f64>(kernel, 1e-15);
        } else {
            let a = g.upload(&[1.0f64; 4]).unwrap();
            let mut c = g.alloc_zeroed::<f64>(4).unwrap();
            assert!(matches!(
                gpu::gemm_with(kernel, (2, 2, 2), 1.0, (&a, 2), (&a, 2), 0.0, (&mut c, 2)),
                Err(Error::InvalidArgument { .. })
            ));
        }
    }
    // No f32 kernel of this kind, and no shape k = 5.
    let a = g.upload(&[1.0f32; 4]).unwrap();
    let mut c = g.alloc_zeroed::<f32>(4).unwrap();
    for kernel in [gpu::GemmKernel::Sm90 { k: 8 }, gpu::GemmKernel::Dmma884] {
        assert!(matches!(
            gpu::gemm_with(kernel, (2, 2, 2), 1.0, (&a, 2), (&a, 2), 0.0, (&mut c, 2)),
            Err(Error::InvalidArgument { .. })
        ));
    }
    let a = g.upload(&[1.0f64; 4]).unwrap();
    let mut c = g.alloc_zeroed::<f64>(4).unwrap();
    assert!(matches!(
        gpu::gemm_with(
            gpu::GemmKernel::Sm90 { k: 5 },
            (2, 2, 2),
            1.0,
            (&a, 2),
            (&a, 2),
            0.0,
            (&mut c, 2)
        ),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn gemm_cuda_cores_matches_reference() {
    check_gemm::<f64>(false, 1e-15);
    check_gemm::<f32>(false, 1e-6);
}

#[test]
fn gemm_rejects_bad_shapes() {
    let Some(g) = gpu_or_skip("gemm_rejects_bad_shapes") else {
        return;
    };
    let a = g.upload(&[1.0f64; 6]).unwrap();
    let b = g.upload(&[1.0f64; 6]).unwrap();
    let mut c = g.alloc_zeroed::<f64>(4).unwrap();
    // A is 3 x 2 with lda = 2 < 3 rows.
    assert!(matches!(
        gpu::gemm(true, (3, 2, 2), 1.0, (&a, 2), (&b, 2), 0.0, (&mut c, 3)),
        Err(Error::InvalidArgument { .. })
    ));
    // C needs 3 * 2 = 6 elements, has 4.
    assert!(matches!(
        gpu::gemm(true, (3, 2, 2), 1.0, (&a, 3), (&b, 2), 0.0, (&mut c, 3)),
        Err(Error::DimensionMismatch { .. })
    ));
}

/// `n eps` of `T`: the unit of the scaled backward error.
fn n_eps<T: LuScalar>(n: usize) -> f64 {
    n as f64 * T::EPSILON.to_f64()
}

fn check_lu<T: LuScalar>(n: usize, block: usize, tensor: bool, seed: u64) {
    check_lu_with::<T>(n, block, tensor, true, seed);
}

fn check_lu_with<T: LuScalar>(n: usize, block: usize, tensor: bool, leaf: bool, seed: u64) {
    let Some(g) = gpu_or_skip("lu_gpu_matches_cpu") else {
        return;
    };
    let a = Matrix::<T>::random(n, n, -1.0, 1.0, seed);
    let opts = LuOptions::default()
        .with_block(block)
        .with_tensor_cores(tensor)
        .with_leaf_panel(leaf);
    let c = cpu::factor(&a, &opts).unwrap();
    let d = gpu::factor(&g, &a, &opts).unwrap();
    let what = format!(
        "{} n={n} block={block} tensor={tensor} leaf={leaf}",
        T::SUFFIX
    );
    let be = d.report.scaled_backward_error.unwrap();
    assert!(be < 2.0, "{what}: GPU backward error {be} n eps");
    let rc = (d.report.rcond, c.report.rcond);
    assert!(
        (rc.0 - rc.1).abs() <= 1e-3 * rc.1,
        "{what}: rcond GPU vs CPU {rc:?}"
    );
    assert!(
        d.report.total_ms.is_some() && d.report.factor_ms > 0.0,
        "{what}: times"
    );
    // Random matrices have well separated pivots: the same rows are chosen.
    assert_eq!(d.ipiv, c.ipiv, "{what}: pivots differ");
    let eps = T::EPSILON.to_f64();
    let scale = c
        .factors
        .as_slice()
        .iter()
        .fold(0.0f64, |m, x| m.max(x.to_f64().abs()));
    let mut worst = 0.0f64;
    for (x, y) in d.factors.as_slice().iter().zip(c.factors.as_slice()) {
        assert!(x.to_f64().is_finite(), "{what}: non-finite factor");
        worst = worst.max((x.to_f64() - y.to_f64()).abs());
    }
    assert!(
        worst <= 1e3 * (n as f64) * eps * scale,
        "{what}: GPU and CPU factors differ by {worst} (scale {scale})"
    );
}

#[test]
fn lu_gpu_matches_cpu_f64() {
    for &(n, block) in &[
        (1, 64),
        (2, 64),
        (3, 1),
        (31, 8),
        (33, 32),
        (64, 64),
        (65, 64),
        (129, 128),
        (255, 32),
        (257, 64),
        (600, 128),
    ] {
        check_lu::<f64>(n, block, true, n as u64);
    }
    check_lu::<f64>(300, 64, false, 9);
    check_lu::<f64>(2049, 128, true, 10);
}

#[test]
fn lu_gpu_per_column_panel_matches_cpu() {
    for &(n, block) in &[(3, 1), (65, 64), (257, 64), (600, 128)] {
        check_lu_with::<f64>(n, block, true, false, n as u64 + 7);
    }
    check_lu_with::<f32>(129, 64, false, false, 3);
}

/// The cooperative leaf panel on the device-resident path: `ipiv` poisoned beforehand
/// (every entry must be written), leaves of 32 with remainders (block 96, 100), pivots
/// that live in other blocks' row slices (tiny leading entries), against the CPU twin.
#[test]
fn lu_leaf_panel_writes_every_pivot_and_matches_cpu() {
    let Some(g) = gpu_or_skip("lu_leaf_panel_writes_every_pivot_and_matches_cpu") else {
        return;
    };
    for &(n, block) in &[(1000, 96), (777, 100), (2051, 128)] {
        let mut a = Matrix::<f64>::random(n, n, -1.0, 1.0, n as u64 + 11);
        // Tiny leading entries in the first rows of every column: pivoting must reach
        // far down (other blocks' slices) for them.
        for j in 0..n {
            for i in 0..(j + 1).min(8) {
                a.set(i, j, a.get(i, j) * 1e-12);
            }
        }
        let opts = LuOptions::default().with_block(block);
        let mut d = g.upload(a.as_slice()).unwrap();
        let mut ipiv = g.upload(&vec![u32::MAX; n]).unwrap();
        let mut ws = gpu::LuWorkspace::new(&g).unwrap();
        gpu::factor_device(n, &mut d, &mut ipiv, &mut ws, &opts).unwrap();
        let ipiv = ipiv.download().unwrap();
        let f = Matrix::new(n, n, d.download().unwrap()).unwrap();
        let c = cpu::factor(&a, &opts).unwrap();
        assert!(
            ipiv.iter().all(|&p| (p as usize) < n),
            "n={n}: unwritten pivot"
        );
        assert_eq!(ipiv, c.ipiv, "n={n}: pivots differ from the CPU's");
        let be = ferrocuda::dense::backward_error(&a, &f, &ipiv).unwrap() / n_eps::<f64>(n);
        assert!(be < 2.0, "n={n}: backward error {be} n eps");
        // Twice in a row on the same workspace (the barrier counter goes on).
        let mut d2 = g.upload(a.as_slice()).unwrap();
        let mut ipiv2 = g.upload(&vec![u32::MAX; n]).unwrap();
        gpu::factor_device(n, &mut d2, &mut ipiv2, &mut ws, &opts).unwrap();
        assert_eq!(ipiv2.download().unwrap(), ipiv, "n={n}: second run differs");
        assert_eq!(
            d2.download().unwrap(),
            f.as_slice(),
            "n={n}: second run differs"
        );
    }
}

/// Look-ahead (each next panel on a second, high-priority stream) against the serial
/// schedule: the same kernels on the same columns, so bit-identical factors and pivots;
/// wide panels (recursive halves, recursive trsm above 64 rows, blocks not multiples of
/// 32) against the CPU twin, with tiny leading entries that send pivots into other
/// blocks' row slices; `ipiv` poisoned before each run.
#[test]
fn lu_gpu_lookahead_and_wide_panels_match_cpu() {
    let Some(g) = gpu_or_skip("lu_gpu_lookahead_and_wide_panels_match_cpu") else {
        return;
    };
    for &(n, block, per_column) in &[
        (700, 256, true),
        (1100, 512, false),
        (1500, 200, true),
        (2100, 128, false),
        (3000, 384, false),
    ] {
        let mut a = Matrix::<f64>::random(n, n, -1.0, 1.0, n as u64 + 21);
        for j in 0..n {
            for i in 0..(j + 1).min(8) {
                a.set(i, j, a.get(i, j) * 1e-12);
            }
        }
        let c = cpu::factor(&a, &LuOptions::default().with_block(block)).unwrap();
        let leaves: &[bool] = if per_column { &[true, false] } else { &[true] };
        for &leaf in leaves {
            let mut runs = Vec::new();
            for lookahead in [true, false] {
                let opts = LuOptions::default()
                    .with_block(block)
                    .with_leaf_panel(leaf)
                    .with_lookahead(lookahead);
                let mut d = g.upload(a.as_slice()).unwrap();
                let mut ipiv = g.upload(&vec![u32::MAX; n]).unwrap();
                let mut ws = gpu::LuWorkspace::new(&g).unwrap();
                gpu::factor_device(n, &mut d, &mut ipiv, &mut ws, &opts).unwrap();
                runs.push((ipiv.download().unwrap(), d.download().unwrap()));
            }
            let what = format!("n={n} block={block} leaf={leaf}");
            let (ipiv, f) = &runs[0];
            assert_eq!(
                ipiv, &c.ipiv,
                "{what}: look-ahead pivots differ from the CPU's"
            );
            assert_eq!(&runs[1].0, ipiv, "{what}: serial pivots differ");
            assert!(
                runs[1].1 == *f,
                "{what}: look-ahead and serial factors are not bit-identical"
            );
            let f = Matrix::new(n, n, f.clone()).unwrap();
            let be = ferrocuda::dense::backward_error(&a, &f, ipiv).unwrap() / n_eps::<f64>(n);
            assert!(be < 2.0, "{what}: backward error {be} n eps");
            let diff = f.max_rel_diff(&c.factors).unwrap();
            assert!(
                diff < 1e3 * n as f64 * f64::EPSILON,
                "{what}: GPU and CPU factors differ by {diff}"
            );
        }
    }
}

#[test]
fn lu_gpu_matches_cpu_f32() {
    for &(n, block) in &[(1, 64), (33, 16), (129, 64), (500, 128)] {
        check_lu::<f32>(n, block, false, n as u64 + 1);
    }
}

#[test]
fn lu_gpu_pivots_zero_leading_entries_and_solves() {
    let Some(g) = gpu_or_skip("lu_gpu_pivots_zero_leading_entries_and_solves") else {
        return;
    };
    let n = 150;
    let mut a = Matrix::<f64>::random(n, n, -1.0, 1.0, 42);
    for k in 0..n {
        a.set(k, k, 0.0);
    }
    let b = Matrix::<f64>::random(n, 4, -1.0, 1.0, 43);
    let opts = LuOptions::default().with_block(32);
    let (x, report) = gpu::solve(&g, &a, &b, &opts).unwrap();
    assert!(report.scaled_backward_error.unwrap() < 2.0);
    let (xc, _) = ferrocuda::dense::solve(&a, &b, &opts).unwrap();
    for (u, v) in x.as_slice().iter().zip(xc.as_slice()) {
        assert!((u - v).abs() < 1e-9 * (1.0 + v.abs()), "{u} vs {v}");
    }
}

#[test]
fn lu_gpu_singular_names_the_column() {
    let Some(g) = gpu_or_skip("lu_gpu_singular_names_the_column") else {
        return;
    };
    // 101 x 101 with small panels; 700 x 700 with wide panels and look-ahead: the zero
    // column in the first, a middle and the last panel.
    for (n, k, block) in [
        (101, 0, 16),
        (101, 17, 16),
        (101, 99, 32),
        (101, 100, 64),
        (700, 300, 256),
        (700, 40, 256),
        (700, 699, 256),
    ] {
        let mut a = Matrix::<f64>::random(n, n, -1.0, 1.0, 5);
        for i in 0..n {
            a.set(i, k, 0.0);
        }
        for pivoting in [Pivoting::Partial, Pivoting::None] {
            for leaf in [true, false] {
                let opts = LuOptions::default()
                    .with_block(block)
                    .with_pivoting(pivoting)
                    .with_leaf_panel(leaf);
                match gpu::factor(&g, &a, &opts) {
                    Err(Error::Singular { column, .. }) => {
                        assert_eq!(column, k, "{pivoting:?} leaf={leaf}")
                    }
                    other => panic!("zero column {k} {pivoting:?} leaf={leaf}: {other:?}"),
                }
            }
        }
    }
    let r = Matrix::<f64>::zeros(2, 3);
    assert!(matches!(
        gpu::factor(&g, &r, &LuOptions::default()),
        Err(Error::NotSquare { .. })
    ));
}

#[test]
fn lu_gpu_no_pivoting_matches_cpu() {
    let Some(g) = gpu_or_skip("lu_gpu_no_pivoting_matches_cpu") else {
        return;
    };
    let n = 300;
    let a = Matrix::<f64>::random(n, n, 1.0, 3.0, 8);
    let opts = LuOptions::default()
        .with_block(64)
        .with_pivoting(Pivoting::None);
    let c = cpu::factor(&a, &opts).unwrap();
    let d = gpu::factor(&g, &a, &opts).unwrap();
    assert_eq!(d.ipiv, (0..n as u32).collect::<Vec<_>>());
    let be = d.report.scaled_backward_error.unwrap();
    let bc = c.report.scaled_backward_error.unwrap();
    assert!(be < 10.0 * bc.max(1.0), "GPU {be} vs CPU {bc} (n eps)");
}

/// Row interchanges in order on the host: the reference for `gpu::laswp`.
fn laswp_ref(a: &mut [f64], nrows: usize, ipiv: &[u32], (k0, k1): (usize, usize)) {
    for col in a.chunks_mut(nrows) {
        for (k, &p) in ipiv.iter().enumerate().take(k1).skip(k0) {
            col.swap(k, p as usize);
        }
    }
}

#[test]
fn laswp_matches_swaps_in_order_on_adversarial_pivots() {
    use rand::{Rng, SeedableRng, rngs::SmallRng};
    let Some(g) = gpu_or_skip("laswp_matches_swaps_in_order_on_adversarial_pivots") else {
        return;
    };
    let (nrows, ncols) = (1100, 37);
    let a0: Vec<f64> = (0..nrows * ncols).map(|e| e as f64).collect();
    let mut rng = SmallRng::seed_from_u64(7);
    // Pivot sequences that a swap plan must untangle: uniform below, one outside row
    // chosen again and again, chains (each row the next one's), no interchange at all,
    // and a few rows both inside and outside the panel chosen many times.
    let patterns: Vec<(&str, Vec<u32>)> = vec![
        (
            "uniform",
            (0..nrows)
                .map(|k| rng.random_range(k..nrows) as u32)
                .collect(),
        ),
        (
            "same outside row",
            (0..nrows).map(|k| (k.max(1050)) as u32).collect(),
        ),
        (
            "chain",
            (0..nrows).map(|k| (k + 1).min(nrows - 1) as u32).collect(),
        ),
        ("identity", (0..nrows as u32).collect()),
        (
            "few rows",
            (0..nrows)
                .map(|k| {
                    let c = [k, k + 3, 1040, 1041, 1099, 600][rng.random_range(0..6)];
                    c.clamp(k, nrows - 1) as u32
                })
                .collect(),
        ),
    ];
    for (name, ipiv) in &patterns {
        // Past one plan of 512, a short range, a range ending at the last row.
        for range in [(0, 1030), (5, 50), (700, 1100)] {
            let mut want = a0.clone();
            laswp_ref(&mut want, nrows, ipiv, range);
            let mut d = g.upload(&a0).unwrap();
            gpu::laswp(&mut d, nrows, ipiv, range).unwrap();
            let got = d.download().unwrap();
            assert!(
                got == want,
                "{name}, interchanges {range:?}: rows differ from swaps in order"
            );
        }
    }
    // Bad input is refused and leaves the matrix as it was.
    let mut d = g.upload(&a0).unwrap();
    let mut ipiv = patterns[0].1.clone();
    ipiv[10] = 3; // above row 10
    for (piv, nr, range) in [
        (&ipiv, nrows, (0, 20)),
        (&patterns[0].1, nrows - 1, (0, 20)), // not whole columns
        (&patterns[0].1, nrows, (0, nrows + 1)),
    ] {
        assert!(matches!(
            gpu::laswp(&mut d, nr, piv, range),
            Err(Error::InvalidArgument { .. })
        ));
    }
    assert!(d.download().unwrap() == a0);
}

/// The GPU path checks and reports as the CPU twin: NaN or infinity is an error naming
/// the entry before anything is uploaded; `rcond` (from the downloaded factors) and the
/// singular-to-working-precision state agree with the CPU's; a zero pivot without
/// pivoting on a nonsingular matrix is `ZeroPivot`, not `Singular`.
#[test]
fn lu_gpu_checks_input_and_reports_the_condition_like_the_cpu() {
    let Some(g) = gpu_or_skip("lu_gpu_checks_input_and_reports_the_condition_like_the_cpu") else {
        return;
    };
    let mut a = Matrix::<f64>::random(40, 40, -1.0, 1.0, 3);
    a.set(7, 11, f64::NAN);
    match gpu::factor(&g, &a, &LuOptions::default()) {
        Err(Error::NonFinite {
            row: 7, col: 11, ..
        }) => {}
        other => panic!("NaN at (7, 11): {other:?}"),
    }
    let mut b = Matrix::<f64>::random(40, 2, -1.0, 1.0, 4);
    b.set(5, 1, f64::INFINITY);
    a.set(7, 11, 0.5);
    assert!(matches!(
        gpu::solve(&g, &a, &b, &LuOptions::default()),
        Err(Error::NonFinite {
            what: "B",
            row: 5,
            col: 1,
            ..
        })
    ));
    // Rank 40 of 80: singular to working precision on both, solves refused.
    let x = Matrix::<f64>::random(80, 40, -1.0, 1.0, 5);
    let y = Matrix::<f64>::random(40, 80, -1.0, 1.0, 6);
    let r = Matrix::<f64>::from_fn(80, 80, |i, j| {
        (0..40).map(|k| x.get(i, k) * y.get(k, j)).sum()
    });
    let opts = LuOptions::default().with_block(32);
    let d = gpu::factor(&g, &r, &opts).expect("factors are returned");
    assert!(d.report.singular_to_working_precision, "{:?}", d.report);
    let b = Matrix::<f64>::random(80, 1, -1.0, 1.0, 7);
    assert!(matches!(
        gpu::solve(&g, &r, &b, &opts),
        Err(Error::SingularToWorkingPrecision { .. })
    ));
    // Well conditioned: the same rcond as the CPU's to rounding, f64 and f32.
    let w = Matrix::<f64>::random(300, 300, -1.0, 1.0, 8);
    let (c, d) = (
        cpu::factor(&w, &opts).unwrap(),
        gpu::factor(&g, &w, &opts).unwrap(),
    );
    assert!(!d.report.singular_to_working_precision);
    assert!((d.report.rcond - c.report.rcond).abs() <= 1e-6 * c.report.rcond);
    let w32 = w.convert::<f32>();
    let (c, d) = (
        cpu::factor(&w32, &opts).unwrap(),
        gpu::factor(&g, &w32, &opts).unwrap(),
    );
    assert!((d.report.rcond - c.report.rcond).abs() <= 1e-2 * c.report.rcond);
    // Zero pivots without pivoting.
    let none = LuOptions::default().with_pivoting(Pivoting::None);
    let n = 100;
    let p = Matrix::<f64>::from_fn(n, n, |i, j| if (i + 1) % n == j { 1.0 } else { 0.0 });
    for leaf in [true, false] {
        match gpu::factor(&g, &p, &none.with_leaf_panel(leaf)) {
            Err(e @ Error::ZeroPivot { column: 0, .. }) => {
                assert!(e.to_string().contains("zero pivot without pivoting"), "{e}")
            }
            other => panic!("leaf={leaf}: {other:?}"),
        }
    }
    let t = Matrix::new(3, 3, vec![1.0f64, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]).unwrap();
    assert!(matches!(
        gpu::factor(&g, &t, &none),
        Err(Error::ZeroPivot { column: 1, .. })
    ));
    // factor_device with an n whose square overflows: an error, not a wrap.
    let mut d = g.alloc::<f64>(4).unwrap();
    let mut ipiv = g.alloc::<u32>(4).unwrap();
    let mut ws = gpu::LuWorkspace::new(&g).unwrap();
    let e = gpu::factor_device(1 << 33, &mut d, &mut ipiv, &mut ws, &opts).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}
