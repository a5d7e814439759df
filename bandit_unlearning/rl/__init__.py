"""Paper B's RL instance: episodic tabular MDPs, UCB-VI and TV-stable UCB-VI (Algorithm 4).

Modules (generated from the chapters under ``notebooks/rl/``):

* ``mdp`` -- ``TabularMDP``, exact planning (``value_iteration``), exact policy evaluation and the
  exact expected ``regret`` of a sequence of policies (chapter B5);
* ``envs`` -- RiverSwim, a 5x5 gridworld with walls, Garnet MDPs, the hard instance of
  Theorem 4.4 (``independent_bandits``) (chapter B5);
* ``users`` -- replayable users (erratum E10): counter-based environment randomness, ``rollout``,
  ``rollout_batch`` (chapter B5);
* ``gym`` -- optional Gymnasium interoperability (``to_gymnasium``, ``from_gymnasium``) (chapter B5);
* ``ucbvi`` -- episode statistics (Paper B §4), the planner of Algorithm 4 from (noisy) prefix sums
  (``plan_from_statistics``) and the fast non-private driver ``run_ucbvi`` (chapter B6);
* ``stable`` -- TV-stable UCB-VI (Algorithm 4, Theorem 4.1) as a prefix-sum learner of
  ``bandit_unlearning.exact.learner``: ``stable_ucbvi(mdp, T, rho)``, whose runs ``train`` and the
  protocol's ``unlearn`` (Algorithm 3) and ``verify`` handle unchanged; its users carry their own keys
  (``EpisodeUser``, ``episode_users``, ``population_users``) (chapter B7a).

Experiments on these learners live in ``bandit_unlearning.experiments`` (``rl_regret``, ``rl_stable``,
``rl_unlearning``, ``rl_lower_bound``, and ``rl_paper.reproduce_rl`` for the command line).
"""
