# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.unlearn
# ---

# %% [markdown]
# # Chapter A3c — Theorem 3.2 audited
#
# *Paper A, Section 3.2: Theorem 3.2 (Algorithm 2 is $(\varepsilon, \delta)$-unlearning); errata E1, E2.
# Exports nothing: it checks `bandit_unlearning.mab.unlearn`.*
#
# Chapter [A3a](03a_adaptive_unlearning.ipynb) states Theorem 3.2 and implements Algorithm 2; chapter
# [A3b](03b_output_distributions.ipynb) computes both worlds' output distributions exactly and writes
# the vectorised mechanism.  Here we check the theorem three ways: an exact hockey-stick audit over
# more than 1,000 worst-case settings, a Monte Carlo auditor that agrees with it, and both rejecting
# broken variants (half the noise; the $3k/2N$ sensitivity where its condition fails; the classic
# calibration at $\varepsilon \ge 1$, erratum E1).

# %%
import numpy as np

from bandit_unlearning.mab.bounds import gamma0_exact, gamma0_paper
from bandit_unlearning.mab.lcb import LCBState
from bandit_unlearning.mab.mechanisms import (
    DeletionRequest, exact_sensitivity, paper_sensitivity, rollback, sensitivity_condition_holds,
)
from bandit_unlearning.mab.unlearn import (
    noisy_argmax_distribution, output_distributions, unlearn_batch, UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.privacy.audit import audit_epsilon, hockey_stick_delta, hockey_stick_epsilon
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_delta, gaussian_gamma

rng = np.random.default_rng(20260603)


def tiled(state, reps):
    """R copies of a state's statistics, in the layout of ``sample_statistics_*``."""
    return np.tile(state.counts, (reps, 1)), np.tile(state.reward_sums, (reps, 1))


def request_with_sum(arm, k, s):
    """k points of ``arm`` with 0/1 rewards summing to s."""
    return DeletionRequest([arm] * k, [1.0] * int(s) + [0.0] * (k - int(s)))

# %% [markdown]
# ## 1. Exact audit over a grid of worst cases
#
# For a finite-output mechanism, the smallest $\delta$ at which the unlearned output $P$ and the
# reference $Q$ satisfy both inequalities of Definition 2.1 at $\varepsilon$ is the **hockey-stick
# divergence** $\delta(\varepsilon) = \max\{\sum_a (P_a - e^\varepsilon Q_a)_+,\ \sum_a (Q_a - e^\varepsilon P_a)_+\}$
# (`hockey_stick_delta`).  Theorem 3.2 claims $\delta(\varepsilon) \le \delta$ for **every** $D$ and
# $U$, so we audit datasets chosen to be worst cases.
#
# *Datasets.* Two arms with $N(a_0) = N(b) = N$ points each ($\tau = 1/(2N)$, $L = \ln 4N$), the
# request deletes $k$ points of $a_0 = 0$.  The shift $f_{a_0}(D) - f_{a_0}(D \setminus U)$ is
# extreme for **deleted rewards 1, kept 0** (the E2 worst case, shift $+\Delta_{\text{exact}}$) and
# for the **reverse** (deleted 0, kept 1).
#
# *The competitor.* The output is $\{a_0, b\}$, a threshold event on the noisy score
# $f_{a_0} + \nu$ at the competitor's score $M = f_b$.  For two Gaussians
# $\mathcal N(\mu_1, \sigma^2)$, $\mathcal N(\mu_2, \sigma^2)$ with $\mu_1 > \mu_2$, the event
# $\{x > t\}$ attains the full Gaussian $\delta$ — the released bit is then as informative as the
# noisy score itself — exactly when $t$ is where the privacy loss equals $\varepsilon$:
# $$
# \ln\frac{\varphi((t-\mu_1)/\sigma)}{\varphi((t-\mu_2)/\sigma)} = \frac{(\mu_1 - \mu_2)(t - \bar\mu)}{\sigma^2} = \varepsilon
# \iff t^\star_\pm = \bar\mu \pm \frac{\varepsilon\sigma^2}{|\mu_1 - \mu_2|}, \quad \bar\mu = \tfrac{\mu_1 + \mu_2}2
# $$
# ($t^\star_+$ for the event $\{a_0\}$ in one direction, $t^\star_-$ for $\{b\}$ in the other).  Each
# of the four one-sided terms is unimodal in $t$ with its maximum at $t^\star_\pm$ (its derivative
# changes sign once, where the loss crosses $\varepsilon$), so over an interval of feasible $t$ the
# worst case is $t^\star_\pm$ clipped to the interval.  Feasible: a competitor with $N$ points has a
# score in $[-\sqrt{L/2N},\ 1 - \sqrt{L/2N}]$ (rewards in $[0,1]$; any value is attained).  For
# Algorithm 2 the Gaussian branch also needs $\hat a = a_0$, i.e. $M \le f_{a_0}(D)$ — a real
# constraint on the worst case, which we respect (if $M > f_{a_0}(D)$ the mechanism rolls back and
# leaks nothing).  We evaluate $\delta$ at the clipped $t^\star_\pm$ and at both interval ends and
# keep the largest.  As a consistency check, for the forced Gaussian mechanism the result must
# never exceed the Gaussian profile `gaussian_delta(sigma, shift, eps)` and must equal it whenever
# $t^\star$ is feasible.
#
# *Grid.* $N(a_0) \in \{5, 10, 20, 40, 100, 300, 10^3, 3\cdot10^3, 10^4\}$; five values of $k$ from 1
# up to the largest $k$ allowed by Lemma A.1's condition; $\delta \in \{10^{-8}, 10^{-5}, 10^{-3},
# 0.05, 0.3\}$; $\varepsilon \in \{0.05, 0.1, 0.25, 0.5, 0.75, 0.99\}$ for the paper's calibration
# (proven there), plus $\{1.5, 3, 6\}$ for the analytic one.  Mechanisms: Algorithm 2 with the paper
# threshold (scale 1 and the experiments' 1.3) and the exact threshold, and the forced Gaussian
# mechanism; calibration paper or analytic; sensitivity paper or exact — 16 variants.  Everything
# is vectorised over the grid with `scipy.stats.norm` through `noisy_argmax_distribution`.  A random
# sample of grid points is re-computed through the public path (`LCBState`, `DeletionRequest`,
# `output_distributions`, `hockey_stick_delta`) and must agree.

# %%
N_GRID = [5, 10, 20, 40, 100, 300, 1000, 3000, 10000]
EPS_PROVEN, EPS_LARGE = [0.05, 0.1, 0.25, 0.5, 0.75, 0.99], [1.5, 3.0, 6.0]
DELTAS = [1e-8, 1e-5, 1e-3, 0.05, 0.3]
KINDS = ("deleted 1, kept 0", "deleted 0, kept 1")


def audit_log_term(n):
    return np.log(4.0 * n)                       # two arms of n points, tau = 1/(2n)


def k_grid(n, beyond_condition=False):
    """Five k values up to Lemma A.1's largest k (or, beyond_condition, between it and N)."""
    k_cond = int(np.floor(n - np.sqrt(n * audit_log_term(n) / 2)))
    if beyond_condition:
        return sorted({min(n, max(k_cond + 1, int(np.ceil(k_cond + f * (n - k_cond))))) for f in (0.1, 0.4, 0.7, 1.0)})
    return sorted({max(1, int(round(f * k_cond))) for f in (0.01, 0.1, 0.3, 0.6, 1.0)})


def make_grid(eps_list, beyond_condition=False):
    rows = [(n, k, e, d) for n in N_GRID for k in k_grid(n, beyond_condition) for e in eps_list for d in DELTAS]
    n, k, e, d = (np.array(c, dtype=float) for c in zip(*rows))
    return dict(n=n, k=k, eps=e, delta=d, L=audit_log_term(n))


def worst_case_scores(g, kind):
    """f_a0(D) and f_a0(D \\ U) on the two worst-case datasets (E7 rule if all of a0 is deleted)."""
    n, k, L = g["n"], g["k"], g["L"]
    rest = n - k
    b_rest = np.sqrt(L / (2 * np.maximum(rest, 1)))
    if kind == KINDS[0]:
        f1, f2 = k / n - np.sqrt(L / (2 * n)), np.where(rest > 0, -b_rest, -1.0)
    else:
        f1, f2 = rest / n - np.sqrt(L / (2 * n)), np.where(rest > 0, 1 - b_rest, -1.0)
    return f1, f2


_unit_analytic = {}


def unit_sigma(g, calibration):
    """Noise per unit sensitivity over the grid (paper: gamma; analytic: Balle-Wang)."""
    if calibration == "paper":
        return np.sqrt(2 * np.log(1.25 / g["delta"])) / g["eps"]
    for e, d in set(zip(g["eps"], g["delta"])):
        if (e, d) not in _unit_analytic:
            _unit_analytic[(e, d)] = analytic_gaussian_sigma(1.0, e, d)
    return np.array([_unit_analytic[(e, d)] for e, d in zip(g["eps"], g["delta"])])


def grid_sensitivity(g, rule):
    return paper_sensitivity(g["n"], g["k"]) if rule == "paper" else exact_sensitivity(g["n"], g["k"], g["L"])


def worst_delta(g, f1, f2, sigma, noised, learner_constraint):
    """Largest hockey-stick delta at eps over the competitor's score M (vectorised over the grid).
    Returns (delta, M, noise added (the Gaussian branch is reachable), worst threshold feasible)."""
    r_b = np.sqrt(g["L"] / (2 * g["n"]))
    lo, hi = -r_b, 1 - r_b
    if learner_constraint:
        hi = np.minimum(hi, f1 - 1e-9)              # the Gaussian branch needs a_hat = a0: M <= f_a0(D)
    active = noised & (hi >= lo) & (sigma > 0)
    gap = np.abs(f1 - f2)
    shift = g["eps"] * sigma**2 / np.where(gap > 0, gap, 1.0)
    t_plus, t_minus = (f1 + f2) / 2 + shift, (f1 + f2) / 2 - shift
    best, best_m = np.zeros_like(f1), np.clip(t_plus, lo, hi)
    for m_ in (np.clip(t_plus, lo, hi), np.clip(t_minus, lo, hi), lo, hi):
        p = noisy_argmax_distribution(np.stack([f1, m_], -1), 0, sigma)
        q = noisy_argmax_distribution(np.stack([f2, m_], -1), 0, sigma)
        d = np.where(active, hockey_stick_delta(p, q, g["eps"]), 0.0)
        better = d > best * (1 + 1e-9)        # t+ and t- tie exactly by symmetry: keep the first, whatever the last bits
        best, best_m = np.maximum(d, best), np.where(better, m_, best_m)
    inside = ((lo <= t_plus) & (t_plus <= hi)) | ((lo <= t_minus) & (t_minus <= hi))
    return best, np.where(active, best_m, np.nan), active, active & inside


VARIANTS = [dict(method="adaptive", threshold="paper", threshold_scale=1.0),
            dict(method="adaptive", threshold="paper", threshold_scale=1.3),
            dict(method="adaptive", threshold="exact", threshold_scale=1.0),
            dict(method="gaussian", threshold="paper", threshold_scale=1.0)]


def audit(g, variant, calibration, sensitivity, noise_factor=1.0, sensitivity_value=None):
    """Exact audit of one mechanism variant on both worst-case datasets of every grid point.
    ``noise_factor`` < 1 and ``sensitivity_value`` give the deliberately broken variants."""
    delta_f = grid_sensitivity(g, sensitivity) if sensitivity_value is None else sensitivity_value
    sigma = noise_factor * delta_f * unit_sigma(g, calibration)
    if variant["method"] == "gaussian":
        noisable = np.ones_like(sigma, dtype=bool)
    else:
        thr = gamma0_paper if variant["threshold"] == "paper" else gamma0_exact
        gam = np.sqrt(2 * np.log(1.25 / g["delta"])) / g["eps"]
        noisable = gam < thr(g["n"], g["k"], g["L"]) * variant["threshold_scale"]
    out = {}
    for kind in KINDS:
        f1, f2 = worst_case_scores(g, kind)
        d, m_, active, tight = worst_delta(g, f1, f2, sigma, noisable, variant["method"] == "adaptive")
        out[kind] = dict(delta=d, M=m_, tight=tight,
                         f1=f1, f2=f2, sigma=sigma, noised=active)
    worst = np.maximum(out[KINDS[0]]["delta"], out[KINDS[1]]["delta"])
    return out, worst / g["delta"]


grid_p, grid_a = make_grid(EPS_PROVEN), make_grid(EPS_PROVEN + EPS_LARGE)
n_settings = len(grid_a["n"])
print(f"{len(grid_p['n'])} settings (N(a0), k, eps, delta) for the paper calibration (eps < 1), "
      f"{n_settings} for the analytic one; two worst-case datasets each")
results, rows = {}, []
for variant in VARIANTS:
    for calibration, g in (("paper", grid_p), ("analytic", grid_a)):
        for sens in ("paper", "exact"):
            res_, ratio = audit(g, variant, calibration, sens)
            name = (f"{variant['method']:8} {variant['threshold']:5}x{variant['threshold_scale']:.1f} "
                    f"cal={calibration:8} sens={sens}")
            results[name] = (g, variant, calibration, sens, res_, ratio)
            noised = res_[KINDS[0]]["noised"] | res_[KINDS[1]]["noised"]
            rows.append((name, len(ratio), int(noised.sum()), float(ratio.max())))
print(f"{'variant':52} {'settings':>8} {'noise':>6} {'max delta_exact/delta':>22}")
for name, n_, n_noise, r in rows:
    print(f"{name:52} {n_:8d} {n_noise:6d} {r:22.6g}")
largest_ratio = max(r for *_, r in rows)
n_gaussian_branch = sum(nn for name, _, nn, _ in rows if name.startswith("adaptive"))
print(f"largest ratio over all {sum(n_ for _, n_, _, _ in rows)} audited (setting, variant) pairs: {largest_ratio:.10f}; "
      f"Algorithm 2 took the Gaussian branch in {n_gaussian_branch} of its pairs")
assert largest_ratio <= 1 + 1e-9
assert all(nn > 50 for name, _, nn, _ in rows if name.startswith("adaptive") and "cal=analytic" in name)
assert all(nn > 0 for name, _, nn, _ in rows if name.startswith("adaptive paper") and "cal=paper" in name)

# %% [markdown]
# The analytic calibration with the exact sensitivity on the forced Gaussian mechanism reaches a
# ratio of 1 (to rounding): the worst-case dataset realises the exact sensitivity and the worst
# competitor realises the Gaussian profile, and the analytic $\sigma$ is the *smallest* noise with
# profile $\le \delta$ — the audit is tight, so it has no slack to hide an error.  The classic
# calibration ($\varepsilon < 1$) and the $3k/2N$ sensitivity leave slack.  For Algorithm 2 the
# constraint $\hat a = a_0$ (competitor below $f_{a_0}(D)$) often keeps the competitor away from
# $t^\star$, so its worst case is below the Gaussian mechanism's.
#
# Consistency checks: the forced Gaussian audits never exceed the Gaussian profile of the actual
# shift and equal it where $t^\star$ was feasible; and a random sample of 60 grid points (including
# rollback-branch ones, where $\delta = 0$) re-computed through the public API agrees.

# %%
for name, (g, variant, calibration, sens, res_, ratio) in results.items():
    if variant["method"] != "gaussian":
        continue
    for kind in KINDS:
        r = res_[kind]
        profile = np.array([gaussian_delta(s_, abs(a - b_), e) for s_, a, b_, e in
                            zip(r["sigma"], r["f1"], r["f2"], g["eps"])])
        assert np.all(r["delta"] <= profile * (1 + 1e-9) + 1e-15)
        assert np.allclose(r["delta"][r["tight"]], profile[r["tight"]], rtol=1e-7, atol=1e-15)
print("forced Gaussian: audit <= Gaussian profile everywhere, = where the worst threshold is feasible")

names = list(results)
picks = []                                   # 50 grid points where noise is added, 10 anywhere
while len(picks) < 60:
    name, kind = names[rng.integers(len(names))], KINDS[rng.integers(2)]
    noised = results[name][4][kind]["noised"]
    j = int(rng.integers(len(noised)))
    if len(picks) < 50 and not noised[j]:
        continue
    picks.append((name, j, kind))
max_gap, n_rollback_picks = 0.0, 0
for name, j, kind in picks:
    g, variant, calibration, sens, res_, _ = results[name]
    r = res_[kind]
    n, k, e, d = int(g["n"][j]), int(g["k"][j]), g["eps"][j], g["delta"][j]
    m_ = r["M"][j] if r["noised"][j] else 0.0
    b = np.sqrt(g["L"][j] / (2 * n))
    s0 = float(k) if kind == KINDS[0] else float(n - k)
    st = LCBState([n, n], [s0, n * (m_ + b)], 1 / (2 * n))
    req = request_with_sum(0, k, k if kind == KINDS[0] else 0)
    p_u, p_r = output_distributions(st, req, options=UnlearnOptions(method=variant["method"], epsilon=e, delta=d, threshold=variant["threshold"], threshold_scale=variant["threshold_scale"], calibration=calibration, sensitivity=sens))
    exact = hockey_stick_delta(p_u, p_r, e)
    n_rollback_picks += int(not r["noised"][j])
    max_gap = max(max_gap, abs(exact - r["delta"][j]) / d)
    assert abs(exact - r["delta"][j]) <= 1e-9 * d + 1e-14, (name, j, kind, exact, r["delta"][j])
# the gap is rounding noise whose size depends on the CPU's kernels: show the bound it is checked against
print(f"60 grid points re-computed through output_distributions: every |difference|/delta <= 1e-9 "
      f"({max_gap <= 1e-9}; {60 - n_rollback_picks} with noise, {n_rollback_picks} without)")

# %% [markdown]
# ## 2. The checks can fail: half the noise, and $3k/2N$ where Lemma A.1's condition fails
#
# **Half the noise.** The same exact audit, with every $\sigma$ halved.  Its *power* is the
# fraction of settings where noise is added at which it finds $\delta(\varepsilon) > \delta$ on
# some worst-case dataset.  Not every setting can reveal it: when $\varepsilon\sigma^2/\Delta$ is
# large, the worst threshold $t^\star$ lies outside the range a competitor's score can take (scores
# live in $[-1, 1]$), the released arm is then strictly less informative than the noisy score, and
# even the exactly calibrated mechanism has slack there.  Where $t^\star$ is feasible the analytic
# calibration is tight, so halving its noise must be caught every time — we assert that.
#
# **The $3k/2N$ sensitivity beyond its condition.** The public `unlearn` refuses it (E2), so we
# audit a deliberately unsafe variant, defined only here: $\sigma = \frac{3k}{2N}\cdot$(noise per
# unit sensitivity), for $k$ between Lemma A.1's largest $k$ and $N$ (four values per $N$, up to
# deleting the whole arm, where $f_{a_0}(D\setminus U) = -1$), on the same worst-case datasets.

# %%
def unsafe_paper_sensitivity(g):
    """DELIBERATELY UNSAFE (this chapter only): 3k/(2N) even where Lemma A.1's condition fails."""
    return 3 * g["k"] / (2 * g["n"])


def violation_summary(g, variant, calibration, sens, **kw):
    """(noised settings, violated ones, largest ratio, settings where t* is feasible, violated among those)."""
    res_, ratio = audit(g, variant, calibration, sens, **kw)
    noised = res_[KINDS[0]]["noised"] | res_[KINDS[1]]["noised"]
    tight = res_[KINDS[0]]["tight"] | res_[KINDS[1]]["tight"]
    return (int(noised.sum()), int((ratio[noised] > 1).sum()), float(ratio.max()),
            int(tight.sum()), int((ratio[tight] > 1).sum()))


print("half the noise (exact audit):")
power_half = {}
for name, (g, variant, calibration, sens, _, _) in results.items():
    n_noise, n_viol, worst, n_tight, n_viol_tight = violation_summary(g, variant, calibration, sens, noise_factor=0.5)
    if n_noise:
        power_half[name] = (n_viol / n_noise, n_viol_tight / max(n_tight, 1))
        print(f"  {name:52} violated in {n_viol:4d} of {n_noise:4d} noised settings (power {n_viol / n_noise:.3f}; "
              f"{n_viol_tight}/{n_tight} where t* is feasible); largest ratio {worst:.3g}")
assert power_half["gaussian paperx1.0 cal=analytic sens=exact"][1] == 1.0
assert all(p[0] > 0 for name, p in power_half.items() if "cal=analytic" in name)

grid_u_p, grid_u_a = make_grid(EPS_PROVEN, beyond_condition=True), make_grid(EPS_PROVEN + EPS_LARGE, beyond_condition=True)
too_small = unsafe_paper_sensitivity(grid_u_a) < exact_sensitivity(grid_u_a["n"], grid_u_a["k"], grid_u_a["L"])
print(f"\n3k/2N beyond Lemma A.1's condition: {len(grid_u_a['n'])} settings; 3k/2N is below the exact "
      f"sensitivity in {too_small.mean():.0%} of them")
unsafe = {}
for variant in (VARIANTS[0], VARIANTS[3]):
    for calibration, g in (("paper", grid_u_p), ("analytic", grid_u_a)):
        n_noise, n_viol, worst, _, _ = violation_summary(g, variant, calibration, "exact",
                                                         sensitivity_value=unsafe_paper_sensitivity(g))
        unsafe[(variant["method"], calibration)] = (n_noise, n_viol, worst)
        print(f"  {variant['method']:8} calibration {calibration:8}: violated in {n_viol:4d} of {n_noise:4d} "
              f"noised settings, largest delta_exact/delta = {worst:.3g}")
assert unsafe[("gaussian", "analytic")][1] > 0
# the classic calibration's slack absorbs the under-estimate in the eps < 1 range:
assert unsafe[("gaussian", "paper")][2] < unsafe[("gaussian", "analytic")][2]

# %% [markdown]
# So the analytic calibration, which has no slack, turns every under-estimate of the sensitivity
# into a real leak (up to the ratio printed above), while the classic calibration's slack at
# $\varepsilon < 1$ happens to absorb the $3k/2N$ under-estimate on this grid.  That slack is not a
# guarantee — it is exactly what the next check shows running out at $\varepsilon \ge 1$.
#
# ## 3. E1: the paper's calibration at $\varepsilon \ge 1$
#
# $\sigma = \Delta\gamma$ is the classic calibration, proven for $\varepsilon < 1$.  The paper's
# experiments set $\gamma$ directly, down to $0.01$, and since $\sqrt{2\ln(1.25/\delta)} > 0.668$
# for every $\delta < 1$, any $\gamma < 0.668$ corresponds to $\varepsilon > 1$: **every Gaussian
# branch in the paper's figures with $\gamma = 0.5$ or less is in the unproven regime.**  The exact
# privacy profile of the Gaussian mechanism at $\sigma = \Delta\gamma$
# (`gaussian_delta(gamma * Delta, Delta, eps)`) tells what it really gives:

# %%
eps_e1 = [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0]
print("delta_exact / delta of sigma = Delta * gamma(eps, delta):")
print("eps    " + " ".join(f"{d:>10.0e}" for d in DELTAS))
e1_ratio = np.array([[gaussian_delta(gaussian_gamma(e, d), 1.0, e) / d for d in DELTAS] for e in eps_e1])
for e, row in zip(eps_e1, e1_ratio):
    print(f"{e:5.1f}  " + " ".join(f"{r:10.3g}" for r in row))
first_bad = {d: next((e for e, r in zip(eps_e1, e1_ratio[:, i]) if r > 1), None) for i, d in enumerate(DELTAS)}
print("smallest eps on this list where the guarantee fails, per delta:", first_bad)
assert np.all(e1_ratio[0] <= 1) and np.any(e1_ratio > 1)

g_e1 = make_grid([1.0, 2.0, 5.0, 10.0, 20.0, 50.0])
for variant in (VARIANTS[1], VARIANTS[3]):
    n_noise, n_viol, worst, _, _ = violation_summary(g_e1, variant, "paper", "exact")
    print(f"full mechanism, {variant['method']:8} (threshold x{variant['threshold_scale']}), paper calibration, "
          f"eps in [1, 50]: violated in {n_viol} of {n_noise} noised settings; largest ratio {worst:.3g}")

# %% [markdown]
# ## 4. The Monte Carlo auditor agrees
#
# The third check treats the mechanism as a black box: sample its output in both worlds and ask
# `audit_epsilon` (Clopper–Pearson, Bonferroni over events and directions) for a lower confidence
# bound $\hat\varepsilon$ on the $\varepsilon$ it achieves at the claimed $\delta$.  We run it on
# 10 worst-case settings drawn at random from the exact audit's near-tight ones (analytic
# calibration, $\delta(\varepsilon) \ge 0.3\,\delta$, and $\delta \ge 10^{-3}$ so that $10^6$
# samples resolve it), each with the correct mechanism, the half-noise variant, and — on the
# two settings where the unsafe $3k/2N$ variant leaks most — that variant (realised through the
# public batch mechanism with `sensitivity="exact"` and the standard normals scaled by
# $\frac{3k/2N}{\Delta_{\rm exact}}$).  Samples come from `unlearn_batch`, checked in chapter A3b against
# the scalar `unlearn`.
#
# **Sizing.** With $A$ audits and $n = 10^6$ samples per world, we give each audit confidence
# $1 - 10^{-6}/(2A)$, so that with probability $\ge 1 - 10^{-6}/2$ no lower bound exceeds the true
# $\varepsilon$ of its two exact distributions ($\varepsilon_{\rm true}$, from `hockey_stick_epsilon`).
# For agreement from below: the Clopper–Pearson bounds are within $h_\alpha = \sqrt{\ln(1/\alpha)/2n}$
# of the empirical frequencies, which are within $h = \sqrt{\ln(4A/10^{-6})/2n}$ of the true
# probabilities for every audit with probability $\ge 1 - 10^{-6}/2$.  So
# $\hat\varepsilon \ge \max_{E,\text{dir}} \ln\frac{p_E - \delta - w}{q_E + w}$ with $w = h + h_\alpha$,
# computed from the exact $p, q$ — we assert both sides, so a correct implementation fails with
# probability below $10^{-6}$.  A variant is *rejected* when $\hat\varepsilon > \varepsilon$; where the
# guaranteed value already exceeds $\varepsilon$, rejection is asserted.

# %%
n_aud = 1_000_000
def worst_case_state(n, k, kind, m_):
    b = np.sqrt(audit_log_term(n) / (2 * n))
    st = LCBState([n, n], [float(k) if kind == KINDS[0] else float(n - k), n * (m_ + b)], 1 / (2 * n))
    return st, request_with_sum(0, k, k if kind == KINDS[0] else 0)


def exact_eps_at(name, kind, j):
    g, variant, calibration, sens, res_, _ = results[name]
    st, req = worst_case_state(int(g["n"][j]), int(g["k"][j]), kind, res_[kind]["M"][j])
    p_u, p_r = output_distributions(st, req, options=UnlearnOptions(method=variant["method"], epsilon=g["eps"][j], delta=g["delta"][j], threshold=variant["threshold"], threshold_scale=variant["threshold_scale"], calibration=calibration, sensitivity=sens))
    return hockey_stick_epsilon(p_u, p_r, g["delta"][j])


mc_settings = []          # 5 forced-Gaussian and 5 Algorithm 2 settings whose exact eps is >= half the claim
for names_ in (("gaussian paperx1.0 cal=analytic sens=exact", "gaussian paperx1.0 cal=analytic sens=paper"),
               ("adaptive paperx1.3 cal=analytic sens=exact", "adaptive paperx1.0 cal=analytic sens=paper")):
    pool = []
    for name in names_:
        g, _, _, _, res_, _ = results[name]
        for kind in KINDS:
            ok = np.flatnonzero(res_[kind]["noised"] & (g["delta"] >= 1e-3) & (res_[kind]["delta"] >= 0.3 * g["delta"]))
            pool += [(name, kind, int(j)) for j in ok]
    chosen = []
    for i in rng.permutation(len(pool)):
        name, kind, j = pool[i]
        if exact_eps_at(name, kind, j) >= 0.5 * results[name][0]["eps"][j]:
            chosen.append(pool[i])
        if len(chosen) == 5:
            break
    mc_settings += chosen

ug = grid_u_a
u_res, u_ratio = audit(ug, VARIANTS[3], "analytic", "exact", sensitivity_value=unsafe_paper_sensitivity(ug))
u_kind = np.where(u_res[KINDS[0]]["delta"] >= u_res[KINDS[1]]["delta"] * (1 - 1e-9), 0, 1)
u_ok = np.flatnonzero(ug["delta"] >= 1e-3)
unsafe_settings = [int(j) for j in u_ok[np.argsort(np.round(u_ratio[u_ok], 9), kind="stable")[-2:]]]

n_audits = 2 * len(mc_settings) + len(unsafe_settings)
confidence = 1 - 1e-6 / (2 * n_audits)
level_cp = (1 - confidence) / (2 * 4)               # audit_epsilon: 2 events x 2 directions, two bounds each
w = np.sqrt(np.log(4 * n_audits / 1e-6) / (2 * n_aud)) + np.sqrt(np.log(1 / level_cp) / (2 * n_aud))


def guaranteed_lower(p, q, delta):
    """Value the auditor's bound exceeds w.p. >= 1 - 1e-6 (from the exact distributions)."""
    vals = [np.log((a[i] - delta - w) / (b[i] + w)) for a, b in ((p, q), (q, p)) for i in range(len(p))
            if a[i] - delta - w > 0]
    return max(vals + [0.0])


def mc_audit(st, req, opts, method, delta, z_factor):
    c, s = tiled(st, n_aud)
    dsum = np.full(n_aud, req.deleted_sums(2)[0])
    options = UnlearnOptions(method=method, **opts)
    out = [unlearn_batch(c, s, st.tau, 0, req.k, dsum, options=options, world=w_,
                         z=z_factor * rng.standard_normal(n_aud))[0] for w_ in ("unlearned", "reference")]
    return audit_epsilon(out[0], out[1], delta, confidence=confidence, n_outcomes=2).epsilon_lower


print(f"{'setting':66} {'claimed':>7} {'exact':>7} {'MC lower':>8} {'guaranteed':>10}  verdict")
agree_gap, rejections, guaranteed_rejections = [], {"half noise": 0, "unsafe 3k/2N": 0}, 0
half_results = {}
for name, kind, j in mc_settings:
    g, variant, calibration, sens, res_, _ = results[name]
    n, k, e, d = int(g["n"][j]), int(g["k"][j]), g["eps"][j], g["delta"][j]
    st, req = worst_case_state(n, k, kind, res_[kind]["M"][j])
    opts = dict(epsilon=e, delta=d, threshold=variant["threshold"], threshold_scale=variant["threshold_scale"],
                calibration=calibration, sensitivity=sens)
    p_u, p_r = output_distributions(st, req, options=UnlearnOptions(method=variant["method"], **opts))
    eps_true = hockey_stick_epsilon(p_u, p_r, d)
    half = half_results.setdefault(name, audit(g, variant, calibration, sens, noise_factor=0.5)[0])[kind]
    st_h, _ = worst_case_state(n, k, kind, half["M"][j])          # the half-noise variant's own worst case
    h_u = noisy_argmax_distribution(st_h.scores, 0, half["sigma"][j])
    h_r = noisy_argmax_distribution(rollback(st_h, req).scores, 0, half["sigma"][j])
    eps_half = hockey_stick_epsilon(h_u, h_r, d)
    label = f"{name.split()[0]} {calibration}/{sens} N={n} k={k} eps={e} delta={d:g}"
    for tag, factor, s_, pu, pr, et in (("correct", 1.0, st, p_u, p_r, eps_true),
                                        ("half noise", 0.5, st_h, h_u, h_r, eps_half)):
        lower = mc_audit(s_, req, opts, variant["method"], d, factor)
        guar = guaranteed_lower(pu, pr, d)
        assert guar - 1e-12 <= lower <= et + 1e-9, (label, tag, guar, lower, et)
        if tag == "correct":
            agree_gap.append(et - lower)
            assert lower <= e + 1e-9
            verdict = "passes"
        else:
            rejections[tag] += int(lower > e)
            guaranteed_rejections += int(guar > e)
            assert lower > e or guar <= e
            verdict = "REJECTED" if lower > e else "not rejected"
        print(f"{label:58} {tag:>7.7} {e:7.3f} {et:7.3f} {lower:8.3f} {guar:10.3f}  {verdict}")
for j in unsafe_settings:
    n, k, e, d = int(ug["n"][j]), int(ug["k"][j]), ug["eps"][j], ug["delta"][j]
    kind = KINDS[u_kind[j]]
    st, req = worst_case_state(n, k, kind, u_res[kind]["M"][j])
    opts = dict(epsilon=e, delta=d, calibration="analytic", sensitivity="exact")
    factor = paper_sensitivity(n, k) / exact_sensitivity(n, k, st.log_term)
    sig = u_res[kind]["sigma"][j]
    pu = noisy_argmax_distribution(st.scores, 0, sig)
    pr = noisy_argmax_distribution(rollback(st, req).scores, 0, sig)
    et = hockey_stick_epsilon(pu, pr, d)
    lower = mc_audit(st, req, opts, "gaussian", d, factor)
    guar = guaranteed_lower(pu, pr, d)
    assert guar - 1e-12 <= lower <= et + 1e-9
    rejections["unsafe 3k/2N"] += int(lower > e)
    assert lower > e or guar <= e
    print(f"{'unsafe 3k/2N, analytic N=%d k=%d eps=%g delta=%g' % (n, k, e, d):58} {'unsafe':>7} {e:7.3f} {et:7.3f} "
          f"{lower:8.3f} {guar:10.3f}  {'REJECTED' if lower > e else 'not rejected'}")
print(f"\ncorrect mechanisms: exact eps - MC lower bound in [{min(agree_gap):.4f}, {max(agree_gap):.4f}] "
      f"(every lower bound <= exact eps <= claimed eps)")
print(f"power of the Monte Carlo audit: half noise rejected in {rejections['half noise']} of {len(mc_settings)} "
      f"settings ({guaranteed_rejections} guaranteed by the sizing); unsafe 3k/2N rejected in "
      f"{rejections['unsafe 3k/2N']} of {len(unsafe_settings)}")

# %% [markdown]
# ## Summary
# - **Theorem 3.2 holds on every audited worst case**: 1,200 settings $(N(a_0), k, \varepsilon,
#   \delta)$ with the paper's calibration and 1,800 with the analytic one, 16 mechanism variants, two
#   worst-case datasets each, competitor at the privacy-loss threshold; the largest
#   $\delta(\varepsilon)/\delta$ is 1 (to rounding) — attained, because analytic calibration with the
#   exact sensitivity is tight.  The Monte Carlo auditor ($10^6$ samples per world) agreed on all
#   ten near-tight settings: each lower bound lay between the sized guarantee and the exact
#   $\varepsilon$, within 0.01–0.29 of it.
# - **Power.** Half the noise: the exact audit catches it at *every* setting where the worst
#   threshold is feasible for the analytic calibration (and 63–89% of all noised settings,
#   depending on the variant); for the classic calibration its factor-of-several slack at
#   $\varepsilon < 1$ hides the halving in most settings (0–15% caught).  The Monte Carlo auditor
#   rejected the half-noise variant on 10 of 10 settings (9 guaranteed by the sizing).
# - **E2**: with noise calibrated by $3k/2N$ beyond Lemma A.1's condition, the analytic calibration
#   leaks (exact $\delta$ up to about six times the claim; caught by both audits), while the classic
#   calibration's slack at $\varepsilon < 1$ hides it on this grid.  `unlearn` refuses it.
# - **E1**: the paper's $\sigma = \Delta\gamma$ fails its claim from $\varepsilon \approx 5$–$10$ on
#   (table above), and every $\gamma < 0.668$ — all Gaussian branches of the paper's experiments at
#   $\gamma \le 0.5$ — is in the unproven $\varepsilon > 1$ regime.  With a *proven* calibration
#   ($\varepsilon < 1$, so $\gamma > 0.668$) Algorithm 2's Gaussian branch requires
#   $\gamma_0 > 0.668$, i.e. a tiny source arm ($N(a_0) - k \lesssim 4\pi L$).
# - Next: [A3d](03d_utility.ipynb) — what unlearning costs in accuracy.
