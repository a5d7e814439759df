"""Memory and speed of the binary tree mechanism in TV-stable UCB-VI: dense against light.

Learns ``T`` episodes of TV-stable UCB-VI (``bandit_unlearning.rl.stable.stable_ucbvi``, Algorithm 4:
the paper's calibration with ``rho = 1``, ``B = sqrt(3H)``) on the 5x5 gridworld with ``H = 10``
(``S = 23``, ``A = 4``, ``d = 2SAH + S^2AH = 23,000``) through the framework's ``train`` -- rollouts of
replayable users, the tree, ``ucbvi_update`` and the stored policies -- once with
``tree_factory=LightTree`` (chapter B10, the default) and once with the dense ``BinaryTree``
(chapter B2) where it fits.  Both trees give bit-identical runs for the same generator, so only the
cost differs.

Each (tree, T) runs in a fresh Python process.  **Memory** is that process's peak resident set size,
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (Linux: KiB), i.e. everything: interpreter, numpy,
scipy, the run's policies and the tree (the process's RSS after imports is reported as
``baseline_rss_mb``); ``*_tree_mb`` is the tree's own ``nbytes``.  **Speed** is ``T`` divided by the
wall time of ``train`` (after a 64-episode warm-up run).  The dense tree is run only when its buffers
(``32 T d`` bytes) fit in ``--dense-max-gb``; otherwise its fields are ``null``.

Usage: ``python benchmarks/tree_memory.py [--out results/tree_memory.json] [--T 1000 2000 ...]
[--dense-max-gb 4] [--rho 1] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_T = (1000, 2000, 4000, 10_000, 30_000, 100_000)
WORKLOAD = (
    "TV-stable UCB-VI (bandit_unlearning.rl.stable.stable_ucbvi: Algorithm 4, paper's calibration, "
    "B = sqrt(3H)) on the 5x5 gridworld, H = 10, users population_users(mdp, seed, T), trained with "
    "bandit_unlearning.exact.learner.train: rollouts, tree, ucbvi_update and stored policies"
)
MEMORY_METHOD = (
    "peak resident set size of a fresh process per (tree, T): resource.getrusage(RUSAGE_SELF)."
    "ru_maxrss (whole process: interpreter, numpy/scipy, policies, tree)"
)


def worker(tree_name: str, T: int, rho: float, seed: int) -> dict:
    """Run one measurement in this process; returns its numbers."""
    import resource

    import numpy as np

    from bandit_unlearning.exact.learner import train
    from bandit_unlearning.exact.light_tree import LightTree
    from bandit_unlearning.exact.tree import BinaryTree
    from bandit_unlearning.rl.envs import gridworld
    from bandit_unlearning.rl.stable import population_users, stable_ucbvi

    cls = {"light": LightTree, "dense": BinaryTree}[tree_name]
    mdp = gridworld(horizon=10)
    train(
        stable_ucbvi(mdp, 64, rho, tree_factory=cls),
        population_users(mdp, 64, seed=seed),
        np.random.default_rng(seed),
    )
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    learner = stable_ucbvi(mdp, T, rho, tree_factory=cls)
    users = population_users(mdp, T, seed=seed)
    start = time.perf_counter()
    run = train(learner, users, np.random.default_rng(seed + 1))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "tree": tree_name,
        "T": T,
        "seconds": seconds,
        "episodes_per_s": T / seconds,
        "peak_mb": peak,
        "baseline_rss_mb": baseline,
        "tree_mb": run.tree.nbytes / 2**20,
        "sigma": learner.sigma,
        "d": learner.d,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.H,
        "final_policy_checksum": int(np.asarray(run.final_model, dtype=np.int64).sum()),
    }


def measure_in_subprocess(tree_name: str, T: int, rho: float, seed: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", tree_name, str(T), str(rho), str(seed)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(Ts, rho: float, seed: int, dense_max_gb: float, progress=print) -> dict:
    from bandit_unlearning.rl.envs import gridworld
    from bandit_unlearning.rl.ucbvi import StatsLayout

    mdp = gridworld(horizon=10)
    d = StatsLayout.of(mdp).d
    result = {
        "T": [int(T) for T in Ts],
        "light_peak_mb": [],
        "dense_peak_mb": [],
        "light_episodes_per_s": [],
        "dense_episodes_per_s": [],
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.H,
        "d": d,
        "workload": WORKLOAD,
        "memory_method": MEMORY_METHOD,
        "rho": rho,
        "sigma": [],
        "light_tree_mb": [],
        "dense_tree_mb": [],
        "baseline_rss_mb": [],
        "light_over_dense_throughput": [],
        "same_final_policy": [],
        "dense_max_gb": dense_max_gb,
    }
    for T in result["T"]:
        light = measure_in_subprocess("light", T, rho, seed)
        progress(
            f"T = {T:7d} light: {light['episodes_per_s']:7.0f} episodes/s, peak {light['peak_mb']:7.1f} MB "
            f"(tree {light['tree_mb']:.1f} MB)"
        )
        dense = None
        if 32 * T * d <= dense_max_gb * 2**30:
            dense = measure_in_subprocess("dense", T, rho, seed)
            progress(
                f"T = {T:7d} dense: {dense['episodes_per_s']:7.0f} episodes/s, peak {dense['peak_mb']:7.1f} MB "
                f"(tree {dense['tree_mb']:.1f} MB)"
            )
        else:
            progress(
                f"T = {T:7d} dense: skipped ({32 * T * d / 2**30:.1f} GB of buffers > {dense_max_gb} GB)"
            )
        result["light_peak_mb"].append(round(light["peak_mb"], 1))
        result["light_episodes_per_s"].append(round(light["episodes_per_s"], 1))
        result["light_tree_mb"].append(round(light["tree_mb"], 2))
        result["sigma"].append(light["sigma"])
        result["baseline_rss_mb"].append(round(light["baseline_rss_mb"], 1))
        result["dense_peak_mb"].append(None if dense is None else round(dense["peak_mb"], 1))
        result["dense_episodes_per_s"].append(None if dense is None else round(dense["episodes_per_s"], 1))
        result["dense_tree_mb"].append(None if dense is None else round(dense["tree_mb"], 1))
        result["light_over_dense_throughput"].append(
            None if dense is None else round(light["episodes_per_s"] / dense["episodes_per_s"], 3)
        )
        result["same_final_policy"].append(
            None if dense is None else light["final_policy_checksum"] == dense["final_policy_checksum"]
        )
    result["meta"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seed": seed,
    }
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        tree_name, T, rho, seed = argv[1], int(argv[2]), float(argv[3]), int(argv[4])
        print(json.dumps(worker(tree_name, T, rho, seed)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "tree_memory.json")
    parser.add_argument("--T", type=int, nargs="+", default=list(DEFAULT_T), help="episode counts")
    parser.add_argument(
        "--dense-max-gb",
        type=float,
        default=4.0,
        help="run the dense tree only if its buffers (32 T d bytes) fit in this many GiB",
    )
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if min(args.T) < 2 or args.rho <= 0 or args.dense_max_gb < 0:
        parser.error("--T must be >= 2, --rho > 0 and --dense-max-gb >= 0")
    result = measure(args.T, args.rho, args.seed, args.dense_max_gb)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
