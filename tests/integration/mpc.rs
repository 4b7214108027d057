//! The swarm MPC on the CPU: `J` and `g` against a direct serial transcription of the
//! thesis's formulas (its `alpha`/`beta` with square roots, pairs `j < k`), exact
//! gradients against central differences, the thesis's forward differences against
//! exact gradients, each constraint term exercised, the optimiser and a short closed
//! loop, and bad input.

use ferrocuda::Error;
use ferrocuda::mpc::optimize::{MpcOptions, closed_loop, solve};
use ferrocuda::mpc::{CpuEvaluator, Gradient, SwarmModel, cpu};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The thesis's `alpha()` / `beta()` (Quellcode 8.1).
fn alpha(xi: f64, a: f64, b: f64) -> f64 {
    let r = (xi - a) * (xi - b) / ((b - a) * (b - a) / 4.0);
    (-r * r * r).min(0.0)
}
fn beta(xi: f64, a: f64, b: f64) -> f64 {
    let r = (xi - a) * (xi - b) / ((b - a) * (b - a) / 4.0);
    (r * r * r).min(0.0)
}

/// `(J, pair part, speed part, disc part)` straight from §8.3, serial.
fn reference(model: &SwarmModel, x0: &[f64], u: &[f64]) -> (f64, f64, f64, f64) {
    let (m, n, t) = (model.objects, model.horizon, model.t);
    let r = model.reference;
    let l = |s: &[f64]| {
        (s[0] - r[0]).powi(2)
            + (s[2] - r[2]).powi(2)
            + model.velocity_weight * ((s[1] - r[1]).powi(2) + (s[3] - r[3]).powi(2))
    };
    let mut x = x0.to_vec();
    let mut cost: f64 = (0..m).map(|j| l(&x[4 * j..4 * j + 4])).sum();
    let (mut pairs, mut speed, mut discs) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in 0..m {
            let (ax, ay) = (u[(i * m + j) * 2], u[(i * m + j) * 2 + 1]);
            let s = &mut x[4 * j..4 * j + 4];
            s[0] += t * s[1] + 0.5 * t * t * ax;
            s[1] += t * ax;
            s[2] += t * s[3] + 0.5 * t * t * ay;
            s[3] += t * ay;
        }
        let w = if i + 1 == n {
            model.terminal_weight
        } else {
            1.0
        };
        for j in 0..m {
            let s = &x[4 * j..4 * j + 4];
            cost += w * l(s);
            speed += alpha(s[1].hypot(s[3]), -model.max_speed, model.max_speed);
            for c in &model.discs {
                discs += beta(
                    (s[0] - c[0]).hypot(s[2] - c[1]),
                    -model.disc_radius,
                    model.disc_radius,
                );
            }
            for k in j + 1..m {
                let o = &x[4 * k..4 * k + 4];
                pairs += beta(
                    (s[0] - o[0]).hypot(s[2] - o[2]),
                    -model.min_distance,
                    model.min_distance,
                );
            }
        }
    }
    (cost, pairs, speed, discs)
}

/// `batch` crowded swarms around the first disc (close pairs, objects inside discs,
/// some too fast) and random controls.
fn crowded(model: &SwarmModel, batch: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let side = 0.12 * (model.objects as f64).sqrt().max(1.0);
    let x0 = (0..batch * model.objects)
        .flat_map(|_| {
            [
                1.4 + rng.random_range(-side..side),
                rng.random_range(-1.3..1.3),
                rng.random_range(-side..side),
                rng.random_range(-1.3..1.3),
            ]
        })
        .collect();
    let u = (0..batch * model.controls())
        .map(|_| rng.random_range(-12.0..12.0))
        .collect();
    (x0, u)
}

fn rel_close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn evaluate_matches_the_thesis_formulas() {
    let mut exercised = [false; 3];
    for &(m, n) in &[(1, 1), (2, 3), (3, 5), (7, 2), (33, 5), (64, 10)] {
        let model = SwarmModel::new(m, n).unwrap();
        for seed in 0..3 {
            let (x0, u) = crowded(&model, 1, 1000 * m as u64 + 10 * n as u64 + seed);
            let (cost, pairs, speed, discs) = reference(&model, &x0, &u);
            let e = cpu::evaluate(&model, &x0, &u).unwrap();
            let g = pairs + speed + discs;
            assert!(
                rel_close(e.cost, cost, 1e-12),
                "M={m} N={n}: J {} vs {cost}",
                e.cost
            );
            assert!(
                (e.constraint - g).abs() <= 1e-11 * (1.0 + g.abs()),
                "M={m} N={n}: g {} vs {g}",
                e.constraint
            );
            exercised[0] |= pairs < 0.0;
            exercised[1] |= speed < 0.0;
            exercised[2] |= discs < 0.0;
        }
    }
    assert_eq!(
        exercised, [true; 3],
        "pair, speed and disc terms all active somewhere"
    );
}

/// Largest `|a - b|` relative to the largest `|b|`.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |s, v| s.max(v.abs())).max(1e-300);
    a.iter()
        .zip(b)
        .fold(0.0f64, |s, (x, y)| s.max((x - y).abs()))
        / scale
}

#[test]
fn exact_gradients_match_central_differences() {
    let mut active = 0;
    for &(m, n) in &[(1, 1), (2, 4), (5, 5), (17, 3), (40, 7)] {
        let model = SwarmModel::new(m, n).unwrap();
        let (x0, u) = crowded(&model, 1, 77 + m as u64 * 3 + n as u64);
        let len = model.controls();
        let (mut ej, mut eg, mut cj, mut cg) = (
            vec![0.0; len],
            vec![0.0; len],
            vec![0.0; len],
            vec![0.0; len],
        );
        let e1 = cpu::gradient(&model, &x0, &u, Gradient::Exact, &mut ej, &mut eg).unwrap();
        let e2 = cpu::gradient(&model, &x0, &u, Gradient::Central, &mut cj, &mut cg).unwrap();
        assert!(rel_close(e1.cost, e2.cost, 1e-12));
        let (rj, rg) = (rel_err(&ej, &cj), rel_err(&eg, &cg));
        eprintln!("M={m} N={n}: exact vs central: J {rj:.2e}, g {rg:.2e}");
        assert!(rj < 1e-6, "M={m} N={n}: grad J differs by {rj:e}");
        assert!(rg < 1e-6, "M={m} N={n}: grad g differs by {rg:e}");
        if e1.constraint < 0.0 {
            assert!(
                eg.iter().any(|v| *v != 0.0),
                "M={m} N={n}: g < 0 but grad g = 0"
            );
            active += 1;
        }
    }
    assert!(
        active >= 4,
        "the constraint is active in {active} of 5 cases"
    );
}

#[test]
fn thesis_forward_differences_match_exact_gradients() {
    for &(m, n) in &[(1, 2), (4, 5), (33, 6)] {
        let model = SwarmModel::new(m, n).unwrap();
        let (x0, u) = crowded(&model, 1, 5 + m as u64);
        let len = model.controls();
        let (mut ej, mut eg, mut fj, mut fg) = (
            vec![0.0; len],
            vec![0.0; len],
            vec![0.0; len],
            vec![0.0; len],
        );
        let e1 = cpu::gradient(&model, &x0, &u, Gradient::Exact, &mut ej, &mut eg).unwrap();
        let e2 = cpu::gradient(&model, &x0, &u, Gradient::Forward, &mut fj, &mut fg).unwrap();
        assert!(rel_close(e1.cost, e2.cost, 1e-12));
        assert!((e1.constraint - e2.constraint).abs() <= 1e-11 * (1.0 + e1.constraint.abs()));
        let (rj, rg) = (rel_err(&fj, &ej), rel_err(&fg, &eg));
        eprintln!("M={m} N={n}: forward differences vs exact: J {rj:.2e}, g {rg:.2e}");
        assert!(rj < 1e-4 && rg < 1e-4, "M={m} N={n}: {rj:e} {rg:e}");
    }
}

#[test]
fn bad_input_is_an_error() {
    let model = SwarmModel::new(4, 3).unwrap();
    let x0 = model.thesis_initial_state();
    let u = vec![0.0; model.controls()];
    let mut g = vec![0.0; u.len()];
    let mut h = vec![0.0; u.len()];
    assert!(matches!(
        cpu::evaluate(&model, &x0[..15], &u),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(cpu::evaluate(&model, &x0, &u[1..]).is_err());
    let mut bad = u.clone();
    bad[3] = f64::NAN;
    let e = cpu::evaluate(&model, &x0, &bad).unwrap_err();
    assert!(e.to_string().contains("u[3]"), "{e}");
    assert!(cpu::gradient(&model, &x0, &u, Gradient::Exact, &mut g[1..], &mut h).is_err());
    assert!(SwarmModel::new(0, 3).is_err());
    assert!(SwarmModel::new(3, 0).is_err());
    let mut m = model;
    m.t = -1.0;
    assert!(
        cpu::evaluate(&m, &x0, &u)
            .unwrap_err()
            .to_string()
            .contains("T must be")
    );
    let mut opts = MpcOptions::default();
    opts.delta = 0.0;
    let mut ev = CpuEvaluator::new(model, Gradient::Exact).unwrap();
    let mut uu = u.clone();
    assert!(solve(&mut ev, &x0, &mut uu, &opts).is_err());
    assert_eq!(uu, u, "nothing the user gave is modified on failure");
}

#[test]
fn one_solve_is_feasible_and_lowers_the_cost() {
    let model = SwarmModel::new(12, 5).unwrap();
    let tight = model.tightened(0.02);
    let x0 = model.thesis_initial_state();
    let mut ev = CpuEvaluator::new(tight, Gradient::Exact).unwrap();
    let mut u = vec![0.0; model.controls()];
    let before = cpu::evaluate(&tight, &x0, &u).unwrap();
    let r = solve(&mut ev, &x0, &mut u, &MpcOptions::default()).unwrap();
    eprintln!("{r:?}");
    assert!(r.evaluation.cost < before.cost);
    assert!(-r.evaluation.constraint <= 1e-6, "{:?}", r.evaluation);
    assert!(u.iter().all(|v| v.abs() <= 12.0));
    assert!(r.gradient_evaluations > 0 && r.total_seconds >= r.evaluation_seconds);
}

#[test]
fn closed_loop_keeps_every_constraint() {
    // 12 objects, both phases (the reference switches to (3, 0, 0, 0) half way) at a
    // coarse scale: 160 steps of 0.02 s reach the first reference region.
    let model = SwarmModel::new(12, 5).unwrap();
    let opts = MpcOptions::with_steps(160);
    let mut ev = CpuEvaluator::new(model.tightened(opts.margin), Gradient::Exact).unwrap();
    let r = closed_loop(&mut ev, &model, &opts, |_, _| {}).unwrap();
    eprintln!(
        "violations {} worst {:?} final distance {} unconverged {} evals {}/{} eval {:.3}s opt {:.3}s",
        r.constraint_violations,
        r.worst,
        r.final_distance_to_reference,
        r.unconverged_steps,
        r.value_evaluations,
        r.gradient_evaluations,
        r.evaluation_seconds,
        r.optimizer_seconds
    );
    assert_eq!(r.constraint_violations, 0, "{:?}", r.worst);
    assert!(r.worst.min_pair_distance >= model.min_distance);
    assert!(r.worst.max_speed <= model.max_speed);
    assert_eq!(r.positions.len(), 161);
}

/// Sizes beyond the machine (`--objects 1e10`, `--horizon 1e9`) or beyond `usize` are
/// refused before anything is allocated, naming objects, horizon and the bytes.
#[test]
fn oversized_models_are_errors_not_aborts() {
    for (objects, horizon) in [
        (10_000_000_000usize, 5usize),
        (32, 1_000_000_000),
        (1 << 40, 1 << 20),
    ] {
        let e = SwarmModel::new(objects, horizon).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("objects = {objects}"))
                && msg.contains(&format!("horizon = {horizon}"))
                && (matches!(e, Error::OutOfHostMemory { .. }) || msg.contains("address space")),
            "{msg}"
        );
        // A model built field by field is checked by the evaluator and the closed loop.
        let model = SwarmModel {
            objects,
            horizon,
            ..Default::default()
        };
        assert!(CpuEvaluator::new(model, Gradient::Exact).is_err());
        let mut ev = CpuEvaluator::new(SwarmModel::new(2, 2).unwrap(), Gradient::Exact).unwrap();
        assert!(closed_loop(&mut ev, &model, &MpcOptions::with_steps(1), |_, _| {}).is_err());
    }
    // Beyond usize: (N + 1) M 4 would wrap.
    let model = SwarmModel {
        objects: usize::MAX / 2,
        horizon: 3,
        ..Default::default()
    };
    let e = model.validate().unwrap_err().to_string();
    assert!(e.contains("address space"), "{e}");
    assert!(cpu::evaluate(&model, &[], &[]).is_err());
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
