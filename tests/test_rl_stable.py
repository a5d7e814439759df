"""Tests of chapters B7a-B7b: TV-stable UCB-VI (Algorithm 4) as a prefix-sum learner, and its regret tools."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.exact.learner import ExactOptions, PrefixSumLearner, train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, unlearn, verify
from bandit_unlearning.exact.tree import BinaryTree, path_length, path_tv, sigma_exact, sigma_paper
from bandit_unlearning.experiments.rl_stable import safe_slope, stable_regret_curve, summarize_curves
from bandit_unlearning.rl.envs import garnet, gridworld, riverswim
from bandit_unlearning.rl.mdp import regret
from bandit_unlearning.rl.stable import (
    EpisodeOracle,
    EpisodeUser,
    PolicyUpdate,
    episode_users,
    population_users,
    rho_theorem,
    run_policies,
    run_regret,
    stable_sigma,
    stable_ucbvi,
    theorem_41_terms,
)
from bandit_unlearning.rl.ucbvi import StatsLayout, episode_statistics, run_ucbvi, ucbvi_update

RIVER = riverswim(horizon=5)


# --- calibration ----------------------------------------------------------------------------------
def test_stable_sigma_uses_B_sqrt_3H():
    B = math.sqrt(3 * 7)
    assert stable_sigma(0.5, 7, 100) == sigma_paper(0.5, B, 100)
    assert stable_sigma(0.5, 7, 100, "exact") == sigma_exact(0.5, B, 100)
    assert stable_sigma(math.inf, 7, 100) == 0.0
    assert path_tv(B, stable_sigma(0.3, 7, 100, "exact"), path_length(100)) == pytest.approx(0.3)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(rho=0.0), ValueError),
        (dict(rho=-1.0), ValueError),
        (dict(rho=float("nan")), ValueError),
        (dict(rho="1"), TypeError),
        (dict(T=0), ValueError),
        (dict(T=1), ValueError),
        (dict(H=0), ValueError),
        (dict(calibration="magic"), ValueError),
        (dict(rho=1.5, calibration="exact"), ValueError),
    ],
)
def test_stable_sigma_bad_input(kwargs, error):
    args = dict(rho=0.5, H=3, T=100, calibration="paper") | kwargs
    with pytest.raises(error):
        stable_sigma(args["rho"], args["H"], args["T"], args["calibration"])


# --- the learner ----------------------------------------------------------------------------------
def test_learner_fields_and_tree_factory_passthrough():
    built = []

    class RecordingTree(BinaryTree):
        def __init__(self, d, sigma, capacity=1):
            built.append((d, sigma, capacity))
            super().__init__(d, sigma, capacity)

    learner = stable_ucbvi(RIVER, 20, 0.5, tree_factory=RecordingTree)
    assert isinstance(learner, PrefixSumLearner)
    assert learner.d == StatsLayout.of(RIVER).d == 2 * 6 * 2 * 5 + 36 * 2 * 5
    assert learner.B == pytest.approx(math.sqrt(15))
    assert learner.sigma == stable_sigma(0.5, 5, 20) == learner.update.config.sigma
    assert learner.oracle.mdp is RIVER and not hasattr(learner.oracle, "seed")  # the oracle holds no user key
    assert np.array_equal(learner.initial_model, np.zeros((5, 6), dtype=np.int64))
    run = train(learner, episode_users(20), np.random.default_rng(0))
    assert built == [(learner.d, learner.sigma, 20)] and isinstance(run.tree, RecordingTree)
    verify(run)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(), ValueError),  # neither rho nor sigma
        (dict(rho=1.0, sigma=1.0), ValueError),  # both
        (dict(rho=0.0), ValueError),
        (dict(rho=-2.0), ValueError),
        (dict(sigma=-1.0), ValueError),
        (dict(sigma=float("inf")), ValueError),
        (dict(rho=1.0, T=0), ValueError),
        (dict(rho=1.0, mdp="riverswim"), TypeError),
        (dict(rho=1.0, tree_factory=3), TypeError),
        (dict(rho=1.0, delta=1.5), ValueError),
        (dict(rho=1.0, bonus_scale=-1.0), ValueError),
        (dict(rho=1.0, reward_noise="gaussian"), ValueError),
    ],
)
def test_stable_ucbvi_bad_input(kwargs, error):
    args = dict(mdp=RIVER, T=50) | kwargs
    with pytest.raises(error):
        stable_ucbvi(**args)


@pytest.mark.parametrize(
    "mdp, T, scale",
    [
        (riverswim(horizon=6), 300, 0.05),
        (riverswim(horizon=6), 200, 1.0),
        (garnet(4, 3, 2, 4, np.random.default_rng(1)), 200, 0.05),
    ],
)
def test_zero_noise_is_exactly_run_ucbvi(mdp, T, scale):
    learner = stable_ucbvi(mdp, T, math.inf, bonus_scale=scale)
    run = train(learner, population_users(mdp, T, seed=11), np.random.default_rng(0))
    assert np.array_equal(run_policies(run), run_ucbvi(mdp, T, seed=11, bonus_scale=scale).policies)


def test_policies_are_readonly_and_update_is_ucbvi_update():
    learner = stable_ucbvi(RIVER, 30, 2.0)
    run = train(learner, episode_users(30, rng=np.random.default_rng(1)), np.random.default_rng(2))
    for t, w in enumerate(run.models[1:], start=1):
        assert not w.flags.writeable
        assert np.array_equal(w, ucbvi_update(run.noisy_prefix_sum(t), learner.update.config))
    with pytest.raises(TypeError):
        PolicyUpdate("config")


def test_unlearning_the_stable_learner_replays_exactly():
    """Deletions at several positions (small sigma: retraining happens) leave runs that verify."""
    learner = stable_ucbvi(RIVER, 16, sigma=0.7, bonus_scale=0.05)
    run = train(learner, population_users(RIVER, 16, seed=4), np.random.default_rng(5))
    rng = np.random.default_rng(6)
    retrained = 0
    for t in (1, 6, 16, 9):
        new, rec = unlearn(run, DeleteStep(t), options=ExactOptions(diagnostics=True), rng=rng)
        verify(new)
        assert new.users[t - 1] is ZERO_USER and rec.shift_norm <= learner.B + 1e-12
        assert np.array_equal(new.tree.leaf(t), np.zeros(learner.d))
        retrained += rec.retrained
    assert retrained > 0
    verify(run)


# --- the oracle -----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**40), st.integers(0, 2**31), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4))
def test_oracle_equals_episode_statistics(i, seed, S, A, H):
    """The oracle on user i of a population == chapter B5/B6's statistics of user i of that population."""
    mdp = garnet(S, A, min(S, 2), H, np.random.default_rng(seed))
    policy = np.random.default_rng(seed + 1).integers(0, A, size=(H, S))
    oracle = EpisodeOracle(mdp)
    user = population_users(mdp, 1, seed=seed % 1000, start=i)[0]
    idx, val = oracle.sparse(user, 1, policy)
    ref_idx, ref_val = episode_statistics(mdp, policy, i, seed=seed % 1000)
    assert np.array_equal(idx, ref_idx) and np.array_equal(val, ref_val)
    x = oracle(user, 1, policy)
    assert np.array_equal(x, StatsLayout.of(mdp).densify(idx, val))
    assert np.linalg.norm(x) <= math.sqrt(3 * H) + 1e-12
    assert np.array_equal(oracle(user, 7, policy.astype(np.int8)), x)  # t unused; any integer dtype


def test_oracle_zero_user_and_bad_input():
    oracle = EpisodeOracle(RIVER)
    pi = np.zeros((5, 6), dtype=np.int64)
    user = population_users(RIVER, 1, seed=2, start=3)[0]
    assert np.array_equal(oracle(ZERO_USER, 1, pi), np.zeros(oracle.d))
    assert oracle.sparse(ZERO_USER, 1, pi)[0].size == 0
    before = oracle(user, 1, pi)
    for bad_policy in (
        np.zeros((6, 5), dtype=int),
        np.zeros((5, 6)) + 0.5,
        np.full((5, 6), 2),
        np.full((5, 6), -1),
        np.zeros((2, 5, 6), dtype=int),
    ):
        with pytest.raises(ValueError, match="polic"):
            oracle(user, 1, bad_policy)
    for bad_key in (-1, 2**64):
        with pytest.raises(ValueError, match="key"):
            EpisodeUser(bad_key)
    for bad_key in (1.5, True, "7"):  # not an integer: a TypeError
        with pytest.raises(TypeError, match="key"):
            EpisodeUser(bad_key)
    for not_a_user in (3, 1.5, True, "alice"):  # positions are not users
        with pytest.raises(TypeError, match="EpisodeUser"):
            oracle(not_a_user, 1, pi)
    with pytest.raises(TypeError, match="TabularMDP"):
        EpisodeOracle("riverswim")
    with pytest.raises(ValueError):
        EpisodeOracle(RIVER, reward_noise="gaussian")
    assert np.array_equal(oracle(user, 1, pi), before)  # refused calls changed nothing


def test_run_policies_and_regret():
    learner = stable_ucbvi(RIVER, 25, 1.0)
    run = train(learner, episode_users(25), np.random.default_rng(1))
    pols = run_policies(run)
    assert pols.shape == (25, 5, 6)
    assert np.array_equal(run_regret(run), regret(RIVER, pols))
    with pytest.raises(TypeError):
        run_policies("run")
    with pytest.raises(ValueError, match="polic"):
        regret(gridworld(horizon=5), pols)  # policies of the wrong shape for that MDP


def test_episode_users():
    fresh, again = episode_users(50), episode_users(50)  # OS entropy: independent keys
    assert len({u.key for u in fresh + again}) == 100 and episode_users(0) == ()
    assert all(isinstance(u, EpisodeUser) and "key" not in repr(u).replace("key hidden", "") for u in fresh)
    seeded = episode_users(5, rng=np.random.default_rng(3))  # the reproducible opt-in
    assert seeded == episode_users(5, rng=np.random.default_rng(3))
    raw = set(np.random.default_rng(3).bit_generator.random_raw(1000).tolist())
    assert not any(u.key in raw for u in seeded)  # keys are not raw generator words
    assert population_users(RIVER, 2, seed=7, start=5) == population_users(RIVER, 7, seed=7)[5:]
    with pytest.raises(ValueError):
        episode_users(-1)
    with pytest.raises(TypeError):
        episode_users(3, rng="7")
    assert episode_users(3, rng=7) == episode_users(
        3, rng=np.random.default_rng(7)
    )  # an int seed: explicit opt-in


# --- Theorem 4.1's terms ----------------------------------------------------------------------------
def test_theorem_terms_and_rho_choice():
    for T in (1, 10, 10**6):
        rho = rho_theorem(6, 2, 10, T)
        terms = theorem_41_terms(6, 2, 10, T, rho)
        assert terms["H^2.5 S^2 A / rho"] == pytest.approx(terms["H^2 sqrt(SAT)"])
        assert terms["H^3 S^2 A"] == 1000 * 36 * 2
    grid_terms = theorem_41_terms(2, 2, 2, [1, 4], [1.0, 2.0])
    assert np.allclose(grid_terms["H^2 sqrt(SAT)"], [8, 16]) and np.allclose(
        grid_terms["H^2.5 S^2 A / rho"], [2**5.5, 2**4.5]
    )
    with pytest.raises(ValueError):
        theorem_41_terms(2, 2, 2, 0, 1.0)
    with pytest.raises(ValueError):
        theorem_41_terms(2, 2, 2, 10, 0.0)
    with pytest.raises(ValueError):
        rho_theorem(0, 2, 2, 10)


# --- experiments.rl_stable ------------------------------------------------------------------------------
def test_stable_regret_curve_and_summary():
    rng = np.random.default_rng(0)
    a = stable_regret_curve(RIVER, 60, math.inf, 5, rng, bonus_scale=0.05, n_points=10)
    b = stable_regret_curve(RIVER, 60, 3.0, 5, rng, bonus_scale=0.05, n_points=10)
    c = stable_regret_curve(RIVER, 60, 3.0, 6, rng, bonus_scale=0.05, n_points=10)
    for curve in (a, b, c):
        assert curve["t"][-1] == 60 and curve["final"] == pytest.approx(curve["regret"][-1])
        assert np.all(np.diff(curve["regret"]) >= -1e-9)
    assert a["sigma"] == 0 and b["sigma"] == stable_sigma(3.0, 5, 60)
    summary = summarize_curves([a, b, c])
    assert summary[(RIVER.name, 60, 3.0, 0.05)]["n"] == 2
    assert np.allclose(summary[(RIVER.name, 60, 3.0, 0.05)]["mean"], (b["regret"] + c["regret"]) / 2)
    assert math.isnan(safe_slope([1, 2, 3], [0, 0, 0]))
    with pytest.raises(TypeError):
        stable_regret_curve("river", 60, 1.0, 5, rng)
    with pytest.raises(ValueError):
        stable_regret_curve(RIVER, 60, 0.0, 5, rng)


def test_training_cost_and_memory_budget():
    from bandit_unlearning.rl.stable import DEFAULT_MAX_MEMORY, training_cost

    mdp = riverswim(5, 4)
    cost = training_cost(mdp, 16, timed=False)
    assert cost.d == 2 * mdp.S * mdp.A * mdp.H + mdp.S**2 * mdp.A * mdp.H and cost.vectors == 2 * 4 + 4
    assert cost.peak_bytes == 8 * cost.d * cost.vectors and cost.seconds_per_episode is None
    assert training_cost(mdp, 16).seconds_per_episode > 0
    with pytest.raises(ValueError, match="max_memory=None"):
        stable_ucbvi(mdp, 16, 10.0, max_memory=cost.peak_bytes - 1)
    stable_ucbvi(mdp, 16, 10.0, max_memory=cost.peak_bytes)
    stable_ucbvi(mdp, 16, 10.0, max_memory=None)
    with pytest.raises(ValueError, match="max_memory"):
        stable_ucbvi(mdp, 16, 10.0, max_memory=0)
    assert DEFAULT_MAX_MEMORY == 2 * 1024**3
