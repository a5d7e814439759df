"""The portability pass of ``make test``: replay the notebooks with numpy's SIMD dispatch lowered.

numpy compiles its loops for a *baseline* instruction set and, for many functions (exp, log, tanh,
power, sorting, ...), extra kernels for newer CPUs that it picks at import time.  Those kernels agree
with the baseline to within an ulp or two, not bit for bit, so a notebook that prints a value (or a
choice, such as an argmax over a near-tie) that depends on the last bits passes on the machine that
stored its outputs and fails on another.  This pass catches that on your own machine: it runs pytest
again with ``NPY_DISABLE_CPU_FEATURES`` set to every dispatched feature that this CPU has above the
baseline, read at run time from numpy's own lists, so the kernels used are the ones every x86-64 (or
other) machine with the same numpy has.

Usage::

    python tools/portability.py                 # pytest (nbval) on notebooks/ and tests/, lowered
                                                # (tests marked simd_independent deselected)
    python tools/portability.py --print         # only print the value of NPY_DISABLE_CPU_FEATURES
    python tools/portability.py -- PYTEST_ARGS  # lowered pytest on other paths / options

Where nothing is dispatched above the baseline (an old CPU, or a numpy built without dispatch),
there is nothing to lower: the pass says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = "NPY_DISABLE_CPU_FEATURES"
PYTEST_NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg"]
# Every notebook and every test except those marked simd_independent in tests/conftest.py (text, validation
# and same-process comparisons, which lowering SIMD cannot change).
DEFAULT_PYTEST = [
    "-n",
    "2",
    "--dist",
    "loadfile",
    "--no-loadscope-reorder",
    "-m",
    "not simd_independent",
    *PYTEST_NBVAL,
    "tests",
    "notebooks",
]

_PROBE = """
import json
try:
    from numpy._core import _multiarray_umath as m      # numpy >= 2
except ImportError:
    from numpy.core import _multiarray_umath as m       # numpy 1.x
import numpy, platform
print(json.dumps({"numpy": numpy.__version__, "machine": platform.machine(),
                  "baseline": list(m.__cpu_baseline__), "dispatch": list(m.__cpu_dispatch__),
                  "enabled": [k for k, v in m.__cpu_features__.items() if v]}))
"""


def cpu_report(env: dict[str, str] | None = None) -> dict:
    """numpy's own view of this CPU, read in a fresh interpreter with nothing disabled."""
    env = dict(os.environ if env is None else env)
    env.pop(VARIABLE, None)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def lowered_features(report: dict | None = None) -> list[str]:
    """The dispatched features this CPU has above numpy's baseline, in numpy's order."""
    report = cpu_report() if report is None else report
    enabled = set(report["enabled"])
    baseline = set(report["baseline"])
    return [f for f in report["dispatch"] if f in enabled and f not in baseline]


def lowered_env(features: list[str] | None = None) -> dict[str, str]:
    """A copy of the environment with numpy's dispatch lowered to its baseline."""
    features = lowered_features() if features is None else features
    env = dict(os.environ)
    env[VARIABLE] = " ".join(features)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the lowered feature list and exit")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args(argv)
    report = cpu_report()
    features = lowered_features(report)
    if args.print:
        print(" ".join(features))
        return 0
    if not features:
        print(
            f"portability pass: numpy {report['numpy']} on {report['machine']} dispatches nothing above its "
            f"baseline {report['baseline']} here, so there is nothing to lower; skipped.",
            flush=True,
        )
        return 0
    print(
        f"portability pass: numpy {report['numpy']} on {report['machine']}, baseline {report['baseline']}; "
        f'replaying with {VARIABLE}="{" ".join(features)}"',
        flush=True,
    )
    cmd = [sys.executable, "-m", "pytest", *(args.pytest_args or DEFAULT_PYTEST)]
    return subprocess.run(cmd, cwd=ROOT, env=lowered_env(features)).returncode


if __name__ == "__main__":
    sys.exit(main())
