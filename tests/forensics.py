"""Forensics helpers: what an attacker finds in the process and in pickles after a deletion.

Reusable by any test (``import forensics`` from a file in ``tests/``):

* ``package_state()`` -- every object reachable from the package's modules: module globals, class
  attributes of the package's classes, closures and defaults of its functions, the contents of
  ``functools`` caches (read through the garbage collector's referents, which is where CPython's
  ``lru_cache`` keeps its dictionary), weak dictionaries, and numpy generators with their states;
* ``reachable(*roots)`` -- the same walk from given objects (returned objects, unpickled copies);
* ``generators_in(objects)`` -- the numpy bit generators among the objects;
* ``sfc64_rewind(state)`` / ``keys_from_generators(...)`` -- SFC64 is invertible and its fourth word
  counts its steps: a bit generator seeded from a node key as ``node_noise`` seeds it, whatever it
  drew since, is run back to the key;
* ``key_candidates(objects)`` -- every 192-bit key an attacker could try: rewound SFC64 states and
  every run of three 64-bit words held in a uint64 array;
* ``recover_deleted_statistic(tree, t, x_t, keys)`` -- the attack itself: for a candidate key,
  regenerate its node noise and subtract it and the new clean value from a kept noisy value of a node
  over leaf ``t`` of the unlearned tree; True if that gives ``x_t`` back;
* ``pickle_walk(obj, secrets)`` -- pickle ``obj`` as a user would (no opt-in): either refused with a
  ``TypeError`` naming how to opt in, or its bytes searched for the given secret byte strings and its
  unpickled copy walked like any other object.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import importlib
import pickle
import pkgutil
import struct
import sys
import types
import weakref

import numpy as np

import bandit_unlearning
from bandit_unlearning.exact.tree import leaf_path, node_noise

MASK = (1 << 64) - 1
_INV9 = pow(9, -1, 1 << 64)  # SFC64's b <- c + (c << 3) = 9 c, inverted
MAX_REWIND = 1 << 20  # steps ``sfc64_rewind`` runs back (node noise takes 12 + ~d)


# --- the package's modules and what they hold -------------------------------------------------------
def package_modules() -> list:
    """Every module of ``bandit_unlearning`` (all imported; ``__main__`` left out)."""
    for info in pkgutil.walk_packages(bandit_unlearning.__path__, "bandit_unlearning."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            importlib.import_module(info.name)
    return [
        m
        for name, m in sorted(sys.modules.items())
        if (name == "bandit_unlearning" or name.startswith("bandit_unlearning.")) and m is not None
    ]


def _ours(obj) -> bool:
    """Defined in the package (a function, class or instance of one of its classes)."""
    mod = (
        getattr(obj, "__module__", None)
        if isinstance(obj, (type, types.FunctionType))
        else type(obj).__module__
    )
    return isinstance(mod, str) and mod.startswith("bandit_unlearning")


_PLAIN = (
    dict,
    list,
    tuple,
    set,
    frozenset,
    np.ndarray,
    np.generic,
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    np.random.BitGenerator,
    np.random.Generator,
    np.random.SeedSequence,
    weakref.WeakKeyDictionary,
    weakref.WeakValueDictionary,
    functools.partial,
)


def _cache_contents(func) -> list:
    """What a ``functools`` cache wrapper holds (its dictionary is among its gc referents)."""
    return [r for r in gc.get_referents(func) if isinstance(r, dict)]


def cached_functions() -> list:
    """``(module name, name, wrapper)`` for every ``functools`` cache at module or class level."""
    out = []
    for m in package_modules():
        for name, v in vars(m).items():
            if hasattr(v, "cache_info") and callable(v):
                out.append((m.__name__, name, v))
            if isinstance(v, type) and _ours(v):
                out += [
                    (m.__name__, f"{name}.{k}", w)
                    for k, w in vars(v).items()
                    if hasattr(w, "cache_info") and callable(w)
                ]
    return out


def reachable(*roots, enter_foreign: bool = True) -> list:
    """Every object reachable from ``roots`` (iterative, no recursion limit): containers, weak
    dictionaries, instance ``__dict__`` and ``__slots__``, dataclass fields, ``functools.partial``
    parts, closures and defaults of functions, cache contents, elements of object arrays, the bit
    generator of a ``Generator``.  Modules are not entered; classes only if defined in the package;
    with ``enter_foreign=False`` neither are instances of other libraries' classes (say scipy's
    distribution objects, which share numpy's legacy global generator -- not the package's state)."""
    seen, stack, out = set(), list(roots), []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, types.ModuleType):
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            if _ours(obj):
                out.append(obj)
                stack.extend(v for k, v in vars(obj).items() if not k.startswith("__"))
            continue
        if not enter_foreign and not isinstance(obj, _PLAIN) and not _ours(obj) and not callable(obj):
            continue
        out.append(obj)
        if isinstance(obj, (weakref.WeakKeyDictionary, weakref.WeakValueDictionary)):
            stack.extend(k for k in list(obj.keys()))
            stack.extend(v for v in list(obj.values()))
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
            continue
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend(obj.ravel().tolist())
            continue
        if isinstance(obj, (str, bytes, int, float, complex, bool, type(None), np.generic)):
            continue
        if isinstance(obj, np.random.Generator):
            stack.append(obj.bit_generator)
            continue
        if isinstance(obj, (np.random.BitGenerator, np.random.SeedSequence)):
            continue
        if isinstance(obj, functools.partial):
            stack.extend((obj.func, obj.args, obj.keywords))
            continue
        if hasattr(obj, "cache_info") and callable(obj):
            stack.extend(_cache_contents(obj))
            stack.append(getattr(obj, "__wrapped__", None))
            continue
        if isinstance(obj, types.MethodType):
            stack.extend((obj.__self__, obj.__func__))
            continue
        if isinstance(obj, types.FunctionType):
            if not _ours(obj):
                continue
            stack.extend(c.cell_contents for c in (obj.__closure__ or ()) if _has_contents(c))
            stack.extend((obj.__defaults__, obj.__kwdefaults__))
            continue
        if not enter_foreign and not _ours(obj):
            continue
        if dataclasses.is_dataclass(obj):
            stack.extend(getattr(obj, f.name, None) for f in dataclasses.fields(obj))
        if hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values())
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if isinstance(slot, str) and hasattr(obj, slot):
                    stack.append(getattr(obj, slot))
    return out


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def package_state() -> list:
    """Every object the package's modules keep between calls (see ``reachable``), the contents of
    every ``functools`` cache included."""
    roots = []
    for m in package_modules():
        roots += [v for k, v in vars(m).items() if not (k.startswith("__") and k.endswith("__"))]
    return reachable(*roots, enter_foreign=False)


def generators_in(objects) -> list:
    """The numpy bit generators among ``objects``."""
    return [o for o in objects if isinstance(o, np.random.BitGenerator)]


# --- SFC64 run backwards -----------------------------------------------------------------------------
def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK


def _unxorshift11(y: int) -> int:
    """The ``b`` with ``b ^ (b >> 11) == y``."""
    b = y
    for _ in range(6):  # 6 * 11 >= 64: the fixed point is reached
        b = y ^ (b >> 11)
    return b


def sfc64_step_back(a: int, b: int, c: int, w: int) -> tuple:
    """The SFC64 state one output before ``(a, b, c, w)``.  numpy's step:
    ``tmp = a + b + w; w += 1; a = b ^ (b >> 11); b = c + (c << 3); c = rotl(c, 24) + tmp``."""
    w0 = (w - 1) & MASK
    c0 = (b * _INV9) & MASK
    b0 = _unxorshift11(a)
    tmp = (c - _rotl(c0, 24)) & MASK
    a0 = (tmp - b0 - w0) & MASK
    return a0, b0, c0, w0


def sfc64_rewind(bits: np.random.SFC64):
    """The 192-bit seed ``(a, b, c)`` an SFC64 was started from as ``(a, b, c, 1)`` (how numpy seeds it,
    and how ``node_noise`` sets a key), run back over the outputs its counter says it produced; None
    if the counter is implausible."""
    a, b, c, w = (int(v) for v in bits.state["state"]["state"])
    if not 1 <= w <= MAX_REWIND:
        return None
    while w > 1:
        a, b, c, w = sfc64_step_back(a, b, c, w)
    return np.array([a, b, c], dtype=np.uint64)


def key_candidates(objects) -> list:
    """Every node key an attacker holding ``objects`` can try: each SFC64 among them run back to its
    seed, and every run of three consecutive 64-bit words in a uint64 array (a key table, or a
    ``(a, b, c, 1)`` SFC64 state kept as an array)."""
    out = []
    for o in objects:
        if isinstance(o, np.random.SFC64):
            k = sfc64_rewind(o)
            if k is not None:
                out.append(k)
        elif isinstance(o, np.ndarray) and o.dtype == np.uint64 and o.size >= 3:
            flat = o.ravel()
            out += [flat[i : i + 3].copy() for i in range(flat.size - 2)]
    return out


def recover_deleted_statistic(tree, t: int, x_t: np.ndarray, keys) -> bool:
    """The attack: for each candidate key, ``noisy(b) - node_noise(key) - clean(b)`` over every complete
    node ``b`` of the unlearned ``tree`` that still contains leaf ``t``; True if one equals the deleted
    statistic ``x_t`` (to 1e-9: the noisy value was rounded once when the noise was added)."""
    x_t = np.asarray(x_t, dtype=float)
    if not np.any(x_t):
        return False
    nodes = leaf_path(t, tree.n_leaves) if t <= tree.n_leaves else ()
    if not nodes:
        return False
    # every kept node at once (rows), the same arithmetic as node by node: (noisy - z) - clean
    noisy = np.array([tree.noisy(b) for b in nodes], dtype=float).reshape(len(nodes), -1)
    clean = np.array([tree.clean(b) for b in nodes], dtype=float).reshape(len(nodes), -1)
    x_t = x_t.reshape(1, -1)
    tried = set()
    for key in keys:
        key = np.asarray(key, dtype=np.uint64)
        if (k := key.tobytes()) in tried:  # the same key gives the same noise: tried once
            continue
        tried.add(k)
        z = node_noise(key, tree.d, tree.sigma).reshape(1, -1)
        if np.any(np.all(np.abs(noisy - z - clean - x_t) <= 1e-9, axis=1)):
            return True
    return False


def holds_vector(objects, target: np.ndarray, atol: float = 1e-12) -> bool:
    """Whether a float array among ``objects`` holds ``target`` (a nonzero vector) as itself or as a row."""
    target = np.asarray(target, dtype=float)
    if not np.any(target):
        return False
    for o in objects:
        if isinstance(o, np.ndarray) and o.dtype.kind == "f" and o.shape[-1:] == target.shape:
            rows = o.reshape(-1, target.size)
            if np.any(np.all(np.abs(rows - target) <= atol, axis=1)):
                return True
    return False


# --- pickles -----------------------------------------------------------------------------------------
def key_bytes(keys) -> list:
    """The byte strings a pickle holds a node key in (each 64-bit word, little- and big-endian)."""
    out = set()
    for k in keys:
        for word in np.asarray(k, dtype=np.uint64).ravel().tolist():
            out.update((struct.pack("<Q", word), struct.pack(">Q", word)))
    return sorted(out)


def float_bytes(values) -> list:
    """The 8-byte encodings a pickle may hold a float in (big-endian for Python floats, little-endian in
    numpy buffers)."""
    return [struct.pack(order, float(v)) for v in values for order in (">d", "<d")]


@dataclasses.dataclass
class PickleFinding:
    """What ``pickle_walk`` found for one object: ``refused`` (a TypeError naming the opt-in), else
    the pickle's ``size`` in bytes, the secret byte strings found in it (``hits``) and the unpickled
    copy's reachable objects (``objects``)."""

    refused: bool
    message: str = ""
    size: int = 0
    hits: int = 0
    objects: list = dataclasses.field(default_factory=list)


def pickle_walk(obj, secrets=()) -> PickleFinding:
    """Pickle ``obj`` with no opt-in, as any caller could.  A refusal must be a ``TypeError``; otherwise
    the bytes are searched for every byte string of ``secrets`` and the copy is walked."""
    try:
        blob = pickle.dumps(obj)
    except TypeError as e:
        return PickleFinding(True, str(e))
    hits = sum(1 for s in secrets if s in blob)
    return PickleFinding(False, "", len(blob), hits, reachable(pickle.loads(blob)))


# --- globals mutated at runtime ----------------------------------------------------------------------
def _digest(obj) -> tuple:
    """What one object holds, as comparable data (arrays by bytes, generators by state)."""
    if isinstance(obj, np.ndarray):
        return ("array", obj.dtype.str, obj.shape, obj.tobytes() if obj.dtype != object else len(obj))
    if isinstance(obj, np.random.BitGenerator):
        return ("bits", repr(obj.state))
    if isinstance(obj, (str, bytes, int, float, complex, bool, type(None), np.generic)):
        return ("value", repr(obj))
    if isinstance(
        obj, (dict, list, tuple, set, frozenset, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)
    ):
        return (type(obj).__name__, len(obj))
    return (type(obj).__name__,)


def global_fingerprints() -> dict:
    """``{"module.name": digest}`` of every module global of the package (and every attribute of its
    classes), each digest covering everything reachable from it: comparing two calls shows which
    globals a computation changed (a cache that grew, a generator that advanced, a dict written)."""
    out = {}
    for m in package_modules():
        for k, v in vars(m).items():
            if k.startswith("__") and k.endswith("__"):
                continue
            if isinstance(v, types.ModuleType) or (
                callable(v) and not _ours(v) and not hasattr(v, "cache_info")
            ):
                continue
            out[f"{m.__name__}.{k}"] = tuple(_digest(o) for o in reachable(v, enter_foreign=False))
    return out
