//! ROCK4 on the 2-D heat equation `u_t = Laplace(u)` (5-point stencil, 63 x 63 interior
//! points), on the GPU when there is one, else on the CPU.
//!
//! ```sh
//! cargo run --release --example rock4_heat
//! ```
//!
//! The semi-discrete problem has an exact solution ([`Heat2d::exact`]), so the check is
//! the error at the end time; on the GPU the CPU twin runs too and the two solutions
//! are compared.

use ferrocuda::rock4::problems::Heat2d;
use ferrocuda::rock4::{Rock4Options, Rock4Report, cpu, gpu};

fn main() -> ferrocuda::Result<()> {
    let heat = Heat2d::new(63, 1.0)?;
    let (t_end, tol) = (0.05, 1e-7);
    let opts = Rock4Options::default().rtol(tol).atol(tol);

    // The CPU twin: the reference on either device.
    let mut y_cpu = heat.initial();
    let r_cpu = cpu::integrate(&heat, 0.0, t_end, &mut y_cpu, &opts)?;

    let (y, report, device) = match ferrocuda::gpu::open(0) {
        Ok(g) => {
            // The problem on the device, the state uploaded once; every stage runs there.
            let mut y = g.upload(&heat.initial())?;
            let r = gpu::integrate(&heat.on_device(&g), 0.0, t_end, &mut y, &opts)?;
            (y.download()?, r, format!("GPU 0 ({})", g.name()?))
        }
        Err(e) if e.is_no_device() => (y_cpu.clone(), r_cpu.clone(), format!("CPU ({e})")),
        Err(e) => return Err(e),
    };
    println!("device: {device}");
    print_report(&report);

    let exact = heat.exact(t_end);
    let err = max_abs_diff(&y, &exact);
    let twin = max_abs_diff(&y, &y_cpu);
    println!(
        "t = {t_end}: max |y - y_exact| = {err:.2e} (tolerance {tol:e}); max |y - y_cpu| = {twin:.2e}"
    );
    let ok = err < 100.0 * tol && twin < 100.0 * tol;
    println!("check: {}", if ok { "passed" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

fn print_report(r: &Rock4Report) {
    println!("ROCK4: {r}");
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}
