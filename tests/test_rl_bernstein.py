"""Tests of chapter B7c: the noisy Bernstein bonus (optimism under the tree's noise)."""

import dataclasses

import numpy as np
import pytest

from bandit_unlearning.exact.learner import train
from bandit_unlearning.rl.bernstein import (
    _noisy_bernstein_vi,
    kl_upper,
    noisy_bernstein_constants,
    noisy_bernstein_plan,
    noisy_bernstein_values,
    peeling_level,
)
from bandit_unlearning.rl.envs import garnet, riverswim
from bandit_unlearning.rl.mdp import TabularMDP, value_iteration
from bandit_unlearning.rl.stable import population_users, run_policies, stable_ucbvi
from bandit_unlearning.rl.ucbvi import UCBVIConfig, plan_from_statistics, run_ucbvi


@pytest.mark.parametrize("pooled", [False, True])
def test_driver_planner_and_stable_learner_agree(pooled):
    mdp, T = riverswim(horizon=4), 40
    run = run_ucbvi(mdp, T, seed=3, bonus_kind="noisy_bernstein", pooled=pooled)
    cfg = run.config
    sums = np.cumsum(cfg.layout.densify(run.indices, run.values), axis=0)
    for t in range(T):
        u = sums[t - 1] if t else np.zeros(cfg.layout.d)
        assert np.array_equal(plan_from_statistics(u, cfg).policy, run.policies[t])
    learner = stable_ucbvi(mdp, T, sigma=0.0, bonus_kind="noisy_bernstein", pooled=pooled)
    stable_run = train(learner, population_users(mdp, T, seed=3), np.random.default_rng(0))
    assert np.array_equal(run_policies(stable_run), run.policies)


@pytest.mark.parametrize("sigma, pooled", [(0.0, False), (1.0, False), (1.0, True)])
def test_sandwich_at_every_step_and_episode(sigma, pooled):
    """The lemma at delta = 1e-6 (so this test fails with probability <= 1e-6 per MDP):
    V_low <= V* <= V at every (h, s) of every episode's plan."""
    rng = np.random.default_rng(11)
    for _ in range(2):
        mdp = garnet(2, 1, 2, 2, rng)  # one action: every pair is visited often
        T = 800
        v_star = value_iteration(mdp).V
        learner = stable_ucbvi(mdp, T, sigma=sigma, bonus_kind="noisy_bernstein", delta=1e-6, pooled=pooled)
        cfg = learner.update.config
        run = train(learner, population_users(mdp, T, seed=int(rng.integers(2**32))), rng)
        explored = 0
        for t in range(0, T, 8):
            u = run.noisy_prefix_sum(t) if t else np.zeros(cfg.layout.d)
            V, V_low = noisy_bernstein_values(u, cfg)
            assert np.all(V_low <= v_star + 1e-12) and np.all(v_star <= V + 1e-12)
            explored += int(np.any(V[:-1] < mdp.H - np.arange(mdp.H)[:, None]))
        assert explored > 0  # some value left its cap: the bound was exercised


def test_dropping_the_noise_correction_breaks_optimism():
    """One pair paying 1 always, two true samples, but a noisy count of 100 (noise +98) and a noisy
    reward sum of 2: without the noise terms the estimate is 0.02 and the bound falls below V* = 1."""
    mdp = TabularMDP(np.ones((1, 1, 1)), np.ones((1, 1)), np.ones(1), 1)
    cfg = UCBVIConfig.of(mdp, 64, sigma=5.0, bonus_kind="noisy_bernstein")
    u = cfg.layout.pack(np.full((1, 1, 1), 100.0), np.full((1, 1, 1), 2.0), np.full((1, 1, 1, 1), 100.0))
    assert noisy_bernstein_values(u, cfg)[0][0, 0] >= 1.0  # the correction keeps it at the cap
    assert noisy_bernstein_values(u, cfg, noise_correction=False)[0][0, 0] < 1.0
    assert noisy_bernstein_constants(cfg, False).eps == 0.0 < noisy_bernstein_constants(cfg).eps


def test_constants_and_scale():
    cfg = UCBVIConfig(3, 2, 4, 100, delta=0.1, sigma=2.0, bonus_kind="noisy_bernstein")
    k = noisy_bernstein_constants(cfg)
    assert k.scale == pytest.approx(2.0 * np.sqrt((100).bit_length()))
    assert k.eps == pytest.approx(k.z * k.scale) and k.L == pytest.approx(np.log(16 * 3 * 2 * 4 * 100 / 0.1))
    pooled = noisy_bernstein_constants(dataclasses.replace(cfg, pooled=True))
    assert pooled.scale == pytest.approx(k.scale * 2.0) and pooled.L == pytest.approx(k.L + np.log(4))
    half = dataclasses.replace(cfg, bonus_scale=0.5)
    rng = np.random.default_rng(0)
    u = np.abs(rng.normal(20, 5, cfg.layout.d))
    assert np.all(noisy_bernstein_values(u, half)[0] <= noisy_bernstein_values(u, cfg)[0] + 1e-12)


def test_ties_go_to_the_least_tried_action():
    cfg = UCBVIConfig(1, 3, 1, 10, sigma=10.0, bonus_kind="noisy_bernstein")
    N = np.array([[5.0, 1.0, 3.0]])  # all three unexplored (eps > 5): tied at the cap
    plan = noisy_bernstein_plan(N, np.zeros((1, 3)), N[..., None], cfg)
    assert plan.policy[0, 0] == 1
    assert (
        noisy_bernstein_plan(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3, 1)), cfg).policy[0, 0] == 0
    )


def test_step_bonus_refuses_the_planned_kind():
    cfg = UCBVIConfig(2, 2, 2, 10, bonus_kind="noisy_bernstein")
    with pytest.raises(ValueError, match="no step bonus"):
        cfg.step_bonus(0, np.ones(2))


def test_kl_upper_is_the_relative_entropy_inverse():
    rng = np.random.default_rng(5)
    p, c = rng.random(200), rng.exponential(0.3, 200)
    q = kl_upper(p, c)

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log(a / b), 0.0) + np.where(
                a < 1, (1 - a) * np.log((1 - a) / (1 - b)), 0.0
            )

    assert np.all(q >= p) and np.all(q <= 1)
    inside = q < 1
    assert np.all(kl(p[inside], q[inside]) >= c[inside] - 1e-12)  # at or just past the level set's edge
    below = np.maximum(p, q - 1e-6)
    assert np.all(kl(p, below) <= c + 1e-12)  # never below the exact value
    assert kl_upper(np.array([0.0]), np.array([0.0]))[0] == pytest.approx(0.0, abs=1e-7)
    assert kl_upper(np.array([1.0]), np.array([5.0]))[0] == 1.0
    with pytest.raises(ValueError, match="c must"):
        kl_upper(np.array([0.5]), np.array([-1.0]))


def test_peeling_level():
    for delta, n in ((0.1, 10), (1e-3, 10_000), (0.5, 1)):
        x = peeling_level(delta, n)
        assert np.e * np.ceil(x * np.log(n)) * np.exp(-x) <= delta
        if n > 1:
            y = x - 1e-3
            assert np.e * np.ceil(y * np.log(n)) * np.exp(-y) > delta or y < 1
    cfg = UCBVIConfig(3, 2, 4, 100, delta=0.1, bonus_kind="noisy_bernstein")
    assert noisy_bernstein_constants(cfg).L_kl == pytest.approx(
        peeling_level(2 * 0.1 / (4 * 3 * 2 * 4), 100)
    )  # no noise: all of delta
    for bad in (0.0, 1.0, -0.1, 2.0):
        with pytest.raises(ValueError, match="delta"):
            peeling_level(bad, 10)
    with pytest.raises((TypeError, ValueError), match="n_max"):
        peeling_level(0.1, 0)


def test_halving_the_bonus_breaks_optimism_on_one_pair():
    """Bernoulli(1/2) rewards, counts 1..1999: a fixed reward sequence whose running mean dips by
    about 2.5 standard deviations at n = 400 -- inside the full bound, outside half of it."""
    T = 2000
    cfg = UCBVIConfig(1, 1, 1, T, delta=0.1, bonus_kind="noisy_bernstein")
    n = np.arange(1, T, dtype=float)[None, :]
    rewards = np.full(T - 1, 0.5)
    rewards[:400] = 0.5 - 2.5 * 0.5 / np.sqrt(400)  # fractional rewards in [0, 1] are allowed
    sums = np.cumsum(rewards)[None, :]
    halved = dataclasses.replace(cfg, bonus_scale=0.5)
    full = _noisy_bernstein_vi(n, sums, n[..., None], cfg, noisy_bernstein_constants(cfg))[1][0]
    half = _noisy_bernstein_vi(n, sums, n[..., None], halved, noisy_bernstein_constants(halved))[1][0]
    assert full.min() >= 0.5 and half.min() < 0.5


def test_unlearning_with_the_bonus_is_consistent():
    """The bonus post-processes the tree: after unlearning any episode, the run's models are the
    planner's output on its (recoupled) noisy prefix sums (``verify``); the distributional
    battery is benchmarks/exactness_noisy_bernstein.py."""
    from bandit_unlearning.protocol import DeleteStep, unlearn, verify

    rng = np.random.default_rng(3)
    mdp, T = riverswim(horizon=3), 16
    learner = stable_ucbvi(mdp, T, sigma=0.5, bonus_kind="noisy_bernstein")
    users = population_users(mdp, T, seed=9)
    for t in (1, 6, 16):
        run = train(learner, users, rng)
        unlearned, _ = unlearn(run, DeleteStep(t), rng=rng)
        verify(unlearned)


def test_cap_is_one_plus_the_next_step_maximum():
    """Q*_h <= 1 + max V*_{h+1}: the planner's values obey the same cap, explored or not."""
    cfg = UCBVIConfig(3, 2, 4, 100, delta=0.1, sigma=1.0, bonus_kind="noisy_bernstein")
    rng = np.random.default_rng(3)
    for _ in range(5):
        V, V_low = noisy_bernstein_values(np.abs(rng.normal(30, 10, cfg.layout.d)), cfg)
        for h in range(cfg.H):
            assert np.all(V[h] <= min(cfg.H - h, 1.0 + V[h + 1].max()) + 1e-12)
            assert np.all(V_low[h] <= V[h] + 1e-12)


def test_without_noise_the_statistics_get_all_of_delta():
    quiet = UCBVIConfig(3, 2, 4, 100, delta=0.1, bonus_kind="noisy_bernstein")
    noisy = dataclasses.replace(quiet, sigma=1.0)
    assert noisy_bernstein_constants(quiet).L == pytest.approx(noisy_bernstein_constants(noisy).L - np.log(2))
    assert noisy_bernstein_constants(quiet).L_kl < noisy_bernstein_constants(noisy).L_kl
