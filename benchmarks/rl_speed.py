"""Speed and memory of UCB-VI on tabular MDPs (issue 7, item 6).

Measures episodes per second of non-private UCB-VI (``bandit_unlearning.rl.ucbvi.run_ucbvi``) on the
5x5 gridworld (S = 23, A = 4, H = 10) and on RiverSwim (S = 6, A = 2, H = 20), and the peak memory
of one run (tracemalloc, in a separate run so that tracing does not slow the timed one).  The
fields of TV-stable UCB-VI (``stable_episodes_per_s``, ``unlearning_cost_fraction``, ``rho``) are
``null`` until the binary tree mechanism (``bandit_unlearning.exact.tree``) lands.

Usage: ``python benchmarks/rl_speed.py [--out results/rl_speed.json] [--T 20000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.rl.envs import gridworld, riverswim  # noqa: E402
from bandit_unlearning.rl.ucbvi import (  # noqa: E402
    StatsLayout, UCBVIConfig, plan_from_statistics, run_ucbvi, statistics_sensitivity,
)

STABLE_NOTE = ("stable_episodes_per_s, unlearning_cost_fraction and rho are null: TV-stable UCB-VI needs "
               "the binary tree mechanism (bandit_unlearning.exact.tree), not merged yet")


def episodes_per_second(mdp, T: int, repeats: int, seed: int) -> tuple[float, list[float]]:
    """Best-of-``repeats`` episodes/s of ``run_ucbvi`` (the paper's bonus) and all measurements."""
    run_ucbvi(mdp, min(T, 200), seed=seed)                       # warm-up (caches, imports)
    rates = []
    for r in range(repeats):
        start = time.perf_counter()
        run_ucbvi(mdp, T, seed=seed + r)
        rates.append(T / (time.perf_counter() - start))
    return max(rates), rates


def peak_memory_mb(mdp, T: int, seed: int) -> float:
    """Peak traced allocation (MB) of one ``run_ucbvi`` run of ``T`` episodes."""
    tracemalloc.start()
    try:
        run_ucbvi(mdp, T, seed=seed)
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def planner_microseconds(mdp, T: int, seed: int, calls: int = 500) -> float:
    """Mean time (us) of one ``plan_from_statistics`` call on a noisy prefix sum (sigma for rho = 1):
    what TV-stable UCB-VI pays per episode on top of the tree and the rollout."""
    run = run_ucbvi(mdp, min(T, 2000), seed=seed)
    layout = StatsLayout.of(mdp)
    sigma = statistics_sensitivity(mdp.H) * np.sqrt(np.log2(T)) / np.sqrt(2)
    rng = np.random.default_rng(seed)
    u = layout.accumulate(run.indices, run.values) + sigma * np.sqrt(np.log2(T)) * rng.normal(size=layout.d)
    config = UCBVIConfig.of(mdp, T, sigma=sigma)
    plan_from_statistics(u, config)
    start = time.perf_counter()
    for _ in range(calls):
        plan_from_statistics(u, config)
    return (time.perf_counter() - start) / calls * 1e6


def measure(T: int, repeats: int, seed: int) -> dict:
    out = {}
    for key, mdp in (("gridworld", gridworld(horizon=10)), ("riverswim", riverswim(horizon=20))):
        best, rates = episodes_per_second(mdp, T, repeats, seed)
        out[key] = {
            "stable_episodes_per_s": None,
            "ucbvi_episodes_per_s": round(best, 1),
            "ucbvi_episodes_per_s_all_repeats": [round(r, 1) for r in rates],
            "peak_memory_mb": round(peak_memory_mb(mdp, T, seed), 2),
            "plan_from_statistics_us": round(planner_microseconds(mdp, T, seed), 1),
            "unlearning_cost_fraction": None,
            "S": mdp.S, "A": mdp.A, "H": mdp.H, "T": T, "rho": None,
            "mdp": mdp.name,
            "note": STABLE_NOTE,
        }
    out["meta"] = {
        "what": "non-private UCB-VI (sigma = 0, paper's bonus, delta = 0.1), episodes/s = best of repeats; "
                "peak memory = tracemalloc peak of one run (policies, trajectories, statistics included); "
                "plan_from_statistics_us = one planning call from a dense noisy prefix sum (sigma at rho = 1)",
        "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "rl_speed.json")
    parser.add_argument("--T", type=int, default=20_000, help="episodes per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.T < 1 or args.repeats < 1:
        parser.error("--T and --repeats must be >= 1")
    result = measure(args.T, args.repeats, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for key in ("gridworld", "riverswim"):
        r = result[key]
        print(f"{key:10s} S={r['S']:2d} A={r['A']} H={r['H']:2d} T={r['T']}: UCB-VI {r['ucbvi_episodes_per_s']:,.0f} "
              f"episodes/s, peak memory {r['peak_memory_mb']:.1f} MB, "
              f"plan_from_statistics {r['plan_from_statistics_us']:.0f} us/call")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
