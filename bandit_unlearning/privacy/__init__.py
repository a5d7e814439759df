"""Privacy tools shared by every unlearning chapter.

- ``bandit_unlearning.privacy.gaussian`` (chapter notebooks/privacy/01a_gaussian_mechanism): the
  privacy scale ``gamma``, the classic Gaussian calibration (only for epsilon < 1, erratum E1), the
  analytic Gaussian mechanism of Balle & Wang (2018), and the exact privacy profile
  ``gaussian_delta`` with its inverse ``gaussian_epsilon``.
- ``bandit_unlearning.privacy.audit`` (chapter notebooks/privacy/01b_audits): exact audits of finite-output mechanisms
  (``hockey_stick_delta``, ``hockey_stick_epsilon``) and a Monte Carlo auditor (``audit_epsilon``:
  Clopper-Pearson lower confidence bound on the epsilon achieved, Bonferroni over the events).

Import from the submodules; this package re-exports nothing.
"""
