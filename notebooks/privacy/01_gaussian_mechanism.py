# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.privacy.gaussian
# ---

# %% [markdown]
# # Chapter P1 — The Gaussian mechanism: calibration, privacy profile, audits
#
# *Paper A, Definition 2.1 and Section 3 (the Gaussian mechanism with
# $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$); Paper A Definition 2.1 and erratum E1.  Exports
# `bandit_unlearning.privacy.gaussian` and `bandit_unlearning.privacy.audit`.*
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
# Then two auditing tools used by every later chapter: the **hockey-stick divergence** of two
# distributions over a finite set (the exact $\delta$ at a given $\varepsilon$ — unlearned arms are
# such distributions) and a **Monte Carlo auditor** that turns samples of two mechanisms' outputs
# into a Clopper–Pearson lower confidence bound on the $\varepsilon$ they actually achieve.

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
#   $$\delta \ge \delta_\sigma(\varepsilon) := \Phi\!\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
#     - e^{\varepsilon}\,\Phi\!\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big).$$
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

from bandit_unlearning.checks import as_array, as_real


def check_epsilon(epsilon) -> float:
    """Validate a privacy parameter epsilon: a finite number > 0.  Returns it as a float."""
    value = as_real(epsilon, "epsilon")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    return value


def check_delta(delta) -> float:
    """Validate a privacy parameter delta: a number in the open interval (0, 1)."""
    value = as_real(delta, "delta")
    if not 0 < value < 1:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    return value


def check_sensitivity(sensitivity) -> float:
    """Validate a sensitivity: a finite number >= 0 (0 means the query never changes)."""
    value = as_real(sensitivity, "sensitivity")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"sensitivity must be a finite number >= 0, got {sensitivity!r}")
    return value


def gaussian_gamma(epsilon, delta) -> float:
    """Paper A's privacy scale ``gamma = sqrt(2 ln(1.25/delta)) / epsilon`` (Paper A Definition 2.1).

    Defined for every epsilon > 0; whether ``sigma = Delta * gamma`` is private is another matter
    (see ``classic_gaussian_sigma``).  Named ``gaussian_gamma``, not ``gamma``, so that it is never
    confused with the ``gamma=`` argument (a given noise scale) of the unlearning functions.
    """
    return math.sqrt(2 * math.log(1.25 / check_delta(delta))) / check_epsilon(epsilon)


def classic_gaussian_sigma(sensitivity, epsilon, delta) -> float:
    """Classic calibration ``sigma = sensitivity * gaussian_gamma(epsilon, delta)`` (Dwork & Roth, Thm A.1).

    Proven only for ``epsilon < 1``; larger epsilon raises ``ValueError`` (erratum E1) -- use
    ``analytic_gaussian_sigma`` there.
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
# profile (Section 5.4).

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


def gaussian_delta(sigma, sensitivity, epsilon):
    """Exact privacy profile ``delta(epsilon)`` of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    ``Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D)`` with ``D = sensitivity``, ``s = sigma``:
    the smallest delta for which noise ``N(0, sigma^2)`` on a query of sensitivity ``D`` is
    (epsilon, delta)-indistinguishable.  ``sigma`` (>= 0) and ``epsilon`` (>= 0; 0 gives the total
    variation distance) broadcast against each other; a float is returned for scalar input.  Finite
    everywhere: its limits (0 when sigma/D or epsilon is huge, 1 when sigma/D is 0) come out as such.
    """
    sensitivity = check_sensitivity(sensitivity)
    sigma = as_array(sigma, "sigma").astype(float)
    epsilon = as_array(epsilon, "epsilon").astype(float)
    if not np.all(np.isfinite(sigma)) or np.any(sigma < 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    if not np.all(np.isfinite(epsilon)) or np.any(epsilon < 0):
        raise ValueError(f"epsilon must be finite and >= 0 in a privacy profile, got {epsilon}")
    try:
        shape = np.broadcast_shapes(sigma.shape, epsilon.shape)
    except ValueError:
        raise ValueError(f"sigma and epsilon must broadcast together, got shapes {sigma.shape} and "
                         f"{epsilon.shape}") from None
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
    err = (4 * _ULP * (1 + abs(log_phi_u) + abs(log_delta)) + u_err * math.exp(log_density - log_phi_u)
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

    start = math.log(math.sqrt(2 * math.log(1.25 / delta)) / epsilon)
    lo, hi = start - 1.0, start + 1.0
    while excess(lo) <= 0 and lo > -700:
        lo -= 2.0
    while excess(hi) >= 0 and hi < 700:
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
    while gaussian_delta(sigma, sensitivity, epsilon) > delta:    # keep the float profile consistent too
        sigma = float(np.nextafter(sigma, np.inf))
    return sigma


def gaussian_epsilon(sigma, sensitivity, delta) -> float:
    """Inverse privacy profile: the smallest epsilon >= 0 with ``gaussian_delta(...) <= delta``.

    ``inf`` if sigma is 0 (and sensitivity > 0) or if no epsilon below 1e308 reaches delta; 0 if
    sensitivity is 0.
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
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e308:                                 # no epsilon in double range reaches delta
            return math.inf
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))


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
# ## 4. Exact audits: the hockey-stick divergence
#
# Unlearning mechanisms in this project output an **arm**: a distribution over a finite set.  For two
# such distributions $p, q$ the smallest $\delta$ satisfying both inequalities of Definition 2.1 at
# level $\varepsilon$ is
# $$\delta_{p,q}(\varepsilon) = \max\Big(\sum_x (p_x - e^{\varepsilon} q_x)_+,\ \sum_x (q_x - e^{\varepsilon}p_x)_+\Big),$$
# because $\sup_A (P(A) - e^{\varepsilon}Q(A))$ is attained at $A = \{x: p_x > e^{\varepsilon}q_x\}$.
# `hockey_stick_epsilon` inverts it (the smallest $\varepsilon \ge 0$ with $\delta_{p,q}(\varepsilon)\le\delta$;
# infinite when an outcome impossible on one side has probability above $\delta$ on the other).
#
# ## 5. Monte Carlo audits
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
from scipy import optimize, stats

from bandit_unlearning.checks import (
    as_array, as_real, check_bool, check_choice, check_int, check_probability, check_real, check_size,
)
from bandit_unlearning.privacy.gaussian import check_delta

DISTRIBUTION_ATOL = 1e-9
MAX_EVENT_ENTRIES = 5_000_000   # events x outcomes of the default event family (``subset_events``)


def check_distributions(p, q):
    """Validate two probability vectors over the same finite set (shape ``(..., m)``, summing to 1
    along the last axis within ``DISTRIBUTION_ATOL``; tiny negative rounding is clipped to 0)."""
    p, q = as_array(p, "p").astype(float), as_array(q, "q").astype(float)
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


def hockey_stick_delta(p, q, epsilon):
    """``max(sum (p - e^eps q)_+, sum (q - e^eps p)_+)``: the exact delta of the pair (p, q) at epsilon.

    ``p`` and ``q`` are distributions over the same finite set (last axis); leading axes and an
    array ``epsilon`` (>= 0) broadcast.  Returns a float for a single pair and scalar epsilon.
    """
    p, q = check_distributions(p, q)
    epsilon = as_array(epsilon, "epsilon").astype(float)
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

    ``p``, ``q``: two distributions over the same finite set (1-D).
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
    try:
        np.broadcast_shapes(k.shape, n.shape)
    except ValueError:
        raise ValueError(f"successes and trials must broadcast together, got shapes {k.shape} and {n.shape}") from None
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got successes={k}, trials={n}")
    return k, n, check_probability(alpha, "alpha")


def clopper_pearson_lower(successes, trials, alpha):
    """One-sided Clopper-Pearson lower bound: ``P[p < bound] <= alpha`` (0 when there is no success)."""
    k, n, alpha = _binomial_counts(successes, trials, alpha)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(alpha, k, n - k + 1)
    return np.where(k > 0, bound, 0.0)


def clopper_pearson_upper(successes, trials, alpha):
    """One-sided Clopper-Pearson upper bound: ``P[p > bound] <= alpha`` (1 when every trial succeeded).

    The upper ``alpha`` quantile of Beta(k + 1, n - k) is ``beta.isf(alpha)``: ``beta.ppf(1 - alpha)`` would
    first round ``1 - alpha`` and miss small alphas in either direction."""
    k, n, alpha = _binomial_counts(successes, trials, alpha)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.isf(alpha, k + 1, n - k)
    return np.where(k < n, bound, 1.0)


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
    """The event ``{y > threshold}`` (``above=True``) or ``{y <= threshold}`` for real outputs."""

    threshold: float
    above: bool = True

    def __post_init__(self):
        threshold = as_real(self.threshold, "threshold")
        if np.isnan(threshold):
            raise ValueError("threshold must be a number, got nan")
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "above", check_bool(self.above, "above"))

    def __call__(self, outcomes):
        outcomes = as_array(outcomes, "outcomes").astype(float)
        return outcomes > self.threshold if self.above else outcomes <= self.threshold

    def __str__(self) -> str:
        return f"{{y {'>' if self.above else '<='} {self.threshold:g}}}"


def threshold_events(thresholds) -> list:
    """``{y > t}`` and ``{y <= t}`` for every ``t`` (to be fixed before looking at the samples)."""
    thresholds = as_array(thresholds, "thresholds").astype(float).ravel()
    if np.any(np.isnan(thresholds)):
        raise ValueError("thresholds must be numbers (no nan)")
    return [ThresholdEvent(float(t), above) for t in thresholds for above in (True, False)]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of ``audit_epsilon``.

    ``epsilon_lower``: lower confidence bound on the epsilon achieved at ``delta`` (>= 0);
    ``event`` and ``direction`` (``"a>b"``: ``P_a(E) <= e^eps P_b(E) + delta`` is the violated side,
    ``"b>a"`` the other) of the best hypothesis, with its counts ``count_a``/``count_b`` out of
    ``n_a``/``n_b`` samples and Clopper-Pearson bounds ``p_lower`` (larger side) and ``q_upper``;
    ``n_hypotheses`` = events x 2 directions searched (the Bonferroni factor).
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
    Refused (ValueError) when events x outcomes would exceed ``MAX_EVENT_ENTRIES``."""
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
    """
    delta = check_delta(delta)
    confidence = check_probability(confidence, "confidence")
    max_subset_outcomes = check_int(max_subset_outcomes, "max_subset_outcomes", 0)
    a, b = np.asarray(outcomes_a).ravel(), np.asarray(outcomes_b).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("outcomes_a and outcomes_b must be non-empty")
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
        member = lambda e, x: np.asarray(e(x), dtype=bool) if callable(e) else np.isin(x, list(e))
        count_a = np.array([member(e, a).sum() for e in events], dtype=float)
        count_b = np.array([member(e, b).sum() for e in events], dtype=float)
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
# ### 5.1 Exact: the released half-line of a Gaussian mechanism
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
# ### 5.2 Monte Carlo: a correctly noised and an under-noised Gaussian mechanism
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
# ### 5.3 Monte Carlo on a finite output set
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
# ### 5.4 Numerics at the extremes
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
      f"{cp_ppf / cp_exact - 1:.1e}, beta.isf(alpha) within 1e-14: {abs(cp_isf / cp_exact - 1) < 1e-14}")
assert abs(cp_isf / cp_exact - 1) < 1e-14 < abs(cp_ppf / cp_exact - 1)

# %% [markdown]
# ## 6. Figure
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
# - `bandit_unlearning.privacy.audit`: `hockey_stick_delta` / `hockey_stick_epsilon` (exact audits of
#   finite-output mechanisms), `clopper_pearson_lower/upper`, `audit_epsilon` → `AuditResult`
#   (Monte Carlo lower confidence bound, Bonferroni over `subset_events` or `threshold_events`).
# - Checks: the analytic $\sigma$ matches an independent integral-and-bisection inversion; classic
#   $\ge$ analytic for $\varepsilon<1$ and the same check rejects $\Delta\gamma$ for $\varepsilon \ge 1$,
#   where its true $\delta$ exceeds the nominal one; the auditor stays below the true $\varepsilon$ and
#   catches a mechanism with half the noise.
