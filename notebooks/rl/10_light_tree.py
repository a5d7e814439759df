# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.light_tree
# ---

# %% [markdown]
# # Chapter B10 — A memory-light tree: the same mechanism without storing the noise
#
# *Paper B, Algorithms 2–3 (the binary tree mechanism and its unlearning), implemented in
# $O(\text{non-zeros} + T + d\log T)$ memory instead of $O(Td)$.  Exports
# `bandit_unlearning.exact.light_tree`.*
#
# The dense tree of chapter B2 stores two vectors of dimension $d$ per node — clean and noisy values
# — for $2N(T) \approx 4T$ rows: $32\,Td$ bytes.  For tabular RL (chapter B6) $d = 2SAH + S^2AH =
# 23{,}000$ on the 5x5 gridworld with $H = 10$, so $T = 100{,}000$ episodes would need
# $32 \cdot 10^5 \cdot 23{,}000$ bytes $\approx 74$ GB.  Yet an episode has at most $3H = 30$
# non-zero statistics, and nothing in the algorithm needs the noise to be *stored*: it only needs it
# to be *the same every time it is read*.
#
# This chapter builds `LightTree`, a second implementation of the tree interface of chapter B2 that
# 1. keeps the leaves sparsely and recomputes clean sums with one `bincount`;
# 2. keeps a 192-bit key per node instead of its noise, and regenerates the noise from the key;
# 3. maintains the noisy values of the current dyadic decomposition incrementally, so a step
#    generates *one* noise vector and a noisy prefix sum is a copy;
# 4. implements Algorithm 3's coupling with the same draws, storing densely only the noisy values of
#    the nodes that an unlearning request touched (and erasing their keys — section 2c explains why
#    the "sparse corrections" one might store instead would keep the deleted data);
#
# and checks that, **for the same generator, it gives the dense tree's outputs bit for bit** — noisy
# prefix sums, node values, coupling decisions, unlearning records and the draws it takes — over
# random sequences, sparse and dense statistics and sequences of deletions; that the exactness
# battery of chapter B4 passes with it (and rejects a broken light tree); and what it costs.  It is
# the default `tree_factory` of the learners of chapter B3a (it is faster at every size measured);
# `BinaryTree` stays the readable reference.

# %%
import dataclasses
import time

import numpy as np
import matplotlib.pyplot as plt

from bandit_unlearning.exact.bandit import actions, bandit_users, chosen_arm, ucb_bandit_learner
from bandit_unlearning.exact.learner import same_model, train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, unlearn, verify
from bandit_unlearning.exact.tree import (
    BinaryTree, Node, SparseStatistic, dyadic_decomposition, leaf_path, n_nodes, node_at, node_noise,
    postorder_position,
)
from bandit_unlearning.experiments.exactness import battery
from bandit_unlearning.rl.envs import gridworld
from bandit_unlearning.rl.ucbvi import StatsLayout
from bandit_unlearning.rl.users import rollout_batch

rng = np.random.default_rng(20260610)

# %% [markdown]
# ## 1. Statement
#
# **Claim.** For every sequence of operations (`append`, `unlearn_leaf`, `truncate`, `copy`) and
# every generator state, `LightTree` and `BinaryTree` return identical floating-point numbers —
# noisy prefix sums, clean and noisy node values, leaves, `PathCoupling` records — and leave the
# generator in the same state.  Consequently the learner of chapter B3a produces identical runs and
# identical unlearned runs with either tree, so everything chapters B3a–B4 derive and test about
# Algorithms 2–3 (the law of the outputs, $\rho$-TV-stability, exactness of unlearning) holds for the
# light tree verbatim.
#
# **Cost.** Memory: 12 bytes per stored non-zero and 8 per leaf (compressed rows), 24 per complete
# node (its key), $O(d\log T)$ for the decomposition, and $8d$ bytes per node touched by unlearning
# requests (at most $\lfloor\log_2 T\rfloor + 1$ per request).  Time per step: one noise vector (the
# dense tree draws $\nu_2(t) + 1$, two on average), one `bincount` over the new decomposition node's
# leaves ($O(d + 2^{\nu_2(t)}\,\text{nnz})$, amortised $O(d + \text{nnz}\log T)$) and two vector
# additions; a noisy prefix sum of the last step is a copy.

# %% [markdown]
# ## 2. Derivation: why this is the same mechanism
#
# ### 2a. Everything the dense tree computes is a function of the leaves and the node keys
#
# Chapter B2a (section 4a) pinned down the dense tree's randomness and arithmetic:
# - node $b$'s noise is $\xi_b = \sigma\cdot$`standard_normal`$_d(\mathrm{SFC64}(k_b))$ for a 192-bit key
#   $k_b$ drawn from the algorithm's generator when the node completes;
# - its clean value $v_b$ is the running sum of its leaves from 0, left to right;
# - its noisy value is $\tilde v_b = v_b + \xi_b$ (one rounding) when it completes, kept bit for bit
#   when a coupling accepts and replaced by $(v_b + v'_b) - \tilde v_b$ when it rejects;
# - $\tilde u_t$ is the sum of the noisy values of $\mathcal D(t)$, largest node first.
#
# So if a second implementation (i) draws the same keys from the generator in the same order,
# (ii) makes the same coupling decisions from the same uniforms, and (iii) evaluates these formulas
# with the same floating-point operations in the same order, it returns the same bits — whatever
# it stores.  `LightTree` stores the leaves (sparse), the keys, and the noisy values of the nodes
# whose value is no longer "running sum + regenerated noise" (the touched ones), and recomputes the
# rest:
#
# | quantity | dense tree | light tree |
# |---|---|---|
# | leaf $x_t$ | row of `_clean` | compressed row (indices, values) |
# | clean value $v_b$ | row, running sum of the leaves | `bincount` of the node's entries — adds them to a zero vector in order, the same running sum coordinate by coordinate (a zero is added exactly) |
# | noise $\xi_b$ | drawn once, added, forgotten | regenerated from the stored key $k_b$ |
# | noisy value, untouched node | row | $v_b + \xi_b$, recomputed (same rounding) |
# | noisy value, touched node | row | stored (dense), key erased |
# | $\tilde u_n$ (last step) | sum of $\mathrm{popcount}(n)$ rows | maintained (below) |
#
# The one place where "any order" would *not* do is floating point: for integer statistics
# (counts, Bernoulli rewards — every RL and bandit statistic of this project) all summation orders
# give the same exact sums, but for real-valued statistics the orders must agree, and they do by
# construction.  Section 4a shows a light tree that sums in another order: identical on integer
# statistics, caught on real ones.
#
# ### 2b. The decomposition, maintained incrementally
#
# $\mathcal D(t)$ is $\mathcal D(t-1)$ with its last $\nu_2(t)$ nodes (levels $0..\nu_2(t)-1$, which
# merge with leaf $t$) replaced by the one node of level $\nu_2(t)$ ending at $t$ — a binary counter.
# The light tree keeps, for each node $b_j$ of $\mathcal D(n)$, its noisy value and the partial sum
# $P_j = ((\tilde v_{b_1} + \tilde v_{b_2}) + \dots) + \tilde v_{b_j}$; an `append` pops $\nu_2(t)$
# entries and pushes one ($P_{new} = P_{top} + \tilde v_{new}$, the same additions as the dense
# tree's sum), so $\tilde u_n = P_{top}$.  Only the pushed node's noise is generated: the other
# nodes completed at $t$ (the leaf and its ancestors below level $\nu_2(t)$) are never read by a
# later prefix sum, and their keys are kept for unlearning.  Per step: one noise vector, one
# `bincount` over $2^{\nu_2(t)}$ leaves, two additions — $O(d)$ plus $O(\text{nnz}\log T)$ amortised.
# A prefix sum of an earlier step $t < n$ (used by `verify`) recomputes its
# $\mathrm{popcount}(t)$ noisy values.
#
# ### 2c. Unlearning: shift, flip — and why the corrections are not stored
#
# In terms of the noise $\eta_b = \tilde v_b - v_b$ (chapter B2a, 4a), Algorithm 3 **accepts** by
# shifting it, $\eta_b \leftarrow \eta_b + (x_t - x'_t)$ (so that $\tilde v_b$ is kept), and
# **rejects** by flipping it, $\eta_b \leftarrow -\eta_b$ (the reflection).  Since $x_t - x'_t$ has
# at most $6H$ non-zeros, it is tempting to store, per touched node, its key plus these small
# corrections (a sign and a sparse shift), and to regenerate $\eta_b = \pm\xi(k_b) + \text{shifts}$.
# **That state would not be unlearned:** the stored shift *is* $x_t - x'_t$ — for the zero dummy,
# the deleted user's statistics, verbatim.  More generally, any state from which the old noise
# $\xi(k_b)$ of a kept node can be regenerated, together with its kept noisy value and the new
# clean value, reveals $v_b - v'_b = (\tilde v_b - \xi(k_b)) - v'_b = x_t - x'_t$.  Paper B's exact
# unlearning compares the whole output of the algorithm, meta-data included, with a run that never
# saw the user; the dense tree's meta-data (clean and noisy values) passes that test by the coupling
# argument of chapter B3a, a (key, correction) state does not.  The rejected node has the same
# problem in a weaker form (with $\xi(k_b)$ known, the fact that the test rejected is informative
# about $x_t - x'_t$).
#
# So the light tree **stores the noisy value of every node its coupling visited — accepted or
# reflected — densely, and erases that node's key**: exactly the information the dense tree holds
# for that node, no more.  This costs $8d$ bytes per touched node, at most
# $\lfloor\log_2 n\rfloor + 1$ per request, and requests share the upper nodes; it costs nothing
# while learning.  The nodes regenerated after a rejection get new keys from the generator
# ("fresh noise"; keys of later nodes are drawn when they complete again), and the tree drops the
# stored values of nodes it truncates.
#
# **Erasing a key only helps if it cannot be made again: the seed is key material.**  The keys a
# light tree still stores are secrets of the same kind as the erased ones — each one, with the
# node's clean value, is the node's noise — and all of them come from one generator.  If that
# generator was seeded with a number someone can learn or guess (0, 42, a date, anything printed in
# a notebook), they replay it: the stored keys confirm the guess in milliseconds, the replay returns
# the erased key of the deleted leaf, and kept noisy value minus regenerated noise minus the other
# leaves is $x_t$.  Three defences, all on by default (chapter B2a, *keys are secrets*): without a
# generator (`rng=None`, the default of `append`, `unlearn_leaf`, `train`, `unlearn`) the keys come
# from a generator seeded with fresh operating-system entropy (128 bits: no guess); a stored key is a
# BLAKE2b hash of the generator's words, so the keys still stored reveal nothing about the
# generator's state (numpy's generators are not cryptographic); and nothing a deletion returns is
# computed from the deleted statistic.  Passing a seeded generator remains possible, as an explicit
# opt-in for reproducible research — this book does it everywhere, so that nbval can check its
# outputs — and then the seed must be kept as secret as the data (section 4d shows the attack).
#
# (Fresh keys are what Algorithm 3 prescribes.  Re-using the old keys of regenerated nodes would
# still give the right *law* — their old noise influenced nothing that the unlearned run keeps —
# but would make the new run's noise a function of the old run's, which is not what the paper's
# algorithm does; we follow the paper.)
#
# The acceptance test needs $v_b$ and $v'_b$ on the support of $x_t - x'_t$ and the noisy value:
# two `bincount`s over the node's leaves (with leaf $t$ as it was, and replaced) and, for an
# untouched node, its regenerated noise.  A request thus costs $O(n\cdot\text{nnz} + d\log n)$
# (the path's nodes cover at most $2n$ leaves) — the dense tree's costs $O(nd)$.

# %% [markdown]
# ## 3. Implementation
#
# `LightTree(d, sigma, capacity=1)` with the interface of `BinaryTree` (chapter B2b): `d`, `sigma`,
# `n_leaves`, `n_nodes`, `frozen`, `nbytes`; `append(x, rng=None)`, `noisy_prefix_sum(t)`,
# `clean_prefix_sum(t)`, `leaf(t)`, `leaves()`, `clean(node)`, `noisy(node)`, `values()`, `copy()`,
# `freeze()`, `truncate(n)`, `unlearn_leaf(t, x_new, rng=None) -> PathCoupling`; plus `leaf_sparse(t)` and
# `touched` (the nodes stored densely).  Statistics are dense vectors or `SparseStatistic`s, validated
# by the same functions as the dense tree's (so bad input gets the same errors, before anything
# changes).

# %% tags=["export"]
"""The memory-light binary tree mechanism (chapter B10): the same mechanism and the same numbers as
``bandit_unlearning.exact.tree.BinaryTree``, in ``O(nnz + T + d log T)`` memory instead of ``O(T d)``.

``LightTree(d, sigma, capacity=1)`` has ``BinaryTree``'s interface.  It stores

* the leaves sparsely (compressed rows; an RL episode has at most ``3H`` non-zeros) -- a node's clean
  value is the running sum of its leaves, one ``bincount``;
* one 192-bit key per complete node (24 bytes instead of ``8 d``): the noise ``node_noise(key)`` is
  regenerated when needed;
* for the nodes of the current dyadic decomposition ``D(n)``, their noisy values and the partial
  sums ``v~_1, v~_1 + v~_2, ...`` in the canonical order, so that an ``append`` generates the noise
  of one node (the one joining ``D(t)``) and ``noisy_prefix_sum(n)`` is a copy;
* the noisy value of every node that took part in a coupling of Algorithm 3, densely, with its key
  erased (so the tree keeps neither the old noise nor the deleted statistics).

Given the same generator, every output -- noisy prefix sums, node values, coupling decisions,
``PathCoupling`` records, the draws taken from the generator -- equals ``BinaryTree``'s bit for bit.
"""

import numpy as np

from bandit_unlearning.checks import as_generator, check_count, check_int
from bandit_unlearning.exact import accel
from bandit_unlearning.exact.tree import (
    KEY_WORDS, BaseTree, BinaryTree, Node, PathCoupling, as_node, coupling_accepts, decomposition_rows,
    draw_node_keys, fold_rows, leaf_path, n_nodes, node_at, node_noise, postorder_position, statistic_sparse,
)
from bandit_unlearning.literate import add_to_class, sections_from
from bandit_unlearning.privacy.coupling import check_sigma
from bandit_unlearning.secrecy import check_pickle_allowed

_FLOAT64 = np.dtype(np.float64)       # the dtype of the statistics' fast path (a singleton)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


_NO_PREVIOUS = _readonly(np.zeros(0))  # the compiled append's partial sum before the first node: none

# %% [markdown]
# The class and its storage: compressed leaf rows (`_ptr`, `_idx`, `_val`), the key table, the
# touched nodes and the decomposition stack.  The attributes and copies it shares with the dense
# tree come from `BaseTree` (chapter B2b).

# %% tags=["export"]
@sections_from(BinaryTree)
class LightTree(BaseTree):
    """Memory-light binary tree mechanism (chapter B10), bit-identical to ``BinaryTree``.

    ``d``, ``sigma``, ``capacity`` as for ``BinaryTree`` (``capacity`` preallocates the leaf pointers
    and the key table; everything grows by doubling).  Memory: 12 bytes per stored non-zero, 24 bytes
    per complete node, ``O(d log T)`` for the decomposition, plus ``8 d`` bytes per node touched by an
    unlearning request.  ``rng`` is used exactly as by ``BinaryTree`` (default: fresh OS entropy):
    ``append`` draws the keys of the completed nodes; ``unlearn_leaf`` one uniform per visited node,
    then the keys of the regenerated nodes.  The stored keys are secrets (chapter B2): whoever holds
    them holds the noise.  A frozen tree stays frozen through a pickle round trip; pickling refuses
    (``TypeError``) unless inside ``bandit_unlearning.secrecy.allow_secrets()`` (chapter B2a: a pickle of
    the keys is the keys); ``copy.deepcopy`` needs no opt-in.
    """

    def __init__(self, d: int, sigma: float, capacity: int = 1):
        self._d = check_count(d, "d", 1)
        if self._d >= 2**31:
            raise ValueError(f"d must be < 2**31 (int32 indices), got {self._d}")
        self._sigma = check_sigma(sigma)
        capacity = check_count(capacity, "capacity", 1)
        self._ptr = np.zeros(capacity + 1, dtype=np.int64)     # leaf t: entries ptr[t-1] .. ptr[t]-1
        self._idx = np.zeros(64, dtype=np.int32)
        self._val = np.zeros(64)
        self._keys = np.zeros((2 * capacity, KEY_WORDS), dtype=np.uint64)
        self._touched = {}                                       # position -> noisy value (read-only)
        self._stack = []                                         # D(n): (position, noisy value, partial sum)
        self._n = 0
        self._frozen = False

    @property
    def touched(self) -> tuple:
        """Nodes whose noisy value is stored densely (they took part in a coupling), in post-order."""
        return tuple(node_at(p) for p in sorted(self._touched))

    @property
    def nbytes(self) -> int:
        """Bytes of the tree's arrays (allocated buffers, including unused capacity; an array shared
        between the decomposition and the touched nodes is counted once)."""
        arrays = [self._ptr, self._idx, self._val, self._keys, *self._touched.values()]
        arrays += [a for _, noisy, partial in self._stack for a in (noisy, partial)]
        return sum({id(a): a.nbytes for a in arrays}.values())

# %% [markdown]
# **Storage and regeneration.** `_reserve` grows the leaf pointers, the entries and the key table
# by doubling; `_running_sum` is the canonical clean sum of a range of leaves, one `bincount` (it can
# substitute one leaf's entries, which is how a coupling computes $v'_b$ without writing $x'_t$
# first); `_noisy_value` regenerates a node's noisy value from its key unless the node is touched; and
# `_rebuild_stack` recomputes the decomposition after a truncation, keeping what did not change.

# %% tags=["export"]
@add_to_class(LightTree)
def _reserve(self, leaves: int, entries: int, rows: int):
    if leaves + 1 > self._ptr.size:
        grown = np.zeros(max(leaves + 1, 2 * self._ptr.size), dtype=np.int64)
        grown[: self._n + 1] = self._ptr[: self._n + 1]
        self._ptr = grown
    if entries > self._idx.size:
        size, used = max(entries, 2 * self._idx.size), int(self._ptr[self._n])
        for name, dtype in (("_idx", np.int32), ("_val", np.float64)):
            grown = np.zeros(size, dtype=dtype)
            grown[:used] = getattr(self, name)[:used]
            setattr(self, name, grown)
    if rows > self._keys.shape[0]:
        grown = np.zeros((max(rows, 2 * self._keys.shape[0]), KEY_WORDS), dtype=np.uint64)
        grown[: self.n_nodes] = self._keys[: self.n_nodes]
        self._keys = grown


@add_to_class(LightTree)
def _leaf_dense(self, t: int) -> np.ndarray:
    a, b = self._ptr[t - 1], self._ptr[t]
    out = np.zeros(self._d)
    out[self._idx[a:b]] = self._val[a:b]
    return out


@add_to_class(LightTree)
def _running_sum(self, first: int, last: int, replace=None) -> np.ndarray:
    """Canonical clean sum ``((0 + x_first) + ...) + x_last``: ``bincount`` adds the entries of
    the leaves to a zero vector in order.  ``replace = (t, indices, values)`` substitutes leaf
    ``t``'s entries (``first <= t <= last``)."""
    a, b = int(self._ptr[first - 1]), int(self._ptr[last])
    idx, val = self._idx[a:b], self._val[a:b]
    if replace is not None:
        t, new_idx, new_val = replace
        i, j = int(self._ptr[t - 1]) - a, int(self._ptr[t]) - a
        idx = np.concatenate([idx[:i], new_idx, idx[j:]])
        val = np.concatenate([val[:i], new_val, val[j:]])
    if idx.size == 0:
        return np.zeros(self._d)
    return np.bincount(idx, weights=val, minlength=self._d)


@add_to_class(LightTree)
def _noisy_value(self, p: int) -> np.ndarray:
    """Noisy value of the complete node at position ``p``: stored if touched, else its running
    sum plus the noise regenerated from its key (the same rounding as ``BinaryTree``)."""
    noisy = self._touched.get(p)
    if noisy is None:
        node = node_at(p)
        noisy = self._running_sum(node.start, node.end)
        noisy += node_noise(self._keys[p], self._d, self._sigma)
    return noisy


@add_to_class(LightTree)
def _rebuild_stack(self, keep_below: int):
    """Noisy values and partial sums of ``D(n)``; entries of the old decomposition at positions
    ``< keep_below`` are reused (those nodes and everything before them are unchanged)."""
    stack = []
    for j, p in enumerate(decomposition_rows(self._n)):
        if j < len(self._stack) and self._stack[j][0] == p and p < keep_below:
            stack.append(self._stack[j])
            continue
        noisy = _readonly(self._noisy_value(p))
        partial = noisy if not stack else _readonly(stack[-1][2] + noisy)
        stack.append((p, noisy, partial))
    self._stack = stack

# %% [markdown]
# **Algorithm 2.** `append` stores the leaf, takes the keys of every node step $t$ completes (the
# same draw as the dense tree's), and generates the noise of one node only: the one joining
# $\mathcal D(t)$, which replaces the nodes it merges on the stack.  A leaf that is its own node is
# written straight into a zero vector (its entries are distinct: the same bits as `bincount`).
# `noisy_prefix_sum(n)` is then a copy of the top of the stack.  Arguments are checked once, at
# the boundary.
#
# With the compiled kernels (chapter B2a), a dense float statistic -- the usual case -- is appended in
# one call: its non-zeros stored, the keys hashed, the new node's running sum, noise and partial sum,
# in the order of the code below.  The kernel writes the new stack entry into one array made here
# (`_new_entry`: its noisy value and, above the first entry, its partial sum -- two rows), and says
# when a buffer lacks room; it has then written nothing, and the buffers grow before the same call is
# made again.  `tests/test_exact_accel.py` compares every output with the numpy code.

# %% tags=["export"]
@add_to_class(LightTree)
@sections_from(BinaryTree.append)
def append(self, x, rng: np.random.Generator | None = None) -> None:
    """As in ``BinaryTree.append`` (TreeUpdate), but ``x`` is stored sparsely and only the node
    joining ``D(t)`` has its noise generated (the others keep their keys alone)."""
    if self._frozen:
        self._check_mutable()                            # the refusal
    fast = accel.kernels()
    dense = (fast is not None and type(x) is np.ndarray and x.dtype is _FLOAT64 and x.shape == (self._d,)
             and x.flags.carray and fast.ALL_FINITE(x))  # a finite, C-contiguous float vector: checked
    if not dense:
        idx, val = statistic_sparse(x, self._d, "x")     # the rule a non-finite x broke, or the general path
    if type(rng) is not np.random.Generator:
        rng = as_generator(rng)
    t = self._n + 1
    k = (t & -t).bit_length()                        # the nodes ending at t: levels 0 .. nu_2(t)
    stack = self._stack
    if dense:                                        # one compiled call: the same bits as below
        raw = rng.bit_generator.random_raw(k * KEY_WORDS)
        below = len(stack) - (k - 1)                 # entries the new node keeps; _new_entry, inlined (a call less)
        if below:
            previous, out = stack[below - 1][2], np.empty((2, self._d))
        else:
            previous, out = _NO_PREVIOUS, np.empty((1, self._d))
        kernel = fast.LIGHT_APPEND_DENSE             # no dispatch (chapter B2a's typed kernels)
        if not kernel(raw, x, self._ptr, self._idx, self._val, self._keys, t, self._sigma, previous, out):
            self._reserve(t, int(self._ptr[t - 1]) + self._d, 2 * t - t.bit_count())   # x's entries, N(t) keys
            kernel(raw, x, self._ptr, self._idx, self._val, self._keys, t, self._sigma, previous, out)  # no room before
        if k > 1:
            del stack[1 - k:]                        # the nodes merged into the new one
        self._n = t
        out.setflags(False)                          # write=False (positional: cheaper); and so its rows, views of it
        noisy = out[0]
        stack.append((2 * t - t.bit_count() - 1, noisy, out[1] if below else noisy))
        return
    first = 2 * (t - 1) - (t - 1).bit_count()        # n_nodes(t - 1)
    if fast is None:
        keys = draw_node_keys(rng, k)
    else:                                            # the same words; hashed below, compiled
        raw = rng.bit_generator.random_raw(k * KEY_WORDS)
    start = int(self._ptr[t - 1])
    self._reserve(t, start + idx.size, first + k)
    self._idx[start:start + idx.size] = idx
    self._val[start:start + idx.size] = val
    self._ptr[t] = start + idx.size
    self._n = t
    if k > 1:
        del stack[1 - k:]                            # the nodes merged into the new one
    if fast is not None:                             # keys, running sum, noise, partial sum: the same bits
        previous, out = self._new_entry(len(stack))
        fast.LIGHT_APPEND(raw, self._ptr, self._idx, self._val, t - (1 << (k - 1)) + 1, t, self._sigma, self._keys,
                          first, previous, out)           # the tree's own buffers: their types, no dispatch
        out.setflags(False)                          # write=False
        noisy = out[0]
        stack.append((first + k - 1, noisy, out[1] if len(out) > 1 else noisy))
        return
    self._keys[first:first + k] = keys
    if k > 1:
        noisy = self._running_sum(t - (1 << (k - 1)) + 1, t)
    else:                                            # the leaf alone: its entries added to zeros
        noisy = np.zeros(self._d)
        noisy[idx] = val
    noisy += node_noise(keys[k - 1], self._d, self._sigma)
    noisy = _readonly(noisy)
    partial = noisy if not stack else _readonly(stack[-1][2] + noisy)
    stack.append((first + k - 1, noisy, partial))

# %% tags=["export"]
@add_to_class(LightTree)
def _new_entry(self, below: int):
    """``(previous, out)`` for a compiled append whose new node lands on ``below`` kept entries: the
    partial sum it continues (or none) and the array of one or two rows the kernel fills."""
    if below:
        return self._stack[below - 1][2], np.empty((2, self._d))
    return _NO_PREVIOUS, np.empty((1, self._d))


@add_to_class(LightTree)
@sections_from(BinaryTree.noisy_prefix_sum)
def noisy_prefix_sum(self, t: int) -> np.ndarray:
    """As in ``BinaryTree.noisy_prefix_sum`` (GetNoisyPrefixSum, canonical order); ``t = n``: a copy
    of the maintained sum; ``t < n``: the decomposition's noisy values are recomputed."""
    if type(t) is not int or not 0 <= t <= self._n:
        t = check_int(t, "t", 0, self._n)
    if t == 0:
        return np.zeros(self._d)
    if t == self._n:
        return self._stack[-1][2].copy()
    return fold_rows([self._noisy_value(p) for p in decomposition_rows(t)])


@add_to_class(LightTree)
@sections_from(BinaryTree.clean_prefix_sum)
def clean_prefix_sum(self, t: int) -> np.ndarray:
    """As in ``BinaryTree.clean_prefix_sum``: ``u_t = x_1 + ... + x_t`` (running sum, canonical order)."""
    t = check_int(t, "t", 0, self._n)
    return self._running_sum(1, t) if t else np.zeros(self._d)

# %% [markdown]
# **Access**, with the dense tree's results: dense copies of leaves and node values (regenerated
# from keys where needed), and `to_dense()`, the dense tree holding the same values bit for bit.

# %% tags=["export"]
@add_to_class(LightTree)
@sections_from(BinaryTree.leaf)
def leaf(self, t: int) -> np.ndarray:
    """As in ``BinaryTree.leaf``: the statistic ``x_t``, a dense copy of its stored non-zeros."""
    return self._leaf_dense(check_int(t, "t", 1, self._n))


@add_to_class(LightTree)
def leaf_sparse(self, t: int):
    """The statistic ``x_t`` as ``(indices, values)`` copies, indices increasing.

    Parameters
    ----------
    t : int
        The leaf, ``1 <= t <= n_leaves``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(indices, values)``: int64 indices, increasing, and the float values there.
    """
    t = check_int(t, "t", 1, self._n)
    a, b = self._ptr[t - 1], self._ptr[t]
    return self._idx[a:b].astype(np.int64), self._val[a:b].copy()


@add_to_class(LightTree)
def leaves(self) -> np.ndarray:
    """All statistics ``x_1 .. x_n`` as a dense ``(n_leaves, d)`` array (large at RL sizes)."""
    out = np.zeros((self._n, self._d))
    nnz = int(self._ptr[self._n])
    rows = np.repeat(np.arange(self._n), np.diff(self._ptr[: self._n + 1]))
    out[rows, self._idx[:nnz]] = self._val[:nnz]
    return out

# %% tags=["export"]
@add_to_class(LightTree)
@sections_from(BinaryTree.clean)
def clean(self, node: Node) -> np.ndarray:
    """As in ``BinaryTree.clean``: the clean value ``v_b``, recomputed as the running sum of its leaves."""
    node = as_node(node)
    self._row(node)
    return self._running_sum(node.start, node.end)


@add_to_class(LightTree)
@sections_from(BinaryTree.noisy)
def noisy(self, node: Node) -> np.ndarray:
    """As in ``BinaryTree.noisy``: the noisy value ``v~_b`` (stored, or regenerated from its key)."""
    return np.array(self._noisy_value(self._row(as_node(node))))


@add_to_class(LightTree)
def values(self):
    """``(clean, noisy)`` of all complete nodes, rows in post-order: dense read-only arrays of
    shape ``(n_nodes, d)`` (for checks on small trees)."""
    nodes = [node_at(p) for p in range(self.n_nodes)]
    clean = np.array([self._running_sum(b.start, b.end) for b in nodes]).reshape(-1, self._d)
    noisy = np.array([self._noisy_value(p) for p in range(len(nodes))]).reshape(-1, self._d)
    return _readonly(clean), _readonly(noisy)


@add_to_class(LightTree)
def to_dense(self) -> BinaryTree:
    """A mutable ``BinaryTree`` holding the same leaves, clean and noisy values bit for bit (the
    two trees then continue identically given the same generator)."""
    dense = BinaryTree(self._d, self._sigma, capacity=max(self._n, 1))
    clean, noisy = self.values()
    dense._clean[: len(clean)] = clean
    dense._noisy[: len(noisy)] = noisy
    dense._n = self._n
    return dense

# %% [markdown]
# **Copies, freezing and pickling.** A copy shares the read-only noisy-value arrays; pickling is
# refused outside `allow_secrets()` (a pickle of the keys is the keys); unpickling makes read-only again
# what was read-only.

# %% tags=["export"]
@add_to_class(LightTree)
def copy(self) -> "LightTree":
    """A mutable copy (leaves and keys copied; read-only noisy-value arrays shared)."""
    new = object.__new__(type(self))
    new.__dict__.update(self.__dict__)
    new._ptr, new._idx, new._val, new._keys = (a.copy() for a in (self._ptr, self._idx, self._val, self._keys))
    new._touched = dict(self._touched)
    new._stack = list(self._stack)
    new._frozen = False
    return new


@add_to_class(LightTree)
def freeze(self) -> "LightTree":
    """Make this tree immutable (in place); returns it."""
    self._frozen = True
    for a in (self._ptr, self._idx, self._val, self._keys):
        a.setflags(write=False)
    return self


@add_to_class(LightTree)
def __getstate__(self):
    """Pickling is saving: refused without ``allow_secrets()`` (the node keys give the noise)."""
    check_pickle_allowed(self, "the node keys (each regenerates its node's noise)")
    return self.__dict__.copy()


@add_to_class(LightTree)
def __setstate__(self, state):
    """Unpickling makes fresh, writeable arrays: make read-only again what was read-only."""
    self.__dict__.update(state)
    for noisy in self._touched.values():
        _readonly(noisy)
    for _, noisy, partial in self._stack:
        _readonly(noisy), _readonly(partial)
    if self._frozen:
        self.freeze()

# %% [markdown]
# **Truncation and leaf replacement.** Forgotten keys and leaf entries are zeroed, not abandoned;
# `_set_leaf` writes a leaf's new entries into new arrays (the old entries are not kept).

# %% tags=["export"]
@add_to_class(LightTree)
def _cut(self, n: int):
    """Keep the first ``n`` steps: later keys and leaf entries are erased (zeroed) and later
    touched nodes dropped."""
    rows, first, last = n_nodes(n), int(self._ptr[n]), int(self._ptr[self._n])
    self._keys[rows:self.n_nodes] = 0
    self._idx[first:last] = 0
    self._val[first:last] = 0
    self._ptr[n + 1:self._n + 1] = 0
    self._touched = {p: v for p, v in self._touched.items() if p < rows}
    self._n = n


@add_to_class(LightTree)
@sections_from(BinaryTree.truncate)
def truncate(self, n_leaves: int) -> None:
    """As in ``BinaryTree.truncate``: the keys and leaf entries of the steps forgotten are zeroed."""
    self._check_mutable()
    n = check_int(n_leaves, "n_leaves", 0, self._n)
    self._cut(n)
    self._rebuild_stack(keep_below=n_nodes(n))


@add_to_class(LightTree)
def _set_leaf(self, t: int, idx: np.ndarray, val: np.ndarray):
    """Replace leaf ``t``'s entries (new index/value arrays; the old entries are not kept)."""
    a, b, nnz = int(self._ptr[t - 1]), int(self._ptr[t]), int(self._ptr[self._n])
    grow = idx.size - (b - a)
    size = max(self._idx.size, nnz + grow)
    new_idx, new_val = np.zeros(size, dtype=np.int32), np.zeros(size)
    for new, old, mid in ((new_idx, self._idx, idx), (new_val, self._val, val)):
        new[:a] = old[:a]
        new[a:a + idx.size] = mid
        new[a + idx.size:nnz + grow] = old[b:nnz]
    self._idx, self._val = new_idx, new_val
    self._ptr[t:self._n + 1] += grow

# %% [markdown]
# **The tree's half of Algorithm 3**, with the dense tree's draws and decisions: every node whose
# value took part in a coupling is stored densely and its key erased.

# %% tags=["export"]
@add_to_class(LightTree)
@sections_from(BinaryTree.unlearn_leaf)
def unlearn_leaf(self, t: int, x_new, rng: np.random.Generator | None = None) -> PathCoupling:
    """As in ``BinaryTree.unlearn_leaf`` (Algorithm 3), with the same draws from ``rng``; in addition,
    every node whose value took part in a coupling -- kept or reflected -- has its noisy value stored
    densely and its key erased.  Mutates this tree; call ``copy()`` first to keep it."""
    self._check_mutable()
    t = check_int(t, "t", 1, self._n)
    idx_new, val_new = statistic_sparse(x_new, self._d, "x_new")
    rng = as_generator(rng)
    n_before = self._n
    path = leaf_path(t, n_before)
    x_old = self._leaf_dense(t)
    x_new = np.zeros(self._d)
    x_new[idx_new] = val_new
    S = np.flatnonzero(x_old - x_new)
    replace = (t, idx_new.astype(np.int32), val_new)
    accepted = []
    for k, b in enumerate(path):
        p = postorder_position(b)
        old = self._running_sum(b.start, b.end)
        new = self._running_sum(b.start, b.end, replace)
        noisy = self._noisy_value(p)
        if coupling_accepts(noisy[S], old[S], new[S], self._sigma, rng.random()):
            if S.size:
                self._touched[p] = _readonly(np.array(noisy))
                self._keys[p] = 0
            accepted.append(b)
            continue
        self._touched[p] = _readonly((old + new) - noisy)    # reflection
        self._keys[p] = 0
        regenerated = tuple(a for a in path[k + 1:] if a.end == b.end)
        if regenerated:
            self._keys[p + 1:p + 1 + len(regenerated)] = draw_node_keys(rng, len(regenerated))
        for q in range(p + 1, p + 1 + len(regenerated)):
            self._touched.pop(q, None)
        self._set_leaf(*replace)
        self._cut(b.end)
        self._rebuild_stack(keep_below=n_nodes(t - 1))
        return PathCoupling(t, n_before, path, tuple(accepted), b, regenerated, b.end)
    if S.size:
        self._set_leaf(*replace)                     # every noisy value kept: D(n) unchanged
    return PathCoupling(t, n_before, path, tuple(accepted), None, (), n_before)

# %%
from bandit_unlearning.exact.light_tree import *  # noqa: F403  (the module generated from the cell above)

# %% [markdown]
# ## 4. Checks
#
# ### 4a. Bit for bit: random sequences of operations
#
# 100 scenarios: dimension $d \in [1, 6]$, $1..40$ initial steps, $\sigma \in \{0, 0.3, 1, 3\}$ and
# one of three kinds of statistics — dense real vectors, sparse integer vectors (given densely), and
# `SparseStatistic`s with real values (given sparsely to both trees).  Each scenario then applies 6
# random operations: an unlearning request at a random leaf (to a random or a zero statistic; both
# trees work on copies, as the learner does), a truncation, or more appends.  Both trees get
# generators with the same seed.  After every operation we compare, **as raw bytes**, every noisy and
# clean prefix sum, all clean and noisy node values, all leaves; the two `PathCoupling` records must
# be equal and the two generators in the same state.
#
# **The comparison can fail.** `ReversedSums` is a light tree that adds the leaves of a clean sum
# right to left — the same real number, another rounding.  On integer statistics it is still
# bit-identical (all orders agree); on real statistics the comparison catches it.

# %%
def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def identical(dense, light) -> bool:
    """Every released number of the two trees, compared as raw bytes."""
    n = dense.n_leaves
    if light.n_leaves != n:
        return False
    checks = [same_bits(dense.leaves(), light.leaves())]
    checks += [same_bits(a, b) for a, b in zip(dense.values(), light.values())]
    for t in range(n + 1):
        checks.append(same_bits(dense.noisy_prefix_sum(t), light.noisy_prefix_sum(t)))
        checks.append(same_bits(dense.clean_prefix_sum(t), light.clean_prefix_sum(t)))
    return all(checks)


def random_statistic(gen, d, kind):
    if kind == "dense real":
        return gen.normal(size=d)
    k = int(gen.integers(0, d + 1))
    idx = gen.choice(d, k, replace=False)
    if kind == "sparse integer":
        x = np.zeros(d)
        x[idx] = gen.integers(-2, 3, size=k)
        return x
    return SparseStatistic(idx, gen.normal(size=k))


def scenario(gen, light_cls=LightTree, kinds=("dense real", "sparse integer", "sparse real")):
    """One random scenario; returns (all outputs identical, operation counts)."""
    d, T = int(gen.integers(1, 7)), int(gen.integers(1, 41))
    sigma, kind = float(gen.choice([0.0, 0.3, 1.0, 3.0])), str(gen.choice(kinds))
    seed = int(gen.integers(2**32))
    rng_d, rng_l = np.random.default_rng(seed), np.random.default_rng(seed)
    dense, light = BinaryTree(d, sigma), light_cls(d, sigma)
    counts = {"requests": 0, "rejections": 0, "truncations": 0, "appends": 0}
    ok = True

    def append(k):
        nonlocal ok
        for _ in range(k):
            x = random_statistic(gen, d, kind)
            dense.append(x, rng_d)
            light.append(x, rng_l)
            counts["appends"] += 1

    append(T)
    ok &= identical(dense, light)
    for _ in range(6):
        r = gen.random()
        if r < 0.6 and dense.n_leaves:
            t = int(gen.integers(1, dense.n_leaves + 1))
            x_new = random_statistic(gen, d, kind) if gen.random() < 0.5 else np.zeros(d)
            dense, light = dense.copy(), light.copy()
            rec_d, rec_l = dense.unlearn_leaf(t, x_new, rng_d), light.unlearn_leaf(t, x_new, rng_l)
            ok &= rec_d == rec_l
            counts["requests"] += 1
            counts["rejections"] += rec_d.rejected is not None
        elif r < 0.7:
            n = int(gen.integers(0, dense.n_leaves + 1))
            dense.truncate(n)
            light.truncate(n)
            counts["truncations"] += 1
        else:
            append(int(gen.integers(1, 10)))
        ok &= rng_d.bit_generator.state == rng_l.bit_generator.state
        ok &= identical(dense, light)
    return bool(ok), counts


gen = np.random.default_rng(int(rng.integers(2**32)))
totals, all_ok = {}, True
for _ in range(100):
    ok, counts = scenario(gen)
    all_ok &= ok
    for key, v in counts.items():
        totals[key] = totals.get(key, 0) + v
print("100 scenarios:", totals)
assert all_ok and totals["rejections"] > 30 and totals["requests"] - totals["rejections"] > 30
print("LightTree == BinaryTree bit for bit: prefix sums, node values, leaves, records, generator states")


class ReversedSums(LightTree):
    """BROKEN (for the check): clean sums added right to left."""

    def _running_sum(self, first, last, replace=None):
        total = np.zeros(self.d)
        for t in range(last, first - 1, -1):
            x = self._leaf_dense(t)
            if replace is not None and replace[0] == t:
                x = np.zeros(self.d)
                x[replace[1]] = replace[2]
            total = total + x
        return total


for kinds in (("sparse integer",), ("dense real",)):
    gen_b = np.random.default_rng(7)
    results = [scenario(gen_b, ReversedSums, kinds)[0] for _ in range(20)]
    print(f"ReversedSums on {kinds[0]:14s} statistics: identical in {sum(results)} of 20 scenarios")
    assert all(results) if kinds == ("sparse integer",) else not all(results)

# %% [markdown]
# ### 4b. The learner of chapter B3a with either tree
#
# The online UCB bandit (three arms, $T = 200$, $\sigma = 2$) trained with each tree from the same
# seed, then 20 sequential deletions (each request on the previous unlearned run, both trees fed
# the same seeds): identical models, identical records, and `verify` accepts every light run.
# `LightTree.to_dense()` converts a light tree into a `BinaryTree` with the same numbers (chapter
# B4's broken variants, which are `BinaryTree` subclasses, use it); the two continue identically.

# %%
users_b = bandit_users([0.7, 0.5, 0.3], 200, seed=31)
runs = {cls: train(ucb_bandit_learner(3, 2.0, tree_factory=cls), users_b, np.random.default_rng(5))
        for cls in (BinaryTree, LightTree)}
order = np.random.default_rng(6).permutation(200)[:20] + 1
retrained = 0
for i, t in enumerate(order):
    new = {cls: unlearn(run, DeleteStep(int(t)), rng=np.random.default_rng(100 + i)) for cls, run in runs.items()}
    (run_d, rec_d), (run_l, rec_l) = new[BinaryTree], new[LightTree]
    assert rec_d == rec_l
    assert all(same_model(a, b) for a, b in zip(run_d.models, run_l.models))
    verify(run_l)
    retrained += rec_l.retrained
    runs = {BinaryTree: run_d, LightTree: run_l}
assert identical(runs[BinaryTree].tree, runs[LightTree].tree)
converted = runs[LightTree].tree.to_dense()                    # LightTree -> BinaryTree, same numbers
assert identical(converted, runs[LightTree].tree)
rec_c = converted.unlearn_leaf(7, np.zeros(6), np.random.default_rng(1))
assert rec_c == runs[LightTree].tree.copy().unlearn_leaf(7, np.zeros(6), np.random.default_rng(1))
print(f"20 sequential deletions ({retrained} retrained): identical runs and records; every light run verified; "
      "to_dense() gives a BinaryTree that continues identically")

# %% [markdown]
# ### 4c. At RL size
#
# The statistics of chapter B6 for the 5x5 gridworld ($S = 23$, $A = 4$, $H = 10$:
# $d = 23{,}000$), from 64 episodes of replayable users under random policies; the dense tree gets
# them as dense vectors, the light tree as `SparseStatistic`s (at most $3H = 30$ non-zeros; zero
# rewards are not stored).  $\sigma = 5$.  Then 6 deletions (zero dummy) at random leaves, each
# followed by re-appending the truncated steps as the learner would.  Bit-identical throughout; the
# memory of the two trees is printed.

# %%
grid = gridworld(horizon=10)
lay = StatsLayout.of(grid)
T_RL = 64
policies = rng.integers(0, grid.A, size=(T_RL, grid.H, grid.S))
episodes = rollout_batch(grid, policies, np.arange(T_RL), seed=int(rng.integers(2**31)))
idx_rl, val_rl = lay.sparse(episodes)
dense_x = lay.densify(idx_rl, val_rl)
sparse_x = [SparseStatistic(i, v) for i, v in zip(idx_rl, val_rl)]
seed = int(rng.integers(2**32))
rng_d, rng_l = np.random.default_rng(seed), np.random.default_rng(seed)
dense_rl, light_rl = BinaryTree(lay.d, 5.0, capacity=T_RL), LightTree(lay.d, 5.0, capacity=T_RL)
for xd, xs in zip(dense_x, sparse_x):
    dense_rl.append(xd, rng_d)
    light_rl.append(xs, rng_l)
print(f"d = {lay.d}, T = {T_RL}: dense tree {dense_rl.nbytes / 2**20:.1f} MiB, light tree "
      f"{light_rl.nbytes / 2**20:.2f} MiB")
base_rl = light_rl.copy().freeze()                    # kept for section 4d
assert all(same_bits(dense_rl.noisy_prefix_sum(t), light_rl.noisy_prefix_sum(t)) for t in range(T_RL + 1))
records = []
for t in rng.choice(T_RL, 6, replace=False) + 1:
    dense_rl, light_rl = dense_rl.copy(), light_rl.copy()
    rec_d = dense_rl.unlearn_leaf(int(t), np.zeros(lay.d), rng_d)
    rec_l = light_rl.unlearn_leaf(int(t), np.zeros(lay.d), rng_l)
    assert rec_d == rec_l
    records.append(rec_l)
    for s in range(dense_rl.n_leaves + 1, T_RL + 1):   # re-append the truncated steps
        dense_rl.append(dense_x[s - 1], rng_d)
        light_rl.append(sparse_x[s - 1], rng_l)
    assert all(same_bits(dense_rl.noisy_prefix_sum(s), light_rl.noisy_prefix_sum(s)) for s in range(T_RL + 1))
    assert all(same_bits(dense_rl.noisy(b), light_rl.noisy(b)) for b in leaf_path(int(t), T_RL))
print("deletions at", [r.t for r in records], "| rejected at levels",
      [None if r.rejected is None else r.rejected.level for r in records])
print(f"after the deletions: light tree {light_rl.nbytes / 2**20:.2f} MiB, "
      f"{len(light_rl.touched)} nodes stored densely (touched), bit-identical to the dense tree")

# %% [markdown]
# ### 4d. What an unlearned light tree keeps
#
# After a request, every node the coupling visited is stored densely with its key erased (section
# 2c), and its stored noisy value is the dense tree's, bit for bit.  Checked on the last request
# above.  And why the key must go: on the RL tree before the deletions, we delete episode 5 with
# generators of increasing seed until the coupling *keeps* the leaf's noisy value; had the tree kept
# the leaf's 24-byte key, the kept noisy value minus the regenerated old noise would return the
# deleted episode's statistics.
#
# **And why the seed matters as much as the key.**  The RL trees of 4c were built, as an opt-in,
# from `np.random.default_rng(seed)` with a `seed` this notebook knows.  An attacker holding only the
# unlearned tree and that seed replays the generator with `draw_node_keys` (the tree drew one key per
# completed node, in post-order), recovers the erased key of the leaf and, with it, the deleted
# episode — the erasure did nothing.  The same tree built without a generator (the default: OS
# entropy) resists: its stored keys match no seed in 0..1000, and there is no seed to find.

# %%
rec = records[-1]
visited = rec.path if rec.rejected is None else rec.path[: rec.path.index(rec.rejected) + 1]
assert set(visited) <= set(light_rl.touched)
for b in visited:
    assert not light_rl._keys[postorder_position(b)].any()          # key erased
    assert same_bits(light_rl.noisy(b), dense_rl.noisy(b))
print(f"request at t = {rec.t}: {len(visited)} visited nodes stored densely, their keys erased")

t_demo, leaf_node = 5, Node(0, 4)
old_key = base_rl._keys[postorder_position(leaf_node)].copy()
for coupling_seed in range(100):
    demo = base_rl.copy()
    if leaf_node in demo.unlearn_leaf(t_demo, np.zeros(lay.d), np.random.default_rng(coupling_seed)).accepted:
        break
assert leaf_node in demo.touched and not demo._keys[postorder_position(leaf_node)].any()
recovered = demo.noisy(leaf_node) - node_noise(old_key, lay.d, 5.0)
assert np.array_equal(np.round(recovered, 6), dense_x[t_demo - 1])
print(f"seed {coupling_seed}: the leaf's noisy value was kept; with its old key it would give back all "
      f"{np.count_nonzero(dense_x[t_demo - 1])} non-zero statistics of the deleted episode — the light tree erased the key")


def replayed_keys(tree_seed, n):
    """The keys a tree built from ``default_rng(tree_seed)`` got for its first ``n`` nodes."""
    return draw_node_keys(np.random.default_rng(tree_seed), n)


def attack(tree, t, guesses):
    """Find a seed that reproduces the keys ``tree`` still stores (nodes ending before leaf t), then
    regenerate the erased key of leaf t and subtract its noise: the deleted statistic, or None."""
    kept = n_nodes(t - 1)
    for guess in guesses:
        keys = replayed_keys(guess, n_nodes(tree.n_leaves))
        if np.array_equal(keys[:kept], tree._keys[:kept]):
            p = postorder_position(Node(0, t - 1))
            return tree.noisy(Node(0, t - 1)) - node_noise(keys[p], tree.d, tree.sigma)
    return None


stolen = attack(demo, t_demo, [seed])
assert stolen is not None and np.array_equal(np.round(stolen, 6), dense_x[t_demo - 1])
print(f"knowing the seed, the erased key is regenerated: the deleted episode comes back "
      f"({np.count_nonzero(np.round(stolen, 6))} non-zeros, exact)")
secure = LightTree(lay.d, 5.0, capacity=T_RL)
for xs in sparse_x:
    secure.append(xs)                                   # no generator: keys from fresh OS entropy
victim = secure.copy()
victim.unlearn_leaf(t_demo, np.zeros(lay.d))            # no generator here either
assert attack(victim, t_demo, range(1001)) is None
print("built with rng=None: no seed in 0..1000 reproduces its keys, nothing comes back")

# %% [markdown]
# ### 4e. Exactness with the light tree (the battery of chapter B4, smaller)
#
# The learners of chapter B3a now use `LightTree` by default.  Section 4a–4b already imply that
# every exactness result of chapter B4 transfers (same bits, same law); here the battery is run
# directly on the light tree: the two-armed bandit of chapter B4 ($\mu = (0.8, 0.2)$, $T = 16$ fixed
# users, $\sigma = 1$), deleted positions 6 and 16 (a middle and the last leaf), $R = 800$ runs per
# world, the same 14 statistics per position (noisy pull and reward totals of the 5 path nodes, both
# final UCB indices, the pulls of arm 0, the final pair of arms): 28 tests, Bonferroni at overall
# level $10^{-6}$ (each test rejects when $p < 3.6 \cdot 10^{-8}$).  (Chapter B4 runs the full
# battery — three positions, $R = 1000$ — on the dense tree; the sizes here keep this chapter fast.)
#
# **It can fail:** `ForgetsTheShift` is the bug a light tree invites — after an accepted coupling it
# keeps the node's *noise* (its key) instead of its noisy value, so the value is regenerated around
# the new clean value.  Conditioned on acceptance that noise is biased (acceptance favours noise
# pointing away from $x_t - x'_t$), and the battery rejects it at both positions.

# %%
class ForgetsTheShift(LightTree):
    """BROKEN: accepted nodes keep their old key (their noise), not their noisy value."""

    def unlearn_leaf(self, t, x_new, rng):
        keys = {postorder_position(b): self._keys[postorder_position(b)].copy() for b in leaf_path(t, self.n_leaves)}
        rec = super().unlearn_leaf(t, x_new, rng)
        for b in rec.accepted:
            p = postorder_position(b)
            if keys[p].any():
                del self._touched[p]
                self._keys[p] = keys[p]
        self._rebuild_stack(keep_below=0)
        return rec


def forgets_the_shift(run, t, rng):
    tree = run.tree.copy()
    tree.__class__ = ForgetsTheShift
    return unlearn(dataclasses.replace(run, tree=tree.freeze()), DeleteStep(t), rng=rng)[0]


def run_statistics(run, t):
    """Chapter B4's 14 statistics of a two-armed bandit run, for deleted position t."""
    out = {}
    for b in leaf_path(t, run.T):
        v = run.tree.noisy(b)
        out[f"node {b.start}-{b.end} pulls"], out[f"node {b.start}-{b.end} rewards"] = v[:2].sum(), v[2:].sum()
    w = np.minimum(run.final_model, 1e6)
    out["final index arm 0"], out["final index arm 1"] = w[0], w[1]
    arms = np.append(actions(run), chosen_arm(run.final_model))
    out["pulls of arm 0"] = float(np.sum(arms == 0))
    out["arms at T, T+1"] = float(2 * arms[-2] + arms[-1])
    return out


learner_ex = ucb_bandit_learner(2, sigma=1.0)
assert learner_ex.tree_factory is LightTree
users_ex = bandit_users([0.8, 0.2], 16, seed=5)
R_LIGHT, POSITIONS = 800, (6, 16)
level = 1e-6 / (len(POSITIONS) * 14)
smallest = {"correct": 1.0, "forgets the shift": 1.0}
for t in POSITIONS:
    dummy_users = users_ex[: t - 1] + (ZERO_USER,) + users_ex[t:]
    samples = {"dummy world": [], "correct": [], "forgets the shift": []}
    for _ in range(R_LIGHT):
        samples["dummy world"].append(run_statistics(train(learner_ex, dummy_users, rng), t))
        original = train(learner_ex, users_ex, rng)
        samples["correct"].append(run_statistics(unlearn(original, DeleteStep(t), rng=rng)[0], t))
        samples["forgets the shift"].append(run_statistics(forgets_the_shift(original, t, rng), t))
    for name in ("correct", "forgets the shift"):
        pv = battery(samples[name], samples["dummy world"], categorical=("arms at T, T+1",))
        assert len(pv) == 14
        worst = min(pv, key=pv.get)
        print(f"t = {t:2d}  {name:17s}: smallest p-value {pv[worst]:.2e} ({worst})")
        smallest[name] = min(smallest[name], pv[worst])
print(f"per-test level {level:.1e}; smallest p-value over the {14 * len(POSITIONS)} tests: correct light tree "
      f"{smallest['correct']:.4f}, forgets the shift {smallest['forgets the shift']:.1e}")
assert smallest["correct"] > level                        # the battery accepts the light tree ...
assert smallest["forgets the shift"] < level              # ... and rejects the broken one

# %% [markdown]
# ### 4f. Memory against $T$ (RL statistics, $d = 23{,}000$)
#
# `nbytes` of light trees built from gridworld episodes (random policies, replayable users) for
# $T$ up to 4096, against the dense tree's $2 \cdot 2T \cdot d \cdot 8 = 32Td$ bytes (its buffers for
# `capacity = T`; checked at $T = 64$ above).  The light tree grows by about 12 bytes per stored
# non-zero plus 56 bytes per step (leaf pointer, two keys), with buffers doubling; the decomposition
# adds $2\,\mathrm{popcount}(T)$ vectors of $8d$ bytes.  `benchmarks/tree_memory.py` measures whole
# runs of TV-stable UCB-VI up to $T = 100{,}000$.

# %%
T_GRID = (64, 256, 1024, 4096)
policies = rng.integers(0, grid.A, size=(max(T_GRID), grid.H, grid.S))
episodes = rollout_batch(grid, policies, np.arange(max(T_GRID)), seed=int(rng.integers(2**31)))
idx_m, val_m = lay.sparse(episodes)
light_mb, nnz = [], []
tree_m, build_rng = LightTree(lay.d, 5.0, capacity=max(T_GRID)), np.random.default_rng(1)
for t in range(1, max(T_GRID) + 1):
    tree_m.append(SparseStatistic(idx_m[t - 1], val_m[t - 1]), build_rng)
    if t in T_GRID:
        light_mb.append(tree_m.nbytes / 2**20)
        nnz.append(int(np.count_nonzero(val_m[:t])))
dense_mb = [32 * T * lay.d / 2**20 for T in T_GRID]
assert dense_rl.nbytes == 32 * T_RL * lay.d
print(f"{'T':>6} {'non-zeros':>10} {'light MiB':>10} {'dense MiB':>10} {'ratio':>8}")
for T, z, lm, dm in zip(T_GRID, nnz, light_mb, dense_mb):
    print(f"{T:6d} {z:10d} {lm:10.2f} {dm:10.0f} {dm / lm:8.0f}")
per_step = (light_mb[-1] - light_mb[-2]) / (T_GRID[-1] - T_GRID[-2]) * 2**20
print(f"light tree growth between T = 1024 and 4096: {per_step:.0f} bytes per step "
      f"(dense: {32 * lay.d:,} bytes per step)")
assert light_mb[-1] < 10 and per_step < 2_000

# %% [markdown]
# ## 5. Figure: memory and speed
#
# Left: the bytes held by each tree against $T$ for the gridworld statistics (measured for the
# light tree, exact for the dense one), with the 1 GB line.  Right: the tree's time per step
# (append and the last noisy prefix sum) for $d = 23{,}000$, measured on this machine — volatile,
# so the printed numbers are not compared by the test suite.  At this size a step is mostly its floor:
# the $d$ standard normals of the one node joining $\mathcal D(t)$ (the dense tree draws those of every
# node it completes, about $2d$).  `benchmarks/tree_floor.py` measures a step against the bulk cost of
# those normals at $d = 16$ and $d = 1{,}520$.

# %%
# NBVAL_IGNORE_OUTPUT
def steps_per_second(cls, xs, d, reps=2):
    best = 0.0
    for r in range(reps):
        tree, g = cls(d, 5.0, capacity=len(xs)), np.random.default_rng(r)
        start = time.perf_counter()
        for x in xs:
            tree.append(x, g)
            tree.noisy_prefix_sum(tree.n_leaves)
        best = max(best, len(xs) / (time.perf_counter() - start))
    return best


xs_time = [SparseStatistic(idx_m[t], val_m[t]) for t in range(512)]
speed = {cls.__name__: steps_per_second(cls, xs_time, lay.d) for cls in (BinaryTree, LightTree)}
print({k: round(v) for k, v in speed.items()}, "steps/s at d = 23000 (append + noisy prefix sum)")

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11.5, 4.2))
T_line = np.array([64, 100_000])
ax0.plot(T_line, 32 * T_line * lay.d, "C0-", label="BinaryTree (dense): 32 T d bytes")
ax0.plot(T_GRID, np.array(light_mb) * 2**20, "C1o-", label="LightTree (measured)")
ax0.axhline(2**30, color="0.5", ls=":", label="1 GiB")
ax0.set(xscale="log", yscale="log", xlabel="episodes T", ylabel="bytes held by the tree",
        title="Tree memory, 5x5 gridworld statistics (d = 23,000)")
ax0.legend(fontsize=8)
ax1.bar(list(speed), [1e3 / v for v in speed.values()], color=["C0", "C1"])
ax1.set(ylabel="ms per step (append + prefix sum)", title="Tree time per step, d = 23,000")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
# - `bandit_unlearning.exact.light_tree.LightTree(d, sigma, capacity=1)`: the interface of
#   `BinaryTree` (plus `leaf_sparse`, `touched`), storing sparse leaves, one 192-bit key per node,
#   the noisy values and partial sums of the current decomposition, and the noisy values of nodes
#   touched by unlearning (keys erased).  One noise vector per step; memory
#   $O(	ext{non-zeros} + T + d\log T)$ plus $8d$ bytes per touched node.  It is the default
#   `tree_factory` of the learners of chapter B3a.
# - Why it is the same mechanism: chapter B2 pins the randomness (per-node keys from the
#   generator) and the arithmetic (running sums of leaves, noisy values kept bit for bit, prefix sums
#   largest node first, the acceptance test); the light tree evaluates the same formulas with the
#   same operations, from less storage.  Algorithm 3 in noise terms is a shift (accept) and a flip
#   (reject); storing those as sparse corrections next to the key would keep the deleted statistics,
#   so touched nodes are stored densely instead.
# - Checked: bit-identical to `BinaryTree` (raw bytes of every prefix sum, node value and leaf;
#   equal coupling records and generator states) over 100 random scenarios with dense, sparse,
#   integer and real statistics, deletions, truncations and appends — a light tree summing in another
#   order is caught on real statistics; identical learner runs and 20 sequential deletions with the
#   UCB bandit; bit-identical at RL size ($d = 23{,}000$); the exactness battery of chapter B4 passes
#   with the light tree and rejects `ForgetsTheShift`; memory grows by about the printed bytes per
#   step instead of $32d$.
