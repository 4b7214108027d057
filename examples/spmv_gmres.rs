//! SpMV and GMRES on a matrix from a Matrix Market file, on the GPU when there is one,
//! else on the CPU.
//!
//! ```sh
//! cargo run --release --example spmv_gmres            # writes and solves a small matrix
//! cargo run --release --example spmv_gmres -- A.mtx   # your own (square, real) matrix
//! ```
//!
//! The right-hand side is `b = A 1`, so the exact solution is all ones. The format is
//! chosen from the matrix's structure ([`Format::Auto`]); the program prints the choice,
//! checks the SpMV against the CPU's CSR product and the solution by its true residual.

use std::path::PathBuf;

use ferrocuda::krylov::{DeviceSolver, LinOp, Preconditioner, SolveOptions, Solver};
use ferrocuda::sparse::gpu::DeviceMatrix;
use ferrocuda::sparse::{Coo, Csr, Format, Matrix, mm};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (path, written) = match std::env::args_os().nth(1) {
        Some(p) => (PathBuf::from(p), false),
        None => (write_example_matrix()?, true),
    };
    let coo = mm::read_coo_file(&path);
    if written {
        let _ = std::fs::remove_file(&path);
    }
    let a: Csr<f64> = Csr::try_from_coo(&coo?)?;
    let n = a.n_rows();
    println!(
        "{}: {n} x {} with {} entries",
        path.display(),
        a.n_cols(),
        a.nnz()
    );

    // The reference: the CPU's CSR product through the operator trait.
    let ones = vec![1.0; a.n_cols()];
    let mut b = vec![0.0; n];
    a.apply(&ones, &mut b)?;

    let opts = SolveOptions::default().precond(Preconditioner::Jacobi);
    let (y, solution) = match ferrocuda::gpu::open(0) {
        Ok(gpu) => {
            println!("device: GPU 0 ({})", gpu.name()?);
            // SpMV on the device: upload once (format chosen for the GPU), y = A 1.
            let da = DeviceMatrix::upload(&gpu, &a, Format::Auto)?;
            println!(
                "SpMV format: {} ({})",
                da.format().name(),
                da.choice().reason
            );
            let dx = gpu.upload(&ones)?;
            let mut dy = gpu.alloc_zeroed::<f64>(n)?;
            da.spmv(1.0, &dx, 0.0, &mut dy)?;
            let y = dy.download()?;
            // GMRES on the device: prepare (format, preconditioner, upload), then solve.
            (y, DeviceSolver::upload(&gpu, &a, &opts)?.solve(&b, None)?)
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            let m = Matrix::new(&a, Format::Auto)?;
            println!("SpMV format: {} ({})", m.format().name(), m.choice().reason);
            let mut y = vec![0.0; n];
            m.spmv(1.0, &ones, 0.0, &mut y)?;
            (y, Solver::new(&a, &opts)?.solve(&b, None)?)
        }
        Err(e) => return Err(e.into()),
    };

    let spmv_diff = max_abs_diff(&y, &b);
    println!("SpMV y = A 1: max |y - y_csr| = {spmv_diff:.2e}");
    let r = &solution.report;
    // The check: the true residual |b - A x| / |b|, computed here on the CPU.
    let mut ax = vec![0.0; n];
    a.apply(&solution.x, &mut ax)?;
    let residual = norm(&sub(&b, &ax)) / norm(&b);
    println!(
        "GMRES ({} format, Jacobi): converged {} after {} iterations; |b - A x| / |b| = {residual:.2e}, max |x - 1| = {:.2e}",
        r.format.format.name(),
        r.gmres.converged,
        r.gmres.iterations,
        max_abs_diff(&solution.x, &ones)
    );
    let ok = r.gmres.converged && residual <= 1e-7 && spmv_diff <= 1e-12 * norm(&b);
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

/// Writes a 2-D convection-diffusion matrix (5-point stencil on a 30 x 30 grid,
/// nonsymmetric) to a temporary Matrix Market file and returns its path.
fn write_example_matrix() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let m = 30;
    let mut coo = Coo::<f64>::empty(m * m, m * m)?;
    for i in 0..m {
        for j in 0..m {
            let k = i * m + j;
            coo.push(k, k, 4.0)?;
            if j > 0 {
                coo.push(k, k - 1, -1.3)?;
            }
            if j + 1 < m {
                coo.push(k, k + 1, -0.7)?;
            }
            if i > 0 {
                coo.push(k, k - m, -1.0)?;
            }
            if i + 1 < m {
                coo.push(k, k + m, -1.0)?;
            }
        }
    }
    let path =
        std::env::temp_dir().join(format!("ferrocuda-spmv-gmres-{}.mtx", std::process::id()));
    let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    mm::write_coo(file, &coo)?;
    Ok(path)
}

fn sub(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a - b).collect()
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}
