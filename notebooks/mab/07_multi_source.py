# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.multisource
# ---

# %% [markdown]
# # Chapter A7 — Multi-source unlearning (Algorithms 7 and 8), and an erratum
#
# *Paper A, Section 3.5: Algorithm 7 (multi-source unlearning under $\mathcal M_f$), Algorithm 8 (its
# reference), Theorem 3.13 (Paper A Algorithm 7 and erratum E5).  The mechanism runs through the entry
# points of chapter A3a (a `DeletionRequest` with points of several arms); this chapter exports
# Theorem 3.13's bound, `bandit_unlearning.mab.multisource`.*
#
# A deletion request may name points of several arms: $U = U_1 \cup \dots \cup U_l$ with $|U_i| = k_i$
# points of arm $a_{u_i}$.  Algorithm 7 extends Algorithm 2 arm by arm, with one threshold
# $\gamma_0'$ computed from the smallest source arm $N_{\min}$ and the largest deletion $k_{\max}$.
# This chapter
# 1. states Algorithms 7 and 8 and Theorem 3.13, and explains why the **printed pseudo-code leaks**
#    (erratum E5) and what the correct rule is;
# 2. shows that the package's `unlearn` implements the corrected rule, that with one source arm it is
#    exactly Algorithm 2, and computes exact output distributions — including the "always Gaussian"
#    baseline, which noises several arms at once (1-D quadrature);
# 3. **demonstrates the erratum**: a literal implementation of the printed pseudo-code violates
#    $(\varepsilon, \delta)$-unlearning on a concrete dataset (with $\delta(\varepsilon) = 1$), and fails the
#    exact audit in many grid settings, while the corrected rule passes the same audit everywhere;
# 4. checks Theorem 3.13's bound by Monte Carlo on the paper's Figure 3 configurations (hard and easy
#    case) and plots the four methods of that figure.

# %%
import itertools

import matplotlib.pyplot as plt
import numpy as np
from scipy import optimize, stats

from bandit_unlearning.mab.bounds import gamma0_paper
from bandit_unlearning.mab.data import PAPER_MEANS, sample_statistics_fixed
from bandit_unlearning.mab.lcb import LCBState, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity, rollback
from bandit_unlearning.mab.unlearn import (
    noisy_argmax_distribution, output_distributions, plan_unlearning, reference, unlearn_batch, UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import (
    analytic_gaussian_sigma, classic_gaussian_sigma, gaussian_gamma, gaussian_delta,
)

rng = np.random.default_rng(20260607)
WIDE_MEANS = np.array([0.9, 0.6, 0.5, 0.4, 0.3])

# %% [markdown]
# ## 1. Statement
#
# **Algorithm 7 (multi-source unlearning, as printed).** Input: $\hat a = \pi(D)$, a request
# $U = \bigcup_{i=1}^l U_i$ with $U_i$ from arm $a_{u_i}$, $|U_i| = k_i$, $T(D)$, $\tau$;
# $N_{\min} = \min_i N(a_{u_i})$, $k_{\max} = \max_i k_i$.
# 1. $f(D') \leftarrow f(D)$; $\gamma_0' = \frac43\sqrt{\pi L/(N_{\min} - k_{\max})}$.
# 2. For $i = 1, \dots, l$:
#    - **if** $\hat a = a_{u_i}$: **if** $\gamma < \gamma_0'$, add $\nu_i \sim \mathcal N(0, \sigma_i^2)$ to
#      $f_{a_{u_i}}(D')$ with $\sigma_i = \frac{3k_i}{2N(a_{u_i})}\gamma$;
#    - **else**: roll back $U_i$ (recompute $f_{a_{u_i}}$ on the data without $U_i$).
# 3. Output $\arg\max_a f_a(D')$.
#
# **Algorithm 8 (reference).** On $D \setminus U$: for each $i$, if $\hat a = a_{u_i}$ and
# $\gamma < \gamma_0'$ add the same noise to $f_{a_{u_i}}(D \setminus U)$; output the argmax.
#
# **Theorem 3.13.** Under $\mathcal M_f$, if $k_i \le N(a_{u_i}) - \sqrt{N(a_{u_i})L/2}$ for every $i$ and
# $k_{\max} < N_{\min}$, Algorithm 7 satisfies the bounds of Theorem 3.3 with $N(a_0) \to N_{\min}$ and
# $k \to k_{\max}$ (and $\gamma_0 \to \gamma_0'$); its privacy is argued as for Theorem 3.2 (Section 2
# below).  Explicitly: for
# $a^\star \in \{a_{u_i}\}$, $\sqrt{2\ln(Nm)/N_{\min}} + \frac{3k_{\max}\gamma}{2\sqrt{2\pi}N_{\min}} + \frac5N$ if
# $\gamma < \gamma_0'$ and $\sqrt{2\ln(Nm)/(N_{\min} - k_{\max})} + \frac5N$ otherwise; for
# $a^\star \notin \{a_{u_i}\}$, $\sqrt{2\ln(Nm)/N_\star} + \frac2N$.  (The constant: "the bounds of
# Theorem 3.3" would carry $+\frac3N$ and $+\frac4N$, but Theorem 3.13's own proof ends with $+\frac5N$ in
# both branches, and that is what `theorem313_bound` uses; an earlier version of this chapter used
# Theorem 3.3's constants — errata page.)
#
# ## 2. The erratum (erratum E5), and why the corrected rule is private
#
# Read the nesting of step 2 literally.  If $\hat a = a_{u_i}$ and $\gamma \ge \gamma_0'$, **nothing** is
# done to arm $a_{u_i}$: no noise, no rollback.  The unlearned world then releases
# $\arg\max$ with $f_{a_{u_i}}(D)$ — the score *with* the deleted points — while the reference releases
# $\arg\max$ with $f_{a_{u_i}}(D \setminus U)$, without noise on either side.  Two different deterministic
# outputs whenever the deleted points decide the argmax: $\delta(\varepsilon) = 1$ for every $\varepsilon$.
# (For one source arm the printed Algorithm 2 does not have this problem: its "else" covers
# $\gamma \ge \gamma_0$.)  The proof of Theorem 3.13 says what was meant: "rollback on all source arms
# when $\gamma \ge \gamma_0'$".  **Corrected rule (implemented):** for each source arm, noise iff
# $\hat a = a_{u_i}$ and $\gamma < \gamma_0'$, rollback otherwise.
#
# **Privacy of the corrected rule.** At most one arm is noised — the learner's, and only if it is a
# source arm.  Every other source arm is rolled back, so it carries $f(D \setminus U_i) = f(D \setminus U)$
# in *both* worlds; non-source arms are untouched and equal in both worlds.  The two worlds therefore
# differ only in the noised arm's score, by $|f_{a}(D) - f_a(D \setminus U_i)| \le 3k_i/(2N(a))$
# (Lemma A.1 for that arm), and the Gaussian mechanism plus post-processing gives
# $(\varepsilon, \delta)$; if no arm is noised both worlds output $\arg\max f(D \setminus U)$ exactly.
# The threshold uses only public quantities ($N(a_{u_i})$, $k_i$, $L$), like the branch rule of
# Algorithm 2, and **with one source arm** ($N_{\min} = N(a_0)$, $k_{\max} = k$) the corrected
# Algorithm 7 is Algorithm 2, line by line.
#
# ## 3. Using it: the same entry point
#
# `unlearn(state, request, options=UnlearnOptions(method="adaptive", ...))` with a request from several arms is Algorithm 7
# (corrected); `"gaussian"` noises every source arm, `"rollback"` rolls all of them back.  With `gamma`
# alone, `"gaussian"` is the paper's baseline (each arm with $\sigma_i = \Delta_i\gamma$,
# $\Delta_i = 3k_i/2N(a_i)$, no $(\varepsilon, \delta)$ claimed); with `epsilon` and `delta` every noised arm
# gets **one** $\sigma$ calibrated to $\sqrt{\sum_i \Delta_i^2}$ (Section 5b explains why).  The threshold $\gamma_0'$ follows
# `threshold`/`threshold_scale` (paper $\gamma_0'$ or the exact crossing with $N_{\min}, k_{\max}$).

# %%
state = LCBState(counts=[100, 100, 100], reward_sums=[50.0, 40.0, 45.0], tau=1 / 300)
U = DeletionRequest([0] * 20 + [1] * 20, [1.0] * 20 + [0.0] * 20)     # 20 points of arm 0 (all 1), 20 of arm 1 (all 0)
print(f"a_hat = {state.arm}, f(D) = {np.round(state.scores, 4)}, f(D \\ U) = {np.round(rollback(state, U).scores, 4)}")
for method, kw in (("adaptive", dict(gamma=0.5)), ("adaptive", dict(gamma=5.0)), ("gaussian", dict(gamma=0.5)),
                   ("rollback", dict()), ("adaptive", dict(gamma=0.5, threshold="exact"))):
    res = unlearn(state, U, options=UnlearnOptions(method=method, **kw), rng=rng)[1]
    p_u, p_r = output_distributions(state, U, options=UnlearnOptions(method=method, **kw))
    print(f"{method:8} {str(kw):36} gamma0' = {res.gamma0:.3f}  branches {res.branches}  "
          f"sigmas {[round(p.sigma, 4) for p in res.plans]}  P_unl = {np.round(p_u, 4)}  P_ref = {np.round(p_r, 4)}")

# %% [markdown]
# **Bad input** is refused before anything is drawn, naming the rule: an unknown arm in the request
# and, in the batch interface, repeated or unknown source arms and mismatched $k$.  Three requests
# are not bad input but cannot be certified by the method asked for — a request whose largest
# deletion exceeds the smallest source arm ($\gamma_0'$ is undefined, and Theorem 3.13 assumes
# $k_{\max} < N_{\min}$); noise calibrated with $3k_i/2N$ where Lemma A.1's condition fails for that
# arm (E2); mixing (single-source).  With `fallback="refuse"` they are refused (shown here); by
# default the arms concerned are rolled back — exact — and the result's `reason` says why (printed
# after the refusals).

# %%
rng_probe = np.random.default_rng(5)
before = rng_probe.bit_generator.state
small = LCBState(counts=[100, 10, 100], reward_sums=[60.0, 5.0, 40.0], tau=1 / 210)
bad = {
    "unknown arm": (state, DeletionRequest([0, 7], [1.0, 0.0]), "adaptive", dict(gamma=0.5)),
    "k_max > N_min": (small, DeletionRequest([0] * 30 + [1] * 5, [1.0] * 30 + [0.0] * 5), "adaptive", dict(gamma=0.5)),
    "3k/2N where A.1 fails": (state, DeletionRequest([0] * 85 + [1] * 5, [1.0] * 50 + [0.0] * 40), "gaussian",
                              dict(gamma=0.5)),
    "mixing, several arms": (state, U, "mixing", dict(gamma=0.5, eta=0.5)),
}
for rule, (st_, req_, method, kw) in bad.items():
    try:
        unlearn(st_, req_, options=UnlearnOptions(method=method, fallback="refuse", **kw), rng=rng_probe)[1]
        raise AssertionError(rule)
    except ValueError as err:
        print(f"{rule:24}: {err}")
c3, s3 = np.tile(state.counts, (4, 1)), np.tile(state.reward_sums, (4, 1))
for rule, kw in {"repeated source arms": dict(arm=[0, 0], k=[20, 20], deleted_sums=np.zeros((4, 2))),
                 "unknown source arm": dict(arm=[0, 3], k=20, deleted_sums=np.zeros((4, 2))),
                 "k per arm mismatched": dict(arm=[0, 1], k=[20, 20, 20], deleted_sums=np.zeros((4, 2))),
                 "deleted_sums shape": dict(arm=[0, 1], k=20, deleted_sums=np.zeros(4))}.items():
    try:
        unlearn_batch(c3, s3, state.tau, options=UnlearnOptions(method="adaptive", gamma=0.5), rng=rng_probe, **kw)
        raise AssertionError(rule)
    except ValueError as err:
        print(f"{rule:24}: {err}")
assert rng_probe.bit_generator.state == before
print("\nby default (fallback='rollback'):")
for rule, (st_, req_, method, kw) in list(bad.items())[1:]:
    res = unlearn(st_, req_, options=UnlearnOptions(method=method, **kw), rng=rng_probe)[1]
    print(f"{rule:24}: branches {res.branches}, reason {res.reason!r}, holds against the {res.reference} reference")
    assert res.fell_back and all(p.branch == "rollback" for p in res.plans if p.fell_back)

# %% [markdown]
# ## 4. Checks: one source arm is Algorithm 2; the batch agrees with the scalar mechanism
#
# An independent transcription of the (corrected) pseudo-code — a Python loop over source arms,
# paper threshold, calibration and sensitivity, written from Section 1 and not from the package —
# must release the same arm as `unlearn` with method `"adaptive"` for the same generator: on 2,000 random
# small datasets with requests from 1, 2 or 3 arms.  With **one** source arm the loop body is
# Algorithm 2's steps 2–3 verbatim, so agreement there is the statement "multi-source with one source
# arm is exactly Algorithm 2".  Then `unlearn_batch` with several source arms against the scalar
# `unlearn`/`reference` (300 replicates × 4 option sets × 2 worlds), and with one source arm given as a
# sequence (`arm=[a]`) against the single-source call (`arm=a`): identical outputs.

# %%
def algorithm7_loop(state, request, gamma, rng, threshold_scale=1.0):
    """Algorithm 7 with the corrected rule (E5), transcribed line by line: paper threshold, sigma = 3k/(2N) gamma."""
    L = state.log_term
    f = state.scores.copy()                                             # f(D') <- f(D)
    sources = sorted(set(int(a) for a in request.arms))
    k_of = {a: int(np.sum(request.arms == a)) for a in sources}
    n_min, k_max = min(int(state.counts[a]) for a in sources), max(k_of.values())
    gamma0 = threshold_scale * (4 / 3 * np.sqrt(np.pi * L / (n_min - k_max)) if k_max < n_min else np.inf)
    for a in sources:
        if state.arm == a and gamma < gamma0:
            sigma = 3 * k_of[a] / (2 * int(state.counts[a])) * gamma
            f[a] += sigma * rng.standard_normal()
        else:                                                           # rollback on a
            n_rest = int(state.counts[a]) - k_of[a]
            s_rest = max(0.0, state.reward_sums[a] - request.rewards[request.arms == a].sum())
            f[a] = s_rest / n_rest - np.sqrt(L / (2 * n_rest)) if n_rest > 0 else -1.0
    return int(np.argmax(f))


n_cases, by_l, n_noise = 2000, {1: 0, 2: 0, 3: 0}, 0
for _ in range(n_cases):
    m = int(rng.integers(3, 6))
    counts = rng.integers(30, 80, m)
    sums = np.round(rng.uniform(0.3, 0.7, m) * counts * 4) / 4          # dyadic sums: exact arithmetic
    st = LCBState(counts, sums, 1 / counts.sum())
    l = int(rng.integers(1, 4))
    src = rng.choice(m, size=l, replace=False)
    if rng.random() < 0.5 and st.arm not in src:
        src[0] = st.arm                                                # often include the learner's arm
    arms_, rewards_ = [], []
    for a in src:
        k_a = int(rng.integers(1, 6))
        s_a = int(min(k_a, sums[a] // 1))
        arms_ += [int(a)] * k_a
        rewards_ += [1.0] * s_a + [0.0] * (k_a - s_a)
    req = DeletionRequest(arms_, rewards_)
    g_ = float(rng.choice([0.05, 0.3, 1.0, 3.0]))
    seed = int(rng.integers(2**32))
    res = unlearn(st, req, options=UnlearnOptions(method="adaptive", gamma=g_), rng=np.random.default_rng(seed))[1]
    assert res.arm == algorithm7_loop(st, req, g_, np.random.default_rng(seed)), (counts, sums, arms_, g_)
    assert sum(p.noised for p in res.plans) <= 1
    by_l[len(set(arms_))] += 1
    n_noise += int(any(p.noised for p in res.plans))
print(f"unlearn(adaptive) == line-by-line Algorithm 7 on {n_cases} cases (by number of source arms: {by_l}; "
      f"{n_noise} with a noised arm; never more than one)")

reps, tau_b = 300, 1 / 150
counts_b, sums_b = sample_statistics_fixed([0.5, 0.48, 0.45], [50, 50, 50], rng, size=reps)
ks_b = np.array([6, 4])
dsum_b = np.stack([rng.hypergeometric(sums_b[:, a].astype(int), (50 - sums_b[:, a]).astype(int), ks_b[i])
                   for i, a in enumerate((0, 1))], axis=1).astype(float)
seeds = rng.integers(2**32, size=reps)
z_first = np.array([np.random.default_rng(sd).standard_normal(2) for sd in seeds])
n_compared = 0
for method, opts in (("adaptive", dict(gamma=0.8)), ("adaptive", dict(gamma=0.4, threshold="exact", threshold_scale=1.3)),
                     ("gaussian", dict(gamma=0.5)), ("rollback", dict())):
    for world in ("unlearned", "reference"):
        arms_b, noised_b, sigma_b = unlearn_batch(counts_b, sums_b, tau_b, [0, 1], ks_b, dsum_b,
                                                  options=UnlearnOptions(method=method, **opts), world=world, z=z_first)
        for r in range(reps):
            st = LCBState(counts_b[r], sums_b[r], tau_b)
            req = DeletionRequest([0] * 6 + [1] * 4, [1.0] * int(dsum_b[r, 0]) + [0.0] * (6 - int(dsum_b[r, 0]))
                                  + [1.0] * int(dsum_b[r, 1]) + [0.0] * (4 - int(dsum_b[r, 1])))
            # the scalar mechanism draws one normal per NOISED arm, in arm order; z_first[r] are the seeded
            # generator's first two normals, and the batch uses z[r, i] for arm i
            g = np.random.default_rng(seeds[r])
            if noised_b[r].sum() == 1 and noised_b[r][1]:
                g.standard_normal()                      # arm 0 not noised: skip its draw so arm 1 gets z[r, 1]
            res = (unlearn(st, req, options=UnlearnOptions(method=method, **opts), rng=g)[1] if world == "unlearned"
                   else reference(rollback(st, req), req, options=UnlearnOptions(method=method, **opts), learner_arm=st.arm, rng=g))
            assert res.arm == arms_b[r] and [p.noised for p in res.plans] == list(noised_b[r])
            assert [p.sigma for p in res.plans] == list(sigma_b[r])
            n_compared += 1
alg2 = UnlearnOptions(method="adaptive", gamma=0.8)
arms_1, noised_1, sigma_1 = unlearn_batch(counts_b, sums_b, tau_b, 0, 6, dsum_b[:, 0], options=alg2, z=z_first[:, 0])
arms_s, noised_s, sigma_s = unlearn_batch(counts_b, sums_b, tau_b, [0], [6], dsum_b[:, :1], options=alg2,
                                          z=z_first[:, :1])
assert np.array_equal(arms_1, arms_s) and np.array_equal(noised_1, noised_s[:, 0]) and np.array_equal(sigma_1, sigma_s[:, 0])
print(f"unlearn_batch (two source arms) == scalar unlearn/reference on {n_compared} runs; "
      f"arm=[0] == arm=0 on {reps} replicates ({noised_1.sum()} noised)")

# %% [markdown]
# ## 5. Exact distributions when several arms are noised
#
# Algorithm 7 noises at most one arm, so chapter A3b's closed form applies.  The paper's "Gaussian"
# baseline noises **every** source arm; the argmax of several noisy coordinates has no closed form,
# but it is a 1-D integral: for a noised arm $i$,
# $$
# P[\hat a' = i] = \int_{(f_b - f_i)/\sigma_i}^{\infty} \varphi(u) \prod_{j \ne i \text{ noised}}
#   \Phi\Big(\frac{f_i + \sigma_i u - f_j}{\sigma_j}\Big)\,du ,
# $$
# where $f_b$ is the best noiseless score (lowest index among ties), and $P[\hat a' = b] = \prod_j
# \Phi((f_b - f_j)/\sigma_j)$.  `multi_noisy_argmax_distribution` computes it with `scipy.integrate.quad`
# on $u \in [\max(\text{lower limit}, -39), 39]$ (the normal mass outside is below $10^{-300}$), with the
# other arms' crossing points $(f_j - f_i)/\sigma_i$ as break points (where a factor jumps from 0 to 1 if
# $\sigma_j \ll \sigma_i$); absolute tolerance $10^{-13}$, refused if quad's error estimate exceeds $10^{-9}$.
#
# **Checks.** (1) With only two arms, both noised, the answer is known in closed form,
# $P[\hat a' = 0] = \Phi((f_0 - f_1)/\sqrt{\sigma_0^2 + \sigma_1^2})$: 500 random cases, agreement to
# $10^{-10}$.  (2) Against the mechanism: $10^6$ batch runs per case on three cases (two and three noised
# arms, and the demo request above), every frequency within the Hoeffding/union-bound radius
# $t = \sqrt{\ln(2C/10^{-6})/(2n)}$ of the quadrature value.  The same test rejects a broken
# distribution that treats the noised arms one at a time (noising only the first).

# %% tags=["export:bandit_unlearning.mab.unlearn"]
import math

import numpy as np
from scipy import integrate, special, stats

from bandit_unlearning.checks import as_array, check_real, check_real_array
from bandit_unlearning.mab.unlearn import noisy_argmax_distribution, UnlearnOptions

SQRT_2PI = math.sqrt(2 * math.pi)


def multi_noisy_argmax_distribution(scores, sigmas, *, epsabs: float = 1e-13):
    """Distribution of ``argmax(scores + sigmas * Z)``, ``Z`` i.i.d. standard normal, for one score vector
    (shape ``(m,)``) with any number of noised arms (``sigmas[a] > 0``); ties to the lowest index (they
    matter only among noiseless arms).

    At most one noised arm: the closed form ``noisy_argmax_distribution``.  Several: only the noised
    arms and ``b`` = the best noiseless arm (lowest index among ties) can win;
    ``P[b] = prod_j Phi((f_b - f_j)/sigma_j)`` in closed form, and for a noised arm ``i``
    ``P[i] = int_{u > (f_b - f_i)/sigma_i} phi(u) prod_{j noised, j != i} Phi((f_i + sigma_i u - f_j)/sigma_j) du``,
    a 1-D integral computed with ``scipy.integrate.quad`` on ``u in [max(lower limit, -39), 39]`` (the
    normal mass outside is below 1e-300), with the other arms' crossing points
    ``(f_j - f_i)/sigma_i`` as break points, absolute tolerance ``epsabs``; a ``RuntimeError`` is
    raised if quad's error estimate exceeds ``1e-9`` for some arm.  The result is renormalised (the
    sum is 1 to within the quadrature error before that).

    Parameters
    ----------
    scores : array_like (m,)
        The scores before noise (finite).
    sigmas : array_like (m,)
        The noise's standard deviation on each arm (finite, >= 0; 0: a noiseless arm).
    epsabs : float
        The absolute tolerance given to ``quad`` for each arm's integral.

    Returns
    -------
    numpy.ndarray (m,)
        ``P[argmax = a]`` for every arm (non-negative, sums to 1).

    Raises
    ------
    RuntimeError
        When the quadrature's error estimate exceeds 1e-9.
    """
    scores, sigmas = check_real_array(scores, "scores"), as_array(sigmas, "sigmas").astype(float)
    epsabs = check_real(epsabs, "epsabs", 0, low_open=True)
    if scores.ndim != 1 or sigmas.shape != scores.shape:
        raise ValueError(f"scores and sigmas must be 1-D of equal length, got {scores.shape} and {sigmas.shape}")
    if not np.all(np.isfinite(sigmas)) or np.any(sigmas < 0):
        raise ValueError(f"sigmas must be finite and >= 0, got {sigmas}")
    noised = np.flatnonzero(sigmas > 0)
    if noised.size == 0:
        return noisy_argmax_distribution(scores, 0, 0.0)
    if noised.size == 1:
        return noisy_argmax_distribution(scores, int(noised[0]), sigmas[noised[0]])
    quiet = np.flatnonzero(sigmas == 0)
    out = np.zeros(scores.size)
    f_b = -np.inf
    if quiet.size:
        b = int(quiet[np.argmax(scores[quiet])])
        f_b = scores[b]
        out[b] = float(np.prod(stats.norm.cdf((f_b - scores[noised]) / sigmas[noised])))
    for i in noised:
        others = noised[noised != i]
        lo = max((f_b - scores[i]) / sigmas[i], -39.0) if np.isfinite(f_b) else -39.0
        if lo >= 39.0:
            continue

        f_o, s_o = scores[others], sigmas[others]

        def integrand(u, f_i=scores[i], s_i=sigmas[i], f_o=f_o, s_o=s_o):
            return math.exp(-0.5 * u * u) / SQRT_2PI * float(np.prod(special.ndtr((f_i + s_i * u - f_o) / s_o)))

        cuts = (scores[others] - scores[i]) / sigmas[i]
        cuts = np.unique(cuts[(cuts > lo) & (cuts < 39.0)])
        value, err = integrate.quad(integrand, lo, 39.0, epsabs=epsabs, epsrel=1e-11, limit=1000,
                                    points=cuts if cuts.size else None)
        if err > 1e-9:
            raise RuntimeError(f"quadrature for arm {int(i)} did not converge (error estimate {err:.2g})")
        out[i] = value
    return out / out.sum()

# %%
worst_cf = 0.0
for _ in range(500):
    f2, s2 = rng.normal(0, 0.3, 2), rng.uniform(0.01, 1.0, 2)
    p = multi_noisy_argmax_distribution(f2, s2)
    cf = stats.norm.cdf((f2[0] - f2[1]) / np.hypot(*s2))
    worst_cf = max(worst_cf, abs(p[0] - cf))
assert worst_cf < 1e-10
print(f"two noised arms: quadrature vs closed form, largest difference {worst_cf:.1e} over 500 cases")

n_mc = 1_000_000
mc_cases = [("two noised arms + bystander", np.array([0.30, 0.25, 0.28]), np.array([0.05, 0.08, 0.0])),
            ("three noised arms", np.array([0.10, 0.12, 0.05, 0.11]), np.array([0.03, 0.02, 0.06, 0.0])),
            ("demo request, unlearned world", None, None)]
t_mc = np.sqrt(np.log(2 * 11 / 1e-6) / (2 * n_mc))
rejected, largest = 0, 0.0
for name, f_, s_ in mc_cases:
    if f_ is None:                      # the demo request above, "gaussian": noise on arms 0 and 1
        opts = UnlearnOptions("gaussian", gamma=0.5)
        plans, _ = plan_unlearning(state.arm, state.counts, U.deleted_counts(3), state.log_term, opts)
        f_, s_ = state.scores.copy(), np.array([plans[0].sigma, plans[1].sigma, 0.0])
        p = output_distributions(state, U, options=UnlearnOptions(method="gaussian", gamma=0.5))[0]
        arms_mc = unlearn_batch(np.tile(state.counts, (n_mc, 1)), np.tile(state.reward_sums, (n_mc, 1)), state.tau,
                                [0, 1], 20, np.tile([20.0, 0.0], (n_mc, 1)), options=opts, rng=rng)[0]
    else:
        p = multi_noisy_argmax_distribution(f_, s_)
        arms_mc = np.argmax(f_ + s_ * rng.standard_normal((n_mc, f_.size)), axis=1)
    freq = np.bincount(arms_mc, minlength=f_.size) / n_mc
    largest = max(largest, np.abs(freq - p).max())
    assert np.all(np.abs(freq - p) <= t_mc), (name, freq, p)
    first = int(np.flatnonzero(s_ > 0)[0])
    broken = noisy_argmax_distribution(f_, first, s_[first])          # BROKEN: only the first noised arm
    rejected += int(np.any(np.abs(freq - broken) > t_mc))
    print(f"{name:30} quadrature {np.round(p, 4)}  Monte Carlo {np.round(freq, 4)}  one-arm shortcut {np.round(broken, 4)}")
print(f"largest |frequency - quadrature| = {largest:.5f} <= t = {t_mc:.5f}; one-arm shortcut rejected in {rejected} of 3")
assert rejected == 3

# %% [markdown]
# ## 5b. Noise on several arms is one mechanism
#
# **Why per-arm calibration fails.** When several arms are noised, the release is the score
# *vector* $S = f + Z$ with $Z \sim \mathcal N(0, \mathrm{diag}(\sigma_a^2))$ on the noised arms, against
# $S' = f' + Z$ in the reference world; `unlearn` even returns $S$ (`.scores`), and the argmax is a
# post-processing of it.  Whiten: $W = \Sigma^{-1/2}S$ is the Gaussian mechanism $\mathcal N(\mu, I)$ vs
# $\mathcal N(\mu', I)$ with $\mu - \mu' = (\Delta f_a/\sigma_a)_a$.  Its privacy loss
# $\ln\frac{p(w)}{p'(w)} = \langle w - \tfrac{\mu+\mu'}2, \mu - \mu'\rangle$ is, under $S$, distributed as
# $\mathcal N(\tfrac12 c^2, c^2)$ with $c = \lVert\mu - \mu'\rVert_2$: **it depends on the shift only through
# $c = \lVert\Sigma^{-1/2}(f - f')\rVert_2$**, so the vector mechanism has exactly the privacy profile of a
# one-dimensional Gaussian mechanism with $\Delta/\sigma = c$ (chapter P1a's $\delta_\sigma(\varepsilon)$ at
# $t = 1/c$).  Calibrating every arm for its own sensitivity alone, $\sigma_a = t\,\Delta_a$ with $t$ the
# unit noise of $(\varepsilon, \delta)$, makes each whitened coordinate shift by up to $1/t$, hence
# $c = \sqrt l/t$ for $l$ noised arms: the privacy of **one** arm noised with $t/\sqrt l$ — at $l = 16$ a
# quarter of the noise the claim needs.  (Paper A's Gaussian baseline with a given $\gamma$ is this
# mechanism; it claims no $(\varepsilon, \delta)$, and the package keeps it as the paper has it when only
# `gamma` is given.)
#
# **The fix.** With $(\varepsilon, \delta)$ given, every noised arm gets the same
# $\sigma = t \sqrt{\sum_a \Delta_a^2}$, the unit noise times the L2 norm of the per-arm sensitivities:
# then $c \le \lVert(\Delta_a)_a\rVert_2/\sigma = 1/t$ and the vector (hence the argmax) is
# $(\varepsilon, \delta)$.  Each $\Delta_a$ follows the `sensitivity` rule arm by arm ($3k_a/2N(a)$ is refused
# if Lemma A.1's condition fails for any noised arm; `"exact"` uses the exact worst case).  Algorithm 7
# noises at most one arm, so it is unaffected; so is mixing (single-source).
#
# `_joint_sensitivity` below is that norm (summed left to right, so that the scalar and the batched
# paths give the same bits); `plan_unlearning` (chapter A3a) and `unlearn_batch` (chapter A3b) call it.

# %% tags=["export:bandit_unlearning.mab.unlearn"]
import numpy as np


def _joint_sensitivity(delta_fs):
    """``sqrt(sum_a delta_f[a]^2)`` over the last axis (arms in increasing order), summed left to right so
    that the scalar and the batched paths give the same bits."""
    delta_fs = np.asarray(delta_fs, dtype=float)
    total = np.zeros(delta_fs.shape[:-1])
    for i in range(delta_fs.shape[-1]):
        total = total + delta_fs[..., i] * delta_fs[..., i]
    return np.sqrt(total)

# %% [markdown]
# **Audit.** $m = l + 1$ arms; each source arm holds $N = 1000$ points with reward sum 500 and loses
# 20 points, all with reward 1; the untouched arm's mean is searched over $[0.3, 0.7]$ for the worst
# case (21-point grid, then a bounded local maximisation); $\tau = 1/(mN)$, $(\varepsilon, \delta) = (0.5, 10^{-5})$,
# exact sensitivity, analytic and classic calibration.  The exact $\delta(\varepsilon)$ of the **released
# arm** comes from `multi_noisy_argmax_distribution` (the 1-D integrals of Section 5) and
# `hockey_stick_delta`: for the per-arm variant (built here by hand, wrong on purpose) and for
# `output_distributions(..., "gaussian", ...)`.  Beside it, the exact $\delta(\varepsilon)$ of the released
# **score vector** at the worst-case shift: `gaussian_delta` at $\lVert(\Delta_a)_a\rVert_2$.

# %%
EPS_J, DELTA_J, N_J, K_J = 0.5, 1e-5, 1000, 20
UNIT = {"analytic": analytic_gaussian_sigma(1.0, EPS_J, DELTA_J), "classic": classic_gaussian_sigma(1.0, EPS_J, DELTA_J)}


def spread(l, mean):
    """l source arms of N_J points (reward sum N_J/2), K_J deleted points each (all reward 1); one untouched arm."""
    st = LCBState([N_J] * (l + 1), [N_J / 2] * l + [mean * N_J], 1 / ((l + 1) * N_J))
    return st, DeletionRequest([a for a in range(l) for _ in range(K_J)], [1.0] * (K_J * l))


def per_arm_distributions(st, req, calibration):
    """DELIBERATELY WRONG: every source arm noised with the sigma calibrated for its own sensitivity alone."""
    sigmas = np.zeros(st.n_arms)
    sigmas[:-1] = UNIT[calibration] * exact_sensitivity(N_J, K_J, st.log_term)
    return (multi_noisy_argmax_distribution(st.scores, sigmas),
            multi_noisy_argmax_distribution(rollback(st, req).scores, sigmas))


def joint_distributions(st, req, calibration):
    return output_distributions(st, req, options=UnlearnOptions(method="gaussian", epsilon=EPS_J, delta=DELTA_J, calibration=calibration, sensitivity="exact"))


def worst_arm_delta(l, calibration, distributions):
    """Largest exact delta(eps) of the released arm over the untouched arm's mean in [0.3, 0.7]."""
    f = lambda mean: hockey_stick_delta(*distributions(*spread(l, mean), calibration), EPS_J)
    grid = np.linspace(0.3, 0.7, 21)
    vals = np.array([f(x) for x in grid])
    i = int(np.argmax(vals))
    if vals[i] == 0:
        return 0.0
    best = optimize.minimize_scalar(lambda x: -f(x), bounds=(grid[max(i - 1, 0)], grid[min(i + 1, 20)]),
                                    method="bounded", options=dict(xatol=1e-6))
    return max(vals[i], -best.fun)


print(f"(eps, delta) = ({EPS_J}, {DELTA_J:g}); exact delta(eps) / delta of the released arm (worst untouched mean) "
      f"and of the released score vector")
print(f"{'calibration':11} {'l':>3}   {'per-arm sigma: arm':>18} {'vector':>8}   {'joint sigma: arm':>16} {'vector':>8}")
joint_audit = {}
for cal in ("analytic", "classic"):
    for l in (4, 8, 16):
        st_l, req_l = spread(l, 0.5)
        delta_a = exact_sensitivity(N_J, K_J, st_l.log_term)
        res_l = unlearn(st_l, req_l, options=UnlearnOptions(method="gaussian", epsilon=EPS_J, delta=DELTA_J, calibration=cal, sensitivity="exact"), rng=np.random.default_rng(0))[1]
        assert abs(res_l.sigma / (UNIT[cal] * np.sqrt(l) * delta_a) - 1) < 1e-14      # one sigma, joint shift
        broken_arm = worst_arm_delta(l, cal, per_arm_distributions)
        fixed_arm = worst_arm_delta(l, cal, joint_distributions)
        broken_vec = gaussian_delta(UNIT[cal] * delta_a, np.sqrt(l) * delta_a, EPS_J)
        fixed_vec = gaussian_delta(res_l.sigma, np.sqrt(l) * delta_a, EPS_J)
        joint_audit[(cal, l)] = (broken_arm, fixed_arm, broken_vec, fixed_vec)
        print(f"{cal:11} {l:3d}   {broken_arm / DELTA_J:18.2g} {broken_vec / DELTA_J:8.2g}   "
              f"{fixed_arm / DELTA_J:16.2g} {fixed_vec / DELTA_J:8.2g}")
        assert fixed_arm <= DELTA_J * (1 + 1e-9) and fixed_vec <= DELTA_J * (1 + 1e-9)     # the fix keeps the claim
        assert broken_vec > DELTA_J                                      # per-arm sigma: the vector leaks
for cal, l in (("analytic", 8), ("analytic", 16), ("classic", 16)):
    assert joint_audit[(cal, l)][0] > DELTA_J                            # ... and so does the argmax

# %% [markdown]
# Per-arm calibration already fails for the released score vector at $l = 4$ (570 times the claim with
# the analytic calibration, 67 times with the classic one), and for the released *arm* alone — a lossy
# post-processing — at $l = 8$ and $16$ with the analytic calibration ($7.4\times$ and $43\times$ the claim)
# and at $l = 16$ with the classic one.  Calibrated to the joint shift, the score vector sits at the
# claim (the analytic calibration is tight; the classic one, valid for $\varepsilon < 1$, is loose) and
# the released arm far below it.

# %% [markdown]
# ## 6. The erratum, demonstrated
#
# **A concrete dataset.** Three arms of 100 points each ($\tau = 1/300$, $L = \ln 900$).  Arm 0 holds
# 50 ones, arm 1 40 ones, arm 2 45 ones; the request deletes 20 points of arm 0 — all with reward 1 —
# and 20 points of arm 1 — all with reward 0 (the request of Section 3).  The learner picks arm 0.
# Privacy level $(\varepsilon, \delta) = (0.5, 10^{-5})$ with the paper's calibration, so
# $\gamma = 9.68 \ge \gamma_0' = 0.69$: Algorithm 7 should roll both arms back.  The literal reading
# rolls back arm 1 (not the learner's) and does nothing to arm 0.

# %%
def literal_algorithm7_distributions(state, request, method="adaptive", **kw):
    """DELIBERATELY WRONG (this chapter only): Algorithms 7 and 8 with the printed nesting -- when a_hat
    is a source arm and gamma >= gamma0', that arm is neither noised nor rolled back."""
    options = UnlearnOptions(method, **kw)
    plans, gamma0 = plan_unlearning(state.arm, state.counts, request.deleted_counts(state.n_arms), state.log_term,
                                    options)                              # the noise decisions are the same
    rolled = rollback(state, request)
    base_u, base_r = rolled.scores.copy(), rolled.scores
    noised = [p for p in plans if p.noised]
    arm, sigma = (noised[0].arm, noised[0].sigma) if noised else (0, 0.0)
    if noised:
        base_u[arm] = state.scores[arm]
    elif state.arm in [p.arm for p in plans]:                             # a_hat == a_{u_i}, gamma >= gamma0'
        base_u[state.arm] = state.scores[state.arm]                       # ... nothing is done to it
    return noisy_argmax_distribution(base_u, arm, sigma), noisy_argmax_distribution(base_r, arm, sigma)


eps_d, delta_d = 0.5, 1e-5
print(f"counts N(a) = {state.counts}, reward sums S(a) = {state.reward_sums}, tau = 1/300, L = {state.log_term:.4f}")
print(f"request: k_i = {U.deleted_counts(3)} points of arms 0, 1, 2, with deleted reward sums {U.deleted_sums(3)}")
print(f"f(D) = {np.round(state.scores, 4)}  (a_hat = {state.arm});  f(D \\ U) = {np.round(rollback(state, U).scores, 4)}")
print(f"gamma = {gaussian_gamma(eps_d, delta_d):.3f}, gamma0' = {4 / 3 * np.sqrt(np.pi * state.log_term / (100 - 20)):.3f}")
p_lit, q_lit = literal_algorithm7_distributions(state, U, epsilon=eps_d, delta=delta_d)
p_cor, q_cor = output_distributions(state, U, options=UnlearnOptions(method="adaptive", epsilon=eps_d, delta=delta_d))
d_lit, d_cor = hockey_stick_delta(p_lit, q_lit, eps_d), hockey_stick_delta(p_cor, q_cor, eps_d)
print(f"literal  : P_unlearned = {p_lit}, P_reference = {q_lit} -> delta(eps={eps_d}) = {d_lit:g} > delta = {delta_d:g}")
print(f"corrected: P_unlearned = {p_cor}, P_reference = {q_cor} -> delta(eps={eps_d}) = {d_cor:g}")
assert d_lit == 1.0 > delta_d and d_cor == 0.0

# %% [markdown]
# The literal mechanism announces arm 0 — because it still uses the 20 deleted ones of arm 0 — while
# a mechanism that never saw them announces arm 1, with certainty on both sides: an observer learns
# from the output that the deleted points were there.  No $\varepsilon$ helps; $\delta(\varepsilon) = 1$.
#
# **The exact audit over a grid.** Three arms: sources 0 and 1 and a bystander arm 2 whose score $M$
# the audit chooses adversarially (any value $N_2 = N_0$ rewards in $[0, 1]$ allow).  Source arm $i$
# holds $N_i \in \{10, 40, 200, 1000\}$ points, $k_i \in$ {10%, 50%, 100%} of its Lemma A.1 largest
# $k$ (settings with $k_{\max} > N_{\min}$, where $\gamma_0'$ is undefined, are skipped); its rewards are
# "deleted 1, kept 0" or "deleted 0, kept 1" (the two extreme shifts); $\tau = 1/(N_0 + N_1 + N_2)$;
# $\varepsilon \in \{0.1, 0.5, 0.99\}$ with the paper's calibration and $\{0.1, 0.5, 0.99, 3\}$ with the
# analytic one, $\delta \in \{10^{-6}, 10^{-3}, 0.05\}$, sensitivity paper or exact, threshold
# paper $\times 1$, paper $\times 1.3$ or exact.  For each setting the competitor $M$ is searched over
# the worst thresholds $t^\star_\pm$ of either source arm (as in chapter A3c, clipped to the feasible
# range and to $M \le f_i(D)$ so that arm $i$ is the learner's), the midpoints between $f_i(D)$ and
# $f_i(D \setminus U)$ (where the literal leak shows) and the interval ends; the learner's arm, the branch
# and both output distributions are recomputed for every candidate.  A random sample is re-computed
# through the public path (`output_distributions` for the corrected rule, the function above for the
# literal one).

# %%
N_SRC = [10, 40, 200, 1000]
FRACS = [0.1, 0.5, 1.0]
DELTAS = [1e-6, 1e-3, 0.05]
CAL_EPS = [("paper", e) for e in (0.1, 0.5, 0.99)] + [("analytic", e) for e in (0.1, 0.5, 0.99, 3.0)]
THRESHOLDS = [("paper", 1.0), ("paper", 1.3), ("exact", 1.0)]
REWARD_KINDS = {"deleted 1, kept 0": (1.0, 0.0), "deleted 0, kept 1": (0.0, 1.0)}
_unit = {}


def unit_sigma(cal, eps, delta):
    if cal == "paper":
        return gaussian_gamma(eps, delta)
    if (eps, delta) not in _unit:
        _unit[(eps, delta)] = analytic_gaussian_sigma(1.0, eps, delta)
    return _unit[(eps, delta)]


def build_grid():
    rows = []
    for n0, n1 in itertools.product(N_SRC, N_SRC):
        n2 = n0
        L = np.log(3.0 * (n0 + n1 + n2))
        kc = [int(np.floor(n - np.sqrt(n * L / 2))) for n in (n0, n1)]
        for f0, f1 in itertools.product(FRACS, FRACS):
            k0, k1 = max(1, int(round(f0 * kc[0]))), max(1, int(round(f1 * kc[1])))
            if max(k0, k1) > min(n0, n1):
                continue
            for kind0, kind1 in itertools.product(REWARD_KINDS, REWARD_KINDS):
                for (cal, eps), delta, sens, (thr, scale) in itertools.product(CAL_EPS, DELTAS, ("paper", "exact"),
                                                                              THRESHOLDS):
                    rows.append((n0, n1, n2, k0, k1, kind0, kind1, cal, eps, delta, sens, thr, scale))
    return rows


def grid_arrays(rows):
    cols = list(zip(*rows))
    n0, n1, n2, k0, k1 = (np.array(c, dtype=float) for c in cols[:5])
    L = np.log(3.0 * (n0 + n1 + n2))
    g = dict(n=np.stack([n0, n1], 1), n2=n2, k=np.stack([k0, k1], 1), L=L, eps=np.array(cols[8]), delta=np.array(cols[9]))
    frac = np.array([[REWARD_KINDS[a][0], REWARD_KINDS[a][1], REWARD_KINDS[b][0], REWARD_KINDS[b][1]]
                     for a, b in zip(cols[5], cols[6])])
    n, k = g["n"], g["k"]
    s_del, s_kept = frac[:, [0, 2]] * k, frac[:, [1, 3]] * (n - k)
    b_n, b_rest = np.sqrt(L[:, None] / (2 * n)), np.sqrt(L[:, None] / (2 * (n - k)))
    g["fD"] = (s_del + s_kept) / n - b_n
    g["fDU"] = s_kept / (n - k) - b_rest
    unit = np.array([unit_sigma(c, e, d) for c, e, d in zip(cols[7], cols[8], cols[9])])
    sens = np.array(cols[10])
    delta_f = np.where((sens == "paper")[:, None], 3 * k / (2 * n), exact_sensitivity(n, k, L[:, None]))
    g["sigma"] = delta_f * unit[:, None]
    gam = np.array([gaussian_gamma(e, d) for e, d in zip(cols[8], cols[9])])
    n_min, k_max = n.min(1), k.max(1)
    g0_paper = 4 / 3 * np.sqrt(np.pi * L / np.maximum(n_min - k_max, 1e-300))
    with np.errstate(divide="ignore", invalid="ignore"):
        g0_exact = 2 * np.sqrt(2 * np.pi) * n_min * (np.sqrt(2 * L / (n_min - k_max)) - np.sqrt(2 * L / n_min)) / (3 * k_max)
    thr, scale = np.array(cols[11]), np.array(cols[12])
    g0 = np.where(k_max < n_min, np.where(thr == "paper", g0_paper, g0_exact) * scale, np.inf)
    g["noise_ok"] = gam < g0
    return g


def release_distributions(g, m_val, rule):
    """(P_unlearned, P_reference) over the 3 arms for competitor scores m_val (shape (S,)), both rules."""
    f_d = np.column_stack([g["fD"], m_val])
    f_du = np.column_stack([g["fDU"], m_val])
    learner = np.argmax(f_d, axis=1)
    out_u, out_r = [], []
    noised_any = np.zeros(len(m_val), dtype=bool)
    base_u, base_r = f_du.copy(), f_du.copy()
    sig = np.zeros(len(m_val))
    arm_noised = np.zeros(len(m_val), dtype=int)
    for i in (0, 1):
        is_i = learner == i
        noise_i = is_i & g["noise_ok"]
        keep_i = is_i & ~g["noise_ok"] & (rule == "literal")              # literal: nothing done to arm i
        base_u[:, i] = np.where(noise_i | keep_i, g["fD"][:, i], base_u[:, i])
        sig = np.where(noise_i, g["sigma"][:, i], sig)
        arm_noised = np.where(noise_i, i, arm_noised)
        noised_any |= noise_i
    p = np.where((arm_noised == 0)[:, None], noisy_argmax_distribution(base_u, 0, sig),
                 noisy_argmax_distribution(base_u, 1, sig))
    q = np.where((arm_noised == 0)[:, None], noisy_argmax_distribution(base_r, 0, sig),
                 noisy_argmax_distribution(base_r, 1, sig))
    return p, q, noised_any


def audit_grid(g, rule):
    b2 = np.sqrt(g["L"] / (2 * g["n2"]))
    lo, hi = -b2, 1 - b2
    cands = [lo, hi]
    for i in (0, 1):
        top = np.minimum(hi, g["fD"][:, i] - 1e-9)
        gap = np.abs(g["fD"][:, i] - g["fDU"][:, i])
        mid = (g["fD"][:, i] + g["fDU"][:, i]) / 2
        shift = g["eps"] * g["sigma"][:, i] ** 2 / np.where(gap > 0, gap, np.inf)
        cands += [np.minimum(mid + shift, top), np.minimum(mid - shift, top), mid, top]
    cands = [np.clip(c, lo, hi) for c in cands]                         # always a feasible competitor score
    best, best_m, noised = np.zeros(len(lo)), cands[0].copy(), np.zeros(len(lo), dtype=bool)
    for m_val in cands:
        p, q, nz = release_distributions(g, m_val, rule)
        d = hockey_stick_delta(p, q, g["eps"])
        better = d > best
        best, best_m = np.where(better, d, best), np.where(better, m_val, best_m)
        noised |= nz
    return best, best_m, noised, len(cands)


grid_rows = build_grid()
G = grid_arrays(grid_rows)
d_cor, m_cor, noised_cor, n_cand = audit_grid(G, "corrected")
d_lit, m_lit, _, _ = audit_grid(G, "literal")
ratio_cor, ratio_lit = d_cor / G["delta"], d_lit / G["delta"]
print(f"{len(grid_rows)} settings (N_0, N_1, k_0, k_1, rewards, calibration, eps, delta, sensitivity, threshold), "
      f"{n_cand} competitor candidates each; a noised arm is reachable in {noised_cor.sum()} settings")
print(f"corrected Algorithm 7: largest delta_exact/delta = {ratio_cor.max():.10f}")
print(f"literal Algorithm 7  : violates (eps, delta) in {(ratio_lit > 1 + 1e-9).sum()} of {len(grid_rows)} settings, "
      f"with delta_exact = 1 in {(d_lit >= 1 - 1e-12).sum()}; largest ratio {ratio_lit.max():.3g}")
for cal in ("paper", "analytic"):
    sel = np.array([r[7] == cal for r in grid_rows])
    print(f"  calibration {cal:8}: {sel.sum():5d} settings, corrected worst ratio {ratio_cor[sel].max():.6f}, "
          f"literal violations {(ratio_lit[sel] > 1 + 1e-9).sum()}")
assert ratio_cor.max() <= 1 + 1e-9 and ratio_cor.max() > 0.999
assert (ratio_lit > 1 + 1e-9).sum() > 0

# %%
picks = np.concatenate([rng.choice(np.flatnonzero(noised_cor), size=20, replace=False),      # noise reachable
                        rng.choice(np.flatnonzero(ratio_lit > 1 + 1e-9), size=10, replace=False),    # literal leaks
                        rng.choice(len(grid_rows), size=10, replace=False)])
max_gap = 0.0
for j in picks:
    n0, n1, n2, k0, k1, kind0, kind1, cal, eps, delta, sens, thr, scale = grid_rows[j]
    L = np.log(3.0 * (n0 + n1 + n2))
    (fd0, fk0), (fd1, fk1) = REWARD_KINDS[kind0], REWARD_KINDS[kind1]
    for rule, m_val, d_grid in (("corrected", m_cor[j], d_cor[j]), ("literal", m_lit[j], d_lit[j])):
        b2 = np.sqrt(L / (2 * n2))
        st = LCBState([n0, n1, n2], [fd0 * k0 + fk0 * (n0 - k0), fd1 * k1 + fk1 * (n1 - k1), n2 * (m_val + b2)],
                      1 / (n0 + n1 + n2))
        req = DeletionRequest([0] * k0 + [1] * k1, [fd0] * k0 + [fd1] * k1)
        kw = dict(epsilon=eps, delta=delta, calibration=cal, sensitivity=sens, threshold=thr, threshold_scale=scale)
        p, q = (output_distributions(st, req, options=UnlearnOptions(method="adaptive", **kw)) if rule == "corrected"
                else literal_algorithm7_distributions(st, req, **kw))
        exact = hockey_stick_delta(p, q, eps)
        max_gap = max(max_gap, abs(exact - d_grid) / delta)
        assert abs(exact - d_grid) <= 1e-9 * delta + 1e-13 or (d_grid == 1 and exact == 1), (grid_rows[j], rule, exact, d_grid)
print(f"40 grid settings (20 with a reachable noised arm, 10 where the literal rule leaks, 10 at random) recomputed "
      f"through the public path, both rules: largest |difference|/delta "
      f"{'< 1e-15' if max_gap < 1e-15 else f'= {max_gap:.0e}'}")

# %% [markdown]
# ## 7. Theorem 3.13 by Monte Carlo (the paper's Figure 3 configurations)
#
# **Setting.** $\mathcal M_f$, round-robin counts ($N(a) = N/5$), $k$ points deleted from **each** of two
# source arms: arms 0 and 1 (hard case, $a^\star$ is a source) or arms 2 and 3 (easy case);
# $(N, \gamma, k) \in \{2000, 4000\} \times \{0.05, 0.5\} \times \{40, 80\}$; Algorithm 7 with the
# experiments' threshold $1.3\gamma_0'$ and the paper's calibration; for the figure also the
# paper's baselines — "Gaussian" (noise on both source arms), "Rollback" (both rolled back) and "Oracle"
# (the learner on $D$, no deletion).  Two instances: the paper's means (the bound, about 0.2, exceeds
# the largest loss 0.08, so it cannot fail there) and the wide-gap instance $(0.9, 0.6, 0.5, 0.4, 0.3)$.
#
# **Sizing.** $R = 20{,}000$ replicates per setting; assert
# $\widehat{\rm SubOpt} \le \text{bound} + $ `hoeffding_margin(R, width, 1e-6 / (#settings + 1))`, so a
# correct implementation fails anywhere with probability $< 10^{-6}$.  **The check can fail:** Algorithm 7
# with noise $N_{\min}$ times too large, hard case, wide instance, $N = 20{,}000$, $k = 80$, $\gamma = 0.1$
# (Gaussian branch), violates the bound.

# %% tags=["export"]
"""Multi-source unlearning under M_f: Theorem 3.13's bound (Paper A, Section 3.5; Paper A Algorithm 7, E5).

The mechanism is ``unlearn(state, request, options=UnlearnOptions(method="adaptive", ...))`` (registered in ``bandit_unlearning.mab.unlearn``) with a
request from several arms: Algorithm 7 with the corrected rule of erratum E5 (noise on a source arm iff it
is the learner's arm and gamma < gamma0', rollback otherwise); ``unlearn_batch`` takes ``arm``, ``k`` and
``deleted_sums`` per source arm.

- ``theorem313_bound``: the single-source bounds of Theorem 3.3 with N(a0) -> N_min, k -> k_max.
"""

import numpy as np

from bandit_unlearning.checks import as_array, check_bool, check_int, check_real
from bandit_unlearning.mab.bounds import gamma0_paper, gaussian_branch_bound, rollback_branch_bound


def theorem313_bound(n: int, n_arms: int, source_counts, source_ks, n_star: int, gamma: float,
                     star_is_source: bool, gamma0: float | None = None) -> float:
    """Theorem 3.13 (M_f, tau = 1/N, L = ln(Nm)): the sub-optimality bound of Algorithm 7 for source arms
    holding ``source_counts`` points with ``source_ks`` deleted from each.

    ``star_is_source`` and ``gamma < gamma0'``: ``sqrt(2L/N_min) + 3 k_max gamma / (2 sqrt(2 pi) N_min) + 5/N``;
    ``star_is_source`` and ``gamma >= gamma0'``: ``sqrt(2L/(N_min - k_max)) + 5/N`` -- the constant +5/N in
    both branches is the one Theorem 3.13's proof ends with (an earlier version carried Theorem 3.3's
    +3/N and +4/N, which the multi-source proof does not give);
    otherwise ``sqrt(2L/N_*) + 2/N``.  ``gamma0``: the threshold the algorithm used (default the paper's
    ``gamma0' = (4/3) sqrt(pi L / (N_min - k_max))``).  Refuses source arms violating Lemma A.1's condition
    ``k_i <= N_i - sqrt(N_i L / 2)`` or ``k_max >= N_min`` (the theorem's assumptions).

    Parameters
    ----------
    n, n_arms, n_star, gamma
        As in ``theorem33_bound``.
    source_counts : array_like of int (s,)
        ``N_i``, the points of each source arm before the deletion.
    source_ks : array_like of int (s,)
        ``k_i >= 1``, the points deleted from each source arm (same length as ``source_counts``).
    star_is_source : bool
        Whether the optimal arm ``a*`` is one of the source arms.
    gamma0 : float or None
        The threshold the algorithm used; ``None``: the paper's ``gamma0'``.

    Returns
    -------
    float
        The bound on the expected sub-optimality after unlearning.
    """
    n, n_arms = check_int(n, "N (n)", 2), check_int(n_arms, "n_arms", 1)
    counts, ks = np.atleast_1d(as_array(source_counts, "source_counts")), np.atleast_1d(as_array(source_ks, "source_ks"))
    for name, v in (("source_counts", counts), ("source_ks", ks)):
        if v.size and v.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {v.dtype}")
    if counts.ndim != 1 or counts.shape != ks.shape or counts.size == 0:
        raise ValueError(f"source_counts and source_ks must be equal-length non-empty sequences, got {counts}, {ks}")
    if not (np.issubdtype(counts.dtype, np.integer) and np.issubdtype(ks.dtype, np.integer)) \
            or np.any(ks < 1) or np.any(counts < 1) or counts.sum() > n:
        raise ValueError(f"need integers k_i >= 1 and N_i >= 1 with sum N_i <= N, got N_i={counts}, k_i={ks}")
    L = float(np.log(n * n_arms))
    fails = ks > counts - np.sqrt(counts * L / 2)
    if np.any(fails):
        i = int(np.argmax(fails))
        raise ValueError(f"Theorem 3.13 assumes k_i <= N_i - sqrt(N_i ln(Nm) / 2) for every source arm, which fails "
                         f"for k={int(ks[i])}, N={int(counts[i])}")
    n_min, k_max = int(counts.min()), int(ks.max())
    if k_max >= n_min:
        raise ValueError(f"Theorem 3.13 assumes k_max < N_min, got k_max={k_max}, N_min={n_min}")
    g = check_real(gamma, "gamma", 0, low_open=True)
    n_star = check_real(n_star, "n_star", 1)
    check_bool(star_is_source, "star_is_source")
    g0 = gamma0_paper(n_min, k_max, L) if gamma0 is None else check_real(gamma0, "gamma0", 0, low_open=True, allow_inf=True)
    if not star_is_source:
        return float(np.sqrt(2 * L / n_star) + 2 / n)
    if g < g0:                                   # Theorem 3.3's two branches at (N_min, k_max), then +5/N
        return gaussian_branch_bound(n_min, k_max, g, L) + 5 / n
    return rollback_branch_bound(n_min, k_max, L) + 5 / n


# %%
from bandit_unlearning.mab.multisource import *  # noqa: F403

R_MC, SCALE = 20_000, 1.3
CONFIGS = [(n, g, k) for n in (2000, 4000) for g in (0.05, 0.5) for k in (40, 80)]
CASES = {"hard": (0, 1), "easy": (2, 3)}


def multi_losses(mu, n, gamma, k, sources, method, rng, reps=R_MC, z_scale=1.0):
    m = mu.size
    counts, sums = sample_statistics_fixed(mu, np.full(m, n // m), rng, size=reps)
    if method == "oracle":
        return mu.max() - mu[np.argmax(lcb_scores(counts, sums, 1 / n)[2], axis=-1)], 0.0
    dsum = np.stack([rng.hypergeometric(sums[:, a].astype(np.int64), (counts[:, a] - sums[:, a]).astype(np.int64), k)
                     for a in sources], axis=1).astype(float)
    kw = dict(gamma=gamma) if method != "rollback" else {}
    arms, noised, _ = unlearn_batch(counts, sums, 1 / n, list(sources), k, dsum,
                                    options=UnlearnOptions(method=method, threshold_scale=SCALE, **kw),
                                    z=z_scale * rng.standard_normal((reps, len(sources))))
    return mu.max() - mu[arms], noised.any(axis=1).mean()


def bound_313(n, gamma, k, case):
    L = np.log(5 * n)
    return theorem313_bound(n, 5, [n // 5] * 2, [k] * 2, n // 5, gamma, case == "hard",
                            gamma0=SCALE * gamma0_paper(n // 5, k, L))


n_settings = 2 * len(CASES) * len(CONFIGS)
p_fail = 1e-6 / (n_settings + 1)
mc = {}
for inst, mu in (("paper", np.array(PAPER_MEANS)), ("wide", WIDE_MEANS)):
    t = hoeffding_margin(R_MC, np.ptp(mu), p_fail)
    for case, sources in CASES.items():
        for n, g, k in CONFIGS:
            loss, frac_noised = multi_losses(mu, n, g, k, sources, "adaptive", rng)
            bound = bound_313(n, g, k, case)
            assert loss.mean() <= bound + t, (inst, case, n, g, k, loss.mean(), bound)
            mc[(inst, case, n, g, k, "Algorithm 7")] = (loss.mean(), frac_noised, bound)
            if inst == "paper":
                for method in ("gaussian", "rollback", "oracle"):
                    mc[(inst, case, n, g, k, method)] = (multi_losses(mu, n, g, k, sources, method, rng)[0].mean(),)
print(f"{n_settings} settings, {R_MC} replicates each: Algorithm 7's Monte Carlo sub-optimality <= Theorem 3.13 bound "
      f"+ margin everywhere (margins {hoeffding_margin(R_MC, np.ptp(PAPER_MEANS), p_fail):.4f} paper, "
      f"{hoeffding_margin(R_MC, np.ptp(WIDE_MEANS), p_fail):.4f} wide)")
print(f"{'instance':8} {'case':5} {'N':>5} {'gamma':>5} {'k':>3}  {'Alg 7':>7} {'noised':>6} {'bound':>7}"
      f"  {'Gaussian':>8} {'Rollback':>8} {'Oracle':>7}")
for inst in ("paper", "wide"):
    for case in CASES:
        for n, g, k in CONFIGS:
            a7, fn, b = mc[(inst, case, n, g, k, "Algorithm 7")]
            extra = "".join(f" {mc[(inst, case, n, g, k, mm)][0]:8.4f}" for mm in ("gaussian", "rollback", "oracle")) \
                if inst == "paper" else ""
            print(f"{inst:8} {case:5} {n:5d} {g:5} {k:3d}  {a7:7.4f} {fn:6.2f} {b:7.4f} {extra}")
informative = sum(mc[("wide", c, n, g, k, "Algorithm 7")][2] < np.ptp(WIDE_MEANS) for c in CASES for n, g, k in CONFIGS)
print(f"wide instance: bound below the largest gap in {informative} of {len(CASES) * len(CONFIGS)} settings")

n_b, g_b, k_b = 20_000, 0.1, 80
loss_ok, fn_ok = multi_losses(WIDE_MEANS, n_b, g_b, k_b, (0, 1), "adaptive", rng)
loss_bad, _ = multi_losses(WIDE_MEANS, n_b, g_b, k_b, (0, 1), "adaptive", rng, z_scale=n_b // 5)
b_b, t_b = bound_313(n_b, g_b, k_b, "hard"), hoeffding_margin(R_MC, np.ptp(WIDE_MEANS), p_fail)
print(f"broken variant (noise x N_min), wide, hard, N={n_b}: MC {loss_bad.mean():.4f} > bound + margin {b_b + t_b:.4f} "
      f"(correct: {loss_ok.mean():.4f}, Gaussian branch in {fn_ok:.0%} of replicates)")
assert fn_ok > 0.9 and loss_ok.mean() <= b_b + t_b < loss_bad.mean()

# %% [markdown]
# ## 8. Figure: the four methods of the paper's Figure 3, and the bound
#
# Paper instance, $\mathcal M_f$; left the hard case (deleting from arms 0 and 1), right the easy case
# (arms 2 and 3); one group per configuration $(N, \gamma, k)$.  In the hard case Algorithm 7 follows
# the Gaussian baseline where it adds noise ($\gamma < 1.3\gamma_0'$; at $N = 2000$, $\gamma = 0.5$, $k = 80$
# this costs more than rollback would) and rollback otherwise.  In the easy case the learner's arm is
# (almost) never a source arm, so Algorithm 7 rolls back and stays at the oracle, while the
# always-Gaussian baseline pays for noise that can lift a sub-optimal source arm above $a^\star$.  The
# Theorem 3.13 bound is drawn for Algorithm 7 (log scale; loose by one to two orders of magnitude on
# this instance).

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.3), sharey=True)
x = np.arange(len(CONFIGS))
for ax, case in zip(axes, CASES):
    for j, (method, mk) in enumerate((("oracle", "k_"), ("rollback", "^"), ("gaussian", "s"), ("Algorithm 7", "o"))):
        vals = [mc[("paper", case, n, g, k, method)][0] for n, g, k in CONFIGS]
        ax.plot(x + 0.08 * (j - 1.5), vals, mk, ms=8, label={"oracle": "Oracle (no deletion)", "rollback": "Rollback",
                                                            "gaussian": "Gaussian (both arms)"}.get(method, method))
    ax.plot(x, [mc[("paper", case, n, g, k, "Algorithm 7")][2] for n, g, k in CONFIGS], "r:", label="Theorem 3.13 bound")
    ax.set_xticks(x, [f"N={n}\n$\\gamma$={g}\nk={k}" for n, g, k in CONFIGS], fontsize=7)
    ax.set(yscale="log", title=f"{case} case: deleting from arms {CASES[case]}", ylabel=r"$E[\mu(a^\star) - \mu(\hat a')]$")
    ax.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# **Where Algorithm 7 is not competitive.**  The paper calls Algorithm 7 "consistently competitive" in
# Figure 3.  In the hard case $(N, \gamma, k) = (2000, 0.5, 80)$ the experiments' threshold is
# $1.3\gamma_0' = 0.52 > \gamma = 0.5$, so Algorithm 7 takes the noise branch on $a^\star$ — and loses to
# Rollback by a factor of two.  At the paper's scale for this one configuration (200 trajectories
# $\times$ 5 requests $\times$ 10 runs, through the experiment engine of chapter A8a):

# %%
from bandit_unlearning.experiments.paper_a import ProtocolA, evaluate  # noqa: E402
from bandit_unlearning.experiments.protocol import simulate_trajectories  # noqa: E402

f3_protocol = ProtocolA()
f3_methods = ("Oracle", "Rollback", "Gaussian", "Alg7")
f3 = []
for run in range(f3_protocol.n_runs):
    traj = simulate_trajectories(f3_protocol.means, "Mf", [2000], f3_protocol.n_trajectories, rng)
    f3.append(evaluate(traj, 0, [0, 1], 80, 0.5, f3_methods, rng, f3_protocol))
f3_mean = {m: float(np.mean([r[m] for r in f3])) for m in f3_methods}
g0p = 1.3 * float(gamma0_paper(400, 80, np.log(2000 * 5)))
print(f"hard case (2000, 0.5, 80): 1.3 gamma0' = {g0p:.3f} > gamma = 0.5 -> Algorithm 7 noises a*;  "
      + ", ".join(f"{m} {v:.4f}" for m, v in f3_mean.items()))
assert g0p > 0.5 and f3_mean["Alg7"] > 1.5 * f3_mean["Rollback"]

# %% [markdown]
# ## 9. The literal reference (chapter A3a, section 5)
#
# Algorithm 8, like Algorithm 3, plans from the released $\hat a = \pi(D)$: Algorithm 7 is
# $(\varepsilon, \delta)$-unlearning against the reference *given* $\pi(D)$, not against a learner that
# never saw $U$.  `reference="literal"` decides from public quantities only: if $\gamma < \gamma_0'$
# every source arm is noised (one $\sigma$, calibrated to the joint $L_2$ sensitivity when
# $(\varepsilon, \delta)$ is given), else every one is rolled back.  ("Literal" here names the reference
# world of Definition 2.1 as written, not section 6's literal reading of the pseudo-code.)  On a
# request that moves the
# learner's arm from source arm 0 to the untouched arm 2, the exact output distributions:

# %%
ms_state = LCBState([200, 200, 200], [120.0, 80.0, 116.0], 1 / 600)
ms_request = DeletionRequest([0] * 15 + [1] * 10, [1.0] * 15 + [0.0] * 10)
print(f"pi(D) = {ms_state.arm}, pi(D \\ U) = {rollback(ms_state, ms_request).arm}")
kw = dict(epsilon=2.0, delta=1e-3, calibration="analytic", sensitivity="exact", threshold_scale=20.0)
ms = {}
for rule in ("conditional", "literal"):
    for against in ("conditional", "literal"):
        p_u, p_r = output_distributions(ms_state, ms_request, options=UnlearnOptions(method="adaptive", reference=rule, **kw), against=against)
        ms[rule, against] = float(hockey_stick_delta(p_u, p_r, 2.0))
        print(f"rule {rule:11} vs {against:11} reference: delta(2) = {ms[rule, against]:.2e} (claimed 1e-3)")
assert ms["conditional", "conditional"] <= 1e-3 * (1 + 1e-9) and ms["conditional", "literal"] > 0.1
assert ms["literal", "literal"] <= 1e-3 * (1 + 1e-9)
res = unlearn(ms_state, ms_request, options=UnlearnOptions(method="adaptive", reference="literal", **kw), rng=rng)[1]
print(f"literal rule: branches {res.branches}, one sigma {res.sigma:.4f} for Delta = {res.delta_f:.4f} (joint), "
      f"holds against the {res.reference} reference")

# %% [markdown]
# The guarantee matrix (chapter P2) audits both rules against both references on worst-case data
# for one to sixteen source arms.

# %% [markdown]
# ## Summary
# - Multi-source requests run through the same entry points as chapter A3a: `unlearn`, `reference`
#   (Algorithm 8), `output_distributions`, and `unlearn_batch` with `arm`, `k`, `deleted_sums` per source
#   arm.  `"adaptive"` is Algorithm 7 with the **corrected rule** (noise iff $\hat a = a_{u_i}$ and
#   $\gamma < \gamma_0'$, rollback otherwise); with one source arm it is Algorithm 2 (checked line by line
#   on 2,000 random cases, and `arm=[a]` against `arm=a` in the batch).  `"gaussian"` noises every source
#   arm; its exact output distribution is a 1-D integral (`multi_noisy_argmax_distribution`), checked
#   against a closed form and $10^6$-sample Monte Carlo.  Noise on several arms is **one** Gaussian
#   mechanism whose privacy depends on the L2 norm of the whitened shift: with $(\varepsilon, \delta)$ given,
#   every noised arm gets one $\sigma$ calibrated to $\sqrt{\sum_a\Delta_a^2}$.  Per-arm calibration would
#   leak (released arm 7.4 and 43 times the claimed $\delta$ at 8 and 16 source arms, analytic
#   calibration; the score vector hundreds to thousands of times); with `gamma` alone the paper's
#   per-arm baseline is kept, as Figure 3 has it.  `bandit_unlearning.mab.multisource` exports
#   `theorem313_bound`.
# - Requests Algorithm 7 cannot certify ($k_{\max} > N_{\min}$; $3k/2N$ where Lemma A.1 fails) are
#   rolled back by default with a machine-readable `reason`; `fallback="refuse"` refuses them.
#   Algorithm 7 holds against the reference given $\pi(D)$; `reference="literal"` (noise every source
#   arm iff $\gamma < \gamma_0'$) holds against the literal one (section 9).
# - Theorem 3.13's constant is the proof's $+5/N$ in both branches.  In Figure 3's hard case
#   $(2000, 0.5, 80)$ Algorithm 7 takes the noise branch ($1.3\gamma_0' = 0.52 > 0.5$) and loses to
#   Rollback by a factor of about two (section 8), against the paper's "consistently competitive".
# - **Erratum E5, demonstrated:** the printed nesting of Algorithm 7 leaves the learner's source arm
#   untouched when $\gamma \ge \gamma_0'$; on the concrete dataset above it releases arm 0 with
#   certainty while the reference releases arm 1 — $\delta(\varepsilon) = 1$ at $(\varepsilon, \delta) =
#   (0.5, 10^{-5})$ — and it violates $(\varepsilon, \delta)$ (by more than $10^{-9}$ relative) in 10,358 of
#   the 27,216 audited settings, with $\delta(\varepsilon) = 1$ in every one of them, while the corrected rule
#   passes the same exact audit
#   everywhere: largest $\delta(\varepsilon)/\delta$ = 1 to rounding (analytic calibration with the exact
#   sensitivity is tight; 0.0011 with the paper's calibration at $\varepsilon < 1$), 10 competitor
#   candidates per setting, a noised arm reachable in 1,976 settings.
# - Theorem 3.13's bound held in all 32 Monte Carlo settings (paper's Figure 3 configurations, hard and
#   easy, two instances, 20,000 replicates each); a variant with too much noise violates it.
