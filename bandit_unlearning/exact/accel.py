"""Optional compiled kernels for the binary tree's node keys and node noise (numba).

The numpy code of ``bandit_unlearning.exact.tree`` is the reference: ``draw_node_keys`` hashes three
raw generator words per key with ``hashlib``'s BLAKE2b (24-byte digest, personalised
``KEY_PERSON``), and ``node_noise`` builds an SFC64 from the key (state ``(a, b, c, 1)``, 12 outputs
discarded) and draws numpy's ziggurat standard normals from it.  ``exact.accel_kernels`` computes
the same numbers in compiled loops -- BLAKE2b's single-block compression as RFC 7693 states it,
SFC64's step, numpy's ziggurat with numpy's own tables (as numba ships them) -- so that a tree
appends a step without building a generator per node.  ``tests/test_exact_accel.py`` checks them
bit for bit against the reference (keys, noise, prefix sums, unlearning records) on several seeds
and sizes.

Install with ``pip install -e '.[accel]'`` (``make env`` installs it with the dev extras).  Without
numba the package runs the reference code only.  ``kernels()`` gives the compiled module (imported,
and numba with it, on the first call) or ``None``.  The kernels are off by default:
``set_enabled(True)``, or the environment variable ``BANDIT_UNLEARNING_ACCEL=1`` at import, makes
every tree use them.  Off by default because they cost what the reference does not: the first call in
a process imports numba (about 1 s) and, in a fresh checkout, compiles them (2-24 s); and the dense
tree's compiled step keeps its prefix sum and two work vectors of ``d`` numbers more than the
reference (CliffWalking at T = 8: 16.2 MB against 11.4 MB traced), which the memory estimate of
``rl.stable.training_cost`` does not count.

Contract: the kernels validate nothing; ``exact.tree`` and ``exact.light_tree`` check every
argument at their public boundary first.
"""

__all__ = ["available", "enabled", "set_enabled", "kernels", "BLAKE2B_IV", "BLAKE2B_SIGMA", "BLAKE2B_H0"]

import importlib.util
import os

import numpy as np

from bandit_unlearning.kernel import KEY_PERSON

_state: dict = {"enabled": os.environ.get("BANDIT_UNLEARNING_ACCEL", "0") == "1", "module": None}


def available() -> bool:
    """Whether numba is installed (the kernels can be used).

    Returns
    -------
    bool
        ``True`` when ``numba`` can be imported.
    """
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # a module entry of None (import blocked) or a broken install
        return False


def enabled() -> bool:
    """Whether the trees use the compiled kernels.

    Returns
    -------
    bool
        ``True`` when numba is installed and the kernels are switched on.
    """
    return bool(_state["enabled"]) and available()


def set_enabled(flag: bool) -> bool:
    """Switch the compiled kernels on or off for the whole process.

    Parameters
    ----------
    flag : bool
        ``True``: the trees use the kernels (a ``RuntimeError`` when numba is absent); ``False``:
        the numpy reference code.

    Returns
    -------
    bool
        The previous setting (as ``enabled()`` gave it).
    """
    if type(flag) is not bool:
        raise TypeError(f"flag must be a bool, got {flag!r}")
    if flag and not available():
        raise RuntimeError("the compiled kernels need numba: pip install -e '.[accel]'")
    previous = enabled()
    _state["enabled"] = flag
    return previous


def kernels():
    """The compiled kernels (``bandit_unlearning.exact.accel_kernels``), or ``None`` when they are
    switched off or numba is absent.

    Returns
    -------
    module or None
        The kernel module, imported (and compiled or loaded from numba's cache) on the first call.
    """
    if not _state["enabled"]:
        return None
    module = _state["module"]
    if module is None:
        if not available():
            _state["enabled"] = False
            return None
        # Imported by name, not by an import statement: a copy of a tree module (`python -m
        # bandit_unlearning copy`) then needs numpy and scipy only and runs the reference code.
        try:
            module = importlib.import_module(__name__.rpartition(".")[0] + ".accel_kernels")
        except ImportError:  # a copy without the kernels' file
            _state["enabled"] = False
            return None
        _state["module"] = module
    return module


# BLAKE2b's constants (RFC 7693): the initial chaining value, the message schedule, and the chaining
# value after the parameter block of the node-key hash -- digest length 24, no key, fanout 1, depth 1,
# no salt, the personalisation in words 6 and 7 (little-endian, zero-padded to 16 bytes)
BLAKE2B_IV = np.array(
    [
        0x6A09E667F3BCC908,
        0xBB67AE8584CAA73B,
        0x3C6EF372FE94F82B,
        0xA54FF53A5F1D36F1,
        0x510E527FADE682D1,
        0x9B05688C2B3E6C1F,
        0x1F83D9ABFB41BD6B,
        0x5BE0CD19137E2179,
    ],
    dtype=np.uint64,
)
BLAKE2B_SIGMA = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ],
    dtype=np.int64,
)
_PERSON = (KEY_PERSON + bytes(16))[:16]
BLAKE2B_H0 = BLAKE2B_IV.copy()
BLAKE2B_H0[0] ^= np.uint64(0x01010000 | 24)
BLAKE2B_H0[6] ^= np.uint64(int.from_bytes(_PERSON[:8], "little"))
BLAKE2B_H0[7] ^= np.uint64(int.from_bytes(_PERSON[8:], "little"))
for _a in (BLAKE2B_IV, BLAKE2B_SIGMA, BLAKE2B_H0):
    _a.setflags(write=False)
