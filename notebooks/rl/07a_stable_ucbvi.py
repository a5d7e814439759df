# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.stable
# ---

# %% [markdown]
# # Chapter B7a — TV-stable UCB-VI: Algorithm 4 on the binary tree, and Theorem 4.1
#
# *Paper B, Section 4: Algorithm 4 (TV-stable UCB-VI) as an instance of the prefix-sum learner of
# chapter B3a, its stability and regret (Theorem 4.1), and the choice $\rho = \sqrt{HS^3A/T}$.
# Exports `bandit_unlearning.rl.stable` (the learner).*
#
# Every piece exists already: the binary tree mechanism and its calibration (chapter B2), the
# generic prefix-sum learner with exact unlearning (chapter B3a), the tabular MDPs and replayable
# users (chapter B5), the episode statistics and the planner of Algorithm 4 (chapter B6).  This
# chapter plugs them together:
# $$
# \underbrace{x_t = \mathrm{EO}_t(z_t; \pi_t)}_{\text{play episode } t,\ \text{statistics of Paper B §4}}
# \;\longrightarrow\; \text{tree} \;\longrightarrow\; \tilde u_t
# \;\longrightarrow\; \underbrace{\pi_{t+1} = \texttt{ucbvi\_update}(\tilde u_t, \text{config})}_{\text{optimistic VI on noisy counts}},
# $$
# states Theorem 4.1, sketches why it holds, and checks the construction: the oracle's statistics,
# zero noise against UCB-VI, and what $\sigma$ and the exploration threshold mean at a given $\rho$.
# [Chapter B7b](07b_stable_ucbvi_regret.ipynb) measures the regret of the resulting learner —
# honestly, at the sizes a notebook affords, where the paper's bonus and the privacy noise keep the
# learner in a long **burn-in** (linear regret) — and says what to set in practice.  Chapter B8
# checks that deletions from this learner are exact; chapter B9 looks at the lower bound.

# %%
import dataclasses
import math

import numpy as np

from bandit_unlearning.exact.learner import train, ZERO_USER
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.exact.tree import path_length, path_tv, sigma_exact, sigma_paper
from bandit_unlearning.rl.envs import gridworld, riverswim
from bandit_unlearning.rl.mdp import regret
from bandit_unlearning.rl.ucbvi import (
    StatsLayout, UCBVIConfig, episode_statistics, run_ucbvi, statistics_sensitivity,
)

rng = np.random.default_rng(20260607)
USER_SEED = int(rng.integers(2**63))        # the population of replayable users of this chapter

# %% [markdown]
# ## 1. Statement (Paper B Algorithm 4 and Theorem 4.1)
#
# **Algorithm 4 (TV-stable UCB-VI).**  Episodes $t = 1, \dots, T$ are users.  Before episode $t$, read
# the noisy counts $\tilde N_h(s,a)$, $\tilde N_h(s,a,s')$ and reward sums $\tilde R_h(s,a)$ from the
# tree's noisy prefix sum $\tilde u_{t-1}$ of the statistics of episodes $1..t-1$ (per-node noise
# $\mathcal N(0, \sigma^2 I_d)$, $d = 2SAH + S^2AH$); with $\varepsilon = \varepsilon_{app}(\delta/4)$
# treat pairs with $\tilde N_h(s,a) \le \varepsilon$ as unexplored, plan optimistically with the bonus
# $$
# b(n) = (H+1)\sqrt{\frac{\ln(8SAHT/\delta)}{2(n - \varepsilon)}} + \frac{\varepsilon}{n}\big(1 + 2H(\sqrt S + 1)\big),
# $$
# cap the values at the horizon's maximum, play the greedy policy, and add the episode's
# statistics to the tree.  (All of this is `ucbvi_update` of chapter B6.)
#
# **Theorem 4.1.**  With $\sigma = B\sqrt{\log_2 T}/(\sqrt 2\rho)$ and $B = \sqrt{3H}$, the algorithm is
# $\rho$-TV-stable, and with probability at least $1 - \delta$
# $$
# R(T) \le \Big(H^3S^2A + H^2\sqrt{SAT} + \frac{H^{2.5}S^2A}{\rho}\Big)\,\mathrm{polylog}(T, H, S, A, 1/\delta).
# $$
# Choosing $\rho = \sqrt{HS^3A/T}$ makes the third term equal to the second, so stability costs no
# extra regret order; the expected cost of one deletion is then about a $\rho\sqrt{\ln T}$ fraction of
# retraining (Theorem 3.3), i.e. $\approx \rho T = \sqrt{HS^3AT}$ episodes instead of $T$.
#
# ## 2. Derivation sketch
#
# **Stability.**  Against the zero dummy (the project's deletion model, Paper B Definition 2.1), one episode's
# statistics have $\lVert x_t - 0\rVert_2 = \sqrt{2H + \sum_h r_h^2} \le \sqrt{3H} = B$ (edge E8; between
# two arbitrary users it would be $\sqrt{6H}$).  Chapter B2b showed that the tree with the paper's
# $\sigma$ is $\rho$-TV-stable for any adaptively chosen statistics of sensitivity $B$ (the $\le
# \lfloor\log_2T\rfloor + 1$ path nodes of a leaf are an adaptive composition of Gaussian mechanisms;
# valid for $T \ge 2$), and the policies are a post-processing of the noisy node values.  So the
# whole sequence $\pi_1, \dots, \pi_{T+1}$ is $\rho$-TV-stable.  Exactness of unlearning (chapter B8) does
# not depend on $\sigma$ at all.
#
# **Accuracy.**  Chapter B2a: with probability $\ge 1 - \delta/4$ every coordinate of every noisy
# prefix sum is within $\varepsilon = \varepsilon_{app}(\delta/4)$ of the exact one (for $T \ge 3$).  On
# that event a pair with $\tilde N > \varepsilon$ has $N \ge \tilde N - \varepsilon > 0$ real samples, and
# a pair with $\tilde N \le \varepsilon$ has at most $2\varepsilon$.
#
# **Optimism.**  For an explored pair the error of $\tilde r + \tilde P V^\star_{h+1}$ has two parts:
# the statistical error of the empirical $\hat r + \hat PV^\star_{h+1}$ from $N \ge n - \varepsilon$
# samples of a variable in $[0, H]$ — Hoeffding, the first term of $b(n)$ — and the noise error:
# $\varepsilon/n$ for the reward and $2H(\sqrt S + 1)\varepsilon/n$ for the noisy transition counts applied to a
# value vector in $[0, H]^S$ plus the noisy normaliser (we do not re-derive the paper's constant
# here).  So $\bar Q_h \ge Q^\star_h$ and the regret is at most the sum over the visited triples of
# the optimism gaps, i.e. of bonuses (the standard UCB-VI recursion), plus the cost of unexplored visits.
#
# **Where the three terms come from** (polylogarithmic factors dropped throughout):
# - Hoeffding part of the bonus: $\sum_{\text{visits}} H\sqrt{1/n} \le H\sum_{h,s,a} 2\sqrt{N_T(h,s,a)}
#   \le 2H\sqrt{SAH\cdot TH} = 2H^2\sqrt{SAT}$ — the $H^2\sqrt{SAT}$ term;
# - noise part of the bonus: $\sum_{\text{visits}} H\sqrt S\,\varepsilon/n \le H\sqrt S\,\varepsilon\cdot SAH\ln T$,
#   and unexplored visits: at most $2\varepsilon$ per triple, each costing at most $H$ per episode, so
#   $\le 2SAH^2\varepsilon$.  With $\varepsilon \approx \sigma\cdot\mathrm{polylog}$ and
#   $\sigma \approx \sqrt{3H}/\rho\cdot\mathrm{polylog}$ both are $\approx S^{1.5}AH^{2.5}/\rho$ — within the paper's
#   $H^{2.5}S^2A/\rho$ (our rough count saves a $\sqrt S$; we state the paper's);
# - the lower-order $H^3S^2A$ term comes from the correction terms of the UCB-VI recursion
#   ($\hat P - P$ applied to the data-dependent $\bar V - V^\star$), as in Azar et al. (2017).
#
# The mechanism behind the $1/\rho$ term is visible in practice: **every** triple must be visited
# about $\varepsilon \propto 1/\rho$ times before the learner may treat it as explored, and during
# that burn-in the learner explores blindly.
#
# ## 3. Implementation
#
# `stable_ucbvi(mdp, T, rho)` returns a `PrefixSumLearner` (chapter B3) with
# - **users** `EpisodeUser(key)`: a user is its own 64-bit key of chapter B5's counter-based
#   generator (SplitMix64; the uniform of $(\text{stream}, h, s, a)$ is the output number
#   $((\text{stream}\cdot H + h)S + s)A + a$ of the stream seeded with the key), so the same user
#   answers the same $(h, s, a)$ the same way under every policy (chapter B5);
# - **oracle** `EpisodeOracle(mdp)`: `oracle(user, t, policy)` plays the user's episode and returns
#   its dense statistics vector $x_t \in \mathbb R^d$ (the framework's trees take dense vectors);
#   `oracle.sparse(user, t, policy)` returns the same statistics as `(indices [3H], values [3H])` —
#   the form a memory-light tree stores: a tree that wants it can read the $\le 3H$ non-zeros
#   of $x_t$ back with `np.flatnonzero`, or a sparse-aware framework can call `oracle.sparse` directly;
# - **update** `PolicyUpdate(config)`: `ucbvi_update(u_tilde, config)` of chapter B6 with
#   `config.sigma` equal to the tree's $\sigma$ (so $\varepsilon_{app}$ and the bonus see the noise
#   actually added), returned read-only;
# - $w_1$ = the policy planned from zero statistics (every pair unexplored: action 0 everywhere);
# - $\sigma$ from $\rho$ by `stable_sigma(rho, H, T, calibration)`: `"paper"` is
#   $\sigma_{paper}(\rho, B, T)$, `"exact"` is chapter B2a's $\sigma_{exact}$ (the smallest $\sigma$ with
#   TV $= \rho$; needs $\rho < 1$); $B = \sqrt{3H}$ is recorded as `learner.B` (edge E8);
#   `rho=math.inf` gives $\sigma = 0$ — non-private UCB-VI run through the same tree;
# - `tree_factory` is passed through to the framework; the default is the memory-light `LightTree`
#   of chapter B10, which gives the dense `BinaryTree`'s outputs bit for bit (so every number of this
#   chapter is the same with either tree) in $O(\text{non-zeros} + T + d\log T)$ memory;
# - the other UCB-VI options (`delta`, `bonus_scale`, `stabilize`) are those of `UCBVIConfig`; the
#   defaults are the paper's algorithm.

# %% tags=["export"]
"""TV-stable UCB-VI (Paper B, Algorithm 4; Theorem 4.1) as a prefix-sum learner (chapter B7).

``stable_ucbvi(mdp, T, rho)`` builds a ``PrefixSumLearner`` of ``bandit_unlearning.exact.learner``:
the oracle ``EpisodeOracle`` plays one episode of a replayable user (erratum E10) and returns its
statistics (Paper B §4, dense ``d = 2SAH + S^2AH``; ``EpisodeOracle.sparse`` gives the ``3H``
non-zeros); the update ``PolicyUpdate`` is ``ucbvi_update`` of ``bandit_unlearning.rl.ucbvi`` on the
tree's noisy prefix sum, with the tree's sigma in its config.  ``train``, ``unlearn`` (Algorithm 3)
and ``verify`` of the framework apply unchanged.  Sensitivity ``B = sqrt(3H)`` against the zero
dummy user (erratum E8).

Users are ``EpisodeUser(key)``: each its own 64-bit key, kept only in the run's ``users`` (the oracle
holds no seed), so a deleted user cannot be replayed from the unlearned run.  ``episode_users(T)``
draws independent keys from OS entropy (``episode_users(T, rng=rng)``: derived one-way from a seeded
generator, a reproducible opt-in); ``population_users(mdp, seed, T)`` reproduces the population
``seed`` of chapter B5 (research only: the seed rebuilds every user).
"""

import hashlib
import math
import secrets
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from bandit_unlearning.checks import check_count, as_real_array, as_generator, check_choice, check_instance, check_real
from bandit_unlearning.exact.learner import ZERO_USER, PrefixSumLearner, Run
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int, check_positive
from bandit_unlearning.exact.tree import sigma_exact, sigma_paper
from bandit_unlearning.rl.mdp import TabularMDP, check_policy, regret
from bandit_unlearning.rl.ucbvi import StatsLayout, UCBVIConfig, statistics_sensitivity, ucbvi_update
from bandit_unlearning.shapes import check_broadcast
from bandit_unlearning.kernel import GAMMA, MASK, N_STREAMS, rollout_lists
from bandit_unlearning.rl.users import check_reward_noise, check_seed

SIGMA_CALIBRATIONS = ("paper", "exact")          # the tree's sigma rules (chapter B2a): sigma_paper, sigma_exact


def _check_mdp(mdp) -> TabularMDP:
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
    return mdp


def stable_sigma(rho: float, H: int, T: int, calibration: str = "paper") -> float:
    """Tree noise for rho-TV-stability of T episodes with ``B = sqrt(3H)`` (zero dummy, erratum E8):
    ``sigma_paper(rho, B, T)`` (Theorem 4.1; needs ``T >= 2``) or ``sigma_exact(rho, B, T)``
    (needs ``rho < 1``).  ``rho = inf`` gives 0 (non-private).

    Parameters
    ----------
    rho : float
        The TV-stability level, ``> 0`` (``math.inf``: non-private).
    H : int
        The horizon, ``>= 1``.
    T : int
        The number of episodes, ``>= 1``.
    calibration : str
        ``"paper"`` or ``"exact"``.

    Returns
    -------
    float
        The tree's per-node noise standard deviation.
    """
    check_choice(calibration, "calibration", SIGMA_CALIBRATIONS)
    H, T = check_int(H, "H", 1), check_int(T, "T", 1)
    if isinstance(rho, (int, float, np.integer, np.floating)) and not isinstance(rho, bool) and rho == math.inf:
        return 0.0
    rho = check_positive(rho, "rho")
    B = statistics_sensitivity(H)
    return sigma_paper(rho, B, T) if calibration == "paper" else sigma_exact(rho, B, T)


# %% [markdown]
# Users.  **Where a user's key lives, and why not in a seed.**  Replayability means that whoever holds a
# user's key can replay the user's episode under any policy — for a deleted user, regenerate
# exactly the statistics that were unlearned.  So the keys are secrets, and they are kept in one
# place only: `run.users`, one per position.  The oracle holds the MDP and nothing else (no
# population seed), and a deletion replaces the user by the dummy, so nothing reachable from the
# unlearned run — or from its pickle — can rebuild the deleted episode.  Keys are drawn
# independently: `episode_users(T)` takes each from the operating system's entropy (the default);
# `episode_users(T, rng=rng)` derives them one-way (BLAKE2b) from a seeded generator, a reproducible
# opt-in whose seed is then key material.  For comparisons with chapters B5–B6,
# `population_users(mdp, seed, T)` returns users $0..T-1$ of chapter B5's population `seed` — the
# same episodes as `rollout(mdp, pi, i, seed)` and `run_ucbvi(mdp, T, seed=seed)` — because user
# $i$'s stream is the population stream shifted by $i \cdot 3HSA$ outputs (key
# $\text{seed} + 3HSA\,i\,\gamma \bmod 2^{64}$, $\gamma$ SplitMix64's increment).  That is research
# only: one such key and its position give the seed, and the seed every user, deleted ones included.
# This chapter and the next use population users (seeded, so that their outputs can be checked).

# %% tags=["export"]
@dataclass(frozen=True)
class EpisodeUser:
    """A replayable user of an episodic MDP: its own 64-bit ``key`` of SplitMix64.  The uniform the
    user draws at ``(stream, h, s, a)`` is output number ``((stream*H + h)*S + s)*A + a`` of
    SplitMix64 seeded with ``key`` (chapter B5's rule for user 0 of population ``key``).  The key is
    the user's secret -- whoever holds it replays the user's episodes -- so ``repr`` hides it.

    Parameters
    ----------
    key : int
        In ``[0, 2**64)``.
    """

    key: int

    def __post_init__(self):
        key = self.key
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"an EpisodeUser key must be an integer, got {type(key).__name__}")
        if not 0 <= key < 2**64:
            raise ValueError(f"an EpisodeUser key must be an integer in [0, 2**64), got {key!r}")
        object.__setattr__(self, "key", int(key))

    def __repr__(self) -> str:
        return "EpisodeUser(<key hidden>)"


def _derived_keys(rng: np.random.Generator, n: int) -> list:
    """``n`` 64-bit keys, each the BLAKE2b hash of one fresh raw word of ``rng`` (one-way: the keys
    reveal nothing about the generator's state)."""
    raw = rng.bit_generator.random_raw(n).astype("<u8").tobytes()
    return [int.from_bytes(hashlib.blake2b(raw[8 * i:8 * i + 8], digest_size=8, person=b"episode user").digest(),
                           "little") for i in range(n)]


def episode_users(T: int, *, rng: np.random.Generator | None = None) -> tuple:
    """``T`` independent users.  ``rng=None`` (default): keys from the operating system's entropy
    (``secrets``), which nothing can regenerate.  A generator (or an int seed >= 0, by the package's
    rule ``checks.as_generator``): keys derived one-way from its raw words (``T`` of them) --
    reproducible, an opt-in whose seed is key material.

    Parameters
    ----------
    T : int
        The number of users, ``>= 0``.
    rng : numpy.random.Generator or int, optional
        Derive the keys from it (reproducible); ``None``: the operating system's entropy.

    Returns
    -------
    tuple of EpisodeUser
    """
    T = check_count(T, "T", 0)
    if rng is None:
        return tuple(EpisodeUser(secrets.randbits(64)) for _ in range(T))
    return tuple(EpisodeUser(k) for k in _derived_keys(as_generator(rng, "rng"), T))


def population_users(mdp: TabularMDP, T: int, *, seed: int, start: int = 0) -> tuple:
    """Users ``start .. start+T-1`` of chapter B5's replayable population ``seed``: the same episodes
    as ``rollout(mdp, pi, i, seed)`` and ``run_ucbvi(mdp, T, seed=seed)`` (user ``i``'s key is
    ``seed + 3HSA i gamma mod 2^64``).  For comparisons and reproducible research only: any key and
    its position give the seed, and the seed every user of the population, deleted ones included.

    Parameters
    ----------
    mdp : TabularMDP
        The environment (its ``H, S, A`` fix the stride between users).
    T : int
        The number of users, ``>= 0``.
    seed : int
        The population seed.
    start : int
        The first user's index, ``>= 0``.

    Returns
    -------
    tuple of EpisodeUser
    """
    mdp, seed = _check_mdp(mdp), check_seed(seed)
    T, start = check_count(T, "T", 0), check_int(start, "start", 0)
    stride = N_STREAMS * mdp.H * mdp.S * mdp.A * GAMMA
    return tuple(EpisodeUser((seed + i * stride) & MASK) for i in range(start, start + T))


# %% [markdown]
# The oracle and the update of Algorithm 4 (section 1): `EpisodeOracle` plays a user's episode under
# the current policy and returns its statistics $x_t$ (dense, or sparse with `oracle.sparse`);
# `PolicyUpdate` plans the next policy from the noisy prefix sum with chapter B6's `ucbvi_update`.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class EpisodeOracle:
    """The environment oracle ``EO_t(z; pi)`` of Algorithm 1 for RL (Paper B §4).

    A user is an ``EpisodeUser`` (its own key; the oracle holds no seed);
    ``oracle(user, t, policy)`` plays one episode of the deterministic ``policy [H, S]`` and returns
    its statistics as a fresh dense vector of length ``d = 2SAH + S^2AH`` (layout of ``StatsLayout``);
    ``sparse(user, t, policy)`` returns them as ``(indices [3H], values [3H])``.  ``ZERO_USER`` (the
    dummy of a deletion) has zero statistics.  The step ``t`` is not used: the episode depends on
    the user and the policy only.

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    reward_noise : str
        ``"bernoulli"`` (rewards drawn) or ``"mean"`` (mean rewards).
    """

    mdp: TabularMDP
    reward_noise: str = "bernoulli"

    def __post_init__(self):
        mdp = _check_mdp(self.mdp)
        check_reward_noise(self.reward_noise)
        # cached sizes for the per-episode hot path (not dataclass fields)
        object.__setattr__(self, "_n", mdp.H * mdp.S * mdp.A)
        object.__setattr__(self, "_d", StatsLayout.of(mdp).d)
        object.__setattr__(self, "_bernoulli", self.reward_noise == "bernoulli")

    @property
    def layout(self) -> StatsLayout:
        return StatsLayout.of(self.mdp)

    @property
    def d(self) -> int:
        return self._d

    def _policy_rows(self, policy) -> list:
        mdp = self.mdp
        if (isinstance(policy, np.ndarray) and policy.shape == (mdp.H, mdp.S) and policy.dtype.kind in "iu"
                and policy.min() >= 0 and policy.max() < mdp.A):
            return policy.tolist()
        return check_policy(mdp, policy).tolist()          # raises a clear ValueError

    @staticmethod
    def _key(user) -> int:
        if not isinstance(user, EpisodeUser):
            raise TypeError(f"a user must be an EpisodeUser (or ZERO_USER), got {type(user).__name__}")
        return user.key

    def sparse(self, user, t: int, policy):
        """Statistics of one episode as ``(indices [3H] int64, values [3H])``: visits (value 1),
        rewards (value ``r_h``), transitions (value 1), in ``StatsLayout.sparse``'s order; empty
        arrays for ``ZERO_USER``.

        Parameters
        ----------
        user : EpisodeUser
            The user (or ``ZERO_USER``).
        t : int
            The step, ``>= 1`` (not used by the episode).
        policy : array_like
            Deterministic policy ``[H, S]``.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            ``indices [3H]`` and ``values [3H]``.
        """
        if type(t) is not int or t < 1:
            check_int(t, "t", 1)
        if user is ZERO_USER:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        rows, key = self._policy_rows(policy), self._key(user)
        states, actions, rewards = rollout_lists(self.mdp, rows, 0, key, self._bernoulli)
        S, A, n = self.mdp.S, self.mdp.A, self._n
        k = [(h * S + s) * A + a for h, (s, a) in enumerate(zip(states, actions))]
        idx = k + [n + i for i in k] + [2 * n + i * S + s2 for i, s2 in zip(k, states[1:])]
        ones = [1.0] * len(k)
        return np.array(idx, dtype=np.int64), np.array(ones + rewards + ones)


# %% [markdown]
# Called on a user, the oracle returns the dense statistic $x_t$ (the sparse one, scattered).

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class  # noqa: E402


@add_to_class(EpisodeOracle)
def __call__(self, user, t: int, policy) -> np.ndarray:
    """The episode's statistics as a fresh dense vector ``[d]`` (zeros for ``ZERO_USER``).

    Parameters
    ----------
    user : EpisodeUser
        The user (or ``ZERO_USER``).
    t : int
        The step, ``>= 1`` (not used by the episode).
    policy : array_like
        Deterministic policy ``[H, S]``.

    Returns
    -------
    numpy.ndarray
    """
    if type(t) is not int or t < 1:
        check_int(t, "t", 1)
    x = np.zeros(self._d)
    if user is ZERO_USER:
        return x
    idx, val = self.sparse(user, t, policy)
    x[idx] = val                                        # indices are distinct (one (s, a) per step)
    return x

# %% [markdown]
# `PolicyUpdate` is Algorithm 4's update: the planner of chapter B6a on the noisy prefix sum.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class PolicyUpdate:
    """``UPDATE(u~_t, w_{1:t})`` of Algorithm 4: ``ucbvi_update(u_tilde, config)`` (optimistic value
    iteration on the noisy prefix sum, greedy policy, ties to the lowest action), read-only.

    Parameters
    ----------
    config : UCBVIConfig
        The planner's configuration.
    """

    config: UCBVIConfig

    def __post_init__(self):
        if not isinstance(self.config, UCBVIConfig):
            raise TypeError(f"config must be a UCBVIConfig, got {type(self.config).__name__}")

    def __call__(self, u_tilde, t: int, policy) -> np.ndarray:
        """The next policy, planned from the noisy prefix sum.

        Parameters
        ----------
        u_tilde : array_like
            The tree's noisy prefix sum ``[d]``.
        t : int
            The number of episodes summed, ``>= 0``.
        policy : object
            The current model (not used).

        Returns
        -------
        numpy.ndarray
            The policy ``[H, S]``, read-only.
        """
        if type(t) is not int or t < 0:
            check_int(t, "t", 0)
        pi = ucbvi_update(u_tilde, self.config)
        pi.setflags(write=False)
        return pi


# %% [markdown]
# The learner itself, the policies and exact regret of a run, and Theorem 4.1's choice of $\rho$
# and the terms of its bound (section 2).

# %% [markdown]
# **What a run will cost, said before it starts.**  One tree node's statistic has
# $d = 2SAH + S^2AH$ numbers; the light tree keeps the noisy value and the partial sum of each node
# of the current decomposition ($\le \lfloor\log_2(T+1)\rfloor$ nodes) densely, and a step holds about
# two more $d$-vectors (the oracle's statistic, the prefix sum handed to the planner): measured peaks
# (tracemalloc) of 7.1–11.9 $d$-vectors on FrozenLake, FrozenLake8x8, CliffWalking and Taxi ($T$ from
# 8 to 32; a practitioner's Taxi run with $T = 16$, deletions included, peaked at 3.1–3.4 GB, i.e.
# 10.3–11.2), so the estimate is $2\lfloor\log_2(T+1)\rfloor + 4$.  The dense tree stores two
# $d$-vectors per node.  The
# time per episode is linear in $d$ (the node's normals, the sums, the planner): measured 1.4–2.7
# times a probe of the same elementwise work per number, so the estimate is 2.5 probes per number,
# timed on the machine at hand.  For Taxi ($S = 501$, $A = 6$, $H = 25$) that is 37.8 M numbers
# (302 MB) per node, about 3.6 GB for $T = 16$, seconds per episode.  `stable_ucbvi` refuses a learner
# whose estimate exceeds `max_memory` (default `DEFAULT_MAX_MEMORY`, 2 GiB) with an error that gives the
# estimate and names the override (`max_memory=None`, or a larger budget in bytes), and warns with the
# estimate above 256 MiB.

# %% tags=["export"]
DEFAULT_MAX_MEMORY = 2 * 1024**3
_WARN_MEMORY = 256 * 1024**2
_SECONDS_FACTOR = 2.5


@dataclass(frozen=True)
class TrainingCost:
    """An estimate of what training TV-stable UCB-VI costs: ``d`` numbers per tree node statistic,
    ``vector_bytes = 8 d``, ``vectors`` such arrays alive at the peak, ``peak_bytes``, and
    ``seconds_per_episode`` (``None`` unless timed: 2.5 times a probe of the same elementwise work
    per number, on this machine).

    Parameters
    ----------
    name : str
        What is estimated.
    d : int
        Numbers per tree node statistic.
    T : int
        Episodes.
    vector_bytes : int
        Bytes of one ``d``-vector.
    vectors : int
        ``d``-vectors alive at the peak.
    peak_bytes : int
        The estimated peak memory.
    seconds_per_episode : float or None
        The estimated time per episode (``None``: not timed).
    """

    name: str
    d: int
    T: int
    vector_bytes: int
    vectors: int
    peak_bytes: int
    seconds_per_episode: float | None

    def __post_init__(self):
        check_instance(self.name, str, "name")
        for field in ("d", "T", "vector_bytes", "vectors", "peak_bytes"):
            check_int(getattr(self, field), field, 1)
        if self.seconds_per_episode is not None:
            check_real(self.seconds_per_episode, "seconds_per_episode", 0)

    def __str__(self) -> str:
        text = (f"{self.name}: d = {self.d:,} numbers per tree node ({self.vector_bytes / 1e6:,.0f} MB each), "
                f"about {self.vectors} of them at once: {self.peak_bytes / 1e9:,.2f} GB for T = {self.T}")
        if self.seconds_per_episode is not None:
            text += (f"; about {self.seconds_per_episode:.2g} s per episode on this machine "
                     f"({self.seconds_per_episode * self.T:,.0f} s for the run)")
        return text


def _probe_seconds_per_number(n: int = 1 << 18) -> float:
    """Seconds per number of a probe of a step's elementwise work (normals, a sum, a scan), best of 3."""
    g, best = np.random.default_rng(0), math.inf
    for _ in range(3):
        start = time.perf_counter()
        z = g.standard_normal(n)
        z *= 1.5
        w = z + z
        np.flatnonzero(w > 10.0)
        np.isfinite(w).all()
        best = min(best, time.perf_counter() - start)
    return best / n


# %% [markdown]
# `training_cost` puts the estimate together, and `_check_budget` refuses a run above the budget.

# %% tags=["export"]
def training_cost(mdp: TabularMDP, T: int, tree_factory: Callable = LightTree, timed: bool = True) -> TrainingCost:
    """Estimate memory (and, if ``timed``, time per episode) of ``train`` on ``stable_ucbvi(mdp, T, ...)``
    before anything is allocated.  Light tree: ``2 floor(log2(T+1)) + 4`` arrays of ``d`` numbers;
    dense ``BinaryTree``: ``2 (2T - 1) + 4``; another tree factory is estimated as the light tree.

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    T : int
        Episodes, ``>= 1``.
    tree_factory : callable
        The tree class the learner will use.
    timed : bool
        Time a probe of the per-number work on this machine.

    Returns
    -------
    TrainingCost
    """
    mdp = _check_mdp(mdp)
    T = check_int(T, "T", 1)
    check_instance(timed, bool, "timed")
    d = StatsLayout.of(mdp).d
    from bandit_unlearning.exact.tree import BinaryTree
    vectors = 2 * (2 * T - 1) + 4 if tree_factory is BinaryTree else 2 * int(math.floor(math.log2(T + 1))) + 4
    seconds = _SECONDS_FACTOR * _probe_seconds_per_number() * d if timed else None
    return TrainingCost(f"TV-stable UCB-VI on {mdp.name} (S = {mdp.S}, A = {mdp.A}, H = {mdp.H})",
                        d, T, 8 * d, vectors, 8 * d * vectors, seconds)


def _check_budget(mdp: TabularMDP, T: int, tree_factory, max_memory) -> None:
    """Refuse (``ValueError`` naming ``max_memory`` and the estimate) above the budget; warn above 256 MiB."""
    if max_memory is not None:
        max_memory = check_positive(max_memory, "max_memory")
    cost = training_cost(mdp, T, tree_factory, timed=False)
    if max_memory is not None and cost.peak_bytes > max_memory:
        cost = training_cost(mdp, T, tree_factory, timed=True)
        raise ValueError(f"{cost}, above max_memory = {max_memory / 1e9:.2f} GB: pass max_memory=None to run "
                         "anyway, or a larger budget in bytes (or shorten the horizon H or T)")
    if cost.peak_bytes > _WARN_MEMORY:
        warnings.warn(str(training_cost(mdp, T, tree_factory, timed=True)), ResourceWarning, stacklevel=3)


# %% tags=["export"]
def stable_ucbvi(mdp: TabularMDP, T: int, rho: float | None = None, *, sigma: float | None = None,
                 calibration: str = "paper", delta: float = 0.1, bonus_scale: float = 1.0,
                 stabilize: bool = False, reward_noise: str = "bernoulli",
                 tree_factory: Callable = LightTree, bonus_kind: str = "paper",
                 pooled: bool = False, max_memory: float | None = DEFAULT_MAX_MEMORY) -> PrefixSumLearner:
    """TV-stable UCB-VI (Algorithm 4) for ``T`` episodes of ``mdp`` as a ``PrefixSumLearner``.

    Give ``rho`` (``sigma = stable_sigma(rho, H, T, calibration)``; ``rho = math.inf``: sigma 0) or
    ``sigma`` directly (not both).  ``delta``, ``bonus_scale``, ``stabilize``, ``bonus_kind``,
    ``pooled`` are ``UCBVIConfig``'s (defaults: the paper's algorithm); users are ``EpisodeUser``s (``episode_users``,
    ``population_users``) -- the learner holds none of their keys; ``tree_factory(d, sigma, capacity)`` builds the tree
    (default: the memory-light ``LightTree`` of chapter B10, bit-identical to ``BinaryTree``).
    ``max_memory`` (bytes, default ``DEFAULT_MAX_MEMORY`` = 2 GiB; ``None``: no limit): refuse with
    ``ValueError`` when ``training_cost(mdp, T)`` estimates more (the message gives the estimate; a
    ``ResourceWarning`` gives it above 256 MiB).
    ``learner.B = sqrt(3H)`` (erratum E8); ``learner.oracle`` / ``learner.update`` expose the MDP and
    the config.

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    T : int
        Episodes, ``>= 1``.
    rho : float, optional
        TV-stability level (exclusive with ``sigma``).
    sigma : float, optional
        Tree noise, ``>= 0`` (exclusive with ``rho``).
    calibration : str
        ``stable_sigma``'s calibration.
    delta, bonus_scale, stabilize, bonus_kind, pooled
        ``UCBVIConfig``'s fields.
    reward_noise : str
        ``"bernoulli"`` or ``"mean"``.
    tree_factory : callable
        ``tree_factory(d, sigma, capacity)`` builds the tree.
    max_memory : float or None
        Memory budget in bytes (``None``: no limit).

    Returns
    -------
    PrefixSumLearner
    """
    mdp = _check_mdp(mdp)
    T = check_count(T, "T", 1)
    if (rho is None) == (sigma is None):
        raise ValueError("give exactly one of rho (TV-stability level) and sigma (tree noise)")
    if rho is not None:
        sigma = stable_sigma(rho, mdp.H, T, calibration)
    else:
        sigma = check_real(sigma, "sigma", 0)
    if not callable(tree_factory):
        raise TypeError("tree_factory must be callable")
    _check_budget(mdp, T, tree_factory, max_memory)
    config = UCBVIConfig.of(mdp, T, delta=delta, sigma=float(sigma), bonus_scale=bonus_scale, stabilize=stabilize,
                            bonus_kind=bonus_kind, pooled=pooled)
    oracle = EpisodeOracle(mdp, reward_noise)
    update = PolicyUpdate(config)
    w1 = update(np.zeros(config.layout.d), 0, None)
    label = "inf" if rho == math.inf else (f"{rho:g}" if rho is not None else "-")
    return PrefixSumLearner(
        d=config.layout.d, sigma=float(sigma), oracle=oracle, update=update, initial_model=w1,
        B=statistics_sensitivity(mdp.H), tree_factory=tree_factory,
        name=f"TV-stable UCB-VI on {mdp.name} (T = {T}, rho = {label}, sigma = {float(sigma):.4g})",
        check_user=EpisodeOracle._key,
    )


# %% [markdown]
# The policies and the exact regret of a run.

# %% tags=["export"]
def run_policies(run: Run) -> np.ndarray:
    """Policies ``pi_1 .. pi_T`` played in a run, shape ``[T, H, S]`` (at a deleted position: the
    policy the dummy episode met).

    Parameters
    ----------
    run : Run
        A run of ``train``.

    Returns
    -------
    numpy.ndarray
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a Run, got {type(run).__name__}")
    return np.array(run.models[:-1])


def run_regret(run: Run, mdp: TabularMDP | None = None) -> np.ndarray:
    """Per-episode exact expected regret ``V*_1 - V^{pi_t}_1`` (averaged over the initial state) of
    the policies of a run; ``mdp`` defaults to the learner's.

    Parameters
    ----------
    run : Run
        A run of ``train``.
    mdp : TabularMDP, optional
        The environment (default: the learner's).

    Returns
    -------
    numpy.ndarray
        ``[T]`` regrets.
    """
    check_instance(run, Run, "run")
    if mdp is None and not isinstance(run.learner.oracle, EpisodeOracle):
        raise ValueError("run_regret needs mdp for a run whose oracle is not an EpisodeOracle")
    mdp = run.learner.oracle.mdp if mdp is None else _check_mdp(mdp)
    return regret(mdp, run_policies(run))


# %% [markdown]
# Theorem 4.1's choice of $\rho$ and the three terms of its bound.

# %% tags=["export"]
def rho_theorem(S: int, A: int, H: int, T: int) -> float:
    """Theorem 4.1's choice ``rho = sqrt(H S^3 A / T)`` (above 1 when ``T < H S^3 A``: then the
    TV-stability statement is vacuous).

    Parameters
    ----------
    S, A, H, T : int
        States, actions, horizon, episodes (each ``>= 1``).

    Returns
    -------
    float
    """
    S, A, H, T = (check_int(v, n, 1) for v, n in ((S, "S"), (A, "A"), (H, "H"), (T, "T")))
    return float(np.sqrt(H * S**3 * A / T))


def theorem_41_terms(S: int, A: int, H: int, T, rho) -> dict:
    """The three terms of Theorem 4.1's bound, polylog factors dropped (broadcast over ``T`` and
    ``rho``): ``H^3 S^2 A``, ``H^2 sqrt(SAT)`` and ``H^2.5 S^2 A / rho``.

    Parameters
    ----------
    S, A, H : int
        States, actions, horizon (each ``>= 1``).
    T : array_like
        Episodes, ``>= 1``.
    rho : array_like
        TV-stability levels, ``> 0``.

    Returns
    -------
    dict
        ``{term name: numpy.ndarray}``.
    """
    S, A, H = (check_int(v, n, 1) for v, n in ((S, "S"), (A, "A"), (H, "H")))
    T, rho = as_real_array(T, "T"), as_real_array(rho, "rho")
    if np.any(~(T >= 1)):
        raise ValueError("T must be >= 1")
    if np.any(~(rho > 0)):
        raise ValueError("rho must be > 0")
    check_broadcast(T=T, rho=rho)
    lower = np.broadcast_to(float(H**3 * S**2 * A), np.broadcast(T, rho).shape)
    return {"H^3 S^2 A": lower, "H^2 sqrt(SAT)": H**2 * np.sqrt(S * A * T) + 0 * rho,
            "H^2.5 S^2 A / rho": H**2.5 * S**2 * A / rho + 0 * T}


# %%
from bandit_unlearning.rl.stable import *  # noqa: F403  (the module generated from the cell above)

# %% [markdown]
# ## 4. Checks of the construction
#
# **(a) The oracle is the chapter-B6 statistics.**  For random policies and users, `oracle.sparse`
# equals `episode_statistics` (same indices and values, same order) and the dense vector equals
# `StatsLayout.densify` of it; against the zero dummy the shift is $\lVert x_t\rVert \le B = \sqrt{3H}$.
#
# **(b) Zero noise is UCB-VI, exactly.**  With $\rho = \infty$ ($\sigma = 0$) the learner runs the
# framework, the tree and `ucbvi_update` — and must play *exactly* the policies of chapter B6's
# independent incremental driver `run_ucbvi` on the same users: on RiverSwim ($H = 10$, $T = 1500$)
# with the paper's bonus and with `bonus_scale` $= 0.05$, and on the 5x5 gridworld ($H = 10$,
# $T = 150$, bonus $\times 0.05$).  Deterministic, so one run each.  (With the paper's bonus the
# policies hardly move at these $T$ — chapter B6 — which is why the scaled runs are there: they
# make the comparison sensitive.)  The check can fail: an oracle that files the transition under
# $s_h$ instead of $s_{h+1}$ (a plausible indexing slip) plays different policies.

# %%
river, grid = riverswim(horizon=10), gridworld(horizon=10)
for mdp in (river, grid):
    oracle = EpisodeOracle(mdp)
    lay = StatsLayout.of(mdp)
    norms = []
    for i in rng.integers(0, 10**6, size=50):
        pi = rng.integers(0, mdp.A, size=(mdp.H, mdp.S))
        user = population_users(mdp, 1, seed=USER_SEED, start=int(i))[0]      # user i of the population
        idx, val = oracle.sparse(user, 1, pi)
        ref_idx, ref_val = episode_statistics(mdp, pi, int(i), seed=USER_SEED)
        assert np.array_equal(idx, ref_idx) and np.array_equal(val, ref_val)
        x = oracle(user, 1, pi)
        assert np.array_equal(x, lay.densify(idx, val))
        norms.append(np.linalg.norm(x))
    B = statistics_sensitivity(mdp.H)
    assert max(norms) <= B + 1e-12 and np.array_equal(oracle(ZERO_USER, 1, pi), np.zeros(lay.d))
    print(f"{mdp.name:14s} d = {lay.d:6d}: oracle on population users == episode_statistics on 50 episodes; "
          f"max ||x_t|| = {max(norms):.3f} <= B = sqrt(3H) = {B:.3f}")


class TransposedOracle(EpisodeOracle):
    """BROKEN: files the transition of step h under s_h instead of s_{h+1}."""

    def sparse(self, user, t, policy):
        idx, val = super().sparse(user, t, policy)
        S, H, n = self.mdp.S, self.mdp.H, self.mdp.H * self.mdp.S * self.mdp.A
        k = idx[:H]
        s_h = (k // self.mdp.A) % S
        return np.concatenate([idx[:2 * H], 2 * n + k * S + s_h]), val


for mdp, T, scale in ((river, 1500, 1.0), (river, 1500, 0.05), (grid, 150, 0.05)):
    reference = run_ucbvi(mdp, T, seed=USER_SEED, bonus_scale=scale).policies
    learner = stable_ucbvi(mdp, T, math.inf, bonus_scale=scale)
    users = population_users(mdp, T, seed=USER_SEED)
    run = train(learner, users, rng)
    same = np.array_equal(run_policies(run), reference)
    broken_learner = dataclasses.replace(learner, oracle=TransposedOracle(mdp))
    broken_same = np.array_equal(run_policies(train(broken_learner, users, rng)), reference)
    changes = int(np.sum(np.any(reference[1:] != reference[:-1], axis=(1, 2))))
    print(f"{mdp.name:14s} T = {T:4d} bonus x {scale:<4g}: sigma = {learner.sigma:g}, run_ucbvi's policy changes "
          f"{changes:3d}; stable learner == run_ucbvi: {same}; transposed oracle == run_ucbvi: {broken_same}")
    assert same
    if scale != 1.0:
        assert not broken_same

# %% [markdown]
# **Bad input** is refused with a clear error that names the argument and the rule, and a refused
# call changes nothing (the learner and the oracle are immutable; we also check that the generator
# was not advanced).

# %%
from bandit_unlearning.testing.refusals import refused  # noqa: E402


oracle = EpisodeOracle(river)
pi_ok = np.zeros((river.H, river.S), dtype=np.int64)
user3 = population_users(river, 1, seed=USER_SEED, start=3)[0]
state = rng.bit_generator.state
cases = {
    "rho <= 0": lambda: stable_ucbvi(river, 100, 0.0),
    "rho negative": lambda: stable_ucbvi(river, 100, -1.0),
    "both rho and sigma": lambda: stable_ucbvi(river, 100, 1.0, sigma=1.0),
    "neither rho nor sigma": lambda: stable_ucbvi(river, 100),
    "T < 1": lambda: stable_ucbvi(river, 0, 1.0),
    "T = 1 with the paper's calibration": lambda: stable_ucbvi(river, 1, 1.0),
    "exact calibration with rho >= 1": lambda: stable_ucbvi(river, 100, 2.0, calibration="exact"),
    "unknown calibration": lambda: stable_sigma(1.0, 10, 100, "magic"),
    "not an MDP": lambda: stable_ucbvi("riverswim", 100, 1.0),
    "policy of the wrong shape": lambda: oracle(user3, 1, np.zeros((river.S, river.H), dtype=np.int64)),
    "policy with an unknown action": lambda: oracle(user3, 1, np.full((river.H, river.S), river.A)),
    "non-integer policy": lambda: oracle(user3, 1, pi_ok + 0.5),
    "user key < 0": lambda: EpisodeUser(-1),
    "user key >= 2**64": lambda: EpisodeUser(2**64),
    "a position instead of a user": lambda: oracle(3, 1, pi_ok),
    "user that is not a key": lambda: oracle("alice", 1, pi_ok),
    "training on users of another kind": lambda: train(stable_ucbvi(river, 4, 1.0), ["a", "b", "c", "d"], rng),
}
for name, call in cases.items():
    print(f"{name:36s} -> {refused(call)}")
assert rng.bit_generator.state == state
print("nothing changed")

# %% [markdown]
# **(c) Stability level and noise.**  What $\sigma$ and $\varepsilon_{app}(\delta/4)$ mean for the two
# environments ($T = 4000$, $\delta = 0.1$): the exact TV of the tree for a worst-case shift $B$
# (`path_tv`, chapter B2a) is below $\rho$ for the paper's calibration (for $\rho < 1$; above 1 the
# statement is vacuous since TV $\le 1$ always) and equal to it for the exact one; and the number of
# noisy visits $\varepsilon_{app}$ a triple needs before it counts as explored — the burn-in that
# produces the $1/\rho$ term.

# %%
T_TAB = 4000
print(f"{'environment':14s} {'rho':>7s} {'calibration':>11s} {'sigma':>8s} {'path TV (shift B)':>17s} {'eps_app(delta/4)':>16s}")
for mdp in (river, grid):
    B = statistics_sensitivity(mdp.H)
    for rho in (0.1, 0.5, 1.0, 10.0, 100.0):
        for calibration in ("paper", "exact"):
            if calibration == "exact" and rho >= 1:
                continue
            sigma = stable_sigma(rho, mdp.H, T_TAB, calibration)
            tv = path_tv(B, sigma, path_length(T_TAB))
            eps = UCBVIConfig.of(mdp, T_TAB, sigma=sigma).eps_unexplored
            print(f"{mdp.name:14s} {rho:7.1f} {calibration:>11s} {sigma:8.3f} {tv:17.4f} {eps:16.1f}")
            if rho < 1:
                assert tv <= rho + 1e-12 and (calibration == "paper" or abs(tv - rho) < 1e-9)

# %% [markdown]
# ## Summary
# - `bandit_unlearning.rl.stable`: `stable_ucbvi(mdp, T, rho | sigma, calibration, delta, bonus_scale,
#   stabilize, tree_factory)` — TV-stable UCB-VI (Algorithm 4) as a `PrefixSumLearner`, with
#   `EpisodeOracle` (dense statistics; `.sparse` for the $3H$ non-zeros; no seed), `PolicyUpdate`
#   (`ucbvi_update` with the tree's $\sigma$), `stable_sigma` ($B = \sqrt{3H}$, paper or exact
#   calibration), users `EpisodeUser(key)` — `episode_users(T)` (independent keys, OS entropy by
#   default) and `population_users(mdp, seed, T)` (chapter B5's population, research only) —,
#   `run_policies`, `run_regret`, `rho_theorem`, `theorem_41_terms`.
# - Checked: the oracle equals chapter B6's statistics with $\lVert x_t\rVert \le \sqrt{3H}$; with
#   $\sigma = 0$ the learner plays exactly `run_ucbvi`'s policies (three settings), and a transposed
#   oracle is caught; the paper's $\sigma$ gives path TV $\le \rho$, the exact one $= \rho$.
# - [Chapter B7b](07b_stable_ucbvi_regret.ipynb): the regret over $T$ and $\rho$ (Theorem 4.1,
#   measured), the bound's terms, the speed, and what to set in practice.
