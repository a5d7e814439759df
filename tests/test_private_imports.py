"""No new private names imported across the package's modules.

A name with a leading underscore is private to its module: another module that imports it depends on
something with no contract.  This test reads every module's ``from ... import`` statements (``ast``, no
import is executed) and lists each private name a module imports from another module of the package.
The list may only shrink: ``ALLOWED`` below is what the package does today, each entry is debt (the
name should become public and documented in one place, or the importer should stop needing it), and
the target is an empty list.  A new private import fails the test; so does an entry that is no longer
needed, so that the list is shortened as the debt is paid.
"""

import ast
from pathlib import Path

import bandit_unlearning

PACKAGE = Path(bandit_unlearning.__file__).resolve().parent

# (importing module, module imported from, private name).  Must shrink to zero; never add to it.
ALLOWED: set = set()


def _module_name(path: Path, package: Path) -> str:
    """Dotted name inside the package ('' for the package itself)."""
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The package-relative module an import reads from, or None when it is outside the package."""
    if node.level:  # from .x import y / from .. import y
        base = module.split(".") if module else []
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    name = node.module or ""
    if name == bandit_unlearning.__name__:
        return ""
    prefix = bandit_unlearning.__name__ + "."
    return name[len(prefix) :] if name.startswith(prefix) else None


def private_imports(package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """Every (importer, source, name) where a module imports a private name from another module."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        module = _module_name(path, package)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(module, path.name == "__init__.py", node)
            if source is None or source == module:
                continue
            found |= {
                (module, source, a.name)
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            }
    return found


def test_no_new_private_imports_across_modules():
    new = sorted(private_imports() - ALLOWED)
    assert not new, (
        "private names imported from another module of the package (make the name public "
        f"and document it, or do not import it): {new}"
    )


def test_allowed_private_imports_are_still_needed():
    stale = sorted(ALLOWED - private_imports())
    assert not stale, (
        f"no longer imported: delete these entries from ALLOWED in {Path(__file__).name}: {stale}"
    )


def test_the_reader_sees_a_private_import(tmp_path):
    """The check on a made-up package: it finds absolute and relative private imports, and only those."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("_HIDDEN = 1\nPUBLIC = 2\n")
    (tmp_path / "sub" / "__init__.py").write_text("from ..a import _HIDDEN\n")
    (tmp_path / "sub" / "b.py").write_text(
        "from bandit_unlearning.a import PUBLIC, _HIDDEN as h\nfrom .. import a\nfrom os import _exit\n"
        "from numpy import __version__\n"
    )
    assert private_imports(tmp_path) == {("sub", "a", "_HIDDEN"), ("sub.b", "a", "_HIDDEN")}
