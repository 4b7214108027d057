//! The thesis's SpMV variants (`sparse::gpu_thesis`, Kautz 2011): every variant and scalar pair against
//! the serial f64 reference (the reductions change the summation order, so within a
//! rounding bound; the BELL variants keep the CPU's order and are checked bit for bit),
//! their errors, and the host-only preparation (maps, windows, Table 6.10, byte counts),
//! which runs without a GPU.

use crate::common::*;
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::gpu::Gpu;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{Bcsr, BlockLayout, Csr, Index, MatrixScalar, SparseError, cpu, reference};
use ferrocuda::{Complex, Error};
use ferrocuda_kernels::repro::spmv::SpmvThesisKernels;
use ferrocuda_repro::sparse::gpu_thesis::{
    ThesisKernel, ThesisMatrix, ThesisOptions, ThesisPlan, Traffic, Window, ell_row_index,
    ghost_block_rows, shared_windows, spmv_thesis, spmv_thesis_serial, table_6_10,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------
// Fixtures

/// A random `nbr x nbc` block matrix with block size `b`: block row 0 and about a third of
/// the others empty (ghost rows), the rest with 1 to 4 blocks at random block columns;
/// about 10% of the values exactly zero (ELL drops them).
fn random_ghost_bcsr<A: Element>(nbr: usize, nbc: usize, b: usize, seed: u64) -> Bcsr<A> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut row_ptr = vec![0];
    let mut col_idx: Vec<Index> = Vec::new();
    let mut values = Vec::new();
    for bi in 0..nbr {
        let ghost = bi == 0 || (bi > 1 && rng.random_bool(0.35));
        if !ghost {
            let mut cols: Vec<Index> = (0..rng.random_range(1..=4usize.min(nbc)))
                .map(|_| rng.random_range(0..nbc) as Index)
                .collect();
            cols.sort_unstable();
            cols.dedup();
            for _ in 0..cols.len() * b * b {
                values.push(if rng.random_bool(0.1) {
                    A::ZERO
                } else {
                    random_scalar_from::<A>(&mut rng)
                });
            }
            col_idx.extend(cols);
        }
        row_ptr.push(col_idx.len());
    }
    crate::common::bcsr(b, (nbr, nbc), row_ptr, col_idx, values)
}

/// Options that suit block size `b`: BELL V3's work group a multiple of `b` and of 32;
/// ELL subsections: the thesis's 20 for `b = 5`, a short 4 otherwise (several per row).
fn opts_for(b: usize) -> ThesisOptions {
    if b == 5 {
        ThesisOptions::default().work_group(160)
    } else {
        ThesisOptions::default().work_group(32 * b).subsection(4)
    }
}

/// The test matrices of every pair: random with ghosts at `b = 5` and `b = 3`, and a
/// generated TRACE-like case.
fn matrices<A: Element>() -> Vec<(String, Bcsr<A>)> {
    let spec = TraceSpec::new(4, 6, 5, 2).seed(11);
    vec![
        ("random b=5".into(), random_ghost_bcsr::<A>(40, 37, 5, 1)),
        ("random b=3".into(), random_ghost_bcsr::<A>(67, 50, 3, 2)),
        (
            format!("trace-like {spec:?}"),
            generate::trace_like::<A>(&spec).expect("generate"),
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// GPU: results

/// One variant's product `run(alpha, x, beta, y_start) -> y` on one matrix against the
/// f64 reference, for `beta = 0` with `y` poisoned (every row must be written, `y` not
/// read) and a random `beta`. Each row may differ by `(len + 2)` roundings of its magnitude
/// (any summation order of `len` products); the BELL variants must give the CPU path's
/// bits on the stored rows.
fn check_product<A, V>(
    case: &str,
    a: &Bcsr<A>,
    kernel: ThesisKernel,
    seed: u64,
    mut run: impl FnMut(V, &[V], V, &[V]) -> Vec<V>,
) where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    let csr = a.to_csr();
    let x = random_vec::<V>(a.n_cols(), seed);
    let y0 = random_vec::<V>(a.n_rows(), seed + 1);
    let alpha = random_scalar::<V>(seed + 2);
    let factor = if V::IS_COMPLEX || A::IS_COMPLEX {
        4.0
    } else {
        2.0
    } * bref::eps::<V>();
    let stored: Vec<bool> = (0..a.n_rows())
        .map(|i| a.row_ptr()[i / a.b() + 1] > a.row_ptr()[i / a.b()])
        .collect();
    for beta in [V::ZERO, random_scalar::<V>(seed + 3)] {
        let start = if beta == V::ZERO {
            poison::<V>(a.n_rows())
        } else {
            y0.clone()
        };
        let got = run(alpha, &x, beta, &start);
        let want = reference::spmv(alpha, &csr, &x, beta, &start);
        // `y0` for the magnitude: 0 * NaN would poison it where beta is 0.
        let scale = reference::spmv_magnitude(alpha, &csr, &x, beta, &y0);
        for (i, ((&g, w), &s)) in got.iter().zip(&want).zip(&scale).enumerate() {
            let g = bref::widen(g);
            let tol = factor * (csr.row(i).0.len() + 2) as f64 * s;
            let (dre, dim) = ((g.re - w.re).abs(), (g.im - w.im).abs());
            assert!(
                dre <= tol && dim <= tol,
                "{case} (beta {beta:?}): row {i} is {g}, the reference {w} (error {dre:e}, {dim:e} > {tol:e})"
            );
        }
        if matches!(
            kernel,
            ThesisKernel::Bell | ThesisKernel::BellV2 | ThesisKernel::BellV3
        ) {
            let mut cpu_y = start.clone();
            cpu::spmv_bcsr(alpha, a, &x, beta, &mut cpu_y).expect("cpu spmv");
            for i in (0..a.n_rows()).filter(|&i| stored[i]) {
                assert!(
                    same_bits(got[i], cpu_y[i]),
                    "{case} (beta {beta:?}): row {i} is {:?}, the CPU gives {:?} (must be the same bits)",
                    got[i],
                    cpu_y[i]
                );
            }
        }
    }
}

/// One variant on the GPU.
fn check_variant<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, kernel: ThesisKernel, seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvThesisKernels<V>,
    V: Element,
{
    let case = format!("{kernel} {} x {} {what}", tname::<A>(), tname::<V>());
    let mut dm = ThesisMatrix::upload_with(gpu, a, kernel, &opts_for(a.b()))
        .unwrap_or_else(|e| panic!("{case}: upload: {e}"));
    assert_eq!((dm.n_rows(), dm.n_cols()), (a.n_rows(), a.n_cols()));
    check_product::<A, V>(&case, a, kernel, seed, |alpha, x, beta, start| {
        let dx = gpu.upload(x).expect("upload x");
        let mut dy = gpu.upload(start).expect("upload y");
        spmv_thesis(alpha, &mut dm, &dx, beta, &mut dy)
            .unwrap_or_else(|e| panic!("{case}: spmv: {e}"));
        dy.download().expect("download y")
    });
}

/// One variant's serial twin (the kernels' per-thread functions on the CPU).
fn check_serial<A, V>(what: &str, a: &Bcsr<A>, kernel: ThesisKernel, seed: u64)
where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    let case = format!("serial {kernel} {} x {} {what}", tname::<A>(), tname::<V>());
    let plan = ThesisPlan::new(a, kernel, &opts_for(a.b()))
        .unwrap_or_else(|e| panic!("{case}: plan: {e}"));
    check_product::<A, V>(&case, a, kernel, seed, |alpha, x, beta, start| {
        let mut y = start.to_vec();
        spmv_thesis_serial(alpha, &plan, x, beta, &mut y).unwrap_or_else(|e| panic!("{case}: {e}"));
        y
    });
}

fn pair<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + SpmvThesisKernels<V>,
    V: Element,
{
    for (k, (what, a)) in matrices::<A>().iter().enumerate() {
        for kernel in ThesisKernel::ALL {
            check_variant::<A, V>(gpu, what, a, kernel, 100 + k as u64);
        }
    }
}

fn serial_pair<A, V>()
where
    A: Element + MatrixScalar<V>,
    V: Element,
{
    for (k, (what, a)) in matrices::<A>().iter().enumerate() {
        for kernel in ThesisKernel::ALL {
            check_serial::<A, V>(what, a, kernel, 100 + k as u64);
        }
    }
}

/// The kernels' per-thread functions, run serially on the CPU: their indexing (maps,
/// partial sums, subsections, windows) gives the reference's result for every variant
/// and pair. Runs without a GPU.
#[test]
fn thesis_serial_twins_match_reference() {
    each_scalar_pair!(serial_pair());
}

#[test]
fn thesis_spmv_gpu_matches_reference() {
    let Some(gpu) = gpu_or_skip("thesis_spmv_gpu_matches_reference") else {
        return;
    };
    each_scalar_pair!(pair(&gpu));
}

/// BELL V3 with an `x` window above the 48 KiB every kernel may use without opting in
/// (64,000 bytes of f64): the launch must raise the kernel's limit.
#[test]
fn thesis_bell_v3_opts_in_to_more_shared_memory() {
    let Some(gpu) = gpu_or_skip("thesis_bell_v3_opts_in_to_more_shared_memory") else {
        return;
    };
    let (nbr, nbc, b) = (4, 1600, 5);
    let mut row_ptr = vec![0];
    let mut col_idx: Vec<Index> = Vec::new();
    for bi in 0..nbr {
        col_idx.extend([bi as Index, (nbc - 1 - bi) as Index]);
        row_ptr.push(col_idx.len());
    }
    let values = random_vec::<f64>(col_idx.len() * b * b, 3);
    let a = crate::common::bcsr(b, (nbr, nbc), row_ptr, col_idx, values);
    let plan = ThesisPlan::new(&a, ThesisKernel::BellV3, &ThesisOptions::default()).expect("plan");
    assert_eq!(plan.max_window(), nbc * b, "one window spans all columns");
    let dm = ThesisMatrix::from_plan(&gpu, &plan).expect("upload");
    assert_eq!(dm.shared_bytes::<f64>(), nbc * b * 8);
    check_variant::<f64, f64>(&gpu, "64 KB window", &a, ThesisKernel::BellV3, 7);
}

// ---------------------------------------------------------------------------------------
// GPU: errors

/// A matrix whose one block row couples the first and the last of `nbc` block columns.
fn wide_row(nbc: usize) -> Bcsr<f32> {
    crate::common::bcsr(
        5,
        (1, nbc),
        vec![0, 2],
        vec![0, (nbc - 1) as Index],
        vec![1.0; 50],
    )
}

/// The thesis's failure (Table 6.10): a window larger than a block's shared memory is an
/// error at upload, naming the bytes, not a crash.
#[test]
fn thesis_bell_v3_rejects_a_window_beyond_shared_memory() {
    let Some(gpu) = gpu_or_skip("thesis_bell_v3_rejects_a_window_beyond_shared_memory") else {
        return;
    };
    // 100,000 f32 values = 400,000 bytes: more than any GPU's shared memory per block.
    let a = wide_row(20_000);
    match ThesisMatrix::upload(&gpu, &a, ThesisKernel::BellV3) {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(
                reason.contains("shared memory") && reason.contains("400000 bytes"),
                "unhelpful message: {reason}"
            );
        }
        Err(e) => panic!("expected InvalidArgument for the window, got {e}"),
        Ok(_) => panic!("a 400 KB window was accepted"),
    }
    // The same matrix works with the other variants.
    let mut dm = ThesisMatrix::upload(&gpu, &a, ThesisKernel::Bell).expect("BELL upload");
    let x = gpu.upload(&vec![1.0f32; a.n_cols()]).expect("upload");
    let mut y = gpu.upload(&poison::<f32>(a.n_rows())).expect("upload");
    spmv_thesis(1.0, &mut dm, &x, 0.0, &mut y).expect("BELL spmv");
    assert_eq!(y.download().expect("download"), vec![10.0f32; 5]);
}

#[test]
fn thesis_spmv_gpu_rejects_wrong_lengths_and_leaves_y_unchanged() {
    let Some(gpu) = gpu_or_skip("thesis_spmv_gpu_rejects_wrong_lengths_and_leaves_y_unchanged")
    else {
        return;
    };
    let a = random_ghost_bcsr::<f64>(6, 4, 5, 9);
    let x = gpu.upload(&vec![1.0f64; a.n_cols()]).expect("upload");
    let x_bad = gpu.upload(&vec![1.0f64; a.n_cols() + 1]).expect("upload");
    let y0 = vec![3.0f64; a.n_rows()];
    for kernel in ThesisKernel::ALL {
        let mut dm = ThesisMatrix::upload(&gpu, &a, kernel).expect("upload");
        let mut y = gpu.upload(&y0).expect("upload");
        match spmv_thesis(1.0, &mut dm, &x_bad, 0.0, &mut y) {
            Err(Error::DimensionMismatch {
                what: "x",
                expected,
                found,
                ..
            }) => assert_eq!((expected, found), (a.n_cols(), a.n_cols() + 1), "{kernel}"),
            other => panic!("{kernel}: expected a dimension mismatch for x, got {other:?}"),
        }
        let mut y_bad = gpu.upload(&vec![0.0f64; a.n_rows() - 1]).expect("upload");
        assert!(
            matches!(
                spmv_thesis(1.0, &mut dm, &x, 0.0, &mut y_bad),
                Err(Error::DimensionMismatch { what: "y", .. })
            ),
            "{kernel}: a short y must be rejected"
        );
        assert_eq!(y.download().expect("download"), y0, "{kernel}: y changed");
    }
}

/// The reduction variants share the matrix's temp buffer: a product on another stream
/// would race with one on the matrix's stream, so it is refused.
#[test]
fn thesis_reductions_refuse_another_stream() {
    let Some(gpu) = gpu_or_skip("thesis_reductions_refuse_another_stream") else {
        return;
    };
    let other = gpu.new_stream().expect("stream");
    let a = random_ghost_bcsr::<f32>(6, 4, 5, 10);
    for kernel in ThesisKernel::ALL {
        let mut dm = ThesisMatrix::upload(&gpu, &a, kernel).expect("upload");
        gpu.synchronize()
            .expect("sync the upload before another stream reads it");
        let x = other.upload(&vec![1.0f32; a.n_cols()]).expect("upload");
        let mut y = other.upload(&vec![0.0f32; a.n_rows()]).expect("upload");
        let r = spmv_thesis(1.0, &mut dm, &x, 0.0, &mut y);
        if kernel.has_reduction() {
            assert!(
                matches!(r, Err(Error::InvalidArgument { .. })),
                "{kernel}: {r:?}"
            );
        } else {
            r.unwrap_or_else(|e| panic!("{kernel}: {e}"));
            other.synchronize().expect("sync");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Host only: maps, windows, Table 6.10, byte counts

#[test]
fn ghost_block_rows_are_the_complement_of_the_map() {
    assert_eq!(ghost_block_rows(&[1, 2, 5], 7).unwrap(), vec![0, 3, 4, 6]);
    assert_eq!(ghost_block_rows(&[], 3).unwrap(), vec![0, 1, 2]);
    assert_eq!(
        ghost_block_rows(&[0, 1, 2], 3).unwrap(),
        Vec::<Index>::new()
    );
    assert_eq!(ell_row_index(&[1, 3], 2).expect("fits"), vec![2, 3, 6, 7]);
}

/// A 3 x 2 x 1 grid block (x fastest): 7 x 6 x 5 ghost-inclusive index space, cells at
/// block rows 100, 101, 102 (theta 0) and 107, 108, 109 (theta 1). Cell 100 couples to
/// 101, 102 (x) and 107 (theta): block columns 100..=107, 8 blocks = 40 values; and so on.
#[test]
fn shared_windows_of_a_tiny_trace_case_by_hand() {
    let spec = TraceSpec::new(3, 2, 1, 1);
    let a = generate::trace_like::<f32>(&spec).expect("generate");
    let (c, map) = a.compact_empty_block_rows();
    assert_eq!(map, vec![100, 101, 102, 107, 108, 109]);
    let w = |lo, len| Window { lo, len };
    assert_eq!(
        shared_windows(&c, 5).expect("windows"),
        vec![
            w(500, 40),
            w(500, 45),
            w(500, 50),
            w(500, 50),
            w(505, 45),
            w(510, 40)
        ]
    );
    assert_eq!(
        shared_windows(&c, 10).expect("windows"),
        vec![w(500, 45), w(500, 50), w(505, 45)]
    );
    assert_eq!(shared_windows(&c, 30).expect("windows"), vec![w(500, 50)]);
    for bad in [0, 7] {
        assert!(
            matches!(
                shared_windows(&c, bad),
                Err(SparseError::InvalidArgument { .. })
            ),
            "{bad} rows per CUDA block"
        );
    }
}

/// Table 6.10 with our ordering (x fastest) for one grid block of case 1, and its growth
/// with the work group.
#[test]
fn table_6_10_for_our_ordering() {
    let sizes = [80, 160, 320, 480];
    let ours = table_6_10(&TraceSpec::new(10, 40, 20, 1), &sizes).expect("table");
    assert_eq!(ours, vec![12_440, 12_820, 13_060, 13_280]);
    let small = table_6_10(&TraceSpec::new(4, 6, 5, 1), &[5, 10, 20, 40, 80, 160]).expect("table");
    assert!(
        small.windows(2).all(|w| w[0] <= w[1]),
        "windows shrink with a larger work group: {small:?}"
    );
}

/// The thesis's Table 6.10 (12,415 / 13,375 / 13,555 / 13,735 values for work groups of
/// 80 / 160 / 320 / 480, case 1) comes out of the same window computation on a matrix
/// whose cells are ordered theta fastest, then x, then r (digest §1.5), counted the
/// thesis's way, one block less per window.
#[test]
fn windows_reproduce_table_6_10_with_the_thesis_ordering() {
    let (nx, nt, nr, b) = (10usize, 40usize, 20usize, 5usize);
    let (px, pt, pr) = (nx + 4, nt + 4, nr + 4);
    let idx = |x: usize, t: usize, r: usize| ((r + 2) * px + x + 2) * pt + t + 2;
    let nbr = px * pt * pr;
    let mut rows: Vec<Vec<Index>> = vec![Vec::new(); nbr];
    for r in 0..nr {
        for x in 0..nx {
            for t in 0..nt {
                let cols = &mut rows[idx(x, t, r)];
                cols.push(idx(x, t, r) as Index);
                for d in [-2i64, -1, 1, 2] {
                    let inside =
                        |v: usize, n: usize| v as i64 + d >= 0 && ((v as i64 + d) as usize) < n;
                    let mv = |v: usize| (v as i64 + d) as usize;
                    if inside(x, nx) {
                        cols.push(idx(mv(x), t, r) as Index);
                    }
                    if inside(t, nt) {
                        cols.push(idx(x, mv(t), r) as Index);
                    }
                    if inside(r, nr) {
                        cols.push(idx(x, t, mv(r)) as Index);
                    }
                }
                cols.sort_unstable();
            }
        }
    }
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    for r in &rows {
        col_idx.extend_from_slice(r);
        row_ptr.push(col_idx.len());
    }
    let values = vec![0.0f32; col_idx.len() * b * b];
    let a = crate::common::bcsr(b, (nbr, nbr), row_ptr, col_idx, values);
    let (c, _) = a.compact_empty_block_rows();
    let thesis: Vec<usize> = [80, 160, 320, 480]
        .iter()
        .map(|&wg| {
            let ws = shared_windows(&c, wg).expect("windows");
            ws.iter().map(|w| w.len).max().expect("some window") - b
        })
        .collect();
    assert_eq!(thesis, vec![12_415, 13_375, 13_555, 13_735]);
}

/// 4 block rows of 2 x 2 blocks, rows 0 and 2 empty; block row 1 has blocks at block
/// columns 0 and 2, block row 3 at block column 1; three in-block zeros.
fn tiny() -> Bcsr<f64> {
    crate::common::bcsr(
        2,
        (4, 3),
        vec![0, 0, 2, 2, 3],
        vec![0, 2, 1],
        vec![1.0, 0.0, 0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0, 8.0, 9.0],
    )
}

#[test]
fn plans_map_rows_and_count_the_bytes_moved() {
    let a = tiny();
    let opts = ThesisOptions::default().subsection(2).work_group(2);
    let plan = |k| ThesisPlan::new(&a, k, &opts).unwrap_or_else(|e| panic!("{k}: {e}"));
    let t = |values, indices, x, y, temp| Traffic {
        values,
        indices,
        x,
        y,
        temp,
    };
    // f64 matrix and vectors: 3 blocks of 4 values = 96 bytes; x: block columns 0, 1, 2 =
    // 6 values = 48 bytes; y: 8 rows written = 64 bytes (128 with beta != 0).
    for k in [
        ThesisKernel::BcsrV1,
        ThesisKernel::BcsrV2,
        ThesisKernel::BcsrV3,
    ] {
        let p = plan(k);
        assert_eq!(p.block_row_map(), &[1, 3]);
        assert_eq!(p.ghost_block_rows(), &[0, 2]);
        // indices: 3 block columns (12) + 3 row pointers (24) + map and ghosts (16);
        // temp: 6 partials written and read (96).
        assert_eq!(p.traffic::<f64>(true), t(96, 52, 48, 64, 96), "{k}");
        assert_eq!(p.traffic::<f64>(false).y, 128, "{k}");
        assert_eq!(p.traffic::<Complex<f64>>(true).temp, 192, "{k}");
    }
    // ELL: rows (2, 3, 6, 7) hold 3, 3, 1 and 2 non-zeros: 9 values (72 bytes); indices:
    // 9 columns + 4 row lengths + 4 row indices + 2 ghosts = 19 x 4; x: scalar columns
    // 0-5 all used; width 3 rounded up to 4 = 2 subsections of 2, 8 partials.
    let ell = plan(ThesisKernel::Ell);
    assert_eq!(ell.ell_row_index(), &[2, 3, 6, 7]);
    assert_eq!(ell.traffic::<f64>(true), t(72, 76, 48, 64, 128));
    assert_eq!(
        plan(ThesisKernel::EllV2).traffic::<f64>(true),
        t(72, 76, 48, 64, 0)
    );
    // BELL: 3 block columns + 2 row lengths + map and ghosts = 9 x 4; V3 adds its two
    // windows (block row 1: columns 0..6; block row 3: columns 2..4), 4 x 4 more.
    for k in [ThesisKernel::Bell, ThesisKernel::BellV2] {
        assert_eq!(plan(k).traffic::<f64>(true), t(96, 36, 48, 64, 0), "{k}");
        assert!(plan(k).windows().is_empty());
    }
    let v3 = plan(ThesisKernel::BellV3);
    assert_eq!(
        v3.windows(),
        &[Window { lo: 0, len: 6 }, Window { lo: 2, len: 2 }]
    );
    assert_eq!(v3.max_window(), 6);
    assert_eq!(v3.traffic::<f64>(true), t(96, 52, 48, 64, 0));
    assert_eq!(v3.traffic::<f64>(true).total(), 96 + 52 + 48 + 64);
}

#[test]
fn plans_reject_unsupported_options() {
    let a = tiny();
    let bad = |k, o: ThesisOptions| {
        matches!(
            ThesisPlan::new(&a, k, &o),
            Err(SparseError::InvalidArgument { .. })
        )
    };
    let d = ThesisOptions::default();
    assert!(bad(ThesisKernel::Ell, d.subsection(0)), "subsection 0");
    assert!(
        bad(ThesisKernel::BellV3, d.work_group(3)),
        "work group not a multiple of b"
    );
    assert!(
        bad(ThesisKernel::BellV3, d.work_group(0)),
        "empty work group"
    );
    assert!(
        bad(ThesisKernel::BellV3, d.work_group(2048)),
        "work group > 1024"
    );
    // BELL V2 keeps b accumulators in registers: b <= 8.
    let csr = Csr::from(&random_coo::<f32>(18, 18, 0.2, 4));
    let b9 = Bcsr::from_csr(&csr, 9, BlockLayout::RowMajor, Default::default()).expect("b = 9");
    assert!(matches!(
        ThesisPlan::new(&b9, ThesisKernel::BellV2, &d),
        Err(SparseError::InvalidArgument { .. })
    ));
    assert!(ThesisPlan::new(&b9, ThesisKernel::Bell, &d.work_group(144)).is_ok());
}

#[test]
fn kernel_labels_are_the_thesis_names() {
    let labels: Vec<&str> = ThesisKernel::ALL.iter().map(|k| k.label()).collect();
    assert_eq!(
        labels,
        [
            "BCSR V1", "BCSR V2", "BCSR V3", "ELL", "ELL V2", "BELL", "BELL V2", "BELL V3"
        ]
    );
    assert_eq!(ThesisKernel::BellV3.to_string(), "BELL V3");
}
