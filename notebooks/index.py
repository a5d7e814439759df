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
# Looking for a numbered result of either paper? See [Where is Theorem X?](#where-is-theorem-x).
#
# | # | chapter | covers (paper numbering) | exports |
# |---|---|---|---|
# | start | [00_tour](00_tour.ipynb) | a tour: one deletion served by each paper, on the Open Bandit Dataset; the one protocol (`unlearn`, `verify`, typed requests) both papers' learners share | `bandit_unlearning.protocol` |
# | A1 | [mab/01_data_and_lcb](mab/01_data_and_lcb.ipynb) | Paper A §2, Algorithm 1, Lemma 3.1 | `bandit_unlearning.mab.data`, `bandit_unlearning.mab.lcb`, `bandit_unlearning.testing.montecarlo`, `bandit_unlearning.experiments.lemma31` |
# | A2 | [mab/02_unlearning_mechanisms](mab/02_unlearning_mechanisms.ipynb) | Paper A Definition 2.1, §3.1, Lemma A.1; erratum E2, E7, E12 | `bandit_unlearning.mab.mechanisms` |
# | A3a | [mab/03a_adaptive_unlearning](mab/03a_adaptive_unlearning.ipynb) | Paper A Algorithms 2–3 (and the entry points of Algorithms 4–5, 7–8), the threshold $\gamma_0$; errata E1–E3 | `bandit_unlearning.mab.unlearn`, `bandit_unlearning.mab.bounds` (thresholds, branch bounds) |
# | A3b | [mab/03b_output_distributions](mab/03b_output_distributions.ipynb) | The exact output distributions of Algorithms 2–3; the vectorised mechanism, checked against the scalar one | `bandit_unlearning.mab.unlearn` (`noisy_argmax_distribution`, `output_distributions`, `unlearn_batch`) |
# | A3c | [mab/03c_theorem_3_2_audit](mab/03c_theorem_3_2_audit.ipynb) | Theorem 3.2 audited exactly and by Monte Carlo, broken variants rejected; errata E1, E2 | — |
# | A3d | [mab/03d_utility](mab/03d_utility.ipynb) | Theorems 3.3, 3.5 by Monte Carlo; where the branch bounds cross; errata E3, E4 | `bandit_unlearning.mab.bounds` (Theorems 3.3, 3.5) |
# | A4a | [mab/04a_lower_bounds](mab/04a_lower_bounds.ipynb) | Paper A Theorems 3.7, 3.9 and the C* in (1, 2) lower bound: statement, Le Cam's two-point derivation, the constructions, samplers, divergences and bounds as code | `bandit_unlearning.mab.lower_bounds` |
# | A4b | [mab/04b_lower_bound_checks](mab/04b_lower_bound_checks.ipynb) | Lemma A.8 and the KL divergences computed exactly (the C* in (1, 2) closed form is not an upper bound for requests from a0); where the printed formulas follow from their proofs; every mechanism of the package above the bounds, broken variants rejected; how far apart the upper and lower bounds are (Remarks 3.8, 3.10, the rates of Table 1) | — (uses `bandit_unlearning.mab.lower_bounds`) |
# | A5 | [mab/05_mixing](mab/05_mixing.ipynb) | Paper A Algorithms 4–5, Theorems A.9–A.10 (mixing rollback and noise) | `bandit_unlearning.mab.mixing`; mixing's part of `bandit_unlearning.mab.unlearn` (`subset_sum_distribution`) |
# | A6 | [mab/06_imitation_learning](mab/06_imitation_learning.ipynb) | Paper A Algorithm 6, Theorem 3.11 (C* in (1, 2)); explicit Chernoff bound (the printed expression is vacuous for C* > 1.07); Table 2 comparison | `bandit_unlearning.mab.imitation` |
# | A7 | [mab/07_multi_source](mab/07_multi_source.ipynb) | Paper A Algorithms 7–8, Theorem 3.13 (multi-source); erratum E5 erratum demonstrated | `bandit_unlearning.mab.multisource`; the several-noised-arms part of `bandit_unlearning.mab.unlearn` (`multi_noisy_argmax_distribution`) |
# | A8a | [mab/08a_paper_experiments](mab/08a_paper_experiments.ipynb) | Paper A §5 (Figures 1–3, Table 2): protocol with prefix sharing, vectorised engine on the package's mechanisms, checked against a plain loop | `bandit_unlearning.experiments.protocol`, `bandit_unlearning.experiments.paper_a` |
# | A8b | [mab/08b_paper_figures](mab/08b_paper_figures.ipynb) | Paper A §5: self-explaining figures, which branch Algorithm 2 takes (E4), reduced-scale runs of Figures 1–3 and Table 2; Table 2's unstated k swept (no k reproduces the paper's row); the paper's numbers beside ours with verdicts; paper scale via the CLI | `bandit_unlearning.experiments.plots_a`, `bandit_unlearning.experiments.paper_numbers` |
# | A9a | [mab/09a_deletion_stream](mab/09a_deletion_stream.ipynb) | Deletion requests over time: the sequential guarantee against retraining with τ fixed at fit, a Gaussian-DP accountant that rolls back pending rows, a model with a lifecycle (fit, delete by user or rows, deletion log with reasons and the reference world of each claim, a literal option), exact per-arm sums (no rounding residue), atomic persistence that forgets, files validated at load (sizes, invariants, cross-section consistency, optional HMAC), pickling without the generator | `bandit_unlearning.mab.model` |
# | A9b | [mab/09b_deletion_stream_in_use](mab/09b_deletion_stream_in_use.ipynb) | The model of A9a in use: a lifecycle on a small example, exact audit of up to three releases against the conditional and the literal reference (broken accountants and, against the literal one, Paper A's rule rejected), deletion capacity, what the file and a pickle hold after a deletion (pending-sum walk, generator-rewinding attack and tampered files, each against a broken variant), a killed save; Open Bandit Dataset | — (uses `bandit_unlearning.mab.model`) |
# | A10a | [mab/10a_contextual_lcb](mab/10a_contextual_lcb.ipynb) | Beyond Paper A: an offline pessimistic linear contextual bandit (per-arm ridge, LCB with a stated self-normalised radius); rollback as a rank-$k$ downdate (exact in rationals, bit for bit on integer data, ill-conditioned downdates refused); the Gaussian mechanism on the released centres with a derived sensitivity; an adaptive switch from the two branch bounds, literal and conditional reference worlds; sensitivity audited against an optimiser's worst case, privacy audited exactly (half noise, too-small sensitivity rejected); erratum E20 | `bandit_unlearning.mab.contextual` |
# | A10b | [mab/10b_contextual_in_use](mab/10b_contextual_in_use.ipynb) | The contextual learner in use: `ContextualModel` (fit, delete by user or rows, log, the μ-GDP accountant of A9a, save/load that forgets) with a sequential sensitivity for pending requests; the Open Bandit Dataset with its user features as contexts: IPS values with exact intervals against the non-contextual LCB, before and after a deletion stream, the branch each request took | `bandit_unlearning.mab.contextual_model` |
# | P1a | [privacy/01a_gaussian_mechanism](privacy/01a_gaussian_mechanism.ipynb) | Gaussian mechanism: classic (ε < 1 only) and analytic calibration, privacy profile; erratum E1 | `bandit_unlearning.privacy.gaussian` |
# | P1b | [privacy/01b_audits](privacy/01b_audits.ipynb) | Auditing (ε, δ): hockey-stick divergence, Clopper–Pearson Monte Carlo audit, numerics at the extremes | `bandit_unlearning.privacy.audit` |
# | P2 | [privacy/02_guarantee_matrix](privacy/02_guarantee_matrix.ipynb) | Every path that returns an (ε, δ) claim (gaussian, rollback, adaptive, mixing, multi-source, imitation) × calibration × sensitivity × 1–16 source arms, audited exactly on worst-case data with an adversarial competitor; power against half noise, per-arm σ, skipped rollback; unproven calibrations refused | `bandit_unlearning.experiments.guarantees` |
# | B1 | [rl/01_tv_and_coupling](rl/01_tv_and_coupling.ipynb) | Paper B §2: TV distance, maximal coupling by rejection and point reflection (Algorithm 3's node step) | `bandit_unlearning.privacy.coupling` |
# | B2a | [rl/02a_binary_tree](rl/02a_binary_tree.ipynb) | Paper B §3: Algorithm 2's binary tree mechanism stated; its bookkeeping (post-order, dyadic decompositions, paths), σ calibrations (paper and exact), ε_app, and its pinned-down randomness (per-node keys) and canonical arithmetic; the optional compiled kernels (numba) checked bit for bit against it | `bandit_unlearning.exact.tree` (bookkeeping, calibrations, keys, acceptance test, `PathCoupling`), `bandit_unlearning.kernel` (node-key personalisation), `bandit_unlearning.exact.accel` (optional compiled keys, noise and tree steps) |
# | B2b | [rl/02b_dense_tree](rl/02b_dense_tree.ipynb) | The dense tree (Algorithm 2's data structure and the tree's half of Algorithm 3), checked: unbiased prefix sums with the predicted covariance, calibrations, ε_app (fails at T = 2), the path coupling, keys are secrets | `bandit_unlearning.exact.tree` (`BinaryTree`, and `BaseTree`: what it shares with the light tree) |
# | B3a | [rl/03a_exact_unlearning](rl/03a_exact_unlearning.ipynb) | Paper B Algorithms 1–3: prefix-sum learners over replayable users, unlearning by coupling the tree; why it is exact (Theorem 3.3 (1)); what the computation of a deletion (the `retrained` flag, its cost) reveals, exactly and measured | `bandit_unlearning.exact.learner` |
# | B3b | [rl/03b_online_bandit](rl/03b_online_bandit.ipynb) | The first instance, UCB for an online bandit on noisy prefix sums: runs and deletions replayed exactly, a learner that forgets to retrain caught, bad input refused, regret and the cost of one deletion | `bandit_unlearning.exact.bandit` |
# | B4 | [rl/04_theorem_3_3](rl/04_theorem_3_3.ipynb) | Theorem 3.3 (1)–(3) checked: exactness tests, retraining probability (E11), unlearning cost vs retraining | `bandit_unlearning.experiments.unlearning_cost`, `bandit_unlearning.experiments.exactness`, `bandit_unlearning.testing.broken` |
# | B5a | [rl/05a_tabular_mdps](rl/05a_tabular_mdps.ipynb) | Paper B §4: episodic tabular MDPs, exact planning/evaluation/regret, environments, Theorem 4.4 hard instance | `bandit_unlearning.rl.mdp`, `bandit_unlearning.rl.envs` |
# | B5b | [rl/05b_replayable_users](rl/05b_replayable_users.ipynb) | Paper B §4: replayable users (E10), rollouts, Gymnasium interop (the ids that exist: FrozenLake-v1, CliffWalking-v1, Taxi-v4; Taxi's cost refused under the default budget; regret in the environment's units beside the mapped ones) | `bandit_unlearning.rl.users`, `bandit_unlearning.rl.gym`, `bandit_unlearning.kernel` (the unchecked SplitMix64 and user-step kernel its callers share) |
# | B6a | [rl/06a_ucbvi_planner](rl/06a_ucbvi_planner.ipynb) | Paper B §4: episode statistics (E8), Algorithm 4 planning from (noisy) prefix sums (Paper B Algorithm 4, E9), the paper's bonus, practical bonuses and pooling (E15) | `bandit_unlearning.rl.ucbvi` (statistics, `UCBVIConfig`, the planner) |
# | B6b | [rl/06b_ucbvi_regret](rl/06b_ucbvi_regret.ipynb) | Paper B §4: non-private UCB-VI as a fast driver (exactly the planner at σ = 0), optimism, regret at ρ = ∞ (Theorem 4.1) | `bandit_unlearning.rl.ucbvi` (`run_ucbvi`), `bandit_unlearning.experiments.rl_regret` |
# | B7a | [rl/07a_stable_ucbvi](rl/07a_stable_ucbvi.ipynb) | Paper B Algorithm 4 (TV-stable UCB-VI) on the binary tree, Theorem 4.1 stated and sketched; the construction checked (statistics, zero noise is UCB-VI, σ and the exploration threshold per ρ); a run's memory and time per episode estimated before it starts (`training_cost`), refused above `max_memory` | `bandit_unlearning.rl.stable` |
# | B7b | [rl/07b_stable_ucbvi_regret](rl/07b_stable_ucbvi_regret.ipynb) | Theorem 4.1 measured (regret over T and ρ, the bound's terms), ρ = √(HS³A/T), where the time goes, what to set in practice | `bandit_unlearning.experiments.rl_stable` |
# | B7c | [rl/07c_bernstein_bonus](rl/07c_bernstein_bonus.ipynb) | A Bernstein bonus for the tree's noisy statistics: optimism under noise stated and proven (per step and pooled), relative-entropy and empirical-Bernstein bounds, checked with Clopper–Pearson against a dropped noise correction and a halved bonus; what it costs in learning | `bandit_unlearning.rl.bernstein` |
# | B8 | [rl/08_exact_unlearning_rl](rl/08_exact_unlearning_rl.ipynb) | Theorem 3.3 applied to Algorithm 4: exactness of deleting an episode from TV-stable UCB-VI (power against broken variants), unlearning cost vs retraining over ρ and T (episodes and CPU time; what `verify` and `verify_unlearned` cost) | `bandit_unlearning.experiments.rl_unlearning` |
# | B9a | [rl/09a_lower_bound](rl/09a_lower_bound.ipynb) | Paper B Theorem 4.4 (lower bound, illustrated on the hard instance), DP/TV facts, Karwa–Vadhan coupling lemma checked | `bandit_unlearning.experiments.rl_lower_bound` |
# | B9b | [rl/09b_reproduce_rl](rl/09b_reproduce_rl.ipynb) | Part B reproduction: `reproduce_rl` (regret, deletion cost and lower-bound figures at a chosen scale, for the command line), checked on a tiny protocol | `bandit_unlearning.experiments.rl_paper` |
# | B10 | [rl/10_light_tree](rl/10_light_tree.ipynb) | Memory-light binary tree: Algorithms 2–3 bit-identical to B2b without storing the noise (per-node keys, sparse leaves, incremental decomposition); why sparse shift/flip corrections would keep the deleted data (touched nodes stored densely, keys erased); exactness battery with the light tree; memory vs T | `bandit_unlearning.exact.light_tree` |
# | B11 | [rl/11_delete_by_user](rl/11_delete_by_user.ipynb) | Deleting a user, not a step: every step a returning user occupies in one maximal-coupling pass (each node coupled once, at most one retraining; retrain from scratch when the pass's worst case exceeds a training), one step = Algorithm 3 bit for bit; exactness against training with the user replaced by the dummy (bandit and UCB-VI batteries, power against deleting only the first step and against forgetting to retrain); `verify_unlearned` replays only the recomputed suffix; the registry forgets the user | `bandit_unlearning.exact.registry` |
# | B12 | [rl/12_linucb](rl/12_linucb.ipynb) | Beyond the papers: exact unlearning for disjoint LinUCB — the per-user statistic and its sensitivity ($\sqrt2$ against the zero dummy, $3/\sqrt2$ between users), the noisy Gram matrix shifted by twice a GOE spectral-norm bound with a widened radius (Monte Carlo check rejecting too-small shifts), zero noise equals plain LinUCB (and MABWiser's), exactness battery with power against broken variants, cost vs retraining, scikit-learn's digits and three small bundled sets as bandits: accuracy over ρ against non-private LinUCB | `bandit_unlearning.exact.linucb`, `bandit_unlearning.experiments.linucb_sets` |
# | B13 | [rl/13_many_runs](rl/13_many_runs.ipynb) | Engineering: many runs of (TV-stable) UCB-VI advancing together along a batch axis (planning, rollouts, statistics, noisy prefix sums: one operation per step; node noise from each run's own keys), bit for bit the single-run learner; deletion costs without re-running episodes | `bandit_unlearning.rl.batch`, `bandit_unlearning.experiments.rl_batch` |
#
# **[Sharp edges and errata](errata.ipynb)** lists every place where the project departs from the
# papers or found something they do not say (codes E1–E21, used throughout the chapters), what is
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
# ## Where is Theorem X?
#
# Every numbered result of the two papers that the chapters cite: where it is stated and checked
# (chapter and section), the function(s) that implement it, and the check that would fail if it
# were false (a test in `tests/`, or a line of the chapter).  The prefix says whose numbering:
# **A** is Paper A, **B** is Paper B (both have a Theorem 3.3).  The cell below the table fails if a
# link, function or check does not exist, or if a chapter cites a result that has no row.
#
# | result | chapter, section | function(s) | check |
# |---|---|---|---|
# | A · Definition 2.1 | [A2 §1](mab/02_unlearning_mechanisms.ipynb#1-definition-21--unlearning), [A3a §5](mab/03a_adaptive_unlearning.ipynb#5-which-reference-world-the-conditional-guarantee-the-literal-one-and-a-rule-for-the-literal-one) (the two reference worlds) | `bandit_unlearning.privacy.audit.audit_epsilon`, `bandit_unlearning.privacy.audit.hockey_stick_delta`, `bandit_unlearning.mab.unlearn.output_distributions` | `tests/test_mab_unlearn.py::test_exact_privacy_on_a_worst_case_and_half_noise_violates`, `tests/test_guarantees.py::test_paper_rule_holds_only_conditionally_and_the_literal_rule_holds_literally` |
# | A · Algorithm 1 | [A1 §2](mab/01_data_and_lcb.ipynb#2-the-lcb-learner-algorithm-1) | `bandit_unlearning.mab.lcb.fit_lcb`, `bandit_unlearning.mab.lcb.lcb_scores` | `tests/test_mab_data_lcb.py::test_fit_lcb_matches_loop_oracle` |
# | A · Lemma 3.1 | [A1 §3](mab/01_data_and_lcb.ipynb#3-lemma-31-why-pessimism-works) | `bandit_unlearning.mab.lcb.lemma31_bound_fixed`, `bandit_unlearning.mab.lcb.lemma31_bound_distribution`, `bandit_unlearning.experiments.lemma31.lemma31_curve` | `mab/01_data_and_lcb.ipynb::assert ucb_loss > bound + t`, `tests/test_mab_data_lcb.py::test_lemma31_bounds_values` |
# | A · Lemma A.4 | [A1 §3](mab/01_data_and_lcb.ipynb#3-lemma-31-why-pessimism-works) | `bandit_unlearning.mab.lcb.lemma31_bound_distribution` | `mab/01_data_and_lcb.ipynb::assert np.all(np.array(curve["Mf"]) <= curve["Mf bound"]) and np.all(np.array(curve["Md"]) <= curve["Md bound"])` |
# | A · Lemma A.1 | [A2 §5](mab/02_unlearning_mechanisms.ipynb#5-lemma-a1-how-much-can-deleting--points-move-an-arms-score) | `bandit_unlearning.mab.mechanisms.paper_sensitivity`, `bandit_unlearning.mab.mechanisms.exact_sensitivity`, `bandit_unlearning.mab.mechanisms.sensitivity_condition_holds` | `tests/test_mab_mechanisms.py::test_condition_implies_the_paper_bound_on_a_large_grid`, `tests/test_mab_mechanisms.py::test_exact_sensitivity_is_the_brute_force_worst_case` |
# | A · Algorithm 2 | [A3a §3](mab/03a_adaptive_unlearning.ipynb#3-implementation-one-entry-point-plans-per-source-arm) | `bandit_unlearning.protocol.unlearn` (on an `LCBState`), `bandit_unlearning.mab.unlearn.plan_unlearning`, `bandit_unlearning.mab.unlearn.unlearn_batch` | `tests/test_mab_unlearn.py::test_gaussian_branch_records_everything_and_adds_sigma_times_next_normal`, `tests/test_mab_unlearn.py::test_rollback_branch_equals_retraining_and_draws_nothing` |
# | A · Algorithm 3 | [A3a §3](mab/03a_adaptive_unlearning.ipynb#3-implementation-one-entry-point-plans-per-source-arm) | `bandit_unlearning.mab.unlearn.reference` | `tests/test_mab_unlearn.py::test_reference_matches_unlearn_plan_and_uses_retrained_scores` |
# | A · Theorem 3.2 | [A3c §1](mab/03c_theorem_3_2_audit.ipynb#1-exact-audit-over-a-grid-of-worst-cases) | `bandit_unlearning.mab.unlearn.output_distributions`, `bandit_unlearning.privacy.audit.hockey_stick_delta` | `tests/test_mab_unlearn.py::test_exact_privacy_on_a_worst_case_and_half_noise_violates`, `tests/test_guarantees.py::test_correct_paths_hold_and_half_noise_fails` |
# | A · Theorem 3.3 | [A3d §1](mab/03d_utility.ipynb#1-theorems-33-and-35-what-unlearning-costs-in-accuracy) | `bandit_unlearning.mab.bounds.theorem33_bound`, `bandit_unlearning.mab.bounds.theorem33_order`, `bandit_unlearning.mab.bounds.gamma0_paper` | `tests/test_mab_unlearn.py::test_theorem_bounds_cases`, `mab/03d_utility.ipynb::assert fg_ok > 0.5 and loss_ok.mean() <= b_b + t_b < loss_bad.mean()` |
# | A · Theorem 3.5 | [A3d §1](mab/03d_utility.ipynb#1-theorems-33-and-35-what-unlearning-costs-in-accuracy) | `bandit_unlearning.mab.bounds.theorem35_bound` | `tests/test_mab_unlearn.py::test_theorem_bounds_cases` |
# | A · Theorem 3.7 | [A4a §1](mab/04a_lower_bounds.ipynb#1-statement) | `bandit_unlearning.mab.lower_bounds.lower_bound_fixed`, `bandit_unlearning.mab.lower_bounds.fixed_sample_pair` | `tests/test_mab_lower_bounds.py::test_fixed_kl_exact`, `tests/test_mab_lower_bounds.py::test_formulas` |
# | A · Theorem 3.9 | [A4a §1](mab/04a_lower_bounds.ipynb#1-statement) | `bandit_unlearning.mab.lower_bounds.lower_bound_distribution`, `bandit_unlearning.mab.lower_bounds.lower_bound_small_cstar` | `tests/test_mab_lower_bounds.py::test_distribution_kl_matches_enumeration`, `tests/test_mab_lower_bounds.py::test_small_cstar_closed_form_underestimates_single_source_kl` |
# | A · Theorem A.7 | [A4a §1](mab/04a_lower_bounds.ipynb#1-statement) (step (d) of the printed proof is not a valid bound; the proof's 10Δ² KL bound is used) | `bandit_unlearning.mab.lower_bounds.lower_bound_distribution` | `tests/test_mab_lower_bounds.py::test_distribution_kl_matches_enumeration` |
# | A · Lemma A.8 | [A4b §1](mab/04b_lower_bound_checks.ipynb#1-the-kl-divergences-exactly) | `bandit_unlearning.mab.lower_bounds.sample_source_counts`, `bandit_unlearning.mab.lower_bounds.retained_kl` | `mab/04b_lower_bound_checks.ipynb::Lemma A.8: the retained count is Binomial(N - k, d(a0))`, `tests/test_mab_lower_bounds.py::test_source_counts_law` |
# | A · Algorithm 4 | [A5 §3](mab/05_mixing.ipynb#3-using-it) | `bandit_unlearning.protocol.unlearn` (on an `LCBState`, `options=UnlearnOptions(method="mixing")`) | `tests/test_mab_mixing.py::test_plan_k_prime_eta_and_sensitivity`, `tests/test_mab_mixing.py::test_mixture_matches_the_mechanism` |
# | A · Algorithm 5 | [A5 §3](mab/05_mixing.ipynb#3-using-it) | `bandit_unlearning.mab.unlearn.reference` | `tests/test_mab_mixing.py::test_reference_is_algorithm5` |
# | A · Theorem A.9 | [A5 §5](mab/05_mixing.ipynb#5-theorem-a9-audited-exactly) | `bandit_unlearning.mab.unlearn.output_distributions` | `tests/test_mab_mixing.py::test_worst_case_is_tight_for_analytic_exact_and_no_rollback_leaks` |
# | A · Theorem A.10 | [A5 §6](mab/05_mixing.ipynb#6-theorem-a10-the-bound-in--and-why-its-minimum-is-at-an-end) | `bandit_unlearning.mab.mixing.theorem_a10_bound`, `bandit_unlearning.mab.mixing.theorem_a10_best_k_prime` | `tests/test_mab_mixing.py::test_theorem_a10_bound_formula_and_endpoints` |
# | A · Algorithm 6 | [A6 §2](mab/06_imitation_learning.ipynb#2-implementation) | `bandit_unlearning.mab.imitation.fit_imitation`, `unlearn` on `bandit_unlearning.mab.imitation.ImitationState` | `tests/test_mab_imitation.py::test_unlearning_equals_retraining`, `tests/test_mab_imitation.py::test_exhaustive_small_and_broken_variant_caught` |
# | A · Theorem 3.11 | [A6 §4](mab/06_imitation_learning.ipynb#4-theorem-311-an-explicit-bound-and-what-the-printed-expression-says) | `bandit_unlearning.mab.imitation.theorem311_condition`, `bandit_unlearning.mab.imitation.theorem311_expression`, `bandit_unlearning.mab.imitation.theorem311_failure_bound` | `tests/test_mab_imitation.py::test_monte_carlo_below_bound`, `tests/test_mab_imitation.py::test_printed_expression_vacuous_at_paper_c_star` |
# | A · Table 2 | [A6 §6](mab/06_imitation_learning.ipynb#6-algorithm-6-against-algorithm-2-at--table-2), [A8b §4](mab/08b_paper_figures.ipynb#4-table-2s-unstated--which--reproduces-the-papers-row) (the unstated k swept: no k reproduces the paper's row), [A8b §5](mab/08b_paper_figures.ipynb#5-the-papers-numbers-beside-ours) (the paper's entries beside ours) | `bandit_unlearning.experiments.paper_a.run_experiment` (`"table2"`), `bandit_unlearning.experiments.paper_numbers.compare_with_paper` | `tests/test_experiments_paper_a.py::test_panel_layout_matches_the_paper`, `tests/test_experiments_paper_a.py::test_paper_statements_verdicts_at_quick_scale`, `mab/08b_paper_figures.ipynb::assert not both` |
# | A · Algorithm 7 | [A7 §3](mab/07_multi_source.ipynb#3-using-it-the-same-entry-point) | `bandit_unlearning.protocol.unlearn` (on an `LCBState`) (several source arms) | `tests/test_mab_multisource.py::test_unlearn_equals_line_by_line_algorithm7_and_algorithm2`, `tests/test_mab_multisource.py::test_corrected_rule_noises_only_the_learners_source_arm` |
# | A · Algorithm 8 | [A7 §3](mab/07_multi_source.ipynb#3-using-it-the-same-entry-point) | `bandit_unlearning.mab.unlearn.reference` | `tests/test_mab_multisource.py::test_reference_is_algorithm8` |
# | A · Theorem 3.13 | [A7 §7](mab/07_multi_source.ipynb#7-theorem-313-by-monte-carlo-the-papers-figure-3-configurations) | `bandit_unlearning.mab.multisource.theorem313_bound` | `tests/test_mab_multisource.py::test_theorem313_bound_cases` |
# | A · Figure 1 | [A8b §3](mab/08b_paper_figures.ipynb#3-reduced-scale-runs-of-every-experiment) | `bandit_unlearning.experiments.paper_a.run_experiment`, `bandit_unlearning.experiments.plots_a.plot_experiment` | `tests/test_experiments_paper_a.py::test_panel_layout_matches_the_paper`, `tests/test_experiments_paper_a.py::test_cli_writes_json_figures_and_summary` |
# | A · Figure 2 | [A8b §3](mab/08b_paper_figures.ipynb#3-reduced-scale-runs-of-every-experiment), [A5 §7](mab/05_mixing.ipynb#7-sub-optimality-against--the-papers-figure-2-setting-and-theorem-a10-by-monte-carlo) | `bandit_unlearning.experiments.paper_a.run_experiment`, `bandit_unlearning.experiments.plots_a.plot_experiment` | `tests/test_experiments_paper_a.py::test_panel_layout_matches_the_paper` |
# | A · Figure 3 | [A8b §3](mab/08b_paper_figures.ipynb#3-reduced-scale-runs-of-every-experiment), [A7 §8](mab/07_multi_source.ipynb#8-figure-the-four-methods-of-the-papers-figure-3-and-the-bound) | `bandit_unlearning.experiments.paper_a.run_experiment`, `bandit_unlearning.experiments.plots_a.plot_experiment` | `tests/test_experiments_paper_a.py::test_panel_layout_matches_the_paper`, `mab/08b_paper_figures.ipynb::assert again == results["figure3"]` |
# | A · Remark 3.8 | [A4b §6](mab/04b_lower_bound_checks.ipynb#6-how-far-apart-the-upper-and-lower-bounds-are-remarks-38-310-table-1s-rates) (near-tightness under M_f: upper / lower bound in the rollback branch is 16 e^ε √(10e ln(Nm)), constant × √ln; a wrong-rate bound rejected) | `bandit_unlearning.mab.bounds.theorem33_bound`, `bandit_unlearning.mab.lower_bounds.lower_bound_fixed` | `mab/04b_lower_bound_checks.ipynb::assert ok_f and ok_d`, `mab/04b_lower_bound_checks.ipynb::assert not ok_broken` |
# | A · Remark 3.10 | [A4b §6](mab/04b_lower_bound_checks.ipynb#6-how-far-apart-the-upper-and-lower-bounds-are-remarks-38-310-table-1s-rates) (near-tightness under M_d, C* ≥ 2: the same check with Theorems 3.5 and 3.9) | `bandit_unlearning.mab.bounds.theorem35_bound`, `bandit_unlearning.mab.lower_bounds.lower_bound_distribution` | `mab/04b_lower_bound_checks.ipynb::assert ok_f and ok_d` |
# | A · Table 1 | [A4b §6](mab/04b_lower_bound_checks.ipynb#6-how-far-apart-the-upper-and-lower-bounds-are-remarks-38-310-table-1s-rates) (the rates as the theorems give them, checked; the table's own entries are not restated) | `bandit_unlearning.mab.bounds.theorem33_bound`, `bandit_unlearning.mab.bounds.theorem35_bound`, `bandit_unlearning.mab.lower_bounds.lower_bound_fixed`, `bandit_unlearning.mab.lower_bounds.lower_bound_distribution` | `mab/04b_lower_bound_checks.ipynb::assert ok_f and ok_d` |
# | B · Definition 2.1 | [B3a §1](rl/03a_exact_unlearning.ipynb#1-statement-paper-b-2-3) | `bandit_unlearning.protocol.unlearn` (on a `Run`), `bandit_unlearning.experiments.exactness.battery` | `tests/test_exact_learner.py::test_unlearn_with_zero_noise_equals_retraining`, `tests/test_rl_unlearning.py::test_battery_detects_a_broken_variant_on_rl_runs` |
# | B · Definition 2.2 | [B2a §3](rl/02a_binary_tree.ipynb#3-noise-calibration-the-papers--and-an-exact-one) | `bandit_unlearning.exact.tree.path_tv`, `bandit_unlearning.exact.tree.sigma_paper`, `bandit_unlearning.exact.tree.sigma_exact` | `tests/test_exact_tree.py::test_calibrations` |
# | B · Algorithm 1 | [B3a §3](rl/03a_exact_unlearning.ipynb#3-implementation-the-framework) | `bandit_unlearning.exact.learner.PrefixSumLearner`, `bandit_unlearning.exact.learner.train` | `tests/test_exact_learner.py::test_train_records_and_verifies`, `tests/test_exact_learner.py::test_extend_equals_training_at_once` |
# | B · Algorithm 2 | [B2a §4](rl/02a_binary_tree.ipynb#4-the-tree), [B2b §1](rl/02b_dense_tree.ipynb#1-the-dense-tree), [B10 §3](rl/10_light_tree.ipynb#3-implementation) | `bandit_unlearning.exact.tree.BinaryTree`, `bandit_unlearning.exact.light_tree.LightTree`, `bandit_unlearning.exact.tree.dyadic_decomposition` | `tests/test_exact_tree.py::test_prefix_sums_loop_oracle`, `tests/test_exact_light_tree.py::test_bit_identical_under_random_operations` |
# | B · Algorithm 3 | [B3a §2](rl/03a_exact_unlearning.ipynb#2-why-algorithm-3-is-exact-theorem-33-1) | `bandit_unlearning.protocol.unlearn` (on a `Run`), `bandit_unlearning.exact.tree.PathCoupling`, `bandit_unlearning.privacy.coupling.reflection_coupling` | `tests/test_exact_tree.py::test_unlearn_leaf_structure`, `tests/test_exact_coupling.py::test_change_probability_is_tv` |
# | B · Theorem 3.3 | [B4 §1](rl/04_theorem_3_3.ipynb#1-exactness-theorem-33-1), [B4 §2](rl/04_theorem_3_3.ipynb#2-retraining-probability-theorem-33-3-erratum-e11) | `bandit_unlearning.experiments.exactness.battery`, `bandit_unlearning.exact.learner.path_retrain_probability`, `bandit_unlearning.experiments.unlearning_cost.retrain_probability_uniform` | `rl/04_theorem_3_3.ipynb::assert smallest > LEVEL_EX`, `rl/04_theorem_3_3.ipynb::assert abs(measured_p - exact_p) <= margin`, `tests/test_exact_learner.py::test_uniform_cost_formulas_against_brute_force` |
# | B · Algorithm 4 | [B7a §3](rl/07a_stable_ucbvi.ipynb#3-implementation), [B6a §2](rl/06a_ucbvi_planner.ipynb#2-planning-from-noisy-prefix-sums-algorithm-4-paper-b-algorithm-4) | `bandit_unlearning.rl.stable.stable_ucbvi`, `bandit_unlearning.rl.ucbvi.plan_from_statistics`, `bandit_unlearning.rl.ucbvi.optimistic_value_iteration` | `tests/test_rl_ucbvi.py::test_planner_matches_spec_loop`, `tests/test_rl_stable.py::test_zero_noise_is_exactly_run_ucbvi` |
# | B · Theorem 4.1 | [B7a §1](rl/07a_stable_ucbvi.ipynb#1-statement-paper-b-algorithm-4-and-theorem-41), [B7b §1](rl/07b_stable_ucbvi_regret.ipynb#1-regret-over--for-several--theorem-41-measured), [B7b §2](rl/07b_stable_ucbvi_regret.ipynb#2-the-bounds-three-terms-and-) | `bandit_unlearning.rl.stable.theorem_41_terms`, `bandit_unlearning.rl.stable.rho_theorem`, `bandit_unlearning.rl.stable.stable_sigma` | `tests/test_rl_stable.py::test_theorem_terms_and_rho_choice`, `tests/test_rl_stable.py::test_stable_regret_curve_and_summary` |
# | B · optimism under noise (beyond the paper) | [B7c §1](rl/07c_bernstein_bonus.ipynb#1-statement), [B7c §2](rl/07c_bernstein_bonus.ipynb#2-proof) | `bandit_unlearning.rl.bernstein.noisy_bernstein_values`, `bandit_unlearning.rl.bernstein.noisy_bernstein_constants` | `tests/test_rl_bernstein.py::test_sandwich_at_every_step_and_episode`, `tests/test_rl_bernstein.py::test_dropping_the_noise_correction_breaks_optimism`, `tests/test_rl_bernstein.py::test_halving_the_bonus_breaks_optimism_on_one_pair` |
# | B · Theorem 4.4 | [B9a §1](rl/09a_lower_bound.ipynb#1-statement-paper-b-theorem-44-and-lemmas-a5-a6), [B9a §4](rl/09a_lower_bound.ipynb#4-tv-stable-ucb-vi-on-the-hard-instance-regret-against--an-illustration) | `bandit_unlearning.experiments.rl_lower_bound.lower_bound_experiment`, `bandit_unlearning.rl.envs.independent_bandits` | `rl/09a_lower_bound.ipynb::assert slope_lb > 0.3 and slope_first > 0.5`, `tests/test_rl_lower_bound.py::test_lower_bound_experiment_small` |
# | B · Lemma A.5 | [B9a §1](rl/09a_lower_bound.ipynb#1-statement-paper-b-theorem-44-and-lemmas-a5-a6) (stated in the paper; used in the proof of Theorem 4.4; the project reads it as the relations between DP and TV-stability), [B9a §3](rl/09a_lower_bound.ipynb#3-the-lemma-behind-the--term-checked-exactly) (checked on randomised response and the Gaussian mechanism) | `bandit_unlearning.experiments.rl_lower_bound.sum_mechanism_rho` | `rl/09a_lower_bound.ipynb::assert math.isclose(tv_rr, math.expm1(eps) / (math.exp(eps) + 1)) and tv_rr <= math.expm1(eps)`, `rl/09a_lower_bound.ipynb::assert all(np.isfinite(logs)) and math.isclose(math.exp(logs[0]), sum_mechanism_rho(sigma), rel_tol=1e-12)` |
# | B · Lemma A.6 | [B9a §1](rl/09a_lower_bound.ipynb#1-statement-paper-b-theorem-44-and-lemmas-a5-a6) (stated in the paper; used in the proof of Theorem 4.4; the project reads it as Karwa & Vadhan's coupling bound), [B9a §3](rl/09a_lower_bound.ipynb#3-the-lemma-behind-the--term-checked-exactly) (checked exactly on a Gaussian-noised sum of bits) | `bandit_unlearning.experiments.rl_lower_bound.karwa_vadhan_bound`, `bandit_unlearning.experiments.rl_lower_bound.gaussian_sum_tv` | `rl/09a_lower_bound.ipynb::assert tv <= min(1.0, raw) + 1e-9`, `rl/09a_lower_bound.ipynb::assert too_little > karwa_vadhan_bound(20, 0.01, 0.1)` |
#
# ### Beyond the papers
#
# Results of the project's own that no paper numbers (the table above lists the papers' results only):
#
# | result | chapter, section | function(s) | check |
# |---|---|---|---|
# | Contextual LCB, its radius and sub-optimality | [A10a §1](mab/10a_contextual_lcb.ipynb#1-the-learner) | `bandit_unlearning.mab.contextual.fit_contextual`, `bandit_unlearning.mab.contextual.confidence_radius`, `bandit_unlearning.mab.contextual.lcb_scores` | `tests/test_mab_contextual.py::test_confidence_radius_formula` |
# | Rollback = retraining (rank-$k$ downdate) | [A10a §2](mab/10a_contextual_lcb.ipynb#2-rollback-a-rank--downdate-equal-to-retraining) | `bandit_unlearning.mab.contextual.rollback` | `tests/test_mab_contextual.py::test_rollback_equals_retraining`, `tests/test_mab_contextual.py::test_rollback_is_bit_exact_on_integer_data` |
# | Sensitivity of the ridge centre to deleting $k$ rows | [A10a §3](mab/10a_contextual_lcb.ipynb#3-the-gaussian-mechanism-on-the-released-centres), [§5](mab/10a_contextual_lcb.ipynb#5-audit-the-sensitivity-bound-against-a-numerical-worst-case) | `bandit_unlearning.mab.contextual.parameter_sensitivity`, `bandit_unlearning.mab.contextual.deletion_sensitivity` | `tests/test_mab_contextual.py::test_sensitivity_dominates_random_designs` |
# | The Gaussian branch is $(\varepsilon, \delta)$-unlearning | [A10a §6](mab/10a_contextual_lcb.ipynb#6-audit-privacy-of-the-released-policy-exactly) | `unlearn` on `bandit_unlearning.mab.contextual.ContextualState`, `bandit_unlearning.mab.contextual.noisy_action_probability` | `tests/test_mab_contextual.py::test_gaussian_branch_is_private_exactly_on_a_tight_design` |
# | The adaptive switch and its reference worlds | [A10a §4](mab/10a_contextual_lcb.ipynb#4-the-adaptive-switch-from-the-two-branch-bounds) | `bandit_unlearning.mab.contextual.branch_bounds`, `bandit_unlearning.mab.contextual.reference_contextual` | `tests/test_mab_contextual.py::test_unlearn_records_and_reference_worlds` |
# | Sequential sensitivity and the contextual lifecycle | [A10b §1](mab/10b_contextual_in_use.ipynb#1-the-promise-after-a-sequence-of-requests) | `bandit_unlearning.mab.contextual_model.ContextualModel`, `bandit_unlearning.mab.contextual_model.sequential_sensitivity`, `bandit_unlearning.mab.contextual_model.ContextualReleaseState` | `tests/test_mab_contextual.py::test_model_live_statistics_equal_a_refit_after_every_request`, `tests/test_protocol.py::test_the_contextual_release_state_forgets_the_deleted_rows` |

# %% [markdown]
# **Plain modules** (code no chapter explains, written as ordinary Python): `bandit_unlearning.checks`
# (argument validation shared by every public function), `bandit_unlearning.shapes` (the one broadcast
# check), `bandit_unlearning.literate` (`add_to_class`, `FieldView`, `sections_from`: the helpers that let a
# class grow over several cells and say a twin's docstring sections once), `bandit_unlearning.secrecy`
# (key material from OS entropy, the seed opt-in), `bandit_unlearning.copying` and `bandit_unlearning.cli`
# (`python -m bandit_unlearning copy | reproduce`), `bandit_unlearning.experiments.runner` (the task runner:
# progress, worker pools, `run_together`, Dask), `bandit_unlearning.experiments.paper_numbers` (the
# papers' printed numbers), `bandit_unlearning.exact.accel` and `bandit_unlearning.exact.accel_kernels`
# (the optional compiled tree kernels) and `bandit_unlearning.testing.refusals` (a test helper).
#
# The cell below keeps this page honest: it lists every chapter on disk with the modules it exports,
# and fails if a chapter or a module (generated or plain) is missing from this page.

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
    for notebook in dict.fromkeys(c.notebook for c in chunks):     # a module may be filled by several chapters
        modules_of.setdefault(notebook.relative_to("notebooks"), []).append(module)
chapters = sorted(p for p in Path(".").rglob("*.py") if p.name != "index.py" and ".ipynb_checkpoints" not in p.parts)
print("bandit_unlearning", bandit_unlearning.__version__, "-", len(chapters), "chapters")
for chapter in chapters:
    modules = sorted(modules_of.get(chapter, []))
    print(f"{chapter.with_suffix('').as_posix():32} -> {', '.join(modules) or '(no exports)'}")
    assert f"({chapter.with_suffix('.ipynb').as_posix()})" in index_text, f"{chapter} is missing from the index"
    for module in modules:
        assert f"`{module}`" in index_text, f"{module} is missing from the index"
package = ROOT / "bandit_unlearning"
for path in package.rglob("*.py"):
    dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name not in ("__init__.py", "__main__.py") and "GENERATED by tools/export.py" not in path.read_text():
        assert f"`{dotted}`" in index_text, f"the plain module {dotted} is missing from the index"

# %% [markdown]
# The cell below checks the table against the repository: every section link points to a heading of
# that chapter (the anchor the book gives it), every function is public in its module, every check
# exists (a test function in `tests/`, or the quoted line in the chapter), every row's result is cited
# in a chapter it links to, and every numbered result any chapter cites has a row.  A citation
# belongs to the paper named just before it ("Paper B Algorithm 4"), else to the part of the
# errata page it sits in, else to the chapter's part (A for `mab/` and `privacy/`, B for `rl/`);
# citations with a year just before them ("Dong, Roth & Su 2019, Corollary 3.3") are other papers'.

# %%
import functools
import importlib
import json
import re

KINDS = "Theorem|Lemma|Proposition|Corollary|Remark|Algorithm|Figure|Table|Definition"
NUMBER = r"(?:[A-Z]\.)?\d+(?:\.\d+)?"
CITATION = re.compile(rf"\b({KINDS})s?\s+({NUMBER}(?:\s*(?:,|–|-|and|or)\s*{NUMBER}(?![\d.]))*)")
PART_PAPER = {"mab": "A", "privacy": "A", "rl": "B"}
ROW = re.compile(rf"^# \| ([AB]) · ({KINDS}) ({NUMBER}) \| (.*) \| (.*) \| (.*) \|$", re.M)


@functools.cache
def cells(chapter, kind=None):
    """The sources of a chapter's cells (all, or of one kind), from its stored notebook."""
    nb = json.loads(Path(chapter).read_text())
    return tuple("".join(c["source"]) for c in nb["cells"] if kind is None or c["cell_type"] == kind)


@functools.cache
def anchors(chapter):
    """The anchors the book gives the chapter's headings: math dropped, then GitHub's slug rule."""
    titles = re.findall(r"^#{1,6} (.+)$", "\n".join(cells(chapter, "markdown")), re.M)
    return {re.sub(r"[^\w\- ]", "", re.sub(r"\$[^$]*\$", "", t).lower().replace(" ", "-")) for t in titles}


@functools.cache
def citations(chapter):
    """{(paper, kind, number)} of the numbered results the chapter cites (text, code and docstrings)."""
    text = "\n".join(cells(chapter))
    found = set()
    for m in CITATION.finditer(text):
        before = text[max(0, m.start() - 100):m.start()]
        if re.search(r"(19|20)\d\d\D{0,12}$", before):
            continue  # another paper's numbering
        named = re.findall(r"Paper ([AB])", before[-60:])
        part = re.findall(r"^##+ Paper ([AB])", text[:m.start()], re.M)
        paper = named[-1] if named else part[-1] if part else PART_PAPER[Path(chapter).parent.name]
        pieces = re.split(r"\s*(,|–|-|and|or)\s*", m.group(2))
        numbers = [pieces[0]]
        for op, n in zip(pieces[1::2], pieces[2::2]):
            if op in "–-" and numbers[-1].isdigit() and n.isdigit():   # "Algorithms 2–5"
                numbers += [str(i) for i in range(int(numbers[-1]) + 1, int(n) + 1)]
            else:
                numbers.append(n)
        found |= {(paper, m.group(1), n) for n in numbers}
    return found


def public(dotted):
    module, _, name = dotted.rpartition(".")
    return name in getattr(importlib.import_module(module), "__all__", ())


def table_problems(text):
    """Everything wrong with the table in ``text`` (the source of this page): [] when it is right."""
    problems, rows = [], set()
    for paper, kind, number, where, functions, checks in ROW.findall(text):
        key, name = (paper, kind, number), f"{paper} · {kind} {number}"
        problems += [f"{name} has two rows"] * (key in rows)
        rows.add(key)
        links = re.findall(r"\]\(([^)#]+)#([^)]+)\)", where)
        problems += [f"{name}: no chapter link"] * (not links)
        for chapter, anchor in links:
            if not Path(chapter).is_file():
                problems.append(f"{name}: no chapter {chapter}")
            elif anchor not in anchors(chapter):
                problems.append(f"{name}: no heading #{anchor} in {chapter}")
        if not any(Path(c).is_file() and key in citations(c) for c, _ in links):
            problems.append(f"{name} is not cited in the chapters its row links to")
        names = re.findall(r"`(bandit_unlearning\.[\w.]+)`", functions)
        problems += [f"{name}: no function"] * (not names)
        problems += [f"{name}: {f} is not public" for f in names if not public(f)]
        named_checks = re.findall(r"`([^`]+?)::([^`]+)`", checks)
        problems += [f"{name}: no check"] * (not named_checks)
        for file, what in named_checks:
            if file.startswith("tests/"):
                found = (ROOT / file).is_file() and f"\ndef {what}(" in (ROOT / file).read_text()
            else:
                found = Path(file).is_file() and any(what in source for source in cells(file))
            problems += [f"{name}: no check {file}::{what}"] * (not found)
    for key in sorted(set(cited) - rows):
        problems.append(f"{key[0]} · {key[1]} {key[2]} is cited by {cited[key]} but has no row")
    return problems


cited = {}
for chapter in chapters:
    for key in citations(chapter.with_suffix(".ipynb")):
        cited.setdefault(key, []).append(chapter.with_suffix("").as_posix())
problems = table_problems(index_text)
assert not problems, problems
papers = [row[0] for row in ROW.findall(index_text)]
print(f"{len(papers)} results in the table ({papers.count('A')} of Paper A, {papers.count('B')} of Paper B); "
      f"the chapters cite {len(cited)}, all present; every link, function and check exists")

# The same check rejects a table with a row missing, a dangling link, a renamed test or a private name.
row_b33 = next(line for line in index_text.splitlines() if line.startswith("# | B · Theorem 3.3 |"))
broken = {
    "row missing": index_text.replace(row_b33 + "\n", ""),
    "dangling link": index_text.replace("#1-exactness-theorem-33-1)", "#1-exactness)"),
    "renamed test": index_text.replace("::test_reference_is_algorithm8`", "::test_reference_is_algorithm_8`"),
    "not public": index_text.replace("`bandit_unlearning.mab.unlearn.reference`", "`bandit_unlearning.mab.unlearn.np`"),
}
for what, text in broken.items():
    found = table_problems(text)
    print(f"{what:14} -> {found[0]}")
    assert found, what
