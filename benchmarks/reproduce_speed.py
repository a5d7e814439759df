"""Speed of Paper A's reproduction: the vectorised engine against a plain loop, and the full run.

Writes JSON (default ``results/reproduce_speed.json``):

* ``engine_vs_loop``: on one reduced configuration (M_f, hard case, N = 3000, k = 80, gamma = 0.5,
  methods Oracle/Gaussian/Rollback/Alg2), the wall time of the vectorised engine
  (``request_losses``) and of the plain loop that builds every dataset and request and calls the
  scalar ``fit_lcb``/``unlearn`` per replicate -- the same replicates, timed in the same process --
  and their ratio ``loop_s / engine_s``;
* ``reproduce_rl``: the wall time of ``python -m bandit_unlearning reproduce rl --scale paper`` (Paper
  B: regret and lower-bound sweeps in batches, chapter B13), the lines it prints per finished unit of
  work, and the target (60 s on two cores) with the ratio (skipped with ``--skip-rl``);
* ``reproduce_all``: the wall time of ``python -m bandit_unlearning reproduce all --scale paper``
  (what ``make reproduce`` runs; skipped with ``--skip-full``), with the number of workers used and
  the target (45 s on two idle cores; the experiments share one pool of workers, longest units first,
  so the per-experiment wall times overlap).

Usage: ``python benchmarks/reproduce_speed.py [--out FILE] [--trajectories R] [--workers W] [--skip-full]
[--skip-rl] [--skip-engine]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bandit_unlearning.experiments.paper_a import ProtocolA, request_losses
from bandit_unlearning.experiments.protocol import consecutive_deletions, trajectories_from_samples
from bandit_unlearning.mab.data import PAPER_MEANS
from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import fit_lcb
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.unlearn import UnlearnOptions
from bandit_unlearning.protocol import unlearn

METHODS = {"Gaussian": "gaussian", "Rollback": "rollback", "Alg2": "adaptive"}


def loop_losses(arms, rewards, n, k, starts, gamma, rng, protocol):
    """The plain loop: one OfflineDataset, DeletionRequest and scalar call per replicate."""
    mu = np.asarray(PAPER_MEANS)
    out = {m: [] for m in ["Oracle", *METHODS]}
    for r in range(arms.shape[0]):
        d = OfflineDataset(arms[r, :n], rewards[r, :n], mu.size)
        state = fit_lcb(d)
        positions = np.flatnonzero(arms[r, :n] == 0)
        for s0 in starts[r]:
            request = DeletionRequest.from_indices(d, positions[s0 : s0 + k])
            out["Oracle"].append(mu.max() - mu[state.arm])
            for name, method in METHODS.items():
                res = unlearn(
                    state,
                    request,
                    options=UnlearnOptions(
                        method=method,
                        gamma=None if method == "rollback" else gamma,
                        threshold_scale=protocol.threshold_scale,
                    ),
                    rng=rng,
                )[1]
                out[name].append(mu.max() - mu[res.arm])
    return {m: np.array(v) for m, v in out.items()}


def engine_vs_loop(n_trajectories: int, seed: int = 0, repeats: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    protocol = ProtocolA()
    n, k, gamma = 3000, 80, 0.5
    arms = np.broadcast_to(np.arange(n) % 5, (n_trajectories, n)).copy()
    rewards = (rng.random(arms.shape) < np.asarray(PAPER_MEANS)[arms]).astype(float)
    traj = trajectories_from_samples(PAPER_MEANS, "Mf", arms, rewards, [n])
    starts, _ = consecutive_deletions(traj, 0, 0, k, protocol.n_requests, rng, align=20)
    methods = ["Oracle", *METHODS]
    engine_s, loop_s = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        eng, _ = request_losses(traj, 0, [0], k, [starts], gamma, methods, rng, protocol)
        engine_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        loop = loop_losses(arms, rewards, n, k, starts, gamma, rng, protocol)
        loop_s.append(time.perf_counter() - t0)
    # deterministic methods agree replicate by replicate (a sanity check, not a timing)
    assert np.array_equal(eng["Oracle"], loop["Oracle"]) and np.array_equal(eng["Rollback"], loop["Rollback"])
    e, lo = min(engine_s), min(loop_s)
    return {
        "configuration": {
            "model": "Mf",
            "case": "hard",
            "N": n,
            "k": k,
            "gamma": gamma,
            "methods": methods,
            "replicates": n_trajectories * protocol.n_requests,
        },
        "engine_s": round(e, 5),
        "loop_s": round(lo, 4),
        "speedup": round(lo / e, 1),
        "timing": f"best of {repeats}, time.perf_counter",
    }


def reproduce_all(workers: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = _children_cpu_s(), time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bandit_unlearning",
                "reproduce",
                "all",
                "--scale",
                "paper",
                "--out",
                tmp,
                "--workers",
                str(workers),
            ],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        wall, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
        per = {p.stem: json.loads(p.read_text()).get("wall_time_s") for p in sorted(Path(tmp).glob("*.json"))}
    return {
        "wall_time_s": round(wall, 1),
        "cpu_time_s": round(cpu, 1),
        "workers": workers,
        "per_experiment_s": per,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reproduce_rl(workers: int) -> dict:
    """Wall time and CPU time (user + sys of the command and its worker processes: the work done,
    less sensitive than wall time to other processes on a shared machine) of ``reproduce rl``."""
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = _children_cpu_s(), time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bandit_unlearning",
                "reproduce",
                "rl",
                "--scale",
                "paper",
                "--out",
                tmp,
                "--workers",
                str(workers),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        wall, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
    units = [line for line in done.stderr.splitlines() if line.startswith("reproduce rl:")]
    return {
        "wall_time_s": round(wall, 1),
        "cpu_time_s": round(cpu, 1),
        "workers": workers,
        "target_s": 60,
        "wall_over_target": round(wall / 60, 2),
        "cpu_over_two_cores_target": round(cpu / 120, 2),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "units": units,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/reproduce_speed.json"))
    parser.add_argument(
        "--trajectories", type=int, default=40, help="trajectories in the ratio run (x5 requests)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-full", action="store_true", help="skip the full paper-scale run")
    parser.add_argument(
        "--skip-rl", action="store_true", help="skip the paper-scale run of reproduce rl alone"
    )
    parser.add_argument("--skip-engine", action="store_true", help="skip Paper A's engine-vs-loop ratio")
    args = parser.parse_args(argv)
    result = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.machine(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        }
    }
    if not args.skip_engine:
        result["engine_vs_loop"] = engine_vs_loop(args.trajectories)
    if not args.skip_rl:
        result["reproduce_rl"] = reproduce_rl(args.workers)
    if not args.skip_full:
        result["reproduce_all"] = reproduce_all(args.workers)
        result["reproduce_all"].update(
            target_s=45, wall_over_target=round(result["reproduce_all"]["wall_time_s"] / 45, 2)
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
