#!/usr/bin/env python3
"""Peer GMRES for `ferrocuda bench gmres`: CuPy (GPU) or SciPy (CPU) on the same system.

Reads a CSR system that ferrocuda wrote as .npy files into DIR (indptr.npy, indices.npy,
data.npy, b.npy; see bench/src/peer.rs), runs one small untimed warm-up solve, then the
timed solves from x0 = 0 (CuPy: the fastest of up to 5, as ferrocuda's GPU rows; SciPy:
one), and prints ONE JSON object on stdout. Any failure (a missing
module, no GPU, out of memory) is reported as {"error": "..."} with exit status 0, so the
caller can say "CuPy: not available (...)".

  bench/scripts/gmres_peer.py DIR --backend cupy|scipy --restart 30 --rtol 1e-8 --maxiter 1000

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


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_cupy(args, indptr, indices, data, b):
    import cupy
    import cupyx.scipy.sparse as sp
    from cupyx.scipy.sparse.linalg import gmres

    n = len(b)
    a = sp.csr_matrix(
        (cupy.asarray(data), cupy.asarray(indices), cupy.asarray(indptr)), shape=(n, n)
    )
    bd = cupy.asarray(b)
    restart = min(args.restart, n)
    maxiter = restart * max(1, args.maxiter // restart)
    kw = dict(tolerance_kwargs(gmres, args.rtol), restart=restart)
    cycles = [0]

    def count(_pr_norm):
        cycles[0] += 1

    # Warm-up: one cycle, with the callback too, so that every kernel the timed solve
    # launches (the callback's division included) is compiled before the clock starts.
    gmres(a, bd, maxiter=1, callback=count, callback_type="pr_norm", **kw)
    # The fastest of a few timed solves, the rule ferrocuda's GPU rows use (at most
    # REPS, stopping after REPS_SECONDS).
    seconds, started = None, time.perf_counter()
    for _ in range(REPS):
        cycles[0] = 0
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        x, info = gmres(a, bd, maxiter=maxiter, callback=count, callback_type="pr_norm", **kw)
        cupy.cuda.Device().synchronize()
        took = time.perf_counter() - t
        seconds = took if seconds is None else min(seconds, took)
        if time.perf_counter() - started > REPS_SECONDS:
            break
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
        relative_residual=rel,
        info=int(info),
    )


def run_scipy(args, indptr, indices, data, b):
    import numpy as np
    import scipy
    import scipy.sparse as sp
    from scipy.sparse.linalg import gmres

    n = len(b)
    a = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    restart = min(args.restart, n)
    kw = dict(tolerance_kwargs(gmres, args.rtol), restart=restart)
    steps = [0]

    def count(_pr_norm):
        steps[0] += 1

    legacy = dict(callback_type="legacy")
    gmres(a, b, maxiter=min(2, args.maxiter), callback=count, **legacy, **kw)  # warm-up
    steps[0] = 0
    t = time.perf_counter()
    x, info = gmres(a, b, maxiter=args.maxiter, callback=count, **legacy, **kw)
    seconds = time.perf_counter() - t
    rel = float(np.linalg.norm(b - a @ x) / np.linalg.norm(b))
    return dict(
        version=scipy.__version__,
        device=cpu_name(),
        restart=restart,
        maxiter_arg=args.maxiter,
        steps=steps[0],
        seconds=seconds,
        relative_residual=rel,
        info=int(info),
    )


def finite(v):
    return v if not isinstance(v, float) or math.isfinite(v) else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", help="directory with indptr.npy, indices.npy, data.npy, b.npy")
    p.add_argument("--backend", choices=["cupy", "scipy"], required=True)
    p.add_argument("--restart", type=int, default=30)
    p.add_argument("--rtol", type=float, default=1e-8)
    p.add_argument("--maxiter", type=int, default=1000, help="Arnoldi steps in total")
    args = p.parse_args()
    out = {"backend": args.backend}
    try:
        if args.restart < 1 or args.maxiter < 1:
            raise ValueError("--restart and --maxiter must be at least 1")
        indptr, indices, data, b = load(args.dir)
        run = run_cupy if args.backend == "cupy" else run_scipy
        r = run(args, indptr, indices, data, b)
        out.update(n=len(b), nnz=len(data), dtype=str(data.dtype), rtol=args.rtol, **r)
        out["ms_per_step"] = r["seconds"] * 1e3 / r["steps"] if r["steps"] else None
    except ImportError as e:
        out["error"] = f"{args.backend} not available: {e}"
    except Exception as e:  # report, never crash: the benchmark goes on without us
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps({k: finite(v) for k, v in out.items()}))


if __name__ == "__main__":
    sys.exit(main())
