# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.privacy.gaussian
# ---

# %% [markdown]
# # Chapter P1a — The Gaussian mechanism: calibration and privacy profile
#
# *Paper A, Definition 2.1 and Section 3 (the Gaussian mechanism with
# $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$); Paper A Definition 2.1 and erratum E1.  Exports
# `bandit_unlearning.privacy.gaussian`.*
#
# Every noisy unlearning mechanism in this project adds Gaussian noise $\nu \sim \mathcal N(0,\sigma^2)$
# to one score whose value may move by at most $\Delta$ (the *sensitivity*) between the world with
# the deleted data and the world without it.  How large must $\sigma$ be for
# $(\varepsilon, \delta)$-indistinguishability?  This chapter gives three answers and the tools to
# check any of them:
#
# 1. the **classic calibration** $\sigma = \Delta\gamma$, $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$
#    (Dwork & Roth 2014, Thm A.1) — the one Paper A uses, **proven only for $\varepsilon < 1$**;
# 2. the **analytic Gaussian mechanism** (Balle & Wang 2018) — the smallest $\sigma$ that works,
#    valid for every $\varepsilon > 0$;
# 3. the exact **privacy profile** $\delta(\varepsilon)$ of a Gaussian mechanism, which tells how
#    private a *given* $\sigma$ is — in particular, how wrong the classic formula gets for
#    $\varepsilon \ge 1$ (erratum E1).
#
# Its sibling [P1b](01b_audits.ipynb) builds two auditing tools used by every later chapter: the
# **hockey-stick divergence** of two distributions over a finite set (the exact $\delta$ at a given
# $\varepsilon$ — unlearned arms are such distributions) and a **Monte Carlo auditor** that turns
# samples of two mechanisms' outputs into a Clopper–Pearson lower confidence bound on the
# $\varepsilon$ they actually achieve.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
from scipy import integrate, optimize, stats

rng = np.random.default_rng(20260601)

# %% [markdown]
# ## 1. Statement
#
# A randomised mechanism $M$ is **$(\varepsilon,\delta)$-indistinguishable** on a pair of inputs
# $x, x'$ if for every set of outputs $A$
# $$P[M(x)\in A] \le e^{\varepsilon} P[M(x')\in A] + \delta \quad\text{and the same with } x, x' \text{ swapped.}$$
# Definition 2.1 of Paper A asks exactly this of the unlearned output and the output of the reference
# mechanism run on $D\setminus U$.  For the Gaussian mechanism $M(x) = f(x) + \mathcal N(0,\sigma^2)$
# with $|f(x) - f(x')| \le \Delta$:
#
# - **Classic (Dwork & Roth, Thm A.1).** For $\varepsilon \in (0,1)$, $\sigma \ge \Delta\gamma$ with
#   $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$ suffices.
# - **Exact profile (Balle & Wang 2018, Thm 8).** $M$ is $(\varepsilon,\delta)$-indistinguishable iff
#
#   $$\delta \ge \delta_\sigma(\varepsilon) := \Phi\!\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big) -
#     e^{\varepsilon}\,\Phi\!\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big).$$
#
# - **Analytic calibration.** The smallest such $\sigma$ solves $\delta_\sigma(\varepsilon) = \delta$;
#   since $\delta_\sigma(\varepsilon)$ decreases strictly in $\sigma$, it is unique.
#
# ## 2. Derivation
#
# By translation invariance take $M(x) \sim P = \mathcal N(0,\sigma^2)$, $M(x') \sim Q = \mathcal N(\Delta,\sigma^2)$
# (a smaller shift is never worse).  The smallest $\delta$ that makes the inequality hold for every
# $A$ is the **hockey-stick divergence**
# $$\delta(\varepsilon) = \sup_A \big(P(A) - e^{\varepsilon}Q(A)\big) = \int \big(p(y) - e^{\varepsilon}q(y)\big)_+\,dy,$$
# attained at $A = \{y : p(y) > e^{\varepsilon} q(y)\}$.  The privacy loss
# $\ln\frac{p(y)}{q(y)} = \frac{\Delta^2 - 2y\Delta}{2\sigma^2}$ is linear in $y$, so that set is a
# half-line $\{y < y_0\}$ with $y_0 = \frac{\Delta}{2} - \frac{\varepsilon\sigma^2}{\Delta}$, and
# $P(y < y_0) = \Phi(y_0/\sigma)$, $Q(y<y_0) = \Phi((y_0 - \Delta)/\sigma)$ give the formula above.  The
# two directions are symmetric (reflect $y \mapsto \Delta - y$).  Only the ratio $t = \sigma/\Delta$
# matters.
#
# **Zero sensitivity** (a query that does not change) needs no noise: we return $\sigma = 0$ and
# profile $\delta \equiv 0$ — convenient when a deletion request is empty — while a negative or
# non-finite sensitivity is an error.  A zero $\sigma$ with $\Delta > 0$ has profile $\delta \equiv 1$.
#
# **The noise is a secret — and so is the seed that drew it.**  Everything above is about the law of
# $M(x)$ over the noise $\nu$: it assumes nobody knows $\nu$.  Whoever does subtracts it,
# $f(x) = M(x) - \nu$, and in an unlearning release $f$ is computed on data that may still contain
# the deleted points (Paper A's Gaussian branch noises the score of the *original* data), so
# $M(x) - \nu$ hands them back.  A pseudo-random $\nu$ is known to whoever knows its generator's
# seed, and a seed written in a script — a small integer, a date, the 0 of an example — is guessed in
# milliseconds: try each candidate, regenerate the draws, keep the one that explains the release.
# So the project's noisy mechanisms take `rng=None` by default, meaning a generator seeded from the
# operating system's entropy (`np.random.default_rng()`: 128 bits, no guess).  Passing a seeded
# generator is an explicit opt-in for reproducible research, and then **the seed is key material**,
# to be kept as secret as the data it protects.  This book seeds its generators on purpose, at the
# top of every chapter, so that its outputs can be re-run and checked; a deployment must not.

# %% tags=["export"]
"""Calibrating the Gaussian mechanism (Paper A Definition 2.1 and erratum E1).

- ``gaussian_gamma(epsilon, delta)``: Paper A's privacy scale ``sqrt(2 ln(1.25/delta)) / epsilon``.
- ``classic_gaussian_sigma``: ``sensitivity * gamma`` (Dwork & Roth, Thm A.1), refused for
  ``epsilon >= 1`` where it is not proven (erratum E1).
- ``analytic_gaussian_sigma``: the smallest sigma that is (epsilon, delta)-indistinguishable
  (Balle & Wang 2018, Thm 8), valid for every epsilon > 0.
- ``gaussian_delta`` / ``gaussian_epsilon``: the exact privacy profile of a Gaussian mechanism and
  its inverse.

A sensitivity of 0 is legal (a constant query): it needs sigma = 0 and has profile delta = 0.
"""

import math

import numpy as np
from scipy import optimize, special

from bandit_unlearning.checks import as_real_array, as_real
from bandit_unlearning.shapes import check_broadcast


def check_epsilon(epsilon) -> float:
    """Validate a privacy parameter epsilon: a finite number > 0.  Returns it as a float.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, finite and > 0.

    Returns
    -------
    float
        ``epsilon`` as a float (``ValueError`` / ``TypeError`` otherwise).
    """
    value = as_real(epsilon, "epsilon")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    return value


def check_delta(delta) -> float:
    """Validate a privacy parameter delta: a number in the open interval (0, 1).

    Parameters
    ----------
    delta : float
        The privacy parameter, in the open interval (0, 1).

    Returns
    -------
    float
        ``delta`` as a float (``ValueError`` / ``TypeError`` otherwise).
    """
    value = as_real(delta, "delta")
    if not 0 < value < 1:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    return value


def check_sensitivity(sensitivity) -> float:
    """Validate a sensitivity: a finite number >= 0 (0 means the query never changes).

    Parameters
    ----------
    sensitivity : float
        How far the query may move between the two worlds, finite and >= 0.

    Returns
    -------
    float
        ``sensitivity`` as a float (``ValueError`` / ``TypeError`` otherwise).
    """
    value = as_real(sensitivity, "sensitivity")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"sensitivity must be a finite number >= 0, got {sensitivity!r}")
    return value


# %% [markdown]
# Paper A's privacy scale $\gamma$ and the classic calibration built on it, refused where it is not
# proven.

# %% tags=["export"]
def gaussian_gamma(epsilon, delta) -> float:
    """Paper A's privacy scale ``gamma = sqrt(2 ln(1.25/delta)) / epsilon`` (Paper A Definition 2.1).

    Defined for every epsilon > 0; whether ``sigma = Delta * gamma`` is private is another matter
    (see ``classic_gaussian_sigma``).  Named ``gaussian_gamma``, not ``gamma``, so that it is never
    confused with the ``gamma=`` argument (a given noise scale) of the unlearning functions.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, finite and > 0.
    delta : float
        The privacy parameter, in the open interval (0, 1).

    Returns
    -------
    float
        ``gamma``, the noise standard deviation per unit of sensitivity.
    """
    return math.sqrt(2 * math.log(1.25 / check_delta(delta))) / check_epsilon(epsilon)


def classic_gaussian_sigma(sensitivity, epsilon, delta) -> float:
    """Classic calibration ``sigma = sensitivity * gaussian_gamma(epsilon, delta)`` (Dwork & Roth, Thm A.1).

    Proven only for ``epsilon < 1``; larger epsilon raises ``ValueError`` (erratum E1) -- use
    ``analytic_gaussian_sigma`` there.

    Parameters
    ----------
    sensitivity : float
        The query's sensitivity ``Delta``, finite and >= 0.
    epsilon : float
        The privacy parameter, in (0, 1).
    delta : float
        The privacy parameter, in the open interval (0, 1).

    Returns
    -------
    float
        The noise standard deviation ``sigma`` (0 for sensitivity 0).
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if epsilon >= 1:
        raise ValueError(
            f"classic Gaussian calibration sigma = Delta*sqrt(2 ln(1.25/delta))/epsilon is only proven "
            f"for epsilon < 1 (Dwork & Roth, Thm A.1; erratum E1), got epsilon = {epsilon}; use "
            "analytic_gaussian_sigma, which is exact for every epsilon > 0"
        )
    return sensitivity * gaussian_gamma(epsilon, delta)


# %% [markdown]
# **Numerics.** For large $\varepsilon$ the term $e^{\varepsilon}\Phi(\cdot)$ is $\infty\cdot 0$ in
# floating point, and for small $\delta$ the difference cancels.  We therefore evaluate
# $$\ln\delta = \ln\Phi(u) + \ln\!\big(1 - e^{r}\big),\qquad r = \varepsilon + \ln\Phi(v) - \ln\Phi(u) \le 0,\qquad
#   u = \tfrac{1}{2t} - \varepsilon t,\ v = -\tfrac{1}{2t} - \varepsilon t,$$
# with `scipy.special.log_ndtr` and `expm1`.  Computed as written, $r$ is a small difference of large
# numbers ($\varepsilon$ and $\ln\Phi(v) \approx -v^2/2$ are both about $10^{13}$ at $\varepsilon = 10^{13}$, both
# about 690 at $\delta = 10^{-300}$).  The cancellation is exact in closed form: with
# $\Phi(x) = \tfrac12 e^{-x^2/2}\operatorname{erfcx}(-x/\sqrt2)$ and $v^2 - u^2 = 2\varepsilon$,
# $$r = \ln\operatorname{erfcx}(b) - \ln\operatorname{erfcx}(a),\qquad a = -u/\sqrt2 < b = -v/\sqrt2,$$
# two numbers of modest size.  When $b - a = 1/(\sqrt2 t)$ is small against $\max(1,|a|)$ (tiny
# $\varepsilon$, large $t$) this difference cancels in turn, and $r$ is computed as the integral of
# $(\ln\operatorname{erfcx})'(x) = 2x - 2/(\sqrt\pi\operatorname{erfcx}(x))$ over $[a, b]$ by 4-point
# Gauss–Legendre.  We solve $\ln\delta_\sigma(\varepsilon) = \ln\delta$ for $\ln t$ by bracketing
# (steps from the classic value) and Brent's method, then **certify** the root against the true
# profile (chapter P1b, Section 2.4).

# %% tags=["export"]
_SQRT2 = math.sqrt(2.0)
_ULP = float(np.finfo(float).eps)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
ANALYTIC_EPSILON_MAX = 1e15
_GAUSS_LEGENDRE_4 = ((-0.8611363115940526, 0.3478548451374538), (-0.3399810435848563, 0.6521451548625461),
                     (0.3399810435848563, 0.6521451548625461), (0.8611363115940526, 0.3478548451374538))


def _log_erfcx(x):
    """``ln erfcx(x)``, ``erfcx(x) = exp(x^2) erfc(x)``, for every real x (below -1 as ``x^2 + ln erfc(x)``,
    which cannot overflow)."""
    x = np.asarray(x, dtype=float)
    neg = x < -1.0
    x_neg, x_pos = np.where(neg, x, 0.0), np.where(neg, 0.0, x)
    with np.errstate(over="ignore", divide="ignore"):
        return np.where(neg, x_neg * x_neg + np.log(special.erfc(x_neg)), np.log(special.erfcx(x_pos)))


def _dlog_erfcx(x):
    """``d/dx ln erfcx(x) = 2x - 2 / (sqrt(pi) erfcx(x))``."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return 2 * x - 2 / (math.sqrt(math.pi) * special.erfcx(x))


def _profile_parts(t, epsilon):
    """``(u, r, u_err, r_err)`` for noise-to-sensitivity ratio ``t > 0`` (``inf`` allowed) and ``epsilon >= 0``:
    ``delta = Phi(u) (1 - e^r)`` with ``u = 1/(2t) - eps t`` and ``r = eps + ln Phi(v) - ln Phi(u) <= 0``,
    ``v = -1/(2t) - eps t``; ``u_err`` and ``r_err`` bound the float errors of ``u`` and ``r``.

    Writing ``Phi(x) = erfc(-x/sqrt 2) / 2 = exp(-x^2/2) erfcx(-x/sqrt 2) / 2`` and using ``v^2 - u^2 = 2 eps``
    exactly gives ``r = ln erfcx(b) - ln erfcx(a)`` with ``a = -u/sqrt 2 < b = -v/sqrt 2``: the large terms
    ``eps`` and ``ln Phi`` cancel analytically, not in floating point.  When ``b - a = 1/(sqrt 2 t)`` is
    small against ``max(1, |a|)`` (below 1/20) the difference of logarithms itself cancels; ``r`` is then
    the integral of ``(ln erfcx)' = 2x - 2/(sqrt(pi) erfcx(x))`` over ``[a, b]`` by 4-point Gauss-Legendre
    (quadrature error below 1e-15 relative there; only used for ``|a| <= 30``, where the cancellation in
    the derivative costs at most ``2 x^2`` ulp: beyond, ``Phi(u) < 1e-390`` and delta underflows anyway).
    """
    t, epsilon = np.asarray(t, dtype=float), np.asarray(epsilon, dtype=float)
    finite = np.isfinite(t)
    t = np.where(finite, t, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        half, et = 0.5 / t, epsilon * t
        u = half - et
        a, b, h, mid = (et - half) / _SQRT2, (et + half) / _SQRT2, _SQRT2 * half, et / _SQRT2
        g_a, g_b = _log_erfcx(a), _log_erfcx(b)
        quad = (np.abs(a) <= 30) & (h <= 0.05 * np.maximum(1.0, np.abs(a)))
        integral = h / 2 * sum(w * _dlog_erfcx(mid + h / 2 * x) for x, w in _GAUSS_LEGENDRE_4)
        r = np.where(quad, integral, g_b - g_a)
        d_a, d_b = _dlog_erfcx(a), _dlog_erfcx(b)
        r_err = np.where(quad, _ULP * np.abs(r) * (12 + 8 * b * b),
                         _ULP * (8 + 4 * (np.abs(g_a) + np.abs(g_b)) + 2 * b * (np.abs(d_a) + np.abs(d_b))))
        u_err = 2 * _ULP * (half + et)
    # t = inf (a sensitivity far below sigma): the two worlds coincide, delta = 0
    return (np.where(finite, u, -np.inf), np.where(finite, np.minimum(r, 0.0), 0.0),
            np.where(finite, u_err, 0.0), np.where(finite, r_err, 0.0))


def _log_profile(t, epsilon):
    """``ln delta`` of the Gaussian mechanism with noise-to-sensitivity ratio ``t > 0`` at ``epsilon >= 0``:
    ``ln Phi(u) + ln(1 - e^r)`` with ``r`` from ``_profile_parts`` (no overflow for large epsilon, no
    cancellation for small delta or small epsilon).  Broadcasts."""
    u, r, _, _ = _profile_parts(t, epsilon)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(u == -np.inf, -np.inf, special.log_ndtr(u) + np.log(-np.expm1(r)))

# %% [markdown]
# **The exact privacy profile.** `gaussian_delta` is Balle and Wang's exact $\delta(\varepsilon)$ of
# the Gaussian mechanism, evaluated in log space through the helpers above so that it stays accurate
# where both terms are tiny.

# %% tags=["export"]
def gaussian_delta(sigma, sensitivity, epsilon):
    """Exact privacy profile ``delta(epsilon)`` of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    ``Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D)`` with ``D = sensitivity``, ``s = sigma``:
    the smallest delta for which noise ``N(0, sigma^2)`` on a query of sensitivity ``D`` is
    (epsilon, delta)-indistinguishable.  ``sigma`` (>= 0) and ``epsilon`` (>= 0; 0 gives the total
    variation distance) broadcast against each other; a float is returned for scalar input.  Finite
    everywhere: its limits (0 when sigma/D or epsilon is huge, 1 when sigma/D is 0) come out as such.

    Parameters
    ----------
    sigma : float or array_like
        The noise standard deviation, finite and >= 0.
    sensitivity : float
        The query's sensitivity ``D``, finite and >= 0 (0 gives delta 0).
    epsilon : float or array_like
        Where the profile is evaluated, finite and >= 0; broadcasts against ``sigma``.

    Returns
    -------
    float or numpy.ndarray
        The exact delta, in [0, 1]; a float for scalar input, else an array of the broadcast shape.
    """
    sensitivity = check_sensitivity(sensitivity)
    sigma = as_real_array(sigma, "sigma")
    epsilon = as_real_array(epsilon, "epsilon")
    if not np.all(np.isfinite(sigma)) or np.any(sigma < 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    if not np.all(np.isfinite(epsilon)) or np.any(epsilon < 0):
        raise ValueError(f"epsilon must be finite and >= 0 in a privacy profile, got {epsilon}")
    shape = check_broadcast(sigma=sigma, epsilon=epsilon)
    if sensitivity == 0:
        out = np.zeros(shape)
    else:
        with np.errstate(over="ignore"):
            t = sigma / sensitivity
        positive = t > 0
        out = np.where(positive, np.exp(_log_profile(np.where(positive, t, 1.0), epsilon)), 1.0)
        out = np.broadcast_to(out, shape)
    return float(out) if out.ndim == 0 else np.array(out)


def _certified_gap(t: float, epsilon: float, target: float):
    """``(gap, slope)`` at ratio ``t``: ``gap`` = float ``ln delta`` + a bound on its error - ``target``, so
    that ``gap <= 0`` proves the TRUE profile is at most ``e^target``; ``slope = -d ln delta / d ln t =
    phi(u) / (t delta)`` (the derivative of the profile, from ``phi(u) = e^eps phi(v)``).  The error bound
    adds ``log_ndtr``'s (4 ulp relative), ``u``'s rounding times ``d ln Phi/du = phi(u)/Phi(u)``, ``r``'s
    (``r_err e^r / (1 - e^r)``) and the final sum's."""
    u, r, u_err, r_err = (float(x) for x in _profile_parts(t, epsilon))
    if not (r < 0 and math.isfinite(u) and math.isfinite(r_err)):
        return math.inf, 0.0
    log_phi_u = float(special.log_ndtr(u))
    log_delta = log_phi_u + math.log(-math.expm1(r))
    log_density = -0.5 * u * u - _LOG_SQRT_2PI
    # d ln Phi/du = phi(u)/Phi(u).  Far in the left tail (u < -1e6) the difference of the two logs is
    # ~u^2 ulp off and can overflow; there the hazard bound phi(u)/Phi(u) <= (-u + sqrt(u^2 + 4)) / 2
    # (Sampford 1953) is used instead: an upper bound, so the certificate stays sound.
    mills = math.exp(log_density - log_phi_u) if u > -1e6 else (math.hypot(u, 2.0) - u) / 2
    err = (4 * _ULP * (1 + abs(log_phi_u) + abs(log_delta)) + u_err * mills
           + r_err * math.exp(r) / -math.expm1(r))
    return log_delta + err - target, math.exp(min(log_density - math.log(t) - log_delta, 700.0))


# %% [markdown]
# With the profile in hand, calibration is a root-finding problem: `analytic_gaussian_sigma`
# solves $\delta_\sigma(\varepsilon) = \delta$ for $\sigma$ and certifies the root; `gaussian_epsilon`
# inverts the profile the other way, for a given $\sigma$.

# %% tags=["export"]
def analytic_gaussian_sigma(sensitivity, epsilon, delta) -> float:
    """The analytic Gaussian mechanism (Balle & Wang 2018): the smallest sigma with
    ``gaussian_delta(sigma, sensitivity, epsilon) <= delta``, valid for every epsilon > 0.

    Solves ``ln delta_sigma(epsilon) = ln delta`` in ``ln(sigma / sensitivity)`` by bracketing and
    Brent's method (the profile decreases strictly in sigma).  Never under-noises against the TRUE
    profile, not only its float evaluation: the root is raised until the float profile plus a bound on
    its evaluation error (``_certified_gap``) is at most delta -- a relative change of sigma of a few
    1e-15 for ordinary parameters -- then by 4 ulp for the rounding of ``sigma = sensitivity * t``
    (checked against 80-digit arithmetic from epsilon = 1e-9 to 1e15 and delta from 1e-300 to
    1 - 1e-12).  Refuses ``epsilon > ANALYTIC_EPSILON_MAX`` (1e15) with a ValueError: there
    ``sigma / sensitivity ~ 1/sqrt(2 epsilon)`` and one ulp of sigma moves ``u = 1/(2t) - epsilon t`` by
    ``~ 2e-16 sqrt(2 epsilon)``, so double precision no longer resolves the profile.  Returns 0 for
    sensitivity 0; a ValueError if sigma would overflow.

    Parameters
    ----------
    sensitivity : float
        The query's sensitivity, finite and >= 0.
    epsilon : float
        The privacy parameter, > 0 and at most ``ANALYTIC_EPSILON_MAX``.
    delta : float
        The privacy parameter, in the open interval (0, 1).

    Returns
    -------
    float
        The smallest certified sigma (0 for sensitivity 0).
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if epsilon > ANALYTIC_EPSILON_MAX:
        raise ValueError(f"analytic_gaussian_sigma is accurate for epsilon <= {ANALYTIC_EPSILON_MAX:g} only (beyond, "
                         f"one ulp of sigma moves the privacy profile too much for double precision), got "
                         f"epsilon = {epsilon:g}")
    if sensitivity == 0:
        return 0.0
    target = math.log(delta)

    def excess(log_t: float) -> float:                 # decreasing in log_t; finite for brentq
        value = float(_log_profile(math.exp(log_t), epsilon)) - target
        return min(max(value, -1e300), 1e300)

    # the classic ratio, in logarithms (a subnormal epsilon would make the ratio itself overflow), clamped
    # into the bracket's range; each bracket search takes at most 700 steps of 2
    start = min(max(0.5 * math.log(2 * math.log(1.25 / delta)) - math.log(epsilon), -699.0), 699.0)
    lo, hi = start - 1.0, start + 1.0
    for _ in range(700):
        if excess(lo) > 0 or lo <= -700:
            break
        lo -= 2.0
    for _ in range(700):
        if excess(hi) < 0 or hi >= 700:
            break
        hi += 2.0
    if not excess(lo) > 0 > excess(hi):
        raise ValueError(f"cannot calibrate sigma in double precision for epsilon = {epsilon:g}, delta = {delta:g}: "
                         "sigma/sensitivity would lie outside [e^-700, e^700]")
    t = math.exp(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * _ULP, maxiter=500))
    for _ in range(200):                               # raise t until the TRUE profile is <= delta
        gap, slope = _certified_gap(t, epsilon, target)
        if gap <= 0:
            break
        t *= 1 + max(1.5 * gap / slope if slope > 0 else 1.0, 8 * _ULP)
    else:
        raise ValueError(f"cannot certify sigma for epsilon = {epsilon:g}, delta = {delta:g} in double precision")
    sigma = sensitivity * t * (1 + 4 * _ULP)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma = {sensitivity:g} * {t:.3g} is not a positive double (sensitivity too large or "
                         "too small for this epsilon and delta)")
    for _ in range(64):                                            # keep the float profile consistent too
        if gaussian_delta(sigma, sensitivity, epsilon) <= delta:
            return sigma
        sigma = float(np.nextafter(sigma, np.inf))
    raise ValueError(f"cannot certify sigma for epsilon = {epsilon:g}, delta = {delta:g} in double precision")

# %% [markdown]
# `gaussian_epsilon` inverts the profile: the smallest $\varepsilon \ge 0$ whose $\delta(\varepsilon)$
# is at most the target, never below the true one.

# %% tags=["export"]
def gaussian_epsilon(sigma, sensitivity, delta) -> float:
    """Inverse privacy profile: the smallest epsilon >= 0 with ``gaussian_delta(...) <= delta``.

    ``inf`` if sigma is 0 (and sensitivity > 0) or if no epsilon below 1e308 reaches delta; 0 if
    sensitivity is 0.  Never below the TRUE epsilon: Brent's root (solved to a few ulp, relative) is
    raised until the float profile plus a bound on its evaluation error (``_certified_gap``, as in
    ``analytic_gaussian_sigma``) is at most delta, and until the float profile is too.

    Parameters
    ----------
    sigma : float
        The noise standard deviation, finite and >= 0.
    sensitivity : float
        The query's sensitivity, finite and >= 0.
    delta : float
        The target delta, in the open interval (0, 1).

    Returns
    -------
    float
        The smallest certified epsilon >= 0 (``inf`` when none exists in double range).
    """
    sensitivity, delta = check_sensitivity(sensitivity), check_delta(delta)
    sigma = as_real(sigma, "sigma")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    if sensitivity == 0:
        return 0.0
    if sigma == 0:
        return math.inf
    t, target = sigma / sensitivity, math.log(delta)

    def excess(eps: float) -> float:                   # decreasing in eps
        return float(_log_profile(t, eps)) - target

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    for _ in range(1100):                              # at most ~1024 doublings to 1e308
        if excess(hi) <= 0:
            break
        hi *= 2.0
        if hi > 1e308:                                 # no epsilon in double range reaches delta
            return math.inf
    # xtol: an absolute tolerance would be coarse for tiny epsilons (sigma >> sensitivity), so only rtol acts
    eps = float(optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=4 * _ULP, maxiter=500))
    step = max(eps * 8 * _ULP, 5e-324)
    for _ in range(2200):                              # raise eps until the TRUE profile is <= delta
        gap, _slope = _certified_gap(t, eps, target)
        if gap <= 0 and gaussian_delta(sigma, sensitivity, eps) <= delta:
            return eps
        eps, step = eps + step, step * 2.0
        if not math.isfinite(eps):
            break
    return math.inf


# %%
from bandit_unlearning.privacy.gaussian import *  # noqa: F403  (the module generated from the cells above)

Delta, eps, delta = 1.0, 0.5, 1e-5
print(f"gaussian_gamma(0.5, 1e-5) = {gaussian_gamma(eps, delta):.6f}")
print(f"classic sigma            = {classic_gaussian_sigma(Delta, eps, delta):.6f}")
print(f"analytic sigma           = {analytic_gaussian_sigma(Delta, eps, delta):.6f}")
print(f"profile at analytic sigma: {gaussian_delta(analytic_gaussian_sigma(Delta, eps, delta), Delta, eps):.6e}")
for bad in [lambda: gaussian_gamma(0, 1e-5), lambda: gaussian_gamma(float("nan"), 1e-5), lambda: gaussian_gamma(1, 1.0),
            lambda: classic_gaussian_sigma(1, 2.0, 1e-5), lambda: analytic_gaussian_sigma(-1, 1, 1e-5)]:
    try:
        bad()
    except ValueError as err:
        print("refused:", err)

# %% [markdown]
# ## 3. Checks of the calibrations
#
# ### 3.1 Analytic sigma against an independent numerical inversion
#
# The independent route uses neither $\Phi$ nor the closed form: it integrates the hockey-stick
# divergence $\int_{-\infty}^{y_0}(p - e^{\varepsilon}q)\,dy$ of the two Gaussian densities with
# `scipy.integrate.quad` (the integrand is positive below $y_0$ and negligible $40\sigma$ further
# out), and inverts it in $\sigma$ by plain bisection on $\ln\sigma$ (unit steps to bracket, then
# 60 halvings: far below $10^{-12}$ relative).  On a grid of 28 $(\varepsilon, \delta)$ pairs the two
# must agree to $10^{-6}$ relative, and the closed-form profile at the analytic $\sigma$ must give
# back $\delta$ to $10^{-9}$ relative.

# %%
def delta_by_integral(sigma, sensitivity, epsilon):
    """Hockey-stick divergence of N(0, s^2) and N(D, s^2) by numerical integration of the densities."""
    y0 = sensitivity / 2 - epsilon * sigma**2 / sensitivity
    c, f = 1 / (sigma * math.sqrt(2 * math.pi)), math.exp(epsilon)
    gap = lambda y: c * (math.exp(-0.5 * (y / sigma) ** 2) - f * math.exp(-0.5 * ((y - sensitivity) / sigma) ** 2))
    return integrate.quad(gap, y0 - 40 * sigma, y0, epsabs=0, epsrel=1e-11, limit=200)[0]


def sigma_by_bisection(sensitivity, epsilon, delta, profile=delta_by_integral):
    """Smallest sigma with profile(sigma) <= delta, by bisection on ln sigma."""
    lo = hi = math.log(sensitivity)
    while profile(math.exp(lo), sensitivity, epsilon) <= delta:
        lo -= 1.0
    while profile(math.exp(hi), sensitivity, epsilon) > delta:
        hi += 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if profile(math.exp(mid), sensitivity, epsilon) > delta else (lo, mid)
    return math.exp(hi)


eps_grid = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
delta_grid = [1e-8, 1e-5, 1e-3, 0.1]


def agreement(calibration, sensitivity=1.0):
    """Largest relative gap between ``calibration`` and the independent inversion over the grid."""
    return max(abs(calibration(sensitivity, e, d) / sigma_by_bisection(sensitivity, e, d) - 1)
               for e in eps_grid for d in delta_grid)


worst_inversion = agreement(analytic_gaussian_sigma)
worst_profile = max(abs(gaussian_delta(analytic_gaussian_sigma(1.0, e, d), 1.0, e) / d - 1)
                    for e in eps_grid for d in delta_grid)
decade = lambda x: f"{10.0 ** math.ceil(math.log10(x)):.0e}"       # shown as a power of ten: portable
print(f"analytic sigma vs integral inversion: worst relative gap < {decade(worst_inversion)} over "
      f"{len(eps_grid) * len(delta_grid)} pairs")
print(f"profile at analytic sigma vs delta  : worst relative gap < {decade(worst_profile)}")
assert worst_inversion < 1e-6
assert worst_profile < 1e-9

# %% [markdown]
# **The check can fail.** A classic slip in the formula — $\Delta/\sigma$ where $\Delta/(2\sigma)$
# belongs, i.e. calibrating for twice the sensitivity — gives a $\sigma$ that the same comparison
# rejects by a wide margin:

# %%
def broken_analytic_sigma(sensitivity, epsilon, delta):
    """Analytic calibration with the 1/2 dropped from Delta/(2 sigma) (wrong on purpose)."""
    return analytic_gaussian_sigma(2 * sensitivity, epsilon, delta)


worst_broken = agreement(broken_analytic_sigma)
print(f"broken variant vs integral inversion: worst relative gap {worst_broken:.2f}")
assert not worst_broken < 1e-6

# %% [markdown]
# ### 3.2 Classic versus analytic, and where the classic formula breaks (E1)
#
# For $\varepsilon < 1$ the classic $\sigma = \Delta\gamma$ is private, so it can never be smaller than
# the smallest private $\sigma$: we check classic $\ge$ analytic on a grid of 40 values of
# $\varepsilon \in [10^{-3}, 1)$ and four $\delta$'s.  The same comparison, run for
# $\varepsilon \ge 1$ with the formula $\Delta\gamma$ taken outside its domain, fails: there
# $\Delta\gamma$ is **smaller** than the smallest private $\sigma$, i.e. the paper's calibration
# under-noises.  The exact profile says by how much: the true $\delta$ of $\sigma = \Delta\gamma$ exceeds
# the nominal $\delta$.

# %%
deltas = [1e-2, 1e-3, 1e-5, 1e-8]
small_eps = np.geomspace(1e-3, 0.999, 40)
ratio_small = np.array([[gaussian_gamma(e, d) / analytic_gaussian_sigma(1.0, e, d) for e in small_eps] for d in deltas])
print(f"eps < 1: min classic/analytic = {ratio_small.min():.4f}  (at eps = {small_eps[ratio_small.min(axis=0).argmin()]:.3f})")
assert np.all(ratio_small >= 1)

large_eps = np.round(np.geomspace(1, 200, 200), 6)
ratio_large = np.array([[gaussian_gamma(e, d) / analytic_gaussian_sigma(1.0, e, d) for e in large_eps] for d in deltas])
print(f"eps >= 1: min classic/analytic = {ratio_large.min():.4f}  ->  the same check fails:",
      not np.all(ratio_large >= 1))
assert not np.all(ratio_large >= 1)

print(f"\n{'delta':>7} {'first eps: true delta > delta':>30} {'first eps: classic < analytic':>30} "
      f"{'true/nominal at eps=10':>23} {'at eps=50':>10}")
for i, d in enumerate(deltas):
    true_over_nominal = gaussian_delta(np.array([gaussian_gamma(e, d) for e in large_eps]), 1.0, large_eps) / d
    first = large_eps[np.argmax(true_over_nominal > 1)]
    first_ratio = large_eps[np.argmax(ratio_large[i] < 1)]
    at = lambda e: gaussian_delta(gaussian_gamma(e, d), 1.0, e) / d
    print(f"{d:7.0e} {first:30.3f} {first_ratio:30.3f} {at(10.0):23.3g} {at(50.0):10.3g}")
    assert np.any(true_over_nominal > 1) and first == first_ratio   # two views of the same failure

# %% [markdown]
# So for every $\delta$ tried, the classic formula stops being private between
# $\varepsilon \approx 7$ and $\varepsilon \approx 10$ (the two columns — "true $\delta$ exceeds
# $\delta$" and "classic $\sigma$ below the smallest private $\sigma$" — are the same failure seen
# twice), and by $\varepsilon = 50$ its true $\delta$ is $10^2$–$10^6$ times the nominal one.  That is
# inside the range Paper A sweeps: its smallest $\gamma = 0.01$ means
# $\varepsilon = \sqrt{2\ln(1.25/\delta)}/\gamma \approx 480$ at $\delta = 10^{-5}$.  Between $\varepsilon = 1$ and the crossing the formula is private
# although unproven; at $\varepsilon < 1$ it is private but wasteful (at least 20% more noise than
# necessary on this grid).  The project therefore
# keeps `gaussian_gamma` and $\sigma = \Delta\gamma$ available *to reproduce the paper's figures*, refuses
# `classic_gaussian_sigma` for $\varepsilon \ge 1$, and offers `analytic_gaussian_sigma` as the exact
# calibration.


# %% [markdown]
# ## 4. Figure
#
# Left: $\sigma/\Delta$ against $\varepsilon$ at $\delta = 10^{-5}$ — the classic formula (solid where
# it is proven, dotted where it is not) and the analytic calibration.  Middle: the true $\delta$ of
# the classic $\sigma = \Delta\gamma$ divided by the nominal $\delta$; above the line the formula
# is not private (E1).  Right: privacy profiles $\delta_\sigma(\varepsilon)$ for a few $\sigma/\Delta$.

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
e_all = np.geomspace(1e-2, 100, 200)
ax = axes[0]
classic = np.array([gaussian_gamma(e, 1e-5) for e in e_all])
ax.plot(e_all[e_all < 1], classic[e_all < 1], "C0-", label=r"classic $\Delta\gamma$ (proven, $\varepsilon<1$)")
ax.plot(e_all[e_all >= 1], classic[e_all >= 1], "C0:", label=r"classic $\Delta\gamma$ (unproven, $\varepsilon\geq1$)")
ax.plot(e_all, [analytic_gaussian_sigma(1.0, e, 1e-5) for e in e_all], "C1--", label="analytic (Balle & Wang)")
ax.axvspan(e_all[0], 1, color="0.9", label=r"$\varepsilon < 1$")
ax.set(xscale="log", yscale="log", xlabel=r"$\varepsilon$", ylabel=r"$\sigma / \Delta$", title=r"calibration at $\delta = 10^{-5}$")
ax.legend(fontsize=8)
ax = axes[1]
for d in deltas:
    ax.plot(e_all, gaussian_delta(np.array([gaussian_gamma(e, d) for e in e_all]), 1.0, e_all) / d, label=rf"$\delta = {d:g}$")
ax.axhline(1, color="k", lw=0.8)
ax.axvline(1, color="0.5", ls=":", lw=0.8)
ax.set(xscale="log", yscale="log", xlabel=r"$\varepsilon$", ylabel=r"true $\delta$ / nominal $\delta$",
       title=r"classic $\sigma = \Delta\gamma$: true vs nominal $\delta$")
ax.legend(fontsize=8)
ax = axes[2]
e_prof = np.linspace(0, 8, 200)
for t in (0.5, 1, 2, 4):
    ax.plot(e_prof, gaussian_delta(t, 1.0, e_prof), label=rf"$\sigma/\Delta = {t}$")
ax.set(yscale="log", ylim=(1e-12, 1.5), xlabel=r"$\varepsilon$", ylabel=r"$\delta_\sigma(\varepsilon)$",
       title="privacy profiles of the Gaussian mechanism")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
# - `bandit_unlearning.privacy.gaussian`: `check_epsilon`, `check_delta`, `check_sensitivity`,
#   `gaussian_gamma`, `classic_gaussian_sigma` (refuses $\varepsilon \ge 1$, E1), `analytic_gaussian_sigma`
#   (exact, any $\varepsilon \le 10^{15}$, certified against the true profile), `gaussian_delta` (exact
#   profile, finite at every extreme) and its inverse `gaussian_epsilon`.
# - Checks: the analytic $\sigma$ matches an independent integral-and-bisection inversion; classic
#   $\ge$ analytic for $\varepsilon<1$ and the same check rejects $\Delta\gamma$ for $\varepsilon \ge 1$,
#   where its true $\delta$ exceeds the nominal one.
# - Next: chapter [P1b](01b_audits.ipynb) audits $(\varepsilon, \delta)$ claims, exactly and by sampling.
