"""Speed and memory of TV-stable disjoint LinUCB (chapter B12, ``bandit_unlearning.exact.linucb``).

Measures, for ``K`` arms and contexts of dimension ``d`` (default ``K = 10``, ``d = 16``) over ``T``
synthetic users (default ``T = 10_000``, ``linear_users``):

* ``steps_per_second``: steps per second of ``train`` with the memory-light tree (the default
  ``LightTree``) at ``sigma = sigma_paper(rho, sqrt 2, T)``, best of ``--repeats`` (target >= 2,000 on
  one core), and the same for ``sigma = 0`` (plain LinUCB through the same code);
* ``peak_memory_mb``: peak traced memory of one training run (tracemalloc, in a separate run so that
  tracing does not slow the timed one) and ``tree_mb``: the tree's own arrays (``LightTree.nbytes``);
* ``deletion``: wall time of ``--requests`` deletions (Algorithm 3) at uniformly random positions,
  each on the trained run: mean and maximum seconds, mean steps recomputed / T, the fraction that
  retrained, and the mean time as a fraction of the training time.

BLAS is kept single-threaded.  Usage: ``python benchmarks/linucb_speed.py [--out results/linucb_speed.json]
[--T 10000] [--K 10] [--d 16] [--rho 0.3] [--repeats 3] [--requests 20] [--seed 0]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import train  # noqa: E402
from bandit_unlearning.protocol import DeleteStep, unlearn  # noqa: E402
from bandit_unlearning.exact.linucb import (  # noqa: E402
    SENSITIVITY_ZERO_DUMMY, LinUCBConfig, linear_users, linucb_learner,
)
from bandit_unlearning.exact.tree import sigma_paper  # noqa: E402


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "results" / "linucb_speed.json"))
    p.add_argument("--T", type=int, default=10_000)
    p.add_argument("--K", type=int, default=10)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--rho", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    rng = np.random.default_rng(a.seed)
    theta = rng.uniform(0, 1, (a.K, a.d)) / math.sqrt(a.d)
    users = linear_users(theta, a.T, seed=a.seed)
    cfg = LinUCBConfig(a.K, a.d, alpha=0.5, l2=1.0)
    sigma = sigma_paper(a.rho, SENSITIVITY_ZERO_DUMMY, a.T)
    learner = linucb_learner(cfg, sigma)

    train(learner, users[:200], rng)                                   # warm-up
    rates, rates0, run, train_seconds = [], [], None, math.inf
    for _ in range(a.repeats):
        start = time.perf_counter()
        run = train(learner, users, rng)
        elapsed = time.perf_counter() - start
        train_seconds = min(train_seconds, elapsed)
        rates.append(a.T / elapsed)
        start = time.perf_counter()
        train(linucb_learner(cfg, 0.0), users, rng)
        rates0.append(a.T / (time.perf_counter() - start))

    tracemalloc.start()
    traced = train(learner, users, rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del traced

    times, costs, retrained = [], [], []
    for t in rng.integers(1, a.T + 1, size=a.requests):
        start = time.perf_counter()
        _, rec = unlearn(run, DeleteStep(int(t)), rng=rng)
        times.append(time.perf_counter() - start)
        costs.append(rec.steps_recomputed / a.T)
        retrained.append(rec.retrained)

    result = {
        "benchmark": "TV-stable disjoint LinUCB (bandit_unlearning.exact.linucb), LightTree",
        "T": a.T, "K": a.K, "d": a.d, "statistic_dim": learner.d, "rho": a.rho, "sigma": sigma,
        "steps_per_second": max(rates), "steps_per_second_all": rates,
        "steps_per_second_sigma0": max(rates0),
        "target_steps_per_second": 2000, "meets_target": max(rates) >= 2000,
        "train_seconds": train_seconds,
        "peak_memory_mb": peak / 2**20, "tree_mb": run.tree.nbytes / 2**20,
        "deletion": {
            "requests": a.requests, "mean_seconds": float(np.mean(times)), "max_seconds": float(np.max(times)),
            "mean_steps_recomputed_fraction": float(np.mean(costs)), "retrained_fraction": float(np.mean(retrained)),
            "mean_time_fraction_of_training": float(np.mean(times) / train_seconds),
        },
        "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
