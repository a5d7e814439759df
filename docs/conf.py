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

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

# Parts in reading order: (folder, caption).  A new folder under notebooks/ must be added here.
PARTS = [
    ("mab", "Paper A — unlearning offline bandits"),
    ("privacy", "Privacy tools"),
    ("rl", "Paper B — exact unlearning in RL"),
]
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
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "search-button-field.html",
                        "theorem-table.html", "sbt-sidebar-nav.html"]}
nitpicky = True


def toc() -> list[tuple[str, list[str]]]:
    """[(caption, [docname, ...])] from the notebook tree; raises if a notebook lies outside it."""
    known = {"index", *PAGES}
    sections = []
    for folder, caption in PARTS:
        docs = sorted(p.relative_to(NOTEBOOKS).with_suffix("").as_posix()
                      for p in (NOTEBOOKS / folder).glob("*.ipynb"))
        sections.append((caption, docs))
        known.update(docs)
    sections.append(("Errata", list(PAGES)))
    stray = sorted(p.relative_to(NOTEBOOKS).with_suffix("").as_posix() for p in NOTEBOOKS.rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
    stray = [d for d in stray if d not in known]
    if stray:
        raise RuntimeError(f"notebooks outside the book's parts {[f for f, _ in PARTS]}: {stray}; "
                           "add their folder to PARTS in docs/conf.py")
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
    nb["cells"].append({"cell_type": "markdown", "id": "book-toc", "metadata": {}, "source": _toctree_markdown()})
    source[0] = json.dumps(nb)


def setup(app):
    app.connect("source-read", _append_toc)
