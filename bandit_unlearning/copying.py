"""Copy one module of the package into other work, with exactly the files it needs.

``python -m bandit_unlearning copy MODULE DEST [--name NAME]`` writes ``DEST/NAME/...``: the module,
every module of this package that it imports (transitively, whether at the top or inside a
function), and an ``__init__.py`` for each folder on the way, so that ``import NAME.<module>`` works
with ``DEST`` on ``sys.path``.  Absolute imports ``bandit_unlearning.x`` are rewritten to ``NAME.x``
(relative imports need no change); each file gets a first line saying where it was copied from.
Outside the package a copy needs only what its modules import (numpy and scipy for every module
that a chapter exports, except the plotting ones, which also import matplotlib); ``copy`` prints
that list.  Plain infrastructure: no chapter explains it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["module_files", "copy_module"]

PACKAGE = "bandit_unlearning"
ROOT = Path(__file__).resolve().parent


def _module_path(dotted: str) -> Path | None:
    """The file of module ``bandit_unlearning.<dotted>`` ('' = the package), or None."""
    base = ROOT.joinpath(*dotted.split(".")) if dotted else ROOT
    if base.with_suffix(".py").is_file() and dotted:
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _dotted(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    return ".".join(parts)


def _normalise(module: str) -> str:
    """``bandit_unlearning.mab.unlearn``, ``mab.unlearn`` or ``mab/unlearn.py`` -> ``mab.unlearn``."""
    if not isinstance(module, str) or not module.strip():
        raise TypeError(f"module must be a non-empty str such as 'mab.unlearn', got {module!r}")
    name = module.strip()
    if name.endswith(".py"):
        name = name[:-3]
    name = name.replace("/", ".").replace("\\", ".").strip(".")
    if name == PACKAGE:
        name = ""
    elif name.startswith(PACKAGE + "."):
        name = name[len(PACKAGE) + 1 :]
    if _module_path(name) is None:
        known = sorted(_dotted(p) for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)
        raise ValueError(
            f"module {module!r} is not a module of {PACKAGE}; choose one of {[k for k in known if k]}"
        )
    return name


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(package modules imported by ``path``, top-level names of the other modules it imports)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _dotted(path).split(".") if _dotted(path) else []
    package = here if path.name == "__init__.py" else here[:-1]
    inside, outside = set(), set()

    def add(dotted: str, names=()):
        target = _module_path(dotted)
        if target is None:
            raise ValueError(f"{path}: imports {PACKAGE}.{dotted}, which does not exist")
        for name in names:  # `from x import y`: y may be a submodule of x
            sub = f"{dotted}.{name}" if dotted else name
            if _module_path(sub) is not None and sub != dotted:
                inside.add(sub)
                continue
            inside.add(dotted)
        if not names:
            inside.add(dotted)
        parts = dotted.split(".") if dotted else []
        for i in range(len(parts)):  # importing a.b.c runs a/__init__ and a/b/__init__
            inside.add(".".join(parts[:i]))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top == PACKAGE:
                    add(alias.name[len(PACKAGE) + 1 :] if "." in alias.name else "")
                else:
                    outside.add(top)
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names if a.name != "*"]
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                dotted = ".".join(base + (node.module.split(".") if node.module else []))
                add(dotted, names)
            elif node.module and node.module.split(".")[0] == PACKAGE:
                add(node.module[len(PACKAGE) + 1 :] if "." in node.module else "", names)
            elif node.module and node.module != "__future__":
                outside.add(node.module.split(".")[0])
    return inside, outside


def module_files(module: str) -> tuple[list[Path], list[str]]:
    """The files a copy of ``module`` needs, and the other top-level modules they import.

    Parameters
    ----------
    module : ``"mab.unlearn"``, ``"bandit_unlearning.mab.unlearn"`` or ``"mab/unlearn.py"``.

    Returns
    -------
    (files, requirements): the package's files (paths, sorted; a folder's ``__init__.py`` only when
    some module imports a name defined in it -- the copy writes an empty one otherwise) and the
    sorted top-level names of what they import from outside the package and the standard library.
    """
    start = _normalise(module)
    todo, seen, needed_inits, outside = [start], set(), set(), set()
    while todo:
        dotted = todo.pop()
        if dotted in seen:
            continue
        seen.add(dotted)
        path = _module_path(dotted)
        if path is None:  # _normalise and _imports only yield existing modules
            raise AssertionError(f"no file for module {dotted!r}")
        if path.name == "__init__.py" and dotted != start and not _defines_names(path, dotted, seen):
            continue  # an __init__ that only documents: an empty one will do
        needed_inits.add(dotted)
        inside, other = _imports(path)
        outside |= other
        todo.extend(sorted(inside - seen))
    files = sorted(p for p in (_module_path(d) for d in needed_inits) if p is not None)
    stdlib = set(sys.stdlib_module_names)
    return files, sorted(o for o in outside if o not in stdlib and o != PACKAGE)


def _defines_names(path: Path, dotted: str, seen: set[str]) -> bool:
    """Whether ``path`` (a package's __init__) runs anything beyond its docstring and ``__all__``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            continue
        return True
    return False


def _rewrite(source: str, name: str) -> str:
    """Rewrite absolute imports of the package to ``name``."""
    if name == PACKAGE:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and node.module
            and node.module.split(".")[0] == PACKAGE
        ):
            edits.append((node.lineno, node.col_offset, "from", PACKAGE))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    edits.append((node.lineno, node.col_offset, "import", alias.name))
    for lineno, col, kind, _ in sorted(edits, reverse=True):
        line = lines[lineno - 1]
        head, tail = line[:col], line[col:]
        if kind == "from":
            tail = tail.replace(f"from {PACKAGE}", f"from {name}", 1)
        else:
            tail = tail.replace(f"import {PACKAGE}", f"import {name}", 1).replace(
                f", {PACKAGE}.", f", {name}."
            )
        lines[lineno - 1] = head + tail
    text = "".join(lines)
    ast.parse(text)
    return text


def copy_module(module: str, dest, name: str = PACKAGE) -> list[Path]:
    """Write ``module`` and the package files it needs into ``dest/name``, importable as ``name``.

    Parameters
    ----------
    module : the module to copy (``"mab.unlearn"``, ``"bandit_unlearning.mab.unlearn"``, ``"mab/unlearn.py"``).
    dest : a folder (created if missing); ``dest/name`` must not exist yet.
    name : the package name of the copy (a Python identifier, default ``bandit_unlearning``).

    Returns
    -------
    The files written (``dest/name/...``), sorted.
    """
    if not isinstance(name, str) or not name.isidentifier() or name in sys.stdlib_module_names:
        raise ValueError(
            f"name (--name) must be a Python identifier that is not a standard module, got {name!r}"
        )
    if not isinstance(dest, (str, Path)):
        raise TypeError(f"dest must be a path (str or Path), got {type(dest).__name__}")
    files, _ = module_files(module)
    dest = Path(dest)
    for parent in (dest, *dest.parents):
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"dest {str(dest)!r}: {str(parent)!r} is a file, not a folder")
            break
    target = dest / name
    if target.exists():
        raise ValueError(f"dest: {str(target)!r} exists already; choose another --name or folder")
    from bandit_unlearning import __version__

    written = {}
    for path in files:
        rel = path.relative_to(ROOT)
        header = (
            f"# Copied from {PACKAGE} {__version__}, {PACKAGE}/{rel.as_posix()}, by "
            f"`python -m {PACKAGE} copy {_normalise(module) or PACKAGE}`"
            + (f" (imports renamed to {name})" if name != PACKAGE else "")
            + ".\n"
        )
        written[rel] = header + _rewrite(path.read_text(), name)
    for rel in list(written):  # every folder on the way needs an __init__.py
        for folder in rel.parents:
            init = folder / "__init__.py"
            written.setdefault(
                init,
                f'"""Part of a copy of {PACKAGE} {__version__}: only what '
                f'{_normalise(module) or PACKAGE} needs."""\n',
            )
    target.mkdir(parents=True)
    out = []
    for rel, text in sorted(written.items()):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out
