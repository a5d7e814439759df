"""Adaptive single-source unlearning (chapters A3a-A3d): Algorithms 2 and 3, exact output distributions,
the batch version, Theorems 3.3/3.5 bounds, and bad input (Paper A §3, E1-E3, E6, E7, E12)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bandit_unlearning.mab.bounds import (
    gamma0_exact,
    gamma0_paper,
    gaussian_branch_bound,
    rollback_branch_bound,
    theorem33_bound,
    theorem33_order,
    theorem35_bound,
)
from bandit_unlearning.mab.data import OfflineDataset, sample_statistics_fixed
from bandit_unlearning.mab.lcb import LCBState, fit_lcb
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity, paper_sensitivity, rollback
from bandit_unlearning.mab.unlearn import (
    noisy_argmax_distribution,
    output_distributions,
    plan_unlearning,
    reference,
    SourcePlan,
    unlearn_batch,
    UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_gamma


def req(arm, k, s):
    """k points of ``arm`` with 0/1 rewards summing to s."""
    return DeletionRequest([arm] * k, [1.0] * s + [0.0] * (k - s))


# arm 0 is the learner's choice; N(0) = 200, L = ln(3 * 600)
STATE = LCBState(counts=[200, 200, 200], reward_sums=[120.0, 100.0, 90.0], tau=1 / 600)
U = req(0, 20, 12)


def snapshot(state, request, rng):
    return (
        state.counts.copy(),
        state.reward_sums.copy(),
        state.tau,
        request.arms.copy(),
        request.rewards.copy(),
        rng.bit_generator.state,
    )


def assert_unchanged(before, state, request, rng):
    after = snapshot(state, request, rng)
    for a, b in zip(before, after):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


# ----------------------------------------------------------------------------- the three methods
def test_gaussian_branch_records_everything_and_adds_sigma_times_next_normal():
    L = STATE.log_term
    g0 = gamma0_paper(200, 20, L)
    res = unlearn(
        STATE, U, options=UnlearnOptions(method="adaptive", gamma=0.9 * g0), rng=np.random.default_rng(3)
    )[1]
    z = np.random.default_rng(3).standard_normal()
    delta_f = paper_sensitivity(200, 20)
    assert res.branch == "gaussian" and res.branches == {0: "gaussian"} and res.source_arms == (0,)
    assert res.sigma == pytest.approx(delta_f * 0.9 * g0) and res.delta_f == pytest.approx(delta_f)
    assert res.gamma0 == pytest.approx(g0) and res.gamma == pytest.approx(0.9 * g0)
    assert (res.method, res.threshold, res.calibration, res.sensitivity) == (
        "adaptive",
        "paper",
        "paper",
        "paper",
    )
    assert res.calibration_proven is None and res.world == "unlearned" and res.learner_arm == 0
    expected = STATE.scores.copy()
    expected[0] += res.sigma * z
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-15)
    assert res.arm == int(np.argmax(expected))
    with pytest.raises(ValueError):
        res.scores[0] = 0.0


def test_rollback_branch_equals_retraining_and_draws_nothing():
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    res = unlearn(STATE, U, options=UnlearnOptions(method="adaptive", gamma=10.0), rng=rng)[1]
    assert res.branch == "rollback" and res.sigma == 0 and rng.bit_generator.state == before
    np.testing.assert_array_equal(res.scores, rollback(STATE, U).scores)
    forced = unlearn(STATE, U, options=UnlearnOptions(method="rollback"), rng=rng)[
        1
    ]  # no privacy level needed for rollback
    assert forced.branch == "rollback" and forced.calibration_proven is True


def test_branch_rule_needs_the_learners_arm():
    # deleting from an arm that is not a_hat always rolls back under Algorithm 2
    res = unlearn(
        STATE,
        req(1, 20, 10),
        options=UnlearnOptions(method="adaptive", gamma=1e-3),
        rng=np.random.default_rng(0),
    )[1]
    assert res.branch == "rollback"
    assert (
        unlearn(
            STATE,
            req(1, 20, 10),
            options=UnlearnOptions(method="gaussian", gamma=1e-3),
            rng=np.random.default_rng(0),
        )[1].branch
        == "gaussian"
    )


def test_threshold_rules_and_scale():
    L = STATE.log_term
    g0, gs = gamma0_paper(200, 20, L), gamma0_exact(200, 20, L)
    assert gs < g0
    gam = (g0 + gs) / 2
    assert (
        unlearn(STATE, U, options=UnlearnOptions(method="adaptive", gamma=gam), rng=np.random.default_rng(0))[
            1
        ].branch
        == "gaussian"
    )
    assert (
        unlearn(
            STATE,
            U,
            options=UnlearnOptions(method="adaptive", gamma=gam, threshold="exact"),
            rng=np.random.default_rng(0),
        )[1].branch
        == "rollback"
    )
    r = unlearn(
        STATE,
        U,
        options=UnlearnOptions(method="adaptive", gamma=1.2 * g0, threshold_scale=1.3),
        rng=np.random.default_rng(0),
    )[1]
    assert r.branch == "gaussian" and r.gamma0 == pytest.approx(1.3 * g0)


def test_calibrations():
    eps, delta = 0.5, 1e-5
    d_f = paper_sensitivity(200, 20)
    for cal, expected in (
        ("paper", d_f * gaussian_gamma(eps, delta)),
        ("classic", d_f * gaussian_gamma(eps, delta)),
        ("analytic", analytic_gaussian_sigma(d_f, eps, delta)),
    ):
        r = unlearn(
            STATE,
            U,
            options=UnlearnOptions(method="gaussian", epsilon=eps, delta=delta, calibration=cal),
            rng=np.random.default_rng(0),
        )[1]
        assert r.sigma == pytest.approx(expected, rel=1e-12) and r.calibration == cal
        assert r.calibration_proven is True and r.epsilon == eps and r.delta == delta
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    for cal in ("paper", "classic"):  # unproven at eps >= 1: refused, nothing drawn
        with pytest.raises(ValueError, match=r"only proven for epsilon < 1.*calibration='analytic'"):
            unlearn(
                STATE,
                U,
                options=UnlearnOptions(method="gaussian", epsilon=2.0, delta=delta, calibration=cal),
                rng=gen,
            )[1]
    assert gen.bit_generator.state == before
    r = unlearn(
        STATE,
        U,
        options=UnlearnOptions(method="gaussian", epsilon=2.0, delta=delta, calibration="analytic"),
        rng=gen,
    )[1]
    assert r.calibration_proven is True
    r = unlearn(
        STATE,
        U,
        options=UnlearnOptions(method="gaussian", epsilon=0.5, delta=delta, sensitivity="exact"),
        rng=np.random.default_rng(0),
    )[1]
    assert r.delta_f == pytest.approx(exact_sensitivity(200, 20, STATE.log_term)) and r.sensitivity == "exact"


def test_paper_sensitivity_refused_only_when_noise_would_use_it():
    big = req(0, 190, 115)  # 190 > 200 - sqrt(200 L / 2)
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn(
            STATE,
            big,
            options=UnlearnOptions(method="gaussian", gamma=0.5, fallback="refuse"),
            rng=np.random.default_rng(0),
        )[1]
    fb = unlearn(
        STATE, big, options=UnlearnOptions(method="gaussian", gamma=0.5), rng=np.random.default_rng(0)
    )[1]  # default: rolled back
    assert (
        fb.branch == "rollback"
        and fb.reason == "condition_failed"
        and fb.fell_back
        and fb.reference == "literal"
    )
    assert fb.arm == rollback(STATE, big).arm and "Lemma A.1" in fb.notes[0]
    r = unlearn(
        STATE,
        big,
        options=UnlearnOptions(method="gaussian", gamma=0.5, sensitivity="exact"),
        rng=np.random.default_rng(0),
    )[1]
    assert r.delta_f == pytest.approx(exact_sensitivity(200, 190, STATE.log_term))
    # Algorithm 2 rolls back here (gamma >= gamma0), so the sensitivity is never used
    assert (
        unlearn(
            STATE, big, options=UnlearnOptions(method="adaptive", gamma=50.0), rng=np.random.default_rng(0)
        )[1].branch
        == "rollback"
    )


def test_deleting_a_whole_arm():
    state = LCBState([5, 30], [5.0, 10.0], tau=1 / 35)
    whole = req(0, 5, 5)
    assert (
        unlearn(state, whole, options=UnlearnOptions(method="rollback"), rng=np.random.default_rng(0))[
            1
        ].scores[0]
        == -1
    )
    assert gamma0_paper(5, 5, state.log_term) == np.inf
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn(
            state,
            whole,
            options=UnlearnOptions(method="adaptive", gamma=1.0, fallback="refuse"),
            rng=np.random.default_rng(0),
        )[1]
    assert (
        unlearn(
            state, whole, options=UnlearnOptions(method="adaptive", gamma=1.0), rng=np.random.default_rng(0)
        )[1].reason
        == "condition_failed"
    )
    r = unlearn(
        state,
        whole,
        options=UnlearnOptions(method="adaptive", gamma=1.0, sensitivity="exact"),
        rng=np.random.default_rng(0),
    )[1]
    assert r.branch == "gaussian" and r.delta_f == pytest.approx(exact_sensitivity(5, 5, state.log_term))


def test_reference_matches_unlearn_plan_and_uses_retrained_scores():
    retrained = rollback(STATE, U)
    g = 0.5 * gamma0_paper(200, 20, STATE.log_term)
    r_u = unlearn(STATE, U, options=UnlearnOptions(method="adaptive", gamma=g), rng=np.random.default_rng(9))[
        1
    ]
    r_r = reference(
        retrained,
        U,
        options=UnlearnOptions(method="adaptive", gamma=g),
        learner_arm=STATE.arm,
        rng=np.random.default_rng(9),
    )
    assert r_r.world == "reference" and r_r.plans == r_u.plans and r_r.gamma0 == r_u.gamma0
    np.testing.assert_allclose(r_r.scores - retrained.scores, r_u.scores - STATE.scores, atol=1e-15)
    # fit_lcb on D \ U with the training tau is an equally valid retrained state (E12)
    D = OfflineDataset([0] * 6 + [1] * 6, [1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0], 2)
    state = fit_lcb(D)
    U2 = DeletionRequest.from_indices(D, [0, 1])
    a = reference(
        fit_lcb(D.without([0, 1]), tau=state.tau),
        U2,
        options=UnlearnOptions(method="rollback"),
        learner_arm=state.arm,
        rng=np.random.default_rng(0),
    )
    np.testing.assert_array_equal(a.scores, rollback(state, U2).scores)


# ----------------------------------------------------------------------------- exact distributions
def test_noisy_argmax_distribution_ties_and_point_masses():
    f = np.array([0.3, 0.5, 0.5])
    np.testing.assert_allclose(
        noisy_argmax_distribution(f, 0, 0.2), [stats.norm.cdf(-1.0), stats.norm.cdf(1.0), 0]
    )
    np.testing.assert_array_equal(noisy_argmax_distribution(f, 0, 0.0), [0, 1, 0])  # lowest index wins ties
    flat = np.full(3, 0.4)
    np.testing.assert_allclose(noisy_argmax_distribution(flat, 2, 1.0), [0.5, 0, 0.5])
    np.testing.assert_array_equal(noisy_argmax_distribution(flat, 2, 0.0), [1, 0, 0])
    np.testing.assert_array_equal(noisy_argmax_distribution([0.7], 0, 1.0), [1.0])
    batch = noisy_argmax_distribution(np.array([[0.1, 0.2], [0.3, 0.2]]), 1, np.array([0.1, 0.0]))
    np.testing.assert_allclose(batch, [[stats.norm.cdf(-1), stats.norm.cdf(1)], [1, 0]])
    for bad in (dict(arm=3, sigma=0.1), dict(arm=0, sigma=-1.0), dict(arm=0, sigma=np.nan)):
        with pytest.raises(ValueError):
            noisy_argmax_distribution(f, **bad)


def test_output_distributions_rollback_is_identical_point_masses():
    p_u, p_r = output_distributions(STATE, U, options=UnlearnOptions(method="adaptive", gamma=10.0))
    np.testing.assert_array_equal(p_u, p_r)
    assert p_u.max() == 1 and hockey_stick_delta(p_u, p_r, 0.0) == 0


def test_output_distributions_match_the_mechanism():
    """Frequencies of 200k batch runs vs the closed form; Hoeffding at 1e-7 per arm and world."""
    g = 0.5 * gamma0_paper(200, 20, STATE.log_term)
    state = LCBState([200, 200, 200], [120.0, 117.0, 90.0], 1 / 600)  # close competitor
    p_u, p_r = output_distributions(state, U, options=UnlearnOptions(method="adaptive", gamma=g))
    assert 0.05 < p_u[0] < 0.95 and p_u[0] != p_r[0]
    n = 200_000
    t = np.sqrt(np.log(2 * 6 / 1e-7) / (2 * n))
    rng = np.random.default_rng(11)
    for world, p in (("unlearned", p_u), ("reference", p_r)):
        arms, noised, _ = unlearn_batch(
            np.tile(state.counts, (n, 1)),
            np.tile(state.reward_sums, (n, 1)),
            state.tau,
            0,
            20,
            np.full(n, 12.0),
            options=UnlearnOptions(method="adaptive", gamma=g),
            world=world,
            rng=rng,
        )
        assert noised.all()
        assert np.all(np.abs(np.bincount(arms, minlength=3) / n - p) <= t)


def test_exact_privacy_on_a_worst_case_and_half_noise_violates():
    """Deleted 1 / kept 0, competitor at the privacy-loss threshold: analytic + exact is tight."""
    n, k, eps, delta = 100, 10, 0.5, 0.05
    L = np.log(4 * n)
    d_f = exact_sensitivity(n, k, L)
    sigma = analytic_gaussian_sigma(d_f, eps, delta)
    f1, f2 = k / n - np.sqrt(L / (2 * n)), -np.sqrt(L / (2 * (n - k)))
    m_ = (f1 + f2) / 2 + eps * sigma**2 / (f1 - f2)
    b = np.sqrt(L / (2 * n))
    assert -b <= m_ <= 1 - b
    state = LCBState([n, n], [float(k), n * (m_ + b)], 1 / (2 * n))
    p_u, p_r = output_distributions(
        state,
        req(0, k, k),
        options=UnlearnOptions(
            method="gaussian", epsilon=eps, delta=delta, calibration="analytic", sensitivity="exact"
        ),
    )
    assert hockey_stick_delta(p_u, p_r, eps) == pytest.approx(delta, rel=1e-6)
    assert hockey_stick_delta(p_u, p_r, eps) <= delta * (1 + 1e-9)
    m_half = (f1 + f2) / 2 + eps * (sigma / 2) ** 2 / (f1 - f2)
    state_h = LCBState([n, n], [float(k), n * (m_half + b)], 1 / (2 * n))
    h_u = noisy_argmax_distribution(state_h.scores, 0, sigma / 2)
    h_r = noisy_argmax_distribution(rollback(state_h, req(0, k, k)).scores, 0, sigma / 2)
    assert hockey_stick_delta(h_u, h_r, eps) > 2 * delta


# ----------------------------------------------------------------------------- batch vs scalar oracle
option_sets = st.sampled_from(
    [
        ("adaptive", dict(gamma=0.8)),
        ("adaptive", dict(gamma=0.3, threshold="exact")),
        ("adaptive", dict(epsilon=0.9, delta=0.2, calibration="analytic", sensitivity="exact")),
        ("adaptive", dict(epsilon=0.5, delta=0.3, calibration="classic", threshold_scale=1.3)),
        ("gaussian", dict(gamma=0.5)),
        ("rollback", dict()),
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(12, 40), st.floats(0, 1)), min_size=2, max_size=4),
    st.integers(0, 3),
    st.integers(1, 6),
    st.floats(0, 1),
    option_sets,
    st.integers(0, 2**32 - 1),
    st.sampled_from(["unlearned", "reference"]),
)
def test_batch_equals_scalar_oracle(arms, arm, k, frac, option, seed, world):
    method, opts = option
    counts = np.array([c for c, _ in arms])
    sums = np.round(np.array([c * f for c, f in arms]))
    arm = arm % counts.size
    s = int(round(frac * min(k, sums[arm])))
    s = max(s, int(sums[arm] - (counts[arm] - k)))  # kept rewards must fit in [0, 1]
    tau = 1 / counts.sum()
    state = LCBState(counts, sums, tau)
    request = req(arm, k, s)
    z = np.random.default_rng(seed).standard_normal()

    def scalar():
        if world == "unlearned":
            return unlearn(
                state, request, options=UnlearnOptions(method=method, **opts), rng=np.random.default_rng(seed)
            )[1]
        return reference(
            rollback(state, request),
            request,
            options=UnlearnOptions(method=method, **opts),
            learner_arm=state.arm,
            rng=np.random.default_rng(seed),
        )

    try:
        arms_b, noised_b, sigma_b = unlearn_batch(
            counts[None],
            sums[None],
            tau,
            arm,
            k,
            np.array([float(s)]),
            options=UnlearnOptions(method=method, **opts),
            world=world,
            z=np.array([z]),
        )
    except ValueError as err:  # e.g. 3k/2N where Lemma A.1 fails: both refuse alike
        assert "Lemma A.1" in str(err)
        with pytest.raises(ValueError, match="Lemma A.1"):
            scalar()
        return
    res = scalar()
    assert res.arm == arms_b[0] and (res.branch == "gaussian") == noised_b[0] and res.sigma == sigma_b[0]


def test_batch_does_not_modify_inputs_and_refuses_bad_input():
    counts, sums = np.array([[20, 20]] * 3), np.array([[10.0, 5.0]] * 3)
    ds = np.array([2.0, 3.0, 1.0])
    copies = (counts.copy(), sums.copy(), ds.copy())
    alg2 = UnlearnOptions(method="adaptive", gamma=0.5)
    unlearn_batch(counts, sums, 0.025, 0, 5, ds, options=alg2, rng=np.random.default_rng(0))
    for a, b in zip(copies, (counts, sums, ds)):
        np.testing.assert_array_equal(a, b)
    good = dict(counts=counts, reward_sums=sums, tau=0.025, arm=0, k=5, deleted_sums=ds, options=alg2)
    for bad, err in (
        (dict(k=21), ValueError),
        (dict(arm=2), ValueError),
        (dict(deleted_sums=ds[:2]), ValueError),
        (dict(deleted_sums=np.array([6.0, 1, 1])), ValueError),
        (dict(reward_sums=sums[:, :1]), ValueError),
        (dict(tau=1.5), ValueError),
        (
            dict(
                options=UnlearnOptions(method="mixing", k_prime=2, gamma=0.5, fallback="refuse"),
                arm=[0, 1],
                deleted_sums=np.array([[2.0, 1.0]] * 3),
            ),
            ValueError,
        ),
    ):
        with pytest.raises(err):
            unlearn_batch(**(good | bad), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="world"):
        unlearn_batch(**good, rng=np.random.default_rng(0), world="other")
    with pytest.raises(TypeError, match="rng"):
        unlearn_batch(**good, rng="0")
    unlearn_batch(**good)  # rng=None: a fresh generator from OS entropy
    with pytest.raises(ValueError):
        unlearn_batch(**good, z=np.zeros(2))
    gauss = dict(k=18, deleted_sums=np.array([9.0, 9, 9]))
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn_batch(
            **(good | gauss | dict(options=UnlearnOptions(method="gaussian", gamma=0.5, fallback="refuse"))),
            rng=np.random.default_rng(0),
        )
    _, noised, _ = unlearn_batch(
        **(good | gauss | dict(options=UnlearnOptions(method="gaussian", gamma=0.5))),
        rng=np.random.default_rng(0),
    )  # default: rolled back
    assert not noised.any()


def test_batch_takes_its_options_one_way():
    """The method and its settings go in ``options=UnlearnOptions(...)`` and nowhere else, as for ``unlearn``:
    the old convenience forms (a method positional or by keyword, loose option fields) are TypeErrors, and
    so are no options at all; nothing is drawn before the refusal."""
    counts, sums, ds = np.array([[20, 20]] * 3), np.array([[10.0, 5.0]] * 3), np.array([2.0, 3.0, 1.0])
    data = (counts, sums, 0.025, 0, 5, ds)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    for call, match in (
        (lambda: unlearn_batch(*data, method="adaptive", gamma=0.5, rng=rng), "method"),
        (lambda: unlearn_batch(*data, "adaptive", rng=rng), "positional"),
        (
            lambda: unlearn_batch(*data, options=UnlearnOptions("adaptive", gamma=0.5), gamma=0.5, rng=rng),
            "gamma",
        ),
        (lambda: unlearn_batch(*data, rng=rng), "options must be an UnlearnOptions"),
        (lambda: unlearn_batch(*data, options="adaptive", rng=rng), "options must be"),
    ):
        with pytest.raises(TypeError, match=match):
            call()
    assert rng.bit_generator.state == before
    arms, _, _ = unlearn_batch(*data, options=UnlearnOptions("adaptive", gamma=0.5), z=np.zeros(3))
    assert arms.shape == (3,)


# ----------------------------------------------------------------------------- bad input, state unchanged
BAD_OPTIONS = [
    (dict(epsilon=0.0, delta=1e-5), ValueError, "epsilon"),
    (dict(epsilon=-1.0, delta=1e-5), ValueError, "epsilon"),
    (dict(epsilon=np.nan, delta=1e-5), ValueError, "epsilon"),
    (dict(epsilon=0.5, delta=0.0), ValueError, "delta"),
    (dict(epsilon=0.5, delta=1.0), ValueError, "delta"),
    (dict(epsilon=0.5, delta=1.5), ValueError, "delta"),
    (dict(gamma=0.5, epsilon=0.5, delta=1e-5), ValueError, "not both"),
    (dict(gamma=0.5, delta=1e-5), ValueError, "not both"),
    (dict(), ValueError, "give gamma"),
    (dict(epsilon=0.5), ValueError, "together"),
    (dict(delta=1e-5), ValueError, "together"),
    (dict(gamma=0.0), ValueError, "gamma"),
    (dict(gamma=np.inf), ValueError, "gamma"),
    (dict(gamma="big"), TypeError, "gamma"),
    (dict(epsilon=1.0, delta=1e-5, calibration="classic"), ValueError, "epsilon < 1"),
    (dict(epsilon=3.0, delta=1e-5, calibration="classic"), ValueError, "epsilon < 1"),
    (dict(gamma=0.5, calibration="analytic"), ValueError, "needs epsilon and delta"),
    (dict(gamma=0.5, calibration="classic"), ValueError, "needs epsilon and delta"),
    (dict(gamma=0.5, calibration="exact"), ValueError, "calibration"),
    (dict(gamma=0.5, sensitivity="loose"), ValueError, "sensitivity"),
    (dict(gamma=0.5, threshold="tight"), ValueError, "threshold"),
    (dict(gamma=0.5, threshold_scale=0.0), ValueError, "threshold_scale"),
    (dict(gamma=0.5, threshold_scale=-1.3), ValueError, "threshold_scale"),
]


@pytest.mark.parametrize("kwargs, err, match", BAD_OPTIONS)
def test_bad_options_raise_and_change_nothing(kwargs, err, match):
    rng = np.random.default_rng(4)
    before = snapshot(STATE, U, rng)
    for call in (
        lambda: unlearn(STATE, U, options=UnlearnOptions(method="adaptive", **kwargs), rng=rng)[1],
        lambda: reference(
            rollback(STATE, U), U, options=UnlearnOptions(method="adaptive", **kwargs), learner_arm=0, rng=rng
        ),
        lambda: output_distributions(STATE, U, options=UnlearnOptions(method="adaptive", **kwargs)),
    ):
        with pytest.raises(err, match=match):
            call()
    assert_unchanged(before, STATE, U, rng)


@pytest.mark.parametrize(
    "request_, match",
    [
        (DeletionRequest([5], [0.0]), "unknown arm"),
        (req(0, 201, 0), "more deletions than the arm holds"),
        (req(0, 130, 130), "request does not match the state"),  # deleted sum 130 > S(0) = 120
        (req(1, 150, 0), "request does not match the state"),  # 100 left for 50 points
        (DeletionRequest([0, 5], [0.0, 1.0]), "unknown arm"),  # multi-source with an unknown arm
    ],
)
def test_bad_requests_raise_and_change_nothing(request_, match):
    rng = np.random.default_rng(4)
    before = snapshot(STATE, request_, rng)
    for method in ("adaptive", "gaussian", "rollback"):
        with pytest.raises(ValueError, match=match):
            unlearn(STATE, request_, options=UnlearnOptions(method=method, gamma=0.5), rng=rng)[1]
        with pytest.raises(ValueError, match=match):
            output_distributions(STATE, request_, options=UnlearnOptions(method=method, gamma=0.5))
    assert_unchanged(before, STATE, request_, rng)


def test_bad_types_and_reference_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="method"):
        unlearn(STATE, U, options=UnlearnOptions(method="mixed", gamma=0.5), rng=rng)[1]
    with pytest.raises(ValueError, match="k_prime"):  # mixing needs k' or eta
        unlearn(STATE, U, options=UnlearnOptions(method="mixing", gamma=0.5), rng=rng)[1]
    with pytest.raises(TypeError, match="rng"):
        unlearn(STATE, U, options=UnlearnOptions(method="adaptive", gamma=0.5), rng=0.5)[1]
    with pytest.raises(TypeError, match="rng"):
        unlearn(STATE, U, options=UnlearnOptions(method="adaptive", gamma=0.5), rng="0")[1]
    with pytest.raises(TypeError, match="rng"):
        reference(
            rollback(STATE, U),
            U,
            options=UnlearnOptions(method="adaptive", gamma=0.5),
            learner_arm=STATE.arm,
            rng="seed",
        )
    # rng=None (the default) draws from a generator seeded with OS entropy: two calls differ
    noisy = [
        unlearn(STATE, U, options=UnlearnOptions(method="gaussian", gamma=0.5))[1].scores for _ in range(2)
    ]
    assert not np.array_equal(noisy[0], noisy[1])
    with pytest.raises(TypeError):
        unlearn(
            (STATE.counts, STATE.reward_sums),
            U,
            options=UnlearnOptions(method="adaptive", gamma=0.5),
            rng=rng,
        )[1]
    with pytest.raises(TypeError):
        unlearn(STATE, ([0], [1.0]), options=UnlearnOptions(method="adaptive", gamma=0.5), rng=rng)[1]
    for bad, err in ((3, ValueError), (-1, ValueError), (True, TypeError), (0.5, TypeError)):
        with pytest.raises(err, match="learner_arm"):
            reference(
                rollback(STATE, U),
                U,
                options=UnlearnOptions(method="adaptive", gamma=0.5),
                learner_arm=bad,
                rng=rng,
            )
    with pytest.raises(ValueError, match="unknown arm"):
        reference(
            rollback(STATE, U),
            DeletionRequest([7], [0.0]),
            options=UnlearnOptions(method="adaptive", gamma=0.5),
            learner_arm=0,
            rng=rng,
        )


def test_plan_is_generic_per_source_arm():
    opts = UnlearnOptions("adaptive", gamma=0.1)
    plans, g0 = plan_unlearning(0, [200, 200, 200], [20, 0, 0], np.log(1800), opts)
    assert plans == (
        SourcePlan(
            0, 20, 200, 0, paper_sensitivity(200, 20), paper_sensitivity(200, 20) * 0.1, "branch_rule"
        ),
    )
    assert plans[0].branch == "gaussian" and plans[0].noised
    assert SourcePlan(0, 20, 200, 20, 0.0, 0.0).branch == "rollback"
    assert SourcePlan(0, 20, 200, 10, 0.1, 0.1).branch == "mixing"
    # multi-source (Algorithm 7, corrected rule E5): only the learner's source arm can be noised
    plans, g0m = plan_unlearning(0, [200, 100, 200], [20, 5, 0], np.log(1800), opts)
    assert [p.branch for p in plans] == ["gaussian", "rollback"] and g0m == pytest.approx(
        gamma0_paper(100, 20, np.log(1800))
    )
    refuse = UnlearnOptions("adaptive", gamma=0.1, fallback="refuse")
    with pytest.raises(ValueError, match="k_max <= N_min"):  # gamma0' undefined
        plan_unlearning(0, [200, 10, 200], [20, 5, 0], np.log(1800), refuse)
    plans, g = plan_unlearning(0, [200, 10, 200], [20, 5, 0], np.log(1800), opts)  # default: rolled back
    assert np.isnan(g) and all(p.branch == "rollback" and p.reason == "threshold_undefined" for p in plans)
    with pytest.raises(ValueError, match="single-source"):
        plan_unlearning(
            0,
            [200, 200, 200],
            [20, 5, 0],
            np.log(1800),
            UnlearnOptions("mixing", gamma=0.1, eta=0.5, fallback="refuse"),
        )
    plans, _ = plan_unlearning(
        0, [200, 200, 200], [20, 5, 0], np.log(1800), UnlearnOptions("mixing", gamma=0.1, eta=0.5)
    )
    assert all(p.branch == "rollback" and p.reason == "single_source_only" for p in plans)
    # the literal rule reads no a_hat: the same plan whoever the learner's arm is
    lit = UnlearnOptions("adaptive", gamma=0.1, reference="literal")
    assert plan_unlearning(0, [200, 200, 200], [20, 0, 0], np.log(1800), lit) == plan_unlearning(
        2, [200, 200, 200], [20, 0, 0], np.log(1800), lit
    )
    assert plan_unlearning(2, [200, 200, 200], [20, 0, 0], np.log(1800), opts)[0][0].branch == "rollback"
    assert plan_unlearning(2, [200, 200, 200], [20, 0, 0], np.log(1800), lit)[0][0].branch == "gaussian"
    with pytest.raises(ValueError, match="no point"):
        plan_unlearning(0, [200, 200, 200], [0, 0, 0], np.log(1800), opts)
    assert UnlearnOptions("rollback").calibration_proven is True
    assert UnlearnOptions("adaptive", epsilon=0.99, delta=0.1).calibration_proven is True
    with pytest.raises(ValueError, match="only proven for epsilon < 1"):
        UnlearnOptions("adaptive", epsilon=1.0, delta=0.1)
    assert (
        UnlearnOptions("adaptive", epsilon=1.0, delta=0.1, calibration="analytic").calibration_proven is True
    )
    assert UnlearnOptions("adaptive", gamma=1.0).calibration_proven is None


# ----------------------------------------------------------------------------- bounds
@settings(max_examples=200, deadline=None)
@given(st.integers(2, 10**6), st.floats(0.001, 0.999), st.floats(0.5, 30))
def test_exact_threshold_is_the_crossing_and_below_the_paper_one(n, frac, L):
    k = max(1, min(n - 1, int(frac * n)))
    gs, g0 = gamma0_exact(n, k, L), gamma0_paper(n, k, L)
    assert gs <= g0 * (1 + 1e-12)
    assert gaussian_branch_bound(n, k, gs, L) == pytest.approx(rollback_branch_bound(n, k, L), rel=1e-9)


def test_theorem_bounds_cases():
    n, m, n_a0, k, L = 3000, 5, 600, 80, np.log(15000)
    g0 = gamma0_paper(n_a0, k, L)
    low = theorem33_bound(n, m, n_a0, n_a0, k, 0.5 * g0, True)
    assert low == pytest.approx(
        np.sqrt(2 * L / n_a0) + 3 * k * 0.5 * g0 / (2 * np.sqrt(2 * np.pi) * n_a0) + 3 / n
    )
    assert theorem33_bound(n, m, n_a0, n_a0, k, 2 * g0, True) == pytest.approx(
        np.sqrt(2 * L / (n_a0 - k)) + 4 / n
    )
    assert theorem33_bound(n, m, n_a0, 500, k, 0.1, False) == pytest.approx(np.sqrt(2 * L / 500) + 2 / n)
    assert theorem33_bound(n, m, n_a0, n_a0, k, 0.9 * g0, True, gamma0=0.5 * g0) == theorem33_bound(
        n, m, n_a0, n_a0, k, 2 * g0, True
    )
    assert theorem33_order(n, m, n_a0, n_a0, k, 0.5 * g0) == pytest.approx(
        np.sqrt(L / n_a0) + k * 0.5 * g0 / n_a0
    )
    assert theorem33_order(n, m, n_a0, 50, k, 2 * g0) == pytest.approx(np.sqrt(L / 50))
    c = 5.0
    hard = theorem35_bound(n, m, c, k, 0.5, True)
    assert hard == pytest.approx(
        min(
            np.sqrt(4 * c * L / (n - 2 * k * c)),
            np.sqrt(4 * c * L / n) + 3 * k * 0.5 * c / (np.sqrt(2 * np.pi) * n),
        )
        + 5 / n
    )
    assert theorem35_bound(n, m, c, k, 0.5, False) == pytest.approx(2 * np.sqrt(c * L / n) + 2 / n)
    assert theorem35_bound(n, m, c, 1000, 100.0, True) == pytest.approx(
        np.sqrt(4 * c * L) + 5 / n
    )  # max(1, .)
    np.testing.assert_allclose(
        gamma0_paper(np.array([100, 200]), 10, 5.0), 4 / 3 * np.sqrt(np.pi * 5 / np.array([90, 190]))
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: theorem33_bound(3000, 5, 600, 600, 590, 0.5, True),  # Lemma A.1's condition fails
        lambda: theorem33_bound(3000, 5, 600, 600, 0, 0.5, True),
        lambda: theorem33_bound(3000, 5, 600, 600, 80, 0.0, True),
        lambda: theorem33_bound(1, 5, 600, 600, 80, 0.5, True),
        lambda: theorem35_bound(100, 5, 5.0, 10, 0.5, True),  # N <= 8 C* ln N
        lambda: theorem35_bound(3000, 5, 1.0, 10, 0.5, True),
        lambda: gamma0_paper(10, 11, 2.0),
        lambda: gamma0_exact(10, 0, 2.0),
        lambda: gamma0_paper(10, 5, -1.0),
        lambda: gaussian_branch_bound(10, 5, -0.1, 2.0),
    ],
)
def test_bounds_bad_input(call):
    with pytest.raises(ValueError):
        call()


def test_options_are_said_one_way():
    """One UnlearnOptions object, ``options=``: the method as a positional or the fields as keywords are
    refused (no second way), and equal options give equal releases and distributions."""
    from bandit_unlearning.mab.lcb import LCBState
    from bandit_unlearning.mab.mechanisms import DeletionRequest, rollback
    from bandit_unlearning.mab.unlearn import output_distributions, reference, UnlearnOptions

    state = LCBState([200, 150, 100], [120.0, 60.0, 30.0], 1 / 450)
    request = DeletionRequest([0] * 10, [1.0] * 10)
    opts = UnlearnOptions(method="gaussian", epsilon=0.5, delta=1e-5, calibration="analytic")
    again = UnlearnOptions(method="gaussian", epsilon=0.5, delta=1e-5, calibration="analytic")
    new, by_object = unlearn(state, request, options=opts, rng=np.random.default_rng(3))
    _, by_equal = unlearn(state, request, options=again, rng=np.random.default_rng(3))
    assert by_object.options == by_equal.options == opts
    assert np.array_equal(by_object.scores, by_equal.scores) and by_object.sigma == by_equal.sigma > 0
    assert np.array_equal(new.counts, rollback(state, request).counts) and np.array_equal(
        state.counts, [200, 150, 100]
    )
    p_obj = output_distributions(state, request, options=opts)
    p_eq = output_distributions(state, request, options=again)
    assert all(np.array_equal(a, b) for a, b in zip(p_obj, p_eq))
    with pytest.raises(TypeError):
        unlearn(state, request, "gaussian", epsilon=0.5, delta=1e-5)
    with pytest.raises(TypeError):
        unlearn(state, request, options=opts, gamma=0.5)
    with pytest.raises(TypeError):
        output_distributions(state, request, "gaussian", epsilon=0.5, delta=1e-5)
    with pytest.raises(TypeError):
        reference(state, request, "gaussian", learner_arm=0, epsilon=0.5, delta=1e-5)


def test_mixing_k_prime_is_rounded_half_up_everywhere():
    from bandit_unlearning.experiments.paper_a import ProtocolA, _mixing_k_prime
    from bandit_unlearning.mab.unlearn import UnlearnOptions

    for eta, k, expected in ((0.25, 2, 1), (0.25, 10, 3), (0.5, 5, 3), (0.25, 6, 2), (0.5, 80, 40)):
        assert UnlearnOptions(method="mixing", eta=eta, gamma=1.0).k_rollback_for(k) == expected
        assert _mixing_k_prime(f"eta={eta}", k, ProtocolA()) == expected  # Python's round(2.5) would give 2


def test_two_reference_worlds_on_the_counterexample():
    """Algorithm 2 holds against the reference given pi(D) but not against the literal one; the literal
    rule holds against both; every result names the reference its claim holds against."""
    from bandit_unlearning.privacy.audit import hockey_stick_delta

    state, request = LCBState([100, 100], [60.0, 57.0], 1 / 200), DeletionRequest([0] * 10, [1.0] * 10)
    assert state.arm == 0 and rollback(state, request).arm == 1
    g = 0.5 * gamma0_paper(100, 10, state.log_term)
    d = {
        (rule, against): hockey_stick_delta(
            *output_distributions(
                state,
                request,
                options=UnlearnOptions(method="adaptive", gamma=g, reference=rule),
                against=against,
            ),
            1.0,
        )
        for rule in ("conditional", "literal")
        for against in ("conditional", "literal")
    }
    assert d["conditional", "conditional"] == pytest.approx(0.0030, abs=5e-5)
    assert d["conditional", "literal"] == pytest.approx(0.7441, abs=5e-5)
    assert d["literal", "literal"] == d["literal", "conditional"] == pytest.approx(0.0030, abs=5e-5)
    kw = dict(epsilon=1.0, delta=1e-5, calibration="analytic", threshold_scale=10.0)
    assert (
        hockey_stick_delta(
            *output_distributions(state, request, options=UnlearnOptions(method="adaptive", **kw)), 1.0
        )
        <= 1e-5
    )
    assert (
        hockey_stick_delta(
            *output_distributions(
                state, request, options=UnlearnOptions(method="adaptive", **kw), against="literal"
            ),
            1.0,
        )
        > 0.5
    )
    assert hockey_stick_delta(
        *output_distributions(
            state,
            request,
            options=UnlearnOptions(method="adaptive", reference="literal", **kw),
            against="literal",
        ),
        1.0,
    ) <= 1e-5 * (1 + 1e-9)
    r = unlearn(
        state, request, options=UnlearnOptions(method="adaptive", gamma=g), rng=np.random.default_rng(0)
    )[1]
    assert (r.reference, r.reason, r.branch) == ("conditional", "branch_rule", "gaussian")
    assert (
        unlearn(
            state,
            request,
            options=UnlearnOptions(method="adaptive", gamma=g, reference="literal"),
            rng=np.random.default_rng(0),
        )[1].reference
        == "literal"
    )
    assert (
        unlearn(
            state,
            request,
            options=UnlearnOptions(method="adaptive", gamma=10 * g),
            rng=np.random.default_rng(0),
        )[1].reference
        == "literal"
    )
    assert (
        unlearn(state, request, options=UnlearnOptions(method="rollback"), rng=np.random.default_rng(0))[
            1
        ].reason
        == "method"
    )
    # the literal reference through the public reference(): learner_arm = pi(D \ U)
    retrained = rollback(state, request)
    lit = reference(
        retrained,
        request,
        options=UnlearnOptions(method="adaptive", gamma=g),
        learner_arm=retrained.arm,
        rng=np.random.default_rng(0),
    )
    assert lit.branch == "rollback" and lit.arm == 1
    # the batch paths take the same decisions (world="literal" is the literal reference)
    c, s = np.array([state.counts]), np.array([state.reward_sums])
    _, noised, _ = unlearn_batch(
        c,
        s,
        state.tau,
        0,
        10,
        np.array([10.0]),
        options=UnlearnOptions(method="adaptive", gamma=g),
        world="literal",
        z=np.zeros(1),
    )
    assert not noised[0]
    _, noised, _ = unlearn_batch(
        c,
        s,
        state.tau,
        0,
        10,
        np.array([10.0]),
        options=UnlearnOptions(method="adaptive", gamma=g, reference="literal"),
        world="literal",
        z=np.zeros(1),
    )
    assert noised[0]


def test_unchecked_core_gives_unlearn_batch_bit_for_bit():
    """``unlearn_batch`` validates once and calls ``unlearn_batch_unchecked``; the engine calls the core
    directly, with the scores computed once (``batch_scores_unchecked``).  Same bits, same draws."""
    from bandit_unlearning.mab.unlearn import batch_scores_unchecked, unlearn_batch_unchecked

    rng = np.random.default_rng(7)
    settings = [
        dict(method="adaptive", gamma=0.8),
        dict(method="gaussian", gamma=0.5, sensitivity="exact"),
        dict(method="rollback"),
        dict(method="mixing", gamma=0.5, eta=0.5),
        dict(method="adaptive", gamma=0.3, reference="literal", threshold="exact"),
    ]
    for trial in range(20):
        counts, sums = sample_statistics_fixed(rng.random(4), [30] * 4, rng, size=40)
        src, ks = np.array([1], dtype=np.int64), np.array([int(rng.integers(1, 20))], dtype=np.int64)
        ds = rng.hypergeometric(sums[:, 1].astype(int), (counts[:, 1] - sums[:, 1]).astype(int), int(ks[0]))
        for opts in settings:
            options = UnlearnOptions(**opts)
            for world in ("unlearned", "reference", "literal"):
                seed = int(rng.integers(2**31))
                a = unlearn_batch(
                    counts,
                    sums,
                    1 / 120,
                    1,
                    int(ks[0]),
                    ds,
                    options=options,
                    world=world,
                    rng=np.random.default_rng(seed),
                )
                deleted = ds.astype(float)[:, None]
                scores = batch_scores_unchecked(counts, sums, 1 / 120, src, ks, deleted)
                for sc in (None, scores):
                    b = unlearn_batch_unchecked(
                        counts,
                        sums,
                        1 / 120,
                        src,
                        ks,
                        deleted,
                        options,
                        world,
                        np.random.default_rng(seed),
                        scores=sc,
                    )
                    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1][:, 0])
                    assert np.array_equal(a[2], b[2][:, 0])
