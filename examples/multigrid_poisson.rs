//! Geometric multigrid for `-Laplace(u) = f` on the unit cube (33^3 grid, base 2,
//! V-cycles with the ABL block smoother), on the GPU when there is one, else on the CPU.
//!
//! ```sh
//! cargo run --release --example multigrid_poisson
//! ```
//!
//! The test problem has a known solution, so the report carries the residual and the
//! error after every cycle; the check is that the error reaches the discretisation
//! error. On the GPU the CPU twin runs too and the two solutions are compared.

use ferrocuda::multigrid::{MgOptions, MgReport, Smoother, cpu, gpu};

fn main() -> ferrocuda::Result<()> {
    let opts = MgOptions::new(33, 2).smoother(Smoother::Abl).cycles(8);
    let (u_cpu, r_cpu) = cpu::solve::<f64>(&opts)?;
    let (u, report) = match ferrocuda::gpu::open(0) {
        Ok(g) => {
            println!("device: GPU 0 ({})", g.name()?);
            gpu::solve::<f64>(&g, &opts)?
        }
        Err(e) if e.is_no_device() => {
            println!("device: CPU ({e})");
            (u_cpu.clone(), r_cpu)
        }
        Err(e) => return Err(e),
    };
    println!(
        "multigrid on {}: {} levels, {} unknowns",
        report.device, report.levels, report.unknowns
    );
    print_cycles(&report);

    let last_error = report.error_norm.last().copied().unwrap_or(f64::NAN);
    let twin = u
        .iter()
        .zip(&u_cpu)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "discretisation error {:.3e}; error after the last cycle {last_error:.3e}; max |u - u_cpu| = {twin:.2e}",
        report.discretisation_error
    );
    let ok = report.cycles_to_discretisation.is_some() && twin < 1e-10;
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

fn print_cycles(r: &MgReport) {
    for (c, (res, err)) in r.residual_norm.iter().zip(&r.error_norm).enumerate() {
        println!(
            "cycle {}: ||f - A u||_h = {res:.3e}, ||u - u_exact||_h = {err:.3e}",
            c + 1
        );
    }
}
