"""Cost of the contextual learner and its unlearning (chapters A10a-A10b) against refitting.

The data: ``N`` rows, ``m = 10`` arms drawn uniformly, contexts uniform on the unit sphere of
``R^d``, Bernoulli rewards with mean ``(1 + x_1)/2 * 0.3``; ``lam = 1``, ``L = 1``.  Measured, for each
``(N, d)`` (all in one process, so the ratios compare like with like):

- ``fit_s``: ``fit_contextual`` (per-arm Gram matrices and moments, factorisations);
- ``rollback_k{1,100}_s``: median over ``--repeats`` requests of ``k`` random rows of ``rollback``
  (rank-k downdate of the touched arms, refactorisation of those arms);
- ``gaussian_k100_s`` / ``adaptive_k100_s``: ``unlearn`` with ``ContextualOptions(method="gaussian")`` and
  ``"adaptive"`` (200 public evaluation contexts) on the same requests: downdate, sensitivity,
  calibration, noise, the release;
- ``actions_s``: the release applied to 10,000 contexts (``ReleasedPolicy.actions``);
- ``refit_s``: ``fit_contextual`` on the remaining ``N - 100`` rows (what a request costs without
  rollback), and ``refit_over_rollback_k100`` = ``refit_s / rollback_k100_s``.

Usage: ``python benchmarks/contextual_speed.py [--out benchmarks/measured/contextual_speed.json]
[--N 10000 100000 1000000] [--d 16 64] [--repeats 5] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.mab.contextual import (  # noqa: E402
    ContextualOptions,
    ContextualRequest,
    fit_contextual,
    rollback,
)
from bandit_unlearning.protocol import unlearn  # noqa: E402

M = 10


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def measure(n: int, d: int, repeats: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    arms = rng.integers(0, M, n)
    rewards = (rng.random(n) < 0.15 * (1 + x[:, 0])).astype(float)
    state, fit_s = timed(lambda: fit_contextual(x, arms, rewards, n_arms=M, context_bound=1.0))
    ev = rng.standard_normal((200, d))
    ev /= np.linalg.norm(ev, axis=1, keepdims=True)
    out = {"N": n, "d": d, "m": M, "fit_s": fit_s}
    for k in (1, 100):
        times, g_times, a_times = [], [], []
        for _ in range(repeats):
            rows = rng.choice(n, size=k, replace=False)
            req = ContextualRequest(x[rows], arms[rows], rewards[rows])
            times.append(timed(lambda: rollback(state, req))[1])
            if k == 100:
                g_opts = ContextualOptions(method="gaussian", epsilon=1.0, delta=1e-6)
                a_opts = ContextualOptions(method="adaptive", epsilon=1.0, delta=1e-6, contexts=ev)
                g_times.append(timed(lambda: unlearn(state, req, options=g_opts, rng=seed))[1])
                a_times.append(timed(lambda: unlearn(state, req, options=a_opts, rng=seed))[1])
        out[f"rollback_k{k}_s"] = float(np.median(times))
        if k == 100:
            out["gaussian_k100_s"] = float(np.median(g_times))
            out["adaptive_k100_s"] = float(np.median(a_times))
            keep = np.setdiff1d(np.arange(n), rows)
            refit, refit_s = timed(
                lambda: fit_contextual(
                    x[keep], arms[keep], rewards[keep], n_arms=M, context_bound=1.0, beta=state.beta
                )
            )
            rolled = rollback(state, req)
            out["refit_s"] = refit_s
            out["refit_over_rollback_k100"] = refit_s / out["rollback_k100_s"]
            out["max_abs_theta_diff_rollback_vs_refit"] = float(np.max(np.abs(rolled.theta - refit.theta)))
    ctx = rng.standard_normal((10_000, d))
    release = unlearn(state, req, options=ContextualOptions(method="rollback"))[1].release
    out["actions_s"] = timed(lambda: release.actions(ctx))[1]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "contextual_speed.json"))
    parser.add_argument("--N", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--d", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for n in args.N:
        for d in args.d:
            row = measure(n, d, args.repeats, args.seed)
            rows.append(row)
            print(
                json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}),
                flush=True,
            )
    result = {
        "benchmark": "contextual_speed",
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
