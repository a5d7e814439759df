# The two commands of the README: `make reproduce` and `make test`.
# Both create the virtual environment .venv from the project's own files when it is missing or
# stale (pyproject.toml or constraints.txt newer than the last install).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Keep BLAS single-threaded: results (and nbval's stored outputs) must not depend on threading.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: help env lint lint-format test test-fast jitter reproduce lab export sync notebooks check book bench clean

help:
	@echo "make test       run everything CI runs (sync checks, unit tests, nbval on every notebook; then"
	@echo "                the same again with numpy's SIMD dispatch lowered: the portability pass)"
	@echo "make test-fast  the unit tests without the slow ones (book, browser, Dask, package copy) and nbval"
	@echo "make lint       ruff (lint; format on the files already in its layout) and mypy on the package"
	@echo "make reproduce  regenerate every figure and table into results/"
	@echo "make jitter     stress the stored outputs: notebooks replayed with numpy's exp, log, ... off by one ulp"
	@echo "make lab        open JupyterLab on notebooks/"
	@echo "make export     write the package modules from the notebooks' export cells"
	@echo "make sync       re-pair the .py and .ipynb of every notebook (jupytext --sync)"
	@echo "make notebooks  execute every chapter from its .py and store the outputs in its .ipynb"
	@echo "make bench      run the benchmarks in benchmarks/ (JSON into results/)"
	@echo "make book       build the HTML book from the stored notebooks (docs/_build/html/index.html)"

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "bandit_unlearning needs Python >= 3.11 (its pinned numpy 2.4 / scipy 1.17 stack, see constraints.txt);"; \
	  echo "$(PYTHON) is $$($(PYTHON) --version 2>&1). Run e.g. 'make test PYTHON=python3.12'."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

check: $(STAMP)
	$(BIN)/python tools/export.py --check
	$(BIN)/python tools/check_notebooks.py

# Second pass: the same suite with numpy's SIMD dispatch lowered to its baseline (tools/portability.py
# reads the features to disable from numpy itself), so that a stored output which depends on the
# last bits of this CPU's vector kernels fails here, not on a reader's machine.
# The book's browser test (tests/test_book.py) needs Chromium from the system's packages; without it
# that test is skipped (and fails under CI=true, where .ci/run installs it).
CHROMIUM_HINT := Chromium not found: the browser test of the book will be SKIPPED. Install it with: apt-get update && apt-get install -y chromium chromium-driver (or set CHROMIUM=/path/to/chromium)
# Lint and types (configuration in pyproject.toml; the same commands run as pre-commit hooks,
# .pre-commit-config.yaml).  The code base is hand-wrapped, not in ruff's layout: the format check
# covers the files listed here, a list that grows as files are reformatted.
RUFF_FORMATTED := bandit_unlearning/__init__.py bandit_unlearning/__main__.py \
  bandit_unlearning/exact/__init__.py bandit_unlearning/experiments/__init__.py \
  bandit_unlearning/mab/__init__.py bandit_unlearning/privacy/__init__.py bandit_unlearning/rl/__init__.py
lint-format: $(STAMP)
	$(BIN)/ruff format --check $(RUFF_FORMATTED)

lint: lint-format
	$(BIN)/ruff check .
	$(BIN)/mypy

# Files go to the two workers whole (--dist loadfile) and longest first, in the order tests/conftest.py
# gives them (LONGEST_FIRST; --no-loadscope-reorder keeps it), so that both workers finish together.
# `make check` is not run first: tests/test_literate_sync.py::test_real_tree_is_in_sync asserts the same
# three things (export drift, pairing, stored outputs) inside the first pass, and the exporter and the
# pairing check parse each chapter once per process (tools/export.py read_chapter).
# What the second pass re-runs, and why: only what could come out differently on a CPU without this
# one's SIMD kernels -- every notebook (its stored outputs are compared with what it prints now) and
# every numerical test of tests/.  Deselected there (marker simd_independent, the list and the reason
# for each file in tests/conftest.py): tests of text and files (the sync of notebooks and modules, the
# book, the README's habits, the model file's format), of argument validation and the fuzzing
# contract (refusals decided on types and ranges; look-alike arguments compared in one process), of
# what a deletion leaves behind (both sides computed in one process), of the Dask cluster against the
# serial run (workers inherit this environment) and of the tooling itself.
test: lint
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$CHROMIUM" ] || echo "*** $(CHROMIUM_HINT)"
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_NBVAL) tests notebooks
	$(BIN)/python tools/portability.py

# A harsher, optional stress test of the stored outputs (not part of `make test`): replay the notebooks
# with numpy's exp, log, tanh, power, ... moved by one ulp (tools/ulp_jitter; JITTER=seed).
JITTER ?= 1
jitter: $(STAMP)
	ULP_JITTER=$(JITTER) PYTHONPATH=$(CURDIR)/tools/ulp_jitter $(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_NBVAL) notebooks

# The rendered book: the stored notebooks (not re-executed) as static HTML, configuration in docs/.
# Every warning is an error (-W, nitpicky -n): a dangling link between chapters, a missing anchor or
# figure, or a chapter left out of the table of contents fails the build.  `make test` builds it too
# (tests/test_book.py, in parallel with the other tests).  A fresh build each time
# (-E -a), so no warning hides in a cached page.
book: $(STAMP)
	$(BIN)/sphinx-build -E -a -W --keep-going -n -q -c docs -b html notebooks docs/_build/html
	@echo "book: open docs/_build/html/index.html"

# The quick loop: no export/pairing check (`make check`), no slow tests (marker `slow`, which ones:
# tests/conftest.py; the book build and its browser test, the Dask cluster, the package copy, the
# command line in subprocesses, ...), no nbval (its plugin is not even loaded: importing nbformat costs
# 1.6 s in each worker).  `make test` runs all of them.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -p no:nbval -m "not slow" tests

reproduce: $(STAMP)
	$(BIN)/python -m bandit_unlearning reproduce all --out results --workers 2

# JupyterLab refuses to start as root unless told (--allow-root): containers and CI machines often are root.
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

export: $(STAMP)
	$(BIN)/python tools/export.py

sync: $(STAMP)
	$(BIN)/jupytext --sync $$(find notebooks -name '*.py' -not -path '*/.ipynb_checkpoints/*')

notebooks: $(STAMP)
	$(BIN)/python tools/run_notebooks.py $(NB)

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) results .pytest_cache docs/_build
