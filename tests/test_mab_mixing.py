"""Mixing (chapter A5): Algorithm 4/5 through unlearn/reference/output_distributions/unlearn_batch,
the exact mixture distribution, Theorem A.10's bound, and bad input (Paper A Algorithms 4-5, E2)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bandit_unlearning.mab.bounds import gamma0_exact
from bandit_unlearning.mab.lcb import LCBState, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity, rollback
from bandit_unlearning.mab.mixing import theorem_a10_best_k_prime, theorem_a10_bound, theorem_a10_numerator
from bandit_unlearning.mab.unlearn import (
    noisy_argmax_distribution,
    output_distributions,
    reference,
    subset_sum_distribution,
    unlearn_batch,
    UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma

STATE = LCBState(counts=[60, 60, 60], reward_sums=[36.0, 33.0, 20.0], tau=1 / 180)  # a_hat = 0
U = DeletionRequest([0] * 12, [1.0] * 7 + [0.0] * 5)


def snapshot(state, request, rng):
    return (
        state.counts.copy(),
        state.reward_sums.copy(),
        request.arms.copy(),
        request.rewards.copy(),
        rng.bit_generator.state,
    )


def assert_unchanged(before, state, request, rng):
    for a, b in zip(before, snapshot(state, request, rng)):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


def partial_score(state, arm, k_rb, rolled_sum):
    c, s = state.counts.copy(), state.reward_sums.copy()
    c[arm] -= k_rb
    s[arm] -= rolled_sum
    return lcb_scores(c, s, state.tau)[2][arm]


# ----------------------------------------------------------------------------- the mechanism
def test_plan_k_prime_eta_and_sensitivity():
    L = STATE.log_term
    for kw, k_rb in (
        (dict(k_prime=6), 6),
        (dict(eta=0.5), 6),
        (dict(eta=0.25), 3),
        (dict(eta=0.3), 4),  # 3.6 -> 4
        (dict(eta=0.375), 5),
        (dict(eta=0.0), 0),
        (dict(k_prime=0), 0),
    ):  # 4.5 -> 5
        res = unlearn(
            STATE, U, options=UnlearnOptions(method="mixing", gamma=0.7, **kw), rng=np.random.default_rng(0)
        )[1]
        p = res.plans[0]
        assert p.k_rollback == k_rb and p.noised
        assert p.delta_f == pytest.approx(3 * (12 - k_rb) / (2 * (60 - k_rb)))
        assert p.sigma == pytest.approx(0.7 * p.delta_f)
        assert res.branch == ("gaussian" if k_rb == 0 else "mixing")
    full = unlearn(
        STATE, U, options=UnlearnOptions(method="mixing", gamma=0.7, eta=1.0), rng=np.random.default_rng(0)
    )[1]
    assert full.branch == "rollback" and full.sigma == 0 and full.rolled_back == tuple(range(12))
    np.testing.assert_array_equal(full.scores, rollback(STATE, U).scores)
    ex = unlearn(
        STATE,
        U,
        options=UnlearnOptions(method="mixing", gamma=0.7, k_prime=4, sensitivity="exact"),
        rng=np.random.default_rng(0),
    )[1]
    assert ex.delta_f == pytest.approx(exact_sensitivity(56, 8, L))


def test_not_the_learners_arm_rolls_back_everything_and_draws_nothing():
    req = DeletionRequest([1] * 10, [1.0] * 5 + [0.0] * 5)
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    res = unlearn(STATE, req, options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=3), rng=rng)[1]
    assert res.branch == "rollback" and res.plans[0].k_rollback == 10 and rng.bit_generator.state == before
    np.testing.assert_array_equal(res.scores, rollback(STATE, req).scores)


def test_draw_order_subset_then_normal():
    seed = 42
    res = unlearn(
        STATE,
        U,
        options=UnlearnOptions(method="mixing", gamma=0.9, k_prime=5),
        rng=np.random.default_rng(seed),
    )[1]
    g = np.random.default_rng(seed)
    subset = np.sort(g.choice(12, size=5, replace=False))
    z = g.standard_normal()
    assert res.rolled_back == tuple(int(i) for i in subset)
    expected = STATE.scores.copy()
    expected[0] = partial_score(STATE, 0, 5, U.rewards[subset].sum()) + res.sigma * z
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-15)
    assert res.arm == int(np.argmax(expected))


def test_reference_is_algorithm5():
    retrained = rollback(STATE, U)
    res = reference(
        retrained,
        U,
        options=UnlearnOptions(method="mixing", gamma=0.9, k_prime=5),
        learner_arm=0,
        rng=np.random.default_rng(7),
    )
    z = np.random.default_rng(7).standard_normal()
    expected = retrained.scores.copy()
    expected[0] += res.sigma * z
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-15)
    assert res.rolled_back == () and res.plans[0].k_rollback == 5 and res.world == "reference"
    other = reference(
        retrained,
        U,
        options=UnlearnOptions(method="mixing", gamma=0.9, k_prime=5),
        learner_arm=1,
        rng=np.random.default_rng(7),
    )
    assert other.branch == "rollback"


# ----------------------------------------------------------------------------- exact distributions
@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 0.3]), min_size=1, max_size=8), st.data())
def test_subset_sum_distribution_against_brute_force(values, data):
    size = data.draw(st.integers(0, len(values)))
    sums, probs = subset_sum_distribution(values, size)
    brute = [round(sum(c), 10) for c in itertools.combinations(values, size)]
    u, cnt = np.unique(brute, return_counts=True)
    np.testing.assert_allclose(sums, u, atol=1e-9)
    np.testing.assert_allclose(probs, cnt / cnt.sum(), rtol=0, atol=1e-12)


def test_subset_sum_distribution_binary_is_hypergeometric_and_bad_size():
    sums, probs = subset_sum_distribution([1] * 7 + [0] * 5, 6)
    np.testing.assert_array_equal(sums, np.arange(1, 7))
    np.testing.assert_allclose(probs, stats.hypergeom.pmf(np.arange(1, 7), 12, 7, 6))
    for bad in (-1, 13):
        with pytest.raises(ValueError, match="size"):
            subset_sum_distribution([1] * 7 + [0] * 5, bad)
    for bad in (2.0, True):
        with pytest.raises(TypeError, match="size"):
            subset_sum_distribution([1] * 7 + [0] * 5, bad)


@pytest.mark.parametrize(
    "rewards", [[1.0] * 7 + [0.0] * 5, [0.2, 0.9, 0.5, 0.5, 1.0, 0.0, 0.7, 0.1, 0.3, 0.6, 0.0, 1.0]]
)
def test_output_distributions_is_the_average_over_every_subset(rewards):
    """Mixing's unlearned distribution = mean over all C(12, 4) subsets of the closed form (exact)."""
    state = LCBState(counts=[60, 60, 60], reward_sums=[36.0, 35.0, 20.0], tau=1 / 180)
    req = DeletionRequest([0] * 12, rewards)
    p_u, p_r = output_distributions(state, req, options=UnlearnOptions(method="mixing", gamma=0.4, k_prime=4))
    sigma = 0.4 * 3 * 8 / (2 * 56)
    acc = np.zeros(3)
    subsets = list(itertools.combinations(range(12), 4))
    for sub in subsets:
        base = state.scores.copy()
        base[0] = partial_score(state, 0, 4, np.asarray(rewards)[list(sub)].sum())
        acc += noisy_argmax_distribution(base, 0, sigma)
    np.testing.assert_allclose(p_u, acc / len(subsets), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        p_r, noisy_argmax_distribution(rollback(state, req).scores, 0, sigma), atol=1e-12
    )


def test_mixture_matches_the_mechanism():
    """200k batch runs with hypergeometric rolled-back sums vs the exact mixture; Hoeffding at 1e-7 per cell."""
    state = LCBState([40, 40], [22.0, 21.0], 1 / 80)
    req = DeletionRequest([0] * 20, [1.0] * 10 + [0.0] * 10)
    p_u, p_r = output_distributions(
        state, req, options=UnlearnOptions(method="mixing", gamma=0.02, k_prime=10)
    )
    n = 200_000
    t = np.sqrt(np.log(2 * 4 / 1e-7) / (2 * n))
    rng = np.random.default_rng(3)
    c, s = np.tile(state.counts, (n, 1)), np.tile(state.reward_sums, (n, 1))
    for world, p in (("unlearned", p_u), ("reference", p_r)):
        arms, noised, _ = unlearn_batch(
            c,
            s,
            state.tau,
            0,
            20,
            np.full(n, 10.0),
            options=UnlearnOptions(method="mixing", gamma=0.02, k_prime=10),
            world=world,
            rng=rng,
        )
        assert noised.all()
        assert np.all(np.abs(np.bincount(arms, minlength=2) / n - p) <= t)


def test_worst_case_is_tight_for_analytic_exact_and_no_rollback_leaks():
    """Deleted rewards 1, kept 0: the shift after rolling back U' is exact_sensitivity(N-k', k-k')."""
    n, k, kp, eps, delta = 100, 10, 5, 3.0, 0.05  # large eps: the worst threshold t* is feasible
    L = np.log(4 * n)
    d_f = exact_sensitivity(n - kp, k - kp, L)
    sigma = analytic_gaussian_sigma(d_f, eps, delta)
    f1 = (k - kp) / (n - kp) - np.sqrt(L / (2 * (n - kp)))  # f_a0(D \ U'), all rolled-back rewards 1
    f2 = -np.sqrt(L / (2 * (n - k)))
    m_ = (f1 + f2) / 2 + eps * sigma**2 / (f1 - f2)
    b = np.sqrt(L / (2 * n))
    assert -b <= m_ <= min(1 - b, k / n - b)
    state = LCBState([n, n], [float(k), n * (m_ + b)], 1 / (2 * n))
    req = DeletionRequest([0] * k, [1.0] * k)
    p_u, p_r = output_distributions(
        state,
        req,
        options=UnlearnOptions(
            method="mixing", epsilon=eps, delta=delta, calibration="analytic", sensitivity="exact", k_prime=kp
        ),
    )
    assert hockey_stick_delta(p_u, p_r, eps) == pytest.approx(delta, rel=1e-6)
    # broken: the same noise on f_a0(D) (U' not rolled back) leaks
    leak_u = noisy_argmax_distribution(state.scores, 0, sigma)
    assert hockey_stick_delta(leak_u, p_r, eps) > 2 * delta


# ----------------------------------------------------------------------------- batch
@settings(max_examples=120, deadline=None)
@given(
    st.integers(20, 50),
    st.integers(20, 50),
    st.integers(2, 8),
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
    st.floats(0.05, 3.0),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["unlearned", "reference"]),
    st.data(),
)
def test_batch_equals_scalar_oracle(n0, n1, k, eta, gamma, seed, world, data):
    s0 = data.draw(st.integers(0, n0))  # reward sum of arm 0 (0/1 rewards)
    s1 = data.draw(st.integers(0, n1))
    ones = data.draw(st.integers(max(0, k - (n0 - s0)), min(k, s0)))  # ones among the k deleted
    state = LCBState([n0, n1], [float(s0), float(s1)], 1 / (n0 + n1))
    rewards = np.random.default_rng(seed).permutation([1.0] * ones + [0.0] * (k - ones))
    req = DeletionRequest([0] * k, rewards)
    kp = UnlearnOptions("mixing", gamma=1.0, eta=eta).k_rollback_for(k)
    g = np.random.default_rng(seed)
    subset = g.choice(k, size=kp, replace=False) if 0 < kp < k else np.arange(kp)
    z = g.standard_normal()
    rolled = rewards[subset].sum()
    try:
        arms, noised, sigma = unlearn_batch(
            np.array([[n0, n1]]),
            np.array([[s0, s1]], dtype=float),
            state.tau,
            0,
            k,
            np.array([float(ones)]),
            options=UnlearnOptions(method="mixing", gamma=gamma, eta=eta),
            world=world,
            rolled_sums=np.array([rolled]),
            z=np.array([z]),
        )
    except ValueError as err:
        assert "Lemma A.1" in str(err)
        with pytest.raises(ValueError, match="Lemma A.1"):
            unlearn(
                state,
                req,
                options=UnlearnOptions(method="mixing", gamma=gamma, eta=eta),
                rng=np.random.default_rng(seed),
            )[1]
        return
    if world == "unlearned":
        res = unlearn(
            state,
            req,
            options=UnlearnOptions(method="mixing", gamma=gamma, eta=eta),
            rng=np.random.default_rng(seed),
        )[1]
    else:
        g2 = np.random.default_rng(seed)
        if 0 < kp < k:
            g2.choice(k, size=kp, replace=False)
        res = reference(
            rollback(state, req),
            req,
            options=UnlearnOptions(method="mixing", gamma=gamma, eta=eta),
            learner_arm=state.arm,
            rng=g2,
        )
    assert res.arm == arms[0] and res.plans[0].noised == noised[0] and res.sigma == sigma[0]


def test_batch_mixing_bad_input_and_no_mutation():
    counts, sums = np.array([[40, 40]] * 3), np.array([[22.0, 21.0]] * 3)
    ds, rs = np.array([10.0, 10.0, 9.0]), np.array([5.0, 4.0, 5.0])
    copies = (counts.copy(), sums.copy(), ds.copy(), rs.copy())
    unlearn_batch(
        counts,
        sums,
        1 / 80,
        0,
        20,
        ds,
        options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=10),
        rolled_sums=rs,
        rng=np.random.default_rng(0),
    )
    for a, b in zip(copies, (counts, sums, ds, rs)):
        np.testing.assert_array_equal(a, b)
    good = dict(counts=counts, reward_sums=sums, tau=1 / 80, arm=0, k=20, deleted_sums=ds)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    for fields, data, match in (  # the options' fields beside gamma, the data's changes, the error
        (dict(k_prime=21), dict(), "k_prime"),
        (dict(eta=1.2), dict(), "eta"),
        (dict(k_prime=3, eta=0.5), dict(), "exactly one"),
        (dict(), dict(), "exactly one"),
        (dict(k_prime=10), dict(rolled_sums=rs[:2]), "rolled_sums"),
        (dict(k_prime=10), dict(rolled_sums=np.array([11.0, 5, 5])), "rolled_sums"),
        (dict(k_prime=10), dict(rolled_sums=np.array([-1.0, 5, 5])), "rolled_sums"),
        (dict(k_prime=15), dict(rolled_sums=np.array([4.0, 5, 5])), "rolled_sums"),  # 10 - 4 > 20 - 15
        (dict(k_prime=10), dict(deleted_sums=np.array([9.5, 10, 9])), "0/1 rewards"),
        (
            dict(k_prime=10, fallback="refuse"),
            dict(arm=[0, 1], deleted_sums=np.full((3, 2), 10.0)),
            "single-source",
        ),
    ):
        with pytest.raises(ValueError, match=match):
            options = UnlearnOptions(method="mixing", gamma=0.5, **fields)
            unlearn_batch(**(good | data), options=options, rng=rng)
    with pytest.raises(ValueError, match="rolled_sums only"):
        unlearn_batch(**good, options=UnlearnOptions(method="adaptive", gamma=0.5), rolled_sums=rs, rng=rng)
    with pytest.raises(ValueError, match="Lemma A.1"):  # 35 of 40 deleted, k' = 5: 30 of 35 fails A.1
        unlearn_batch(
            **(good | dict(k=35, deleted_sums=np.array([20.0, 20, 20]))),
            options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=5, fallback="refuse"),
            rng=rng,
        )
    assert rng.bit_generator.state == before


# ----------------------------------------------------------------------------- bad input, state unchanged
@pytest.mark.parametrize(
    "method, kwargs, match",
    [
        ("mixing", dict(gamma=0.5, k_prime=13), r"\[0, k\] = \[0, 12\]"),
        ("mixing", dict(gamma=0.5, k_prime=-1), "k_prime"),
        ("mixing", dict(gamma=0.5, eta=1.5), "eta"),
        ("mixing", dict(gamma=0.5, eta=-0.01), "eta"),
        ("mixing", dict(gamma=0.5, eta=np.nan), "eta"),
        ("mixing", dict(gamma=0.5, k_prime=3, eta=0.25), "exactly one.*both"),
        ("mixing", dict(gamma=0.5), "exactly one.*neither"),
        ("mixing", dict(k_prime=3), "adds noise"),
        ("adaptive", dict(gamma=0.5, k_prime=3), "parameters of method='mixing'"),
        ("rollback", dict(eta=0.5), "parameters of method='mixing'"),
    ],
)
def test_bad_mixing_options_raise_and_change_nothing(method, kwargs, match):
    rng = np.random.default_rng(4)
    before = snapshot(STATE, U, rng)
    for call in (
        lambda: unlearn(STATE, U, options=UnlearnOptions(method=method, **kwargs), rng=rng)[1],
        lambda: reference(
            rollback(STATE, U), U, options=UnlearnOptions(method=method, **kwargs), learner_arm=0, rng=rng
        ),
        lambda: output_distributions(STATE, U, options=UnlearnOptions(method=method, **kwargs)),
    ):
        with pytest.raises(ValueError, match=match):
            call()
    assert_unchanged(before, STATE, U, rng)


@pytest.mark.parametrize("kwargs", [dict(gamma=0.5, k_prime=2.5), dict(gamma=0.5, k_prime=True)])
def test_k_prime_of_a_wrong_type_is_a_type_error(kwargs):
    rng = np.random.default_rng(4)
    before = snapshot(STATE, U, rng)
    with pytest.raises(TypeError, match="k_prime"):
        unlearn(STATE, U, options=UnlearnOptions(method="mixing", **kwargs), rng=rng)[1]
    assert_unchanged(before, STATE, U, rng)


def test_k_prime_checked_even_when_rolling_back_everything_and_eta_type():
    rng = np.random.default_rng(4)
    with pytest.raises(ValueError, match="k_prime"):  # a_hat != 1, but k' = 13 > k = 12 is still refused
        unlearn(
            STATE,
            DeletionRequest([1] * 12, [0.0] * 12),
            options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=13),
            rng=rng,
        )[1]
    with pytest.raises(TypeError, match="eta"):
        unlearn(STATE, U, options=UnlearnOptions(method="mixing", gamma=0.5, eta="half"), rng=rng)[1]


def test_multi_source_mixing_and_e2_refused():
    rng = np.random.default_rng(4)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="single-source"):
        unlearn(
            STATE,
            DeletionRequest([0, 1], [1.0, 0.0]),
            options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=1, fallback="refuse"),
            rng=rng,
        )[1]
    big = DeletionRequest([0] * 50, [1.0] * 36 + [0.0] * 14)
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn(
            STATE,
            big,
            options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=10, fallback="refuse"),
            rng=rng,
        )[1]
    with pytest.raises(ValueError, match="Lemma A.1"):
        output_distributions(
            STATE, big, options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=10, fallback="refuse")
        )
    assert rng.bit_generator.state == before
    fb = unlearn(STATE, big, options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=10), rng=rng)[
        1
    ]  # default: rolled back
    assert fb.branch == "rollback" and fb.reason == "condition_failed" and fb.arm == rollback(STATE, big).arm
    # the condition is checked on (N - k', k - k') = (50, 40); the exact sensitivity is always available
    ok = unlearn(
        STATE,
        big,
        options=UnlearnOptions(method="mixing", gamma=0.5, k_prime=10, sensitivity="exact"),
        rng=rng,
    )[1]
    assert ok.delta_f == pytest.approx(exact_sensitivity(50, 40, STATE.log_term))


# ----------------------------------------------------------------------------- Theorem A.10
def test_theorem_a10_bound_formula_and_endpoints():
    n, m, n_a0, k, L = 3000, 5, 600, 80, np.log(15000)
    kp = np.arange(k + 1)
    for g in (0.01, 0.1, gamma0_exact(n_a0, k, L), 0.5, 5.0):
        b = theorem_a10_bound(n, m, n_a0, k, kp, g)
        np.testing.assert_allclose(
            b,
            np.sqrt(2 * L / (n_a0 - kp)) + 3 * (k - kp) * g / (2 * np.sqrt(2 * np.pi) * (n_a0 - kp)) + 4 / n,
        )
        assert b[1:-1].min() >= min(b[0], b[-1]) - 1e-12
        h = theorem_a10_numerator(n, m, n_a0, k, kp, g)
        assert np.all(np.diff(h) < 0)
        # the sign of h is the sign of the derivative
        db = np.diff(b)
        assert np.all((db > 0) <= (h[:-1] > 0))
    assert (
        theorem_a10_best_k_prime(n, m, n_a0, k, 0.1) == 0
        and theorem_a10_best_k_prime(n, m, n_a0, k, 1.0) == k
    )
    np.testing.assert_array_equal(theorem_a10_best_k_prime(n, m, n_a0, k, np.array([0.1, 1.0])), [0, k])


@pytest.mark.parametrize(
    "args",
    [
        (3000, 5, 600, 80, 81, 0.5),
        (3000, 5, 600, 80, -1, 0.5),
        (3000, 5, 600, 0, 0, 0.5),
        (3000, 5, 600, 590, 0, 0.5),
        (3000, 5, 600, 80, 10, 0.0),
        (3000, 5, 600, 80, 2.5, 0.5),
        (1, 5, 600, 80, 10, 0.5),
        (3000, 0, 600, 80, 10, 0.5),
    ],
)
def test_theorem_a10_bad_input(args):
    with pytest.raises(ValueError):
        theorem_a10_bound(*args)
