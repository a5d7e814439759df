"""Multi-source unlearning (chapter A7): Algorithm 7 (corrected rule E5) and Algorithm 8 through the entry
points of chapter A3a, several noised arms, the batch interface, Theorem 3.13's bound, and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bandit_unlearning.mab.bounds import gamma0_exact, gamma0_paper
from bandit_unlearning.mab.lcb import LCBState
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity, paper_sensitivity, rollback
from bandit_unlearning.mab.multisource import theorem313_bound
from bandit_unlearning.mab.unlearn import (
    multi_noisy_argmax_distribution,
    noisy_argmax_distribution,
    output_distributions,
    reference,
    unlearn_batch,
    UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, classic_gaussian_sigma

# three arms of 100 points; the learner picks arm 0; U: 20 points of arm 0 (all 1) and 20 of arm 1 (all 0)
STATE = LCBState(counts=[100, 100, 100], reward_sums=[50.0, 40.0, 45.0], tau=1 / 300)
U = DeletionRequest([0] * 20 + [1] * 20, [1.0] * 20 + [0.0] * 20)
G0 = gamma0_paper(100, 20, STATE.log_term)  # gamma0' with N_min = 100, k_max = 20


def algorithm7_loop(state, request, gamma, rng, threshold_scale=1.0):
    """Independent transcription of Algorithm 7 (corrected rule E5), paper threshold and calibration."""
    L = state.log_term
    f = state.scores.copy()
    sources = sorted(set(int(a) for a in request.arms))
    k_of = {a: int(np.sum(request.arms == a)) for a in sources}
    n_min, k_max = min(int(state.counts[a]) for a in sources), max(k_of.values())
    gamma0 = threshold_scale * (4 / 3 * np.sqrt(np.pi * L / (n_min - k_max)) if k_max < n_min else np.inf)
    for a in sources:
        if state.arm == a and gamma < gamma0:
            f[a] += 3 * k_of[a] / (2 * int(state.counts[a])) * gamma * rng.standard_normal()
        else:
            n_rest = int(state.counts[a]) - k_of[a]
            s_rest = max(0.0, state.reward_sums[a] - request.rewards[request.arms == a].sum())
            f[a] = s_rest / n_rest - np.sqrt(L / (2 * n_rest)) if n_rest > 0 else -1.0
    return int(np.argmax(f))


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


# ----------------------------------------------------------------------------- the corrected rule
def test_corrected_rule_noises_only_the_learners_source_arm():
    res = unlearn(
        STATE, U, options=UnlearnOptions(method="adaptive", gamma=0.5 * G0), rng=np.random.default_rng(1)
    )[1]
    assert res.gamma0 == pytest.approx(G0) and res.branches == {0: "gaussian", 1: "rollback"}
    z = np.random.default_rng(1).standard_normal()
    expected = rollback(STATE, U).scores
    expected[0] = STATE.scores[0] + 0.5 * G0 * paper_sensitivity(100, 20) * z
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-15)
    assert res.plans[0].sigma == pytest.approx(0.5 * G0 * 3 * 20 / 200) and res.rolled_back == tuple(
        range(20, 40)
    )


def test_gamma_above_threshold_rolls_back_every_source_arm_erratum():
    """E5: the printed nesting would leave arm 0 (= a_hat) untouched here; the corrected rule rolls it back."""
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    res = unlearn(STATE, U, options=UnlearnOptions(method="adaptive", epsilon=0.5, delta=1e-5), rng=rng)[1]
    assert res.gamma >= res.gamma0 and res.branches == {0: "rollback", 1: "rollback"}
    assert rng.bit_generator.state == before
    np.testing.assert_array_equal(res.scores, rollback(STATE, U).scores)
    p_u, p_r = output_distributions(
        STATE, U, options=UnlearnOptions(method="adaptive", epsilon=0.5, delta=1e-5)
    )
    np.testing.assert_array_equal(p_u, p_r)
    assert hockey_stick_delta(p_u, p_r, 0.0) == 0
    # the literal reading keeps f_0(D): the output would be arm 0 with certainty, the reference's arm 1
    literal = rollback(STATE, U).scores
    literal[0] = STATE.scores[0]
    assert int(np.argmax(literal)) == 0 and int(np.argmax(p_r)) == 1


def test_learner_not_a_source_and_thresholds():
    req = DeletionRequest([1] * 10 + [2] * 30, [0.0] * 10 + [1.0] * 30)
    res = unlearn(
        STATE, req, options=UnlearnOptions(method="adaptive", gamma=1e-3), rng=np.random.default_rng(0)
    )[1]
    assert set(res.branches.values()) == {"rollback"}
    L = STATE.log_term
    for thr, scale, base in (
        ("paper", 1.0, gamma0_paper(100, 30, L)),
        ("paper", 1.3, gamma0_paper(100, 30, L)),
        ("exact", 1.0, gamma0_exact(100, 30, L)),
    ):
        r = unlearn(
            STATE,
            req,
            options=UnlearnOptions(method="adaptive", gamma=0.5, threshold=thr, threshold_scale=scale),
            rng=np.random.default_rng(0),
        )[1]
        assert r.gamma0 == pytest.approx(scale * base)
    # N_min and k_max may come from different arms
    uneven = LCBState([100, 60, 100], [50.0, 20.0, 45.0], 1 / 260)
    r = unlearn(
        uneven,
        DeletionRequest([0] * 30 + [1] * 5, [1.0] * 30 + [0.0] * 5),
        options=UnlearnOptions(method="adaptive", gamma=0.1),
        rng=np.random.default_rng(0),
    )[1]
    assert r.gamma0 == pytest.approx(gamma0_paper(60, 30, uneven.log_term))


def test_gaussian_noises_every_source_arm_in_arm_order_and_rollback_all():
    res = unlearn(
        STATE, U, options=UnlearnOptions(method="gaussian", gamma=0.5), rng=np.random.default_rng(2)
    )[1]
    z = np.random.default_rng(2).standard_normal(2)
    assert res.branches == {0: "gaussian", 1: "gaussian"} and res.rolled_back == ()
    expected = STATE.scores.copy()
    expected[:2] += 0.5 * paper_sensitivity(100, 20) * z
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-15)
    rb = unlearn(STATE, U, options=UnlearnOptions(method="rollback"), rng=np.random.default_rng(2))[1]
    np.testing.assert_array_equal(rb.scores, rollback(STATE, U).scores)


def test_reference_is_algorithm8():
    retrained = rollback(STATE, U)
    r = reference(
        retrained,
        U,
        options=UnlearnOptions(method="adaptive", gamma=0.5 * G0),
        learner_arm=0,
        rng=np.random.default_rng(3),
    )
    z = np.random.default_rng(3).standard_normal()
    expected = retrained.scores.copy()
    expected[0] += r.sigma * z
    np.testing.assert_allclose(r.scores, expected, rtol=0, atol=1e-15)
    assert r.gamma0 == pytest.approx(G0) and r.branches == {0: "gaussian", 1: "rollback"}


# ----------------------------------------------------------------------------- one source arm == Algorithm 2
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(20, 80), st.floats(0.2, 0.8)), min_size=2, max_size=5),
    st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True),
    st.integers(1, 6),
    st.sampled_from([0.05, 0.3, 1.0, 3.0]),
    st.integers(0, 2**32 - 1),
)
def test_unlearn_equals_line_by_line_algorithm7_and_algorithm2(arms, sources, k, gamma, seed):
    counts = np.array([c for c, _ in arms])
    sums = np.round(np.array([c * f for c, f in arms]) * 4) / 4
    state = LCBState(counts, sums, 1 / counts.sum())
    sources = sorted({a % counts.size for a in sources})
    arms_, rewards_ = [], []
    for a in sources:
        s_a = int(min(k, sums[a] // 1))
        arms_ += [a] * k
        rewards_ += [1.0] * s_a + [0.0] * (k - s_a)
    req = DeletionRequest(arms_, rewards_)
    res = unlearn(
        state, req, options=UnlearnOptions(method="adaptive", gamma=gamma), rng=np.random.default_rng(seed)
    )[1]
    assert res.arm == algorithm7_loop(state, req, gamma, np.random.default_rng(seed))
    assert sum(p.noised for p in res.plans) <= 1


def test_batch_single_arm_as_sequence_equals_single_source_call():
    rng = np.random.default_rng(5)
    reps = 2000
    counts = np.tile([60, 60, 60], (reps, 1))
    sums = rng.binomial(counts, [0.5, 0.48, 0.4]).astype(float)
    ds = rng.hypergeometric(sums[:, 0].astype(int), (60 - sums[:, 0]).astype(int), 8).astype(float)
    z = rng.standard_normal(reps)
    for method, kw in (("adaptive", dict(gamma=0.7)), ("gaussian", dict(gamma=0.3)), ("rollback", {})):
        for world in ("unlearned", "reference"):
            options = UnlearnOptions(method=method, **kw)
            a1, n1, s1 = unlearn_batch(counts, sums, 1 / 180, 0, 8, ds, options=options, world=world, z=z)
            a2, n2, s2 = unlearn_batch(
                counts, sums, 1 / 180, [0], [8], ds[:, None], options=options, world=world, z=z[:, None]
            )
            assert a1.shape == (reps,) and n2.shape == (reps, 1)
            np.testing.assert_array_equal(a1, a2)
            np.testing.assert_array_equal(n1, n2[:, 0])
            np.testing.assert_array_equal(s1, s2[:, 0])


@settings(max_examples=100, deadline=None)
@given(
    st.integers(30, 70),
    st.integers(30, 70),
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from(
        [
            ("adaptive", dict(gamma=0.8)),
            ("adaptive", dict(gamma=0.3, threshold="exact")),
            ("gaussian", dict(gamma=0.5)),
            ("rollback", {}),
            ("adaptive", dict(epsilon=0.9, delta=0.1, calibration="analytic", sensitivity="exact")),
        ]
    ),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["unlearned", "reference"]),
    st.data(),
)
def test_batch_multi_equals_scalar(n0, n1, k0, k1, option, seed, world, data):
    method, opts = option
    s0, s1 = data.draw(st.integers(k0, n0)), data.draw(st.integers(0, n1))
    s2 = data.draw(st.integers(0, 50))
    d0 = data.draw(st.integers(max(0, k0 - (n0 - s0)), min(k0, s0)))
    d1 = data.draw(st.integers(max(0, k1 - (n1 - s1)), min(k1, s1)))
    state = LCBState([n0, n1, 50], [float(s0), float(s1), float(s2)], 1 / (n0 + n1 + 50))
    req = DeletionRequest(
        [0] * k0 + [1] * k1, [1.0] * d0 + [0.0] * (k0 - d0) + [1.0] * d1 + [0.0] * (k1 - d1)
    )
    z = np.random.default_rng(seed).standard_normal(2)
    arms, noised, sigma = unlearn_batch(
        np.array([state.counts]),
        np.array([state.reward_sums]),
        state.tau,
        [0, 1],
        [k0, k1],
        np.array([[d0, d1]], dtype=float),
        options=UnlearnOptions(method=method, **opts),
        world=world,
        z=z[None],
    )
    g = np.random.default_rng(seed)
    if noised[0, 1] and not noised[0, 0]:
        g.standard_normal()  # the batch uses z[1] for arm 1
    res = (
        unlearn(state, req, options=UnlearnOptions(method=method, **opts), rng=g)[1]
        if world == "unlearned"
        else reference(
            rollback(state, req),
            req,
            options=UnlearnOptions(method=method, **opts),
            learner_arm=state.arm,
            rng=g,
        )
    )
    assert res.arm == arms[0]
    assert [p.noised for p in res.plans] == list(noised[0]) and [p.sigma for p in res.plans] == list(sigma[0])


# ----------------------------------------------------------------------------- several noised arms
def test_multi_noisy_argmax_closed_forms():
    rng = np.random.default_rng(0)
    for _ in range(200):
        f, s = rng.normal(0, 0.3, 2), rng.uniform(0.005, 1.0, 2)
        p = multi_noisy_argmax_distribution(f, s)
        assert p[0] == pytest.approx(stats.norm.cdf((f[0] - f[1]) / np.hypot(*s)), abs=1e-10)
    f = np.array([0.2, 0.1, 0.3])
    np.testing.assert_allclose(
        multi_noisy_argmax_distribution(f, np.array([0.0, 0.2, 0.0])), noisy_argmax_distribution(f, 1, 0.2)
    )
    np.testing.assert_array_equal(multi_noisy_argmax_distribution(f, np.zeros(3)), [0, 0, 1])
    # a noiseless arm tied with another noiseless arm: lowest index
    p = multi_noisy_argmax_distribution(np.array([0.3, 0.3, 0.1, 0.2]), np.array([0.0, 0.0, 0.1, 0.1]))
    assert p[1] == 0 and p.sum() == pytest.approx(1)
    # identical noised arms split evenly
    p = multi_noisy_argmax_distribution(np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(p, [1 / 3] * 3, atol=1e-10)
    for bad in (
        (np.zeros(3), np.array([0.1, -0.1, 0.0])),
        (np.zeros(3), np.zeros(2)),
        (np.zeros((2, 2)), np.zeros((2, 2))),
    ):
        with pytest.raises(ValueError):
            multi_noisy_argmax_distribution(*bad)


def test_gaussian_multi_source_distributions_match_the_mechanism():
    """200k batch runs vs the quadrature distribution of both worlds; Hoeffding at 1e-7 per cell."""
    p_u, p_r = output_distributions(STATE, U, options=UnlearnOptions(method="gaussian", gamma=0.5))
    assert p_u.sum() == pytest.approx(1, abs=1e-12) and min(p_u) > 0.1
    n = 200_000
    t = np.sqrt(np.log(2 * 6 / 1e-7) / (2 * n))
    rng = np.random.default_rng(8)
    c, s = np.tile(STATE.counts, (n, 1)), np.tile(STATE.reward_sums, (n, 1))
    for world, p in (("unlearned", p_u), ("reference", p_r)):
        arms, noised, _ = unlearn_batch(
            c,
            s,
            STATE.tau,
            [0, 1],
            20,
            np.tile([20.0, 0.0], (n, 1)),
            options=UnlearnOptions(method="gaussian", gamma=0.5),
            world=world,
            rng=rng,
        )
        assert noised.all()
        assert np.all(np.abs(np.bincount(arms, minlength=3) / n - p) <= t)


# ----------------------------------------------------------------------------- several noised arms: one mechanism
def spread_request(l, bystander_mean, n=1000, k=20):
    """l source arms of n points (reward sum n/2), k deleted points each, all with reward 1, and one
    untouched arm of mean ``bystander_mean``; tau = 1/(mN)."""
    m = l + 1
    state = LCBState([n] * m, [n / 2] * l + [bystander_mean * n], 1 / (m * n))
    return state, DeletionRequest([a for a in range(l) for _ in range(k)], [1.0] * (k * l))


# bystander means that include the worst cases of the per-arm calibration at eps = 0.5 (found by a search)
BYSTANDERS = {
    4: [0.3, 0.3027, 0.4, 0.5, 0.6, 0.7],
    8: [0.3, 0.3717, 0.4, 0.4666, 0.5, 0.6, 0.7],
    16: [0.3, 0.4, 0.5, 0.5508, 0.5761, 0.6, 0.7],
}


@pytest.mark.parametrize("l", [4, 8, 16])
@pytest.mark.parametrize("calibration", ["analytic", "classic"])
def test_gaussian_on_several_arms_is_calibrated_to_the_joint_shift(l, calibration):
    """The noised scores are ONE Gaussian mechanism: every noised arm gets the sigma of the L2 norm of the
    per-arm sensitivities, and the exact delta of the released arm stays within the claim (per-arm sigmas
    give 7.4 and 43 times the claim at l = 8, 16 with the analytic calibration)."""
    eps, delta = 0.5, 1e-5
    kw = dict(epsilon=eps, delta=delta, calibration=calibration, sensitivity="exact")
    unit = (analytic_gaussian_sigma if calibration == "analytic" else classic_gaussian_sigma)(1.0, eps, delta)
    exact = [
        hockey_stick_delta(
            *output_distributions(*spread_request(l, mean), options=UnlearnOptions("gaussian", **kw)), eps
        )
        for mean in BYSTANDERS[l]
    ]
    assert max(exact) <= delta * (1 + 1e-9), exact
    for mean in BYSTANDERS[l]:
        state, req = spread_request(l, mean)
        res = unlearn(
            state, req, options=UnlearnOptions(method="gaussian", **kw), rng=np.random.default_rng(0)
        )[1]
        norm = np.sqrt(l) * exact_sensitivity(1000, 20, state.log_term)
        assert all(p.noised and p.sigma == res.sigma for p in res.plans)
        assert res.sigma == pytest.approx(unit * norm, rel=1e-14)
        assert res.options.joint_noise and res.delta_f == pytest.approx(norm, rel=1e-14)
        ref = reference(
            rollback(state, req),
            req,
            options=UnlearnOptions(method="gaussian", **kw),
            learner_arm=state.arm,
            rng=np.random.default_rng(0),
        )
        assert [p.sigma for p in ref.plans] == [p.sigma for p in res.plans]
        # the batch gives every replicate the same common sigma
        arms, noised, sigma = unlearn_batch(
            np.array([state.counts] * 3),
            np.array([state.reward_sums] * 3),
            state.tau,
            list(range(l)),
            20,
            np.full((3, l), 20.0),
            options=UnlearnOptions(method="gaussian", **kw),
            z=np.zeros((3, l)),
        )
        assert noised.all() and np.all(sigma == res.sigma)


def test_joint_calibration_in_the_batch_matches_the_scalar_path_bit_for_bit():
    """Uneven source arms given in any order: the batch's common sigma is the scalar plan's, exactly."""
    state = LCBState([120, 90, 300, 200], [60.0, 50.0, 100.0, 120.0], 1 / 710)
    req = DeletionRequest([0] * 7 + [1] * 3 + [2] * 11, [1.0] * 7 + [0.0] * 3 + [1.0] * 11)
    kw = dict(epsilon=0.7, delta=1e-6, calibration="analytic", sensitivity="exact")
    res = unlearn(state, req, options=UnlearnOptions(method="gaussian", **kw), rng=np.random.default_rng(0))[
        1
    ]
    assert len({p.sigma for p in res.plans}) == 1
    sens = [exact_sensitivity(n, k, state.log_term) for n, k in ((120, 7), (90, 3), (300, 11))]
    assert res.sigma == pytest.approx(analytic_gaussian_sigma(np.linalg.norm(sens), 0.7, 1e-6), rel=1e-11)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        ks = [{0: 7, 1: 3, 2: 11}[a] for a in order]
        ds = np.array([[{0: 7.0, 1: 0.0, 2: 11.0}[a] for a in order]])
        _, noised, sigma = unlearn_batch(
            np.array([state.counts]),
            np.array([state.reward_sums]),
            state.tau,
            order,
            ks,
            ds,
            options=UnlearnOptions(method="gaussian", **kw),
            z=np.zeros((1, 3)),
        )
        assert noised.all() and np.all(sigma == res.sigma)


def test_gamma_alone_keeps_the_papers_per_arm_baseline():
    """No (epsilon, delta) claimed: sigma_a = Delta_a * gamma per arm, as in the paper's Figure 3."""
    state = LCBState([120, 90, 300], [60.0, 50.0, 100.0], 1 / 510)
    req = DeletionRequest([0] * 7 + [1] * 3, [1.0] * 10)
    res = unlearn(
        state, req, options=UnlearnOptions(method="gaussian", gamma=0.4), rng=np.random.default_rng(0)
    )[1]
    assert [p.sigma for p in res.plans] == [paper_sensitivity(120, 7) * 0.4, paper_sensitivity(90, 3) * 0.4]
    _, _, sigma = unlearn_batch(
        np.array([state.counts]),
        np.array([state.reward_sums]),
        state.tau,
        [0, 1],
        [7, 3],
        np.array([[7.0, 3.0]]),
        options=UnlearnOptions(method="gaussian", gamma=0.4),
        z=np.zeros((1, 2)),
    )
    assert list(sigma[0]) == [p.sigma for p in res.plans]


def test_joint_calibration_minds_lemma_a1_for_every_arm():
    """3k/2N is refused if Lemma A.1's condition fails for ANY noised arm; the exact rule enters the norm."""
    big = DeletionRequest([0] * 85 + [1] * 5, [1.0] * 50 + [0.0] * 35 + [0.0] * 5)
    kw = dict(epsilon=0.5, delta=1e-5, calibration="analytic")
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn(
            STATE,
            big,
            options=UnlearnOptions(method="gaussian", fallback="refuse", **kw),
            rng=np.random.default_rng(0),
        )[1]
    with pytest.raises(ValueError, match="Lemma A.1"):
        unlearn_batch(
            np.array([STATE.counts]),
            np.array([STATE.reward_sums]),
            STATE.tau,
            [0, 1],
            [85, 5],
            np.array([[50.0, 0.0]]),
            options=UnlearnOptions(method="gaussian", fallback="refuse", **kw),
            z=np.zeros((1, 2)),
        )
    # by default the arm whose condition fails is rolled back, the other noised alone (scalar == batch)
    fb = unlearn(STATE, big, options=UnlearnOptions(method="gaussian", **kw), rng=np.random.default_rng(0))[1]
    assert fb.branches == {0: "rollback", 1: "gaussian"} and fb.reason == "condition_failed"
    assert fb.delta_f == pytest.approx(paper_sensitivity(100, 5), rel=1e-14)
    _, noised, _ = unlearn_batch(
        np.array([STATE.counts]),
        np.array([STATE.reward_sums]),
        STATE.tau,
        [0, 1],
        [85, 5],
        np.array([[50.0, 0.0]]),
        options=UnlearnOptions(method="gaussian", **kw),
        z=np.zeros((1, 2)),
    )
    assert noised.tolist() == [[False, True]]
    ex = unlearn(
        STATE,
        big,
        options=UnlearnOptions(method="gaussian", sensitivity="exact", **kw),
        rng=np.random.default_rng(0),
    )[1]
    norm = np.hypot(exact_sensitivity(100, 85, STATE.log_term), exact_sensitivity(100, 5, STATE.log_term))
    assert ex.sigma == pytest.approx(analytic_gaussian_sigma(norm, 0.5, 1e-5), rel=1e-11)
    assert ex.delta_f == pytest.approx(norm, rel=1e-14)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "state, request_, method, kwargs, match",
    [
        (STATE, DeletionRequest([0, 7], [1.0, 0.0]), "adaptive", dict(gamma=0.5), "unknown arm"),
        (
            STATE,
            DeletionRequest([0, 1], [1.0, 0.0]),
            "mixing",
            dict(gamma=0.5, eta=0.5, fallback="refuse"),
            "single-source",
        ),
        (
            LCBState([100, 10, 100], [60.0, 5.0, 40.0], 1 / 210),
            DeletionRequest([0] * 30 + [1] * 5, [1.0] * 30 + [0.0] * 5),
            "adaptive",
            dict(gamma=0.5, fallback="refuse"),
            "k_max <= N_min",
        ),
        (
            STATE,
            DeletionRequest([0] * 85 + [1] * 5, [1.0] * 50 + [0.0] * 40),
            "gaussian",
            dict(gamma=0.5, fallback="refuse"),
            "Lemma A.1",
        ),
        (
            STATE,
            DeletionRequest([0] * 85 + [1] * 5, [1.0] * 50 + [0.0] * 40),
            "adaptive",
            dict(gamma=1e-3, fallback="refuse"),
            "Lemma A.1",
        ),
        (STATE, DeletionRequest([0] * 101 + [1], [0.0] * 102), "adaptive", dict(gamma=0.5), "more deletions"),
    ],
)
def test_bad_multi_source_requests_raise_and_change_nothing(state, request_, method, kwargs, match):
    rng = np.random.default_rng(4)
    before = snapshot(state, request_, rng)
    for call in (
        lambda: unlearn(state, request_, options=UnlearnOptions(method=method, **kwargs), rng=rng)[1],
        lambda: output_distributions(state, request_, options=UnlearnOptions(method=method, **kwargs)),
    ):
        with pytest.raises(ValueError, match=match):
            call()
    assert_unchanged(before, state, request_, rng)


def test_e2_only_when_noise_uses_it_and_k_max_only_for_adaptive():
    big = DeletionRequest([0] * 85 + [1] * 5, [1.0] * 50 + [0.0] * 40)
    r = unlearn(
        STATE, big, options=UnlearnOptions(method="adaptive", gamma=50.0), rng=np.random.default_rng(0)
    )[1]  # gamma >= gamma0': all rolled back
    assert set(r.branches.values()) == {"rollback"}
    ex = unlearn(
        STATE,
        big,
        options=UnlearnOptions(method="gaussian", gamma=0.5, sensitivity="exact"),
        rng=np.random.default_rng(0),
    )[1]
    assert ex.plans[0].delta_f == pytest.approx(exact_sensitivity(100, 85, STATE.log_term))
    small = LCBState([100, 10, 100], [60.0, 5.0, 40.0], 1 / 210)
    req = DeletionRequest([0] * 30 + [1] * 4, [1.0] * 30 + [0.0] * 4)  # k_max = 30 > N_min = 10
    assert np.isnan(
        unlearn(small, req, options=UnlearnOptions(method="rollback"), rng=np.random.default_rng(0))[1].gamma0
    )
    assert unlearn(
        small, req, options=UnlearnOptions(method="gaussian", gamma=0.5), rng=np.random.default_rng(0)
    )[1].branches == {0: "gaussian", 1: "gaussian"}


def test_batch_bad_source_arms():
    c, s = np.tile(STATE.counts, (4, 1)), np.tile(STATE.reward_sums, (4, 1))
    good = dict(
        counts=c,
        reward_sums=s,
        tau=STATE.tau,
        arm=[0, 1],
        k=20,
        deleted_sums=np.tile([10.0, 5.0], (4, 1)),
        options=UnlearnOptions(method="adaptive", gamma=0.5),
    )
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    for bad, match in (
        (dict(arm=[0, 0]), "distinct"),
        (dict(arm=[0, 3]), "unknown arm"),
        (dict(arm=[-1, 1]), "unknown arm"),
        (dict(arm=[]), "non-empty"),
        (dict(k=[20, 20, 20]), "one per source arm"),
        (dict(k=[20, 0]), "k must be"),
        (dict(k=[20, 101]), "more deletions"),
        (dict(deleted_sums=np.zeros(4)), "shape"),
        (dict(deleted_sums=np.tile([25.0, 5.0], (4, 1))), "consistent"),
        (dict(z=np.zeros(4)), "z must be"),
        (
            dict(
                counts=np.tile([100, 10, 100], (4, 1)),
                reward_sums=np.tile([60.0, 5.0, 40.0], (4, 1)),
                k=[30, 5],
                deleted_sums=np.tile([30.0, 0.0], (4, 1)),
                options=UnlearnOptions(method="adaptive", gamma=0.5, fallback="refuse"),
            ),
            "k_max <= N_min",
        ),
    ):
        with pytest.raises(ValueError, match=match):
            unlearn_batch(**(good | bad), rng=rng)
    for bad in (dict(arm=[0.5, 1]), dict(arm=True)):
        with pytest.raises(TypeError, match="integer"):
            unlearn_batch(**(good | bad), rng=rng)
    assert rng.bit_generator.state == before


# ----------------------------------------------------------------------------- Theorem 3.13
def test_theorem313_bound_cases():
    n, m, L = 2000, 5, np.log(10000)
    g0 = gamma0_paper(400, 80, L)
    assert theorem313_bound(n, m, [400, 400], [40, 80], 400, 0.5 * g0, True) == pytest.approx(
        np.sqrt(2 * L / 400) + 3 * 80 * 0.5 * g0 / (2 * np.sqrt(2 * np.pi) * 400) + 5 / n
    )  # +5/N: the proof's
    assert theorem313_bound(n, m, [400, 400], [40, 80], 400, 2 * g0, True) == pytest.approx(
        np.sqrt(2 * L / 320) + 5 / n
    )
    assert theorem313_bound(n, m, [400, 400], [40, 80], 400, 0.1, False) == pytest.approx(
        np.sqrt(2 * L / 400) + 2 / n
    )
    assert theorem313_bound(n, m, [400, 300], [80, 10], 400, 2 * g0, True, gamma0=10.0) == pytest.approx(
        np.sqrt(2 * L / 300) + 3 * 80 * 2 * g0 / (2 * np.sqrt(2 * np.pi) * 300) + 5 / n
    )


@pytest.mark.parametrize(
    "args",
    [
        (2000, 5, [400, 400], [40], 400, 0.5, True),
        (2000, 5, [400, 400], [40, 390], 400, 0.5, True),
        (2000, 5, [400, 30], [40, 10], 400, 0.5, True),
        (2000, 5, [400, 400], [0, 10], 400, 0.5, True),
        (2000, 5, [400, 400], [40, 10], 400, 0.0, True),
        (2000, 5, [1500, 1500], [40, 10], 400, 0.5, True),
        (1, 5, [400, 400], [40, 10], 400, 0.5, True),
    ],
)
def test_theorem313_bad_input(args):
    with pytest.raises(ValueError):
        theorem313_bound(*args)


def test_fallback_rolls_back_what_cannot_be_certified_scalar_equals_batch():
    """By default a request the method cannot certify is rolled back (exact), with a machine-readable reason;
    the batched path takes the same decision."""
    state = LCBState([100, 10, 100], [60.0, 5.0, 40.0], 1 / 210)
    req = DeletionRequest([0] * 30 + [1] * 5, [1.0] * 30 + [0.0] * 5)
    r = unlearn(
        state, req, options=UnlearnOptions(method="adaptive", gamma=0.5), rng=np.random.default_rng(0)
    )[1]
    assert r.reason == "threshold_undefined" and r.fell_back and r.reference == "literal"
    assert set(r.branches.values()) == {"rollback"} and r.arm == rollback(state, req).arm
    p_u, p_r = output_distributions(
        state, req, options=UnlearnOptions(method="adaptive", gamma=0.5), against="literal"
    )
    assert np.array_equal(p_u, p_r)
    arms, noised, _ = unlearn_batch(
        np.array([state.counts]),
        np.array([state.reward_sums]),
        state.tau,
        [0, 1],
        [30, 5],
        np.array([[30.0, 0.0]]),
        options=UnlearnOptions(method="adaptive", gamma=0.5),
        z=np.zeros((1, 2)),
    )
    assert not noised.any() and arms[0] == r.arm
    m = unlearn(
        STATE,
        DeletionRequest([0, 1], [1.0, 0.0]),
        options=UnlearnOptions(method="mixing", gamma=0.5, eta=0.5),
        rng=np.random.default_rng(0),
    )[1]
    assert m.reason == "single_source_only" and set(m.branches.values()) == {"rollback"}
