"""Speed and memory of UCB-VI on tabular MDPs (the speed target).

Measures episodes per second of non-private UCB-VI (``bandit_unlearning.rl.ucbvi.run_ucbvi``) on the
5x5 gridworld (S = 23, A = 4, H = 10) and on RiverSwim (S = 6, A = 2, H = 20), and the peak memory
of one run (tracemalloc, in a separate run so that tracing does not slow the timed one).

TV-stable UCB-VI (``bandit_unlearning.rl.stable.stable_ucbvi``, Algorithm 4, chapter B7a) with the
memory-light binary tree (``bandit_unlearning.exact.light_tree.LightTree``, the default; ``--tree``
names another tree class with the same interface, e.g. ``bandit_unlearning.exact.tree:BinaryTree``, the
dense reference, which holds 4 T d floats, 750 MB for the gridworld at T = 1024): episodes per second of
``train`` over ``--stable-T`` episodes (default ``min(T, 1024)``), best of ``--repeats``; where
the time goes (profile shares of the tree, the oracle and the update); its peak memory; and the cost of
one deletion (Algorithm 3) at ``--rho`` as a fraction of retraining: ``unlearning_cost_fraction`` is the
exact expected number of episodes recomputed / T for ``--requests`` deletions at uniformly random
positions (each with its own shift ``||x_t||``), ``unlearning_cost_fraction_measured`` the realised mean
and ``unlearning_time_fraction`` the wall time of a deletion / the wall time of training.

Batched engine (``bandit_unlearning.rl.batch.run_batch``, chapter B13): run-episodes per second of
one batch of the reproduction's sweep (rho in {inf, 1000, 100, 10, 1} x bonus scales {1, 0.05} x 3
populations = 30 runs, H = 10) over ``--batch-T`` episodes, against the single-run learner on every
sixth run of the same sweep in the same process (``train`` of ``stable_ucbvi``, or ``run_ucbvi`` at
rho = inf), their ratio, the profile shares of one profiled batch, and whether the single runs equal
their batch rows (policies, bit for bit).

Usage: ``python benchmarks/rl_speed.py [--out results/rl_speed.json] [--T 20000] [--repeats 3]
[--stable-T 1024] [--rho 1.0] [--requests 10] [--tree module:Class] [--batch-T 1000] [--only-batch]``
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import pstats
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import ExactOptions, train  # noqa: E402
from bandit_unlearning.protocol import DeleteStep, unlearn  # noqa: E402
from bandit_unlearning.exact.light_tree import LightTree  # noqa: E402
from bandit_unlearning.experiments.unlearning_cost import expected_cost_uniform  # noqa: E402
from bandit_unlearning.privacy.coupling import tv_gaussians  # noqa: E402
from bandit_unlearning.rl import batch as batch_module  # noqa: E402
from bandit_unlearning.rl.envs import gridworld, riverswim  # noqa: E402
from bandit_unlearning.rl.stable import (  # noqa: E402
    EpisodeOracle,
    PolicyUpdate,
    population_users,
    stable_sigma,
    stable_ucbvi,
)
from bandit_unlearning.rl.ucbvi import (  # noqa: E402
    StatsLayout,
    UCBVIConfig,
    plan_from_statistics,
    run_ucbvi,
    statistics_sensitivity,
)


def episodes_per_second(mdp, T: int, repeats: int, seed: int) -> tuple[float, list[float]]:
    """Best-of-``repeats`` episodes/s of ``run_ucbvi`` (the paper's bonus) and all measurements."""
    run_ucbvi(mdp, min(T, 200), seed=seed)  # warm-up (caches, imports)
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
        return tracemalloc.get_traced_memory()[1] / 2**20
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


def _cumulative(stats: dict, *functions) -> float:
    keys = [(f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name) for f in functions]
    return sum(stats[k][3] for k in keys if k in stats)


def stable_speed(mdp, T: int, rho: float, repeats: int, seed: int, tree) -> dict:
    """Best-of-``repeats`` episodes/s of TV-stable UCB-VI (``train`` over ``T`` episodes), all
    measurements, and the profile shares of one extra (profiled) run."""
    learner = stable_ucbvi(mdp, T, rho, tree_factory=tree)
    users = population_users(mdp, T, seed=seed)
    rng = np.random.default_rng(seed)
    train(
        stable_ucbvi(mdp, min(T, 64), rho, tree_factory=tree),
        population_users(mdp, min(T, 64), seed=seed),
        rng,
    )  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        train(learner, users, rng)
        rates.append(T / (time.perf_counter() - start))
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    train(learner, users, rng)
    profile.disable()
    elapsed = time.perf_counter() - start
    st = pstats.Stats(profile).stats
    shares = {
        "tree_append_and_noisy_prefix_sum": _cumulative(st, tree.append, tree.noisy_prefix_sum) / elapsed,
        "oracle_rollout_and_dense_statistics": _cumulative(st, EpisodeOracle.__call__) / elapsed,
        "update_ucbvi_update": _cumulative(st, PolicyUpdate.__call__) / elapsed,
    }
    shares["rest_framework_checks"] = 1 - sum(shares.values())
    return {"best": max(rates), "all": rates, "shares": shares}


def stable_peak_memory_mb(mdp, T: int, rho: float, seed: int, tree) -> float:
    """Peak traced allocation (MB) of one ``train`` of TV-stable UCB-VI over ``T`` episodes."""
    learner = stable_ucbvi(mdp, T, rho, tree_factory=tree)
    tracemalloc.start()
    try:
        train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(seed))
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def unlearning_cost(mdp, T: int, rho: float, requests: int, seed: int, tree) -> dict:
    """Deletions at uniformly random positions of one trained run (Algorithm 3): exact expected and
    realised episodes recomputed / T, and wall time per deletion / wall time of training."""
    learner = stable_ucbvi(mdp, T, rho, tree_factory=tree)
    rng = np.random.default_rng(seed + 1)
    start = time.perf_counter()
    run = train(learner, population_users(mdp, T, seed=seed), rng)
    t_train = time.perf_counter() - start
    expected, realised, times = [], [], []
    for t in rng.integers(1, T + 1, size=requests):
        start = time.perf_counter()
        rec = unlearn(run, DeleteStep(int(t)), options=ExactOptions(diagnostics=True), rng=rng)[
            1
        ]  # exact expected cost: a research measurement
        times.append(time.perf_counter() - start)
        expected.append(rec.expected_steps_recomputed / T)
        realised.append(rec.steps_recomputed / T)
    B = statistics_sensitivity(mdp.H)
    by_rho = {
        str(r): round(expected_cost_uniform(T, tv_gaussians([0.0], [B], stable_sigma(r, mdp.H, T))), 4)
        for r in (0.01, 0.1, 0.3, 1.0)
    }
    return {
        "expected": float(np.mean(expected)),
        "realised": float(np.mean(realised)),
        "time_fraction": float(np.mean(times) / t_train),
        "worst_case_shift_by_rho": by_rho,
    }


BATCH_RHOS = (float("inf"), 1000.0, 100.0, 10.0, 1.0)
BATCH_SCALES = (1.0, 0.05)


def batch_speed(mdp, T: int, seed: int, populations: int = 3) -> dict:
    """Run-episodes/s of one ``run_batch`` of the reproduction's sweep (30 runs) against the
    single-run learner on every sixth run, the profile shares of a profiled batch, and the check that
    the single runs equal their batch rows."""
    pops = [int(p) for p in np.random.default_rng(seed).integers(2**63, size=populations)]
    specs = [(rho, sc, pop) for sc in BATCH_SCALES for rho in BATCH_RHOS for pop in pops]
    configs = [
        UCBVIConfig.of(mdp, T, sigma=stable_sigma(rho, mdp.H, T), bonus_scale=sc) for rho, sc, _ in specs
    ]
    seeds, noise = [p for _, _, p in specs], list(range(len(specs)))
    batch_module.run_batch(mdp, configs[:2], seeds[:2], noise[:2])  # warm-up
    start = time.perf_counter()
    batch = batch_module.run_batch(mdp, configs, seeds, noise)
    batch_s = time.perf_counter() - start
    single_s, equal, sample = 0.0, True, list(range(0, len(specs), 6))
    for b in sample:
        rho, sc, pop = specs[b]
        start = time.perf_counter()
        if rho == float("inf"):
            policies = run_ucbvi(mdp, T, seed=pop, bonus_scale=sc).policies
        else:
            learner = stable_ucbvi(mdp, T, rho, bonus_scale=sc)
            policies = np.array(
                train(learner, population_users(mdp, T, seed=pop), np.random.default_rng(b)).models[:-1]
            )
        single_s += time.perf_counter() - start
        equal &= bool(np.array_equal(policies, batch.policies[b]))
    single_rate = len(sample) * T / single_s
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    batch_module.run_batch(mdp, configs, seeds, noise)
    profile.disable()
    elapsed = time.perf_counter() - start
    st = pstats.Stats(profile).stats
    shares = {
        "node_noise_normals": _cumulative(st, batch_module._standard_normal) / elapsed,
        "planner": _cumulative(st, batch_module._BatchPlanner.plan) / elapsed,
        "rollout": _cumulative(st, batch_module._rollout) / elapsed,
        "node_keys": _cumulative(st, batch_module._top_node_keys) / elapsed,
    }
    shares["statistics_and_tree_sums"] = 1 - sum(shares.values())
    return {
        "runs": len(specs),
        "T": T,
        "run_episodes_per_s": round(len(specs) * T / batch_s, 1),
        "single_run_episodes_per_s": round(single_rate, 1),
        "ratio_batch_over_single": round(len(specs) * T / batch_s / single_rate, 2),
        "single_runs_equal_batch_rows": equal,
        "single_runs_timed": len(sample),
        "batch_time_shares": {k: round(v, 3) for k, v in shares.items()},
    }


def measure(
    T: int,
    repeats: int,
    seed: int,
    stable_T: int | None = None,
    rho: float = 1.0,
    requests: int = 10,
    tree=LightTree,
) -> dict:
    stable_T = min(T, 1024) if stable_T is None else stable_T
    out = {}
    for key, mdp in (("gridworld", gridworld(horizon=10)), ("riverswim", riverswim(horizon=20))):
        best, rates = episodes_per_second(mdp, T, repeats, seed)
        stable = stable_speed(mdp, stable_T, rho, repeats, seed, tree)
        cost = unlearning_cost(mdp, stable_T, rho, requests, seed, tree)
        out[key] = {
            "stable_episodes_per_s": round(stable["best"], 1),
            "stable_episodes_per_s_all_repeats": [round(r, 1) for r in stable["all"]],
            "stable_time_shares": {k: round(v, 3) for k, v in stable["shares"].items()},
            "stable_peak_memory_mb": round(stable_peak_memory_mb(mdp, stable_T, rho, seed, tree), 1),
            "stable_T": stable_T,
            "ucbvi_episodes_per_s": round(best, 1),
            "ucbvi_episodes_per_s_all_repeats": [round(r, 1) for r in rates],
            "peak_memory_mb": round(peak_memory_mb(mdp, T, seed), 2),
            "plan_from_statistics_us": round(planner_microseconds(mdp, T, seed), 1),
            "unlearning_cost_fraction": round(cost["expected"], 4),
            "unlearning_cost_fraction_measured": round(cost["realised"], 4),
            "unlearning_time_fraction": round(cost["time_fraction"], 4),
            "unlearning_cost_fraction_worst_case_shift_by_rho": cost["worst_case_shift_by_rho"],
            "unlearning_requests": requests,
            "S": mdp.S,
            "A": mdp.A,
            "H": mdp.H,
            "T": T,
            "rho": rho,
            "sigma": round(stable_sigma(rho, mdp.H, stable_T), 4),
            "d": StatsLayout.of(mdp).d,
            "mdp": mdp.name,
            "tree": f"{tree.__module__}.{tree.__qualname__}",
        }
    out["meta"] = {
        "what": "non-private UCB-VI (sigma = 0, paper's bonus, delta = 0.1), episodes/s = best of repeats over T "
        "episodes; peak memory = tracemalloc peak of one run (policies, trajectories, statistics included); "
        "plan_from_statistics_us = one planning call from a dense noisy prefix sum (sigma at rho = 1). "
        "TV-stable UCB-VI (Algorithm 4, paper's bonus and calibration sigma_paper(rho, sqrt(3H), stable_T)) "
        "with the tree named in 'tree': stable_episodes_per_s = best of repeats of train() over stable_T "
        "episodes; stable_time_shares from one profiled run; unlearning_cost_fraction = mean exact expected "
        "episodes recomputed / stable_T of unlearning_requests deletions at uniform positions of one run "
        "(Algorithm 3); _measured = realised mean; unlearning_time_fraction = wall time per deletion / "
        "wall time of training; _worst_case_shift_by_rho = exact expected cost for shift B = sqrt(3H).",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    return out


def _tree_class(spec: str):
    """``module:Class`` -> the class (default: the memory-light ``LightTree``)."""
    module, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"--tree must look like module:Class, got {spec!r}")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "rl_speed.json")
    parser.add_argument("--T", type=int, default=20_000, help="episodes per timed run of non-private UCB-VI")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stable-T", type=int, default=None, help="episodes per run of TV-stable UCB-VI (min(T, 1024))"
    )
    parser.add_argument("--rho", type=float, default=1.0, help="TV-stability level of the stable learner")
    parser.add_argument("--requests", type=int, default=10, help="deletion requests for the unlearning cost")
    parser.add_argument(
        "--tree", default="bandit_unlearning.exact.light_tree:LightTree", help="tree class, module:Class"
    )
    parser.add_argument(
        "--batch-T",
        type=int,
        default=1000,
        help="episodes of the batched sweep (riverswim; gridworld: a fifth)",
    )
    parser.add_argument("--only-batch", action="store_true", help="measure only the batched engine")
    args = parser.parse_args(argv)
    if (
        args.T < 1
        or args.repeats < 1
        or args.requests < 1
        or (args.stable_T is not None and args.stable_T < 2)
    ):
        parser.error("--T, --repeats and --requests must be >= 1, --stable-T >= 2")
    if not args.rho > 0:
        parser.error("--rho must be > 0")
    result = (
        {}
        if args.only_batch
        else measure(
            args.T, args.repeats, args.seed, args.stable_T, args.rho, args.requests, _tree_class(args.tree)
        )
    )
    result["batch"] = {
        "riverswim_H10": batch_speed(riverswim(horizon=10), args.batch_T, args.seed),
        "gridworld_H10": batch_speed(gridworld(horizon=10), max(args.batch_T // 5, 2), args.seed),
    }
    for key, r in result["batch"].items():
        print(
            f"batch {key}: {r['runs']} runs x {r['T']} episodes: {r['run_episodes_per_s']:,.0f} run-episodes/s; single "
            f"runs {r['single_run_episodes_per_s']:,.0f} episodes/s; ratio {r['ratio_batch_over_single']}; equal "
            f"{r['single_runs_equal_batch_rows']}; shares {r['batch_time_shares']}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for key in [k for k in ("gridworld", "riverswim") if k in result]:
        r = result[key]
        print(
            f"{key:10s} S={r['S']:2d} A={r['A']} H={r['H']:2d} T={r['T']}: UCB-VI {r['ucbvi_episodes_per_s']:,.0f} "
            f"episodes/s, peak memory {r['peak_memory_mb']:.1f} MB, "
            f"plan_from_statistics {r['plan_from_statistics_us']:.0f} us/call"
        )
        print(
            f"{'':10s} TV-stable UCB-VI (rho = {r['rho']}, T = {r['stable_T']}, d = {r['d']}): "
            f"{r['stable_episodes_per_s']:,.0f} episodes/s, peak memory {r['stable_peak_memory_mb']:.0f} MB, "
            f"time shares {r['stable_time_shares']}; one deletion costs {r['unlearning_cost_fraction']:.3f} of "
            f"retraining (measured {r['unlearning_cost_fraction_measured']:.3f}, wall time {r['unlearning_time_fraction']:.3f})"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
