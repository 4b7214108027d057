//! The CPU twin (rayon): cost `J`, constraint `g` and their gradients, exact (adjoint
//! sweep), by forward differences as Jahn, or by central differences. Same
//! per-element math as the kernels (`ferrocuda_kernels::mpc`).

use rayon::prelude::*;

use ferrocuda_kernels::math::fma_f64;
use ferrocuda_kernels::mpc::{
    NU, NX, SwarmParams, Sweep, add_pair_penalty, cost_weight, load_state, object_penalty,
    pair_penalty, stage_cost, step,
};

use super::{Evaluation, Gradient, SwarmModel};
use crate::error::Result;

/// Objects per rayon task of the pair sums.
const PAIR_CHUNK: usize = 64;

/// The trajectory of `x0` under `u`: `(N + 1) M 4` values, `traj[(i M + j) 4 + k]`.
pub fn trajectory(model: &SwarmModel, x0: &[f64], u: &[f64]) -> Result<Vec<f64>> {
    model.validate()?;
    model.check_inputs("mpc::cpu::trajectory", x0, u)?;
    Ok(trajectory_unchecked(model, x0, u))
}

fn trajectory_unchecked(model: &SwarmModel, x0: &[f64], u: &[f64]) -> Vec<f64> {
    let (m, n, t) = (model.objects, model.horizon, model.t);
    let mut traj = vec![0.0; (n + 1) * m * NX];
    traj[..m * NX].copy_from_slice(x0);
    for i in 0..n {
        let (done, next) = traj.split_at_mut((i + 1) * m * NX);
        let prev = &done[i * m * NX..];
        for j in 0..m {
            let k = (i * m + j) * NU;
            let x = step(t, load_state(prev, j), [u[k], u[k + 1]]);
            next[NX * j..NX * j + NX].copy_from_slice(&x);
        }
    }
    traj
}

/// Pair sums of every object at steps `1..=N`: `pv[(i - 1) M + j] = sum_{k != j} g1`
/// and its gradient with respect to `p_j` in `pg` (2 per entry).
fn pair_sums(model: &SwarmModel, traj: &[f64], with_grad: bool) -> (Vec<f64>, Vec<f64>) {
    let (m, n) = (model.objects, model.horizon);
    let d2 = model.min_distance * model.min_distance;
    // Positions per step, contiguous (x then y).
    let pos: Vec<(Vec<f64>, Vec<f64>)> = (1..=n)
        .map(|i| {
            let s = &traj[i * m * NX..(i + 1) * m * NX];
            (
                (0..m).map(|j| s[NX * j]).collect(),
                (0..m).map(|j| s[NX * j + 2]).collect(),
            )
        })
        .collect();
    let mut pv = vec![0.0; n * m];
    let mut pg = vec![0.0; if with_grad { 2 * n * m } else { 0 }];
    let work = |c: usize, v: &mut [f64], g: Option<&mut [f64]>| {
        let first = c * PAIR_CHUNK;
        let mut gbuf = g;
        for (r, slot) in v.iter_mut().enumerate() {
            let o = first + r;
            let (i, j) = (o / m, o % m);
            let (xs, ys) = &pos[i];
            let (mx, my) = (xs[j], ys[j]);
            let mut acc = [0.0; 3];
            for k in 0..m {
                if k != j {
                    add_pair_penalty(&mut acc, d2, mx - xs[k], my - ys[k]);
                }
            }
            *slot = acc[0];
            if let Some(g) = gbuf.as_deref_mut() {
                g[2 * r] = acc[1];
                g[2 * r + 1] = acc[2];
            }
        }
    };
    if with_grad {
        pv.par_chunks_mut(PAIR_CHUNK)
            .zip(pg.par_chunks_mut(2 * PAIR_CHUNK))
            .enumerate()
            .for_each(|(c, (v, g))| work(c, v, Some(g)));
    } else {
        pv.par_chunks_mut(PAIR_CHUNK)
            .enumerate()
            .for_each(|(c, v)| work(c, v, None));
    }
    (pv, pg)
}

/// Object `j`'s share of `(J, g)` (its cost terms, its penalties, half its pair sums) and,
/// with `grad`, the adjoint sweep: `grad[(i 2 + c)]` of `J` and of `g` (object-major).
#[allow(clippy::too_many_arguments)]
fn object_terms(
    p: &SwarmParams,
    m: usize,
    n: usize,
    j: usize,
    traj: &[f64],
    pv: &[f64],
    pg: &[f64],
    grad: Option<(&mut [f64], &mut [f64])>,
) -> (f64, f64) {
    let mut sw = Sweep::new();
    let mut grad = grad;
    for i in (0..=n).rev() {
        let x = load_state(&traj[i * m * NX..], j);
        let pair = if i > 0 {
            let o = (i - 1) * m + j;
            let (gx, gy) = if grad.is_some() {
                (pg[2 * o], pg[2 * o + 1])
            } else {
                (0.0, 0.0)
            };
            [pv[o], gx, gy]
        } else {
            [0.0; 3]
        };
        let (cj, cg) = sw.step(p, i, n, x, pair, grad.is_some());
        if i > 0
            && let Some((gj, gg)) = grad.as_mut()
        {
            gj[2 * (i - 1)..2 * i].copy_from_slice(&cj);
            gg[2 * (i - 1)..2 * i].copy_from_slice(&cg);
        }
    }
    (sw.cost, sw.constraint)
}

/// `J(u)` and `g(u)` for the swarm starting at `x0` (`M 4` values) under the controls
/// `u` (`N M 2`, time-major).
///
/// ```
/// use ferrocuda::mpc::{SwarmModel, cpu};
/// let model = SwarmModel::new(8, 5)?;
/// let x0 = model.thesis_initial_state();
/// let e = cpu::evaluate(&model, &x0, &vec![0.0; model.controls()])?;
/// assert!(e.cost > 0.0 && e.constraint <= 0.0);
/// assert!(cpu::evaluate(&model, &x0[1..], &vec![0.0; model.controls()]).is_err());
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn evaluate(model: &SwarmModel, x0: &[f64], u: &[f64]) -> Result<Evaluation> {
    model.validate()?;
    model.check_inputs("mpc::cpu::evaluate", x0, u)?;
    Ok(run(model, x0, u, None))
}

fn run(
    model: &SwarmModel,
    x0: &[f64],
    u: &[f64],
    grad: Option<(&mut [f64], &mut [f64])>,
) -> Evaluation {
    let (m, n) = (model.objects, model.horizon);
    let p = model.params();
    let traj = trajectory_unchecked(model, x0, u);
    let (pv, pg) = pair_sums(model, &traj, grad.is_some());
    let sums: Vec<(f64, f64)> = match grad {
        None => (0..m)
            .into_par_iter()
            .map(|j| object_terms(&p, m, n, j, &traj, &pv, &pg, None))
            .collect(),
        Some((gj, gg)) => {
            // Object-major gradients, then transposed to the layout of `u`.
            let mut oj = vec![0.0; n * m * NU];
            let mut og = vec![0.0; n * m * NU];
            let sums = oj
                .par_chunks_mut(n * NU)
                .zip(og.par_chunks_mut(n * NU))
                .enumerate()
                .map(|(j, (a, b))| object_terms(&p, m, n, j, &traj, &pv, &pg, Some((a, b))))
                .collect();
            for j in 0..m {
                for i in 0..n {
                    for c in 0..NU {
                        gj[(i * m + j) * NU + c] = oj[j * n * NU + i * NU + c];
                        gg[(i * m + j) * NU + c] = og[j * n * NU + i * NU + c];
                    }
                }
            }
            sums
        }
    };
    let (cost, constraint) = sums
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    Evaluation { cost, constraint }
}

/// `J`, `g` and their gradients with respect to `u` by `method`, written to `grad_cost`
/// and `grad_constraint` (`N M 2` each, the layout of `u`).
///
/// ```
/// use ferrocuda::mpc::{Gradient, SwarmModel, cpu};
/// let model = SwarmModel::new(4, 3)?;
/// let x0 = model.thesis_initial_state();
/// let u = vec![1.0; model.controls()];
/// let (mut gj, mut gg) = (vec![0.0; u.len()], vec![0.0; u.len()]);
/// let mut cj = gj.clone();
/// cpu::gradient(&model, &x0, &u, Gradient::Exact, &mut gj, &mut gg)?;
/// cpu::gradient(&model, &x0, &u, Gradient::Central, &mut cj, &mut gg)?;
/// for (a, b) in gj.iter().zip(&cj) {
///     assert!((a - b).abs() <= 1e-6 * (1.0 + a.abs()));
/// }
/// # Ok::<(), ferrocuda::Error>(())
/// ```
pub fn gradient(
    model: &SwarmModel,
    x0: &[f64],
    u: &[f64],
    method: Gradient,
    grad_cost: &mut [f64],
    grad_constraint: &mut [f64],
) -> Result<Evaluation> {
    const OP: &str = "mpc::cpu::gradient";
    model.validate()?;
    model.check_inputs(OP, x0, u)?;
    crate::error::check_len(OP, "grad_cost", model.controls(), grad_cost.len())?;
    crate::error::check_len(
        OP,
        "grad_constraint",
        model.controls(),
        grad_constraint.len(),
    )?;
    Ok(match method {
        Gradient::Exact => run(model, x0, u, Some((grad_cost, grad_constraint))),
        Gradient::Forward => forward_differences(model, x0, u, grad_cost, grad_constraint),
        Gradient::Central => central_differences(model, x0, u, grad_cost, grad_constraint),
    })
}

/// Per-step sums `(S_J(i), S_g(i))` for `i = i0 + 1 ..= N` (and `i = 0` when `i0 = 0`
/// and `first`), starting from the states `start` at step `i0`, with `u(i0)` of object
/// `jp`, component `cp` raised by `h` (`None`: no perturbation). Jahn's block,
/// serial: `state` and `pos` are scratch of `M 4` and `M 2` values.
#[allow(clippy::too_many_arguments)]
fn fd_run(
    model: &SwarmModel,
    p: &SwarmParams,
    start: &[f64],
    u: &[f64],
    i0: usize,
    perturb: Option<(usize, usize, f64)>,
    state: &mut [f64],
    pos: &mut [f64],
    mut out: impl FnMut(usize, f64, f64),
) {
    let (m, n) = (model.objects, model.horizon);
    let d2 = p.d * p.d;
    state.copy_from_slice(start);
    for i in i0..n {
        for j in 0..m {
            let k = (i * m + j) * NU;
            let mut uu = [u[k], u[k + 1]];
            if let Some((jp, cp, h)) = perturb
                && i == i0
                && j == jp
            {
                uu[cp] += h;
            }
            let x = step(p.t, load_state(state, j), uu);
            state[NX * j..NX * j + NX].copy_from_slice(&x);
            pos[2 * j] = x[0];
            pos[2 * j + 1] = x[2];
        }
        let (mut sj, mut sg) = (0.0, 0.0);
        for j in 0..m {
            let x = load_state(state, j);
            let mut pv = 0.0;
            for k in 0..m {
                if k != j {
                    pv += pair_penalty(d2, x[0] - pos[2 * k], x[2] - pos[2 * k + 1]).0;
                }
            }
            sg += fma_f64(0.5, pv, object_penalty(p, x).0);
            sj += stage_cost(p, cost_weight(p, i + 1, n), x);
        }
        out(i + 1, sj, sg);
    }
}

/// Jahn's forward differences with step [`super::FD_STEP`]: one run per component
/// from the nominal state at its step, `grad = sum_{i > i0} (S'(i) - S(i)) / h`.
fn forward_differences(
    model: &SwarmModel,
    x0: &[f64],
    u: &[f64],
    grad_cost: &mut [f64],
    grad_constraint: &mut [f64],
) -> Evaluation {
    let (m, n) = (model.objects, model.horizon);
    let p = model.params();
    let h = super::FD_STEP;
    let traj = trajectory_unchecked(model, x0, u);
    let mut steps = vec![(0.0, 0.0); n + 1];
    steps[0].0 = (0..m).map(|j| stage_cost(&p, 1.0, load_state(x0, j))).sum();
    fd_run_whole(model, &p, x0, u, |i, a, b| steps[i] = (a, b));
    grad_cost
        .par_iter_mut()
        .zip(grad_constraint.par_iter_mut())
        .enumerate()
        .for_each_init(
            || (vec![0.0; m * NX], vec![0.0; 2 * m]),
            |(state, pos), (c, (gj, gg))| {
                let i0 = c / (m * NU);
                let (jp, cp) = ((c / NU) % m, c % NU);
                let start = &traj[i0 * m * NX..(i0 + 1) * m * NX];
                let (mut dj, mut dg) = (0.0, 0.0);
                fd_run(
                    model,
                    &p,
                    start,
                    u,
                    i0,
                    Some((jp, cp, h)),
                    state,
                    pos,
                    |i, a, b| {
                        dj += a - steps[i].0;
                        dg += b - steps[i].1;
                    },
                );
                *gj = dj / h;
                *gg = dg / h;
            },
        );
    let (cost, constraint) = steps
        .iter()
        .fold((0.0, 0.0), |(a, b), s| (a + s.0, b + s.1));
    Evaluation { cost, constraint }
}

/// Central differences of full evaluations, step `1e-5 (1 + |u_c|)`; for checks only
/// (`N M 2` evaluations).
fn central_differences(
    model: &SwarmModel,
    x0: &[f64],
    u: &[f64],
    grad_cost: &mut [f64],
    grad_constraint: &mut [f64],
) -> Evaluation {
    grad_cost
        .par_iter_mut()
        .zip(grad_constraint.par_iter_mut())
        .enumerate()
        .for_each_init(
            || u.to_vec(),
            |w, (c, (gj, gg))| {
                let h = 1e-5 * (1.0 + u[c].abs());
                w[c] = u[c] + h;
                let plus = serial(model, x0, w);
                w[c] = u[c] - h;
                let minus = serial(model, x0, w);
                w[c] = u[c];
                *gj = (plus.cost - minus.cost) / (2.0 * h);
                *gg = (plus.constraint - minus.constraint) / (2.0 * h);
            },
        );
    serial(model, x0, u)
}

/// `J` and `g` on one thread.
fn serial(model: &SwarmModel, x0: &[f64], u: &[f64]) -> Evaluation {
    let p = model.params();
    let mut e = Evaluation {
        cost: (0..model.objects)
            .map(|j| stage_cost(&p, 1.0, load_state(x0, j)))
            .sum(),
        constraint: 0.0,
    };
    fd_run_whole(model, &p, x0, u, |_, a, b| {
        e.cost += a;
        e.constraint += b;
    });
    e
}

/// [`fd_run`] of the whole horizon from `x0`, unperturbed, with its own work arrays.
fn fd_run_whole(
    model: &SwarmModel,
    p: &SwarmParams,
    x0: &[f64],
    u: &[f64],
    out: impl FnMut(usize, f64, f64),
) {
    let (mut state, mut pos) = (vec![0.0; model.states()], vec![0.0; 2 * model.objects]);
    fd_run(model, p, x0, u, 0, None, &mut state, &mut pos, out);
}
