//! GMRES on a TRACE-like matrix split over the processes of an MPI job (whole grid
//! blocks per rank). With GPUs each process solves its part on a GPU of its node: with
//! NCCL when every process of the node has its own GPU (the halo and the dot products
//! GPU to GPU, bootstrapped over MPI), else through the host (halo device -> host, MPI
//! message, host -> device; any number of processes may share a GPU). Without a GPU
//! every process solves its part on the CPU, with MPI alone. `--threads P` solves the
//! same problem with P ranks as threads of this one process (no MPI), for comparison:
//! both print the same line and the residual after every iteration.
//!
//! ```sh
//! cargo build --release --features mpi --example mpi_gmres
//! mpirun -np 4 target/release/examples/mpi_gmres 32        # 32 grid blocks of 40x80x40
//! mpirun -np 4 target/release/examples/mpi_gmres 32 --transport host   # 4 ranks, 1 GPU
//! target/release/examples/mpi_gmres 32 --threads 4         # the same on 4 threads
//! srun --ntasks-per-node=4 --gpus-per-task=1 target/release/examples/mpi_gmres 32
//! ```

use std::process::ExitCode;

use ferrocuda::distributed::mpi::{MpiComm, nccl_over_mpi};
use ferrocuda::distributed::{
    Communicator, DeviceDistributedBcsr, DistributedBcsr, RowPartition, Transport, run_on_gpus,
    run_on_threads,
};
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{GmresOptions, GmresReport, LinOp, Orthogonalization, cpu, gpu as kgpu};
use ferrocuda::sparse::Bcsr;
use ferrocuda::sparse::generate::{TraceSpec, trace_like};
use ferrocuda::{Error, Result};

const USAGE: &str = "usage: mpi_gmres [BLOCKS] [--cells NXxNYxNZ] [--transport auto|nccl|host] \
[--threads P] [--cpu] [--pipelined]
  BLOCKS            grid blocks of the TRACE-like matrix, at least one per rank (default 8)
  --cells NXxNYxNZ  cells per grid block (default 40x80x40)
  --transport T     between GPUs: nccl (one GPU per rank of a node), host (through MPI or
                    the threads' host messages; ranks may share a GPU), auto (default:
                    nccl where every rank of the node has its own GPU, else host)
  --threads P       P ranks as threads of this process instead of the MPI processes
  --cpu             solve on the CPU even where there is a GPU
  --pipelined       pipelined GMRES (each step's all-reduce overlaps the next operator)";

/// Where the ranks' parts are solved and how their GPUs talk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    Auto,
    Fixed(Transport),
}

struct Args {
    blocks: usize,
    cells: [usize; 3],
    transport: Choice,
    threads: Option<usize>,
    cpu: bool,
    pipelined: bool,
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        op: "mpi_gmres",
        reason,
    }
}

fn positive(what: &str, s: &str) -> Result<usize> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(format!(
            "{what}: expected a positive number, got {s:?}"
        ))),
    }
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args> {
    let mut args = Args {
        blocks: 8,
        cells: [40, 80, 40],
        transport: Choice::Auto,
        threads: None,
        cpu: false,
        pipelined: false,
    };
    let mut blocks = None;
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| bad(format!("{name} needs a value")))
        };
        match a.as_str() {
            "--cells" => {
                let v = value("--cells")?;
                let dims: Vec<&str> = v.split('x').collect();
                if dims.len() != 3 {
                    return Err(bad(format!("--cells: expected NXxNYxNZ, got {v:?}")));
                }
                for (c, d) in args.cells.iter_mut().zip(dims) {
                    *c = positive("--cells", d)?;
                }
            }
            "--transport" => {
                let v = value("--transport")?;
                args.transport = match v.as_str() {
                    "auto" => Choice::Auto,
                    "nccl" => Choice::Fixed(Transport::Nccl),
                    "host" => Choice::Fixed(Transport::Host),
                    _ => {
                        return Err(bad(format!(
                            "--transport: expected auto, nccl or host, got {v:?}"
                        )));
                    }
                };
            }
            "--threads" => args.threads = Some(positive("--threads", &value("--threads")?)?),
            "--cpu" => args.cpu = true,
            "--pipelined" => args.pipelined = true,
            s if s.starts_with('-') => return Err(bad(format!("unknown option {s:?}"))),
            s if blocks.is_none() => blocks = Some(positive("grid blocks", s)?),
            s => return Err(bad(format!("unexpected argument {s:?}"))),
        }
    }
    args.blocks = blocks.unwrap_or(args.blocks);
    if args.cpu && args.transport != Choice::Auto {
        return Err(bad("--cpu and --transport exclude each other".into()));
    }
    Ok(args)
}

/// The problem every rank (process or thread) agrees on.
struct Problem {
    spec: TraceSpec,
    part: RowPartition,
    opts: GmresOptions,
}

impl Problem {
    fn new(args: &Args, ranks: usize) -> Result<Self> {
        let [nx, ny, nz] = args.cells;
        let spec = TraceSpec::new(nx, ny, nz, args.blocks);
        if args.blocks < ranks {
            return Err(bad(format!(
                "{} grid blocks for {ranks} ranks: every rank needs at least one",
                args.blocks
            )));
        }
        let part = RowPartition::grid_blocks(&spec, ranks)?;
        let opts = GmresOptions::default()
            .restart(30)
            .rtol(1e-8)
            .orthogonalization(if args.pipelined {
                Orthogonalization::Pipelined
            } else {
                Orthogonalization::Cgs2
            });
        Ok(Problem { spec, part, opts })
    }

    /// The whole matrix and `b = A 1`.
    fn matrix(&self) -> Result<(Bcsr<f64>, Vec<f64>)> {
        let a = trace_like::<f64>(&self.spec)?;
        let mut b = vec![0.0; a.n_rows()];
        a.apply(&vec![1.0; a.n_cols()], &mut b)?;
        Ok((a, b))
    }

    fn rows(&self) -> usize {
        self.spec.block_rows() * 5
    }
}

/// This rank's solve on `gpu` (the halo through NCCL where `comm` has it, else the host).
fn solve_gpu(
    comm: &dyn Communicator,
    gpu: &Gpu,
    p: &Problem,
    local: &Bcsr<f64>,
    b: &[f64],
) -> Result<GmresReport> {
    let op = DeviceDistributedBcsr::<f64, f64>::new(comm, gpu, &p.part, local)?;
    let bd = gpu.upload(b)?;
    let mut xd = gpu.alloc_zeroed::<f64>(b.len())?;
    kgpu::gmres_distributed(comm, &op, None, &bd, &mut xd, &p.opts)
}

fn solve_cpu(
    comm: &dyn Communicator,
    p: &Problem,
    local: Bcsr<f64>,
    b: &[f64],
) -> Result<GmresReport> {
    let op = DistributedBcsr::new(comm, &p.part, local)?;
    let mut x = vec![0.0; b.len()];
    cpu::gmres_distributed(comm, &op, None, b, &mut x, &p.opts)
}

/// The line to compare: `launch` is `mpi` or `threads`.
fn print(
    launch: &str,
    ranks: usize,
    device: &str,
    transport: &str,
    p: &Problem,
    r: &GmresReport,
    secs: f64,
) {
    println!(
        "result launch={launch} ranks={ranks} device=\"{device}\" transport={transport} rows={} \
         converged={} iterations={} relative_residual={:.6e} seconds={secs:.3}",
        p.rows(),
        r.converged,
        r.iterations,
        r.relative_residual,
    );
    let h: Vec<String> = r.history.iter().map(|v| format!("{v:.16e}")).collect();
    println!("history launch={launch} ranks={ranks} {}", h.join(" "));
}

/// The GPUs this process may use (none with `--cpu`).
fn devices(args: &Args) -> usize {
    if args.cpu { 0 } else { ferrocuda::gpu::count() }
}

fn run_threads(args: &Args, ranks: usize) -> Result<()> {
    let p = Problem::new(args, ranks)?;
    let (a, b) = p.matrix()?;
    let devices = devices(args);
    let t = std::time::Instant::now();
    let local = |rank: usize| -> Result<(Bcsr<f64>, Vec<f64>)> {
        Ok((
            p.part.local_rows(&a, rank)?,
            p.part.local(rank, 5, &b)?.to_vec(),
        ))
    };
    if devices == 0 {
        if let Choice::Fixed(t) = args.transport {
            return Err(bad(format!("--transport {t}: this machine has no GPU")));
        }
        let reports = run_on_threads(ranks, |comm| {
            let (rows, bl) = local(comm.rank())?;
            solve_cpu(comm, &p, rows, &bl)
        })?;
        print(
            "threads",
            ranks,
            "CPU",
            "host",
            &p,
            &reports[0],
            t.elapsed().as_secs_f64(),
        );
        return Ok(());
    }
    let transport = match args.transport {
        Choice::Fixed(t) => t,
        Choice::Auto if ranks <= devices => Transport::Nccl,
        Choice::Auto => Transport::Host,
    };
    let reports = run_on_gpus(ranks, transport, |comm, gpu| {
        let (rows, bl) = local(comm.rank())?;
        Ok((solve_gpu(comm, gpu, &p, &rows, &bl)?, gpu.name()?))
    })?;
    let (r, name) = &reports[0];
    print(
        "threads",
        ranks,
        name,
        &transport.to_string(),
        &p,
        r,
        t.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// Every rank's `local` outcome, agreed: an error on all ranks if any failed (so none
/// waits for a failed one in a collective).
fn agree<T>(mpi: &MpiComm, what: &str, local: Result<T>) -> Result<T> {
    let mut failed = [f64::from(u8::from(local.is_err()))];
    mpi.all_reduce_sum(&mut failed)?;
    let value = local?;
    if failed[0] > 0.0 {
        return Err(bad(format!("{what} failed on {} other rank(s)", failed[0])));
    }
    Ok(value)
}

fn run_mpi(args: &Args) -> Result<()> {
    let mpi = MpiComm::init()?;
    let (rank, size) = (mpi.rank(), mpi.size());
    let p = agree(&mpi, "the set-up", Problem::new(args, size))?;
    // Every process builds the whole matrix and keeps its rows (simple, not frugal).
    let (local, b_local) = agree(
        &mpi,
        "building the matrix",
        p.matrix().and_then(|(a, b)| {
            Ok((
                p.part.local_rows(&a, rank)?,
                p.part.local(rank, 5, &b)?.to_vec(),
            ))
        }),
    )?;
    // All ranks on GPUs or all on the CPU.
    let devices = devices(args);
    let mut with_gpu = [f64::from(u8::from(devices > 0))];
    mpi.all_reduce_sum(&mut with_gpu)?;
    if with_gpu[0] > 0.0 && with_gpu[0] < size as f64 {
        return Err(bad(format!(
            "{} of {size} ranks see a GPU: all or none must (--cpu runs all on the CPU)",
            with_gpu[0]
        )));
    }
    if with_gpu[0] == 0.0 {
        if let Choice::Fixed(t) = args.transport {
            return Err(bad(format!("--transport {t}: no GPU on this machine")));
        }
        let t = std::time::Instant::now();
        // A rank that fails in the solve ends the job: its peers would wait for it.
        let r = mpi.or_abort(solve_cpu(&mpi, &p, local, &b_local));
        if rank == 0 {
            print(
                "mpi",
                size,
                "CPU",
                "host",
                &p,
                &r,
                t.elapsed().as_secs_f64(),
            );
        }
        return Ok(());
    }
    // The node's processes take its GPUs in turn (all the same one where there is one).
    let (gpu, uuid) = agree(
        &mpi,
        "opening the GPU",
        ferrocuda::gpu::open(mpi.local_rank() % devices).and_then(|g| {
            let id = g.uuid()?;
            Ok((g, id))
        }),
    )?;
    // Whether any two ranks share a GPU: every rank's device (6 bytes of its UUID, exact
    // in an f64) in its own slot of a sum, which gathers them. By UUID, not by count:
    // under Slurm each task may see one GPU, a different one.
    let mut ids = vec![0.0; size];
    ids[rank] = 1.0 + uuid[..6].iter().fold(0u64, |k, &b| k << 8 | u64::from(b)) as f64;
    mpi.all_reduce_sum(&mut ids)?;
    ids.sort_by(f64::total_cmp);
    let sharing = ids.windows(2).filter(|w| w[0] == w[1]).count();
    let transport = match args.transport {
        Choice::Fixed(Transport::Nccl) if sharing > 0 => {
            return Err(bad(format!(
                "--transport nccl needs a GPU per rank: {} ranks on this node, {devices} GPU(s) \
                 visible, {sharing} rank(s) share one (--transport host lets ranks share a GPU)",
                mpi.local_size()
            )));
        }
        Choice::Fixed(t) => t,
        Choice::Auto if sharing > 0 => Transport::Host,
        Choice::Auto => Transport::Nccl,
    };
    let name = mpi.or_abort(gpu.name());
    let t = std::time::Instant::now();
    // A rank that fails in the solve ends the job: its peers would wait for it.
    let report = if transport == Transport::Host {
        mpi.or_abort(solve_gpu(&mpi, &gpu, &p, &local, &b_local))
    } else {
        let comm = nccl_over_mpi(mpi, &gpu)?;
        comm.host()
            .or_abort(solve_gpu(&comm, &gpu, &p, &local, &b_local))
    };
    if rank == 0 {
        print(
            "mpi",
            size,
            &name,
            &transport.to_string(),
            &p,
            &report,
            t.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let run = match args.threads {
        Some(p) => run_threads(&args, p),
        None => run_mpi(&args),
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
