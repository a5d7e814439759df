# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.exact.registry
# ---

# %% [markdown]
# # Chapter B11 — Deleting a user, not a step
#
# *Paper B's Algorithm 3 deletes the user of one step $t$.  A person who came back several times is
# several steps; a deletion request names the person.  This chapter exports
# `bandit_unlearning.exact.registry`: `user_steps` (where a user is in a run), the protocol's
# `unlearn(run, DeleteSteps(steps))` and `unlearn(run, DeleteUser(user))` (registered here: delete every
# step of a user in **one** coupling pass, retraining at most once) and
# `verify_unlearned` (check an unlearned run against the run it came from, replaying only what was
# recomputed).  It checks that the result is exactly a run trained with that user replaced by the
# dummy everywhere, and that a deletion never recomputes more than one retraining would.*
#
# **Why one pass.**  The obvious way — Algorithm 3 on $t_1$, then on $t_2$, … — is exact (each call
# keeps the hypothesis of the next), but each call may retrain from its own rejection: a user with
# $r$ steps costs up to $r$ retrainings, and the nodes high in the tree, which contain several of
# the steps, are coupled once per step.  Measured before this chapter changed (LinUCB, $\rho = 10$,
# a user with 5 steps): 2.2–2.6 $T$ steps recomputed, 1.28 s against 0.15 s for retraining.
#
# **Statement.** Let a run be trained on users $z_1, \dots, z_T$ (chapter B3a) and let user $u$ occupy
# the steps $t_1 < \dots < t_r$.  `unlearn(run, DeleteUser(u))` visits the complete tree nodes containing
# at least one $t_i$ in completion order (post-order: by last leaf, smaller first), couples each once
# and stops at the first rejection, at node $b$; it then reflects $b$, gives the ancestors of $b$
# ending at the same leaf fresh noise, and retrains steps $r_b + 1, \dots, T$ once ($r_b$ = last leaf of
# $b$) with the dummy at every $t_i$.  Its output is distributed exactly as `train` on the users with
# $z_{t_i}$ replaced by the dummy for every $i$; at most $T - t_1$ steps are recomputed (one
# retraining or less); for $r = 1$ it is Algorithm 3 bit for bit.  When the pass's worst case,
# tree work included, would exceed one training (`worst_case_cost`, a function of the request
# alone), `unlearn(run, DeleteUser(u))` retrains from scratch instead — exact as well (see **Cost**).
#
# **Derivation (the maximal-coupling argument of Algorithm 3, chapter B3a, for several leaves).**
# Order all complete nodes $b_1, b_2, \dots$ of the tree by completion.  Under training on a user
# sequence $Z$, the noisy value $\tilde v_{b_k}$ given the earlier ones is $N(v_{b_k}, \sigma^2 I)$,
# where the clean value $v_{b_k}$ is the sum of the leaves of $b_k$, and leaf $s$ is
# $x_s = EO_s(z_s; w_s)$ with $w_s$ a deterministic function of the noisy prefix sum at $s - 1$, i.e.
# of noisy values of nodes ending before $s$ — all earlier than $b_k$ in the order.  So the law of
# the run is the product of these conditionals (chain rule), for $Z$ and for $Z'$ ($Z$ with the
# dummy at $t_1..t_r$) alike, with clean values $v_b$ and $v'_b$.  The pass builds the new noisy values
# in the same order.  While every earlier node was kept, the earlier noisy values of the two worlds
# are equal, hence so are the models $w_s$ for every leaf $s$ of the current node; the leaves
# that are not deleted are then equal ($x'_s = x_s$), the deleted ones are $x'_{t_i} = EO_{t_i}(z'; w_{t_i})$
# at the recorded model, and $v'_b = v_b + \sum_{t_i \in b} (x'_{t_i} - x_{t_i})$.  A node holding no
# deleted step has $v'_b = v_b$: its two conditionals are equal and keeping it is the maximal coupling
# (probability 1, no draw).  A node holding some is kept with probability
# $\min(1, \varphi(\tilde v_b; v'_b)/\varphi(\tilde v_b; v_b))$, otherwise reflected — the maximal
# coupling of $N(v_b, \sigma^2 I)$ with $N(v'_b, \sigma^2 I)$ — so given the past its output is
# $N(v'_b, \sigma^2 I)$, the conditional of $Z'$.  After a rejection every later node is drawn
# afresh from the $Z'$ conditionals: the ancestors ending at the same leaf get fresh noise on their
# new clean value and steps $r_b + 1, \dots, T$ are retrained with $Z'$ (their deleted steps simply hold
# the dummy).  Every conditional of the output is that of training on $Z'$, hence so is the joint law
# (chain rule); the models are deterministic functions of the noisy values.  What makes one pass
# correct is the visiting order: a deleted leaf's new statistic is read at the model of the run
# only once every node ending before it was kept, so that model *is* the model of the new world.
#
# **Cost.**  Training runs $T$ steps: $T$ oracle calls, $T$ updates, $T$ leaves appended.  The pass
# couples $|\bigcup_i \mathrm{path}(t_i)| \le r\,(\lceil\log_2 T\rceil + 1)$ nodes (tree arithmetic: two
# clean sums and the node's noise; no oracle and no update call) and recomputes $T - r_b \le T - t_1$
# steps once, with one extra update (for $w_{r_b+1}$): at most $T - 1$ oracle calls and $T$ updates,
# i.e. never more learner work than one retraining.  The tree work of the pass is not free,
# though: counting a coupled node as $c$ steps (one clean sum, one node's noise and two sums on the
# shift's support; measured $c \approx 1.7$ for the UCB bandit, whose steps are tree work only, and
# $0.6$–$0.7$ for LinUCB and UCB-VI, so `NODE_COST` $= 2$), a rejection at the $k$-th coupled node
# costs $ck + (T - r_k)$, which exceeds $T$ when a user has many steps early in the run.
# `worst_case_cost(steps, T)` $= \max(c|\text{nodes}|, \max_k (ck + T - r_k))$ is that worst case;
# when it exceeds $T$, `DeleteSteps` retrains from
# scratch instead (`retrain_if_cheaper=True`, the default; `record.method == "retrain"`).  This is
# exact too — a fresh training on $Z'$ *is* the target law — and the choice depends on the request
# alone (its steps and $T$), never on the data or the noise, so mixing the two branches cannot bias
# the output.  (A choice made after seeing where the coupling rejected would not be exact: given an
# early rejection the pass's output has the old prefix, which a fresh training does not.)  For one
# step at $t \ge 5$ the worst case is at most $T$ (the $k$-th node of a path ends at
# $r_k \ge 2^{k-1}$), so it is the pass — Algorithm 3 itself; steps $1..4$ are retrained from scratch,
# one training, which is what the pass costs there in the worst case anyway (a rejection at leaf 1
# re-runs steps $2..T$).  The sequential loop could recompute up to
# $\sum_i (T - t_i)$ steps.  `benchmarks/deletion_cost.py` measures both against retraining
# (time ratios in the same run; see the closing note).
#
# **Checking a run.**  `verify` (chapter B3a) replays all $T$ steps, recomputes every earlier
# noisy prefix sum from the tree (the light tree regenerates their noise) and sums every node's
# leaves densely: measured about one to three trainings (on Taxi, $T = 16$: 90 s).
# `verify_unlearned(before, after, record)` checks a deletion against the run it came from instead:
# the kept prefix by comparison (users, models, sparse leaves, node keys or noisy values), the
# deleted leaves against the dummy's statistics, the rejected node against the reflection, and
# replays only the $T - r_b$ recomputed steps — no more than the deletion itself recomputed.

# %%
import time

import numpy as np

from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import ExactOptions, same_model, train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, DeleteSteps, DeleteUser, unlearn, verify
from bandit_unlearning.exact.tree import BinaryTree
from bandit_unlearning.experiments.exactness import battery

# %% tags=["export"]
"""Deleting a user, not a step (chapter B11): every step a returning user occupies in a run of
Algorithm 2 is deleted in ONE maximal-coupling pass (each tree node containing one of its steps is
coupled once, in completion order, with the new statistics of all its steps; at most one retraining,
from the first rejection), or by one retraining from scratch when the pass's worst case
(``worst_case_cost``, a function of the request only) exceeds a training; the registry
``run.users`` then no longer holds the user.
``verify_unlearned`` checks an unlearned run against the run it came from, replaying only the
steps the deletion recomputed."""

import math
from dataclasses import dataclass

import numpy as np

from bandit_unlearning.checks import as_generator, check_instance, readonly
from bandit_unlearning.exact.learner import ZERO_USER, ExactOptions, Run, exact_options, run_steps, same_model, train
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int
from bandit_unlearning.exact.tree import (
    BinaryTree, Node, decomposition_rows, coupling_accepts, draw_node_keys, leaf_path, n_nodes, node_at,
    node_noise, postorder_position, statistic_dense, statistic_sparse,
)
from bandit_unlearning.privacy.coupling import tv_gaussians
from bandit_unlearning.protocol import DeleteStep, DeleteSteps, DeleteUser, register_unlearn, unlearn


def user_steps(run: Run, user, key=None) -> tuple:
    """The 1-based steps of ``run`` whose user is ``user`` (``key(u) == key(user)`` when ``key`` is given,
    e.g. ``key=lambda u: u.key`` for ``ReplayableUser``; otherwise ``u == user``).

    Parameters
    ----------
    run : Run
        The run to search.
    user : object
        The user whose steps are wanted.
    key : callable or None
        A user's identity; None compares users with ``==``.

    Returns
    -------
    tuple of int
        The user's steps, increasing (empty if it is in none).
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a Run, got {type(run).__name__}")
    if key is not None and not callable(key):
        raise TypeError("key must be callable or None")
    match = (lambda u: u == user) if key is None else (lambda u, k=key(user): u is not ZERO_USER and key(u) == k)
    return tuple(t for t, u in enumerate(run.users, start=1) if u is not ZERO_USER and bool(match(u)))


def coupled_nodes(steps, n_leaves: int) -> tuple:
    """The complete nodes of a tree of ``n_leaves`` leaves that contain at least one of ``steps``, in
    completion (post-) order: the nodes a one-pass deletion of ``steps`` couples, each once.

    Parameters
    ----------
    steps : iterable of int
        Step numbers in ``[1, n_leaves]`` (repeats allowed; the order does not matter).
    n_leaves : int
        Leaves of the tree (``>= 1``).

    Returns
    -------
    tuple of Node
        The union of the steps' leaf-to-root paths, each node once, in post-order.

    Raises
    ------
    TypeError
        If ``steps`` is a string or not iterable, or a step is not an integer.
    ValueError
        If a step is outside ``[1, n_leaves]`` or ``n_leaves < 1``.
    """
    n_leaves = check_int(n_leaves, "n_leaves", 1)
    if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
        raise TypeError(f"steps must be a sequence of step numbers, got {type(steps).__name__}")
    nodes = {}
    for t in steps:
        for b in leaf_path(check_int(t, "step", 1, n_leaves), n_leaves):
            nodes[postorder_position(b)] = b
    return tuple(nodes[p] for p in sorted(nodes))


# %% [markdown]
# The record of the tree's half of a deletion: which nodes were coupled, kept, reflected and renewed.

# %% tags=["export"]
@dataclass(frozen=True)
class StepsCoupling:
    """What the tree's half of a one-pass deletion did.

    Parameters
    ----------
    steps : tuple of int
        The deleted steps.
    n_leaves : int
        Leaves of the tree before the deletion.
    nodes : tuple of Node
        The coupled nodes (``coupled_nodes``), in completion order.
    accepted : tuple of Node
        The nodes that kept their noisy values.
    rejected : Node or None
        The node reflected (the first rejection), None if every node was kept.
    regenerated : tuple of Node
        Its ancestors ending at the same leaf, given fresh noise.
    restart : int
        Steps still valid, in ``[0, n_leaves]``: the caller re-runs steps ``restart + 1 ..``.
    """

    steps: tuple
    n_leaves: int
    nodes: tuple
    accepted: tuple
    rejected: Node | None
    regenerated: tuple
    restart: int

    def __post_init__(self):
        n = check_int(self.n_leaves, "n_leaves", 1)
        check_int(self.restart, "restart", 0, n)
        for name in ("steps", "nodes", "accepted", "regenerated"):
            check_instance(getattr(self, name), tuple, name)

    @property
    def retrained(self) -> bool:
        return self.rejected is not None

# %% [markdown]
# **The light tree's arithmetic.** A coupling needs a node's old and new clean values only on the
# coordinates the deleted steps change. `_light_entries` lists a range of leaves' entries with some
# leaves substituted, so one `bincount` gives the new clean value $v'_b$ bit for bit without writing
# $x'_t$ first; `_sum_on` restricts that sum to a support, and `_replace_leaves` writes all new
# leaves in one rebuild.

# %% tags=["export"]
def _node_steps(b: Node, steps: tuple) -> tuple:
    return tuple(t for t in steps if b.start <= t <= b.end)


def _light_entries(tree: LightTree, first: int, last: int, new: dict):
    """Entries (indices, values) of leaves ``first .. last`` in leaf order, the leaves in ``new``
    (``t -> (indices, values)``) replaced: the arrays ``_running_sum`` would read after the
    replacement, so a ``bincount`` of them is that canonical sum bit for bit."""
    ptr, idx, val = tree._ptr, tree._idx, tree._val
    pos, end = int(ptr[first - 1]), int(ptr[last])
    pieces_i, pieces_v = [], []
    for t in sorted(t for t in new if first <= t <= last):
        pieces_i += [idx[pos:int(ptr[t - 1])], new[t][0]]
        pieces_v += [val[pos:int(ptr[t - 1])], new[t][1]]
        pos = int(ptr[t])
    pieces_i.append(idx[pos:end])
    pieces_v.append(val[pos:end])
    return np.concatenate(pieces_i), np.concatenate(pieces_v)


def _sum_on(idx: np.ndarray, val: np.ndarray, S: np.ndarray) -> np.ndarray:
    """The canonical sum restricted to the sorted coordinates ``S``: ``bincount`` adds each
    coordinate's entries in the same order as the full sum, so this is ``full[S]`` bit for bit."""
    if S.size == 0:
        return np.zeros(0)
    pos = np.minimum(np.searchsorted(S, idx), S.size - 1)
    hit = S[pos] == idx
    return np.bincount(pos[hit], weights=val[hit], minlength=S.size)


def _replace_leaves(tree: LightTree, new: dict) -> None:
    """Give the leaves in ``new`` their new entries, all in one rebuild of the entry arrays."""
    if not new:
        return
    n = tree.n_leaves
    lens = np.diff(tree._ptr[: n + 1])
    idx, val = _light_entries(tree, 1, n, new)
    for t, (i, _) in new.items():
        lens[t - 1] = i.size
    size = max(tree._idx.size, idx.size)
    tree._idx, tree._val = np.zeros(size, dtype=np.int32), np.zeros(size)
    tree._idx[: idx.size], tree._val[: idx.size] = idx, val
    tree._ptr[1:n + 1] = np.cumsum(lens)

# %% [markdown]
# **One pass on a light tree.** `_couple_light` walks the coupled nodes in completion order. A
# deleted leaf brings its new statistic and the support of its shift; every node is then coupled
# once on the union of its deleted steps' supports, and the first rejection reflects that node,
# gives fresh keys to its ancestors ending at the same leaf and truncates the tree there.

# %% tags=["export"]
def _couple_light(tree: LightTree, old: LightTree, steps: tuple, new_leaf, nodes: tuple, rng) -> StepsCoupling:
    """One pass over ``nodes`` on the mutable copy ``tree`` of the frozen ``old`` (both ``LightTree``):
    the same arithmetic and the same draws as ``LightTree.unlearn_leaf`` for one step.  Per node: its
    noisy value (one clean sum plus its noise, as ``append`` pays) and the two clean values on the
    shift's support only; the full new clean value only for the one rejected node."""
    supports, new, accepted = {}, {}, []
    for k, b in enumerate(nodes):
        p = postorder_position(b)
        if b.level == 0:                                  # a deleted leaf: its new statistic, at its own model
            t = b.start
            i_new, v_new = statistic_sparse(new_leaf(t), tree.d, "the dummy's statistics")
            x_new = np.zeros(tree.d)
            x_new[i_new] = v_new
            supports[t] = np.flatnonzero(old._leaf_dense(t) - x_new)
            new[t] = (i_new.astype(np.int32), v_new)
        S = np.unique(np.concatenate([supports[t] for t in _node_steps(b, steps)]))
        noisy = old._noisy_value(p)
        if coupling_accepts(noisy[S], _sum_on(*_light_entries(old, b.start, b.end, {}), S),
                            _sum_on(*_light_entries(old, b.start, b.end, new), S), tree.sigma, rng.random()):
            if S.size:
                tree._touched[p] = readonly(np.array(noisy))
                tree._keys[p] = 0
            accepted.append(b)
            continue
        v_old = old._running_sum(b.start, b.end)
        i_all, v_all = _light_entries(old, b.start, b.end, new)
        v_new = np.bincount(i_all, weights=v_all, minlength=tree.d) if i_all.size else np.zeros(tree.d)
        tree._touched[p] = readonly((v_old + v_new) - noisy)  # reflection
        tree._keys[p] = 0
        regenerated = tuple(a for a in nodes[k + 1:] if a.end == b.end)
        if regenerated:
            tree._keys[p + 1:p + 1 + len(regenerated)] = draw_node_keys(rng, len(regenerated))
        for q in range(p + 1, p + 1 + len(regenerated)):
            tree._touched.pop(q, None)
        _replace_leaves(tree, new)
        tree._cut(b.end)
        tree._rebuild_stack(keep_below=n_nodes(steps[0] - 1))
        return StepsCoupling(steps, old.n_leaves, nodes, tuple(accepted), b, regenerated, b.end)
    _replace_leaves(tree, {t: e for t, e in new.items() if supports[t].size})
    return StepsCoupling(steps, old.n_leaves, nodes, tuple(accepted), None, (), old.n_leaves)

# %% [markdown]
# **The same pass on a dense tree**, and `couple_steps`, which checks its arguments and dispatches
# on the tree's exact type: both trees make the same decisions from the same draws.

# %% tags=["export"]
def _couple_dense(tree: BinaryTree, steps: tuple, new_leaf, nodes: tuple, rng) -> StepsCoupling:
    """The same pass on a mutable dense ``BinaryTree`` (as ``BinaryTree.unlearn_leaf`` for one step)."""
    clean, noisy, d, sigma = tree._clean, tree._noisy, tree.d, tree.sigma
    supports, accepted, n_before = {}, [], tree.n_leaves
    for k, b in enumerate(nodes):
        p = postorder_position(b)
        old = clean[p].copy()
        if b.level == 0:
            x_new = statistic_dense(new_leaf(b.start), d, "the dummy's statistics")
            supports[b.start] = np.flatnonzero(old - x_new)
            clean[p] = x_new
        else:
            clean[p] = tree._running_sum(b.start, b.end)
        new = clean[p]
        S = np.unique(np.concatenate([supports[t] for t in _node_steps(b, steps)]))
        if coupling_accepts(noisy[p, S], old[S], new[S], sigma, rng.random()):
            accepted.append(b)
            continue
        noisy[p] = (old + new) - noisy[p]                # reflection
        regenerated = tuple(a for a in nodes[k + 1:] if a.end == b.end)
        keys = draw_node_keys(rng, len(regenerated)) if regenerated else ()
        for a, key in zip(regenerated, keys):
            q = postorder_position(a)
            clean[q] = tree._running_sum(a.start, a.end)
            np.add(clean[q], node_noise(key, d, sigma), out=noisy[q])
        tree._cut(b.end)
        return StepsCoupling(steps, n_before, nodes, tuple(accepted), b, regenerated, b.end)
    return StepsCoupling(steps, n_before, nodes, tuple(accepted), None, (), n_before)


def couple_steps(tree, old, steps: tuple, new_leaf, rng) -> StepsCoupling:
    """The tree's half of a one-pass deletion: replace the leaves ``steps`` (increasing) of the
    mutable copy ``tree`` of ``old`` by ``new_leaf(t)`` (called when the pass reaches leaf ``t``) and
    maximally couple every node of ``coupled_nodes(steps, n)`` once, in completion order; at the
    first rejection reflect it, give its ancestors ending at the same leaf fresh noise and truncate
    ``tree`` to ``rejected.end`` leaves.  Trees: ``LightTree`` and ``BinaryTree`` (exact types).

    Parameters
    ----------
    tree : LightTree or BinaryTree
        A mutable copy of ``old``, modified in place.
    old : LightTree or BinaryTree
        The frozen tree of the run, of the same type.
    steps : tuple of int
        The leaves to replace, increasing.
    new_leaf : callable
        ``new_leaf(t)``: the new statistic of leaf ``t``.
    rng : numpy.random.Generator
        The coupling's uniforms and the fresh noise.

    Returns
    -------
    StepsCoupling
        The coupled, accepted, rejected and regenerated nodes and the restart step.
    """
    check_instance(steps, tuple, "steps")
    if not callable(new_leaf):
        raise TypeError("new_leaf must be callable")
    if type(old) is LightTree and type(tree) is LightTree or type(old) is BinaryTree and type(tree) is BinaryTree:
        if tree.n_leaves != old.n_leaves:
            raise ValueError("tree must be a mutable copy of old (the same number of leaves)")
    nodes = coupled_nodes(steps, old.n_leaves)
    if type(old) is LightTree and type(tree) is LightTree:
        return _couple_light(tree, old, steps, new_leaf, nodes, rng)
    if type(old) is BinaryTree and type(tree) is BinaryTree:
        return _couple_dense(tree, steps, new_leaf, nodes, rng)
    raise TypeError(f"a one-pass deletion needs a LightTree or a BinaryTree, got {type(old).__name__}")

# %% [markdown]
# **The record and its bounds.** `UserUnlearnRecord` states what the pass did, never the deleted
# statistics. Its data-independent bounds use $\mathrm{tv}_b = 2\Phi(m_b B / (2\sigma)) - 1$ for a
# node holding $m_b$ deleted steps: the chance that some node rejects, and the expected number of
# recomputed steps.

# %% tags=["export"]
def _count_bound(m: int, B, sigma: float):
    """``2 Phi(m B / (2 sigma)) - 1``: the total variation bound of a node holding ``m`` deleted steps."""
    return None if B is None else tv_gaussians([0.0], [m * B], sigma)


@dataclass(frozen=True)
class UserUnlearnRecord:
    """What one one-pass deletion did -- nothing computed from the deleted statistics.

    Parameters
    ----------
    steps : tuple of int
        The deleted steps (increasing).
    T : int
        Steps of the run.
    B, sigma : float
        The learner's sensitivity (None if unknown) and noise scale.
    nodes, accepted, rejected, regenerated, restart
        As in ``StepsCoupling``; every node of ``nodes`` is coupled once.
    steps_recomputed : int
        ``T - restart``: the retraining suffix, run once.
    retrain_probability_bound, expected_steps_bound : float or None
        The data-independent worst case for shifts of norm ``B`` per deleted step:
        ``1 - prod_b (1 - tv_b)`` and ``sum_k prod_{j<k} (1 - tv_j) tv_k (T - r_k)``, with
        ``tv_b = 2 Phi(m_b B / (2 sigma)) - 1`` for a node holding ``m_b`` deleted steps (None without ``B``).
    method : str
        ``"one pass"``, or ``"retrain"`` when the pass's worst case exceeded one training and the run
        was retrained from scratch instead.
    worst_case_cost : float
        That worst case, in steps (``worst_case_cost``).  ``coupling_checks`` counts the nodes tested.
    """

    steps: tuple
    T: int
    B: float | None
    sigma: float
    nodes: tuple
    accepted: tuple
    rejected: Node | None
    regenerated: tuple
    restart: int
    steps_recomputed: int
    retrain_probability_bound: float | None
    expected_steps_bound: float | None
    method: str = "one pass"
    worst_case_cost: float = 0.0

    def __post_init__(self):
        T = check_int(self.T, "T", 1)
        check_int(self.restart, "restart", 0, T)
        if self.steps_recomputed != T - self.restart:
            raise ValueError("steps_recomputed must be T - restart")
        if self.method not in ("one pass", "retrain"):
            raise ValueError(f"method must be 'one pass' or 'retrain', got {self.method!r}")

    @property
    def retrained(self) -> bool:
        return self.rejected is not None or self.method == "retrain"

    @property
    def coupling_checks(self) -> int:
        return len(self.accepted) + (self.rejected is not None)


def _bounds(nodes: tuple, steps: tuple, T: int, B, sigma: float):
    if B is None:
        return None, None
    keep, expected, tvs = 1.0, 0.0, {}
    for b in nodes:
        m = len(_node_steps(b, steps))
        tv = tvs[m] if m in tvs else tvs.setdefault(m, _count_bound(m, B, sigma))
        expected += keep * tv * (T - b.end)
        keep *= 1 - tv
    return float(1 - keep), float(expected)


def _check_steps(run: Run, steps) -> tuple:
    if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
        raise TypeError(f"steps must be a sequence of step numbers, got {type(steps).__name__}")
    steps = tuple(check_int(t, "step", 1, run.T) for t in steps)
    if not steps:
        raise ValueError("steps must name at least one step")
    if len(set(steps)) != len(steps):
        raise ValueError("steps must be distinct")
    done = sorted(set(steps) & run.deleted)
    if done:
        raise ValueError(f"step {done[0]} was already deleted")
    return tuple(sorted(steps))

# %% [markdown]
# **Choosing between one pass and retraining.** `worst_case_cost` bounds the pass's cost in training
# steps from the request alone (the steps, $T$ and the cost of a node), so choosing to retrain from
# scratch when it exceeds $T$ cannot depend on the data or the noise.

# %% tags=["export"]
NODE_COST = 2.0


def worst_case_cost(steps, T: int, node_cost: float = NODE_COST) -> float:
    """The most a one-pass deletion of ``steps`` can cost, in training steps, a coupled node counted
    as ``node_cost`` steps: ``max(node_cost |nodes|, max_k (node_cost k + T - r_k))`` over the coupled
    nodes in order (the ``k``-th rejected, last leaf ``r_k``: ``k`` nodes tested, then ``T - r_k``
    steps re-run).  It depends on the request only (the steps, ``T`` and the constant), never on the
    data or the noise.  ``NODE_COST = 2``: measured (``benchmarks/deletion_cost.py``'s learners) a
    node costs 1.7 steps of the UCB bandit (whose steps are the cheapest, tree work only) and 0.6-0.7
    of LinUCB's or UCB-VI's.  For one step with ``node_cost <= 1`` it is at most ``T`` (the ``k``-th
    node of a path ends at ``r_k >= 2^(k-1) >= k``); with 2, only steps ``t <= 4`` exceed it.

    Parameters
    ----------
    steps : sequence of int
        The steps to delete, in ``[1, T]``.
    T : int
        The run's length.
    node_cost : float
        The cost of coupling one node, in training steps (> 0, finite).

    Returns
    -------
    float
        The worst-case cost, in training steps.
    """
    T = check_int(T, "T", 1)
    if isinstance(node_cost, bool) or not isinstance(node_cost, (int, float)) or not 0 < node_cost < math.inf:
        raise ValueError(f"node_cost must be a finite number > 0, got {node_cost!r}")
    nodes = coupled_nodes(steps, T)
    return float(max([node_cost * len(nodes)] + [node_cost * k + T - b.end for k, b in enumerate(nodes, start=1)]))


def _exact_request_options(options) -> tuple:
    """``(dummy, retrain_if_cheaper, node_cost)`` of a ``DeleteSteps`` / ``DeleteUser`` request's options;
    ``diagnostics`` are recorded for a ``DeleteStep`` only."""
    options = exact_options(options)
    if options.diagnostics:
        raise ValueError("diagnostics are recorded for a DeleteStep request only (Algorithm 3)")
    return options.dummy, options.retrain_if_cheaper, NODE_COST if options.node_cost is None else options.node_cost

# %% [markdown]
# **The protocol's `DeleteSteps`.** `_unlearn_steps` couples every node holding a deleted step once,
# retrains at most once (from the first rejected node's last leaf, with the dummy at every deleted
# step), or retrains from scratch when that is cheaper in the worst case.

# %% tags=["export"]
@register_unlearn(Run, DeleteSteps)
def _unlearn_steps(run: Run, request: DeleteSteps, *, options: ExactOptions | None = None,
                   rng: np.random.Generator | None = None):
    """``unlearn(run, DeleteSteps(steps), options=ExactOptions(...), rng=...)``: delete the users of
    ``steps`` (1-based, distinct) in one maximal-coupling pass.

    Walks the steps in time order: every node containing one of them is coupled once (its clean
    value with all the new statistics it holds, each new statistic ``EO_t(dummy; w_t)`` at the
    run's own model); at the first rejection, at node ``b``, the run is retrained once, from step
    ``b.end + 1`` to ``T``, with the dummy at every deleted step (fresh noise from ``rng``, default: OS
    entropy).  For one step this is ``unlearn`` (Algorithm 3) bit for bit given the same generator.
    ``retrain_if_cheaper`` (default): when ``worst_case_cost(steps, T, node_cost) > T`` (many steps,
    early in the run) the run is retrained from scratch instead (``record.method == "retrain"``) -- exact as
    well, and the choice depends on the request only, so it cannot bias the output; the cost is then
    one training.  Returns ``(new_run, UserUnlearnRecord)``; ``run`` is never modified.
    ``ValueError`` for a step outside ``[1, T]``, repeated or already deleted; ``TypeError`` for a bad
    ``rng`` or ``retrain_if_cheaper``.
    """
    check_instance(run, Run, "run")
    check_instance(request, DeleteSteps, "request")
    dummy, retrain_if_cheaper, node_cost = _exact_request_options(options)
    steps = _check_steps(run, request.steps)
    rng = as_generator(rng)
    learner = run.learner
    if dummy is not ZERO_USER and learner.check_user is not None:
        learner.check_user(dummy)
    rng = as_generator(rng)
    deleted = set(steps)
    users = tuple(dummy if t in deleted else u for t, u in enumerate(run.users, start=1))
    worst = worst_case_cost(steps, run.T, node_cost)
    if retrain_if_cheaper and worst > run.T:
        new = train(learner, users, rng)
        record = UserUnlearnRecord(
            steps=steps, T=run.T, B=learner.B, sigma=learner.sigma, nodes=(), accepted=(), rejected=None,
            regenerated=(), restart=0, steps_recomputed=run.T, retrain_probability_bound=1.0,
            expected_steps_bound=float(run.T), method="retrain", worst_case_cost=worst,
        )
        return Run(learner, users, new.models, new.tree, run.deleted | deleted), record
    tree = run.tree.copy()
    coupling = couple_steps(tree, run.tree, steps, lambda t: learner.statistics(dummy, t, run.models[t - 1]), rng)
    models = run.models
    if coupling.retrained:
        r = coupling.restart
        models = list(run.models[:r])
        models.append(learner.update(tree.noisy_prefix_sum(r), r, models[r - 1]))
        run_steps(learner, users, tree, models, rng)
        models = tuple(models)
    p_bound, e_bound = _bounds(coupling.nodes, steps, run.T, learner.B, learner.sigma)
    record = UserUnlearnRecord(
        steps=steps, T=run.T, B=learner.B, sigma=learner.sigma, nodes=coupling.nodes,
        accepted=coupling.accepted, rejected=coupling.rejected, regenerated=coupling.regenerated,
        restart=coupling.restart, steps_recomputed=run.T - coupling.restart,
        retrain_probability_bound=p_bound, expected_steps_bound=e_bound, worst_case_cost=worst,
    )
    return Run(learner, users, models, tree.freeze(), run.deleted | deleted), record

# %% [markdown]
# **Deleting a user** is `DeleteSteps` of the user's steps, after which the registry must no longer
# hold the user; `unlearn_user_sequential` is the earlier way, one Algorithm 3 call per step, kept
# for comparison.

# %% tags=["export"]
def _user_request(run, user, dummy, key) -> tuple:
    if user is ZERO_USER or user is dummy:
        raise ValueError("the dummy user cannot be deleted")
    steps = user_steps(run, user, key)
    if not steps:
        raise ValueError("unknown user: in no step of the run (never there, or already deleted)")
    return steps


@register_unlearn(Run, DeleteUser)
def _unlearn_user(run: Run, request: DeleteUser, *, options: ExactOptions | None = None,
                  rng: np.random.Generator | None = None):
    """``unlearn(run, DeleteUser(user, key=...), options=ExactOptions(...), rng=...)``: delete every step of
    ``user`` from ``run`` in one coupling pass (as ``DeleteSteps`` of its steps).

    Returns ``(new_run, UserUnlearnRecord)``; ``run`` is never modified.  ``ValueError`` if the user
    is in no step (unknown, or already deleted) or is the dummy itself; ``rng`` as for ``DeleteStep``
    (default: OS entropy), resolved before anything is computed.  At most one retraining: of at most
    ``T - steps[0]`` steps, or from scratch when that is cheaper in the worst case
    (``ExactOptions.retrain_if_cheaper``, see ``DeleteSteps``)."""
    check_instance(request, DeleteUser, "request")
    dummy, _, _ = _exact_request_options(options)
    user, key = request.user, request.key
    steps = _user_request(run, user, dummy, key)
    rng = as_generator(rng)
    new, record = _unlearn_steps(run, DeleteSteps(steps), options=options, rng=rng)
    if user_steps(new, user, key):                 # the registry must have forgotten the user
        raise RuntimeError("the user is still in the run after deletion")
    return new, record


def unlearn_user_sequential(run: Run, user, rng=None, dummy=ZERO_USER, key=None):
    """The earlier way, kept for comparison: Algorithm 3 on each step of ``user`` in increasing
    order, each call free to retrain from its own rejection (up to one retraining per step).
    Returns ``(new_run, records)``, one ``UnlearnRecord`` per step.

    Parameters
    ----------
    run : Run
        The run to delete from (not modified).
    user : object
        The user to delete.
    rng : numpy.random.Generator, int or None
        Randomness of the couplings and retrainings (None: OS entropy).
    dummy : object
        The user put in place of each deleted step.
    key : callable or None
        A user's identity, as for ``user_steps``.

    Returns
    -------
    tuple
        ``(new_run, records)``: the run without the user and one ``UnlearnRecord`` per step.
    """
    steps = _user_request(run, user, dummy, key)
    rng = as_generator(rng)
    records = []
    for t in steps:
        run, record = unlearn(run, DeleteStep(t), options=ExactOptions(dummy=dummy), rng=rng)
        records.append(record)
    if user_steps(run, user, key):
        raise RuntimeError("the user is still in the run after deletion")
    return run, tuple(records)

# %% [markdown]
# **Checking a deletion against its run.** Three small helpers compare trees: a leaf's sparse
# entries (dense trees are made sparse), and whether a node kept its noisy value (a light tree's
# untouched node is compared by its key, without regenerating its noise).

# %% tags=["export"]
def _leaf_entries(tree, t: int):
    if hasattr(tree, "leaf_sparse"):
        return tree.leaf_sparse(t)
    x = tree.leaf(t)
    nz = np.flatnonzero(x)
    return nz, x[nz]


def _entries(x: np.ndarray):
    nz = np.flatnonzero(x)
    return nz, x[nz]


def _kept_noisy(before, after, p: int, coupled: set) -> bool:
    """Whether node ``p`` holds the same noisy value in both trees.  A light tree's node that took
    part in no coupling is compared by its key and stored value (no noise regenerated)."""
    if type(before) is LightTree and type(after) is LightTree and p not in coupled:
        a, b = before._touched.get(p), after._touched.get(p)
        return (bool(np.array_equal(before._keys[p], after._keys[p])) and (a is None) == (b is None)
                and (a is None or bool(np.array_equal(a, b))))
    node = node_at(p)
    return bool(np.array_equal(after.noisy(node), before.noisy(node)))

# %% [markdown]
# `verify_unlearned` checks the kept prefix by comparison, the deleted leaves against the dummy's
# statistics and the rejected node against the reflection $v_b + v'_b - \tilde v_b$, then replays
# only the $T - r_b$ recomputed steps.

# %% tags=["export"]
def verify_unlearned(before: Run, after: Run, record: UserUnlearnRecord) -> None:
    """Check ``after, record = unlearn(before, DeleteSteps(...))`` (or ``DeleteUser``) against ``before``,
    replaying only what the deletion recomputed; ``ValueError`` at the first inconsistency.

    Checks, with ``r = record.restart``: the users are ``before``'s with one dummy exactly at
    ``record.steps``; ``w_1 .. w_r`` are ``before``'s; every leaf ``x_1 .. x_r`` is ``before``'s except
    the deleted ones, which are the dummy's statistics at the recorded model; every node ending by
    ``r`` keeps ``before``'s noisy value, except the rejected one, which holds the reflection
    ``v_b + v'_b - v~_b``, and its regenerated ancestors; then the recomputed suffix is replayed as
    ``verify`` does: ``w_{r+1} = UPDATE(u~_r)`` and, for ``t > r``, ``x_t`` from the oracle and
    ``w_{t+1}`` from ``UPDATE`` (noisy prefix sums built incrementally, each node's noise once).
    If nothing was rejected, ``w_{T+1}`` must be ``before``'s.

    Cost: the ``T - r`` recomputed steps (one oracle and one update call each, plus one), sparse leaf
    comparisons, and the noisy values of the coupled nodes -- the kept prefix's users are not
    replayed.  ``verify`` instead replays all ``T`` steps, recomputes every earlier noisy prefix
    sum from scratch and sums every node's leaves densely (measured: one to three trainings).

    Parameters
    ----------
    before, after : Run
        The run before the deletion and the one ``unlearn`` returned.
    record : UserUnlearnRecord
        The record it returned.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        At the first inconsistency, naming the step or node.
    """
    check_instance(before, Run, "before")
    check_instance(after, Run, "after")
    check_instance(record, UserUnlearnRecord, "record")
    learner, T, r = after.learner, after.T, record.restart
    if before.learner is not learner or before.T != T or record.T != T:
        raise ValueError("the two runs are not of one learner and one length")
    if after.tree.n_leaves != T or len(after.models) != T + 1:
        raise ValueError(f"run has {T} users, {after.tree.n_leaves} leaves and {len(after.models)} models")
    steps = set(record.steps)
    if after.deleted != before.deleted | steps:
        raise ValueError("the deleted positions are not the earlier ones plus the request's")
    dummy = after.users[record.steps[0] - 1]
    for t in range(1, T + 1):
        u, expected = after.users[t - 1], (dummy if t in steps else before.users[t - 1])
        if u is not expected and not (u is not ZERO_USER and expected is not ZERO_USER and u == expected):
            raise ValueError(f"the user at step {t} is not the expected one")
    last = T + 1 if not record.retrained else max(r, 1)
    for t in range(1, last + 1):
        if after.models[t - 1] is not before.models[t - 1] and not same_model(after.models[t - 1], before.models[t - 1]):
            raise ValueError(f"w_{t} differs from the run before deletion, though step {t} was kept")
    for t in range(1, r + 1):
        got = _leaf_entries(after.tree, t)
        if t in steps:
            want = _entries(statistic_dense(learner.statistics(dummy, t, before.models[t - 1]), learner.d))
        else:
            want = _leaf_entries(before.tree, t)
        if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
            raise ValueError(f"x_{t} is not the expected statistic")
    coupled = {postorder_position(b) for b in record.nodes}
    rejected = None if record.rejected is None else postorder_position(record.rejected)
    regenerated = {postorder_position(a) for a in record.regenerated}
    for p in range(n_nodes(r)):
        if p == rejected or p in regenerated:
            continue
        if not _kept_noisy(before.tree, after.tree, p, coupled):
            raise ValueError(f"the noisy value of node {tuple(node_at(p))} changed, though it was kept")
    if rejected is not None:
        b = record.rejected
        reflected = (before.tree.clean(b) + after.tree.clean(b)) - before.tree.noisy(b)
        if not np.array_equal(after.tree.noisy(b), reflected):
            raise ValueError(f"the rejected node {tuple(b)} does not hold the reflection")
    if record.retrained:
        _replay_suffix(after, r)


# %% [markdown]
# The replay of the recomputed steps keeps the noisy prefix sum of the current decomposition as a
# stack, so each node's noisy value is added once.

# %% tags=["export"]
def _replay_suffix(after: Run, r: int) -> None:
    """``w_{r+1} = UPDATE(u~_r)`` and, for ``t > r``, ``x_t`` from the oracle and ``w_{t+1}`` from
    ``UPDATE``, against ``after``; ``ValueError`` at the first difference."""
    learner, T = after.learner, after.T
    stack = []                                      # (position, partial noisy prefix sum) of D(t)
    for t in range(max(r, 1), T + 1):
        if t > r:
            x = learner.statistics(after.users[t - 1], t, after.models[t - 1])
            if not np.array_equal(after.tree.leaf(t), x):
                raise ValueError(f"x_{t} differs from the oracle's answer on the recorded model")
        rows = decomposition_rows(t)
        keep = 0
        while keep < min(len(stack), len(rows)) and stack[keep][0] == rows[keep]:
            keep += 1
        del stack[keep:]
        for p in rows[keep:]:
            v = after.tree.noisy(node_at(p))
            stack.append((p, v if not stack else stack[-1][1] + v))
        w = learner.update(np.array(stack[-1][1]), t, after.models[t - 1])
        if not same_model(after.models[t], w):
            raise ValueError(f"w_{t + 1} differs from UPDATE of the recorded noisy prefix sum")


# %% [markdown]
# ## Checks
#
# **One step: Algorithm 3 bit for bit.**  With the same generator, the pass `unlearn(run, DeleteSteps((t,)))`
# (forced with `retrain_if_cheaper=False` for $t \le 4$) gives
# the same models, tree and coupling outcomes as `unlearn(run, DeleteStep(t))`, for every $t$, on the light
# tree and on the dense one; on several steps the two trees agree with each other bit for bit.

# %%
from bandit_unlearning.exact.registry import (
    coupled_nodes, unlearn_user_sequential, user_steps, verify_unlearned, worst_case_cost,
)

MEANS = np.array([0.7, 0.4])
T = 16
people = bandit_users(MEANS, 14, seed=11)
returning = people[0]                                            # comes back three times
USERS = list(people)
USERS[6:6] = [returning]
USERS[13:13] = [returning]
USERS = tuple(USERS[:T])
assert len(USERS) == T
LEARNER = ucb_bandit_learner(2, sigma=1.0)
DENSE = ucb_bandit_learner(2, sigma=1.0, tree_factory=BinaryTree)
print("steps of the returning user:", user_steps(train(LEARNER, USERS, np.random.default_rng(0)), returning))


def same_tree(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a.values(), b.values())) and a.n_leaves == b.n_leaves


retrained = 0
for seed in range(10):
    for learner in (LEARNER, DENSE):
        run = train(learner, USERS, np.random.default_rng(seed))
        for t in range(1, T + 1):
            a, ra = unlearn(run, DeleteStep(t), rng=np.random.default_rng(1000 + seed))
            b, rb = unlearn(run, DeleteSteps((t,)), options=ExactOptions(retrain_if_cheaper=False), rng=np.random.default_rng(1000 + seed))
            assert same_model(a.models, b.models) and same_tree(a.tree, b.tree) and a.users == b.users
            assert (ra.accepted, ra.rejected, ra.regenerated, ra.restart) == (rb.accepted, rb.rejected, rb.regenerated, rb.restart)
            retrained += ra.retrained
    light = unlearn(train(LEARNER, USERS, np.random.default_rng(seed)), DeleteUser(returning), options=ExactOptions(retrain_if_cheaper=False), rng=np.random.default_rng(seed + 7))
    dense = unlearn(train(DENSE, USERS, np.random.default_rng(seed)), DeleteUser(returning), options=ExactOptions(retrain_if_cheaper=False), rng=np.random.default_rng(seed + 7))
    assert same_model(light[0].models, dense[0].models) and same_tree(light[0].tree, dense[0].tree)
    assert light[1].restart == dense[1].restart
print(f"DeleteSteps of one step == DeleteStep, bit for bit: {10 * 2 * T} requests ({retrained} of them retrained)")

# %% [markdown]
# **What the pass does, and refusals.**  The run is never modified; the user is gone from the
# registry; each coupled node is in `coupled_nodes` (the union of the steps' paths) and is coupled
# once; at most one retraining, from a step $\ge t_1$; the deletion checks with `verify_unlearned`
# and with `verify`; a second request for the same user, a request for someone who never came
# and for the dummy are refused.

# %%
run = train(LEARNER, USERS, np.random.default_rng(1))
steps = user_steps(run, returning)
print(f"worst case of the pass for steps {steps}: {worst_case_cost(steps, T)} (T = {T}); "
      f"counting a node as one step: {worst_case_cost(steps, T, node_cost=1)}")
early = (1, 2, 3, 5)
full, frec = unlearn(run, DeleteSteps(early), rng=np.random.default_rng(2))
print(f"worst case for steps {early}: {worst_case_cost(early, T)} > T: {frec.method}, "
      f"{frec.steps_recomputed} steps recomputed")
assert frec.method == "retrain" and frec.steps_recomputed == T and full.deleted == frozenset(early)
verify_unlearned(run, full, frec)
mine, record = unlearn(run, DeleteUser(returning), options=ExactOptions(retrain_if_cheaper=False), rng=np.random.default_rng(2))
print("coupled nodes:", [tuple(b) for b in record.nodes])
print(f"checks {record.coupling_checks}, rejected {record.rejected and tuple(record.rejected)}, "
      f"restart {record.restart}, steps recomputed {record.steps_recomputed}")
assert record.nodes == coupled_nodes(steps, T) and record.steps == steps
assert len(set(record.nodes)) == len(record.nodes) and record.steps_recomputed <= T - steps[0]
assert returning in run.users and returning not in mine.users and mine.deleted == frozenset(steps)
verify_unlearned(run, mine, record)
verify(mine)
for bad in (returning, bandit_users(MEANS, 1, seed=99)[0], ZERO_USER):
    try:
        unlearn(mine, DeleteUser(bad), rng=np.random.default_rng(3))
    except ValueError as err:
        print("refused:", err)
    else:
        raise AssertionError("accepted")

# %% [markdown]
# **`verify_unlearned` rejects what is wrong.**  Over 120 deletions ($\sigma = 1$: most of them
# retrain; a quarter retrained from scratch): every correct one passes; a run whose suffix was not retrained (the models of the run
# before deletion kept after a rejection), one with a user left in place, and one whose kept
# prefix was tampered with are each refused whenever they differ from the correct run.

# %%
import dataclasses

caught = {"no retrain": 0, "user left": 0, "prefix tampered": 0}
wrong = dict(caught)
for seed in range(120):
    run = train(LEARNER, USERS, np.random.default_rng(seed))
    new, rec = unlearn(run, DeleteUser(returning), options=ExactOptions(retrain_if_cheaper=seed % 4 == 0), rng=np.random.default_rng(seed + 1))
    verify_unlearned(run, new, rec)
    variants = {"user left": dataclasses.replace(new, users=run.users)}
    if rec.retrained and not same_model(new.models, run.models):
        variants["no retrain"] = dataclasses.replace(new, models=run.models)
    if rec.restart >= 2:
        models = list(new.models)
        models[1] = np.full_like(new.models[1], 0.123456)
        variants["prefix tampered"] = dataclasses.replace(new, models=tuple(models))
    for name, broken in variants.items():
        wrong[name] += 1
        try:
            verify_unlearned(run, broken, rec)
        except ValueError:
            caught[name] += 1
print({name: f"{caught[name]}/{wrong[name]}" for name in caught})
assert caught == wrong and min(wrong.values()) > 20

# %% [markdown]
# **Exactness, with power.** $R = 600$ runs of each world: trained on `USERS` then deleted — by the
# pass (forced, `retrain_if_cheaper=False`: here the default would retrain from scratch) and by the
# earlier sequential loop — and trained with the returning user replaced by the dummy at its three
# steps.  (The retrain-from-scratch branch is `train` on the new users itself, whose users and
# deleted positions `verify_unlearned` checks.)
# Statistics: the four coordinates of the noisy prefix sum at $T$ (pulls and rewards per arm;
# Kolmogorov–Smirnov) and the arm the final model pulls (chi-square), tested by chapter B4's
# `battery`.  Per-test level $10^{-6}/5$ for each sample compared: by the union bound a correct
# implementation fails with probability below $10^{-6}$ per comparison.  The same battery must
# reject two broken variants:
# the *step* semantics — deleting only the user's first step, which is what a request by step
# number does when the person came back — and a one-pass deletion that **forgets to retrain**
# (after a rejection it keeps the old models and statistics of the suffix).

# %%
from bandit_unlearning.exact.registry import couple_steps
from bandit_unlearning.exact.learner import ExactOptions, Run


def one_pass_no_retrain(run, steps, rng):
    """Broken on purpose: the tree's half of the pass, but the suffix is never re-run."""
    tree = run.tree.copy()
    c = couple_steps(tree, run.tree, tuple(steps), lambda t: np.zeros(run.learner.d), rng)
    if c.retrained:                                  # put the old leaves back after the cut, no retraining
        for t in range(c.restart + 1, run.T + 1):
            tree.append(run.tree.leaf(t), rng)
    users = tuple(ZERO_USER if t in steps else u for t, u in enumerate(run.users, 1))
    return Run(run.learner, users, run.models, tree.freeze(), run.deleted | set(steps))


R, LEVEL = 600, 1e-6 / 5
dummy_world = tuple(ZERO_USER if u is returning else u for u in USERS)
rng = np.random.default_rng(20261201)


def stats_of(r):
    u = r.noisy_prefix_sum(r.T)
    return {"pulls arm 0": u[0], "pulls arm 1": u[1], "reward arm 0": u[2], "reward arm 1": u[3],
            "arm at T+1": int(np.argmax(r.final_model))}


names = ("DeleteUser (one pass)", "sequential loop", "first step only", "one pass, no retrain")
sample = {name: [] for name in ("reference",) + names}
for _ in range(R):
    sample["reference"].append(stats_of(train(LEARNER, dummy_world, rng)))
    original = train(LEARNER, USERS, rng)
    st = user_steps(original, returning)
    sample[names[0]].append(stats_of(unlearn(original, DeleteUser(returning), options=ExactOptions(retrain_if_cheaper=False), rng=rng)[0]))
    sample[names[1]].append(stats_of(unlearn_user_sequential(original, returning, rng)[0]))
    sample[names[2]].append(stats_of(unlearn(original, DeleteStep(st[0]), rng=rng)[0]))
    sample[names[3]].append(stats_of(one_pass_no_retrain(original, st, rng)))
pvals = {name: battery(sample[name], sample["reference"], ("arm at T+1",)) for name in names}
for name, p in pvals.items():
    print(f"{name:24s} smallest p-value {min(p.values()):.1e}  rejected: {min(p.values()) < LEVEL}")
assert all(min(pvals[name].values()) >= LEVEL for name in names[:2])
assert all(min(pvals[name].values()) < LEVEL for name in names[2:])

# %% [markdown]
# **Exactness in RL, with power.**  The same test on TV-stable UCB-VI (chapter B8's design:
# RiverSwim, $H = 3$, $T = 16$, small noise $\sigma = 0.5$ so that nearly every deletion rejects, a
# reactive bonus $0.05$), a user returning at steps 3, 9 and 14, $R = 400$ runs per world.  Statistics:
# chapter B8's `rl_run_statistics` for the path of step 9 (noisy visit and reward totals of its 5
# nodes, the final policy, policy changes, total regret, visits to $s \ge 1$): 14 tests per
# comparison, each at level $10^{-6}/14$.  The one pass must pass; forgetting to retrain and
# deleting the first step only must be rejected.

# %%
from bandit_unlearning.experiments.rl_unlearning import rl_run_statistics
from bandit_unlearning.rl.envs import riverswim
from bandit_unlearning.rl.stable import population_users, stable_ucbvi

RL_LEARNER = stable_ucbvi(riverswim(horizon=3), 16, sigma=0.5, bonus_scale=0.05)
rl_users = list(population_users(RL_LEARNER.oracle.mdp, 16, seed=20261202))
for t in (9, 14):
    rl_users[t - 1] = rl_users[2]                              # the user of step 3 comes back twice
rl_users = tuple(rl_users)
rl_person, R_RL = rl_users[2], 400
rl_dummy_world = tuple(ZERO_USER if u is rl_person else u for u in rl_users)
cache, rl_sample = {}, {"reference": [], "one pass": [], "one pass, no retrain": [], "first step only": []}
for _ in range(R_RL):
    rl_sample["reference"].append(rl_run_statistics(train(RL_LEARNER, rl_dummy_world, rng), 9, cache))
    original = train(RL_LEARNER, rl_users, rng)
    rl_sample["one pass"].append(rl_run_statistics(unlearn(original, DeleteUser(rl_person), options=ExactOptions(retrain_if_cheaper=False), rng=rng)[0], 9, cache))
    rl_sample["one pass, no retrain"].append(rl_run_statistics(one_pass_no_retrain(original, (3, 9, 14), rng), 9, cache))
    rl_sample["first step only"].append(rl_run_statistics(unlearn(original, DeleteStep(3), rng=rng)[0], 9, cache))
RL_LEVEL = 1e-6 / 14
rl_p = {name: battery(rl_sample[name], rl_sample["reference"], ("final policy",)) for name in list(rl_sample)[1:]}
for name, p in rl_p.items():
    print(f"{name:22s} smallest of {len(p)} p-values {min(p.values()):.1e}  rejected: {min(p.values()) < RL_LEVEL}")
assert min(rl_p["one pass"].values()) >= RL_LEVEL
assert min(rl_p["one pass, no retrain"].values()) < RL_LEVEL and min(rl_p["first step only"].values()) < RL_LEVEL

# %% [markdown]
# **Cost: one retraining at most.**  Steps recomputed by a deletion of a user who occupies 5
# steps (random positions) of TV-stable LinUCB (chapter B12, $\rho = 10$, $T = 256$), the
# sequential loop against the one pass, over 40 runs.  The pass never recomputes more than
# $T - t_1$ steps; the loop's worst case is $\sum_i (T - t_i)$.  Times are in
# `benchmarks/deletion_cost.py`.

# %%
# NBVAL_IGNORE_OUTPUT
from bandit_unlearning.exact.linucb import LinUCBConfig, linear_users, linucb_learner
from bandit_unlearning.exact.tree import sigma_paper

T_LIN, K, DIM = 256, 3, 4
CFG = LinUCBConfig(n_arms=K, dim=DIM)
LIN = linucb_learner(CFG, sigma_paper(10.0, np.sqrt(2), T_LIN))
theta = np.random.default_rng(5).normal(size=(K, DIM))
g = np.random.default_rng(6)
seq, one, worst = [], [], []
for i in range(40):
    pop = list(linear_users(theta, T_LIN, seed=100 + i))
    where = np.sort(g.choice(T_LIN, 5, replace=False))
    for t in where:
        pop[t] = pop[where[0]]                                  # one person, five visits
    run = train(LIN, pop, g)
    seq.append(sum(r.steps_recomputed for r in unlearn_user_sequential(run, pop[where[0]], g)[1]))
    new, rec = unlearn(run, DeleteUser(pop[where[0]]), options=ExactOptions(retrain_if_cheaper=False), rng=g)
    assert rec.steps_recomputed <= T_LIN - (where[0] + 1)
    one.append(rec.steps_recomputed)
    worst.append(worst_case_cost(rec.steps, T_LIN))
print(f"steps recomputed / T: sequential mean {np.mean(seq) / T_LIN:.2f} max {max(seq) / T_LIN:.2f}; "
      f"one pass mean {np.mean(one) / T_LIN:.2f} max {max(one) / T_LIN:.2f}; "
      f"worst case of the pass > T (default: retrain from scratch) in {np.mean(np.array(worst) > T_LIN):.0%} of requests")
assert max(one) <= T_LIN - 1 and np.mean(one) <= np.mean(seq)

# %% [markdown]
# **Closing note.** A user is deleted by one coupling pass over every tree node that holds one of
# its steps; the result is exactly a run trained without it (the two-sample battery finds nothing
# at level $10^{-6}$, for the pass and for the earlier sequential loop, and rejects the by-step
# request that leaves the returning user's later visits in place and a pass that forgets to
# retrain).  For one step the pass is Algorithm 3 bit for bit.  A deletion recomputes at most
# $T - t_1$ steps, once — never more learner work than one retraining — and when the pass's worst
# case (tree work included) exceeds a training, the request is served by one training from scratch,
# exact as well; the sequential loop recomputed up to $r$ retrainings' worth.  `verify_unlearned` checks a deletion by replaying only
# the recomputed suffix.  The registry the learner retrains from no longer names the user.
