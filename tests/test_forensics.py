"""Forensics: after a deletion, nothing reachable from what the library returns gives the deleted data back.

Each test plays an attacker who holds the returned objects (the unlearned run and the deletion record,
an unlearning release, a stored state) and everything reachable from them -- walked recursively over
``__dict__``, ``__slots__``, dataclass fields, containers, ``functools.partial`` and closures, numpy
arrays -- also after a pickle round trip, and the pickle bytes themselves.  The attacks are the ones
the library has to resist:

* a deletion record that holds a number computed from the deleted statistic (its norm gives the
  deleted reward: ``sqrt(||x_t||^2 - 1)`` for the bandit, ``||x_t||^2 - 2H`` is an RL episode's return;
  the TV of the shift, the exact retraining probability and expected cost are invertible functions
  of it);
* node keys regenerated from a guessed seed (0..1000): stored keys confirm the guess, the erased key
  of the deleted leaf comes back, and kept noisy value minus noise minus the other leaves is ``x_t``;
  the same for the noise of Paper A's Gaussian branch;
* a replayable user rebuilt from what the run keeps (a population seed, positions as user keys, the
  other users' keys) and replayed through the learner's own oracle;
* arrays of a frozen state made writeable by unpickling.

Library defaults are used wherever the attack is about defaults (no generator given); tests marked
"opt-in" show that the same attack succeeds when the caller deliberately seeds with a guessable seed
(so the attacks are not vacuous, and the seed really is key material).
"""

import dataclasses
import functools
import math
import pickle
import struct
import types

import numpy as np
import pytest
from scipy.special import erfinv

from bandit_unlearning.exact.bandit import BanditUser, chosen_arm, ucb_bandit_learner
from bandit_unlearning.exact.learner import ExactOptions, train
from bandit_unlearning.protocol import DeleteStep, unlearn
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.exact.tree import (
    BinaryTree,
    Node,
    draw_node_keys,
    leaf_path,
    n_nodes,
    node_noise,
    postorder_position,
)
from bandit_unlearning.rl.envs import garnet, riverswim
from bandit_unlearning.rl.stable import episode_users, stable_ucbvi

SEED_GUESSES = range(1001)


@pytest.fixture(autouse=True)
def _runs_may_be_pickled():
    """The attacker here holds pickles the owner made on purpose: runs and trees pickle only inside
    ``allow_secrets()`` (tests/test_secrets_state.py checks the refusal itself)."""
    from bandit_unlearning.secrecy import allow_secrets

    with allow_secrets():
        yield


# --- the walk ----------------------------------------------------------------------------------------
def reachable(*roots):
    """Every object reachable from ``roots`` (iterative, no gc): containers, instance ``__dict__`` and
    ``__slots__``, dataclass fields, ``functools.partial`` parts, closure cells and defaults of
    functions, elements of object arrays.  Modules and classes are not entered."""
    seen, stack, out = set(), list(roots), []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type)):
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif isinstance(obj, np.ndarray):
            if obj.dtype == object:
                stack.extend(obj.ravel().tolist())
            continue
        elif isinstance(obj, (str, bytes, int, float, complex, bool, type(None), np.generic)):
            continue
        if isinstance(obj, functools.partial):
            stack.extend((obj.func, obj.args, obj.keywords))
        if isinstance(obj, types.FunctionType):
            stack.extend(c.cell_contents for c in (obj.__closure__ or ()) if _has_contents(c))
            stack.extend((obj.__defaults__, obj.__kwdefaults__))
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


def reachable_with_pickle(*roots):
    """``reachable`` of the objects and of their unpickled copy, plus the pickle bytes."""
    blob = pickle.dumps(roots)
    return reachable(*roots) + reachable(*pickle.loads(blob)), blob


def floats_in(objects) -> np.ndarray:
    """Every real number held by the objects (Python floats, numpy float scalars and arrays)."""
    out = []
    for o in objects:
        if isinstance(o, (float, np.floating)):
            out.append(float(o))
        elif isinstance(o, np.ndarray) and o.dtype.kind == "f":
            out.extend(o.ravel().tolist())
    return np.array(out, dtype=float)


def ints_in(objects) -> set:
    """Every integer held by the objects (Python ints, numpy integer scalars and arrays)."""
    out = set()
    for o in objects:
        if isinstance(o, (int, np.integer)) and not isinstance(o, bool):
            out.add(int(o))
        elif isinstance(o, np.ndarray) and o.dtype.kind in "iu":
            out.update(o.ravel().tolist())
    return out


def bytes_of(values) -> list:
    """The 8-byte encodings a pickle may hold a float in (big-endian for Python floats, little-endian
    in numpy buffers)."""
    return [struct.pack(order, v) for v in values for order in (">d", "<d")]


# --- attack 1: the deletion record -------------------------------------------------------------------
def rewards_from_record_numbers(values: np.ndarray, sigma: float, path: tuple, T: int) -> np.ndarray:
    """Every candidate deleted reward ``r`` (bandit, zero dummy: ``||x_t|| = sqrt(1 + r^2)``) that a
    number could encode: as the shift itself, as its per-node TV, as the exact retraining probability
    over ``path``, or as the exact expected steps recomputed."""
    v = values[np.isfinite(values)]
    shifts = [v[v >= 1]]
    tv = v[(v > 0) & (v < 1)]
    shifts.append(2 * math.sqrt(2) * sigma * erfinv(tv))  # TV = erf(shift / (2 sqrt2 sigma))
    p = v[(v > 0) & (v < 1)]
    shifts.append(2 * math.sqrt(2) * sigma * erfinv(1 - (1 - p) ** (1 / len(path))))
    steps = v[(v > 0) & (v < T)]  # expected steps: invert by bisection
    lo, hi = np.zeros_like(steps), np.ones_like(steps)
    for _ in range(60):
        mid = (lo + hi) / 2
        cost = sum((1 - mid) ** k * mid * (T - b.end) for k, b in enumerate(path))
        lo, hi = np.where(cost < steps, mid, lo), np.where(cost < steps, hi, mid)
    shifts.append(2 * math.sqrt(2) * sigma * erfinv((lo + hi) / 2))
    s = np.concatenate(shifts)
    s = s[s >= 1]
    return np.sqrt(s * s - 1)


def continuous_bandit_users(n: int, rng) -> tuple:
    """Users with continuous rewards, so that a recovered reward cannot be a coincidence."""
    return tuple(BanditUser(rng.uniform(0.05, 0.95, size=3)) for _ in range(n))


def record_attack(n_deletions: int, diagnostics: bool) -> tuple:
    """(recovered from the walk, recovered from the pickle bytes) over ``n_deletions`` deletions."""
    data_rng, tree_rng = np.random.default_rng(11), np.random.default_rng(12)
    learner = ucb_bandit_learner(3, 2.0)
    T = 64
    users = continuous_bandit_users(T, data_rng)
    run = train(learner, users, tree_rng)
    by_walk = by_bytes = 0
    for t in data_rng.choice(np.arange(1, T + 1), size=n_deletions, replace=False):
        t = int(t)
        reward = users[t - 1].rewards[chosen_arm(run.models[t - 1])]
        shifts = [
            math.sqrt(1 + reward**2),
            float(np.linalg.norm(run.tree.leaf(t))),
        ]  # as computed, to the bit
        kwargs = {"diagnostics": True} if diagnostics else {}
        new, rec = unlearn(run, DeleteStep(t), options=ExactOptions(**kwargs), rng=tree_rng)
        objects, blob = reachable_with_pickle(new, rec)
        candidates = rewards_from_record_numbers(floats_in(objects), learner.sigma, leaf_path(t, T), T)
        by_walk += bool(np.any(np.abs(candidates - reward) < 1e-9))
        by_bytes += any(b in blob for b in bytes_of(shifts))
    return by_walk, by_bytes


def test_deletion_record_holds_nothing_computed_from_the_deleted_statistic():
    by_walk, by_bytes = record_attack(20, diagnostics=False)
    assert (by_walk, by_bytes) == (0, 0), (
        f"deleted rewards recovered: {by_walk}/20 by the walk, {by_bytes}/20 in the pickle"
    )


def test_opt_in_diagnostics_do_reveal_the_deleted_reward():
    """The switch is off by default because of this: with diagnostics the attack succeeds every time."""
    assert record_attack(5, diagnostics=True) == (5, 5)


def test_rl_record_does_not_give_the_episode_return():
    mdp = riverswim(horizon=3)
    learner = stable_ucbvi(mdp, 16, sigma=1.0, bonus_scale=0.05)
    run = train(learner, episode_users(16, rng=np.random.default_rng(1)), np.random.default_rng(2))
    public = {learner.B, learner.sigma}
    leaked = 0
    for t in (2, 7, 12):
        x = run.tree.leaf(t)
        episode_return = int(round(float(x @ x))) - 2 * mdp.H
        new, rec = unlearn(run, DeleteStep(t), rng=np.random.default_rng(t))
        values = [v for v in floats_in(reachable(rec)).tolist() if v not in public]
        leaked += any(abs(v * v - 2 * mdp.H - episode_return) < 1e-9 for v in values)
    assert leaked == 0


# --- attack 2: node keys regenerated from a guessed seed ---------------------------------------------
def seed_attack(run, t, true_x, guesses=SEED_GUESSES) -> bool:
    """Find a seed whose first keys explain the noise of the nodes completed before leaf ``t`` (their
    keys are the original ones), then subtract the regenerated noise from a kept path node of leaf
    ``t``: True if that gives the deleted statistic ``true_x`` back."""
    tree, T, d, sigma = run.tree, run.T, run.learner.d, run.learner.sigma
    probe = Node(0, 0) if t > 1 else None  # leaf 1's node: its key is never touched
    if probe is None:
        return False
    noise_probe = tree.noisy(probe) - tree.clean(probe)
    for guess in guesses:
        keys = draw_node_keys(np.random.default_rng(guess), n_nodes(T))
        if not np.allclose(node_noise(keys[0], d, sigma), noise_probe, rtol=0, atol=1e-9):
            continue
        for b in leaf_path(t, T):
            others = tree.clean(b)  # the new clean value: the other leaves (+ 0)
            candidate = tree.noisy(b) - node_noise(keys[postorder_position(b)], d, sigma) - others
            if np.allclose(candidate, true_x, rtol=0, atol=1e-9):
                return True
        return False
    return False


def deletions_recovered_by_seed(make_run, n_runs: int = 3, per_run: int = 4) -> int:
    data_rng = np.random.default_rng(21)
    recovered = 0
    for _ in range(n_runs):
        users = continuous_bandit_users(32, data_rng)
        run = make_run(users)
        for t in data_rng.choice(np.arange(2, 33), size=per_run, replace=False):
            t = int(t)
            new, _ = unlearn(run, DeleteStep(t), **make_run.unlearn_args)
            unpickled = pickle.loads(pickle.dumps(new))
            recovered += seed_attack(new, t, run.tree.leaf(t)) or seed_attack(unpickled, t, run.tree.leaf(t))
    return recovered


@pytest.mark.parametrize("tree_factory", [LightTree, BinaryTree])
def test_default_keys_cannot_be_regenerated_from_a_guessed_seed(tree_factory):
    learner = ucb_bandit_learner(3, 3.0, tree_factory=tree_factory)

    def make_run(users):
        return train(learner, users)  # the default: no generator given

    make_run.unlearn_args = {}
    assert deletions_recovered_by_seed(make_run) == 0


def test_opt_in_seed_is_key_material():
    """A run trained from ``default_rng(seed)`` with a small seed: the attack recovers deleted users."""
    learner = ucb_bandit_learner(3, 3.0)
    seeds = iter([0, 7, 1000])

    def make_run(users):
        return train(learner, users, np.random.default_rng(next(seeds)))

    make_run.unlearn_args = {"rng": np.random.default_rng(99)}
    assert deletions_recovered_by_seed(make_run) >= 6  # of 12: every deletion whose path kept a node


def test_stored_keys_are_not_raw_generator_outputs():
    """Keys derived one-way: the still-stored keys do not expose the generator's state or stream."""
    run = train(
        ucb_bandit_learner(3, 1.0),
        continuous_bandit_users(16, np.random.default_rng(3)),
        np.random.default_rng(5),
    )
    stored = set(run.tree._keys[: n_nodes(16)].ravel().tolist())
    raw = set(np.random.default_rng(5).bit_generator.random_raw(3 * n_nodes(16) + 100).tolist())
    assert not stored & raw


# --- attack 3: replaying a deleted RL user -----------------------------------------------------------
def fingerprint(oracle, user, t, policies) -> list:
    return [oracle(user, t, pi) for pi in policies]


def replay_candidates(objects, run, t: int, oracle):
    """Everything the attacker may feed the oracle: every reachable object, every position (users used
    to be positions of a population), an ``EpisodeUser`` for every reachable 64-bit integer, and, for
    every kept user with a key, the user at position ``t`` of the population that key would belong to."""
    yield from objects
    yield from range(run.T)
    try:
        from bandit_unlearning.rl.stable import EpisodeUser, population_users
    except ImportError:
        return
    yield from (EpisodeUser(k) for k in ints_in(objects) if 0 <= k < 2**64)
    mdp = oracle.mdp
    stride = 3 * mdp.H * mdp.S * mdp.A * 0x9E3779B97F4A7C15
    for i, user in enumerate(run.users):
        if isinstance(user, EpisodeUser):
            yield population_users(mdp, 1, seed=(user.key - i * stride) % 2**64, start=t - 1)[0]


def replays(oracle, candidate, t: int, policies, target) -> bool:
    """Whether ``candidate`` answers every policy exactly as the deleted user did (cheap test first)."""
    try:
        if not np.array_equal(oracle(candidate, t, policies[0]), target[0]):
            return False
        return all(np.array_equal(oracle(candidate, t, pi), x) for pi, x in zip(policies, target))
    except (TypeError, ValueError):
        return False


def rl_replay_attack(make_users) -> tuple:
    """(deletions whose user was replayed from the unlearned run or its pickle, deletions)."""
    # a random MDP with long episodes: two different users answering 24 random policies identically
    # would be a coincidence (on a tiny MDP it is not, and the fingerprint would mean nothing)
    mdp = garnet(8, 3, 4, 10, np.random.default_rng(3))
    T = 12
    learner = stable_ucbvi(mdp, T, sigma=1.0, bonus_scale=0.05)
    policy_rng = np.random.default_rng(4)
    policies = [policy_rng.integers(0, mdp.A, size=(mdp.H, mdp.S)) for _ in range(24)]
    replayed = n = 0
    for run_seed in (1, 2):
        users = make_users(mdp, T)
        run = train(learner, users, np.random.default_rng(run_seed))
        for t in (3, 8):
            target = fingerprint(learner.oracle, users[t - 1], t, policies)
            new, rec = unlearn(run, DeleteStep(t), rng=np.random.default_rng(t))
            objects, _ = reachable_with_pickle(new, rec)
            oracles = [o for o in objects if callable(o) and hasattr(o, "sparse")]
            assert oracles  # the walk found the learner's oracle
            n += 1
            replayed += any(
                replays(oracle, candidate, t, policies, target)
                for oracle in oracles
                for run_ in (new, pickle.loads(pickle.dumps(new)))
                for candidate in replay_candidates(objects, run_, t, oracle)
            )
    return replayed, n


def test_deleted_rl_user_cannot_be_replayed():
    replayed, n = rl_replay_attack(lambda mdp, T: episode_users(T))  # the default: independent keys
    assert replayed == 0, f"{replayed}/{n} deleted users replayed from the unlearned run"


def test_opt_in_population_users_are_replayed():
    """Users of a reproducible population: any kept key gives the seed, the seed the deleted user."""
    from bandit_unlearning.rl.stable import population_users

    replayed, n = rl_replay_attack(lambda mdp, T: population_users(mdp, T, seed=5))
    assert replayed == n == 4


# --- attack 4: Paper A's Gaussian branch ------------------------------------------------------------
def gaussian_release_attack(release_fn, n: int = 10) -> int:
    """The Gaussian branch releases f(D) + sigma z: the noised arm's score of the ORIGINAL data.  Guess
    the seed of z; a right guess makes the deleted points' reward sum an integer (0/1 rewards) --
    count the requests whose deleted sum comes back exactly."""
    from bandit_unlearning.mab.data import fixed_sample_dataset
    from bandit_unlearning.mab.lcb import LCBState, fit_lcb
    from bandit_unlearning.mab.mechanisms import DeletionRequest

    data_rng = np.random.default_rng(31)
    recovered = 0
    for _ in range(n):
        D = fixed_sample_dataset([0.6, 0.5, 0.4], [200, 200, 200], data_rng)
        state = fit_lcb(D)
        a0, k = state.arm, 20
        request = DeletionRequest.from_indices(D, np.flatnonzero(D.arms == a0)[:k])
        res = release_fn(state, request)
        kept = LCBState(
            state.counts - request.deleted_counts(3), state.reward_sums - request.deleted_sums(3), state.tau
        )
        n_a0, s_kept = state.counts[a0], kept.reward_sums[a0]
        radius = state.radii[a0]
        objects, _ = reachable_with_pickle(res)
        sigma = res.sigma
        for guess in SEED_GUESSES:
            z = np.random.default_rng(guess).standard_normal()
            s_del = (res.scores[a0] - sigma * z + radius) * n_a0 - s_kept
            if abs(s_del - round(s_del)) < 1e-6 and 0 <= round(s_del) <= k:
                recovered += round(s_del) == request.deleted_sums(3)[a0]
                break
        assert floats_in(objects).size  # the walk saw the release
    return recovered


def test_gaussian_branch_noise_cannot_be_regenerated_by_default():
    from bandit_unlearning.mab.unlearn import UnlearnOptions

    recovered = gaussian_release_attack(
        lambda state, request: unlearn(state, request, options=UnlearnOptions(method="gaussian", gamma=0.5))[
            1
        ]
    )
    assert recovered == 0


def test_opt_in_seeded_gaussian_release_is_recovered():
    from bandit_unlearning.mab.unlearn import UnlearnOptions

    seeds = iter(range(0, 1000, 97))
    recovered = gaussian_release_attack(
        lambda state, request: unlearn(
            state,
            request,
            options=UnlearnOptions(method="gaussian", gamma=0.5),
            rng=np.random.default_rng(next(seeds)),
        )[1]
    )
    assert recovered == 10


# --- attack 5: unpickled frozen states are writeable ------------------------------------------------
def _frozen_states():
    from bandit_unlearning.mab.data import OfflineDataset
    from bandit_unlearning.mab.imitation import ImitationState
    from bandit_unlearning.mab.lcb import LCBState
    from bandit_unlearning.mab.lower_bounds import fixed_sample_pair
    from bandit_unlearning.mab.mechanisms import DeletionRequest
    from bandit_unlearning.mab.unlearn import UnlearnOptions

    state = LCBState([30, 40, 50], [10.0, 20.0, 30.0], 0.01)
    request = DeletionRequest([1, 1], [1.0, 0.0])
    bandit_run = train(
        ucb_bandit_learner(3, 1.0),
        continuous_bandit_users(8, np.random.default_rng(0)),
        np.random.default_rng(1),
    )
    dense_run = train(
        ucb_bandit_learner(3, 1.0, tree_factory=BinaryTree),
        continuous_bandit_users(8, np.random.default_rng(0)),
        np.random.default_rng(1),
    )
    return {
        "LCBState": state,
        "OfflineDataset": OfflineDataset([0, 1, 1], [0.5, 1.0, 0.0], 2),
        "DeletionRequest": request,
        "ImitationState": ImitationState([3, 4, 5]),
        "TwoPointPair": fixed_sample_pair(40, 5),
        "UnlearnResult": unlearn(
            state, request, options=UnlearnOptions(method="gaussian", gamma=0.5), rng=np.random.default_rng(0)
        )[1],
        "TabularMDP": riverswim(horizon=3),
        "BanditUser": BanditUser([0.2, 0.8]),
        "Run (light tree)": bandit_run,
        "Run (dense tree)": dense_run,
    }


def _arrays(obj, writeable: bool) -> list:
    return [
        o for o in reachable(obj) if isinstance(o, np.ndarray) and o.size and o.flags.writeable == writeable
    ]


@pytest.mark.parametrize("name", list(_frozen_states()))
def test_unpickled_frozen_states_stay_readonly(name):
    obj = _frozen_states()[name]
    assert _arrays(obj, writeable=False), f"{name} stores no read-only array"
    loaded = pickle.loads(pickle.dumps(obj))
    before, after = _arrays(obj, writeable=True), _arrays(loaded, writeable=True)
    assert len(after) == len(before), (
        f"unpickled {name}: {len(after)} writeable arrays instead of {len(before)} "
        f"(shapes {[a.shape for a in after]})"
    )


def test_unpickled_lcb_state_refuses_assignment():
    from bandit_unlearning.mab.lcb import LCBState

    loaded = pickle.loads(pickle.dumps(LCBState([3, 4], [1.0, 2.0], 0.1)))
    with pytest.raises(ValueError, match="read-only"):
        loaded.counts[0] = 0
    with pytest.raises(ValueError, match="read-only"):
        loaded.reward_sums[0] = 0.0
