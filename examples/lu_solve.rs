//! Dense LU with partial pivoting and a solve with two right-hand sides (a random
//! 500 x 500 system), on the GPU when there is one, else on the CPU.
//!
//! ```sh
//! cargo run --release --example lu_solve
//! ```
//!
//! The right-hand sides are `B = A X_true`; the check is the normwise residual
//! `||A X - B||_1 / (||A||_1 ||X||_1)`, which a backward-stable solve keeps of order `n eps`.

use ferrocuda::dense::{LuOptions, Matrix, cpu, gpu};

fn main() -> ferrocuda::Result<()> {
    let n = 500;
    let a = Matrix::<f64>::try_random(n, n, -1.0, 1.0, 7)?;
    let x_true = Matrix::<f64>::from_fn(n, 2, |i, j| 1.0 + (i + j) as f64 / n as f64);
    let b = product(&a, &x_true)?;
    let opts = LuOptions::default();

    let lu = match ferrocuda::gpu::open(0) {
        Ok(g) => {
            println!("device: GPU 0 ({})", g.name()?);
            gpu::factor(&g, &a, &opts)?
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            cpu::factor(&a, &opts)?
        }
        Err(e) => return Err(e),
    };
    let r = &lu.report;
    println!(
        "P A = L U of {n} x {n} in {:.2} ms, rcond {:.2e}",
        r.factor_ms, r.rcond
    );
    // The triangular solves run on the host from the factors.
    let x = lu.solve(&b)?;

    // The check, on the CPU: the residual of the solution and its distance to X_true.
    let ax = product(&a, &x)?;
    let r = Matrix::from_fn(n, 2, |i, j| ax.get(i, j) - b.get(i, j));
    let residual = r.norm1() / (a.norm1() * x.norm1());
    let error = x.max_rel_diff(&x_true)?;
    let bound = n as f64 * f64::EPSILON;
    println!(
        "||A X - B||_1 / (||A||_1 ||X||_1) = {residual:.2e} (n eps = {bound:.2e}); max relative difference to X_true {error:.2e}"
    );
    let ok = residual < bound && error < 1e-8;
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

/// `A X` on the host (column-major, a simple triple loop).
fn product(a: &Matrix<f64>, x: &Matrix<f64>) -> ferrocuda::Result<Matrix<f64>> {
    let mut y = Matrix::try_zeros(a.nrows(), x.ncols())?;
    for j in 0..x.ncols() {
        for k in 0..a.ncols() {
            let xkj = x.get(k, j);
            for i in 0..a.nrows() {
                y.set(i, j, y.get(i, j) + a.get(i, k) * xkj);
            }
        }
    }
    Ok(y)
}
