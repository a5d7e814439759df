"""Tests of chapter B8: exact unlearning of TV-stable UCB-VI (statistics of the exactness tests, cost)."""

import numpy as np
import pytest

from bandit_unlearning.exact.learner import train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, unlearn
from bandit_unlearning.experiments.exactness import battery, format_power_table, power_subbatches, power_table
from bandit_unlearning.testing.broken import VARIANTS, with_tree_class
from bandit_unlearning.experiments.rl_unlearning import (
    policy_code,
    policy_regret,
    rl_run_statistics,
    rl_unlearning_cost,
)
from bandit_unlearning.rl.envs import riverswim
from bandit_unlearning.rl.mdp import regret
from bandit_unlearning.rl.stable import population_users, run_policies, stable_ucbvi

MDP = riverswim(horizon=3)


def _run(seed=0, T=8):
    learner = stable_ucbvi(MDP, T, sigma=0.5, bonus_scale=0.05)
    return train(learner, population_users(MDP, T, seed=3), np.random.default_rng(seed))


def test_rl_run_statistics():
    run, cache = _run(), {}
    stats = rl_run_statistics(run, 3, cache)
    assert len(stats) == 2 * 4 + 4  # 4 complete path nodes of leaf 3 when T = 8
    assert stats["total regret"] == pytest.approx(regret(MDP, run_policies(run)).sum())
    N = run.statistics()[:, : MDP.H * MDP.S * MDP.A].reshape(8, MDP.H, MDP.S, MDP.A)
    assert stats["visits to s >= 1"] == N[:, :, 1:, :].sum()
    assert stats["final policy"] == policy_code(run.final_model, cache) == 0 or stats["final policy"] >= 0
    with pytest.raises(TypeError):
        rl_run_statistics("run", 1, cache)
    with pytest.raises(ValueError):
        rl_run_statistics(run, 9, cache)


def test_policy_code_and_memoised_regret():
    cache = {}
    a, b = np.zeros((3, 6), dtype=np.int64), np.ones((3, 6), dtype=np.int8)
    assert policy_code(a, cache) == 0 and policy_code(b, cache) == 1 and policy_code(a.copy(), cache) == 0
    assert policy_regret(MDP, b, cache) == pytest.approx(regret(MDP, b[None].astype(int))[0])
    assert policy_regret(MDP, b, cache) == policy_regret(MDP, b.astype(np.int64), cache)


def test_battery_detects_a_broken_variant_on_rl_runs():
    """A small version of chapter B8's experiment: always-accept is caught, the correct algorithm is not."""
    rng, cache, t = np.random.default_rng(1), {}, 4
    learner = stable_ucbvi(MDP, 8, sigma=0.5, bonus_scale=0.05)
    users = population_users(MDP, 8, seed=3)
    dummy = users[: t - 1] + (ZERO_USER,) + users[t:]
    D, U, broken = [], [], []
    for _ in range(60):
        D.append(rl_run_statistics(train(learner, dummy, rng), t, cache))
        original = train(learner, users, rng)
        U.append(rl_run_statistics(unlearn(original, DeleteStep(t), rng=rng)[0], t, cache))
        broken.append(
            rl_run_statistics(
                unlearn(with_tree_class(original, VARIANTS["always accept"]), DeleteStep(t), rng=rng)[0],
                t,
                cache,
            )
        )
    level = 1e-4
    assert min(battery(U, D, ("final policy",)).values()) > level
    assert min(battery(broken, D, ("final policy",)).values()) < level
    assert power_subbatches(broken, D, 30, level, ("final policy",)) > 0
    assert power_subbatches(U, D, 30, level, ("final policy",)) == 0
    with pytest.raises(ValueError):
        power_subbatches(broken, D, 61, level)
    with pytest.raises(ValueError):
        battery([], D)
    # the table of chapters B4 and B8: the same numbers, world by world, and one text row each
    table = power_table(
        {t: {"U": U, "always accept": broken, "D": D}},
        ("U", "always accept"),
        (t,),
        (30, 60),
        level,
        ("final policy",),
    )
    for world, sample in (("U", U), ("always accept", broken)):
        p, worst, powers = table[world, t]
        pv = battery(sample, D, ("final policy",))
        assert (p, worst) == (min(pv.values()), min(pv, key=pv.get))
        assert powers == [power_subbatches(sample, D, n, level, ("final policy",)) for n in (30, 60)]
    text = format_power_table(table, (30, 60)).splitlines()
    assert len(text) == 3 and text[0].split()[-3:] == ["power@30", "power@60", "statistic"]
    assert (
        text[1].startswith("correct")
        and text[2].startswith("always accept")
        and text[2].endswith(table["always accept", t][1])
    )


def test_rl_unlearning_cost():
    out = rl_unlearning_cost(MDP, (8,), (1.0,), 1, 3, np.random.default_rng(0), seed=2)
    m = out[1.0, 8]
    assert m["T"] == 8 and m["cost"].shape == (3,) and np.all((m["cost"] >= 0) & (m["cost"] <= 1))
    assert np.all(m["shift_norm"] <= np.sqrt(3 * MDP.H) + 1e-12)
    with pytest.raises(TypeError):
        rl_unlearning_cost("riverswim", (8,), (1.0,), 1, 1, np.random.default_rng(0))
    with pytest.raises(ValueError):
        rl_unlearning_cost(MDP, (8,), (0.0,), 1, 1, np.random.default_rng(0))
    with pytest.raises(ValueError):
        rl_unlearning_cost(MDP, (1,), (1.0,), 1, 1, np.random.default_rng(0))
