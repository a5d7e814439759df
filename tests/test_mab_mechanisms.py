"""Deletion requests, rollback, the Gaussian mechanism and Lemma A.1 (chapter A2, Paper A Definition 2.1 and §3.1, E2, E7, E12)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import LCBState, fit_lcb
from bandit_unlearning.mab.mechanisms import (
    DeletionRequest,
    exact_sensitivity,
    gaussian_mechanism,
    paper_sensitivity,
    rollback,
    sensitivity_condition_holds,
)


# Datasets with rewards on a dyadic grid (sums exact in floating point) and a request given by
# positions; "whole_arm" requests delete every point of one arm (erratum E7).
@st.composite
def dataset_and_request(draw):
    m = draw(st.integers(1, 6))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, m - 1), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
            min_size=2,
            max_size=40,
        )
    )
    arms, rewards = map(list, zip(*pairs))
    D = OfflineDataset(arms, rewards, m)
    if draw(st.booleans()):
        a = draw(st.sampled_from(sorted(set(arms))))
        idx = [i for i, x in enumerate(arms) if x == a]
    else:
        idx = draw(st.lists(st.integers(0, len(D) - 1), min_size=1, max_size=len(D), unique=True))
    return D, idx


@settings(max_examples=300, deadline=None)
@given(dataset_and_request())
def test_rollback_equals_retraining_with_the_same_tau(case):
    D, idx = case
    state = fit_lcb(D)
    before = (state.counts.copy(), state.reward_sums.copy(), state.tau)
    rolled = rollback(state, DeletionRequest.from_indices(D, idx))
    retrained = fit_lcb(D.without(idx), tau=state.tau)
    np.testing.assert_array_equal(rolled.counts, retrained.counts)
    np.testing.assert_array_equal(rolled.reward_sums, retrained.reward_sums)
    np.testing.assert_array_equal(rolled.scores, retrained.scores)
    assert rolled.arm == retrained.arm and rolled.tau == state.tau
    # the input state is untouched
    np.testing.assert_array_equal(state.counts, before[0])
    np.testing.assert_array_equal(state.reward_sums, before[1])
    assert state.tau == before[2]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=3, max_size=30), st.data())
def test_rollback_matches_retraining_for_arbitrary_float_rewards(rewards, data):
    """Non-dyadic rewards: sums differ by rounding only, so scores agree to 1e-12."""
    arms = [i % 2 for i in range(len(rewards))]
    D = OfflineDataset(arms, rewards, 2)
    idx = data.draw(st.lists(st.integers(0, len(D) - 1), min_size=1, max_size=len(D), unique=True))
    state = fit_lcb(D)
    rolled = rollback(state, DeletionRequest.from_indices(D, idx))
    np.testing.assert_allclose(
        rolled.scores, fit_lcb(D.without(idx), tau=state.tau).scores, rtol=0, atol=1e-12
    )


def test_deleting_a_whole_arm_gives_the_empty_arm_rule():
    D = OfflineDataset([0, 0, 1, 1, 1], [1.0, 1.0, 0.0, 0.5, 0.5], 2)
    state = fit_lcb(D)
    rolled = rollback(state, DeletionRequest([0, 0], [1.0, 1.0]))
    assert rolled.counts[0] == 0 and rolled.means[0] == 0 and rolled.radii[0] == 1 and rolled.scores[0] == -1
    assert rolled.arm == 1


def test_request_per_arm_views_and_multi_source():
    D = OfflineDataset([0, 1, 2, 0, 1, 2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 4)
    U = DeletionRequest.from_indices(D, [4, 0, 3])
    assert U.k == 3 and U.source_arms == (0, 1)
    np.testing.assert_array_equal(U.deleted_counts(4), [2, 1, 0, 0])
    np.testing.assert_allclose(U.deleted_sums(4), [0.5, 0.5, 0, 0])
    np.testing.assert_array_equal(U.arms, [1, 0, 0])
    U.validate_against(fit_lcb(D))
    with pytest.raises(ValueError):
        U.arms[0] = 2  # read-only copy


def test_request_does_not_alias_or_mutate_its_inputs():
    arms, rewards = np.array([0, 1]), np.array([0.5, 1.0])
    U = DeletionRequest(arms, rewards)
    arms[0], rewards[0] = 1, 0.0
    np.testing.assert_array_equal(U.arms, [0, 1])
    np.testing.assert_array_equal(U.rewards, [0.5, 1.0])
    assert arms.flags.writeable and rewards.flags.writeable


@pytest.mark.parametrize(
    "arms, rewards, match",
    [
        ([0, 1], [0.5, 1.5], r"\[0, 1\]"),
        ([0], [-0.1], r"\[0, 1\]"),
        ([0], [np.nan], r"\[0, 1\]"),
        ([-1], [0.0], "unknown arm"),
        ([], [], "at least one point"),
        ([0.5], [0.0], "integers"),
        ([0, 1], [0.0], "same length"),
        ([[0]], [[0.0]], "1-D"),
    ],
)
def test_request_construction_refuses_bad_points(arms, rewards, match):
    with pytest.raises(ValueError, match=match):
        DeletionRequest(arms, rewards)


def test_from_indices_bad_input():
    D = OfflineDataset([0, 1, 1], [0.0, 1.0, 0.5], 2)
    for idx, match in (
        ([3], r"\[0, 3\)"),
        ([0, 0], "distinct"),
        ([], "non-empty"),
        ([0.5], "integers"),
        ([-1], r"\[0, 3\)"),
    ):
        with pytest.raises(ValueError, match=match):
            DeletionRequest.from_indices(D, idx)
    with pytest.raises(TypeError):
        DeletionRequest.from_indices(([0], [1.0]), [0])


@pytest.mark.parametrize(
    "arms, rewards, match",
    [
        ([3], [0.0], "unknown arm 3"),
        ([1, 1, 1], [1.0, 1.0, 1.0], "more deletions than the arm holds"),
        ([0, 0], [1.0, 1.0], "more than the arm's stored reward sum"),
        ([1], [0.0], "impossible for rewards in"),
    ],
)
def test_validate_against_names_the_rule_and_leaves_state_unchanged(arms, rewards, match):
    state = LCBState(counts=[3, 2, 1], reward_sums=[1.0, 2.0, 0.0], tau=1 / 6)
    U = DeletionRequest(arms, rewards)
    with pytest.raises(ValueError, match=match):
        U.validate_against(state)
    with pytest.raises(ValueError, match=match):
        rollback(state, U)
    np.testing.assert_array_equal(state.counts, [3, 2, 1])
    np.testing.assert_array_equal(state.reward_sums, [1.0, 2.0, 0.0])
    with pytest.raises(TypeError):
        U.validate_against("state")
    with pytest.raises(TypeError):
        rollback(state, (arms, rewards))


def test_gaussian_mechanism_noises_one_arm_by_sigma_times_the_next_normal():
    state = LCBState([10, 10, 10], [5.0, 3.0, 7.0], 0.01)
    for arm in range(3):
        noisy = gaussian_mechanism(state, arm, 0.3, np.random.default_rng(5))
        z = np.random.default_rng(5).standard_normal()
        expected = state.scores.copy()
        expected[arm] += 0.3 * z
        np.testing.assert_array_equal(noisy, expected)
    np.testing.assert_array_equal(gaussian_mechanism(state, 1, 0.0, np.random.default_rng(0)), state.scores)
    for bad in (dict(arm=3), dict(arm=-1), dict(sigma=-1.0), dict(sigma=np.inf)):
        kw = dict(arm=0, sigma=0.1) | bad
        with pytest.raises(ValueError):
            gaussian_mechanism(state, kw["arm"], kw["sigma"], np.random.default_rng(0))
    with pytest.raises(TypeError):
        gaussian_mechanism(state, True, 0.1, np.random.default_rng(0))  # a bool is not an arm
    with pytest.raises(TypeError):
        gaussian_mechanism(state, 0, 0.1, "0")


def _brute_force_sensitivity(n, k, log_term):
    """max |f(D) - f(D \\ U)| over all binary rewards, U = the first k points (the oracle)."""
    r = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(float)
    f_d = r.mean(axis=1) - np.sqrt(log_term / (2 * n))
    f_du = r[:, k:].mean(axis=1) - np.sqrt(log_term / (2 * (n - k))) if k < n else -1.0
    return np.abs(f_d - f_du).max()


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("log_term", [0.5, np.log(20), 9.0])
def test_exact_sensitivity_is_the_brute_force_worst_case(n, log_term):
    for k in range(n + 1):
        assert exact_sensitivity(n, k, log_term) == pytest.approx(
            _brute_force_sensitivity(n, k, log_term), abs=1e-12
        )


def test_condition_implies_the_paper_bound_on_a_large_grid():
    n = np.arange(1, 3001)[:, None]
    k = np.arange(0, 3001)[None, :]
    k = np.broadcast_to(k, (n.size, k.size))
    n = np.broadcast_to(n, k.shape)
    ok = k <= n
    n, k = n[ok], k[ok]
    for log_term in (1.0, np.log(10 * 3000), 30.0):
        holds = sensitivity_condition_holds(n, k, log_term)
        assert holds.dtype == bool and holds.any() and (~holds).any()
        exact, paper = exact_sensitivity(n, k, log_term), paper_sensitivity(n, k)
        assert np.all(exact[holds] <= paper[holds] * (1 + 1e-12))


def test_sensitivity_values_and_scalar_types():
    L = np.log(80)
    assert paper_sensitivity(20, 18) == pytest.approx(1.35)
    assert exact_sensitivity(20, 18, L) == pytest.approx(
        18 / 20 + np.sqrt(L / 2) * (1 / np.sqrt(2) - 1 / np.sqrt(20))
    )
    assert sensitivity_condition_holds(20, 13, L) is True and sensitivity_condition_holds(20, 14, L) is False
    assert exact_sensitivity(20, 0, L) == 0 and paper_sensitivity(20, 0) == 0
    b = np.sqrt(L / 40)
    assert exact_sensitivity(20, 20, L) == pytest.approx(2 - b)
    assert exact_sensitivity(1, 1, 20.0) == pytest.approx(np.sqrt(10) - 1)  # b > 3/2: |1 - b| wins
    assert isinstance(exact_sensitivity(20, 3, L), float)


@pytest.mark.parametrize(
    "call",
    [
        lambda: paper_sensitivity(0, 0),
        lambda: paper_sensitivity(5, 6),
        lambda: paper_sensitivity(5, -1),
        lambda: paper_sensitivity(5.5, 1),
        lambda: exact_sensitivity(5, 1, 0.0),
        lambda: exact_sensitivity(5, 1, -1.0),
        lambda: exact_sensitivity(5, 1, np.nan),
        lambda: sensitivity_condition_holds(5, 7, 1.0),
    ],
)
def test_sensitivity_bad_input(call):
    with pytest.raises(ValueError):
        call()
