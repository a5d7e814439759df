# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.contextual
# ---

# %% [markdown]
# # Chapter A10a — Beyond Paper A: unlearning an offline pessimistic *linear contextual* bandit
#
# *Paper A treats a multi-armed bandit: one arm is served to everyone.  It names contextual and linear
# bandits as the next step.  This chapter takes that step for the learner offline contextual work
# uses (per-arm ridge regression with a lower confidence bound, in the spirit of PEVI / LinLCB) and
# gives it Paper A's menu of unlearning mechanisms, each with a guarantee derived here.  It exports
# `bandit_unlearning.mab.contextual`; chapter [A10b](10b_contextual_in_use.ipynb) runs it on the Open
# Bandit Dataset with its user features and adds the lifecycle model.*
#
# Nothing in this chapter is a result of Paper A: the learner, the sensitivity lemma, the switch and
# the audits are this project's own (errata page, "beyond the papers").  The chapter
# 1. states the learner, its confidence radius and its assumptions, and what is released and stored;
# 2. derives the rollback (a rank-$k$ downdate of the per-arm statistics, equal to retraining), checks
#    it in exact rational arithmetic, and discusses when a downdate is ill-conditioned;
# 3. derives the $L_2$ sensitivity of the ridge estimate to deleting $k$ rows and the Gaussian
#    mechanism on the released parameters, with the condition it needs refused when it fails;
# 4. derives an adaptive switch from the two branches' sub-optimality bounds and says against which
#    reference world each variant holds;
# 5. audits: the sensitivity bound against a numerical worst case (random-restart optimisation over
#    small data sets), the privacy of the released policy **exactly** (the action on a grid of contexts
#    is a threshold event of one Gaussian), both rejecting a too-small sensitivity and half the noise.

# %%
import itertools
import math
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
from scipy import optimize, stats

from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_delta
from bandit_unlearning.protocol import unlearn

rng = np.random.default_rng(20261210)

# %% [markdown]
# ## 1. The learner
#
# **Data.** Logged rows $(x_i, a_i, r_i)_{i=1..N}$: a context $x_i \in \mathbb R^d$, the action
# $a_i \in [m]$ the logging policy took, the reward $r_i$.  **Assumptions** (every guarantee below
# states which it uses):
# - (A1) bounded contexts: $\|x_i\|_2 \le L$ for a bound $L$ fixed *before* seeing the data (the fit
#   refuses a context outside it);
# - (A2) rewards in $[0, 1]$;
# - (A3, for the sub-optimality bound only) a linear model per arm: $E[r \mid x, a] = x^\top\theta^*_a$
#   with $\|\theta^*_a\|_2 \le S$; the noise $r - x^\top\theta^*_a$ is then $\tfrac12$-sub-Gaussian
#   (Hoeffding's lemma on $[0,1]$), conditionally on the past, so the log may be adaptive.
#
# **Statistics** (per arm, ridge $\lambda > 0$):
# $V_a = \lambda I + \sum_{i: a_i = a} x_i x_i^\top$, $b_a = \sum_{i: a_i = a} r_i x_i$,
# $\hat\theta_a = V_a^{-1} b_a$.
#
# **Score** (lower confidence bound) and **policy**:
# $$s_a(x) = x^\top\hat\theta_a - \beta\,\|x\|_{V_a^{-1}}, \qquad \hat\pi(x) = \arg\max_a s_a(x)$$
# (ties to the lowest arm index), with the radius, fixed at fit like Paper A's $\tau$,
# $$\beta = \tfrac12\sqrt{2\ln(m/\tau) + d\ln\!\big(1 + N L^2/(\lambda d)\big)} + \sqrt\lambda\, S .$$
# This is the self-normalised bound of Abbasi-Yadkori, Pál and Szepesvári (2011, Theorem 2) with
# $R = 1/2$, made uniform over the $m$ arms by a union bound (each arm gets $\tau/m$) and with
# $n_a \le N$ in the log-determinant: under (A1)-(A3), with probability at least $1 - \tau$,
# $\|\hat\theta_a - \theta^*_a\|_{V_a} \le \beta$ for every arm, hence
# $|x^\top(\hat\theta_a - \theta^*_a)| \le \beta\|x\|_{V_a^{-1}}$ for every $x$ (Cauchy-Schwarz in
# the $V_a$ geometry).  $N$ is the size of the *fitted* data and stays fixed afterwards, so that
# rollback equals retraining with the same $\beta$ (the contextual twin of fixing $\tau$ at fit).
#
# **Sub-optimality (pessimism).** On that event, $s_a(x) \le x^\top\theta^*_a$ for every arm, so for
# any comparator arm $a^\star(x)$:
# $x^\top\theta^*_{a^\star} - x^\top\theta^*_{\hat\pi(x)} \le
# (s_{a^\star}(x) + 2\beta\|x\|_{V_{a^\star}^{-1}}) - s_{\hat\pi(x)}(x) \le 2\beta\|x\|_{V_{a^\star}^{-1}}$.
# The learner competes with every comparator that the *data cover* (small $\|x\|_{V^{-1}}$ on its own
# arm), the contextual form of Paper A's Lemma 3.1 (as in PEVI / LinLCB).
#
# **What is stored and what is released.** Stored: $V_a$, $b_a$, $n_a$ per arm (the sufficient
# statistic $T(D)$; the lifecycle model of chapter A10b also keeps the rows, for deletion by user and
# for refits) and the fixed $(\lambda, \beta, L)$.  **Released: the policy**, as the parameters that
# define it: centres $\theta_a$ and width matrices $W_a = V_a^{-1}$ for every arm (a reader computes
# $\hat\pi(x)$ for any context).  Releasing the parameters is at least as revealing as releasing the
# map $x \mapsto \hat\pi(x)$, so every guarantee below, proved for the parameters, holds for the policy
# by post-processing.

# %% tags=["export"]
"""An offline pessimistic linear contextual bandit and its unlearning (chapter A10a, beyond Paper A).

Per-arm ridge regression ``V_a = lam I + sum x x^T``, ``b_a = sum r x``, ``theta_a = V_a^{-1} b_a``;
score ``s_a(x) = x^T theta_a - beta ||x||_{V_a^{-1}}``; policy ``argmax_a s_a(x)`` (ties to the lowest
arm).  ``beta`` (``confidence_radius``) is fixed at fit.  Unlearning: ``rollback`` (rank-k downdate,
equal to retraining), the Gaussian mechanism on the released centres with the sensitivity of
``parameter_sensitivity`` (read from the data that remain), and the adaptive switch of
``branch_bounds``; the protocol's ``unlearn`` (registered here for a ``ContextualState`` and a
``ContextualRequest``, options a ``ContextualOptions``) / ``reference_contextual`` are the mechanism and its
reference.  Assumptions: contexts with ``||x|| <= context_bound``, rewards in [0, 1], ``lam > 0``.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from bandit_unlearning.checks import (
    as_generator, check_choice, check_instance, check_int, check_int_array, check_positive, check_real,
    check_real_array,
)
from bandit_unlearning.privacy.gaussian import (
    analytic_gaussian_sigma, check_delta, check_epsilon, classic_gaussian_sigma,
)
from bandit_unlearning.protocol import register_unlearn


def confidence_radius(n, dim, n_arms, tau, lam, context_bound, theta_bound, noise_scale=0.5) -> float:
    """The LCB radius ``beta`` (Abbasi-Yadkori et al. 2011, Thm 2, union bound over the arms).

    ``beta = noise_scale sqrt(2 ln(n_arms/tau) + dim ln(1 + n L^2/(lam dim))) + sqrt(lam) theta_bound``.

    Parameters
    ----------
    n : int
        Rows of the fitted data (fixed afterwards).
    dim, n_arms : int
        Context dimension ``d`` and number of arms ``m``.
    tau : float
        Failure probability in (0, 1).
    lam, context_bound : float
        Ridge ``lam > 0`` and the context bound ``L > 0``.
    theta_bound : float
        ``S >= 0`` with ``||theta*_a|| <= S``.
    noise_scale : float
        Sub-Gaussian scale of the reward noise (``1/2`` for rewards in [0, 1]).

    Returns
    -------
    float
        ``beta``.
    """
    n, dim, n_arms = check_int(n, "n", 1), check_int(dim, "dim", 1), check_int(n_arms, "n_arms", 1)
    tau = check_real(tau, "tau", 0, 1, low_open=True, high_open=True)
    lam, context_bound = check_positive(lam, "lam"), check_positive(context_bound, "context_bound")
    theta_bound, noise_scale = check_real(theta_bound, "theta_bound", 0), check_positive(noise_scale, "noise_scale")
    log_det = dim * math.log1p(n * context_bound ** 2 / (lam * dim))
    return noise_scale * math.sqrt(2 * math.log(n_arms / tau) + log_det) + math.sqrt(lam) * theta_bound


# %% [markdown]
# The state is a frozen dataclass; the derived quantities (centres, inverse Gram matrices, their
# smallest eigenvalues) are computed once, per arm, from a Cholesky factorisation.  `lcb_scores` is
# vectorised over contexts and arms (`einsum`), and `ReleasedPolicy` is what leaves the system.

# %% tags=["export"]
def _readonly(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


def _derived(gram: np.ndarray, moments: np.ndarray):
    """Centres, inverse Gram matrices and smallest eigenvalues, one arm per leading index."""
    chol = np.linalg.cholesky(gram)
    eye = np.broadcast_to(np.eye(gram.shape[-1]), gram.shape)
    inv_chol = np.linalg.solve(chol, eye)
    gram_inv = np.swapaxes(inv_chol, -1, -2) @ inv_chol
    theta = np.einsum("aij,aj->ai", gram_inv, moments)
    lam_min = np.linalg.eigvalsh(gram)[..., 0]
    return theta, gram_inv, lam_min


@dataclass(frozen=True, eq=False)
class ContextualState:
    """Per-arm ridge statistics ``T(D)`` of the contextual LCB learner, with ``beta`` fixed at fit.

    Use ``fit_contextual`` or ``state_from_statistics``.  Fields: ``gram`` (m, d, d) = ``V_a``,
    ``moments`` (m, d) = ``b_a``, ``counts`` (m,), ``lam``, ``beta``, ``context_bound`` ``L``, and the
    derived ``theta`` (m, d), ``gram_inv`` (m, d, d), ``lam_min`` (m,) (smallest eigenvalue of ``V_a``).

    Parameters
    ----------
    gram, moments, counts, lam, beta, context_bound, theta, gram_inv, lam_min
        The fields above, with the shapes given (``m`` arms, dimension ``d``).
    """

    gram: np.ndarray
    moments: np.ndarray
    counts: np.ndarray
    lam: float
    beta: float
    context_bound: float
    theta: np.ndarray
    gram_inv: np.ndarray
    lam_min: np.ndarray

    def __post_init__(self):
        for name in ("gram", "moments", "counts", "theta", "gram_inv", "lam_min"):
            check_instance(getattr(self, name), np.ndarray, name)
        m, d = self.moments.shape if self.moments.ndim == 2 else (-1, -1)
        shapes = {"gram": (m, d, d), "counts": (m,), "theta": (m, d), "gram_inv": (m, d, d), "lam_min": (m,)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} must have shape {shape} for moments of shape {self.moments.shape}, "
                                 f"got {getattr(self, name).shape} (build states with state_from_statistics)")

    @property
    def n_arms(self) -> int:
        return int(self.counts.size)

    @property
    def dim(self) -> int:
        return int(self.moments.shape[1])

# %% [markdown]
# `state_from_statistics` builds the state from per-arm $V_a$ (ridge included), $b_a$ and counts, the
# one door every other constructor goes through, so the derived centres $\hat\theta_a = V_a^{-1} b_a$
# and widths are computed in one place.

# %% tags=["export"]
def state_from_statistics(gram, moments, counts, *, lam, beta, context_bound) -> ContextualState:
    """Build a ``ContextualState`` from per-arm ``V_a`` (with the ridge included), ``b_a`` and counts.

    Parameters
    ----------
    gram : array (m, d, d)
        Symmetric positive definite ``V_a = lam I + sum x x^T``.
    moments : array (m, d)
        ``b_a = sum r x``.
    counts : array (m,)
        Rows per arm (integers >= 0).
    lam, beta, context_bound : float
        Ridge, radius, context bound (all > 0; ``beta`` may be 0).

    Returns
    -------
    ContextualState
    """
    gram = check_real_array(gram, "gram", ndim=3)
    moments = check_real_array(moments, "moments", ndim=2)
    counts = check_int_array(counts, "counts", 0, ndim=1)
    m, d = moments.shape
    if gram.shape != (m, d, d) or counts.shape != (m,):
        raise ValueError(f"gram must have shape (m, d, d) and counts (m,) for moments of shape {moments.shape}, "
                         f"got {gram.shape} and {counts.shape}")
    if not np.allclose(gram, np.swapaxes(gram, 1, 2), rtol=1e-12, atol=0):
        raise ValueError("gram must hold symmetric matrices")
    lam, context_bound = check_positive(lam, "lam"), check_positive(context_bound, "context_bound")
    beta = check_real(beta, "beta", 0)
    try:
        theta, gram_inv, lam_min = _derived(gram, moments)
    except np.linalg.LinAlgError:
        raise ValueError("gram must hold positive definite matrices") from None
    if np.any(lam_min < lam * (1 - 1e-9)):
        raise ValueError("gram must include the ridge: every eigenvalue of V_a must be >= lam")
    return ContextualState(_readonly(gram), _readonly(moments), _readonly(counts, np.int64), lam, beta,
                           context_bound, _readonly(theta), _readonly(gram_inv), _readonly(lam_min))


def _check_rows(contexts, arms, rewards, n_arms: int, context_bound: float, allow_empty: bool = False):
    contexts = check_real_array(contexts, "contexts", ndim=2, nonempty=not allow_empty)
    arms = check_int_array(arms, "arms", 0, n_arms - 1, ndim=1, nonempty=not allow_empty)
    rewards = check_real_array(rewards, "rewards", 0, 1, ndim=1, nonempty=not allow_empty)
    if not (contexts.shape[0] == arms.size == rewards.size):
        raise ValueError(f"contexts, arms and rewards must have one row each: {contexts.shape[0]}, {arms.size}, "
                         f"{rewards.size}")
    norms = np.sqrt(np.einsum("ij,ij->i", contexts, contexts))
    if np.any(norms > context_bound * (1 + 1e-12)):
        i = int(np.argmax(norms))
        raise ValueError(f"contexts must satisfy ||x|| <= context_bound = {context_bound} (assumption A1), "
                         f"row {i} has norm {norms[i]:.6g}")
    return contexts, arms.astype(np.int64), rewards


def _per_arm_sums(contexts, arms, rewards, n_arms: int):
    """``(sum x x^T, sum r x, count)`` per arm: one sort, then one matrix product per arm."""
    d = contexts.shape[1]
    gram = np.zeros((n_arms, d, d))
    moments = np.zeros((n_arms, d))
    order = np.argsort(arms, kind="stable")
    bounds = np.searchsorted(arms[order], np.arange(n_arms + 1))
    for a in range(n_arms):
        rows = order[bounds[a]:bounds[a + 1]]
        if rows.size:
            x = contexts[rows]
            gram[a] = x.T @ x
            moments[a] = rewards[rows] @ x
    return gram, moments, np.diff(bounds)

# %% [markdown]
# **Fitting.** `fit_contextual` checks the logged rows (contexts with $\|x\| \le L$, arms, rewards in
# $[0, 1]$), sums $x x^\top$ and $r x$ per arm, and fixes the confidence radius $\beta$ at fit, so
# that a deletion never changes it.

# %% tags=["export"]
def fit_contextual(contexts, arms, rewards, *, n_arms, lam=1.0, context_bound, tau=None, theta_bound=1.0,
                   beta=None) -> ContextualState:
    """Fit the contextual LCB learner on logged rows ``(contexts[i], arms[i], rewards[i])``.

    Parameters
    ----------
    contexts : array (N, d)
        Contexts with ``||x|| <= context_bound`` (refused otherwise: assumption A1).
    arms : array (N,)
        Logged actions in ``0..n_arms-1``.
    rewards : array (N,)
        Rewards in [0, 1].
    n_arms : int
        Number of arms ``m``.
    lam : float
        Ridge ``lam > 0``.
    context_bound : float
        ``L``, fixed before seeing the data.
    tau : float, optional
        Failure probability of the radius; defaults to ``1/N``.
    theta_bound : float
        ``S`` in the radius.
    beta : float, optional
        An explicit radius instead of ``confidence_radius`` (then the sub-optimality bound of the
        chapter does not apply; the unlearning guarantees do not depend on ``beta``).

    Returns
    -------
    ContextualState
    """
    n_arms = check_int(n_arms, "n_arms", 1)
    lam, context_bound = check_positive(lam, "lam"), check_positive(context_bound, "context_bound")
    contexts, arms, rewards = _check_rows(contexts, arms, rewards, n_arms, context_bound)
    n, d = contexts.shape
    if beta is None:
        if tau is None:
            if n < 2:
                raise ValueError(f"tau defaults to 1/N, which needs N >= 2, got N = {n}")
            tau = 1.0 / n
        beta = confidence_radius(n, d, n_arms, tau, lam, context_bound, theta_bound)
    else:
        beta = check_real(beta, "beta", 0)
    gram, moments, counts = _per_arm_sums(contexts, arms, rewards, n_arms)
    gram += lam * np.eye(d)
    return state_from_statistics(gram, moments, counts, lam=lam, beta=beta, context_bound=context_bound)


def lcb_scores(state: ContextualState, contexts) -> np.ndarray:
    """Scores ``s_a(x) = x^T theta_a - beta ||x||_{V_a^{-1}}``, shape (n_contexts, m).

    Parameters
    ----------
    state : ContextualState
    contexts : array (n, d)

    Returns
    -------
    numpy.ndarray
    """
    check_instance(state, ContextualState, "state")
    contexts = check_real_array(contexts, "contexts", ndim=2)
    if contexts.shape[1] != state.dim:
        raise ValueError(f"contexts must have {state.dim} columns, got {contexts.shape[1]}")
    return _scores(state.theta, state.gram_inv, state.beta, contexts)


def _widths(gram_inv, contexts):
    """``||x||_{W_a}`` for every context (rows) and arm (columns): one matrix product against all arms'
    matrices side by side, ``(n, d) @ (d, m d)``, then a row-wise dot product."""
    m, d = gram_inv.shape[0], gram_inv.shape[1]
    y = (contexts @ np.transpose(gram_inv, (1, 0, 2)).reshape(d, m * d)).reshape(-1, m, d)
    quad = np.einsum("nad,nd->na", y, contexts)
    return np.sqrt(np.maximum(quad, 0.0))


def _scores(theta, gram_inv, beta, contexts):
    return contexts @ theta.T - beta * _widths(gram_inv, contexts)

# %% [markdown]
# What a release shows is a `ReleasedPolicy`: the centres $\theta_a$ (noised where a Gaussian branch
# ran), the width matrices $V_a^{-1}$ and $\beta$; its `actions(contexts)` is the pessimistic policy
# $\arg\max_a s_a(x)$.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class ReleasedPolicy:
    """What a release shows: centres ``theta`` (m, d) (noised where a Gaussian branch ran), width
    matrices ``gram_inv`` (m, d, d) and the radius ``beta``; ``actions(contexts)`` is the policy.

    Parameters
    ----------
    theta : array_like (m, d)
        The released centres.
    gram_inv : array_like (m, d, d)
        The width matrices ``W_a``.
    beta : float
        The confidence radius.
    """

    theta: np.ndarray
    gram_inv: np.ndarray
    beta: float

    def __post_init__(self):
        theta = check_real_array(self.theta, "theta", ndim=2)
        gram_inv = check_real_array(self.gram_inv, "gram_inv", ndim=3)
        if gram_inv.shape != theta.shape + theta.shape[1:]:
            raise ValueError(f"gram_inv must have shape {theta.shape + theta.shape[1:]}, got {gram_inv.shape}")
        check_real(self.beta, "beta", 0)

    def scores(self, contexts) -> np.ndarray:
        """``x^T theta_a - beta ||x||_{W_a}`` for each context (rows) and arm (columns).

        Parameters
        ----------
        contexts : array_like (n, d)
            One context per row, of the state's dimension ``d``.

        Returns
        -------
        numpy.ndarray (n, m)
        """
        contexts = check_real_array(contexts, "contexts", ndim=2)
        if contexts.shape[1] != self.theta.shape[1]:
            raise ValueError(f"contexts must have {self.theta.shape[1]} columns, got {contexts.shape[1]}")
        return _scores(self.theta, self.gram_inv, self.beta, contexts)

    def actions(self, contexts) -> np.ndarray:
        """The policy: ``argmax_a`` of the scores, ties to the lowest arm index.

        Parameters
        ----------
        contexts : array_like (n, d)
            One context per row, of the state's dimension ``d``.

        Returns
        -------
        numpy.ndarray of int (n,)
        """
        return np.argmax(self.scores(contexts), axis=1)


def release_exact(state: ContextualState) -> ReleasedPolicy:
    """The release of the learner itself (no deletion): ``(theta_a, V_a^{-1}, beta)`` of ``state``.

    Parameters
    ----------
    state : ContextualState

    Returns
    -------
    ReleasedPolicy
    """
    check_instance(state, ContextualState, "state")
    return ReleasedPolicy(state.theta, state.gram_inv, state.beta)


# %% [markdown]
# ## 2. Rollback: a rank-$k$ downdate, equal to retraining
#
# A request $U$ names rows; $U_a$ are those of arm $a$, $k_a = |U_a|$, $X_{U_a}$ their contexts (as
# rows) and $r_{U_a}$ their rewards.  The statistics are sums, so removing the rows is subtracting
# their contribution:
# $$V'_a = V_a - X_{U_a}^\top X_{U_a}, \qquad b'_a = b_a - X_{U_a}^\top r_{U_a}, \qquad n'_a = n_a - k_a,$$
# and $\hat\theta'_a = V_a'^{-1} b'_a$.  In exact arithmetic $V'_a$, $b'_a$ *are* the statistics of
# $D \setminus U$ (the ridge term $\lambda I$ is untouched, $\beta$ is fixed at fit), so rollback is
# retraining, exactly: the $(0, 0)$ guarantee of Paper A's rollback branch.  Cost $O(k d^2)$ for the
# update plus $O(d^3)$ per touched arm to refactor, against $O(N d^2)$ for a refit.
#
# **Floating point.**  On data whose contexts and rewards are small integers (one-hot contexts and
# 0/1 clicks, as in chapter A10b), every sum is an integer below $2^{53}$, so float64 sums are exact
# and rollback equals retraining *bit for bit*.  On real-valued data the two differ by rounding, and a
# downdate can amplify it: $V'_a$ is computed by cancellation from $V_a$, with an error of order
# $u\,(\|V_a\|_F + \|X_{U_a}^\top X_{U_a}\|_F)$ ($u$ = unit round-off) that the solve multiplies by
# $1/\lambda_{\min}(V'_a)$.  `rollback` therefore checks
# $d\,u\,(\|V_a\|_F + \|X_{U_a}^\top X_{U_a}\|_F) \le 10^{-6}\,\lambda_{\min}(V'_a)$ and refuses an
# ill-conditioned downdate (the pure function has no rows to refit from); the lifecycle model of
# chapter A10b then refits that arm from its remaining rows.  The ridge keeps
# $\lambda_{\min}(V'_a) \ge \lambda$, so the check only fails when $\|V_a\|/\lambda$ is near $10^{10}$.

# %% tags=["export"]
DOWNDATE_TOLERANCE = 1e-6
_UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2


@dataclass(frozen=True, eq=False)
class ContextualRequest:
    """A deletion request: the deleted rows' ``contexts`` (k, d), ``arms`` (k,) and ``rewards`` (k,).

    Parameters
    ----------
    contexts : array_like (k, d)
        The deleted rows' contexts.
    arms : array_like of int (k,)
        Their arms (>= 0; checked against the state when served).
    rewards : array_like (k,)
        Their rewards, in [0, 1].
    """

    contexts: np.ndarray
    arms: np.ndarray
    rewards: np.ndarray

    def __post_init__(self):
        contexts = check_real_array(self.contexts, "contexts", ndim=2)
        arms = check_int_array(self.arms, "arms", 0, ndim=1)
        rewards = check_real_array(self.rewards, "rewards", 0, 1, ndim=1)
        if not (contexts.shape[0] == arms.size == rewards.size):
            raise ValueError("contexts, arms and rewards of a request must have one row each")
        object.__setattr__(self, "contexts", _readonly(contexts))
        object.__setattr__(self, "arms", _readonly(arms, np.int64))
        object.__setattr__(self, "rewards", _readonly(rewards))

    def counts(self, n_arms: int) -> np.ndarray:
        """Rows per arm, ``k_a``.

        Parameters
        ----------
        n_arms : int
            The state's number of arms ``m`` (>= 1).

        Returns
        -------
        numpy.ndarray of int64 (n_arms,)
        """
        return np.bincount(self.arms, minlength=check_int(n_arms, "n_arms", 1))


def _check_request(state: ContextualState, request: ContextualRequest):
    check_instance(state, ContextualState, "state")
    check_instance(request, ContextualRequest, "request")
    if request.contexts.shape[1] != state.dim:
        raise ValueError(f"request contexts must have {state.dim} columns, got {request.contexts.shape[1]}")
    if request.arms.size and int(request.arms.max()) >= state.n_arms:
        raise ValueError(f"request arms must lie in [0, {state.n_arms - 1}]")
    _check_rows(request.contexts, request.arms, request.rewards, state.n_arms, state.context_bound, True)
    k = request.counts(state.n_arms)
    if np.any(k > state.counts):
        a = int(np.argmax(k - state.counts))
        raise ValueError(f"the request deletes {int(k[a])} rows of arm {a}, which has {int(state.counts[a])}")
    return k


# %% tags=["export"]
def rollback(state: ContextualState, request: ContextualRequest) -> ContextualState:
    """Remove the request's rows from the statistics (rank-k downdate); equals retraining on ``D \\ U``.

    Only the touched arms are refactored.  Refused (``ValueError``): a request that deletes more rows
    than an arm has, a context outside the bound, and an ill-conditioned downdate (refit that arm
    from its rows instead; ``ContextualModel`` does).

    Parameters
    ----------
    state : ContextualState
    request : ContextualRequest

    Returns
    -------
    ContextualState
        The statistics of ``D \\ U`` (same ``lam``, ``beta``, ``L``).
    """
    k = _check_request(state, request)
    touched = np.flatnonzero(k)
    gram, moments = np.array(state.gram), np.array(state.moments)
    theta, gram_inv, lam_min = np.array(state.theta), np.array(state.gram_inv), np.array(state.lam_min)
    if touched.size:
        g_u, b_u, _ = _per_arm_sums(request.contexts, request.arms, request.rewards, state.n_arms)
        gram[touched] -= g_u[touched]
        moments[touched] -= b_u[touched]
        emptied = touched[state.counts[touched] == k[touched]]    # no row left: what retraining stores, exactly
        gram[emptied], moments[emptied] = state.lam * np.eye(state.dim), 0.0   # (no rounding residue of the rows)
        gram[touched] = 0.5 * (gram[touched] + np.swapaxes(gram[touched], 1, 2))
        try:
            t, w, lm = _derived(gram[touched], moments[touched])
        except np.linalg.LinAlgError:
            lm = np.zeros(touched.size)
        scale = np.linalg.norm(state.gram[touched], axis=(1, 2)) + np.linalg.norm(g_u[touched], axis=(1, 2))
        bad = state.dim * _UNIT_ROUNDOFF * scale > DOWNDATE_TOLERANCE * lm
        if np.any(bad):
            raise ValueError(f"ill-conditioned downdate on arm {int(touched[np.argmax(bad)])}: the rounding error "
                             f"of V_a - X_U^T X_U exceeds {DOWNDATE_TOLERANCE} lambda_min(V'_a); refit that arm "
                             "from its remaining rows")
        theta[touched], gram_inv[touched], lam_min[touched] = t, w, lm
    return ContextualState(_readonly(gram), _readonly(moments), _readonly(state.counts - k, np.int64),
                           state.lam, state.beta, state.context_bound, _readonly(theta), _readonly(gram_inv),
                           _readonly(lam_min))


# %% [markdown]
# ### 2.1 Exactness checks
#
# First in **exact rational arithmetic** (Python `Fraction`s, a small Gaussian elimination): on
# integer contexts and 0/1 rewards, the downdated statistics and the refitted ones are the same
# rationals, and so are the centres; the float64 implementation agrees with them bit for bit, because
# every float sum on such data is exact.

# %%
def fraction_solve(matrix, vector):
    """Solve a small linear system exactly over the rationals (Gauss-Jordan)."""
    n = len(vector)
    a = [[Fraction(matrix[i][j]) for j in range(n)] + [Fraction(vector[i])] for i in range(n)]
    for c in range(n):
        p = next(r for r in range(c, n) if a[r][c] != 0)
        a[c], a[p] = a[p], a[c]
        a[c] = [v / a[c][c] for v in a[c]]
        for r in range(n):
            if r != c and a[r][c] != 0:
                a[r] = [v - a[r][c] * w for v, w in zip(a[r], a[c])]
    return [a[i][n] for i in range(n)]


def fraction_statistics(x, r, lam):
    d = len(x[0])
    gram = [[Fraction(lam) * (i == j) + sum(Fraction(int(row[i]) * int(row[j])) for row in x) for j in range(d)]
            for i in range(d)]
    moments = [sum(Fraction(int(rv)) * int(row[i]) for row, rv in zip(x, r)) for i in range(d)]
    return gram, moments


checked_exact = 0
for trial in range(40):
    n, d, m = int(rng.integers(6, 14)), int(rng.integers(1, 4)), 2
    x = rng.integers(-2, 3, size=(n, d)).astype(float)
    arms = rng.integers(0, m, size=n)
    r = rng.integers(0, 2, size=n).astype(float)
    lam = 1.0
    L = float(np.sqrt(4 * d))
    drop = rng.choice(n, size=int(rng.integers(1, n // 2)), replace=False)
    keep = np.setdiff1d(np.arange(n), drop)
    full = fit_contextual(x, arms, r, n_arms=m, lam=lam, context_bound=L, beta=1.0)
    rolled = rollback(full, ContextualRequest(x[drop], arms[drop], r[drop]))
    refit = fit_contextual(x[keep], arms[keep], r[keep], n_arms=m, lam=lam, context_bound=L, beta=1.0)
    assert np.array_equal(rolled.gram, refit.gram) and np.array_equal(rolled.moments, refit.moments)
    assert np.array_equal(rolled.theta, refit.theta)          # same float inputs -> same float outputs
    for a in range(m):
        rows_a = [i for i in keep if arms[i] == a]
        g, b = fraction_statistics([x[i] for i in rows_a] or [[0] * d], [r[i] for i in rows_a] or [0], lam)
        if not rows_a:
            g = [[Fraction(lam) * (i == j) for j in range(d)] for i in range(d)]
            b = [Fraction(0)] * d
        # the float statistics equal the exact rationals, entry by entry
        assert all(Fraction(float(rolled.gram[a, i, j])) == g[i][j] for i in range(d) for j in range(d))
        assert all(Fraction(float(rolled.moments[a, i])) == b[i] for i in range(d))
        theta_exact = fraction_solve(g, b)
        err = max(abs(float(t) - rolled.theta[a, i]) for i, t in enumerate(theta_exact))
        assert err < 1e-12
    checked_exact += 1
print(f"{checked_exact} integer data sets: downdate == refit as float64 bit for bit and as exact rationals "
      "(centres within 1e-12 of the exact rational solution)")

# %% [markdown]
# On real-valued data the two computations agree to rounding (the property-based test in
# `tests/test_mab_contextual.py` draws data sets and requests with `hypothesis`); and an
# ill-conditioned downdate is refused rather than released.  Below: a tiny ridge, contexts of norm
# 1, one arm holding $10^4$ copies of one direction, and a request deleting all of them: $V'$ is
# computed by cancelling $10^4$ against $10^4$ down to $\lambda = 10^{-12}$.

# %%
n_big = 10_000
x_ill = np.tile([[1.0, 0.0]], (n_big, 1))
x_ill = np.vstack([x_ill, [[0.0, 1.0]]])
arms_ill = np.zeros(n_big + 1, dtype=int)
r_ill = np.ones(n_big + 1)
ill = fit_contextual(x_ill, arms_ill, r_ill, n_arms=1, lam=1e-12, context_bound=1.0, beta=1.0)
try:
    rollback(ill, ContextualRequest(x_ill[:n_big], arms_ill[:n_big], r_ill[:n_big]))
    raise AssertionError("an ill-conditioned downdate was accepted")
except ValueError as err:
    print("refused:", str(err)[:96], "...")
ok = fit_contextual(x_ill, arms_ill, r_ill, n_arms=1, lam=1.0, context_bound=1.0, beta=1.0)
after = rollback(ok, ContextualRequest(x_ill[:n_big], arms_ill[:n_big], r_ill[:n_big]))
print("with lam = 1 the same downdate is accepted; theta' =", np.round(after.theta[0], 6).tolist())

# %% [markdown]
# ## 3. The Gaussian mechanism on the released centres
#
# Paper A's Gaussian mechanism keeps the statistic of $D$ and hides the deleted rows behind noise.
# Here: release the centres $\hat\theta_a(D)$ of the touched arms plus Gaussian noise, and the
# widths of the data that remain.  Precisely, the **Gaussian branch** releases
# $$\tilde\theta_a = \hat\theta_a(D) + \sigma\xi_a\ (a \text{ touched}),\qquad
# \tilde\theta_a = \hat\theta_a(D)\ (a \text{ untouched}),\qquad W_a = V_a(D\setminus U)^{-1}\ (\text{all } a),$$
# $\xi_a \sim N(0, I_d)$ independent.  Its **reference** (run on data that never contained $U$) releases
# $\hat\theta_a(D \setminus U) + \sigma\xi_a$ on the same arms, the same $W_a$ and the same $\sigma$.
# The widths are the same in both worlds (they read only $D \setminus U$), so the two releases differ
# only in the centres of the touched arms: a Gaussian mechanism on the vector
# $(\hat\theta_a)_{a\ \mathrm{touched}}$ whose $L_2$ sensitivity is the norm of the per-arm shifts
# (noise on several arms is one mechanism, calibrated to the joint shift).
#
# Why not keep $V_a(D)$ for the widths, as Paper A keeps $b(a_0)$ of $D$?  The width
# $x \mapsto \|x\|_{V_a^{-1}}$ is not linear in $x$; noise on $\theta$ cannot cover its change, and a
# policy whose widths read the deleted contexts would leak them with no noise at all (erratum E20).
# The price: the Gaussian branch keeps the deleted rows' information in the centre only.
#
# **Lemma (sensitivity of the ridge centre to deleting $k$ rows).**  Let $D'$ be any data set, $V'$,
# $\hat\theta'$ its statistics for arm $a$, and $D = D' \cup U$ with $k$ added rows of arm $a$
# satisfying (A1), (A2).  Then
# $$\|\hat\theta_a(D) - \hat\theta_a(D')\|_2 \le \Delta(D', k) :=
# \big(1 + L\|\hat\theta'\|_2\big)\,\min\Big\{\frac{kL}{\lambda_{\min}(V')},\ \frac12\sqrt{\frac{k}{\lambda_{\min}(V')}}\Big\}.$$
# *Proof.*  $V = V' + X_U^\top X_U$ and $b = b' + X_U^\top r_U$.  From $V\hat\theta = b$ and
# $V'\hat\theta' = b'$: $V(\hat\theta - \hat\theta') = b - V\hat\theta' = X_U^\top r_U - X_U^\top X_U\hat\theta'$,
# so $\hat\theta - \hat\theta' = V^{-1}X_U^\top e$ with residuals $e_j = r_j - x_j^\top\hat\theta'$,
# $|e_j| \le 1 + L\|\hat\theta'\|$ by (A1), (A2).  Write $\lambda' = \lambda_{\min}(V')$.
# (i) $\|V^{-1}\| \le 1/\lambda'$ since $V \succeq V'$, and $\|X_U^\top e\| \le \sum_j\|x_j\||e_j| \le
# kL(1 + L\|\hat\theta'\|)$.  (ii) $X_U^\top X_U = V - V' \preceq V - \lambda' I$, so
# $V^{-1}X_U^\top X_U V^{-1} \preceq V^{-1} - \lambda' V^{-2}$, whose eigenvalues $1/\mu - \lambda'/\mu^2$
# ($\mu$ an eigenvalue of $V$) are at most $1/(4\lambda')$: $\|V^{-1}X_U^\top\| \le 1/(2\sqrt{\lambda'})$,
# and $\|e\| \le \sqrt k(1 + L\|\hat\theta'\|)$.  $\square$
#
# The second half is attained: with $D'$ empty ($V' = \lambda I$, $\hat\theta' = 0$) and one row
# $x = \sqrt\lambda\,u$, $r = 1$ (when $L \ge \sqrt\lambda$), $\hat\theta = \sqrt\lambda u/(2\lambda)$ has norm
# exactly $\frac12\sqrt{1/\lambda}$; the first is approached as $kL^2/\lambda \to 0$ ($x = Lu$ gives
# $L/(\lambda + L^2)$).  Section 5 finds the bound attained on non-empty data too.
#
# The bound reads **only the data that remain** ($\lambda_{\min}(V')$, $\hat\theta'$) and $k$: the
# reference world computes the same number, so $\sigma$ calibrated to it is the same in both worlds.
# It holds for every $D'$ (the ridge gives $\lambda_{\min}(V') \ge \lambda > 0$) under (A1), (A2); what
# can fail is a caller's *stronger* promise.  `parameter_sensitivity` takes an optional
# `eigen_floor` $\lambda_0$: a data-independent sensitivity (with $\lambda_0$ for $\lambda_{\min}(V')$,
# like Paper A's $3k/(2N(a_0))$) that holds only while $\lambda_{\min}(V'_a) \ge \lambda_0$ and is
# refused when that fails.  The one-row case in one dimension is Paper A's: $x = 1$, $V' = \lambda + n'$,
# and (i) gives $k(1+\hat\theta')/(\lambda + n')$, the order $k/N(a_0)$ of Lemma A.1.
#
# **Theorem (Gaussian branch).** With $\sigma$ the analytic Gaussian calibration (Balle & Wang 2018)
# of $\Delta = (\sum_{a\ \mathrm{touched}}\Delta(D'_a, k_a)^2)^{1/2}$ at $(\varepsilon, \delta)$, the
# Gaussian branch is $(\varepsilon,\delta)$-unlearning against the reference above, for every $D$ and
# $U$: both releases are $N(\cdot, \sigma^2 I)$ with centres at distance $\le \Delta$ and identical
# deterministic parts; the policy is post-processing.  (The classic calibration
# $\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon$ is available and refused for $\varepsilon \ge 1$.)

# %% tags=["export"]
def parameter_sensitivity(lam_min, k, context_bound, theta_norm):
    """The lemma's bound on ``||theta_a(D' + U) - theta_a(D')||`` for ``k`` added rows (A1, A2).

    ``(1 + L theta_norm) min(k L / lam_min, sqrt(k / lam_min) / 2)``; broadcasts over arrays.

    Parameters
    ----------
    lam_min : float or array
        ``lambda_min(V'_a)`` of the data that remain (> 0), or an assumed floor.
    k : int or array
        Rows deleted from the arm (>= 0).
    context_bound : float
        ``L``.
    theta_norm : float or array
        ``||theta'_a||`` of the data that remain (or an upper bound on it).

    Returns
    -------
    float or numpy.ndarray
    """
    lam_min = check_real_array(lam_min, "lam_min", 0)
    if np.any(lam_min <= 0):
        raise ValueError("lam_min must be > 0")
    k = check_int_array(k, "k", 0)
    context_bound = check_positive(context_bound, "context_bound")
    theta_norm = check_real_array(theta_norm, "theta_norm", 0)
    out = (1 + context_bound * theta_norm) * np.minimum(k * context_bound / lam_min, 0.5 * np.sqrt(k / lam_min))
    return float(out) if out.ndim == 0 else out


def deletion_sensitivity(state_after: ContextualState, k, *, eigen_floor=None) -> np.ndarray:
    """Per-arm sensitivity ``Delta(D', k_a)`` read from the statistics of the data that remain.

    Parameters
    ----------
    state_after : ContextualState
        Statistics of ``D \\ U``.
    k : array (m,)
        Rows deleted per arm.
    eigen_floor : float, optional
        Use this data-independent ``lambda_0`` instead of ``lambda_min(V'_a)``; refused
        (``ValueError``) on a touched arm with ``lambda_min(V'_a) < lambda_0``, where it would not hold.

    Returns
    -------
    numpy.ndarray
        ``Delta_a`` (0 on untouched arms).
    """
    check_instance(state_after, ContextualState, "state_after")
    k = check_int_array(k, "k", 0, ndim=1)
    if k.size != state_after.n_arms:
        raise ValueError(f"k must have one entry per arm ({state_after.n_arms}), got {k.size}")
    lam_min = np.array(state_after.lam_min)
    if eigen_floor is not None:
        eigen_floor = check_positive(eigen_floor, "eigen_floor")
        short = (k > 0) & (lam_min < eigen_floor)
        if np.any(short):
            a = int(np.argmax(short))
            raise ValueError(f"the sensitivity with eigen_floor = {eigen_floor} needs lambda_min(V'_a) >= "
                             f"eigen_floor on every touched arm; arm {a} has {lam_min[a]:.6g} after the deletion")
        lam_min = np.full_like(lam_min, eigen_floor)
    norms = np.linalg.norm(state_after.theta, axis=1)
    return np.asarray(parameter_sensitivity(lam_min, k, state_after.context_bound, norms), dtype=float)


def calibrate_sigma(sensitivity, epsilon, delta, calibration: str = "analytic") -> float:
    """Noise scale for an L2 ``sensitivity`` at ``(epsilon, delta)``: ``"analytic"`` (Balle & Wang, every
    epsilon) or ``"classic"`` (``Delta sqrt(2 ln(1.25/delta))/epsilon``, refused for epsilon >= 1).

    Parameters
    ----------
    sensitivity : float
        The L2 sensitivity ``Delta`` (>= 0).
    epsilon, delta : float
        The target guarantee.
    calibration : str
        ``"analytic"`` or ``"classic"``.

    Returns
    -------
    float
        ``sigma``.
    """
    check_choice(calibration, "calibration", ("analytic", "classic"))
    if calibration == "classic":
        return classic_gaussian_sigma(sensitivity, epsilon, delta)
    return analytic_gaussian_sigma(sensitivity, epsilon, delta)


# %% [markdown]
# ## 4. The adaptive switch, from the two branch bounds
#
# Fix a context $x$ and a touched arm $a$ that is the comparator at $x$ (Paper A's hard case: the
# deleted rows come from the arm that should be served).  Write $w'(x) = \|x\|_{V_a'^{-1}}$ (data
# that remain) and $w(x) = \|x\|_{V_a^{-1}}$ (all data; $w \le w'$).  On the confidence event:
# - **Rollback**: the learner on $D \setminus U$, so the bound of Section 1 gives
#   $R_r(x) = 2\beta w'(x)$.
# - **Gaussian branch**: the centre $\hat\theta_a(D)$ errs by at most $\beta w(x)$ and the released
#   width is $\beta w'(x)$, so $s_a(x) \ge x^\top\theta^*_a - \beta(w + w') + x^\top\sigma\xi_a$; when
#   another arm is chosen its score is pessimistic, and the loss is at most
#   $\max\{0, \beta(w + w') - x^\top\sigma\xi_a\}$, whose expectation is at most
#   $R_g(x) = \beta(w(x) + w'(x)) + \sigma\|x\|/\sqrt{2\pi}$ ($E[\max(0, -Z)] = s/\sqrt{2\pi}$ for
#   $Z \sim N(0, s^2)$, as in Paper A's Theorem 3.3).
#
# Averaged over a set of contexts $\mathcal X$ (a *public* set: a grid, or held-out contexts that are
# not part of $D$), $R_g < R_r$ iff
# $$\sigma < \sigma_0 := \sqrt{2\pi}\,\beta\,\frac{\sum_{x}(w'(x) - w(x))}{\sum_x \|x\|},$$
# the contextual twin of Paper A's threshold $\gamma_0$ (the noise at which the two bounds cross;
# Paper A writes it as $\gamma < \gamma_0$ with $\sigma = \Delta\gamma$).  The gain $w' - w$ is what
# the deleted rows are worth in the centre; noise costs $\sigma\|x\|/\sqrt{2\pi}$.
#
# **Which reference world.**  $w(x)$ reads $V_a(D)$, hence the deleted contexts; a switch that reads
# it (`switch="conditional"`) is private only *conditionally on the branch decision*: its reference is
# told the branch (as Paper A's Algorithm 3 is told $\hat\pi(D)$), and the guarantee is stated
# against that reference.  The **literal** reference — a learner that never saw $U$ — can only compute
# what $D \setminus U$, $k$ and public quantities determine.  `switch="literal"` (the default) replaces
# $w(x)$ by the smallest value it can take given $D \setminus U$ and $k$: $X_U^\top X_U \preceq kL^2 I$
# gives $V_a \preceq V'_a + kL^2 I$, so $w(x) \ge w_{\mathrm{lo}}(x) := \|x\|_{(V'_a + kL^2I)^{-1}}$, and
# the literal switch uses $\sigma_0^{\mathrm{lit}}$ with $w_{\mathrm{lo}}$ in place of $w$ (the largest
# gain the Gaussian branch could have).  Its decision, its $\sigma$ and its widths are all functions of
# $D \setminus U$ and $k$, so the reference that never saw $U$ reproduces them exactly: the
# $(\varepsilon, \delta)$ guarantee of the Gaussian branch and the $(0, 0)$ of rollback then hold
# against the **literal** reference.  `reference_contextual` is that reference; it refuses to
# reproduce a conditional decision it cannot compute, unless told the branch.

# %% tags=["export"]
CONTEXTUAL_METHODS = ("rollback", "gaussian", "adaptive")
SWITCHES = ("literal", "conditional")


@dataclass(frozen=True)
class BranchBounds:
    """The two branch bounds averaged over the evaluation contexts, and the switch's threshold:
    the Gaussian branch is chosen iff ``sigma < sigma_threshold`` (i.e. ``gaussian < rollback``).

    Parameters
    ----------
    gaussian : float
        The Gaussian branch's bound, averaged over the evaluation contexts.
    rollback : float
        The rollback branch's bound, averaged likewise.
    sigma_threshold : float
        The noise scale at which the two bounds are equal.
    """

    gaussian: float
    rollback: float
    sigma_threshold: float

    def __post_init__(self):
        for name in ("gaussian", "rollback", "sigma_threshold"):
            check_real(getattr(self, name), name, 0)


def _check_contexts(contexts, dim: int):
    contexts = check_real_array(contexts, "contexts", ndim=2)
    if contexts.shape[1] != dim:
        raise ValueError(f"contexts must have {dim} columns, got {contexts.shape[1]}")
    return contexts


def branch_bounds(state_after: ContextualState, k, sigma, contexts, *, gram_before=None) -> BranchBounds:
    """``R_g``, ``R_r`` and ``sigma_0`` of the chapter, summed over the touched arms, averaged over contexts.

    Parameters
    ----------
    state_after : ContextualState
        Statistics of ``D \\ U``.
    k : array (m,)
        Rows deleted per arm.
    sigma : float
        Noise scale of the Gaussian branch (>= 0).
    contexts : array (n, d)
        Public evaluation contexts.
    gram_before : array (m, d, d), optional
        ``V_a(D)``: the conditional switch (reads the deleted contexts).  ``None``: the literal switch
        (``w_lo`` from ``V'_a + k L^2 I``).

    Returns
    -------
    BranchBounds
    """
    check_instance(state_after, ContextualState, "state_after")
    k = check_int_array(k, "k", 0, ndim=1)
    if k.size != state_after.n_arms:
        raise ValueError(f"k must have one entry per arm ({state_after.n_arms}), got {k.size}")
    sigma = check_real(sigma, "sigma", 0)
    contexts = _check_contexts(contexts, state_after.dim)
    touched = np.flatnonzero(k)
    if touched.size == 0:
        return BranchBounds(0.0, 0.0, 0.0)
    w_after = _widths(state_after.gram_inv[touched], contexts)
    if gram_before is None:
        lifted = state_after.gram[touched] + (k[touched] * state_after.context_bound ** 2)[:, None, None] * np.eye(
            state_after.dim)
        w_before = _widths(np.linalg.inv(lifted), contexts)
    else:
        gram_before = check_real_array(gram_before, "gram_before", ndim=3)
        if gram_before.shape != state_after.gram.shape:
            raise ValueError(f"gram_before must have shape {state_after.gram.shape}, got {gram_before.shape}")
        w_before = _widths(np.linalg.inv(gram_before[touched]), contexts)
    norms = np.linalg.norm(contexts, axis=1)
    beta, n_touch = state_after.beta, touched.size
    r_roll = float(np.mean(2 * beta * w_after) * n_touch)
    gain = float(np.mean(w_after - w_before) * n_touch)
    noise = float(np.mean(norms) * n_touch)
    r_gauss = float(np.mean(beta * (w_after + w_before)) * n_touch) + sigma * noise / math.sqrt(2 * math.pi)
    threshold = math.sqrt(2 * math.pi) * beta * gain / noise if noise > 0 else 0.0
    return BranchBounds(r_gauss, r_roll, threshold)


# %% [markdown]
# The mechanism and its reference, as pure functions.  The record says which branch ran, the
# sensitivity and calibration behind $\sigma$, and the reference world the guarantee holds against;
# nothing in it is computed from the deleted rows except, for the conditional switch, the branch bit
# (which is why that switch is conditional).  The noise draws come from `rng` (OS entropy by default;
# a seed is key material).

# %% tags=["export"]
@dataclass(frozen=True)
class ContextualRecord:
    """What an unlearning call did: ``branch`` ("rollback" / "gaussian"), ``guarantee`` ("exact" /
    "(epsilon, delta)"), ``reference`` ("literal" or "conditional on the branch"), the noised arms,
    the joint ``sensitivity``, ``sigma``, ``calibration``, ``epsilon``, ``delta``, ``sigma_threshold``.

    Parameters
    ----------
    branch, guarantee, reference, noised_arms, sensitivity, sigma, calibration, epsilon, delta, sigma_threshold
        As described above (``sigma`` is 0 and ``epsilon``, ``delta``, ``sigma_threshold`` may be
        ``None`` on the rollback branch).
    release : ReleasedPolicy or None
        The policy released by the call.
    """

    branch: str
    guarantee: str
    reference: str
    noised_arms: tuple
    sensitivity: float
    sigma: float
    calibration: str
    epsilon: float | None
    delta: float | None
    sigma_threshold: float | None
    release: "ReleasedPolicy | None" = None      # the released policy (filled in by ``unlearn``)

    def __post_init__(self):
        check_choice(self.branch, "branch", ("rollback", "gaussian"))
        if self.release is not None:
            check_instance(self.release, ReleasedPolicy, "release")
        check_choice(self.guarantee, "guarantee", ("exact", "(epsilon, delta)"))
        check_choice(self.reference, "reference", ("literal", "conditional on the branch"))


def _noised_release(state_centres: ContextualState, state_after: ContextualState, touched, sigma, rng):
    theta = np.array(state_after.theta)
    theta[touched] = state_centres.theta[touched] + sigma * rng.standard_normal((touched.size, state_after.dim))
    return ReleasedPolicy(_readonly(theta), state_after.gram_inv, state_after.beta)


def _plan(state_after, k, method, epsilon, delta, calibration, eigen_floor, contexts, switch, gram_before):
    touched = np.flatnonzero(k)
    if method == "rollback" or touched.size == 0:
        return "rollback", touched, 0.0, 0.0, None
    delta_a = deletion_sensitivity(state_after, k, eigen_floor=eigen_floor)
    sens = float(np.sqrt(np.sum(delta_a[touched] ** 2)))
    sigma = calibrate_sigma(sens, epsilon, delta, calibration)
    if method == "gaussian":
        return "gaussian", touched, sens, sigma, None
    bounds = branch_bounds(state_after, k, sigma, contexts, gram_before=gram_before if switch == "conditional" else None)
    branch = "gaussian" if sigma < bounds.sigma_threshold else "rollback"
    return branch, touched, sens, sigma, bounds.sigma_threshold


def _check_mechanism_args(method, epsilon, delta, calibration, switch, contexts, dim):
    check_choice(method, "method", CONTEXTUAL_METHODS)
    check_choice(calibration, "calibration", ("analytic", "classic"))
    check_choice(switch, "switch", SWITCHES)
    if method != "rollback":
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if method == "adaptive":
        if contexts is None:
            raise ValueError("method 'adaptive' needs contexts=... (public evaluation contexts for the switch)")
        contexts = _check_contexts(contexts, dim)
    return epsilon, delta, contexts

# %% [markdown]
# **The options and the unlearning step.** `ContextualOptions` says how a request is served (rollback,
# the Gaussian branch, or the adaptive switch between them, with its target $(\varepsilon, \delta)$
# and public evaluation contexts); `_unlearn_contextual` is the step the protocol's `unlearn` calls.

# %% tags=["export"]
@dataclass(frozen=True, eq=False)
class ContextualOptions:
    """How the contextual learner unlearns (``unlearn(state, request, options=ContextualOptions(...))``):
    ``method`` ("adaptive", "gaussian" or "rollback"), ``epsilon`` / ``delta`` (the Gaussian branch's
    target), ``contexts`` (public evaluation contexts of the adaptive switch), ``switch`` ("literal" or
    "conditional"), ``calibration`` ("analytic" or "classic"), ``eigen_floor`` (a data-independent
    sensitivity, optional).  Checked against the state when used (``contexts`` needs its dimension).

    Parameters
    ----------
    method, epsilon, delta, contexts, switch, calibration, eigen_floor
        As described above; ``epsilon`` and ``delta`` are needed whenever a Gaussian branch may run,
        ``contexts`` (array_like (n, d)) for the adaptive switch.
    """

    method: str = "adaptive"
    epsilon: float | None = None
    delta: float | None = None
    contexts: object = None
    switch: str = "literal"
    calibration: str = "analytic"
    eigen_floor: float | None = None

    def __post_init__(self):
        check_choice(self.method, "method", ("adaptive", "gaussian", "rollback"))
        check_choice(self.switch, "switch", ("literal", "conditional"))
        check_choice(self.calibration, "calibration", ("analytic", "classic"))


@register_unlearn(ContextualState, ContextualRequest)
def _unlearn_contextual(state: ContextualState, request: ContextualRequest, *, options=None, rng=None) -> tuple:
    """``unlearn(state, request, options=ContextualOptions(...), rng=...)``: serve one deletion request --
    rollback, the Gaussian branch, or the adaptive switch between them.

    Parameters
    ----------
    state : ContextualState
        Statistics of ``D``.
    request : ContextualRequest
        The rows to delete.
    options : ContextualOptions
        The method and its parameters (``None``: refused -- the adaptive default needs epsilon, delta
        and contexts).
    rng : numpy.random.Generator, int or None
        Noise source (None: OS entropy; an int is key material).

    Returns
    -------
    (ContextualState, ContextualRecord)
        The exact statistics of ``D \\ U`` (stored, never released) and the record, whose ``release``
        is the released policy.
    """
    if options is None:
        raise TypeError("options must be a ContextualOptions, e.g. options=ContextualOptions(method='rollback'), "
                        "got None")
    o = check_instance(options, ContextualOptions, "options")
    k = _check_request(state, request)
    epsilon, delta, contexts = _check_mechanism_args(o.method, o.epsilon, o.delta, o.calibration, o.switch,
                                                     o.contexts, state.dim)
    if o.eigen_floor is not None:
        check_positive(o.eigen_floor, "eigen_floor")
    rng = as_generator(rng, "rng")
    after = rollback(state, request)
    branch, touched, sens, sigma, threshold = _plan(after, k, o.method, epsilon, delta, o.calibration, o.eigen_floor,
                                                    contexts, o.switch, state.gram)
    if branch == "rollback":
        release = release_exact(after)
        record = ContextualRecord("rollback", "exact", "literal", (), 0.0, 0.0, o.calibration, epsilon, delta,
                                  threshold, release)
    else:
        release = _noised_release(state, after, touched, sigma, rng)
        reference = "conditional on the branch" if (o.method == "adaptive" and o.switch == "conditional") else "literal"
        record = ContextualRecord("gaussian", "(epsilon, delta)", reference, tuple(int(a) for a in touched), sens,
                                  sigma, o.calibration, epsilon, delta, threshold, release)
    return after, record

# %% [markdown]
# The reference mechanism runs on $D \setminus U$ and is told only the number of deleted rows per arm;
# the unlearned release must be $(\varepsilon, \delta)$-indistinguishable from it (exactly equal under
# rollback).

# %% tags=["export"]
def reference_contextual(state_after: ContextualState, k, *, options: ContextualOptions | None = None,
                         branch=None, rng=None):
    """The reference mechanism: run on ``D \\ U`` (nothing to delete), told only ``k`` per arm.

    ``options`` as for ``unlearn`` (a ``ContextualOptions``); the literal switch is recomputed from
    ``D \\ U`` and ``k``.
    The conditional switch cannot be: pass ``branch=`` (the decision it is conditioned on).

    Returns
    -------
    (ReleasedPolicy, str)
        The release and the branch it took.

    Parameters
    ----------
    state_after : ContextualState
        The statistic of ``D \\ U``.
    k : array_like of int (m,)
        The deleted rows per arm.
    options : ContextualOptions
        Required.
    branch : str or None
        The conditional switch's decision (``"rollback"`` or ``"gaussian"``); only with it.
    rng : numpy.random.Generator, int or None
        The noise's source (``checks.as_generator``).
    """
    check_instance(state_after, ContextualState, "state_after")
    if options is None:
        raise TypeError("options must be a ContextualOptions, got None")
    o = check_instance(options, ContextualOptions, "options")
    method, epsilon, delta, contexts, switch = o.method, o.epsilon, o.delta, o.contexts, o.switch
    calibration, eigen_floor = o.calibration, o.eigen_floor
    k = check_int_array(k, "k", 0, ndim=1)
    if k.size != state_after.n_arms:
        raise ValueError(f"k must have one entry per arm ({state_after.n_arms}), got {k.size}")
    epsilon, delta, contexts = _check_mechanism_args(method, epsilon, delta, calibration, switch, contexts,
                                                     state_after.dim)
    if branch is not None:
        check_choice(branch, "branch", ("rollback", "gaussian"))
    elif method == "adaptive" and switch == "conditional":
        raise ValueError("the conditional switch reads V_a(D), which the reference world does not have: "
                         "pass branch=... (the guarantee is then conditional on it)")
    rng = as_generator(rng, "rng")
    planned, touched, sens, sigma, _ = _plan(state_after, k, method, epsilon, delta, calibration, eigen_floor,
                                             contexts, "literal", None)
    if branch is not None and touched.size and method != "rollback":
        planned = branch
    if planned == "rollback":
        return release_exact(state_after), "rollback"
    return _noised_release(state_after, state_after, touched, sigma, rng), "gaussian"


# %% [markdown]
# For the exact audit: when the noise sits on one arm, the action at a context $x$ is that arm iff
# $x^\top\tilde\theta_a - \beta w'_a(x) > \max_{b \ne a} s_b(x)$, and $x^\top\sigma\xi_a \sim
# N(0, \sigma^2\|x\|^2)$, so
# $$P[\hat\pi(x) = a] = \Phi\Big(\frac{x^\top\theta^{c}_a - \beta w'_a(x) - \max_{b\ne a}s_b(x)}{\sigma\|x\|}\Big),$$
# exactly, for any number of arms ($\theta^c_a$ the centre of the noise; ties have probability 0).

# %% tags=["export"]
def noisy_action_probability(centre: ReleasedPolicy, arm: int, sigma, contexts) -> np.ndarray:
    """``P[policy(x) = arm]`` when only ``arm``'s centre carries ``N(0, sigma^2 I)`` noise around
    ``centre.theta[arm]``: ``Phi((s_arm(x) - max_{b != arm} s_b(x)) / (sigma ||x||))`` per context.

    Parameters
    ----------
    centre : ReleasedPolicy
        The release without noise (its ``theta`` are the noise centres).
    arm : int
    sigma : float
        > 0.
    contexts : array (n, d)
        Non-zero contexts.

    Returns
    -------
    numpy.ndarray
    """
    check_instance(centre, ReleasedPolicy, "centre")
    m = centre.theta.shape[0]
    arm = check_int(arm, "arm", 0, m - 1)
    sigma = check_positive(sigma, "sigma")
    contexts = _check_contexts(contexts, centre.theta.shape[1])
    norms = np.linalg.norm(contexts, axis=1)
    if np.any(norms == 0):
        raise ValueError("contexts must be non-zero (at x = 0 every score is 0)")
    s = centre.scores(contexts)
    others = np.delete(s, arm, axis=1).max(axis=1) if m > 1 else np.full(len(s), -np.inf)
    return special.ndtr((s[:, arm] - others) / (sigma * norms))


# %% [markdown]
# ## 5. Audit: the sensitivity bound against a numerical worst case
#
# For a fixed $D'$ (one arm, $d \in \{1, 2\}$, $0$ to $4$ rows, ridge $\lambda \in \{0.1, 0.5, 1, 4\}$,
# $L = 1$), maximise the actual shift $\|\hat\theta(D' \cup U) - \hat\theta(D')\|$ over the $k \le 2$
# added rows: their contexts in the ball of radius $L$ (parametrised by $x = L\tanh(\|z\|)z/\|z\|$) and
# rewards in $[0, 1]$ ($r = (1 + \tanh t)/2$), by Powell's method from 6 random starts.  The bound
# must dominate every value found (to rounding); the optimiser's best is a *lower* bound on the true
# worst case, so the ratio also shows how tight the lemma is.  The same search is run against a
# **too-small sensitivity**, the tempting shortcut "the residuals $r - x^\top\hat\theta'$ lie in
# $[-1, 1]$ because rewards do" (dropping the factor $1 + L\|\hat\theta'\|$): it must be exceeded.

# %%
def worst_shift(gram_p, moments_p, k, bound_l, restarts, gen):
    """The largest ||theta(D' + U) - theta(D')|| found over k added rows (||x|| <= L, r in [0, 1])."""
    d = gram_p.shape[0]
    theta_p = np.linalg.solve(gram_p, moments_p)

    def unpack(z):
        xs = z[:k * d].reshape(k, d)
        norm = np.sqrt((xs ** 2).sum(1, keepdims=True)) + 1e-300
        return bound_l * np.tanh(norm) * xs / norm, 0.5 + 0.5 * np.tanh(z[k * d:])

    def minus_shift(z):
        xs, rs = unpack(z)
        t = np.linalg.solve(gram_p + xs.T @ xs, moments_p + xs.T @ rs) - theta_p
        return -math.sqrt(t @ t)

    best, best_z = 0.0, None
    for _ in range(restarts):
        z0 = np.concatenate([2 * gen.standard_normal(k * d), 3 * gen.standard_normal(k)])
        res = optimize.minimize(minus_shift, z0, method="Powell", options=dict(maxiter=3000, xtol=1e-6, ftol=1e-10))
        if -res.fun > best:
            best, best_z = -res.fun, res.x
    xs, rs = unpack(best_z)
    return best, xs, rs


def broken_sensitivity(lam_min, k, bound_l, theta_norm):
    """Too small: assumes |r - x^T theta'| <= 1 (drops the factor 1 + L ||theta'||)."""
    return np.minimum(k * bound_l / lam_min, 0.5 * np.sqrt(k / lam_min))


L_AUDIT = 1.0
audit_rows, designs = [], []
for trial in range(24):
    d = int(rng.integers(1, 3))
    n = int(rng.integers(0, 5))
    lam = float(rng.choice([0.1, 0.5, 1.0, 4.0]))
    x = rng.standard_normal((n, d))
    x = x / np.maximum(1, np.linalg.norm(x, axis=1, keepdims=True)) * rng.uniform(0.2, 1, size=(n, 1))
    r = rng.integers(0, 2, size=n).astype(float)
    st_p = fit_contextual(x.reshape(n, d), np.zeros(n, dtype=int), r, n_arms=1, lam=lam, context_bound=L_AUDIT,
                          beta=0.0) if n else state_from_statistics(lam * np.eye(d)[None], np.zeros((1, d)), [0],
                                                                     lam=lam, beta=0.0, context_bound=L_AUDIT)
    k = int(rng.integers(1, 3))
    found, xs, rs = worst_shift(st_p.gram[0], st_p.moments[0], k, L_AUDIT, 6, rng)
    bound = deletion_sensitivity(st_p, [k])[0]
    small = broken_sensitivity(st_p.lam_min[0], k, L_AUDIT, np.linalg.norm(st_p.theta[0]))
    audit_rows.append((d, n, lam, k, found, bound, small))
    designs.append((st_p, k, xs, rs, found))

ratios = np.array([row[4] / row[5] for row in audit_rows])
broken_ratios = np.array([row[4] / row[6] for row in audit_rows])
print(f"{len(audit_rows)} data sets D' (d <= 2, n' <= 4, k <= 2): largest found shift / bound = {ratios.max():.3f}, "
      f"median {np.median(ratios):.2f}")
print(f"too-small sensitivity: largest found shift / it = {broken_ratios.max():.2f}, exceeded by more than 1% on "
      f"{int(np.sum(broken_ratios > 1.01))} of {len(audit_rows)} data sets")
assert ratios.max() <= 1 + 1e-9, "the sensitivity bound was exceeded"
assert ratios.max() >= 0.999, "the bound is attained (to the optimiser's accuracy) on some data set"
assert broken_ratios.max() > 1.5, "the audit catches the too-small sensitivity"

# %%
fig, ax = plt.subplots(figsize=(6.4, 3.4))
ax.scatter([row[5] for row in audit_rows], [row[4] for row in audit_rows], s=18, label="lemma's bound")
ax.scatter([row[6] for row in audit_rows], [row[4] for row in audit_rows], s=18, marker="x",
           label=r"too small: residuals in $[-1, 1]$")
lim = max(max(row[5] for row in audit_rows), max(row[4] for row in audit_rows)) * 1.05
ax.plot([0, lim], [0, lim], "k--", lw=0.8, label="found = claimed")
ax.set(xlabel="claimed sensitivity", ylabel="largest shift found (optimiser)",
       title="Sensitivity of the ridge centre: every point must lie below the diagonal")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 6. Audit: privacy of the released policy, exactly
#
# The Gaussian branch releases $\tilde\theta_0 = \hat\theta_0(D) + \sigma\xi$ on the touched arm; its
# reference releases $\hat\theta_0(D') + \sigma\xi$, everything else equal.  The action at one context
# $x$ is a two-outcome output whose law is exact (Section 4's formula), so the hockey-stick
# divergence $\delta(\varepsilon)$ between the two worlds is exact too, in both directions.
#
# **Worst-case designs.**  Two arms, $d \le 2$: arm 0 holds one of the data sets $D'$ of Section 5 (the
# two on which the optimiser came closest to the bound, and the two on which it exceeded the
# too-small sensitivity most), plus the optimiser's worst $U$ for it; arm 1
# holds 50 rows at context $Lu$ with reward 0 ($u$ the direction of the shift), a comparator whose
# score does not move.  The grid: contexts $x$ on 33 directions at norm $L$, and the radius $\beta$ on
# 121 values in $[0, 6]$ — $\beta$ moves the comparison threshold (the widths of the two arms differ),
# and the privacy claim holds for every $\beta$ (the noise does not depend on it).  For each cell,
# $\delta(\varepsilon)$ of the two-outcome pair must stay at most $\delta$ — and at most the exact
# Gaussian $\delta(\varepsilon)$ of the realised shift (data processing), which the grid comes close
# to, so the audit has power.  It must reject:
# - **half the noise** ($\sigma/2$, the correct sensitivity);
# - **the too-small sensitivity** of Section 5 (analytic calibration of the wrong $\Delta$).

# %%
EPS_AUDIT, DELTA_AUDIT = 1.0, 1e-3
BETAS = np.linspace(0.0, 6.0, 121)
ANGLES = np.linspace(-np.pi / 4, np.pi / 4, 33)


def two_arm_design(st_p, k, xs, rs, n_comparator=50):
    """Arm 0: D' + U (the optimiser's worst U); arm 1: n_comparator rows at L u with reward 0."""
    d = st_p.dim
    shift_dir = np.linalg.solve(st_p.gram[0] + xs.T @ xs, st_p.moments[0] + xs.T @ rs) - st_p.theta[0]
    u = shift_dir / np.linalg.norm(shift_dir)
    comp_x = np.tile(L_AUDIT * u, (n_comparator, 1))
    g0 = np.array(st_p.gram[0]) + xs.T @ xs
    b0 = np.array(st_p.moments[0]) + xs.T @ rs
    g1 = st_p.lam * np.eye(d) + comp_x.T @ comp_x
    full = state_from_statistics(np.stack([g0, g1]), np.stack([b0, np.zeros(d)]), [int(st_p.counts[0]) + k, n_comparator],
                                 lam=st_p.lam, beta=0.0, context_bound=L_AUDIT)
    request = ContextualRequest(xs, np.zeros(k, dtype=int), rs)
    return full, request, u


def grid_contexts(u):
    if u.size == 1:
        return np.array([[L_AUDIT * u[0]]])
    phi0 = math.atan2(u[1], u[0])
    return L_AUDIT * np.column_stack([np.cos(phi0 + ANGLES), np.sin(phi0 + ANGLES)])


def two_outcome_delta(p, q, epsilon):
    """delta(epsilon) of Bernoulli(p) against Bernoulli(q), both directions, vectorised: the best event is
    one of the two outcomes.  Checked against the package's hockey_stick_delta below."""
    e = math.exp(epsilon)
    one = np.maximum(np.maximum(p - e * q, (1 - p) - e * (1 - q)), 0.0)
    other = np.maximum(np.maximum(q - e * p, (1 - q) - e * (1 - p)), 0.0)
    return np.maximum(one, other)


def audit_delta(full, request, sigma, epsilon):
    """Largest exact delta(epsilon) over the grid (both directions), and the exact Gaussian delta of the shift."""
    after = rollback(full, request)
    u_ctx = grid_contexts(np.linalg.solve(full.gram[0], full.moments[0]) - after.theta[0])
    p = np.array([noisy_action_probability(ReleasedPolicy(full.theta, after.gram_inv, beta), 0, sigma, u_ctx)
                  for beta in BETAS])                                      # Gaussian branch: centres of D
    q = np.array([noisy_action_probability(ReleasedPolicy(after.theta, after.gram_inv, beta), 0, sigma, u_ctx)
                  for beta in BETAS])                                      # reference: centres of D'
    deltas = two_outcome_delta(p, q, epsilon)
    i, j = np.unravel_index(np.argmax(deltas), deltas.shape)
    pd, qd = np.array([p[i, j], 1 - p[i, j]]), np.array([q[i, j], 1 - q[i, j]])
    package = max(hockey_stick_delta(pd, qd, epsilon), hockey_stick_delta(qd, pd, epsilon))
    assert abs(package - deltas[i, j]) <= 1e-12, "the vectorised divergence is the package's"
    shift = float(np.linalg.norm(full.theta[0] - after.theta[0]))
    return float(deltas[i, j]), float(gaussian_delta(sigma, shift, epsilon))


# designs ranked on rounded ratios (stable sort: ties by index), so the choice is the same on every CPU
order = np.argsort(-np.round(ratios, 3), kind="stable")
broken_order = [int(i) for i in np.argsort(-np.round(broken_ratios, 3), kind="stable") if i not in order[:2]]
audited = []
for idx in list(order[:2]) + broken_order[:2]:
    st_p, k, xs, rs, found = designs[idx]
    full, request, u = two_arm_design(st_p, k, xs, rs)
    after = rollback(full, request)
    sens = float(deletion_sensitivity(after, request.counts(2))[0])
    sigma_ok = analytic_gaussian_sigma(sens, EPS_AUDIT, DELTA_AUDIT)
    small = float(broken_sensitivity(after.lam_min[0], k, L_AUDIT, np.linalg.norm(after.theta[0])))
    sigma_small = analytic_gaussian_sigma(small, EPS_AUDIT, DELTA_AUDIT)
    res = {name: audit_delta(full, request, s, EPS_AUDIT)
           for name, s in (("correct", sigma_ok), ("half noise", sigma_ok / 2), ("too-small sensitivity", sigma_small))}
    audited.append((idx, found / sens, res))
    print(f"design {idx}: d={st_p.dim}, n'={int(st_p.counts[0])}, k={k}, shift/bound={found / sens:.3f}; "
          + "; ".join(f"{name}: grid delta {v[0]:.1e} (exact Gaussian {v[1]:.1e})" for name, v in res.items()))

for idx, _, res in audited:
    for name, (grid_d, exact_d) in res.items():
        assert grid_d <= exact_d * (1 + 1e-9) + 1e-15, "data processing: a post-processed output cannot leak more"
    assert res["correct"][0] <= DELTA_AUDIT, "the Gaussian branch breaks its (epsilon, delta) promise"
assert all(res["half noise"][0] > DELTA_AUDIT for _, _, res in audited), "half the noise is caught on every design"
assert any(res["too-small sensitivity"][0] > DELTA_AUDIT for _, _, res in audited), "the too-small sensitivity is caught"
captured = min(v[0] / v[1] for _, _, res in audited for v in res.values() if v[1] >= DELTA_AUDIT / 2)
print(f"every correct release within delta = {DELTA_AUDIT} at epsilon = {EPS_AUDIT}; wherever the exact Gaussian "
      f"delta of the shift is at least delta/2, the grid captures at least {captured:.2f} of it")
assert captured > 0.9

# %% [markdown]
# **The exact formula against sampling.**  The audit rests on $P[\hat\pi(x) = a]$ being the normal
# CDF above.  A Monte Carlo check: draw the noise $n = 2\times10^5$ times on one design, at 5 contexts
# and 3 values of $\beta$; each frequency must lie within the Hoeffding margin at failure probability
# $10^{-8}$ per side and comparison (so a correct formula fails with probability at most
# $2 \times 15 \times 10^{-8} = 3\times10^{-7}$; the margin is $\sqrt{\ln(10^{8})/(2n)} \approx 0.0068$),
# and a formula with the width of $D$ instead of $D \setminus U$ would be caught.

# %%
st_p, k, xs, rs, _ = designs[order[0]]
full, request, u = two_arm_design(st_p, k, xs, rs)
after = rollback(full, request)
sigma_mc = analytic_gaussian_sigma(float(deletion_sensitivity(after, request.counts(2))[0]), EPS_AUDIT, DELTA_AUDIT)
ctx_mc = grid_contexts(u)[:: max(1, len(grid_contexts(u)) // 5)][:5]
n_mc = 200_000
margin = hoeffding_margin(n_mc, 1.0, 1e-8)
noise = sigma_mc * rng.standard_normal((n_mc, full.dim))
worst_gap, worst_wrong = 0.0, 0.0
for beta in (0.5, 2.0, 4.0):
    centre = ReleasedPolicy(full.theta, after.gram_inv, beta)
    p_exact = noisy_action_probability(centre, 0, sigma_mc, ctx_mc)
    wrong = noisy_action_probability(ReleasedPolicy(full.theta, full.gram_inv, beta), 0, sigma_mc, ctx_mc)
    s_other = centre.scores(ctx_mc)[:, 1]
    s_zero = ctx_mc @ full.theta[0] - beta * np.sqrt(np.einsum("ni,ij,nj->n", ctx_mc, after.gram_inv[0], ctx_mc))
    freq = np.mean(s_zero[None, :] + noise @ ctx_mc.T > s_other[None, :], axis=0)
    worst_gap = max(worst_gap, float(np.max(np.abs(freq - p_exact))))
    worst_wrong = max(worst_wrong, float(np.max(np.abs(freq - wrong))))
# printed as comparisons (the optimiser's design moves in the last digits between CPUs; the asserts are exact)
print(f"|frequency - formula| within the margin {margin:.4f} at all 15 points: {worst_gap <= margin}; "
      f"with the wrong widths the largest gap is about {worst_wrong:.1f}")
assert worst_gap <= margin
assert worst_wrong > margin

# %% [markdown]
# ## 7. The switch at work
#
# A synthetic instance: $d = 3$, two arms, contexts uniform on the positive part of the unit sphere,
# $\theta^*_0 = (0.5, 0.3, 0.1)$, $\theta^*_1 = (0.3, 0.3, 0.3)$, Bernoulli rewards, $N = 600$ rows
# logged uniformly, $\lambda = 1$, $\tau = 1/N$, $S = 1$; 20 rows of arm 0 were logged at context
# $e_1$, and a request deletes them (the deleted rows carry information in one direction).  Public
# evaluation contexts: 200 fresh draws.  For a range of $(\varepsilon, \delta = 10^{-5})$ the table
# shows $\sigma$ (analytic calibration of $\Delta(D', k)$), the two bounds, both thresholds, and the
# branch each switch takes; the literal switch's decision is reproduced by `reference_contextual`
# from $D \setminus U$ and $k$ alone.

# %%
n_syn, d_syn = 600, 3
theta_star = np.array([[0.5, 0.3, 0.1], [0.3, 0.3, 0.3]])
ctx = np.abs(rng.standard_normal((n_syn, d_syn)))
ctx /= np.linalg.norm(ctx, axis=1, keepdims=True)
arms_syn = rng.integers(0, 2, size=n_syn)
near_e1 = np.flatnonzero(arms_syn == 0)[:20]
ctx[near_e1] = np.array([1.0, 0.0, 0.0])
rew_syn = (rng.random(n_syn) < np.einsum("ij,ij->i", ctx, theta_star[arms_syn])).astype(float)
st_syn = fit_contextual(ctx, arms_syn, rew_syn, n_arms=2, lam=1.0, context_bound=1.0)
req_syn = ContextualRequest(ctx[near_e1], arms_syn[near_e1], rew_syn[near_e1])
eval_ctx = np.abs(rng.standard_normal((200, d_syn)))
eval_ctx /= np.linalg.norm(eval_ctx, axis=1, keepdims=True)
after_syn = rollback(st_syn, req_syn)
k_syn = req_syn.counts(2)
sens_syn = float(deletion_sensitivity(after_syn, k_syn)[0])
print(f"beta = {st_syn.beta:.3f}; Delta(D', k = 20) = {sens_syn:.4f} (lambda_min(V'_0) = {after_syn.lam_min[0]:.1f}, "
      f"||theta'_0|| = {np.linalg.norm(after_syn.theta[0]):.3f})")
# printed values are rounded; the branch decisions are asserted against the thresholds exactly
print(f"{'epsilon':>8} {'sigma':>8} {'R_gauss':>8} {'R_roll':>8} {'s0_lit':>8} {'s0_cond':>8}  literal   conditional")
switch_rows = []
for eps in (1.0, 8.0, 64.0, 256.0, 1024.0):
    sig = calibrate_sigma(sens_syn, eps, 1e-5)
    lit = branch_bounds(after_syn, k_syn, sig, eval_ctx)
    cond = branch_bounds(after_syn, k_syn, sig, eval_ctx, gram_before=st_syn.gram)
    _, rec_lit = unlearn(st_syn, req_syn, options=ContextualOptions(epsilon=eps, delta=1e-5, contexts=eval_ctx), rng=1)
    _, rec_cond = unlearn(st_syn, req_syn, rng=1,
                          options=ContextualOptions(epsilon=eps, delta=1e-5, contexts=eval_ctx, switch="conditional"))
    _, ref_branch = reference_contextual(after_syn, k_syn, options=ContextualOptions(epsilon=eps, delta=1e-5,
                                                                                     contexts=eval_ctx), rng=1)
    assert ref_branch == rec_lit.branch, "the literal reference reproduces the literal decision"
    assert lit.sigma_threshold >= cond.sigma_threshold - 1e-12, "the literal gain is the largest possible gain"
    assert (rec_cond.branch == "gaussian") == (sig < cond.sigma_threshold)
    switch_rows.append((eps, sig, rec_lit.branch, rec_cond.branch))
    print(f"{eps:8.1f} {sig:8.4f} {cond.gaussian:8.4f} {cond.rollback:8.4f} {lit.sigma_threshold:8.4f} "
          f"{cond.sigma_threshold:8.4f}  {rec_lit.branch:9s} {rec_cond.branch} ({rec_cond.reference})")
assert {row[2] for row in switch_rows} == {row[3] for row in switch_rows} == {"rollback", "gaussian"}, \
    "both switches take both branches here"

# %% [markdown]
# Reading the table: the Gaussian branch only pays off when the noise is small against what the
# deleted rows are worth in the centre ($w' - w$), i.e. at large $\varepsilon$ — the same shape as
# Paper A's $\gamma < \gamma_0$.  The literal switch, which must assume the deleted contexts were as
# informative as (A1) allows, takes the Gaussian branch for a wider range of $\varepsilon$ than the
# conditional one (its bound for the Gaussian branch is optimistic); both are private — the literal
# one against the reference that never saw $U$, the conditional one only given its branch.  Chapter
# A10b shows what the switch does on the Open Bandit Dataset: there a request touches many arms with
# few rows each, the joint sensitivity of the centres is large, and every request is rolled back (by
# the switch or by the accountant of the lifecycle model).

# %% [markdown]
# ## Summary
# - **Learner**: per-arm ridge ($\lambda$), LCB score $x^\top\hat\theta_a - \beta\|x\|_{V_a^{-1}}$ with
#   $\beta = \frac12\sqrt{2\ln(m/\tau) + d\ln(1 + NL^2/(\lambda d))} + \sqrt\lambda S$ (self-normalised
#   bound, union over arms; (A1) $\|x\| \le L$, (A2) $r \in [0,1]$, (A3) linear means with
#   $\|\theta^*\| \le S$), fixed at fit; sub-optimality at most $2\beta\|x\|_{V_{a^\star}^{-1}}$ against
#   any comparator.  Stored: $V_a, b_a, n_a$ (and, in the lifecycle model, the rows); released: the
#   policy as $(\theta_a, V_a^{-1}, \beta)$.
# - **Rollback** = rank-$k$ downdate: equal to retraining — as exact rationals and bit for bit in
#   float64 on integer data (40 data sets); ill-conditioned downdates are refused (a refit from the
#   rows is the lifecycle model's answer).
# - **Gaussian branch**: noise on the touched arms' centres, widths from the data that remain,
#   sensitivity $\Delta(D',k) = (1 + L\|\hat\theta'\|)\min\{kL/\lambda_{\min}(V'), \frac12\sqrt{k/\lambda_{\min}(V')}\}$
#   (derived; read from $D \setminus U$ only); a data-independent variant with an eigenvalue floor is
#   refused where the floor fails.
# - **Switch**: $\sigma < \sigma_0 = \sqrt{2\pi}\beta\sum(w' - w)/\sum\|x\|$ from the two branch bounds;
#   literal (reads $D \setminus U$, $k$, public contexts: holds against the literal reference) or
#   conditional (reads $V_a(D)$: holds given the branch).  Every record states which.
# - **Audits**: the bound dominates the optimiser's worst case on 24 data sets and is attained on some
#   (ratio 1 to the optimiser's accuracy); the too-small sensitivity is exceeded (ratio printed above).
#   The exact privacy audit on the worst designs keeps $\delta(\varepsilon = 1) \le 10^{-3}$, captures
#   most of the exact Gaussian $\delta$, and rejects half the noise on every design and the too-small
#   sensitivity; the exact action probability matches $2\times10^5$ noise draws.
