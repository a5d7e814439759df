"""The Paper A rows of the floor table, alone: the Figure 1 engine and ``LCBModel.fit`` against their floors.

``benchmarks/floor_table.py`` times every hot path of the package; this script runs only its two Paper A
rows (``paper_a_figure1``: ``run_experiment("figure1")`` at paper scale against the bulk cost of the
uniforms and normals the run draws; ``lcb_fit_int``/``lcb_fit_str``: ``LCBModel.fit`` on 10^7 rows
against two ``bincount`` calls), with the same functions, so the two tables agree.  With ``--baseline
DIR`` (a directory holding an older ``bandit_unlearning``, e.g. ``git archive <commit>
bandit_unlearning | tar -x -C DIR``) the old and the current package alternate ``--rounds`` times in
fresh processes and the medians are reported, with the load average at the start and the end (CPU
time, ``time.process_time``; a loaded machine inflates both sides).

Usage: ``python benchmarks/paper_a_floor.py [--baseline DIR] [--rounds 2] [--out FILE]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def measure() -> dict:
    """The Paper A rows once, in this process, for the ``bandit_unlearning`` it imports."""
    import bandit_unlearning
    from floor_table import lcb_fit_rows, paper_a_row, unit_costs

    unit = unit_costs()
    rows = {"paper_a_figure1": paper_a_row(False, unit)}
    rows.update(lcb_fit_rows(10**7))
    return {"package": str(Path(bandit_unlearning.__file__).parent), "unit_costs": unit, "rows": rows}


def _subprocess(package_dir: Path | None) -> dict:
    env = dict(os.environ)
    if package_dir is not None:
        env["PYTHONPATH"] = str(package_dir)
    out = subprocess.run(
        [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _medians(results: list) -> dict:
    rows = {}
    for name in results[0]["rows"]:
        values = [r["rows"][name]["value"] for r in results]
        floors = [r["rows"][name]["floor"] for r in results]
        rows[name] = {
            "value": statistics.median(values),
            "floor": statistics.median(floors),
            "share": statistics.median(floors) / statistics.median(values),
            "rounds": values,
        }
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "measured" / "paper_a_floor.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure()))
        return 0
    load_start = os.getloadavg()
    after, before = [], []
    for _ in range(args.rounds):
        if args.baseline is not None:
            before.append(_subprocess(args.baseline))
        after.append(_subprocess(None))
    result = {
        "load_average_at_start": [round(x, 2) for x in load_start],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "rounds": args.rounds,
        "after": _medians(after),
    }
    if before:
        result["before"] = _medians(before)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name, row in result["after"].items():
        old = result.get("before", {}).get(name)
        was = f"before {old['value']:.3f} s (share {old['share']:.1%}), " if old else ""
        print(
            f"{name:16} {was}after {row['value']:.3f} s, floor {row['floor']:.4f} s, share {row['share']:.1%}"
        )
    print(
        f"load average {result['load_average_at_start']} -> {result['load_average_at_end']}; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
