"""Learning with the proven noisy Bernstein bonus (chapter B7c) at practical sizes, against anchors.

Measures, for ``bonus_kind="noisy_bernstein"`` (optimism proven under the tree's noise) and, for scale,
chapter B6a's ``simplified`` bonus (no guarantee), both pooled over the steps (the MDPs are stationary):

* **gridworld** (5x5, S = 23, A = 4, H = 10): the exact expected regret per episode of every policy
  played, non-private (``run_ucbvi``) and TV-stable at rho in ``--rhos`` (``stable_ucbvi``, paper
  calibration); the first episode from which the 100-episode moving mean of the regret stays
  ``<= 0.1 V*`` up to ``T`` ("sustained"; None if never); the regret ``R(t)`` against the lower
  bound's value ``H sqrt(SAt) + SAH/rho`` (Theorem 4.4, constants dropped) at a few ``t``;
* **FrozenLake** (Gymnasium 4x4 slippery, S = 17, H = 20, optimum 0.199): the success probability
  (exact value of the policies played, mean over the last 100 episodes) non-private and at rho = 10;
* **per step, non-private** against rlberry's stage-dependent ``UCBVIAgent`` on the gridworld
  (``T = 2000``, seeds 0..2, mean rewards): rlberry's regret is read from
  ``benchmarks/measured/learning_vs_rlberry.json`` (same MDP, seeds and T; rlberry needs its own
  environment, see ``benchmarks/learning_vs_rlberry.py``).

Usage: ``nice python benchmarks/noisy_bernstein_learning.py [--out benchmarks/measured/noisy_bernstein.json]
[--T-grid 6000] [--T-grid-nonprivate 12000] [--T-grid-rho RHO:T,...] [--T-lake 10000] [--rhos inf,100,10,1]
[--kinds noisy_bernstein,simplified] [--parts grid,rlberry,lake] [--lake-rhos inf,10] [--merge A.json,B.json]``;
rows of an existing ``--out`` are kept unless rerun, and ``--merge`` copies the rows of other runs (one
process per rho) into it;
``--theorem41-only [--T-theorem 8000] [--theorem-rhos inf,100,30,10,3,1] [--merge ...] --out
benchmarks/measured/noisy_bernstein_theorem41.json``: only the
regret over T on a small RiverSwim (S = 3, A = 2, H = 5) where the proven bonus learns, at rho = inf,
100, 30, 10, 3, 1, with the log-log slope of R(T) over the last two doublings (Theorem 4.1's regimes).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import train  # noqa: E402
from bandit_unlearning.rl.envs import gridworld  # noqa: E402
from bandit_unlearning.rl.mdp import optimal_value, policy_values, regret  # noqa: E402
from bandit_unlearning.rl.stable import population_users, run_policies, stable_ucbvi  # noqa: E402
from bandit_unlearning.rl.ucbvi import run_ucbvi  # noqa: E402

WINDOW = 100


def policies_of(mdp, T, rho, kind, seed, reward_noise="bernoulli"):
    """Policies ``[T, H, S]`` played and the seconds taken."""
    start = time.perf_counter()
    if rho == math.inf:
        pol = run_ucbvi(mdp, T, seed=seed, bonus_kind=kind, pooled=True, reward_noise=reward_noise).policies
    else:
        learner = stable_ucbvi(mdp, T, rho, bonus_kind=kind, pooled=True, reward_noise=reward_noise)
        pol = run_policies(train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(seed)))
    return pol, time.perf_counter() - start


def sustained(per_episode, level):
    """First episode ``t`` (1-based, end of its window) from which the moving mean stays ``<= level``."""
    moving = np.convolve(per_episode, np.ones(WINDOW) / WINDOW, mode="valid")
    above = np.flatnonzero(moving > level)
    if above.size == 0:
        return WINDOW
    if above[-1] == moving.size - 1:
        return None
    return int(above[-1] + 1 + WINDOW)


def grid_row(mdp, T, rho, kind, seed=0):
    pol, sec = policies_of(mdp, T, rho, kind, seed)
    per = regret(mdp, pol)
    v_star = optimal_value(mdp)
    cum = np.cumsum(per)
    ts = [t for t in (100, 300, 1000, 3000, 6000, 12000, 20000) if t <= T]
    lower = {
        t: mdp.H * math.sqrt(mdp.S * mdp.A * t) + (0 if rho == math.inf else mdp.S * mdp.A * mdp.H / rho)
        for t in ts
    }
    return {
        "rho": None if rho == math.inf else rho,
        "bonus_kind": kind,
        "T": T,
        "seed": seed,
        "seconds": round(sec, 1),
        "regret_total": round(float(cum[-1]), 1),
        "mean_regret_last_window": round(float(per[-WINDOW:].mean()), 4),
        "episodes_to_sustained_0.1_Vstar": sustained(per, 0.1 * v_star),
        "regret_at": {str(t): round(float(cum[t - 1]), 1) for t in ts},
        "lower_bound_value_at": {str(t): round(lower[t], 1) for t in ts},
        "regret_over_lower_bound_at": {str(t): round(float(cum[t - 1]) / lower[t], 2) for t in ts},
        "moving_mean_every_100": np.convolve(per, np.ones(WINDOW) / WINDOW, mode="valid")[::100]
        .round(4)
        .tolist(),
    }


def theorem41_rows(T, rhos, seed=0):
    """Regret over T on a small RiverSwim (S = 3, A = 2, H = 5), pooled, where the proven bonus learns:
    ``R(t)`` at a doubling grid of ``t``, the log-log slope over the last two doublings, per rho."""
    from bandit_unlearning.rl.envs import riverswim

    mdp = riverswim(horizon=5, n_states=3)
    ts = [t for t in (125, 250, 500, 1000, 2000, 4000, 8000, 16000) if t <= T]
    rows = []
    for rho in rhos:
        pol, sec = policies_of(mdp, T, rho, "noisy_bernstein", seed)
        cum = np.cumsum(regret(mdp, pol))
        tail = np.array(ts[-3:])
        slope = float(np.polyfit(np.log(tail), np.log(cum[tail - 1]), 1)[0])
        rows.append(
            {
                "rho": None if rho == math.inf else rho,
                "T": T,
                "seconds": round(sec, 1),
                "regret_at": {str(t): round(float(cum[t - 1]), 1) for t in ts},
                "loglog_slope_last_two_doublings": round(slope, 3),
            }
        )
        print("theorem 4.1", rows[-1], flush=True)
    return {"mdp": mdp.name, "S": mdp.S, "A": mdp.A, "H": mdp.H, "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "noisy_bernstein.json"))
    ap.add_argument("--T-grid", type=int, default=6000)
    ap.add_argument("--T-grid-nonprivate", type=int, default=12000)
    ap.add_argument("--T-grid-rho", default="", help="per-rho horizons overriding --T-grid, e.g. '1:20000'")
    ap.add_argument("--T-lake", type=int, default=10000)
    ap.add_argument("--lake-rhos", default="inf,10", help="FrozenLake rows ('inf': non-private)")
    ap.add_argument("--rhos", default="inf,100,10,1", help="gridworld rows ('inf': non-private)")
    ap.add_argument("--kinds", default="noisy_bernstein,simplified", help="bonus kinds of the gridworld rows")
    ap.add_argument(
        "--parts",
        default="grid,rlberry,lake",
        help="which parts to run; the others are kept from an existing --out file",
    )
    ap.add_argument(
        "--merge",
        default="",
        help="comma-separated JSON files of earlier runs of this script (e.g. one rho per process); "
        "their gridworld and FrozenLake rows replace the same (rho, bonus) rows of --out",
    )
    ap.add_argument(
        "--theorem41-only",
        action="store_true",
        help="only the regret-over-T rows on the small RiverSwim (JSON: --out)",
    )
    ap.add_argument("--T-theorem", type=int, default=8000)
    ap.add_argument(
        "--theorem-rhos",
        default="inf,100,30,10,3,1",
        help="rows of --theorem41-only; rows of an existing --out for other rho are kept",
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.theorem41_only:
        rhos = [float(r) for r in args.theorem_rhos.split(",") if r]
        rows = theorem41_rows(args.T_theorem, rhos)
        for extra in (x for x in args.merge.split(",") if x):  # rows of other processes (one rho each)
            rows["rows"] += json.loads(Path(extra).read_text())["rows"]
        rows["rows"].sort(key=lambda r: -(r["rho"] or math.inf))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, indent=1))
        return rows
    parts = set(args.parts.split(","))
    kinds = args.kinds.split(",")
    T_rho = {float(k): int(v) for k, v in (x.split(":") for x in args.T_grid_rho.split(",") if x)}
    result = json.loads(out.read_text()) if out.exists() else {}
    result.update(
        {
            "machine": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "platform": platform.platform(),
            },
            "window": WINDOW,
        }
    )
    result.setdefault("grid", [])
    result.setdefault("frozenlake", [])
    result.setdefault("per_step_vs_rlberry", None)

    def save():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))

    def replace_row(rows, new):
        rows[:] = [r for r in rows if (r["rho"], r["bonus_kind"]) != (new["rho"], new["bonus_kind"])] + [new]

    for extra in (x for x in args.merge.split(",") if x):
        other = json.loads(Path(extra).read_text())
        for key in ("grid", "frozenlake"):
            for row in other.get(key, []):
                replace_row(result[key], row)
        for key in ("per_step_vs_rlberry", "frozenlake_optimum"):
            if other.get(key) is not None:
                result[key] = other[key]
        save()

    grid = gridworld()
    result["grid_V_star"] = optimal_value(grid)
    if "grid" in parts:
        for rho in [float(r) for r in args.rhos.split(",") if r]:
            for kind in kinds:
                T = args.T_grid_nonprivate if rho == math.inf else T_rho.get(rho, args.T_grid)
                row = grid_row(grid, T, rho, kind)
                replace_row(result["grid"], row)
                print(
                    "grid",
                    rho,
                    kind,
                    T,
                    row["mean_regret_last_window"],
                    row["episodes_to_sustained_0.1_Vstar"],
                    row["seconds"],
                    flush=True,
                )
                save()

    if "rlberry" in parts:
        # per step, non-private, against rlberry's stage-dependent UCB-VI (reference measured by learning_vs_rlberry.py)
        ref = json.loads((ROOT / "benchmarks" / "measured" / "learning_vs_rlberry.json").read_text())
        rl_row = next(r for r in ref["rows"] if r["learner"] == "rlberry UCBVIAgent stage_dependent=True")
        mine = [
            float(
                regret(
                    grid,
                    run_ucbvi(
                        grid, ref["T"], seed=s, bonus_kind="noisy_bernstein", reward_noise=ref["reward_noise"]
                    ).policies,
                ).sum()
            )
            for s in ref["seeds"]
        ]
        result["per_step_vs_rlberry"] = {
            "T": ref["T"],
            "seeds": ref["seeds"],
            "rlberry_regret_mean": rl_row["regret_mean"],
            "noisy_bernstein_regret_per_seed": [round(x, 1) for x in mine],
            "ratio": round(float(np.mean(mine)) / rl_row["regret_mean"], 3),
        }
        print(result["per_step_vs_rlberry"], flush=True)
        save()

    if "lake" in parts:
        try:
            import gymnasium

            from bandit_unlearning.rl.gym import from_gymnasium
        except ImportError:
            print("gymnasium missing: no FrozenLake rows")
            return result
        lake = from_gymnasium(gymnasium.make("FrozenLake-v1"), horizon=20)
        result["frozenlake_optimum"] = float(lake.raw_value(optimal_value(lake.mdp)))
        for rho in [float(r) for r in args.lake_rhos.split(",") if r]:
            for kind in kinds:
                pol, sec = policies_of(lake.mdp, args.T_lake, rho, kind, 0)
                success = lake.raw_value(policy_values(lake.mdp, pol[-WINDOW:])).mean()
                moving = np.convolve(
                    lake.raw_value(policy_values(lake.mdp, pol)), np.ones(WINDOW) / WINDOW, "valid"
                )
                replace_row(
                    result["frozenlake"],
                    {
                        "rho": None if rho == math.inf else rho,
                        "bonus_kind": kind,
                        "T": args.T_lake,
                        "success_last_window": round(float(success), 4),
                        "seconds": round(sec, 1),
                        "success_moving_mean_every_500": moving[::500].round(4).tolist(),
                    },
                )
                print("lake", result["frozenlake"][-1], flush=True)
                save()
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
