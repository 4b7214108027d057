//! `MatrixStorage::F32` on systems chosen to test its edges: a matrix that f32 cannot
//! model (the refinement stalls and full precision finishes, reported), an entry beyond
//! f32's range (an error naming it, nothing solved), a single-precision system (stored as
//! it is), a zero right-hand side; on the CPU, and on the GPU where there is one.

use crate::common;

use common::*;
use ferrocuda::Error;
use ferrocuda::gpu::Gpu;
use ferrocuda::krylov::{
    DeviceSolver, GmresOptions, MatrixStorage, Solution, SolveOptions, Solver,
};
use ferrocuda::sparse::{Coo, Csr};

fn csr(n: usize, entries: &[(usize, usize, f64)]) -> Csr<f64> {
    let mut coo = Coo::<f64>::empty(n, n).expect("coo");
    for &(r, c, v) in entries {
        coo.push(r, c, v).expect("push");
    }
    Csr::from(&coo)
}

fn solve(
    gpu: Option<&Gpu>,
    a: &Csr<f64>,
    b: &[f64],
    opts: &SolveOptions,
) -> ferrocuda::Result<Solution<f64>> {
    match gpu {
        None => Solver::new(a, opts)?.solve(b, None),
        Some(g) => DeviceSolver::upload(g, a, opts)?.solve(b, None),
    }
}

fn edges(gpu: Option<&Gpu>, on: &str) {
    let opts = SolveOptions::default()
        .storage(MatrixStorage::F32)
        .gmres(GmresOptions::default().rtol(1e-10).max_iter(200));
    // 2x2 blocks [1 1; 1 1 + 3e-8]: 1 + 3e-8 rounds to 1 in f32, so A_32 is singular
    // and a pass with it cannot reach the part of r outside its range: the refinement
    // stalls and full precision finishes.
    let n = 64;
    let mut e = Vec::new();
    for k in 0..n / 2 {
        let (i, j) = (2 * k, 2 * k + 1);
        e.extend([(i, i, 1.0), (i, j, 1.0), (j, i, 1.0), (j, j, 1.0 + 3e-8)]);
    }
    let a = csr(n, &e);
    let b: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 * 0.01).collect();
    let s = solve(gpu, &a, &b, &opts).unwrap_or_else(|e| panic!("{on}: {e}"));
    let rf = s.report.refinement.as_ref().expect("refinement report");
    eprintln!(
        "{on}: passes {:?} residuals {:?} fallback {:?} ({} steps)",
        rf.steps, rf.residuals, rf.fallback, rf.fallback_steps
    );
    assert!(
        s.report.gmres.converged,
        "{on}: {:?}",
        s.report.gmres.reason
    );
    assert!(
        rf.fallback.is_some(),
        "{on}: the refinement cannot converge with A_32"
    );
    assert!(s.report.gmres.relative_residual <= 1e-10, "{on}");
    // Recomputed in f64.
    let mut r2 = 0.0;
    for (i, bi) in b.iter().enumerate() {
        let (cols, vals) = a.row(i);
        let ax: f64 = cols
            .iter()
            .zip(vals)
            .map(|(&c, &v)| v * s.x[c as usize])
            .sum();
        r2 += (bi - ax) * (bi - ax);
    }
    let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(
        r2.sqrt() / bn <= 1.01e-10,
        "{on}: true residual {}",
        r2.sqrt() / bn
    );

    // An entry beyond f32's range: an error naming it, before anything runs.
    let big = csr(2, &[(0, 0, 1.0), (1, 1, 1e40)]);
    match solve(gpu, &big, &[1.0, 1.0], &opts) {
        Err(e @ Error::InvalidArgument { .. }) | Err(e @ Error::Sparse(_)) => {
            assert!(e.to_string().contains("(1, 1)"), "{on}: {e}")
        }
        other => panic!("{on}: expected an error, got {:?}", other.map(|s| s.report)),
    }
    // The same matrix in full precision solves.
    let full = opts.clone().storage(MatrixStorage::Full);
    let s = solve(gpu, &big, &[1.0, 1.0], &full).expect("full precision");
    assert!(s.report.refinement.is_none() && s.report.storage == MatrixStorage::Full);

    // A zero right-hand side: x = 0 exactly.
    let a = csr(3, &[(0, 0, 2.0), (1, 1, 3.0), (2, 2, 4.0), (0, 2, 1.0)]);
    let s = solve(gpu, &a, &[0.0; 3], &opts).expect("zero rhs");
    assert_eq!(s.x, vec![0.0; 3], "{on}");
    assert!(s.report.gmres.converged || s.report.gmres.relative_residual == 0.0);
}

fn single_precision(gpu: Option<&Gpu>) {
    let mut coo = Coo::<f32>::empty(3, 3).expect("coo");
    for (r, c, v) in [(0, 0, 2.0f32), (1, 1, 3.0), (2, 2, 4.0), (0, 2, 1.0)] {
        coo.push(r, c, v).expect("push");
    }
    let a = Csr::from(&coo);
    let opts = SolveOptions::default()
        .storage(MatrixStorage::F32)
        .gmres(GmresOptions::default().rtol(1e-5));
    let s = match gpu {
        None => Solver::new(&a, &opts).and_then(|s| s.solve(&[1.0f32; 3], None)),
        Some(g) => DeviceSolver::upload(g, &a, &opts).and_then(|s| s.solve(&[1.0f32; 3], None)),
    }
    .expect("single");
    assert_eq!(s.report.storage, MatrixStorage::Full, "stored as it is");
    assert!(s.report.refinement.is_none() && s.report.gmres.converged);
}

#[test]
fn f32_storage_edges_on_the_cpu() {
    edges(None, "cpu");
    single_precision(None);
}

#[test]
fn f32_storage_edges_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("f32_storage_edges_on_the_gpu") else {
        return;
    };
    edges(Some(&gpu), "gpu");
    single_precision(Some(&gpu));
}
