//! Model predictive control of a swarm: one optimisation of 8 objects' controls over a
//! horizon of 10 steps, driving them to the origin without collisions, with `J`, `g` and
//! their exact gradients evaluated on the GPU when there is one, else on the CPU.
//!
//! ```sh
//! cargo run --release --example mpc_swarm
//! ```
//!
//! The optimiser is the same on both devices (it runs on the host against the
//! [`Evaluator`] trait). The check: the CPU twin re-evaluates the returned controls
//! (same cost and constraint), and the trajectory they give keeps every constraint.

use ferrocuda::mpc::gpu::GpuEvaluator;
use ferrocuda::mpc::optimize::{MpcOptions, solve};
use ferrocuda::mpc::{CpuEvaluator, Evaluator, Gradient, SwarmModel, cpu};

fn main() -> ferrocuda::Result<()> {
    let model = SwarmModel::new(8, 10)?;
    let x0 = model.thesis_initial_state();
    // The optimiser sees the constraints tightened by 2 %, so that the penalty's small
    // residual stays clear of the true ones (as the closed loop does).
    let opts = MpcOptions::default();
    let tight = model.tightened(opts.margin);
    let mut ev: Box<dyn Evaluator> = match ferrocuda::gpu::open(0) {
        Ok(g) => {
            println!("device: GPU 0 ({})", g.name()?);
            Box::new(GpuEvaluator::new(&g, tight, Gradient::Exact, 1)?)
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            Box::new(CpuEvaluator::new(tight, Gradient::Exact)?)
        }
        Err(e) => return Err(e),
    };
    println!("evaluating on {}", ev.device());

    let mut u = vec![0.0; model.controls()];
    let r = solve(ev.as_mut(), &x0, &mut u, &opts)?;
    println!(
        "PANOC with a penalty: converged {} after {} outer and {} inner iterations, {} gradient evaluations, {:.3} s; J = {:.6}, g = {:.2e}",
        r.converged,
        r.outer_iterations,
        r.inner_iterations,
        r.gradient_evaluations,
        r.total_seconds,
        r.evaluation.cost,
        r.evaluation.constraint
    );

    // The check on the CPU: the same J and g, and no true constraint violated on the way.
    let e = cpu::evaluate(&tight, &x0, &u)?;
    let cost_diff = (e.cost - r.evaluation.cost).abs() / e.cost.abs();
    let trajectory = cpu::trajectory(&model, &x0, &u)?;
    let violations: usize = trajectory
        .chunks_exact(model.states())
        .map(|x| model.check_state(x).violations)
        .sum();
    println!(
        "CPU re-evaluation: J = {:.6} (relative difference {cost_diff:.1e}), g = {:.2e}; constraint violations along the horizon: {violations}",
        e.cost, e.constraint
    );
    let ok = cost_diff < 1e-9 && violations == 0;
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
