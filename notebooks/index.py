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
# | A2 | [mab/02_unlearning_mechanisms](mab/02_unlearning_mechanisms.ipynb) | Paper A Definition 2.1, §3.1, Lemma A.1; erratum E2, E7, E12 | `bandit_unlearning.mab.mechanisms` |
# | A3 | [mab/03_adaptive_unlearning](mab/03_adaptive_unlearning.ipynb) | Paper A Algorithms 2–3 (and the entry points of Algorithms 4–5, 7–8), Theorems 3.2, 3.3, 3.5; errata E1–E4 | `bandit_unlearning.mab.unlearn`, `bandit_unlearning.mab.bounds` |
# | A4 | [mab/04_lower_bounds](mab/04_lower_bounds.ipynb) | Paper A Theorems 3.7, 3.9 and the C* in (1, 2) lower bound (Le Cam two-point constructions), Lemma A.8; exact KL checks (the C* in (1, 2) closed form is not an upper bound for requests from a0) | `bandit_unlearning.mab.lower_bounds` |
# | A5 | [mab/05_mixing](mab/05_mixing.ipynb) | Paper A Algorithms 4–5, Theorems A.9–A.10 (mixing rollback and noise) | `bandit_unlearning.mab.mixing` |
# | A6 | [mab/06_imitation_learning](mab/06_imitation_learning.ipynb) | Paper A Algorithm 6, Theorem 3.11 (C* in (1, 2)); explicit Chernoff bound (the printed expression is vacuous for C* > 1.07); Table 2 comparison | `bandit_unlearning.mab.imitation` |
# | A7 | [mab/07_multi_source](mab/07_multi_source.ipynb) | Paper A Algorithms 7–8, Theorem 3.13 (multi-source); erratum E5 erratum demonstrated | `bandit_unlearning.mab.multisource` |
# | A8 | [mab/08_paper_experiments](mab/08_paper_experiments.ipynb) | Paper A §5 (Figures 1–3, Table 2; Paper A §5): protocol with prefix sharing, vectorised engine on the package's mechanisms, reduced-scale runs; paper scale via the CLI | `bandit_unlearning.experiments.protocol`, `bandit_unlearning.experiments.paper_a`, `bandit_unlearning.experiments.plots_a` |
# | A9 | [mab/09_deletion_stream](mab/09_deletion_stream.ipynb) | Deletion requests over time: a model with a lifecycle (fit, delete by user or rows, deletion log), the sequential guarantee against retraining with τ fixed at fit, a Gaussian-DP accountant that rolls back pending rows, deletion capacity, atomic persistence that forgets, exact audit of up to three releases; Open Bandit Dataset | `bandit_unlearning.mab.model` |
# | P1 | [privacy/01_gaussian_mechanism](privacy/01_gaussian_mechanism.ipynb) | Gaussian mechanism: classic (ε < 1 only) and analytic calibration, privacy profile, hockey-stick divergence, Clopper–Pearson audit; erratum E1 | `bandit_unlearning.privacy.gaussian`, `bandit_unlearning.privacy.audit` |
# | P2 | [privacy/02_guarantee_matrix](privacy/02_guarantee_matrix.ipynb) | Every path that returns an (ε, δ) claim (gaussian, rollback, adaptive, mixing, multi-source, imitation) × calibration × sensitivity × 1–16 source arms, audited exactly on worst-case data with an adversarial competitor; power against half noise, per-arm σ, skipped rollback; unproven calibrations refused | `bandit_unlearning.experiments.guarantees` |
# | B1 | [rl/01_tv_and_coupling](rl/01_tv_and_coupling.ipynb) | Paper B §2: TV distance, maximal coupling by rejection and point reflection (Algorithm 3's node step) | `bandit_unlearning.privacy.coupling` |
# | B2 | [rl/02_binary_tree](rl/02_binary_tree.ipynb) | Paper B §3: Algorithm 2's binary tree mechanism, its pinned-down randomness (per-node keys) and canonical arithmetic, σ calibrations (paper and exact), ε_app | `bandit_unlearning.exact.tree` |
# | B3 | [rl/03_exact_unlearning](rl/03_exact_unlearning.ipynb) | Paper B Algorithms 1–3: prefix-sum learners over replayable users, unlearning by coupling the tree; online-bandit instance; Theorem 3.3 (1) | `bandit_unlearning.exact.learner`, `bandit_unlearning.exact.bandit` |
# | B4 | [rl/04_theorem_3_3](rl/04_theorem_3_3.ipynb) | Theorem 3.3 (1)–(3) checked: exactness tests, retraining probability (E11), unlearning cost vs retraining | `bandit_unlearning.experiments.unlearning_cost`, `bandit_unlearning.experiments.exactness` |
# | B5 | [rl/05_tabular_mdps](rl/05_tabular_mdps.ipynb) | Paper B §4 (Paper B §4): episodic tabular MDPs, exact planning/evaluation/regret, environments, Theorem 4.4 hard instance, replayable users (E10), Gymnasium interop | `bandit_unlearning.rl.mdp`, `bandit_unlearning.rl.envs`, `bandit_unlearning.rl.users`, `bandit_unlearning.rl.gym` |
# | B6 | [rl/06_ucbvi](rl/06_ucbvi.ipynb) | Paper B §4: statistics (Paper B §4, E8), Algorithm 4 planning from (noisy) prefix sums (Paper B Algorithm 4, E9), non-private UCB-VI, regret at ρ = ∞ (Theorem 4.1) | `bandit_unlearning.rl.ucbvi`, `bandit_unlearning.experiments.rl_regret` |
# | B7 | [rl/07_stable_ucbvi](rl/07_stable_ucbvi.ipynb) | Paper B Algorithm 4 (TV-stable UCB-VI) on the binary tree, Theorem 4.1 (regret over T and ρ, the bound's terms), ρ = √(HS³A/T) | `bandit_unlearning.rl.stable`, `bandit_unlearning.experiments.rl_stable` |
# | B8 | [rl/08_exact_unlearning_rl](rl/08_exact_unlearning_rl.ipynb) | Theorem 3.3 applied to Algorithm 4: exactness of deleting an episode from TV-stable UCB-VI (power against broken variants), unlearning cost vs retraining over ρ and T | `bandit_unlearning.experiments.rl_unlearning` |
# | B9 | [rl/09_lower_bound](rl/09_lower_bound.ipynb) | Paper B Theorem 4.4 (lower bound, illustrated on the hard instance), DP/TV facts, Karwa–Vadhan coupling lemma checked; Part B reproduction | `bandit_unlearning.experiments.rl_lower_bound`, `bandit_unlearning.experiments.rl_paper` |
# | B10 | [rl/10_light_tree](rl/10_light_tree.ipynb) | Memory-light binary tree: Algorithms 2–3 bit-identical to B2 without storing the noise (per-node keys, sparse leaves, incremental decomposition); why sparse shift/flip corrections would keep the deleted data (touched nodes stored densely, keys erased); exactness battery with the light tree; memory vs T | `bandit_unlearning.exact.light_tree` |
# | B11 | [rl/11_delete_by_user](rl/11_delete_by_user.ipynb) | Deleting a user, not a step: Algorithm 3 on every step a returning user occupies; exactness against training with the user replaced by the dummy (two-sample battery, power against deleting only the first step); the registry forgets the user | `bandit_unlearning.exact.registry` |
# | B12 | [rl/12_linucb](rl/12_linucb.ipynb) | Beyond the papers: exact unlearning for disjoint LinUCB — the per-user statistic and its sensitivity ($\sqrt2$ against the zero dummy, $3/\sqrt2$ between users), the noisy Gram matrix shifted by a spectral-norm bound with a widened radius (Monte Carlo check), zero noise equals plain LinUCB (and MABWiser's), exactness battery with power against broken variants, cost vs retraining, scikit-learn's digits as a 10-armed bandit | `bandit_unlearning.exact.linucb` |
# | B13 | [rl/13_many_runs](rl/13_many_runs.ipynb) | Engineering: many runs of (TV-stable) UCB-VI advancing together along a batch axis (planning, rollouts, statistics, noisy prefix sums: one operation per step; node noise from each run's own keys), bit for bit the single-run learner; deletion costs without re-running episodes | `bandit_unlearning.rl.batch`, `bandit_unlearning.experiments.rl_batch` |
#
# **[Sharp edges and errata](errata.ipynb)** lists every place where the project departs from the
# papers or found something they do not say (codes E1–E17, used throughout the chapters), what is
# true instead, and where it is checked.
#
# ## Notation
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

# %% [markdown]
# The cell below keeps this page honest: it lists every chapter on disk with the modules it exports,
# and fails if a chapter or a module is missing from the table above.

# %%
import sys
from pathlib import Path

import bandit_unlearning

ROOT = Path("..").resolve()
sys.path.insert(0, str(ROOT / "tools"))
import export  # the project's export tool: which chapter fills which module  # noqa: E402

index_text = Path("index.py").read_text()
modules_of = {}
for module, chunks in export.collect(ROOT).items():
    modules_of.setdefault(chunks[0].notebook.relative_to("notebooks"), []).append(module)
chapters = sorted(p for p in Path(".").rglob("*.py") if p.name != "index.py" and ".ipynb_checkpoints" not in p.parts)
print("bandit_unlearning", bandit_unlearning.__version__, "-", len(chapters), "chapters")
for chapter in chapters:
    modules = sorted(modules_of.get(chapter, []))
    print(f"{chapter.with_suffix('').as_posix():32} -> {', '.join(modules) or '(no exports)'}")
    assert f"({chapter.with_suffix('.ipynb').as_posix()})" in index_text, f"{chapter} is missing from the index"
    for module in modules:
        assert f"`{module}`" in index_text, f"{module} is missing from the index"
