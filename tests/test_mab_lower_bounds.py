"""Tests of bandit_unlearning.mab.lower_bounds (chapters A4a–A4b: Theorems 3.7, 3.9 and the C* in (1, 2) case)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from bandit_unlearning.mab.lcb import fit_lcb, lcb_scores
from bandit_unlearning.mab.lower_bounds import (
    DELTA_MAX,
    REQUEST_SCHEMES,
    TwoPointPair,
    bernoulli_kl,
    distribution_pair,
    fixed_sample_pair,
    gap_distribution,
    gap_fixed,
    le_cam_bound,
    learner_bit_kl,
    lower_bound_distribution,
    lower_bound_fixed,
    lower_bound_small_cstar,
    paper_kl_bound,
    per_sample_kl,
    retained_kl,
    sample_pair_dataset,
    sample_pair_request,
    sample_pair_statistics,
    sample_source_counts,
    small_cstar_pair,
)
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.unlearn import UnlearnOptions, unlearn_batch
from bandit_unlearning.testing.montecarlo import hoeffding_margin


# --------------------------------------------------------------------------------- constructions
def test_fixed_pair_invariants():
    pair = fixed_sample_pair(40, 20)
    gap = 0.5 * np.sqrt(1 / (5 * 20))
    assert (
        pair.kind == "fixed"
        and pair.model == "fixed"
        and pair.n == 80
        and pair.k == 20
        and pair.retained == 20
    )
    assert np.isclose(pair.gap, gap) and np.allclose(pair.means, [[0.5 + gap, 0.5], [0.5 - gap, 0.5]])
    assert np.array_equal(pair.counts, [40, 40]) and pair.behaviors is None
    assert pair.best_arms.tolist() == [0, 1]
    assert pair.suboptimality(0, 1) == pytest.approx(gap) and pair.suboptimality(1, 0) == pytest.approx(gap)
    assert np.allclose(pair.suboptimality(0, np.array([0, 1, 1])), [0, gap, gap])
    assert np.array_equal(fixed_sample_pair(40, 20, n_other=7).counts, [40, 7])
    with pytest.raises(ValueError):
        pair.means[0, 0] = 0.0  # read-only


def test_gap_cap():
    assert gap_fixed(21, 20) == 0.2  # (1/2) sqrt(1/5) > 1/5
    assert gap_fixed(22, 20) == pytest.approx(0.5 * np.sqrt(1 / 10))
    assert gap_distribution(11, 1, 10.0) == 0.2  # N - k = 10 < 1.25 C*
    assert gap_distribution(101, 1, 10.0) == pytest.approx(0.5 * np.sqrt(10 / 500))


def test_distribution_pairs_invariants():
    pair = distribution_pair(45, 5, 5.0)
    assert pair.kind == "distribution" and pair.model == "distribution" and pair.retained == 40
    assert np.allclose(pair.behaviors, [[0.2, 0.8], [0.2, 0.8]]) and pair.counts is None
    small = small_cstar_pair(8, 3, 1.5)
    assert small.kind == "small_cstar" and small.model == "distribution" and small.gap == pytest.approx(0.25)
    assert np.allclose(small.means, [[0.75, 0.5], [0.5, 0.75]])
    assert np.allclose(small.behaviors, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    assert np.allclose(small.behaviors[[0, 1], small.best_arms], 1 / 1.5)  # d_I(a*_I) = 1/C*
    for p in (pair, small):
        for i in (0, 1):
            pmf = p.source_count_pmf(i)
            assert pmf.sum() == pytest.approx(1) and np.all(pmf[: p.k] == 0)


def test_pair_validation():
    with pytest.raises(ValueError, match="gap"):
        TwoPointPair("fixed", [[0.6, 0.5], [0.4, 0.5]], 0.2, 1, 4, counts=[2, 2])
    with pytest.raises(ValueError, match="best arms"):
        TwoPointPair("fixed", [[0.6, 0.5], [0.6, 0.5]], 0.1, 1, 4, counts=[2, 2])
    with pytest.raises(ValueError, match="kind"):
        TwoPointPair("other", [[0.6, 0.5], [0.4, 0.5]], 0.1, 1, 4, counts=[2, 2])
    with pytest.raises(ValueError, match="counts"):
        TwoPointPair("fixed", [[0.6, 0.5], [0.4, 0.5]], 0.1, 1, 4)


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "make",
    [
        lambda: fixed_sample_pair(20, 20),
        lambda: fixed_sample_pair(10, 20),
        lambda: fixed_sample_pair(10, 0),
        lambda: fixed_sample_pair(10.5, 2),
        lambda: fixed_sample_pair(10, 2, n_other=0),
        lambda: distribution_pair(5, 5, 3.0),
        lambda: distribution_pair(100, 5, 1.99),
        lambda: distribution_pair(100, 5, np.nan),
        lambda: small_cstar_pair(10, 2, 2.0),
        lambda: small_cstar_pair(10, 2, 1.0),
        lambda: small_cstar_pair(10, 2, 0.5),
        lambda: small_cstar_pair(10, 10, 1.5),
        lambda: gap_fixed(3, 3),
        lambda: gap_distribution(10, 2, 1.5),
    ],
)
def test_constructors_refuse(make):
    with pytest.raises((ValueError, TypeError)):
        make()


def test_bool_and_non_integer_counts_refused():
    with pytest.raises(TypeError):
        fixed_sample_pair(True, 1)
    with pytest.raises(TypeError):
        fixed_sample_pair("10", 1)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: lower_bound_fixed(20, 20, 0.5), "n_a0 - k"),
        (lambda: lower_bound_fixed(10, 20, 0.5), "n_a0 - k"),
        (lambda: lower_bound_fixed(30, 0, 0.5), "k must be"),
        (lambda: lower_bound_fixed(30, 2.5, 0.5), "integer"),
        (lambda: lower_bound_fixed(30, 20, 0.0), "epsilon"),
        (lambda: lower_bound_fixed(30, 20, -1.0), "epsilon"),
        (lambda: lower_bound_fixed(30, 20, np.inf), "epsilon"),
        (lambda: lower_bound_fixed(30, 20, 0.5, delta=0.08), "delta"),
        (lambda: lower_bound_fixed(30, 20, 0.5, delta=-0.01), "delta"),
        (lambda: lower_bound_distribution(30, 30, 3.0, 0.5), "n - k"),
        (lambda: lower_bound_distribution(30, 5, 1.5, 0.5), "C\\*"),
        (lambda: lower_bound_distribution(30, 5, 3.0, 0.0), "epsilon"),
        (lambda: lower_bound_distribution(30, 5, 3.0, 0.5, delta=0.1), "delta"),
        (lambda: lower_bound_small_cstar(10, 2, 2.0, 0.5), "C\\*"),
        (lambda: lower_bound_small_cstar(10, 2, 1.0, 0.5), "C\\*"),
        (lambda: lower_bound_small_cstar(10, 10, 1.5, 0.5), "n - k"),
        (lambda: lower_bound_small_cstar(10, 2, 1.5, 0.0), "epsilon"),
        (lambda: lower_bound_small_cstar(10, 2, 1.5, 0.5, kl="nope"), "kl"),
        (lambda: lower_bound_small_cstar(10, 2, 1.5, 0.5, kl=-1.0), "kl"),
        (lambda: le_cam_bound(0.0, 0.1, 0.5), "gap"),
        (lambda: le_cam_bound(1.5, 0.1, 0.5), "gap"),
        (lambda: le_cam_bound(0.1, -0.1, 0.5), "kl"),
        (lambda: le_cam_bound(0.1, 0.1, -0.5), "epsilon"),
        (lambda: le_cam_bound(0.1, 0.1, 0.5, delta=1.0), "delta"),
        (lambda: bernoulli_kl(1.2, 0.5), "Bernoulli"),
    ],
)
def test_bounds_refuse(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_other_refusals():
    rng = np.random.default_rng(0)
    pair = fixed_sample_pair(40, 20)
    with pytest.raises(ValueError, match="M_d"):
        per_sample_kl(pair)
    with pytest.raises(ValueError, match="scheme"):
        retained_kl(pair, "both")
    with pytest.raises(ValueError, match="instance"):
        sample_pair_statistics(pair, 2, rng)
    with pytest.raises(TypeError, match="instance"):
        pair.suboptimality(True, 0)
    with pytest.raises(TypeError):
        retained_kl("pair")
    with pytest.raises(ValueError, match="almost never"):  # N(a0) >= 20 impossible at d(a0) = 0.05
        sample_source_counts(distribution_pair(25, 20, 20.0), 0, rng)
    data = sample_pair_dataset(pair, 0, rng)
    with pytest.raises(ValueError, match="scheme"):
        sample_pair_request(pair, data, rng, scheme="all")
    with pytest.raises(ValueError, match="fewer than k"):
        sample_pair_request(fixed_sample_pair(60, 50), data, rng)


# ------------------------------------------------------------------------------------------ bounds
def test_formulas():
    e = np.e
    assert lower_bound_fixed(40, 20, 0.5) == pytest.approx(np.exp(-0.5) / 16 * np.sqrt(1 / (5 * e * 20)))
    assert lower_bound_distribution(45, 5, 5.0, 1.0, delta=DELTA_MAX) == pytest.approx(
        np.exp(-1) / 16 * np.sqrt(5 / (5 * e * 40))
    )
    c = 1.5
    assert lower_bound_small_cstar(8, 3, c, 0.1) == pytest.approx(
        (2 - c) / 8 * np.exp(-0.1 - 5 * (2 - c) / c * np.log(2 / (c - 1)))
    )
    assert lower_bound_small_cstar(8, 3, c, 0.1, kl=0.0) == pytest.approx((2 - c) / 8 * np.exp(-0.1))
    # exact KL <= closed form, so the exact-KL bound is the larger (tighter) one
    assert lower_bound_small_cstar(8, 3, c, 0.1, kl="exact") > lower_bound_small_cstar(8, 3, c, 0.1)
    assert np.allclose(
        lower_bound_fixed(np.array([30, 40]), 20, np.array([0.5, 0.5])),
        [lower_bound_fixed(30, 20, 0.5), lower_bound_fixed(40, 20, 0.5)],
    )
    assert DELTA_MAX == pytest.approx(1 / (8 * np.sqrt(np.e)))


@given(st.integers(2, 10_000), st.floats(0.01, 10))
def test_formula_is_the_chain_at_kl_one_half(rest, eps):
    """With KL = 1/2 and delta = 1/(8 sqrt e) the chain equals the printed formula (uncapped gap)."""
    gap = 0.5 * np.sqrt(1 / (5 * rest))
    assert le_cam_bound(gap, 0.5, eps, DELTA_MAX) == pytest.approx(
        lower_bound_fixed(rest + 3, 3, eps), rel=1e-12
    )


def test_le_cam_clips_at_zero():
    assert le_cam_bound(0.1, 10.0, 0.5, 0.05) == 0.0
    assert le_cam_bound(0.1, 0.0, 0.0, 0.0) == pytest.approx(0.025)


# ------------------------------------------------------------------------------- exact divergences
def _brute_force_kl_fixed(pair):
    """KL of the retained rewards of a0 by enumerating every binary reward vector."""
    r = pair.counts[0] - pair.k
    vecs = np.array(list(itertools.product([0, 1], repeat=r)))
    p, q = pair.means[0][0], pair.means[1][0]
    lp = np.prod(np.where(vecs == 1, p, 1 - p), axis=1)
    lq = np.prod(np.where(vecs == 1, q, 1 - q), axis=1)
    return float(np.sum(special.rel_entr(lp, lq)))


@pytest.mark.parametrize("n_a0, k", [(2, 1), (5, 2), (9, 1), (30, 22)])
def test_fixed_kl_exact(n_a0, k):
    pair = fixed_sample_pair(n_a0, k)
    gap = pair.gap
    expected = (n_a0 - k) * 2 * gap * np.log((1 + 2 * gap) / (1 - 2 * gap))
    assert retained_kl(pair) == pytest.approx(expected, rel=1e-12)
    assert retained_kl(pair) == pytest.approx(_brute_force_kl_fixed(pair), rel=1e-10)
    assert retained_kl(pair) <= paper_kl_bound(pair) <= 0.5 + 1e-12


def _retained_law(pair, instance, scheme):
    r, k, n = pair.n - pair.k, pair.k, pair.n
    j = np.arange(r + 1)
    if scheme == "source":
        p_kept = pair.source_count_pmf(instance)[k:]
    else:
        p_data = stats.binom.pmf(np.arange(n + 1), n, pair.behaviors[instance][0])
        n0 = np.arange(n + 1)[:, None]
        p_kept = (p_data[:, None] * stats.hypergeom.pmf(n0 - j[None, :], n, n0, k)).sum(axis=0)
    s = np.arange(r + 1)
    law0 = stats.binom.pmf(s[None, :], j[:, None], pair.means[instance][0])
    law1 = stats.binom.pmf(s[None, :], (r - j)[:, None], pair.means[instance][1])
    return p_kept[:, None, None] * law0[:, :, None] * law1[:, None, :]


@pytest.mark.parametrize(
    "pair",
    [
        distribution_pair(12, 2, 3.0),
        distribution_pair(20, 5, 2.0),
        small_cstar_pair(8, 3, 1.5),
        small_cstar_pair(15, 2, 1.1),
    ],
)
@pytest.mark.parametrize("scheme", REQUEST_SCHEMES)
def test_distribution_kl_matches_enumeration(pair, scheme):
    p, q = _retained_law(pair, 0, scheme), _retained_law(pair, 1, scheme)
    assert retained_kl(pair, scheme) == pytest.approx(float(special.rel_entr(p, q).sum()), rel=1e-9)


def test_distribution_kl_closed_forms():
    for c in (2.0, 3.0, 10.0):
        for n, k in ((6, 1), (60, 5), (1005, 5)):
            pair = distribution_pair(n, k, c)
            kl = bernoulli_kl(0.5 + pair.gap, 0.5 - pair.gap)
            assert retained_kl(pair, "uniform") == pytest.approx((n - k) / c * kl, rel=1e-12)
            assert per_sample_kl(pair) == pytest.approx(kl / c, rel=1e-12)
            assert retained_kl(pair, "uniform") <= paper_kl_bound(pair) + 1e-12
            assert retained_kl(pair, "source") <= paper_kl_bound(pair) + 1e-12


def test_small_cstar_closed_form_is_an_upper_bound_for_uniform_requests():
    cs = np.linspace(1.001, 1.999, 500)
    for c in cs:
        pair = small_cstar_pair(11, 1, c)
        closed = (2 - c) / c * np.log(2 / (c - 1))
        assert per_sample_kl(pair) <= closed
        assert paper_kl_bound(pair) == pytest.approx(10 * closed)
        assert retained_kl(pair, "uniform") == pytest.approx(10 * per_sample_kl(pair))


def test_small_cstar_closed_form_underestimates_single_source_kl():
    pair = small_cstar_pair(8, 3, 1.1)
    assert retained_kl(pair, "source") > paper_kl_bound(pair)


def test_bernoulli_kl():
    assert bernoulli_kl(0.5, 0.5) == 0.0
    assert bernoulli_kl(0.7, 0.3) == pytest.approx(0.4 * np.log(7 / 3))
    assert bernoulli_kl(0.5, 1.0) == np.inf
    assert bernoulli_kl(0.0, 0.5) == pytest.approx(np.log(2))


def _brute_force_bit_kl(pair, tau):
    """KL(law(D\\U, pi(D))) - KL(law(D\\U)) by enumerating (S'(a0), S(other), deleted sum)."""
    n0, n1, k = pair.counts[0], pair.counts[1], pair.k
    total = 0.0
    laws = []
    for i in (0, 1):
        mu = pair.means[i]
        law = {}
        for s0 in range(n0 - k + 1):
            for s1 in range(n1 + 1):
                for s in range(k + 1):
                    p = (
                        stats.binom.pmf(s0, n0 - k, mu[0])
                        * stats.binom.pmf(s1, n1, mu[1])
                        * stats.binom.pmf(s, k, mu[0])
                    )
                    arm = int(
                        np.argmax(lcb_scores(np.array([n0, n1]), np.array([s0 + s, s1], dtype=float), tau)[2])
                    )
                    law[(s0, s1, arm)] = law.get((s0, s1, arm), 0.0) + p
        laws.append(law)
    for key, p in laws[0].items():
        total += special.rel_entr(p, laws[1].get(key, 0.0))
    return total - retained_kl(pair)


@pytest.mark.parametrize("n_a0, k, n_other", [(4, 2, 3), (6, 3, 6), (7, 5, 2)])
def test_learner_bit_kl_matches_enumeration(n_a0, k, n_other):
    pair = fixed_sample_pair(n_a0, k, n_other)
    tau = 1 / pair.n
    assert learner_bit_kl(pair) == pytest.approx(_brute_force_bit_kl(pair, tau), rel=1e-9, abs=1e-14)
    assert learner_bit_kl(pair, source_counts=[]) == 0.0
    assert learner_bit_kl(pair, source_counts=[n_a0]) == pytest.approx(learner_bit_kl(pair))


# ----------------------------------------------------------------------------------------- sampling
def test_source_counts_law():
    rng = np.random.default_rng(1)
    pair = distribution_pair(40, 10, 3.0)  # P[N(a0) >= 10] is about 0.8 at d(a0) = 1/3
    for i in (0, 1):
        draws = sample_source_counts(pair, i, rng, size=200_000)
        assert draws.min() >= 10 and draws.max() <= 40
        pmf = pair.source_count_pmf(i)
        freq = np.bincount(draws, minlength=41) / draws.size
        # each frequency within a Hoeffding margin at 1e-9 (41 cells, both sides)
        assert np.all(np.abs(freq - pmf) <= hoeffding_margin(draws.size, 1.0, 1e-9 / 82))
    fixed = fixed_sample_pair(40, 20)
    assert np.all(sample_source_counts(fixed, 1, rng, size=5) == 40)


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["fixed", "distribution", "small_cstar"]), st.integers(0, 1), st.integers(0, 2**32 - 1)
)
def test_statistics_are_consistent_and_feed_unlearn_batch(kind, instance, seed):
    rng = np.random.default_rng(seed)
    pair = {
        "fixed": fixed_sample_pair(30, 10),
        "distribution": distribution_pair(40, 5, 2.0),
        "small_cstar": small_cstar_pair(12, 3, 1.5),
    }[kind]
    counts, sums, deleted = sample_pair_statistics(pair, instance, rng, size=50)
    assert counts.shape == sums.shape == (50, 2) and deleted.shape == (50,)
    assert np.all(counts.sum(axis=1) == pair.n) and np.all(counts[:, 0] >= pair.k)
    assert np.all((sums >= 0) & (sums <= counts)) and np.all(deleted <= np.minimum(pair.k, sums[:, 0]))
    assert np.all(sums[:, 0] - deleted <= counts[:, 0] - pair.k)
    arms, _, _ = unlearn_batch(
        counts, sums, 1 / pair.n, 0, pair.k, deleted, options=UnlearnOptions(method="rollback"), rng=rng
    )
    assert set(np.unique(arms)) <= {0, 1}


def test_dataset_and_request():
    rng = np.random.default_rng(2)
    pair = fixed_sample_pair(30, 10, n_other=20)
    data = sample_pair_dataset(pair, 1, rng)
    assert np.array_equal(data.counts, [30, 20]) and data.n_arms == 2
    idx = sample_pair_request(pair, data, rng)
    assert idx.size == 10 and np.all(data.arms[idx] == 0) and np.unique(idx).size == 10
    DeletionRequest.from_indices(data, idx).validate_against(fit_lcb(data))
    uni = sample_pair_request(pair, data, rng, scheme="uniform")
    assert uni.size == 10 and np.unique(uni).size == 10
    md = distribution_pair(40, 5, 2.0)
    for _ in range(20):
        d = sample_pair_dataset(md, 0, rng)
        assert len(d) == 40 and d.counts[0] >= 5
