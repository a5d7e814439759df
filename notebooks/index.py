# %% [markdown]
# # bandit_unlearning — reading order and map
#
# This project implements, explains and checks two papers on machine unlearning:
#
# * **Paper A** — Ye, Wang, Wang, Liu, Li, Hajiesmaili, *Unlearning Offline Stochastic Multi-Armed
#   Bandits* (2026): $(\varepsilon, \delta)$-unlearning of the LCB learner by Gaussian noise and rollback.
# * **Paper B** — Nguyen-Tang, Arora, *Exact Unlearning in Reinforcement Learning* (2026): exact
#   unlearning by TV-stability, the binary tree mechanism and maximal coupling.
#
# Every chapter is a pair of files, `NN_name.py` (percent format: what you edit) and
# `NN_name.ipynb` (the same cells with their outputs: what you read).  Cells tagged `export` are,
# verbatim, the modules of the `bandit_unlearning` package (`make export` writes them; never edit a
# generated module).  Every claim ends in an `assert` that would fail if the claim were false, and
# each chapter shows the same check rejecting a deliberately broken variant.
#
# ## Reading order
#
# | # | chapter | covers (paper numbering) | exports |
# |---|---|---|---|
# | A1 | [mab/01_data_and_lcb](mab/01_data_and_lcb.ipynb) | Paper A §2, Algorithm 1, Lemma 3.1 | `bandit_unlearning.mab.data`, `bandit_unlearning.mab.lcb`, `bandit_unlearning.montecarlo`, `bandit_unlearning.experiments.lemma31` |
#
# ## Notation (SPEC)
#
# | symbol | code | meaning |
# |---|---|---|
# | $m$, $[m]$ | `n_arms` | number of arms; arms are `0 .. m-1` in code |
# | $D = [(a_i, r_i)]$ | `OfflineDataset(arms, rewards, n_arms)` | offline dataset, rewards in $[0, 1]$ |
# | $N$, $N(a)$ | `len(D)`, `counts[a]` | dataset size; pulls of arm $a$ |
# | $\mu(a)$, $\hat\mu(a)$ | `means` | true / empirical mean reward |
# | $a^\star$, $\hat a$ | `best`, `state.arm` | best arm; the learner's choice |
# | $N_\star$ | `n_star` | coverage of $a^\star$ in $\mathcal M_f$ |
# | $C^\star$, $d$ | `c_star`, `behavior` | concentrability; behaviour policy in $\mathcal M_d$ |
# | $\tau$, $L = \ln(m/\tau)$ | `tau`, `state.log_term` | confidence level (default $1/N$, fixed at training) |
# | $b(a)$, $f_a(D)$ | `radii`, `scores` | LCB radius and score $\hat\mu(a) - b(a)$ |
# | $T(D)$ | `LCBState` | stored statistic: counts, reward sums, $\tau$ |
# | $U$, $a_0$, $k = \lvert U\rvert$ | deletion request | deleted points; their arm; how many |
# | $\varepsilon, \delta$, $\gamma = \sqrt{2\ln(1.25/\delta)}/\varepsilon$ | `epsilon`, `delta`, `gamma` | privacy parameters and scale |
# | $\Phi$ | `scipy.stats.norm.cdf` | standard normal CDF |
#
# Conventions: every function that draws takes `rng: numpy.random.Generator`; ties in an argmax go
# to the lowest arm; bad input raises a `ValueError` naming the argument and leaves objects unchanged.

# %%
import bandit_unlearning
from bandit_unlearning.mab import data, lcb

print("bandit_unlearning", bandit_unlearning.__version__)
for module in (data, lcb):
    print(f"{module.__name__}: {', '.join(module.__all__)}")
