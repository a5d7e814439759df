"""The optional compiled tree kernels (``bandit_unlearning.exact.accel``) against the numpy reference,
bit for bit: node keys, node noise, noisy prefix sums, trees' rows, unlearning records, and the
generator's state afterwards, on several seeds and sizes.  Skipped when numba is absent."""

import pickle

import numpy as np
import pytest

from bandit_unlearning.exact import accel
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.exact.tree import BinaryTree, SparseStatistic, draw_node_keys, node_noise
from bandit_unlearning.secrecy import allow_secrets

needs_numba = pytest.mark.skipif(
    not accel.available(),
    reason="numba is not installed (pip install -e '.[accel]'): "
    "the compiled kernels are optional, the numpy reference runs alone",
)


@pytest.fixture(autouse=True)
def kernels_on():
    """The kernels are off by default in the package; these tests switch them on (and restore)."""
    previous = accel.enabled()
    if accel.available():
        accel.set_enabled(True)
    yield
    accel.set_enabled(previous)


def both(f):
    """``f()`` with the kernels on, then with the reference; the kernels' setting restored."""
    previous = accel.set_enabled(True)
    try:
        fast = f()
        accel.set_enabled(False)
        ref = f()
    finally:
        accel.set_enabled(previous)
    return fast, ref


def test_switch_rules():
    with pytest.raises(TypeError, match="flag must be a bool"):
        accel.set_enabled(1)
    if not accel.available():
        with pytest.raises(RuntimeError, match="numba"):
            accel.set_enabled(True)
        assert accel.kernels() is None
    previous = accel.set_enabled(False)
    try:
        assert accel.kernels() is None and not accel.enabled()
    finally:
        accel.set_enabled(previous)


@needs_numba
@pytest.mark.parametrize("seed", [0, 1, 2, 12345])
@pytest.mark.parametrize("k", [0, 1, 3, 200])
def test_node_keys_bit_for_bit(seed, k):
    fast, ref = both(lambda: (draw_node_keys(np.random.default_rng(seed), k),))
    assert fast[0].dtype == ref[0].dtype == np.uint64 and fast[0].shape == ref[0].shape == (k, 3)
    assert np.array_equal(fast[0], ref[0])


@needs_numba
@pytest.mark.parametrize("d", [1, 2, 16, 1520])
@pytest.mark.parametrize("sigma", [0.0, 1e-300, 0.37, 1.0, 2.5e6])
def test_node_noise_bit_for_bit(d, sigma):
    # 40 keys x d normals: at d = 1520, ~60,000 draws, so the ziggurat's rare branches (wedges ~1%, the
    # tail ~0.03% of draws) are taken hundreds of times
    keys = draw_node_keys(np.random.default_rng(d), 40)
    fast, ref = both(lambda: [node_noise(key, d, sigma) for key in keys])
    for a, b in zip(fast, ref):
        assert a.dtype == b.dtype and a.shape == b.shape == (d,)
        assert a.tobytes() == b.tobytes()


def _statistics(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))
    xs[rng.random((n, d)) < 0.4] = 0.0
    xs[rng.random(n) < 0.1] = 0.0  # some all-zero statistics
    return xs


def _session(factory, d: int, n: int, seed: int, sparse: bool):
    """Appends (dense or sparse statistics), every prefix sum, a truncation, more appends, two
    unlearning requests; everything observable, and the generator's next draw."""
    xs = _statistics(d, n + 8, seed)
    rng = np.random.default_rng(seed + 1000)
    tree = factory(d, 0.8 if seed % 2 else 1.0, 1)
    out = []

    def add(x):
        if sparse:
            idx = np.flatnonzero(x)
            tree.append(SparseStatistic(idx, x[idx]), rng)
        else:
            tree.append(x, rng)
        out.append(tree.noisy_prefix_sum(tree.n_leaves))

    for x in xs[:n]:
        add(x)
    out.extend(tree.noisy_prefix_sum(t) for t in range(0, n + 1, 3))
    tree.truncate(n - 5)
    for x in xs[n:]:
        add(x)
    records = []
    for t in (1, tree.n_leaves // 2):
        records.append(tree.unlearn_leaf(t, np.zeros(d), rng))
        for x in xs[: n - tree.n_leaves + 2]:
            add(x)
    clean, noisy = tree.values()
    return out, records, clean, noisy, tree.n_leaves, rng.random()


@needs_numba
@pytest.mark.parametrize("factory", [BinaryTree, LightTree])
@pytest.mark.parametrize("d,n,seed", [(1, 40, 0), (3, 64, 1), (16, 100, 2), (16, 33, 3), (200, 50, 4)])
@pytest.mark.parametrize("sparse", [False, True])
def test_trees_bit_for_bit(factory, d, n, seed, sparse):
    fast, ref = both(lambda: _session(factory, d, n, seed, sparse))
    assert len(fast[0]) == len(ref[0])
    for a, b in zip(fast[0], ref[0]):
        assert a.tobytes() == b.tobytes()
    assert fast[1] == ref[1]  # the PathCoupling records
    assert fast[2].tobytes() == ref[2].tobytes() and fast[3].tobytes() == ref[3].tobytes()
    assert fast[4:] == ref[4:]  # n_leaves, and the generator's next draw


@needs_numba
def test_the_comparison_sees_a_wrong_kernel(monkeypatch):
    """The same comparison rejects a kernel that is off by one draw: the check has power."""
    d, n, seed = 16, 40, 7
    kernels = accel.kernels()
    right = kernels.noise

    def shifted(key, d, sigma):
        return right(key, d + 1, sigma)[1:]  # the right normals, shifted by one

    fast_ok, ref = both(lambda: _session(LightTree, d, n, seed, True))
    monkeypatch.setattr(kernels, "noise", shifted)
    bad, _ = both(lambda: _session(LightTree, d, n, seed, True))
    assert fast_ok[0][-1].tobytes() == ref[0][-1].tobytes()
    assert any(a.tobytes() != b.tobytes() for a, b in zip(bad[0], ref[0]))


@needs_numba
def test_unlearning_runs_bit_for_bit():
    """A learner trained and unlearned through the protocol: the same run with and without kernels."""
    from bandit_unlearning.exact.bandit import bandit_users, ucb_bandit_learner
    from bandit_unlearning.exact.learner import train
    from bandit_unlearning.protocol import DeleteStep, unlearn

    def session():
        users = bandit_users([0.2, 0.5, 0.7], 60, seed=3)
        rng = np.random.default_rng(9)
        run = train(ucb_bandit_learner(3, 60, 0.5), users, rng)
        after, record = unlearn(run, DeleteStep(17), rng=rng)
        return run, after, record, rng.random()

    fast, ref = both(session)
    with allow_secrets():
        assert pickle.dumps(fast[0].tree.values()) == pickle.dumps(ref[0].tree.values())
        assert pickle.dumps(fast[1].tree.values()) == pickle.dumps(ref[1].tree.values())
    assert fast[2] == ref[2] and fast[3] == ref[3]


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_bad_statistics_refused_before_any_draw():
    """The compiled append keeps the contract: a non-finite statistic is refused, nothing drawn or changed."""
    for factory in (BinaryTree, LightTree):
        tree = factory(4, 1.0)
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        for bad in (
            np.array([0.0, np.nan, 1.0, 0.0]),
            np.array([np.inf, 0.0, 0.0, 0.0]),
            np.array([1e200, 1e200, 0.0, 0.0]),
        ):
            if np.isfinite(bad).all():
                tree.append(bad, rng)  # finite, only its square overflows: accepted
                assert np.array_equal(tree.leaf(1), bad)
                tree.truncate(0)
                state = rng.bit_generator.state
                continue
            with pytest.raises(ValueError, match="finite"):
                tree.append(bad, rng)
            assert rng.bit_generator.state == state and tree.n_leaves == 0


def test_the_package_runs_without_numba():
    """With numba unimportable (a fresh interpreter where ``import numba`` fails) the trees run the
    reference and give the same numbers as this process's trees."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from bandit_unlearning.exact import accel\n"
        "from bandit_unlearning.exact.light_tree import LightTree\n"
        "from bandit_unlearning.exact.tree import BinaryTree\n"
        "assert not accel.available() and accel.kernels() is None\n"
        "out = []\n"
        "for f in (BinaryTree, LightTree):\n"
        "    rng = np.random.default_rng(5); tree = f(8, 1.0)\n"
        "    for t in range(1, 40):\n"
        "        tree.append(np.arange(8.0) * t, rng)\n"
        "    out.append(tree.noisy_prefix_sum(39).tobytes().hex())\n"
        "print(' '.join(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mine = []
    for f in (BinaryTree, LightTree):
        rng = np.random.default_rng(5)
        tree = f(8, 1.0)
        for t in range(1, 40):
            tree.append(np.arange(8.0) * t, rng)
        mine.append(tree.noisy_prefix_sum(39).tobytes().hex())
    assert done.stdout.split() == mine


@needs_numba
@pytest.mark.parametrize("d", [2, 16, 300])
def test_light_tree_dense_leaves_bit_for_bit(d):
    """Leaves with every entry non-zero (the compiled running sum adds them as a contiguous block) mixed
    with sparse ones and empty ones, dense and ``SparseStatistic`` inputs: the same bits as the reference."""

    def session():
        g = np.random.default_rng(d)
        rng = np.random.default_rng(d + 1)
        tree, out = LightTree(d, 0.7, 1), []
        for t in range(1, 70):
            x = g.standard_normal(d)
            if t % 3 == 1:
                x[g.random(d) < 0.5] = 0.0
            elif t % 7 == 0:
                x[:] = 0.0
            if t % 2:
                tree.append(x, rng)
            else:
                idx = np.flatnonzero(x)
                tree.append(SparseStatistic(idx, x[idx]), rng)
            out.append(tree.noisy_prefix_sum(t).tobytes())
        out.extend(tree.noisy_prefix_sum(t).tobytes() for t in range(0, 70, 5))
        return out, tree.values()[1].tobytes(), rng.random()

    fast, ref = both(session)
    assert fast == ref


@needs_numba
@pytest.mark.parametrize("factory", [BinaryTree, LightTree])
def test_typed_kernels_get_the_types_they_were_compiled_for(factory):
    """The trees call kernels compiled for fixed argument types without numba's dispatch (which would
    type each argument): their buffers keep exactly those types through growth, copies, pickles,
    truncation and unlearning; the noise, key words and the light tree's partial sums too."""
    import numba

    sig = accel.kernels().SIGNATURES
    dense, light = sig["dense_append"], sig["light_append_dense"]
    assert sig["light_append"][1:4] == light[2:5] and sig["light_append"][7] == light[5]

    def check(tree):
        if isinstance(tree, BinaryTree):
            assert (numba.typeof(tree._clean), numba.typeof(tree._noisy)) == dense[2:4]
            assert tree._top_sum is None or numba.typeof(tree._top_sum) == dense[6]
        else:
            assert tuple(numba.typeof(a) for a in (tree._ptr, tree._idx, tree._val, tree._keys)) == light[2:6]
            assert all(numba.typeof(partial) == light[8] for _, _, partial in tree._stack)

    assert numba.typeof(np.random.default_rng(0).bit_generator.random_raw(6)) == dense[0] == light[0]
    rng, xs = np.random.default_rng(4), _statistics(5, 80, 4)
    tree = factory(5, 1.0)
    for i, x in enumerate(xs[:40]):
        tree.append(x, rng)
        if i % 9 == 0:
            check(tree)
    with allow_secrets():
        tree = pickle.loads(pickle.dumps(tree))
    check(tree)
    tree = tree.copy()
    tree.truncate(23)
    check(tree)
    tree.unlearn_leaf(3, np.zeros(5), rng)
    check(tree)
    frozen_copy = tree.freeze().copy()
    for x in xs[40:]:
        frozen_copy.append(x, rng)
    check(frozen_copy)


@needs_numba
@pytest.mark.parametrize("factory", [BinaryTree, LightTree])
def test_strided_and_readonly_statistics_bit_for_bit(factory):
    """A statistic that is a strided view, or read-only, goes through the dispatching kernel: the same bits."""

    def session():
        rng, xs = np.random.default_rng(6), _statistics(12, 50, 6)
        wide = np.zeros((50, 24))
        wide[:, ::2] = xs
        tree, out = factory(12, 1.0), []
        for t in range(50):
            x = wide[t, ::2] if t % 2 else xs[t].copy()  # odd steps: a strided view
            if t % 3 == 0:
                x.setflags(write=False)
            assert x.flags.c_contiguous == (t % 2 == 0)
            tree.append(x, rng)
            out.append(tree.noisy_prefix_sum(t + 1).tobytes())
        return out, rng.random()

    fast, ref = both(session)
    assert fast == ref


@needs_numba
@pytest.mark.parametrize("d", [1, 3, 16, 17, 1520])
def test_all_finite_sees_every_non_finite_entry(d):
    """The trees' finiteness check (a sum of ``x_i - x_i`` in any order): huge finite values pass, one
    infinity or NaN anywhere fails it, in the typed and the dispatching kernel."""
    kernels = accel.kernels()
    x = np.random.default_rng(d).standard_normal(d) * 1e300
    assert kernels.ALL_FINITE(x) and kernels.all_finite(x)
    for i in sorted({0, d // 2, d - 1}):
        for bad in (np.inf, -np.inf, np.nan):
            y = x.copy()
            y[i] = bad
            assert not kernels.ALL_FINITE(y) and not kernels.all_finite(y)
