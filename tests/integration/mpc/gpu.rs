//! The swarm MPC on the GPU against the CPU twin (f64): `J`, `g` and exact gradients on
//! random crowded swarms at sizes around the block and tile boundaries, several problems
//! per launch, the thesis's forward differences, exact against central differences,
//! bit-identical reruns, the closed loop, and bad input. Host outputs are poisoned with
//! NaN before each run (the device buffers start as NaN too), so an unwritten value
//! shows. Each test skips visibly without a GPU (`FERROCUDA_REQUIRE_GPU=1` fails).

use crate::common;

use super::crowded;
use common::gpu_or_skip;
use ferrocuda::mpc::gpu::{ExactKernels, GpuEvaluator};
use ferrocuda::mpc::optimize::{MpcOptions, closed_loop};
use ferrocuda::mpc::{Evaluator, Gradient, SwarmModel, cpu};

/// [`super::rel_err`] of an output that must be written everywhere (it starts as NaN).
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    assert!(
        a.iter().all(|v| v.is_finite()),
        "a value was not written (NaN)"
    );
    super::rel_err(a, b)
}

#[test]
fn exact_path_matches_the_cpu() {
    let Some(gpu) = gpu_or_skip("exact_path_matches_the_cpu") else {
        return;
    };
    let cases = [
        (1, 1, 1),
        (2, 3, 2),
        (31, 5, 1),
        (32, 10, 3),
        (33, 4, 2),
        (255, 5, 1),
        (256, 10, 2),
        (257, 3, 2),
        (1000, 2, 1),
    ];
    let mut active = 0;
    let runs = cases
        .iter()
        .flat_map(|&c| [(c, ExactKernels::Auto), (c, ExactKernels::Tiled)]);
    for ((m, n, batch), kernels) in runs {
        let model = SwarmModel::new(m, n).unwrap();
        let mut ev =
            GpuEvaluator::with_kernels(&gpu, model, Gradient::Exact, batch, kernels, None).unwrap();
        // Auto: the fused kernel up to 512 objects per launch, the tiled ones above.
        assert_eq!(
            ev.fused_plan().is_some(),
            kernels == ExactKernels::Auto && m * batch <= 512,
            "M={m} batch {batch}"
        );
        let what = format!("M={m} N={n} {kernels:?}");
        active += check_against_cpu(&mut ev, &model, batch, 31 * m as u64 + n as u64, &what);
    }
    assert!(
        active >= 20,
        "the constraint is active in only {active} problems"
    );
}

/// Checks `J`, `g` and the exact gradients of `batch` problems of `evaluator` against
/// the CPU twin (values first, then with gradients, so both launches are covered);
/// returns how many problems had an active constraint. `what` names the case.
fn check_against_cpu(
    ev: &mut GpuEvaluator,
    model: &SwarmModel,
    batch: usize,
    seed: u64,
    what: &str,
) -> usize {
    let (x0, u) = crowded(model, batch, seed);
    let len = model.controls();
    let values = ev.evaluate_batch(&x0, &u).unwrap();
    let (mut gj, mut gg) = (vec![f64::NAN; batch * len], vec![f64::NAN; batch * len]);
    let with_grad = ev.gradient_batch(&x0, &u, &mut gj, &mut gg).unwrap();
    let mut active = 0;
    let m = model.objects;
    for q in 0..batch {
        let (xq, uq) = (&x0[q * 4 * m..(q + 1) * 4 * m], &u[q * len..(q + 1) * len]);
        let (mut cj, mut cg) = (vec![0.0; len], vec![0.0; len]);
        let c = cpu::gradient(model, xq, uq, Gradient::Exact, &mut cj, &mut cg).unwrap();
        for e in [values[q], with_grad[q]] {
            assert!(
                (e.cost - c.cost).abs() <= 1e-12 * c.cost.abs(),
                "{what} q={q}: J {} vs {}",
                e.cost,
                c.cost
            );
            assert!(
                (e.constraint - c.constraint).abs() <= 1e-11 * (1.0 + c.constraint.abs()),
                "{what} q={q}: g {} vs {}",
                e.constraint,
                c.constraint
            );
        }
        let rj = rel_err(&gj[q * len..(q + 1) * len], &cj);
        let rg = rel_err(&gg[q * len..(q + 1) * len], &cg);
        eprintln!("{what} q={q}: GPU vs CPU exact gradients: J {rj:.1e}, g {rg:.1e}");
        assert!(rj < 1e-11 && rg < 1e-11, "{what} q={q}: {rj:e} {rg:e}");
        active += (c.constraint < 0.0) as usize;
    }
    active
}

#[test]
fn fused_kernel_plans_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("fused_kernel_plans_match_the_cpu") else {
        return;
    };
    // (M, N, batch, objects per block): one object per block, blocks that do not divide
    // M (the last one short), one block per problem (no arrival counter), more own
    // objects than threads (the sweep loops), more pair rows than threads (several
    // passes), M above the block size (the rollout loops), more than 48 KiB of shared
    // memory (M = 512, N = 10; M = 1000, N = 4), many problems per launch.
    let cases: [(usize, usize, usize, Option<usize>); 11] = [
        (1, 3, 2, None),
        (2, 2, 3, Some(1)),
        (33, 4, 3, Some(1)),
        (33, 4, 3, Some(7)),
        (100, 6, 5, Some(100)),
        (257, 3, 2, Some(3)),
        (300, 2, 1, Some(300)),
        (512, 10, 1, None),
        (1000, 4, 1, None),
        (256, 10, 8, None),
        (64, 5, 40, None),
    ];
    let mut active = 0;
    for &(m, n, batch, per_block) in &cases {
        let model = SwarmModel::new(m, n).unwrap();
        let mut ev = GpuEvaluator::with_kernels(
            &gpu,
            model,
            Gradient::Exact,
            batch,
            ExactKernels::Fused,
            per_block,
        )
        .unwrap();
        let plan = ev.fused_plan().expect("the fused kernel was asked for");
        assert!(plan.blocks * plan.per_block >= m && (plan.blocks - 1) * plan.per_block < m);
        eprintln!("M={m} N={n} batch {batch}: fused plan {plan:?}");
        // Twice per evaluator: the arrival counters must be back at zero.
        for rep in 0..2 {
            let what = format!("M={m} N={n} fused rep {rep}");
            active += check_against_cpu(&mut ev, &model, batch, 17 * m as u64 + rep, &what);
        }
    }
    assert!(
        active >= 20,
        "the constraint is active in only {active} problems"
    );
}

#[test]
fn gpu_exact_gradients_match_central_differences() {
    let Some(gpu) = gpu_or_skip("gpu_exact_gradients_match_central_differences") else {
        return;
    };
    for &(m, n) in &[(3, 4), (40, 6)] {
        let model = SwarmModel::new(m, n).unwrap();
        let (x0, u) = crowded(&model, 1, 900 + m as u64);
        let len = model.controls();
        let mut ev = GpuEvaluator::new(&gpu, model, Gradient::Exact, 1).unwrap();
        let (mut gj, mut gg) = (vec![f64::NAN; len], vec![f64::NAN; len]);
        ev.gradient(&x0, &u, &mut gj, &mut gg).unwrap();
        let (mut cj, mut cg) = (vec![0.0; len], vec![0.0; len]);
        cpu::gradient(&model, &x0, &u, Gradient::Central, &mut cj, &mut cg).unwrap();
        let (rj, rg) = (rel_err(&gj, &cj), rel_err(&gg, &cg));
        eprintln!("M={m} N={n}: GPU exact vs central differences: J {rj:.1e}, g {rg:.1e}");
        assert!(rj < 1e-6 && rg < 1e-6, "{rj:e} {rg:e}");
    }
}

#[test]
fn thesis_forward_differences_match() {
    let Some(gpu) = gpu_or_skip("thesis_forward_differences_match") else {
        return;
    };
    for &(m, n, batch) in &[(1, 2, 1), (32, 5, 2), (100, 6, 1), (256, 3, 1)] {
        let model = SwarmModel::new(m, n).unwrap();
        let (x0, u) = crowded(&model, batch, 7 * m as u64 + n as u64);
        let len = model.controls();
        let mut ev = GpuEvaluator::new(&gpu, model, Gradient::Forward, batch).unwrap();
        let (mut fj, mut fg) = (vec![f64::NAN; batch * len], vec![f64::NAN; batch * len]);
        let vals = ev.gradient_batch(&x0, &u, &mut fj, &mut fg).unwrap();
        for q in 0..batch {
            let (xq, uq) = (&x0[q * 4 * m..(q + 1) * 4 * m], &u[q * len..(q + 1) * len]);
            let (mut ej, mut eg) = (vec![0.0; len], vec![0.0; len]);
            let c = cpu::gradient(&model, xq, uq, Gradient::Exact, &mut ej, &mut eg).unwrap();
            assert!((vals[q].cost - c.cost).abs() <= 1e-12 * c.cost);
            assert!(
                (vals[q].constraint - c.constraint).abs() <= 1e-11 * (1.0 + c.constraint.abs())
            );
            let rj = rel_err(&fj[q * len..(q + 1) * len], &ej);
            let rg = rel_err(&fg[q * len..(q + 1) * len], &eg);
            eprintln!(
                "M={m} N={n} q={q}: GPU forward differences vs exact: J {rj:.1e}, g {rg:.1e}"
            );
            // Forward differences with h = 1e-7 carry rounding noise of about
            // eps |S| / h, and |S| grows with M; a wrong kernel is off by O(1).
            assert!(rj < 1e-3 && rg < 1e-3, "M={m} N={n}: {rj:e} {rg:e}");
        }
    }
}

#[test]
fn reruns_are_bit_identical() {
    let Some(gpu) = gpu_or_skip("reruns_are_bit_identical") else {
        return;
    };
    let model = SwarmModel::new(600, 7).unwrap();
    let (x0, u) = crowded(&model, 1, 3);
    let len = model.controls();
    for kernels in [ExactKernels::Tiled, ExactKernels::Fused] {
        let mut ev =
            GpuEvaluator::with_kernels(&gpu, model, Gradient::Exact, 1, kernels, None).unwrap();
        let run = |ev: &mut GpuEvaluator| {
            let (mut a, mut b) = (vec![f64::NAN; len], vec![f64::NAN; len]);
            let e = ev.gradient_batch(&x0, &u, &mut a, &mut b).unwrap();
            (e, a, b)
        };
        let first = run(&mut ev);
        let second = run(&mut ev);
        same_bits(&first, &second);
        // A third run after the values-only path (the fused counters and the graphs).
        ev.evaluate_batch(&x0, &u).unwrap();
        same_bits(&first, &run(&mut ev));
    }
}

type Run = (Vec<ferrocuda::mpc::Evaluation>, Vec<f64>, Vec<f64>);

fn same_bits(first: &Run, second: &Run) {
    assert_eq!(first.0, second.0);
    assert!(
        first
            .1
            .iter()
            .zip(&second.1)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
    assert!(
        first
            .2
            .iter()
            .zip(&second.2)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
}

#[test]
fn closed_loop_on_the_gpu_keeps_every_constraint() {
    let Some(gpu) = gpu_or_skip("closed_loop_on_the_gpu_keeps_every_constraint") else {
        return;
    };
    let model = SwarmModel::new(16, 5).unwrap();
    let opts = MpcOptions::with_steps(120);
    let mut ev = GpuEvaluator::new(&gpu, model.tightened(opts.margin), Gradient::Exact, 1).unwrap();
    let r = closed_loop(&mut ev, &model, &opts, |_, _| {}).unwrap();
    eprintln!(
        "GPU closed loop: violations {} worst {:?} final distance {:.4} evals {}+{}",
        r.constraint_violations,
        r.worst,
        r.final_distance_to_reference,
        r.value_evaluations,
        r.gradient_evaluations
    );
    assert_eq!(r.constraint_violations, 0, "{:?}", r.worst);
    assert!(r.gradient_evaluations > 0);
}

#[test]
fn bad_input_is_an_error() {
    let Some(gpu) = gpu_or_skip("bad_input_is_an_error") else {
        return;
    };
    let big = SwarmModel::new(1025, 2).unwrap();
    assert!(GpuEvaluator::new(&gpu, big, Gradient::Forward, 1).is_err());
    assert!(GpuEvaluator::new(&gpu, big, Gradient::Exact, 1).is_ok());
    // The fused kernel keeps every position of the horizon in shared memory.
    let huge = SwarmModel::new(4096, 10).unwrap();
    let fused =
        |m| GpuEvaluator::with_kernels(&gpu, m, Gradient::Exact, 1, ExactKernels::Fused, None);
    assert!(fused(huge).is_err());
    let auto = GpuEvaluator::new(&gpu, huge, Gradient::Exact, 1).unwrap();
    assert!(auto.fused_plan().is_none());
    let model = SwarmModel::new(8, 2).unwrap();
    assert!(GpuEvaluator::new(&gpu, model, Gradient::Central, 1).is_err());
    assert!(GpuEvaluator::new(&gpu, model, Gradient::Exact, 0).is_err());
    let mut ev = GpuEvaluator::new(&gpu, model, Gradient::Exact, 2).unwrap();
    let (x0, u) = crowded(&model, 2, 1);
    assert!(ev.evaluate_batch(&x0[1..], &u).is_err());
    assert!(ev.evaluate_batch(&x0, &u[..u.len() - 1]).is_err());
    let mut bad = u.clone();
    bad[5] = f64::INFINITY;
    assert!(ev.evaluate_batch(&x0, &bad).is_err());
    // The single-problem interface on a batch evaluator.
    assert!(ev.evaluate(&x0[..32], &u[..model.controls()]).is_err());
}

/// Device buffers beyond the device's memory are refused before any is allocated (no host
/// buffer of their size either), naming objects, horizon and the batch.
#[test]
fn oversized_gpu_evaluators_are_errors() {
    let Some(gpu) = gpu_or_skip("oversized_gpu_evaluators_are_errors") else {
        return;
    };
    // 65535 problems of 1024 objects over 1000 steps: terabytes on the device.
    let model = SwarmModel::new(1024, 1000).unwrap();
    let e = GpuEvaluator::new(&gpu, model, Gradient::Exact, 65535).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, ferrocuda::Error::OutOfDeviceMemory { .. })
            && msg.contains("objects = 1024, horizon = 1000, batch = 65535"),
        "{msg}"
    );
    // A model beyond the host is refused before the device is touched.
    let model = SwarmModel {
        objects: 10_000_000_000,
        horizon: 5,
        ..Default::default()
    };
    assert!(matches!(
        GpuEvaluator::new(&gpu, model, Gradient::Exact, 1),
        Err(ferrocuda::Error::OutOfHostMemory { .. } | ferrocuda::Error::InvalidArgument { .. })
    ));
}
