"""bandit_unlearning: literate reference implementation of machine unlearning for bandits and RL.

Subpackages (most modules are generated from the chapters under ``notebooks/``):

* ``bandit_unlearning.mab`` -- Paper A: offline stochastic multi-armed bandits;
* ``bandit_unlearning.montecarlo`` -- sizing helpers for Monte Carlo checks.

See ``notebooks/index.ipynb`` for the reading order and the map of chapters to modules.
"""

__version__ = "0.1.0"
