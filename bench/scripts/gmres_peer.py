#!/usr/bin/env python3
"""Peer GMRES for `ferrocuda bench gmres` and `bench solve`: CuPy (GPU) or SciPy (CPU).

Reads a CSR system that ferrocuda wrote as .npy files into DIR (indptr.npy, indices.npy,
data.npy, b.npy; see bench/src/peer.rs), builds the preconditioner (timed: the set-up),
runs one untimed warm-up solve, then the timed solves from x0 = 0 (CuPy: the fastest of
up to 5, as ferrocuda's GPU rows; SciPy: one), and prints ONE JSON object on stdout. Any
failure (a missing module, no GPU, out of memory, a zero pivot) is reported as
{"error": "..."} with exit status 0, so the caller can say "CuPy: not available (...)";
`"unavailable": true` is added where the library itself cannot be used (not installed,
no GPU), as opposed to one configuration failing.

  bench/scripts/gmres_peer.py DIR --backend cupy|scipy --restart 30 --rtol 1e-8
      --maxiter 1000 [--precond none|jacobi|ilu0|ilu] [--host-io]

--maxiter is ferrocuda's budget: Arnoldi steps in total. How each library counts:
- CuPy: `maxiter` counts Arnoldi steps, but the residual is only tested between restart
  cycles, so every cycle runs all `restart` steps and the budget is rounded UP to whole
  cycles. We pass restart * max(1, maxiter // restart), so CuPy never takes more steps
  than ferrocuda may; steps = restart * (completed cycles), the cycles counted with the
  'pr_norm' callback (called once per cycle).
- SciPy: `maxiter` counts restart cycles, except with callback_type='legacy', where it
  counts Arnoldi steps and stops at exactly that many. We use 'legacy' and count the
  steps with the callback (called once per Arnoldi step).
- Tolerance: both stop on ||b - A x|| <= max(rtol ||b||, atol); the keyword is `rtol` in
  current versions (SciPy >= 1.12, CuPy >= 13) and `tol` in older ones. We pass the one
  the installed function has, with atol = 0.
The reported relative_residual is ||b - A x|| / ||b||, recomputed after the solve in the
system's precision.

Preconditioners (--precond), M ~ inverse of A, passed as `M=`:
- Rows of A that store no entry (the ghost rows of ferrocuda's generated cases, where
  b is 0 too) are taken as the identity's rows in the preconditioner, as ferrocuda's
  Jacobi and ILU(0) take them; GMRES still iterates with A. Without this neither
  library's ILU factors such a matrix (CuPy: "a(i,i) is missing", SuperLU: singular).
- jacobi: the reciprocals of A's diagonal (an elementwise product; a zero diagonal entry
  in a row that stores entries is an error naming the row).
- ilu0: the nearest to ILU(0) each library has.
  CuPy: cupyx.scipy.sparse.linalg.spilu(A, fill_factor=1), which CuPy documents as the
  incomplete LU computed on the GPU without fill-in or pivoting (cuSPARSE csrilu02:
  ILU(0) on A's pattern); its L and U solves run on the GPU (cuSPARSE).
  SciPy: scipy.sparse.linalg.spilu (SuperLU's threshold ILU) with drop_tol=0,
  fill_factor=1, permc_spec='NATURAL', diag_pivot_thresh=0: no reordering, no pivoting,
  the factors capped at about A's entries. Not ILU(0): SuperLU chooses which entries to
  keep (and may drop some of A's), so its steps can differ from ILU(0)'s.
- ilu: spilu with the library's defaults (SuperLU's threshold ILU: drop_tol 1e-4,
  fill_factor 10, COLAMD ordering, threshold pivoting), what a SciPy user gets; CuPy's
  spilu without fill_factor=1 factors on the host through SciPy and solves on the GPU.
The entries of L and U (the unit diagonal of L not counted) are reported (precond_nnz).
How M is applied (read from the libraries' sources, reported as `side`):
- CuPy: right preconditioning: the Krylov space is built from A M, the solution is
  x = M y, and the restart test is on the true residual b - A x.
- SciPy: left preconditioning: GMRES minimises ||M (b - A x)|| inside a cycle and stops
  the cycle on it, but every restart tests the true residual b - A x (SciPy's docs).
Set-up (setup_seconds): from the arrays in host memory to a solver ready to run: the
matrix on the device (CuPy) and M built, synchronised. A warm-up of the same steps on a
tiny system of the same dtype runs first, so CuPy's kernel compilation is not counted.
--host-io (CuPy): each timed solve also uploads b and downloads x, as ferrocuda's
DeviceSolver::solve does (host vectors in and out).
"""

import argparse
import inspect
import json
import math
import os
import platform
import sys
import time

# CuPy: the fastest of at most REPS timed solves, stopping after REPS_SECONDS (the rule of
# bench/src/gmres.rs's GPU rows).
REPS = 5
REPS_SECONDS = 2.0


# SciPy's spilu set the nearest it comes to ILU(0): no fill beyond A's entry count, no
# drop by size, A's own order, no pivoting.
SPILU_ILU0 = dict(drop_tol=0.0, fill_factor=1.0, permc_spec="NATURAL", diag_pivot_thresh=0.0)


class Unavailable(Exception):
    """The backend cannot run at all (module missing, no GPU)."""


def tolerance_kwargs(gmres, rtol):
    params = inspect.signature(gmres).parameters
    kw = {"tol" if "tol" in params and "rtol" not in params else "rtol": rtol}
    if "atol" in params:
        kw["atol"] = 0.0
    return kw


def load(directory):
    import numpy as np

    def get(name):
        return np.load(os.path.join(directory, name + ".npy"))

    indptr, indices, data, b = get("indptr"), get("indices"), get("data"), get("b")
    n = len(indptr) - 1
    if len(b) != n or len(indices) != len(data) or indptr[-1] != len(data):
        raise ValueError(
            f"inconsistent system: {n} rows, b {len(b)}, indices {len(indices)}, "
            f"data {len(data)}, indptr[-1] {indptr[-1]}"
        )
    return indptr, indices, data, b


def tiny_system(dtype):
    """A small diagonally dominant tridiagonal CSR system (host arrays) for warm-ups."""
    import numpy as np

    n = 8
    indptr, indices, data = [0], [], []
    for i in range(n):
        for j, v in ((i - 1, -1.0), (i, 4.0), (i + 1, -1.0)):
            if 0 <= j < n:
                indices.append(j)
                data.append(v)
        indptr.append(len(indices))
    return (
        np.array(indptr, dtype=np.int32),
        np.array(indices, dtype=np.int32),
        np.array(data, dtype=dtype),
        np.ones(n, dtype=dtype),
    )


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def identity_rows(xp, indptr, indices, data):
    """The CSR arrays with 1 on the diagonal of every row that stores no entry (the
    generated case's ghost rows), and how many such rows: the matrix a preconditioner is
    built from, as ferrocuda's preconditioners take such rows as the identity's. GMRES
    still iterates with A itself. xp: numpy or cupy (the arrays' module)."""
    n, nnz = len(indptr) - 1, len(indices)
    counts = xp.diff(indptr)
    empty = xp.flatnonzero(counts == 0)
    k = int(empty.size)
    if k == 0:
        return indptr, indices, data, 0
    grow = xp.zeros(n, dtype=indptr.dtype)
    grow[empty] = 1
    new_ptr = xp.zeros(n + 1, dtype=indptr.dtype)
    new_ptr[1:] = xp.cumsum(counts + grow)
    # Entry e of row r moves by the empty rows above r: new_ptr[r] - indptr[r]. Its row
    # is the last row starting at or before e (empty rows start where the next does).
    entry = xp.arange(nnz, dtype=indptr.dtype)
    row = xp.searchsorted(indptr, entry, side="right") - 1
    pos = entry + (new_ptr[row] - indptr[row])
    new_idx = xp.empty(nnz + k, dtype=indices.dtype)
    new_val = xp.empty(nnz + k, dtype=data.dtype)
    new_idx[pos] = indices
    new_val[pos] = data
    new_idx[new_ptr[empty]] = empty.astype(indices.dtype)
    new_val[new_ptr[empty]] = 1
    return new_ptr, new_idx, new_val, k


def inverse_diagonal(xp, indptr, a):
    """1 / diag(a), 1 on the rows that store no entry; a zero diagonal entry in another
    row is an error naming the first such row."""
    d = a.diagonal().copy()
    d[xp.diff(indptr) == 0] = 1
    zero = xp.flatnonzero(d == 0)
    if zero.size:
        raise ValueError(f"jacobi: zero diagonal entry in row {int(zero[0])}")
    return 1 / d


def ghost_note(k):
    return (
        f"; the rows storing no entry ({k}) taken as the identity's rows, as ferrocuda does"
        if k
        else ""
    )


def import_cupy():
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
        import cupyx.scipy.sparse.linalg  # noqa: F401
    except ImportError as e:
        raise Unavailable(f"cupy not available: {e}")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise Unavailable(f"cupy sees no GPU: {type(e).__name__}: {e}")
    if count < 1:
        raise Unavailable("cupy sees no GPU")
    return cupy


def factor_entries(lu, n):
    """Entries of L and U without L's unit diagonal, where the object tells."""
    try:
        return int(lu.L.nnz + lu.U.nnz - n)
    except AttributeError:
        return None


def cupy_setup(cupy, precond, indptr, indices, data):
    """The matrix on the device and M: (a, M, detail, precond_nnz), synchronised."""
    import cupyx.scipy.sparse as sp
    import cupyx.scipy.sparse.linalg as sla

    n = len(indptr) - 1
    di, dj, dd = cupy.asarray(indptr), cupy.asarray(indices), cupy.asarray(data)
    a = sp.csr_matrix((dd, dj, di), shape=(n, n))
    m, detail, nnz = None, "none", None
    if precond == "jacobi":
        dinv = inverse_diagonal(cupy, di, a)
        m = sla.LinearOperator((n, n), matvec=lambda v: dinv * v, dtype=a.dtype)
        k = int((cupy.diff(di) == 0).sum())
        detail = "jacobi: reciprocals of the diagonal, elementwise on the GPU" + ghost_note(k)
    elif precond in ("ilu0", "ilu"):
        if not hasattr(sla, "spilu"):
            raise ValueError(
                f"ILU is not available in CuPy {cupy.__version__}: "
                "no cupyx.scipy.sparse.linalg.spilu"
            )
        pi, pj, pd, k = identity_rows(cupy, di, dj, dd)
        p = a if k == 0 else sp.csr_matrix((pd, pj, pi), shape=(n, n))
        if precond == "ilu0":
            lu = sla.spilu(p, fill_factor=1)
            how = "ILU(0) factored on the GPU (cuSPARSE csrilu02)"
        else:
            lu = sla.spilu(p)
            how = "SciPy's spilu with its defaults, factored on the host"
        m = sla.LinearOperator((n, n), matvec=lu.solve, dtype=a.dtype)
        detail = (
            f"{precond}: cupyx spilu({'fill_factor=1' if precond == 'ilu0' else ''}) -> "
            f"{type(lu).__name__}: {how}, L and U solves on the GPU" + ghost_note(k)
        )
        nnz = factor_entries(lu, n)
    cupy.cuda.Device().synchronize()
    return a, m, detail, nnz


def run_cupy(args, indptr, indices, data, b):
    cupy = import_cupy()
    from cupyx.scipy.sparse.linalg import gmres

    n = len(b)
    restart = min(args.restart, n)
    maxiter = restart * max(1, args.maxiter // restart)
    kw = dict(tolerance_kwargs(gmres, args.rtol), restart=restart)
    cycles = [0]

    def count(_pr_norm):
        cycles[0] += 1

    # Warm-up of the set-up and a solve on a tiny system: CuPy compiles its kernels on
    # first use, which is not the set-up's cost.
    ti, tj, td, tb = tiny_system(data.dtype)
    ta, tm, _, _ = cupy_setup(cupy, args.precond, ti, tj, td)
    gmres(ta, cupy.asarray(tb), maxiter=8, M=tm, callback=count, callback_type="pr_norm", **kw)
    cupy.cuda.Device().synchronize()

    t = time.perf_counter()
    a, m, detail, precond_nnz = cupy_setup(cupy, args.precond, indptr, indices, data)
    setup_seconds = time.perf_counter() - t
    bd = cupy.asarray(b)
    # Warm-up: one cycle, with the callback too, so that every kernel the timed solve
    # launches (the callback's division included) is compiled before the clock starts.
    gmres(a, bd, maxiter=1, M=m, callback=count, callback_type="pr_norm", **kw)
    # The fastest of a few timed solves, the rule ferrocuda's GPU rows use (at most
    # REPS, stopping after REPS_SECONDS).
    seconds, started = None, time.perf_counter()
    for _ in range(REPS):
        cycles[0] = 0
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        if args.host_io:
            bd = cupy.asarray(b)
        x, info = gmres(a, bd, maxiter=maxiter, M=m, callback=count, callback_type="pr_norm", **kw)
        if args.host_io:
            x_host = x.get()
        cupy.cuda.Device().synchronize()
        took = time.perf_counter() - t
        seconds = took if seconds is None else min(seconds, took)
        if time.perf_counter() - started > REPS_SECONDS:
            break
    if args.host_io:
        x = cupy.asarray(x_host)
    rel = float(cupy.linalg.norm(bd - a @ x) / cupy.linalg.norm(bd))
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    if isinstance(name, bytes):
        name = name.decode()
    # 'pr_norm' is called once per cycle; should a later CuPy call it per step, the
    # count alone would exceed the budget: take it as steps then.
    steps = restart * cycles[0] if restart * cycles[0] <= maxiter else cycles[0]
    return dict(
        version=cupy.__version__,
        device=name,
        restart=restart,
        maxiter_arg=maxiter,
        steps=steps,
        seconds=seconds,
        setup_seconds=setup_seconds,
        relative_residual=rel,
        info=int(info),
        side="right" if m is not None else None,
        precond_detail=detail,
        precond_nnz=precond_nnz,
        host_io=bool(args.host_io),
    )


def import_scipy():
    try:
        import numpy  # noqa: F401
        import scipy
        import scipy.sparse  # noqa: F401
        import scipy.sparse.linalg  # noqa: F401
    except ImportError as e:
        raise Unavailable(f"scipy not available: {e}")
    return scipy


def scipy_setup(args, indptr, indices, data):
    """The matrix and M: (a, M, detail, precond_nnz)."""
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla

    n = len(indptr) - 1
    a = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    m, detail, nnz = None, "none", None
    if args.precond == "jacobi":
        dinv = inverse_diagonal(np, indptr, a)
        m = sla.LinearOperator((n, n), matvec=lambda v: dinv * v, dtype=a.dtype)
        k = int((np.diff(indptr) == 0).sum())
        detail = "jacobi: reciprocals of the diagonal" + ghost_note(k)
    elif args.precond in ("ilu0", "ilu"):
        kw = SPILU_ILU0 if args.precond == "ilu0" else {}
        pi, pj, pd, k = identity_rows(np, indptr, indices, data)
        p = a if k == 0 else sp.csr_matrix((pd, pj, pi), shape=(n, n))
        lu = sla.spilu(p.tocsc(), **kw)
        m = sla.LinearOperator((n, n), matvec=lu.solve, dtype=a.dtype)
        nnz = factor_entries(lu, n)
        given = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        detail = (
            f"{args.precond}: scipy spilu({given}), SuperLU's threshold ILU"
            + ("" if kw else " with SciPy's defaults")
            + ghost_note(k)
        )
    return a, m, detail, nnz


def run_scipy(args, indptr, indices, data, b):
    import numpy as np

    scipy = import_scipy()
    from scipy.sparse.linalg import gmres

    n = len(b)
    restart = min(args.restart, n)
    kw = dict(tolerance_kwargs(gmres, args.rtol), restart=restart)
    steps = [0]

    def count(_pr_norm):
        steps[0] += 1

    legacy = dict(callback_type="legacy")
    t = time.perf_counter()
    a, m, detail, precond_nnz = scipy_setup(args, indptr, indices, data)
    setup_seconds = time.perf_counter() - t
    gmres(a, b, maxiter=min(2, args.maxiter), M=m, callback=count, **legacy, **kw)  # warm-up
    steps[0] = 0
    t = time.perf_counter()
    x, info = gmres(a, b, maxiter=args.maxiter, M=m, callback=count, **legacy, **kw)
    seconds = time.perf_counter() - t
    rel = float(np.linalg.norm(b - a @ x) / np.linalg.norm(b))
    return dict(
        version=scipy.__version__,
        device=cpu_name(),
        restart=restart,
        maxiter_arg=args.maxiter,
        steps=steps[0],
        seconds=seconds,
        setup_seconds=setup_seconds,
        relative_residual=rel,
        info=int(info),
        side="left" if m is not None else None,
        precond_detail=detail,
        precond_nnz=precond_nnz,
        host_io=False,
    )


def finite(v):
    return v if not isinstance(v, float) or math.isfinite(v) else None


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="See the module docstring (the top of this file) for the details.",
    )
    p.add_argument("dir", help="directory with indptr.npy, indices.npy, data.npy, b.npy")
    p.add_argument("--backend", choices=["cupy", "scipy"], required=True)
    p.add_argument("--restart", type=int, default=30)
    p.add_argument("--rtol", type=float, default=1e-8)
    p.add_argument("--maxiter", type=int, default=1000, help="Arnoldi steps in total")
    p.add_argument(
        "--precond",
        choices=["none", "jacobi", "ilu0", "ilu"],
        default="none",
        help="preconditioner M (default none)",
    )
    p.add_argument(
        "--host-io",
        action="store_true",
        help="CuPy: time b's upload and x's download with each solve",
    )
    args = p.parse_args()
    out = {"backend": args.backend, "precond": args.precond}
    try:
        if args.restart < 1 or args.maxiter < 1:
            raise ValueError("--restart and --maxiter must be at least 1")
        # The backend first, so that a missing one is reported as such before the files.
        (import_cupy if args.backend == "cupy" else import_scipy)()
        indptr, indices, data, b = load(args.dir)
        run = run_cupy if args.backend == "cupy" else run_scipy
        r = run(args, indptr, indices, data, b)
        out.update(n=len(b), nnz=len(data), dtype=str(data.dtype), rtol=args.rtol, **r)
        out["ms_per_step"] = r["seconds"] * 1e3 / r["steps"] if r["steps"] else None
    except Unavailable as e:
        out["error"] = str(e)
        out["unavailable"] = True
    except Exception as e:  # report, never crash: the benchmark goes on without us
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps({k: finite(v) for k, v in out.items()}))


if __name__ == "__main__":
    sys.exit(main())
