"""Tests of bandit_unlearning.mab.imitation (chapter A6: Algorithm 6, Theorem 3.11)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bandit_unlearning.mab.data import PAPER_MEANS, OfflineDataset, concentrability_behavior
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.mab.imitation import (
    ImitationState,
    count_vectors,
    deletion_counts,
    fit_imitation,
    instance_failure_bounds,
    most_frequent_arm,
    multinomial_pmf,
    output_distributions_uniform_deletion,
    source_request_counts,
    theorem311_condition,
    theorem311_expression,
    theorem311_failure_bound,
    DeletionCounts,
    unlearned_arms,
)
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.audit import hockey_stick_delta

MEANS = np.array(PAPER_MEANS)


@st.composite
def dataset_and_request(draw):
    m = draw(st.integers(1, 5))
    arms = draw(st.lists(st.integers(0, m - 1), min_size=2, max_size=30))
    rewards = draw(st.lists(st.floats(0, 1), min_size=len(arms), max_size=len(arms)))
    data = OfflineDataset(np.array(arms), np.array(rewards), m)
    idx = draw(st.lists(st.integers(0, len(arms) - 1), min_size=1, max_size=len(arms) - 1, unique=True))
    return data, np.array(idx, dtype=np.int64)


# ------------------------------------------------------------------------------------------- rule
def test_ties_go_to_lowest_arm():
    assert most_frequent_arm([2, 3, 3]) == 1
    assert most_frequent_arm([0, 0, 1]) == 2
    assert np.array_equal(most_frequent_arm(np.array([[1, 1], [0, 2]])), [0, 1])


def test_fit_reads_counts_only():
    data = OfflineDataset([2, 2, 0, 1], [0.0, 0.0, 1.0, 1.0], 3)
    state = fit_imitation(data)
    assert np.array_equal(state.counts, [1, 1, 2]) and state.arm == 2 and state.n == 4 and state.n_arms == 3
    with pytest.raises(ValueError):
        state.counts[0] = 5  # read-only


# -------------------------------------------------------------------------------------- bad input
def test_empty_dataset_refused():
    with pytest.raises(ValueError, match="count rule undefined"):
        fit_imitation(OfflineDataset([], [], 2))
    with pytest.raises(ValueError, match="count rule undefined"):
        ImitationState([0, 0])
    with pytest.raises(ValueError, match="count rule undefined"):
        most_frequent_arm(np.array([[1, 0], [0, 0]]))
    with pytest.raises(TypeError):
        fit_imitation([0, 1])


@pytest.mark.parametrize(
    "k, match",
    [
        ([3, 0, 0], "more deletions"),
        ([0, 0, 0, 1], "unknown arm"),
        ([1, 0], "one entry per arm"),
        ([-1, 0, 0], "non-negative"),
        ([0.5, 0, 0], "integers"),
        ([[1, 0, 0]], "1-D"),
        ([2, 1, 1], "every point"),
    ],
)
def test_bad_requests_refused_and_state_unchanged(k, match):
    state = ImitationState([2, 1, 1])
    with pytest.raises(ValueError, match=match):
        unlearn(state, DeletionCounts(k))
    assert np.array_equal(state.counts, [2, 1, 1])


def test_bad_deletion_request_refused():
    state = ImitationState([2, 1])
    with pytest.raises(ValueError, match="unknown arm"):
        unlearn(state, DeletionRequest([4], [0.0]))
    with pytest.raises(ValueError, match="more deletions"):
        unlearn(state, DeletionRequest([1, 1], [0.0, 0.0]))
    with pytest.raises(TypeError):
        unlearn(np.array([2, 1]), DeletionCounts([1, 0]))


def test_other_bad_arguments():
    with pytest.raises(ValueError):
        unlearned_arms([[1, 2]], [[2, 0]])
    with pytest.raises(ValueError):
        source_request_counts([1, 1], 3)
    with pytest.raises(ValueError):
        theorem311_condition(100, 10, 2.5)
    with pytest.raises(ValueError):
        output_distributions_uniform_deletion([0.5, 0.5], 4, 4)


# --------------------------------------------------------------------------- (0, 0)-unlearning
@settings(max_examples=200, deadline=None)
@given(dataset_and_request())
def test_unlearning_equals_retraining(case):
    data, idx = case
    state = fit_imitation(data)
    request = DeletionRequest.from_indices(data, idx)
    retrained = fit_imitation(data.without(idx))
    for req in (request, DeletionCounts(request.deleted_counts(data.n_arms))):
        out, record = unlearn(state, req)
        assert record.arm == out.arm and record.n_deleted == len(idx)
        assert np.array_equal(out.counts, retrained.counts) and out.arm == retrained.arm
    assert np.array_equal(
        deletion_counts(request, data.n_arms), np.bincount(data.arms[idx], minlength=data.n_arms)
    )


def test_exhaustive_small_and_broken_variant_caught():
    """Every count vector with N <= 6 over 3 arms and every request: point masses identical."""
    worst, worst_broken = 0.0, 0.0
    for n in range(1, 7):
        for counts in count_vectors(n, 3):
            state = ImitationState(counts)
            for k in itertools.product(*[range(c + 1) for c in counts]):
                if sum(k) in (0, n):
                    continue
                ref = most_frequent_arm(counts - np.array(k))
                p_ref = np.eye(3)[ref]
                worst = max(
                    worst, hockey_stick_delta(np.eye(3)[unlearn(state, DeletionCounts(k))[1].arm], p_ref, 0.0)
                )
                worst_broken = max(worst_broken, hockey_stick_delta(np.eye(3)[state.arm], p_ref, 0.0))
    assert worst == 0.0 and worst_broken == 1.0


def test_output_distribution_under_md_matches_reference():
    d = concentrability_behavior(4, 1.5)
    p_unl, p_ref = output_distributions_uniform_deletion(d, 10, 3)
    assert p_unl.sum() == pytest.approx(1.0) and p_ref.sum() == pytest.approx(1.0)
    assert hockey_stick_delta(p_unl, p_ref, 0.0) < 1e-12
    p_broken, _ = output_distributions_uniform_deletion(d, 10, 3, mechanism=lambda c, k: most_frequent_arm(c))
    assert hockey_stick_delta(p_broken, p_ref, 0.0) > 1e-6


# ----------------------------------------------------------------------------------- enumeration
def test_count_vectors_and_pmf():
    vecs = count_vectors(5, 3)
    assert vecs.shape == (math.comb(7, 2), 3) and np.all(vecs.sum(1) == 5)
    assert len({tuple(v) for v in vecs}) == vecs.shape[0]
    d = np.array([0.2, 0.3, 0.5])
    pmf = multinomial_pmf(vecs, d)
    assert pmf.sum() == pytest.approx(1.0)
    assert pmf == pytest.approx(stats.multinomial.pmf(vecs, 5, d))
    assert multinomial_pmf([[1, 0]], [0.0, 1.0])[0] == 0.0
    assert count_vectors(3, 1).tolist() == [[3]]


def test_source_request_counts():
    counts = np.array([[5, 2, 1], [1, 2, 3]])
    k = source_request_counts(counts, 3, source=0)
    assert k.tolist() == [[3, 0, 0], [1, 2, 0]]
    assert source_request_counts(counts, 2, source=2).tolist() == [[1, 0, 1], [0, 0, 2]]


# ---------------------------------------------------------------------------------- Theorem 3.11
@settings(max_examples=200, deadline=None)
@given(st.floats(1.01, 1.99), st.integers(2, 5000), st.floats(0, 1))
def test_kl_bound_is_below_printed_expression(c_star, n, frac):
    k = int(frac * min(3 * n / 4, (2 - c_star) * n / c_star))
    assert theorem311_condition(n, k, c_star)
    assert theorem311_failure_bound(n, k, c_star) <= theorem311_expression(n, k, c_star) * (1 + 1e-9)
    assert 0 <= theorem311_failure_bound(n, k, c_star) <= 1


def test_printed_expression_vacuous_at_paper_c_star():
    threshold = 8 - math.sqrt(48)
    assert theorem311_expression(200, 0, threshold - 0.01) < theorem311_expression(100, 0, threshold - 0.01)
    assert theorem311_expression(200, 0, threshold + 0.01) > theorem311_expression(100, 0, threshold + 0.01)
    assert theorem311_expression(100, 0, 1.3) > 1


def test_failure_bounds_exact_small_n():
    """Exact P[output != a*] (all datasets, hard request from a*) is below both bounds."""
    for c_star in (1.2, 1.5, 1.8):
        d = concentrability_behavior(4, c_star)
        for n in (6, 10, 14):
            k = int(min(3 * n / 4, (2 - c_star) * n / c_star))
            vecs = count_vectors(n, 4)
            arms = unlearned_arms(vecs, source_request_counts(vecs, k, 0))
            per_arm = np.bincount(arms, weights=multinomial_pmf(vecs, d), minlength=4)
            assert 1 - per_arm[0] <= theorem311_failure_bound(n, k, c_star) + 1e-12
            assert np.all(per_arm[1:] <= instance_failure_bounds(n, k, d)[1:] + 1e-12)


def test_instance_bound_trivial_when_mean_drift_too_small():
    assert np.array_equal(instance_failure_bounds(10, 8, [0.6, 0.4]), [0.0, 1.0])


def test_monte_carlo_below_bound():
    """Paper's instance, C* = 1.3, hard request; fails w.p. < 1e-6 (Hoeffding, Bonferroni over 3)."""
    rng = np.random.default_rng(11)
    gaps = MEANS.max() - MEANS
    d = concentrability_behavior(5, 1.3)
    R = 20_000
    margin = hoeffding_margin(R, gaps.max(), 1e-6 / 3)
    for n, k in ((10, 2), (30, 12), (60, 30)):
        counts = rng.multinomial(n, d, size=R)
        est = gaps[unlearned_arms(counts, source_request_counts(counts, k, 0))].mean()
        bound = min(gaps.max() * theorem311_failure_bound(n, k, 1.3), gaps @ instance_failure_bounds(n, k, d))
        assert est <= bound + margin
