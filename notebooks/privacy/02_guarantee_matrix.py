# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.experiments.guarantees
# ---

# %% [markdown]
# # Chapter P2 — The guarantee matrix: every (ε, δ) claim, audited exactly
#
# *Paper A, Definition 2.1 and every mechanism that returns an $(\varepsilon, \delta)$ claim:
# Algorithm 2 and its two forced branches, mixing (Algorithm 4), multi-source deletion
# (Algorithm 7 and the forced branches on several arms) and imitation learning (Algorithm 6).
# Exports `bandit_unlearning.experiments.guarantees`.*
#
# Earlier chapters audit one mechanism each.  This one asks the question a user of the package asks:
# *whatever I call, is the $(\varepsilon, \delta)$ that the result states true?*  It walks the whole
# product
#
# > path (gaussian, rollback, adaptive, mixing, the three multi-source paths, imitation)
# > × calibration (paper, classic, analytic) × sensitivity (paper, exact)
# > × number of source arms (1 … 16) × $N$, $k$, $\varepsilon$, $\delta$
# > × the two worst-case datasets × a competitor arm placed adversarially,
#
# and for every point either computes the **exact** $\delta$ of what is released, or records that the
# public API **refused** the call with a clear error.  Every $\delta$ is computed against **both
# reference worlds** of chapter A2: the *conditional* one (the reference is given the released
# $\pi(D)$, as the paper's Algorithms 3, 5 and 8 are) and the *literal* one of Definition 2.1 as
# written (the reference is given $\pi(D \setminus U)$: a learner that never saw $U$).  The matrix also
# holds the literal branch rule of chapter A3a, section 5 (`reference="literal"`) for the adaptive
# and mixing paths, and labels every path by the reference it holds against.  A path holds when its worst exact $\delta$ is at
# most the claimed one (to $10^{-9}$ relative).  Each noisy path is also audited with **half the
# noise**, which must fail somewhere — so the audit is shown to have teeth.
#
# ## What is released, and why its δ is exact
#
# `unlearn` returns the released arm *and* the released score vector.  The score vector is the
# stronger output (the arm is its argmax: post-processing), so the audit computes both:
#
# * **Scores.**  On the two worst-case datasets every deleted point has the same reward (all 1 with
#   the rest 0, or the reverse), so the rolled-back subset of mixing has one reward sum and each world
#   releases *one* Gaussian vector: rolled-back and untouched arms are equal in both worlds, and a
#   noised arm $a$ with noise $\sigma_a$ sits at $f_a$ (unlearned) or $f_a(D \setminus U)$
#   (reference).  Two Gaussian vectors with independent coordinates differ by the whitened shift
#   $s = \big((f_a - f_a(D\setminus U))/\sigma_a\big)_a$, and the privacy loss of such a pair
#   depends only on $\lVert s\rVert_2$: the exact $\delta(\varepsilon)$ is the Gaussian privacy
#   profile at sensitivity $\lVert s \rVert_2$ and $\sigma = 1$ (chapter P1a's `gaussian_delta`).
#   These two datasets are the worst cases of each arm's shift (Lemma A.1's exact sensitivity is
#   attained on them), and the profile increases with $\lVert s\rVert_2$, so no other dataset of
#   the same sizes does worse on the scores.
# * **Arm.**  The exact output distribution of the argmax (closed form for one noised arm,
#   one-dimensional quadrature for several), compared by the hockey-stick divergence, for a grid of
#   competitor means plus the two points where the closed form's $\delta$ peaks.  It must never
#   exceed the scores' $\delta$; the audit asserts that as a consistency check of both computations,
#   and checks the distributions it computes against the public `output_distributions`.
#
# Rollback and imitation release deterministic functions of $D \setminus U$: their $\delta$ is 0 when
# the two worlds' outputs are *equal*, and 1 otherwise — so there the audit compares outputs bit for
# bit, and the broken variants are "skip the rollback" and "forget the deletion counts".
#
# ## One decision: an unproven calibration is refused
#
# The classic calibration $\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon$ — which is also
# what `calibration="paper"` computes when $(\varepsilon, \delta)$ are given — is proven only for
# $\varepsilon < 1$, and chapter P1a shows it failing for large $\varepsilon$.  Until this chapter,
# `calibration="paper"` with $\varepsilon \ge 1$ was accepted and only flagged on the result
# (`calibration_proven=False`).  A flag that a caller has to remember to read is a silent failure, so
# the package now **refuses** it with a `ValueError` that names the calibration that is proven for
# every $\varepsilon$ (`"analytic"`), exactly as `calibration="classic"` already did.  A warning would
# still release the noise; the paper's own experiments are unaffected, because they give the noise
# scale $\gamma$ directly and claim no $(\varepsilon, \delta)$.

# %%
import numpy as np

from bandit_unlearning.mab.unlearn import UnlearnOptions, output_distributions
from bandit_unlearning.protocol import unlearn

rng = np.random.default_rng(20261201)

# %% [markdown]
# ## 1. Worst-case instances
#
# $\ell$ source arms $0, \dots, \ell - 1$ with $N$ points each, $k$ deleted from each, and one
# untouched competitor arm $\ell$ with $N$ points and mean $\mu_c$ (its reward sum is $N\mu_c$:
# fractional sums are allowed, since only the statistic matters).  $\tau = 1/((\ell+1)N)$, i.e.
# $1/|D|$, fixed at fit as everywhere in the package.

# %% tags=["export"]
"""The guarantee matrix: every path of the package that returns an (epsilon, delta) claim, audited
exactly on worst-case instances (chapter P2).

``audit_setting`` computes, for one ``Setting``, the largest exact delta of the released scores and of
the released arm over both worst-case datasets and a grid of competitor means, or records that the
public API refused the call; ``audit_matrix`` runs a list of settings and ``summarize`` turns the rows
into the chapter's table.  Broken variants (half the noise, per-arm calibration of several noised
arms, a skipped rollback, imitation that forgets the deletion counts) go through the same code.
"""

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np
from scipy import special

from bandit_unlearning.checks import (
    check_bool, check_count, check_callable, check_choice, check_int, check_real_array,
)
from bandit_unlearning.mab.imitation import DeletionCounts, ImitationState, most_frequent_arm
from bandit_unlearning.mab.lcb import LCBState, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest, rollback
from bandit_unlearning.mab.unlearn import UnlearnOptions, noisy_argmax_distribution, plan_unlearning
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import gaussian_delta
from bandit_unlearning.protocol import unlearn

KINDS = ("deleted 1, kept 0", "deleted 0, kept 1")
REFERENCES = ("conditional", "literal")
PATHS = ("gaussian", "rollback", "adaptive", "mixing", "imitation")
VARIANTS = ("correct", "half noise", "per-arm sigma", "skipped rollback", "forgets k")
TOLERANCE = 1e-9            # a path holds when worst delta <= claimed delta * (1 + TOLERANCE)


def _check_is(value, cls, name: str):
    """``TypeError`` unless ``value`` is a ``cls`` -- by class name among dataclasses, so that the
    chapter's own cells (which define the same classes before importing this module) pass too."""
    if not (dataclasses.is_dataclass(value) and type(value).__name__ == cls.__name__):
        article = "an" if cls.__name__[0] in "AEIOU" else "a"
        raise TypeError(f"{name} must be {article} {cls.__name__}, got {type(value).__name__}")
    return value


def worst_case_instance(n: int, k: int, n_sources: int, kind: str, competitor_mean: float):
    """``(state, request)``: ``n_sources`` source arms of ``n`` points, ``k`` deleted from each, all
    deleted rewards 1 and the rest 0 (``"deleted 1, kept 0"``) or the reverse, and a competitor arm
    (the last) of ``n`` points with mean ``competitor_mean``; ``tau = 1/|D|``.

    Parameters
    ----------
    n : int
        Points per arm.
    k : int
        Points deleted from each source arm.
    n_sources : int
        Source arms (the arms ``0 .. n_sources - 1``).
    kind : str
        One of ``KINDS``: which rewards are deleted (1 or 0).
    competitor_mean : float
        The competitor arm's mean (its reward sum is ``n * competitor_mean``).

    Returns
    -------
    (LCBState, DeletionRequest)
        The fitted instance and the request deleting ``k`` points from each source arm.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    m = n_sources + 1
    source_sum = float(k) if kind == KINDS[0] else float(n - k)
    state = LCBState([n] * m, [source_sum] * n_sources + [n * competitor_mean], 1.0 / (m * n))
    reward = 1.0 if kind == KINDS[0] else 0.0
    request = DeletionRequest(np.repeat(np.arange(n_sources), k), np.full(n_sources * k, reward))
    return state, request


def _instances(setting) -> list:
    """``(probe, request, rollback(probe, request))`` per kind of ``KINDS``, the probe's competitor mean
    1/2 (nothing of the source arms depends on it), shared by ``competitor_means`` and ``audit_setting``."""
    out = []
    for kind in KINDS:
        probe, request = worst_case_instance(setting.n, setting.k, setting.n_sources, kind, 0.5)
        out.append((probe, request, rollback(probe, request)))
    return out


# %% [markdown]
# ## 2. One setting, exactly
#
# A `Setting` names a path and its parameters.  `audit_setting` builds the options through the public
# `UnlearnOptions` and the per-arm plan through the public `plan_unlearning` — the same calls
# `unlearn` makes — so a refusal there is a refusal of the public API, recorded with its message.
# The released quantities are then computed from the plan: the unlearned base scores (each noised
# arm at its score on $D$ minus the rolled-back points, each rolled-back arm at its score on
# $D \setminus U$) against the reference base (every source arm at its score on $D \setminus U$).
# For multi-source paths the learner's arm decides which arm Algorithm 7 may noise; the competitor
# grid places it on either side of the source arms.

# %% tags=["export"]
@dataclass(frozen=True)
class Setting:
    """One point of the matrix: ``path`` in ``PATHS``; ``n_sources`` source arms of ``n`` points with
    ``k`` deleted from each; the claimed ``(epsilon, delta)``; ``calibration`` and ``sensitivity`` as
    in ``UnlearnOptions``; ``eta`` (mixing's ``k'/k``) for ``path="mixing"``; ``reference`` the branch
    rule (``UnlearnOptions.reference``: ``"conditional"``, the paper's, or ``"literal"``).

    Parameters
    ----------
    path : str
        One of ``PATHS``.
    n_sources, n, k : int
        Source arms (>= 1), points per arm (>= 1) and deletions per source arm (1 .. n).
    epsilon, delta : float
        The claimed guarantee (checked by ``UnlearnOptions``: a refusal is a result of the audit).
    calibration, sensitivity : str
        As in ``UnlearnOptions`` (default ``"analytic"``, ``"exact"``).
    eta : float, optional
        Mixing's ``k'/k`` (``path="mixing"`` only).
    reference : str, default "conditional"
        The branch rule, one of ``REFERENCES``.
    """

    path: str
    n_sources: int
    n: int
    k: int
    epsilon: float
    delta: float
    calibration: str = "analytic"
    sensitivity: str = "exact"
    eta: float | None = None
    reference: str = "conditional"

    def __post_init__(self):
        check_choice(self.path, "path", PATHS)
        check_choice(self.reference, "reference", REFERENCES)
        check_int(self.n_sources, "n_sources", 1), check_int(self.k, "k", 1, check_int(self.n, "n", 1))

    def options(self) -> UnlearnOptions:
        """The public ``UnlearnOptions`` of this setting (its ``ValueError`` is the API's refusal)."""
        return UnlearnOptions(self.path, epsilon=self.epsilon, delta=self.delta, calibration=self.calibration,
                              sensitivity=self.sensitivity, eta=self.eta, reference=self.reference)


# %% [markdown]
# An `AuditRow` holds what the audit of one setting found; `competitor_means` places the competitor.

# %% tags=["export"]
@dataclass(frozen=True)
class AuditRow:
    """Result of ``audit_setting``: worst exact delta of the scores and of the arm over datasets and
    competitors against the conditional reference (given the released ``pi(D)``, Algorithms 3, 5, 8)
    and against the literal one (given ``pi(D \\ U)``; ``*_literal``), whether any noise was added,
    whether some request fell back to rollback (the method could not certify it), and the refusal
    message (``None`` if accepted).

    Parameters
    ----------
    setting : Setting
        The audited setting.
    variant : str
        One of ``VARIANTS``.
    delta_scores, delta_arm : float
        Worst exact delta of the released scores and arm, conditional reference.
    noised : bool
        Whether any plan added noise.
    refused : str, optional
        The public API's refusal message (None if accepted).
    delta_scores_literal, delta_arm_literal : float
        The same against the literal reference.
    fell_back : bool
        Whether some request fell back to rollback.
    """

    setting: Setting
    variant: str
    delta_scores: float
    delta_arm: float
    noised: bool
    refused: str | None = None
    delta_scores_literal: float = 0.0
    delta_arm_literal: float = 0.0
    fell_back: bool = False

    def __post_init__(self):
        _check_is(self.setting, Setting, "setting"), check_choice(self.variant, "variant", VARIANTS)

    @property
    def ratio(self) -> float:
        """Worst exact delta over the claimed delta against the conditional reference (0 if refused)."""
        return 0.0 if self.refused else max(self.delta_scores, self.delta_arm) / self.setting.delta

    @property
    def ratio_literal(self) -> float:
        """Worst exact delta over the claimed delta against the literal reference (0 if refused)."""
        return 0.0 if self.refused else max(self.delta_scores_literal, self.delta_arm_literal) / self.setting.delta


def competitor_means(setting: Setting, n_grid: int = 21) -> np.ndarray:
    """Competitor means: a grid over [0, 1] plus the neighbourhood of the source arms' scores, where
    the learner's arm changes and a single noised arm's argmax delta peaks.

    Parameters
    ----------
    setting : Setting
        The setting (its ``n``, ``k`` and ``n_sources``).
    n_grid : int, default 21
        Points of the regular grid over [0, 1], >= 2.

    Returns
    -------
    numpy.ndarray
        The sorted distinct means, in [0, 1].
    """
    _check_is(setting, Setting, "setting"), check_count(n_grid, "n_grid", 2)
    return _competitor_means(setting, n_grid, _instances(setting))


def _competitor_means(setting: Setting, n_grid: int, instances) -> np.ndarray:
    """``competitor_means`` from ``_instances(setting)`` (unchecked)."""
    radius = float(np.sqrt(instances[0][0].log_term / (2 * setting.n)))
    near = []
    for probe, _, rolled in instances:
        f_d, f_r = probe.scores[0], rolled.scores[0]
        near += [f_d, f_r, (f_d + f_r) / 2, f_d - 1e-9]
    near = np.array(near) + radius                     # a score M is a mean M + b(n)
    return np.unique(np.clip(np.concatenate([np.linspace(0, 1, n_grid), near]), 0.0, 1.0))

# %% [markdown]
# **The released arm's distribution.** With one noised arm the distribution of $\arg\max_a(f_a +
# \sigma_a Z_a)$ has a closed form; with several, each noised arm's chance is a one-dimensional
# integral, computed for all rows at once by a fixed composite Gauss–Legendre rule (the chapter checks
# it against adaptive quadrature to $10^{-12}$), so the audit's numbers are computed, not sampled.

# %% tags=["export"]
U_MAX = 9.0                 # standard normal mass beyond 9 is 1.1e-19
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
_GRID = np.linspace(-U_MAX, U_MAX, 37)                        # panels of width 1/2
_STEEP = np.array([-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0])   # extra breaks around a steep crossing


def released_arm_distributions(rows, sigmas) -> np.ndarray:
    """Distribution of ``argmax(row + sigmas * Z)`` (``Z`` i.i.d. standard normal, ties to the lowest
    index) for every row of ``rows`` (shape ``(R, m)``), all rows sharing ``sigmas`` (shape ``(m,)``).

    At most one noised arm: the closed form ``noisy_argmax_distribution``.  Several: the best noiseless
    arm ``b`` wins with ``prod_j Phi((f_b - f_j)/sigma_j)`` and a noised arm ``i`` with
    ``int_{u > (f_b - f_i)/sigma_i} phi(u) prod_{j != i} Phi((f_i + sigma_i u - f_j)/sigma_j) du``,
    computed for all rows at once by a fixed composite 20-point Gauss-Legendre rule on ``[lo, 9]``
    (the normal mass beyond 9 is 1.1e-19) with panels of width 1/2, break points at ``lo`` and at every
    other arm's crossing ``(f_j - f_i)/sigma_i``, and eight more breaks around a crossing whose
    width ``sigma_j/sigma_i`` is below 1/2.  Arms whose integrals have bit-identical inputs (their own
    column and sigma and the other noised arms' columns and sigmas, in order) share one evaluation.  The
    public ``multi_noisy_argmax_distribution`` computes the same integrals with adaptive quadrature; the
    chapter checks the two agree to 1e-12.

    Parameters
    ----------
    rows : array_like
        Base scores, shape ``(R, m)`` (one row is promoted).
    sigmas : array_like
        Noise of each arm, shape ``(m,)``, >= 0.

    Returns
    -------
    numpy.ndarray
        Shape ``(R, m)``: each row the probability that each arm is released.
    """
    rows = np.atleast_2d(check_real_array(rows, "rows"))
    sigmas = check_real_array(sigmas, "sigmas")
    if rows.ndim != 2 or sigmas.shape != rows.shape[1:]:
        raise ValueError(f"rows must be (R, m) and sigmas (m,), got {rows.shape} and {sigmas.shape}")
    if np.any(sigmas < 0):
        raise ValueError(f"sigmas must be >= 0, got {sigmas}")
    n_rows = rows.shape[0]
    noised = np.flatnonzero(sigmas > 0)
    if noised.size <= 1:
        a = int(noised[0]) if noised.size else 0
        return noisy_argmax_distribution(rows, a, float(sigmas[a]))
    quiet = np.flatnonzero(sigmas == 0)
    out = np.zeros(rows.shape)
    f_b = np.full(n_rows, -np.inf)
    if quiet.size:
        b = quiet[np.argmax(rows[:, quiet], axis=1)]
        f_b = rows[np.arange(n_rows), b]
        out[np.arange(n_rows), b] = np.prod(special.ndtr((f_b[:, None] - rows[:, noised]) / sigmas[noised]), axis=1)
    computed = {}                                     # arms whose integrals have identical inputs
    for i in noised:
        others = noised[noised != i]
        f_i, f_o, s_i, s_o = rows[:, i], rows[:, others], sigmas[i], sigmas[others]
        key = (f_i.tobytes(), f_o.tobytes(), s_i.tobytes(), s_o.tobytes())
        if key in computed:                               # e.g. several equal source arms: same numbers
            out[:, i] = out[:, computed[key]]
            continue
        computed[key] = i
        lo = np.clip((f_b - f_i) / s_i, -U_MAX, U_MAX)
        cuts = (f_o - f_i[:, None]) / s_i
        width = s_o / s_i
        breaks = [lo[:, None], np.broadcast_to(_GRID, (n_rows, _GRID.size)), cuts]
        if np.any(width < 0.5):
            steep = width < 0.5
            breaks.append((cuts[:, steep, None] + width[steep, None] * _STEEP).reshape(n_rows, -1))
        breaks = np.sort(np.clip(np.concatenate(breaks, axis=1), lo[:, None], U_MAX), axis=1)
        half = 0.5 * np.diff(breaks, axis=1)                                     # (R, panels)
        u = 0.5 * (breaks[:, 1:] + breaks[:, :-1])[..., None] + half[..., None] * _GL_NODES
        z = (f_i[:, None, None, None] + s_i * u[..., None] - f_o[:, None, None, :]) / s_o
        integrand = np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi) * np.prod(special.ndtr(z), axis=-1)
        out[:, i] = np.einsum("rp,rpn,n->r", half, integrand, _GL_WEIGHTS)
    return out / out.sum(axis=1, keepdims=True)

# %% [markdown]
# For one setting, `_bases` gives the base scores of the unlearned and of the reference world on a
# worst-case instance, and `_released_deltas` the exact $\delta$ of the released scores (the Gaussian
# profile of the whitened shift) and of the released arm, the worst over the competitor means.

# %% tags=["export"]
def _bases(state: LCBState, request: DeletionRequest, plans, skip_rollback: bool = False, rolled=None):
    """(unlearned base scores, reference base scores) of the plan on a worst-case instance (``rolled``:
    ``rollback(state, request)`` if already computed)."""
    rolled = rollback(state, request) if rolled is None else rolled
    base_r = rolled.scores
    base_u = state.scores.copy()
    for p in plans:
        if skip_rollback:
            continue
        if p.k_rollback == p.k:
            base_u[p.arm] = base_r[p.arm]
        elif p.k_rollback > 0:                         # mixing: k' of the (equal) deleted rewards rolled back
            mask = request.arms == p.arm
            part = DeletionRequest(request.arms[mask][: p.k_rollback], request.rewards[mask][: p.k_rollback])
            base_u[p.arm] = rollback(state, part).scores[p.arm]
    return base_u, base_r


def _released_deltas(base_u, base_r, sigmas, epsilon: float, arm_audit: bool, sigmas_r=None):
    """Exact delta of the released scores (Gaussian profile of the whitened shift) and of the arm, for
    base scores ``[..., m]`` that differ only in the competitor (last) coordinate across leading rows;
    the arm's delta is the largest over the rows.  ``sigmas_r``: the reference world's noise when its
    plan differs (default: ``sigmas``).  If a coordinate is noised in one world and not in the other,
    the released score vectors are mutually singular there (a point mass against a density): the
    scores' delta is 1, and only the arm's delta is computed."""
    base_u, base_r = np.atleast_2d(base_u), np.atleast_2d(base_r)
    sigmas_r = sigmas if sigmas_r is None else sigmas_r
    if np.any((sigmas > 0) != (sigmas_r > 0)):
        if np.any((sigmas > 0) & (sigmas_r > 0) & (sigmas != sigmas_r)):
            raise ValueError("the two worlds noise a common arm with different sigmas (no plan does that)")
        if not arm_audit:
            return 1.0, 0.0
        p, q = released_arm_distributions(base_u, sigmas), released_arm_distributions(base_r, sigmas_r)
        return 1.0, float(np.max(hockey_stick_delta(p, q, epsilon)))
    noised = sigmas > 0
    if np.any(base_u[:, ~noised] != base_r[:, ~noised]):
        return 1.0, 1.0                               # a deterministic coordinate differs: no privacy
    if not noised.any():
        return 0.0, 0.0
    shift = float(np.sqrt(np.sum(((base_u[0] - base_r[0])[noised] / sigmas[noised]) ** 2)))
    d_scores = float(gaussian_delta(1.0, shift, epsilon)) if shift > 0 else 0.0
    if not arm_audit:
        return d_scores, 0.0
    p, q = released_arm_distributions(base_u, sigmas), released_arm_distributions(base_r, sigmas)
    return d_scores, float(np.max(hockey_stick_delta(p, q, epsilon)))


# %% [markdown]
# The broken variants change one thing each: `"half noise"` halves every $\sigma$; `"per-arm
# sigma"` calibrates each noised arm to its own sensitivity (what the package did for several noised
# arms before it calibrated to their joint shift); `"skipped rollback"` leaves rolled-back arms at
# their score on $D$.  Imitation's two worlds are the vote of Algorithm 6 after deleting the counts
# and the vote on $D \setminus U$ refitted; its broken variant votes on $D$.

# %% tags=["export"]
def _imitation_row(setting: Setting, variant: str) -> AuditRow:
    """Algorithm 6 against refitting on the remaining counts, over every split of the deletions
    between the two leading arms' counts near a tie (the cases where the vote can change)."""
    n, k, l = setting.n, setting.k, setting.n_sources
    worst = 0.0
    for lead in range(0, 2 * k + 1):
        counts = np.array([n] * l + [n - k + lead], dtype=np.int64)
        state = ImitationState(counts)
        deleted = np.array([k] * l + [0], dtype=np.int64)
        unlearned = unlearn(state, DeletionCounts(deleted))[1].arm if variant != "forgets k" else state.arm
        retrained = int(most_frequent_arm(counts - deleted))
        worst = max(worst, 0.0 if unlearned == retrained else 1.0)
    return AuditRow(setting, variant, worst, worst, False, None, worst, worst)   # the vote reads no pi(D)


# %% [markdown]
# `audit_setting` puts the pieces together for one setting and one variant.

# %% tags=["export"]
def audit_setting(setting: Setting, variant: str = "correct", n_grid: int = 21, arm_audit: bool = True) -> AuditRow:
    """Worst exact delta of ``setting`` (and ``variant``, one of ``VARIANTS``) over both worst-case
    datasets and the competitor means, against both reference worlds, or the public API's refusal.
    The unlearned world plans from ``pi(D)``; the conditional reference from the same ``pi(D)``, the
    literal one from ``pi(D \\ U)``.  The plans depend on the competitor only through those two arms,
    so competitors are grouped by the pair and each group is one batch; a plan depends on nothing else
    that varies here (not on the rewards: it reads the learner's arm, the counts and ``L``), and the
    base scores of the source arms not on the competitor, so each is computed once per arm.
    ``audit_variants`` audits several variants of one setting in one pass.

    Parameters
    ----------
    setting : Setting
        The audited setting.
    variant : str, default "correct"
        One of ``VARIANTS``: the mechanism or one of its broken variants.
    n_grid : int, default 21
        Grid points of ``competitor_means``.
    arm_audit : bool, default True
        Whether to compute the released arm's delta too (else it is reported as 0).

    Returns
    -------
    AuditRow
        The worst deltas, or the refusal.
    """
    return audit_variants(setting, [(variant, arm_audit)], n_grid)[0]


# %% [markdown]
# `audit_variants` does the work: the options, the instances, the competitor grid and the plans
# are the same for every variant of a setting, so the correct mechanism and its broken variants are
# audited in one pass, each exactly as `audit_setting` alone would (the tests compare them bit for bit).

# %% tags=["export"]
def audit_variants(setting: Setting, variants, n_grid: int = 21) -> list[AuditRow]:
    """``[audit_setting(setting, variant, n_grid, arm_audit) for variant, arm_audit in variants]``,
    computing what the variants share (options, instances, competitor means, plans) once.

    Parameters
    ----------
    setting : Setting
        The audited setting.
    variants : sequence of (str, bool)
        Pairs ``(variant, arm_audit)``: a variant of ``VARIANTS`` and whether its arm is audited.
    n_grid : int, default 21
        Grid points of ``competitor_means``, for every variant.

    Returns
    -------
    list of AuditRow
        One row per pair, in order (every row the refusal if the public API refuses the setting).
    """
    _check_is(setting, Setting, "setting")
    if not (isinstance(variants, (list, tuple)) and variants
            and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in variants)):
        raise TypeError(f"variants must be a non-empty list of (variant, arm_audit) pairs, got {variants!r}")
    variants = [(v, check_bool(a, "arm_audit")) for v, a in variants]
    for v, _ in variants:
        if v not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {v!r}")
    if setting.path == "imitation":
        return [_imitation_row(setting, v) for v, _ in variants]
    try:
        options = setting.options()
    except ValueError as err:
        return [AuditRow(setting, v, 0.0, 0.0, False, refused=str(err).split(";")[0]) for v, _ in variants]
    worst = np.zeros((len(variants), 4))             # scores, arm (conditional); scores, arm (literal)
    any_noise, any_fallback = [False] * len(variants), False
    instances = _instances(setting)
    means = _competitor_means(setting, check_count(n_grid, "n_grid", 2), instances)

    def noise(plans, variant):
        sig = np.zeros(setting.n_sources + 1)
        for p in plans:
            if p.noised:
                sig[p.arm] = p.delta_f * options.unit_sigma if variant == "per-arm sigma" else p.sigma
        return sig / 2 if variant == "half noise" else sig

    plans_of = {}                                     # plans depend on the arm, counts and L only
    for probe, request, rolled in instances:
        sums = np.tile(probe.reward_sums, (means.size, 1))
        sums[:, -1] = setting.n * means                   # one row per competitor mean, as worst_case_instance
        scores = lcb_scores(np.broadcast_to(probe.counts, sums.shape), sums, probe.tau)[2]
        scores_du = scores.copy()
        scores_du[:, :-1] = rolled.scores[:-1]                          # the competitor is not touched
        arms, arms_du = np.argmax(scores, axis=1), np.argmax(scores_du, axis=1)
        bases = {}
        for learner_arm, literal_arm in sorted(set(zip(arms.tolist(), arms_du.tolist()))):
            group = (arms == learner_arm) & (arms_du == literal_arm)
            try:
                for arm in (learner_arm, literal_arm):
                    if arm not in plans_of:
                        plans_of[arm] = plan_unlearning(arm, probe.counts, request.deleted_counts(probe.n_arms),
                                                        probe.log_term, options)[0]
            except ValueError as err:
                return [AuditRow(setting, v, 0.0, 0.0, False, refused=str(err).split(";")[0]) for v, _ in variants]
            plans, plans_l = plans_of[learner_arm], plans_of[literal_arm]
            any_fallback |= any(p.fell_back for p in plans)
            competitor = scores[group, -1]                                # equal in both worlds
            for j, (variant, arm_audit) in enumerate(variants):
                sig_u, sig_l = noise(plans, variant), noise(plans_l, variant)
                any_noise[j] |= bool(np.any(sig_u > 0))
                skip = variant == "skipped rollback"
                if (learner_arm, skip) not in bases:          # the probe's competitor is overwritten below
                    bases[learner_arm, skip] = _bases(probe, request, plans, skip, rolled)
                base_u, base_r = bases[learner_arm, skip]
                rows_u, rows_r = np.tile(base_u, (competitor.size, 1)), np.tile(base_r, (competitor.size, 1))
                rows_u[:, -1], rows_r[:, -1] = competitor, competitor
                conditional = _released_deltas(rows_u, rows_r, sig_u, setting.epsilon, arm_audit)
                literal = (conditional if np.array_equal(sig_u, sig_l)    # the same plan: the same pair
                           else _released_deltas(rows_u, rows_r, sig_u, setting.epsilon, arm_audit, sigmas_r=sig_l))
                worst[j] = np.maximum(worst[j], conditional + literal)
    return [AuditRow(setting, v, float(w[0]), float(w[1]), any_noise[j], None, float(w[2]), float(w[3]), any_fallback)
            for j, ((v, _), w) in enumerate(zip(variants, worst))]


# %% [markdown]
# ## 3. The matrix
#
# The settings: $N \in \{40, 400\}$ with $k \in \{2, N/10\}$ for one source arm, $N = 400$,
# $k = 20$ for $\ell \in \{2, 4, 8, 16\}$ source arms; $\varepsilon \in \{0.1, 0.5, 0.9, 2, 8, 20\}$
# (Algorithm 2 adds noise only when $\gamma < \gamma_0$, i.e. at large $\varepsilon$ for these $N$),
# $\delta \in \{10^{-2}, 10^{-6}\}$; every calibration and sensitivity; mixing at
# $\eta = k'/k \in \{1/4, 3/4\}$.  The released arm is audited on the full grid for one noised arm
# and on a coarser one (3 grid means plus the neighbourhood of the source scores) where several
# arms are noised (each point is a quadrature).

# %% tags=["export"]
from bandit_unlearning.mab.unlearn import CALIBRATIONS

SENSITIVITIES = ("paper", "exact")
EPSILONS = (0.1, 0.5, 0.9, 2.0, 8.0, 20.0)
DELTAS = (1e-2, 1e-6)


def matrix_settings() -> list[Setting]:
    """The chapter's settings, in a fixed order (path, sources, N, k, calibration, sensitivity, eps, delta).

    Returns
    -------
    list of Setting
        Every point of the matrix, the literal branch rules last.
    """
    single = [(1, 40, 2), (1, 40, 4), (1, 400, 2), (1, 400, 40)]
    multi = [(l, 400, 20) for l in (2, 4, 8, 16)]
    shapes = {"gaussian": single + multi, "rollback": single[:1] + multi, "adaptive": single + multi,
              "mixing": single, "imitation": single + multi}
    out = []
    for path in PATHS:
        etas = (0.25, 0.75) if path == "mixing" else (None,)
        for (l, n, k), cal, sens, eps, delta, eta in itertools.product(
                shapes[path], CALIBRATIONS, SENSITIVITIES, EPSILONS, DELTAS, etas):
            if path in ("rollback", "imitation") and (cal, sens) != ("analytic", "exact"):
                continue                                   # no noise: calibration and sensitivity unused
            out.append(Setting(path, l, n, k, eps, delta, cal, sens, eta))
    for path in ("adaptive", "mixing"):                   # the literal branch rule, with the tight calibration
        etas = (0.25, 0.75) if path == "mixing" else (None,)
        for (l, n, k), sens, eps, delta, eta in itertools.product(shapes[path], SENSITIVITIES, EPSILONS, DELTAS, etas):
            out.append(Setting(path, l, n, k, eps, delta, "analytic", sens, eta, reference="literal"))
    return out


def path_label(s: Setting) -> str:
    """The row of the table a setting belongs to.

    Parameters
    ----------
    s : Setting
        A setting.

    Returns
    -------
    str
        The path, with the number of source arms and the branch rule where they matter.
    """
    _check_is(s, Setting, "s")
    if s.path in ("rollback", "imitation"):
        return s.path + (" (several arms)" if s.n_sources > 1 else "")
    rule = " (literal rule)" if s.reference == "literal" else ""
    if s.n_sources > 1:
        return f"multi-source {s.path}{rule}"
    return s.path + rule


def audit_matrix(settings, variant: str = "correct", progress=None) -> list[AuditRow]:
    """``audit_setting`` over ``settings``; the released arm is audited with 5 competitor means where
    several arms may be noised.

    Parameters
    ----------
    settings : iterable of Setting
        The settings to audit.
    variant : str, default "correct"
        One of ``VARIANTS``.
    progress : callable, optional
        A wrapper of the settings' list such as ``tqdm``.

    Returns
    -------
    list of AuditRow
        One row per setting, in order.
    """
    check_choice(variant, "variant", VARIANTS)
    settings = list(settings)
    for s in settings:
        _check_is(s, Setting, "settings entry")
    it = settings if progress is None else check_callable(progress, "progress")(settings)
    return [audit_setting(s, variant, n_grid=3 if s.n_sources > 1 and s.path == "gaussian" else 21) for s in it]

# %% [markdown]
# `summarize` folds the audited settings into one row per path: how many were audited, refused or
# served by the rollback fallback, and the worst ratio of exact to claimed $\delta$ against each
# reference world.

# %% tags=["export"]
def summarize(rows, broken_rows) -> list[dict]:
    """One table row per path label: settings audited, refused and served by the rollback fallback,
    worst ratio against each reference world (``worst``: conditional, ``worst_literal``: literal), the
    correct mechanism's violations of the claim against the literal reference (``literal_violated``;
    ``holds_against`` is ``"both"`` when there are none, ``"conditional only"`` otherwise), and the
    power of the broken variant: the share of the accepted settings it violates among those where noise
    is added (all accepted settings for the paths without noise), and among the *tight* ones, where the
    correct mechanism's ratio is at least 0.99 (there the worst case uses the whole budget, so any
    under-noising must show) -- against the conditional reference, and for the paths that hold
    literally, against the literal one (``violated_literal``/``tight_literal``...).

    Parameters
    ----------
    rows : iterable of AuditRow
        The correct mechanism's rows.
    broken_rows : iterable of AuditRow
        The broken variant's rows, one per row of ``rows`` (same settings, in order).

    Returns
    -------
    list of dict
        One dict per path label (key ``"path"``), in order of first appearance.
    """
    rows, broken_rows = list(rows), list(broken_rows)
    if len(rows) != len(broken_rows):
        raise ValueError(f"rows and broken_rows must have one length, got {len(rows)} and {len(broken_rows)}")
    for r in rows + broken_rows:
        _check_is(r, AuditRow, "rows and broken_rows entries")
    table = {}
    for r, b in zip(rows, broken_rows):
        t = table.setdefault(path_label(r.setting), dict(
            settings=0, refused=0, fell_back=0, noised=0, worst=0.0, worst_literal=0.0, literal_violated=0,
            violated=0, eligible=0, tight=0, tight_violated=0, violated_literal=0, tight_literal=0,
            tight_violated_literal=0, variant=b.variant))
        t["settings"] += 1
        if r.refused:
            t["refused"] += 1
            continue
        t["fell_back"] += int(r.fell_back)
        t["noised"] += int(r.noised)
        t["worst"] = max(t["worst"], r.ratio)
        t["worst_literal"] = max(t["worst_literal"], r.ratio_literal)
        t["literal_violated"] += int(r.ratio_literal > 1 + TOLERANCE)
        eligible = r.noised or r.setting.path in ("rollback", "imitation")
        for suffix, ratio, broken_ratio in (("", r.ratio, b.ratio), ("_literal", r.ratio_literal, b.ratio_literal)):
            caught = broken_ratio > 1 + TOLERANCE
            tight = eligible and (ratio >= 0.99 or not r.noised)
            t["violated" + suffix] += int(eligible and caught)
            t["tight" + suffix] += int(tight)
            t["tight_violated" + suffix] += int(tight and caught)
        t["eligible"] += int(eligible)
    for t in table.values():
        t["holds_against"] = "both" if t["literal_violated"] == 0 else "conditional only"
    return [dict(path=k, **v) for k, v in table.items()]


# %% [markdown]
# **Two reference worlds.**  For each competitor mean the unlearned world plans from $\pi(D)$, the
# conditional reference from the same $\pi(D)$, the literal one from $\pi(D \setminus U)$ — the learner's
# arm on the retrained scores, which on these worst cases changes exactly where the competitor sits
# between the source arm's two scores (the grid of section 1 puts points there).  When the two worlds
# noise different arms, the released score vectors are mutually singular (a point mass against a
# density): their $\delta$ is 1, and the arm's $\delta$ is computed from both worlds' own plans.
#
# The broken variant of each path: half the noise for the noisy paths, per-arm $\sigma$ for the
# multi-source Gaussian path (the defect this audit was built to catch), a skipped rollback for the
# rollback paths, and the vote that forgets the deletion for imitation.  Both are audited in one pass
# per setting (`audit_variants`); the rows are those of `audit_matrix(settings)` and of
# `audit_setting(s, variant, arm_audit=False)`, bit for bit.

# %%
import time

settings = matrix_settings()
start = time.perf_counter()


def broken_variant(s):
    if s.path == "imitation":
        return "forgets k"
    if s.path == "rollback":
        return "skipped rollback"
    if s.path == "gaussian" and s.n_sources > 1:
        return "per-arm sigma"
    return "half noise"


def audit_all(s):
    """(correct, broken variant, half noise or None), as ``audit_matrix`` and ``audit_setting`` give them
    (the broken variants' arm is not audited); variants that share a competitor grid share one pass."""
    if s.n_sources > 1 and s.path == "gaussian":      # the correct arm on the coarser grid of audit_matrix
        return (audit_setting(s, n_grid=3), *audit_variants(s, [(broken_variant(s), False), ("half noise", False)]))
    return (*audit_variants(s, [("correct", True), (broken_variant(s), False)]), None)


rows, broken, half = (list(column) for column in zip(*map(audit_all, settings)))
elapsed = time.perf_counter() - start
print(f"{len(settings)} settings, {sum(not r.refused for r in rows)} accepted by the public API")

# %% [markdown]
# ## 4. The table
#
# *worst ratio* is the largest exact $\delta$ (of the scores or of the arm, over both datasets and
# every competitor mean) divided by the claimed $\delta$ — rounded for display; the assert below
# uses the exact value.  *power* is the share of the accepted settings where the path adds noise
# (for rollback and imitation: all accepted settings) in which the broken variant's exact $\delta$
# exceeds the claim; *tight* restricts it to the settings where the correct mechanism's ratio is at
# least 0.99 — where the worst case spends the whole budget, so under-noising cannot hide in slack.

# %%
table = summarize(rows, broken)
print(f"{'':38} {'worst delta/claimed':^21}")
print(f"{'path':38} {'settings':>8} {'refused':>7} {'fell back':>9} {'noised':>6} {'cond.':>10} {'literal':>10}  "
      f"{'holds against':16} {'power':>9} {'tight':>9}  broken variant")
for t in table:
    lit = f"{t['worst_literal']:10.6f}" if t["worst_literal"] < 10 else f"{t['worst_literal']:10.3g}"
    print(f"{t['path']:38} {t['settings']:8d} {t['refused']:7d} {t['fell_back']:9d} {t['noised']:6d} "
          f"{t['worst']:10.6f} {lit}  {t['holds_against']:16} "
          f"{t['violated']:4d}/{t['eligible']:<4d} {t['tight_violated']:4d}/{t['tight']:<4d}  {t['variant']}")
print("literal rules against the literal reference: power "
      + ", ".join(f"{t['path']} {t['violated_literal']}/{t['eligible']} (tight {t['tight_violated_literal']}/"
                  f"{t['tight_literal']})" for t in table if "literal rule" in t["path"]))
multi_half = [(r, h) for r, h in zip(rows, half) if h is not None and not r.refused and r.noised]
mh_tight = [(r, h) for r, h in multi_half if r.ratio >= 0.99]
print(f"{'multi-source gaussian':24} with half noise instead: power "
      f"{sum(h.ratio > 1 + TOLERANCE for _, h in multi_half)}/{len(multi_half)}, tight "
      f"{sum(h.ratio > 1 + TOLERANCE for _, h in mh_tight)}/{len(mh_tight)}")

worst_ratio = max(r.ratio for r in rows)
assert worst_ratio <= 1 + TOLERANCE, worst_ratio
conditional_only = {t["path"] for t in table if t["holds_against"] == "conditional only"}
print(f"\nholds only against the reference given pi(D): {sorted(conditional_only)}; "
      f"violations of the literal reference there: "
      f"{ {t['path']: t['literal_violated'] for t in table if t['path'] in conditional_only} }")
assert conditional_only == {"adaptive", "mixing", "multi-source adaptive"}
literal_rows = [r for r in rows if not r.refused and path_label(r.setting) not in conditional_only]
assert max(r.ratio_literal for r in literal_rows) <= 1 + TOLERANCE
assert all(t["tight_literal"] > 0 and t["tight_violated_literal"] == t["tight_literal"]
           for t in table if "literal rule" in t["path"])       # the literal audit has teeth where it is tight
assert all(r.delta_arm <= r.delta_scores + 1e-12 for r in rows if not r.refused)       # post-processing
assert all(t["violated"] > 0 and t["tight"] > 0 for t in table)                        # every audit has teeth ...
assert all(t["tight_violated"] == t["tight"] for t in table)                           # ... wherever it is tight
assert mh_tight and all(h.ratio > 1 + TOLERANCE for _, h in mh_tight)

# %% [markdown]
# Every path holds: the worst exact $\delta$ never exceeds the claim.  Where the analytic
# calibration meets the exact sensitivity the ratio reaches 1 — the audit is tight there, so it has no
# slack to hide a mistake — and every broken variant is caught in every tight setting.  Where the
# correct mechanism has slack (the classic calibration is conservative, and so is the paper's
# $3k/2N$ sensitivity where it applies), a factor-2 mistake can hide in it, which is why power is
# reported both ways.  The per-arm calibration of several noised arms — what the package did before
# it calibrated several noised arms to their joint shift — is rejected wherever the audit is tight:
# the released score vector shifts by the $L_2$ norm of the per-arm shifts, which the per-arm
# $\sigma$ does not cover (by a factor $\sqrt{\ell}$ for $\ell$ equal shifts).
#
# **Which reference each path holds against.**  Rollback, the forced Gaussian branch (one or several
# arms) and imitation plan without $\pi(D)$: they hold against both references.  The paper's adaptive
# rule (Algorithms 2 and 7) and mixing (Algorithm 4) read $\pi(D)$: they hold against the conditional
# reference, with the same tight worst ratio 1, and **violate the literal one** in every setting where
# they add noise — labelled *conditional only*.  The literal branch rule holds against both, tightly,
# and its half-noise variant fails the literal audit in every tight setting.  The counterexample of
# chapter A3a, through the public `output_distributions` (paper calibration at $\gamma = \gamma_0/2$ as
# there, and the analytic calibration at a claimed $(2, 10^{-3})$ with the threshold scaled so that
# noise is added):

# %%
from bandit_unlearning.mab.bounds import gamma0_paper  # noqa: E402
from bandit_unlearning.mab.lcb import LCBState  # noqa: E402
from bandit_unlearning.mab.mechanisms import DeletionRequest  # noqa: E402
from bandit_unlearning.privacy.audit import hockey_stick_delta  # noqa: E402

cx_state, cx_request = LCBState([100, 100], [60.0, 57.0], 1 / 200), DeletionRequest([0] * 10, [1.0] * 10)
cx_calls = {"adaptive, gamma = gamma0/2 (eps = 1)": (1.0, None, dict(gamma=0.5 * float(gamma0_paper(100, 10, cx_state.log_term)))),
            "adaptive, analytic (2, 1e-3)": (2.0, 1e-3, dict(epsilon=2.0, delta=1e-3, calibration="analytic",
                                                            threshold_scale=20.0)),
            "mixing eta = 1/2, analytic (2, 1e-3)": (2.0, 1e-3, dict(epsilon=2.0, delta=1e-3, calibration="analytic",
                                                                    eta=0.5))}
for name, (eps, claim, kw) in cx_calls.items():
    method = name.split(",")[0].split(" ")[0]
    line = []
    for rule in ("conditional", "literal"):
        for against in ("conditional", "literal"):
            d = float(hockey_stick_delta(*output_distributions(cx_state, cx_request, options=UnlearnOptions(method=method, reference=rule, **kw), against=against), eps))
            line.append(f"{rule[:4]}. rule vs {against[:4]}. ref {d:.4f}")
            if claim is not None:
                assert (d <= claim * (1 + TOLERANCE)) == (rule == "literal" or against == "conditional"), (name, rule, against)
    print(f"{name:38}: " + ", ".join(line))

# %% [markdown]
# **What is refused, and why.**  A request the chosen mechanism cannot certify (the $3k/2N$
# sensitivity where Lemma A.1's condition fails, Algorithm 7's threshold where $k_{\max} > N_{\min}$,
# mixing on several arms) is no longer refused: by default it is rolled back, exactly, and the result
# says why (column *fell back*; none of the matrix's settings needs it).  What remains refused is an
# option that cannot be honoured, with a message that names the rule and the alternative:

# %%
reasons = {}
for r in rows:
    if r.refused:
        key = ("calibration proven only for epsilon < 1" if "epsilon < 1" in r.refused
               else "Lemma A.1's condition fails for sensitivity='paper'" if "Lemma A.1" in r.refused
               else r.refused)
        reasons[key] = reasons.get(key, 0) + 1
for key, count in sorted(reasons.items()):
    print(f"{count:5d}  {key}")
try:
    UnlearnOptions("gaussian", epsilon=2.0, delta=1e-6, calibration="paper")
except ValueError as err:
    print(f"\nUnlearnOptions('gaussian', epsilon=2.0, delta=1e-6, calibration='paper'):\n  ValueError: {err}")
assert set(reasons) <= {"calibration proven only for epsilon < 1"}

# %% [markdown]
# ## 5. The audit's own distributions are the public ones
#
# `audit_setting` computes the released arm's distribution from the plan, and where several arms are
# noised it integrates with its own rule (`released_arm_distributions`: a fixed composite
# Gauss–Legendre rule over all competitor means at once) rather than the public
# `multi_noisy_argmax_distribution` (adaptive quadrature, one score vector at a time), which is
# several times slower.  Two independent computations must then agree: for a sample of accepted
# settings with one noised arm and another with several, and random competitor means, the audit's
# distributions are compared with the public `output_distributions` (which `unlearn`'s users would call
# to audit a request of their own).

# %%
from bandit_unlearning.experiments.guarantees import (  # noqa: E402
    KINDS, _bases, competitor_means, plan_unlearning, released_arm_distributions, worst_case_instance,
)

accepted = [s for s, r in zip(settings, rows) if not r.refused and s.path in ("gaussian", "adaptive", "mixing")]
several = [s for s in accepted if s.path == "gaussian" and s.n_sources > 1]
sample = [accepted[i] for i in rng.permutation(len(accepted))[:40]] + [several[i] for i in rng.permutation(len(several))[:40]]
gap, n_several = 0.0, 0
for s in sample:
    means = competitor_means(s, 5)
    mean = float(means[rng.integers(len(means))])
    state, request = worst_case_instance(s.n, s.k, s.n_sources, KINDS[int(rng.integers(2))], mean)
    plans, _ = plan_unlearning(state.arm, state.counts, request.deleted_counts(state.n_arms), state.log_term,
                               s.options())
    base_u, base_r = _bases(state, request, plans)
    sig = np.zeros(state.n_arms)
    for p in plans:
        sig[p.arm] = p.sigma
    n_several += int((sig > 0).sum() > 1)
    audit = np.concatenate([released_arm_distributions(base_u, sig)[0], released_arm_distributions(base_r, sig)[0]])
    public = output_distributions(state, request, options=UnlearnOptions(method=s.path, epsilon=s.epsilon, delta=s.delta, calibration=s.calibration, sensitivity=s.sensitivity, eta=s.eta))
    gap = max(gap, float(np.max(np.abs(audit - np.concatenate(public)))))
print(f"{len(sample)} sampled (setting, dataset, competitor), {n_several} with several noised arms:")
print(f"  audit distributions == output_distributions to 1e-12: {gap <= 1e-12}")
assert gap <= 1e-12 and n_several >= 30

# %% [markdown]
# ## 6. Summary
#
# | path | what is released | how δ is computed | broken variant |
# |---|---|---|---|
# | gaussian, adaptive, mixing (one source arm) | scores and arm | Gaussian profile of the shift; closed-form argmax law | half noise |
# | multi-source gaussian | scores and arm | profile of the whitened $L_2$ shift; 1-D quadrature | per-arm $\sigma$, half noise |
# | multi-source adaptive (Algorithm 7) | scores and arm | at most one noised arm: as above | half noise |
# | adaptive, mixing, multi-source adaptive with `reference="literal"` | scores and arm | as above, against both references | half noise |
# | rollback (one or several arms) | scores and arm | equality of outputs | skipped rollback |
# | imitation (Algorithm 6) | arm | equality of outputs | forgets the deletion counts |
#
# Every row is audited against both reference worlds; the paper's adaptive and mixing rules hold only
# against the conditional one (the reference given $\pi(D)$) and are labelled so; every other path,
# including the literal branch rules, holds against both.  The matrix takes about 10 s of CPU time
# (up to 40 s of wall-clock time on two busy shared cores; measured below) and its asserts are part
# of the test suite.

# %%
# NBVAL_IGNORE_OUTPUT
print(f"matrix audited in {elapsed:.1f} s")
