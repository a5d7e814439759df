# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.learner
# ---

# %% [markdown]
# # Chapter B3a — Prefix-sum learners and their exact unlearning
#
# *Paper B, Section 3: Algorithm 1 (prefix-sum learners), Algorithm 2 (TV-stable learning with the
# binary tree), Algorithm 3 (unlearning by maximal coupling) and the exactness part of
# Theorem 3.3.  Exports `bandit_unlearning.exact.learner` (the generic framework).*
#
# Chapter B1 built the maximal coupling of two Gaussians and chapter B2 the binary tree.  This
# chapter assembles them into a **generic learner** defined by two functions — an environment
# oracle and an update rule — that runs over **replayable users** with the tree as meta-data, and
# an `unlearn(run, DeleteStep(t))` that deletes user $t$ *exactly*: the unlearned run has the same
# distribution as a run that never saw user $t$ (a dummy user in its place).  The derivation of
# exactness is below; chapter B4 tests it statistically.  [Chapter B3b](03b_online_bandit.ipynb)
# gives the framework its first instance — the simplest learner that fits: UCB for an online
# multi-armed bandit, on noisy prefix sums of pulls and rewards — and runs, deletes and checks it.

# %% [markdown]
# ## 1. Statement (Paper B §2-3)
#
# Users $z_1, z_2, \dots$ arrive one per step.  At step $t$ the learner's model $w_t$ interacts with
# $z_t$ and an **environment oracle** returns statistics $x_t = \mathrm{EO}_t(z_t; w_{1:t}) \in \mathbb R^d$;
# the next model is $w_{t+1} = \mathrm{UPDATE}(\tilde u_t, w_{1:t})$, where $\tilde u_t$ is the noisy
# prefix sum of $x_1, \dots, x_t$ from the binary tree (Algorithm 2; Algorithm 1 is the same with the
# exact $u_t$).  Sensitivity: $\sup\lVert \mathrm{EO}_t(z; w) - \mathrm{EO}_t(z'; w)\rVert_2 \le B$.
#
# **Algorithm 3** (delete user $t$; Paper B Algorithm 3).  Compute the dummy's statistics
# $x'_t = \mathrm{EO}_t(z'; w_{1:t})$.  Walk the complete nodes $b$ on the path from leaf $t$ to the
# root; with $v'_b = v_b - x_t + x'_t$, keep $\tilde v_b$ with probability
# $\min\{1, \phi(\tilde v_b; v'_b, \sigma^2 I)/\phi(\tilde v_b; v_b, \sigma^2 I)\}$ and go up; at the
# first rejection reflect $\tilde v_b \leftarrow v'_b + v_b - \tilde v_b$ and **retrain from the next
# position after $b$ in post-order**: the ancestors of $b$ ending at the same leaf $r_b$ get fresh
# noise around their new clean values, and steps $r_b + 1, \dots, T$ are re-run with the same users
# and the new models.
#
# **Theorem 3.3.** (1) Algorithm 3 is an exact unlearning algorithm for Algorithm 2:
# $\mathcal U(\mathcal A(z_{1:T}), z_t, z') \overset{d}{=} \mathcal A(z_1, \dots, z_{t-1}, z', z_{t+1},
# \dots, z_T)$; (2) Algorithm 2 is $\rho$-TV-stable; (3) the probability of retraining is at most
# $\rho\sqrt{2\log_2 T}$.  (Parts (2)–(3) are measured in chapter B4.)
#
# ## 2. Why Algorithm 3 is exact (Theorem 3.3 (1))
#
# **The output as a sequence of Gaussians.** Take the oracle and the update to be *deterministic*
# functions and the users to be *fixed* (replayable: asked the same question, a user gives the same
# answer — erratum E10).  Then the algorithm's only randomness is the tree noise, and its whole output
# — every noisy node value, hence every prefix sum and every model — is a function of the sequence
# of noisy node values $\tilde v_{b_1}, \tilde v_{b_2}, \dots$ **in post-order**.  In that order,
# each node's clean value $v_b$ is a deterministic function of the earlier noisy values: its leaves
# $x_i = \mathrm{EO}_i(z_i; w_{1:i})$ depend on models $w_{1:i}$, which depend on prefix sums of nodes
# ending before $i \le r_b$, i.e. earlier in post-order.  So the law of a run is
# $$
# P(\tilde v_{b_1}, \tilde v_{b_2}, \dots) = \prod_k \phi\big(\tilde v_{b_k};\; v_{b_k}(\tilde v_{b_{<k}}),\; \sigma^2 I\big),
# $$
# and a run on the sequence with $z_t$ replaced by $z'$ has the same form with $v'_{b}(\cdot)$.
#
# **Where the two worlds differ.** Given the same earlier noisy values, the models up to any step
# coincide in both worlds, so $v'_b = v_b$ for every node **off** the path of leaf $t$ and
# $v'_b = v_b - x_t + x'_t$ on it, with $x'_t$ computed from the same models $w_{1:t}$.
#
# **The coupling, node by node in post-order.** Suppose that the unlearned output agrees with the
# original on all nodes before $b_k$ (no rejection yet).  The original $\tilde v_{b_k}$ is, given the
# earlier values, $\mathcal N(v_{b_k}, \sigma^2 I)$ — and independent of the uniforms used at the
# earlier acceptance tests, which only looked at earlier values.  So coupling it maximally with
# $\mathcal N(v'_{b_k}, \sigma^2 I)$ (chapter B1) gives a value with exactly the dummy world's
# conditional law.  Off the path the two laws are equal and the coupling keeps the value with
# probability 1 — which is why Algorithm 3 only visits path nodes.  At the first rejection, at node
# $b$, the output so far has the dummy world's law, and everything after $b$ in post-order is drawn
# afresh **from the dummy world's conditionals**: fresh noise for the later nodes, around clean
# values computed from re-run steps (the same users answer the new models — this is where
# replayability is needed).  By induction over post-order, the unlearned output has the law of the
# dummy world's run.  $\square$
#
# Three consequences shape the code:
# - the *nodes after $b$ in post-order* are: the ancestors of $b$ ending at the same leaf $r_b$ (new
#   clean value, fresh noise), then everything from step $r_b + 1$ on (re-run); models
#   $w_1, \dots, w_{r_b}$ are unchanged, $w_{r_b + 1}$ is recomputed from the new $\tilde u_{r_b}$;
# - exactness does not depend on $\sigma$ or on $B$: $\sigma$ only sets how often a
#   rejection happens.  The record of each deletion reports the learner's $B$ and the worst-case
#   cost for a shift of norm $B$ — not the deleted user's own shift (below);
# - all randomness of the algorithm must live in the tree noise (or be drawn fresh when steps are
#   re-run); all randomness of the environment must live in the users.  A user that drew a fresh
#   transition each time it was asked would make "re-run the same users" meaningless.
#
# **Sequential deletions.** The unlearned run *is* (in law) a run on the modified sequence, so a
# second deletion is simply Algorithm 3 applied to it; the run records the deleted positions and
# refuses to delete one twice.
#
# **What a deletion returns.** Exactness is a statement about the *run*; a deletion also returns a
# record of what it did, and that record must not undo it.  A number computed from the deleted
# statistic $x_t$ is the deleted data in disguise: the shift $\lVert x_t - x'_t\rVert$ against the
# zero dummy is $\sqrt{1 + r^2}$ for the bandit below (so it gives the deleted reward $r$ back) and
# $\sqrt{2H + \sum_h r_h}$ for an RL episode (chapter B8: $\lVert x_t\rVert^2 - 2H$ is the deleted
# episode's return); the per-node TV $2\Phi(\lVert x_t - x'_t\rVert/2\sigma) - 1$, the exact
# retraining probability and the expected cost of *this* request are invertible functions of it.
# So the record (`UnlearnRecord`) holds by default
# - what does not depend on the data: $t$, $T$, the path (a function of $t$ and $T$), $B$ and
#   $\sigma$, and the **worst-case** cost of a request at $t$ for a shift of norm $B$ — TV per node
#   $2\Phi(B/2\sigma) - 1$, retraining probability $1 - (1 - \mathrm{TV}_B)^{|\text{path}|}$,
#   expected steps recomputed — which is what Theorem 3.3 (3) bounds anyway;
# - the coupling's **outcomes**: which path nodes were kept, which one was reflected, from which
#   step the learner re-ran.  These do depend on $x_t$ (a node rejects with probability
#   $\mathrm{TV}(\lVert x_t - x'_t\rVert)$: a deleted user whose statistics equal the dummy's never
#   causes a retrain).  We keep them because they are part of what the algorithm visibly does: the
#   new run shows them (the models before `restart` are the old ones, the kept noisy values are
#   bit-identical), the time the call takes shows whether and how much was retrained, and whoever
#   runs the deletion must account for its cost.  And what they can tell is small and bounded: for
#   *any* two possible deleted users, the laws of the outcome differ in total variation by at most
#   the worst-case retraining probability $1 - (1 - \mathrm{TV}_B)^{|\text{path}|}$ (both put at least
#   the rest of the mass on "nothing rejected"), the same quantity the cost of unlearning is made
#   small by.  A number computed from $x_t$ is not one coin with bounded bias: it is exact.
#
# The data-dependent numbers are useful to *experiments* — chapter B4 compares measured costs with
# the exact per-request formulas — so `unlearn(..., options=ExactOptions(diagnostics=True))` adds them
# (`record.diagnostics`; `record.shift_norm` etc. read them and raise `AttributeError` without).
# The switch is off by default and meant for research runs on data one may look at.
#
# **The other secrets.** The tree's keys (chapter B2a) and the generator they come from: every
# function that draws takes `rng=None` by default — fresh operating-system entropy — and a seeded
# generator is an explicit opt-in for reproducible research, whose seed is then key material
# (this chapter seeds one, so that its outputs can be checked).  And the users: whatever can
# regenerate a deleted user (a population seed, a key) must not be kept by the run — a deletion
# replaces the user by the dummy, and the run holds no other handle on it.

# %% [markdown]
# ## 3. Implementation: the framework
#
# The interface, which later chapters (TV-stable UCB-VI) plug into:
#
# | name | what |
# |---|---|
# | `PrefixSumLearner(d, sigma, oracle, update, initial_model, B=None, tree_factory=LightTree, name=...)` | frozen config: `oracle(user, t, model) -> x_t` (shape `(d,)`), `update(u_tilde_t, t, model_t) -> model_{t+1}`, $w_1$ = `initial_model` |
# | `train(learner, users, rng=None, capacity=None) -> Run` | Algorithm 2 over $T$ = `len(users)` steps |
# | `extend(run, users, rng=None) -> Run` | continue a run with more users (anytime) |
# | `unlearn(run, DeleteStep(t), *, options=None, rng=None) -> (Run, UnlearnRecord)` | Algorithm 3, the package's one protocol (`bandit_unlearning.protocol`); `options`: `ExactOptions(dummy=ZERO_USER, diagnostics=False, ...)` or `None` for these defaults |
# | `Run` | immutable (also after unpickling): `learner`, `users`, `models` ($w_1..w_{T+1}$), frozen `tree`, `deleted`; `T`, `model(t)`, `final_model`, `statistics()`, `noisy_prefix_sum(t)` |
# | `UnlearnRecord` | `t`, `T`, `B`, `sigma`, `path`, `accepted`, `rejected`, `regenerated`, `restart`, `steps_recomputed`, worst-case `tv_bound`, `retrain_probability_bound`, `expected_steps_bound`; `diagnostics` (`UnlearnDiagnostics`: `shift_norm`, `tv_per_node`, `retrain_probability`, `expected_steps_recomputed`) only on request |
# | `path_retrain_probability(tv, path)`, `path_expected_steps(tv, path, T)` | cost of coupling a path whose nodes have TV `tv` |
# | `verify(run)` | replays a run deterministically and checks every statistic, model and node sum |
# | `ReplayableUser(key)`, `replayable_users(seed, n)` | users as keyed counter-based generators (E10); `seed=None`: independent keys from OS entropy |
# | `ZERO_USER` | the default dummy: zero statistics, whatever the model |
#
# **Replayable users.** `ReplayableUser(key)` wraps a 128-bit key of a Philox counter-based
# generator; `user.generator(*address)` returns a generator positioned at a counter built from up
# to three integers (e.g. `(h, s, a)` in RL), so the same user asked the same question at the same
# address draws the same numbers, in any order and any number of times.  `replayable_users(seed, n)`
# derives independent keys from a `SeedSequence` — reproducible, so the seed rebuilds every user,
# deleted ones included: key material, for research — and `replayable_users(None, n)` draws each
# key from the operating system's entropy, so that a user removed from a run cannot be rebuilt.

# %% tags=["export"]
"""Prefix-sum learners over replayable users (Paper B, Algorithms 1-2) and their exact unlearning
by maximal coupling of the binary tree (Algorithm 3, Theorem 3.3).

A learner is ``PrefixSumLearner(d, sigma, oracle, update, initial_model, B, tree_factory)``:

* ``oracle(user, t, model) -> x_t``: the environment oracle ``EO_t(z_t; w_{1:t})``, a deterministic
  function returning statistics of shape ``(d,)``; environment randomness comes from the user only
  (erratum E10: see ``ReplayableUser``);
* ``update(u_tilde, t, model) -> next model``: ``UPDATE(u~_t, w_{1:t})``, deterministic; ``u_tilde`` is
  the noisy prefix sum of ``x_1 .. x_t`` from the tree and ``model`` is ``w_t``;
* ``initial_model``: ``w_1``.

``train`` runs Algorithm 2; the package's protocol (``bandit_unlearning.protocol``) serves a run:
``unlearn(run, DeleteStep(t), options=ExactOptions(...), rng=...)`` is Algorithm 3 (replacing a user by
a dummy, ``ZERO_USER`` by default: zero statistics) and ``verify(run)`` replays a run and checks it.  Runs are immutable (also
after a pickle round trip).

Secrets: every ``rng`` defaults to ``None``, a generator seeded from the operating system's entropy;
passing a seeded generator is an opt-in for reproducibility, and its seed is then key material (it
regenerates the tree's noise).  What ``unlearn`` returns carries nothing computed from the deleted
user's statistic unless ``ExactOptions(diagnostics=True)`` is asked for.  A ``Run`` holds its tree's key material, so
pickling one is refused unless inside ``bandit_unlearning.secrecy.allow_secrets()`` (chapter B2a);
records, learners and users pickle freely.
"""

import math
import secrets
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Callable

import numpy as np

from bandit_unlearning.checks import check_count, as_real_array, as_generator, check_callable, check_instance, check_real
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int, check_positive
from bandit_unlearning.exact.tree import n_nodes, node_at
from bandit_unlearning.privacy.coupling import check_sigma, tv_gaussians
from bandit_unlearning.protocol import DeleteStep, register_unlearn, register_verify
from bandit_unlearning.secrecy import check_pickle_allowed


def _freeze_arrays(value) -> None:
    """Make every numpy array in ``value`` (through tuples, lists and dicts) read-only."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _freeze_arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            _freeze_arrays(v)


def _valid_statistics(x, t: int, d: int) -> np.ndarray:
    """The oracle's answer ``x`` at step ``t`` checked (shape ``(d,)``, finite), as a new float array."""
    name = f"the oracle's statistics at step {t}"
    x = x.copy() if type(x) is np.ndarray and x.dtype == np.float64 else as_real_array(x, name)
    if x.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x


class _ZeroUser:
    """The default dummy user z' (Paper B Definition 2.1): its statistics are zero whatever the model."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ZERO_USER"

    def __reduce__(self):
        return (_ZeroUser, ())


ZERO_USER = _ZeroUser()

# %% [markdown]
# **A replayable user** is a key of a counter-based generator: `user.generator(*address)` draws the
# same numbers for the same address in any order, so Algorithm 2's steps can be replayed after a
# deletion without storing the environment's randomness. `replayable_users` derives the keys from a
# seed (reproducible, so key material) or from the operating system's entropy.

# %% tags=["export"]
@dataclass(frozen=True)
class ReplayableUser:
    """A user as a fixed source of environment randomness (erratum E10).

    ``key`` (an integer in ``[0, 2**128)``) keys a Philox counter-based generator.
    ``generator(*address)`` starts the stream at a counter built from up to three non-negative
    integers (e.g. ``(h, s, a)``), so the same user asked the same question answers the same way,
    in any order and any number of times; different addresses give independent streams.

    Parameters
    ----------
    key : int
        The Philox key, in ``[0, 2**128)``: the user's secret (whoever holds it replays the user).
    """

    key: int

    def __post_init__(self):
        key = check_int(self.key, "key", 0)
        if key >= 2**128:
            raise ValueError(f"key must be < 2**128, got {key}")
        object.__setattr__(self, "key", key)

    def generator(self, *address: int) -> np.random.Generator:
        """A fresh generator at the user's stream ``address``: the same numbers on every call.

        Parameters
        ----------
        *address : int
            Up to three integers in ``[0, 2**64)`` (e.g. ``h, s, a``); none: the stream at 0.

        Returns
        -------
        numpy.random.Generator
            A Philox generator keyed by ``key``, its counter ``(0, *address)`` (padded with zeros).
        """
        if len(address) > 3:
            raise ValueError(f"an address has at most 3 integers, got {len(address)}")
        words = [check_int(a, "address", 0) for a in address]
        if any(w >= 2**64 for w in words):
            raise ValueError("address integers must be < 2**64")
        counter = np.zeros(4, dtype=np.uint64)
        counter[1:1 + len(words)] = words
        return np.random.Generator(np.random.Philox(key=self.key, counter=counter))

    def uniforms(self, shape, *address: int) -> np.ndarray:
        """Uniforms on [0, 1) of the given shape from the stream at ``address``.

        Parameters
        ----------
        shape : int or tuple of int
            The output's shape, every dimension ``>= 0``.
        *address : int
            The stream, as in ``generator``.

        Returns
        -------
        numpy.ndarray
            Floats in ``[0, 1)`` of shape ``shape``: the first draws of ``generator(*address)``.
        """
        dims = shape if isinstance(shape, tuple) else (shape,)
        shape = tuple(check_int(s, "shape", 0) for s in dims)
        return self.generator(*address).random(shape)


# %% [markdown]
# A population of users is a seed and a position (reproducible research), or fresh keys that no
# one can rebuild.

# %% tags=["export"]
def replayable_users(n: int, *, seed: int | None = None, start: int = 0) -> tuple:
    """Users ``start .. start+n-1`` of a population: keys derived from ``SeedSequence(seed)``, so that
    any user can be rebuilt from the seed alone -- the seed is key material (an opt-in for
    reproducible research).  ``seed=None``: ``n`` independent keys from the operating system's
    entropy (``secrets``), which nothing else can rebuild.

    Parameters
    ----------
    n : int
        The number of users, ``>= 0``.
    seed : int or None
        The population seed, ``>= 0`` (key material); ``None``: keys from the operating system.
    start : int
        The first user's position in the population, ``>= 0`` (only with a ``seed``).

    Returns
    -------
    tuple of ReplayableUser
        ``n`` users, in population order.
    """
    n, start = check_count(n, "n", 0), check_int(start, "start", 0)
    if seed is None:
        return tuple(ReplayableUser(secrets.randbits(128)) for _ in range(n))
    seed = check_int(seed, "seed", 0)
    users = []
    for i in range(start, start + n):
        words = np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(2, np.uint64)
        users.append(ReplayableUser(int(words[0]) | int(words[1]) << 64))
    return tuple(users)


# %% [markdown]
# The learner and its runs.  A model is any Python object; the framework passes the **current**
# model $w_t$ to the oracle and the update (an algorithm that needs $w_{1:t}$ folds what it needs into
# $w_t$; the whole history is `run.models`).  `oracle` and `update` must be deterministic; the oracle
# draws environment randomness only from the user.  Runs are immutable (their tree is frozen).
# The tree is any object with the interface of chapter B2b; the default is the memory-light
# `LightTree` of chapter B10, which gives the same outputs as the readable `BinaryTree` of chapter B2b
# bit for bit (for the same generator) in $O(\text{non-zeros} + T + d\log T)$ memory, and is at
# least as fast; `tree_factory=BinaryTree` selects the dense reference.

# %% tags=["export"]
@dataclass(frozen=True)
class PrefixSumLearner:
    """A prefix-sum learner (Algorithms 1-2): ``x_t = oracle(z_t, t, w_t)``,
    ``w_{t+1} = update(noisy prefix sum u~_t, t, w_t)``, ``w_1 = initial_model``.

    ``oracle`` and ``update`` must be deterministic; ``update`` receives a fresh array ``u_tilde``
    that it may keep.

    Parameters
    ----------
    d : int
        The dimension of a statistic ``x_t``, ``>= 1``.
    sigma : float
        The tree's per-node noise standard deviation, ``>= 0`` (``0``: no noise, Algorithm 1).
    oracle : callable
        ``oracle(user, t, model) -> x_t`` of shape ``(d,)``, finite (the oracle ``EO_t``).
    update : callable
        ``update(u_tilde, t, model) -> w_{t+1}`` from the noisy prefix sum ``u_tilde`` of shape ``(d,)``.
    initial_model : object
        ``w_1``, any object the oracle and the update accept.
    B : float or None
        The sensitivity bound ``sup ||x - x'||_2`` used to choose ``sigma`` (reported by ``unlearn``,
        erratum E8), ``> 0``; ``None`` if unknown.
    tree_factory : callable
        ``tree_factory(d, sigma, capacity)`` builds the tree (default ``LightTree``, chapter B10: the
        outputs of the dense ``BinaryTree`` bit for bit, in far less memory).
    name : str
        A label for reports.
    check_user : callable or None
        ``check_user(user)`` raises on a user the oracle cannot serve (every user of ``train`` and
        ``extend`` and every dummy is checked before anything runs; ``ZERO_USER`` always passes).
    """

    d: int
    sigma: float
    oracle: Callable
    update: Callable
    initial_model: Any
    B: float | None = None
    tree_factory: Callable = LightTree
    name: str = "prefix-sum learner"
    check_user: Callable | None = None

    def __post_init__(self):
        object.__setattr__(self, "d", check_count(self.d, "d", 1))
        object.__setattr__(self, "sigma", check_sigma(self.sigma))
        if self.B is not None:
            object.__setattr__(self, "B", check_positive(self.B, "B"))
        for name in ("oracle", "update", "tree_factory"):
            if not callable(getattr(self, name)):
                raise TypeError(f"{name} must be callable")
        if self.check_user is not None:
            check_callable(self.check_user, "check_user")
        check_instance(self.name, str, "name")

    def __setstate__(self, state):
        """Unpickling makes fresh, writeable arrays: a read-only ``initial_model`` stays read-only."""
        self.__dict__.update(state)
        _freeze_arrays(self.initial_model)

    def statistics(self, user, t: int, model) -> np.ndarray:
        """``EO_t(user; w_t)``, validated (shape ``(d,)``, finite); ``ZERO_USER`` gives zeros.

        Parameters
        ----------
        user : object
            A user the oracle serves, or ``ZERO_USER``.
        t : int
            The step, ``>= 1``.
        model : object
            The current model ``w_t``.

        Returns
        -------
        numpy.ndarray
            ``x_t``, float of shape ``(d,)`` (the oracle's answer, or zeros for ``ZERO_USER``).
        """
        t = check_int(t, "t", 1)
        if user is ZERO_USER:
            return np.zeros(self.d)
        return _valid_statistics(self.oracle(user, t, model), t, self.d)

# %% [markdown]
# **A run** is what Algorithm 2 leaves behind: the users as used, the models $w_1, \dots, w_{T+1}$,
# the frozen tree holding $x_1, \dots, x_T$ and the deleted positions. It is immutable, and it holds
# the tree's key material, so pickling it is refused outside `allow_secrets()`.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class Run:
    """An immutable record of Algorithm 2: the users as used (dummies at deleted positions), the
    models ``w_1 .. w_{T+1}``, the frozen tree holding ``x_1 .. x_T``, and the deleted positions.
    Pickling refuses (``TypeError``) unless inside ``allow_secrets()``: the tree's keys are secrets.

    Parameters
    ----------
    learner : PrefixSumLearner
        The learner that ran.
    users : tuple
        ``z_1 .. z_T`` as used (``T >= 0``; the dummy at each deleted position).
    models : tuple
        ``w_1 .. w_{T+1}`` (``T + 1`` models).
    tree : BinaryTree or LightTree
        The frozen tree holding ``x_1 .. x_T``.
    deleted : frozenset of int
        The deleted positions, each in ``1 .. T``.
    """

    learner: PrefixSumLearner
    users: tuple
    models: tuple
    tree: Any
    deleted: frozenset = frozenset()

    def __post_init__(self):
        check_instance(self.learner, PrefixSumLearner, "learner")
        for name in ("users", "models"):
            check_instance(getattr(self, name), tuple, name)
        if len(self.models) != len(self.users) + 1:
            raise ValueError(f"a run of T = {len(self.users)} users has T + 1 models, got {len(self.models)}")
        check_instance(self.deleted, frozenset, "deleted")
        for t in self.deleted:
            check_int(t, "deleted step", 1, len(self.users))

    @property
    def T(self) -> int:
        return len(self.users)

    def model(self, t: int):
        """``w_t``, the model that served user ``t`` (``w_{T+1}``: the final model).

        Parameters
        ----------
        t : int
            The step, ``1 <= t <= T + 1``.

        Returns
        -------
        object
            ``models[t - 1]``.
        """
        return self.models[check_int(t, "t", 1, self.T + 1) - 1]

    @property
    def final_model(self):
        """``w_{T+1}``."""
        return self.models[-1]

    def statistics(self) -> np.ndarray:
        """``x_1 .. x_T``, shape ``(T, d)`` (a copy of the tree's leaves)."""
        return self.tree.leaves()

    def noisy_prefix_sum(self, t: int) -> np.ndarray:
        """The tree's noisy prefix sum ``u~_t`` of ``x_1 .. x_t`` (what ``update`` saw at step ``t``).

        Parameters
        ----------
        t : int
            The number of steps summed, ``0 <= t <= T``.

        Returns
        -------
        numpy.ndarray
            ``u~_t``, float of shape ``(d,)`` (a new array; zeros for ``t = 0``).
        """
        return self.tree.noisy_prefix_sum(t)

    def __getstate__(self):
        """Pickling is saving: refused without ``allow_secrets()`` (the tree's key material)."""
        check_pickle_allowed(self, "its tree's key material (node keys, or noise)")
        return self.__dict__.copy()

    def __copy__(self):
        return self                                      # immutable: the record itself

    def __deepcopy__(self, memo):
        return self

    def __setstate__(self, state):
        """Unpickling makes fresh, writeable arrays: the recorded models are made read-only again
        (the tree re-freezes itself)."""
        self.__dict__.update(state)
        _freeze_arrays(self.models)


# %% [markdown]
# What a deletion costs and what it reports.  The two path formulas are Theorem 3.3 (3) for a path
# whose nodes all have total variation `tv` (§2); `UnlearnRecord` holds the worst-case bounds, computed
# from public quantities only, and `UnlearnDiagnostics` the numbers computed from the deleted user's
# statistic, present only when asked for.

# %% tags=["export"]
def path_retrain_probability(tv: float, path) -> float:
    """``1 - (1 - tv)^{|path|}``: the probability that coupling ``path`` rejects somewhere when every
    path node has total variation ``tv`` (Theorem 3.3 (3), exact).

    Parameters
    ----------
    tv : float
        The total variation of each path node's two noisy values, in ``[0, 1]``.
    path : tuple or list of Node
        The complete nodes over the deleted leaf, leaf first (``PathCoupling.path``).

    Returns
    -------
    float
        The retraining probability, in ``[0, 1]``.
    """
    tv = check_real(tv, "tv", 0, 1)
    check_instance(path, (tuple, list), "path")
    return float(1 - (1 - tv) ** len(path))


def path_expected_steps(tv: float, path, T: int) -> float:
    """``sum_k (1 - tv)^k tv (T - r_k)``: the expected steps re-run when the ``k``-th path node
    (last leaf ``r_k``) rejects with probability ``tv`` given that the ones below it were kept.

    Parameters
    ----------
    tv, path
        As in ``path_retrain_probability``.
    T : int
        The run's number of steps, ``>= 0`` (every node of ``path`` ends at ``<= T``).

    Returns
    -------
    float
        The expected number of steps re-run, in ``[0, T]``.
    """
    tv, T = check_real(tv, "tv", 0, 1), check_int(T, "T", 0)
    check_instance(path, (tuple, list), "path")
    return float(sum((1 - tv) ** k * tv * (T - b.end) for k, b in enumerate(path)))


# %% [markdown]
# The numbers computed from the deleted statistic sit in a record of their own, made only on request:

# %% tags=["export"]
@dataclass(frozen=True)
class UnlearnDiagnostics:
    """Numbers computed from the deleted user's statistic ``x_t`` -- for experiments, never by default.

    Parameters
    ----------
    shift_norm : float
        ``||x_t - x'_t||_2 >= 0`` against the dummy's ``x'_t`` (against the zero dummy, for the UCB
        bandit ``sqrt(1 + r^2)`` gives the deleted reward and for TV-stable UCB-VI ``||x_t||^2 - 2H``
        is the deleted episode's return).
    tv_per_node : float
        ``2 Phi(shift_norm / (2 sigma)) - 1``, in ``[0, 1]``: the TV of each path node's two values.
    retrain_probability : float
        The exact retraining probability of this request (``path_retrain_probability``), in ``[0, 1]``.
    expected_steps_recomputed : float
        The exact expected number of steps re-run (``path_expected_steps``), ``>= 0``.
    """

    shift_norm: float
    tv_per_node: float
    retrain_probability: float
    expected_steps_recomputed: float

    def __post_init__(self):
        check_real(self.shift_norm, "shift_norm", 0)
        check_real(self.tv_per_node, "tv_per_node", 0, 1)
        check_real(self.retrain_probability, "retrain_probability", 0, 1)
        check_real(self.expected_steps_recomputed, "expected_steps_recomputed", 0)


# %% [markdown]
# What every deletion reports (`UnlearnRecord`) is data-independent, apart from the coupling's
# visible outcomes:

# %% tags=["export"]
@dataclass(frozen=True)
class UnlearnRecord:
    """What one call of ``unlearn`` did (Algorithm 3) -- by default nothing computed from the deleted data.

    The fields of ``diagnostics`` are also attributes of the record (``record.shift_norm``, ...),
    which raise ``AttributeError`` without it.
    Which reference world the guarantee holds against: exact unlearning is a statement about the
    distribution of the new run over all of the algorithm's randomness (the original run's included) --
    it equals training from scratch on the sequence with user ``t`` replaced by the dummy, a learner that
    never saw the user (the literal reference, with epsilon = delta = 0).  It is not a statement
    conditional on the earlier release: given the old models, the new ones are coupled to them.

    Parameters
    ----------
    t : int
        The deleted position, ``1 <= t <= T``.
    T : int
        The run's number of steps, ``>= 1``.
    B : float or None
        The learner's sensitivity bound (``None`` if unknown).
    sigma : float
        The tree's per-node noise standard deviation.
    path : tuple of Node
        The complete nodes over leaf ``t``, leaf first.
    accepted, rejected, regenerated
        The coupling's outcomes, part of what the algorithm visibly does: as in ``PathCoupling``.
    restart : int
        Steps still valid, ``0 <= restart <= T``: steps ``restart+1 .. T`` were re-run.
    steps_recomputed : int
        ``T - restart``.
    tv_bound : float or None
        The worst case per node, for a shift of norm ``B``: ``2 Phi(B / (2 sigma)) - 1`` (``None``
        without ``B``).
    retrain_probability_bound, expected_steps_bound : float or None
        The worst-case retraining probability and expected steps re-run of a request at ``t``: the
        path formulas at ``tv_bound`` (``None`` without ``B``).
    diagnostics : UnlearnDiagnostics or None
        Only if ``unlearn`` was called with ``options=ExactOptions(diagnostics=True)``.
    """

    t: int
    T: int
    B: float | None
    sigma: float
    path: tuple
    accepted: tuple
    rejected: Any
    regenerated: tuple
    restart: int
    steps_recomputed: int
    tv_bound: float | None
    retrain_probability_bound: float | None
    expected_steps_bound: float | None
    diagnostics: UnlearnDiagnostics | None = None

    def __post_init__(self):
        T = check_int(self.T, "T", 1)
        check_int(self.t, "t", 1, T)
        check_int(self.restart, "restart", 0, T)

    @property
    def retrained(self) -> bool:
        return self.rejected is not None

    def _diagnostic(self, name: str) -> float:
        if self.diagnostics is None:
            raise AttributeError(f"{name} is computed from the deleted user's statistic and is not "
                                 "recorded by default: call unlearn(..., options=ExactOptions(diagnostics=True))")
        return getattr(self.diagnostics, name)

    shift_norm = property(lambda self: self._diagnostic("shift_norm"))
    tv_per_node = property(lambda self: self._diagnostic("tv_per_node"))
    retrain_probability = property(lambda self: self._diagnostic("retrain_probability"))
    expected_steps_recomputed = property(lambda self: self._diagnostic("expected_steps_recomputed"))


# %% [markdown]
# Algorithms 2 and 3.  `train` and `extend` run Algorithm 2; `unlearn(run, DeleteStep(t))` — the
# package's one protocol (`bandit_unlearning.protocol`), registered here for a `Run` — copies the tree, couples the
# path (`tree.unlearn_leaf`, chapter B2b) and re-runs what must be re-run, after validating the request
# and the dummy's statistics — a refused request changes nothing.

# %% tags=["export"]
def run_steps(learner: PrefixSumLearner, users: tuple, tree, models: list, rng: np.random.Generator):
    """Unchecked: Algorithm 2's steps ``tree.n_leaves + 1 .. len(users)``, appending to ``models``.

    The loop of ``train``, ``unlearn`` and ``exact.registry.unlearn_user``, called after they have
    checked the learner, the users and the generator.  Each step's statistic is checked once
    (``_step_statistics``: as ``learner.statistics`` checks it, without re-checking the step).

    Parameters
    ----------
    learner : PrefixSumLearner
        The learner (not checked).
    users : tuple
        All users, already checked by the learner.
    tree : BinaryTree or LightTree
        The tree after ``tree.n_leaves`` steps.
    models : list
        ``w_1 .. w_{n+1}`` on entry; ``w_{n+2} .. w_{T+1}`` are appended.
    rng : numpy.random.Generator
        The generator the tree's new node keys come from.

    Returns
    -------
    None
    """
    update, append, noisy_prefix_sum = learner.update, tree.append, tree.noisy_prefix_sum
    for t in range(tree.n_leaves + 1, len(users) + 1):
        model = models[t - 1]
        append(_step_statistics(learner, users[t - 1], t, model), rng)
        models.append(update(noisy_prefix_sum(t), t, model))


def _step_statistics(learner: PrefixSumLearner, user, t: int, model) -> np.ndarray:
    """``learner.statistics`` inside a loop over steps: ``t`` is not re-checked, and the oracle's answer,
    when it already is a finite float vector of shape ``(d,)``, is returned as is (one whole-vector
    test, no copy: the caller only reads it, or hands it to a tree, which stores a copy)."""
    if user is ZERO_USER:
        return np.zeros(learner.d)
    x = learner.oracle(user, t, model)
    if (type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (learner.d,)
            and math.isfinite(x.dot(x))):
        return x
    return _valid_statistics(x, t, learner.d)                # the full check and its messages


def _check_users(users, learner: PrefixSumLearner) -> tuple:
    """The users as a tuple, each checked by ``learner.check_user`` (``ZERO_USER`` always passes) --
    all of them before any step runs, so a bad last user draws nothing."""
    if isinstance(users, (str, bytes)) or not hasattr(users, "__len__"):
        raise TypeError(f"users must be a sequence, got {type(users).__name__}")
    users = tuple(users)
    if learner.check_user is not None:
        for i, user in enumerate(users):
            if user is not ZERO_USER:
                learner.check_user(user)
    return users


# %% [markdown]
# `train` runs Algorithm 2 from the first step; `extend` continues a run where it stopped (the tree
# is anytime).

# %% tags=["export"]
def train(learner: PrefixSumLearner, users, rng: np.random.Generator | None = None,
          capacity: int | None = None) -> Run:
    """Algorithm 2: run ``learner`` over ``users`` (``T = len(users) >= 1`` steps) with fresh tree
    noise from ``rng`` (default: OS entropy; a seeded generator or an int seed makes the run
    reproducible and its seed key material).  ``capacity``: steps to preallocate the tree for (default
    ``T``).  Every user is checked (``learner.check_user``) before the first step.

    Parameters
    ----------
    learner : PrefixSumLearner
        The learner.
    users : sequence
        ``z_1 .. z_T``, users the learner's oracle serves (``T >= 1``).
    rng : numpy.random.Generator, int or None
        The source of the tree's node keys (its noise); ``None``: the operating system's entropy.
    capacity : int or None
        Steps to preallocate the tree for, ``>= 1`` (``None``: ``T``).

    Returns
    -------
    Run
        The run: ``T`` users, models ``w_1 .. w_{T+1}``, the frozen tree, no deletion.
    """
    check_instance(learner, PrefixSumLearner, "learner")
    users = _check_users(users, learner)
    if len(users) < 1:
        raise ValueError("T = len(users) must be >= 1")
    capacity = len(users) if capacity is None else check_count(capacity, "capacity", 1)
    rng = as_generator(rng)
    tree = learner.tree_factory(learner.d, learner.sigma, capacity)
    models = [learner.initial_model]
    run_steps(learner, users, tree, models, rng)
    return Run(learner, users, tuple(models), tree.freeze())


def extend(run: Run, users, rng: np.random.Generator | None = None) -> Run:
    """Continue ``run`` with more users (the tree is anytime); returns a new run.  Every new user is
    checked before the first step.

    Parameters
    ----------
    run : Run
        The run continued (not modified).
    users : sequence
        The new users ``z_{T+1} .. z_{T+n}`` (``n >= 0``).
    rng
        As in ``train``.

    Returns
    -------
    Run
        A run of ``T + n`` steps: ``run``'s first ``T`` steps unchanged, its deletions kept.
    """
    check_instance(run, Run, "run")
    users = run.users + _check_users(users, run.learner)
    rng = as_generator(rng)
    tree = run.tree.copy()
    models = list(run.models)
    run_steps(run.learner, users, tree, models, rng)
    return Run(run.learner, users, tuple(models), tree.freeze(), run.deleted)

# %% [markdown]
# **Options of Algorithm 3.** `ExactOptions` names the dummy that replaces a deleted user and what
# the record may carry; `options=None` means `ExactOptions()`.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class ExactOptions:
    """How a run of Paper B unlearns (``unlearn(run, request, options=ExactOptions(...))``).
    ``ExactOptions()`` is what ``options=None`` means.

    Parameters
    ----------
    dummy : object
        The user put in place of a deleted one (default ``ZERO_USER``: zero statistics); checked by
        the learner's ``check_user``.
    diagnostics : bool
        For a ``DeleteStep``, also record numbers computed from the deleted statistic
        (``UnlearnDiagnostics``: its shift norm, TV and the exact retraining probability -- for cost
        experiments; they reveal the deleted statistic's norm).
    retrain_if_cheaper : bool
        For ``DeleteSteps`` / ``DeleteUser`` (chapter B11): retrain from scratch when the one-pass
        deletion's worst case (``worst_case_cost``) exceeds a training of ``T`` steps.
    node_cost : float or None
        The cost of coupling one node, in training steps, for that worst case: finite, ``> 0``
        (``None``: ``NODE_COST``).
    """

    dummy: Any = ZERO_USER
    diagnostics: bool = False
    retrain_if_cheaper: bool = True
    node_cost: float | None = None

    def __post_init__(self):
        check_instance(self.diagnostics, bool, "diagnostics")
        check_instance(self.retrain_if_cheaper, bool, "retrain_if_cheaper")
        if self.node_cost is not None and (isinstance(self.node_cost, bool) or not isinstance(self.node_cost, (int, float))
                                           or not 0 < self.node_cost < float("inf")):
            raise ValueError(f"node_cost must be a finite number > 0 or None, got {self.node_cost!r}")


def exact_options(options) -> ExactOptions:
    """``options`` of a run's ``unlearn``: ``None`` (the defaults, ``ExactOptions()``) or an ``ExactOptions``.

    Parameters
    ----------
    options : ExactOptions or None
        What the caller passed (anything else: ``TypeError``).

    Returns
    -------
    ExactOptions
        ``options`` itself, or ``ExactOptions()`` for ``None``.
    """
    return ExactOptions() if options is None else check_instance(options, ExactOptions, "options")

# %% [markdown]
# **Algorithm 3.** `_unlearn_step` copies the tree, couples the path of leaf $t$ node by node and,
# on a rejection at node $b$, re-runs steps $r_b + 1, \dots, T$ with fresh noise; a refused request
# changes nothing.

# %% tags=["export"]
@register_unlearn(Run, DeleteStep)
def _unlearn_step(run: Run, request: DeleteStep, *, options: ExactOptions | None = None,
                  rng: np.random.Generator | None = None):
    """Algorithm 3, ``unlearn(run, DeleteStep(t), options=ExactOptions(...), rng=...)``: delete user ``t``
    (1-based) by replacing it with ``options.dummy``.

    Couples the path of leaf ``t`` node by node (``tree.unlearn_leaf``); on a rejection at node ``b``
    re-runs steps ``r_b + 1 .. T`` with the same users and the new models (fresh noise from ``rng``,
    default: OS entropy).  Returns ``(new_run, UnlearnRecord)``; ``run`` itself is never modified.
    The record carries nothing computed from the deleted statistic unless ``options.diagnostics``
    (then ``record.diagnostics`` holds the shift norm, its TV and the exact retraining probability and
    expected cost of this request -- for cost experiments; they reveal the deleted statistic's norm).
    Raises ``ValueError`` for a step outside ``[1, T]``, an already deleted step, or invalid dummy
    statistics, and ``TypeError`` for a bad ``rng`` or ``options``.
    """
    check_instance(run, Run, "run")
    check_instance(request, DeleteStep, "request")
    options = exact_options(options)
    dummy, diagnostics = options.dummy, options.diagnostics
    t = check_int(request.t, "t", 1, run.T)
    if t in run.deleted:
        raise ValueError(f"step {t} was already deleted")
    rng = as_generator(rng)
    learner = run.learner
    if dummy is not ZERO_USER and learner.check_user is not None:
        learner.check_user(dummy)
    rng = as_generator(rng)
    x_new = learner.statistics(dummy, t, run.models[t - 1])
    details = None
    if diagnostics:
        x_old = run.tree.leaf(t)
        shift, tv = float(np.linalg.norm(x_old - x_new)), tv_gaussians(x_old, x_new, learner.sigma)
    tree = run.tree.copy()
    coupling = tree.unlearn_leaf(t, x_new, rng)
    users = run.users[: t - 1] + (dummy,) + run.users[t:]
    models = run.models
    if coupling.retrained:
        r = coupling.restart
        models = list(run.models[:r])
        models.append(learner.update(tree.noisy_prefix_sum(r), r, models[r - 1]))
        run_steps(learner, users, tree, models, rng)
        models = tuple(models)
    path = coupling.path
    if diagnostics:
        details = UnlearnDiagnostics(shift, tv, path_retrain_probability(tv, path),
                                     path_expected_steps(tv, path, run.T))
    tv_B = None if learner.B is None else tv_gaussians([0.0], [learner.B], learner.sigma)
    record = UnlearnRecord(
        t=t, T=run.T, B=learner.B, sigma=learner.sigma, path=path, accepted=coupling.accepted,
        rejected=coupling.rejected, regenerated=coupling.regenerated, restart=coupling.restart,
        steps_recomputed=run.T - coupling.restart, tv_bound=tv_B,
        retrain_probability_bound=None if tv_B is None else path_retrain_probability(tv_B, path),
        expected_steps_bound=None if tv_B is None else path_expected_steps(tv_B, path, run.T),
        diagnostics=details,
    )
    return Run(learner, users, models, tree.freeze(), run.deleted | {t}), record


# %% [markdown]
# Checking a run: `verify(run)` (the protocol's check, registered here for a `Run`) replays it deterministically from its users and its tree, and compares
# every statistic, model and node sum exactly (`same_model`).

# %% tags=["export"]
def same_model(a, b) -> bool:
    """Exact equality of two models (arrays, numbers, tuples, lists, dicts, dataclasses).

    Parameters
    ----------
    a, b : object
        Two models, compared recursively: arrays by shape and values (nan equal to nan), tuples and
        lists by type and items, dicts by keys and values, dataclasses by type and fields, anything
        else by ``==`` (which must give one truth value, else ``TypeError``).

    Returns
    -------
    bool
        Whether ``a`` and ``b`` are the same model, bit for bit.
    """
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_model(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_model(a[k], b[k]) for k in a)
    if is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same_model(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        raise TypeError(f"same_model cannot compare models of type {type(a).__name__}: their equality is not "
                        "a single truth value (use arrays, numbers, tuples, lists, dicts or dataclasses)") from None


@register_verify(Run)
def _verify_run(run: Run) -> None:
    """``verify(run)``: replay ``run`` deterministically; raise ``ValueError`` at the first inconsistency.

    Checks every statistic ``x_t == oracle(z_t, t, w_t)``, every model
    ``w_{t+1} == update(u~_t, t, w_t)`` (from the tree's noisy prefix sums) and every internal node's
    clean value ``==`` the running sum of its leaves (chapter B2's canonical order) -- exact equality
    throughout.
    """
    check_instance(run, Run, "run")
    learner, tree = run.learner, run.tree
    if tree.n_leaves != run.T or len(run.models) != run.T + 1:
        raise ValueError(f"run has {run.T} users, {tree.n_leaves} leaves and {len(run.models)} models")
    if not same_model(run.models[0], learner.initial_model):
        raise ValueError("w_1 is not the learner's initial model")
    for t in range(1, run.T + 1):
        if not np.array_equal(tree.leaf(t), _step_statistics(learner, run.users[t - 1], t, run.models[t - 1])):
            raise ValueError(f"x_{t} differs from the oracle's answer on the recorded model")
        if not same_model(run.models[t], learner.update(tree.noisy_prefix_sum(t), t, run.models[t - 1])):
            raise ValueError(f"w_{t + 1} differs from UPDATE of the recorded noisy prefix sum")
    leaves = [tree.leaf(t) for t in range(1, run.T + 1)]
    for p in range(n_nodes(run.T)):
        node = node_at(p)
        if node.level:
            running = np.zeros(learner.d)
            for x in leaves[node.start - 1: node.end]:
                running += x
            if not np.array_equal(tree.clean(node), running):
                raise ValueError(f"the clean value of node {tuple(node)} is not the sum of its leaves")


# %%
from bandit_unlearning.exact.learner import *  # noqa: F403  (the module generated from the cell above)
from bandit_unlearning.protocol import DeleteStep, unlearn

# %% [markdown]
# ## 4. What the computation of a deletion reveals
#
# Theorem 3.3 (1) is a statement about the **output**: the unlearned run has the law of a run that
# never saw user $t$.  It says nothing about the **computation** that produced it — whether a node
# was rejected, from which step the learner re-ran, how long the call took — nor about an observer
# who sees the run both before and after the deletion.  Those are draws whose law depends on the
# deleted statistic: a path node rejects with probability $\mathrm{TV}_b = 2\Phi(\lVert x_t - x'_t\rVert / 2\sigma) - 1$,
# independently over the path (each node's test looks only at its own noise), so
# $$
# P[\text{retrained}] = 1 - \prod_{b \in \text{path}(t)} (1 - \mathrm{TV}_b), \qquad
# P[\text{restart} = r_{b_k}] = \mathrm{TV}_{b_k} \prod_{j < k} (1 - \mathrm{TV}_{b_j}).
# $$
# Whoever sees the `retrained` flag, the `restart` step (equivalently `steps_recomputed`, or the
# models that changed) or the time the call took holds one draw of these laws, and can guess the
# deleted data with an advantage equal to the total variation between the laws for two candidate
# users.  That advantage is bounded — both laws put at least $\prod_b (1 - \mathrm{TV}_B)$ on
# "nothing rejected", so it is at most the worst-case retraining probability
# $1 - (1 - \mathrm{TV}_B)^{|\text{path}|}$, the quantity Theorem 3.3 (3) bounds by
# $\rho\sqrt{2\log_2 T}$ — but it is not zero.
#
# Below, exactly and then measured: a learner whose user $t$ contributes one pull and its reward,
# $x_t = (1, r)$ (the bandit of chapter B3b against the zero dummy: $\lVert x_t\rVert = \sqrt{1 + r^2}$),
# $T = 8$, $\sigma = 3$, the first user deleted (a path of 4 nodes), and two deleted rewards,
# $r = 0.02$ and $r = 0.98$.

# %%
import math
import time

from scipy.special import erf

from bandit_unlearning.exact.tree import leaf_path
from bandit_unlearning.testing.montecarlo import hoeffding_margin

SIDE_T, SIDE_SIGMA, SIDE_STEP, SIDE_REWARDS = 8, 3.0, 1, (0.02, 0.98)
side_path = leaf_path(SIDE_STEP, SIDE_T)


def node_tv(shift: float) -> float:
    return float(erf(shift / (2 * math.sqrt(2) * SIDE_SIGMA)))


def restart_law(shift: float) -> dict:
    """Exact law of the step the learner restarts from (``SIDE_T``: nothing rejected)."""
    tv, law, kept = node_tv(shift), {}, 1.0
    for b in side_path:
        law[b.end] = law.get(b.end, 0.0) + kept * tv
        kept *= 1 - tv
    law[SIDE_T] = law.get(SIDE_T, 0.0) + kept
    return law


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


shifts = {r: math.sqrt(1 + r * r) for r in SIDE_REWARDS}
p_retrain = {r: 1 - (1 - node_tv(shifts[r])) ** len(side_path) for r in SIDE_REWARDS}
flag_advantage = abs(p_retrain[0.98] - p_retrain[0.02])
# the flag, the restart step and the cost are functions of the coupling's outcome (which node rejected,
# if any): the outcome law's TV bounds the advantage of any of them, the time of the call included
outcome_law = {r: {**{("rejected at", b.end, b.level): (1 - node_tv(shifts[r])) ** k * node_tv(shifts[r])
                      for k, b in enumerate(side_path)}, "kept": (1 - node_tv(shifts[r])) ** len(side_path)}
               for r in SIDE_REWARDS}
outcome_advantage = total_variation(outcome_law[0.02], outcome_law[0.98])
worst_case = 1 - (1 - node_tv(math.sqrt(2))) ** len(side_path)        # B = sqrt 2: any two users
for r in SIDE_REWARDS:
    print(f"deleted reward {r}: shift {shifts[r]:.4f}, TV per node {node_tv(shifts[r]):.4f}, "
          f"P[retrained] = {p_retrain[r]:.4f}")
print(f"advantage of an observer of the flag: {flag_advantage:.4f}; of the coupling's whole outcome "
      f"(which node, hence the cost): {outcome_advantage:.4f}; bound for any two users: {worst_case:.4f}")
assert flag_advantage <= outcome_advantage + 1e-12 <= worst_case + 1e-12

# %% [markdown]
# Here the whole outcome tells no more than the flag: for these small TVs each
# $P[\text{rejected at } b_k] = (1 - \mathrm{TV})^k\,\mathrm{TV}$ grows with the shift, so the two laws
# differ in one direction everywhere except at "nothing rejected".
#
# The same probabilities measured on the implementation: each trial trains a fresh run (the
# probability is over the tree's noise as well as the coupling's uniforms) and deletes user 1.  With
# `N_SIDE = 2000` trials per reward, the frequency lies within the Hoeffding margin of its exact value
# except with probability $10^{-6}$ (two-sided), and the broken prediction — "the cost does not depend
# on the data: every request costs what the worst-case shift $B$ costs" — sits outside that margin
# for $r = 0.02$ (a correct implementation lands within the margin of it with the Hoeffding
# probability printed, below $10^{-6}$).  The wall time of each deletion is recorded too (not
# asserted: timings vary between machines).

# %%
N_SIDE = 2000
side_rng = np.random.default_rng(2026)
side_learner = PrefixSumLearner(d=2, sigma=SIDE_SIGMA, oracle=lambda user, t, model: np.array([1.0, user]),
                                update=lambda u_tilde, t, model: 0, initial_model=0, B=math.sqrt(2),
                                name="one pull and its reward per user")
side_trials = {}
for r in SIDE_REWARDS:
    users = (r,) + (0.5,) * (SIDE_T - 1)
    flags, seconds = [], []
    for _ in range(N_SIDE):
        run = train(side_learner, users, side_rng)
        start = time.perf_counter()
        _, record = unlearn(run, DeleteStep(SIDE_STEP), rng=side_rng)
        seconds.append(time.perf_counter() - start)
        flags.append(record.retrained)
    side_trials[r] = (np.array(flags), np.array(seconds))
margin = hoeffding_margin(N_SIDE, 1.0, 0.5e-6)
for r in SIDE_REWARDS:
    freq = side_trials[r][0].mean()
    print(f"deleted reward {r}: retrained in {freq:.3f} of {N_SIDE} deletions (exact {p_retrain[r]:.3f}, "
          f"margin {margin:.3f})")
    assert abs(freq - p_retrain[r]) <= margin
gap = worst_case - p_retrain[0.02]
chance_within = math.exp(-2 * N_SIDE * (gap - margin) ** 2)      # P[freq >= worst_case - margin] (Hoeffding)
print(f"data-independent prediction {worst_case:.3f} for r = 0.02: gap {gap:.3f} > margin {margin:.3f} "
      f"(a correct run lands within the margin of it with probability <= {chance_within:.0e})")
assert gap > margin and chance_within < 1e-6
assert abs(side_trials[0.02][0].mean() - worst_case) > margin    # the data-independent prediction is rejected

# %%
# NBVAL_IGNORE_OUTPUT
for r in SIDE_REWARDS:
    flags, seconds = side_trials[r]
    print(f"deleted reward {r}: median time of a deletion {1e3 * np.median(seconds):.2f} ms "
          f"(retrained: {1e3 * np.median(seconds[flags]):.2f} ms, not: {1e3 * np.median(seconds[~flags]):.2f} ms)")

# %% [markdown]
# **What a deployment can do.** The record's `retrained`, `restart`, `steps_recomputed`, `accepted`
# and `rejected`, the changed models, and the time, CPU and I/O of the call all carry this advantage.
# - Do not expose the record, or the old run next to the new one, to anyone who must not learn about
#   the deleted user; publish only the new run.
# - Make the cost independent of the data: pad every deletion to the worst case for its position —
#   re-running steps $t + 1, \dots, T$ (a rejection at the leaf) — either by waiting out that time or
#   by simply re-running from step $t$ with fresh noise for every node ending at or after $t$ (also an
#   exact unlearning: every node after the leaf in post-order is redrawn from the dummy world's
#   conditionals), which gives up the coupling's savings.
# - Or batch deletions and run them on a fixed schedule with a fixed budget, so that an observer sees
#   the batch, not the request.

# %% [markdown]
# ## Summary
# - `bandit_unlearning.exact.learner`: `PrefixSumLearner`, `train`, `extend`, `ExactOptions`, and
#   the protocol's `unlearn(run, DeleteStep(t))` (Algorithm 3, returning a new immutable `Run` and an
#   `UnlearnRecord`) and `verify(run)` for a `Run`,
#   `same_model`, `ReplayableUser`, `replayable_users`, `ZERO_USER`.
# - Exactness (Theorem 3.3 (1)) is derived by induction over post-order: a sequential maximal
#   coupling of conditionally Gaussian node values, with everything after the first rejection
#   redrawn from the dummy world's conditionals; this needs deterministic oracle/update and
#   replayable users (E10), and does not depend on $\sigma$ or $B$ (E8).  Chapter B4 tests it.
# - The guarantee is about the output, not the computation: whether a deletion retrained, from where,
#   and how long it took depend on the deleted data (section 4: for deleted rewards 0.02 and 0.98 the
#   retraining probability differs by the advantage printed there, at most the worst-case retraining
#   probability); a deployment that must hide it pads every deletion to the worst case.
# - [Chapter B3b](03b_online_bandit.ipynb): the first instance (UCB for an online bandit), and the
#   exact checks of the mechanics on it.
