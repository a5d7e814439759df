# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.protocol
# ---

# %% [markdown]
# # Start here — a tour: forgetting one person's data, two ways
#
# *Ten minutes of reading, a few seconds of running.  Nothing here is new: every call is explained
# in a later chapter, named at the end of each section.*
#
# **What unlearning is.** A model was trained on data from many people; one of them asks to be
# forgotten.  Deleting their rows from the database is easy, but the model was computed from those
# rows and may still carry them.  *Machine unlearning* is an update of the model after which it looks
# as if it had never seen that person's data.
#
# **Why retraining is the reference.** The one update that certainly forgets is to train again from
# scratch on what remains.  It is correct by definition, and usually too slow to run for every
# request.  So an unlearning method is judged against that reference world: after the deletion, what
# the model releases must be distributed **like the output of retraining** — either exactly
# (Paper B), or up to a small, stated slack $(\varepsilon, \delta)$ (Paper A).  The comparison is
# between *distributions*, because both methods are randomised: the noise is what hides the deleted
# rows.
#
# This tour serves one deletion each way, on a real log: the Open Bandit Dataset's small sample
# (10,000 impressions of 80 fashion items, shown at random, with the click as the reward;
# `data/README.md` gives its source and licence).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import fit_lcb
from bandit_unlearning.mab.model import LCBModel

OBD = os.path.join(os.path.dirname(os.path.abspath("__file__")), "..", "data", "obd_random_all.csv")
rng = np.random.default_rng(20261201)  # a seed, so that this page's numbers can be checked (an opt-in)
arms, position, clicks = (np.loadtxt(OBD, delimiter=",", skiprows=1, usecols=c, dtype=t)
                          for c, t in ((1, str), (2, int), (3, float)))

# %% [markdown]
# ## 1. Paper A: an offline bandit forgets five impressions, within $(\varepsilon, \delta)$
#
# An **offline bandit** learns which arm (here: which item) to recommend from a fixed log of
# (arm, reward) rows.  Paper A's learner is the pessimistic **LCB** rule: for each arm the mean
# reward minus a confidence radius, and the arm with the best score is the released *policy*.
#
# `LCBModel` keeps the log's per-arm counts and reward sums, and answers deletion requests.  With
# `method="adaptive"` it chooses, request by request, between Paper A's two mechanisms:
#
# - **rollback** — subtract the deleted rows from the statistic: the statistic is then exactly what
#   retraining would compute;
# - **Gaussian** — keep the rows for now and release a *noised* policy whose law is within
#   $(\varepsilon, \delta)$ of retraining's; the rows are rolled back later, before the privacy budget
#   runs out.
#
# We fit it at a target $(\varepsilon, \delta) = (2, 10^{-5})$, with noise $\sigma$ equal to the
# served item's confidence radius.

# %%
plain = LCBModel.fit(arms, clicks)                      # to read off the served item's radius
sigma = float(plain.statistics.radii[plain.policy_index])
model = LCBModel.fit(arms, clicks, method="adaptive", epsilon=2.0, delta=1e-5, sigma=sigma, rng=rng)
print(f"{model.statistics.n} rows, {model.statistics.n_arms} items; policy: item {model.policy}; "
      f"sigma = {sigma:.3f}")

# %% [markdown]
# A person asks that their five impressions of the recommended item be forgotten (the log has no
# user ids, so a "person" here is five rows; `LCBModel` also deletes by user id when it has them).

# %%
served_rows = np.flatnonzero(arms == model.policy)
record = model.delete(rows=served_rows[:5].tolist())
print(f"request {record.request_id}: {len(record.rows)} rows, mechanism {record.method!r}, "
      f"new policy: item {record.policy}, composed mu so far {record.mu_max:.3f} (budget {model.mu_budget:.3f})")

# %% [markdown]
# **Checking it against retraining.** The reference world refits the LCB learner on the 9,995 rows
# that remain.  Whatever mechanism the model chose, the statistic it keeps is the refit's (a request
# served by the Gaussian branch is *pending*: its rows are kept apart, to be rolled back later, and
# only ever enter a release under noise); with nothing pending, the released policy is the refit's
# arm; and the privacy accountant stays within the budget the model was fitted with.

# %%
keep = np.ones(arms.size, dtype=bool)
keep[list(record.rows)] = False
index = {label: i for i, label in enumerate(model.labels)}
refit = fit_lcb(OfflineDataset(np.array([index[a] for a in arms[keep]]), clicks[keep], len(model.labels)),
                tau=model.tau)
print(f"refit on {refit.counts.sum()} rows: item {model.labels[refit.arm]}; pending requests: {model.pending}")
assert np.array_equal(model.statistics.counts, refit.counts)
assert np.allclose(model.statistics.reward_sums, refit.reward_sums, atol=1e-9)
assert record.mu_max <= model.mu_budget
if not model.pending:
    assert model.policy == model.labels[refit.arm]

# %% [markdown]
# **What $(\varepsilon, \delta)$ means for the person who asked.** Take anything an observer could
# conclude from what the model releases after the deletion — "item 14 is recommended", or any other
# event $A$.  Its probability in our world and in the retrained world obey
# $P[A \mid \text{unlearned}] \le e^{\varepsilon} P[A \mid \text{retrained}] + \delta$.  With
# $\varepsilon = 2$, $\delta = 10^{-5}$: no conclusion becomes more than $e^2 \approx 7.4$ times
# likelier because the rows were once in the log, except with probability $10^{-5}$.  That is a
# real but finite promise; a smaller $\varepsilon$ needs more noise (worse recommendations) or more
# rollbacks (more computation).  After a rollback, the promise is total: the statistic *is* the
# retrained one.
#
# *Read next:* A1 (the data and the LCB learner), A2 (the two mechanisms and their sensitivity), A3a–A3d (the
# adaptive rule, its exact audit), A9a–A9b (a model that serves many requests over its lifetime).
#
# ## 2. Paper B: exact unlearning by coupling
#
# Paper B asks for more: after the deletion, the model's law must be **exactly** the retrained one —
# no $\varepsilon$, no $\delta$.  Its learners keep noisy sums of per-user statistics, and serve a
# deletion with a **maximal coupling**: given the released noisy value $y \sim \mathcal N(S, \sigma^2 I)$
# of a sum $S$ that included the person, and the sum $S'$ without them, keep $y$ with probability
# $\min\{1, \varphi_{S'}(y)/\varphi_S(y)\}$, otherwise reflect it through the midpoint,
# $y' = S + S' - y$.  Then $y' \sim \mathcal N(S', \sigma^2 I)$ *exactly* — what retraining with fresh
# noise would have released — and $y$ is kept (nothing recomputed) with the largest probability
# possible, $1 - \mathrm{TV}$.  Only when it is not kept does the learner retrain from that point.
#
# On the log: the statistic is the click count at each of the three display positions; the person is
# one clicked impression.

# %%
from bandit_unlearning.privacy.coupling import reflection_coupling, tv_gaussians  # noqa: E402

S = np.array([clicks[position == p].sum() for p in (1, 2, 3)])
person = int(np.flatnonzero(clicks == 1)[0])
S_without = S - clicks[person] * (np.arange(1, 4) == position[person])
sigma_b = 1.0
print(f"clicks per position S = {S.tolist()}; without the person S' = {S_without.tolist()}; "
      f"TV = {float(tv_gaussians(S, S_without, sigma_b)):.3f}")

# %% [markdown]
# **Checking exactness.** One coupling step, repeated independently $n = 200{,}000$ times: the
# deleted-world values $y'$ must be $\mathcal N(S', \sigma^2 I)$.  A Kolmogorov–Smirnov test of
# each coordinate against its normal law, at the level $10^{-6}$ (a correct coupling fails with
# probability below $3 \cdot 10^{-6}$); the kept fraction must match $1 - \mathrm{TV}$ within six
# standard errors.  **The check can fail:** the "lazy" variant that keeps $y$ (no unlearning at
# all) is rejected by the same test.

# %%
from scipy import stats  # noqa: E402

n = 200_000
y = S + sigma_b * rng.standard_normal((n, 3))
y_new, kept = reflection_coupling(y, np.broadcast_to(S, y.shape), np.broadcast_to(S_without, y.shape), sigma_b, rng)


def exact_law(values):
    return min(stats.kstest(values[:, j], "norm", args=(S_without[j], sigma_b)).pvalue for j in range(3))


tv = float(tv_gaussians(S, S_without, sigma_b))
print(f"coupling: smallest KS p-value {exact_law(y_new):.3g}, kept {kept.mean():.4f} (1 - TV = {1 - tv:.4f})")
print(f"lazy variant (keep y): smallest KS p-value {exact_law(y):.3g}")
assert exact_law(y_new) > 1e-6 and abs(kept.mean() - (1 - tv)) < 6 * np.sqrt(tv * (1 - tv) / n)
assert exact_law(y) < 1e-6

# %% [markdown]
# **What exactness means for the person who asked.** There is no event to bound: every question an
# observer can ask of the model after the deletion has exactly the answer distribution it would have
# had if their impression had never been logged.  What the coupling saves is computation — here
# $1 - \mathrm{TV} \approx 0.6$ of deletions keep the released value and recompute nothing.  (What
# it does not hide: *whether* a deletion retrained depends on the deleted data, so the time a
# deletion takes is not covered by the guarantee; chapter B8 discusses it.)
#
# The figure shows the step: the released values (grey), the coupled ones (blue), and the law of
# retraining they must follow (black) along the coordinate that changed.

# %%
j = int(position[person]) - 1
grid = np.linspace(S[j] - 4.5, S[j] + 3.5, 300)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.hist(y[:, j], bins=120, density=True, color="0.75", label=f"released $y$ (sum $S$ = {S[j]:.0f} with the person)")
ax.hist(y_new[:, j], bins=120, density=True, histtype="step", color="C0", lw=1.5,
        label="after the coupling, $y'$")
ax.plot(grid, stats.norm.pdf(grid, S_without[j], sigma_b), "k", lw=1,
        label=f"retraining's law $\\mathcal{{N}}(S', \\sigma^2)$, $S'$ = {S_without[j]:.0f}")
ax.set_xlabel(f"noisy click count at position {j + 1}")
ax.set_ylabel("density")
ax.set_title("Exact unlearning by maximal coupling (one node, $\\sigma$ = 1, n = 200,000)")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()

# %% [markdown]
# *Read next:* B1 (couplings), B2a–B2b (the binary tree that holds the noisy sums), B3a (exact
# unlearning of a whole run: `train` / `unlearn`), B7a–B8 (TV-stable UCB-VI and deleting from a
# reinforcement-learning run).

# %% [markdown]
# ## 3. One protocol for every learner
#
# The two papers' learners differ in everything but their life cycle, so the package gives them one:
# training returns an **immutable state**; `unlearn(state, request, *, options=None, rng=None)`
# returns `(new_state, record)` and never changes `state`; `verify(state)` replays a state and raises
# `ValueError` at the first inconsistency, for the learners that can be replayed.  What a request
# deletes is a small typed object: Paper A's `DeletionRequest` (the deleted rows themselves),
# `DeleteStep(t)`, `DeleteSteps(steps)` or `DeleteUser(user)` for a run of Paper B.  How a learner
# unlearns is said one way, in one `options=` object of the learner's own type (`UnlearnOptions` for
# LCB, `ExactOptions` for a run; `None` takes the learner's defaults where it has them).  The record is
# the learner's own (`UnlearnResult`, `UnlearnRecord`, ...): it says which guarantee the new state
# carries and why a branch was taken.
#
# `unlearn` and `verify` are generic functions: each learner's chapter registers its implementation
# for its state type (and request types) with `register_unlearn` / `register_verify`, next to the
# algorithm it implements, so this module knows no learner.  A registration is looked up by the
# state's and the request's types (subclasses included); when none is found, the modules that
# register implementations (`IMPLEMENTATIONS`) are imported and the lookup is tried again, so
# `unlearn` works whichever module the state came from.

# %% tags=["export"]
"""One unlearning protocol for every unlearnable learner of both papers (tour, section 3).

- training returns an immutable state; ``unlearn(state, request, *, options=None, rng=None)`` returns
  ``(new_state, record)`` and leaves ``state`` unchanged; ``verify(state)`` replays a state where a
  check exists (``ValueError`` at the first inconsistency);
- requests: Paper A's ``DeletionRequest`` (``bandit_unlearning.mab.mechanisms``: the deleted rows),
  ``DeleteStep``, ``DeleteSteps`` and ``DeleteUser`` (a run of Paper B, ``bandit_unlearning.exact``),
  and a learner's own (``DeletionCounts``, ``ContextualRequest``, ``DeleteRows``);
- options: one ``options=`` object of the learner's own type, ``None`` for its defaults;
- ``register_unlearn`` / ``register_verify``: how a learner's module adds its implementation;
  ``implementations()`` lists the registered (state, request) pairs.
"""
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from bandit_unlearning.checks import check_callable, check_instance, check_int

IMPLEMENTATIONS = ("mab.unlearn", "mab.imitation", "mab.model", "mab.contextual", "mab.contextual_model", "exact.learner",
                   "exact.registry")
_UNLEARN: dict = {}          # (state type, request type) -> implementation
_VERIFY: dict = {}           # state type -> check


@dataclass(frozen=True)
class DeleteStep:
    """Delete the user of step ``t`` (1-based) of a run: Paper B's Algorithm 3.  ``t`` is an integer;
    the run checks that it names one of its steps ``1 .. T``.

    Parameters
    ----------
    t : int
        The step whose user is deleted, ``1 .. T`` of the run it is served on.
    """

    t: int

    def __post_init__(self):
        object.__setattr__(self, "t", check_int(self.t, "t"))


@dataclass(frozen=True)
class DeleteSteps:
    """Delete the users of several steps of a run in one coupling pass (chapter B11).  ``steps``: a
    non-empty sequence of integers; the run checks that they are distinct steps ``1 .. T``.

    Parameters
    ----------
    steps : sequence of int
        The distinct steps ``1 .. T`` whose users are deleted together (stored as a tuple of ints).

    Raises
    ------
    TypeError
        When ``steps`` is not a sequence (a string included) or holds a non-integer.
    ValueError
        When ``steps`` is empty.
    """

    steps: tuple

    def __post_init__(self):
        if isinstance(self.steps, (str, bytes)) or not hasattr(self.steps, "__iter__"):
            raise TypeError(f"steps must be a sequence of step numbers, got {type(self.steps).__name__}")
        steps = tuple(check_int(t, "step") for t in self.steps)
        if not steps:
            raise ValueError("steps must name at least one step")
        object.__setattr__(self, "steps", steps)


@dataclass(frozen=True, eq=False)
class DeleteUser:
    """Delete every step of ``user`` from a run (chapter B11).  ``key``: how two users are the same
    person (``key(u) == key(user)``, e.g. ``lambda u: u.key``); ``None`` compares with ``==``.

    Parameters
    ----------
    user : object
        The user to forget: every step whose user is the same person is deleted.
    key : callable or None
        ``key(u)`` identifies a person; ``None`` compares users with ``==``.
    """

    user: Any
    key: Callable | None = None

    def __post_init__(self):
        if self.key is not None:
            check_callable(self.key, "key")

# %% [markdown]
# **The registry.** Each learner registers how it serves a request on its state, and optionally how
# its state is replayed and checked; `unlearn` and `verify` look the pair up by type, loading the
# implementations on first use, so one call serves every learner of both papers.

# %% tags=["export"]
def register_unlearn(state_type: type, request_type: type):
    """Decorator: register ``fn(state, request, *, options, rng) -> (new_state, record)`` as the way
    ``unlearn`` serves a ``request_type`` on a ``state_type`` (a later registration replaces one).

    Parameters
    ----------
    state_type : type
        The learner state the implementation serves (looked up by exact type).
    request_type : type
        The request it serves (``DeletionRequest``, ``DeleteStep``...).

    Returns
    -------
    callable
        A decorator that records ``fn`` and returns it unchanged.
    """
    check_instance(state_type, type, "state_type"), check_instance(request_type, type, "request_type")

    def add(fn):
        _UNLEARN[(state_type, request_type)] = check_callable(fn, "fn")
        return fn
    return add


def register_verify(state_type: type):
    """Decorator: register ``fn(state) -> None`` (raising ``ValueError``) as ``verify`` for ``state_type``.

    Parameters
    ----------
    state_type : type
        The learner state the check applies to (looked up by exact type).

    Returns
    -------
    callable
        A decorator that records ``fn`` and returns it unchanged.
    """
    check_instance(state_type, type, "state_type")

    def add(fn):
        _VERIFY[state_type] = check_callable(fn, "fn")
        return fn
    return add


def _load_implementations() -> None:
    """Import the modules of ``IMPLEMENTATIONS`` (names relative to this module's package, so a copy of
    the package under another name loads its own); a module absent from a partial copy is skipped."""
    package = __name__.rpartition(".")[0] or "bandit_unlearning"
    for name in IMPLEMENTATIONS:
        try:
            importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{package}.{name}":
                raise


def _find(table: dict, key_of):
    found = key_of(table)
    if found is None:                                 # a miss: load the implementing modules, look again
        _load_implementations()
        found = key_of(table)
    return found


def _unlearn_key(state, request):
    return lambda table: next((table[(s, r)] for s in type(state).__mro__ for r in type(request).__mro__
                               if (s, r) in table), None)


def unlearn(state, request, *, options=None, rng=None):
    """Serve deletion ``request`` on the learner's immutable ``state``.

    Parameters
    ----------
    state : a trained learner's state (``LCBState``, ``ImitationState``, a run of Paper B, ...).
    request : what to delete (``DeletionRequest``, ``DeleteStep``, ``DeleteSteps``, ``DeleteUser``).
    options : the learner's options object (``UnlearnOptions``, ``ExactOptions``), or ``None`` for its
        defaults (refused by a learner that has none).
    rng : ``numpy.random.Generator``, an int seed (an opt-in: the seed is then key material) or
        ``None`` (fresh OS entropy).

    Returns
    -------
    (new_state, record) : the state after deletion and the learner's record of what was done;
        ``state`` itself is unchanged.  ``TypeError`` names the pairs served for an unknown pair.
    """
    fn = _find(_UNLEARN, _unlearn_key(state, request))
    if fn is None:
        served = sorted(f"{r.__name__}" for s, r in _UNLEARN if isinstance(state, s))
        raise TypeError(f"no unlearning of a {type(request).__name__} request on a {type(state).__name__} state"
                        + (f" (it serves {', '.join(served)})" if served else " (not an unlearnable state)"))
    return fn(state, request, options=options, rng=rng)


# %% tags=["export"]
def verify(state) -> None:
    """Replay ``state`` and raise ``ValueError`` at the first inconsistency.

    Parameters
    ----------
    state : a learner's state with a registered check (a run of Paper B).

    Returns
    -------
    None.  ``TypeError`` if no check exists for the state's type.
    """
    fn = _find(_VERIFY, lambda table: next((table[s] for s in type(state).__mro__ if s in table), None))
    if fn is None:
        raise TypeError(f"no check exists for a {type(state).__name__} state")
    fn(state)


def implementations() -> tuple:
    """Every registered ``(state type, request type)`` pair of ``unlearn``, the modules loaded first.

    Returns
    -------
    tuple of (type, type), sorted by name.
    """
    _load_implementations()
    return tuple(sorted(_UNLEARN, key=lambda p: (p[0].__name__, p[1].__name__)))


# %% [markdown]
# The same two calls serve both papers.  Paper A: the LCB learner's stored statistic forgets three
# rows of item 0 by rollback (exact; the new state is the statistic of what remains, the record the
# release).  Paper B: a UCB bandit run of 200 steps forgets its step 5 by maximal coupling, and the
# new run replays exactly.  (This page's kernel re-imports the package's `unlearn` and `verify`: the
# learners' modules register with those, not with the copies the cell above defined here.)

# %%
from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner  # noqa: E402
from bandit_unlearning.exact.learner import train  # noqa: E402
from bandit_unlearning.mab.mechanisms import DeletionRequest  # noqa: E402
from bandit_unlearning.mab.unlearn import UnlearnOptions  # noqa: E402
from bandit_unlearning.protocol import DeleteStep, unlearn, verify  # noqa: E402,F811

state = fit_lcb(OfflineDataset(np.array([0, 0, 0, 0, 1, 1, 1]), np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]), 2))
after, release = unlearn(state, DeletionRequest([0, 0, 0], [1.0, 1.0, 0.0]), options=UnlearnOptions(method="rollback"))
print("Paper A:", type(after).__name__, after.counts.tolist(), "| record:", type(release).__name__,
      release.branch, "| input unchanged:", state.counts.tolist())

run = train(ucb_bandit_learner(n_arms=2, sigma=4.0), bandit_users([0.6, 0.4], 200, seed=1), np.random.default_rng(1))
new_run, record = unlearn(run, DeleteStep(5), rng=np.random.default_rng(2))
verify(new_run)
print("Paper B:", type(new_run).__name__, sorted(new_run.deleted), "| record:", type(record).__name__,
      "| verified | input unchanged:", sorted(run.deleted))
assert after.counts.tolist() == [1, 3] and state.counts.tolist() == [4, 3] and run.deleted == frozenset()

# %% [markdown]
# ## 4. Where to go from here
#
# - **As a tutorial:** the index lists the chapters in reading order, with the notation table.
# - **As a lab notebook:** every chapter ends its claims in an `assert` and shows the same check
#   rejecting a broken variant; **Where is Theorem X?** on the index maps every numbered result of
#   both papers to the cell that checks it, and the errata page lists where a paper is wrong.
# - **As a library:** the package's modules depend on numpy and scipy only;
#   `python -m bandit_unlearning copy MODULE DEST` copies one with exactly the files it needs.
