//! Mixed-precision storage (`f32` values, `f64` vectors): the `f32` x `f64` products equal
//! the `f64` products of the exactly widened matrix bit for bit (CPU here, GPU in
//! `sparse::gpu`), and the narrowing names an entry that overflows `f32`.

use crate::common::{assert_bits_eq, poison, random_coo, random_scalar, random_vec};
use ferrocuda::Complex;
use ferrocuda::blas1::Element;
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::narrow::{self, Narrow};
use ferrocuda::sparse::{
    Bcsr, BcsrParts, BlockLayout, Coo, Csr, CsrParts, MatrixScalar, Sbell, cpu,
};

/// The narrowed matrix widened back exactly (what the mixed product must equal).
pub(crate) fn widen_bcsr<T: Narrow>(a: &Bcsr<T::Narrow>) -> Bcsr<T> {
    let p = a.parts();
    Bcsr::from_parts(BcsrParts {
        b: p.b,
        layout: p.layout,
        n_block_rows: p.n_block_rows,
        n_block_cols: p.n_block_cols,
        row_ptr: p.row_ptr.clone(),
        col_idx: p.col_idx.clone(),
        values: p.values.iter().map(|&v| T::widen(v)).collect(),
    })
    .expect("widened bcsr")
}

pub(crate) fn widen_csr<T: Narrow>(a: &Csr<T::Narrow>) -> Csr<T> {
    let p = a.parts();
    Csr::from_parts(CsrParts {
        n_rows: p.n_rows,
        n_cols: p.n_cols,
        row_ptr: p.row_ptr.clone(),
        col_idx: p.col_idx.clone(),
        values: p.values.iter().map(|&v| T::widen(v)).collect(),
    })
    .expect("widened csr")
}

/// `y <- alpha A32 x (+ beta y)` against the same with the widened matrix, `y` poisoned
/// with NaN where `beta = 0`.
#[allow(clippy::eq_op)] // `v == v`: false only for NaN
fn check<V: Element>(
    what: &str,
    n_rows: usize,
    seed: u64,
    narrow_spmv: impl Fn(V, V, &mut [V]),
    wide_spmv: impl Fn(V, V, &mut [V]),
) {
    let alpha = random_scalar::<V>(seed);
    for beta in [V::ZERO, random_scalar::<V>(seed + 1)] {
        let start = if beta == V::ZERO {
            poison::<V>(n_rows)
        } else {
            random_vec::<V>(n_rows, seed + 2)
        };
        let (mut got, mut want) = (start.clone(), start);
        narrow_spmv(alpha, beta, &mut got);
        wide_spmv(alpha, beta, &mut want);
        assert!(got.iter().all(|v| v == v), "{what}: NaN left in y");
        assert_bits_eq(&format!("{what} beta {beta:?}"), &got, &want);
    }
}

/// CSR, BCSR (both layouts) and SBELL of matrix scalar `T` (narrowed to `T::Narrow`)
/// times vectors of `V`.
fn pair<T, V>()
where
    T: Narrow + MatrixScalar<V>,
    T::Narrow: MatrixScalar<V>,
    V: Element,
{
    let spec = TraceSpec::new(4, 6, 5, 3).seed(7);
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        let a = generate::trace_like::<T>(&spec)
            .expect("generate")
            .with_layout(layout);
        let a32 = narrow::bcsr_to_f32(&a).expect("narrow");
        let aw = widen_bcsr::<T>(&a32);
        let x = random_vec::<V>(a.n_cols(), 5);
        check::<V>(
            &format!("bcsr {layout:?}"),
            a.n_rows(),
            11,
            |al, be, y| cpu::spmv_bcsr(al, &a32, &x, be, y).expect("narrow"),
            |al, be, y| cpu::spmv_bcsr(al, &aw, &x, be, y).expect("wide"),
        );
        if layout == BlockLayout::RowMajor {
            let (s32, sw) = (
                Sbell::from_bcsr(&a32).expect("sbell"),
                Sbell::from_bcsr(&aw).expect("sbell"),
            );
            check::<V>(
                "sbell",
                a.n_rows(),
                12,
                |al, be, y| cpu::spmv_sbell(al, &s32, &x, be, y).expect("narrow"),
                |al, be, y| cpu::spmv_sbell(al, &sw, &x, be, y).expect("wide"),
            );
        }
    }
    for m in [1usize, 2, 3, 31, 32, 33, 255, 256, 257] {
        let a = Csr::from(&random_coo::<T>(m, 300, 0.05, m as u64));
        let a32 = narrow::csr_to_f32(&a).expect("narrow");
        let aw = widen_csr::<T>(&a32);
        let x = random_vec::<V>(300, m as u64 + 1);
        check::<V>(
            &format!("csr {m}x300"),
            m,
            13,
            |al, be, y| cpu::spmv_csr(al, &a32, &x, be, y).expect("narrow"),
            |al, be, y| cpu::spmv_csr(al, &aw, &x, be, y).expect("wide"),
        );
    }
}

#[test]
fn f32_storage_spmv_equals_widened_f64_bit_for_bit() {
    pair::<f64, f64>();
    pair::<f64, Complex<f64>>();
    pair::<Complex<f64>, Complex<f64>>();
}

#[test]
fn f32_storage_rejects_overflow_naming_the_entry() {
    let mut coo = Coo::<f64>::empty(4, 5).expect("coo");
    coo.push(0, 0, 1.0).expect("push");
    coo.push(2, 3, -1e39).expect("push");
    let a = Csr::from(&coo);
    let e = narrow::csr_to_f32(&a).unwrap_err().to_string();
    assert!(e.contains("(2, 3)") && e.contains("overflows f32"), "{e}");
    let mut coo = Coo::<Complex<f64>>::empty(4, 4).expect("coo");
    coo.push(3, 1, Complex::new(0.0, 1e300)).expect("push");
    let b = Bcsr::from_csr(
        &Csr::from(&coo),
        2,
        BlockLayout::ColMajor,
        ferrocuda::sparse::BlockFit::Exact,
    )
    .expect("bcsr");
    let e = narrow::bcsr_to_f32(&b).unwrap_err().to_string();
    assert!(e.contains("(3, 1)"), "{e}");
    // f32::MAX itself, tiny values (documented: become subnormal or zero), NaN kept.
    let mut coo = Coo::<f64>::empty(1, 4).expect("coo");
    coo.push(0, 0, f32::MAX as f64).expect("push");
    coo.push(0, 1, 1e-40).expect("push");
    coo.push(0, 2, 1e-50).expect("push");
    let v = narrow::csr_to_f32(&Csr::from(&coo))
        .expect("in range")
        .values()
        .to_vec();
    assert_eq!(v[0], f32::MAX);
    assert!(v[1] > 0.0 && v[1] < f32::MIN_POSITIVE, "{}", v[1]);
    assert_eq!(v[2], 0.0);
}
