# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.mdp
# ---

# %% [markdown]
# # Chapter B5 — Episodic tabular MDPs, exact planning, replayable users
#
# *Paper B, Section 4 (the RL instance, Paper B §4) and the hard instance of Theorem 4.4.  Exports
# `bandit_unlearning.rl.mdp`, `bandit_unlearning.rl.envs`, `bandit_unlearning.rl.users` and
# `bandit_unlearning.rl.gym`.*
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
# This chapter builds everything the learners of the next chapters stand on:
# 1. the MDP type (validated, immutable; time-homogeneous input is broadcast over $h$);
# 2. **exact** planning (backward induction for $V^\star$, $Q^\star$, $\pi^\star$) and exact policy
#    evaluation, vectorised with numpy, and the exact expected regret of a sequence of policies;
# 3. the environments of the experiments: RiverSwim, a 5x5 gridworld with walls, random Garnet MDPs
#    and the hard instance of Theorem 4.4;
# 4. **replayable users** (erratum E10): a user is a key of a counter-based random generator, so
#    that re-running a deleted user's successors under new policies (Algorithm 3's retraining) meets
#    the *same* environment randomness;
# 5. interoperability with Gymnasium (optional dependency): our MDPs as `gymnasium.Env`, and
#    Gymnasium's toy-text environments (FrozenLake, CliffWalking, Taxi) as our MDPs.
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

from bandit_unlearning.checks import as_array, check_bool, check_instance, check_int

ROW_SUM_TOL = 1e-9


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float, copy=True)
    a.setflags(write=False)
    return a


def check_distribution_rows(p: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` unless every vector along the last axis of ``p`` is a distribution
    (``TypeError`` if ``p`` is not an array of numbers)."""
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


@dataclass(frozen=True, eq=False)
class TabularMDP:
    """An episodic tabular MDP ``(S, A, H, P_h, r_h)`` with initial distribution ``initial``.

    ``transitions``: ``[H, S, A, S]`` or time-homogeneous ``[S, A, S]`` (broadcast over ``h``);
    ``rewards``: ``[H, S, A]`` or ``[S, A]``, mean rewards in ``[0, 1]``; ``initial``: ``[S]``;
    ``horizon``: ``H >= 1``.  Arrays are stored read-only; a homogeneous input stays one kernel
    (the ``[H, ...]`` attribute is a zero-stride view).  Invalid input raises ``ValueError``.
    """

    transitions: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray
    horizon: int
    name: str = "mdp"
    homogeneous_transitions: bool = field(init=False)
    homogeneous_rewards: bool = field(init=False)

    def __post_init__(self):
        H = check_int(self.horizon, "horizon H", 1)
        check_instance(self.name, str, "name")
        P = as_array(self.transitions, "transitions").astype(float)
        r = as_array(self.rewards, "rewards").astype(float)
        rho = as_array(self.initial, "initial").astype(float)
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
    """Result of exact planning: ``Q[h, s, a]``, ``V[h, s]`` (``V[H] = 0``) and ``policy[h, s]``."""

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


def value_iteration(mdp: TabularMDP) -> Plan:
    """Backward induction: ``Q*_h = r_h + P_h V*_{h+1}``, ``V*_h = max_a Q*_h``, ``V*_H = 0``.

    One ``[S*A, S] @ [S]`` product per step; the optimal policy is the greedy one (ties -> lowest
    action).
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


def check_policy(mdp: TabularMDP, policy, batch: bool = False) -> np.ndarray:
    """Validate a deterministic policy ``[H, S]`` (or a batch ``[B, H, S]``) of action indices."""
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


def evaluate_policy(mdp: TabularMDP, policy) -> Plan:
    """Exact evaluation of a deterministic policy ``[H, S]``: ``Q^pi``, ``V^pi`` (``V^pi_H = 0``).

    ``Plan.policy`` is the evaluated policy.
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
    """``E_{s ~ initial} V*_0(s)``."""
    check_instance(mdp, TabularMDP, "mdp")
    return float(mdp.initial @ value_iteration(mdp).V[0])


def policy_values(mdp: TabularMDP, policies, chunk: int = 2048) -> np.ndarray:
    """``E_{s ~ initial} V^{pi_b}_0(s)`` for a batch of policies ``[B, H, S]``, exactly.

    Repeated policies are evaluated once; the others in chunks of ``chunk`` with one
    ``[S*A, S] @ [S, chunk]`` product per step.
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

import numpy as np

from bandit_unlearning.checks import as_generator, check_bool, check_int, check_int_array, check_real
from bandit_unlearning.rl.mdp import TabularMDP


def riverswim(horizon: int = 20, n_states: int = 6, initial_state: int = 0) -> TabularMDP:
    """RiverSwim (Strehl & Littman 2008; 6-state form of Osband et al. 2013).

    Action 0 = left (with the current, deterministic), 1 = right (against it: forward 0.35, stay
    0.6, back 0.05 in the middle; forward 0.6 / stay 0.4 at the left bank; stay 0.6 / back 0.4 at the
    right bank).  Rewards 5/1000 for left at state 0 and 1 for right at the last state.
    """
    horizon, n_states = check_int(horizon, "horizon", 1), check_int(n_states, "n_states", 2)
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


def gridworld_cells(layout=GRIDWORLD_5X5) -> list:
    """``(row, col)`` of every state of ``layout`` (non-wall cells, row-major order)."""
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
    """
    horizon = check_int(horizon, "horizon", 1)
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
    rewards uniform on [0, 1]; initial state 0.  ``rng``: a Generator, None (fresh OS entropy) or an
    int seed.  Every argument is checked before anything is drawn."""
    n_states, n_actions = check_int(n_states, "n_states", 1), check_int(n_actions, "n_actions", 1)
    branching = check_int(branching, "branching", 1, n_states)
    horizon = check_int(horizon, "horizon", 1)
    homogeneous = check_bool(homogeneous, "homogeneous")
    rng = as_generator(rng)
    lead = () if homogeneous else (horizon,)
    shape = lead + (n_states, n_actions)
    succ = np.argsort(rng.random(shape + (n_states,)), axis=-1)[..., :branching]
    cuts = np.sort(rng.random(shape + (branching - 1,)), axis=-1)
    probs = np.diff(np.concatenate([np.zeros(shape + (1,)), cuts, np.ones(shape + (1,))], axis=-1), axis=-1)
    P = np.zeros(shape + (n_states,))
    np.put_along_axis(P, succ, probs, axis=-1)
    r = rng.random(shape)
    name = f"Garnet({n_states},{n_actions},{branching})"
    return TabularMDP(P, r, np.eye(n_states)[0], horizon, name=name)


def independent_bandits(n_bandits: int, n_actions: int, horizon: int, gap: float,
                        best_actions=None, rng: np.random.Generator | None = None) -> TabularMDP:
    """The hard instance of Theorem 4.4: ``n_bandits`` independent bandit problems.

    States ``0..n-1`` are the initial states (uniform initial distribution), ``n + i`` the "good"
    and ``2n + i`` the "bad" absorbing state of bandit ``i`` (so ``S = 3n``).  From initial state
    ``i`` action ``a`` leads to the good state with probability ``1/2 + gap * [a == best_actions[i]]``;
    the good state pays 1 per step.  ``V* = (H-1)(1/2 + gap)``; a wrong first action costs
    ``(H-1) gap``.  ``best_actions`` defaults to uniform random draws from ``rng`` (a Generator, None --
    fresh OS entropy -- or an int seed).
    """
    n_bandits, n_actions = check_int(n_bandits, "n_bandits", 1), check_int(n_actions, "n_actions", 1)
    horizon = check_int(horizon, "horizon", 1)
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
# ## 4. Replayable users (erratum E10)
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

# %% tags=["export:bandit_unlearning.rl.users"]
"""Replayable users (erratum E10) and rollouts of deterministic policies in tabular MDPs.

A user is a non-negative integer key.  Its environment randomness is the counter-based generator
SplitMix64 (Steele, Lea & Flood 2014): the uniform for ``(stream, h, s, a)`` is output number
``i = (((user*3 + stream)*H + h)*S + s)*A + a`` of SplitMix64 seeded with ``seed`` (the population),
top 53 bits.  Stream 0 = transitions (inverse CDF), 1 = Bernoulli rewards, 2 = initial state.
The same user answers the same ``(h, s, a)`` the same way under every policy.
"""

import weakref
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import as_array, check_choice, check_instance, check_int
from bandit_unlearning.rl.mdp import TabularMDP, check_policy

TRANSITION, REWARD, INITIAL = 0, 1, 2
N_STREAMS = 3
REWARD_NOISE = ("bernoulli", "none")
_GAMMA = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1
_UNIT = 2.0 ** -53


def splitmix64(seed: int, index) -> np.ndarray:
    """Outputs number ``index`` (0-based, integers in ``[0, 2**64)``, array) of SplitMix64 seeded with
    ``seed`` (an integer in ``[0, 2**64)``), as uint64."""
    seed = check_seed(seed)
    index = as_array(index, "index")
    if index.dtype.kind not in "iu":
        raise TypeError(f"index must hold integers, got dtype {index.dtype}")
    if index.dtype.kind == "i" and np.any(index < 0):
        raise ValueError("index must be >= 0 (outputs are numbered from 0)")
    z = index.astype(np.uint64)
    z = np.uint64(seed) + (z + np.uint64(1)) * np.uint64(_GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_C2)
    return z ^ (z >> np.uint64(31))


def _splitmix64_uniform(seed: int, index: int) -> float:
    """Scalar twin of ``user_uniforms`` on Python ints (bit-identical)."""
    z = (seed + (index + 1) * _GAMMA) & _MASK
    z = ((z ^ (z >> 30)) * _C1) & _MASK
    z = ((z ^ (z >> 27)) * _C2) & _MASK
    return ((z ^ (z >> 31)) >> 11) * _UNIT


def check_seed(seed) -> int:
    """A population seed: an integer in ``[0, 2**64)`` (``bandit_unlearning.checks.check_int``)."""
    return check_int(seed, "seed", 0, 2**64 - 1)


def max_users(mdp: TabularMDP) -> int:
    """Number of distinct user keys (``0 .. max_users-1``) before counters would wrap."""
    check_instance(mdp, TabularMDP, "mdp")
    return 2 ** 64 // (N_STREAMS * mdp.H * mdp.S * mdp.A)


def check_users(mdp: TabularMDP, users) -> np.ndarray:
    """Validate user keys: integers in ``[0, max_users(mdp))``."""
    check_instance(mdp, TabularMDP, "mdp")
    u = as_array(users, "users")
    if u.size and not np.issubdtype(u.dtype, np.integer):
        raise TypeError(f"users must be integer keys, got dtype {u.dtype}")
    u = u.astype(np.int64) if u.size == 0 else u
    if np.any(u < 0) or np.any(u >= max_users(mdp)):
        raise ValueError(f"user keys must lie in [0, {max_users(mdp)})")
    return u.astype(np.uint64)


def user_uniforms(mdp: TabularMDP, users, stream, h, s, a, seed: int = 0) -> np.ndarray:
    """The uniforms in ``[0, 1)`` that ``users`` use at ``(stream, h, s, a)`` (all broadcast).

    ``stream`` must lie in ``[0, N_STREAMS)``, ``h`` in ``[0, H)``, ``s`` in ``[0, S)`` and ``a`` in
    ``[0, A)``: the counter layout gives every user ``N_STREAMS * H * S * A`` outputs, and a cell outside
    these ranges would read another user's stream."""
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
    try:
        np.broadcast_shapes(u.shape, *(v.shape for v in cells))
    except ValueError:
        raise ValueError("users, stream, h, s and a must broadcast together") from None
    idx = ((u * np.uint64(N_STREAMS) + np.asarray(stream, dtype=np.uint64)) * np.uint64(H)
           + np.asarray(h, dtype=np.uint64)) * np.uint64(S)
    idx = (idx + np.asarray(s, dtype=np.uint64)) * np.uint64(A) + np.asarray(a, dtype=np.uint64)
    return (splitmix64(seed, idx) >> np.uint64(11)).astype(float) * _UNIT


# %% [markdown]
# Rollouts: a user's episode under a deterministic policy, drawn from the user's uniforms above by
# inverse-CDF sampling — `rollout` for one user, `rollout_batch` vectorised over users for Monte Carlo.

# %% tags=["export:bandit_unlearning.rl.users"]
@dataclass(frozen=True)
class Trajectory:
    """States ``[..., H+1]`` (``s_0 .. s_H``), actions ``[..., H]``, rewards ``[..., H]``."""

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
    """``[H, S, A, S]`` cumulative sums of the kernels with the final plateau set to exactly 1, so
    that the inverse-CDF draw ``#{s' : cdf[s'] <= u}`` never picks a zero-probability state."""
    check_instance(mdp, TabularMDP, "mdp")
    P = mdp.transitions
    c = np.cumsum(P[:1] if mdp.homogeneous_transitions else P, axis=-1)
    c = np.where(c >= c[..., -1:], 1.0, c)
    return np.broadcast_to(c, P.shape)


_SPARSE = weakref.WeakKeyDictionary()


def _sparse_tables(mdp: TabularMDP):
    """Per (step, s*A+a): the support of P_h(.|s,a) and its CDF (same rule as ``cdf_tables``), as
    Python lists for a fast scalar rollout; and the rewards as nested lists.  Cached per MDP."""
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


def _check_noise(reward_noise: str) -> str:
    return check_choice(reward_noise, "reward_noise", REWARD_NOISE)


def _initial_state(mdp: TabularMDP, user: int, seed: int) -> int:
    """Unchecked: the initial state of ``user`` (stream 2, cell (0, 0, 0))."""
    init_cdf = _sparse_tables(mdp)[3]
    return bisect_right(init_cdf, _splitmix64_uniform(seed, (user * N_STREAMS + INITIAL) * mdp.H * mdp.S * mdp.A))


def _user_step(mdp: TabularMDP, user: int, seed: int, h: int, s: int, a: int, bernoulli: bool):
    """Unchecked: ``(s', reward)`` of ``user`` at ``(h, s, a)``; the same draws as ``rollout``."""
    support, cdf, rewards, _ = _sparse_tables(mdp)
    H, S, A = mdp.H, mdp.S, mdp.A
    sa, row = s * A + a, (0 if mdp.homogeneous_transitions else h)
    mean = rewards[0 if mdp.homogeneous_rewards else h][sa]
    j = (((user * N_STREAMS + REWARD) * H + h) * S + s) * A + a
    rew = (1.0 if _splitmix64_uniform(seed, j) < mean else 0.0) if bernoulli else mean
    i = (((user * N_STREAMS + TRANSITION) * H + h) * S + s) * A + a
    return support[row][sa][bisect_right(cdf[row][sa], _splitmix64_uniform(seed, i))], rew


def _rollout_lists(mdp: TabularMDP, policy_rows: list, user: int, seed: int, bernoulli: bool):
    """Unchecked scalar rollout (``_user_step`` inlined, for speed): ``policy_rows`` is
    ``policy.tolist()``.  Returns the lists of states, actions and rewards."""
    support, cdf, rewards, _ = _sparse_tables(mdp)
    H, S, A = mdp.H, mdp.S, mdp.A
    ht, hr = not mdp.homogeneous_transitions, not mdp.homogeneous_rewards
    base = user * N_STREAMS
    s = _initial_state(mdp, user, seed)
    states, actions, rews = [s], [], []
    for h in range(H):
        a = policy_rows[h][s]
        sa = s * A + a
        i = ((base * H + h) * S + s) * A + a                 # stream 0 (transitions)
        mean = rewards[h if hr else 0][sa]
        if bernoulli:
            j = (((base + REWARD) * H + h) * S + s) * A + a  # stream 1 (rewards)
            rew = 1.0 if _splitmix64_uniform(seed, j) < mean else 0.0
        else:
            rew = mean
        row = h if ht else 0
        s = support[row][sa][bisect_right(cdf[row][sa], _splitmix64_uniform(seed, i))]
        actions.append(a)
        rews.append(rew)
        states.append(s)
    return states, actions, rews


def rollout(mdp: TabularMDP, policy, user: int, seed: int = 0, reward_noise: str = "bernoulli") -> Trajectory:
    """One episode of the deterministic ``policy [H, S]`` with the replayable ``user``."""
    pi = check_policy(mdp, policy)
    u = int(check_users(mdp, [user])[0])
    states, actions, rews = _rollout_lists(mdp, pi.tolist(), u, check_seed(seed),
                                           _check_noise(reward_noise) == "bernoulli")
    return Trajectory(np.array(states), np.array(actions), np.array(rews))


def rollout_batch(mdp: TabularMDP, policy, users, seed: int = 0, reward_noise: str = "bernoulli") -> Trajectory:
    """Episodes of ``users [B]`` under one policy ``[H, S]`` or one policy each ``[B, H, S]``,
    vectorised over users; equal, user by user, to ``rollout``."""
    users = check_users(mdp, users)
    if users.ndim != 1:
        raise ValueError(f"users must be 1-D, got shape {users.shape}")
    pi = as_array(policy, "policy")
    pi = check_policy(mdp, pi, batch=pi.ndim == 3)
    if pi.ndim == 3 and len(pi) != len(users):
        raise ValueError(f"{len(pi)} policies for {len(users)} users")
    bernoulli = _check_noise(reward_noise) == "bernoulli"
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
from bandit_unlearning.rl.users import _splitmix64_uniform

reference = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
assert [int(z) for z in splitmix64(0, np.arange(4))] == reference
idx = rng.integers(0, 2 ** 62, size=1000, dtype=np.int64)
seed_demo = int(rng.integers(2 ** 63))
vec = (splitmix64(seed_demo, idx) >> np.uint64(11)).astype(float) * 2.0 ** -53
assert all(_splitmix64_uniform(seed_demo, int(i)) == v for i, v in zip(idx, vec))

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
from bandit_unlearning.montecarlo import hoeffding_margin

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
# ## 5. Gymnasium interoperability (optional dependency)
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
#      optimal policies are unchanged; `ImportedMDP.raw_value` maps values back.
#   3. *Reward noise*: our rollouts draw a reward with the right mean, independent of $s'$ (the
#      raw reward of a toy-text step may depend on $s'$); values and regret only see means.
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

from bandit_unlearning.checks import as_array, as_real, check_instance, check_int
from bandit_unlearning.rl.mdp import TabularMDP
from bandit_unlearning.rl.users import _check_noise, _initial_state, _user_step, check_seed, check_users


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

    ``mdp`` rewards are ``(raw - reward_low) / (reward_high - reward_low)``; ``terminal_state`` is the
    absorbing state added for ``done`` transitions (``None`` if the table has none).
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
        """Map an ``H``-step value of ``mdp`` back to the environment's raw reward scale."""
        span = self.reward_high - self.reward_low
        return as_array(value, "value") * span + self.mdp.H * self.reward_low


def from_gymnasium(env, horizon: int, name: str | None = None) -> ImportedMDP:
    """Build a ``TabularMDP`` from an environment exposing ``env.unwrapped.P[s][a] = [(p, s', r, done)]``
    (Gymnasium toy-text: FrozenLake, CliffWalking, Taxi) and ``initial_state_distrib``."""
    horizon = check_int(horizon, "horizon", 1)
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
            self.reward_noise = _check_noise(reward_noise)
            self.observation_space = gym.spaces.Discrete(mdp.S)
            self.action_space = gym.spaces.Discrete(mdp.A)
            self._h = None

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self._user = None
            if options and "user" in options:
                self._user = int(check_users(self.mdp, [options["user"]])[0])
                self._s = _initial_state(self.mdp, self._user, self.user_seed)
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
                s2, reward = _user_step(self.mdp, self._user, self.user_seed, h, s, a, bernoulli)
            else:
                s2 = int(self.np_random.choice(self.mdp.S, p=self.mdp.transitions[h, s, a]))
                mean = float(self.mdp.rewards[h, s, a])
                reward = float(self.np_random.random() < mean) if bernoulli else mean
            self._s, self._h = s2, h + 1
            return s2, float(reward), False, self._h == self.mdp.H, {"h": self._h}

    return TabularMDPEnv


def to_gymnasium(mdp: TabularMDP, seed: int = 0, reward_noise: str = "bernoulli"):
    """Wrap ``mdp`` as a ``gymnasium.Env``.  ``seed`` is the user population used when
    ``reset(options={"user": k})`` asks to replay user ``k``."""
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
# ## Summary
# - `TabularMDP` (validated, read-only, homogeneous input broadcast over $H$), `value_iteration`,
#   `evaluate_policy`, `policy_values`, `optimal_value`, `regret`, `check_policy` live in
#   `bandit_unlearning.rl.mdp`; planning matched a triple-loop oracle to $10^{-12}$ and the check
#   rejected an off-by-one in time.
# - `riverswim`, `gridworld` (5x5, two walls, $S = 23$), `garnet`, `independent_bandits` (the hard
#   instance of Theorem 4.4, $S = 3n$, $V^\star = (H-1)(\tfrac12 + \Delta)$) live in
#   `bandit_unlearning.rl.envs`.
# - Replayable users (E10): `rollout`, `rollout_batch`, `user_uniforms`, `splitmix64`, `Trajectory`
#   in `bandit_unlearning.rl.users`.  Exact evaluation matched Monte Carlo with 200,000 users on 8
#   (MDP, policy) pairs, and the same test rejected an evaluator that drops the last step.
# - Gymnasium (optional): `to_gymnasium`, `from_gymnasium`, `ImportedMDP` in
#   `bandit_unlearning.rl.gym`; conversions of CliffWalking, Taxi and FrozenLake agree exactly (or
#   within the Monte Carlo margin) with Gymnasium's own environments.
