"""Deleting a user, not a step (chapter B11): every step of the user, the registry forgets it, refusals."""

import numpy as np
import pytest

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import ZERO_USER, ReplayableUser, same_model, train, unlearn
from bandit_unlearning.exact.registry import unlearn_user, user_steps

LEARNER = ucb_bandit_learner(2, sigma=1.0)
PEOPLE = bandit_users([0.6, 0.3], 6, seed=3)
USERS = (PEOPLE[0], PEOPLE[1], PEOPLE[0], PEOPLE[2], PEOPLE[3], PEOPLE[0], PEOPLE[4], PEOPLE[5])


def test_unlearn_user_is_sequential_unlearn_and_forgets():
    run = train(LEARNER, USERS, np.random.default_rng(0))
    assert user_steps(run, PEOPLE[0]) == (1, 3, 6) and user_steps(run, PEOPLE[2]) == (4,)
    new, records = unlearn_user(run, PEOPLE[0], np.random.default_rng(5))
    ref, g = run, np.random.default_rng(5)
    for t in (1, 3, 6):
        ref = unlearn(ref, t, g)[0]
    assert same_model(new.models, ref.models) and new.users == ref.users and len(records) == 3
    assert PEOPLE[0] not in new.users and PEOPLE[0] in run.users and new.deleted == frozenset({1, 3, 6})
    with pytest.raises(ValueError, match="unknown user"):
        unlearn_user(new, PEOPLE[0], np.random.default_rng(1))


def test_key_function_and_refusals():
    users = (ReplayableUser(5), ReplayableUser(7), ReplayableUser(5))
    learner = ucb_bandit_learner(2, sigma=1.0)
    bandit = bandit_users([0.5, 0.5], 3, seed=1)
    run = train(learner, bandit, np.random.default_rng(0))
    assert user_steps(run, bandit[1]) == (2,)
    assert [t for t, u in enumerate(users, 1) if u.key == 5] == [1, 3]
    with pytest.raises(ValueError, match="dummy"):
        unlearn_user(run, ZERO_USER)
    with pytest.raises(TypeError):
        user_steps("not a run", bandit[0])
    with pytest.raises(TypeError):
        user_steps(run, bandit[0], key=3)
    with pytest.raises(TypeError):
        unlearn_user(run, bandit[0], rng="3")   # an int seed >= 0 is an explicit opt-in
    keyed = user_steps(run, bandit[2], key=lambda u: tuple(u.rewards))
    assert 3 in keyed
