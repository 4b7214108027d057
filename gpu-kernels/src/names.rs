//! Kernel names, shared by the entry points (device) and the launches (host). A
//! CPU-only test checks that every name in [`ALL`] is an `.entry` of the embedded PTX.

use num_complex::Complex;

use crate::scalar::Scalar;

/// Names of the BLAS-1 kernels of one scalar type.
#[derive(Debug, Clone, Copy)]
pub struct Blas1Names {
    /// `fill_<t>(n, value, x)`
    pub fill: &'static str,
    /// `scal_<t>(n, alpha, x)`
    pub scal: &'static str,
    /// `axpy_<t>(n, alpha, x, y)`
    pub axpy: &'static str,
    /// `axpby_<t>(n, alpha, x, beta, y)`
    pub axpby: &'static str,
    /// `copy_<t>(n, x, y)`
    pub copy: &'static str,
    /// `dot_partial_<t>(n, x, y, partials)`
    pub dot_partial: &'static str,
    /// `nrm2_partial_<t>(n, x, partials: *mut Real)`
    pub nrm2_partial: &'static str,
    /// `multi_dot_partial_<t>(n, k, x, ys, ld, partials)`
    pub multi_dot_partial: &'static str,
    /// `sum_partials_<t>(count, partials, out)`
    pub sum_partials: &'static str,
    /// `sqrt_sum_partials_<real>(count, partials, out)`: stage two of `nrm2`.
    pub sqrt_sum_partials: &'static str,
}

/// Scalar types that have BLAS-1 kernels.
pub trait Blas1Kernels: Scalar {
    /// This type's kernel names.
    const BLAS1: Blas1Names;
}

macro_rules! blas1_names {
    ($t:ty, $sfx:literal, $real_sfx:literal) => {
        impl Blas1Kernels for $t {
            const BLAS1: Blas1Names = Blas1Names {
                fill: concat!("fill_", $sfx),
                scal: concat!("scal_", $sfx),
                axpy: concat!("axpy_", $sfx),
                axpby: concat!("axpby_", $sfx),
                copy: concat!("copy_", $sfx),
                dot_partial: concat!("dot_partial_", $sfx),
                nrm2_partial: concat!("nrm2_partial_", $sfx),
                multi_dot_partial: concat!("multi_dot_partial_", $sfx),
                sum_partials: concat!("sum_partials_", $sfx),
                sqrt_sum_partials: concat!("sqrt_sum_partials_", $real_sfx),
            };
        }
    };
}

blas1_names!(f32, "f32", "f32");
blas1_names!(f64, "f64", "f64");
blas1_names!(Complex<f32>, "c32", "f32");
blas1_names!(Complex<f64>, "c64", "f64");

const fn blas1_list(n: Blas1Names) -> [&'static str; 10] {
    [
        n.fill,
        n.scal,
        n.axpy,
        n.axpby,
        n.copy,
        n.dot_partial,
        n.nrm2_partial,
        n.multi_dot_partial,
        n.sum_partials,
        n.sqrt_sum_partials,
    ]
}

/// Every kernel name the host may still ask for by name, in groups (BLAS-1 per scalar
/// type, then the thesis's SpMV variants per pair). Typed declarations
/// (SpMV, Krylov, block Jacobi, ...) are listed in `abi::KERNELS` instead.
pub const ALL: &[&[&str]] = &[
    &blas1_list(<f32 as Blas1Kernels>::BLAS1),
    &blas1_list(<f64 as Blas1Kernels>::BLAS1),
    &blas1_list(<Complex<f32> as Blas1Kernels>::BLAS1),
    &blas1_list(<Complex<f64> as Blas1Kernels>::BLAS1),
    &spmv_thesis_list(<f32 as SpmvThesisKernels<f32>>::SPMV_THESIS),
    &spmv_thesis_list(<f64 as SpmvThesisKernels<f64>>::SPMV_THESIS),
    &spmv_thesis_list(<Complex<f32> as SpmvThesisKernels<Complex<f32>>>::SPMV_THESIS),
    &spmv_thesis_list(<Complex<f64> as SpmvThesisKernels<Complex<f64>>>::SPMV_THESIS),
    &spmv_thesis_list(<f32 as SpmvThesisKernels<Complex<f32>>>::SPMV_THESIS),
    &spmv_thesis_list(<f64 as SpmvThesisKernels<Complex<f64>>>::SPMV_THESIS),
];

/// Names of the thesis's SpMV variants (`crate::spmv_thesis`) of one (matrix scalar,
/// vector scalar) pair. `_5` kernels have the block size 5 built in; the others take `b`.
#[derive(Debug, Clone, Copy)]
pub struct SpmvThesisNames {
    /// BCSR V1, thread per block: `(n_blocks, b, col_idx, values, x, tmp)`.
    pub bcsr_v1_5: &'static str,
    /// BCSR V1, `b` at run time; same arguments.
    pub bcsr_v1: &'static str,
    /// BCSR V2, thread per block row, row-major blocks; same arguments.
    pub bcsr_v2_5: &'static str,
    /// BCSR V2, `b` at run time; same arguments.
    pub bcsr_v2: &'static str,
    /// BCSR V3, thread per block row, column-major blocks; same arguments.
    pub bcsr_v3_5: &'static str,
    /// BCSR V3, `b` at run time; same arguments.
    pub bcsr_v3: &'static str,
    /// BCSR reduction: `(n_block_rows, b, alpha, row_ptr, map, tmp, beta, y)`.
    pub bcsr_reduce_5: &'static str,
    /// BCSR reduction, `b` at run time; same arguments.
    pub bcsr_reduce: &'static str,
    /// ELL subsections: `(n_rows, n_rows_pad, n_sub, sub_len, row_len, col_idx, values, x,
    /// tmp)`.
    pub ell_sub: &'static str,
    /// ELL reduction: `(n_rows, n_sub, alpha, row_index, tmp, beta, y)`.
    pub ell_reduce: &'static str,
    /// ELL V2: `(n_rows, n_rows_pad, alpha, row_len, col_idx, values, row_index, x, beta,
    /// y)`.
    pub ell_v2: &'static str,
    /// BELL with block-row map: `(n_block_rows, n_block_rows_pad, b, alpha, row_len,
    /// block_col, values, map, x, beta, y)`.
    pub bell_5: &'static str,
    /// BELL, `b` at run time; same arguments.
    pub bell: &'static str,
    /// BELL V2 (thread per block row); same arguments.
    pub bell_v2_5: &'static str,
    /// BELL V2, `b <= 8` at run time; same arguments.
    pub bell_v2: &'static str,
    /// BELL V3 (x window in shared memory): `(n_block_rows, n_block_rows_pad, b, alpha,
    /// row_len, block_col, values, map, window, x, beta, y)`.
    pub bell_v3_5: &'static str,
    /// BELL V3, `b` at run time; same arguments.
    pub bell_v3: &'static str,
    /// Ghost rows: `(n_block_rows, b, beta, rows, y)`.
    pub fill_rows: &'static str,
}

/// Matrix scalars with the thesis's SpMV kernels for vectors of `V`.
pub trait SpmvThesisKernels<V: Scalar>: Scalar {
    /// This pair's kernel names.
    const SPMV_THESIS: SpmvThesisNames;
}

macro_rules! spmv_thesis_names {
    ($a:ty, $v:ty, $sfx:literal) => {
        impl SpmvThesisKernels<$v> for $a {
            const SPMV_THESIS: SpmvThesisNames = SpmvThesisNames {
                bcsr_v1_5: concat!("thesis_bcsr_v1_5_", $sfx),
                bcsr_v1: concat!("thesis_bcsr_v1_", $sfx),
                bcsr_v2_5: concat!("thesis_bcsr_v2_5_", $sfx),
                bcsr_v2: concat!("thesis_bcsr_v2_", $sfx),
                bcsr_v3_5: concat!("thesis_bcsr_v3_5_", $sfx),
                bcsr_v3: concat!("thesis_bcsr_v3_", $sfx),
                bcsr_reduce_5: concat!("thesis_bcsr_reduce_5_", $sfx),
                bcsr_reduce: concat!("thesis_bcsr_reduce_", $sfx),
                ell_sub: concat!("thesis_ell_sub_", $sfx),
                ell_reduce: concat!("thesis_ell_reduce_", $sfx),
                ell_v2: concat!("thesis_ell_v2_", $sfx),
                bell_5: concat!("thesis_bell_5_", $sfx),
                bell: concat!("thesis_bell_", $sfx),
                bell_v2_5: concat!("thesis_bell_v2_5_", $sfx),
                bell_v2: concat!("thesis_bell_v2_", $sfx),
                bell_v3_5: concat!("thesis_bell_v3_5_", $sfx),
                bell_v3: concat!("thesis_bell_v3_", $sfx),
                fill_rows: concat!("thesis_fill_rows_", $sfx),
            };
        }
    };
}

spmv_thesis_names!(f32, f32, "f32");
spmv_thesis_names!(f64, f64, "f64");
spmv_thesis_names!(Complex<f32>, Complex<f32>, "c32");
spmv_thesis_names!(Complex<f64>, Complex<f64>, "c64");
spmv_thesis_names!(f32, Complex<f32>, "f32_c32");
spmv_thesis_names!(f64, Complex<f64>, "f64_c64");

const fn spmv_thesis_list(n: SpmvThesisNames) -> [&'static str; 18] {
    [
        n.bcsr_v1_5,
        n.bcsr_v1,
        n.bcsr_v2_5,
        n.bcsr_v2,
        n.bcsr_v3_5,
        n.bcsr_v3,
        n.bcsr_reduce_5,
        n.bcsr_reduce,
        n.ell_sub,
        n.ell_reduce,
        n.ell_v2,
        n.bell_5,
        n.bell,
        n.bell_v2_5,
        n.bell_v2,
        n.bell_v3_5,
        n.bell_v3,
        n.fill_rows,
    ]
}
