"""Sphinx configuration of the rendered book (`make book`).

The book's sources are the stored notebooks themselves (``notebooks/**/*.ipynb``, read by myst-nb
without executing them: what the book shows is exactly what nbval checks).  Build it with

    sphinx-build -c docs -W --keep-going -n -b html notebooks docs/_build/html

The table of contents is not written by hand: ``toc()`` lists the notebook tree (the index first,
then the parts in reading order, then the errata page), and ``source-read`` appends it as a hidden
toctree to the index, so a new chapter is in the book as soon as its ``.ipynb`` exists.  A notebook
under ``notebooks/`` outside the known parts fails the build (``toc`` raises), and Sphinx's own
"document isn't included in any toctree" warning is an error under ``-W``.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

# Parts in reading order: (folder, caption).  A new folder under notebooks/ must be added here.
PARTS = [
    ("mab", "Paper A — unlearning offline bandits"),
    ("privacy", "Privacy tools"),
    ("rl", "Paper B — exact unlearning in RL"),
]
INTRO = ["00_tour"]  # single pages before the parts ("Start here")
PAGES = ["errata"]  # single pages after the parts

project = "bandit_unlearning"
author = "bandit_unlearning contributors"
copyright = "2026, " + author
root_doc = "index"

extensions = ["myst_nb"]
source_suffix = {".ipynb": "myst-nb"}
exclude_patterns = ["**/.ipynb_checkpoints", "**/*.py"]

# Show the stored outputs; never execute (the notebooks are executed and checked by make notebooks / nbval).
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4  # `[..](chapter.ipynb#section-slug)` links resolve to headings
myst_dmath_double_inline = True

# The book is read offline: MathJax 3 comes from a pinned package (sphinx-mathjax-offline, in the dev
# extra and constraints.txt; its files are MathJax 3.2.2's own) and is copied into _static/mathjax/,
# so no page fetches anything from the network when it is read.  tests/test_book.py loads every page
# in headless Chromium with name resolution switched off and checks that every formula rendered.
_MATHJAX = Path(
    str(
        importlib.metadata.distribution("sphinx-mathjax-offline").locate_file("sphinx-mathjax-offline/static")
    )
)
if not (_MATHJAX / "mathjax" / "tex-chtml.js").is_file():  # pragma: no cover - a broken install
    raise RuntimeError(
        f"MathJax not found under {_MATHJAX}; reinstall: pip install -c constraints.txt -e '.[dev]'"
    )
mathjax_path = "mathjax/tex-chtml.js"
html_static_path = [str(_MATHJAX), str(ROOT / "docs" / "_static")]
# Figures open full size on click (book.js); wide tables wrap instead of scrolling sideways (book.css).
html_css_files = ["book.css"]
html_js_files = ["book.js"]

html_theme = "sphinx_book_theme"
html_title = "bandit_unlearning"
html_theme_options = {
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "use_download_button": True,
}
html_show_sourcelink = False
# Every page's sidebar links to the theorem table ("Where is Theorem X?") and the errata page.
templates_path = ["_templates"]
# One search box: the header's (the theme would add a second one to the sidebar).
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "theorem-table.html", "sbt-sidebar-nav.html"]}
nitpicky = True


def toc() -> list[tuple[str, list[str]]]:
    """[(caption, [docname, ...])] from the notebook tree; raises if a notebook lies outside it."""
    known = {"index", *INTRO, *PAGES}
    sections = [("Start here", list(INTRO))] if INTRO else []
    for folder, caption in PARTS:
        docs = sorted(
            p.relative_to(NOTEBOOKS).with_suffix("").as_posix() for p in (NOTEBOOKS / folder).glob("*.ipynb")
        )
        sections.append((caption, docs))
        known.update(docs)
    sections.append(("Errata", list(PAGES)))
    stray = sorted(
        p.relative_to(NOTEBOOKS).with_suffix("").as_posix()
        for p in NOTEBOOKS.rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    )
    stray = [d for d in stray if d not in known]
    if stray:
        raise RuntimeError(
            f"notebooks outside the book's parts {[f for f, _ in PARTS]}: {stray}; "
            "add their folder to PARTS in docs/conf.py"
        )
    return sections


def _toctree_markdown() -> str:
    blocks = []
    for caption, docs in toc():
        blocks.append("```{toctree}\n:hidden:\n:caption: " + caption + "\n\n" + "\n".join(docs) + "\n```")
    return "\n\n".join(blocks)


def _append_toc(app, docname, source):
    """Append the generated table of contents to the index notebook (a hidden markdown cell)."""
    if docname != root_doc:
        return
    nb = json.loads(source[0])
    nb["cells"].append(
        {"cell_type": "markdown", "id": "book-toc", "metadata": {}, "source": _toctree_markdown()}
    )
    source[0] = json.dumps(nb)


# A page's <title> (the browser tab, bookmarks, search results) cannot show MathJax: the formulas of a
# chapter title are written there in plain text.  A title whose TeX this table does not cover fails
# the build (so a new chapter cannot bring raw TeX back into a title).
_TITLE_TEX = {
    r"\varepsilon": "ε",
    r"\epsilon": "ε",
    r"\delta": "δ",
    r"\gamma": "γ",
    r"\rho": "ρ",
    r"\sigma": "σ",
    r"\tau": "τ",
    r"\eta": "η",
    r"\mu": "μ",
    r"\nu": "ν",
    r"\pi": "π",
    r"\alpha": "α",
    r"\beta": "β",
    r"\star": "*",
    r"\in": "∈",
    r"\le": "≤",
    r"\ge": "≥",
    r"\to": "→",
    r"\sqrt": "√",
    r"\times": "×",
    r"\mathcal": "",
    r"\,": " ",
    r"\ ": " ",
    r"\log": "log",
    r"\ln": "ln",
}


def plain_title(title: str) -> str:
    """A chapter title with its math written as plain text: ``\\((\\varepsilon, \\delta)\\)`` -> ``(ε, δ)``."""

    def convert(match: re.Match) -> str:
        tex = match.group(1)
        for macro in sorted(_TITLE_TEX, key=len, reverse=True):
            tex = re.sub(re.escape(macro) + r"(?![A-Za-z])", lambda _m, m=macro: _TITLE_TEX[m], tex)
        tex = re.sub(r"[{}^]", "", tex).replace("_", "")
        if "\\" in tex:
            raise ValueError(
                f"page title {title!r}: no plain-text form for {match.group(1)!r}; "
                "add the macro to _TITLE_TEX in docs/conf.py"
            )
        return tex

    return re.sub(r"\\\((.*?)\\\)", convert, title)


def _plain_titles(app, pagename, templatename, context, doctree):
    if context.get("title"):
        context["title"] = plain_title(context["title"])
        if "pagetitle" in context:  # the theme's printed heading, computed from the raw title
            context["pagetitle"] = re.sub(r"<[^>]+>", "", context["title"])


def setup(app):
    app.connect("source-read", _append_toc)
    app.connect("html-page-context", _plain_titles, priority=900)
