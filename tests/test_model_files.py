"""What an ``LCBModel`` leaves behind (chapter A9a): pickles without key material, no per-request sums in
memory or on disk, no rounding residue after a rollback, files checked before use (the tamper table),
stale temporary files removed, and faithful, fast loading (typed labels, pandas or numpy reader)."""

import copy
import io
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest

from bandit_unlearning.mab import model as mm
from bandit_unlearning.mab.model import LCBModel, load_model, load_statistics, plan_release

ModelFileError = ValueError  # every refusal of a file is a ValueError naming what is wrong

KEY = b"a secret the user keeps, 32 byte"


# --- helpers ----------------------------------------------------------------------------------
def adaptive_model(rng=None, n=120, sigma=0.05):
    """Arm 'a' served (reward 1), 'b' and 'c' worse; distinctive rewards on arm 'a'."""
    arms = ["a"] * (n // 2) + ["b"] * (n // 4) + ["c"] * (n - n // 2 - n // 4)
    rewards = np.r_[
        0.9 - 1e-4 * np.arange(n // 2) / 7,
        0.2 + 1e-4 * np.arange(n // 4) / 7,
        0.1 + 1e-4 * np.arange(n - n // 2 - n // 4) / 7,
    ]  # every reward distinct
    users = [f"user-{i:04d}" for i in range(n)]
    m = LCBModel.fit(
        arms, rewards, users=users, method="adaptive", epsilon=4.0, delta=1e-5, sigma=sigma, rng=rng
    )
    return m, arms, rewards, users


def walk_bytes(obj, seen=None) -> bytes:
    """Every byte reachable from ``obj``: arrays' buffers, floats, ints, strings, containers, __dict__."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return b""
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.tobytes()
    if isinstance(obj, (float, np.floating)):
        return np.float64(obj).tobytes()
    if isinstance(obj, (int, np.integer, bool)):
        return str(int(obj)).encode()
    if isinstance(obj, str):
        return obj.encode()
    if isinstance(obj, bytes):
        return obj
    if isinstance(obj, dict):
        return b"".join(walk_bytes(k, seen) + walk_bytes(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return b"".join(walk_bytes(v, seen) for v in obj)
    if isinstance(obj, np.random.Generator):
        return json.dumps(obj.bit_generator.state, default=str).encode()
    if hasattr(obj, "__dict__"):
        return walk_bytes(vars(obj), seen)
    return b""


def true_sums(arms, rewards, m=3):
    """The correctly rounded per-arm sums (what the model stores), as ``math.fsum`` gives them."""
    return np.array([math.fsum(np.asarray(rewards)[np.asarray(arms) == a]) for a in range(m)])


def raw(path):
    with np.load(path) as z:
        return {k: z[k].copy() for k in z.files}


def write(path, arrays, reseal=True, key=None):
    """Write ``arrays`` as a model file; ``reseal``: recompute every digest (and the tag with ``key``)."""
    arrays = dict(arrays)
    if reseal:
        stats = mm._digest(arrays, mm._STAT_KEYS)
        digests = (
            stats,
            mm._digest(arrays, mm._LOG_KEYS, stats.encode()),
            mm._digest(arrays, mm._ROW_KEYS, stats.encode()),
        )
        for name, value in zip(mm._DIGEST_KEYS, digests):
            arrays[name] = np.frombuffer(value.encode(), dtype=np.uint8)
        arrays.pop("hmac_sha256", None)
        if key is not None:
            arrays["hmac_sha256"] = np.frombuffer(mm._tag(key, digests).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def js(arrays, name):
    return json.loads(bytes(arrays[name]).decode())


def setjs(arrays, name, value):
    arrays[name] = np.frombuffer(json.dumps(value, sort_keys=True).encode(), dtype=np.uint8)


# --- A. pickling: the same contract as saving -------------------------------------------------
class LeakyPickle(LCBModel):
    """A deliberately broken variant: pickles its whole state, the noise generator included."""

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


def rewind_attack(model_copy, n_noised, true_noise, max_steps=16) -> bool:
    """Run the copied generator backwards 1..max_steps draws and regenerate the last release's noise."""
    state = getattr(model_copy, "_rng", None)
    if state is None:
        return False
    for steps in range(1, max_steps + 1):
        bits = np.random.PCG64()
        bits.state = model_copy._rng.bit_generator.state
        bits.advance(-steps)
        if np.array_equal(np.random.Generator(bits).standard_normal(n_noised), true_noise):
            return True
    return False


@pytest.mark.parametrize("cls, leaks", [(LeakyPickle, True), (LCBModel, False)])
def test_pickle_rewinding_attack(cls, leaks):
    m, arms, rewards, users = adaptive_model(rng=np.random.default_rng(11))
    m.__class__ = cls
    rec = m.delete(rows=[3])  # on the served arm: the Gaussian branch
    assert rec.method == "gaussian" and rec.noised_arms == ("a",)
    true_noise = np.random.default_rng(11).standard_normal(1)  # the release's noise (fit draws nothing)
    for copied in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert rewind_attack(copied, 1, true_noise) is leaks
    blob = pickle.dumps(m)
    assert (b"PCG64" in blob) is leaks
    # the de-noising: with the noise known, the release is a deterministic function of the statistic
    if leaks:
        pub = m.released_from
        assert int(np.argmax(pub.scores + np.array([0.05 * true_noise[0], 0, 0]))) == m.policy_index


def test_pickle_of_every_deletion_path_holds_no_deleted_reward_or_user():
    m, arms, rewards, users = adaptive_model(rng=np.random.default_rng(3))
    paths = [m.delete(rows=[5]), m.delete(user="user-0070"), m.delete(rows=[6, 100]), m.delete(rows=[7])]
    assert {r.reason for r in paths} >= {"requested", "branch_rule"}
    again = pickle.loads(pickle.dumps(m))
    blob = pickle.dumps(m)
    for rec in m.log:
        for row in rec.rows:
            assert np.float64(rewards[row]).tobytes() not in blob and users[row].encode() not in blob
            assert np.float64(rewards[row]).tobytes() not in walk_bytes(again)
    assert all(r.rows is None for r in again.log)  # pickled as saved: no row ids
    assert np.array_equal(again.statistics.reward_sums, m.statistics.reward_sums)
    again.delete(rows=[8])  # and it goes on, with fresh entropy


# --- B. pending requests keep nothing of their own --------------------------------------------
class KeepsRequestSums(LCBModel):
    """A deliberately broken variant: keeps each pending request's per-arm reward sum (the old design)."""

    def delete(self, **kw):
        rows = self._rows_of(kw.get("user"), kw.get("rows"))
        sums = np.bincount(self._arms[rows], weights=self._rewards[rows], minlength=len(self.labels))
        rec = super().delete(**kw)
        self.__dict__.setdefault("_request_sums", {})
        if rec.method == "gaussian":
            self._request_sums[rec.request_id] = sums
        for j in rec.rolled_back:
            self._request_sums.pop(j, None)
        return rec


@pytest.mark.parametrize("cls, found", [(KeepsRequestSums, 3), (LCBModel, 0)])
def test_pending_rewards_not_in_memory_nor_file(tmp_path, monkeypatch, cls, found):
    m, arms, rewards, users = adaptive_model(rng=np.random.default_rng(5), sigma=0.2)
    m.__class__ = cls
    deleted = []
    for row in (10, 11, 12):
        rec = m.delete(rows=[row])
        assert rec.method == "gaussian"
        deleted.append(row)
    assert m.pending == (0, 1, 2)
    memory = walk_bytes(m) + walk_bytes(m.log)
    assert sum(np.float64(rewards[r]).tobytes() in memory for r in deleted) == found
    if cls is KeepsRequestSums:  # its file format kept the sums too
        original = mm._model_arrays
        monkeypatch.setattr(
            mm,
            "_model_arrays",
            lambda model, keep, key: {
                **original(model, keep, key),
                "pending_sums": np.array(list(model._request_sums.values())),
            },
        )
    path = tmp_path / "m.npz"
    m.save(path)
    blob = path.read_bytes()
    assert sum(np.float64(rewards[r]).tobytes() in blob for r in deleted) == found
    assert m.pending_counts.tolist() == [3, 0, 0]
    # a later rollback recomputes the arm's sum from its live rows: bit for bit a refit
    for row in range(60, 90):  # other arms, until the accountant rolls everything back
        if not m.pending:
            break
        m.delete(rows=[row])
    assert not m.pending
    live = m.row_ids
    refit = LCBModel.fit(np.array(arms)[live], rewards[live], tau=m.tau, labels=m.labels)
    assert np.array_equal(m.statistics.reward_sums, refit.statistics.reward_sums)


def test_saved_log_keeps_counts_not_row_ids_unless_asked(tmp_path):
    m = LCBModel.fit(list(range(5)) * 20, np.linspace(0, 1, 100), rng=0)
    m.delete(rows=[123 % 100, 45])
    m.save(tmp_path / "a.npz")
    m.save(tmp_path / "b.npz", keep_row_ids=True)
    a, b = load_model(tmp_path / "a.npz"), load_model(tmp_path / "b.npz")
    assert a.log[0].rows is None and a.log[0].n_rows == 2 and b.log[0].rows == (23, 45)
    assert raw(tmp_path / "a.npz")["log_rows"].size == 0
    with pytest.raises(ValueError, match="read without row ids"):
        a.save(tmp_path / "c.npz", keep_row_ids=True)


# --- rounding: the stored sum after a rollback is what the remaining rows give ----------------
def test_no_rounding_residue_after_rollback():
    rng = np.random.default_rng(7)
    n, trials = 400, 200
    residues = exact = 0
    for _ in range(trials):
        arms = rng.integers(0, 4, n)
        rewards = rng.random(n)
        m = LCBModel.fit(arms, rewards, rng=0)
        i = int(rng.integers(n))
        total = np.bincount(arms, weights=rewards, minlength=4)
        keep = np.arange(n) != i
        refit = true_sums(arms[keep], rewards[keep], 4)  # correctly rounded (fsum)
        residues += bool(
            total[arms[i]] - rewards[i]
            != np.bincount(arms[keep], weights=rewards[keep], minlength=4)[arms[i]]
        )  # the broken fl(S - r)
        m.delete(rows=[i])
        exact += bool(np.array_equal(m.statistics.reward_sums, refit))
        again = LCBModel.fit(arms[keep], rewards[keep], tau=m.tau, labels=m.labels, rng=0)
        exact += bool(np.array_equal(m.statistics.reward_sums, again.statistics.reward_sums)) - 1
    assert residues > trials // 20  # subtracting leaves a residue in a good share of deletions
    assert exact == trials  # recomputing never does


# --- C. files validated before use: the tamper table ------------------------------------------
@pytest.fixture(scope="module")
def saves(tmp_path_factory):
    folder = tmp_path_factory.mktemp("saves")
    m, arms, rewards, users = adaptive_model(rng=np.random.default_rng(9))
    m.save(folder / "before.npz", keep_row_ids=True)
    m.delete(rows=[3])  # pending
    m.delete(user="user-0065")  # another arm: branch rule
    m.delete(rows=[4, 5])  # the accountant refuses: everything rolled back
    m.delete(rows=[6])  # pending again
    assert [r.reason for r in m.log] == ["requested", "branch_rule", "budget", "requested"] and m.pending == (
        3,
    )
    m.save(folder / "after.npz", keep_row_ids=True)
    m.save(folder / "keyed.npz", keep_row_ids=True, key=KEY)
    return folder, m


def mutate_meta(field, value):
    def f(a):
        meta = js(a, "meta")
        meta[field] = value(meta) if callable(value) else value
        setjs(a, "meta", meta)

    return f


def mutate_array(name, fn):
    def f(a):
        a[name] = fn(a[name].copy())

    return f


def mutate_log(fn):
    def f(a):
        log = js(a, "log")
        fn(log)
        setjs(a, "log", log)

    return f


def _set(arr, i, v):
    arr[i] = v
    return arr


def _undelete(a):
    """Bring a deleted row back, with every statistic of the row store made consistent."""
    meta = js(a, "meta")
    ids = a["row_ids"]
    gone = sorted(set(range(meta["n_fit"])) - set(ids.tolist()) - set(a["log_rows"].tolist()[:0]))
    row = gone[0]
    a["row_ids"] = np.sort(np.r_[ids, row])
    pos = int(np.searchsorted(a["row_ids"], row))
    a["row_arms"] = np.insert(a["row_arms"], pos, 1)
    a["row_rewards"] = np.insert(a["row_rewards"], pos, 0.25)
    users = js(a, "user_ids")
    a["row_user_codes"] = np.insert(a["row_user_codes"], pos, len(users))
    setjs(a, "user_ids", users + ["user-0065"])
    a["counts"] = np.bincount(a["row_arms"], minlength=3)
    a["sums"] = true_sums(a["row_arms"], a["row_rewards"])
    a["pub_counts"] = a["counts"] + a["pending_counts"]
    none = a["pending_counts"] == 0
    a["pub_sums"] = np.where(none, a["sums"], a["pub_sums"])
    meta["n_live"] += 1
    setjs(a, "meta", meta)


# (name, mutation, message the load must give) -- every file is resealed (digests recomputed)
TAMPER = [
    ("format", mutate_meta("format", "other/9"), "unsupported format"),
    ("save id", mutate_meta("save_id", "xyz"), "save_id"),
    ("extra setting", mutate_meta("evil", 1), "exactly the fields"),
    ("labels duplicated", mutate_meta("labels", ["a", "a", "c"]), "labels must be distinct"),
    ("labels empty", mutate_meta("labels", []), "labels must be a non-empty"),
    ("labels of another type", mutate_meta("labels", [["a"], "b", "c"]), "labels must be a non-empty list"),
    ("tau out of range", mutate_meta("tau", 1.5), "tau must lie in"),
    ("tau a string", mutate_meta("tau", "0.1"), "tau must lie in"),
    ("n_fit zero", mutate_meta("n_fit", 0), "n_fit must be"),
    ("n_live above n_fit", mutate_meta("n_live", 10**6), "n_fit must be"),
    ("method", mutate_meta("method", "magic"), "method must be one of"),
    ("epsilon negative", mutate_meta("epsilon", -1.0), "epsilon must be"),
    ("epsilon huge (log no longer replays)", mutate_meta("epsilon", 1e9), "delta_at_target"),
    ("delta above 1", mutate_meta("delta", 1.5), "delta must lie"),
    ("sigma zero", mutate_meta("sigma", 0.0), "sigma must be"),
    ("sigma changed", mutate_meta("sigma", 0.5), "noised \\(with the model's sigma\\)"),
    ("served arm out of range", mutate_meta("policy", 3), "served arm must be an arm index"),
    ("served arm a bool", mutate_meta("policy", True), "served arm must be an arm index"),
    (
        "pending ids unsorted",
        mutate_meta("pending_ids", lambda m: m["pending_ids"][::-1] + [0, 0]),
        "pending_ids",
    ),
    ("pending ids emptied", mutate_meta("pending_ids", []), "pending_ids and pending_counts disagree"),
    ("row_ids_kept flipped", mutate_meta("row_ids_kept", False), "row ids present in the log"),
    ("counts wrong shape", mutate_array("counts", lambda x: x[:2]), "one entry per arm"),
    ("counts negative", mutate_array("counts", lambda x: _set(x, 0, -1)), "counts must be >= 0"),
    ("counts as floats", lambda a: a.__setitem__("counts", a["counts"].astype(float)), "must be a 1-D int64"),
    ("sums above counts", mutate_array("sums", lambda x: _set(x, 1, 1e6)), "reward sums must be finite"),
    ("sums NaN", mutate_array("sums", lambda x: _set(x, 1, np.nan)), "reward sums must be finite"),
    ("released-from counts", mutate_array("pub_counts", lambda x: x + 1), "released-from counts"),
    (
        "released-from sums on a non-pending arm",
        mutate_array("pub_sums", lambda x: _set(x, 2, x[2] * 0.5)),
        "released-from sums must equal",
    ),
    (
        "pending counts negative",
        mutate_array("pending_counts", lambda x: _set(x, 1, -1)),
        "pending_counts must be",
    ),
    (
        "pending counts zeroed (budget reset)",
        lambda a: (
            mutate_array("pending_counts", lambda x: x * 0)(a),
            a.__setitem__("pub_counts", a["counts"].copy()),
        ),
        "released-from sums must equal|pending_ids and pending_counts",
    ),
    ("row ids duplicated", mutate_array("row_ids", lambda x: _set(x, 1, x[0])), "row ids must be distinct"),
    (
        "row id beyond n_fit",
        mutate_array("row_ids", lambda x: _set(x, -1, 10**6)),
        "row ids must be distinct",
    ),
    (
        "row arm out of range",
        mutate_array("row_arms", lambda x: _set(x, 0, 7)),
        "row arms must be arm indices",
    ),
    ("reward 5.0", mutate_array("row_rewards", lambda x: _set(x, 0, 5.0)), "row rewards must be finite"),
    ("reward NaN", mutate_array("row_rewards", lambda x: _set(x, 0, np.nan)), "row rewards must be finite"),
    ("reward changed", mutate_array("row_rewards", lambda x: _set(x, 0, 0.5)), "bit for bit"),
    ("rows truncated", mutate_array("row_rewards", lambda x: x[:-1]), "row_rewards must hold"),
    ("user codes wrong length", mutate_array("row_user_codes", lambda x: x[:-1]), "row user codes must give"),
    (
        "user code out of range",
        mutate_array("row_user_codes", lambda x: _set(x, 0, 10**6)),
        "row user codes must",
    ),
    (
        "user ids not ids",
        lambda a: setjs(a, "user_ids", [[u] for u in js(a, "user_ids")]),
        "user ids must be null",
    ),
    (
        "user ids duplicated",
        lambda a: setjs(a, "user_ids", js(a, "user_ids")[:1] * len(js(a, "user_ids"))),
        "user ids must be null or a list of distinct",
    ),
    (
        "a deleted user's id kept",
        lambda a: setjs(a, "user_ids", js(a, "user_ids") + ["user-0065"]),
        "must own a live row",
    ),
    ("a deleted user brought back", _undelete, "the log deletes"),
    ("release shifts negative", mutate_array("release_mus", lambda x: -x), "release_mus must be"),
    (
        "release shift changed",
        mutate_array("release_mus", lambda x: _set(x, 0, x[0] / 2)),
        "mu_release differs",
    ),
    (
        "release shifts zeroed (budget reset)",
        mutate_array("release_mus", lambda x: x * 0),
        "mu_release differs",
    ),
    ("log record dropped", mutate_log(lambda log: log.pop()), "one record per release"),
    ("log field missing", mutate_log(lambda log: log[0].pop("reason")), "exactly the fields"),
    (
        "log reason",
        mutate_log(lambda log: log[0].__setitem__("reason", "budget")),
        "does not replay|rolls nothing",
    ),
    (
        "log mu_max",
        mutate_log(lambda log: log[-1].__setitem__("mu_max", 0.0)),
        "mu_max is not the composition",
    ),
    ("log delta", mutate_log(lambda log: log[-1].__setitem__("delta_at_target", 0.0)), "delta_at_target"),
    ("log rolled_back", mutate_log(lambda log: log[1].__setitem__("rolled_back", [])), "does not replay"),
    ("log n_rows", mutate_log(lambda log: log[1].__setitem__("n_rows", 99)), "log_offsets|the log deletes"),
    ("log policy", mutate_log(lambda log: log[-1].__setitem__("policy", "zz")), "not an arm label"),
    ("log request id", mutate_log(lambda log: log[0].__setitem__("request_id", 5)), "request_id must be"),
    (
        "log row ids reused",
        mutate_array("log_rows", lambda x: _set(x, 0, 20)),
        "exactly the ids missing|distinct ids",
    ),
    (
        "log not JSON",
        lambda a: a.__setitem__("log", np.frombuffer(b"{oops", dtype=np.uint8)),
        "not valid JSON",
    ),
]


@pytest.mark.parametrize("name, mutation, message", TAMPER, ids=[t[0] for t in TAMPER])
def test_tamper_table_resealed_files_are_refused(saves, tmp_path, name, mutation, message):
    folder, _ = saves
    arrays = raw(folder / "after.npz")
    mutation(arrays)
    bad = tmp_path / "bad.npz"
    write(bad, arrays)
    with pytest.raises(ModelFileError, match=message):
        load_model(bad)
    # the same edit on the authenticated file, resealed without the key: refused by the tag
    keyed = raw(folder / "keyed.npz")
    mutation(keyed)
    write(bad, keyed, key=b"the attacker's guess of the key!")
    with pytest.raises(ModelFileError, match=f"HMAC tag mismatch|{message}"):
        load_model(bad, key=KEY)


def _consistent_reward_edit(a):
    a["row_rewards"][-1] = 0.0
    a["sums"] = true_sums(a["row_arms"], a["row_rewards"])
    none = a["pending_counts"] == 0
    a["pub_sums"] = np.where(none, a["sums"], a["pub_sums"])


# edits that keep every invariant and consistency: undetectable without a key (checksums give
# integrity, not authenticity), refused with it
UNDETECTED = [
    ("delta raised to 0.99 (a larger budget)", mutate_meta("delta", 0.99)),
    ("a live reward changed with its arm's sums", _consistent_reward_edit),
    ("a pending arm's released-from sum moved", mutate_array("pub_sums", lambda x: _set(x, 0, x[0] - 0.5))),
    ("user ids swapped", lambda a: setjs(a, "user_ids", js(a, "user_ids")[::-1])),
]


@pytest.mark.parametrize("name, mutation", UNDETECTED, ids=[t[0] for t in UNDETECTED])
def test_undetectable_without_key_refused_with_it(saves, tmp_path, name, mutation):
    folder, m = saves
    arrays = raw(folder / "after.npz")
    mutation(arrays)
    write(tmp_path / "edited.npz", arrays)
    load_model(tmp_path / "edited.npz")  # loads: the documented limit of checksums
    keyed = raw(folder / "keyed.npz")
    mutation(keyed)
    write(tmp_path / "edited.npz", keyed, key=b"the attacker's guess of the key!")
    with pytest.raises(ModelFileError, match="HMAC tag mismatch"):
        load_model(tmp_path / "edited.npz", key=KEY)
    write(tmp_path / "edited.npz", keyed)  # or the tag simply dropped
    with pytest.raises(ModelFileError, match="carries no HMAC tag"):
        load_model(tmp_path / "edited.npz", key=KEY)


def test_checksums_bind_sections_of_one_save(saves, tmp_path):
    folder, _ = saves
    before, after = raw(folder / "before.npz"), raw(folder / "after.npz")
    swaps = {
        "rows": mm._ROW_KEYS + ("rows_sha256",),
        "statistics": mm._STAT_KEYS + ("stats_sha256",),
        "log": mm._LOG_KEYS + ("log_sha256",),
    }
    for section, keys in swaps.items():
        for a, b in ((before, after), (after, before)):
            mixed = {**a, **{k: b[k] for k in keys}}
            write(tmp_path / "mixed.npz", mixed, reseal=False)
            with pytest.raises(ModelFileError, match="checksum mismatch"):
                load_model(tmp_path / "mixed.npz")
    # not resealed: any changed byte of a section is caught by its digest
    changed = dict(after)
    changed["pub_sums"] = changed["pub_sums"] + 1e-3
    write(tmp_path / "c.npz", changed, reseal=False)
    with pytest.raises(ModelFileError, match="checksum mismatch in the statistics"):
        load_statistics(tmp_path / "c.npz")


def test_authenticated_file_needs_its_key(saves, tmp_path):
    folder, m = saves
    with pytest.raises(ModelFileError, match="pass key="):
        load_model(folder / "keyed.npz")
    with pytest.raises(ModelFileError, match="pass key="):
        load_statistics(folder / "keyed.npz")
    with pytest.raises(ModelFileError, match="HMAC tag mismatch"):
        load_model(folder / "keyed.npz", key=b"x" * 32)
    with pytest.raises(ModelFileError, match="carries no HMAC tag"):
        load_model(folder / "after.npz", key=KEY)
    assert (
        load_model(folder / "keyed.npz", key=KEY).statistics.counts.tolist() == m.statistics.counts.tolist()
    )
    assert load_statistics(folder / "keyed.npz", key=KEY).counts.tolist() == m.statistics.counts.tolist()
    with pytest.raises(ValueError, match="at least 16 bytes"):
        m.save(tmp_path / "k.npz", key=b"short")
    with pytest.raises(TypeError, match="key must be bytes"):
        m.save(tmp_path / "k.npz", key="text")


def _npy_header(shape, dtype="<f8"):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return b"\x93NUMPY\x01\x00"[:0] + buf.getvalue()


def test_sizes_checked_before_any_allocation(saves, tmp_path):
    folder, _ = saves
    src = folder / "after.npz"
    bad = tmp_path / "huge.npz"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "row_rewards.npy":  # the header claims 10^10 floats (80 GB)
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.zeros(3))
                head = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    head, {"descr": "<f8", "fortran_order": False, "shape": (10**10,)}
                )
                data = b"\x93NUMPY\x01\x00" + head.getvalue()[8:] + np.zeros(3).tobytes()
            zout.writestr(info.filename, data)
    tracemalloc.start()
    with pytest.raises(ModelFileError, match="header claims shape"):
        load_model(bad)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert os.path.getsize(bad) < 20_000 and peak < 5_000_000
    # compressed entries, unknown entries, missing entries, truncated files
    arrays = raw(src)
    with open(tmp_path / "z.npz", "wb") as fh:
        np.savez_compressed(fh, **arrays)
    with pytest.raises(ModelFileError, match="not stored uncompressed"):
        load_model(tmp_path / "z.npz")
    write(tmp_path / "extra.npz", {**arrays, "evil": np.zeros(2)}, reseal=False)
    with pytest.raises(ModelFileError, match="unexpected entry"):
        load_model(tmp_path / "extra.npz")
    write(tmp_path / "missing.npz", {k: v for k, v in arrays.items() if k != "log"}, reseal=False)
    with pytest.raises(ModelFileError, match="'log' is missing"):
        load_statistics(tmp_path / "missing.npz")
    blob = src.read_bytes()
    for cut in np.linspace(1, len(blob) - 1, 40).astype(int):
        (tmp_path / "cut.npz").write_bytes(blob[:cut])
        with pytest.raises(ModelFileError):
            load_model(tmp_path / "cut.npz")


def test_load_statistics_reads_only_the_statistics_section(saves, monkeypatch):
    folder, m = saves
    read = []
    original = mm._read_entry
    monkeypatch.setattr(
        mm,
        "_read_entry",
        lambda path, zf, info, name, size: (read.append(name), original(path, zf, info, name, size))[1],
    )
    st = load_statistics(folder / "after.npz")
    assert st.counts.tolist() == m.statistics.counts.tolist()
    assert set(read) == set(mm._STAT_KEYS) | set(mm._DIGEST_KEYS)


CHILD = r"""
import sys, time, numpy as np
from bandit_unlearning.mab import model as mm
m = mm.LCBModel.fit(np.arange(2000) % 3, np.linspace(0, 1, 2000), users=[f"u{i}" for i in range(2000)], rng=0)
def slow(fh, arrays):
    fh.write(b"PK\x03\x04 the rows before a deletion")
    fh.flush()
    print("writing", flush=True)
    time.sleep(60)
mm._write_npz = slow
m.save(sys.argv[1])
"""


def test_stale_temporary_file_of_a_killed_save_is_removed(tmp_path):
    target = tmp_path / "m.npz"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    stale = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert len(stale) == 1 and str(child.pid) in stale[0]
    # a temporary file of a process that still runs (another writer) is left alone
    alive = tmp_path / f".m.npz.{os.getppid()}.abcd.tmp"
    alive.write_bytes(b"in progress")
    LCBModel.fit([0, 1], [0.0, 1.0], rng=0).save(target)
    assert sorted(os.listdir(tmp_path)) == sorted(["m.npz", alive.name])
    load_model(target)


# --- D. an explainable model ------------------------------------------------------------------
def test_reasons_summary_repr_and_replayable_plans():
    m, arms, rewards, users = adaptive_model(rng=np.random.default_rng(2))
    recs = []
    for kw in ({"rows": [1]}, {"rows": [60]}, {"rows": [2, 3, 4, 5, 6, 7, 8, 9, 13, 14]}):
        pend, pub, mus = m.pending_counts.copy(), m.released_from.counts.copy(), [r.mu_release for r in m.log]
        req = np.bincount([m.labels.index(arms[i]) for i in kw["rows"]], minlength=3)
        plan = plan_release(
            pub,
            pend,
            req,
            all(arms[i] == m.policy for i in kw["rows"]),
            mus,
            log_term=m.statistics.log_term,
            sigma=0.05,
            mu_budget=m.mu_budget,
            method="adaptive",
        )
        rec = m.delete(**kw)
        assert (rec.method == "gaussian") == plan.noise_request and rec.mu_release == plan.mu
        recs.append(rec.reason)
    assert recs == ["requested", "branch_rule", "budget"]
    s = m.summary()
    assert (s["rows"], s["arms"], s["requests"], s["rows_deleted"], s["pending_requests"]) == (
        108,
        3,
        3,
        12,
        0,
    )
    assert 0 < s["budget_left"] < m.mu_budget and repr(m).startswith(
        "LCBModel(adaptive: 108 rows of 120, 3 arms"
    )
    r = LCBModel.fit(["p", "q"] * 3, [1.0, 0.0] * 3, rng=0)
    assert r.delete(rows=[1]).reason == "requested" and r.summary()["pending_rows"] == 0
    with pytest.raises(ValueError, match="reason must be one of"):
        mm.DeletionRecord(0, (1,), "rollback", (0,), (), 0.0, 0.0, 0.0, 0.0, "a", "because")


# --- E. faithful, fast loading ----------------------------------------------------------------
@pytest.mark.parametrize(
    "arms",
    [
        np.random.default_rng(0).integers(-5, 50, 1000),
        np.random.default_rng(1).integers(0, 3, 1000).astype(np.uint8),
        np.random.default_rng(2).integers(0, 2**40, 1000),  # a wide span: np.unique
        np.random.default_rng(3).integers(-(2**62), 2**62, 500),
        np.tile(np.arange(7, dtype=np.int32)[::-1], 30),
    ],
)
def test_integer_labelling_equals_unique(arms):
    labels, idx = mm._labels_and_index(arms, None)
    uniq, inverse = np.unique(arms, return_inverse=True)
    assert labels == tuple(uniq.tolist()) and np.array_equal(idx, inverse)
    assert all(type(x) is int for x in labels)


def test_csv_labels_keep_type_and_order_with_or_without_pandas(tmp_path, monkeypatch):
    rows = [(2, 0.5), (10, 0.5), (2, 0.5), (10, 0.5), (7, 0.1)] * 4
    path = tmp_path / "d.csv"
    path.write_text("item,click,who\n" + "\n".join(f"{a},{r},{i % 3}" for i, (a, r) in enumerate(rows)))
    a = LCBModel.from_csv(path, arm="item", reward="click", user="who")
    frame = {
        "item": np.array([x for x, _ in rows]),
        "click": [r for _, r in rows],
        "who": [i % 3 for i in range(20)],
    }
    f = LCBModel.from_frame(frame, arm="item", reward="click", user="who")
    assert a.labels == f.labels == (2, 7, 10) and a.policy == f.policy == 2  # 2 and 10 tied: 2 first
    monkeypatch.setitem(sys.modules, "pandas", None)  # numpy's reader
    b = LCBModel.from_csv(path, arm="item", reward="click", user="who")
    assert b.labels == a.labels and np.array_equal(b.statistics.reward_sums, a.statistics.reward_sums)
    b.delete(user=1)
    path.write_text("item,click\n07,1\n7,0\nx,0.25\n")  # not canonical: text
    assert LCBModel.from_csv(path, arm="item", reward="click").labels == ("07", "7", "x")


def test_csv_and_frame_errors_name_what_is_wrong(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    path.write_text("item_id,click\n1,0.5\n2,nan\n")
    with pytest.raises(ValueError, match=r"no column 'arm'; its columns are \['item_id', 'click'\]"):
        LCBModel.from_csv(path)
    for hide in (False, True):
        if hide:
            monkeypatch.setitem(sys.modules, "pandas", None)
        with pytest.raises(ValueError, match="row 1 is NaN"):
            LCBModel.from_csv(path, arm="item_id", reward="click")
    with pytest.raises(ValueError, match=r"no column 'arm'; its columns are \['a', 'r'\]"):
        LCBModel.from_frame({"a": [1, 2], "r": [0.0, 1.0]})
    with pytest.raises(ValueError, match="row 1 is infinite"):
        LCBModel.fit([0, 1], [0.0, np.inf])
    with pytest.raises(TypeError, match="user ids must be str or int"):
        LCBModel.fit([0, 1], [0.0, 1.0], users=[(1, 2), (3, 4)])
    with pytest.raises(ValueError, match="NaN or infinite labels"):
        LCBModel.fit(np.array([np.nan, 1.0, np.nan]), [0.0, 1.0, 0.5])


@pytest.mark.parametrize(
    "rewards",
    [
        np.array([5e-324, 1e-300, 0.5, 1.0, 0.1, 0.0, 2.2250738585072014e-308, 0.3, 1 - 2**-53] * 7),
        np.random.default_rng(4).random(3000),
        np.random.default_rng(5).integers(0, 2, 3000).astype(float),  # the dyadic fast path
        np.random.default_rng(6).integers(0, 5, 3000) / 4.0,
    ],
)
def test_exact_sums_are_exact_on_both_paths(rewards):
    arms = np.arange(rewards.size) % 3
    exact = mm._exact_sums(arms, rewards, 3)
    assert exact == [sum(mm._exact(r) for r in rewards[arms == a].tolist()) for a in range(3)]
    assert [mm._rounded(v) for v in exact] == [math.fsum(rewards[arms == a]) for a in range(3)]


def test_progress_reports_every_stage(tmp_path):
    m = LCBModel.fit(np.arange(300) % 3, np.linspace(0, 1, 300), users=[i // 3 for i in range(300)], rng=0)
    seen = []
    m.save(tmp_path / "m.npz", progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert seen == [
        ("arms and digests".replace("arms", "arrays"), 1, 3),
        ("written", 2, 3),
        ("renamed", 3, 3),
    ]
    seen.clear()
    load_model(tmp_path / "m.npz", progress=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == ["read", "digests", "statistics", "log", "rows", "model"]
    (tmp_path / "d.csv").write_text("arm,reward\n1,0.5\n2,1\n")
    seen.clear()
    LCBModel.from_csv(tmp_path / "d.csv", progress=lambda *a: seen.append(a))
    assert seen == [("read", 1, 2), ("fit", 2, 2)]
    with pytest.raises(TypeError, match="progress must be None, False or a callable"):
        m.save(tmp_path / "x.npz", progress="yes")
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(rewards=["0.5", "1"]), TypeError, "rewards must be real numbers"),
        (dict(rewards=[0.5 + 1j, 1.0]), TypeError, "rewards must be real numbers"),
        (dict(rewards=[np.nan, 1.0]), ValueError, "row 0 is NaN"),
        (
            dict(method="adaptive", epsilon=1.0, delta=1e-5, sigma=True),
            TypeError,
            "sigma must be a real number",
        ),
        (
            dict(method="adaptive", epsilon=1.0, delta=1e-5, sigma="0.3"),
            TypeError,
            "sigma must be a real number",
        ),
        (dict(users=[True, False]), TypeError, "user ids must be str or int"),
    ],
)
def test_fit_refuses_what_it_cannot_keep(kwargs, exc, message):
    args = {"rewards": [0.0, 1.0], **kwargs}
    with pytest.raises(exc, match=message):
        LCBModel.fit([0, 1], args.pop("rewards"), **args)
