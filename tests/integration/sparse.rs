//! Sparse formats, converters, Matrix Market I/O, generator and CPU SpMV against the serial
//! f64 reference.

use crate::common;

use common::{random_coo, random_vec};
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::{
    Bcsr, BcsrParts, Bdia, BdiaOptions, Bell, BellOptions, BlockFit, BlockLayout, Coo, Csr, Ell,
    EllOptions, MatrixScalar, Sbell, SbellParts, SparseError, cpu, mm, reference,
};
use ferrocuda::{Complex, RealScalar};

/// Random `m x n` COO with density `p`, some empty rows, and a few duplicates.
fn dense_of<T: Element>(a: &Csr<T>) -> Vec<Complex<f64>> {
    reference::dense(&Coo::from(a))
}

const SIZES: [usize; 6] = [1, 2, 3, 31, 32, 33];

fn round_trips<T: Element>() {
    for (t, &m) in SIZES.iter().enumerate() {
        for &n in &[1usize, 3, 32, 33] {
            let coo = random_coo::<T>(m, n, 0.15, (m * 100 + n + t) as u64);
            let exact = reference::dense(&coo);
            let csr = Csr::from(&coo);
            let want = dense_of(&csr);
            // Duplicates are summed in T: within one rounding of the f64 sum.
            for (g, w) in want.iter().zip(&exact) {
                assert!(
                    (g - w).norm() <= 4.0 * bref::eps::<T>() * (1.0 + w.norm()),
                    "{m}x{n} coo->csr: {g} vs {w}"
                );
            }
            assert_eq!(
                dense_of(&Csr::from(&Coo::from(&csr))),
                want,
                "csr->coo->csr"
            );
            for b in [1usize, 2, 3, 5] {
                for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
                    if b > m || b > n {
                        // Blocks larger than the matrix would be mostly padding: refused.
                        let e = Bcsr::from_csr(&csr, b, layout, BlockFit::Pad).unwrap_err();
                        assert!(e.to_string().contains("is larger than"), "{e}");
                        continue;
                    }
                    let fit = if m % b == 0 && n % b == 0 {
                        BlockFit::Exact
                    } else {
                        BlockFit::Pad
                    };
                    let bc = Bcsr::from_csr(&csr, b, layout, fit).unwrap();
                    let back = bc.to_csr();
                    assert_eq!(back.n_rows(), m.div_ceil(b) * b);
                    let d = dense_of(&back);
                    let n2 = back.n_cols();
                    for i in 0..back.n_rows() {
                        for j in 0..n2 {
                            let w = if i < m && j < n {
                                want[i * n + j]
                            } else {
                                Complex::new(0.0, 0.0)
                            };
                            assert_eq!(d[i * n2 + j], w, "{m}x{n} b={b} {layout:?} ({i},{j})");
                        }
                    }
                    assert_eq!(dense_of(&bc.with_layout(BlockLayout::ColMajor).to_csr()), d);
                    let ell = Ell::from_bcsr(&bc, &EllOptions::default().subsection(4)).unwrap();
                    assert_eq!(ell.width() % 4, 0);
                    assert_eq!(dense_of(&ell.to_csr()), d, "ell b={b}");
                    let bell =
                        Bell::from_bcsr(&bc, &BellOptions::default().block_row_align(4)).unwrap();
                    assert_eq!(dense_of(&bell.to_csr()), d, "bell b={b}");
                    let bdia = Bdia::from_bcsr(
                        &bc,
                        &BdiaOptions::default().max_diagonals(1000).min_fill(0.0),
                    )
                    .unwrap();
                    assert_eq!(dense_of(&bdia.to_csr()), d, "bdia b={b}");
                    let sbell = Sbell::from_bcsr(&bc).unwrap();
                    assert_eq!(sbell.to_bcsr(layout), bc, "sbell b={b}");
                    assert_eq!(dense_of(&sbell.to_csr()), d, "sbell b={b}");
                }
            }
            let ell = Ell::from_csr(&csr, &EllOptions::default().drop_zeros(false)).unwrap();
            assert_eq!(ell.to_csr(), csr);
        }
    }
}

#[test]
fn round_trips_f32() {
    round_trips::<f32>()
}
#[test]
fn round_trips_f64() {
    round_trips::<f64>()
}
#[test]
fn round_trips_c32() {
    round_trips::<Complex<f32>>()
}
#[test]
fn round_trips_c64() {
    round_trips::<Complex<f64>>()
}

fn assert_close<V: Element>(
    what: &str,
    got: &[V],
    want: &[Complex<f64>],
    scale: &[f64],
    terms: usize,
) {
    let tol = (terms as f64 + 4.0) * 2.0 * bref::eps::<V>();
    for (i, ((&g, w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let g = bref::widen(g);
        assert!(
            (g.re - w.re).abs() <= tol * s + 1e-300 && (g.im - w.im).abs() <= tol * s + 1e-300,
            "{what}: row {i}: got {g}, want {w} (scale {s})"
        );
    }
}

/// Every format's SpMV against the reference, for matrix scalar `A` and vector scalar `V`.
fn spmv_all<A: Element + ferrocuda::sparse::MatrixScalar<V>, V: Element>() {
    for &m in &SIZES {
        for b in [1usize, 3, 5] {
            let (mb, nb) = (m.div_ceil(b) * b, (m + 2).div_ceil(b) * b);
            let coo = random_coo::<A>(mb, nb, 0.2, (m * 7 + b) as u64);
            let csr = Csr::from(&coo);
            let x: Vec<V> = random_vec(nb, 11 + m as u64);
            let y0: Vec<V> = random_vec(mb, 13 + m as u64);
            let (alpha, beta) = (common::random_scalar::<V>(3), common::random_scalar::<V>(4));
            for beta in [beta, V::ZERO] {
                let want = reference::spmv(alpha, &csr, &x, beta, &y0);
                let scale = reference::spmv_magnitude(alpha, &csr, &x, beta, &y0);
                let terms = nb + 2;
                let run = |name: &str, f: &dyn Fn(&mut [V]) -> Result<(), SparseError>| {
                    let mut y = if beta == V::ZERO {
                        common::poison::<V>(mb)
                    } else {
                        y0.clone()
                    };
                    f(&mut y).unwrap();
                    assert_close(
                        &format!("{name} {m} b={b} {}x{}", A::SUFFIX, V::SUFFIX),
                        &y,
                        &want,
                        &scale,
                        terms,
                    );
                };
                run("coo", &|y| cpu::spmv_coo(alpha, &coo, &x, beta, y));
                run("csr", &|y| cpu::spmv_csr(alpha, &csr, &x, beta, y));
                for lanes in [1, 2, 4, 32] {
                    run(&format!("csr {lanes} lanes"), &|y| {
                        cpu::spmv_csr_lanes(alpha, &csr, lanes, &x, beta, y)
                    });
                }
                for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
                    let bc = Bcsr::from_csr(&csr, b, layout, BlockFit::Exact).unwrap();
                    run("bcsr", &|y| cpu::spmv_bcsr(alpha, &bc, &x, beta, y));
                    let ell = Ell::from_bcsr(&bc, &EllOptions::default().subsection(3)).unwrap();
                    run("ell", &|y| cpu::spmv_ell(alpha, &ell, &x, beta, y));
                    let bell = Bell::from_bcsr(&bc, &BellOptions::default()).unwrap();
                    run("bell", &|y| cpu::spmv_bell(alpha, &bell, &x, beta, y));
                    let bdia = Bdia::from_bcsr(
                        &bc,
                        &BdiaOptions::default().max_diagonals(100).min_fill(0.0),
                    )
                    .unwrap();
                    run("bdia", &|y| cpu::spmv_bdia(alpha, &bdia, &x, beta, y));
                    let sbell = Sbell::from_bcsr(&bc).unwrap();
                    run("sbell", &|y| cpu::spmv_sbell(alpha, &sbell, &x, beta, y));
                    let (cb, map) = bc.compact_empty_block_rows();
                    run("bcsr_mapped", &|y| {
                        // Rows not in the map are not written: give them the expected value.
                        for i in 0..mb / b {
                            if map.binary_search(&(i as u32)).is_err() {
                                for r in 0..b {
                                    let w = want[i * b + r];
                                    y[i * b + r] = V::from_parts(
                                        <V::Real as RealScalar>::from_f64(w.re),
                                        <V::Real as RealScalar>::from_f64(w.im),
                                    );
                                }
                            }
                        }
                        cpu::spmv_bcsr_mapped(alpha, &cb, &map, &x, beta, y)
                    });
                }
            }
        }
    }
}

#[test]
fn spmv_every_format_matches_reference_f32() {
    spmv_all::<f32, f32>()
}
#[test]
fn spmv_every_format_matches_reference_f64() {
    spmv_all::<f64, f64>()
}
#[test]
fn spmv_every_format_matches_reference_c32() {
    spmv_all::<Complex<f32>, Complex<f32>>()
}
#[test]
fn spmv_every_format_matches_reference_c64() {
    spmv_all::<Complex<f64>, Complex<f64>>()
}
#[test]
fn spmv_real_matrix_complex_vector() {
    spmv_all::<f64, Complex<f64>>();
    spmv_all::<f32, Complex<f32>>();
}

#[test]
fn block_formats_give_the_same_bits_as_bcsr() {
    let spec = TraceSpec::new(3, 4, 3, 2).seed(5);
    let a = generate::trace_like::<Complex<f64>>(&spec).unwrap();
    let x: Vec<Complex<f64>> = random_vec(a.n_cols(), 1);
    let mut want = vec![Complex::new(0.0, 0.0); a.n_rows()];
    cpu::spmv_bcsr(
        Complex::new(1.0, 0.0),
        &a,
        &x,
        Complex::new(0.0, 0.0),
        &mut want,
    )
    .unwrap();
    let mut y = want.clone();
    cpu::spmv_bcsr(
        Complex::new(1.0, 0.0),
        &a.with_layout(BlockLayout::ColMajor),
        &x,
        Complex::new(0.0, 0.0),
        &mut y,
    )
    .unwrap();
    common::assert_bits_eq("col-major", &y, &want);
    let bell = Bell::from_bcsr(&a, &BellOptions::default()).unwrap();
    cpu::spmv_bell(
        Complex::new(1.0, 0.0),
        &bell,
        &x,
        Complex::new(0.0, 0.0),
        &mut y,
    )
    .unwrap();
    common::assert_bits_eq("bell", &y, &want);
}

#[test]
fn matrix_market_round_trip() {
    let coo = random_coo::<Complex<f64>>(33, 31, 0.2, 9);
    let mut buf = Vec::new();
    mm::write_coo(&mut buf, &coo).unwrap();
    let back = mm::read_coo::<Complex<f64>, _>(buf.as_slice()).unwrap();
    assert_eq!(back, coo);
    let coo32 = random_coo::<f32>(3, 32, 0.3, 10);
    let mut buf = Vec::new();
    mm::write_csr(&mut buf, &Csr::from(&coo32)).unwrap();
    let back = mm::read_csr::<f32, _>(buf.as_slice()).unwrap();
    assert_eq!(back, Csr::from(&coo32));
    let v: Vec<f64> = random_vec(17, 3);
    let mut buf = Vec::new();
    mm::write_dense(&mut buf, 17, 1, &v).unwrap();
    assert_eq!(
        mm::read_dense::<f64, _>(buf.as_slice()).unwrap(),
        (17, 1, v)
    );
}

fn parse_err(text: &str) -> (usize, String) {
    match mm::read_coo::<f64, _>(text.as_bytes()) {
        Err(SparseError::Parse { line, reason }) => (line, reason),
        other => panic!("expected a parse error for {text:?}, got {other:?}"),
    }
}

#[test]
fn mm_malformed_line_names_the_line() {
    let (line, why) =
        parse_err("%%MatrixMarket matrix coordinate real general\n% c\n2 2 2\n1 1 1.0\n2 x 3.0\n");
    assert_eq!(line, 5, "{why}");
    assert!(why.contains("\"x\""), "{why}");
    let (line, _) = parse_err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n");
    assert_eq!(line, 3);
    let (line, _) = parse_err("%%MatrixMarket matrix coordinate sparkly general\n");
    assert_eq!(line, 1);
    let (line, _) = parse_err("hello\n");
    assert_eq!(line, 1);
    let (line, _) = parse_err("%%MatrixMarket matrix coordinate real general\n2 2\n");
    assert_eq!(line, 2);
    let (line, _) =
        parse_err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0 2.0\n");
    assert_eq!(line, 3);
}

#[test]
fn mm_index_out_of_range() {
    let (line, why) =
        parse_err("%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1\n3 1 1\n");
    assert_eq!(line, 4);
    assert!(why.contains("row index 3"), "{why}");
    let (line, why) = parse_err("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 0 1\n");
    assert_eq!(line, 3);
    assert!(why.contains("column index 0"), "{why}");
}

#[test]
fn mm_wrong_entry_count() {
    // Too few: the end of the file (its last line) and the size line are named.
    let (line, why) =
        parse_err("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n% end\n");
    assert_eq!(line, 5);
    assert!(
        why.contains("end of file after 2 entries") && why.contains("line 2"),
        "{why}"
    );
    // Too many: the extra entry's line.
    let (line, why) =
        parse_err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n");
    assert_eq!(line, 4);
    assert!(why.contains("announced 1"), "{why}");
    // The same for arrays.
    let e =
        mm::read_dense::<f64, _>("%%MatrixMarket matrix array real general\n2 1\n1\n".as_bytes())
            .unwrap_err();
    assert!(
        e.to_string().contains("line 3: end of file after 1 values"),
        "{e}"
    );
    let e = mm::read_dense::<f64, _>(
        "%%MatrixMarket matrix array real general\n1 1\n1\n2\n".as_bytes(),
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("Matrix Market line 4: value 2"),
        "{e}"
    );
}

#[test]
fn mm_complex_file_into_real_type_is_an_error() {
    let (line, _) = parse_err("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n");
    assert_eq!(line, 1);
}

#[test]
fn mm_duplicates_are_summed() {
    let a = mm::read_csr::<f64, _>(
        "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.5\n2 2 1\n1 1 2.25\n"
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(a.nnz(), 2);
    assert_eq!(a.values(), [3.75, 1.0]);
}

#[test]
fn mm_nan_propagates() {
    let a = mm::read_csr::<f64, _>(
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 NaN\n2 2 1\n".as_bytes(),
    )
    .unwrap();
    let mut y = vec![0.0; 2];
    cpu::spmv_csr(1.0, &a, &[1.0, 2.0], 0.0, &mut y).unwrap();
    assert!(y[0].is_nan());
    assert_eq!(y[1], 2.0);
}

#[test]
fn mm_empty_matrix_is_valid() {
    let a =
        mm::read_csr::<f64, _>("%%MatrixMarket matrix coordinate real general\n0 0 0\n".as_bytes())
            .unwrap();
    assert_eq!((a.n_rows(), a.n_cols(), a.nnz()), (0, 0, 0));
    let a =
        mm::read_csr::<f64, _>("%%MatrixMarket matrix coordinate real general\n3 2 0\n".as_bytes())
            .unwrap();
    let mut y = vec![5.0; 3];
    cpu::spmv_csr(1.0, &a, &[1.0, 1.0], 2.0, &mut y).unwrap();
    assert_eq!(y, [10.0; 3]);
}

#[test]
fn mm_symmetric_pattern_and_hermitian_are_expanded() {
    let a = mm::read_csr::<f64, _>(
        "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(
        a.to_dense().unwrap(),
        [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    );
    let h = mm::read_csr::<Complex<f64>, _>(
        "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1 2\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(h.to_dense().unwrap()[1], Complex::new(1.0, -2.0));
    let s = mm::read_csr::<f64, _>(
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 3\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(s.to_dense().unwrap(), [0.0, -3.0, 3.0, 0.0]);
}

#[test]
fn spmv_dimension_mismatch_leaves_y_unchanged() {
    let a = Csr::from(&random_coo::<f64>(4, 3, 0.5, 1));
    let mut y = vec![7.0; 4];
    let e = cpu::spmv_csr(1.0, &a, &[1.0; 4], 1.0, &mut y).unwrap_err();
    assert!(
        matches!(
            e,
            SparseError::DimensionMismatch {
                expected: 3,
                found: 4,
                ..
            }
        ),
        "{e}"
    );
    assert!(cpu::spmv_csr(1.0, &a, &[1.0; 3], 1.0, &mut y[..3]).is_err());
    assert_eq!(y, [7.0; 4]);
}

#[test]
fn constructors_reject_bad_arrays_and_hand_them_back() {
    // row_ptr decreasing
    let r = Csr::<f64>::try_new(2, 2, vec![0, 2, 1], vec![0, 1], vec![1.0, 2.0]).unwrap_err();
    assert!(
        matches!(
            r.error,
            SparseError::InvalidStructure {
                what: "row_ptr",
                position: 2,
                ..
            }
        ),
        "{}",
        r.error
    );
    assert_eq!(r.parts.row_ptr, [0, 2, 1]);
    // column out of range
    let r = Csr::<f64>::try_new(1, 2, vec![0, 1], vec![2], vec![1.0]).unwrap_err();
    assert!(
        matches!(
            r.error,
            SparseError::IndexOutOfRange {
                value: 2,
                bound: 2,
                ..
            }
        ),
        "{}",
        r.error
    );
    // unsorted columns
    let r = Csr::<f64>::try_new(1, 3, vec![0, 2], vec![2, 1], vec![1.0, 1.0]).unwrap_err();
    assert!(
        r.error.to_string().contains("does not increase"),
        "{}",
        r.error
    );
    // length mismatch
    let r = Csr::<f64>::try_new(1, 3, vec![0, 1], vec![1], vec![]).unwrap_err();
    assert!(matches!(r.error, SparseError::DimensionMismatch { .. }));
    let r = Coo::<f64>::try_new(2, 2, vec![0, 5], vec![0, 0], vec![1.0, 1.0]).unwrap_err();
    assert!(matches!(
        r.error,
        SparseError::IndexOutOfRange {
            what: "rows",
            position: 1,
            value: 5,
            ..
        }
    ));
    let r = Bcsr::<f64>::from_parts(BcsrParts {
        b: 2,
        layout: BlockLayout::RowMajor,
        n_block_rows: 1,
        n_block_cols: 1,
        row_ptr: vec![0, 1],
        col_idx: vec![0],
        values: vec![1.0; 3],
    })
    .unwrap_err();
    assert!(matches!(
        r.error,
        SparseError::DimensionMismatch {
            expected: 4,
            found: 3,
            ..
        }
    ));
    // BCSR not divisible
    let a = Csr::from(&random_coo::<f64>(5, 4, 0.5, 1));
    let e = Bcsr::from_csr(&a, 2, BlockLayout::RowMajor, BlockFit::Exact).unwrap_err();
    assert!(e.to_string().contains("n_rows = 5"), "{e}");
    assert!(Bcsr::from_csr(&a, 0, BlockLayout::RowMajor, BlockFit::Pad).is_err());
}

#[test]
fn bdia_rejects_non_stencil_matrices() {
    let a = Csr::from(&random_coo::<f64>(64, 64, 0.3, 2));
    let bc = Bcsr::from_csr(&a, 1, BlockLayout::RowMajor, BlockFit::Exact).unwrap();
    match Bdia::from_bcsr(&bc, &BdiaOptions::default()) {
        Err(SparseError::NotStencil { reason, .. }) => {
            assert!(reason.contains("max_diagonals"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    match Bdia::from_bcsr(&bc, &BdiaOptions::default().max_diagonals(200)) {
        Err(SparseError::NotStencil { reason, .. }) => {
            assert!(reason.contains("min_fill"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn generator_properties() {
    for spec in [
        TraceSpec::new(3, 4, 5, 2),
        TraceSpec::new(1, 2, 1, 3),
        TraceSpec::new(4, 3, 2, 2).connect_grid_blocks(false),
    ] {
        let a = generate::trace_like::<Complex<f64>>(&spec.seed(7)).unwrap();
        assert_eq!(a.b(), 5);
        assert_eq!(a.n_block_rows(), spec.block_rows());
        assert_eq!(a.nnz_blocks(), spec.nonzero_blocks(), "{spec:?}");
        let (mut zeros, mut off_entries) = (0usize, 0usize);
        for bi in 0..a.n_block_rows() {
            let blocks = a.row_ptr()[bi]..a.row_ptr()[bi + 1];
            assert_eq!(blocks.is_empty(), spec.is_ghost_block_row(bi), "row {bi}");
            for k in blocks.clone() {
                let bj = a.col_idx()[k] as usize;
                assert!(!spec.is_ghost_block_row(bj), "column {bj} is a ghost");
                if bj != bi {
                    off_entries += 25;
                    zeros += a
                        .block(k)
                        .iter()
                        .filter(|v| **v == Complex::new(0.0, 0.0))
                        .count();
                }
            }
            // strict diagonal dominance of each scalar row
            for r in 0..5 {
                let (mut diag, mut off) = (0.0, 0.0);
                for k in blocks.clone() {
                    for c in 0..5 {
                        let v = a.block(k)[r * 5 + c].norm();
                        if a.col_idx()[k] as usize == bi && c == r {
                            diag = v
                        } else {
                            off += v
                        }
                    }
                }
                if !blocks.is_empty() {
                    assert!(diag > off, "row {bi}.{r}: {diag} <= {off}");
                }
            }
        }
        let frac = zeros as f64 / off_entries.max(1) as f64;
        assert!(off_entries == 0 || (0.15..0.18).contains(&frac), "{frac}");
        // the stencil format holds it (13 + 4 offsets with connected grid blocks)
        let d = Bdia::from_bcsr(&a, &BdiaOptions::default().min_fill(0.3)).unwrap();
        assert!(d.offsets().len() <= 17, "{:?}", d.offsets());
        assert_eq!(dense_of(&d.to_csr()), dense_of(&a.to_csr()));
    }
    assert_eq!(generate::case(1).unwrap().cells(), 64_000);
    assert_eq!(generate::case(6).unwrap().cells(), 1_024_000);
    assert!(generate::case(7).is_err());
    assert!(generate::large().nonzero_entries() >= 100_000_000);
}

#[test]
fn generator_is_deterministic_and_real_takes_real_parts() {
    let spec = TraceSpec::new(3, 3, 3, 2).seed(1);
    let a = generate::trace_like::<f64>(&spec).unwrap();
    assert_eq!(a, generate::trace_like::<f64>(&spec).unwrap());
    let c = generate::trace_like::<Complex<f64>>(&spec).unwrap();
    assert_eq!(a.col_idx(), c.col_idx());
    for bi in 0..a.n_block_rows() {
        for k in a.row_ptr()[bi]..a.row_ptr()[bi + 1] {
            for e in 0..25 {
                // diagonal entries are set from the row sums of moduli; all others are draws
                if a.col_idx()[k] as usize != bi || e / 5 != e % 5 {
                    assert_eq!(a.block(k)[e], c.block(k)[e].re);
                }
            }
        }
    }
}

#[test]
fn sbell_drops_ghost_rows_and_structural_zeros_of_trace_cases() {
    for spec in [TraceSpec::new(3, 4, 5, 2), TraceSpec::new(6, 5, 4, 3)] {
        let a = generate::trace_like::<f64>(&spec.seed(5)).unwrap();
        let s = Sbell::from_bcsr(&a).unwrap();
        assert_eq!(s.n_stored(), spec.cells());
        assert_eq!(s.blocks(), spec.nonzero_blocks());
        // slot 0: dense diagonal blocks; every other slot: the 21 entries off the pattern
        assert_eq!(s.masks()[0].count_ones(), 25);
        let mut off = (1u64 << 25) - 1;
        for (r, c) in generate::OFFDIAG_ZEROS {
            off &= !(1u64 << (r * 5 + c));
        }
        assert!(s.masks()[1..].iter().all(|&m| m == off), "{:x?}", s.masks());
        assert_eq!(s.entries_read(), spec.nonzero_entries());
        assert_eq!(s.to_bcsr(BlockLayout::RowMajor), a);
        let empty = s.empty_block_rows().unwrap();
        assert_eq!(empty.len(), spec.block_rows() - spec.cells());
        assert!(empty.iter().all(|&r| spec.is_ghost_block_row(r as usize)));
        // An infinity in x meets the structural zeros of BCSR's blocks, not SBELL's masked
        // ones: neither multiplies them, so the same rows are infinite and none is NaN.
        let mut x: Vec<f64> = random_vec(a.n_cols(), 9);
        let mut y = vec![0.0; a.n_rows()];
        // column 3 of a real cell: entry (0, 3) of every off-diagonal block is a zero
        x[spec.block_row(0, 1, 1, 1) * 5 + 3] = f64::INFINITY;
        cpu::spmv_sbell(1.0, &s, &x, 0.0, &mut y).unwrap();
        let mut y_bcsr = vec![0.0; a.n_rows()];
        cpu::spmv_bcsr(1.0, &a, &x, 0.0, &mut y_bcsr).unwrap();
        let class = |v: &[f64]| {
            v.iter()
                .map(|v| (v.is_nan(), v.is_infinite()))
                .collect::<Vec<_>>()
        };
        assert_eq!(class(&y), class(&y_bcsr));
        assert!(y.iter().all(|v| !v.is_nan()) && y.iter().any(|v| v.is_infinite()));
    }
}

#[test]
fn sbell_rejects_bad_arrays_and_big_blocks() {
    let a = generate::trace_like::<f64>(&TraceSpec::new(2, 2, 2, 1)).unwrap();
    let good = Sbell::from_bcsr(&a).unwrap().into_parts();
    let check = |f: &dyn Fn(&mut SbellParts<f64>), what: &str| {
        let mut p = good.clone();
        f(&mut p);
        let before = p.clone();
        let r = Sbell::from_parts(p).unwrap_err();
        assert!(r.error.to_string().contains(what), "{}", r.error);
        assert_eq!(*r.parts, before);
    };
    check(&|p| p.masks[1] |= 1 << 40, "outside a 5x5 block");
    check(&|p| p.row_len[0] = 99, "row_len");
    check(&|p| p.block_col[3] = 1_000_000, "block_col");
    check(&|p| p.row_index.swap(0, 1), "row_index");
    check(&|p| p.b = 9, "block size");
    check(&|p| p.values.truncate(p.values.len() - 1), "values");
    assert!(Sbell::from_parts(good).is_ok());
    let big = Bcsr::from_csr(
        &Csr::from(&random_coo::<f64>(18, 18, 0.3, 1)),
        9,
        BlockLayout::RowMajor,
        BlockFit::Exact,
    )
    .unwrap();
    let e = Sbell::from_bcsr(&big).unwrap_err();
    assert!(e.to_string().contains("exceeds 8"), "{e}");
}

#[test]
fn ghost_compaction_and_map() {
    let spec = TraceSpec::new(2, 3, 2, 2).seed(3);
    let a = generate::trace_like::<f64>(&spec).unwrap();
    let (c, map) = a.compact_empty_block_rows();
    assert_eq!(map.len(), spec.cells());
    assert_eq!(c.n_block_rows(), spec.cells());
    assert_eq!(a.empty_block_rows(), spec.block_rows() - spec.cells());
    assert!(map.iter().all(|&m| !spec.is_ghost_block_row(m as usize)));
    let x: Vec<f64> = random_vec(a.n_cols(), 4);
    let mut want = vec![0.0; a.n_rows()];
    cpu::spmv_bcsr(2.0, &a, &x, 0.0, &mut want).unwrap();
    let mut y = vec![f64::NAN; a.n_rows()];
    cpu::spmv_bcsr_mapped(2.0, &c, &map, &x, 0.0, &mut y).unwrap();
    for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
        if spec.is_ghost_block_row(i / 5) {
            assert!(g.is_nan(), "ghost row {i} was written");
        } else {
            assert_eq!(g.to_bits(), w.to_bits(), "row {i}");
        }
    }
    // a bad map is rejected and y unchanged
    let mut bad = map.clone();
    bad.swap(0, 1);
    let before = y.clone();
    assert!(cpu::spmv_bcsr_mapped(2.0, &c, &bad, &x, 0.0, &mut y).is_err());
    assert_eq!(
        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        before.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}

/// Round trips through nalgebra-sparse, and our SpMV against nalgebra-sparse's own
/// sparse x dense product (an independent implementation).
fn nalgebra_interop<T: Element + nalgebra::Scalar>()
where
    for<'a> &'a nalgebra_sparse::CsrMatrix<T>:
        std::ops::Mul<&'a nalgebra::DVector<T>, Output = nalgebra::DVector<T>>,
{
    let coo = random_coo::<T>(37, 29, 0.2, 77);
    let a = Csr::from(&coo);
    let n = nalgebra_sparse::CsrMatrix::try_from(&a).expect("to nalgebra");
    assert_eq!(
        Csr::try_from(&n).expect("from nalgebra"),
        a,
        "CSR round trip"
    );
    let nc = nalgebra_sparse::CooMatrix::try_from(&coo).expect("coo to nalgebra");
    let back = Coo::try_from(&nc).expect("coo from nalgebra");
    assert_eq!(Csr::from(&back), a, "COO round trip (as CSR)");
    let x = random_vec::<T>(a.n_cols(), 78);
    let mut y = vec![T::ZERO; a.n_rows()];
    cpu::spmv_csr(T::ONE, &a, &x, T::ZERO, &mut y).expect("spmv");
    let theirs = &n * &nalgebra::DVector::from_vec(x.clone());
    let want: Vec<Complex<f64>> = theirs.iter().map(|&v| bref::widen(v)).collect();
    let scale = reference::spmv_magnitude(T::ONE, &a, &x, T::ZERO, &y);
    assert_close("spmv vs nalgebra-sparse", &y, &want, &scale, 29);
}

#[test]
fn nalgebra_sparse_interop_and_spmv_agree() {
    nalgebra_interop::<f32>();
    nalgebra_interop::<f64>();
    nalgebra_interop::<Complex<f32>>();
    nalgebra_interop::<Complex<f64>>();
}

// --- sizes from users: checked before allocating ----------------------------------

#[test]
fn block_sizes_larger_than_the_matrix_are_refused() {
    let a = Csr::from(&random_coo::<f64>(3, 3, 0.9, 1));
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        let e = Bcsr::from_csr(&a, 100_000, layout, BlockFit::Pad).unwrap_err();
        assert!(
            e.to_string()
                .contains("block size 100000 is larger than the matrix's 3 rows"),
            "{e}"
        );
    }
    let wide = Csr::from(&random_coo::<f64>(8, 3, 0.9, 2));
    let e = Bcsr::from_csr(&wide, 4, BlockLayout::RowMajor, BlockFit::Pad).unwrap_err();
    assert!(e.to_string().contains("the matrix's 3 columns"), "{e}");
    // b * b overflowing is an error, not a wrap (the empty matrix pads nothing).
    let empty = Csr::<f64>::from(&Coo::empty(0, 0).unwrap());
    let e = Bcsr::from_csr(&empty, usize::MAX, BlockLayout::RowMajor, BlockFit::Pad).unwrap_err();
    assert!(e.to_string().contains("entries per block"), "{e}");
    // Equal to the dimension is fine.
    assert!(Bcsr::from_csr(&a, 3, BlockLayout::RowMajor, BlockFit::Pad).is_ok());
}

/// A `n x n` matrix whose first row is dense and whose diagonal is full: the worst case
/// of the padded formats (every row padded to `n` slots, `n` block diagonals).
fn arrow(n: usize) -> Csr<f64> {
    let mut coo = Coo::empty(n, n).unwrap();
    for j in 0..n {
        coo.push(0, j, 1.0).unwrap();
    }
    for i in 1..n {
        coo.push(i, i, 2.0).unwrap();
    }
    Csr::from(&coo)
}

#[test]
fn padded_formats_check_their_storage_before_allocating() {
    let n = 2_000_000;
    let a = arrow(n);
    // ELL: 2e6 rows x width 2e6, 12 bytes a slot.
    let (what, bytes) = common::out_of_host_memory(Ell::from_csr(&a, &EllOptions::default()));
    assert!(
        what.contains("2000000 rows") && what.contains("width 2000000"),
        "{what}"
    );
    assert_eq!(bytes, 2_000_000u128 * 2_000_000 * 12 + 2_000_000 * 4);
    // BELL of the b = 1 blocks: the same padding.
    let bc = Bcsr::from_csr(&a, 1, BlockLayout::RowMajor, BlockFit::Exact).unwrap();
    let (what, _) = common::out_of_host_memory(Bell::from_bcsr(&bc, &BellOptions::default()));
    assert!(
        what.contains("width 2000000") && what.contains("block size 1"),
        "{what}"
    );
    // BDIA: 2e6 diagonals over 2e6 stored block rows.
    let opts = BdiaOptions::default()
        .max_diagonals(usize::MAX)
        .min_fill(0.0);
    let (what, _) = common::out_of_host_memory(Bdia::from_bcsr(&bc, &opts));
    assert!(what.contains("2000000 block diagonals"), "{what}");
    // BCSR: one block of 10^12 values (8 TB) for a single entry.
    let one = Csr::from(&Coo::try_new(1_000_000, 1_000_000, vec![5], vec![7], vec![1.0]).unwrap());
    let (what, bytes) = common::out_of_host_memory(Bcsr::from_csr(
        &one,
        1_000_000,
        BlockLayout::RowMajor,
        BlockFit::Exact,
    ));
    assert!(
        what.contains("1 blocks of 1000000 x 1000000 f64 values (block size 1000000"),
        "{what}"
    );
    assert_eq!(bytes, 8_000_000_000_000);
}

#[test]
fn the_generator_checks_its_size_first() {
    // 504^3 block rows, about 1.6e9 blocks of 25 complex values: 650 GB.
    let (what, bytes) = common::out_of_host_memory(generate::trace_like::<Complex<f64>>(
        &TraceSpec::new(500, 500, 500, 1),
    ));
    assert!(
        what.contains("500 x 500 x 500 cells x 1 grid blocks"),
        "{what}"
    );
    assert!(bytes > 600_000_000_000, "{bytes}");
    // Sizes that overflow are errors (and the spec's own counts saturate).
    let huge = TraceSpec::new(usize::MAX, 2, 2, 2);
    assert!(generate::trace_like::<f64>(&huge).is_err());
    assert_eq!(huge.block_rows(), usize::MAX);
    assert_eq!(huge.nonzero_entries(), usize::MAX);
    assert!(generate::trace_like::<f64>(&TraceSpec::new(5000, 5000, 5000, 40)).is_err());
}

#[test]
fn ghost_lists_check_their_range() {
    let e = ferrocuda::sparse::ghost_block_rows(&[], usize::MAX).unwrap_err();
    assert!(e.to_string().contains("n_block_rows"), "{e}");
}

// --- IEEE semantics independent of the format --------------------------------------

/// `y = A x` in every format, rows trimmed to `a`'s, with `x` padded by NaN where a
/// blocked format pads the matrix (padding must not read it). Returns (format, y) pairs;
/// `b` is the block size of the blocked formats.
fn every_format<A: Element + MatrixScalar<V>, V: Element>(
    a: &Csr<A>,
    x: &[V],
    b: usize,
) -> Vec<(String, Vec<V>)> {
    let (one, zero) = (V::ONE, V::ZERO);
    let m = a.n_rows();
    let run = |n_rows: usize, f: &dyn Fn(&mut [V]) -> Result<(), SparseError>| {
        let mut y = common::poison::<V>(n_rows);
        f(&mut y).unwrap();
        y.truncate(m);
        y
    };
    let mut out = vec![
        (
            "csr".to_string(),
            run(m, &|y| cpu::spmv_csr(one, a, x, zero, y)),
        ),
        (
            "csr one lane".to_string(),
            run(m, &|y| cpu::spmv_csr_lanes(one, a, 1, x, zero, y)),
        ),
        (
            "csr-lanes 4".to_string(),
            run(m, &|y| cpu::spmv_csr_lanes(one, a, 4, x, zero, y)),
        ),
        (
            "coo".to_string(),
            run(m, &|y| cpu::spmv_coo(one, &Coo::from(a), x, zero, y)),
        ),
    ];
    for drop_zeros in [false, true] {
        let e = Ell::from_csr(
            a,
            &EllOptions::default().subsection(3).drop_zeros(drop_zeros),
        )
        .unwrap();
        out.push((
            format!("ell drop_zeros={drop_zeros}"),
            run(m, &|y| cpu::spmv_ell(one, &e, x, zero, y)),
        ));
    }
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        let bc = Bcsr::from_csr(a, b, layout, BlockFit::Pad).unwrap();
        let mut xp = x.to_vec();
        xp.resize(bc.n_cols(), common::nan::<V>());
        let n = bc.n_rows();
        out.push((
            format!("bcsr {layout:?} b={b}"),
            run(n, &|y| cpu::spmv_bcsr(one, &bc, &xp, zero, y)),
        ));
        let (cb, map) = bc.compact_empty_block_rows();
        out.push((
            format!("bcsr mapped {layout:?} b={b}"),
            run(n, &|y| {
                y.fill(zero); // rows not in the map are not written
                cpu::spmv_bcsr_mapped(one, &cb, &map, &xp, zero, y)
            }),
        ));
        let bell = Bell::from_bcsr(&bc, &BellOptions::default()).unwrap();
        out.push((
            format!("bell {layout:?} b={b}"),
            run(n, &|y| cpu::spmv_bell(one, &bell, &xp, zero, y)),
        ));
        let opts = BdiaOptions::default().max_diagonals(1000).min_fill(0.0);
        let bdia = Bdia::from_bcsr(&bc, &opts).unwrap();
        out.push((
            format!("bdia {layout:?} b={b}"),
            run(n, &|y| cpu::spmv_bdia(one, &bdia, &xp, zero, y)),
        ));
        let sbell = Sbell::from_bcsr(&bc).unwrap();
        out.push((
            format!("sbell {layout:?} b={b}"),
            run(n, &|y| cpu::spmv_sbell(one, &sbell, &xp, zero, y)),
        ));
    }
    out
}

#[test]
fn infinity_in_x_meets_no_padding_in_any_format() {
    // The issue's case: x = [1, inf, 3], row 3 = [2, 0, 5] (its 0 explicitly stored).
    let a = Csr::try_new(
        3,
        3,
        vec![0, 2, 3, 6],
        vec![0, 1, 1, 0, 1, 2],
        vec![1.0, 2.0, 1.0, 2.0, 0.0, 5.0],
    )
    .unwrap();
    let x = [1.0, f64::INFINITY, 3.0];
    for b in [1, 2, 3] {
        for (format, y) in every_format::<f64, f64>(&a, &x, b) {
            assert_eq!(y, [f64::INFINITY, f64::INFINITY, 17.0], "{format}");
        }
    }
    let want = reference::spmv(1.0, &a, &x, 0.0, &[0.0; 3]);
    assert_eq!(want[2], Complex::new(17.0, 0.0));
}

/// Random matrices with explicit zeros and empty rows, against `x` holding infinities and
/// NaNs at the first, a middle and the last position: every format gives the bits of
/// CSR (the same terms in the same order; SBELL, which sums the diagonal block first, the
/// same NaN/infinity pattern and the same finite values within rounding).
fn nonfinite_x_every_format<A: Element + MatrixScalar<V>, V: Element>() {
    let inf = V::from_real(<V::Real as ferrocuda::RealScalar>::from_f64(f64::INFINITY));
    for (m, n, seed) in [(7usize, 9usize, 1u64), (32, 33, 2), (33, 31, 3)] {
        let mut coo = random_coo::<A>(m, n, 0.3, seed);
        for i in (0..m).step_by(3) {
            coo.push(i, (i * 5) % n, A::ZERO).unwrap(); // explicit zeros
        }
        let a = Csr::from(&coo);
        let base: Vec<V> = random_vec(n, seed + 10);
        for poke in [
            vec![(0, inf)],
            vec![(n / 2, common::nan::<V>())],
            vec![(n - 1, -inf), (1, inf)],
        ] {
            let mut x = base.clone();
            for &(j, v) in &poke {
                x[j] = v;
            }
            let mut nonfinite_rows = 0;
            for b in [1, 2, 3, 5] {
                let runs = every_format::<A, V>(&a, &x, b);
                let csr = &runs[0].1;
                for (format, y) in &runs {
                    let case = format!("{format} {}x{} {m}x{n} {poke:?}", A::SUFFIX, V::SUFFIX);
                    // SBELL and CSR in lanes sum in other orders: same NaN/infinity pattern,
                    // finite values within rounding.
                    if !format.starts_with("sbell") && !format.starts_with("csr-lanes") {
                        common::assert_bits_eq_nan(&case, y, csr);
                        continue;
                    }
                    for (i, (&g, &w)) in y.iter().zip(csr).enumerate() {
                        let (g, w) = (bref::widen(g), bref::widen(w));
                        let close = |g: f64, w: f64| {
                            (g.is_nan() && w.is_nan())
                                || g == w
                                || (g - w).abs() <= 1e-4 * (1.0 + w.abs())
                        };
                        assert!(
                            close(g.re, w.re) && close(g.im, w.im),
                            "{case}: row {i}: {g} vs {w}"
                        );
                    }
                }
                nonfinite_rows = csr.iter().filter(|&&v| !bref::widen(v).is_finite()).count();
            }
            // The poked entries do reach rows (through their nonzero entries).
            assert!(nonfinite_rows > 0, "{m}x{n} {poke:?}");
        }
    }
}

#[test]
fn nonfinite_x_gives_the_same_values_in_every_format() {
    nonfinite_x_every_format::<f64, f64>();
    nonfinite_x_every_format::<f32, f32>();
    nonfinite_x_every_format::<Complex<f64>, Complex<f64>>();
    nonfinite_x_every_format::<f64, Complex<f64>>();
}

/// The CPU twin of the GPU's CSR kernel: one lane is the plain CSR chain; more lanes split
/// each row into interleaved partial sums added in a fixed tree.
#[test]
fn csr_lanes_twin_sums_in_lanes_then_a_tree() {
    use ferrocuda_kernels::sparse::{csr_lane_sum, lanes_sum};
    for (m, n, p) in [(1usize, 1usize, 1.0), (33, 31, 0.3), (257, 256, 0.2)] {
        let a = Csr::from(&random_coo::<f64>(m, n, p, (m + n) as u64));
        let x: Vec<f64> = random_vec(n, 5);
        let mut plain = common::poison::<f64>(m);
        cpu::spmv_csr(1.5, &a, &x, 0.0, &mut plain).unwrap();
        let mut one = common::poison::<f64>(m);
        cpu::spmv_csr_lanes(1.5, &a, 1, &x, 0.0, &mut one).unwrap();
        common::assert_bits_eq(&format!("{m}x{n} one lane"), &one, &plain);
        for lanes in [2, 8, 32] {
            let mut got = common::poison::<f64>(m);
            cpu::spmv_csr_lanes(1.5, &a, lanes, &x, 0.0, &mut got).unwrap();
            // Row by row from the shared per-lane math, written out here.
            let want: Vec<f64> = (0..m)
                .map(|i| {
                    let (s, e) = (a.row_ptr()[i], a.row_ptr()[i + 1]);
                    let mut parts: Vec<f64> = (0..lanes)
                        .map(|l| {
                            csr_lane_sum(s, e, l, lanes, |k| {
                                (a.values()[k], x[a.col_idx()[k] as usize])
                            })
                        })
                        .collect();
                    1.5 * lanes_sum(&mut parts)
                })
                .collect();
            common::assert_bits_eq(&format!("{m}x{n} {lanes} lanes"), &got, &want);
        }
    }
    // Lanes must be a power of two up to 32; y stays as it was.
    let a = Csr::from(&random_coo::<f64>(4, 4, 0.5, 1));
    let mut y = vec![7.0; 4];
    for lanes in [0, 3, 64] {
        let e = cpu::spmv_csr_lanes(1.0, &a, lanes, &[1.0; 4], 0.0, &mut y).unwrap_err();
        assert!(e.to_string().contains(&format!("lanes = {lanes}")), "{e}");
    }
    assert_eq!(y, [7.0; 4]);
}

/// A tridiagonal `n x n` matrix (rows of 2 or 3 entries: no blocks, nearly equal rows).
fn tridiagonal(n: usize) -> Csr<f64> {
    let mut coo = Coo::empty(n, n).unwrap();
    for i in 0..n {
        coo.push(i, i, 2.0).unwrap();
        if i + 1 < n {
            coo.push(i, i + 1, -1.0).unwrap();
            coo.push(i + 1, i, -1.5).unwrap();
        }
    }
    Csr::from(&coo)
}

/// `Format::Auto` by structure: blocks where they pay (SBELL on the GPU, BCSR on the
/// CPU), ELL for rows of equal length on the GPU, CSR otherwise; the report's numbers are
/// those of the matrix built, and its product is the format's.
#[test]
fn auto_format_follows_the_structure() {
    use ferrocuda::sparse::{Format, FormatOptions, Matrix, Storage, Target};
    let gpu = |a: &Csr<f64>, o: FormatOptions| {
        Matrix::with_options(a, Format::Auto, Target::Gpu, &o).unwrap()
    };
    // Block-stencil matrix: 5 x 5 blocks detected.
    let spec = TraceSpec::new(3, 4, 3, 2).seed(5);
    let blocky = generate::trace_like::<f64>(&spec)
        .unwrap()
        .to_csr()
        .without_zeros();
    let cpu_m = Matrix::new(&blocky, Format::Auto).unwrap();
    let c = cpu_m.choice();
    assert_eq!(
        (c.format, c.block_size),
        (Format::Bcsr, Some(5)),
        "{}",
        c.reason
    );
    assert!(c.reason.contains("detected"), "{}", c.reason);
    let g = gpu(&blocky, FormatOptions::default());
    assert_eq!(
        (g.format(), g.choice().block_size),
        (Format::Sbell, Some(5)),
        "{}",
        g.choice().reason
    );
    let c = g.choice();
    assert_eq!(c.stored_bytes, g.storage().stored_bytes());
    assert_eq!((c.n_rows, c.n_cols), (blocky.n_rows(), blocky.n_cols()));
    assert!(c.fill > 0.0 && c.fill <= 1.0, "{}", c.fill);
    assert!(c.candidates.iter().any(|k| k.format == Format::Csr));
    let json = serde_json::to_string(c).unwrap();
    assert!(
        json.contains(r#""format":"sbell""#) && json.contains(r#""target":"gpu""#),
        "{json}"
    );
    // Tridiagonal: no blocks pay; equal rows make ELL no larger than CSR on the GPU.
    let tri = tridiagonal(1024);
    let m = gpu(&tri, FormatOptions::default());
    assert_eq!(m.format(), Format::Ell, "{}", m.choice().reason);
    assert!(
        m.choice().reason.contains("do not pay"),
        "{}",
        m.choice().reason
    );
    assert_eq!(
        Matrix::new(&tri, Format::Auto).unwrap().format(),
        Format::Csr
    );
    // A given block size that does not pay, and one that does not divide.
    let m = gpu(&tri, FormatOptions::default().block_size(4));
    assert_eq!(m.format(), Format::Ell);
    let m = gpu(&tridiagonal(1023), FormatOptions::default().block_size(5));
    assert!(
        m.choice().reason.contains("does not divide"),
        "{}",
        m.choice().reason
    );
    // An arrow matrix (one dense row): neither blocks nor ELL; CSR.
    let arrow = arrow(300);
    let m = gpu(&arrow, FormatOptions::default());
    assert_eq!(m.format(), Format::Csr, "{}", m.choice().reason);
    assert!(
        m.choice().reason.contains("threads per row"),
        "{}",
        m.choice().reason
    );
    // Every choice multiplies as its format does on the CPU.
    let x: Vec<f64> = random_vec(blocky.n_cols(), 3);
    let mut want = vec![0.0; blocky.n_rows()];
    let mut got = common::poison::<f64>(blocky.n_rows());
    let Storage::Sbell(s) = g.storage() else {
        panic!("sbell expected")
    };
    cpu::spmv_sbell(2.0, s, &x, 0.0, &mut want).unwrap();
    g.spmv(2.0, &x, 0.0, &mut got).unwrap();
    common::assert_bits_eq("auto sbell", &got, &want);
    use ferrocuda::krylov::LinOp;
    let mut y = vec![0.0; blocky.n_rows()];
    LinOp::apply(&cpu_m, &x, &mut y).unwrap();
    cpu::spmv_csr(1.0, &blocky, &x, 0.0, &mut want).unwrap();
    for (g, w) in y.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
    }
    assert!(LinOp::apply(&cpu_m, &x[1..], &mut y).is_err());
}

/// The CPU twin of `device_matrix_gpu_matches_csr_reference`: every format of
/// [`Matrix`], chosen by `Format::Auto` for either target or asked for, multiplies as the
/// f64 CSR reference within `2 (k + 2) eps` times each row's magnitude, a poisoned `y`
/// included for `beta = 0`.
#[test]
fn matrix_every_format_matches_csr_reference() {
    use common::sparse::{assert_matches_csr_reference, structures};
    use ferrocuda::sparse::{Format, FormatOptions, Matrix, Target};
    let mut chosen_for_gpu = Vec::new();
    for (what, a) in structures::<f64>(21) {
        let x = random_vec::<f64>(a.n_cols(), 5);
        let y0 = random_vec::<f64>(a.n_rows(), 6);
        for target in [Target::Cpu, Target::Gpu] {
            for format in Format::ALL {
                let m = match Matrix::with_options(&a, format, target, &FormatOptions::default()) {
                    Ok(m) => m,
                    Err(SparseError::NotStencil { .. }) if format == Format::Bdia => continue,
                    Err(e) => panic!("{what} {format}: {e}"),
                };
                let case = format!("{what}: {format} for {target:?} -> {}", m.format());
                if format != Format::Auto {
                    assert_eq!(m.format(), format, "{case}");
                } else if target == Target::Gpu {
                    chosen_for_gpu.push(m.format());
                }
                for (beta, start) in [(0.0, common::poison::<f64>(a.n_rows())), (0.75, y0.clone())]
                {
                    let mut got = start.clone();
                    m.spmv(1.25, &x, beta, &mut got)
                        .unwrap_or_else(|e| panic!("{case}: {e}"));
                    let case = format!("{case}, beta {beta}");
                    assert_matches_csr_reference(&case, &a, 1.25, &x, beta, &start, &got);
                }
            }
        }
    }
    // What the GPU test relies on: the structures make Auto choose SBELL, ELL and CSR.
    for f in [Format::Sbell, Format::Ell, Format::Csr] {
        assert!(chosen_for_gpu.contains(&f), "{f}: {chosen_for_gpu:?}");
    }
}

/// Explicit formats are built as asked; what cannot be is an error naming the reason.
#[test]
fn explicit_formats_and_their_errors() {
    use ferrocuda::sparse::{Format, FormatOptions, Matrix, Target};
    let spec = TraceSpec::new(2, 3, 2, 1);
    let a = generate::trace_like::<f64>(&spec).unwrap().to_csr();
    let with = |f: Format, o: FormatOptions| Matrix::with_options(&a, f, Target::Cpu, &o);
    for f in Format::ALL.into_iter().skip(1) {
        let m = with(f, FormatOptions::default()).unwrap();
        assert_eq!((m.format(), m.choice().requested), (f, f));
        assert_eq!(m.choice().block_size.is_some(), f.is_blocked(), "{f}");
        assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
    }
    assert_eq!("AUTO".parse::<Format>().unwrap(), Format::Auto);
    let e = "dense".parse::<Format>().unwrap_err().to_string();
    assert!(e.contains("\"dense\"") && e.contains("sbell"), "{e}");
    let fails = |f: Format, o: FormatOptions| {
        with(f, o)
            .map(drop) // an error is expected; no need to print what was built
            .unwrap_err()
            .to_string()
    };
    let e = fails(Format::Sbell, FormatOptions::default().block_size(10));
    assert!(e.contains("exceeds 8"), "{e}");
    assert_ne!(a.n_rows() % 11, 0);
    let e = fails(Format::Bcsr, FormatOptions::default().block_size(11));
    assert!(e.contains("not a multiple of the block size 11"), "{e}");
    let padded = with(
        Format::Bcsr,
        FormatOptions::default().block_size(11).fit(BlockFit::Pad),
    )
    .unwrap();
    assert_eq!(padded.n_rows(), a.n_rows().div_ceil(11) * 11);
    let e = fails(Format::Bell, FormatOptions::default().block_size(0));
    assert!(e.contains("b = 0"), "{e}");
    // No block size divides a prime dimension.
    let e = Matrix::with_options(
        &tridiagonal(13),
        Format::Bdia,
        Target::Gpu,
        &FormatOptions::default(),
    )
    .map(drop) // an error is expected; no need to print what was built
    .unwrap_err()
    .to_string();
    assert!(e.contains("13 x 13"), "{e}");
}

/// The pieces of the solve set-up: identity padding to whole blocks, finite checks.
#[test]
fn identity_padding_and_finite_checks() {
    use ferrocuda::sparse::{check_finite, padded_size};
    let a = tridiagonal(7);
    let n = padded_size(7, 5).unwrap();
    let p = a.pad_identity(n).unwrap();
    assert_eq!((p.n_rows(), p.n_cols(), p.nnz()), (10, 10, a.nnz() + 3));
    let d = p.to_dense().unwrap();
    for i in 0..10 {
        for j in 0..10 {
            let want = if i < 7 && j < 7 {
                a.to_dense().unwrap()[i * 7 + j]
            } else if i == j {
                1.0
            } else {
                0.0
            };
            assert_eq!(d[i * 10 + j], want, "({i}, {j})");
        }
    }
    assert_eq!(a.pad_identity(7).unwrap(), a);
    assert!(
        a.pad_identity(6)
            .unwrap_err()
            .to_string()
            .contains("size 6")
    );
    let rect = Csr::<f64>::try_new(2, 3, vec![0, 0, 0], vec![], vec![]).unwrap();
    assert!(rect.pad_identity(4).is_err());
    assert!(padded_size(usize::MAX, 2).is_err());
    // The first NaN or infinity, by position.
    assert!(a.check_finite().is_ok());
    let mut coo = Coo::from(&a);
    coo.push(5, 2, f64::INFINITY).unwrap();
    match coo.check_finite() {
        Err(SparseError::NonFinite {
            row: 5,
            col: Some(2),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    let bad = Csr::from(&coo);
    let e = bad.check_finite().unwrap_err();
    assert!(
        matches!(
            e,
            SparseError::NonFinite {
                row: 5,
                col: Some(2),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("entry (5, 2) is inf"), "{e}");
    let z = Complex::new(1.0, f32::NAN);
    assert!(check_finite("solve", "x0", &[Complex::new(0.0f32, 0.0), z]).is_err());
    assert!(check_finite::<f64>("solve", "b", &[]).is_ok());
}

/// The message a constructor rejects its parts with (without printing what it would
/// have built, were it to accept them).
fn rejection<T, P>(r: Result<T, ferrocuda::sparse::Rejected<P>>) -> String {
    match r {
        Ok(_) => panic!("the parts were accepted"),
        Err(r) => r.error.to_string(),
    }
}

/// The shape every blocked format shares, and its checks (the same message in each).
#[test]
fn block_formats_share_their_shape_and_checks() {
    let spec = TraceSpec::new(2, 3, 2, 1);
    let a = generate::trace_like::<f64>(&spec).unwrap();
    let shape = a.shape();
    assert_eq!((shape.n_rows(), shape.n_cols()), (a.n_rows(), a.n_cols()));
    let bell = Bell::from_bcsr(&a, &BellOptions::default()).unwrap();
    let sbell = Sbell::from_bcsr(&a).unwrap();
    let bdia = Bdia::from_bcsr(&a, &BdiaOptions::default()).unwrap();
    assert_eq!([bell.shape(), sbell.shape(), bdia.shape()], [shape; 3]);
    // b = 0 reads the same in every format but SBELL, which names its own limit.
    let mut p = a.parts().clone();
    p.b = 0;
    let e = rejection(Bcsr::from_parts(p));
    assert_eq!(e, "Bcsr::from_parts: block size b = 0 (must be at least 1)");
    let mut p = bell.parts().clone();
    p.b = 0;
    let e = rejection(Bell::from_parts(p));
    assert_eq!(e, "Bell::from_parts: block size b = 0 (must be at least 1)");
    let mut p = sbell.parts().clone();
    p.b = 9;
    let e = rejection(Sbell::from_parts(p));
    assert_eq!(e, "Sbell::from_parts: block size b = 9 (must be 1..=8)");
    // Stored block rows out of order: the same check in BDIA and SBELL.
    let mut p = bdia.parts().clone();
    p.row_index.swap(0, 1);
    let e = rejection(Bdia::from_parts(p));
    assert!(
        e.contains("row_index is invalid at position 1: block row"),
        "{e}"
    );
    let mut p = sbell.parts().clone();
    p.row_index[0] = p.n_block_rows as u32;
    let e = rejection(Sbell::from_parts(p));
    assert!(
        e.contains("row_index[0]") && e.contains("out of range"),
        "{e}"
    );
    // ELL-style slots: a column that does not increase, in ELL and BELL.
    let ell = Ell::from_csr(&tridiagonal(40), &EllOptions::default()).unwrap();
    let mut p = ell.parts().clone();
    p.col_idx.swap(0, p.n_rows_pad);
    let e = rejection(Ell::from_parts(p));
    assert!(
        e.contains("row 0: column 0 does not increase over the previous 1"),
        "{e}"
    );
    let mut p = bell.parts().clone();
    let np = p.n_block_rows_pad;
    let (r, k) = (0..p.n_block_rows)
        .find_map(|r| (p.row_len[r] >= 2).then_some((r, 1)))
        .unwrap();
    p.block_col.swap(r, k * np + r);
    let e = rejection(Bell::from_parts(p));
    assert!(e.contains(&format!("block row {r}: block column")), "{e}");
}

/// The GPU twins of these tests (poisoned outputs, compared with the CPU or a reference).
mod gpu;
mod narrow;
