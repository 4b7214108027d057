//! Distributed GMRES with one process per rank under `mpirun` (cargo feature `mpi`), on
//! the CPU: [`MpiComm`] carries the halo plan, the halo exchange and the all-reduces of
//! the same distributed operator and solver that the thread tests check. Run with
//! `cargo test --release --features mpi --test distributed_mpi`; the test starts
//! `mpirun` on its own binary with 2 and 3 processes (skipped, visibly, where there is
//! no `mpirun`).
#![cfg(feature = "mpi")]

use std::process::Command;

use ferrocuda::distributed::mpi::MpiComm;
use ferrocuda::distributed::{Communicator, DistributedBcsr, RowPartition};
use ferrocuda::krylov::{GmresOptions, LinOp, cpu};
use ferrocuda::sparse::generate::{TraceSpec, trace_like};

const NAME: &str = "distributed_mpi_gmres_matches_the_single_process_solve";

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

#[test]
fn distributed_mpi_gmres_matches_the_single_process_solve() {
    if under_mpi() {
        one_rank();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for np in [2, 3] {
        let run = Command::new("mpirun")
            .args(["-np", &np.to_string()])
            .arg(&exe)
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            // Open MPI: allow root (containers, CI) and more ranks than cores.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .status();
        match run {
            Ok(status) => assert!(status.success(), "mpirun -np {np}: {status}"),
            Err(e) => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "SKIPPED {NAME}: no mpirun ({e})");
                return;
            }
        }
    }
}
