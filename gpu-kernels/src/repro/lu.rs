//! The LU factorisations without pivoting of Mißbach (2013), chapters 3 and 4, for the
//! reproduction tables of `ferrocuda-repro`: the right-looking unblocked LU in `f64`
//! (`thesis_lu_scale_f64`, `thesis_lu_update_f64`: the thesis's `DECOMPOSE_L` and
//! `DECOMPOSE_R` skeletons) and Rodinia's blocked LU in `f32` with block size
//! [`RODINIA_BS`] (`rodinia_lud_diagonal_f32`, `rodinia_lud_perimeter_f32`,
//! `rodinia_lud_internal_f32`). Column-major, element `(i, j)` at `a[i + j * n]`.

#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_idx, block_idx_y, dynamic_shared, for_each_strided, global_index, grid_stride,
    sync_threads, thread_idx,
};
use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::math::rank1;
#[cfg(target_arch = "nvptx64")]
use crate::scalar::Scalar;

/// Block size of the Rodinia-style blocked LU (Mißbach 2013, chapter 4).
pub const RODINIA_BS: usize = 16;

/// Unblocked LU step `k` (DECOMPOSE_L): `a[i, k] /= a[k, k]` for `i > k`.
#[kernel]
pub unsafe fn thesis_lu_scale_f64(n: usize, k: usize, a: *mut f64) {
    let pivot = unsafe { *a.add(k + k * n) };
    for_each_strided(k + 1 + global_index(), grid_stride(), n, |i| unsafe {
        *a.add(i + k * n) /= pivot
    });
}

/// Unblocked LU step `k` (DECOMPOSE_R): `a[i, j] -= a[i, k] a[k, j]` for
/// `i, j > k`; 16x16 threads per block (`i` fastest), blocks over `(i, j)` in x and y.
#[kernel]
pub unsafe fn thesis_lu_update_f64(n: usize, k: usize, a: *mut f64) {
    let t = thread_idx();
    let i = k + 1 + block_idx() * 16 + t % 16;
    let j = k + 1 + block_idx_y() * 16 + t / 16;
    if i < n && j < n {
        unsafe {
            let l = *a.add(i + k * n);
            let u = *a.add(k + j * n);
            let p = a.add(i + j * n);
            *p = rank1(*p, l, u);
        }
    }
}

/// Rodinia `lud_diagonal`: factorises the 16x16 diagonal block at `(offset, offset)`
/// in shared memory, one block of 16 threads (thread `t` owns row `t`).
#[kernel]
pub unsafe fn rodinia_lud_diagonal_f32(n: usize, offset: usize, a: *mut f32) {
    const BS: usize = RODINIA_BS;
    let s = dynamic_shared::<f32>(); // s[r + c * BS]
    let t = thread_idx();
    let base = unsafe { a.add(offset + offset * n) };
    for c in 0..BS {
        unsafe { *s.add(t + c * BS) = *base.add(t + c * n) };
    }
    sync_threads();
    for i in 0..BS - 1 {
        if t > i {
            unsafe {
                let l = *s.add(t + i * BS) / *s.add(i + i * BS);
                *s.add(t + i * BS) = l;
                for c in i + 1..BS {
                    *s.add(t + c * BS) = rank1(*s.add(t + c * BS), l, *s.add(i + c * BS));
                }
            }
        }
        sync_threads();
    }
    for c in 0..BS {
        unsafe { *base.add(t + c * n) = *s.add(t + c * BS) };
    }
}

/// Rodinia `lud_perimeter`: block `b` solves the row block right of the diagonal
/// block (`U12 = L11^{-1} A12`, threads 0..16, one column each) and the column block
/// below it (`L21 = A21 U11^{-1}`, threads 16..32, one row each), both the
/// `(b + 1)`-th block after `offset`.
#[kernel]
pub unsafe fn rodinia_lud_perimeter_f32(n: usize, offset: usize, a: *mut f32) {
    const BS: usize = RODINIA_BS;
    let dia = dynamic_shared::<f32>();
    let blk = unsafe { dia.add(BS * BS) }; // 2 blocks: row block, then column block
    let t = thread_idx();
    let off2 = offset + (block_idx() + 1) * BS;
    let dbase = unsafe { a.add(offset + offset * n) };
    let rbase = unsafe { a.add(offset + off2 * n) };
    let cbase = unsafe { a.add(off2 + offset * n) };
    let r = t % BS;
    for c in 0..BS {
        unsafe {
            if t < BS {
                *dia.add(r + c * BS) = *dbase.add(r + c * n);
                *blk.add(r + c * BS) = *rbase.add(r + c * n);
            } else {
                *blk.add(BS * BS + r + c * BS) = *cbase.add(r + c * n);
            }
        }
    }
    sync_threads();
    if t < BS {
        // Column t of the row block: forward substitution with unit-lower L11.
        for i in 1..BS {
            for p in 0..i {
                unsafe {
                    let x = blk.add(i + t * BS);
                    *x = rank1(*x, *dia.add(i + p * BS), *blk.add(p + t * BS));
                }
            }
        }
    } else {
        // Row r of the column block: x U11 = a.
        let cb = unsafe { blk.add(BS * BS) };
        for c in 0..BS {
            unsafe {
                let x = cb.add(r + c * BS);
                for p in 0..c {
                    *x = rank1(*x, *cb.add(r + p * BS), *dia.add(p + c * BS));
                }
                *x /= *dia.add(c + c * BS);
            }
        }
    }
    sync_threads();
    for c in 0..BS {
        unsafe {
            if t < BS {
                *rbase.add(r + c * n) = *blk.add(r + c * BS);
            } else {
                *cbase.add(r + c * n) = *blk.add(BS * BS + r + c * BS);
            }
        }
    }
}

/// Rodinia `lud_internal`: block `(bx, by)` of 16x16 threads updates the interior
/// block `(offset + (bx + 1) 16, offset + (by + 1) 16)` with the perimeter blocks.
#[kernel]
pub unsafe fn rodinia_lud_internal_f32(n: usize, offset: usize, a: *mut f32) {
    const BS: usize = RODINIA_BS;
    let sl = dynamic_shared::<f32>();
    let su = unsafe { sl.add(BS * BS) };
    let t = thread_idx();
    let (tx, ty) = (t % BS, t / BS);
    let gi = offset + (block_idx() + 1) * BS;
    let gj = offset + (block_idx_y() + 1) * BS;
    unsafe {
        *sl.add(tx + ty * BS) = *a.add(gi + tx + (offset + ty) * n);
        *su.add(tx + ty * BS) = *a.add(offset + tx + (gj + ty) * n);
    }
    sync_threads();
    let mut sum = 0.0f32;
    for p in 0..BS {
        sum = unsafe { *sl.add(tx + p * BS) }.mul_add(unsafe { *su.add(p + ty * BS) }, sum);
    }
    unsafe {
        let x = a.add(gi + tx + (gj + ty) * n);
        *x -= sum;
    }
}
