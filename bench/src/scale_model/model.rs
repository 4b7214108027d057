//! The equations of the scale model (one GMRES(m) iteration on P GPUs), its parameters
//! and their fit to the measured points. The module docs of [`super`] and
//! `docs/scaling-model.md` state the model in words; the names here follow them.

use serde::Serialize;

use super::loads::RankLoad;
use super::measured::What;

/// Bytes of an `f64`, the measured and predicted precision.
pub const VALUE: usize = 8;

/// How often one GMRES(m) iteration of the distributed GPU solver does each thing, as
/// `ferrocuda bench scaling` times it: one `gmres_distributed` call of `m` steps (no
/// restart) over `m`. Counted from `krylov::gpu` and `krylov::arnoldi`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Counts {
    /// Restart length (steps per timed solve).
    pub m: usize,
    /// Operator applications: one per step and the true residuals before and after the
    /// cycle, `(m + 2) / m`.
    pub spmvs: f64,
    /// Vector passes (reads and writes of `n` values) outside the SpMV.
    pub vectors: f64,
    /// All-reduces that the step waits for (classical) or that overlap the step's SpMV
    /// (pipelined): one per step and one for the cycle's last column, `(m + 1) / m`.
    pub step_allreduces: f64,
    /// All-reduces of the solve's set-up and restart, never overlapped: agreeing on the
    /// workspace, `|b|`, and the two residual norms: `4 / m`.
    pub solve_allreduces: f64,
}

/// Vector passes of a solve outside its steps: the bench's `x <- 0` (1), the finite
/// checks of `b` and `x` (2), copying `x` into the workspace (2), the first residual
/// `b - A x` with its norms (6), saving the best iterate twice (4), the final dots of
/// the cycle's last column (`m + 2`), the solution update `x += V y` (`m + 4`), the
/// true residual (4) and copying `x` out (2): `2 m + 27`.
fn solve_vectors(m: usize) -> f64 {
    (2 * m + 27) as f64
}

impl Counts {
    /// Classical GMRES as implemented: DCGS2, one fused all-reduce of the `2 (k + 1)` dots
    /// of step `k`, which the host waits for before the update. Step `k` reads and
    /// writes `2 (k + 1) + 2` vectors (the convention of `bench gmres`'s floor: the dots
    /// read `V_0..V_k` and `w`, the update reads them again and writes two columns).
    pub fn classical(m: usize) -> Counts {
        let steps: usize = (0..m).map(|k| 2 * (k + 1) + 2).sum();
        Counts {
            m,
            spmvs: (m + 2) as f64 / m as f64,
            vectors: (steps as f64 + solve_vectors(m)) / m as f64,
            step_allreduces: (m + 1) as f64 / m as f64,
            solve_allreduces: 4.0 / m as f64,
        }
    }

    /// Pipelined p(1)-GMRES (Ghysels, Ashby, Meerbergen and Vanroose 2013) as implemented
    /// (`Orthogonalization::Pipelined`): the step's one all-reduce (the dots of `z_k`
    /// with `V_0..V_k`, `|z_k|^2`, `|v_k|^2`) runs while the next SpMV does, and one
    /// pass per step (`gmres_pipe_pass`) makes `v_k` and `z_k` from the columns `j < k`
    /// of both bases and takes those dots: step 0 reads `v_0` and `z_0` (2), step `k`
    /// reads `k` columns of each basis and `q` and writes two (`2 k + 3`); its second
    /// read of `V_j` for the dots comes from L1 (measured by ncu, run 112). The cycle's
    /// last pass (`v_m` and its norm, `m + 2`) stands where the classical solve has its
    /// final dots, so the solve's other passes are the same.
    pub fn pipelined(m: usize) -> Counts {
        let steps: usize = 2 + (1..m).map(|k| 2 * k + 3).sum::<usize>();
        Counts {
            vectors: (steps as f64 + solve_vectors(m)) / m as f64,
            ..Counts::classical(m)
        }
    }
}

/// The variants predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// As implemented (DCGS2, blocking all-reduce per step).
    Classical,
    /// p(1)-GMRES: the step's all-reduce overlapped with the SpMV, a second basis, one
    /// fused pass per step.
    Pipelined,
    /// The classical vector work with the all-reduce hidden behind the SpMV: what a
    /// pipelined method without extra vector work could reach (a bound).
    OverlapBound,
}

/// Stated assumptions (not measured here): the node and the fabric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assumptions {
    /// GPUs per node (NVLink inside, InfiniBand between).
    pub gpus_per_node: usize,
    /// Latency of one inter-node hop of a small all-reduce or halo message, ms.
    pub ib_latency_ms: f64,
    /// Inter-node bandwidth per GPU, GB/s (one 400 Gb/s NIC per GPU).
    pub ib_gbps: f64,
    /// Latency of an NVLink point-to-point halo message, ms.
    pub nvlink_latency_ms: f64,
    /// NVLink bandwidth per direction per GPU, GB/s.
    pub nvlink_gbps: f64,
    /// Extra intra-node all-reduce latency per doubling of the GPUs beyond 2, ms.
    pub nvlink_allreduce_step_ms: f64,
    /// Device memory of one GPU, GB (what fits).
    pub gpu_memory_gb: f64,
}

impl Default for Assumptions {
    /// H200 nodes of 8 GPUs with NVLink 4 (900 GB/s both ways) and one 400 Gb/s NDR
    /// InfiniBand NIC per GPU; sources in `docs/scaling-model.md`.
    fn default() -> Self {
        Assumptions {
            gpus_per_node: 8,
            ib_latency_ms: 3.0e-3,
            ib_gbps: 50.0,
            nvlink_latency_ms: 2.0e-3,
            nvlink_gbps: 450.0,
            nvlink_allreduce_step_ms: 2.0e-3,
            gpu_memory_gb: 141.0,
        }
    }
}

/// Fitted parameters (ms, GB/s), each from the measured points named in its doc.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    /// SpMV launch floor, ms (1-GPU SpMV points).
    pub spmv_floor_ms: f64,
    /// SpMV bandwidth, GB/s (1-GPU SpMV points).
    pub spmv_gbps: f64,
    /// Host and launch overhead of one iteration, ms (1-GPU GMRES points).
    pub iteration_overhead_ms: f64,
    /// Bandwidth of the orthogonalisation's vector passes, GB/s (1-GPU GMRES points).
    pub orth_gbps: f64,
    /// Fixed cost of a distributed SpMV (NCCL group call, stream join, halo SpMV
    /// launch), ms (multi-GPU SpMV points).
    pub halo_overhead_ms: f64,
    /// One all-reduce of the iteration on 2 GPUs of a node, synchronisation of the
    /// ranks included, ms (multi-GPU GMRES points).
    pub allreduce_2_ms: f64,
}

/// The timed parts of one iteration on the slowest rank, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Parts {
    /// SpMV time (one application), exchange overlap and halo part included.
    pub spmv: f64,
    /// Of `spmv`, what the halo costs beyond the interior SpMV.
    pub spmv_halo: f64,
    /// Operator applications of the iteration (`spmvs x spmv`).
    pub spmvs: f64,
    /// Orthogonalisation and the solve's other vector passes.
    pub orth: f64,
    /// Host and launch overhead.
    pub overhead: f64,
    /// All-reduce time not hidden.
    pub allreduce: f64,
    /// One all-reduce on these GPUs.
    pub one_allreduce: f64,
    /// The whole iteration (or SpMV).
    pub total: f64,
}

/// `P` GPUs: all-reduce latency, ms. One rank: nothing to reduce (its cost is in the
/// 1-GPU overhead). Inside a node the measured 2-GPU cost plus an assumed step per
/// doubling; across nodes a tree over the nodes (reduce up, broadcast down: `2 log2 N`
/// hops of latency plus the reduction's bytes).
pub fn allreduce_ms(p: usize, params: &Params, a: &Assumptions, bytes: f64) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let g = p.min(a.gpus_per_node.max(1));
    let nodes = p.div_ceil(a.gpus_per_node.max(1));
    let log2 = |n: usize| (n as f64).log2().ceil();
    let mut t = params.allreduce_2_ms + (log2(g) - 1.0).max(0.0) * a.nvlink_allreduce_step_ms;
    if nodes > 1 {
        let hops = 2.0 * log2(nodes);
        t += hops * (a.ib_latency_ms + bytes / (a.ib_gbps * 1e6));
    }
    t
}

/// One halo message of `blocks` blocks between ranks `a` and `b`, ms: NVLink inside a
/// node, InfiniBand between nodes.
fn message_ms(from: usize, to: usize, blocks: usize, asm: &Assumptions) -> f64 {
    let bytes = (blocks * ferrocuda::sparse::generate::B * VALUE) as f64;
    let gpn = asm.gpus_per_node.max(1);
    if from / gpn == to / gpn {
        asm.nvlink_latency_ms + bytes / (asm.nvlink_gbps * 1e6)
    } else {
        asm.ib_latency_ms + bytes / (asm.ib_gbps * 1e6)
    }
}

/// One distributed SpMV on `rank`: `t0 + max(interior, exchange) + [peers] (halo
/// overhead + halo bytes / BW)`; the spans travel on a second stream while the interior
/// SpMV runs, to both peers at once. Returns `(total, beyond the interior SpMV)`.
pub fn spmv_ms(rank: usize, l: &RankLoad, params: &Params, a: &Assumptions) -> (f64, f64) {
    let bw = params.spmv_gbps * 1e6; // bytes per ms
    let interior = l.interior_bytes(VALUE) / bw;
    if l.peers.is_empty() {
        return (params.spmv_floor_ms + interior, 0.0);
    }
    let span = l.largest_span_blocks;
    let exchange = l
        .peers
        .iter()
        .map(|&p| message_ms(rank, p, span, a))
        .fold(0.0, f64::max);
    let halo = params.halo_overhead_ms + l.halo_bytes(VALUE) / bw + (exchange - interior).max(0.0);
    (params.spmv_floor_ms + interior + halo, halo)
}

/// The mean bytes of one step's all-reduce (`2 (k + 1)` values, `k < m`).
fn reduction_bytes(m: usize) -> f64 {
    (m + 1) as f64 * VALUE as f64
}

/// One iteration of `variant` on the ranks `loads` (rank order), ms, with its parts on
/// the slowest rank.
pub fn iteration(
    loads: &[RankLoad],
    variant: Variant,
    m: usize,
    params: &Params,
    a: &Assumptions,
) -> Parts {
    let counts = match variant {
        Variant::Pipelined => Counts::pipelined(m),
        Variant::Classical | Variant::OverlapBound => Counts::classical(m),
    };
    let p = loads.len();
    let one = allreduce_ms(p, params, a, reduction_bytes(m));
    let mut worst = Parts::default();
    for (rank, l) in loads.iter().enumerate() {
        let (spmv, spmv_halo) = spmv_ms(rank, l, params, a);
        let orth = counts.vectors * (l.rows * VALUE) as f64 / (params.orth_gbps * 1e6);
        let exposed = match variant {
            Variant::Classical => counts.step_allreduces * one,
            // Hidden behind the SpMV of the step as far as it lasts.
            Variant::Pipelined | Variant::OverlapBound => {
                counts.step_allreduces * (one - spmv).max(0.0)
            }
        } + counts.solve_allreduces * one;
        let parts = Parts {
            spmv,
            spmv_halo,
            spmvs: counts.spmvs * spmv,
            orth,
            overhead: params.iteration_overhead_ms,
            allreduce: exposed,
            one_allreduce: one,
            total: counts.spmvs * spmv + orth + params.iteration_overhead_ms + exposed,
        };
        if parts.total > worst.total {
            worst = parts;
        }
    }
    worst
}

/// The model's time of a measured point (classical, as measured).
pub fn predict(loads: &[RankLoad], what: What, m: usize, params: &Params, a: &Assumptions) -> f64 {
    match what {
        What::Spmv => loads
            .iter()
            .enumerate()
            .map(|(r, l)| spmv_ms(r, l, params, a).0)
            .fold(0.0, f64::max),
        What::GmresIteration => iteration(loads, Variant::Classical, m, params, a).total,
    }
}

/// Device memory one rank needs, GB: the SBELL matrix (interior and halo parts) and the
/// solver's vectors (`m + 1` basis columns, `x`, the best iterate, `w`, `z`, `b`; twice
/// the basis for the pipelined variant).
pub fn memory_gb(l: &RankLoad, m: usize, variant: Variant) -> f64 {
    let basis = match variant {
        Variant::Pipelined => 2 * (m + 1),
        _ => m + 1,
    };
    (l.matrix_bytes(VALUE) + ((basis + 5) * l.rows * VALUE) as f64) / 1e9
}

/// Least squares in relative error: the `x` minimising `sum ((base_i + x c_i) / t_i -
/// 1)^2` (one parameter entering linearly with coefficient `c_i`).
pub fn fit_one(points: &[(f64, f64, f64)]) -> Option<f64> {
    // points: (measured t, model without the parameter, coefficient)
    let (mut num, mut den) = (0.0, 0.0);
    for &(t, base, c) in points {
        num += (t - base) * c / (t * t);
        den += c * c / (t * t);
    }
    (den > 0.0).then(|| num / den)
}

/// Least squares in relative error for two parameters: `(a, b)` minimising `sum ((a u_i
/// + b v_i + base_i) / t_i - 1)^2`. `None` when the points do not determine both.
pub fn fit_two(points: &[(f64, f64, f64, f64)]) -> Option<(f64, f64)> {
    // points: (measured t, model without the parameters, u, v)
    let (mut suu, mut suv, mut svv, mut su, mut sv) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(t, base, u, v) in points {
        let (u, v, r) = (u / t, v / t, (t - base) / t);
        suu += u * u;
        suv += u * v;
        svv += v * v;
        su += u * r;
        sv += v * r;
    }
    let det = suu * svv - suv * suv;
    if det.abs() <= 1e-12 * (suu * svv).max(f64::MIN_POSITIVE) {
        return None;
    }
    Some(((svv * su - suv * sv) / det, (suu * sv - suv * su) / det))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_code() {
        let c = Counts::classical(30);
        // 2 (k + 1) + 2 over k < 30: 990; the solve: 87.
        assert!((c.vectors - (990.0 + 87.0) / 30.0).abs() < 1e-12);
        assert!((c.spmvs - 32.0 / 30.0).abs() < 1e-12);
        assert!((c.step_allreduces + c.solve_allreduces - 35.0 / 30.0).abs() < 1e-12);
        let p = Counts::pipelined(30);
        // 2 + sum over 1 <= k < 30 of (2 k + 3) = 959; the solve: 87.
        assert!((p.vectors - (959.0 + 87.0) / 30.0).abs() < 1e-12);
        assert_eq!(p.step_allreduces, c.step_allreduces);
    }

    #[test]
    fn fits_recover_their_parameters() {
        let pts: Vec<_> = [1.0, 2.0, 5.0]
            .iter()
            .map(|&x| (0.5 + 3.0 * x + 0.25, 0.25, 1.0, x))
            .collect();
        let (a, b) = fit_two(&pts).unwrap();
        assert!((a - 0.5).abs() < 1e-9 && (b - 3.0).abs() < 1e-9, "{a} {b}");
        assert!(fit_two(&pts[..1]).is_none());
        let one = fit_one(&[(2.0, 1.5, 1.0), (3.0, 2.5, 1.0)]).unwrap();
        assert!((one - 0.5).abs() < 1e-12);
        assert!(fit_one(&[]).is_none());
    }

    #[test]
    fn allreduce_grows_by_levels() {
        let params = Params {
            spmv_floor_ms: 0.0,
            spmv_gbps: 1.0,
            iteration_overhead_ms: 0.0,
            orth_gbps: 1.0,
            halo_overhead_ms: 0.0,
            allreduce_2_ms: 0.1,
        };
        let a = Assumptions::default();
        assert_eq!(allreduce_ms(1, &params, &a, 0.0), 0.0);
        assert!((allreduce_ms(2, &params, &a, 0.0) - 0.1).abs() < 1e-15);
        assert!((allreduce_ms(8, &params, &a, 0.0) - 0.104).abs() < 1e-12);
        // 1024 GPUs = 128 nodes: 14 inter-node hops.
        let t = allreduce_ms(1024, &params, &a, 0.0);
        assert!((t - (0.104 + 14.0 * 3e-3)).abs() < 1e-12, "{t}");
    }
}
