"""Paper B's generic framework: the binary tree mechanism, prefix-sum learners and their exact
unlearning by maximal coupling (Algorithms 1-3, Theorem 3.3).

Modules (generated from ``notebooks/rl/02a_binary_tree.py``, ``notebooks/rl/02b_dense_tree.py``,
``notebooks/rl/03a_exact_unlearning.py``, ``notebooks/rl/03b_online_bandit.py`` and
``notebooks/rl/10_light_tree.py``):

* ``bandit_unlearning.exact.tree`` -- ``BinaryTree`` (anytime, dense, rows in post-order: the readable
  reference), its bookkeeping (``Node``, ``dyadic_decomposition``, ``leaf_path``,
  ``postorder_position``, ...), the pinned-down randomness and arithmetic shared by every tree
  (per-node keys ``draw_node_keys`` / ``node_noise``, ``coupling_accepts``, ``fold_rows``,
  ``SparseStatistic``), noise calibrations (``sigma_paper``, ``sigma_exact``, ``path_tv``),
  ``eps_app`` and the path coupling ``BinaryTree.unlearn_leaf -> PathCoupling``;
* ``bandit_unlearning.exact.light_tree`` -- ``LightTree``: the same interface and, for the same
  generator, the same outputs bit for bit, in ``O(non-zeros + T + d log T)`` memory (sparse leaves,
  per-node keys instead of noise vectors, the current decomposition maintained incrementally); the
  default ``tree_factory``;
* ``bandit_unlearning.exact.learner`` -- ``PrefixSumLearner(d, sigma, oracle, update, initial_model,
  B, tree_factory)``, ``train``, ``extend``, ``ExactOptions`` and the protocol's
  ``unlearn(run, DeleteStep(t))`` (Algorithm 3, ``bandit_unlearning.protocol``) returning an immutable
  ``Run`` and an ``UnlearnRecord`` (data-independent by default; ``ExactOptions(diagnostics=True)`` adds
  the deleted statistic's shift and exact cost), ``verify(run)``, replayable users (``ReplayableUser``, ``replayable_users``) and
  the default dummy ``ZERO_USER``.  Every ``rng`` defaults to fresh OS entropy; a seeded generator is
  an opt-in whose seed is key material;
* ``bandit_unlearning.exact.bandit`` -- the first instance: UCB for an online multi-armed bandit;
* ``bandit_unlearning.exact.linucb`` -- TV-stable disjoint LinUCB (chapter B12, ``notebooks/rl/12_linucb.py``):
  per-user statistics ``x x^T`` and ``r x`` in the chosen arm's block, the noisy Gram matrix shifted by a
  spectral-norm bound, a widened confidence radius;
* ``bandit_unlearning.exact.registry`` -- deleting a user, not a step (chapter B11,
  ``notebooks/rl/11_delete_by_user.py``): ``user_steps``, the protocol's ``DeleteSteps`` / ``DeleteUser``
  requests on a run (every step of a user in one coupling pass, at most one retraining), ``verify_unlearned`` (replays only the recomputed suffix).

The TV distance and the maximal coupling of Gaussians live in ``bandit_unlearning.privacy.coupling``;
cost measurements in ``bandit_unlearning.experiments.unlearning_cost``; the exactness battery in
``bandit_unlearning.experiments.exactness``.
"""
