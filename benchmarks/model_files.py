"""Loading, fitting and reading model files at scale (chapter A9a): labelling, ``from_csv``, ``load_statistics``.

Measured (each call in a fresh Python process, so that its peak resident memory is its own):

- ``fit_s``: ``LCBModel.fit`` on ``--N`` rows (default 10^7) of integer arm labels (100 arms, tiled
  as logged data are) and Bernoulli rewards, and the labelling step alone (``labelling_s``) against
  ``np.unique(..., return_inverse=True)`` (``unique_s``), the labelling the model used before;
- ``from_csv``: time and peak memory of ``LCBModel.from_csv`` on a CSV of ``--csv-rows`` rows
  (columns ``timestamp,item_id,position,click,user``) against ``pandas.read_csv`` of the same three
  columns (the reference; skipped when pandas is not installed), and with pandas hidden (numpy's
  reader);
- ``load_statistics_s`` after ``0``, ``--deletions / 10`` and ``--deletions`` deleted rows of a model of
  ``--N-load`` rows (the statistics entry no longer holds the deleted row ids).

Usage: ``python benchmarks/model_files.py [--out benchmarks/measured/model_files.json] [--N 10000000]
[--csv-rows 2000000] [--N-load 1000000] [--deletions 500000]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
import numpy as np
task, args = sys.argv[1], json.loads(sys.argv[2])
if args.get("hide_pandas"):
    sys.modules["pandas"] = None            # import pandas -> ImportError: numpy's reader is used
from bandit_unlearning.mab import model as mm
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {}
if task == "fit":
    rng = np.random.default_rng(0)
    n = args["n"]
    arms = np.tile(rng.permutation(100), n // 100 + 1)[:n]
    rewards = (rng.random(n) < 0.3).astype(float)
    def best(fn, repeat=2):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
        return min(times)
    out["labelling_s"] = best(lambda: mm._labels_and_index(arms, None))
    out["unique_s"] = best(lambda: np.unique(arms, return_inverse=True))
    out["fit_s"] = best(lambda: mm.LCBModel.fit(arms, rewards, rng=0))
    out["bincount_s"] = best(lambda: (np.bincount(arms, minlength=100), np.bincount(arms, weights=rewards, minlength=100)))
elif task == "csv_model":
    if not args.get("hide_pandas"):
        import pandas  # noqa: F401  (imported before the clock starts, as in the reference)
    t0 = time.perf_counter()
    m = mm.LCBModel.from_csv(args["path"], arm="item_id", reward="click", user="user", rng=0)
    out["s"] = time.perf_counter() - t0
    out["labels"] = [str(x) for x in m.labels[:5]]; out["label_type"] = type(m.labels[0]).__name__
    out["counts_sha"] = __import__("hashlib").sha256(m.statistics.counts.tobytes() + m.statistics.reward_sums.tobytes()).hexdigest()
elif task == "csv_pandas":
    import pandas as pd
    t0 = time.perf_counter()
    pd.read_csv(args["path"], usecols=["item_id", "click", "user"])
    out["s"] = time.perf_counter() - t0
elif task == "load_statistics":
    rng = np.random.default_rng(1)
    n = args["n"]
    m = mm.LCBModel.fit(rng.integers(0, 100, n), (rng.random(n) < 0.3).astype(float), rng=0)
    for chunk in np.array_split(rng.permutation(n)[:args["deletions"]], max(1, args["deletions"] // 5000)):
        if chunk.size:
            m.delete(rows=np.sort(chunk))
    m.save(args["path"])
    out["file_bytes"] = os.path.getsize(args["path"]) if (os := __import__("os")) else 0
    out["s"] = min(__import__("timeit").repeat(lambda: mm.load_statistics(args["path"]), number=1, repeat=5))
out["peak_extra_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(json.dumps(out))
"""


def child(task: str, **args) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, task, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_csv(path: str, rows: int) -> None:
    rng = np.random.default_rng(2)
    items = rng.integers(0, 80, rows)
    with open(path, "w") as fh:
        fh.write("timestamp,item_id,position,click,user\n")
        for start in range(0, rows, 200_000):
            stop = min(rows, start + 200_000)
            lines = [
                f"2019-11-24 {i % 86400:05d}.{i:07d},{items[i]},{1 + i % 3},{int(i % 97 == 0)},user-{i // 4}"
                for i in range(start, stop)
            ]
            fh.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "model_files.json"))
    parser.add_argument("--N", type=int, default=10_000_000)
    parser.add_argument("--csv-rows", type=int, default=2_000_000)
    parser.add_argument("--N-load", type=int, default=1_000_000)
    parser.add_argument("--deletions", type=int, default=500_000)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    out = {
        "benchmark": "model_files",
        "label": args.label,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    out["fit"] = {"N": args.N, **child("fit", n=args.N)}
    print("fit", out["fit"], flush=True)
    with tempfile.TemporaryDirectory() as folder:
        csv_path = os.path.join(folder, "log.csv")
        write_csv(csv_path, args.csv_rows)
        out["csv"] = {"rows": args.csv_rows, "bytes": os.path.getsize(csv_path)}
        try:
            import pandas  # noqa: F401

            out["csv"]["pandas_read_csv"] = child("csv_pandas", path=csv_path)
            out["csv"]["from_csv_pandas"] = child("csv_model", path=csv_path)
        except ImportError:
            pass
        out["csv"]["from_csv_numpy"] = child("csv_model", path=csv_path, hide_pandas=True)
        ref = out["csv"].get("pandas_read_csv")
        if ref:
            for name in ("from_csv_pandas", "from_csv_numpy"):
                r = out["csv"][name]
                r["time_ratio_vs_read_csv"] = r["s"] / ref["s"]
                r["memory_ratio_vs_read_csv"] = r["peak_extra_mb"] / ref["peak_extra_mb"]
        print("csv", out["csv"], flush=True)
        out["load_statistics"] = []
        for d in (0, args.deletions // 10, args.deletions):
            r = child("load_statistics", n=args.N_load, deletions=d, path=os.path.join(folder, "m.npz"))
            out["load_statistics"].append({"N": args.N_load, "deleted_rows": d, **r})
            print("load_statistics", out["load_statistics"][-1], flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
