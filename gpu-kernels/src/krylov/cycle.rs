//! The small dense algebra of one GMRES restart cycle, written once: the host runs it
//! between the vector kernels (the CPU twin, and the GPU path stepped from the host), and
//! one device thread runs the same functions inside a cycle that never waits for the host
//! (`gmres_dcgs2_step`, `gmres_mgs_step`). Everything is `Complex<f64>` whatever the
//! vector type, with no fused operations and `libm`'s `hypot` on both targets, so both
//! take the same steps with the same bits.
//!
//! The state of a cycle is one flat `f64` array ([`state_len`]): a header, the residual
//! estimate of every step, the finished Hessenberg columns, their rotated copies (`R`),
//! the Givens rotations, `g` (the rotated right-hand side `beta e_1`) and the provisional
//! column of the delayed CGS2 (`h'`). A cycle ends ([`Header::DONE`]) when a step meets
//! the tolerance, breaks down, reaches the restart length or gives a non-finite estimate;
//! later steps of the same cycle change nothing.

use num_complex::Complex;

use crate::math::sqrt_f64;

/// The scalar of the small dense algebra.
pub type C = Complex<f64>;

/// Indices of the header fields in the state array.
pub struct Header;

impl Header {
    /// Restart length `m` of the cycle (most steps).
    pub const M: usize = 0;
    /// Absolute residual target.
    pub const TARGET: usize = 1;
    /// Breakdown tolerance: the vector type's machine epsilon.
    pub const EPS: usize = 2;
    /// Steps recorded so far (Hessenberg columns).
    pub const STEPS: usize = 3;
    /// 1 once the cycle has ended.
    pub const DONE: usize = 4;
    /// 1 where it ended because the space stopped growing short of the target.
    pub const STALLED: usize = 5;
    /// Header length.
    pub const LEN: usize = 8;
}

/// Length of the state array of a cycle of at most `m` steps.
pub const fn state_len(m: usize) -> usize {
    Header::LEN + m + 2 * (m * (m + 1)) + 2 * m * m + 3 * m + 2 * (m + 1) + 2 * (m + 1)
}

/// Offsets of the arrays after the header.
#[derive(Clone, Copy)]
struct Layout {
    m: usize,
}

impl Layout {
    fn of(st: &[f64]) -> Layout {
        Layout {
            m: st[Header::M] as usize,
        }
    }
    fn history(self) -> usize {
        Header::LEN
    }
    /// Finished Hessenberg column `j` (`j + 2` entries), entry `i`.
    fn hess(self, j: usize, i: usize) -> usize {
        self.history() + self.m + 2 * (j * (self.m + 1) + i)
    }
    /// Rotated column `j` (`j + 1` entries), entry `i`.
    fn r(self, j: usize, i: usize) -> usize {
        self.hess(0, 0) + 2 * self.m * (self.m + 1) + 2 * (j * self.m + i)
    }
    /// Rotation `j`: `c`, then `s`.
    fn rot(self, j: usize) -> usize {
        self.r(0, 0) + 2 * self.m * self.m + 3 * j
    }
    fn g(self, i: usize) -> usize {
        self.rot(0) + 3 * self.m + 2 * i
    }
    /// The provisional column `h'` of the delayed CGS2.
    fn pending(self, i: usize) -> usize {
        self.g(0) + 2 * (self.m + 1) + 2 * i
    }
}

fn get(st: &[f64], at: usize) -> C {
    C::new(st[at], st[at + 1])
}

fn set(st: &mut [f64], at: usize, v: C) {
    st[at] = v.re;
    st[at + 1] = v.im;
}

/// `|z|`, the same bits on both targets.
pub fn abs(z: C) -> f64 {
    libm::hypot(z.re, z.im)
}

/// `z` to `V`'s parts (the imaginary part dropped for a real `V`).
pub fn to_scalar<V: crate::scalar::Scalar>(z: C) -> V {
    use crate::scalar::RealScalar;
    V::from_parts(V::Real::from_f64(z.re), V::Real::from_f64(z.im))
}

/// `v` as `Complex<f64>`.
pub fn from_scalar<V: crate::scalar::Scalar>(v: V) -> C {
    use crate::scalar::RealScalar;
    C::new(v.re().to_f64(), v.im().to_f64())
}

/// Givens rotation `(c, s)` with `c` real that zeroes `b` in `(a, b)`: `r = c a + s b`,
/// `0 = -conj(s) a + c b`.
pub fn givens(a: C, b: C) -> (f64, C, C) {
    let (na, nb) = (abs(a), abs(b));
    if nb == 0.0 {
        return (1.0, C::new(0.0, 0.0), a);
    }
    if na == 0.0 {
        let s = b.conj() / nb;
        return (0.0, s, C::new(nb, 0.0));
    }
    let norm = libm::hypot(na, nb);
    let phase = a / na;
    let c = na / norm;
    let s = phase * b.conj() / norm;
    (c, s, phase * norm)
}

/// Starts a cycle of at most `m` steps (`m >= 1`): residual `target`, breakdown `eps`.
pub fn begin(st: &mut [f64], m: usize, target: f64, eps: f64) {
    st[..Header::LEN].fill(0.0);
    st[Header::M] = m as f64;
    st[Header::TARGET] = target;
    st[Header::EPS] = eps;
}

/// Steps recorded.
pub fn steps(st: &[f64]) -> usize {
    st[Header::STEPS] as usize
}

/// Whether the cycle has ended.
pub fn done(st: &[f64]) -> bool {
    st[Header::DONE] != 0.0
}

/// Whether it ended because the space stopped growing short of the target.
pub fn stalled(st: &[f64]) -> bool {
    st[Header::STALLED] != 0.0
}

/// The absolute residual estimate after step `j` (`j < steps`).
pub fn estimate(st: &[f64], j: usize) -> f64 {
    st[Layout::of(st).history() + j]
}

fn finish(st: &mut [f64], stalled: bool) {
    st[Header::DONE] = 1.0;
    st[Header::STALLED] = if stalled { 1.0 } else { 0.0 };
}

/// Sets `g = beta e_1`: the rotated right-hand side of an empty cycle.
fn start_least_squares(st: &mut [f64], beta: f64) {
    let l = Layout::of(st);
    set(st, l.g(0), C::new(beta, 0.0));
}

/// Adds the Hessenberg column `j = steps` (entry `i` from `col(i)`, `i <= j + 1`): applies
/// the earlier rotations, makes the new one, stores the column and its rotated copy, and
/// records the new residual estimate `|g_{j+1}|`, which it returns.
fn push_column(st: &mut [f64], col: impl Fn(&[f64], usize) -> C) -> f64 {
    let l = Layout::of(st);
    let j = steps(st);
    // R's column j is the Hessenberg column turned by the earlier rotations, in order:
    // rotation i meets entry i as the rotations before it left it (`a`, carried in a
    // register) and entry i + 1 as it came (no earlier rotation touched it). One pass
    // stores the column and its rotated copy: each step waits on its arithmetic only,
    // not on a store and a load of the entry it just wrote. Entry j + 1, which the new
    // rotation zeroes, is not rotated.
    let mut a = col(st, 0);
    set(st, l.hess(j, 0), a);
    for i in 0..j {
        let b = col(st, i + 1);
        set(st, l.hess(j, i + 1), b);
        let (c, s) = (st[l.rot(i)], get(st, l.rot(i) + 1));
        set(st, l.r(j, i), a * c + s * b);
        a = -s.conj() * a + b * c;
    }
    set(st, l.r(j, j), a);
    let below = col(st, j + 1);
    set(st, l.hess(j, j + 1), below);
    let (c, s, rr) = givens(a, below);
    set(st, l.r(j, j), rr);
    st[l.rot(j)] = c;
    set(st, l.rot(j) + 1, s);
    let gj = get(st, l.g(j));
    set(st, l.g(j), gj * c);
    let next = -s.conj() * gj;
    set(st, l.g(j + 1), next);
    let est = abs(next);
    st[l.history() + j] = est;
    st[Header::STEPS] = (j + 1) as f64;
    est
}

/// The estimate that column `j = steps` with entries `col(i)` (`i <= j`) and `sub` below
/// them would record, the state left as it is ([`push_column`]'s arithmetic, read only):
/// a pipelined cycle looks ahead with it.
pub fn estimate_with(st: &[f64], col: impl Fn(usize) -> C, sub: f64) -> f64 {
    let l = Layout::of(st);
    let j = steps(st);
    let mut a = col(0);
    for i in 0..j {
        let b = col(i + 1);
        let (c, s) = (st[l.rot(i)], get(st, l.rot(i) + 1));
        a = -s.conj() * a + b * c;
    }
    let (_, s, _) = givens(a, C::new(sub, 0.0));
    abs(-s.conj() * get(st, l.g(j)))
}

/// Ends the cycle in `st` where it stands (not as a breakdown): a pipelined cycle that
/// looked ahead wrongly and has no next vector to go on with.
pub fn end(st: &mut [f64]) {
    finish(st, false);
}

/// `y` solving `R y = g[..steps]` by back substitution into `y[..steps]`; a zero
/// diagonal entry gives `y_i = 0`. Column by column, from the last: `y_j` is final once
/// every later column was eliminated from it ([`solve_pivot`]), then column `j` is
/// eliminated from every `y_i`, `i < j` ([`solve_eliminate`]). The device runs the same
/// functions with one thread per `i` (`gmres_solution_coefficients`); each `y_i` meets
/// the same operations in the same order, so both give the same bits.
pub fn solve(st: &[f64], y: &mut [C]) {
    let k = steps(st);
    for (i, yi) in y.iter_mut().enumerate().take(k) {
        *yi = solve_rhs(st, i);
    }
    for j in (0..k).rev() {
        let yj = solve_pivot(st, j, y[j]);
        y[j] = yj;
        for (i, yi) in y.iter_mut().enumerate().take(j) {
            *yi = solve_eliminate(st, j, i, *yi, yj);
        }
    }
}

/// Entry `i` of the right-hand side `g` of the back substitution ([`solve`]).
pub fn solve_rhs(st: &[f64], i: usize) -> C {
    get(st, Layout::of(st).g(i))
}

/// `y_j = s_j / r_jj` (zero where `r_jj` is zero) for the partial sum `s_j` left after
/// every later column was eliminated ([`solve`]).
pub fn solve_pivot(st: &[f64], j: usize, s: C) -> C {
    let d = get(st, Layout::of(st).r(j, j));
    if d == C::new(0.0, 0.0) {
        C::new(0.0, 0.0)
    } else {
        s / d
    }
}

/// `s_i - r_ij y_j`: column `j` eliminated from the partial sum of row `i < j`
/// ([`solve`]).
pub fn solve_eliminate(st: &[f64], j: usize, i: usize, s: C, yj: C) -> C {
    s - get(st, Layout::of(st).r(j, i)) * yj
}

/// What the vector update of a delayed-CGS2 step needs besides `a_j = s_j = du(j)`
/// (`j < k`): the coefficients `b_j` (written through the caller's sink), `c / alpha`
/// and `1 / alpha`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dcgs2Update {
    /// Coefficient of `u` in the next vector, over `alpha`.
    pub c: C,
    /// `1 / alpha`.
    pub inv_alpha: f64,
}

/// What the rest of a delayed-CGS2 step needs from its first phase
/// ([`dcgs2_column`]): `alpha` and `c = q_k^H w`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dcgs2Next {
    /// Norm of the reorthogonalised `u`.
    pub alpha: f64,
    /// `q_k^H w`.
    pub c: C,
}

/// Delayed-CGS2 step `k` (`0 <= k <= m`) of the cycle in `st` (module docs of
/// [`super`] for the vector algebra), from the step's dots: `du(j) = V_j^H u` and
/// `dw(j) = V_j^H w` for `j <= k` (`du(k) = |u|^2`, `dw(k) = u^H w`). Runs the three
/// phases in order: [`dcgs2_column`], [`dcgs2_pending`] for every `i <= k` (the device
/// runs those in parallel: each entry is its own sum, in the same order), and
/// [`dcgs2_update`]; `None` where the cycle ends here (or had ended).
pub fn dcgs2_step(
    st: &mut [f64],
    k: usize,
    du: impl Fn(usize) -> C,
    dw: impl Fn(usize) -> C,
    b: impl FnMut(usize, C),
) -> Option<Dcgs2Update> {
    let next = dcgs2_column(st, k, &du, &dw)?;
    for i in 0..=k {
        let v = dcgs2_pending(st, k, i, &du, &dw, next);
        let at = pending_index(st, i);
        set(st, at, v);
    }
    Some(dcgs2_update(k, &du, &dw, next, b))
}

/// Phase one of step `k`: finishes Hessenberg column `k - 1` (`h'_{k-1} + s` over
/// `alpha`, the norm of the reorthogonalised `u`), records its estimate and ends the
/// cycle where it should; else returns `alpha` and `c = q_k^H w = (u^H w - s^H t) /
/// alpha`.
pub fn dcgs2_column(
    st: &mut [f64],
    k: usize,
    du: impl Fn(usize) -> C,
    dw: impl Fn(usize) -> C,
) -> Option<Dcgs2Next> {
    if done(st) {
        return None;
    }
    let l = Layout::of(st);
    let (target, eps) = (st[Header::TARGET], st[Header::EPS]);
    let uu = du(k).re;
    let mut ss = 0.0;
    for j in 0..k {
        ss += du(j).norm_sqr();
    }
    let alpha2 = uu - ss;
    let tol = 16.0 * eps;
    // NaN counts as a breakdown too.
    let breakdown = alpha2.partial_cmp(&(tol * tol * uu)) != Some(core::cmp::Ordering::Greater);
    let alpha = sqrt_f64(alpha2.max(0.0));
    if k == 0 {
        start_least_squares(st, alpha);
    } else {
        let est = push_column(st, |st, i| {
            if i < k {
                get(st, l.pending(i)) + du(i)
            } else {
                C::new(alpha, 0.0)
            }
        });
        if est <= target || breakdown || k == l.m || !est.is_finite() {
            finish(st, breakdown && est > target);
            return None;
        }
    }
    if breakdown {
        // Only at k = 0 with a zero residual, which the caller excludes.
        finish(st, true);
        return None;
    }
    let mut st_ = C::new(0.0, 0.0);
    for j in 0..k {
        st_ += du(j).conj() * dw(j);
    }
    Some(Dcgs2Next {
        alpha,
        c: (dw(k) - st_) / alpha,
    })
}

/// Phase two of step `k`: entry `i <= k` of the next provisional column
/// `h'_k = ([t; c] - H s) / alpha`, `(H s)_i` summed over the finished columns in column
/// order (column `j` has `j + 2` entries). Reads only; store it at [`pending_index`].
pub fn dcgs2_pending(
    st: &[f64],
    k: usize,
    i: usize,
    du: impl Fn(usize) -> C,
    dw: impl Fn(usize) -> C,
    next: Dcgs2Next,
) -> C {
    let l = Layout::of(st);
    let mut hs = C::new(0.0, 0.0);
    for j in i.saturating_sub(1)..k {
        hs += get(st, l.hess(j, i)) * du(j);
    }
    let tc = if i < k { dw(i) } else { next.c };
    (tc - hs) / next.alpha
}

/// Where entry `i` of the provisional column lives in the state (real part; the
/// imaginary part follows).
pub fn pending_index(st: &[f64], i: usize) -> usize {
    Layout::of(st).pending(i)
}

/// Phase three of step `k`: the update's coefficients, `b_j = t_j - (c / alpha) s_j`
/// through `b(j, b_j)` for `j < k`, `c / alpha` and `1 / alpha`.
pub fn dcgs2_update(
    k: usize,
    du: impl Fn(usize) -> C,
    dw: impl Fn(usize) -> C,
    next: Dcgs2Next,
    mut b: impl FnMut(usize, C),
) -> Dcgs2Update {
    for j in 0..k {
        b(j, dcgs2_b(j, &du, &dw, next));
    }
    next.update()
}

impl Dcgs2Next {
    /// The update's scalars: `c / alpha` and `1 / alpha`.
    pub fn update(self) -> Dcgs2Update {
        Dcgs2Update {
            c: self.c / self.alpha,
            inv_alpha: 1.0 / self.alpha,
        }
    }
}

/// Coefficient `b_j = t_j - (c / alpha) s_j` of phase three (each its own value: the
/// device computes them in parallel).
pub fn dcgs2_b(j: usize, du: impl Fn(usize) -> C, dw: impl Fn(usize) -> C, next: Dcgs2Next) -> C {
    dw(j) - next.c / next.alpha * du(j)
}

/// Starts an MGS cycle: `beta = |r_0|` (the first basis vector is `r_0 / beta`).
pub fn mgs_begin(st: &mut [f64], beta: f64) {
    start_least_squares(st, beta);
}

/// MGS step `k` (`0 <= k < m`) of the cycle in `st`: `h(i)`, `i <= k`, are the
/// projections of `w = A M^{-1} V_k` on the basis, `w2 = |w|^2` after them. Records the
/// estimate; returns whether the cycle goes on.
pub fn mgs_step(st: &mut [f64], k: usize, h: impl Fn(usize) -> C, w2: f64) -> bool {
    if done(st) {
        return false;
    }
    let l = Layout::of(st);
    let (target, eps) = (st[Header::TARGET], st[Header::EPS]);
    let hn = sqrt_f64(w2.max(0.0));
    let mut h2 = 0.0;
    for i in 0..=k {
        h2 += h(i).norm_sqr();
    }
    let hnorm = sqrt_f64(h2);
    let est = push_column(st, |_, i| if i <= k { h(i) } else { C::new(hn, 0.0) });
    if !est.is_finite() {
        finish(st, false);
        return false;
    }
    let breakdown = hn <= 16.0 * eps * hnorm;
    if est <= target || breakdown {
        finish(st, breakdown && est > target);
        return false;
    }
    if k + 1 == l.m {
        finish(st, false);
        return false;
    }
    true
}

/// Pipelined step `k >= 1` of the cycle in `st` (p(1)-GMRES, classical Gram-Schmidt
/// once): finishes Hessenberg column `k - 1` from its projections `h(i) = v_i^H z`, `i <
/// k`, of `z = A M^{-1} v_{k-1}`, and `sub`, the measured norm of what the projection
/// left of `z` (so that the column is exact up to rounding, whatever scale the update
/// used); `znorm = |z|`. Records the estimate; returns whether the cycle goes on. What
/// classical Gram-Schmidt leaves of a vector in the span is its rounding, about `(k + 1)
/// eps |z|`: `sub` below 16 times that is a breakdown (NaN too).
pub fn pipelined_column(
    st: &mut [f64],
    k: usize,
    h: impl Fn(usize) -> C,
    sub: f64,
    znorm: f64,
) -> bool {
    if done(st) {
        return false;
    }
    let l = Layout::of(st);
    let (target, eps) = (st[Header::TARGET], st[Header::EPS]);
    let est = push_column(st, |_, i| if i < k { h(i) } else { C::new(sub, 0.0) });
    if !est.is_finite() {
        finish(st, false);
        return false;
    }
    let breakdown = sub.partial_cmp(&(16.0 * (k + 1) as f64 * eps * znorm))
        != Some(core::cmp::Ordering::Greater);
    if est <= target || breakdown {
        finish(st, breakdown && est > target);
        return false;
    }
    if k == l.m {
        finish(st, false);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn givens_zeroes_the_second_entry() {
        for (a, b) in [
            (C::new(3.0, 0.0), C::new(4.0, 0.0)),
            (C::new(1.0, 2.0), C::new(-0.5, 0.7)),
            (C::new(0.0, 0.0), C::new(2.0, -1.0)),
        ] {
            let (c, s, r) = givens(a, b);
            let top = a * c + s * b;
            let bottom = -s.conj() * a + b * c;
            assert!(abs(top - r) < 1e-14, "{a} {b}");
            assert!(abs(bottom) < 1e-14, "{a} {b}");
            assert!((c * c + s.norm_sqr() - 1.0).abs() < 1e-14);
        }
    }

    /// `estimate_with` predicts what pushing the column records, leaving the state alone.
    #[test]
    fn estimate_with_predicts_the_next_estimate() {
        let m = 5;
        let mut st = vec![0.0; state_len(m)];
        begin(&mut st, m, 0.0, f64::EPSILON);
        mgs_begin(&mut st, 1.5);
        let cols = [
            [
                C::new(0.7, 0.1),
                C::new(0.3, -0.2),
                C::new(0.0, 0.0),
                C::new(0.0, 0.0),
            ],
            [
                C::new(-0.2, 0.4),
                C::new(0.9, 0.0),
                C::new(0.25, 0.1),
                C::new(0.0, 0.0),
            ],
            [
                C::new(0.1, 0.0),
                C::new(-0.3, 0.2),
                C::new(0.8, -0.1),
                C::new(0.4, 0.0),
            ],
        ];
        for (k, col) in cols.iter().enumerate() {
            let sub = col[k + 1].re;
            let before = st.clone();
            let want = estimate_with(&st, |i| col[i], sub);
            assert_eq!(st, before);
            mgs_step(&mut st, k, |i| col[i], sub * sub);
            assert_eq!(estimate(&st, k), want, "column {k}");
        }
    }

    /// MGS on a small dense Hessenberg problem: the estimates are the true least-squares
    /// residuals `min |beta e_1 - H y|` and `solve` returns the minimiser.
    #[test]
    fn least_squares_matches_the_normal_equations() {
        let m = 4;
        let mut st = vec![f64::NAN; state_len(m)];
        begin(&mut st, m, 0.0, f64::EPSILON);
        let beta = 2.0;
        mgs_begin(&mut st, beta);
        // Columns of an upper Hessenberg (m + 1) x m matrix.
        let cols: Vec<Vec<C>> = (0..m)
            .map(|j| {
                // The subdiagonal entry is |w|, real and positive, as in MGS.
                (0..=j + 1)
                    .map(|i| match i == j + 1 {
                        true => C::new(0.5 + j as f64 * 0.25, 0.0),
                        false => {
                            C::new(1.0 + (i * 3 + j) as f64 * 0.25, (i as f64 - j as f64) * 0.5)
                        }
                    })
                    .collect()
            })
            .collect();
        for (k, col) in cols.iter().enumerate() {
            let w2 = col[k + 1].norm_sqr();
            let go = mgs_step(&mut st, k, |i| col[i], w2);
            assert_eq!(go, k + 1 < m, "step {k}");
        }
        assert_eq!(steps(&st), m);
        assert!(done(&st) && !stalled(&st));
        let mut y = vec![C::new(0.0, 0.0); m];
        solve(&st, &mut y);
        // Residual beta e_1 - H y, and the normal equations H^H (beta e_1 - H y) = 0.
        let mut r = vec![C::new(0.0, 0.0); m + 1];
        r[0] = C::new(beta, 0.0);
        for (j, col) in cols.iter().enumerate() {
            for (i, h) in col.iter().enumerate() {
                r[i] -= h * y[j];
            }
        }
        for col in &cols {
            let g: C = col.iter().zip(&r).map(|(h, r)| h.conj() * r).sum();
            assert!(abs(g) < 1e-12, "{g}");
        }
        let rnorm = r.iter().map(|v| v.norm_sqr()).sum::<f64>().sqrt();
        assert!((rnorm - estimate(&st, m - 1)).abs() < 1e-12 * beta);
        // The estimates shrink (least squares over a growing space).
        for j in 1..m {
            assert!(estimate(&st, j) <= estimate(&st, j - 1) * (1.0 + 1e-12));
        }
        // A finished cycle changes nothing.
        let before = st.clone();
        assert!(!mgs_step(&mut st, 0, |_| C::new(1.0, 0.0), 1.0));
        assert_eq!(
            before.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            st.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn state_layout_fits() {
        for m in 1..40 {
            let l = Layout { m };
            let end = l.pending(m) + 2;
            assert_eq!(end, state_len(m), "m = {m}");
            assert!(l.r(m - 1, m - 1) + 2 <= l.rot(0));
            assert!(l.hess(m - 1, m) + 2 <= l.r(0, 0));
        }
    }
}
