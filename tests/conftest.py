import matplotlib
import pytest

matplotlib.use("Agg")

# Test files whose outcome cannot depend on the last bits of numpy's SIMD kernels: they check text
# (the notebook/module sync, the book's contents), argument validation and what a deletion leaves
# behind (both sides of every comparison computed in the same process), results of a Dask cluster
# against the serial run (its workers inherit this process's environment, so the same kernels), or
# the portability machinery itself.  The second, SIMD-lowered pass of `make test`
# (tools/portability.py) deselects them with `-m "not simd_independent"`: replaying them there would
# check nothing new.  Every other test, and
# every notebook, runs in both passes.
SIMD_INDEPENDENT = {
    "test_bad_inputs.py", "test_book.py", "test_dask.py", "test_forensics.py", "test_literate_sync.py",
    "test_portability.py", "test_cli_edges.py", "test_copy.py",
}


# The slow tests (marker `slow`, registered in pyproject.toml): `make test` runs them, `make test-fast`
# deselects them (-m "not slow").  Whole files: a Dask cluster, the package copied into a bare
# environment, the command line in subprocesses, the exporter and pairing check run on copies of the
# tree (`make check` and `make test` cover them), the SIMD-lowered portability pass.  The tests that
# build the book (Sphinx) or drive a browser, i.e. use one of test_book.py's fixtures below.  And the
# single tests that took over 4 s each on the shared 2-core machine (pytest --durations): benchmarks
# and end-to-end `reproduce` runs, large grids.
SLOW_FILES = {"test_dask.py", "test_copy.py", "test_cli_edges.py", "test_literate_sync.py", "test_portability.py"}
SLOW_FIXTURES = {"book", "tiny_book", "chromium"}
SLOW_TESTS = {
    "test_rl_ucbvi.py::test_rl_speed_benchmark_writes_the_issue_keys",
    "test_rl_lower_bound.py::test_reproduce_rl_tiny",
    "test_rl_lower_bound.py::test_rl_summary_explains_each_part",
    "test_forensics.py::test_default_keys_cannot_be_regenerated_from_a_guessed_seed",
    "test_guarantees.py::test_audit_quadrature_equals_the_public_adaptive_one",
    "test_exact_light_tree.py::test_tree_memory_benchmark_writes_the_issue_keys",
    "test_mab_mechanisms.py::test_condition_implies_the_paper_bound_on_a_large_grid",
    "test_experiments_paper_a.py::test_cli_writes_json_figures_and_summary",
}


def _is_slow(item) -> bool:
    name = f"{item.path.name}::{getattr(item, 'originalname', None) or item.name}"
    return (item.path.name in SLOW_FILES or name in SLOW_TESTS
            or bool(SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))))


def pytest_ignore_collect(collection_path, config):
    """Under `-m "not slow"` (make test-fast) the whole slow files are not even imported: collecting
    them costs seconds (the exporter's and nbformat's imports, a Dask cluster's modules)."""
    if config.getoption("markexpr", "") == "not slow" and collection_path.name in SLOW_FILES:
        return True
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "simd_independent: outcome independent of numpy's SIMD kernels "
                                       "(skipped by the portability pass)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SIMD_INDEPENDENT:
            item.add_marker(pytest.mark.simd_independent)
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
