"""Paper A's experiment engine (Paper A §5) and the reproduce CLI."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from bandit_unlearning.experiments.paper_a import EXPERIMENTS, ProtocolA, panels, run_experiment
from bandit_unlearning.experiments.protocol import (
    consecutive_deletions,
    run_sums,
    simulate_trajectories,
    trajectories_from_samples,
)
from bandit_unlearning.mab.data import PAPER_MEANS


def test_requests_are_aligned_in_range_and_sum_correctly():
    rng = np.random.default_rng(0)
    traj = simulate_trajectories(PAPER_MEANS, "Mf", [1000, 3000], 8, rng)
    start, valid = consecutive_deletions(traj, 1, 0, 80, 50, rng, align=20)
    assert valid.all() and np.all(start % 20 == 0) and np.all(start + 80 <= 600)
    assert len(np.unique(start)) > 10  # starts do vary
    arms = np.broadcast_to(np.arange(300) % 5, (3, 300))
    rewards = (rng.random((3, 300)) < 0.5).astype(float)
    t = trajectories_from_samples(PAPER_MEANS, "Mf", arms, rewards, [300])
    s, _ = consecutive_deletions(t, 0, 2, 7, 4, rng)
    for r in range(3):
        idx = np.flatnonzero(arms[r] == 2)
        for j in range(4):
            assert run_sums(t, 2, s, 7)[r, j] == rewards[r, idx[s[r, j] : s[r, j] + 7]].sum()


def test_too_few_samples_are_flagged_not_crashed():
    rng = np.random.default_rng(1)
    traj = simulate_trajectories(PAPER_MEANS, "Md", [100], 20, rng)
    _, valid = consecutive_deletions(traj, 0, 0, 25, 3, rng)
    n0 = traj.arm_counts[:, 0, 0]
    assert np.array_equal(valid[:, 0], n0 >= 25)


def test_protocol_and_simulation_bad_input():
    with pytest.raises(ValueError, match="n_runs"):
        ProtocolA(n_runs=0)
    with pytest.raises(ValueError, match="mixing_eta"):
        ProtocolA(mixing_eta=1.5)
    with pytest.raises(ValueError, match="model"):
        simulate_trajectories(PAPER_MEANS, "Mx", [10], 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="prefixes"):
        simulate_trajectories(PAPER_MEANS, "Mf", [0], 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown experiment"):
        panels("figure9", ProtocolA())


def test_panel_layout_matches_the_paper():
    p = ProtocolA()
    fig1 = panels("figure1", p)
    assert len(fig1) == 12
    assert {(x["vary"], x["model"], x["case"]) for x in fig1} == {
        (v, m, c) for v in ("N", "k", "gamma") for m in ("Mf", "Md") for c in ("hard", "easy")
    }
    assert all(x["methods"] == ["Oracle", "Gaussian", "Rollback", "Mixing", "Alg2"] for x in fig1)
    fig2 = panels("figure2", p)
    assert all(x["case"] == "hard" and x["methods"][-1] == "Oracle" for x in fig2)
    fig3 = panels("figure3", p)
    assert [x["sources"] for x in fig3] == [[0, 1], [2, 3]] and len(fig3[0]["x"]) == 8
    assert panels("table2", p)[0]["methods"] == ["Alg6", "Alg2"]


def test_results_do_not_depend_on_the_executor():
    quick = ProtocolA.quick(n_trajectories=10)
    serial = run_experiment("table2", quick, seed=3, progress=False)
    with ThreadPoolExecutor(2) as pool:
        threaded = run_experiment("table2", quick, seed=3, executor=pool, progress=False)
    assert serial == threaded
    other = run_experiment("table2", quick, seed=4, progress=False)
    assert other["seed"] == 4


def test_cli_writes_json_figures_and_summary(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "bandit_unlearning",
        "reproduce",
        "table2",
        "lemma31",
        "--scale",
        "quick",
        "--out",
        str(tmp_path),
        "--seed",
        "2",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("table2", "lemma31"):
        for ext in ("json", "png", "pdf"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 0
    data = json.loads((tmp_path / "table2.json").read_text())
    assert data["experiment"] == "table2" and data["scale"] == "quick" and data["seed"] == 2
    assert set(data["panels"][0]["methods"]) == {"Alg6", "Alg2"}
    assert "table2" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["reproduce", "figure9"],
        ["reproduce", "table2", "--workers", "0"],
        ["reproduce", "table2", "--scale", "huge"],
    ],
)
def test_cli_bad_arguments(args, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bandit_unlearning", *args, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "error" in done.stderr
    assert not list(tmp_path.glob("*.json"))


def test_every_experiment_is_registered_in_the_cli():
    from bandit_unlearning.cli import EXPERIMENTS as CLI

    assert set(EXPERIMENTS) <= set(CLI)


def test_speed_benchmark_smoke():
    """The benchmark runs and its engine/loop comparison checks agreement (no timing assertion)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "reproduce_speed.py"
    spec = importlib.util.spec_from_file_location("reproduce_speed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    res = module.engine_vs_loop(4, repeats=1)
    assert res["configuration"]["replicates"] == 20 and res["engine_s"] > 0 and res["loop_s"] > 0


# --- the paper's numbers beside ours ------------------------------------------------------------
def test_paper_statements_verdicts_at_quick_scale():
    from bandit_unlearning.experiments.paper_a import ProtocolA, run_experiment
    from bandit_unlearning.experiments.paper_numbers import (
        COMPETITIVE_FACTOR,
        PAPER_A_STATEMENTS,
        PRINTED_HALF_UNIT,
        PaperStatement,
        compare_with_paper,
        paper_comparison_markdown,
        statement_verdict,
    )

    by_id = {s.id: s for s in PAPER_A_STATEMENTS}
    alg6, fig3 = by_id["table2-alg6-900"], by_id["figure3-hard-2000"]
    # value: the tolerance is two standard errors plus half a printed unit, both sides, and no more
    tol = 2 * 0.0001 + PRINTED_HALF_UNIT
    for ours, verdict in (
        (0.0008, "within tolerance"),
        (0.0008 + tol * 0.99, "within tolerance"),
        (0.0008 - tol * 0.99, "within tolerance"),
        (0.0008 + tol * 1.01, "differs"),
        (0.0008 - tol * 1.01, "differs"),
    ):
        row = statement_verdict(alg6, {"Alg6": ours}, {"Alg6": 0.0001})
        assert row["verdict"] == verdict and (row["why"] == "") == (verdict != "differs")
    # competitive: at most COMPETITIVE_FACTOR times the best compared method
    best = 0.0059
    for alg7, verdict in (
        (best, "competitive"),
        (best * COMPETITIVE_FACTOR * 0.99, "competitive"),
        (best * COMPETITIVE_FACTOR * 1.01, "differs"),
    ):
        assert (
            statement_verdict(fig3, {"Alg7": alg7, "Rollback": best, "Gaussian": 0.02}, {})["verdict"]
            == verdict
        )
    with pytest.raises(ValueError, match="values has no method 'Rollback'"):
        statement_verdict(fig3, {"Alg7": 0.01}, {})
    with pytest.raises(ValueError, match="paper_value is given exactly"):
        PaperStatement("x", "Table 2", "t", "table2", "Md-hard-N", 900, ("Alg6",), "value", None, "")
    # at quick scale, from real runs: every statement gets a verdict; absent experiments are "not run"
    assert [r["verdict"] for r in compare_with_paper([])] == ["not run"] * len(PAPER_A_STATEMENTS)
    assert paper_comparison_markdown([]) == ""
    res = [
        run_experiment(n, ProtocolA.quick(), seed=1, progress=False, scale="quick")
        for n in ("table2", "figure3")
    ]
    rows = {r["id"]: r for r in compare_with_paper(res)}
    assert (
        rows["table2-alg2-1200"]["verdict"] == "differs" and rows["table2-alg6-900"]["verdict"] == "differs"
    )
    assert rows["figure3-hard-2000"]["verdict"] == "differs"
    text = paper_comparison_markdown(res)
    assert "not necessarily every" in text and text.count("| differs |") == 3


def _prefix_tables_onehot(arms, rewards, prefixes, m):
    """The one-hot construction of the prefix tables (the reference of the counting sort)."""
    n_rep = arms.shape[0]
    onehot = arms[:, :, None] == np.arange(m)
    counts = np.concatenate([np.zeros((n_rep, 1, m), np.int64), np.cumsum(onehot, axis=1)], axis=1)
    order = np.argsort(~onehot, axis=1, kind="stable")
    per_arm = np.take_along_axis(rewards[:, :, None] * onehot, order, axis=1)
    occurrence = np.concatenate([np.zeros((n_rep, 1, m)), np.cumsum(per_arm, axis=1)], axis=1)
    return counts[:, prefixes, :], np.ascontiguousarray(occurrence.transpose(0, 2, 1))


@pytest.mark.parametrize("n_rep, n_max, m", [(5, 600, 5), (3, 300, 130), (2, 40, 1), (0, 9, 3), (3, 2, 40)])
def test_prefix_tables_equal_the_one_hot_construction_bit_for_bit(n_rep, n_max, m):
    rng = np.random.default_rng(n_max + m)
    arms = rng.integers(0, m, size=(n_rep, n_max))
    rewards = rng.random((n_rep, n_max))
    prefixes = np.array([n_max, 1, max(1, n_max // 2), n_max])
    t = trajectories_from_samples(np.linspace(0.9, 0.1, m) if m > 1 else [0.5], "Md", arms, rewards, prefixes)
    ref_counts, ref_occ = _prefix_tables_onehot(arms, rewards, prefixes, m)
    assert t.arm_counts.dtype == ref_counts.dtype and np.array_equal(t.arm_counts, ref_counts)
    assert t.occurrence_sums.shape == ref_occ.shape and t.occurrence_sums.tobytes() == ref_occ.tobytes()


def test_simulated_trajectories_equal_the_one_hot_construction():
    traj = simulate_trajectories(PAPER_MEANS, "Md", [300, 100], 4, np.random.default_rng(5))
    rng = np.random.default_rng(5)  # the same draws, in the same order
    from bandit_unlearning.mab.data import concentrability_behavior

    arms = rng.choice(5, size=(4, 300), p=concentrability_behavior(5, 5.0, 0))
    rewards = (rng.random((4, 300)) < np.asarray(PAPER_MEANS)[arms]).astype(float)
    ref_counts, ref_occ = _prefix_tables_onehot(arms, rewards, np.array([300, 100]), 5)
    assert np.array_equal(traj.arm_counts, ref_counts) and traj.occurrence_sums.tobytes() == ref_occ.tobytes()


def test_fixed_design_trajectories_equal_the_one_hot_construction():
    """M_f: the tables counted and sorted from one row equal the one-hot construction of every row."""
    traj = simulate_trajectories(PAPER_MEANS, "Mf", [300, 101, 7], 4, np.random.default_rng(6))
    rng = np.random.default_rng(6)  # the same draws, in the same order
    arms = np.broadcast_to(np.arange(300) % 5, (4, 300))
    rewards = (rng.random((4, 300)) < np.asarray(PAPER_MEANS)[arms]).astype(float)
    ref_counts, ref_occ = _prefix_tables_onehot(arms, rewards, np.array([300, 101, 7]), 5)
    assert np.array_equal(traj.arm_counts, ref_counts) and traj.occurrence_sums.tobytes() == ref_occ.tobytes()


@pytest.mark.parametrize(
    "behavior",
    [[0.2] * 5, [0.77, 0.0575, 0.0575, 0.0575, 0.0575], [0.5, 0.0, 0.5, 0.0], [1.0], list(np.full(20, 0.05))],
)
def test_inverse_cdf_draws_equal_numpy_choice(behavior):
    """The arms of M_d: ``rng.choice``'s draws bit for bit (the same uniforms, the same rule), for few
    arms (comparisons), zero-probability arms, one arm and many arms (binary search)."""
    from bandit_unlearning.experiments.protocol import _inverse_cdf_draws

    p = np.asarray(behavior, dtype=float)
    for seed in range(4):
        want = np.random.default_rng(seed).choice(p.size, size=(7, 501), p=p)
        got = _inverse_cdf_draws(p, (7, 501), np.random.default_rng(seed))
        assert np.array_equal(got, want) and got.shape == want.shape
