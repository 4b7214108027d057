//! Distributed GMRES with one process per rank under `mpirun` (cargo feature `mpi`), on
//! the CPU: [`MpiComm`] carries the halo plan, the halo exchange and the all-reduces of
//! the same distributed operator and solver that the thread tests check. Run with
//! `cargo test --release --features mpi --test distributed_mpi`; each test starts
//! `mpirun` on its own binary (skipped, visibly, where there is no `mpirun`), with more
//! processes than this machine may have cores (oversubscribed): 2 and 3 processes on a
//! small grid, 4 on TRACE-like partitions of 16 and 64 grid blocks (the halo plans and
//! all-reduces at a higher rank count, against the threads path), and on the GPU 2 and 4
//! processes sharing it over the host transport, 16 and 64 grid blocks (skipped visibly
//! without a GPU, a failure with `FERROCUDA_REQUIRE_GPU=1`). Injected failures: rank 1 of
//! 2 fails in the middle of the GMRES (an error, then a panic); the job must end with a
//! non-zero status and a message naming rank 1 within seconds, never hang.
#![cfg(feature = "mpi")]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferrocuda::distributed::mpi::MpiComm;
use ferrocuda::distributed::{
    Communicator, DeviceDistributedBcsr, DistributedBcsr, RowPartition, Transport, run_on_gpus,
    run_on_threads,
};
use ferrocuda::krylov::{GmresOptions, GmresReport, LinOp, cpu, gpu as kgpu};
use ferrocuda::sparse::Bcsr;
use ferrocuda::sparse::generate::{TraceSpec, trace_like};

const NAME: &str = "distributed_mpi_gmres_matches_the_single_process_solve";
const TRACE: &str = "distributed_mpi_trace_partitions_match_the_threads_path";
const GPU: &str = "distributed_mpi_gpu_host_transport_matches_the_threads_path";
const FAULT: &str = "distributed_mpi_a_failed_rank_ends_every_rank";
/// Under `mpirun`, which failure to inject on rank 1 (`error` or `panic`).
const INJECT: &str = "FERROCUDA_TEST_INJECT";

/// Inside `mpirun`: this process is one rank.
fn under_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

fn one_rank() {
    let comm = MpiComm::init().expect("MPI_Init");
    let (rank, size) = (comm.rank(), comm.size());
    // The same bits on every rank, in rank order or not.
    let mut v = [rank as f64 + 1.0, 0.5];
    comm.all_reduce_sum(&mut v).unwrap();
    assert_eq!(v[0], (size * (size + 1) / 2) as f64);
    // A message of the wrong length is an error, and the next one still arrives.
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    comm.send(next, &[1, 2, 3]).unwrap();
    comm.send(next, &[4, 5]).unwrap();
    let mut two = [0u8; 2];
    let e = comm.recv(prev, &mut two).unwrap_err();
    assert!(e.to_string().contains("expected 2 bytes"), "{e}");
    comm.recv(prev, &mut two).unwrap();
    assert_eq!(two, [4, 5]);
    assert!(comm.send(rank, &[0]).is_err());

    let spec = TraceSpec::new(4, 5, 3, 6).seed(5);
    let a = trace_like::<f64>(&spec).unwrap();
    let mut b = vec![0.0; a.n_rows()];
    a.apply(&vec![1.0; a.n_cols()], &mut b).unwrap();
    let opts = GmresOptions::default().restart(20).rtol(1e-10);
    let mut x_one = vec![0.0; a.n_rows()];
    let single = cpu::gmres(&a, None, &b, &mut x_one, &opts).unwrap();

    let part = RowPartition::grid_blocks(&spec, size).unwrap();
    let op = DistributedBcsr::new(&comm, &part, part.local_rows(&a, rank).unwrap()).unwrap();
    let bl = part.local(rank, 5, &b).unwrap();
    let mut x = vec![0.0; bl.len()];
    let r = cpu::gmres_distributed(&comm, &op, None, bl, &mut x, &opts).unwrap();
    assert!(r.converged, "rank {rank}: {r:?}");
    assert!(
        r.iterations.abs_diff(single.iterations) <= 1,
        "rank {rank}: {} iterations, one process {}",
        r.iterations,
        single.iterations
    );
    let want = part.local(rank, 5, &x_one).unwrap();
    let err = x
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-7, "rank {rank}: max |x - x_single| = {err:e}");
}

/// Starts `mpirun -np <np>` on this test binary, running only the test `name`, for each
/// `np`; `false` (after saying so) where there is no `mpirun`.
fn launch(name: &str, nps: &[usize]) -> bool {
    let exe = std::env::current_exe().unwrap();
    for &np in nps {
        let run = Command::new("mpirun")
            .args(["-np", &np.to_string()])
            .arg(&exe)
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            // Open MPI: allow root (containers, CI) and more ranks than cores.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .status();
        match run {
            Ok(status) => assert!(status.success(), "{name}: mpirun -np {np}: {status}"),
            Err(e) => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "SKIPPED {name}: no mpirun ({e})");
                return false;
            }
        }
    }
    true
}

#[test]
fn distributed_mpi_gmres_matches_the_single_process_solve() {
    if under_mpi() {
        one_rank();
        return;
    }
    launch(NAME, &[2, 3]);
}

/// The TRACE-like problem of `blocks` small grid blocks: the matrix, `b = A x_true` for
/// a varied `x_true`, and the options.
fn trace_problem(blocks: usize) -> (TraceSpec, Bcsr<f64>, Vec<f64>, GmresOptions) {
    let spec = TraceSpec::new(3, 4, 2, blocks).seed(11);
    let a = trace_like::<f64>(&spec).unwrap();
    let xt: Vec<f64> = (0..a.n_cols())
        .map(|i| 1.0 + (i % 7) as f64 / 7.0)
        .collect();
    let mut b = vec![0.0; a.n_rows()];
    a.apply(&xt, &mut b).unwrap();
    (spec, a, b, GmresOptions::default().restart(20).rtol(1e-10))
}

/// This rank's (report, x) against the threads path's on the same partition: the same
/// iteration count, the residual histories and solutions within a tight tolerance
/// (only the order of the sums may differ).
fn check_against_threads(
    what: &str,
    rank: usize,
    got: &(GmresReport, Vec<f64>),
    want: &(GmresReport, Vec<f64>),
) {
    let ((r, x), (t, xt)) = (got, want);
    assert!(r.converged, "{what}, rank {rank}: {r:?}");
    assert_eq!(
        r.iterations, t.iterations,
        "{what}, rank {rank}: iterations under MPI and on threads"
    );
    for (i, (a, b)) in r.history.iter().zip(&t.history).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * b.abs(),
            "{what}, rank {rank}: residual {i}: {a:e} under MPI, {b:e} on threads"
        );
    }
    let scale = xt.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let err = x
        .iter()
        .zip(xt)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        err <= 1e-10 * scale,
        "{what}, rank {rank}: max |x_mpi - x_threads| = {err:e}"
    );
}

fn trace_rank() {
    let comm = MpiComm::init().expect("MPI_Init");
    let (rank, size) = (comm.rank(), comm.size());
    for blocks in [16, 64] {
        let (spec, a, b, opts) = trace_problem(blocks);
        let part = RowPartition::grid_blocks(&spec, size).unwrap();
        let solve = |c: &dyn Communicator| -> ferrocuda::Result<(GmresReport, Vec<f64>)> {
            let op = DistributedBcsr::new(c, &part, part.local_rows(&a, c.rank())?)?;
            let bl = part.local(c.rank(), 5, &b)?;
            let mut x = vec![0.0; bl.len()];
            let r = cpu::gmres_distributed(c, &op, None, bl, &mut x, &opts)?;
            Ok((r, x))
        };
        let threads = run_on_threads(size, |c| solve(c)).unwrap();
        let mine = solve(&comm).unwrap();
        let what = format!("{blocks} grid blocks on {size} ranks");
        check_against_threads(&what, rank, &mine, &threads[rank]);
        // And the one-process solve, within the tolerance.
        let mut x_one = vec![0.0; a.n_rows()];
        let single = cpu::gmres(&a, None, &b, &mut x_one, &opts).unwrap();
        assert!(
            mine.0.iterations.abs_diff(single.iterations) <= 1,
            "{what}: {} iterations, one process {}",
            mine.0.iterations,
            single.iterations
        );
        let want = part.local(rank, 5, &x_one).unwrap();
        let err = mine
            .1
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            err < 1e-7,
            "{what}, rank {rank}: max |x - x_single| = {err:e}"
        );
    }
}

#[test]
fn distributed_mpi_trace_partitions_match_the_threads_path() {
    if under_mpi() {
        trace_rank();
        return;
    }
    launch(TRACE, &[4]);
}

/// Under `mpirun`, on the GPU: every process on GPU `local_rank % count` (all on one
/// where there is one), the halo through MPI (host transport), against the same
/// partition solved by threads sharing the GPU.
fn gpu_rank() {
    let comm = MpiComm::init().expect("MPI_Init");
    let (rank, size) = (comm.rank(), comm.size());
    let devices = ferrocuda::gpu::count();
    assert!(devices > 0, "rank {rank}: no GPU under mpirun");
    let gpu = ferrocuda::gpu::open(comm.local_rank() % devices).expect("open the GPU");
    for blocks in [16, 64] {
        let (spec, a, b, _) = trace_problem(blocks);
        let opts = GmresOptions::default().restart(20).rtol(1e-10);
        let part = RowPartition::grid_blocks(&spec, size).unwrap();
        let solve = |c: &dyn Communicator,
                     g: &ferrocuda::gpu::Gpu|
         -> ferrocuda::Result<(GmresReport, Vec<f64>)> {
            let local = part.local_rows(&a, c.rank())?;
            let op = DeviceDistributedBcsr::<f64, f64>::new(c, g, &part, &local)?;
            let bl = part.local(c.rank(), 5, &b)?;
            let bd = g.upload(bl)?;
            let mut xd = g.alloc_zeroed::<f64>(bl.len())?;
            let r = kgpu::gmres_distributed(c, &op, None, &bd, &mut xd, &opts)?;
            Ok((r, xd.download()?))
        };
        let mine = solve(&comm, &gpu).unwrap();
        let threads = run_on_gpus(size, Transport::Host, solve).unwrap();
        let what = format!("GPU, {blocks} grid blocks on {size} ranks");
        check_against_threads(&what, rank, &mine, &threads[rank]);
    }
}

#[test]
fn distributed_mpi_gpu_host_transport_matches_the_threads_path() {
    if under_mpi() {
        gpu_rank();
        return;
    }
    let Some(gpu) = common::gpu_or_skip(GPU) else {
        return;
    };
    // The processes open their own contexts.
    drop(gpu);
    launch(GPU, &[2, 4]);
}

/// An operator that fails on its `fail_at`-th application (1-based) where `fail_at` is
/// not zero: `error` returns an error (as a device error would), `panic` panics.
struct Faulty<'a> {
    inner: &'a dyn LinOp<f64>,
    applied: std::sync::atomic::AtomicUsize,
    fail_at: usize,
    panic: bool,
}

impl LinOp<f64> for Faulty<'_> {
    fn nrows(&self) -> usize {
        self.inner.nrows()
    }
    fn ncols(&self) -> usize {
        self.inner.ncols()
    }
    fn apply_unchecked(&self, x: &[f64], y: &mut [f64]) -> ferrocuda::Result<()> {
        let n = 1 + self
            .applied
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n == self.fail_at {
            if self.panic {
                panic!("injected panic in application {n}");
            }
            return Err(ferrocuda::Error::InvalidArgument {
                op: "Faulty::apply",
                reason: format!("injected failure in application {n}"),
            });
        }
        self.inner.apply_unchecked(x, y)
    }
}

/// Under `mpirun`: rank 1 fails (as `INJECT` says) in its 5th operator application,
/// in the middle of the GMRES; its error ends the job through `MpiComm::or_abort`, its
/// panic through `MpiComm`'s drop. Rank 0 meanwhile waits for it in a collective or a
/// receive: only the abort ends it.
fn faulty_rank() {
    let comm = MpiComm::init().expect("MPI_Init");
    let rank = comm.rank();
    let panic = std::env::var(INJECT).is_ok_and(|v| v == "panic");
    let (spec, a, b, opts) = trace_problem(16);
    let part = RowPartition::grid_blocks(&spec, comm.size()).unwrap();
    let op = DistributedBcsr::new(&comm, &part, part.local_rows(&a, rank).unwrap()).unwrap();
    let faulty = Faulty {
        inner: &op,
        applied: 0.into(),
        fail_at: if rank == 1 { 5 } else { 0 },
        panic,
    };
    let bl = part.local(rank, 5, &b).unwrap();
    let mut x = vec![0.0; bl.len()];
    let r = cpu::gmres_distributed(&comm, &faulty, None, bl, &mut x, &opts);
    let r = comm.or_abort(r);
    panic!("rank {rank} finished the solve ({r:?}) although rank 1 failed in it");
}

/// Runs `mpirun -np 2` on this test binary's `FAULT` test with `INJECT=mode`; returns
/// its status (`None`: still running after `limit`, then killed), its output, and how
/// long it ran. `None` overall where there is no `mpirun`.
fn launch_faulty(
    mode: &str,
    limit: Duration,
) -> Option<(Option<std::process::ExitStatus>, String, Duration)> {
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let child = Command::new("mpirun")
        .args(["-np", "2"])
        .arg(&exe)
        .args(["--exact", FAULT, "--nocapture", "--test-threads=1"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env(INJECT, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {FAULT}: no mpirun ({e})");
            return None;
        }
    };
    // Read both pipes on their own threads, so that a full pipe never blocks the job.
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = pipe(Box::new(child.stdout.take().unwrap()));
    let err = pipe(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let text = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    Some((status, text, took))
}

#[test]
fn distributed_mpi_a_failed_rank_ends_every_rank() {
    if under_mpi() {
        faulty_rank();
        return;
    }
    for mode in ["error", "panic"] {
        // Generous for a loaded machine; the job itself ends in about a second.
        let limit = Duration::from_secs(60);
        let Some((status, text, took)) = launch_faulty(mode, limit) else {
            return;
        };
        let status = status.unwrap_or_else(|| {
            panic!("{mode}: the job still ran after {limit:?} (a hang); output:\n{text}")
        });
        assert!(!status.success(), "{mode}: {status}; output:\n{text}");
        assert!(
            text.contains("ferrocuda: rank 1 of 2 failed"),
            "{mode}: no message naming rank 1; output:\n{text}"
        );
        if mode == "error" {
            assert!(text.contains("injected failure in application 5"), "{text}");
        } else {
            assert!(text.contains("injected panic in application 5"), "{text}");
        }
        assert!(
            !text.contains("finished the solve"),
            "{mode}: a rank finished; output:\n{text}"
        );
        eprintln!("{FAULT}: {mode} on rank 1: {status} after {took:.2?}");
        assert!(took < Duration::from_secs(30), "{mode}: {took:?}");
    }
}
