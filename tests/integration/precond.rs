//! Point- and block-Jacobi preconditioners on the CPU: inverse blocks against the
//! original blocks, the rules for empty rows, singular blocks and non-square matrices,
//! point Jacobi against dividing by the diagonal, real preconditioners on complex vectors.

use crate::common;

use common::*;
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::krylov::{BlockJacobi, LinOp};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Bcsr, BcsrParts, BlockLayout, Index, MatrixScalar};
use ferrocuda::{Complex, Error, RealScalar};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How a diagonal block of [`random_bcsr`] is made.
#[derive(Clone, Copy, PartialEq)]
enum Diag {
    /// Strictly diagonally dominant by a margin of 1 (well conditioned).
    Dominant,
    /// Random parts in [-1, 1] only (general, needs pivoting).
    Random,
}

/// A random square BCSR matrix with `nbr` block rows of `b x b` blocks: every block row
/// `i` with `i % 5 == 3` stores nothing (a ghost row); the others store their diagonal
/// block and up to two more. Built row-major, then converted to `layout`.
fn random_bcsr<A: Element>(
    nbr: usize,
    b: usize,
    layout: BlockLayout,
    diag: Diag,
    seed: u64,
) -> Bcsr<A> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut row_ptr, mut col_idx, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..nbr {
        if i % 5 != 3 {
            let mut cols = vec![i];
            for _ in 0..2 {
                let c = rng.random_range(0..nbr);
                if !cols.contains(&c) {
                    cols.push(c);
                }
            }
            cols.sort_unstable();
            for &c in &cols {
                col_idx.push(c as Index);
                let start = values.len();
                for _ in 0..b * b {
                    values.push(random_scalar_from::<A>(&mut rng));
                }
                if c == i && diag == Diag::Dominant {
                    for r in 0..b {
                        let s: f64 = (0..b).map(|c| abs(values[start + r * b + c])).sum();
                        values[start + r * b + r] =
                            A::from_real(<A::Real as RealScalar>::from_f64(1.0 + s));
                    }
                }
            }
        }
        row_ptr.push(col_idx.len());
    }
    common::bcsr(b, (nbr, nbr), row_ptr, col_idx, values).with_layout(layout)
}

/// The diagonal block of block row `i` of `a`, row-major, widened (`None`: not stored).
fn diagonal_block<A: Element>(a: &Bcsr<A>, i: usize) -> Option<Vec<Complex<f64>>> {
    let b = a.b();
    let k = (a.row_ptr()[i]..a.row_ptr()[i + 1]).find(|&k| a.col_idx()[k] as usize == i)?;
    let blk = a.block(k);
    Some(
        (0..b * b)
            .map(|e| bref::widen(blk[a.layout().offset(b, e / b, e % b)]))
            .collect(),
    )
}

/// `max |(p q)_rc - I_rc|` for row-major `b x b` blocks.
fn distance_from_identity(b: usize, p: &[Complex<f64>], q: &[Complex<f64>]) -> f64 {
    let mut worst = 0.0f64;
    for r in 0..b {
        for c in 0..b {
            let s: Complex<f64> = (0..b).map(|k| p[r * b + k] * q[k * b + c]).sum();
            let want = if r == c { 1.0 } else { 0.0 };
            worst = worst.max((s - want).norm());
        }
    }
    worst
}

/// Checks every inverse block of `m` against `a`: `D^-1 D` and `D D^-1` within `tol` of
/// the identity (scaled by `|D| |D^-1|`), exact identity for empty block rows.
fn check_inverse<A: Element>(what: &str, a: &Bcsr<A>, m: &BlockJacobi<A>) {
    let b = a.b();
    assert_eq!((m.b(), m.n_block_rows()), (b, a.n_block_rows()), "{what}");
    assert_eq!(m.inverse_blocks().len(), a.n_block_rows() * b * b, "{what}");
    let eps = bref::eps::<A>();
    for (i, inv) in m.inverse_blocks().chunks_exact(b * b).enumerate() {
        let inv: Vec<Complex<f64>> = inv.iter().map(|&v| bref::widen(v)).collect();
        if a.row_ptr()[i] == a.row_ptr()[i + 1] {
            let id: Vec<Complex<f64>> = (0..b * b)
                .map(|e| Complex::new(if e / b == e % b { 1.0 } else { 0.0 }, 0.0))
                .collect();
            assert_eq!(inv, id, "{what}: empty block row {i} must get the identity");
            continue;
        }
        let d = diagonal_block(a, i).expect("diagonal block");
        let norm = |v: &[Complex<f64>]| v.iter().map(|z| z.norm()).fold(0.0, f64::max);
        let tol = 16.0 * (b * b) as f64 * eps * norm(&d) * norm(&inv) + 1e-300;
        for (side, err) in [
            ("inv D", distance_from_identity(b, &inv, &d)),
            ("D inv", distance_from_identity(b, &d, &inv)),
        ] {
            assert!(
                err <= tol,
                "{what}: block row {i}: {side} is {err:e} from the identity (bound {tol:e})"
            );
        }
    }
}

fn inverse_cases<A: Element>() {
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        for b in [1, 2, 3, 5, 7, 8] {
            for nbr in [1, 4, 33] {
                let what = format!("{} b={b} {nbr} block rows {layout:?}", tname::<A>());
                let seed = seed_for::<A>(nbr * 10 + b, layout as u64);
                let a = random_bcsr::<A>(nbr, b, layout, Diag::Dominant, seed);
                check_inverse(&what, &a, &BlockJacobi::new(&a).expect(&what));
                // General blocks (pivoting needed). Random blocks are invertible with
                // probability 1; their condition varies, hence the scaled bound.
                let g = random_bcsr::<A>(nbr, b, layout, Diag::Random, seed + 1);
                let what = format!("{what} (general blocks)");
                check_inverse(&what, &g, &BlockJacobi::new(&g).expect(&what));
            }
        }
    }
}

#[test]
fn inverse_blocks_times_blocks_is_the_identity() {
    inverse_cases::<f32>();
    inverse_cases::<f64>();
    inverse_cases::<Complex<f32>>();
    inverse_cases::<Complex<f64>>();
}

fn trace_case<A: Element>() {
    let spec = TraceSpec::new(3, 4, 3, 2).seed(11);
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        let a = generate::trace_like::<A>(&spec)
            .expect("generate")
            .with_layout(layout);
        let what = format!("trace-like {} {layout:?}", tname::<A>());
        let m = BlockJacobi::new(&a).expect(&what);
        check_inverse(&what, &a, &m);
        let ghosts = (0..a.n_block_rows())
            .filter(|&i| spec.is_ghost_block_row(i))
            .count();
        assert!(ghosts > 0, "the TRACE-like case has ghost rows");
        assert_eq!(ghosts, a.empty_block_rows());
    }
}

#[test]
fn trace_like_blocks_are_inverted_and_ghost_rows_get_the_identity() {
    trace_case::<f32>();
    trace_case::<f64>();
    trace_case::<Complex<f32>>();
    trace_case::<Complex<f64>>();
}

/// `M^-1 (D x)` is `x` again (within rounding), and empty block rows pass `x` through.
fn apply_case<A: Element + MatrixScalar<V>, V: Element>() {
    let b = 5;
    let a = random_bcsr::<A>(23, b, BlockLayout::RowMajor, Diag::Dominant, 77);
    let m = BlockJacobi::new(&a).expect("block Jacobi");
    let x = random_vec::<V>(a.n_rows(), 78);
    // z = D x, in f64, rounded to V (identity on empty block rows).
    let mut z = x.clone();
    for i in 0..a.n_block_rows() {
        if let Some(d) = diagonal_block(&a, i) {
            for r in 0..b {
                let s: Complex<f64> = (0..b)
                    .map(|c| d[r * b + c] * bref::widen(x[i * b + c]))
                    .sum();
                z[i * b + r] = V::from_parts(
                    <V::Real as RealScalar>::from_f64(s.re),
                    <V::Real as RealScalar>::from_f64(s.im),
                );
            }
        }
    }
    let mut y = poison::<V>(a.n_rows());
    m.apply(&z, &mut y).expect("apply");
    let what = format!("apply {} x {}", tname::<A>(), tname::<V>());
    let tol = 200.0 * bref::eps::<V>();
    for (i, (&yi, &xi)) in y.iter().zip(&x).enumerate() {
        if a.row_ptr()[i / b] == a.row_ptr()[i / b + 1] {
            assert!(same_bits(yi, z[i]), "{what}: empty block row, row {i}");
        } else {
            let err = (bref::widen(yi) - bref::widen(xi)).norm();
            assert!(
                err <= tol,
                "{what}: row {i}: {yi:?} vs {xi:?} (error {err:e})"
            );
        }
    }
}

#[test]
fn apply_undoes_the_block_diagonal() {
    each_scalar_pair!(apply_case());
}

/// A real preconditioner on a complex vector is the real one on the real and imaginary
/// parts, bit for bit (one fused multiply-add per part and entry, same order).
fn real_on_complex<R: Element + RealScalar + MatrixScalar<Complex<R>> + MatrixScalar<R>>()
where
    Complex<R>: Element,
{
    let a = random_bcsr::<R>(41, 3, BlockLayout::ColMajor, Diag::Random, 5);
    for m in [
        BlockJacobi::new(&a).expect("block"),
        BlockJacobi::point(&a).expect("point"),
    ] {
        let x = random_vec::<Complex<R>>(a.n_rows(), 6);
        let (re, im): (Vec<R>, Vec<R>) = x.iter().map(|z| (z.re, z.im)).unzip();
        let mut y = poison::<Complex<R>>(a.n_rows());
        let (mut yr, mut yi) = (poison::<R>(a.n_rows()), poison::<R>(a.n_rows()));
        m.apply(&x, &mut y).expect("complex");
        m.apply(&re, &mut yr).expect("re");
        m.apply(&im, &mut yi).expect("im");
        let want: Vec<Complex<R>> = yr
            .iter()
            .zip(&yi)
            .map(|(&r, &i)| Complex::new(r, i))
            .collect();
        assert_bits_eq(&format!("{} x complex", tname::<R>()), &y, &want);
    }
}

#[test]
fn real_preconditioner_on_complex_vectors() {
    real_on_complex::<f32>();
    real_on_complex::<f64>();
}

fn point_case<A: Element + MatrixScalar<A>>(layout: BlockLayout) {
    let b = 5;
    let a = random_bcsr::<A>(30, b, layout, Diag::Dominant, 9);
    let m = BlockJacobi::point(&a).expect("point Jacobi");
    assert_eq!((m.b(), m.n_block_rows()), (1, a.n_rows()));
    let x = random_vec::<A>(a.n_rows(), 10);
    let mut y = poison::<A>(a.n_rows());
    m.apply(&x, &mut y).expect("apply");
    let what = format!("point {} {layout:?}", tname::<A>());
    // 1/d (one rounding; Smith's algorithm, a few for complex) then one product, against
    // the single rounding of x / d.
    let tol = 4.0 * elementwise_factor::<A>() * bref::eps::<A>();
    for i in 0..a.n_rows() {
        let Some(d) = diagonal_block(&a, i / b) else {
            assert!(
                same_bits(y[i], x[i]),
                "{what}: ghost row {i} must pass x through"
            );
            assert!(
                same_bits(m.inverse_blocks()[i], A::ONE),
                "{what}: ghost row {i}"
            );
            continue;
        };
        let want = bref::widen(x[i]) / d[(i % b) * b + i % b];
        let err = (bref::widen(y[i]) - want).norm();
        assert!(
            err <= tol * want.norm(),
            "{what}: row {i}: {:?} vs x/d = {want} (error {err:e})",
            y[i]
        );
    }
}

#[test]
fn point_jacobi_divides_by_the_diagonal() {
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        point_case::<f32>(layout);
        point_case::<f64>(layout);
        point_case::<Complex<f32>>(layout);
        point_case::<Complex<f64>>(layout);
    }
    // b = 1: the scalar case, every inverse exactly 1/d for powers of two.
    let a = common::bcsr(
        1,
        (3, 3),
        vec![0, 2, 2, 3],
        vec![0, 2, 2],
        vec![4.0f64, 7.0, -0.5],
    );
    let m = BlockJacobi::point(&a).expect("point");
    assert_eq!(m.inverse_blocks(), [0.25, 1.0, -2.0]);
    assert_eq!(BlockJacobi::new(&a).expect("block b=1"), m);
}

/// The reason of an `InvalidArgument`, or a panic naming what came instead.
fn invalid_reason<T: std::fmt::Debug>(what: &str, r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidArgument { reason, .. }) => reason,
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

/// `a` with the diagonal block of block row `i` replaced by `block` (row-major).
fn with_diagonal<A: Element>(a: &Bcsr<A>, i: usize, block: &[A]) -> Bcsr<A> {
    let b = a.b();
    let mut p = a.clone().into_parts();
    let k = (p.row_ptr[i]..p.row_ptr[i + 1])
        .find(|&k| p.col_idx[k] as usize == i)
        .expect("diagonal block stored");
    for r in 0..b {
        for c in 0..b {
            p.values[k * b * b + p.layout.offset(b, r, c)] = block[r * b + c];
        }
    }
    Bcsr::from_parts(p).expect("valid")
}

fn singular_case<A: Element>() {
    let b = 3;
    let t = tname::<A>();
    let a = random_bcsr::<A>(12, b, BlockLayout::ColMajor, Diag::Dominant, 21);
    let one = A::ONE;
    let two = one + one;
    let z = A::ZERO;
    // Rank 2: the third row is the sum of the first two (exact in every type).
    let rank2 = [one, two, z, z, one, one, one, one + two, one];
    let nan = A::from_real(<A::Real as RealScalar>::from_f64(f64::NAN));
    // Two bad block rows (4 and 9); the error names the first.
    for (name, bad) in [
        ("zero block", [z; 9]),
        ("rank-deficient block", rank2),
        ("NaN entry", [one, z, z, z, nan, z, z, z, one]),
    ] {
        let m = with_diagonal(&with_diagonal(&a, 9, &[z; 9]), 4, &bad);
        let reason = invalid_reason(&format!("{t} {name}"), BlockJacobi::new(&m));
        assert!(
            reason.contains("block row 4 ") && reason.contains("singular"),
            "{t} {name}: {reason}"
        );
    }
    // A non-empty block row without a stored diagonal block: its diagonal block is zero.
    let mut p = a.clone().into_parts();
    let i = 6;
    let k = (p.row_ptr[i]..p.row_ptr[i + 1])
        .find(|&k| p.col_idx[k] as usize == i)
        .expect("diagonal");
    let other = if i + 1 < 12 { i + 1 } else { i - 1 };
    let row = p.row_ptr[i]..p.row_ptr[i + 1];
    if p.col_idx[row].contains(&(other as Index)) {
        // Drop the diagonal block: remove its column and values.
        p.col_idx.remove(k);
        p.values.drain(k * b * b..(k + 1) * b * b);
        for rp in &mut p.row_ptr[i + 1..] {
            *rp -= 1;
        }
    } else {
        // Move the diagonal block to another block column.
        p.col_idx[k] = other as Index;
        let (s, e) = (p.row_ptr[i], p.row_ptr[i + 1]);
        let mut blocks: Vec<(Index, Vec<A>)> = (s..e)
            .map(|k| (p.col_idx[k], p.values[k * b * b..(k + 1) * b * b].to_vec()))
            .collect();
        blocks.sort_by_key(|(c, _)| *c);
        for (j, (c, v)) in blocks.into_iter().enumerate() {
            p.col_idx[s + j] = c;
            p.values[(s + j) * b * b..(s + j + 1) * b * b].copy_from_slice(&v);
        }
    }
    let m = Bcsr::from_parts(p).expect("valid");
    let reason = invalid_reason(&format!("{t} no diagonal block"), BlockJacobi::new(&m));
    assert!(
        reason.contains("block row 6 ") && reason.contains("no diagonal block"),
        "{t}: {reason}"
    );
    // Point Jacobi names the scalar row: block row 6 has no diagonal block.
    let reason = invalid_reason(&format!("{t} point, no diagonal"), BlockJacobi::point(&m));
    assert!(reason.contains("row 18 "), "{t}: {reason}");
    // A zero diagonal entry in row 2 of block row 4 (scalar row 14).
    let mut d = diagonal_block(&a, 4).expect("diag");
    d[2 * b + 2] = Complex::new(0.0, 0.0);
    let d: Vec<A> = d
        .iter()
        .map(|v| {
            A::from_parts(
                <A::Real as RealScalar>::from_f64(v.re),
                <A::Real as RealScalar>::from_f64(v.im),
            )
        })
        .collect();
    let m = with_diagonal(&a, 4, &d);
    let reason = invalid_reason(&format!("{t} point, zero entry"), BlockJacobi::point(&m));
    assert!(
        reason.contains("row 14 ") && reason.contains("zero diagonal"),
        "{t}: {reason}"
    );
    // The block itself stays invertible (diagonally dominant elsewhere, pivoting).
    BlockJacobi::new(&m).expect("block Jacobi with one zero diagonal entry");
}

#[test]
fn singular_diagonal_blocks_are_errors_naming_the_first_row() {
    singular_case::<f32>();
    singular_case::<f64>();
    singular_case::<Complex<f32>>();
    singular_case::<Complex<f64>>();
}

/// Two block rows and three block columns of 2 x 2: no block diagonal to invert.
fn non_square() -> Bcsr<f64> {
    common::bcsr(
        2,
        (2, 3),
        vec![0, 1, 1],
        vec![0],
        vec![1.0f64, 0.0, 0.0, 1.0],
    )
}

#[test]
fn non_square_and_oversized_blocks_are_errors() {
    let a = non_square();
    for r in [BlockJacobi::new(&a), BlockJacobi::point(&a)] {
        let reason = invalid_reason("non-square", r);
        assert!(reason.contains("square"), "{reason}");
    }
    let big = random_bcsr::<f64>(4, 9, BlockLayout::RowMajor, Diag::Dominant, 3);
    let reason = invalid_reason("b = 9", BlockJacobi::new(&big));
    assert!(reason.contains("b = 9"), "{reason}");
    // Point Jacobi has no block-size limit.
    let m = BlockJacobi::point(&big).expect("point Jacobi, b = 9");
    assert_eq!(m.n_block_rows(), big.n_rows());
}

#[test]
fn empty_matrix_and_wrong_lengths() {
    let a = Bcsr::<f64>::from_parts(BcsrParts {
        b: 4,
        layout: BlockLayout::RowMajor,
        n_block_rows: 0,
        n_block_cols: 0,
        row_ptr: vec![0],
        col_idx: vec![],
        values: vec![],
    })
    .expect("valid");
    let m = BlockJacobi::new(&a).expect("empty");
    let mut y: [f64; 0] = [];
    m.apply(&[], &mut y).expect("empty apply");
    let a = random_bcsr::<f64>(6, 2, BlockLayout::RowMajor, Diag::Dominant, 1);
    let m = BlockJacobi::new(&a).expect("block");
    let mut y = vec![3.0; 12];
    assert!(matches!(
        m.apply(&[0.0; 11], &mut y),
        Err(Error::DimensionMismatch { what: "x", .. })
    ));
    assert!(matches!(
        m.apply(&[0.0; 12], &mut y[..10]),
        Err(Error::DimensionMismatch { what: "y", .. })
    ));
    assert_eq!(y, [3.0; 12], "y changed by a failed call");
}

/// Same input, same bits, whatever the number of threads.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let a = random_bcsr::<Complex<f64>>(700, 5, BlockLayout::RowMajor, Diag::Random, 4);
    let x = random_vec::<Complex<f64>>(a.n_rows(), 8);
    let run = || {
        let m = BlockJacobi::new(&a).expect("block");
        let mut y = poison::<Complex<f64>>(a.n_rows());
        m.apply(&x, &mut y).expect("apply");
        (m.inverse_blocks().to_vec(), y)
    };
    let (inv, y) = run();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let (inv1, y1) = pool.install(run);
    assert_bits_eq("inverse, 1 thread", &inv1, &inv);
    assert_bits_eq("apply, 1 thread", &y1, &y);
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
/// ILU(0) on the GPU against the CPU oracle.
mod ilu_gpu;
