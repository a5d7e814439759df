"""Time ``make test-fast``: seconds to its first test result and to its end, with the CPU it used.

Runs the same pytest command as the Makefile's ``test-fast`` target (two workers, no nbval, the
``slow`` marker deselected) with ``-v`` so that every result is a line, stamps each line of its output
as it arrives, and writes the seconds to the first result line (PASSED, FAILED, SKIPPED, ERROR, XFAIL),
the total wall time, the children's CPU seconds, the load average before the run and pytest's summary
line to ``benchmarks/measured/test_fast_timing.json`` (or ``--out``).  ``--cold`` first deletes the
bytecode caches of the package and the tests, as on a fresh clone.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT = re.compile(r"\b(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b")


def clear_caches() -> int:
    """Delete ``__pycache__`` folders under the package and tests; returns how many were removed."""
    folders = [p for top in ("bandit_unlearning", "tests") for p in (ROOT / top).rglob("__pycache__")]
    for folder in folders:
        shutil.rmtree(folder)
    return len(folders)


def run(cold: bool) -> dict:
    removed = clear_caches() if cold else 0
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as the Makefile does
    cmd = [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:nbval", "-m", "not slow", "tests", "-v"]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    first = None
    last_line = ""
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if first is None and RESULT.search(line):
                first = time.perf_counter() - start
            if line.strip():
                last_line = line.strip()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "command": " ".join(cmd[1:]),
        "cold_caches": cold,
        "caches_removed": removed,
        "load_average_before": round(load, 2),
        "seconds_to_first_result": None if first is None else round(first, 2),
        "wall_seconds": round(wall, 2),
        "cpu_seconds_children": round(
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1
        ),
        "returncode": proc.returncode,
        "summary": last_line,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "measured" / "test_fast_timing.json"
    )
    parser.add_argument("--cold", action="store_true", help="delete the bytecode caches first")
    args = parser.parse_args(argv)
    result = run(args.cold)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0 if result["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
