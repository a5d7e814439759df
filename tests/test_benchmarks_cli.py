"""Every benchmark script answers ``--help`` with its usage and writes nothing.

A script that took its first argument as an output path once wrote its JSON into a file named
``--help`` in the working directory.  Here each script in ``benchmarks/`` is run with ``--help`` in an
empty working directory: it must exit 0, print a usage line, leave the directory empty and leave
``benchmarks/measured/`` as it was.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def _snapshot(folder: Path) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.exists() else {}


def test_there_are_benchmarks_to_check():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_usage_and_writes_nothing(script, tmp_path):
    measured = ROOT / "benchmarks" / "measured"
    before = _snapshot(measured)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.lstrip().startswith("usage:"), proc.stdout[:300]
    assert list(tmp_path.iterdir()) == []
    assert _snapshot(measured) == before
