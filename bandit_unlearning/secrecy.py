"""Pickling follows the same contract as saving (a plain module: no chapter exports it).

The rule, stated once for the whole package (chapter B2a, *keys are secrets*):

* an object that holds **key material** -- node keys, or noise that a key would regenerate -- refuses
  to be pickled unless the caller opts in: ``LightTree`` (its node keys), ``BinaryTree`` (its clean
  and noisy values, whose difference is the noise) and ``Run`` (its tree).  ``pickle.dumps`` raises a
  ``TypeError`` that says how to opt in:

  >>> with allow_secrets():                 # doctest: +SKIP
  ...     blob = pickle.dumps(run)           # the bytes are as secret as the keys

* every other object pickles freely, and holds no key material: learners, users (the data itself,
  the caller's to protect), models, ``UnlearnRecord`` and ``PathCoupling`` (the coupling's outcomes
  only), configurations, batched results (``BatchRun``: sums and the population seeds the caller
  passed, no node key).

``copy.copy`` and ``copy.deepcopy`` work without opting in (an in-memory copy persists nothing).  The
opt-in is a ``contextvars`` flag: it holds for the ``with`` block in this thread (or task) only.
"""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["allow_secrets", "secrets_allowed"]

_ALLOWED = contextvars.ContextVar("bandit_unlearning_secrets_allowed", default=False)


@contextlib.contextmanager
def allow_secrets():
    """``with allow_secrets(): pickle.dumps(obj)`` -- the explicit opt-in to pickle an object holding
    key material (node keys, or noise).  The pickle then is key material: keep it as secret as the
    keys, and do not keep it past a deletion it should forget.

    Yields
    ------
    None
        Inside the ``with`` block (and in code it calls, in the same context), key-holding objects may
        be pickled; the permission ends with the block, also on an exception.
    """
    token = _ALLOWED.set(True)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def secrets_allowed() -> bool:
    """Whether the caller is inside ``allow_secrets()``.

    Returns
    -------
    bool
        ``True`` inside ``allow_secrets()`` (in the current context), else ``False``.
    """
    return _ALLOWED.get()


def check_pickle_allowed(obj, holds: str) -> None:
    """Raise the refusal (a ``TypeError`` naming the opt-in) unless inside ``allow_secrets()``;
    ``holds`` says what key material ``obj`` holds.  For ``__getstate__`` of key-holding classes."""
    if not _ALLOWED.get():
        name = type(obj).__name__
        raise TypeError(
            f"a {name} holds {holds}: its pickle would be a copy of that key material. Pickle it "
            f"only on purpose, inside `with bandit_unlearning.secrecy.allow_secrets():`, and keep the "
            f"bytes as secret as the keys (copy.deepcopy needs no opt-in)"
        )
