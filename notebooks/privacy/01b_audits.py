# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.privacy.audit
# ---

# %% [markdown]
# # Chapter P1b — Auditing $(\varepsilon, \delta)$: the hockey-stick divergence and a Monte Carlo auditor
#
# *Paper A, Definition 2.1, made checkable.  Exports `bandit_unlearning.privacy.audit`; uses
# `bandit_unlearning.privacy.gaussian` of chapter [P1a](01a_gaussian_mechanism.ipynb).*
#
# Chapter [P1a](01a_gaussian_mechanism.ipynb) calibrated the Gaussian mechanism and computed its exact
# privacy profile.  This chapter builds the two auditing tools every later chapter uses: the
# **hockey-stick divergence** of two distributions over a finite set — the exact $\delta$ at a given
# $\varepsilon$; unlearned arms are such distributions (Section 1) — and a **Monte Carlo auditor**
# that turns samples of two mechanisms' outputs into a Clopper–Pearson lower confidence bound on the
# $\varepsilon$ they actually achieve (Section 2).  Both are checked on Gaussian mechanisms, correctly
# noised and under-noised, and at the numerical extremes of P1a's calibration (Section 2.4).

# %%
import math
from fractions import Fraction

import numpy as np
from scipy import optimize, special, stats

from bandit_unlearning.privacy.gaussian import (
    analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon, gaussian_gamma,
)

rng = np.random.default_rng(20260601)

# %% [markdown]
# ## 1. Exact audits: the hockey-stick divergence
#
# Unlearning mechanisms in this project output an **arm**: a distribution over a finite set.  For two
# such distributions $p, q$ the smallest $\delta$ satisfying both inequalities of Definition 2.1 at
# level $\varepsilon$ is
# $$\delta_{p,q}(\varepsilon) = \max\Big(\sum_x (p_x - e^{\varepsilon} q_x)_+,\ \sum_x (q_x - e^{\varepsilon}p_x)_+\Big),$$
# because $\sup_A (P(A) - e^{\varepsilon}Q(A))$ is attained at $A = \{x: p_x > e^{\varepsilon}q_x\}$.
# `hockey_stick_epsilon` inverts it (the smallest $\varepsilon \ge 0$ with $\delta_{p,q}(\varepsilon)\le\delta$;
# infinite when an outcome impossible on one side has probability above $\delta$ on the other).
#
# ## 2. Monte Carlo audits
#
# When the distributions are not available in closed form, we sample.  For an event $E$ fixed in
# advance, $p = P[M_a \in E]$, $q = P[M_b\in E]$, $(\varepsilon,\delta)$-indistinguishability forces
# $p \le e^{\varepsilon}q + \delta$, i.e. $\varepsilon \ge \ln\frac{p - \delta}{q}$.  With a
# Clopper–Pearson lower bound $\underline p$ on $p$ and upper bound $\overline q$ on $q$,
# $\varepsilon \ge \ln\frac{\underline p - \delta}{\overline q}$ holds whenever both bounds hold.  The
# auditor searches a family of $H$ hypotheses (events times the two directions $a \to b$, $b \to a$)
# and takes the largest bound; each of the $2H$ one-sided Clopper–Pearson bounds is taken at level
# $\alpha/(2H)$, $\alpha = 1 -$ `confidence` (Bonferroni), so **all** of them hold simultaneously with
# probability $\ge$ `confidence` and the reported `epsilon_lower` is a valid lower confidence bound
# on the true $\varepsilon$ at $\delta$ (floored at 0).  This is the standard construction of DP
# auditing tools (e.g. Jagielski et al. 2020; Nasr et al. 2021).

# %% tags=["export:bandit_unlearning.privacy.audit"]
"""Exact and Monte Carlo audits of (epsilon, delta)-indistinguishability (Paper A Definition 2.1, Definition 2.1).

- ``hockey_stick_delta(p, q, epsilon)``: the smallest delta for which two distributions over a
  finite set satisfy both inequalities at ``epsilon`` (exact audit of mechanisms with finite output).
- ``hockey_stick_epsilon(p, q, delta)``: its inverse in epsilon.
- ``audit_epsilon(outcomes_a, outcomes_b, delta, ...)``: a Clopper-Pearson lower confidence bound on
  the epsilon two mechanisms actually achieve at ``delta``, from samples of their outputs, searched
  over a family of events with a Bonferroni correction.
"""

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from bandit_unlearning.checks import (
    as_array, as_real_array, as_real, check_bool, check_choice, check_int, check_probability, check_real, check_size,
)
from bandit_unlearning.privacy.gaussian import check_delta
from bandit_unlearning.shapes import check_broadcast

DISTRIBUTION_ATOL = 1e-9
MAX_EVENT_ENTRIES = 5_000_000   # events x outcomes of the default event family (``subset_events``)


def check_distributions(p, q):
    """Validate two probability vectors over the same finite set (shape ``(..., m)``, summing to 1
    along the last axis within ``DISTRIBUTION_ATOL``; tiny negative rounding is clipped to 0).

    Parameters
    ----------
    p, q : array_like
        Distributions of one shape ``(..., m)``, ``m >= 1`` outcomes on the last axis.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``p`` and ``q`` as float arrays, clipped at 0.
    """
    p, q = as_real_array(p, "p"), as_real_array(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"p and q must have at least one outcome, got shape {p.shape}")
    for name, x in (("p", p), ("q", q)):
        if not np.all(np.isfinite(x)) or np.any(x < -DISTRIBUTION_ATOL):
            raise ValueError(f"{name} must be finite and non-negative")
        if np.any(np.abs(x.sum(axis=-1) - 1) > DISTRIBUTION_ATOL):
            raise ValueError(f"{name} must sum to 1 over its last axis (got sums {x.sum(axis=-1)})")
    return np.clip(p, 0, None), np.clip(q, 0, None)


def _one_sided(p, q, factor):
    """``sum_x (p_x - factor q_x)_+`` without ``inf * 0``."""
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.where(q > 0, p - factor[..., None] * q, p)
    return np.clip(excess, 0, None).sum(axis=-1)


# %% [markdown]
# The hockey-stick divergence in both directions, and its inverse in $\varepsilon$.

# %% tags=["export:bandit_unlearning.privacy.audit"]
def hockey_stick_delta(p, q, epsilon):
    """``max(sum (p - e^eps q)_+, sum (q - e^eps p)_+)``: the exact delta of the pair (p, q) at epsilon.

    ``p`` and ``q`` are distributions over the same finite set (last axis); leading axes and an
    array ``epsilon`` (>= 0) broadcast.  Returns a float for a single pair and scalar epsilon.

    Parameters
    ----------
    p, q : array_like
        Distributions of one shape ``(..., m)`` (as in ``check_distributions``).
    epsilon : float or array_like
        Where the divergence is taken, >= 0 (``inf`` allowed); broadcasts against the leading axes.

    Returns
    -------
    float or numpy.ndarray
        The exact delta, in [0, 1], of the broadcast leading shape.
    """
    p, q = check_distributions(p, q)
    epsilon = as_real_array(epsilon, "epsilon")
    if not np.all(np.isfinite(epsilon) | (epsilon == np.inf)) or np.any(epsilon < 0) or np.any(np.isnan(epsilon)):
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    try:
        shape = np.broadcast_shapes(p.shape[:-1], epsilon.shape)
    except ValueError:
        raise ValueError(f"epsilon (shape {epsilon.shape}) must broadcast against the leading axes of p and q "
                         f"{p.shape[:-1]}") from None
    p, q = np.broadcast_to(p, shape + p.shape[-1:]), np.broadcast_to(q, shape + q.shape[-1:])
    with np.errstate(over="ignore"):
        factor = np.broadcast_to(np.exp(epsilon), shape)
    out = np.maximum(_one_sided(p, q, factor), _one_sided(q, p, factor))
    return float(out) if out.ndim == 0 else out


def hockey_stick_epsilon(p, q, delta) -> float:
    """The smallest epsilon >= 0 with ``hockey_stick_delta(p, q, epsilon) <= delta`` (``inf`` if none).

    Parameters
    ----------
    p, q : array_like
        Two distributions over the same finite set (1-D).
    delta : float
        The target delta, in the open interval (0, 1).

    Returns
    -------
    float
        The smallest such epsilon (``inf`` when the mass one distribution puts where the other has none
        exceeds ``delta``).
    """
    p, q = check_distributions(p, q)
    if p.ndim != 1:
        raise ValueError(f"hockey_stick_epsilon takes one pair of 1-D distributions, got shape {p.shape}")
    delta = check_delta(delta)
    if hockey_stick_delta(p, q, 0.0) <= delta:
        return 0.0
    if max(p[q == 0].sum(), q[p == 0].sum()) > delta:
        return math.inf
    excess = lambda eps: hockey_stick_delta(p, q, eps) - delta
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=500))


# %% [markdown]
# Clopper–Pearson bounds on a binomial proportion: the lower bound $\underline p$ and upper bound
# $\overline q$ that the audit above combines.

# %% tags=["export:bandit_unlearning.privacy.audit"]
def _binomial_counts(successes, trials, alpha):
    """Whole numbers ``0 <= successes <= trials`` (``trials >= 1``, arrays broadcast) and ``alpha`` in (0, 1)."""
    k, n = as_array(successes, "successes"), as_array(trials, "trials")
    if k.dtype.kind == "b" or n.dtype.kind == "b":
        raise TypeError("successes and trials must be counts (integers), not booleans")
    k, n = k.astype(float), n.astype(float)
    for name, v in (("successes", k), ("trials", n)):
        if not np.all(np.isfinite(v)) or np.any(np.mod(v, 1) != 0):
            raise ValueError(f"{name} must hold whole numbers, got {v}")
    check_broadcast(successes=k, trials=n)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got successes={k}, trials={n}")
    return k, n, check_probability(alpha, "alpha")


CP_TAIL_MARGIN = 1e-12
"""Relative slack added to scipy's binomial tail when a Clopper-Pearson bound is verified (above the
evaluation error of its distribution functions; checked against exact rational arithmetic in the tests)."""


_TINY_TAIL = 1e-280


def _log_tail_bound(k, n, log_p, log_q, ratio):
    """Upper bound on ``ln P[Bin(n, p) >= k]`` (``ratio`` = (n-k) p / ((k+1) q)) or ``ln P[Bin(n, p) <= k]``
    (``ratio`` = k q / ((n-k+1) p)): the k-th term times the geometric series ``1/(1 - ratio)``, plus 8 ulp
    of every summand (inf where ``ratio >= 1``, where it bounds nothing)."""
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = k * log_p, (n - k) * log_q
        a, b = np.where(k == 0, 0.0, a), np.where(n == k, 0.0, b)
        term = log_choose + a + b
        err = 8 * np.finfo(float).eps * (special.gammaln(n + 1) + np.abs(a) + np.abs(b) + 4)
        return np.where(ratio < 1, term - np.log1p(-np.minimum(ratio, 1.0)) + err, np.inf)


def _log_at_least(k, n, p):
    """An upper bound on ``ln P[Bin(n, p) >= k]``: scipy's tail where it is a normal double (with the relative
    slack CP_TAIL_MARGIN), else -- a tail below 1e-280, where the binomial terms are subnormal and lose
    digits -- the geometric bound above."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        tail = np.where(p > 0.5, stats.binom.cdf(n - k, n, 1.0 - p), stats.binom.sf(k - 1, n, p))
        log_p, log_q = np.log(p), np.log1p(-p)
        ratio = (n - k) / (k + 1) * np.exp(log_p - log_q)
        return np.where(tail > _TINY_TAIL, np.log(tail) + CP_TAIL_MARGIN,
                        np.minimum(_log_tail_bound(k, n, log_p, log_q, ratio), np.log(tail + _TINY_TAIL)))


def _log_at_most(k, n, p):
    """An upper bound on ``ln P[Bin(n, p) <= k]`` (for ``p > 1/2`` through the failures, ``1 - p`` being
    exact there, so that the tail stays accurate within a few ulp of 1; tiny tails as above)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        tail = np.where(p > 0.5, stats.binom.sf(n - k - 1, n, 1.0 - p), stats.binom.cdf(k, n, p))
        log_p, log_q = np.log(p), np.log1p(-p)
        ratio = k / (n - k + 1) * np.exp(log_q - log_p)
        return np.where(tail > _TINY_TAIL, np.log(tail) + CP_TAIL_MARGIN,
                        np.minimum(_log_tail_bound(k, n, log_p, log_q, ratio), np.log(tail + _TINY_TAIL)))


def _outward(bound, tail, alpha, toward: float):
    """``bound`` moved toward ``toward`` (1: an upper bound, 0: a lower bound) until ``log_tail(bound) <=
    ln alpha`` (``log_tail``: an upper bound on the log tail): steps of 1, 2, 4, ... ulp, so at most about
    60 evaluations; the end point itself always passes (its tail is 0)."""
    bound = np.where(np.isfinite(bound), np.clip(bound, 0.0, 1.0), toward)
    step = np.maximum(np.spacing(bound), 5e-324)
    limit = math.log(alpha)
    for _ in range(1100):
        bad = ~(tail(bound) <= limit)
        if not np.any(bad):
            return bound
        moved = np.clip(bound + step if toward == 1.0 else bound - step, 0.0, 1.0)
        # a step past 1 is clipped anyway; capping it keeps 1,100 doublings from overflowing to inf
        bound, step = np.where(bad, moved, bound), np.where(bad, np.minimum(2 * step, 1.0), step)
    return np.where(tail(bound) <= limit, bound, toward)        # pragma: no cover (the end point passes)

# %% [markdown]
# The one-sided Clopper–Pearson bounds: scipy's beta quantile, then verified on the binomial tail it
# inverts and moved outward until the tail bound holds, so a bound is never optimistic by rounding.

# %% tags=["export:bandit_unlearning.privacy.audit"]
def clopper_pearson_lower(successes, trials, alpha):
    """One-sided Clopper-Pearson lower bound: ``P[p < bound] <= alpha`` (0 when there is no success).

    ``beta.ppf(alpha, k, n - k + 1)``, then verified on the binomial tail it inverts -- ``P[Bin(n, bound)
    >= k] <= alpha`` -- and moved down (outward) until it holds, so the bound is conservative at every
    alpha, not only where the quantile function is accurate.

    Parameters
    ----------
    successes, trials : int or array_like of int
        Whole numbers ``0 <= successes <= trials``, ``trials >= 1``; they broadcast.
    alpha : float
        The error level, in (0, 1).

    Returns
    -------
    numpy.ndarray
        The lower bounds, in [0, 1], of the broadcast shape.
    """
    k, n, alpha = _binomial_counts(successes, trials, alpha)
    with np.errstate(invalid="ignore"):
        bound = np.broadcast_to(stats.beta.ppf(alpha, k, n - k + 1), np.broadcast_shapes(k.shape, n.shape))
    kk, nn = np.broadcast_arrays(k, n)
    bound = _outward(np.where(kk > 0, bound, 0.0), lambda p: np.where(kk > 0, _log_at_least(kk, nn, p), -np.inf),
                     alpha, 0.0)
    return bound


def clopper_pearson_upper(successes, trials, alpha):
    """One-sided Clopper-Pearson upper bound: ``P[p > bound] <= alpha`` (1 when every trial succeeded).

    The upper ``alpha`` quantile of Beta(k + 1, n - k) is ``beta.isf(alpha)``: ``beta.ppf(1 - alpha)`` would
    first round ``1 - alpha`` and miss small alphas in either direction.  The quantile is then verified on
    the binomial tail it inverts -- ``P[Bin(n, bound) <= k] <= alpha`` -- and moved up (outward) until it
    holds: near 1 (``k`` close to ``n``, tiny alpha) the float grid is coarse against ``1 - bound`` and the
    nearest double can lie on the wrong side.

    Parameters
    ----------
    successes, trials : int or array_like of int
        Whole numbers ``0 <= successes <= trials``, ``trials >= 1``; they broadcast.
    alpha : float
        The error level, in (0, 1).

    Returns
    -------
    numpy.ndarray
        The upper bounds, in [0, 1], of the broadcast shape.
    """
    k, n, alpha = _binomial_counts(successes, trials, alpha)
    with np.errstate(invalid="ignore"):
        bound = np.broadcast_to(stats.beta.isf(alpha, k + 1, n - k), np.broadcast_shapes(k.shape, n.shape))
    kk, nn = np.broadcast_arrays(k, n)
    bound = _outward(np.where(kk < nn, bound, 1.0), lambda p: np.where(kk < nn, _log_at_most(kk, nn, p), -np.inf),
                     alpha, 1.0)
    return bound


# %% [markdown]
# Events: for integer outputs in $\{0,\dots,m-1\}$ (arms), all $2^m - 2$ non-trivial subsets when
# $m \le$ `max_subset_outcomes` (10), else every singleton and its complement; for real outputs, a
# list of events given in advance, e.g. `threshold_events(ts)` = $\{y > t\}$ and $\{y \le t\}$.  Events
# must not be chosen by looking at the same samples (that would void the Bonferroni argument).  When
# `n_outcomes` is not given it is read off the samples as the largest arm seen plus one — pass it
# explicitly for a strictly data-independent family.

# %% tags=["export:bandit_unlearning.privacy.audit"]
@dataclass(frozen=True)
class ThresholdEvent:
    """The event ``{y > threshold}`` (``above=True``) or ``{y <= threshold}`` for real outputs.

    Parameters
    ----------
    threshold : float
        The threshold ``t`` (not nan).
    above : bool, default True
        ``True`` for ``{y > t}``, ``False`` for ``{y <= t}``.
    """

    threshold: float
    above: bool = True

    def __post_init__(self):
        threshold = as_real(self.threshold, "threshold")
        if np.isnan(threshold):
            raise ValueError("threshold must be a number, got nan")
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "above", check_bool(self.above, "above"))

    def __call__(self, outcomes):
        """Membership of each outcome.

        Parameters
        ----------
        outcomes : array_like of float
            Real outputs of a mechanism.

        Returns
        -------
        numpy.ndarray of bool
            ``True`` where the outcome lies in the event, of the shape of ``outcomes``.
        """
        outcomes = as_array(outcomes, "outcomes").astype(float)
        return outcomes > self.threshold if self.above else outcomes <= self.threshold

    def __str__(self) -> str:
        return f"{{y {'>' if self.above else '<='} {self.threshold:g}}}"


def threshold_events(thresholds) -> list:
    """``{y > t}`` and ``{y <= t}`` for every ``t`` (to be fixed before looking at the samples).

    Parameters
    ----------
    thresholds : float or array_like of float
        The thresholds ``t`` (no nan).

    Returns
    -------
    list of ThresholdEvent
        ``2 * len(thresholds)`` events, ``{y > t}`` before ``{y <= t}`` for each ``t`` in order.
    """
    thresholds = as_real_array(thresholds, "thresholds").ravel()
    if np.any(np.isnan(thresholds)):
        raise ValueError("thresholds must be numbers (no nan)")
    return [ThresholdEvent(float(t), above) for t in thresholds for above in (True, False)]


# %% [markdown]
# What an audit returns: its bound, the hypothesis that gave it, and the counts behind it.

# %% tags=["export:bandit_unlearning.privacy.audit"]
@dataclass(frozen=True)
class AuditResult:
    """Outcome of ``audit_epsilon``: the bound and the best of the hypotheses searched.

    Parameters
    ----------
    epsilon_lower : float
        Lower confidence bound on the epsilon achieved at ``delta`` (>= 0, ``inf`` allowed).
    delta : float
        The delta of the audit, in (0, 1).
    confidence : float
        The confidence level of the bound, in (0, 1).
    event : object
        The event of the best hypothesis (a tuple of outcomes or a callable such as ``ThresholdEvent``).
    direction : {"a>b", "b>a"}
        ``"a>b"``: ``P_a(E) <= e^eps P_b(E) + delta`` is the violated side; ``"b>a"`` the other.
    count_a, count_b : int
        Samples of each mechanism that fell in ``event``.
    n_a, n_b : int
        Samples of each mechanism (at least the counts).
    p_lower, q_upper : float
        Clopper-Pearson lower bound of the larger side and upper bound of the other, in [0, 1].
    n_hypotheses : int
        Events x 2 directions searched (the Bonferroni factor).
    """

    epsilon_lower: float
    delta: float
    confidence: float
    event: Any
    direction: str
    count_a: int
    count_b: int
    n_a: int
    n_b: int
    p_lower: float
    q_upper: float
    n_hypotheses: int

    def __post_init__(self):
        check_real(self.epsilon_lower, "epsilon_lower", 0, allow_inf=True)
        check_delta(self.delta)
        check_probability(self.confidence, "confidence")
        check_choice(self.direction, "direction", ("a>b", "b>a"))
        for name in ("count_a", "count_b", "n_a", "n_b", "n_hypotheses"):
            check_int(getattr(self, name), name, 0)
        if self.count_a > self.n_a or self.count_b > self.n_b:
            raise ValueError(f"counts must not exceed the sample sizes, got {self.count_a}/{self.n_a} and "
                             f"{self.count_b}/{self.n_b}")
        for name in ("p_lower", "q_upper"):
            check_real(getattr(self, name), name, 0, 1)


# %% [markdown]
# The audit: the default event family for arm-valued outputs, and `audit_epsilon`, which takes the
# largest Bonferroni-corrected bound over events and both directions.

# %% tags=["export:bandit_unlearning.privacy.audit"]
def _is_integer_array(x: np.ndarray) -> bool:
    return np.issubdtype(x.dtype, np.integer) or (
        np.issubdtype(x.dtype, np.floating) and np.all(np.isfinite(x)) and np.all(np.mod(x, 1) == 0))


def subset_events(n_outcomes: int, max_subset_outcomes: int = 10) -> list:
    """The default event family for outputs in ``range(n_outcomes)``: every non-empty proper subset
    if ``n_outcomes <= max_subset_outcomes``, else every singleton and its complement (tuples).
    Refused (ValueError) when events x outcomes would exceed ``MAX_EVENT_ENTRIES``.

    Parameters
    ----------
    n_outcomes : int
        The number of possible outputs, >= 0 (fewer than 2 give no event).
    max_subset_outcomes : int, default 10
        Up to this many outcomes, every subset is an event.

    Returns
    -------
    list of tuple
        The events, each a tuple of outcomes.
    """
    n_outcomes = check_int(n_outcomes, "n_outcomes", 0)
    max_subset_outcomes = check_int(max_subset_outcomes, "max_subset_outcomes", 0)
    if n_outcomes < 2:
        return []
    n_events = 2**n_outcomes - 2 if n_outcomes <= max_subset_outcomes else 2 * n_outcomes
    check_size(n_events * n_outcomes, MAX_EVENT_ENTRIES, f"the default events over {n_outcomes} outcomes")
    outcomes = range(n_outcomes)
    if n_outcomes <= max_subset_outcomes:
        return [s for r in range(1, n_outcomes) for s in itertools.combinations(outcomes, r)]
    return [(a,) for a in outcomes] + [tuple(b for b in outcomes if b != a) for a in outcomes]

# %% [markdown]
# **The audit.** `audit_epsilon` turns samples of two mechanisms into a lower confidence bound on the
# $\varepsilon$ they achieve at $\delta$: for each event and direction, $\varepsilon \ge
# \ln((p_{\text{lower}} - \delta) / q_{\text{upper}})$.  First the counts: how many samples of each
# mechanism fall in each event of the family (for threshold events, one sort of each sample and a
# binary search per threshold instead of a pass over the samples per event).

# %% tags=["export:bandit_unlearning.privacy.audit"]
def _event_counts(a, b, events, n_outcomes, max_subset_outcomes):
    """``(events, count_a, count_b)``: the event family (``subset_events`` when ``events`` is None)
    and how many samples of ``a`` and of ``b`` fall in each event, with the checks of ``audit_epsilon``."""
    if events is None:
        if a.dtype.kind not in "iuf" or b.dtype.kind not in "iuf":
            raise TypeError("events=None needs integer outcomes (arms), got dtypes "
                            f"{a.dtype} and {b.dtype}; for other outputs pass events")
        if not (_is_integer_array(a) and _is_integer_array(b)) or min(a.min(), b.min()) < 0:
            raise ValueError("events=None needs non-negative integer outcomes (arms); for real outputs "
                             "pass events, e.g. threshold_events(thresholds)")
        seen = int(max(a.max(), b.max())) + 1
        if n_outcomes is None:
            n_outcomes = seen
        elif check_int(n_outcomes, "n_outcomes", 0) < seen:
            raise ValueError(f"n_outcomes = {n_outcomes} but an outcome {seen - 1} was observed")
        events = subset_events(int(n_outcomes), max_subset_outcomes)
        masks = np.zeros((len(events), int(n_outcomes)))
        for i, e in enumerate(events):
            masks[i, list(e)] = 1.0
        count_a = masks @ np.bincount(a.astype(np.int64), minlength=int(n_outcomes))
        count_b = masks @ np.bincount(b.astype(np.int64), minlength=int(n_outcomes))
    else:
        if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
            raise TypeError(f"events must be a list of events, got {type(events).__name__}")
        events = list(events)
        for e in events:
            if not callable(e) and (isinstance(e, (str, bytes)) or not hasattr(e, "__iter__")):
                raise TypeError(f"each event must be a collection of outcomes or a callable, got {e!r}")
        if events and all(type(e) is ThresholdEvent for e in events):   # one sort, not a pass per event
            return events, _threshold_counts(a, events), _threshold_counts(b, events)
        member = lambda e, x: np.asarray(e(x), dtype=bool) if callable(e) else np.isin(x, list(e))
        count_a = np.array([member(e, a).sum() for e in events], dtype=float)
        count_b = np.array([member(e, b).sum() for e in events], dtype=float)
    return events, count_a, count_b


def _threshold_counts(outcomes, events) -> np.ndarray:
    """How many ``outcomes`` fall in each ``ThresholdEvent`` of ``events``, as calling each event would
    count them (the same conversion to float; nan in no event): one sort and a binary search per event."""
    x = np.sort(as_array(outcomes, "outcomes").astype(float))      # nan sorts last
    at_most = np.searchsorted(x, [e.threshold for e in events], side="right")
    above = np.count_nonzero(~np.isnan(x)) - at_most
    return np.where([e.above for e in events], above, at_most).astype(float)


# %% [markdown]
# `audit_epsilon` itself: one pair of Clopper–Pearson bounds per event and direction, at the
# Bonferroni-corrected level, and the largest bound they give.

# %% tags=["export:bandit_unlearning.privacy.audit"]
def audit_epsilon(outcomes_a, outcomes_b, delta, *, confidence: float = 0.95, events=None,
                  n_outcomes: int | None = None, max_subset_outcomes: int = 10) -> AuditResult:
    """Clopper-Pearson lower confidence bound on the epsilon achieved at ``delta`` by two mechanisms,
    from i.i.d. samples ``outcomes_a`` of one and ``outcomes_b`` of the other.

    For each event E and each direction, ``eps >= ln((p_lower - delta) / q_upper)`` with one-sided
    Clopper-Pearson bounds at level ``(1 - confidence) / (2 H)``, ``H`` = 2 x number of events
    (Bonferroni), so the maximum over the family is a valid bound with probability >= ``confidence``.

    ``events``: None for integer outputs (``subset_events(n_outcomes)``; ``n_outcomes`` defaults to
    the largest output seen + 1), or a list whose items are collections of output values or
    callables mapping an array of outputs to a boolean array (e.g. ``threshold_events``).

    Parameters
    ----------
    outcomes_a, outcomes_b : array_like
        Samples of the two mechanisms' outputs (non-empty; not masked arrays).
    delta : float
        The delta at which epsilon is bounded, in (0, 1).
    confidence : float, default 0.95
        The probability, in (0, 1), with which the bound holds.
    events : list, optional
        The event family (see above); None for the default over integer outputs.
    n_outcomes : int, optional
        The number of possible integer outputs when ``events`` is None (at least the largest seen + 1).
    max_subset_outcomes : int, default 10
        Passed to ``subset_events``.

    Returns
    -------
    AuditResult
        The bound and the hypothesis that gave it.
    """
    delta = check_delta(delta)
    confidence = check_probability(confidence, "confidence")
    max_subset_outcomes = check_int(max_subset_outcomes, "max_subset_outcomes", 0)
    for name, outcomes in (("outcomes_a", outcomes_a), ("outcomes_b", outcomes_b)):
        if isinstance(outcomes, np.ma.MaskedArray):
            raise TypeError(f"{name} must not be a masked array (its mask would be ignored); pass {name}.compressed()")
    a, b = np.asarray(outcomes_a).ravel(), np.asarray(outcomes_b).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("outcomes_a and outcomes_b must be non-empty")
    events, count_a, count_b = _event_counts(a, b, events, n_outcomes, max_subset_outcomes)
    if not events:
        raise ValueError("the event family is empty (a single possible outcome cannot be audited)")
    n_hyp = 2 * len(events)
    level = (1 - confidence) / (2 * n_hyp)
    lo_a, hi_a = clopper_pearson_lower(count_a, a.size, level), clopper_pearson_upper(count_a, a.size, level)
    lo_b, hi_b = clopper_pearson_lower(count_b, b.size, level), clopper_pearson_upper(count_b, b.size, level)
    p_lower = np.concatenate([lo_a, lo_b])          # hypotheses: first all "a>b", then all "b>a"
    q_upper = np.concatenate([hi_b, hi_a])
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = np.where(p_lower > delta, np.log((p_lower - delta) / q_upper), -np.inf)
    best = int(np.argmax(bounds))
    i = best % len(events)
    return AuditResult(
        epsilon_lower=float(max(bounds[best], 0.0)), delta=delta, confidence=confidence,
        event=events[i], direction="a>b" if best < len(events) else "b>a",
        count_a=int(count_a[i]), count_b=int(count_b[i]), n_a=int(a.size), n_b=int(b.size),
        p_lower=float(p_lower[best]), q_upper=float(q_upper[best]), n_hypotheses=n_hyp,
    )


# %%
from bandit_unlearning.privacy.audit import *  # noqa: F403  (the module generated from the cells above)

# %% [markdown]
# ### 2.1 Exact: the released half-line of a Gaussian mechanism
#
# Releasing only the bit $\mathbb 1\{y < y_0\}$ of a Gaussian mechanism, with $y_0$ the threshold of
# the derivation, loses nothing: the hockey-stick divergence of the two Bernoulli outputs equals the
# Gaussian profile.  Any other threshold gives less (post-processing).  This ties the two modules
# together through independent formulas.

# %%
Delta, eps = 1.0, 1.0
sigma = analytic_gaussian_sigma(Delta, eps, 1e-5)


def released_bit(threshold, sigma=sigma, shift=Delta):
    """Distributions of 1{y < threshold} under N(0, s^2) and N(shift, s^2)."""
    pa, pb = stats.norm.cdf(threshold / sigma), stats.norm.cdf((threshold - shift) / sigma)
    return np.array([pa, 1 - pa]), np.array([pb, 1 - pb])


y0 = Delta / 2 - eps * sigma**2 / Delta
at_y0 = hockey_stick_delta(*released_bit(y0), eps)
elsewhere = max(hockey_stick_delta(*released_bit(y0 + s), eps) for s in np.linspace(-3, 3, 61) if s != 0)
print(f"Gaussian profile {gaussian_delta(sigma, Delta, eps):.6e};  bit at y0: {at_y0:.6e};  best other threshold: {elsewhere:.6e}")
assert abs(at_y0 / gaussian_delta(sigma, Delta, eps) - 1) < 1e-9 and elsewhere < at_y0

# %% [markdown]
# ### 2.2 Monte Carlo: a correctly noised and an under-noised Gaussian mechanism
#
# Claim: $(\varepsilon, \delta) = (1, 10^{-5})$ with $\Delta = 1$ and the analytic $\sigma \approx 3.73$.  We
# sample $n = 10^6$ outputs of $\mathcal N(0,\sigma^2)$ and of $\mathcal N(\Delta, \sigma^2)$ and audit them on
# 61 thresholds fixed in advance (122 events, 244 hypotheses), at confidence $1 - 10^{-6}$.
#
# - **Soundness.** The true $\varepsilon$ of the mechanism at $\delta$ is `gaussian_epsilon` = 1, and
#   no event can show more, so `epsilon_lower` $\le 1$ fails with probability at most $10^{-6}$.
# - **Power.** With half the noise the true $\varepsilon$ at $\delta$ is about 2.15, and the audit must
#   certify that the claim $\varepsilon = 1$ is false: `epsilon_lower` $> 1$.  We size this exactly:
#   for one threshold $t^\star$ (chosen before sampling, from the known distributions, and added to
#   the family: 60 grid thresholds + $t^\star$) we compute the $10^{-7}$ quantiles of the two
#   binomial counts and check that even at those unlucky counts the Clopper–Pearson bound at the
#   Bonferroni level exceeds 1; the audit's maximum is at least this event's bound, so the power
#   check fails with probability $< 2\times 10^{-7}$.

# %%
claim_eps, claim_delta, n, conf = 1.0, 1e-5, 1_000_000, 1 - 1e-6
sigma = analytic_gaussian_sigma(Delta, claim_eps, claim_delta)
thresholds = np.linspace(-8 * sigma, 0.0, 60)          # fixed before sampling
events = threshold_events(thresholds)

# exact power sizing for the under-noised mechanism: choose t* (before sampling, from the known
# distributions) to maximise the bound at the unlucky 1e-7 quantiles of the two counts
half = sigma / 2
level = (1 - conf) / (2 * 2 * (len(events) + 2))        # Bonferroni level once {y <= t*}, {y > t*} are added


def unlucky_bound(t):
    pa, pb = stats.norm.cdf(t / half), stats.norm.cdf((t - Delta) / half)
    ka_low, kb_high = stats.binom.ppf(1e-7, n, pa), stats.binom.isf(1e-7, n, pb)
    p_lo, q_hi = clopper_pearson_lower(ka_low, n, level), clopper_pearson_upper(kb_high, n, level)
    return math.log((p_lo - claim_delta) / q_hi) if p_lo > claim_delta else -math.inf


candidates = np.linspace(-6 * half, -half, 101)
t_star = float(candidates[np.argmax([unlucky_bound(t) for t in candidates])])
print(f"under-noised, event {{y <= {t_star:.3f}}}: bound at the 1e-7 quantiles of the counts = "
      f"{unlucky_bound(t_star):.3f} > {claim_eps}")
assert unlucky_bound(t_star) > claim_eps
events = threshold_events(np.sort(np.append(thresholds, t_star)))   # t* joins the fixed family
assert math.isclose(level, (1 - conf) / (2 * 2 * len(events)))

for name, s in (("analytic sigma", sigma), ("half sigma    ", half)):
    out_a = rng.normal(0.0, s, n)
    out_b = rng.normal(Delta, s, n)
    res = audit_epsilon(out_a, out_b, claim_delta, confidence=conf, events=events)
    true_eps = gaussian_epsilon(s, Delta, claim_delta)
    print(f"{name}: true eps = {true_eps:.3f}; audit lower bound = {res.epsilon_lower:.3f} "
          f"(event {res.event}, {res.direction}, counts {res.count_a}/{res.count_b}, {res.n_hypotheses} hypotheses)")
    assert res.epsilon_lower <= true_eps
    if s == half:
        assert res.epsilon_lower > claim_eps        # the under-noised mechanism is caught
    else:
        assert res.epsilon_lower <= claim_eps       # the correct one is not

# %% [markdown]
# ### 2.3 Monte Carlo on a finite output set
#
# A mechanism with three outputs (think: three arms): randomised response-like distributions $p, q$
# whose exact $\varepsilon$ at $\delta = 10^{-3}$ is `hockey_stick_epsilon`.  The auditor searches
# all 6 non-trivial subsets in both directions.  It must stay below the exact value, and it must
# come close with $2\times 10^5$ samples.

# %%
p = np.array([0.6, 0.3, 0.1])
q = np.array([0.2, 0.3, 0.5])
exact = hockey_stick_epsilon(p, q, 1e-3)
res = audit_epsilon(rng.choice(3, 200_000, p=p), rng.choice(3, 200_000, p=q), 1e-3, confidence=conf, n_outcomes=3)
print(f"exact eps = {exact:.4f}; audit lower bound = {res.epsilon_lower:.4f} at event {res.event} ({res.direction})")
assert res.epsilon_lower <= exact and res.epsilon_lower > 0.9 * exact

# %% [markdown]
# ### 2.4 Numerics at the extremes
#
# "Never under-noise" must hold for the **true** profile, not for its floating-point evaluation.
# `analytic_gaussian_sigma` therefore raises Brent's root until the float $\ln\delta$ *plus a bound on
# its evaluation error* is at most $\ln\delta$ (the error bound is turned into a step of $\sigma$
# through the slope $-\,d\ln\delta/d\ln t = \varphi(u)/(t\,\delta)$, which follows from
# $\varphi(u) = e^{\varepsilon}\varphi(v)$), then by 4 ulp for the rounding of $\sigma = \Delta t$.  In the ordinary
# range this moves $\sigma$ by a few $10^{-15}$ relative.  Limits:
# - $\varepsilon > 10^{15}$ is **refused** (`ANALYTIC_EPSILON_MAX`): there $t \approx 1/\sqrt{2\varepsilon}$, and one ulp of
#   $t$ moves $u = 1/(2t) - \varepsilon t$ by about $2\cdot10^{-16}\sqrt{2\varepsilon}$ (about 0.3 at $10^{30}$):
#   double precision no longer resolves the profile.  Below that limit, and for $\varepsilon$ down to
#   $10^{-300}$ and $\delta$ down to $10^{-300}$, the result was checked against 80-digit arithmetic
#   (`mpmath`, offline: no grid point under-noised, and $\sigma$ is within $10^{-13}$ of the exact minimum
#   on ordinary parameters).  The exact minima below were computed that way and are kept as numbers.
# - `gaussian_delta` is finite everywhere: 0 when $\sigma/\Delta$ or $\varepsilon$ is huge, 1 when $\sigma/\Delta \to 0$;
#   `gaussian_epsilon` returns $\infty$ when no $\varepsilon$ below $10^{308}$ reaches $\delta$.
# - The Clopper–Pearson upper bound is the upper $\alpha$ quantile `beta.isf(alpha, k+1, n-k)`: forming
#   $1-\alpha$ first (`beta.ppf(1 - alpha)`) rounds a small $\alpha$ away, in either direction.
#
# **The check can fail:** the same comparison rejects the direct formula for $r$ (Brent's root of
# the float profile, no certification): at tiny $\varepsilon$ its $r$ rounds to 0, the float profile
# collapses to 0 too early, and $\sigma$ comes out a factor 2 to $10^{186}$ too small.

# %%
EXACT_MINIMUM = {(0.01, 1e-300): 3672.720103405569, (1e-06, 1e-100): 20321506.70841061,     # mpmath, 800 digits
                 (1.0, 1e-300): 36.8654978941111, (0.5, 1e-05): 7.031826675582492,
                 (1e12, 1e-300): 7.071253049769674e-07, (1e15, 1e-05): 2.2360681907443385e-08,
                 (1e-12, 1e-300): 36096113814991.82, (1e-15, 1e-30): 7423547833418846.0,
                 (1e-100, 1e-100): 2.7602980479814333e+99, (1e-200, 1e-300): 2.0985770338319226e+201}
TINY = [(1e-12, 1e-300), (1e-15, 1e-30), (1e-100, 1e-100), (1e-200, 1e-300)]


def direct_sigma(epsilon, delta):
    """DELIBERATELY NAIVE: r = eps + ln Phi(v) - ln Phi(u) as written, Brent's root of the float profile."""
    def log_profile(log_t):
        t = math.exp(log_t)
        u, v = 0.5 / t - epsilon * t, -0.5 / t - epsilon * t
        r = min(epsilon + special.log_ndtr(v) - special.log_ndtr(u), 0.0)
        return special.log_ndtr(u) + (math.log(-math.expm1(r)) if r < 0 else -1e300) - math.log(delta)
    lo = hi = math.log(math.sqrt(2 * math.log(1.25 / delta)) / epsilon)
    while log_profile(lo) <= 0:
        lo -= 2.0
    while log_profile(hi) >= 0:
        hi += 2.0
    return math.exp(optimize.brentq(log_profile, lo, hi, xtol=1e-15, rtol=1e-15))


print(f"{'epsilon':>8} {'delta':>7} {'exact minimum':>16} {'analytic sigma':>16}   in [exact, exact (1 + 1e-12)]")
for (e, d), exact in EXACT_MINIMUM.items():
    sigma = analytic_gaussian_sigma(1.0, e, d)
    assert exact <= sigma <= exact * (1 + 1e-12)
    print(f"{e:8.0e} {d:7.0e} {exact:16.10g} {sigma:16.10g}   yes")
naive = {key: direct_sigma(*key) / EXACT_MINIMUM[key] for key in TINY}
print("direct formula at tiny epsilon, sigma / exact minimum:",
      ", ".join(f"eps={e:.0e}, delta={d:.0e}: {x:.0e}" for (e, d), x in naive.items()))
assert all(x < 0.9 for x in naive.values())                       # under-noised: the check fails it
try:
    analytic_gaussian_sigma(1.0, 1e18, 1e-5)
    raise AssertionError("epsilon = 1e18 must be refused")
except ValueError as err:
    print("refused:", err)
limits = [gaussian_delta(2e154, 1.0, 1.0), gaussian_delta(1.0, 1e-300, 1.0), gaussian_delta(1.0, 1.0, 1e300),
          gaussian_delta(1e-300, 1.0, 1.0)]
print(f"profile limits: {limits} (sigma/Delta = 2e154, 1e300; epsilon = 1e300; sigma/Delta = 1e-300)")
print(f"gaussian_epsilon(1e-300, 1, 1e-5) = {gaussian_epsilon(1e-300, 1.0, 1e-5)}")
assert limits == [0.0, 0.0, 0.0, 1.0] and gaussian_epsilon(1e-300, 1.0, 1e-5) == math.inf

cp_exact = -math.expm1(math.log(1e-12) / 1000)                   # k = 0: 1 - alpha^(1/n)
cp_ppf, cp_isf = stats.beta.ppf(1 - 1e-12, 1, 1000), clopper_pearson_upper(0, 1000, 1e-12)
print(f"Clopper-Pearson upper (k=0, n=1000, alpha=1e-12): exact {cp_exact:.12g}; beta.ppf(1 - alpha) off by "
      f"{cp_ppf / cp_exact - 1:.1e}, the verified beta.isf(alpha) above it by less than 1e-12: "
      f"{0 <= cp_isf / cp_exact - 1 < 1e-12}")
assert 0 <= cp_isf / cp_exact - 1 < 1e-12 < abs(cp_ppf / cp_exact - 1)
# near 1 the float grid is coarse against 1 - bound: k = 9 of n = 10 at alpha = 1e-12, the bound is 1 - 1e-13 and
# the nearest double below it would be anti-conservative; the verified bound is the next double above
cp_near_one = float(clopper_pearson_upper(9, 10, 1e-12))
tail_near_one = 1 - Fraction(cp_near_one) ** 10                           # P[X <= 9] = 1 - p^10, exactly
print(f"clopper_pearson_upper(9, 10, 1e-12) = {cp_near_one!r}: P[Bin(10, bound) <= 9] / alpha = "
      f"{float(tail_near_one / Fraction(1e-12)):.6f} <= 1")
assert tail_near_one <= Fraction(1e-12)

# %% [markdown]
# ## Summary
# - `bandit_unlearning.privacy.audit`: `hockey_stick_delta` / `hockey_stick_epsilon` (exact audits of
#   finite-output mechanisms), `clopper_pearson_lower/upper`, `audit_epsilon` → `AuditResult`
#   (Monte Carlo lower confidence bound, Bonferroni over `subset_events` or `threshold_events`).
# - Checks: the auditor stays below the true $\varepsilon$ and catches a mechanism with half the noise;
#   at the extremes the analytic $\sigma$ of chapter P1a is never below the exact minimum and within a
#   relative $10^{-12}$ of it (Section 2.4).
