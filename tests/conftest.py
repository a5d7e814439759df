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
    "test_bad_inputs.py",
    "test_book.py",
    "test_dask.py",
    "test_forensics.py",
    "test_literate_sync.py",
    "test_portability.py",
    "test_cli_edges.py",
    "test_copy.py",
    # the forensic attack on what a deletion leaves behind: noise regenerated in this process compared
    # with the tree's kept values (as test_forensics.py); the import graph read as text (ast); the task
    # runner on integers (squares, chunks, progress lines, executors)
    "test_secrets_state.py",
    "test_private_imports.py",
    "test_runner.py",
    # every benchmark script run with --help in a subprocess: usage printed, nothing written
    "test_benchmarks_cli.py",
}
# Single tests of other files that check bytes and messages only: the model file's format (tamper
# table, checksums, keys, sizes checked before allocation, sections read, temporary files), CSV labels
# and their errors, refusals of fit, progress lines.  The file's numerical tests (rounding residue after
# a rollback, exact sums, labelling) stay in both passes.
SIMD_INDEPENDENT_TESTS = {
    f"test_model_files.py::{name}"
    for name in (
        "test_tamper_table_resealed_files_are_refused",
        "test_undetectable_without_key_refused_with_it",
        "test_checksums_bind_sections_of_one_save",
        "test_authenticated_file_needs_its_key",
        "test_sizes_checked_before_any_allocation",
        "test_load_statistics_reads_only_the_statistics_section",
        "test_stale_temporary_file_of_a_killed_save_is_removed",
        "test_csv_and_frame_errors_name_what_is_wrong",
        "test_csv_labels_keep_type_and_order_with_or_without_pandas",
        "test_fit_refuses_what_it_cannot_keep",
        "test_progress_reports_every_stage",
    )
} | {
    # the fuzzing pass's contract tests: refusals decided on the arguments' types and ranges, a
    # look-alike argument compared with the valid call in the same process (the same kernels on both
    # sides), the time and memory limits.  Its numerical tests (Clopper-Pearson and Gaussian epsilon
    # checked in exact arithmetic at the returned float) stay in both passes.
    f"test_fuzz_inputs.py::{name}"
    for name in (
        "test_every_valid_call_succeeds",
        "test_the_enumeration_is_broad",
        "test_the_limits_catch_a_runaway_loop_and_a_blocked_call_but_not_waiting_for_the_cpu",
        "test_fuzzed_arguments_follow_the_contract",
        "test_arbitrary_numbers_never_crash_hang_or_change_state",
        "test_numpy_sizes_are_converted_before_any_arithmetic",
        "test_the_size_limit_is_documented_and_can_be_raised",
    )
}

# Longest first.  `make test` hands whole files to its two workers (`--dist loadfile`, in collection
# order: `--no-loadscope-reorder`); a long file handed out last leaves one core idle while it runs.
# So the files below go first, the longest first: the book (its Sphinx build and its browser test start
# at once), then the chapters and test files with the most CPU time (seconds on the shared machine,
# nbval and pytest --durations); every other file follows, larger files (more tests) first.
LONGEST_FIRST = {
    "test_book.py": 200,
    "12_linucb.ipynb": 198,
    "08_exact_unlearning_rl.ipynb": 162,
    "test_literate_sync.py": 65,
    "04_theorem_3_3.ipynb": 113,
    "test_cli_edges.py": 85,
    "06b_ucbvi_regret.ipynb": 100,
    "test_portability.py": 100,
    "07b_stable_ucbvi_regret.ipynb": 75,
    "test_copy.py": 75,
    "02_guarantee_matrix.ipynb": 59,
    "05_mixing.ipynb": 59,
    "test_dask.py": 45,
    "test_secrets_state.py": 40,
    "test_rl_lower_bound.py": 40,
}


# The slow tests (marker `slow`, registered in pyproject.toml): `make test` runs them, `make test-fast`
# deselects them (-m "not slow").  Whole files: a Dask cluster, the package copied into a bare
# environment, the command line in subprocesses, the exporter and pairing check run on copies of the
# tree (`make check` and `make test` cover them), the SIMD-lowered portability pass.  The tests that
# build the book (Sphinx) or drive a browser, i.e. use one of test_book.py's fixtures below.  And the
# single tests that took over 4 s each on the shared 2-core machine (pytest --durations): benchmarks
# and end-to-end `reproduce` runs, large grids.
SLOW_FILES = {
    "test_dask.py",
    "test_copy.py",
    "test_cli_edges.py",
    "test_literate_sync.py",
    "test_portability.py",
    "test_benchmarks_cli.py",
}
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
    # over 5 s each on the shared machine at load 6 (pytest --durations of make test-fast): long
    # statistical or exhaustive checks whose single cases would hold one worker while the other idles
    "test_rl_batch.py::test_batch_equals_single_runs",
    "test_rl_bernstein.py::test_sandwich_at_every_step_and_episode",
    "test_secrets_state.py::test_module_level_generator_gives_deleted_statistics_back",
    "test_fuzz_inputs.py::test_clopper_pearson_is_conservative_at_every_alpha",
    "test_fuzz_inputs.py::test_fuzzed_arguments_follow_the_contract",
}


def _is_slow(item) -> bool:
    return (
        item.path.name in SLOW_FILES
        or _test_name(item) in SLOW_TESTS
        or bool(SLOW_FIXTURES & set(getattr(item, "fixturenames", ())))
    )


def pytest_ignore_collect(collection_path, config):
    """Under `-m "not slow"` (make test-fast) the whole slow files are not even imported: collecting
    them costs seconds (the exporter's and nbformat's imports, a Dask cluster's modules)."""
    if config.getoption("markexpr", "") == "not slow" and collection_path.name in SLOW_FILES:
        return True
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "simd_independent: outcome independent of numpy's SIMD kernels (skipped by the portability pass)",
    )


def _test_name(item) -> str:
    return f"{item.path.name}::{getattr(item, 'originalname', None) or item.name}"


def pytest_collection_modifyitems(config, items):
    count: dict = {}
    for item in items:
        count[item.path] = count.get(item.path, 0) + 1
    # stable sort: a file's own tests (a notebook's cells) keep their order
    items.sort(key=lambda item: (-LONGEST_FIRST.get(item.path.name, 0), -count[item.path]))
    for item in items:
        if item.path.name in SIMD_INDEPENDENT or _test_name(item) in SIMD_INDEPENDENT_TESTS:
            item.add_marker(pytest.mark.simd_independent)
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
