"""Test doubles and check helpers used by the chapters and the tests, never by the algorithms.

* ``bandit_unlearning.testing.broken`` -- deliberately broken versions of Algorithm 3's tree step
  (Paper B, chapter B4), which the exactness checks must reject;
* ``bandit_unlearning.testing.montecarlo`` -- sizing helpers for Monte Carlo checks (chapter A1), so
  that a correct implementation fails a sampled check with a stated small probability;
* ``bandit_unlearning.testing.refusals`` -- ``refused``: the text of the error a call that must refuse
  its input raises (a plain module).

No module of the algorithms imports from this subpackage.
"""
