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


def pytest_configure(config):
    config.addinivalue_line("markers", "simd_independent: outcome independent of numpy's SIMD kernels "
                                       "(skipped by the portability pass)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SIMD_INDEPENDENT:
            item.add_marker(pytest.mark.simd_independent)
