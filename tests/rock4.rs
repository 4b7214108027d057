//! ROCK4 on the CPU: the embedded tables (shapes and the order conditions of check.py),
//! fourth-order convergence and the exact semi-discrete solution of the 2D heat
//! equation, seed 001's reaction-advection-diffusion problem against a tight-tolerance
//! reference, accept/reject, one thread against all cores, and bad input.

use ferrocuda::rock4::coeffs::{DEGREES, RECF_LEN, tables};
use ferrocuda::rock4::problems::Heat2d;
use ferrocuda::rock4::{Rock4Options, StopReason, cpu};

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

// ---------------------------------------------------------------- tables

const N: usize = 5;
type Poly = [f64; N];

fn mul(p: &Poly, q: &Poly) -> Poly {
    let mut r = [0.0; N];
    for i in 0..N {
        for j in 0..N - i {
            r[i + j] += p[i] * q[j];
        }
    }
    r
}

/// `1 + sum_k z^k b^T A^(k-1) 1` of an explicit tableau, through z^4.
fn finishing_poly(a: &[Vec<f64>], b: &[f64]) -> Poly {
    let s = b.len();
    let mut v = vec![1.0; s];
    let mut w = [0.0; N];
    w[0] = 1.0;
    for wk in w.iter_mut().skip(1) {
        *wk = b.iter().zip(&v).map(|(x, y)| x * y).sum();
        v = (0..s)
            .map(|i| (0..s).map(|k| a[i][k] * v[k]).sum())
            .collect();
    }
    w
}

#[test]
fn tables_have_the_published_shapes() {
    let t = tables();
    assert_eq!(
        (t.ms.len(), t.fpa.len(), t.fpb.len(), t.fpbe.len()),
        (50, 50, 50, 50)
    );
    assert_eq!(DEGREES, 50);
    assert_eq!(t.recf.len(), RECF_LEN);
    let mut ms: Vec<usize> = (1..=20).collect();
    ms.extend((22..=38).step_by(2));
    ms.extend((41..=59).step_by(3));
    ms.extend([63, 67, 71, 76, 81, 86, 92, 98, 105, 112, 120, 129, 138, 148]);
    assert_eq!(t.ms, ms);
    assert_eq!(t.ms.iter().map(|m| 2 * m - 1).sum::<usize>(), RECF_LEN);
    // 1-based block starts 1, 2, 5, 10, 17 ... 4088 (ALGORITHM.md §2).
    let starts: Vec<usize> = (0..5).map(|i| t.block_start(i) + 1).collect();
    assert_eq!(starts, [1, 2, 5, 10, 17]);
    assert_eq!(t.block_start(49) + 1, 4088);
    assert_eq!(t.degree(49).recf.len(), 2 * 148 - 1);
    assert!(t.recf.iter().all(|v| v.is_finite()));
    // Degree lookup rounds up to the next tabulated m.
    assert_eq!(t.degree_for(1).m, 1);
    assert_eq!(t.degree_for(21).m, 22);
    assert_eq!(t.degree_for(148).m, 148);
    assert_eq!(t.degree_for(121).stages(), 133);
}

#[test]
fn tables_satisfy_the_order_conditions() {
    let t = tables();
    let target = [1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0];
    let (mut worst_cons, mut worst_o4, mut worst_e3) = (0.0f64, 0.0f64, 0.0f64);
    let mut min_e4 = f64::INFINITY;
    for i in 0..DEGREES {
        let d = t.degree(i);
        let mut pm2: Poly = [1.0, 0.0, 0.0, 0.0, 0.0];
        let mut pm1: Poly = [1.0, d.a1(), 0.0, 0.0, 0.0];
        let (mut tm2, mut tm1) = (0.0, d.a1());
        for j in 2..=d.m {
            let (a, c) = d.ac(j);
            let prod = mul(&[1.0 + c, a, 0.0, 0.0, 0.0], &pm1);
            let next: Poly = std::array::from_fn(|k| prod[k] - c * pm2[k]);
            (pm2, pm1) = (pm1, next);
            (tm2, tm1) = (tm1, a + (1.0 + c) * tm1 - c * tm2);
        }
        let p = d.fpa;
        let a = vec![
            vec![0.0; 4],
            vec![p[0], 0.0, 0.0, 0.0],
            vec![p[1], p[2], 0.0, 0.0],
            vec![p[3], p[4], p[5], 0.0],
        ];
        let b = d.fpb;
        let r = mul(&pm1, &finishing_poly(&a, b));
        let mut ae: Vec<Vec<f64>> = a
            .iter()
            .map(|row| [row.clone(), vec![0.0]].concat())
            .collect();
        ae.push(vec![b[0], b[1], b[2], b[3], 0.0]);
        let re = mul(&pm1, &finishing_poly(&ae, d.fpbe));
        let cons = (tm1 + b.iter().sum::<f64>() - 1.0)
            .abs()
            .max((d.fpbe.iter().sum::<f64>() - b.iter().sum::<f64>()).abs());
        let o4 = (0..5).map(|k| (r[k] - target[k]).abs()).fold(0.0, f64::max);
        let e3 = (0..4)
            .map(|k| (re[k] - target[k]).abs())
            .fold(0.0, f64::max);
        assert!(
            cons < 1e-12,
            "degree {} (m = {}): consistency {cons:e}",
            i + 1,
            d.m
        );
        assert!(o4 < 1e-12, "degree {} (m = {}): order 4 {o4:e}", i + 1, d.m);
        assert!(
            e3 < 1e-12,
            "degree {} (m = {}): embedded order 3 {e3:e}",
            i + 1,
            d.m
        );
        worst_cons = worst_cons.max(cons);
        worst_o4 = worst_o4.max(o4);
        worst_e3 = worst_e3.max(e3);
        min_e4 = min_e4.min((re[4] - target[4]).abs());
    }
    // The embedded method really is only of order 3.
    assert!(min_e4 > 1e-6, "{min_e4:e}");
    println!(
        "consistency {worst_cons:.1e}, order 4 {worst_o4:.1e}, embedded order 3 {worst_e3:.1e}, min |Re_4 - 1/24| {min_e4:.1e}"
    );
}

// ---------------------------------------------------------------- heat

#[test]
fn heat_converges_with_order_four() {
    let heat = Heat2d::new(15, 1.0).unwrap();
    let t_end = 0.2;
    let exact = heat.exact(t_end);
    let scale = exact.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let mut errs = Vec::new();
    let steps = [2usize, 4, 8, 16, 32];
    for &k in &steps {
        let mut y = heat.initial();
        let opts = Rock4Options::default().fixed_step(t_end / k as f64);
        let r = cpu::integrate(&heat, 0.0, t_end, &mut y, &opts).unwrap();
        assert_eq!(r.reason, StopReason::Finished);
        assert_eq!(r.steps_accepted, k, "{r:?}");
        assert_eq!(r.final_time, t_end);
        let e = max_abs_diff(&y, &exact) / scale;
        println!(
            "h = T/{k:<3} stages {:>3}  rel. error {e:.3e}",
            r.max_stages
        );
        errs.push(e);
    }
    let orders: Vec<f64> = errs.windows(2).map(|w| (w[0] / w[1]).log2()).collect();
    // Least-squares slope of log(err) against log(h).
    let xs: Vec<f64> = steps.iter().map(|&k| -(k as f64).ln()).collect();
    let ys: Vec<f64> = errs.iter().map(|e| e.ln()).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / 5.0, ys.iter().sum::<f64>() / 5.0);
    let slope = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (x - mx) * (y - my))
        .sum::<f64>()
        / xs.iter().map(|x| (x - mx) * (x - mx)).sum::<f64>();
    println!("observed orders {orders:.2?}, fitted order {slope:.2}");
    assert!(
        (3.6..4.6).contains(&slope),
        "fitted order {slope}, orders {orders:?}"
    );
}
