# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.model
# ---

# %% [markdown]
# # Chapter A9a — Deletion requests over time: a model with a lifecycle, an accountant, and a file that forgets
#
# *Paper A answers one deletion request against one stored statistic.  A deployed model answers many,
# months apart, and is saved and reloaded in between.  This chapter exports
# `bandit_unlearning.mab.model`: the `LCBModel` (fit, `delete`, current policy, exact statistics of
# what remains, a deletion log, `save` / `load`), the sequential guarantee it keeps, the accountant
# that keeps it, and the deletion capacity.*
#
# What goes wrong when the one-shot mechanism of chapter A3a is simply called again and again:
# a row that a release only **noised** (the Gaussian branch) is still inside the stored statistic, so
# every later release computed from that statistic leaks about it again; nothing adds those leaks up.
# This chapter
# 1. defines the promise made after a *sequence* of requests and the reference world it is measured
#    against (with $\tau$ and $m$ fixed at fit, chapter A2);
# 2. derives the accountant: the Gaussian releases compose exactly as one Gaussian mechanism
#    ($\mu$-GDP), converted to $(\varepsilon, \delta)$ by the exact privacy profile; the model rolls
#    back every pending row before the budget would be exceeded;
# 3. implements the model and its persistence.
#
# Its sibling [A9b](09b_deletion_stream_in_use.ipynb) runs the model on a small example,
# 4. audits the promise **exactly** on small instances (the joint law of up to three releases,
#    enumerated) and shows the same audit rejecting two broken accountants;
# 5. tabulates the deletion capacity, and serves requests on real logged data (the Open Bandit Dataset).

# %%
import itertools
import os
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import LCBState, fit_lcb
from bandit_unlearning.mab.mechanisms import exact_sensitivity
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import gaussian_delta

# %% [markdown]
# ## 1. The promise after a sequence of requests
#
# **Setting.** The model is fitted once on $D$ ($N$ rows, $m$ arms); $\tau$ (default $1/N$ of the
# fitted data) and the arm set are fixed at fit and recorded, so $L = \ln(m/\tau)$ never changes.
# Requests $U_1, U_2, \dots$ arrive one at a time (sets of rows, chosen independently of the rewards).
# After request $s$ the model makes **one release** $R_s$: the policy $\hat a_s$ served until the next
# request.  Write $D_s = D \setminus (U_1 \cup \dots \cup U_s)$ for what is not yet deleted.
#
# **What the model stores.** Two statistics: the *exact* statistic $T(D_s)$ (counts and reward sums of
# what remains) and the *released-from* statistic $T^{\rm pub}_s = T(D_s \cup P_s)$, where $P_s$ is the
# set of **pending** rows: deleted rows that a Gaussian release only noised and that have not been
# rolled back yet.  A release is
# $$R_s = \arg\max_a \big(f_a(T^{\rm pub}_s) + \sigma Z_{s,a}\,[a \in A_s]\big),$$
# with $A_s$ the arms that hold pending rows, $Z_{s,a}$ i.i.d. standard normal, $\sigma$ fixed at fit;
# when $P_s = \emptyset$ nothing is noised and $R_s = \arg\max_a f_a(T(D_s))$ is exact retraining.
#
# **Reference world.** $\mathrm{Ref}_s$ runs the *same* release rule — same noised arms $A_s$, same
# $\sigma$, same rollback decisions — on the statistic retrained on $D_s$ with the same $\tau$ and
# $m$: $\mathrm{Ref}_s = \arg\max_a (f_a(T(D_s)) + \sigma Z'_{s,a}[a\in A_s])$.  Why this reference:
# retraining on $D_s$ is what the data owner is entitled to; keeping $\tau$ and $m$ from fit is what
# makes rollback *equal* to retraining (with $\tau = 1/|D_s|$ a rolled-back score would differ from
# the reference for reasons that have nothing to do with the deleted rows); the noise and the
# decisions are those of Algorithm 3's reference, treated as public in both worlds: they depend only on
# the request sizes, the counts and the previous releases.
#
# **The promise.** Fix a target $(\varepsilon, \delta)$.  For every $t$ and every request $j \le t$,
# the joint law of the releases made after request $j$, $(R_j, \dots, R_t)$, is
# $(\varepsilon, \delta)$-indistinguishable (both directions) from the joint law of
# $(\mathrm{Ref}_j, \dots, \mathrm{Ref}_t)$.  Releases before request $j$ were computed while $U_j$
# was legitimately part of the data and are not covered — unlearning cannot recall them.
#
# **Derivation.** Release $s$ and its reference differ only in the scores of the arms $A_s$; the shift
# vector $f(T^{\rm pub}_s) - f(T(D_s))$ has, on arm $a$, at most the exact sensitivity
# $\Delta(N^{\rm pub}_s(a), k_s(a))$ of chapter A2 (removing $k_s(a)$ pending rows out of
# $N^{\rm pub}_s(a)$; worst case deleted rewards 1, kept 0), and noise of equal scale on all of
# $A_s$ makes the release one Gaussian mechanism with whitened shift
# $\mu_s = \lVert(\Delta(N^{\rm pub}_s(a), k_s(a)))_{a\in A_s}\rVert_2 / \sigma$ (chapter A7), i.e.
# $\mu_s$-GDP; the argmax is post-processing.  Independent noise across releases composes
# exactly: given the earlier releases, $(R_j, \dots, R_t)$ against its reference is
# $\mu_{j:t}$-GDP with $\mu_{j:t} = \sqrt{\sum_{s=j}^t \mu_s^2}$ (Dong, Roth & Su 2019,
# Corollary 3.3).  *Unconditionally* the window also carries what the earlier releases leaked about
# the rows pending then (the two worlds' histories differ, and the window's decisions depend on
# them), so the bound for every window is that of the whole transcript, $\mu_{1:t}$; the exact audit
# below shows that the conditional $\mu_{j:t}$ alone is indeed not enough for the marginal law.  The noised arms
# and the rollback decisions depend on earlier releases, so the composition is adaptive; for
# Gaussian DP a budget that is checked before each release (a privacy filter) is valid under fully
# adaptive composition (Smith & Thakurta 2022).  A $\mu$-GDP pair is $(\varepsilon, \delta)$-close
# exactly for $\delta \ge \delta_\mu(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) - e^\varepsilon
# \Phi(-\varepsilon/\mu - \mu/2)$, the Gaussian privacy profile of chapter P1a with noise 1 and
# sensitivity $\mu$.  So with the budget $\mu^\star = \max\{\mu: \delta_\mu(\varepsilon) \le \delta\}$
# the promise holds as long as $\mu_{1:t} \le \mu^\star$ (hence every $\mu_{j:t} \le \mu^\star$).
#
# **The accountant and the rollback policy.** $\mu_{j:t}$ is largest for the oldest request, and it
# keeps growing as long as *any* row is pending — even after request $j$'s own rows were rolled back,
# because the reference of a later release also lacks the rows pending then.  Before release $t$ the
# model computes $\mu_t$ for the plan "keep the pending rows pending"; if some request's $\mu_{j:t}$
# would exceed $\mu^\star$ it **rolls back every pending row** instead, and release $t$ is exact
# ($\mu_t = 0$).  The switch is itself accounted: it is decided from public quantities and adds
# nothing.  The Gaussian budget is therefore a lifetime budget of the fitted model — an honest
# consequence of comparing with "retrain on everything not yet deleted"; once it is spent, every
# later request is rolled back (which is exact and costs nothing in privacy).
#
# **When is a request noised at all?** Paper A's rule: only a request that touches the arm the model
# currently serves can gain from noise instead of rollback (rolling back another arm never hurts the
# policy).  The model's `method="adaptive"` keeps a request pending when all its rows are on the
# current policy arm and the accountant admits the release; every other request is rolled back at
# once.  `method="rollback"` rolls back every request (exact unlearning, no budget needed).
#
# **Against which reference world?**  Read what each decision of release $s$ reads.  The accountant
# (`admits`) and the shift $\mu_s$ read the counts of the released-from statistic, the pending counts,
# the request's counts and the earlier shifts: functions of the counts of $D$ and of the request
# sequence alone (a request's rows are chosen independently of the rewards), so any world computes
# them.  `reason="budget"` is decided from those.  The branch rule does not: "the request sits on the
# served arm" reads the previous release $R_{s-1}$ — for the first request the fitted $\pi(D)$ — and
# $\pi(D)$ depends on the deleted rewards.  The promise above, with "the same decisions" in both
# worlds, therefore holds **conditionally**: against a reference that is *given* the releases already
# made (Paper A's Algorithm 3 reference, given $\pi(D)$).  Against the **literal** reference of
# Definition 2.1 — a model fitted on $D \setminus U_j$, which never saw $U_j$ and makes its own
# decisions from its own releases — it can fail: on counts $(100, 100)$, reward sums $(60, 57)$, and a
# request deleting 10 reward-1 rows of arm 0, the fitted model serves arm 0 and noises the request,
# while the literal reference serves $\pi(D \setminus U) = 1$, calls the request off-policy, rolls
# it back and releases arm 1 with certainty; chapter A9b computes the resulting $\delta$ exactly.
# Every `DeletionRecord` says which world its claim holds against (`reference`).
#
# **The literal option** (`LCBModel.fit(..., method="adaptive", reference="literal")`): keep *every*
# request pending while the accountant admits it, whatever arm it touches, and roll everything back
# when it does not.  Then every decision — which request is pending, which arms $A_s$ are noised, when
# everything is rolled back — is a deterministic function of the counts and the request sequence, the
# same in the model and in any reference world.  *Derivation.* Fix the requests.  The releases
# $R_1, \dots, R_t$ are $\arg\max$ post-processings of the vectors
# $(f_a(T^{\rm pub}_s) + \sigma Z_{s,a})_{a \in A_s}$, $s \le t$, with all $Z_{s,a}$ independent and
# $A_s$ fixed in advance; the literal reference's releases are the same post-processings of
# $(f_a(T(D_s)) + \sigma Z'_{s,a})_{a \in A_s}$.  The stacked vectors are one Gaussian mechanism, not
# an adaptive composition: the shift has L2 norm $\sigma \sqrt{\sum_{s \le t} \mu_s^2} = \sigma \mu_{1:t}$,
# so the pair of transcripts is $\mu_{1:t}$-GDP, with no conditioning on earlier releases, and every
# window $(R_j, \dots, R_t)$ is a marginal of it (post-processing).  The accountant keeps
# $\mu_{1:t} \le \mu^\star$, so each window is $(\varepsilon, \delta)$-indistinguishable from the
# literal reference.  The release before the first request (the fitted policy) is not covered, as
# before.  The price: requests on arms the model does not serve, which Paper A's rule rolls back for
# free, now spend budget — the accountant runs out sooner and more requests end in a full rollback.
# The default stays Paper A's rule (`reference="conditional"`); `method="rollback"` is exact, hence
# literal, always.

# %% [markdown]
# ## 2. Implementation
#
# ### 2.1 The accountant

# %% tags=["export"]
"""An LCB model with a lifecycle (chapter A9a): fit once, then serve deletion requests over time.

``LCBModel`` holds the row store, the exact statistic of what remains (bit for bit ``fit`` on the
remaining rows), the statistic releases are computed from (which still holds the *pending* rows that
a Gaussian release only noised, as one per-arm sum), the public pending counts, a deletion log and a
Gaussian-DP accountant; ``save`` / ``load`` persist it atomically in an ``.npz`` file that holds no
byte of a deleted row, binds its sections by one save id, is checked entry by entry and for every
consistency at load, and can be authenticated with an HMAC key.  Pickling drops the noise generator
as saving does.  tau and the arm set are fixed at fit.
"""

import csv
import hashlib
import hmac
import json
import math
import os
import re
import sys
import tempfile
import warnings
import zipfile
import dataclasses
from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import (
    as_generator, check_bool, check_choice, check_instance, check_int, check_positive, check_real, check_real_array,
)
from bandit_unlearning.mab.lcb import LCBState, check_tau, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, check_delta, check_epsilon, gaussian_delta
from bandit_unlearning.protocol import register_unlearn, unlearn


def gdp_budget(epsilon, delta) -> float:
    """The largest ``mu`` whose Gaussian-DP pair is (epsilon, delta)-close: ``delta_mu(epsilon) <= delta``.

    ``1 / analytic_gaussian_sigma(1, epsilon, delta)`` (the calibration is certified, so the budget errs
    on the safe side).

    Parameters
    ----------
    epsilon : float
        The target ``epsilon > 0``.
    delta : float
        The target ``delta`` in (0, 1).

    Returns
    -------
    float
        ``mu*``.
    """
    return 1.0 / analytic_gaussian_sigma(1.0, check_epsilon(epsilon), check_delta(delta))


def gdp_delta(mu, epsilon) -> float:
    """``delta_mu(epsilon)``: the exact privacy profile of a mu-GDP pair (Gaussian noise 1, shift mu).

    Parameters
    ----------
    mu : float
        The shift (>= 0).
    epsilon : float
        The ``epsilon`` at which to read the profile.

    Returns
    -------
    float
    """
    mu = check_real(mu, "mu", 0)
    return 0.0 if mu == 0 else float(gaussian_delta(1.0, mu, check_epsilon(epsilon)))


def request_mus(release_mus) -> np.ndarray:
    """``mu_{j:t} = sqrt(sum_{s >= j} mu_s^2)`` for every request ``j`` (release ``s`` follows request ``s``).

    Parameters
    ----------
    release_mus : array_like of float (s,)
        The whitened shift ``mu_s >= 0`` of every release so far, oldest first.

    Returns
    -------
    numpy.ndarray (s,)
        ``mu_{j:t}`` for ``j = 1 .. s`` (non-increasing).
    """
    mus = check_real_array(release_mus, "release_mus", 0, ndim=1)
    return np.sqrt(np.cumsum((mus ** 2)[::-1])[::-1])


# %% tags=["export"]
def admits(release_mus, mu_new: float, mu_budget: float) -> bool:
    """The accountant: may a release with whitened shift ``mu_new`` follow ``release_mus``?

    Every request's composed ``mu_{j:t}`` must stay within the budget; the oldest request's is the
    largest, and a new request's own window starts with this release.

    Parameters
    ----------
    release_mus : array_like of float (s,)
        The whitened shift ``mu_s >= 0`` of every release so far, oldest first.
    mu_new : float
        The shift of the candidate release (>= 0).
    mu_budget : float
        The budget ``mu*`` (``gdp_budget``).

    Returns
    -------
    bool
    """
    mus = check_real_array(release_mus, "release_mus", 0, ndim=1)
    mus = np.append(mus, check_real(mu_new, "mu_new", 0))
    with np.errstate(over="ignore"):                  # a shift near 1e300 squares to inf: not admitted
        return bool(request_mus(mus)[0] <= check_real(mu_budget, "mu_budget", 0))


def release_shift(pub_counts, pending_counts, log_term: float, sigma: float) -> float:
    """Whitened shift ``mu_s`` of a release: the L2 norm over the arms with pending rows of the exact
    sensitivity (removing ``pending_counts[a]`` of ``pub_counts[a]`` rows), divided by ``sigma``.

    Parameters
    ----------
    pub_counts : array_like of int (m,)
        Rows per arm of the released-from statistic.
    pending_counts : array_like of int (m,)
        Pending rows per arm (those the release would leave inside it).
    log_term : float
        ``L = ln(m / tau)``.
    sigma : float
        The noise scale (> 0).

    Returns
    -------
    float
        ``mu_s`` (0 when nothing is pending).
    """
    sigma = check_positive(sigma, "sigma")
    pub, pend = np.asarray(pub_counts), np.asarray(pending_counts)
    arms = np.flatnonzero(pend > 0)
    if arms.size == 0:
        return 0.0
    shifts = np.atleast_1d(exact_sensitivity(pub[arms], pend[arms], log_term))
    return float(np.sqrt(np.sum(np.square(shifts))) / sigma)


def deletion_capacity(n_arm: int, k: int, log_term: float, sigma: float, epsilon, delta,
                      max_requests: int = 100_000) -> int:
    """How many consecutive requests of ``k`` rows on the served arm (``n_arm`` rows) the adaptive model
    keeps pending before the accountant forces a rollback: the largest ``c`` with
    ``sum_{j=1..c} (Delta(n_arm, j k) / sigma)^2 <= mu_budget^2``.

    Parameters
    ----------
    n_arm : int
        The rows of the served arm (>= 1).
    k : int
        The rows of each request, in ``[1, n_arm]``.
    log_term : float
        ``L = ln(m / tau)``.
    sigma : float
        The model's noise scale (> 0).
    epsilon, delta
        The model's guarantee (they fix ``mu_budget``).
    max_requests : int
        Where to stop counting.

    Returns
    -------
    int
        The capacity ``c``, at most ``max_requests``.
    """
    n_arm = check_int(n_arm, "n_arm", 1)
    k, max_requests = check_int(k, "k", 1, n_arm), check_int(max_requests, "max_requests", 0)
    sigma = check_positive(sigma, "sigma")
    budget = gdp_budget(epsilon, delta)
    # the j-th pending request shifts the release by Delta(n_arm, j k) / sigma; the accountant admits
    # requests while the running sum of squared shifts stays within the budget (a sequential cumsum:
    # the same additions, in the same order, as a loop over the requests, without a Python loop)
    j = np.arange(1, min(max_requests, n_arm // k) + 1, dtype=float)
    with np.errstate(over="ignore"):                  # a subnormal sigma: infinite shifts, capacity 0
        mu = np.asarray(exact_sensitivity(n_arm, j * k, log_term), dtype=float) / sigma
        return int(np.searchsorted(np.cumsum(mu * mu), budget * budget, side="right"))


# %% [markdown]
# ### 2.2 One release, as a pure function
#
# The model and the exact audit below share this planning step, so the audit checks the decisions the
# model actually takes.  It needs only public quantities: the counts of the released-from statistic,
# the pending counts, the request's counts, whether the request sits on the served arm, and the
# earlier releases' shifts.

# %% tags=["export"]
@dataclass(frozen=True)
class ReleasePlan:
    """What release ``s`` does: keep the new request pending (``noise_request``), roll back every pending
    row (``rollback_pending``), the arms noised, and the release's whitened shift ``mu``.

    Parameters
    ----------
    noise_request : bool
        Keep the new request pending and noise its arms.
    rollback_pending : bool
        Roll back every pending row (the new request's included).
    noised_arms : tuple of int
        The arm indices noised.
    mu : float
        The release's whitened shift ``mu_s`` (0 when nothing is noised).
    """

    noise_request: bool
    rollback_pending: bool
    noised_arms: tuple
    mu: float

    def __post_init__(self):
        check_bool(self.noise_request, "noise_request"), check_bool(self.rollback_pending, "rollback_pending")
        check_instance(self.noised_arms, tuple, "noised_arms")
        check_real(self.mu, "mu", 0)


def plan_release(pub_counts, pending_counts, request_counts, on_policy: bool, release_mus, *,
                 log_term: float, sigma: float | None, mu_budget: float | None, method: str,
                 admit=admits, reference: str = "conditional") -> ReleasePlan:
    """Plan the release that follows a request (counts are per arm; ``pub_counts`` still holds the
    request's rows).  ``admit`` is the accountant (replaceable, to audit broken ones).

    ``reference="conditional"`` (Paper A's rule): an adaptive request is kept pending only when it sits
    on the served arm (``on_policy``), a decision that reads the previous release.
    ``reference="literal"``: every adaptive request is kept pending when the accountant admits it;
    ``on_policy`` is not read, so the plan is a function of counts and earlier shifts alone.

    Parameters
    ----------
    pub_counts : array_like of int (m,)
        Rows per arm of the released-from statistic.
    pending_counts : array_like of int (m,)
        Pending rows per arm before this request.
    request_counts : array_like of int (m,)
        The new request's rows per arm.
    on_policy : bool
        Whether every row of the request is on the served arm.
    release_mus : array_like of float (s,)
        The whitened shift ``mu_s >= 0`` of every release so far, oldest first.
    log_term : float
        ``L = ln(m / tau)``.
    sigma : float or None
        The noise scale (``None`` for a rollback model).
    mu_budget : float or None
        The accountant's budget (``None`` for a rollback model).
    method : str
        One of ``MODEL_METHODS``.
    admit : callable
        ``admit(release_mus, mu_new, mu_budget) -> bool`` (default ``admits``).
    reference : str
        One of ``REFERENCES``.

    Returns
    -------
    ReleasePlan
    """
    check_choice(method, "method", MODEL_METHODS)
    check_choice(reference, "reference", REFERENCES)
    pub = np.asarray(pub_counts, dtype=np.int64)
    pend = np.asarray(pending_counts, dtype=np.int64)
    req = np.asarray(request_counts, dtype=np.int64)
    noise_request = method == "adaptive" and (reference == "literal" or bool(on_policy))
    after = pub if noise_request else pub - req
    pend_after = pend + req if noise_request else pend
    mu = 0.0 if method == "rollback" else release_shift(after, pend_after, log_term, sigma)
    if mu > 0 and admit(release_mus, mu, mu_budget):
        return ReleasePlan(noise_request, False, tuple(int(a) for a in np.flatnonzero(pend_after > 0)), mu)
    return ReleasePlan(False, bool(np.any(pend_after > 0)) or noise_request, (), 0.0)


# %% [markdown]
# ### 2.3 The model
#
# Rows are numbered $0, \dots, N-1$ in the order given at fit.  Arm labels may be any hashable
# values; user ids, optional, must be strings or integers (what a file can hold: checked at fit, not
# first at save).  **Labels keep their type and order**: integer labels stay integers and sort
# numerically, strings sort as strings, labels that cannot be sorted keep their order of first
# appearance.  Integer labels are numbered by counting (`bincount` over the label range, then a
# lookup table), the same numbering as `np.unique` without its sort; so are arrays of strings of one
# or two characters, read as the integers of their code points (whose numeric order is numpy's
# string order); a list of labels costs one hash and one dictionary look-up per row, at C speed.
# `delete` validates everything before it draws noise or changes anything, so a refused request
# leaves the model exactly as it was.
#
# **What the model keeps, and nothing else.** The row store (a deleted row is wiped at once: arm
# $-1$, reward 0, its user id forgotten); the exact statistic of the live rows; the released-from
# statistic; the **public** per-arm pending counts $k(a)$ and the ids of the pending requests.  No
# request keeps a statistic of its own: when pending rows are rolled back, the arm's released-from
# sum becomes the live rows' sum again.
#
# **No rounding residue.** Subtracting a deleted reward from a float sum, $\mathrm{fl}(S - r)$, leaves
# a rounding residue that depends on $r$ — a trace of the deleted row in the last bits of the sum
# (the test suite shows it in a good share of deletions).  The model keeps each arm's reward sum
# **exactly**, as an integer number of units $2^{-1127}$ (every binary64 number in $[0, 1]$ is a
# whole number of them), subtracts deleted rewards exactly, and stores the correctly rounded float
# of the result.  That float is a function of the multiset of remaining rewards alone, so after
# every deletion the statistic is, bit for bit, that of `fit` on the remaining rows — at $O(k)$ per
# request.  (Rewards that are multiples of $2^{-20}$, such as clicks, are summed exactly by
# `bincount` itself, the fast path of `fit`; other rewards are split into exponent and significand
# halves and summed exactly by `bincount` per arm and exponent.)  The float sums can therefore
# differ in the last bit from a plain `bincount` (a sequential float sum), never from a refit.
# One trace is inherent to the Gaussian branch and stays until the rollback: the released-from sum
# of an arm with pending rows *is* the live sum plus the pending rows' rewards — that is what the
# noised release was computed from and what the next release must be computed from.  It is one
# number per arm, never a per-request value; `method="rollback"` keeps no such trace at any time.
#
# Every record carries a machine-readable `reason`: `"requested"` (the method asked for exactly
# this: a rollback under `method="rollback"`, or the Gaussian branch), `"branch_rule"` (adaptive, but
# the request touches an arm other than the served one, so Paper A's rule rolls it back),
# `"budget"` (the accountant refused the release, so every pending row was rolled back with it).
# And a `reference`: `"literal"` for a rollback model and for an adaptive model fitted with
# `reference="literal"` (no `"branch_rule"` record occurs there), `"conditional"` for Paper A's rule.

# %% tags=["export"]
MODEL_METHODS = ("adaptive", "rollback")
REASONS = ("requested", "branch_rule", "budget")
REFERENCES = ("conditional", "literal")       # the reference world a record's (eps, delta) claim holds against
FORMAT = "bandit_unlearning.LCBModel/2"


@dataclass(frozen=True)
class DeletionRecord:
    """One entry of the deletion log.  Nothing in it is computed from the deleted rewards.

    ``rows`` is the tuple of deleted row ids, or ``None`` in a log read from a file saved without
    them (the default: ``n_rows`` is kept).  ``reason`` is one of ``REASONS``.  ``reference`` names the
    reference world the promise holds against (``REFERENCES``): ``"literal"`` (a model that never saw
    the deleted rows: every release of ``method="rollback"``, every release of an adaptive model fitted
    with ``reference="literal"``) or ``"conditional"`` (given the releases already made: Paper A's
    branch rule reads the served arm, which depends on the deleted rewards).

    Parameters
    ----------
    request_id : int
        The request's position in the log (0 first).
    rows : tuple or None
        The deleted row ids, or ``None`` (then ``n_rows`` is required).
    method : str
        ``"gaussian"`` (the request kept pending, its arms noised) or ``"rollback"``.
    rolled_back : tuple of int
        The request ids whose rows this release rolled back.
    noised_arms : tuple
        The arm labels noised in this release.
    sigma : float
        The noise's standard deviation (0 when nothing is noised).
    mu_release : float
        This release's whitened shift ``mu_s``.
    mu_max : float
        The largest composed ``mu_{j:t}`` over the requests so far.
    delta_at_target : float
        ``delta_mu(epsilon)`` of ``mu_max`` (0 for ``"rollback"``).
    policy : object
        The arm label released.
    reason : str
        Why the release did what it did, one of ``REASONS``.
    n_rows : int or None
        The number of deleted rows (``None``: ``len(rows)``).
    reference : str
        One of ``REFERENCES``.
    """

    request_id: int
    rows: tuple | None
    method: str                    # "gaussian" (kept pending, noised) or "rollback"
    rolled_back: tuple             # request ids whose rows this release rolled back
    noised_arms: tuple             # arm labels noised in this release
    sigma: float
    mu_release: float
    mu_max: float                  # the largest composed mu_{j:t} over all requests so far
    delta_at_target: float         # delta_mu(epsilon) of mu_max (0 for method "rollback")
    policy: object                 # the arm label released
    reason: str = "requested"      # why this release did what it did (REASONS)
    n_rows: int | None = None      # how many rows the request deleted (filled in from rows)
    reference: str = "conditional"  # the reference world of the claim (REFERENCES)

    def __post_init__(self):
        check_choice(self.method, "method", ("gaussian", "rollback"))
        check_choice(self.reason, "reason", REASONS)
        check_choice(self.reference, "reference", REFERENCES)
        if self.rows is None:
            check_int(self.n_rows, "n_rows", 1)
        else:
            check_instance(self.rows, tuple, "rows")
            if self.n_rows is None:
                object.__setattr__(self, "n_rows", len(self.rows))
            elif self.n_rows != len(self.rows):
                raise ValueError(f"n_rows must equal len(rows), got {self.n_rows} and {len(self.rows)}")

    def without_rows(self) -> "DeletionRecord":
        """The same record with the row ids left out (``n_rows`` kept)."""
        return DeletionRecord(**{**self.__dict__, "rows": None})

# %% [markdown]
# **Arm labels, fast.** `fit` numbers the arm labels of $N$ rows: the sorted distinct labels and each
# row's index into them, what `np.unique(..., return_inverse=True)` gives. Integer labels over a small
# range are numbered by counting, one- and two-character strings by their code points, both in $O(N)$
# and in numpy's own order.

# %% tags=["export"]
_DENSE_SPAN = 1 << 24          # integer labels spanning at most this many values are numbered by counting


def _integer_labels(arms):
    """(sorted distinct labels, index of each row) of a 1-D integer array, as ``np.unique(...,
    return_inverse=True)`` gives them, by counting when the labels span a small range."""
    lo, hi = int(arms.min()), int(arms.max())
    span = hi - lo + 1
    if span > max(_DENSE_SPAN, 4 * arms.size):
        uniq, inverse = np.unique(arms, return_inverse=True)
        return uniq, inverse.astype(np.int64)
    shifted = arms.astype(np.int64) - lo if lo != 0 or arms.dtype != np.int64 else arms
    present = np.flatnonzero(np.bincount(shifted, minlength=span))
    if present.size == span:                     # every value of the range occurs: the index is the shift
        return present + lo, shifted
    table = np.zeros(span, dtype=np.int64)
    table[present] = np.arange(present.size)
    return present + lo, table[shifted]


def _code_point_labels(arms):
    """(sorted distinct labels, index of each row) of a 1-D ``<U1`` or ``<U2`` string array, as
    ``np.unique(..., return_inverse=True)`` gives them: each string read as the integer of its code
    points (one or two 32-bit units, first unit most significant), whose numeric order is numpy's
    string order (code points compared in turn, a missing one counting as 0), then numbered by
    ``_integer_labels``."""
    units = arms.view(np.uint32).reshape(arms.size, -1).astype(np.int64)
    codes = units[:, 0] if units.shape[1] == 1 else (units[:, 0] << 32) | units[:, 1]
    uniq, inverse = _integer_labels(codes)
    if units.shape[1] == 1:
        back = uniq.astype(np.uint32)
    else:
        back = np.stack([uniq >> 32, uniq & 0xFFFFFFFF], axis=1).astype(np.uint32)
    return np.ascontiguousarray(back).view(arms.dtype).reshape(-1), inverse

# %% [markdown]
# The dispatcher picks one of those paths for an array, and for a plain sequence numbers the labels by
# hashing; the slow path, label by label, is there only to name the first unhashable or non-finite
# label.

# %% tags=["export"]
def _labels_and_index(arms, labels):
    """(arm labels, int64 index of each row's label) for ``LCBModel.fit``.

    Arrays of integers are numbered by counting; ``<U1``/``<U2`` strings by their code points; other
    arrays by ``np.unique``: all give the sorted distinct values.  Sequences: distinct labels by
    hashing, sorted if they can be; each row's index by one dictionary look-up (no Python loop)."""
    if isinstance(arms, np.ndarray) and arms.ndim == 1 and arms.size and arms.dtype.kind in "fc":
        if not np.all(np.isfinite(arms)):
            raise ValueError("arms must not hold NaN or infinite labels")
    if isinstance(arms, np.ndarray) and arms.ndim == 1 and arms.dtype.kind in "biuUSf" and arms.size:
        if arms.dtype.kind in "iu":
            uniq, inverse = _integer_labels(arms)
        elif arms.dtype.kind == "U" and arms.dtype.itemsize in (4, 8) and arms.dtype.isnative:
            uniq, inverse = _code_point_labels(arms)
        else:
            uniq, inverse = np.unique(arms, return_inverse=True)
            inverse = inverse.astype(np.int64)
        if labels is None:
            return tuple(uniq.tolist()), inverse
        arms = uniq.tolist()
        labels, table = _labels_and_index(arms, labels)
        return labels, table[inverse]
    if not isinstance(arms, (list, tuple)):
        arms = list(arms)
    try:
        distinct = dict.fromkeys(arms)                 # hashes every label once (C speed)
    except TypeError:
        distinct = None
    if distinct is None or any(isinstance(a, np.generic) for a in distinct):
        return _labels_and_index_slow(arms, labels)   # the error of the first bad label; numpy scalars
    for a in distinct:
        if isinstance(a, float) and not np.isfinite(a):
            raise ValueError("arms must not hold NaN or infinite labels")
    if labels is None:
        uniq = list(distinct)
        try:
            uniq = sorted(uniq)
        except TypeError:
            pass
        labels = uniq
    labels = tuple(labels)
    if len(set(labels)) != len(labels) or not labels:
        raise ValueError("labels must be a non-empty sequence of distinct hashable arm labels")
    where = {lab: i for i, lab in enumerate(labels)}
    unknown = [a for a in distinct if a not in where]
    if unknown:
        raise ValueError(f"arms holds labels not in labels, e.g. {next(a for a in arms if a not in where)!r}")
    return labels, np.fromiter(map(where.__getitem__, arms), dtype=np.int64, count=len(arms))


def _labels_and_index_slow(arms, labels):
    """``_labels_and_index`` of a sequence label by label (numpy scalars become Python scalars; the
    first unhashable or non-finite label is the one named)."""
    arms = [a.item() if isinstance(a, np.generic) else a for a in arms]
    for a in arms:
        hash(a)
        if isinstance(a, float) and not np.isfinite(a):
            raise ValueError("arms must not hold NaN or infinite labels")
    if labels is None:
        uniq = list(dict.fromkeys(arms))
        try:
            uniq = sorted(uniq)
        except TypeError:
            pass
        labels = uniq
    labels = tuple(labels)
    if len(set(labels)) != len(labels) or not labels:
        raise ValueError("labels must be a non-empty sequence of distinct hashable arm labels")
    where = {lab: i for i, lab in enumerate(labels)}
    unknown = [a for a in arms if a not in where]
    if unknown:
        raise ValueError(f"arms holds labels not in labels, e.g. {unknown[0]!r}")
    return labels, np.fromiter((where[a] for a in arms), dtype=np.int64, count=len(arms))

# %% [markdown]
# **Validation of a request.** A request names live row ids; `check_row_ids` returns them sorted and
# refuses ids that are out of range, repeated or already deleted, before anything changes. Rewards
# must lie in $[0, 1]$, as Paper A assumes, and user ids must be strings or integers, what a file can
# hold.

# %% tags=["export"]
def check_row_ids(rows, n_fit: int, alive: np.ndarray) -> np.ndarray:
    """The live row ids ``rows`` of a model fitted on ``n_fit`` rows, as a sorted int64 array.

    Parameters
    ----------
    rows : non-empty 1-D sequence of distinct integer row ids in ``[0, n_fit)``.
    n_fit : number of rows the model was fitted on.
    alive : boolean array of ``n_fit`` entries, ``True`` for rows not yet deleted.

    Returns
    -------
    numpy.ndarray
        The ids, sorted.  ``TypeError`` for non-integer ids; ``ValueError`` for an empty, repeated,
        unknown or already deleted id (named).  Used by ``LCBModel`` and ``ContextualModel``.
    """
    if isinstance(rows, np.ma.MaskedArray):
        raise TypeError("rows must not be a masked array (its mask would be ignored); pass rows.compressed()")
    rows = np.asarray(rows)
    if rows.ndim != 1 or rows.size == 0:
        raise ValueError("rows must be a non-empty 1-D sequence of row ids")
    if not np.issubdtype(rows.dtype, np.integer):
        raise TypeError(f"rows must be integer row ids, got dtype {rows.dtype}")
    if np.unique(rows).size != rows.size:
        raise ValueError("rows names a row twice")
    outside = rows[(rows < 0) | (rows >= n_fit)]
    if outside.size:
        raise ValueError(f"unknown row {int(outside[0])}: row ids lie in [0, {n_fit})")
    gone = rows[~alive[rows]]
    if gone.size:
        raise ValueError(f"row {int(gone[0])} was already deleted")
    return np.sort(rows.astype(np.int64))


def _check_rewards(rewards, n):
    """Rewards as a new float64 array of ``n`` entries in [0, 1]; NaN and infinities named as such."""
    arr = np.asarray(rewards)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise TypeError(f"rewards must be real numbers, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=float)           # no copy of a float64 array: the model copies it
    if arr.shape != (n,):
        raise ValueError(f"rewards must have one entry per row: {arr.shape} vs ({n},)")
    if n == 0 or (arr.min() >= 0 and arr.max() <= 1):     # two passes, no temporary (NaN fails both)
        return arr
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        kind = "NaN" if np.isnan(arr[i]) else "infinite"
        raise ValueError(f"rewards must be finite numbers in [0, 1]: row {i} is {kind} "
                         f"({int(bad.sum())} non-finite rewards in all)")
    out = (arr < 0) | (arr > 1)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise ValueError(f"rewards must lie in [0, 1]: row {i} is {arr[i]!r}")
    return arr


# %% [markdown]
# **User ids.** Ids are kept as Python `str` or `int`, and their *types* are checked, not only their
# distinct values: `True` and `1.0` hash and compare like `1`, so a table keyed by id would silently
# merge them into user `1` at fit, and `delete(user=True)` would delete user `1`'s rows. Both are refused.

# %% tags=["export"]
_FACTORED = object()           # marks users given as (distinct ids, codes) by from_csv


def _is_id_type(t: type) -> bool:
    """Whether ids of type ``t`` are kept: str or int, numpy's included; not bool (nor numpy's)."""
    return t is not bool and issubclass(t, (str, int, np.integer))


def _check_user_types(users) -> None:
    """Every id's type is str or int, checked on the distinct types of a whole list: ``True`` and ``1.0``
    hash like ``1``, so a check of the distinct ids alone would let a dict merge them."""
    for t in set(map(type, users)):
        if not _is_id_type(t):
            raise TypeError(f"user ids must be str or int (what a saved file holds), got {t.__name__}")


def check_user(user):
    """The user id of a deletion request, as a Python ``str`` or ``int``: refused (``TypeError``) when it
    is of another type -- ``True`` or ``1.0`` would otherwise find user ``1``.

    Parameters
    ----------
    user : str or int
        A user id (numpy's integer and string scalars are accepted and converted).

    Returns
    -------
    str or int
        The id, as the Python value the model's users are kept as.
    """
    if not _is_id_type(type(user)):
        raise TypeError(f"user must be a str or int id, got {type(user).__name__}")
    return user.item() if isinstance(user, np.generic) else user


def _factor_users(users, n):
    """(distinct user ids, code of each row into them); ids must be str or int (their types checked once)."""
    if isinstance(users, np.ndarray) and users.ndim == 1 and users.dtype.kind in "iuU":
        if users.size != n:
            raise ValueError(f"users must have one entry per row: {users.size} vs {n}")
        uniq, codes = np.unique(users, return_inverse=True)
        return uniq.tolist(), codes.astype(np.int64)          # Python ints or strs: nothing to check
    users = list(users)
    if len(users) != n:
        raise ValueError(f"users must have one entry per row: {len(users)} vs {n}")
    _check_user_types(users)
    where = {}
    try:
        codes = np.fromiter((where.setdefault(u.item() if isinstance(u, np.generic) else u, len(where))
                             for u in users), dtype=np.int64, count=n)
    except TypeError:
        raise TypeError("user ids must be str or int (what a saved file holds), got an unhashable id") from None
    return list(where), codes


def _frozen(a):
    a = np.array(a)
    a.setflags(write=False)
    return a

# %% [markdown]
# **Exact sums.** The statistic after a deletion must equal a refit on what remains, to the last bit:
# per-arm reward sums are kept as exact integers in units of $2^{-1127}$ and rounded once to the
# nearest float.

# %% tags=["export"]
_SCALE = 1127                  # every reward in [0, 1] is an integer multiple of 2**-1127 (53 + 1074 bits)
_DYADIC = 20                   # rewards that are multiples of 2**-20 (clicks, ratings, ...) sum exactly in floats


def _exact_sums(arms, rewards, m) -> list:
    """Per-arm reward sums as exact integers (units of ``2**-_SCALE``), whatever the number of rows.

    Fast path: when every reward is a multiple of ``2**-20`` and there are fewer than ``2**32`` rows,
    every partial float sum is exact and ``bincount`` gives the exact sum.  Otherwise each reward is
    split into its exponent and two 26/27-bit halves of its significand, summed per (arm, exponent) by
    ``bincount`` (each partial sum below ``2**53``, exact), and combined as Python integers."""
    arms = np.asarray(arms, dtype=np.int64)
    rewards = np.asarray(rewards, dtype=float)
    n = rewards.size
    dyadic = n < 2 ** 32
    for start in range(0, n if dyadic else 0, 1 << 18):    # in cache-sized chunks, stopping at the first miss
        chunk = rewards[start:start + (1 << 18)] * 2.0 ** _DYADIC
        if not np.array_equal(chunk, np.trunc(chunk)):
            dyadic = False
            break
    if dyadic:                                             # every partial sum is exact
        sums = np.bincount(arms, weights=rewards, minlength=m) * 2.0 ** _DYADIC
        return [int(v) << (_SCALE - _DYADIC) for v in sums.tolist()]
    frac, exp = np.frexp(rewards)                      # rewards = frac * 2**exp, frac in [0.5, 1) or 0
    mant = (frac * 2.0 ** 53).astype(np.int64)         # exact: an integer below 2**53
    exp = exp.astype(np.int64)
    lo_e = int(exp.min()) if n else 0
    span = (int(exp.max()) - lo_e + 1) if n else 1
    key = arms * span + (exp - lo_e)
    out = [0] * m
    for start in range(0, n, 1 << 25):                 # chunks keep each bincount sum below 2**53
        k, mt = key[start:start + (1 << 25)], mant[start:start + (1 << 25)]
        hi = np.bincount(k, weights=(mt >> 26).astype(float), minlength=m * span)
        lo = np.bincount(k, weights=(mt & ((1 << 26) - 1)).astype(float), minlength=m * span)
        for idx in np.flatnonzero(hi + lo).tolist():
            a, e = divmod(idx, span)
            out[a] += ((int(hi[idx]) << 26) + int(lo[idx])) << (e + lo_e - 53 + _SCALE)
    return out


def _exact(value: float) -> int:
    """One reward as an exact integer in units of ``2**-_SCALE``."""
    p, q = float(value).as_integer_ratio()
    return p << (_SCALE - q.bit_length() + 1)


def _rounded(total: int) -> float:
    """The float nearest to an exact sum (Python's int division is correctly rounded)."""
    return total / (1 << _SCALE)


# %% [markdown]
# **One release, through the package's protocol.**  What a request changes — the exact statistic of
# the live rows, the released-from statistic, the pending counts and ids, the accountant's shifts and
# the served arm — is one immutable `ReleaseState`; a request is the deleted rows themselves, a
# `DeletionRequest` of chapter A2 (arm indices and rewards).  `unlearn(state, request, rng=...)`
# (`bandit_unlearning.protocol`, registered here) plans the release with `plan_release`, makes it and
# returns `(new_state, DeletionRecord)`; the model below only finds the rows (by id or by user),
# calls it, and commits: the new state, the row store wiped, the record logged.  The model's options
# were fixed at fit, so `options` must be `None`.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class ReleaseState:
    """What one deletion of an ``LCBModel`` changes, immutable: ``labels``, ``tau``, ``method``,
    ``epsilon``, ``delta``, ``sigma``, ``mu_budget`` and ``reference`` (fixed at fit); ``counts``,
    ``sums`` and ``exact_sums`` (the live rows' statistic, the sums also exactly, in units of
    ``2**-1127``); ``pub_counts``, ``pub_sums``, ``pub_exact`` (the released-from statistic);
    ``pending_counts``, ``pending_ids``; ``release_mus`` (every release's shift); ``policy`` (the arm
    index served); ``n_requests`` (requests so far).  Arrays are read-only copies.

    Parameters
    ----------
    labels, tau, method, epsilon, delta, sigma, mu_budget, reference, counts, sums, exact_sums, pub_counts, pub_sums, pub_exact, pending_counts, pending_ids, release_mus, policy, n_requests
        The fields above; ``LCBModel.release_state`` builds it.
    """

    labels: tuple
    tau: float
    method: str
    epsilon: float | None
    delta: float | None
    sigma: float | None
    mu_budget: float | None
    reference: str
    counts: np.ndarray
    sums: np.ndarray
    exact_sums: tuple
    pub_counts: np.ndarray
    pub_sums: np.ndarray
    pub_exact: tuple
    pending_counts: np.ndarray
    pending_ids: tuple
    release_mus: tuple
    policy: int
    n_requests: int

    def __post_init__(self):
        check_choice(self.method, "method", MODEL_METHODS), check_choice(self.reference, "reference", REFERENCES)
        m = len(check_instance(self.labels, tuple, "labels"))
        for name, dtype in (("counts", np.int64), ("sums", float), ("pub_counts", np.int64), ("pub_sums", float),
                            ("pending_counts", np.int64)):
            a = np.array(getattr(self, name), dtype=dtype)
            if a.shape != (m,):
                raise ValueError(f"{name} must have one entry per arm ({m}), got shape {a.shape}")
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        for name in ("exact_sums", "pub_exact", "pending_ids", "release_mus"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        check_int(self.policy, "policy", 0, m - 1), check_int(self.n_requests, "n_requests", 0)


# %% [markdown]
# The release itself, as the function the protocol calls: Section 2.2's plan, the exact sums (no
# rounding residue), the noise on the noised arms, and a record that names why.

# %% tags=["export"]
@register_unlearn(ReleaseState, DeletionRequest)
def _unlearn_release(state: ReleaseState, request: DeletionRequest, *, options=None, rng=None) -> tuple:
    """``unlearn(state, request, rng=...)`` for a deletion stream: plan the release that follows
    ``request`` (its points' arm indices and rewards, every point live), make it, and return
    ``(new_state, DeletionRecord)``; the record's ``rows`` are ``None`` (the caller, who knows the row
    ids, fills them in).  ``rng``: the noise of a Gaussian release (``None``: fresh OS entropy).  Refused
    (nothing drawn): ``options`` other than ``None``, an arm the state does not have, more points of an
    arm than it holds."""
    check_instance(state, ReleaseState, "state")
    check_instance(request, DeletionRequest, "request")
    if options is not None:
        raise TypeError(f"a model's options are fixed at fit: options must be None, got {type(options).__name__}")
    m = len(state.labels)
    req_counts = request.deleted_counts(m)                        # refuses unknown arms
    over = np.flatnonzero(req_counts > state.counts)
    if over.size:
        raise ValueError(f"request deletes {int(req_counts[over[0]])} rows of arm {int(over[0])}, which has only "
                         f"{int(state.counts[over[0]])} live rows (more deletions than the arm holds)")
    rng = as_generator(rng)
    req_arms = request.arms
    on_policy = bool(np.all(req_arms == state.policy))
    plan = plan_release(state.pub_counts, state.pending_counts, req_counts, on_policy, list(state.release_mus),
                        log_term=float(np.log(m / state.tau)), sigma=state.sigma, mu_budget=state.mu_budget,
                        method=state.method, reference=state.reference)
    request_id = state.n_requests
    touched = np.flatnonzero(req_counts)
    removed = [0] * m                                         # exact: no fl(S - r) residue
    for a, r in zip(req_arms.tolist(), request.rewards.tolist()):
        removed[a] += _exact(r)
    exact = list(state.exact_sums)
    counts, sums = state.counts - req_counts, state.sums.copy()
    for a in touched.tolist():
        exact[a] -= removed[a]
        sums[a] = _rounded(exact[a])                          # what the remaining rows sum to
    pub_exact = list(state.pub_exact)
    pub_counts, pub_sums = state.pub_counts.copy(), state.pub_sums.copy()
    pending_counts, pending_ids = state.pending_counts.copy(), state.pending_ids
    rolled = ()
    if plan.noise_request:
        pending_counts = pending_counts + req_counts
        pending_ids = pending_ids + (request_id,)
    else:
        rolled = (request_id,)
        for a in touched.tolist():                            # other rows of the arm may stay pending
            pub_exact[a] -= removed[a]
            pub_sums[a] = _rounded(pub_exact[a])
            pub_counts[a] = counts[a] + pending_counts[a]
    if plan.rollback_pending:
        rolled = pending_ids + rolled
        pending_counts, pending_ids = np.zeros(m, dtype=np.int64), ()
        pub_counts, pub_sums, pub_exact = counts.copy(), sums.copy(), list(exact)
    scores = lcb_scores(pub_counts, np.clip(pub_sums, 0.0, pub_counts), state.tau)[2]
    if plan.noised_arms:
        arms = np.array(plan.noised_arms)
        scores = scores.copy()
        scores[arms] += state.sigma * (np.random.default_rng() if rng is None else rng).standard_normal(arms.size)
    policy = int(np.argmax(scores))
    del scores, removed
    release_mus = state.release_mus + (plan.mu,)
    mu_max = float(request_mus(release_mus)[0])
    if state.method == "rollback" or plan.noise_request:
        reason = "requested"
    elif plan.rollback_pending:
        reason = "budget"
    else:
        reason = "branch_rule"
    record = DeletionRecord(
        request_id=request_id, rows=None, n_rows=request.k,
        method="gaussian" if plan.noise_request else "rollback", rolled_back=rolled,
        noised_arms=tuple(state.labels[a] for a in plan.noised_arms),
        sigma=float(state.sigma) if plan.noised_arms else 0.0, mu_release=plan.mu, mu_max=mu_max,
        delta_at_target=0.0 if state.method == "rollback" else gdp_delta(mu_max, state.epsilon),
        policy=state.labels[policy], reason=reason, reference=state.reference)
    new = ReleaseState(state.labels, state.tau, state.method, state.epsilon, state.delta, state.sigma,
                       state.mu_budget, state.reference, counts, sums, exact, pub_counts, pub_sums, pub_exact,
                       pending_counts, pending_ids, release_mus, policy, request_id + 1)
    return new, record


# %% [markdown]
# The model with a lifecycle: `LCBModel` keeps the exact statistic of what remains, applies each
# request with the mechanism chosen at fit time, records it in its log, and releases one arm
# label per request (Section 1's promise, audited exactly in chapter A9b, Section 2).
#
# **Pickling follows the saving contract.** The noise generator is key material: whoever holds its
# state can run it backwards (a PCG64 state advances by any number of steps, negative ones too),
# regenerate the noise of the last releases and subtract it.  `save` never writes it, and neither
# does `pickle` (or `copy.deepcopy`): a pickled model is the saved model — row store, statistics,
# accountant, the log without row ids — and the unpickled one draws its noise from fresh OS
# entropy.  Chapter A9b shows the rewinding attack recovering the noise from a pickle that keeps the
# generator, and failing on this one.

# %% tags=["export"]
from bandit_unlearning.literate import FieldView


class LCBModel:
    """The LCB learner of Paper A with a lifecycle: ``fit`` once, then ``delete`` requests over time.

    Use the constructors ``LCBModel.fit``, ``LCBModel.from_csv``, ``LCBModel.from_frame`` or
    ``LCBModel.load``.  After each request the model makes one release, ``policy`` (an arm label).
    ``statistics`` is the exact ``LCBState`` of what remains (tau fixed at fit).  Pickling drops the
    noise generator (as ``save`` does); an unpickled model draws fresh OS entropy.

    Parameters
    ----------
    labels, tau, n_fit, arms, rewards, row_ids, users, pub_counts, pub_sums, pending_counts, pending_ids, release_mus, log, policy, method, epsilon, delta, sigma, rng, exact_sums, reference
        The model's whole state (keyword-only; ``rng`` a ``numpy.random.Generator``), as the
        constructors build it: not for direct use.  A deletion changes the fields of ``ReleaseState``.
    """

    labels = FieldView("The arm labels, in arm-index order (fixed at fit).")
    tau = FieldView("The confidence level, fixed at fit.")
    n_fit = FieldView("The number of rows at fit (row ids are ``0 .. n_fit - 1``).")
    method = FieldView('``"adaptive"`` or ``"rollback"`` (fixed at fit).')
    policy_index = FieldView("The arm index of the latest release (``labels[policy_index] == policy``).", "_policy")
    mu_budget = FieldView("The accountant's Gaussian-DP budget ``mu*`` (``None`` for a rollback model).")

    def __init__(self, *, labels, tau, n_fit, arms, rewards, row_ids, users, pub_counts, pub_sums,
                 pending_counts, pending_ids, release_mus, log, policy, method, epsilon, delta, sigma, rng,
                 exact_sums=None, reference="conditional"):
        check_choice(method, "method", MODEL_METHODS)
        check_choice(reference, "reference", REFERENCES)
        check_instance(rng, np.random.Generator, "rng")
        # the rule the model plans with; a rollback model never reads the served arm: literal
        self._reference = "literal" if method == "rollback" else reference
        self._labels = tuple(labels)
        m = len(self._labels)
        self._tau, self._n_fit = float(tau), int(n_fit)
        self._method, self._epsilon, self._delta, self._sigma = method, epsilon, delta, sigma
        self._mu_budget = None if method == "rollback" else gdp_budget(epsilon, delta)
        # the row store, indexed by row id; a deleted row is wiped in place (arm -1, reward 0, no user)
        if row_ids is None:                        # every row of the fit is live
            row_ids = np.arange(self._n_fit)
            self._alive = np.ones(self._n_fit, dtype=bool)
        else:
            row_ids = np.asarray(row_ids, dtype=np.int64)
            self._alive = np.zeros(self._n_fit, dtype=bool)
            self._alive[row_ids] = True
        self._n_live = int(row_ids.size)
        if row_ids.size == self._n_fit:            # every row live (a fit): the arrays as they are
            self._arms = np.array(arms, dtype=np.int64)
            self._rewards = np.array(rewards, dtype=float)
        else:
            self._arms = np.full(self._n_fit, -1, dtype=np.int64)
            self._arms[row_ids] = np.asarray(arms, dtype=np.int64)
            self._rewards = np.zeros(self._n_fit)
            self._rewards[row_ids] = np.asarray(rewards, dtype=float)
        # user ids: each distinct id once, a code per row (-1 once deleted), live rows per id; an id
        # whose last row is deleted is forgotten (set to None, out of the lookup)
        self._user_ids = self._user_codes = self._user_live = None
        if users is not None:
            ids, codes = users
            self._user_codes = np.full(self._n_fit, -1, dtype=np.int64)
            self._user_codes[row_ids] = np.asarray(codes, dtype=np.int64)
            self._user_live = np.bincount(np.asarray(codes, dtype=np.int64), minlength=len(ids))
            self._user_ids = list(ids) if self._user_live.all() else \
                [u if c else None for u, c in zip(ids, self._user_live.tolist())]
        # the exact statistic of the live rows, summed in row order (bit for bit what fit gives)
        live_arms = self._arms if row_ids.size == self._n_fit else self._arms[row_ids]
        live_rewards = self._rewards if row_ids.size == self._n_fit else self._rewards[row_ids]
        self._counts = np.bincount(live_arms, minlength=m).astype(np.int64)
        self._exact_sums = list(exact_sums) if exact_sums is not None else \
            _exact_sums(live_arms, live_rewards, m)                           # exact, per arm
        self._sums = np.array([_rounded(v) for v in self._exact_sums])
        # the released-from statistic (None: nothing pending, the exact one)
        self._pub_counts = self._counts.copy() if pub_counts is None else np.asarray(pub_counts, np.int64).copy()
        self._pub_sums = self._sums.copy() if pub_sums is None else np.asarray(pub_sums, dtype=float).copy()
        # the released-from sums, exact: the live rows' sums plus, on arms with pending rows, theirs
        self._pub_exact = [e if not c else _exact(p) for e, c, p in
                           zip(self._exact_sums, np.asarray(pending_counts).tolist(), self._pub_sums.tolist())]
        self._pending_counts = np.asarray(pending_counts, dtype=np.int64).copy()
        self._pending_ids = tuple(int(i) for i in pending_ids)
        self._release_mus = list(release_mus)
        self._log = list(log)
        self._policy = LCBState(self._counts, self._sums, self._tau).arm if policy is None else int(policy)
        self._rng = rng
        self._user_rows = None                     # rows of each user id, built at the first deletion by user
        self._user_of = None                       # user id -> code, built at the first deletion by user


# %% [markdown]
# Pickling follows the saving contract (no generator, no row ids in the log), and the constructors:
# `fit` checks the arguments and numbers the labels; `_fit` (shared with `from_csv`, which numbers
# labels while it reads) checks the rewards, the users, tau and the method's parameters.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


# -- pickling: the same contract as save (no generator, no row ids in the log) ----------------
@add_to_class(LCBModel)
def __getstate__(self):
    state = {k: v for k, v in self.__dict__.items() if k not in ("_rng", "_user_rows", "_user_of")}
    state["_log"] = [r.without_rows() for r in self._log]
    return state


@add_to_class(LCBModel)
def __setstate__(self, state):
    self.__dict__.update(state)
    self._user_rows = self._user_of = None
    self._rng = np.random.default_rng()        # fresh OS entropy: the pickle held no key material


# -- constructors ---------------------------------------------------------------------------
@add_to_class(LCBModel)
@classmethod
def fit(cls, arms, rewards, *, users=None, labels=None, tau=None, method: str = "rollback",
        epsilon=None, delta=None, sigma=None, rng=None, reference: str = "conditional") -> "LCBModel":
    """Fit on rows ``(arms[i], rewards[i])`` (optionally ``users[i]``).

    Parameters
    ----------
    arms : sequence or 1-D array of hashable arm labels (integer arrays are numbered by counting).
    rewards : sequence of real numbers in [0, 1], one per row (NaN / infinities refused by name).
    users : optional sequence of user ids (str or int), one per row.
    labels : optional sequence of every arm label (arms without rows included), in arm order.
    tau : the confidence level, default ``1/N``, fixed for the model's life.
    method : ``"rollback"`` (exact) or ``"adaptive"`` (needs ``epsilon``, ``delta``, ``sigma``).
    rng : the noise generator (``None``: fresh OS entropy).
    reference : for ``method="adaptive"``, the reference world the promise holds against.
        ``"conditional"`` (default, Paper A's rule): a request is noised only when it sits on the
        served arm, so the promise holds given the releases already made (the served arm depends
        on the deleted rewards).  ``"literal"``: every request is noised while the accountant
        admits it, a decision from counts alone, so the promise holds against a model that never
        saw the deleted rows (chapter A9a, section 1).  ``method="rollback"`` is literal either way.

    Returns
    -------
    LCBModel
    """
    check_choice(method, "method", MODEL_METHODS)
    check_choice(reference, "reference", REFERENCES)
    for name, value in (("arms", arms), ("rewards", rewards), ("users", users)):
        if isinstance(value, np.ma.MaskedArray):
            raise TypeError(f"{name} must not be a masked array (its mask would be dropped silently)")
    labels, idx = _labels_and_index(arms, labels)
    return cls._fit(labels, idx, rewards, users=users, tau=tau, method=method, epsilon=epsilon, delta=delta,
                    sigma=sigma, rng=rng, reference=reference)


@add_to_class(LCBModel)
@classmethod
def _fit(cls, labels, idx, rewards, *, users, tau, method, epsilon, delta, sigma, rng, reference="conditional"):
    check_choice(method, "method", MODEL_METHODS)
    check_choice(reference, "reference", REFERENCES)
    rewards = _check_rewards(rewards, idx.size)
    if users is not None and not (isinstance(users, tuple) and len(users) == 2 and users[0] is _FACTORED):
        users = _factor_users(users, idx.size)
    elif users is not None:
        users = users[1]
    n = idx.size
    if tau is None:
        if n < 2:
            raise ValueError(f"tau defaults to 1/N, which needs N >= 2, got N = {n}")
        tau = 1.0 / n
    tau = check_tau(tau)
    if method == "adaptive":
        if sigma is None or epsilon is None or delta is None:
            raise ValueError("method 'adaptive' needs epsilon, delta and sigma")
        check_epsilon(epsilon), check_delta(delta)
        sigma = check_positive(sigma, "sigma")
        epsilon, delta = float(epsilon), float(delta)
    elif not (epsilon is None and delta is None and sigma is None):
        raise ValueError("method 'rollback' is exact: epsilon, delta and sigma must be None")
    rng = as_generator(rng)
    return cls(labels=labels, tau=tau, n_fit=n, arms=idx, rewards=rewards, row_ids=None,
               users=users, pub_counts=None, pub_sums=None, pending_counts=np.zeros(len(labels), np.int64),
               pending_ids=(), release_mus=[], log=[], policy=None, method=method, epsilon=epsilon,
               delta=delta, sigma=sigma, rng=rng, reference=reference)


# %% [markdown]
# Fitting from a file or a data frame: `from_csv` reads the columns it needs in one pass (labels
# typed as pandas types them), `from_frame` takes any object with named columns.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(LCBModel)
@classmethod
def from_csv(cls, path, *, arm: str = "arm", reward: str = "reward", user: str | None = None,
             progress=None, **options) -> "LCBModel":
    """Fit on a CSV file with a header row.

    Parameters
    ----------
    path : the CSV file.
    arm, reward, user : the column names (``user`` optional).
    progress : None (a bar on a terminal for a large file), False, or ``callable(stage, done, total)``.
    **options : as in ``fit``.

    Arm labels are integers when every label in the file is a canonical decimal integer
    (``"7"``, ``"-3"``, not ``"07"``), else strings; user ids likewise.  Read with pandas when it
    is installed, with numpy's reader otherwise: the same model either way.

    Returns
    -------
    LCBModel
    """
    size = os.path.getsize(path) if isinstance(path, (str, os.PathLike)) and os.path.isfile(path) else 0
    stages = _Stages(progress, ("read", "fit"), "from_csv", size)
    cols = read_csv_columns(path, [c for c in (arm, reward, user) if c is not None], reward=reward,
                            unsorted=() if user is None else (user,))
    stages.step("read")
    users = None
    if user is not None:
        ids, codes = cols[user]
        if ids.dtype.kind == "f":
            raise TypeError(f"user ids must be str or int (what a saved file holds); column {user!r} holds "
                            f"numbers that are not integers")
        users = (_FACTORED, (ids.tolist(), codes))            # typed: all int or all str
    values, codes = cols[arm]
    if "labels" in options:
        model = cls.fit(values[codes], cols[reward], users=None if users is None else ids[cols[user][1]].tolist(),
                        **options)
    else:
        unknown = set(options) - {"tau", "method", "epsilon", "delta", "sigma", "rng", "reference"}
        if unknown:
            raise TypeError(f"from_csv got an unexpected option {sorted(unknown)[0]!r}")
        opts = {"tau": None, "method": "rollback", "epsilon": None, "delta": None, "sigma": None, "rng": None,
                "reference": "conditional",
                **options}
        model = cls._fit(tuple(values.tolist()), codes, cols[reward], users=users, **opts)
    stages.step("fit")
    return model


@add_to_class(LCBModel)
@classmethod
def from_frame(cls, frame, *, arm: str = "arm", reward: str = "reward", user: str | None = None,
               **options) -> "LCBModel":
    """Fit on a pandas DataFrame (or any mapping of column name -> sequence); labels keep their type.

    Parameters
    ----------
    frame : pandas.DataFrame or mapping
        The columns (column name -> sequence).
    arm, reward, user
        The column names, as in ``from_csv``.
    **options
        As in ``fit``.

    Returns
    -------
    LCBModel
    """
    names = list(frame.keys()) if hasattr(frame, "keys") else []
    missing = [c for c in (arm, reward, user) if c is not None and c not in names]
    if missing:
        raise ValueError(f"the frame has no column {missing[0]!r}; its columns are {names}")
    arms = frame[arm]
    arms = np.asarray(arms) if getattr(np.asarray(arms), "dtype", None) is not None and \
        np.asarray(arms).dtype.kind in "biuf" else list(arms)
    return cls.fit(arms, np.asarray(frame[reward]), users=None if user is None else list(frame[user]),
                   **options)


# %% [markdown]
# What the model shows: its fixed parameters, the served arm, the exact statistic of what remains and
# the released-from one.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


# -- what the model shows -------------------------------------------------------------------
@add_to_class(LCBModel)
@property
def reference(self) -> str:
    """The reference world the model's promise holds against: ``"literal"`` (rollback models, and
    adaptive models fitted with ``reference="literal"``) or ``"conditional"``."""
    return self._reference


@add_to_class(LCBModel)
@property
def policy(self):
    """The arm label of the latest release."""
    return self._labels[self._policy]


@add_to_class(LCBModel)
@property
def statistics(self) -> LCBState:
    """The exact statistic of the rows not yet deleted (tau fixed at fit): bit for bit ``fit`` on them."""
    return LCBState(self._counts, self._sums, self._tau)


@add_to_class(LCBModel)
@property
def released_from(self) -> LCBState:
    """The statistic releases are computed from: the live rows and the pending ones."""
    return LCBState(self._pub_counts, np.clip(self._pub_sums, 0.0, self._pub_counts), self._tau)


# %% [markdown]
# The deletion log, the pending requests, and the accountant's budget (as a Gaussian-DP $\mu$).

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(LCBModel)
@property
def log(self) -> tuple:
    return tuple(self._log)


@add_to_class(LCBModel)
@property
def pending(self) -> tuple:
    """Ids of the requests whose rows are still inside the released-from statistic."""
    return self._pending_ids


@add_to_class(LCBModel)
@property
def pending_counts(self) -> np.ndarray:
    """Per-arm number of pending rows (public: ``plan_release`` can be replayed from it)."""
    return _frozen(self._pending_counts)


@add_to_class(LCBModel)
@property
def mu_max(self) -> float:
    """The largest composed ``mu_{j:t}`` over the requests so far."""
    return float(request_mus(self._release_mus)[0]) if self._release_mus else 0.0


@add_to_class(LCBModel)
@property
def budget_left(self):
    """How much Gaussian budget is left, as ``mu``: ``sqrt(mu_budget^2 - mu_max^2)`` (None for rollback)."""
    if self._mu_budget is None:
        return None
    return float(np.sqrt(max(self._mu_budget ** 2 - self.mu_max ** 2, 0.0)))


@add_to_class(LCBModel)
@property
def row_ids(self) -> np.ndarray:
    return _frozen(np.flatnonzero(self._alive))


@add_to_class(LCBModel)
def __len__(self) -> int:
    return self._n_live


# %% [markdown]
# The model in numbers, and its `repr`.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(LCBModel)
def summary(self) -> dict:
    """What the model is, in numbers: rows, arms, served arm, deletions, pending, budget."""
    out = {"method": self._method, "reference": self._reference, "rows": self._n_live, "rows_at_fit": self._n_fit,
           "arms": len(self._labels), "policy": self.policy, "tau": self._tau,
           "requests": len(self._log), "rows_deleted": self._n_fit - self._n_live,
           "pending_requests": len(self._pending_ids), "pending_rows": int(self._pending_counts.sum()),
           "users": None if self._user_ids is None else int(np.count_nonzero(self._user_live))}
    if self._method == "adaptive":
        out.update(epsilon=self._epsilon, delta=self._delta, sigma=self._sigma, mu_budget=self._mu_budget,
                   mu_max=self.mu_max, budget_left=self.budget_left,
                   delta_spent=gdp_delta(self.mu_max, self._epsilon))
    return out


@add_to_class(LCBModel)
def __repr__(self) -> str:
    s = self.summary()
    text = (f"LCBModel({s['method']}: {s['rows']:,} rows of {s['rows_at_fit']:,}, {s['arms']} arms, "
            f"serving {s['policy']!r}; {s['requests']} requests, {s['rows_deleted']:,} rows deleted, "
            f"{s['pending_requests']} pending ({s['pending_rows']} rows)")
    if self._method == "adaptive":
        text += (f"; eps = {self._epsilon:g}, delta = {self._delta:g}, mu {s['mu_max']:.3g} of "
                 f"{s['mu_budget']:.3g} spent")
    return text + ")"


# %% [markdown]
# Deleting: `delete` finds the rows (by id, or every live row of a user), builds the
# `DeletionRequest` of their arms and rewards and calls the protocol's `unlearn` on the model's
# `release_state`; then it commits — the new state, the rows wiped, their users forgotten, the record
# (with its row ids) logged.  A refused request raises before anything is committed.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


# -- deletion -------------------------------------------------------------------------------
@add_to_class(LCBModel)
def _rows_of(self, user, rows):
    if (user is None) == (rows is None):
        raise ValueError("pass exactly one of user=... or rows=...")
    if user is not None:
        if self._user_ids is None:
            raise ValueError("the model was fitted without user ids: delete by rows=...")
        lookup = self._user_of                  # caches are kept only once the request is accepted
        if lookup is None:
            lookup = {u: i for i, u in enumerate(self._user_ids) if u is not None}
        code = lookup.get(check_user(user))
        if code is None:
            raise ValueError(f"unknown user {user!r} (never in the data, or already deleted)")
        self._user_of = lookup
        if self._user_rows is None:
            order = np.argsort(self._user_codes, kind="stable")
            dead = int(np.sum(self._user_codes < 0))
            order = order[dead:]
            offsets = np.concatenate([[0], np.cumsum(np.bincount(self._user_codes[order],
                                                                 minlength=len(self._user_ids)))])
            self._user_rows = (order.astype(np.int64), offsets)
        order, offsets = self._user_rows
        found = order[offsets[code]:offsets[code + 1]]
        return np.sort(found[self._alive[found]])
    return check_row_ids(rows, self._n_fit, self._alive)


@add_to_class(LCBModel)
def delete(self, *, user=None, rows=None) -> DeletionRecord:
    """Delete one user's rows or the given rows, then make one release (the new ``policy``).

    Parameters
    ----------
    user : a user id of the fitted data (all its live rows are deleted), or
    rows : a 1-D sequence of live row ids (exactly one of the two).

    Returns
    -------
    DeletionRecord

    Refused (``ValueError`` / ``TypeError``, nothing changed): unknown or already deleted rows or
    user, a row named twice, both or neither of ``user`` and ``rows``."""
    rows = self._rows_of(user, rows)
    request = DeletionRequest(self._arms[rows], self._rewards[rows])
    new, record = unlearn(self.release_state, request, rng=self._rng)
    record = dataclasses.replace(record, rows=tuple(rows.tolist()))
    del request
    # commit: wipe the rows, forget their users, then the statistics, the accountant and the log
    self._alive[rows] = False
    self._arms[rows], self._rewards[rows] = -1, 0.0
    self._n_live -= int(rows.size)
    if self._user_ids is not None:
        codes = self._user_codes[rows]
        self._user_codes[rows] = -1
        np.subtract.at(self._user_live, codes, 1)
        for c in np.unique(codes[self._user_live[codes] == 0]).tolist():
            if self._user_of is not None:
                del self._user_of[self._user_ids[c]]
            self._user_ids[c] = None
    self._counts, self._sums, self._exact_sums = new.counts.copy(), new.sums.copy(), list(new.exact_sums)
    self._pub_counts, self._pub_sums, self._pub_exact = new.pub_counts.copy(), new.pub_sums.copy(), list(new.pub_exact)
    self._pending_counts, self._pending_ids = new.pending_counts.copy(), new.pending_ids
    self._release_mus, self._policy = list(new.release_mus), new.policy
    self._log.append(record)
    return record


@add_to_class(LCBModel)
@property
def release_state(self) -> "ReleaseState":
    """The model's immutable ``ReleaseState`` now: what ``unlearn`` of the next request starts from."""
    return ReleaseState(self._labels, self._tau, self._method, self._epsilon, self._delta, self._sigma,
                        self._mu_budget, self._reference, self._counts, self._sums, self._exact_sums,
                        self._pub_counts, self._pub_sums, self._pub_exact, self._pending_counts,
                        self._pending_ids, self._release_mus, self._policy, len(self._log))


# %% [markdown]
# **Reading a CSV file.** `from_csv` reads only the named columns, with pandas' C reader when pandas
# is installed and with numpy's `loadtxt` otherwise, and types each label column by pandas' own
# rule, so that `from_csv(path)` and `from_frame(pandas.read_csv(path))` agree: a column whose every
# value is an integer (`7`, `-3`, `+7`, `007`; surrounding spaces allowed) holds integer labels,
# sorted as numbers; else, when every value is a number, float labels; else text.  So a file of item
# ids 2 and 10 gives the labels 2 and 10 with 2 first, and a tie between them goes to 2 as it does
# from a frame.  (As in pandas, `07` and `7` are one integer label.)  A missing value (an empty field,
# `NA`, `nan`, ... — pandas' default list) in a label or user column is refused.  Rewards are parsed
# as correctly rounded binary64 by both readers (pandas with `float_precision="round_trip"`); a
# missing or non-finite reward is refused by name.

# %% tags=["export"]
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
_NA_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _typed_text(uniques, column):
    """Distinct texts of a column -> their values typed by pandas' rule (all int, all float, or all str)."""
    if any(u.strip() in _NA_TEXT for u in uniques):
        raise ValueError(f"column {column!r} has missing values (empty or NA fields)")
    if all(_INT_TEXT.fullmatch(u) for u in uniques):
        ints = [int(u) for u in uniques]
        if all(_INT64[0] <= v <= _INT64[1] for v in ints):
            return np.array(ints, dtype=np.int64)
    try:
        return np.array([float(u) for u in uniques], dtype=float)
    except ValueError:
        return np.array(uniques, dtype=object)


def _typed_column(values, codes, sort):
    """(distinct typed values, each row's code into them), the values sorted when ``sort``."""
    codes = np.asarray(codes, dtype=np.int64)
    if not sort:
        return values, codes
    order = np.argsort(values, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return values[order], rank[codes]

# %% [markdown]
# `read_csv_columns` reads the columns a model is fitted on from a CSV file, typing each column by
# pandas' rule (all integers, all floats, or all strings) and numbering its distinct values, without
# pandas.

# %% tags=["export"]
def read_csv_columns(path, names, *, reward=None, unsorted=()) -> dict:
    """Read columns ``names`` of a CSV file with a header row: ``{name: (distinct typed values, codes)}``
    for every column but ``reward``, which is returned as a float64 array.

    Parameters
    ----------
    path : the CSV file.
    names : the columns to read (a missing one is refused, naming the columns the file has).
    reward : the name of the numeric column (parsed as binary64, correctly rounded).
    unsorted : columns whose distinct values need not be sorted (e.g. user ids).

    Returns
    -------
    dict
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    with open(path, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), None)
    if not header:
        raise ValueError(f"{os.fspath(path)}: the CSV file has no header row")
    missing = [c for c in names if c not in header]
    if missing:
        raise ValueError(f"the CSV file has no column {missing[0]!r}; its columns are {header}")
    try:
        import pandas
    except ImportError:
        pandas = None
    out = {}
    if pandas is not None:
        with warnings.catch_warnings():          # deprecated in pandas 3 (whose default is exact too), not gone
            warnings.filterwarnings("ignore", message=".*float_precision.*")
            try:
                frame = pandas.read_csv(path, usecols=list(names), float_precision="round_trip", encoding="utf-8")
            except TypeError:                    # a pandas without the option: its default parser
                frame = pandas.read_csv(path, usecols=list(names), encoding="utf-8")
        for c in names:
            col = frame[c].to_numpy()
            if c == reward:
                if col.dtype.kind not in "iuf":
                    bad = next(v for v in col.tolist() if not _parses_as_float(v))
                    raise ValueError(f"column {reward!r} must hold numbers, got {bad!r}")
                out[c] = col.astype(float)
                continue
            if col.dtype.kind == "f" and np.isnan(col).any() or col.dtype.kind == "O" and frame[c].isna().any():
                raise ValueError(f"column {c!r} has missing values (empty or NA fields)")
            if col.dtype.kind in "iu":
                values, codes = _integer_labels(col.astype(np.int64))
            else:
                codes, values = pandas.factorize(col, sort=False)
                values = np.asarray(values)
                if values.dtype.kind == "O":
                    values = np.array([str(v) for v in values.tolist()], dtype=object)
            out[c] = _typed_column(values, codes, c not in unsorted)
        return out
    cols = [header.index(c) for c in names]
    table = np.loadtxt(path, delimiter=",", skiprows=1, usecols=cols, dtype=str, comments=None, quotechar='"',
                       encoding="utf-8", ndmin=2)
    for j, c in enumerate(names):
        text = table[:, j]
        if c == reward:
            try:
                out[c] = np.char.strip(text).astype(float)       # correctly rounded, as Python's float
            except ValueError:                                   # missing values (NaN, refused by fit) or text
                out[c] = np.array([np.nan if v.strip() in _NA_TEXT else _float_or_refuse(v, reward)
                                   for v in text.tolist()], dtype=float)
            continue
        uniques, codes = np.unique(text, return_inverse=True)
        out[c] = _typed_column(_typed_text(uniques.tolist(), c), codes, c not in unsorted)
    return out


def _float_or_refuse(v, column):
    try:
        return float(v)
    except ValueError:
        raise ValueError(f"column {column!r} must hold numbers, got {v!r}") from None


def _parses_as_float(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True

# %% [markdown]
# The accountant's picture: the composed $\mu_{1:t}$ after every request against the budget $\mu^*$ of
# $(\varepsilon, \delta)$, with the requests that rolled back the pending rows marked.

# %% tags=["export"]
def plot_budget(model, ax=None):
    """The accountant over the model's deletion stream: the composed ``mu_{1:t}`` after every request,
    the budget ``mu*`` and the requests that rolled back pending rows.  Returns the axes.

    Parameters
    ----------
    model : LCBModel
        An adaptive model.
    ax : matplotlib.axes.Axes or None
        Where to draw; ``None``: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_instance(model, LCBModel, "model")
    import matplotlib.pyplot as plt
    if ax is None:
        ax = plt.subplots(figsize=(6.5, 3))[1]
    mus = [r.mu_max for r in model.log]
    ax.step(range(len(mus)), mus, where="post", label=r"composed $\mu_{1:t}$")
    if model.mu_budget is not None:
        ax.axhline(model.mu_budget, color="k", ls="--",
                   label=rf"budget $\mu^\star$ at $(\varepsilon, \delta) = ({model._epsilon:g}, {model._delta:g})$")
    for r in model.log:
        if r.reason == "budget":
            ax.axvline(r.request_id, color="tab:red", alpha=0.3)
    ax.set_xlabel("request")
    ax.set_ylabel(r"$\mu$")
    ax.legend(loc="lower right", fontsize=8)
    return ax


# %% [markdown]
# ### 2.4 Persistence
#
# `save(path)` writes one uncompressed `.npz` file (an open format: a zip of `.npy` arrays) through
# a temporary file in the same directory, `fsync` and `os.replace`, so a crash half-way leaves the
# previous file untouched.  The temporary file is named after the target and the writing process
# (`.model.npz.<pid>.<random>.tmp`); a process killed half-way cannot remove it, so every later save
# to the same target removes the temporary files whose process no longer runs (their content — rows
# as they were before a deletion — is exactly what must not outlive the deletion; removing a file
# does not scrub the disk blocks, which is the file system's business).  `load` never reads them.
#
# The file has three **sections**, each with its own SHA-256 digest:
# * **statistics** — settings (labels, $\tau$, method, $\varepsilon$, $\delta$, $\sigma$, served arm),
#   the exact and the released-from per-arm counts and sums, the pending counts and request ids;
#   `load_statistics(path)` reads and verifies only this section, in $O(m)$ whatever the history;
# * **log** — the accountant's shifts and the deletion log (its row ids only with
#   `save(path, keep_row_ids=True)`, in an entry of their own);
# * **rows** — the live row store (ids, arms, rewards, user ids).
#
# A random **save id** is written into the statistics, and the log and rows digests are computed
# over the statistics digest too: the three sections of one save are bound together, so sections
# swapped between two genuine saves of one model are refused.
#
# **Deleted row ids are not saved by default.** The log keeps, per request, how many rows it deleted
# and what it did, not which rows: a deleted row id is itself a fact about the deleted data (joined
# with any other record keyed by row, it names the person), and nothing needs it — the row store
# already says which rows are gone (every id below `n_fit` that is not live).  A hash of the ids under
# a per-model secret would only move the problem to keeping that secret.  `keep_row_ids=True` opts in
# (an audit trail that must name rows).
#
# **What a checksum does not do.** The digests detect corruption — a flipped bit, a truncated copy,
# a section from another save — not tampering: whoever can edit the file can recompute them.  So
# `load` also checks everything it can: every shape, width and range, uniqueness of row ids, the
# settings' ranges, the served arm, rewards in $[0, 1]$, and every consistency between sections (the
# exact statistic is, bit for bit, what the row store sums to; released-from = exact + pending; the
# log replays to the accountant's shifts, the pending ids and the number of deleted rows; with no
# pending row the served arm is the LCB arm).  An edit that keeps all of that consistent — e.g. a
# reward changed together with its arm's sums, user ids permuted, or δ raised (nothing stored is
# derived from δ, so a larger budget passes every check) — is **undetectable without a key**.  For those who need tampering detected,
# `save(path, key=...)` adds an HMAC-SHA256 over the three digests with a secret key the user keeps
# (at least 16 bytes, never written to the file); `load(path, key=...)` and
# `load_statistics(path, key=...)` refuse a file whose tag does not match, a file without a tag, and
# (without `key`) a file that has one.
#
# `save`, `load` and `from_csv` take `progress=`: by default a tqdm bar on a terminal for a large
# file (about 50 MB and up: several seconds), silent otherwise; `False` silences it; a callable is
# called as `progress(stage, done, total)` after each stage (for logs and notebooks).
#
# Sizes are checked against the file **before** anything is allocated: every entry must be stored
# uncompressed, its `.npy` header must name the one dtype and number of dimensions the format
# allows for it, and the header's shape times the item size must be exactly the entry's size, which
# must fit in the file.

# %% tags=["export"]
_STAT_KEYS = ("counts", "sums", "pub_counts", "pub_sums", "pending_counts", "meta")
_LOG_KEYS = ("release_mus", "log", "log_rows", "log_offsets")
_ROW_KEYS = ("row_ids", "row_arms", "row_rewards", "user_ids", "row_user_codes")
_DIGEST_KEYS = ("stats_sha256", "log_sha256", "rows_sha256")
_ENTRY_TYPES = {                  # entry -> (dtype, ndim) the format allows
    "counts": ("<i8", 1), "sums": ("<f8", 1), "pub_counts": ("<i8", 1), "pub_sums": ("<f8", 1),
    "pending_counts": ("<i8", 1), "meta": ("|u1", 1), "release_mus": ("<f8", 1), "log": ("|u1", 1),
    "log_rows": ("<i8", 1), "log_offsets": ("<i8", 1), "row_ids": ("<i8", 1), "row_arms": ("<i8", 1),
    "row_rewards": ("<f8", 1), "user_ids": ("|u1", 1), "row_user_codes": ("<i8", 1), "stats_sha256": ("|u1", 1), "log_sha256": ("|u1", 1),
    "rows_sha256": ("|u1", 1), "hmac_sha256": ("|u1", 1),
}
_MIN_KEY_BYTES = 16


_PROGRESS_BYTES = 50_000_000   # files (or models) this large take seconds: a bar on a terminal by default


class _Stages:
    """Progress over the stages of a call that can take seconds: ``progress=None`` shows a tqdm bar when
    standard error is a terminal and the input is large (silent otherwise); ``False``: silent; a
    callable is called as ``progress(stage, done, total)`` after each stage."""

    def __init__(self, progress, stages, desc, size):
        if not (progress is None or progress is False or callable(progress)):
            raise TypeError(f"progress must be None, False or a callable, got {type(progress).__name__}")
        self.callback = progress if callable(progress) else None
        self.total, self.done, self.bar = len(stages), 0, None
        if progress is None and size >= _PROGRESS_BYTES:
            try:
                from tqdm import tqdm
                if sys.stderr.isatty():
                    self.bar = tqdm(total=self.total, desc=desc, unit="stage", file=sys.stderr)
            except (ImportError, AttributeError, ValueError, OSError):
                self.bar = None

    def step(self, stage: str) -> None:
        self.done += 1
        if self.callback is not None:
            self.callback(stage, self.done, self.total)
        if self.bar is not None:
            self.bar.set_postfix_str(stage)
            self.bar.update(1)
            if self.done == self.total:
                self.bar.close()


def _digest(arrays, keys, prefix: bytes = b"") -> str:
    h = hashlib.sha256(prefix)
    for key in keys:
        a = np.ascontiguousarray(arrays[key])
        h.update(key.encode() + b"\0" + str(a.dtype).encode() + b"\0" + str(a.shape).encode() + b"\0")
        h.update(a.tobytes())
    return h.hexdigest()


def _tag(key: bytes, digests) -> str:
    return hmac.new(key, "\n".join(digests).encode(), hashlib.sha256).hexdigest()


def _check_key(key):
    if key is None:
        return None
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be bytes (a secret the user keeps), got {type(key).__name__}")
    if len(key) < _MIN_KEY_BYTES:
        raise ValueError(f"key must hold at least {_MIN_KEY_BYTES} bytes, got {len(key)}")
    return bytes(key)


def _json_ok(values, name):
    for v in values:
        if not isinstance(v, (str, int)) or isinstance(v, bool):
            raise TypeError(f"{name} must be str or int to be saved, got {type(v).__name__}")


def _as_bytes(obj) -> np.ndarray:
    return np.frombuffer(json.dumps(obj, sort_keys=True).encode(), dtype=np.uint8)


def _write_npz(fh, arrays) -> None:
    np.savez(fh, **arrays)


def _record_json(r: DeletionRecord) -> dict:
    return {"request_id": r.request_id, "n_rows": r.n_rows, "method": r.method, "reason": r.reason,
            "rolled_back": list(r.rolled_back), "noised_arms": list(r.noised_arms), "sigma": r.sigma,
            "mu_release": r.mu_release, "mu_max": r.mu_max, "delta_at_target": r.delta_at_target,
            "policy": r.policy}

# %% [markdown]
# **What a file holds.** `_model_arrays` lays the model out as named arrays: the statistics section
# (exact counts and sums, released-from statistic, pending rows), the log of releases and, optionally,
# the row store; each section gets its own digest.

# %% tags=["export"]
def _model_arrays(model: "LCBModel", keep_row_ids: bool, key) -> dict:
    _json_ok(model._labels, "arm labels")
    live = np.flatnonzero(model._alive)
    user_ids, user_codes = None, np.zeros(0, dtype=np.int64)
    if model._user_ids is not None:
        codes = model._user_codes[live]
        used = np.flatnonzero(np.bincount(codes, minlength=len(model._user_ids)))   # ids with a live row
        user_ids = [model._user_ids[c] for c in used.tolist()]
        user_codes = np.searchsorted(used, codes).astype(np.int64)
        _json_ok(user_ids, "user ids")
    if keep_row_ids and any(r.rows is None for r in model._log):
        raise ValueError("keep_row_ids=True: this model's log was read without row ids")
    meta = {
        "format": FORMAT, "save_id": os.urandom(16).hex(), "labels": list(model._labels), "tau": model._tau,
        "n_fit": model._n_fit, "n_live": model._n_live, "method": model._method, "epsilon": model._epsilon,
        "delta": model._delta, "sigma": model._sigma, "policy": model._policy,
        "pending_ids": list(model._pending_ids), "row_ids_kept": bool(keep_row_ids),
    }
    if model._method == "adaptive" and model._reference == "literal":
        meta["reference"] = "literal"          # absent: the conditional default (files saved before it existed)
    rows_of_log = [list(r.rows) for r in model._log] if keep_row_ids else []
    arrays = {
        "counts": model._counts, "sums": model._sums, "pub_counts": model._pub_counts,
        "pub_sums": model._pub_sums, "pending_counts": model._pending_counts, "meta": _as_bytes(meta),
        "release_mus": np.array(model._release_mus, dtype=float),
        "log": _as_bytes([_record_json(r) for r in model._log]),
        "log_rows": np.array([i for rows in rows_of_log for i in rows], dtype=np.int64),
        "log_offsets": np.cumsum([0] + [len(rows) for rows in rows_of_log], dtype=np.int64) if keep_row_ids
        else np.zeros(0, dtype=np.int64),
        "row_ids": live, "row_arms": model._arms[live], "row_rewards": model._rewards[live],
        "user_ids": _as_bytes(user_ids), "row_user_codes": user_codes,
    }
    stats = _digest(arrays, _STAT_KEYS)
    digests = (stats, _digest(arrays, _LOG_KEYS, stats.encode()), _digest(arrays, _ROW_KEYS, stats.encode()))
    for name, value in zip(_DIGEST_KEYS, digests):
        arrays[name] = np.frombuffer(value.encode(), dtype=np.uint8)
    if key is not None:
        arrays["hmac_sha256"] = np.frombuffer(_tag(key, digests).encode(), dtype=np.uint8)
    return arrays


def _temporary_files(path):
    """Temporary files of earlier saves to ``path``: (name, pid of the process that wrote it)."""
    folder, base = os.path.split(os.path.abspath(path))
    prefix = f".{base}."
    for name in os.listdir(folder):
        if name.startswith(prefix) and name.endswith(".tmp"):
            pid = name[len(prefix):-4].split(".")[0]
            if pid.isdigit():
                yield os.path.join(folder, name), int(pid)


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# %% tags=["export"]
def remove_stale_temporary_files(path) -> list:
    """Remove the temporary files that a save to ``path`` interrupted by a killed process left behind
    (a file of a process that still runs is kept: it may be another writer).  Returns their paths.

    Parameters
    ----------
    path : str or os.PathLike
        The model file whose folder is cleaned (the folder must exist).

    Returns
    -------
    list of str
        The paths removed.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ValueError(f"path must name a file in an existing folder, got {os.fspath(path)!r}")
    removed = []
    for name, pid in _temporary_files(path):
        if pid != os.getpid() and not _process_runs(pid):
            try:
                os.remove(name)
                removed.append(name)
            except FileNotFoundError:
                pass
    return removed

# %% [markdown]
# `save_model` writes those arrays atomically (temporary file, fsync, `os.replace`), so a crash leaves
# either the old file or the new one, never half of each; with a key the digests are bound by an HMAC
# tag.

# %% tags=["export"]
def save_model(model: "LCBModel", path, *, keep_row_ids: bool = False, key=None, progress=None) -> None:
    """Write ``model`` to ``path`` (``.npz``) atomically: temporary file, fsync, ``os.replace``.

    Parameters
    ----------
    model : LCBModel
    path : the file to write (its folder must exist).
    keep_row_ids : also write the deleted row ids of every request (default: only their number).
    key : optional secret (bytes, at least 16) for an HMAC-SHA256 tag; ``load`` then needs it.
    progress : None (a bar on a terminal for a large model), False, or ``callable(stage, done, total)``.
    """
    if not isinstance(model, LCBModel):
        raise TypeError(f"model must be an LCBModel, got {type(model).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    check_bool(keep_row_ids, "keep_row_ids")
    key = _check_key(key)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"path must name a file in an existing folder, got {path!r}")
    stages = _Stages(progress, ("arrays and digests", "written", "renamed"), "save", 24 * model._n_fit)
    arrays = _model_arrays(model, keep_row_ids, key)
    stages.step("arrays and digests")
    remove_stale_temporary_files(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.{os.getpid()}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_npz(fh, arrays)
            fh.flush()
            os.fsync(fh.fileno())
        stages.step("written")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    try:                                           # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    stages.step("renamed")


# %% [markdown]
# ### 2.5 Loading: every entry checked before it is used
#
# The reader opens the zip itself: for each entry it checks the storage and the `.npy` header
# against the file's size before reading a byte of data, then verifies the digests (and the key's
# tag), then the invariants and the consistencies listed above.  Every refusal is a `ValueError`
# that starts with the file's path and names the entry or field and the rule it broke.

# %% tags=["export"]
class _Refused(ValueError):
    """Internal marker of a refusal already worded (re-raised as a plain ``ValueError``)."""


def _refuse(path, what):
    raise _Refused(f"{os.fspath(path)}: {what}")


def _plain(fn):
    """Refusals leave the public functions as plain ``ValueError`` (the package's one rule)."""
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _Refused as err:
            raise ValueError(str(err)) from None
    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def _read_entry(path, zf, info, name, file_size):
    dtype, ndim = _ENTRY_TYPES[name]
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
        _refuse(path, f"entry {name!r} is not stored uncompressed")
    if info.file_size > file_size:
        _refuse(path, f"entry {name!r} claims {info.file_size} bytes, more than the file's {file_size}")
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, got = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, got = np.lib.format.read_array_header_2_0(fh)
        else:
            _refuse(path, f"entry {name!r}: unsupported .npy version {version}")
        if got != np.dtype(dtype) or fortran or len(shape) != ndim:
            _refuse(path, f"entry {name!r} must be a {ndim}-D {np.dtype(dtype)} array, "
                          f"got {len(shape)}-D {got}{' (Fortran order)' if fortran else ''}")
        nbytes = math.prod(int(s) for s in shape) * got.itemsize
        if fh.tell() + nbytes != info.file_size:
            _refuse(path, f"entry {name!r}: its header claims shape {shape} ({nbytes} bytes), "
                          f"but the entry holds {info.file_size - fh.tell()} bytes of data")
        data = fh.read(nbytes)
    if len(data) != nbytes:
        _refuse(path, f"entry {name!r} is truncated")
    return np.frombuffer(data, dtype=got).reshape(shape)


def _read_entries(path, keys):
    """The named entries of a model file, each checked against the file's size before it is read;
    also every digest entry and the tag if present.  Unknown or missing entries are refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    try:
        file_size = os.path.getsize(path)
        with zipfile.ZipFile(path) as zf:
            infos = {}
            for info in zf.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else None
                if name not in _ENTRY_TYPES or name in infos:
                    _refuse(path, f"unexpected entry {info.filename!r}")
                infos[name] = info
            missing = [k for k in _STAT_KEYS + _LOG_KEYS + _ROW_KEYS + _DIGEST_KEYS if k not in infos]
            if missing:
                _refuse(path, f"entry {missing[0]!r} is missing")
            wanted = list(keys) + list(_DIGEST_KEYS) + (["hmac_sha256"] if "hmac_sha256" in infos else [])
            return {k: _read_entry(path, zf, infos[k], k, file_size) for k in wanted}
    except _Refused as err:
        raise ValueError(str(err)) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError) as err:
        raise ValueError(f"{os.fspath(path)}: not a readable model file ({err})") from None

# %% [markdown]
# Before any section is trusted its digest is checked, bound to the statistics digest, and then the
# key's tag; the JSON entries are parsed with plain types only.

# %% tags=["export"]
def _verify(path, arrays, sections, key):
    """Digests of the given sections (bound to the statistics digest), then the key's tag."""
    try:
        stored = {k: bytes(arrays[k]).decode("ascii") for k in _DIGEST_KEYS}
    except UnicodeDecodeError:
        _refuse(path, "a digest entry is not a hex digest")
    stats = stored["stats_sha256"]
    keys = {"stats_sha256": (_STAT_KEYS, b""), "log_sha256": (_LOG_KEYS, stats.encode()),
            "rows_sha256": (_ROW_KEYS, stats.encode())}
    for name in sections:
        entries, prefix = keys[name]
        if _digest(arrays, entries, prefix) != stored[name]:
            what = {"stats_sha256": "statistics", "log_sha256": "log", "rows_sha256": "rows"}[name]
            _refuse(path, f"checksum mismatch in the {what} section (corrupted, altered, or taken from "
                          f"another save)")
    has_tag = "hmac_sha256" in arrays
    if key is None and has_tag:
        _refuse(path, "the file is authenticated (HMAC-SHA256): pass key=... to load it")
    if key is not None:
        if not has_tag:
            _refuse(path, "key given but the file carries no HMAC tag (saved without key=...)")
        if not hmac.compare_digest(_tag(key, [stored[k] for k in _DIGEST_KEYS]).encode(), bytes(arrays["hmac_sha256"])):
            _refuse(path, "HMAC tag mismatch: the file was altered, or the key is not the one it was saved with")


def _json_entry(path, arrays, name):
    try:
        return json.loads(bytes(arrays[name]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        _refuse(path, f"entry {name!r} is not valid JSON ({err})")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

# %% [markdown]
# **Loading checks every section.** The statistics section must describe a model `fit` could have
# produced: consistent counts and sums, pending rows, and a served arm that is the LCB arm when
# nothing is pending.

# %% tags=["export"]
_RECORD_FIELDS = {"request_id", "n_rows", "method", "reason", "rolled_back", "noised_arms", "sigma", "mu_release",
                  "mu_max", "delta_at_target", "policy"}


_META_FIELDS = {"format", "save_id", "labels", "tau", "n_fit", "n_live", "method", "epsilon", "delta", "sigma",
                "policy", "pending_ids", "row_ids_kept"}


def _check_statistics_section(path, a) -> dict:
    meta = _json_entry(path, a, "meta")
    if not isinstance(meta, dict) or set(meta) - {"reference"} != _META_FIELDS:
        _refuse(path, f"settings must hold exactly the fields {sorted(_META_FIELDS)} (and, for a literal "
                      f"adaptive model, 'reference')")
    if "reference" in meta and (meta["reference"] != "literal" or meta["method"] != "adaptive"):
        _refuse(path, f"reference, when present, must be 'literal' on an adaptive model, got {meta['reference']!r}")
    if meta["format"] != FORMAT:
        _refuse(path, f"unsupported format {meta['format']!r}, expected {FORMAT!r}")
    sid = meta["save_id"]
    if not (isinstance(sid, str) and len(sid) == 32 and all(c in "0123456789abcdef" for c in sid)):
        _refuse(path, "save_id must be 32 hex digits")
    labels = meta["labels"]
    if not (isinstance(labels, list) and labels and all(isinstance(x, str) or _is_int(x) for x in labels)):
        _refuse(path, "labels must be a non-empty list of str or int")
    if len(set(map(repr, labels))) != len(labels):
        _refuse(path, "labels must be distinct")
    m = len(labels)
    if not (_is_real(meta["tau"]) and 0 < meta["tau"] < 1):
        _refuse(path, f"tau must lie in (0, 1), got {meta['tau']!r}")
    n_fit, n_live = meta["n_fit"], meta["n_live"]
    if not (_is_int(n_fit) and n_fit >= 1 and _is_int(n_live) and 0 <= n_live <= n_fit):
        _refuse(path, f"n_fit must be an int >= 1 and n_live an int in [0, n_fit], got {n_fit!r}, {n_live!r}")
    if meta["method"] not in MODEL_METHODS:
        _refuse(path, f"method must be one of {MODEL_METHODS}, got {meta['method']!r}")
    if meta["method"] == "rollback":
        if not (meta["epsilon"] is None and meta["delta"] is None and meta["sigma"] is None):
            _refuse(path, "method 'rollback' must have epsilon, delta and sigma null")
    else:
        eps, dlt, sig = meta["epsilon"], meta["delta"], meta["sigma"]
        if not (_is_real(eps) and eps > 0):
            _refuse(path, f"epsilon must be a finite number > 0, got {eps!r}")
        if not (_is_real(dlt) and 0 < dlt < 1):
            _refuse(path, f"delta must lie in (0, 1), got {dlt!r}")
        if not (_is_real(sig) and sig > 0):
            _refuse(path, f"sigma must be a finite number > 0, got {sig!r}")
    if not (_is_int(meta["policy"]) and 0 <= meta["policy"] < m):
        _refuse(path, f"the served arm must be an arm index in [0, {m}), got {meta['policy']!r}")
    pend_ids = meta["pending_ids"]
    if not (isinstance(pend_ids, list) and all(_is_int(i) and i >= 0 for i in pend_ids)
            and all(x < y for x, y in zip(pend_ids, pend_ids[1:]))):
        _refuse(path, "pending_ids must be increasing request ids")
    if not isinstance(meta["row_ids_kept"], bool):
        _refuse(path, "row_ids_kept must be true or false")
    for name in ("counts", "sums", "pub_counts", "pub_sums", "pending_counts"):
        if a[name].shape != (m,):
            _refuse(path, f"{name} must hold one entry per arm ({m}), got shape {a[name].shape}")
    counts, sums, pub_c, pub_s, pend = (a[k] for k in ("counts", "sums", "pub_counts", "pub_sums", "pending_counts"))
    if np.any(counts < 0) or int(counts.sum()) != n_live:
        _refuse(path, f"counts must be >= 0 and sum to n_live = {n_live}")
    if np.any(pend < 0) or int(pend.sum()) > n_fit - n_live:
        _refuse(path, "pending_counts must be >= 0 and at most the number of deleted rows")
    if not np.array_equal(pub_c, counts + pend):
        _refuse(path, "released-from counts must equal the exact counts plus the pending counts")
    if not (np.all(np.isfinite(sums)) and np.all(sums >= 0) and np.all(sums <= counts)):
        _refuse(path, "reward sums must be finite and lie in [0, counts]")
    if not np.all(np.isfinite(pub_s)):
        _refuse(path, "released-from sums must be finite")
    none = pend == 0
    if not np.array_equal(pub_s[none], sums[none]):
        _refuse(path, "released-from sums must equal the exact sums on arms without pending rows")
    slack = 1e-9 * np.maximum(pub_c, 1)
    if np.any(pub_s[~none] < sums[~none] - slack[~none]) or np.any(pub_s[~none] > (sums + pend + slack)[~none]):
        _refuse(path, "released-from sums must lie between the exact sums and the exact sums plus the pending counts")
    if bool(pend_ids) != bool(pend.sum()) or (meta["method"] == "rollback" and pend_ids):
        _refuse(path, "pending_ids and pending_counts disagree (or pending rows under method 'rollback')")
    if not pend_ids and LCBState(counts, sums, meta["tau"]).arm != meta["policy"]:
        _refuse(path, "with no pending row the served arm must be the LCB arm of the exact statistic")
    return meta

# %% [markdown]
# The log must replay: every record's shift $\mu$ and composed $\mu_{1:t}$ agree with the accountant,
# no adaptive release exceeds the budget, and the rollbacks happen exactly where Paper A's rule (or
# the budget) says.

# %% tags=["export"]
def _check_log_section(path, a, meta, pending_counts) -> list:
    mus = a["release_mus"]
    if not (np.all(np.isfinite(mus)) and np.all(mus >= 0)):
        _refuse(path, "release_mus must be finite and >= 0")
    log = _json_entry(path, a, "log")
    if not isinstance(log, list) or len(log) != mus.size:
        _refuse(path, "the log must list one record per release")
    labels, adaptive = meta["labels"], meta["method"] == "adaptive"
    literal = adaptive and meta.get("reference") == "literal"
    budget = gdp_budget(meta["epsilon"], meta["delta"]) if adaptive else None
    composed = np.sqrt(np.cumsum(mus ** 2))                  # the oldest request's mu_{1:t}, for every t
    pending, deleted, records = [], 0, []
    for i, r in enumerate(log):
        if not isinstance(r, dict) or set(r) != _RECORD_FIELDS:
            _refuse(path, f"log record {i} must hold exactly the fields {sorted(_RECORD_FIELDS)}")
        where = f"log record {i}"
        if r["request_id"] != i or not (_is_int(r["n_rows"]) and r["n_rows"] >= 1):
            _refuse(path, f"{where}: request_id must be {i} and n_rows an int >= 1")
        if r["method"] not in ("gaussian", "rollback") or r["reason"] not in REASONS:
            _refuse(path, f"{where}: unknown method {r['method']!r} or reason {r['reason']!r}")
        if not all(_is_real(r[k]) for k in ("sigma", "mu_release", "mu_max", "delta_at_target")):
            _refuse(path, f"{where}: sigma, mu_release, mu_max and delta_at_target must be finite numbers")
        if r["mu_release"] != float(mus[i]):
            _refuse(path, f"{where}: mu_release differs from the accountant's shift of release {i}")
        if abs(r["mu_max"] - composed[i]) > 1e-12 * max(1.0, composed[i]):
            _refuse(path, f"{where}: mu_max is not the composition of the releases so far")
        noised = r["noised_arms"]
        if not (isinstance(noised, list) and all(x in labels for x in noised) and len(set(map(repr, noised))) == len(noised)):
            _refuse(path, f"{where}: noised_arms must be distinct arm labels")
        if (r["mu_release"] > 0) != bool(noised) or r["sigma"] != (meta["sigma"] if noised else 0.0):
            _refuse(path, f"{where}: a release is noised (with the model's sigma) exactly when its shift is > 0")
        if r["policy"] not in labels:
            _refuse(path, f"{where}: the released arm {r['policy']!r} is not an arm label")
        if adaptive:
            if r["mu_max"] > budget * (1 + 1e-12):
                _refuse(path, f"{where}: mu_max {r['mu_max']} exceeds the budget {budget} of (epsilon, delta)")
            expect = gdp_delta(r["mu_max"], meta["epsilon"])
            if abs(r["delta_at_target"] - expect) > 1e-9 * max(r["delta_at_target"], expect) + 1e-300:
                _refuse(path, f"{where}: delta_at_target is not delta_mu(epsilon) of mu_max")
        elif r["mu_release"] != 0 or r["delta_at_target"] != 0 or r["method"] != "rollback" or r["reason"] != "requested":
            _refuse(path, f"{where}: under method 'rollback' every release is an exact, requested rollback")
        rolled = r["rolled_back"]
        if not (isinstance(rolled, list) and all(_is_int(j) for j in rolled)):
            _refuse(path, f"{where}: rolled_back must list request ids")
        if r["method"] == "gaussian":
            expect = [] if r["reason"] == "requested" else None
            if rolled != expect:
                _refuse(path, f"{where}: a Gaussian release rolls nothing back and is 'requested'")
            pending.append(i)
        else:
            if r["reason"] == "budget":
                expect = pending + [i]
            elif r["reason"] == "branch_rule" and adaptive and not literal:   # the literal rule has no branch
                expect = [i]
            else:
                expect = [i] if r["reason"] == "requested" and not adaptive else None
            if rolled != expect:
                _refuse(path, f"{where}: rolled_back {rolled} does not replay (expected {expect} for "
                              f"reason {r['reason']!r})")
            if r["reason"] == "budget":
                pending = []
        deleted += r["n_rows"]
        records.append(r)
    if pending != meta["pending_ids"]:
        _refuse(path, f"the log leaves requests {pending} pending, the statistics say {meta['pending_ids']}")
    if deleted != meta["n_fit"] - meta["n_live"]:
        _refuse(path, f"the log deletes {deleted} rows, the statistics miss {meta['n_fit'] - meta['n_live']}")
    if sum(records[j]["n_rows"] for j in pending) != int(pending_counts.sum()):
        _refuse(path, "the pending requests' rows do not add up to the pending counts")
    if records and records[-1]["policy"] != labels[meta["policy"]]:
        _refuse(path, "the served arm is not the arm of the last release")
    _check_log_row_ids(path, a, meta, records)
    return records

# %% tags=["export"]
def _check_log_row_ids(path, a, meta, records) -> None:
    """The log's kept row ids: ``log_offsets`` delimit each record's ``n_rows`` distinct ids below ``n_fit``."""
    rows, offsets = a["log_rows"], a["log_offsets"]
    if meta["row_ids_kept"]:
        if offsets.size != len(records) + 1 or offsets[0] != 0 or not np.array_equal(
                np.diff(offsets), [r["n_rows"] for r in records]) or offsets[-1] != rows.size:
            _refuse(path, "log_offsets must delimit each request's row ids")
        if rows.size and (rows.min() < 0 or rows.max() >= meta["n_fit"] or np.unique(rows).size != rows.size):
            _refuse(path, "the log's row ids must be distinct ids below n_fit")
    elif rows.size or offsets.size:
        _refuse(path, "row ids present in the log although row_ids_kept is false")

# %% [markdown]
# The row store, when kept, must hold exactly the live rows: their ids, arms and rewards, consistent
# with the exact statistic.

# %% tags=["export"]
def _check_rows_section(path, a, meta):
    n_live, m = meta["n_live"], len(meta["labels"])
    ids, arms, rewards = a["row_ids"], a["row_arms"], a["row_rewards"]
    for name, arr in (("row_ids", ids), ("row_arms", arms), ("row_rewards", rewards)):
        if arr.shape != (n_live,):
            _refuse(path, f"{name} must hold n_live = {n_live} entries, got shape {arr.shape}")
    if n_live and (ids[0] < 0 or ids[-1] >= meta["n_fit"] or np.any(np.diff(ids) <= 0)):
        _refuse(path, "row ids must be distinct, increasing and below n_fit")
    if n_live and (arms.min() < 0 or arms.max() >= m):
        _refuse(path, f"row arms must be arm indices in [0, {m})")
    if not (np.all(np.isfinite(rewards)) and np.all((rewards >= 0) & (rewards <= 1))):
        _refuse(path, "row rewards must be finite numbers in [0, 1]")
    user_ids, codes = _json_entry(path, a, "user_ids"), a["row_user_codes"]
    if user_ids is None:
        if codes.size:
            _refuse(path, "user codes present although the model has no user ids")
        users = None
    else:
        if not (isinstance(user_ids, list) and all(isinstance(u, str) or _is_int(u) for u in user_ids)
                and len(set(map(repr, user_ids))) == len(user_ids)):
            _refuse(path, "user ids must be null or a list of distinct str/int ids")
        if codes.shape != (n_live,) or (n_live and (codes.min() < 0 or codes.max() >= len(user_ids))):
            _refuse(path, "row user codes must give one user id index per live row")
        if np.any(np.bincount(codes, minlength=len(user_ids)) == 0):
            _refuse(path, "every saved user id must own a live row (a deleted user's id is not kept)")
        users = (user_ids, codes)
    if not np.array_equal(np.bincount(arms, minlength=m), a["counts"]):
        _refuse(path, "the exact counts are not what the row store counts")
    exact = _exact_sums(arms, rewards, m)
    if not np.array_equal(np.array([_rounded(v) for v in exact]), a["sums"]):
        _refuse(path, "the exact reward sums are not (bit for bit) what the row store sums to")
    if meta["row_ids_kept"] and (a["log_rows"].size != meta["n_fit"] - n_live
                                 or np.intersect1d(a["log_rows"], ids).size):
        _refuse(path, "the log's deleted row ids must be exactly the ids missing from the row store")
    return users, exact

# %% [markdown]
# `load_statistics` reads only the statistic of what remains, $O(m)$, enough to serve or audit the
# released arm; `load_model` rebuilds the whole model, after every check above passed.

# %% tags=["export"]
@_plain
def load_statistics(path, *, key=None) -> LCBState:
    """The exact statistic of what remains, read and verified without the row store or the log: O(m).

    Parameters
    ----------
    path : a file written by ``save_model``.
    key : the HMAC key the file was saved with (required for an authenticated file).

    Returns
    -------
    LCBState
    """
    key = _check_key(key)
    arrays = _read_entries(path, _STAT_KEYS)
    _verify(path, arrays, ("stats_sha256",), key)
    meta = _check_statistics_section(path, arrays)
    return LCBState(arrays["counts"].copy(), arrays["sums"].copy(), meta["tau"])


@_plain
def load_model(path, rng=None, *, key=None, progress=None) -> "LCBModel":
    """Read a model written by ``save_model``, after checking every section and their consistency.

    Parameters
    ----------
    path : the file.
    rng : the noise generator of the loaded model, as in ``fit`` (the file holds none).
    key : the HMAC key the file was saved with (required for an authenticated file).
    progress : None (a bar on a terminal for a large file), False, or ``callable(stage, done, total)``.

    Returns
    -------
    LCBModel
    """
    rng = as_generator(rng)
    key = _check_key(key)
    size = os.path.getsize(path) if isinstance(path, (str, os.PathLike)) and os.path.isfile(path) else 0
    stages = _Stages(progress, ("read", "digests", "statistics", "log", "rows", "model"), "load", size)
    arrays = _read_entries(path, _STAT_KEYS + _LOG_KEYS + _ROW_KEYS)
    stages.step("read")
    _verify(path, arrays, _DIGEST_KEYS, key)
    stages.step("digests")
    meta = _check_statistics_section(path, arrays)
    stages.step("statistics")
    records = _check_log_section(path, arrays, meta, arrays["pending_counts"])
    stages.step("log")
    users, exact = _check_rows_section(path, arrays, meta)
    stages.step("rows")
    offsets = arrays["log_offsets"]
    log = [DeletionRecord(**{**r, "rows": tuple(arrays["log_rows"][offsets[i]:offsets[i + 1]].tolist())
                             if meta["row_ids_kept"] else None, "rolled_back": tuple(r["rolled_back"]),
                             "noised_arms": tuple(r["noised_arms"]),
                             "reference": "conditional" if meta["method"] == "adaptive" and "reference" not in meta
                             else "literal"}) for i, r in enumerate(records)]
    model = LCBModel(labels=meta["labels"], tau=meta["tau"], n_fit=meta["n_fit"], arms=arrays["row_arms"],
                    rewards=arrays["row_rewards"], row_ids=arrays["row_ids"], users=users,
                    pub_counts=arrays["pub_counts"], pub_sums=arrays["pub_sums"],
                    pending_counts=arrays["pending_counts"], pending_ids=meta["pending_ids"],
                    release_mus=arrays["release_mus"].tolist(), log=log, policy=meta["policy"],
                    method=meta["method"], epsilon=meta["epsilon"], delta=meta["delta"], sigma=meta["sigma"],
                    rng=rng, exact_sums=exact, reference=meta.get("reference", "conditional"))
    stages.step("model")
    return model



# %% [markdown]
# `save` and `load` are the model's own methods; `save_model` and `load_model` above do the work.

# %% tags=["export"]
from bandit_unlearning.literate import add_to_class


@add_to_class(LCBModel)
def save(self, path, *, keep_row_ids: bool = False, key=None, progress=None) -> None:
    """``save_model(self, path, ...)``: write the model to ``path`` (``.npz``) atomically.

    Parameters
    ----------
    path, keep_row_ids, key, progress
        As in ``save_model``, which describes them once.
    """
    save_model(self, path, keep_row_ids=keep_row_ids, key=key, progress=progress)


@add_to_class(LCBModel)
@staticmethod
def load(path, rng=None, *, key=None, progress=None) -> "LCBModel":
    """``load_model(path, ...)``: read a model written by ``save``, after checking every section.

    Parameters
    ----------
    path, rng, key, progress
        As in ``load_model``, which describes them once.

    Returns
    -------
    LCBModel
    """
    return load_model(path, rng, key=key, progress=progress)


# %% [markdown]
# ## 3. The model at work, briefly
#
# A small fit, three requests, and what the model says about itself; the full lifecycle, the exact
# audit and real data are in chapter [A9b](09b_deletion_stream_in_use.ipynb).

# %%
demo = LCBModel.fit([2, 10, 10, 2, 7, 10, 2, 7] * 25, np.tile([0.9, 0.8, 0.7, 0.6, 0.2, 0.75, 0.85, 0.1], 25),
                    method="adaptive", epsilon=1.0, delta=1e-5, sigma=0.2, rng=np.random.default_rng(1))
assert demo.labels == (2, 7, 10)                       # integer labels stay integers, sorted as numbers
for rows in ([0], [3, 6], [4]):
    rec = demo.delete(rows=rows)
    print(f"request {rec.request_id}: {rec.method:8s} reason {rec.reason:12s} rolled back {rec.rolled_back}")
print(demo)
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in demo.summary().items()})
print("pending per-arm counts:", demo.pending_counts.tolist())
# the exact statistic is, bit for bit, a fresh fit on the remaining rows (same tau and labels)
live = demo.row_ids
refit_demo = LCBModel.fit(np.array([2, 10, 10, 2, 7, 10, 2, 7] * 25)[live],
                          np.tile([0.9, 0.8, 0.7, 0.6, 0.2, 0.75, 0.85, 0.1], 25)[live], tau=demo.tau)
assert np.array_equal(demo.statistics.reward_sums, refit_demo.statistics.reward_sums)
assert np.array_equal(demo.statistics.counts, refit_demo.statistics.counts)

# %% [markdown]
# The two rules side by side on a request off the served arm (row 4 is on arm 7; the model serves
# arm 2), then one on it: Paper A's rule rolls the first back for free (`reason="branch_rule"`, a
# decision that read the served arm, so its records say `reference="conditional"`); the literal rule
# keeps both pending and spends budget on both, and its records say `"literal"`.

# %%
side = {}
for rule in ("conditional", "literal"):
    mdl = LCBModel.fit([2, 10, 10, 2, 7, 10, 2, 7] * 25, np.tile([0.9, 0.8, 0.7, 0.6, 0.2, 0.75, 0.85, 0.1], 25),
                       method="adaptive", epsilon=1.0, delta=1e-5, sigma=0.2, rng=np.random.default_rng(1),
                       reference=rule)
    side[rule] = mdl
    for rows in ([4], [0]):
        rec = mdl.delete(rows=rows)
        print(f"{rule:11s} request {rec.request_id}: {rec.method:8s} reason {rec.reason:11s} "
              f"reference {rec.reference:11s} mu_max {rec.mu_max:.3f}")
assert [r.reason for r in side["conditional"].log] == ["branch_rule", "requested"]
assert all(r.reason != "branch_rule" and r.reference == "literal" for r in side["literal"].log)
assert all(r.reference == "conditional" for r in side["conditional"].log)
assert side["literal"].mu_max > side["conditional"].mu_max          # the price: budget spent off the served arm
assert LCBModel.fit([0, 1], [1.0, 0.0]).reference == "literal"     # rollback is exact, literal always

# %% [markdown]
# **Next.** The cells tagged `export` above are the module `bandit_unlearning.mab.model`.  Chapter
# [A9b](09b_deletion_stream_in_use.ipynb) puts the model to work: a lifecycle on a small example, the
# exact audit of the promise (and of two broken accountants), the deletion capacity, what the file
# and a pickle hold after a deletion (and the attacks that fail on them), tampered files refused at
# load, and real logged data.
