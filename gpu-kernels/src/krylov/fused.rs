//! A whole GMRES restart cycle in one cooperative kernel: the operator (a sliced masked
//! BELL matrix), the delayed-CGS2 dots, their sums, the step's small algebra
//! ([`super::cycle`]) and the vector update, step after step, with grid barriers
//! between the phases and no host in the loop.
//!
//! Every phase computes what the kernels of a host-stepped cycle compute, in the same
//! order, so the steps and their bits are the same:
//! * the product: [`crate::spmv::spmv_sbell`]'s chains, one thread per matrix row;
//! * the dots: the blocks of a `gs_dots_partial` grid of `element_blocks x groups`
//!   blocks, run in turn by the blocks of this grid;
//! * their sums: as `sum_partials`, by every block itself where a set has at most
//!   [`SUMS_IN_BLOCK`] partials (no barrier), else one set per block;
//! * the algebra: every block runs it on its own copy of the cycle's state in shared
//!   memory (the same code on the same dots gives the same bits), so no block waits for
//!   another's coefficients;
//! * the update: `gs_update_device`'s per-element math over the grid.
//!
//! Three grid barriers per step (after the product, the dots and the update), four where
//! the sums need their own.

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
use crate::scalar::Scalar;
use crate::sparse::MatrixScalar;
// The instances name it on the device only.
#[allow(unused_imports)]
use crate::spmv::SBELL_MAX_B;
use crate::{instances, kernel};

use super::{BLOCK, DOTS_CHUNK, cycle, dcgs2_scratch_len, device_coef_len};

#[cfg(target_arch = "nvptx64")]
use super::{copy_in_block, copy_out_block, dcgs2_step_block, gs_dots_block, gs_update_columns};
#[cfg(target_arch = "nvptx64")]
use crate::blas1::{sum_partials_in_warp, sum_partials_of};
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    WARP_SIZE, block_idx, dynamic_shared, globaltimer, grid_dim, grid_sync, lane, sync_threads,
    thread_idx, warp,
};
#[cfg(target_arch = "nvptx64")]
use crate::scalar::RealScalar;
#[cfg(target_arch = "nvptx64")]
use crate::spmv::SbellArrays;

/// Threads per block of the cycle kernel (the dots' and the sums' block size).
pub const CYCLE_THREADS: usize = BLOCK;

/// Phases the cycle kernel times (block 0's `%globaltimer`, each phase with the grid
/// barrier that ends it): the product, the dots, their sums, the algebra, the update.
/// Their nanoseconds (as `f64`) follow the final state ([`cycle::state_len`]`(m)`).
pub const CYCLE_PHASES: usize = 5;

/// Bytes at the start of the dynamic shared memory for the block reductions (the dots'
/// warp sums, then the sums of the partials).
const fn reduce_bytes(scalar_bytes: usize) -> usize {
    2 * DOTS_CHUNK * (BLOCK / 32) * scalar_bytes
}

/// Dynamic shared memory of the cycle kernel, in bytes, for restart length `m` and a
/// vector scalar of `scalar_bytes` bytes: the reductions' area, the DCGS2 scratch
/// ([`dcgs2_scratch_len`]), the cycle's state ([`cycle::state_len`]), the step's
/// coefficients ([`device_coef_len`]) and its dots (`2 (m + 1)`).
pub const fn cycle_shared_bytes(m: usize, scalar_bytes: usize) -> usize {
    reduce_bytes(scalar_bytes)
        + 8 * (dcgs2_scratch_len(m) + cycle::state_len(m))
        + (device_coef_len(m) + 2 * (m + 1)) * scalar_bytes
}

/// Largest number of the dots' stage-one partials per set that every block sums itself
/// (one warp per set, [`crate::blas1`]'s `sum_partials_in_warp`); with more, one block
/// per set sums them and a grid barrier follows.
pub const SUMS_IN_BLOCK: usize = 32;

/// The scalars of [`gmres_cycle_sbell`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CycleSbellScalars {
    /// Rows of the system (of the basis vectors; column `j` starts at `j n`).
    pub n: usize,
    /// Restart length of the cycle (the state's layout).
    pub m: usize,
    /// Blocks of the dots' stage one: `blas1::reduction_blocks(n)`.
    pub element_blocks: usize,
    /// Stored block rows of the matrix.
    pub n_stored: usize,
    /// Stored block rows padded to whole slices (the length of `row_len`).
    pub n_stored_pad: usize,
    /// Empty block rows (`empty_rows`).
    pub n_empty: usize,
    /// Block size (ignored by the 5x5 instances).
    pub b: usize,
}

/// Runs the delayed-CGS2 GMRES cycle whose state is at `state` ([`cycle`], begun by the
/// host, `V_0` in column 0 of `basis`) to its end, the operator `A` the sliced masked
/// BELL matrix of the middle parameters (as [`crate::spmv::spmv_sbell`]'s, `B` and `N`
/// likewise), no preconditioner; leaves the final state at `state` and the basis as a
/// host-stepped cycle leaves it, and the time of each phase after the state
/// ([`CYCLE_PHASES`]; `state` holds `state_len(m) + CYCLE_PHASES` f64). Workspace: `w`
/// (`n`), `partials` (`2 (m + 1) element_blocks`), `dots` (`2 (m + 1)`), `barrier` (one
/// `u32`, zero before the first launch). Launch cooperatively with [`CYCLE_THREADS`] threads per
/// block and [`cycle_shared_bytes`] of dynamic shared memory.
#[kernel(args = GmresCycleSbell)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gmres_cycle_sbell<A: MatrixScalar<V>, V: Scalar, const B: usize, const N: usize>(
    p: CycleSbellScalars,
    row_index: *const u32,
    empty_rows: *const u32,
    row_len: *const u32,
    masks: *const u64,
    slice_col_ptr: *const usize,
    slice_val_ptr: *const usize,
    block_col: *const u32,
    values: *const A,
    basis: *mut V,
    w: *mut V,
    partials: *mut V,
    dots: *mut V,
    state: *mut f64,
    barrier: *mut u32,
) {
    let CycleSbellScalars {
        n,
        m,
        element_blocks,
        n_stored,
        n_stored_pad,
        n_empty,
        b,
    } = p;
    let a = SbellArrays {
        n_stored,
        n_stored_pad,
        n_empty,
        b,
        row_index,
        empty_rows,
        row_len,
        masks,
        slice_col_ptr,
        slice_val_ptr,
        block_col,
        values,
    };
    let len = cycle::state_len(m);
    // SAFETY (every shared access): the launch gave `cycle_shared_bytes(m, size_of V)`.
    let scratch = unsafe { dynamic_shared::<u8>().add(reduce_bytes(size_of::<V>())) } as *mut f64;
    let st = unsafe { scratch.add(dcgs2_scratch_len(m)) };
    let coef = unsafe { st.add(len) } as *mut V;
    let sums = unsafe { coef.add(device_coef_len(m)) };
    // Small reductions are summed by every block (no barrier), larger ones by one block
    // per set into `dots`.
    let in_block = element_blocks <= SUMS_IN_BLOCK;
    let step_dots = if in_block {
        sums as *const V
    } else {
        dots as *const V
    };
    unsafe { copy_in_block(st, state, len) };
    sync_threads();
    let done = || unsafe { *st.add(cycle::Header::DONE) } != 0.0;
    let mut ns = [0u64; CYCLE_PHASES];
    let mut then = globaltimer();
    let mut lap = |phase: usize| {
        let now = globaltimer();
        ns[phase] += now - then;
        then = now;
    };
    let mut k = 0;
    while !done() {
        let k1 = k + 1;
        // SAFETY: k <= m (the cycle ends at step m at the latest); the basis has m + 1
        // columns of n.
        let u = unsafe { basis.add(k * n) };
        let apply = k < m;
        if apply {
            unsafe { a.rows_product::<V, B, N>(V::ONE, u, V::ZERO, w) };
            unsafe { grid_sync(barrier) };
            lap(0);
        }
        let blocks = element_blocks * k1.div_ceil(DOTS_CHUNK);
        let mut vb = block_idx();
        while vb < blocks {
            let wv = if apply { w as *const V } else { u as *const V };
            // Two elements per load step, except for c64: the second element's registers
            // made the general-`B` kernel spill on sm_80 (same sums either way).
            if size_of::<V>() <= 8 {
                unsafe {
                    gs_dots_block::<V, V, true>(vb, blocks, n, k1, u, wv, basis, n, partials)
                };
            } else {
                unsafe {
                    gs_dots_block::<V, V, false>(vb, blocks, n, k1, u, wv, basis, n, partials)
                };
            }
            vb += grid_dim();
        }
        unsafe { grid_sync(barrier) };
        lap(1);
        if in_block {
            unsafe { sum_sets_in_block(element_blocks, 2 * k1, partials, sums) };
            sync_threads();
        } else {
            let mut set = block_idx();
            while set < 2 * k1 {
                let total = unsafe { sum_partials_of(element_blocks, partials, set) };
                if thread_idx() == 0 {
                    unsafe { *dots.add(set) = total };
                }
                set += grid_dim();
            }
            unsafe { grid_sync(barrier) };
        }
        lap(2);
        unsafe { dcgs2_step_block(k, m, len, step_dots, scratch, st, coef) };
        sync_threads();
        lap(3);
        if done() {
            break;
        }
        let (c, inv_alpha) = unsafe { (*coef.add(2 * m), (*coef.add(2 * m + 1)).re()) };
        unsafe { gs_update_columns(n, k, n, c, inv_alpha, coef, coef.add(m), w, basis) };
        unsafe { grid_sync(barrier) };
        lap(4);
        k += 1;
    }
    if block_idx() == 0 {
        unsafe { copy_out_block(state, st, len) };
        if thread_idx() == 0 {
            for (p, t) in ns.iter().enumerate() {
                // SAFETY: the host sized `state` for the phase times after the state.
                unsafe { *state.add(len + p) = *t as f64 };
            }
        }
    }
}

/// `out[s]` = the sum of the `count <= 32` partials of set `s < sets` (`partials[s count
/// ..]`), as `sum_partials` computes it, by this block alone: warp `w` takes sets `w, w +
/// warps, ...`, eight at a time, their loads issued before their sums.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sum_sets_in_block<T: Scalar>(count: usize, sets: usize, partials: *const T, out: *mut T) {
    let warps = CYCLE_THREADS / WARP_SIZE;
    let mut first = warp();
    while first < sets {
        let mut v = [T::ZERO; 8];
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
            let set = first + i * warps;
            if set < sets && lane() < count {
                v[i] = unsafe { *partials.add(set * count + lane()) };
            }
        });
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
            let set = first + i * warps;
            if set < sets {
                let total = sum_partials_in_warp(v[i], count);
                if lane() == 0 {
                    unsafe { *out.add(set) = total };
                }
            }
        });
        first += 8 * warps;
    }
}

/// The cycle kernels of one (matrix scalar, vector scalar) pair: every type with itself,
/// and the real types with their complex counterparts.
#[cfg(not(target_arch = "nvptx64"))]
pub trait CycleKernels<V: Scalar>: MatrixScalar<V> {
    /// `gmres_cycle_sbell5_<pair>`: 5x5 blocks.
    const SBELL5: Kernel<GmresCycleSbell<'static, Self, V>>;
    /// `gmres_cycle_sbell_<pair>`: `b <= 8` at run time.
    const SBELL: Kernel<GmresCycleSbell<'static, Self, V>>;
}

/// The entry points of one pair; the names are those the notes and `scripts/ptx-check`
/// refer to.
macro_rules! cycle_instances {
    ($a:ty, $v:ty, $sfx:literal) => {
        instances! {
            impl CycleKernels<$v> for $a {
                SBELL5 = gmres_cycle_sbell::<$a, $v, 5, 5>(concat!("gmres_cycle_sbell5_", $sfx));
                SBELL = gmres_cycle_sbell::<$a, $v, 0, SBELL_MAX_B>(concat!("gmres_cycle_sbell_", $sfx));
            }
        }
    };
}

cycle_instances!(f32, f32, "f32");
cycle_instances!(f64, f64, "f64");
cycle_instances!(num_complex::Complex<f32>, num_complex::Complex<f32>, "c32");
cycle_instances!(num_complex::Complex<f64>, num_complex::Complex<f64>, "c64");
cycle_instances!(f32, num_complex::Complex<f32>, "f32_c32");
cycle_instances!(f64, num_complex::Complex<f64>, "f64_c64");

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_holds_the_state_to_restart_length_thirty() {
        // The default 48 KiB hold the cycle up to m = 30 for every scalar.
        for bytes in [4, 8, 16] {
            assert!(cycle_shared_bytes(30, bytes) <= 48 * 1024, "{bytes}");
        }
        // The areas follow each other at 8-byte alignment.
        for bytes in [4, 8, 16] {
            assert_eq!(reduce_bytes(bytes) % 8, 0);
        }
        assert!(cycle_shared_bytes(31, 8) > cycle_shared_bytes(30, 8));
    }

    #[test]
    fn every_pair_has_its_entry_names() {
        use num_complex::Complex;
        assert_eq!(
            <f64 as CycleKernels<f64>>::SBELL5.name(),
            "gmres_cycle_sbell5_f64"
        );
        assert_eq!(
            <f32 as CycleKernels<Complex<f32>>>::SBELL.name(),
            "gmres_cycle_sbell_f32_c32"
        );
    }
}
