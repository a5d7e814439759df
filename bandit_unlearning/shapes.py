"""Shape checks shared by the vectorised functions of the package (a plain module: no chapter exports it).

Many formulas of both papers are evaluated over arrays of parameters at once (episodes and stability
levels, counts and deletions, points of a coupling); each of them first checks that its arrays
broadcast together, and refuses with one message that names the arguments and their shapes.
"""

import numpy as np

__all__ = ["check_broadcast"]


def check_broadcast(**arrays) -> tuple:
    """The broadcast shape of named arrays, or a ``ValueError`` naming them and their shapes.

    Parameters
    ----------
    **arrays : array_like
        The arrays to broadcast, by the argument names a caller's user knows them by (at least one);
        each is read through ``numpy.shape`` only, so nothing is copied or converted.

    Returns
    -------
    tuple of int
        ``numpy.broadcast_shapes`` of their shapes.

    Raises
    ------
    ValueError
        If no array is given, or if the shapes do not broadcast: ``"T and rho must broadcast together,
        got shapes T (2,), rho (3,)"`` (three or more names read ``"a, b and c"``).
    """
    if not arrays:
        raise ValueError("check_broadcast needs at least one named array")
    shapes = {name: np.shape(value) for name, value in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        names = list(shapes)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        got = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"{listed} must broadcast together, got shapes {got}") from None
