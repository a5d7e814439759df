"""The contextual LCB learner and its unlearning (chapters A10a-A10b): rollback equals retraining (property
based, and exactly on integer data), the sensitivity lemma against random and optimised designs, the
Gaussian branch's exact privacy, the switch's reference worlds, refusals."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.mab.contextual import (
    ContextualRequest,
    ReleasedPolicy,
    branch_bounds,
    calibrate_sigma,
    confidence_radius,
    deletion_sensitivity,
    fit_contextual,
    lcb_scores,
    noisy_action_probability,
    parameter_sensitivity,
    reference_contextual,
    release_exact,
    rollback,
    state_from_statistics,
    ContextualOptions,
)
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_delta


def data(seed, n=60, d=3, m=3, integer=False):
    rng = np.random.default_rng(seed)
    if integer:
        x = rng.integers(-2, 3, size=(n, d)).astype(float)
        r = rng.integers(0, 2, size=n).astype(float)
    else:
        x = rng.standard_normal((n, d))
        x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
        r = rng.random(n)
    return x, rng.integers(0, m, size=n), r


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    d=st.integers(1, 5),
    m=st.integers(1, 4),
    lam=st.sampled_from([0.1, 1.0, 10.0]),
    frac=st.floats(0.0, 1.0),
)
def test_rollback_equals_retraining(seed, n, d, m, lam, frac):
    x, a, r = data(seed, n, d, m)
    drop = np.random.default_rng(seed + 1).permutation(n)[: int(frac * n)]
    keep = np.setdiff1d(np.arange(n), drop)
    full = fit_contextual(x, a, r, n_arms=m, lam=lam, context_bound=1.0, beta=0.7)
    rolled = rollback(full, ContextualRequest(x[drop], a[drop], r[drop]))
    refit = (
        fit_contextual(x[keep], a[keep], r[keep], n_arms=m, lam=lam, context_bound=1.0, beta=0.7)
        if keep.size
        else state_from_statistics(
            np.broadcast_to(lam * np.eye(d), (m, d, d)),
            np.zeros((m, d)),
            np.zeros(m, int),
            lam=lam,
            beta=0.7,
            context_bound=1.0,
        )
    )
    assert np.array_equal(rolled.counts, refit.counts)
    np.testing.assert_allclose(rolled.gram, refit.gram, rtol=0, atol=1e-12 * (1 + n))
    np.testing.assert_allclose(rolled.theta, refit.theta, rtol=0, atol=1e-9)
    ctx = x[:5]
    np.testing.assert_allclose(lcb_scores(rolled, ctx), lcb_scores(refit, ctx), rtol=0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), frac=st.floats(0.0, 0.9))
def test_rollback_is_bit_exact_on_integer_data(seed, frac):
    x, a, r = data(seed, 50, 3, 2, integer=True)
    drop = np.random.default_rng(seed).permutation(50)[: int(frac * 50)]
    keep = np.setdiff1d(np.arange(50), drop)
    full = fit_contextual(x, a, r, n_arms=2, context_bound=math.sqrt(12), beta=1.0)
    rolled = rollback(full, ContextualRequest(x[drop], a[drop], r[drop]))
    refit = fit_contextual(x[keep], a[keep], r[keep], n_arms=2, context_bound=math.sqrt(12), beta=1.0)
    assert np.array_equal(rolled.gram, refit.gram) and np.array_equal(rolled.moments, refit.moments)
    assert np.array_equal(rolled.theta, refit.theta)


def test_confidence_radius_formula():
    beta = confidence_radius(1000, 4, 5, 1e-3, 2.0, 1.5, 0.5)
    assert beta == pytest.approx(
        0.5 * math.sqrt(2 * math.log(5e3) + 4 * math.log1p(1000 * 2.25 / 8)) + math.sqrt(2) * 0.5
    )
    st_ = fit_contextual(*data(0), n_arms=3, context_bound=1.0)
    assert st_.beta == pytest.approx(confidence_radius(60, 3, 3, 1 / 60, 1.0, 1.0, 1.0))


def test_sensitivity_dominates_random_designs():
    """The lemma against 4000 random (D', U) pairs, each shift computed directly."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(4000):
        d, n, k = int(rng.integers(1, 4)), int(rng.integers(0, 6)), int(rng.integers(1, 4))
        lam, L = float(rng.choice([0.05, 0.5, 2.0])), float(rng.choice([0.5, 1.0, 3.0]))
        x = rng.standard_normal((n + k, d))
        x *= (L * rng.uniform(0, 1, size=(n + k, 1)) ** 0.3) / np.linalg.norm(x, axis=1, keepdims=True)
        r = rng.choice([0.0, 1.0], size=n + k) if rng.random() < 0.7 else rng.random(n + k)
        gp, bp = lam * np.eye(d) + x[:n].T @ x[:n], x[:n].T @ r[:n]
        tp = np.linalg.solve(gp, bp)
        t = np.linalg.solve(gp + x[n:].T @ x[n:], bp + x[n:].T @ r[n:])
        bound = parameter_sensitivity(np.linalg.eigvalsh(gp)[0], k, L, np.linalg.norm(tp))
        worst = max(worst, np.linalg.norm(t - tp) / bound)
    assert worst <= 1 + 1e-9
    assert worst > 0.5  # the random designs come within a factor 2 of the bound


def test_sensitivity_is_attained_on_the_empty_arm():
    lam = 2.0
    empty = state_from_statistics(
        lam * np.eye(2)[None], np.zeros((1, 2)), [0], lam=lam, beta=0.0, context_bound=5.0
    )
    x = np.array([[math.sqrt(lam), 0.0]])
    full = state_from_statistics(
        empty.gram + (x.T @ x)[None], x[None, 0] * 1.0, [1], lam=lam, beta=0.0, context_bound=5.0
    )
    assert np.linalg.norm(full.theta[0]) == pytest.approx(deletion_sensitivity(empty, [1])[0])


def test_eigen_floor_is_refused_where_it_fails():
    st_ = fit_contextual(*data(1, n=30), n_arms=3, context_bound=1.0)
    after = rollback(st_, ContextualRequest(*(v[:3] for v in data(1, n=30))))
    k = np.bincount(data(1, n=30)[1][:3], minlength=3)
    ok = deletion_sensitivity(after, k, eigen_floor=1.0)  # lam = 1 <= lambda_min always
    assert np.all(ok >= deletion_sensitivity(after, k) - 1e-12)
    with pytest.raises(ValueError, match="eigen_floor"):
        deletion_sensitivity(after, k, eigen_floor=1e6)


def test_gaussian_branch_is_private_exactly_on_a_tight_design():
    """One-dimensional tight design: the action law gives delta(eps) equal to the Gaussian's at the right
    threshold, and never above the target; half the noise breaks it."""
    lam = 1.0
    x = np.array([[1.0]])
    full = state_from_statistics(
        np.array([[[lam + 1.0]], [[lam + 50.0]]]),
        np.array([[1.0], [0.0]]),
        [1, 50],
        lam=lam,
        beta=0.0,
        context_bound=1.0,
    )
    req = ContextualRequest(x, [0], [1.0])
    after = rollback(full, req)
    sens = deletion_sensitivity(after, req.counts(2))[0]
    assert np.linalg.norm(full.theta[0] - after.theta[0]) == pytest.approx(sens)  # tight
    eps, delta = 1.0, 1e-3
    sigma = analytic_gaussian_sigma(sens, eps, delta)
    worst = {1.0: 0.0, 0.5: 0.0}
    for beta in np.linspace(0, 8, 801):
        for scale in worst:
            p = noisy_action_probability(
                ReleasedPolicy(full.theta, after.gram_inv, beta), 0, sigma * scale, x
            )[0]
            q = noisy_action_probability(
                ReleasedPolicy(after.theta, after.gram_inv, beta), 0, sigma * scale, x
            )[0]
            pd, qd = np.array([p, 1 - p]), np.array([q, 1 - q])
            worst[scale] = max(worst[scale], hockey_stick_delta(pd, qd, eps), hockey_stick_delta(qd, pd, eps))
    assert worst[1.0] <= delta
    assert worst[1.0] >= 0.95 * float(gaussian_delta(sigma, sens, eps))
    assert worst[0.5] > 10 * delta


def test_unlearn_records_and_reference_worlds():
    x, a, r = data(3, n=200, d=2, m=2)
    st_ = fit_contextual(x, a, r, n_arms=2, context_bound=1.0)
    req = ContextualRequest(x[:5], a[:5], r[:5])
    ctx = x[100:150]
    after, rec = unlearn(st_, req, options=ContextualOptions(method="rollback"), rng=0)
    rel = rec.release
    assert rec.branch == "rollback" and rec.guarantee == "exact" and rec.sigma == 0.0
    np.testing.assert_array_equal(rel.theta, after.theta)
    after, rec = unlearn(
        st_, req, options=ContextualOptions(method="gaussian", epsilon=1.0, delta=1e-5), rng=0
    )
    rel = rec.release
    k = req.counts(2)
    assert rec.branch == "gaussian" and rec.reference == "literal"
    assert rec.sensitivity == pytest.approx(float(np.linalg.norm(deletion_sensitivity(after, k))))
    assert rec.sigma == pytest.approx(calibrate_sigma(rec.sensitivity, 1.0, 1e-5))
    np.testing.assert_array_equal(rel.gram_inv, after.gram_inv)  # widths of D \ U
    for eps in (0.5, 50.0, 5000.0):
        _, lit = unlearn(st_, req, options=ContextualOptions(epsilon=eps, delta=1e-5, contexts=ctx), rng=0)
        _, branch = reference_contextual(
            after, k, options=ContextualOptions(epsilon=eps, delta=1e-5, contexts=ctx), rng=0
        )
        assert branch == lit.branch
        b = branch_bounds(
            after,
            k,
            lit.sigma or calibrate_sigma(float(np.linalg.norm(deletion_sensitivity(after, k))), eps, 1e-5),
            ctx,
        )
        assert (lit.branch == "gaussian") == (b.gaussian < b.rollback)
    with pytest.raises(ValueError, match="conditional switch"):
        reference_contextual(
            after, k, options=ContextualOptions(epsilon=1.0, delta=1e-5, contexts=ctx, switch="conditional")
        )
    _, cond = unlearn(
        st_,
        req,
        options=ContextualOptions(epsilon=5000.0, delta=1e-5, contexts=ctx, switch="conditional"),
        rng=0,
    )
    if cond.branch == "gaussian":
        assert cond.reference == "conditional on the branch"


def test_refusals_change_nothing():
    x, a, r = data(4, n=20, d=2, m=2)
    st_ = fit_contextual(x, a, r, n_arms=2, context_bound=1.0)
    before = (st_.gram.copy(), st_.moments.copy())
    too_many = int(np.sum(a == 0)) + 1
    with pytest.raises(ValueError, match="deletes"):
        rollback(st_, ContextualRequest(np.zeros((too_many, 2)), np.zeros(too_many, int), np.zeros(too_many)))
    with pytest.raises(ValueError, match="context_bound"):
        rollback(st_, ContextualRequest([[2.0, 0.0]], [0], [0.0]))
    with pytest.raises(ValueError, match="context_bound"):
        fit_contextual(x * 3, a, r, n_arms=2, context_bound=1.0)
    with pytest.raises(ValueError, match="rewards"):
        fit_contextual(x, a, r + 1, n_arms=2, context_bound=1.0)
    with pytest.raises(ValueError, match="contexts=..."):
        unlearn(
            st_, ContextualRequest(x[:1], a[:1], r[:1]), options=ContextualOptions(epsilon=1.0, delta=1e-5)
        )
    with pytest.raises(ValueError, match="epsilon < 1"):
        unlearn(
            st_,
            ContextualRequest(x[:1], a[:1], r[:1]),
            options=ContextualOptions(method="gaussian", epsilon=2.0, delta=1e-5, calibration="classic"),
        )
    assert np.array_equal(before[0], st_.gram) and np.array_equal(before[1], st_.moments)


def test_ill_conditioned_downdate_is_refused():
    x = np.vstack([np.tile([[1.0, 0.0]], (10_000, 1)), [[0.0, 1.0]]])
    a, r = np.zeros(10_001, int), np.ones(10_001)
    st_ = fit_contextual(x, a, r, n_arms=1, lam=1e-12, context_bound=1.0, beta=1.0)
    with pytest.raises(ValueError, match="ill-conditioned"):
        rollback(st_, ContextualRequest(x[:10_000], a[:10_000], r[:10_000]))


def test_release_exact_is_the_learner():
    x, a, r = data(5)
    st_ = fit_contextual(x, a, r, n_arms=3, context_bound=1.0)
    rel = release_exact(st_)
    np.testing.assert_array_equal(rel.actions(x), np.argmax(lcb_scores(st_, x), axis=1))


# --- the lifecycle model (chapter A10b) -------------------------------------------------------------
from bandit_unlearning.mab.contextual_model import (  # noqa: E402
    ContextualModel,
    load_contextual_model,
    sequential_sensitivity,
)


def synthetic(seed=0, n=400):
    rng = np.random.default_rng(seed)
    x = np.abs(rng.standard_normal((n, 3)))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a = np.repeat(rng.integers(0, 2, size=n // 4), 4)
    users = [f"u{i // 4}" for i in range(n)]
    hot = sorted({users[i] for i in np.flatnonzero(a == 0)[:16]})
    for i, u in enumerate(users):
        if u in hot:
            x[i] = [1.0, 0.0, 0.0]
    r = (rng.random(n) < x @ np.array([0.5, 0.3, 0.1])).astype(float)
    ev = np.abs(rng.standard_normal((100, 3)))
    return x, a, r, users, hot, ev / np.linalg.norm(ev, axis=1, keepdims=True)


def test_model_live_statistics_equal_a_refit_after_every_request(tmp_path):
    x, a, r, users, hot, ev = synthetic()
    m = ContextualModel.fit(
        x,
        a,
        r,
        n_arms=2,
        context_bound=1.0,
        users=users,
        method="adaptive",
        epsilon=256.0,
        delta=1e-5,
        sigma=0.02,
        eval_contexts=ev,
        rng=3,
    )
    keep = np.ones(len(a), bool)
    for u in hot:
        rec = m.delete(user=u)
        keep[list(rec.rows)] = False
        refit = fit_contextual(x[keep], a[keep], r[keep], n_arms=2, context_bound=1.0, beta=m.statistics.beta)
        np.testing.assert_allclose(m.statistics.theta, refit.theta, atol=1e-10, rtol=0)
        assert m.mu_max <= m.mu_budget + 1e-12
        if rec.method == "rollback":
            assert m.pending == ()
    assert {r.method for r in m.log} == {"gaussian", "rollback"}
    path = tmp_path / "m.npz"
    m.save(path)
    back = load_contextual_model(path, rng=1)
    assert back.log == m.log and back.pending == m.pending and len(back) == len(m)
    np.testing.assert_array_equal(back.release.theta, m.release.theta)
    saved = np.load(path)
    assert not set(saved["row_ids"].tolist()) & set(np.flatnonzero(~keep).tolist())


def test_rollback_model_is_bit_exact_on_integer_data():
    rng = np.random.default_rng(2)
    x = np.zeros((300, 6))
    x[np.arange(300), rng.integers(0, 6, 300)] = 1.0
    a, r = rng.integers(0, 4, 300), rng.integers(0, 2, 300).astype(float)
    m = ContextualModel.fit(x, a, r, n_arms=4, context_bound=1.0, rng=0)
    gone = rng.permutation(300)[:90]
    for chunk in gone.reshape(9, 10):
        rec = m.delete(rows=chunk)
        assert rec.method == "rollback" and rec.reason == "rollback-only model"
    keep = np.setdiff1d(np.arange(300), gone)
    refit = fit_contextual(x[keep], a[keep], r[keep], n_arms=4, context_bound=1.0, beta=m.statistics.beta)
    assert np.array_equal(m.statistics.gram, refit.gram) and np.array_equal(m.statistics.theta, refit.theta)


def test_model_refits_an_arm_when_the_downdate_is_ill_conditioned():
    x = np.vstack([np.tile([[1.0, 0.0]], (10_000, 1)), [[0.0, 1.0]]])
    a, r = np.zeros(10_001, int), np.ones(10_001)
    m = ContextualModel.fit(x, a, r, n_arms=1, lam=1e-12, context_bound=1.0, beta=1.0, rng=0)
    rec = m.delete(rows=np.arange(10_000))
    assert rec.refit_arms == (0,)
    np.testing.assert_allclose(m.statistics.theta[0], [0.0, 1.0 / (1.0 + 1e-12)], rtol=1e-12)


def test_model_refusals_change_nothing():
    x, a, r, users, hot, ev = synthetic(1)
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=users, rng=0)
    m.delete(user=hot[0])
    before = (len(m), m.log, m.statistics.theta.copy())
    for kw in (dict(user=hot[0]), dict(rows=[0, 0]), dict(rows=[10_000]), dict(), dict(user="u1", rows=[1])):
        with pytest.raises(ValueError):
            m.delete(**kw)
    assert (len(m), m.log) == before[:2] and np.array_equal(m.statistics.theta, before[2])


def test_every_array_of_a_state_and_a_request_is_read_only():
    """The statistics are immutable after fit and after a rollback: a writable ``counts`` (once made by
    a float round trip) could be set to 0 behind the model's back, and a release state shares it."""
    x, a, r = data(3)
    state = fit_contextual(x, a, r, n_arms=3, context_bound=1.0, beta=0.5)
    request = ContextualRequest(x[:5], a[:5], r[:5])
    after = rollback(state, request)
    for obj in (state, after, request):
        for name, value in vars(obj).items():
            if isinstance(value, np.ndarray):
                assert not value.flags.writeable, (type(obj).__name__, name)
    assert after.counts.dtype == np.int64 and request.arms.dtype == np.int64


def test_emptying_an_arm_in_two_requests_leaves_exactly_what_a_refit_stores():
    """A rank-k downdate leaves a rounding residue of the deleted rows; where an arm has no row left
    its statistic is set to that of no rows (``lam I`` and 0), as a refit stores it, bit for bit."""
    x, a, r = data(4, n=80)
    state = fit_contextual(x, a, r, n_arms=3, context_bound=1.0, beta=0.5)
    arm0 = np.flatnonzero(a == 0)
    half = arm0.size // 2
    for rows in (arm0[:half], arm0[half:]):
        state = rollback(state, ContextualRequest(x[rows], a[rows], r[rows]))
    keep = np.flatnonzero(a != 0)
    refit = fit_contextual(x[keep], a[keep], r[keep], n_arms=3, context_bound=1.0, beta=0.5)
    assert state.counts[0] == 0
    assert np.array_equal(state.gram[0], refit.gram[0]) and np.array_equal(state.moments[0], refit.moments[0])
    assert np.array_equal(state.theta[0], refit.theta[0])


def test_a_model_with_every_row_deleted_saves_and_loads(tmp_path):
    x, a, r, users, hot, ev = synthetic(2, n=40)
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, rng=0)
    m.delete(rows=np.arange(20))
    m.delete(rows=np.arange(20, 40))
    assert len(m) == 0
    m.save(tmp_path / "empty.npz")
    back = load_contextual_model(tmp_path / "empty.npz")
    assert len(back) == 0 and back.log == m.log
    assert np.array_equal(back.statistics.gram, m.statistics.gram)
    assert np.array_equal(back.statistics.gram, np.broadcast_to(np.eye(3), (2, 3, 3)))


def test_masked_row_ids_are_refused_and_change_nothing():
    from bandit_unlearning.mab.contextual_model import DeleteRows
    from bandit_unlearning.mab.model import LCBModel

    x, a, r, users, hot, ev = synthetic(3, n=40)
    masked = np.ma.masked_array([1, 2], mask=[0, 1])
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, rng=0)
    lcb = LCBModel.fit(a, r, rng=np.random.default_rng(0))
    for model in (m, lcb):
        with pytest.raises(TypeError, match="masked"):
            model.delete(rows=masked)
        assert len(model) == 40 and model.log == ()
    with pytest.raises(TypeError, match="masked"):
        DeleteRows(masked)


def test_sequential_sensitivity_dominates_the_one_shot():
    x, a, r, *_ = synthetic(2)
    st_ = fit_contextual(x, a, r, n_arms=2, context_bound=1.0)
    k = np.array([5, 0])
    assert sequential_sensitivity(st_, k)[0] >= deletion_sensitivity(st_, k)[0]
    assert sequential_sensitivity(st_, k)[1] == 0.0


def test_model_pickles_without_its_generator_or_deleted_rows():
    import pickle

    x, a, r, users, hot, ev = synthetic(3)
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=users, rng=5)
    plain = next(u for u in users if u not in hot)  # its rows have random (distinctive) contexts
    rec = m.delete(user=plain)
    blob = pickle.dumps(m)
    back = pickle.loads(blob)
    assert "_rng" not in m.__getstate__()
    assert back.log == m.log and np.array_equal(back.statistics.theta, m.statistics.theta)
    assert all(x[i].tobytes() not in blob for i in rec.rows)
    back.delete(user=hot[1])  # a fresh generator: the model still works


def test_model_refuses_a_user_id_that_only_hashes_like_one():
    x, a, r, _, _, _ = synthetic(1, n=40)
    users = [i // 4 for i in range(40)]
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=users, rng=0)
    before = (len(m), m.log, m.statistics.theta.copy())
    for bad in (True, 1.0, np.float64(1.0), [1]):
        with pytest.raises(TypeError, match="user must be a str or int id"):
            m.delete(user=bad)
        assert (len(m), m.log) == before[:2] and np.array_equal(m.statistics.theta, before[2])
    assert m.delete(user=np.int64(1)).rows == (4, 5, 6, 7)


def test_fit_refuses_user_ids_that_would_merge_with_an_int():
    x, a, r, _, _, _ = synthetic(1, n=8)
    for users in ([1.0] + [1] * 7, [True] + [1] * 7, [np.bool_(True)] + [2] * 7):
        with pytest.raises(TypeError, match="user must be a str or int id"):
            ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=users, rng=0)
    m = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=[np.int64(1)] * 4 + ["1"] * 4, rng=0)
    assert m.delete(user=1).rows == (0, 1, 2, 3) and m.delete(user="1").rows == (4, 5, 6, 7)
