//! GMRES on a TRACE-like matrix split over the processes of an MPI job, one GPU per
//! process, the halo and the dot products through NCCL (bootstrapped over MPI). Without
//! a GPU every process solves its part on the CPU, with MPI alone.
//!
//! ```sh
//! cargo build --release --features mpi --example mpi_gmres
//! mpirun -np 4 target/release/examples/mpi_gmres 32        # 32 grid blocks of 40x80x40
//! srun --ntasks-per-node=4 --gpus-per-task=1 target/release/examples/mpi_gmres 32
//! ```

use ferrocuda::distributed::mpi::{MpiComm, nccl_over_mpi};
use ferrocuda::distributed::{Communicator, DeviceDistributedBcsr, DistributedBcsr, RowPartition};
use ferrocuda::krylov::{GmresOptions, LinOp, cpu, gpu as kgpu};
use ferrocuda::sparse::generate::{TraceSpec, trace_like};

fn main() -> ferrocuda::Result<()> {
    let blocks: usize = match std::env::args().nth(1) {
        None => 8,
        Some(s) => s.parse().map_err(|_| ferrocuda::Error::InvalidArgument {
            op: "mpi_gmres",
            reason: format!("grid blocks: expected a positive number, got {s:?}"),
        })?,
    };
    let mpi = MpiComm::init()?;
    let (rank, size) = (mpi.rank(), mpi.size());
    let spec = TraceSpec::new(40, 80, 40, blocks);
    // Every process builds the whole matrix and keeps its rows (simple, not frugal).
    let a = trace_like::<f64>(&spec)?;
    let mut b = vec![0.0; a.n_rows()];
    a.apply(&vec![1.0; a.n_cols()], &mut b)?;
    let part = RowPartition::grid_blocks(&spec, size)?;
    let local = part.local_rows(&a, rank)?;
    let b_local = part.local(rank, 5, &b)?.to_vec();
    drop(a);
    let opts = GmresOptions::default().restart(30).rtol(1e-8);
    let t = std::time::Instant::now();
    let (report, device) = match ferrocuda::gpu::open(mpi.local_rank()) {
        Ok(gpu) => {
            let comm = nccl_over_mpi(mpi, &gpu)?;
            let op = DeviceDistributedBcsr::<f64, f64>::new(&comm, &gpu, &part, &local)?;
            let bd = gpu.upload(&b_local)?;
            let mut xd = gpu.alloc_zeroed::<f64>(b_local.len())?;
            let r = kgpu::gmres_distributed(&comm, &op, None, &bd, &mut xd, &opts)?;
            (r, gpu.name()?)
        }
        Err(e) if e.is_no_device() => {
            let op = DistributedBcsr::new(&mpi, &part, local)?;
            let mut x = vec![0.0; b_local.len()];
            let r = cpu::gmres_distributed(&mpi, &op, None, &b_local, &mut x, &opts)?;
            (r, "CPU".to_string())
        }
        Err(e) => return Err(e),
    };
    if rank == 0 {
        println!(
            "{size} ranks ({device}), {} rows: converged {} after {} iterations, relative residual {:.2e}, {:.3} s",
            spec.block_rows() * 5,
            report.converged,
            report.iterations,
            report.relative_residual,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
