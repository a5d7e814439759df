"""Offline bandit data (Paper A §2) and the LCB learner (Algorithm 1, Paper A Algorithm 1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.mab.data import (
    OfflineDataset,
    concentrability_behavior,
    distribution_dataset,
    fixed_sample_dataset,
    round_robin_arms,
    sample_statistics_distribution,
    sample_statistics_fixed,
)
from bandit_unlearning.mab.lcb import (
    LCBState,
    fit_lcb,
    lcb_scores,
    lemma31_bound_distribution,
    lemma31_bound_fixed,
)
from bandit_unlearning.testing.montecarlo import hoeffding_margin, mean_and_stderr


def loop_lcb(arms, rewards, m, tau):
    """Algorithm 1 written as the paper states it: the test oracle."""
    L = np.log(m / tau)
    scores = []
    for a in range(m):
        r = [ri for ai, ri in zip(arms, rewards) if ai == a]
        scores.append(sum(r) / len(r) - np.sqrt(L / (2 * len(r))) if r else -1.0)
    best = 0
    for a in range(m):
        if scores[a] > scores[best]:
            best = a
    return np.array(scores), best


datasets = st.integers(1, 6).flatmap(
    lambda m: st.tuples(
        st.just(m),
        st.lists(
            st.tuples(st.integers(0, m - 1), st.sampled_from([0.0, 0.25, 0.5, 1.0])), min_size=2, max_size=40
        ),
    )
)


@settings(max_examples=200, deadline=None)
@given(datasets)
def test_fit_lcb_matches_loop_oracle(data):
    m, pairs = data
    arms, rewards = zip(*pairs)
    state = fit_lcb(OfflineDataset(list(arms), list(rewards), m))
    scores, best = loop_lcb(arms, rewards, m, 1 / len(arms))
    np.testing.assert_allclose(state.scores, scores, rtol=0, atol=1e-12)
    assert state.arm == best
    assert state.tau == 1 / len(arms) and state.n == len(arms)


def test_ties_break_to_lowest_arm_and_empty_arms():
    state = LCBState(counts=[0, 4, 4], reward_sums=[0, 2, 2], tau=0.1)
    assert state.arm == 1
    assert state.means[0] == 0 and state.radii[0] == 1 and state.scores[0] == -1
    assert LCBState([0, 0], [0, 0], 0.5).arm == 0


def test_state_is_immutable_and_holds_no_raw_data():
    d = OfflineDataset([0, 1, 1], [1.0, 0.0, 1.0], 2)
    state = fit_lcb(d)
    with pytest.raises(ValueError):
        state.counts[0] = 5
    with pytest.raises(AttributeError):
        state.tau = 0.5
    assert set(vars(state)) == {"counts", "reward_sums", "tau"}
    with pytest.raises(ValueError):
        d.arms[0] = 1


def test_batched_scores_equal_single():
    rng = np.random.default_rng(0)
    c, s = sample_statistics_fixed([0.3, 0.5, 0.7], [5, 0, 9], rng, size=7)
    means, radii, scores = lcb_scores(c, s, 0.05)
    for i in range(7):
        np.testing.assert_allclose(scores[i], LCBState(c[i], s[i], 0.05).scores)


def test_round_robin_order():
    np.testing.assert_array_equal(round_robin_arms(np.array([3, 1, 2])), [0, 1, 2, 0, 2, 0])
    d = fixed_sample_dataset([0.5, 0.5, 0.5], [3, 1, 2], np.random.default_rng(1))
    np.testing.assert_array_equal(d.counts, [3, 1, 2])


def test_without_removes_exactly_the_indices():
    d = OfflineDataset([0, 1, 2, 0], [0.1, 0.2, 0.3, 0.4], 3)
    e = d.without([0, 2])
    np.testing.assert_array_equal(e.arms, [1, 0])
    np.testing.assert_array_equal(e.rewards, [0.2, 0.4])
    for bad in ([4], [0, 0], [-1]):
        with pytest.raises(ValueError):
            d.without(bad)


def test_behavior_from_concentrability():
    d = concentrability_behavior(5, 5.0)
    np.testing.assert_allclose(d, [0.2, 0.2, 0.2, 0.2, 0.2])
    d = concentrability_behavior(3, 1.25, best_arm=2)
    np.testing.assert_allclose(d, [0.1, 0.1, 0.8])


def test_statistics_samplers_match_dataset_generators():
    """Binomial shortcut vs building datasets: means of counts and sums agree (6-sigma tolerance)."""
    rng = np.random.default_rng(2)
    mu, d, n, reps = np.array([0.2, 0.6, 0.9]), np.array([0.5, 0.3, 0.2]), 60, 4000
    c1, s1 = sample_statistics_distribution(mu, d, n, rng, size=reps)
    sets = [distribution_dataset(mu, d, n, rng) for _ in range(reps)]
    c2 = np.array([x.counts for x in sets])
    s2 = np.array([x.reward_sums for x in sets])
    for a, b in ((c1, c2), (s1, s2)):
        m1, se1 = mean_and_stderr(a)
        m2, se2 = mean_and_stderr(b)
        assert np.all(np.abs(m1 - m2) < 6 * np.hypot(se1, se2))
    c, s = sample_statistics_fixed(mu, [3, 0, 5], rng, size=10)
    assert np.all(c == [3, 0, 5]) and np.all(s <= c) and np.all(s >= 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(arms=[0, 3], rewards=[0, 1], n_arms=3), "outside"),
        (dict(arms=[0, -1], rewards=[0, 1], n_arms=3), "outside"),
        (dict(arms=[0, 1], rewards=[0, 1.5], n_arms=3), r"\[0, 1\]"),
        (dict(arms=[0, 1], rewards=[0, -0.1], n_arms=3), r"\[0, 1\]"),
        (dict(arms=[0, 1], rewards=[0, np.nan], n_arms=3), "finite"),
        (dict(arms=[0, 1, 1], rewards=[0, 1], n_arms=3), "same length"),
        (dict(arms=[0.5], rewards=[0], n_arms=3), "integers"),
        (dict(arms=[0], rewards=[0], n_arms=0), "n_arms"),
        (dict(arms=[[0]], rewards=[[0]], n_arms=2), "1-D"),
    ],
)
def test_dataset_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OfflineDataset(**kwargs)


def test_learner_and_generator_bad_input():
    rng = np.random.default_rng(3)
    d = OfflineDataset([0, 1], [0.0, 1.0], 2)
    for tau in (0, 1, -0.5, 2):
        with pytest.raises(ValueError, match="tau"):
            fit_lcb(d, tau=tau)
    for tiny in (OfflineDataset([], [], 2), OfflineDataset([1], [0.5], 2)):
        with pytest.raises(ValueError, match="pass tau explicitly"):
            fit_lcb(tiny)
    assert fit_lcb(OfflineDataset([], [], 2), tau=0.1).arm == 0  # legal with an explicit tau
    with pytest.raises(TypeError):
        fit_lcb(([0], [1.0]))
    with pytest.raises(ValueError, match="distribution"):
        distribution_dataset([0.5, 0.5], [0.7, 0.7], 10, rng)
    with pytest.raises(ValueError, match="distribution"):
        distribution_dataset([0.5, 0.5], [1.5, -0.5], 10, rng)
    with pytest.raises(ValueError, match="shape"):
        distribution_dataset([0.5, 0.5], [1.0], 10, rng)
    with pytest.raises(ValueError, match="non-negative"):
        fixed_sample_dataset([0.5, 0.5], [3, -1], rng)
    with pytest.raises(ValueError, match="means"):
        fixed_sample_dataset([0.5, 1.5], [3, 1], rng)
    for c_star in (1.0, 0.5, np.inf):
        with pytest.raises(ValueError, match="C"):
            concentrability_behavior(3, c_star)
    with pytest.raises(ValueError, match="non-negative"):
        LCBState([-1, 2], [0, 1], 0.1)
    with pytest.raises(ValueError, match="reward_sums"):
        LCBState([1, 2], [2, 1], 0.1)
    with pytest.raises(ValueError):
        hoeffding_margin(0, 1, 0.1)


def test_lemma31_bounds_values():
    assert lemma31_bound_fixed(100, 5, 0.01) == pytest.approx(np.sqrt(2 * np.log(500) / 100) + 0.01)
    assert lemma31_bound_distribution(1000, 5, 5, 0.001) == pytest.approx(
        2 * np.sqrt(5 * np.log(5000) / 1000) + 0.002
    )
