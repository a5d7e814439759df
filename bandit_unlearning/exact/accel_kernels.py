"""The compiled kernels behind ``bandit_unlearning.exact.accel`` (numba; imported on first use).

Nothing here validates its arguments (see ``exact.accel``).  Every kernel reproduces the numpy
reference of ``exact.tree`` bit for bit: BLAKE2b as RFC 7693 states it, SFC64's step as numpy seeds
and runs it, numpy's ziggurat with numpy's own tables (as numba ships them).

``ALL_FINITE``, ``DENSE_APPEND``, ``LIGHT_APPEND`` and ``LIGHT_APPEND_DENSE`` are the trees' kernels
compiled for the exact argument types the trees pass (``SIGNATURES``), as plain functions: a call skips numba's dispatch
(typing every argument and choosing an overload, about half the cost of a tree step at small ``d``).
They check the types of their arguments even less than the kernels do -- an array of another dtype,
dimension, layout or alignment would be misread -- so the trees call them with their own buffers
only (whose types ``tests/test_exact_accel.py`` checks through the trees' life: growth, copies,
pickles, truncation, unlearning) and with a statistic only when it is an aligned, writeable,
C-contiguous float64 vector (any other is validated and copied first).
"""

__all__ = [
    "all_finite",
    "node_keys",
    "noise",
    "add_noise",
    "dense_append",
    "dense_prefix",
    "light_append",
    "light_append_dense",
    "linucb_play",
    "linucb_changed_grams",
]

import numba
import numpy as np
from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r

from bandit_unlearning.exact.accel import BLAKE2B_H0, BLAKE2B_IV, BLAKE2B_SIGMA

_H0, _IV, _SIGMA = BLAKE2B_H0, BLAKE2B_IV, BLAKE2B_SIGMA
_u64 = numba.uint64


@numba.njit(cache=True, fastmath={"reassoc"})
def all_finite(x):
    """Unchecked: whether every entry of a float64 vector is finite.

    Parameters
    ----------
    x : numpy.ndarray
        float64, one dimension.

    Returns
    -------
    bool
        ``True`` when no entry is infinite or NaN: ``x_i - x_i`` is ``0`` for a finite entry and NaN
        otherwise, and a sum with a NaN is NaN in any order (the order is left to the compiler).
    """
    bad = 0.0
    for i in range(x.size):
        bad += x[i] - x[i]
    return bad == 0.0


@numba.njit(inline="always")
def _rotr(x, n):
    return (x >> _u64(n)) | (x << _u64(64 - n))


@numba.njit(inline="always")
def _g(v, a, b, c, d, x, y):
    v[a] = v[a] + v[b] + x
    v[d] = _rotr(v[d] ^ v[a], 32)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 24)
    v[a] = v[a] + v[b] + y
    v[d] = _rotr(v[d] ^ v[a], 16)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 63)


@numba.njit(cache=True)
def _hash_words(raw, i, out, j, v, m):
    """BLAKE2b (24-byte digest, personalised) of the 24 bytes ``raw[i:i+3]`` into ``out[j]``."""
    for w in range(16):
        m[w] = _u64(0)
    m[0], m[1], m[2] = raw[i], raw[i + 1], raw[i + 2]
    for w in range(8):
        v[w] = _H0[w]
        v[w + 8] = _IV[w]
    v[12] ^= _u64(24)  # bytes hashed
    v[14] = ~v[14]  # the last block
    for r in range(12):
        s = _SIGMA[r % 10]
        _g(v, 0, 4, 8, 12, m[s[0]], m[s[1]])
        _g(v, 1, 5, 9, 13, m[s[2]], m[s[3]])
        _g(v, 2, 6, 10, 14, m[s[4]], m[s[5]])
        _g(v, 3, 7, 11, 15, m[s[6]], m[s[7]])
        _g(v, 0, 5, 10, 15, m[s[8]], m[s[9]])
        _g(v, 1, 6, 11, 12, m[s[10]], m[s[11]])
        _g(v, 2, 7, 8, 13, m[s[12]], m[s[13]])
        _g(v, 3, 4, 9, 14, m[s[14]], m[s[15]])
    for w in range(3):
        out[j, w] = _H0[w] ^ v[w] ^ v[w + 8]


@numba.njit(cache=True)
def node_keys(raw):
    """Unchecked: The keys ``draw_node_keys`` makes from ``3 k`` raw generator words.

    Parameters
    ----------
    raw : numpy.ndarray
        uint64 words, ``3 k`` of them (``rng.bit_generator.random_raw(3 k)``).

    Returns
    -------
    numpy.ndarray
        uint64, shape ``(k, 3)``: key ``i`` is the personalised BLAKE2b digest of words ``3i .. 3i+2``.
    """
    k = raw.size // 3
    out = np.empty((k, 3), dtype=np.uint64)
    v, m = np.empty(16, dtype=np.uint64), np.empty(16, dtype=np.uint64)
    for j in range(k):
        _hash_words(raw, 3 * j, out, j, v, m)
    return out


@numba.njit(inline="always")
def _sfc64(a, b, c, w):
    """SFC64's step on its state ``(a, b, c, w)`` held in scalars (registers, not memory):
    ``(output, a, b, c, w)`` after the step."""
    tmp = a + b + w
    return (
        tmp,
        b ^ (b >> _u64(11)),
        c + (c << _u64(3)),
        ((c << _u64(24)) | (c >> _u64(40))) + tmp,
        w + _u64(1),
    )


@numba.njit(inline="always")
def _double(r):
    return np.float64(r >> _u64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(inline="always")
def _standard_normal(a, b, c, w):
    """numpy's ziggurat (``random_standard_normal``) on the SFC64 state ``(a, b, c, w)``:
    ``(normal, a, b, c, w)`` after the draws it took."""
    while True:
        r, a, b, c, w = _sfc64(a, b, c, w)
        idx = np.int64(r & _u64(0xFF))
        r >>= _u64(8)
        sign = r & _u64(1)
        rabs = (r >> _u64(1)) & _u64(0x000FFFFFFFFFFFFF)
        x = np.float64(rabs) * wi_double[idx]
        if sign:
            x = -x
        if rabs < ki_double[idx]:
            return x, a, b, c, w
        if idx == 0:
            while True:
                u, a, b, c, w = _sfc64(a, b, c, w)
                xx = -ziggurat_nor_inv_r * np.log1p(-_double(u))
                u, a, b, c, w = _sfc64(a, b, c, w)
                yy = -np.log1p(-_double(u))
                if yy + yy > xx * xx:
                    if (rabs >> _u64(8)) & _u64(1):
                        return -(ziggurat_nor_r + xx), a, b, c, w
                    return ziggurat_nor_r + xx, a, b, c, w
        else:
            u, a, b, c, w = _sfc64(a, b, c, w)
            if (fi_double[idx - 1] - fi_double[idx]) * _double(u) + fi_double[idx] < np.exp(-0.5 * x * x):
                return x, a, b, c, w


@numba.njit(inline="always")
def _seed(key):
    """SFC64 seeded with the key as numpy seeds it: state ``(a, b, c, 1)``, 12 outputs discarded."""
    a, b, c, w = key[0], key[1], key[2], _u64(1)
    for _ in range(12):
        _, a, b, c, w = _sfc64(a, b, c, w)
    return a, b, c, w


@numba.njit(cache=True)
def noise(key, d, sigma):
    """Unchecked: ``node_noise(key, d, sigma)`` for ``sigma > 0``.

    Parameters
    ----------
    key : numpy.ndarray
        Three uint64 words.
    d : int
        Dimension, >= 1.
    sigma : float
        Noise scale, > 0.

    Returns
    -------
    numpy.ndarray
        ``d`` ziggurat normals of the key's SFC64, each times ``sigma``.
    """
    a, b, c, w = _seed(key)
    out = np.empty(d)
    for i in range(d):
        z, a, b, c, w = _standard_normal(a, b, c, w)
        out[i] = z * sigma
    return out


@numba.njit(cache=True)
def add_noise(key, sigma, base, out):
    """Unchecked: ``out = base + node_noise(key, d, sigma)``, rounded as the reference rounds ``base + (z * sigma)``.

    Parameters
    ----------
    key : numpy.ndarray
        Three uint64 words.
    sigma : float
        Noise scale, >= 0 (``0``: ``out = base + 0.0``).
    base, out : numpy.ndarray
        float64, shape ``(d,)``; they may be the same array.
    """
    if sigma == 0.0:
        for i in range(out.size):
            out[i] = base[i] + 0.0
        return
    a, b, c, w = _seed(key)
    for i in range(out.size):
        z, a, b, c, w = _standard_normal(a, b, c, w)
        out[i] = base[i] + z * sigma


@numba.njit(inline="always")
def _popcount(s):
    c = 0
    while s:
        s &= s - 1
        c += 1
    return c


@numba.njit(cache=True)
def _keys_into(raw, table, first):
    """The keys of ``node_keys(raw)`` written into rows ``first ..`` of ``table`` (no key array kept)."""
    v, m = np.empty(16, dtype=np.uint64), np.empty(16, dtype=np.uint64)
    for j in range(raw.size // 3):
        _hash_words(raw, 3 * j, table, first + j, v, m)


@numba.njit(cache=True)
def dense_append(raw, x, clean, noisy, t, sigma, top):
    """Unchecked: ``BinaryTree.append``'s arithmetic for leaf ``t``.

    Parameters
    ----------
    raw : numpy.ndarray
        ``3 k`` uint64 words, hashed into the keys of the ``k`` nodes ending at ``t``.
    x : numpy.ndarray
        The finite float64 statistic, shape ``(d,)`` (the caller checked).
    clean, noisy : numpy.ndarray
        The tree's row buffers, shape ``(rows, d)``; rows ``N(t - 1) .. N(t) - 1`` (the ``k`` nodes
        ending at ``t``) are written (clean running sums, noisy values).
    t : int
        The leaf.
    sigma : float
        Noise scale, >= 0.
    top : numpy.ndarray
        Shape ``(d,)``: receives the noisy prefix sum at ``t`` (``dense_prefix(noisy, t)``).

    Returns
    -------
    bool
        ``False``, with nothing written, when the buffers have fewer than ``N(t)`` rows (the caller
        grows them and calls again); ``True`` once done.
    """
    k = raw.size // 3
    first = 2 * (t - 1) - _popcount(t - 1)
    if first + k > clean.shape[0]:
        return False
    d = x.size
    keys = node_keys(raw)
    for i in range(d):
        clean[first, i] = x[i] + 0.0
    for h in range(1, k):
        p = first + h
        left = p - (1 << h)
        for i in range(d):
            clean[p, i] = clean[left, i]
        for s in range(t - (1 << (h - 1)), t):  # leaves t - 2**(h-1) + 1 .. t (0-based s)
            row = 2 * s - _popcount(s)
            for i in range(d):
                clean[p, i] += clean[row, i]
    for h in range(k):
        add_noise(keys[h], sigma, clean[first + h], noisy[first + h])
    _prefix_into(noisy, t, top)
    return True


@numba.njit(cache=True)
def _prefix_into(noisy, t, out):
    """The fold of ``dense_prefix(noisy, t)``, written into ``out``."""
    d = noisy.shape[1]
    start, seen = 0, False
    for h in range(62, -1, -1):
        if (t >> h) & 1:
            start += 1 << h
            row = 2 * (start - 1) - _popcount(start - 1) + h
            if seen:
                for i in range(d):
                    out[i] += noisy[row, i]
            else:
                for i in range(d):
                    out[i] = noisy[row, i]
                seen = True


@numba.njit(cache=True)
def dense_prefix(noisy, t):
    """Unchecked: ``BinaryTree.noisy_prefix_sum(t)`` for ``t >= 1``.

    Parameters
    ----------
    noisy : numpy.ndarray
        The noisy rows, shape ``(rows, d)``, post-order.
    t : int
        1 <= ``t`` <= the number of leaves.

    Returns
    -------
    numpy.ndarray
        The rows of the dyadic decomposition of ``[1, t]``, largest node first, folded left to right.
    """
    out = np.empty(noisy.shape[1])
    _prefix_into(noisy, t, out)
    return out


@numba.njit(cache=True)
def light_append(raw, ptr, idx, val, lo, hi, sigma, keys_table, first, previous, out):
    """Unchecked: ``LightTree.append``'s arithmetic for a stored leaf.

    Parameters
    ----------
    raw : numpy.ndarray
        ``3 k`` uint64 words, hashed into the keys of the ``k`` nodes ending at the leaf.
    ptr, idx, val : numpy.ndarray
        The tree's leaf pointers (leaf ``s``: entries ``ptr[s - 1] .. ptr[s] - 1``) and entry buffers
        (int32 indices, increasing within a leaf, and float64 values).
    lo, hi : int
        The new decomposition node's leaves, ``lo .. hi``.
    sigma : float
        Noise scale, >= 0.
    keys_table : numpy.ndarray
        The tree's key table; rows ``first .. first + k - 1`` receive the keys.
    first : int
        ``N(hi - 1)``.
    previous : numpy.ndarray
        The last partial sum of the decomposition (read when ``out`` has two rows).
    out : numpy.ndarray
        Shape ``(1, d)`` or ``(2, d)``: row 0 receives the node's noisy value -- zeros, plus the
        leaves' entries in order (as ``bincount`` adds them), plus the last key's noise; row 1, if
        present, ``previous + noisy``.
    """
    k = raw.size // 3
    d = out.shape[1]
    _keys_into(raw, keys_table, first)
    noisy = out[0]
    noisy[:] = 0.0
    for s in range(lo, hi + 1):
        a, b = ptr[s - 1], ptr[s]
        if b - a == d:  # a leaf with every entry non-zero: its indices are 0 .. d - 1, in order
            for i in range(d):
                noisy[i] += val[a + i]
        else:
            for e in range(a, b):
                noisy[idx[e]] += val[e]
    add_noise(keys_table[first + k - 1], sigma, noisy, noisy)
    if out.shape[0] > 1:
        for i in range(d):
            out[1, i] = previous[i] + noisy[i]


@numba.njit(cache=True)
def light_append_dense(raw, x, ptr, idx, val, keys_table, t, sigma, previous, out):
    """Unchecked: ``LightTree.append`` of a finite dense float vector (the caller checked).

    Parameters
    ----------
    raw : numpy.ndarray
        ``3 k`` uint64 words, hashed into the keys of the ``k`` nodes ending at ``t``.
    x : numpy.ndarray
        The statistic, float64 of shape ``(d,)``; its non-zeros become leaf ``t``'s entries.
    ptr, idx, val : numpy.ndarray
        The tree's leaf pointers and entry buffers; ``ptr[t]`` is set.
    keys_table : numpy.ndarray
        The tree's key table; rows ``N(t - 1) .. N(t) - 1`` are written.
    t : int
        The leaf.
    sigma : float
        Noise scale, >= 0.
    previous, out : numpy.ndarray
        As for ``light_append``.

    Returns
    -------
    bool
        ``False``, with nothing written, when a buffer lacks room (``ptr`` for leaf ``t``, the entry
        buffers for ``d`` more entries, the key table for ``N(t)`` rows; the caller grows them and calls
        again); ``True`` once done.
    """
    k = raw.size // 3
    first = 2 * (t - 1) - _popcount(t - 1)
    d = x.size
    start = ptr[t - 1]
    if t >= ptr.size or start + d > idx.size or first + k > keys_table.shape[0]:
        return False
    e = start
    for i in range(d):
        if x[i] != 0.0:
            idx[e] = i
            val[e] = x[i]
            e += 1
    ptr[t] = e
    light_append(raw, ptr, idx, val, t - (1 << (k - 1)) + 1, t, sigma, keys_table, first, previous, out)
    return True


def _c(dtype, ndim: int, readonly: bool = False):
    return numba.types.Array(dtype, ndim, "C", readonly=readonly)


_f8, _i8 = numba.types.float64, numba.types.int64
SIGNATURES = {
    "all_finite": (_c(_f8, 1),),
    "dense_append": (_c(_u64, 1), _c(_f8, 1), _c(_f8, 2), _c(_f8, 2), _i8, _f8, _c(_f8, 1)),
    "light_append": (
        _c(_u64, 1),
        _c(_i8, 1),
        _c(numba.types.int32, 1),
        _c(_f8, 1),
        _i8,
        _i8,
        _f8,
        _c(_u64, 2),
        _i8,
        _c(_f8, 1, readonly=True),
        _c(_f8, 2),
    ),
    "light_append_dense": (
        _c(_u64, 1),
        _c(_f8, 1),
        _c(_i8, 1),
        _c(numba.types.int32, 1),
        _c(_f8, 1),
        _c(_u64, 2),
        _i8,
        _f8,
        _c(_f8, 1, readonly=True),
        _c(_f8, 2),
    ),
}
ALL_FINITE = all_finite.compile(SIGNATURES["all_finite"])
DENSE_APPEND = dense_append.compile(SIGNATURES["dense_append"])
LIGHT_APPEND = light_append.compile(SIGNATURES["light_append"])
LIGHT_APPEND_DENSE = light_append_dense.compile(SIGNATURES["light_append_dense"])


# The disjoint LinUCB learner's element-wise steps (chapter B12, ``exact.linucb``): the arm chosen from
# the scores' parts and the statistic of the step, and the Gram matrices of the arms whose block of the
# prefix sum changed.  Every number is one IEEE operation of the numpy reference, in its order (no
# contraction into fused multiply-adds: numba compiles without fastmath); the matrix products and the
# inversion stay in numpy.


@numba.njit(cache=True)
def linucb_play(tx, quad, radius, tie, x, rewards, n_arms, rows, cols, up):
    """Unchecked: the arm ``exact.linucb``'s oracle plays and the step's statistic.

    Parameters
    ----------
    tx, quad : numpy.ndarray
        ``theta_a . x`` and ``x^T Vinv_a x`` for every arm (float64, shape ``(K,)``).
    radius, tie : float
        The model's confidence radius and the tie tolerance.
    x : numpy.ndarray
        The context, float64 of shape ``(d,)``.
    rewards : numpy.ndarray
        The user's reward of every arm.
    n_arms : int
        ``K``.
    rows, cols, up : numpy.ndarray
        The upper triangle's row and column of each entry, and its scaling (1 or ``sqrt 2``).

    Returns
    -------
    numpy.ndarray
        The statistic (float64 of shape ``(K p,)``, ``p = m + d``) of the arm played: the lowest arm
        whose score ``tx + radius sqrt(max(quad, 0))`` is within ``tie`` of the best.
    """
    K = tx.size
    scores = np.empty(K)
    best = -np.inf
    for a in range(K):
        q = quad[a] if quad[a] > 0.0 else 0.0
        scores[a] = tx[a] + radius * np.sqrt(q)
        if scores[a] > best:
            best = scores[a]
    threshold = best - tie
    arm = 0
    for a in range(K):
        if scores[a] >= threshold:
            arm = a
            break
    d, m = x.size, up.size
    p = m + d
    out = np.zeros(n_arms * p)
    start = arm * p
    for e in range(m):
        out[start + e] = x[rows[e]] * x[cols[e]] * up[e]
    r = rewards[arm]
    for j in range(d):
        out[start + m + j] = r * x[j]
    return out


@numba.njit(cache=True)
def linucb_changed_grams(bits, before, n_arms, dim, full, full_down, shift):
    """Unchecked: the arms whose block of a prefix sum differs, bit for bit, from ``before``'s, and
    their shifted Gram matrices.

    Parameters
    ----------
    bits, before : numpy.ndarray
        Two prefix sums of shape ``(K p,)`` viewed as int64 (their bit patterns).
    n_arms, dim : int
        ``K`` and ``d``.
    full, full_down : numpy.ndarray
        For every entry of a ``d x d`` matrix, the index of its triangle entry and that entry's
        scaling (1 or ``1 / sqrt 2``).
    shift : float
        Added to each diagonal entry.

    Returns
    -------
    tuple
        ``(changed, G)``: the arms (int64, increasing) and their matrices ``G_a + shift I`` (float64 of
        shape ``(n, d, d)``).
    """
    p = bits.size // n_arms
    flags = np.zeros(n_arms, dtype=np.bool_)
    n = 0
    for a in range(n_arms):
        for e in range(a * p, (a + 1) * p):
            if bits[e] != before[e]:
                flags[a] = True
                n += 1
                break
    changed = np.empty(n, dtype=np.int64)
    G = np.empty((n, dim, dim))
    values = bits.view(np.float64)
    i = 0
    for a in range(n_arms):
        if flags[a]:
            changed[i] = a
            for r in range(dim):
                for c in range(dim):
                    e = r * dim + c
                    G[i, r, c] = values[a * p + full[e]] * full_down[e]
                G[i, r, r] += shift
            i += 1
    return changed, G
