"""The batched engine (chapter B13) against the single-run learner, run by run and bit for bit.

Oracles: ``train(stable_ucbvi(...), population_users(...), rng)`` (sigma > 0) and ``run_ucbvi``
(sigma = 0); ``stable_regret_curve`` for the curves; ``rl_unlearning_cost`` for the deletion costs.
Every comparison is exact (``np.array_equal``), so no sampling error is involved.
"""

import math

import numpy as np
import pytest

from bandit_unlearning.exact.learner import train
from bandit_unlearning.experiments.rl_batch import stable_regret_curves, unlearning_cost
from bandit_unlearning.experiments.rl_stable import stable_regret_curve
from bandit_unlearning.experiments.rl_unlearning import rl_unlearning_cost
from bandit_unlearning.rl.batch import run_batch
from bandit_unlearning.rl.envs import gridworld, independent_bandits, riverswim
from bandit_unlearning.rl.stable import population_users, run_policies, stable_sigma, stable_ucbvi
from bandit_unlearning.rl.ucbvi import UCBVIConfig, plan_from_statistics, run_ucbvi


def single(mdp, T, sigma, scale, seed, noise_seed, delta=0.1, stabilize=False, reward_noise="bernoulli"):
    """(policies, u_T, u~_T, trajectories) of the single-run learner."""
    if sigma == 0 and not stabilize:
        run = run_ucbvi(mdp, T, seed=seed, delta=delta, bonus_scale=scale, reward_noise=reward_noise)
        total = run.config.layout.accumulate(run.indices, run.values)
        return run.policies, total, total, run.trajectories
    learner = stable_ucbvi(
        mdp, T, sigma=sigma, delta=delta, bonus_scale=scale, stabilize=stabilize, reward_noise=reward_noise
    )
    run = train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(noise_seed))
    return run_policies(run), run.tree.clean_prefix_sum(T), run.tree.noisy_prefix_sum(T), None


def check_batch(mdp, T, specs, reward_noise="bernoulli"):
    """specs: (sigma, scale, seed, delta, stabilize); noise seed of run b is 100 + b."""
    configs = [
        UCBVIConfig.of(mdp, T, sigma=sg, bonus_scale=sc, delta=dl, stabilize=st)
        for sg, sc, _, dl, st in specs
    ]
    batch = run_batch(
        mdp,
        configs,
        [s[2] for s in specs],
        [100 + b for b in range(len(specs))],
        reward_noise,
        keep_trajectories=True,
    )
    moved = 0
    for b, (sg, sc, seed, dl, st) in enumerate(specs):
        pol, clean, noisy, traj = single(mdp, T, sg, sc, seed, 100 + b, dl, st, reward_noise)
        assert np.array_equal(batch.policies[b], pol), f"run {b}: policies differ"
        assert np.array_equal(batch.clean_sum[b], clean), f"run {b}: u_T differs"
        assert np.array_equal(batch.noisy_sum[b], noisy), f"run {b}: noisy prefix sum differs"
        if traj is not None:
            for name in ("states", "actions", "rewards"):
                assert np.array_equal(getattr(batch.trajectories, name)[b], getattr(traj, name))
        moved += int(np.any(pol[1:] != pol[:-1], axis=(1, 2)).sum())
    assert moved > 0  # the policies move: the comparison has teeth
    return batch


@pytest.mark.parametrize("env, T", [(riverswim(horizon=10), 300), (gridworld(horizon=6), 80)])
def test_batch_equals_single_runs(env, T):
    sig = [stable_sigma(rho, env.H, T) for rho in (math.inf, 100.0, 10.0, 1.0)]
    specs = [(s, sc, seed, 0.1, False) for s in sig for sc in (1.0, 0.05) for seed in (3, 2**63 + 5)]
    specs += [(sig[3], 1.0, 7, 0.1, True), (sig[2], 0.05, 7, 0.01, False)]
    check_batch(env, T, specs)


def test_batch_equals_single_runs_without_reward_noise():
    """Mean rewards (non-integer sums): the level accumulators add in the tree's canonical order."""
    mdp, T = riverswim(horizon=8), 200
    specs = [
        (0.0, 0.05, 11, 0.1, False),
        (stable_sigma(10.0, 8, T), 0.05, 11, 0.1, False),
        (stable_sigma(1.0, 8, T), 1.0, 12, 0.1, False),
    ]
    check_batch(mdp, T, specs, reward_noise="none")


def test_a_run_does_not_depend_on_its_batch():
    mdp, T = riverswim(horizon=6), 120
    cfg = [UCBVIConfig.of(mdp, T, sigma=s) for s in (0.0, 2.0, 0.5)]
    alone = run_batch(mdp, cfg[1:2], [5], [9])
    mixed = run_batch(mdp, cfg[::-1], [4, 5, 6], [8, 9, 10])
    assert np.array_equal(alone.policies[0], mixed.policies[1])
    assert np.array_equal(alone.noisy_sum[0], mixed.noisy_sum[1])


def test_step_bonus_is_the_paper_bonus_bit_for_bit():
    mdp = riverswim(horizon=5)
    n = np.array([[1.0, 2.5, np.inf], [40.0, 7.0, 1e6]])
    for sigma in (0.0, 3.0):
        c = UCBVIConfig.of(mdp, 50, sigma=sigma, bonus_scale=0.3)
        n_ok = np.where(n > c.eps_unexplored, n, np.inf)
        assert not c.needs_next_variance
        for h in range(mdp.H):
            assert np.array_equal(c.step_bonus(h, n_ok, None), c.bonus(n_ok))


def test_planner_calls_step_bonus_at_every_step():
    """A bonus that reads the variance of V_{h+1} is asked at every step, backwards, with that variance;
    the paper's bonus (all steps at once) plans exactly as a per-step call of step_bonus would."""
    calls = []

    class VarianceConfig(UCBVIConfig):
        @property
        def needs_next_variance(self):
            return True

        def step_bonus(self, h, n, next_variance=None):
            calls.append((h, None if next_variance is None else next_variance.shape))
            return UCBVIConfig.bonus(self, n)

    mdp = riverswim(horizon=4)
    u = np.abs(np.random.default_rng(1).normal(size=UCBVIConfig.of(mdp, 20).layout.d)) * 3
    planned = plan_from_statistics(u, VarianceConfig.of(mdp, 20))
    assert calls == [(h, (mdp.S * mdp.A,)) for h in (3, 2, 1, 0)]
    assert np.array_equal(planned.policy, plan_from_statistics(u, UCBVIConfig.of(mdp, 20)).policy)
    assert np.array_equal(planned.Q, plan_from_statistics(u, UCBVIConfig.of(mdp, 20)).Q)


def test_regret_curves_equal_the_single_run_curves():
    mdp, T = independent_bandits(2, 2, 2, 0.25, best_actions=[1, 1]), 400
    rhos, seeds, scales = [math.inf, 10.0, 1.0, 0.3], [1, 2, 3, 1], [1.0, 0.2, 1.0, 0.2]
    curves = stable_regret_curves(
        mdp, T, rhos, seeds, [21, 22, 23, 24], scales, n_points=10, keep_policies=True
    )
    for b, c in enumerate(curves):
        ref = stable_regret_curve(
            mdp,
            T,
            rhos[b],
            seeds[b],
            np.random.default_rng(21 + b),
            bonus_scale=scales[b],
            n_points=10,
            keep_policies=True,
        )
        assert set(c) == set(ref)
        for key in ref:
            a, r = np.asarray(c[key]), np.asarray(ref[key])
            assert np.array_equal(a, r, equal_nan=a.dtype.kind == "f"), key


def test_unlearning_cost_equals_measure_unlearning():
    mdp = riverswim(horizon=6)
    for T, rho in ((64, 1.0), (100, 0.3)):
        ref = rl_unlearning_cost(mdp, [T], [rho], 2, 5, np.random.default_rng(3), seed=8)[rho, T]
        got = unlearning_cost(mdp, T, rho, 2, 5, np.random.default_rng(3), seed=8)
        assert set(got) == set(ref) and got["T"] == ref["T"]
        for key in ref:
            if key != "T":
                assert np.array_equal(got[key], ref[key]), key
        if rho == 1.0:
            assert got["retrained"].any()  # some deletions re-ran: the generator bookkeeping is exercised


def test_the_coupling_only_cost_is_the_full_request_cost():
    """``unlearning_cost`` is ``measure_unlearning`` of chapter B4 with ``cost_of=_coupling_only``, where
    chapter B8 passes ``request_cost`` (which re-runs): request by request, the two costs agree to the
    bit and leave the generator in the same state (the next draw, buffered half-word included)."""
    from bandit_unlearning.experiments import rl_batch
    from bandit_unlearning.experiments.unlearning_cost import request_cost

    mdp, T, rho = riverswim(horizon=6), 64, 1.0
    run = train(stable_ucbvi(mdp, T, rho), population_users(mdp, T, seed=8), np.random.default_rng(3))
    retrained = 0
    for t in (1, 2, 17, 32, 33, 50, 63, 64):
        full_rng, fast_rng = np.random.default_rng(t), np.random.default_rng(t)
        full_rng.integers(2), fast_rng.integers(2)  # a buffered 32-bit half-word, as inside the cost loop
        full, fast = request_cost(run, t, full_rng), rl_batch._coupling_only(run, t, fast_rng)
        assert fast == full, t
        assert fast_rng.bit_generator.state == full_rng.bit_generator.state, t
        assert fast_rng.integers(2**63) == full_rng.integers(2**63), t
        retrained += full["retrained"]
    assert 0 < retrained < 8  # both branches of the coupling are exercised


def test_a_batch_that_is_too_large_is_refused():
    mdp = gridworld(horizon=10)
    configs = [UCBVIConfig.of(mdp, 2**20)] * 400
    with pytest.raises(ValueError, match="split it into smaller batches"):
        run_batch(mdp, configs, [0] * 400, [0] * 400)


@pytest.mark.parametrize("kind", ["hoeffding", "simplified", "bernstein"])
def test_batch_equals_single_runs_with_practical_bonuses(kind):
    """Chapter B6's practical bonuses (Bernstein reads the variance of V_{h+1}) plan in the batch
    exactly as in the single run, non-private and TV-stable."""
    mdp, T = riverswim(horizon=6), 150
    specs = [(0.0, 1.0, 3), (0.0, 0.3, 4), (stable_sigma(100.0, 6, T), 1.0, 5)]
    configs = [UCBVIConfig.of(mdp, T, sigma=sg, bonus_scale=sc, bonus_kind=kind) for sg, sc, _ in specs]
    batch = run_batch(mdp, configs, [s[2] for s in specs], [100 + b for b in range(len(specs))])
    moved = 0
    for b, (sg, sc, seed) in enumerate(specs):
        if sg == 0:
            pol = run_ucbvi(mdp, T, seed=seed, bonus_scale=sc, bonus_kind=kind).policies
        else:
            learner = stable_ucbvi(mdp, T, sigma=sg, bonus_scale=sc, bonus_kind=kind)
            pol = run_policies(
                train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(100 + b))
            )
        assert np.array_equal(batch.policies[b], pol), f"{kind}, run {b}: policies differ"
        moved += int(np.any(pol[1:] != pol[:-1], axis=(1, 2)).sum())
    assert moved > 0


def test_a_pooled_config_is_refused_by_the_batch():
    mdp = riverswim(horizon=4)
    with pytest.raises(ValueError, match="must not be pooled"):
        run_batch(mdp, [UCBVIConfig.of(mdp, 10, pooled=True)], [1], [2])
