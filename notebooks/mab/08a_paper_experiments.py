# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.experiments.paper_a
# ---

# %% [markdown]
# # Chapter A8a — Paper A's experiments: protocol and vectorised engine
#
# *Paper A, Section 5 (Figures 1–3, Table 2); Paper A §5.  Exports
# `bandit_unlearning.experiments.protocol` and `bandit_unlearning.experiments.paper_a`.  Paper scale:
# `make reproduce` or `python -m bandit_unlearning reproduce all`.*
#
# This chapter builds the protocol (Section 1) and the vectorised engine, checked against a plain
# loop (Section 2).  Its sibling [A8b](08b_paper_figures.ipynb) draws the figures, shows which branch
# Algorithm 2 takes, and runs every experiment at reduced scale.
#
# The paper compares, on a 5-armed Bernoulli instance with means $(0.10, 0.08, 0.06, 0.04, 0.02)$,
# the mean sub-optimality $\mathbb E[\mu(a^\star) - \mu(\hat a')]$ of
# - **Oracle** — Algorithm 1 on the original data, no deletion (the reference line);
# - **Gaussian** — always the Gaussian mechanism on $a_0$ ($\sigma = \tfrac{3k}{2N(a_0)}\gamma$);
# - **Rollback** — always roll back (exact retraining on $D \setminus U$);
# - **Mixing** — Algorithm 4 with $k' = k/2$;
# - **Alg2** — Algorithm 2 with the experiments' threshold $1.3\,\gamma_0$;
#
# under both data models, in a **hard** case ($a_0 = a^\star$, arm 0) and an **easy** case ($a_0$ the
# second best among the sub-optimal arms: arm 2, mean 0.06 — Paper A §5; `ProtocolA.easy_arm`).
# Figure 2 sweeps the mixing fraction $\eta = k'/k$, Figure 3 deletes from two arms (Algorithm 7),
# Table 2 compares imitation learning (Algorithm 6) with Algorithm 2 at $C^\star = 1.3$.
#
# **Protocol (Paper A §5).** 200 trajectories per configuration with *prefix sharing* (one long
# trajectory per replicate, each $N$ uses its prefix), 5 deletion requests per prefix, 10
# independent runs.  Defaults $(N, k, \gamma) = (3000, 80, 0.5)$; sweeps $N \in 1000..5000$,
# $k \in 20..500$, $\gamma \in \{0.01, …, 10\}$.
#
# **What the paper leaves open, and what we do** (all reward-independent, so that the empirical
# mean on $D \setminus U$ stays unbiased — Paper A §2; all recorded in every JSON under `protocol.rules`):
# - a request deletes $k$ *consecutive samples of the source arm* from a uniformly random start; under
#   $\mathcal M_f$ (round-robin, 20 samples of each arm per 100 draws) the start is block-aligned, which
#   is exactly "all samples of $a_0$ in $k/20$ consecutive blocks of 100 draws"; under $\mathcal M_d$
#   it is unaligned; the 5 requests of a prefix differ by their start;
# - mixing rolls back the *first* $k'$ deleted samples — equal in distribution to the uniform subset
#   of Algorithm 4, because rewards are i.i.d. and independent of positions (for Figure 2 under
#   $\mathcal M_f$ this is the paper's "sub-blocks of 25 draws");
# - $\tau = 1/N$ of the original prefix, kept by every mechanism (erratum E12);
# - noise uses the paper's calibration $\sigma = \Delta_f\gamma$ with $\gamma$ given directly; no
#   $(\varepsilon, \delta)$ is claimed for the figures (for $\gamma < 0.668$ no $\varepsilon < 1$ exists, E1);
# - where Lemma A.1's condition fails for a replicate, its noise uses the exact sensitivity (E2), and
#   the count of such replicates is reported; replicates whose prefix holds fewer than $k$ samples
#   of a source arm are dropped and counted;
# - Table 2: $k = N/2$ (inside Theorem 3.11's condition $k \le \min\{3N/4, (2-C^\star)N/C^\star\}$;
#   with $k = 80$ both methods are exactly 0 at these $N$, because $a^\star$ holds 77% of the data),
#   $\gamma = 0.5$, $N \in \{900, …, 1500\}$ (the paper's list is open-ended).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

rng = np.random.default_rng(20260808)

# %% [markdown]
# ## 1. Trajectories with prefix sharing
#
# For a trajectory $(a_i, r_i)_{i \le N_{\max}}$ we keep two prefix-sum tables: the arm counts of
# every prefix used, and for every arm the cumulative reward of its first $j$ samples
# (`occurrence_sums`).  Then the statistics of a prefix ($N(a)$, $\sum r$), and the reward sum of any
# run of consecutive samples of one arm — a deletion request — cost $O(1)$ per replicate.  Building
# the tables costs $O(R\,N_{\max})$: one stable counting sort of each trajectory's arm labels
# groups every arm's samples in time order (checked bit for bit against a one-hot construction
# below).  The engine's inner calls (`deletion_starts_unchecked`, `run_sums_unchecked`, `_request_losses`) skip the
# argument checks of their public twins: `evaluate` checks once, and everything it passes on is
# valid by construction.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
"""Paper A's experimental protocol (Paper A §5): trajectories with prefix sharing, per-arm prefix sums,
and reward-independent deletion requests.

One long trajectory per replicate; every dataset size N uses its prefix.  Per-arm prefix sums make
the statistics of any prefix, and the reward sum of any run of consecutive samples of one arm, cost
O(1) per replicate, so a whole sweep over N and k never touches individual samples again.
"""

from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import (check_count,
    as_array, as_generator, check_choice, check_instance, check_int, check_int_array, check_real_array,
)
from bandit_unlearning.mab.data import check_distribution, check_means, concentrability_behavior


@dataclass(frozen=True)
class Trajectories:
    """``R`` trajectories of length ``n_max``, as prefix-sum tables.

    Parameters
    ----------
    means : array_like of float (m,)
        The arms' mean rewards, in [0, 1].
    model : str
        ``"Mf"`` (fixed design) or ``"Md"`` (data from a behaviour distribution).
    prefixes : array_like of int
        The dataset sizes ``N`` (prefix lengths) used, >= 1.
    arm_counts : numpy.ndarray of int (R, len(prefixes), m)
        ``arm_counts[r, n, a]`` is ``N(a)`` in prefix number ``n`` of trajectory ``r``.
    occurrence_sums : numpy.ndarray (R, m, n_max + 1)
        ``occurrence_sums[r, a, j]`` is the reward sum of the first ``j`` samples of arm ``a`` in
        trajectory ``r`` (``n_max >= max(prefixes)``).
    """

    means: np.ndarray
    model: str
    prefixes: np.ndarray        # the N values
    arm_counts: np.ndarray      # (R, len(prefixes), m)
    occurrence_sums: np.ndarray  # (R, m, n_max + 1)

    def __post_init__(self):
        means = check_means(self.means)
        m = means.size
        check_choice(self.model, "model", ("Mf", "Md"))
        prefixes = check_int_array(self.prefixes, "prefixes", 1, ndim=1, nonempty=True)
        counts = as_array(self.arm_counts, "arm_counts")
        occ = as_array(self.occurrence_sums, "occurrence_sums")
        if counts.ndim != 3 or counts.shape[1:] != (prefixes.size, m):
            raise ValueError(f"arm_counts must have shape (R, {prefixes.size}, {m}), got {counts.shape}")
        if counts.dtype.kind not in "iu":
            raise TypeError(f"arm_counts must hold integers, got dtype {counts.dtype}")
        if occ.ndim != 3 or occ.shape[:2] != (counts.shape[0], m) or occ.shape[2] < prefixes.max() + 1:
            raise ValueError(f"occurrence_sums must have shape ({counts.shape[0]}, {m}, n_max + 1) with "
                             f"n_max >= {prefixes.max()}, got {occ.shape}")
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "prefixes", prefixes)

    @property
    def n_replicates(self) -> int:
        return int(self.arm_counts.shape[0])

    def reward_sums(self) -> np.ndarray:
        """Per-arm reward sums of every prefix, shape ``(R, len(prefixes), m)``."""
        r = np.arange(self.n_replicates)[:, None, None]
        a = np.arange(self.means.size)[None, None, :]
        return self.occurrence_sums[r, a, self.arm_counts]

    def _prefix_reward_sums(self, prefix: int) -> np.ndarray:
        """``reward_sums()[:, prefix, :]`` without the other prefixes (``prefix`` a valid index)."""
        r = np.arange(self.n_replicates)[:, None]
        return self.occurrence_sums[r, np.arange(self.means.size)[None, :], self.arm_counts[:, prefix, :]]

# %% [markdown]
# Trajectories come from given samples (a test oracle, or real data) or are drawn under a model.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
def trajectories_from_samples(means, model: str, arms, rewards, prefixes) -> Trajectories:
    """Prefix statistics of given trajectories ``arms``, ``rewards`` (shape ``(R, n_max)``).

    Parameters
    ----------
    means : array_like of float (m,)
        The arms' mean rewards, in [0, 1].
    model : str
        ``"Mf"`` or ``"Md"`` (recorded, not used to check the arms).
    arms : array_like of int (R, n_max)
        The arm of each sample, in ``[0, m)``.
    rewards : array_like of float (R, n_max)
        The reward of each sample, in [0, 1].
    prefixes : array_like of int
        The dataset sizes ``N`` to tabulate, in ``[1, n_max]``.

    Returns
    -------
    Trajectories
        Their prefix-sum tables.
    """
    means = check_means(means)
    m = means.size
    check_choice(model, "model", ("Mf", "Md"))
    arms = check_int_array(arms, "arms", 0, m - 1)
    rewards = check_real_array(rewards, "rewards", 0, 1)
    prefixes = check_int_array(prefixes, "prefixes")
    if arms.ndim != 2 or rewards.shape != arms.shape:
        raise ValueError(f"arms and rewards must have the same shape (R, n_max), got {arms.shape}, {rewards.shape}")
    if prefixes.ndim != 1 or prefixes.size == 0 or np.any(prefixes < 1) or np.any(prefixes > arms.shape[1]):
        raise ValueError(f"prefixes must be integers in [1, {arms.shape[1]}], got {prefixes}")
    counts, occurrence = _prefix_tables(arms, rewards, prefixes, m)
    return Trajectories(means, model, prefixes, counts, occurrence)

# %% [markdown]
# **Drawing the trajectories.** `_prefix_tables` gives, for every prefix length, each arm's count and
# the running reward sums, in $O(R\,n_{\max})$ work for $R$ replicates, so one draw of a trajectory
# serves every dataset size $N$ of a panel; `simulate_trajectories` draws them under the paper's fixed
# design $M_f$ (round robin) or random design $M_d$.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
def _prefix_tables(arms: np.ndarray, rewards: np.ndarray, prefixes: np.ndarray, m: int, *,
                   shared_arms: bool = False):
    """``(arm_counts, occurrence_sums)`` of validated integer ``arms`` in ``[0, m)``, real or boolean
    ``rewards`` (both ``(R, n_max)``) and ``prefixes`` in ``[1, n_max]``; unchecked
    (``trajectories_from_samples`` checks).  ``shared_arms``: every row holds the arms of row 0 (a
    fixed design), which is then counted and sorted once.  O(R n_max) work: a stable counting sort of
    each row by arm, no ``(R, n_max, m)`` one-hot."""
    n_rep, n_max = arms.shape
    rows = 1 if shared_arms else n_rep
    key = arms[:rows] + (np.arange(rows, dtype=np.int64) * m)[:, None]  # (replicate, arm) -> one bin
    # arm counts of each prefix (and of the whole row, last): counts of the stretches between
    # consecutive distinct prefixes, summed
    cuts = np.unique(prefixes)
    stretch = np.empty((cuts.size + 1, rows * m), np.int64)
    for i, (lo, hi) in enumerate(zip(np.concatenate([[0], cuts]), np.append(cuts, n_max))):
        stretch[i] = np.bincount(key[:, lo:hi].ravel(), minlength=rows * m)
    np.cumsum(stretch, axis=0, out=stretch)
    stretch = np.broadcast_to(stretch.reshape(cuts.size + 1, rows, m), (cuts.size + 1, n_rep, m))
    counts = np.ascontiguousarray(stretch.transpose(1, 0, 2)[:, np.searchsorted(cuts, prefixes), :])
    total = stretch[-1]
    # occurrence sums: each row's samples grouped by arm in time order (numpy's stable sort of a small
    # integer type is a radix sort), laid out in a band as wide as the largest arm count and summed
    # left to right -- the same additions in the same order as a cumulative sum over the arm's
    # samples alone; past an arm's last sample its sum stays (the additions of 0 a full-width cumulative
    # sum would make), so the columns right of the band are filled with the band's last column
    order = np.argsort(arms[:rows].astype(np.int8 if m <= 127 else np.int16 if m <= 32767 else np.int64), axis=1,
                       kind="stable")
    if shared_arms:
        grouped = rewards[:, order[0]]
    else:
        order += (np.arange(n_rep) * n_max)[:, None]                   # flat indices: a plain take
        grouped = rewards.reshape(-1)[order]
    width = int(total.max(initial=0))
    band = np.zeros((n_rep, m, width + 1))
    band[:, :, 1:][np.arange(width) < total[:, :, None]] = grouped.ravel()   # row-major: (r, arm, rank)
    np.cumsum(band[:, :, 1:], axis=2, out=band[:, :, 1:])
    occurrence = np.empty((n_rep, m, n_max + 1))
    occurrence[:, :, :width + 1] = band
    occurrence[:, :, width + 1:] = band[:, :, width:]                   # each arm's last sum, carried right
    return counts, occurrence


# %% [markdown]
# The draws: under $M_d$ the arms by the inverse of the behaviour's CDF (the rule of numpy's
# `Generator.choice`, with its draws), then every reward as one uniform against the arm's mean.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
def _inverse_cdf_draws(behavior: np.ndarray, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """``rng.choice(m, size=shape, p=behavior)`` bit for bit, for a validated distribution ``behavior``:
    one uniform per draw, whose arm is the number of entries of the normalised cumulative distribution
    at or below it (numpy's rule) -- counted by ``m - 1`` comparisons for few arms instead of a binary
    search per draw."""
    cdf = np.cumsum(behavior)
    cdf /= cdf[-1]
    u = rng.random(shape)
    if cdf.size > 16:
        return cdf.searchsorted(u, side="right")
    arms = np.zeros(shape, np.int8)
    for c in cdf[:-1]:                                 # (u < 1 = cdf[-1]: the last entry never counts)
        arms += u >= c
    return arms


def simulate_trajectories(means, model: str, prefixes, n_replicates: int, rng: np.random.Generator,
                          *, c_star: float = 5.0, behavior=None) -> Trajectories:
    """Draw ``n_replicates`` trajectories of length ``max(prefixes)`` under ``model``.

    ``model="Mf"``: round-robin arms (equal counts in every prefix that is a multiple of m);
    ``model="Md"``: arms i.i.d. from ``behavior`` (default: the paper's policy with ``c_star``,
    best arm = argmax of ``means``).  Rewards are Bernoulli(``means[arm]``).

    Parameters
    ----------
    means : array_like of float (m,)
        The arms' mean rewards, in [0, 1].
    model : str
        ``"Mf"`` or ``"Md"``.
    prefixes : array_like of int
        The dataset sizes ``N`` to tabulate, >= 1.
    n_replicates : int
        ``R``, >= 1.
    rng : numpy.random.Generator, int or None
        The draws' generator (None: OS entropy).
    c_star : float
        The default behaviour's concentrability ``C*`` (``"Md"`` only).
    behavior : array_like of float (m,) or None
        The behaviour distribution (``"Md"`` only; None: the paper's policy).

    Returns
    -------
    Trajectories
        The drawn trajectories' prefix-sum tables.
    """
    means = check_means(means)
    m = means.size
    prefixes = check_int_array(prefixes, "prefixes")
    if prefixes.ndim != 1 or prefixes.size == 0 or np.any(prefixes < 1):
        raise ValueError(f"prefixes must be a non-empty list of positive integers, got {prefixes}")
    n_replicates = check_count(n_replicates, "n_replicates", 1)
    check_choice(model, "model", ("Mf", "Md"))
    rng = as_generator(rng)
    n_max = int(prefixes.max())
    if model == "Mf":
        arms = np.broadcast_to(np.arange(n_max) % m, (n_replicates, n_max))
    elif model == "Md":
        if behavior is None:
            behavior = concentrability_behavior(m, c_star, int(np.argmax(means)))
        behavior = check_distribution(behavior, m)
        arms = _inverse_cdf_draws(behavior, (n_replicates, n_max), rng)
    else:
        raise ValueError(f"model must be 'Mf' or 'Md', got {model!r}")
    rewards = rng.random((n_replicates, n_max)) < means[arms[:1] if model == "Mf" else arms]   # 0/1
    counts, occurrence = _prefix_tables(arms, rewards, prefixes, m, shared_arms=model == "Mf")  # valid by construction
    return Trajectories(means, model, prefixes, counts, occurrence)


# %% [markdown]
# Deletion requests that do not look at the rewards: $k$ consecutive samples of one arm, in time
# order, and the reward sums of such runs read off the trajectories' prefix sums.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
def consecutive_deletions(traj: Trajectories, prefix: int, arm: int, k: int, n_requests: int,
                          rng: np.random.Generator, *, align: int = 1):
    """Reward-independent deletion requests: ``k`` consecutive samples of ``arm`` (in time order).

    In prefix number ``prefix`` of every trajectory, each request deletes samples ``s .. s+k-1`` of
    ``arm`` (counting that arm's samples from 0), with ``s`` uniform over the multiples of ``align``
    in ``[0, N(arm) - k]``, independently per request.  Under M_f (round-robin, m = 5), ``align = 20``
    (= 100 draws / 5 arms) makes a request "all samples of the arm in k/20 consecutive blocks of 100
    draws", the paper's rule.

    Parameters
    ----------
    traj : Trajectories
        The trajectories.
    prefix : int
        Index into ``traj.prefixes`` (not the size ``N`` itself).
    arm : int
        The arm the requests delete from.
    k : int
        Samples per request, >= 0.
    n_requests : int
        Requests per replicate, >= 1.
    rng : numpy.random.Generator, int or None
        The starts' generator (None: fresh OS entropy).
    align : int
        Starts are multiples of ``align``, >= 1.

    Returns
    -------
    start : numpy.ndarray of int64 (R, n_requests)
        The first deleted sample of each request (counting ``arm``'s samples from 0).
    valid : numpy.ndarray of bool (R, n_requests)
        False for replicates whose prefix holds fewer than ``k`` samples of ``arm`` (their start is 0).
    """
    check_instance(traj, Trajectories, "traj")
    prefix = check_int(prefix, "prefix", 0, traj.prefixes.size - 1)
    arm = check_int(arm, "arm", 0, traj.means.size - 1)
    align, k = check_int(align, "align", 1), check_int(k, "k", 0)
    n_requests = check_count(n_requests, "n_requests", 1)
    return deletion_starts_unchecked(traj, prefix, arm, k, n_requests, as_generator(rng), align)


def deletion_starts_unchecked(traj, prefix, arm, k, n_requests, rng, align):
    """Unchecked ``consecutive_deletions``: validated arguments only (the engine's inner loop).

    Parameters
    ----------
    traj, prefix, arm, k, n_requests, align
        As in ``consecutive_deletions``, already validated.
    rng : numpy.random.Generator
        Drawn from once: ``rng.random((R, n_requests))``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(start, valid)`` as ``consecutive_deletions`` returns them, bit for bit.
    """
    n_arm = traj.arm_counts[:, prefix, arm]                                # (R,)
    valid = n_arm >= k
    slots = np.where(valid, (n_arm - k) // align + 1, 1)                  # number of legal starts
    u = rng.random((n_arm.size, n_requests))
    start = np.floor(u * slots[:, None]).astype(np.int64) * align
    return start, np.broadcast_to(valid[:, None], start.shape)

# %% [markdown]
# A request's reward sum is one subtraction of two prefix sums.

# %% tags=["export:bandit_unlearning.experiments.protocol"]
def run_sums(traj: Trajectories, arm: int, start, length):
    """Reward sum of ``length`` consecutive samples of ``arm`` from its ``start``-th sample, for every
    replicate; O(1) per entry from the occurrence prefix sums.

    Parameters
    ----------
    traj : Trajectories
        The trajectories.
    arm : int
        The arm.
    start : array_like of int (R, ...)
        First samples (counting ``arm``'s samples from 0), >= 0, one leading row per replicate.
    length : int
        Samples per run, >= 0 (a run past the arm's last sample is cut there).

    Returns
    -------
    numpy.ndarray (R, ...)
        The runs' reward sums.
    """
    check_instance(traj, Trajectories, "traj")
    arm = check_int(arm, "arm", 0, traj.means.size - 1)
    start = check_int_array(start, "start", 0)
    length = check_int(length, "length", 0)
    if start.ndim < 1 or start.shape[0] != traj.n_replicates:
        raise ValueError(f"start must have shape (R, ...) with R = {traj.n_replicates}, got {start.shape}")
    return run_sums_unchecked(traj, arm, start, length)


def run_sums_unchecked(traj, arm, start, length):
    """Unchecked ``run_sums``: validated arguments only.

    Parameters
    ----------
    traj, arm, length
        As in ``run_sums``, already validated.
    start : numpy.ndarray of int64 (R, ...)
        Validated starts.

    Returns
    -------
    numpy.ndarray (R, ...)
        What ``run_sums`` returns, bit for bit.
    """
    occ = traj.occurrence_sums[:, arm, :]                                  # (R, n_max + 1)
    r = np.arange(occ.shape[0]).reshape((-1,) + (1,) * (start.ndim - 1))
    end = np.minimum(start + length, occ.shape[1] - 1)
    return occ[r, end] - occ[r, start]


# %%
from bandit_unlearning.experiments.protocol import *  # noqa: F403  (the module generated above)

# %% [markdown]
# **Check: the prefix tables equal direct computation.**  On random trajectories, the counts and
# reward sums of every prefix equal those of the `OfflineDataset` of that prefix, and `run_sums`
# equals the sum of the explicitly located deleted rewards.

# %%
from bandit_unlearning.mab.data import PAPER_MEANS, OfflineDataset

m = 5
arms_raw = rng.integers(0, m, size=(6, 400))
rewards_raw = (rng.random((6, 400)) < 0.4).astype(float)
prefixes = [50, 137, 400]
traj = trajectories_from_samples(PAPER_MEANS, "Md", arms_raw, rewards_raw, prefixes)
sums_all = traj.reward_sums()
mismatches = checked = 0
for r in range(6):
    for p, n in enumerate(prefixes):
        d = OfflineDataset(arms_raw[r, :n], rewards_raw[r, :n], m)
        mismatches += not np.array_equal(d.counts, traj.arm_counts[r, p])
        mismatches += not np.allclose(d.reward_sums, sums_all[r, p])
        for a in range(m):
            idx = np.flatnonzero(arms_raw[r, :n] == a)
            for s0, kk in ((0, 3), (2, 5), (1, len(idx) - 1)):
                if s0 + kk <= len(idx):
                    got = run_sums(traj, a, np.full((6, 1), s0), kk)[r, 0]
                    mismatches += not np.isclose(rewards_raw[r, idx[s0:s0 + kk]].sum(), got)
                    checked += 1
print(f"{checked} run sums and {6 * len(prefixes)} prefixes checked, mismatches: {mismatches}")
assert mismatches == 0

# %% [markdown]
# **Check: the counting sort gives the same bits as the one-hot construction.**  `_prefix_tables`
# groups each trajectory's samples by arm with a stable sort of the arm labels (a radix sort for
# small integer types: $O(R\,N_{\max})$ work) instead of sorting an $(R, N_{\max}, m)$ one-hot
# array.  The reference below is that one-hot construction — a cumulative sum over time of the
# one-hot counts, and for every arm a stable sort of the samples of that arm to the front, summed
# left to right.  Both add the same rewards in the same order, so the tables must be equal bit for
# bit, which we check on real-valued rewards (where any other summation order would show in the
# last bits), on many arms, and on prefixes given unsorted and repeated.  A variant whose sort is not
# stable (`kind="quicksort"`) sums each arm's rewards out of time order and is rejected.

# %%
def prefix_tables_onehot(arms, rewards, prefixes, m):
    """The one-hot construction (reference for ``_prefix_tables``)."""
    n_rep = arms.shape[0]
    onehot = arms[:, :, None] == np.arange(m)                            # (R, n_max, m)
    counts = np.concatenate([np.zeros((n_rep, 1, m), np.int64), np.cumsum(onehot, axis=1)], axis=1)
    order = np.argsort(~onehot, axis=1, kind="stable")
    per_arm = np.take_along_axis(rewards[:, :, None] * onehot, order, axis=1)
    occurrence = np.concatenate([np.zeros((n_rep, 1, m)), np.cumsum(per_arm, axis=1)], axis=1)
    return counts[:, prefixes, :], np.ascontiguousarray(occurrence.transpose(0, 2, 1))


def prefix_tables_unstable(arms, rewards, prefixes, m):
    """Deliberately broken: the samples of an arm grouped by an unstable sort."""
    counts, _ = prefix_tables_onehot(arms, rewards, prefixes, m)
    order = np.argsort(arms, axis=1, kind="quicksort")
    grouped, r_sorted = np.take_along_axis(arms, order, axis=1), np.take_along_axis(rewards, order, axis=1)
    occurrence = np.zeros((arms.shape[0], m, arms.shape[1] + 1))
    for r in range(arms.shape[0]):
        for a in range(m):
            run = r_sorted[r, grouped[r] == a]
            occurrence[r, a, 1:run.size + 1] = np.cumsum(run)
            occurrence[r, a, run.size + 1:] = occurrence[r, a, run.size]
    return counts, occurrence


from bandit_unlearning.experiments.protocol import _prefix_tables

cases = [(6, 400, 5), (4, 1000, 3), (3, 250, 150), (2, 7, 1)]
rng_tables = np.random.default_rng(8)                  # its own stream: the chapter's `rng` draws as before
broken_rejected = 0
for n_rep, n_max, m_arms in cases:
    a_t = rng_tables.integers(0, m_arms, size=(n_rep, n_max))
    r_t = rng_tables.random((n_rep, n_max))                                     # real-valued rewards in [0, 1)
    pre = np.array([n_max, 1, max(1, n_max // 3), n_max])                # unsorted, repeated
    ref_c, ref_o = prefix_tables_onehot(a_t, r_t, pre, m_arms)
    got_c, got_o = _prefix_tables(a_t, r_t, pre, m_arms)
    assert got_c.dtype == ref_c.dtype and np.array_equal(got_c, ref_c)
    assert got_o.dtype == ref_o.dtype and got_o.shape == ref_o.shape and got_o.tobytes() == ref_o.tobytes()
    if n_max > 16:                     # (numpy sorts tiny rows by insertion: stable even as "quicksort")
        bad_c, bad_o = prefix_tables_unstable(a_t, r_t, pre, m_arms)
        broken_rejected += bad_o.tobytes() != ref_o.tobytes()
print(f"{len(cases)} cases: tables equal to the one-hot construction bit for bit; "
      f"the unstable-sort variant rejected in {broken_rejected} of {len(cases) - 1} long cases")
assert broken_rejected == len(cases) - 1

# %% [markdown]
# ## 2. The engine
#
# Every method is computed by the package's own mechanisms: `unlearn_batch` (Algorithms 2, 4, 7 and
# the forced Gaussian/rollback variants, vectorised over replicates) and `unlearned_arms`
# (Algorithm 6).  The engine checks its arguments once, in `request_losses`/`evaluate`, and then
# calls the mechanism's unchecked core `unlearn_batch_unchecked` (chapter A3b) on the arrays it has
# built, with one `UnlearnOptions` per method and sensitivity rule: the same bits as `unlearn_batch`,
# without re-validating thousands of times per experiment.  A configuration is $R = 200 \times 5$ replicates; one *run* of one data model is
# a task (all its panels share the run's trajectories), and the 10 runs × 2 models are independent
# tasks for any `concurrent.futures.Executor`.  The seed of a task is `(seed, experiment, model,
# run)`, so results never depend on which executor ran them.

# %% tags=["export"]
"""Paper A's experiments (Paper A §5): protocol, vectorised runner and aggregation for Figures 1-3 and
Table 2.  Every replicate is computed by the package's own mechanisms (``unlearn_batch``,
``unlearned_arms``), so the experiments measure exactly what the chapters prove things about.
"""

from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np

from bandit_unlearning.checks import (
    as_generator, check_bool, check_choice, check_instance, check_int, check_int_array, check_real,
)
from bandit_unlearning.experiments.protocol import (  # noqa: F401  (public names re-exported)
    Trajectories, deletion_starts_unchecked, run_sums_unchecked, consecutive_deletions, run_sums,
    simulate_trajectories,
)
from bandit_unlearning.mab.data import PAPER_MEANS, check_means
from bandit_unlearning.mab.imitation import unlearned_arms
from bandit_unlearning.mab.mechanisms import sensitivity_condition_holds
from bandit_unlearning.mab.unlearn import UnlearnOptions, batch_scores_unchecked, unlearn_batch_unchecked


@dataclass(frozen=True)
class ProtocolA:
    """The knobs of Paper A §5, with the paper's values as defaults (``quick()`` for small runs).

    Choices the paper leaves open, made reward-independent and recorded in every JSON:
    the 5 requests of a prefix differ by their (uniform) starting sample; a request deletes ``k``
    consecutive samples of the source arm, block-aligned under M_f (``block`` draws = ``block/m``
    samples of each arm) and unaligned under M_d; mixing rolls back the first ``k'`` of the deleted
    samples (equal in distribution to a uniform subset, since rewards are i.i.d. and independent of
    positions); Table 2 deletes ``k = table2_k_fraction * N`` samples of the best arm (default N/2,
    inside Theorem 3.11's condition ``k <= min(3N/4, (2 - C*) N / C*)`` for C* = 1.3) at ``gamma``.

    Parameters
    ----------
    means : tuple of float
        The arms' mean rewards (the paper's five by default).
    c_star : float
        ``C*`` of the M_d behaviour policy, > 1.
    n_trajectories, n_requests, n_runs : int
        Trajectories per run, deletion requests per prefix, independent runs (for the standard errors).
    block : int
        Draws per block under M_f (requests are aligned to ``block / m`` samples of an arm).
    threshold_scale : float
        The factor on Algorithm 2's threshold gamma0 (the paper's 1.3), > 0.
    mixing_eta : float
        ``k'/k`` of the method "Mixing", in [0, 1].
    easy_arm : int
        The source arm of the "easy" panels (arm 0, the best, is the "hard" one).
    gamma, k, n : float, int, int
        The privacy scale, request size and dataset size held fixed while another is swept.
    table2_c_star, table2_k_fraction : float
        Table 2's ``C*`` (> 1) and its ``k / N`` (in (0, 1)).
    """

    means: tuple = PAPER_MEANS
    c_star: float = 5.0
    n_trajectories: int = 200
    n_requests: int = 5
    n_runs: int = 10
    block: int = 100
    threshold_scale: float = 1.3
    mixing_eta: float = 0.5
    easy_arm: int = 2
    gamma: float = 0.5
    k: int = 80
    n: int = 3000
    table2_c_star: float = 1.3
    table2_k_fraction: float = 0.5

    def __post_init__(self):
        object.__setattr__(self, "means", tuple(float(x) for x in check_means(self.means)))
        for name in ("n_trajectories", "n_requests", "n_runs", "block", "k", "n"):
            object.__setattr__(self, name, check_int(getattr(self, name), name, 1))
        check_real(self.table2_k_fraction, "table2_k_fraction", 0, 1, low_open=True, high_open=True)
        check_real(self.mixing_eta, "mixing_eta", 0, 1)
        object.__setattr__(self, "easy_arm", check_int(self.easy_arm, "easy_arm", 0, len(self.means) - 1))
        for name in ("threshold_scale", "gamma"):
            check_real(getattr(self, name), name, 0, low_open=True)
        check_real(self.c_star, "c_star (C*)", 1, low_open=True)
        check_real(self.table2_c_star, "table2_c_star (C*)", 1, low_open=True)

# %% [markdown]
# A reduced protocol for the notebooks and smoke tests, and the record of the protocol — its knobs and
# the rules the paper leaves open — that every result file carries.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(ProtocolA)
@classmethod
def quick(cls, **changes) -> "ProtocolA":
    """A reduced protocol (40 trajectories, 2 runs) for notebooks and smoke tests.

    Parameters
    ----------
    **changes
        Fields of ``ProtocolA`` to change as well.

    Returns
    -------
    ProtocolA
        The reduced protocol, validated.
    """
    return replace(cls(n_trajectories=40, n_runs=2), **changes)


@add_to_class(ProtocolA)
def as_json(self) -> dict:
    """The protocol as a JSON-ready record.

    Returns
    -------
    dict
        Every field (``means`` as a list) and, under ``"rules"``, the choices the paper leaves open.
    """
    d = asdict(self)
    d["means"] = list(self.means)
    d["rules"] = {
        "requests": "k consecutive samples of the source arm from a uniform start; block-aligned "
                    "(block/m samples) under Mf, unaligned under Md; independent per request",
        "mixing_subset": "the first k' of the k deleted samples (= a uniform subset in distribution)",
        "tau": "1/N of the original prefix (erratum E12)",
        "calibration": "paper: sigma = Delta_f * gamma with gamma given directly (no (eps, delta) "
                       "claimed; proven only where the implied eps < 1, erratum E1)",
        "sensitivity": "Lemma A.1's 3k/(2N) where its condition holds, else the exact worst case "
                       "(erratum E2); the number of such replicates is reported",
        "excluded": "replicates whose prefix holds fewer than k samples of a source arm",
        "stderr": "standard deviation of the per-run means / sqrt(n_runs)",
    }
    return d


# %% [markdown]
# Evaluating one configuration: which methods exist, the checks of a request, the release of each
# method on a batch of replicates (`_outputs`, calling the package's mechanisms), and the
# sub-optimality $\mu(a^\star) - \mu(\hat a')$ averaged over requests (`request_losses`, `evaluate`).

# %% tags=["export"]
_METHODS = ("Oracle", "Gaussian", "Rollback", "Mixing", "Alg2", "Alg7", "Alg6", "Alg2-literal", "Alg7-literal")


def _check_methods(methods) -> list:
    """Method names: those of ``_METHODS`` or ``"eta=x"`` (mixing with k' = x k rounded half up, x in [0, 1])."""
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods must be a sequence of method names, got {type(methods).__name__}")
    methods = list(methods)
    for m in methods:
        if not isinstance(m, str):
            raise TypeError(f"methods must be strings, got {type(m).__name__}")
        if m.startswith("eta="):
            try:
                eta = float(m.split("=", 1)[1])
            except ValueError:
                eta = float("nan")
            if not 0 <= eta <= 1:
                raise ValueError(f"method {m!r}: eta must be a number in [0, 1]")
        elif m not in _METHODS:
            raise ValueError(f"unknown method {m!r}; methods are {_METHODS} or 'eta=x'")
    return methods


def _check_request(traj, prefix, sources, k, gamma, rng, protocol):
    """The common arguments of ``request_losses`` and ``evaluate``; returns them validated."""
    check_instance(traj, Trajectories, "traj")
    check_instance(protocol, ProtocolA, "protocol")
    prefix = check_int(prefix, "prefix", 0, traj.prefixes.size - 1)
    sources = check_int_array(sources, "sources", 0, traj.means.size - 1, ndim=1, nonempty=True).tolist()
    if len(set(sources)) != len(sources):
        raise ValueError(f"sources must be distinct arms, got {sources}")
    k = check_int(k, "k", 1)
    gamma = check_real(gamma, "gamma", 0, low_open=True)
    return prefix, sources, k, gamma, as_generator(rng)


def _mixing_k_prime(method: str, k: int, protocol: ProtocolA) -> int:
    """Mixing's k' for a request of k points: ``eta * k`` rounded half up -- the one rule, that of
    ``UnlearnOptions.k_rollback_for`` (gamma plays no part in it)."""
    eta = protocol.mixing_eta if method == "Mixing" else float(method.split("=", 1)[1])
    return UnlearnOptions(method="mixing", eta=eta, gamma=1.0).k_rollback_for(k)


# %% [markdown]
# **The release of each method.**  `_rule_parts` splits a batch of replicates once by the sensitivity
# rule that can calibrate it (Lemma A.1 where its condition holds, the exact worst case elsewhere) and
# computes each part's scores once; `_outputs` then runs one method on every part through the
# unchecked mechanism, with that method's `UnlearnOptions` (`_method_options`).

# %% tags=["export"]
_MECHANISMS = {"Gaussian": "gaussian", "Rollback": "rollback", "Alg2": "adaptive", "Alg7": "adaptive",
               "Alg2-literal": "adaptive", "Alg7-literal": "adaptive"}   # -literal: reference="literal" (A3a)


@lru_cache(maxsize=1024)
def _method_options(method: str, k: int, gamma: float, rule: str, protocol: ProtocolA) -> UnlearnOptions:
    """The ``UnlearnOptions`` of one mechanism method under sensitivity ``rule`` (``"paper"``/``"exact"``);
    built and validated once per distinct arguments (the options are immutable and carry no data)."""
    settings = dict(gamma=None if method == "Rollback" else gamma, threshold_scale=protocol.threshold_scale,
                    sensitivity=rule)
    if method.endswith("-literal"):
        settings["reference"] = "literal"
    if method == "Mixing" or method.startswith("eta="):
        return UnlearnOptions(method="mixing", k_prime=_mixing_k_prime(method, k, protocol), **settings)
    if method not in _MECHANISMS:
        raise ValueError(f"unknown method {method!r}")
    return UnlearnOptions(method=_MECHANISMS[method], **settings)


def _rule_parts(counts, sums, tau, sources, k, deleted):
    """The replicates split by sensitivity rule, once per request batch: ``([(rule, rows, counts, sums,
    deleted (R_rule, l), scores), ...], n_exact)`` -- ``"paper"`` where Lemma A.1's condition holds for
    every source arm, ``"exact"`` (erratum E2) elsewhere; empty parts are left out.  ``scores``: the
    part's ``batch_scores_unchecked``, shared by every method."""
    log_term = np.log(counts.shape[-1] / tau)
    holds = np.logical_and.reduce([np.asarray(sensitivity_condition_holds(counts[:, a], k, log_term))
                                   for a in sources])
    src, ks = np.array(sources, dtype=np.int64), np.full(len(sources), k, dtype=np.int64)
    parts = []
    for rows, rule in ((holds, "paper"), (~holds, "exact")):
        if rows.any():
            part = (counts[rows], sums[rows], np.stack([d[rows] for d in deleted], axis=-1))
            parts.append((rule, rows) + part + (batch_scores_unchecked(*part[:2], tau, src, ks, part[2]),))
    return parts, int((~holds).sum())


def _outputs(method, counts, sums, tau, sources, k, parts, n_exact, rolled, gamma, rng, protocol):
    """Output arms of ``method`` on ``R`` replicates (shape ``(R,)``) and how many replicates needed
    the exact sensitivity (E2).  ``parts``, ``n_exact``: ``_rule_parts`` of the batch; ``rolled(k')``:
    the reward sums of the first ``k'`` deleted samples of each source arm (for mixing).  Every call of
    the mechanism is ``unlearn_batch_unchecked`` on arrays validated by ``request_losses``/``evaluate``."""
    out = np.empty(counts.shape[0], dtype=np.int64)
    if method == "Oracle":                  # the learner on D: each part's scores f(D) (lcb_scores' bits)
        for rule, rows, counts_r, sums_r, deleted_r, scores in parts:
            out[rows] = np.argmax(scores[0], axis=-1)
        return out, 0
    if method == "Alg6":
        kvec = np.zeros(counts.shape[-1], dtype=np.int64)
        kvec[list(sources)] = k
        return unlearned_arms(counts, np.broadcast_to(kvec, counts.shape)), 0
    src, ks = np.array(sources, dtype=np.int64), np.full(len(sources), k, dtype=np.int64)
    rolled_all = None
    for rule, rows, counts_r, sums_r, deleted_r, scores in parts:
        options = _method_options(method, k, gamma, rule, protocol)
        if options.method == "mixing" and rolled_all is None:
            rolled_all = rolled(options.k_prime)[0]
        rolled_r = rolled_all[rows] if options.method == "mixing" else None
        out[rows] = unlearn_batch_unchecked(counts_r, sums_r, tau, src, ks, deleted_r, options, "unlearned", rng,
                                            None, rolled_r, scores)[0]
    return out, (n_exact if method != "Rollback" else 0)

# %% [markdown]
# **The loss of one request.** `request_losses` is each method's sub-optimality $\mu(a^*) -
# \mu(\text{output})$ on given requests, replicate by replicate; `evaluate` averages it over fresh
# requests and noise for one prefix of the trajectories.

# %% tags=["export"]
def request_losses(traj: Trajectories, prefix: int, sources, k: int, starts, gamma: float, methods, rng,
                   protocol):
    """Per-replicate sub-optimality ``mu(a*) - mu(output)`` of each method for given requests.

    ``starts``: one array ``(R, n_requests)`` per source arm, the first deleted sample of that arm
    (``consecutive_deletions``); every replicate must hold ``k`` samples from there on.  Returns
    ``({method: losses of shape (R * n_requests,)}, exact_sensitivity_count)``.

    Parameters
    ----------
    traj : Trajectories
        The trajectories.
    prefix : int
        Index of the prefix (dataset size) in ``traj.prefixes``.
    sources : sequence of int
        The distinct source arms.
    k : int
        Deletions per source arm, >= 1.
    starts : list of numpy.ndarray
        One ``(R, n_requests)`` array of first deleted samples per source arm.
    gamma : float
        The privacy parameter of the paper's calibration, > 0.
    methods : sequence of str
        Method names (``_METHODS`` or ``"eta=x"``).
    rng : numpy.random.Generator, int or None
        The noise's randomness.
    protocol : ProtocolA
        The protocol's knobs.

    Returns
    -------
    tuple
        ``(losses, exact_sensitivity_count)`` as above.
    """
    prefix, sources, k, gamma, rng = _check_request(traj, prefix, sources, k, gamma, rng, protocol)
    methods = _check_methods(methods)
    if isinstance(starts, np.ndarray) or len(starts) != len(sources):
        raise ValueError(f"starts must hold one array per source arm ({len(sources)})")
    starts = [check_int_array(s, "starts", 0, ndim=2) for s in starts]
    for a, s in zip(sources, starts):
        if s.shape[0] != traj.n_replicates or np.any(s + k > traj.arm_counts[:, prefix, a][:, None]):
            raise ValueError(f"starts must have shape (R = {traj.n_replicates}, n_requests) and leave k = {k} "
                             f"samples of arm {a} in every replicate")
    return _request_losses(traj, prefix, sources, k, starts, gamma, methods, rng, protocol)


def _request_losses(traj, prefix, sources, k, starts, gamma, methods, rng, protocol):
    """``request_losses`` on validated arguments (no checks: ``evaluate``'s inner call)."""
    means = np.asarray(traj.means)
    tau = 1.0 / int(traj.prefixes[prefix])                               # fixed at training (E12)
    n_req = starts[0].shape[1]
    counts = np.repeat(traj.arm_counts[:, prefix, :], n_req, axis=0)
    sums = np.repeat(traj._prefix_reward_sums(prefix), n_req, axis=0)
    deleted = [run_sums_unchecked(traj, a, s, k).ravel() for a, s in zip(sources, starts)]
    rolled = lambda kp: [run_sums_unchecked(traj, a, s, kp).ravel() for a, s in zip(sources, starts)]  # noqa: E731
    parts, n_rule = _rule_parts(counts, sums, tau, sources, k, deleted)
    losses, n_exact = {}, 0
    for method in methods:
        arms, n = _outputs(method, counts, sums, tau, list(sources), k, parts, n_rule, rolled, gamma, rng, protocol)
        losses[method] = means.max() - means[arms]
        n_exact += n
    return losses, n_exact


# %% [markdown]
# `evaluate` draws the requests of one configuration (fresh starting samples per request), drops the
# replicates whose prefix holds too few samples of a source arm, and averages the losses.

# %% tags=["export"]
def evaluate(traj: Trajectories, prefix: int, sources, k: int, gamma: float, methods, rng, protocol):
    """Mean sub-optimality of each method on prefix number ``prefix`` of ``traj``, over
    ``n_trajectories x n_requests`` replicates (fresh requests and noise from ``rng``).

    ``sources``: the source arm(s) of the request (one for Algorithms 2, 4, 6; two for Algorithm 7),
    ``k`` deletions from each.  Returns ``{method: mean}``, plus ``"_excluded"`` (replicates whose
    prefix holds fewer than ``k`` samples of a source arm: dropped) and ``"_exact_sensitivity"``.

    Parameters
    ----------
    traj, prefix, sources, k, gamma, methods, rng, protocol
        As in ``request_losses`` (the requests are drawn here).

    Returns
    -------
    dict
        ``{method: mean sub-optimality}`` with the two counts above.
    """
    prefix, sources, k, gamma, rng = _check_request(traj, prefix, sources, k, gamma, rng, protocol)
    methods = _check_methods(methods)
    align = protocol.block // len(traj.means) if traj.model == "Mf" else 1
    starts, valid = zip(*(deletion_starts_unchecked(traj, prefix, a, k, protocol.n_requests, rng, align) for a in sources))
    keep = np.logical_and.reduce([v[:, 0] for v in valid])               # per trajectory
    if not keep.all():
        traj = Trajectories(traj.means, traj.model, traj.prefixes, traj.arm_counts[keep],
                            traj.occurrence_sums[keep])
        starts = [s[keep] for s in starts]
    losses, n_exact = _request_losses(traj, prefix, sources, k, starts, gamma, methods, rng, protocol)
    out = {m: float(v.mean()) for m, v in losses.items()}
    out["_excluded"] = int((~keep).sum()) * protocol.n_requests
    out["_exact_sensitivity"] = n_exact
    return out


# %% [markdown]
# The experiments of Paper A §5 as data: the grids of $N$, $k$ and $\gamma$ each figure varies,
# the panels of each experiment, and `run_experiment`, which splits a run into independent tasks
# (one per data model and run, seeded by `(seed, experiment, model, run)`) for any executor.

# %% tags=["export"]
N_GRID = tuple(range(1000, 5001, 500))
K_GRID = (20, 40, 80, 120, 160, 200, 300, 400, 500)
GAMMA_GRID = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
FIG2_GAMMAS = (0.005, 0.05, 0.5, 5.0, 50.0)
ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
FIG3_CONFIGS = tuple((n, g, k) for n in (2000, 4000) for g in (0.05, 0.5) for k in (40, 80))
TABLE2_N = (900, 1000, 1100, 1200, 1300, 1400, 1500)
EXPERIMENTS = ("figure1", "figure2", "figure3", "table2")


def _check_experiment(experiment) -> str:
    if not isinstance(experiment, str):
        raise TypeError(f"experiment must be one of {EXPERIMENTS}, got {type(experiment).__name__}")
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}; choose from {EXPERIMENTS}")
    return experiment


def panels(experiment: str, protocol: ProtocolA) -> list:
    """The panels of an experiment: dicts with ``id, model, case, vary, x, sources`` and, per x, the
    ``(N, k, gamma)`` used (``points``) and the method names.

    Parameters
    ----------
    experiment : str
        One of ``EXPERIMENTS``.
    protocol : ProtocolA
        The protocol's knobs.

    Returns
    -------
    list of dict
        The panels, in plotting order.
    """
    _check_experiment(experiment)
    check_instance(protocol, ProtocolA, "protocol")
    p = protocol
    hard, easy = 0, p.easy_arm
    out = []

    def sweep(model, case, sources, vary, methods, gammas=GAMMA_GRID):
        if vary == "N":
            x, pts = list(N_GRID), [(n, p.k, p.gamma) for n in N_GRID]
        elif vary == "k":
            x, pts = list(K_GRID), [(p.n, k, p.gamma) for k in K_GRID]
        else:
            x, pts = list(gammas), [(p.n, p.k, g) for g in gammas]
        out.append({"id": f"{model}-{case}-{vary}", "model": model, "case": case, "vary": vary,
                    "x": x, "points": pts, "sources": sources, "methods": list(methods)})

    if experiment == "figure1":
        for vary in ("N", "k", "gamma"):
            for model in ("Mf", "Md"):
                for case, arm in (("hard", hard), ("easy", easy)):
                    sweep(model, case, [arm], vary, ("Oracle", "Gaussian", "Rollback", "Mixing", "Alg2"))
    elif experiment == "figure2":
        for vary in ("N", "k", "gamma"):
            for model in ("Mf", "Md"):
                sweep(model, "hard", [hard], vary, [f"eta={e:g}" for e in ETAS] + ["Oracle"], FIG2_GAMMAS)
    elif experiment == "figure3":
        for case, arms in (("hard", [0, 1]), ("easy", [2, 3])):
            out.append({"id": f"Mf-{case}-config", "model": "Mf", "case": case, "vary": "config",
                        "x": [list(c) for c in FIG3_CONFIGS], "points": [(n, k, g) for n, g, k in FIG3_CONFIGS],
                        "sources": arms, "methods": ["Oracle", "Rollback", "Gaussian", "Alg7"]})
    elif experiment == "table2":
        out.append({"id": "Md-hard-N", "model": "Md", "case": "hard", "vary": "N", "x": list(TABLE2_N),
                    "points": [(n, int(p.table2_k_fraction * n), p.gamma) for n in TABLE2_N],
                    "sources": [hard],
                    "methods": ["Alg6", "Alg2"], "c_star": p.table2_c_star})
    else:
        raise ValueError(f"unknown experiment {experiment!r}; choose from {EXPERIMENTS}")
    return out

# %% [markdown]
# **Running an experiment.** `run_once` is one independent run of one model (top-level and picklable,
# so any executor can run it); `run_experiment` runs the `n_runs` runs of every model and returns the
# JSON-ready result that the figures are drawn from.

# %% tags=["export"]
def run_once(task: tuple) -> dict:
    """One independent run of one model of an experiment: ``task = (experiment, protocol, model,
    run, seed)``.  Top-level and picklable, so any executor can run it.  Returns per-panel lists of
    per-point mean sub-optimality, and the excluded / exact-sensitivity counts.

    Parameters
    ----------
    task : tuple
        ``(experiment, protocol, model, run, seed)``.

    Returns
    -------
    dict
        ``{panel id: {"values", "excluded", "exact_sensitivity"}}``.
    """
    if not isinstance(task, tuple) or len(task) != 5:
        raise TypeError("task must be a tuple (experiment, protocol, model, run, seed)")
    experiment, protocol, model, run, seed = task
    _check_experiment(experiment)
    check_instance(protocol, ProtocolA, "protocol")
    check_choice(model, "model", ("Mf", "Md"))
    check_int(run, "run", 0)
    check_int(seed, "seed", 0)
    if model not in {pl["model"] for pl in panels(experiment, protocol)}:
        raise ValueError(f"experiment {experiment!r} has no panel of model {model!r}")
    rng = np.random.default_rng([seed, EXPERIMENTS.index(experiment), ("Mf", "Md").index(model), run])
    mine = [pl for pl in panels(experiment, protocol) if pl["model"] == model]
    c_star = mine[0].get("c_star", protocol.c_star)
    prefixes = sorted({pt[0] for pl in mine for pt in pl["points"]})
    traj = simulate_trajectories(protocol.means, model, prefixes, protocol.n_trajectories, rng, c_star=c_star)
    result = {}
    for pl in mine:
        values = {m: [] for m in pl["methods"]}
        excluded = exact = 0
        for n, k, gamma in pl["points"]:
            res = evaluate(traj, prefixes.index(n), pl["sources"], k, gamma, pl["methods"], rng, protocol)
            for m in pl["methods"]:
                values[m].append(res[m])
            excluded += res["_excluded"]
            exact += res["_exact_sensitivity"]
        result[pl["id"]] = {"values": values, "excluded": excluded, "exact_sensitivity": exact}
    return result


# %% [markdown]
# `run_experiment` makes the tasks of an experiment, runs them on any executor, and aggregates the
# runs into the JSON layout the figures read: per panel and method, the mean over runs and its
# standard error.

# %% tags=["export"]
def run_experiment(experiment: str, protocol: ProtocolA | None = None, *, seed: int = 0, executor=None,
                   workers: int = 1, progress: bool = True, scale: str = "custom") -> dict:
    """Run ``experiment`` (one of ``EXPERIMENTS``) and return its JSON-ready result (issue layout:
    ``experiment, scale, seed, protocol, panels[id, model, case, vary, x, methods, stderr]``).

    The ``n_runs`` runs of each model are independent tasks; ``executor`` (any
    ``concurrent.futures.Executor``) or ``workers`` processes run them.  Results depend only on
    ``seed``, never on the executor.

    Parameters
    ----------
    experiment : str
        One of ``EXPERIMENTS``.
    protocol : ProtocolA or None
        The protocol (None: the paper's, ``ProtocolA()``).
    seed : int
        Master seed, >= 0.
    executor : concurrent.futures.Executor or None
        Where to run the tasks.
    workers : int
        Worker processes when no executor is given, >= 1.
    progress : bool
        Whether to report progress on standard error.
    scale : str
        A label recorded in the result (``"paper"``, ``"quick"``, ...).

    Returns
    -------
    dict
        The JSON-ready result.
    """
    from bandit_unlearning.experiments.runner import run_tasks

    _check_experiment(experiment)
    if protocol is not None:
        check_instance(protocol, ProtocolA, "protocol")
    seed = check_int(seed, "seed", 0)
    workers = check_int(workers, "workers", 1)
    check_bool(progress, "progress")
    if not isinstance(scale, str):
        raise TypeError(f"scale must be a string (a label such as 'paper' or 'quick'), got {type(scale).__name__}")
    protocol = protocol or ProtocolA()
    specs = panels(experiment, protocol)
    models = sorted({pl["model"] for pl in specs})
    tasks = [(experiment, protocol, model, run, seed) for model in models for run in range(protocol.n_runs)]
    results = run_tasks(run_once, tasks, executor, workers=workers, desc=experiment, progress=progress)
    out_panels = []
    for pl in specs:
        runs = [r[pl["id"]] for r, t in zip(results, tasks) if t[2] == pl["model"]]
        per_run = {m: np.array([r["values"][m] for r in runs]) for m in pl["methods"]}   # (runs, x)
        se = {m: (v.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else np.zeros(v.shape[1]))
              for m, v in per_run.items()}
        out_panels.append({
            "id": pl["id"], "model": pl["model"], "case": pl["case"], "vary": pl["vary"], "x": pl["x"],
            "sources": pl["sources"],
            "methods": {m: [float(x) for x in v.mean(axis=0)] for m, v in per_run.items()},
            "stderr": {m: [float(x) for x in s] for m, s in se.items()},
            "excluded_replicates": int(sum(r["excluded"] for r in runs)),
            "exact_sensitivity_replicates": int(sum(r["exact_sensitivity"] for r in runs)),
        })
    return {"experiment": experiment, "scale": scale, "seed": seed, "protocol": protocol.as_json(),
            "panels": out_panels}

# %%
from bandit_unlearning.experiments.paper_a import *  # noqa: F403

# %% [markdown]
# **Check: the vectorised engine against a plain loop.**  The oracle rebuilds, for every replicate,
# the dataset of the prefix, locates the deleted samples, builds a `DeletionRequest`, and computes
# with the scalar API: `fit_lcb` for Oracle, `unlearn` for the deterministic Rollback, and the exact
# output distribution (`output_distributions`) for the noisy methods, whose expected loss
# $\sum_a p(a)(\mu^\star - \mu(a))$ it averages.  Deterministic methods must agree replicate by
# replicate; for noisy methods the engine's Monte Carlo mean must lie within a Hoeffding margin of the
# oracle's exact mean (losses lie in $[0, 0.08]$; two-sided margin at failure probability
# $10^{-7}$ per comparison, 4 comparisons).

# %%
from bandit_unlearning.mab.lcb import fit_lcb
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.unlearn import output_distributions, unlearn_batch, UnlearnOptions
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.testing.montecarlo import hoeffding_margin


def loop_oracle(arms_raw, rewards_raw, n, source, k, starts, gamma, method, protocol):
    """Per-replicate expected loss by the scalar API (the test oracle of ``request_losses``)."""
    mu = np.asarray(PAPER_MEANS)
    out = []
    for r in range(arms_raw.shape[0]):
        d = OfflineDataset(arms_raw[r, :n], rewards_raw[r, :n], 5)
        state = fit_lcb(d)
        positions = np.flatnonzero(arms_raw[r, :n] == source)
        for s0 in starts[r]:
            request = DeletionRequest.from_indices(d, positions[s0:s0 + k])
            if method == "Oracle":
                out.append(mu.max() - mu[state.arm])
            elif method == "Rollback":
                res = unlearn(state, request, options=UnlearnOptions(method="rollback"), rng=np.random.default_rng(0))[1]
                out.append(mu.max() - mu[res.arm])
            else:
                name = {"Gaussian": "gaussian", "Alg2": "adaptive"}[method]
                p, _ = output_distributions(state, request, options=UnlearnOptions(method=name, gamma=gamma, threshold_scale=protocol.threshold_scale))
                out.append(float(p @ (mu.max() - mu)))
    return np.array(out)


proto = ProtocolA.quick()
n, k, R, n_req = 600, 40, 30, 40
arms_raw = np.broadcast_to(np.arange(n) % 5, (R, n)).copy()               # Mf, round-robin
rewards_raw = (rng.random((R, n)) < np.asarray(PAPER_MEANS)[arms_raw]).astype(float)
traj = trajectories_from_samples(PAPER_MEANS, "Mf", arms_raw, rewards_raw, [n])
for gamma in (0.05, 0.5):
    starts, _ = consecutive_deletions(traj, 0, 0, k, n_req, rng, align=20)
    methods = ["Oracle", "Rollback", "Gaussian", "Alg2"]
    engine, _ = request_losses(traj, 0, [0], k, [starts], gamma, methods, rng, proto)
    for method in methods:
        exact = loop_oracle(arms_raw, rewards_raw, n, 0, k, starts, gamma, method, proto)
        if method in ("Oracle", "Rollback"):
            assert np.array_equal(engine[method], exact), method
            print(f"gamma={gamma}: {method:8} identical on all {exact.size} replicates")
        else:
            t = hoeffding_margin(exact.size, 0.08, 0.5e-7)
            gap = abs(engine[method].mean() - exact.mean())
            print(f"gamma={gamma}: {method:8} engine {engine[method].mean():.5f}  exact {exact.mean():.5f}  "
                  f"|gap| {gap:.5f} <= margin {t:.5f}")
            assert gap <= t, method

# %% [markdown]
# **The check can fail.**  The same replicate-by-replicate comparison rejects an engine whose
# rollback subtracts the deleted *count* but not the deleted rewards (as if every deleted reward
# were 0 — a half-skipped rollback):

# %%
counts0 = np.repeat(traj.arm_counts[:, 0, :], n_req, axis=0)
sums0 = np.repeat(traj.reward_sums()[:, 0, :], n_req, axis=0)
skipped = unlearn_batch(counts0, sums0, 1 / n, 0, k, np.zeros(counts0.shape[0]), options=UnlearnOptions(method="rollback"),
                        rng=rng)[0]
skipped_loss = np.asarray(PAPER_MEANS).max() - np.asarray(PAPER_MEANS)[skipped]
exact_rollback = loop_oracle(arms_raw, rewards_raw, n, 0, k, starts, 0.5, "Rollback", proto)
n_diff = int(np.sum(skipped_loss != exact_rollback))
print(f"the broken rollback differs from the oracle on {n_diff} of {exact_rollback.size} replicates")
assert n_diff > 0

# %% [markdown]
# **Next.** The cells tagged `export` above are the modules `bandit_unlearning.experiments.protocol`
# and `bandit_unlearning.experiments.paper_a`.  Chapter [A8b](08b_paper_figures.ipynb) plots what
# `run_experiment` returns and runs every experiment of the paper at reduced scale.
