# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.rl.batch
# ---

# %% [markdown]
# # Chapter B13 — Many runs at once: a batched engine for (TV-stable) UCB-VI
#
# *Engineering, not a theorem: the experiments of chapters B7b–B9 run the same algorithm many times
# (populations $\times$ $\rho$ $\times$ bonus scales).  This chapter makes independent runs advance
# together along a leading batch axis — one numpy operation per step for all of them — and checks that
# every run of a batch is **bit for bit** the run of the single-run learner of chapters B6–B7a with
# the same users and the same tree generator.  Exports `bandit_unlearning.rl.batch` (the engine) and
# `bandit_unlearning.experiments.rl_batch` (regret curves of many runs, used by `reproduce rl`).*
#
# The single-run learner is `train(stable_ucbvi(...), population_users(...), rng)` (chapter B7a) for
# $\sigma > 0$ and `run_ucbvi` (chapter B6) for $\sigma = 0$.  It stays the oracle: the batch is
# correct exactly when it reproduces it.

# %%
import math
import time

import numpy as np

from bandit_unlearning.exact.learner import train
from bandit_unlearning.exact.tree import n_nodes
from bandit_unlearning.rl.envs import gridworld, riverswim
from bandit_unlearning.rl.stable import population_users, run_policies, stable_sigma, stable_ucbvi
from bandit_unlearning.rl.ucbvi import UCBVIConfig, run_ucbvi

rng = np.random.default_rng(20261201)
SEEDS = [int(s) for s in rng.integers(2**63, size=3)]      # populations of replayable users

# %% [markdown]
# ## 1. What a step of one run does, and what can be shared
#
# Step $t$ of TV-stable UCB-VI (Algorithm 4 on the memory-light tree of chapter B10):
# 1. **plan** $\pi_t$ from $\tilde u_{t-1}$ (estimates, then optimistic value iteration, $H$ steps);
# 2. **roll out** one episode of user $t$ (its SplitMix64 uniforms, chapter B5);
# 3. **store** its sparse statistics $x_t$ ($3H$ non-zeros) as leaf $t$;
# 4. **noise**: the nodes completed at $t$ get keys (BLAKE2b of $3$ raw words of the run's generator
#    each); only the top one, the node $b$ that joins the dyadic decomposition $D(t)$, gets its noise
#    $\sigma z(\text{key}_b)$, $z$ = standard normals of SFC64 seeded with the key; its noisy value is
#    the running sum of its leaves plus that noise;
# 5. $\tilde u_t$ = (partial sum of the earlier nodes of $D(t)$) + (the new noisy value).
#
# Every run of a batch has the same $T$, so the **same step $t$**: the shape of $D(t)$, which levels
# complete, where the new node sits, are common to all runs.  Steps 1–3 and 5 are then one numpy
# operation over the batch each.  For exactness every element must see the same floating-point
# operations as in the single run:
#
# * **planning** — the estimates and the bonus are elementwise (a run's $\varepsilon$, bonus scale and
#   $\ln(8SAHT/\delta)$ broadcast as a column, `paper_bonus` of chapter B6); $\tilde P_h \bar V_{h+1}$ is one
#   stacked `matmul`, which numpy evaluates with the same BLAS matrix-vector kernel as the single
#   run's `np.dot`, slice by slice (checked below, not assumed); the tie rule and the caps are
#   elementwise;
# * **statistics** — a node's clean value is $((0 + x_{l}) + x_{l+1}) + \dots$ in time order (chapter
#   B2's canonical order).  The batch keeps one accumulator per tree level, adds each leaf to all of
#   them (the same left-to-right sums) and clears level $\ell$ when its node completes;
# * **partial sums** — $D(t)$ is common, so one array of partial sums per depth serves all runs.
#
# **The noise, and why it is drawn run by run.**  The noise of a node is a function of its key, and
# the keys come from the run's own generator.  Two facts make this both exact and cheap:
#
# * *Keys up front.*  A tree draws $\nu_2(t) + 1$ keys at step $t$ whatever happens — $3\,N(T)$ raw
#   words in all, $N(T) = 2T - \mathrm{popcount}(T)$ nodes.  The raw stream of a generator does not
#   depend on how it is cut into calls, so one call `random_raw(3 N(T))` per run yields every key's
#   words; only the $T$ keys of the top nodes are hashed (the others never produce noise).
# * *Normals per run.*  $z(\text{key})$ is numpy's ziggurat on an SFC64 stream — a sequential
#   algorithm with data-dependent rejections, so normals of different streams cannot be drawn by one
#   vectorised call (a numpy re-implementation would have to step every stream output by output,
#   far slower than the C loop).  The batch draws `node_noise`'s normals once per noisy run and
#   step: $B$ draws of $d$ normals each, the one part of a step that is not one operation for all
#   runs.  Runs with $\sigma = 0$ draw nothing.  The SFC64 it re-seeds from each key is a local of the
#   `run_batch` call, never a module global (SFC64 runs backwards to its last key; chapter B2a).
#
# With $\sigma = 0$ the single-run oracle is `run_ucbvi` (exact running sums, no tree); the batch keeps
# those sums too and plans such runs from them.

# %% tags=["export"]
"""Many independent runs of (TV-stable) UCB-VI advancing together (chapter B13).

``run_batch(mdp, configs, seeds, rngs)`` runs ``B`` independent learners of one MDP and one ``T``
along a leading batch axis: run ``b`` plays the users ``0 .. T-1`` of population ``seeds[b]``
(``population_users``) with ``configs[b]`` (any ``sigma``, ``bonus_scale``, ``delta``, ``stabilize``)
and tree noise from ``rngs[b]``.  Planning, rollouts, statistics and noisy prefix sums are one numpy
operation per step for all runs; the node noise is drawn run by run from each run's own keys.  Every
run equals, bit for bit, the single-run learner: ``train(stable_ucbvi(...), population_users(...),
rng)`` for ``sigma > 0``, ``run_ucbvi`` for ``sigma = 0`` (chapter B13 checks policies, statistics
and noisy sums).
"""

import hashlib
from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import as_array, as_generator, check_bool, check_instance, check_int
from bandit_unlearning.exact.tree import KEY_WORDS, n_nodes
from bandit_unlearning.kernel import C1, C2, GAMMA, INITIAL, KEY_PERSON, MASK, N_STREAMS, UNIT, BlankSeed
from bandit_unlearning.rl.mdp import TabularMDP
from bandit_unlearning.rl.ucbvi import PLANNED_BONUS_KINDS, Q_TIE_TOLERANCE, StatsLayout, UCBVIConfig, paper_bonus_unchecked
from bandit_unlearning.rl.users import (
    Trajectory, cdf_tables, check_reward_noise, check_seed,
)

MAX_BATCH_FLOATS = 2 * 10**8      # floats the level accumulators and partial sums may hold (1.6 GB each)


def _top_node_keys(rng: np.random.Generator, T: int) -> np.ndarray:
    """``[T, KEY_WORDS]``: the key of the node joining ``D(t)`` at each step ``t = 1..T``, as a tree
    fed by ``rng`` draws it (``draw_node_keys`` of ``nu_2(t) + 1`` keys per step): all ``3 N(T)`` raw
    words in one call, only the top node's words hashed."""
    width = 8 * KEY_WORDS
    raw = rng.bit_generator.random_raw(KEY_WORDS * n_nodes(T)).astype("<u8").tobytes()
    digests = []
    for t in range(1, T + 1):
        p = 2 * (t - 1) - (t - 1).bit_count() + (t & -t).bit_length() - 1    # post-order position of the top node
        digests.append(hashlib.blake2b(raw[p * width:(p + 1) * width], digest_size=width, person=KEY_PERSON).digest())
    return np.frombuffer(b"".join(digests), dtype="<u8").astype(np.uint64).reshape(T, KEY_WORDS)


def _normal_source() -> tuple:
    """``(SFC64, its Generator, a state dict)`` for one ``run_batch`` call, re-seeded from each key in
    turn.  A local of the call, never a module global: SFC64 runs backwards, so a generator kept after
    the call would give the last node key away (chapter B2a, *no secret outlives the call*)."""
    bits = np.random.SFC64(BlankSeed())
    return bits, np.random.Generator(bits), {"bit_generator": "SFC64", "has_uint32": 0, "uinteger": 0,
                                             "state": {"state": None}}


def _sfc64_states(keys: np.ndarray) -> np.ndarray:
    """``[T, 4]`` SFC64 states ``(a, b, c, 1)`` of node keys ``[T, 3]`` (how numpy seeds SFC64)."""
    return np.column_stack([keys, np.ones(len(keys), dtype=np.uint64)])


def _standard_normal(source: tuple, state: np.ndarray, out: np.ndarray) -> None:
    """``node_noise(key, d, 1)`` into ``out [d]`` from the key's SFC64 ``state`` (12 outputs discarded,
    then ``d`` standard normals), with the call's ``source`` (``_normal_source``); ``node_noise``
    multiplies them by sigma."""
    bits, normals, template = source
    template["state"]["state"] = state
    bits.state = template
    bits.random_raw(12)
    normals.standard_normal(out=out)


def _uniforms(keys: np.ndarray, cell) -> np.ndarray:
    """Output number ``cell`` of SplitMix64 seeded with each of ``keys`` (uint64), top 53 bits as a
    uniform -- ``kernel.splitmix64_uniform`` over arrays (uint64 arithmetic wraps like ``& MASK``)."""
    z = keys + (np.array(cell, dtype=np.uint64, ndmin=1) + np.uint64(1)) * np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(C2)
    return ((z ^ (z >> np.uint64(31))) >> np.uint64(11)).astype(float) * UNIT


# %% [markdown]
# The rollout of all runs: user $t$ of population `seed` has the key `seed + 3HSA t γ` (mod $2^{64}$,
# `population_users`), and its uniform for `(stream, h, s, a)` is SplitMix64 output
# `((stream H + h) S + s) A + a` of that key — one vectorised evaluation per step for all runs.  The
# next state is the inverse-CDF draw on the plateau-fixed CDF tables of chapter B5 (the count of CDF
# entries $\le u$ equals the scalar rollout's `bisect` on the support).

# %% tags=["export"]
class _Tables:
    """Per-MDP arrays of the batched rollout: CDFs ``[H, S*A, S]``, mean rewards ``[H, S*A]``, initial CDF."""

    def __init__(self, mdp: TabularMDP):
        H, S, A = mdp.H, mdp.S, mdp.A
        self.cdf = np.ascontiguousarray(cdf_tables(mdp)).reshape(H, S * A, S)
        self.rewards = np.ascontiguousarray(mdp.rewards).reshape(H, S * A)
        init = np.cumsum(mdp.initial)
        self.init_cdf = np.where(init >= init[-1], 1.0, init)
        self.stride = np.uint64((N_STREAMS * H * S * A * GAMMA) & MASK)
        hsa = H * S * A                                        # cells read: streams 0, 1 and the initial one
        self.cells = np.concatenate([np.arange(2 * hsa), [INITIAL * hsa]]).astype(np.uint64)


def _rollout(mdp: TabularMDP, tables: _Tables, policies: np.ndarray, keys: np.ndarray, bernoulli: bool):
    """One episode per run: ``policies [B, H, S]``, user ``keys [B]`` (uint64) -> states ``[B, H+1]``,
    actions ``[B, H]``, rewards ``[B, H]``; the draws of ``kernel.rollout_lists`` for each run.  The
    uniforms are counter-based, so all the cells an episode may read (streams 0 and 1, and the
    initial cell) are evaluated at once; each step then picks its two."""
    B, H, S, A = len(keys), mdp.H, mdp.S, mdp.A
    hsa = H * S * A
    U = _uniforms(keys[:, None], tables.cells[None, :])    # [B, 2HSA + 1]
    rows = np.arange(B)
    states, actions = np.empty((B, H + 1), dtype=np.int64), np.empty((B, H), dtype=np.int64)
    rewards = np.empty((B, H))
    s = (tables.init_cdf[None, :] <= U[:, -1:]).sum(axis=1)
    states[:, 0] = s
    for h in range(H):
        a = policies[rows, h, s]
        sa = s * A + a
        cell = h * S * A + sa                                  # stream 0 (transitions); stream 1 at hsa + cell
        rewards[:, h] = (U[rows, hsa + cell] < tables.rewards[h, sa]) if bernoulli else tables.rewards[h, sa]
        s = (tables.cdf[h, sa] <= U[rows, cell][:, None]).sum(axis=1)
        actions[:, h], states[:, h + 1] = a, s
    return states, actions, rewards


# %% [markdown]
# ## 2. The batched planner
#
# The planner of chapter B6 on a stack of statistics `u [B, d]`: the estimates are elementwise with each
# run's $\varepsilon$ as a column; the bonus is the config's — for a batch of `"paper"` bonuses
# `paper_bonus` of all steps at once with each run's parameters as columns (the same operations
# element by element as the single run's `bonus`), otherwise `step_bonus(h, ...)` of each distinct
# config on its runs at every step; the backward pass is the single run's, with a stacked `matmul`
# for $\tilde P_h \bar V_{h+1}$ (preallocated buffers: at the gridworld's $d = 23{,}000$ a fresh
# `[B, d]` array per operation costs more in page faults than the arithmetic).

# %% tags=["export"]
class _BatchPlanner:
    """Optimistic value iteration of ``plan_from_statistics`` for ``B`` runs of one ``(S, A, H)``."""

    def __init__(self, configs: tuple):
        c0 = configs[0]
        self.S, self.A, self.H, self.B = c0.S, c0.A, c0.H, len(configs)
        self.configs = configs
        column = lambda values: np.array(values, dtype=float).reshape(-1, 1)    # noqa: E731
        self.eps = column([c.eps_unexplored for c in configs])
        self.log_term = column([c.log_term for c in configs])
        self.scale = column([c.bonus_scale for c in configs])
        self.stabilize = np.array([c.stabilize for c in configs])
        self.paper = all(c.bonus_kind == "paper" for c in configs)
        self.needs_variance = any(c.needs_next_variance for c in configs)
        groups = {}
        for b, c in enumerate(configs):
            groups.setdefault(c, []).append(b)
        self.groups = [(c, np.array(idx)) for c, idx in groups.items()]
        self.offsets = (np.arange(self.B)[:, None] * self.S + np.arange(self.S)[None, :]) * self.A
        self.P = None

    def _estimates(self, u: np.ndarray):
        B, H, S, A = self.B, self.H, self.S, self.A
        n3 = H * S * A
        N, R = u[:, :n3].reshape(B, H, S * A), u[:, n3:2 * n3].reshape(B, H, S * A)
        Nsas = u[:, 2 * n3:].reshape(B, H, S * A, S)
        if self.P is None:                                   # buffers, reused at every step
            self.explored, self.n = np.empty(N.shape, dtype=bool), np.empty(N.shape)
            self.r, self.P = np.empty(N.shape), np.empty(Nsas.shape)
        explored, n, r, P = self.explored, self.n, self.r, self.P
        np.greater(N, self.eps[:, :, None], out=explored)
        n.fill(np.inf)
        np.copyto(n, N, where=explored)                      # n = N where explored, inf elsewhere
        np.divide(R, n, out=r)
        np.divide(Nsas, n[..., None], out=P)
        if self.stabilize.any():                             # chapter B6's stabilize, on the runs that ask
            P_st = np.maximum(P, 0.0)
            total = P_st.sum(axis=-1, keepdims=True)
            P_st = np.where(total > 0, P_st / np.where(total > 0, total, 1.0), 1.0 / S)
            mask = self.stabilize[:, None, None]
            r = np.where(mask, np.clip(r, 0.0, 1.0), r)
            P = np.where(mask[..., None], P_st, P)
        return r, P, explored, n

    def _bonus(self, h: int, n_h: np.ndarray, var_h) -> np.ndarray:
        if self.paper:
            return paper_bonus_unchecked(n_h, self.log_term, self.eps, self.H, self.S, self.scale)
        out = np.empty_like(n_h)
        for c, idx in self.groups:
            out[idx] = c.step_bonus(h, n_h[idx], var_h[idx] if c.needs_next_variance else None)
        return out

    def plan(self, u: np.ndarray) -> np.ndarray:
        """Greedy policies ``[B, H, S]`` (int64) planned from ``u [B, d]``."""
        B, H, S, A = self.B, self.H, self.S, self.A
        r, P, explored, n = self._estimates(u)
        policy = np.empty((B, H, S), dtype=np.int64)
        V = np.zeros((B, S, 1))
        base = None
        if self.paper:                                       # b(n) does not depend on h: all steps at once
            base = np.where(explored, r + paper_bonus_unchecked(n, self.log_term[:, :, None], self.eps[:, :, None], H, S,
                                                      self.scale[:, :, None]), np.inf)
        for h in range(H - 1, -1, -1):
            Ph = P[:, h]
            q = np.matmul(Ph, V)[..., 0]                     # [B, S*A], the single run's gemv per run
            if base is None:
                var = None
                if self.needs_variance:
                    # chapter B6's variance: P V^2 - (P V)^2 clipped to [0, (H-h-1)^2/4]
                    var = np.clip(np.matmul(Ph, V * V)[..., 0] - q * q, 0.0, (H - h - 1) ** 2 / 4)
                np.add(q, np.where(explored[:, h], r[:, h] + self._bonus(h, n[:, h], var), np.inf), out=q)
            else:
                np.add(q, base[:, h], out=q)
            np.minimum(q, H - h, out=q)
            np.maximum(q, 0.0, out=q)
            qs = q.reshape(B, S, A)
            best = (qs >= qs.max(axis=2, keepdims=True) - Q_TIE_TOLERANCE).argmax(axis=2)
            policy[:, h] = best
            V = q.take(best + self.offsets)[..., None]       # [B, S, 1]: Q_h at the chosen actions
        return policy


# %% [markdown]
# ## 3. The engine
#
# Per step $t$: plan all runs, roll out all runs, add the $3H$ non-zeros of each run's leaf to the
# level accumulators and to the exact running sums, draw the top node's noise run by run, form
# $\tilde u_t$ from the partial sums of $D(t)$, clear the completed levels.  The level accumulators
# hold $(\lfloor\log_2 T\rfloor + 1) \cdot B \cdot d$ floats, so a batch is sized by what fits
# (`MAX_BATCH_FLOATS`); split a larger sweep into several batches — their runs are independent.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class BatchRun:
    """What ``run_batch`` returns, run ``b`` at index ``b`` of every field.

    Parameters
    ----------
    policies : numpy.ndarray
        ``[B, T, H, S]`` integer actions: episode ``t``'s policy, planned from episodes ``< t``.
    noisy_sum : numpy.ndarray
        ``[B, d]``: ``u~_T``, the tree's noisy prefix sum of each run (the exact sum for ``sigma = 0``).
    clean_sum : numpy.ndarray
        ``[B, d]``: ``u_T``, the exact sum of each run's statistics.
    configs : tuple of UCBVIConfig
        The runs' configs.
    seeds : tuple of int
        The runs' population seeds.
    trajectories : Trajectory or None
        The episodes (leading axes ``[B, T]``) if kept, else ``None``.
    """

    policies: np.ndarray
    noisy_sum: np.ndarray
    clean_sum: np.ndarray
    configs: tuple
    seeds: tuple
    trajectories: Trajectory | None = None

    def __post_init__(self):
        check_instance(self.configs, tuple, "configs")
        policies = as_array(self.policies, "policies")
        if policies.ndim != 4 or policies.shape[0] != len(self.configs) or len(self.seeds) != len(self.configs):
            raise ValueError(f"a batch of {len(self.configs)} configs needs policies [B, T, H, S] and {len(self.configs)} "
                             f"seeds, got policies of shape {policies.shape} and {len(self.seeds)} seeds")


def _check_batch(mdp, configs, seeds, rngs):
    check_instance(mdp, TabularMDP, "mdp")
    for name, value in (("configs", configs), ("seeds", seeds), ("rngs", rngs)):
        if isinstance(value, (str, bytes, np.ndarray)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} must be a list or tuple (one entry per run), got {type(value).__name__}")
    if not configs:
        raise ValueError("configs must hold at least one run")
    if len(seeds) != len(configs) or len(rngs) != len(configs):
        raise ValueError(f"configs, seeds and rngs must have one entry per run, got lengths {len(configs)}, "
                         f"{len(seeds)}, {len(rngs)}")
    for c in configs:
        check_instance(c, UCBVIConfig, "configs[i]")
        if (c.S, c.A, c.H) != (mdp.S, mdp.A, mdp.H):
            raise ValueError(f"every config must have the MDP's S, A, H = {mdp.S}, {mdp.A}, {mdp.H}")
        if c.T != configs[0].T:
            raise ValueError("every config of a batch must have the same T (the runs advance together)")
        if c.pooled:
            raise ValueError("configs must not be pooled: the batched engine keeps per-step statistics "
                             "(run_ucbvi and stable_ucbvi pool)")
        if c.bonus_kind in PLANNED_BONUS_KINDS:
            raise ValueError(f"bonus_kind {c.bonus_kind!r} plans with its own value iteration (chapter B7c): "
                             "use run_ucbvi or stable_ucbvi")
    seeds = tuple(check_seed(s) for s in seeds)
    gens = tuple(as_generator(g, "rngs[i]") if c.sigma > 0 else None for c, g in zip(configs, rngs))
    return tuple(configs), seeds, gens

# %% [markdown]
# `run_batch` is the loop itself: it checks every argument before anything is drawn, then advances
# all $B$ runs one episode at a time, each run equal to its own `train(stable_ucbvi(...))` (or
# `run_ucbvi` when $\sigma = 0$).

# %% tags=["export"]
def run_batch(mdp: TabularMDP, configs, seeds, rngs, reward_noise: str = "bernoulli",
              keep_trajectories: bool = False) -> BatchRun:
    """``B = len(configs)`` independent runs of (TV-stable) UCB-VI for ``T = configs[0].T`` episodes,
    advancing together.  Equal, run by run, to ``train(stable_ucbvi(mdp, T, sigma=...), ...)``
    (``sigma > 0``) or ``run_ucbvi`` (``sigma = 0``).  Everything is checked before anything is drawn.

    Parameters
    ----------
    mdp : TabularMDP
        The environment.
    configs : list or tuple of UCBVIConfig
        Run ``b``'s config (``B >= 1``): ``mdp``'s ``S, A, H``, one ``T`` for all, not pooled, a
        bonus of ``BONUS_KINDS``.
    seeds : list or tuple of int
        Run ``b`` plays the users ``0 .. T-1`` of population ``seeds[b]``, in ``[0, 2**64)``.
    rngs : list or tuple
        Run ``b``'s tree noise: a Generator, an int seed or None (OS entropy); unused if ``sigma = 0``.
    reward_noise : str
        ``"bernoulli"`` (rewards drawn) or ``"mean"`` (mean rewards).
    keep_trajectories : bool
        Also return the episodes (``B T (3H + 1)`` numbers).

    Returns
    -------
    BatchRun
        The policies and final sums, in the order of ``configs``.
    """
    configs, seeds, gens = _check_batch(mdp, configs, seeds, rngs)
    bernoulli = check_reward_noise(reward_noise) == "bernoulli"
    keep_trajectories = check_bool(keep_trajectories, "keep_trajectories")
    B, T, H, S, A = len(configs), configs[0].T, mdp.H, mdp.S, mdp.A
    d, n3, levels = StatsLayout(S, A, H).d, H * S * A, T.bit_length()
    if 2 * levels * B * d > MAX_BATCH_FLOATS:
        raise ValueError(f"a batch of {B} runs with d = {d} and T = {T} needs {2 * levels * B * d:,} floats "
                         f"(more than MAX_BATCH_FLOATS = {MAX_BATCH_FLOATS:,}); split it into smaller batches")
    order = [b for b in range(B) if configs[b].sigma > 0] + [b for b in range(B) if configs[b].sigma == 0]
    m = sum(c.sigma > 0 for c in configs)                   # runs 0..m-1 (in this order) have a tree
    node_states = [_sfc64_states(_top_node_keys(gens[b], T)) for b in order[:m]]
    source = _normal_source()                                # this call's generator (none outlives it)
    sigmas = np.array([configs[b].sigma for b in order[:m]]).reshape(-1, 1)
    tables, planner = _Tables(mdp), _BatchPlanner(tuple(configs[b] for b in order))
    user_keys = np.array([seeds[b] for b in order], dtype=np.uint64)
    acc, partial = np.zeros((levels, m, d)), np.zeros((levels, m, d))
    z, clean, u = np.empty((m, d)), np.zeros((B, d)), np.zeros((B, d))
    flat_acc, flat_clean = acc.reshape(levels * m * d), clean.reshape(B * d)
    level_offsets = (np.arange(levels) * m * d)[:, None, None]
    policies = np.empty((B, T, H, S), dtype=np.int8 if A <= 127 else np.int64)
    traj = (np.empty((B, T, H + 1), np.int64), np.empty((B, T, H), np.int64), np.empty((B, T, H))) \
        if keep_trajectories else None
    offsets = (np.arange(B) * d)[:, None]
    hk = (np.arange(H) * S)[None, :]
    for t in range(1, T + 1):
        pi = planner.plan(u)
        policies[:, t - 1] = pi
        states, actions, rewards = _rollout(mdp, tables, pi, user_keys, bernoulli)
        user_keys += tables.stride                           # user t+1 of each population (wraps mod 2^64)
        if traj is not None:
            traj[0][:, t - 1], traj[1][:, t - 1], traj[2][:, t - 1] = states, actions, rewards
        k = (hk + states[:, :-1]) * A + actions              # [B, H] visited (h, s, a)
        idx = np.concatenate([k, n3 + k, 2 * n3 + k * S + states[:, 1:]], axis=1) + offsets
        val = np.concatenate([np.ones((B, H)), rewards, np.ones((B, H))], axis=1)
        flat_clean[idx] += val                               # distinct indices: one add per entry
        u[m:] = clean[m:]                                    # sigma = 0: run_ucbvi's exact sums
        if m:
            flat_acc[level_offsets + idx[:m]] += val[:m]          # every level's running sum
            top, depth = (t & -t).bit_length() - 1, t.bit_count() - 1
            for i, states in enumerate(node_states):         # the top node's noise: normals run by run,
                _standard_normal(source, states[t - 1], out=z[i])
            z *= sigmas                                      # scaled for all runs at once,
            np.add(acc[top], z, out=z)                       # added to its clean value (running sum),
            if depth:
                np.add(partial[depth - 1], z, out=partial[depth])   # after the earlier nodes of D(t)
            else:
                partial[depth] = z
            u[:m] = partial[depth]
            acc[:top + 1] = 0.0                              # levels 0..top completed at t
    inverse = np.argsort(order)
    trajectories = None if traj is None else Trajectory(*(x[inverse] for x in traj))
    noisy_sum = np.concatenate([partial[T.bit_count() - 1], clean[m:]])[inverse] if m else clean.copy()
    policies, clean = policies[inverse], clean[inverse]
    return BatchRun(policies, noisy_sum, clean, configs, seeds, trajectories)


# %% [markdown]
# The experiments' view: `stable_regret_curves` is `stable_regret_curve` of chapter B7b for many runs
# of one MDP and one $T$ — the same dictionaries, run by run, from one batch.

# %% tags=["export:bandit_unlearning.experiments.rl_batch"]
"""Regret curves of many runs of TV-stable UCB-VI from one batch (chapter B13).

``stable_regret_curves(mdp, T, rhos, seeds, rngs, bonus_scales)`` returns, run by run, exactly the
dictionaries of ``stable_regret_curve`` (chapter B7) for the same arguments, computed by the batched
engine ``bandit_unlearning.rl.batch.run_batch``.  ``unlearning_cost`` is ``rl_unlearning_cost``
(chapter B8) for one ``(rho, T)``, bit for bit, without re-running episodes after a rejection (a
deletion's cost is decided by the coupling; the re-run's generator draws are taken and discarded).
"""

import numpy as np

from bandit_unlearning.checks import (check_count,
    check_bool, check_callable, check_instance, check_real, check_real_array,
)
from bandit_unlearning.exact.learner import ZERO_USER, Run, path_expected_steps, path_retrain_probability
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int
from bandit_unlearning.exact.tree import KEY_WORDS, n_nodes
from bandit_unlearning.experiments.rl_stable import safe_slope
from bandit_unlearning.experiments.unlearning_cost import measure_unlearning
from bandit_unlearning.privacy.coupling import tv_gaussians
from bandit_unlearning.rl.batch import run_batch
from bandit_unlearning.rl.mdp import TabularMDP, regret
from bandit_unlearning.rl.stable import population_users, stable_sigma, stable_ucbvi
from bandit_unlearning.rl.ucbvi import UCBVIConfig


def _episode_regret(mdp: TabularMDP, policies: np.ndarray) -> np.ndarray:
    """``regret(mdp, policies)``, bit for bit, evaluating only the episodes whose policy differs from
    the previous episode's: ``policy_values`` evaluates the sorted distinct policies, which are the same
    rows (same order, same chunks) in the shortened list, so every value is the same number."""
    flat = policies.reshape(len(policies), -1)
    changed = np.ones(len(policies), dtype=bool)
    changed[1:] = (flat[1:] != flat[:-1]).any(axis=1)
    return regret(mdp, policies[changed])[np.cumsum(changed) - 1]


def stable_regret_curves(mdp: TabularMDP, T: int, rhos, seeds, rngs, bonus_scales, calibration: str = "paper",
                         delta: float = 0.1, n_points: int = 40, keep_policies: bool = False) -> list:
    """``[stable_regret_curve(mdp, T, rhos[b], seeds[b], rngs[b], bonus_scales[b], calibration, delta,
    n_points, keep_policies=keep_policies) for b in ...]``, bit for bit, from one ``run_batch`` (the
    ``"policies"`` kept are int8 when ``A <= 127``).  Every argument is checked before anything runs.

    Parameters
    ----------
    mdp, T, calibration, delta, n_points, keep_policies
        As in ``stable_regret_curve``, shared by every run.
    rhos, seeds, rngs, bonus_scales : sequence
        One entry per run (``B >= 1`` of each): its ``rho``, ``seed``, ``rng`` and ``bonus_scale``, as
        in ``stable_regret_curve``.

    Returns
    -------
    list of dict
        ``B`` dictionaries of ``stable_regret_curve``, in the order of the runs.
    """
    check_instance(mdp, TabularMDP, "mdp")
    T = check_count(T, "T", 1)
    rhos = check_real_array(rhos, "rhos", 0, low_open=True, allow_inf=True, ndim=1).tolist()
    scales = check_real_array(bonus_scales, "bonus_scales", 0, ndim=1).tolist()
    if len(scales) != len(rhos):
        raise ValueError(f"rhos and bonus_scales must have one entry per run, got {len(rhos)} and {len(scales)}")
    n_points = check_count(n_points, "n_points", 1)
    keep_policies = check_bool(keep_policies, "keep_policies")
    check_real(delta, "delta", 0, 1, low_open=True, high_open=True)
    sigmas = [stable_sigma(rho, mdp.H, T, calibration) for rho in rhos]
    configs = [UCBVIConfig.of(mdp, T, delta=delta, sigma=s, bonus_scale=sc) for s, sc in zip(sigmas, scales)]
    batch = run_batch(mdp, configs, seeds, rngs)
    ts = np.unique(np.geomspace(1, T, n_points).astype(int))
    out = []
    for b, (rho, sigma, scale) in enumerate(zip(rhos, sigmas, scales)):
        cumulative = np.cumsum(_episode_regret(mdp, batch.policies[b]))
        curve = cumulative[ts - 1]
        res = {"mdp": mdp.name, "T": T, "rho": float(rho), "sigma": sigma, "bonus_scale": float(scale),
               "calibration": calibration, "seed": int(batch.seeds[b]), "t": ts, "regret": curve,
               "final": float(cumulative[-1]), "slope": safe_slope(ts, curve)}
        if keep_policies:
            res["policies"] = batch.policies[b]
        out.append(res)
    return out


# %% [markdown]
# **The cost of a deletion, without re-running the episodes.**  The unlearning-cost experiment of
# chapter B8 (`measure_unlearning` of chapter B4) deletes 50 episodes from each trained run and
# records what each deletion cost: whether the coupling rejected and how many steps it would
# re-run, plus exact values computed from the deleted statistic.  Every one of these numbers is fixed
# once the coupling of Algorithm 3 has run on the path of the deleted leaf — *before* the re-run.
# The re-run only matters to the experiment through the generator it shares with the next requests:
# it takes the keys of the nodes completed at steps $r+1..T$, exactly $3\,(N(T) - N(r))$ raw words
# whatever the episodes are.  `unlearning_cost` therefore couples, records, and advances the
# generator by those words (drawing and discarding them: `advance` would also clear numpy's buffered
# 32-bit half-word and change the next `integers` draw); its measurements equal
# `rl_unlearning_cost`'s bit for bit (checked below), at the price of the coupling alone.

# %% tags=["export:bandit_unlearning.experiments.rl_batch"]
def _coupling_only(run: Run, t: int, rng: np.random.Generator) -> dict:
    """What ``unlearn(run, DeleteStep(t), options=ExactOptions(diagnostics=True), rng=rng)`` records about its cost, with the same draws
    from ``rng``; the re-run of steps ``restart+1 .. T`` is replaced by drawing (and discarding) the
    raw words its node keys would take."""
    learner = run.learner
    x_new = learner.statistics(ZERO_USER, t, run.models[t - 1])
    x_old = run.tree.leaf(t)
    shift, tv = float(np.linalg.norm(x_old - x_new)), tv_gaussians(x_old, x_new, learner.sigma)
    coupling = run.tree.copy().unlearn_leaf(t, x_new, rng)
    if coupling.retrained:
        rng.bit_generator.random_raw(KEY_WORDS * (n_nodes(run.T) - n_nodes(coupling.restart)))
    return {"retrained": coupling.retrained, "cost": (run.T - coupling.restart) / run.T,
            "retrain_probability": path_retrain_probability(tv, coupling.path),
            "expected_cost": path_expected_steps(tv, coupling.path, run.T) / run.T, "shift_norm": shift}


def unlearning_cost(mdp: TabularMDP, T: int, rho: float, n_runs: int, requests_per_run: int, rng=None,
                    seed: int = 0, calibration: str = "paper", bonus_scale: float = 1.0, tree_factory=LightTree) -> dict:
    """``rl_unlearning_cost(mdp, [T], [rho], n_runs, requests_per_run, rng, seed, ...)[rho, T]`` bit for
    bit: ``measure_unlearning`` of chapter B4 on the users of population ``seed``, with the request cost
    ``_coupling_only`` (no re-run of the episodes after a rejection).  ``rng``: a Generator, None or an int seed.

    Parameters
    ----------
    mdp, n_runs, requests_per_run, rng, calibration, bonus_scale, tree_factory
        As in ``rl_unlearning_cost``.
    T : int
        The number of episodes, ``>= 2``.
    rho : float
        The stability parameter, ``> 0`` (``inf``: no noise).
    seed : int
        The population seed of the users (``population_users``), in ``[0, 2**64)``.

    Returns
    -------
    dict
        ``measure_unlearning``'s arrays, one entry per request (``n_runs * requests_per_run``):
        ``"retrained"``, ``"cost"``, ``"conditional_probability"``, ``"conditional_cost"``,
        ``"retrain_probability"``, ``"expected_cost"``, ``"shift_norm"``; and ``"T"``.
    """
    check_instance(mdp, TabularMDP, "mdp")
    T, seed = check_count(T, "T", 2), check_int(seed, "seed", 0, 2**64 - 1)
    n_runs, requests_per_run = check_count(n_runs, "n_runs", 1), check_int(requests_per_run, "requests_per_run", 1)
    check_real(bonus_scale, "bonus_scale", 0)
    check_callable(tree_factory, "tree_factory")
    learner = stable_ucbvi(mdp, T, rho, calibration=calibration, bonus_scale=bonus_scale, tree_factory=tree_factory)
    users = population_users(mdp, T, seed=seed)
    return measure_unlearning(learner, users, n_runs, requests_per_run, rng, cost_of=_coupling_only)


# %% [markdown]
# ## 4. Check: every run of a batch is its single run, bit for bit
#
# A batch mixing everything the reproduction uses — three populations, $\rho \in \{\infty, 100, 10,
# 1\}$, bonus scales $1$ and $0.05$ — plus a run with `stabilize=True` and one with a different
# $\delta$; every run is compared with its single-run oracle on the policies of all episodes, the
# exact statistics $u_T$ and the tree's noisy prefix sum $\tilde u_T$ (`np.array_equal`: no
# tolerance).  Then the same comparison is shown to reject a broken batch — one whose keys are drawn
# as if every step completed a single node (the mistake of "one key per step"), which shifts every
# run's noise after step 1.

# %%
def batch_specs(mdp, T):
    specs = [(rho, scale, seed, False, 0.1) for rho in (math.inf, 100.0, 10.0, 1.0) for scale in (1.0, 0.05)
             for seed in SEEDS]
    return specs + [(1.0, 1.0, SEEDS[0], True, 0.1), (10.0, 0.05, SEEDS[1], False, 0.01)]


def single_run(mdp, T, rho, scale, seed, stabilize, delta, noise_seed):
    """The oracle: (policies, u_T, u~_T) of one run of the single-run learner."""
    if rho == math.inf and not stabilize:
        run = run_ucbvi(mdp, T, seed=seed, delta=delta, bonus_scale=scale)
        total = run.config.layout.accumulate(run.indices, run.values)
        return run.policies, total, total
    learner = stable_ucbvi(mdp, T, rho, delta=delta, bonus_scale=scale, stabilize=stabilize)
    run = train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(noise_seed))
    return run_policies(run), run.tree.clean_prefix_sum(T), run.tree.noisy_prefix_sum(T)


def compare(mdp, T, batch_fn):
    specs = batch_specs(mdp, T)
    configs = [UCBVIConfig.of(mdp, T, delta=dl, sigma=stable_sigma(rho, mdp.H, T), bonus_scale=sc, stabilize=st)
               for rho, sc, _, st, dl in specs]
    noise_seeds = list(range(len(specs)))
    batch = batch_fn(mdp, configs, [s[2] for s in specs], noise_seeds)
    agree = []
    for b, (rho, sc, seed, st, dl) in enumerate(specs):
        pol, clean, noisy = single_run(mdp, T, rho, sc, seed, st, dl, noise_seeds[b])
        agree.append(np.array_equal(batch.policies[b], pol) and np.array_equal(batch.clean_sum[b], clean)
                     and np.array_equal(batch.noisy_sum[b], noisy))
    return agree, batch


from bandit_unlearning.rl.batch import run_batch  # noqa: E402

for mdp, T in ((riverswim(horizon=10), 300), (gridworld(horizon=10), 100)):
    agree, batch = compare(mdp, T, run_batch)
    moved = int(sum(np.any(p[1:] != p[:-1], axis=(1, 2)).sum() for p in batch.policies))
    print(f"{mdp.name:14s} T = {T}: {sum(agree)}/{len(agree)} runs bit-identical to the single-run learner "
          f"(policies of every episode, u_T, u~_T); policy changes across the batch: {moved}")
    assert all(agree) and moved > 0

# %% [markdown]
# The same comparison against a broken batch (keys drawn one per step):

# %%
import bandit_unlearning.rl.batch as batch_module  # noqa: E402


def broken_keys(rng, T):
    from bandit_unlearning.exact.tree import draw_node_keys
    return draw_node_keys(rng, T)                    # one key per step: wrong after step 1


original = batch_module._top_node_keys
batch_module._top_node_keys = broken_keys
try:
    agree, _ = compare(riverswim(horizon=10), 300, batch_module.run_batch)
finally:
    batch_module._top_node_keys = original
noisy_specs = [b for b, s in enumerate(batch_specs(None, 300)) if s[0] != math.inf or s[3]]
print(f"broken keys: {sum(agree)}/{len(agree)} runs agree; noisy runs that agree: "
      f"{sum(agree[b] for b in noisy_specs)}/{len(noisy_specs)}")
assert not any(agree[b] for b in noisy_specs)

# %% [markdown]
# **Check: deletion costs without re-running equal the full measurement.**  `unlearning_cost` against
# `rl_unlearning_cost` (which re-runs every rejected deletion) on RiverSwim, two trained runs of 128
# episodes and 8 deletions each, at $\rho = 1$ (most deletions re-run) and $\rho = 0.3$: every
# recorded number must be equal.  A broken variant that skips the re-run's generator draws instead of
# taking them fails the same comparison (the later requests and the second run see another stream).

# %%
from bandit_unlearning.exact.learner import ZERO_USER  # noqa: E402
from bandit_unlearning.experiments import rl_batch  # noqa: E402
from bandit_unlearning.experiments.rl_unlearning import rl_unlearning_cost  # noqa: E402


def cost_agrees(fn):
    agree, retrained = [], 0
    for rho in (1.0, 0.3):
        ref = rl_unlearning_cost(riverswim(horizon=10), [128], [rho], 2, 8, np.random.default_rng(7), seed=SEEDS[0])
        ref = ref[rho, 128]
        got = fn(riverswim(horizon=10), 128, rho, 2, 8, np.random.default_rng(7), seed=SEEDS[0])
        agree.append(all(np.array_equal(got[k], ref[k]) for k in ref if k != "T"))
        retrained += int(ref["retrained"].sum())
    return agree, retrained


agree, retrained = cost_agrees(rl_batch.unlearning_cost)
print(f"unlearning_cost == rl_unlearning_cost at rho = 1, 0.3: {agree} ({retrained} of 32 deletions re-run)")
assert all(agree) and retrained > 0

original = rl_batch._coupling_only


def broken_coupling_only(run, t, rng):
    state = rng.bit_generator.state
    out = original(run, t, rng)
    if out["retrained"]:                         # the mistake: keep the coupling's draws, forget the re-run's
        probe = np.random.Generator(np.random.PCG64())
        probe.bit_generator.state = state
        run.tree.copy().unlearn_leaf(t, run.learner.statistics(ZERO_USER, t, run.models[t - 1]), probe)
        rng.bit_generator.state = probe.bit_generator.state
    return out


rl_batch._coupling_only = broken_coupling_only
try:
    broken, _ = cost_agrees(rl_batch.unlearning_cost)
finally:
    rl_batch._coupling_only = original
print(f"broken variant (re-run draws skipped): {broken}")
assert not all(broken)

# %% [markdown]
# ## 5. Speed
#
# Run-episodes per second of a batch of 30 runs (the reproduction's riverswim sweep: 5 values of
# $\rho$, 2 bonus scales, 3 populations) against the single-run learner on the same runs, in this
# process (`benchmarks/rl_speed.py` records the full measurement).

# %%
# NBVAL_IGNORE_OUTPUT
mdp, T = riverswim(horizon=10), 400
rhos = (math.inf, 1000.0, 100.0, 10.0, 1.0)
specs = [(rho, sc, seed) for rho in rhos for sc in (1.0, 0.05) for seed in SEEDS]
configs = [UCBVIConfig.of(mdp, T, sigma=stable_sigma(rho, mdp.H, T), bonus_scale=sc) for rho, sc, _ in specs]
start = time.perf_counter()
run_batch(mdp, configs, [s[2] for s in specs], list(range(len(specs))))
batch_s = time.perf_counter() - start
start = time.perf_counter()
for b, (rho, sc, seed) in enumerate(specs[::6]):
    single_run(mdp, T, rho, sc, seed, False, 0.1, b)
single_s = (time.perf_counter() - start) * 6
print(f"batch of {len(specs)} runs x {T} episodes: {len(specs) * T / batch_s:,.0f} run-episodes/s; "
      f"single runs: {len(specs) * T / single_s:,.0f} episodes/s (estimated from every 6th run); "
      f"ratio {single_s / batch_s:.1f}")
