//! Multigrid on the GPU against the CPU twin: the deterministic smoothers give the same
//! iterates bit for bit (f32 and f64, bases 2, 3, 4, 6, V, W and FMG cycles), the norms
//! agree to rounding (different summation orders), ABL and SBL reach the discretisation
//! error in f32 and f64, the racy SBL converges, cycles replayed as CUDA graphs and the
//! coarse levels run by the operation-list kernel give the bits of direct launches, the
//! residual and its restriction in one launch give the bits of two, and
//! bad input is an error. Each test
//! skips visibly without a GPU (`FERROCUDA_REQUIRE_GPU=1` turns that into a failure).

use crate::common;

use common::gpu_or_skip;
use ferrocuda::Error;
use ferrocuda::gpu::Gpu;
use ferrocuda::multigrid::{Cycle, MgOptions, MgReal, MgReport, Smoother, Stop, cpu, gpu};

fn both<T: MgReal>(g: &Gpu, opts: &MgOptions) -> ((Vec<T>, MgReport), (Vec<T>, MgReport)) {
    let c = cpu::solve::<T>(opts).unwrap_or_else(|e| panic!("cpu {opts:?}: {e}"));
    let d = gpu::solve::<T>(g, opts).unwrap_or_else(|e| panic!("gpu {opts:?}: {e}"));
    (c, d)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

fn check_same<T: MgReal>(g: &Gpu, opts: &MgOptions) {
    let ((uc, rc), (ug, rg)) = both::<T>(g, opts);
    let name = format!(
        "{} n = {} b = {} {:?} {:?}",
        rc.precision, opts.n, opts.base, opts.smoother, opts.cycle
    );
    let differ = uc.iter().zip(&ug).filter(|(a, b)| a != b).count();
    assert_eq!(differ, 0, "{name}: {differ} of {} values differ", uc.len());
    for c in 0..rc.residual_norm.len() {
        for (what, a, b) in [
            ("residual", rc.residual_norm[c], rg.residual_norm[c]),
            ("error", rc.error_norm[c], rg.error_norm[c]),
            (
                "algebraic",
                rc.algebraic_error_norm[c],
                rg.algebraic_error_norm[c],
            ),
        ] {
            assert!(
                rel(a, b) < 1e-10,
                "{name} cycle {}: {what} {a} vs {b}",
                c + 1
            );
        }
    }
    eprintln!(
        "{name}: identical, ||r|| {:.3e}",
        rg.residual_norm.last().unwrap()
    );
}

#[test]
fn gpu_matches_cpu_bit_for_bit() {
    let Some(g) = gpu_or_skip("gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    for smoother in [
        Smoother::Abl,
        Smoother::Sbl,
        Smoother::Jacobi,
        Smoother::Rbgs,
    ] {
        for (n, b) in [(33, 2), (28, 3), (65, 4), (37, 6)] {
            let opts = MgOptions::new(n, b).smoother(smoother).cycles(2);
            check_same::<f32>(&g, &opts);
            check_same::<f64>(&g, &opts);
        }
    }
    for cycle in [Cycle::W, Cycle::Fmg] {
        let opts = MgOptions::new(65, 2).cycle(cycle).cycles(2).smoothing(2, 1);
        check_same::<f32>(&g, &opts);
        check_same::<f64>(&g, &opts);
    }
    // Block edges other than the base, damping, and edge 5.
    check_same::<f32>(&g, &MgOptions::new(65, 4).block(2).cycles(2));
    check_same::<f64>(&g, &MgOptions::new(65, 2).block(5).omega(0.9).cycles(2));
    // Every kernel that keeps the block's right-hand side in shared memory (edge 4 in
    // f64, edges 5 and 6), at full and cut blocks, red-black and all-block sweeps.
    for smoother in [Smoother::Abl, Smoother::Sbl] {
        for s in [4, 5, 6] {
            let opts = MgOptions::new(65, 2).smoother(smoother).block(s).cycles(2);
            check_same::<f32>(&g, &opts);
            check_same::<f64>(&g, &opts);
        }
    }
}

/// Asserts that two GPU solves of the same options gave the same iterate bit for bit and
/// the same residual and error norms; `name` labels the failure.
fn assert_same_solve<T: MgReal>(name: &str, (u, r): (&[T], &MgReport), (v, q): (&[T], &MgReport)) {
    let differ = u.iter().zip(v).filter(|(a, b)| a != b).count();
    assert_eq!(differ, 0, "{name}: {differ} of {} values differ", u.len());
    assert_eq!(r.residual_norm, q.residual_norm, "{name}");
    assert_eq!(r.error_norm, q.error_norm, "{name}");
}

/// Solves with `opts` twice on one solver with its defaults (cycle graphs, the coarse
/// levels in the operation-list kernel) and once with every operation launched from the
/// host; all three must give the same bits and norms. Returns the graphs captured after
/// the first and the second solve, and the levels run by the operation-list kernel.
fn graphs_against_launches<T: MgReal>(g: &Gpu, opts: &MgOptions) -> (usize, usize, usize) {
    let name = format!("{} {opts:?}", size_of::<T>() * 8);
    let mut on = gpu::Solver::<T>::new(g, opts).expect("solver");
    let first = on.solve().expect("solve with graphs");
    let u_first = on.solution().download().expect("download");
    let captured = on.cycle_graphs();
    // A second solve on the same solver meets the starting states of the first.
    let again = on.solve().expect("second solve");
    let u_again = on.solution().download().expect("download");
    let mut off = gpu::Solver::<T>::new(g, opts).expect("solver");
    off.set_cycle_graphs(false);
    off.set_fused_levels(false);
    off.set_fused_restriction(false);
    let plain = off.solve().expect("solve without graphs");
    let u_plain = off.solution().download().expect("download");
    assert_eq!((off.cycle_graphs(), off.fused_levels()), (0, 0), "{name}");
    for (what, u, r) in [("first", &u_first, &first), ("second", &u_again, &again)] {
        assert_same_solve(&format!("{name} {what}"), (u, r), (&u_plain, &plain));
        assert_eq!(
            r.cycle_bytes, plain.cycle_bytes,
            "{name} {what}: cost model"
        );
    }
    (captured, on.cycle_graphs(), on.fused_levels())
}

#[test]
fn cycle_graphs_give_the_bits_of_direct_launches() {
    let Some(g) = gpu_or_skip("cycle_graphs_give_the_bits_of_direct_launches") else {
        return;
    };
    // SBL V(5,5) on 33^3 (levels 3, 5, 9 in the operation-list kernel): every cycle
    // starts from the same buffers, so one graph (captured at the second cycle) serves
    // all, and the second solve captures nothing.
    let sbl = MgOptions::new(33, 2).cycles(4);
    assert_eq!(graphs_against_launches::<f32>(&g, &sbl), (1, 1, 3));
    assert_eq!(graphs_against_launches::<f64>(&g, &sbl), (1, 1, 3));
    // Jacobi V(2,1): three out-of-place sweeps per level, so the iterates alternate
    // between buffers from cycle to cycle: several graphs, and replays of them. A point
    // smoother: levels 3 and 5 in the kernel (9^3 has 343 blocks of one point).
    let jacobi = MgOptions::new(33, 2)
        .smoother(Smoother::Jacobi)
        .smoothing(2, 1)
        .cycles(6);
    for (first, second, fused) in [
        graphs_against_launches::<f32>(&g, &jacobi),
        graphs_against_launches::<f64>(&g, &jacobi),
    ] {
        assert_eq!(fused, 2);
        assert!((2..6).contains(&first), "{first} graphs for 6 cycles");
        assert!(
            (first..6).contains(&second),
            "{second} graphs after 12 cycles"
        );
    }
    // W-cycles and FMG (its first cycle launched directly) with the coarse levels in the
    // operation-list kernel; RBGS on base 4 (level 5 in it); ABL with blocks of 4 (no
    // level in it).
    let cases = [
        (MgOptions::new(65, 2).cycle(Cycle::W).smoothing(2, 1), 3),
        (MgOptions::new(65, 2).cycle(Cycle::Fmg), 3),
        (MgOptions::new(65, 4).smoother(Smoother::Rbgs), 1),
        (MgOptions::new(65, 4).smoother(Smoother::Abl), 0),
    ];
    for (opts, fused) in cases {
        let opts = opts.cycles(3);
        let want = (1, 1, fused);
        assert_eq!(graphs_against_launches::<f32>(&g, &opts), want, "{opts:?}");
        assert_eq!(graphs_against_launches::<f64>(&g, &opts), want, "{opts:?}");
    }
    // A hierarchy entirely in the operation-list kernel (one launch per cycle), damped.
    let small = MgOptions::new(9, 2).omega(0.8).cycles(3);
    assert_eq!(graphs_against_launches::<f32>(&g, &small), (1, 1, 3));
    assert_eq!(graphs_against_launches::<f64>(&g, &small), (1, 1, 3));
}

/// Solves with `opts` with the residual and its restriction in one launch (the default)
/// and in two, every level launched (no operation-list kernel, so the fused launch also
/// runs on the coarse levels): the same bits and norms. The coarse right-hand sides are
/// overwritten every cycle, so a point the fused kernel missed would differ.
fn fused_restriction_against_two_launches<T: MgReal>(g: &Gpu, opts: &MgOptions) {
    let name = format!("{} {opts:?}", size_of::<T>() * 8);
    let solve = |fused: bool| {
        let mut s = gpu::Solver::<T>::new(g, opts).expect("solver");
        s.set_fused_levels(false);
        s.set_fused_restriction(fused);
        let r = s.solve().expect("solve");
        (s.solution().download().expect("download"), r)
    };
    let ((u_one, r_one), (u_two, r_two)) = (solve(true), solve(false));
    assert_same_solve(&name, (&u_one, &r_one), (&u_two, &r_two));
    assert!(
        r_one.residual_norm.last() < r_one.residual_norm.first(),
        "{name}: no convergence {:?}",
        r_one.residual_norm
    );
}

#[test]
fn fused_restriction_gives_the_bits_of_two_launches() {
    let Some(g) = gpu_or_skip("fused_restriction_gives_the_bits_of_two_launches") else {
        return;
    };
    // Coarse tiles of 16 x 8 x 4 points: cut tiles on every level (33, 17, 9, 5, 3 coarse
    // points per dimension), every smoother, V, W and FMG, damping.
    let cases = [
        MgOptions::new(65, 2).cycles(2),
        MgOptions::new(129, 2)
            .smoother(Smoother::Abl)
            .cycle(Cycle::W)
            .smoothing(2, 1)
            .cycles(2),
        MgOptions::new(65, 2)
            .smoother(Smoother::Jacobi)
            .cycle(Cycle::Fmg)
            .cycles(2),
        MgOptions::new(33, 2)
            .smoother(Smoother::Rbgs)
            .omega(0.9)
            .cycles(2),
    ];
    for opts in &cases {
        fused_restriction_against_two_launches::<f32>(&g, opts);
        fused_restriction_against_two_launches::<f64>(&g, opts);
    }
}

/// Solves with `opts` in f32 and f64 on the GPU: each must reach the discretisation
/// error (the final error within 11 % of it). Returns each report with its cycle count.
fn reach_discretisation(g: &Gpu, opts: &MgOptions, what: &str) -> [(MgReport, usize); 2] {
    [
        gpu::solve::<f32>(g, opts).expect("f32").1,
        gpu::solve::<f64>(g, opts).expect("f64").1,
    ]
    .map(|r| {
        let c = r.cycles_to_discretisation.unwrap_or_else(|| {
            panic!(
                "{} {what}: not reached: {:?} (discretisation {:.3e})",
                r.precision, r.algebraic_error_norm, r.discretisation_error
            )
        });
        let e = *r.error_norm.last().unwrap();
        assert!((e / r.discretisation_error - 1.0).abs() < 0.11, "{r:?}");
        (r, c)
    })
}

#[test]
fn gpu_reaches_the_discretisation_error_on_513() {
    let Some(g) = gpu_or_skip("gpu_reaches_the_discretisation_error_on_513") else {
        return;
    };
    // The f32 floor matters most on fine grids (the discretisation error is 1.1e-6 here):
    // ABL and SBL reach it in f32 and f64, V-cycles and FMG.
    for smoother in [Smoother::Abl, Smoother::Sbl] {
        for cycle in [Cycle::V, Cycle::Fmg] {
            let opts = MgOptions::new(513, 2)
                .smoother(smoother)
                .cycle(cycle)
                .cycles(10)
                .stop(Stop::Discretisation);
            for (r, c) in reach_discretisation(&g, &opts, &format!("513 {smoother:?} {cycle:?}")) {
                eprintln!("{} 513 {smoother:?} {cycle:?}: {c} cycles", r.precision);
            }
        }
    }
}

#[test]
fn gpu_reaches_the_discretisation_error() {
    let Some(g) = gpu_or_skip("gpu_reaches_the_discretisation_error") else {
        return;
    };
    for smoother in [Smoother::Abl, Smoother::Sbl] {
        for (n, b) in [(129, 2), (257, 4), (217, 6)] {
            let opts = MgOptions::new(n, b)
                .smoother(smoother)
                .cycles(8)
                .stop(Stop::Discretisation);
            for (r, c) in reach_discretisation(&g, &opts, &format!("{n} {b} {smoother:?}")) {
                eprintln!(
                    "{} {n} {b} {smoother:?}: {c} cycles, {:.4} s",
                    r.precision,
                    r.seconds_to_discretisation.unwrap()
                );
            }
        }
    }
}

#[test]
fn racy_sbl_converges_on_the_gpu() {
    let Some(g) = gpu_or_skip("racy_sbl_converges_on_the_gpu") else {
        return;
    };
    let opts = MgOptions::new(129, 2)
        .smoother(Smoother::SblRacy)
        .cycles(8)
        .stop(Stop::Discretisation);
    let r = gpu::solve::<f32>(&g, &opts).expect("racy").1;
    assert!(
        r.cycles_to_discretisation.is_some(),
        "{:?}",
        r.algebraic_error_norm
    );
}

#[test]
fn gpu_bad_input() {
    let Some(g) = gpu_or_skip("gpu_bad_input") else {
        return;
    };
    let msg = |o: MgOptions| match gpu::solve::<f32>(&g, &o) {
        Err(Error::InvalidArgument { reason, .. }) => reason,
        other => panic!(
            "{o:?}: expected InvalidArgument, got {:?}",
            other.map(|r| r.1)
        ),
    };
    assert!(msg(MgOptions::new(65, 8)).contains("block edge 8"));
    assert!(msg(MgOptions::new(100, 2)).contains("n = 100"));
    let m = msg(MgOptions::new(4097, 2));
    assert!(
        m.contains("n = 4097") && m.contains("free GPU memory"),
        "{m}"
    );
    // The device still works after the refusals.
    let r = gpu::solve::<f32>(&g, &MgOptions::new(17, 2).cycles(2)).expect("small");
    assert!(r.1.residual_norm[1] < r.1.residual_norm[0]);
}
