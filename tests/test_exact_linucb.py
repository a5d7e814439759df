"""Tests of bandit_unlearning.exact.linucb (chapter B12): TV-stable disjoint LinUCB as a prefix-sum
learner -- statistics and their sensitivity, the noise bounds, zero noise equals plain LinUCB (a loop
oracle here, and MABWiser's LinUCB when it is installed), unlearning, immutability, bad input."""

import math
import pickle
import warnings

import numpy as np
import pytest

import bandit_unlearning.exact.linucb as lin
from bandit_unlearning.exact.learner import ZERO_USER, same_model, train
from bandit_unlearning.protocol import DeleteStep, unlearn, verify
from bandit_unlearning.exact.linucb import (
    SENSITIVITY_BETWEEN_USERS,
    SENSITIVITY_ZERO_DUMMY,
    TIE_TOLERANCE,
    LinUCBConfig,
    LinUCBModel,
    LinUCBUser,
    block_size,
    choose,
    classification_users,
    gram_shift,
    initial_model,
    linear_users,
    linucb_arms,
    linucb_learner,
    linucb_rewards,
    linucb_scores,
    linucb_statistics,
    linucb_update,
    noise_nodes,
    unit_ball,
    unpack,
    vector_bound,
    widened_radius,
)
from bandit_unlearning.exact.tree import BinaryTree

K, D = 4, 5


@pytest.fixture(scope="module")
def users():
    theta = np.random.default_rng(1).uniform(0, 1, (K, D)) / math.sqrt(D)
    return linear_users(theta, 300, seed=5)


def plain_linucb(users, n_arms, dim, alpha, l2):
    """Loop oracle: disjoint LinUCB with exact sums and the same tie rule."""
    A = [l2 * np.eye(dim) for _ in range(n_arms)]
    b = [np.zeros(dim) for _ in range(n_arms)]
    arms = []
    for u in users:
        x = u.context
        sc = [
            np.linalg.solve(A[a], b[a]) @ x + alpha * math.sqrt(x @ np.linalg.solve(A[a], x))
            for a in range(n_arms)
        ]
        a = choose(sc)
        arms.append(a)
        A[a] = A[a] + np.outer(x, x)
        b[a] = b[a] + u.rewards[a] * x
    return np.array(arms)


# --- statistics and sensitivity ---------------------------------------------------------------------
def test_statistics_isometry_and_unpack():
    g = np.random.default_rng(2)
    for dim in (1, 2, 5):
        x = unit_ball(g.normal(size=(1, dim)))[0]
        s = linucb_statistics(1, x, 0.7, 3)
        assert s.shape == (3 * block_size(dim),)
        assert abs(np.linalg.norm(s) ** 2 - ((x @ x) ** 2 + 0.49 * (x @ x))) < 1e-12
        G, b = unpack(s, 3, dim)
        assert np.allclose(G[1], np.outer(x, x)) and np.allclose(b[1], 0.7 * x)
        assert not G[[0, 2]].any() and not b[[0, 2]].any()
        assert np.array_equal(G, G.transpose(0, 2, 1))


def test_sensitivities():
    assert SENSITIVITY_ZERO_DUMMY == pytest.approx(math.sqrt(2))
    assert SENSITIVITY_BETWEEN_USERS == pytest.approx(3 / math.sqrt(2))
    x1, x2 = np.array([1.0, 0.0]), np.array([-0.5, math.sqrt(3) / 2])
    gap = np.linalg.norm(linucb_statistics(0, x1, 1.0, 1) - linucb_statistics(0, x2, 1.0, 1))
    assert gap == pytest.approx(SENSITIVITY_BETWEEN_USERS, abs=1e-12)
    g = np.random.default_rng(3)
    X = unit_ball(g.normal(size=(4000, 3)) * 2)
    R = g.random((4000, 2))
    for i in range(0, 4000, 2):
        for arm2 in (0, 1):
            gap = np.linalg.norm(
                linucb_statistics(0, X[i], R[i, 0], 2) - linucb_statistics(arm2, X[i + 1], R[i, 1], 2)
            )
            assert gap <= SENSITIVITY_BETWEEN_USERS + 1e-12
        assert np.linalg.norm(linucb_statistics(0, X[i], R[i, 0], 2)) <= SENSITIVITY_ZERO_DUMMY + 1e-12


def test_unit_ball_rows_pass_validation():
    X = unit_ball(np.random.default_rng(4).normal(size=(500, 7)) * 10)
    assert np.all(np.einsum("ij,ij->i", X, X) <= 1.0)
    for x in X[:20]:
        LinUCBUser(x, np.zeros(2))


# --- noise bounds --------------------------------------------------------------------------------
def test_bounds_formulas_and_monotonicity():
    assert [noise_nodes(t) for t in (1, 2, 3, 7, 8, 255)] == [1, 1, 2, 3, 1, 8]
    c = gram_shift(1.0, 4, 3, 2, 0.1)
    u = math.sqrt(2 * math.log(3 * 2 * 3 * 4 / 0.1))
    assert c == pytest.approx(math.sqrt(2) * (math.sqrt(8) + u))
    assert vector_bound(1.0, 4, 3, 2, 0.1) == pytest.approx(math.sqrt(2) * (2 + u))
    assert gram_shift(0.0, 4, 3, 2, 0.1) == 0.0
    assert widened_radius(0.7, 2.0, 1.0, 0.0, 0.0) == 0.7
    assert widened_radius(0.7, 2.0, 1.0, 1.0, 1.0) == pytest.approx(
        0.7 + (math.sqrt(5) - math.sqrt(2)) + 1 / math.sqrt(3)
    )
    # sharper than the Gordon bound 2 sqrt(d) + sqrt(2 ln(2 K t (t+1) / delta)) for every d >= 2 at these t
    for d in (2, 8, 16, 64):
        for t in (1, 100, 10**6):
            gordon = math.sqrt(t.bit_count()) * (
                2 * math.sqrt(d) + math.sqrt(2 * math.log(2 * 10 * t * (t + 1) / 0.01))
            )
            assert gram_shift(1.0, d, t, 10, 0.01) < gordon


def test_spectral_bound_monte_carlo():
    """P[||N|| > sqrt(2d) + u] <= 2 e^{-u^2/2} = 0.01 (two tails): the count over 10,000 draws stays below
    the 1 - 1e-6 binomial quantile (so a correct bound fails with probability < 1e-6 per dimension);
    two too-small shifts (the expectation alone; one node's bound at t = 255) are rejected."""
    from scipy import stats

    n, q = 10000, 0.01
    u = math.sqrt(2 * math.log(2 / q))
    limit = stats.binom.ppf(1 - 1e-6, n, q)
    g = np.random.default_rng(6)
    for dim in (3, 10):
        m = dim * (dim + 1) // 2
        mats = unpack(
            np.concatenate([g.standard_normal((n, m)), np.zeros((n, dim))], axis=1).ravel(), n, dim
        )[0]
        norms = np.abs(np.linalg.eigvalsh(mats)).max(axis=1)
        assert np.sum(norms > math.sqrt(2 * dim) + u) <= limit
        assert np.sum(norms > math.sqrt(2 * dim)) > limit  # expectation alone fails
        assert (
            np.sum(math.sqrt(8) * norms > math.sqrt(2 * dim) + u) > limit
        )  # one-node bound at t = 255 fails


def test_shift_holds_through_the_tree(users):
    cfg = LinUCBConfig(K, D, alpha=0.5, delta=1e-6)
    run = train(linucb_learner(cfg, 0.5), users[:64], np.random.default_rng(7))
    for t in range(1, run.T + 1):
        Gn, bn = unpack(run.noisy_prefix_sum(t), K, D)
        Gc, bc = unpack(run.tree.clean_prefix_sum(t), K, D)
        assert np.abs(np.linalg.eigvalsh(Gn - Gc)).max() <= gram_shift(0.5, D, t, K, 1e-6)
        assert np.linalg.norm(bn - bc, axis=1).max() <= vector_bound(0.5, D, t, K, 1e-6)
        c = gram_shift(0.5, D, t, K, 1e-6)
        assert np.allclose(np.linalg.inv(run.models[t].Vinv), Gn + (1.0 + lin.SHIFT_FACTOR * c) * np.eye(D))
        assert run.models[t].radius == widened_radius(
            0.5, 1.0, 1.0, gram_shift(0.5, D, t, K, 1e-6), vector_bound(0.5, D, t, K, 1e-6)
        )


# --- zero noise is plain LinUCB -----------------------------------------------------------------------
@pytest.mark.parametrize("alpha,l2", [(0.5, 1.0), (2.0, 0.3), (0.0, 1.0)])
def test_zero_noise_equals_plain_linucb(users, alpha, l2):
    run = train(linucb_learner(LinUCBConfig(K, D, alpha=alpha, l2=l2), 0.0), users, np.random.default_rng(8))
    assert np.array_equal(linucb_arms(run), plain_linucb(users, K, D, alpha, l2))
    verify(run)


def mabwiser_stream(users, alpha, l2, decide):
    """Run MABWiser's LinUCB on ``users``; ``decide(step, expectations, mabwiser_choice) -> arm`` picks
    the arm it is updated with.  Returns MABWiser's own choices."""
    from mabwiser.mab import MAB, LearningPolicy

    mab = MAB(arms=list(range(K)), learning_policy=LearningPolicy.LinUCB(alpha=alpha, l2_lambda=l2), seed=0)
    mab.fit(decisions=np.zeros(0, dtype=int), rewards=np.zeros(0), contexts=np.zeros((0, D)))
    choices = []
    for i, u in enumerate(users):
        expect = mab.predict_expectations(u.context[None])
        choices.append(int(mab.predict(u.context[None])))
        a = decide(i, np.array([expect[k] for k in range(K)]), choices[-1])
        mab.partial_fit([a], [u.rewards[a]], u.context[None])
    return np.array(choices)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.5])
def test_zero_noise_equals_mabwiser_linucb(users, alpha):
    """Decision for decision against MABWiser's LinUCB (same alpha, l2 = 1, the same stream), scores to 1e-9."""
    pytest.importorskip("mabwiser", reason="MABWiser is not installed (it is in the dev extra)")
    run = train(linucb_learner(LinUCBConfig(K, D, alpha=alpha, l2=1.0), 0.0), users, np.random.default_rng(9))
    ours = linucb_arms(run)

    def decide(i, expect, choice):
        assert np.abs(expect - linucb_scores(run.models[i], users[i].context)).max() < 1e-9
        return choice

    assert np.array_equal(mabwiser_stream(users, alpha, 1.0, decide), ours)


def test_mabwiser_untrained_arms_with_l2_not_one(users):
    """MABWiser (2.7) initialises ``A_inv`` to ``l2 I`` instead of ``I / l2``: until an arm's first update its
    bonus is ``alpha sqrt(l2) ||x||`` where LinUCB's is ``alpha ||x|| / sqrt(l2)``.  The two agree when
    ``l2 = 1`` and, for any ``l2``, on every arm MABWiser has updated once (fed our decisions)."""
    pytest.importorskip("mabwiser", reason="MABWiser is not installed (it is in the dev extra)")
    alpha, l2 = 1.5, 0.5
    run = train(linucb_learner(LinUCBConfig(K, D, alpha=alpha, l2=l2), 0.0), users, np.random.default_rng(9))
    ours = linucb_arms(run)
    seen = set()

    def decide(i, expect, choice):
        x, mine = users[i].context, linucb_scores(run.models[i], users[i].context)
        for a in range(K):
            want = mine[a] if a in seen else alpha * math.sqrt(l2) * math.sqrt(x @ x)
            assert abs(expect[a] - want) < 1e-9
        seen.add(int(ours[i]))
        return int(ours[i])

    mabwiser_stream(users, alpha, l2, decide)
    assert seen == set(range(K))


def test_loop_internals_equal_the_public_functions(users):
    """The learner's loop calls unchecked internals; they give the public functions' results bit for bit."""
    cfg = LinUCBConfig(K, D, alpha=0.5, delta=1e-3)
    for sigma in (0.0, 0.7):
        lrn = linucb_learner(cfg, sigma)
        run = train(lrn, users[:40], np.random.default_rng(8))
        for t in range(1, run.T + 1):
            u, w = run.noisy_prefix_sum(t), run.models[t - 1]
            public = linucb_update(u, t, w, cfg, sigma)
            assert type(public) is LinUCBModel and same_model(public, run.models[t])
            assert not run.models[t].theta.flags.writeable and not run.models[t].Vinv.flags.writeable
            rebuilt = LinUCBModel(
                run.models[t].theta, run.models[t].Vinv, run.models[t].radius, run.models[t].shift
            )
            assert np.array_equal(rebuilt.Vinv, run.models[t].Vinv) and rebuilt.shift == run.models[t].shift
            user = run.users[t - 1]
            arm = choose(linucb_scores(w, user.context))
            assert np.array_equal(
                run.tree.leaf(t), linucb_statistics(arm, user.context, user.rewards[arm], K)
            )


def test_tie_rule():
    assert choose([1.0, 1.0 + TIE_TOLERANCE / 2, 0.0]) == 0
    assert choose([1.0, 1.0 + 2 * TIE_TOLERANCE, 0.0]) == 1
    w = initial_model(LinUCBConfig(3, 2))
    assert choose(linucb_scores(w, np.array([0.6, 0.8]))) == 0


# --- unlearning ------------------------------------------------------------------------------------------
def test_unlearn_verifies_and_records_nothing_by_default(users):
    g = np.random.default_rng(10)
    run = train(linucb_learner(LinUCBConfig(K, D), 0.3), users[:64], g)
    retrained = 0
    for t in (1, 17, 40, 64):
        new, rec = unlearn(run, DeleteStep(t), rng=g)
        verify(new)
        assert new.users[t - 1] is ZERO_USER and rec.diagnostics is None and rec.B == SENSITIVITY_ZERO_DUMMY
        with pytest.raises(AttributeError):
            rec.shift_norm
        retrained += rec.retrained
    assert retrained > 0
    verify(run)
    assert run.deleted == frozenset()


def test_light_and_dense_tree_give_the_same_run(users):
    runs = [
        train(linucb_learner(LinUCBConfig(K, D), 0.4, tree_factory=f), users[:40], np.random.default_rng(11))
        for f in (lin.LightTree, BinaryTree)
    ]
    assert np.array_equal(linucb_arms(runs[0]), linucb_arms(runs[1]))
    assert all(np.array_equal(a.theta, b.theta) for a, b in zip(runs[0].models, runs[1].models))


def test_models_and_users_are_read_only_also_after_pickling(users):
    run = train(linucb_learner(LinUCBConfig(K, D), 0.2), users[:10], np.random.default_rng(12))
    from bandit_unlearning.secrecy import allow_secrets

    with allow_secrets():  # a run holds its tree's keys: an explicit opt-in
        back = pickle.loads(pickle.dumps(run))
    for r in (run, back):
        with pytest.raises(ValueError):
            r.final_model.theta[0, 0] = 1.0
        with pytest.raises(ValueError):
            r.final_model.Vinv[0, 0, 0] = 1.0
        with pytest.raises(ValueError):
            r.users[0].context[0] = 0.0
    verify(back)


def test_rewards_and_classification_users():
    users = classification_users(unit_ball(np.eye(3)), np.array([2, 0, 1]), 3)
    assert [int(np.argmax(u.rewards)) for u in users] == [2, 0, 1]
    run = train(linucb_learner(LinUCBConfig(3, 3), 0.0), users, np.random.default_rng(13))
    r = linucb_rewards(run)
    assert r.shape == (3,) and set(np.unique(r)) <= {0.0, 1.0}


def test_linear_users_replayable():
    theta = np.full((2, 3), 0.3)
    a, b = linear_users(theta, 5, seed=1), linear_users(theta, 5, seed=1)
    assert all(
        np.array_equal(u.context, v.context) and np.array_equal(u.rewards, v.rewards) for u, v in zip(a, b)
    )
    assert all(u.context @ u.context <= 1 for u in a)
    fresh = linear_users(theta, 5)
    assert not np.array_equal(fresh[0].context, a[0].context)


# --- bad input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,err",
    [
        (lambda: LinUCBUser(np.array([1.0, 0.1]), np.zeros(2)), ValueError),
        (lambda: LinUCBUser(np.array([0.1, 0.1]), np.array([2.0])), ValueError),
        (lambda: LinUCBUser(np.array([np.nan]), np.array([0.0])), ValueError),
        (lambda: LinUCBConfig(0, 2), ValueError),
        (lambda: LinUCBConfig(2, 0), ValueError),
        (lambda: LinUCBConfig(2, 2, alpha=math.inf), ValueError),
        (lambda: LinUCBConfig(2, 2, l2=-1.0), ValueError),
        (lambda: LinUCBConfig(2, 2, theta_bound=0.0), ValueError),
        (lambda: LinUCBConfig(2, 2, delta=0.0), ValueError),
        (lambda: linucb_learner("config", 0.0), TypeError),
        (lambda: linucb_learner(LinUCBConfig(2, 2), math.nan), ValueError),
        (lambda: unit_ball(np.zeros(3)), ValueError),
        (lambda: classification_users(np.zeros((2, 2)), np.array([0.5, 1.0]), 2), ValueError),
        (lambda: classification_users(np.zeros((2, 2)), np.array([0]), 2), ValueError),
        (lambda: linear_users(np.zeros(3), 2, seed=1), ValueError),
        (lambda: noise_nodes(0), ValueError),
    ],
)
def test_bad_input(call, err):
    with pytest.raises(err):
        call()


def test_wrong_user_refused_before_anything_changes():
    g = np.random.default_rng(14)
    state = g.bit_generator.state
    with pytest.raises(TypeError):
        train(linucb_learner(LinUCBConfig(2, 2), 0.1), (LinUCBUser(np.zeros(3), np.zeros(2)),), g)
    assert g.bit_generator.state == state
    w = initial_model(LinUCBConfig(2, 2, l2=4.0))
    assert isinstance(w, LinUCBModel) and np.array_equal(w.Vinv[1], np.eye(2) / 4) and not w.theta.any()
    with pytest.raises(ValueError):
        linucb_update(np.zeros(3), 1, w, LinUCBConfig(2, 2), 0.0)  # prefix sum of the wrong size


def test_public_names_are_covered():
    tested = {
        "LinUCBUser",
        "unit_ball",
        "block_size",
        "linucb_statistics",
        "unpack",
        "SENSITIVITY_ZERO_DUMMY",
        "SENSITIVITY_BETWEEN_USERS",
        "noise_nodes",
        "gram_shift",
        "vector_bound",
        "widened_radius",
        "LinUCBConfig",
        "LinUCBModel",
        "linucb_scores",
        "choose",
        "initial_model",
        "linucb_update",
        "linucb_learner",
        "linucb_arms",
        "linucb_rewards",
        "linear_users",
        "classification_users",
        "TIE_TOLERANCE",
        "SQRT2",
        "SHIFT_FACTOR",
    }
    assert set(lin.__all__) <= tested, set(lin.__all__) - tested


def test_shift_factor_is_the_one_the_radius_assumes():
    """The radius of section 2c (``sqrt(l2 + 3 c)`` and ``gamma / sqrt(l2 + c)``) is derived for the shift
    ``2 c``: the exported factor must be 2 for the confidence set to hold."""
    assert lin.SHIFT_FACTOR == 2.0
    c, g = 0.7, 0.3
    assert widened_radius(0.5, 1.0, 1.0, c, g) == 0.5 + (
        math.sqrt(1.0 + (lin.SHIFT_FACTOR + 1) * c) - 1.0
    ) + g / math.sqrt(1.0 + (lin.SHIFT_FACTOR - 1) * c)


def test_set_accuracy_is_the_loop_it_describes():
    """``set_accuracy`` = one sigma = 0 run, ``reps`` runs per rho, then the first design's runs, drawn from
    one generator in that order: replayed by hand from the same seed, every reward is the same."""
    pytest.importorskip("sklearn")
    from bandit_unlearning.exact.tree import sigma_paper
    from bandit_unlearning.experiments.linucb_sets import pca_users, previous_learner, set_accuracy

    users = pca_users("iris", 3, True)[:60]
    assert len(users) == 60 and users[0].context.size == 3 and users[0].rewards.size == 3
    cfg = LinUCBConfig(3, 3, alpha=0.5, l2=1.0)
    res = set_accuracy(users, cfg, [1.0, 10.0], 2, np.random.default_rng(3), previous_rhos=[1.0])
    rng = np.random.default_rng(3)
    assert np.array_equal(res["non_private"], linucb_rewards(train(linucb_learner(cfg, 0.0), users, rng)))
    for rho in (1.0, 10.0):
        sigma = sigma_paper(rho, SENSITIVITY_ZERO_DUMMY, 60)
        assert res["sigma"][rho] == sigma
        for r in res["rewards"][rho]:
            assert np.array_equal(r, linucb_rewards(train(linucb_learner(cfg, sigma), users, rng)))
    prev = linucb_rewards(
        train(previous_learner(cfg, sigma_paper(1.0, SENSITIVITY_ZERO_DUMMY, 60)), users, rng)
    )
    assert np.array_equal(res["previous"][1.0][0], prev)
    majority = max(np.mean([u.rewards[a] for u in users]) for a in range(3))
    assert res["majority"] == majority


# --- the noiseless update's reuse of inverses, and the compiled path -----------------------------------
def _fresh(model):
    """``model``'s four fields in a new model: no record of the prefix sum behind it (nothing to reuse)."""
    return LinUCBModel(model.theta, model.Vinv, model.radius, model.shift)


def _zero_coordinate_users(users, dim):
    """Users whose contexts have one coordinate set to 0 (statistics with signed zeros), a dummy among them."""
    out = [
        LinUCBUser(np.where(np.arange(dim) == i % dim, 0.0, u.context), u.rewards)
        for i, u in enumerate(users)
    ]
    out[5] = ZERO_USER
    return out


@pytest.mark.parametrize("l2", [1.0, 0.3])
def test_noiseless_update_reuses_exactly_the_inverses_a_full_inversion_gives(users, l2):
    """At sigma = 0 the update inverts only the arms whose block of u~ changed bit for bit; every model
    equals, byte for byte, the update that inverts every arm (a model without the record of its prefix
    sum), at every step of runs on ordinary contexts and on contexts with zero coordinates; and the update
    does invert fewer arms than K on most steps (the claim has something to test).  The record moves from
    model to model: only the newest model of the run holds one."""
    cfg = LinUCBConfig(K, D, alpha=0.5, l2=l2)
    for stream in (users[:200], _zero_coordinate_users(users[:200], D)):
        run = train(linucb_learner(cfg, 0.0), stream, np.random.default_rng(3))
        assert [t for t, w in enumerate(run.models) if "_source" in vars(w)] == [run.T]
        reused = 0
        for t in range(1, run.T + 1):
            u, w = run.noisy_prefix_sum(t), run.models[t - 1]
            full = linucb_update(u, t, _fresh(w), cfg, 0.0)
            w_next = run.models[t]
            assert (
                w_next.theta.tobytes() == full.theta.tobytes()
                and w_next.Vinv.tobytes() == full.Vinv.tobytes()
            )
            assert (w_next.radius, w_next.shift) == (full.radius, full.shift)
            if t > 1:
                before = run.noisy_prefix_sum(t - 1).reshape(K, -1).view(np.int64)
                same = (u.reshape(K, -1).view(np.int64) == before).all(axis=1)
                reused += int(same.sum())
                assert all(w_next.Vinv[a].tobytes() == w.Vinv[a].tobytes() for a in np.flatnonzero(same))
        assert reused > (K - 2) * (run.T - 1)


def test_noiseless_update_ignores_a_record_of_another_ridge(users):
    """A model whose record comes from another ``l2`` is not reused: every arm inverted.  (With the same
    ``l2`` and the same prefix sum every arm is reused: the record is what the update reads.)"""
    cfg, other = LinUCBConfig(K, D, l2=1.0), LinUCBConfig(K, D, l2=0.5)
    u = None
    for config, reused in ((cfg, True), (other, False)):
        run = train(linucb_learner(cfg, 0.0), users[:30], np.random.default_rng(4))
        u, w = run.noisy_prefix_sum(30), run.final_model
        got = linucb_update(u, 30, w, config, 0.0)
        want = linucb_update(u, 30, _fresh(w), config, 0.0)
        assert got.Vinv.tobytes() == want.Vinv.tobytes() and got.theta.tobytes() == want.theta.tobytes()
        assert (got.Vinv.tobytes() == w.Vinv.tobytes()) == reused
        assert "_source" in vars(got) and "_source" not in vars(w)
    assert np.allclose(np.linalg.inv(got.Vinv), unpack(u, K, D)[0] + 0.5 * np.eye(D))


def test_a_singular_matrix_still_raises_linalg_error():
    """The update's inverse skips np.linalg.inv's wrapper; a singular matrix still raises LinAlgError (and
    changes nothing): ``G`` with diagonal ``-l2`` makes ``V = 0``."""
    cfg = LinUCBConfig(2, 2, l2=1.0)
    u = np.zeros(2 * block_size(2))
    u[[0, 2]] = -1.0  # arm 0's diagonal entries (vech order 00, 01, 11)
    before = u.copy()
    with pytest.raises(np.linalg.LinAlgError), warnings.catch_warnings():
        warnings.simplefilter("error")
        linucb_update(u, 1, initial_model(cfg), cfg, 0.0)
    with pytest.raises(np.linalg.LinAlgError), np.errstate(all="raise"):  # numpy's own error state too
        linucb_update(u, 1, initial_model(cfg), cfg, 0.0)
    assert np.array_equal(u, before)
    # the same through the reuse of inverses: one arm changed, its inverse written in place
    users = classification_users(unit_ball(np.array([[0.6, 0.8], [0.8, -0.6]])), np.array([0, 1]), 2)
    run = train(linucb_learner(cfg, 0.0), users, np.random.default_rng(0))
    w, u = run.final_model, run.noisy_prefix_sum(2)
    u[:3] = [-1.0, 0.0, -1.0]  # arm 0 only: G_0 = -I, arm 1 as recorded
    with pytest.raises(np.linalg.LinAlgError), warnings.catch_warnings():
        warnings.simplefilter("error")
        linucb_update(u, 3, w, cfg, 0.0)
    assert w.Vinv.flags.writeable is False and np.isfinite(w.Vinv).all()
    assert "_source" in vars(w)  # a failed call keeps the record; a successful one moves it on
    assert "_source" in vars(
        linucb_update(run.noisy_prefix_sum(2), 3, w, cfg, 0.0)
    ) and "_source" not in vars(w)


def test_pickled_model_drops_the_record(users):
    """The record of the prefix sum is private to the update: not pickled; the pickled model's fields and
    its next update are unchanged."""
    cfg = LinUCBConfig(K, D)
    run = train(linucb_learner(cfg, 0.0), users[:20], np.random.default_rng(5))
    w = run.final_model
    back = pickle.loads(pickle.dumps(w))
    assert "_source" in vars(w) and "_source" not in vars(back) and same_model(w, back)
    u = run.noisy_prefix_sum(20)
    assert (
        linucb_update(u, 20, back, cfg, 0.0).Vinv.tobytes()
        == linucb_update(u, 20, w, cfg, 0.0).Vinv.tobytes()
    )


@pytest.mark.skipif(not lin.accel.available(), reason="numba is not installed")
@pytest.mark.parametrize("sigma", [0.0, 0.6])
def test_compiled_kernels_give_the_numpy_runs_bit_for_bit(users, sigma):
    """With the optional compiled kernels (oracle's arm and statistic, the changed arms' Gram matrices)
    every model, arm and tree leaf equals the numpy reference's, also after deletions."""
    from bandit_unlearning.exact import accel

    cfg = LinUCBConfig(K, D, alpha=0.5, l2=0.7)
    results = []
    for flag in (False, True):
        previous = accel.set_enabled(flag)
        try:
            out = []
            for stream in (users[:150], _zero_coordinate_users(users[:150], D)):
                g = np.random.default_rng(6)
                run = train(linucb_learner(cfg, sigma), stream, g)
                runs = [run] + [unlearn(run, DeleteStep(t), rng=g)[0] for t in (1, 70, 150)]
                out.append(
                    [
                        (
                            b"".join(m.theta.tobytes() + m.Vinv.tobytes() for m in r.models),
                            linucb_arms(r).tobytes(),
                            r.tree.leaves().tobytes(),
                        )
                        for r in runs
                    ]
                )
            results.append(out)
        finally:
            accel.set_enabled(previous)
    assert results[0] == results[1]


def test_update_keeps_its_own_copy_of_the_prefix_sum():
    """``learner.update`` is public: a caller that writes to its array after the call (or holds a view of
    it) must neither change the next update's inverses nor find its array frozen."""
    cfg = LinUCBConfig(2, 2, l2=1.0)
    users = classification_users(unit_ball(np.array([[0.6, 0.8], [0.8, -0.6]])), np.array([0, 1]), 2)
    learner = linucb_learner(cfg, 0.0)
    run = train(learner, users, np.random.default_rng(0))
    base = run.noisy_prefix_sum(2).copy()
    view = base[:]
    m1 = learner.update(view, 2, run.final_model)
    assert view.flags.writeable and base.flags.writeable
    base[block_size(2) : block_size(2) + 3] += [1.0, 0.0, 1.0]  # arm 1's Gram block changes after the call
    m2 = learner.update(base, 3, m1)
    want = linucb_update(base, 3, initial_model(cfg), cfg, 0.0)
    assert m2.Vinv.tobytes() == want.Vinv.tobytes() and m2.theta.tobytes() == want.theta.tobytes()
