"""Cost of the model with a lifecycle (chapter A9a): fit, one deletion request, refit, save and load.

The data: ``N`` rows on ``m = 100`` integer-labelled arms drawn uniformly, Bernoulli(0.3) rewards
(``bandit_unlearning.mab.model.LCBModel``).  Measured, for each ``N``:

- ``fit_s``: ``LCBModel.fit`` from numpy arrays (labels, counts, reward sums, the row store);
- ``delete_k_s``: the median over ``--requests`` requests of ``k`` random live rows of the wall time of
  ``delete(rows=...)`` with ``method="rollback"`` (exact) and with ``method="adaptive"`` (accountant on);
- ``refit_s``: what a request would cost without the lifecycle: ``LCBModel.fit`` on the remaining rows,
  and the bare statistic ``fit_lcb`` (two ``bincount`` calls) on them, the cheapest possible refit;
- ``save_s`` / ``load_statistics_s`` / ``load_model_s``: ``save`` of the whole model (rows and
  statistics) and ``load_statistics`` (the statistics alone, checksum verified) / ``load``.

Usage: ``python benchmarks/model_lifecycle.py [--out results/model_lifecycle.json] [--N 100000 ...]
[--k 100] [--requests 30] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.mab.data import OfflineDataset  # noqa: E402
from bandit_unlearning.mab.lcb import fit_lcb  # noqa: E402
from bandit_unlearning.mab.model import LCBModel, load_model, load_statistics  # noqa: E402

M = 100


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def measure(n: int, k: int, requests: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    arms = rng.integers(0, M, n)
    rewards = (rng.random(n) < 0.3).astype(float)
    model, fit_s = timed(lambda: LCBModel.fit(arms, rewards, rng=seed))
    adaptive = LCBModel.fit(
        arms,
        rewards,
        method="adaptive",
        epsilon=1.0,
        delta=1e-6,
        sigma=float(np.sqrt(np.log(M * n) / (2 * n / M))),
        rng=seed,
    )
    times = {"rollback": [], "adaptive": []}
    pick = np.random.default_rng(seed + 1)
    for _ in range(requests):
        rows = np.sort(pick.choice(n, size=4 * k, replace=False))
        rows = rows[model._alive[rows] & adaptive._alive[rows]][:k]
        for name, mdl in (("rollback", model), ("adaptive", adaptive)):
            _, t = timed(lambda: mdl.delete(rows=rows))
            times[name].append(t)
    live = model.row_ids
    _, refit_model_s = timed(
        lambda: LCBModel.fit(arms[live], rewards[live], tau=model.tau, labels=model.labels)
    )
    _, refit_stat_s = timed(lambda: fit_lcb(OfflineDataset(arms[live], rewards[live], M), tau=model.tau))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.npz")
        _, save_s = timed(lambda: model.save(path))
        size = os.path.getsize(path)
        load_stat = min(timed(lambda: load_statistics(path))[1] for _ in range(5))
        _, load_model_s = timed(lambda: load_model(path, rng=seed))
    delete_s = {name: float(np.median(t)) for name, t in times.items()}
    return {
        "N": n,
        "m": M,
        "k": k,
        "requests": requests,
        "fit_s": fit_s,
        "delete_k_median_s": delete_s,
        "refit_model_s": refit_model_s,
        "refit_statistic_s": refit_stat_s,
        "speedup_vs_refit_model": refit_model_s / delete_s["adaptive"],
        "speedup_vs_refit_statistic": refit_stat_s / delete_s["adaptive"],
        "save_s": save_s,
        "file_bytes": size,
        "load_statistics_s": load_stat,
        "load_model_s": load_model_s,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "model_lifecycle.json"))
    parser.add_argument("--N", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    runs = [measure(n, args.k, args.requests, args.seed) for n in args.N]
    out = {
        "benchmark": "model_lifecycle",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
        "processor": platform.processor(),
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    for r in runs:
        print(
            f"N = {r['N']:>10,d}: fit {r['fit_s']:.3f} s; delete k={r['k']} "
            f"{1e3 * r['delete_k_median_s']['rollback']:.3f} ms (rollback) / "
            f"{1e3 * r['delete_k_median_s']['adaptive']:.3f} ms (adaptive); refit {r['refit_model_s']:.3f} s "
            f"(statistic only {r['refit_statistic_s']:.3f} s): x{r['speedup_vs_refit_model']:,.0f} "
            f"(x{r['speedup_vs_refit_statistic']:,.0f}); save {r['save_s']:.3f} s ({r['file_bytes'] / 1e6:.1f} MB), "
            f"load statistics {1e3 * r['load_statistics_s']:.2f} ms, load model {r['load_model_s']:.3f} s"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
