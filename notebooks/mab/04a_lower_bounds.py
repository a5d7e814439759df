# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.lower_bounds
# ---

# %% [markdown]
# # Chapter A4a — Lower bounds: what no unlearning algorithm can beat
#
# *Paper A, Section 3.3: Theorem 3.7 (fixed-sample model), Theorem 3.9 (distribution model,
# $C^\star \ge 2$) and the $C^\star \in (1, 2)$ case; Appendix A.6–A.8 (Paper A Theorems 3.7, 3.9).  Exports
# `bandit_unlearning.mab.lower_bounds`.*
#
# Chapters A2–A3d built unlearning mechanisms and bounded their sub-optimality from above.  The paper
# also bounds it from **below**: no $(\varepsilon, \delta)$-unlearning mechanism, however clever, can
# have a worst-case sub-optimality smaller than order $e^{-\varepsilon}/\sqrt{N(a_0) - k}$.  The
# proof is Le Cam's two-point method: two bandit instances that differ only on the deleted arm, close
# enough that the data *left after the deletion* cannot tell them apart, but far enough apart that
# picking the wrong arm costs something.  This chapter states the theorems (Section 1), derives them
# (Section 2) and writes the three two-instance constructions as code, with samplers for datasets,
# statistics and requests, the divergences and the bounds (Section 3).  Its sibling
# [A4b](04b_lower_bound_checks.ipynb) checks them:
# 1. it computes the KL divergences of the paper's proofs **exactly** and compares them with the
#    paper's closed forms — including the $C^\star \in (1, 2)$ formula, which we check rather than
#    assume — and verifies Bretagnolle–Huber and data processing numerically;
# 2. finds where the printed formulas are and are not implied by their own proofs (the cap
#    $\Delta \le 1/5$, and a branch bit that Algorithm 3 reads from the original data);
# 3. checks the theorems the only way a lower bound can be checked: on the constructions, the
#    Monte Carlo risk of **every** $(\varepsilon, \delta)$-unlearning mechanism of the package —
#    Algorithm 2, the Gaussian mechanism, rollback — lies above the bound; and shows that the same
#    assertion rejects mechanisms that do *not* unlearn but claim the same $\varepsilon$.

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy import optimize, special, stats

from bandit_unlearning.mab.bounds import gamma0_paper
from bandit_unlearning.mab.lcb import fit_lcb, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.unlearn import noisy_argmax_distribution, unlearn_batch, UnlearnOptions
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_gamma

rng = np.random.default_rng(20260607)

# %% [markdown]
# ## 1. Statement
#
# Two arms, Bernoulli rewards; the source arm $a_0$ of the request is arm 0 in code (arm 1 in the
# paper).  $U$ is a set of $k$ points chosen uniformly at random, independently of the rewards.
# The risk of a removal mechanism $\pi'$ on an instance $I$ is its expected sub-optimality
# $\mathbb E_I[\mu_I(a^\star_I) - \mu_I(\hat a')]$ (over the data, the request and the mechanism).
#
# **Theorem 3.7 ($\mathcal M_f$).** $\mu_{I_1} = (\tfrac12 + \Delta, \tfrac12)$,
# $\mu_{I_2} = (\tfrac12 - \Delta, \tfrac12)$, the same counts in both, $U$ = $k$ points of $a_0$,
# $\Delta = \min\{\tfrac15, \tfrac12\sqrt{1/(5(N(a_0) - k))}\}$.  For every $(\varepsilon, \delta)$-unlearning
# mechanism with $\delta \le 1/(8\sqrt e) \approx 0.0758$,
# $$\max_{I \in \{I_1, I_2\}} \text{risk}_I \;\ge\; \tfrac12(\text{risk}_{I_1} + \text{risk}_{I_2})
#   \;\ge\; \frac{e^{-\varepsilon}}{16}\sqrt{\frac{1}{5e\,(N(a_0) - k)}}.$$
#
# **Theorem 3.9 ($\mathcal M_d$, $C^\star \ge 2$).** The same means, behaviour policy
# $d = (1/C^\star, 1 - 1/C^\star)$ in both instances, $\Delta = \min\{\tfrac15, \tfrac12\sqrt{C^\star/(5(N-k))}\}$:
# $$\tfrac12(\text{risk}_{I_1} + \text{risk}_{I_2}) \ge \frac{e^{-\varepsilon}}{16}\sqrt{\frac{C^\star}{5e\,(N - k)}}.$$
#
# **$\mathcal M_d$, $C^\star \in (1, 2)$, $\delta = 0$.** $\mu_{I_1} = (\tfrac12 + \Delta, \tfrac12)$,
# $\mu_{I_2} = (\tfrac12, \tfrac12 + \Delta)$, $\Delta = (2 - C^\star)/2$, $d_{I_1} = (1/C^\star, 1 - 1/C^\star)$,
# $d_{I_2} = (1 - 1/C^\star, 1/C^\star)$ (each instance's best arm has probability $1/C^\star$);
# with the paper's closed form $\mathrm{KL} = (N - k)\,\frac{2 - C^\star}{C^\star}\ln\frac{2}{C^\star - 1}$,
# $$\tfrac12(\text{risk}_{I_1} + \text{risk}_{I_2}) \ge \frac{2 - C^\star}{8}\, e^{-\varepsilon - \mathrm{KL}}.$$
#
# ## 2. Derivation: Le Cam's two-point method
#
# Let $P_I$ be the law of the released arm $\pi'(U, \pi(D), T(D))$ and $Q_I$ that of the reference
# $\pi'(\emptyset, \pi(D\setminus U), T(D\setminus U))$, both under instance $I$ (data, request and
# mechanism randomness).  In each instance the best arm differs ($a^\star_{I_1} = 0$,
# $a^\star_{I_2} = 1$), and with two arms the risk is $\Delta$ times the probability of the other arm.
# 1. **Unlearning.** Definition 2.1 holds for *every* $(D, U)$, so after averaging over the data,
#    $Q_I(A) \le e^{\varepsilon} P_I(A) + \delta$, i.e. $P_I(A) \ge e^{-\varepsilon}(Q_I(A) - \delta)$.
# 2. **Sum of risks.** With $A = \{1\}$ for $I_1$ and $A^c = \{0\}$ for $I_2$:
#    $\text{risk}_{I_1} + \text{risk}_{I_2} \ge \Delta e^{-\varepsilon}\,[Q_{I_1}(A) + Q_{I_2}(A^c) - 2\delta]$.
# 3. **Bretagnolle–Huber.** $Q_{I_1}(A) + Q_{I_2}(A^c) \ge \tfrac12 \exp(-\mathrm{KL}(Q_{I_1}\,\|\,Q_{I_2}))$.
# 4. **Data processing.** The reference reads only $D \setminus U$ (and public quantities such as
#    $k$), so $\mathrm{KL}(Q_{I_1}\|Q_{I_2}) \le \mathrm{KL}(P_{I_1}[D\setminus U]\,\|\,P_{I_2}[D\setminus U])$.
#    Because $U$ is chosen independently of the rewards, $D \setminus U$ is again a sample of the
#    instance: $N(a_0) - k$ rewards of $a_0$ under $\mathcal M_f$; under $\mathcal M_d$ an i.i.d.
#    sample of size $N - k$ if $U$ is uniform over $D$ (Lemma A.8).
# 5. **The KL.** $\mathrm{kl}(\tfrac12 + \Delta\,\|\,\tfrac12 - \Delta) = 2\Delta\ln\frac{1 + 2\Delta}{1 - 2\Delta} \le 10\Delta^2$
#    for $\Delta \le 1/5$ (from $\ln\frac{1+2x}{1-2x} \le 5x$), so $\mathrm{KL} \le 10\Delta^2(N(a_0) - k)$
#    ($\mathcal M_f$) and $\le 10\Delta^2 (N - k)/C^\star$ ($\mathcal M_d$: only a $1/C^\star$ fraction of
#    the points are arm 0).  *A departure from the printed proof:* Theorem A.7's step (d) writes
#    $\exp(-4\Delta^2(N-k)/C^\star)$ there, which is not a valid lower bound on $e^{-\mathrm{KL}}$ — since
#    $\ln\frac{1+2x}{1-2x} \ge 4x$, the KL is at least $8\Delta^2(N-k)/C^\star$, so
#    $e^{-\mathrm{KL}} \le e^{-8\Delta^2(N-k)/C^\star} < e^{-4\Delta^2(N-k)/C^\star}$.  The theorem's stated
#    result follows with the upper bound $10\Delta^2$, which is what the code uses (errata page).
#
# Together, for any $\Delta$, KL bound and $\delta$ (our `le_cam_bound`):
# $$\tfrac12(\text{risk}_{I_1} + \text{risk}_{I_2}) \;\ge\; \frac{\Delta}{2}\, e^{-\varepsilon}\Big[\tfrac12 e^{-\mathrm{KL}} - 2\delta\Big].$$
# With the theorems' $\Delta$ the KL bound is $\le \tfrac12$, so the bracket is at least
# $\frac{1}{2\sqrt e} - 2\delta \ge \frac{1}{4\sqrt e}$ when $\delta \le \frac{1}{8\sqrt e}$, and the right-hand side is
# $\frac{\Delta e^{-\varepsilon}}{8\sqrt e}$ — the theorems' formulas when $\Delta = \frac12\sqrt{1/(5(N(a_0)-k))}$
# (resp. $\frac12\sqrt{C^\star/(5(N - k))}$).  For $C^\star \in (1, 2)$, $\delta = 0$ and $\Delta = (2 - C^\star)/2$
# give $\frac{2 - C^\star}{8}e^{-\varepsilon - \mathrm{KL}}$.
#
# **Gaps, examined in this chapter.**
# * *The cap.* When $\Delta = 1/5$ is the active branch of the min, the chain gives
#   $\frac{e^{-\varepsilon}}{40\sqrt e}$-type constants, not the printed formula (chapter A4b, Section 2).
# * *Which request?* The algorithms of the package take single-source requests ($U$ from $a_0$);
#   Lemma A.8 is about $U$ uniform over $D$.  Under $\mathcal M_d$ we use single-source requests
#   (conditioning on $N(a_0) \ge k$ so that they exist) and compute *their* KL exactly.
# * *What the reference reads.* Step 4 needs the reference to read nothing that depends on the
#   deleted rewards.  Algorithm 3 (chapter A3a) decides its branch from $\hat a = \pi(D)$ — the
#   learner's output on the *original* data.  For Algorithm 2 the chain therefore needs the KL of
#   $(D\setminus U, \pi(D))$; we compute the extra term exactly (chapter A4b, Section 2).
# * *The $C^\star \in (1, 2)$ closed form* is checked against the exact KL (chapter A4b, Section 1).
#
# ## 3. Implementation
#
# `TwoPointPair` holds the two instances (means `[instance, arm]`, the gap, $k$, $N$, and either the
# fixed counts or the two behaviour policies).  The three constructors compute $\Delta$ from the
# theorems and validate their arguments ($1 \le k < N(a_0)$, resp. $k < N$; $C^\star$ in the
# theorem's range).

# %% tags=["export"]
"""Lower bounds for unlearning offline bandits: Le Cam's two-point constructions of Paper A
(Theorems 3.7 and 3.9, and the C* in (1, 2) case; Paper A Theorems 3.7, 3.9).

- ``TwoPointPair``: two 2-armed Bernoulli instances I1, I2 (means, counts or behaviour policies, k);
  built by ``fixed_sample_pair`` (Theorem 3.7, M_f), ``distribution_pair`` (Theorem 3.9, M_d,
  C* >= 2) and ``small_cstar_pair`` (M_d, C* in (1, 2)).  Arm 0 is the source arm a0 (the paper's
  arm 1); it is the best arm of I1.
- Sampling: ``sample_pair_statistics`` (vectorised per-arm statistics plus the deleted reward sum of
  a request of k uniformly chosen points of a0), ``sample_pair_dataset`` and ``sample_pair_request``
  (a dataset and the positions of a request, for the scalar API).
- Divergences: ``bernoulli_kl``, ``per_sample_kl``, ``retained_kl`` (exact KL between the laws of
  the retained data D \\ U under I1 and I2), ``paper_kl_bound`` (the paper's closed forms),
  ``learner_bit_kl`` (the extra KL of also revealing the learner's output pi(D)).
- Bounds: ``le_cam_bound`` (the two-point chain with any KL and delta), ``lower_bound_fixed``
  (Theorem 3.7), ``lower_bound_distribution`` (Theorem 3.9), ``lower_bound_small_cstar``
  (C* in (1, 2), delta = 0).
"""

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from bandit_unlearning.checks import (check_count,
    as_real_array, as_generator, check_choice, check_instance, check_int, check_int_array, check_real, check_real_array,
)
from bandit_unlearning.mab.data import OfflineDataset, restore_readonly, round_robin_arms
from bandit_unlearning.mab.lcb import check_tau, lcb_scores
from bandit_unlearning.shapes import check_broadcast

DELTA_MAX = float(1 / (8 * np.sqrt(np.e)))   # Theorems 3.7 and 3.9 need delta <= 1/(8 sqrt(e))
REQUEST_SCHEMES = ("source", "uniform")
PAIR_KINDS = ("fixed", "distribution", "small_cstar")   # Theorem 3.7, Theorem 3.9, C* in (1, 2)
_TAIL = 1e-15                                # probability mass ignored when summing over counts


def _integer(name: str, value, minimum: int) -> int:
    return check_int(value, name, minimum, whole_float=True)       # 40.0 is accepted as 40


def _counts_k(n_name: str, n, k) -> tuple:
    n, k = _integer(n_name, n, 2), _integer("k", k, 1)
    if k >= n:
        raise ValueError(f"the lower bounds need {n_name} - k >= 1 (something must be left after the "
                         f"deletion), got {n_name} = {n}, k = {k}")
    return n, k


def _epsilon(epsilon, allow_zero: bool = False):
    eps = as_real_array(epsilon, "epsilon")
    if not np.all(np.isfinite(eps)) or np.any(eps < 0) or (not allow_zero and np.any(eps == 0)):
        rule = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"epsilon must be finite and {rule}, got {epsilon!r}")
    return eps


def _theorem_delta(delta):
    if delta is None:
        return
    d = as_real_array(delta, "delta")
    if not np.all(np.isfinite(d)) or np.any(d < 0) or np.any(d > DELTA_MAX):
        raise ValueError(f"Theorems 3.7 and 3.9 hold for delta in [0, 1/(8 sqrt(e))] = [0, {DELTA_MAX:.6f}], "
                         f"got delta = {delta!r}")


def _c_star(c_star, low: float, high: float, theorem: str) -> float:
    c = check_real(c_star, "c_star (C*)", allow_inf=True)
    if not (np.isfinite(c) and low <= c < high) or (low == 1 and c == 1):
        raise ValueError(f"{theorem} needs c_star (C*) in {'(1, 2)' if high == 2 else '[2, inf)'}, got C* = {c_star!r}")
    return c


def _check_instance(instance):
    if type(instance) is np.ndarray and instance.ndim == 0:          # a 0-d array: its scalar
        instance = instance[()]
    if isinstance(instance, bool) or not isinstance(instance, (int, np.integer)):
        raise TypeError(f"instance must be 0 (I1) or 1 (I2), got {type(instance).__name__}")
    if instance not in (0, 1):
        raise ValueError(f"instance must be 0 (I1) or 1 (I2), got {instance!r}")


def _out(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


# %% [markdown]
# The constructions of the derivation (Section 2): the gaps $\Delta$ of Theorems 3.7 and 3.9, the pair
# of instances $I_1, I_2$ that differ only in which arm is best (`TwoPointPair`), and one builder per
# setting -- fixed-sample (Theorem 3.7), distribution with $C^\star \ge 2$ (Theorem 3.9), and
# $C^\star \in (1, 2)$.

# %% tags=["export"]
# ------------------------------------------------------------------------------- the constructions
def gap_fixed(n_a0: int, k: int) -> float:
    """Theorem 3.7's gap ``Delta = min{1/5, (1/2) sqrt(1 / (5 (N(a0) - k)))}``.

    Parameters
    ----------
    n_a0, k
        As in ``fixed_sample_pair``.

    Returns
    -------
    float
    """
    n_a0, k = _counts_k("n_a0", n_a0, k)
    return float(min(0.2, 0.5 * np.sqrt(1 / (5 * (n_a0 - k)))))


def gap_distribution(n: int, k: int, c_star: float) -> float:
    """Theorem 3.9's gap ``Delta = min{1/5, (1/2) sqrt(C* / (5 (N - k)))}`` (C* >= 2).

    Parameters
    ----------
    n, k, c_star
        As in ``distribution_pair``.

    Returns
    -------
    float
    """
    n, k = _counts_k("n", n, k)
    c = _c_star(c_star, 2.0, np.inf, "Theorem 3.9")
    return float(min(0.2, 0.5 * np.sqrt(c / (5 * (n - k)))))


# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class TwoPointPair:
    """Two instances I1 (index 0) and I2 (index 1) of a 2-armed Bernoulli bandit for Le Cam's method.

    ``means[i]``: the mean rewards of instance i; ``gap``: the sub-optimality gap (the same in both);
    ``k``: the request size; ``n``: the dataset size N; ``kind``: ``"fixed"`` (Theorem 3.7, M_f),
    ``"distribution"`` (Theorem 3.9, M_d with C* >= 2) or ``"small_cstar"`` (M_d with C* in (1, 2)).
    Under M_f ``counts`` are the fixed N(a) of both instances; under M_d ``behaviors[i]`` is instance
    i's behaviour policy.  Requests delete k uniformly chosen points of ``source`` = arm 0 (a0); under
    M_d the dataset is conditioned on N(a0) >= k so that such a request exists.

    Parameters
    ----------
    kind : str
        ``"fixed"``, ``"distribution"`` or ``"small_cstar"``.
    means : array_like (2, 2)
        ``means[i, a]``: the mean reward of arm ``a`` in instance ``i``, in [0, 1]; the instances have
        different best arms and the same gap.
    gap : float
        The sub-optimality gap ``Delta``, in (0, 1].
    k : int
        The request size (``1 <= k < n``).
    n : int
        The dataset size ``N`` (>= 2).
    counts : array_like of int (2,) or None
        M_f only: ``N(a) >= 1`` of both arms, summing to ``n``, with more than ``k`` of the source arm.
    behaviors : array_like (2, 2) or None
        M_d only: ``behaviors[i]`` is instance ``i``'s distribution over the arms.
    c_star : float or None
        M_d only: the concentrability ``C* > 1``.
    source : int
        The arm the requests delete from (0 or 1).
    """

    kind: str
    means: np.ndarray
    gap: float
    k: int
    n: int
    counts: np.ndarray | None = None
    behaviors: np.ndarray | None = None
    c_star: float | None = None
    source: int = 0

    def __post_init__(self):
        check_choice(self.kind, "kind", PAIR_KINDS)
        means = check_real_array(self.means, "means")
        if means.shape != (2, 2) or np.any((means < 0) | (means > 1)):
            raise ValueError(f"means must be a (2, 2) array in [0, 1], got {self.means!r}")
        gap = check_real(self.gap, "gap", 0, 1, low_open=True)
        gaps = means.max(axis=1) - means.min(axis=1)
        if not np.allclose(gaps, gap):
            raise ValueError(f"both instances must have gap {self.gap}, got {gaps}")
        if np.argmax(means[0]) == np.argmax(means[1]):
            raise ValueError("the two instances must have different best arms")
        source = check_int(self.source, "source", 0, 1)
        n, k = check_count(self.n, "n", 2), check_int(self.k, "k", 1)
        if k >= n:
            raise ValueError(f"k must be < n (something must be left after the deletion), got n = {n}, k = {k}")
        if self.c_star is not None:
            object.__setattr__(self, "c_star", check_real(self.c_star, "c_star (C*)", 1, low_open=True))
        if self.counts is not None:
            counts = check_int_array(self.counts, "counts", 1, shape=(2,))
            if counts.sum() != n or counts[source] <= k:
                raise ValueError(f"counts must sum to n = {n} and hold more than k = {k} points of the source arm, "
                                 f"got {counts.tolist()}")
            counts.setflags(write=False)
            object.__setattr__(self, "counts", counts)
        if self.behaviors is not None:
            behaviors = check_real_array(self.behaviors, "behaviors", 0, 1, shape=(2, 2))
            if np.any(np.abs(behaviors.sum(axis=1) - 1) > 1e-9):
                raise ValueError("behaviors must hold one probability distribution over the 2 arms per instance")
            behaviors.setflags(write=False)
            object.__setattr__(self, "behaviors", behaviors)
        means.setflags(write=False)
        for name, value in (("means", means), ("gap", gap), ("source", source), ("n", n), ("k", k)):
            object.__setattr__(self, name, value)
        if (self.model == "fixed") != (self.counts is not None) or (self.model == "distribution") != (self.behaviors is not None):
            raise ValueError("M_f needs counts (and no behaviors), M_d behaviors (and no counts)")

    __setstate__ = restore_readonly               # read-only again after unpickling

# %% [markdown]
# The pairs of the theorems: Theorem 3.7's pair under $M_f$ (means $1/2 \pm \Delta$ on the source arm,
# fixed counts), Theorem 3.9's under $M_d$ with $C^* \ge 2$, and the pair for $C^* \in (1, 2)$, whose
# instances swap the better arm.

# %% tags=["export"]
def fixed_sample_pair(n_a0: int, k: int, n_other: int | None = None) -> TwoPointPair:
    """Theorem 3.7 (M_f): ``mu_I1 = (1/2 + Delta, 1/2)``, ``mu_I2 = (1/2 - Delta, 1/2)``, counts
    ``(N(a0), n_other)`` (default ``n_other = N(a0)``) in both, ``Delta = gap_fixed(N(a0), k)``.

    Parameters
    ----------
    n_a0 : int
        ``N(a0)``, the points of the source arm (> k).
    k : int
        Request size (>= 1).
    n_other : int or None
        The points of the other arm (>= 1); ``None``: ``n_a0``.

    Returns
    -------
    TwoPointPair
        Of kind ``"fixed"``.
    """
    n_a0, k = _counts_k("n_a0", n_a0, k)
    n_other = n_a0 if n_other is None else _integer("n_other", n_other, 1)
    gap = gap_fixed(n_a0, k)
    means = [[0.5 + gap, 0.5], [0.5 - gap, 0.5]]
    return TwoPointPair("fixed", means, gap, k, n_a0 + n_other,
                        counts=np.array([n_a0, n_other]))


def distribution_pair(n: int, k: int, c_star: float) -> TwoPointPair:
    """Theorem 3.9 (M_d, C* >= 2): the means of Theorem 3.7 with ``Delta = gap_distribution(N, k, C*)``
    and behaviour ``d = (1/C*, 1 - 1/C*)`` in both instances.

    Parameters
    ----------
    n : int
        Dataset size ``N``.
    k : int
        Request size (``1 <= k < N``).
    c_star : float
        Concentrability ``C* >= 2``.

    Returns
    -------
    TwoPointPair
        Of kind ``"distribution"``.
    """
    gap = gap_distribution(n, k, c_star)
    c = float(c_star)
    d = [1 / c, 1 - 1 / c]
    return TwoPointPair("distribution", [[0.5 + gap, 0.5], [0.5 - gap, 0.5]],
                        gap, int(k), int(n), behaviors=np.array([d, d]), c_star=c)


def small_cstar_pair(n: int, k: int, c_star: float) -> TwoPointPair:
    """M_d with C* in (1, 2): ``mu_I1 = (1/2 + Delta, 1/2)``, ``mu_I2 = (1/2, 1/2 + Delta)``,
    ``Delta = (2 - C*)/2``, ``d_I1 = (1/C*, 1 - 1/C*)``, ``d_I2 = (1 - 1/C*, 1/C*)``.

    Parameters
    ----------
    n : int
        Dataset size ``N``.
    k : int
        Request size (``1 <= k < N``).
    c_star : float
        Concentrability ``C*`` in (1, 2).

    Returns
    -------
    TwoPointPair
        Of kind ``"small_cstar"``.
    """
    n, k = _counts_k("n", n, k)
    c = _c_star(c_star, 1.0, 2.0, "The C* in (1, 2) lower bound")
    gap = (2 - c) / 2
    return TwoPointPair("small_cstar", [[0.5 + gap, 0.5], [0.5, 0.5 + gap]], gap, k, n,
                        behaviors=np.array([[1 / c, 1 - 1 / c], [1 - 1 / c, 1 / c]]), c_star=c)

# %% [markdown]
# What a pair shows: its model ($M_f$ or $M_d$), the best arm $a^*$ of each instance, the number of
# retained samples the bound's rate is about, the sub-optimality of an output on each instance, and
# the law of the source arm's count $N(a_0)$.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(TwoPointPair)
@property
def model(self) -> str:
    """``"fixed"`` (M_f) or ``"distribution"`` (M_d)."""
    return "fixed" if self.kind == "fixed" else "distribution"


@add_to_class(TwoPointPair)
@property
def best_arms(self) -> np.ndarray:
    """``a*`` of I1 and of I2."""
    return np.argmax(self.means, axis=1)


@add_to_class(TwoPointPair)
@property
def retained(self) -> int:
    """What the bound's rate is about: N(a0) - k under M_f, N - k under M_d."""
    return int(self.counts[self.source] - self.k) if self.model == "fixed" else self.n - self.k


@add_to_class(TwoPointPair)
def suboptimality(self, instance: int, arms):
    """``mu_I(a*_I) - mu_I(arms)`` for instance 0 (I1) or 1 (I2); arrays of arms broadcast.

    Parameters
    ----------
    instance : int
        0 for I1, 1 for I2.
    arms : int or array_like of int
        Arms 0 or 1.

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    _check_instance(instance)
    arms = check_int_array(arms, "arms")
    if np.any((arms < 0) | (arms > 1)):
        raise ValueError("arms must be 0 or 1")
    return _out(self.means[instance].max() - self.means[instance][arms])


@add_to_class(TwoPointPair)
def source_count_pmf(self, instance: int) -> np.ndarray:
    """Law of N(a0) on ``0..N`` (a point mass under M_f; Binomial(N, d(a0)) conditioned on
    N(a0) >= k under M_d).

    Parameters
    ----------
    instance : int
        0 for I1, 1 for I2.

    Returns
    -------
    numpy.ndarray (N + 1,)
        ``P[N(a0) = j]`` for ``j = 0 .. N``.
    """
    _check_instance(instance)
    support = np.arange(self.n + 1)
    if self.model == "fixed":
        return (support == self.counts[self.source]).astype(float)
    pmf = stats.binom.pmf(support, self.n, self.behaviors[instance][self.source])
    pmf[: self.k] = 0.0
    return pmf / pmf.sum()

# %%
from bandit_unlearning.mab.lower_bounds import *  # noqa: F403

pairs = {
    "Thm 3.7, Mf": fixed_sample_pair(40, 20),
    "Thm 3.9, Md C*=5": distribution_pair(45, 5, 5.0),
    "Md, C*=1.5": small_cstar_pair(8, 3, 1.5),
}
for name, pair in pairs.items():
    print(f"{name:17} N={pair.n:3d} k={pair.k:2d} retained={pair.retained:3d} gap={pair.gap:.4f} "
          f"mu_I1={pair.means[0]} mu_I2={pair.means[1]} best arms={pair.best_arms}")
    assert pair.best_arms.tolist() == [0, 1]
    assert np.allclose([pair.suboptimality(0, [0, 1]), pair.suboptimality(1, [1, 0])], [[0, pair.gap], [0, pair.gap]])
    if pair.model == "distribution":
        coverage = pair.behaviors[[0, 1], pair.best_arms]
        print(f"{'':17} d_I1={np.round(pair.behaviors[0], 4)} d_I2={np.round(pair.behaviors[1], 4)}: "
              f"d_I(a*_I) = {np.round(coverage, 4)} >= 1/C* = {1 / pair.c_star:.4f}")
        assert np.all(coverage >= 1 / pair.c_star - 1e-12) and np.isclose(pair.behaviors[0][0], 1 / pair.c_star)

refusals = {
    "N(a0) = k": lambda: fixed_sample_pair(20, 20),
    "N(a0) < k": lambda: fixed_sample_pair(10, 20),
    "k = 0": lambda: fixed_sample_pair(10, 0),
    "C* < 2 for Thm 3.9": lambda: distribution_pair(100, 5, 1.5),
    "C* = 2 for (1, 2)": lambda: small_cstar_pair(10, 2, 2.0),
    "C* = 1": lambda: small_cstar_pair(10, 2, 1.0),
}
for what, make in refusals.items():
    try:
        make()
        raise AssertionError(f"{what} was accepted")
    except ValueError as err:
        print(f"refused ({what}): {err}")

# %% [markdown]
# **Sampling.** `sample_pair_statistics` draws, for $R$ replicates at once, the per-arm counts and
# reward sums of $D$ and the reward sum of a request of $k$ uniformly chosen points of $a_0$ —
# hypergeometric given $a_0$'s reward sum, because the request ignores the rewards — in the format
# `unlearn_batch` takes.  Under $\mathcal M_d$ the count $N(a_0)$ is drawn from its binomial law
# *conditioned on $N(a_0) \ge k$* (by inverse CDF), so that the single-source request exists; the
# exact KL below accounts for that conditioning.  `sample_pair_dataset` and `sample_pair_request`
# give one real dataset and the positions of a request for the scalar API (`DeletionRequest`,
# `unlearn`).
#
# **Divergences.** `retained_kl` is the exact KL between the laws of $D \setminus U$ under the two
# instances, for single-source (`"source"`) or uniform (`"uniform"`, Lemma A.8) requests;
# `paper_kl_bound` is the paper's bound; `learner_bit_kl` is the extra KL of also revealing
# $\pi(D)$ (chapter A4b, Section 2).

# %% tags=["export"]
# ------------------------------------------------------------------------------------- sampling
def _check_pair(pair, instance=None):
    if not isinstance(pair, TwoPointPair):
        raise TypeError(f"pair must be a TwoPointPair, got {type(pair).__name__}")
    if instance is not None:
        _check_instance(instance)


def sample_source_counts(pair: TwoPointPair, instance: int, rng: np.random.Generator, size: int = 1) -> np.ndarray:
    """``size`` draws of N(a0): fixed under M_f; Binomial(N, d_I(a0)) conditioned on ``N(a0) >= k``
    under M_d (inverse-CDF sampling of the truncated law).

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    instance : int
        0 for I1, 1 for I2.
    rng : numpy.random.Generator, int or None
        The source of randomness (``checks.as_generator``).
    size : int
        Number of draws.

    Returns
    -------
    numpy.ndarray of int64 (size,)
    """
    _check_pair(pair, instance)
    size = _integer("size", size, 1)
    rng = as_generator(rng)
    if pair.model == "fixed":
        return np.full(size, int(pair.counts[pair.source]), dtype=np.int64)
    p = pair.behaviors[instance][pair.source]
    low, mass = stats.binom.cdf(pair.k - 1, pair.n, p), stats.binom.sf(pair.k - 1, pair.n, p)
    if mass < 1e-9:
        raise ValueError(f"P[N(a0) >= k] = {mass:.3g} under instance {instance + 1}: a request of k = {pair.k} "
                         f"points of arm {pair.source} almost never exists (decrease k or increase N)")
    draws = stats.binom.ppf(low + mass * rng.random(size), pair.n, p)
    return np.clip(draws, pair.k, pair.n).astype(np.int64)


def sample_pair_statistics(pair: TwoPointPair, instance: int, rng: np.random.Generator, size: int = 1):
    """``size`` replicates of ``(counts, reward_sums, deleted_sums)`` under instance 0 (I1) or 1 (I2).

    ``counts``, ``reward_sums``: shape ``(size, 2)``, the statistics of D (as ``sample_statistics_*``
    return them); ``deleted_sums``: shape ``(size,)``, the reward sum of a request of k points of arm
    a0 chosen uniformly at random, independently of the rewards (so hypergeometric given a0's reward
    sum).  Ready for ``unlearn_batch(counts, reward_sums, tau, pair.source, pair.k, deleted_sums, options=...)``.

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    instance : int
        0 for I1, 1 for I2.
    rng : numpy.random.Generator, int or None
        The source of randomness (``checks.as_generator``).
    size : int
        Number of replicates.

    Returns
    -------
    tuple of numpy.ndarray
        ``(counts, reward_sums, deleted_sums)`` with the shapes above.
    """
    rng = as_generator(rng)
    n0 = sample_source_counts(pair, instance, rng, size)
    counts = np.stack([n0, pair.n - n0], axis=1) if pair.source == 0 else np.stack([pair.n - n0, n0], axis=1)
    sums = rng.binomial(counts, pair.means[instance]).astype(float)
    s0 = sums[:, pair.source].astype(np.int64)
    deleted = rng.hypergeometric(s0, n0 - s0, pair.k).astype(float)
    return counts, sums, deleted


# %% tags=["export"]
def sample_pair_dataset(pair: TwoPointPair, instance: int, rng: np.random.Generator) -> OfflineDataset:
    """One dataset of instance 0 (I1) or 1 (I2): round-robin arms under M_f; i.i.d. arms from the
    instance's behaviour policy conditioned on ``N(a0) >= k`` under M_d; Bernoulli rewards.

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    instance : int
        0 for I1, 1 for I2.
    rng : numpy.random.Generator, int or None
        The source of randomness (``checks.as_generator``).

    Returns
    -------
    OfflineDataset
        ``pair.n`` rows.
    """
    rng = as_generator(rng)
    n0 = int(sample_source_counts(pair, instance, rng, 1)[0])
    if pair.model == "fixed":
        arms = round_robin_arms(pair.counts)
    else:
        counts = [n0, pair.n - n0] if pair.source == 0 else [pair.n - n0, n0]
        arms = rng.permutation(np.repeat([0, 1], counts))
    rewards = (rng.random(arms.size) < pair.means[instance][arms]).astype(float)
    return OfflineDataset(arms, rewards, 2)


def sample_pair_request(pair: TwoPointPair, dataset: OfflineDataset, rng: np.random.Generator,
                        scheme: str = "source") -> np.ndarray:
    """Positions (sorted) of a request of ``pair.k`` points chosen uniformly at random, independently of
    the rewards: from arm a0 (``scheme="source"``, the single-source request of the algorithms) or from
    all of D (``"uniform"``, Lemma A.8).  Use ``DeletionRequest.from_indices(dataset, positions)``.

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    dataset : OfflineDataset
        A dataset of the pair (``sample_pair_dataset``).
    rng : numpy.random.Generator, int or None
        The source of randomness (``checks.as_generator``).
    scheme : str
        ``"source"`` or ``"uniform"``.

    Returns
    -------
    numpy.ndarray of int (k,)
        Sorted, distinct positions into ``dataset``.
    """
    _check_pair(pair)
    check_instance(dataset, OfflineDataset, "dataset")
    check_choice(scheme, "scheme", REQUEST_SCHEMES)
    rng = as_generator(rng)
    pool = np.flatnonzero(dataset.arms == pair.source) if scheme == "source" else np.arange(len(dataset))
    if pool.size < pair.k:
        raise ValueError(f"the dataset has {pool.size} candidate points, fewer than k = {pair.k}")
    return np.sort(rng.choice(pool, size=pair.k, replace=False))


# %% [markdown]
# The divergences that Le Cam's bound needs: the KL between the two instances' retained data, the
# paper's bound on it, and the KL of the one bit the LCB learner releases (computed exactly in
# chapter A4b, Section 1).

# %% tags=["export"]
# ----------------------------------------------------------------------------------- divergences
def bernoulli_kl(p, q):
    """``KL(Bernoulli(p) || Bernoulli(q))`` in nats (``inf`` where q is 0 or 1 and p differs).  Broadcasts.

    Parameters
    ----------
    p, q : float or array_like
        Success probabilities in [0, 1].

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    p, q = as_real_array(p, "p"), as_real_array(q, "q")
    check_broadcast(p=p, q=q)
    if np.any(~np.isfinite(p)) or np.any(~np.isfinite(q)) or np.any((p < 0) | (p > 1) | (q < 0) | (q > 1)):
        raise ValueError("p and q (Bernoulli parameters) must lie in [0, 1]")
    return _out(special.rel_entr(p, q) + special.rel_entr(1 - p, 1 - q))


def per_sample_kl(pair: TwoPointPair) -> float:
    """KL between the laws of one (arm, reward) pair of M_d under I1 and I2:
    ``sum_a d_1(a) [ln(d_1(a)/d_2(a)) + kl(mu_1(a) || mu_2(a))]``.

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
        Of kind ``"distribution"`` or ``"small_cstar"`` (M_d).

    Returns
    -------
    float
        In nats.
    """
    _check_pair(pair)
    if pair.model != "distribution":
        raise ValueError("per_sample_kl is for M_d pairs (under M_f the arms are not sampled)")
    d1, d2 = pair.behaviors
    return float(np.sum(special.rel_entr(d1, d2) + d1 * bernoulli_kl(pair.means[0], pair.means[1])))


def retained_kl(pair: TwoPointPair, scheme: str = "source") -> float:
    """Exact ``KL(P_I1[D \\ U] || P_I2[D \\ U])`` for a request of k uniformly chosen points of a0
    (``"source"``) or of D (``"uniform"``), chosen independently of the rewards.

    M_f: ``sum_a E[N'(a)] kl(mu_1(a) || mu_2(a))``.  M_d, ``"uniform"``: D \\ U is an i.i.d. sample of
    size N - k (Lemma A.8), so ``(N - k) per_sample_kl``.  M_d, ``"source"``: the KL of the law of
    N(a0) (conditioned on N(a0) >= k) plus the expected KL of the retained rewards.  The order of the
    retained points carries no information (uniform given the counts in both instances).

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    scheme : str
        ``"source"`` or ``"uniform"``.

    Returns
    -------
    float
        In nats.
    """
    _check_pair(pair)
    check_choice(scheme, "scheme", REQUEST_SCHEMES)
    kl_arms = bernoulli_kl(pair.means[0], pair.means[1])
    a0, other = pair.source, 1 - pair.source
    if pair.model == "fixed":
        kept = pair.counts.astype(float)
        kept = kept - pair.k * (np.arange(2) == a0) if scheme == "source" else kept * (pair.n - pair.k) / pair.n
        return float(kept @ kl_arms)
    if scheme == "uniform":
        return float((pair.n - pair.k) * per_sample_kl(pair))
    p1, p2 = pair.source_count_pmf(0), pair.source_count_pmf(1)
    n0 = np.arange(pair.n + 1)
    counts_kl = float(np.sum(special.rel_entr(p1, p2)))
    return counts_kl + float(p1 @ (n0 - pair.k).clip(0)) * kl_arms[a0] + float(p1 @ (pair.n - n0)) * kl_arms[other]


# %% tags=["export"]
def paper_kl_bound(pair: TwoPointPair) -> float:
    """The paper's bound on the KL of the retained data: ``10 Delta^2 (N(a0) - k)`` (Theorem 3.7),
    ``10 Delta^2 (N - k) / C*`` (Theorem 3.9), and the closed form
    ``(N - k) (2 - C*)/C* ln(2/(C* - 1))`` for C* in (1, 2).

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.

    Returns
    -------
    float
        In nats.
    """
    _check_pair(pair)
    if pair.kind == "fixed":
        return float(10 * pair.gap ** 2 * pair.retained)
    if pair.kind == "distribution":
        return float(10 * pair.gap ** 2 * pair.retained / pair.c_star)
    c = pair.c_star
    return float(pair.retained * (2 - c) / c * np.log(2 / (c - 1)))

# %% [markdown]
# Revealing the learner's output $\pi(D)$ on top of $D \setminus U$ costs extra KL: `learner_bit_kl`
# computes it exactly, the expected KL between the two instances' conditional laws of the output bit.

# %% tags=["export"]
def learner_bit_kl(pair: TwoPointPair, tau: float | None = None, source_counts=None) -> float:
    """The extra KL of revealing the LCB learner's output ``pi(D)`` (``tau``, default ``1/N``) on top
    of D \\ U (single-source request): ``E_I1[kl(P_I1[pi(D) = a0 | D\\U] || P_I2[pi(D) = a0 | D\\U])]``.

    ``KL(law(D\\U, pi(D))) = retained_kl(pair) + learner_bit_kl(pair)`` (chain rule).  Given D \\ U,
    pi(D) depends only on the deleted reward sum s ~ Binomial(k, mu_I(a0)).  ``source_counts``: the
    values of N(a0) at which pi(D) is revealed (default: all); for Algorithm 3, those where the
    Gaussian branch is possible.  The sum runs over every such N(a0) of positive probability and
    every retained reward sum: about N(a0) x N(other) terms per N(a0).

    Parameters
    ----------
    pair : TwoPointPair
        The two instances.
    tau : float or None
        The LCB learner's confidence level; ``None``: ``1/N``.
    source_counts : array_like of int or None
        The values of ``N(a0)`` at which the output is revealed; ``None``: all.

    Returns
    -------
    float
        The extra KL, in nats (>= 0).
    """
    _check_pair(pair)
    tau = 1 / pair.n if tau is None else check_tau(tau)
    a0, k = pair.source, pair.k
    pmf = pair.source_count_pmf(0)
    revealed = np.flatnonzero(pmf > _TAIL)
    if source_counts is not None:
        revealed = np.intersect1d(revealed, check_int_array(source_counts, "source_counts"))
    total = 0.0
    for n0 in revealed:
        n1 = pair.n - n0
        counts = np.zeros((max(n0, n1) + 1, 2), dtype=np.int64)
        counts[:, a0], counts[:, 1 - a0] = n0, n1
        sums = np.zeros(counts.shape)
        sums[: n0 + 1, a0] = np.arange(n0 + 1)
        f0 = lcb_scores(counts[: n0 + 1], sums[: n0 + 1], tau)[2][:, a0]    # increasing in a0's reward sum
        sums = np.zeros(counts.shape)
        sums[: n1 + 1, 1 - a0] = np.arange(n1 + 1)
        f1 = lcb_scores(counts[: n1 + 1], sums[: n1 + 1], tau)[2][:, 1 - a0]
        # pi(D) = a0 iff f_a0 >= f_other for a0 = 0 (ties go to the lowest index), f_a0 > f_other for a0 = 1
        first = np.searchsorted(f0, f1, side="left" if a0 == 0 else "right")   # smallest total sum choosing a0
        kept = np.arange(n0 - k + 1)
        s_min = first[None, :] - kept[:, None]                                  # (S'(a0), S(other)) -> smallest s
        q = [stats.binom.sf(s_min - 1, k, pair.means[i][a0]) for i in (0, 1)]  # P_I[s >= s_min]
        w = np.outer(stats.binom.pmf(kept, n0 - k, pair.means[0][a0]),
                     stats.binom.pmf(np.arange(n1 + 1), n1, pair.means[0][1 - a0]))
        total += pmf[n0] * float(np.sum(w * bernoulli_kl(q[0], q[1])))
    return total

# %%
from bandit_unlearning.mab.lower_bounds import *  # noqa: F403

pair = pairs["Thm 3.7, Mf"]
D = sample_pair_dataset(pair, 0, rng)
U = DeletionRequest.from_indices(D, sample_pair_request(pair, D, rng))
state = fit_lcb(D)
res = unlearn(state, U, options=UnlearnOptions(method="adaptive", epsilon=0.5, delta=0.05, calibration="analytic", sensitivity="exact"), rng=rng)[1]
print(f"one dataset of I1: N(a) = {D.counts}, reward sums = {D.reward_sums}; request: {U.k} points of arm "
      f"{U.source_arms}, deleted sum {U.rewards.sum():.0f}; learner -> {state.arm}; Algorithm 2 ({res.branch}) -> {res.arm}")
counts, sums, deleted = sample_pair_statistics(pairs["Thm 3.9, Md C*=5"], 1, rng, size=5)
print("five replicates of I2 of the Md pair (N(a), reward sums, deleted sum):")
print(np.column_stack([counts, sums, deleted]).astype(int))
assert np.all(counts[:, 0] >= 5) and np.all(counts.sum(axis=1) == 45) and np.all(deleted <= np.minimum(5, sums[:, 0]))

# %% [markdown]
# **Bounds.** `le_cam_bound` is the chain of Section 2 with any gap, KL and $\delta$; the three
# theorem functions are the printed formulas, with their premises validated: integers
# $1 \le k < N(a_0)$ (resp. $< N$), $\varepsilon > 0$, $C^\star$ in the theorem's range, and — if a
# $\delta$ is given — $\delta \le 1/(8\sqrt e)$.

# %% tags=["export"]
# ----------------------------------------------------------------------------------------- bounds
def le_cam_bound(gap, kl, epsilon, delta=0.0):
    """The two-point chain with any KL bound and delta: for every (epsilon, delta)-unlearning mechanism,
    the average over I1, I2 of ``E[mu_I(a*_I) - mu_I(output)]`` is at least
    ``(gap / 2) e^-epsilon max{0, e^-kl / 2 - 2 delta}`` when ``kl`` bounds the KL between the laws of
    what the reference mechanism reads (D \\ U) under the two instances.  epsilon >= 0 (0 for a (0, 0)
    mechanism such as rollback).  Broadcasts.

    Parameters
    ----------
    gap : float or array_like
        The sub-optimality gap of both instances, in (0, 1].
    kl : float or array_like
        An upper bound (>= 0) on the KL between the two laws of what the reference mechanism reads.
    epsilon : float or array_like
        The unlearning guarantee's ``epsilon >= 0``.
    delta : float or array_like
        The guarantee's ``delta``, in [0, 1).

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    gap, kl = as_real_array(gap, "gap"), as_real_array(kl, "kl")
    if np.any(~np.isfinite(gap)) or np.any((gap <= 0) | (gap > 1)):
        raise ValueError(f"gap must lie in (0, 1], got {gap}")
    if np.any(np.isnan(kl)) or np.any(kl < 0):
        raise ValueError(f"kl must be >= 0, got {kl}")
    eps = _epsilon(epsilon, allow_zero=True)
    delta = as_real_array(delta, "delta")
    if np.any(~np.isfinite(delta)) or np.any((delta < 0) | (delta >= 1)):
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    return _out(gap / 2 * np.exp(-eps) * np.maximum(0.0, np.exp(-kl) / 2 - 2 * delta))


def _counts_k_array(n_name, n, k):
    n, k = check_int_array(n, n_name), check_int_array(k, "k")
    if np.any(k < 1):
        raise ValueError(f"k must be >= 1, got {k}")
    if np.any(n - k < 1):
        raise ValueError(f"the lower bounds need {n_name} - k >= 1 ({n_name} <= k leaves nothing), "
                         f"got {n_name} = {n}, k = {k}")
    return n.astype(float), k.astype(float)


def lower_bound_fixed(n_a0, k, epsilon, delta=None):
    """Theorem 3.7 (M_f): ``SubOpt >= (e^-epsilon / 16) sqrt(1 / (5 e (N(a0) - k)))`` for every
    (epsilon, delta)-unlearning mechanism with ``delta <= 1/(8 sqrt(e))`` (``delta``, if given, is
    checked against that).  Arrays broadcast.

    Parameters
    ----------
    n_a0, k : int or array_like of int
        ``N(a0)`` and the request size (``1 <= k < N(a0)``).
    epsilon : float or array_like
        The unlearning guarantee's ``epsilon >= 0``.
    delta : float, array_like or None
        If given, checked to be at most ``1/(8 sqrt(e))``.

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    n, k = _counts_k_array("n_a0", n_a0, k)
    eps = _epsilon(epsilon)
    _theorem_delta(delta)
    return _out(np.exp(-eps) / 16 * np.sqrt(1 / (5 * np.e * (n - k))))


# %% tags=["export"]
def lower_bound_distribution(n, k, c_star, epsilon, delta=None):
    """Theorem 3.9 (M_d, C* >= 2): ``SubOpt >= (e^-epsilon / 16) sqrt(C* / (5 e (N - k)))`` for every
    (epsilon, delta)-unlearning mechanism with ``delta <= 1/(8 sqrt(e))``.  Arrays broadcast.

    The printed formula follows from the paper's proof only for ``N - k >= 1.25 C*`` (where the cap
    ``Delta <= 1/5`` is inactive); below that it is unproven, and for ``C*/(N - k) > 1280 e e^(2 epsilon)``
    it exceeds 1, so it cannot hold there (chapter A4b, Section 2).

    Parameters
    ----------
    n, k : int or array_like of int
        Dataset and request size (``1 <= k < N``).
    c_star : float or array_like
        Concentrability ``C* >= 2``.
    epsilon : float or array_like
        The unlearning guarantee's ``epsilon >= 0``.
    delta : float, array_like or None
        If given, checked to be at most ``1/(8 sqrt(e))``.

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    n, k = _counts_k_array("n", n, k)
    c = _c_star(c_star, 2.0, np.inf, "Theorem 3.9")
    eps = _epsilon(epsilon)
    _theorem_delta(delta)
    return _out(np.exp(-eps) / 16 * np.sqrt(c / (5 * np.e * (n - k))))


def lower_bound_small_cstar(n, k, c_star, epsilon, kl="paper"):
    """M_d with C* in (1, 2), delta = 0: ``SubOpt >= ((2 - C*)/8) exp(-epsilon - KL)``.

    ``kl="paper"``: the closed form ``(N - k)(2 - C*)/C* ln(2/(C* - 1))`` (an upper bound on the exact
    KL of the paper's construction -- checked in chapter A4b); ``"exact"``: ``(N - k) per_sample_kl``
    (Lemma A.8, uniform deletion; the tightest valid value); or a number: any upper bound on the KL of
    the retained data of the construction actually used.

    Parameters
    ----------
    n, k : int or array_like of int
        Dataset and request size (``1 <= k < N``).
    c_star : float or array_like
        Concentrability ``C*`` in (1, 2).
    epsilon : float or array_like
        The unlearning guarantee's ``epsilon >= 0``.
    kl : str or float
        ``"paper"``, ``"exact"`` or a number, as above.

    Returns
    -------
    float or numpy.ndarray
        The broadcast shape of the arguments; a float for scalars.
    """
    n_, k_ = _counts_k_array("n", n, k)
    c = _c_star(c_star, 1.0, 2.0, "The C* in (1, 2) lower bound")
    eps = _epsilon(epsilon)
    if isinstance(kl, str):
        if kl not in ("paper", "exact"):
            raise ValueError(f"kl must be 'paper', 'exact' or a number >= 0, got {kl!r}")
        if kl == "paper":
            kl = (n_ - k_) * (2 - c) / c * np.log(2 / (c - 1))
        else:
            gap = (2 - c) / 2
            d1, mu1, mu2 = np.array([1 / c, 1 - 1 / c]), np.array([0.5 + gap, 0.5]), np.array([0.5, 0.5 + gap])
            kl = (n_ - k_) * float(np.sum(special.rel_entr(d1, d1[::-1]) + d1 * bernoulli_kl(mu1, mu2)))
    kl = as_real_array(kl, "kl")
    if np.any(np.isnan(kl)) or np.any(kl < 0):
        raise ValueError(f"kl must be >= 0, got {kl}")
    return _out((2 - c) / 8 * np.exp(-eps - kl))

# %%
from bandit_unlearning.mab.lower_bounds import *  # noqa: F403

print(f"DELTA_MAX = 1/(8 sqrt(e)) = {DELTA_MAX:.6f}")
print(f"Thm 3.7, N(a0)=40, k=20, eps=0.5: {lower_bound_fixed(40, 20, 0.5, delta=0.05):.6f}")
print(f"Thm 3.9, N=45, k=5, C*=5, eps=0.5: {lower_bound_distribution(45, 5, 5.0, 0.5):.6f}")
print(f"C* = 1.5, N=8, k=3, eps=0.1: {lower_bound_small_cstar(8, 3, 1.5, 0.1):.6f} (paper's KL), "
      f"{lower_bound_small_cstar(8, 3, 1.5, 0.1, kl='exact'):.6f} (exact KL, uniform deletion)")
for what, call in {
    "delta above 1/(8 sqrt e)": lambda: lower_bound_fixed(40, 20, 0.5, delta=0.1),
    "eps = 0": lambda: lower_bound_fixed(40, 20, 0.0),
    "N(a0) <= k": lambda: lower_bound_fixed(20, 20, 0.5),
    "C* < 2 in Thm 3.9": lambda: lower_bound_distribution(45, 5, 1.9, 0.5),
    "C* >= 2 in the (1, 2) bound": lambda: lower_bound_small_cstar(8, 3, 2.5, 0.1),
}.items():
    try:
        call()
        raise AssertionError(f"{what} was accepted")
    except ValueError as err:
        print(f"refused ({what}): {err}")

# %% [markdown]
# **Next.** The constructions, divergences and bounds above are the module
# `bandit_unlearning.mab.lower_bounds`.  Chapter [A4b](04b_lower_bound_checks.ipynb) computes their KL
# divergences exactly, finds where the printed formulas follow from their proofs, and checks every
# unlearning mechanism of the package against the bounds.
