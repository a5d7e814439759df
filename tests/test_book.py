"""The book (docs/conf.py): its table of contents, its build, and its pages as a browser shows them.

The table of contents is generated from the notebook tree: every stored notebook is in it exactly
once, in reading order, and a notebook outside the known parts stops the build instead of silently
missing from it.  `make book` builds the book with every warning an error, and so does the build
here (which `make test` runs).  Then every page of that build is loaded in headless Chromium
(tools/book_browser.py, with name resolution switched off, as with the network unplugged): no raw
TeX left in the rendered text, no MathJax error, every image loaded, no request leaving the
machine, every anchor link (the index's theorem table among them) landing on its anchor.  The same
check is shown rejecting small broken books: a formula broken by the list-item pitfall, a missing
image, MathJax loaded from a CDN.

Chromium comes from the system's packages (`apt-get install -y chromium chromium-driver`; `.ci/run`
installs it).  Without it the browser tests are skipped with that instruction, except under CI=true,
where they fail.
"""

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book_browser  # noqa: E402


def _conf(notebooks: Path | None = None) -> dict:
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    if notebooks is not None:
        conf["toc"].__globals__["NOTEBOOKS"] = notebooks
    return conf


def test_every_notebook_is_in_the_toc_once_in_reading_order():
    conf = _conf()
    docs = [doc for _, part in conf["toc"]() for doc in part]
    on_disk = {
        p.relative_to(ROOT / "notebooks").with_suffix("").as_posix()
        for p in (ROOT / "notebooks").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    }
    assert len(docs) == len(set(docs)) and set(docs) | {"index"} == on_disk
    assert docs[0] == "00_tour" and docs[1].startswith("mab/01") and docs[-1] == "errata"
    order = ["00_tour"] + [f for f, _ in conf["PARTS"]] + ["errata"]
    assert docs == sorted(docs, key=lambda d: order.index(d.split("/")[0]))


def test_a_notebook_outside_the_parts_stops_the_build(tmp_path):
    for doc in ("index", "00_tour", "errata", "mab/01_a", "newpart/01_b"):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{doc}.ipynb").write_text("{}")
    conf = _conf(tmp_path)
    with pytest.raises(RuntimeError, match="newpart/01_b"):
        conf["toc"]()
    (tmp_path / "newpart" / "01_b.ipynb").unlink()
    assert [doc for _, part in conf["toc"]() for doc in part] == ["00_tour", "mab/01_a", "errata"]


def test_the_toc_is_appended_to_the_index_only():
    conf = _conf()
    source = ['{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}']
    conf["_append_toc"](None, "mab/01_data_and_lcb", source)
    assert '"cells": []' in source[0]
    conf["_append_toc"](None, "index", source)
    assert "```{toctree}" in source[0] and "mab/01_data_and_lcb" in source[0] and ":hidden:" in source[0]


def _sphinx(src: Path, out: Path, conf_dir: Path, strict: bool = True) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-E",
        "-a",
        *(["-W", "--keep-going", "-n"] if strict else []),
        "-q",
        "-c",
        str(conf_dir),
        "-d",
        str(out.parent / "doctrees"),
        "-b",
        "html",
        str(src),
        str(out),
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """`make book`'s build (every warning an error), once for the tests of this file."""
    out = tmp_path_factory.mktemp("book") / "html"
    run = _sphinx(ROOT / "notebooks", out, ROOT / "docs")
    return run, out


def test_the_book_builds_with_every_warning_an_error(book):
    """`make book`'s build, run here so that CI (which runs `make test`) builds the book in parallel
    with the other tests: a dangling link, a missing anchor or figure, or a chapter outside the table
    of contents is a warning, and every warning fails the build."""
    run, out = book
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (out / "index.html").exists() and (out / "errata.html").exists()
    # MathJax is shipped with the book (not fetched from a CDN when a page is read).
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert 'src="_static/mathjax/tex-chtml.js' in (out / "index.html").read_text()


def test_page_titles_are_plain_text():
    conf = _conf()
    assert (
        conf["plain_title"](r"Auditing \((\varepsilon, \delta)\): the hockey-stick")
        == "Auditing (ε, δ): the hockey-stick"
    )
    assert conf["plain_title"](r"for \(C^\star \in (1, 2)\)") == "for C* ∈ (1, 2)"
    with pytest.raises(ValueError, match="no plain-text form"):
        conf["plain_title"](r"about \(\Gamma_{\mathfrak g}\)")


@pytest.fixture(scope="module")
def chromium():
    """The Chromium binary; set up before the builds, so that a missing browser skips at once."""
    binary = book_browser.find_chromium()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail(book_browser.INSTALL_HINT + " -- required under CI=true (.ci/run installs it)")
        pytest.skip(book_browser.INSTALL_HINT)
    return binary


@pytest.fixture(scope="module")
def browser(chromium):
    """One headless Chromium for every check of this file (each check clears its HTTP cache and serves
    its book on a new port)."""
    with book_browser.Browser(chromium) as running:
        yield running


def test_every_page_reads_well_in_a_browser(chromium, browser, book):
    """Every page of the built book in headless Chromium, offline: see tools/book_browser.py."""
    run, out = book
    assert run.returncode == 0, "the book did not build (see the build test)"
    start = time.monotonic()
    reports = book_browser.check_book(out, browser=browser)
    problems = {r.page: r.problems for r in reports if r.problems}
    assert not problems, json.dumps(problems, indent=1, ensure_ascii=False)[:6000]
    pages = {r.page for r in reports}
    assert {"index.html", "00_tour.html", "errata.html"} <= pages and len(pages) >= 40
    # Every page has its formulas typeset (the index, a Paper A and a Paper B chapter at least).
    formulas = {r.page: r.formulas for r in reports}
    assert (
        formulas["index.html"] > 10
        and formulas["mab/05_mixing.html"] > 50
        and formulas["rl/12_linucb.html"] > 50
    )
    print(f"{len(reports)} pages, {sum(formulas.values())} formulas, {time.monotonic() - start:.1f} s")


def _markdown_nb(*cells: str, png: bytes | None = None) -> str:
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": c} for i, c in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    if png is not None:
        import base64

        nb["cells"].append(
            {
                "cell_type": "code",
                "id": "fig",
                "metadata": {},
                "execution_count": 1,
                "source": "plot()",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"},
                    }
                ],
            }
        )
    return json.dumps(nb)


# The list-item pitfall: a `$$` block right after a text line, with a continuation line that starts
# with `+`: MyST reads that line as a list item, the formula falls apart into text (and `\,` is eaten).
PITFALL = """# Broken

**Theorem.**
$$
B(k) := \\sqrt{\\frac{2L}{n - k}}
  + \\frac{3(k - k')\\gamma}{2\\sqrt{2\\pi}\\,(n - k)} ,
$$
and $B$ is minimised at an end.
"""
FIXED = (
    PITFALL.replace("**Theorem.**\n$$", "**Theorem.**\n\n$$")
    .replace("}}\n  + ", "}} +\n  ")
    .replace("# Broken", "# Fixed")
)


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    """A small book built with the book's own configuration (docs/conf.py), pages of our own."""
    return _tiny_book(tmp_path_factory.mktemp("tiny"))


def _tiny_book(tmp_path: Path) -> Path:
    src = tmp_path / "notebooks"
    (src / "mab").mkdir(parents=True)
    png = _png()
    pages = {
        "index": _markdown_nb("# Tiny book\n\nA formula: $\\varepsilon > 0$."),
        "00_tour": _markdown_nb("# Tour\n\nNothing."),
        "errata": _markdown_nb("# Errata\n\nNone."),
        "mab/01_broken": _markdown_nb(PITFALL),
        "mab/02_fixed": _markdown_nb(FIXED),
        "mab/03_figure": _markdown_nb("# A figure\n\nIt is below.", png=png),
    }
    for doc, text in pages.items():
        (src / f"{doc}.ipynb").write_text(text)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "conf.py").write_text(
        f"__file__ = {str(ROOT / 'docs' / 'conf.py')!r}\n"
        f"exec(compile(open(__file__).read(), __file__, 'exec'))\n"
        f"NOTEBOOKS = __import__('pathlib').Path({str(src)!r})\n"
        f"PARTS = [('mab', 'Part')]\n"
    )
    (conf_dir / "_templates").symlink_to(ROOT / "docs" / "_templates")
    out = tmp_path / "html"
    run = _sphinx(src, out, conf_dir, strict=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


def _png() -> bytes:
    import io

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def test_the_browser_check_rejects_broken_pages(chromium, browser, tiny_book, tmp_path):
    """The same browser check fails on the list-item pitfall and on a figure whose file is missing,
    and passes the same formula written safely and the same figure present."""
    out = tmp_path / "html"
    shutil.copytree(tiny_book, out)
    by_page = {r.page: r for r in book_browser.check_book(out, browser=browser)}
    broken = by_page["mab/01_broken.html"].problems
    assert broken and all(p.startswith("raw TeX") for p in broken), broken
    assert any("\\frac" in p for p in broken)
    assert by_page["mab/02_fixed.html"].problems == [] and by_page["mab/02_fixed.html"].formulas >= 2
    assert by_page["mab/03_figure.html"].problems == []
    # the figure's file goes missing: the page shows a broken image, and the check says so
    images = list((out / "_images").glob("*.png"))
    assert len(images) == 1
    images[0].unlink()
    (figure,) = book_browser.check_book(out, browser=browser, pages=["mab/03_figure.html"])
    assert figure.problems == [f"image not loaded: ../_images/{images[0].name}"], figure.problems


def test_the_browser_check_rejects_mathjax_from_a_cdn(chromium, browser, tiny_book, tmp_path):
    """The book as it was before MathJax was shipped with it (Sphinx's default: MathJax from a CDN):
    offline nothing renders, and the check reports both the request and the raw TeX (nothing leaves
    the machine: name resolution is off inside the browser)."""
    out = tmp_path / "html"
    shutil.copytree(tiny_book, out)
    index = (out / "index.html").read_text()
    assert index.count('src="_static/mathjax/tex-chtml.js') == 1
    (out / "index.html").write_text(
        re.sub(
            r'src="_static/mathjax/tex-chtml\.js[^"]*"',
            'src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"',
            index,
        )
    )
    (index,) = book_browser.check_book(out, browser=browser, pages=["index.html"])
    assert index.formulas == 0
    assert any(p.startswith("request leaves the machine: https://cdn.jsdelivr.net/") for p in index.problems)
    assert any(p.startswith("raw TeX") for p in index.problems)
