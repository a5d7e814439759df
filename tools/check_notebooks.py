"""Check that every chapter's ``.py`` and ``.ipynb`` agree and that the ``.ipynb`` holds outputs.

* pairing: the two files of a jupytext pair must have the same cells (type and source);
* outputs: every non-empty code cell of an ``.ipynb`` must have been executed, because nbval
  compares the stored outputs with what the code prints now.

Usage: ``python tools/check_notebooks.py [--root DIR]`` -- exits 1 and lists every problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]


def notebooks(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in (root / "notebooks").rglob(f"*{suffix}") if ".ipynb_checkpoints" not in p.parts)


_PARSED: dict[tuple[str, str], object] = {}


def read_notebook(path: Path):
    """``jupytext.read(path)``, memoised on the file's suffix and text: a notebook is parsed once per process
    however many trees (the real one, the tests' copies) hold it.  Callers only read what it returns."""
    key = (path.suffix, path.read_text(encoding="utf-8"))
    if key not in _PARSED:
        _PARSED[key] = jupytext.read(path)
    return _PARSED[key]


def _cells(path: Path) -> list[tuple[str, str]]:
    nb = read_notebook(path)
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def pairing_problems(root: Path) -> list[str]:
    """Chapters whose ``.py`` and ``.ipynb`` are unpaired or hold different cells."""
    problems = []
    pys = {p.with_suffix("") for p in notebooks(root, ".py")}
    ipynbs = {p.with_suffix("") for p in notebooks(root, ".ipynb")}
    for stem in sorted(pys ^ ipynbs):
        have = ".py" if stem in pys else ".ipynb"
        problems.append(f"{stem.relative_to(root)}{have}: has no paired file (run `make sync`)")
    for stem in sorted(pys & ipynbs):
        a, b = _cells(stem.with_suffix(".py")), _cells(stem.with_suffix(".ipynb"))
        if a != b:
            where = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            problems.append(
                f"{stem.relative_to(root)}: .py and .ipynb differ from cell {where} on "
                f"({len(a)} vs {len(b)} cells; run `make sync`)"
            )
    return problems


def output_problems(root: Path) -> list[str]:
    """Notebooks with code cells that were never executed."""
    problems = []
    for path in notebooks(root, ".ipynb"):
        nb = read_notebook(path)
        missing = [
            i
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None
        ]
        if missing:
            problems.append(
                f"{path.relative_to(root)}: code cells {missing} have no stored outputs "
                "(run `make notebooks`)"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    problems = pairing_problems(args.root.resolve()) + output_problems(args.root.resolve())
    for p in problems:
        print(p)
    if problems:
        return 1
    print("notebooks are paired and executed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
