"""Tests of chapter B7c: the noisy Bernstein bonus (optimism under the tree's noise)."""

import dataclasses

import numpy as np
import pytest

from bandit_unlearning.exact.learner import train
from bandit_unlearning.rl.bernstein import (
    noisy_bernstein_constants, noisy_bernstein_plan, noisy_bernstein_values,
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
        mdp = garnet(2, 1, 2, 2, rng)                        # one action: every pair is visited often
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
        assert explored > 0                                   # some value left its cap: the bound was exercised


def test_dropping_the_noise_correction_breaks_optimism():
    """One pair paying 1 always, two true samples, but a noisy count of 100 (noise +98) and a noisy
    reward sum of 2: without the noise terms the estimate is 0.02 and the bound falls below V* = 1."""
    mdp = TabularMDP(np.ones((1, 1, 1)), np.ones((1, 1)), np.ones(1), 1)
    cfg = UCBVIConfig.of(mdp, 64, sigma=5.0, bonus_kind="noisy_bernstein")
    u = cfg.layout.pack(np.full((1, 1, 1), 100.0), np.full((1, 1, 1), 2.0), np.full((1, 1, 1, 1), 100.0))
    assert noisy_bernstein_values(u, cfg)[0][0, 0] >= 1.0           # the correction keeps it at the cap
    assert noisy_bernstein_values(u, cfg, noise_correction=False)[0][0, 0] < 1.0
    assert noisy_bernstein_constants(cfg, False).eps == 0.0 < noisy_bernstein_constants(cfg).eps


def test_constants_and_scale():
    cfg = UCBVIConfig(3, 2, 4, 100, delta=0.1, sigma=2.0, bonus_kind="noisy_bernstein")
    k = noisy_bernstein_constants(cfg)
    assert k.scale == pytest.approx(2.0 * np.sqrt(100 .bit_length()))
    assert k.eps == pytest.approx(k.z * k.scale) and k.L == pytest.approx(np.log(16 * 3 * 2 * 4 * 100 / 0.1))
    pooled = noisy_bernstein_constants(dataclasses.replace(cfg, pooled=True))
    assert pooled.scale == pytest.approx(k.scale * 2.0) and pooled.L == pytest.approx(k.L + np.log(4))
    half = dataclasses.replace(cfg, bonus_scale=0.5)
    rng = np.random.default_rng(0)
    u = np.abs(rng.normal(20, 5, cfg.layout.d))
    assert np.all(noisy_bernstein_values(u, half)[0] <= noisy_bernstein_values(u, cfg)[0] + 1e-12)


def test_ties_go_to_the_least_tried_action():
    cfg = UCBVIConfig(1, 3, 1, 10, bonus_kind="noisy_bernstein")
    N = np.array([[5.0, 1.0, 3.0]])                # all three at the cap: the bonus is large at these counts
    plan = noisy_bernstein_plan(N, np.zeros((1, 3)), N[..., None], cfg)
    assert plan.policy[0, 0] == 1
    assert noisy_bernstein_plan(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3, 1)), cfg).policy[0, 0] == 0


def test_step_bonus_refuses_the_planned_kind():
    cfg = UCBVIConfig(2, 2, 2, 10, bonus_kind="noisy_bernstein")
    with pytest.raises(ValueError, match="no step bonus"):
        cfg.step_bonus(0, np.ones(2))
