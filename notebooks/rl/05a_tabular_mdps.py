# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.mdp
# ---

# %% [markdown]
# # Chapter B5a — Episodic tabular MDPs: the type, exact planning, environments
#
# *Paper B, Section 4 (the RL instance, Paper B §4) and the hard instance of Theorem 4.4.  Exports
# `bandit_unlearning.rl.mdp` and `bandit_unlearning.rl.envs`; [chapter B5b](05b_replayable_users.ipynb)
# adds the users and Gymnasium.*
#
# Paper B's RL instance is an **episodic tabular MDP** $(\mathcal S, \mathcal A, H, P_h, r_h)$ with
# $S = |\mathcal S|$ states, $A = |\mathcal A|$ actions, horizon $H$, transition kernels
# $P_h(\cdot \mid s, a)$ and mean rewards $r_h(s, a) \in [0, 1]$ that may depend on the step $h$.
# Every episode is one **user** $z_t$: it starts in $s_1 \sim \rho$, follows the learner's current
# policy for $H$ steps and returns its trajectory.  The learner is judged by its regret
# $$
# R(T) = \sum_{t=1}^T \big(V^\star_1(s_1^t) - V^{\pi_t}_1(s_1^t)\big).
# $$
#
# This chapter and the next build everything the learners of the later chapters stand on.  Here:
# 1. the MDP type (validated, immutable; time-homogeneous input is broadcast over $h$);
# 2. **exact** planning (backward induction for $V^\star$, $Q^\star$, $\pi^\star$) and exact policy
#    evaluation, vectorised with numpy, and the exact expected regret of a sequence of policies;
# 3. the environments of the experiments: RiverSwim, a 5x5 gridworld with walls, random Garnet MDPs
#    and the hard instance of Theorem 4.4.
#
# [Chapter B5b](05b_replayable_users.ipynb) adds **replayable users** (erratum E10) and
# interoperability with Gymnasium.
#
# Code counts from 0: steps $h = 0, \dots, H-1$ (the paper's $h = 1, \dots, H$), states $0..S-1$,
# actions $0..A-1$.  Ties in every argmax go to the lowest action index.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

rng = np.random.default_rng(20260605)

# %% [markdown]
# ## 1. The MDP type
#
# `TabularMDP` holds `transitions[h, s, a, s'] = P_h(s' | s, a)` (shape `[H, S, A, S]`),
# `rewards[h, s, a] = r_h(s, a)` (shape `[H, S, A]`), the initial distribution `initial[s]` and the
# horizon `H`.  Time-homogeneous input (`[S, A, S]` and `[S, A]`) is broadcast over the horizon as a
# read-only zero-stride view, so a homogeneous MDP costs the memory of one kernel however long the
# horizon (Taxi has $S = 500$: a dense `[H, S, A, S]` copy would be $12\,$MB per step).
#
# Validation happens once, on construction: every row of every kernel is a probability vector
# (non-negative, finite, sums to 1 within $10^{-9}$), rewards are finite and in $[0, 1]$, $H$ is an
# integer $\ge 1$, and the shapes agree.  A `TabularMDP` that exists is a legal one.

# %% tags=["export"]
"""Episodic tabular MDPs (Paper B, Section 4; Paper B §4): the type, exact planning, exact policy
evaluation and the exact expected regret of a sequence of policies.

Steps are ``h = 0 .. H-1`` (the paper's ``1 .. H``); ``V[H] = 0``.  Ties in every argmax go to the
lowest action index.  Everything is vectorised over states and actions (one matrix product per step).
"""

from dataclasses import dataclass, field

import numpy as np

from bandit_unlearning.checks import as_array, as_real_array, check_bool, check_count, check_instance, check_int

ROW_SUM_TOL = 1e-9


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float, copy=True)
    a.setflags(write=False)
    return a


def check_distribution_rows(p: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` unless every vector along the last axis of ``p`` is a distribution.

    Parameters
    ----------
    p : array_like, shape (..., n)
        Probability vectors along the last axis (``n >= 1``): finite, non-negative, each summing to 1
        within ``ROW_SUM_TOL``.
    name : str
        The argument's name, for the message.

    Raises
    ------
    TypeError
        If ``p`` is not an array of numbers or ``name`` not a string.
    ValueError
        If ``p`` has no last axis, is not finite, has a negative entry, or a row that does not sum
        to 1 (the message names the first such row).
    """
    check_instance(name, str, "name")
    p = as_array(p, name)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have shape (..., n) with n >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite")
    if np.any(p < 0):
        raise ValueError(f"{name} must be non-negative, found {float(p.min()):.3g}")
    sums = p.sum(axis=-1)
    bad = np.abs(sums - 1) > ROW_SUM_TOL
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} rows must sum to 1; the row at index {where} sums to {float(sums[where])!r}")

# %% [markdown]
# `TabularMDP` holds $(S, A, H, P_h, r_h)$ and the initial distribution, checked once and read-only,
# so every later function may trust its shapes and its distributions.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class TabularMDP:
    """An episodic tabular MDP ``(S, A, H, P_h, r_h)`` with initial distribution ``initial``.

    Parameters
    ----------
    transitions : array_like, shape (H, S, A, S) or (S, A, S)
        ``P_h(s' | s, a)``; a time-homogeneous ``[S, A, S]`` kernel is stored once, the attribute
        being a zero-stride ``[H, S, A, S]`` view.
    rewards : array_like, shape (H, S, A) or (S, A)
        Mean rewards in ``[0, 1]``.
    initial : array_like, shape (S,)
        The initial-state distribution.
    horizon : int
        ``H >= 1``.
    name : str
        A label for printing.

    Raises
    ------
    ValueError
        If a shape disagrees, a row is not a distribution or a reward leaves ``[0, 1]``.
    """

    transitions: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray
    horizon: int
    name: str = "mdp"
    homogeneous_transitions: bool = field(init=False)
    homogeneous_rewards: bool = field(init=False)

    def __post_init__(self):
        H = check_count(self.horizon, "horizon H", 1)
        check_instance(self.name, str, "name")
        P = as_real_array(self.transitions, "transitions")
        r = as_real_array(self.rewards, "rewards")
        rho = as_real_array(self.initial, "initial")
        if P.ndim not in (3, 4) or P.shape[-1] != P.shape[-3] or P.shape[-1] < 1 or P.shape[-2] < 1:
            raise ValueError(f"transitions must have shape [H, S, A, S] or [S, A, S], got {P.shape}")
        if P.ndim == 4 and P.shape[0] != H:
            raise ValueError(f"transitions has {P.shape[0]} steps but horizon H = {H}")
        S, A = P.shape[-1], P.shape[-2]
        if r.shape not in ((S, A), (H, S, A)):
            raise ValueError(f"rewards must have shape [{H}, {S}, {A}] or [{S}, {A}], got {r.shape}")
        if rho.shape != (S,):
            raise ValueError(f"initial must have shape ({S},), got {rho.shape}")
        check_distribution_rows(P, "transitions")
        if not np.all(np.isfinite(r)) or np.any((r < 0) | (r > 1)):
            raise ValueError("rewards must be finite and lie in [0, 1]")
        check_distribution_rows(rho, "initial")
        object.__setattr__(self, "horizon", H)
        object.__setattr__(self, "homogeneous_transitions", P.ndim == 3)
        object.__setattr__(self, "homogeneous_rewards", r.ndim == 2)
        object.__setattr__(self, "transitions", np.broadcast_to(_readonly(P), (H, S, A, S)))
        object.__setattr__(self, "rewards", np.broadcast_to(_readonly(r), (H, S, A)))
        object.__setattr__(self, "initial", _readonly(rho))

    def __setstate__(self, state):
        """Unpickling rebuilds the arrays as fresh, writeable (and, for a homogeneous kernel, full)
        arrays: make them read-only again, a homogeneous one a zero-stride view of one kernel."""
        self.__dict__.update(state)
        for name, homogeneous in (("transitions", self.homogeneous_transitions), ("rewards", self.homogeneous_rewards)):
            a = state[name]
            object.__setattr__(self, name, np.broadcast_to(_readonly(a[0] if homogeneous else a), a.shape))
        object.__setattr__(self, "initial", _readonly(state["initial"]))

    @property
    def S(self) -> int:
        return int(self.transitions.shape[1])

    @property
    def A(self) -> int:
        return int(self.transitions.shape[2])

    @property
    def H(self) -> int:
        return self.horizon

    @property
    def flat_transitions(self) -> np.ndarray:
        """``[H, S*A, S]`` view: row ``s*A + a`` of step ``h`` is ``P_h(. | s, a)``."""
        return self.transitions.reshape(self.H, self.S * self.A, self.S)

    def __repr__(self) -> str:
        return f"TabularMDP({self.name!r}, S={self.S}, A={self.A}, H={self.H})"


# %% [markdown]
# Exact planning and policy evaluation by backward induction, and the exact expected regret of a
# run of policies (derived and checked in section 2).

# %% tags=["export"]
@dataclass(frozen=True)
class Plan:
    """Result of exact planning or evaluation.

    Parameters
    ----------
    Q : numpy.ndarray, shape (H, S, A)
        Action values ``Q[h, s, a]``.
    V : numpy.ndarray, shape (H + 1, S)
        State values, ``V[H] = 0``.
    policy : numpy.ndarray of int, shape (H, S)
        The greedy (planning) or evaluated policy.
    """

    Q: np.ndarray
    V: np.ndarray
    policy: np.ndarray

    def __post_init__(self):
        Q, V, policy = as_array(self.Q, "Q"), as_array(self.V, "V"), as_array(self.policy, "policy")
        if Q.ndim != 3 or V.shape != (Q.shape[0] + 1, Q.shape[1]) or policy.shape != Q.shape[:2]:
            raise ValueError(f"a plan needs Q [H, S, A], V [H+1, S] and policy [H, S], got shapes {Q.shape}, "
                             f"{V.shape}, {policy.shape}")
        if policy.size and policy.dtype.kind not in "iu":
            raise TypeError(f"policy must hold integer actions, got dtype {policy.dtype}")


# %% [markdown]
# Backward induction, one matrix product per step.

# %% tags=["export"]
def value_iteration(mdp: TabularMDP) -> Plan:
    """Backward induction: ``Q*_h = r_h + P_h V*_{h+1}``, ``V*_h = max_a Q*_h``, ``V*_H = 0``.

    One ``[S*A, S] @ [S]`` product per step; the optimal policy is the greedy one (ties -> lowest
    action).

    Parameters
    ----------
    mdp : TabularMDP

    Returns
    -------
    Plan
        ``Q*``, ``V*`` and an optimal deterministic policy.

    Raises
    ------
    TypeError
        If ``mdp`` is not a ``TabularMDP``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    H, S, A = mdp.H, mdp.S, mdp.A
    P, r = mdp.flat_transitions, mdp.rewards.reshape(H, S * A)
    Q = np.empty((H, S, A))
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        Q[h] = (r[h] + P[h] @ V[h + 1]).reshape(S, A)
        V[h] = Q[h].max(axis=1)
    return Plan(Q, V, Q.argmax(axis=2))

# %% [markdown]
# **Exact evaluation.** A deterministic policy is an array $[H, S]$ of actions; `evaluate_policy`
# computes $Q^\pi$ and $V^\pi$ by backward induction, and `regret` is $V^*_1 - V^{\pi}_1$ under the
# initial distribution, exact, per episode for a sequence of policies $[T, H, S]$.

# %% tags=["export"]
def check_policy(mdp: TabularMDP, policy, batch: bool = False) -> np.ndarray:
    """Validate a deterministic policy ``[H, S]`` (or a batch ``[B, H, S]``) of action indices.

    Parameters
    ----------
    mdp : TabularMDP
        Gives ``H``, ``S`` and the action range ``[0, A)``.
    policy : array_like of int, shape (H, S) or (B, H, S)
        Actions (integral floats are accepted; booleans are not).
    batch : bool
        Whether ``policy`` is a batch ``[B, H, S]``.

    Returns
    -------
    numpy.ndarray of int64
        A new array of the same shape.

    Raises
    ------
    TypeError
        If ``mdp`` is not a ``TabularMDP``, or ``policy`` holds booleans or is not numeric.
    ValueError
        If the shape is wrong or an entry is not an action in ``[0, A)``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    batch = check_bool(batch, "batch")
    pi = as_array(policy, "policy")
    if pi.dtype == bool:
        raise TypeError("policy entries must be integer action indices, not booleans")
    shape = (mdp.H, mdp.S)
    if (pi.shape[-2:] != shape) or pi.ndim != (3 if batch else 2):
        want = f"[B, {mdp.H}, {mdp.S}]" if batch else f"[{mdp.H}, {mdp.S}]"
        raise ValueError(f"policy must have shape {want} (H, S), got {pi.shape}")
    if not np.issubdtype(pi.dtype, np.integer):
        if pi.dtype == bool or not np.all(np.isfinite(pi)) or np.any(np.mod(pi, 1) != 0):
            raise ValueError("policy entries must be integer action indices")
    pi = pi.astype(np.int64)
    if np.any((pi < 0) | (pi >= mdp.A)):
        raise ValueError(f"policy entries must be actions in [0, {mdp.A})")
    return pi


# %% [markdown]
# Evaluation of one policy, and the optimal value.

# %% tags=["export"]
def evaluate_policy(mdp: TabularMDP, policy) -> Plan:
    """Exact evaluation of a deterministic policy ``[H, S]``: ``Q^pi``, ``V^pi`` (``V^pi_H = 0``).

    Parameters
    ----------
    mdp : TabularMDP
    policy : array_like of int, shape (H, S)
        The actions, checked by ``check_policy``.

    Returns
    -------
    Plan
        ``Q^pi``, ``V^pi`` and ``policy`` (the evaluated policy, as int64).

    Raises
    ------
    TypeError, ValueError
        As ``check_policy``.
    """
    pi = check_policy(mdp, policy)
    H, S, A = mdp.H, mdp.S, mdp.A
    P, r = mdp.flat_transitions, mdp.rewards.reshape(H, S * A)
    Q = np.empty((H, S, A))
    V = np.zeros((H + 1, S))
    states = np.arange(S)
    for h in range(H - 1, -1, -1):
        Q[h] = (r[h] + P[h] @ V[h + 1]).reshape(S, A)
        V[h] = Q[h][states, pi[h]]
    return Plan(Q, V, pi)


def optimal_value(mdp: TabularMDP) -> float:
    """``E_{s ~ initial} V*_0(s)``: the optimal expected return of an episode.

    Parameters
    ----------
    mdp : TabularMDP

    Returns
    -------
    float
        In ``[0, H]``.

    Raises
    ------
    TypeError
        If ``mdp`` is not a ``TabularMDP``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    return float(mdp.initial @ value_iteration(mdp).V[0])


# %% [markdown]
# Many policies at once, and the regret of a sequence of policies.

# %% tags=["export"]
def policy_values(mdp: TabularMDP, policies, chunk: int = 2048) -> np.ndarray:
    """``E_{s ~ initial} V^{pi_b}_0(s)`` for a batch of policies ``[B, H, S]``, exactly.

    Repeated policies are evaluated once; the others in chunks of ``chunk`` with one
    ``[S*A, S] @ [S, chunk]`` product per step.

    Parameters
    ----------
    mdp : TabularMDP
    policies : array_like of int, shape (B, H, S)
        The policies (``B >= 0``), checked by ``check_policy``.
    chunk : int
        Policies per matrix product (``>= 1``; bounds the memory, not the result).

    Returns
    -------
    numpy.ndarray, shape (B,)
        The expected return of each policy from the initial distribution.

    Raises
    ------
    TypeError, ValueError
        As ``check_policy``, or ``chunk < 1``.
    """
    pis = check_policy(mdp, policies, batch=True)
    chunk = check_int(chunk, "chunk", 1)
    if pis.shape[0] == 0:
        return np.zeros(0)
    H, S, A = mdp.H, mdp.S, mdp.A
    unique, inverse = np.unique(pis.reshape(len(pis), -1), axis=0, return_inverse=True)
    unique = unique.reshape(-1, H, S)
    P, r = mdp.flat_transitions, mdp.rewards.reshape(H, S * A)
    values = np.empty(len(unique))
    for start in range(0, len(unique), chunk):
        pi = unique[start:start + chunk]                         # [b, H, S]
        flat = np.arange(S)[None, :] * A + pi                    # [b, H, S] rows s*A + pi(s)
        V = np.zeros((len(pi), S))
        for h in range(H - 1, -1, -1):
            Q = r[h][:, None] + P[h] @ V.T                       # [S*A, b]
            V = np.take_along_axis(Q.T, flat[:, h, :], axis=1)   # [b, S]
        values[start:start + chunk] = V @ mdp.initial
    return values[np.asarray(inverse).ravel()]


def regret(mdp: TabularMDP, policies) -> np.ndarray:
    """Per-episode expected regret ``E_{s_1}[V*_1(s_1) - V^{pi_t}_1(s_1)]`` of policies ``[T, H, S]``.

    ``regret(...).cumsum()`` is the expected regret curve ``R(t)`` (expectation over the initial
    state and the environment, given the policies).

    Parameters
    ----------
    mdp : TabularMDP
    policies : array_like of int, shape (T, H, S)
        The policy of each episode.

    Returns
    -------
    numpy.ndarray, shape (T,)
        ``optimal_value(mdp) - policy_values(mdp, policies)``, each ``>= 0`` up to rounding.

    Raises
    ------
    TypeError, ValueError
        As ``check_policy``.
    """
    check_policy(mdp, policies, batch=True)
    return optimal_value(mdp) - policy_values(mdp, policies)


# %%
from bandit_unlearning.rl.mdp import *  # noqa: F403  (the module generated from the cell above)

# A two-state example: action 1 moves to state 1, which pays 1 per step.
P2 = np.zeros((2, 2, 2)); P2[:, 0, 0] = 1; P2[:, 1, 1] = 1
r2 = np.array([[0.0, 0.0], [1.0, 1.0]])
toy = TabularMDP(P2, r2, initial=[1.0, 0.0], horizon=4, name="toy")
print(toy, "homogeneous:", toy.homogeneous_transitions, "| transitions view shape", toy.transitions.shape,
      "| strides", toy.transitions.strides[0])
for bad in [dict(transitions=P2 * 0.9), dict(transitions=-P2), dict(rewards=r2 + 0.5),
            dict(rewards=r2[:1]), dict(horizon=0), dict(initial=[0.5, 0.6]), dict(transitions=P2[:, :, :1])]:
    args = dict(transitions=P2, rewards=r2, initial=[1.0, 0.0], horizon=4) | bad
    try:
        TabularMDP(**args)
    except ValueError as err:
        print("refused:", err)

# %% [markdown]
# ## 2. Exact planning and policy evaluation
#
# **Statement.** For a deterministic policy $\pi = (\pi_0, \dots, \pi_{H-1})$, $\pi_h: \mathcal S \to \mathcal A$,
# $$
# Q^\pi_h(s, a) = r_h(s, a) + \sum_{s'} P_h(s' \mid s, a)\, V^\pi_{h+1}(s'), \qquad
# V^\pi_h(s) = Q^\pi_h(s, \pi_h(s)), \qquad V^\pi_H \equiv 0,
# $$
# and the optimal values satisfy the same recursion with $V^\star_h(s) = \max_a Q^\star_h(s, a)$;
# the greedy policy $\pi^\star_h(s) = \arg\max_a Q^\star_h(s, a)$ attains them.
#
# **Derivation.** $V^\pi_h(s)$ is the expected reward collected from step $h$ on; conditioning on the
# first transition gives the recursion (tower rule).  For optimality, backward induction on $h$: if
# $V^\star_{h+1} \ge V^\pi_{h+1}$ pointwise for every policy, then
# $Q^\star_h \ge r_h + P_h V^\pi_{h+1} = Q^\pi_h$, hence $V^\star_h \ge V^\pi_h$; and the greedy policy
# attains every maximum.  Nothing is approximate: the horizon is finite, so $H$ matrix products
# compute the values exactly (up to floating point).
#
# **Implementation.** Per step one product of the flat `[S*A, S]` kernel with the next values —
# no Python loop over states or actions.  The exact expected regret of a whole run
# $(\pi_1, \dots, \pi_T)$ is $\sum_t \mathbb E_{s_1 \sim \rho}[V^\star_1(s_1) - V^{\pi_t}_1(s_1)]$; `regret`
# evaluates a batch of policies with one `[S*A, S] @ [S, B]` product per step, and evaluates
# repeated policies once (a learner that has converged plays the same policy over and over).
#
# **Check.** Against an obviously-correct triple loop over $(h, s, a)$, on random MDPs.  The same
# comparison must reject a plausible bug: a "forward" evaluation that pairs step $h$ with $P_{h+1}$
# (an off-by-one in time), which only shows on time-inhomogeneous MDPs.

# %%
def plain_value_iteration(P, r, H):
    """Test oracle: loops over h, s, a, s'."""
    S, A = P.shape[1], P.shape[2]
    V = np.zeros((H + 1, S)); Q = np.zeros((H, S, A))
    for h in reversed(range(H)):
        for s in range(S):
            for a in range(A):
                Q[h, s, a] = r[h, s, a] + sum(P[h, s, a, t] * V[h + 1, t] for t in range(S))
            V[h, s] = max(Q[h, s])
    return Q, V


def random_mdp(S, A, H, rng):
    P = rng.dirichlet(np.full(S, 0.3), size=(H, S, A))
    return TabularMDP(P, rng.random((H, S, A)), rng.dirichlet(np.ones(S)), H)


worst = 0.0
for trial in range(20):
    m = random_mdp(*rng.integers(1, 6, size=2), int(rng.integers(1, 7)), rng)
    plan = value_iteration(m)
    Q, V = plain_value_iteration(m.transitions, m.rewards, m.H)
    worst = max(worst, np.abs(plan.Q - Q).max(), np.abs(plan.V - V).max())
    ev = evaluate_policy(m, plan.policy)
    assert np.allclose(ev.V, plan.V, atol=1e-12)                       # V^{pi*} = V*
    pis = rng.integers(0, m.A, size=(50, m.H, m.S))
    vals = policy_values(m, pis)
    assert np.allclose(vals, [m.initial @ evaluate_policy(m, p).V[0] for p in pis], atol=1e-12)
    assert np.all(vals <= m.initial @ plan.V[0] + 1e-12)               # V* dominates every policy
print(f"vectorised planning vs triple loop on 20 random MDPs: max |difference| = {worst:.1e}")
assert worst < 1e-12


def off_by_one_values(mdp):
    """Broken: uses P_{h+1} and r_{h+1} at step h (wraps around at the end)."""
    P, r = np.roll(mdp.transitions, -1, axis=0), np.roll(mdp.rewards, -1, axis=0)
    return plain_value_iteration(P, r, mdp.H)[1]


m = random_mdp(4, 3, 5, rng)
gap = np.abs(off_by_one_values(m) - plain_value_iteration(m.transitions, m.rewards, m.H)[1]).max()
print(f"off-by-one in time: max |difference| = {gap:.3f}  -> rejected")
assert gap > 1e-3

# %% [markdown]
# ## 3. Environments
#
# * **RiverSwim** (Strehl & Littman 2008, in the 6-state form of Osband et al. 2013): a chain
#   $0, \dots, 5$; action 0 ("left", with the current) moves left deterministically, action 1
#   ("right", against it) succeeds with probability 0.35 in the middle (0.6 at the left bank), stays
#   with 0.6 and is pushed back with 0.05 (at the right bank: stay 0.6, back 0.4).  Rewards:
#   $5/1000$ for "left" at state 0, $1$ for "right" at state 5; episodes start at state 0.  The
#   trap for an exploring learner: the small sure reward next to the start.
# * **Gridworld** 5x5 with two walls (23 states), four actions (up, right, down, left); the intended
#   move happens with probability $1 - p_{slip}$, each perpendicular move with $p_{slip}/2$; bumping
#   into a wall or the border stays.  The goal (bottom-right) is absorbing and pays 1 per step spent
#   there; start top-left.  With $H = 10$ the shortest path (8 moves) leaves time for 2 rewards.
# * **Garnet** (Archibald et al. 1995) random MDPs $G(S, A, b)$: each $(s, a)$ has $b$ random
#   successors with probabilities from a uniform random partition of $[0, 1]$, rewards uniform on
#   $[0, 1]$; time-homogeneous by default, initial state 0.
# * **The hard instance of Theorem 4.4** ($n$ independent bandit problems).  States: $n$ initial
#   states $i$, and for each its own two absorbing states, "good" $g_i$ (reward 1 per step) and
#   "bad" $b_i$ (reward 0); so $S = 3n$.  Episodes start at a uniformly random initial state.  At
#   $h = 0$ action $a$ in state $i$ leads to $g_i$ with probability $\tfrac12 + \Delta\,\mathbb 1\{a = a^\star_i\}$,
#   otherwise to $b_i$; from then on nothing the agent does matters.  An episode is therefore one
#   pull of an $A$-armed Bernoulli bandit with rewards scaled by $H - 1$, chosen uniformly among $n$
#   independent bandits: $V^\star = (H-1)(\tfrac12 + \Delta)$ and every wrong first action costs
#   exactly $(H - 1)\Delta$.  Learning $n$ unrelated bandits from $T/n$ pulls each is what gives the
#   $\Omega(H\sqrt{SAT})$ part of the bound; the $SAH/\rho$ part is the price of TV-stability on the
#   same instance (Paper B, Theorem 4.4; this construction is our reading of the paper's one-line
#   description "S independent bandit problems, each initial state with its own absorbing states").

# %% tags=["export:bandit_unlearning.rl.envs"]
"""Environments for Paper B's experiments (Paper B §4, Theorem 4.4): RiverSwim, a gridworld with
walls, Garnet random MDPs and the lower-bound hard instance (independent bandit problems).

Every builder returns a validated ``TabularMDP`` with rewards in ``[0, 1]``.
"""

import math

import numpy as np

from bandit_unlearning.checks import (as_generator, check_bool, check_count, check_int, check_int_array, check_real,
                                     check_size)
from bandit_unlearning.rl.mdp import TabularMDP


def riverswim(horizon: int = 20, n_states: int = 6, initial_state: int = 0) -> TabularMDP:
    """RiverSwim (Strehl & Littman 2008; 6-state form of Osband et al. 2013).

    Action 0 = left (with the current, deterministic), 1 = right (against it: forward 0.35, stay
    0.6, back 0.05 in the middle; forward 0.6 / stay 0.4 at the left bank; stay 0.6 / back 0.4 at the
    right bank).  Rewards 5/1000 for left at state 0 and 1 for right at the last state.

    Parameters
    ----------
    horizon : int
        ``H >= 1``.
    n_states : int
        States along the river (``>= 2``).
    initial_state : int
        Where every episode starts, in ``[0, n_states)``.

    Returns
    -------
    TabularMDP
        Time-homogeneous, with ``A = 2``.
    """
    horizon, n_states = check_count(horizon, "horizon", 1), check_count(n_states, "n_states", 2)
    initial_state = check_int(initial_state, "initial_state", 0, n_states - 1)
    S, last = n_states, n_states - 1
    P = np.zeros((S, 2, S))
    for s in range(S):
        P[s, 0, max(s - 1, 0)] = 1.0
        if s == 0:
            P[s, 1, 0], P[s, 1, 1] = 0.4, 0.6
        elif s == last:
            P[s, 1, s], P[s, 1, s - 1] = 0.6, 0.4
        else:
            P[s, 1, s + 1], P[s, 1, s], P[s, 1, s - 1] = 0.35, 0.6, 0.05
    r = np.zeros((S, 2))
    r[0, 0], r[last, 1] = 5 / 1000, 1.0
    return TabularMDP(P, r, np.eye(S)[initial_state], horizon, name=f"RiverSwim-{S}")


GRIDWORLD_5X5 = (
    "S....",
    ".#...",
    "...#.",
    ".....",
    "....G",
)
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))   # up, right, down, left


# %% [markdown]
# The gridworld: a layout of strings, its states in row-major order, and the MDP on them.

# %% tags=["export:bandit_unlearning.rl.envs"]
def gridworld_cells(layout=GRIDWORLD_5X5) -> list:
    """``(row, col)`` of every state of ``layout`` (non-wall cells, row-major order).

    Parameters
    ----------
    layout : sequence of str
        Equal-length rows of ``.`` (free), ``#`` (wall), ``S`` (start) and ``G`` (goal).

    Returns
    -------
    list of tuple of int
        State ``i`` of ``gridworld(layout=layout)`` is cell ``cells[i]``.
    """
    if isinstance(layout, str) or not hasattr(layout, "__iter__") or not all(isinstance(line, str) for line in layout):
        raise TypeError(f"layout must be a sequence of strings (one per row), got {layout!r}")
    rows = [str(line) for line in layout]
    if not rows or len({len(line) for line in rows}) != 1:
        raise ValueError("layout must be a non-empty list of equal-length strings")
    if set("".join(rows)) - set("SG.#"):
        raise ValueError("layout may only contain 'S' (start), 'G' (goal), '.' (free) and '#' (wall)")
    if "".join(rows).count("S") != 1 or "".join(rows).count("G") != 1:
        raise ValueError("layout needs exactly one 'S' and one 'G'")
    return [(i, j) for i, line in enumerate(rows) for j, c in enumerate(line) if c != "#"]


def gridworld(horizon: int = 10, slip: float = 0.1, layout=GRIDWORLD_5X5) -> TabularMDP:
    """A gridworld with walls: actions up/right/down/left; the intended move with probability
    ``1 - slip``, each perpendicular one with ``slip/2``; walls and borders block (stay).  The goal
    ``G`` is absorbing and pays 1 per step spent there; episodes start at ``S``.  The default layout
    is 5x5 with two walls (23 states).

    Parameters
    ----------
    horizon : int
        ``H >= 1``.
    slip : float
        Probability in ``[0, 1]`` of slipping to a perpendicular move.
    layout : sequence of str
        As for ``gridworld_cells``: one ``S``, one ``G``.

    Returns
    -------
    TabularMDP
        Time-homogeneous, ``A = 4``, states in the order of ``gridworld_cells(layout)``.
    """
    horizon = check_count(horizon, "horizon", 1)
    slip = check_real(slip, "slip", 0, 1)
    cells = gridworld_cells(layout)
    index = {c: i for i, c in enumerate(cells)}
    rows = [str(line) for line in layout]
    S = len(cells)
    P = np.zeros((S, 4, S))
    r = np.zeros((S, 4))
    for (i, j), s in index.items():
        if rows[i][j] == "G":
            P[s, :, s] = 1.0
            r[s, :] = 1.0
            continue
        for a in range(4):
            for move, p in ((a, 1 - slip), ((a + 1) % 4, slip / 2), ((a + 3) % 4, slip / 2)):
                target = (i + MOVES[move][0], j + MOVES[move][1])
                P[s, a, index.get(target, s)] += p
    start = next(index[(i, j)] for (i, j) in cells if rows[i][j] == "S")
    return TabularMDP(P, r, np.eye(S)[start], horizon, name=f"Gridworld-{len(rows)}x{len(rows[0])}")


# %% [markdown]
# Random MDPs (Garnet) and the hard instance of Theorem 4.4, $n$ independent bandit problems as one
# MDP (section 3).

# %% tags=["export:bandit_unlearning.rl.envs"]
def garnet(n_states: int, n_actions: int, branching: int, horizon: int, rng: np.random.Generator,
           homogeneous: bool = True) -> TabularMDP:
    """A Garnet random MDP G(S, A, b): each (s, a) (and step, if not homogeneous) has ``branching``
    distinct random successors with probabilities from a uniform random partition of [0, 1];
    rewards uniform on [0, 1]; initial state 0.  Every argument is checked before anything is drawn.

    Parameters
    ----------
    n_states, n_actions : int
        ``S >= 1`` and ``A >= 1``.
    branching : int
        Successors per ``(s, a)``, in ``[1, S]``.
    horizon : int
        ``H >= 1``.
    rng : numpy.random.Generator, int or None
        Source of the successors, probabilities and rewards (None: fresh OS entropy).
    homogeneous : bool
        One kernel and reward table for all steps, or one per step.

    Returns
    -------
    TabularMDP
        Named ``Garnet(S,A,b)``.
    """
    n_states, n_actions = check_count(n_states, "n_states", 1), check_count(n_actions, "n_actions", 1)
    branching = check_int(branching, "branching", 1, n_states)
    horizon = check_count(horizon, "horizon", 1)
    homogeneous = check_bool(homogeneous, "homogeneous")
    rng = as_generator(rng)
    lead = () if homogeneous else (horizon,)
    shape = lead + (n_states, n_actions)
    check_size(math.prod(shape) * n_states, None, f"garnet({n_states}, {n_actions}, ...): the transition table")
    succ = np.argsort(rng.random(shape + (n_states,)), axis=-1)[..., :branching]
    cuts = np.sort(rng.random(shape + (branching - 1,)), axis=-1)
    probs = np.diff(np.concatenate([np.zeros(shape + (1,)), cuts, np.ones(shape + (1,))], axis=-1), axis=-1)
    P = np.zeros(shape + (n_states,))
    np.put_along_axis(P, succ, probs, axis=-1)
    r = rng.random(shape)
    name = f"Garnet({n_states},{n_actions},{branching})"
    return TabularMDP(P, r, np.eye(n_states)[0], horizon, name=name)


# %% [markdown]
# The hard instance of the lower bound (chapter B9a).

# %% tags=["export:bandit_unlearning.rl.envs"]
def independent_bandits(n_bandits: int, n_actions: int, horizon: int, gap: float,
                        best_actions=None, rng: np.random.Generator | None = None) -> TabularMDP:
    """The hard instance of Theorem 4.4: ``n_bandits`` independent bandit problems.

    States ``0..n-1`` are the initial states (uniform initial distribution), ``n + i`` the "good"
    and ``2n + i`` the "bad" absorbing state of bandit ``i`` (so ``S = 3n``).  From initial state
    ``i`` action ``a`` leads to the good state with probability ``1/2 + gap * [a == best_actions[i]]``;
    the good state pays 1 per step.  ``V* = (H-1)(1/2 + gap)``; a wrong first action costs
    ``(H-1) gap``.

    Parameters
    ----------
    n_bandits, n_actions : int
        ``n >= 1`` bandits of ``A >= 1`` actions.
    horizon : int
        ``H >= 2`` (the first step chooses, the others collect).
    gap : float
        The advantage of the best action, in ``[0, 1/2]``.
    best_actions : array_like of int, shape (n,), or None
        The best action of each bandit; None draws them uniformly from ``rng``.
    rng : numpy.random.Generator, int or None
        Used only when ``best_actions`` is None (None: fresh OS entropy).

    Returns
    -------
    TabularMDP
        ``S = 3n`` states; its ``best_actions`` are recoverable from the transitions.
    """
    n_bandits, n_actions = check_count(n_bandits, "n_bandits", 1), check_count(n_actions, "n_actions", 1)
    horizon = check_count(horizon, "horizon", 1)
    if horizon < 2:
        raise ValueError(f"horizon must be >= 2 (one step to choose, one to be paid), got {horizon}")
    gap = check_real(gap, "gap")
    if not 0 <= gap <= 0.5:
        raise ValueError(f"gap must lie in [0, 1/2], got {gap}")
    n = n_bandits
    if best_actions is None:
        best_actions = as_generator(rng).integers(0, n_actions, size=n)
    else:
        if rng is not None:
            as_generator(rng)                       # refuses a wrong type even when it is not needed
        best_actions = check_int_array(best_actions, "best_actions")
    if best_actions.shape != (n,) or np.any((best_actions < 0) | (best_actions >= n_actions)):
        raise ValueError(f"best_actions must be {n} actions in [0, {n_actions})")
    S = 3 * n
    P = np.zeros((S, n_actions, S))
    i = np.arange(n)
    p_good = np.full((n, n_actions), 0.5)
    p_good[i, best_actions] += gap
    P[i, :, n + i] = p_good
    P[i, :, 2 * n + i] = 1 - p_good
    P[n + i, :, n + i] = 1.0
    P[2 * n + i, :, 2 * n + i] = 1.0
    r = np.zeros((S, n_actions))
    r[n + i, :] = 1.0
    initial = np.zeros(S)
    initial[:n] = 1 / n
    return TabularMDP(P, r, initial, horizon, name=f"IndependentBandits({n},{n_actions})")


# %%
from bandit_unlearning.rl.envs import *  # noqa: F403

river, grid = riverswim(horizon=20), gridworld(horizon=10, slip=0.1)
gar = garnet(10, 3, 3, horizon=8, rng=rng)
hard = independent_bandits(n_bandits=4, n_actions=3, horizon=6, gap=0.1, rng=rng)
for m in (river, grid, gar, hard):
    print(f"{m.name:28s} S={m.S:3d} A={m.A} H={m.H:3d}  V* = {optimal_value(m):.4f}")

# The hard instance: V* and the cost of each wrong first action are exact.
plan = value_iteration(hard)
assert np.isclose(optimal_value(hard), (hard.H - 1) * 0.6)
wrong = plan.policy.copy(); wrong[0, 0] = (wrong[0, 0] + 1) % hard.A          # err in bandit 0 only
assert np.isclose(regret(hard, wrong[None])[0], (hard.H - 1) * 0.1 / 4)
# RiverSwim at H = 20: the optimal policy swims right from every state at the start.
print("RiverSwim pi*_0:", value_iteration(river).policy[0])
assert np.all(value_iteration(river).policy[0] == 1)

# %% [markdown]
# The gridworld's optimal policy and values at the first step (the arrows avoid the walls; with
# slips, the value of the start is below the 2 rewards a perfect run collects):

# %%
cells = gridworld_cells()
plan = value_iteration(grid)
fig, ax = plt.subplots(figsize=(4.2, 4))
img = np.full((5, 5), np.nan)
for s, (i, j) in enumerate(cells):
    img[i, j] = plan.V[0, s]
im = ax.imshow(img, cmap="viridis")
for s, (i, j) in enumerate(cells):
    di, dj = MOVES[plan.policy[0, s]]
    if (i, j) != (4, 4):
        ax.arrow(j - 0.2 * dj, i - 0.2 * di, 0.3 * dj, 0.3 * di, head_width=0.15, color="w")
for i, j in [(1, 1), (2, 3)]:
    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, color="0.3"))
ax.set(xlabel="column", ylabel="row")
ax.set_title(r"Gridworld: $V^\star_0$, $\pi^\star_0$ ($H=10$, slip 0.1)", fontsize=10)
fig.colorbar(im, ax=ax, label=r"$V^\star_0(s)$")
plt.show()

# %% [markdown]
# ## Summary
# - `TabularMDP` (validated, read-only, homogeneous input broadcast over $H$), `value_iteration`,
#   `evaluate_policy`, `policy_values`, `optimal_value`, `regret`, `check_policy` live in
#   `bandit_unlearning.rl.mdp`; planning matched a triple-loop oracle to $10^{-12}$ and the check
#   rejected an off-by-one in time.
# - `riverswim`, `gridworld` (5x5, two walls, $S = 23$), `garnet`, `independent_bandits` (the hard
#   instance of Theorem 4.4, $S = 3n$, $V^\star = (H-1)(\tfrac12 + \Delta)$) live in
#   `bandit_unlearning.rl.envs`.
# - Next: [chapter B5b](05b_replayable_users.ipynb) — replayable users (E10) and Gymnasium.
