"""Learning at practical sizes: this project's UCB-VI against rlberry's ``UCBVIAgent`` on the same MDP.

Both learners play the same MDP -- this project's 5x5 gridworld (S = 23, A = 4, H = 10), exported to
rlberry's ``FiniteMDP`` (same kernel, same mean rewards, same initial distribution; rewards are the
means on both sides: ``reward_noise="none"`` here, rlberry's ``FiniteMDP`` pays ``R[s, a]``) -- for
the same number of episodes ``--T``, over ``--seeds`` seeds.  For each learner the JSON records
episodes per second (training only) and the cumulative *exact* expected regret
``sum_t V*_0 - V^{pi_t}_0`` of the policies it played (policy evaluation on our MDP; rlberry's
policy of episode t is the argmax of its ``Q`` before the episode, the action its ``_run_episode``
takes).  Rows, compared like with like:

* rlberry default (statistics pooled over the steps) against ``run_ucbvi(..., pooled=True)``;
* rlberry ``stage_dependent=True`` against ``run_ucbvi(..., pooled=False)`` (the default);
* every ``bonus_kind`` of ``UCBVIConfig`` (``paper``, ``hoeffding``, ``bernstein``, ``simplified``)
  both ways, and the TV-stable learner (``stable_ucbvi``, rho = 1) with the paper's bonus and with
  the best practical bonus found.

The target: our best practical bonus reaches regret <= rlberry's default on the same MDP, at >= 50x
its speed (``ratios`` in the JSON, pooled against pooled, per-step against stage-dependent).

Second part (``reach``): the TV-stable learner with the best practical bonus at rho in ``--rhos``:
the first episode ``t`` at which the mean exact regret of the last ``--window`` episodes is
``<= 0.1 V*``, and the seconds of training up to it (measured wall time of the whole run times
``t / T``); ``None`` if not reached within ``--reach-T`` episodes.

rlberry is optional (the ``bench`` extra of pyproject.toml): rlberry 0.7.3 requires
``gymnasium < 0.30`` while this project pins gymnasium 1.4, so it goes into its own environment:
``python -m venv /tmp/bench && /tmp/bench/bin/pip install -e '.[bench]' && /tmp/bench/bin/python
benchmarks/learning_vs_rlberry.py``.  Without rlberry the script says so and exits (no rlberry rows;
``--without-rlberry`` runs the rest).  Not run in CI.

Usage: ``python benchmarks/learning_vs_rlberry.py [--out results/learning_vs_rlberry.json] [--T 2000]
[--seeds 3] [--rhos 1,10,100] [--reach-T 100:20000,10:50000,1:200000] [--window 100] [--without-rlberry]``;
``--speed-only KIND [--repeats 5]``: only the speeds, rlberry and ``run_ucbvi`` alternated in one
process (same machine load for both; the ratio per repeat and its median).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import train  # noqa: E402
from bandit_unlearning.rl.envs import gridworld  # noqa: E402
from bandit_unlearning.rl.mdp import regret, value_iteration  # noqa: E402
from bandit_unlearning.rl.stable import population_users, run_regret, stable_ucbvi  # noqa: E402
from bandit_unlearning.rl.ucbvi import BONUS_KINDS, run_ucbvi  # noqa: E402

NOISE = "none"  # rlberry's FiniteMDP pays the mean reward: the same observations on both sides


def load_rlberry():
    """``(UCBVIAgent, FiniteMDP, version)`` or None when rlberry is not installed."""
    try:
        import rlberry
        from rlberry.envs.finite_mdp import FiniteMDP
        from rlberry_scool.agents.ucbvi import UCBVIAgent
    except ImportError:
        return None
    return UCBVIAgent, FiniteMDP, getattr(rlberry, "__version__", "?")


def to_rlberry(mdp, FiniteMDP):
    """Our stationary ``TabularMDP`` as rlberry's ``FiniteMDP`` (rows renormalised to rlberry's 1e-15 check)."""
    if not (mdp.homogeneous_transitions and mdp.homogeneous_rewards):
        raise ValueError("rlberry's FiniteMDP is stationary: export a homogeneous MDP")
    P = np.array(mdp.transitions[0], dtype=float)
    P /= P.sum(axis=-1, keepdims=True)
    return FiniteMDP(np.array(mdp.rewards[0], dtype=float), P, np.array(mdp.initial, dtype=float))


def run_rlberry(UCBVIAgent, env, mdp, T: int, seed: int, stage_dependent: bool):
    """Policies ``[T, H, S]`` played by rlberry's agent and the training seconds."""
    agent = UCBVIAgent(env, horizon=mdp.H, stage_dependent=stage_dependent, seeder=seed)
    agent._writer = None  # writer off (its per-episode logging is not the algorithm)
    policies = np.empty((T, mdp.H, mdp.S), dtype=np.int8)
    start = time.perf_counter()
    for t in range(T):
        policies[t] = agent.Q.argmax(axis=-1)  # the actions _run_episode takes (ties: lowest index)
        agent._run_episode()
    return policies, time.perf_counter() - start


def summarise(name: str, regrets, seconds, T: int, **extra) -> dict:
    regrets, seconds = np.asarray(regrets, float), np.asarray(seconds, float)
    return {
        "learner": name,
        "regret_mean": float(regrets.mean()),
        "regret_per_seed": regrets.round(3).tolist(),
        "episodes_per_s": float(T / seconds.mean()),
        "seconds_per_seed": seconds.round(4).tolist(),
        **extra,
    }


def ours(mdp, T: int, seeds, kind: str, pooled: bool) -> dict:
    regrets, seconds = [], []
    for seed in seeds:
        start = time.perf_counter()
        run = run_ucbvi(mdp, T, seed=seed, bonus_kind=kind, pooled=pooled, reward_noise=NOISE)
        seconds.append(time.perf_counter() - start)
        regrets.append(regret(mdp, run.policies).sum())
    return summarise(
        f"run_ucbvi bonus_kind={kind} pooled={pooled}", regrets, seconds, T, bonus_kind=kind, pooled=pooled
    )


def stable(mdp, T: int, seeds, rho: float, kind: str, pooled: bool) -> dict:
    regrets, seconds = [], []
    for seed in seeds:
        learner = stable_ucbvi(mdp, T, rho, bonus_kind=kind, pooled=pooled, reward_noise=NOISE)
        users = population_users(mdp, T, seed=seed)
        start = time.perf_counter()
        run = train(learner, users, np.random.default_rng(seed))
        seconds.append(time.perf_counter() - start)
        regrets.append(run_regret(run).sum())
    return summarise(
        f"stable_ucbvi rho={rho:g} bonus_kind={kind} pooled={pooled}",
        regrets,
        seconds,
        T,
        bonus_kind=kind,
        pooled=pooled,
        rho=rho,
    )


def reach(
    mdp, T: int, rho: float, kind: str, pooled: bool, window: int, v_star: float, seed: int = 0
) -> dict:
    """First episode where the mean regret of the last ``window`` episodes is <= 0.1 V*."""
    learner = stable_ucbvi(mdp, T, rho, bonus_kind=kind, pooled=pooled, reward_noise=NOISE)
    start = time.perf_counter()
    run = train(learner, population_users(mdp, T, seed=seed), np.random.default_rng(seed))
    seconds = time.perf_counter() - start
    per_episode = run_regret(run)
    moving = np.convolve(per_episode, np.ones(window) / window, mode="valid")
    hit = np.flatnonzero(moving <= 0.1 * v_star)
    t = int(hit[0] + window) if hit.size else None
    return {
        "rho": rho,
        "bonus_kind": kind,
        "pooled": pooled,
        "T": T,
        "sigma": learner.sigma,
        "eps_unexplored": learner.update.config.eps_unexplored,
        "episodes_to_0.1_Vstar": t,
        "seconds_to_0.1_Vstar": None if t is None else seconds * t / T,
        "seconds_total": seconds,
        "episodes_per_s": T / seconds,
        "regret_total": float(per_episode.sum()),
        "mean_regret_last_window": float(per_episode[-window:].mean()),
    }


def interleaved_speed(mdp, rl, T: int, repeats: int, kind: str) -> dict:
    """Episodes/s of rlberry and of ``run_ucbvi`` (``kind``), alternated ``repeats`` times in one process so
    that both see the same machine load; like with like (pooled / per step).  The ratio per repeat
    and its median."""
    UCBVIAgent, FiniteMDP, _ = rl
    out = {}
    for pooled in (True, False):
        ratios, ours_rates, their_rates = [], [], []
        for r in range(repeats):
            _, sec = run_rlberry(
                UCBVIAgent, to_rlberry(mdp, FiniteMDP), mdp, T, r, stage_dependent=not pooled
            )
            start = time.perf_counter()
            run_ucbvi(mdp, T, seed=r, bonus_kind=kind, pooled=pooled, reward_noise=NOISE)
            mine = time.perf_counter() - start
            their_rates.append(T / sec)
            ours_rates.append(T / mine)
            ratios.append(sec / mine)
        out["pooled" if pooled else "per_step"] = {
            "bonus_kind": kind,
            "T": T,
            "rlberry_episodes_per_s": their_rates,
            "ours_episodes_per_s": ours_rates,
            "speed_ratio_per_repeat": ratios,
            "speed_ratio_median": float(np.median(ratios)),
        }
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "learning_vs_rlberry.json"))
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rhos", default="1,10,100")
    ap.add_argument(
        "--reach-T",
        default="100:20000,10:50000,1:200000",
        help="episodes per rho for the reach runs, rho:T pairs",
    )
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--without-rlberry", action="store_true")
    ap.add_argument(
        "--speed-only",
        default=None,
        metavar="KIND",
        help="only the interleaved speed comparison for bonus_kind KIND (JSON: --out)",
    )
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    rl = load_rlberry()
    if rl is None and not args.without_rlberry:
        print(
            "rlberry is not installed (optional `bench` extra, in its own environment: see this script's "
            "docstring); skipping.  --without-rlberry runs this project's rows alone."
        )
        return {}
    mdp = gridworld()
    v_star = float(value_iteration(mdp).V[0] @ mdp.initial)
    if args.speed_only is not None:
        if rl is None:
            raise SystemExit("--speed-only needs rlberry")
        run_ucbvi(mdp, 100, seed=0)  # warm-up
        result = {
            "mdp": mdp.name,
            "speed": interleaved_speed(mdp, rl, args.T, args.repeats, args.speed_only),
            "machine": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "platform": platform.platform(),
            },
        }
        print(json.dumps(result["speed"], indent=1))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
        return result
    seeds = list(range(args.seeds))
    rows, ratios, reaches, best = [], {}, [], None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(final: bool = False):
        """Write what is measured so far (a long run leaves usable JSON at every phase)."""
        result = {
            "mdp": mdp.name,
            "S": mdp.S,
            "A": mdp.A,
            "H": mdp.H,
            "T": args.T,
            "seeds": seeds,
            "V_star": v_star,
            "reward_noise": NOISE,
            "rows": rows,
            "ratios": ratios,
            "complete": final,
            "best_practical": best and {"bonus_kind": best["bonus_kind"], "pooled": best["pooled"]},
            "reach": reaches,
            "window": args.window,
            "machine": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "platform": platform.platform(),
            },
        }
        out.write_text(json.dumps(result, indent=1))
        return result

    if rl is not None:
        UCBVIAgent, FiniteMDP, version = rl
        for sd in (False, True):
            regrets, seconds = [], []
            for seed in seeds:
                policies, sec = run_rlberry(UCBVIAgent, to_rlberry(mdp, FiniteMDP), mdp, args.T, seed, sd)
                regrets.append(regret(mdp, policies).sum())
                seconds.append(sec)
            rows.append(
                summarise(
                    f"rlberry UCBVIAgent stage_dependent={sd}",
                    regrets,
                    seconds,
                    args.T,
                    pooled=not sd,
                    rlberry_version=version,
                )
            )
            print(
                rows[-1]["learner"],
                round(rows[-1]["regret_mean"], 1),
                round(rows[-1]["episodes_per_s"]),
                flush=True,
            )
            save()
    run_ucbvi(mdp, 100, seed=0)  # warm-up
    for pooled in (True, False):
        for kind in BONUS_KINDS:
            rows.append(ours(mdp, args.T, seeds, kind, pooled))
            print(
                rows[-1]["learner"],
                round(rows[-1]["regret_mean"], 1),
                round(rows[-1]["episodes_per_s"]),
                flush=True,
            )
    practical = [r for r in rows if r.get("bonus_kind") not in (None, "paper")]
    best = min(practical, key=lambda r: r["regret_mean"])
    for kind, pooled in (("paper", False), (best["bonus_kind"], best["pooled"])):
        rows.append(stable(mdp, args.T, seeds, 1.0, kind, pooled))
        print(
            rows[-1]["learner"],
            round(rows[-1]["regret_mean"], 1),
            round(rows[-1]["episodes_per_s"]),
            flush=True,
        )
        save()

    ratios = {}
    if rl is not None:
        for pooled in (True, False):
            ref = next(r for r in rows if r["learner"].startswith("rlberry") and r["pooled"] == pooled)
            mine = min((r for r in practical if r["pooled"] == pooled), key=lambda r: r["regret_mean"])
            ratios["pooled" if pooled else "per_step"] = {
                "rlberry": ref["learner"],
                "ours": mine["learner"],
                "regret_ours_over_rlberry": mine["regret_mean"] / ref["regret_mean"],
                "speed_ours_over_rlberry": mine["episodes_per_s"] / ref["episodes_per_s"],
                "target_met": bool(
                    mine["regret_mean"] <= ref["regret_mean"]
                    and mine["episodes_per_s"] >= 50 * ref["episodes_per_s"]
                ),
            }
        print(json.dumps(ratios, indent=1))
    save()

    reach_T = dict((float(k), int(v)) for k, v in (p.split(":") for p in args.reach_T.split(",")))
    for rho in sorted((float(r) for r in args.rhos.split(",")), reverse=True):  # the quick ones first
        reaches.append(
            reach(mdp, reach_T.get(rho, 20000), rho, best["bonus_kind"], best["pooled"], args.window, v_star)
        )
        print(
            {
                k: reaches[-1][k]
                for k in (
                    "rho",
                    "T",
                    "eps_unexplored",
                    "episodes_to_0.1_Vstar",
                    "seconds_to_0.1_Vstar",
                    "episodes_per_s",
                )
            },
            flush=True,
        )
        save()
    print(f"wrote {out}")
    return save(final=True)


if __name__ == "__main__":
    main()
