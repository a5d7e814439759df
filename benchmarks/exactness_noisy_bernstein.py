"""Exact unlearning with the noisy Bernstein bonus: chapter B8's exactness battery, rerun.

The bonus of chapter B7c post-processes the tree's noisy prefix sums, so Algorithm 3's exactness
(chapter B8) must hold unchanged.  This script repeats chapter B8's experiment -- RiverSwim (H = 3),
T = 16 episodes, tree noise sigma = 0.5, R = 800 runs per world, deleted positions 1, 6 and 16,
14 statistics, per-test level 1e-6 / 42 (Bonferroni, overall 1e-6) -- with
``stable_ucbvi(..., bonus_kind="noisy_bernstein")`` instead of the paper's bonus scaled by 0.05, and
the three broken variants of the tree's half of Algorithm 3 (``VARIANTS``) on the same footing.
It writes the p-values to JSON and exits non-zero if the correct unlearning is rejected or a broken
variant is not.

Usage: ``nice python benchmarks/exactness_noisy_bernstein.py [--out benchmarks/measured/exactness_noisy_bernstein.json] [--R 800]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import train, ZERO_USER  # noqa: E402
from bandit_unlearning.protocol import DeleteStep, unlearn, verify  # noqa: E402
from bandit_unlearning.experiments.exactness import battery  # noqa: E402
from bandit_unlearning.testing.broken import VARIANTS, with_tree_class  # noqa: E402
from bandit_unlearning.experiments.rl_unlearning import rl_run_statistics  # noqa: E402
from bandit_unlearning.rl.envs import riverswim  # noqa: E402
from bandit_unlearning.rl.stable import population_users, stable_ucbvi  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "exactness_noisy_bernstein.json"))
    ap.add_argument("--R", type=int, default=800)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261208)
    user_seed = int(rng.integers(2**63))
    mdp, T, sigma, positions = riverswim(horizon=3), 16, 0.5, (1, 6, 16)
    learner = stable_ucbvi(mdp, T, sigma=sigma, bonus_kind="noisy_bernstein")
    users = population_users(mdp, T, seed=user_seed)
    cache, categorical = {}, ("final policy",)
    start = time.perf_counter()
    samples = {t: {"D": [], "U": [], **{bug: [] for bug in VARIANTS}} for t in positions}
    for t in positions:
        dummy_users = users[: t - 1] + (ZERO_USER,) + users[t:]
        for _ in range(args.R):
            samples[t]["D"].append(rl_run_statistics(train(learner, dummy_users, rng), t, cache))
            original = train(learner, users, rng)
            unlearned, _ = unlearn(original, DeleteStep(t), rng=rng)
            samples[t]["U"].append(rl_run_statistics(unlearned, t, cache))
            for bug, cls in VARIANTS.items():
                samples[t][bug].append(
                    rl_run_statistics(
                        unlearn(with_tree_class(original, cls), DeleteStep(t), rng=rng)[0], t, cache
                    )
                )
        verify(unlearned)
    n_tests = sum(len(battery(samples[t]["U"], samples[t]["D"], categorical)) for t in positions)
    level = 1e-6 / n_tests
    result = {
        "mdp": mdp.name,
        "T": T,
        "sigma": sigma,
        "R": args.R,
        "positions": positions,
        "bonus_kind": "noisy_bernstein",
        "per_test_level": level,
        "n_tests": n_tests,
        "seconds": round(time.perf_counter() - start, 1),
        "distinct_final_policies": len({s["final policy"] for t in positions for s in samples[t]["D"]}),
        "mean_policy_changes": float(
            np.mean([s["policy changes"] for t in positions for s in samples[t]["D"]])
        ),
        "smallest_p": {},
    }
    for name in ("U",) + tuple(VARIANTS):
        for t in positions:
            pv = battery(samples[t][name], samples[t]["D"], categorical)
            worst = min(pv, key=pv.get)
            result["smallest_p"][f"{'correct' if name == 'U' else name} t={t}"] = [float(pv[worst]), worst]
    ok = all(v[0] > level for k, v in result["smallest_p"].items() if k.startswith("correct")) and all(
        min(result["smallest_p"][f"{bug} t={t}"][0] for t in positions) < level for bug in VARIANTS
    )
    result["passed"] = bool(ok)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
