"""Tests of bandit_unlearning.privacy.gaussian and bandit_unlearning.privacy.audit (chapters P1a and P1b)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bandit_unlearning.privacy.audit import (
    AuditResult,
    ThresholdEvent,
    audit_epsilon,
    clopper_pearson_lower,
    clopper_pearson_upper,
    hockey_stick_delta,
    hockey_stick_epsilon,
    subset_events,
    threshold_events,
)
from bandit_unlearning.privacy.gaussian import (
    analytic_gaussian_sigma,
    check_delta,
    check_epsilon,
    classic_gaussian_sigma,
    gaussian_gamma,
    gaussian_delta,
    gaussian_epsilon,
)

epsilons = st.floats(min_value=1e-3, max_value=200.0)
deltas = st.floats(min_value=1e-12, max_value=0.5)
sensitivities = st.floats(min_value=1e-3, max_value=1e3)


def simplex(m):
    return (
        st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=m, max_size=m)
        .filter(lambda w: sum(w) > 1e-3)
        .map(lambda w: np.array(w) / sum(w))
    )


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(eps)
    with pytest.raises(ValueError, match="epsilon"):
        analytic_gaussian_sigma(1.0, eps, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_gamma(eps, 1e-5)


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        check_delta(delta)
    with pytest.raises(ValueError, match="delta"):
        analytic_gaussian_sigma(1.0, 0.5, delta)
    with pytest.raises(ValueError, match="delta"):
        classic_gaussian_sigma(1.0, 0.5, delta)


def test_non_numbers_are_type_errors():
    with pytest.raises(TypeError):
        check_epsilon("a lot")
    with pytest.raises(TypeError):
        check_delta(None)


@pytest.mark.parametrize("eps", [1.0, 1.5, 100.0])
def test_classic_refuses_large_epsilon(eps):
    with pytest.raises(ValueError, match="E1"):
        classic_gaussian_sigma(1.0, eps, 1e-5)


@pytest.mark.parametrize("sens", [-1.0, float("nan"), float("inf")])
def test_bad_sensitivity(sens):
    for f in (
        lambda: analytic_gaussian_sigma(sens, 1.0, 1e-5),
        lambda: classic_gaussian_sigma(sens, 0.5, 1e-5),
        lambda: gaussian_delta(1.0, sens, 1.0),
    ):
        with pytest.raises(ValueError, match="sensitivity"):
            f()


def test_zero_sensitivity_needs_no_noise():
    assert analytic_gaussian_sigma(0.0, 1.0, 1e-5) == 0.0
    assert classic_gaussian_sigma(0.0, 0.5, 1e-5) == 0.0
    assert gaussian_delta(1.0, 0.0, 0.5) == 0.0
    assert gaussian_epsilon(1.0, 0.0, 1e-5) == 0.0


def test_zero_sigma_is_not_private():
    assert gaussian_delta(0.0, 1.0, 3.0) == 1.0
    assert gaussian_epsilon(0.0, 1.0, 1e-3) == math.inf


def test_bad_profile_arguments():
    with pytest.raises(ValueError, match="sigma"):
        gaussian_delta(-1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_delta(1.0, 1.0, -0.5)


@pytest.mark.parametrize(
    "p, q, match",
    [
        ([0.5, 0.6], [0.5, 0.5], "sum to 1"),
        ([1.2, -0.2], [0.5, 0.5], "non-negative"),
        ([0.5, np.nan], [0.5, 0.5], "finite"),
        ([0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], "same shape"),
    ],
)
def test_hockey_stick_refuses_non_distributions(p, q, match):
    with pytest.raises(ValueError, match=match):
        hockey_stick_delta(p, q, 1.0)


def test_hockey_stick_tolerates_rounding():
    p = np.array([0.1] * 10)  # sums to 0.9999999999999999
    assert hockey_stick_delta(p, p, 0.0) == 0.0
    assert hockey_stick_delta([1 + 1e-12, -1e-12], [1.0, 0.0], 0.0) == pytest.approx(0.0, abs=1e-11)


def test_audit_bad_input():
    a = np.array([0, 1, 1])
    with pytest.raises(ValueError, match="confidence"):
        audit_epsilon(a, a, 1e-3, confidence=1.0)
    with pytest.raises(ValueError, match="delta"):
        audit_epsilon(a, a, 0.0)
    with pytest.raises(ValueError, match="non-empty"):
        audit_epsilon([], a, 1e-3)
    with pytest.raises(ValueError, match="events"):
        audit_epsilon([0.5, 1.5], [0.2, 0.1], 1e-3)  # real outputs need events
    with pytest.raises(ValueError, match="n_outcomes"):
        audit_epsilon(a, a, 1e-3, n_outcomes=1)


# ------------------------------------------------------------------------------------ calibrations
def test_known_values():
    assert gaussian_gamma(1.0, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)))
    assert classic_gaussian_sigma(2.0, 0.5, 1e-5) == pytest.approx(2 * gaussian_gamma(0.5, 1e-5))
    # Balle & Wang (2018): sigma ~ 3.73 for eps = 1, delta = 1e-5, Delta = 1
    assert analytic_gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)


@settings(max_examples=200, deadline=None)
@given(sensitivities, epsilons, deltas)
def test_analytic_sigma_inverts_the_profile(sens, eps, delta):
    sigma = analytic_gaussian_sigma(sens, eps, delta)
    assert gaussian_delta(sigma, sens, eps) <= delta
    assert gaussian_delta(sigma, sens, eps) == pytest.approx(delta, rel=1e-8)
    assert gaussian_delta(sigma * (1 - 1e-6), sens, eps) > delta  # smallest such sigma
    assert sigma / sens == pytest.approx(analytic_gaussian_sigma(1.0, eps, delta), rel=1e-12)  # scale-free


@settings(max_examples=100, deadline=None)
@given(epsilons, deltas)
def test_classic_dominates_analytic_below_one(eps, delta):
    eps = min(eps, 0.999)
    assert classic_gaussian_sigma(1.0, eps, delta) >= analytic_gaussian_sigma(1.0, eps, delta)


@settings(max_examples=100, deadline=None)
@given(
    sensitivities,
    epsilons,
    st.floats(min_value=1e-12, max_value=0.5),
    st.floats(min_value=1e-12, max_value=0.5),
)
def test_analytic_sigma_monotone(sens, eps, d1, d2):
    lo, hi = sorted((d1, d2))
    assert analytic_gaussian_sigma(sens, eps, lo) >= analytic_gaussian_sigma(sens, eps, hi) * (1 - 1e-12)
    assert analytic_gaussian_sigma(sens, eps, lo) >= analytic_gaussian_sigma(sens, 1.5 * eps, lo) * (
        1 - 1e-12
    )
    assert analytic_gaussian_sigma(2 * sens, eps, lo) == pytest.approx(
        2 * analytic_gaussian_sigma(sens, eps, lo)
    )


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0.01, max_value=100), sensitivities)
def test_profile_monotone_and_vectorised(t, sens):
    eps = np.linspace(0, 20, 41)
    prof = gaussian_delta(t * sens, sens, eps)
    assert prof.shape == eps.shape and np.all((prof >= 0) & (prof <= 1))
    assert np.all(np.diff(prof) <= 1e-15)  # decreasing in epsilon
    assert np.all(gaussian_delta(2 * t * sens, sens, eps) <= prof + 1e-15)  # decreasing in sigma
    assert prof[0] == pytest.approx(2 * stats.norm.cdf(1 / (2 * t)) - 1, abs=1e-12)  # eps = 0: TV distance


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0.05, max_value=50), st.floats(min_value=1e-10, max_value=0.5))
def test_gaussian_epsilon_inverts_profile(t, delta):
    eps = gaussian_epsilon(t, 1.0, delta)
    if eps == 0:
        assert gaussian_delta(t, 1.0, 0.0) <= delta
    else:
        assert gaussian_delta(t, 1.0, eps) == pytest.approx(delta, rel=1e-7)
        assert analytic_gaussian_sigma(1.0, eps, delta) == pytest.approx(t, rel=1e-7)


def test_extreme_epsilons_are_finite():
    for eps in (1e-6, 1e3, 1e4):
        for delta in (1e-15, 1e-5, 0.9):
            sigma = analytic_gaussian_sigma(1.0, eps, delta)
            assert np.isfinite(sigma) and sigma > 0
            assert gaussian_delta(sigma, 1.0, eps) == pytest.approx(delta, rel=1e-6)


# ------------------------------------------------------------------------------------ numerics at the extremes
# (epsilon, delta, smallest double >= the exact minimal sigma for sensitivity 1): the root of
# ln(Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)) = ln delta found with mpmath.findroot at 800 digits.
EXACT_MINIMAL_SIGMA = [
    (0.01, 1e-300, 3672.720103405569),  # the float profile put sigma 1.9e-11 below (true delta 2.6e-8 over)
    (1e-06, 1e-100, 20321506.70841061),  # 6e-8 below (true delta 2.5e-5 over)
    (0.1, 1e-100, 208.78885993163667),
    (1.0, 1e-300, 36.8654978941111),
    (1e-200, 1e-300, 2.0985770338319226e201),  # was 3.6e15: a factor 6e185 too small
    (0.5, 1e-05, 7.031826675582492),
    (10.0, 1e-100, 2.1327366227086317),
    (10000.0, 1e-30, 0.00766706657658482),
    (1e12, 1e-300, 7.071253049769674e-07),
    (1e15, 1e-05, 2.2360681907443385e-08),
]


@pytest.mark.parametrize("eps, delta, exact", EXACT_MINIMAL_SIGMA)
def test_analytic_sigma_never_under_noises_the_true_profile(eps, delta, exact):
    """Against the TRUE profile (not its float evaluation): never below the exact minimum, at most 1e-13 above."""
    sigma = analytic_gaussian_sigma(1.0, eps, delta)
    assert exact <= sigma <= exact * (1 + 1e-13)


def test_analytic_sigma_refuses_epsilon_beyond_its_limit():
    """At eps = 1e18 one ulp of sigma moves the profile from 0 to 1; it used to return 7.07e-10 (true delta = 1)."""
    with pytest.raises(ValueError, match="epsilon <= 1e\\+15"):
        analytic_gaussian_sigma(1.0, 1e18, 1e-5)
    assert analytic_gaussian_sigma(1.0, 1e15, 1e-5) > 0


def test_profile_limits_are_numbers(recwarn):
    """Huge sigma/Delta or epsilon: delta = 0; sigma/Delta -> 0: delta = 1 (these were nan)."""
    assert gaussian_delta(2e154, 1.0, 1.0) == 0.0
    assert gaussian_delta(1.0, 1e-300, 1.0) == 0.0
    assert gaussian_delta(1.0, 1.0, 1e300) == 0.0
    assert gaussian_delta(1.0, 5e-324, 0.0) == 0.0
    assert gaussian_delta(1e-300, 1.0, 1.0) == 1.0
    grid = gaussian_delta(
        np.geomspace(1e-300, 1e300, 13)[:, None], 1.0, np.geomspace(1e-300, 1.7e308, 13)[None]
    )
    assert np.all(np.isfinite(grid)) and np.all((grid >= 0) & (grid <= 1))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_solvers_never_leak_nan_from_brentq():
    """gaussian_epsilon used to raise brentq's 'function value at x=inf is NaN'; no epsilon in double range
    reaches delta there, so the answer is inf."""
    assert gaussian_epsilon(1e-300, 1.0, 1e-5) == math.inf
    assert gaussian_epsilon(1e-160, 1.0, 1e-5) == math.inf
    for eps, delta in ((1e-300, 1e-300), (1e-300, 0.5), (1e15, 1 - 1e-16), (1e-9, 1e-300)):
        sigma = analytic_gaussian_sigma(1.0, eps, delta)
        assert math.isfinite(sigma) and sigma > 0 and gaussian_delta(sigma, 1.0, eps) <= delta


# ------------------------------------------------------------------------------------ hockey stick
@settings(max_examples=200, deadline=None)
@given(st.integers(2, 6).flatmap(lambda m: st.tuples(simplex(m), simplex(m))), st.floats(0, 5))
def test_hockey_stick_properties(pq, eps):
    p, q = pq
    d = hockey_stick_delta(p, q, eps)
    assert d == pytest.approx(hockey_stick_delta(q, p, eps), abs=1e-15)  # symmetric
    assert 0 <= d <= 1
    assert d <= hockey_stick_delta(p, q, 0.0) + 1e-15  # decreasing in eps
    assert hockey_stick_delta(p, q, 0.0) == pytest.approx(0.5 * np.abs(p - q).sum(), abs=1e-12)  # TV
    assert hockey_stick_delta(p, p, 0.0) == 0.0
    if not np.allclose(p, q, atol=1e-9, rtol=0):
        assert hockey_stick_delta(p, q, 0.0) > 0


def test_hockey_stick_broadcasts_and_handles_infinite_epsilon():
    p, q = np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[0.4, 0.6], [0.0, 1.0]])
    out = hockey_stick_delta(p, q, np.array([0.0, 1.0]))
    assert out.shape == (2,)
    assert out[1] == 1.0  # disjoint supports: delta = 1 at any eps
    assert hockey_stick_delta(p[0], q[0], np.inf) == 0.0


def test_hockey_stick_epsilon():
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    eps = hockey_stick_epsilon(p, q, 1e-3)
    assert hockey_stick_delta(p, q, eps) == pytest.approx(1e-3, rel=1e-9)
    assert hockey_stick_epsilon(p, p, 1e-3) == 0.0
    assert hockey_stick_epsilon([0.99, 0.01], [1.0, 0.0], 1e-3) == math.inf
    assert hockey_stick_epsilon([0.9999, 0.0001], [1.0, 0.0], 1e-3) == 0.0  # TV below delta


# ------------------------------------------------------------------------------------ auditor
def test_clopper_pearson_edges():
    assert clopper_pearson_lower(0, 10, 0.05) == 0.0
    assert clopper_pearson_upper(10, 10, 0.05) == 1.0
    # exact: P[Bin(n, p_lo) >= k] = alpha
    lo = clopper_pearson_lower(7, 20, 0.01)
    assert stats.binom.sf(6, 20, lo) == pytest.approx(0.01, rel=1e-8)
    hi = clopper_pearson_upper(7, 20, 0.01)
    assert stats.binom.cdf(7, 20, hi) == pytest.approx(0.01, rel=1e-8)


def test_clopper_pearson_small_alpha():
    """Upper bound = the upper alpha quantile of Beta(k + 1, n - k), by beta.isf: beta.ppf(1 - alpha) was 7.9e-7
    too high at (0, 1000, 1e-12) and 2e-9 too LOW at (10, 200, 1e-10).  References: 1 - alpha^(1/n) for k = 0,
    otherwise bisection of mpmath's regularised incomplete beta at 50 digits."""
    assert clopper_pearson_upper(0, 1000, 1e-12) == pytest.approx(
        -math.expm1(math.log(1e-12) / 1000), rel=1e-14
    )
    assert clopper_pearson_upper(10, 200, 1e-10) == pytest.approx(0.21254281771401504, rel=1e-14)
    assert clopper_pearson_upper(3, 50, 1e-14) == pytest.approx(0.5777331432773347, rel=1e-14)
    assert clopper_pearson_lower(10, 200, 1e-10) == pytest.approx(0.00241536636866004, rel=1e-14)
    assert clopper_pearson_lower(3, 50, 1e-14) == pytest.approx(7.990710325638257e-07, rel=1e-14)


def test_event_families():
    assert len(subset_events(3)) == 6
    assert len(subset_events(12)) == 24
    assert [str(e) for e in threshold_events([0.5])] == ["{y > 0.5}", "{y <= 0.5}"]
    assert np.array_equal(ThresholdEvent(0.0, above=False)(np.array([-1.0, 1.0])), [True, False])


def test_audit_identical_mechanisms_gives_zero():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, 20_000), rng.integers(0, 4, 20_000)
    res = audit_epsilon(a, b, 1e-3, confidence=0.99, n_outcomes=4)
    assert isinstance(res, AuditResult) and res.epsilon_lower == 0.0 and res.n_hypotheses == 2 * 14


def test_audit_explicit_value_events():
    a = np.array([0] * 90 + [1] * 10)
    b = np.array([0] * 10 + [1] * 90)
    res = audit_epsilon(a, b, 0.01, confidence=0.9, events=[{0}, {1}])
    assert res.n_hypotheses == 4 and res.epsilon_lower > 0


def test_audit_sound_and_powerful_discrete():
    """Randomised response with eps = ln 4 on 3 outcomes.  Soundness fails w.p. <= 1 - confidence
    = 1e-7; power: at n = 50,000 per side, the event {0} alone has p = 0.8, q = 0.2 (true eps ln 4
    at delta -> ~1.386), and the CP bounds at the 1e-8 quantiles of the counts give > 1.2 (checked
    below without sampling), so the assertion on power fails w.p. < 2e-8."""
    p, q = np.array([0.8, 0.1, 0.1]), np.array([0.2, 0.1, 0.7])
    delta, n, conf = 1e-4, 50_000, 1 - 1e-7
    exact = hockey_stick_epsilon(p, q, delta)
    level = (1 - conf) / (2 * 2 * len(subset_events(3)))
    k_lo, k_hi = stats.binom.ppf(1e-8, n, 0.8), stats.binom.isf(1e-8, n, 0.2)
    sized = math.log((clopper_pearson_lower(k_lo, n, level) - delta) / clopper_pearson_upper(k_hi, n, level))
    assert sized > 1.2
    rng = np.random.default_rng(20260601)
    res = audit_epsilon(rng.choice(3, n, p=p), rng.choice(3, n, p=q), delta, confidence=conf, n_outcomes=3)
    assert res.epsilon_lower <= exact
    assert res.epsilon_lower > 1.2


def test_audit_real_outputs_sound_and_catches_half_noise():
    """Gaussian mechanism claimed (1, 1e-3)-private; audited on threshold events with confidence
    1 - 1e-7 (soundness fails w.p. <= 1e-7).  Half the noise has true eps ~1.47 at delta = 1e-3;
    power sized without sampling at one fixed event below."""
    delta, n, conf = 1e-3, 200_000, 1 - 1e-7
    sigma = analytic_gaussian_sigma(1.0, 1.0, delta)
    half = sigma / 2
    events = threshold_events(np.linspace(-4 * sigma, 0, 20))
    level = (1 - conf) / (2 * 2 * len(events))
    t = float(np.linspace(-4 * sigma, 0, 20)[np.argmin(np.abs(np.linspace(-4 * sigma, 0, 20) + 2 * half))])
    pa, pb = stats.norm.cdf(t / half), stats.norm.cdf((t - 1) / half)
    k_lo, k_hi = stats.binom.ppf(1e-8, n, pa), stats.binom.isf(1e-8, n, pb)
    sized = math.log((clopper_pearson_lower(k_lo, n, level) - delta) / clopper_pearson_upper(k_hi, n, level))
    assert sized > 1.0
    rng = np.random.default_rng(7)
    for s, caught in ((sigma, False), (half, True)):
        res = audit_epsilon(rng.normal(0, s, n), rng.normal(1, s, n), delta, confidence=conf, events=events)
        assert res.epsilon_lower <= gaussian_epsilon(s, 1.0, delta)
        assert (res.epsilon_lower > 1.0) == caught


def test_threshold_events_are_counted_as_calling_each_event():
    """The sorted count of threshold events (one sort per sample) against the plain loop that calls each
    event, with ties, nan, infinities, signed zeros, integer and boolean samples; and ``audit_epsilon``
    gives the same result as with the same events wrapped as plain callables (the loop path)."""
    from bandit_unlearning.privacy.audit import ThresholdEvent, _threshold_counts

    rng = np.random.default_rng(3)
    samples = [
        rng.normal(0, 1, 500),
        np.round(rng.normal(0, 1, 500), 1),
        np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, np.nan, 2.5]),
        rng.integers(-3, 4, 300),
        rng.random(50) < 0.5,
        np.array([7.0]),
    ]
    events = threshold_events([-np.inf, -1.0, -0.0, 0.0, 0.1, 1.0, 2.5, np.inf]) + [
        ThresholdEvent(0.3, False)
    ]
    for x in samples:
        loop = np.array([np.asarray(e(x), dtype=bool).sum() for e in events], dtype=float)
        fast = _threshold_counts(x, events)
        assert fast.dtype == loop.dtype and np.array_equal(fast, loop), x
    a, b = rng.normal(0, 1, 4000), rng.normal(0.5, 1, 4000)
    fixed = threshold_events(np.linspace(-2, 2, 9))
    wrapped = [lambda y, e=e: e(y) for e in fixed]
    fast, loop = audit_epsilon(a, b, 1e-3, events=fixed), audit_epsilon(a, b, 1e-3, events=wrapped)
    assert fast.epsilon_lower > 0 and fast.epsilon_lower == loop.epsilon_lower
    assert (fast.count_a, fast.count_b, fast.direction) == (loop.count_a, loop.count_b, loop.direction)
