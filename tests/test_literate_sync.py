"""The literate pipeline's own checks: they pass on the tree and fail on tampered copies."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import check_notebooks  # noqa: E402
import export  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    """A copy of the parts of the project the checks read."""
    for part in ("notebooks", "bandit_unlearning", "tools"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return tmp_path


def some_chapter(root: Path) -> Path:
    return sorted((root / "notebooks").rglob("01_*.py"))[0]


def test_real_tree_is_in_sync():
    assert export.drift(ROOT) == []
    assert check_notebooks.pairing_problems(ROOT) == []
    assert check_notebooks.output_problems(ROOT) == []


def test_check_mode_exit_codes(tree):
    ok = subprocess.run([sys.executable, "tools/export.py", "--check", "--root", str(tree)], cwd=tree)
    assert ok.returncode == 0
    module = next(p for p in sorted((tree / "bandit_unlearning").rglob("*.py")) if p in export.generated_on_disk(tree))
    module.write_text(module.read_text() + "\nx = 1\n")
    bad = subprocess.run([sys.executable, "tools/export.py", "--check", "--root", str(tree)], cwd=tree,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and module.relative_to(tree).as_posix() in bad.stdout


def test_hand_edited_module_is_drift(tree):
    module = sorted(export.generated_on_disk(tree))[0]
    module.write_text(module.read_text().replace("import numpy as np", "import numpy as np  # edited", 1))
    assert [p for p in export.drift(tree) if module.relative_to(tree).as_posix() in p]


def test_notebook_edit_without_export_is_drift(tree):
    chapter = some_chapter(tree)
    text = chapter.read_text()
    marker = '# %% tags=["export'
    i = text.index(marker)
    j = text.index("\n", text.index("\n", i) + 1)  # after the first line of the cell's code
    chapter.write_text(text[:j] + "\nEXTRA_CONSTANT = 42" + text[j:])
    problems = export.drift(tree)
    assert problems and all("differs" in p for p in problems)
    export.write(tree)
    assert export.drift(tree) == []


def test_stale_generated_module_is_reported(tree):
    module = sorted(export.generated_on_disk(tree))[0]
    stale = module.with_name("stale_module.py")
    stale.write_text(module.read_text())
    assert any("stale_module.py" in p and "no notebook" in p for p in export.drift(tree))
    export.write(tree)
    assert not stale.exists()


def test_unpaired_and_diverged_notebooks_are_reported(tree):
    chapter = some_chapter(tree)
    nb_path = chapter.with_suffix(".ipynb")
    nb = json.loads(nb_path.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = ["print('tampered')\n"] + list(code["source"])
    nb_path.write_text(json.dumps(nb))
    assert any(chapter.stem in p and "differ" in p for p in check_notebooks.pairing_problems(tree))
    nb_path.unlink()
    assert any("no paired file" in p for p in check_notebooks.pairing_problems(tree))


def test_missing_outputs_are_reported(tree):
    nb_path = some_chapter(tree).with_suffix(".ipynb")
    nb = json.loads(nb_path.read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            c["outputs"], c["execution_count"] = [], None
    nb_path.write_text(json.dumps(nb))
    assert any(nb_path.name in p and "no stored outputs" in p for p in check_notebooks.output_problems(tree))


def test_public_names_and_docstring_placement():
    src = '"""Doc."""\nimport numpy as np\n\nA = 1\n_b = 2\n\ndef f():\n    pass\n\nclass C:\n    x = 1\n'
    assert export.public_names(src) == ["A", "f", "C"]
    text = export.render("bandit_unlearning.x", [export.Chunk(Path("notebooks/x.py"), "bandit_unlearning.x", src)])
    lines = text.splitlines()
    assert lines[0].startswith(export.GENERATED_MARK) and "notebooks/x.py" in lines[0]
    assert lines[2] == '"""Doc."""' and "__all__" in text
    namespace = {}
    exec(compile(text, "x", "exec"), namespace)
    assert namespace["__doc__"] == "Doc." and namespace["__all__"] == ["A", "f", "C"]
