"""Argument checks shared by every module of the package (a plain module: no chapter exports it).

The rule every public function follows (DESIGN.md, "Errors" and "Validation first"):

* a wrong **type** raises ``TypeError``, a bad **value** raises ``ValueError``; the message names the
  argument and the rule it broke (``"n must be >= 1, got 0"``);
* a public function checks every argument *before* it draws from a generator, writes a file or
  changes an object, so a refused call changes nothing;
* a check never changes what it is given: it returns a new value (a float, an int, a new array) and
  never writes into, resizes or sets flags on the caller's arrays.

Randomness -- ``as_generator(rng, name="rng")`` is the one rule for every ``rng`` argument:

* a ``numpy.random.Generator`` is used as is (the caller's stream advances);
* ``None`` means a fresh generator seeded from OS entropy (``np.random.default_rng()``): the default
  for noise and node keys, which are secrets;
* an ``int >= 0`` (not a ``bool``) is an explicit, reproducible opt-in,
  ``np.random.default_rng(seed)``; such a seed is key material (whoever knows it can regenerate the
  noise);
* anything else raises ``TypeError`` naming the argument.

Integers: a scalar must be a Python or numpy integer (or a 0-d integer array); it is returned as a
Python ``int``, so ``np.int32`` or ``np.uint8`` sizes never overflow in later arithmetic (a caller that
keeps the argument rather than the returned value -- a dataclass field -- stores the returned value).
``bool`` is refused (``True`` is neither a count nor an index) and so are floats, even whole ones
(unless a function documents otherwise with ``whole_float=True``).  An integer *array* may hold whole
floats (``3.0``) but not booleans.

Real numbers: a scalar must be a Python ``int`` or ``float``, a numpy integer or floating scalar, or a
0-d array of one; it is returned as a Python ``float``.  Refused with ``TypeError``, everywhere:
``bool`` and ``numpy.bool_``, strings, complex numbers (even with a zero imaginary part: nothing is
dropped silently), ``None``, and ``fractions.Fraction`` and ``decimal.Decimal`` -- an exact number
would be rounded to a float without the caller asking, and numpy arrays of them have ``object`` dtype,
which the array checks refuse too, so the same rule holds for scalars and arrays (convert with
``float(x)`` first).  Arrays of real numbers refuse booleans (``check_real_array``; ``True`` is not a
reward) and every array check refuses a ``numpy.ma.MaskedArray`` (``TypeError``): numpy's conversion
would silently use the masked entries as if they were data.

Size limits: every argument that sizes an array or a loop (a number of users, episodes, samples,
runs...) is at most ``SIZE_LIMIT`` (``check_count``; 10**8 by default) and products of such arguments
that size one allocation are checked with ``check_size``; a larger value is refused (``ValueError``)
before anything is allocated or drawn.  The limit is a module constant read at call time: a user who
has the memory and the time sets ``bandit_unlearning.checks.SIZE_LIMIT`` higher.  Functions that
enumerate exactly refuse (``check_size``) a size above their own documented limit instead of running
out of memory after seconds of work.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

__all__ = [
    "as_generator",
    "check_int",
    "as_real",
    "check_real",
    "check_positive",
    "check_probability",
    "check_bool",
    "check_choice",
    "check_callable",
    "check_instance",
    "as_array",
    "as_real_array",
    "check_int_array",
    "check_real_array",
    "check_size",
    "check_count",
    "SIZE_LIMIT",
    "readonly",
]

_INT64_MAX = np.iinfo(np.int64).max

SIZE_LIMIT = 10**8
"""The largest value ``check_count`` accepts for an argument that sizes an array or a loop (and the
default limit of ``check_size``).  Read at call time: set ``bandit_unlearning.checks.SIZE_LIMIT``
higher to allow larger runs."""


def _describe(value) -> str:
    """``repr`` of a small value, else its type (messages stay short)."""
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """The generator to draw from: ``rng`` itself (a ``numpy.random.Generator``), a fresh one from OS
    entropy (``None``) or ``np.random.default_rng(seed)`` for an int ``seed >= 0`` (an explicit,
    reproducible opt-in).  Anything else: ``TypeError`` naming ``name``.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        A generator (used as is: its stream advances), ``None`` (fresh OS entropy) or a seed ``>= 0``.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        For any other type (``bool`` included).
    ValueError
        For a negative seed.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} as a seed must be an integer >= 0, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{name} must be a numpy.random.Generator, None (fresh OS entropy) or an int seed >= 0, "
        f"got {type(rng).__name__}"
    )


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"lie in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f"be {'>' if low_open else '>='} {low}"
    if high is not None:
        return f"be {'<' if high_open else '<='} {high}"
    return ""


def _rule(low, high, low_open: bool, high_open: bool, allow_inf: bool) -> str:
    """The rule a real value breaks, for messages: "lie in (0, 1)", "be finite and > 0", "be finite"."""
    if low is not None and high is not None:
        return _interval(low, high, low_open, high_open)
    finite = "be a number" if allow_inf else "be finite"
    rule = _interval(low, high, low_open, high_open)
    return f"{finite} and {rule[3:]}" if rule else finite


def _outside_scalar(v: float, low, high, low_open: bool, high_open: bool) -> bool:
    """Whether the number ``v`` lies outside the interval (plain comparisons: checks are on hot paths)."""
    if low is not None and (v <= low if low_open else v < low):
        return True
    return high is not None and (v >= high if high_open else v > high)


def _outside(value, low, high, low_open: bool, high_open: bool) -> bool:
    """Whether the array ``value`` has an entry outside the interval."""
    v = np.asarray(value)
    if low is not None and np.any(v <= low if low_open else v < low):
        return True
    return high is not None and bool(np.any(v >= high if high_open else v > high))


def check_int(
    value, name: str, low: int | None = None, high: int | None = None, *, whole_float: bool = False
) -> int:
    """An integer argument in ``[low, high]`` (``None``: no limit), returned as a Python int.

    ``TypeError`` unless ``value`` is a Python or numpy integer (``bool`` refused; a whole float such
    as ``3.0`` only with ``whole_float=True``); ``ValueError`` outside the range.

    Parameters
    ----------
    value : int or numpy.integer
        The argument (a 0-d integer array counts as its scalar).
    name : str
        The argument's name, used in error messages.
    low, high : int or None
        The inclusive limits; ``None``: no limit on that side.
    whole_float : bool
        Accept a whole float such as ``3.0`` too.

    Returns
    -------
    int
        ``value`` as a Python int.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and type(value) is np.ndarray:
        value = value[()]  # a 0-d array: its scalar
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if not (
            whole_float
            and type(value) in (float, np.float64, np.float32, np.float16)
            and math.isfinite(value)
            and float(value).is_integer()
        ):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if _outside_scalar(value, low, high, False, False):
        raise ValueError(f"{name} must {_interval(low, high, False, False)}, got {value}")
    return value


def _is_real_scalar(value) -> bool:
    """Python int or float (not bool), numpy integer or floating scalar, or a plain 0-d array of one.
    ``Fraction``, ``Decimal``, complex, strings and masked arrays are not (module docstring)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return type(value) is np.ndarray and value.ndim == 0 and value.dtype.kind in "iuf"
    return isinstance(value, (int, float, np.integer, np.floating))


def _not_real(value, name: str) -> TypeError:
    """The ``TypeError`` for a value that is not a real number (with a hint for the near misses)."""
    hint = ""
    if isinstance(value, (Fraction, Decimal)):
        hint = " (Fraction and Decimal are refused: convert with float() first)"
    elif isinstance(value, (complex, np.complexfloating)):
        hint = " (complex numbers are refused, not truncated)"
    elif isinstance(value, np.ma.MaskedArray):
        hint = " (masked arrays are refused: their mask would be ignored)"
    return TypeError(f"{name} must be a real number, got {type(value).__name__}{hint}")


def as_real(value, name: str) -> float:
    """``float(value)`` for a real number (nan and infinities included; the caller checks the range);
    ``TypeError`` for anything else (``bool``, strings, arrays of more than one number, None...).

    Parameters
    ----------
    value : int, float, numpy scalar or 0-d array
        The argument.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    float
    """
    if not _is_real_scalar(value):
        raise _not_real(value, name)
    return float(value)


def check_real(
    value,
    name: str,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """A real number in the given interval, returned as a float.

    ``TypeError`` unless ``value`` is a real number (``bool`` and strings refused); ``ValueError`` for
    nan, for an infinity (unless ``allow_inf``) and outside the interval.

    Parameters
    ----------
    value : int, float, numpy scalar or 0-d array
        The argument.
    name : str
        The argument's name, used in error messages.
    low, high : float or None
        The limits of the interval; ``None``: unbounded on that side.
    low_open, high_open : bool
        Exclude that end of the interval.
    allow_inf : bool
        Accept ``inf`` and ``-inf`` (when the interval admits them).

    Returns
    -------
    float
    """
    if not _is_real_scalar(value):
        raise _not_real(value, name)
    v = float(value)
    if (
        math.isnan(v)
        or (math.isinf(v) and not allow_inf)
        or _outside_scalar(v, low, high, low_open, high_open)
    ):
        raise ValueError(f"{name} must {_rule(low, high, low_open, high_open, allow_inf)}, got {value!r}")
    return v


def check_positive(value, name: str) -> float:
    """A finite real number ``> 0``.

    Parameters
    ----------
    value : real number
        The argument.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        Unless ``value`` is a real number.
    ValueError
        For nan, an infinity, 0 or a negative number.
    """
    return check_real(value, name, 0, low_open=True)


def check_probability(value, name: str, *, low_open: bool = True, high_open: bool = True) -> float:
    """A number in ``(0, 1)`` (``low_open``/``high_open`` False to include an end).

    Parameters
    ----------
    value : real number
        The argument.
    name : str
        The argument's name, used in error messages.
    low_open, high_open : bool
        Exclude 0 (``low_open``) or 1 (``high_open``); both excluded by default.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        Unless ``value`` is a real number.
    ValueError
        Outside the interval (nan included).
    """
    return check_real(value, name, 0, 1, low_open=low_open, high_open=high_open)


def check_bool(value, name: str) -> bool:
    """``True`` or ``False`` (numpy booleans too); anything else is a ``TypeError``.

    Parameters
    ----------
    value : bool or numpy.bool_
        The argument.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    bool
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_choice(value, name: str, allowed) -> str:
    """One of the strings ``allowed``: ``TypeError`` for a non-string, ``ValueError`` for another string.

    Parameters
    ----------
    value : str
        The argument.
    name : str
        The argument's name, used in error messages.
    allowed : iterable of str
        The accepted strings (named in the error message).

    Returns
    -------
    str
        ``value`` itself.
    """
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {allowed}, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_callable(value, name: str):
    """``value`` itself if it is callable, else ``TypeError`` naming ``name``.

    Parameters
    ----------
    value : object
        The argument.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    callable
        ``value`` itself.
    """
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_instance(value, cls, name: str):
    """``value`` itself if it is an instance of ``cls`` (a class or a tuple of classes), else ``TypeError``.

    Parameters
    ----------
    value : object
        The argument.
    cls : type or tuple of type
        The accepted class(es), named in the error message.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    object
        ``value`` itself.
    """
    if not isinstance(value, cls):
        names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        if names[:2].isupper():  # an acronym is read letter by letter
            article = "an" if names[0] in "AEFHILMNORSX" else "a"
        else:
            article = "an" if names[0].lower() in "aeiou" else "a"
        raise TypeError(f"{name} must be {article} {names}, got {type(value).__name__}")
    return value


def as_array(x, name: str) -> np.ndarray:
    """``np.asarray(x)`` (no copy of an array; nothing is written), with numpy's own errors for
    ragged or non-numeric input turned into a ``TypeError`` naming the argument.  A boolean *array* is
    returned as is (masks are arrays of booleans; ``check_real_array``, ``check_int_array`` and
    ``as_real_array`` refuse them), but a lone ``True`` or ``False`` is refused (``TypeError``): it is
    never a number; and a masked array is refused (``TypeError``): numpy would drop its mask.

    Parameters
    ----------
    x : array_like
        Numbers (booleans only inside an array).
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    numpy.ndarray
        ``np.asarray(x)``: ``x`` itself when it already is an array (the caller must not write into it).
    """
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be an integer, a real number or an array of numbers, not booleans (got {x!r})"
        )
    return _as_array(x, name)


def _as_array(x, name: str) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} must not be a masked array (its mask would be ignored); pass "
            f"{name}.compressed() or {name}.filled(value)"
        )
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {_describe(x)}") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got {_describe(x)} (dtype {a.dtype})")
    return a


def as_real_array(x, name: str) -> np.ndarray:
    """A new float array of the numbers in ``x`` (``as_array(x, name).astype(float)``), booleans refused
    (``TypeError``: ``True`` is not a reward, a mean or a privacy level).  Ranges are the caller's.

    Parameters
    ----------
    x : array_like
        Real numbers, any shape.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    numpy.ndarray
        A new float array of the shape of ``x``.
    """
    a = _as_array(x, name)
    if a.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans")
    return a.astype(float)


def _check_shape(a: np.ndarray, name: str, ndim, shape, nonempty: bool):
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
    if nonempty and a.size == 0:
        raise ValueError(f"{name} must not be empty")


def check_int_array(
    x,
    name: str,
    low: int | None = None,
    high: int | None = None,
    *,
    ndim: int | None = None,
    shape=None,
    nonempty: bool = False,
) -> np.ndarray:
    """A new int64 array of whole numbers in ``[low, high]``.

    ``TypeError`` for booleans or non-numbers; ``ValueError`` for non-whole or non-finite floats, a
    wrong ``ndim``/``shape``, an empty array (``nonempty``) or an entry outside the range.

    Parameters
    ----------
    x : array_like
        Whole numbers (integers, or floats with no fractional part).
    name : str
        The argument's name, used in error messages.
    low, high : int or None
        The inclusive limits of every entry; ``None``: no limit on that side.
    ndim : int or None
        The number of dimensions required (``None``: any).
    shape : tuple of int or None
        The shape required (``None``: any).
    nonempty : bool
        Refuse an empty array.

    Returns
    -------
    numpy.ndarray
        A new int64 array of the shape of ``x``.
    """
    a = _as_array(x, name)
    if a.dtype.kind == "b":
        raise TypeError(f"{name} must hold integers, not booleans")
    if a.size and a.dtype.kind == "f" and not (np.all(np.isfinite(a)) and np.all(np.mod(a, 1) == 0)):
        raise ValueError(f"{name} must hold integers (whole numbers), got {_describe(x)}")
    if a.size and a.dtype.kind in "uf" and (a.max() > _INT64_MAX or a.min() < -_INT64_MAX):
        raise ValueError(f"{name} holds integers too large for int64")
    _check_shape(a, name, ndim, shape, nonempty)
    a = a.astype(np.int64)
    if a.size and _outside(a, low, high, False, False):
        bad = np.zeros(a.shape, dtype=bool)
        if low is not None:
            bad |= a < low
        if high is not None:
            bad |= a > high
        raise ValueError(f"{name} must {_interval(low, high, False, False)}, got {int(a[bad][0])}")
    return a


def check_real_array(
    x,
    name: str,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
    ndim: int | None = None,
    shape=None,
    nonempty: bool = False,
) -> np.ndarray:
    """A new float array with finite entries (infinities only with ``allow_inf``; never nan) in the
    interval.  ``TypeError`` for non-numbers; ``ValueError`` for the other rules.

    Parameters
    ----------
    x : array_like
        Real numbers (booleans refused).
    name : str
        The argument's name, used in error messages.
    low, high : float or None
        The limits of every entry; ``None``: unbounded on that side.
    low_open, high_open : bool
        Exclude that end of the interval.
    allow_inf : bool
        Accept infinite entries.
    ndim : int or None
        The number of dimensions required (``None``: any).
    shape : tuple of int or None
        The shape required (``None``: any).
    nonempty : bool
        Refuse an empty array.

    Returns
    -------
    numpy.ndarray
        A new float array of the shape of ``x``.
    """
    a = _as_array(x, name)
    if a.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans")
    _check_shape(a, name, ndim, shape, nonempty)
    a = a.astype(float)
    if np.any(np.isnan(a)) or (not allow_inf and not np.all(np.isfinite(a))):
        raise ValueError(f"{name} must be {'a number' if allow_inf else 'finite'} (every entry)")
    if a.size and _outside(a, low, high, low_open, high_open):
        raise ValueError(f"{name} must {_interval(low, high, low_open, high_open)} (every entry)")
    return a


def check_size(size: int, limit: int | None, what: str) -> int:
    """Refuse (``ValueError``) an exact enumeration (or an allocation) of ``size`` items when it exceeds
    ``limit`` (``None``: ``SIZE_LIMIT``).

    Parameters
    ----------
    size : int
        The number of items the caller is about to enumerate or allocate.
    limit : int or None
        The caller's own limit; ``None``: ``SIZE_LIMIT`` read at call time.
    what : str
        What is being enumerated, for the error message.

    Returns
    -------
    int
        ``size`` itself.
    """
    if limit is None:
        limit = SIZE_LIMIT
    if size > limit:
        raise ValueError(f"{what}: {size} items to enumerate exceed the limit of {limit}")
    return size


def check_count(value, name: str, low: int | None = 0, high: int | None = None) -> int:
    """An integer that sizes an array or a loop: ``check_int(value, name, low, high)`` and at most
    ``SIZE_LIMIT`` (read at call time), refused with a ``ValueError`` that says how to raise the limit.

    Parameters
    ----------
    value : int
        The argument.
    name : str
        The argument's name, used in error messages.
    low, high : int or None
        The inclusive limits (``low`` is 0 by default); ``high`` is capped by ``SIZE_LIMIT``.

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    TypeError
        Unless ``value`` is an integer (``bool`` refused).
    ValueError
        Outside ``[low, high]`` or above ``SIZE_LIMIT``.
    """
    value = check_int(value, name, low, high)
    if value > SIZE_LIMIT:
        raise ValueError(
            f"{name} must be <= {SIZE_LIMIT} (bandit_unlearning.checks.SIZE_LIMIT: sizes an array or "
            f"a loop; raise the limit to allow more), got {value}"
        )
    return value


def readonly(a: np.ndarray) -> np.ndarray:
    """Unchecked: ``a`` itself, made read-only (``a.setflags(write=False)``), for an array its caller has just built
    and is about to store in a frozen result.  Not a check (it sets a flag on what it is given), so never
    call it on an array a caller passed in.

    Parameters
    ----------
    a : numpy.ndarray
        A new array owned by the caller.

    Returns
    -------
    numpy.ndarray
        ``a``, no longer writeable.
    """
    a.setflags(write=False)
    return a
