//! Multigrid on the CPU: second-order discretisation error (ratio 4 between 17, 33, 65),
//! every smoother and cycle reaching it in f32 and f64 for bases 2, 3, 4, 6, seed 003's
//! Table 6.1 to a few percent, the transfer operators, the exact coarse solve, the
//! register smoother against the plain-loop twin bit for bit, determinism, and bad
//! input.

use crate::common;

use ferrocuda::Error;
use ferrocuda::multigrid::grid::SineProblem;
use ferrocuda::multigrid::{Cycle, MgOptions, MgReal, MgReport, Smoother, Stop, cpu};
use ferrocuda_kernels::multigrid::{blocks_per_dim, interp_at, restrict_at};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn run<T: MgReal>(opts: &MgOptions) -> (Vec<T>, MgReport) {
    cpu::solve::<T>(opts).unwrap_or_else(|e| panic!("{opts:?}: {e}"))
}

const SMOOTHERS: [Smoother; 5] = [
    Smoother::Abl,
    Smoother::Sbl,
    Smoother::SblRacy,
    Smoother::Jacobi,
    Smoother::Rbgs,
];

fn assert_reaches<T: MgReal>(opts: &MgOptions, max_cycles: usize) -> MgReport {
    let (_, r) = run::<T>(&opts.clone().cycles(max_cycles).stop(Stop::Discretisation));
    let name = format!(
        "{} n = {} b = {} {:?} {:?} block {}",
        r.precision, opts.n, opts.base, opts.smoother, opts.cycle, r.block
    );
    let c = r.cycles_to_discretisation.unwrap_or_else(|| {
        panic!(
            "{name}: did not reach the discretisation error {:.3e} in {max_cycles} cycles: algebraic errors {:?}",
            r.discretisation_error, r.algebraic_error_norm
        )
    });
    let e = *r.error_norm.last().unwrap();
    assert!(
        (e / r.discretisation_error - 1.0).abs() <= opts.target * 1.01,
        "{name}: ||e|| = {e:.4e} vs discretisation error {:.4e}",
        r.discretisation_error
    );
    eprintln!("{name}: {c} cycles, factor {:.3}", r.convergence_factor);
    r
}

#[test]
fn error_is_second_order_ratio_four() {
    for smoother in [Smoother::Abl, Smoother::Sbl] {
        let errors: Vec<f64> = [17, 33, 65]
            .iter()
            .map(|&n| {
                let (_, r) = run::<f64>(&MgOptions::new(n, 2).smoother(smoother).cycles(8));
                *r.error_norm.last().unwrap()
            })
            .collect();
        for w in errors.windows(2) {
            let ratio = w[0] / w[1];
            assert!(
                (ratio - 4.0).abs() < 0.05,
                "{smoother:?}: errors {errors:?}, ratio {ratio}"
            );
        }
        // The error of the converged solve is the discretisation error itself.
        let e65 = SineProblem::new(65).discretisation_error;
        assert!((errors[2] / e65 - 1.0).abs() < 1e-6, "{errors:?} vs {e65}");
    }
}

#[test]
fn every_smoother_reaches_the_discretisation_error_f64_and_f32() {
    for smoother in SMOOTHERS {
        // Point smoothers need more cycles than the block smoothers.
        let cycles = if matches!(smoother, Smoother::Jacobi) {
            14
        } else {
            8
        };
        for (n, b) in [(33, 2), (65, 4), (28, 3)] {
            let opts = MgOptions::new(n, b).smoother(smoother);
            assert_reaches::<f64>(&opts, cycles);
            assert_reaches::<f32>(&opts, cycles);
        }
    }
}

#[test]
fn base_six_and_large_blocks() {
    // 6^2 + 1 = 37 with blocks of 6 (the kernels' largest), and base 8 with blocks of 8
    // (the CPU's loop version).
    for smoother in [Smoother::Abl, Smoother::Sbl] {
        assert_reaches::<f32>(&MgOptions::new(37, 6).smoother(smoother), 8);
        assert_reaches::<f64>(&MgOptions::new(65, 8).smoother(smoother), 8);
    }
    // A block edge other than the base.
    assert_reaches::<f64>(&MgOptions::new(65, 4).block(2), 8);
    assert_reaches::<f64>(&MgOptions::new(33, 2).block(3), 8);
}

#[test]
fn w_cycles_and_fmg() {
    for smoother in [Smoother::Abl, Smoother::Sbl, Smoother::Rbgs] {
        for (n, b) in [(65, 2), (65, 4)] {
            let v = assert_reaches::<f64>(&MgOptions::new(n, b).smoother(smoother), 10);
            let w =
                assert_reaches::<f64>(&MgOptions::new(n, b).smoother(smoother).cycle(Cycle::W), 10);
            assert!(
                w.cycles_to_discretisation <= v.cycles_to_discretisation,
                "{smoother:?} {n}: W {w:?} vs V {v:?}",
                w = w.cycles_to_discretisation,
                v = v.cycles_to_discretisation
            );
            let f = assert_reaches::<f32>(
                &MgOptions::new(n, b)
                    .smoother(smoother)
                    .cycle(Cycle::Fmg)
                    .smoothing(2, 2),
                10,
            );
            // Base 2: the FMG pass alone leaves an algebraic error of the order of the
            // discretisation error (trilinear interpolation of the solution over 4 h is
            // too coarse for base 4 to do the same).
            if b == 2 {
                let first = f.algebraic_error_norm[0] / f.discretisation_error;
                assert!(
                    first < 5.0,
                    "FMG {smoother:?} {n} {b}: {:?}",
                    f.algebraic_error_norm
                );
            }
        }
    }
}

#[test]
fn thesis_table_6_1_abl_33_65_129() {
    // Seed 003, Table 6.1 (ABL, f32, nu1 = nu2 = 5, B = 10): ||r||_h after cycles 1 and 2.
    // The thesis solves its coarsest grid iteratively, this code exactly; the first
    // cycles agree to within 10 %.
    let thesis = [
        (33, [0.295447, 0.005873]),
        (65, [0.307201, 0.006389]),
        (129, [0.310012, 0.006857]),
    ];
    for (n, want) in thesis {
        let (_, r) = run::<f32>(&MgOptions::new(n, 2).smoother(Smoother::Abl).cycles(2));
        assert_eq!(r.residual_norm.len(), 2, "n = {n}: two cycles expected");
        for (c, (&got, &thesis)) in r.residual_norm.iter().zip(&want).enumerate() {
            let rel = got / thesis - 1.0;
            assert!(
                rel.abs() < 0.1,
                "n = {n}, cycle {}: {got} vs thesis {thesis}",
                c + 1
            );
        }
    }
}

#[test]
fn deterministic_smoothers_repeat_bit_for_bit() {
    for smoother in SMOOTHERS {
        let opts = MgOptions::new(33, 2).smoother(smoother).cycles(2);
        let (a, ra) = run::<f32>(&opts);
        let (b, rb) = run::<f32>(&opts);
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{smoother:?}"
        );
        assert_eq!(ra.residual_norm, rb.residual_norm, "{smoother:?}");
    }
}

#[test]
fn coarsest_grid_is_solved_exactly() {
    // n = b + 1: the hierarchy is the coarsest grid alone, one cycle is the exact solve.
    for b in [2usize, 3, 4, 6, 9] {
        let (_, r) = run::<f64>(&MgOptions::new(b + 1, b).cycles(1));
        assert!(
            r.algebraic_error_norm[0] < 1e-13 && r.residual_norm[0] < 1e-11,
            "b = {b}: {r:?}"
        );
    }
}

#[test]
fn register_smoother_matches_the_loop_version_bit_for_bit() {
    fn check<T: MgReal>(s: usize, n: usize) {
        let mut rng = SmallRng::seed_from_u64((s * 1000 + n) as u64);
        let len = n * n * n;
        let mut u: Vec<T> = (0..len)
            .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
            .collect();
        let f: Vec<T> = (0..len)
            .map(|_| T::from_f64(rng.random_range(-100.0..100.0)))
            .collect();
        // Boundary zero, as in a solve.
        for z in 0..n {
            for y in 0..n {
                for x in 0..n {
                    if x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1 {
                        u[(z * n + y) * n + x] = T::ZERO;
                    }
                }
            }
        }
        let nb = blocks_per_dim(n, s);
        let h2 = 1.0 / ((n - 1) * (n - 1)) as f64;
        for omega in [1.0, 0.8] {
            let mut a = u.clone();
            let mut b = u.clone();
            for qz in 0..nb {
                for qy in 0..nb {
                    for qx in 0..nb {
                        let q = [qx, qy, qz];
                        let w = omega;
                        // SAFETY: q is a block of the n^3 grids; out of place.
                        unsafe {
                            cpu::smooth_block_any(
                                s,
                                false,
                                n,
                                q,
                                3,
                                h2,
                                w,
                                u.as_ptr(),
                                f.as_ptr(),
                                a.as_mut_ptr(),
                            );
                            cpu::smooth_block_any(
                                s,
                                true,
                                n,
                                q,
                                3,
                                h2,
                                w,
                                u.as_ptr(),
                                f.as_ptr(),
                                b.as_mut_ptr(),
                            );
                        }
                    }
                }
            }
            assert!(
                a.iter().zip(&b).all(|(x, y)| x == y),
                "s = {s}, n = {n}, omega = {omega}"
            );
            assert!(a != u, "s = {s}: nothing changed");
        }
    }
    for s in 1..=6 {
        // Sizes with full blocks only and with cut ones.
        for n in [2 * s + 2, 2 * s + 3, 3 * s + 1] {
            check::<f32>(s, n);
            check::<f64>(s, n);
        }
    }
}

/// The GPU smoother handles are indexed by block edge (`SMOOTH[s - 1]` runs edge `s`)
/// and keep the PTX entry names that notes and `scripts/ptx-check` refer to.
#[test]
fn smoother_handles_are_indexed_by_block_edge() {
    use ferrocuda_kernels::multigrid::{MAX_GPU_BLOCK, MultigridKernels};
    fn check<T: MultigridKernels>(sfx: &str) {
        let names: Vec<&str> = T::SMOOTH.iter().map(|k| k.name()).collect();
        let expected: Vec<String> = (1..=MAX_GPU_BLOCK)
            .map(|s| format!("mg_smooth_s{s}_{sfx}"))
            .collect();
        assert_eq!(names, expected, "smoother handles of {sfx}");
        assert_eq!(T::RESIDUAL.name(), format!("mg_residual_{sfx}"));
        assert_eq!(T::COARSE_SOLVE.name(), format!("mg_coarse_solve_{sfx}"));
        let ops: Vec<String> = T::OPS.iter().map(|k| k.name().to_string()).collect();
        assert_eq!(
            ops,
            [format!("mg_ops_s1_{sfx}"), format!("mg_ops_s2_{sfx}")]
        );
    }
    check::<f32>("f32");
    check::<f64>("f64");
}

#[test]
fn transfer_operators() {
    // Full weighting keeps a linear function (weights sum to one and are symmetric);
    // interpolation reproduces a trilinear one exactly.
    for b in [2usize, 3, 4, 6] {
        let nc = 4;
        let nf = b * (nc - 1) + 1;
        let lin =
            |x: usize, y: usize, z: usize| 1.0 + 2.0 * x as f64 - 0.5 * y as f64 + 0.25 * z as f64;
        let fine: Vec<f64> = (0..nf * nf * nf)
            .map(|g| lin(g % nf, (g / nf) % nf, g / (nf * nf)))
            .collect();
        let inv_b6 = 1.0 / (b as f64).powi(6);
        for (xc, yc, zc) in [(1, 1, 1), (1, 2, 2), (2, 1, 2)] {
            // SAFETY: interior coarse point of the nc grid, fine has nf^3 values.
            let v: f64 = unsafe { restrict_at(nf, b, inv_b6, xc, yc, zc, fine.as_ptr()) };
            let want = lin(b * xc, b * yc, b * zc);
            assert!((v - want).abs() < 1e-12, "b = {b}: {v} vs {want}");
        }
        let coarse: Vec<f64> = (0..nc * nc * nc)
            .map(|g| lin(b * (g % nc), b * ((g / nc) % nc), b * (g / (nc * nc))))
            .collect();
        let inv_b3 = 1.0 / (b as f64).powi(3);
        for x in 1..nf - 1 {
            for (y, z) in [(1, 1), (2, nf - 2), (nf / 2, 3)] {
                // SAFETY: interior fine point, coarse has nc^3 values.
                let v = unsafe {
                    interp_at(
                        nc,
                        b as u32,
                        inv_b3,
                        x as u32,
                        y as u32,
                        z as u32,
                        coarse.as_ptr(),
                    )
                };
                let want = lin(x, y, z);
                assert!(
                    (v - want).abs() < 1e-12,
                    "b = {b} ({x},{y},{z}): {v} vs {want}"
                );
            }
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let msg = |o: MgOptions| match cpu::solve::<f32>(&o) {
        Err(Error::InvalidArgument { reason, .. }) => reason,
        other => panic!("{o:?}: expected InvalidArgument, got {other:?}"),
    };
    let m = msg(MgOptions::new(64, 2));
    assert!(m.contains("n = 64") && m.contains("65 = 2^6 + 1"), "{m}");
    let m = msg(MgOptions::new(65, 3));
    assert!(
        m.contains("base b = 3") && m.contains("82 = 3^4 + 1"),
        "{m}"
    );
    assert!(msg(MgOptions::new(9, 1)).contains("at least 2"));
    assert!(msg(MgOptions::new(9, 2).inner(0)).contains("B must be at least 1"));
    assert!(msg(MgOptions::new(9, 2).block(0)).contains("block edge"));
    assert!(msg(MgOptions::new(9, 2).omega(2.5)).contains("omega"));
    // No cycle: an error up front, not a report of NaN GB/s.
    assert!(msg(MgOptions::new(9, 2).cycles(0)).contains("cycles must be at least 1"));
    // Memory: 32769^3 points do not fit anywhere; nor do the coarse tables of base
    // 65534 (65533^3 values) next to a single level.
    for (n, b) in [(32769, 2), (65535, 65534)] {
        let e = cpu::solve::<f32>(&MgOptions::new(n, b)).unwrap_err();
        common::assert_out_of_host_memory(&e, &[&format!("n = {n} (base {b}")]);
    }
}

/// Run only as the child of the test below, under `ulimit -v`.
#[test]
#[ignore = "a child process of multigrid_respects_the_address_space_limit"]
fn multigrid_child_under_ulimit() {
    // 1025^3 f32: 13 GB of level arrays, above the 2 GB address-space limit.
    let e = cpu::Solver::<f32>::new(&MgOptions::new(1025, 2)).unwrap_err();
    println!("CHILD ERROR: {e}");
}

/// The README's `mg --n 1025` under a per-process limit (`ulimit -v`) is an error naming
/// that limit, checked before allocating, not an abort after a pre-check of the machine's
/// free memory.
#[test]
fn multigrid_respects_the_address_space_limit() {
    let exe = std::env::current_exe().expect("test binary");
    // The child's name as libtest knows it: the module path without the crate's name.
    let child = concat!(module_path!(), "::multigrid_child_under_ulimit");
    let child = child.split_once("::").map_or(child, |(_, path)| path);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v 2000000 && exec \"$0\" --exact {child} --ignored --nocapture --test-threads 1"))
        .arg(&exe)
        .output()
        .expect("sh");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child failed: {:?}\n{text}",
        out.status
    );
    assert!(
        text.contains("CHILD ERROR") && text.contains("n = 1025") && text.contains("ulimit -v"),
        "{text}"
    );
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
