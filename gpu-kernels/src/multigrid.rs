//! Geometric multigrid for `-Laplace(u) = f` on `(0,1)^3` (seed 003): the per-point
//! math shared by the rayon CPU path (`ferrocuda::multigrid::cpu`) and, on the device,
//! the kernels.
//!
//! # Grids
//! A level has `n = b^k + 1` points per dimension (boundary included), stored
//! x-fastest: point `(x, y, z)` at `(z n + y) n + x` ([`idx`]). The boundary stays zero.
//! `h = 1 / (n - 1)`, the 7-point operator is `(A u)_p = (6 u_p - sum of the 6
//! neighbours) / h^2`.
//!
//! # Block smoother
//! The interior `1..=n-2` is cut into blocks of `s` points per dimension starting at
//! index 1 (block `q` covers `1 + q s .. 1 + q s + s - 1`; the last block per dimension is
//! cut at the boundary: with `s = b` it has `b - 1` points, as in the thesis). One
//! block update ([`smooth_block`]) forms the block's residual, solves the block's
//! residual equation `A_B e_B = r_B` (zero boundary around the block) by `iters`
//! lexicographic Gauss-Seidel sweeps and adds `e_B` (damped: `omega e_B`). The block,
//! its residual and all sweeps live in registers (one thread per block); the block and
//! its halo are read once and the block is written once. The residual is formed in
//! `f64` from the stored values and rounded once, and `u + omega e` is formed in `f64`
//! and rounded once, so `f32` keeps `u` to about an ulp (see [`smooth_block`]).
//!
//! The residual that is restricted to the coarse grid ([`residual_at`]) is formed in
//! `f64` from the stored values (for `f32`: `6 u - sum` of seven `f32` values is exact in
//! `f64`), then rounded once: `f32` residual noise of size `ulp(u) / h^2` would otherwise
//! reach the coarse grid and, through `A^-1`, put an error of about the discretisation
//! error into `u` on `1025^3` grids.
//!
//! # Transfers
//! Restriction ([`restrict_at`]): generalised full weighting, per dimension the fine
//! points at distance `d < b` from the coarse point weigh `(b - d) / b^2` (tensor
//! product), accumulated in `f64`. Interpolation ([`interp_at`]): trilinear for base
//! `b`, `(b - t) / b` and `t / b` for a fine point `t` fine steps past a coarse point.
//!
//! # Registers
//! One thread holds its block's values `v` and right-hand side `r`: `2 S^3` scalars.
//! Up to 256 bytes of `r` (edges 1-4 in `f32`, 1-3 in `f64`) both live in registers
//! without spills; above that the kernel keeps `r` in shared memory ([`Strided`], this
//! thread's values a thread-block apart, [`smoother_threads`] threads per block so it
//! fits in 48 KiB) and only `v` in registers. That cuts the spills of those kernels but
//! does not end them: `v` alone is 128 registers (edge 4, `f64`) to 432 (edge 6, `f64`),
//! and the residual's halo loads are scheduled ahead of it, so edge 4 in `f64` and edges
//! 5 and 6 still spill (`scripts/ptx-check` exempts them by name). The bandwidth-bound
//! edges (1-4 in `f32`, 1-3 in `f64`) do not spill.
//!
//! # Coarsest grid
//! `b + 1` points per dimension, `m = b - 1` unknowns each: solved exactly by the
//! discrete sine transform, `u = S3 diag(w) S3 f` with `S[i][j] = sin(pi (i+1)(j+1) / b)`
//! and `w` the inverse eigenvalues times `(2 / b)^3`, in six one-dimensional passes
//! ([`coarse_point`]); the tables come from the host in `f64`.

use crate::math::fma_f64;
use crate::scalar::RealScalar;

/// `for $i in 0..$n { $body }` unrolled for `$n <= MAX_GPU_BLOCK` (a constant): each copy
/// binds `$i` to a literal, so array indices in `$body` are constants.
macro_rules! unroll {
    ($n:expr, $i:ident, $body:block) => {
        unroll!(@each $n, $i, $body, 0 1 2 3 4 5)
    };
    (@each $n:expr, $i:ident, $body:block, $($k:literal)*) => {{
        $(
            if $k < $n {
                let $i: usize = $k;
                $body
            }
        )*
    }};
}

/// Threads per block (along x) of the point-wise and block-smoother kernels.
pub const THREADS: usize = 128;
/// Threads per block of the norm kernel (one block per z-plane) and the coarse solve.
pub const NORM_THREADS: usize = 256;
/// Largest block edge the device smoother kernels are built for.
pub const MAX_GPU_BLOCK: usize = 6;

/// Bytes of a block's right-hand side above which the smoother kernel keeps it in shared
/// memory instead of registers (the block's correction stays in registers): edge 4 in
/// `f64` and edges 5 and 6 (module docs, "Registers").
pub const SMOOTHER_REGISTER_RHS_BYTES: usize = 256;

/// Shared-memory bytes per thread of the smoother kernel for edge `s` and scalars of
/// `elem` bytes: the block's right-hand side where it does not fit in registers, else 0.
pub const fn smoother_shared_bytes_per_thread(s: usize, elem: usize) -> usize {
    let b = s * s * s * elem;
    if b > SMOOTHER_REGISTER_RHS_BYTES {
        b
    } else {
        0
    }
}

/// Threads per thread block of the smoother kernel for edge `s` and scalars of `elem`
/// bytes: [`THREADS`], halved until the shared memory fits in 48 KiB.
pub const fn smoother_threads(s: usize, elem: usize) -> usize {
    let b = smoother_shared_bytes_per_thread(s, elem);
    let mut t = THREADS;
    while t > 1 && t * b > 48 * 1024 {
        t /= 2;
    }
    t
}

/// Where a block update keeps the block's right-hand side, indexed `(z, y, x)` inside
/// the block of edge `S`.
pub trait RhsStore<T: RealScalar, const S: usize> {
    /// The value at `(z, y, x)`.
    fn get(&self, z: usize, y: usize, x: usize) -> T;
    /// Sets the value at `(z, y, x)`.
    fn set(&mut self, z: usize, y: usize, x: usize, v: T);
}

/// The right-hand side in a local array; the loops over the block are unrolled, so
/// every index is a constant and the array lives in registers.
pub struct InRegisters<T, const S: usize>(pub [[[T; S]; S]; S]);

impl<T: RealScalar, const S: usize> RhsStore<T, S> for InRegisters<T, S> {
    #[inline(always)]
    fn get(&self, z: usize, y: usize, x: usize) -> T {
        self.0[z][y][x]
    }
    #[inline(always)]
    fn set(&mut self, z: usize, y: usize, x: usize, v: T) {
        self.0[z][y][x] = v;
    }
}

/// The right-hand side in memory owned by one thread: value `k = (z S + y) S + x` at
/// `base + k stride` (in shared memory with `stride` = threads per block, so the threads
/// of a warp touch consecutive words).
pub struct Strided<T> {
    /// This thread's first value.
    pub base: *mut T,
    /// Distance between consecutive values.
    pub stride: usize,
}

impl<T: RealScalar, const S: usize> RhsStore<T, S> for Strided<T> {
    /// A volatile read: otherwise LLVM hoists the loads of all `S^3` values out of the
    /// Gauss-Seidel loop (nothing in it writes them) back into registers.
    #[inline(always)]
    fn get(&self, z: usize, y: usize, x: usize) -> T {
        // SAFETY: the creator of the store owns S^3 values at this stride.
        unsafe { core::ptr::read_volatile(self.base.add(((z * S + y) * S + x) * self.stride)) }
    }
    #[inline(always)]
    fn set(&mut self, z: usize, y: usize, x: usize, v: T) {
        // SAFETY: as in get.
        unsafe { core::ptr::write_volatile(self.base.add(((z * S + y) * S + x) * self.stride), v) }
    }
}

/// Smoother mode: every block (block Jacobi out of place, or the racy in-place variant).
pub const MODE_ALL: u32 = 0;
/// Smoother mode: only the red blocks, `qx + qy + qz` even (in place).
pub const MODE_RED: u32 = 1;
/// Smoother mode: only the black blocks, `qx + qy + qz` odd (in place).
pub const MODE_BLACK: u32 = 2;

/// Sets of the norm kernel's partials: `sum r^2`, `sum (u - u_exact)^2`,
/// `sum (u - u_discrete)^2`.
pub const NORM_SETS: usize = 3;

/// Index of point `(x, y, z)` in an `n^3` grid.
#[inline(always)]
pub fn idx(n: usize, x: usize, y: usize, z: usize) -> usize {
    (z * n + y) * n + x
}

/// Blocks of `s` points per dimension covering the interior `1..=n-2`.
#[inline(always)]
pub const fn blocks_per_dim(n: usize, s: usize) -> usize {
    (n - 2).div_ceil(s)
}

/// Threads along x per row of blocks in `mode` (half the blocks, rounded up, for one colour).
#[inline(always)]
pub const fn smoother_threads_x(nblocks: usize, mode: u32) -> usize {
    if mode == MODE_ALL {
        nblocks
    } else {
        nblocks.div_ceil(2)
    }
}

/// The block index `qx` that thread `t` of row `(qy, qz)` updates in `mode`, if any.
#[inline(always)]
pub fn block_of_thread(mode: u32, t: usize, qy: usize, qz: usize, nblocks: usize) -> Option<usize> {
    let qx = if mode == MODE_ALL {
        t
    } else {
        2 * t + ((qy + qz + mode as usize - 1) & 1)
    };
    if qx < nblocks { Some(qx) } else { None }
}

/// `1/6` as `hi + lo` in `T`: `hi` rounded, `lo` the rest. Multiplying by `hi` alone
/// would scale every Gauss-Seidel update by `1 + 3e-8` in `f32` (a bias, not noise).
#[inline(always)]
pub fn sixth<T: RealScalar>() -> (T, T) {
    let hi = T::from_f64(1.0 / 6.0);
    (hi, T::from_f64(1.0 / 6.0 - hi.to_f64()))
}

/// One Gauss-Seidel update of the block correction: `(sum + rho6 * 6) / 6` written as
/// `sum hi + (sum lo + rho6)` ([`sixth`]), where `rho6 = rho / 6`.
#[inline(always)]
pub fn gs_update<T: RealScalar>(sum: T, hi: T, lo: T, rho6: T) -> T {
    sum.mul_add(hi, sum.mul_add(lo, rho6))
}

/// The scaled residual `h^2 f - (6 c - sum)` of a point with value `c`, right-hand side
/// `f` and neighbour sum `sum` (`f64`: for `f32` inputs `6 c - sum` is exact), over 6:
/// the block smoother's right-hand side, rounded once to `T`.
#[inline(always)]
pub fn block_rhs<T: RealScalar>(h2: f64, f: T, c: T, sum: f64) -> T {
    let lap = fma_f64(-6.0, c.to_f64(), sum);
    T::from_f64(fma_f64(h2, f.to_f64(), lap) * (1.0 / 6.0))
}

/// The new value of a point after a block update: `old + omega e`, in `f64`, rounded
/// once.
#[inline(always)]
pub fn block_result<T: RealScalar>(old: T, e: T, omega: f64) -> T {
    T::from_f64(fma_f64(omega, e.to_f64(), old.to_f64()))
}

/// One fused block update (module docs): loads block `q` of edge `S` and its halo from
/// `u_in` and `f`, forms the block's residual (in `f64`, rounded once), solves the
/// residual equation `A_B e = r_B` (zero around the block) by `iters` lexicographic
/// Gauss-Seidel sweeps on `e` in registers, and writes `u + omega e` to `u_out`.
/// `h2 = h^2`.
///
/// The residual form keeps `f32` accurate: `e` is small, so its rounding is far below
/// `ulp(u)`, and `u + omega e` is rounded once. (The update form `u <- (sum + h^2 f) / 6`
/// gives the same iterates in exact arithmetic, but in `f32` a converged block sits at a
/// rounding fixed point whose noise the block inverse amplifies, up to `1 / (1 -
/// cos(pi / (S + 1)))` times: about 3 times the point smoothers' floor for `S = 2`.)
///
/// `u_out` may be `u_in` (in place) when no other thread writes this block's halo
/// meanwhile (red-black order), or when the caller accepts the race (the thesis's SBL).
///
/// # Safety
/// `u_in`, `f`, `u_out` address `n^3` values, `n >= 3`, and `q` is a block of
/// [`blocks_per_dim`]`(n, S)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn smooth_block<T: RealScalar, const S: usize>(
    n: usize,
    q: [usize; 3],
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
) {
    let mut r = InRegisters([[[T::ZERO; S]; S]; S]);
    unsafe { smooth_block_with::<T, S, _>(n, q, iters, h2, omega, u_in, f, u_out, &mut r) }
}

/// [`smooth_block`] with the block's right-hand side kept in `r` (registers or shared
/// memory): the same arithmetic in the same order, so the same result bit for bit.
///
/// # Safety
/// As [`smooth_block`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn smooth_block_with<T: RealScalar, const S: usize, R: RhsStore<T, S>>(
    n: usize,
    q: [usize; 3],
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
    r: &mut R,
) {
    const { assert!(S >= 1 && S <= MAX_GPU_BLOCK) };
    let o = [1 + q[0] * S, 1 + q[1] * S, 1 + q[2] * S];
    let e = [
        min(S, n - 1 - o[0]),
        min(S, n - 1 - o[1]),
        min(S, n - 1 - o[2]),
    ];
    // Interior blocks take the branch without per-point checks (constant-folded).
    if e[0] == S && e[1] == S && e[2] == S {
        unsafe {
            smooth_block_in::<T, S, R>(n, o, [S; 3], true, iters, h2, omega, u_in, f, u_out, r)
        }
    } else {
        unsafe { smooth_block_in::<T, S, R>(n, o, e, false, iters, h2, omega, u_in, f, u_out, r) }
    }
}

#[inline(always)]
fn min(a: usize, b: usize) -> usize {
    if a < b { a } else { b }
}

/// [`smooth_block`] for origin `o` and active extents `e` (`full`: all `S^3` active).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn smooth_block_in<T: RealScalar, const S: usize, R: RhsStore<T, S>>(
    n: usize,
    o: [usize; 3],
    e: [usize; 3],
    full: bool,
    iters: u32,
    h2: f64,
    omega: f64,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
    r: &mut R,
) {
    let (hi, lo) = sixth::<T>();
    let nn = n * n;
    let active = |x: usize, y: usize, z: usize| full || (x < e[0] && y < e[1] && z < e[2]);
    // `v` holds the block's `u`, then its correction `e`; `r` the right-hand side.
    // The loops over the block are unrolled (`unroll!`), so every array index is a
    // constant and the block lives in registers.
    let mut v = [[[T::ZERO; S]; S]; S];
    unroll!(S, z, {
        unroll!(S, y, {
            unroll!(S, x, {
                if active(x, y, z) {
                    // SAFETY: active points are interior.
                    v[z][y][x] = unsafe { *u_in.add(idx(n, o[0] + x, o[1] + y, o[2] + z)) };
                }
            })
        })
    });
    unroll!(S, z, {
        unroll!(S, y, {
            unroll!(S, x, {
                if active(x, y, z) {
                    let g = idx(n, o[0] + x, o[1] + y, o[2] + z);
                    // In-block neighbours from registers (zero where a neighbour is the
                    // boundary), the halo from memory.
                    // SAFETY: active points are interior, so every neighbour is in the grid.
                    let sum = unsafe {
                        (if x > 0 {
                            v[z][y][x.wrapping_sub(1)]
                        } else {
                            *u_in.add(g - 1)
                        })
                        .to_f64()
                            + (if x + 1 < S {
                                v[z][y][x + 1]
                            } else {
                                *u_in.add(g + 1)
                            })
                            .to_f64()
                            + (if y > 0 {
                                v[z][y.wrapping_sub(1)][x]
                            } else {
                                *u_in.add(g - n)
                            })
                            .to_f64()
                            + (if y + 1 < S {
                                v[z][y + 1][x]
                            } else {
                                *u_in.add(g + n)
                            })
                            .to_f64()
                            + (if z > 0 {
                                v[z.wrapping_sub(1)][y][x]
                            } else {
                                *u_in.add(g - nn)
                            })
                            .to_f64()
                            + (if z + 1 < S {
                                v[z + 1][y][x]
                            } else {
                                *u_in.add(g + nn)
                            })
                            .to_f64()
                    };
                    // SAFETY: g is in the grid.
                    r.set(
                        z,
                        y,
                        x,
                        block_rhs(h2, unsafe { *f.add(g) }, v[z][y][x], sum),
                    );
                }
            })
        })
    });
    // Blocks of 2 in `f32` keep their old values in registers for the final write (no
    // more registers: 54 either way on sm_90); the others read them again, which waits on
    // the stores before each read (`u_out` may be `u_in`). Either way the values of this
    // thread's own block, which no other thread writes meanwhile: the same bits.
    let old = v;
    v = [[[T::ZERO; S]; S]; S];
    for _ in 0..iters {
        unroll!(S, z, {
            unroll!(S, y, {
                unroll!(S, x, {
                    if active(x, y, z) {
                        // -0.0 + w == w exactly, so the first addition folds away.
                        let mut s = -T::ZERO;
                        if x > 0 {
                            s = s + v[z][y][x.wrapping_sub(1)];
                        }
                        if x + 1 < S {
                            s = s + v[z][y][x + 1];
                        }
                        if y > 0 {
                            s = s + v[z][y.wrapping_sub(1)][x];
                        }
                        if y + 1 < S {
                            s = s + v[z][y + 1][x];
                        }
                        if z > 0 {
                            s = s + v[z.wrapping_sub(1)][y][x];
                        }
                        if z + 1 < S {
                            s = s + v[z + 1][y][x];
                        }
                        v[z][y][x] = gs_update(s, hi, lo, r.get(z, y, x));
                    }
                })
            })
        });
    }
    unroll!(S, z, {
        unroll!(S, y, {
            unroll!(S, x, {
                if active(x, y, z) {
                    let g = idx(n, o[0] + x, o[1] + y, o[2] + z);
                    let before = if S <= 2 && size_of::<T>() <= 4 {
                        old[z][y][x]
                    } else {
                        // SAFETY: g is an interior point; its old value is read before
                        // this thread writes it.
                        unsafe { *u_in.add(g) }
                    };
                    // SAFETY: g is an interior point.
                    unsafe { *u_out.add(g) = block_result(before, v[z][y][x], omega) };
                }
            })
        })
    });
}

/// A 3D array seen from one point: `(x, y, z)` from there at `at + x + y sy + z sz`
/// (a grid's `sy = n`, `sz = n^2`; a tile in shared memory has its own strides).
#[derive(Debug, Clone, Copy)]
pub struct View<P> {
    /// The point `(0, 0, 0)`.
    pub at: P,
    /// Distance between rows.
    pub sy: usize,
    /// Distance between planes.
    pub sz: usize,
}

impl<P> View<P> {
    /// The view at `at` with strides `sy`, `sz`.
    #[inline(always)]
    pub fn new(at: P, sy: usize, sz: usize) -> Self {
        View { at, sy, sz }
    }

    #[inline(always)]
    fn offset(&self, x: usize, y: usize, z: usize) -> usize {
        x + y * self.sy + z * self.sz
    }
}

/// The residual `f - A u` at interior point `g` of an `n^3` grid, formed in `f64`
/// (module docs); `inv_h2 = 1 / h^2`.
///
/// # Safety
/// `g` is an interior point; `u` and `f` address `n^3` values.
#[inline(always)]
pub unsafe fn residual_at<T: RealScalar>(
    n: usize,
    g: usize,
    inv_h2: f64,
    u: *const T,
    f: *const T,
) -> f64 {
    let nn = n * n;
    // SAFETY: the neighbours of an interior point are in the grid.
    unsafe {
        let s = (*u.add(g - 1)).to_f64()
            + (*u.add(g + 1)).to_f64()
            + (*u.add(g - n)).to_f64()
            + (*u.add(g + n)).to_f64()
            + (*u.add(g - nn)).to_f64()
            + (*u.add(g + nn)).to_f64();
        let lap = fma_f64(6.0, (*u.add(g)).to_f64(), -s);
        fma_f64(-lap, inv_h2, (*f.add(g)).to_f64())
    }
}

/// Generalised full weighting of the fine grid `r` (`nf` points per dimension, base
/// `b`) at interior coarse point `(xc, yc, zc)`, accumulated in `f64` with integer
/// weights `(b - |dx|)(b - |dy|)(b - |dz|)` and scaled by `inv_b6 = 1 / b^6` once.
///
/// # Safety
/// `(xc, yc, zc)` is an interior coarse point and `r` addresses `nf^3` values.
#[inline(always)]
pub unsafe fn restrict_at<T: RealScalar>(
    nf: usize,
    b: usize,
    inv_b6: f64,
    xc: usize,
    yc: usize,
    zc: usize,
    r: *const T,
) -> T {
    let (x0, y0, z0) = (b * xc - (b - 1), b * yc - (b - 1), b * zc - (b - 1));
    // SAFETY: the support of an interior coarse point is inside the fine grid.
    let support = View::new(unsafe { r.add(idx(nf, x0, y0, z0)) }, nf, nf * nf);
    // Base 2 (the default hierarchy) takes a copy with the loops unrolled: with the
    // width a run-time value the 27 loads wait one after the other on the chain of
    // additions (about 5x slower on the 1025^3 grid); the sum is the same, in the same
    // order, so the same bits.
    // SAFETY: forwarded.
    let acc = unsafe {
        if b == 2 {
            restrict_sum::<T, 2>(2, support)
        } else {
            restrict_sum::<T, 0>(b, support)
        }
    };
    T::from_f64(acc * inv_b6)
}

/// The weighted sum of [`restrict_at`] before the scaling, for base `b`, over the
/// support `r` of one coarse point (`(2 b - 1)^3` fine values from its first); `B` is `b`
/// built in (the loops unrolled), or 0 for any `b`.
///
/// # Safety
/// `r` addresses the `(2 b - 1)^3` values.
#[inline(always)]
pub unsafe fn restrict_sum<T: RealScalar, const B: usize>(b: usize, r: View<*const T>) -> f64 {
    let b = if B > 0 { B } else { b };
    let width = 2 * b - 1;
    let weight = |d: usize| if d < b { d + 1 } else { width - d } as f64;
    let mut acc = 0.0f64;
    for dz in 0..width {
        let wz = weight(dz);
        for dy in 0..width {
            let wzy = wz * weight(dy);
            let row = r.offset(0, dy, dz);
            for dx in 0..width {
                // SAFETY: the caller's promise.
                let v = unsafe { *r.at.add(row + dx) }.to_f64();
                acc = fma_f64(wzy * weight(dx), v, acc);
            }
        }
    }
    acc
}

/// Trilinear interpolation (base `b`) of the coarse grid `uc` (`nc` points per
/// dimension) at interior fine point `(x, y, z)`, in `f64`: integer weights
/// `(b - t)` / `t` per dimension, scaled by `inv_b3 = 1 / b^3` once.
///
/// # Safety
/// `(x, y, z)` is an interior fine point of the grid `b (nc - 1) + 1`; `uc` addresses `nc^3`
/// values.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn interp_at<T: RealScalar>(
    nc: usize,
    b: u32,
    inv_b3: f64,
    x: u32,
    y: u32,
    z: u32,
    uc: *const T,
) -> f64 {
    // Base 2 takes a copy with `b` built in: shifts for the divisions, loops of a constant
    // length (so the loads can be issued together). Same sum in the same order.
    // SAFETY: forwarded.
    let acc = unsafe {
        if b == 2 {
            interp_sum::<T, 2>(nc, 2, [x, y, z], uc)
        } else {
            interp_sum::<T, 0>(nc, b, [x, y, z], uc)
        }
    };
    acc * inv_b3
}

/// The weighted sum of [`interp_at`] before the scaling; `B` is `b` built in, or 0 for
/// any `b`.
///
/// # Safety
/// As [`interp_at`].
#[inline(always)]
unsafe fn interp_sum<T: RealScalar, const B: u32>(
    nc: usize,
    b: u32,
    [x, y, z]: [u32; 3],
    uc: *const T,
) -> f64 {
    let b = if B > 0 { B } else { b };
    let (cx, tx) = ((x / b) as usize, x % b);
    let (cy, ty) = ((y / b) as usize, y % b);
    let (cz, tz) = ((z / b) as usize, z % b);
    // The weight of the lower (`k = 0`) or upper coarse neighbour. A selection, not an
    // array indexed by `k`: an indexed array put the six weights in local memory on the
    // device (a stack frame per thread; 23.6 ms for one interpolation to 1025^3 in f32 on
    // an H200, where one read and one write of the grid take about 2 ms).
    let w = |t: u32, k: usize| if k == 0 { (b - t) as f64 } else { t as f64 };
    // A fine point on a coarse plane takes only the lower neighbour in that dimension.
    let (kx, ky, kz) = (
        1 + (tx != 0) as usize,
        1 + (ty != 0) as usize,
        1 + (tz != 0) as usize,
    );
    let mut acc = 0.0f64;
    for k in 0..2 {
        if k < kz {
            let wzk = w(tz, k);
            for j in 0..2 {
                if j < ky {
                    let wzy = wzk * w(ty, j);
                    let row = idx(nc, cx, cy + j, cz + k);
                    for i in 0..2 {
                        if i < kx {
                            // SAFETY: the coarse corners of an interior fine point are in
                            // the grid.
                            let v = unsafe { *uc.add(row + i) }.to_f64();
                            acc = fma_f64(wzy * w(tx, i), v, acc);
                        }
                    }
                }
            }
        }
    }
    acc
}

/// The three norm terms at interior point `(x, y, z)`: `r^2`, `(u - u_exact)^2` and
/// `(u - scale u_exact)^2`, with `u_exact = s[x] s[y] s[z]` from the sine table `s`
/// (`s[i] = sin(pi i h)`) and `scale` the factor of the discrete solution.
///
/// # Safety
/// `(x, y, z)` is interior; `u`, `f` address `n^3` values, `s` has `n`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn norm_terms<T: RealScalar>(
    n: usize,
    x: usize,
    y: usize,
    z: usize,
    inv_h2: f64,
    scale: f64,
    s: *const f64,
    u: *const T,
    f: *const T,
) -> [f64; NORM_SETS] {
    let g = idx(n, x, y, z);
    // SAFETY: forwarded.
    unsafe {
        let r = residual_at(n, g, inv_h2, u, f);
        let ue = *s.add(x) * *s.add(y) * *s.add(z);
        let v = (*u.add(g)).to_f64();
        let e = v - ue;
        let ea = fma_f64(-scale, ue, v);
        [r * r, e * e, ea * ea]
    }
}

/// The right-hand side `f = amp s[x] s[y] s[z]` of the sine test problem at `(x, y, z)`
/// (zero on the boundary).
///
/// # Safety
/// `s` has `n` values and `(x, y, z)` is in the grid.
#[inline(always)]
pub unsafe fn rhs_at<T: RealScalar>(
    n: usize,
    x: usize,
    y: usize,
    z: usize,
    amp: f64,
    s: *const f64,
) -> T {
    if x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1 {
        return T::ZERO;
    }
    // SAFETY: forwarded.
    T::from_f64(amp * unsafe { *s.add(x) * *s.add(y) * *s.add(z) })
}

/// Passes of the coarsest-grid solve.
pub const COARSE_PASSES: usize = 6;

/// One output value of pass `pass` (0..6) of the exact coarsest-grid solve at unknown
/// `l = (k m + j) m + i` (module docs). Passes 0-2 transform `f` (read from the grid `fc`,
/// `m + 2` points per dimension) along x, y, z into `a`, `b`, `a` and scale by `w`;
/// passes 3-5 transform back, pass 5 writes the grid `uc`.
///
/// # Safety
/// `tab` has `m^2` values, `w`, `a`, `b` have `m^3`, `fc` and `uc` `(m + 2)^3`; the passes
/// run in order with every value of one finished before the next starts.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn coarse_point<T: RealScalar>(
    pass: usize,
    m: usize,
    l: usize,
    tab: *const f64,
    w: *const f64,
    fc: *const T,
    a: *mut f64,
    b: *mut f64,
    uc: *mut T,
) {
    let (i, j, k) = (l % m, (l / m) % m, l / (m * m));
    let nc = m + 2;
    let lin = |i: usize, j: usize, k: usize| (k * m + j) * m + i;
    // SAFETY: all indices stay inside the sizes the caller promised.
    unsafe {
        match pass {
            0 => {
                *a.add(l) = line(m, tab, i, |t| {
                    (*fc.add(idx(nc, t + 1, j + 1, k + 1))).to_f64()
                })
            }
            1 => *b.add(l) = line(m, tab, j, |t| *a.add(lin(i, t, k))),
            2 => *a.add(l) = *w.add(l) * line(m, tab, k, |t| *b.add(lin(i, j, t))),
            3 => *b.add(l) = line(m, tab, i, |t| *a.add(lin(t, j, k))),
            4 => *a.add(l) = line(m, tab, j, |t| *b.add(lin(i, t, k))),
            _ => {
                *uc.add(idx(nc, i + 1, j + 1, k + 1)) =
                    T::from_f64(line(m, tab, k, |t| *a.add(lin(i, j, t))))
            }
        }
    }
}

/// `sum_t tab[row][t] src(t)` for `t` in `0..m`, in order.
///
/// # Safety
/// `tab` has `m^2` values.
#[inline(always)]
unsafe fn line(m: usize, tab: *const f64, row: usize, src: impl Fn(usize) -> f64) -> f64 {
    let mut acc = 0.0f64;
    for t in 0..m {
        // SAFETY: row, t < m.
        acc = fma_f64(unsafe { *tab.add(row * m + t) }, src(t), acc);
    }
    acc
}

// ---------------------------------------------------------------------------------------
// The coarse levels in one launch. A V or W cycle spends most of its kernels on the small
// levels, where each is a launch and a chain of dependent arithmetic for almost no data. The host records those levels' operations as a list ([`MgOp`]) and one thread
// block runs the list in order ([`op_list`]), a block barrier between operations: the same
// per-point and per-block functions in the same order as the single kernels, so the
// same bits.

/// Threads of the one thread block of [`op_list`].
pub const OPS_THREADS: usize = 256;
/// Levels of at most this many points per dimension may run in [`op_list`] (9^3 = 729
/// points: at most three per thread).
pub const OPS_MAX_N: usize = 9;
/// ... and with at most this many smoother blocks (two warps of them). A larger level
/// runs its own kernels: one thread block would run its block updates, each a long chain
/// of dependent instructions, with a fraction of the SMs a launch gets. Measured on an
/// H200: with 17^3 (512 blocks of 2^3) in one block, a 33^3 cycle took longer than with
/// every level launched.
pub const OPS_MAX_SMOOTHER_BLOCKS: usize = 64;
/// Block edges [`op_list`] is built for (`OPS[s - 1]`): its smoother keeps the block in
/// registers, and 512 threads of it fit one SM's registers.
pub const OPS_MAX_BLOCK: usize = 2;

/// One operation of [`op_list`]; `level` indexes the levels table (level 0 the coarsest),
/// buffers are the level's two iterates `u[0]`, `u[1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MgOp {
    /// One smoother sweep ([`smooth`]) in `mode`, reading `u[src]`, writing `u[dst]`.
    Sweep {
        /// Level.
        level: usize,
        /// [`MODE_ALL`], [`MODE_RED`] or [`MODE_BLACK`].
        mode: u32,
        /// Buffer read.
        src: usize,
        /// Buffer written (`src` in place).
        dst: usize,
    },
    /// `u[dst] <- f - A u[src]` ([`residual`]).
    Residual {
        /// Level.
        level: usize,
        /// Iterate.
        src: usize,
        /// Residual.
        dst: usize,
    },
    /// `f` of `level - 1` `<- R` (`f` of `level` where `from_rhs`, else `u[src]`)
    /// ([`restrict`]).
    Restrict {
        /// The fine level.
        level: usize,
        /// Restrict the right-hand side (FMG) instead of `u[src]`.
        from_rhs: bool,
        /// Buffer restricted where not `from_rhs`.
        src: usize,
    },
    /// `u[buf] <- 0` on the whole grid.
    Zero {
        /// Level.
        level: usize,
        /// Buffer.
        buf: usize,
    },
    /// `u[fine] <- u[fine] + P u_{level-1}[coarse]` (`add`) or `u[fine] <- P
    /// u_{level-1}[coarse]` ([`interp`]).
    Interp {
        /// The fine level.
        level: usize,
        /// Add to the fine iterate.
        add: bool,
        /// Coarse buffer read.
        coarse: usize,
        /// Fine buffer written.
        fine: usize,
    },
    /// The exact solve on level 0 into `u[buf]` ([`coarse_solve`]).
    Coarse {
        /// Buffer.
        buf: usize,
    },
}

impl MgOp {
    /// The operation as one word: kind in bits 0-2, level 3-6, buffers 7 and 8, mode
    /// 9-10, flag 11.
    pub const fn encode(self) -> u32 {
        let (kind, level, a, b, mode, flag) = match self {
            MgOp::Sweep {
                level,
                mode,
                src,
                dst,
            } => (0, level, src, dst, mode, false),
            MgOp::Residual { level, src, dst } => (1, level, src, dst, 0, false),
            MgOp::Restrict {
                level,
                from_rhs,
                src,
            } => (2, level, src, 0, 0, from_rhs),
            MgOp::Zero { level, buf } => (3, level, buf, 0, 0, false),
            MgOp::Interp {
                level,
                add,
                coarse,
                fine,
            } => (4, level, coarse, fine, 0, add),
            MgOp::Coarse { buf } => (5, 0, buf, 0, 0, false),
        };
        kind | (level as u32 & 15) << 3
            | (a as u32 & 1) << 7
            | (b as u32 & 1) << 8
            | (mode & 3) << 9
            | (flag as u32) << 11
    }

    /// The operation of a word from [`MgOp::encode`] (an unknown kind reads as
    /// [`MgOp::Coarse`]).
    pub const fn decode(w: u32) -> MgOp {
        let level = ((w >> 3) & 15) as usize;
        let (a, b) = (((w >> 7) & 1) as usize, ((w >> 8) & 1) as usize);
        let (mode, flag) = ((w >> 9) & 3, (w >> 11) & 1 != 0);
        match w & 7 {
            0 => MgOp::Sweep {
                level,
                mode,
                src: a,
                dst: b,
            },
            1 => MgOp::Residual {
                level,
                src: a,
                dst: b,
            },
            2 => MgOp::Restrict {
                level,
                from_rhs: flag,
                src: a,
            },
            3 => MgOp::Zero { level, buf: a },
            4 => MgOp::Interp {
                level,
                add: flag,
                coarse: a,
                fine: b,
            },
            _ => MgOp::Coarse { buf: a },
        }
    }
}

/// Words per level in the levels table of [`op_list`]: `n`, then the device addresses of
/// `u[0]`, `u[1]` and `f`.
pub const OPS_LEVEL_WORDS: usize = 4;

/// The scalars of [`op_list`] ([`MgOps`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpsParams {
    /// Operations in the list.
    pub count: usize,
    /// Base of the hierarchy.
    pub base: usize,
    /// Gauss-Seidel sweeps inside each smoother block.
    pub iters: u32,
    /// Damping of the block correction.
    pub omega: f64,
    /// `1 / b^6` (restriction) and `1 / b^3` (interpolation), as the host computes them.
    pub inv_b6: f64,
    /// See `inv_b6`.
    pub inv_b3: f64,
    /// Unknowns per dimension of the coarsest grid.
    pub m: usize,
}

// ---------------------------------------------------------------------------------------
// Kernels. Launch shapes: the point-wise kernels and the smoother run a 3D grid, x threads
// over a row (`THREADS` per block), grid y and z over the rows and planes; the norm kernel
// one block of `NORM_THREADS` per z-plane (partials in a fixed order); the coarse solve
// one block. Each generic body is instantiated per scalar type (and per block edge for the
// smoother) by `multigrid_instances!` below.

#[cfg(not(target_arch = "nvptx64"))]
use crate::abi::Kernel;
#[cfg(target_arch = "nvptx64")]
use crate::device::{
    block_dim, block_idx, block_idx_y, block_idx_z, block_sum, dynamic_shared,
    for_each_block_index, for_each_strided, global_index, sync_threads, thread_idx,
};
use crate::{instances, kernel};

/// `(x, y, z)` of this thread in a point-wise 3D launch.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn point() -> (usize, usize, usize) {
    (global_index(), block_idx_y(), block_idx_z())
}

/// The scalars of the block smoother ([`MgSmooth`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothParams {
    /// Points per dimension of the grid.
    pub n: usize,
    /// Blocks per dimension, [`blocks_per_dim`]`(n, S)`.
    pub nblocks: usize,
    /// [`MODE_ALL`], [`MODE_RED`] or [`MODE_BLACK`].
    pub mode: u32,
    /// Gauss-Seidel sweeps inside each block.
    pub iters: u32,
    /// `h^2`.
    pub h2: f64,
    /// Damping of the block correction.
    pub omega: f64,
}

/// The fused block smoother with block edge `S` built in ([`smooth_block`]): grid x over
/// the blocks of a row (half of them for one colour, [`smoother_threads_x`]), grid y and
/// z over the rows and planes of blocks. Reads `u_in` and `f`, writes the interior of
/// `u_out` (`n^3` each; `u_out` may be `u_in` as [`smooth_block`] allows). Edges whose
/// right-hand side lives in shared memory ([`smoother_shared_bytes_per_thread`]) need
/// that many bytes per thread of dynamic shared memory.
#[kernel(args = MgSmooth)]
pub unsafe fn smooth<T: RealScalar, const S: usize>(
    params: SmoothParams,
    u_in: *const T,
    f: *const T,
    u_out: *mut T,
) {
    let SmoothParams {
        n,
        nblocks,
        mode,
        iters,
        h2,
        omega,
    } = params;
    let (t, qy, qz) = point();
    if let Some(qx) = block_of_thread(mode, t, qy, qz, nblocks) {
        let q = [qx, qy, qz];
        if smoother_shared_bytes_per_thread(S, size_of::<T>()) > 0 {
            // The launch gives smoother_threads(S, elem) threads and this many bytes
            // per thread of dynamic shared memory.
            let mut r = Strided {
                base: unsafe { dynamic_shared::<T>().add(thread_idx()) },
                stride: block_dim(),
            };
            unsafe { smooth_block_with::<T, S, _>(n, q, iters, h2, omega, u_in, f, u_out, &mut r) }
        } else {
            unsafe { smooth_block::<T, S>(n, q, iters, h2, omega, u_in, f, u_out) }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The residual and its restriction in one launch (base 2). Each thread block forms the
// residual of a tile's fine support in shared memory (each fine point once, rounded to
// `T` as the residual kernel stores it), then restricts from there: the residual is never
// written to or read back from the grid, and the restriction's 27 loads per coarse point
// hit shared memory. Same values, same sums, same bits as the two kernels.

/// Coarse points per tile of [`residual_restrict`] along x, y, z.
pub const RR_TILE: [usize; 3] = [16, 8, 4];
/// Threads per thread block of [`residual_restrict`].
pub const RR_THREADS: usize = 256;

/// Fine points per dimension of [`residual_restrict`]'s shared tile (base 2): the
/// support of the tile's coarse points.
pub const fn rr_box() -> [usize; 3] {
    [2 * RR_TILE[0] + 1, 2 * RR_TILE[1] + 1, 2 * RR_TILE[2] + 1]
}

/// Dynamic shared-memory bytes of [`residual_restrict`] for scalars of `elem` bytes.
pub const fn rr_shared_bytes(elem: usize) -> usize {
    let b = rr_box();
    b[0] * b[1] * b[2] * elem
}

/// Thread blocks of [`residual_restrict`] along x, y, z for `nc` coarse points per
/// dimension.
pub const fn rr_grid(nc: usize) -> [usize; 3] {
    [
        nc.div_ceil(RR_TILE[0]),
        nc.div_ceil(RR_TILE[1]),
        nc.div_ceil(RR_TILE[2]),
    ]
}

/// `fc <- R (f - A u)` for base 2: the coarse grid of `nc` points per dimension from the
/// fine grid `2 (nc - 1) + 1` ([`residual`] then [`restrict`], the same bits, without the
/// residual's grid). Zero on the coarse boundary; `inv_h2 = 1 / h^2` of the fine grid,
/// `inv_b6 = 1 / 64`. Grid [`rr_grid`], [`RR_THREADS`] threads, [`rr_shared_bytes`] of
/// dynamic shared memory.
#[kernel(args = MgResidualRestrict)]
pub unsafe fn residual_restrict<T: RealScalar>(
    nc: usize,
    inv_h2: f64,
    inv_b6: f64,
    u: *const T,
    f: *const T,
    fc: *mut T,
) {
    let nf = 2 * (nc - 1) + 1;
    let c0 = [
        block_idx() * RR_TILE[0],
        block_idx_y() * RR_TILE[1],
        block_idx_z() * RR_TILE[2],
    ];
    let bx = rr_box();
    let tile = dynamic_shared::<T>();
    // Box point (0, 0, 0) is fine point 2 c0 - 1 per dimension. The supports of interior
    // coarse points hold interior fine points only; the others are not formed. (One
    // point per thread in turn: a column per thread, its residuals in registers before
    // the stores, ran slower on an H200: 9.8 against 6.9 ms from 1025^3.)
    for_each_block_index(bx[0] * bx[1] * bx[2], |l| {
        let b = [l % bx[0], (l / bx[0]) % bx[1], l / (bx[0] * bx[1])];
        let g = [0, 1, 2].map(|a| (2 * c0[a] + b[a]).wrapping_sub(1));
        // `c + 1 < nf` would let the wrapped -1 through (it wraps back to 0).
        if g.iter().all(|&c| c >= 1 && c < nf - 1) {
            // SAFETY: an interior fine point; l a point of the box.
            unsafe {
                *tile.add(l) = T::from_f64(residual_at(nf, idx(nf, g[0], g[1], g[2]), inv_h2, u, f))
            };
        }
    });
    sync_threads();
    for_each_block_index(RR_TILE[0] * RR_TILE[1] * RR_TILE[2], |k| {
        let c = [
            c0[0] + k % RR_TILE[0],
            c0[1] + (k / RR_TILE[0]) % RR_TILE[1],
            c0[2] + k / (RR_TILE[0] * RR_TILE[1]),
        ];
        if c.iter().all(|&v| v < nc) {
            let interior = c.iter().all(|&v| v > 0 && v + 1 < nc);
            let v = if interior {
                // The support's first fine point 2 c - 1 is box point 2 (c - c0).
                let o = [0, 1, 2].map(|a| 2 * (c[a] - c0[a]));
                let at = o[0] + o[1] * bx[0] + o[2] * bx[0] * bx[1];
                // SAFETY: the support lies in the box, formed above.
                let support = View::new(unsafe { tile.add(at) } as *const T, bx[0], bx[0] * bx[1]);
                T::from_f64(unsafe { restrict_sum::<T, 2>(2, support) } * inv_b6)
            } else {
                T::ZERO
            };
            // SAFETY: c is a coarse point.
            unsafe { *fc.add(idx(nc, c[0], c[1], c[2])) = v };
        }
    });
}

/// `r <- f - A u` ([`residual_at`]) on an `n^3` grid, zero on the boundary; `inv_h2 =
/// 1 / h^2`.
#[kernel(args = MgResidual)]
pub unsafe fn residual<T: RealScalar>(n: usize, inv_h2: f64, u: *const T, f: *const T, r: *mut T) {
    let (x, y, z) = point();
    if x < n {
        unsafe { residual_point(n, inv_h2, [x, y, z], u, f, r) };
    }
}

/// Point `p` of [`residual`]: `r = f - A u` inside, zero on the boundary.
///
/// # Safety
/// `p` is in the grid; `u`, `f`, `r` address `n^3` values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn residual_point<T: RealScalar>(
    n: usize,
    inv_h2: f64,
    [x, y, z]: [usize; 3],
    u: *const T,
    f: *const T,
    r: *mut T,
) {
    let g = idx(n, x, y, z);
    let interior = x > 0 && y > 0 && z > 0 && x < n - 1 && y < n - 1 && z < n - 1;
    let v = if interior {
        // SAFETY: g is interior.
        T::from_f64(unsafe { residual_at(n, g, inv_h2, u, f) })
    } else {
        T::ZERO
    };
    unsafe { *r.add(g) = v };
}

/// Full weighting `fc <- R r` ([`restrict_at`]) onto the coarse grid of `nc` points per
/// dimension from the fine grid `b (nc - 1) + 1`, zero on the boundary; `inv_b6 = 1 / b^6`.
#[kernel(args = MgRestrict)]
pub unsafe fn restrict<T: RealScalar>(nc: usize, b: usize, inv_b6: f64, r: *const T, fc: *mut T) {
    let (x, y, z) = point();
    if x < nc {
        unsafe { restrict_point(nc, b, inv_b6, [x, y, z], r, fc) };
    }
}

/// Coarse point `p` of [`restrict`]: full weighting inside, zero on the boundary.
///
/// # Safety
/// `p` is in the coarse grid; `r` addresses `(b (nc - 1) + 1)^3` values, `fc` `nc^3`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn restrict_point<T: RealScalar>(
    nc: usize,
    b: usize,
    inv_b6: f64,
    [x, y, z]: [usize; 3],
    r: *const T,
    fc: *mut T,
) {
    let interior = x > 0 && y > 0 && z > 0 && x < nc - 1 && y < nc - 1 && z < nc - 1;
    let v = if interior {
        // SAFETY: an interior coarse point of the fine grid.
        unsafe { restrict_at(b * (nc - 1) + 1, b, inv_b6, x, y, z, r) }
    } else {
        T::ZERO
    };
    unsafe { *fc.add(idx(nc, x, y, z)) = v };
}

/// `uf <- uf + P uc` (`add != 0`) or `uf <- P uc` ([`interp_at`]) on the interior of the
/// fine grid of `nf` points per dimension; `inv_b3 = 1 / b^3`. Grid x covers the points of
/// a row, or for `b = 2` ([`interp_points_per_thread`]) pairs of them: thread `x` takes
/// points `2 x` and `2 x + 1`, which share their coarse values.
#[kernel(args = MgInterp)]
pub unsafe fn interp<T: RealScalar>(
    nf: usize,
    b: u32,
    inv_b3: f64,
    add: u32,
    uc: *const T,
    uf: *mut T,
) {
    let (x, y, z) = point();
    if b == 2 {
        // Both values before either store: a store between them (`uf` may alias `uc`
        // for all the compiler knows) would keep the second point from reusing the
        // first's coarse loads.
        // (Two named values, not an array of them: an array was kept in local memory.)
        let (x0, x1) = (2 * x, 2 * x + 1);
        let e0 = unsafe { interp_value(nf, 2, inv_b3, [x0, y, z], uc) };
        let e1 = unsafe { interp_value(nf, 2, inv_b3, [x1, y, z], uc) };
        unsafe {
            interp_store(nf, add != 0, [x0, y, z], e0, uf);
            interp_store(nf, add != 0, [x1, y, z], e1, uf);
        }
    } else {
        let e = unsafe { interp_value(nf, b, inv_b3, [x, y, z], uc) };
        unsafe { interp_store(nf, add != 0, [x, y, z], e, uf) };
    }
}

/// Fine points per thread along x of [`interp`] for base `b`.
pub const fn interp_points_per_thread(b: u32) -> usize {
    if b == 2 { 2 } else { 1 }
}

/// Fine point `p` of [`interp`]: `uf (+)= P uc` inside, the boundary left alone.
///
/// # Safety
/// `uf` addresses `nf^3` values, `uc` `((nf - 1) / b + 1)^3`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn interp_point<T: RealScalar>(
    nf: usize,
    b: u32,
    inv_b3: f64,
    add: bool,
    p: [usize; 3],
    uc: *const T,
    uf: *mut T,
) {
    unsafe {
        let e = interp_value(nf, b, inv_b3, p, uc);
        interp_store(nf, add, p, e, uf);
    }
}

/// [`interp_at`] at fine point `p` if it is interior (`None` on the boundary or past it).
///
/// # Safety
/// `uc` addresses `((nf - 1) / b + 1)^3` values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn interp_value<T: RealScalar>(
    nf: usize,
    b: u32,
    inv_b3: f64,
    [x, y, z]: [usize; 3],
    uc: *const T,
) -> Option<f64> {
    if x == 0 || y == 0 || z == 0 || x >= nf - 1 || y >= nf - 1 || z >= nf - 1 {
        return None;
    }
    // A 32-bit division: the 64-bit one is a long software routine on the device.
    let nc = ((nf - 1) as u32 / b) as usize + 1;
    // SAFETY: an interior fine point; uc holds nc^3 values.
    Some(unsafe { interp_at(nc, b, inv_b3, x as u32, y as u32, z as u32, uc) })
}

/// `uf (+)= e` at fine point `p` where [`interp_value`] gave a value.
///
/// # Safety
/// `uf` addresses `nf^3` values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn interp_store<T: RealScalar>(
    nf: usize,
    add: bool,
    [x, y, z]: [usize; 3],
    e: Option<f64>,
    uf: *mut T,
) {
    if let Some(e) = e {
        let g = idx(nf, x, y, z);
        // SAFETY: an interior point of the fine grid.
        unsafe {
            *uf.add(g) = if add {
                T::from_f64((*uf.add(g)).to_f64() + e)
            } else {
                T::from_f64(e)
            };
        }
    }
}

/// Per-plane partials of the three norm sums ([`norm_terms`]): block `z` writes
/// `partials[k n + z]` for `k < NORM_SETS` (zero for the boundary planes). Needs
/// `NORM_THREADS / 32` `f64` of dynamic shared memory.
#[kernel(args = MgNormsPartial)]
pub unsafe fn norms_partial<T: RealScalar>(
    n: usize,
    inv_h2: f64,
    scale: f64,
    s: *const f64,
    u: *const T,
    f: *const T,
    partials: *mut f64,
) {
    let z = block_idx();
    let mut acc = [0.0f64; NORM_SETS];
    if z > 0 && z < n - 1 {
        for y in 1..n - 1 {
            for_each_strided(1 + thread_idx(), block_dim(), n - 1, |x| {
                let t = unsafe { norm_terms(n, x, y, z, inv_h2, scale, s, u, f) };
                for k in 0..NORM_SETS {
                    acc[k] += t[k];
                }
            });
        }
    }
    for (k, a) in acc.into_iter().enumerate() {
        let total = block_sum(a);
        if thread_idx() == 0 {
            unsafe { *partials.add(k * n + z) = total };
        }
    }
}

/// The sine test problem's right-hand side ([`rhs_at`]) on an `n^3` grid.
#[kernel(args = MgFillRhs)]
pub unsafe fn fill_rhs<T: RealScalar>(n: usize, amp: f64, s: *const f64, f: *mut T) {
    let (x, y, z) = point();
    if x < n {
        unsafe { *f.add(idx(n, x, y, z)) = rhs_at(n, x, y, z, amp, s) };
    }
}

/// The exact coarsest-grid solve ([`coarse_point`]), all passes in one block.
#[kernel(args = MgCoarseSolve)]
pub unsafe fn coarse_solve<T: RealScalar>(
    m: usize,
    tab: *const f64,
    w: *const f64,
    fc: *const T,
    a: *mut f64,
    b: *mut f64,
    uc: *mut T,
) {
    let count = m * m * m;
    for pass in 0..COARSE_PASSES {
        for_each_block_index(count, |l| unsafe {
            coarse_point(pass, m, l, tab, w, fc, a, b, uc)
        });
        sync_threads();
    }
}

/// Runs the operation list `list` (`count` words of [`MgOp::encode`]) in order in one
/// thread block of [`OPS_THREADS`] threads, a block barrier after each operation. Level
/// `l` of the list is row `l` of `levels` ([`OPS_LEVEL_WORDS`] words: `n` at most
/// [`OPS_MAX_N`], the addresses of its `u[0]`, `u[1]` and `f`, `n^3` values each); the
/// block edge `S` is built in. `tab`, `w`, `a`, `b`: the coarsest solve's tables and
/// scratch, as for [`coarse_solve`].
#[kernel(args = MgOps)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn op_list<T: RealScalar, const S: usize>(
    p: OpsParams,
    list: *const u32,
    levels: *const u64,
    tab: *const f64,
    w: *const f64,
    a: *mut f64,
    b: *mut f64,
) {
    let OpsParams {
        count,
        base,
        iters,
        omega,
        inv_b6,
        inv_b3,
        m,
    } = p;
    // SAFETY (every table read): the host wrote a row per level the list names.
    let n_of = |l: usize| unsafe { *levels.add(l * OPS_LEVEL_WORDS) } as usize;
    let u_of = |l: usize, buf: usize| unsafe { *levels.add(l * OPS_LEVEL_WORDS + 1 + buf) } as usize
        as *mut T;
    let f_of = |l: usize| unsafe { *levels.add(l * OPS_LEVEL_WORDS + 3) } as usize as *mut T;
    // (x, y, z) of point g of an n^3 grid, in 32-bit arithmetic (n <= OPS_MAX_N).
    let xyz = |g: usize, n: usize| {
        let (g, n) = (g as u32, n as u32);
        (
            (g % n) as usize,
            ((g / n) % n) as usize,
            (g / (n * n)) as usize,
        )
    };
    for i in 0..count {
        // SAFETY: the list has `count` words.
        match MgOp::decode(unsafe { *list.add(i) }) {
            MgOp::Sweep {
                level,
                mode,
                src,
                dst,
            } => {
                let n = n_of(level);
                let h = 1.0 / (n - 1) as f64;
                let h2 = h * h;
                let nb = blocks_per_dim(n, S);
                let (u_in, f, u_out) = (
                    u_of(level, src) as *const T,
                    f_of(level) as *const T,
                    u_of(level, dst),
                );
                for_each_block_index(nb * nb * nb, |k| {
                    let (qx, qy, qz) = xyz(k, nb);
                    // The blocks of the colour, as `block_of_thread` picks them.
                    if mode == MODE_ALL || (qx + qy + qz) & 1 == mode as usize - 1 {
                        // SAFETY: q is a block of the level; the buffers hold n^3 values.
                        unsafe {
                            smooth_block::<T, S>(n, [qx, qy, qz], iters, h2, omega, u_in, f, u_out)
                        };
                    }
                });
            }
            MgOp::Residual { level, src, dst } => {
                let n = n_of(level);
                let h = 1.0 / (n - 1) as f64;
                let inv_h2 = 1.0 / (h * h);
                let (u, f, r) = (
                    u_of(level, src) as *const T,
                    f_of(level) as *const T,
                    u_of(level, dst),
                );
                for_each_block_index(n * n * n, |g| {
                    let (x, y, z) = xyz(g, n);
                    // SAFETY: (x, y, z) is in the grid; the buffers hold n^3 values.
                    unsafe { residual_point(n, inv_h2, [x, y, z], u, f, r) };
                });
            }
            MgOp::Restrict {
                level,
                from_rhs,
                src,
            } => {
                let nc = n_of(level - 1);
                let r = if from_rhs {
                    f_of(level)
                } else {
                    u_of(level, src)
                } as *const T;
                let fc = f_of(level - 1);
                for_each_block_index(nc * nc * nc, |g| {
                    let (x, y, z) = xyz(g, nc);
                    // SAFETY: a coarse point; the fine level is b (nc - 1) + 1 wide.
                    unsafe { restrict_point(nc, base, inv_b6, [x, y, z], r, fc) };
                });
            }
            MgOp::Zero { level, buf } => {
                let n = n_of(level);
                let u = u_of(level, buf);
                for_each_block_index(n * n * n, |g| unsafe { *u.add(g) = T::ZERO });
            }
            MgOp::Interp {
                level,
                add,
                coarse,
                fine,
            } => {
                let nf = n_of(level);
                let (uc, uf) = (u_of(level - 1, coarse) as *const T, u_of(level, fine));
                for_each_block_index(nf * nf * nf, |g| {
                    let (x, y, z) = xyz(g, nf);
                    // SAFETY: uf holds nf^3 values, uc those of the level below.
                    unsafe { interp_point(nf, base as u32, inv_b3, add, [x, y, z], uc, uf) };
                });
            }
            MgOp::Coarse { buf } => {
                let (fc, uc) = (f_of(0) as *const T, u_of(0, buf));
                for pass in 0..COARSE_PASSES {
                    for_each_block_index(m * m * m, |l| unsafe {
                        coarse_point(pass, m, l, tab, w, fc, a, b, uc)
                    });
                    if pass + 1 < COARSE_PASSES {
                        sync_threads();
                    }
                }
            }
        }
        sync_threads();
    }
}

/// The multigrid kernels of one real scalar type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait MultigridKernels: RealScalar + 'static {
    /// `mg_smooth_s1_<t>`
    const SMOOTH_S1: Kernel<MgSmooth<'static, Self>>;
    /// `mg_smooth_s2_<t>`
    const SMOOTH_S2: Kernel<MgSmooth<'static, Self>>;
    /// `mg_smooth_s3_<t>`
    const SMOOTH_S3: Kernel<MgSmooth<'static, Self>>;
    /// `mg_smooth_s4_<t>`
    const SMOOTH_S4: Kernel<MgSmooth<'static, Self>>;
    /// `mg_smooth_s5_<t>`
    const SMOOTH_S5: Kernel<MgSmooth<'static, Self>>;
    /// `mg_smooth_s6_<t>`
    const SMOOTH_S6: Kernel<MgSmooth<'static, Self>>;
    /// The smoothers by block edge: `SMOOTH[s - 1]` has edge `s`.
    const SMOOTH: [Kernel<MgSmooth<'static, Self>>; MAX_GPU_BLOCK] = [
        Self::SMOOTH_S1,
        Self::SMOOTH_S2,
        Self::SMOOTH_S3,
        Self::SMOOTH_S4,
        Self::SMOOTH_S5,
        Self::SMOOTH_S6,
    ];
    /// `mg_residual_restrict_<t>`
    const RESIDUAL_RESTRICT: Kernel<MgResidualRestrict<'static, Self>>;
    /// `mg_residual_<t>`
    const RESIDUAL: Kernel<MgResidual<'static, Self>>;
    /// `mg_restrict_<t>`
    const RESTRICT: Kernel<MgRestrict<'static, Self>>;
    /// `mg_interp_<t>`
    const INTERP: Kernel<MgInterp<'static, Self>>;
    /// `mg_norms_partial_<t>`
    const NORMS_PARTIAL: Kernel<MgNormsPartial<'static, Self>>;
    /// `mg_fill_rhs_<t>`
    const FILL_RHS: Kernel<MgFillRhs<'static, Self>>;
    /// `mg_coarse_solve_<t>`
    const COARSE_SOLVE: Kernel<MgCoarseSolve<'static, Self>>;
    /// `mg_ops_s1_<t>`
    const OPS_S1: Kernel<MgOps<'static>>;
    /// `mg_ops_s2_<t>`
    const OPS_S2: Kernel<MgOps<'static>>;
    /// The operation-list kernels by block edge: `OPS[s - 1]` has edge `s`.
    const OPS: [Kernel<MgOps<'static>>; OPS_MAX_BLOCK] = [Self::OPS_S1, Self::OPS_S2];
}

macro_rules! multigrid_instances {
    ($t:ty, $sfx:literal) => {
        instances! {
            impl MultigridKernels for $t {
                SMOOTH_S1 = smooth::<$t, 1>(concat!("mg_smooth_s1_", $sfx));
                SMOOTH_S2 = smooth::<$t, 2>(concat!("mg_smooth_s2_", $sfx));
                SMOOTH_S3 = smooth::<$t, 3>(concat!("mg_smooth_s3_", $sfx));
                SMOOTH_S4 = smooth::<$t, 4>(concat!("mg_smooth_s4_", $sfx));
                SMOOTH_S5 = smooth::<$t, 5>(concat!("mg_smooth_s5_", $sfx));
                SMOOTH_S6 = smooth::<$t, 6>(concat!("mg_smooth_s6_", $sfx));
                RESIDUAL_RESTRICT = residual_restrict::<$t>(concat!("mg_residual_restrict_", $sfx));
                RESIDUAL = residual::<$t>(concat!("mg_residual_", $sfx));
                RESTRICT = restrict::<$t>(concat!("mg_restrict_", $sfx));
                INTERP = interp::<$t>(concat!("mg_interp_", $sfx));
                NORMS_PARTIAL = norms_partial::<$t>(concat!("mg_norms_partial_", $sfx));
                FILL_RHS = fill_rhs::<$t>(concat!("mg_fill_rhs_", $sfx));
                COARSE_SOLVE = coarse_solve::<$t>(concat!("mg_coarse_solve_", $sfx));
                OPS_S1 = op_list::<$t, 1>(concat!("mg_ops_s1_", $sfx));
                OPS_S2 = op_list::<$t, 2>(concat!("mg_ops_s2_", $sfx));
            }
        }
    };
}

multigrid_instances!(f32, "f32");
multigrid_instances!(f64, "f64");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_survive_their_encoding() {
        let check = |op: MgOp| assert_eq!(MgOp::decode(op.encode()), op, "{:#x}", op.encode());
        check(MgOp::Coarse { buf: 0 });
        check(MgOp::Coarse { buf: 1 });
        for level in [0, 1, 7, 15] {
            for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                for mode in [MODE_ALL, MODE_RED, MODE_BLACK] {
                    check(MgOp::Sweep {
                        level,
                        mode,
                        src: a,
                        dst: b,
                    });
                }
                check(MgOp::Residual {
                    level,
                    src: a,
                    dst: b,
                });
                for flag in [false, true] {
                    check(MgOp::Restrict {
                        level,
                        from_rhs: flag,
                        src: a,
                    });
                    check(MgOp::Interp {
                        level,
                        add: flag,
                        coarse: a,
                        fine: b,
                    });
                }
                check(MgOp::Zero { level, buf: b });
            }
        }
    }
}
