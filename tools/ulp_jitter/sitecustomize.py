"""A stress test for stored outputs: numpy's transcendental functions off by one ulp.

Another CPU's vector kernels give the same inputs the same outputs, but not always the same last bit
as this machine's.  With ``ULP_JITTER=<seed>`` and this folder on ``PYTHONPATH`` (``make jitter``),
every kernel started by nbval imports this module first, and ``numpy.exp``, ``log``, ``tanh``,
``power``, ... are replaced by wrappers that move a float64 result one ulp up, one ulp down or not at
all — deterministically, by a hash of the result's bits and the seed (so, like a real kernel, the same
input always gives the same output and exact identities such as "rollback equals retraining"
survive).  A stored output that changes under it depends on last bits somewhere.  It only reaches
code that calls these functions as attributes of the numpy module (``np.exp(...)``), which is how the
package calls them; scipy's compiled code is not affected (it does not dispatch on the CPU).
"""

import os

if os.environ.get("ULP_JITTER"):
    import numpy as np

    _MULT = np.uint64((0x9E3779B97F4A7C15 + 2 * int(os.environ["ULP_JITTER"])) % 2**64 | 1)
    _NAMES = (
        "exp",
        "log",
        "expm1",
        "log1p",
        "tanh",
        "log10",
        "log2",
        "exp2",
        "cbrt",
        "sinh",
        "cosh",
        "arctan",
        "arcsinh",
        "power",
        "sin",
        "cos",
        "arctan2",
    )

    def _nudge(a):
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            with np.errstate(over="ignore"):
                h = (a.view(np.uint64) * _MULT) >> np.uint64(62)  # 0: down, 1: up, else keep
            movable = np.isfinite(a) & (a != 0)
            a[...] = np.where(
                movable & (h == 1),
                np.nextafter(a, np.inf),
                np.where(movable & (h == 0), np.nextafter(a, -np.inf), a),
            )
            return a
        if isinstance(a, np.float64):
            return _nudge(np.array([a]))[0]
        return a

    def _wrap(ufunc):
        def nudged(*args, **kwargs):
            out = ufunc(*args, **kwargs)
            return tuple(_nudge(o) for o in out) if isinstance(out, tuple) else _nudge(out)

        for attr in ("reduce", "accumulate", "outer", "at", "nin", "nout", "types", "identity", "__name__"):
            setattr(nudged, attr, getattr(ufunc, attr))
        return nudged

    for _name in _NAMES:
        setattr(np, _name, _wrap(getattr(np, _name)))
