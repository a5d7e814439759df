"""The literate pipeline's own checks: they pass on the tree and fail on tampered copies."""

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import check_notebooks  # noqa: E402
import export  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    """A copy of the parts of the project the checks read."""
    for part in ("notebooks", "bandit_unlearning", "tools"):
        shutil.copytree(
            ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
        )
    return tmp_path


def some_chapter(root: Path) -> Path:
    return sorted((root / "notebooks").rglob("01_*.py"))[0]


def test_real_tree_is_in_sync():
    assert export.drift(ROOT) == []
    assert check_notebooks.pairing_problems(ROOT) == []
    assert check_notebooks.output_problems(ROOT) == []


def test_check_mode_exit_codes(tree, capsys):
    # In sync: main() in this process (its parse and render are shared with the other tests here); out of
    # sync: the command line in a fresh interpreter, so that its exit code is checked end to end.
    assert export.main(["--check", "--root", str(tree)]) == 0
    assert "package is in sync" in capsys.readouterr().out
    module = next(
        p for p in sorted((tree / "bandit_unlearning").rglob("*.py")) if p in export.generated_on_disk(tree)
    )
    module.write_text(module.read_text() + "\nx = 1\n")
    bad = subprocess.run(
        [sys.executable, "tools/export.py", "--check", "--root", str(tree)],
        cwd=tree,
        capture_output=True,
        text=True,
    )
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
    text = export.render(
        "bandit_unlearning.x", [export.Chunk(Path("notebooks/x.py"), "bandit_unlearning.x", src)]
    )
    lines = text.splitlines()
    assert lines[0].startswith(export.GENERATED_MARK) and "notebooks/x.py" in lines[0]
    assert lines[2] == '"""Doc."""' and "__all__" in text
    namespace = {}
    exec(compile(text, "x", "exec"), namespace)
    assert namespace["__doc__"] == "Doc." and namespace["__all__"] == ["A", "f", "C"]


# --- several cells and several chapters filling one module ---------------------------------------------

HEADER = "# ---\n# jupyter:\n#   bandit_unlearning:\n#     export: {module}\n# ---\n\n"


def small_tree(root: Path, chapters: dict) -> Path:
    """A project with only the given chapters (relative path -> text) and an empty package."""
    for rel, text in chapters.items():
        path = root / "notebooks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "bandit_unlearning").mkdir(exist_ok=True)
    return root


def load(path: Path) -> dict:
    namespace = {"__name__": "generated_under_test"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


FIRST = HEADER.format(module="bandit_unlearning.demo") + (
    "# %% [markdown]\n# # Chapter one\n\n"
    '# %% tags=["export"]\n"""The demo module."""\n\nfrom __future__ import annotations\n\nimport math\n\n'
    "import numpy as np\n\n\ndef area(r):\n    return math.pi * r * r\n\n\n"
    "# %% [markdown]\n# ## 2. Later section\n\n"
    "# %%\nprint(area(1.0))\n\n"
    '# %% tags=["export"]\nimport math\n\n\ndef volume(r):\n    return 4 / 3 * math.pi * r ** 3 + twice(0)\n'
)
SECOND = HEADER.format(module="bandit_unlearning.other") + (
    "# %% [markdown]\n# # Chapter two\n## 1. Extending the demo\n\n"
    '# %% tags=["export:bandit_unlearning.demo"]\nimport math\nfrom math import sqrt\n\n'
    'from bandit_unlearning.demo import area\n\n\ndef twice(x):\n    """Twice x."""\n    return 2 * x + 0 * area(sqrt(1.0))\n\n\n'
    "TWO = 2\n"
)


def test_two_chapters_fill_one_module_in_chapter_then_cell_order(tmp_path):
    # "b_part" sorts after "a_part": chapter order is the path order under notebooks/.
    root = small_tree(tmp_path, {"b_part/01_second.py": SECOND, "a_part/09_first.py": FIRST})
    export.write(root)
    path = root / "bandit_unlearning" / "demo.py"
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0].startswith(export.GENERATED_MARK)
    assert "from 2 chapters" in lines[0]
    assert lines[2:4] == ["#   notebooks/a_part/09_first.py", "#   notebooks/b_part/01_second.py"]
    markers = [line for line in lines if line.startswith(export.MARKER)]
    assert markers == [
        '# --- from notebooks/a_part/09_first.py, cell 2 (line 10): "Chapter one" ---',
        '# --- from notebooks/a_part/09_first.py, cell 5 (line 30): "2. Later section" ---',
        '# --- from notebooks/b_part/01_second.py, cell 2 (line 11): "1. Extending the demo" ---',
    ]
    assert text.index("def area") < text.index("def volume") < text.index("def twice")
    # the docstring stays first, __future__ right after it, one import of math, the self-import dropped
    ns = load(path)
    assert ns["__doc__"] == "The demo module." and ns["__all__"] == ["area", "volume", "twice", "TWO"]
    assert text.count("import math\n") == 1 and "from bandit_unlearning.demo" not in text
    assert text.index("from __future__") < text.index("__all__") < text.index("import math")
    assert ns["volume"](1.0) == pytest.approx(4 / 3 * np.pi) and ns["twice"](3) == 6
    assert export.drift(root) == []
    assert not (root / "bandit_unlearning" / "other.py").exists()  # no cell of chapter two exports there


def test_provenance_markers_point_at_the_cell_and_its_lines(tmp_path):
    root = small_tree(tmp_path, {"b_part/01_second.py": SECOND, "a_part/09_first.py": FIRST})
    export.write(root)
    path = root / "bandit_unlearning" / "demo.py"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines, start=1):
        if (
            not line.strip()
            or line.startswith(export.MARKER)
            or i <= next(j for j, t in enumerate(lines, start=1) if t.startswith(export.MARKER))
        ):
            continue
        chapter, at = export.locate(root, path, i)
        assert (root / chapter).read_text().splitlines()[at - 1] == line, (i, line, chapter, at)
    # a traceback through the module leads back to the chapter's line
    ns = load(path)
    try:
        ns["volume"]("r")
    except TypeError as err:
        tb = err.__traceback__
        while tb.tb_next:
            tb = tb.tb_next
        chapter, at = export.locate(root, path, tb.tb_lineno)
        assert chapter.as_posix() == "notebooks/a_part/09_first.py"
        assert "4 / 3 * math.pi" in (root / chapter).read_text().splitlines()[at - 1]


def test_markers_of_the_real_package_point_at_their_cells():
    modules = export.collect(ROOT)
    checked = 0
    for path in sorted(export.generated_on_disk(ROOT)):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines[:-1], start=1):
            if line.lstrip().startswith(export.MARKER) and lines[i].strip():
                chapter, at = export.locate(ROOT, path, i + 1, modules)
                indent = line[: len(line) - len(line.lstrip())]  # a method added from a later cell: 4 spaces
                assert indent + (ROOT / chapter).read_text().splitlines()[at - 1] == lines[i], (path, i + 1)
                cell = int(line.split(", cell ")[1].split()[0])
                assert export._cell_lines(ROOT / chapter)[cell - 1] < at
                checked += 1
    assert checked >= len(modules)


@pytest.mark.parametrize(
    "second, message",
    [
        ("def area(r):\n    return r\n", "'area' is defined in two cells"),
        ("area = 1\n", "'area' is defined in two cells"),
        ("from math import sqrt as area\n", "which notebooks/a_part/09_first.py, cell 2 (line 10) defines"),
        ("import numpy.linalg as np\n", "'np' is imported differently in two cells"),
        ("from bandit_unlearning.demo import nothing_here\n", "no earlier cell"),
        ('"""A second docstring."""\n', "only the first cell"),
    ],
)
def test_conflicting_cells_are_refused(tmp_path, second, message):
    chapter = HEADER.format(module="bandit_unlearning.demo") + '# %% tags=["export"]\n' + second
    root = small_tree(tmp_path, {"a_part/09_first.py": FIRST, "b_part/01_second.py": chapter})
    with pytest.raises(ValueError, match=re.escape(message)):
        export.write(root)
    assert not (root / "bandit_unlearning" / "demo.py").exists()


def test_identical_imports_merge_and_keep_the_module_importable(tmp_path):
    other = HEADER.format(module="bandit_unlearning.demo") + (
        '# %% tags=["export"]\nimport math\nfrom math import pi, tau\n\nimport numpy as np\n\n\n'
        "def circumference(r):\n    return np.float64(tau * r) + 0 * pi\n"
    )
    root = small_tree(
        tmp_path, {"a_part/09_first.py": FIRST, "b_part/01_second.py": SECOND, "c_part/01_third.py": other}
    )
    export.write(root)
    text = (root / "bandit_unlearning" / "demo.py").read_text()
    assert text.count("import numpy as np") == 1 and text.count("from math import") == 1
    assert "from math import sqrt, pi, tau" in text
    assert load(root / "bandit_unlearning" / "demo.py")["circumference"](1.0) == pytest.approx(2 * np.pi)


# --- methods from later cells: add_to_class ------------------------------------------------------------

CLASS_FIRST = HEADER.format(module="bandit_unlearning.demo") + (
    "# %% [markdown]\n# # A class in three cells\n\n"
    '# %% tags=["export"]\n"""The demo module."""\n\nimport math\n\n\nclass Circle:\n'
    '    """A circle."""\n\n    def __init__(self, r):\n        self._r = r\n\n\nUNIT = 1.0\n\n'
    "# %% [markdown]\n# ## 2. Its area\n\n"
    '# %% tags=["export"]\nfrom bandit_unlearning.literate import add_to_class\n\n\n'
    '# the area, from the radius\n@add_to_class(Circle)\ndef area(self):\n    """pi r^2."""\n'
    "    return math.pi * self._r ** 2\n\n\n@add_to_class(Circle)\n@property\ndef r(self):\n    return self._r\n\n"
    "# %% [markdown]\n# ## 3. A setter\n\n"
    '# %% tags=["export"]\n@add_to_class(Circle)\n@Circle.r.setter\ndef r(self, value):\n    self._r = value\n'
)


def test_methods_from_later_cells_land_inside_their_class(tmp_path):
    root = small_tree(tmp_path, {"a_part/01_circle.py": CLASS_FIRST})
    export.write(root)
    path = root / "bandit_unlearning" / "demo.py"
    text = path.read_text()
    assert "add_to_class" not in text and "literate" not in text
    # the methods sit in the class body, before the module-level code that followed the class
    assert (
        text.index("class Circle")
        < text.index("    def area(self):")
        < text.index("    def r(self, value)")
        < text.index("UNIT = 1.0")
    )
    assert (
        "    # the area, from the radius\n    def area" in text
        and "    @r.setter\n" in text
        and "    @property\n    def r(self)" in text
    )
    ns = load(path)
    assert ns["__all__"] == ["Circle", "UNIT"]
    c = ns["Circle"](2.0)
    assert c.area() == pytest.approx(4 * math.pi) and c.r == 2.0
    c.r = 3.0
    assert c.area() == pytest.approx(9 * math.pi)
    # the same class in the notebook's own namespace (the decorator runs there)
    nb_ns: dict = {}
    source = (root / "notebooks/a_part/01_circle.py").read_text()
    exec(compile(source, "chapter", "exec"), nb_ns)
    assert nb_ns["Circle"](2.0).area() == pytest.approx(4 * math.pi)
    assert nb_ns["Circle"].area.__qualname__ == "Circle.area"
    # every copied line leads back to its chapter line, the moved methods' lines too
    lines = text.splitlines()
    mapped = 0
    for i, line in enumerate(lines, start=1):
        try:
            chapter, at = export.locate(root, path, i)
        except ValueError:
            continue
        expected = (root / chapter).read_text().splitlines()[at - 1]
        # moved lines are indented into the class body; the setter is named as the body names it
        assert line in (expected, "    " + expected, "    " + expected.replace("@Circle.", "@")), (
            i,
            line,
            expected,
        )
        mapped += 1
    assert mapped >= 12
    assert export.drift(root) == []


@pytest.mark.parametrize(
    "cell, message",
    [
        (
            "@add_to_class(Circle)\ndef area(self):\n    return 1\n\n\nTWO = 2\n",
            "must hold only such functions",
        ),
        ("@add_to_class(Square)\ndef area(self):\n    return 1\n", "names no class"),
        ("@add_to_class(Circle)\ndef __init__(self):\n    pass\n", "Circle.__init__ is already defined"),
        (
            "@property\n@add_to_class(Circle)\ndef area(self):\n    return 1\n",
            "must be the outermost decorator",
        ),
        ("@add_to_class(Circle, 2)\ndef area(self):\n    return 1\n", "takes one argument"),
    ],
)
def test_bad_method_cells_are_refused(tmp_path, cell, message):
    chapter = CLASS_FIRST.split("# %% [markdown]\n# ## 2.")[0] + '# %% tags=["export"]\n' + cell
    root = small_tree(tmp_path, {"a_part/01_circle.py": chapter})
    with pytest.raises(ValueError, match=re.escape(message)):
        export.write(root)
    assert not (root / "bandit_unlearning" / "demo.py").exists()


def test_add_to_class_at_run_time():
    from bandit_unlearning.literate import add_to_class

    class Box:
        pass

    @add_to_class(Box)
    def size(self):
        return 3

    @add_to_class(Box)
    @staticmethod
    def kind():
        return "box"

    assert Box().size() == 3 and Box.kind() == "box" and Box.size.__qualname__.endswith("Box.size")
    with pytest.raises(TypeError, match="cls must be a class"):
        add_to_class(Box())


# --- twin methods: sections_from ---------------------------------------------------------------------


def test_sections_from_appends_the_twins_sections_once_written():
    """The memory-light tree's twins of the dense tree's methods show the dense tree's sections under
    their own text, and a decorated object that is not a def is refused."""
    import inspect

    from bandit_unlearning.exact.light_tree import LightTree
    from bandit_unlearning.exact.tree import BinaryTree
    from bandit_unlearning.literate import sections_from

    for name in (
        "append",
        "noisy_prefix_sum",
        "clean_prefix_sum",
        "leaf",
        "clean",
        "noisy",
        "truncate",
        "unlearn_leaf",
    ):
        light, dense = inspect.getdoc(getattr(LightTree, name)), inspect.getdoc(getattr(BinaryTree, name))
        head, _, sections = dense.partition("\nParameters\n")
        assert sections and light.startswith(f"As in ``BinaryTree.{name}``"), name
        assert light.endswith("\nParameters\n" + sections) and light.count("\nParameters\n") == 1, name
    assert inspect.getdoc(LightTree).endswith(
        inspect.getdoc(BinaryTree)[inspect.getdoc(BinaryTree).index("Parameters\n") :]
    )

    def documented(x):
        """Twice x.

        Parameters
        ----------
        x : float
            A number.

        Returns
        -------
        float
            ``2 x``.
        """
        return 2 * x

    @sections_from(documented)
    def twin(x):
        """As in ``documented``, in another way."""
        return x + x

    assert (
        inspect.getdoc(twin) == "As in ``documented``, in another way.\n\n" + inspect.getdoc(documented)[10:]
    )
    with pytest.raises(TypeError, match="decorate a def or a class"):
        sections_from(documented)(3)
