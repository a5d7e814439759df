"""Every unlearnable learner of the package satisfies the one protocol (``bandit_unlearning.protocol``).

For each learner: a trained state and a request; ``unlearn(state, request, *, options, rng)`` returns a
pair ``(new_state, record)`` whose new state has the state's type, the input state is unchanged (a deep
image taken before the call, arrays by value), ``verify`` passes on the new state where a check exists
and raises ``TypeError`` where none does, and every registered (state, request) pair is exercised here
(a new registration without a case fails the test).
"""

import copy
import dataclasses

import numpy as np
import pytest

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import ExactOptions, Run, UnlearnRecord, train
from bandit_unlearning.exact.linucb import LinUCBConfig, linear_users, linucb_learner
from bandit_unlearning.exact.registry import UserUnlearnRecord
from bandit_unlearning.mab.contextual import (
    ContextualOptions,
    ContextualRecord,
    ContextualRequest,
    ContextualState,
    fit_contextual,
)
from bandit_unlearning.mab.contextual_model import (
    ContextualDeletionRecord,
    ContextualModel,
    ContextualReleaseState,
    DeleteRows,
)
from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.imitation import DeletionCounts, ImitationRecord, ImitationState, fit_imitation
from bandit_unlearning.mab.lcb import LCBState, fit_lcb
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.model import DeletionRecord, LCBModel, ReleaseState
from bandit_unlearning.mab.unlearn import UnlearnOptions, UnlearnResult
from bandit_unlearning.protocol import DeleteStep, DeleteSteps, DeleteUser, implementations, unlearn, verify
from bandit_unlearning.rl.envs import riverswim
from bandit_unlearning.rl.stable import episode_users, stable_ucbvi
from bandit_unlearning.secrecy import allow_secrets

DATA = OfflineDataset(
    np.array([0, 0, 0, 0, 1, 1, 1, 2, 2]), np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]), 3
)
ROWS = DeletionRequest([0, 0], [1.0, 0.0])
BANDIT = ucb_bandit_learner(2, sigma=4.0)
BANDIT_USERS = bandit_users([0.6, 0.4], 40, seed=3)
RETURNING = list(BANDIT_USERS)
RETURNING[9] = RETURNING[20] = RETURNING[4]  # one person at steps 5, 10 and 21


def _bandit_run(users=BANDIT_USERS):
    return train(BANDIT, users, np.random.default_rng(1))


def _linucb_run():
    config = LinUCBConfig(n_arms=2, dim=2)
    return train(
        linucb_learner(config, sigma=2.0),
        linear_users(np.array([[0.5, 0.1], [0.1, 0.5]]), 24, seed=2),
        np.random.default_rng(4),
    )


def _stable_run():
    mdp = riverswim(horizon=3, n_states=3)
    return train(
        stable_ucbvi(mdp, 12, rho=0.9),
        episode_users(12, rng=np.random.default_rng(5)),
        np.random.default_rng(6),
    )


def _contextual():
    g = np.random.default_rng(9)
    x = g.standard_normal((60, 2))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return fit_contextual(
        x, np.arange(60) % 2, g.integers(0, 2, 60).astype(float), n_arms=2, context_bound=1.0
    )


CONTEXTUAL_REQUEST = ContextualRequest(
    np.array([[1.0, 0.0], [0.0, 1.0]]) * 0.5, np.array([0, 1]), np.array([1.0, 0.0])
)


def _model_state():
    return LCBModel.fit(
        [0, 0, 0, 0, 1, 1, 1],
        [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
        method="adaptive",
        epsilon=1.0,
        delta=1e-3,
        sigma=0.3,
        rng=np.random.default_rng(8),
    ).release_state


def _contextual_log(seed=0, n=400):
    """Chapter A10b's synthetic log, small: users of 4 rows sharing an arm, the 4 users of the first 16 rows
    of arm 0 at e_1
    (where the Gaussian branch pays), public evaluation contexts."""
    g = np.random.default_rng(seed)
    x = np.abs(g.standard_normal((n, 3)))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    a = np.repeat(g.integers(0, 2, size=n // 4), 4)
    users = [f"u{i // 4}" for i in range(n)]
    hot = sorted({users[i] for i in np.flatnonzero(a == 0)[:16]})
    x[[i for i, u in enumerate(users) if u in hot]] = [1.0, 0.0, 0.0]
    r = (g.random(n) < x @ np.array([0.5, 0.3, 0.1])).astype(float)
    ev = np.abs(g.standard_normal((100, 3)))
    return x, a, r, users, hot, ev / np.linalg.norm(ev, axis=1, keepdims=True)


def _contextual_model(rng=3):
    x, a, r, users, _, ev = _contextual_log()
    return ContextualModel.fit(
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
        rng=rng,
    )


# (name, state factory, request, options, record type, verify defined)
CASES = [
    ("LCB, rollback", lambda: fit_lcb(DATA), ROWS, UnlearnOptions("rollback"), UnlearnResult, False),
    (
        "LCB, adaptive (Algorithm 2)",
        lambda: fit_lcb(DATA),
        ROWS,
        UnlearnOptions("adaptive", gamma=0.5),
        UnlearnResult,
        False,
    ),
    (
        "LCB, mixing (Algorithm 4)",
        lambda: fit_lcb(DATA),
        DeletionRequest([0, 0], [1.0, 1.0]),
        UnlearnOptions("mixing", gamma=0.5, k_prime=1),
        UnlearnResult,
        False,
    ),
    (
        "LCB, multi-source (Algorithm 7)",
        lambda: fit_lcb(DATA),
        DeletionRequest([0, 1, 2], [1.0, 0.0, 1.0]),
        UnlearnOptions("adaptive", gamma=0.5),
        UnlearnResult,
        False,
    ),
    ("imitation (Algorithm 6), rows", lambda: fit_imitation(DATA), ROWS, None, ImitationRecord, False),
    (
        "imitation (Algorithm 6), counts",
        lambda: fit_imitation(DATA),
        DeletionCounts([1, 1, 0]),
        None,
        ImitationRecord,
        False,
    ),
    (
        "contextual LCB, rollback",
        _contextual,
        CONTEXTUAL_REQUEST,
        ContextualOptions(method="rollback"),
        ContextualRecord,
        False,
    ),
    (
        "contextual LCB, Gaussian branch",
        _contextual,
        CONTEXTUAL_REQUEST,
        ContextualOptions(method="gaussian", epsilon=1.0, delta=1e-5),
        ContextualRecord,
        False,
    ),
    (
        "LCBModel's release (deletion stream)",
        _model_state,
        DeletionRequest([0], [1.0]),
        None,
        DeletionRecord,
        False,
    ),
    (
        "ContextualModel's release (contextual deletion stream)",
        lambda: _contextual_model().release_state,
        DeleteRows((0, 1, 2, 3)),
        None,
        ContextualDeletionRecord,
        False,
    ),
    ("prefix-sum UCB bandit, one step (Algorithm 3)", _bandit_run, DeleteStep(7), None, UnlearnRecord, True),
    (
        "prefix-sum UCB bandit, diagnostics",
        _bandit_run,
        DeleteStep(3),
        ExactOptions(diagnostics=True),
        UnlearnRecord,
        True,
    ),
    ("prefix-sum UCB bandit, steps", _bandit_run, DeleteSteps((2, 9, 30)), None, UserUnlearnRecord, True),
    (
        "prefix-sum UCB bandit, a returning user",
        lambda: _bandit_run(tuple(RETURNING)),
        DeleteUser(RETURNING[4]),
        ExactOptions(retrain_if_cheaper=False),
        UserUnlearnRecord,
        True,
    ),
    ("TV-stable LinUCB", _linucb_run, DeleteStep(5), None, UnlearnRecord, True),
    ("TV-stable UCB-VI (Algorithm 4)", _stable_run, DeleteStep(4), None, UnlearnRecord, True),
    ("TV-stable UCB-VI, a user", _stable_run, None, None, UserUnlearnRecord, True),
]


def _image(obj):
    """A deep, comparable image of a state (arrays by value and flags)."""
    if isinstance(obj, Run):
        return (
            obj.users,
            obj.models,
            obj.deleted,
            tuple(obj.tree.leaf(t).tobytes() for t in range(1, obj.T + 1)),
            tuple(obj.tree.noisy_prefix_sum(t).tobytes() for t in range(1, obj.T + 1)),
        )
    if dataclasses.is_dataclass(obj):
        return tuple(_image(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, np.ndarray):
        return (obj.dtype.str, obj.shape, obj.tobytes(), obj.flags.writeable)
    return copy.deepcopy(obj)


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        from bandit_unlearning.exact.learner import same_model

        return same_model(a, b)


@pytest.mark.parametrize(
    "name, make, request_, options, record_type, checked", CASES, ids=[c[0] for c in CASES]
)
def test_every_learner_follows_the_protocol(name, make, request_, options, record_type, checked):
    state = make()
    if request_ is None:  # delete the user of step 3 (a stable run's own user)
        request_ = DeleteUser(state.users[2])
    with allow_secrets():
        before = _image(state)
    out = unlearn(state, request_, options=options, rng=np.random.default_rng(11))
    assert isinstance(out, tuple) and len(out) == 2, name
    new, record = out
    assert type(new) is type(state) and new is not state and isinstance(record, record_type), name
    with allow_secrets():
        assert _same(_image(state), before), f"{name}: the input state changed"
    if checked:
        verify(new)
        verify(state)
    else:
        with pytest.raises(TypeError, match="no check exists"):
            verify(new)


def test_every_registered_pair_has_a_case():
    """A learner registered with the protocol but absent from CASES fails here."""
    covered = {
        (LCBState, DeletionRequest),
        (ImitationState, DeletionRequest),
        (ImitationState, DeletionCounts),
        (ReleaseState, DeletionRequest),
        (ContextualState, ContextualRequest),
        (ContextualReleaseState, DeleteRows),
        (Run, DeleteStep),
        (Run, DeleteSteps),
        (Run, DeleteUser),
    }
    assert set(implementations()) == covered


def test_the_new_state_is_what_retraining_stores():
    """Where the guarantee is exact the new state equals training on what remains: LCB's statistic after
    any method, the imitation learner's counts."""
    remaining = OfflineDataset(DATA.arms[[1, 3, 4, 5, 6, 7, 8]], DATA.rewards[[1, 3, 4, 5, 6, 7, 8]], 3)
    for options in (UnlearnOptions("rollback"), UnlearnOptions("gaussian", gamma=0.5)):
        new, _ = unlearn(fit_lcb(DATA), DeletionRequest([0, 0], [1.0, 0.0]), options=options, rng=1)
        refit = fit_lcb(remaining, tau=fit_lcb(DATA).tau)
        assert np.array_equal(new.counts, refit.counts) and np.array_equal(new.reward_sums, refit.reward_sums)
    new, record = unlearn(fit_imitation(DATA), ROWS)
    assert (
        np.array_equal(new.counts, fit_imitation(remaining).counts)
        and record.arm == fit_imitation(remaining).arm
    )


def test_the_model_deletes_through_unlearn():
    """LCBModel.delete is the protocol's call on its ReleaseState: the same generator gives the same
    release and record (row ids filled in by the model), and the model's state afterwards is the new one."""

    def fitted():
        return LCBModel.fit(
            [0, 0, 0, 0, 1, 1, 1],
            [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
            method="adaptive",
            epsilon=1.0,
            delta=1e-3,
            sigma=0.3,
            rng=np.random.default_rng(8),
        )

    model, state, g = fitted(), fitted().release_state, np.random.default_rng(8)
    for rows, arms, rewards in (
        ([0], [0], [1.0]),
        ([4, 5], [1, 1], [0.0, 1.0]),
        ([1, 2], [0, 0], [1.0, 0.0]),
    ):
        record = model.delete(rows=rows)
        state, direct = unlearn(state, DeletionRequest(arms, rewards), rng=g)
        assert dataclasses.replace(direct, rows=tuple(rows)) == record
        after = model.release_state
        assert all(
            _same(_image(getattr(after, f.name)), _image(getattr(state, f.name)))
            for f in dataclasses.fields(state)
        )
    assert np.array_equal(state.counts, model.statistics.counts) and state.n_requests == 3


def test_the_contextual_model_deletes_through_unlearn():
    """ContextualModel.delete is the protocol's call on its ContextualReleaseState: with the same generator
    the direct call gives the same record (Gaussian releases included) and the same new state, which the
    model then holds."""
    x, a, r, users, hot, ev = _contextual_log()
    model, state = _contextual_model(np.random.default_rng(5)), _contextual_model().release_state
    g = np.random.default_rng(5)
    for user in hot + [u for u in dict.fromkeys(users) if u not in hot][:4]:
        rows = tuple(i for i, u in enumerate(users) if u == user)
        record = model.delete(user=user)
        state, direct = unlearn(state, DeleteRows(rows), rng=g)
        assert direct == record and record.rows == rows
        assert _same(_image(model.release_state), _image(state))
    assert {rec.method for rec in model.log} == {"gaussian", "rollback"}, "both branches, noise drawn"
    assert any(rec.noised_arms for rec in model.log)
    assert state.n_requests == 8 and len(model) == int(state.alive.sum()) == len(a) - 32


def test_the_contextual_release_state_is_what_retraining_stores():
    """The chapter's claim: the live statistics equal a fit on the kept rows (bit for bit on one-hot
    contexts and 0/1 rewards, to rounding otherwise), and the deleted rows are wiped from the row store."""
    g = np.random.default_rng(2)
    x = np.zeros((300, 6))
    x[np.arange(300), g.integers(0, 6, 300)] = 1.0
    a, r = g.integers(0, 4, 300), g.integers(0, 2, 300).astype(float)
    state = ContextualModel.fit(x, a, r, n_arms=4, context_bound=1.0, rng=0).release_state
    gone = g.permutation(300)[:90]
    for chunk in gone.reshape(9, 10):
        state, record = unlearn(state, DeleteRows(chunk), rng=np.random.default_rng(0))
        assert record.method == "rollback" and record.rows == tuple(sorted(chunk.tolist()))
    keep = np.setdiff1d(np.arange(300), gone)
    refit = fit_contextual(x[keep], a[keep], r[keep], n_arms=4, context_bound=1.0, beta=state.live.beta)
    assert np.array_equal(state.live.gram, refit.gram) and np.array_equal(state.live.theta, refit.theta)
    assert np.array_equal(state.release.theta, refit.theta) and np.array_equal(state.pub_gram, refit.gram)
    contexts, arms, rewards = state.rows(np.arange(300))
    assert not state.alive[gone].any() and state.alive[keep].all() and (arms[gone] == -1).all()
    assert not contexts[gone].any() and not rewards[gone].any()
    assert np.array_equal(contexts[keep], x[keep]) and np.array_equal(arms[keep], a[keep])
    assert np.array_equal(rewards[keep], r[keep])

    x, a, r, users, hot, ev = _contextual_log()
    state, kept = _contextual_model().release_state, np.ones(len(a), bool)
    for user in hot + [u for u in dict.fromkeys(users) if u not in hot][:2]:
        rows = [i for i, u in enumerate(users) if u == user]
        state, _ = unlearn(state, DeleteRows(rows), rng=np.random.default_rng(1))
        kept[rows] = False
        refit = fit_contextual(x[kept], a[kept], r[kept], n_arms=2, context_bound=1.0, beta=state.live.beta)
        np.testing.assert_allclose(state.live.gram, refit.gram, rtol=0, atol=1e-10)
        np.testing.assert_allclose(state.live.theta, refit.theta, rtol=0, atol=1e-10)


def test_the_contextual_release_state_forgets_the_deleted_rows():
    """A pickle of the new state (and of the model that holds it) after a rolled-back request holds no
    byte of the deleted rows' contexts; the same search finds them in the state before (teeth)."""
    import pickle

    x, a, r, users, hot, ev = _contextual_log(4)
    model = ContextualModel.fit(x, a, r, n_arms=2, context_bound=1.0, users=users, rng=0)
    before = model.release_state
    plain = next(u for u in users if u not in hot)  # its rows have random, distinctive contexts
    rows = [i for i, u in enumerate(users) if u == plain]
    new, record = unlearn(before, DeleteRows(rows), rng=np.random.default_rng(0))
    model.delete(user=plain)
    assert record.method == "rollback"
    secrets = [x[i].tobytes() for i in rows]
    for obj in (new, model):
        blob = pickle.dumps(obj)
        assert not any(sec in blob for sec in secrets), type(obj).__name__
    assert all(sec in pickle.dumps(before) for sec in secrets)


def test_a_refused_contextual_request_changes_nothing():
    """A refused request raises before anything is computed or drawn: the state and the generator are
    unchanged, and so is the model that holds the state."""
    model = _contextual_model()
    model.delete(rows=[0, 1])
    state, g = model.release_state, np.random.default_rng(4)
    before, drawn = _image(state), g.bit_generator.state
    for bad, kwargs in (
        (DeleteRows([0]), {}),  # already deleted
        (DeleteRows([2, 2]), {}),
        (DeleteRows([400]), {}),
        (DeleteRows([2]), {"options": ContextualOptions(method="rollback")}),
    ):
        with pytest.raises((ValueError, TypeError)):
            unlearn(state, bad, rng=g, **kwargs)
        if not kwargs:
            with pytest.raises(ValueError):
                model.delete(rows=list(bad.rows))
    assert _same(_image(state), before) and g.bit_generator.state == drawn
    assert model.release_state is state and len(model.log) == 1


def test_a_refused_request_changes_nothing():
    run = _bandit_run()
    with allow_secrets():
        before = _image(run)
    for bad in (DeleteStep(41), DeleteSteps((3, 3)), DeleteUser("nobody")):
        with pytest.raises(ValueError):
            unlearn(run, bad, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="it serves"):
        unlearn(run, ROWS)
    with allow_secrets():
        assert _same(_image(run), before)


def test_a_request_is_validated_once_per_unlearn(monkeypatch):
    """``DeletionRequest.validate_against`` runs exactly once when ``unlearn`` serves a request on the LCB
    statistic, under every method and branch; a request it refuses is refused by that one call.  (A
    model's ``ReleaseState`` checks its live counts with its own rules.)"""
    calls = []
    original = DeletionRequest.validate_against
    monkeypatch.setattr(
        DeletionRequest, "validate_against", lambda self, state: (calls.append(1), original(self, state))[1]
    )
    cases = [
        (fit_lcb(DATA), UnlearnOptions(method, gamma=gamma))
        for method, gamma in (("rollback", 0.5), ("gaussian", 0.5), ("adaptive", 0.5), ("adaptive", 5.0))
    ]
    for state, options in cases:
        calls.clear()
        unlearn(state, DeletionRequest([0, 0], [1.0, 0.0]), options=options, rng=1)
        assert len(calls) == 1, (type(state).__name__, options)
    calls.clear()
    with pytest.raises(ValueError):
        unlearn(
            fit_lcb(DATA), DeletionRequest([2, 2, 2], [1.0, 1.0, 1.0]), options=cases[0][1], rng=1
        )  # arm 2: 2 points
    assert len(calls) == 1
