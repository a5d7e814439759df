"""The portability pass of ``make test`` (tools/portability.py) has teeth.

A notebook whose stored output depends on the last bits of numpy's SIMD kernels must pass the normal
nbval run on the machine that stored it and fail the lowered replay.  The fixture is built here, on
the machine that runs the test: a cell prints a digest of exp, tanh, log10, cbrt and expm1 on a grid
(each has SIMD kernels above the baseline on x86-64), and its stored output is what full dispatch
prints.  Where the two levels agree on this machine (nothing to lower, or kernels that happen to
agree), the test skips and says why.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import portability  # noqa: E402

SENSITIVE_CELL = """\
import hashlib
import numpy as np
x = np.linspace(-20.0, 20.0, 40001)
values = np.concatenate([np.exp(x), np.tanh(x), np.log10(np.abs(x) + 1.0), np.cbrt(x), np.expm1(x)])
print(hashlib.sha256(values.tobytes()).hexdigest()[:16])
"""


def full_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(portability.VARIABLE, None)
    return env


def run_cell(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", SENSITIVE_CELL], env=env, check=True, capture_output=True, text=True
    ).stdout


def write_fixture(path: Path, stored: str) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(SENSITIVE_CELL, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


def nbval(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_lowered_features_are_dispatched_enabled_and_above_baseline():
    report = {
        "numpy": "x",
        "machine": "x86_64",
        "baseline": ["SSE", "SSE2", "X86_V2"],
        "dispatch": ["X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"],
        "enabled": ["SSE", "SSE2", "X86_V2", "X86_V3", "X86_V4", "AVX512_ICL"],
    }
    assert portability.lowered_features(report) == ["X86_V3", "X86_V4", "AVX512_ICL"]
    report["enabled"] = ["SSE", "SSE2", "X86_V2"]
    assert portability.lowered_features(report) == []  # an old CPU: nothing to lower


def test_this_machines_features_come_from_numpy():
    report = portability.cpu_report()
    features = portability.lowered_features(report)
    assert set(features) <= set(report["dispatch"]) & set(report["enabled"])
    assert not set(features) & set(report["baseline"])


def test_portability_pass_rejects_a_simd_dependent_output(tmp_path):
    features = portability.lowered_features()
    if not features:
        pytest.skip("numpy dispatches nothing above its baseline on this CPU: there is nothing to lower")
    full = run_cell(full_env())
    lowered = run_cell(portability.lowered_env(features))
    if full == lowered:
        pytest.skip(f"exp/tanh/log10/cbrt/expm1 agree bit for bit with and without {features} on this CPU")
    nb = write_fixture(tmp_path / "simd_sensitive.ipynb", full)
    nbval_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "--nbval", "--nbval-current-env", str(nb)]
    control = nbval([sys.executable, "-m", "pytest", *nbval_args], full_env())
    assert control.returncode == 0, control.stdout[-2000:]  # the stored output is this machine's
    lowered_run = nbval([sys.executable, "tools/portability.py", "--", *nbval_args], full_env())
    assert lowered_run.returncode == 1, lowered_run.stdout[-2000:]  # ... and the lowered replay rejects it
    assert "mismatch 'stdout'" in lowered_run.stdout and lowered.strip() in lowered_run.stdout
