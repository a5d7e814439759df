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

# %% [markdown]
# ## 2. Implementation
#
# ### 2.1 The accountant

# %% tags=["export"]
"""An LCB model with a lifecycle (chapter A9a): fit once, then serve deletion requests over time.

``LCBModel`` holds the row store, the exact statistic of what remains, the statistic releases are
computed from (which still holds the *pending* rows that a Gaussian release only noised), a deletion
log and a Gaussian-DP accountant; ``save`` / ``load`` persist it atomically in an ``.npz`` file that
holds no byte of a rolled-back row (a pending row survives only in its request's per-arm count and
reward sum, until it is rolled back).  tau and the arm set are fixed at fit.
"""

import hashlib
import csv
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import (
    as_generator, check_bool, check_choice, check_instance, check_int, check_positive, check_real, check_real_array,
)
from bandit_unlearning.mab.lcb import LCBState, check_tau, lcb_scores
from bandit_unlearning.mab.mechanisms import exact_sensitivity
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, check_delta, check_epsilon, gaussian_delta


def make_rng(rng) -> np.random.Generator:
    """A numpy Generator as is; ``None``: fresh OS entropy; an int >= 0: an explicit, reproducible seed
    (key material: whoever knows it can subtract the noise).  The package's one rule:
    ``checks.as_generator``."""
    return as_generator(rng, "rng")


def gdp_budget(epsilon, delta) -> float:
    """The largest ``mu`` whose Gaussian-DP pair is (epsilon, delta)-close: ``delta_mu(epsilon) <= delta``.

    ``1 / analytic_gaussian_sigma(1, epsilon, delta)`` (the calibration is certified, so the budget errs
    on the safe side)."""
    return 1.0 / analytic_gaussian_sigma(1.0, check_epsilon(epsilon), check_delta(delta))


def gdp_delta(mu, epsilon) -> float:
    """``delta_mu(epsilon)``: the exact privacy profile of a mu-GDP pair (Gaussian noise 1, shift mu)."""
    mu = check_real(mu, "mu", 0)
    return 0.0 if mu == 0 else float(gaussian_delta(1.0, mu, check_epsilon(epsilon)))


def request_mus(release_mus) -> np.ndarray:
    """``mu_{j:t} = sqrt(sum_{s >= j} mu_s^2)`` for every request ``j`` (release ``s`` follows request ``s``)."""
    mus = check_real_array(release_mus, "release_mus", 0, ndim=1)
    return np.sqrt(np.cumsum((mus ** 2)[::-1])[::-1])


def admits(release_mus, mu_new: float, mu_budget: float) -> bool:
    """The accountant: may a release with whitened shift ``mu_new`` follow ``release_mus``?

    Every request's composed ``mu_{j:t}`` must stay within the budget; the oldest request's is the
    largest, and a new request's own window starts with this release."""
    mus = check_real_array(release_mus, "release_mus", 0, ndim=1)
    mus = np.append(mus, check_real(mu_new, "mu_new", 0))
    return bool(request_mus(mus)[0] <= check_real(mu_budget, "mu_budget", 0))


def release_shift(pub_counts, pending_counts, log_term: float, sigma: float) -> float:
    """Whitened shift ``mu_s`` of a release: the L2 norm over the arms with pending rows of the exact
    sensitivity (removing ``pending_counts[a]`` of ``pub_counts[a]`` rows), divided by ``sigma``."""
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
    ``sum_{j=1..c} (Delta(n_arm, j k) / sigma)^2 <= mu_budget^2``."""
    n_arm = check_int(n_arm, "n_arm", 1)
    k, max_requests = check_int(k, "k", 1, n_arm), check_int(max_requests, "max_requests", 0)
    sigma = check_positive(sigma, "sigma")
    budget = gdp_budget(epsilon, delta)
    spent, count = 0.0, 0
    while count < max_requests and (count + 1) * k <= n_arm:
        mu = float(exact_sensitivity(n_arm, (count + 1) * k, log_term)) / sigma
        if spent + mu * mu > budget * budget:
            break
        spent, count = spent + mu * mu, count + 1
    return count


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
    row (``rollback_pending``), the arms noised, and the release's whitened shift ``mu``."""

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
                 admit=admits) -> ReleasePlan:
    """Plan the release that follows a request (counts are per arm; ``pub_counts`` still holds the
    request's rows).  ``admit`` is the accountant (replaceable, to audit broken ones)."""
    check_choice(method, "method", METHODS)
    pub = np.asarray(pub_counts, dtype=np.int64)
    pend = np.asarray(pending_counts, dtype=np.int64)
    req = np.asarray(request_counts, dtype=np.int64)
    noise_request = method == "adaptive" and bool(on_policy)
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
# values (sorted when they can be, else in order of first appearance); user ids are optional.
# `delete` validates everything before it draws noise or changes anything, so a refused request
# leaves the model exactly as it was.  A deleted row is wiped from the row store at once (its user id
# is forgotten); a pending row survives only inside the released-from statistic's per-arm count and
# reward sum, kept per pending request so that it can be rolled back, and disappears when it is.

# %% tags=["export"]
METHODS = ("adaptive", "rollback")
FORMAT = "bandit_unlearning.LCBModel/1"


@dataclass(frozen=True)
class DeletionRecord:
    """One entry of the deletion log.  Nothing in it is computed from the deleted rewards."""

    request_id: int
    rows: tuple
    method: str                    # "gaussian" (kept pending, noised) or "rollback"
    rolled_back: tuple             # request ids whose rows this release rolled back
    noised_arms: tuple             # arm labels noised in this release
    sigma: float
    mu_release: float
    mu_max: float                  # the largest composed mu_{j:t} over all requests so far
    delta_at_target: float         # delta_mu(epsilon) of mu_max (0 for method "rollback")
    policy: object                 # the arm label released

    def __post_init__(self):
        check_choice(self.method, "method", ("gaussian", "rollback"))


def _labels_and_index(arms, labels):
    if isinstance(arms, np.ndarray) and arms.ndim == 1 and arms.dtype.kind in "biuUS" and arms.size:
        uniq, inverse = np.unique(arms, return_inverse=True)          # vectorised path for large arrays
        if labels is None:
            return tuple(uniq.tolist()), inverse.astype(np.int64)
        arms = uniq.tolist()
        labels, table = _labels_and_index(arms, labels)
        return labels, table[inverse]
    arms = [a.item() if isinstance(a, np.generic) else a for a in arms]
    for a in arms:
        hash(a)
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


def _frozen(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


# %% [markdown]
# The model with a lifecycle: `LCBModel` keeps the exact statistic of what remains, applies each
# request with the mechanism chosen at fit time, records it in its log, and releases one arm
# label per request (Section 1's promise, audited exactly in chapter A9b, Section 2).

# %% tags=["export"]
class LCBModel:
    """The LCB learner of Paper A with a lifecycle: ``fit`` once, then ``delete`` requests over time.

    Use the constructors ``LCBModel.fit``, ``LCBModel.from_csv``, ``LCBModel.from_frame`` or
    ``LCBModel.load``.  After each request the model makes one release, ``policy`` (an arm label).
    ``statistics`` is the exact ``LCBState`` of what remains (tau fixed at fit).
    """

    def __init__(self, *, labels, tau, n_fit, arms, rewards, row_ids, users, pub_counts, pub_sums,
                 pending, release_mus, log, policy, method, epsilon, delta, sigma, rng):
        check_choice(method, "method", METHODS)
        check_instance(rng, np.random.Generator, "rng")
        self._labels = tuple(labels)
        self._tau, self._n_fit = float(tau), int(n_fit)
        self._method, self._epsilon, self._delta, self._sigma = method, epsilon, delta, sigma
        self._mu_budget = None if method == "rollback" else gdp_budget(epsilon, delta)
        # the row store, indexed by row id; a deleted row is wiped in place (arm -1, reward 0, no user)
        row_ids = np.asarray(row_ids, dtype=np.int64)
        self._alive = np.zeros(self._n_fit, dtype=bool)
        self._alive[row_ids] = True
        self._n_live = int(row_ids.size)
        self._arms = np.full(self._n_fit, -1, dtype=np.int64)
        self._arms[row_ids] = np.asarray(arms, dtype=np.int64)
        self._rewards = np.zeros(self._n_fit)
        self._rewards[row_ids] = np.asarray(rewards, dtype=float)
        self._users = None
        if users is not None:
            self._users = [None] * self._n_fit
            for rid, u in zip(row_ids.tolist(), users):
                self._users[rid] = u
        self._pub_counts = np.asarray(pub_counts, dtype=np.int64)
        self._pub_sums = np.asarray(pub_sums, dtype=float)
        self._pending = dict(pending)                                # request id -> (counts, sums)
        self._release_mus = list(release_mus)
        self._log = list(log)
        self._policy = int(policy)
        self._rng = rng
        self._rebuild_users()

    def _rebuild_users(self):
        self._user_rows = None
        if self._users is not None:
            rows = {}
            for rid in np.flatnonzero(self._alive).tolist():
                rows.setdefault(self._users[rid], []).append(rid)
            self._user_rows = rows

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def fit(cls, arms, rewards, *, users=None, labels=None, tau=None, method: str = "rollback",
            epsilon=None, delta=None, sigma=None, rng=None) -> "LCBModel":
        """Fit on rows ``(arms[i], rewards[i])`` (optionally ``users[i]``).  ``tau`` defaults to ``1/N``
        and is fixed for the model's life.  ``method="adaptive"`` needs the target ``epsilon``,
        ``delta`` and the noise scale ``sigma`` on scores (fixed at fit)."""
        check_choice(method, "method", METHODS)
        labels, idx = _labels_and_index(arms, labels)
        rewards = np.asarray(rewards, dtype=float)
        if rewards.shape != idx.shape:
            raise ValueError(f"rewards must have one entry per row: {rewards.shape} vs {idx.shape}")
        if not np.all(np.isfinite(rewards)) or np.any((rewards < 0) | (rewards > 1)):
            raise ValueError("rewards must lie in [0, 1]")
        if users is not None:
            users = [u.item() if isinstance(u, np.generic) else u for u in users]
            if len(users) != idx.size:
                raise ValueError(f"users must have one entry per row: {len(users)} vs {idx.size}")
            for u in users:
                hash(u)
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
            sigma = float(sigma)
            if not np.isfinite(sigma) or sigma <= 0:
                raise ValueError(f"sigma must be finite and > 0, got {sigma}")
            epsilon, delta = float(epsilon), float(delta)
        elif not (epsilon is None and delta is None and sigma is None):
            raise ValueError("method 'rollback' is exact: epsilon, delta and sigma must be None")
        rng = make_rng(rng)
        m = len(labels)
        counts = np.bincount(idx, minlength=m)
        sums = np.bincount(idx, weights=rewards, minlength=m)
        policy = LCBState(counts, sums, tau).arm
        return cls(labels=labels, tau=tau, n_fit=n, arms=idx, rewards=rewards, row_ids=np.arange(n),
                   users=users, pub_counts=counts, pub_sums=sums, pending={}, release_mus=[], log=[],
                   policy=policy, method=method, epsilon=epsilon, delta=delta, sigma=sigma, rng=rng)

    @classmethod
    def from_csv(cls, path, *, arm: str = "arm", reward: str = "reward", user: str | None = None,
                 **options) -> "LCBModel":
        """Fit on a CSV file with a header; arm labels and user ids are read as strings."""
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in (arm, reward, user) if c is not None and c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"the CSV file has no column {missing[0]!r}")
            rows = list(reader)
        return cls.fit([r[arm] for r in rows], [float(r[reward]) for r in rows],
                       users=None if user is None else [r[user] for r in rows], **options)

    @classmethod
    def from_frame(cls, frame, *, arm: str = "arm", reward: str = "reward", user: str | None = None,
                   **options) -> "LCBModel":
        """Fit on a pandas DataFrame (or any mapping of column name -> sequence)."""
        return cls.fit(list(frame[arm]), np.asarray(frame[reward], dtype=float),
                       users=None if user is None else list(frame[user]), **options)

    # -- what the model shows -------------------------------------------------------------------
    @property
    def labels(self) -> tuple:
        return self._labels

    @property
    def tau(self) -> float:
        """The confidence level, fixed at fit."""
        return self._tau

    @property
    def n_fit(self) -> int:
        return self._n_fit

    @property
    def method(self) -> str:
        return self._method

    @property
    def policy(self):
        """The arm label of the latest release."""
        return self._labels[self._policy]

    @property
    def policy_index(self) -> int:
        return self._policy

    @property
    def statistics(self) -> LCBState:
        """The exact statistic of the rows not yet deleted (tau fixed at fit)."""
        counts, sums = self._pub_counts.copy(), self._pub_sums.copy()
        for c, s in self._pending.values():
            counts, sums = counts - c, sums - s
        return LCBState(counts, np.clip(sums, 0.0, counts), self._tau)

    @property
    def log(self) -> tuple:
        return tuple(self._log)

    @property
    def pending(self) -> tuple:
        """Ids of the requests whose rows are still inside the released-from statistic."""
        return tuple(self._pending)

    @property
    def mu_budget(self):
        return self._mu_budget

    @property
    def mu_max(self) -> float:
        """The largest composed ``mu_{j:t}`` over the requests so far."""
        return float(request_mus(self._release_mus)[0]) if self._release_mus else 0.0

    @property
    def row_ids(self) -> np.ndarray:
        return _frozen(np.flatnonzero(self._alive))

    def __len__(self) -> int:
        return self._n_live

    # -- deletion -------------------------------------------------------------------------------
    def _rows_of(self, user, rows):
        if (user is None) == (rows is None):
            raise ValueError("pass exactly one of user=... or rows=...")
        if user is not None:
            if self._user_rows is None:
                raise ValueError("the model was fitted without user ids: delete by rows=...")
            try:
                found = self._user_rows.get(user)
            except TypeError:
                raise TypeError(f"user must be hashable, got {type(user).__name__}") from None
            if found is None:
                raise ValueError(f"unknown user {user!r} (never in the data, or already deleted)")
            return np.array(sorted(found), dtype=np.int64)
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.size == 0:
            raise ValueError("rows must be a non-empty 1-D sequence of row ids")
        if not np.issubdtype(rows.dtype, np.integer):
            raise TypeError(f"rows must be integer row ids, got dtype {rows.dtype}")
        if np.unique(rows).size != rows.size:
            raise ValueError("rows names a row twice")
        outside = rows[(rows < 0) | (rows >= self._n_fit)]
        if outside.size:
            raise ValueError(f"unknown row {int(outside[0])}: row ids lie in [0, {self._n_fit})")
        gone = rows[~self._alive[rows]]
        if gone.size:
            raise ValueError(f"row {int(gone[0])} was already deleted")
        return np.sort(rows.astype(np.int64))

    def delete(self, *, user=None, rows=None) -> DeletionRecord:
        """Delete one user's rows or the given rows, then make one release (the new ``policy``).

        Refused (``ValueError`` / ``TypeError``, nothing changed): unknown or already deleted rows or
        user, a row named twice, both or neither of ``user`` and ``rows``."""
        rows = self._rows_of(user, rows)
        pos = rows                                     # O(k): nothing below touches all N rows
        m = len(self._labels)
        req_counts = np.bincount(self._arms[pos], minlength=m)
        req_sums = np.bincount(self._arms[pos], weights=self._rewards[pos], minlength=m)
        pend = np.zeros(m, dtype=np.int64)
        for c, _ in self._pending.values():
            pend = pend + c
        on_policy = bool(np.all(self._arms[pos] == self._policy))
        plan = plan_release(self._pub_counts, pend, req_counts, on_policy, self._release_mus,
                            log_term=float(np.log(m / self._tau)), sigma=self._sigma,
                            mu_budget=self._mu_budget, method=self._method)
        # everything below only computes new values; they are committed together at the end
        request_id = len(self._log)
        pub_counts, pub_sums = self._pub_counts.copy(), self._pub_sums.copy()
        pending = dict(self._pending)
        rolled = ()
        if plan.noise_request:
            pending[request_id] = (_frozen(req_counts), _frozen(req_sums))
        else:
            pub_counts, pub_sums = pub_counts - req_counts, pub_sums - req_sums
            rolled = (request_id,)
        if plan.rollback_pending:
            for rid, (c, s) in pending.items():
                pub_counts, pub_sums = pub_counts - c, pub_sums - s
            rolled = tuple(pending) + rolled
            pending = {}
        pub_sums = np.clip(pub_sums, 0.0, pub_counts)
        scores = lcb_scores(pub_counts, pub_sums, self._tau)[2]
        if plan.noised_arms:
            arms = np.array(plan.noised_arms)
            scores = scores.copy()
            scores[arms] += self._sigma * self._rng.standard_normal(arms.size)
        policy = int(np.argmax(scores))
        release_mus = self._release_mus + [plan.mu]
        mu_max = float(request_mus(release_mus)[0])
        record = DeletionRecord(
            request_id=request_id, rows=tuple(rows.tolist()),
            method="gaussian" if plan.noise_request else "rollback", rolled_back=rolled,
            noised_arms=tuple(self._labels[a] for a in plan.noised_arms),
            sigma=float(self._sigma) if plan.noised_arms else 0.0, mu_release=plan.mu, mu_max=mu_max,
            delta_at_target=0.0 if self._method == "rollback" else gdp_delta(mu_max, self._epsilon),
            policy=self._labels[policy])
        # commit: wipe the rows, forget their users, then the statistics, the accountant and the log
        self._alive[rows] = False
        self._arms[rows], self._rewards[rows] = -1, 0.0
        self._n_live -= int(rows.size)
        if self._users is not None:
            for rid in rows.tolist():
                u, self._users[rid] = self._users[rid], None
                left = self._user_rows[u]
                left.remove(rid)
                if not left:
                    del self._user_rows[u]
        self._pub_counts, self._pub_sums, self._pending = pub_counts, pub_sums, pending
        self._release_mus, self._policy = release_mus, policy
        self._log.append(record)
        return record


# %% [markdown]
# ### 2.4 Persistence
#
# `save(path)` writes one uncompressed `.npz` file (an open format: a zip of `.npy` arrays) through
# a temporary file in the same directory and `os.replace`, so a crash half-way leaves the previous
# file untouched.  The **statistics** (counts, reward sums, pending per-arm aggregates, the
# accountant's shifts, the settings and the log, as JSON) and the **row store** are separate entries,
# each with its own SHA-256 checksum: `load_statistics(path)` reads and verifies only the former, in
# $O(m + \text{requests})$.  Deleted rows are not in the row store, and the deleted users' ids are
# gone with them; the noise generator is not saved (it is key material) — `load` takes a fresh one.
# One honest limit: a **pending** row is, by definition, still inside the released-from statistic, and
# its request's per-arm count and reward sum are kept (and saved) so that it can be rolled back later;
# for a one-row request that sum *is* the row's reward.  Only a rolled-back row is gone without trace;
# `method="rollback"` rolls back every request at once.

# %% tags=["export"]
_STAT_KEYS = ("pub_counts", "pub_sums", "pending_ids", "pending_counts", "pending_sums", "release_mus", "meta")
_ROW_KEYS = ("row_ids", "row_arms", "row_rewards", "row_users")


def _digest(arrays, keys) -> str:
    h = hashlib.sha256()
    for key in keys:
        a = np.ascontiguousarray(arrays[key])
        h.update(key.encode() + b"\0" + str(a.dtype).encode() + b"\0" + str(a.shape).encode() + b"\0")
        h.update(a.tobytes())
    return h.hexdigest()


def _json_ok(values, name):
    for v in values:
        if not isinstance(v, (str, int)) or isinstance(v, bool):
            raise TypeError(f"{name} must be str or int to be saved, got {type(v).__name__}")


def _write_npz(fh, arrays) -> None:
    np.savez(fh, **arrays)


def _model_arrays(model: "LCBModel") -> dict:
    _json_ok(model._labels, "arm labels")
    live = np.flatnonzero(model._alive)
    users = None if model._users is None else [model._users[i] for i in live.tolist()]
    if users is not None:
        _json_ok(users, "user ids")
    m = len(model._labels)
    ids = list(model._pending)
    meta = {
        "format": FORMAT, "labels": list(model._labels), "tau": model._tau, "n_fit": model._n_fit,
        "method": model._method, "epsilon": model._epsilon, "delta": model._delta, "sigma": model._sigma,
        "policy": model._policy, "log": [
            {**r.__dict__, "rows": list(r.rows), "rolled_back": list(r.rolled_back),
             "noised_arms": list(r.noised_arms)} for r in model._log],
    }
    arrays = {
        "pub_counts": model._pub_counts, "pub_sums": model._pub_sums,
        "pending_ids": np.array(ids, dtype=np.int64),
        "pending_counts": np.array([model._pending[i][0] for i in ids], dtype=np.int64).reshape(-1, m),
        "pending_sums": np.array([model._pending[i][1] for i in ids], dtype=float).reshape(-1, m),
        "release_mus": np.array(model._release_mus, dtype=float),
        "meta": np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8),
        "row_ids": live, "row_arms": model._arms[live], "row_rewards": model._rewards[live],
        "row_users": np.frombuffer(json.dumps(users).encode(), dtype=np.uint8),
    }
    arrays["stats_sha256"] = np.frombuffer(_digest(arrays, _STAT_KEYS).encode(), dtype=np.uint8)
    arrays["rows_sha256"] = np.frombuffer(_digest(arrays, _ROW_KEYS).encode(), dtype=np.uint8)
    return arrays


def save_model(model: "LCBModel", path) -> None:
    """Write ``model`` to ``path`` (``.npz``) atomically: temporary file, fsync, ``os.replace``."""
    if not isinstance(model, LCBModel):
        raise TypeError(f"model must be an LCBModel, got {type(model).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ValueError(f"path must name a file in an existing folder, got {path!r}")
    arrays = _model_arrays(model)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_npz(fh, arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _open_checked(path, keys, digest_key):
    try:
        with np.load(os.fspath(path), allow_pickle=False) as z:
            arrays = {k: z[k] for k in keys}
            stored = bytes(z[digest_key]).decode()
    except (zipfile.BadZipFile, KeyError, EOFError, ValueError) as err:   # ValueError: not an .npz at all
        raise ValueError(f"{path}: not a readable model file ({err})") from None
    if _digest(arrays, keys) != stored:
        raise ValueError(f"{path}: checksum mismatch in {digest_key[:-7]} (corrupted or altered file)")
    return arrays


def _read_meta(arrays):
    meta = json.loads(bytes(arrays["meta"]).decode())
    if meta.get("format") != FORMAT:
        raise ValueError(f"unsupported format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta


def load_statistics(path) -> LCBState:
    """The exact statistic of what remains, read (and checksum-verified) without the row store."""
    arrays = _open_checked(path, _STAT_KEYS, "stats_sha256")
    meta = _read_meta(arrays)
    counts = arrays["pub_counts"] - arrays["pending_counts"].sum(axis=0)
    sums = arrays["pub_sums"] - arrays["pending_sums"].sum(axis=0)
    return LCBState(counts, np.clip(sums, 0.0, counts), meta["tau"])


def load_model(path, rng=None) -> "LCBModel":
    """Read a model written by ``save_model``; both checksums are verified.  ``rng`` as in ``fit``."""
    rng = make_rng(rng)
    stats_arrays = _open_checked(path, _STAT_KEYS, "stats_sha256")
    rows = _open_checked(path, _ROW_KEYS, "rows_sha256")
    meta = _read_meta(stats_arrays)
    pending = {int(i): (_frozen(c), _frozen(s)) for i, c, s in zip(
        stats_arrays["pending_ids"], stats_arrays["pending_counts"], stats_arrays["pending_sums"])}
    log = [DeletionRecord(**{**r, "rows": tuple(r["rows"]), "rolled_back": tuple(r["rolled_back"]),
                             "noised_arms": tuple(r["noised_arms"])}) for r in meta["log"]]
    return LCBModel(labels=meta["labels"], tau=meta["tau"], n_fit=meta["n_fit"], arms=rows["row_arms"],
                    rewards=rows["row_rewards"], row_ids=rows["row_ids"],
                    users=json.loads(bytes(rows["row_users"]).decode()), pub_counts=stats_arrays["pub_counts"],
                    pub_sums=stats_arrays["pub_sums"], pending=pending,
                    release_mus=stats_arrays["release_mus"].tolist(), log=log, policy=meta["policy"],
                    method=meta["method"], epsilon=meta["epsilon"], delta=meta["delta"], sigma=meta["sigma"],
                    rng=rng)


def _save(self, path) -> None:
    save_model(self, path)


_save.__name__, _save.__qualname__, _save.__doc__ = "save", "LCBModel.save", save_model.__doc__
LCBModel.save = _save
LCBModel.load = staticmethod(load_model)

# %% [markdown]
# **Next.** The cells tagged `export` above are the module `bandit_unlearning.mab.model`.  Chapter
# [A9b](09b_deletion_stream_in_use.ipynb) puts the model to work: a lifecycle on a small example, the
# exact audit of the promise (and of two broken accountants), the deletion capacity, what the file
# holds after a deletion, and real logged data.
