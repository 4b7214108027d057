//! GMRES on all CPU cores (rayon): the twin of [`super::gpu`], with the same options,
//! report and per-element math (`ferrocuda_kernels::krylov`).

use std::time::Instant;

use rayon::prelude::*;

use super::arnoldi::{self, C, PipeDots, Space, from_c, to_c};
use super::{GmresOptions, GmresReport, LinOp};
use crate::alloc;
use crate::blas1::{Element, cpu as b1};
use crate::comm::Communicator;
use crate::cpu_dispatch::fma_kernel;
use crate::error::{Error, Result, check_len};
use ferrocuda_kernels::RealScalar;
use ferrocuda_kernels::krylov as k;

const CHUNK: usize = b1::CHUNK;

// The chunk kernels run in an FMA frame where the CPU has one (see cpu_dispatch): the
// per-element math is built on `mul_add`.

fma_kernel! {
/// DCGS2 update of rows `lo..lo + uc.len()`: `u <- (u - sum a_j V_j) inv`,
/// `next <- (w - c u' - sum b_j V_j) inv` (`k::gs_update`).
fn update_chunk[V: Element](
    lo: usize,
    n: usize,
    head: &[V],
    a: &[V],
    b: &[V],
    c: V,
    inv: V::Real,
    w: &[V],
    uc: &mut [V],
    nc: &mut [V],
) {
    for (o, (ui, ni)) in uc.iter_mut().zip(nc.iter_mut()).enumerate() {
        let i = lo + o;
        let (mut sa, mut sb) = (V::ZERO, V::ZERO);
        for (j, (&aj, &bj)) in a.iter().zip(b).enumerate() {
            let v = head[j * n + i];
            sa = k::basis_term(sa, aj, v);
            sb = k::basis_term(sb, bj, v);
        }
        (*ui, *ni) = k::gs_update(*ui, w[i], sa, sb, c, inv);
    }
}
}

fma_kernel! {
/// Pipelined update of rows `lo..lo + vc.len()` ([`k::pipe_update`]): `V_k` and, where
/// `with_z`, `Z_k` from `Z_{k-1}`, `q` and the columns `j < k = h.len()` of both bases
/// (`vhead`, `zhead`).
fn pipe_chunk[V: Element](
    lo: usize,
    n: usize,
    vhead: &[V],
    zhead: &[V],
    h: &[V],
    inv: V::Real,
    q: &[V],
    with_z: bool,
    vc: &mut [V],
    zc: &mut [V],
) {
    let k = h.len();
    for (o, (vi, zi)) in vc.iter_mut().zip(zc.iter_mut()).enumerate() {
        let i = lo + o;
        let (mut sv, mut sz) = (V::ZERO, V::ZERO);
        for (j, &hj) in h.iter().enumerate() {
            sv = k::basis_term(sv, hj, vhead[j * n + i]);
            if with_z {
                sz = k::basis_term(sz, hj, zhead[j * n + i]);
            }
        }
        let qi = if with_z { q[i] } else { V::ZERO };
        let (v, z) = k::pipe_update(zhead[(k - 1) * n + i], qi, sv, sz, inv);
        *vi = v;
        if with_z {
            *zi = z;
        }
    }
}
}

fma_kernel! {
/// `w <- w - h v` (MGS).
fn eliminate_chunk[V: Element](h: V, v: &[V], w: &mut [V]) {
    w.iter_mut().zip(v).for_each(|(wi, &vi)| *wi = k::eliminate(*wi, h, vi));
}
}

fma_kernel! {
/// `y <- w / norm`.
fn normalize_chunk[V: Element](norm: V::Real, w: &[V], y: &mut [V]) {
    y.iter_mut().zip(w).for_each(|(yi, &wi)| *yi = k::normalize(wi, norm));
}
}

fma_kernel! {
/// `z_i <- sum_j y_j V_j[i]` for rows `lo..lo + z.len()`.
fn combine_chunk[V: Element](lo: usize, n: usize, basis: &[V], y: &[V], z: &mut [V]) {
    for (o, zi) in z.iter_mut().enumerate() {
        let mut s = V::ZERO;
        for (j, &yj) in y.iter().enumerate() {
            s = k::basis_term(s, yj, basis[j * n + lo + o]);
        }
        *zi = s;
    }
}
}

/// Solves `A x = b` by GMRES(m) with the right preconditioner `m` (`None`: none); `x` holds the initial guess and receives the
/// solution. Errors (with `x` unchanged): shapes that do not fit (`A` must be square),
/// NaN or infinity in `b` or `x`, invalid options, a non-finite residual.
pub fn gmres<V: Element>(
    a: &dyn LinOp<V>,
    m: Option<&dyn LinOp<V>>,
    b: &[V],
    x: &mut [V],
    opts: &GmresOptions,
) -> Result<GmresReport> {
    gmres_with_progress(a, m, b, x, opts, None)
}

/// [`gmres`] calling `progress(iteration, estimated relative residual)` after every step.
pub fn gmres_with_progress<V: Element>(
    a: &dyn LinOp<V>,
    m: Option<&dyn LinOp<V>>,
    b: &[V],
    x: &mut [V],
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    single(a, None, m, b, x, opts, progress)
}

/// GMRES whose Arnoldi steps apply `a`, a lower-precision copy of `a_true` (e.g. the
/// matrix with its values in f32, [`crate::sparse::narrow`]), while every restart's true
/// residual, and so the convergence test and the next cycle's start, is
/// `b - a_true x`: each cycle is a step of iterative refinement, and the solve meets the
/// tolerance for `a_true`. A copy too far from `a_true` ends in
/// [`super::StopReason::Stagnation`] (the caller may then finish with `a_true` itself).
/// Errors as [`gmres`], and `a_true` of another shape than `a`.
pub fn gmres_refined<V: Element>(
    a: &dyn LinOp<V>,
    a_true: &dyn LinOp<V>,
    m: Option<&dyn LinOp<V>>,
    b: &[V],
    x: &mut [V],
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    single(a, Some(a_true), m, b, x, opts, progress)
}

/// [`gmres_with_progress`] (`a_true` `None`: `a` itself) and [`gmres_refined`].
fn single<V: Element>(
    a: &dyn LinOp<V>,
    a_true: Option<&dyn LinOp<V>>,
    m: Option<&dyn LinOp<V>>,
    b: &[V],
    x: &mut [V],
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
) -> Result<GmresReport> {
    let started = Instant::now();
    let (mr, mc) = m.map_or((a.nrows(), a.ncols()), |m| (m.nrows(), m.ncols()));
    let n = check_system(a.nrows(), a.ncols(), mr, mc, b.len(), x.len())?;
    if let Some(t) = a_true {
        check_true_shape(t.nrows(), t.ncols(), n)?;
    }
    check_finite("b", b)?;
    check_finite("x0", x)?;
    opts.validate()?;
    let mut space = CpuSpace::new(a, m, None, b, x, n, opts)?;
    space.true_op = a_true.unwrap_or(a);
    run_space(space, x, opts, progress, started)
}

/// `gmres_refined`'s check: the full-precision operator is `n x n` like the operator.
pub(crate) fn check_true_shape(rows: usize, cols: usize, n: usize) -> Result<()> {
    if (rows, cols) != (n, n) {
        return Err(Error::InvalidArgument {
            op: "gmres_refined",
            reason: format!(
                "the full-precision operator is {rows} x {cols}, the operator {n} x {n}"
            ),
        });
    }
    Ok(())
}

/// GMRES on one rank of a distributed system: `a` maps this rank's part of `x` to its
/// part of `y` (e.g. [`crate::distributed::DistributedBcsr`], which exchanges the halo
/// itself), `m` is a rank-local preconditioner, `b` and `x` are this rank's parts. Dot
/// products and norms are summed over the ranks through `comm`, so every rank takes the
/// same steps and returns the same report; the iteration is the one of [`gmres`]
/// (`arnoldi::run`, unchanged). Collective: every rank calls it with the same options.
/// Errors as [`gmres`], on every rank when any rank's input is invalid.
pub fn gmres_distributed<V: Element>(
    comm: &dyn Communicator,
    a: &dyn LinOp<V>,
    m: Option<&dyn LinOp<V>>,
    b: &[V],
    x: &mut [V],
    opts: &GmresOptions,
) -> Result<GmresReport> {
    let started = Instant::now();
    let (mr, mc) = m.map_or((a.nrows(), a.ncols()), |m| (m.nrows(), m.ncols()));
    let local = check_system(a.nrows(), a.ncols(), mr, mc, b.len(), x.len())
        .and_then(|n| check_finite("b", b).map(|_| n))
        .and_then(|n| check_finite("x0", x).map(|_| n))
        .and_then(|n| opts.validate().map(|_| n))
        .and_then(|n| CpuSpace::new(a, m, Some(comm), b, x, n, opts));
    // Agree on failure first (the workspace included): a rank that stopped would leave
    // the others waiting.
    let space = agree(comm, local)?;
    run_space(space, x, opts, None, started)
}

/// The collective end of a distributed solve's checks: `local` on every rank when all
/// succeeded, else an error on every rank (this rank's own, or one saying that another
/// rank failed). Shared with the GPU path.
pub(crate) fn agree<T>(comm: &dyn Communicator, local: Result<T>) -> Result<T> {
    let mut failed = [f64::from(u8::from(local.is_err()))];
    comm.all_reduce_sum(&mut failed)?;
    let value = local?;
    if failed[0] > 0.0 {
        return Err(Error::InvalidArgument {
            op: "gmres",
            reason: "another rank's system, options or workspace are invalid".into(),
        });
    }
    Ok(value)
}

/// Runs GMRES on `space` (one process, or one rank of a distributed solve); `x`
/// receives the solution.
fn run_space<V: Element>(
    mut space: CpuSpace<'_, V>,
    x: &mut [V],
    opts: &GmresOptions,
    progress: Option<&mut dyn FnMut(usize, f64)>,
    started: Instant,
) -> Result<GmresReport> {
    let report = arnoldi::run(&mut space, opts, progress, started)?;
    x.copy_from_slice(&space.x);
    Ok(report)
}

/// The shape rules of a GMRES solve, shared with the GPU path; returns `n`.
pub(crate) fn check_system(
    a_rows: usize,
    a_cols: usize,
    m_rows: usize,
    m_cols: usize,
    b_len: usize,
    x_len: usize,
) -> Result<usize> {
    if a_rows != a_cols {
        return Err(Error::InvalidArgument {
            op: "gmres",
            reason: format!("the operator must be square, it is {a_rows} x {a_cols}"),
        });
    }
    check_len("gmres", "preconditioner rows", a_rows, m_rows)?;
    check_len("gmres", "preconditioner columns", a_rows, m_cols)?;
    check_len("gmres", "b", a_rows, b_len)?;
    check_len("gmres", "x", a_rows, x_len)?;
    Ok(a_rows)
}

/// `Err` naming the first NaN or infinity in `v` ([`crate::sparse::check_finite`]).
pub(crate) fn check_finite<V: Element>(what: &'static str, v: &[V]) -> Result<()> {
    Ok(crate::sparse::check_finite("gmres", what, v)?)
}

struct CpuSpace<'a, V: Element> {
    a: &'a dyn LinOp<V>,
    /// The operator of the true residual at restarts: `a`, or the full-precision matrix
    /// of which `a` is a lower-precision copy ([`gmres_refined`]).
    true_op: &'a dyn LinOp<V>,
    m: Option<&'a dyn LinOp<V>>,
    /// The ranks of a distributed solve (`None`: one process owns the whole vectors).
    comm: Option<&'a dyn Communicator>,
    n: usize,
    b: &'a [V],
    x: Vec<V>,
    /// The iterate with the smallest true residual so far.
    best: Vec<V>,
    basis: Vec<V>,
    /// `Z = A M^{-1} V` of a pipelined solve (empty otherwise).
    zbasis: Vec<V>,
    /// CB-GMRES ([`super::BasisStorage::F32`], a double-precision `V`): every basis
    /// entry written is rounded to `V::Low` ([`k::basis_round`]): the values the GPU's
    /// compressed basis holds, kept in `V` here (the same arithmetic, not the memory).
    compressed: bool,
    w: Vec<V>,
    z: Vec<V>,
    t_spmv: f64,
    t_precond: f64,
    t_orth: f64,
}

impl<'a, V: Element> CpuSpace<'a, V> {
    /// The workspace of a solve from `x0` (checked against the host's memory first:
    /// [`GmresOptions::basis_vectors`] basis vectors and `x`, `best`, `w`, `z`).
    fn new(
        a: &'a dyn LinOp<V>,
        m: Option<&'a dyn LinOp<V>>,
        comm: Option<&'a dyn Communicator>,
        b: &'a [V],
        x0: &[V],
        n: usize,
        opts: &GmresOptions,
    ) -> Result<Self> {
        let what = opts.workspace_name(n);
        let pipelined = opts.orthogonalization == super::Orthogonalization::Pipelined;
        let zvectors = if pipelined { opts.basis_vectors() } else { 0 };
        let vectors = (opts.basis_vectors() + zvectors) as u128 + 4;
        alloc::check_host_bytes(&what, alloc::bytes_of(vectors * n as u128, size_of::<V>()))?;
        // The check bounds the product by isize::MAX bytes.
        let mut x = alloc::try_with_capacity(&what, n)?;
        x.extend_from_slice(x0);
        Ok(CpuSpace {
            a,
            true_op: a,
            m,
            comm,
            n,
            b,
            x,
            best: alloc::try_vec(&what, n, V::ZERO)?,
            basis: alloc::try_vec(&what, opts.basis_vectors() * n, V::ZERO)?,
            zbasis: alloc::try_vec(&what, zvectors * n, V::ZERO)?,
            compressed: opts.basis == super::BasisStorage::F32
                && size_of::<V::Low>() < size_of::<V>(),
            w: alloc::try_vec(&what, n, V::ZERO)?,
            z: alloc::try_vec(&what, n, V::ZERO)?,
            t_spmv: 0.0,
            t_precond: 0.0,
            t_orth: 0.0,
        })
    }

    /// `|v|` over all ranks.
    fn norm(&self, v: &[V]) -> Result<f64> {
        match self.comm {
            None => Ok(b1::nrm2(v).to_f64()),
            Some(c) => {
                let mut s = [b1::dot(v, v)?.re().to_f64()];
                c.all_reduce_sum(&mut s)?;
                Ok(s[0].sqrt())
            }
        }
    }

    /// Sums local dot products over all ranks (no-op on one process).
    fn reduce(&self, vals: &mut [C]) -> Result<()> {
        if let Some(c) = self.comm {
            let mut flat: Vec<f64> = vals.iter().flat_map(|z| [z.re, z.im]).collect();
            c.all_reduce_sum(&mut flat)?;
            for (z, p) in vals.iter_mut().zip(flat.chunks_exact(2)) {
                *z = C::new(p[0], p[1]);
            }
        }
        Ok(())
    }

    /// `w <- A M^{-1} V_k`.
    fn apply(&mut self, k: usize) -> Result<()> {
        self.apply_column(false, k)
    }

    /// `w <- A M^{-1} V_k`, or `A M^{-1} Z_k` where `from_z`.
    fn apply_column(&mut self, from_z: bool, k: usize) -> Result<()> {
        let n = self.n;
        let v = if from_z {
            &self.zbasis[k * n..(k + 1) * n]
        } else {
            &self.basis[k * n..(k + 1) * n]
        };
        let v = match self.m {
            Some(m) => {
                let t = Instant::now();
                m.apply_unchecked(v, &mut self.z)?;
                self.t_precond += t.elapsed().as_secs_f64();
                &self.z
            }
            None => v,
        };
        let t = Instant::now();
        self.a.apply_unchecked(v, &mut self.w)?;
        self.t_spmv += t.elapsed().as_secs_f64();
        Ok(())
    }
}

impl<V: Element> Space for CpuSpace<'_, V> {
    fn rhs_norm(&mut self) -> Result<f64> {
        self.norm(self.b)
    }

    fn zero_solution(&mut self) -> Result<()> {
        self.x.fill(V::ZERO);
        Ok(())
    }

    fn residual(&mut self) -> Result<f64> {
        let n = self.n;
        let t = Instant::now();
        let r = &mut self.basis[..n];
        self.true_op.apply_unchecked(&self.x, r)?;
        self.t_spmv += t.elapsed().as_secs_f64();
        b1::axpby(V::ONE, self.b, -V::ONE, r)?;
        let norm = self.norm(&self.basis[..n])?;
        if self.compressed {
            round_basis(&mut self.basis[..n]);
        }
        Ok(norm)
    }

    fn scale_first(&mut self, beta: f64) -> Result<()> {
        let n = self.n;
        let inv = from_c::<V>(C::new(1.0 / beta, 0.0));
        b1::scal(inv, &mut self.basis[..n]);
        Ok(())
    }

    fn dots(&mut self, kk: usize, apply: bool) -> Result<(Vec<C>, Vec<C>)> {
        if apply {
            self.apply(kk)?;
        }
        let t = Instant::now();
        let n = self.n;
        let k1 = kk + 1;
        let (basis, w) = (&self.basis, &self.w);
        let u = &basis[kk * n..k1 * n];
        let wv: &[V] = if apply { w } else { u };
        // Fixed chunks, summed in order: the same bits for any thread count.
        let partial: Vec<Vec<V>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
                let mut acc = vec![V::ZERO; 2 * k1];
                for j in 0..k1 {
                    let vj = &basis[j * n + lo..j * n + hi];
                    (acc[j], acc[k1 + j]) = b1::dot2_chunk(vj, &u[lo..hi], &wv[lo..hi]);
                }
                acc
            })
            .collect();
        let mut total = vec![V::ZERO; 2 * k1];
        for p in &partial {
            for (t, &v) in total.iter_mut().zip(p) {
                *t = *t + v;
            }
        }
        let mut c: Vec<C> = total.into_iter().map(to_c).collect();
        self.reduce(&mut c)?;
        self.t_orth += t.elapsed().as_secs_f64();
        Ok((c[..k1].to_vec(), c[k1..].to_vec()))
    }

    fn update(&mut self, kk: usize, a: &[C], b: &[C], c: C, inv_alpha: f64) -> Result<()> {
        let t = Instant::now();
        let n = self.n;
        let a: Vec<V> = a.iter().map(|&v| from_c(v)).collect();
        let b: Vec<V> = b.iter().map(|&v| from_c(v)).collect();
        let c: V = from_c(c);
        let inv = V::Real::from_f64(inv_alpha);
        let (head, tail) = self.basis.split_at_mut(kk * n);
        let (uslot, rest) = tail.split_at_mut(n);
        let next = &mut rest[..n];
        let head: &[V] = head;
        let w = &self.w;
        uslot
            .par_chunks_mut(CHUNK)
            .zip(next.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(ci, (uc, nc))| {
                update_chunk(ci * CHUNK, n, head, &a, &b, c, inv, w, uc, nc)
            });
        if self.compressed {
            round_basis(&mut self.basis[kk * n..(kk + 2) * n]);
        }
        self.t_orth += t.elapsed().as_secs_f64();
        Ok(())
    }

    fn mgs(&mut self, kk: usize) -> Result<(Vec<C>, f64)> {
        self.apply(kk)?;
        let t = Instant::now();
        let n = self.n;
        let mut h = Vec::with_capacity(kk + 1);
        for j in 0..=kk {
            let vj = &self.basis[j * n..(j + 1) * n];
            let mut hj = b1::dot(vj, &self.w)?;
            if self.comm.is_some() {
                let mut h1 = [to_c(hj)];
                self.reduce(&mut h1)?;
                hj = from_c(h1[0]);
            }
            self.w
                .par_chunks_mut(CHUNK)
                .zip(vj.par_chunks(CHUNK))
                .for_each(|(wc, vc)| eliminate_chunk(hj, vc, wc));
            h.push(to_c(hj));
        }
        let mut w2 = b1::dot(&self.w, &self.w)?;
        if self.comm.is_some() {
            let mut s = [to_c(w2)];
            self.reduce(&mut s)?;
            w2 = from_c(s[0]);
        }
        let norm = w2.re().sqrt();
        let w = &self.w;
        self.basis[(kk + 1) * n..(kk + 2) * n]
            .par_chunks_mut(CHUNK)
            .zip(w.par_chunks(CHUNK))
            .for_each(|(yc, wc)| normalize_chunk(norm, wc, yc));
        self.t_orth += t.elapsed().as_secs_f64();
        Ok((h, w2.re().to_f64()))
    }

    fn pipe_begin(&mut self) -> Result<()> {
        let n = self.n;
        self.apply(0)?;
        self.zbasis[..n].copy_from_slice(&self.w);
        Ok(())
    }

    fn pipe_step(
        &mut self,
        kk: usize,
        prev: Option<(&[C], f64)>,
        last: bool,
        ahead: bool,
    ) -> Result<PipeDots> {
        let t = Instant::now();
        let n = self.n;
        if let Some((h, inv_alpha)) = prev {
            let h: Vec<V> = h.iter().map(|&v| from_c(v)).collect();
            let inv = V::Real::from_f64(inv_alpha);
            let (vhead, vtail) = self.basis.split_at_mut(kk * n);
            let (zhead, ztail) = self.zbasis.split_at_mut(kk * n);
            let (vhead, zhead, q): (&[V], &[V], &[V]) = (vhead, zhead, &self.w);
            vtail[..n]
                .par_chunks_mut(CHUNK)
                .zip(ztail[..n].par_chunks_mut(CHUNK))
                .enumerate()
                .for_each(|(ci, (vc, zc))| {
                    pipe_chunk(ci * CHUNK, n, vhead, zhead, &h, inv, q, !last, vc, zc)
                });
        }
        let (basis, zk) = (&self.basis, &self.zbasis[kk * n..(kk + 1) * n]);
        let vk = &basis[kk * n..(kk + 1) * n];
        // Fixed chunks, summed in order: the same bits for any thread count.
        let sets = kk + 3;
        let partial: Vec<Vec<V>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
                let (zc, vc) = (&zk[lo..hi], &vk[lo..hi]);
                let mut acc = vec![V::ZERO; sets];
                if !last {
                    for (j, a) in acc[..=kk].iter_mut().enumerate() {
                        *a = b1::dot_chunk(&basis[j * n + lo..j * n + hi], zc);
                    }
                    acc[kk + 1] = b1::dot_chunk(zc, zc);
                }
                acc[kk + 2] = b1::dot_chunk(vc, vc);
                acc
            })
            .collect();
        let mut total = vec![V::ZERO; sets];
        for p in &partial {
            for (t, &v) in total.iter_mut().zip(p) {
                *t = *t + v;
            }
        }
        self.t_orth += t.elapsed().as_secs_f64();
        // The next operator application before the sums over the ranks: the order of
        // the GPU path, where it overlaps them.
        if ahead {
            self.apply_column(true, kk)?;
        }
        let t = Instant::now();
        let mut c: Vec<C> = total.into_iter().map(to_c).collect();
        self.reduce(&mut c)?;
        self.t_orth += t.elapsed().as_secs_f64();
        let (zz, vv) = (c[kk + 1].re, c[kk + 2].re);
        c.truncate(kk + 1);
        Ok(PipeDots { d: c, zz, vv })
    }

    fn update_solution(&mut self, y: &[C]) -> Result<()> {
        let n = self.n;
        let y: Vec<V> = y.iter().map(|&v| from_c(v)).collect();
        let basis = &self.basis;
        self.w
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(ci, wc)| combine_chunk(ci * CHUNK, n, basis, &y, wc));
        match self.m {
            Some(m) => {
                let t = Instant::now();
                m.apply_unchecked(&self.w, &mut self.z)?;
                self.t_precond += t.elapsed().as_secs_f64();
                b1::axpy(V::ONE, &self.z, &mut self.x)?;
            }
            None => b1::axpy(V::ONE, &self.w, &mut self.x)?,
        }
        Ok(())
    }

    fn save_best(&mut self) -> Result<()> {
        self.best.copy_from_slice(&self.x);
        Ok(())
    }

    fn restore_best(&mut self) -> Result<()> {
        self.x.copy_from_slice(&self.best);
        Ok(())
    }

    fn take_times(&mut self) -> Result<[f64; 3]> {
        let t = [self.t_spmv, self.t_precond, self.t_orth];
        self.t_spmv = 0.0;
        self.t_precond = 0.0;
        self.t_orth = 0.0;
        Ok(t)
    }

    fn epsilon(&self) -> f64 {
        if self.compressed {
            // Breakdown at the precision the basis is kept in (as on the GPU).
            <V::Low as ferrocuda_kernels::Scalar>::Real::EPSILON.to_f64()
        } else {
            V::Real::EPSILON.to_f64()
        }
    }
}

/// Rounds basis entries to the compressed basis type ([`k::basis_round`]).
fn round_basis<V: Element>(v: &mut [V]) {
    v.par_chunks_mut(CHUNK)
        .for_each(|c| c.iter_mut().for_each(|x| *x = k::basis_round(*x)));
}
