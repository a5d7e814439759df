"""Tests of bandit_unlearning.exact.light_tree (chapter B10): bit-identity with the dense
BinaryTree for the same generator, the learner with either tree, exactness, memory, bad input."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bandit_unlearning.exact.bandit import actions, bandit_users, ucb_bandit_learner
from bandit_unlearning.exact.learner import PrefixSumLearner, same_model, train, ZERO_USER
from bandit_unlearning.protocol import DeleteStep, unlearn, verify
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.exact.tree import (
    BinaryTree,
    Node,
    SparseStatistic,
    leaf_path,
    node_noise,
    postorder_position,
)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_identical(dense, light):
    n = dense.n_leaves
    assert light.n_leaves == n and light.n_nodes == dense.n_nodes
    assert same_bits(dense.leaves(), light.leaves())
    for a, b in zip(dense.values(), light.values()):
        assert same_bits(a, b)
    for t in range(n + 1):
        assert same_bits(dense.noisy_prefix_sum(t), light.noisy_prefix_sum(t)), t
        assert same_bits(dense.clean_prefix_sum(t), light.clean_prefix_sum(t)), t
    for t in range(1, n + 1):
        assert same_bits(dense.leaf(t), light.leaf(t))


def statistic(gen, d, kind):
    if kind == "dense":
        return gen.normal(size=d)
    k = int(gen.integers(0, d + 1))
    idx = gen.choice(d, k, replace=False)
    if kind == "integer":
        x = np.zeros(d)
        x[idx] = gen.integers(-3, 4, size=k)
        return x
    return SparseStatistic(idx, gen.normal(size=k))


def both(d, sigma, seed, capacity=1):
    return (
        BinaryTree(d, sigma, capacity),
        LightTree(d, sigma, capacity),
        np.random.default_rng(seed),
        np.random.default_rng(seed),
    )


# --- bit-identity over random operation sequences -----------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 30),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from(["dense", "integer", "sparse"]),
    st.integers(0, 2**32 - 1),
)
def test_bit_identical_under_random_operations(d, T, sigma, kind, seed):
    gen = np.random.default_rng(seed)
    dense, light, rd, rl = both(d, sigma, seed + 1)
    for _ in range(T):
        x = statistic(gen, d, kind)
        dense.append(x, rd)
        light.append(x, rl)
    assert_identical(dense, light)
    for _ in range(5):
        op = gen.random()
        if op < 0.6 and dense.n_leaves:
            t = int(gen.integers(1, dense.n_leaves + 1))
            x_new = statistic(gen, d, kind) if gen.random() < 0.5 else np.zeros(d)
            dense, light = dense.copy(), light.copy()
            assert dense.unlearn_leaf(t, x_new, rd) == light.unlearn_leaf(t, x_new, rl)
        elif op < 0.7:
            n = int(gen.integers(0, dense.n_leaves + 1))
            dense.truncate(n)
            light.truncate(n)
        else:
            for _ in range(int(gen.integers(1, 6))):
                x = statistic(gen, d, kind)
                dense.append(x, rd)
                light.append(x, rl)
        assert rd.bit_generator.state == rl.bit_generator.state
        assert_identical(dense, light)


def test_both_branches_are_covered_and_identical():
    """Many deletions on one tree: acceptances and rejections at every level, identical records."""
    gen = np.random.default_rng(0)
    xs = gen.normal(size=(32, 3))
    levels = set()
    for seed in range(60):
        dense, light, rd, rl = both(3, 1.5, seed)
        for x in xs:
            dense.append(x, rd)
            light.append(x, rl)
        t = int(gen.integers(1, 33))
        rec = dense.unlearn_leaf(t, np.zeros(3), rd)
        assert rec == light.unlearn_leaf(t, np.zeros(3), rl)
        levels.add(None if rec.rejected is None else rec.rejected.level)
        assert_identical(dense, light)
    assert None in levels and len(levels) >= 4


def test_accepted_nodes_keep_noisy_values_and_keys_are_erased():
    gen = np.random.default_rng(1)
    xs = gen.integers(0, 2, size=(16, 5)).astype(float)
    for seed in range(30):
        base = LightTree(5, 1.0)
        r = np.random.default_rng(seed)
        for x in xs:
            base.append(x, r)
        base.freeze()
        tree = base.copy()
        rec = tree.unlearn_leaf(7, np.zeros(5), r)
        visited = rec.path if rec.rejected is None else rec.path[: rec.path.index(rec.rejected) + 1]
        assert set(tree.touched) == set(visited)
        for b in visited:
            assert not tree._keys[postorder_position(b)].any()
        for b in rec.accepted:
            assert same_bits(tree.noisy(b), base.noisy(b))
        if rec.rejected is not None:
            b = rec.rejected
            assert same_bits(tree.noisy(b), (base.clean(b) + tree.clean(b)) - base.noisy(b))
            for a in rec.regenerated:
                assert not np.array_equal(tree.noisy(a) - tree.clean(a), base.noisy(a) - base.clean(a))
        assert np.array_equal(tree.leaf(7), np.zeros(5)) and np.array_equal(base.leaf(7), xs[6])


def test_zero_shift_changes_nothing():
    xs = np.random.default_rng(2).normal(size=(12, 3))
    dense, light, rd, rl = both(3, 1.0, 3)
    for x in xs:
        dense.append(x, rd)
        light.append(x, rl)
    before = [v.copy() for v in light.values()]
    rec = light.unlearn_leaf(5, xs[4], rl)
    assert rec == dense.unlearn_leaf(5, xs[4], rd)
    assert rec.rejected is None and light.touched == ()
    for a, b in zip(before, light.values()):
        assert same_bits(a, b)


def test_rl_sized_sparse_statistics():
    """d = 23,000 (the 5x5 gridworld's statistics), 3H = 30 non-zeros per episode, 24 episodes,
    dense input to the dense tree and sparse input to the light tree, two deletions."""
    d, H, T = 23_000, 10, 24
    gen = np.random.default_rng(4)
    sparse = [
        SparseStatistic(gen.choice(d, 3 * H, replace=False), gen.integers(0, 2, 3 * H).astype(float))
        for _ in range(T)
    ]
    dense_x = []
    for s in sparse:
        x = np.zeros(d)
        x[s.indices] = s.values
        dense_x.append(x)
    dense, light, rd, rl = both(d, 5.0, 5, capacity=T)
    for xd, xs in zip(dense_x, sparse):
        dense.append(xd, rd)
        light.append(xs, rl)
    assert light.nbytes < dense.nbytes / 20  # here mostly the decomposition: O(d log T)
    for t in (3, 17):
        dense, light = dense.copy(), light.copy()
        assert dense.unlearn_leaf(t, np.zeros(d), rd) == light.unlearn_leaf(t, SparseStatistic([], []), rl)
        for s in range(dense.n_leaves + 1, T + 1):
            dense.append(dense_x[s - 1], rd)
            light.append(sparse[s - 1], rl)
        for s in range(T + 1):
            assert same_bits(dense.noisy_prefix_sum(s), light.noisy_prefix_sum(s))
        for b in leaf_path(t, T):
            assert same_bits(dense.noisy(b), light.noisy(b)) and same_bits(dense.clean(b), light.clean(b))


def test_bincount_adds_in_order():
    """The light tree's running sums rely on np.bincount adding weights in input order."""
    vals = np.array([1e16, 1.0, -1e16, 1.0, 3.3, 1e-3, -7.1])
    idx = np.zeros(vals.size, dtype=np.int32)
    acc = 0.0
    for v in vals:
        acc += v
    assert np.bincount(idx, weights=vals, minlength=1)[0] == acc
    assert acc != np.sum(vals[::-1])  # order matters for these values


def test_one_noise_vector_per_step_and_memory_growth():
    d = 23_000
    tree, r = LightTree(d, 1.0, capacity=2048), np.random.default_rng(0)
    gen = np.random.default_rng(1)
    for t in range(2048):
        tree.append(SparseStatistic(gen.choice(d, 30, replace=False), np.ones(30)), r)
    # leaves (12 B per non-zero, doubling buffer), pointers, keys, and O(d log T) for D(n)
    assert tree.nbytes < 2048 * (2 * 30 * 12 + 8 + 32) + 64 * 12 + 3 * 8 * d
    assert tree.nbytes < BinaryTree(d, 1.0, capacity=2048).nbytes / 500


def test_node_noise_is_keyed():
    key = np.array([3, 4, 5], dtype=np.uint64)
    a = node_noise(key, 7, 2.0)
    assert np.array_equal(a, node_noise(key, 7, 2.0))
    assert not np.array_equal(a, node_noise(np.array([3, 4, 6], dtype=np.uint64), 7, 2.0))
    assert np.array_equal(node_noise(key, 7, 0.0), np.zeros(7))
    np.testing.assert_allclose(node_noise(key, 7, 4.0), 2 * a)


# --- the learner with either tree --------------------------------------------------------------
def test_default_tree_is_light():
    assert ucb_bandit_learner(3, 1.0).tree_factory is LightTree
    lrn = PrefixSumLearner(
        d=1, sigma=1.0, oracle=lambda u, t, w: np.array([1.0]), update=lambda u, t, w: w, initial_model=0
    )
    assert lrn.tree_factory is LightTree


def test_learner_runs_and_unlearning_identical():
    users = bandit_users([0.7, 0.5, 0.3], 60, seed=2)
    runs = {
        cls: train(ucb_bandit_learner(3, 1.5, tree_factory=cls), users, np.random.default_rng(9))
        for cls in (BinaryTree, LightTree)
    }
    assert all(same_model(a, b) for a, b in zip(runs[BinaryTree].models, runs[LightTree].models))
    for i, t in enumerate((13, 60, 1, 31, 32)):
        new = {cls: unlearn(run, DeleteStep(t), rng=np.random.default_rng(i)) for cls, run in runs.items()}
        assert new[BinaryTree][1] == new[LightTree][1]
        runs = {cls: r for cls, (r, _) in new.items()}
        assert all(same_model(a, b) for a, b in zip(runs[BinaryTree].models, runs[LightTree].models))
        verify(runs[LightTree])
    assert_identical(runs[BinaryTree].tree, runs[LightTree].tree)


def bandit_statistics(run, t):
    out = {}
    for b in leaf_path(t, run.T):
        v = run.tree.noisy(b)
        out[f"{b} pulls"], out[f"{b} rewards"] = v[:2].sum(), v[2:].sum()
    w = np.minimum(run.final_model, 1e6)
    out["index 0"], out["index 1"] = w[0], w[1]
    out["pulls of arm 0"] = float(np.sum(actions(run) == 0))
    return out


def test_exactness_battery_with_light_tree():
    """Chapter B4's battery, small: unlearned light-tree runs vs runs with the dummy in place
    (11 tests, Bonferroni at 1e-6: a correct implementation fails with probability < 1e-6)."""
    from bandit_unlearning.experiments.exactness import battery

    users, t, rng = bandit_users([0.8, 0.2], 8, seed=5), 3, np.random.default_rng(12)
    learner = ucb_bandit_learner(2, 1.0)
    dummy_users = users[: t - 1] + (ZERO_USER,) + users[t:]
    sample_u, sample_d, retrained = [], [], []
    for _ in range(250):
        sample_d.append(bandit_statistics(train(learner, dummy_users, rng), t))
        new, rec = unlearn(train(learner, users, rng), DeleteStep(t), rng=rng)
        sample_u.append(bandit_statistics(new, t))
        retrained.append(rec.retrained)
    pv = battery(sample_u, sample_d)
    assert len(pv) == 11 and min(pv.values()) > 1e-6 / len(pv)
    assert any(retrained) and not all(retrained)


def test_to_dense_and_broken_variants_on_light_runs():
    from bandit_unlearning.testing.broken import VARIANTS, with_tree_class

    users = bandit_users([0.7, 0.3], 20, seed=3)
    run = train(ucb_bandit_learner(2, 1.0), users, np.random.default_rng(0))
    dense = run.tree.to_dense()
    assert isinstance(dense, BinaryTree) and not dense.frozen
    assert_identical(dense, run.tree)
    for cls in VARIANTS.values():
        broken = with_tree_class(run, cls)
        assert type(broken.tree) is cls and broken.tree.frozen
        assert_identical(broken.tree, run.tree)
        unlearn(broken, DeleteStep(5), rng=np.random.default_rng(1))


# --- copies, freezing, bad input --------------------------------------------------------------
def test_copy_freeze_truncate():
    xs = np.random.default_rng(4).normal(size=(12, 2))
    tree, r = LightTree(2, 1.0), np.random.default_rng(0)
    for x in xs:
        tree.append(x, r)
    tree.freeze()
    with pytest.raises(ValueError, match="frozen"):
        tree.append(np.zeros(2), r)
    with pytest.raises(ValueError, match="frozen"):
        tree.unlearn_leaf(1, np.zeros(2), r)
    with pytest.raises(ValueError):
        tree.values()[0][0, 0] = 1.0
    c = tree.copy()
    assert not c.frozen and c.n_leaves == 12
    c.truncate(5)
    assert c.n_leaves == 5 and tree.n_leaves == 12
    assert same_bits(c.noisy_prefix_sum(5), tree.noisy_prefix_sum(5))
    c.append(np.ones(2), r)
    assert np.array_equal(c.leaf(6), np.ones(2)) and np.array_equal(tree.leaf(6), xs[5])
    idx, val = tree.leaf_sparse(3)
    assert np.array_equal(idx, [0, 1]) and np.array_equal(val, xs[2])


BAD_CONSTRUCTORS = [
    (lambda cls: cls(0, 1.0), ValueError),
    (lambda cls: cls(3, -1.0), ValueError),
    (lambda cls: cls(3, float("nan")), ValueError),
    (lambda cls: cls(3, 1.0, capacity=0), ValueError),
    (lambda cls: cls(2.5, 1.0), TypeError),
    (lambda cls: cls(3, 1.0).noisy_prefix_sum(1), ValueError),
    (lambda cls: cls(3, 1.0).leaf(0), ValueError),
]


@pytest.mark.parametrize("cls", [BinaryTree, LightTree])
@pytest.mark.parametrize("call, exc", BAD_CONSTRUCTORS)
def test_bad_construction(cls, call, exc):
    with pytest.raises(exc):
        call(cls)


BAD_STATISTICS = [
    np.zeros(4),
    np.zeros((1, 3)),
    np.array([0.0, np.nan, 0.0]),
    np.array([np.inf, 0, 0]),
    SparseStatistic([0, 0], [1.0, 2.0]),
    SparseStatistic([3], [1.0]),
    SparseStatistic([-1], [1.0]),
    SparseStatistic([1], [np.nan]),
]


def test_sparse_statistic_refuses_what_does_not_depend_on_d():
    with pytest.raises(TypeError, match="indices must be integers"):
        SparseStatistic([0.5], [1.0])
    with pytest.raises(ValueError, match="the same length"):
        SparseStatistic([0, 1], [1.0])


@pytest.mark.parametrize("cls", [BinaryTree, LightTree])
def test_bad_input_leaves_tree_and_generator_unchanged(cls):
    xs = np.random.default_rng(8).normal(size=(6, 3))
    tree, r = cls(3, 1.0), np.random.default_rng(1)
    for x in xs:
        tree.append(x, r)
    before = [v.copy() for v in tree.values()]
    prefix = [tree.noisy_prefix_sum(t) for t in range(7)]
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for bad in BAD_STATISTICS:
        with pytest.raises((ValueError, TypeError), match="x"):
            tree.append(bad, rng)
        with pytest.raises((ValueError, TypeError), match="x_new"):
            tree.unlearn_leaf(2, bad, rng)
    for t in (0, 7, -1):
        with pytest.raises(ValueError, match="t must"):
            tree.unlearn_leaf(t, np.zeros(3), rng)
    with pytest.raises(TypeError):
        tree.unlearn_leaf(2, np.zeros(3), "not a generator")
    with pytest.raises(TypeError, match="rng"):
        tree.append(np.zeros(3), 4.2)
    with pytest.raises(ValueError, match="not complete"):
        tree.noisy(Node(3, 0))
    with pytest.raises(ValueError, match="not complete"):
        tree.clean(Node(3, 0))
    with pytest.raises(ValueError):
        tree.truncate(7)
    assert tree.n_leaves == 6 and rng.bit_generator.state == state
    for a, b in zip(before, tree.values()):
        assert same_bits(a, b)
    assert all(same_bits(p, tree.noisy_prefix_sum(t)) for t, p in enumerate(prefix))


def test_sparse_and_dense_input_are_the_same_statistic():
    d = 5
    dense, light, rd, rl = both(d, 1.0, 0)
    x = SparseStatistic(np.array([4, 1]), np.array([2.0, -0.0]))  # unsorted, an explicit zero
    dense.append(x, rd)
    light.append(np.array([0.0, 0.0, 0.0, 0.0, 2.0]), rl)
    assert_identical(dense, light)
    assert np.array_equal(light.leaf_sparse(1)[0], [4])
    run = train(
        dataclasses.replace(ucb_bandit_learner(2, 1.0)),
        bandit_users([0.5, 0.5], 4, seed=1),
        np.random.default_rng(0),
    )
    assert isinstance(run.tree, LightTree)


def test_tree_memory_benchmark_writes_the_issue_keys(tmp_path):
    """Smoke test of benchmarks/tree_memory.py (tiny T, fresh processes; no timing is asserted)."""
    import json
    import runpy
    from pathlib import Path

    bench = runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "tree_memory.py"))
    out = tmp_path / "tree_memory.json"
    assert bench["main"](["--T", "16", "--dense-max-gb", "0.05", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    keys = {
        "T",
        "light_peak_mb",
        "dense_peak_mb",
        "light_episodes_per_s",
        "dense_episodes_per_s",
        "S",
        "A",
        "H",
        "d",
    }
    assert keys <= set(result) and result["T"] == [16] and result["d"] == 23_000
    assert (
        result["light_peak_mb"][0] > 0
        and result["dense_peak_mb"][0] > 0
        and result["same_final_policy"] == [True]
    )
    assert "workload" in result and "ru_maxrss" in result["memory_method"]
