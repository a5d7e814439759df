# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.registry
# ---

# %% [markdown]
# # Chapter B11 — Deleting a user, not a step
#
# *Paper B's Algorithm 3 deletes the user of one step $t$.  A person who came back several times is
# several steps; a deletion request names the person.  This chapter exports
# `bandit_unlearning.exact.registry`: `user_steps` (where a user is in a run) and `unlearn_user`
# (delete every step of that user), and checks that the result is exactly a run trained with that
# user replaced by the dummy everywhere.*
#
# **Statement.** Let a run be trained on users $z_1, \dots, z_T$ (chapter B3a) and let user $u$ occupy
# the steps $t_1 < \dots < t_r$.  `unlearn_user(run, u)` applies Algorithm 3 to $t_1, \dots, t_r$ in
# turn.  Its output is distributed exactly as `train` on the users with $z_{t_i}$ replaced by the
# dummy for every $i$, and the run's user registry (`run.users`, from which every retraining
# re-runs) no longer holds $u$.
#
# **Derivation.** Theorem 3.3 (1) (chapter B4): for a run distributed as training on a user
# sequence $Z$, `unlearn(run, t)` is distributed as training on $Z$ with $z_t$ replaced by the dummy.
# Apply it $r$ times: after the $i$-th call the run is distributed as training on $Z$ with
# $z_{t_1}, \dots, z_{t_i}$ replaced, which is exactly the hypothesis of the next call.  Fresh coupling
# randomness at each call keeps the calls independent of what the earlier ones drew.  The registry is
# the tuple `run.users`; each call puts the dummy at its step, so after the last call $u$ is in no
# step (checked by the function before it returns).

# %%
import numpy as np

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import ZERO_USER, train, unlearn
from bandit_unlearning.experiments.exactness import battery

# %% tags=["export"]
"""Deleting a user, not a step (chapter B11): every step a user occupies in a run of Algorithm 2 is
deleted by Algorithm 3, one after another; the registry ``run.users`` then no longer holds the user."""

from bandit_unlearning.exact.learner import ZERO_USER, Run, unlearn
from bandit_unlearning.exact.tree import resolve_rng


def user_steps(run: Run, user, key=None) -> tuple:
    """The 1-based steps of ``run`` whose user is ``user`` (``key(u) == key(user)`` when ``key`` is given,
    e.g. ``key=lambda u: u.key`` for ``ReplayableUser``; otherwise ``u == user``)."""
    if not isinstance(run, Run):
        raise TypeError(f"run must be a Run, got {type(run).__name__}")
    if key is not None and not callable(key):
        raise TypeError("key must be callable or None")
    match = (lambda u: u == user) if key is None else (lambda u, k=key(user): u is not ZERO_USER and key(u) == k)
    return tuple(t for t, u in enumerate(run.users, start=1) if u is not ZERO_USER and bool(match(u)))


def unlearn_user(run: Run, user, rng=None, dummy=ZERO_USER, key=None):
    """Delete every step of ``user`` from ``run`` (Algorithm 3 on each, in increasing order).

    Returns ``(new_run, records)`` (one ``UnlearnRecord`` per step); ``run`` is never modified.
    ``ValueError`` if the user is in no step (unknown, or already deleted) or is the dummy itself;
    ``rng`` as in ``unlearn`` (default: OS entropy), resolved before anything is computed."""
    if user is ZERO_USER or user is dummy:
        raise ValueError("the dummy user cannot be deleted")
    steps = user_steps(run, user, key)
    if not steps:
        raise ValueError("unknown user: in no step of the run (never there, or already deleted)")
    rng = resolve_rng(rng)
    records = []
    for t in steps:
        run, record = unlearn(run, t, rng, dummy=dummy)
        records.append(record)
    if user_steps(run, user, key):                 # the registry must have forgotten the user
        raise RuntimeError("the user is still in the run after deletion")
    return run, tuple(records)


# %% [markdown]
# ## Checks
#
# **Sequential deletion is what it says.** With the same generator, `unlearn_user` equals the loop of
# `unlearn` calls; the original run is unchanged; the user is gone from the registry; a second
# request for the same user, and a request for someone who never came, are refused.

# %%
from bandit_unlearning.exact.learner import same_model
from bandit_unlearning.exact.registry import unlearn_user, user_steps

MEANS = np.array([0.7, 0.4])
T = 16
people = bandit_users(MEANS, 12, seed=11)
returning = people[0]                                            # comes back three times
USERS = list(people)
USERS[6:6] = [returning]
USERS[13:13] = [returning]
USERS = tuple(USERS[:T])
LEARNER = ucb_bandit_learner(2, sigma=1.0)
print("steps of the returning user:", user_steps(train(LEARNER, USERS, np.random.default_rng(0)), returning))

run = train(LEARNER, USERS, np.random.default_rng(1))
mine, records = unlearn_user(run, returning, np.random.default_rng(2))
theirs, g = run, np.random.default_rng(2)
for t in user_steps(run, returning):
    theirs = unlearn(theirs, t, g)[0]
assert same_model(mine.models, theirs.models) and mine.users == theirs.users
assert returning in run.users and returning not in mine.users and len(records) == 3
for bad in (returning, bandit_users(MEANS, 1, seed=99)[0], ZERO_USER):
    try:
        unlearn_user(mine, bad, np.random.default_rng(3))
    except ValueError as err:
        print("refused:", err)
    else:
        raise AssertionError("accepted")

# %% [markdown]
# **Exactness, with power.** $R = 600$ runs of each world: trained on `USERS` then `unlearn_user`,
# and trained with the returning user replaced by the dummy at its three steps.  Statistics: the
# four coordinates of the noisy prefix sum at $T$ (pulls and rewards per arm; Kolmogorov–Smirnov)
# and the arm the final model pulls (chi-square), tested by chapter B4's `battery`.  Per-test level
# $10^{-6}/5$: by the union bound a correct implementation fails with probability below $10^{-6}$.
# The same battery must reject the *step* semantics — deleting only the user's first step, which is
# what a request by step number does when the person came back.

# %%
R, LEVEL = 600, 1e-6 / 5
dummy_world = tuple(ZERO_USER if u is returning else u for u in USERS)
rng = np.random.default_rng(20261201)


def stats_of(r):
    u = r.noisy_prefix_sum(r.T)
    return {"pulls arm 0": u[0], "pulls arm 1": u[1], "reward arm 0": u[2], "reward arm 1": u[3],
            "arm at T+1": int(np.argmax(r.final_model))}


sample = {"reference": [], "unlearn_user": [], "first step only": []}
for _ in range(R):
    sample["reference"].append(stats_of(train(LEARNER, dummy_world, rng)))
    original = train(LEARNER, USERS, rng)
    sample["unlearn_user"].append(stats_of(unlearn_user(original, returning, rng)[0]))
    sample["first step only"].append(stats_of(unlearn(original, user_steps(original, returning)[0], rng)[0]))
pvals = {name: battery(sample[name], sample["reference"], ("arm at T+1",)) for name in ("unlearn_user", "first step only")}
for name, p in pvals.items():
    print(f"{name:16s} smallest p-value {min(p.values()):.1e}  rejected: {min(p.values()) < LEVEL}")
assert min(pvals["unlearn_user"].values()) >= LEVEL
assert min(pvals["first step only"].values()) < LEVEL

# %% [markdown]
# **Closing note.** A user is deleted by deleting every step it occupies; the result is exactly a run
# trained without it (the two-sample battery finds nothing at level $10^{-6}$ overall, and rejects
# the by-step request that leaves the returning user's two later visits in place).  The registry the
# learner retrains from no longer names the user.
