"""Tests of bandit_unlearning.exact.tree (chapter B2): bookkeeping, loop oracles, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bandit_unlearning.exact.tree import (
    BinaryTree,
    Node,
    dyadic_decomposition,
    eps_app,
    leaf_path,
    n_nodes,
    node_at,
    nodes_completed_at,
    path_length,
    path_tv,
    postorder_position,
    prefix_error_union_bound,
    sigma_exact,
    sigma_paper,
)


def build(xs, sigma=1.0, seed=0, capacity=1):
    tree = BinaryTree(xs.shape[1], sigma, capacity=capacity)
    rng = np.random.default_rng(seed)
    for x in xs:
        tree.append(x, rng)
    return tree


# --- bookkeeping: property tests -----------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=10**9))
def test_decomposition_partitions_prefix(t):
    dec = dyadic_decomposition(t)
    assert len(dec) == t.bit_count()
    assert dec[0].start == 1 and dec[-1].end == t
    assert all(a.end + 1 == b.start for a, b in zip(dec, dec[1:]))
    assert all(b.start == b.index * 2**b.level + 1 for b in dec)  # dyadic
    assert [b.level for b in dec] == sorted((b.level for b in dec), reverse=True)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**7))
def test_postorder_position_roundtrip(p):
    b = node_at(p)
    assert postorder_position(b) == p
    # nodes ending before b, plus b's level, as a direct count
    r = b.end
    assert p == sum((r - 1) >> h for h in range(r.bit_length() + 1)) + b.level


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=10**6), st.data())
def test_leaf_path_property(n, data):
    t = data.draw(st.integers(min_value=1, max_value=n))
    path = leaf_path(t, n)
    assert 1 <= len(path) <= path_length(n)
    assert [b.level for b in path] == list(range(len(path)))
    assert all(b.start <= t <= b.end <= n for b in path)
    top = path[-1]
    parent = Node(top.level + 1, top.index // 2)
    assert parent.end > n  # the next ancestor is incomplete
    assert [postorder_position(b) for b in path] == sorted(postorder_position(b) for b in path)


def test_completed_nodes_are_consecutive_rows():
    for t in range(1, 300):
        rows = [postorder_position(b) for b in nodes_completed_at(t)]
        assert rows == list(range(n_nodes(t - 1), n_nodes(t)))


# --- the tree against loop oracles ---------------------------------------------------------------
def test_prefix_sums_loop_oracle():
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(37, 4))
    tree = build(xs, sigma=0.7, capacity=1)  # grows by doubling from 1
    for t in range(0, 38):
        oracle_noisy = np.zeros(4)
        for b in dyadic_decomposition(t):
            oracle_noisy = oracle_noisy + tree.noisy(b)
        np.testing.assert_allclose(tree.noisy_prefix_sum(t), oracle_noisy, rtol=0, atol=1e-12)
        np.testing.assert_allclose(tree.clean_prefix_sum(t), xs[:t].sum(axis=0), rtol=0, atol=1e-12)
    for p in range(tree.n_nodes):
        b = node_at(p)
        np.testing.assert_allclose(tree.clean(b), xs[b.start - 1 : b.end].sum(axis=0), atol=1e-12)
    np.testing.assert_array_equal(tree.leaves(), xs)
    assert tree.n_nodes == n_nodes(37) == 2 * 37 - 3


def test_sigma_zero_is_exact_and_noise_is_sigma_scaled():
    xs = np.random.default_rng(2).normal(size=(10, 3))
    exact = build(xs, sigma=0.0)
    clean, noisy = exact.values()
    assert np.array_equal(clean, noisy)
    a, b = build(xs, sigma=1.0, seed=5), build(xs, sigma=2.0, seed=5)
    np.testing.assert_allclose(b.values()[1] - b.values()[0], 2 * (a.values()[1] - a.values()[0]))


def test_capacity_does_not_change_the_draws():
    xs = np.random.default_rng(3).normal(size=(21, 2))
    a, b = build(xs, seed=9, capacity=1), build(xs, seed=9, capacity=64)
    assert np.array_equal(a.values()[1], b.values()[1])


def test_copy_freeze_truncate():
    xs = np.random.default_rng(4).normal(size=(12, 2))
    tree = build(xs).freeze()
    with pytest.raises(ValueError, match="frozen"):
        tree.append(np.zeros(2), np.random.default_rng(0))
    with pytest.raises(ValueError):
        tree.values()[0][0, 0] = 1.0
    c = tree.copy()
    assert not c.frozen and c.n_leaves == 12
    c.truncate(5)
    assert c.n_leaves == 5 and c.n_nodes == n_nodes(5) and tree.n_leaves == 12
    c.append(np.ones(2), np.random.default_rng(0))
    assert np.array_equal(c.leaf(6), np.ones(2)) and np.array_equal(tree.leaf(6), xs[5])


# --- unlearn_leaf ------------------------------------------------------------------------------
def test_unlearn_leaf_zero_shift_keeps_everything():
    xs = np.random.default_rng(5).normal(size=(16, 3))
    tree = build(xs)
    before = [v.copy() for v in tree.values()]
    rec = tree.unlearn_leaf(6, xs[5], np.random.default_rng(0))
    assert rec.rejected is None and rec.restart == 16 and len(rec.accepted) == len(rec.path) == 5
    assert rec.steps_recomputed == 0 and not rec.retrained
    assert not hasattr(rec, "shift_norm") and not hasattr(rec, "tv_per_node")  # nothing data-dependent
    for a, b in zip(before, tree.values()):
        assert np.array_equal(a, b)


def test_unlearn_leaf_sigma_zero_rejects_at_leaf():
    xs = np.random.default_rng(6).normal(size=(8, 2))
    tree = build(xs, sigma=0.0)
    rec = tree.unlearn_leaf(3, np.zeros(2), np.random.default_rng(0))
    assert rec.rejected == Node(0, 2) and rec.restart == 3 and tree.n_leaves == 3
    assert np.array_equal(tree.noisy(Node(0, 2)), np.zeros(2))


def test_unlearn_leaf_structure():
    rng = np.random.default_rng(7)
    xs = rng.normal(size=(32, 2))
    new_leaves = xs.copy()
    new_leaves[10] = 0.0
    rebuilt = build(new_leaves, sigma=0.0)
    for seed in range(50):
        base = build(xs, sigma=0.8, seed=seed)
        tree = base.copy()
        rec = tree.unlearn_leaf(11, np.zeros(2), np.random.default_rng(100 + seed))
        assert rec.path == leaf_path(11, 32)
        assert tree.n_leaves == rec.restart
        assert np.array_equal(tree.values()[0], rebuilt.values()[0][: tree.n_nodes])
        for b in rec.accepted:
            assert np.array_equal(tree.noisy(b), base.noisy(b))
        if rec.rejected is not None:
            assert rec.accepted == rec.path[: rec.path.index(rec.rejected)]
            assert all(a.end == rec.rejected.end for a in rec.regenerated)
        assert rec.steps_recomputed == 32 - rec.restart


# --- calibration -------------------------------------------------------------------------------
def test_calibrations():
    assert sigma_paper(0.5, 2.0, 16) == pytest.approx(2 * 2 / (np.sqrt(2) * 0.5))
    for T in (1, 2, 7, 1024):
        assert path_tv(1.3, sigma_exact(0.3, 1.3, T), path_length(T)) == pytest.approx(0.3, abs=1e-12)
    assert eps_app(1.0, 1, 5, 0.1) == 0.0
    assert prefix_error_union_bound(1e6, 1.0, 100, 10) == 0.0


def test_sigma_exact_keeps_the_digits_of_a_tiny_rho():
    """sigma = B sqrt(n) / (2 sqrt 2 erfinv(rho)); (1 + rho)/2 would round rho = 1e-12 away (9e-5 relative).
    References: 1 / (2 sqrt(2) erfinv(rho)) with mpmath at 50 digits (T = 1, so n = 1)."""
    for rho, ref in (
        (1e-12, 398942280401.4327),
        (1e-9, 398942280.40143263),
        (1e-6, 398942.28040132823),
        (0.3, 1.2976211844172627),
    ):
        assert sigma_exact(rho, 1.0, 1) == pytest.approx(ref, rel=1e-15)
        assert path_tv(1.0, sigma_exact(rho, 1.0, 1), 1) == pytest.approx(rho, rel=1e-14)


# --- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda: sigma_paper(0.0, 1.0, 8), ValueError),
        (lambda: sigma_paper(-0.1, 1.0, 8), ValueError),
        (lambda: sigma_paper(0.1, 0.0, 8), ValueError),
        (lambda: sigma_paper(0.1, 1.0, 1), ValueError),
        (lambda: sigma_paper(0.1, 1.0, 0), ValueError),
        (lambda: sigma_paper(0.1, 1.0, 2.5), TypeError),
        (lambda: sigma_exact(1.0, 1.0, 8), ValueError),
        (lambda: sigma_exact(0.5, -1.0, 8), ValueError),
        (lambda: sigma_exact(0.5, 1.0, 0), ValueError),
        (lambda: sigma_exact(np.nan, 1.0, 4), ValueError),
        (lambda: path_tv(1.0, 0.0, 3), ValueError),
        (lambda: eps_app(1.0, 10, 3, 1.5), ValueError),
        (lambda: BinaryTree(0, 1.0), ValueError),
        (lambda: BinaryTree(3, -1.0), ValueError),
        (lambda: BinaryTree(3, 1.0, capacity=0), ValueError),
        (lambda: BinaryTree(3, 1.0).noisy_prefix_sum(1), ValueError),
        (lambda: BinaryTree(3, 1.0).leaf(0), ValueError),
        (lambda: dyadic_decomposition(-1), ValueError),
        (lambda: leaf_path(5, 4), ValueError),
        (lambda: node_at(-2), ValueError),
        (lambda: path_length(0), ValueError),
    ],
)
def test_bad_input_raises(call, exc):
    with pytest.raises(exc):
        call()


def test_bad_statistics_leave_tree_unchanged():
    xs = np.random.default_rng(8).normal(size=(6, 3))
    tree = build(xs)
    before = [v.copy() for v in tree.values()]
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for bad in (np.zeros(4), np.zeros((1, 3)), np.array([0.0, np.nan, 0.0]), np.array([np.inf, 0, 0])):
        with pytest.raises(ValueError, match="x"):
            tree.append(bad, rng)
        with pytest.raises(ValueError, match="x_new"):
            tree.unlearn_leaf(2, bad, rng)
    for t in (0, 7, -1):
        with pytest.raises(ValueError, match="t must"):
            tree.unlearn_leaf(t, np.zeros(3), rng)
    with pytest.raises(ValueError, match="not complete"):
        tree.noisy(Node(3, 0))
    assert tree.n_leaves == 6 and rng.bit_generator.state == state
    for a, b in zip(before, tree.values()):
        assert np.array_equal(a, b)


# --- the key and noise derivations, pinned against their definitions -------------------------------
def _reference_keys(rng, k):
    """Chapter B2a's definition, one step at a time: BLAKE2b (24 bytes, personalised "node key") of
    each three little-endian raw words of the generator."""
    import hashlib

    raw = rng.bit_generator.random_raw(3 * k).astype("<u8").tobytes()
    return np.array(
        [
            np.frombuffer(
                hashlib.blake2b(raw[24 * i : 24 * (i + 1)], digest_size=24, person=b"node key").digest(),
                dtype="<u8",
            )
            for i in range(k)
        ],
        dtype=np.uint64,
    ).reshape(k, 3)


def _reference_noise(key, d, sigma):
    """SFC64 with its state set to (a, b, c, 1), 12 outputs discarded, then d standard normals."""
    bits = np.random.SFC64(0)
    bits.state = {
        "bit_generator": "SFC64",
        "has_uint32": 0,
        "uinteger": 0,
        "state": {"state": np.array([key[0], key[1], key[2], 1], dtype=np.uint64)},
    }
    bits.random_raw(12)
    z = np.random.Generator(bits).standard_normal(d)
    z *= sigma
    return z


@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_draw_node_keys_is_the_hash_of_raw_words_and_uses_them_only(k):
    from bandit_unlearning.exact.tree import draw_node_keys

    a, b = np.random.default_rng(7), np.random.default_rng(7)
    keys = draw_node_keys(a, k)
    assert keys.dtype == np.uint64 and keys.shape == (k, 3) and keys.flags.writeable
    assert np.array_equal(keys, _reference_keys(b, k))
    assert a.bit_generator.state == b.bit_generator.state  # exactly 3k words drawn


def test_node_noise_is_sfc64_seeded_with_the_key_bit_for_bit():
    from bandit_unlearning.exact.tree import draw_node_keys, node_noise

    keys = draw_node_keys(np.random.default_rng(3), 200)
    keys[0] = [0, 0, 0]
    keys[1] = [2**64 - 1] * 3
    for i, key in enumerate(keys):
        d, sigma = 1 + i % 37, 0.25 + i / 50
        assert np.array_equal(
            node_noise(key, d, sigma).view(np.uint64), _reference_noise(key, d, sigma).view(np.uint64)
        )
    # keys that are not contiguous uint64 rows take the general path, with the same result
    strided = np.ascontiguousarray(np.repeat(keys[:3], 2, axis=1))[:, ::2]
    assert not strided[0].flags.c_contiguous
    for key in strided:
        assert np.array_equal(node_noise(key, 5, 1.0), _reference_noise(key, 5, 1.0))
    assert np.array_equal(
        node_noise([1, 2, 2**40], 4, 2.0), _reference_noise(np.array([1, 2, 2**40], np.uint64), 4, 2.0)
    )


def test_the_broken_noise_derivation_is_caught():
    """The check above against a deliberately wrong derivation (no outputs discarded) fails."""
    key = np.array([1, 2, 3], dtype=np.uint64)
    bits = np.random.SFC64(0)
    bits.state = {
        "bit_generator": "SFC64",
        "has_uint32": 0,
        "uinteger": 0,
        "state": {"state": np.array([1, 2, 3, 1], dtype=np.uint64)},
    }
    wrong = np.random.Generator(bits).standard_normal(8)
    assert not np.array_equal(wrong, _reference_noise(key, 8, 1.0))
