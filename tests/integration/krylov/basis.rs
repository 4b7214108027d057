//! `BasisStorage::F32` (CB-GMRES: the Krylov basis in single precision, everything else
//! in double): it reaches a tolerance below f32's precision on the true residual
//! (recomputed here in f64), the GPU against the CPU twin (the same rounding of every
//! basis entry), the options it refuses, and a single-precision system (stored as it is).

use crate::common;

use common::gpu_or_skip;
use common::krylov::{nonsymmetric, true_residual};
use common::random_vec;
use ferrocuda::Complex;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{
    BasisStorage, CycleControl, DeviceSolveElement, DeviceSolver, GmresOptions, MatrixStorage,
    Orthogonalization, Preconditioner, Solution, SolveOptions, Solver, StorageScalar,
};
use ferrocuda::sparse::{Coo, Csr};

fn solve<T: DeviceSolveElement>(
    gpu: Option<&Gpu>,
    a: &Csr<T>,
    b: &[T],
    opts: &SolveOptions,
) -> ferrocuda::Result<Solution<T>> {
    match gpu {
        None => Solver::new(a, opts)?.solve(b, None),
        Some(g) => DeviceSolver::upload(g, a, opts)?.solve(b, None),
    }
}

/// `|b - A x| / |b|` in f64.
fn rel_true<T: DeviceSolveElement>(a: &Coo<T>, b: &[T], x: &[T]) -> f64 {
    let (r, _) = true_residual(a, b, x);
    let bn = b
        .iter()
        .map(|&v| common::krylov::to_c64(v).norm_sqr())
        .sum::<f64>()
        .sqrt();
    r / bn
}

/// Full and compressed basis on `n` unknowns at rtol 1e-10 (below what an f32 basis
/// resolves in one cycle: the restarts' true residuals carry it); returns the CB steps.
fn reaches_the_tolerance<T: DeviceSolveElement + StorageScalar>(
    gpu: Option<&Gpu>,
    on: &str,
) -> (usize, Vec<T>) {
    let n = 2000;
    let coo = nonsymmetric::<T>(n, 41);
    let a = Csr::from(&coo);
    let b: Vec<T> = random_vec(n, 43);
    let gmres = GmresOptions::default()
        .restart(20)
        .rtol(1e-10)
        .max_iter(2000);
    let full = SolveOptions::default().gmres(gmres.clone());
    let cb = SolveOptions::default().gmres(gmres.basis(BasisStorage::F32));
    let sf = solve(gpu, &a, &b, &full).unwrap_or_else(|e| panic!("{on} full: {e}"));
    let sc = solve(gpu, &a, &b, &cb).unwrap_or_else(|e| panic!("{on} cb: {e}"));
    let (rf, rc) = (&sf.report, &sc.report);
    eprintln!(
        "{on}: full basis {} steps, f32 basis {} steps ({:?}), true residual {:.2e}",
        rf.gmres.iterations,
        rc.gmres.iterations,
        rc.refinement.as_ref().map(|r| &r.steps),
        rel_true(&coo, &b, &sc.x)
    );
    assert!(
        rf.gmres.converged && rc.gmres.converged,
        "{on}: {:?}",
        rc.gmres.reason
    );
    assert_eq!(rc.basis, BasisStorage::F32, "{on}");
    assert_eq!(rf.basis, BasisStorage::Full, "{on}");
    assert!(rc.refinement.is_some() && rf.refinement.is_none(), "{on}");
    assert!(
        rel_true(&coo, &b, &sc.x) <= 1.01e-10,
        "{on}: true residual {}",
        rel_true(&coo, &b, &sc.x)
    );
    // The rounding costs steps near the tolerance, not a different convergence.
    assert!(
        rc.gmres.iterations <= rf.gmres.iterations * 3 / 2 + 20,
        "{on}: {} steps with an f32 basis against {} with a full one",
        rc.gmres.iterations,
        rf.gmres.iterations
    );
    (rc.gmres.iterations, sc.x)
}

/// Everything reduced: the matrix, the (block-)Jacobi factors (ILU(0)'s with sweep
/// solves) and the basis in f32; returns each preconditioner's solution.
fn all_reduced<T: DeviceSolveElement + StorageScalar>(gpu: Option<&Gpu>, on: &str) -> Vec<Vec<T>> {
    let n = 2000;
    let coo = nonsymmetric::<T>(n, 47);
    let a = Csr::from(&coo);
    let b: Vec<T> = random_vec(n, 53);
    let mut out = Vec::new();
    for (precond, bs) in [
        (Preconditioner::Jacobi, 1),
        (Preconditioner::BlockJacobi, 4),
        (Preconditioner::Ilu0, 4),
    ] {
        let opts = SolveOptions::default()
            .precond(precond)
            .block_size(bs)
            .ilu(ferrocuda::krylov::IluOptions::default().sweeps(Some(3)))
            .storage(MatrixStorage::F32)
            .gmres(
                GmresOptions::default()
                    .rtol(1e-10)
                    .max_iter(2000)
                    .basis(BasisStorage::F32),
            );
        let s = solve(gpu, &a, &b, &opts).unwrap_or_else(|e| panic!("{on} {precond}: {e}"));
        let r = &s.report;
        let rel = rel_true(&coo, &b, &s.x);
        eprintln!(
            "{on} {precond} (f32 matrix, factors, basis): {} steps, true residual {rel:.2e}",
            r.gmres.iterations
        );
        assert!(
            r.gmres.converged && rel <= 1.01e-10,
            "{on} {precond}: {rel}"
        );
        assert_eq!(
            (r.storage, r.basis),
            (MatrixStorage::F32, BasisStorage::F32)
        );
        out.push(s.x);
    }
    out
}

/// What an f32 basis refuses, on either device: MGS, cycles on the device.
fn refusals(gpu: Option<&Gpu>, on: &str) {
    let coo = nonsymmetric::<f64>(50, 3);
    let a = Csr::from(&coo);
    let b = vec![1.0; 50];
    for gmres in [
        GmresOptions::default()
            .basis(BasisStorage::F32)
            .orthogonalization(Orthogonalization::Mgs),
        GmresOptions::default()
            .basis(BasisStorage::F32)
            .cycle_control(CycleControl::Fused),
        GmresOptions::default()
            .basis(BasisStorage::F32)
            .cycle_control(CycleControl::Device { check_every: 1 }),
    ] {
        let opts = SolveOptions::default().gmres(gmres);
        match solve(gpu, &a, &b, &opts) {
            Err(e) => assert!(e.to_string().contains("f32"), "{on}: {e}"),
            Ok(s) => panic!("{on}: expected an error, got {:?}", s.report.gmres.reason),
        }
    }
}

/// A single-precision system keeps its basis in its own type: the same as full.
fn single_precision(gpu: Option<&Gpu>, on: &str) {
    let coo = nonsymmetric::<f32>(200, 5);
    let a = Csr::from(&coo);
    let b = vec![1.0f32; 200];
    let opts =
        SolveOptions::default().gmres(GmresOptions::default().rtol(1e-5).basis(BasisStorage::F32));
    let s = solve(gpu, &a, &b, &opts).unwrap_or_else(|e| panic!("{on}: {e}"));
    assert_eq!(s.report.basis, BasisStorage::Full, "{on}: stored as it is");
    assert!(
        s.report.refinement.is_none() && s.report.gmres.converged,
        "{on}"
    );
}

#[test]
fn f32_basis_on_the_cpu() {
    reaches_the_tolerance::<f64>(None, "cpu f64");
    reaches_the_tolerance::<Complex<f64>>(None, "cpu c64");
    all_reduced::<f64>(None, "cpu f64");
    all_reduced::<Complex<f64>>(None, "cpu c64");
    refusals(None, "cpu");
    single_precision(None, "cpu");
}

#[test]
fn f32_basis_on_the_gpu_against_the_cpu_twin() {
    let Some(gpu) = gpu_or_skip("f32_basis_on_the_gpu_against_the_cpu_twin") else {
        return;
    };
    fn twin<T: DeviceSolveElement + StorageScalar>(gpu: &Gpu, on: &str) {
        let (cpu_steps, cpu_x) = reaches_the_tolerance::<T>(None, &format!("cpu {on}"));
        let (gpu_steps, gpu_x) = reaches_the_tolerance::<T>(Some(gpu), &format!("gpu {on}"));
        // The same rounding of every basis entry; only the order of the sums differs.
        assert!(
            gpu_steps <= cpu_steps * 6 / 5 + 1 && cpu_steps <= gpu_steps * 6 / 5 + 1,
            "{on}: gpu {gpu_steps} steps, cpu {cpu_steps}"
        );
        let to = common::krylov::to_c64::<T>;
        let num: f64 = gpu_x
            .iter()
            .zip(&cpu_x)
            .map(|(&g, &c)| (to(g) - to(c)).norm_sqr())
            .sum();
        let den: f64 = cpu_x.iter().map(|&c| to(c).norm_sqr()).sum();
        assert!(
            (num / den).sqrt() < 1e-8,
            "{on}: solutions differ by {}",
            (num / den).sqrt()
        );
    }
    twin::<f64>(&gpu, "f64");
    twin::<Complex<f64>>(&gpu, "c64");
    fn reduced_twin<T: DeviceSolveElement + StorageScalar>(gpu: &Gpu, on: &str) {
        let cpu = all_reduced::<T>(None, &format!("cpu {on}"));
        let dev = all_reduced::<T>(Some(gpu), &format!("gpu {on}"));
        let to = common::krylov::to_c64::<T>;
        for (c, g) in cpu.iter().zip(&dev) {
            let num: f64 = g
                .iter()
                .zip(c)
                .map(|(&g, &c)| (to(g) - to(c)).norm_sqr())
                .sum();
            let den: f64 = c.iter().map(|&c| to(c).norm_sqr()).sum();
            assert!(
                (num / den).sqrt() < 1e-8,
                "{on}: solutions differ by {}",
                (num / den).sqrt()
            );
        }
    }
    reduced_twin::<f64>(&gpu, "f64");
    reduced_twin::<Complex<f64>>(&gpu, "c64");
    refusals(Some(&gpu), "gpu");
    single_precision(Some(&gpu), "gpu");
}
