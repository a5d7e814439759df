"""Two habits of the code base held by tests: short export cells, numpydoc sections.

Both hold outright: no export cell over the limit, no public callable without its sections (the
debt lists these tests once kept while the code base caught up are paid and gone).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_bad_inputs import public_targets  # noqa: E402

pytestmark = pytest.mark.simd_independent

# ---------------------------------------------------------------------------------- export cells

MAX_CELL_LINES = 80  # non-blank lines of one export cell (d2l's longest is 62, nbdev's 48)


@functools.cache  # read once per session: two tests use it
def export_cells() -> dict[tuple[str, str], int]:
    """``{(chapter, first name the cell defines): non-blank lines}`` for every export cell."""
    import jupytext  # imported here: 2 s at collection otherwise

    out = {}
    for path in sorted((ROOT / "notebooks").rglob("*.py")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        for number, cell in enumerate(jupytext.read(path).cells, start=1):
            tags = [t for t in cell.metadata.get("tags", []) if t == "export" or t.startswith("export:")]
            if cell.cell_type != "code" or not tags:
                continue
            first = f"cell {number}"
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    first = node.name
                    break
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    if isinstance(target, ast.Name):
                        first = target.id
                        break
            key = (path.relative_to(ROOT).as_posix(), first)
            while key in out:  # two cells of a chapter led by one name
                key = (key[0], key[1] + "'")
            out[key] = sum(1 for line in cell.source.splitlines() if line.strip())
    return out


# (chapter, first name defined) -> non-blank lines today.  Debt: split these beside their prose
# (functions into their own cells, a class's methods into later cells with ``add_to_class``).
LONG_CELLS: dict[tuple[str, str], int] = {}


def test_no_new_or_longer_export_cell_over_the_limit():
    cells = export_cells()
    over = {k: n for k, n in cells.items() if n > MAX_CELL_LINES}
    new = sorted(f"{k[0]} ({k[1]}): {n} lines" for k, n in over.items() if k not in LONG_CELLS)
    grown = sorted(
        f"{k[0]} ({k[1]}): {LONG_CELLS[k]} -> {n} lines"
        for k, n in over.items()
        if k in LONG_CELLS and n > LONG_CELLS[k]
    )
    assert not new, f"export cells over {MAX_CELL_LINES} non-blank lines (split them):\n" + "\n".join(new)
    assert not grown, "listed long export cells grew:\n" + "\n".join(grown)


def test_listed_long_cells_are_still_long():
    cells = export_cells()
    paid = sorted(f"{k[0]} ({k[1]})" for k in LONG_CELLS if cells.get(k, 0) <= MAX_CELL_LINES)
    assert not paid, "no longer over the limit (or gone): delete from LONG_CELLS:\n" + "\n".join(paid)


def test_the_cell_count_sees_a_long_cell(tmp_path):
    # the counter itself: a cell of 81 non-blank lines is over, one of 80 is not
    body = "\n".join(f"x{i} = {i}" for i in range(81))
    chapter = (
        "# ---\n# jupyter:\n#   bandit_unlearning:\n#     export: bandit_unlearning.demo\n# ---\n\n"
        f'# %% tags=["export"]\n{body}\n'
    )
    import jupytext

    cell = jupytext.reads(chapter, fmt="py:percent").cells[0]
    assert sum(1 for line in cell.source.splitlines() if line.strip()) == MAX_CELL_LINES + 1


# ------------------------------------------------------------------------------- numpydoc sections


def _has_section(doc: str, section: str) -> bool:
    return bool(re.search(rf"^\s*{section}\s*\n\s*-{{3,}}\s*$", doc or "", re.M))


def _returns_value(func) -> bool:
    try:
        annotation = inspect.signature(func).return_annotation
    except (TypeError, ValueError):
        return False
    if annotation is not inspect.Signature.empty:
        return annotation not in (None, "None")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(
        isinstance(n, ast.Return) and n.value is not None or isinstance(n, (ast.Yield, ast.YieldFrom))
        for n in ast.walk(tree.body[0])
    )


def missing_sections() -> dict[str, str]:
    """``{public callable: what its docstring lacks}``: a Parameters section when it takes arguments
    (a class: Parameters or Attributes), a Returns (or Yields) section when it returns a value."""
    out = {}
    for target, name in public_targets().items():
        func = getattr(*target) if isinstance(target, tuple) else target
        func = getattr(func, "__func__", func)
        doc = inspect.getdoc(func) or ""
        try:
            params = [p for p in inspect.signature(func).parameters if p not in ("self", "cls")]
        except (TypeError, ValueError):
            params = []
        lacks = []
        if params and not (
            _has_section(doc, "Parameters") or inspect.isclass(func) and _has_section(doc, "Attributes")
        ):
            lacks.append("Parameters")
        if (
            not inspect.isclass(func)
            and _returns_value(func)
            and not (_has_section(doc, "Returns") or _has_section(doc, "Yields"))
        ):
            lacks.append("Returns")
        if lacks:
            out[name] = "+".join(lacks)
    return out


def test_every_public_callable_has_numpydoc_sections():
    """Every public callable of the package (its ``__all__``, methods included) documents its
    Parameters (when it takes any) and Returns (when it returns a value): the debt list this test
    once held is paid, so the rule holds outright."""
    missing = sorted(f"{n}: {lacks}" for n, lacks in missing_sections().items())
    assert not missing, (
        "public callables without numpydoc sections (write Parameters/Returns):\n" + "\n".join(missing)
    )


def test_the_section_check_sees_a_missing_section():
    def documented(x):
        """Twice x.

        Parameters
        ----------
        x : float

        Returns
        -------
        float
        """
        return 2 * x

    def undocumented(x):
        """Twice x."""
        return 2 * x

    doc = inspect.getdoc(documented)
    assert _has_section(doc, "Parameters") and _has_section(doc, "Returns") and _returns_value(documented)
    assert not _has_section(inspect.getdoc(undocumented), "Parameters")
