"""`python -m bandit_unlearning copy MODULE DEST --name NAME`: a module with exactly the package files
it needs, importable under a name of the user's choice, in an environment that holds only numpy and
scipy.

The fresh environment is a new virtual environment (``python -m venv --without-pip``, no system
site-packages) whose only path entry beyond the standard library is a folder holding numpy and
scipy (links to the pinned versions installed here): nothing else of this project's environment,
and not the package itself, can be imported there -- the test checks that too.
"""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest
import scipy

from bandit_unlearning.copying import copy_module, module_files

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """(python, env): a fresh interpreter that sees the standard library, numpy and scipy only."""
    base = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    site = base / "numpy_scipy"
    site.mkdir()
    for module in (numpy, scipy):
        src = Path(module.__file__).parent
        for entry in src.parent.iterdir():
            if entry.name.split("-")[0].split(".")[0] == src.name:  # numpy, numpy.libs, numpy-X.dist-info
                (site / entry.name).symlink_to(entry)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(site),
        "PYTHONNOUSERSITE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    return base / "venv" / "bin" / "python", env


def _run(python, env, code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_the_bare_environment_holds_only_numpy_and_scipy(bare_python, tmp_path):
    python, env = bare_python
    done = _run(
        python,
        env,
        """
        import importlib.util, numpy, scipy
        print(numpy.__version__, scipy.__version__)
        for name in ("bandit_unlearning", "matplotlib", "tqdm", "pytest"):
            assert importlib.util.find_spec(name) is None, name
    """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [numpy.__version__, scipy.__version__]


# One tiny call per copied module, written against the copy's own name.
CALLS = {
    "mab.unlearn": """
        import numpy as np
        from mylib.mab.lcb import LCBState, lcb_scores
        from mylib.mab.mechanisms import DeletionRequest
        from mylib.protocol import unlearn
        import mylib.mab.unlearn as u
        assert u.__name__ == "mylib.mab.unlearn"
        print(sorted(u.__all__)[:3])
    """,
    "exact.tree": """
        import numpy as np
        from mylib.exact.tree import BinaryTree
        print(BinaryTree.__name__)
    """,
    "privacy.gaussian": """
        from mylib.privacy.gaussian import analytic_gaussian_sigma
        print(round(analytic_gaussian_sigma(1.0, 1.0, 1e-5), 6))
    """,
}


@pytest.mark.parametrize("module", sorted(CALLS))
def test_a_copy_imports_and_runs_in_the_bare_environment(module, bare_python, tmp_path):
    python, env = bare_python
    files, needs = module_files(module)
    assert set(needs) <= {"numpy", "scipy"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bandit_unlearning",
            "copy",
            module,
            str(tmp_path / "vendor"),
            "--name",
            "mylib",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    copied = sorted(
        p.relative_to(tmp_path / "vendor" / "mylib").as_posix()
        for p in (tmp_path / "vendor" / "mylib").rglob("*.py")
    )
    # exactly the files it needs, plus an __init__.py for each folder on the way
    expected = {f.relative_to(ROOT / "bandit_unlearning").as_posix() for f in files}
    assert set(copied) - expected <= {
        f"{d}/__init__.py" for d in ("mab", "exact", "privacy", "rl", "experiments")
    }
    assert expected <= set(copied)
    for path in (tmp_path / "vendor" / "mylib").rglob("*.py"):  # every import renamed
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.split(".")[0] == "bandit_unlearning" for n in names), (path, names)
    env = dict(env, PYTHONPATH=env["PYTHONPATH"] + ":" + str(tmp_path / "vendor"))
    run = _run(python, env, CALLS[module], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]


def test_the_copy_of_unlearn_does_a_deletion(bare_python, tmp_path):
    """The issue's example: mab/unlearn.py needs 7 package files beside it; the copy runs a deletion."""
    python, env = bare_python
    copy_module("mab.unlearn", tmp_path / "vendor", name="mylib")
    code = """
        import numpy as np
        from mylib.mab.data import fixed_sample_dataset
        from mylib.mab.lcb import fit_lcb
        from mylib.mab.unlearn import UnlearnOptions
        from mylib.mab.mechanisms import DeletionRequest
        from mylib.protocol import unlearn
        rng = np.random.default_rng(0)
        D = fixed_sample_dataset([0.1, 0.08, 0.06], counts=[300] * 3, rng=rng)
        state = fit_lcb(D)
        request = DeletionRequest(arms=np.zeros(5, dtype=int), rewards=np.array([1.0, 0, 0, 0, 0]))
        new, out = unlearn(state, request, options=UnlearnOptions(method="rollback"), rng=rng)
        assert new.n == state.n - 5 and out.rolled_back == tuple(range(5)) and out.arm in (0, 1, 2), out
        print(type(out).__name__)
    """
    env = dict(env, PYTHONPATH=env["PYTHONPATH"] + ":" + str(tmp_path / "vendor"))
    run = _run(python, env, code, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]


def test_copy_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="not a module of bandit_unlearning"):
        copy_module("mab.nothing", tmp_path)
    with pytest.raises(ValueError, match="Python identifier"):
        copy_module("mab.lcb", tmp_path, name="my-lib")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        copy_module("mab.lcb", tmp_path / "file" / "sub")
    copy_module("mab.lcb", tmp_path, name="once")
    with pytest.raises(ValueError, match="exists already"):
        copy_module("mab.lcb", tmp_path, name="once")
