# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.ucbvi
# ---

# %% [markdown]
# # Chapter B6a — UCB-VI from prefix sums: episode statistics and optimistic planning
#
# *Paper B, Section 4: the statistics of Paper B §4, the planning step of Algorithm 4 (TV-stable
# UCB-VI) and the bonuses it may use.  Exports `bandit_unlearning.rl.ucbvi` (with
# [chapter B6b](06b_ucbvi_regret.ipynb), which adds the non-private driver and its regret).*
#
# TV-stable UCB-VI is Algorithm 1's template with an RL oracle: episode $t$ (user $z_t$) is played
# with the current policy, its trajectory is summarised as a statistics vector $x_t \in \mathbb R^d$,
# the vectors are summed by the binary tree mechanism, and the next policy is planned from the
# **noisy prefix sum** $\tilde u_t \approx \sum_{i \le t} x_i$:
# $$
# \text{statistics } x_t \;\to\; \text{tree} \;\to\; \tilde u_t \;\to\; \texttt{plan\_from\_statistics}(\tilde u_t, \sigma) \;\to\; \pi_{t+1}.
# $$
# This chapter and the next build every piece except the tree (chapter B2's
# `bandit_unlearning.exact.tree`).  Here:
# 1. the statistics vector of Paper B §4 (layout, dense and sparse forms, sensitivity — edge E8);
# 2. the planner of Algorithm 4 from any summed statistics, exact or noisy (Paper B Algorithm 4, edge E9),
#    with the paper's bonus and the practical ones (erratum E15).
#
# [Chapter B6b](06b_ucbvi_regret.ipynb) adds non-private UCB-VI (Azar, Osband & Munos 2017) — the
# same planner with $\sigma = 0$ — as a fast incremental driver over replayable users, and the exact
# expected regret of a run and its growth in $T$ (the $\rho \to \infty$ end of Theorem 4.1).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.rl.envs import garnet, gridworld, riverswim
from bandit_unlearning.rl.mdp import value_iteration
from bandit_unlearning.rl.users import rollout_batch

rng = np.random.default_rng(20260606)
USER_SEED = int(rng.integers(2 ** 63))       # the population of replayable users of this chapter

# %% [markdown]
# ## 1. Episode statistics (Paper B §4)
#
# For every $(h, s, a)$ an episode contributes its visit indicator $\mathbb 1\{(s_h, a_h) = (s, a)\}$,
# its reward $r_h \mathbb 1\{(s_h, a_h) = (s, a)\}$ and, for every $s'$, its transition indicator
# $\mathbb 1\{(s_h, a_h, s_{h+1}) = (s, a, s')\}$ — dimension $d = 2SAH + S^2AH$.  With the flat
# index $k = (hS + s)A + a$ the layout is
#
# | block | positions | value |
# |---|---|---|
# | visits $N_h(s,a)$ | $k \in [0, HSA)$ | 1 |
# | rewards $R_h(s,a)$ | $HSA + k$ | $r_h$ |
# | transitions $N_h(s,a,s')$ | $2HSA + kS + s'$ | 1 |
#
# Summing the vectors of episodes $1..t$ gives the counts $N_h(s,a)$, reward sums $R_h(s,a)$ and
# transition counts $N_h(s,a,s')$ that UCB-VI needs.  One episode touches exactly one $(s,a)$ per step,
# so it has **at most $3H$ non-zeros**; the sparse form `(indices [3H], values [3H])` (visits,
# rewards, transitions, in that order; indices distinct) is what a memory-light tree will store.
#
# **Sensitivity (edge E8).**  Against the zero dummy user, $\|x_t - 0\|_2 = \sqrt{2H + \sum_h r_h^2}
# \le \sqrt{3H}$ — this is the $B$ of Theorem 4.1.  Between two arbitrary users the supports can be
# disjoint: $\|x_t - x'_t\|_2 \le \sqrt{6H}$.  Exactness of unlearning does not depend on $B$; it
# sets $\sigma$, hence the stability level $\rho$ and the retraining probability.  The project uses
# $B = \sqrt{3H}$ (deletion = replacement by the zero dummy, Paper B Definition 2.1).
#
# The last transition $(s_{H-1}, a_{H-1}) \to s_H$ is recorded too (it completes $d$), although
# planning never uses $P_{H-1}$ because $V_H = 0$.

# %% tags=["export"]
"""UCB-VI on summed episode statistics (Paper B, Algorithm 4; Paper B §4 and Algorithm 4, edges E8-E9).

Statistics layout (``d = 2SAH + S^2AH``, flat index ``k = (h*S + s)*A + a``): visits at ``k``,
reward sums at ``HSA + k``, transition counts at ``2HSA + k*S + s'``.  ``plan_from_statistics(u,
config)`` plans from any summed statistics vector, exact (``config.sigma = 0``: non-private
UCB-VI) or a noisy prefix sum of the binary tree (``sigma > 0``: TV-stable UCB-VI).  ``run_ucbvi``
is the fast incremental non-private driver; its policies equal the planner's with ``sigma = 0``.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bandit_unlearning.checks import (
    as_array, as_real_array, check_bool, check_choice, check_count, check_instance, check_int, check_real, check_real_array,
)
from bandit_unlearning.rl.mdp import TabularMDP, check_policy
from bandit_unlearning.kernel import rollout_lists
from bandit_unlearning.literate import add_to_class
from bandit_unlearning.rl.users import Trajectory, check_reward_noise, check_seed, check_users


def _check_dims(S, A, H):
    return tuple(check_int(v, name, 1) for name, v in (("S", S), ("A", A), ("H", H)))


@dataclass(frozen=True)
class StatsLayout:
    """Where each statistic of Paper B §4 lives in ``x in R^d``, ``d = 2SAH + S^2AH``.

    Parameters
    ----------
    S, A, H : int
        The numbers of states and actions and the horizon, each ``>= 1``.
    """

    S: int
    A: int
    H: int

    def __post_init__(self):
        for name, v in zip("SAH", _check_dims(self.S, self.A, self.H)):
            object.__setattr__(self, name, v)

    @classmethod
    def of(cls, mdp: TabularMDP) -> "StatsLayout":
        """The layout of ``mdp``'s statistics.

        Parameters
        ----------
        mdp : TabularMDP
            The environment.

        Returns
        -------
        StatsLayout
            ``StatsLayout(mdp.S, mdp.A, mdp.H)``.
        """
        check_instance(mdp, TabularMDP, "mdp")
        return cls(mdp.S, mdp.A, mdp.H)

    @property
    def n_triples(self) -> int:
        """``H*S*A``, the number of ``(h, s, a)``."""
        return self.H * self.S * self.A

    @property
    def d(self) -> int:
        """``2SAH + S^2AH``."""
        return (2 + self.S) * self.n_triples

    @property
    def visits(self) -> slice:
        return slice(0, self.n_triples)

    @property
    def rewards(self) -> slice:
        return slice(self.n_triples, 2 * self.n_triples)

    @property
    def transitions(self) -> slice:
        return slice(2 * self.n_triples, self.d)

# %% [markdown]
# `unpack` reads a statistics vector (or a stack of them) as the three blocks UCB-VI estimates from;
# `pack` is its inverse.

# %% tags=["export"]
@add_to_class(StatsLayout)
def unpack(self, u):
    """Views ``(N [..., H, S, A], R [..., H, S, A], Nsas [..., H, S, A, S])`` of ``u [..., d]``.

    Parameters
    ----------
    u : array_like
        Statistics, float of shape ``[..., d]`` (one vector or any stack of them).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        The visit counts ``N [..., H, S, A]``, reward sums ``R [..., H, S, A]`` and transition counts
        ``Nsas [..., H, S, A, S]``: views of ``u`` when it is already a float array.
    """
    u = as_array(u, "u").astype(float, copy=False)
    if u.ndim < 1 or u.shape[-1] != self.d:
        raise ValueError(f"statistics must have last dimension d = {self.d}, got shape {u.shape}")
    return self._views(u)


@add_to_class(StatsLayout)
def _views(self, u: np.ndarray):
    """``unpack`` of a float array ``u [..., d]`` without the checks (the planner's hot path)."""
    lead, H, S, A = u.shape[:-1], self.H, self.S, self.A
    return (u[..., self.visits].reshape(lead + (H, S, A)), u[..., self.rewards].reshape(lead + (H, S, A)),
            u[..., self.transitions].reshape(lead + (H, S, A, S)))


@add_to_class(StatsLayout)
def pack(self, N, R, Nsas) -> np.ndarray:
    """Inverse of ``unpack``: ``[..., d]`` from ``N, R [..., H, S, A]`` and ``Nsas [..., H, S, A, S]``.

    Parameters
    ----------
    N, R : array_like
        Visit counts and reward sums, finite, of one shape ``[..., H, S, A]``.
    Nsas : array_like
        Transition counts, finite, of shape ``[..., H, S, A, S]`` (the same leading axes).

    Returns
    -------
    numpy.ndarray
        The statistics vectors, float of shape ``[..., d]`` (a new array).
    """
    N, R, Nsas = (as_real_array(x, name) for x, name in ((N, "N"), (R, "R"), (Nsas, "Nsas")))
    hsa = (self.H, self.S, self.A)
    if N.shape[-3:] != hsa or R.shape != N.shape or Nsas.shape != N.shape + (self.S,):
        raise ValueError(f"N, R must have shape [..., {self.H}, {self.S}, {self.A}] and Nsas [..., {self.H}, "
                         f"{self.S}, {self.A}, {self.S}], got {N.shape}, {R.shape}, {Nsas.shape}")
    lead = N.shape[:-3]
    return np.concatenate([x.reshape(lead + (-1,)) for x in (N, R, Nsas)], axis=-1)

# %% [markdown]
# **Sparse statistics.** An episode touches only $3H$ of the $d$ coordinates: `sparse` lists them (a
# visit, its reward and its transition per step), `densify` and `accumulate` turn such lists back into
# one vector $x_t$ or the sum $\sum_t x_t$, and `dense` is `densify` of `sparse`.

# %% tags=["export"]
@add_to_class(StatsLayout)
def sparse(self, traj: Trajectory):
    """Statistics of episodes ``traj`` (any leading axes) as ``(indices [..., 3H], values [..., 3H])``:
    visits (value 1), rewards (value ``r_h``), transitions (value 1); distinct indices.

    Parameters
    ----------
    traj : Trajectory
        Episodes: ``states [..., H+1]`` in ``[0, S)``, ``actions [..., H]`` in ``[0, A)`` and
        ``rewards [..., H]``, of the same leading axes.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``indices [..., 3H]`` (integers in ``[0, d)``) and float ``values [..., 3H]``, in the order
        visits, rewards, transitions.
    """
    check_instance(traj, Trajectory, "traj")
    st, ac = np.asarray(traj.states), np.asarray(traj.actions)
    rw = np.asarray(traj.rewards, dtype=float)
    if st.shape[-1] != self.H + 1 or ac.shape[-1] != self.H or rw.shape != ac.shape or st.shape[:-1] != ac.shape[:-1]:
        raise ValueError(f"a trajectory needs H + 1 = {self.H + 1} states and H = {self.H} actions and rewards")
    if np.any((st < 0) | (st >= self.S)) or np.any((ac < 0) | (ac >= self.A)):
        raise ValueError(f"states must lie in [0, {self.S}) and actions in [0, {self.A})")
    k = (np.arange(self.H) * self.S + st[..., :-1]) * self.A + ac
    n = self.n_triples
    idx = np.concatenate([k, n + k, 2 * n + k * self.S + st[..., 1:]], axis=-1)
    return idx, np.concatenate([np.ones_like(rw), rw, np.ones_like(rw)], axis=-1)

# %% [markdown]
# Back from the sparse lists to vectors:

# %% tags=["export"]
@add_to_class(StatsLayout)
def densify(self, indices, values) -> np.ndarray:
    """Dense ``[..., d]`` vectors from sparse ``(indices [..., n], values [..., n])`` (repeats add).

    Parameters
    ----------
    indices : array_like of int
        Positions in ``[0, d)``, shape ``[..., n]`` (``n >= 0``; repeats allowed).
    values : array_like
        Finite values of the same shape.

    Returns
    -------
    numpy.ndarray
        Float of shape ``[..., d]``: row by row, the sum of the values at their indices.
    """
    indices, values = self._check_sparse(indices, values)
    lead = indices.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    out = np.zeros((rows, self.d))
    np.add.at(out, (np.arange(rows)[:, None], indices.reshape(rows, -1)), values.reshape(rows, -1))
    return out.reshape(lead + (self.d,))


@add_to_class(StatsLayout)
def _check_sparse(self, indices, values):
    """Integer indices in ``[0, d)`` and finite values of one shape ``[..., n]``."""
    indices, values = as_array(indices, "indices"), check_real_array(values, "values")
    if indices.shape != values.shape or indices.ndim < 1:
        raise ValueError("indices and values must have the same shape [..., n]")
    if indices.size and not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"indices must be integers in [0, {self.d}), got dtype {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= self.d):
        raise ValueError(f"indices must be integers in [0, {self.d})")
    return indices, values


@add_to_class(StatsLayout)
def accumulate(self, indices, values) -> np.ndarray:
    """``sum_t x_t`` (one ``[d]`` vector) of the sparse statistics of many episodes.

    Parameters
    ----------
    indices, values
        As in ``densify``; every leading axis is summed over.

    Returns
    -------
    numpy.ndarray
        Float of shape ``(d,)``: the sum of the values at their indices.
    """
    indices, values = self._check_sparse(indices, values)
    return np.bincount(indices.ravel(), weights=values.ravel(), minlength=self.d)


@add_to_class(StatsLayout)
def dense(self, traj: Trajectory) -> np.ndarray:
    """Statistics of episodes ``traj`` as dense vectors: ``densify`` of ``sparse``.

    Parameters
    ----------
    traj
        As in ``sparse``.

    Returns
    -------
    numpy.ndarray
        Float of shape ``[..., d]`` (the leading axes of ``traj``).
    """
    return self.densify(*self.sparse(traj))

# %% [markdown]
# The sensitivity $B$ of one episode's statistics, which calibrates the tree's noise, and the
# environment oracle of Algorithm 1 for RL: play the policy with a replayable user and return the
# sparse statistics.

# %% tags=["export"]
def statistics_sensitivity(H: int, dummy: str = "zero") -> float:
    """L2 sensitivity ``B`` of one episode's statistics (erratum E8): ``sqrt(3H)`` against the zero
    dummy user (the project's deletion model), ``sqrt(6H)`` between two arbitrary users.

    Parameters
    ----------
    H : int
        The horizon, ``>= 1``.
    dummy : str
        ``"zero"`` (a user against the zero dummy) or ``"any"`` (two arbitrary users).

    Returns
    -------
    float
        The bound ``B`` on ``||x_t - x'_t||_2``.
    """
    H = check_count(H, "H", 1)                          # a Python int (an np.uint8 H would wrap in 3H)
    check_choice(dummy, "dummy", ("zero", "any"))
    return float(np.sqrt((3 if dummy == "zero" else 6) * H))


def episode_statistics(mdp: TabularMDP, policy, user: int, seed: int = 0, reward_noise: str = "bernoulli"):
    """The environment oracle ``EO_t(z; w)`` of Algorithm 1 for RL: play ``policy`` with the
    replayable ``user`` and return its sparse statistics ``(indices [3H], values [3H])``.
    (The dummy user of a deletion has zero statistics.)

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    policy : array_like of int
        A deterministic policy ``[H, S]`` (actions in ``[0, A)``).
    user : int
        The user's index in the population, in ``[0, max_users(mdp))``.
    seed : int
        The population seed, in ``[0, 2**64)``.
    reward_noise : str
        ``"bernoulli"`` (rewards drawn) or ``"mean"`` (mean rewards).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``indices [3H]`` and ``values [3H]``, as ``StatsLayout.sparse`` of the episode.
    """
    pi = check_policy(mdp, policy)
    u = int(check_users(mdp, [user])[0])
    st, ac, rw = rollout_lists(mdp, pi.tolist(), u, check_seed(seed), check_reward_noise(reward_noise) == "bernoulli")
    return StatsLayout.of(mdp).sparse(Trajectory(np.array(st), np.array(ac), np.array(rw)))


# %% [markdown]
# **Checks.**  Round trips `pack`/`unpack` and sparse → dense; the dense vector of a batch of
# rollouts equals one built by an explicit loop over the steps; at most $3H$ non-zeros; the norm is
# at most $\sqrt{3H}$; the summed statistics satisfy $\sum_{s'} N_h(s,a,s') = N_h(s,a)$.  The same
# loop comparison rejects an encoder that files the transition under $s_h$ instead of $s_{h+1}$ (it
# still passes the count identity, which is why the loop comparison is needed).

# %%
from bandit_unlearning.rl.ucbvi import *  # noqa: F403

grid, river = gridworld(horizon=10), riverswim(horizon=20)
lay = StatsLayout.of(grid)
print(f"gridworld: S={grid.S}, A={grid.A}, H={grid.H}: d = 2SAH + S^2AH = {lay.d}; "
      f"B = sqrt(3H) = {statistics_sensitivity(grid.H):.3f} (zero dummy), sqrt(6H) = {statistics_sensitivity(grid.H, 'any'):.3f}")


def loop_dense(layout, traj):
    """Test oracle: one vector, built step by step."""
    x = np.zeros(layout.d)
    N, R, Nsas = layout.unpack(x)               # views into x
    for h in range(layout.H):
        s, a, s2 = traj.states[h], traj.actions[h], traj.states[h + 1]
        N[h, s, a] += 1; R[h, s, a] += traj.rewards[h]; Nsas[h, s, a, s2] += 1
    return x


policy = rng.integers(0, grid.A, size=(grid.H, grid.S))
batch = rollout_batch(grid, policy, np.arange(200), seed=USER_SEED)
idx, val = lay.sparse(batch)
dense = lay.densify(idx, val)
one = [type(batch)(batch.states[i], batch.actions[i], batch.rewards[i]) for i in range(200)]
assert np.array_equal(dense, np.array([loop_dense(lay, t) for t in one]))
assert np.array_equal(lay.pack(*lay.unpack(dense)), dense)
assert np.all((dense != 0).sum(1) <= 3 * grid.H) and np.all(np.linalg.norm(dense, axis=1) <= np.sqrt(3 * grid.H) + 1e-12)
N, R, Nsas = lay.unpack(lay.accumulate(idx, val))
assert np.array_equal(Nsas.sum(-1), N) and N.sum() == 200 * grid.H
assert np.array_equal(lay.accumulate(idx, val), dense.sum(0))
print("layout checks passed on 200 episodes; max non-zeros per episode:", (dense != 0).sum(1).max(),
      f"(3H = {3 * grid.H}); max norm {np.linalg.norm(dense, axis=1).max():.3f}")

broken_idx = idx.copy()
k = (np.arange(grid.H) * grid.S + batch.states[:, :-1]) * grid.A + batch.actions
broken_idx[:, 2 * grid.H:] = 2 * lay.n_triples + k * grid.S + batch.states[:, :-1]    # s_h instead of s_{h+1}
bN, _, bNsas = lay.unpack(lay.accumulate(broken_idx, val))
assert np.array_equal(bNsas.sum(-1), bN)                                  # the count identity still holds ...
assert not np.array_equal(lay.densify(broken_idx, val), dense)            # ... the loop comparison does not
print("an encoder filing transitions under s_h passes the count identity but is rejected by the loop oracle")

# %% [markdown]
# ## 2. Planning from (noisy) prefix sums: Algorithm 4, Paper B Algorithm 4
#
# **Statement.**  From summed statistics $\tilde u$ — exact, or the tree's noisy prefix sum with
# per-node noise $\mathcal N(0, \sigma^2 I_d)$ — read $\tilde N_h(s,a)$, $\tilde R_h(s,a)$,
# $\tilde N_h(s,a,s')$ and set, with $\varepsilon = \varepsilon_{app}(\delta/4)$,
# $$
# \varepsilon_{app}(\delta) = \sigma \ln T\Big(1 + \sqrt{2\ln\tfrac{2T(S^2AH + 2SAH)}{\delta}}\Big), \qquad
# \tilde r = \frac{\tilde R}{\tilde N}, \quad \tilde P(s' \mid s,a) = \frac{\tilde N(s,a,s')}{\tilde N(s,a)},
# $$
# $$
# b(n) = (H+1)\sqrt{\frac{\ln(8SAHT/\delta)}{2(n - \varepsilon)}} + \frac{\varepsilon}{n}\big(1 + 2H(\sqrt S + 1)\big).
# $$
# Optimistic value iteration, backwards from $\bar V_H = 0$ (code steps $h = 0..H-1$):
# $\bar Q_h(s,a) = \min\{H - h,\ \tilde r_h(s,a) + \tilde P_h(\cdot\mid s,a)^\top \bar V_{h+1} + b(\tilde N_h(s,a))\}$,
# clipped below at 0, where pairs with $\tilde N_h(s,a) \le \varepsilon$ are **unexplored** and get
# the maximal value $H - h$; $\bar V_h(s) = \max_a \bar Q_h(s,a)$; play the greedy policy (ties to
# the lowest action).  The cap $H - h$ is the paper's $H - h + 1$ in 1-indexed steps.
#
# **The $\rho \to \infty$ reference.**  With $\sigma = 0$: $\varepsilon = 0$, unexplored means
# $N = 0$, and $b(n) = (H+1)\sqrt{\ln(8SAHT/\delta)/(2n)}$ — UCB-VI with a Hoeffding bonus.  The
# *same function* is both algorithms; only the statistics it is fed and $\sigma$ differ.
#
# **Derivation (optimism).**  For $\sigma = 0$: $\tilde r + \tilde P V^\star_{h+1}$ is the mean of
# $N_h(s,a)$ independent samples of $r + V^\star_{h+1}(s')$, a variable in $[0, H]$ (the samples are
# independent even though the visits are adaptive: the $i$-th visit of $(h,s,a)$ uses a fresh
# user's independent draw).  Hoeffding with a union bound over $(h, s, a)$ and $n \le T$ gives
# $|\tilde r + \tilde P V^\star_{h+1} - Q^\star_h| \le H\sqrt{\ln(2SAHT/\delta)/(2n)} \le b(n)$ for all of
# them with probability $\ge 1 - \delta$.  On that event, by backward induction, $\bar V_{h+1} \ge V^\star_{h+1}$
# and $\tilde P \ge 0$ give $\bar Q_h \ge \min\{H-h,\ Q^\star_h\} = Q^\star_h$: **optimism**, which is
# what makes the regret small (the per-episode regret is at most the sum of bonuses along the
# played trajectory).  For $\sigma > 0$, $|\tilde N - N| \le \varepsilon_{app}$ with probability
# $1 - \delta$ (the tree's error), the $n - \varepsilon$ in the first term and the second term absorb
# the error of $\tilde r$ and $\tilde P$; we implement the paper's constants as printed and do not
# re-derive them.
#
# **Edge E9 (noisy statistics).**  With $\sigma > 0$, $\tilde N$ can be tiny or negative and
# $\tilde P(\cdot\mid s,a)$ need not be a distribution (negative entries, rows not summing to 1),
# $\tilde r$ can leave $[0,1]$.  The paper's algorithm only guards with the unexplored threshold
# and the cap to $[0, H - h]$ — that is the default here.  `stabilize=True` is an explicit,
# documented extra (off by default, and a no-op on exact counts): clip $\tilde r$ to $[0, 1]$ and
# replace $\tilde P(\cdot\mid s,a)$ by its positive part renormalised (uniform if nothing is positive).
# `bonus_scale` multiplies the whole bonus (1 = the paper's); it is the only other deviation offered.
#
# **The bonus as an interface.**  `UCBVIConfig.bonus_kind` names the exploration bonus (`"paper"`:
# $b(n)$ above times `bonus_scale`; the practical kinds are defined below); a planner asks `config.step_bonus(h, n_h,
# var_h)` for the bonus of step $h$, passing the empirical variance of $\bar V_{h+1}$ under
# $\tilde P_h$ only when `config.needs_next_variance` says the bonus reads it.  The paper's bonus
# depends on neither $h$ nor $\bar V$, so the planners evaluate it for all steps in one call
# (`bonus(n)`, equal to `step_bonus(h, n, None)` at every $h$ bit for bit; `paper_bonus` is the
# formula, with parameters that may be per-run columns — chapter B13's batched planner uses that).
#
# **Implementation.**  `optimistic_value_iteration` is the shared core: per step one product of the
# flat `[S*A, S]` matrix $\tilde P_h$ with $\bar V_{h+1}$, an add of `base = r~ + b` (`+inf` for
# unexplored pairs, which the cap turns into $H - h$), the two clips, a per-state argmax — all into
# preallocated arrays, no loop over states or actions.
#
# **Ties.**  Two actions whose optimistic values are equal in exact arithmetic can differ in the last
# bits of their floating-point values (a different summation order in $\tilde P_h \bar V_{h+1}$, or a
# CPU whose vector `log` rounds differently), and a plain argmax would then follow the rounding —
# a run on one machine would differ from the same run on another.  So the greedy step treats values
# within `Q_TIE_TOLERANCE` $= 10^{-9}$ of the largest as tied and takes the lowest action among them:
# far above rounding error (values lie in $[0, H]$), far below any difference that matters.

# %% [markdown]
# **Bonuses for practice (erratum E15).**  At the sizes of this book the paper's $b(n)$ never gets
# small: about $34/\sqrt n$ on the gridworld at $T = 2000$, above 1 (the scale of a value) until
# $n \approx 1{,}200$ visits of a triple, so every $\bar Q_h$ stays at its cap $H - h$ and the learner
# does not learn ([chapter B6b](06b_ucbvi_regret.ipynb), section 2).  `bonus_kind` picks another bonus; `"paper"` stays the default and is
# what every result of the paper uses.  With $m$ the count of $(h, s, a)$ (exact: $m = n$),
# $L_c = \ln(c\,SAH\,n_{\max}/\delta)$, $n_{\max} = T$ ($HT$ when pooled, below) and
# $v = \mathrm{Var}_{\tilde P_h(\cdot\mid s,a)}(\bar V_{h+1})$ (the planner's `next_variance`):
#
# | `bonus_kind` | bonus of $(h, s, a)$ | guarantee, as implemented |
# |---|---|---|
# | `"paper"` | $(H+1)\sqrt{\ln(8SAHT/\delta)/(2m)}$ | Theorem 4.1 |
# | `"hoeffding"` | $(H-h)\sqrt{L_2/(2m)}$ | optimism w.p. $1-\delta$, hence UCB-VI's Hoeffding-bonus regret $\tilde O(H^2\sqrt{SAT})$ |
# | `"bernstein"` | $\sqrt{L_6/(2m)} + \sqrt{2 L_6 v/m} + 3(H-h-1)L_6/m$ | none proven |
# | `"simplified"` | $\min\{\sqrt{1/m} + (H-h)/m,\ H-h\}$ | none |
#
# * *Hoeffding* is the derivation above with the exact range: $r + V^\star_{h+1}(s') \in [0, H-h]$,
#   and a union over the $SAH$ triples and $n \le n_{\max}$ (two-sided, hence the 2).  Optimism is
#   all the regret proofs of UCB-VI take from the bonus besides its order $H\sqrt{L/n}$ (Azar, Osband
#   & Munos 2017, UCB-VI-CH; Agarwal, Jiang, Kakade & Sun, *RL: Theory and Algorithms*, ch. 7), so it
#   keeps the paper's $\rho = \infty$ bound — up to those proofs' constants, which we do not
#   re-derive; optimism itself is checked in chapter B6b.  It is only about 12% below the paper's at $h = 0$
#   on the gridworld: sound, but no faster at these sizes.
# * *Bernstein* follows UCB-VI-BF: a Hoeffding term for the reward ($r \in [0, 1]$) and the empirical
#   Bernstein bound (Audibert, Munos & Szepesvári 2009: $\sqrt{2\hat V x/n} + 3bx/n$ with the
#   plug-in variance, range $b = H-h-1$) for $\tilde P_h \bar V_{h+1}$.  That bound is valid for
#   $V^\star_{h+1}$, a fixed function; applied to the learner's own $\bar V_{h+1}$ it is not, and
#   UCB-VI-BF adds a correction term for exactly this, **omitted here** — so no guarantee.
# * *Simplified* is the default bonus of rlberry's `UCBVIAgent` (`bonus_type="simplified_bernstein"`:
#   `bonus_scale_factor * sqrt(1/n) + v_max[h] / n`, capped at `v_max[h]` $= H - h$): no logarithm,
#   no constants, no guarantee — a heuristic that learns fast where optimism is cheap.
#   (`bonus_scale` multiplies the whole bonus here, rlberry's factor only the first term; both are
#   1 by default.  The cap is a no-op in our planner, whose values are capped at $H - h$ anyway.)
#   rlberry differs elsewhere too: it caps $\bar V_h$ at $H$ rather than $H - h$, gives a pair it
#   has not visited $\hat r = 0$, a uniform $\hat P$ and the bonus $H - h$ (ours: the value
#   $H - h$), and in its pooled mode refreshes the bonus of $(h, s, a)$ only when $(s, a)$ is
#   visited *at step $h$* — so its bonus there uses the pooled count of that visit (larger and
#   staler than ours, which uses the current pooled count).
#
# **Noisy counts** ($\sigma > 0$).  Every kind keeps the paper's treatment: a pair with
# $\tilde N \le \varepsilon$ is unexplored (value $H - h$), and the bonus is evaluated at the
# pessimistic count $m = \tilde n - \varepsilon$ (the true count is at least that on the tree's
# event).  The kinds built on a confidence argument (`paper`, `hoeffding`, `bernstein`) add the
# paper's shift term $(\varepsilon/\tilde n)(1 + 2H(\sqrt S + 1))$, which absorbs the noise in $\tilde r$
# and $\tilde P$; with it `hoeffding` stays optimistic to the extent the paper's shift term covers
# the noise (its constants are the paper's, not re-derived).  `simplified` adds no shift term: the
# noise is covered only by the pessimistic count.  No bonus touches TV-stability: the planner only
# post-processes the tree's output.
#
# **Pooling** (`pooled=True`, default off).  On a *stationary* MDP ($P_h$, $r_h$ the same at every
# step, like the gridworld and RiverSwim) the samples of $(s, a)$ at all steps estimate the same
# $r$ and $P$: summing the statistics over $h$ gives each estimate up to $H$ times more data (rlberry's
# default does this; its `stage_dependent=True` does not).  Paper B's model allows step-dependent
# $P_h$, where pooling is biased — hence off by default.  Pooled counts go up to $HT$
# ($n_{\max} = HT$ in $L_c$); a pooled noisy count sums $H$ independent noisy coordinates
# (Gaussian with $\sqrt H$ times the standard deviation), so $\varepsilon$ becomes $\sqrt H\,\varepsilon$.

# %% tags=["export"]
BONUS_KINDS = ("paper", "hoeffding", "bernstein", "simplified")
PLANNED_BONUS_KINDS = ("noisy_bernstein",)   # bonuses computed inside their own planner (chapter B7c)


@dataclass(frozen=True)
class UCBVIConfig:
    """Parameters of UCB-VI / TV-stable UCB-VI (Algorithm 4, Paper B Algorithm 4).

    Parameters
    ----------
    S, A, H : int
        The numbers of states and actions and the horizon, each ``>= 1``.
    T : int
        The number of episodes, ``>= 1`` (enters ``eps_app`` and the bonus).
    delta : float
        The confidence parameter, in ``(0, 1)`` (enters ``eps_app`` and the bonus).
    sigma : float
        The noise standard deviation of each tree node, ``>= 0`` (0: exact counts, non-private UCB-VI).
    bonus_scale : float
        Multiplies the bonus, ``>= 0`` (1: the paper's).
    stabilize : bool
        Clip noisy estimates into valid ranges (erratum E9); False: the paper's algorithm.
    bonus_kind : str
        The bonus of ``step_bonus``: one of ``BONUS_KINDS`` (``"paper"``: Algorithm 4's ``b(n)``) or
        ``PLANNED_BONUS_KINDS`` (planned by chapter B7c's planner).
    pooled : bool
        Sum the statistics over the steps ``h`` before estimating (stationary MDPs only).
    """

    S: int
    A: int
    H: int
    T: int
    delta: float = 0.1
    sigma: float = 0.0
    bonus_scale: float = 1.0
    stabilize: bool = False
    bonus_kind: str = "paper"
    pooled: bool = False

    def __post_init__(self):
        # the checked values are stored (Python ints and floats: numpy int32/uint8 sizes would overflow)
        for name, v in zip("SAH", _check_dims(self.S, self.A, self.H)):
            object.__setattr__(self, name, v)
        object.__setattr__(self, "T", check_int(self.T, "T", 1))
        object.__setattr__(self, "delta", check_real(self.delta, "delta", 0, 1, low_open=True, high_open=True))
        object.__setattr__(self, "sigma", check_real(self.sigma, "sigma", 0))
        object.__setattr__(self, "bonus_scale", check_real(self.bonus_scale, "bonus_scale", 0))
        object.__setattr__(self, "stabilize", check_bool(self.stabilize, "stabilize"))
        check_choice(self.bonus_kind, "bonus_kind", BONUS_KINDS + PLANNED_BONUS_KINDS)
        object.__setattr__(self, "pooled", check_bool(self.pooled, "pooled"))
        self.eps_unexplored, self.log_term, self.union_log_term      # cached now: later calls change nothing

    @cached_property
    def eps_unexplored(self) -> float:
        """``eps_app(delta/4)`` (``sqrt(H)`` times that when pooled): pairs with ``N~ <= eps_unexplored``
        are treated as unexplored."""
        eps = self.eps_app(self.delta / 4)
        return eps * float(np.sqrt(self.H)) if self.pooled else eps

    @cached_property
    def log_term(self) -> float:
        """``ln(8SAHT/delta)``."""
        return float(np.log(8 * self.S * self.A * self.H * self.T / self.delta))

    @cached_property
    def union_log_term(self) -> float:
        """``L_c = ln(c SAH n_max / delta)`` of the ``"hoeffding"`` (c = 2) and ``"bernstein"`` (c = 6)
        kinds, ``n_max = T`` (``HT`` pooled); 0 for the kinds without one."""
        c = {"hoeffding": 2, "bernstein": 6}.get(self.bonus_kind)
        if c is None:
            return 0.0
        n_max = self.T * (self.H if self.pooled else 1)
        return float(np.log(c * self.S * self.A * self.H * n_max / self.delta))


# %% [markdown]
# A config is usually built from an MDP, whose sizes it takes, and reads its statistics with the
# matching layout.

# %% tags=["export"]
@add_to_class(UCBVIConfig)
@classmethod
def of(cls, mdp: TabularMDP, T: int, **kwargs) -> "UCBVIConfig":
    """The config for ``mdp``'s ``S, A, H``.

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    T : int
        The number of episodes, ``>= 1``.
    **kwargs
        The other fields (``delta``, ``sigma``, ``bonus_scale``, ...), as in ``UCBVIConfig``.

    Returns
    -------
    UCBVIConfig
        ``UCBVIConfig(mdp.S, mdp.A, mdp.H, T, **kwargs)``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    return cls(mdp.S, mdp.A, mdp.H, T, **kwargs)


@add_to_class(UCBVIConfig)
@property
def layout(self) -> StatsLayout:
    """The ``StatsLayout`` of the config's ``S, A, H``."""
    return StatsLayout(self.S, self.A, self.H)


# %% [markdown]
# $\varepsilon_{\rm app}(\delta)$ of Algorithm 4 (the accuracy of every noisy count on the tree's
# event; `eps_unexplored` above is $\varepsilon_{\rm app}(\delta/4)$, times $\sqrt H$ when pooled) and
# the bonus of each kind (the table above): `bonus` is always the paper's $b(n)$, `step_bonus` the
# one the planner uses, with its checks; `_step_bonus` is the same without them, for the planner's
# hot path.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(UCBVIConfig)
def eps_app(self, delta: float) -> float:
    """``sigma ln T (1 + sqrt(2 ln(2T(S^2AH + 2SAH)/delta)))`` (Paper B Algorithm 4).

    Parameters
    ----------
    delta : float
        The failure probability, in ``(0, 1]``.

    Returns
    -------
    float
        ``eps_app(delta) >= 0``, in counts: every noisy count is within it of the exact one on the
        tree's event (0 when ``sigma = 0``).
    """
    delta = check_real(delta, "delta", 0, 1, low_open=True)
    S, A, H, T = self.S, self.A, self.H, self.T
    d = S * S * A * H + 2 * S * A * H
    return float(self.sigma * np.log(T) * (1 + np.sqrt(2 * np.log(2 * T * d / delta))))


@add_to_class(UCBVIConfig)
def bonus(self, n) -> np.ndarray:
    """``b(n)`` of Paper B Algorithm 4 times ``bonus_scale`` (the paper's, whatever ``bonus_kind``
    says; ``step_bonus`` is what the planner uses); meaningful for ``n > eps_unexplored``.

    Parameters
    ----------
    n : array_like
        (Noisy) visit counts, any shape.

    Returns
    -------
    numpy.ndarray
        The bonus, elementwise (the shape of ``n``), in units of value.
    """
    n = as_real_array(n, "n")
    return paper_bonus_unchecked(n, self.log_term, self.eps_unexplored, self.H, self.S, self.bonus_scale)


@add_to_class(UCBVIConfig)
@property
def needs_next_variance(self) -> bool:
    """Whether ``step_bonus`` reads ``next_variance`` (only the ``"bernstein"`` kind does)."""
    return self.bonus_kind == "bernstein"


# %% [markdown]
# `step_bonus` checks its arguments and hands over to `_step_bonus`, the formulas of the table:

# %% tags=["export"]
@add_to_class(UCBVIConfig)
def step_bonus(self, h: int, n, next_variance=None) -> np.ndarray:
    """The bonus of ``bonus_kind`` at step ``h`` times ``bonus_scale``.  The ``"paper"`` kind is
    ``bonus(n)``, bit for bit.

    Parameters
    ----------
    h : int
        The step, ``0 <= h < H`` (0-based).
    n : array_like
        (Noisy) counts of ``(h, s, a)``, any shape, every entry ``> eps_unexplored`` (``inf`` gives 0).
    next_variance : array_like or None
        The variance of ``V_{h+1}(s')`` under ``P~_h(.|s, a)``, the shape of ``n``, ``>= 0``: needed
        when ``needs_next_variance``, ignored otherwise.

    Returns
    -------
    numpy.ndarray
        The bonus, elementwise (the shape of ``n``), in units of value.
    """
    if self.bonus_kind in PLANNED_BONUS_KINDS:
        raise ValueError(f"bonus_kind {self.bonus_kind!r} has no step bonus of the counts alone: its planner "
                         "(bandit_unlearning.rl.bernstein, chapter B7c) computes it from all the statistics")
    h = check_int(h, "h", 0, self.H - 1)
    n = check_real_array(n, "n", allow_inf=True)
    if np.any(n <= self.eps_unexplored):
        raise ValueError(f"n must be > eps_unexplored = {self.eps_unexplored:.6g} (every entry): smaller "
                         "counts are unexplored pairs, which get the cap, not a bonus")
    var = None
    if self.needs_next_variance:
        if next_variance is None:
            raise ValueError(f"next_variance is needed by bonus_kind {self.bonus_kind!r}")
        var = check_real_array(next_variance, "next_variance", 0, shape=n.shape)
    return self._step_bonus(h, n, var)


@add_to_class(UCBVIConfig)
def _step_bonus(self, h, n, var):
    """``step_bonus`` without the checks; ``h`` may be an int array broadcasting against ``n``."""
    if self.bonus_kind == "paper":                          # bonus(n) without its copy of n
        return paper_bonus_unchecked(n, self.log_term, self.eps_unexplored, self.H, self.S, self.bonus_scale)
    eps, span = self.eps_unexplored, self.H - h             # span: the range H - h of r + V_{h+1}
    m = n - eps if eps > 0 else n
    if self.bonus_kind == "simplified":
        return self.bonus_scale * np.minimum(np.sqrt(1.0 / m) + span / m, span)
    L = self.union_log_term
    if self.bonus_kind == "hoeffding":
        b = span * np.sqrt(L / (2 * m))
    else:
        b = np.sqrt(L / (2 * m)) + np.sqrt(2 * L * var / m) + 3 * (span - 1) * L / m
    if eps > 0:
        b = b + eps / n * (1 + 2 * self.H * (np.sqrt(self.S) + 1))
    return self.bonus_scale * b


# %% [markdown]
# The paper's bonus as a function of the counts alone (for the batched engine, whose runs have
# their own `log_term` and $\varepsilon$), and the planner's output.

# %% tags=["export"]
def paper_bonus(n, log_term, eps, H: int, S: int, bonus_scale):
    """``bonus_scale ((H+1) sqrt(log_term / (2(n - eps))) + eps/n (1 + 2H(sqrt S + 1)))`` elementwise
    (Paper B Algorithm 4), the second term only where ``eps > 0``; ``log_term``, ``eps`` and
    ``bonus_scale`` may be arrays broadcasting against ``n`` (one value per run of a batch): each
    element sees the same operations as with scalars, so a batch equals its runs bit for bit.

    Parameters
    ----------
    n : array_like
        (Noisy) visit counts, ``> eps``.
    log_term : float or array_like
        ``ln(8SAHT/delta)`` (``UCBVIConfig.log_term``).
    eps : float or array_like
        The unexplored threshold ``eps_app(delta/4) >= 0`` (``UCBVIConfig.eps_unexplored``).
    H, S : int
        The horizon and the number of states, ``>= 1``.
    bonus_scale : float or array_like
        Multiplies the bonus, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        The bonus, elementwise (the broadcast shape), in units of value.
    """
    n = as_array(n, "n")
    return paper_bonus_unchecked(n, log_term, eps, check_int(H, "H", 1), check_int(S, "S", 1), bonus_scale)


def paper_bonus_unchecked(n, log_term, eps, H: int, S: int, bonus_scale):
    """Unchecked: ``paper_bonus`` without its checks, for the planners' hot loops (``rl.batch`` too);
    its callers have validated ``H``, ``S`` and the shapes at their boundary.

    Parameters
    ----------
    n, log_term, eps, bonus_scale : array_like
        As in ``paper_bonus`` (not checked).
    H, S : int
        Horizon and number of states, ``>= 1`` (not checked).

    Returns
    -------
    numpy.ndarray
        The bonus, elementwise; the same operations as ``paper_bonus``, so bit-identical to it.
    """
    b = (H + 1) * np.sqrt(log_term / (2 * (n - eps)))
    if np.any(np.asarray(eps) > 0):
        b = b + eps / n * (1 + 2 * H * (np.sqrt(S) + 1))     # adds exactly 0.0 where eps = 0 (n > 0)
    return bonus_scale * b


@dataclass(frozen=True)
class OptimisticPlan:
    """Output of ``plan_from_statistics``: greedy policy, optimistic values and the explored mask.

    Parameters
    ----------
    policy : numpy.ndarray
        The greedy policy ``[H, S]`` (integer actions; ties to the lowest action).
    Q : numpy.ndarray
        The optimistic action values ``[H, S, A]``, capped to ``[0, H-h]``.
    V : numpy.ndarray
        The optimistic state values ``[H+1, S]`` (``V[H] = 0``).
    explored : numpy.ndarray
        Bool ``[H, S, A]``: the pairs whose (noisy) count exceeds ``eps_unexplored``.
    """

    policy: np.ndarray
    Q: np.ndarray
    V: np.ndarray
    explored: np.ndarray

    def __post_init__(self):
        Q, V = as_array(self.Q, "Q"), as_array(self.V, "V")
        policy, explored = as_array(self.policy, "policy"), as_array(self.explored, "explored")
        if Q.ndim != 3 or V.shape != (Q.shape[0] + 1, Q.shape[1]) or policy.shape != Q.shape[:2] \
                or explored.shape != Q.shape:
            raise ValueError(f"an optimistic plan needs policy [H, S], Q and explored [H, S, A] and V [H+1, S], got "
                             f"shapes {policy.shape}, {Q.shape}, {explored.shape}, {V.shape}")


Q_TIE_TOLERANCE = 1e-9


# %% [markdown]
# Optimistic value iteration, backwards over $h$: the checked entry point and the unchecked core the
# drivers call once per episode.

# %% tags=["export"]
def optimistic_value_iteration(base, P, S: int, A: int, out=None):
    """Core of Algorithm 4's planning: ``Q_h = clip(base_h + P_h V_{h+1}, 0, H-h)``, ``V_h = Q_h(policy_h)``,
    ``policy_h`` = the lowest action whose ``Q_h`` is within ``Q_TIE_TOLERANCE`` of ``max_a Q_h``
    (ties and rounding-level near-ties -> lowest action), ``V_H = 0``.

    Parameters
    ----------
    base : array_like
        ``r~ + b(N~)``, float ``[H, S*A]`` without nan (``+inf`` for unexplored pairs: the cap makes
        them ``H - h``).
    P : array_like
        The estimated kernels ``P~_h(s' | s, a)``, finite, ``[H, S*A, S]``.
    S, A : int
        The numbers of states and actions, ``>= 1``.
    out : tuple of numpy.ndarray or None
        ``(policy [H, S] int64, Q [H, S*A] float, V [H+1, S] float)``, writeable, filled in place;
        ``None``: new arrays.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        ``(policy [H, S], Q [H, S*A], V [H+1, S])`` (the arrays of ``out`` if given).
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    base = as_array(base, "base")
    if base.ndim != 2 or base.shape[1] != S * A or np.any(np.isnan(base)):
        raise ValueError(f"base must have shape [H, S*A] = [H, {S * A}] without nan, got {base.shape}")
    P = check_real_array(P, "P", shape=(base.shape[0], S * A, S))
    if out is not None:
        H = base.shape[0]
        shapes = ((H, S), (H, S * A), (H + 1, S))
        if not isinstance(out, tuple) or len(out) != 3 or not all(
                isinstance(o, np.ndarray) and o.shape == shape and o.flags.writeable for o, shape in zip(out, shapes)):
            raise ValueError(f"out must be (policy [H, S] int64, Q [H, S*A], V [H+1, S]) writeable arrays, "
                             f"H = {H}, S = {S}, A = {A}")
        if out[0].dtype != np.int64 or out[1].dtype != float or out[2].dtype != float:
            raise TypeError("out must hold an int64 policy and float Q and V")
    return _value_iteration(base, P, S, A, out)


def _value_iteration(base, P, S: int, A: int, out=None, bonus=None):
    """``optimistic_value_iteration`` without the checks (the hot path of the drivers).  ``bonus =
    (config, n [H, S*A])`` (for a config that ``needs_next_variance``): add ``config``'s step bonus,
    computed at each step from ``n`` and the variance of ``V_{h+1}`` under ``P_h`` (``base`` then
    holds ``r~`` only)."""
    H = base.shape[0]
    if out is None:
        out = (np.empty((H, S), dtype=np.int64), np.empty((H, S * A)), np.zeros((H + 1, S)))
    policy, Q, V = out
    V[H] = 0.0
    rows, first = np.arange(0, S * A, A), np.empty(S, dtype=np.int64)
    for h in range(H - 1, -1, -1):
        q = Q[h]
        np.dot(P[h], V[h + 1], out=q)
        if bonus is not None:
            # Var = P V^2 - (P V)^2, clipped to [0, (H-h-1)^2/4]: a noisy P~ need not be a distribution
            var = np.clip(P[h] @ np.square(V[h + 1]) - np.square(q), 0.0, (H - h - 1) ** 2 / 4)
            q += bonus[0].step_bonus(h, bonus[1][h], var)
        np.add(q, base[h], out=q)
        np.minimum(q, H - h, out=q)
        np.maximum(q, 0.0, out=q)
        qs = q.reshape(S, A)
        # max_a Q_h(s, a), read at the first maximiser (a reduction along a short axis is slow in numpy)
        top = q.take(np.add(qs.argmax(axis=1), rows, out=first))
        best = (qs >= np.subtract(top, Q_TIE_TOLERANCE, out=top)[:, None]).argmax(axis=1)
        policy[h] = best
        q.take(np.add(best, rows, out=best), out=V[h])
    return out


# %% [markdown]
# From statistics to a plan: the estimates $\tilde r$, $\tilde P$ and $\tilde r + b$ elementwise, then
# the value iteration.

# %% tags=["export"]
def _estimates(N, R, Nsas, config: UCBVIConfig, h):
    """Elementwise: ``base = r~ + b(N~)`` (``inf`` where unexplored), ``P~``, the explored mask and
    the counts ``n``, from ``N, R [...]``, ``Nsas [..., S]`` and the steps ``h`` (an int array
    broadcasting against ``N``).  Unexplored pairs get ``n = inf`` (so their ``r~``, ``P~`` and bonus
    are 0 without a masking pass); their ``base = inf`` makes ``P~`` irrelevant.  When the bonus
    ``needs_next_variance``, ``base = r~`` and the value iteration adds the bonus."""
    explored = N > config.eps_unexplored
    n = np.where(explored, N, np.inf)
    r = R / n
    P = Nsas / n[..., None]
    if config.stabilize:
        r = np.clip(r, 0.0, 1.0)
        P = np.maximum(P, 0.0)
        total = P.sum(axis=-1, keepdims=True)
        P = np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[-1])
    if config.needs_next_variance:
        return np.where(explored, r, np.inf), P, explored, n
    return np.where(explored, r + config._step_bonus(h, n, None), np.inf), P, explored, n


# %% [markdown]
# `plan_from_statistics` checks the statistics and plans; `ucbvi_update` is the same planner giving
# the policy alone (the update of Algorithm 1).  While no pair's (noisy) count exceeds
# `eps_unexplored`, the plan needs no value iteration: every $Q_h$ is capped at $H - h$, all actions
# tie and the lowest is played (`_unexplored_plan`, the same numbers).  A TV-stable learner spends its
# first hundreds of episodes there, its noisy counts below a threshold of the order of the noise.

# %% tags=["export"]
def plan_from_statistics(u, config: UCBVIConfig) -> OptimisticPlan:
    """Algorithm 4's planning step from summed statistics ``u [d]``: exact sums (``config.sigma = 0``,
    non-private UCB-VI) or the tree's noisy prefix sum (``sigma`` = per-node noise level).  The bonus
    of step ``h`` is ``config.step_bonus(h, n_h, var_h)``.

    Parameters
    ----------
    u : array_like
        Summed statistics, finite, of shape ``(d,)``, ``d = 2SAH + S^2AH`` (layout of ``StatsLayout``).
    config : UCBVIConfig
        The sizes, ``T``, ``delta``, ``sigma`` and bonus.

    Returns
    -------
    OptimisticPlan
        The greedy policy, the optimistic ``Q`` and ``V`` and the explored mask.
    """
    u, layout = _checked_statistics(u, config)
    policy, Q, V, explored = _plan(u, config, layout)
    return OptimisticPlan(policy, Q, V, explored)


def _checked_statistics(u, config):
    """``(u as float [d], config.layout)``, or the error naming what is wrong.  Finiteness is read off
    the sum first (a finite sum has no nan or infinite term), element by element only if it is not."""
    if not isinstance(config, UCBVIConfig):
        raise TypeError(f"config must be a UCBVIConfig, got {type(config).__name__}")
    layout = config.layout
    u = as_array(u, "u").astype(float, copy=False)
    if u.shape != (layout.d,):
        raise ValueError(f"u must have shape ({layout.d},) (d = 2SAH + S^2AH), got {u.shape}")
    if not (np.isfinite(u.sum()) or np.all(np.isfinite(u))):
        raise ValueError("u must be finite")
    return u, layout


def _plan(u, config: UCBVIConfig, layout: StatsLayout):
    """``plan_from_statistics`` on a checked float ``u [d]`` (no checks: the drivers' hot path);
    returns the plan's ``(policy, Q, V, explored)``."""
    S, A, H = config.S, config.A, config.H
    N, R, Nsas = layout._views(u)
    if config.pooled:                       # every step sees the sums over h (stationary MDPs)
        N, R, Nsas = (np.broadcast_to(x.sum(axis=0), x.shape) for x in (N, R, Nsas))
    if config.bonus_kind in PLANNED_BONUS_KINDS:   # chapter B7c's planner (imported here: it imports this module)
        from bandit_unlearning.rl.bernstein import noisy_bernstein_plan
        plan = noisy_bernstein_plan(N.reshape(H, S * A), R.reshape(H, S * A), Nsas.reshape(H, S * A, S), config)
        return plan.policy, plan.Q, plan.V, plan.explored
    if not N.max() > config.eps_unexplored:        # nothing explored yet: the plan is known (see below)
        return _unexplored_plan(H, S, A)
    base, P, explored, n = _estimates(N.reshape(H, S * A), R.reshape(H, S * A), Nsas.reshape(H, S * A, S), config,
                                      np.arange(H)[:, None])
    policy, Q, V = _value_iteration(base, P, S, A, bonus=(config, n) if config.needs_next_variance else None)
    return policy, Q.reshape(H, S, A), V, explored.reshape(H, S, A)


def _unexplored_plan(H: int, S: int, A: int):
    """``_plan``'s ``(policy, Q, V, explored)`` when no pair is explored: every ``base = inf``, so every
    ``Q_h(s, a)`` is capped at ``H - h`` whatever ``P~`` and ``V_{h+1}`` are, all actions tie (the
    lowest, 0, is played) and ``V_h = H - h`` -- the numbers the value iteration computes, bit for bit,
    without computing ``P~``."""
    steps_left = np.arange(H, 0, -1, dtype=float)                     # H - h, h = 0 .. H-1
    V = np.zeros((H + 1, S))
    V[:H] = steps_left[:, None]
    return (np.zeros((H, S), dtype=np.int64), np.repeat(steps_left, S * A).reshape(H, S, A), V,
            np.zeros((H, S, A), dtype=bool))


def ucbvi_update(u, config: UCBVIConfig) -> np.ndarray:
    """``UPDATE(u_t)`` of Algorithm 1 for (TV-stable) UCB-VI: the next policy ``[H, S]`` (the policy of
    ``plan_from_statistics``, without building the rest of the plan's record).

    Parameters
    ----------
    u, config
        As in ``plan_from_statistics``.

    Returns
    -------
    numpy.ndarray
        The greedy policy ``[H, S]`` (integer actions): ``plan_from_statistics(u, config).policy``.
    """
    u, layout = _checked_statistics(u, config)
    return _plan(u, config, layout)[0]


# %% [markdown]
# **Check: the planner against a plain loop.**  A triple loop over $(h, s, a)$ that reads the
# formulas of Paper B Algorithm 4 literally, on random statistics — exact counts ($\sigma = 0$) and noisy ones
# ($\sigma > 0$, with negative counts and improper $\tilde P$), with and without `stabilize`.
# The comparison rejects a planner that forgets the cap (its values exceed $H - h$).

# %%
def loop_plan(u, cfg, cap=True):
    """Test oracle: Paper B Algorithm 4 read literally, loops over h, s, a."""
    S, A, H = cfg.S, cfg.A, cfg.H
    N, R, Nsas = cfg.layout.unpack(u)
    eps = cfg.eps_app(cfg.delta / 4)
    V = np.zeros((H + 1, S)); Q = np.zeros((H, S, A)); pi = np.zeros((H, S), int)
    for h in reversed(range(H)):
        for s in range(S):
            for a in range(A):
                n = N[h, s, a]
                if n <= eps:
                    Q[h, s, a] = H - h
                    continue
                r, P = R[h, s, a] / n, Nsas[h, s, a] / n
                if cfg.stabilize:
                    r = min(max(r, 0.0), 1.0)
                    P = np.maximum(P, 0)
                    P = P / P.sum() if P.sum() > 0 else np.full(S, 1 / S)
                b = (H + 1) * np.sqrt(np.log(8 * S * A * H * cfg.T / cfg.delta) / (2 * (n - eps))) \
                    + (eps / n) * (1 + 2 * H * (np.sqrt(S) + 1))
                q = r + P @ V[h + 1] + cfg.bonus_scale * b
                Q[h, s, a] = min(max(q, 0.0), H - h) if cap else q
            pi[h, s] = int(np.argmax(Q[h, s] >= Q[h, s].max() - Q_TIE_TOLERANCE))
            V[h, s] = Q[h, s, pi[h, s]]
    return pi, Q, V


worst, cases = 0.0, 0
for sigma in (0.0, 0.3, 3.0):
    for stabilize in (False, True):
        for trial in range(4):
            S, A, H = (int(x) for x in rng.integers(1, 5, size=3))
            cfg = UCBVIConfig(S, A, H, T=int(rng.integers(2, 10 ** 4)), delta=0.1, sigma=sigma,
                              bonus_scale=float(rng.choice([1.0, 0.05])), stabilize=stabilize)
            lay_ = cfg.layout
            m = garnet(S, A, min(S, 2), H, rng)
            x = lay_.dense(rollout_batch(m, rng.integers(0, A, (H, S)), rng.integers(0, 10 ** 6, 40), seed=USER_SEED))
            u = x.sum(0) + sigma * rng.normal(size=lay_.d) * np.sqrt(np.log2(cfg.T) + 1)
            plan = plan_from_statistics(u, cfg)
            pi_l, Q_l, V_l = loop_plan(u, cfg)
            worst = max(worst, np.abs(plan.Q - Q_l).max(), np.abs(plan.V - V_l).max())
            assert np.array_equal(plan.policy, pi_l) and np.all(plan.V[:H] <= (H - np.arange(H))[:, None])
            cases += 1
print(f"planner vs Paper B Algorithm 4 loop on {cases} random (sigma, stabilize, S, A, H): max |difference| = {worst:.1e}")
assert worst < 1e-9

cfg = UCBVIConfig(3, 2, 4, T=100, bonus_scale=1.0)
u = cfg.layout.dense(rollout_batch(gridworld(horizon=4, layout=("S.G",)), np.zeros((4, 3), int), np.arange(3), seed=1)).sum(0)
uncapped = loop_plan(u, cfg, cap=False)[2]
print(f"a planner without the cap: max V_0 = {uncapped[0].max():.2f} > H = {cfg.H} -> rejected")
assert uncapped[0].max() > cfg.H and plan_from_statistics(u, cfg).V[0].max() <= cfg.H

# %% [markdown]
# **How large is $\varepsilon_{app}$ for TV-stable UCB-VI?**  With the tree's noise
# $\sigma = B\sqrt{\log_2 T}/(\sqrt 2 \rho)$ and $B = \sqrt{3H}$ (Paper B Algorithm 2, E8), a pair counts as
# explored only once $\tilde N > \varepsilon_{app}(\delta/4)$, and its bonus falls below 1 (the
# scale of a value) only once the second term $(\varepsilon/n)(1 + 2H(\sqrt S + 1))$ does, i.e. after
# about $117\,\varepsilon$ visits on the gridworld — the origin of the $H^{2.5}S^2A/\rho$ term of
# Theorem 4.1.  On the gridworld ($T = 10^4$, $\delta = 0.1$; the last row is the non-private
# reference):

# %%
def visits_for_bonus_below(cfg, level=1.0):
    """Smallest n (on a fine geometric grid) with b(n) < level."""
    n = cfg.eps_unexplored + np.geomspace(1e-3, 1e9, 20_000)
    return float(n[np.argmax(cfg.bonus(n) < level)])


T_demo = 10_000
for rho in (0.1, 1.0, 10.0, np.sqrt(grid.H * grid.S ** 3 * grid.A / T_demo), np.inf):
    sigma = statistics_sensitivity(grid.H) * np.sqrt(np.log2(T_demo)) / (np.sqrt(2) * rho)
    c = UCBVIConfig.of(grid, T_demo, sigma=sigma)
    print(f"rho = {rho:7.3f}: sigma = {sigma:8.3f}, eps_app(delta/4) = {c.eps_unexplored:9.1f}, "
          f"b(n) < 1 needs n > {visits_for_bonus_below(c):12,.0f} visits of a triple")

# %% [markdown]
# **Edge E9 in action.**  Noisy statistics of 2,000 gridworld episodes, with per-coordinate noise of
# standard deviation $\sigma\sqrt{\lceil\log_2 t\rceil}$ (what a prefix sum of that many tree nodes
# carries; the tree itself comes with chapter B2): many $\tilde N$ are negative and explored rows of
# $\tilde P$ are not distributions, yet the planner returns a valid greedy policy and values in
# $[0, H-h]$.  `stabilize=True` changes the estimates (here: hardly the policy), not the
# guarantees the cap already gives.  (The statistics come from 2,000 users each playing its own
# random policy; the bonus is scaled by 0.05 here so that the paper's large bonus does not
# saturate every value at its cap and hide the differences — see [chapter B6b](06b_ucbvi_regret.ipynb), section 2.)

# %%
t_noisy = 2000
explore = rng.integers(0, grid.A, size=(t_noisy, grid.H, grid.S))          # one random policy per user
stats_sum = lay.accumulate(*lay.sparse(rollout_batch(grid, explore, np.arange(t_noisy), seed=USER_SEED)))
exact_policy = plan_from_statistics(stats_sum, UCBVIConfig.of(grid, 10_000, bonus_scale=0.05)).policy
for sigma in (0.0, 0.5, 5.0):
    noisy = stats_sum + sigma * np.sqrt(np.ceil(np.log2(t_noisy))) * rng.normal(size=lay.d)
    N_t, R_t, Nsas_t = lay.unpack(noisy)
    for stabilize in (False, True):
        c = UCBVIConfig.of(grid, 10_000, sigma=sigma, stabilize=stabilize, bonus_scale=0.05)
        plan = plan_from_statistics(noisy, c)
        P_t = Nsas_t[plan.explored] / N_t[plan.explored][:, None]           # the raw (unstabilised) P~ rows
        improper = np.mean(np.any(P_t < 0, axis=1) | (np.abs(P_t.sum(1) - 1) > 1e-9)) if len(P_t) else 0.0
        assert np.all(plan.V[:-1] >= 0) and np.all(plan.V[:-1] <= (grid.H - np.arange(grid.H))[:, None])
        print(f"sigma={sigma:3.1f} stabilize={stabilize!s:5}: N~ < 0 for {np.mean(N_t < 0):5.1%} of triples, "
              f"explored {plan.explored.mean():5.1%}, raw P~ rows not a distribution {improper:6.1%}, "
              f"policy = exact-count policy on {np.mean(plan.policy == exact_policy):5.1%} of (h, s)")

# %% [markdown]
# **The bonus kinds at a glance.**  Bonus at step $h = 0$ on the gridworld ($T = 2000$, $\delta = 0.1$,
# exact counts; `bernstein` with the largest variance a value in $[0, H-1]$ can have, $(H-1)^2/4$),
# and the visits a triple needs before its bonus drops below 1.  The checks: `paper` is `bonus(n)`
# bit for bit; every bonus decreases in $n$; the tight Hoeffding bonus sits below the paper's.

# %%
T_glance, n_glance = 2000, np.array([1.0, 10.0, 100.0, 1000.0])
n_fine = np.geomspace(1, 1e6, 4001)
for kind in BONUS_KINDS:
    c = UCBVIConfig.of(grid, T_glance, bonus_kind=kind)
    top = np.full(n_fine.shape, (grid.H - 1) ** 2 / 4)
    b_fine = c.step_bonus(0, n_fine, top)
    assert np.all(np.diff(b_fine) <= 0) and b_fine[-1] < b_fine[0]
    print(f"{kind:10s} b_0(n) at n = 1, 10, 100, 1000: {np.round(c.step_bonus(0, n_glance, top[:4]), 2)}; "
          f"below 1 from n = {n_fine[np.argmax(b_fine < 1)]:,.0f}")
paper_c, hoeff_c = UCBVIConfig.of(grid, T_glance), UCBVIConfig.of(grid, T_glance, bonus_kind="hoeffding")
assert all(np.array_equal(paper_c.step_bonus(h, n_fine), paper_c.bonus(n_fine)) for h in range(grid.H))
ratio = hoeff_c.step_bonus(0, n_fine) / paper_c.bonus(n_fine)
print(f"hoeffding / paper at h = 0: {ratio.max():.3f}")
assert np.all(ratio < 1)

# %% [markdown]
# ## Summary
# - `StatsLayout` (statistics of Paper B §4: `d = 2SAH + S^2AH`, dense and sparse forms, at most $3H$
#   non-zeros), `statistics_sensitivity` ($B = \sqrt{3H}$ against the zero dummy, $\sqrt{6H}$
#   otherwise; edge E8) and the environment oracle `episode_statistics` live in
#   `bandit_unlearning.rl.ucbvi`.
# - The planner of Algorithm 4: `UCBVIConfig` (`eps_app`, `eps_unexplored`, `bonus`),
#   `plan_from_statistics(u, config)` / `ucbvi_update`, and its core `optimistic_value_iteration`.
#   It matched a literal loop implementation of Paper B Algorithm 4 with and without noise and `stabilize`
#   (edge E9: off by default), and the check rejected a planner without the cap.
# - Bonuses for practice (erratum E15): `bonus_kind` = `"paper"` (default), `"hoeffding"` (tight,
#   optimistic: the paper's guarantee), `"bernstein"` and `"simplified"` (rlberry's default; neither
#   carries a guarantee as implemented), and `pooled=True` for stationary MDPs; `step_bonus(h, n,
#   next_variance)` is what the planner calls at every step.  Which to set: [chapter B7b, section 4](07b_stable_ucbvi_regret.ipynb#4-what-to-set-in-practice).
# - Next, [chapter B6b](06b_ucbvi_regret.ipynb): the planner with $\sigma = 0$ as a fast driver
#   (`run_ucbvi`), optimism, and the regret of the non-private reference.  TV-stable UCB-VI
#   (chapter B7) is this planner fed with the tree's noisy prefix sums and
#   $\sigma = B\sqrt{\log_2 T}/(\sqrt2\rho)$.
