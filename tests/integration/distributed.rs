//! Distributed SpMV and GMRES on the CPU: ranks as threads of one process
//! ([`ThreadComm`]). Checks the partitions, the halo plans against a brute-force
//! reading of the global matrix, the distributed operator against the global SpMV, and
//! distributed GMRES against the single-process solve. Every test name says
//! `distributed`, so `cargo test distributed` runs them all.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{random_coo, random_vec};
use ferrocuda::Complex;
use ferrocuda::distributed::{
    Communicator, DistributedBcsr, HaloPlan, RowPartition, ThreadComm, run_on_threads,
};
use ferrocuda::krylov::{BlockJacobi, GmresOptions, LinOp, Orthogonalization, cpu};
use ferrocuda::sparse::generate::{TraceSpec, trace_like};
use ferrocuda::sparse::{Bcsr, BlockFit, BlockLayout, Csr, Element};

type C64 = Complex<f64>;

fn small_trace() -> TraceSpec {
    TraceSpec::new(4, 5, 3, 4).seed(7)
}

/// A random square BCSR with `b x b` blocks (b = 1: plain CSR rows).
fn random_bcsr<T: Element>(n_blocks: usize, b: usize, seed: u64) -> Bcsr<T> {
    let n = n_blocks * b;
    let coo = random_coo::<T>(n, n, 0.08, seed);
    Bcsr::from_csr(&Csr::from(&coo), b, BlockLayout::RowMajor, BlockFit::Exact).expect("blockable")
}

fn partitions<T: Element>(a: &Bcsr<T>, ranks: usize) -> Vec<RowPartition> {
    vec![
        RowPartition::even(a.n_block_rows(), ranks).unwrap(),
        RowPartition::balanced(a, ranks).unwrap(),
    ]
}

#[test]
fn distributed_partitions_cover_every_row_once() {
    let spec = small_trace();
    let a = trace_like::<f64>(&spec).unwrap();
    for ranks in 1..=4 {
        let mut all = partitions(&a, ranks);
        all.push(RowPartition::grid_blocks(&spec, ranks).unwrap());
        for p in all {
            assert_eq!(p.parts(), ranks);
            assert_eq!(p.n_block_rows(), a.n_block_rows());
            let mut next = 0;
            for r in 0..ranks {
                let range = p.range(r);
                assert_eq!(range.start, next, "{p:?}");
                next = range.end;
                for row in range {
                    assert_eq!(p.owner(row), r);
                }
            }
            assert_eq!(next, a.n_block_rows());
        }
    }
    // Grid blocks: whole blocks, so the boundaries are multiples of a block's rows.
    let p = RowPartition::grid_blocks(&spec, 3).unwrap();
    let per = spec.block_rows_per_grid_block();
    assert!(p.starts().iter().all(|s| s % per == 0));
    // Balanced: no rank holds more than its share plus one row's blocks.
    let p = RowPartition::balanced(&a, 3).unwrap();
    let rp = a.row_ptr();
    let widest = rp.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    for r in 0..3 {
        let range = p.range(r);
        let blocks = rp[range.end] - rp[range.start];
        assert!(
            blocks <= a.nnz_blocks().div_ceil(3) + widest,
            "rank {r}: {blocks}"
        );
    }
}

#[test]
fn distributed_partition_rejects_bad_input() {
    let spec = small_trace();
    assert!(RowPartition::even(10, 0).is_err());
    assert!(RowPartition::grid_blocks(&spec, 0).is_err());
    let e = RowPartition::grid_blocks(&spec, 5).unwrap_err().to_string();
    assert!(e.contains("5 ranks for 4 grid blocks"), "{e}");
    assert!(RowPartition::from_starts(vec![0, 5, 3]).is_err());
    assert!(RowPartition::from_starts(vec![1, 5]).is_err());
    assert!(RowPartition::from_starts(vec![0]).is_err());
    let p = RowPartition::even(4, 2).unwrap();
    assert!(p.local(0, 5, &[0.0; 19]).is_err());
    assert!(p.gather(1, &[vec![0.0; 2]]).is_err());
    let a = trace_like::<f64>(&spec).unwrap();
    assert!(p.local_rows(&a, 0).is_err());
}

/// The plan every rank should arrive at, read off the global matrix.
fn brute_force_plan(a: &Bcsr<f64>, p: &RowPartition, rank: usize) -> HaloPlan {
    let own = p.range(rank);
    let rp = a.row_ptr();
    let cols_of = |r: std::ops::Range<usize>| -> BTreeSet<usize> {
        a.col_idx()[rp[r.start]..rp[r.end]]
            .iter()
            .map(|&c| c as usize)
            .collect()
    };
    let ghosts: Vec<usize> = cols_of(own.clone())
        .into_iter()
        .filter(|c| !own.contains(c))
        .collect();
    let mut recv = Vec::new();
    for peer in 0..p.parts() {
        let r = p.range(peer);
        let lo = ghosts.partition_point(|&g| g < r.start);
        let hi = ghosts.partition_point(|&g| g < r.end);
        if peer != rank && hi > lo {
            recv.push((peer, lo..hi));
        }
    }
    let mut send = Vec::new();
    for peer in (0..p.parts()).filter(|&q| q != rank) {
        let theirs = p.range(peer);
        let list: Vec<u32> = cols_of(theirs)
            .into_iter()
            .filter(|c| own.contains(c))
            .map(|c| (c - own.start) as u32)
            .collect();
        if !list.is_empty() {
            send.push((peer, list));
        }
    }
    HaloPlan { ghosts, recv, send }
}

#[test]
fn distributed_halo_plans_match_the_global_matrix() {
    let spec = small_trace();
    let trace = trace_like::<f64>(&spec).unwrap();
    let random = random_bcsr::<f64>(60, 1, 11);
    for (a, grid) in [(&trace, true), (&random, false)] {
        for ranks in 1..=4 {
            let mut parts = partitions(a, ranks);
            if grid {
                parts.push(RowPartition::grid_blocks(&spec, ranks).unwrap());
            }
            for p in &parts {
                let plans = run_on_threads(ranks, |comm| {
                    let local = p.local_rows(a, comm.rank())?;
                    HaloPlan::build(comm, p, &local)
                })
                .unwrap();
                for (rank, plan) in plans.iter().enumerate() {
                    assert_eq!(plan, &brute_force_plan(a, p, rank), "rank {rank} of {p:?}");
                }
            }
        }
    }
    // TRACE grid blocks couple only to their neighbours along r: a middle rank talks
    // to two peers, the end ranks to one.
    let p = RowPartition::grid_blocks(&spec, 4).unwrap();
    let plans = run_on_threads(4, |comm| {
        HaloPlan::build(comm, &p, &p.local_rows(&trace, comm.rank())?)
    })
    .unwrap();
    let peers: Vec<usize> = plans.iter().map(|pl| pl.recv.len()).collect();
    assert_eq!(peers, [1, 2, 2, 1]);
    // Two cell planes of nx * ntheta cells per interface.
    assert_eq!(plans[0].ghost_blocks(), 2 * spec.nx * spec.ntheta);
}

/// `y = A x` globally and by the ranks, for every partition and rank count.
fn check_spmv<A, V>(a: &Bcsr<A>, parts: &[RowPartition], ranks: usize, seed: u64)
where
    A: Element + ferrocuda::sparse::MatrixScalar<V>,
    V: Element,
{
    let b = a.b();
    let x: Vec<V> = random_vec(a.n_cols(), seed);
    let mut want = vec![V::ZERO; a.n_rows()];
    a.apply(&x, &mut want).unwrap();
    for p in parts {
        let pieces = run_on_threads(ranks, |comm| {
            let rank = comm.rank();
            let op = DistributedBcsr::new(comm, p, p.local_rows(a, rank)?)?;
            // Poisoned: every entry must be written.
            let mut y = vec![common::nan::<V>(); LinOp::<V>::nrows(&op)];
            op.apply(p.local(rank, b, &x)?, &mut y)?;
            // Twice, to exercise the reused buffers and message order.
            op.apply(p.local(rank, b, &x)?, &mut y)?;
            Ok(y)
        })
        .unwrap();
        let got = p.gather(b, &pieces).unwrap();
        let scale = want.iter().map(|&v| common::abs(v)).fold(1.0, f64::max);
        // Interior and halo parts are summed separately: rounding of a 65-term row sum.
        let eps = ferrocuda::RealScalar::to_f64(<V::Real as ferrocuda::RealScalar>::EPSILON);
        let tol = 256.0 * common::elementwise_factor::<V>() * eps * scale;
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let d = common::abs(g - w);
            assert!(d <= tol, "{ranks} ranks, {p:?}: y[{i}] = {g:?}, want {w:?}");
        }
    }
}

#[test]
fn distributed_spmv_equals_the_global_spmv() {
    let spec = small_trace();
    let real = trace_like::<f64>(&spec).unwrap();
    let complex = trace_like::<C64>(&spec).unwrap();
    let single = trace_like::<f32>(&spec).unwrap();
    for ranks in 1..=4 {
        let mut parts = partitions(&real, ranks);
        parts.push(RowPartition::grid_blocks(&spec, ranks).unwrap());
        check_spmv::<f64, f64>(&real, &parts, ranks, 1);
        check_spmv::<C64, C64>(&complex, &parts, ranks, 2);
        // Real matrix, complex vectors (TRACE's real x complex case).
        check_spmv::<f64, C64>(&real, &parts, ranks, 3);
        check_spmv::<f32, f32>(&single, &parts, ranks, 4);
        let random = random_bcsr::<f64>(50, 3, 5 + ranks as u64);
        check_spmv::<f64, f64>(&random, &partitions(&random, ranks), ranks, 6);
    }
}

fn solve_both<V: Element>(
    a: &Bcsr<f64>,
    p: &RowPartition,
    opts: &GmresOptions,
    precond: bool,
) -> (
    ferrocuda::krylov::GmresReport,
    Vec<V>,
    Vec<ferrocuda::krylov::GmresReport>,
    Vec<V>,
)
where
    f64: ferrocuda::sparse::MatrixScalar<V>,
{
    let ranks = p.parts();
    // Consistent: the ghost rows are empty, so b is zero there.
    let xt: Vec<V> = random_vec(a.n_cols(), 42);
    let mut b = vec![V::ZERO; a.n_rows()];
    a.apply(&xt, &mut b).unwrap();
    let mut x1 = vec![V::ZERO; a.n_rows()];
    let m1 = BlockJacobi::new(a).unwrap();
    let m1: Option<&dyn LinOp<V>> = if precond { Some(&m1) } else { None };
    let single = cpu::gmres(a, m1, &b, &mut x1, opts).unwrap();
    let out = run_on_threads(ranks, |comm| {
        let rank = comm.rank();
        let op = DistributedBcsr::new(comm, p, p.local_rows(a, rank)?)?;
        // Block Jacobi is rank-local: the diagonal blocks are in the interior part.
        let m = BlockJacobi::new(&op.rows().interior)?;
        let m: Option<&dyn LinOp<V>> = if precond { Some(&m) } else { None };
        let bl = p.local(rank, a.b(), &b)?;
        let mut x = vec![V::ZERO; bl.len()];
        let rep = cpu::gmres_distributed(comm, &op, m, bl, &mut x, opts)?;
        Ok((rep, x))
    })
    .unwrap();
    let (reps, xs): (Vec<_>, Vec<_>) = out.into_iter().unzip();
    let x = p.gather(a.b(), &xs).unwrap();
    (single, x1, reps, x)
}

fn check_gmres<V: Element>(a: &Bcsr<f64>, p: &RowPartition, opts: &GmresOptions, precond: bool)
where
    f64: ferrocuda::sparse::MatrixScalar<V>,
{
    let (single, x1, reps, x) = solve_both::<V>(a, p, opts, precond);
    assert!(single.converged, "single: {single:?}");
    for (rank, r) in reps.iter().enumerate() {
        assert!(r.converged, "rank {rank}: {r:?}");
        // Every rank saw the same reduced values, so the same history, bit for bit.
        assert_eq!(r.history, reps[0].history, "rank {rank}");
        assert_eq!(r.iterations, reps[0].iterations);
        assert!(r.relative_residual <= opts.rtol * 1.01, "{r:?}");
    }
    let d = reps[0].iterations.abs_diff(single.iterations);
    assert!(
        d <= 1,
        "iterations: distributed {} vs single {}",
        reps[0].iterations,
        single.iterations
    );
    // Both solve to rtol: the solutions agree to about the tolerance.
    let xn = x1
        .iter()
        .map(|&v| common::abs(v).powi(2))
        .sum::<f64>()
        .sqrt();
    let dn = x
        .iter()
        .zip(&x1)
        .map(|(&a, &b)| common::abs(a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(
        dn <= 1e3 * opts.rtol * xn,
        "|x - x1| = {dn:e}, |x1| = {xn:e}"
    );
}

#[test]
fn distributed_gmres_matches_the_single_process_solve() {
    let spec = small_trace();
    let a = trace_like::<f64>(&spec).unwrap();
    let cgs2 = GmresOptions::default().restart(20).rtol(1e-10);
    let mgs = cgs2.clone().orthogonalization(Orthogonalization::Mgs);
    let pipelined = cgs2.clone().orthogonalization(Orthogonalization::Pipelined);
    for ranks in [1, 2, 3, 4] {
        let grid = RowPartition::grid_blocks(&spec, ranks).unwrap();
        let balanced = RowPartition::balanced(&a, ranks).unwrap();
        check_gmres::<f64>(&a, &grid, &cgs2, false);
        check_gmres::<f64>(&a, &balanced, &mgs, false);
        check_gmres::<f64>(&a, &balanced, &pipelined, false);
        check_gmres::<C64>(&a, &grid, &pipelined, true);
        check_gmres::<f64>(&a, &grid, &cgs2, true);
        check_gmres::<C64>(&a, &grid, &cgs2, true);
    }
}

/// Distributed CPU GMRES of `b = 1` (with NaN in `b[3]` of rank 1 where `nan_on_1`) on
/// two ranks as threads; every rank's result, in rank order, whatever they are.
fn gmres_on_two_ranks(
    a: &Bcsr<f64>,
    p: &RowPartition,
    nan_on_1: bool,
    opts: &GmresOptions,
) -> Vec<ferrocuda::Result<()>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = ThreadComm::world(2)
            .into_iter()
            .map(|c| {
                s.spawn(move || {
                    let rank = c.rank();
                    let op = DistributedBcsr::new(&c, p, p.local_rows(a, rank)?)?;
                    let mut b = vec![1.0f64; LinOp::<f64>::nrows(&op)];
                    if nan_on_1 && rank == 1 {
                        b[3] = f64::NAN;
                    }
                    let mut x = vec![0.0f64; b.len()];
                    cpu::gmres_distributed(&c, &op, None, &b, &mut x, opts).map(|_| ())
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    })
}

#[test]
fn distributed_gmres_rejects_bad_input_on_every_rank() {
    let spec = small_trace();
    let a = trace_like::<f64>(&spec).unwrap();
    let p = RowPartition::grid_blocks(&spec, 2).unwrap();
    // NaN in rank 1's right-hand side only: both ranks fail, neither hangs.
    let res = gmres_on_two_ranks(&a, &p, true, &GmresOptions::default());
    assert!(
        res[1].as_ref().unwrap_err().to_string().contains("b[3]"),
        "{res:?}"
    );
    assert!(
        res[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("another rank"),
        "{res:?}"
    );
    // A workspace beyond any machine (restart and max_iter huge): every rank refuses
    // before allocating, naming restart and its n; none panics or hangs.
    let huge = GmresOptions::default()
        .restart(usize::MAX)
        .max_iter(usize::MAX);
    let res = gmres_on_two_ranks(&a, &p, false, &huge);
    for r in &res {
        let msg = r.as_ref().unwrap_err().to_string();
        assert!(
            msg.contains("GMRES workspace") && msg.contains("bytes"),
            "{msg}"
        );
    }
    // A partition for 3 ranks on a world of 2: both ranks refuse.
    let p3 = RowPartition::grid_blocks(&spec, 3).unwrap();
    let res = run_on_threads(2, |comm| {
        let rows = p3.local_rows(&a, comm.rank())?;
        DistributedBcsr::new(comm, &p3, rows).map(|_| ())
    });
    assert!(res.unwrap_err().to_string().contains("3 ranks"));
}

#[test]
fn distributed_thread_comm_reports_errors_instead_of_hanging() {
    let world = ThreadComm::world(2);
    let c0 = world[0].clone().with_timeout(Duration::from_millis(50));
    let mut buf = [0u8; 4];
    let e = c0.recv(1, &mut buf).unwrap_err().to_string();
    assert!(e.contains("waited"), "{e}");
    assert!(c0.send(0, &buf).is_err(), "no messages to itself");
    assert!(c0.send(2, &buf).is_err(), "no rank 2");
    world[1].send(0, &[1, 2, 3]).unwrap();
    let e = c0.recv(1, &mut buf).unwrap_err().to_string();
    assert!(e.contains("expected 4 bytes"), "{e}");
    // Messages between two ranks keep their order.
    world[1].send(0, &[1; 4]).unwrap();
    world[1].send(0, &[2; 4]).unwrap();
    c0.recv(1, &mut buf).unwrap();
    assert_eq!(buf, [1; 4]);
    c0.recv(1, &mut buf).unwrap();
    assert_eq!(buf, [2; 4]);
    // The all-reduce adds in rank order: the same bits everywhere.
    let sums = run_on_threads(4, |c| {
        let mut v = [0.1 * (c.rank() + 1) as f64, 1e16, -1e16];
        c.all_reduce_sum(&mut v)?;
        Ok(v)
    })
    .unwrap();
    assert!(
        sums.iter()
            .all(|s| s.map(f64::to_bits) == sums[0].map(f64::to_bits))
    );
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;

/// Injected failures: every rank ends with an error, never a hang.
mod faults;
