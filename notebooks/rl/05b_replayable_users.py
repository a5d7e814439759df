# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.users
# ---

# %% [markdown]
# # Chapter B5b — Replayable users and Gymnasium
#
# *Paper B, Section 4 (the RL instance): users as fixed sources of environment randomness (erratum
# E10), and the MDPs of [chapter B5a](05a_tabular_mdps.ipynb) in Gymnasium.  Exports
# `bandit_unlearning.rl.users` and `bandit_unlearning.rl.gym`.*
#
# Chapter B5a built the MDP type, exact planning and evaluation, and the environments.  This chapter
# adds:
# 1. **replayable users** (erratum E10): a user is a key of a counter-based random generator, so
#    that re-running a deleted user's successors under new policies (Algorithm 3's retraining) meets
#    the *same* environment randomness;
# 2. interoperability with Gymnasium (optional dependency): our MDPs as `gymnasium.Env`, and
#    Gymnasium's toy-text environments (FrozenLake, CliffWalking, Taxi) as our MDPs.
#
# Code counts from 0: steps $h = 0, \dots, H-1$ (the paper's $h = 1, \dots, H$), states $0..S-1$,
# actions $0..A-1$.  Ties in every argmax go to the lowest action index.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.rl.envs import *  # noqa: F403  (chapter B5a)
from bandit_unlearning.rl.mdp import *  # noqa: F403  (chapter B5a)

rng = np.random.default_rng(20260605)

# The four MDPs of chapter B5a, section 3 (the Garnet MDP and the hard instance drawn here).
river, grid = riverswim(horizon=20), gridworld(horizon=10, slip=0.1)
gar = garnet(10, 3, 3, horizon=8, rng=rng)
hard = independent_bandits(n_bandits=4, n_actions=3, horizon=6, gap=0.1, rng=rng)

# %% [markdown]
# ## 1. Replayable users (erratum E10)
#
# Algorithm 3 of Paper B sometimes *retrains from step $j$*: users $z_j, \dots, z_T$ are re-run
# under new policies.  For the result to be a run "with the same users", a user must be a fixed
# source of environment randomness, not a fresh draw.  We make a user a non-negative integer key and
# define its randomness by a **counter-based generator**: the uniform number it uses for the
# transition out of $(h, s, a)$ is
# $$
# u_{\text{user}}(\text{stream}, h, s, a) = \mathrm{SplitMix64}_{\text{seed}}\big(i\big)\, 2^{-64}
# \quad\text{(top 53 bits)}, \qquad i = (((\text{user}\cdot 3 + \text{stream}) H + h) S + s) A + a,
# $$
# the $i$-th output of SplitMix64 (Steele, Lea & Flood 2014; the generator behind Java's
# `SplittableRandom`, passes BigCrush) seeded with the population seed.  Stream 0 drives transitions
# (inverse-CDF sampling of $P_h(\cdot\mid s, a)$), stream 1 rewards, stream 2 the initial state.
# Every $(\text{user}, h, s, a)$ owns a distinct position, so distinct cells are independent uniforms,
# and the same user asked the same $(h, s, a)$ answers the same way — under any policy.  The draw
# costs $O(1)$ per step (no table per user), and is vectorised over users for Monte Carlo.
#
# **Rewards.** `reward_noise="bernoulli"` (default) returns $\mathbb 1\{u < r_h(s, a)\}$, a Bernoulli
# reward with the right mean — the paper's rewards are random in $[0, 1]$; `"none"` returns the
# mean $r_h(s, a)$ itself.  Values and regret are the same for both (they only see means).
#
# The algorithm's own randomness (tree noise, coupling draws) never comes from the users: it uses
# an explicit `rng: np.random.Generator`, fresh on every run.

# %% [markdown]
# The arithmetic itself is shared with other modules' hot loops (chapters B6a, B7a, B13), so it
# lives in the package's kernel, `bandit_unlearning.kernel` (started in chapter B2a): SplitMix64's
# three constants, the scalar uniform of output number $i$, the stream layout, and below a user's
# step and rollout.  Kernel functions check nothing (their callers validate once, at the public
# boundary); the public functions of `bandit_unlearning.rl.users` that follow are those boundaries.

# %% tags=["export:bandit_unlearning.kernel"]
TRANSITION = 0                                   # a user's three streams: transitions,
REWARD = 1                                       # Bernoulli rewards,
INITIAL = 2                                      # and the initial state
N_STREAMS = 3
GAMMA = 0x9E3779B97F4A7C15                       # SplitMix64's increment (2**64 over the golden ratio, odd)
C1 = 0xBF58476D1CE4E5B9                          # SplitMix64's two multipliers (Stafford's mix 13)
C2 = 0x94D049BB133111EB
MASK = (1 << 64) - 1                             # arithmetic modulo 2**64 on Python ints
UNIT = 2.0 ** -53                                # top 53 bits of an output -> a float in [0, 1)


def splitmix64_uniform(seed: int, index: int) -> float:
    """Unchecked: the uniform in ``[0, 1)`` of output number ``index`` of SplitMix64 seeded with ``seed``.

    The scalar twin of ``rl.users.user_uniforms`` on Python ints (bit-identical to it).

    Parameters
    ----------
    seed : int
        Population seed in ``[0, 2**64)`` (not checked).
    index : int
        Output number ``>= 0`` (not checked).

    Returns
    -------
    float
        ``(output >> 11) * 2**-53``.
    """
    z = (seed + (index + 1) * GAMMA) & MASK
    z = ((z ^ (z >> 30)) * C1) & MASK
    z = ((z ^ (z >> 27)) * C2) & MASK
    return ((z ^ (z >> 31)) >> 11) * UNIT


# %% tags=["export:bandit_unlearning.rl.users"]
"""Replayable users (erratum E10) and rollouts of deterministic policies in tabular MDPs.

A user is a non-negative integer key.  Its environment randomness is the counter-based generator
SplitMix64 (Steele, Lea & Flood 2014): the uniform for ``(stream, h, s, a)`` is output number
``i = (((user*3 + stream)*H + h)*S + s)*A + a`` of SplitMix64 seeded with ``seed`` (the population),
top 53 bits.  Stream 0 = transitions (inverse CDF), 1 = Bernoulli rewards, 2 = initial state.
The same user answers the same ``(h, s, a)`` the same way under every policy.
"""

from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import as_array, check_choice, check_instance, check_int
from bandit_unlearning.kernel import C1, C2, GAMMA, INITIAL, N_STREAMS, REWARD, TRANSITION, UNIT, rollout_lists
from bandit_unlearning.rl.mdp import TabularMDP, check_policy
from bandit_unlearning.shapes import check_broadcast

REWARD_NOISE = ("bernoulli", "none")


def splitmix64(seed: int, index) -> np.ndarray:
    """Outputs number ``index`` of SplitMix64 seeded with ``seed``.

    Parameters
    ----------
    seed : int
        The generator's state before output 0, in ``[0, 2**64)``.
    index : array_like of int
        Output numbers (0-based, in ``[0, 2**64)``), any shape.

    Returns
    -------
    numpy.ndarray of uint64
        The outputs, shape of ``index``; equal to the reference ``splitmix64.c`` sequence.

    Raises
    ------
    TypeError
        If ``index`` does not hold integers.
    ValueError
        If ``seed`` or an index is negative (or ``seed >= 2**64``).
    """
    seed = check_seed(seed)
    index = as_array(index, "index")
    if index.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got dtype {index.dtype}")
    if index.dtype.kind == "i" and np.any(index < 0):
        raise ValueError("index must be >= 0 (outputs are numbered from 0)")
    z = index.astype(np.uint64)
    z = np.uint64(seed) + (z + np.uint64(1)) * np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(C2)
    return z ^ (z >> np.uint64(31))


# %% [markdown]
# The checks of a seed and of user keys: a user owns `N_STREAMS * H * S * A` counters, so the
# number of distinct keys depends on the MDP.

# %% tags=["export:bandit_unlearning.rl.users"]
def check_seed(seed) -> int:
    """A population seed: an integer in ``[0, 2**64)`` (``bandit_unlearning.checks.check_int``).

    Parameters
    ----------
    seed : int
        The seed to check.

    Returns
    -------
    int
        ``seed`` as a Python int.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer.
    ValueError
        If it is outside ``[0, 2**64)``.
    """
    return check_int(seed, "seed", 0, 2**64 - 1)


def max_users(mdp: TabularMDP) -> int:
    """Number of distinct user keys (``0 .. max_users-1``) before counters would wrap.

    Parameters
    ----------
    mdp : TabularMDP
        Every user takes ``N_STREAMS * H * S * A`` counters of it.

    Returns
    -------
    int
        ``2**64 // (N_STREAMS * H * S * A)``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    return 2 ** 64 // (N_STREAMS * mdp.H * mdp.S * mdp.A)


def check_users(mdp: TabularMDP, users) -> np.ndarray:
    """Validate user keys: integers in ``[0, max_users(mdp))``.

    Parameters
    ----------
    mdp : TabularMDP
        Gives the key range.
    users : array_like of int
        Keys, any shape (empty allowed).

    Returns
    -------
    numpy.ndarray of uint64
        The keys, a new array of the same shape.

    Raises
    ------
    TypeError
        If ``mdp`` is not a ``TabularMDP`` or ``users`` does not hold integers.
    ValueError
        If a key is outside the range.
    """
    check_instance(mdp, TabularMDP, "mdp")
    u = as_array(users, "users")
    if u.size and not np.issubdtype(u.dtype, np.integer):
        raise TypeError(f"users must be integer keys, got dtype {u.dtype}")
    u = u.astype(np.int64) if u.size == 0 else u
    if np.any(u < 0) or np.any(u >= max_users(mdp)):
        raise ValueError(f"user keys must lie in [0, {max_users(mdp)})")
    return u.astype(np.uint64)


# %% [markdown]
# A user's uniforms at any cells, vectorised: the counter of each cell, then SplitMix64.

# %% tags=["export:bandit_unlearning.rl.users"]
def user_uniforms(mdp: TabularMDP, users, stream, h, s, a, seed: int = 0) -> np.ndarray:
    """The uniforms in ``[0, 1)`` that ``users`` use at ``(stream, h, s, a)`` (all broadcast).

    Parameters
    ----------
    mdp : TabularMDP
        Gives ``H``, ``S`` and ``A``.
    users : array_like of int
        User keys in ``[0, max_users(mdp))``.
    stream, h, s, a : array_like of int
        The cell: ``stream`` in ``[0, N_STREAMS)`` (``TRANSITION``, ``REWARD`` or ``INITIAL``), ``h`` in
        ``[0, H)``, ``s`` in ``[0, S)`` and ``a`` in ``[0, A)``.  The counter layout gives every user
        ``N_STREAMS * H * S * A`` outputs; a cell outside these ranges would read another user's stream.
    seed : int
        The population, in ``[0, 2**64)``.

    Returns
    -------
    numpy.ndarray of float, shape (broadcast of the arguments)
        The top 53 bits of each SplitMix64 output, scaled to ``[0, 1)``.

    Raises
    ------
    TypeError
        If a key or cell index is not an integer.
    ValueError
        If one is outside its range, or the arguments do not broadcast together.
    """
    seed = check_seed(seed)
    u = check_users(mdp, users)
    H, S, A = mdp.H, mdp.S, mdp.A
    cells = []
    for name, value, size in (("stream", stream, N_STREAMS), ("h", h, H), ("s", s, S), ("a", a, A)):
        v = as_array(value, name)
        if v.size and v.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {v.dtype}")
        if np.any(v < 0) or np.any(v >= size):
            raise ValueError(f"{name} must lie in [0, {size}) (another user's stream lies beyond), got {value!r}")
        cells.append(v)
    check_broadcast(users=u, **dict(zip(("stream", "h", "s", "a"), cells)))
    idx = ((u * np.uint64(N_STREAMS) + np.asarray(stream, dtype=np.uint64)) * np.uint64(H)
           + np.asarray(h, dtype=np.uint64)) * np.uint64(S)
    idx = (idx + np.asarray(s, dtype=np.uint64)) * np.uint64(A) + np.asarray(a, dtype=np.uint64)
    return (splitmix64(seed, idx) >> np.uint64(11)).astype(float) * UNIT


# %% [markdown]
# The kernel's rollout pieces: per MDP, the sparse support and CDF of every transition row as
# Python lists (cached per MDP object, weakly), and a user's initial state, one step, and a whole
# episode on plain Python ints (one user at a time, where numpy's per-call overhead dominates).  `rollout`
# (below) checks its arguments and then calls `rollout_lists`; `bandit_unlearning.rl.gym` calls
# `user_step` once per `env.step`.

# %% tags=["export:bandit_unlearning.kernel"]
import weakref
from bisect import bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:                                # not imported at run time: rl.mdp imports the package's rl part
    from bandit_unlearning.rl.mdp import TabularMDP

_SPARSE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # per MDP object, weakly


def sparse_tables(mdp: "TabularMDP") -> tuple:
    """Unchecked: the lists a scalar rollout reads, cached per MDP (weakly).

    Parameters
    ----------
    mdp : TabularMDP
        A valid MDP (not checked).

    Returns
    -------
    tuple
        ``(support, cdf, rewards, initial_cdf)``: per step (one if homogeneous) and ``s*A+a``, the
        support of ``P_h(.|s,a)`` and its CDF (same rule as ``rl.users.cdf_tables``); the mean
        rewards per step and ``s*A+a``; the CDF of the initial distribution.  All Python lists.
    """
    if mdp not in _SPARSE:
        P = mdp.flat_transitions[:1] if mdp.homogeneous_transitions else mdp.flat_transitions
        support, cdf = [], []
        for Ph in P:
            sup_h, cdf_h = [], []
            for row in Ph:
                nz = np.flatnonzero(row)
                c = np.cumsum(row)[nz]
                c = np.where(c >= c[-1], 1.0, c)
                sup_h.append(nz.tolist())
                cdf_h.append(c.tolist())
            support.append(sup_h)
            cdf.append(cdf_h)
        R = mdp.rewards.reshape(mdp.H, -1)
        rewards = (R[:1] if mdp.homogeneous_rewards else R).tolist()
        init = np.cumsum(mdp.initial)
        _SPARSE[mdp] = (support, cdf, rewards, np.where(init >= init[-1], 1.0, init).tolist())
    return _SPARSE[mdp]


def initial_state(mdp: "TabularMDP", user: int, seed: int) -> int:
    """Unchecked: the initial state of ``user`` (stream 2, cell (0, 0, 0)).

    Parameters
    ----------
    mdp : TabularMDP
        A valid MDP (not checked).
    user : int
        A key in ``[0, rl.users.max_users(mdp))`` (not checked).
    seed : int
        The population seed, in ``[0, 2**64)`` (not checked).

    Returns
    -------
    int
        The state ``s_0``.
    """
    init_cdf = sparse_tables(mdp)[3]
    return bisect_right(init_cdf, splitmix64_uniform(seed, (user * N_STREAMS + INITIAL) * mdp.H * mdp.S * mdp.A))

# %% [markdown]
# `user_step` is one step of a user at $(h, s, a)$: its reward and its next state, each from the
# user's own SplitMix64 stream at that address; `rollout_lists` is a whole episode with `user_step`
# inlined.

# %% tags=["export:bandit_unlearning.kernel"]
def user_step(mdp: "TabularMDP", user: int, seed: int, h: int, s: int, a: int, bernoulli: bool) -> tuple:
    """Unchecked: what ``user`` meets at ``(h, s, a)``; the same draws as ``rl.users.rollout``.

    Parameters
    ----------
    mdp : TabularMDP
        A valid MDP (not checked).
    user, seed : int
        The user's key and the population seed, in range (not checked).
    h, s, a : int
        Step in ``[0, H)``, state in ``[0, S)``, action in ``[0, A)`` (not checked).
    bernoulli : bool
        Draw a Bernoulli reward (True) or return the mean reward (False).

    Returns
    -------
    tuple
        ``(s', reward)``.
    """
    support, cdf, rewards, _ = sparse_tables(mdp)
    H, S, A = mdp.H, mdp.S, mdp.A
    sa, row = s * A + a, (0 if mdp.homogeneous_transitions else h)
    mean = rewards[0 if mdp.homogeneous_rewards else h][sa]
    j = (((user * N_STREAMS + REWARD) * H + h) * S + s) * A + a
    rew = (1.0 if splitmix64_uniform(seed, j) < mean else 0.0) if bernoulli else mean
    i = (((user * N_STREAMS + TRANSITION) * H + h) * S + s) * A + a
    return support[row][sa][bisect_right(cdf[row][sa], splitmix64_uniform(seed, i))], rew


def rollout_lists(mdp: "TabularMDP", policy_rows: list, user: int, seed: int, bernoulli: bool) -> tuple:
    """Unchecked: one episode of ``user``, ``user_step`` inlined for speed.

    Parameters
    ----------
    mdp : TabularMDP
        A valid MDP (not checked).
    policy_rows : list
        ``policy.tolist()`` of a valid deterministic policy ``[H, S]`` (not checked).
    user, seed : int
        The user's key and the population seed, in range (not checked).
    bernoulli : bool
        Draw Bernoulli rewards (True) or use the mean rewards (False).

    Returns
    -------
    tuple
        ``(states, actions, rewards)``: Python lists of lengths ``H+1``, ``H`` and ``H``.
    """
    support, cdf, rewards, _ = sparse_tables(mdp)
    H, S, A = mdp.H, mdp.S, mdp.A
    ht, hr = not mdp.homogeneous_transitions, not mdp.homogeneous_rewards
    base = user * N_STREAMS
    s = initial_state(mdp, user, seed)
    states, actions, rews = [s], [], []
    for h in range(H):
        a = policy_rows[h][s]
        sa = s * A + a
        i = ((base * H + h) * S + s) * A + a                 # stream 0 (transitions)
        mean = rewards[h if hr else 0][sa]
        if bernoulli:
            j = (((base + REWARD) * H + h) * S + s) * A + a  # stream 1 (rewards)
            rew = 1.0 if splitmix64_uniform(seed, j) < mean else 0.0
        else:
            rew = mean
        row = h if ht else 0
        s = support[row][sa][bisect_right(cdf[row][sa], splitmix64_uniform(seed, i))]
        actions.append(a)
        rews.append(rew)
        states.append(s)
    return states, actions, rews


# %% [markdown]
# Rollouts: a user's episode under a deterministic policy, drawn from the user's uniforms above by
# inverse-CDF sampling — `rollout` for one user, `rollout_batch` vectorised over users for Monte Carlo.

# %% tags=["export:bandit_unlearning.rl.users"]
@dataclass(frozen=True)
class Trajectory:
    """One or a batch of episodes.

    Parameters
    ----------
    states : numpy.ndarray of int, shape (..., H + 1)
        ``s_0 .. s_H``.
    actions : numpy.ndarray of int, shape (..., H)
        The action taken at each step.
    rewards : numpy.ndarray of float, shape (..., H)
        The reward received at each step.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray

    def __post_init__(self):
        st, ac = as_array(self.states, "states"), as_array(self.actions, "actions")
        rw = as_array(self.rewards, "rewards")
        for name, v in (("states", st), ("actions", ac)):
            if v.size and v.dtype.kind not in "iu":
                raise TypeError(f"{name} must hold integers, got dtype {v.dtype}")
        if ac.ndim < 1 or st.shape != ac.shape[:-1] + (ac.shape[-1] + 1,) or rw.shape != ac.shape:
            raise ValueError(f"a trajectory needs states [..., H+1], actions and rewards [..., H], got shapes "
                             f"{st.shape}, {ac.shape}, {rw.shape}")

    @property
    def total_reward(self):
        return self.rewards.sum(axis=-1)


def cdf_tables(mdp: TabularMDP) -> np.ndarray:
    """Cumulative sums of the kernels with the final plateau set to exactly 1, so that the
    inverse-CDF draw ``#{s' : cdf[s'] <= u}`` never picks a zero-probability state.

    Parameters
    ----------
    mdp : TabularMDP

    Returns
    -------
    numpy.ndarray, shape (H, S, A, S)
        Non-decreasing along the last axis, ending in 1 (a zero-stride view over ``h`` for a
        time-homogeneous kernel).
    """
    check_instance(mdp, TabularMDP, "mdp")
    P = mdp.transitions
    c = np.cumsum(P[:1] if mdp.homogeneous_transitions else P, axis=-1)
    c = np.where(c >= c[..., -1:], 1.0, c)
    return np.broadcast_to(c, P.shape)


def check_reward_noise(reward_noise: str) -> str:
    """``reward_noise``, checked: one of ``REWARD_NOISE`` (``"bernoulli"`` or ``"none"``).

    Parameters
    ----------
    reward_noise : str
        ``"bernoulli"`` draws a Bernoulli reward with the right mean; ``"none"`` returns the mean.

    Returns
    -------
    str
        ``reward_noise`` itself; anything else raises ``ValueError`` naming ``reward_noise``.
    """
    return check_choice(reward_noise, "reward_noise", REWARD_NOISE)


# %% [markdown]
# One episode of one user, on plain Python ints (the kernel's `rollout_lists`).

# %% tags=["export:bandit_unlearning.rl.users"]
def rollout(mdp: TabularMDP, policy, user: int, seed: int = 0, reward_noise: str = "bernoulli") -> Trajectory:
    """One episode of a deterministic policy with a replayable user.

    Parameters
    ----------
    mdp : TabularMDP
    policy : array_like of int, shape (H, S)
        The action at each step and state.
    user : int
        The user's key, in ``[0, max_users(mdp))``.
    seed : int
        The population, in ``[0, 2**64)``.
    reward_noise : str
        ``"bernoulli"`` (rewards drawn with the MDP's means) or ``"none"`` (the means themselves).

    Returns
    -------
    Trajectory
        States ``(H + 1,)``, actions and rewards ``(H,)``; the same for the same user, seed and the
        policy's actions on the states the user visits.

    Raises
    ------
    TypeError, ValueError
        If the policy, key, seed or ``reward_noise`` is refused.
    """
    pi = check_policy(mdp, policy)
    if isinstance(user, np.ma.MaskedArray):
        raise TypeError("user must be an integer key, not a masked array")
    u = int(check_users(mdp, [user])[0])
    states, actions, rews = rollout_lists(mdp, pi.tolist(), u, check_seed(seed),
                                          check_reward_noise(reward_noise) == "bernoulli")
    return Trajectory(np.array(states), np.array(actions), np.array(rews))


# %% [markdown]
# Episodes of many users at once, vectorised over users; user by user equal to `rollout`.

# %% tags=["export:bandit_unlearning.rl.users"]
def rollout_batch(mdp: TabularMDP, policy, users, seed: int = 0, reward_noise: str = "bernoulli") -> Trajectory:
    """Episodes of many users, vectorised over users; equal, user by user, to ``rollout``.

    Parameters
    ----------
    mdp : TabularMDP
    policy : array_like of int, shape (H, S) or (B, H, S)
        One policy for every user, or one each.
    users : array_like of int, shape (B,)
        User keys in ``[0, max_users(mdp))``.
    seed : int
        The population, in ``[0, 2**64)``.
    reward_noise : str
        ``"bernoulli"`` or ``"none"``, as for ``rollout``.

    Returns
    -------
    Trajectory
        States ``(B, H + 1)``, actions and rewards ``(B, H)``.

    Raises
    ------
    TypeError, ValueError
        If an argument is refused, ``users`` is not 1-D, or there is not one policy per user.
    """
    users = check_users(mdp, users)
    if users.ndim != 1:
        raise ValueError(f"users must be 1-D, got shape {users.shape}")
    pi = as_array(policy, "policy")
    pi = check_policy(mdp, pi, batch=pi.ndim == 3)
    if pi.ndim == 3 and len(pi) != len(users):
        raise ValueError(f"{len(pi)} policies for {len(users)} users")
    bernoulli = check_reward_noise(reward_noise) == "bernoulli"
    seed = check_seed(seed)
    B, H = len(users), mdp.H
    cdf, r = cdf_tables(mdp), mdp.rewards
    init_cdf = np.cumsum(mdp.initial)
    init_cdf = np.where(init_cdf >= init_cdf[-1], 1.0, init_cdf)
    s = (init_cdf[None, :] <= user_uniforms(mdp, users, INITIAL, 0, 0, 0, seed)[:, None]).sum(axis=1)
    states, actions = np.empty((B, H + 1), dtype=np.int64), np.empty((B, H), dtype=np.int64)
    rewards = np.empty((B, H))
    states[:, 0] = s
    rows = np.arange(B)
    for h in range(H):
        a = pi[h, s] if pi.ndim == 2 else pi[rows, h, s]
        mean = r[h, s, a]
        rewards[:, h] = (user_uniforms(mdp, users, REWARD, h, s, a, seed) < mean) if bernoulli else mean
        u = user_uniforms(mdp, users, TRANSITION, h, s, a, seed)
        s = (cdf[h, s, a] <= u[:, None]).sum(axis=1)
        actions[:, h], states[:, h + 1] = a, s
    return Trajectory(states, actions, rewards)


# %% [markdown]
# **Checks.** (i) Our SplitMix64 reproduces the reference outputs of Vigna's `splitmix64.c` for
# seed 0, and the scalar path equals the vectorised one bit for bit.  (ii) Replay: the same user
# under the same policy gives the same trajectory; under a policy that differs only at states the
# user never visits, too; a different user gives a different one.  (iii) The scalar and the batch
# rollouts agree user by user.  (iv) Uniformity: a Kolmogorov–Smirnov test on $2\cdot10^5$
# uniforms from many users and cells (threshold $p > 10^{-6}$).

# %%
from scipy import stats

from bandit_unlearning.rl.users import *  # noqa: F403
from bandit_unlearning.kernel import splitmix64_uniform

reference = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
assert [int(z) for z in splitmix64(0, np.arange(4))] == reference
idx = rng.integers(0, 2 ** 62, size=1000, dtype=np.int64)
seed_demo = int(rng.integers(2 ** 63))
vec = (splitmix64(seed_demo, idx) >> np.uint64(11)).astype(float) * 2.0 ** -53
assert all(splitmix64_uniform(seed_demo, int(i)) == v for i, v in zip(idx, vec))

USER_SEED = int(rng.integers(2 ** 63))            # the population of users of this chapter
pi_star = value_iteration(grid).policy
t1 = rollout(grid, pi_star, user=7, seed=USER_SEED)
t2 = rollout(grid, pi_star, user=7, seed=USER_SEED)
visited = np.zeros((grid.H, grid.S), bool); visited[np.arange(grid.H), t1.states[:-1]] = True
other = np.where(visited, pi_star, (pi_star + 1) % grid.A)        # differs only off the user's path
t3 = rollout(grid, other, user=7, seed=USER_SEED)
print("user 7:", t1.states, "reward", t1.total_reward)
paths = {tuple(rollout(grid, pi_star, user=k, seed=USER_SEED).states) for k in range(50)}
print(f"50 users under pi*: {len(paths)} distinct trajectories")
assert all(np.array_equal(getattr(t1, f), getattr(t, f)) for t in (t2, t3) for f in ("states", "actions", "rewards"))

users = np.arange(3000)
for m in (grid, river, gar, hard):
    pi = rng.integers(0, m.A, size=(m.H, m.S))
    batch = rollout_batch(m, pi, users, seed=USER_SEED)
    for k in rng.choice(users, size=30, replace=False):
        one = rollout(m, pi, int(k), seed=USER_SEED)
        assert np.array_equal(one.states, batch.states[k]) and np.array_equal(one.rewards, batch.rewards[k])
print("scalar and batch rollouts agree on 4 MDPs")

U = user_uniforms(grid, rng.integers(0, 10 ** 6, size=200_000), rng.integers(0, 3, 200_000),
                  rng.integers(0, grid.H, 200_000), rng.integers(0, grid.S, 200_000),
                  rng.integers(0, grid.A, 200_000), seed=USER_SEED)
p_ks = stats.kstest(U, "uniform").pvalue
print(f"KS test of 200,000 user uniforms against U[0,1): p = {p_ks:.3f}")
assert p_ks > 1e-6

# %% [markdown]
# **Check: exact evaluation against Monte Carlo.**  For each of the four MDPs, the optimal policy
# and a perturbed one (each entry of $\pi^\star$ replaced by a random action with probability 0.3), the average return of $R = 200{,}000$ users must match $\mathbb E_{s_1}V^\pi_0(s_1)$.
# A return lies in $[0, H]$, so by Hoeffding the mean deviates by more than
# $t = H\sqrt{\ln(2/p)/(2R)}$ with probability at most $p$; with $p = 10^{-6}/8$ (8 comparisons,
# two-sided) a correct implementation fails the whole check with probability below $10^{-6}$.
# The same test rejects an evaluator that drops the last step (a typical horizon off-by-one).

# %%
from bandit_unlearning.testing.montecarlo import hoeffding_margin

R = 200_000
users = np.arange(R)
checks = []
for m in (grid, river, gar, hard):
    opt = value_iteration(m).policy
    perturbed = np.where(rng.random(opt.shape) < 0.3, rng.integers(0, m.A, size=opt.shape), opt)
    for label, pi in (("perturbed", perturbed), ("optimal", opt)):
        exact = float(m.initial @ evaluate_policy(m, pi).V[0])
        mc = rollout_batch(m, pi, users, seed=USER_SEED).total_reward.mean()
        checks.append((m, pi, label, exact, mc, hoeffding_margin(R, m.H, 1e-6 / 8 / 2)))
for m, pi, label, exact, mc, t in checks:
    print(f"{m.name:26s} {label:9s} exact {exact:8.4f}  Monte Carlo {mc:8.4f}  margin {t:.4f}")
    assert abs(mc - exact) <= t


def evaluate_dropping_last_step(m, pi):
    """Broken: evaluates the first H-1 steps only."""
    short = TabularMDP(m.transitions[:-1], m.rewards[:-1], m.initial, m.H - 1)
    return float(short.initial @ evaluate_policy(short, pi[:-1]).V[0])


m, pi, label, exact, mc, t = checks[1]                     # the gridworld's optimal policy
broken = evaluate_dropping_last_step(m, pi)
print(f"broken evaluator on {m.name} ({label}): {broken:.4f} vs Monte Carlo {mc:.4f} -> rejected")
assert abs(mc - broken) > t

# %% [markdown]
# ## 2. Gymnasium interoperability (optional dependency)
#
# `pip install "bandit_unlearning[gym]"` adds [Gymnasium](https://gymnasium.farama.org).  Two
# directions:
#
# * `to_gymnasium(mdp)` wraps a `TabularMDP` as a `gymnasium.Env` with `Discrete(S)` observations
#   and `Discrete(A)` actions; an episode is truncated after $H$ steps, and `info["h"]` carries the
#   step (a time-inhomogeneous MDP's optimal policy depends on it).  `reset(options={"user": k})`
#   replays user $k$ (same draws as `rollout`); otherwise the env's own `np_random` is used.
# * `from_gymnasium(env, horizon)` reads the transition table `env.unwrapped.P[s][a] = [(p, s', r,
#   done), ...]` of the toy-text environments (FrozenLake, CliffWalking, Taxi).  Three choices,
#   made explicit:
#   1. *Termination*: a transition with `done=True` leads to one extra absorbing **terminal state**
#      (index $S$), so episodes of our MDPs always last $H$ steps.
#   2. *Rewards*: $r_h(s, a)$ is the expected raw reward $\sum p\, r$; raw rewards (including the 0
#      earned after termination) are mapped affinely onto $[0, 1]$ by $(r - r_{lo})/(r_{hi} - r_{lo})$.
#      Every $H$-step return becomes $(G - H r_{lo})/(r_{hi} - r_{lo})$, an increasing affine map, so
#      optimal policies are unchanged; `ImportedMDP.raw_value` maps values back and
#      `ImportedMDP.raw_regret` maps a regret back (a factor $r_{hi} - r_{lo}$: 100 on CliffWalking,
#      whose cliff costs $-100$ — report regret in both units).
#   3. *Reward noise*: our rollouts draw a reward with the right mean, independent of $s'$ (the
#      raw reward of a toy-text step may depend on $s'$); values and regret only see means.
#
# Environment versions: under the pinned Gymnasium (1.4) the toy-text ids are `FrozenLake-v1`,
# `CliffWalking-v1` and `Taxi-v4`; the older `CliffWalking-v0` and `Taxi-v3` raise
# `gymnasium.error.DeprecatedEnv` (checked below against `gymnasium.envs.registry`).
#
# Gymnasium is imported only inside these functions; without it they raise an `ImportError` that
# says how to install it.  Spaces other than `Discrete` (starting at 0), or an environment without a
# transition table, raise a `TypeError` naming the problem.

# %% tags=["export:bandit_unlearning.rl.gym"]
"""Gymnasium interoperability (optional extra ``bandit_unlearning[gym]``): our tabular MDPs as
``gymnasium.Env`` and Gymnasium's toy-text environments (FrozenLake, CliffWalking, Taxi) as our
MDPs.  Gymnasium is imported lazily; a missing installation gives a clear ``ImportError``.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bandit_unlearning.checks import check_count, as_array, as_real, check_instance, check_int
from bandit_unlearning.rl.mdp import TabularMDP
from bandit_unlearning.kernel import initial_state, user_step
from bandit_unlearning.rl.users import check_reward_noise, check_seed, check_users


def _import_gymnasium():
    try:
        import gymnasium
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "this function needs Gymnasium: pip install 'bandit_unlearning[gym]' (or gymnasium>=1.0)"
        ) from err
    return gymnasium


def _discrete_size(space, what: str) -> int:
    gym = _import_gymnasium()
    if not isinstance(space, gym.spaces.Discrete):
        raise TypeError(f"{what} must be gymnasium.spaces.Discrete, got {type(space).__name__} ({space})")
    if int(space.start) != 0:
        raise TypeError(f"{what} must start at 0, got Discrete(n={space.n}, start={space.start})")
    return int(space.n)


@dataclass(frozen=True)
class ImportedMDP:
    """A Gymnasium toy-text environment as a ``TabularMDP``, with the affine reward map used.

    Parameters
    ----------
    mdp : TabularMDP
        The environment's table, rewards mapped to ``(raw - reward_low) / (reward_high - reward_low)``.
    reward_low, reward_high : float
        The smallest and largest raw reward (finite, ``low <= high``).
    terminal_state : int or None
        The absorbing state added for ``done`` transitions (None if the table has none).
    """

    mdp: TabularMDP
    reward_low: float
    reward_high: float
    terminal_state: int | None

    def __post_init__(self):
        check_instance(self.mdp, TabularMDP, "mdp")
        low, high = as_real(self.reward_low, "reward_low"), as_real(self.reward_high, "reward_high")
        if not (np.isfinite(low) and np.isfinite(high) and low <= high):
            raise ValueError(f"reward_low and reward_high must be finite with low <= high, got {low}, {high}")
        if self.terminal_state is not None:
            check_int(self.terminal_state, "terminal_state", 0, self.mdp.S - 1)

    def raw_value(self, value):
        """Map an ``H``-step value of ``mdp`` back to the environment's raw reward scale.

        Parameters
        ----------
        value : array_like of float
            Values of ``mdp`` (sums of ``H`` rewards in ``[0, 1]``).

        Returns
        -------
        numpy.ndarray
            ``value * (reward_high - reward_low) + H * reward_low``.
        """
        span = self.reward_high - self.reward_low
        return as_array(value, "value") * span + self.mdp.H * self.reward_low

    def raw_regret(self, regret):
        """Map a regret of ``mdp`` (a difference of ``H``-step values, rewards in [0, 1]) to the
        environment's own reward units: ``regret * (reward_high - reward_low)``.  Report both: a
        regret that looks small in [0, 1] can be a large loss in the environment's units (on
        CliffWalking, 0.07 per episode is 7 steps of -1).

        Parameters
        ----------
        regret : array_like of float
            A regret of ``mdp``.

        Returns
        -------
        numpy.ndarray
            The same regret in the environment's units.
        """
        return as_array(regret, "regret") * (self.reward_high - self.reward_low)

# %% [markdown]
# `from_gymnasium` reads a toy-text environment's transition table `env.unwrapped.P` and its
# initial-state distribution into a finite-horizon `TabularMDP`, checking the spaces first.

# %% tags=["export:bandit_unlearning.rl.gym"]
def from_gymnasium(env, horizon: int, name: str | None = None) -> ImportedMDP:
    """Build a ``TabularMDP`` from an environment exposing ``env.unwrapped.P[s][a] = [(p, s', r, done)]``
    (Gymnasium toy-text: FrozenLake, CliffWalking, Taxi) and ``initial_state_distrib``.

    Parameters
    ----------
    env : gymnasium.Env
        With ``Discrete`` observation and action spaces starting at 0.
    horizon : int
        ``H >= 1`` steps per episode (a ``done`` leads to an absorbing state).
    name : str or None
        The MDP's name (None: the environment's id).

    Returns
    -------
    ImportedMDP
        The MDP with rewards mapped affinely to ``[0, 1]``, and the map.

    Raises
    ------
    TypeError
        If ``env`` has no discrete spaces, transition table or initial distribution.
    """
    horizon = check_count(horizon, "horizon", 1)
    if name is not None:
        check_instance(name, str, "name")
    for attr in ("observation_space", "action_space", "unwrapped"):
        if not hasattr(env, attr):
            raise TypeError(f"env must be a Gymnasium environment (with {attr}), got {type(env).__name__}")
    S = _discrete_size(env.observation_space, "observation_space")
    A = _discrete_size(env.action_space, "action_space")
    base = env.unwrapped
    table = getattr(base, "P", None)
    if not isinstance(table, dict) or len(table) != S:
        raise TypeError(f"{type(base).__name__} exposes no transition table P[s][a] with {S} states")
    entries = []           # (s, a, p, s', r, done)
    for s in range(S):
        if s not in table or not all(a in table[s] for a in range(A)):
            raise TypeError(f"transition table P is missing state {s} or one of its {A} actions")
        for a in range(A):
            for p, s2, r, done in table[s][a]:
                entries.append((s, a, float(p), int(s2), float(r), bool(done)))
    has_done = any(e[5] for e in entries)
    n = S + 1 if has_done else S
    raw = [e[4] for e in entries] + ([0.0] if has_done else [])
    lo, hi = min(raw), max(raw)
    span = hi - lo if hi > lo else 1.0
    P = np.zeros((n, A, n))
    R = np.zeros((n, A))
    for s, a, p, s2, r, done in entries:
        P[s, a, n - 1 if done else s2] += p
        R[s, a] += p * (r - lo) / span
    if has_done:
        P[n - 1, :, n - 1] = 1.0
        R[n - 1, :] = (0.0 - lo) / span
    R = np.clip(R, 0.0, 1.0)                      # remove rounding outside [0, 1]
    isd = getattr(base, "initial_state_distrib", None)
    if isd is None:
        raise TypeError(f"{type(base).__name__} has no initial_state_distrib")
    initial = np.zeros(n)
    initial[:S] = np.asarray(isd, dtype=float)
    name = name or (env.spec.id if getattr(env, "spec", None) is not None else type(base).__name__)
    mdp = TabularMDP(P, R, initial, horizon, name=name)
    return ImportedMDP(mdp, lo, hi, n - 1 if has_done else None)


# %% [markdown]
# The other direction: `to_gymnasium` wraps a `TabularMDP` as a `gymnasium.Env` (first bullet
# above); its class is built on first use, so Gymnasium is imported only then.

# %% tags=["export:bandit_unlearning.rl.gym"]
@lru_cache(maxsize=None)
def _env_class():
    gym = _import_gymnasium()

    class TabularMDPEnv(gym.Env):
        """A ``TabularMDP`` as a Gymnasium environment (episodes truncated after ``H`` steps)."""

        metadata = {"render_modes": []}

        def __init__(self, mdp: TabularMDP, seed: int = 0, reward_noise: str = "bernoulli"):
            if not isinstance(mdp, TabularMDP):
                raise TypeError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
            self.mdp = mdp
            self.user_seed = check_seed(seed)
            self.reward_noise = check_reward_noise(reward_noise)
            self.observation_space = gym.spaces.Discrete(mdp.S)
            self.action_space = gym.spaces.Discrete(mdp.A)
            self._h = None

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self._user = None
            if options and "user" in options:
                self._user = int(check_users(self.mdp, [options["user"]])[0])
                self._s = initial_state(self.mdp, self._user, self.user_seed)
            else:
                self._s = int(self.np_random.choice(self.mdp.S, p=self.mdp.initial))
            self._h = 0
            return self._s, {"h": 0}

        def step(self, action):
            if self._h is None or self._h >= self.mdp.H:
                raise RuntimeError("call reset() before step() (the episode has ended)")
            if not self.action_space.contains(action):
                raise ValueError(f"action must lie in Discrete({self.mdp.A}), got {action!r}")
            a, h, s = int(action), self._h, self._s
            bernoulli = self.reward_noise == "bernoulli"
            if self._user is not None:
                s2, reward = user_step(self.mdp, self._user, self.user_seed, h, s, a, bernoulli)
            else:
                s2 = int(self.np_random.choice(self.mdp.S, p=self.mdp.transitions[h, s, a]))
                mean = float(self.mdp.rewards[h, s, a])
                reward = float(self.np_random.random() < mean) if bernoulli else mean
            self._s, self._h = s2, h + 1
            return s2, float(reward), False, self._h == self.mdp.H, {"h": self._h}

    return TabularMDPEnv


def to_gymnasium(mdp: TabularMDP, seed: int = 0, reward_noise: str = "bernoulli"):
    """Wrap ``mdp`` as a ``gymnasium.Env`` (episodes truncated after ``H`` steps).

    Parameters
    ----------
    mdp : TabularMDP
    seed : int
        The user population used when ``reset(options={"user": k})`` asks to replay user ``k``.
    reward_noise : str
        ``"bernoulli"`` or ``"none"``, as for ``rollout``.

    Returns
    -------
    gymnasium.Env
        Observations and actions ``Discrete(S)`` and ``Discrete(A)``.

    Raises
    ------
    ImportError
        If Gymnasium is not installed.
    """
    return _env_class()(mdp, seed=seed, reward_noise=reward_noise)


# %% [markdown]
# **Checks.**  (i) CliffWalking is deterministic: the optimal $H = 20$ return in raw rewards is the
# shortest path, 13 steps of $-1$, then 0 after termination — exactly.  (ii) Taxi is deterministic
# too: following our optimal policy in Gymnasium's own `Taxi-v4` from its own random starts must
# collect exactly the raw value we predict for each start state.  (iii) FrozenLake is slippery:
# the success rate of our optimal policy played in Gymnasium's own environment (its own
# randomness) over $R = 3{,}000$ episodes must be within the Hoeffding margin ($p = 10^{-6}$) of the
# predicted success probability — and a conversion that ignored the slipperiness (the table of
# `is_slippery=False`) predicts 1 and is rejected.  (iv) Our wrapper passes Gymnasium's
# `check_env`, and replaying a user through it reproduces `rollout`.

# %%
import gymnasium

from bandit_unlearning.rl.gym import *  # noqa: F403


def play_in_gymnasium(env, policy, H, episodes, seed):
    """Total raw reward and start state of `episodes` runs of a time-dependent policy [H, S]."""
    out = []
    for k in range(episodes):
        s, _ = env.reset(seed=seed + k)
        start, total = s, 0.0
        for h in range(H):
            s, r, terminated, truncated, _ = env.step(int(policy[h, s]))
            total += r
            if terminated or truncated:
                break
        out.append((start, total))
    return np.array(out)


cliff = from_gymnasium(gymnasium.make("CliffWalking-v1"), horizon=20)
v_cliff = cliff.raw_value(value_iteration(cliff.mdp).V[0] @ cliff.mdp.initial)
print(f"{cliff.mdp}: rewards [{cliff.reward_low}, {cliff.reward_high}] -> [0, 1]; optimal raw return {v_cliff:.6f}")
assert np.isclose(v_cliff, -13.0)

taxi_env = gymnasium.make("Taxi-v4")
taxi = from_gymnasium(taxi_env, horizon=25)
plan_taxi = value_iteration(taxi.mdp)
played = play_in_gymnasium(taxi_env, plan_taxi.policy, 25, 300, seed=int(rng.integers(10 ** 6)))
predicted = taxi.raw_value(plan_taxi.V[0, played[:, 0].astype(int)])
print(f"{taxi.mdp}: mean raw return over 300 Gymnasium episodes {played[:, 1].mean():.3f}, "
      f"predicted {predicted.mean():.3f}, max |difference| {np.abs(played[:, 1] - predicted).max():.1e}")
assert np.allclose(played[:, 1], predicted)

lake_env = gymnasium.make("FrozenLake-v1")                       # slippery 4x4
lake = from_gymnasium(lake_env, horizon=50)
plan_lake = value_iteration(lake.mdp)
p_success = lake.raw_value(lake.mdp.initial @ plan_lake.V[0])
R_lake = 3000
rate = play_in_gymnasium(lake_env, plan_lake.policy, 50, R_lake, seed=int(rng.integers(10 ** 6)))[:, 1].mean()
t_lake = hoeffding_margin(R_lake, 1.0, 1e-6 / 2)
naive = from_gymnasium(gymnasium.make("FrozenLake-v1", is_slippery=False), horizon=50)
p_naive = naive.raw_value(naive.mdp.initial @ value_iteration(naive.mdp).V[0])
print(f"{lake.mdp}: predicted success {p_success:.4f}, Gymnasium's own episodes {rate:.4f} "
      f"(margin {t_lake:.4f}); slip-blind conversion predicts {p_naive:.4f} -> rejected")
assert abs(rate - p_success) <= t_lake and abs(rate - p_naive) > t_lake

from gymnasium.utils.env_checker import check_env

wrapped = to_gymnasium(grid, seed=USER_SEED)
check_env(wrapped, skip_render_check=True)
s, info = wrapped.reset(options={"user": 7})
states = [s]
for h in range(grid.H):
    s, r, term, trunc, info = wrapped.step(int(pi_star[h, s]))
    states.append(s)
assert trunc and states == rollout(grid, pi_star, user=7, seed=USER_SEED).states.tolist()
print("wrapper: passes check_env; replaying user 7 reproduces rollout:", states)
for bad_env in (gymnasium.make("CartPole-v1"), gymnasium.make("MountainCar-v0")):
    try:
        from_gymnasium(bad_env, horizon=10)
    except TypeError as err:
        print("refused:", err)

# %% [markdown]
# **Versions that exist.**  The ids this chapter uses are registered; the older ones are refused by
# Gymnasium itself.

# %%
toy_text = sorted(k for k in gymnasium.envs.registry if k.split("-v")[0] in ("FrozenLake", "CliffWalking", "Taxi"))
print(f"Gymnasium {gymnasium.__version__}: toy-text ids {toy_text}")
assert {"FrozenLake-v1", "CliffWalking-v1", "Taxi-v4"} <= set(toy_text)
import warnings

for old_id in ("CliffWalking-v0", "Taxi-v3"):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            gymnasium.make(old_id)
    except gymnasium.error.DeprecatedEnv as err:
        print(f"{old_id}: DeprecatedEnv ({str(err).split('.')[0]})")
    else:
        raise AssertionError(f"{old_id} was accepted")

# %% [markdown]
# **What a learner on a real environment will cost, before it starts.**  TV-stable UCB-VI's tree
# holds statistics of $d = 2SAH + S^2AH$ numbers per node (chapter B7a, `training_cost`).  On Taxi
# ($S = 501$ with the terminal state, $A = 6$, $H = 25$) that is 37.8 M numbers, 302 MB per node and
# about 3.6 GB for $T = 16$ episodes (a practitioner measured 3.1–3.4 GB and 3.4–4.9 s per episode): `stable_ucbvi` refuses it under the default budget (2 GiB) with
# the estimate and the override in the message, before allocating anything.  The estimate must
# bound what training really holds: the peak traced memory of a CliffWalking run is checked
# against it.

# %%
import tracemalloc

from bandit_unlearning.exact.learner import train as train_run
from bandit_unlearning.rl.stable import DEFAULT_MAX_MEMORY, episode_users, stable_ucbvi, training_cost

taxi_cost = training_cost(taxi.mdp, 16, timed=False)
print(taxi_cost)
assert taxi_cost.d == 37_800_450 and taxi_cost.peak_bytes > DEFAULT_MAX_MEMORY
try:
    stable_ucbvi(taxi.mdp, 16, 10.0)
except ValueError as err:
    message = str(err)
    assert "max_memory=None" in message and "s per episode" in message
    print("refused:", message.split(" numbers per tree node")[0], "... pass max_memory=None to run anyway")
else:
    raise AssertionError("a 3 GB learner was built under a 2 GiB budget")
cliff_cost = training_cost(cliff.mdp, 8, timed=False)
cliff_learner = stable_ucbvi(cliff.mdp, 8, 10.0)
tracemalloc.start()
train_run(cliff_learner, episode_users(8, rng=np.random.default_rng(0)), np.random.default_rng(1))
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(f"CliffWalking, T = 8: estimated {cliff_cost.peak_bytes / 1e6:.1f} MB ({cliff_cost.vectors} vectors of d), "
      f"measured peak within it: {peak <= cliff_cost.peak_bytes}")
assert peak <= cliff_cost.peak_bytes

# %%
# NBVAL_IGNORE_OUTPUT
print(training_cost(taxi.mdp, 16))                     # with the time per episode, timed on this machine

# %% [markdown]
# **Regret in the environment's units.**  TV-stable UCB-VI (chapter B7a) on CliffWalking
# ($H = 20$, $T = 60$ episodes), non-private ($\rho = \infty$) and at $\rho = 10$: the exact expected
# return of each episode's policy in raw units, against the optimum $-13$, and the regret in both
# units.  The mapped regret is `raw_regret / 100` exactly; a learner stuck at $-20$ (never reaching
# the goal in 20 steps) has mapped regret $0.07$ per episode, which looks negligible, and raw regret
# $7$ steps of $-1$ per episode, which is not.

# %%
import math

from bandit_unlearning.rl.stable import run_policies

T_cliff = 60
cliff_users = episode_users(T_cliff, rng=np.random.default_rng(int(rng.integers(2**32))))
for rho in (math.inf, 10.0):
    run = train_run(stable_ucbvi(cliff.mdp, T_cliff, rho), cliff_users, np.random.default_rng(int(rng.integers(2**32))))
    mapped = regret(cliff.mdp, run_policies(run))
    raw_returns = cliff.raw_value(policy_values(cliff.mdp, run_policies(run)))
    raw = cliff.raw_regret(mapped)
    assert np.allclose(raw, v_cliff - raw_returns) and np.allclose(mapped * 100, raw)
    last = slice(T_cliff - 20, T_cliff)
    print(f"rho = {rho:g}: last 20 episodes: mean raw return {raw_returns[last].mean():.2f} (optimum {v_cliff:.0f}); "
          f"regret per episode {mapped[last].mean():.3f} mapped, {raw[last].mean():.2f} raw; "
          f"total regret {mapped.sum():.2f} mapped, {raw.sum():.0f} raw")

# %% [markdown]
# ## Summary
# - Replayable users (E10): `rollout`, `rollout_batch`, `user_uniforms`, `splitmix64`, `Trajectory`
#   in `bandit_unlearning.rl.users`.  Exact evaluation matched Monte Carlo with 200,000 users on 8
#   (MDP, policy) pairs, and the same test rejected an evaluator that drops the last step.
# - Gymnasium (optional): `to_gymnasium`, `from_gymnasium`, `ImportedMDP` in
#   `bandit_unlearning.rl.gym`; conversions of CliffWalking, Taxi and FrozenLake agree exactly (or
#   within the Monte Carlo margin) with Gymnasium's own environments.
