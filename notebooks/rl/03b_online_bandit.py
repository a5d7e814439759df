# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.bandit
# ---

# %% [markdown]
# # Chapter B3b — The first instance: exact unlearning for an online bandit
#
# *Paper B, Section 3: the framework of Algorithms 1–3 on its simplest instance, UCB for an online
# multi-armed bandit, with exact checks of the mechanics of Algorithm 3.  Exports
# `bandit_unlearning.exact.bandit`.*
#
# [Chapter B3a](03a_exact_unlearning.ipynb) built the generic prefix-sum learner over replayable
# users, its unlearning by maximal coupling of the tree (Algorithm 3), and derived why that
# unlearning is exact.  This chapter gives it a first instance — the simplest learner that fits: UCB
# for an online multi-armed bandit, on noisy prefix sums of pulls and rewards — trains it, deletes
# users from it, and checks exactly (no sampling) that every unlearned run replays, that a variant
# that forgets to retrain is caught, and that bad input is refused; a figure shows what the learner
# achieves and what one deletion costs.  Chapter B4 tests exactness statistically.

# %%
import dataclasses

import numpy as np
import matplotlib.pyplot as plt

from bandit_unlearning.exact.learner import *  # noqa: F403  (chapter B3a)
from bandit_unlearning.protocol import DeleteStep, unlearn, verify

rng = np.random.default_rng(20260603)

# %% [markdown]
# ## 1. The learner: UCB on noisy prefix sums
#
# $m$ arms; the model $w_t$ is the vector of UCB indices and the learner pulls
# $a_t = \arg\max_a w_t(a)$ (ties to the lowest arm).  User $t$ is a fixed reward vector
# $(r_t(1), \dots, r_t(m)) \in \{0,1\}^m$, drawn once from its own key (Bernoulli($\mu_a$) by
# inverse transform of the user's uniforms): replaying user $t$ with another model gives the reward
# of the arm that model pulls.  Statistics: $x_t = (e_{a_t}, r_t(a_t)\,e_{a_t}) \in \mathbb R^{2m}$
# (pull indicator, reward), so the prefix sums are the pull counts $N(a)$ and reward sums $S(a)$.
# UPDATE uses the noisy $\tilde N, \tilde S$:
# $$
# w_{t+1}(a) = \frac{\tilde S(a)}{\tilde N(a)} + \sqrt{\frac{2\ln\max(t, 2)}{\tilde N(a)}}
# \quad\text{if } \tilde N(a) \ge n_0, \qquad +\infty \text{ otherwise (unexplored)},
# $$
# with $n_0$ = `explore_below` (default 1; noisy counts can be small or negative — the analogue of
# erratum E9, and a documented parameter).  **Sensitivity (E8):** against the zero dummy
# $\lVert x_t - 0\rVert = \sqrt{1 + r^2} \le \sqrt 2 = B$; between two real users at the same model
# (same arm) it is $|r - r'| \le 1$.  The learner reports $B = \sqrt 2$.

# %% tags=["export:bandit_unlearning.exact.bandit"]
"""The first instance of the exact-unlearning framework: UCB for an online multi-armed bandit on
noisy prefix sums of pulls and rewards (chapter B3), with replayable users (erratum E10).

Statistics ``x_t = (e_a, r e_a)`` in ``R^{2m}``; the model is the UCB index vector; the arm pulled at
step ``t`` is ``argmax w_t`` (ties to the lowest arm).  Against the zero dummy the sensitivity is
``B = sqrt(2)`` (erratum E8).
"""

from dataclasses import dataclass
from functools import partial

import numpy as np

from bandit_unlearning.checks import check_count, as_array, as_real_array, check_instance, check_real, check_real_array
from bandit_unlearning.exact.learner import PrefixSumLearner, replayable_users, Run
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int


@dataclass(frozen=True, eq=False)
class BanditUser:
    """A replayable bandit user: one fixed reward in [0, 1] per arm.

    Parameters
    ----------
    rewards : array_like of float, shape (m,)
        The reward the user gives for each of the ``m`` arms, in ``[0, 1]``; stored as a read-only
        float array (a copy), so the user the learner saw cannot change afterwards.

    Raises
    ------
    ValueError
        If ``rewards`` is empty, not 1-D, not finite or outside ``[0, 1]``.
    """

    rewards: np.ndarray

    def __post_init__(self):
        r = as_real_array(self.rewards, "rewards")
        if r.ndim != 1 or r.size < 1 or not np.isfinite(r).all() or np.any((r < 0) | (r > 1)):
            raise ValueError(f"rewards must be a non-empty 1-D array in [0, 1], got {self.rewards!r}")
        r.setflags(write=False)
        object.__setattr__(self, "rewards", r)

    def __setstate__(self, state):
        """Unpickling makes a fresh, writeable array: read-only again."""
        self.__dict__.update(state)
        self.rewards.setflags(write=False)


def bandit_users(means, n: int, *, seed: int | None = None, start: int = 0) -> tuple:
    """Users ``start .. start+n-1``: user ``i`` has Bernoulli(``means[a]``) rewards drawn from its own
    key (``replayable_users(n, seed=seed)``), so any user can be rebuilt from the seed -- an opt-in for
    reproducible research; the default ``seed=None`` draws every key from OS entropy.

    Parameters
    ----------
    means : array_like of float, shape (m,)
        The arms' mean rewards, in ``[0, 1]`` (at least one arm).
    n : int
        How many users (``>= 0``).
    seed : int or None, keyword-only
        The population's seed (``>= 0``; key material), or None for keys from OS entropy.
    start : int, keyword-only
        Index of the first user in the population (``>= 0``), so a population can be built in pieces.

    Returns
    -------
    tuple of BanditUser
        ``n`` users, each with a 0/1 reward per arm.

    Raises
    ------
    ValueError
        If ``means`` is empty, not 1-D or outside ``[0, 1]``, or ``n``, ``seed`` or ``start`` is negative.
    """
    means = as_real_array(means, "means")
    if means.ndim != 1 or means.size < 1 or not np.isfinite(means).all() or np.any((means < 0) | (means > 1)):
        raise ValueError(f"means must be a non-empty 1-D array in [0, 1], got {means}")
    return tuple(BanditUser((u.uniforms(means.size) < means).astype(float))
                 for u in replayable_users(n, seed=seed, start=start))


# %% [markdown]
# The arm a model plays, and the statistics a step adds to the tree.

# %% tags=["export:bandit_unlearning.exact.bandit"]
def chosen_arm(model: np.ndarray) -> int:
    """The arm a model pulls: ``argmax`` of the UCB indices, ties to the lowest arm.

    Parameters
    ----------
    model : array_like, shape (m,)
        UCB indices, one per arm (``+inf`` allowed, ``nan`` not).

    Returns
    -------
    int
        The arm in ``[0, m)``.

    Raises
    ------
    ValueError
        If ``model`` is empty, not 1-D or holds a ``nan``.
    """
    model = as_array(model, "model")
    if model.ndim != 1 or model.size == 0 or np.any(np.isnan(model)):
        raise ValueError(f"model must be a non-empty 1-D vector of UCB indices (no nan), got shape {model.shape}")
    return int(np.argmax(model))


def bandit_statistics(arm: int, reward: float, n_arms: int) -> np.ndarray:
    """The statistics one step adds to the tree: ``x = (e_arm, reward e_arm)`` in ``R^{2 n_arms}``.

    Parameters
    ----------
    arm : int
        The arm pulled, in ``[0, n_arms)``.
    reward : float
        Its reward, in ``[0, 1]``.
    n_arms : int
        The number of arms ``m >= 1``.

    Returns
    -------
    numpy.ndarray, shape (2 m,)
        A one in coordinate ``arm`` (the pull count) and ``reward`` in coordinate ``m + arm`` (the sum).

    Raises
    ------
    TypeError
        If ``arm`` or ``n_arms`` is not an integer, or ``reward`` not a real number.
    ValueError
        If an argument is outside its range.
    """
    n_arms = check_count(n_arms, "n_arms", 1)
    arm = check_int(arm, "arm", 0, n_arms - 1)
    reward = check_real(reward, "reward", 0, 1)
    x = np.zeros(2 * n_arms)
    x[arm] = 1.0
    x[n_arms + arm] = reward
    return x

# %% [markdown]
# **The learner.** `ucb_indices` is UCB computed from the tree's noisy sums $\tilde u_t = (\tilde N,
# \tilde S)$: $\tilde S / \tilde N + \sqrt{2 \ln \max(t, 2) / \tilde N}$ where the noisy count is at least
# `explore_below`, $+\infty$ elsewhere; the oracle plays the arm of highest index and
# `ucb_bandit_learner` packages oracle and update as a `PrefixSumLearner`.

# %% tags=["export:bandit_unlearning.exact.bandit"]
def ucb_indices(u_tilde: np.ndarray, t: int, n_arms: int, explore_below: float = 1.0) -> np.ndarray:
    """UCB indices from noisy sums ``u_tilde = (N~, S~)``: ``S~/N~ + sqrt(2 ln max(t, 2) / N~)`` where
    ``N~ >= explore_below``, ``+inf`` elsewhere.

    Parameters
    ----------
    u_tilde : array_like of float, shape (2 m,)
        The tree's noisy prefix sums after ``t`` steps: pull counts ``N~`` then reward sums ``S~``.
    t : int
        Steps so far (``>= 0``); the bonus uses ``ln max(t, 2)``.
    n_arms : int
        The number of arms ``m >= 1``.
    explore_below : float
        A noisy count below this (``> 0``; a count at or below 0 has no index) leaves the arm
        unexplored, with index ``+inf``.

    Returns
    -------
    numpy.ndarray, shape (m,)
        The UCB index of every arm (read-only: it is the model a run stores).

    Raises
    ------
    ValueError
        If ``u_tilde`` does not have shape ``(2 m,)`` or is not finite, ``t < 0`` or ``explore_below <= 0``.
    """
    n_arms = check_count(n_arms, "n_arms", 1)
    u_tilde = check_real_array(u_tilde, "u_tilde", shape=(2 * n_arms,))
    t = check_int(t, "t", 0)
    explore_below = check_real(explore_below, "explore_below", 0, low_open=True)
    return _ucb_indices(u_tilde, t, n_arms, explore_below)


def _ucb_indices(u_tilde: np.ndarray, t: int, n_arms: int, explore_below: float) -> np.ndarray:
    """``ucb_indices`` without its checks: the learner's update, on the tree's own prefix sums."""
    counts, sums = u_tilde[:n_arms], u_tilde[n_arms:]
    explored = counts >= explore_below
    if explored.all():                       # the usual case: the same operations on the counts themselves
        w = sums / counts + np.sqrt(2 * np.log(max(t, 2)) / counts)
    else:
        safe = np.where(explored, counts, 1.0)
        w = np.where(explored, sums / safe + np.sqrt(2 * np.log(max(t, 2)) / safe), np.inf)
    w.setflags(write=False)
    return w


def _check_bandit_user(user, n_arms: int) -> None:
    if not isinstance(user, BanditUser) or user.rewards.size != n_arms:
        raise TypeError(f"users must be BanditUsers with {n_arms} rewards (or ZERO_USER), got {user!r}")


def _bandit_oracle(user: BanditUser, t: int, model: np.ndarray, n_arms: int) -> np.ndarray:
    if not isinstance(user, BanditUser) or user.rewards.size != n_arms:
        raise TypeError(f"step {t}: expected a BanditUser with {n_arms} rewards, got {user!r}")
    if type(model) is np.ndarray and model.dtype == np.float64 and model.shape == (n_arms,):
        arm = int(model.argmax())            # chosen_arm, checked in one look: argmax stops at a nan
        if model[arm] != model[arm]:
            chosen_arm(model)                # which it refuses
    else:
        arm = chosen_arm(model)
    x = np.zeros(2 * n_arms)                 # bandit_statistics without its checks: the arm is in range
    x[arm] = 1.0                             # and a BanditUser's rewards lie in [0, 1]
    x[n_arms + arm] = user.rewards[arm]
    return x


def _bandit_update(u_tilde: np.ndarray, t: int, model: np.ndarray, n_arms: int, explore_below: float):
    return _ucb_indices(u_tilde, t, n_arms, explore_below)     # the tree's prefix sums: shape (2m,), finite


# %% [markdown]
# Oracle and update packaged as a `PrefixSumLearner`, and two readings of a run: the arms it
# pulled and its pseudo-regret.

# %% tags=["export:bandit_unlearning.exact.bandit"]
def ucb_bandit_learner(n_arms: int, sigma: float, explore_below: float = 1.0, tree_factory=LightTree) -> PrefixSumLearner:
    """The UCB bandit as a ``PrefixSumLearner`` (d = 2 m, B = sqrt 2 against the zero dummy).

    Parameters
    ----------
    n_arms : int
        The number of arms ``m >= 1``.
    sigma : float
        The tree's Gaussian noise scale per node (``>= 0``; ``0``: plain UCB, no stability).
    explore_below : float
        Passed to ``ucb_indices``: noisy counts below it (``> 0``) mean an unexplored arm.
    tree_factory : callable
        ``tree_factory(d, sigma, capacity)`` builds the run's tree (default ``LightTree``).

    Returns
    -------
    PrefixSumLearner
        A learner whose users are ``BanditUser`` with ``m`` rewards, whose first model is all ``+inf``
        and whose step statistics are ``bandit_statistics``.

    Raises
    ------
    ValueError
        If ``n_arms < 1``, ``explore_below <= 0`` or ``sigma`` is refused by ``PrefixSumLearner``.
    """
    n_arms = check_count(n_arms, "n_arms", 1)
    explore_below = check_real(explore_below, "explore_below", 0, low_open=True)
    w1 = np.full(n_arms, np.inf)
    w1.setflags(write=False)
    return PrefixSumLearner(
        d=2 * n_arms, sigma=sigma, oracle=partial(_bandit_oracle, n_arms=n_arms),
        update=partial(_bandit_update, n_arms=n_arms, explore_below=explore_below),
        initial_model=w1, B=float(np.sqrt(2)), tree_factory=tree_factory, name=f"UCB bandit, m = {n_arms}",
        check_user=partial(_check_bandit_user, n_arms=n_arms),
    )


def actions(run: Run) -> np.ndarray:
    """Arms pulled at steps ``1 .. T``.

    Parameters
    ----------
    run : Run
        A run of ``ucb_bandit_learner``.

    Returns
    -------
    numpy.ndarray of int64, shape (T,)
        ``chosen_arm`` of each model the run played (the last model, after step ``T``, is not played).

    Raises
    ------
    TypeError
        If ``run`` is not a ``Run``.
    """
    check_instance(run, Run, "run")
    return np.array([chosen_arm(w) for w in run.models[:-1]], dtype=np.int64)


def pseudo_regret(run: Run, means) -> np.ndarray:
    """Cumulative pseudo-regret ``sum_{s<=t} (max mu - mu(a_s))`` for ``t = 1 .. T``.

    Parameters
    ----------
    run : Run
        A run of ``ucb_bandit_learner``.
    means : array_like of float, shape (m,)
        The arms' mean rewards in ``[0, 1]``, one per arm of the run's learner.

    Returns
    -------
    numpy.ndarray of float, shape (T,)
        The cumulative pseudo-regret after each step (non-decreasing).

    Raises
    ------
    TypeError
        If ``run`` is not a ``Run``.
    ValueError
        If ``means`` does not have one entry per arm or leaves ``[0, 1]``.
    """
    check_instance(run, Run, "run")
    means = check_real_array(means, "means", 0, 1, shape=(run.learner.d // 2,))
    return np.cumsum(means.max() - means[actions(run)])


# %%
from bandit_unlearning.exact.bandit import *  # noqa: F403  (the module generated from the cell above)

# %% [markdown]
# ## 2. A run and a deletion
#
# Three arms, $T = 64$ users, $\sigma = 3$ (small enough that a deletion often triggers retraining,
# so that both branches show).  We delete user 20, then user 7 from the result, and print the records.
# `verify` replays every run: each statistic, model and node sum must match exactly.

# %%
means = np.array([0.7, 0.5, 0.3])
users = bandit_users(means, 64, seed=11)
learner = ucb_bandit_learner(3, sigma=3.0)
run = train(learner, users, rng)
verify(run)
print(learner.name, "| d =", learner.d, "| B =", round(learner.B, 4), "| T =", run.T)
print("arms pulled:", "".join(map(str, actions(run))))


def describe(rec):
    rej = "none" if rec.rejected is None else f"level {rec.rejected.level} (leaves {rec.rejected.start}-{rec.rejected.end})"
    return (f"delete t = {rec.t}: path {len(rec.path)} nodes, accepted {len(rec.accepted)}, rejected {rej}, "
            f"steps recomputed {rec.steps_recomputed} of {rec.T} (worst case, shift B = {rec.B:.3f}: "
            f"TV/node {rec.tv_bound:.3f}, P[retrain] <= {rec.retrain_probability_bound:.3f}, "
            f"E[steps] <= {rec.expected_steps_bound:.1f})")


run1, rec1 = unlearn(run, DeleteStep(20), rng=rng)
run2, rec2 = unlearn(run1, DeleteStep(7), rng=rng)
for r_, rec in ((run1, rec1), (run2, rec2)):
    print(describe(rec))
    verify(r_)
print("deleted:", sorted(run2.deleted), "| users 7 and 20 are now", run2.users[6], run2.users[19])
print("arms pulled after both deletions:", "".join(map(str, actions(run2))))
assert run2.deleted == {7, 20} and run.deleted == frozenset()
assert np.array_equal(run2.tree.leaf(20), np.zeros(6)) and np.array_equal(run2.tree.leaf(7), np.zeros(6))

# %% [markdown]
# **What the records do not hold.**  Neither record carries the deleted users' shifts; asking for
# one raises.  With the explicit switch `diagnostics=True` (an experiment on data we may look at)
# the record does — and then it hands out the deleted reward: $r = \sqrt{\lVert x_t\rVert^2 - 1}$.
# That is why it is off by default.

# %%
try:
    rec1.shift_norm
except AttributeError as err:
    print("rec1.shift_norm ->", err)
_, rec_diag = unlearn(run, DeleteStep(20), options=ExactOptions(diagnostics=True), rng=np.random.default_rng(0))
arm20 = chosen_arm(run.models[19])
reward_back = np.sqrt(rec_diag.shift_norm ** 2 - 1)
print(f"with diagnostics=True: shift {rec_diag.shift_norm:.4f}, TV/node {rec_diag.tv_per_node:.3f}, exact "
      f"P[retrain] {rec_diag.retrain_probability:.3f} -> deleted reward {reward_back:.0f} "
      f"(user 20's reward on arm {arm20}: {users[19].rewards[arm20]:.0f})")
assert abs(reward_back - users[19].rewards[arm20]) < 1e-9
assert rec_diag.retrain_probability <= rec_diag.retrain_probability_bound

# %% [markdown]
# **Checks of the mechanics** (exact, no sampling):
# 1. with $\sigma = 0$ the learner is plain UCB: its run equals a hand-written loop, pull for pull;
# 2. over 300 deletions at random positions (both branches occur), every unlearned run passes
#    `verify`; when nothing is rejected the models are the *same objects* and 0 steps are
#    recomputed; when node $b$ is rejected, $w_1..w_{r_b}$ are unchanged and exactly
#    $T - r_b$ steps were recomputed;
# 3. the original run is untouched by all of this (its tree is frozen and still verifies).
#
# And the check can fail: a broken `unlearn` that reflects but *forgets to retrain* (keeps the old
# models after a rejection) produces runs that `verify` refuses.

# %%
def plain_ucb(users, means_len, T):
    """Loop oracle: exact-count UCB with the same index and tie rule."""
    counts, sums, arms = np.zeros(means_len), np.zeros(means_len), []
    w = np.full(means_len, np.inf)
    for t in range(1, T + 1):
        a = int(np.argmax(w))
        arms.append(a)
        counts[a] += 1
        sums[a] += users[t - 1].rewards[a]
        w = ucb_indices(np.concatenate([counts, sums]), t, means_len)
    return np.array(arms)


exact_run = train(ucb_bandit_learner(3, sigma=0.0), users, rng)
assert np.array_equal(actions(exact_run), plain_ucb(users, 3, 64))
print("sigma = 0: identical to plain UCB over", exact_run.T, "steps")

outcomes = {"accepted": 0, "retrained": 0}
for _ in range(300):
    t = int(rng.integers(1, run.T + 1))
    new, rec = unlearn(run, DeleteStep(t), rng=rng)
    verify(new)
    if rec.rejected is None:
        assert rec.steps_recomputed == 0 and all(a is b for a, b in zip(new.models, run.models))
        outcomes["accepted"] += 1
    else:
        r_b = rec.rejected.end
        assert rec.steps_recomputed == run.T - r_b
        assert all(a is b for a, b in zip(new.models[:r_b], run.models[:r_b]))
        outcomes["retrained"] += 1
verify(run)
assert run.tree.frozen and run.deleted == frozenset()
print("300 random deletions:", outcomes, "- every unlearned run verified; the original run unchanged")


def unlearn_forgetting_retraining(run, t, rng):
    """BROKEN: after a rejection, keeps the old later steps (statistics and models) instead of re-running them."""
    tree = run.tree.copy()
    rec = tree.unlearn_leaf(t, run.learner.statistics(ZERO_USER, t, run.models[t - 1]), rng)
    for s in range(tree.n_leaves + 1, run.T + 1):          # the forgotten retraining: old leaves back
        tree.append(run.tree.leaf(s), rng)
    users = run.users[: t - 1] + (ZERO_USER,) + run.users[t:]
    return dataclasses.replace(run, users=users, tree=tree.freeze(), deleted=run.deleted | {t}), rec


caught = 0
for _ in range(50):
    broken, rec = unlearn_forgetting_retraining(run, int(rng.integers(1, 40)), rng)
    if rec.rejected is not None:
        try:
            verify(broken)
        except ValueError:
            caught += 1
        else:
            raise AssertionError("verify accepted a run that was not retrained")
print(f"forgetting to retrain: verify refused all {caught} runs with a rejection")
assert caught > 0

# %% [markdown]
# ## 3. Bad input
#
# Every refused call leaves every object unchanged (runs are immutable; we also check that the
# generator was not advanced by a refused `unlearn`).

# %%
from bandit_unlearning.testing.refusals import refused  # noqa: E402


from bandit_unlearning.exact.tree import sigma_exact, sigma_paper

state = rng.bit_generator.state
bad_oracle = dataclasses.replace(learner, oracle=lambda user, t, model: np.zeros(5))
nan_oracle = dataclasses.replace(learner, oracle=lambda user, t, model: np.full(6, np.nan))
bad_dummy = BanditUser(np.ones(4))
cases = {
    "step that does not exist (0)": lambda: unlearn(run2, DeleteStep(0), rng=rng),
    "step that does not exist (T+1)": lambda: unlearn(run2, DeleteStep(65), rng=rng),
    "step already deleted": lambda: unlearn(run2, DeleteStep(7), rng=rng),
    "non-integer step": lambda: unlearn(run2, DeleteStep(3.0), rng=rng),
    "dummy of the wrong kind": lambda: unlearn(run2, DeleteStep(3), options=ExactOptions(dummy=bad_dummy), rng=rng),
    "statistics of the wrong dimension": lambda: train(bad_oracle, users, rng),
    "non-finite statistics": lambda: train(nan_oracle, users, rng),
    "T < 1 (no users)": lambda: train(learner, [], rng),
    "sigma < 0": lambda: ucb_bandit_learner(3, sigma=-1.0),
    "B <= 0": lambda: dataclasses.replace(learner, B=0.0),
    "rho <= 0 (calibration)": lambda: sigma_paper(0.0, 1.0, 64),
    "T < 1 (calibration)": lambda: sigma_exact(0.5, 1.0, 0),
}
for name, call in cases.items():
    print(f"{name:36s} -> {refused(call)}")
assert rng.bit_generator.state == state
verify(run2)
assert run2.deleted == {7, 20}
print("nothing changed")

# %% [markdown]
# ## 4. Figure: the learner works, and what one deletion costs
#
# Left: cumulative pseudo-regret of the UCB bandit ($m = 3$, $\mu = (0.7, 0.5, 0.3)$, $T = 2000$)
# without noise and with the paper's calibration $\sigma = B\sqrt{\log_2 T}/(\sqrt 2\rho)$ for
# $\rho \in \{0.5, 2\}$ (mean of 6 runs on the same users).  Right: for one run at $\rho = 0.5$ and
# $T = 1000$, the steps recomputed by 300 deletion requests at random positions — about half of
# the requests recompute nothing.

# %%
T_FIG, REPS = 2000, 6
users_fig = bandit_users(means, T_FIG, seed=12)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11.5, 4.2))
for rho in (None, 2.0, 0.5):
    sigma = 0.0 if rho is None else sigma_paper(rho, np.sqrt(2), T_FIG)
    lrn = ucb_bandit_learner(3, sigma=sigma)
    reg = np.mean([pseudo_regret(train(lrn, users_fig, rng), means) for _ in range(REPS if sigma else 1)], axis=0)
    label = "no noise" if rho is None else f"rho = {rho}"
    ax0.plot(np.arange(1, T_FIG + 1), reg, label=f"{label} (sigma = {sigma:.2f})")
    print(f"{label:9s} sigma = {sigma:6.3f}: mean regret at T = {T_FIG}: {reg[-1]:.1f}")
ax0.set(xlabel="step t", ylabel="cumulative pseudo-regret", title=f"UCB on noisy prefix sums (mean of {REPS} runs)")
ax0.legend(fontsize=8)

T_COST = 1000
lrn = ucb_bandit_learner(3, sigma=sigma_paper(0.5, np.sqrt(2), T_COST))
base_run = train(lrn, users_fig[:T_COST], rng)
costs = np.array([unlearn(base_run, DeleteStep(int(t)), rng=rng)[1].steps_recomputed for t in rng.integers(1, T_COST + 1, size=300)])
ax1.hist(costs, bins=np.linspace(0, T_COST, 41), color="C0")
ax1.set(yscale="log", xlabel="steps recomputed by one deletion", ylabel="requests (of 300)",
        title=rf"Cost of unlearning, $\rho$ = 0.5, T = {T_COST}")
print(f"rho = 0.5, T = {T_COST}: {np.mean(costs == 0):.2f} of requests recompute nothing; "
      f"mean cost {costs.mean() / T_COST:.3f} of retraining")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
# - `bandit_unlearning.exact.bandit`: `BanditUser`, `bandit_users`, `ucb_bandit_learner`
#   ($d = 2m$, $B = \sqrt 2$), `ucb_indices`, `bandit_statistics`, `chosen_arm`, `actions`,
#   `pseudo_regret`.
# - The instance plugs into the framework of [chapter B3a](03a_exact_unlearning.ipynb) unchanged:
#   an oracle, an update and an initial model; exactness (Theorem 3.3 (1), derived in chapter B3a)
#   is tested statistically in chapter B4.
# - Checked exactly: zero noise gives plain UCB; unlearned runs (both branches, sequential deletions)
#   replay exactly; a variant that forgets to retrain is caught; bad input is refused with nothing
#   changed.
