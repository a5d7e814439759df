# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.tree
# ---

# %% [markdown]
# # Chapter B2 — The binary tree mechanism
#
# *Paper B, Section 3: Algorithm 2's data structure (`TreeUpdate`, `GetNoisyPrefixSum`), its noise
# calibration, the accuracy radius $\varepsilon_{app}$ of Section 4, and the tree's half of
# Algorithm 3.  Exports `bandit_unlearning.exact.tree`.*
#
# A prefix-sum learner (Algorithm 1) needs, after every step $t$, the running sum
# $u_t = \sum_{i \le t} x_i$ of the statistics $x_i \in \mathbb R^d$ it has seen.  Releasing $u_t$
# with fresh noise at every step would spend privacy $T$ times; releasing noisy *leaves* would make
# the error grow like $\sqrt t$.  The **binary tree mechanism** does both well: every dyadic block of
# steps gets one noise vector, drawn once, and $u_t$ is the sum of at most $\lceil\log_2 t\rceil + 1$
# noisy blocks.  One user's statistic enters at most $\log_2 T + 1$ blocks (its leaf's path to the
# root), which is what makes the learner $\rho$-TV-stable — and what Algorithm 3 couples, node by
# node, to unlearn that user.
#
# This chapter builds the tree (anytime: it grows by doubling; cost $O(d)$ amortised per step,
# $O(d\log T)$ per prefix sum, no Python loop over $d$), its bookkeeping (dyadic decompositions,
# leaf-to-root paths, post-order positions), the two calibrations of $\sigma$ (the paper's and an
# exact one), and checks: unbiasedness, the variance and covariance the decomposition predicts, the
# paper's accuracy radius $\varepsilon_{app}$, and the path coupling used for unlearning.

# %%
import dataclasses

import numpy as np
import matplotlib.pyplot as plt
from scipy import stats

from bandit_unlearning.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.coupling import tv_gaussians

rng = np.random.default_rng(20260602)

# %% [markdown]
# ## 1. Statement (Paper B Algorithm 2)
#
# Time steps are the leaves $1, 2, \dots$.  A **node** $b$ is a dyadic interval of leaves
# $[l_b, r_b] = [j2^h + 1, (j+1)2^h]$ (level $h$, index $j$); its **clean value** is
# $v_b = \sum_{i \in b} x_i$ and its **noisy value** $\tilde v_b = v_b + \xi_b$ with
# $\xi_b \sim \mathcal N(0, \sigma^2 I_d)$ drawn once.
# - `TreeUpdate(x; t)`: set leaf $t$ to $x$ and update the nodes on its path (growing the tree to the
#   next power of two when needed);
# - `GetNoisyPrefixSum(t)`: $\tilde u_t = \sum_{b \in \mathcal D(t)} \tilde v_b$ over the dyadic
#   decomposition $\mathcal D(t)$ of $[1, t]$ — one node per 1-bit of $t$;
# - noise scale $\sigma = B\sqrt{\log_2 T}/(\sqrt 2\,\rho)$ for a per-user sensitivity
#   $\sup\lVert x - x'\rVert_2 \le B$.
#
# ## 2. Bookkeeping: nodes, decompositions, paths, post-order
#
# **When is a node's noise drawn?** Only nodes whose last leaf has arrived (*complete* nodes) are
# ever read by a prefix sum, so we draw a node's noise at the step $r_b$ that completes it and
# store nothing for incomplete nodes.  (Drawing it earlier changes no released quantity.)  At step
# $t$ the nodes completed are the leaf and its ancestors ending at $t$: levels
# $0, 1, \dots, \nu_2(t)$, with $\nu_2(t)$ the number of trailing zero bits of $t$.
#
# **Post-order.** Algorithm 3 walks nodes "in post-order" (children before parents).  For the
# nodes of a complete binary tree this is the order of (last leaf $r_b$, level $h$): a node comes
# after every node ending earlier and after its own descendants ending at the same leaf.  Hence the
# post-order position of node $b$ is the number of nodes ending before $r_b$, plus $h$:
# $$
# \mathrm{pos}(b) = N(r_b - 1) + h, \qquad N(n) = \sum_{h \ge 0}\Big\lfloor \frac{n}{2^h}\Big\rfloor
#   = 2n - \mathrm{popcount}(n),
# $$
# where $N(n)$ is the number of complete nodes after $n$ leaves (the last identity: each 1-bit of
# $n$ at position $k$ contributes $2^k + 2^{k-1} + \dots + 1 = 2^{k+1} - 1$).  The position does not
# depend on how large the tree will grow, so **the anytime tree is an append-only list of rows in
# post-order**: step $t$ appends the $\nu_2(t) + 1$ rows of the nodes it completes, and "keep only
# the first $r$ steps" is "keep the first $N(r)$ rows".  Children of the node at row $p$ (level $h$)
# sit at rows $p - 1$ (right) and $p - 2^h$ (left).

# %% tags=["export"]
"""The binary tree mechanism of Paper B (Algorithm 2's data structure, Paper B Algorithm 2), its noise
calibration and accuracy radius, and the tree's half of Algorithm 3 (coupling one leaf's path).

Leaves are the time steps ``1, 2, ...``.  ``Node(level, index)`` is the dyadic interval of leaves
``[index * 2**level + 1, (index + 1) * 2**level]``.  A node is *complete* once its last leaf has
arrived; only complete nodes carry values and noise.  When a node completes it gets a 192-bit key
(``draw_node_keys``: a one-way hash of fresh words of the algorithm's generator, which is seeded from
the operating system's entropy unless the caller passes a seeded one) and its noise is
``node_noise(key)``, so noise can be regenerated from 24 bytes -- keys are secrets.  ``BinaryTree`` stores the complete nodes in **post-order**
(children first, i.e. sorted by ``(end, level)``), one row per node, in two growing arrays (clean
and noisy values): the post-order position of a node never changes as the tree grows, so the anytime
tree is an append-only list of rows, and truncating it to its first ``r`` steps keeps a prefix of the
rows.  Every number follows one canonical floating-point order (clean values are running sums of
leaves, noisy prefix sums add noisy node values largest node first; chapter B2), so that the
memory-light tree (``bandit_unlearning.exact.light_tree``) reproduces them bit for bit.

The tree interface the learner of ``bandit_unlearning.exact.learner`` relies on (``LightTree`` offers
the same): ``BinaryTree(d, sigma, capacity=1)``; attributes ``d``, ``sigma``, ``n_leaves``,
``frozen``; ``append(x, rng=None)``, ``noisy_prefix_sum(t)``, ``leaf(t)``, ``leaves()``, ``copy()``,
``freeze()``, ``unlearn_leaf(t, x_new, rng=None) -> PathCoupling``; and, for checks and cost
analysis,
``clean(node)`` and ``noisy(node)`` of complete nodes.  Statistics are dense
vectors of shape ``(d,)`` or ``SparseStatistic(indices, values)``.
"""

import hashlib
import math
import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import erf, erfinv
from scipy.stats import norm

from bandit_unlearning import checks as _checks
from bandit_unlearning.checks import as_array, as_generator, check_real
from bandit_unlearning.privacy.coupling import check_sigma, tv_gaussians


class _NodeFields(NamedTuple):
    level: int
    index: int


class Node(_NodeFields):
    """A dyadic node: leaves ``[index * 2**level + 1, (index + 1) * 2**level]`` (1-based); ``level``
    and ``index`` are integers >= 0 (validated on construction)."""

    __slots__ = ()

    def __new__(cls, level: int, index: int):
        if type(level) is not int or type(index) is not int or level < 0 or index < 0:
            level, index = check_int(level, "level", 0), check_int(index, "index", 0)
        return tuple.__new__(cls, (level, index))

    @property
    def size(self) -> int:
        return 1 << self.level

    @property
    def start(self) -> int:
        """First leaf ``l_b``."""
        return self.index * self.size + 1

    @property
    def end(self) -> int:
        """Last leaf ``r_b`` (the step that completes the node)."""
        return (self.index + 1) * self.size


def check_int(value, name: str, low: int = 1, high: int | None = None) -> int:
    """Validate an integer argument in ``[low, high]`` (``high=None``: no upper limit): the package's
    ``bandit_unlearning.checks.check_int`` with ``low = 1`` by default."""
    return _checks.check_int(value, name, low, high)


def check_positive(value, name: str) -> float:
    """Validate a finite real number ``> 0`` (``bandit_unlearning.checks.check_positive``)."""
    return _checks.check_positive(value, name)


def n_nodes(n_leaves: int) -> int:
    """Number of complete nodes after ``n_leaves`` steps: ``2 n - popcount(n)``."""
    n = check_int(n_leaves, "n_leaves", 0)
    return 2 * n - n.bit_count()


def _as_node(node) -> Node:
    """A ``Node`` from a ``(level, index)`` pair; anything else is a ``TypeError``."""
    if not isinstance(node, tuple) or len(node) != 2:
        raise TypeError(f"node must be a Node (level, index), got {node!r}")
    return node if type(node) is Node else Node(*node)


def postorder_position(node: Node) -> int:
    """0-based post-order position ``N(r_b - 1) + level`` of a node (independent of the tree size)."""
    level, index = _as_node(node)
    r = (index + 1) << level
    return 2 * (r - 1) - (r - 1).bit_count() + level


def node_at(position: int) -> Node:
    """The node at a post-order position (inverse of ``postorder_position``)."""
    p = check_int(position, "position", 0)
    lo, hi = 1, p + 1                    # smallest r with n_nodes(r) > p
    while lo < hi:
        mid = (lo + hi) // 2
        if 2 * mid - mid.bit_count() > p:
            hi = mid
        else:
            lo = mid + 1
    level = p - (2 * (lo - 1) - (lo - 1).bit_count())
    return Node(level, (lo >> level) - 1)


# %% [markdown]
# Which nodes step $t$ completes, the dyadic decomposition $\mathcal D(t)$ that a prefix sum reads,
# and the paths of section 2.
#
# **Paths.** The complete ancestors of leaf $t$ (itself included) after $n$ leaves are the nodes
# $(h, \lfloor (t-1)/2^h \rfloor)$ with end $\le n$; there are at most
# $\lfloor\log_2 n\rfloor + 1$ of them (`path_length(n)`), exactly that many when $n$ is a power of 2.

# %% tags=["export"]
def nodes_completed_at(t: int) -> tuple:
    """Nodes whose last leaf is ``t``, bottom-up: levels ``0 .. nu_2(t)`` (post-order)."""
    t = check_int(t, "t", 1)
    return tuple(Node(h, (t >> h) - 1) for h in range((t & -t).bit_length()))


def dyadic_decomposition(t: int) -> tuple:
    """The nodes partitioning ``[1, t]``, left to right, one per 1-bit of ``t`` (``()`` for ``t = 0``)."""
    t = check_int(t, "t", 0)
    out, start = [], 0
    for h in range(t.bit_length() - 1, -1, -1):
        if t >> h & 1:
            out.append(Node(h, start >> h))
            start += 1 << h
    return tuple(out)


def _decomposition_rows(t: int) -> list:
    """Post-order rows of ``dyadic_decomposition(t)`` (no validation; the hot path of prefix sums)."""
    rows, start = [], 0
    for h in range(t.bit_length() - 1, -1, -1):
        if t >> h & 1:
            start += 1 << h
            rows.append(2 * (start - 1) - (start - 1).bit_count() + h)
    return rows


def leaf_path(t: int, n_leaves: int) -> tuple:
    """Complete nodes containing leaf ``t`` after ``n_leaves`` steps, leaf first (post-order)."""
    n_leaves = check_int(n_leaves, "n_leaves", 1)
    t = check_int(t, "t", 1, n_leaves)
    out, h = [], 0
    while ((((t - 1) >> h) + 1) << h) <= n_leaves:
        out.append(Node(h, (t - 1) >> h))
        h += 1
    return tuple(out)


def path_length(T: int) -> int:
    """Largest number of complete nodes on one leaf's path when ``T`` leaves exist:
    ``floor(log2 T) + 1``."""
    return check_int(T, "T", 1).bit_length()


# %% [markdown]
# ## 3. Noise calibration: the paper's $\sigma$ and an exact one
#
# The mechanism must be $\rho$-TV-stable (Paper B Definition 2.2): on two user sequences that differ in
# one position, the laws of its outputs are within total variation $\rho$.
#
# **Why the path is all that matters.** Fix the users and compare the tree on $x_{1:T}$ with the
# tree on the same sequence with $x_t$ replaced by $x'_t$.  The noisy values of nodes off the path
# of leaf $t$ have the same law in both; the $n \le \lfloor\log_2 T\rfloor + 1$ path nodes are
# Gaussians with the same covariance whose means differ by $\delta = x_t - x'_t$ each.  Stacking them,
# the two laws are $\mathcal N(m, \sigma^2 I_{nd})$ and $\mathcal N(m + (\delta, \dots, \delta),
# \sigma^2 I_{nd})$, whose mean difference has norm $\lVert\delta\rVert\sqrt n$.  By chapter B1,
# $$
# \mathrm{TV} = 2\Phi\!\Big(\frac{\lVert\delta\rVert\sqrt n}{2\sigma}\Big) - 1
#   \le 2\Phi\!\Big(\frac{B\sqrt n}{2\sigma}\Big) - 1 .
# $$
# In a learner the later statistics depend on earlier noisy sums (adaptivity), but each path node is
# still a Gaussian mechanism with sensitivity $B$ given the past, and the adaptive composition of
# $n$ such mechanisms is $(B\sqrt n/\sigma)$-Gaussian-DP (Dong, Roth & Su 2022, composition theorem),
# whose TV is the same $2\Phi(B\sqrt n/(2\sigma)) - 1$; post-processing (the models) cannot increase it.
#
# - **Exact calibration:** solve $2\Phi(B\sqrt n/(2\sigma)) - 1 = \rho$ with $n = \lfloor\log_2 T\rfloor + 1$:
#   $\sigma_{exact} = B\sqrt n\,/\,\big(2\,\Phi^{-1}((1+\rho)/2)\big) = B\sqrt n\,/\,\big(2\sqrt2\,\mathrm{erf}^{-1}(\rho)\big)$,
#   for $\rho \in (0, 1)$ (computed with $\mathrm{erf}^{-1}$: forming $(1+\rho)/2$ in floating point would lose
#   the digits of a tiny $\rho$, e.g. 9e-5 relative at $\rho = 10^{-12}$).
# - **The paper's:** $\sigma_{paper} = B\sqrt{\log_2 T}/(\sqrt 2\rho)$.  Plugged in, it gives
#   $\mathrm{TV} = 2\Phi(\rho\sqrt{n/(2\log_2 T)}) - 1 \le \rho\sqrt{n/(\pi\log_2 T)} \le \rho$
#   (using $2\Phi(z) - 1 \le z\sqrt{2/\pi}$ and
#   $n \le \log_2 T + 1 \le \pi\log_2 T$ for $T \ge 2$): valid, and about $\sqrt\pi \approx 1.8$ times
#   more noise than needed for small $\rho$.  **Sharp edge:** at $T = 1$, $\log_2 T = 0$ gives
#   $\sigma_{paper} = 0$ — no noise, TV = 1; `sigma_paper` refuses $T < 2$ (use `sigma_exact`).
#
# **Accuracy (Section 4).** The paper uses the radius
# $\varepsilon_{app}(\delta) = \sigma\ln T\,\big(1 + \sqrt{2\ln(2Td/\delta)}\big)$ (Paper B Algorithm 4, with
# $d = S^2AH + 2SAH$ in RL) for "with probability $\ge 1 - \delta$, every coordinate of every
# $\tilde u_t - u_t$, $t \le T$, is within $\varepsilon_{app}$".  The error of coordinate $i$ of
# $\tilde u_t$ is exactly $\mathcal N(0, \mathrm{popcount}(t)\,\sigma^2)$, so a union bound over the
# $Td$ pairs gives the exact, computable upper bound
# $P[\text{fail}] \le d\sum_{t \le T} 2\,\Phi\big(-\varepsilon_{app}/(\sigma\sqrt{\mathrm{popcount}(t)})\big)$,
# which the checks below compare with $\delta$.

# %% tags=["export"]
def sigma_paper(rho: float, B: float, T: int) -> float:
    """Paper B's noise scale ``sigma = B sqrt(log2 T) / (sqrt(2) rho)`` (Algorithm 2, Theorem 4.1).

    Refuses ``T < 2``: ``log2 1 = 0`` would give ``sigma = 0`` (no noise, TV = 1).
    """
    rho, B = check_positive(rho, "rho"), check_positive(B, "B")
    T = check_int(T, "T", 1)
    if T < 2:
        raise ValueError("T must be >= 2 for the paper's calibration (log2 T = 0 gives sigma = 0); "
                         "use sigma_exact for T = 1")
    return float(B * np.sqrt(np.log2(T)) / (np.sqrt(2) * rho))


def sigma_exact(rho: float, B: float, T: int) -> float:
    """Smallest ``sigma`` with ``2 Phi(B sqrt(n) / (2 sigma)) - 1 = rho``, ``n = floor(log2 T) + 1``:
    ``sigma = B sqrt(n) / (2 Phi^{-1}((1 + rho) / 2)) = B sqrt(n) / (2 sqrt(2) erfinv(rho))`` (erfinv keeps the
    digits of a tiny rho that ``(1 + rho) / 2`` would round away).  Needs ``0 < rho < 1``."""
    rho, B = check_positive(rho, "rho"), check_positive(B, "B")
    if rho >= 1:
        raise ValueError(f"rho must be < 1 for the exact calibration (TV <= 1 always holds), got {rho}")
    n = path_length(T)
    return float(B * np.sqrt(n) / (2 * np.sqrt(2) * erfinv(rho)))


def path_tv(B: float, sigma: float, n_nodes: int) -> float:
    """TV between the tree's outputs on two sequences whose ``n_nodes`` path nodes are shifted by
    vectors of norm ``B``: ``2 Phi(B sqrt(n_nodes) / (2 sigma)) - 1``."""
    B, sigma = check_positive(B, "B"), check_positive(sigma, "sigma")
    n = check_int(n_nodes, "n_nodes", 1)
    return float(erf(B * np.sqrt(n) / (2 * np.sqrt(2) * sigma)))


def eps_app(sigma: float, T: int, d: int, delta: float) -> float:
    """Paper B's accuracy radius ``sigma ln T (1 + sqrt(2 ln(2 T d / delta)))`` (Paper B Algorithm 4)."""
    sigma = check_sigma(sigma)
    T, d = check_int(T, "T", 1), check_int(d, "d", 1)
    delta = check_positive(delta, "delta")
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return float(sigma * np.log(T) * (1 + np.sqrt(2 * np.log(2 * T * d / delta))))


MAX_UNION_BOUND_T = 2**26        # steps ``prefix_error_union_bound`` enumerates (512 MB of popcounts)


def prefix_error_union_bound(threshold: float, sigma: float, T: int, d: int) -> float:
    """Union bound ``d sum_{t<=T} 2 Phi(-threshold / (sigma sqrt(popcount t)))`` on
    ``P[max_{t<=T, i<=d} |u~_t,i - u_t,i| > threshold]`` (errors are N(0, popcount(t) sigma^2)).
    ``T`` is at most ``MAX_UNION_BOUND_T`` (the steps are enumerated)."""
    threshold = check_real(threshold, "threshold", 0, allow_inf=True)
    sigma = check_positive(sigma, "sigma")
    T, d = check_int(T, "T", 1, MAX_UNION_BOUND_T), check_int(d, "d", 1)
    counts = np.bincount(np.bitwise_count(np.arange(1, T + 1, dtype=np.uint64)).astype(np.int64))
    k = np.arange(counts.size)[1:]
    return float(d * np.sum(counts[1:] * 2 * norm.sf(threshold / (sigma * np.sqrt(k)))))


# %% [markdown]
# ## 4. The tree
#
# ### 4a. Randomness and arithmetic, pinned down
#
# Three choices make the tree's outputs a *function of its inputs and of the algorithm's generator*
# — reproducible bit for bit, also by a second implementation that stores far less (the
# memory-light tree of chapter B10).
#
# **Node keys.** When a node completes, the algorithm draws a 192-bit **key** for it from its
# generator `rng` (`draw_node_keys`: three fresh 64-bit words of the generator, passed through the
# one-way hash BLAKE2b, see *keys are secrets* below); the node's noise is the standard-normal
# vector of an SFC64 generator seeded with those three words — exactly numpy's own SFC64 seeding
# (state $(a, b, c, 1)$, then 12 outputs discarded), minus the `SeedSequence` hashing, which random
# words do not need — times $\sigma$ (`node_noise`).  Over the draw of the key the noise is
# $\mathcal N(0, \sigma^2 I_d)$, and different keys give independent streams, so this is the
# mechanism of section 1 — one independent Gaussian per node, drawn when the node completes (with the
# usual idealisation of a pseudo-random generator as random).  A node completed again after a
# rejection (Algorithm 3's "fresh noise") gets a *new* key from `rng`, so fresh noise is fresh by
# construction.  The dense tree uses a key once and forgets it; a tree that keeps the 24-byte key
# instead of the $8d$-byte vector can regenerate the noise whenever it needs it.  (For speed,
# `node_noise` re-uses one private SFC64 object whose whole state it resets from the key under a
# lock: the output depends on the key alone.)
#
# **Keys are secrets.** Whoever holds a node's key holds its noise, and noisy value minus noise is
# the clean value: the privacy of the tree *is* the secrecy of its keys (and of whatever generates
# them).  Three rules follow.
# - **Fresh entropy by default.** Every function that draws takes `rng=None`, which means a new
#   generator seeded from the operating system's entropy (`resolve_rng`, i.e.
#   `np.random.default_rng()`).  Passing a seeded generator is an explicit opt-in for reproducible
#   research — the notebooks do it so that their outputs can be checked — and then **the seed is key
#   material**: anyone who learns or guesses it (seed 0, a date, a small integer) regenerates every
#   key, including the keys a deletion erased, and subtracts the noise.
# - **Keys do not expose the generator.** A stored key is not a raw output of `rng`: it is the
#   BLAKE2b hash (personalised for node keys) of three fresh 64-bit words.  numpy's generators are
#   not cryptographic — PCG64's state can in principle be reconstructed from enough raw outputs and
#   then run backwards — so raw outputs kept in a tree would let the keys that are still stored
#   reveal the ones that were erased.  Behind a one-way hash they do not.  The number of words
#   drawn is unchanged, so the generator's other draws are unaffected.
# - **What an unlearning call returns carries nothing computed from the deleted data.**
#   `unlearn_leaf`'s record (`PathCoupling`) holds the coupling's outcomes only — which path nodes
#   were kept, which one was reflected, from where the learner must re-run — and not, say, the shift
#   $\lVert x_t - x'_t\rVert$: the norm of an RL episode's statistics is
#   $\sqrt{2H + \text{its total reward}}$, so a record holding it would hand out the deleted
#   episode's return (chapter B3 discusses what the outcomes themselves tell).
#
# **Algorithm 3 in terms of the noise.** Write $\eta_b = \tilde v_b - v_b$ for a node's noise and
# $\delta = x_t - x'_t$, so that $v'_b = v_b - \delta$ on the path of leaf $t$:
# - **accept** (keep $\tilde v_b$): the new noise is $\tilde v_b - v'_b = \eta_b + \delta$ — a *shift*
#   by the (sparse) difference of the two leaves;
# - **reject** (reflect, $\tilde v'_b = v'_b + v_b - \tilde v_b$): the new noise is
#   $\tilde v'_b - v'_b = v_b - \tilde v_b = -\eta_b$ — a *sign flip*;
# - the acceptance probability only involves the support $S$ of $\delta$:
#   $\log\frac{\phi(\tilde v_b; v'_b)}{\phi(\tilde v_b; v_b)} = \frac{\lVert\tilde v_b - v_b\rVert^2 - \lVert\tilde v_b - v'_b\rVert^2}{2\sigma^2}$,
#   and the two vectors agree outside $S$.
#
# So an accepted node keeps its noisy value and a rejected one gets it reflected; the tree stores
# clean and noisy values, as in section 1.
#
# **Canonical floating-point order.** Every stored or released number is computed by one fixed
# formula:
# - the clean value of a node (and the clean prefix sum $u_t$) is the **running sum of its leaves,
#   left to right, from 0**: $((0 + x_l) + x_{l+1}) + \dots + x_r$, coordinate by coordinate — equal to
#   (left child) + (right child) in exact arithmetic, and for integer statistics (counts, Bernoulli
#   rewards) in floating point too; a tree storing only the leaves computes it with one `bincount`;
# - a node's noisy value is (clean value) + (noise), one rounding, when the node completes; an
#   accepted node keeps it **bit for bit**; a rejected one gets $(v_b + v'_b) - \tilde v_b$;
# - the noisy prefix sum is $\tilde u_t = ((\tilde v_{b_1} + \tilde v_{b_2}) + \tilde v_{b_3}) + \dots$
#   over $\mathcal D(t)$, largest node first (`fold_rows`);
# - the acceptance test (`coupling_accepts`): with $e = \tilde v_S - v_S$, $e' = \tilde v_S - v'_S$,
#   $\ell = (\mathrm{fsum}(e^2) - \mathrm{fsum}(e'^2))/(2\sigma^2)$ (correctly rounded sums), keep iff
#   $U < e^{\min(\ell, 0)}$ for one uniform $U$ per visited node.
#
# Since an accepted node's noisy value does not change by a single bit, neither does any noisy
# prefix sum that does not involve a rejected node: models computed before an unlearning request
# stay exactly consistent with the tree after it (`verify_run` checks this).  Statistics enter as
# dense vectors of shape `(d,)` or as a `SparseStatistic(indices, values)` (distinct indices; RL
# episodes have at most $3H$ non-zeros); $-0.0$ is stored as $+0.0$.

# %% tags=["export"]
class _SparseFields(NamedTuple):
    indices: np.ndarray
    values: np.ndarray


class SparseStatistic(_SparseFields):
    """A statistic ``x in R^d`` given by its non-zeros: ``indices`` (distinct, in ``[0, d)``) and
    ``values`` (finite).  Trees accept it wherever they accept a dense vector of shape ``(d,)``.
    Construction checks what does not depend on ``d`` (integer indices, 1-D arrays of one length);
    the trees check the rest.  The arrays are kept as given (never modified)."""

    __slots__ = ()

    def __new__(cls, indices, values):
        idx, val = as_array(indices, "indices"), as_array(values, "values")
        if idx.size and idx.dtype.kind not in "iu":
            raise TypeError(f"SparseStatistic indices must be integers, got dtype {idx.dtype}")
        if idx.ndim != 1 or val.shape != idx.shape:
            raise ValueError("SparseStatistic indices and values must be 1-D arrays of the same length, got "
                             f"shapes {idx.shape} and {val.shape}")
        return tuple.__new__(cls, (indices, values))


def _sparse_parts(x: SparseStatistic, d: int, name: str):
    idx, val = as_array(x.indices, f"{name} indices"), as_array(x.values, f"{name} values").astype(float)
    if idx.ndim != 1 or val.shape != idx.shape:
        raise ValueError(f"{name}: indices and values must be 1-D arrays of the same length")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{name}: indices must be integers, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= d):
        raise ValueError(f"{name}: indices must lie in [0, {d})")
    if not np.isfinite(val).all():
        raise ValueError(f"{name} must be finite")
    order = np.argsort(idx, kind="stable")
    idx, val = idx[order], val[order]
    if np.any(idx[1:] == idx[:-1]):
        raise ValueError(f"{name}: indices must be distinct")
    keep = val != 0
    return idx[keep], val[keep]


def statistic_dense(x, d: int, name: str = "x") -> np.ndarray:
    """Validate a statistic (dense ``(d,)`` or ``SparseStatistic``); return a new dense float vector
    (``-0.0`` stored as ``+0.0``)."""
    if type(d) is not int or d < 1:
        d = check_int(d, "d", 1)
    if isinstance(x, SparseStatistic):
        idx, val = _sparse_parts(x, d, name)
        out = np.zeros(d)
        out[idx] = val
        return out
    x = as_array(x, name).astype(float)
    if x.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x + 0.0


def statistic_sparse(x, d: int, name: str = "x"):
    """Validate a statistic (dense ``(d,)`` or ``SparseStatistic``); return its non-zeros as
    ``(indices int64 increasing, values)``."""
    if type(d) is not int or d < 1:
        d = check_int(d, "d", 1)
    if isinstance(x, SparseStatistic):
        return _sparse_parts(x, d, name)
    x = as_array(x, name).astype(float)
    if x.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    idx = np.flatnonzero(x)
    return idx, x[idx]


# %% [markdown]
# Node keys and node noise (*node keys* and *keys are secrets* above): `resolve_rng` gives fresh
# operating-system entropy by default, `draw_node_keys` hashes three fresh words of the generator per
# node, and `node_noise` turns a key into the node's Gaussian noise times $\sigma$.

# %% tags=["export"]
KEY_WORDS = 3
_KEY_PERSON = b"node key"                        # BLAKE2b personalisation: node keys and nothing else
_NOISE_BITS = np.random.SFC64(0)                 # re-used for speed; fully reset from the key per call
_NOISE_GEN = np.random.Generator(_NOISE_BITS)
_NOISE_LOCK = threading.Lock()


def resolve_rng(rng) -> np.random.Generator:
    """The generator to draw from, by the package's one rule (``checks.as_generator``): ``rng`` itself,
    for ``None`` a new generator seeded from the operating system's entropy, for an int seed >= 0
    ``np.random.default_rng(seed)`` (the caller's opt-in for reproducibility; the seed is then key
    material).  Anything else: ``TypeError`` naming ``rng``."""
    return as_generator(rng, "rng")


def draw_node_keys(rng: np.random.Generator, k: int) -> np.ndarray:
    """``k`` fresh 192-bit node keys (shape ``(k, 3)``, uint64).  Key ``i`` is the BLAKE2b hash
    (24 bytes, personalised ``"node key"``) of the raw words ``3i .. 3i+2`` of
    ``rng.bit_generator.random_raw(3k)`` (little-endian): it uses ``3k`` words of the generator, like
    the raw words would, but reveals nothing about the generator's state.  ``rng``: a Generator, None (OS entropy) or an int seed."""
    k = check_int(k, "k", 0)
    rng = as_generator(rng)
    width = 8 * KEY_WORDS
    raw = rng.bit_generator.random_raw(k * KEY_WORDS).astype("<u8").tobytes()
    digests = b"".join(hashlib.blake2b(raw[i:i + width], digest_size=width, person=_KEY_PERSON).digest()
                       for i in range(0, len(raw), width))
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64).reshape(k, KEY_WORDS)


def _node_key(key) -> np.ndarray:
    """A node key: ``KEY_WORDS`` integers in ``[0, 2**64)``, as uint64 (a new array)."""
    k = as_array(key, "key")
    if k.dtype.kind not in "iu":
        raise TypeError(f"key must hold {KEY_WORDS} unsigned 64-bit integers, got dtype {k.dtype}")
    if k.shape != (KEY_WORDS,) or (k.dtype.kind == "i" and np.any(k < 0)):
        raise ValueError(f"key must hold {KEY_WORDS} integers in [0, 2**64), got {key!r}")
    return k.astype(np.uint64)


def node_noise(key, d: int, sigma: float) -> np.ndarray:
    """The noise of the node with ``key`` (three uint64 words): ``sigma`` times ``d`` standard
    normals of SFC64 seeded with the key as numpy seeds it (state ``(a, b, c, 1)``, 12 outputs
    discarded) -- ``N(0, sigma^2 I_d)`` over random keys, the same vector for the same key."""
    if not (type(key) is np.ndarray and key.dtype == np.uint64 and key.shape == (KEY_WORDS,)):
        key = _node_key(key)
    if type(d) is not int or d < 1:
        d = check_int(d, "d", 1)
    if type(sigma) is not float or not 0 <= sigma < math.inf:
        sigma = check_sigma(sigma)
    if sigma == 0:
        return np.zeros(d)
    state = {"bit_generator": "SFC64", "has_uint32": 0, "uinteger": 0,
             "state": {"state": np.array([key[0], key[1], key[2], 1], dtype=np.uint64)}}
    with _NOISE_LOCK:
        _NOISE_BITS.state = state
        _NOISE_BITS.random_raw(12)
        z = _NOISE_GEN.standard_normal(d)
    z *= sigma
    return z


# %% [markdown]
# Algorithm 3's arithmetic on one node, in the canonical order above: the acceptance test
# (`coupling_accepts`), the noisy prefix sum's fold over $\mathcal D(t)$ (`fold_rows`), and the record
# an unlearning call returns (`PathCoupling`: the coupling's outcomes only).

# %% tags=["export"]
def coupling_accepts(noisy_S, clean_S, new_clean_S, sigma: float, u: float) -> bool:
    """Algorithm 3's test at one node, in the canonical arithmetic: keep the noisy value iff
    ``u < exp(min(0, l))``, ``l = (fsum(e^2) - fsum(e'^2)) / (2 sigma^2)``, ``e = v~_S - v_S``,
    ``e' = v~_S - v'_S`` on the support ``S`` of ``x_t - x'_t`` (elsewhere the two agree).
    An empty ``S`` is always kept; with ``sigma = 0`` a non-empty one is rejected."""
    noisy_S, clean_S, new_clean_S = (as_array(v, name) for v, name in (
        (noisy_S, "noisy_S"), (clean_S, "clean_S"), (new_clean_S, "new_clean_S")))
    if noisy_S.ndim != 1 or clean_S.shape != noisy_S.shape or new_clean_S.shape != noisy_S.shape:
        raise ValueError(f"noisy_S, clean_S and new_clean_S must be 1-D of one length, got shapes "
                         f"{noisy_S.shape}, {clean_S.shape}, {new_clean_S.shape}")
    sigma, u = check_sigma(sigma), check_real(u, "u", 0, 1)
    if len(noisy_S) == 0:
        return True
    if sigma == 0:
        return False
    e, e_new = noisy_S - clean_S, noisy_S - new_clean_S
    log_ratio = (math.fsum(e * e) - math.fsum(e_new * e_new)) / (2 * sigma * sigma)
    return bool(u < math.exp(min(log_ratio, 0.0)))


def fold_rows(rows) -> np.ndarray:
    """``((r_1 + r_2) + r_3) + ...`` in the given order (a new array): the canonical sum of noisy
    node values over a dyadic decomposition."""
    if isinstance(rows, np.ndarray):
        rows = list(rows)
    if not isinstance(rows, (list, tuple)) or len(rows) == 0:
        raise ValueError("rows must be a non-empty list of vectors of one shape")
    acc = as_array(rows[0], "rows").astype(float)
    for r in rows[1:]:
        r = as_array(r, "rows")
        if r.shape != acc.shape:
            raise ValueError(f"rows must all have one shape, got {acc.shape} and {r.shape}")
        acc += r
    return acc


@dataclass(frozen=True)
class PathCoupling:
    """What ``unlearn_leaf`` did (the tree's half of Algorithm 3).

    ``path``: complete nodes containing leaf ``t`` (leaf first); ``accepted``: path nodes whose noisy
    value was kept; ``rejected``: the node whose value was reflected (``None`` if all were kept);
    ``regenerated``: ancestors of ``rejected`` ending at the same leaf, given fresh noise;
    ``restart``: number of steps still valid (``rejected.end``, or ``n_leaves`` if nothing was
    rejected) -- the learner re-runs steps ``restart + 1 .. n_leaves``.  Nothing else: the record
    holds the coupling's outcomes, no number computed from the deleted statistic.
    """

    t: int
    n_leaves: int
    path: tuple
    accepted: tuple
    rejected: Node | None
    regenerated: tuple
    restart: int

    def __post_init__(self):
        n = check_int(self.n_leaves, "n_leaves", 1)
        check_int(self.t, "t", 1, n)
        check_int(self.restart, "restart", 0, n)

    @property
    def retrained(self) -> bool:
        """Whether a node was rejected (so steps after ``restart`` must be recomputed)."""
        return self.rejected is not None

    @property
    def steps_recomputed(self) -> int:
        return self.n_leaves - self.restart


# %% [markdown]
# ### 4b. The dense tree
#
# `BinaryTree(d, sigma, capacity=1)` holds two arrays of shape `(rows, d)` — clean and noisy node
# values — in post-order.  `append(x, rng)` writes leaf $t$, completes the $\nu_2(t)$ internal nodes
# ending at $t$ (a node's running sum continues its left child's over the right half's leaves), draws
# one key per completed node and writes its noisy value; the arrays double when full.  A step costs
# $O(d\log T)$ amortised additions (each leaf is re-added once per level) and
# $\sum_{t \le T}(\nu_2(t) + 1) = N(T) < 2T$ noise vectors, $O(d)$ amortised; `noisy_prefix_sum(t)`
# adds $\mathrm{popcount}(t) \le \log_2 t + 1$ rows: $O(d\log T)$.  Memory is $2N(T)d \le 4Td$ floats —
# the memory-light tree of chapter B10 removes the $Td$ terms.
#
# The tree's half of Algorithm 3, `unlearn_leaf(t, x_new, rng)`, is here too because it is a tree
# operation; chapter B3 derives why it is exact.  It writes $x'_t$ into leaf $t$ and walks the
# complete path of leaf $t$ bottom-up.  At node $b$ the new clean value $v'_b$ is the running sum of
# the node's new leaves, so it equals what a tree built on the new leaves holds, bit for bit; the
# acceptance test above decides.  If the noisy value is kept, go up.  If it is rejected, it is
# reflected, the ancestors of $b$ that end at the same leaf $r_b$ — the nodes right after $b$ in
# post-order — get new clean values and **fresh** noise (new keys), and the tree is truncated to its
# first $r_b$ steps: everything later in post-order will be regenerated by the learner's retraining.
# The result is a `PathCoupling` record; the tree is modified in place (the learner copies first),
# after validating every argument.  `rng` supplies, in this order, one uniform per visited node and
# the keys of the regenerated nodes; in `append`, the keys of the completed nodes.

# %% tags=["export"]
class BinaryTree:
    """Anytime binary tree mechanism with dense storage (Algorithm 2's data structure, Paper B Algorithm 2) --
    the readable reference.

    ``d``: dimension of the statistics; ``sigma``: noise scale (``0`` = no noise, the non-private
    reference); ``capacity``: number of steps to preallocate for (the tree doubles beyond it).
    Each completed node gets a key from the ``rng`` passed to ``append`` (default: fresh OS entropy)
    and the noise ``node_noise(key)``; rows hold clean and noisy values, in post-order, in the
    canonical arithmetic of chapter B2.  A frozen tree (``freeze()``) refuses every mutation, also
    after a pickle round trip (its arrays are made read-only again); ``copy()`` is mutable.
    """

    def __init__(self, d: int, sigma: float, capacity: int = 1):
        self._d = check_int(d, "d", 1)
        self._sigma = check_sigma(sigma)
        rows = 2 * check_int(capacity, "capacity", 1)
        self._clean = np.zeros((rows, self._d))
        self._noisy = np.zeros((rows, self._d))
        self._n = 0
        self._frozen = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self._d}, sigma={self._sigma:g}, n_leaves={self._n})"

    # --- read-only properties -------------------------------------------------------------------
    @property
    def d(self) -> int:
        return self._d

    @property
    def sigma(self) -> float:
        return self._sigma

    @property
    def n_leaves(self) -> int:
        """Number of steps (leaves) appended so far."""
        return self._n

    @property
    def n_nodes(self) -> int:
        """Number of complete nodes (rows in use)."""
        return n_nodes(self._n)

    @property
    def frozen(self) -> bool:
        return self._frozen

    @property
    def nbytes(self) -> int:
        """Bytes of the tree's arrays (allocated buffers, including unused rows)."""
        return self._clean.nbytes + self._noisy.nbytes

    # --- validation -----------------------------------------------------------------------------
    def _check_mutable(self):
        if self._frozen:
            raise ValueError("this tree is frozen (it belongs to a recorded run); mutate a copy()")

    def _row(self, node: Node) -> int:
        if node.end > self._n:
            raise ValueError(f"node {tuple(node)} is not complete: it ends at leaf {node.end} > {self._n}")
        return postorder_position(node)

    # --- Algorithm 2: TreeUpdate and GetNoisyPrefixSum ------------------------------------------
    def _reserve(self, rows: int):
        if rows > self._clean.shape[0]:
            new_rows, used = max(rows, 2 * self._clean.shape[0]), self.n_nodes
            for name in ("_clean", "_noisy"):
                grown = np.zeros((new_rows, self._d))
                grown[:used] = getattr(self, name)[:used]
                setattr(self, name, grown)

    def _running_sum(self, first: int, last: int, out=None) -> np.ndarray:
        """``((0 + x_first) + ...) + x_last``: the canonical clean sum of leaves ``first .. last``;
        if ``out`` holds the sum up to some leaf ``m``, pass ``first = m + 1`` to continue it."""
        acc = np.zeros(self._d) if out is None else out
        for s in range(first - 1, last):
            acc += self._clean[2 * s - s.bit_count()]
        return acc

    def append(self, x, rng: np.random.Generator | None = None) -> None:
        """TreeUpdate: leaf ``t = n_leaves + 1`` gets ``x``; the nodes ending at ``t`` are completed
        (clean value: running sum of their leaves), each with a key from ``rng`` and its noise."""
        self._check_mutable()
        x = statistic_dense(x, self._d, "x")
        rng = as_generator(rng)
        t = self._n + 1
        first, k = n_nodes(t - 1), (t & -t).bit_length()
        keys = draw_node_keys(rng, k)
        self._reserve(first + k)
        clean, noisy = self._clean, self._noisy
        clean[first] = x
        self._n = t
        for h in range(1, k):
            p = first + h
            clean[p] = clean[p - (1 << h)]                       # left child's running sum ...
            self._running_sum(t - (1 << (h - 1)) + 1, t, out=clean[p])   # ... continued
        for i in range(k):
            np.add(clean[first + i], node_noise(keys[i], self._d, self._sigma), out=noisy[first + i])

    def noisy_prefix_sum(self, t: int) -> np.ndarray:
        """GetNoisyPrefixSum: ``u~_t`` = the noisy values of the dyadic decomposition of ``[1, t]``,
        summed largest node first (``popcount(t)`` rows); ``t = 0`` gives zeros."""
        t = check_int(t, "t", 0, self._n)
        rows = _decomposition_rows(t)
        return fold_rows([self._noisy[r] for r in rows]) if rows else np.zeros(self._d)

    def clean_prefix_sum(self, t: int) -> np.ndarray:
        """``u_t = x_1 + ... + x_t`` (running sum, canonical order)."""
        t = check_int(t, "t", 0, self._n)
        return self._running_sum(1, t)

    # --- access ---------------------------------------------------------------------------------
    def leaf(self, t: int) -> np.ndarray:
        """The statistic ``x_t`` (a copy)."""
        t = check_int(t, "t", 1, self._n)
        return self._clean[n_nodes(t - 1)].copy()

    def leaves(self) -> np.ndarray:
        """All statistics ``x_1 .. x_n``, shape ``(n_leaves, d)`` (a copy)."""
        rows = [n_nodes(t) for t in range(self._n)]
        return self._clean[rows].copy()

    def clean(self, node: Node) -> np.ndarray:
        """Clean value ``v_b`` of a complete node (a copy)."""
        return self._clean[self._row(_as_node(node))].copy()

    def noisy(self, node: Node) -> np.ndarray:
        """Noisy value ``v~_b`` of a complete node (a copy)."""
        return self._noisy[self._row(_as_node(node))].copy()

    def values(self):
        """``(clean, noisy)``: read-only views of shape ``(n_nodes, d)``, rows in post-order."""
        out = []
        for a in (self._clean, self._noisy):
            v = a[: self.n_nodes].view()
            v.setflags(write=False)
            out.append(v)
        return tuple(out)

    # --- copies, freezing, truncation -----------------------------------------------------------
    def copy(self) -> "BinaryTree":
        """A mutable deep copy (same class, same buffer size)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        used = self.n_nodes
        for name in ("_clean", "_noisy"):
            buf = np.zeros_like(getattr(self, name))
            buf[:used] = getattr(self, name)[:used]
            setattr(new, name, buf)
        new._frozen = False
        return new

    def freeze(self) -> "BinaryTree":
        """Make this tree immutable (in place); returns it."""
        self._frozen = True
        self._clean.setflags(write=False)
        self._noisy.setflags(write=False)
        return self

    def __setstate__(self, state):
        """Unpickling makes fresh, writeable arrays: a frozen tree is frozen again."""
        self.__dict__.update(state)
        if self._frozen:
            self.freeze()

    def _cut(self, n: int) -> None:
        """Keep the first ``n`` steps; the rows after them are zeroed, not just abandoned."""
        rows, used = n_nodes(n), self.n_nodes
        self._clean[rows:used] = 0
        self._noisy[rows:used] = 0
        self._n = n

    def truncate(self, n_leaves: int) -> None:
        """Forget the steps after ``n_leaves`` (keeps the first ``N(n_leaves)`` rows, zeroes the
        others); steps appended later complete their nodes afresh (new keys)."""
        self._check_mutable()
        self._cut(check_int(n_leaves, "n_leaves", 0, self._n))

    # --- the tree's half of Algorithm 3 ---------------------------------------------------------
    def unlearn_leaf(self, t: int, x_new, rng: np.random.Generator | None = None) -> PathCoupling:
        """Replace leaf ``t`` by ``x_new`` by maximally coupling its path, leaf to root (Algorithm 3).

        Each complete path node gets its new clean value ``v'_b`` (running sum of its new leaves) and
        keeps its noisy value with probability ``min(1, phi(v~_b; v'_b) / phi(v~_b; v_b))``
        (``coupling_accepts``).  At the first rejection the noisy value is reflected
        (``v~_b <- (v_b + v'_b) - v~_b``), the ancestors ending at the same leaf get fresh noise, and
        the tree is truncated to ``rejected.end`` steps (the caller re-runs the later steps).
        Mutates this tree; call ``copy()`` first to keep it.
        """
        self._check_mutable()
        t = check_int(t, "t", 1, self._n)
        x_new = statistic_dense(x_new, self._d, "x_new")
        rng = as_generator(rng)
        n_before = self._n
        path = leaf_path(t, n_before)
        clean, noisy = self._clean, self._noisy
        x_old = clean[n_nodes(t - 1)].copy()
        S = np.flatnonzero(x_old - x_new)
        accepted = []
        for k, b in enumerate(path):                             # the leaf first: the sums above read it
            p = postorder_position(b)
            old = clean[p].copy()
            clean[p] = x_new if b.level == 0 else self._running_sum(b.start, b.end)
            new = clean[p]
            if coupling_accepts(noisy[p, S], old[S], new[S], self._sigma, rng.random()):
                accepted.append(b)
                continue
            noisy[p] = (old + new) - noisy[p]                    # reflection
            regenerated = tuple(a for a in path[k + 1:] if a.end == b.end)
            keys = draw_node_keys(rng, len(regenerated)) if regenerated else ()
            for a, key in zip(regenerated, keys):
                q = postorder_position(a)
                clean[q] = self._running_sum(a.start, a.end)
                np.add(clean[q], node_noise(key, self._d, self._sigma), out=noisy[q])
            self._cut(b.end)
            return PathCoupling(t, n_before, path, tuple(accepted), b, regenerated, b.end)
        return PathCoupling(t, n_before, path, tuple(accepted), None, (), n_before)


# %%
from bandit_unlearning.exact.tree import *  # noqa: F403  (the module generated from the cells above)

# %% [markdown]
# ## 5. Checks
#
# ### 5a. Bookkeeping, against obviously-correct loops (exhaustive for small sizes)
# - the post-order positions of the complete nodes after $n$ leaves are exactly $0, \dots, N(n)-1$
#   and list the nodes in the order of a recursive post-order traversal of the full tree (restricted
#   to complete nodes); `node_at` inverts `postorder_position`;
# - $\mathcal D(t)$ partitions $[1, t]$ into $\mathrm{popcount}(t)$ dyadic blocks;
# - `leaf_path(t, n)` is the set of complete nodes containing $t$, of length $\le$ `path_length(n)`,
#   with equality for the first leaf.

# %%
def postorder_oracle(levels):
    """Recursive post-order of the full tree of 2**levels leaves."""
    out = []
    def visit(h, j):
        if h > 0:
            visit(h - 1, 2 * j)
            visit(h - 1, 2 * j + 1)
        out.append(Node(h, j))
    visit(levels, 0)
    return out


full = postorder_oracle(9)                                  # 512 leaves
assert [postorder_position(b) for b in full] == list(range(len(full)))
assert all(node_at(p) == b for p, b in enumerate(full))
containing = {t: sorted((b for b in full if b.start <= t <= b.end), key=lambda b: b.level) for t in range(1, 513)}
for n in range(1, 513):
    complete = [b for b in full if b.end <= n]              # must be a prefix of the post-order
    assert full[: n_nodes(n)] == complete
    dec = dyadic_decomposition(n)
    assert len(dec) == n.bit_count() and dec[0].start == 1 and dec[-1].end == n
    assert all(a.end + 1 == b.start for a, b in zip(dec, dec[1:]))
    for t in range(1, n + 1):
        path = leaf_path(t, n)
        assert list(path) == [b for b in containing[t] if b.end <= n]
        assert len(path) <= path_length(n) and (t > 1 or len(path) == path_length(n))
    assert nodes_completed_at(n) == tuple(b for b in complete if b.end == n)
print("post-order positions, decompositions, paths and completions agree with loop oracles for n <= 512")

# %% [markdown]
# ### 5b. Prefix sums: unbiased, with the variance and covariance the decomposition predicts
#
# Coordinates are independent, so a single tree with $d = 4000$ coordinates is 4000 independent
# replicates of every prefix-sum error $e_t = \tilde u_t - u_t$.  The decomposition predicts, per
# coordinate, $e_t \sim \mathcal N(0, \mathrm{popcount}(t)\sigma^2)$ and
# $\mathrm{Cov}(e_s, e_t) = \sigma^2\,\lvert\mathcal D(s) \cap \mathcal D(t)\rvert$ (shared nodes).
# For $T = 64$ and $\sigma = 1.3$:
# - **mean:** $\bar e_t\sqrt d/(\sigma\sqrt{\mathrm{popcount}(t)}) \sim \mathcal N(0,1)$, two-sided z-test;
# - **variance:** $\sum_i e_{t,i}^2/(\mathrm{popcount}(t)\sigma^2) \sim \chi^2_d$, two-sided test;
# - **covariance:** for every pair $s < t$, the average of $e_{s,i}e_{t,i}$ has mean $\sigma^2 c_{st}$
#   and variance $\sigma^4(\mathrm{popcount}(s)\mathrm{popcount}(t) + c_{st}^2)/d$; a z-test (the CLT with
#   $d = 4000$ is accurate for products of Gaussians at these levels; see the sizing note).
#
# **Sizing.** $64 + 64 + 2016 = 2144$ tests, Bonferroni at overall level $10^{-6}$: per-test level
# $4.7\cdot 10^{-10}$ (critical $|z| \approx 6.2$).  The mean and variance tests are exact; for the
# covariance z-tests the normal approximation of a mean of 4000 products is the only approximation,
# and its tails at $|z| = 6.2$ are checked empirically below by how far the observed $|z|$ stay from it.
#
# The loop oracle: every noisy prefix sum equals the explicit sum of its decomposition's noisy node
# values, and every clean node value the explicit running sum of its leaves (bit for bit: the
# canonical order of section 4a) and numpy's sum of them (up to rounding).

# %%
T_CHECK, D_CHECK, SIGMA_CHECK = 64, 4000, 1.3
xs = rng.uniform(0, 1, size=(T_CHECK, D_CHECK))


def prefix_errors(tree_cls, xs, sigma, rng):
    tree = tree_cls(xs.shape[1], sigma)
    for x in xs:
        tree.append(x, rng)
    exact = np.cumsum(xs, axis=0)
    return tree, np.array([tree.noisy_prefix_sum(t) for t in range(1, len(xs) + 1)]) - exact


tree, err = prefix_errors(BinaryTree, xs, SIGMA_CHECK, rng)
for t in range(1, T_CHECK + 1):                           # loop oracle
    manual = sum(tree.noisy(b) for b in dyadic_decomposition(t))    # ((0 + v~_1) + v~_2) + ...
    assert np.array_equal(manual, tree.noisy_prefix_sum(t))
for p in range(tree.n_nodes):
    b = node_at(p)
    running = np.zeros(D_CHECK)
    for x in xs[b.start - 1: b.end]:
        running += x                                      # the canonical order, left to right
    assert np.array_equal(tree.clean(b), running)
    assert np.allclose(tree.clean(b), xs[b.start - 1: b.end].sum(axis=0), rtol=0, atol=1e-12)

pc = np.array([t.bit_count() for t in range(1, T_CHECK + 1)])
shared = np.array([[len(set(dyadic_decomposition(s)) & set(dyadic_decomposition(t)))
                    for t in range(1, T_CHECK + 1)] for s in range(1, T_CHECK + 1)])
N_TESTS_PREFIX = 2 * T_CHECK + T_CHECK * (T_CHECK - 1) // 2
LEVEL_PREFIX = 1e-6 / N_TESTS_PREFIX


def prefix_pvalues(err, sigma):
    """p-values of the mean, variance and covariance tests for errors of shape (T, d)."""
    T, d = err.shape
    z_mean = err.mean(axis=1) * np.sqrt(d) / (sigma * np.sqrt(pc[:T]))
    p_mean = 2 * stats.norm.sf(np.abs(z_mean))
    chi = np.sum(err**2, axis=1) / (pc[:T] * sigma**2)
    p_var = 2 * np.minimum(stats.chi2.sf(chi, d), stats.chi2.cdf(chi, d))
    iu = np.triu_indices(T, 1)
    prod = (err @ err.T / d)[iu]
    sd = sigma**2 * np.sqrt((np.outer(pc[:T], pc[:T]) + shared[:T, :T] ** 2)[iu] / d)
    z_cov = (prod - sigma**2 * shared[:T, :T][iu]) / sd
    return p_mean, p_var, 2 * stats.norm.sf(np.abs(z_cov)), z_cov


p_mean, p_var, p_cov, z_cov = prefix_pvalues(err, SIGMA_CHECK)
print(f"{N_TESTS_PREFIX} tests, per-test level {LEVEL_PREFIX:.1e}")
print(f"smallest p-values: mean {p_mean.min():.4f}, variance {p_var.min():.4f}, covariance {p_cov.min():.4f}"
      f" (largest |z| of the covariance tests: {np.abs(z_cov).max():.2f})")
assert min(p_mean.min(), p_var.min(), p_cov.min()) > LEVEL_PREFIX
print("noisy prefix sums: unbiased, variance popcount(t) sigma^2, covariance sigma^2 |D(s) & D(t)|")

# %% [markdown]
# **The checks can fail.** Two wrong mechanisms with the same interface: `NoisyLeaves` (noise on
# every leaf, prefix sum = sum of noisy leaves: unbiased, but variance $t\sigma^2$) and
# `FreshNoisePerQuery` (adds fresh $\mathcal N(0, \mathrm{popcount}(t)\sigma^2)$ at every query:
# right mean and variance, but no covariance between steps — and a privacy disaster).  The battery
# rejects both; the second only through the covariance tests, which is why they are there.

# %%
class NoisyLeaves(BinaryTree):
    """BROKEN: prefix sum = sum of the noisy leaves."""

    def noisy_prefix_sum(self, t):
        return sum((self.noisy(Node(0, i)) for i in range(t)), np.zeros(self.d))


class FreshNoisePerQuery(BinaryTree):
    """BROKEN: fresh noise with the right variance at every query."""

    query_rng = np.random.default_rng(7)

    def noisy_prefix_sum(self, t):
        return self.clean_prefix_sum(t) + SIGMA_CHECK * np.sqrt(t.bit_count()) * self.query_rng.normal(size=self.d)


for broken in (NoisyLeaves, FreshNoisePerQuery):
    pm, pv, pcov, _ = prefix_pvalues(prefix_errors(broken, xs, SIGMA_CHECK, rng)[1], SIGMA_CHECK)
    print(f"{broken.__name__:19s}: smallest p-values: mean {pm.min():.1e}, variance {pv.min():.1e}, "
          f"covariance {pcov.min():.1e}")
    assert min(pm.min(), pv.min(), pcov.min()) < LEVEL_PREFIX

# %% [markdown]
# ### 5c. Calibration: the exact $\sigma$ solves TV $= \rho$; the paper's is valid and conservative
#
# Exact computations on a grid of $(\rho, T)$, then a Monte Carlo check of the path-TV formula on
# real trees: for two leaf sequences differing at leaf $t$ by a vector of norm $B$,
# $\mathrm{TV} = \mathbb E_P[(1 - q/p)_+]$ where the likelihood ratio only involves the path nodes.
# We estimate it from $R = 4000$ trees and compare with $2\Phi(B\sqrt n/(2\sigma)) - 1$ within a
# Hoeffding margin (values in $[0, 1]$; level $10^{-6}$).

# %%
print(f"{'T':>7} {'rho':>5} {'n':>3} {'sigma_paper':>11} {'sigma_exact':>11} {'ratio':>6} "
      f"{'TV(paper)':>9} {'TV(exact)':>9}")
for T in (2, 16, 1024, 100_000):
    for rho in (0.05, 0.5, 0.9):
        sp, se = sigma_paper(rho, 1.0, T), sigma_exact(rho, 1.0, T)
        n = path_length(T)
        tv_p, tv_e = path_tv(1.0, sp, n), path_tv(1.0, se, n)
        assert abs(tv_e - rho) < 1e-12 and tv_p <= rho
        print(f"{T:7d} {rho:5.2f} {n:3d} {sp:11.4f} {se:11.4f} {sp / se:6.3f} {tv_p:9.4f} {tv_e:9.4f}")
# the validity argument holds for all T >= 2, not only on the printed grid
Ts = np.arange(2, 10**6)
assert np.all(np.floor(np.log2(Ts)) + 1 <= np.pi * np.log2(Ts))

# Monte Carlo TV of the tree's outputs on two neighbouring sequences (d = 3, T = 16, leaf t = 5)
d, T, t, B, sigma = 3, 16, 5, 1.0, 2.0
x_seq = rng.uniform(size=(T, d))
delta_x = rng.normal(size=d)
delta_x *= B / np.linalg.norm(delta_x)
R = 4000
ratios = np.empty(R)
path = leaf_path(t, T)
for r in range(R):
    tree = BinaryTree(d, sigma, capacity=T)
    for x in x_seq:
        tree.append(x, rng)
    # log q/p: only the path nodes' means differ, by -delta_x
    ratios[r] = sum(((tree.noisy(b) - tree.clean(b)) @ (tree.noisy(b) - tree.clean(b))
                     - (tree.noisy(b) - tree.clean(b) + delta_x) @ (tree.noisy(b) - tree.clean(b) + delta_x))
                    / (2 * sigma**2) for b in path)
tv_mc = np.mean(np.maximum(0.0, 1 - np.exp(ratios)))
tv_formula = path_tv(B, sigma, len(path))
margin = hoeffding_margin(R, 1.0, 0.5e-6)
print(f"path of leaf {t} in a tree of {T}: {len(path)} nodes; TV formula {tv_formula:.4f}, "
      f"Monte Carlo {tv_mc:.4f} (margin {margin:.4f})")
assert abs(tv_mc - tv_formula) <= margin

# %% [markdown]
# ### 5d. The accuracy radius $\varepsilon_{app}$
#
# **Exact part.** The union bound of section 3 is computed for $T$ up to $10^6$,
# $d \in \{1, 100, 23{,}000\}$ (23,000 is the size of the 5x5 gridworld's statistics in RL) and
# $\delta \in \{10^{-3}, 0.05, 0.5\}$.  It is below $\delta$ for every $T \ge 3$ on this grid.
# **Sharp edge:** at $T = 2$ the radius is too small for large $d$ — $\ln 2 < 1$, while the errors
# have standard deviation $\sigma$ — and there the failure probability is exact, because the two
# prefix sums use the two independent nodes $[1,1]$ and $[1,2]$:
# $P[\text{fail}] = 1 - (1 - 2\Phi(-\varepsilon_{app}/\sigma))^{2d}$, about 0.045 for $d = 23{,}000$ and
# $\delta = 10^{-3}$.  The statement needs $T \ge 3$ (harmless for a learner, but true only there).
#
# **Monte Carlo part.** $R = 500$ replicates of a $d = 20$ statistic over $T = 256$ steps (one tree
# with $500 \times 20$ coordinates), $\delta = 0.05$: the fraction of replicates with any coordinate
# of any $\tilde u_t - u_t$ outside $\varepsilon_{app}$ must be at most $\delta$ — asserted with a
# Clopper–Pearson margin (a correct tree fails with probability $< 10^{-6}$).  In fact no replicate
# comes close: the radius is loose by the factor printed.

# %%
grid_T = np.unique(np.concatenate([[3], np.round(np.logspace(np.log10(4), 6, 40)).astype(int)]))
worst = 0.0
for d in (1, 100, 23_000):
    for delta in (1e-3, 0.05, 0.5):
        for T in grid_T:
            ub = prefix_error_union_bound(eps_app(1.0, int(T), d, delta), 1.0, int(T), d)
            worst = max(worst, ub / delta)
print(f"T >= 3: largest (union bound / delta) on the grid = {worst:.3f}")
assert worst <= 1.0
p_tail = 2 * stats.norm.sf(eps_app(1.0, 2, 23_000, 1e-3))
exact_fail = -np.expm1(2 * 23_000 * np.log1p(-p_tail))
print(f"T = 2, d = 23000, delta = 0.001: exact failure probability {exact_fail:.4f}")
assert exact_fail > 1e-3

R_APP, D_APP, T_APP, DELTA = 500, 20, 256, 0.05
sig = 1.0
tree_app = BinaryTree(R_APP * D_APP, sig, capacity=T_APP)
xs_app = rng.uniform(size=(T_APP, R_APP * D_APP))
max_err = np.zeros(R_APP)
exact = np.zeros(R_APP * D_APP)
for t_ in range(1, T_APP + 1):
    tree_app.append(xs_app[t_ - 1], rng)
    exact += xs_app[t_ - 1]
    e = np.abs(tree_app.noisy_prefix_sum(t_) - exact).reshape(R_APP, D_APP).max(axis=1)
    max_err = np.maximum(max_err, e)
radius = eps_app(sig, T_APP, D_APP, DELTA)
fails = int(np.sum(max_err > radius))
allowed = int(stats.binom.isf(1e-6, R_APP, DELTA))
print(f"eps_app = {radius:.3f}; largest error over all replicates {max_err.max():.3f} "
      f"(radius / largest = {radius / max_err.max():.2f}); {fails} of {R_APP} replicates outside "
      f"(allowed <= {allowed})")
assert fails <= allowed

# %% [markdown]
# ### 5e. The path coupling (`unlearn_leaf`)
#
# For fixed leaves ($d = 3$, $T = 16$, leaf $t = 3$: a path of 5 complete nodes) we build 6,000
# trees (fresh noise) and in each replace leaf $t$ by $x'_t$ with $\lVert x_t - x'_t\rVert = 1.2$,
# $\sigma = 1.5$.  Since the leaves are fixed here, the path nodes' noise is independent, so the index $K$ of the
# first rejected path node is geometric: $P[K = k] = (1 - \mathrm{TV})^k\,\mathrm{TV}$ for $k < 5$ and
# $P[\text{no rejection}] = (1-\mathrm{TV})^5$ — a chi-square goodness-of-fit test (6 cells, expected
# counts > 400).  And the coupled value of path node $k$, among the copies that reached it, must be
# $\mathcal N(v'_k, \sigma^2 I)$: KS on its projection on $x'_t - x_t$, 5 tests.  Bonferroni over
# 6 tests at $10^{-6}$.  Structural checks on the first 300 trees: accepted nodes keep their noisy value bit
# for bit; a reflected node holds $(v_b + v'_b) - \tilde v_b$; regenerated ancestors have new noise; clean values equal those of a tree rebuilt from the new leaves; the tree
# is truncated at the rejected node's last leaf.

# %%
d, T, t, sigma = 3, 16, 3, 1.5
leaves_fixed = rng.uniform(size=(T, d))
direction = rng.normal(size=d)
x_new = leaves_fixed[t - 1] + 1.2 * direction / np.linalg.norm(direction)
path = leaf_path(t, T)
new_leaves = leaves_fixed.copy()
new_leaves[t - 1] = x_new
rebuilt = BinaryTree(d, 0.0)                                   # clean values of the new tree
for x in new_leaves:
    rebuilt.append(x, rng)

R = 6_000
first_reject = np.empty(R, dtype=int)
coupled = [[] for _ in path]
e_dir = (x_new - leaves_fixed[t - 1]) / np.linalg.norm(x_new - leaves_fixed[t - 1])
for r in range(R):
    base = BinaryTree(d, sigma, capacity=T)                    # fresh noise, same leaves
    for x in leaves_fixed:
        base.append(x, rng)
    base.freeze()
    tree = base.copy()
    rec = tree.unlearn_leaf(t, x_new, rng)
    k_rej = len(path) if rec.rejected is None else path.index(rec.rejected)
    first_reject[r] = k_rej
    for k in range(min(k_rej + 1, len(path))):
        coupled[k].append((tree.noisy(path[k]) - rebuilt.clean(path[k])) @ e_dir / sigma)
    if r < 300:                                                # structural checks
        assert tree.n_leaves == rec.restart == (T if rec.rejected is None else rec.rejected.end)
        for b in path[:k_rej]:
            assert np.array_equal(tree.noisy(b), base.noisy(b))
        if rec.rejected is not None:
            b = rec.rejected
            assert np.array_equal(tree.noisy(b), (base.clean(b) + rebuilt.clean(b)) - base.noisy(b))
            for a in rec.regenerated:                          # fresh noise: new keys
                assert not np.array_equal(tree.noisy(a) - tree.clean(a), base.noisy(a) - base.clean(a))
        assert np.array_equal(tree.values()[0], rebuilt.values()[0][: tree.n_nodes])

tv = tv_gaussians(base.leaf(t), x_new, sigma)
probs = np.array([(1 - tv) ** k * tv for k in range(len(path))] + [(1 - tv) ** len(path)])
observed = np.bincount(first_reject, minlength=len(path) + 1)
p_geom = stats.chisquare(observed, R * probs).pvalue
p_nodes = [stats.kstest(np.array(c), "norm").pvalue for c in coupled]
print(f"TV per node {tv:.4f}; retraining probability exact {1 - (1 - tv) ** len(path):.4f}, "
      f"observed {np.mean(first_reject < len(path)):.4f}")
print("first rejection: observed", observed.tolist(), " expected", np.round(R * probs).astype(int).tolist(),
      f" chi-square p = {p_geom:.3f}")
print("coupled path values ~ N(v', sigma^2): KS p =", [round(float(p), 3) for p in p_nodes])
assert min([p_geom] + p_nodes) > 1e-6 / 6

# %% [markdown]
# ### 5f. Keys are secrets
#
# Section 4a's rules, checked exactly: a seeded generator (the opt-in) gives the same keys every
# time — so its seed regenerates them — and takes exactly $3k$ words for $k$ keys, yet no key shares
# a word with the generator's stream; without a generator, two trees on the same leaves get
# different noise; and the record of `unlearn_leaf` holds the coupling's outcomes only.  The check
# can fail: raw words as keys (the obvious implementation) are found in the stream at once.

# %%
k = 200
keys_a, keys_b = draw_node_keys(np.random.default_rng(7), k), draw_node_keys(np.random.default_rng(7), k)
probe = np.random.default_rng(7)
stream = set(probe.bit_generator.random_raw(3 * k + 1000).tolist())
after = np.random.default_rng(7)
draw_node_keys(after, k)
skipped = np.random.default_rng(7)
skipped.bit_generator.random_raw(3 * k)
assert np.array_equal(keys_a, keys_b) and after.bit_generator.state == skipped.bit_generator.state
assert not set(keys_a.ravel().tolist()) & stream
raw_keys = np.random.default_rng(7).bit_generator.random_raw(3 * k).reshape(k, 3)        # BROKEN: raw words
assert set(raw_keys.ravel().tolist()) <= stream
xs_keys = rng.uniform(size=(16, 3))
trees = [BinaryTree(3, 1.0, capacity=16) for _ in range(2)]
for tree_ in trees:
    for x in xs_keys:
        tree_.append(x)                                          # no generator: fresh OS entropy
assert not np.array_equal(trees[0].values()[1], trees[1].values()[1])
rec_keys = trees[0].unlearn_leaf(5, np.zeros(3))
assert {f.name for f in dataclasses.fields(rec_keys)} == {"t", "n_leaves", "path", "accepted", "rejected",
                                                           "regenerated", "restart"}
print(f"{k} keys from a seeded generator: reproducible, 3 words each, none of them a word of the stream "
      "(raw words as keys: all of them); two unseeded trees: different noise; "
      "the coupling record: outcomes only")

# %% [markdown]
# ## 6. Figure: prefix-sum error against $t$
#
# Left: the error of one coordinate of $\tilde u_t$ for 200 replicates (grey), its exact standard
# deviation $\sigma\sqrt{\mathrm{popcount}(t)}$ (the saw-tooth: the error drops at powers of two,
# where the decomposition is a single node), the 99.9% band, and the paper's $\varepsilon_{app}$
# ($\delta = 0.05$, $d = 20$).  Right: the two calibrations of $\sigma$ against $T$ for $B = 1$.

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11.5, 4.2))
T_FIG = 256
tree_fig = BinaryTree(200, 1.0, capacity=T_FIG)
xs_fig = rng.uniform(size=(T_FIG, 200))
for x in xs_fig:
    tree_fig.append(x, rng)
errs = np.array([tree_fig.noisy_prefix_sum(t_) for t_ in range(1, T_FIG + 1)]) - np.cumsum(xs_fig, axis=0)
ts = np.arange(1, T_FIG + 1)
sd = np.sqrt([t_.bit_count() for t_ in ts])
ax0.plot(ts, errs, color="0.7", lw=0.3)
ax0.plot(ts, sd, "C0", label=r"$\pm\sigma\sqrt{\mathrm{popcount}(t)}$")
ax0.plot(ts, -sd, "C0")
ax0.plot(ts, stats.norm.isf(5e-4) * sd, "C1", label="99.9% band")
ax0.plot(ts, -stats.norm.isf(5e-4) * sd, "C1")
ax0.axhline(eps_app(1.0, T_FIG, 20, 0.05), color="C3", ls="--", label=r"$\pm\varepsilon_{app}$ ($\delta$ = 0.05, d = 20)")
ax0.axhline(-eps_app(1.0, T_FIG, 20, 0.05), color="C3", ls="--")
ax0.set(xlabel="step t", ylabel=r"$\tilde u_t - u_t$ (one coordinate, $\sigma$ = 1)",
        title="Noisy prefix-sum error, 200 replicates")
ax0.legend(fontsize=7, loc="lower left")
Tg = np.unique(np.round(np.logspace(np.log10(2), 5, 60)).astype(int))
for rho, color in ((0.1, "C0"), (0.5, "C2")):
    ax1.plot(Tg, [sigma_paper(rho, 1.0, int(T_)) for T_ in Tg], color=color, label=rf"paper, $\rho$ = {rho}")
    ax1.plot(Tg, [sigma_exact(rho, 1.0, int(T_)) for T_ in Tg], color=color, ls="--", label=rf"exact, $\rho$ = {rho}")
ax1.set(xscale="log", yscale="log", xlabel="T", ylabel=r"$\sigma$ (B = 1)", title="Noise calibrations")
ax1.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Speed and memory** (not part of the checks; timings vary, so this cell's output is not
# compared by nbval).  One step of the RL-sized statistic ($d = 23{,}000$): `append` plus
# `noisy_prefix_sum`.

# %%
# NBVAL_IGNORE_OUTPUT
import time

d_rl, steps = 23_000, 512
tree_rl = BinaryTree(d_rl, 1.0, capacity=steps)
x_rl = np.zeros(d_rl)
start = time.perf_counter()
for _ in range(steps):
    tree_rl.append(x_rl, rng)
    tree_rl.noisy_prefix_sum(tree_rl.n_leaves)
elapsed = time.perf_counter() - start
print(f"d = {d_rl}: {steps / elapsed:.0f} steps/s (append + noisy prefix sum); "
      f"memory {tree_rl.nbytes / 2**20:.0f} MiB for {steps} steps")

# %% [markdown]
# ## Summary
# - `BinaryTree(d, sigma, capacity)` (module `bandit_unlearning.exact.tree`): anytime, rows of clean
#   and noisy values in post-order, `append(x, rng)` in $O(d\log T)$ amortised additions and $O(d)$
#   amortised noise, `noisy_prefix_sum(t)` in $O(d\log T)$, `leaf`, `leaves`, `clean`, `noisy`,
#   `values`, `copy`, `freeze`, `truncate`, `nbytes`, and `unlearn_leaf(t, x_new, rng) -> PathCoupling`
#   (the tree's half of Algorithm 3: accept = keep the noisy value, i.e. shift the noise by
#   $x_t - x'_t$; reject = reflect, i.e. flip the noise).  Statistics dense or
#   `SparseStatistic`.  The randomness and arithmetic are pinned down (section 4a) so that a second
#   implementation can reproduce every output bit for bit: per-node keys derived one-way from `rng`
#   (`draw_node_keys`, `node_noise`; `rng=None`, the default, is fresh OS entropy — keys and seeds are
#   secrets, section 4a), clean values as running sums of leaves, noisy prefix sums
#   folded largest node first (`fold_rows`), the acceptance test `coupling_accepts` — the
#   memory-light `LightTree` of chapter B10 does.
#   Bookkeeping: `Node`, `n_nodes`, `postorder_position` ($=N(r_b - 1) + h$,
#   $N(n) = 2n - \mathrm{popcount}(n)$), `node_at`, `dyadic_decomposition`, `leaf_path`,
#   `nodes_completed_at`, `path_length`.  Calibration: `sigma_paper`, `sigma_exact`, `path_tv`,
#   `eps_app`, `prefix_error_union_bound`.
# - Checked: bookkeeping against loop oracles ($n \le 512$); prefix sums unbiased with variance
#   $\mathrm{popcount}(t)\sigma^2$ and covariance $\sigma^2|\mathcal D(s)\cap\mathcal D(t)|$ (2144 tests,
#   overall level $10^{-6}$), rejecting a noisy-leaves tree and a fresh-noise-per-query tree;
#   `sigma_exact` solves TV $= \rho$ exactly and the paper's $\sigma$ is valid and about $\sqrt\pi$
#   times larger for small $\rho$; the path-TV formula matched Monte Carlo on real trees;
#   $\varepsilon_{app}$ holds (union bound $\le \delta$) for $T \ge 3$ and fails at $T = 2$ for large
#   $d$ (sharp edge); the path coupling's first-rejection law is geometric and its coupled values have the
#   target law; accepted nodes keep their noisy values bit for bit; keys are reproducible from a
#   seeded generator but share no word with its stream, and unseeded trees get fresh noise.
