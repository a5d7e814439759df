"""Deleting a user, not a step (chapter B11): one coupling pass over every step of the user, at most
one retraining, the registry forgets it, refusals, and the suffix-only check ``verify_unlearned``."""

import dataclasses

import numpy as np
import pytest

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import ExactOptions, ReplayableUser, same_model, train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, DeleteSteps, DeleteUser, unlearn, verify
from bandit_unlearning.exact.registry import (
    coupled_nodes,
    unlearn_user_sequential,
    user_steps,
    verify_unlearned,
    worst_case_cost,
)
from bandit_unlearning.exact.tree import BinaryTree, leaf_path

LEARNER = ucb_bandit_learner(2, sigma=1.0)
PEOPLE = bandit_users([0.6, 0.3], 6, seed=3)
USERS = (PEOPLE[0], PEOPLE[1], PEOPLE[0], PEOPLE[2], PEOPLE[3], PEOPLE[0], PEOPLE[4], PEOPLE[5])


def test_unlearn_user_one_pass_forgets_and_retrains_at_most_once():
    run = train(LEARNER, USERS, np.random.default_rng(0))
    assert user_steps(run, PEOPLE[0]) == (1, 3, 6) and user_steps(run, PEOPLE[2]) == (4,)
    new, record = unlearn(
        run,
        DeleteUser(PEOPLE[0]),
        options=ExactOptions(retrain_if_cheaper=False),
        rng=np.random.default_rng(5),
    )
    assert record.steps == (1, 3, 6) and record.nodes == coupled_nodes((1, 3, 6), 8)
    assert record.steps_recomputed == 8 - record.restart <= 8 - 1 and record.method == "one pass"
    assert worst_case_cost((1, 3, 6), 8) > 8 == worst_case_cost((1,), 8, node_cost=1)
    full, frec = unlearn(
        run, DeleteUser(PEOPLE[0]), rng=np.random.default_rng(5)
    )  # the pass could cost more than T
    assert frec.method == "retrain" and frec.retrained and frec.steps_recomputed == 8 and frec.nodes == ()
    assert full.deleted == frozenset({1, 3, 6}) and PEOPLE[0] not in full.users
    verify_unlearned(run, full, frec)
    verify(full)
    assert PEOPLE[0] not in new.users and PEOPLE[0] in run.users and new.deleted == frozenset({1, 3, 6})
    verify_unlearned(run, new, record)
    verify(new)
    with pytest.raises(ValueError, match="unknown user"):
        unlearn(new, DeleteUser(PEOPLE[0]), rng=np.random.default_rng(1))
    seq, records = unlearn_user_sequential(run, PEOPLE[0], np.random.default_rng(5))
    assert len(records) == 3 and PEOPLE[0] not in seq.users
    verify(seq)


def test_coupled_nodes_is_the_union_of_paths_in_post_order():
    nodes = coupled_nodes((2, 5), 8)
    assert set(nodes) == set(leaf_path(2, 8)) | set(leaf_path(5, 8)) and len(nodes) == len(set(nodes))
    assert [b.end for b in nodes] == sorted(b.end for b in nodes)


@pytest.mark.parametrize("factory", [None, BinaryTree])
def test_one_step_is_algorithm_3_bit_for_bit(factory):
    assert all(
        worst_case_cost((t,), T, node_cost=1) <= T for T in (1, 2, 3, 8, 13, 64) for t in range(1, T + 1)
    )
    assert all((worst_case_cost((t,), T) <= T) == (t >= 5) for T in (8, 13, 64, 300) for t in range(1, T + 1))
    learner = LEARNER if factory is None else ucb_bandit_learner(2, sigma=1.0, tree_factory=factory)
    for seed in range(5):
        run = train(learner, USERS, np.random.default_rng(seed))
        for t in range(1, 9):
            a, ra = unlearn(run, DeleteStep(t), rng=np.random.default_rng(seed + 50))
            b, rb = unlearn(
                run,
                DeleteSteps([t]),
                options=ExactOptions(retrain_if_cheaper=False),
                rng=np.random.default_rng(seed + 50),
            )
            assert same_model(a.models, b.models) and a.users == b.users
            assert all(np.array_equal(x, y) for x, y in zip(a.tree.values(), b.tree.values()))
            assert (ra.rejected, ra.restart, ra.regenerated) == (rb.rejected, rb.restart, rb.regenerated)


def test_light_and_dense_passes_agree():
    dense = ucb_bandit_learner(2, sigma=0.5, tree_factory=BinaryTree)
    light = ucb_bandit_learner(2, sigma=0.5)
    for seed in range(5):
        a = unlearn(
            train(light, USERS, np.random.default_rng(seed)),
            DeleteUser(PEOPLE[0]),
            options=ExactOptions(retrain_if_cheaper=False),
            rng=np.random.default_rng(9),
        )
        b = unlearn(
            train(dense, USERS, np.random.default_rng(seed)),
            DeleteUser(PEOPLE[0]),
            options=ExactOptions(retrain_if_cheaper=False),
            rng=np.random.default_rng(9),
        )
        assert same_model(a[0].models, b[0].models) and a[1].restart == b[1].restart
        assert all(np.array_equal(x, y) for x, y in zip(a[0].tree.values(), b[0].tree.values()))


def test_rl_learner_one_pass():
    from bandit_unlearning.rl.envs import riverswim
    from bandit_unlearning.rl.stable import episode_users, stable_ucbvi

    mdp = riverswim(4, 3)
    learner = stable_ucbvi(mdp, 8, 5.0)
    users = list(episode_users(8, rng=np.random.default_rng(1)))
    users[5] = users[1]
    run = train(learner, users, np.random.default_rng(2))
    new, record = unlearn(
        run,
        DeleteUser(users[1]),
        options=ExactOptions(retrain_if_cheaper=False),
        rng=np.random.default_rng(3),
    )
    assert record.steps == (2, 6)
    verify_unlearned(run, new, record)
    verify(new)
    a, _ = unlearn(run, DeleteStep(4), rng=np.random.default_rng(4))
    b, _ = unlearn(run, DeleteSteps((4,)), rng=np.random.default_rng(4))
    assert same_model(a.models, b.models)


def test_verify_unlearned_refuses_broken_runs():
    for seed in range(20):
        run = train(LEARNER, USERS, np.random.default_rng(seed))
        new, rec = unlearn(
            run,
            DeleteUser(PEOPLE[0]),
            options=ExactOptions(retrain_if_cheaper=seed % 2 == 0),
            rng=np.random.default_rng(seed + 1),
        )
        verify_unlearned(run, new, rec)
        with pytest.raises(ValueError):
            verify_unlearned(run, dataclasses.replace(new, users=run.users), rec)
        if rec.retrained and not same_model(new.models, run.models):
            with pytest.raises(ValueError):
                verify_unlearned(run, dataclasses.replace(new, models=run.models), rec)


def test_key_function_and_refusals():
    users = (ReplayableUser(5), ReplayableUser(7), ReplayableUser(5))
    learner = ucb_bandit_learner(2, sigma=1.0)
    bandit = bandit_users([0.5, 0.5], 3, seed=1)
    run = train(learner, bandit, np.random.default_rng(0))
    assert user_steps(run, bandit[1]) == (2,)
    assert [t for t, u in enumerate(users, 1) if u.key == 5] == [1, 3]
    with pytest.raises(ValueError, match="dummy"):
        unlearn(run, DeleteUser(ZERO_USER))
    with pytest.raises(TypeError):
        user_steps("not a run", bandit[0])
    with pytest.raises(TypeError):
        user_steps(run, bandit[0], key=3)
    with pytest.raises(TypeError):
        unlearn(run, DeleteUser(bandit[0]), rng="3")  # an int seed >= 0 is an explicit opt-in
    keyed = user_steps(run, bandit[2], key=lambda u: tuple(u.rewards))
    assert 3 in keyed
    with pytest.raises(ValueError, match="distinct"):
        unlearn(run, DeleteSteps((1, 1)))
    with pytest.raises(ValueError, match="at least one"):
        unlearn(run, DeleteSteps(()))
    with pytest.raises(ValueError, match="lie in"):
        unlearn(run, DeleteSteps((4,)))
    done, _ = unlearn(run, DeleteSteps((2,)), rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="already deleted"):
        unlearn(done, DeleteSteps((2, 3)), rng=np.random.default_rng(1))
    with pytest.raises(TypeError):
        unlearn(run, DeleteSteps("12"))
    with pytest.raises(ValueError, match="node_cost"):
        unlearn(run, DeleteSteps((1,)), options=ExactOptions(node_cost=0))
