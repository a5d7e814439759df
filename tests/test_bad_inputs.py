"""Every bad input to the public API is refused clearly, with nothing changed.

One table of cases ``(callable, args, kwargs, expected exception type, regex on the message)``.  For
each case the test checks the exception type (``TypeError`` for a wrong type, ``ValueError`` for a bad
value), that the message names the argument and the rule (the regex), and that nothing changed: every
input (arguments, the object of a bound method) is snapshotted before the call -- arrays by value,
dtype and writeable flag, generators by ``bit_generator.state``, objects by their attributes -- and
compared after it.  A second test enumerates every public callable of the package (each name in the
``__all__`` of every module, and the public methods of public classes that take arguments) and
fails if one has no case.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Callable

import numpy as np
import pytest

import bandit_unlearning

# ----------------------------------------------------------------------------------- the harness


@dataclass
class Case:
    func: Callable
    args: tuple
    kwargs: dict
    exc: type
    match: str
    id: str = ""


CASES: list[Case] = []


def V(match: str, func: Callable, *args, **kwargs):
    """A call that must raise ValueError whose message matches ``match``."""
    CASES.append(Case(func, args, kwargs, ValueError, match))


def T(match: str, func: Callable, *args, **kwargs):
    """A call that must raise TypeError whose message matches ``match``."""
    CASES.append(Case(func, args, kwargs, TypeError, match))


def snapshot(obj, _seen=None):
    """A comparable deep image of ``obj``: arrays by dtype, shape, bytes and writeable flag,
    generators by state, containers and objects recursively (identity for functions and modules)."""
    if _seen is None:
        _seen = {}
    if isinstance(obj, (type(None), bool, int, float, complex, str, bytes, np.generic)):
        return ("val", type(obj).__name__, repr(obj))
    if isinstance(obj, PurePath):  # by value (a Path caches its string lazily)
        return ("path", str(obj))
    key = id(obj)
    if key in _seen:
        return ("seen", _seen[key])
    _seen[key] = len(_seen)
    if isinstance(obj, np.ndarray):
        return ("nd", obj.dtype.str, obj.shape, obj.tobytes(), obj.flags.writeable)
    if isinstance(obj, np.random.Generator):
        return ("rng", repr(obj.bit_generator.state))
    if isinstance(obj, np.random.BitGenerator):
        return ("bitgen", repr(obj.state))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(snapshot(x, _seen) for x in obj))
    if isinstance(obj, (set, frozenset)):
        return (type(obj).__name__, tuple(sorted(repr(x) for x in obj)))
    if isinstance(obj, dict):
        return ("dict", tuple((repr(k), snapshot(v, _seen)) for k, v in obj.items()))
    if (
        isinstance(obj, type)
        or inspect.isroutine(obj)
        or inspect.ismodule(obj)
        or callable(obj)
        and not hasattr(obj, "__dict__")
    ):
        return ("id", id(obj))
    state = {}
    if hasattr(obj, "__dict__"):
        state.update(vars(obj))
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
    if not state:
        return ("repr", type(obj).__name__, repr(obj))
    return (type(obj).__name__, tuple((k, snapshot(v, _seen)) for k, v in sorted(state.items())))


def _inputs(case: Case):
    return (getattr(case.func, "__self__", None), case.args, case.kwargs)


def _label(case: Case) -> str:
    name = getattr(case.func, "__qualname__", None) or type(case.func).__qualname__ + ".__call__"
    return f"{name}-{case.exc.__name__}-{case.match[:40]}"


def test_table_is_not_empty():
    assert len(CASES) > 400


def run_case(case: Case):
    before = snapshot(_inputs(case))
    with pytest.raises(case.exc) as info:
        case.func(*case.args, **case.kwargs)
    assert type(info.value) is case.exc, f"{type(info.value).__name__}: {info.value}"
    assert re.search(case.match, str(info.value)), (
        f"message {str(info.value)!r} does not match {case.match!r}"
    )
    assert snapshot(_inputs(case)) == before, "a refused call changed its inputs or advanced a generator"


# ------------------------------------------------------------------------------- the enumeration


from bandit_unlearning.exact import accel as _accel  # noqa: E402


def _modules():
    out = []
    for info in pkgutil.walk_packages(bandit_unlearning.__path__, "bandit_unlearning."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        if info.name == "bandit_unlearning.exact.accel_kernels" and not _accel.available():
            continue  # the optional compiled kernels: importable only with numba
        out.append(importlib.import_module(info.name))
    return out


def _takes_arguments(member, static: bool) -> bool:
    try:
        params = list(inspect.signature(member).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover
        return True
    return len(params) > (0 if static else 1)


def public_targets() -> dict:
    """``{target: "module.name"}`` for every public callable: functions and classes by identity,
    public methods taking arguments as ``(defining class, method name)``."""
    targets = {}
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not callable(obj) or (
                not inspect.isclass(obj)
                and not inspect.isroutine(obj)
                and not callable(type(obj).__dict__.get("__call__"))
            ):
                continue
            if not inspect.isclass(obj) and not inspect.isroutine(obj):
                continue  # instances (constants) are not API entry points
            targets.setdefault(obj, f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__call__":
                        continue
                    static = isinstance(member, staticmethod)
                    func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    if inspect.isfunction(func) and _takes_arguments(func, static):
                        # a staticmethod is its function: a call through the class or an object reaches
                        # the function itself, so a case on either covers it
                        targets.setdefault(
                            func if static else (obj, attr), f"{module.__name__}.{name}.{attr}"
                        )
    return targets


def case_target(func):
    """What a case covers: a function or class itself, or ``(defining class, name)`` for a bound
    method or a callable instance."""
    owner = getattr(func, "__self__", None)
    if owner is not None and not inspect.ismodule(owner):
        cls = owner if inspect.isclass(owner) else type(owner)
        name = func.__name__
        for klass in cls.__mro__:
            if name in vars(klass):
                return (klass, name)
        return (cls, name)  # pragma: no cover
    if not inspect.isclass(func) and not inspect.isroutine(func):
        for klass in type(func).__mro__:
            if "__call__" in vars(klass):
                return (klass, "__call__")
    return func


# Public callables that take no user input at all (nothing to refuse), by "module.name".  Keep this short
# and commented: every public callable that takes arguments has at least one case.
EXEMPT: set = {
    "bandit_unlearning.experiments.guarantees.matrix_settings",  # takes no argument: the fixed grid of settings
    "bandit_unlearning.secrecy.allow_secrets",  # takes no argument: the opt-in context for pickling key material
    "bandit_unlearning.secrecy.secrets_allowed",  # takes no argument: whether that context is active
    "bandit_unlearning.protocol.implementations",  # takes no argument: the registered (state, request) pairs
    "bandit_unlearning.kernel.BlankSeed",  # takes no argument: a seed sequence that holds nothing
    "bandit_unlearning.exact.accel.available",  # takes no argument: whether numba is installed
    "bandit_unlearning.exact.accel.enabled",  # takes no argument: whether the kernels are on
    "bandit_unlearning.exact.accel.kernels",  # takes no argument: the kernel module or None
}


# Public callables of the unchecked hot path (DESIGN.md, "Validate at the boundary, not in the loop"):
# they check nothing by contract, their callers validate first.  Each docstring says so in its first
# word, "Unchecked", which the test after the next holds them to.
UNCHECKED: set = {
    "bandit_unlearning.kernel.BlankSeed.generate_state",
    "bandit_unlearning.kernel.splitmix64_uniform",
    "bandit_unlearning.kernel.sparse_tables",
    "bandit_unlearning.kernel.initial_state",
    "bandit_unlearning.kernel.user_step",
    "bandit_unlearning.kernel.rollout_lists",
    "bandit_unlearning.checks.readonly",
    "bandit_unlearning.exact.learner.run_steps",
    "bandit_unlearning.rl.ucbvi.paper_bonus_unchecked",
    "bandit_unlearning.rl.bernstein.run_planned",
    "bandit_unlearning.experiments.protocol.deletion_starts_unchecked",
    "bandit_unlearning.experiments.protocol.run_sums_unchecked",
    "bandit_unlearning.mab.unlearn.batch_scores_unchecked",
    "bandit_unlearning.mab.unlearn.unlearn_batch_unchecked",
}
if _accel.available():  # the optional compiled kernels (exact.accel_kernels): the trees check first
    UNCHECKED |= {
        f"bandit_unlearning.exact.accel_kernels.{name}"
        for name in (
            "all_finite",
            "add_noise",
            "dense_append",
            "dense_prefix",
            "light_append",
            "light_append_dense",
            "linucb_changed_grams",
            "linucb_play",
            "node_keys",
            "noise",
        )
    }


def test_every_public_callable_has_a_case():
    covered = {case_target(c.func) for c in CASES}
    missing = sorted(
        name
        for target, name in public_targets().items()
        if target not in covered and name not in EXEMPT | UNCHECKED
    )
    assert not missing, f"{len(missing)} public callables without a bad-input case:\n" + "\n".join(missing)


def test_unchecked_callables_say_so():
    """Every ``UNCHECKED`` entry exists, is public, and its docstring starts with "Unchecked"."""
    targets = {name: target for target, name in public_targets().items()}
    assert UNCHECKED <= set(targets), f"not public callables: {sorted(UNCHECKED - set(targets))}"
    for name in sorted(UNCHECKED):
        target = targets[name]
        func = getattr(*target) if isinstance(target, tuple) else target
        assert (func.__doc__ or "").lstrip().startswith("Unchecked"), (
            f"{name}: docstring must start with 'Unchecked'"
        )


# ================================================================================== the table
# Shared objects the cases pass in (built once; a case that changed one would fail its own check).
from bandit_unlearning import checks  # noqa: E402
from bandit_unlearning.testing import montecarlo as mc, refusals  # noqa: E402
from bandit_unlearning.experiments import lemma31  # noqa: E402
from bandit_unlearning.mab import data, lcb  # noqa: E402

RNG = np.random.default_rng(12345)
NAN, INF = float("nan"), float("inf")
MEANS = np.array([0.6, 0.5, 0.4])
FROZEN = np.array([0.6, 0.5, 0.4])
FROZEN.setflags(write=False)
DATASET = data.fixed_sample_dataset(MEANS, [4, 3, 3], np.random.default_rng(0))
STATE = lcb.fit_lcb(DATASET)

# --- bandit_unlearning.checks
T("rng must be a numpy.random.Generator", checks.as_generator, "seed")
T("call must be callable", refusals.refused, "not a call")
T("rng must be a numpy.random.Generator", checks.as_generator, True)
T("gen must be", checks.as_generator, 1.5, name="gen")
V("rng as a seed must be an integer >= 0", checks.as_generator, -1)
T("n must be an integer", checks.check_int, True, "n")
T("n must be an integer", checks.check_int, 2.0, "n")
V(r"n must be >= 1, got 0", checks.check_int, 0, "n", 1)
V(r"n must lie in \[0, 3\]", checks.check_int, 4, "n", 0, 3)
T("x must be a real number", checks.as_real, "0.5", "x")
T("x must be a real number", checks.as_real, np.zeros(2), "x")
T("x must be a real number", checks.check_real, "0.5", "x")
T("x must be a real number", checks.check_real, True, "x")
V("x must be finite", checks.check_real, NAN, "x")
V(r"x must lie in \(0, 1\)", checks.check_real, 1.0, "x", 0, 1, low_open=True, high_open=True)
V("x must be finite and > 0", checks.check_positive, 0.0, "x")
T("x must be a real number", checks.check_positive, None, "x")
V(r"p must lie in \(0, 1\)", checks.check_probability, 0.0, "p")
T("p must be a real number", checks.check_probability, [0.5], "p")
T("flag must be True or False", checks.check_bool, 1, "flag")
V("mode must be one of", checks.check_choice, "fast", "mode", ("slow",))
T("mode must be one of", checks.check_choice, 3, "mode", ("slow",))
T("f must be callable", checks.check_callable, 3, "f")
T("x must be a dict", checks.check_instance, [], dict, "x")
T("x must be an array of numbers", checks.as_array, [[1], [1, 2]], "x")
T("x must be an array of numbers", checks.as_array, ["a"], "x")
T("idx must hold integers, not booleans", checks.check_int_array, [True], "idx")
V("idx must hold integers \\(whole numbers\\)", checks.check_int_array, [1.7], "idx")
V("idx must be >= 0", checks.check_int_array, [1, -1], "idx", 0)
V(r"idx must have shape \(2,\)", checks.check_int_array, [1], "idx", shape=(2,))
V("x must be finite", checks.check_real_array, [1.0, NAN], "x")
V(r"x must lie in \[0, 1\]", checks.check_real_array, FROZEN + 1, "x", 0, 1)
T("x must be an array of numbers", checks.check_real_array, {"a": 1}, "x")
V("enumeration: 11 items to enumerate exceed the limit of 10", checks.check_size, 11, 10, "enumeration")

# --- bandit_unlearning.testing.montecarlo
T("n_samples must be an integer", mc.hoeffding_margin, 10.5, 1.0, 0.1)
V("n_samples must be >= 1", mc.hoeffding_margin, 0, 1.0, 0.1)
V("width must be finite and >= 0", mc.hoeffding_margin, 10, -1.0, 0.1)
V(r"fail_prob must lie in \(0, 1\)", mc.hoeffding_margin, 10, 1.0, 1.0)
T("fail_prob must be a real number", mc.hoeffding_margin, 10, 1.0, "0.1")
T("values must be an array of numbers", mc.mean_and_stderr, ["a", "b"])
V("values must hold at least one value", mc.mean_and_stderr, [])
V("axis must lie in", mc.mean_and_stderr, FROZEN, 1)
T("axis must be an integer", mc.mean_and_stderr, FROZEN, 0.0)

# --- bandit_unlearning.mab.data
T("means must be an array of numbers", data.check_means, ["a"])
V("means must lie in", data.check_means, [0.5, 1.5])
V("means must be finite", data.check_means, [0.5, NAN])
V("means must be a non-empty 1-D", data.check_means, [])
V("behavior must be a probability distribution", data.check_distribution, [0.5, 0.6], 2)
V(r"behavior must have shape \(3,\)", data.check_distribution, [0.5, 0.5], 3)
T("n_arms must be an integer", data.check_distribution, [0.5, 0.5], 2.0)
T("behavior must be an array of numbers", data.check_distribution, ["a", "b"], 2)
T("n_arms must be an integer", data.OfflineDataset, [0], [1.0], 2.0)
T("n_arms must be an integer", data.OfflineDataset, [0], [1.0], True)
V("n_arms must be >= 1", data.OfflineDataset, [], [], 0)
T("arms must hold integers, not booleans", data.OfflineDataset, [True, False], [1.0, 0.0], 2)
V("arms must hold integers \\(whole numbers\\)", data.OfflineDataset, [0.5], [1.0], 2)
V(r"arm 5 is outside \[0, 2\)", data.OfflineDataset, [0, 5], [1.0, 0.0], 2)
V("rewards must be finite and lie in", data.OfflineDataset, [0, 1], [0.5, 1.2], 2)
V("rewards must be finite and lie in", data.OfflineDataset, [0, 1], [0.5, NAN], 2)
T("rewards must be an array of numbers", data.OfflineDataset, [0, 1], ["a", "b"], 2)
V("the same length", data.OfflineDataset, [0, 1, 1], [0.5, 0.5], 2)
T("indices must hold integers, not booleans", DATASET.without, [True])
V("indices must hold integers \\(whole numbers\\)", DATASET.without, [1.7])
V(r"indices must lie in \[0, 10\)", DATASET.without, [10])
V("indices must be distinct", DATASET.without, [1, 1])
T("indices must be an array of numbers", DATASET.without, ["1"])
V("arm_means must lie in", data.bernoulli_rewards, [0.5, 1.5], RNG)
T("rng must be a numpy.random.Generator", data.bernoulli_rewards, [0.5], "rng")
V("counts must be a 1-D array of non-negative integers", data.round_robin_arms, [2, -1])
T("counts must hold integers, not booleans", data.round_robin_arms, [True, False])
V("counts must hold integers \\(whole numbers\\)", data.round_robin_arms, [1.5])
V(r"counts must have shape \(3,\)", data.fixed_sample_dataset, MEANS, [1, 2], RNG)
V("counts must hold integers \\(whole numbers\\)", data.fixed_sample_dataset, MEANS, [1, 2, 2.5], RNG)
T("rng must be a numpy.random.Generator", data.fixed_sample_dataset, MEANS, [1, 2, 2], "rng")
T("sample_rewards must be callable", data.fixed_sample_dataset, MEANS, [1, 2, 2], RNG, "bernoulli")
V("means must lie in", data.fixed_sample_dataset, [0.5, 2.0], [1, 1], RNG)
T("n must be an integer", data.distribution_dataset, MEANS, [0.2, 0.3, 0.5], 10.0, RNG)
V("n must be >= 0", data.distribution_dataset, MEANS, [0.2, 0.3, 0.5], -1, RNG)
V("behavior must be a probability distribution", data.distribution_dataset, MEANS, [0.2, 0.3, 0.6], 10, RNG)
T("rng must be a numpy.random.Generator", data.distribution_dataset, MEANS, [0.2, 0.3, 0.5], 10, [1])
T("sample_rewards must be callable", data.distribution_dataset, MEANS, [0.2, 0.3, 0.5], 10, RNG, None)
V("n_arms must be >= 2", data.concentrability_behavior, 1, 2.0)
T("n_arms must be an integer", data.concentrability_behavior, 3.0, 2.0)
V(r"c_star \(C\*\) must be finite and > 1", data.concentrability_behavior, 3, 1.0)
T(r"c_star \(C\*\) must be a real number", data.concentrability_behavior, 3, "2")
T("best_arm must be an integer", data.concentrability_behavior, 3, 2.0, 0.5)
V(r"best_arm must lie in \[0, 2\]", data.concentrability_behavior, 3, 2.0, 3)
V("counts must be", data.sample_statistics_fixed, MEANS, [1, -2, 3], RNG)
V("counts must hold integers \\(whole numbers\\)", data.sample_statistics_fixed, MEANS, [1, 2.5, 3], RNG)
T("size must be an integer", data.sample_statistics_fixed, MEANS, [1, 2, 3], RNG, 2.0)
V("size must be >= 0", data.sample_statistics_fixed, MEANS, [1, 2, 3], RNG, -1)
T("rng must be a numpy.random.Generator", data.sample_statistics_fixed, MEANS, [1, 2, 3], 0.5)
V("n must be >= 0", data.sample_statistics_distribution, MEANS, [0.2, 0.3, 0.5], -1, RNG)
T("n must be an integer", data.sample_statistics_distribution, MEANS, [0.2, 0.3, 0.5], 2.5, RNG)
T("size must be an integer", data.sample_statistics_distribution, MEANS, [0.2, 0.3, 0.5], 5, RNG, None)
T("rng must be a numpy.random.Generator", data.sample_statistics_distribution, MEANS, [0.2, 0.3, 0.5], 5, "x")

# --- bandit_unlearning.mab.lcb
V(r"tau must lie in \(0, 1\)", lcb.check_tau, 1.0)
V(r"tau must lie in \(0, 1\)", lcb.check_tau, NAN)
T("tau must be a real number", lcb.check_tau, "0.5")
T("tau must be a real number", lcb.check_tau, True)
V("counts must be >= 0", lcb.lcb_scores, [-1, 2], [0.0, 1.0], 0.1)
V("counts must hold integers \\(whole numbers\\)", lcb.lcb_scores, [1.5, 2], [0.0, 1.0], 0.1)
V("reward_sums must be finite", lcb.lcb_scores, [1, 2], [NAN, 1.0], 0.1)
V("reward_sums must be finite", lcb.lcb_scores, [1, 2], [INF, 1.0], 0.1)
V("the same shape", lcb.lcb_scores, [1, 2], [1.0], 0.1)
V(r"tau must lie in \(0, 1\)", lcb.lcb_scores, [1, 2], [1.0, 1.0], 2.0)
T("counts must be an array of numbers", lcb.lcb_scores, ["a"], [1.0], 0.1)
V("counts must sum to at most 2\\*\\*62", lcb.LCBState, [2**62, 2**62], [0.0, 0.0], 0.1)
T("counts must hold integers, not booleans", lcb.LCBState, [True, True], [0.0, 0.0], 0.1)
V("counts must hold integers \\(whole numbers\\)", lcb.LCBState, [1.5, 2], [0.0, 0.0], 0.1)
V("counts must be non-negative", lcb.LCBState, [-1, 2], [0.0, 0.0], 0.1)
V(r"reward_sums must lie in \[0, counts\]", lcb.LCBState, [1, 2], [3.0, 0.0], 0.1)
V(r"reward_sums must lie in \[0, counts\]", lcb.LCBState, [1, 2], [NAN, 0.0], 0.1)
V("1-D of equal length", lcb.LCBState, [1, 2], [0.0], 0.1)
V(r"tau must lie in \(0, 1\)", lcb.LCBState, [1, 2], [0.0, 0.0], 0.0)
T("tau must be a real number", lcb.LCBState, [1, 2], [0.0, 0.0], None)
T("dataset must be an OfflineDataset", lcb.fit_lcb, STATE)
V("tau defaults to 1/N", lcb.fit_lcb, data.OfflineDataset([0], [1.0], 2))
V(r"tau must lie in \(0, 1\)", lcb.fit_lcb, DATASET, 1.5)
T("tau must be a real number", lcb.fit_lcb, DATASET, "0.1")
V("n_star must be finite and > 0", lcb.lemma31_bound_fixed, 0, 3, 0.1)
T("n_arms must be an integer", lcb.lemma31_bound_fixed, 10, 3.0, 0.1)
V(r"tau must lie in \(0, 1\)", lcb.lemma31_bound_fixed, 10, 3, 0.0)
V("n must be finite and > 0", lcb.lemma31_bound_distribution, 0, 2.0, 3, 0.1)
V(r"c_star \(C\*\) must be finite and >= 1", lcb.lemma31_bound_distribution, 10, 0.5, 3, 0.1)
V("n_arms must be >= 1", lcb.lemma31_bound_distribution, 10, 2.0, 0, 0.1)
T("n must be a real number", lcb.lemma31_bound_distribution, "10", 2.0, 3, 0.1)

# --- bandit_unlearning.experiments.lemma31
V("ns must be >= 5", lemma31.lemma31_curve, [250, 4], RNG, reps=10)
V("ns must hold integers \\(whole numbers\\)", lemma31.lemma31_curve, [250.5], RNG, reps=10)
V("ns must not be empty", lemma31.lemma31_curve, [], RNG, reps=10)
V("reps must be >= 2", lemma31.lemma31_curve, [250], RNG, reps=1)
V(r"c_star \(C\*\) must be finite and > 1", lemma31.lemma31_curve, [250], RNG, reps=10, c_star=1.0)
T("rng must be a numpy.random.Generator", lemma31.lemma31_curve, [250], "rng", reps=10)
T("curve must be a dict", lemma31.plot_lemma31, [250], [1.0])
V("curve must be lemma31_curve's output; missing keys", lemma31.plot_lemma31, [250], {"Mf": [1.0]})
V(
    "curve must hold one value per N",
    lemma31.plot_lemma31,
    [250, 500],
    {k: [1.0] for k in ("Mf", "Md", "Mf stderr", "Md stderr", "Mf bound", "Md bound")},
)
T(
    "ax must be an Axes",
    lemma31.plot_lemma31,
    [250],
    {k: [1.0] for k in ("Mf", "Md", "Mf stderr", "Md stderr", "Mf bound", "Md bound")},
    ax="axes",
)


# --- bandit_unlearning.mab.mechanisms
from bandit_unlearning.mab import mechanisms as mech  # noqa: E402

REQUEST = mech.DeletionRequest.from_indices(DATASET, [0, 3])
T("request arms must hold integers, not booleans", mech.DeletionRequest, [True], [1.0])
V("request arms must hold integers \\(whole numbers\\)", mech.DeletionRequest, [0.5], [1.0])
V("at least one point", mech.DeletionRequest, [], [])
V("request names unknown arm -1", mech.DeletionRequest, [-1], [1.0])
V("request rewards must be finite and lie in", mech.DeletionRequest, [0], [1.5])
T("request rewards must be an array of numbers", mech.DeletionRequest, [0], ["a"])
V("the same length", mech.DeletionRequest, [0, 1], [1.0])
T("dataset must be an OfflineDataset", mech.DeletionRequest.from_indices, STATE, [0])
T("indices must hold integers, not booleans", mech.DeletionRequest.from_indices, DATASET, [True])
V("indices must lie in", mech.DeletionRequest.from_indices, DATASET, [10])
V("indices must be distinct", mech.DeletionRequest.from_indices, DATASET, [1, 1])
V("non-empty 1-D", mech.DeletionRequest.from_indices, DATASET, [])
T("n_arms must be an integer", REQUEST.deleted_counts, 3.0)
V("n_arms must be >= 1", REQUEST.deleted_counts, 0)
V("request names unknown arm 1", mech.DeletionRequest([0, 1], [1.0, 0.0]).deleted_counts, 1)
T("n_arms must be an integer", REQUEST.deleted_sums, True)
V("request names unknown arm 1", mech.DeletionRequest([0, 1], [1.0, 0.0]).deleted_sums, 1)
T("state must be an LCBState", REQUEST.validate_against, DATASET)
V("more deletions than the arm holds", mech.DeletionRequest([2] * 4, [0.0] * 4).validate_against, STATE)
V(
    "more than the arm's stored reward sum",
    mech.DeletionRequest([0] * 4, [1.0] * 4).validate_against,
    lcb.LCBState([4, 3, 3], [0.0, 1.0, 1.0], 0.1),
)
V(
    "impossible for rewards in",
    mech.DeletionRequest([0], [0.0]).validate_against,
    lcb.LCBState([4, 3, 3], [4.0, 1.0, 1.0], 0.1),
)
T("request must be a DeletionRequest", mech.rollback, STATE, [0, 1])
T("state must be an LCBState", mech.rollback, DATASET, REQUEST)
V("request names unknown arm 5", mech.rollback, STATE, mech.DeletionRequest([5], [1.0]))
T("state must be an LCBState", mech.gaussian_mechanism, DATASET, 0, 0.1, RNG)
T("arm must be an integer", mech.gaussian_mechanism, STATE, True, 0.1, RNG)
V(r"arm must lie in \[0, 2\]", mech.gaussian_mechanism, STATE, 3, 0.1, RNG)
V("sigma must be finite and >= 0", mech.gaussian_mechanism, STATE, 0, -0.1, RNG)
V("sigma must be finite and >= 0", mech.gaussian_mechanism, STATE, 0, INF, RNG)
T("sigma must be a real number", mech.gaussian_mechanism, STATE, 0, "0.1", RNG)
T("rng must be a numpy.random.Generator", mech.gaussian_mechanism, STATE, 0, 0.1, np.random.SeedSequence(1))
V(r"n_a0 = N\(a0\) must be >= 1", mech.sensitivity_condition_holds, 0, 1, 2.0)
V(r"k must lie in \[0, N\(a0\)\]", mech.sensitivity_condition_holds, 10, 11, 2.0)
T("k must hold integers, not booleans", mech.sensitivity_condition_holds, 10, True, 2.0)
V("log_term L = ln\\(m/tau\\) must be finite and > 0", mech.sensitivity_condition_holds, 10, 1, 0.0)
T("log_term must be an array of numbers", mech.sensitivity_condition_holds, 10, 1, "2")
V("n_a0 and k must broadcast together", mech.sensitivity_condition_holds, [10, 20], [1, 2, 3], 2.0)
V("n_a0 must hold integers \\(whole numbers\\)", mech.paper_sensitivity, 10.5, 1)
V(r"k must lie in \[0, N\(a0\)\]", mech.paper_sensitivity, 10, -1)
T("n_a0 must be an array of numbers", mech.paper_sensitivity, "10", 1)
V("log_term L = ln\\(m/tau\\) must be finite and > 0", mech.exact_sensitivity, 10, 1, NAN)
V(r"k must lie in \[0, N\(a0\)\]", mech.exact_sensitivity, 10, 12, 2.0)
T("k must hold integers, not booleans", mech.exact_sensitivity, 10, [True], 2.0)


# --- bandit_unlearning.mab.bounds
from bandit_unlearning.mab import bounds  # noqa: E402

for f in (bounds.gamma0_paper, bounds.gamma0_exact, bounds.rollback_branch_bound):
    V(r"need integers 1 <= k <= N\(a0\)", f, 10, 11, 2.0)
    T("k must hold integers, not booleans", f, 10, True, 2.0)
    V("log_term must be finite and > 0", f, 10, 2, -1.0)
    T("n_a0 must be an array of numbers", f, "10", 2, 2.0)
V("n_a0 and k must broadcast together", bounds.gamma0_paper, [10, 20], [1, 2, 3], 2.0)
V("gamma must be finite and > 0", bounds.gaussian_branch_bound, 10, 2, 0.0, 2.0)
V(r"need integers 1 <= k <= N\(a0\)", bounds.gaussian_branch_bound, 10, 0, 0.5, 2.0)
T("gamma must be an array of numbers", bounds.gaussian_branch_bound, 10, 2, "0.5", 2.0)
V("log_term must be finite and > 0", bounds.gaussian_branch_bound, 10, 2, 0.5, NAN)
T(r"N \(n\) must be an integer", bounds.theorem33_bound, 100.0, 5, 50, 50, 2, 0.5, True)
V(r"N \(n\) must be >= 2", bounds.theorem33_bound, 1, 5, 50, 50, 2, 0.5, True)
T("n_arms must be an integer", bounds.theorem33_bound, 100, True, 50, 50, 2, 0.5, True)
T("n_a0 must be an integer", bounds.theorem33_bound, 100, 5, "50", 50, 2, 0.5, True)
T("k must be an integer", bounds.theorem33_bound, 100, 5, 50, 50, 2.5, 0.5, True)
V("n_star must be finite and > 0", bounds.theorem33_bound, 100, 5, 50, 0, 2, 0.5, True)
V("Theorem 3.3 assumes k <=", bounds.theorem33_bound, 100, 5, 50, 50, 45, 0.5, True)
V("gamma must be finite and > 0", bounds.theorem33_bound, 100, 5, 50, 50, 2, -0.5, True)
T("a0_is_best must be True or False", bounds.theorem33_bound, 100, 5, 50, 50, 2, 0.5, "yes")
V(
    "gamma0 must be finite and > 0|gamma0 must be a number and > 0",
    bounds.theorem33_bound,
    100,
    5,
    50,
    50,
    2,
    0.5,
    True,
    0.0,
)
T("gamma0 must be a real number", bounds.theorem33_bound, 100, 5, 50, 50, 2, 0.5, True, "1")
V(r"need integers 1 <= k <= N\(a0\)", bounds.theorem33_order, 100, 5, 50, 50, 60, 0.5)
T("n_a0 must be an integer", bounds.theorem33_order, 100, 5, 50.5, 50, 2, 0.5)
V("n_star must be finite and > 0", bounds.theorem33_order, 100, 5, 50, -1, 2, 0.5)
T("gamma must be a real number", bounds.theorem33_order, 100, 5, 50, 50, 2, None)
T("gamma0 must be a real number", bounds.theorem33_order, 100, 5, 50, 50, 2, 0.5, [1.0])
V(r"c_star \(C\*\) must be finite and > 1", bounds.theorem35_bound, 1000, 5, 1.0, 2, 0.5, True)
T(r"c_star \(C\*\) must be a real number", bounds.theorem35_bound, 1000, 5, "2", 2, 0.5, True)
V("Theorem 3.5 assumes N > 8 C\\* ln N", bounds.theorem35_bound, 100, 5, 5.0, 2, 0.5, True)
T("k must be an integer", bounds.theorem35_bound, 1000, 5, 2.0, True, 0.5, True)
V(r"k must lie in \[1, 1000\]", bounds.theorem35_bound, 1000, 5, 2.0, 1001, 0.5, True)
V("gamma must be finite and > 0", bounds.theorem35_bound, 1000, 5, 2.0, 2, INF, True)
T("a0_is_best must be True or False", bounds.theorem35_bound, 1000, 5, 2.0, 2, 0.5, 1)

# --- bandit_unlearning.mab.unlearn
from bandit_unlearning.mab import unlearn as ul  # noqa: E402
from bandit_unlearning import protocol  # noqa: E402
from bandit_unlearning.protocol import unlearn, verify  # noqa: E402

OPTS = ul.UnlearnOptions("adaptive", gamma=0.5)
MIX = ul.UnlearnOptions("mixing", gamma=0.5, k_prime=1)
BIG_STATE = lcb.LCBState([200, 150, 100], [120.0, 60.0, 30.0], 1 / 450)
BIG_REQUEST = mech.DeletionRequest([0] * 4, [1.0, 0.0, 1.0, 1.0])
RESULT = unlearn(BIG_STATE, BIG_REQUEST, options=OPTS, rng=np.random.default_rng(1))[1]
PLAN = RESULT.plans[0]
V("method must be one of", ul.UnlearnOptions, "fast", gamma=0.5)
T("method must be one of", ul.UnlearnOptions, 3, gamma=0.5)
V("threshold must be one of", ul.UnlearnOptions, "adaptive", gamma=0.5, threshold="other")
T("calibration must be one of", ul.UnlearnOptions, "adaptive", gamma=0.5, calibration=None)
V("sensitivity must be one of", ul.UnlearnOptions, "adaptive", gamma=0.5, sensitivity="worst")
V("threshold_scale must be finite and > 0", ul.UnlearnOptions, "adaptive", gamma=0.5, threshold_scale=0.0)
T("threshold_scale must be a real number", ul.UnlearnOptions, "adaptive", gamma=0.5, threshold_scale="1.3")
V("gamma must be finite and > 0", ul.UnlearnOptions, "adaptive", gamma=-1.0)
T("gamma must be a real number", ul.UnlearnOptions, "adaptive", gamma="0.5")
V(
    "give either gamma or \\(epsilon, delta\\)",
    ul.UnlearnOptions,
    "adaptive",
    gamma=0.5,
    epsilon=0.5,
    delta=0.1,
)
V("epsilon and delta must be given together", ul.UnlearnOptions, "adaptive", epsilon=0.5)
V("adds noise: give gamma", ul.UnlearnOptions, "gaussian")
V("only proven for epsilon < 1", ul.UnlearnOptions, "adaptive", epsilon=2.0, delta=0.1, calibration="classic")
V("needs epsilon and delta", ul.UnlearnOptions, "adaptive", gamma=0.5, calibration="analytic")
T("k_prime must be an integer", ul.UnlearnOptions, "mixing", gamma=0.5, k_prime=1.5)
V("k_prime must be >= 0", ul.UnlearnOptions, "mixing", gamma=0.5, k_prime=-1)
V(r"eta = k'/k must lie in \[0, 1\]", ul.UnlearnOptions, "mixing", gamma=0.5, eta=1.5)
T("eta = k'/k must be a real number", ul.UnlearnOptions, "mixing", gamma=0.5, eta="0.5")
V("exactly one of k_prime", ul.UnlearnOptions, "mixing", gamma=0.5)
V("parameters of method='mixing'", ul.UnlearnOptions, "adaptive", gamma=0.5, eta=0.5)
T("k must be an integer", MIX.k_rollback_for, 2.0)
V("k must be >= 0", MIX.k_rollback_for, -2)
V(r"k_prime must lie in \[0, k\]", MIX.k_rollback_for, 0)
V("k' is a parameter of method='mixing'", OPTS.k_rollback_for, 3)
T("unknown option", OPTS.replace, against="literal")
V("reference must be one of", OPTS.replace, reference="world")
V("fallback must be one of", ul.UnlearnOptions, "adaptive", gamma=0.5, fallback="warn")
V("against must be one of", ul.output_distributions, BIG_STATE, BIG_REQUEST, options=OPTS, against="x")
V("delta_f must be >= 0", OPTS.sigma_for, -0.1)
V("delta_f must be finite", OPTS.sigma_for, [0.1, NAN])
T("delta_f must be an array of numbers", OPTS.sigma_for, "0.1")
V("no privacy level was given", ul.UnlearnOptions("rollback").sigma_for, 0.1)
T("arm must be an integer", ul.SourcePlan, 0.0, 2, 10, 0, 0.1, 0.1)
V("arm must be >= 0", ul.SourcePlan, -1, 2, 10, 0, 0.1, 0.1)
V("k must not exceed n", ul.SourcePlan, 0, 12, 10, 0, 0.1, 0.1)
V(r"k_rollback must lie in \[0, 2\]", ul.SourcePlan, 0, 2, 10, 3, 0.1, 0.1)
V("sigma must be finite and >= 0", ul.SourcePlan, 0, 2, 10, 0, 0.1, NAN)
T("delta_f must be a real number", ul.SourcePlan, 0, 2, 10, 0, "0.1", 0.1)
V("sensitivity must be one of", ul.noise_sensitivity, 100, 5, 0, 2.0, "worst")
T("sensitivity must be one of", ul.noise_sensitivity, 100, 5, 0, 2.0, None)
V(r"k_rollback must lie in \[0, k\]", ul.noise_sensitivity, 100, 5, 6, 2.0, "exact")
T("n must be an array of numbers", ul.noise_sensitivity, "100", 5, 0, 2.0, "exact")
V("n must hold integers \\(whole numbers\\)", ul.noise_sensitivity, 100.5, 5, 0, 2.0, "exact")
V("broadcast together", ul.noise_sensitivity, [100, 100], [5, 5, 5], 0, 2.0, "exact")
V("Lemma A.1", ul.noise_sensitivity, 10, 9, 0, 2.0, "paper")
V("log_term L = ln\\(m/tau\\) must be finite and > 0", ul.noise_sensitivity, 100, 5, 0, -2.0, "exact")
T("options must be an UnlearnOptions", ul.threshold_gamma0, 100, 5, 2.0, "adaptive")
V(r"need integers 1 <= k <= N\(a0\)", ul.threshold_gamma0, 100, 101, 2.0, OPTS)
T("options must be an UnlearnOptions", ul.plan_unlearning, 0, [10, 10], [2, 0], 2.0, None)
T("learner_arm must be an integer", ul.plan_unlearning, 0.0, [10, 10], [2, 0], 2.0, OPTS)
V(r"learner_arm must lie in \[0, 1\]", ul.plan_unlearning, 2, [10, 10], [2, 0], 2.0, OPTS)
V("counts must be >= 0", ul.plan_unlearning, 0, [-10, 10], [2, 0], 2.0, OPTS)
V(r"deleted_counts must have shape \(2,\)", ul.plan_unlearning, 0, [10, 10], [2, 0, 0], 2.0, OPTS)
V("deleted_counts must not exceed counts", ul.plan_unlearning, 0, [10, 10], [12, 0], 2.0, OPTS)
V("the request deletes no point", ul.plan_unlearning, 0, [10, 10], [0, 0], 2.0, OPTS)
V("log_term must be finite and > 0", ul.plan_unlearning, 0, [10, 10], [2, 0], 0.0, OPTS)
T("log_term must be a real number", ul.plan_unlearning, 0, [10, 10], [2, 0], "2", OPTS)
T(
    "deleted_counts must hold integers, not booleans",
    ul.plan_unlearning,
    0,
    [10, 10],
    [True, False],
    2.0,
    OPTS,
)
T("options must be an UnlearnOptions", ul.UnlearnResult, 0, np.zeros(3), 0, "unlearned", (PLAN,), 1.0, "opts")
V("world must be one of", ul.UnlearnResult, 0, np.zeros(3), 0, "other", (PLAN,), 1.0, OPTS)
T("plans must be a tuple of SourcePlan", ul.UnlearnResult, 0, np.zeros(3), 0, "unlearned", [PLAN], 1.0, OPTS)
V(r"arm must lie in \[0, 2\]", ul.UnlearnResult, 5, np.zeros(3), 0, "unlearned", (PLAN,), 1.0, OPTS)
T("learner_arm must be an integer", ul.UnlearnResult, 0, np.zeros(3), None, "unlearned", (PLAN,), 1.0, OPTS)
V("scores must be 1-D", ul.UnlearnResult, 0, np.zeros((3, 1)), 0, "unlearned", (PLAN,), 1.0, OPTS)
# The protocol's unlearn on an LCBState: options one way, an UnlearnOptions (None refused: LCB has no default).
T(
    "no unlearning of a DeletionRequest request on a OfflineDataset state",
    unlearn,
    DATASET,
    BIG_REQUEST,
    options=OPTS,
    rng=RNG,
)
T(
    "no unlearning of a list request on a LCBState state \\(it serves DeletionRequest\\)",
    unlearn,
    BIG_STATE,
    [0, 1],
    options=OPTS,
    rng=RNG,
)
T("rng must be a numpy.random.Generator", unlearn, BIG_STATE, BIG_REQUEST, options=OPTS, rng="1")
V("rng as a seed must be an integer >= 0", unlearn, BIG_STATE, BIG_REQUEST, options=OPTS, rng=-5)
V(
    "more deletions than the arm holds",
    unlearn,
    STATE,
    mech.DeletionRequest([2] * 4, [0.0] * 4),
    options=ul.UnlearnOptions("rollback"),
    rng=RNG,
)
V(
    "Lemma A.1",
    unlearn,
    STATE,
    mech.DeletionRequest([0] * 3, [0.0] * 3),
    options=ul.UnlearnOptions("gaussian", gamma=0.5, fallback="refuse"),
    rng=RNG,
)
V(
    r"k_prime must lie in \[0, k\]",
    unlearn,
    BIG_STATE,
    BIG_REQUEST,
    options=ul.UnlearnOptions("mixing", gamma=0.5, k_prime=5),
    rng=RNG,
)
V(
    "Algorithm 4\\) is single-source",
    unlearn,
    BIG_STATE,
    mech.DeletionRequest([0, 1], [1.0, 0.0]),
    options=ul.UnlearnOptions("mixing", gamma=0.5, k_prime=1, fallback="refuse"),
    rng=RNG,
)
T(
    "options must be an UnlearnOptions",
    unlearn,
    BIG_STATE,
    BIG_REQUEST,
    options={"method": "adaptive"},
    rng=RNG,
)
T("options must be an UnlearnOptions, e.g. options=UnlearnOptions", unlearn, BIG_STATE, BIG_REQUEST, rng=RNG)
T("options must be an UnlearnOptions", ul.check_options, None)
T("options must be an UnlearnOptions", ul.check_options, "rollback")
T("options must be an UnlearnOptions", ul.reference, BIG_STATE, BIG_REQUEST, learner_arm=0)
T("options must be an UnlearnOptions", ul.output_distributions, BIG_STATE, BIG_REQUEST)
T(
    "retrained must be an LCBState|state must be an LCBState",
    ul.reference,
    None,
    BIG_REQUEST,
    learner_arm=0,
    options=OPTS,
    rng=RNG,
)
T(
    "learner_arm must be an integer",
    ul.reference,
    BIG_STATE,
    BIG_REQUEST,
    learner_arm=True,
    options=OPTS,
    rng=RNG,
)
V(
    r"learner_arm must lie in \[0, 2\]",
    ul.reference,
    BIG_STATE,
    BIG_REQUEST,
    learner_arm=3,
    options=OPTS,
    rng=RNG,
)
T(
    "rng must be a numpy.random.Generator",
    ul.reference,
    BIG_STATE,
    BIG_REQUEST,
    learner_arm=0,
    options=OPTS,
    rng=2.5,
)
V(
    "request names unknown arm 7",
    ul.reference,
    BIG_STATE,
    mech.DeletionRequest([7], [0.0]),
    learner_arm=0,
    options=OPTS,
    rng=RNG,
)
# The protocol's own entry points.
T("t must be an integer", protocol.DeleteStep, 2.0)
T("steps must be a sequence of step numbers", protocol.DeleteSteps, 3)
V("steps must name at least one step", protocol.DeleteSteps, ())
T("step must be an integer", protocol.DeleteSteps, (1, 2.5))
T("key must be callable", protocol.DeleteUser, "alice", key=3)
T(
    "state_type must be a type|state_type must be an instance of type",
    protocol.register_unlearn,
    "LCBState",
    type,
)
T("request_type must be a type|request_type must be an instance of type", protocol.register_unlearn, type, 3)
T("state_type must be a type|state_type must be an instance of type", protocol.register_verify, None)
T("no unlearning of a int request on a str state \\(not an unlearnable state\\)", unlearn, "state", 3)
T("no check exists for a LCBState state", verify, BIG_STATE)
V(r"arm must lie in \[0, 2\]", ul.noisy_argmax_distribution, [0.1, 0.2, 0.3], 3, 0.5)
T("arm must be an integer", ul.noisy_argmax_distribution, [0.1, 0.2, 0.3], 0.5, 0.5)
V("scores must be finite", ul.noisy_argmax_distribution, [0.1, NAN, 0.3], 0, 0.5)
V("sigma must be finite and >= 0", ul.noisy_argmax_distribution, [0.1, 0.2, 0.3], 0, -0.5)
V("sigma \\(shape \\(2,\\)\\) must broadcast", ul.noisy_argmax_distribution, np.zeros((3, 3)), 0, [0.5, 0.5])
V("scores must have shape \\(..., m\\)", ul.noisy_argmax_distribution, 0.5, 0, 0.5)
T("scores must be an array of numbers", ul.noisy_argmax_distribution, ["a"], 0, 0.5)
V("scores and sigmas must be 1-D of equal length", ul.multi_noisy_argmax_distribution, [0.1, 0.2], [0.1])
V("sigmas must be finite and >= 0", ul.multi_noisy_argmax_distribution, [0.1, 0.2], [0.1, -1.0])
V("scores must be finite", ul.multi_noisy_argmax_distribution, [0.1, INF], [0.1, 0.1])
V("epsabs must be finite and > 0", ul.multi_noisy_argmax_distribution, [0.1, 0.2], [0.1, 0.1], epsabs=0.0)
T("sigmas must be an array of numbers", ul.multi_noisy_argmax_distribution, [0.1, 0.2], "0.1")
T("size must be an integer", ul.subset_sum_distribution, [0.5, 1.0], True)
V(r"size must lie in \[0, 2\]", ul.subset_sum_distribution, [0.5, 1.0], 3)
V("values must be finite", ul.subset_sum_distribution, [0.5, NAN], 1)
T("values must be an array of numbers", ul.subset_sum_distribution, ["a"], 1)
V("too many to enumerate", ul.subset_sum_distribution, np.sqrt(np.arange(2, 42)) / 7, 20)
T("state must be an LCBState", ul.output_distributions, DATASET, BIG_REQUEST, options=OPTS)
V(
    "more deletions than the arm holds",
    ul.output_distributions,
    STATE,
    mech.DeletionRequest([2] * 4, [0.0] * 4),
    options=ul.UnlearnOptions("rollback"),
)
_B = dict(
    counts=np.array([[20, 20]] * 3),
    reward_sums=np.array([[10.0, 5.0]] * 3),
    tau=0.025,
    arm=0,
    k=5,
    deleted_sums=np.array([2.0, 3.0, 1.0]),
    options=ul.UnlearnOptions(method="adaptive", gamma=0.5),
    rng=RNG,
)
V("reward_sums must be finite", ul.unlearn_batch, **(_B | dict(reward_sums=np.array([[NAN, 5.0]] * 3))))
V("counts must be >= 0", ul.unlearn_batch, **(_B | dict(counts=np.array([[20, -1]] * 3))))
V(
    "counts must hold integers \\(whole numbers\\)",
    ul.unlearn_batch,
    **(_B | dict(counts=np.array([[20.5, 20]] * 3))),
)
T(
    "counts must hold integers, not booleans",
    ul.unlearn_batch,
    **(_B | dict(counts=np.ones((3, 2), dtype=bool))),
)
V(
    r"reward_sums must lie in \[0, counts\]",
    ul.unlearn_batch,
    **(_B | dict(reward_sums=np.array([[25.0, 5.0]] * 3))),
)
V("the same shape \\(R, m\\)", ul.unlearn_batch, **(_B | dict(reward_sums=np.array([[10.0]] * 3))))
V(r"tau must lie in \(0, 1\)", ul.unlearn_batch, **(_B | dict(tau=0.0)))
T(
    "arm must be an integer, a real number or an array of numbers, not booleans",
    ul.unlearn_batch,
    **(_B | dict(arm=True)),
)
V("arm names unknown arm", ul.unlearn_batch, **(_B | dict(arm=2)))
T("k must be an integer >= 1", ul.unlearn_batch, **(_B | dict(k=5.0)))
V("more deletions", ul.unlearn_batch, **(_B | dict(k=21)))
V(r"deleted_sums must have shape \(3,\)", ul.unlearn_batch, **(_B | dict(deleted_sums=np.zeros(2))))
V(
    "deleted_sums must be sums of k rewards",
    ul.unlearn_batch,
    **(_B | dict(deleted_sums=np.array([6.0, 1, 1]))),
)
T("deleted_sums must be an array of numbers", ul.unlearn_batch, **(_B | dict(deleted_sums="123")))
V("world must be one of", ul.unlearn_batch, **(_B | dict(world="both")))
T("rng must be a numpy.random.Generator", ul.unlearn_batch, **(_B | dict(rng="seed")))
T("rng must be a numpy.random.Generator", ul.unlearn_batch, **(_B | dict(rng=[1], z=np.zeros(3))))
V(r"z must be finite standard normal draws of shape \(3,\)", ul.unlearn_batch, **(_B | dict(z=np.zeros(2))))
V("rolled_sums only applies to method='mixing'", ul.unlearn_batch, **(_B | dict(rolled_sums=np.zeros(3))))
V(
    "rolled_sums must be sums of k'",
    ul.unlearn_batch,
    **(
        _B
        | dict(
            options=ul.UnlearnOptions("mixing", gamma=0.5, k_prime=2), rolled_sums=np.array([2.0, 3.0, 1.0])
        )
    ),
)
V(
    "needs 0/1 rewards",
    ul.unlearn_batch,
    **(
        _B
        | dict(options=ul.UnlearnOptions("mixing", gamma=0.5, k_prime=2), deleted_sums=np.array([2.5, 3, 1]))
    ),
)
V(
    "Lemma A.1",
    ul.unlearn_batch,
    **(
        _B
        | dict(
            k=18,
            deleted_sums=np.array([9.0, 9, 9]),
            options=ul.UnlearnOptions("gaussian", gamma=0.5, fallback="refuse"),
        )
    ),
)
T("options must be an UnlearnOptions", ul.unlearn_batch, **(_B | dict(options=None)))
T("options must be an UnlearnOptions", ul.unlearn_batch, **(_B | dict(options="adaptive")))
T("unexpected keyword argument 'method'", ul.unlearn_batch, **(_B | dict(method="adaptive")))
T("unexpected keyword argument 'gamma'", ul.unlearn_batch, **(_B | dict(gamma=0.5)))


# --- bandit_unlearning.mab.lower_bounds
from bandit_unlearning.mab import lower_bounds as lb  # noqa: E402

PAIR = lb.fixed_sample_pair(40, 20)
DPAIR = lb.distribution_pair(100, 5, 4.0)
PAIR_DATA = lb.sample_pair_dataset(PAIR, 0, np.random.default_rng(2))
T("n_a0 must be an integer", lb.gap_fixed, "40", 20)
V("n_a0 must be >= 2", lb.gap_fixed, 1, 1)
V("n_a0 - k >= 1", lb.gap_fixed, 20, 20)
T("k must be an integer", lb.gap_fixed, 40, True)
V("k must be >= 1", lb.gap_fixed, 40, 0)
V("Theorem 3.9 needs c_star \\(C\\*\\) in \\[2, inf\\)", lb.gap_distribution, 100, 5, 1.5)
T(r"c_star \(C\*\) must be a real number", lb.gap_distribution, 100, 5, "4")
T("n must be an integer", lb.gap_distribution, 100.5, 5, 4.0)
V("kind must be one of", lb.TwoPointPair, "other", [[0.7, 0.5], [0.3, 0.5]], 0.2, 5, 40, counts=[20, 20])
T("kind must be one of", lb.TwoPointPair, 1, [[0.7, 0.5], [0.3, 0.5]], 0.2, 5, 40, counts=[20, 20])
V(
    r"means must be a \(2, 2\) array in \[0, 1\]",
    lb.TwoPointPair,
    "fixed",
    [[1.7, 0.5], [0.3, 0.5]],
    0.2,
    5,
    40,
    counts=[20, 20],
)
T("means must be an array of numbers", lb.TwoPointPair, "fixed", "means", 0.2, 5, 40, counts=[20, 20])
V(
    "both instances must have gap",
    lb.TwoPointPair,
    "fixed",
    [[0.7, 0.5], [0.3, 0.5]],
    0.1,
    5,
    40,
    counts=[20, 20],
)
T(
    "gap must be a real number",
    lb.TwoPointPair,
    "fixed",
    [[0.7, 0.5], [0.3, 0.5]],
    "0.2",
    5,
    40,
    counts=[20, 20],
)
V("different best arms", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.7, 0.5]], 0.2, 5, 40, counts=[20, 20])
T(
    "source must be an integer",
    lb.TwoPointPair,
    "fixed",
    [[0.7, 0.5], [0.3, 0.5]],
    0.2,
    5,
    40,
    counts=[20, 20],
    source=True,
)
V("k must be >= 1", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.3, 0.5]], 0.2, -1, 40, counts=[20, 20])
V("k must be < n", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.3, 0.5]], 0.2, 40, 40, counts=[20, 20])
T("n must be an integer", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.3, 0.5]], 0.2, 5, 40.0, counts=[20, 20])
V("counts must sum to n", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.3, 0.5]], 0.2, 5, 40, counts=[20, 21])
V("M_f needs counts", lb.TwoPointPair, "fixed", [[0.7, 0.5], [0.3, 0.5]], 0.2, 5, 40)
V(
    "behaviors must hold one probability distribution",
    lb.TwoPointPair,
    "distribution",
    [[0.7, 0.5], [0.3, 0.5]],
    0.2,
    5,
    40,
    behaviors=[[0.5, 0.6], [0.5, 0.5]],
    c_star=2.0,
)
V(
    r"c_star \(C\*\) must be finite and > 1",
    lb.TwoPointPair,
    "distribution",
    [[0.7, 0.5], [0.3, 0.5]],
    0.2,
    5,
    40,
    behaviors=[[0.5, 0.5], [0.5, 0.5]],
    c_star=0.5,
)
T("instance must be 0 \\(I1\\) or 1 \\(I2\\)", PAIR.suboptimality, True, 0)
V("instance must be 0 \\(I1\\) or 1 \\(I2\\)", PAIR.suboptimality, 2, 0)
V("arms must be 0 or 1", PAIR.suboptimality, 0, [0, 2])
T("arms must hold integers, not booleans", PAIR.suboptimality, 0, [True])
V("arms must hold integers \\(whole numbers\\)", PAIR.suboptimality, 0, 0.5)
T("instance must be 0 \\(I1\\) or 1 \\(I2\\)", PAIR.source_count_pmf, 0.0)
V("instance must be 0 \\(I1\\) or 1 \\(I2\\)", PAIR.source_count_pmf, -1)
T("n_other must be an integer", lb.fixed_sample_pair, 40, 20, "20")
V("n_other must be >= 1", lb.fixed_sample_pair, 40, 20, 0)
V("n - k >= 1", lb.distribution_pair, 10, 10, 4.0)
T(r"c_star \(C\*\) must be a real number", lb.distribution_pair, 100, 5, None)
V("The C\\* in \\(1, 2\\) lower bound needs", lb.small_cstar_pair, 10, 2, 2.0)
T("k must be an integer", lb.small_cstar_pair, 10, "2", 1.5)
T("pair must be a TwoPointPair", lb.sample_source_counts, "pair", 0, RNG)
V("instance must be", lb.sample_source_counts, PAIR, 2, RNG)
V("size must be >= 1", lb.sample_source_counts, PAIR, 0, RNG, 0)
T("rng must be a numpy.random.Generator", lb.sample_source_counts, PAIR, 0, "rng")
V("almost never exists", lb.sample_source_counts, lb.distribution_pair(25, 20, 20.0), 0, RNG)
T("pair must be a TwoPointPair", lb.sample_pair_statistics, None, 0, RNG)
T("instance must be", lb.sample_pair_statistics, DPAIR, 0.0, RNG)
T("rng must be a numpy.random.Generator", lb.sample_pair_statistics, DPAIR, 0, object())
T("size must be an integer", lb.sample_pair_statistics, DPAIR, 0, RNG, 2.5)
T("pair must be a TwoPointPair", lb.sample_pair_dataset, PAIR_DATA, 0, RNG)
V("instance must be", lb.sample_pair_dataset, PAIR, 5, RNG)
T("rng must be a numpy.random.Generator", lb.sample_pair_dataset, PAIR, 0, 1.0)
T("dataset must be an OfflineDataset", lb.sample_pair_request, PAIR, STATE, RNG)
V("scheme must be one of", lb.sample_pair_request, PAIR, PAIR_DATA, RNG, scheme="all")
T("rng must be a numpy.random.Generator", lb.sample_pair_request, PAIR, PAIR_DATA, "rng")
V("fewer than k", lb.sample_pair_request, lb.fixed_sample_pair(60, 50), PAIR_DATA, RNG)
V(r"p and q \(Bernoulli parameters\) must lie in", lb.bernoulli_kl, 1.5, 0.5)
V(r"p and q \(Bernoulli parameters\) must lie in", lb.bernoulli_kl, NAN, 0.5)
T("q must be an array of numbers", lb.bernoulli_kl, 0.5, "0.5")
V("p and q must broadcast together", lb.bernoulli_kl, [0.5, 0.5], [0.5, 0.5, 0.5])
V("per_sample_kl is for M_d pairs", lb.per_sample_kl, PAIR)
T("pair must be a TwoPointPair", lb.per_sample_kl, {"kind": "distribution"})
V("scheme must be one of", lb.retained_kl, PAIR, "both")
T("scheme must be one of", lb.retained_kl, PAIR, 0)
T("pair must be a TwoPointPair", lb.retained_kl, "pair")
T("pair must be a TwoPointPair", lb.paper_kl_bound, 3)
V(r"tau must lie in \(0, 1\)", lb.learner_bit_kl, PAIR, 1.5)
T("source_counts must be an array of numbers", lb.learner_bit_kl, PAIR, None, "40")
T("pair must be a TwoPointPair", lb.learner_bit_kl, None)
V(r"gap must lie in \(0, 1\]", lb.le_cam_bound, 0.0, 1.0, 0.5)
V("kl must be >= 0", lb.le_cam_bound, 0.1, -1.0, 0.5)
V("epsilon must be finite and >= 0", lb.le_cam_bound, 0.1, 1.0, -0.5)
V(r"delta must lie in \[0, 1\)", lb.le_cam_bound, 0.1, 1.0, 0.5, 1.0)
T("epsilon must be an array of numbers", lb.le_cam_bound, 0.1, 1.0, "0.5")
T("gap must be an array of numbers", lb.le_cam_bound, None, 1.0, 0.5)
V("n_a0 - k >= 1", lb.lower_bound_fixed, 20, 20, 0.5)
V("epsilon must be finite and > 0", lb.lower_bound_fixed, 40, 20, 0.0)
V("Theorems 3.7 and 3.9 hold for delta in", lb.lower_bound_fixed, 40, 20, 0.5, delta=0.1)
T("k must hold integers, not booleans", lb.lower_bound_fixed, 40, True, 0.5)
V("n_a0 must hold integers \\(whole numbers\\)", lb.lower_bound_fixed, 40.5, 2, 0.5)
T("delta must be an array of numbers", lb.lower_bound_fixed, 40, 20, 0.5, delta="0.01")
V("Theorem 3.9 needs c_star \\(C\\*\\)", lb.lower_bound_distribution, 45, 5, 1.9, 0.5)
V("k must be >= 1", lb.lower_bound_distribution, 45, 0, 5.0, 0.5)
T("epsilon must be an array of numbers", lb.lower_bound_distribution, 45, 5, 5.0, [[0.5], [0.5, 1]])
V("The C\\* in \\(1, 2\\) lower bound needs", lb.lower_bound_small_cstar, 8, 3, 2.5, 0.1)
V("kl must be 'paper', 'exact' or a number", lb.lower_bound_small_cstar, 8, 3, 1.5, 0.1, kl="other")
V("kl must be >= 0", lb.lower_bound_small_cstar, 8, 3, 1.5, 0.1, kl=-1.0)
T("kl must be an array of numbers", lb.lower_bound_small_cstar, 8, 3, 1.5, 0.1, kl=None)


# --- bandit_unlearning.mab.mixing
from bandit_unlearning.mab import mixing  # noqa: E402

for f in (mixing.theorem_a10_bound, mixing.theorem_a10_numerator):
    T(r"N \(n\) must be an integer", f, 1000.0, 5, 200, 10, 5, 0.5)
    V(r"need integers 1 <= k < N\(a0\) <= N", f, 1000, 5, 200, 200, 5, 0.5)
    V(r"k_prime must lie in \[0, k\]", f, 1000, 5, 200, 10, 11, 0.5)
    T("k_prime must hold integers, not booleans", f, 1000, 5, 200, 10, True, 0.5)
    V("gamma must be finite and > 0", f, 1000, 5, 200, 10, 5, 0.0)
    T("gamma must be an array of numbers", f, 1000, 5, 200, 10, 5, "0.5")
    V("Lemma A.1's condition", f, 1000, 5, 20, 19, 5, 0.5)
V(
    "n_a0, k and k_prime must broadcast together",
    mixing.theorem_a10_bound,
    1000,
    5,
    [200, 200],
    [10, 10, 10],
    5,
    0.5,
)
V("n_a0 must hold integers \\(whole numbers\\)", mixing.theorem_a10_best_k_prime, 1000, 5, 200.5, 10, 0.5)
T("n_arms must be an integer", mixing.theorem_a10_best_k_prime, 1000, "5", 200, 10, 0.5)
V("gamma must be finite and > 0", mixing.theorem_a10_best_k_prime, 1000, 5, 200, 10, NAN)

# --- bandit_unlearning.mab.multisource
from bandit_unlearning.mab import multisource  # noqa: E402

T(r"N \(n\) must be an integer", multisource.theorem313_bound, 1000.0, 5, [200, 200], [5, 5], 200, 0.5, True)
V(r"N \(n\) must be >= 2", multisource.theorem313_bound, 1, 5, [200, 200], [5, 5], 200, 0.5, True)
T(
    "source_counts must hold integers",
    multisource.theorem313_bound,
    1000,
    5,
    [True, True],
    [5, 5],
    200,
    0.5,
    True,
)
T(
    "source_ks must hold integers",
    multisource.theorem313_bound,
    1000,
    5,
    [200, 200],
    [5.0, 5.0],
    200,
    0.5,
    True,
)
V("equal-length non-empty", multisource.theorem313_bound, 1000, 5, [200, 200], [5], 200, 0.5, True)
V("sum N_i <= N", multisource.theorem313_bound, 300, 5, [200, 200], [5, 5], 200, 0.5, True)
V("Theorem 3.13 assumes k_i <=", multisource.theorem313_bound, 1000, 5, [200, 20], [5, 19], 200, 0.5, True)
V("gamma must be finite and > 0", multisource.theorem313_bound, 1000, 5, [200, 200], [5, 5], 200, -0.5, True)
T("gamma must be a real number", multisource.theorem313_bound, 1000, 5, [200, 200], [5, 5], 200, "0.5", True)
V("n_star must be finite and >= 1", multisource.theorem313_bound, 1000, 5, [200, 200], [5, 5], 0.5, 0.5, True)
T("n_star must be a real number", multisource.theorem313_bound, 1000, 5, [200, 200], [5, 5], "200", 0.5, True)
T(
    "star_is_source must be True or False",
    multisource.theorem313_bound,
    1000,
    5,
    [200, 200],
    [5, 5],
    200,
    0.5,
    1,
)
T(
    "gamma0 must be a real number",
    multisource.theorem313_bound,
    1000,
    5,
    [200, 200],
    [5, 5],
    200,
    0.5,
    True,
    "1",
)

# --- bandit_unlearning.mab.imitation
from bandit_unlearning.mab import imitation as im  # noqa: E402

ISTATE = im.fit_imitation(DATASET)
T("counts must hold integers, not booleans", im.most_frequent_arm, [True, False])
V("counts must be non-negative", im.most_frequent_arm, [1, -1])
V("count rule undefined", im.most_frequent_arm, [0, 0])
V("at least one arm", im.most_frequent_arm, np.zeros((2, 0), dtype=int))
V("counts must hold integers \\(whole numbers\\)", im.most_frequent_arm, [1.5, 2])
T("counts must be an array of numbers", im.ImitationState, "123")
V("count rule undefined", im.ImitationState, [0, 0])
V("non-empty 1-D", im.ImitationState, [[1, 2]])
T("dataset must be an OfflineDataset", im.fit_imitation, ISTATE)
V("count rule undefined", im.fit_imitation, data.OfflineDataset([], [], 2))
T("n_arms must be an integer", im.deletion_counts, [1, 0, 0], 3.0)
V("one entry per arm", im.deletion_counts, [1, 0], 3)
V("request names unknown arm 3", im.deletion_counts, [1, 0, 0, 2], 3)
V("deletion counts k must be non-negative", im.deletion_counts, [1, -1, 0], 3)
T("deletion counts k must hold integers, not booleans", im.deletion_counts, [True, False, False], 3)
T(
    "no unlearning of a DeletionCounts request on a LCBState state",
    unlearn,
    STATE,
    im.DeletionCounts([1, 0, 0]),
)
V("more deletions than the arm holds", unlearn, ISTATE, im.DeletionCounts([5, 0, 0]))
V("deletes every point", unlearn, ISTATE, im.DeletionCounts([4, 3, 3]))
T("the imitation learner has no options", unlearn, ISTATE, im.DeletionCounts([1, 0, 0]), options=OPTS)
T("rng must be a numpy.random.Generator", unlearn, ISTATE, im.DeletionCounts([1, 0, 0]), rng="1")
V("deletion counts k must be non-negative", im.DeletionCounts, [-1, 0, 0])
T("arm must be an integer", im.ImitationRecord, 0.5, 1)
V("n_deleted must be >= 1", im.ImitationRecord, 0, 0)
V("reference must be 'literal'", im.ImitationRecord, 0, 1, "conditional")
V("deletion counts k must be a 1-D per-arm vector", im.DeletionCounts, [[1, 0]])
V("deletion counts k exceed the counts", im.unlearned_arms, [3, 3], [4, 0])
V("deletion counts k must have the shape of counts", im.unlearned_arms, [3, 3], [1, 0, 0])
T("counts must be an array of numbers", im.unlearned_arms, ["3"], [0])
V(r"k = 7 must lie in \[0, N\]", im.source_request_counts, [3, 3], 7)
T("k must be an integer", im.source_request_counts, [3, 3], 2.0)
V(r"source must lie in \[0, 1\]", im.source_request_counts, [3, 3], 2, source=2)
T("source must be an integer", im.source_request_counts, [3, 3], 2, source=True)
V("need n >= 0 and m >= 1", im.count_vectors, -1, 2)
T("n must be an integer", im.count_vectors, 5.0, 2)
V("exceed the limit of 1000000", im.count_vectors, 100, 6)
T("counts must hold integers, not booleans", im.multinomial_pmf, [True, False], [0.5, 0.5])
V("behavior must be a probability distribution", im.multinomial_pmf, [1, 2], [0.5, 0.6])
V("counts must have shape \\(..., m\\)", im.multinomial_pmf, 3, [1.0])
V("need 0 <= k < n", im.output_distributions_uniform_deletion, [0.5, 0.5], 4, 4)
V("behavior must be a probability distribution", im.output_distributions_uniform_deletion, [0.5, 0.6], 4, 1)
T("behavior must be an array of numbers", im.output_distributions_uniform_deletion, "0.5", 4, 1)
T("mechanism must be callable", im.output_distributions_uniform_deletion, [0.5, 0.5], 4, 1, mechanism="alg6")
T("k must be an integer", im.output_distributions_uniform_deletion, [0.5, 0.5], 4, 1.0)
V("exceed the limit of 20000000", im.output_distributions_uniform_deletion, np.full(4, 0.25), 200, 100)
V(r"Theorem 3.11 needs c_star \(C\*\) in \(1, 2\)", im.theorem311_condition, 100, 10, 2.5)
T(r"c_star \(C\*\) must be a real number", im.theorem311_condition, 100, 10, "1.3")
T("n must be an integer", im.theorem311_condition, 100.0, 10, 1.3)
V("need integers n >= 1 and 0 <= k <= n", im.theorem311_condition, 100, 101, 1.3)
V(r"Theorem 3.11 needs c_star \(C\*\) in \(1, 2\)", im.theorem311_expression, 100, 10, 1.0)
V("need integers n >= 1 and 0 <= k <= n", im.theorem311_expression, [100, 0], 0, 1.3)
T("k must hold integers, not booleans", im.theorem311_expression, 100, True, 1.3)
V("n and k must broadcast together", im.theorem311_failure_bound, [10, 20], [1, 2, 3], 1.3)
V(r"c_star \(C\*\) must be finite", im.theorem311_failure_bound, 100, 10, NAN)
V("n must hold integers \\(whole numbers\\)", im.theorem311_failure_bound, 100.5, 10, 1.3)
V(r"best_arm must lie in \[0, 2\]", im.instance_failure_bounds, 100, 10, [0.5, 0.25, 0.25], best_arm=3)
T("n must be an integer", im.instance_failure_bounds, "100", 10, [0.5, 0.25, 0.25])
V("k must be >= 0", im.instance_failure_bounds, 100, -1, [0.5, 0.25, 0.25])
V("behavior must be a probability distribution", im.instance_failure_bounds, 100, 1, [0.5, 0.25, 0.5])

# --- bandit_unlearning.experiments.protocol and paper_a, plots_a
from bandit_unlearning.experiments import paper_a, plots_a, protocol as proto  # noqa: E402

TRAJ = proto.simulate_trajectories(data.PAPER_MEANS, "Mf", [100, 200], 3, np.random.default_rng(3))
QUICK = paper_a.ProtocolA.quick()
STARTS = [np.zeros((3, 2), dtype=np.int64)]
# proto.Trajectories(means, model, prefixes, arm_counts, occurrence_sums): one argument spoilt a row
TRAJ_ARGS = {
    "means": TRAJ.means,
    "model": "Mf",
    "prefixes": TRAJ.prefixes,
    "arm_counts": TRAJ.arm_counts,
    "occurrence_sums": TRAJ.occurrence_sums,
}
for kind, match, spoilt in (
    (V, "model must be one of", {"model": "Mx"}),
    (V, r"arm_counts must have shape \(R, 2, 5\)", {"arm_counts": TRAJ.arm_counts[:, :1]}),
    (V, "occurrence_sums must have shape", {"occurrence_sums": TRAJ.occurrence_sums[:, :, :50]}),
    (V, "prefixes must be >= 1", {"prefixes": [0, 200]}),
    (T, "arm_counts must hold integers", {"arm_counts": TRAJ.arm_counts * 1.0}),
    (V, "means must lie in", {"means": [2.0] * 5}),
):
    kind(match, proto.Trajectories, *{**TRAJ_ARGS, **spoilt}.values())
# proto.trajectories_from_samples(means, model, arms, rewards, prefixes), likewise
SAMPLE_ARGS = {
    "means": data.PAPER_MEANS,
    "model": "Mf",
    "arms": [[0, 1]],
    "rewards": [[1.0, 0.0]],
    "prefixes": [2],
}
for kind, match, spoilt in (
    (V, r"arms must lie in \[0, 4\]", {"arms": [[0, 5]]}),
    (V, r"rewards must lie in \[0, 1\]", {"rewards": [[1.0, 2.0]]}),
    (V, "prefixes must be integers in", {"prefixes": [3]}),
    (V, "prefixes must hold integers \\(whole numbers\\)", {"prefixes": [1.5]}),
    (T, "model must be one of", {"model": None}),
    (V, "the same shape \\(R, n_max\\)", {"rewards": [[1.0]], "prefixes": [1]}),
):
    kind(match, proto.trajectories_from_samples, *{**SAMPLE_ARGS, **spoilt}.values())
V(
    "prefixes must be a non-empty list of positive integers",
    proto.simulate_trajectories,
    data.PAPER_MEANS,
    "Mf",
    [0],
    2,
    RNG,
)
T("n_replicates must be an integer", proto.simulate_trajectories, data.PAPER_MEANS, "Mf", [10], True, RNG)
V("model must be one of", proto.simulate_trajectories, data.PAPER_MEANS, "Mx", [10], 2, RNG)
T("rng must be a numpy.random.Generator", proto.simulate_trajectories, data.PAPER_MEANS, "Md", [10], 2, "rng")
V(
    r"c_star \(C\*\) must be finite and > 1",
    proto.simulate_trajectories,
    data.PAPER_MEANS,
    "Md",
    [10],
    2,
    RNG,
    c_star=0.5,
)
V(
    "behavior must be a probability distribution",
    proto.simulate_trajectories,
    data.PAPER_MEANS,
    "Md",
    [10],
    2,
    RNG,
    behavior=[0.5] * 5,
)
T("traj must be a Trajectories", proto.consecutive_deletions, "traj", 0, 0, 5, 2, RNG)
V(r"prefix must lie in \[0, 1\]", proto.consecutive_deletions, TRAJ, 2, 0, 5, 2, RNG)
V(r"arm must lie in \[0, 4\]", proto.consecutive_deletions, TRAJ, 0, 5, 5, 2, RNG)
T("k must be an integer", proto.consecutive_deletions, TRAJ, 0, 0, 5.0, 2, RNG)
V("n_requests must be >= 1", proto.consecutive_deletions, TRAJ, 0, 0, 5, 0, RNG)
V("align must be >= 1", proto.consecutive_deletions, TRAJ, 0, 0, 5, 2, RNG, align=0)
T("rng must be a numpy.random.Generator", proto.consecutive_deletions, TRAJ, 0, 0, 5, 2, None.__class__)
T("traj must be a Trajectories", proto.run_sums, None, 0, [[0]], 2)
V(r"arm must lie in \[0, 4\]", proto.run_sums, TRAJ, -1, np.zeros((3, 1), int), 2)
V("start must be >= 0", proto.run_sums, TRAJ, 0, -np.ones((3, 1), int), 2)
V(r"start must have shape \(R, ...\) with R = 3", proto.run_sums, TRAJ, 0, np.zeros((2, 1), int), 2)
T("length must be an integer", proto.run_sums, TRAJ, 0, np.zeros((3, 1), int), 2.5)
V("n_runs must be >= 1", paper_a.ProtocolA, n_runs=0)
T("n must be an integer", paper_a.ProtocolA, n=3000.0)
V(r"mixing_eta must lie in \[0, 1\]", paper_a.ProtocolA, mixing_eta=1.5)
T("mixing_eta must be a real number", paper_a.ProtocolA, mixing_eta="0.5")
V(r"easy_arm must lie in \[0, 4\]", paper_a.ProtocolA, easy_arm=5)
V("gamma must be finite and > 0", paper_a.ProtocolA, gamma=0.0)
V("means must lie in", paper_a.ProtocolA, means=(1.5, 0.5))
V(r"table2_c_star \(C\*\) must be finite and > 1", paper_a.ProtocolA, table2_c_star=1.0)
V(r"table2_k_fraction must lie in \(0, 1\)", paper_a.ProtocolA, table2_k_fraction=1.0)
V("n_trajectories must be >= 1", paper_a.ProtocolA.quick, n_trajectories=0)
T("unexpected keyword argument 'seed'", paper_a.ProtocolA.quick, seed=3)
T("traj must be a Trajectories", paper_a.request_losses, None, 0, [0], 5, STARTS, 0.5, ["Oracle"], RNG, QUICK)
T("protocol must be a ProtocolA", paper_a.request_losses, TRAJ, 0, [0], 5, STARTS, 0.5, ["Oracle"], RNG, {})
V("unknown method 'Magic'", paper_a.request_losses, TRAJ, 0, [0], 5, STARTS, 0.5, ["Magic"], RNG, QUICK)
V("eta must be a number in", paper_a.request_losses, TRAJ, 0, [0], 5, STARTS, 0.5, ["eta=2"], RNG, QUICK)
T("methods must be a sequence", paper_a.request_losses, TRAJ, 0, [0], 5, STARTS, 0.5, "Oracle", RNG, QUICK)
V(
    "starts must hold one array per source arm",
    paper_a.request_losses,
    TRAJ,
    0,
    [0],
    5,
    STARTS * 2,
    0.5,
    ["Oracle"],
    RNG,
    QUICK,
)
V(
    "starts must have shape",
    paper_a.request_losses,
    TRAJ,
    0,
    [0],
    5,
    [np.full((3, 2), 19)],
    0.5,
    ["Oracle"],
    RNG,
    QUICK,
)
V(
    "sources must be distinct",
    paper_a.request_losses,
    TRAJ,
    0,
    [0, 0],
    5,
    STARTS * 2,
    0.5,
    ["Oracle"],
    RNG,
    QUICK,
)
V(
    "gamma must be finite and > 0",
    paper_a.request_losses,
    TRAJ,
    0,
    [0],
    5,
    STARTS,
    -1.0,
    ["Oracle"],
    RNG,
    QUICK,
)
T(
    "rng must be a numpy.random.Generator",
    paper_a.request_losses,
    TRAJ,
    0,
    [0],
    5,
    STARTS,
    0.5,
    ["Oracle"],
    "r",
    QUICK,
)
V(r"prefix must lie in \[0, 1\]", paper_a.evaluate, TRAJ, 3, [0], 5, 0.5, ["Oracle"], RNG, QUICK)
V(r"sources must lie in \[0, 4\]", paper_a.evaluate, TRAJ, 0, [7], 5, 0.5, ["Oracle"], RNG, QUICK)
T("k must be an integer", paper_a.evaluate, TRAJ, 0, [0], 5.5, 0.5, ["Oracle"], RNG, QUICK)
V("unknown method", paper_a.evaluate, TRAJ, 0, [0], 5, 0.5, ["Oracle", "Best"], RNG, QUICK)
T("rng must be a numpy.random.Generator", paper_a.evaluate, TRAJ, 0, [0], 5, 0.5, ["Oracle"], 2.0, QUICK)
V("unknown experiment 'figure9'", paper_a.panels, "figure9", QUICK)
T("experiment must be one of", paper_a.panels, 1, QUICK)
T("protocol must be a ProtocolA", paper_a.panels, "figure1", None)
T("task must be a tuple", paper_a.run_once, ["figure1", QUICK, "Mf", 0, 0])
V("model must be one of", paper_a.run_once, ("figure1", QUICK, "Mz", 0, 0))
V("seed must be >= 0", paper_a.run_once, ("figure1", QUICK, "Mf", 0, -1))
V("has no panel of model 'Mf'", paper_a.run_once, ("table2", QUICK, "Mf", 0, 0))
V("unknown experiment", paper_a.run_experiment, "figure4", QUICK)
T("protocol must be a ProtocolA", paper_a.run_experiment, "figure1", "quick")
V("seed must be >= 0", paper_a.run_experiment, "figure1", QUICK, seed=-1)
T("seed must be an integer", paper_a.run_experiment, "figure1", QUICK, seed=1.0)
V("workers must be >= 1", paper_a.run_experiment, "figure1", QUICK, workers=0)
T("progress must be True or False", paper_a.run_experiment, "figure1", QUICK, progress="no")
T("scale must be a string", paper_a.run_experiment, "figure1", QUICK, scale=1)
T("result must be a dict", plots_a.plot_experiment, [1])
V("missing keys", plots_a.plot_experiment, {"experiment": "figure1"})
V(
    "result\\['panels'\\] must be a non-empty list",
    plots_a.plot_experiment,
    {"experiment": "figure1", "panels": [], "scale": "quick", "seed": 0},
)
T(
    "errorbars must be True or False",
    plots_a.plot_experiment,
    {"experiment": "figure1", "panels": [], "scale": "quick", "seed": 0},
    errorbars=None,
)


# --- bandit_unlearning.privacy.gaussian and audit
from bandit_unlearning.privacy import audit, gaussian as gm  # noqa: E402

T("epsilon must be a real number", gm.check_epsilon, "0.5")
T("epsilon must be a real number", gm.check_epsilon, True)
V("epsilon must be a finite number > 0", gm.check_epsilon, 0.0)
V("epsilon must be a finite number > 0", gm.check_epsilon, NAN)
T("delta must be a real number", gm.check_delta, "0.1")
V(r"delta must lie in the open interval \(0, 1\)", gm.check_delta, 1.0)
T("sensitivity must be a real number", gm.check_sensitivity, [1.0])
V("sensitivity must be a finite number >= 0", gm.check_sensitivity, -1.0)
V(r"delta must lie in the open interval \(0, 1\)", gm.gaussian_gamma, 0.5, 0.0)
T("epsilon must be a real number", gm.gaussian_gamma, None, 0.1)
V("only proven\\s+for epsilon < 1", gm.classic_gaussian_sigma, 1.0, 2.0, 0.1)
V("sensitivity must be a finite number >= 0", gm.classic_gaussian_sigma, INF, 0.5, 0.1)
T("delta must be a real number", gm.classic_gaussian_sigma, 1.0, 0.5, "0.1")
V("sigma must be finite and >= 0", gm.gaussian_delta, -1.0, 1.0, 0.5)
V("epsilon must be finite and >= 0 in a privacy profile", gm.gaussian_delta, 1.0, 1.0, -0.5)
V("sigma and epsilon must broadcast together", gm.gaussian_delta, [1.0, 2.0], 1.0, [0.1, 0.2, 0.3])
T("sigma must be an array of numbers", gm.gaussian_delta, "1.0", 1.0, 0.5)
T("sensitivity must be a real number", gm.gaussian_delta, 1.0, "1", 0.5)
V("epsilon must be a finite number > 0", gm.analytic_gaussian_sigma, 1.0, -0.5, 0.1)
V(r"delta must lie in the open interval \(0, 1\)", gm.analytic_gaussian_sigma, 1.0, 0.5, 1.5)
T("sensitivity must be a real number", gm.analytic_gaussian_sigma, None, 0.5, 0.1)
V("sigma must be finite and >= 0", gm.gaussian_epsilon, -1.0, 1.0, 0.1)
T("sigma must be a real number", gm.gaussian_epsilon, "1.0", 1.0, 0.1)
V(r"delta must lie in the open interval \(0, 1\)", gm.gaussian_epsilon, 1.0, 1.0, 0.0)
V("p and q must have the same shape", audit.check_distributions, [0.5, 0.5], [1.0])
V("p must sum to 1", audit.check_distributions, [0.5, 0.6], [0.5, 0.5])
V("q must be finite and non-negative", audit.check_distributions, [0.5, 0.5], [1.5, -0.5])
T("p must be an array of numbers", audit.check_distributions, ["a", "b"], [0.5, 0.5])
V("at least one outcome", audit.check_distributions, [], [])
V("epsilon must be >= 0", audit.hockey_stick_delta, [0.5, 0.5], [0.4, 0.6], -1.0)
V("epsilon must be >= 0", audit.hockey_stick_delta, [0.5, 0.5], [0.4, 0.6], NAN)
T("epsilon must be an array of numbers", audit.hockey_stick_delta, [0.5, 0.5], [0.4, 0.6], "1")
V(
    "epsilon \\(shape \\(3,\\)\\) must broadcast",
    audit.hockey_stick_delta,
    [[0.5, 0.5]] * 2,
    [[0.4, 0.6]] * 2,
    [0.1, 0.2, 0.3],
)
V("one pair of 1-D distributions", audit.hockey_stick_epsilon, [[0.5, 0.5]], [[0.4, 0.6]], 0.1)
V(r"delta must lie in the open interval \(0, 1\)", audit.hockey_stick_epsilon, [0.5, 0.5], [0.4, 0.6], 0.0)
for f in (audit.clopper_pearson_lower, audit.clopper_pearson_upper):
    V("need 0 <= successes <= trials", f, 11, 10, 0.05)
    V("need 0 <= successes <= trials", f, 0, 0, 0.05)
    V("successes must hold whole numbers", f, 2.5, 10, 0.05)
    V(r"alpha must lie in \(0, 1\)", f, 2, 10, 1.5)
    T("alpha must be a real number", f, 2, 10, "0.05")
    T("not booleans", f, True, 10, 0.05)
    T("trials must be an array of numbers", f, 2, "10", 0.05)
V("successes and trials must broadcast together", audit.clopper_pearson_lower, [1, 2], [10, 10, 10], 0.05)
T("threshold must be a real number", audit.ThresholdEvent, "0.5")
V("threshold must be a number, got nan", audit.ThresholdEvent, NAN)
T("above must be True or False", audit.ThresholdEvent, 0.5, above=1)
T("outcomes must be an array of numbers", audit.ThresholdEvent(0.5), ["a", "b"])
V("thresholds must be numbers \\(no nan\\)", audit.threshold_events, [0.1, NAN])
T("thresholds must be an array of numbers", audit.threshold_events, "0.1")
_AR = dict(
    epsilon_lower=0.1,
    delta=0.01,
    confidence=0.95,
    event=(0,),
    direction="a>b",
    count_a=5,
    count_b=3,
    n_a=10,
    n_b=10,
    p_lower=0.3,
    q_upper=0.5,
    n_hypotheses=4,
)
V(
    "epsilon_lower must be a number and >= 0|epsilon_lower must be",
    audit.AuditResult,
    **(_AR | dict(epsilon_lower=-1.0)),
)
V("direction must be one of", audit.AuditResult, **(_AR | dict(direction="a<b")))
V("counts must not exceed the sample sizes", audit.AuditResult, **(_AR | dict(count_a=11)))
T("n_a must be an integer", audit.AuditResult, **(_AR | dict(n_a=10.0)))
V(r"confidence must lie in \(0, 1\)", audit.AuditResult, **(_AR | dict(confidence=1.0)))
V(r"q_upper must lie in \[0, 1\]", audit.AuditResult, **(_AR | dict(q_upper=1.5)))
V("exceed the limit of 5000000", audit.subset_events, 100_000)
V("exceed the limit of 5000000", audit.subset_events, 30, max_subset_outcomes=30)
T("n_outcomes must be an integer", audit.subset_events, 5.0)
V("n_outcomes must be >= 0", audit.subset_events, -1)
T("max_subset_outcomes must be an integer", audit.subset_events, 5, max_subset_outcomes=None)
V("exceed the limit of 5000000", audit.audit_epsilon, [0, 99_999], [0, 1], 0.01)
V(r"delta must lie in the open interval \(0, 1\)", audit.audit_epsilon, [0, 1], [0, 1], 0.0)
V(r"confidence must lie in \(0, 1\)", audit.audit_epsilon, [0, 1], [0, 1], 0.01, confidence=0.0)
T("confidence must be a real number", audit.audit_epsilon, [0, 1], [0, 1], 0.01, confidence="0.95")
V("outcomes_a and outcomes_b must be non-empty", audit.audit_epsilon, [], [0, 1], 0.01)
V("events=None needs non-negative integer outcomes", audit.audit_epsilon, [0.5, 1], [0, 1], 0.01)
T("events=None needs integer outcomes", audit.audit_epsilon, ["a", "b"], ["a"], 0.01)
V("n_outcomes = 1 but an outcome 1 was observed", audit.audit_epsilon, [0, 1], [0, 1], 0.01, n_outcomes=1)
T("n_outcomes must be an integer", audit.audit_epsilon, [0, 1], [0, 1], 0.01, n_outcomes=2.0)
T("events must be a list of events", audit.audit_epsilon, [0, 1], [0, 1], 0.01, events=3)
T(
    "each event must be a collection of outcomes or a callable",
    audit.audit_epsilon,
    [0, 1],
    [0, 1],
    0.01,
    events=[3],
)
V("the event family is empty", audit.audit_epsilon, [0, 0], [0, 0], 0.01)


# --- bandit_unlearning.privacy.coupling
from bandit_unlearning.privacy import coupling  # noqa: E402

T("sigma must be a real number", coupling.check_sigma, True)
V("sigma must be finite and >= 0", coupling.check_sigma, -1.0)
V("sigma must be finite and >= 0", coupling.tv_gaussians, [0.0], [1.0], NAN)
V("mu1 and mu2 must broadcast together", coupling.tv_gaussians, [[0.0, 1.0]] * 3, [[1.0, 1.0]] * 2, 1.0)
V("mu2 must be finite", coupling.tv_gaussians, [0.0], [INF], 1.0)
V("mu1 must have shape \\(..., d\\)", coupling.tv_gaussians, 0.0, [1.0], 1.0)
T("mu1 must be an array of numbers", coupling.tv_gaussians, ["a"], [1.0], 1.0)
V("sigma must be finite and > 0", coupling.coupling_log_ratio, [0.0], [0.0], [1.0], 0.0)
V(
    "x, mu1 and mu2 must broadcast together",
    coupling.coupling_log_ratio,
    [0.0, 1.0],
    [0.0],
    [1.0, 1.0, 1.0],
    1.0,
)
T("x must be an array of numbers", coupling.coupling_log_ratio, "x", [0.0], [1.0], 1.0)
T("rng must be a numpy.random.Generator", coupling.reflection_coupling, [0.0], [0.0], [1.0], 1.0, "rng")
V(
    "x, mu1 and mu2 must broadcast together",
    coupling.reflection_coupling,
    [[0.0]] * 2,
    [[0.0]] * 3,
    [1.0],
    1.0,
    RNG,
)
V("sigma must be finite and >= 0", coupling.reflection_coupling, [0.0], [0.0], [1.0], -1.0, RNG)
V("x must be finite", coupling.reflection_coupling, [NAN], [0.0], [1.0], 1.0, RNG)

# --- bandit_unlearning.shapes
from bandit_unlearning import shapes  # noqa: E402

V(
    "T and rho must broadcast together, got shapes T \\(2,\\), rho \\(3,\\)",
    shapes.check_broadcast,
    T=[1, 2],
    rho=[1, 2, 3],
)
V("needs at least one named array", shapes.check_broadcast)

# --- bandit_unlearning.exact.tree and light_tree
from bandit_unlearning.exact import light_tree as lt, tree  # noqa: E402


def _tree(cls, n=6, d=3, sigma=1.0):
    t = cls(d, sigma, 4)
    r = np.random.default_rng(7)
    for x in np.random.default_rng(8).normal(size=(n, d)):
        t.append(x, r)
    return t


DENSE, LIGHT = _tree(tree.BinaryTree), _tree(lt.LightTree)
FROZEN_TREE = _tree(lt.LightTree).freeze()
KEY = np.array([1, 2, 3], dtype=np.uint64)
T("level must be an integer", tree.Node, 1.0, 0)
V("index must be >= 0", tree.Node, 0, -1)
T("level must be an integer", tree.Node, True, 0)
V("n_leaves must be >= 0", tree.n_nodes, -1)
T("n_leaves must be an integer", tree.n_nodes, 1.5)
T("node must be a Node \\(level, index\\)", tree.postorder_position, 3)
V("level must be >= 0", tree.postorder_position, (-1, 0))
T("index must be an integer", tree.postorder_position, (0, 0.5))
V("position must be >= 0", tree.node_at, -1)
T("position must be an integer", tree.node_at, "3")
V("t must be >= 1", tree.nodes_completed_at, 0)
T("t must be an integer", tree.nodes_completed_at, 2.0)
V("t must be >= 0", tree.dyadic_decomposition, -3)
T("t must be an integer", tree.dyadic_decomposition, None)
V("t must be >= 0", tree.decomposition_rows, -3)
T("t must be an integer", tree.decomposition_rows, 2.0)
T("node must be a Node \\(level, index\\)", tree.as_node, 3)
V("level must be >= 0", tree.as_node, (-1, 0))
T("BaseTree is the part BinaryTree and LightTree share", tree.BaseTree)
V(r"t must lie in \[1, 4\]", tree.leaf_path, 5, 4)
V("n_leaves must be >= 1", tree.leaf_path, 1, 0)
T("t must be an integer", tree.leaf_path, 1.0, 4)
V("T must be >= 1", tree.path_length, 0)
T("T must be an integer", tree.path_length, 4.0)
V("T must be >= 2 for the paper's calibration", tree.sigma_paper, 0.5, 1.0, 1)
V("rho must be finite and > 0", tree.sigma_paper, 0.0, 1.0, 10)
T("B must be a real number", tree.sigma_paper, 0.5, "1", 10)
V("rho must be < 1 for the exact calibration", tree.sigma_exact, 1.0, 1.0, 10)
T("T must be an integer", tree.sigma_exact, 0.5, 1.0, 10.0)
V("B must be finite and > 0", tree.sigma_exact, 0.5, -1.0, 10)
V("sigma must be finite and > 0", tree.path_tv, 1.0, 0.0, 3)
V("n_nodes must be >= 1", tree.path_tv, 1.0, 1.0, 0)
T("B must be a real number", tree.path_tv, None, 1.0, 3)
V(r"delta must lie in \(0, 1\)", tree.eps_app, 1.0, 10, 3, 1.0)
V("delta must be finite and > 0", tree.eps_app, 1.0, 10, 3, 0.0)
V("d must be >= 1", tree.eps_app, 1.0, 10, 0, 0.1)
V("sigma must be finite and >= 0", tree.eps_app, -1.0, 10, 3, 0.1)
V("threshold must be a number and >= 0", tree.prefix_error_union_bound, -1.0, 1.0, 10, 3)
T("threshold must be a real number", tree.prefix_error_union_bound, "1", 1.0, 10, 3)
V(r"T must lie in \[1, 67108864\]", tree.prefix_error_union_bound, 3.0, 1.0, 10**12, 3)
V("sigma must be finite and > 0", tree.prefix_error_union_bound, 3.0, 0.0, 10, 3)
T("SparseStatistic indices must be integers", tree.SparseStatistic, [0.5], [1.0])
V(
    "SparseStatistic indices and values must be 1-D arrays of the same length",
    tree.SparseStatistic,
    [0, 1],
    [1.0],
)
T("indices must be an array of numbers", tree.SparseStatistic, ["a"], [1.0])
V(r"x must have shape \(3,\)", tree.statistic_dense, np.zeros(4), 3)
V("x must be finite", tree.statistic_dense, [0.0, NAN, 0.0], 3)
V("x: indices must be distinct", tree.statistic_dense, tree.SparseStatistic([0, 0], [1.0, 2.0]), 3)
V(r"x: indices must lie in \[0, 3\)", tree.statistic_dense, tree.SparseStatistic([3], [1.0]), 3)
T("d must be an integer", tree.statistic_dense, np.zeros(3), 3.0)
T("x must be an array of numbers", tree.statistic_dense, "abc", 3)
V(r"x_new must have shape \(3,\)", tree.statistic_sparse, np.zeros(2), 3, "x_new")
V("x must be finite", tree.statistic_sparse, tree.SparseStatistic([1], [NAN]), 3)
V("d must be >= 1", tree.statistic_sparse, np.zeros(3), 0)
T("rng must be a numpy.random.Generator", tree.draw_node_keys, "rng", 2)
V("k must be >= 0", tree.draw_node_keys, RNG, -1)
T("k must be an integer", tree.draw_node_keys, RNG, 1.5)
T("key must hold 3 unsigned 64-bit integers", tree.node_noise, [1.0, 2.0, 3.0], 3, 1.0)
V("key must hold 3 integers in \\[0, 2\\*\\*64\\)", tree.node_noise, [1, 2], 3, 1.0)
V("key must hold 3 integers in \\[0, 2\\*\\*64\\)", tree.node_noise, [1, -2, 3], 3, 1.0)
V("d must be >= 1", tree.node_noise, KEY, 0, 1.0)
V("sigma must be finite and >= 0", tree.node_noise, KEY, 3, -1.0)
T("sigma must be a real number", tree.node_noise, KEY, 3, "1")
V(
    "noisy_S, clean_S and new_clean_S must be 1-D of one length",
    tree.coupling_accepts,
    [1.0],
    [1.0, 2.0],
    [0.0],
    1.0,
    0.5,
)
V(r"u must lie in \[0, 1\]", tree.coupling_accepts, [1.0], [1.0], [0.0], 1.0, 1.5)
V("sigma must be finite and >= 0", tree.coupling_accepts, [1.0], [1.0], [0.0], NAN, 0.5)
T("noisy_S must be an array of numbers", tree.coupling_accepts, None, [1.0], [0.0], 1.0, 0.5)
V("rows must be a non-empty list", tree.fold_rows, [])
V("rows must all have one shape", tree.fold_rows, [np.zeros(3), np.zeros(2)])
T("rows must be an array of numbers", tree.fold_rows, [np.zeros(2), "ab"])
V(r"t must lie in \[1, 4\]", tree.PathCoupling, 5, 4, (), (), None, (), 4)
V(r"restart must lie in \[0, 4\]", tree.PathCoupling, 1, 4, (), (), None, (), 5)
T("n_leaves must be an integer", tree.PathCoupling, 1, 4.0, (), (), None, (), 4)
for cls, obj in ((tree.BinaryTree, DENSE), (lt.LightTree, LIGHT)):
    V("d must be >= 1", cls, 0, 1.0)
    T("d must be an integer", cls, 2.0, 1.0)
    V("sigma must be finite and >= 0", cls, 2, -1.0)
    T("sigma must be a real number", cls, 2, None)
    V("capacity must be >= 1", cls, 2, 1.0, 0)
    V(r"x must have shape \(3,\)", obj.append, np.zeros(4), RNG)
    V("x must be finite", obj.append, [NAN, 0.0, 0.0], RNG)
    T("rng must be a numpy.random.Generator", obj.append, np.zeros(3), 4.2)
    V(r"t must lie in \[0, 6\]", obj.noisy_prefix_sum, 7)
    T("t must be an integer", obj.noisy_prefix_sum, 2.0)
    V(r"t must lie in \[0, 6\]", obj.clean_prefix_sum, -1)
    V(r"t must lie in \[1, 6\]", obj.leaf, 0)
    T("t must be an integer", obj.leaf, "1")
    V("is not complete", obj.clean, tree.Node(3, 0))
    T("node must be a Node", obj.clean, 5)
    V("is not complete", obj.noisy, (3, 0))
    T("node must be a Node", obj.noisy, [0, 0])
    V(r"n_leaves must lie in \[0, 6\]", obj.truncate, 7)
    T("n_leaves must be an integer", obj.truncate, 1.0)
    V(r"t must lie in \[1, 6\]", obj.unlearn_leaf, 7, np.zeros(3), RNG)
    V(r"x_new must have shape \(3,\)", obj.unlearn_leaf, 2, np.zeros(2), RNG)
    T("rng must be a numpy.random.Generator", obj.unlearn_leaf, 2, np.zeros(3), "rng")
V("d must be <= 100000000", lt.LightTree, 2**31, 1.0)
V(r"t must lie in \[1, 6\]", LIGHT.leaf_sparse, 0)
T("t must be an integer", LIGHT.leaf_sparse, None)
V("this tree is frozen", FROZEN_TREE.append, np.zeros(3), RNG)
V("this tree is frozen", FROZEN_TREE.unlearn_leaf, 1, np.zeros(3), RNG)
V("this tree is frozen", FROZEN_TREE.truncate, 1)


# --- bandit_unlearning.exact.learner and bandit
from types import SimpleNamespace  # noqa: E402

from bandit_unlearning.exact import bandit, learner as lr  # noqa: E402

LEARNER = bandit.ucb_bandit_learner(3, 1.0)
USERS = bandit.bandit_users(MEANS, 8, seed=1)
RUN = lr.train(LEARNER, USERS, np.random.default_rng(4))
RUN_DELETED = unlearn(RUN, protocol.DeleteStep(2), rng=np.random.default_rng(5))[0]
RECORD = unlearn(RUN, protocol.DeleteStep(3), rng=np.random.default_rng(5))[1]
USER = lr.replayable_users(1, seed=3)[0]
V("key must be >= 0", lr.ReplayableUser, -1)
T("key must be an integer", lr.ReplayableUser, 1.5)
V("key must be < 2\\*\\*128", lr.ReplayableUser, 2**128)
V("an address has at most 3 integers", USER.generator, 1, 2, 3, 4)
V("address must be >= 0", USER.generator, -1)
T("address must be an integer", USER.generator, 1.0)
V("address integers must be < 2\\*\\*64", USER.generator, 2**64)
T("shape must be an integer", USER.uniforms, (2, "3"))
V("shape must be >= 0", USER.uniforms, -2)
T("address must be an integer", USER.uniforms, 3, "a")
V("seed must be >= 0", lr.replayable_users, 3, seed=-1)
T("n must be an integer", lr.replayable_users, 3.0, seed=1)
V("start must be >= 0", lr.replayable_users, 3, seed=1, start=-2)
V("d must be >= 1", lr.PrefixSumLearner, 0, 1.0, len, len, None)
V("sigma must be finite and >= 0", lr.PrefixSumLearner, 2, -1.0, len, len, None)
T("oracle must be callable", lr.PrefixSumLearner, 2, 1.0, "oracle", len, None)
V("B must be finite and > 0", lr.PrefixSumLearner, 2, 1.0, len, len, None, B=0.0)
T("tree_factory must be callable", lr.PrefixSumLearner, 2, 1.0, len, len, None, tree_factory=3)
T("check_user must be callable", lr.PrefixSumLearner, 2, 1.0, len, len, None, check_user="yes")
T("name must be a str", lr.PrefixSumLearner, 2, 1.0, len, len, None, name=3)
V("t must be >= 1", LEARNER.statistics, USERS[0], 0, np.zeros(3))
T("t must be an integer", LEARNER.statistics, USERS[0], 1.5, np.zeros(3))
T("expected a BanditUser", LEARNER.statistics, "user", 1, np.zeros(3))
T(
    "the oracle's statistics at step 1 must be an array of numbers",
    lr.PrefixSumLearner(2, 1.0, lambda u, t, w: ["a", "b"], lambda u, t, w: w, 0).statistics,
    1,
    1,
    0,
)
V(
    r"statistics at step 1 must have shape \(6,\)",
    lr.PrefixSumLearner(6, 1.0, lambda u, t, w: np.zeros(5), lambda u, t, w: w, 0).statistics,
    1,
    1,
    0,
)
T("learner must be a PrefixSumLearner", lr.Run, "learner", (), (None,), LIGHT)
V("T \\+ 1 models", lr.Run, LEARNER, USERS, (None,), LIGHT)
T("users must be a tuple", lr.Run, LEARNER, list(USERS), (None,) * 9, LIGHT)
V(r"deleted step must lie in \[1, 8\]", lr.Run, LEARNER, USERS, (None,) * 9, LIGHT, frozenset({9}))
T("deleted must be a frozenset", lr.Run, LEARNER, USERS, (None,) * 9, LIGHT, {1})
V(r"t must lie in \[1, 9\]", RUN.model, 10)
T("t must be an integer", RUN.model, 1.0)
V(r"t must lie in \[0, 8\]", RUN.noisy_prefix_sum, 9)
_REC = dict(RECORD.__dict__)
V(r"t must lie in \[1, 8\]", lr.UnlearnRecord, **(_REC | dict(t=9)))
V("T must be >= 1", lr.UnlearnRecord, **(_REC | dict(T=0)))
V(r"restart must lie in \[0, 8\]", lr.UnlearnRecord, **(_REC | dict(restart=-1)))
T("learner must be a PrefixSumLearner", lr.train, "learner", USERS, RNG)
T("users must be a sequence", lr.train, LEARNER, iter(USERS), RNG)
T("users must be BanditUsers with 3 rewards", lr.train, LEARNER, USERS[:3] + ("bad",), RNG)
T(
    "users must be BanditUsers with 3 rewards",
    lr.train,
    LEARNER,
    USERS[:3] + (bandit.BanditUser([1.0, 0.0]),),
    RNG,
)
V("T = len\\(users\\) must be >= 1", lr.train, LEARNER, [], RNG)
V("capacity must be >= 1", lr.train, LEARNER, USERS, RNG, 0)
T("rng must be a numpy.random.Generator", lr.train, LEARNER, USERS, "rng")
T("run must be a Run", lr.extend, "run", USERS, RNG)
T("users must be BanditUsers with 3 rewards", lr.extend, RUN, USERS[:2] + (7,), RNG)
T("users must be a sequence", lr.extend, RUN, 3, RNG)
T("rng must be a numpy.random.Generator", lr.extend, RUN, USERS[:2], 1.5)
T(
    "no unlearning of a DeleteStep request on a LightTree state",
    unlearn,
    LIGHT,
    protocol.DeleteStep(1),
    rng=RNG,
)
V(r"t must lie in \[1, 8\]", unlearn, RUN, protocol.DeleteStep(9), rng=RNG)
V(r"t must lie in \[1, 8\]", unlearn, RUN, protocol.DeleteStep(0), rng=RNG)
V("step 2 was already deleted", unlearn, RUN_DELETED, protocol.DeleteStep(2), rng=RNG)
T(
    "users must be BanditUsers with 3 rewards",
    unlearn,
    RUN,
    protocol.DeleteStep(3),
    options=lr.ExactOptions(dummy=bandit.BanditUser(np.ones(4))),
    rng=RNG,
)
T("rng must be a numpy.random.Generator", unlearn, RUN, protocol.DeleteStep(3), rng="rng")
T("options must be an ExactOptions", unlearn, RUN, protocol.DeleteStep(3), options={"dummy": None}, rng=RNG)
T("options must be an ExactOptions", lr.exact_options, "defaults")
T("diagnostics must be a bool", lr.ExactOptions, diagnostics=1)
T("retrain_if_cheaper must be a bool", lr.ExactOptions, retrain_if_cheaper="yes")
V("node_cost must be a finite number > 0 or None", lr.ExactOptions, node_cost=0.0)
V(r"tv must lie in \[0, 1\]", lr.path_retrain_probability, 1.5, RECORD.path)
T("path must be a tuple or list", lr.path_retrain_probability, 0.5, 3)
V(r"tv must lie in \[0, 1\]", lr.path_expected_steps, -0.1, RECORD.path, 8)
T("T must be an integer", lr.path_expected_steps, 0.5, RECORD.path, 8.0)
V("shift_norm must be finite and >= 0", lr.UnlearnDiagnostics, -1.0, 0.5, 0.5, 1.0)
V(r"tv_per_node must lie in \[0, 1\]", lr.UnlearnDiagnostics, 1.0, 1.5, 0.5, 1.0)
T("retrain_probability must be a real number", lr.UnlearnDiagnostics, 1.0, 0.5, "half", 1.0)
T(
    "same_model cannot compare models",
    lr.same_model,
    SimpleNamespace(w=np.zeros(2)),
    SimpleNamespace(w=np.zeros(2)),
)
T("no check exists for a LightTree state", verify, LIGHT)
V("rewards must be a non-empty 1-D array in \\[0, 1\\]", bandit.BanditUser, [0.5, 1.5])
T("rewards must be an array of numbers", bandit.BanditUser, ["a"])
V("means must be a non-empty 1-D array in \\[0, 1\\]", bandit.bandit_users, [0.5, 2.0], 3, seed=1)
T("means must be an array of numbers", bandit.bandit_users, "0.5", 3, seed=1)
T("n must be an integer", bandit.bandit_users, MEANS, 3.0, seed=1)
V("seed must be >= 0", bandit.bandit_users, MEANS, 3, seed=-1)
V("model must be a non-empty 1-D vector of UCB indices", bandit.chosen_arm, [])
V("model must be a non-empty 1-D vector of UCB indices", bandit.chosen_arm, [0.1, NAN])
T("model must be an array of numbers", bandit.chosen_arm, "w")
V(r"arm must lie in \[0, 1\]", bandit.bandit_statistics, -1, 0.5, 2)
V(r"reward must lie in \[0, 1\]", bandit.bandit_statistics, 0, 5.0, 2)
T("arm must be an integer", bandit.bandit_statistics, 0.0, 0.5, 2)
V("n_arms must be >= 1", bandit.bandit_statistics, 0, 0.5, 0)
T("reward must be a real number", bandit.bandit_statistics, 0, "1", 2)
V(r"u_tilde must have shape \(6,\)", bandit.ucb_indices, np.zeros(5), 3, 3)
V("u_tilde must be finite", bandit.ucb_indices, np.full(6, NAN), 3, 3)
V("explore_below must be finite and > 0", bandit.ucb_indices, np.zeros(6), 3, 3, explore_below=0.0)
T("t must be an integer", bandit.ucb_indices, np.zeros(6), 3.0, 3)
V("explore_below must be finite and > 0", bandit.ucb_bandit_learner, 3, 1.0, explore_below=0)
V("explore_below must be finite and > 0", bandit.ucb_bandit_learner, 3, 1.0, explore_below=INF)
T("explore_below must be a real number", bandit.ucb_bandit_learner, 3, 1.0, explore_below="1")
V("n_arms must be >= 1", bandit.ucb_bandit_learner, 0, 1.0)
V("sigma must be finite and >= 0", bandit.ucb_bandit_learner, 3, -1.0)
T("tree_factory must be callable", bandit.ucb_bandit_learner, 3, 1.0, tree_factory=None)
T("run must be a Run", bandit.actions, [1, 2])
T("run must be a Run", bandit.pseudo_regret, None, MEANS)
V(r"means must have shape \(3,\)", bandit.pseudo_regret, RUN, [0.5, 0.4])
V(r"means must lie in \[0, 1\]", bandit.pseudo_regret, RUN, [0.5, 0.4, 1.5])

# --- bandit_unlearning.experiments.exactness and unlearning_cost, bandit_unlearning.testing.broken
from bandit_unlearning.experiments import exactness as ex, unlearning_cost as uc  # noqa: E402
from bandit_unlearning.testing import broken  # noqa: E402

SAMPLE = [{"a": 1.0, "b": 2.0}] * 4
BROKEN = broken.with_tree_class(RUN, broken.NoRetrain)
T("sample_u must be a list of dicts", ex.battery, "runs", SAMPLE)
V("both samples must hold at least one run", ex.battery, [], SAMPLE)
V("the same statistics", ex.battery, SAMPLE, [{"a": 1.0}] * 3)
T("categorical must be a collection", ex.battery, SAMPLE, SAMPLE, categorical=3)
V("min_cell must be >= 1", ex.battery, SAMPLE, SAMPLE, min_cell=0)
for cls in (broken.BrokenTree, broken.AlwaysAccept, broken.NoReflection, broken.NoRetrain):
    V("d must be >= 1", cls, 0, 1.0)
V(r"t must lie in \[1, 8\]", BROKEN.tree.copy().unlearn_leaf, 9, np.zeros(6), RNG)
V(r"x_new must have shape \(6,\)", BROKEN.tree.copy().unlearn_leaf, 2, np.zeros(5), RNG)
T("rng must be a numpy.random.Generator", BROKEN.tree.copy().unlearn_leaf, 2, np.zeros(6), "rng")
V("this tree is frozen", BROKEN.tree.unlearn_leaf, 2, np.zeros(6), RNG)
T("run must be a Run", broken.with_tree_class, LIGHT, broken.NoRetrain)
T("cls must be a BinaryTree subclass", broken.with_tree_class, RUN, lt.LightTree)
V("size must be at most the sample size", ex.power_subbatches, SAMPLE, SAMPLE, 5, 0.05)
V("size must be >= 1", ex.power_subbatches, SAMPLE, SAMPLE, 0, 0.05)
V(r"level must lie in \(0, 1\)", ex.power_subbatches, SAMPLE, SAMPLE, 2, 1.5)
T("sample_d must be a list of dicts", ex.power_subbatches, SAMPLE, None, 2, 0.05)
SAMPLES = {1: {"U": SAMPLE, "D": SAMPLE}}
T("samples must be a dict", ex.power_table, [SAMPLE], ["U"], [1], [2], 0.05)
V("sizes must be >= 1", ex.power_table, SAMPLES, ["U"], [1], [0], 0.05)
V(r"level must lie in \(0, 1\)", ex.power_table, SAMPLES, ["U"], [1], [2], 1.5)
T("table must be a dict", ex.format_power_table, [], [2])
V(r"tv must lie in \[0, 1\]", uc.retrain_probability_uniform, 16, 1.5)
T("tv must be a real number", uc.retrain_probability_uniform, 16, "0.5")
V(r"T must lie in \[1, 1048576\]", uc.retrain_probability_uniform, 10**9, 0.5)
V(r"T must lie in \[1, 1048576\]", uc.expected_cost_uniform, 0, 0.5)
V(r"tv must lie in \[0, 1\]", uc.expected_cost_uniform, 16, NAN)
T("run must be a Run", uc.conditional_retraining, "run", 1)
V(r"t must lie in \[1, 8\]", uc.conditional_retraining, RUN, 9)
T(
    "users must be BanditUsers with 3 rewards|expected a BanditUser",
    uc.conditional_retraining,
    RUN,
    2,
    dummy="x",
)
T("learner must be a PrefixSumLearner", uc.measure_unlearning, "learner", USERS, 1, 1, RNG)
V("n_runs must be >= 1", uc.measure_unlearning, LEARNER, USERS, 0, 1, RNG)
V("requests_per_run must be >= 1", uc.measure_unlearning, LEARNER, USERS, 1, 0, RNG)
T("users must be BanditUsers with 3 rewards", uc.measure_unlearning, LEARNER, USERS + ("x",), 1, 1, RNG)
T("rng must be a numpy.random.Generator", uc.measure_unlearning, LEARNER, USERS, 1, 1, "rng")
T("cost_of must be callable", uc.measure_unlearning, LEARNER, USERS, 1, 1, RNG, cost_of="x")
T(
    "cost_of must return a dict with keys",
    uc.measure_unlearning,
    LEARNER,
    USERS,
    1,
    1,
    0,
    cost_of=lambda run, t, rng: {},
)
T("no unlearning of a DeleteStep request on a str state", uc.request_cost, "run", 1, RNG)
V(r"t must lie in \[1, 8\]", uc.request_cost, RUN, 9, RNG)
T("measured must be a dict", uc.plot_unlearning_cost, [], lambda r, T: 1.0, 1.0, [0.1])
V("measured must map \\(rho, T\\)", uc.plot_unlearning_cost, {0.1: {}}, lambda r, T: 1.0, 1.0, [0.1])
T(
    "sigma_of_rho must be callable",
    uc.plot_unlearning_cost,
    {(0.1, 8): {"cost": np.zeros(2)}},
    1.0,
    1.0,
    [0.1],
)
V(
    "B must be finite and > 0",
    uc.plot_unlearning_cost,
    {(0.1, 8): {"cost": np.zeros(2)}},
    lambda r, T: 1.0,
    0.0,
    [0.1],
)
V(
    "rho_grid must be > 0",
    uc.plot_unlearning_cost,
    {(0.1, 8): {"cost": np.zeros(2)}},
    lambda r, T: 1.0,
    1.0,
    [0.0],
)
T(
    "ax must be an Axes",
    uc.plot_unlearning_cost,
    {(0.1, 8): {"cost": np.zeros(2)}},
    lambda r, T: 1.0,
    1.0,
    [0.1],
    ax=1,
)


# --- bandit_unlearning.rl.mdp, envs, users, gym
from bandit_unlearning.rl import envs, gym as rlgym, mdp as rmdp, users as rusers  # noqa: E402

RIVER = envs.riverswim(horizon=4, n_states=3)
PI = rmdp.value_iteration(RIVER).policy
P2 = np.full((2, 2, 2), 0.5)
TRAJ1 = rusers.rollout(RIVER, PI, 0)
V("transitions rows must sum to 1", rmdp.check_distribution_rows, np.full((2, 2), 0.4), "transitions")
V("initial must be finite", rmdp.check_distribution_rows, [NAN, 1.0], "initial")
V("p must be non-negative", rmdp.check_distribution_rows, [1.5, -0.5], "p")
T("p must be an array of numbers", rmdp.check_distribution_rows, "0.5", "p")
T("name must be a str", rmdp.check_distribution_rows, [1.0], 3)
V("p must have shape \\(..., n\\)", rmdp.check_distribution_rows, 1.0, "p")
V("transitions rows must sum to 1", rmdp.TabularMDP, np.full((2, 2, 2), 0.4), np.zeros((2, 2)), [1.0, 0.0], 3)
V(r"rewards must be finite and lie in \[0, 1\]", rmdp.TabularMDP, P2, np.full((2, 2), 1.5), [1.0, 0.0], 3)
V("horizon H must be >= 1", rmdp.TabularMDP, P2, np.zeros((2, 2)), [1.0, 0.0], 0)
T("horizon H must be an integer", rmdp.TabularMDP, P2, np.zeros((2, 2)), [1.0, 0.0], 2.5)
T("transitions must be an array of numbers", rmdp.TabularMDP, "P", np.zeros((2, 2)), [1.0, 0.0], 3)
V(r"initial must have shape \(2,\)", rmdp.TabularMDP, P2, np.zeros((2, 2)), [1.0], 3)
T("name must be a str", rmdp.TabularMDP, P2, np.zeros((2, 2)), [1.0, 0.0], 3, name=None)
V(
    "transitions has 4 steps but horizon H = 3",
    rmdp.TabularMDP,
    np.full((4, 2, 2, 2), 0.5),
    np.zeros((2, 2)),
    [1.0, 0.0],
    3,
)
V("a plan needs Q \\[H, S, A\\]", rmdp.Plan, np.zeros((2, 3, 2)), np.zeros((2, 3)), np.zeros((2, 3), int))
T("policy must hold integer actions", rmdp.Plan, np.zeros((2, 3, 2)), np.zeros((3, 3)), np.zeros((2, 3)))
T("Q must be an array of numbers", rmdp.Plan, None, np.zeros((3, 3)), np.zeros((2, 3), int))
T("mdp must be a TabularMDP", rmdp.value_iteration, "mdp")
T("mdp must be a TabularMDP", rmdp.check_policy, None, PI)
V("policy must have shape \\[4, 3\\]", rmdp.check_policy, RIVER, PI[:2])
V("policy entries must be actions in \\[0, 2\\)", rmdp.check_policy, RIVER, PI + 2)
T("policy entries must be integer action indices, not booleans", rmdp.check_policy, RIVER, PI > 0)
V("policy entries must be integer action indices", rmdp.check_policy, RIVER, PI + 0.5)
T("batch must be True or False", rmdp.check_policy, RIVER, PI, batch=1)
V("policy must have shape \\[4, 3\\]", rmdp.evaluate_policy, RIVER, PI.T)
T("mdp must be a TabularMDP", rmdp.evaluate_policy, PI, PI)
T("mdp must be a TabularMDP", rmdp.optimal_value, None)
V("policy must have shape \\[B, 4, 3\\]", rmdp.policy_values, RIVER, PI)
V("chunk must be >= 1", rmdp.policy_values, RIVER, PI[None], chunk=0)
T("chunk must be an integer", rmdp.policy_values, RIVER, PI[None], chunk=2.0)
V("policy must have shape \\[B, 4, 3\\]", rmdp.regret, RIVER, PI)
T("policy must be an array of numbers", rmdp.regret, RIVER, [["a"]])
V("n_states must be >= 2", envs.riverswim, 10, 1)
T("n_states must be an integer", envs.riverswim, 10, 6.0)
V(r"initial_state must lie in \[0, 5\]", envs.riverswim, 10, 6, 6)
T("initial_state must be an integer", envs.riverswim, 10, 6, True)
V("horizon must be >= 1", envs.riverswim, 0)
T("layout must be a sequence of strings", envs.gridworld_cells, 5)
T("layout must be a sequence of strings", envs.gridworld_cells, "S.G")
V("layout needs exactly one 'S' and one 'G'", envs.gridworld_cells, ["S..", "..."])
V("layout may only contain", envs.gridworld_cells, ["S.x", "..G"])
V("non-empty list of equal-length strings", envs.gridworld_cells, ["S..", ".G"])
V(r"slip must lie in \[0, 1\]", envs.gridworld, 10, 1.5)
T("slip must be a real number", envs.gridworld, 10, "0.1")
T("horizon must be an integer", envs.gridworld, 10.0)
V(r"branching must lie in \[1, 5\]", envs.garnet, 5, 2, 6, 3, RNG)
V("horizon must be >= 1", envs.garnet, 5, 2, 2, 0, RNG)
T("horizon must be an integer", envs.garnet, 5, 2, 2, 3.0, RNG)
T("rng must be a numpy.random.Generator", envs.garnet, 5, 2, 2, 3, "rng")
T("homogeneous must be True or False", envs.garnet, 5, 2, 2, 3, RNG, homogeneous="yes")
V("n_actions must be >= 1", envs.garnet, 5, 0, 2, 3, RNG)
V("gap must lie in \\[0, 1/2\\]", envs.independent_bandits, 2, 2, 3, 0.7)
V("horizon must be >= 2", envs.independent_bandits, 2, 2, 1, 0.1)
V("best_actions must be 2 actions in \\[0, 2\\)", envs.independent_bandits, 2, 2, 3, 0.1, best_actions=[0, 2])
T(
    "best_actions must hold integers, not booleans",
    envs.independent_bandits,
    2,
    2,
    3,
    0.1,
    best_actions=[True, False],
)
T("rng must be a numpy.random.Generator", envs.independent_bandits, 2, 2, 3, 0.1, rng="rng")
T("gap must be a real number", envs.independent_bandits, 2, 2, 3, "0.1")
V("n_bandits must be >= 1", envs.independent_bandits, 0, 2, 3, 0.1)
V("seed must lie in", rusers.splitmix64, -1, [0, 1])
T("index must hold integers", rusers.splitmix64, 0, [0.5])
V("index must be >= 0", rusers.splitmix64, 0, [-1])
V("reward_noise must be one of", rusers.check_reward_noise, "gaussian")
T("reward_noise must be one of", rusers.check_reward_noise, None)
T("seed must be an integer", rusers.splitmix64, 0.0, [1])
T("seed must be an integer", rusers.check_seed, True)
V("seed must lie in \\[0, 18446744073709551615\\]", rusers.check_seed, 2**64)
T("mdp must be a TabularMDP", rusers.max_users, "mdp")
T("users must be integer keys", rusers.check_users, RIVER, [0.5])
T("users must be integer keys", rusers.check_users, RIVER, [True])
V("user keys must lie in", rusers.check_users, RIVER, [-1])
T("mdp must be a TabularMDP", rusers.check_users, None, [1])
V(r"stream must lie in \[0, 3\)", rusers.user_uniforms, RIVER, 0, 3, 0, 0, 0)
V(r"h must lie in \[0, 4\)", rusers.user_uniforms, RIVER, 0, 0, 4, 0, 0)
V(r"s must lie in \[0, 3\)", rusers.user_uniforms, RIVER, 0, 0, 0, -1, 0)
V(r"a must lie in \[0, 2\)", rusers.user_uniforms, RIVER, 0, 0, 0, 0, 2)
T("stream must hold integers", rusers.user_uniforms, RIVER, 0, 0.0, 0, 0, 0)
V(
    "users, stream, h, s and a must broadcast together",
    rusers.user_uniforms,
    RIVER,
    [0, 1],
    [0, 1, 2],
    0,
    0,
    0,
)
V("seed must lie in", rusers.user_uniforms, RIVER, 0, 0, 0, 0, 0, seed=-1)
V(
    "a trajectory needs states \\[..., H\\+1\\]",
    rusers.Trajectory,
    np.zeros(3, int),
    np.zeros(3, int),
    np.zeros(3),
)
T("states must hold integers", rusers.Trajectory, np.zeros(4), np.zeros(3, int), np.zeros(3))
T("rewards must be an array of numbers", rusers.Trajectory, np.zeros(4, int), np.zeros(3, int), "r")
T("mdp must be a TabularMDP", rusers.cdf_tables, None)
T("integer keys", rusers.rollout, RIVER, PI, 1.5)
V("user keys must lie in", rusers.rollout, RIVER, PI, -1)
V("reward_noise must be one of", rusers.rollout, RIVER, PI, 0, reward_noise="gaussian")
T("reward_noise must be one of", rusers.rollout, RIVER, PI, 0, reward_noise=None)
V("policy must have shape", rusers.rollout, RIVER, PI[:1], 0)
V("users must be 1-D", rusers.rollout_batch, RIVER, PI, [[0, 1]])
V("2 policies for 3 users", rusers.rollout_batch, RIVER, np.stack([PI, PI]), [0, 1, 2])
V("seed must lie in", rusers.rollout_batch, RIVER, PI, [0, 1], seed=2**64)
T("mdp must be a TabularMDP", rlgym.ImportedMDP, "mdp", 0.0, 1.0, None)
V("reward_low and reward_high must be finite with low <= high", rlgym.ImportedMDP, RIVER, 1.0, 0.0, None)
V(r"terminal_state must lie in \[0, 2\]", rlgym.ImportedMDP, RIVER, 0.0, 1.0, 3)
T("reward_low must be a real number", rlgym.ImportedMDP, RIVER, "0", 1.0, None)
T("value must be an array of numbers", rlgym.ImportedMDP(RIVER, 0.0, 1.0, None).raw_value, "v")
T("regret must be an array of numbers", rlgym.ImportedMDP(RIVER, 0.0, 1.0, None).raw_regret, "r")
T("env must be a Gymnasium environment", rlgym.from_gymnasium, "FrozenLake-v1", 10)
V("horizon must be >= 1", rlgym.from_gymnasium, None, 0)
T("name must be a str", rlgym.from_gymnasium, None, 10, name=3)
T("mdp must be a TabularMDP", rlgym.to_gymnasium, "mdp")
V("seed must lie in", rlgym.to_gymnasium, RIVER, seed=-1)
V("reward_noise must be one of", rlgym.to_gymnasium, RIVER, reward_noise="gauss")


# --- bandit_unlearning.rl.ucbvi, stable; experiments.rl_regret, rl_stable
from bandit_unlearning.experiments import rl_regret, rl_stable  # noqa: E402
from bandit_unlearning.rl import stable, ucbvi  # noqa: E402

LAYOUT = ucbvi.StatsLayout.of(RIVER)
CONFIG = ucbvi.UCBVIConfig.of(RIVER, 10)
STABLE = stable.stable_ucbvi(RIVER, 8, 1.0)
SRUN = lr.train(STABLE, stable.episode_users(8), np.random.default_rng(9))
ORACLE = STABLE.oracle
UPDATE = STABLE.update
OUT = (np.empty((4, 3), dtype=np.int64), np.empty((4, 6)), np.zeros((5, 3)))
BASE, PK = np.zeros((4, 6)), np.full((4, 6, 3), 1 / 3)
CURVE = dict(
    mdp="m", T=8, rho=1.0, bonus_scale=1.0, t=np.arange(1, 3), regret=np.ones(2), slope=0.5, sigma=1.0
)
V("S must be >= 1", ucbvi.StatsLayout, 0, 2, 3)
T("A must be an integer", ucbvi.StatsLayout, 2, 2.0, 3)
T("mdp must be a TabularMDP", ucbvi.StatsLayout.of, "mdp")
V("statistics must have last dimension d = 120", LAYOUT.unpack, np.zeros(121))
T("u must be an array of numbers", LAYOUT.unpack, "u")
V(
    r"N, R must have shape \[..., 4, 3, 2\]",
    LAYOUT.pack,
    np.zeros((3, 2, 2)),
    np.zeros((3, 2, 2)),
    np.zeros((3, 2, 2, 3)),
)
T("Nsas must be an array of numbers", LAYOUT.pack, np.zeros((4, 3, 2)), np.zeros((4, 3, 2)), None)
T("traj must be a Trajectory", LAYOUT.sparse, (TRAJ1.states, TRAJ1.actions, TRAJ1.rewards))
V(
    "a trajectory needs H \\+ 1 = 5 states",
    LAYOUT.sparse,
    rusers.Trajectory(np.zeros(3, int), np.zeros(2, int), np.zeros(2)),
)
V(
    r"states must lie in \[0, 3\)",
    LAYOUT.sparse,
    rusers.Trajectory(np.full(5, 3), np.zeros(4, int), np.zeros(4)),
)
V(r"indices must be integers in \[0, 120\)", LAYOUT.densify, [120], [1.0])
T("indices must be integers in", LAYOUT.densify, [True], [1.0])
V("indices and values must have the same shape", LAYOUT.densify, [1, 2], [1.0])
V("values must be finite", LAYOUT.densify, [1], [NAN])
V(r"indices must be integers in \[0, 120\)", LAYOUT.accumulate, [120, 1], [1.0, 1.0])
V(r"indices must be integers in \[0, 120\)", LAYOUT.accumulate, [-1], [1.0])
T("indices must be integers in", LAYOUT.accumulate, [0.5], [1.0])
V("indices and values must have the same shape", LAYOUT.accumulate, [1], [1.0, 2.0])
T("traj must be a Trajectory", LAYOUT.dense, None)
V("H must be >= 1", ucbvi.statistics_sensitivity, 0)
V("dummy must be one of", ucbvi.statistics_sensitivity, 3, "other")
T("dummy must be one of", ucbvi.statistics_sensitivity, 3, None)
V("policy must have shape", ucbvi.episode_statistics, RIVER, PI[:2], 0)
T("users must be", ucbvi.episode_statistics, RIVER, PI, "user")
V("reward_noise must be one of", ucbvi.episode_statistics, RIVER, PI, 0, reward_noise="x")
T("T must be an integer", ucbvi.UCBVIConfig, 2, 2, 3, 2.0)
V(r"delta must lie in \(0, 1\)", ucbvi.UCBVIConfig, 2, 2, 3, 10, delta=1.0)
V("sigma must be finite and >= 0", ucbvi.UCBVIConfig, 2, 2, 3, 10, sigma=NAN)
T("sigma must be a real number", ucbvi.UCBVIConfig, 2, 2, 3, 10, sigma="1")
V("bonus_scale must be finite and >= 0", ucbvi.UCBVIConfig, 2, 2, 3, 10, bonus_scale=-0.1)
T("stabilize must be True or False", ucbvi.UCBVIConfig, 2, 2, 3, 10, stabilize=1)
T("mdp must be a TabularMDP", ucbvi.UCBVIConfig.of, None, 10)
V("T must be >= 1", ucbvi.UCBVIConfig.of, RIVER, 0)
V(r"delta must lie in \(0, 1\]", CONFIG.eps_app, 0.0)
T("delta must be a real number", CONFIG.eps_app, "0.1")
T("n must be an array of numbers", CONFIG.bonus, "3")
V("bonus_kind must be one of", ucbvi.UCBVIConfig, 2, 2, 3, 10, bonus_kind="ucb")
T("bonus_kind must be one of", ucbvi.UCBVIConfig, 2, 2, 3, 10, bonus_kind=None)
T("pooled must be True or False", ucbvi.UCBVIConfig, 2, 2, 3, 10, pooled=1)
BERNSTEIN = ucbvi.UCBVIConfig.of(RIVER, 10, bonus_kind="bernstein")
V(r"h must lie in \[0, 3\]", CONFIG.step_bonus, 4, [1.0, 2.0])
T("h must be an integer", CONFIG.step_bonus, 1.0, [1.0, 2.0])
T("n must be an array of numbers", CONFIG.step_bonus, 0, "3")
V("n must be a number", CONFIG.step_bonus, 0, [NAN])
V("n must be > eps_unexplored", CONFIG.step_bonus, 0, [0.0, 2.0])
V("next_variance is needed", BERNSTEIN.step_bonus, 0, [1.0, 2.0])
V(r"next_variance must have shape \(2,\)", BERNSTEIN.step_bonus, 0, [1.0, 2.0], [0.5])
V("next_variance must be >= 0", BERNSTEIN.step_bonus, 0, [1.0, 2.0], [0.5, -0.1])
T("next_variance must be an array of numbers", BERNSTEIN.step_bonus, 0, [1.0, 2.0], "v")
V(
    "an optimistic plan needs policy",
    ucbvi.OptimisticPlan,
    np.zeros((4, 3), int),
    np.zeros((4, 3, 2)),
    np.zeros((4, 3)),
    np.zeros((4, 3, 2), bool),
)
T(
    "explored must be an array of numbers",
    ucbvi.OptimisticPlan,
    np.zeros((4, 3), int),
    np.zeros((4, 3, 2)),
    np.zeros((5, 3)),
    "e",
)
V(r"base must have shape \[H, S\*A\]", ucbvi.optimistic_value_iteration, np.zeros((4, 5)), PK, 3, 2)
V("base must have shape", ucbvi.optimistic_value_iteration, np.full((4, 6), NAN), PK, 3, 2)
V(r"P must have shape \(4, 6, 3\)", ucbvi.optimistic_value_iteration, BASE, PK[:, :, :2], 3, 2)
T("S must be an integer", ucbvi.optimistic_value_iteration, BASE, PK, 3.0, 2)
V("out must be \\(policy \\[H, S\\] int64", ucbvi.optimistic_value_iteration, BASE, PK, 3, 2, OUT[:2])
V(
    "out must be \\(policy \\[H, S\\] int64",
    ucbvi.optimistic_value_iteration,
    BASE,
    PK,
    3,
    2,
    (OUT[0], OUT[1], np.zeros((4, 3))),
)
T(
    "out must hold an int64 policy",
    ucbvi.optimistic_value_iteration,
    BASE,
    PK,
    3,
    2,
    (OUT[0].astype(np.int32), OUT[1], OUT[2]),
)
T("config must be a UCBVIConfig", ucbvi.plan_from_statistics, np.zeros(120), "config")
V(r"u must have shape \(120,\)", ucbvi.plan_from_statistics, np.zeros(119), CONFIG)
V("u must be finite", ucbvi.plan_from_statistics, np.full(120, NAN), CONFIG)
T("u must be an array of numbers", ucbvi.plan_from_statistics, "u", CONFIG)
V(r"u must have shape \(120,\)", ucbvi.ucbvi_update, np.zeros(121), CONFIG)
T("config must be a UCBVIConfig", ucbvi.ucbvi_update, np.zeros(120), None)
_UR = ucbvi.run_ucbvi(RIVER, 3)
T(
    "config must be a UCBVIConfig",
    ucbvi.UCBVIRun,
    _UR.policies,
    _UR.trajectories,
    _UR.indices,
    _UR.values,
    None,
    _UR.users,
    0,
)
V(
    r"policies must have shape \[T, 4, 3\]",
    ucbvi.UCBVIRun,
    _UR.policies[:, :2],
    _UR.trajectories,
    _UR.indices,
    _UR.values,
    _UR.config,
    _UR.users,
    0,
)
T(
    "trajectories must be a Trajectory",
    ucbvi.UCBVIRun,
    _UR.policies,
    None,
    _UR.indices,
    _UR.values,
    _UR.config,
    _UR.users,
    0,
)
V(
    "seed must lie in",
    ucbvi.UCBVIRun,
    _UR.policies,
    _UR.trajectories,
    _UR.indices,
    _UR.values,
    _UR.config,
    _UR.users,
    -1,
)
T("mdp must be a TabularMDP", ucbvi.run_ucbvi, "mdp", 10)
V("T must be >= 1", ucbvi.run_ucbvi, RIVER, 0)
V(r"users must have shape \(3,\)", ucbvi.run_ucbvi, RIVER, 3, users=[0, 1])
T("users must be integer keys", ucbvi.run_ucbvi, RIVER, 2, users=[0.0, 1.0])
V("seed must lie in", ucbvi.run_ucbvi, RIVER, 3, seed=-1)
T("record_values must be True or False", ucbvi.run_ucbvi, RIVER, 3, record_values="no")
V(r"delta must lie in \(0, 1\)", ucbvi.run_ucbvi, RIVER, 3, delta=0.0)
V("bonus_kind must be one of", ucbvi.run_ucbvi, RIVER, 3, bonus_kind="rlberry")
T("pooled must be True or False", ucbvi.run_ucbvi, RIVER, 3, pooled="yes")
V("calibration must be one of", stable.stable_sigma, 1.0, 10, 100, "magic")
T("calibration must be one of", stable.stable_sigma, 1.0, 10, 100, 2)
V("rho must be finite and > 0", stable.stable_sigma, 0.0, 10, 100)
T("rho must be a real number", stable.stable_sigma, "1", 10, 100)
V("T must be >= 2 for the paper's calibration", stable.stable_sigma, 1.0, 10, 1)
T("mdp must be a TabularMDP", stable.EpisodeOracle, "riverswim")
V("reward_noise must be one of", stable.EpisodeOracle, RIVER, "gauss")
V("max_memory must be finite and > 0", stable.stable_ucbvi, RIVER, 8, 1.0, max_memory=0)
V("above max_memory", stable.stable_ucbvi, RIVER, 8, 1.0, max_memory=1000)
T("mdp must be a TabularMDP", stable.training_cost, "riverswim", 8)
T("timed must be a bool", stable.training_cost, RIVER, 8, timed=1)
T("reward_noise must be one of", stable.EpisodeOracle, RIVER, 0)
EU = stable.EpisodeUser(3)
T("a user must be an EpisodeUser", ORACLE.sparse, "alice", 1, PI)
T("a user must be an EpisodeUser", ORACLE.sparse, 3, 1, PI)
V("policy must have shape", ORACLE.sparse, EU, 1, PI.T)
V("t must be >= 1", ORACLE.sparse, EU, 0, PI)
T("a user must be an EpisodeUser", ORACLE, 2.0, 1, PI)
V("policy entries must be actions in", ORACLE, EU, 1, PI + 2)
T("t must be an integer", ORACLE, EU, 1.0, PI)
T("an EpisodeUser key must be an integer", stable.EpisodeUser, "alice")
T("an EpisodeUser key must be an integer", stable.EpisodeUser, 3.0)
V(r"an EpisodeUser key must be an integer in \[0, 2\*\*64\)", stable.EpisodeUser, -1)
V(r"an EpisodeUser key must be an integer in \[0, 2\*\*64\)", stable.EpisodeUser, 2**64)
T("mdp must be a TabularMDP", stable.population_users, "riverswim", 3, seed=0)
V("seed must lie in", stable.population_users, RIVER, 3, seed=-1)
V("T must be >= 0", stable.population_users, RIVER, -1, seed=0)
T("start must be an integer", stable.population_users, RIVER, 3, seed=0, start=1.0)
T("config must be a UCBVIConfig", stable.PolicyUpdate, {"S": 3})
V(r"u must have shape \(120,\)", UPDATE, np.zeros(5), 1, PI)
T("t must be an integer", UPDATE, np.zeros(120), None, PI)
T("mdp must be a TabularMDP", stable.stable_ucbvi, "riverswim", 100, 1.0)
V("give exactly one of rho", stable.stable_ucbvi, RIVER, 100)
V("give exactly one of rho", stable.stable_ucbvi, RIVER, 100, 1.0, sigma=1.0)
V("sigma must be finite and >= 0", stable.stable_ucbvi, RIVER, 100, sigma=-1.0)
V("bonus_kind must be one of", stable.stable_ucbvi, RIVER, 100, 1.0, bonus_kind="bern")
T("pooled must be True or False", stable.stable_ucbvi, RIVER, 100, 1.0, pooled=None)
T("sigma must be a real number", stable.stable_ucbvi, RIVER, 100, sigma=True)
V("T must be >= 1", stable.stable_ucbvi, RIVER, 0, 1.0)
V("rho must be < 1 for the exact calibration", stable.stable_ucbvi, RIVER, 100, 2.0, calibration="exact")
T("tree_factory must be callable", stable.stable_ucbvi, RIVER, 100, 1.0, tree_factory=3)
T("stabilize must be True or False", stable.stable_ucbvi, RIVER, 100, 1.0, stabilize=None)
T("a user must be an EpisodeUser", lr.train, STABLE, ["a", "b"], RNG)
T("a user must be an EpisodeUser", lr.train, STABLE, [EU, 5], RNG)
V("T must be >= 0", stable.episode_users, -1)
T("T must be an integer", stable.episode_users, 3.0)
T("rng must be a numpy.random.Generator", stable.episode_users, 3, rng="rng")
V("rng as a seed must be an integer >= 0", stable.episode_users, 3, rng=-1)
T("run must be a Run", stable.run_policies, "run")
T("run must be a Run", stable.run_regret, "run")
V("run_regret needs mdp", stable.run_regret, RUN)
T("mdp must be a TabularMDP", stable.run_regret, SRUN, "mdp")
V("H must be >= 1", stable.rho_theorem, 3, 2, 0, 100)
T("T must be an integer", stable.rho_theorem, 3, 2, 4, 100.0)
V("T must be >= 1", stable.theorem_41_terms, 3, 2, 4, [0.5, 2], 1.0)
V("rho must be > 0", stable.theorem_41_terms, 3, 2, 4, 10, [0.0])
T("rho must be an array of numbers", stable.theorem_41_terms, 3, 2, 4, 10, "1")
V("T and rho must broadcast together", stable.theorem_41_terms, 3, 2, 4, [10, 20], [1.0, 2.0, 3.0])
V("ts must be > 0", rl_regret.loglog_slope, [0, 1, 2], [1.0, 2.0, 3.0])
V(r"cumulative must have shape \(3,\)", rl_regret.loglog_slope, [1, 2, 3], [1.0, 2.0])
V("need at least two positive points", rl_regret.loglog_slope, [1, 2, 3], [0.0, 0.0, 1.0])
V(r"start must lie in \[0, 1\]", rl_regret.loglog_slope, [1, 2, 3], [1.0, 2.0, 3.0], start=2.0)
V("ts must not be empty", rl_regret.loglog_slope, [], [])
T("mdp must be a TabularMDP", rl_regret.regret_curves, "mdp", 10, [0])
V("seeds must not be empty", rl_regret.regret_curves, RIVER, 10, [])
T("n_points must be an integer", rl_regret.regret_curves, RIVER, 10, [0], n_points=4.0)
V("T must be >= 1", rl_regret.regret_curves, RIVER, 0, [0])
V("results must be a non-empty list of regret_curves outputs", rl_regret.plot_regret_curves, [])
V("results must be a non-empty list", rl_regret.plot_regret_curves, [{"t": [1]}])
V(r"cumulative must have shape \(2,\)", rl_stable.safe_slope, [1, 2], [1.0])
V("ts must be > 0", rl_stable.safe_slope, [-1, 2], [1.0, 1.0])
T("mdp must be a TabularMDP", rl_stable.stable_regret_curve, None, 10, 1.0, 0, RNG)
T("rng must be a numpy.random.Generator", rl_stable.stable_regret_curve, RIVER, 10, 1.0, 0, "rng")
V("seed must lie in", rl_stable.stable_regret_curve, RIVER, 10, 1.0, -1, RNG)
V("n_points must be >= 1", rl_stable.stable_regret_curve, RIVER, 10, 1.0, 0, RNG, n_points=0)
T(
    "keep_policies must be True or False",
    rl_stable.stable_regret_curve,
    RIVER,
    10,
    1.0,
    0,
    RNG,
    keep_policies=1,
)
V("rho must be finite and > 0", rl_stable.stable_regret_curve, RIVER, 10, -1.0, 0, RNG)
T(
    "tree_factory must be callable",
    rl_stable.stable_regret_curve,
    RIVER,
    10,
    1.0,
    0,
    RNG,
    tree_factory="light",
)
V("curves must be a non-empty list of stable_regret_curve outputs", rl_stable.summarize_curves, [])
V("curves must be a non-empty list", rl_stable.summarize_curves, [{"mdp": "m"}])
V("rho must be a number and > 0", rl_stable.rho_label, 0.0)
T("rho must be a real number", rl_stable.rho_label, "1")
V("curves must be a non-empty list", rl_stable.plot_stable_regret, [])
T("title must be a str", rl_stable.plot_stable_regret, [CURVE], title=3)
T("ax must be an Axes", rl_stable.plot_stable_regret, [CURVE], ax="ax")
V("Ts must be >= 1", rl_stable.plot_theorem_41_terms, 3, 2, 4, [0.5, 10], [1.0])
V("rhos must be > 0", rl_stable.plot_theorem_41_terms, 3, 2, 4, [10, 100], [0.0])
V("S must be >= 1", rl_stable.plot_theorem_41_terms, 0, 2, 4, [10, 100], [1.0])
T("ax must be an Axes", rl_stable.plot_theorem_41_terms, 3, 2, 4, [10, 100], [1.0], ax=[])


# --- bandit_unlearning.experiments.rl_unlearning, rl_lower_bound, rl_paper; runner; cli
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from bandit_unlearning import cli  # noqa: E402
from bandit_unlearning.experiments import rl_lower_bound as rlb, rl_paper, rl_unlearning as rlu, runner  # noqa: E402

CACHE: dict = {}
_TMP = tempfile.TemporaryDirectory()  # removed when the test session ends
A_FILE = Path(_TMP.name) / "a_file.json"
A_FILE.write_text("not json")
A_DIR = Path(_TMP.name) / "a_dir"
A_DIR.mkdir()
(A_DIR / "broken.json").write_text("{not json")
LB_RESULT = [
    dict(rho=1.0, seed=0, final=1.0, first_correct=2, S=6, A=2, H=2, T=10, gap=0.25, bonus_scale=1.0)
]
T("cache must be a dict", rlu.policy_code, PI, [])
T("policy must hold integer actions", rlu.policy_code, PI * 1.0, CACHE)
T("cache must be a dict", rlu.policy_regret, RIVER, PI, None)
V("policy must have shape", rlu.policy_regret, RIVER, PI[:1], CACHE)
T("mdp must be a TabularMDP", rlu.policy_regret, "mdp", PI, CACHE)
T("run must be a Run", rlu.rl_run_statistics, "run", 1, CACHE)
V(r"t must lie in \[1, 8\]", rlu.rl_run_statistics, SRUN, 9, CACHE)
T("cache must be a dict", rlu.rl_run_statistics, SRUN, 1, None)
V("run must be a run of TV-stable UCB-VI", rlu.rl_run_statistics, RUN, 1, CACHE)
T("mdp must be a TabularMDP", rlu.rl_unlearning_cost, "mdp", [8], [1.0], 1, 1, RNG)
V("Ts must be >= 2", rlu.rl_unlearning_cost, RIVER, [8, 1], [1.0], 1, 1, RNG)
V("rhos must be > 0", rlu.rl_unlearning_cost, RIVER, [8], [1.0, -1.0], 1, 1, RNG)
V("n_runs must be >= 1", rlu.rl_unlearning_cost, RIVER, [8], [1.0], 0, 1, RNG)
T("rng must be a numpy.random.Generator", rlu.rl_unlearning_cost, RIVER, [8], [1.0], 1, 1, "rng")
V("calibration must be one of", rlu.rl_unlearning_cost, RIVER, [8], [1.0], 1, 1, RNG, calibration="magic")
V(
    "rho must be < 1 for the exact calibration",
    rlu.rl_unlearning_cost,
    RIVER,
    [8],
    [2.0],
    1,
    1,
    RNG,
    calibration="exact",
)
T("tree_factory must be callable", rlu.rl_unlearning_cost, RIVER, [8], [1.0], 1, 1, RNG, tree_factory=None)
V("seed must lie in", rlu.rl_unlearning_cost, RIVER, [8], [1.0], 1, 1, RNG, seed=-1)
V("sigma must be finite and > 0", rlb.sum_mechanism_rho, 0.0)
T("sigma must be a real number", rlb.sum_mechanism_rho, "1")
V("rho must be < 1", rlb.sum_mechanism_sigma, 1.0)
V("rho must be finite and > 0", rlb.sum_mechanism_sigma, -0.5)
V(r"p must lie in \[0, 1\]", rlb.gaussian_sum_tv, 10, 1.5, 0.5, 1.0)
T("q must be a real number", rlb.gaussian_sum_tv, 10, 0.5, "0.5", 1.0)
V("points_per_sigma must be >= 4", rlb.gaussian_sum_tv, 10, 0.5, 0.5, 1.0, 2)
V("exceed the limit of 50000000", rlb.gaussian_sum_tv, 100_000, 0.5, 0.6, 1.0)
V("n must be >= 1", rlb.gaussian_sum_tv, 0, 0.5, 0.5, 1.0)
V("rho must be finite and >= 0", rlb.karwa_vadhan_bound, 10, -1.0, 0.1)
V(r"tv must lie in \[0, 1\]", rlb.karwa_vadhan_bound, 10, 1.0, 1.5)
T("n must be an integer", rlb.karwa_vadhan_bound, 10.0, 1.0, 0.1)
V("T must be >= 1 and rho > 0", rlb.lower_bound_shape, 3, 2, 4, 0, 1.0)
V("T must be >= 1 and rho > 0", rlb.lower_bound_shape, 3, 2, 4, 10, [NAN])
T("rho must be an array of numbers", rlb.lower_bound_shape, 3, 2, 4, 10, "1")
V("T and rho must broadcast together", rlb.lower_bound_shape, 3, 2, 4, [10, 20], [1.0, 2.0, 3.0])
V("policies must be integer actions of shape \\[T, H, S\\]", rlb.first_correct_episode, PI, [0])
V("best_actions must be >= 0", rlb.first_correct_episode, PI[None], [-1])
V("best_actions names 4 initial states", rlb.first_correct_episode, PI[None], [0, 0, 0, 0])
T("best_actions must hold integers, not booleans", rlb.first_correct_episode, PI[None], [True])
V("rhos must be > 0", rlb.lower_bound_experiment, 2, 2, 2, 0.25, 10, [0.0], [0], RNG)
V(r"seeds must lie in \[0, ", rlb.lower_bound_experiment, 2, 2, 2, 0.25, 10, [1.0], [-1], RNG)
T("rng must be a numpy.random.Generator", rlb.lower_bound_experiment, 2, 2, 2, 0.25, 10, [1.0], [0], "rng")
V("T must be >= 2 for the paper's calibration", rlb.lower_bound_experiment, 2, 2, 2, 0.25, 1, [1.0], [0], RNG)
V("gap must lie in \\[0, 1/2\\]", rlb.lower_bound_experiment, 2, 2, 2, 0.75, 10, [1.0], [0], RNG)
T(
    "bonus_scale must be a real number",
    rlb.lower_bound_experiment,
    2,
    2,
    2,
    0.25,
    10,
    [1.0],
    [0],
    RNG,
    bonus_scale="1",
)
V("results must be a list of lower_bound_experiment outputs", rlb.summarize_by_rho, [{"rho": 1.0}])
V("results must be a list of lower_bound_experiment outputs", rlb.summarize_by_rho, "results")
V("results must be a non-empty list", rlb.plot_lower_bound, [])
V("at least one finite rho", rlb.plot_lower_bound, [LB_RESULT[0] | dict(rho=INF)])
T("label must be a str", rlb.plot_lower_bound, LB_RESULT, label=3)
T("show_saturation must be True or False", rlb.plot_lower_bound, LB_RESULT, show_saturation=None)
T("ax must be an Axes", rlb.plot_lower_bound, LB_RESULT, ax=3)
V("scale must be one of", rl_paper.reproduce_rl, A_DIR / "rl", "huge")
T("scale must be a str", rl_paper.reproduce_rl, A_DIR / "rl", None)
T("progress must be True or False", rl_paper.reproduce_rl, A_DIR / "rl", progress="yes")
V("protocol must be a dict with the keys", rl_paper.reproduce_rl, A_DIR / "rl", protocol={"regret": {}})
V("misses", rl_paper.reproduce_rl, A_DIR / "rl", protocol={"regret": {}, "cost": {}, "lower_bound": {}})
V(
    "unknown environment",
    rl_paper.reproduce_rl,
    A_DIR / "rl",
    protocol={
        part: dict(
            value, **({"environments": [{"name": "maze", "H": 5, "T": 10}]} if part == "regret" else {})
        )
        for part, value in rl_paper.PROTOCOLS["quick"].items()
    },
)
V("seed must be >= 0", rl_paper.reproduce_rl, A_DIR / "rl", seed=-1)
V("workers must be >= 1", rl_paper.reproduce_rl, A_DIR / "rl", workers=0)
T("out must be a str or Path", rl_paper.reproduce_rl, 3)
V("out must be a folder", rl_paper.reproduce_rl, A_FILE)
T("tree_factory must be callable", rl_paper.reproduce_rl, A_DIR / "rl", tree_factory="light")
T("fn must be callable", runner.run_tasks, "fn", [1])
V("workers must be >= 1", runner.run_tasks, abs, [1], workers=0)
T("workers must be an integer", runner.run_tasks, abs, [1], workers=True)
T("executor must be a concurrent.futures.Executor", runner.run_tasks, abs, [1], executor="pool")
T("tasks must be a sequence", runner.run_tasks, abs, 3)
T("progress must be True or False", runner.run_tasks, abs, [1], progress="no")
T("desc must be a str", runner.run_tasks, abs, [1], desc=None)
T("jobs must be a sequence of callables", runner.run_together, 3, 2)
T(r"jobs\[i\] must be callable", runner.run_together, [abs, 1], 2)
V("workers must be >= 1", runner.run_together, [abs], 0)
T("executor must be a concurrent.futures.Executor", runner.use_executor, "pool")
T("executor must be a concurrent.futures.Executor", runner.use_executor, None)
V(r"scheduler \(--scheduler\) must be 'local' .*, 'local:N' \(N >= 1", runner.dask_executor, "local:0")
V(r"scheduler \(--scheduler\) must be .* PROTOCOL://HOST:PORT", runner.dask_executor, "tcp://host")
T(r"scheduler \(--scheduler\) must be a str", runner.dask_executor, 8786)
V("size must be >= 1", runner.chunks, [1, 2], 0)
T("size must be an integer", runner.chunks, [1, 2], 1.5)
T("items must be iterable", runner.chunks, 3, 2)
T("out must be a Path", cli.write_summary, "results")
V("out must be an existing folder", cli.write_summary, A_FILE)
# (a folder holding an unreadable .json is summarised without it: tests/test_cli_edges.py)
V("unknown experiment", cli.reproduce, ["figure9"], A_DIR / "new")
T("names must be a list of experiment names", cli.reproduce, "lemma31", A_DIR / "new")
V("names must name at least one experiment", cli.reproduce, [], A_DIR / "new")
V("--out must be a folder", cli.reproduce, ["lemma31"], A_FILE)
V("seed \\(--seed\\) must be >= 0", cli.reproduce, ["lemma31"], A_DIR / "new", seed=-1)
V("scale must be one of", cli.reproduce, ["lemma31"], A_DIR / "new", scale="huge")
V("workers \\(--workers\\) must be >= 1", cli.reproduce, ["lemma31"], A_DIR / "new", workers=0)
T("out must be a str or Path", cli.reproduce, ["lemma31"], None)
V(
    r"scheduler \(--scheduler\) must be 'local'",
    cli.reproduce,
    ["lemma31"],
    A_DIR / "new",
    scheduler="local:-1",
)
V(
    r"scheduler \(--scheduler\) .* do not combine it with workers \(--workers\) 2",
    cli.reproduce,
    ["lemma31"],
    A_DIR / "new",
    workers=2,
    scheduler="local:2",
)
T("argv must be a list of strings", cli.main, "reproduce lemma31")
T("argv must be a list of strings", cli.main, ["reproduce", 3])

# --- bandit_unlearning.copying (python -m bandit_unlearning copy)
from bandit_unlearning import copying  # noqa: E402

T("module must be a non-empty str", copying.module_files, 3)
V("is not a module of bandit_unlearning", copying.module_files, "mab.nothing")
V("is not a module of bandit_unlearning", copying.copy_module, "mab.nothing", A_DIR / "copy")
V("must be a Python identifier", copying.copy_module, "mab.lcb", A_DIR / "copy", name="my-lib")
T("dest must be a path", copying.copy_module, "mab.lcb", 3)
V("is a file, not a folder", copying.copy_module, "mab.lcb", A_FILE / "sub")


# --- bandit_unlearning.exact.registry (deleting a user)
from bandit_unlearning.exact import registry  # noqa: E402

T("run must be a Run", registry.user_steps, "run", EU)
T("key must be callable or None", registry.user_steps, SRUN, EU, key=3)
V("unknown user", unlearn, SRUN, protocol.DeleteUser(stable.EpisodeUser(2**63)))
V("the dummy user cannot be deleted", unlearn, SRUN, protocol.DeleteUser(lr.ZERO_USER))
T("rng must be a numpy.random.Generator", unlearn, SRUN, protocol.DeleteUser(SRUN.users[0]), rng="rng")
V(
    "diagnostics are recorded for a DeleteStep request only",
    unlearn,
    SRUN,
    protocol.DeleteUser(SRUN.users[0]),
    options=lr.ExactOptions(diagnostics=True),
)
V("steps must be distinct", unlearn, SRUN, protocol.DeleteSteps((1, 1)))
V(r"step must lie in \[1, ", unlearn, SRUN, protocol.DeleteSteps((1, 10**6)))
V(r"step must lie in \[1, ", unlearn, SRUN, protocol.DeleteSteps((0, 1)))
T("before must be a Run", registry.verify_unlearned, "x", SRUN, None)
V("node_cost must be a finite number > 0", registry.worst_case_cost, (1,), 8, node_cost=-1.0)
V("n_leaves must", registry.StepsCoupling, (1,), 0, (), (), None, (), 0)
V("restart must", registry.StepsCoupling, (1,), 4, (), (), None, (), 5)
V("T must", registry.UserUnlearnRecord, (1,), 0, None, 1.0, (), (), None, (), 0, 0, None, None)
V(
    "method must be",
    registry.UserUnlearnRecord,
    (1,),
    4,
    None,
    1.0,
    (),
    (),
    None,
    (),
    4,
    0,
    None,
    None,
    "twice",
)
T("steps must be a tuple", registry.couple_steps, SRUN.tree.copy(), SRUN.tree, [1], lambda t: None, None)
T("new_leaf must be callable", registry.couple_steps, SRUN.tree.copy(), SRUN.tree, (1,), 3, None)
T("steps must be a sequence", registry.coupled_nodes, 3, 8)
V("step must", registry.coupled_nodes, (9,), 8)
V("unknown user", registry.unlearn_user_sequential, SRUN, stable.EpisodeUser(2**63))
T("rng must be a numpy.random.Generator", registry.unlearn_user_sequential, SRUN, SRUN.users[0], "rng")
V("d must", stable.TrainingCost, "x", 0, 8, 8, 4, 32, None)
V("seconds_per_episode must", stable.TrainingCost, "x", 1, 8, 8, 4, 32, -1.0)

# --- bandit_unlearning.exact.linucb
from bandit_unlearning.exact import linucb  # noqa: E402

T("flag must be a bool", _accel.set_enabled, 1)

LCFG = linucb.LinUCBConfig(2, 2)
LMODEL = linucb.initial_model(LCFG)
T("context must be an array of numbers", linucb.LinUCBUser, "ab", [0.0, 1.0])
V(r"context must be a finite 1-D array with \|\|x\|\|_2 <= 1", linucb.LinUCBUser, [1.0, 1.0], [0.0, 1.0])
V(r"rewards must be a non-empty 1-D array in \[0, 1\]", linucb.LinUCBUser, [0.5, 0.5], [0.0, 2.0])
V("X must be a finite 2-D array", linucb.unit_ball, [1.0, 2.0])
V("dim must be >= 1", linucb.block_size, 0)
T("dim must be an integer", linucb.block_size, 2.0)
V(r"arm must lie in \[0, 1\]", linucb.linucb_statistics, 2, [0.5, 0.5], 1.0, 2)
V(r"reward must lie in \[0, 1\]", linucb.linucb_statistics, 0, [0.5, 0.5], 1.5, 2)
T("context must be an array of numbers", linucb.linucb_statistics, 0, "ab", 1.0, 2)
V(r"u must have shape \(10,\)", linucb.unpack, np.zeros(9), 2, 2)
T("n_arms must be an integer", linucb.unpack, np.zeros(10), 2.0, 2)
V("t must be >= 1", linucb.noise_nodes, 0)
V("t must be >= 1", linucb.gram_shift, 1.0, 2, 0, 2, 0.01)
T("t must be an integer", linucb.vector_bound, 1.0, 2, 1.5, 2, 0.01)
V("l2 must be finite and > 0", linucb.widened_radius, 1.0, 0.0, 1.0, 0.0, 0.0)
V("n_arms must be >= 1", linucb.LinUCBConfig, 0, 2)
T("dim must be an integer", linucb.LinUCBConfig, 2, 2.0)
V("alpha must be finite and >= 0", linucb.LinUCBConfig, 2, 2, alpha=-1.0)
V(r"delta must lie in \(0, 1\)", linucb.LinUCBConfig, 2, 2, delta=1.0)
T("theta must be an array of numbers", linucb.LinUCBModel, "theta", np.zeros((2, 2, 2)), 1.0, 0.0)
V(r"Vinv must have shape \(2, 2, 2\)", linucb.LinUCBModel, np.zeros((2, 2)), np.zeros((2, 2)), 1.0, 0.0)
V("radius must be finite and >= 0", linucb.LinUCBModel, np.zeros((2, 2)), np.zeros((2, 2, 2)), -1.0, 0.0)
T("model must be a LinUCBModel", linucb.linucb_scores, "model", [0.5, 0.5])
V(r"context must have shape \(2,\)", linucb.linucb_scores, LMODEL, [0.5, 0.5, 0.0])
V("scores must not be empty", linucb.choose, [])
V("scores must be finite", linucb.choose, [1.0, NAN])
T("config must be a LinUCBConfig", linucb.initial_model, {"n_arms": 2})
T("config must be a LinUCBConfig", linucb.linucb_update, np.zeros(10), 1, LMODEL, "config", 0.0)
V(r"u must have shape \(10,\)", linucb.linucb_update, np.zeros(3), 1, LMODEL, LCFG, 0.0)
T("config must be a LinUCBConfig", linucb.linucb_learner, "config", 1.0)
V("sigma must be finite and >= 0", linucb.linucb_learner, LCFG, -1.0)
T("run must be a Run", linucb.linucb_arms, "run")
T("run must be a Run", linucb.linucb_rewards, [])
V("theta must be a finite", linucb.linear_users, [0.5, 0.5], 3)
V("n must be >= 0", linucb.linear_users, [[0.5, 0.5]], -1)
V("labels must be integers in", linucb.classification_users, [[0.1, 0.2]], [5], 2)
V("one label per row", linucb.classification_users, [[0.1, 0.2]], [0, 1], 2)
V("n_classes must be >= 1", linucb.classification_users, [[0.1, 0.2]], [0], 0)

# --- bandit_unlearning.experiments.linucb_sets
from bandit_unlearning.experiments import linucb_sets  # noqa: E402

LS_USERS = linucb.classification_users([[0.1, 0.2], [0.3, 0.1]], [0, 1], 2)
V("name must be one of", linucb_sets.pca_users, "mnist", 4, True)
T("name must be one of .*got int", linucb_sets.pca_users, 3, 4, True)
V("dim must be at most 4", linucb_sets.pca_users, "iris", 5, True)
V("dim must be >= 1", linucb_sets.pca_users, "iris", 0, True)
T("standardise must be True or False", linucb_sets.pca_users, "iris", 2, 1)
T("config must be a LinUCBConfig", linucb_sets.previous_learner, (2, 2), 0.1)
V("sigma", linucb_sets.previous_learner, LCFG, -1.0)
T("config must be a LinUCBConfig", linucb_sets.set_accuracy, LS_USERS, (2, 2), [1.0], 1, 0)
V("users must be a non-empty sequence of LinUCBUser", linucb_sets.set_accuracy, (), LCFG, [1.0], 1, 0)
V(
    "users must be a non-empty sequence of LinUCBUser",
    linucb_sets.set_accuracy,
    LS_USERS,
    linucb.LinUCBConfig(3, 2),
    [1.0],
    1,
    0,
)
V("rhos and previous_rhos must be finite and > 0", linucb_sets.set_accuracy, LS_USERS, LCFG, [0.0], 1, 0)
V(
    "rhos and previous_rhos must be finite and > 0",
    linucb_sets.set_accuracy,
    LS_USERS,
    LCFG,
    [1.0],
    1,
    0,
    [float("inf")],
)
V("reps must be >= 1", linucb_sets.set_accuracy, LS_USERS, LCFG, [1.0], 0, 0)
V("previous_reps must be >= 1", linucb_sets.set_accuracy, LS_USERS, LCFG, [1.0], 1, 0, [1.0], 0)
T("rng", linucb_sets.set_accuracy, LS_USERS, LCFG, [1.0], 1, "seed")

# --- bandit_unlearning.mab.model (a model that takes a stream of deletions)
from bandit_unlearning.mab import model as mmodel  # noqa: E402

MMODEL = mmodel.LCBModel.fit(
    ["a", "b", "a", "b"], [1.0, 0.0, 1.0, 0.5], users=["u", "v", "w", "u"], rng=np.random.default_rng(7)
)
MODEL_FILE = Path(_TMP.name) / "model.npz"
RSTATE = MMODEL.release_state
_RS = {f.name: getattr(RSTATE, f.name) for f in dataclasses.fields(RSTATE)}
V("method must be one of", mmodel.ReleaseState, **(_RS | {"method": "gaussian"}))
V("reference must be one of", mmodel.ReleaseState, **(_RS | {"reference": "world"}))
T("labels must be a tuple", mmodel.ReleaseState, **(_RS | {"labels": ["a", "b"]}))
V(r"counts must have one entry per arm \(2\)", mmodel.ReleaseState, **(_RS | {"counts": [1, 1, 1]}))
V(r"policy must lie in \[0, 1\]", mmodel.ReleaseState, **(_RS | {"policy": 2}))
T("n_requests must be an integer", mmodel.ReleaseState, **(_RS | {"n_requests": 1.5}))
T("a model's options are fixed at fit", unlearn, RSTATE, mech.DeletionRequest([0], [1.0]), options=OPTS)
V("request names unknown arm 5", unlearn, RSTATE, mech.DeletionRequest([5], [1.0]))
V("more deletions than the arm holds", unlearn, RSTATE, mech.DeletionRequest([0, 0, 0], [1.0, 1.0, 1.0]))
T("rng must be a numpy.random.Generator", unlearn, RSTATE, mech.DeletionRequest([0], [1.0]), rng="7")
V("epsilon must", mmodel.gdp_budget, 0.0, 1e-5)
V("delta must", mmodel.gdp_budget, 1.0, 2.0)
V("mu must be finite and >= 0", mmodel.gdp_delta, -1.0, 1.0)
T("mu must be a real number", mmodel.gdp_delta, "1", 1.0)
V("release_mus must be >= 0", mmodel.request_mus, [0.5, -0.1])
T("release_mus must be an array of numbers", mmodel.request_mus, ["a"])
T("mu_new must be a real number", mmodel.admits, [0.1], "x", 1.0)
V("mu_budget must be finite and >= 0", mmodel.admits, [0.1], 0.1, NAN)
V("sigma must be finite and > 0", mmodel.release_shift, [5, 5], [1, 0], 1.0, 0.0)
V("n_arm must be >= 1", mmodel.deletion_capacity, 0, 1, 1.0, 1.0, 1.0, 0.1)
V(r"k must lie in \[1, 5\]", mmodel.deletion_capacity, 5, 6, 1.0, 1.0, 1.0, 0.1)
T("n_arm must be an integer", mmodel.deletion_capacity, 5.5, 1, 1.0, 1.0, 1.0, 0.1)
T("rows must be integer row ids", mmodel.check_row_ids, [0.5], 3, np.ones(3, dtype=bool))
V("rows must be a non-empty 1-D sequence", mmodel.check_row_ids, [], 3, np.ones(3, dtype=bool))
V("rows names a row twice", mmodel.check_row_ids, [1, 1], 3, np.ones(3, dtype=bool))
V(r"unknown row 3: row ids lie in \[0, 3\)", mmodel.check_row_ids, [3], 3, np.ones(3, dtype=bool))
V("row 1 was already deleted", mmodel.check_row_ids, [1], 3, np.array([True, False, True]))
T("user must be a str or int id, got bool", mmodel.check_user, True)
T("user must be a str or int id, got float", mmodel.check_user, 1.0)
V("sigma must be finite and > 0", mmodel.deletion_capacity, 5, 1, 1.0, 0.0, 1.0, 0.1)
T("noise_request must be True or False", mmodel.ReleasePlan, "yes", False, (), 0.0)
V("mu must be finite and >= 0", mmodel.ReleasePlan, False, False, (), -1.0)
V(
    "method must be one of",
    mmodel.plan_release,
    [5, 5],
    [0, 0],
    [1, 0],
    True,
    [],
    log_term=1.0,
    sigma=1.0,
    mu_budget=1.0,
    method="magic",
)
V("method must be one of", mmodel.DeletionRecord, 0, (1,), "noisy", (), (), 0.0, 0.0, 0.0, 0.0, "a")
_MKW = dict(
    labels=["a"],
    tau=0.5,
    n_fit=2,
    arms=[0, 0],
    rewards=[1.0, 0.0],
    row_ids=[0, 1],
    users=None,
    pub_counts=[2],
    pub_sums=[1.0],
    pending_counts=[0],
    pending_ids=(),
    release_mus=[],
    log=[],
    policy=0,
    method="rollback",
    epsilon=None,
    delta=None,
    sigma=None,
    rng=RNG,
)
V("method must be one of", mmodel.LCBModel, **(_MKW | dict(method="magic")))
T("rng must be a Generator", mmodel.LCBModel, **(_MKW | dict(rng=3)))
V("method must be one of", mmodel.LCBModel.fit, [0, 1], [1.0, 0.0], method="magic")
V(
    "reference must be one of",
    mmodel.LCBModel.fit,
    [0, 1],
    [1.0, 0.0],
    method="adaptive",
    epsilon=1.0,
    delta=1e-3,
    sigma=1.0,
    reference="both",
)
V(r"rewards must lie in \[0, 1\]", mmodel.LCBModel.fit, [0, 1], [1.0, 2.0])
T("rng must be a numpy.random.Generator", mmodel.LCBModel.fit, [0, 1], [1.0, 0.0], rng="rng")
V("the CSV file has no column 'arm'", mmodel.LCBModel.from_csv, A_FILE)
V(r"rewards must lie in \[0, 1\]", mmodel.LCBModel.from_frame, {"arm": [0, 1], "reward": [1.0, 2.0]})
V("unknown user", MMODEL.delete, user="zed")
V("row 9", MMODEL.delete, rows=[9])
T("model must be an LCBModel", mmodel.save_model, "model", MODEL_FILE)
T("path must be a str or os.PathLike", MMODEL.save, 3)
V("path must name a file in an existing folder", mmodel.save_model, MMODEL, A_DIR / "missing" / "model.npz")
T("rng must be a numpy.random.Generator", mmodel.load_model, A_FILE, rng="rng")
V("not a readable model file", mmodel.load_model, A_FILE)
V("not a readable model file", mmodel.load_statistics, A_FILE)
T("rng must be a numpy.random.Generator", MMODEL.load, A_FILE, rng="rng")
T("model must be an LCBModel", mmodel.plot_budget, "model")
M_CSV = Path(_TMP.name) / "model_rows.csv"
M_CSV.write_text("arm,reward\n0,1.0\n1,0.5\n")
V("the CSV file has no column 'nope'; its columns are", mmodel.read_csv_columns, M_CSV, ["nope"])
T("path must be a str or os.PathLike", mmodel.read_csv_columns, 3, ["arm"])
T("path must be a str or os.PathLike", mmodel.remove_stale_temporary_files, 3)
V("path must name a file in an existing folder", mmodel.remove_stale_temporary_files, A_DIR / "no" / "m.npz")
V("key must hold at least 16 bytes", mmodel.save_model, MMODEL, MODEL_FILE, key=b"short")
T("key must be bytes", mmodel.load_model, MODEL_FILE, key="text")

# --- bandit_unlearning.mab.contextual and contextual_model (the contextual learner, chapters A10a-A10b)
from bandit_unlearning.mab import contextual as ctxl  # noqa: E402
from bandit_unlearning.mab import contextual_model as ctxm  # noqa: E402

CX = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])
CA, CR = np.array([0, 1, 0, 1, 0, 1]), np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.0])
CSTATE = ctxl.fit_contextual(CX, CA, CR, n_arms=2, context_bound=1.0)
CREQ = ctxl.ContextualRequest(CX[:1], CA[:1], CR[:1])
CREL = ctxl.release_exact(CSTATE)
CMODEL = ctxm.ContextualModel.fit(
    CX, CA, CR, n_arms=2, context_bound=1.0, users=list("aabbcc"), rng=np.random.default_rng(8)
)
V("tau must lie in", ctxl.confidence_radius, 10, 2, 2, 0.0, 1.0, 1.0, 1.0)
V("lam must be finite and > 0", ctxl.confidence_radius, 10, 2, 2, 0.1, 0.0, 1.0, 1.0)
T(
    "gram must be a ndarray",
    ctxl.ContextualState,
    "g",
    CSTATE.moments,
    CSTATE.counts,
    1.0,
    1.0,
    1.0,
    CSTATE.theta,
    CSTATE.gram_inv,
    CSTATE.lam_min,
)
V(
    "theta must have shape",
    ctxl.ContextualState,
    CSTATE.gram,
    CSTATE.moments,
    CSTATE.counts,
    1.0,
    1.0,
    1.0,
    CSTATE.theta[:1],
    CSTATE.gram_inv,
    CSTATE.lam_min,
)
V(
    "gram must include the ridge",
    ctxl.state_from_statistics,
    np.eye(2)[None] * 0.5,
    np.zeros((1, 2)),
    [0],
    lam=1.0,
    beta=1.0,
    context_bound=1.0,
)
V(
    "gram must have shape",
    ctxl.state_from_statistics,
    np.eye(2)[None],
    np.zeros((2, 2)),
    [0, 0],
    lam=1.0,
    beta=1.0,
    context_bound=1.0,
)
V("context_bound", ctxl.fit_contextual, CX * 2, CA, CR, n_arms=2, context_bound=1.0)
V(r"rewards must lie in \[0, 1\]", ctxl.fit_contextual, CX, CA, CR + 1, n_arms=2, context_bound=1.0)
V(r"arms must lie in \[0, 1\]", ctxl.fit_contextual, CX, CA + 1, CR, n_arms=2, context_bound=1.0)
V("contexts must have 2 columns", ctxl.lcb_scores, CSTATE, np.zeros((1, 3)))
T("state must be a ContextualState", ctxl.lcb_scores, "state", CX)
V("gram_inv must have shape", ctxl.ReleasedPolicy, CREL.theta, CREL.gram_inv[:, :1], 1.0)
V("contexts must have 2 columns", CREL.scores, np.zeros((1, 3)))
V("contexts must be 2-D", CREL.actions, np.zeros(2))
T("state must be a ContextualState", ctxl.release_exact, None)
V("one row each", ctxl.ContextualRequest, CX[:2], CA[:1], CR[:1])
V("n_arms must be >= 1", CREQ.counts, 0)
V(
    "deletes 4 rows of arm 0",
    ctxl.rollback,
    CSTATE,
    ctxl.ContextualRequest(np.zeros((4, 2)), [0] * 4, [0.0] * 4),
)
T("request must be a ContextualRequest", ctxl.rollback, CSTATE, "request")
V("lam_min must be > 0", ctxl.parameter_sensitivity, 0.0, 1, 1.0, 0.0)
V("k must be >= 0", ctxl.parameter_sensitivity, 1.0, -1, 1.0, 0.0)
V("eigen_floor", ctxl.deletion_sensitivity, CSTATE, [1, 0], eigen_floor=1e9)
V("k must have one entry per arm", ctxl.deletion_sensitivity, CSTATE, [1])
V("calibration must be one of", ctxl.calibrate_sigma, 1.0, 0.5, 1e-5, "magic")
V("epsilon < 1", ctxl.calibrate_sigma, 1.0, 2.0, 1e-5, "classic")
V("gaussian must be finite and >= 0", ctxl.BranchBounds, -1.0, 0.0, 0.0)
V("sigma must be finite and >= 0", ctxl.branch_bounds, CSTATE, [1, 0], -1.0, CX)
V("gram_before must have shape", ctxl.branch_bounds, CSTATE, [1, 0], 1.0, CX, gram_before=np.eye(2)[None])
V(
    "branch must be one of",
    ctxl.ContextualRecord,
    "magic",
    "exact",
    "literal",
    (),
    0.0,
    0.0,
    "analytic",
    None,
    None,
    None,
)
V(
    "method 'adaptive' needs contexts",
    unlearn,
    CSTATE,
    CREQ,
    options=ctxl.ContextualOptions(epsilon=1.0, delta=1e-5),
)
V("switch must be one of", ctxl.ContextualOptions, method="rollback", switch="magic")
V("method must be one of", ctxl.ContextualOptions, method="mixing")
V("calibration must be one of", ctxl.ContextualOptions, calibration="paper")
T(
    "rng must be a numpy.random.Generator",
    unlearn,
    CSTATE,
    CREQ,
    options=ctxl.ContextualOptions(method="rollback"),
    rng="seed",
)
T("options must be a ContextualOptions", unlearn, CSTATE, CREQ)
T("options must be a ContextualOptions", ctxl.reference_contextual, CSTATE, [1, 0])
T(
    "release must be a ReleasedPolicy",
    ctxl.ContextualRecord,
    "rollback",
    "exact",
    "literal",
    (),
    0.0,
    0.0,
    "analytic",
    None,
    None,
    None,
    "policy",
)
V(
    "conditional switch",
    ctxl.reference_contextual,
    CSTATE,
    [1, 0],
    options=ctxl.ContextualOptions(epsilon=1.0, delta=1e-5, contexts=CX, switch="conditional"),
)
V(
    "delta must",
    ctxl.reference_contextual,
    CSTATE,
    [1, 0],
    options=ctxl.ContextualOptions(method="gaussian", epsilon=1.0, delta=2.0),
)
V("contexts must be non-zero", ctxl.noisy_action_probability, CREL, 0, 1.0, np.zeros((1, 2)))
V("sigma must be finite and > 0", ctxl.noisy_action_probability, CREL, 0, 0.0, CX)
T("state_live must be a ContextualState", ctxm.sequential_sensitivity, "state", [1, 0])
V("k must have one entry per arm", ctxm.sequential_sensitivity, CSTATE, [1, 0, 0])
V(
    "reason must be one of",
    ctxm.ContextualDeletionRecord,
    0,
    (1,),
    "rollback",
    (),
    (),
    (),
    "magic",
    0.0,
    0.0,
    0.0,
    0.0,
)
V(
    "method must be one of",
    ctxm.ContextualDeletionRecord,
    0,
    (1,),
    "noisy",
    (),
    (),
    (),
    "rollback-only model",
    0.0,
    0.0,
    0.0,
    0.0,
)
_CKW = dict(
    contexts=CX,
    arms=CA,
    rewards=CR,
    row_ids=np.arange(6),
    n_fit=6,
    users=None,
    n_arms=2,
    lam=1.0,
    beta=1.0,
    context_bound=1.0,
    pub_gram=CSTATE.gram,
    pub_moments=CSTATE.moments,
    pub_counts=CSTATE.counts,
    pending={},
    release_mus=[],
    log=[],
    release_theta=CSTATE.theta,
    method="rollback",
    epsilon=None,
    delta=None,
    sigma=None,
    eval_contexts=None,
    rng=RNG,
)
V("method must be one of", ctxm.ContextualModel, **(_CKW | dict(method="magic")))
T("rng must be a Generator", ctxm.ContextualModel, **(_CKW | dict(rng=3)))
V(
    "method 'adaptive' needs epsilon",
    ctxm.ContextualModel.fit,
    CX,
    CA,
    CR,
    n_arms=2,
    context_bound=1.0,
    method="adaptive",
)
V("method 'rollback' is exact", ctxm.ContextualModel.fit, CX, CA, CR, n_arms=2, context_bound=1.0, sigma=1.0)
V("contexts must have 2 columns", CMODEL.actions, np.zeros((1, 3)))
V("unknown user", CMODEL.delete, user="zed")
V("row 9", CMODEL.delete, rows=[9])
T("model must be a ContextualModel", ctxm.save_contextual_model, "model", Path(_TMP.name) / "ctx.npz")
T("path must be a str or os.PathLike", CMODEL.save, 3)
V(
    "path must name a file in an existing folder",
    ctxm.save_contextual_model,
    CMODEL,
    A_DIR / "missing" / "m.npz",
)
V("not a readable contextual model file", ctxm.load_contextual_model, A_FILE)
T("rng must be a numpy.random.Generator", ctxm.load_contextual_model, A_FILE, rng="rng")
V("not a readable contextual model file", ctxm.ContextualModel.load, A_FILE)
CRS = CMODEL.release_state
_CRS = {f.name: getattr(CRS, f.name) for f in dataclasses.fields(CRS)}
V("method must be one of", ctxm.ContextualReleaseState, **(_CRS | {"method": "gaussian"}))
T("live must be a ContextualState", ctxm.ContextualReleaseState, **(_CRS | {"live": CSTATE.gram}))
T("release must be a ReleasedPolicy", ctxm.ContextualReleaseState, **(_CRS | {"release": CSTATE.theta}))
V(r"contexts must have shape \(6, 2\)", ctxm.ContextualReleaseState, **(_CRS | {"contexts": CX[:, :1]}))
V(r"rewards must have shape \(6,\) in blocks", ctxm.ContextualReleaseState, **(_CRS | {"rewards": (CR[:5],)}))
V("ids must lie in", CRS.rows, [6])
V("ids must hold integers", CRS.rows, [0.5])
V(r"pub_counts must have shape \(2,\)", ctxm.ContextualReleaseState, **(_CRS | {"pub_counts": [1, 2, 3]}))
V("pending must hold one count per arm", ctxm.ContextualReleaseState, **(_CRS | {"pending": ((0, (1,)),)}))
T("pending must be a tuple", ctxm.ContextualReleaseState, **(_CRS | {"pending": {}}))
T("n_requests must be an integer", ctxm.ContextualReleaseState, **(_CRS | {"n_requests": 1.5}))
T("rows must be a sequence of row ids", ctxm.DeleteRows, 3)
T("rows must be a sequence of row ids", ctxm.DeleteRows, "12")
V("rows must be a non-empty 1-D sequence", ctxm.DeleteRows, [])
V("rows must be a non-empty 1-D sequence", ctxm.DeleteRows, [[1, 2]])
T("rows must be integer row ids", ctxm.DeleteRows, [1.5])
T("a model's options are fixed at fit", unlearn, CRS, ctxm.DeleteRows([0]), options=OPTS)
V("rows names a row twice", unlearn, CRS, ctxm.DeleteRows([0, 0]))
V(r"unknown row 6: row ids lie in \[0, 6\)", unlearn, CRS, ctxm.DeleteRows([6]))
T("rng must be a numpy.random.Generator", unlearn, CRS, ctxm.DeleteRows([0]), rng="1")

# --- bandit_unlearning.experiments.guarantees (the guarantee matrix)
from bandit_unlearning.experiments import paper_numbers as pn  # noqa: E402

V(
    "kind must be one of",
    pn.PaperStatement,
    "x",
    "Table 2",
    "t",
    "table2",
    "Md-hard-N",
    900,
    ("Alg6",),
    "guess",
    0.0,
    "",
)
T(
    "methods must be a tuple",
    pn.PaperStatement,
    "x",
    "Table 2",
    "t",
    "table2",
    "Md-hard-N",
    900,
    ["Alg6"],
    "value",
    0.0,
    "",
)
T("statement must be a PaperStatement", pn.statement_verdict, "table2", {"Alg6": 0.0}, {})
V("values has no method 'Alg6'", pn.statement_verdict, pn.PAPER_A_STATEMENTS[1], {}, {})
T("results must be a sequence of result dicts", pn.compare_with_paper, 3)
T("results must be a sequence of result dicts", pn.compare_with_paper, [{"experiment": "table2"}, "x"])
T("results must be a sequence of result dicts", pn.paper_comparison_markdown, {"experiment": "table2"})

from bandit_unlearning.experiments import guarantees as gm  # noqa: E402

GSET = gm.Setting("rollback", 1, 20, 2, 1.0, 1e-3)
GROW = gm.AuditRow(GSET, "correct", 0.0, 0.0, False)
V("kind must be one of", gm.worst_case_instance, 10, 2, 1, "magic", 0.5)
V("path must be one of", gm.Setting, "magic", 1, 20, 2, 1.0, 1e-3)
V(r"k must lie in \[1, 20\]", gm.Setting, "rollback", 1, 20, 30, 1.0, 1e-3)
T("n_sources must be an integer", gm.Setting, "rollback", 1.0, 20, 2, 1.0, 1e-3)
T("setting must be a Setting", gm.AuditRow, "setting", "correct", 0.0, 0.0, False)
V("variant must be one of", gm.AuditRow, GSET, "magic", 0.0, 0.0, False)
T("setting must be a Setting", gm.competitor_means, "setting")
V("n_grid must be >= 2", gm.competitor_means, GSET, 1)
V("variant must be one of", gm.audit_setting, GSET, "magic")
T("setting must be a Setting", gm.audit_variants, "setting", [("correct", True)])
T("variants must be a non-empty list", gm.audit_variants, GSET, [])
T("variants must be a non-empty list", gm.audit_variants, GSET, ["correct"])
V("variant must be one of", gm.audit_variants, GSET, [("correct", True), ("magic", False)])
T("arm_audit must be True or False", gm.audit_variants, GSET, [("correct", 1)])
V(r"rows must be \(R, m\) and sigmas \(m,\)", gm.released_arm_distributions, [[0.1, 0.2]], [1.0, 0.0, 0.0])
V("sigmas must be >= 0", gm.released_arm_distributions, [[0.1, 0.2]], [1.0, -1.0])
V("rows must be finite", gm.released_arm_distributions, [[0.1, np.nan]], [1.0, 1.0])
T("s must be a Setting", gm.path_label, "rollback")
V("variant must be one of", gm.audit_matrix, [GSET], "magic")
T("settings entry must be a Setting", gm.audit_matrix, [GSET, "rollback"])
T("progress must be callable", gm.audit_matrix, [GSET], progress=3)
V("rows and broken_rows must have one length", gm.summarize, [GROW], [])
T("rows and broken_rows entries must be an AuditRow", gm.summarize, [GROW], ["row"])

# --- batched UCB-VI (chapter B13) and the bonus interface (chapter B6)
from bandit_unlearning.experiments import rl_batch  # noqa: E402
from bandit_unlearning.rl import batch as rbatch  # noqa: E402

T("bonus_kind must be one of", ucbvi.UCBVIConfig, 2, 2, 3, 10, bonus_kind=1)
V("bonus_kind must be one of", ucbvi.UCBVIConfig, 2, 2, 3, 10, bonus_kind="bernstein-ish")
V(r"h must be an integer in \[0, 3\]|h must lie in|h must be <= 3", CONFIG.step_bonus, 4, np.ones((3, 2)))
T("h must be an integer", CONFIG.step_bonus, 1.0, np.ones((3, 2)))
T("n must be an array of numbers", CONFIG.step_bonus, 0, "n")
T("n must be an array of numbers", ucbvi.paper_bonus, "n", 1.0, 0.0, 3, 2, 1.0)
V("H must be >= 1", ucbvi.paper_bonus, np.ones(2), 1.0, 0.0, 0, 2, 1.0)
_BCFG = [ucbvi.UCBVIConfig.of(RIVER, 4), ucbvi.UCBVIConfig.of(RIVER, 4, sigma=1.0)]
T("mdp must be a TabularMDP", rbatch.run_batch, "mdp", _BCFG, [0, 1], [0, 1])
T("configs must be a list or tuple", rbatch.run_batch, RIVER, _BCFG[0], [0], [0])
V("configs must hold at least one run", rbatch.run_batch, RIVER, [], [], [])
V("one entry per run", rbatch.run_batch, RIVER, _BCFG, [0], [0, 1])
V("the same T", rbatch.run_batch, RIVER, [_BCFG[0], ucbvi.UCBVIConfig.of(RIVER, 5)], [0, 1], [0, 1])
V("the MDP's S, A, H", rbatch.run_batch, RIVER, [ucbvi.UCBVIConfig(3, 2, 5, 4)], [0], [0])
T("configs\\[i\\] must be a UCBVIConfig", rbatch.run_batch, RIVER, ["c"], [0], [0])
V("seed must lie in", rbatch.run_batch, RIVER, _BCFG, [0, -1], [0, 1])
T("rngs\\[i\\]", rbatch.run_batch, RIVER, _BCFG, [0, 1], [0, "rng"])
V("reward_noise must be one of", rbatch.run_batch, RIVER, _BCFG, [0, 1], [0, 1], reward_noise="x")
T(
    "keep_trajectories must be True or False",
    rbatch.run_batch,
    RIVER,
    _BCFG,
    [0, 1],
    [0, 1],
    keep_trajectories=1,
)
T(
    "configs must be",
    rbatch.BatchRun,
    np.zeros((1, 4, 4, 3), np.int8),
    np.zeros((1, 120)),
    np.zeros((1, 120)),
    [_BCFG[0]],
    (0,),
)
V(
    "a batch of 1 configs needs",
    rbatch.BatchRun,
    np.zeros((2, 4, 4, 3), np.int8),
    np.zeros((1, 120)),
    np.zeros((1, 120)),
    (_BCFG[0],),
    (0,),
)
T("mdp must be a TabularMDP", rl_batch.stable_regret_curves, None, 4, [1.0], [0], [0], [1.0])
V("one entry per run", rl_batch.stable_regret_curves, RIVER, 4, [1.0, 2.0], [0, 1], [0, 1], [1.0])
V("rhos must be", rl_batch.stable_regret_curves, RIVER, 4, [0.0], [0], [0], [1.0])
V("n_points must be >= 1", rl_batch.stable_regret_curves, RIVER, 4, [1.0], [0], [0], [1.0], n_points=0)
V(
    "calibration must be one of",
    rl_batch.stable_regret_curves,
    RIVER,
    4,
    [1.0],
    [0],
    [0],
    [1.0],
    calibration="x",
)
T("mdp must be a TabularMDP", rl_batch.unlearning_cost, "m", 8, 1.0, 1, 1, 0)
V("T must be >= 2", rl_batch.unlearning_cost, RIVER, 1, 1.0, 1, 1, 0)
V("n_runs must be >= 1", rl_batch.unlearning_cost, RIVER, 8, 1.0, 0, 1, 0)
V("rho must be finite and > 0", rl_batch.unlearning_cost, RIVER, 8, 0.0, 1, 1, 0)
T("rng", rl_batch.unlearning_cost, RIVER, 8, 1.0, 1, 1, "rng")


# --- bandit_unlearning.mab.data.restore_readonly (the __setstate__ of frozen dataclasses)
T("state must be a dict", data.restore_readonly, SimpleNamespace(), [("a", 1)])

# --- bandit_unlearning.rl.bernstein (chapter B7c)
from bandit_unlearning.rl import bernstein  # noqa: E402

_NB_CONFIG = ucbvi.UCBVIConfig(2, 2, 2, 10, bonus_kind="noisy_bernstein")
V("eps must be", bernstein.NoisyBernsteinConstants, 1.0, 1.0, -1.0, 0.0, 1.0, 1.0)
V("L_kl must be", bernstein.NoisyBernsteinConstants, 1.0, 1.0, 1.0, 0.0, 1.0, -1.0)
V("c must be finite and >= 0", bernstein.kl_upper, np.array([0.5]), np.array([-1.0]))
V("delta must lie strictly between 0 and 1", bernstein.peeling_level, 0.0, 10)
V("n_max must be", bernstein.peeling_level, 0.1, 0)
T("config must be a UCBVIConfig", bernstein.noisy_bernstein_constants, None)
T("noise_correction must be True or False", bernstein.noisy_bernstein_constants, _NB_CONFIG, 1)
V(
    "config.bonus_kind must be 'noisy_bernstein'",
    bernstein.noisy_bernstein_plan,
    np.zeros((2, 4)),
    np.zeros((2, 4)),
    np.zeros((2, 4, 2)),
    ucbvi.UCBVIConfig(2, 2, 2, 10),
)
V(
    "N, R must have shape",
    bernstein.noisy_bernstein_plan,
    np.zeros((2, 3)),
    np.zeros((2, 4)),
    np.zeros((2, 4, 2)),
    _NB_CONFIG,
)
V("u must be a finite vector", bernstein.noisy_bernstein_values, np.zeros(3), _NB_CONFIG)
T(
    "constants must be a NoisyBernsteinConstants",
    bernstein.noisy_bernstein_values,
    np.zeros(_NB_CONFIG.layout.d),
    _NB_CONFIG,
    True,
    "k",
)
V("has no step bonus of the counts alone", _NB_CONFIG.step_bonus, 0, np.ones(2))
V(
    "plans with its own value iteration",
    rbatch.run_batch,
    rmdp.TabularMDP(np.full((2, 2, 2), 0.5), np.zeros((2, 2)), np.array([1.0, 0.0]), 2),
    [_NB_CONFIG],
    [0],
    [None],
)
# --- look-alike numbers (see tests/test_fuzz_inputs.py for the fuzzing pass over every numeric argument)
from decimal import Decimal  # noqa: E402
from fractions import Fraction  # noqa: E402

from bandit_unlearning.privacy import gaussian as pgauss  # noqa: E402

T("x must be a real number, got Fraction", checks.check_real, Fraction(1, 2), "x")
T("x must be a real number, got Decimal", checks.as_real, Decimal("0.5"), "x")
T("complex numbers are refused, not truncated", checks.check_real, 0.5 + 0j, "x")
T("masked arrays are refused", checks.check_real, np.ma.masked_array(0.5, mask=True), "x")
T("x must be a real number, got bool", checks.as_real, np.True_, "x")
T("n must be an integer, got MaskedArray", checks.check_int, np.ma.masked_array(3, mask=False), "n")
T("n must be an integer, got float64", checks.check_int, np.array(3.0), "n")
T("x must not be a masked array", checks.as_array, np.ma.masked_array([1.0, 2.0], mask=[True, False]), "x")
T("x must be an integer, a real number or an array of numbers, not booleans", checks.as_array, True, "x")
T("x must hold real numbers, not booleans", checks.check_real_array, [True, False], "x")
T("x must hold real numbers, not booleans", checks.as_real_array, np.array([True]), "x")
T("x must be an array of numbers", checks.as_real_array, [1 + 2j], "x")
T("x must be an array of numbers", checks.check_real_array, [Fraction(1, 2)], "x")
V(r"n must be <= 100000000 \(bandit_unlearning.checks.SIZE_LIMIT", checks.check_count, 10**12, "n")
V("n must be >= 1", checks.check_count, np.uint8(0), "n", 1)
T("n must be an integer", checks.check_count, True, "n")
V("garnet.*the transition table: .* exceed the limit", envs.garnet, 500, 500, 2, 4, RNG)
V(r"horizon must be <= 100000000", envs.garnet, 3, 2, 2, 2**63, RNG)
V(r"T must be <= 100000000", stable.episode_users, 10**12, rng=RNG)
V(r"T must be <= 100000000", stable.population_users, RIVER, 10**12, seed=1)
V(r"n must be <= 100000000", lr.replayable_users, 10**12, seed=3)
V(r"T must be <= 100000000", ucbvi.run_ucbvi, RIVER, 10**12)
V(r"size must be <= 100000000", data.sample_statistics_distribution, MEANS, [0.2, 0.3, 0.5], 5, RNG, 10**12)
V(r"k must be <= 100000000", tree.draw_node_keys, RNG, 10**12)
V(r"d must be <= 100000000", tree.node_noise, KEY, 10**12, 1.0)
V("rho must be large enough for a finite sigma", stable.stable_sigma, 5e-324, 4, 16)
V(
    "cannot calibrate sigma in double precision for epsilon = 4.94066e-324",
    pgauss.analytic_gaussian_sigma,
    1.0,
    5e-324,
    5e-324,
)
V("is not a positive double", pgauss.analytic_gaussian_sigma, 1e308, 1e-3, 1e-300)
T("rewards must hold real numbers, not booleans", data.OfflineDataset, [0, 1], [True, False], 2)
T("request rewards must hold real numbers, not booleans", mech.DeletionRequest, [0], [True])
T("reward_sums must hold real numbers, not booleans", lcb.LCBState, [1, 1], [True, False], 0.1)
T("means must hold real numbers, not booleans", bandit.bandit_users, [True, False], 3)
T("mu1 must hold real numbers, not booleans", coupling.tv_gaussians, [True], [0.0], 1.0)
T(
    "outcomes_a must not be a masked array",
    audit.audit_epsilon,
    np.ma.masked_array([0, 1], mask=[1, 0]),
    [0, 1],
    0.01,
)
T("theta must be an array of numbers", linucb.linear_users, [["a", "b"]], 3)
T(
    "user must be an integer key, not a masked array",
    rusers.rollout,
    RIVER,
    PI,
    np.ma.masked_array(0, mask=True),
)
T("sigma must be a real number", linucb.gram_shift, "1", 2, 8, 2, 0.01)

# --- bandit_unlearning.literate (the decorator that writes a class over several cells)
from bandit_unlearning.literate import add_to_class  # noqa: E402

T("cls must be a class", add_to_class, "LightTree")
T("cls must be a class", add_to_class, 3)

from bandit_unlearning.literate import sections_from  # noqa: E402

T("twin must be callable", sections_from, "BinaryTree.leaf")
V("has no numpydoc section", sections_from, len)

from bandit_unlearning.literate import FieldView  # noqa: E402

T("doc must be a str", FieldView, 3)
T("attribute must be a str or None", FieldView, "the arm labels", 3)
V(r"delta must lie in \(0, 1\)", linucb.vector_bound, 1.0, 2, 8, 2, 0.0)


# ======================================================================= the parametrized test
@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{_label(c)}" for i, c in enumerate(CASES)])
def test_bad_input_is_refused_and_changes_nothing(case):
    run_case(case)


# ------------------------------------------------------------------------ the command line (exit code 2)
def _cli(*args):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "bandit_unlearning", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_refuses_an_existing_file_as_out_without_a_traceback(tmp_path):
    target = tmp_path / "results"
    target.write_text("a file, not a folder")
    done = _cli("reproduce", "lemma31", "--scale", "quick", "--out", str(target))
    assert done.returncode == 2 and "error: --out must be a folder" in done.stderr
    assert "Traceback" not in done.stderr and target.read_text() == "a file, not a folder"


def test_cli_refuses_a_negative_seed_before_creating_the_folder(tmp_path):
    target = tmp_path / "new"
    done = _cli("reproduce", "lemma31", "--scale", "quick", "--seed", "-1", "--out", str(target))
    assert done.returncode == 2 and "--seed must be >= 0" in done.stderr
    assert not target.exists()


# ------------------------------------------------------------ validators never freeze the caller's arrays
def _accepting_calls():
    """Successful calls that validate arrays the caller still owns: (name, call, the caller's arrays)."""
    arms, rewards = np.array([0, 1, 0]), np.array([1.0, 0.0, 1.0])
    counts, sums, pair_means, pair_counts = (
        np.array([3, 2]),
        np.array([1.0, 1.0]),
        MEANS[:2] + 0,
        np.array([20, 20]),
    )
    means2 = np.array([[0.7, 0.5], [0.3, 0.5]])
    P, R, init = np.full((2, 2, 2), 0.5), np.zeros((2, 2)), np.array([1.0, 0.0])
    idx, vals, x = np.array([1, 2]), np.array([1.0, 2.0]), np.zeros(4)
    st, ac, rw = np.zeros(5, int), np.zeros(4, int), np.zeros(4)
    u, policy = np.zeros(LAYOUT.d), np.zeros((4, 3), dtype=np.int64)
    return [
        ("OfflineDataset", lambda: data.OfflineDataset(arms, rewards, 2), [arms, rewards]),
        ("LCBState", lambda: lcb.LCBState(counts, sums, 0.1), [counts, sums]),
        ("DeletionRequest", lambda: mech.DeletionRequest(arms, rewards), [arms, rewards]),
        ("ImitationState", lambda: im.ImitationState(counts), [counts]),
        (
            "TwoPointPair",
            lambda: lb.TwoPointPair("fixed", means2, 0.2, 5, 40, counts=pair_counts),
            [means2, pair_counts],
        ),
        ("BanditUser", lambda: bandit.BanditUser(pair_means), [pair_means]),
        ("TabularMDP", lambda: rmdp.TabularMDP(P, R, init, 3), [P, R, init]),
        ("SparseStatistic", lambda: tree.statistic_sparse(tree.SparseStatistic(idx, vals), 4), [idx, vals]),
        ("statistic_dense", lambda: tree.statistic_dense(x, 4), [x]),
        ("Trajectory", lambda: rusers.Trajectory(st, ac, rw), [st, ac, rw]),
        ("lcb_scores", lambda: lcb.lcb_scores(counts, sums, 0.1), [counts, sums]),
        ("plan_from_statistics", lambda: ucbvi.plan_from_statistics(u, CONFIG), [u]),
        ("PolicyUpdate", lambda: UPDATE(u, 1, None), [u]),
        ("EpisodeOracle", lambda: ORACLE(stable.EpisodeUser(0), 1, policy), [policy]),
        ("check_int_array", lambda: checks.check_int_array(arms, "a"), [arms]),
        ("check_real_array", lambda: checks.check_real_array(rewards, "r"), [rewards]),
    ]


@pytest.mark.parametrize(
    "name, call, arrays", _accepting_calls(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_accepted_input_is_neither_frozen_nor_modified(name, call, arrays):
    before = snapshot(arrays)
    call()
    assert snapshot(arrays) == before, f"{name} changed (or froze) the caller's arrays"
