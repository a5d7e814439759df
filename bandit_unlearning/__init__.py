"""bandit_unlearning: literate reference implementation of machine unlearning for bandits and RL.

Subpackages (most modules are generated from the chapters under ``notebooks/``):

* ``bandit_unlearning.mab`` -- Paper A: offline stochastic multi-armed bandits (data, LCB learner,
  unlearning mechanisms, bounds, imitation learning);
* ``bandit_unlearning.privacy`` -- Gaussian mechanism calibration, audits, couplings;
* ``bandit_unlearning.exact`` -- Paper B's framework: binary tree mechanism, prefix-sum learners and
  their exact unlearning;
* ``bandit_unlearning.rl`` -- Paper B's RL instance: tabular MDPs, UCB-VI and TV-stable UCB-VI;
* ``bandit_unlearning.experiments`` -- paper reproductions and the runner behind the CLI;
* ``bandit_unlearning.protocol`` -- the one unlearning protocol of both papers: ``unlearn(state, request, *,
  options=None, rng=None) -> (new_state, record)``, ``verify(state)`` and the typed requests (tour, section 3);
* ``bandit_unlearning.testing`` -- what the checks use, never the algorithms: deliberately broken
  variants (``testing.broken``), Monte Carlo sizing helpers (``testing.montecarlo``) and ``refused``
  (``testing.refusals``);
* ``bandit_unlearning.checks`` -- the argument checks every public function uses (TypeError for a wrong
  type, ValueError for a bad value, nothing drawn or changed before they pass) and the one rule for
  ``rng`` arguments (a Generator as is, None for fresh OS entropy, an int seed as an explicit opt-in);
* ``bandit_unlearning.secrecy`` -- pickling follows the contract of saving: objects holding node keys or
  noise (trees, runs) pickle only inside ``allow_secrets()``.

See ``notebooks/index.ipynb`` for the reading order and the map of chapters to modules.
"""

__version__ = "0.1.0"
