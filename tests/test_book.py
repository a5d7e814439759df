"""The book's table of contents (docs/conf.py) is generated from the notebook tree.

`make book` builds the book with every warning an error, and so does the last test here (which
`make test` runs); the other tests check the generator itself: every stored notebook is in the table of contents exactly once, in reading order,
and a notebook outside the known parts stops the build instead of silently missing from it.
"""

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _conf(notebooks: Path | None = None) -> dict:
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    if notebooks is not None:
        conf["toc"].__globals__["NOTEBOOKS"] = notebooks
    return conf


def test_every_notebook_is_in_the_toc_once_in_reading_order():
    conf = _conf()
    docs = [doc for _, part in conf["toc"]() for doc in part]
    on_disk = {p.relative_to(ROOT / "notebooks").with_suffix("").as_posix()
               for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts}
    assert len(docs) == len(set(docs)) and set(docs) | {"index"} == on_disk
    assert docs[0].startswith("mab/01") and docs[-1] == "errata"
    assert docs == sorted(docs, key=lambda d: ([f for f, _ in conf["PARTS"]] + ["errata"]).index(d.split("/")[0]))


def test_a_notebook_outside_the_parts_stops_the_build(tmp_path):
    for doc in ("index", "errata", "mab/01_a", "newpart/01_b"):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{doc}.ipynb").write_text("{}")
    conf = _conf(tmp_path)
    with pytest.raises(RuntimeError, match="newpart/01_b"):
        conf["toc"]()
    (tmp_path / "newpart" / "01_b.ipynb").unlink()
    assert [doc for _, part in conf["toc"]() for doc in part] == ["mab/01_a", "errata"]


def test_the_toc_is_appended_to_the_index_only():
    conf = _conf()
    source = ['{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}']
    conf["_append_toc"](None, "mab/01_data_and_lcb", source)
    assert '"cells": []' in source[0]
    conf["_append_toc"](None, "index", source)
    assert "```{toctree}" in source[0] and "mab/01_data_and_lcb" in source[0] and ":hidden:" in source[0]


def test_the_book_builds_with_every_warning_an_error(tmp_path):
    """`make book`'s build, run here so that CI (which runs `make test`) builds the book in parallel
    with the other tests: a dangling link, a missing anchor or figure, or a chapter outside the table
    of contents is a warning, and every warning fails the build."""
    import subprocess
    import sys

    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-E", "-a", "-W", "--keep-going", "-n", "-q", "-c", "docs",
           "-d", str(tmp_path / "doctrees"), "-b", "html", "notebooks", str(out)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (out / "index.html").exists() and (out / "errata.html").exists()
