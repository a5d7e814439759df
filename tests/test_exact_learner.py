"""Tests of bandit_unlearning.exact.learner and .bandit (chapters B3a-B3b)."""

import dataclasses

import numpy as np
import pytest

from bandit_unlearning.exact.bandit import (
    BanditUser,
    actions,
    bandit_statistics,
    bandit_users,
    chosen_arm,
    pseudo_regret,
    ucb_bandit_learner,
    ucb_indices,
)
from bandit_unlearning.exact.learner import (
    ExactOptions,
    extend,
    PrefixSumLearner,
    replayable_users,
    ReplayableUser,
    Run,
    same_model,
    train,
    ZERO_USER,
)
from bandit_unlearning.protocol import DeleteStep, unlearn, verify
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.exact.tree import BinaryTree, leaf_path
from bandit_unlearning.privacy.coupling import tv_gaussians

MEANS = np.array([0.7, 0.5, 0.3])


@pytest.fixture(scope="module")
def users():
    return bandit_users(MEANS, 40, seed=3)


# --- replayable users --------------------------------------------------------------------------
def test_replayable_user_streams():
    u = ReplayableUser(12345)
    a = u.uniforms(5, 2, 3, 4)
    u.uniforms(7, 1)  # other questions in between change nothing
    assert np.array_equal(a, ReplayableUser(12345).uniforms(5, 2, 3, 4))
    assert not np.array_equal(a, u.uniforms(5, 2, 3, 5))
    assert not np.array_equal(a, ReplayableUser(12346).uniforms(5, 2, 3, 4))
    assert np.array_equal(u.uniforms(3), u.generator().random(3))


def test_replayable_users_population():
    pop = replayable_users(10, seed=7)
    assert len({u.key for u in pop}) == 10
    fresh = replayable_users(10) + replayable_users(10)  # OS entropy: independent keys
    assert len({u.key for u in fresh} | {u.key for u in pop}) == 30
    assert len(bandit_users(MEANS, 4)) == 4  # seed=None by default
    assert pop[4:] == replayable_users(6, seed=7, start=4)
    assert (
        bandit_users(MEANS, 5, seed=1, start=3)[0].rewards.tolist()
        == bandit_users(MEANS, 4, seed=1)[3].rewards.tolist()
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: ReplayableUser(-1),
        lambda: ReplayableUser(2**128),
        lambda: ReplayableUser(1).generator(1, 2, 3, 4),
        lambda: ReplayableUser(1).generator(-1),
        lambda: replayable_users(-1, seed=1),
        lambda: BanditUser([0.5, 1.5]),
        lambda: BanditUser([]),
        lambda: bandit_users([0.2, 1.2], 3, seed=0),
    ],
)
def test_user_bad_input(call):
    with pytest.raises((ValueError, TypeError)):
        call()


# --- the bandit instance -----------------------------------------------------------------------
def test_bandit_pieces():
    x = bandit_statistics(1, 0.5, 3)
    assert x.tolist() == [0, 1, 0, 0, 0.5, 0]
    w = ucb_indices(np.array([0.5, 4.0, 2.0, 0.0, 2.0, 1.0]), 10, 3)
    assert w[0] == np.inf and w[1] == pytest.approx(0.5 + np.sqrt(2 * np.log(10) / 4))
    assert chosen_arm(np.array([1.0, 3.0, 3.0])) == 1
    assert chosen_arm(np.array([np.inf, np.inf, 0.0])) == 0


def test_zero_noise_is_plain_ucb(users):
    run = train(ucb_bandit_learner(3, 0.0), users, np.random.default_rng(0))
    counts, sums, w = np.zeros(3), np.zeros(3), np.full(3, np.inf)
    for t, user in enumerate(users, start=1):
        a = int(np.argmax(w))
        assert actions(run)[t - 1] == a
        counts[a] += 1
        sums[a] += user.rewards[a]
        w = ucb_indices(np.concatenate([counts, sums]), t, 3)
    assert pseudo_regret(run, MEANS)[-1] >= 0


# --- train / extend / verify -------------------------------------------------------------------
def test_train_records_and_verifies(users):
    run = train(ucb_bandit_learner(3, 1.5), users, np.random.default_rng(1))
    assert run.T == 40 and len(run.models) == 41 and run.tree.frozen and run.deleted == frozenset()
    verify(run)
    assert run.statistics().shape == (40, 6)
    assert same_model(run.model(1), run.learner.initial_model) and run.final_model is run.models[-1]
    with pytest.raises(ValueError):
        run.model(42)


def test_extend_equals_training_at_once(users):
    lrn = ucb_bandit_learner(3, 1.5)
    a = train(lrn, users, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    b = extend(train(lrn, users[:13], rng, capacity=1), users[13:], rng)
    assert all(same_model(x, y) for x, y in zip(a.models, b.models))
    assert np.array_equal(a.tree.values()[1], b.tree.values()[1])
    verify(b)


def test_verify_run_catches_tampering(users):
    run = train(ucb_bandit_learner(3, 1.5), users, np.random.default_rng(2))
    models = list(run.models)
    models[10] = models[10] + 1.0
    with pytest.raises(ValueError, match="w_11"):
        verify(dataclasses.replace(run, models=tuple(models)))
    swapped = list(run.users)
    swapped[4] = BanditUser(1 - swapped[4].rewards)
    if not np.array_equal(swapped[4].rewards[actions(run)[4]], run.users[4].rewards[actions(run)[4]]):
        with pytest.raises(ValueError, match="x_5"):
            verify(dataclasses.replace(run, users=tuple(swapped)))


# --- unlearning ----------------------------------------------------------------------------------
def test_unlearn_with_zero_noise_equals_retraining(users):
    lrn = ucb_bandit_learner(3, 0.0)
    run = train(lrn, users, np.random.default_rng(3))
    for t in (1, 17, 40):
        new, rec = unlearn(run, DeleteStep(t), rng=np.random.default_rng(4))
        reference = train(lrn, users[: t - 1] + (ZERO_USER,) + users[t:], np.random.default_rng(9))
        assert rec.rejected == leaf_path(t, 40)[0] and rec.steps_recomputed == 40 - t
        assert all(same_model(x, y) for x, y in zip(new.models, reference.models))
        assert np.array_equal(new.tree.values()[0], reference.tree.values()[0])


def test_unlearn_branches_and_record(users):
    lrn = ucb_bandit_learner(3, 2.0)
    run = train(lrn, users, np.random.default_rng(6))
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(60):
        t = int(rng.integers(1, 41))
        diagnostics = bool(rng.integers(2))
        new, rec = unlearn(run, DeleteStep(t), options=ExactOptions(diagnostics=diagnostics), rng=rng)
        verify(new)
        assert new.deleted == {t} and new.users[t - 1] is ZERO_USER and np.all(new.tree.leaf(t) == 0)
        assert rec.B == pytest.approx(np.sqrt(2)) and rec.sigma == 2.0
        assert rec.path == leaf_path(t, 40) and rec.T == 40
        tv_B = tv_gaussians([0.0], [np.sqrt(2)], 2.0)
        assert rec.tv_bound == pytest.approx(tv_B)
        assert rec.retrain_probability_bound == pytest.approx(1 - (1 - tv_B) ** len(rec.path))
        assert 0 <= rec.expected_steps_bound <= 40 * rec.retrain_probability_bound
        if diagnostics:
            shift = np.linalg.norm(run.tree.leaf(t))
            assert rec.shift_norm == pytest.approx(shift) and rec.tv_per_node == pytest.approx(
                tv_gaussians([0.0], [shift], 2.0)
            )
            assert rec.retrain_probability <= rec.retrain_probability_bound + 1e-15
            assert 0 <= rec.expected_steps_recomputed <= rec.expected_steps_bound + 1e-12
        else:
            assert rec.diagnostics is None
            with pytest.raises(AttributeError, match="diagnostics=True"):
                rec.shift_norm
        if rec.rejected is None:
            assert rec.steps_recomputed == 0 and new.models is run.models
        else:
            assert rec.steps_recomputed == 40 - rec.rejected.end
            assert all(a is b for a, b in zip(new.models[: rec.restart], run.models[: rec.restart]))
        seen.add(rec.retrained)
    assert seen == {True, False}


def test_unlearn_is_reproducible(users):
    run = train(ucb_bandit_learner(3, 1.0), users, np.random.default_rng(8))
    a, ra = unlearn(run, DeleteStep(9), rng=np.random.default_rng(10))
    b, rb = unlearn(run, DeleteStep(9), rng=np.random.default_rng(10))
    assert ra == rb and all(same_model(x, y) for x, y in zip(a.models, b.models))


def test_sequential_deletions_of_everything(users):
    run = train(ucb_bandit_learner(3, 1.0), users[:16], np.random.default_rng(11))
    rng = np.random.default_rng(12)
    for t in np.random.default_rng(0).permutation(16) + 1:
        run, _ = unlearn(run, DeleteStep(int(t)), rng=rng)
    verify(run)
    assert run.deleted == set(range(1, 17)) and np.all(run.statistics() == 0)
    assert all(u is ZERO_USER for u in run.users)


def test_bad_requests_change_nothing(users):
    run = train(ucb_bandit_learner(3, 1.0), users, np.random.default_rng(13))
    run, _ = unlearn(run, DeleteStep(5), rng=np.random.default_rng(14))
    rng = np.random.default_rng(15)
    state = rng.bit_generator.state
    snapshot = [v.copy() for v in run.tree.values()]
    models = run.models
    for t, exc in ((0, ValueError), (41, ValueError), (5, ValueError), (2.0, TypeError), (True, TypeError)):
        with pytest.raises(exc):
            unlearn(run, DeleteStep(t), rng=rng)
    with pytest.raises(TypeError):
        unlearn(run, DeleteStep(3), options=ExactOptions(dummy=BanditUser([1.0, 1.0])), rng=rng)
    with pytest.raises(TypeError):
        unlearn("not a run", DeleteStep(3), rng=rng)
    assert rng.bit_generator.state == state and run.models is models and run.deleted == {5}
    for a, b in zip(snapshot, run.tree.values()):
        assert np.array_equal(a, b)


def test_learner_bad_input(users):
    good = ucb_bandit_learner(3, 1.0)
    rng = np.random.default_rng(0)
    for bad in (dict(d=0), dict(sigma=-0.1), dict(sigma=np.nan), dict(B=0.0), dict(B=-1.0), dict(oracle=3)):
        with pytest.raises((ValueError, TypeError)):
            dataclasses.replace(good, **bad)
    with pytest.raises(ValueError, match="T = len"):
        train(good, (), rng)
    with pytest.raises(TypeError):
        train(good, 5, rng)
    wrong_dim = dataclasses.replace(good, oracle=lambda u, t, w: np.zeros(7))
    with pytest.raises(ValueError, match="shape"):
        train(wrong_dim, users, rng)
    inf_stats = dataclasses.replace(good, oracle=lambda u, t, w: np.full(6, np.inf))
    with pytest.raises(ValueError, match="finite"):
        train(inf_stats, users, rng)
    one_nan = dataclasses.replace(good, oracle=lambda u, t, w: np.array([0, 0, np.nan, 0, 0, 0.0]))
    with pytest.raises(ValueError, match="finite"):
        train(one_nan, users, rng)
    big = np.full(6, 1e300)  # finite, however large
    x = dataclasses.replace(good, oracle=lambda u, t, w: big).statistics(users[0], 1, good.initial_model)
    assert np.array_equal(x, big) and x is not big  # a copy of the oracle's answer
    ints = dataclasses.replace(good, oracle=lambda u, t, w: [1, 0, 0, 0, 0, 2])
    assert good.d == 6 and ints.statistics(users[0], 1, good.initial_model).dtype == float
    with pytest.raises(ValueError):
        ucb_bandit_learner(0, 1.0)


def test_train_checks_each_statistic_once_and_keeps_a_copy():
    """train's loop checks the oracle's answer as ``statistics`` does (messages naming the step), accepts
    what ``statistics`` accepts with the same bits, and never keeps the oracle's own array."""
    rng = np.random.default_rng(0)
    base = PrefixSumLearner(
        d=2,
        sigma=0.5,
        oracle=lambda u, t, w: np.array([1.0, float(u)]),
        update=lambda u, t, w: float(u[0]),
        initial_model=0.0,
    )
    users = [0.25, 0.5, 0.75]
    nan_late = dataclasses.replace(base, oracle=lambda u, t, w: np.array([1.0, np.nan if t == 3 else u]))
    with pytest.raises(ValueError, match="step 3 must be finite"):
        train(nan_late, users, rng)
    with pytest.raises(ValueError, match=r"step 1 must have shape \(2,\)"):
        train(dataclasses.replace(base, oracle=lambda u, t, w: np.zeros((1, 2))), users, rng)
    reference = train(base, users, np.random.default_rng(1))
    as_lists = train(
        dataclasses.replace(base, oracle=lambda u, t, w: [1, u]), users, np.random.default_rng(1)
    )
    assert np.array_equal(as_lists.statistics(), reference.statistics())
    assert as_lists.models == reference.models
    with np.errstate(over="ignore"):  # x . x overflows: the full check decides
        huge = train(dataclasses.replace(base, oracle=lambda u, t, w: np.array([1e200, u])), users, rng)
    assert huge.statistics()[0, 0] == 1e200  # finite, though its square overflows
    shared = np.zeros(2)

    def reused(u, t, w):  # an oracle that reuses one array
        shared[:] = (1.0, u)
        return shared

    for factory in (LightTree, BinaryTree):
        run = train(
            dataclasses.replace(base, oracle=reused, tree_factory=factory), users, np.random.default_rng(1)
        )
        assert np.array_equal(run.statistics(), reference.statistics())
        verify(run)


def test_custom_dummy_and_generic_models():
    """A learner whose models are dataclasses, with a non-zero dummy user."""

    @dataclasses.dataclass(frozen=True)
    class Model:
        total: float
        history: tuple

    lrn = PrefixSumLearner(
        d=1,
        sigma=0.5,
        oracle=lambda user, t, w: np.array([float(user)]),
        update=lambda u, t, w: Model(float(u[0]), w.history + (t,)),
        initial_model=Model(0.0, ()),
        B=2.0,
    )
    run = train(lrn, [1.0, 2.0, 3.0, 4.0, 5.0], np.random.default_rng(1))
    verify(run)
    new, rec = unlearn(
        run, DeleteStep(2), options=ExactOptions(dummy=0.5, diagnostics=True), rng=np.random.default_rng(2)
    )
    verify(new)
    assert new.users[1] == 0.5 and rec.shift_norm == pytest.approx(1.5)
    assert same_model(Model(1.0, (1,)), Model(1.0, (1,))) and not same_model(
        Model(1.0, (1,)), Model(1.0, (2,))
    )


def test_run_is_immutable(users):
    run = train(ucb_bandit_learner(3, 1.0), users[:8], np.random.default_rng(0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.models = ()
    with pytest.raises(ValueError):
        run.tree.append(np.zeros(6), np.random.default_rng(0))
    with pytest.raises(ValueError):
        run.final_model[0] = 1.0
    assert isinstance(run, Run)


# --- experiments.unlearning_cost ---------------------------------------------------------------
def test_uniform_cost_formulas_against_brute_force():
    from bandit_unlearning.experiments.unlearning_cost import (
        expected_cost_uniform,
        retrain_probability_uniform,
    )

    T, tv = 12, 0.3
    probs, costs = [], []
    for t in range(1, T + 1):
        path = leaf_path(t, T)
        probs.append(1 - (1 - tv) ** len(path))
        costs.append(sum((1 - tv) ** k * tv * (T - b.end) for k, b in enumerate(path)) / T)
    assert retrain_probability_uniform(T, tv) == pytest.approx(np.mean(probs))
    assert expected_cost_uniform(T, tv) == pytest.approx(np.mean(costs))
    assert expected_cost_uniform(T, 0.0) == 0.0 and retrain_probability_uniform(T, 1.0) == 1.0
    with pytest.raises(ValueError):
        expected_cost_uniform(T, 1.5)


def test_uniform_cost_formulas_equal_their_loops_bit_for_bit():
    """The vectorised formulas perform the loop over positions and path nodes, operation by operation."""
    from bandit_unlearning.experiments.unlearning_cost import (
        expected_cost_uniform,
        retrain_probability_uniform,
    )

    def cost_loop(T, tv):
        total = 0.0
        for t in range(1, T + 1):
            total += sum((1 - tv) ** k * tv * (T - b.end) for k, b in enumerate(leaf_path(t, T)))
        return float(total / T**2)

    def probability_loop(T, tv):
        lengths = np.array([len(leaf_path(t, T)) for t in range(1, T + 1)])
        return float(np.mean(1 - (1 - tv) ** lengths))

    rng = np.random.default_rng(3)
    for T in (1, 2, 3, 7, 8, 12, 100, 255, 256, 257, 1000, 4097):
        for tv in (0.0, 1.0, 0.5, 1e-9, 1 - 1e-12, *rng.uniform(0, 1, 3)):
            assert expected_cost_uniform(T, tv) == cost_loop(T, tv), (T, tv)
            assert retrain_probability_uniform(T, tv) == probability_loop(T, tv), (T, tv)


def test_conditional_retraining(users):
    from bandit_unlearning.experiments.unlearning_cost import conditional_retraining, measure_unlearning

    run0 = train(ucb_bandit_learner(3, 0.0), users[:10], np.random.default_rng(0))
    assert conditional_retraining(run0, 4) == (1.0, 6.0)
    run = train(ucb_bandit_learner(3, 2.0), users[:10], np.random.default_rng(1))
    p, steps = conditional_retraining(run, 3)
    assert 0 <= p <= 1 and 0 <= steps <= 10 * p
    # the conditional probability is what repeated requests on this run converge to
    rng = np.random.default_rng(2)
    hits = np.mean([unlearn(run, DeleteStep(3), rng=rng)[1].retrained for _ in range(2000)])
    assert abs(hits - p) < 5 * np.sqrt(p * (1 - p) / 2000) + 1e-9
    m = measure_unlearning(ucb_bandit_learner(3, 2.0), users[:10], 2, 3, np.random.default_rng(3))
    assert m["T"] == 10 and m["cost"].shape == (6,)
