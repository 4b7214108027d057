//! GPU SpMV against the CPU path (bit for bit: same fused chain per row; ferrocuda's CSR
//! against its CPU twin in lanes), `Format::Auto` uploads against the CPU's choice, and
//! the vendor baseline (cuSPARSE CSR and BSR) against the serial f64 reference.

use crate::common;

use common::*;
use ferrocuda::blas1::{Element, reference as bref};
use ferrocuda::gpu::{DeviceBuffer, DeviceSlice, Gpu};
use ferrocuda::sparse::generate::{self, TraceSpec};
use ferrocuda::sparse::gpu::{
    DeviceBcsr, DeviceBdia, DeviceBell, DeviceCsr, DeviceEll, DeviceMatrix, DeviceSbell,
    SbellThreads, SpmvKernels, spmv_bcsr, spmv_bdia, spmv_bell, spmv_csr, spmv_ell, spmv_sbell,
};
use ferrocuda::sparse::{
    Bcsr, Bdia, BdiaOptions, Bell, BellOptions, BlockFit, BlockLayout, Csr, Ell, EllOptions,
    MatrixScalar, Sbell, cpu, reference,
};
use ferrocuda::vendor::cusparse::Cusparse;
use ferrocuda::{Complex, Error};

/// GPU `y <- alpha A x + beta y` checked bit for bit against the CPU (a NaN matching any
/// NaN: the GPU returns the canonical NaN where the CPU keeps an operand's payload), for
/// both a zero `beta` (with `y` poisoned: the kernel must write every row and not read
/// `y`) and a random one. `cpu` and `gpu` run the product of one matrix in one format.
fn check_gpu_matches_cpu<V: Element>(
    gpu: &Gpu,
    what: &str,
    n_rows: usize,
    x: &[V],
    seed: u64,
    cpu: impl Fn(V, &[V], V, &mut [V]) -> Result<(), ferrocuda::sparse::SparseError>,
    gpu_spmv: impl Fn(V, &DeviceBuffer<V>, V, &mut DeviceBuffer<V>) -> Result<(), Error>,
) {
    let y0 = random_vec::<V>(n_rows, seed + 1);
    let alpha = random_scalar::<V>(seed + 2);
    let dx = gpu.upload(x).expect("upload x");
    for beta in [V::ZERO, random_scalar::<V>(seed + 3)] {
        let start = if beta == V::ZERO {
            poison::<V>(n_rows)
        } else {
            y0.clone()
        };
        let mut want = start.clone();
        cpu(alpha, x, beta, &mut want).unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
        let mut dy = gpu.upload(&start).expect("upload y");
        gpu_spmv(alpha, &dx, beta, &mut dy).unwrap_or_else(|e| panic!("{what}: gpu: {e}"));
        let case = format!("{what} ({n_rows}x{}, beta {beta:?})", x.len());
        assert_bits_eq_nan(&case, &dy.download().expect("download y"), &want);
    }
}

fn check_bcsr<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let da = DeviceBcsr::upload(gpu, a).unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    check_gpu_matches_cpu(
        gpu,
        what,
        a.n_rows(),
        x,
        seed,
        |al, x, be, y| cpu::spmv_bcsr(al, a, x, be, y),
        |al, x, be, y| spmv_bcsr(al, &da, x, be, y),
    );
}

/// The device CSR kernel with `lanes` threads per row (`None`: the upload's choice)
/// against its CPU twin with the same lanes.
fn check_csr<A, V>(gpu: &Gpu, what: &str, a: &Csr<A>, lanes: Option<usize>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let da = match lanes {
        None => DeviceCsr::upload(gpu, a),
        Some(l) => DeviceCsr::upload_with_lanes(gpu, a, l),
    }
    .unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    let lanes = da.lanes();
    assert_eq!(
        (da.n_rows(), da.n_cols(), da.nnz()),
        (a.n_rows(), a.n_cols(), a.nnz())
    );
    check_gpu_matches_cpu(
        gpu,
        &format!("{what} ({lanes} lanes)"),
        a.n_rows(),
        x,
        seed,
        |al, x, be, y| cpu::spmv_csr_lanes(al, a, lanes, x, be, y),
        |al, x, be, y| spmv_csr(al, &da, x, be, y),
    );
}

fn check_bell<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let m =
        Bell::from_bcsr(a, &BellOptions::default()).unwrap_or_else(|e| panic!("{what}: bell: {e}"));
    let dm = DeviceBell::upload(gpu, &m).unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    check_gpu_matches_cpu(
        gpu,
        what,
        m.n_rows(),
        x,
        seed,
        |al, x, be, y| cpu::spmv_bell(al, &m, x, be, y),
        |al, x, be, y| spmv_bell(al, &dm, x, be, y),
    );
}

fn check_ell<A, V>(gpu: &Gpu, what: &str, m: &Ell<A>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let dm = DeviceEll::upload(gpu, m).unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    check_gpu_matches_cpu(
        gpu,
        what,
        m.n_rows(),
        x,
        seed,
        |al, x, be, y| cpu::spmv_ell(al, m, x, be, y),
        |al, x, be, y| spmv_ell(al, &dm, x, be, y),
    );
}

fn check_sbell<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let m = Sbell::from_bcsr(a).unwrap_or_else(|e| panic!("{what}: sbell: {e}"));
    let mut dm = DeviceSbell::upload(gpu, &m).unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    // Both thread mappings (a block row or a row per thread), whatever `Auto` picks.
    for threads in [SbellThreads::BlockRows, SbellThreads::Rows] {
        dm.set_threads(threads);
        check_gpu_matches_cpu(
            gpu,
            &format!("{what} {threads:?}"),
            m.n_rows(),
            x,
            seed,
            |al, x, be, y| cpu::spmv_sbell(al, &m, x, be, y),
            |al, x, be, y| spmv_sbell(al, &dm, x, be, y),
        );
    }
}

fn check_bdia<A, V>(gpu: &Gpu, what: &str, a: &Bcsr<A>, x: &[V], seed: u64)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let opts = BdiaOptions::default().max_diagonals(1000).min_fill(0.0);
    let m = Bdia::from_bcsr(a, &opts).unwrap_or_else(|e| panic!("{what}: bdia: {e}"));
    let dm = DeviceBdia::upload(gpu, &m).unwrap_or_else(|e| panic!("{what}: upload: {e}"));
    check_gpu_matches_cpu(
        gpu,
        what,
        m.n_rows(),
        x,
        seed,
        |al, x, be, y| cpu::spmv_bdia(al, &m, x, be, y),
        |al, x, be, y| spmv_bdia(al, &dm, x, be, y),
    );
}

fn random_bcsr<A: Element>(
    nbr: usize,
    nbc: usize,
    b: usize,
    layout: BlockLayout,
    seed: u64,
) -> Bcsr<A> {
    let p = (2.0 / (nbc * b) as f64).clamp(0.05, 1.0);
    let coo = random_coo::<A>(nbr * b, nbc * b, p, seed);
    Bcsr::from_csr(&Csr::from(&coo), b, layout, BlockFit::Exact).expect("bcsr")
}

fn bcsr_pair<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
        for b in [1, 2, 3, 5, 7] {
            for (nbr, nbc) in [(1, 1), (31, 17), (33, 40), (257, 256)] {
                let a = random_bcsr::<A>(nbr, nbc, b, layout, (b * 1000 + nbr) as u64);
                let x = random_vec::<V>(a.n_cols(), nbr as u64);
                check_bcsr::<A, V>(
                    gpu,
                    &format!("bcsr {name} {layout:?} b={b}"),
                    &a,
                    &x,
                    nbr as u64,
                );
                if layout == BlockLayout::RowMajor {
                    let seed = nbr as u64 + 5;
                    let x = random_vec::<V>(a.n_cols(), seed);
                    check_sbell::<A, V>(gpu, &format!("sbell {name} b={b} {nbr}"), &a, &x, seed);
                    check_bdia::<A, V>(gpu, &format!("bdia {name} b={b} {nbr}"), &a, &x, seed);
                }
            }
        }
        // The TRACE-like structure: ghost rows empty, 13-point stencil, 5x5 blocks.
        let spec = TraceSpec::new(4, 6, 5, 3).seed(7);
        let a = generate::trace_like::<A>(&spec)
            .expect("generate")
            .with_layout(layout);
        let x = random_vec::<V>(a.n_cols(), 99);
        check_bcsr::<A, V>(gpu, &format!("trace-like {name} {layout:?}"), &a, &x, 99);
        check_bell::<A, V>(gpu, &format!("trace-like bell {name}"), &a, &x, 99);
        check_sbell::<A, V>(gpu, &format!("trace-like sbell {name}"), &a, &x, 99);
        check_bdia::<A, V>(gpu, &format!("trace-like bdia {name}"), &a, &x, 99);
        let e = Ell::from_bcsr(&a, &EllOptions::default()).expect("ell");
        check_ell::<A, V>(
            gpu,
            &format!("trace-like ell (in-block zeros dropped) {name}"),
            &e,
            &x,
            99,
        );
        let csr = a.to_csr().without_zeros();
        check_csr::<A, V>(gpu, &format!("trace-like csr {name}"), &csr, None, &x, 99);
    }
}

/// Rows from empty to longer than a warp, on both sides of the block boundaries, with
/// every lane count and the upload's own choice.
fn csr_pair<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    for m in [1usize, 2, 3, 31, 32, 33, 255, 256, 257] {
        for (n, p) in [(m, 0.02), (40, 0.1), (300, 0.05), (100, 0.5)] {
            let seed = (m * 31 + n) as u64;
            let mut coo = random_coo::<A>(m, n, p, seed);
            coo.push(m - 1, n - 1, A::ZERO).expect("explicit zero");
            let a = Csr::from(&coo);
            let x = random_vec::<V>(n, seed + 1);
            let what = format!("csr {name} {m}x{n} p={p}");
            check_csr::<A, V>(gpu, &what, &a, None, &x, seed);
            if m == 257 {
                for lanes in [1, 2, 4, 8, 16, 32] {
                    check_csr::<A, V>(gpu, &what, &a, Some(lanes), &x, seed);
                }
            }
        }
    }
    // One dense row among empty ones (the arrow's long row) and a matrix without entries.
    let mut coo = ferrocuda::sparse::Coo::<A>::empty(70, 600).expect("coo");
    for j in 0..600 {
        coo.push(35, j, random_scalar::<A>(j as u64)).expect("push");
    }
    let x = random_vec::<V>(600, 3);
    check_csr::<A, V>(
        gpu,
        &format!("csr {name} one long row"),
        &Csr::from(&coo),
        Some(32),
        &x,
        3,
    );
    let empty = Csr::from(&ferrocuda::sparse::Coo::<A>::empty(40, 600).expect("coo"));
    check_csr::<A, V>(gpu, &format!("csr {name} empty"), &empty, None, &x, 4);
}

#[test]
fn csr_spmv_gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("csr_spmv_gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    each_scalar_pair!(csr_pair(&gpu));
}

/// `Format::Auto` (and each explicit format) on the GPU: the format the CPU's choice for
/// the GPU names, and the bits of that format's CPU product.
fn auto_upload<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    use ferrocuda::sparse::{Format, FormatOptions, Matrix, Storage, Target};
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    let spec = TraceSpec::new(3, 4, 3, 2).seed(11);
    let blocky = generate::trace_like::<A>(&spec)
        .expect("generate")
        .to_csr()
        .without_zeros();
    let mut tri = ferrocuda::sparse::Coo::<A>::empty(1024, 1024).expect("coo");
    for i in 0..1024 {
        tri.push(i, i, A::ONE).expect("push");
        if i + 1 < 1024 {
            tri.push(i, i + 1, random_scalar::<A>(i as u64))
                .expect("push");
            tri.push(i + 1, i, random_scalar::<A>(i as u64 + 7))
                .expect("push");
        }
    }
    let irregular = Csr::from(&random_coo::<A>(300, 257, 0.05, 9));
    let mats = [
        ("blocky", blocky),
        ("tridiagonal", Csr::from(&tri)),
        ("irregular", irregular),
    ];
    let mut seen = Vec::new();
    for (what, a) in &mats {
        let x = random_vec::<V>(a.n_cols(), 5);
        for format in [
            Format::Auto,
            Format::Csr,
            Format::Ell,
            Format::Bcsr,
            Format::Sbell,
        ] {
            let opts = FormatOptions::default();
            let host = match Matrix::with_options(a, format, Target::Gpu, &opts) {
                Ok(m) => m,
                Err(_) if format.is_blocked() && *what != "blocky" => continue,
                Err(e) => panic!("{what} {format}: {e}"),
            };
            let dm = DeviceMatrix::upload_with(gpu, a, format, &opts)
                .unwrap_or_else(|e| panic!("{what} {format}: upload: {e}"));
            assert_eq!(dm.choice(), host.choice(), "{what} {format}");
            seen.push(dm.format());
            let lanes = ferrocuda_kernels::spmv::csr_lanes(a.nnz(), a.n_rows());
            check_gpu_matches_cpu(
                gpu,
                &format!("{what} {format} -> {} {name}", dm.format()),
                a.n_rows(),
                &x,
                17,
                |al, x, be, y| match host.storage() {
                    Storage::Csr(c) => cpu::spmv_csr_lanes(al, c, lanes, x, be, y),
                    _ => host.spmv(al, x, be, y),
                },
                |al, x, be, y| dm.spmv(al, x, be, y),
            );
        }
    }
    // Auto chose each of the GPU's formats once: SBELL, ELL, CSR.
    for f in [Format::Sbell, Format::Ell, Format::Csr] {
        assert!(seen.contains(&f), "{name}: {seen:?}");
    }
}

/// Every format of [`DeviceMatrix`], chosen by `Format::Auto` or asked for, on matrices of
/// each structure (`common::sparse::structures`): the GPU product equals the f64 CSR
/// reference within the tolerance of `assert_matches_csr_reference` (`2 (k + 2) eps`
/// times the row's magnitude), for `beta = 0` on a NaN-poisoned `y` (every row written,
/// `y` not read) and for `beta != 0`. BDIA may refuse a matrix that is no block stencil.
#[test]
fn device_matrix_gpu_matches_csr_reference() {
    use common::sparse::{assert_matches_csr_reference, structures};
    use ferrocuda::sparse::{Format, SparseError};
    let Some(gpu) = gpu_or_skip("device_matrix_gpu_matches_csr_reference") else {
        return;
    };
    let mut chosen = Vec::new();
    for (what, a) in structures::<f64>(21) {
        let x = random_vec::<f64>(a.n_cols(), 5);
        let y0 = random_vec::<f64>(a.n_rows(), 6);
        let dx = gpu.upload(&x).expect("upload x");
        for format in Format::ALL {
            let dm = match DeviceMatrix::upload(&gpu, &a, format) {
                Ok(m) => m,
                Err(Error::Sparse(SparseError::NotStencil { .. })) if format == Format::Bdia => {
                    continue;
                }
                Err(e) => panic!("{what} {format}: upload: {e}"),
            };
            let case = format!("{what}: {format} -> {}", dm.format());
            assert_eq!(dm.choice().requested, format, "{case}");
            if format == Format::Auto {
                chosen.push(dm.format());
            } else {
                assert_eq!(dm.format(), format, "{case}");
            }
            assert_eq!(
                (dm.n_rows(), dm.n_cols()),
                (a.n_rows(), a.n_cols()),
                "{case}"
            );
            for (beta, start) in [(0.0, poison::<f64>(a.n_rows())), (0.75, y0.clone())] {
                let mut dy = gpu.upload(&start).expect("upload y");
                dm.spmv(1.25, &dx, beta, &mut dy)
                    .unwrap_or_else(|e| panic!("{case}: spmv: {e}"));
                let got = dy.download().expect("download y");
                let case = format!("{case}, beta {beta}");
                assert_matches_csr_reference(&case, &a, 1.25, &x, beta, &start, &got);
            }
        }
    }
    // The structures make Auto choose each of the GPU's formats but BCSR.
    for f in [Format::Sbell, Format::Ell, Format::Csr] {
        assert!(chosen.contains(&f), "{f} never chosen: {chosen:?}");
    }
}

#[test]
fn auto_format_upload_gpu_matches_cpu() {
    let Some(gpu) = gpu_or_skip("auto_format_upload_gpu_matches_cpu") else {
        return;
    };
    auto_upload::<f64, f64>(&gpu);
    auto_upload::<f32, f32>(&gpu);
    auto_upload::<Complex<f64>, Complex<f64>>(&gpu);
    auto_upload::<f64, Complex<f64>>(&gpu);
}

/// The problem-level path: `Format::Auto` upload, then GMRES on the device operator; the
/// solution solves the system on the CPU.
#[test]
fn gmres_runs_on_an_auto_uploaded_matrix() {
    use ferrocuda::krylov::{DeviceLinOp, GmresOptions, gpu as kgpu};
    use ferrocuda::sparse::{Format, FormatOptions};
    let Some(gpu) = gpu_or_skip("gmres_runs_on_an_auto_uploaded_matrix") else {
        return;
    };
    let spec = TraceSpec::new(3, 4, 3, 2).seed(2);
    let bcsr = generate::trace_like::<f64>(&spec).expect("generate");
    // Ghost rows are empty: give them a unit diagonal so that the system is regular.
    let mut coo = ferrocuda::sparse::Coo::from(&bcsr.to_csr().without_zeros());
    for bi in 0..bcsr.n_block_rows() {
        if bcsr.row_ptr()[bi] == bcsr.row_ptr()[bi + 1] {
            for r in 0..5 {
                coo.push(bi * 5 + r, bi * 5 + r, 1.0).expect("push");
            }
        }
    }
    let a = Csr::from(&coo);
    let n = a.n_rows();
    let b = random_vec::<f64>(n, 4);
    for (format, opts) in [
        (Format::Auto, FormatOptions::default()),
        (Format::Csr, FormatOptions::default()),
    ] {
        let dm = DeviceMatrix::upload_with(&gpu, &a, format, &opts).expect("upload");
        assert_eq!(DeviceLinOp::<f64>::nrows(&dm), n);
        let db = gpu.upload(&b).expect("upload b");
        let mut dx = gpu.alloc_zeroed::<f64>(n).expect("x");
        let opts = GmresOptions::default()
            .restart(60)
            .rtol(1e-10)
            .max_iter(2000);
        let r = kgpu::gmres(&dm, None, &db, &mut dx, &opts).expect("gmres");
        assert!(r.converged, "{}: {r:?}", dm.format());
        let x = dx.download().expect("download");
        let mut ax = vec![0.0; n];
        cpu::spmv_csr(1.0, &a, &x, 0.0, &mut ax).expect("spmv");
        let res: f64 = ax
            .iter()
            .zip(&b)
            .map(|(p, q)| (p - q) * (p - q))
            .sum::<f64>()
            .sqrt();
        let bn: f64 = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(
            res <= 1e-8 * bn,
            "{}: |b - A x| = {res}, |b| = {bn}",
            dm.format()
        );
    }
}

#[test]
fn csr_gpu_rejects_bad_lanes_and_lengths() {
    let Some(gpu) = gpu_or_skip("csr_gpu_rejects_bad_lanes_and_lengths") else {
        return;
    };
    let a = Csr::from(&random_coo::<f64>(20, 30, 0.3, 1));
    for lanes in [0, 3, 64] {
        match DeviceCsr::upload_with_lanes(&gpu, &a, lanes) {
            Err(Error::InvalidArgument { reason, .. }) => {
                assert!(reason.contains(&format!("lanes = {lanes}")), "{reason}")
            }
            Err(e) => panic!("lanes {lanes}: {e}"),
            Ok(_) => panic!("lanes {lanes} accepted"),
        }
    }
    let da = DeviceCsr::upload(&gpu, &a).expect("upload");
    let x_bad = gpu.upload(&[1.0f64; 29]).expect("upload");
    let y0 = vec![3.0f64; 20];
    let mut y = gpu.upload(&y0).expect("upload");
    assert!(matches!(
        spmv_csr(1.0, &da, &x_bad, 0.0, &mut y),
        Err(Error::DimensionMismatch {
            what: "x",
            expected: 30,
            found: 29,
            ..
        })
    ));
    assert_eq!(
        y.download().expect("download"),
        y0,
        "y changed by a failed call"
    );
}

#[test]
fn bcsr_spmv_gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("bcsr_spmv_gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    each_scalar_pair!(bcsr_pair(&gpu));
}

/// Matrices without stored rows, and without empty ones: every row of `y` still written.
#[test]
fn sbell_and_bdia_gpu_all_empty_and_no_empty_rows() {
    let Some(gpu) = gpu_or_skip("sbell_and_bdia_gpu_all_empty_and_no_empty_rows") else {
        return;
    };
    let empty = Bcsr::<f64>::from_csr(
        &Csr::from(&random_coo::<f64>(40, 35, 0.0, 1)),
        5,
        BlockLayout::RowMajor,
        BlockFit::Exact,
    )
    .expect("bcsr");
    let x = random_vec::<f64>(empty.n_cols(), 1);
    check_sbell::<f64, f64>(&gpu, "sbell all-empty", &empty, &x, 1);
    check_bdia::<f64, f64>(&gpu, "bdia all-empty", &empty, &x, 1);
    let full = random_bcsr::<f64>(70, 70, 5, BlockLayout::RowMajor, 3);
    let x = random_vec::<f64>(full.n_cols(), 2);
    check_sbell::<f64, f64>(&gpu, "sbell 70 rows", &full, &x, 2);
    check_bdia::<f64, f64>(&gpu, "bdia 70 rows", &full, &x, 2);
}

/// Infinities and NaNs in `x` against every GPU format: padding (in-block zeros, padding
/// slots and blocks, zeros inside SBELL masks, stored zeros) never multiplies them, and
/// each kernel gives the CPU twin's values (NaN for NaN), which agree across formats
/// (`tests/sparse.rs`). The blocked formats see `x` padded with NaN.
fn nonfinite_x_gpu<A, V>(gpu: &Gpu)
where
    A: Element + MatrixScalar<V> + SpmvKernels<V>,
    V: Element,
{
    let inf = V::from_real(<V::Real as ferrocuda::RealScalar>::from_f64(f64::INFINITY));
    let name = format!("{} x {}", tname::<A>(), tname::<V>());
    for (m, n, seed) in [(7usize, 9usize, 1u64), (33, 31, 3)] {
        let mut coo = random_coo::<A>(m, n, 0.3, seed);
        for i in (0..m).step_by(3) {
            coo.push(i, (i * 5) % n, A::ZERO).expect("explicit zero");
        }
        let csr = Csr::from(&coo);
        for poke in [
            vec![(0, inf)],
            vec![(n / 2, nan::<V>())],
            vec![(n - 1, -inf), (1, inf)],
        ] {
            let mut x = random_vec::<V>(n, seed + 10);
            for &(j, v) in &poke {
                x[j] = v;
            }
            let ell = Ell::from_csr(&csr, &EllOptions::default().drop_zeros(false)).expect("ell");
            check_ell::<A, V>(gpu, &format!("ell {name} {poke:?}"), &ell, &x, seed);
            for lanes in [1, 4, 32] {
                let what = format!("csr {name} {poke:?}");
                check_csr::<A, V>(gpu, &what, &csr, Some(lanes), &x, seed);
            }
            for b in [1, 2, 3, 5] {
                let a =
                    Bcsr::from_csr(&csr, b, BlockLayout::RowMajor, BlockFit::Pad).expect("bcsr");
                let mut xp = x.clone();
                xp.resize(a.n_cols(), nan::<V>());
                let what = |f: &str| format!("{f} {name} b={b} {m}x{n} {poke:?}");
                for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
                    let al = a.with_layout(layout);
                    check_bcsr::<A, V>(gpu, &what(&format!("bcsr {layout:?}")), &al, &xp, seed);
                }
                check_bell::<A, V>(gpu, &what("bell"), &a, &xp, seed);
                check_bdia::<A, V>(gpu, &what("bdia"), &a, &xp, seed);
                check_sbell::<A, V>(gpu, &what("sbell"), &a, &xp, seed);
            }
        }
    }
}

#[test]
fn nonfinite_x_spmv_gpu_matches_cpu() {
    let Some(gpu) = gpu_or_skip("nonfinite_x_spmv_gpu_matches_cpu") else {
        return;
    };
    nonfinite_x_gpu::<f64, f64>(&gpu);
    nonfinite_x_gpu::<f32, f32>(&gpu);
    nonfinite_x_gpu::<Complex<f32>, Complex<f32>>(&gpu);
    nonfinite_x_gpu::<Complex<f64>, Complex<f64>>(&gpu);
    nonfinite_x_gpu::<f64, Complex<f64>>(&gpu);
}

/// One product on the device: `y <- A x` for `(x, y)`.
type GpuSpmv<'a> = dyn Fn(&DeviceBuffer<f64>, &mut DeviceBuffer<f64>) -> Result<(), Error> + 'a;

/// The case on the GPU: `x = [1, inf, 3]`, row 3 = `[2, 0, 5]`, `y_3 = 17` in
/// every format and block size.
#[test]
fn infinity_in_x_meets_no_padding_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("infinity_in_x_meets_no_padding_on_the_gpu") else {
        return;
    };
    let a = Csr::try_new(
        3,
        3,
        vec![0, 2, 3, 6],
        vec![0, 1, 1, 0, 1, 2],
        vec![1.0, 2.0, 1.0, 2.0, 0.0, 5.0],
    )
    .expect("csr");
    let x = [1.0, f64::INFINITY, 3.0];
    let want = [f64::INFINITY, f64::INFINITY, 17.0];
    let run = |what: &str, n_rows: usize, xs: &[f64], f: &GpuSpmv<'_>| {
        let dx = gpu.upload(xs).expect("upload x");
        let mut dy = gpu.upload(&poison::<f64>(n_rows)).expect("upload y");
        f(&dx, &mut dy).unwrap_or_else(|e| panic!("{what}: {e}"));
        let y = dy.download().expect("download");
        assert_eq!(y[..3], want, "{what}");
    };
    let ell = DeviceEll::upload(
        &gpu,
        &Ell::from_csr(&a, &EllOptions::default()).expect("ell"),
    )
    .expect("upload");
    run("ell", 3, &x, &|dx, dy| spmv_ell(1.0, &ell, dx, 0.0, dy));
    for lanes in [1, 2, 32] {
        let c = DeviceCsr::upload_with_lanes(&gpu, &a, lanes).expect("upload");
        run(&format!("csr {lanes} lanes"), 3, &x, &|dx, dy| {
            spmv_csr(1.0, &c, dx, 0.0, dy)
        });
    }
    for b in [2, 3] {
        let bc = Bcsr::from_csr(&a, b, BlockLayout::RowMajor, BlockFit::Pad).expect("bcsr");
        let mut xp = x.to_vec();
        xp.resize(bc.n_cols(), f64::NAN);
        let n = bc.n_rows();
        let d = DeviceBcsr::upload(&gpu, &bc).expect("upload");
        run(&format!("bcsr b={b}"), n, &xp, &|dx, dy| {
            spmv_bcsr(1.0, &d, dx, 0.0, dy)
        });
        let m = Bell::from_bcsr(&bc, &BellOptions::default()).expect("bell");
        let d = DeviceBell::upload(&gpu, &m).expect("upload");
        run(&format!("bell b={b}"), n, &xp, &|dx, dy| {
            spmv_bell(1.0, &d, dx, 0.0, dy)
        });
        let m = Bdia::from_bcsr(&bc, &BdiaOptions::default().min_fill(0.0)).expect("bdia");
        let d = DeviceBdia::upload(&gpu, &m).expect("upload");
        run(&format!("bdia b={b}"), n, &xp, &|dx, dy| {
            spmv_bdia(1.0, &d, dx, 0.0, dy)
        });
        let m = Sbell::from_bcsr(&bc).expect("sbell");
        let d = DeviceSbell::upload(&gpu, &m).expect("upload");
        run(&format!("sbell b={b}"), n, &xp, &|dx, dy| {
            spmv_sbell(1.0, &d, dx, 0.0, dy)
        });
    }
}

#[test]
fn bcsr_spmv_gpu_rejects_wrong_lengths_and_leaves_y_unchanged() {
    let Some(gpu) = gpu_or_skip("bcsr_spmv_gpu_rejects_wrong_lengths_and_leaves_y_unchanged")
    else {
        return;
    };
    let a = random_bcsr::<f64>(4, 3, 5, BlockLayout::RowMajor, 1);
    let da = DeviceBcsr::upload(&gpu, &a).expect("upload");
    let x_bad = gpu.upload(&vec![1.0f64; a.n_cols() + 1]).expect("upload");
    let x = gpu.upload(&vec![1.0f64; a.n_cols()]).expect("upload");
    let y0 = vec![3.0f64; a.n_rows()];
    let mut y = gpu.upload(&y0).expect("upload");
    match spmv_bcsr(1.0, &da, &x_bad, 0.0, &mut y) {
        Err(Error::DimensionMismatch {
            what: "x",
            expected,
            found,
            ..
        }) => {
            assert_eq!((expected, found), (a.n_cols(), a.n_cols() + 1))
        }
        other => panic!("expected a dimension mismatch for x, got {other:?}"),
    }
    let mut y_bad = gpu.upload(&vec![0.0f64; a.n_rows() - 1]).expect("upload");
    assert!(matches!(
        spmv_bcsr(1.0, &da, &x, 0.0, &mut y_bad),
        Err(Error::DimensionMismatch { what: "y", .. })
    ));
    assert_eq!(
        y.download().expect("download"),
        y0,
        "y changed by a failed call"
    );
    assert_eq!(y.len(), a.n_rows());
}

/// cuSPARSE must be present on a GPU machine; it is the baseline of `bench spmv`.
fn cusparse_or_skip(gpu: &Gpu, test: &str) -> Option<Cusparse> {
    match Cusparse::new(gpu) {
        Ok(c) => Some(c),
        Err(e) if std::env::var("FERROCUDA_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("{test}: FERROCUDA_REQUIRE_GPU=1 but cuSPARSE is unavailable: {e}")
        }
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: cuSPARSE part skipped ({e})"
            );
            None
        }
    }
}

/// cuSPARSE CSR (`csr = true`) or BSR in both block layouts against the reference.
fn cusparse_matches_reference<T: ferrocuda::vendor::cusparse::CusparseScalar + MatrixScalar<T>>(
    test: &str,
    csr_path: bool,
    beta_zero: bool,
) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let Some(cs) = cusparse_or_skip(&gpu, test) else {
        return;
    };
    let spec = TraceSpec::new(4, 6, 5, 3).seed(3);
    let a = generate::trace_like::<T>(&spec).expect("generate");
    let csr = a.to_csr().without_zeros();
    let x = random_vec::<T>(a.n_cols(), 5);
    let y0 = random_vec::<T>(a.n_rows(), 6);
    let alpha = random_scalar::<T>(7);
    let beta = if beta_zero {
        T::ZERO
    } else {
        random_scalar::<T>(8)
    };
    let want = reference::spmv(alpha, &csr, &x, beta, &y0);
    let scale = reference::spmv_magnitude(alpha, &csr, &x, beta, &y0);
    let tol = 70.0 * 2.0 * bref::eps::<T>();
    let check = |what: &str, got: Vec<T>| {
        for (i, ((&g, w), &s)) in got.iter().zip(&want).zip(&scale).enumerate() {
            let g = bref::widen(g);
            assert!(
                (g - w).norm() <= tol * s + 1e-300,
                "{what} {}: row {i}: {g} vs {w}",
                tname::<T>()
            );
        }
    };
    let dx = gpu.upload(&x).expect("upload");
    if csr_path {
        let mut m = cs.upload_csr(&csr).expect("upload csr");
        let mut dy = gpu.upload(&y0).expect("upload");
        cs.spmv_csr(alpha, &mut m, &dx, beta, &mut dy)
            .expect("cusparse csr");
        check("cuSPARSE CSR", dy.download().expect("download"));
    } else {
        for layout in [BlockLayout::RowMajor, BlockLayout::ColMajor] {
            let bsr = cs.upload_bsr(&a.with_layout(layout)).expect("upload bsr");
            let mut dy = gpu.upload(&y0).expect("upload");
            cs.spmv_bsr(alpha, &bsr, &dx, beta, &mut dy)
                .expect("cusparse bsr");
            check(
                &format!("cuSPARSE BSR {layout:?}"),
                dy.download().expect("download"),
            );
        }
    }
}

macro_rules! cusparse_tests {
    ($($name:ident: $t:ty, $csr:expr, $beta_zero:expr;)*) => {
        $(
            #[test]
            fn $name() {
                cusparse_matches_reference::<$t>(stringify!($name), $csr, $beta_zero);
            }
        )*
    };
}

cusparse_tests! {
    cusparse_csr_f32_matches_reference: f32, true, false;
    cusparse_csr_f64_matches_reference: f64, true, false;
    cusparse_csr_c32_matches_reference: Complex<f32>, true, false;
    cusparse_csr_c64_matches_reference: Complex<f64>, true, false;
    cusparse_csr_c64_beta0_matches_reference: Complex<f64>, true, true;
    cusparse_bsr_f32_matches_reference: f32, false, false;
    cusparse_bsr_f64_matches_reference: f64, false, false;
    cusparse_bsr_c32_matches_reference: Complex<f32>, false, false;
    cusparse_bsr_c64_matches_reference: Complex<f64>, false, false;
}

/// Mixed-precision storage on the GPU (`f32` or `Complex<f32>` values, `f64` or
/// `Complex<f64>` vectors): every format against its CPU twin bit for bit (the pairs of
/// [`bcsr_pair`] and [`csr_pair`]), and the product of the narrowed matrix against the
/// `f64` CPU product of the exactly widened one (`y` poisoned with NaN where `beta = 0`).
#[test]
fn f32_storage_spmv_gpu_equals_widened_f64() {
    let Some(gpu) = gpu_or_skip("f32_storage_spmv_gpu_equals_widened_f64") else {
        return;
    };
    csr_pair::<f32, f64>(&gpu);
    bcsr_pair::<f32, f64>(&gpu);
    csr_pair::<f32, Complex<f64>>(&gpu);
    bcsr_pair::<f32, Complex<f64>>(&gpu);
    csr_pair::<Complex<f32>, Complex<f64>>(&gpu);
    bcsr_pair::<Complex<f32>, Complex<f64>>(&gpu);
    widened::<f64, f64>(&gpu);
    widened::<f64, Complex<f64>>(&gpu);
    widened::<Complex<f64>, Complex<f64>>(&gpu);
}

fn widened<T, V>(gpu: &Gpu)
where
    T: ferrocuda::sparse::narrow::Narrow + MatrixScalar<V>,
    T::Narrow: SpmvKernels<V>,
    V: Element,
{
    use super::narrow::{widen_bcsr, widen_csr};
    use ferrocuda::sparse::narrow;
    let spec = TraceSpec::new(4, 6, 5, 3).seed(7);
    let a = generate::trace_like::<T>(&spec).expect("generate");
    let a32 = narrow::bcsr_to_f32(&a).expect("narrow");
    let aw = widen_bcsr::<T>(&a32);
    let x = random_vec::<V>(a.n_cols(), 21);
    let db = DeviceBcsr::upload(gpu, &a32).expect("upload bcsr");
    let s32 = Sbell::from_bcsr(&a32).expect("sbell");
    let ds = DeviceSbell::upload(gpu, &s32).expect("upload sbell");
    let sw = Sbell::from_bcsr(&aw).expect("sbell");
    let c32 = a32.to_csr().without_zeros();
    let dc = DeviceCsr::upload(gpu, &c32).expect("upload csr");
    let cw = widen_csr::<T>(&c32);
    check_gpu_matches_cpu(
        gpu,
        "widened bcsr",
        a.n_rows(),
        &x,
        21,
        |al, x, be, y| cpu::spmv_bcsr(al, &aw, x, be, y),
        |al, x, be, y| spmv_bcsr(al, &db, x, be, y),
    );
    check_gpu_matches_cpu(
        gpu,
        "widened sbell",
        a.n_rows(),
        &x,
        22,
        |al, x, be, y| cpu::spmv_sbell(al, &sw, x, be, y),
        |al, x, be, y| spmv_sbell(al, &ds, x, be, y),
    );
    check_gpu_matches_cpu(
        gpu,
        "widened csr",
        a.n_rows(),
        &x,
        23,
        |al, x, be, y| cpu::spmv_csr_lanes(al, &cw, dc.lanes(), x, be, y),
        |al, x, be, y| spmv_csr(al, &dc, x, be, y),
    );
}
