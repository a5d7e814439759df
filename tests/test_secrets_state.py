"""No secret outlives the call that used it: after every public deletion path, nothing the process keeps
(every module of the package: globals, class attributes, closures, ``functools`` caches, generator
states) nor anything returned gives the deleted statistic back.

The attack is the one a module-level generator allowed: SFC64 is invertible and its fourth word counts
its outputs, so a bit generator left behind by ``node_noise(key)`` runs back to ``(a, b, c, 1)`` -- the
last node key.  During ``unlearn`` that is a node on the deleted leaf's path; its kept noisy value minus
the regenerated noise minus its new clean value is the deleted statistic ``x_t``.  The same attack also
tries every 192-bit word triple the process or the returned objects hold.

Each deletion path is run twice: against the package as it is (nothing recovered), and against a
deliberately broken variant kept here -- ``node_noise`` (or the batched engine's normal draws) with one
module-level SFC64 re-used across calls, as the package once had -- where the attack recovers deleted
statistics.  Library defaults throughout (``rng=None``: OS entropy), as an attacker meets them.

Sizing: the broken variant leaks a deletion whenever no node of the deleted leaf's path is rejected
(the last key used is then a path node's).  With the noise scales here a path node is rejected with
probability at most erf(B / (2 sqrt 2 sigma)) <= 0.06 (B = sqrt 2 for the bandits, sqrt(3H) for
UCB-VI), so a path of at most 5 nodes is kept with probability >= 0.74, and ``N_DELETIONS = 12``
deletions all escape with probability <= 0.26^12 < 1e-7 (for ``unlearn_user`` of a user at two steps,
the last deletion's path is the one that matters).  The fixed code recovers nothing at all (the
count is 0 whatever the draws), so its assertion cannot fail by chance.
"""

import numpy as np
import pytest

import forensics as F
from bandit_unlearning.exact import light_tree as light_tree_module
from bandit_unlearning.exact import tree as tree_module
from bandit_unlearning.exact.bandit import BanditUser, bandit_statistics, ucb_bandit_learner
from bandit_unlearning.exact.learner import ExactOptions, train
from bandit_unlearning.protocol import DeleteStep, DeleteUser, unlearn
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.exact.linucb import LinUCBConfig, linear_users, linucb_learner

from bandit_unlearning.exact.tree import BinaryTree, leaf_path
from bandit_unlearning.testing import broken as broken_module
from bandit_unlearning.rl import batch as batch_module
from bandit_unlearning.rl.envs import riverswim
from bandit_unlearning.rl.stable import episode_users, stable_ucbvi
from bandit_unlearning.rl.ucbvi import UCBVIConfig

N_DELETIONS = 12
T = 16


# --- the broken variants (what the package must not do) -------------------------------------------
def _sfc64_state(key) -> dict:
    return {
        "bit_generator": "SFC64",
        "has_uint32": 0,
        "uinteger": 0,
        "state": {"state": np.array([key[0], key[1], key[2], 1], dtype=np.uint64)},
    }


def install_module_level_generator(monkeypatch):
    """``node_noise`` as it once was: one SFC64 at module level, re-seeded from each key (the same
    noise stream), left in the state of the last key it served."""
    bits = np.random.SFC64(0)
    normals = np.random.Generator(bits)

    def node_noise(key, d, sigma):
        key = np.asarray(key, dtype=np.uint64)
        if sigma == 0:
            return np.zeros(d)
        bits.state = _sfc64_state(key)
        bits.random_raw(12)
        z = normals.standard_normal(d)
        z *= sigma
        return z

    monkeypatch.setattr(tree_module, "_NOISE_BITS", bits, raising=False)
    for module in (tree_module, light_tree_module, broken_module):
        monkeypatch.setattr(module, "node_noise", node_noise)


def install_module_level_batch_generator(monkeypatch):
    """The batched engine's normals as they once were: a module-level SFC64 and state dict."""
    bits = np.random.SFC64(0)
    normals = np.random.Generator(bits)
    template = {"bit_generator": "SFC64", "has_uint32": 0, "uinteger": 0, "state": {"state": None}}

    def standard_normal(source, state, out):
        template["state"]["state"] = state
        bits.state = template
        bits.random_raw(12)
        normals.standard_normal(out=out)

    monkeypatch.setattr(batch_module, "_SFC64", bits, raising=False)
    monkeypatch.setattr(batch_module, "_STATE", template, raising=False)
    monkeypatch.setattr(batch_module, "_standard_normal", standard_normal)


# --- the deletion paths ------------------------------------------------------------------------------
def continuous_bandit_users(n, rng):
    return tuple(BanditUser(rng.uniform(0.05, 0.95, size=3)) for _ in range(n))


def _bandit(tree_factory, sigma):
    learner = ucb_bandit_learner(3, sigma, tree_factory=tree_factory)
    data = np.random.default_rng()

    def deletions(n):
        for _ in range(n):
            run = train(learner, continuous_bandit_users(T, data))
            t = int(data.integers(1, T + 1))
            x_t = run.tree.leaf(t)
            new, record = unlearn(run, DeleteStep(t))
            yield new.tree, [(t, x_t)], (new, record)

    return deletions


def _bandit_registry(sigma):
    """``unlearn_user`` of a user at two steps (both deleted in one coupling pass).  The horizon is 64,
    not ``T``: at 16 steps a two-step request's worst-case coupling cost exceeds one training, so the
    registry retrains from scratch and keeps no node of the deleted paths (nothing to attack)."""
    learner = ucb_bandit_learner(3, sigma)
    data = np.random.default_rng()
    horizon = 64

    def deletions(n):
        for _ in range(n):
            users = list(continuous_bandit_users(horizon, data))
            t1, t2 = sorted(int(v) for v in data.choice(np.arange(1, horizon + 1), size=2, replace=False))
            users[t2 - 1] = users[t1 - 1]
            run = train(learner, users)
            # the user's statistic at either step, for any arm: if the first deletion retrained, the
            # second step may have pulled another arm than in the original run
            xs = [(t, bandit_statistics(a, users[t1 - 1].rewards[a], 3)) for t in (t1, t2) for a in range(3)]
            # a node holding both steps was coupled once with both: its shift is the sum of the two
            xs += [
                (
                    t2,
                    bandit_statistics(a, users[t1 - 1].rewards[a], 3)
                    + bandit_statistics(b, users[t1 - 1].rewards[b], 3),
                )
                for a in range(3)
                for b in range(3)
            ]
            new, records = unlearn(run, DeleteUser(users[t1 - 1]))
            yield new.tree, xs, (new, records)

    return deletions


def _linucb(sigma):
    config = LinUCBConfig(3, 3)
    learner = linucb_learner(config, sigma)
    data = np.random.default_rng()

    def deletions(n):
        for _ in range(n):
            theta = data.uniform(-0.5, 0.5, size=(3, 3))
            run = train(learner, linear_users(theta, T))
            t = int(data.integers(1, T + 1))
            x_t = run.tree.leaf(t)
            new, record = unlearn(run, DeleteStep(t))
            yield new.tree, [(t, x_t)], (new, record)

    return deletions


def _ucbvi_user(sigma):
    """TV-stable UCB-VI, a user deleted by ``unlearn_user`` (the registry path)."""
    mdp = riverswim(horizon=3)
    learner = stable_ucbvi(mdp, T, sigma=sigma, bonus_scale=0.05)
    data = np.random.default_rng()

    def deletions(n):
        for _ in range(n):
            users = episode_users(T)
            run = train(learner, users)
            t = int(data.integers(1, T + 1))
            x_t = run.tree.leaf(t)
            new, records = unlearn(run, DeleteUser(users[t - 1]))
            yield new.tree, [(t, x_t)], (new, records)

    return deletions


# The registry's one-pass deletion gives the attack a kept node less often (a two-step user: the last
# node noised holds both steps, or the pass retrained): 9 of 24 deletions were recovered in two trial
# runs, so 40 deletions miss every one with probability about (15/24)**40 = 7e-9.
BROKEN_DELETIONS = {"UCB bandit: registry unlearn_user": 40}

PATHS = {
    "UCB bandit, LightTree: unlearn": lambda: _bandit(LightTree, 10.0),
    "UCB bandit, BinaryTree: unlearn": lambda: _bandit(BinaryTree, 10.0),
    "UCB bandit: registry unlearn_user": lambda: _bandit_registry(10.0),
    "TV-stable LinUCB: unlearn": lambda: _linucb(10.0),
    "TV-stable UCB-VI: registry unlearn_user": lambda: _ucbvi_user(30.0),
}


def attack(deletions, n: int = N_DELETIONS) -> dict:
    """Counts over ``n`` deletions: recovered from the package's state (``process``), recovered from
    the returned objects (``returned``), deletions after which the package's state held a bit generator
    (``generators``) or the deleted statistic or an old path node's clean value as an array
    (``vectors``)."""
    counts = dict.fromkeys(("process", "returned", "generators", "vectors"), 0)
    for tree, deleted, returned in deletions(n):
        state = F.package_state()
        process_keys = F.key_candidates(state)
        returned_keys = F.key_candidates(F.reachable(*returned))
        counts["process"] += any(F.recover_deleted_statistic(tree, t, x, process_keys) for t, x in deleted)
        counts["returned"] += any(F.recover_deleted_statistic(tree, t, x, returned_keys) for t, x in deleted)
        counts["generators"] += bool(F.generators_in(state))
        counts["vectors"] += any(F.holds_vector(state, x) for _, x in deleted)
    return counts


# --- the fixed package ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", list(PATHS))
def test_nothing_left_behind_gives_the_deleted_statistic(path):
    counts = attack(PATHS[path]())
    assert counts == {"process": 0, "returned": 0, "generators": 0, "vectors": 0}, (path, counts)


@pytest.mark.parametrize("path", list(PATHS))
def test_module_level_generator_gives_deleted_statistics_back(path, monkeypatch):
    """The broken variant: the same attack recovers deleted statistics from the imported modules."""
    install_module_level_generator(monkeypatch)
    n = BROKEN_DELETIONS.get(path, N_DELETIONS)
    counts = attack(PATHS[path](), n)
    assert counts["process"] >= 1, (path, counts)
    assert counts["generators"] == n
    assert counts["returned"] == 0  # the leak is the process, not the returned run


def test_the_package_keeps_no_generator_and_only_documented_caches():
    """Only caches of public parameters: a block layout by dimension, a calibration's sigma per unit
    sensitivity by (calibration, epsilon, delta), Gymnasium's environment class (imported lazily), a
    Paper A method's options by (method, k, gamma, sensitivity rule, protocol)."""
    for _ in _bandit(LightTree, 1.0)(2):
        pass
    state = F.package_state()
    assert F.generators_in(state) == []
    assert not [o for o in state if isinstance(o, (np.random.Generator, np.random.SeedSequence))]
    names = {f"{m}.{n}" for m, n, _ in F.cached_functions()}
    assert names == {
        "bandit_unlearning.exact.linucb._layout",
        "bandit_unlearning.experiments.paper_a._method_options",
        "bandit_unlearning.mab.unlearn._unit_sigma",
        "bandit_unlearning.rl.gym._env_class",
    }


def test_the_walk_reads_functools_caches():
    """The walk sees a cache's contents (so a cache keyed by data would be found)."""
    from bandit_unlearning.exact import linucb

    linucb._layout(7)
    state = F.package_state()
    assert any(isinstance(o, np.ndarray) and o.shape == (28,) and o.dtype == np.int64 for o in state)


def test_sfc64_rewind_recovers_the_seed_words():
    key = np.array([2**63 + 5, 17, 2**64 - 1], dtype=np.uint64)
    bits = np.random.SFC64(0)
    bits.state = _sfc64_state(key)
    bits.random_raw(12)
    np.random.Generator(bits).standard_normal(301)
    assert np.array_equal(F.sfc64_rewind(bits), key)


# --- the batched engine (it trains many runs; it has no deletion path) ------------------------------
def batch_key_recovered() -> tuple:
    """After ``run_batch`` over ``T = 16`` episodes (``D(16)`` is the root alone, so the noisy sum minus
    the clean sum is the root's noise): does a key the package keeps reproduce that noise?"""
    mdp = riverswim(horizon=3)
    config = UCBVIConfig.of(mdp, T, sigma=2.0)
    out = batch_module.run_batch(mdp, [config], [3], [None])
    noise = out.noisy_sum[0] - out.clean_sum[0]
    state = F.package_state()
    d = out.noisy_sum.shape[1]
    found = any(
        np.allclose(F.node_noise(k, d, 2.0), noise, rtol=0, atol=1e-9) for k in F.key_candidates(state)
    )
    return found, len(F.generators_in(state))


def test_batched_engine_keeps_no_key():
    assert batch_key_recovered() == (False, 0)


def test_module_level_batch_generator_keeps_the_last_key(monkeypatch):
    install_module_level_batch_generator(monkeypatch)
    assert batch_key_recovered() == (True, 1)


def test_paths_reach_the_deleted_leaf():
    """The attack's premise: a path node over the deleted leaf exists in the unlearned tree."""
    tree, deleted, _ = next(_bandit(LightTree, 10.0)(1))
    ((t, _),) = deleted
    assert leaf_path(t, tree.n_leaves)


# --- pickles: the same contract as saving ------------------------------------------------------------
KEY_HOLDERS = {"Run", "LightTree", "BinaryTree"}  # refuse to pickle without allow_secrets()


def _deletion_secrets(run, t: int, x_t) -> list:
    """Byte strings a pickle made after deleting step ``t`` of ``run`` must not hold: the deleted
    statistic's non-trivial entries and its norm, the old noise of every node over leaf ``t`` on the
    support of ``x_t`` (elsewhere the noise is that of the kept data: where a node's clean value is 0
    its noisy value *is* its noise), and (light tree) the keys of those nodes, which the deletion
    erased."""
    tree = run.tree
    path = leaf_path(t, tree.n_leaves)
    x_t = np.asarray(x_t, dtype=float)
    support = np.flatnonzero(x_t)
    floats = [v for v in x_t.tolist() if v not in (0.0, 1.0, -1.0)] + [float(np.linalg.norm(x_t))]
    for b in path:
        floats += (tree.noisy(b) - tree.clean(b))[support].tolist()
    out = F.float_bytes(floats)
    if isinstance(tree, LightTree):
        from bandit_unlearning.exact.tree import postorder_position

        out += F.key_bytes([tree._keys[postorder_position(b)] for b in path])
    return out


def _key_material(tree) -> list:
    """The node keys an unlearned light tree still holds (key material, though not the deleted user's)."""
    if not isinstance(tree, LightTree):
        return []
    return F.key_bytes(k for k in np.asarray(tree._keys[: tree.n_nodes]) if np.any(k))


def _public_objects(returned) -> list:
    """The returned objects and every object of the package's classes reachable from them."""
    return [returned] + [
        o
        for o in F.reachable(*returned)
        if F._ours(o) and not isinstance(o, type) and not callable(o) or type(o).__name__ in KEY_HOLDERS
    ]


def pickle_attack(deletions, n: int) -> dict:
    """Counts over ``n`` deletions: objects pickled without opt-in whose bytes hold a deleted secret or key
    material (``leaked``), whose unpickled copy gives the deleted statistic back (``recovered``),
    objects refused (``refused``, with the opt-in named) and, of an opt-in pickle of the unlearned run,
    deletions whose bytes hold a deleted secret (``opt_in_leaked``) or whose copy gives it back
    (``opt_in_recovered``)."""
    from bandit_unlearning.secrecy import allow_secrets

    counts = dict.fromkeys(
        ("objects", "refused", "bad_refusal", "leaked", "recovered", "opt_in_leaked", "opt_in_recovered"), 0
    )
    for before, tree, deleted, returned in deletions(n):
        secrets = [s for t, x in deleted for s in _deletion_secrets(before, t, x)]
        material = _key_material(tree)
        for obj in _public_objects(returned):
            found = F.pickle_walk(obj, secrets + material)
            counts["objects"] += 1
            if found.refused:
                counts["refused"] += 1
                holder = found.message.split(" holds ")[0].removeprefix("a ")
                counts["bad_refusal"] += holder not in KEY_HOLDERS or "allow_secrets()" not in found.message
                continue
            # a secret's bytes, or a tree in the copy (a light tree's keys; a dense tree's noisy minus clean
            # values are its noise, which no byte search would see)
            counts["leaked"] += found.hits > 0 or any(
                isinstance(o, (LightTree, BinaryTree)) for o in found.objects
            )
            keys = F.key_candidates(found.objects)
            counts["recovered"] += any(F.recover_deleted_statistic(tree, t, x, keys) for t, x in deleted)
        with allow_secrets():
            found = F.pickle_walk(returned[0], secrets)
        counts["opt_in_leaked"] += found.hits > 0
        keys = F.key_candidates(found.objects)
        counts["opt_in_recovered"] += any(F.recover_deleted_statistic(tree, t, x, keys) for t, x in deleted)
    return counts


def _pickle_paths():
    """The deletion paths, each also yielding the run before its deletion."""

    def bandit(tree_factory, sigma, diagnostics=False):
        learner = ucb_bandit_learner(3, sigma, tree_factory=tree_factory)
        data = np.random.default_rng()

        def deletions(n):
            for _ in range(n):
                run = train(learner, continuous_bandit_users(T, data))
                t = int(data.integers(1, T + 1))
                x_t = run.tree.leaf(t)
                new, record = unlearn(run, DeleteStep(t), options=ExactOptions(diagnostics=diagnostics))
                yield run, new.tree, [(t, x_t)], (new, record)

        return deletions

    def registry(sigma):
        learner = ucb_bandit_learner(3, sigma)
        data = np.random.default_rng()

        def deletions(n):
            for _ in range(n):
                users = list(continuous_bandit_users(T, data))
                t1, t2 = sorted(int(v) for v in data.choice(np.arange(1, T + 1), size=2, replace=False))
                users[t2 - 1] = users[t1 - 1]
                run = train(learner, users)
                xs = [(t, run.tree.leaf(t)) for t in (t1, t2)]
                new, records = unlearn(run, DeleteUser(users[t1 - 1]))
                yield (
                    run,
                    new.tree,
                    xs[1:],
                    (new, records),
                )  # the first step's path may be re-run by the second

        return deletions

    def linucb(sigma):
        learner = linucb_learner(LinUCBConfig(3, 3), sigma)
        data = np.random.default_rng()

        def deletions(n):
            for _ in range(n):
                run = train(learner, linear_users(data.uniform(-0.5, 0.5, size=(3, 3)), T))
                t = int(data.integers(1, T + 1))
                x_t = run.tree.leaf(t)
                new, record = unlearn(run, DeleteStep(t))
                yield run, new.tree, [(t, x_t)], (new, record)

        return deletions

    def ucbvi(sigma):
        learner = stable_ucbvi(riverswim(horizon=3), T, sigma=sigma, bonus_scale=0.05)
        data = np.random.default_rng()

        def deletions(n):
            for _ in range(n):
                users = episode_users(T)
                run = train(learner, users)
                t = int(data.integers(1, T + 1))
                x_t = run.tree.leaf(t)
                new, records = unlearn(run, DeleteUser(users[t - 1]))
                yield run, new.tree, [(t, x_t)], (new, records)

        return deletions

    return {
        "UCB bandit, LightTree: unlearn": lambda: bandit(LightTree, 3.0),
        "UCB bandit, BinaryTree: unlearn": lambda: bandit(BinaryTree, 3.0),
        "UCB bandit: registry unlearn_user": lambda: registry(3.0),
        "TV-stable LinUCB: unlearn": lambda: linucb(3.0),
        "TV-stable UCB-VI: registry unlearn_user": lambda: ucbvi(10.0),
        "diagnostics (opt-in): unlearn": lambda: bandit(LightTree, 3.0, diagnostics=True),
    }


PICKLE_PATHS = _pickle_paths()


@pytest.mark.parametrize("path", [p for p in PICKLE_PATHS if not p.startswith("diagnostics")])
def test_pickles_hold_no_key_material_and_nothing_deleted(path):
    n = 4
    counts = pickle_attack(PICKLE_PATHS[path](), n)
    assert counts["refused"] >= 2 * n  # at least the run and its tree, every time
    assert {
        k: counts[k] for k in ("bad_refusal", "leaked", "recovered", "opt_in_leaked", "opt_in_recovered")
    } == dict.fromkeys(("bad_refusal", "leaked", "recovered", "opt_in_leaked", "opt_in_recovered"), 0), (
        path,
        counts,
    )


def test_the_pickle_walk_finds_a_deleted_statistic_in_a_record():
    """Teeth: ``diagnostics=True`` (an opt-in) puts the deleted statistic's norm in the record, and
    the byte search finds it in the record's pickle every time."""
    counts = pickle_attack(PICKLE_PATHS["diagnostics (opt-in): unlearn"](), 4)
    assert counts["leaked"] >= 4, counts


@pytest.mark.parametrize(
    "path",
    [
        "UCB bandit, LightTree: unlearn",
        "UCB bandit, BinaryTree: unlearn",
        "TV-stable UCB-VI: registry unlearn_user",
    ],
)
def test_trees_that_pickle_freely_hand_out_their_keys(path, monkeypatch):
    """Teeth: with the refusal removed (trees and runs pickled like any object, as before) the pickle of
    every unlearned run holds key material -- node keys, or a dense tree's noise -- without anyone
    having opted in."""
    from bandit_unlearning.exact.learner import Run

    for cls in (LightTree, BinaryTree, Run):
        monkeypatch.setattr(cls, "__getstate__", lambda self: self.__dict__.copy())
    counts = pickle_attack(PICKLE_PATHS[path](), 3)
    assert counts["refused"] == 0 and counts["leaked"] >= 3, counts


# --- globals mutated at runtime ----------------------------------------------------------------------
# What the package's modules may change while it runs: caches keyed by public parameters only (a
# LinUCB block layout by dimension, a calibration's sigma per unit sensitivity, Gymnasium's class) and
# the per-MDP tables of the scalar rollout (the environment's transition CDFs, by MDP, weakly).
MAY_CHANGE = {
    "bandit_unlearning.exact.linucb._layout",
    "bandit_unlearning.mab.unlearn._unit_sigma",
    "bandit_unlearning.rl.gym._env_class",
    "bandit_unlearning.kernel._SPARSE",
}


def _changed_globals() -> set:
    before = F.global_fingerprints()
    for make in PATHS.values():
        for _ in make()(1):
            pass
    after = F.global_fingerprints()
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def test_deletion_paths_change_no_global_but_public_caches():
    changed = _changed_globals()
    assert changed <= MAY_CHANGE, sorted(changed - MAY_CHANGE)


def test_a_module_level_generator_shows_up_as_a_changed_global(monkeypatch):
    install_module_level_generator(monkeypatch)
    assert "bandit_unlearning.exact.tree._NOISE_BITS" in _changed_globals()


# --- Paper A: the deletion stream's state and records ----------------------------------------------
def _long_bytes(value: int) -> bytes:
    """The bytes ``pickle`` writes for a Python int (two's complement, little-endian, as LONG1/LONG4)."""
    return value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)


def _paper_a_deletion(method: str, seed: int):
    """An LCB model on continuous rewards (every reward a distinct, non-trivial float), one request of
    3 rows of the served arm served through ``LCBModel.delete`` (which calls the protocol's
    ``unlearn`` on a ``ReleaseState``) and the same request served by ``unlearn`` on the LCB statistic.
    Returns the objects a caller holds afterwards and the byte strings none of them may hold: the
    deleted rewards, their per-arm sum ``s_a``, and the arm's reward sum before the deletion
    (``S(a)``: with the new sum it gives ``s_a`` back), as floats and as the model's exact integer sum."""
    from bandit_unlearning.mab.data import OfflineDataset
    from bandit_unlearning.mab.lcb import fit_lcb
    from bandit_unlearning.mab.mechanisms import DeletionRequest
    from bandit_unlearning.mab.model import LCBModel
    from bandit_unlearning.mab.unlearn import UnlearnOptions
    from bandit_unlearning.protocol import unlearn as unlearn_any

    data = np.random.default_rng(seed)
    arms = np.repeat(np.arange(3), 200)
    rewards = data.uniform(0.05, 0.95, arms.size)
    options = {} if method == "rollback" else dict(epsilon=1.0, delta=1e-5, sigma=0.3)
    model = LCBModel.fit(arms, rewards, method=method, **options)
    served = model.policy_index
    before = model.release_state
    rows = np.flatnonzero(arms == served)[:3]
    request = DeletionRequest(arms[rows], rewards[rows])
    record = model.delete(rows=rows.tolist())
    after = model.release_state
    state = fit_lcb(OfflineDataset(arms, rewards, 3))
    new_state, result = unlearn_any(state, request, options=UnlearnOptions("rollback"))
    floats = rewards[rows].tolist() + [
        float(rewards[rows].sum()),
        float(before.sums[served]),
        float(state.reward_sums[served]),
    ]
    secrets = F.float_bytes(floats) + [_long_bytes(int(before.exact_sums[served]))]
    return (model, after, record, new_state, result), secrets, record


def test_paper_a_pickles_after_a_rollback_hold_nothing_deleted():
    """After a rolled-back deletion, pickles of the model, its new ``ReleaseState``, the ``DeletionRecord``,
    the new ``LCBState`` and the ``UnlearnResult`` hold none of the deleted statistic's byte strings.
    The rewards are uniform floats, so a chance collision of 8 bytes has probability ~1e-15 per search."""
    for seed in range(3):
        held, secrets, record = _paper_a_deletion("rollback", seed)
        assert record.method == "rollback"
        for obj in held:
            found = F.pickle_walk(obj, secrets)
            assert not found.refused and found.hits == 0, (type(obj).__name__, found.hits)


def test_paper_a_pickle_walk_finds_a_pending_request():
    """Teeth: while an adaptive model keeps a request pending (the Gaussian branch noises the score of
    the data the request is still part of), its released-from statistic holds the arm's sum before the
    deletion, and the same byte search finds it in the pickled ``ReleaseState`` -- by design: a later
    release is computed from it, and it leaves the state when the request is rolled back."""
    for seed in range(3):
        (model, after, *_), secrets, record = _paper_a_deletion("adaptive", seed)
        assert record.method == "gaussian" and after.pending_ids, record
        assert F.pickle_walk(after, secrets).hits > 0
