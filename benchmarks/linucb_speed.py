"""Speed and memory of TV-stable disjoint LinUCB (chapter B12, ``bandit_unlearning.exact.linucb``).

Measures, for ``K`` arms and contexts of dimension ``d`` (default ``K = 10``, ``d = 16``) over ``T``
synthetic users (default ``T = 10_000``, ``linear_users``):

* ``steps_per_second``: steps per second of ``train`` with the memory-light tree (the default
  ``LightTree``) at ``sigma = sigma_paper(rho, sqrt 2, T)``, and the same for ``sigma = 0`` (plain
  LinUCB through the same code);
* **ratios against reference loops measured in the same run** (CPU time, median of ``--repeats``
  alternating rounds): at ``sigma = 0`` a Sherman-Morrison numpy loop of plain disjoint LinUCB (rank-one
  update of the chosen arm's inverse; target: ours >= 30% of its speed), and at ``sigma > 0`` a plain numpy
  loop of the same TV-stable algorithm (binary tree mechanism with numpy ``standard_normal`` noise per node,
  the same shift ``2 c_t``, the same inverse and radius; target >= 80%).  Both loops are checked to choose
  the same arms as ``train`` on this stream (at ``sigma > 0`` with their own noise, so only the agreement
  at ``sigma = 0`` is asserted);
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
    SENSITIVITY_ZERO_DUMMY,
    SHIFT_FACTOR,
    TIE_TOLERANCE,
    LinUCBConfig,
    block_size,
    gram_shift,
    linear_users,
    linucb_arms,
    linucb_learner,
    vector_bound,
    widened_radius,
)
from bandit_unlearning.exact.tree import sigma_paper  # noqa: E402


def _choose(scores: np.ndarray) -> int:
    return int(np.flatnonzero(scores >= scores.max() - TIE_TOLERANCE)[0])


def sherman_morrison_loop(contexts: np.ndarray, rewards: np.ndarray, alpha: float, l2: float) -> np.ndarray:
    """Reference: plain disjoint LinUCB, one rank-one (Sherman-Morrison) update of the chosen arm's inverse
    per step.  Returns the arms chosen."""
    T, d = contexts.shape
    K = rewards.shape[1]
    Ainv = np.broadcast_to(np.eye(d) / l2, (K, d, d)).copy()
    b = np.zeros((K, d))
    theta = np.zeros((K, d))
    arms = np.empty(T, dtype=np.int64)
    for t in range(T):
        x = contexts[t]
        Ax = Ainv @ x
        a = _choose(theta @ x + alpha * np.sqrt(np.maximum(Ax @ x, 0.0)))
        arms[t] = a
        v = Ax[a]
        Ainv[a] -= np.outer(v, v) / (1.0 + x @ v)
        b[a] += rewards[t, a] * x
        theta[a] = Ainv[a] @ b[a]
    return arms


def plain_tv_loop(
    contexts: np.ndarray, rewards: np.ndarray, cfg: LinUCBConfig, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """Reference: the same TV-stable algorithm as a plain numpy loop -- binary tree mechanism (one noisy node
    per step, ``standard_normal`` noise), noisy prefix sum over ``popcount(t)`` nodes, Gram matrices
    shifted by ``l2 + 2 c_t``, ``np.linalg.inv``, the widened radius.  Returns the arms chosen."""
    T, d = contexts.shape
    K = rewards.shape[1]
    p = block_size(d)
    i, j = np.triu_indices(d)
    m = i.size
    up = np.where(i == j, 1.0, math.sqrt(2.0))
    full = np.zeros((d, d), dtype=np.int64)
    full[i, j] = full[j, i] = np.arange(m)
    scale = np.where(np.eye(d, dtype=bool), 1.0, 1 / math.sqrt(2.0)).ravel()
    levels = max(1, T.bit_length())
    clean = np.zeros((levels, K * p))
    noisy = np.zeros((levels, K * p))
    theta, Vinv, radius = np.zeros((K, d)), np.broadcast_to(np.eye(d) / cfg.l2, (K, d, d)).copy(), cfg.alpha
    eye = np.eye(d)
    arms = np.empty(T, dtype=np.int64)
    for t in range(1, T + 1):
        x = contexts[t - 1]
        a = _choose(theta @ x + radius * np.sqrt(np.maximum((Vinv @ x) @ x, 0.0)))
        arms[t - 1] = a
        leaf = np.zeros(K * p)
        leaf[a * p : a * p + m] = np.outer(x, x)[i, j] * up
        leaf[a * p + m : (a + 1) * p] = rewards[t - 1, a] * x
        k = (t & -t).bit_length() - 1  # the node completed at step t has level k
        clean[k] = leaf + clean[:k].sum(axis=0)
        clean[:k] = 0.0
        noisy[k] = clean[k] + sigma * rng.standard_normal(K * p)
        prefix = noisy[[lv for lv in range(levels) if t >> lv & 1]].sum(axis=0)
        blocks = prefix.reshape(K, p)
        G = blocks[:, :m][:, full.ravel()].reshape(K, d, d) * scale.reshape(d, d)
        c, g = gram_shift(sigma, d, t, K, cfg.delta), vector_bound(sigma, d, t, K, cfg.delta)
        Vinv = np.linalg.inv(G + (cfg.l2 + SHIFT_FACTOR * c) * eye)
        theta = (Vinv @ blocks[:, m:, None])[:, :, 0]
        radius = widened_radius(cfg.alpha, cfg.l2, cfg.theta_bound, c, g)
    return arms


def _cpu(call) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


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
    contexts = np.array([u.context for u in users])
    rewards = np.array([u.rewards for u in users])
    cfg = LinUCBConfig(a.K, a.d, alpha=0.5, l2=1.0)
    sigma = sigma_paper(a.rho, SENSITIVITY_ZERO_DUMMY, a.T)
    learner, learner0 = linucb_learner(cfg, sigma), linucb_learner(cfg, 0.0)

    train(learner, users[:200], rng)  # warm-up
    plain_tv_loop(contexts[:200], rewards[:200], cfg, sigma, rng)
    sm_arms = sherman_morrison_loop(contexts, rewards, cfg.alpha, cfg.l2)
    plain0_arms = plain_tv_loop(contexts, rewards, cfg, 0.0, rng)
    run0 = train(learner0, users, rng)
    agreement_sm = float(np.mean(linucb_arms(run0) == sm_arms))
    agreement_plain0 = float(np.mean(linucb_arms(run0) == plain0_arms))

    times = {"ours": [], "ours_sigma0": [], "sherman_morrison": [], "plain_loop": []}
    run, train_wall = None, math.inf
    for _ in range(a.repeats):  # alternating rounds
        start = time.perf_counter()
        cpu = time.process_time()
        run = train(learner, users, rng)
        times["ours"].append(time.process_time() - cpu)
        train_wall = min(train_wall, time.perf_counter() - start)
        times["plain_loop"].append(_cpu(lambda: plain_tv_loop(contexts, rewards, cfg, sigma, rng)))
        times["ours_sigma0"].append(_cpu(lambda: train(learner0, users, rng)))
        times["sherman_morrison"].append(
            _cpu(lambda: sherman_morrison_loop(contexts, rewards, cfg.alpha, cfg.l2))
        )
    rate = {k: a.T / float(np.median(v)) for k, v in times.items()}

    tracemalloc.start()
    traced = train(learner, users, rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del traced

    dtimes, costs, retrained = [], [], []
    for t in rng.integers(1, a.T + 1, size=a.requests):
        start = time.perf_counter()
        _, rec = unlearn(run, DeleteStep(int(t)), rng=rng)
        dtimes.append(time.perf_counter() - start)
        costs.append(rec.steps_recomputed / a.T)
        retrained.append(rec.retrained)

    result = {
        "benchmark": "TV-stable disjoint LinUCB (bandit_unlearning.exact.linucb), LightTree",
        "T": a.T,
        "K": a.K,
        "d": a.d,
        "statistic_dim": learner.d,
        "rho": a.rho,
        "sigma": sigma,
        "timing": "CPU seconds, median of alternating rounds, one BLAS thread",
        "steps_per_second": rate["ours"],
        "steps_per_second_sigma0": rate["ours_sigma0"],
        "reference_steps_per_second": {
            "sherman_morrison_sigma0": rate["sherman_morrison"],
            "plain_loop_same_algorithm": rate["plain_loop"],
        },
        "ratio_sigma0_vs_sherman_morrison": rate["ours_sigma0"] / rate["sherman_morrison"],
        "target_ratio_sigma0": 0.30,
        "ratio_vs_plain_loop": rate["ours"] / rate["plain_loop"],
        "target_ratio_vs_plain_loop": 0.80,
        "arms_agreement_sigma0": {"sherman_morrison": agreement_sm, "plain_loop": agreement_plain0},
        "cpu_seconds_all": times,
        "train_seconds": train_wall,
        "peak_memory_mb": peak / 2**20,
        "tree_mb": run.tree.nbytes / 2**20,
        "deletion": {
            "requests": a.requests,
            "mean_seconds": float(np.mean(dtimes)),
            "max_seconds": float(np.max(dtimes)),
            "mean_steps_recomputed_fraction": float(np.mean(costs)),
            "retrained_fraction": float(np.mean(retrained)),
            "mean_time_fraction_of_training": float(np.mean(dtimes) / train_wall),
        },
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
