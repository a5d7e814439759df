"""Tests of chapter B6: episode statistics, the UCB-VI planner (Algorithm 4) and the non-private
driver, regret machinery."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.experiments.rl_regret import loglog_slope, regret_curves
from bandit_unlearning.rl.envs import garnet, gridworld, riverswim
from bandit_unlearning.rl.mdp import TabularMDP, regret, value_iteration
from bandit_unlearning.rl.ucbvi import (
    Q_TIE_TOLERANCE,
    StatsLayout,
    UCBVIConfig,
    episode_statistics,
    optimistic_value_iteration,
    plan_from_statistics,
    run_ucbvi,
    statistics_sensitivity,
    ucbvi_update,
)
from bandit_unlearning.rl.users import Trajectory, rollout, rollout_batch


def loop_dense(layout, traj):
    x = np.zeros(layout.d)
    N, R, Nsas = layout.unpack(x)
    for h in range(layout.H):
        s, a, s2 = traj.states[h], traj.actions[h], traj.states[h + 1]
        N[h, s, a] += 1
        R[h, s, a] += traj.rewards[h]
        Nsas[h, s, a, s2] += 1
    return x


def loop_plan(u, cfg):
    """Paper B Algorithm 4 read literally."""
    S, A, H = cfg.S, cfg.A, cfg.H
    N, R, Nsas = cfg.layout.unpack(u)
    eps = cfg.eps_app(cfg.delta / 4)
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    pi = np.zeros((H, S), int)
    for h in reversed(range(H)):
        for s in range(S):
            for a in range(A):
                n = N[h, s, a]
                if n <= eps:
                    Q[h, s, a] = H - h
                    continue
                r, P = R[h, s, a] / n, Nsas[h, s, a] / n
                if cfg.stabilize:
                    r = min(max(r, 0.0), 1.0)
                    P = np.maximum(P, 0)
                    P = P / P.sum() if P.sum() > 0 else np.full(S, 1 / S)
                b = (H + 1) * np.sqrt(np.log(8 * S * A * H * cfg.T / cfg.delta) / (2 * (n - eps))) + (
                    eps / n
                ) * (1 + 2 * H * (np.sqrt(S) + 1))
                Q[h, s, a] = min(max(r + P @ V[h + 1] + cfg.bonus_scale * b, 0.0), H - h)
            pi[h, s] = int(np.argmax(Q[h, s] >= Q[h, s].max() - Q_TIE_TOLERANCE))
            V[h, s] = Q[h, s, pi[h, s]]
    return pi, Q, V


# ---------------------------------------------------------------------------- statistics
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_layout_round_trips(S, A, H, seed):
    rng = np.random.default_rng(seed)
    lay = StatsLayout(S, A, H)
    assert lay.d == 2 * S * A * H + S * S * A * H
    m = garnet(S, A, min(S, 2), H, rng)
    traj = rollout_batch(m, rng.integers(0, A, (H, S)), rng.integers(0, 10**6, 25), seed=seed)
    idx, val = lay.sparse(traj)
    assert idx.shape == (25, 3 * H) and val.shape == (25, 3 * H)
    assert all(np.unique(row).size == 3 * H for row in idx)  # distinct per episode
    dense = lay.densify(idx, val)
    one = [Trajectory(traj.states[i], traj.actions[i], traj.rewards[i]) for i in range(25)]
    assert np.array_equal(dense, np.array([loop_dense(lay, t) for t in one]))
    assert np.array_equal(lay.dense(traj), dense)
    assert np.array_equal(lay.pack(*lay.unpack(dense)), dense)
    assert np.array_equal(lay.accumulate(idx, val), dense.sum(0))
    assert np.all(np.linalg.norm(dense, axis=1) <= np.sqrt(3 * H) + 1e-12)
    N, R, Nsas = lay.unpack(dense.sum(0))
    assert np.array_equal(Nsas.sum(-1), N) and np.all(R <= N)
    u = rng.normal(size=(3, lay.d))
    assert np.array_equal(lay.pack(*lay.unpack(u)), u)


def test_sensitivity_and_episode_statistics():
    assert statistics_sensitivity(10) == pytest.approx(np.sqrt(30))
    assert statistics_sensitivity(10, "any") == pytest.approx(np.sqrt(60))
    with pytest.raises(ValueError):
        statistics_sensitivity(10, "other")
    with pytest.raises(ValueError):
        statistics_sensitivity(0)
    m = gridworld()
    pi = value_iteration(m).policy
    idx, val = episode_statistics(m, pi, user=4, seed=7)
    i2, v2 = StatsLayout.of(m).sparse(rollout(m, pi, 4, seed=7))
    assert np.array_equal(idx, i2) and np.array_equal(val, v2)


def test_layout_bad_input():
    lay = StatsLayout(2, 2, 3)
    for bad in [(0, 2, 3), (2, 2, 0)]:
        with pytest.raises(ValueError):
            StatsLayout(*bad)
    for bad in [(2.5, 2, 3), (True, 2, 3)]:
        with pytest.raises(TypeError):
            StatsLayout(*bad)
    with pytest.raises(ValueError, match="last dimension"):
        lay.unpack(np.zeros(lay.d + 1))
    with pytest.raises(ValueError, match="shape"):
        lay.pack(np.zeros((3, 2, 2)), np.zeros((3, 2, 2)), np.zeros((3, 2, 2, 3)))
    with pytest.raises(ValueError, match="H \\+ 1"):
        lay.sparse(Trajectory(np.zeros(3, int), np.zeros(2, int), np.zeros(2)))
    with pytest.raises(ValueError, match="lie in"):
        lay.sparse(Trajectory(np.full(4, 2), np.zeros(3, int), np.zeros(3)))
    with pytest.raises(ValueError, match="indices"):
        lay.densify(np.array([[lay.d]]), np.array([[1.0]]))
    with pytest.raises(ValueError, match="same shape"):
        lay.densify(np.array([[0, 1]]), np.array([[1.0]]))


# ---------------------------------------------------------------------------- config
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(T=0), "T"),
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(sigma=-1.0), "sigma"),
        (dict(sigma=np.nan), "sigma"),
        (dict(bonus_scale=-0.1), "bonus_scale"),
        (dict(S=0), "S"),
        (dict(H=-1), "H"),
    ],
)
def test_config_bad_input(kwargs, match):
    args = dict(S=2, A=2, H=3, T=10) | kwargs
    with pytest.raises(ValueError, match=match):
        UCBVIConfig(**args)


@pytest.mark.parametrize("kwargs, match", [(dict(T=2.0), "T"), (dict(stabilize=1), "stabilize")])
def test_config_bad_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        UCBVIConfig(**(dict(S=2, A=2, H=3, T=10) | kwargs))


def test_eps_app_and_bonus_formulas():
    S, A, H, T, delta, sigma = 5, 3, 4, 1000, 0.05, 2.0
    c = UCBVIConfig(S, A, H, T, delta=delta, sigma=sigma)
    d = S * S * A * H + 2 * S * A * H
    eps = sigma * np.log(T) * (1 + np.sqrt(2 * np.log(2 * T * d / (delta / 4))))
    assert c.eps_unexplored == pytest.approx(eps)
    n = np.array([eps + 1, 3 * eps])
    b = (H + 1) * np.sqrt(np.log(8 * S * A * H * T / delta) / (2 * (n - eps))) + eps / n * (
        1 + 2 * H * (np.sqrt(S) + 1)
    )
    np.testing.assert_allclose(c.bonus(n), b)
    c0 = UCBVIConfig(S, A, H, T, delta=delta)
    assert c0.eps_unexplored == 0.0
    np.testing.assert_allclose(
        c0.bonus([1, 4]), (H + 1) * np.sqrt(np.log(8 * S * A * H * T / delta) / (2 * np.array([1, 4])))
    )
    assert UCBVIConfig(S, A, H, 1, sigma=3.0).eps_unexplored == 0.0  # ln T = 0 at T = 1


# ---------------------------------------------------------------------------- planner
@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 5),
    st.sampled_from([0.0, 0.2, 2.0]),
    st.booleans(),
    st.sampled_from([1.0, 0.05, 0.0]),
    st.integers(0, 2**32 - 1),
)
def test_planner_matches_spec_loop(S, A, H, sigma, stabilize, scale, seed):
    rng = np.random.default_rng(seed)
    cfg = UCBVIConfig(
        S, A, H, T=int(rng.integers(2, 5000)), delta=0.1, sigma=sigma, bonus_scale=scale, stabilize=stabilize
    )
    m = garnet(S, A, min(S, 3), H, rng)
    u = cfg.layout.accumulate(
        *cfg.layout.sparse(rollout_batch(m, rng.integers(0, A, (30, H, S)), np.arange(30), seed=seed))
    )
    u = u + sigma * rng.normal(size=u.shape) * 3
    plan = plan_from_statistics(u, cfg)
    pi, Q, V = loop_plan(u, cfg)
    np.testing.assert_allclose(plan.Q, Q, atol=1e-9)
    np.testing.assert_allclose(plan.V, V, atol=1e-9)
    assert np.array_equal(plan.policy, pi) and np.array_equal(ucbvi_update(u, cfg), pi)
    caps = (H - np.arange(H))[:, None]
    assert np.all(plan.V[:H] >= 0) and np.all(plan.V[:H] <= caps)
    assert np.array_equal(plan.explored, cfg.layout.unpack(u)[0] > cfg.eps_unexplored)


def test_zero_statistics_give_maximal_values_and_action_zero():
    cfg = UCBVIConfig(4, 3, 5, T=100, sigma=1.0)
    plan = plan_from_statistics(np.zeros(cfg.layout.d), cfg)
    assert not plan.explored.any() and np.all(plan.policy == 0)
    assert np.array_equal(plan.V[:, 0], [5, 4, 3, 2, 1, 0])


def test_stabilize_is_a_no_op_on_exact_counts():
    rng = np.random.default_rng(5)
    m = gridworld()
    lay = StatsLayout.of(m)
    u = lay.accumulate(
        *lay.sparse(rollout_batch(m, rng.integers(0, 4, (500, m.H, m.S)), np.arange(500), seed=3))
    )
    for scale in (1.0, 0.05):
        a = plan_from_statistics(u, UCBVIConfig.of(m, 1000, bonus_scale=scale))
        b = plan_from_statistics(u, UCBVIConfig.of(m, 1000, bonus_scale=scale, stabilize=True))
        assert np.array_equal(a.policy, b.policy)
        np.testing.assert_allclose(a.V, b.V, atol=1e-12)


def test_planner_bad_input():
    cfg = UCBVIConfig(2, 2, 3, T=10)
    with pytest.raises(ValueError, match="shape"):
        plan_from_statistics(np.zeros(cfg.layout.d - 1), cfg)
    with pytest.raises(ValueError, match="finite"):
        plan_from_statistics(np.full(cfg.layout.d, np.nan), cfg)
    with pytest.raises(TypeError, match="UCBVIConfig"):
        plan_from_statistics(np.zeros(cfg.layout.d), {"S": 2})


def test_core_fills_preallocated_arrays():
    rng = np.random.default_rng(0)
    H, S, A = 3, 4, 2
    base = rng.random((H, S * A))
    P = rng.dirichlet(np.ones(S), size=(H, S * A))
    out = (np.empty((H, S), dtype=np.int64), np.empty((H, S * A)), np.zeros((H + 1, S)))
    res = optimistic_value_iteration(base, P, S, A, out)
    assert all(r is o for r, o in zip(res, out))
    fresh = optimistic_value_iteration(base, P, S, A)
    assert all(np.array_equal(r, f) for r, f in zip(res, fresh))


def test_core_equals_a_plain_loop_bit_for_bit():
    """The vectorised value iteration against a loop over steps, states and actions (the same
    expected next values P_h V_{h+1}, then scalar clipping and the tie rule): equal bit for bit,
    with unexplored pairs (base = inf) and near ties."""
    from bandit_unlearning.rl.ucbvi import Q_TIE_TOLERANCE

    def plain(base, P, S, A):
        H = base.shape[0]
        policy, Q, V = np.zeros((H, S), dtype=np.int64), np.zeros((H, S * A)), np.zeros((H + 1, S))
        for h in range(H - 1, -1, -1):
            expected = np.dot(P[h], V[h + 1])
            for i in range(S * A):
                Q[h, i] = max(min(float(expected[i]) + float(base[h, i]), H - h), 0.0)
            for s in range(S):
                row = [float(Q[h, s * A + a]) for a in range(A)]
                best = next(a for a in range(A) if row[a] >= max(row) - Q_TIE_TOLERANCE)
                policy[h, s], V[h, s] = best, row[best]
        return policy, Q, V

    rng = np.random.default_rng(11)
    for trial in range(300):
        H, S, A = (int(v) for v in rng.integers(1, 6, size=3))
        base = rng.normal(size=(H, S * A)) * rng.choice([1e-3, 1.0, 10.0])
        base[rng.random(base.shape) < 0.2] = np.inf
        if trial % 2:
            base = np.round(base, 1)  # exact ties
        P = rng.dirichlet(np.ones(S), size=(H, S * A))
        for got, want in zip(optimistic_value_iteration(base, P, S, A), plain(base, P, S, A)):
            assert got.tobytes() == want.tobytes()


# ---------------------------------------------------------------------------- driver
@pytest.mark.parametrize(
    "make, scale",
    [
        (lambda rng: gridworld(), 0.05),
        (lambda rng: gridworld(), 1.0),
        (lambda rng: riverswim(horizon=8), 0.05),
        (lambda rng: garnet(6, 3, 3, 5, rng, homogeneous=False), 0.2),
    ],
)
def test_driver_equals_planner_on_prefix_sums(make, scale):
    rng = np.random.default_rng(11)
    m = make(rng)
    T = 150
    run = run_ucbvi(m, T, seed=99, bonus_scale=scale)
    lay = run.config.layout
    u = np.vstack([np.zeros(lay.d), np.cumsum(lay.densify(run.indices, run.values), axis=0)])
    for t in range(T):
        assert np.array_equal(plan_from_statistics(u[t], run.config).policy, run.policies[t]), t
    # trajectories are the users' rollouts under the recorded policies
    for t in (0, 77, T - 1):
        traj = rollout(m, run.policies[t], int(run.users[t]), seed=99)
        assert np.array_equal(traj.states, run.trajectories.states[t])
        assert np.array_equal(traj.rewards, run.trajectories.rewards[t])


def test_driver_is_replayable_and_takes_users():
    m = riverswim(horizon=6)
    a = run_ucbvi(m, 200, seed=1, bonus_scale=0.1)
    b = run_ucbvi(m, 200, seed=1, bonus_scale=0.1)
    assert np.array_equal(a.policies, b.policies) and np.array_equal(a.indices, b.indices)
    users = np.arange(200)[::-1].copy()
    c = run_ucbvi(m, 200, users=users, seed=1, bonus_scale=0.1)
    assert np.array_equal(c.users, users)
    assert np.array_equal(c.trajectories.states[0], rollout(m, c.policies[0], 199, seed=1).states)
    with pytest.raises(ValueError, match="users"):
        run_ucbvi(m, 10, users=np.arange(9))
    with pytest.raises(TypeError):
        run_ucbvi("riverswim", 10)
    with pytest.raises(ValueError):
        run_ucbvi(m, 10, reward_noise="loud")


def test_optimism_with_high_confidence():
    """Fails with probability <= delta = 1e-6 for a correct implementation (Hoeffding + union)."""
    rng = np.random.default_rng(8)
    m = garnet(5, 3, 3, 4, rng)
    run = run_ucbvi(m, 1500, seed=2, delta=1e-6, record_values=True)
    assert np.all(run.optimistic_V0 >= value_iteration(m).V[0] - 1e-9)
    greedy = run_ucbvi(m, 1500, seed=2, delta=1e-6, bonus_scale=0.0, record_values=True)
    assert greedy.optimistic_V0.shape == (1500, 5)


# ---------------------------------------------------------------------------- regret machinery
def test_loglog_slope_and_regret_curves():
    ts = np.arange(1, 1001)
    assert loglog_slope(ts, 3 * ts**0.5) == pytest.approx(0.5)
    assert loglog_slope(ts, 2 * ts, start=0.5) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        loglog_slope([1, 2], [0, 0])
    m = TabularMDP(np.full((2, 2, 2), 0.5), np.array([[0.2, 0.8], [0.2, 0.8]]), [1.0, 0.0], 3)
    res = regret_curves(m, 300, seeds=[1, 2], bonus_scale=0.05, n_points=10)
    assert res["regret"].shape == (2, len(res["t"])) and np.all(np.diff(res["regret"], axis=1) >= -1e-12)
    assert len(res["slopes"]) == 2


def test_rl_speed_benchmark_writes_the_issue_keys(tmp_path):
    """Smoke test of benchmarks/rl_speed.py (tiny T; no timing is asserted)."""
    import json
    import runpy
    from pathlib import Path

    bench = runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "rl_speed.py"))
    out = tmp_path / "rl_speed.json"
    assert bench["main"](["--T", "40", "--repeats", "1", "--batch-T", "40", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    keys = {
        "stable_episodes_per_s",
        "ucbvi_episodes_per_s",
        "peak_memory_mb",
        "unlearning_cost_fraction",
        "S",
        "A",
        "H",
        "T",
        "rho",
    }
    for env, S in (("gridworld", 23), ("riverswim", 6)):
        assert keys <= set(result[env]) and result[env]["S"] == S and result[env]["T"] == 40
        assert result[env]["ucbvi_episodes_per_s"] > 0 and result[env]["stable_episodes_per_s"] > 0
        assert 0 <= result[env]["unlearning_cost_fraction"] <= 1 and result[env]["rho"] == 1.0
        assert (
            result[env]["stable_T"] == 40
            and result[env]["d"] == (2 + S) * S * result[env]["A"] * result[env]["H"]
        )
    for key, T in (("riverswim_H10", 40), ("gridworld_H10", 8)):  # the batched sweep, tiny too
        assert result["batch"][key]["T"] == T and result["batch"][key]["single_runs_equal_batch_rows"] is True


def test_near_ties_in_q_go_to_the_lowest_action():
    """Values equal up to rounding (here 1 ulp apart, either order) give the lowest action, so the
    greedy policy does not follow the last bits of the platform's arithmetic; a real gap is respected."""
    S, A, H = 1, 3, 1
    P = np.zeros((H, S * A, S))
    for q1 in (np.nextafter(0.5, 1.0), np.nextafter(0.5, 0.0)):
        base = np.array([[0.2, q1, 0.5]])
        policy, _, _ = optimistic_value_iteration(base, P, S, A)
        assert policy[0, 0] == 1  # actions 1 and 2 tie up to rounding: lowest wins
    policy, _, _ = optimistic_value_iteration(np.array([[0.2, 0.5, 0.5 + 1e-6]]), P, S, A)
    assert policy[0, 0] == 2  # a real difference decides


# ---------------------------------------------------------------------------- bonus kinds and pooling
from bandit_unlearning.rl.ucbvi import BONUS_KINDS  # noqa: E402


def literal_bonus(cfg, h, n, var=None):
    """The table of chapter B6, written out for one scalar count ``n`` at step ``h``."""
    S, A, H, T, delta = cfg.S, cfg.A, cfg.H, cfg.T, cfg.delta
    eps = cfg.eps_unexplored
    m = n - eps
    n_max = T * (H if cfg.pooled else 1)
    if cfg.bonus_kind == "paper":
        b = (H + 1) * np.sqrt(np.log(8 * S * A * H * T / delta) / (2 * m))
    elif cfg.bonus_kind == "hoeffding":
        b = (H - h) * np.sqrt(np.log(2 * S * A * H * n_max / delta) / (2 * m))
    elif cfg.bonus_kind == "bernstein":
        L = np.log(6 * S * A * H * n_max / delta)
        b = np.sqrt(L / (2 * m)) + np.sqrt(2 * L * var / m) + 3 * (H - h - 1) * L / m
    else:
        return cfg.bonus_scale * min(1 / np.sqrt(m) + (H - h) / m, H - h)
    if eps > 0:
        b += eps / n * (1 + 2 * H * (np.sqrt(S) + 1))
    return cfg.bonus_scale * b


@pytest.mark.parametrize("kind", BONUS_KINDS)
@pytest.mark.parametrize("sigma, pooled", [(0.0, False), (0.0, True), (1.5, False), (1.5, True)])
def test_step_bonus_values_at_known_counts(kind, sigma, pooled):
    cfg = UCBVIConfig(5, 3, 4, 1000, delta=0.05, sigma=sigma, bonus_scale=0.7, bonus_kind=kind, pooled=pooled)
    eps = cfg.eps_unexplored
    assert eps == (
        pytest.approx(
            UCBVIConfig(5, 3, 4, 1000, delta=0.05, sigma=sigma).eps_unexplored * (2.0 if pooled else 1.0)
        )
    )
    n = eps + np.array([0.5, 1.0, 3.0, 10.0, 250.0, 1e4])
    var = np.array([0.0, 0.3, 1.0, 2.25, 0.1, 0.7])
    for h in range(cfg.H):
        got = cfg.step_bonus(h, n, var)
        want = [literal_bonus(cfg, h, ni, vi) for ni, vi in zip(n, var)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # hand values (sigma = 0, unpooled): simplified at n = 4, h = 1 is sqrt(1/4) + 3/4; capped at H - h for n = 1
    if sigma == 0 and not pooled and kind == "simplified":
        assert cfg.step_bonus(1, [4.0, 1.0]) == pytest.approx(0.7 * np.array([1.25, 3.0]))
    if sigma == 0 and not pooled and kind == "hoeffding":
        assert cfg.step_bonus(0, [2.0])[0] == pytest.approx(
            0.7 * 4 * np.sqrt(np.log(2 * 60 * 1000 / 0.05) / 4)
        )


@pytest.mark.parametrize("kind", BONUS_KINDS)
@pytest.mark.parametrize("sigma", [0.0, 2.0])
def test_step_bonus_decreases_in_n_and_in_h(kind, sigma):
    cfg = UCBVIConfig(6, 2, 8, 5000, sigma=sigma, bonus_kind=kind)
    n = cfg.eps_unexplored + np.geomspace(0.01, 1e7, 400)
    for h in range(cfg.H):
        b = cfg.step_bonus(h, n, np.full(n.shape, 1.5))
        below_cap = (
            b[:-1] < cfg.H - h if kind == "simplified" else np.ones(len(b) - 1, bool)
        )  # simplified: capped
        assert np.all(np.diff(b) <= 0) and np.all(np.diff(b)[below_cap] < 0) and np.all(b > 0)
        assert cfg.step_bonus(h, [np.inf], [1.0])[0] == 0.0  # unexplored pairs: no bonus (n = inf)
    by_h = np.array([cfg.step_bonus(h, n, np.full(n.shape, 1.5)) for h in range(cfg.H)])
    if kind == "paper":
        assert np.all(by_h == by_h[0])  # the paper's bonus ignores h
    else:
        assert np.all(np.diff(by_h, axis=0) <= 0)  # less to gain later in the episode
    if kind == "bernstein":  # more variance, more bonus
        assert np.all(
            cfg.step_bonus(0, n, np.full(n.shape, 2.0)) > cfg.step_bonus(0, n, np.full(n.shape, 0.5))
        )


@pytest.mark.parametrize("sigma", [0.0, 0.4, 3.0])
def test_paper_kind_is_bit_identical_to_the_paper_bonus(sigma):
    S, A, H, T, delta = 7, 3, 5, 3000, 0.1
    cfg = UCBVIConfig(S, A, H, T, delta=delta, sigma=sigma, bonus_scale=0.3)
    assert cfg.bonus_kind == "paper" and not cfg.pooled and not cfg.needs_next_variance
    n = cfg.eps_unexplored + np.geomspace(1e-3, 1e6, 101)
    eps = cfg.eps_unexplored
    old = (H + 1) * np.sqrt(np.log(8 * S * A * H * T / delta) / (2 * (n - eps)))  # the formula as it was
    if eps > 0:
        old = old + eps / n * (1 + 2 * H * (np.sqrt(S) + 1))
    old = 0.3 * old
    for h in range(H):
        assert np.array_equal(cfg.step_bonus(h, n), old) and np.array_equal(
            cfg.step_bonus(h, n, n), cfg.bonus(n)
        )


def loop_plan_kinds(u, cfg):
    """The planner for any bonus kind, read literally (loops; the variance of V_{h+1} under P~ by hand)."""
    S, A, H = cfg.S, cfg.A, cfg.H
    N, R, Nsas = cfg.layout.unpack(u)
    if cfg.pooled:
        N, R, Nsas = (np.repeat(x.sum(0, keepdims=True), H, axis=0) for x in (N, R, Nsas))
    V, Q = np.zeros((H + 1, S)), np.zeros((H, S, A))
    for h in reversed(range(H)):
        for s in range(S):
            for a in range(A):
                n = N[h, s, a]
                if n <= cfg.eps_unexplored:
                    Q[h, s, a] = H - h
                    continue
                P = Nsas[h, s, a] / n
                mean = sum(P[j] * V[h + 1, j] for j in range(S))
                var = min(
                    max(
                        sum(P[j] * (V[h + 1, j] - mean) ** 2 for j in range(S))
                        if cfg.sigma == 0
                        else sum(P[j] * V[h + 1, j] ** 2 for j in range(S)) - mean**2,
                        0.0,
                    ),
                    (H - h - 1) ** 2 / 4,
                )
                q = R[h, s, a] / n + mean + literal_bonus(cfg, h, n, var)
                Q[h, s, a] = min(max(q, 0.0), H - h)
            V[h, s] = Q[h, s].max()
    return Q, V


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(1, 5),
    st.sampled_from(BONUS_KINDS),
    st.booleans(),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([1.0, 0.05]),
    st.integers(0, 2**32 - 1),
)
def test_planner_matches_loop_for_every_kind(S, A, H, kind, pooled, sigma, scale, seed):
    rng = np.random.default_rng(seed)
    cfg = UCBVIConfig(
        S, A, H, T=int(rng.integers(2, 5000)), sigma=sigma, bonus_scale=scale, bonus_kind=kind, pooled=pooled
    )
    m = garnet(S, A, min(S, 3), H, rng)
    u = cfg.layout.accumulate(
        *cfg.layout.sparse(rollout_batch(m, rng.integers(0, A, (60, H, S)), np.arange(60), seed=seed))
    )
    u = u + sigma * rng.normal(size=u.shape)
    plan = plan_from_statistics(u, cfg)
    Q, V = loop_plan_kinds(u, cfg)
    np.testing.assert_allclose(plan.Q, Q, atol=1e-9)
    np.testing.assert_allclose(plan.V[:H], V[:H], atol=1e-9)


@pytest.mark.parametrize("kind", ["paper", "simplified"])
def test_pooled_statistics_equal_summing_the_per_step_statistics(kind):
    """Pooling = planning per step from the sums over h: the same plan as the per-step planner fed the
    summed statistics at every step (exact counts, kinds whose constants do not depend on pooling)."""
    rng = np.random.default_rng(7)
    mdp = gridworld(horizon=6)
    pooled = UCBVIConfig.of(mdp, 500, bonus_kind=kind, pooled=True, bonus_scale=0.1)
    per_step = UCBVIConfig.of(mdp, 500, bonus_kind=kind, bonus_scale=0.1)
    lay = pooled.layout
    u = lay.accumulate(
        *lay.sparse(rollout_batch(mdp, rng.integers(0, 4, (200, 6, mdp.S)), np.arange(200), seed=3))
    )
    N, R, Nsas = lay.unpack(u)
    summed = lay.pack(*(np.repeat(x.sum(0, keepdims=True), mdp.H, axis=0) for x in (N, R, Nsas)))
    a, b = plan_from_statistics(u, pooled), plan_from_statistics(summed, per_step)
    assert (
        np.array_equal(a.policy, b.policy)
        and np.array_equal(a.Q, b.Q)
        and np.array_equal(a.explored, b.explored)
    )
    assert not np.array_equal(a.policy, plan_from_statistics(u, per_step).policy)  # pooling changes the plan


@pytest.mark.parametrize("kind", BONUS_KINDS)
@pytest.mark.parametrize("pooled", [False, True])
def test_driver_equals_planner_for_every_kind(kind, pooled):
    mdp = riverswim(horizon=8)
    run = run_ucbvi(mdp, 150, seed=11, bonus_kind=kind, pooled=pooled, bonus_scale=0.05)
    assert run.config.bonus_kind == kind and run.config.pooled == pooled
    lay = run.config.layout
    u = np.vstack([np.zeros(lay.d), np.cumsum(lay.densify(run.indices, run.values), axis=0)])
    assert all(
        np.array_equal(plan_from_statistics(u[t], run.config).policy, run.policies[t]) for t in range(150)
    )
    assert np.any(run.policies[1:] != run.policies[:-1])  # the comparison sees moving policies


def test_hoeffding_kind_stays_optimistic():
    """Optimism of the tight Hoeffding bonus (the guarantee it carries), at delta = 1e-6: a correct
    bonus fails with probability below 1e-6."""
    for mdp in (riverswim(horizon=10), gridworld(horizon=6)):
        v_star = value_iteration(mdp).V[0]
        for pooled in (False, True):
            run = run_ucbvi(
                mdp, 1500, seed=5, delta=1e-6, bonus_kind="hoeffding", pooled=pooled, record_values=True
            )
            assert (run.optimistic_V0 - v_star).min() >= -1e-9


def test_practical_bonus_learns_where_the_paper_bonus_does_not():
    mdp = gridworld()
    v_star = float(value_iteration(mdp).V[0] @ mdp.initial)
    paper = regret(mdp, run_ucbvi(mdp, 1000, seed=2).policies).sum()
    practical = regret(mdp, run_ucbvi(mdp, 1000, seed=2, bonus_kind="simplified", pooled=True).policies).sum()
    assert paper == pytest.approx(1000 * v_star) and practical < 0.5 * paper


@pytest.mark.parametrize("kind", ["paper", "hoeffding", "simplified", "bernstein"])
def test_a_plan_with_nothing_explored_equals_the_value_iteration_bit_for_bit(kind):
    """The planner skips the value iteration when no pair is explored (every Q is capped at H - h): its
    plan must be the numbers the value iteration computes from the same statistics; with one explored
    pair the planner must run the value iteration again (and the capped plan would be wrong there)."""
    from bandit_unlearning.rl.ucbvi import _estimates, _value_iteration

    def full(u, cfg):
        n3 = cfg.layout.n_triples
        N, R, Nsas = u[:n3].reshape(4, 15), u[n3 : 2 * n3].reshape(4, 15), u[2 * n3 :].reshape(4, 15, 5)
        base, P, explored, n = _estimates(N, R, Nsas, cfg, np.arange(4)[:, None])
        bonus = (cfg, n) if cfg.needs_next_variance else None
        return _value_iteration(base, P, 5, 3, bonus=bonus) + (explored,)

    rng = np.random.default_rng(11)
    cfg = UCBVIConfig(5, 3, 4, T=200, sigma=2.0, bonus_kind=kind, bonus_scale=0.0)
    u = rng.normal(0.0, 3.0, cfg.layout.d)  # noisy, signed, far below eps
    for explored_pairs in (0, 1):
        if explored_pairs:
            u[0] = cfg.eps_unexplored + 1.0  # (h, s, a) = (0, 0, 0) explored, mean reward 0.2
            u[cfg.layout.n_triples] = 0.2 * u[0]
        policy, Q, V, explored = full(u, cfg)
        plan = plan_from_statistics(u, cfg)
        assert explored.sum() == explored_pairs and plan.explored.sum() == explored_pairs
        assert plan.policy.dtype == policy.dtype and plan.policy.tobytes() == policy.tobytes()
        assert (
            plan.Q.shape == (4, 5, 3) and plan.Q.tobytes() == Q.tobytes() and plan.V.tobytes() == V.tobytes()
        )
    assert plan.Q[0, 0, 0] < 4.0  # explored: not the cap H - h of the shortcut


def test_statistics_check_refuses_every_non_finite_entry():
    cfg = UCBVIConfig(2, 2, 3, T=10)
    big = np.full(cfg.layout.d, 1e300)  # finite, however large
    assert plan_from_statistics(big, cfg).policy.shape == (3, 2)
    for bad in (np.inf, -np.inf, np.nan):
        u = np.zeros(cfg.layout.d)
        u[-1] = bad
        with pytest.raises(ValueError, match="finite"):
            plan_from_statistics(u, cfg)
