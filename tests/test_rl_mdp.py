"""Tests of chapter B5: tabular MDPs, exact planning/evaluation, environments, replayable users,
Gymnasium interoperability."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bandit_unlearning.testing.montecarlo import hoeffding_margin
from bandit_unlearning.rl.envs import garnet, gridworld, gridworld_cells, independent_bandits, riverswim
from bandit_unlearning.rl.mdp import (
    TabularMDP,
    check_policy,
    evaluate_policy,
    optimal_value,
    policy_values,
    regret,
    value_iteration,
)
from bandit_unlearning.rl.users import (
    max_users,
    rollout,
    rollout_batch,
    splitmix64,
    user_uniforms,
)


# ---------------------------------------------------------------------------- oracles
def loop_value_iteration(P, r, H):
    S, A = P.shape[1], P.shape[2]
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    for h in reversed(range(H)):
        for s in range(S):
            for a in range(A):
                Q[h, s, a] = r[h, s, a] + sum(P[h, s, a, t] * V[h + 1, t] for t in range(S))
            V[h, s] = max(Q[h, s])
    return Q, V


def loop_evaluate(P, r, H, pi):
    S = P.shape[1]
    V = np.zeros((H + 1, S))
    for h in reversed(range(H)):
        for s in range(S):
            a = pi[h, s]
            V[h, s] = r[h, s, a] + sum(P[h, s, a, t] * V[h + 1, t] for t in range(S))
    return V


def random_mdp(S, A, H, rng, homogeneous=False, sparsity=0.3):
    lead = () if homogeneous else (H,)
    P = rng.dirichlet(np.full(S, sparsity), size=lead + (S, A))
    P = np.where(P < 1e-3, 0.0, P)
    P /= P.sum(-1, keepdims=True)
    return TabularMDP(P, rng.random(lead + (S, A)), rng.dirichlet(np.ones(S)), H)


mdp_params = st.tuples(
    st.integers(1, 5), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans()
)


# ---------------------------------------------------------------------------- planning
@settings(max_examples=60, deadline=None)
@given(mdp_params)
def test_value_iteration_matches_loop_oracle(params):
    S, A, H, seed, homogeneous = params
    rng = np.random.default_rng(seed)
    m = random_mdp(S, A, H, rng, homogeneous)
    plan = value_iteration(m)
    Q, V = loop_value_iteration(np.asarray(m.transitions), np.asarray(m.rewards), H)
    np.testing.assert_allclose(plan.Q, Q, atol=1e-12)
    np.testing.assert_allclose(plan.V, V, atol=1e-12)
    assert plan.policy.shape == (H, S)
    # greedy with ties to the lowest action
    assert np.array_equal(plan.policy, np.argmax(plan.Q, axis=2))
    assert np.allclose(np.take_along_axis(plan.Q, plan.policy[..., None], 2)[..., 0], plan.V[:H])


@settings(max_examples=60, deadline=None)
@given(mdp_params)
def test_policy_evaluation_matches_loop_oracle(params):
    S, A, H, seed, homogeneous = params
    rng = np.random.default_rng(seed)
    m = random_mdp(S, A, H, rng, homogeneous)
    pis = rng.integers(0, A, size=(7, H, S))
    pis[3] = pis[1]  # repeated policies are deduplicated
    vals = policy_values(m, pis, chunk=2)
    for pi, v in zip(pis, vals):
        V = loop_evaluate(np.asarray(m.transitions), np.asarray(m.rewards), H, pi)
        np.testing.assert_allclose(evaluate_policy(m, pi).V, V, atol=1e-12)
        assert v == pytest.approx(m.initial @ V[0], abs=1e-12)
    reg = regret(m, pis)
    assert np.all(reg >= -1e-12)
    assert regret(m, value_iteration(m).policy[None]) == pytest.approx([0.0], abs=1e-12)


def test_policy_values_empty_batch_and_large_batch():
    rng = np.random.default_rng(1)
    m = random_mdp(4, 3, 5, rng)
    assert policy_values(m, np.zeros((0, 5, 4), dtype=int)).shape == (0,)
    pis = rng.integers(0, 3, size=(5000, 5, 4))
    vals = policy_values(m, pis, chunk=777)
    idx = rng.choice(5000, 20, replace=False)
    np.testing.assert_allclose(
        vals[idx], [m.initial @ evaluate_policy(m, pis[i]).V[0] for i in idx], atol=1e-12
    )


def test_homogeneous_input_is_a_broadcast_view():
    rng = np.random.default_rng(2)
    m = random_mdp(5, 2, 50, rng, homogeneous=True)
    assert m.homogeneous_transitions and m.homogeneous_rewards
    assert m.transitions.shape == (50, 5, 2, 5) and m.transitions.strides[0] == 0
    full = TabularMDP(np.array(m.transitions), np.array(m.rewards), m.initial, 50)
    np.testing.assert_allclose(value_iteration(full).V, value_iteration(m).V, atol=1e-12)


def test_arrays_are_read_only_and_copied():
    P = np.full((2, 2, 2), 0.5)
    r = np.zeros((2, 2))
    m = TabularMDP(P, r, [1.0, 0.0], 3)
    P[0, 0, 0] = 7.0  # the caller's array is not aliased
    assert m.transitions[0, 0, 0, 0] == 0.5
    for arr in (m.transitions, m.rewards, m.initial):
        with pytest.raises(ValueError):
            arr[...] = 0


# ---------------------------------------------------------------------------- bad input
GOOD = dict(transitions=np.full((2, 2, 2), 0.5), rewards=np.zeros((2, 2)), initial=[1.0, 0.0], horizon=3)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(transitions=np.full((2, 2, 2), 0.4)), "sum to 1"),
        (dict(transitions=np.array([[[1.5, -0.5]] * 2] * 2)), "non-negative"),
        (dict(transitions=np.full((2, 2, 2), np.nan)), "finite"),
        (dict(transitions=np.full((2, 2), 0.5)), "shape"),
        (dict(transitions=np.full((2, 2, 3), 1 / 3)), "shape"),
        (dict(transitions=np.full((4, 2, 2, 2), 0.5)), "horizon"),
        (dict(rewards=np.full((2, 2), 1.5)), r"\[0, 1\]"),
        (dict(rewards=np.full((2, 2), -0.1)), r"\[0, 1\]"),
        (dict(rewards=np.full((2, 2), np.inf)), r"\[0, 1\]"),
        (dict(rewards=np.zeros((2, 3))), "rewards must have shape"),
        (dict(initial=[0.5, 0.4]), "initial"),
        (dict(initial=[1.0, 0.0, 0.0]), "initial"),
        (dict(horizon=0), "H"),
        (dict(horizon=-2), "H"),
    ],
)
def test_invalid_mdps_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        TabularMDP(**(GOOD | bad))


@pytest.mark.parametrize("bad", [dict(horizon=2.5), dict(horizon=True)])
def test_a_horizon_of_the_wrong_type_is_a_type_error(bad):
    with pytest.raises(TypeError, match="H"):
        TabularMDP(**(GOOD | bad))


@pytest.mark.parametrize(
    "policy, match",
    [
        (np.zeros((2, 2), dtype=int), "shape"),
        (np.zeros((3, 3), dtype=int), "shape"),
        (np.zeros((3,), dtype=int), "shape"),
        (np.full((3, 2), 2), "actions"),
        (np.full((3, 2), -1), "actions"),
        (np.full((3, 2), 0.5), "integer"),
    ],
)
def test_bad_policies_are_refused(policy, match):
    m = TabularMDP(**GOOD)
    for f in (evaluate_policy, lambda m, p: rollout(m, p, user=0)):
        with pytest.raises(ValueError, match=match):
            f(m, policy)
    with pytest.raises(ValueError):
        policy_values(m, policy)  # not a batch
    assert check_policy(m, np.zeros((3, 2))).dtype == np.int64  # integer-valued floats are fine


# ---------------------------------------------------------------------------- environments
def test_riverswim_structure():
    m = riverswim(horizon=20)
    assert (m.S, m.A, m.H) == (6, 2, 20)
    assert m.transitions[0, 2, 1, 3] == 0.35 and m.transitions[0, 2, 1, 1] == 0.05
    assert m.rewards[0, 0, 0] == 0.005 and m.rewards[0, 5, 1] == 1.0
    assert np.all(value_iteration(m).policy[0] == 1)  # swim right at the start
    with pytest.raises(ValueError):
        riverswim(n_states=1)


def test_gridworld_structure():
    m = gridworld(horizon=10, slip=0.1)
    assert (m.S, m.A) == (23, 4) and len(gridworld_cells()) == 23
    goal = gridworld_cells().index((4, 4))
    assert np.all(m.transitions[0, goal, :, goal] == 1) and np.all(m.rewards[0, goal] == 1)
    # without slip the optimal return is exactly 2 (8 moves, then 2 steps at the goal)
    assert optimal_value(gridworld(horizon=10, slip=0.0)) == pytest.approx(2.0)
    for bad in (
        dict(slip=1.5),
        dict(
            layout=("S.", "#"),
        ),
        dict(layout=("S..", ".x.", "..G")),
        dict(layout=("...",)),
    ):
        with pytest.raises(ValueError):
            gridworld(**bad)


def test_garnet_branching_and_independent_bandits():
    rng = np.random.default_rng(3)
    m = garnet(12, 3, 4, horizon=5, rng=rng, homogeneous=False)
    assert np.all((np.asarray(m.transitions) > 0).sum(-1) <= 4)
    n, A, H, gap = 5, 4, 7, 0.2
    best = rng.integers(0, A, n)
    hard = independent_bandits(n, A, H, gap, best_actions=best)
    assert hard.S == 3 * n
    assert optimal_value(hard) == pytest.approx((H - 1) * (0.5 + gap))
    assert np.array_equal(value_iteration(hard).policy[0, :n], best)
    pi = value_iteration(hard).policy.copy()
    pi[0, :n] = (best + 1) % A  # every bandit wrong
    assert regret(hard, pi[None])[0] == pytest.approx((H - 1) * gap)
    for bad in (dict(gap=0.7), dict(horizon=1), dict(best_actions=[A] * n)):
        with pytest.raises(ValueError):
            independent_bandits(**(dict(n_bandits=n, n_actions=A, horizon=H, gap=gap) | bad))
    with pytest.raises(ValueError):
        garnet(5, 2, 6, horizon=3, rng=rng)


# ---------------------------------------------------------------------------- users
def test_splitmix64_reference_values():
    ref = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
    assert [int(z) for z in splitmix64(0, np.arange(4))] == ref


@settings(max_examples=25, deadline=None)
@given(mdp_params, st.integers(0, 2**64 - 1), st.sampled_from(["bernoulli", "none"]))
def test_scalar_and_batch_rollouts_agree_and_replay(params, seed, noise):
    S, A, H, s0, homogeneous = params
    rng = np.random.default_rng(s0)
    m = random_mdp(S, A, H, rng, homogeneous)
    pis = rng.integers(0, A, size=(40, H, S))
    users = rng.integers(0, 10**9, size=40)
    batch = rollout_batch(m, pis, users, seed=seed, reward_noise=noise)
    for k in range(0, 40, 7):
        one = rollout(m, pis[k], int(users[k]), seed=seed, reward_noise=noise)
        assert np.array_equal(one.states, batch.states[k])
        assert np.array_equal(one.actions, batch.actions[k])
        assert np.array_equal(one.rewards, batch.rewards[k])
        # replay: same user, a policy that only differs off the path -> same trajectory
        other = (pis[k] + 1) % A
        other[np.arange(H), one.states[:-1]] = pis[k][np.arange(H), one.states[:-1]]
        again = rollout(m, other, int(users[k]), seed=seed, reward_noise=noise)
        assert np.array_equal(again.states, one.states) and np.array_equal(again.rewards, one.rewards)
        # trajectories only move along positive-probability transitions
        assert m.initial[one.states[0]] > 0
        assert all(m.transitions[h, one.states[h], one.actions[h], one.states[h + 1]] > 0 for h in range(H))


def test_rollout_matches_exact_values():
    """Monte Carlo check, sized: 4 two-sided comparisons at total failure probability 1e-6."""
    rng = np.random.default_rng(4)
    mdps = [gridworld(), riverswim(horizon=15), garnet(8, 3, 3, 6, rng), random_mdp(4, 3, 5, rng)]
    R = 100_000
    for m in mdps:
        pi = np.where(
            rng.random((m.H, m.S)) < 0.3, rng.integers(0, m.A, (m.H, m.S)), value_iteration(m).policy
        )
        exact = m.initial @ evaluate_policy(m, pi).V[0]
        mc = rollout_batch(m, pi, np.arange(R), seed=12345).total_reward.mean()
        assert abs(mc - exact) <= hoeffding_margin(R, m.H, 1e-6 / 8)


def test_user_uniforms_are_uniform_and_distinct_cells_differ():
    m = gridworld()
    u = user_uniforms(m, np.arange(50_000), 0, 3, 5, 1, seed=9)
    assert np.all((u >= 0) & (u < 1))
    assert abs(u.mean() - 0.5) < hoeffding_margin(50_000, 1.0, 1e-7)
    a = user_uniforms(
        m, 3, np.arange(3)[:, None, None], 0, np.arange(m.S)[None, :, None], np.arange(4), seed=9
    )
    assert np.unique(a).size == a.size


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(user=-1), "user keys"),
        (dict(seed=-3), "seed"),
        (dict(seed=2**64), "seed"),
        (dict(reward_noise="gaussian"), "reward_noise"),
    ],
)
def test_bad_rollout_arguments(kwargs, match):
    m = gridworld()
    args = dict(user=0, seed=0, reward_noise="bernoulli") | kwargs
    with pytest.raises(ValueError, match=match):
        rollout(m, value_iteration(m).policy, **args)
    with pytest.raises(ValueError, match="user keys"):
        rollout(m, value_iteration(m).policy, user=max_users(m))
    with pytest.raises(TypeError, match="integer keys"):
        rollout(m, value_iteration(m).policy, user=1.5)


def test_bad_batch_arguments():
    m = gridworld()
    pi = value_iteration(m).policy
    with pytest.raises(ValueError, match="policies for"):
        rollout_batch(m, np.stack([pi, pi]), np.arange(3))
    with pytest.raises(ValueError, match="1-D"):
        rollout_batch(m, pi, np.zeros((2, 2), dtype=int))


# ---------------------------------------------------------------------------- gymnasium
@pytest.fixture
def gymnasium():
    """CI installs the [gym] extra; skipping without it is only a fallback for minimal installs."""
    return pytest.importorskip("gymnasium")


def test_from_gymnasium_toy_text(gymnasium):
    from bandit_unlearning.rl.gym import from_gymnasium

    lake = from_gymnasium(gymnasium.make("FrozenLake-v1"), horizon=30)
    assert (lake.mdp.S, lake.mdp.A, lake.terminal_state) == (17, 4, 16)
    assert (lake.reward_low, lake.reward_high) == (0.0, 1.0)
    cliff = from_gymnasium(gymnasium.make("CliffWalking-v1"), horizon=20)
    assert cliff.raw_value(optimal_value(cliff.mdp)) == pytest.approx(-13.0)
    taxi = from_gymnasium(gymnasium.make("Taxi-v4"), horizon=30)
    assert (taxi.mdp.S, taxi.mdp.A) == (501, 6) and taxi.mdp.homogeneous_transitions
    assert np.all((taxi.mdp.rewards >= 0) & (taxi.mdp.rewards <= 1))
    assert cliff.raw_regret(0.07) == pytest.approx(7.0)  # a mapped regret in raw units
    assert np.allclose(cliff.raw_regret([0.0, 0.01]), [0.0, 1.0])
    assert {"FrozenLake-v1", "CliffWalking-v1", "Taxi-v4"} <= set(gymnasium.envs.registry)


def test_from_gymnasium_refuses_unknown_spaces_and_tables(gymnasium):
    from bandit_unlearning.rl.gym import from_gymnasium

    with pytest.raises(TypeError, match="observation_space must be gymnasium.spaces.Discrete"):
        from_gymnasium(gymnasium.make("CartPole-v1"), horizon=5)

    class NoTable(gymnasium.Env):
        observation_space = gymnasium.spaces.Discrete(3)
        action_space = gymnasium.spaces.Discrete(2)

    with pytest.raises(TypeError, match="transition table"):
        from_gymnasium(NoTable(), horizon=5)

    class BoxActions(NoTable):
        action_space = gymnasium.spaces.Box(0, 1, (2,))

    with pytest.raises(TypeError, match="action_space must be gymnasium.spaces.Discrete"):
        from_gymnasium(BoxActions(), horizon=5)

    class Shifted(NoTable):
        observation_space = gymnasium.spaces.Discrete(3, start=1)

    with pytest.raises(TypeError, match="start at 0"):
        from_gymnasium(Shifted(), horizon=5)


def test_to_gymnasium_wrapper(gymnasium):
    from gymnasium.utils.env_checker import check_env

    from bandit_unlearning.rl.gym import to_gymnasium

    m = gridworld()
    env = to_gymnasium(m, seed=5)
    check_env(env, skip_render_check=True)
    pi = value_iteration(m).policy
    for user in (0, 1, 99):
        s, info = env.reset(options={"user": user})
        states, rewards = [s], []
        for h in range(m.H):
            s, r, term, trunc, info = env.step(int(pi[h, s]))
            states.append(s)
            rewards.append(r)
            assert info["h"] == h + 1 and not term and trunc == (h == m.H - 1)
        traj = rollout(m, pi, user, seed=5)
        assert states == traj.states.tolist() and rewards == traj.rewards.tolist()
    with pytest.raises(RuntimeError):
        env.step(0)  # the episode is over
    env.reset(seed=3)
    with pytest.raises(ValueError, match="action"):
        env.step(7)
    with pytest.raises(TypeError):
        to_gymnasium("not an mdp")
