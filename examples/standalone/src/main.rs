//! Solves `A x = b` from Matrix Market files with GMRES, on GPU 0 when there is one,
//! else on the CPU, using only the public API of `ferrocuda`.
//!
//! ```sh
//! ferrocuda-standalone A.mtx [b.mtx]   # without b.mtx: b = A (1, ..., 1)
//! ```

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use ferrocuda::krylov::{DeviceSolver, GmresOptions, LinOp, Preconditioner, SolveOptions, Solver};
use ferrocuda::sparse::{Csr, mm};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(matrix) = args.first() else {
        return Err("usage: ferrocuda-standalone A.mtx [b.mtx]".into());
    };
    // 1. Read A (a `coordinate` file) into CSR.
    let a: Csr<f64> = Csr::try_from_coo(&mm::read_coo_file(Path::new(matrix))?)?;
    let n = a.n_rows();
    let b = match args.get(1) {
        Some(path) => {
            let (rows, cols, b) = mm::read_dense::<f64, _>(BufReader::new(File::open(path)?))?;
            if (rows, cols) != (n, 1) {
                return Err(format!("{path}: b is {rows} x {cols}, expected {n} x 1").into());
            }
            b
        }
        None => {
            let mut b = vec![0.0; n];
            a.apply(&vec![1.0; a.n_cols()], &mut b)?;
            b
        }
    };

    // 2. Prepare (format chosen from the structure, preconditioner, upload) and 3. solve.
    let opts = SolveOptions::default()
        .gmres(GmresOptions::default().restart(50).rtol(1e-10))
        .precond(Preconditioner::Jacobi);
    let solution = match ferrocuda::gpu::open(0) {
        Ok(gpu) => {
            println!("device: GPU 0 ({})", gpu.name()?);
            DeviceSolver::upload(&gpu, &a, &opts)?.solve(&b, None)?
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            Solver::new(&a, &opts)?.solve(&b, None)?
        }
        Err(e) => return Err(e.into()),
    };

    let r = &solution.report;
    println!(
        "{matrix}: {n} x {n}, {} entries; format {} ({})",
        a.nnz(),
        r.format.format.name(),
        r.format.reason
    );
    // The check, on the CPU: the true residual of the solution returned.
    let mut ax = vec![0.0; n];
    a.apply(&solution.x, &mut ax)?;
    let res = ax
        .iter()
        .zip(&b)
        .map(|(p, q)| (p - q) * (p - q))
        .sum::<f64>()
        .sqrt();
    let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    println!(
        "GMRES: converged {} after {} iterations ({:?}); true |b - A x| / |b| = {:.2e}",
        r.gmres.converged,
        r.gmres.iterations,
        r.gmres.reason,
        if bn > 0.0 { res / bn } else { res }
    );
    Ok(())
}
