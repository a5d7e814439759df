"""Tests of chapter B9: the lower-bound tools (Theorem 4.4) and the command-line reproduction ``reproduce_rl``."""

import json
import math
import shutil

import numpy as np
import pytest

from bandit_unlearning.exact.tree import path_tv
from bandit_unlearning.experiments.rl_lower_bound import (
    first_correct_episode,
    gaussian_sum_tv,
    karwa_vadhan_bound,
    lower_bound_experiment,
    lower_bound_shape,
    sum_mechanism_rho,
    sum_mechanism_sigma,
    summarize_by_rho,
)
from bandit_unlearning.experiments.rl_paper import PROTOCOLS, reproduce_rl

TINY = {
    "regret": {
        "environments": [{"name": "riverswim", "H": 4, "T": 40}],
        "rhos": [math.inf, 10.0],
        "bonus_scales": [0.05],
        "populations": 2,
        "n_points": 5,
    },
    "cost": {
        "environment": {"name": "riverswim", "H": 4},
        "Ts": [8],
        "rhos": [1.0],
        "n_runs": 1,
        "requests_per_run": 3,
    },
    "lower_bound": {
        "n_bandits": 2,
        "n_actions": 2,
        "H": 2,
        "gap": 0.25,
        "T": 60,
        "rhos": [math.inf, 5.0],
        "bonus_scales": [0.2],
        "populations": 1,
    },
}


def test_sum_mechanism_calibration_and_one_sample_tv():
    for rho in (0.01, 0.3, 0.9):
        sigma = sum_mechanism_sigma(rho)
        assert sum_mechanism_rho(sigma) == pytest.approx(rho) == pytest.approx(path_tv(1.0, sigma, 1))
        # one sample: M(Bern(p)) vs M(Bern(q)) is a mixture shift, TV = |p - q| * rho exactly
        assert gaussian_sum_tv(1, 0.2, 0.7, sigma) == pytest.approx(0.5 * rho, abs=1e-6)
    assert gaussian_sum_tv(10, 0.3, 0.3, 1.0) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("n, rho, p, q", [(3, 0.2, 0.5, 0.8), (30, 0.05, 0.4, 0.5), (50, 0.5, 0.1, 0.2)])
def test_karwa_vadhan_lemma(n, rho, p, q):
    assert gaussian_sum_tv(n, p, q, sum_mechanism_sigma(rho)) <= karwa_vadhan_bound(n, rho, abs(p - q)) + 1e-9


def test_bad_input():
    with pytest.raises(ValueError):
        sum_mechanism_sigma(1.0)
    with pytest.raises(ValueError):
        sum_mechanism_sigma(0.0)
    with pytest.raises(ValueError):
        sum_mechanism_rho(-1.0)
    with pytest.raises(ValueError):
        gaussian_sum_tv(0, 0.5, 0.5, 1.0)
    with pytest.raises(ValueError):
        gaussian_sum_tv(3, 1.5, 0.5, 1.0)
    with pytest.raises(ValueError):
        lower_bound_shape(6, 2, 2, 100, 0.0)
    with pytest.raises(ValueError):
        lower_bound_shape(6, 2, 2, 0, 1.0)
    with pytest.raises(ValueError):
        lower_bound_experiment(0, 2, 2, 0.25, 10, [1.0], [0], np.random.default_rng(0))
    with pytest.raises(ValueError):
        lower_bound_experiment(2, 2, 2, 0.25, 10, [-1.0], [0], np.random.default_rng(0))


def test_shape_and_first_correct_episode():
    assert lower_bound_shape(6, 2, 2, 100, 2.0) == pytest.approx(2 * math.sqrt(1200) + 12)
    pis = np.zeros((5, 2, 6), dtype=int)
    pis[3:, 0, :2] = 1
    assert first_correct_episode(pis, [1, 1]) == 4
    assert first_correct_episode(pis, [0, 0]) == 1
    assert first_correct_episode(np.zeros((5, 2, 6), dtype=int), [1, 0]) == 6


def test_lower_bound_experiment_small():
    res = lower_bound_experiment(
        2, 2, 2, 0.25, 80, [math.inf, 3.0], [1, 2], np.random.default_rng(0), bonus_scale=0.2
    )
    assert len(res) == 4 and all(0 <= r["final"] <= 80 * 0.25 + 1e-9 for r in res)
    s = summarize_by_rho(res)
    assert set(s) == {math.inf, 3.0} and all(1 <= v[2] <= 81 for v in s.values())


def _no_nan(value):
    raise ValueError(f"non-standard JSON constant {value}")


@pytest.fixture(scope="module")
def tiny_rl(tmp_path_factory):
    """One tiny reproduction (folder, returned dict), shared by the tests that read it."""
    out = tmp_path_factory.mktemp("tiny_rl")
    return out, reproduce_rl(out, "quick", seed=3, protocol=TINY)


def test_reproduce_rl_tiny(tiny_rl, tmp_path):
    out, result = tiny_rl
    assert result["experiment"] == "rl" and result["protocol"]["scale"] == "quick"
    for stem in ("rl_regret", "rl_unlearning_cost", "rl_lower_bound"):
        for ext in ("json", "png", "pdf"):
            assert (out / f"{stem}.{ext}").stat().st_size > 0
        doc = json.loads((out / f"{stem}.json").read_text(), parse_constant=_no_nan)
        assert doc["experiment"] == stem and doc["panels"]
    for panel in result["panels"]:
        assert set(panel) >= {"id", "vary", "x", "methods", "stderr"}
        assert all(len(v) == len(panel["x"]) for v in panel["methods"].values())
        assert all(
            len(v) == len(panel["x"]) and name in panel["methods"] for name, v in panel["stderr"].items()
        )
    json.dumps(result, allow_nan=False)
    again = reproduce_rl(tmp_path / "b", "quick", seed=3, protocol=TINY, workers=2)
    assert again["panels"] == result["panels"]  # independent of the number of workers


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(scale="huge"), ValueError),
        (dict(seed=-1), ValueError),
        (dict(workers=0), ValueError),
        (dict(protocol={"regret": {}}), ValueError),
        (dict(tree_factory=3), TypeError),
        (dict(out=3), TypeError),
    ],
)
def test_reproduce_rl_bad_input(tmp_path, kwargs, error):
    args = dict(out=tmp_path, scale="quick", seed=0) | kwargs
    if "protocol" not in kwargs and "scale" not in kwargs:
        args["protocol"] = TINY
    with pytest.raises(error):
        reproduce_rl(**args)


def test_protocols_have_both_scales():
    assert set(PROTOCOLS) == {"quick", "paper"}
    for p in PROTOCOLS.values():
        assert set(p) == {"regret", "cost", "lower_bound"}


def test_delta_named_in_the_figures_is_the_one_the_runs_use():
    import inspect

    from bandit_unlearning.experiments.rl_batch import stable_regret_curves
    from bandit_unlearning.experiments.rl_paper import DELTA
    from bandit_unlearning.rl.stable import stable_ucbvi

    assert inspect.signature(stable_regret_curves).parameters["delta"].default == DELTA  # regret, lower bound
    assert inspect.signature(stable_ucbvi).parameters["delta"].default == DELTA  # cost runs


def test_rl_summary_explains_each_part(tiny_rl, tmp_path):
    from bandit_unlearning.cli import write_summary

    out = shutil.copytree(tiny_rl[0], tmp_path / "results")  # the shared run's files, summarised here
    text = write_summary(out).read_text()
    for title in ("regret of TV-stable UCB-VI", "cost of exact unlearning", "the lower bound illustrated"):
        assert title in text
    assert text.count("What it shows:") == 3 and text.count("Units:") == 3 and text.count("Protocol:") == 3
    sections = {part.split("`")[1]: part for part in text.split("\n## ")[1:] if "`" in part}
    assert "±" not in sections["rl_lower_bound.png"]  # one run per point: no standard error shown
    assert "±" in sections["rl_regret.png"]  # two runs per curve: mean ± standard error


def test_sum_mechanism_sigma_keeps_a_tiny_rho_and_refuses_an_overflow():
    # (1 + rho) / 2 rounds to 1/2 for rho < 1.1e-16: Phi^{-1} of it is 0 and sigma was inf
    for rho in (1e-17, 1e-100):
        sigma = sum_mechanism_sigma(rho)
        assert math.isfinite(sigma) and sum_mechanism_rho(sigma) == pytest.approx(rho, rel=1e-12)
    with pytest.raises(ValueError, match="rho must be large enough for a finite sigma"):
        sum_mechanism_sigma(5e-324)
