"""What a deletion costs against one retraining (chapter B11, ``bandit_unlearning.exact.registry``).

For three prefix-sum learners -- the UCB bandit (chapter B3b, ``ucb_bandit_learner``), TV-stable
disjoint LinUCB (chapter B12) and TV-stable UCB-VI (chapter B7a, on Gymnasium's FrozenLake-v1 when
Gymnasium is installed, else RiverSwim) -- over ``rho`` (tree noise ``sigma_paper(rho, B, T)``),
``T`` and the number ``k`` of steps one returning user occupies (1, 5, 20, random positions; plus
``k = 1`` at step 1, the case whose retraining suffix is the whole run), one process measures:

* ``retrain_s``: CPU time of ``train`` on the users with the dummy at the user's steps (what
  retraining from scratch costs), measured right before each deletion;
* ``one_pass``: ``unlearn(run, DeleteUser(user))`` (one coupling pass, at most one retraining; the default
  ``retrain_if_cheaper``), over ``--requests`` deletions of the same trained run with independent
  generators: each deletion's CPU time over the retraining timed just before it (mean, median,
  max of these ratios), mean / max steps recomputed over ``T``, the fraction that retrained and
  the fraction served by retraining from scratch;
* ``sequential``: the earlier loop ``unlearn_user_sequential`` (Algorithm 3 per step), same numbers;
* ``verify_run_s`` (``verify(run)``) and ``verify_unlearned_s`` on one unlearned run, as ratios to ``retrain_s``.

CPU time (``time.process_time``) is used because the machine is shared; BLAS is single-threaded.
Pairing each deletion with a retraining timed just before it cancels most of the drift of a
loaded machine; single ratios still scatter by about +-25 % there (the same call timed twice
differs that much).  Usage: ``python benchmarks/deletion_cost.py [--out
benchmarks/measured/deletion_cost.json] [--quick] [--requests 8] [--seed 0]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner  # noqa: E402
from bandit_unlearning.exact.learner import train, ZERO_USER  # noqa: E402
from bandit_unlearning.protocol import DeleteUser, unlearn, verify  # noqa: E402
from bandit_unlearning.exact.linucb import (  # noqa: E402
    SENSITIVITY_ZERO_DUMMY,
    LinUCBConfig,
    linear_users,
    linucb_learner,
)
from bandit_unlearning.exact.registry import unlearn_user_sequential, verify_unlearned  # noqa: E402
from bandit_unlearning.exact.tree import sigma_paper  # noqa: E402
from bandit_unlearning.rl.stable import episode_users, stable_ucbvi  # noqa: E402


def _cpu(f):
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def _mdp():
    try:
        import gymnasium

        from bandit_unlearning.rl.gym import from_gymnasium

        return from_gymnasium(gymnasium.make("FrozenLake-v1"), horizon=20).mdp
    except ImportError:  # pragma: no cover - without the gym extra
        from bandit_unlearning.rl.envs import riverswim

        return riverswim(20)


def _learners(quick: bool):
    """name -> (T grid, builder(rho, T) -> learner, population(T, seed) -> users)."""
    cfg = LinUCBConfig(n_arms=5, dim=8)
    theta = np.random.default_rng(1).normal(size=(cfg.n_arms, cfg.dim))
    mdp = _mdp()
    return {
        "UCB bandit (prefix-sum learner)": (
            (128,) if quick else (128, 1024),
            lambda rho, T: ucb_bandit_learner(2, sigma=sigma_paper(rho, np.sqrt(2), T)),
            lambda T, seed: bandit_users([0.7, 0.4], T, seed=seed),
        ),
        "LinUCB (K = 5, d = 8)": (
            (128,) if quick else (128, 1024),
            lambda rho, T: linucb_learner(cfg, sigma_paper(rho, SENSITIVITY_ZERO_DUMMY, T)),
            lambda T, seed: linear_users(theta, T, seed=seed),
        ),
        f"TV-stable UCB-VI ({mdp.name}, H = {mdp.H})": (
            (32,) if quick else (32, 128),
            lambda rho, T: stable_ucbvi(mdp, T, rho),
            lambda T, seed: episode_users(T, rng=np.random.default_rng(seed)),
        ),
    }


def _case(learner, population, T: int, k: int, first: bool, requests: int, rng, sequential: bool):
    users = list(population)
    where = [0] if first else sorted(rng.choice(T, size=k, replace=False).tolist())
    for t in where:
        users[t] = users[where[0]]
    person = users[where[0]]
    dummy_world = [ZERO_USER if i in where else u for i, u in enumerate(users)]
    run = train(learner, users, rng)
    out = {"k": len(where), "positions": "step 1" if first else "random"}
    kinds = {"one_pass": lambda run, person, rng: unlearn(run, DeleteUser(person), rng=rng)}
    if sequential:
        kinds["sequential"] = unlearn_user_sequential
    retrains = []
    for kind, fn in kinds.items():
        ratios, secs, steps, retrained, fresh = [], [], [], [], []
        for _ in range(requests):
            base = _cpu(lambda: train(learner, dummy_world, rng))[0]  # a retraining, right before
            s, (new, rec) = _cpu(lambda: fn(run, person, rng))
            recs = (rec,) if kind == "one_pass" else rec
            retrains.append(base)
            ratios.append(s / base)
            secs.append(s)
            steps.append(sum(r.steps_recomputed for r in recs))
            retrained.append(any(r.retrained for r in recs))
            fresh.append(any(getattr(r, "method", "") == "retrain" for r in recs))
        out[kind] = {
            "mean_s": float(np.mean(secs)),
            "max_s": float(np.max(secs)),
            "mean_ratio_to_retrain": float(np.mean(ratios)),
            "median_ratio_to_retrain": float(np.median(ratios)),
            "max_ratio_to_retrain": float(np.max(ratios)),
            "mean_steps_recomputed_over_T": float(np.mean(steps) / T),
            "max_steps_recomputed_over_T": float(np.max(steps) / T),
            "fraction_retrained": float(np.mean(retrained)),
            "fraction_retrained_from_scratch": float(np.mean(fresh)),
        }
    out["retrain_s"] = float(np.mean(retrains))
    new, rec = unlearn(run, DeleteUser(person), rng=rng)
    out["worst_case_cost_over_T"] = rec.worst_case_cost / T
    base = _cpu(lambda: train(learner, dummy_world, rng))[0]
    out["verify_run_ratio_to_retrain"] = _cpu(lambda: verify(new))[0] / base
    base = _cpu(lambda: train(learner, dummy_world, rng))[0]
    out["verify_unlearned_ratio_to_retrain"] = _cpu(lambda: verify_unlearned(run, new, rec))[0] / base
    out["verify_unlearned_steps_replayed_over_T"] = rec.steps_recomputed / T
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "deletion_cost.json"))
    p.add_argument("--quick", action="store_true", help="one T per learner, rho in (1, 100)")
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rhos = (1.0, 100.0) if args.quick else (1.0, 10.0, 100.0)
    rows = []
    start = time.perf_counter()
    for name, (Ts, build, population) in _learners(args.quick).items():
        for T in Ts:
            for rho in rhos:
                learner = build(rho, T)
                for k, first in ((1, True), (1, False), (5, False), (20, False)):
                    if k > T:
                        continue
                    row = {"learner": name, "T": T, "rho": rho, "sigma": learner.sigma}
                    row.update(
                        _case(
                            learner,
                            population(T, int(rng.integers(2**31))),
                            T,
                            k,
                            first,
                            args.requests,
                            rng,
                            sequential=k > 1,
                        )
                    )
                    rows.append(row)
                    seq = row.get("sequential", {}).get("mean_ratio_to_retrain")
                    print(
                        f"{name[:24]:24s} T={T:5d} rho={rho:6g} k={row['k']:2d} {row['positions']:7s} "
                        f"one pass median {row['one_pass']['median_ratio_to_retrain']:5.2f} "
                        f"(max {row['one_pass']['max_ratio_to_retrain']:5.2f}) x retrain"
                        + ("" if seq is None else f", sequential {seq:5.2f}")
                        + f"; verify_run {row['verify_run_ratio_to_retrain']:4.2f}, "
                        f"verify_unlearned {row['verify_unlearned_ratio_to_retrain']:4.2f}",
                        flush=True,
                    )
    one = [r["one_pass"]["max_ratio_to_retrain"] for r in rows]
    med = [r["one_pass"]["median_ratio_to_retrain"] for r in rows]
    result = {
        "benchmark": "deletion_cost",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "load_average": list(os.getloadavg()),
        "args": vars(args),
        "wall_s": time.perf_counter() - start,
        "rows": rows,
        "summary": {
            "one_pass_max_ratio_to_retrain": float(max(one)),
            "one_pass_largest_median_ratio_to_retrain": float(max(med)),
            "one_pass_max_steps_recomputed_over_T": float(
                max(r["one_pass"]["max_steps_recomputed_over_T"] for r in rows)
            ),
            "sequential_max_ratio_to_retrain": float(
                max(r["sequential"]["max_ratio_to_retrain"] for r in rows if "sequential" in r)
            ),
            "sequential_max_steps_recomputed_over_T": float(
                max(r["sequential"]["max_steps_recomputed_over_T"] for r in rows if "sequential" in r)
            ),
            "verify_run_ratio_range": [
                float(min(r["verify_run_ratio_to_retrain"] for r in rows)),
                float(max(r["verify_run_ratio_to_retrain"] for r in rows)),
            ],
            "verify_unlearned_ratio_range": [
                float(min(r["verify_unlearned_ratio_to_retrain"] for r in rows)),
                float(max(r["verify_unlearned_ratio_to_retrain"] for r in rows)),
            ],
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))
    return result


if __name__ == "__main__":
    main()
