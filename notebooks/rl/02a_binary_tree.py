# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.tree
# ---

# %% [markdown]
# # Chapter B2a — The binary tree mechanism: bookkeeping, calibration, randomness
#
# *Paper B, Section 3: Algorithm 2's data structure (`TreeUpdate`, `GetNoisyPrefixSum`), its noise
# calibration and the accuracy radius $\varepsilon_{app}$ of Section 4.  Exports the first half of
# `bandit_unlearning.exact.tree`; [chapter B2b](02b_dense_tree.ipynb) builds the tree itself on it
# and checks it.*
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
# This chapter states the mechanism and builds its pieces: the bookkeeping (dyadic decompositions,
# leaf-to-root paths, post-order positions), the two calibrations of $\sigma$ (the paper's and an
# exact one) with the accuracy radius $\varepsilon_{app}$, and the randomness and arithmetic that
# every tree shares (per-node keys, the acceptance test, the canonical order of sums).  Chapter B2b
# assembles them into the dense tree (anytime: it grows by doubling; cost $O(d)$ amortised per step,
# $O(d\log T)$ per prefix sum, no Python loop over $d$) and checks it: unbiasedness, the variance
# and covariance the decomposition predicts, the calibrations, the paper's accuracy radius
# $\varepsilon_{app}$, and the path coupling used for unlearning.

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
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import erf, erfinv
from scipy.stats import norm

from bandit_unlearning import checks as _checks
from bandit_unlearning.checks import as_array, as_generator, as_real_array, check_int, check_positive, check_real
from bandit_unlearning.privacy.coupling import check_sigma, tv_gaussians


class _NodeFields(NamedTuple):
    level: int
    index: int


class Node(_NodeFields):
    """A dyadic node: leaves ``[index * 2**level + 1, (index + 1) * 2**level]`` (1-based); ``level``
    and ``index`` are integers >= 0 (validated on construction).

    Parameters
    ----------
    level : int
        Height, >= 0 (leaves are level 0).
    index : int
        Position within the level, >= 0.
    """

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

# %% [markdown]
# Counting and placing complete nodes: after $n$ steps there are $N(n) = 2n - \mathrm{popcount}(n)$ of them,
# and a node's post-order position depends only on the node, not on the size of the tree.

# %% tags=["export"]
def n_nodes(n_leaves: int) -> int:
    """Number of complete nodes after ``n_leaves`` steps: ``2 n - popcount(n)``.

    Parameters
    ----------
    n_leaves : int
        Number of steps, >= 0.

    Returns
    -------
    int
        ``2 n - popcount(n)``.
    """
    n = check_int(n_leaves, "n_leaves", 0)
    return 2 * n - n.bit_count()


def as_node(node) -> Node:
    """A ``Node`` from a ``(level, index)`` pair (a ``Node`` itself is returned as is); anything else
    is a ``TypeError``, and a negative or non-integer level or index the errors of ``Node``.

    Parameters
    ----------
    node : Node or tuple
        A ``(level, index)`` pair.

    Returns
    -------
    Node
        The same node.
    """
    if not isinstance(node, tuple) or len(node) != 2:
        raise TypeError(f"node must be a Node (level, index), got {node!r}")
    return node if type(node) is Node else Node(*node)


def postorder_position(node: Node) -> int:
    """0-based post-order position ``N(r_b - 1) + level`` of a node (independent of the tree size).

    Parameters
    ----------
    node : Node or (level, index)
        A node.

    Returns
    -------
    int
        Its 0-based post-order row.
    """
    level, index = as_node(node)
    r = (index + 1) << level
    return 2 * (r - 1) - (r - 1).bit_count() + level


def node_at(position: int) -> Node:
    """The node at a post-order position (inverse of ``postorder_position``).

    Parameters
    ----------
    position : int
        A post-order row, >= 0.

    Returns
    -------
    Node
        The node stored there.
    """
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
    """Nodes whose last leaf is ``t``, bottom-up: levels ``0 .. nu_2(t)`` (post-order).

    Parameters
    ----------
    t : int
        A step, >= 1.

    Returns
    -------
    tuple of Node
        The nodes whose last leaf is ``t``, bottom-up.
    """
    t = check_int(t, "t", 1)
    return tuple(Node(h, (t >> h) - 1) for h in range((t & -t).bit_length()))


def dyadic_decomposition(t: int) -> tuple:
    """The nodes partitioning ``[1, t]``, left to right, one per 1-bit of ``t`` (``()`` for ``t = 0``).

    Parameters
    ----------
    t : int
        Number of leaves, >= 0.

    Returns
    -------
    tuple of Node
        The decomposition of ``[1, t]``, left to right.
    """
    t = check_int(t, "t", 0)
    out, start = [], 0
    for h in range(t.bit_length() - 1, -1, -1):
        if t >> h & 1:
            out.append(Node(h, start >> h))
            start += 1 << h
    return tuple(out)


def decomposition_rows(t: int) -> list:
    """Post-order positions of the nodes of ``dyadic_decomposition(t)``, left to right: the rows a
    noisy prefix sum reads (``[]`` for ``t = 0``).  ``t``: an integer >= 0.

    Parameters
    ----------
    t : int
        Number of leaves, >= 0.

    Returns
    -------
    list of int
        Post-order rows of the decomposition, left to right.
    """
    if type(t) is not int or t < 0:
        t = check_int(t, "t", 0)
    rows, start = [], 0
    for h in range(t.bit_length() - 1, -1, -1):
        if t >> h & 1:
            start += 1 << h
            rows.append(2 * (start - 1) - (start - 1).bit_count() + h)
    return rows

# %% tags=["export"]
def leaf_path(t: int, n_leaves: int) -> tuple:
    """Complete nodes containing leaf ``t`` after ``n_leaves`` steps, leaf first (post-order).

    Parameters
    ----------
    t : int
        The leaf, ``1 <= t <= n_leaves``.
    n_leaves : int
        Number of steps, >= 1.

    Returns
    -------
    tuple of Node
        The complete nodes containing ``t``, leaf first.
    """
    n_leaves = check_int(n_leaves, "n_leaves", 1)
    t = check_int(t, "t", 1, n_leaves)
    out, h = [], 0
    while ((((t - 1) >> h) + 1) << h) <= n_leaves:
        out.append(Node(h, (t - 1) >> h))
        h += 1
    return tuple(out)


def path_length(T: int) -> int:
    """Largest number of complete nodes on one leaf's path when ``T`` leaves exist:
    ``floor(log2 T) + 1``.

    Parameters
    ----------
    T : int
        Number of leaves, >= 1.

    Returns
    -------
    int
        ``floor(log2 T) + 1``.
    """
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
# which the checks of chapter B2b compare with $\delta$.

# %% tags=["export"]
def sigma_paper(rho: float, B: float, T: int) -> float:
    """Paper B's noise scale ``sigma = B sqrt(log2 T) / (sqrt(2) rho)`` (Algorithm 2, Theorem 4.1).

    Refuses ``T < 2``: ``log2 1 = 0`` would give ``sigma = 0`` (no noise, TV = 1).

    Parameters
    ----------
    rho : float
        Target TV, > 0.
    B : float
        Sensitivity (norm bound of one statistic's change), > 0.
    T : int
        Horizon, >= 2.

    Returns
    -------
    float
        The paper's noise scale.
    """
    rho, B = check_positive(rho, "rho"), check_positive(B, "B")
    T = check_int(T, "T", 1)
    if T < 2:
        raise ValueError("T must be >= 2 for the paper's calibration (log2 T = 0 gives sigma = 0); "
                         "use sigma_exact for T = 1")
    with np.errstate(over="ignore"):  # an overflow (a subnormal rho) is refused by _finite_sigma
        return _finite_sigma(float(B * np.sqrt(np.log2(T)) / (np.sqrt(2) * rho)), rho)


def sigma_exact(rho: float, B: float, T: int) -> float:
    """Smallest ``sigma`` with ``2 Phi(B sqrt(n) / (2 sigma)) - 1 = rho``, ``n = floor(log2 T) + 1``:
    ``sigma = B sqrt(n) / (2 Phi^{-1}((1 + rho) / 2)) = B sqrt(n) / (2 sqrt(2) erfinv(rho))`` (erfinv keeps the
    digits of a tiny rho that ``(1 + rho) / 2`` would round away).  Needs ``0 < rho < 1``.

    Parameters
    ----------
    rho : float
        Target TV, ``0 < rho < 1``.
    B : float
        Sensitivity, > 0.
    T : int
        Horizon, >= 1.

    Returns
    -------
    float
        The smallest scale with path TV ``<= rho``.
    """
    rho, B = check_positive(rho, "rho"), check_positive(B, "B")
    if rho >= 1:
        raise ValueError(f"rho must be < 1 for the exact calibration (TV <= 1 always holds), got {rho}")
    n = path_length(T)
    with np.errstate(over="ignore"):                  # an overflow (a subnormal rho) is refused by _finite_sigma
        return _finite_sigma(float(B * np.sqrt(n) / (2 * np.sqrt(2) * erfinv(rho))), rho)


def _finite_sigma(sigma: float, rho: float) -> float:
    """``sigma`` itself, or a ValueError naming ``rho`` when the calibration overflowed (a subnormal rho)."""
    if not math.isfinite(sigma):
        raise ValueError(f"rho must be large enough for a finite sigma, got rho = {rho!r} (sigma overflows)")
    return sigma

# %% tags=["export"]
def path_tv(B: float, sigma: float, n_nodes: int) -> float:
    """TV between the tree's outputs on two sequences whose ``n_nodes`` path nodes are shifted by
    vectors of norm ``B``: ``2 Phi(B sqrt(n_nodes) / (2 sigma)) - 1``.

    Parameters
    ----------
    B : float
        Shift norm, > 0.
    sigma : float
        Noise scale, > 0.
    n_nodes : int
        Path nodes shifted, >= 1.

    Returns
    -------
    float
        The TV distance, in ``[0, 1]``.
    """
    B, sigma = check_positive(B, "B"), check_positive(sigma, "sigma")
    n = check_int(n_nodes, "n_nodes", 1)
    with np.errstate(over="ignore"):                  # a subnormal sigma: erf(inf) = 1
        return float(erf(B * np.sqrt(n) / (2 * np.sqrt(2) * sigma)))


def eps_app(sigma: float, T: int, d: int, delta: float) -> float:
    """Paper B's accuracy radius ``sigma ln T (1 + sqrt(2 ln(2 T d / delta)))`` (Paper B Algorithm 4).

    Parameters
    ----------
    sigma : float
        Noise scale, >= 0.
    T : int
        Horizon, >= 1.
    d : int
        Dimension, >= 1.
    delta : float
        Failure probability, in ``(0, 1)``.

    Returns
    -------
    float
        The accuracy radius.
    """
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
    ``T`` is at most ``MAX_UNION_BOUND_T`` (the steps are enumerated).

    Parameters
    ----------
    threshold : float
        Error level, >= 0 (``inf`` allowed).
    sigma : float
        Noise scale, > 0.
    T : int
        Horizon, ``1 <= T <= MAX_UNION_BOUND_T``.
    d : int
        Dimension, >= 1.

    Returns
    -------
    float
        The union bound (may exceed 1).
    """
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
# instead of the $8d$-byte vector can regenerate the noise whenever it needs it.  `node_noise`
# builds its SFC64 afresh on every call and lets it go when it returns (next rule but one).
#
# **Keys are secrets.** Whoever holds a node's key holds its noise, and noisy value minus noise is
# the clean value: the privacy of the tree *is* the secrecy of its keys (and of whatever generates
# them).  Three rules follow.
# - **Fresh entropy by default.** Every function that draws takes `rng=None`, which means a new
#   generator seeded from the operating system's entropy (the package's one rule, `checks.as_generator`:
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
# - **No secret outlives the call that used it.** SFC64 is invertible, and its fourth word counts
#   the outputs it has given: an SFC64 left behind after `node_noise(key)` can be run back, step by
#   step, to $(a, b, c, 1)$ — to the key.  During an unlearning request the last key used is that of
#   a node on the deleted leaf's path, and that node's kept noisy value minus the regenerated noise
#   minus its new clean value is the deleted statistic $x_t$.  So the package keeps no generator, key,
#   cache or intermediate derived from a key or from the data at module level: `node_noise`'s
#   generator is a local of the call (seeded with the key's words directly, a new one costs about a microsecond), and
#   `tests/test_secrets_state.py` walks every module of the package after every deletion path and
#   runs this attack (it recovers deleted statistics against the old module-level generator, and
#   none now).
# - **Pickling is saving.** A pickle of an object that holds key material is a copy of the keys, so
#   the one rule for the whole package (`bandit_unlearning.secrecy`) is: the trees (`BinaryTree`: its
#   noisy minus clean values are the noise; `LightTree`: its node keys) and the runs that hold them
#   (`Run`) **refuse to pickle** — a `TypeError` that names the opt-in — unless the caller opts in
#   with `with allow_secrets(): pickle.dumps(run)`, and then keeps the bytes as secret as the keys
#   (an old pickle also outlives the deletions made after it).  Everything else pickles freely and
#   holds no key material: learners, users (the data themselves), models, records, configurations.
#   `copy.deepcopy` needs no opt-in (an in-memory copy persists nothing).
# - **What an unlearning call returns carries nothing computed from the deleted data.**
#   `unlearn_leaf`'s record (`PathCoupling`) holds the coupling's outcomes only — which path nodes
#   were kept, which one was reflected, from where the learner must re-run — and not, say, the shift
#   $\lVert x_t - x'_t\rVert$: the norm of an RL episode's statistics is
#   $\sqrt{2H + \text{its total reward}}$, so a record holding it would hand out the deleted
#   episode's return (chapter B3a discusses what the outcomes themselves tell).
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
# stay exactly consistent with the tree after it (`verify` checks this).  Statistics enter as
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
    the trees check the rest.  The arrays are kept as given (never modified).

    Parameters
    ----------
    indices : array_like of int
        Distinct positions in ``[0, d)``.
    values : array_like of float
        The finite values there (same length).
    """

    __slots__ = ()

    def __new__(cls, indices, values):
        idx, val = as_array(indices, "indices"), as_array(values, "values")
        if idx.size and idx.dtype.kind not in "iu":
            raise TypeError(f"SparseStatistic indices must be integers, got dtype {idx.dtype}")
        if idx.ndim != 1 or val.shape != idx.shape:
            raise ValueError("SparseStatistic indices and values must be 1-D arrays of the same length, got "
                             f"shapes {idx.shape} and {val.shape}")
        return tuple.__new__(cls, (indices, values))

# %% [markdown]
# Validating a statistic against the tree's dimension $d$.  The usual inputs -- a float vector of shape
# $(d,)$, or a `SparseStatistic` with increasing integer indices and float values -- are accepted after a
# few whole-array tests; anything else goes through the general path, which gives the same result or
# names the rule it breaks.

# %% tags=["export"]
def _all_finite(a: np.ndarray) -> bool:
    """Whether every entry of the float array ``a`` is finite: one dot product (a NaN or an infinity
    makes it non-finite), and the entry-wise test only when that overflowed or failed."""
    return math.isfinite(a.dot(a)) or bool(np.isfinite(a).all())


def _sparse_parts(x: SparseStatistic, d: int, name: str):
    idx, val = x.indices, x.values
    if (type(idx) is np.ndarray and type(val) is np.ndarray and idx.dtype.kind in "iu" and val.dtype == np.float64
            and idx.ndim == 1 and val.shape == idx.shape):
        # the usual case, checked in a few whole-array operations: increasing indices are distinct and
        # already in order, so their range is their first and last entry; anything else takes the
        # general path below, which gives the same result or names the broken rule
        idx = idx if idx.dtype == np.int64 else idx.astype(np.int64)
        if idx.size == 0 or (idx[0] >= 0 and idx[-1] < d and (idx[1:] > idx[:-1]).all() and _all_finite(val)):
            keep = val != 0
            return idx[keep], val[keep]
    idx, val = as_array(x.indices, f"{name} indices"), as_real_array(x.values, f"{name} values")
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


def _dense_float(x, d: int) -> bool:
    """Whether ``x`` is already a finite float64 vector of shape ``(d,)`` (the usual case)."""
    return type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (d,) and _all_finite(x)

# %% tags=["export"]
def statistic_dense(x, d: int, name: str = "x") -> np.ndarray:
    """Validate a statistic (dense ``(d,)`` or ``SparseStatistic``); return a new dense float vector
    (``-0.0`` stored as ``+0.0``).

    Parameters
    ----------
    x : array_like or SparseStatistic
        The statistic.
    d : int
        Dimension, >= 1.
    name : str, default 'x'
        Argument name used in error messages.

    Returns
    -------
    numpy.ndarray
        A new float vector of shape ``(d,)``.
    """
    if type(d) is not int or not 1 <= d <= _checks.SIZE_LIMIT:
        d = check_count(d, "d", 1)
    if _dense_float(x, d):
        return x + 0.0
    if isinstance(x, SparseStatistic):
        idx, val = _sparse_parts(x, d, name)
        out = np.zeros(d)
        out[idx] = val
        return out
    x = as_real_array(x, name)
    if x.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x + 0.0


def statistic_sparse(x, d: int, name: str = "x"):
    """Validate a statistic (dense ``(d,)`` or ``SparseStatistic``); return its non-zeros as
    ``(indices int64 increasing, values)``.

    Parameters
    ----------
    x : array_like or SparseStatistic
        The statistic.
    d : int
        Dimension, >= 1.
    name : str, default 'x'
        Argument name used in error messages.

    Returns
    -------
    tuple of numpy.ndarray
        ``(indices, values)`` of the non-zeros, indices increasing.
    """
    if type(d) is not int or not 1 <= d <= _checks.SIZE_LIMIT:
        d = check_count(d, "d", 1)
    if isinstance(x, SparseStatistic):
        return _sparse_parts(x, d, name)
    if not _dense_float(x, d):
        x = as_real_array(x, name)
        if x.shape != (d,):
            raise ValueError(f"{name} must have shape ({d},), got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} must be finite")
    idx = np.flatnonzero(x != 0)       # the same indices as flatnonzero(x), several times faster on floats
    return idx, x[idx]

# %% [markdown]
# Node keys and node noise (*node keys* and *keys are secrets* above): `checks.as_generator` gives fresh
# operating-system entropy by default, `draw_node_keys` hashes three fresh words of the generator per
# node, and `node_noise` turns a key into the node's Gaussian noise times $\sigma$.
#
#
# The two pieces of key handling that the vectorised runs of chapter B13 share with this tree (the
# hash personalisation of node keys and the blank seed an SFC64 is built from) live in the package's
# kernel module, `bandit_unlearning.kernel`, with the counter-based user randomness of chapter B5b.

# %% tags=["export:bandit_unlearning.kernel"]
"""The package's key and counter kernel: the unchecked hot-path pieces that several modules share.

Contract: nothing here validates its arguments.  Each function assumes what its docstring states
(integer keys in range, a valid MDP and policy, a known reward-noise mode); the public functions that
call it (``rl.users``, ``rl.gym``, ``rl.ucbvi``, ``rl.stable``, ``rl.batch``, ``exact.tree``) check
every argument at their boundary first and then loop over these without re-checking.  A caller
that skips that check gets wrong values or an arbitrary exception, never a message naming the rule.

* Node keys (chapter B2a): ``KEY_PERSON`` personalises the BLAKE2b hash that turns generator words
  into node keys; ``BlankSeed`` builds an SFC64 whose state is set from a key right after.
* Replayable users (chapter B5b): the SplitMix64 constants, the scalar uniform of output ``i``, the
  stream layout, and a user's step and rollout in a tabular MDP.
"""

import numpy as np
from numpy.random.bit_generator import ISeedSequence

KEY_PERSON = b"node key"                         # BLAKE2b personalisation: node keys and nothing else


class BlankSeed(ISeedSequence):
    """Zero words for a bit generator whose state is set from a key right after (the batched engine):
    building an SFC64 from it costs a fraction of numpy's ``SeedSequence`` hashing.  Holds nothing."""

    def generate_state(self, n_words, dtype=np.uint32):
        """Unchecked: ``n_words`` zeros of ``dtype`` (the bit generator's state is overwritten next).

        Parameters
        ----------
        n_words : int
            Number of words the bit generator asks for.
        dtype : numpy dtype
            ``np.uint32`` or ``np.uint64``.

        Returns
        -------
        numpy.ndarray
            ``n_words`` zeros.
        """
        return np.zeros(n_words, dtype=dtype)


# %% tags=["export"]
from bandit_unlearning.exact import accel
from bandit_unlearning.kernel import KEY_PERSON, BlankSeed

KEY_WORDS = 3


_KEY_HASH = hashlib.blake2b(digest_size=8 * KEY_WORDS, person=KEY_PERSON)   # empty: copied, never fed


def draw_node_keys(rng: np.random.Generator, k: int) -> np.ndarray:
    """``k`` fresh 192-bit node keys (shape ``(k, 3)``, uint64).  Key ``i`` is the BLAKE2b hash
    (24 bytes, personalised ``"node key"``) of the raw words ``3i .. 3i+2`` of
    ``rng.bit_generator.random_raw(3k)`` (little-endian): it uses ``3k`` words of the generator, like
    the raw words would, but reveals nothing about the generator's state.  ``rng``: a Generator, None (OS entropy) or an int seed.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        Source of the raw words.
    k : int
        Number of keys, >= 0.

    Returns
    -------
    numpy.ndarray
        uint64, shape ``(k, 3)``.
    """
    if type(k) is not int or not 0 <= k <= _checks.SIZE_LIMIT:
        k = _checks.check_count(k, "k", 0)
    if type(rng) is not np.random.Generator:
        rng = as_generator(rng)
    raw = rng.bit_generator.random_raw(k * KEY_WORDS)
    fast = accel.kernels()
    if fast is not None:                     # the same hash, compiled (optional numba; see below)
        return fast.node_keys(raw)
    width = 8 * KEY_WORDS
    raw = raw.astype("<u8", copy=False).tobytes()
    digests = bytearray()
    for i in range(0, len(raw), width):
        h = _KEY_HASH.copy()                 # the personalised empty hash, then this key's words
        h.update(raw[i:i + width])
        digests += h.digest()
    keys = np.frombuffer(digests, dtype="<u8").reshape(k, KEY_WORDS)        # writeable: a bytearray's
    return keys if keys.dtype == np.uint64 else keys.astype(np.uint64)


def _node_key(key) -> np.ndarray:
    """A node key: ``KEY_WORDS`` integers in ``[0, 2**64)``, as uint64 (a new array)."""
    k = as_array(key, "key")
    if k.dtype.kind not in "iu":
        raise TypeError(f"key must hold {KEY_WORDS} unsigned 64-bit integers, got dtype {k.dtype}")
    if k.shape != (KEY_WORDS,) or (k.dtype.kind == "i" and np.any(k < 0)):
        raise ValueError(f"key must hold {KEY_WORDS} integers in [0, 2**64), got {key!r}")
    return k.astype(np.uint64)

# %% [markdown]
# A node's noise from its key: numpy's SFC64 seeded with the key's three words, built and dropped
# inside the call.

# %% tags=["export"]
from numpy.random.bit_generator import ISeedSequence


class _KeyWords(ISeedSequence):
    """The seed words of ``node_noise``'s SFC64: the node key itself, which numpy's SFC64 turns into
    the state ``(a, b, c, 1)`` and runs for 12 outputs (its own seeding, without ``SeedSequence``'s
    hashing).  Made and dropped inside one ``node_noise`` call."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray):
        self.words = words                  # contiguous uint64, shape (KEY_WORDS,): node_noise checks

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words != KEY_WORDS or np.dtype(dtype) != np.uint64:
            raise ValueError(f"a node key seeds {KEY_WORDS} uint64 words, asked for {n_words} of {dtype}")
        return self.words


def node_noise(key, d: int, sigma: float) -> np.ndarray:
    """The noise of the node with ``key`` (three uint64 words): ``sigma`` times ``d`` standard
    normals of SFC64 seeded with the key as numpy seeds it (state ``(a, b, c, 1)``, 12 outputs
    discarded) -- ``N(0, sigma^2 I_d)`` over random keys, the same vector for the same key.  The SFC64
    is a local of the call: run back, its state would give the key, so none outlives the call.

    Parameters
    ----------
    key : array_like
        Three integers in ``[0, 2**64)``.
    d : int
        Dimension, >= 1.
    sigma : float
        Noise scale, >= 0.

    Returns
    -------
    numpy.ndarray
        The node's noise, shape ``(d,)`` (a new array).
    """
    if not (type(key) is np.ndarray and key.dtype == np.uint64 and key.shape == (KEY_WORDS,)
            and key.flags.c_contiguous):
        key = np.ascontiguousarray(_node_key(key))
    if type(d) is not int or not 1 <= d <= _checks.SIZE_LIMIT:
        d = check_count(d, "d", 1)
    if type(sigma) is not float or not 0 <= sigma < math.inf:
        sigma = check_sigma(sigma)
    if sigma == 0:
        return np.zeros(d)
    fast = accel.kernels()
    if fast is not None:                     # the same SFC64 and ziggurat, compiled (optional numba)
        return fast.noise(key, d, sigma)
    z = np.random.Generator(np.random.SFC64(_KeyWords(key))).standard_normal(d)   # locals of this call
    z *= sigma
    return z

# %% [markdown]
# **An optional compiled path.**  Hashing one key with `hashlib` and building one SFC64 per node cost
# microseconds each in Python, which is most of a tree step at small $d$.  When numba is installed
# (`pip install -e '.[accel]'`; `make env` installs it), `bandit_unlearning.exact.accel` compiles the
# same three computations -- BLAKE2b's single-block compression (RFC 7693, personalised as above),
# SFC64's seeding and step, and numpy's ziggurat with numpy's own tables -- and `draw_node_keys`,
# `node_noise` and the trees' `append` call them.  The code above stays the reference: the compiled
# kernels must give the same bits, and the check below (and `tests/test_exact_accel.py`, on more
# seeds, sizes and whole unlearning runs) compares them.  They are off by default (`accel.set_enabled(True)`
# or `BANDIT_UNLEARNING_ACCEL=1` switches them on): the first call in a process pays numba's import and,
# in a fresh checkout, its compilation, and the dense tree's compiled step holds a few more vectors of
# $d$ numbers than the memory estimate of chapter B7a counts.

# %%
if accel.available():
    _previous = accel.set_enabled(True)
    try:
        _keys_fast = draw_node_keys(np.random.default_rng(11), 64)
        _noise_fast = [node_noise(k, 300, 1.3) for k in _keys_fast]
        accel.set_enabled(False)
        _keys_ref = draw_node_keys(np.random.default_rng(11), 64)
        _noise_ref = [node_noise(k, 300, 1.3) for k in _keys_ref]
    finally:
        accel.set_enabled(_previous)
    assert np.array_equal(_keys_fast, _keys_ref)
    assert all(np.array_equal(a, b) for a, b in zip(_noise_fast, _noise_ref))
    # the comparison sees a wrong kernel: one flipped bit of a key changes the whole noise vector
    _flipped = _keys_ref[0].copy()
    _flipped[0] ^= np.uint64(1)
    assert not np.array_equal(node_noise(_flipped, 300, 1.3), _noise_ref[0])
print("compiled kernels:", "bit-identical to the reference" if accel.available() else "numba not installed")

# %% [markdown]
# Algorithm 3's arithmetic on one node, in the canonical order above: the acceptance test
# (`coupling_accepts`), the noisy prefix sum's fold over $\mathcal D(t)$ (`fold_rows`), and the record
# an unlearning call returns (`PathCoupling`: the coupling's outcomes only).

# %% tags=["export"]
def coupling_accepts(noisy_S, clean_S, new_clean_S, sigma: float, u: float) -> bool:
    """Algorithm 3's test at one node, in the canonical arithmetic: keep the noisy value iff
    ``u < exp(min(0, l))``, ``l = (fsum(e^2) - fsum(e'^2)) / (2 sigma^2)``, ``e = v~_S - v_S``,
    ``e' = v~_S - v'_S`` on the support ``S`` of ``x_t - x'_t`` (elsewhere the two agree).
    An empty ``S`` is always kept; with ``sigma = 0`` a non-empty one is rejected.

    Parameters
    ----------
    noisy_S : array_like
        Noisy value on the support ``S``.
    clean_S : array_like
        Old clean value on ``S``.
    new_clean_S : array_like
        New clean value on ``S``.
    sigma : float
        Noise scale, >= 0.
    u : float
        A uniform in ``[0, 1]``.

    Returns
    -------
    bool
        Whether the noisy value is kept.
    """
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
    node values over a dyadic decomposition.

    Parameters
    ----------
    rows : list of array_like
        Vectors of one shape, non-empty.

    Returns
    -------
    numpy.ndarray
        Their left-to-right sum (a new array).
    """
    if isinstance(rows, np.ndarray):
        rows = list(rows)
    if not isinstance(rows, (list, tuple)) or len(rows) == 0:
        raise ValueError("rows must be a non-empty list of vectors of one shape")
    acc = as_real_array(rows[0], "rows")
    for r in rows[1:]:
        r = as_array(r, "rows")
        if r.shape != acc.shape:
            raise ValueError(f"rows must all have one shape, got {acc.shape} and {r.shape}")
        acc += r
    return acc

# %% tags=["export"]
@dataclass(frozen=True)
class PathCoupling:
    """What ``unlearn_leaf`` did (the tree's half of Algorithm 3).

    ``path``: complete nodes containing leaf ``t`` (leaf first); ``accepted``: path nodes whose noisy
    value was kept; ``rejected``: the node whose value was reflected (``None`` if all were kept);
    ``regenerated``: ancestors of ``rejected`` ending at the same leaf, given fresh noise;
    ``restart``: number of steps still valid (``rejected.end``, or ``n_leaves`` if nothing was
    rejected) -- the learner re-runs steps ``restart + 1 .. n_leaves``.  Nothing else: the record
    holds the coupling's outcomes, no number computed from the deleted statistic.

    Parameters
    ----------
    t : int
        The leaf replaced.
    n_leaves : int
        Steps before the request.
    path : tuple of Node
        Complete nodes containing ``t``, leaf first.
    accepted : tuple of Node
        Path nodes whose noisy value was kept.
    rejected : Node or None
        The reflected node.
    regenerated : tuple of Node
        Ancestors given fresh noise.
    restart : int
        Steps still valid.
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
# ## 5. Check: bookkeeping, against obviously-correct loops (exhaustive for small sizes)
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
# ## Summary
# - Bookkeeping: `Node`, `n_nodes`, `postorder_position` ($=N(r_b - 1) + h$,
#   $N(n) = 2n - \mathrm{popcount}(n)$), `node_at`, `dyadic_decomposition`, `leaf_path`,
#   `nodes_completed_at`, `path_length`.  Calibration: `sigma_paper`, `sigma_exact`, `path_tv`,
#   `eps_app`, `prefix_error_union_bound`.
# - The randomness and arithmetic are pinned down (section 4a) so that a second implementation can
#   reproduce every output bit for bit: per-node keys derived one-way from `rng` (`draw_node_keys`,
#   `node_noise`; `rng=None`, the default, is fresh OS entropy — keys and seeds are secrets), clean
#   values as running sums of leaves, noisy prefix sums folded largest node first (`fold_rows`), the
#   acceptance test `coupling_accepts`; statistics dense or `SparseStatistic`; the record
#   `PathCoupling` of an unlearning call.
# - Checked: bookkeeping against loop oracles ($n \le 512$).
# - Next: [chapter B2b](02b_dense_tree.ipynb) builds the dense tree on these pieces and checks it.
