"""Showing that a call refuses its input (a plain module: no chapter exports it).

The chapters demonstrate every rule of validation by calling a function with bad input and printing
the error it raises; ``refused`` turns such a call into the text of its error and fails loudly if the
call accepts the input instead.
"""

__all__ = ["refused"]

from bandit_unlearning.checks import check_callable


def refused(call) -> str:
    """The error a call that must refuse its input raises, as text.

    Parameters
    ----------
    call : callable
        Called with no arguments; it must raise ``ValueError`` or ``TypeError``.

    Returns
    -------
    str
        ``"ValueError: <message>"`` (or ``"TypeError: <message>"``).  ``AssertionError`` if ``call()``
        returns normally (it accepted the bad input); any other exception propagates.
    """
    check_callable(call, "call")
    try:
        call()
    except (ValueError, TypeError) as err:
        return f"{type(err).__name__}: {err}"
    raise AssertionError("accepted bad input")
