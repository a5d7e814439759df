"""Execute chapters from their percent-format source and store the outputs in the paired ``.ipynb``.

This is the "execute" step of the literate loop: the ``.py`` is the source of truth, the ``.ipynb``
is rebuilt from it and run top to bottom in a fresh kernel (working directory = the notebook's
folder, as under nbval), so its stored outputs are exactly what the code prints.

Usage: ``python tools/run_notebooks.py [notebooks/part/NN_name.py ...]`` (default: every chapter).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _keep_cell_ids(nb, ipynb: Path) -> None:
    """Reuse the stored cell ids of ``ipynb`` where the cells line up (same type, same position), so
    that re-executing a chapter does not rewrite every id and the .ipynb diff shows only real changes."""
    if not ipynb.exists():
        return
    old = nbformat.read(ipynb, as_version=4).cells
    for new_cell, old_cell in zip(nb.cells, old):
        if new_cell.cell_type == old_cell.cell_type and "id" in old_cell:
            new_cell["id"] = old_cell["id"]


def execute(py: Path, timeout: int = 600) -> float:
    """Execute one chapter; write ``<name>.ipynb`` beside it.  Returns the wall time in seconds."""
    nb = jupytext.read(py)
    _keep_cell_ids(nb, py.with_suffix(".ipynb"))
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    start = time.perf_counter()
    NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(py.parent)}},
    ).execute()
    elapsed = time.perf_counter() - start
    nbformat.validate(nb)
    jupytext.write(nb, py.with_suffix(".ipynb"))
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.paths or sorted(
        p for p in (ROOT / "notebooks").rglob("*.py") if ".ipynb_checkpoints" not in p.parts
    )
    for py in paths:
        py = py.resolve()
        if py.suffix != ".py":
            print(f"skip {py}: give the percent-format .py of a chapter", file=sys.stderr)
            return 2
        elapsed = execute(py)
        print(f"{py.relative_to(ROOT)}: executed in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
