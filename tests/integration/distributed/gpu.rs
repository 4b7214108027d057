//! Distributed SpMV and GMRES on GPUs: ranks as threads ([`ThreadComm`]), each on its own
//! stream of device `rank % devices` (on one GPU all ranks share it, which checks the
//! same plans and transfers). The GPU results are compared with the CPU distributed
//! operator and solver, and with the global CPU SpMV. Test names say `distributed`.

use crate::common;

use common::{gpu_or_skip, random_vec};
use ferrocuda::Complex;
use ferrocuda::distributed::{
    Communicator, DeviceDistributedBcsr, DistributedBcsr, RowPartition, Transport, run_on_gpus,
    run_on_threads,
};
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::precond::PrecondKernels;
use ferrocuda::krylov::{
    BlockJacobi, DeviceBlockJacobi, DeviceLinOp, GmresOptions, GmresReport, LinOp,
    Orthogonalization, cpu, gpu as kgpu,
};
use ferrocuda::sparse::generate::{TraceSpec, trace_like};
use ferrocuda::sparse::gpu::SpmvKernels;
use ferrocuda::sparse::{Bcsr, Element, MatrixScalar};

type C64 = Complex<f64>;

/// The GPU of `rank`: its own stream, on device `rank % devices`.
fn rank_gpu(base: &Gpu, rank: usize) -> Gpu {
    let devices = ferrocuda::gpu::count().max(1);
    if rank.is_multiple_of(devices) {
        base.new_stream().expect("stream")
    } else {
        ferrocuda::gpu::open(rank % devices).expect("open")
    }
}

fn check_spmv<A, V>(base: &Gpu, a: &Bcsr<A>, p: &RowPartition, seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let b = a.b();
    let x: Vec<V> = random_vec(a.n_cols(), seed);
    let mut want = vec![V::ZERO; a.n_rows()];
    a.apply(&x, &mut want).unwrap();
    let pieces = run_on_threads(p.parts(), |comm| {
        let rank = comm.rank();
        let gpu = rank_gpu(base, rank);
        let local = p.local_rows(a, rank)?;
        let op = DeviceDistributedBcsr::<A, V>::new(comm, &gpu, p, &local)?;
        let xd = gpu.upload(p.local(rank, b, &x)?)?;
        // Poisoned: every entry must be written.
        let mut yd = gpu.upload(&common::poison::<V>(op.nrows()))?;
        for _ in 0..2 {
            op.apply(&xd.view(..)?, &mut yd.view_mut(..)?)?;
        }
        Ok(yd.download()?)
    })
    .unwrap();
    check_gathered("", p, b, &pieces, &want);
}

/// The ranks' pieces, gathered, against the global SpMV `want`: within 512 epsilon of
/// its largest entry (at least 1). `what` starts the message (`"NCCL "` or nothing).
fn check_gathered<V: Element>(
    what: &str,
    p: &RowPartition,
    b: usize,
    pieces: &[Vec<V>],
    want: &[V],
) {
    let got = p.gather(b, pieces).unwrap();
    let scale = want.iter().map(|&v| common::abs(v)).fold(1.0, f64::max);
    let eps = ferrocuda::RealScalar::to_f64(<V::Real as ferrocuda::RealScalar>::EPSILON);
    let tol = 512.0 * eps * scale;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            common::abs(g - w) <= tol,
            "{what}{p:?}: y[{i}] = {g:?}, want {w:?}"
        );
    }
}

/// The GPU (or a visible skip) and the TRACE-like grid the single-process tests partition.
fn gpu_and_grid(test: &str) -> Option<(Gpu, TraceSpec)> {
    Some((gpu_or_skip(test)?, TraceSpec::new(5, 6, 3, 4).seed(3)))
}

#[test]
fn distributed_gpu_spmv_equals_the_global_spmv() {
    let Some((base, spec)) = gpu_and_grid("distributed_gpu_spmv_equals_the_global_spmv") else {
        return;
    };
    let real = trace_like::<f64>(&spec).unwrap();
    let complex = trace_like::<C64>(&spec).unwrap();
    let single = trace_like::<f32>(&spec).unwrap();
    for ranks in 1..=4 {
        let grid = RowPartition::grid_blocks(&spec, ranks).unwrap();
        let balanced = RowPartition::balanced(&real, ranks).unwrap();
        check_spmv::<f64, f64>(&base, &real, &grid, 1);
        check_spmv::<f64, f64>(&base, &real, &balanced, 2);
        check_spmv::<C64, C64>(&base, &complex, &grid, 3);
        check_spmv::<f64, C64>(&base, &real, &grid, 4);
        check_spmv::<f32, f32>(&base, &single, &balanced, 5);
    }
}

/// GPU and CPU distributed GMRES on the same partition: same iterations (within one),
/// solutions within the tolerance, every rank the same history.
fn check_gmres<V>(
    base: &Gpu,
    a: &Bcsr<f64>,
    p: &RowPartition,
    precond: bool,
    orth: Orthogonalization,
) where
    V: kgpu::KrylovElement,
    f64: MatrixScalar<V> + SpmvKernels<V> + PrecondKernels<V>,
{
    let opts = GmresOptions::default()
        .restart(20)
        .rtol(1e-10)
        .orthogonalization(orth);
    let xt: Vec<V> = random_vec(a.n_cols(), 9);
    let mut rhs = vec![V::ZERO; a.n_rows()];
    a.apply(&xt, &mut rhs).unwrap();
    let run = |gpu_side: bool| {
        run_on_threads(p.parts(), |comm| {
            let rank = comm.rank();
            let local = p.local_rows(a, rank)?;
            let bl = p.local(rank, a.b(), &rhs)?;
            if gpu_side {
                let gpu = rank_gpu(base, rank);
                let op = DeviceDistributedBcsr::<f64, V>::new(comm, &gpu, p, &local)?;
                let cpu_op = DistributedBcsr::new(comm, p, local)?;
                let m = DeviceBlockJacobi::new(&gpu, &cpu_op.rows().interior)?;
                let m: Option<&dyn DeviceLinOp<V>> = if precond { Some(&m) } else { None };
                let bd = gpu.upload(bl)?;
                let mut xd = gpu.upload(&vec![V::ZERO; bl.len()])?;
                let r = kgpu::gmres_distributed(comm, &op, m, &bd, &mut xd, &opts)?;
                Ok((r, xd.download()?))
            } else {
                let op = DistributedBcsr::new(comm, p, local)?;
                let m = BlockJacobi::new(&op.rows().interior)?;
                let m: Option<&dyn LinOp<V>> = if precond { Some(&m) } else { None };
                let mut x = vec![V::ZERO; bl.len()];
                let r = cpu::gmres_distributed(comm, &op, m, bl, &mut x, &opts)?;
                Ok((r, x))
            }
        })
        .unwrap()
    };
    let (g, c) = (run(true), run(false));
    assert_gmres_runs_agree(&format!("{orth:?} "), p, g, c);
}

/// The GPU ranks' GMRES (`g`) against the CPU distributed solve (`c`), both per rank:
/// every GPU rank converged with rank 0's history, the iteration counts differ by at
/// most one, the gathered solutions by at most 1e-7 relative. `label` starts the
/// messages.
fn assert_gmres_runs_agree<V: Element>(
    label: &str,
    p: &RowPartition,
    g: Vec<(GmresReport, Vec<V>)>,
    c: Vec<(GmresReport, Vec<V>)>,
) {
    for (rank, (r, _)) in g.iter().enumerate() {
        assert!(r.converged, "{label}rank {rank}: {r:?}");
        assert_eq!(r.history, g[0].0.history, "{label}rank {rank}");
    }
    let d = g[0].0.iterations.abs_diff(c[0].0.iterations);
    assert!(
        d <= 1,
        "{label}GPU {} vs CPU {} iterations",
        g[0].0.iterations,
        c[0].0.iterations
    );
    let xg: Vec<Vec<V>> = g.into_iter().map(|(_, x)| x).collect();
    let xc: Vec<Vec<V>> = c.into_iter().map(|(_, x)| x).collect();
    let (xg, xc) = (p.gather(5, &xg).unwrap(), p.gather(5, &xc).unwrap());
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|a| a * a).sum::<f64>().sqrt();
    let xn = norm(&mut xc.iter().map(|&v| common::abs(v)));
    let dn = norm(&mut xg.iter().zip(&xc).map(|(&a, &b)| common::abs(a - b)));
    assert!(
        dn <= 1e-7 * xn,
        "{label}|x_gpu - x_cpu| = {dn:e}, |x| = {xn:e}"
    );
}

#[test]
fn distributed_gpu_gmres_matches_the_cpu_distributed_solve() {
    let Some((base, spec)) =
        gpu_and_grid("distributed_gpu_gmres_matches_the_cpu_distributed_solve")
    else {
        return;
    };
    let a = trace_like::<f64>(&spec).unwrap();
    for ranks in [1, 2, 4] {
        let p = RowPartition::grid_blocks(&spec, ranks).unwrap();
        for orth in [Orthogonalization::Cgs2, Orthogonalization::Pipelined] {
            check_gmres::<f64>(&base, &a, &p, false, orth);
            check_gmres::<f64>(&base, &a, &p, true, orth);
            check_gmres::<C64>(&base, &a, &p, true, orth);
        }
    }
    let p = RowPartition::grid_blocks(&spec, 2).unwrap();
    let refused = |opts: GmresOptions| {
        run_on_threads(2, |comm| {
            let gpu = rank_gpu(&base, comm.rank());
            let local = p.local_rows(&a, comm.rank())?;
            let op = DeviceDistributedBcsr::<f64, f64>::new(comm, &gpu, &p, &local)?;
            let bd = gpu.upload(&vec![1.0; op.nrows()])?;
            let mut xd = gpu.upload(&vec![0.0; op.nrows()])?;
            kgpu::gmres_distributed(comm, &op, None, &bd, &mut xd, &opts).map(|_| ())
        })
        .unwrap_err()
        .to_string()
    };
    // MGS is refused on every rank, not half-run.
    let msg = refused(GmresOptions::default().orthogonalization(Orthogonalization::Mgs));
    assert!(msg.contains("CGS2"), "{msg}");
    // A workspace beyond the device: refused on every rank before allocating, no hang.
    let msg = refused(
        GmresOptions::default()
            .restart(usize::MAX)
            .max_iter(usize::MAX),
    );
    assert!(
        msg.contains("GMRES workspace") && msg.contains("bytes"),
        "{msg}"
    );
}

/// Whether NCCL can be used; without it the NCCL tests say so on stderr and skip, or
/// fail with `FERROCUDA_REQUIRE_GPU=1` (a GPU run must test the NCCL path too).
fn nccl_or_skip(test: &str) -> bool {
    match ferrocuda::gpu::nccl_available() {
        Ok(()) => true,
        Err(e) => {
            if std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: FERROCUDA_REQUIRE_GPU=1 but {e}");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: NCCL part skipped ({e})");
            false
        }
    }
}

/// The rank counts NCCL can run here (one GPU per rank), at most 4; says which it left out.
fn nccl_ranks(test: &str) -> Vec<usize> {
    let devices = ferrocuda::gpu::count().min(4);
    if devices < 2 {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "NOTE {test}: {devices} GPU(s): NCCL runs with one rank only (several ranks need one GPU each)"
        );
    }
    (1..=devices.max(1)).collect()
}

/// The NCCL transport: the same checks as the host transport (global SpMV, output
/// poisoned; GMRES against the CPU distributed solve), ranks on their own GPUs.
#[test]
fn distributed_nccl_spmv_and_gmres_match_the_references() {
    const NAME: &str = "distributed_nccl_spmv_and_gmres_match_the_references";
    let Some(_base) = gpu_or_skip(NAME) else {
        return;
    };
    if !nccl_or_skip(NAME) {
        return;
    }
    let spec = TraceSpec::new(5, 6, 3, 4).seed(3);
    let real = trace_like::<f64>(&spec).unwrap();
    let complex = trace_like::<C64>(&spec).unwrap();
    for ranks in nccl_ranks(NAME) {
        let grid = RowPartition::grid_blocks(&spec, ranks).unwrap();
        let balanced = RowPartition::balanced(&real, ranks).unwrap();
        nccl_spmv::<f64, f64>(&real, &grid, 1);
        nccl_spmv::<f64, f64>(&real, &balanced, 2);
        nccl_spmv::<C64, C64>(&complex, &grid, 3);
        nccl_spmv::<f64, C64>(&real, &grid, 4);
        for orth in [Orthogonalization::Cgs2, Orthogonalization::Pipelined] {
            nccl_gmres::<f64>(&real, &grid, orth);
            nccl_gmres::<C64>(&real, &grid, orth);
        }
    }
}

fn nccl_spmv<A, V>(a: &Bcsr<A>, p: &RowPartition, seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let b = a.b();
    let x: Vec<V> = random_vec(a.n_cols(), seed);
    let mut want = vec![V::ZERO; a.n_rows()];
    a.apply(&x, &mut want).unwrap();
    let pieces = run_on_gpus(p.parts(), Transport::Nccl, |comm, gpu| {
        assert!(comm.nccl().is_some());
        let rank = comm.rank();
        let local = p.local_rows(a, rank)?;
        let op = DeviceDistributedBcsr::<A, V>::new(comm, gpu, p, &local)?;
        let xd = gpu.upload(p.local(rank, b, &x)?)?;
        let mut yd = gpu.upload(&common::poison::<V>(op.nrows()))?;
        // Twice: the second exchange reuses the ghost buffer after the first halo SpMV.
        for _ in 0..2 {
            op.apply(&xd.view(..)?, &mut yd.view_mut(..)?)?;
        }
        Ok(yd.download()?)
    })
    .unwrap();
    check_gathered("NCCL ", p, b, &pieces, &want);
}

fn nccl_gmres<V>(a: &Bcsr<f64>, p: &RowPartition, orth: Orthogonalization)
where
    V: kgpu::KrylovElement,
    f64: MatrixScalar<V> + SpmvKernels<V>,
{
    let opts = GmresOptions::default()
        .restart(20)
        .rtol(1e-10)
        .orthogonalization(orth);
    let xt: Vec<V> = random_vec(a.n_cols(), 9);
    let mut rhs = vec![V::ZERO; a.n_rows()];
    a.apply(&xt, &mut rhs).unwrap();
    let g = run_on_gpus(p.parts(), Transport::Nccl, |comm, gpu| {
        let rank = comm.rank();
        let local = p.local_rows(a, rank)?;
        let op = DeviceDistributedBcsr::<f64, V>::new(comm, gpu, p, &local)?;
        let bd = gpu.upload(p.local(rank, a.b(), &rhs)?)?;
        let mut xd = gpu.upload(&vec![V::ZERO; op.nrows()])?;
        let r = kgpu::gmres_distributed(comm, &op, None, &bd, &mut xd, &opts)?;
        Ok((r, xd.download()?))
    })
    .unwrap();
    let c = run_on_threads(p.parts(), |comm| {
        let rank = comm.rank();
        let op = DistributedBcsr::new(comm, p, p.local_rows(a, rank)?)?;
        let bl = p.local(rank, a.b(), &rhs)?;
        let mut x = vec![V::ZERO; bl.len()];
        let r = cpu::gmres_distributed(comm, &op, None, bl, &mut x, &opts)?;
        Ok((r, x))
    })
    .unwrap();
    assert_gmres_runs_agree(&format!("NCCL {orth:?} "), p, g, c);
}

/// Misuse of the NCCL communicator is an error, not a hang or a crash: a peer outside
/// the world, a window past the buffer, a rank on a duplicated device.
#[test]
fn distributed_nccl_rejects_bad_exchanges() {
    const NAME: &str = "distributed_nccl_rejects_bad_exchanges";
    let Some(base) = gpu_or_skip(NAME) else {
        return;
    };
    if !nccl_or_skip(NAME) {
        return;
    }
    let dup = ferrocuda::gpu::NcclComm::world(&[base.clone(), base.clone()]).unwrap_err();
    assert!(dup.to_string().contains("one GPU per rank"), "{dup}");
    let comm = ferrocuda::gpu::NcclComm::world(std::slice::from_ref(&base))
        .unwrap()
        .pop()
        .unwrap();
    let x = base.upload(&[1.0f64; 8]).unwrap();
    let mut y = base.upload(&[0.0f64; 8]).unwrap();
    let e = comm
        .exchange(&x, &[(1, 0..4)], &mut y, &[], || {
            Ok::<(), ferrocuda::Error>(())
        })
        .unwrap_err();
    assert!(e.to_string().contains("cannot exchange with rank 1"), "{e}");
    let e = comm
        .exchange(&x, &[], &mut y, &[(0, 0..4)], || {
            Ok::<(), ferrocuda::Error>(())
        })
        .unwrap_err();
    assert!(e.to_string().contains("not itself"), "{e}");
    // One rank: an all-reduce is the identity, bit for bit.
    let mut v = base.upload(&[1.5f64, -2.25, 3.0]).unwrap();
    comm.all_reduce_sum(&mut v).unwrap();
    assert_eq!(v.download().unwrap(), [1.5, -2.25, 3.0]);
}
