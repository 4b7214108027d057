//! Point- and block-Jacobi preconditioners on the GPU against the CPU: the inverse blocks
//! (inverted on the device by the same function) and the apply, bit for bit, with the
//! outputs poisoned; the singular-block and shape errors. Every (matrix, vector) pair.

use crate::common;

use common::*;
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::gpu::{DeviceSlice, Gpu};
use ferrocuda::krylov::precond::PrecondKernels;
use ferrocuda::krylov::{BlockJacobi, DeviceBlockJacobi, DeviceLinOp, LinOp};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Bcsr, BlockFit, BlockLayout, Csr, Index, MatrixScalar};
use ferrocuda::{Complex, Error, RealScalar};

/// A random square BCSR matrix with ghost rows (about 20% of the scalar rows empty, so
/// some block rows store nothing), a full diagonal block with a dominant diagonal in every
/// other block row and random blocks elsewhere.
fn random_bcsr<A: Element>(nbr: usize, b: usize, layout: BlockLayout, seed: u64) -> Bcsr<A> {
    let n = nbr * b;
    let mut coo = random_coo::<A>(n, n, (2.0 / n as f64).clamp(0.02, 1.0), seed);
    // Full diagonal blocks in the block rows random_coo put an entry in (the others stay
    // ghost rows).
    let csr0 = Csr::from(&coo);
    for i in 0..n {
        let bi = i / b;
        if (bi * b..bi * b + b).all(|r| csr0.row(r).0.is_empty()) {
            continue;
        }
        for c in bi * b..bi * b + b {
            let v = if c == i {
                A::from_real(<A::Real as RealScalar>::from_f64(2.0 + b as f64))
            } else {
                random_scalar::<A>(seed ^ (i * n + c) as u64)
            };
            coo.push(i, c, v).expect("push");
        }
    }
    Bcsr::from_csr(&Csr::from(&coo), b, layout, BlockFit::Exact).expect("bcsr")
}

/// The CPU and GPU preconditioners of `a` agree: the same inverse blocks (checked within
/// a relative tolerance, then bit for bit) and the same apply, bit for bit.
fn check_pair<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, point: bool, seed: u64)
where
    A: Element + MatrixScalar<V> + PrecondKernels<V> + PrecondKernels<A>,
    V: Element,
{
    let (cpu, dev) = if point {
        (
            BlockJacobi::point(a).unwrap_or_else(|e| panic!("{what}: cpu: {e}")),
            DeviceBlockJacobi::point(gpu, a).unwrap_or_else(|e| panic!("{what}: gpu: {e}")),
        )
    } else {
        (
            BlockJacobi::new(a).unwrap_or_else(|e| panic!("{what}: cpu: {e}")),
            DeviceBlockJacobi::new(gpu, a).unwrap_or_else(|e| panic!("{what}: gpu: {e}")),
        )
    };
    assert_eq!(
        (dev.b(), dev.n_block_rows(), dev.n_rows()),
        (cpu.b(), cpu.n_block_rows(), cpu.n_rows()),
        "{what}"
    );
    let inv = dev.inverse_blocks().download().expect("download inverse");
    let want = cpu.inverse_blocks();
    assert_eq!(inv.len(), want.len(), "{what}: inverse length");
    // Relative 1e-12 (f64) / 1e-5 (f32) of the block's largest entry, then the bits.
    let rel = if bref::eps::<A>() > 1e-10 {
        1e-5
    } else {
        1e-12
    };
    let bb = cpu.b() * cpu.b();
    for (k, (g, w)) in inv.chunks(bb).zip(want.chunks(bb)).enumerate() {
        let scale = w.iter().map(|&v| abs(v)).fold(0.0, f64::max);
        for (e, (&g, &w)) in g.iter().zip(w).enumerate() {
            let err = (bref::widen(g) - bref::widen(w)).norm();
            assert!(
                err <= rel * scale,
                "{what}: inverse block {k} entry {e}: gpu {g:?} cpu {w:?}"
            );
        }
    }
    assert_bits_eq(&format!("{what}: inverse blocks"), &inv, want);
    // Apply, y poisoned.
    let n = cpu.n_rows();
    let x = random_vec::<V>(n, seed);
    let mut y_cpu = poison::<V>(n);
    LinOp::<V>::apply(&cpu, &x, &mut y_cpu).expect("cpu apply");
    let dx = gpu.upload(&x).expect("upload x");
    let mut dy = gpu.upload(&poison::<V>(n)).expect("upload y");
    {
        let xv = dx.view(..).expect("view");
        let mut yv = dy.view_mut(..).expect("view_mut");
        DeviceLinOp::<V>::apply(&dev, &xv, &mut yv).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let got = dy.download().expect("download y");
    assert_bits_eq(&format!("{what}: apply x {}", tname::<V>()), &got, &y_cpu);
}

fn pair<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + PrecondKernels<V> + PrecondKernels<A>,
    V: Element,
{
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        for b in [1, 2, 3, 5, 7, 8] {
            for nbr in [1, 31, 33, 257] {
                let a = random_bcsr::<A>(nbr, b, layout, (b * 1000 + nbr) as u64);
                for point in [false, true] {
                    let kind = if point { "point" } else { "block" };
                    let what = format!("{kind} {name} {layout:?} b={b} {nbr} block rows");
                    check_pair::<A, V>(gpu, &what, &a, point, nbr as u64);
                }
            }
        }
        // TRACE-like: ghost rows, 13-point stencil, 5x5 blocks.
        let spec = TraceSpec::new(4, 6, 5, 3).seed(7);
        let a = generate::trace_like::<A>(&spec)
            .expect("generate")
            .with_layout(layout);
        assert!(a.empty_block_rows() > 0);
        check_pair::<A, V>(
            gpu,
            &format!("trace-like block {name} {layout:?}"),
            &a,
            false,
            5,
        );
        check_pair::<A, V>(
            gpu,
            &format!("trace-like point {name} {layout:?}"),
            &a,
            true,
            6,
        );
    }
}

#[test]
fn block_jacobi_gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("block_jacobi_gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    each_scalar_pair!(pair(&gpu));
}

/// The reason of an `InvalidArgument`, or a panic naming what came instead.
fn invalid_reason<T>(what: &str, r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidArgument { reason, .. }) => reason,
        Err(e) => panic!("{what}: expected InvalidArgument, got {e:?}"),
        Ok(_) => panic!("{what}: expected InvalidArgument, got Ok"),
    }
}

fn singular_case<A: Element + PrecondKernels<A>>(gpu: &Gpu) {
    let t = tname::<A>();
    let b = 3;
    // Block rows 0..6; row 2 empty (identity), rows 3 and 5 singular (rank 2 and zero);
    // the error must name block row 3, as on the CPU.
    let one = A::ONE;
    let two = one + one;
    let z = A::ZERO;
    let id = [one, z, z, z, one, z, z, z, one];
    let rank2 = [one, two, z, z, one, one, one, one + two, one];
    let zero = [z; 9];
    let mut row_ptr = vec![0];
    let (mut col_idx, mut values): (Vec<Index>, Vec<A>) = (vec![], vec![]);
    for i in 0..6 {
        if i != 2 {
            col_idx.push(i as Index);
            values.extend_from_slice(match i {
                3 => &rank2,
                5 => &zero,
                _ => &id,
            });
        }
        row_ptr.push(col_idx.len());
    }
    let a = common::bcsr(b, (6, 6), row_ptr, col_idx, values);
    let cpu = invalid_reason("cpu", BlockJacobi::new(&a));
    let dev = invalid_reason(&format!("{t} gpu"), DeviceBlockJacobi::new(gpu, &a));
    assert_eq!(
        dev, cpu,
        "{t}: the GPU and CPU name the same block row the same way"
    );
    assert!(dev.contains("block row 3 "), "{t}: {dev}");
    // Point Jacobi: the zero block's first row (scalar row 15) is the first zero diagonal
    // entry (the rank-2 block has ones on its diagonal).
    let cpu = invalid_reason("cpu point", BlockJacobi::point(&a));
    let dev = invalid_reason(&format!("{t} gpu point"), DeviceBlockJacobi::point(gpu, &a));
    assert_eq!(dev, cpu, "{t} point");
    assert!(dev.contains("row 15 "), "{t}: {dev}");
}

#[test]
fn block_jacobi_gpu_singular_and_shape_errors() {
    let Some(gpu) = gpu_or_skip("block_jacobi_gpu_singular_and_shape_errors") else {
        return;
    };
    singular_case::<f32>(&gpu);
    singular_case::<f64>(&gpu);
    singular_case::<Complex<f32>>(&gpu);
    singular_case::<Complex<f64>>(&gpu);
    let non_square = super::non_square();
    let reason = invalid_reason("non-square", DeviceBlockJacobi::new(&gpu, &non_square));
    assert!(reason.contains("square"), "{reason}");
    let big = random_bcsr::<f64>(3, 9, BlockLayout::RowMajor, 1);
    let reason = invalid_reason("b = 9", DeviceBlockJacobi::new(&gpu, &big));
    assert!(reason.contains("b = 9"), "{reason}");
    // Wrong lengths: an error, y unchanged.
    let a = random_bcsr::<f64>(10, 2, BlockLayout::RowMajor, 2);
    let m = DeviceBlockJacobi::new(&gpu, &a).expect("block");
    let dx = gpu.upload(&vec![1.0f64; a.n_rows() + 1]).expect("upload");
    let y0 = vec![3.0f64; a.n_rows()];
    let mut dy = gpu.upload(&y0).expect("upload");
    {
        let xv = dx.view(..).expect("view");
        let mut yv = dy.view_mut(..).expect("view");
        assert!(matches!(
            m.apply(&xv, &mut yv),
            Err(Error::DimensionMismatch { what: "x", .. })
        ));
    }
    assert_eq!(dy.download().expect("download"), y0);
    assert_eq!(dy.len(), a.n_rows());
}
