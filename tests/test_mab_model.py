"""The model with a lifecycle (chapters A9a–A9b): fit from arrays / CSV / frame, delete by user or rows, refusals
that change nothing, the accountant and its rollback, deletion capacity, atomic persistence that forgets."""

import os

import numpy as np
import pytest

from bandit_unlearning.mab import model as model_module
from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import fit_lcb
from bandit_unlearning.mab.mechanisms import exact_sensitivity
from bandit_unlearning.mab.model import (
    DeletionRecord,
    LCBModel,
    ReleasePlan,
    admits,
    deletion_capacity,
    gdp_budget,
    gdp_delta,
    load_model,
    load_statistics,
    plan_release,
    release_shift,
    request_mus,
    save_model,
)
from bandit_unlearning.privacy.gaussian import gaussian_delta

ARMS = ["x", "y", "x", "z", "y", "x", "x", "y", "z", "x"] * 6
REWARDS = np.linspace(0, 1, 60)
USERS = [f"u{i // 2}" for i in range(60)]


def snapshot(m):
    return (
        m.row_ids.tolist(),
        m.statistics.counts.tolist(),
        m.statistics.reward_sums.tolist(),
        m.pending,
        m.log,
        m.policy,
        m.mu_max,
    )


def refit(m, arms, rewards):
    index = {lab: i for i, lab in enumerate(m.labels)}
    ids = m.row_ids
    return fit_lcb(
        OfflineDataset(np.array([index[arms[i]] for i in ids]), np.asarray(rewards)[ids], len(m.labels)),
        tau=m.tau,
    )


def test_fit_labels_tau_and_constructors(tmp_path):
    m = LCBModel.fit(ARMS, REWARDS, users=USERS)
    assert m.labels == ("x", "y", "z") and m.tau == 1 / 60 and m.n_fit == 60 and len(m) == 60
    assert m.statistics.counts.tolist() == [30, 18, 12]
    path = tmp_path / "d.csv"
    path.write_text(
        "arm,reward,user\n" + "\n".join(f"{a},{float(r)!r},{u}" for a, r, u in zip(ARMS, REWARDS, USERS))
    )
    c = LCBModel.from_csv(path, user="user")
    assert c.labels == m.labels and np.allclose(c.statistics.reward_sums, m.statistics.reward_sums)
    f = LCBModel.from_frame({"arm": ARMS, "reward": REWARDS, "user": USERS}, user="user")
    assert f.statistics.counts.tolist() == [30, 18, 12] and f.policy == m.policy
    mixed = LCBModel.fit([(1, "a"), 3, (1, "a")], [0.0, 1.0, 1.0])  # unsortable hashable labels
    assert mixed.labels == ((1, "a"), 3)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"rewards": [0.5] * 59 + [1.5]}, ValueError),
        ({"rewards": [0.5] * 59}, ValueError),
        ({"method": "gaussian"}, ValueError),
        ({"method": "adaptive"}, ValueError),
        ({"method": "adaptive", "epsilon": 1.0, "delta": 1e-5, "sigma": -1.0}, ValueError),
        ({"method": "adaptive", "epsilon": 0.0, "delta": 1e-5, "sigma": 1.0}, ValueError),
        ({"epsilon": 1.0}, ValueError),
        ({"tau": 1.5}, ValueError),
        ({"users": ["a"] * 59}, ValueError),
        ({"users": [[1]] * 60}, TypeError),
        ({"rng": -1}, ValueError),
        ({"rng": "seed"}, TypeError),
    ],
)
def test_fit_refuses_bad_input(kwargs, exc):
    args = {"rewards": REWARDS, **kwargs}
    rewards = args.pop("rewards")
    with pytest.raises(exc):
        LCBModel.fit(ARMS, rewards, **args)


def test_delete_by_user_and_rows_equals_refit_and_refusals_change_nothing():
    m = LCBModel.fit(ARMS, REWARDS, users=USERS)
    rec = m.delete(user="u3")
    assert isinstance(rec, DeletionRecord) and rec.rows == (6, 7) and rec.method == "rollback"
    m.delete(rows=[0, 11])
    r = refit(m, ARMS, REWARDS)
    assert np.array_equal(m.statistics.counts, r.counts) and np.allclose(
        m.statistics.reward_sums, r.reward_sums
    )
    assert m.policy_index == r.arm
    before = snapshot(m)
    for bad, exc in (
        ({"user": "u3"}, ValueError),
        ({"user": "nobody"}, ValueError),
        ({"rows": [6]}, ValueError),
        ({"rows": [60]}, ValueError),
        ({"rows": [-1]}, ValueError),
        ({"rows": [2, 2]}, ValueError),
        ({"rows": []}, ValueError),
        ({"rows": [1.5]}, TypeError),
        ({}, ValueError),
        ({"user": "u5", "rows": [1]}, ValueError),
        ({"user": ["u5"]}, TypeError),
    ):
        with pytest.raises(exc):
            m.delete(**bad)
        assert snapshot(m) == before
    no_users = LCBModel.fit(ARMS, REWARDS)
    with pytest.raises(ValueError, match="without user ids"):
        no_users.delete(user="u1")


def test_accountant_functions():
    assert request_mus([0.3, 0.4]).tolist() == pytest.approx([0.5, 0.4])
    assert admits([0.3], 0.4, 0.5) and not admits([0.3], 0.41, 0.5)
    mu = gdp_budget(1.0, 1e-5)
    assert gdp_delta(mu, 1.0) <= 1e-5 and gdp_delta(mu * 1.01, 1.0) > 1e-5
    assert gdp_delta(0.0, 1.0) == 0.0 and gdp_delta(0.7, 0.5) == gaussian_delta(1.0, 0.7, 0.5)
    with pytest.raises(ValueError):
        gdp_delta(-1, 1.0)
    with pytest.raises(ValueError):
        gdp_budget(1.0, 2.0)
    assert release_shift([10, 10], [0, 0], 3.0, 1.0) == 0.0
    expected = np.hypot(exact_sensitivity(10, 2, 3.0), exact_sensitivity(20, 1, 3.0)) / 0.5
    assert release_shift([10, 20], [2, 1], 3.0, 0.5) == pytest.approx(expected)


def test_plan_release_rules():
    kw = dict(log_term=3.0, sigma=0.5, mu_budget=10.0, method="adaptive")
    p = plan_release([10, 10], [0, 0], [2, 0], True, [], **kw)
    assert (p.noise_request, p.rollback_pending, p.noised_arms) == (True, False, (0,))
    assert p.mu == pytest.approx(exact_sensitivity(10, 2, 3.0) / 0.5)
    p = plan_release([10, 10], [0, 0], [0, 2], False, [], **kw)  # off the policy arm, nothing pending
    assert p == ReleasePlan(False, False, (), 0.0)
    p = plan_release([10, 10], [2, 0], [0, 2], False, [0.1], **kw)  # off policy, rows pending: noised
    assert not p.noise_request and not p.rollback_pending and p.noised_arms == (0,)
    p = plan_release([10, 10], [2, 0], [2, 0], True, [9.99], **kw)  # over budget: roll back everything
    assert p == ReleasePlan(False, True, (), 0.0)
    p = plan_release([10, 10], [0, 0], [2, 0], True, [], **{**kw, "method": "rollback", "sigma": None})
    assert p == ReleasePlan(False, False, (), 0.0)


def test_literal_reference_reads_no_served_arm_and_survives_a_file(tmp_path):
    kw = dict(log_term=3.0, sigma=0.5, mu_budget=10.0, method="adaptive", reference="literal")
    plans = [plan_release([10, 10], [0, 0], [0, 2], on_policy, [], **kw) for on_policy in (True, False)]
    assert (
        plans[0] == plans[1] and plans[0].noise_request and plans[0].noised_arms == (1,)
    )  # no served arm read
    assert plan_release([10, 10], [2, 0], [0, 2], False, [9.99], **kw) == ReleasePlan(False, True, (), 0.0)
    data = ([0] * 100 + [1] * 100, [1.0] * 60 + [0.0] * 40 + [1.0] * 57 + [0.0] * 43)
    opts = dict(method="adaptive", epsilon=1.0, delta=1e-3, sigma=0.3, rng=0)
    cond, lit = LCBModel.fit(*data, **opts), LCBModel.fit(*data, **opts, reference="literal")
    assert (cond.reference, lit.reference, LCBModel.fit(*data).reference) == (
        "conditional",
        "literal",
        "literal",
    )
    off = [150]  # a row of arm 1; both models serve arm 0
    assert cond.delete(rows=off).reason == "branch_rule" and cond.log[-1].reference == "conditional"
    rec = lit.delete(rows=off)
    assert (rec.method, rec.reason, rec.reference, rec.noised_arms) == (
        "gaussian",
        "requested",
        "literal",
        (1,),
    )
    assert lit.mu_max > cond.mu_max == 0.0 and lit.summary()["reference"] == "literal"
    for mdl in (cond, lit):
        path = tmp_path / f"{mdl.reference}.npz"
        mdl.save(path)
        back = LCBModel.load(path, rng=1)
        assert back.reference == mdl.reference and [r.reference for r in back.log] == [
            r.reference for r in mdl.log
        ]
        assert back.delete(rows=[151]).reference == mdl.reference
    with pytest.raises(ValueError, match="reference must be one of"):
        LCBModel.fit(*data, **opts, reference="both")
    with pytest.raises(ValueError, match="reference must be one of"):
        DeletionRecord(0, (1,), "rollback", (0,), (), 0.0, 0.0, 0.0, 0.0, "a", reference="both")


def test_adaptive_lifecycle_rolls_back_before_budget_and_capacity_matches():
    n, k, L = 400, 4, np.log(2 * 1000)
    sigma = float(np.sqrt(L / (2 * n)))
    cap = deletion_capacity(n, k, L, sigma, 1.0, 1e-5)
    assert cap >= 2
    arms = [0] * n + [1] * 600
    rewards = [1.0] * n + [0.0] * 600
    m = LCBModel.fit(arms, rewards, method="adaptive", epsilon=1.0, delta=1e-5, sigma=sigma, tau=1e-3, rng=0)
    for j in range(cap + 1):
        rec = m.delete(rows=list(range(k * j, k * (j + 1))))
        assert rec.mu_max <= m.mu_budget and rec.delta_at_target <= 1e-5
    assert [r.method for r in m.log] == ["gaussian"] * cap + ["rollback"]
    assert m.log[-1].rolled_back == tuple(range(cap + 1)) and m.pending == ()
    assert m.mu_max == pytest.approx(np.sqrt(sum(r.mu_release**2 for r in m.log)))
    r = refit(m, arms, rewards)
    assert np.array_equal(m.statistics.counts, r.counts) and m.policy_index == r.arm
    with pytest.raises(ValueError):
        deletion_capacity(10, 11, L, sigma, 1.0, 1e-5)
    with pytest.raises(ValueError):
        deletion_capacity(10, 1, L, 0.0, 1.0, 1e-5)


def test_pending_rows_stay_out_of_statistics_and_noise_is_seeded():
    arms, rewards = [0] * 300 + [1] * 300, [1.0] * 300 + [0.0] * 300
    opts = dict(method="adaptive", epsilon=4.0, delta=1e-5, sigma=0.2)
    a = LCBModel.fit(arms, rewards, rng=5, **opts)
    b = LCBModel.fit(arms, rewards, rng=5, **opts)
    ra, rb = a.delete(rows=[0, 1]), b.delete(rows=[0, 1])
    assert ra.method == "gaussian" and a.pending == (0,) and ra == rb
    assert a.statistics.counts.tolist() == [298, 300]


def test_save_load_roundtrip_forgets_and_is_atomic(tmp_path, monkeypatch):
    users = [f"person-{i:03d}" for i in range(60)]
    rewards = np.round(REWARDS * 0.9, 6) + 0.05 + 1e-7 * np.arange(60)
    m = LCBModel.fit(ARMS, rewards, users=users, method="adaptive", epsilon=4.0, delta=1e-5, sigma=0.3, rng=1)
    path = tmp_path / "m.npz"
    m.save(path)
    assert b"person-017" in path.read_bytes()
    m.delete(user="person-017")
    m.delete(rows=[0])
    save_model(m, path)
    blob = path.read_bytes()
    assert b"person-017" not in blob and b"person-000" not in blob
    gone = [row for rec in m.log for row in rec.rows]
    assert m.pending and len(gone) == 2  # one request rolled back, one (a single row) pending
    for row in gone:  # no deleted reward in the file, pending or not
        assert np.float64(rewards[row]).tobytes() not in blob
    assert all(np.float64(rewards[row]).tobytes() in blob for row in m.row_ids)
    back = load_model(path, rng=2)
    assert back.log == tuple(r.without_rows() for r in m.log)  # row ids are not saved by default
    assert snapshot(back)[:4] == snapshot(m)[:4] and snapshot(back)[5:] == snapshot(m)[5:]
    assert back.tau == m.tau and back.labels == m.labels
    assert not back.row_ids.flags.writeable and not back.statistics.counts.flags.writeable
    st = load_statistics(path)
    assert st.counts.tolist() == m.statistics.counts.tolist() and st.tau == m.tau
    with pytest.raises(ValueError):
        back.delete(user="person-017")
    back.delete(user="person-030")  # the reloaded model continues its lifecycle
    # a crash half-way through the write leaves the previous file and no temporary file
    good = path.read_bytes()

    def half_write(fh, arrays):
        fh.write(b"PK\x03\x04 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(model_module, "_write_npz", half_write)
    with pytest.raises(OSError):
        back.save(path)
    assert path.read_bytes() == good and sorted(os.listdir(tmp_path)) == ["m.npz"]
    monkeypatch.undo()
    # a corrupted file is refused by its checksum
    raw = bytearray(good)
    raw[raw.find(np.float64(rewards[5]).tobytes())] ^= 1
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="not a readable model file"):
        load_model(bad)
    with np.load(path) as z:  # a consistent zip whose statistics were altered
        arrays = {k: z[k] for k in z.files}
    arrays["pub_counts"] = arrays["pub_counts"] + 1
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ValueError, match="checksum"):
        load_statistics(bad)
    with pytest.raises(TypeError):
        save_model("not a model", path)
    unsaveable = LCBModel.fit([(1, 2), (3, 4)], [0.0, 1.0])
    with pytest.raises(TypeError):
        unsaveable.save(tmp_path / "u.npz")


def test_from_pandas_frame():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"arm": ARMS, "reward": REWARDS, "user": USERS})
    m = LCBModel.from_frame(frame, user="user")
    assert m.labels == ("x", "y", "z") and m.statistics.counts.tolist() == [30, 18, 12]
    m.delete(user="u0")
    assert len(m) == 58


def test_fit_from_numpy_arrays_matches_list_path():
    arms = np.array([3, 1, 3, 2, 1, 3])
    rewards = np.array([1.0, 0.0, 0.5, 1.0, 1.0, 0.0])
    a, b = LCBModel.fit(arms, rewards), LCBModel.fit(arms.tolist(), rewards)
    assert a.labels == b.labels == (1, 2, 3)
    assert a.statistics.counts.tolist() == b.statistics.counts.tolist() == [2, 1, 3]
    c = LCBModel.fit(arms, rewards, labels=[3, 2, 1, 0])
    assert c.statistics.counts.tolist() == [3, 1, 2, 0]
    with pytest.raises(ValueError):
        LCBModel.fit(arms, rewards, labels=[1, 2])


@pytest.mark.parametrize(
    "arms",
    [
        np.array(list("jihgfedcba"))[np.random.default_rng(0).integers(0, 10, 500)],
        np.array(["", "a", "\x00b", "ab", "a\x00", "zz", "\u00e9", "\U0001f600x", "x\U0001f600"])[
            np.random.default_rng(1).integers(0, 9, 300)
        ],
        np.array(["b", "a", "b"], dtype="<U1"),
    ],
)
def test_short_string_labels_are_numbered_as_unique_numbers_them(arms):
    from bandit_unlearning.mab import model as mm

    labels, idx = mm._labels_and_index(arms, None)
    uniq, inverse = np.unique(arms, return_inverse=True)
    assert labels == tuple(uniq.tolist()) and np.array_equal(idx, inverse) and idx.dtype == np.int64
    assert all(type(x) is str for x in labels)


@pytest.mark.parametrize(
    "arms",
    [
        ["b", "a", "b", "c"],
        [3, 1, 2, 3],
        [True, 1, 0],
        [1.0, 1, 2],
        [np.int64(3), 3, 1],
        [(1, "a"), 3, (1, "a")],
        [np.str_("x"), "y"],
    ],
)
@pytest.mark.parametrize("given", [False, True])
def test_sequence_labels_equal_the_label_by_label_path(arms, given):
    from bandit_unlearning.mab import model as mm

    labels = None
    if given:
        labels = list(mm._labels_and_index_slow(arms, None)[0])[::-1] + ["extra"]
    fast, slow = mm._labels_and_index(arms, labels), mm._labels_and_index_slow(arms, labels)
    assert fast[0] == slow[0] and [type(x) for x in fast[0]] == [type(x) for x in slow[0]]
    assert np.array_equal(fast[1], slow[1]) and fast[1].dtype == np.int64


def test_user_ids_that_hash_like_an_int_are_refused_not_merged():
    # True and 1.0 hash like 1: a dict of the distinct ids would merge them into user 1 silently.
    for users in ([1, True], [1, 1.0], [1, np.float64(1.0)], [np.int64(1), np.bool_(True)]):
        with pytest.raises(TypeError, match="user ids must be str or int"):
            LCBModel.fit([0, 1], [0.0, 1.0], users=users)
    m = LCBModel.fit([0, 1, 1], [0.0, 1.0, 0.5], users=[1, 2, np.int64(2)])
    before = snapshot(m)
    for bad in (True, 1.0, np.float64(2.0), np.bool_(True)):
        with pytest.raises(TypeError, match="user must be a str or int id"):
            m.delete(user=bad)
        assert snapshot(m) == before
    assert m.delete(user=np.int64(2)).rows == (1, 2)
