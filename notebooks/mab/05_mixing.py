# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.mab.mixing
# ---

# %% [markdown]
# # Chapter A5 — Mixing rollback and noise (Algorithms 4 and 5)
#
# *Paper A, Appendix A: Algorithm 4 (mixing), Algorithm 5 (its reference), Theorems A.9 and A.10
# (Paper A Algorithms 4-5).  The mechanism runs through the entry points of chapter A3a
# (`unlearn`/`reference`/`output_distributions`/`unlearn_batch` with
# `options=UnlearnOptions(method="mixing", ...)`); this
# chapter exports the utility bound, `bandit_unlearning.mab.mixing`.*
#
# Algorithm 2 chooses between two extremes: roll back all $k$ deleted points (exact, but the arm
# loses $k$ samples) or none of them (keep every sample, add noise calibrated to $k$ points).
# **Mixing** interpolates: roll back a random $k'$ of the $k$ points and hide the other $k - k'$
# behind noise.  Is some middle ground better than both extremes?  The paper's answer (Theorem
# A.10) is no — at least for its upper bound.  This chapter
# 1. states Algorithms 4 and 5 and derives why mixing is private (Theorem A.9): the rolled-back part
#    is exact, the rest has the sensitivity of $k - k'$ points among $N(a_0) - k'$;
# 2. computes the unlearned output distribution **exactly** — a finite mixture over the random
#    rolled-back subset — and checks it against the mechanism by Monte Carlo;
# 3. audits privacy exactly (hockey-stick divergence) over a grid of worst-case settings, and shows the
#    audit rejecting two broken variants (sensitivity over $N$ instead of $N - k'$; forgetting to
#    roll back $U'$);
# 4. derives the shape of Theorem A.10's bound in $k'$ and checks on a grid that its minimum is
#    always at $k' = 0$ or $k' = k$ (and that a broken bound would have interior minima);
# 5. measures sub-optimality against $\eta = k'/k$ by Monte Carlo (the paper's Figure 2 setting) and
#    checks Theorem A.10's bound.

# %%
import itertools

import matplotlib.pyplot as plt
import numpy as np
from scipy import special, stats

from bandit_unlearning.mab.bounds import gamma0_exact
from bandit_unlearning.mab.data import PAPER_MEANS, sample_statistics_fixed
from bandit_unlearning.mab.lcb import LCBState, lcb_scores
from bandit_unlearning.mab.mechanisms import DeletionRequest, exact_sensitivity, rollback
from bandit_unlearning.mab.unlearn import (
    noise_sensitivity, noisy_argmax_distribution, output_distributions, reference, unlearn_batch, UnlearnOptions,
)
from bandit_unlearning.protocol import unlearn
from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.privacy.audit import hockey_stick_delta
from bandit_unlearning.privacy.gaussian import analytic_gaussian_sigma, gaussian_gamma

rng = np.random.default_rng(20260605)
WIDE_MEANS = np.array([0.9, 0.6, 0.5, 0.4, 0.3])

# %% [markdown]
# ## 1. Statement
#
# **Algorithm 4 (mixing).** Input: $\hat a = \pi(D)$, a request $U$ of $k$ points of arm $a_0$,
# $T(D)$, $\tau$, and a parameter $k' \in [0, k]$ (or $\eta = k'/k$).
# 1. If $\hat a \ne a_0$, set $k' = k$.
# 2. Roll back a uniformly random subset $U' \subseteq U$ of size $k'$: $f_{a_0} \leftarrow f_{a_0}(D \setminus U')$.
# 3. Add $\nu \sim \mathcal N(0, \sigma^2)$ to $f_{a_0}$, with $\sigma = \Delta_f\gamma$ and
#    $\Delta_f = \dfrac{3(k - k')}{2(N(a_0) - k')}$.
# 4. Output $\arg\max_a f_a$ (ties to the lowest index, E6).
#
# **Algorithm 5 (reference).** On $D \setminus U$, with the same $k'$ rule (it reads only $\hat a$,
# $a_0$, $k$ — public in both worlds): add the same $\nu$ to $f_{a_0}(D \setminus U)$, output the argmax.
#
# **Theorem A.9 (privacy of mixing, as Paper A Algorithms 4-5 pairs it with A.10).** Algorithm 4 is $(\varepsilon, \delta)$-unlearning for the LCB learner,
# with $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$.
#
# **Theorem A.10 (utility, $\mathcal M_f$, $a_0 = a^\star$, $\tau = 1/N$).**
#
# $$
# E[\mu(a^\star) - \mu(\hat a')] \le B(k') := \sqrt{\frac{2\ln(Nm)}{N(a_0) - k'}} +
#   \frac{3(k - k')\gamma}{2\sqrt{2\pi}\,(N(a_0) - k')} + \frac4N ,
# $$
#
# and $B$, as a function of $k'$, is minimised at $k' = 0$ or $k' = k$: mixing never improves on the
# better of the two pure mechanisms (in this bound).  $\eta = 0$ is the Gaussian mechanism (but only
# when $\hat a = a_0$), $\eta = 1$ is rollback.
#
# ## 2. Derivation: why mixing is private, and what its output distribution is
#
# Fix $D$, $U$ and — for a moment — the rolled-back subset $U'$.  The unlearned world releases
# $f_{a_0}(D \setminus U') + \nu$; the reference releases $f_{a_0}(D \setminus U) + \nu$; every other
# score is the same in both (a single-source request touches only $a_0$).  Now
# $D \setminus U = (D \setminus U') \setminus (U \setminus U')$: the two worlds differ by deleting
# $k - k'$ points from an arm that holds $N(a_0) - k'$ points.  That is exactly the situation of
# Lemma A.1 with $N \to N(a_0) - k'$ and $k \to k - k'$, so
# $$
# |f_{a_0}(D\setminus U') - f_{a_0}(D\setminus U)| \le \frac{3(k-k')}{2(N(a_0)-k')}
# \quad\text{if}\quad k - k' \le (N(a_0)-k') - \sqrt{(N(a_0)-k')L/2},
# $$
# i.e. $k \le N(a_0) - \sqrt{(N(a_0) - k')L/2}$ — implied by Algorithm 2's condition
# $k \le N(a_0) - \sqrt{N(a_0)L/2}$.  (The exact worst case is `exact_sensitivity(N - k', k - k', L)`,
# erratum E2; `sensitivity="paper"` refuses noise where the condition fails.)  With
# $\sigma = \Delta_f\gamma$ the Gaussian mechanism and post-processing give, **for every fixed
# $U'$**, a pair $(P_{U'}, Q)$ with $\delta_\varepsilon(P_{U'} \| Q) \le \delta$ and
# $\delta_\varepsilon(Q \| P_{U'}) \le \delta$.  The real unlearned output is the mixture
# $P = \sum_{U'} \binom{k}{k'}^{-1} P_{U'}$, and the hockey-stick divergence is jointly convex, so
# $\delta_\varepsilon(P \| Q) \le \max_{U'} \delta_\varepsilon(P_{U'} \| Q) \le \delta$ (and the same
# swapped).  The rolled-back part contributes nothing — it is exact.  When $\hat a \ne a_0$ both
# worlds roll everything back: $(0, 0)$.
#
# **The exact output distribution.** $f_{a_0}(D \setminus U')$ depends on $U'$ only through the
# reward sum $s'$ of the rolled-back points.  The request carries the deleted rewards (it must, to be
# rolled back), so the distribution of $s'$ is known: for 0/1 rewards with $s$ ones among the $k$
# deleted, the number of ones in a uniformly random $k'$-subset is hypergeometric$(s, k - s, k')$; for
# general rewards it is a multivariate hypergeometric over the distinct values
# (`subset_sum_distribution`).  Given $s'$, the output distribution is chapter A3b's closed form
# $P[\hat a' = a_0] = \Phi((f_{a_0} - f_b)/\sigma)$.  So
# $$
# P[\hat a' = a] = \sum_{s'} P[S' = s']\; \mathrm{noisy\_argmax}\big(f_{a_0}(D\setminus U'_{s'}),\ f_{-a_0};\ \sigma\big)_a ,
# $$
# a **finite mixture of closed forms — exact**, not an approximation.  `output_distributions(...,
# options=UnlearnOptions(method="mixing", ...))` computes it; `unlearn` draws $U'$ with `rng.choice` and `unlearn_batch` either
# takes the rolled-back reward sums or draws them hypergeometrically.

# %% [markdown]
# **The code.**  Two pieces of `bandit_unlearning.mab.unlearn` serve mixing only, so they are written
# here: the exact distribution of the rolled-back reward sum $s'$ (hypergeometric for 0/1 rewards, an
# exact enumeration otherwise), and the scores of $D \setminus U'$ for given sums $s'$ — used by `unlearn`
# (one drawn $U'$) and by `output_distributions` (every $s'$ at once).  The entry points that call them
# are in chapters A3a and A3b.

# %% tags=["export:bandit_unlearning.mab.unlearn"]
import math

import numpy as np
from scipy import stats

from bandit_unlearning.checks import check_int, check_real_array
from bandit_unlearning.mab.lcb import LCBState, lcb_scores

MAX_SUBSET_SUMS = 200_000      # support points enumerated by ``subset_sum_distribution`` (general rewards)


def subset_sum_distribution(values, size: int):
    """Exact distribution of the sum of a uniformly random subset of ``size`` of the numbers ``values``
    (drawn without replacement; the rolled-back subset ``U'`` of mixing).

    0/1 values: the number of ones is hypergeometric(ones, zeros, size).  General values: a
    multivariate hypergeometric over the distinct values, enumerated exactly (integer weights
    ``prod_v C(c_v, j_v)`` over ``C(k, size)``) and merged by sum (to 1e-10); refused with a
    ValueError if the enumeration would exceed ``MAX_SUBSET_SUMS`` states.

    Parameters
    ----------
    values : array_like of float
        The ``k`` numbers (the deleted rewards), flattened.
    size : int
        How many of them the subset holds, in ``[0, k]``.

    Returns
    -------
    sums : numpy.ndarray
        The distinct subset sums, increasing.
    probs : numpy.ndarray
        Their probabilities, summing to 1.
    """
    values = check_real_array(values, "values").ravel()
    k = values.size
    size = check_int(size, "size", 0, k)
    if np.all((values == 0) | (values == 1)):
        ones = int(values.sum())
        j = np.arange(max(0, size - (k - ones)), min(size, ones) + 1)
        p = stats.hypergeom.pmf(j, k, ones, size)
        return j.astype(float), p / p.sum()
    distinct, mult = np.unique(values, return_counts=True)
    states = {(0, 0.0): (0.0, 1)}             # (points chosen, rounded sum) -> (sum, integer weight)
    for v, c in zip(distinct, mult):
        new = {}
        for (n_chosen, _), (s, w) in states.items():
            for j in range(0, min(int(c), size - n_chosen) + 1):
                s2 = s + j * v
                key = (n_chosen + j, round(s2, 10))
                old = new.get(key, (s2, 0))
                new[key] = (old[0], old[1] + w * math.comb(int(c), j))
            if len(new) > MAX_SUBSET_SUMS:                 # refuse before the table outgrows memory
                break
        if len(new) > MAX_SUBSET_SUMS:
            raise ValueError(f"the subset sums of {k} distinct-valued rewards are too many to enumerate "
                             f"(> {MAX_SUBSET_SUMS}); round the rewards or use 0/1 rewards")
        states = new
    total = math.comb(k, size)
    final = sorted((s, w) for (n_chosen, _), (s, w) in states.items() if n_chosen == size)
    sums = np.array([s for s, _ in final])
    probs = np.array([w / total for _, w in final])
    return sums, probs / probs.sum()


def _partial_rollback_scores(state: LCBState, arm: int, k_rollback: int, rolled_sums) -> np.ndarray:
    """Score vectors of ``D \\ U'`` for rolled-back parts ``U'`` of ``k_rollback`` points of ``arm`` whose
    rewards sum to ``rolled_sums`` (shape ``(J,)``): shape ``(J, m)``, same ``tau`` (E12)."""
    rolled_sums = np.atleast_1d(np.asarray(rolled_sums, dtype=float))
    counts = np.tile(state.counts, (rolled_sums.size, 1))
    sums = np.tile(state.reward_sums, (rolled_sums.size, 1))
    counts[:, arm] -= k_rollback
    sums[:, arm] = np.clip(sums[:, arm] - rolled_sums, 0.0, counts[:, arm])
    return lcb_scores(counts, sums, state.tau)[2]

# %% [markdown]
# ## 3. Using it
#
# A small dataset: arm 0 (the learner's) with 60 points, a competitor close behind, and a request of
# 12 points of arm 0, 7 of them with reward 1.  Mixing with $k' = 6$ (or $\eta = 0.5$) rolls back a
# random half of the request; the result records which points (`rolled_back`, positions in the
# request) and the plan ($k'$, $\Delta_f$, $\sigma$).

# %%
state = LCBState(counts=[60, 60, 60], reward_sums=[36.0, 33.0, 20.0], tau=1 / 180)
U = DeletionRequest([0] * 12, [1.0] * 7 + [0.0] * 5)
for kw in (dict(k_prime=6), dict(eta=0.5), dict(eta=0.0), dict(eta=1.0)):
    res = unlearn(state, U, options=UnlearnOptions(method="mixing", gamma=1.0, **kw), rng=rng)[1]
    p = res.plans[0]
    print(f"{str(kw):16} -> branch {res.branch:8} k'={p.k_rollback:2d} Delta_f={p.delta_f:.4f} sigma={p.sigma:.4f} "
          f"rolled back {res.rolled_back} -> arm {res.arm}")
ref = reference(rollback(state, U), U, options=UnlearnOptions(method="mixing", gamma=1.0, k_prime=6), learner_arm=state.arm, rng=rng)
print(f"reference (Algorithm 5): sigma {ref.sigma:.4f} on f_a0(D \\ U), rolled back {ref.rolled_back} -> arm {ref.arm}")
other = unlearn(state, DeletionRequest([1] * 12, [0.0] * 12), options=UnlearnOptions(method="mixing", gamma=1.0, k_prime=6), rng=rng)[1]
print(f"request from arm 1 != a_hat: k' = k, branch {other.branch}")
assert other.branch == "rollback" and ref.rolled_back == ()

# %% [markdown]
# **Bad input** is refused with a `ValueError` naming the rule, before anything is drawn; the
# generator, the state and the request are unchanged.  The sensitivity rule of E2 applies to the
# noised part: with $k = 50$ of $N(a_0) = 60$ points and $k' = 10$, the $40$ points left for the noise
# violate Lemma A.1's condition for $N - k' = 50$ points, and `sensitivity="paper"` cannot certify the
# noise.  That request, and a multi-source one, are refused here because the calls ask for
# `fallback="refuse"`; by default they are rolled back (exact) and the result's `reason` says why
# (`"condition_failed"`, `"single_source_only"`, printed below).

# %%
rng_probe = np.random.default_rng(3)
before = rng_probe.bit_generator.state
big = DeletionRequest([0] * 50, [1.0] * 36 + [0.0] * 14)
bad = {
    "k' > k": (U, dict(k_prime=13)),
    "k' < 0": (U, dict(k_prime=-1)),
    "k' not an integer": (U, dict(k_prime=2.5)),
    "eta > 1": (U, dict(eta=1.5)),
    "eta < 0": (U, dict(eta=-0.1)),
    "both k' and eta": (U, dict(k_prime=3, eta=0.25)),
    "neither k' nor eta": (U, dict()),
    "multi-source mixing": (DeletionRequest([0, 1], [1.0, 0.0]), dict(k_prime=1, fallback="refuse")),
    "3k/2N where A.1 fails": (big, dict(k_prime=10, fallback="refuse")),
}
for rule, (req_, kw) in bad.items():
    for call in (lambda: unlearn(state, req_, options=UnlearnOptions(method="mixing", gamma=1.0, **kw), rng=rng_probe)[1],
                 lambda: output_distributions(state, req_, options=UnlearnOptions(method="mixing", gamma=1.0, **kw))):
        try:
            call()
            raise AssertionError(rule)
        except (TypeError, ValueError) as err:
            msg = f"{type(err).__name__}: {err}"
    print(f"{rule:22}: {msg}")
assert rng_probe.bit_generator.state == before
for rule in ("multi-source mixing", "3k/2N where A.1 fails"):
    req_, kw = bad[rule]
    res = unlearn(state, req_, options=UnlearnOptions(method="mixing", gamma=1.0, **{**kw, "fallback": "rollback"}), rng=rng_probe)[1]
    print(f"default fallback, {rule:22}: branches {res.branches}, reason {res.reason!r}")
    assert res.fell_back and res.arm == rollback(state, req_).arm
assert np.array_equal(state.counts, [60, 60, 60]) and np.array_equal(U.rewards, [1.0] * 7 + [0.0] * 5)
res = unlearn(state, big, options=UnlearnOptions(method="mixing", gamma=1.0, k_prime=10, sensitivity="exact"), rng=rng_probe)[1]
print(f"with sensitivity='exact': Delta_f = {res.delta_f:.4f} = exact_sensitivity(50, 40, L) = "
      f"{exact_sensitivity(50, 40, state.log_term):.4f}")

# %% [markdown]
# ## 4. The exact output distribution, checked
#
# **Checks.**
# 1. `subset_sum_distribution` against brute force: every $k'$-subset of small reward vectors
#    (0/1 and general values) enumerated with `itertools.combinations`; probabilities must agree to
#    $10^{-12}$.
# 2. `unlearn_batch` against the scalar `unlearn`/`reference` (its oracle): 300 random small cases,
#    several $\eta$ and option sets, both worlds.  Replicate $r$ gets the rolled-back reward sum of the
#    subset the scalar `unlearn` drew from its seeded generator, and the standard normal it drew next;
#    the released arm, the noise decision and $\sigma$ must agree exactly.
# 3. The mixture against the mechanism: $10^6$ batch runs (rolled-back sums drawn hypergeometrically
#    inside `unlearn_batch`) on three cases; each empirical frequency must be within
#    $t = \sqrt{\ln(2C/10^{-6})/(2n)}$ of the exact probability, for all $C$ comparisons at once
#    (Hoeffding and a union bound: a correct implementation fails with probability $< 10^{-6}$).
#    The same test rejects a broken "exact" distribution that plugs in the *mean* rolled-back sum
#    $k's/k$ instead of mixing over its distribution — visibly so in the first case, where the noise
#    ($\gamma = 0.02$, $\sigma = 0.01$) is small against the spread of the mixture components
#    (about $0.037$); when the noise dominates, the two are close and the test cannot tell them apart.

# %%
worst_gap = 0.0
for values in ([1, 0, 1, 1, 0, 0, 1], [0.25, 0.5, 0.5, 1.0, 0.0, 0.75], [0.3] * 4 + [0.9, 0.1]):
    values = np.array(values, dtype=float)
    for size in range(values.size + 1):
        sums, probs = subset_sum_distribution(values, size)
        brute = [round(sum(c), 10) for c in itertools.combinations(values, size)]
        u, cnt = np.unique(brute, return_counts=True)
        assert np.allclose(sums, u, atol=1e-9) and np.allclose(probs, cnt / cnt.sum(), rtol=0, atol=1e-12)
        worst_gap = max(worst_gap, np.abs(probs - cnt / cnt.sum()).max())
print(f"subset_sum_distribution == brute force on 3 reward vectors, every size; largest gap {worst_gap:.1e}")


def scalar_draws(seed, k, k_prime):
    """The subset and the standard normal that ``unlearn`` draws from default_rng(seed) (mixing, 0 < k' < k)."""
    g = np.random.default_rng(seed)
    subset = g.choice(k, size=k_prime, replace=False) if 0 < k_prime < k else np.arange(k_prime)
    return subset, g.standard_normal()


reps, k_small, tau_small = 300, 8, 1 / 120
counts_r, sums_r = sample_statistics_fixed([0.5, 0.45, 0.4], [40, 40, 40], rng, size=reps)
seeds = rng.integers(2**32, size=reps)
n_compared, n_noised = 0, 0
for eta, opts in ((0.25, dict(gamma=0.6)), (0.5, dict(gamma=1.5)), (0.75, dict(epsilon=0.9, delta=0.1, calibration="analytic",
                                                                               sensitivity="exact")), (0.0, dict(gamma=0.3))):
    k_prime = UnlearnOptions("mixing", eta=eta, gamma=1.0).k_rollback_for(k_small)
    rewards_r = [rng.permutation(np.r_[np.ones(int(s)), np.zeros(k_small - int(s))])
                 for s in rng.hypergeometric(sums_r[:, 0].astype(int), (40 - sums_r[:, 0]).astype(int), k_small)]
    draws = [scalar_draws(sd, k_small, k_prime) for sd in seeds]
    rolled = np.array([rw[sub].sum() for rw, (sub, _) in zip(rewards_r, draws)])
    z_r = np.array([z for _, z in draws])
    dsum = np.array([rw.sum() for rw in rewards_r])
    for world in ("unlearned", "reference"):
        arms_b, noised_b, sigma_b = unlearn_batch(counts_r, sums_r, tau_small, 0, k_small, dsum,
                                                  options=UnlearnOptions(method="mixing", eta=eta, **opts),
                                                  world=world, rolled_sums=rolled, z=z_r)
        for r in range(reps):
            st = LCBState(counts_r[r], sums_r[r], tau_small)
            req = DeletionRequest([0] * k_small, rewards_r[r])
            g = np.random.default_rng(seeds[r])
            if world == "unlearned":
                res = unlearn(st, req, options=UnlearnOptions(method="mixing", eta=eta, **opts), rng=g)[1]
            else:
                if 0 < k_prime < k_small:           # the reference draws no subset: skip it, same normal
                    g.choice(k_small, size=k_prime, replace=False)
                res = reference(rollback(st, req), req, options=UnlearnOptions(method="mixing", eta=eta, **opts), learner_arm=st.arm, rng=g)
            assert res.arm == arms_b[r] and res.plans[0].noised == noised_b[r] and res.sigma == sigma_b[r], (eta, world, r)
            n_compared += 1
            n_noised += int(noised_b[r])
print(f"unlearn_batch == scalar unlearn/reference (mixing) on {n_compared} runs ({n_noised} with noise)")

# %%
n_mc = 1_000_000
cases = [("small noise, wide mixture", LCBState([40, 40], [22.0, 21.0], 1 / 80), DeletionRequest([0] * 20, [1.0] * 10 + [0.0] * 10),
          dict(gamma=0.02, k_prime=10)),
         ("eta = 0.25, three arms", LCBState([100, 100, 100], [60.0, 55.0, 54.0], 1 / 300),
          DeletionRequest([0] * 24, [1.0] * 9 + [0.0] * 15), dict(gamma=0.8, eta=0.25)),
         ("eta = 0.75, analytic", LCBState([50, 50], [30.0, 28.0], 1 / 100), DeletionRequest([0] * 16, [1.0] * 8 + [0.0] * 8),
          dict(epsilon=0.5, delta=0.01, calibration="analytic", sensitivity="exact", eta=0.75))]
n_comparisons = sum(2 * st.n_arms for _, st, _, _ in cases)
t_hoeff = np.sqrt(np.log(2 * n_comparisons / 1e-6) / (2 * n_mc))


def plug_in_mean(st, req, opts):
    """A BROKEN 'exact' distribution: the mean rolled-back sum k's/k instead of the mixture over it."""
    options = UnlearnOptions("mixing", **opts)
    kp = options.k_rollback_for(req.k)
    sigma = options.sigma_for(noise_sensitivity(st.counts[0], req.k, kp, st.log_term, options.sensitivity))
    c, s = st.counts.copy(), st.reward_sums.copy()
    c[0] -= kp
    s[0] -= kp * req.rewards.sum() / req.k
    base = st.scores.copy()
    base[0] = lcb_scores(c, s, st.tau)[2][0]
    return noisy_argmax_distribution(base, 0, sigma)


largest_dev, rejected = 0.0, 0
for name, st, req, opts in cases:
    p_u, p_r = output_distributions(st, req, options=UnlearnOptions(method="mixing", **opts))
    c, s = np.tile(st.counts, (n_mc, 1)), np.tile(st.reward_sums, (n_mc, 1))
    dsum = np.full(n_mc, req.rewards.sum())
    for world, p in (("unlearned", p_u), ("reference", p_r)):
        arms_mc, noised_mc, _ = unlearn_batch(c, s, st.tau, 0, req.k, dsum, options=UnlearnOptions(method="mixing", **opts),
                                              world=world, rng=rng)
        assert noised_mc.all()
        freq = np.bincount(arms_mc, minlength=st.n_arms) / n_mc
        largest_dev = max(largest_dev, np.abs(freq - p).max())
        assert np.all(np.abs(freq - p) <= t_hoeff), (name, world, freq, p)
        if world == "unlearned":
            broken = plug_in_mean(st, req, opts)
            rejected += int(np.any(np.abs(freq - broken) > t_hoeff))
            print(f"{name:28} p_unlearned = {np.round(p_u, 4)}  (plug-in mean: {np.round(broken, 4)})  "
                  f"p_reference = {np.round(p_r, 4)}")
print(f"largest |frequency - exact| = {largest_dev:.5f} <= t = {t_hoeff:.5f}; "
      f"the plug-in-mean distribution is rejected in {rejected} of {len(cases)} cases")
assert rejected >= 1

# %% [markdown]
# ## 5. Theorem A.9, audited exactly
#
# **Exact audit.** As in chapter A3c, for a finite-output mechanism the smallest $\delta$ at which the
# unlearned output $P$ and the reference $Q$ satisfy Definition 2.1 at $\varepsilon$ is the
# hockey-stick divergence $\max\{\sum_a (P_a - e^\varepsilon Q_a)_+,\ \sum_a (Q_a - e^\varepsilon P_a)_+\}$,
# and we evaluate it on worst-case datasets.
#
# *Datasets.* Two arms of $N$ points each ($\tau = 1/(2N)$, $L = \ln 4N$); the request deletes $k$
# points of arm $a_0 = 0$.  Rewards of arm 0: **deleted 1, kept 0** (the worst case of Lemma A.1 — and
# the rolled-back subset is then deterministic, all ones: the audit is of $P_{U'}$ itself), **deleted
# 0, kept 1** (the reverse), and two datasets where **half the deleted rewards are 1** (kept 0 or 1),
# where the released score is a genuine mixture over hypergeometric $s'$.  By the joint-convexity
# argument the mixed datasets cannot be worse than the pure ones; they test the mixture code and
# are audited for $N \le 300$ only (their mixtures have up to $k'+1$ components).
#
# *Competitor.* Arm 1's score $M$ ranges over what $N$ rewards in $[0,1]$ allow,
# $[-\sqrt{L/2N},\ 1 - \sqrt{L/2N}]$, and mixing adds noise only if $\hat a = a_0$, i.e.
# $M \le f_{a_0}(D)$.  For a deterministic $U'$ the worst $M$ is where the privacy loss equals
# $\varepsilon$, $t^\star_\pm = \bar\mu \pm \varepsilon\sigma^2/|\mu_1 - \mu_2|$ (chapter A3c), clipped to the
# feasible interval; for mixtures we take the $t^\star_\pm$ of every mixture component with
# probability $\ge 10^{-15}$ plus a 41-point grid over the feasible interval, and both interval
# ends.  (A search can only *under*-estimate the worst $\delta$ for mixtures, which would make the audit
# weaker, never give a false alarm; components dropped below $10^{-15}$ are added to $\delta$ in full,
# which only makes it larger.)
#
# *Grid.* $N \in \{10, 20, 50, 100, 300, 1000, 3000\}$; $k \in$ {10%, 50%, 100%} of Lemma A.1's
# largest $k$; $\eta \in \{0, 0.25, 0.5, 0.75\}$ ($k' = \lfloor \eta k + 1/2\rfloor$; when that rounds to
# $k' = k$ no noise is added and $\delta = 0$); $\delta \in \{10^{-6}, 10^{-3}, 0.05\}$;
# $\varepsilon \in \{0.1, 0.5, 0.99\}$ with the paper's calibration (proven there, E1) and additionally
# $\{2, 5\}$ with the analytic one; sensitivity "paper" and "exact".  Everything is vectorised over
# the competitor candidates and the mixture components.  A random sample of audited points is then
# recomputed through the public path (`LCBState`, `DeletionRequest`, `output_distributions`,
# `hockey_stick_delta`) and must agree.
#
# *Broken variants*, which the same audit must reject:
# (a) **sensitivity over $N$**: $\Delta_f = 3(k-k')/(2N(a_0))$ (or the exact sensitivity of deleting
#     $k - k'$ of $N(a_0)$ points) — forgetting that $U'$ is already gone, so too little noise;
# (b) **no rollback**: noise calibrated for $k - k'$ points among $N - k'$, but added to
#     $f_{a_0}(D)$ — forgetting to roll back $U'$ (the two worlds then differ by all $k$ points).

# %%
import functools

N_AUDIT = [10, 20, 50, 100, 300, 1000, 3000]
ETA_AUDIT = [0.0, 0.25, 0.5, 0.75]
EPS_PROVEN, EPS_LARGE, DELTAS = [0.1, 0.5, 0.99], [2.0, 5.0], [1e-6, 1e-3, 0.05]
KINDS = {"deleted 1, kept 0": (1.0, 0.0), "deleted 0, kept 1": (0.0, 1.0),
         "half deleted 1, kept 0": (0.5, 0.0), "half deleted 1, kept 1": (0.5, 1.0)}
MIXED_MAX_N = 300
PRUNE = 1e-15


def b_of(n, L):
    return np.sqrt(L / (2 * n))


def k_values(n):
    L = np.log(4.0 * n)
    k_cond = int(np.floor(n - np.sqrt(n * L / 2)))
    return sorted({max(1, int(round(f * k_cond))) for f in (0.1, 0.5, 1.0)})


_unit = {}


def unit_sigma(eps, delta, calibration):
    if calibration == "paper":
        return gaussian_gamma(eps, delta)
    if (eps, delta) not in _unit:
        _unit[(eps, delta)] = analytic_gaussian_sigma(1.0, eps, delta)
    return _unit[(eps, delta)]


@functools.cache                 # the same (N, k, k', dataset) recurs for every (eta, eps, delta, sensitivity)
def setting_scores(n, k, k_prime, kind, variant):
    """f_a0 on D, on D \\ U, and on D \\ U' for every rolled-back sum s' (components, weights, pruned mass)."""
    L = np.log(4.0 * n)
    frac_del, frac_kept = KINDS[kind]
    s = int(np.floor(frac_del * k))
    kept = frac_kept * (n - k)
    f_d = (s + kept) / n - b_of(n, L)
    f_ref = kept / (n - k) - b_of(n - k, L)
    if variant == "no rollback" or k_prime == 0:
        return f_d, f_ref, np.array([f_d]), np.array([1.0]), 0.0
    j = np.arange(max(0, k_prime - (k - s)), min(k_prime, s) + 1)
    w = stats.hypergeom.pmf(j, k, s, k_prime)
    keep = w >= PRUNE
    f_j = (s + kept - j[keep]) / (n - k_prime) - b_of(n - k_prime, L)
    return f_d, f_ref, f_j, w[keep], float(w[~keep].sum())


def mixture_delta(f_j, w, f_ref, m_values, sigma, eps):
    """Exact hockey-stick delta of (mixture over f_j, reference f_ref) against a competitor at each M."""
    # the standard normal cdf Phi(z) = ndtr(z) and sf 1 - Phi(z) = ndtr(-z): what stats.norm.cdf / .sf
    # compute, bit for bit, without their per-call argument handling (this runs ~40,000 times)
    z_u = (f_j[None, :] - m_values[:, None]) / sigma
    p0 = (w[None, :] * special.ndtr(z_u)).sum(axis=1)           # P[a0] unlearned
    p1 = (w[None, :] * special.ndtr(-z_u)).sum(axis=1)
    z_r = (f_ref - m_values) / sigma
    q0 = special.ndtr(z_r)
    q1 = special.ndtr(-z_r)
    e = np.exp(eps)
    d1 = np.clip(p0 - e * q0, 0, None) + np.clip(p1 - e * q1, 0, None)
    d2 = np.clip(q0 - e * p0, 0, None) + np.clip(q1 - e * p1, 0, None)
    return np.maximum(d1, d2)


@functools.cache                 # the same for every dataset (kind) of a setting
def setting_k_prime(n, k, eta, eps, delta, calibration, sens):
    """k' of the mechanism's options for one setting."""
    options = UnlearnOptions("mixing", epsilon=eps, delta=delta, calibration=calibration, sensitivity=sens, eta=eta)
    return options.k_rollback_for(k)


@functools.cache                 # the same for every dataset and every (eps, delta) of a setting
def setting_sensitivity(n, k, k_prime, sens, variant):
    """Delta_f of the noise: the mechanism's, or the broken variant's (sensitivity over N)."""
    L = np.log(4.0 * n)
    if variant == "sensitivity over N":
        return 3 * (k - k_prime) / (2 * n) if sens == "paper" else exact_sensitivity(n, k - k_prime, L)
    return float(noise_sensitivity(n, k, k_prime, L, sens))


def audit_setting(n, k, eta, eps, delta, calibration, sens, kind, variant="correct"):
    """Worst delta over the competitor for one setting and dataset; returns (delta, M, noised)."""
    k_prime = setting_k_prime(n, k, eta, eps, delta, calibration, sens)
    if k_prime == k:
        return 0.0, np.nan, False
    L = np.log(4.0 * n)
    delta_f = setting_sensitivity(n, k, k_prime, sens, variant)
    sigma = delta_f * unit_sigma(eps, delta, calibration)
    f_d, f_ref, f_j, w, pruned = setting_scores(n, k, k_prime, kind, variant)
    lo, hi = -b_of(n, L), min(1 - b_of(n, L), f_d - 1e-9)      # noise needs a_hat = a0: M <= f_a0(D)
    if hi < lo:
        return 0.0, np.nan, False
    gaps = np.abs(f_j - f_ref)
    shift = eps * sigma**2 / np.where(gaps > 0, gaps, np.inf)
    mids = (f_j + f_ref) / 2
    cand = np.concatenate([mids + shift, mids - shift, np.linspace(lo, hi, 41), [lo, hi]])
    cand = np.unique(np.clip(cand, lo, hi))
    d = mixture_delta(f_j, w, f_ref, cand, sigma, eps) + pruned
    i = int(np.argmax(d))
    return float(d[i]), float(cand[i]), True


def settings_list():
    rows = []
    for calibration, eps_list in (("paper", EPS_PROVEN), ("analytic", EPS_PROVEN + EPS_LARGE)):
        for n in N_AUDIT:
            for k in k_values(n):
                for eta, eps, delta, sens in itertools.product(ETA_AUDIT, eps_list, DELTAS, ("paper", "exact")):
                    rows.append((n, k, eta, eps, delta, calibration, sens))
    return rows


def run_audit(variant):
    out = []
    for setting in settings_list():
        n = setting[0]
        kinds = [kd for kd in KINDS if n <= MIXED_MAX_N or not kd.startswith("half")]
        # the dataset shown is the first (in KINDS order) whose delta is largest up to rounding
        best = max((audit_setting(*setting, kd, variant) + (kd,) for kd in kinds),
                   key=lambda r: round(r[0] / setting[4], 6))
        out.append(setting + best)
    return out


audit_rows = run_audit("correct")
ratios = np.array([r[7] / r[4] for r in audit_rows])
noised = np.array([r[9] for r in audit_rows])
n_datasets = sum(4 if r[0] <= MIXED_MAX_N else 2 for r in audit_rows)
print(f"{len(audit_rows)} settings (N, k, eta, eps, delta, calibration, sensitivity), {n_datasets} (setting, dataset) "
      f"pairs; noise added in {noised.sum()} settings (the rest round to k' = k)")
for cal in ("paper", "analytic"):
    for sens in ("paper", "exact"):
        sel = np.array([r[5] == cal and r[6] == sens for r in audit_rows])
        print(f"  calibration {cal:8} sensitivity {sens:5}: {sel.sum():4d} settings, "
              f"largest delta_exact/delta = {ratios[sel].max():.6f}")
# Several settings reach the largest ratio up to the last bits, and which of them is largest in the
# last bits depends on the CPU's floating-point kernels: show the first in the audit's order whose
# ratio equals the largest to 6 decimals (what is shown is rounded; the asserts below are exact).
worst = audit_rows[int(np.argmax(np.round(ratios, 6)))]
print(f"largest ratio overall {ratios.max():.6f} (first reached at N={worst[0]}, k={worst[1]}, eta={worst[2]}, "
      f"eps={worst[3]}, delta={worst[4]:g}, {worst[5]}/{worst[6]}, dataset '{worst[10]}')")
assert ratios.max() <= 1 + 1e-9
assert ratios.max() > 0.999            # the analytic calibration with the exact sensitivity is tight

# %% [markdown]
# The largest ratio is 1 (to rounding): on the "deleted 1, kept 0" dataset the rolled-back subset is
# all ones, the remaining shift is exactly `exact_sensitivity(N - k', k - k')`, and the analytic
# calibration is the smallest noise for that shift — the audit is tight, so it has no slack to hide
# a mistake.  Next: the same points through the public path, then the two broken variants.

# %%
picks = [audit_rows[i] for i in rng.permutation(np.flatnonzero(noised))[:40]]
max_gap = 0.0
for n, k, eta, eps, delta, cal, sens, d_grid, m_star, _, kind in picks:
    L = np.log(4.0 * n)
    frac_del, frac_kept = KINDS[kind]
    s = int(np.floor(frac_del * k))
    st = LCBState([n, n], [s + frac_kept * (n - k), n * (m_star + b_of(n, L))], 1 / (2 * n))
    req = DeletionRequest([0] * k, [1.0] * s + [0.0] * (k - s))
    p_u, p_r = output_distributions(st, req, options=UnlearnOptions(method="mixing", epsilon=eps, delta=delta, calibration=cal, sensitivity=sens, eta=eta))
    exact = hockey_stick_delta(p_u, p_r, eps)
    max_gap = max(max_gap, abs(exact - d_grid) / delta)
    assert abs(exact - d_grid) <= 1e-9 * delta + 1e-12, (n, k, eta, kind, exact, d_grid)
# the gap is rounding noise (its size depends on the CPU's kernels), so show the bound it is checked against
print(f"40 audited worst cases recomputed through output_distributions: every |difference|/delta <= 1e-9 "
      f"({max_gap <= 1e-9})")

k_rb = np.array([UnlearnOptions("mixing", gamma=1.0, eta=r[2]).k_rollback_for(r[1]) for r in audit_rows])
strict_mix = noised & (k_rb > 0)                         # 0 < k' < k: a genuine mixture of rollback and noise
tight = strict_mix & (ratios >= 0.99)                    # where the CORRECT mechanism is (nearly) tight
print(f"{strict_mix.sum()} settings with 0 < k' < k; the correct mechanism is tight (ratio >= 0.99) in {tight.sum()}")
power = {}
for variant in ("sensitivity over N", "no rollback"):
    rows_v = run_audit(variant)
    r_v = np.array([r[7] / r[4] for r in rows_v])
    caught = r_v > 1 + 1e-9                                # the same tolerance the correct mechanism is held to
    power[variant] = (caught[strict_mix].mean(), caught[tight].mean())
    print(f"broken variant '{variant}': violates (eps, delta) in {caught[strict_mix].sum()} of {strict_mix.sum()} settings "
          f"with 0 < k' < k ({power[variant][1]:.0%} of those where the correct mechanism is tight); "
          f"largest ratio {r_v.max():.3g}")
assert all(p[0] > 0 and p[1] == 1.0 for p in power.values())

# %% [markdown]
# Both mistakes are caught — **every time** where the correct mechanism is tight, i.e. where the
# worst-case dataset and competitor realise the full privacy budget (analytic calibration with the
# exact sensitivity, worst threshold $t^\star$ feasible), so that any extra leakage shows.  Elsewhere
# the correct mechanism has slack — the classic calibration is conservative at $\varepsilon < 1$, and
# the constraint $M \le f_{a_0}(D)$ (noise only when $\hat a = a_0$) or the range of a competitor's
# score often keeps the competitor away from $t^\star$ — and a broken variant can hide in that slack.
# The printed fractions are the audit's power on this grid.
#
# ## 6. Theorem A.10: the bound in $k'$, and why its minimum is at an end
#
# Write $n = N(a_0)$, $L = \ln(Nm)$, $c = 3\gamma/(2\sqrt{2\pi})$, and treat $k' = x \in [0, k]$ as real:
# $$
# B(x) = \sqrt{2L}\,(n - x)^{-1/2} + c\,\frac{k - x}{n - x} + \frac4N,\qquad
# B'(x) = \frac{\sqrt{L/2}\,\sqrt{n - x} \;-\; c\,(n - k)}{(n - x)^2}.
# $$
# (The first term gives $\frac{\sqrt{2L}}{2}(n-x)^{-3/2} = \sqrt{L/2}\,(n-x)^{1/2}/(n-x)^2$; the second
# gives $c\,\frac{-(n-x) + (k-x)}{(n-x)^2} = -c\,\frac{n-k}{(n-x)^2}$.)  The numerator
# $h(x) = \sqrt{L/2}\sqrt{n-x} - c(n-k)$ is **strictly decreasing** in $x$, so $B'$ changes sign at most
# once, from $+$ to $-$: $B$ rises, then falls.  A function that rises then falls on $[0, k]$ takes its
# minimum at an end — $k' = 0$ (Gaussian) or $k' = k$ (rollback).  Which end?  $B(0) - 4/N$ is chapter
# A3a's Gaussian branch bound $R_g$ and $B(k) - 4/N$ the rollback bound $R_r$, so $B(0) < B(k)$ iff
# $\gamma < \gamma^\star$, the exact crossing of E3 (`gamma0_exact`) — mixing's best $k'$ is
# Algorithm 2 with the exact threshold.
#
# **Check.** On a grid of $N(a_0)$, $k$ (up to Lemma A.1's largest) and 40 values of $\gamma$ from
# $10^{-3}$ to $10^{2}$, evaluate $B$ at **every integer** $k' \in [0, k]$ and assert that no interior
# value is below the better end, that $h$ is decreasing, and that the better end switches exactly at
# $\gamma^\star$.  **The check can fail:** a bound with the noise term's denominator mistaken as
# $N(a_0)$ instead of $N(a_0) - k'$ is convex in $k'$ and has interior minima — the same assertion
# rejects it.

# %% tags=["export"]
"""Mixing (Algorithm 4) -- the utility side: Theorem A.10's bound and where it is minimised
(Paper A, Appendix A; Paper A Algorithms 4-5).

The mechanism itself is ``unlearn(state, request, options=UnlearnOptions(method="mixing", k_prime=... or eta=...))`` (and ``reference``,
``output_distributions``, ``unlearn_batch``) in ``bandit_unlearning.mab.unlearn``.

- ``theorem_a10_bound``: ``sqrt(2 ln(Nm)/(N(a0)-k')) + 3(k-k') gamma/(2 sqrt(2 pi)(N(a0)-k')) + 4/N``.
- ``theorem_a10_numerator``: the numerator of its derivative in k' (strictly decreasing in k').
- ``theorem_a10_best_k_prime``: the minimising k' -- always 0 or k.
"""

import numpy as np

from bandit_unlearning.checks import as_array, check_int, check_int_array
from bandit_unlearning.shapes import check_broadcast


def _check(n, n_arms, n_a0, k, k_prime, gamma):
    n, n_arms = check_int(n, "N (n)", 2), check_int(n_arms, "n_arms", 1)
    n_a0, k, k_prime = (check_int_array(v, name).astype(float)
                        for v, name in ((n_a0, "n_a0"), (k, "k"), (k_prime, "k_prime")))
    check_broadcast(n_a0=n_a0, k=k, k_prime=k_prime)
    if np.any(k < 1) or np.any(k >= n_a0) or np.any(n_a0 > n):
        raise ValueError(f"need integers 1 <= k < N(a0) <= N, got k={k}, N(a0)={n_a0}, N={n}")
    if np.any(k_prime < 0) or np.any(k_prime > k):
        raise ValueError(f"k_prime must lie in [0, k], got k_prime={k_prime}, k={k}")
    L = float(np.log(n * n_arms))
    if np.any(k > n_a0 - np.sqrt(n_a0 * L / 2)):
        raise ValueError("Theorem A.10 assumes Lemma A.1's condition k <= N(a0) - sqrt(N(a0) ln(Nm) / 2), which fails")
    gamma = as_array(gamma, "gamma").astype(float)
    if not np.all(np.isfinite(gamma)) or np.any(gamma <= 0):
        raise ValueError(f"gamma must be finite and > 0, got {gamma}")
    return n_a0, k, k_prime, gamma, L


def _out(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def theorem_a10_bound(n: int, n_arms: int, n_a0, k, k_prime, gamma):
    """Theorem A.10 (M_f, a0 = a*, tau = 1/N): the sub-optimality bound of Algorithm 4 with k' rolled back,
    ``sqrt(2 ln(Nm)/(N(a0)-k')) + 3(k-k') gamma / (2 sqrt(2 pi) (N(a0)-k')) + 4/N``.
    Arrays broadcast (n_a0, k, k_prime, gamma).  Refuses k violating Lemma A.1's condition.

    Parameters
    ----------
    n : int
        Total number of samples N (>= 2).
    n_arms : int
        Number of arms m (>= 1); ``L = ln(N m)``.
    n_a0 : int or array of int
        Samples N(a0) of the optimal arm a0 = a*, ``k < N(a0) <= N``.
    k : int or array of int
        Deleted samples of a0, ``k >= 1`` (and Lemma A.1's condition on k).
    k_prime : int or array of int
        Deleted samples rolled back, ``0 <= k' <= k``.
    gamma : float or array of float
        The noise parameter gamma (> 0).

    Returns
    -------
    float or ndarray
        The bound, a float when every argument is a scalar, else an array of the broadcast shape.
    """
    n_a0, k, k_prime, gamma, L = _check(n, n_arms, n_a0, k, k_prime, gamma)
    rest = n_a0 - k_prime
    return _out(np.sqrt(2 * L / rest) + 3 * (k - k_prime) * gamma / (2 * np.sqrt(2 * np.pi) * rest) + 4 / n)


# %% [markdown]
# The numerator of the bound's derivative in $k'$, and the $k'$ that minimises the bound.

# %% tags=["export"]
def theorem_a10_numerator(n: int, n_arms: int, n_a0, k, k_prime, gamma):
    """The numerator ``h(k') = sqrt(L/2) sqrt(N(a0)-k') - 3 gamma (N(a0)-k) / (2 sqrt(2 pi))`` of
    ``dB/dk' = h(k') / (N(a0)-k')^2`` (``L = ln(Nm)``): strictly decreasing in k', so B rises then falls.

    Parameters
    ----------
    n, n_arms, n_a0, k, k_prime, gamma
        As in ``theorem_a10_bound``.

    Returns
    -------
    float or ndarray
        ``h(k')``, a float when every argument is a scalar, else an array of the broadcast shape.
    """
    n_a0, k, k_prime, gamma, L = _check(n, n_arms, n_a0, k, k_prime, gamma)
    return _out(np.sqrt(L / 2) * np.sqrt(n_a0 - k_prime) - 3 * gamma * (n_a0 - k) / (2 * np.sqrt(2 * np.pi)))


def theorem_a10_best_k_prime(n: int, n_arms: int, n_a0, k, gamma):
    """The k' in [0, k] minimising ``theorem_a10_bound``: 0 if ``B(0) <= B(k)`` (i.e. gamma <= gamma*,
    the exact crossing of erratum E3), else k.  Never an interior value (the bound rises then falls).

    Parameters
    ----------
    n, n_arms, n_a0, k, gamma
        As in ``theorem_a10_bound``.

    Returns
    -------
    float or ndarray
        The minimising k' (0 or k), a float when every argument is a scalar, else an array of the
        broadcast shape.
    """
    b0 = theorem_a10_bound(n, n_arms, n_a0, k, 0, gamma)
    bk = theorem_a10_bound(n, n_arms, n_a0, k, k, gamma)
    return _out(np.where(np.asarray(b0) <= np.asarray(bk), 0, np.broadcast_to(np.asarray(k), np.shape(b0))))


# %%
from bandit_unlearning.mab.mixing import *  # noqa: F403

n_total_grid = [500, 1000, 3000, 10000, 50000]
gammas_grid = np.logspace(-3, 2, 40)
n_checked, switch_errors, interior_correct, interior_broken, n_pairs = 0, 0, 0, 0, 0
for n_total in n_total_grid:
    n_a0 = n_total // 5
    L = np.log(5 * n_total)
    k_cond = int(np.floor(n_a0 - np.sqrt(n_a0 * L / 2)))
    for k in sorted({1, 2, 5, max(1, k_cond // 10), max(1, k_cond // 2), k_cond}):
        kp = np.arange(k + 1)[:, None]
        B = theorem_a10_bound(n_total, 5, n_a0, k, kp, gammas_grid[None, :])          # (k+1, #gamma)
        h = theorem_a10_numerator(n_total, 5, n_a0, k, kp, gammas_grid[None, :])
        assert np.all(np.diff(h, axis=0) < 0)
        ends = np.minimum(B[0], B[-1])
        interior_correct += int(np.sum(B[1:-1].min(axis=0, initial=np.inf) < ends - 1e-12))
        best = theorem_a10_best_k_prime(n_total, 5, n_a0, k, gammas_grid)
        switch_errors += int(np.sum((best == 0) != (gammas_grid <= gamma0_exact(n_a0, k, L))))
        rest = n_a0 - kp                                                            # BROKEN: noise over N(a0)
        broken = np.sqrt(2 * L / rest) + 3 * (k - kp) * gammas_grid[None, :] / (2 * np.sqrt(2 * np.pi) * n_a0) + 4 / n_total
        interior_broken += int(np.sum(broken[1:-1].min(axis=0, initial=np.inf) < np.minimum(broken[0], broken[-1]) - 1e-12))
        n_checked += B.size
        n_pairs += gammas_grid.size
print(f"{n_pairs} (N, k, gamma) triples, {n_checked} (k', gamma) evaluations of the bound")
print(f"interior minimum below both ends: {interior_correct} (Theorem A.10's bound), "
      f"{interior_broken} (broken bound with denominator N(a0))")
print(f"best end switches exactly at gamma* (E3): {switch_errors} mismatches")
assert interior_correct == 0 and switch_errors == 0 and interior_broken > 0

# %% [markdown]
# ## 7. Sub-optimality against $\eta$ (the paper's Figure 2 setting), and Theorem A.10 by Monte Carlo
#
# **Setting.** $\mathcal M_f$ with round-robin counts, $N = 3000$ ($N(a_0) = 600$), $k = 80$, hard case
# $a_0 = a^\star = 0$, $\eta \in \{0, 0.25, 0.5, 0.75, 1\}$ ($k' \in \{0, 20, 40, 60, 80\}$),
# $\gamma \in \{0.005, 0.05, 0.5, 5, 50\}$, paper calibration; the learner on the full data
# ("Oracle") for reference.  Two instances: the paper's means $(0.10, \dots, 0.02)$ — where the bound
# (about 0.18 at best) exceeds the largest possible loss 0.08, so it cannot fail — and a wide-gap
# instance $(0.9, 0.6, 0.5, 0.4, 0.3)$, where the bound is below the largest possible loss 0.6 for
# $\gamma \le 0.5$ and the check has teeth.
#
# **Vectorised.** Each replicate draws the per-arm statistics, the deleted reward sum
# $s \sim$ hypergeometric$(S, N(a_0) - S, k)$ ($U$ is chosen independently of the rewards) and the
# rolled-back sum $s' \sim$ hypergeometric$(s, k - s, k')$ (inside `unlearn_batch`).
#
# **Sizing.** $R = 20{,}000$ replicates per setting; a replicate's loss lies in
# $[0, \max_a(\mu^\star - \mu(a))]$, so by Hoeffding the mean exceeds its expectation by more than
# `hoeffding_margin(R, width, 1e-6 / (#settings + 1))` with probability below $10^{-6}/(\#+1)$ — a
# correct implementation fails anywhere with probability below $10^{-6}$.  **The check can fail:**
# mixing with noise $N(a_0)$ times too large ($1/N(a_0)$ forgotten in $\Delta_f$), on the wide
# instance at $N = 20{,}000$, $\gamma = 0.1$, $\eta = 0.5$, violates the bound.

# %%
R_MC, K_MC, N_MC = 20_000, 80, 3000
ETAS, GAMMAS = [0.0, 0.25, 0.5, 0.75, 1.0], [0.005, 0.05, 0.5, 5.0, 50.0]


def mixing_losses(mu, n, k, eta, gamma, rng, reps=R_MC, z_scale=1.0):
    counts, sums = sample_statistics_fixed(mu, np.full(mu.size, n // mu.size), rng, size=reps)
    s = rng.hypergeometric(sums[:, 0].astype(np.int64), (counts[:, 0] - sums[:, 0]).astype(np.int64), k).astype(float)
    arms, noised, _ = unlearn_batch(counts, sums, 1 / n, 0, k, s, options=UnlearnOptions(method="mixing", eta=eta, gamma=gamma),
                                    rng=rng, z=z_scale * rng.standard_normal(reps))
    return mu.max() - mu[arms], noised.mean()


def oracle_losses(mu, n, rng, reps=R_MC):
    counts, sums = sample_statistics_fixed(mu, np.full(mu.size, n // mu.size), rng, size=reps)
    return mu.max() - mu[np.argmax(lcb_scores(counts, sums, 1 / n)[2], axis=-1)]


n_settings = 2 * len(ETAS) * len(GAMMAS)
p_fail = 1e-6 / (n_settings + 1)
mc = {}
for inst, mu in (("paper", np.array(PAPER_MEANS)), ("wide", WIDE_MEANS)):
    t = hoeffding_margin(R_MC, np.ptp(mu), p_fail)
    for eta, g in itertools.product(ETAS, GAMMAS):
        loss, frac_noised = mixing_losses(mu, N_MC, K_MC, eta, g, rng)
        k_prime = int(round(eta * K_MC))
        bound = theorem_a10_bound(N_MC, 5, N_MC // 5, K_MC, k_prime, g)
        assert loss.mean() <= bound + t, (inst, eta, g, loss.mean(), bound)
        mc[(inst, eta, g)] = (loss.mean(), bound, frac_noised)
    mc[(inst, "oracle")] = oracle_losses(mu, N_MC, rng).mean()
print(f"{n_settings} settings, {R_MC} replicates each: Monte Carlo sub-optimality <= Theorem A.10 bound + margin "
      f"everywhere (margin {hoeffding_margin(R_MC, np.ptp(PAPER_MEANS), p_fail):.4f} paper, "
      f"{hoeffding_margin(R_MC, np.ptp(WIDE_MEANS), p_fail):.4f} wide)")
for inst in ("paper", "wide"):
    print(f"\n{inst} instance (oracle {mc[(inst, 'oracle')]:.4f}); MC sub-optimality / bound, rows eta, columns gamma")
    print("eta    " + " ".join(f"{g:>15}" for g in GAMMAS))
    for eta in ETAS:
        print(f"{eta:<6} " + " ".join(f"{mc[(inst, eta, g)][0]:7.4f}/{mc[(inst, eta, g)][1]:7.4f}" for g in GAMMAS))
informative = sum(mc[("wide", eta, g)][1] < np.ptp(WIDE_MEANS) for eta in ETAS for g in GAMMAS)
print(f"\nwide instance: bound below the largest gap in {informative} of {len(ETAS) * len(GAMMAS)} settings")
best_eta = {g: ETAS[int(np.argmin([mc[("paper", e, g)][0] for e in ETAS]))] for g in GAMMAS}
print(f"paper instance, eta with the smallest MC mean per gamma: {best_eta} "
      f"(gamma* = {gamma0_exact(N_MC // 5, K_MC, np.log(5 * N_MC)):.3f}; Theorem A.10 speaks about the bound, "
      "not about the true sub-optimality)")

n_b, g_b, eta_b = 20_000, 0.1, 0.5
loss_ok, fn_ok = mixing_losses(WIDE_MEANS, n_b, K_MC, eta_b, g_b, rng)
loss_bad, _ = mixing_losses(WIDE_MEANS, n_b, K_MC, eta_b, g_b, rng, z_scale=n_b // 5)
b_b = theorem_a10_bound(n_b, 5, n_b // 5, K_MC, 40, g_b)
t_b = hoeffding_margin(R_MC, np.ptp(WIDE_MEANS), p_fail)
print(f"broken variant (noise x N(a0)), wide, N={n_b}: MC {loss_bad.mean():.4f} > bound + margin {b_b + t_b:.4f} "
      f"(correct mixing: {loss_ok.mean():.4f}, noise added in {fn_ok:.0%} of replicates)")
assert fn_ok > 0.9 and loss_ok.mean() <= b_b + t_b < loss_bad.mean()

# %% [markdown]
# ## 8. Figure
#
# Left: Monte Carlo sub-optimality of mixing against $\gamma$ for each $\eta$ on the paper's instance
# (hard case, $\mathcal M_f$, $N = 3000$, $k = 80$ — the paper's Figure 2, middle row), with the learner on
# the full data.  Right: Theorem A.10's bound against $k'/k$ for $\gamma$ around the exact crossing
# $\gamma^\star$ at the same $N(a_0)$ and $k$, minus its better end: each curve rises then falls (or
# only one of the two), so its minimum is at an end; at $\gamma^\star$ the two ends are equal.

# %%
g_star = gamma0_exact(N_MC // 5, K_MC, np.log(5 * N_MC))
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
ax = axes[0]
for eta, mk in zip(ETAS, "os^vD"):
    ax.plot(GAMMAS, [mc[("paper", eta, g)][0] for g in GAMMAS], mk + "-", label=rf"$\eta$ = {eta}")
ax.axhline(mc[("paper", "oracle")], color="k", lw=0.8, label="Oracle (no deletion)")
ax.set(xscale="log", xlabel=r"$\gamma$", ylabel=r"$E[\mu(a^\star) - \mu(\hat a')]$",
       title="Mixing, Mf, hard case, paper instance, N=3000, k=80")
ax.legend(fontsize=8)
ax = axes[1]
kp_line = np.arange(K_MC + 1)
for f in (0.5, 0.9, 1.0, 1.1, 2.0):
    b_line = theorem_a10_bound(N_MC, 5, N_MC // 5, K_MC, kp_line, f * g_star)
    ax.plot(kp_line / K_MC, 1e3 * (b_line - min(b_line[0], b_line[-1])), label=rf"$\gamma = {f}\,\gamma^\star$")
ax.axhline(0, color="k", lw=0.6)
ax.set(xlabel=r"$\eta = k'/k$", ylabel=r"$10^3\,(B(k') - \min\{B(0), B(k)\})$",
       title=rf"Theorem A.10 bound in $k'$ (N(a0)=600, k=80, $\gamma^\star$={g_star:.3f}): rises, then falls")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 9. The literal reference (chapter A3a, section 5)
#
# Algorithm 5 plans from the released $\hat a = \pi(D)$ ($k' = k$ when $\hat a \ne a_0$), so mixing,
# like Algorithm 2, holds against the reference *given* $\pi(D)$.  `reference="literal"` applies the
# chosen $k'$ whatever $\hat a$ is: the plan is then the same in both worlds, and the argument of
# section 2 holds against a learner that never saw $U$.  On chapter A3a's counterexample (counts
# $(100, 100)$, sums $(60, 57)$, 10 deleted points of reward 1, $\pi(D) = 0$, $\pi(D \setminus U) = 1$):

# %%
cx_state, cx_request = LCBState([100, 100], [60.0, 57.0], 1 / 200), DeletionRequest([0] * 10, [1.0] * 10)
kw = dict(epsilon=2.0, delta=1e-3, calibration="analytic", sensitivity="exact", eta=0.5)
mx = {}
for rule in ("conditional", "literal"):
    for against in ("conditional", "literal"):
        p_u, p_r = output_distributions(cx_state, cx_request, options=UnlearnOptions(method="mixing", reference=rule, **kw), against=against)
        mx[rule, against] = float(hockey_stick_delta(p_u, p_r, 2.0))
        print(f"rule {rule:11} vs {against:11} reference: delta(2) = {mx[rule, against]:.2e} (claimed 1e-3)")
assert mx["conditional", "conditional"] <= 1e-3 * (1 + 1e-9) and mx["conditional", "literal"] > 0.1
assert mx["literal", "literal"] <= 1e-3 * (1 + 1e-9)

# %% [markdown]
# ## Summary
# - Mixing runs through the entry points of chapter A3a: `unlearn`, `reference` (Algorithm 5),
#   `output_distributions` and `unlearn_batch` with `method="mixing"` and `k_prime` or `eta`
#   ($k' = \lfloor \eta k + 1/2 \rfloor$), $k' = k$ when $\hat a \ne a_0$, noise calibrated to the
#   sensitivity of $k - k'$ points among $N(a_0) - k'$ (E2 applies to that pair).  Bad $k'$/$\eta$ are
#   refused before anything is drawn; multi-source mixing and E2 violations are rolled back with a
#   machine-readable `reason` (refused with `fallback="refuse"`).  Mixing holds against the reference
#   given $\pi(D)$; `reference="literal"` (the same $k'$ whatever $\hat a$ is) against the literal one
#   (section 9).
#   `bandit_unlearning.mab.mixing` exports `theorem_a10_bound`, `theorem_a10_numerator`,
#   `theorem_a10_best_k_prime`.
# - The unlearned output distribution is a finite mixture over the hypergeometric number of ones in
#   the rolled-back subset — computed exactly, and matched by $10^6$-sample Monte Carlo (the
#   plug-in-mean shortcut is rejected by the same test).
# - **Theorem A.9 holds on every audited worst case**: 4,032 settings $(N(a_0), k, \eta, \varepsilon,
#   \delta$, calibration, sensitivity$)$, 13,824 (setting, dataset) pairs, noise added in 3,792 settings;
#   the largest $\delta(\varepsilon)/\delta$ is 1 to rounding (analytic calibration, exact sensitivity —
#   the audit is tight), 0.015 with the paper's calibration at $\varepsilon < 1$.  Both broken variants
#   (sensitivity over $N$; no rollback of $U'$) are caught in every one of the 88 settings with
#   $0 < k' < k$ where the correct mechanism is tight (540 and 744 of the 2,688 such settings overall).
# - **Theorem A.10's bound is minimised at $k' = 0$ or $k' = k$** on the whole grid (its derivative's
#   numerator is decreasing), the best end switching exactly at the E3 crossing $\gamma^\star$; a bound
#   with the wrong denominator would have interior minima.  The Monte Carlo sub-optimality lies below
#   the bound in all settings, and a variant with too much noise violates it.
