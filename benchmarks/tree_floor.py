"""Per-step cost of the binary tree mechanism against its floor: the random numbers a step needs.

One step is what a learner does with the tree at every time step (``bandit_unlearning.exact.learner``):
``tree.append(x_t, rng)`` then ``tree.noisy_prefix_sum(t)``.  Measured for the dense ``BinaryTree``
(chapter B2b) and the memory-light ``LightTree`` (chapter B10) at two sizes:

* ``d = 16``, dense statistics (a bandit's or a small linear model's sufficient statistics);
* ``d = 1,520``, sparse statistics with 30 non-zeros (``SparseStatistic``; a tabular RL episode of
  horizon 10 has at most ``3H = 30``).

**Floor.** Whatever the implementation, a step must draw the Gaussian noise of the one node that joins
the dyadic decomposition ``D(t)`` -- ``d`` standard normals -- to release ``noisy_prefix_sum(t)``;
the floor is the cost of ``d`` normals drawn in bulk: numpy's ``Generator(SFC64).standard_normal(n)``
for ``n = d * T`` normals at once, divided by ``T``.  The dense tree, as designed, also draws the noise
of every other node completed at the step (``2 - popcount(T) / T`` nodes per step); its own-draws floor
is reported as well (``floor_own_draws_us``).  ``share_of_floor = floor_us / us_per_step``.

**Method.** CPU time (``time.process_time``) of ``T`` steps on a fresh tree, the statistics made
beforehand, alternating rounds of the tree and of the floor in one process, medians over
``--rounds`` rounds; ``--processes`` such processes, medians over them.  ``--before REV`` also runs
the same measurement against the package as of git revision ``REV`` (its files exported with
``git archive``), its processes alternating with this checkout's, so before and after are measured
in one run, each with its own floor.  Both versions are checked to give the same outputs
(a SHA-256 of every released prefix sum and of the generator's final state; ``outputs_sha256``).

Usage: ``python benchmarks/tree_floor.py [--out results/tree_floor.json] [--rounds 5] [--processes 3]
[--before REV]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SIZES = ({"d": 16, "nnz": None, "T": 2048}, {"d": 1520, "nnz": 30, "T": 1024})
TREES = ("dense", "light")


def _statistics(d: int, nnz: int | None, T: int, seed: int = 1):
    import numpy as np

    from bandit_unlearning.exact.tree import SparseStatistic

    g = np.random.default_rng(seed)
    if nnz is None:
        return [g.random(d) for _ in range(T)]
    return [SparseStatistic(np.sort(g.choice(d, nnz, replace=False)), g.random(nnz)) for _ in range(T)]


def _steps(cls, d: int, xs, seed: int, digest=None) -> float:
    """CPU seconds of ``len(xs)`` steps on a fresh tree (``digest``: fed every released sum)."""
    import numpy as np

    tree, rng = cls(d, 1.0, capacity=len(xs)), np.random.default_rng(seed)
    start = time.process_time()
    for t, x in enumerate(xs, 1):
        tree.append(x, rng)
        s = tree.noisy_prefix_sum(t)
        if digest is not None:
            digest.update(s.tobytes())
    seconds = time.process_time() - start
    if digest is not None:
        digest.update(repr(rng.bit_generator.state).encode())
    return seconds


def _floor(n: int, seed: int) -> float:
    """CPU seconds of ``n`` standard normals of SFC64 drawn in one call."""
    import numpy as np

    g = np.random.Generator(np.random.SFC64(seed))
    start = time.process_time()
    g.standard_normal(n)
    return time.process_time() - start


def worker(rounds: int) -> dict:
    """Measure every (tree, size) in this process; returns the numbers."""
    import numpy as np

    from bandit_unlearning.exact.light_tree import LightTree
    from bandit_unlearning.exact.tree import BinaryTree

    classes = {"dense": BinaryTree, "light": LightTree}
    rows = []
    for size in SIZES:
        d, T = size["d"], size["T"]
        xs = _statistics(d, size["nnz"], T)
        for name in TREES:
            digest = hashlib.sha256()
            _steps(classes[name], d, xs, 0, digest)  # warm-up, and the outputs' fingerprint
            ours, floor = [], []
            for r in range(rounds):
                ours.append(_steps(classes[name], d, xs, r))
                floor.append(_floor(d * T, r))
            us, floor_us = 1e6 * statistics.median(ours) / T, 1e6 * statistics.median(floor) / T
            nodes_per_step = 2 - bin(T).count("1") / T
            rows.append(
                {
                    "tree": name,
                    "d": d,
                    "nnz": size["nnz"],
                    "T": T,
                    "us_per_step": us,
                    "floor_us": floor_us,
                    "share_of_floor": floor_us / us,
                    "floor_own_draws_us": floor_us * (nodes_per_step if name == "dense" else 1.0),
                    "ns_per_normal": 1e3 * floor_us / d,
                    "outputs_sha256": digest.hexdigest(),
                    "rounds_us_per_step": [1e6 * s / T for s in ours],
                }
            )
    return {"numpy": np.__version__, "rows": rows}


def _site_packages() -> str:
    import numpy

    return str(Path(numpy.__file__).resolve().parents[1])


def run_worker(rounds: int, package_root: Path | None = None) -> dict:
    """The worker in a fresh process: this checkout, or (``package_root``) an exported package tree,
    imported ahead of the editable install (``-S``: no site hooks; numpy and scipy from this venv)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(rounds)]
    env = dict(os.environ)
    if package_root is not None:
        cmd.insert(1, "-S")
        env["PYTHONPATH"] = os.pathsep.join([str(package_root), _site_packages()])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def export_revision(rev: str, into: Path) -> Path:
    """The package as of git revision ``rev``, written under ``into`` (``git archive``)."""
    archive = into / "package.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "archive", rev, "bandit_unlearning"], check=True, cwd=ROOT, stdout=f)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def combine(measured: list) -> dict:
    """Rows of several worker processes: medians of their per-step costs, floors and shares."""
    rows = []
    for parts in zip(*(m["rows"] for m in measured)):
        row = dict(parts[0])
        assert len({p["outputs_sha256"] for p in parts}) == 1  # every process: the same outputs
        for field in ("us_per_step", "floor_us", "share_of_floor", "floor_own_draws_us", "ns_per_normal"):
            row[field] = statistics.median(p[field] for p in parts)
        row["processes_us_per_step"] = [p["us_per_step"] for p in parts]
        row.pop("rounds_us_per_step")
        rows.append(row)
    return {"numpy": measured[0]["numpy"], "processes": len(measured), "rows": rows}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "tree_floor.json"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=3, help="worker processes per version, alternating")
    parser.add_argument("--before", default=None, help="git revision to measure too (before/after)")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker)))
        return {}
    result = {
        "benchmark": "tree_floor",
        "workload": "append(x_t, rng) + noisy_prefix_sum(t) per step, fresh tree",
        "floor": "d standard normals per step, numpy Generator(SFC64).standard_normal(d * T) in one call",
        "timer": "time.process_time, median of alternating rounds",
        "rounds": args.rounds,
        "processes": args.processes,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average": os.getloadavg(),
    }
    runs = {"after": []}
    with tempfile.TemporaryDirectory() as tmp:
        if args.before:
            result["before_revision"] = subprocess.run(
                ["git", "rev-parse", args.before], check=True, cwd=ROOT, capture_output=True, text=True
            ).stdout.strip()
            before_root, runs["before"] = export_revision(args.before, Path(tmp)), []
        for _ in range(args.processes):  # alternate the two versions' processes
            runs["after"].append(run_worker(args.rounds))
            if args.before:
                runs["before"].append(run_worker(args.rounds, before_root))
    for key, measured in runs.items():
        result[key] = combine(measured)
    if args.before:
        result["same_outputs"] = all(
            a["outputs_sha256"] == b["outputs_sha256"]
            for a, b in zip(result["after"]["rows"], result["before"]["rows"])
        )
    for key in ("before", "after"):
        for row in result.get(key, {}).get("rows", []):
            print(
                f"{key:6s} {row['tree']:5s} d={row['d']:5d}: {row['us_per_step']:8.2f} us/step, "
                f"floor {row['floor_us']:6.2f} us, share {100 * row['share_of_floor']:5.1f}%"
            )
    if args.before:
        print("same outputs before and after:", result["same_outputs"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
