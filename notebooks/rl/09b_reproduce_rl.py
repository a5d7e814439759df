# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.experiments.rl_paper
# ---

# %% [markdown]
# # Chapter B9b — Reproducing Part B's RL figures: `reproduce_rl`
#
# *Paper B, Sections 4–5 at scale: the experiments of chapters B7 (regret of TV-stable UCB-VI), B8
# (deletion cost) and [B9a](09a_lower_bound.ipynb) (the lower-bound illustration) run at a chosen
# scale for the command line.  Exports `bandit_unlearning.experiments.rl_paper`.*
#
# The chapters run their experiments at notebook sizes.  This chapter packages the three of them as
# `reproduce_rl`, the entry point of `python -m bandit_unlearning reproduce rl`: the protocol, the
# units of work and their pool (section 2), the three figures (section 3), the entry point (section 4)
# and a run on a tiny protocol that checks what it writes (section 5).

# %%
import math
import tempfile
from pathlib import Path

# %% [markdown]
# ## 1. What `reproduce_rl` writes
#
# The notebooks of chapters B7–B9a run at reduced sizes.  `reproduce_rl(out, scale, seed, workers)`
# runs the same three experiments at a chosen scale and writes, into `out`:
# - `rl_regret.{json,png,pdf}` — exact expected regret curves of TV-stable UCB-VI over $T$ for several
#   $\rho$ and the non-private reference, on RiverSwim and the 5x5 gridworld, with the paper's bonus and
#   the labelled variant bonus $\times 0.05$; and $R(T)$ against $1/\rho$ (chapter B7);
# - `rl_unlearning_cost.{json,png,pdf}` — episodes recomputed per deletion divided by $T$ over $\rho$ and $T$,
#   measured and exact, and the retraining probability (chapter B8);
# - `rl_lower_bound.{json,png,pdf}` — regret on the hard instance against $1/\rho$ with the shape
#   $H\sqrt{SAT} + SAH/\rho$, and the first-correct episode (chapter B9a).
#
# It returns `{"experiment": "rl", "protocol": ..., "panels": [...]}`, each panel
# `{"id", "vary", "x", "methods": {name: [...]}, "stderr": {name: [...]}}` (the layout of the
# command-line interface, which registers it as `python -m bandit_unlearning reproduce rl`).  Scale
# `"quick"` takes well under a minute; `"paper"` a minute or two on two cores (`workers=2`: units of
# work go to a process pool via `bandit_unlearning.experiments.runner.run_tasks`; the results do not
# depend on the number of workers — every run has its own seed).  The regret and lower-bound runs of
# one environment advance together in batches (`run_batch` of chapter B13: every run bit for bit the
# single-run learner on the memory-light tree of chapter B10); each deletion-cost measurement is
# `unlearning_cost` of chapter B13 (bit for bit `rl_unlearning_cost` of chapter B8, without re-running
# the episodes a rejected coupling would re-run).  `tree_factory` picks the tree of the cost runs
# (default `LightTree`; `BinaryTree`, the dense reference, gives the same numbers).  By default, off a terminal,
# each finished unit of work prints one line to stderr (`progress=False`, as below: nothing).  `PROTOCOLS`
# lists the sizes; a `protocol`
# argument overrides them (used below and by the tests with a tiny protocol).
#
# **Captions of the three figures** (each figure also says them in its title and one shared legend;
# `summary.md` of the command line adds units and protocol).  All regrets are exact expected
# regrets (policy evaluation, not samples), UCB-VI's confidence level is $\delta$ = `DELTA` $= 0.1$
# everywhere, and error bars or bands are $\pm 1$ standard error over independent runs (own users and
# own tree noise) — absent when a protocol has one run per point, as `"quick"` does.
# - `rl_regret` — one row per environment.  *Left* (log–log): $R(t)$ over the episodes; colour is
#   $\rho$ (black: $\rho = \infty$, non-private UCB-VI), solid is Algorithm 4's bonus (Theorem 4.1),
#   dashed the bonus $\times 0.05$; the grey dotted line $\propto\sqrt t$ has slope 1/2 (slope 1 is
#   linear regret, i.e. still in the burn-in); a box names the curves that coincide.  *Right* (log $x$,
#   **linear** $y$): $R(T)$ at the last episode against $1/\rho$, points coloured by $\rho$ as on the
#   left, and non-private UCB-VI as a black horizontal line in the line style of its bonus.  *Why the
#   scaled bonus:* at full size $b(n) \ge 1$ for about $(H+1)^2\ln(8SAHT/\delta)/2$ visits of each
#   triple, so every $\bar Q$ sits at its cap, all actions tie and the learner repeats action 0 — a
#   burn-in far longer than these $T$ (chapter B6b); $\times 0.05$ is the same algorithm with the same
#   stability, leaving the burn-in within the run, but without Theorem 4.1's guarantee.
# - `rl_unlearning_cost` — RiverSwim, Algorithm 4's bonus, colour is $T$.  *Left:* the fraction of
#   the $T$ steps one deletion recomputes (1 = retraining from scratch); *right:* the probability that
#   a deletion recomputes anything.  Points: measured, mean $\pm$ standard error over all requests
#   (they share few runs, so the bars understate the run-to-run spread; a bar reaching 0 stops at the
#   bottom of the log axis); hollow diamonds: exact for the deleted episodes' own statistics shifts
#   $\lVert x_t\rVert \le B$; solid lines: exact if every deleted episode had the worst-case shift
#   $B = \sqrt{3H}$ (uniform position); dotted: the paper's estimate $\rho\sqrt{\ln T}$ (left) and
#   Theorem 3.3's bound $\rho\sqrt{2\log_2 T}$ (right), capped at 1.
# - `rl_lower_bound` — the hard instance of chapter B9a, section 4, at the protocol's $T$ (its title gives $S$, $A$,
#   $H$, $T$, the gap and the runs per point); colour is the bonus ($\times 1$: Algorithm 4's).
#   *Left* (log–log): $R(T)$ against $1/\rho$; black lines: non-private UCB-VI (dotted: bonus
#   $\times 1$, dash-dot: the scaled bonus); dashed, in each bonus's colour: the lower bound's shape
#   $c\,(H\sqrt{SAT} + SAH/\rho)$ with the unknown constant $c$ chosen so that it passes through the
#   point at the largest finite $\rho$ — it compares shapes, not levels; grey: $T(H-1)\Delta$, the
#   regret of always playing the wrong first action.  *Right:* the first-correct episode (first
#   episode whose policy plays the best first action at every initial state; grey: $T + 1$, never
#   within $T$), the burn-in $\propto 1/\rho$ made visible.  An illustration, not a test of the theorem.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
"""Paper B's RL figures at a chosen scale, for the command line (chapters B7-B9).

``reproduce_rl(out, scale, seed, workers)`` writes ``rl_regret``, ``rl_unlearning_cost`` and
``rl_lower_bound`` (``.json``, ``.png``, ``.pdf``) into ``out`` and returns
``{"experiment": "rl", "protocol": ..., "panels": [{"id", "vary", "x", "methods", "stderr"}, ...]}``.
Sizes are in ``PROTOCOLS`` (``"quick"``: under a minute; ``"paper"``: a minute or two on two cores).
Every run has its own seed derived from ``seed``, so results do not depend on ``workers``; regret and
lower-bound runs advance in batches (``run_batch``, chapter B13), deletion costs are measured by
``unlearning_cost`` (chapter B13); both equal the single-run experiments bit for bit.
"""

import copy
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from bandit_unlearning.checks import check_bool, check_callable, check_instance
from bandit_unlearning.exact.light_tree import LightTree
from bandit_unlearning.checks import check_int
from bandit_unlearning.experiments.rl_batch import stable_regret_curves, unlearning_cost
from bandit_unlearning.experiments.rl_lower_bound import first_correct_episode, lower_bound_shape, summarize_by_rho
from bandit_unlearning.experiments.rl_stable import summarize_curves
from bandit_unlearning.experiments.runner import run_tasks
from bandit_unlearning.experiments.unlearning_cost import expected_cost_uniform, retrain_probability_uniform
from bandit_unlearning.privacy.coupling import tv_gaussians
from bandit_unlearning.rl.envs import gridworld, independent_bandits, riverswim
from bandit_unlearning.rl.stable import stable_sigma
from bandit_unlearning.rl.ucbvi import StatsLayout, statistics_sensitivity

INF = math.inf
PROTOCOLS = {
    "quick": {
        "regret": {"environments": [{"name": "riverswim", "H": 10, "T": 2000}, {"name": "gridworld", "H": 10, "T": 128}],
                   "rhos": [INF, 100.0, 10.0, 1.0], "bonus_scales": [1.0, 0.05], "populations": 1, "n_points": 25},
        "cost": {"environment": {"name": "riverswim", "H": 10}, "Ts": [64, 256], "rhos": [0.1, 0.3, 1.0],
                 "n_runs": 2, "requests_per_run": 10},
        "lower_bound": {"n_bandits": 2, "n_actions": 2, "H": 2, "gap": 0.25, "T": 1000,
                        "rhos": [INF, 100.0, 10.0, 1.0, 0.3], "bonus_scales": [1.0, 0.2], "populations": 1},
    },
    "paper": {
        "regret": {"environments": [{"name": "riverswim", "H": 10, "T": 30_000}, {"name": "gridworld", "H": 10, "T": 2048}],
                   "rhos": [INF, 1000.0, 100.0, 10.0, 1.0], "bonus_scales": [1.0, 0.05], "populations": 3, "n_points": 40},
        "cost": {"environment": {"name": "riverswim", "H": 10}, "Ts": [256, 1024, 4096], "rhos": [0.03, 0.1, 0.3, 1.0],
                 "n_runs": 4, "requests_per_run": 50},
        "lower_bound": {"n_bandits": 2, "n_actions": 2, "H": 2, "gap": 0.25, "T": 20_000,
                        "rhos": [INF, 300.0, 100.0, 30.0, 10.0, 3.0, 1.0, 0.3, 0.1], "bonus_scales": [1.0, 0.2],
                        "populations": 3},
    },
}
ENVIRONMENTS = {"riverswim": riverswim, "gridworld": gridworld}


def _env(spec: dict):
    if spec.get("name") not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {spec.get('name')!r}; choose from {sorted(ENVIRONMENTS)}")
    return ENVIRONMENTS[spec["name"]](horizon=check_int(spec["H"], "H", 1))


def _jsonable(x):
    """Plain JSON values: numpy scalars and arrays to Python, infinity to the string "inf"."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return "inf" if math.isinf(x) else float(x)
    return x


def _rho_name(rho: float) -> str:
    return "rho=inf" if rho == INF else f"rho={rho:g}"


def _lower_bound_mdp(p: dict):
    best = [check_int(p["n_actions"], "n_actions", 1) - 1] * check_int(p["n_bandits"], "n_bandits", 1)
    return independent_bandits(p["n_bandits"], p["n_actions"], p["H"], p["gap"], best_actions=best), best


# %% [markdown]
# ## 2. Units of work
#
# Each task names an experiment and the runs it batches; `_tasks` lists them
# for a protocol and a seed, every run with its own seed, so results do not depend on `workers`.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def _task(task: dict):
    """One independent unit of work (top level, picklable for process pools): a batch of regret or
    lower-bound runs (``run_batch``: each run equals its single run), or one cost measurement
    (``unlearning_cost``: equal to ``rl_unlearning_cost`` without re-running episodes).
    Prints one line to stderr when done if ``task["report"]``."""
    start = time.perf_counter()
    if task["kind"] == "regret":
        runs = task["runs"]
        result = stable_regret_curves(_env(task["environment"]), task["T"], [r["rho"] for r in runs],
                                      [r["population"] for r in runs], [r["noise_seed"] for r in runs],
                                      [r["bonus_scale"] for r in runs], n_points=task["n_points"])
        what = f"regret on {task['environment']['name']} (T = {task['T']}, {len(runs)} runs{task.get('batch', '')})"
    elif task["kind"] == "cost":
        mdp = _env(task["environment"])
        rng = np.random.default_rng(task["noise_seed"])
        result = unlearning_cost(mdp, task["T"], task["rho"], task["n_runs"], task["requests_per_run"], rng,
                                 seed=task["population"], tree_factory=task["tree_factory"])
        what = f"unlearning cost (T = {task['T']}, rho = {task['rho']:g})"
    elif task["kind"] == "lower_bound":
        p, runs = task["protocol"], task["runs"]
        mdp, best = _lower_bound_mdp(p)
        curves = stable_regret_curves(mdp, p["T"], [r["rho"] for r in runs], [r["population"] for r in runs],
                                      [r["noise_seed"] for r in runs], [r["bonus_scale"] for r in runs], n_points=2,
                                      keep_policies=True)
        result = [{"rho": c["rho"], "seed": c["seed"], "final": c["final"],
                   "first_correct": first_correct_episode(c["policies"], best), "S": mdp.S, "A": mdp.A, "H": mdp.H,
                   "T": p["T"], "gap": p["gap"], "bonus_scale": c["bonus_scale"]} for c in curves]
        what = f"lower bound (T = {p['T']}, {len(runs)} runs{task.get('batch', '')})"
    else:
        raise ValueError(f"unknown task kind {task['kind']!r}")
    if task.get("report"):
        print(f"reproduce rl: {what} done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return result


def _batches(runs: list, n: int) -> list:
    """``runs`` cut into ``n`` consecutive batches of nearly equal size (fewer if there are fewer runs)."""
    n = max(1, min(n, len(runs)))
    bounds = [round(i * len(runs) / n) for i in range(n + 1)]
    return [runs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _tasks(protocol: dict, seed: int, tree_factory, workers: int = 1) -> tuple:
    """``(runs, tasks)``: every run of the protocol (its kind, parameters and own noise seed, numbered
    as one run per unit, so seeds do not depend on ``workers``), and the units of work (regret and
    lower-bound runs in ``workers`` batches, a task per cost measurement), longest first (``_step_work``)."""
    master = np.random.default_rng(seed)
    n_pop = max(protocol["regret"]["populations"], protocol["lower_bound"]["populations"], 1)
    populations = [int(p) for p in master.integers(2**63, size=n_pop)]
    runs = []
    reg = protocol["regret"]
    for env in reg["environments"]:
        for scale in reg["bonus_scales"]:
            for rho in reg["rhos"]:
                for pop in populations[: reg["populations"]]:
                    runs.append({"kind": "regret", "environment": env, "T": env["T"], "rho": rho, "bonus_scale": scale,
                                 "population": pop, "n_points": reg["n_points"]})
    cost = protocol["cost"]
    for T in cost["Ts"]:
        for rho in cost["rhos"]:
            runs.append({"kind": "cost", "environment": cost["environment"], "T": T, "rho": rho,
                         "n_runs": cost["n_runs"], "requests_per_run": cost["requests_per_run"], "population": populations[0]})
    lb = protocol["lower_bound"]
    for scale in lb["bonus_scales"]:
        for rho in lb["rhos"]:
            for pop in populations[: lb["populations"]]:
                runs.append({"kind": "lower_bound", "protocol": lb, "rho": rho, "bonus_scale": scale, "population": pop})
    for i, run in enumerate(runs):            # every run its own noise seed, independent of the worker count
        run["noise_seed"] = int(np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(1, np.uint64)[0])
        run["tree_factory"], run["index"] = tree_factory, i
    tasks = []
    for env in reg["environments"]:
        mine = [r for r in runs if r["kind"] == "regret" and r["environment"] is env]
        bs = _batches(mine, workers)
        tasks += [{"kind": "regret", "environment": env, "T": env["T"], "n_points": reg["n_points"], "runs": b,
                   "size": env["T"] * len(b) * _step_work(_env(env)),
                   "batch": f", batch {j + 1} of {len(bs)}" if len(bs) > 1 else ""} for j, b in enumerate(bs)]
    lower = [r for r in runs if r["kind"] == "lower_bound"]
    bs = _batches(lower, workers)                 # batches named, so that their progress lines differ
    tasks += [{"kind": "lower_bound", "protocol": lb, "runs": b, "size": lb["T"] * len(b) * _step_work(_lower_bound_mdp(lb)[0]),
               "batch": f", batch {j + 1} of {len(bs)}" if len(bs) > 1 else ""} for j, b in enumerate(bs)]
    tasks += [dict(r, size=r["T"] * r["n_runs"] * 4 * _step_work(_env(cost["environment"])))   # a single run's
              for r in runs if r["kind"] == "cost"]                           # step, and its share of the deletions
    return runs, sorted(tasks, key=lambda task: -task["size"])                  # the longest units first


# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def _step_work(mdp) -> int:
    """The rough work of one run's step in a batch (an estimate, for the order of the units only): a
    part per stage of the planner and the rollout, and a part per statistic (estimates, tree noise)."""
    return 300 * mdp.H + StatsLayout(mdp.S, mdp.A, mdp.H).d


# %% [markdown]
# ## 3. The figures
#
# Each figure names its fixed settings in the title and explains every method in one shared
# legend; first the helpers they share, then the regret figure (chapter B7's experiment).

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
DELTA = 0.1      # UCB-VI's confidence level in every run here (the default of stable_regret_curves and stable_ucbvi)
_WHY_SCALED = ("bonus x {s}: Algorithm 4's confidence bonus b(n) (Theorem 4.1) multiplied by {s}.  At full size b(n) >= 1 "
               "for about (H+1)^2 ln(8SAHT/delta)/2 visits of each triple (h, s, a),\nso every Q-value stays at its "
               "cap, all actions tie and the learner repeats action 0: a linear burn-in far longer than these T "
               "(chapter B6).\nThe scaled bonus lets the learner leave it within the run (same algorithm, same "
               "stability; no regret guarantee)")


def _save(fig, stem: Path):
    if fig.get_layout_engine() is None:       # the figures below lay themselves out (constrained layout)
        fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(stem.with_suffix(f".{ext}"), dpi=150)
    plt.close(fig)


def _bonus_name(scale: float) -> str:
    return "bonus x 1 (Algorithm 4's, as in Theorem 4.1)" if scale == 1.0 else f"bonus x {scale:g} (scaled down)"


def _runs_text(n: int, what: str = "point") -> str:
    """What the error bars of a figure with ``n`` independent runs per ``what`` are."""
    if n == 1:
        return f"one run per {what}, so no error bars (the run-to-run spread is not shown)"
    return (f"{n} independent runs per {what} (own users and own tree noise); error bars and bands: "
            f"+-1 standard error over the runs")


def _rho_colors(rhos) -> dict:
    """One colour per rho, the same in every panel of a figure: black for rho = inf (non-private)."""
    finite = sorted((r for r in rhos if r != INF), reverse=True)
    return {INF: "k", **{float(r): f"C{i % 10}" for i, r in enumerate(finite)}}


def _rho_text(rho: float) -> str:
    return r"$\rho = \infty$: non-private UCB-VI" if rho == INF else rf"$\rho$ = {rho:g}"


def _coinciding_text(summary: dict, keys: list) -> str:
    """Which curves of one panel coincide (final values within 0.1 %), in words; '' if none."""
    groups = []
    for k in keys:
        for g in groups:
            if np.allclose(summary[k]["mean"], summary[g[0]]["mean"], rtol=1e-3, atol=0):
                g.append(k)
                break
        else:
            groups.append([k])
    groups = [g for g in groups if len(g) > 1]
    if not groups:
        return ""
    if len(groups) == 1 and len(groups[0]) == len(keys):
        return f"all {len(keys)} curves coincide\n(within 0.1 %): every learner is\nstill in its linear burn-in"
    lines = []
    for g in groups:
        by_scale = {}
        for k in g:
            by_scale.setdefault(k[3], []).append("inf" if k[2] == INF else f"{k[2]:g}")
        lines.append(" = ".join(f"rho = {', '.join(v)} (bonus x {s:g})" for s, v in by_scale.items()))
    return "curves that coincide (within 0.1 %):\n" + "\n".join(lines)

# %% [markdown]
# The regret figure: per environment, the cumulative regret of TV-stable UCB-VI over the episodes
# at every $\rho$ and bonus scale (log axes, a $\sqrt{t}$ guide), and the regret at the last
# episode against $1/\rho$.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def _regret_part(protocol: dict, curves: list, out: Path, scale: str = "", seed: int = 0) -> list:
    reg = protocol["regret"]
    envs = [e["name"] for e in reg["environments"]]
    panels = []
    colors = _rho_colors(reg["rhos"])
    styles = {s: ("-" if s == 1.0 else "--", "o" if s == 1.0 else "s") for s in reg["bonus_scales"]}
    fig, axes = plt.subplots(len(envs), 2, figsize=(13, 3.9 * len(envs) + 2.6), squeeze=False, layout="constrained")
    for row, env in enumerate(reg["environments"]):
        mine = [c for c in curves if c["env_name"] == env["name"]]
        summary = summarize_curves(mine)
        for scale_ in reg["bonus_scales"]:
            keys = [k for k in summary if k[3] == scale_]
            t = summary[keys[0]]["t"]
            panels.append({"id": f"regret_{env['name']}_bonus{scale_:g}", "vary": "episodes t", "x": t,
                           "methods": {_rho_name(k[2]): summary[k]["mean"] for k in keys},
                           "stderr": {_rho_name(k[2]): summary[k]["stderr"] for k in keys},
                           "slopes": {_rho_name(k[2]): (summary[k]["slope"] if math.isfinite(summary[k]["slope"])
                                                        else None) for k in keys}})   # nan: too few positive points
        ax = axes[row, 0]
        for key in sorted(summary, key=lambda k: (k[3] != 1.0, -k[2])):
            s, color = summary[key], colors[key[2]]
            ax.plot(s["t"], s["mean"], styles[key[3]][0], color=color, lw=1.4)
            if reg["populations"] > 1:
                ax.fill_between(s["t"], np.asarray(s["mean"]) - s["stderr"], np.asarray(s["mean"]) + s["stderr"],
                                color=color, alpha=0.15, lw=0)
        t = np.asarray(next(iter(summary.values()))["t"], dtype=float)
        ax.plot(t, np.sqrt(t), ":", color="0.55", lw=1.2)
        note = _coinciding_text(summary, sorted(summary, key=lambda k: (k[3] != 1.0, -k[2])))
        if note:
            ax.text(0.98, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.7"})
        ax.set(xscale="log", yscale="log", xlabel="episode t (log axis)",
               ylabel="cumulative expected regret R(t) (log axis)",
               title=f"{mine[0]['mdp']} (H = {env['H']}, T = {env['T']}): regret over the episodes")
        xs = [0.0 if rho == INF else 1 / rho for rho in reg["rhos"]]
        methods, errors = {}, {}
        for i, scale_ in enumerate(reg["bonus_scales"]):
            finals = [summary[(mine[0]["mdp"], env["T"], float(rho), float(scale_))] for rho in reg["rhos"]]
            methods[f"bonus x {scale_:g}"] = [s["mean"][-1] for s in finals]
            errors[f"bonus x {scale_:g}"] = [s["stderr"][-1] for s in finals]
            ls, marker = styles[scale_]
            finite = [(x, m, e, rho) for x, m, e, rho in zip(xs, methods[f"bonus x {scale_:g}"],
                                                             errors[f"bonus x {scale_:g}"], reg["rhos"]) if x > 0]
            axes[row, 1].errorbar([f[0] for f in finite], [f[1] for f in finite],
                                  yerr=[f[2] for f in finite] if reg["populations"] > 1 else None,
                                  ls=ls, color="0.45", lw=1.2, capsize=3, zorder=2)
            axes[row, 1].scatter([f[0] for f in finite], [f[1] for f in finite], marker=marker, s=42, zorder=3,
                                 c=[colors[float(f[3])] for f in finite], edgecolors="k", linewidths=0.5)
            if 0.0 in xs:
                axes[row, 1].axhline(methods[f"bonus x {scale_:g}"][xs.index(0.0)], color="k", ls=ls, lw=1.1)
        axes[row, 1].set(xscale="log", xlabel=r"$1/\rho$ (log axis; smaller $\rho$ = more stable, to the right)",
                         ylabel=f"R(T) at T = {env['T']} (linear axis)",
                         title=f"{mine[0]['mdp']}: regret at the last episode against 1/rho\n"
                               r"(black horizontal lines: non-private UCB-VI, $\rho = \infty$, same line style)")
        panels.append({"id": f"regret_vs_rho_{env['name']}", "vary": "1/rho (0 = non-private)", "x": xs,
                       "methods": methods, "stderr": errors})
    handles = [Line2D([], [], color=colors[float(r)], lw=2.5, label=_rho_text(r))
               for r in sorted(reg["rhos"], key=lambda r: (r != INF, -r))]
    handles += [Line2D([], [], color="0.45", ls=styles[s][0], marker=styles[s][1], label=_bonus_name(s))
                for s in reg["bonus_scales"]]
    handles.append(Line2D([], [], color="0.55", ls=":", lw=1.2, label=r"$\propto\sqrt{t}$ (slope 1/2; slope 1 = linear regret)"))
    if reg["populations"] > 1:
        handles.append(Patch(color="0.5", alpha=0.3, label="+-1 standard error over runs"))
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=8.5)
    scaled = [s for s in reg["bonus_scales"] if s != 1.0]
    title = ("Paper B: exact expected regret of TV-stable UCB-VI (Algorithm 4; tree noise of Theorem 4.1 for rho-TV-"
             f"stability; confidence delta = {DELTA:g}); colour = rho, line style = bonus\n"
             f"{scale + ' scale, ' if scale else ''}seed {seed}: {_runs_text(reg['populations'], 'curve')}.  "
             "Left: log-log axes; right: log x, linear y")
    if scaled:
        title += "\n" + _WHY_SCALED.format(s=", ".join(f"{s:g}" for s in scaled))
    fig.suptitle(title, fontsize=9)
    _save(fig, out / "rl_regret")
    return panels


# %% [markdown]
# The deletion-cost figure (chapter B8's experiment, measured by chapter B13's `unlearning_cost`) and
# the lower-bound figure (chapter B9a's experiment).

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def _cost_part(protocol: dict, measured: dict, out: Path, scale: str = "", seed: int = 0) -> list:
    cost = protocol["cost"]
    H = cost["environment"]["H"]
    B = statistics_sensitivity(H)
    methods, errors, retrain, retrain_err = {}, {}, {}, {}
    for T in cost["Ts"]:
        ms = [measured[rho, T] for rho in cost["rhos"]]
        methods[f"T={T} measured"] = [m["cost"].mean() for m in ms]
        errors[f"T={T} measured"] = [m["cost"].std(ddof=1) / np.sqrt(m["cost"].size) if m["cost"].size > 1 else 0.0 for m in ms]
        methods[f"T={T} exact (own shifts)"] = [m["expected_cost"].mean() for m in ms]
        methods[f"T={T} exact (shift B)"] = [expected_cost_uniform(T, tv_gaussians([0.0], [B], stable_sigma(rho, H, T)))
                                              for rho in cost["rhos"]]
        methods[f"T={T} rho sqrt(ln T)"] = [min(1.0, rho * math.sqrt(math.log(T))) for rho in cost["rhos"]]
        retrain[f"T={T} measured"] = [m["retrained"].mean() for m in ms]
        retrain_err[f"T={T} measured"] = [m["retrained"].std(ddof=1) / np.sqrt(m["retrained"].size)
                                          if m["retrained"].size > 1 else 0.0 for m in ms]
        retrain[f"T={T} exact (own shifts)"] = [m["retrain_probability"].mean() for m in ms]
        retrain[f"T={T} rho sqrt(2 log2 T)"] = [min(1.0, rho * math.sqrt(2 * math.log2(T))) for rho in cost["rhos"]]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 6.4), layout="constrained")
    rho_grid = np.logspace(math.log10(min(cost["rhos"])) - 0.3, math.log10(max(cost["rhos"])) + 0.3, 30)
    n_requests = cost["n_runs"] * cost["requests_per_run"]
    for ax, (vals, errs, worst, estimate) in (
            (ax0, (methods, errors, expected_cost_uniform, lambda rho, T: rho * math.sqrt(math.log(T)))),
            (ax1, (retrain, retrain_err, retrain_probability_uniform,
                   lambda rho, T: rho * math.sqrt(2 * math.log2(T))))):
        shown, bars = [], []
        for i, T in enumerate(cost["Ts"]):
            color = f"C{i}"
            line = [worst(T, tv_gaussians([0.0], [B], stable_sigma(rho, H, T))) for rho in rho_grid]
            ax.plot(rho_grid, line, "-", color=color, lw=1.5)
            ax.plot(rho_grid, [min(1.0, estimate(rho, T)) for rho in rho_grid], ":", color=color, lw=1.3)
            own = vals[f"T={T} exact (own shifts)"]
            ax.plot(cost["rhos"], own, "D", ms=7, mfc="none", mec=color, mew=1.3)
            shown += [v for v in line + own if v > 0]
            means, ses = np.asarray(vals[f"T={T} measured"]), np.asarray(errs[f"T={T} measured"])
            shown += [v for v in means if v > 0]
            bars.append((means, ses, color))
        floor = min(shown) / 3
        for means, ses, color in bars:
            low = np.minimum(ses, np.maximum(means - floor, 0))           # log axis: a bar reaching 0 stops at the floor
            ax.errorbar(cost["rhos"], np.maximum(means, floor), yerr=[low, ses], fmt="o", color=color, ms=5, capsize=3)
        ax.set(xscale="log", yscale="log", ylim=(floor, 1.6), xlabel=r"$\rho$ (TV-stability; log axis)")
        ax.axhline(1.0, color="0.6", lw=0.8)
    ax0.set(ylabel="fraction of the T steps recomputed by one deletion\n(1 = retraining from scratch; log axis)",
            title="Cost of one deletion, relative to retraining")
    ax1.set(ylabel="probability that one deletion recomputes any step\n(a rejection in the coupling; log axis)",
            title="Probability that a deletion retrains (from its rejected node on)")
    handles = [Line2D([], [], color=f"C{i}", lw=3, label=f"T = {T} episodes") for i, T in enumerate(cost["Ts"])]
    handles += [Line2D([], [], color="0.3", marker="o", ls="none",
                       label=f"measured: mean +- 1 s.e. over {n_requests} deletion requests"),
                Line2D([], [], color="0.3", marker="D", mfc="none", ls="none",
                       label="exact for the deleted episodes' own shifts ||x_t|| <= B (same requests)"),
                Line2D([], [], color="0.3", ls="-",
                       label=f"exact if every deleted episode had the worst-case shift B = sqrt(3H) = {B:.2f}"),
                Line2D([], [], color="0.3", ls=":",
                       label=r"left: the paper's estimate $\rho\sqrt{\ln T}$; right: Theorem 3.3's bound "
                             r"$\rho\sqrt{2\log_2 T}$ (both capped at 1)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8.5)
    fig.suptitle(f"Paper B: cost of exactly unlearning one episode (Algorithm 3) from TV-stable UCB-VI (Algorithm 4, "
                 f"bonus x 1, delta = {DELTA:g}) on RiverSwim (H = {H})\n"
                 f"{scale + ' scale, ' if scale else ''}seed {seed}: {cost['n_runs']} training runs per "
                 f"(rho, T), {cost['requests_per_run']} deletions per run at uniformly random positions, each on the "
                 f"original run; error bars: +-1 standard error over the {n_requests} requests\n(they share "
                 f"{cost['n_runs']} runs, so the bars understate the run-to-run spread; a bar reaching 0 stops at "
                 "the bottom of the log axis)", fontsize=9)
    _save(fig, out / "rl_unlearning_cost")
    return [{"id": "unlearning_cost", "vary": "rho", "x": cost["rhos"], "methods": methods, "stderr": errors},
            {"id": "retrain_probability", "vary": "rho", "x": cost["rhos"], "methods": retrain, "stderr": retrain_err}]

# %% [markdown]
# The lower-bound figure: the regret after $T$ episodes against $1/\rho$ beside the shape
# $c\,(H\sqrt{SAT} + SAH/\rho)$ of Theorem 4.4's lower bound, and the first episode whose policy plays
# the best first action at every initial state.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def _lower_bound_part(protocol: dict, results: list, out: Path, scale: str = "", seed: int = 0) -> list:
    lb = protocol["lower_bound"]
    panels = []
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 6.2), layout="constrained")
    r0 = results[0]
    handles, nonprivate_ls = [], [":", "-.", (0, (5, 1, 1, 1, 1, 1))]
    finite = [r for r in lb["rhos"] if r != INF]
    for i, scale_ in enumerate(lb["bonus_scales"]):
        mine = [r for r in results if r["bonus_scale"] == scale_]
        s = summarize_by_rho(mine)
        xs = [0.0 if rho == INF else 1 / rho for rho in lb["rhos"]]
        shape = [float(lower_bound_shape(r0["S"], r0["A"], r0["H"], r0["T"], rho)) if rho != INF
                 else r0["H"] * math.sqrt(r0["S"] * r0["A"] * r0["T"]) for rho in lb["rhos"]]
        panels.append({"id": f"lower_bound_bonus{scale_:g}", "vary": "1/rho (0 = non-private)", "x": xs,
                       "methods": {"TV-stable UCB-VI R(T)": [s[float(r)][0] for r in lb["rhos"]],
                                   "first-correct episode": [s[float(r)][2] for r in lb["rhos"]],
                                   "H sqrt(SAT) + SAH/rho": shape},
                       "stderr": {"TV-stable UCB-VI R(T)": [s[float(r)][1] for r in lb["rhos"]]}})
        color, ls = f"C{i}", nonprivate_ls[i % len(nonprivate_ls)]
        x = [1 / r for r in finite]
        y = [s[float(r)][0] for r in finite]
        ax0.errorbar(x, y, yerr=[s[float(r)][1] for r in finite] if lb["populations"] > 1 else None, fmt="o-",
                     color=color, capsize=3)
        fitted = np.asarray(lower_bound_shape(r0["S"], r0["A"], r0["H"], r0["T"], np.array(finite, dtype=float)))
        ax0.plot(x, fitted * y[0] / fitted[0], "--", color=color, lw=1.2, alpha=0.8)
        ax1.plot(x, [s[float(r)][2] for r in finite], "o-", color=color)
        handles.append(Line2D([], [], color=color, marker="o", label=f"TV-stable UCB-VI, {_bonus_name(scale_)}"))
        if INF in s:
            ax0.axhline(s[INF][0], color="k", ls=ls, lw=1.1)
            ax1.axhline(s[INF][2], color="k", ls=ls, lw=1.1)
            handles.append(Line2D([], [], color="k", ls=ls, lw=1.1,
                                  label=rf"non-private UCB-VI ($\rho = \infty$), bonus x {scale_:g}"))
    saturation = r0["T"] * (r0["H"] - 1) * r0["gap"]
    ax0.axhline(saturation, color="0.6", lw=2.5, alpha=0.6)
    ax1.axhline(lb["T"] + 1, color="0.6", lw=2.5, alpha=0.6)
    handles += [Line2D([], [], color="0.3", ls="--", lw=1.2,
                       label="left, dashed (in each bonus's colour): " r"$c\,(H\sqrt{SAT} + SAH/\rho)$, the shape of"
                             "\nTheorem 4.4's lower bound, c chosen to pass through the point at the largest rho"),
                Line2D([], [], color="0.6", lw=2.5, alpha=0.6,
                       label=rf"grey: saturation -- left $T(H-1)\Delta$ = {saturation:g}, the regret of always "
                             f"playing the\nwrong first action; right T + 1 = {lb['T'] + 1}: never correct within T")]
    ax0.set(xscale="log", yscale="log", xlabel=r"$1/\rho$ (log axis; smaller $\rho$ = more stable, to the right)",
            ylabel=f"cumulative expected regret R(T) at T = {lb['T']} (log axis)",
            title="Regret after T episodes against 1/rho")
    ax1.set(xscale="log", yscale="log", xlabel=r"$1/\rho$ (log axis)",
            ylabel="first-correct episode (log axis)",
            title="First episode whose policy plays the best first action at every\ninitial state "
                  "(the burn-in a stable learner pays, made visible)")
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8.5)
    fig.suptitle(f"Paper B, Theorem 4.4 illustrated: TV-stable UCB-VI (Algorithm 4, delta = {DELTA:g}) on the hard "
                 f"instance -- {lb['n_bandits']} independent bandits, {lb['n_actions']} actions each, best action "
                 f"{lb['n_actions'] - 1} everywhere\n(S = {r0['S']}, A = {r0['A']}, H = {r0['H']}, gap Delta = "
                 f"{lb['gap']:g}, T = {lb['T']} episodes); exact expected regret; {scale + ' scale, ' if scale else ''}"
                 f"seed {seed}\n{_runs_text(lb['populations'])}\n"
                 + "".join(f"bonus x {x:g}: Algorithm 4's confidence bonus scaled down, so that the learner can leave "
                           "its burn-in within T (at full size it needs far more episodes, chapter B6)\n"
                           for x in lb["bonus_scales"] if x != 1.0)
                 + "An illustration, not a test: the theorem bounds "
                 "every rho-TV-stable algorithm, this learner's regret only bounds the best one's from above",
                 fontsize=9)
    _save(fig, out / "rl_lower_bound")
    return panels


# %% [markdown]
# ## 4. The entry point
#
# `reproduce_rl` checks the protocol before anything runs, then runs the units of work, writes the
# three figures and their JSON, and returns the command line's layout.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
_PROTOCOL_KEYS = {
    "regret": {"environments", "rhos", "bonus_scales", "populations", "n_points"},
    "cost": {"environment", "Ts", "rhos", "n_runs", "requests_per_run"},
    "lower_bound": {"n_bandits", "n_actions", "H", "gap", "T", "rhos", "bonus_scales", "populations"},
}


def _check_protocol(protocol) -> None:
    """The layout of ``PROTOCOLS[scale]``: three parts with their keys, known environments, positive
    sizes and rhos (the runs check the rest before drawing)."""
    check_instance(protocol, dict, "protocol")
    if set(protocol) != set(_PROTOCOL_KEYS):
        raise ValueError("protocol must be a dict with the keys 'regret', 'cost' and 'lower_bound'")
    for part, keys in _PROTOCOL_KEYS.items():
        check_instance(protocol[part], dict, f"protocol[{part!r}]")
        missing = keys - set(protocol[part])
        if missing:
            raise ValueError(f"protocol[{part!r}] misses {sorted(missing)}")
        for rho in protocol[part]["rhos"]:
            if not isinstance(rho, (int, float)) or isinstance(rho, bool) or not rho > 0:
                raise ValueError(f"protocol[{part!r}]['rhos'] must hold numbers > 0 (inf allowed), got {rho!r}")
    for env in protocol["regret"]["environments"] + [protocol["cost"]["environment"]]:
        if not isinstance(env, dict) or env.get("name") not in ENVIRONMENTS:
            raise ValueError(f"unknown environment {env!r}; choose from {sorted(ENVIRONMENTS)}")
        check_int(env.get("H"), "H", 1)
    for env in protocol["regret"]["environments"]:
        check_int(env.get("T"), "T", 2)
    for T in protocol["cost"]["Ts"]:
        check_int(T, "T", 2)
    for part in ("regret", "lower_bound"):
        check_int(protocol[part]["populations"], "populations", 1)


def _draw(job: tuple) -> tuple:
    """One figure: ``job = (name, protocol, results, scale, seed)``, ``name`` one of ``rl_regret``,
    ``rl_unlearning_cost``, ``rl_lower_bound`` -> ``(panels, {file name: bytes})``.  Top level, and the
    files come back as bytes: any executor may draw it, a cluster's worker on another machine too."""
    name, protocol, results, scale, seed = job
    part = {"rl_regret": _regret_part, "rl_unlearning_cost": _cost_part, "rl_lower_bound": _lower_bound_part}[name]
    with tempfile.TemporaryDirectory() as tmp:
        panels = part(protocol, results, Path(tmp), scale, seed)
        return panels, {f.name: f.read_bytes() for f in sorted(Path(tmp).iterdir())}


def _write_files(out: Path, files: dict) -> None:
    for name, data in files.items():
        (out / name).write_bytes(data)

# %% [markdown]
# `reproduce_rl` checks its arguments and the protocol before `out` is created, runs the units of
# work (in `workers` processes), and writes each figure with its JSON.

# %% tags=["export:bandit_unlearning.experiments.rl_paper"]
def reproduce_rl(out, scale: str = "quick", seed: int = 0, workers: int = 1, protocol: dict | None = None,
                 tree_factory=LightTree, progress: bool | None = None) -> dict:
    """Run chapters B7-B9's experiments; write ``rl_regret``, ``rl_unlearning_cost``, ``rl_lower_bound``
    (``.json``, ``.png``, ``.pdf``) into ``out``, all checked before ``out`` is created or anything runs.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder to write into (created if missing; an existing file is refused).
    scale : str
        ``"quick"`` or ``"paper"``: the sizes of ``PROTOCOLS[scale]``.
    seed : int
        The root seed (``>= 0``) every run's populations and generators derive from.
    workers : int
        Processes to run the units of work in (``>= 1``); the results do not depend on it.
    protocol : dict or None
        Sizes overriding ``PROTOCOLS[scale]``, in its layout (``scale`` is then only recorded).
    tree_factory : callable
        ``tree_factory(d, sigma, capacity)`` builds the learners' trees (default ``LightTree``).
    progress : bool or None
        None: a line per finished unit of work on stderr (a bar on a terminal); False: silent.

    Returns
    -------
    dict
        ``{"experiment": "rl", "protocol", "panels"}``: the protocol described, the three files' panels.

    Raises
    ------
    TypeError, ValueError
        If an argument is refused (an unknown ``scale``, a protocol of another layout, ``out`` a file).
    """
    check_instance(scale, str, "scale")
    if progress is not None:
        progress = check_bool(progress, "progress")
    if protocol is None:
        if scale not in PROTOCOLS:
            raise ValueError(f"scale must be one of {sorted(PROTOCOLS)}, got {scale!r}")
        protocol = PROTOCOLS[scale]
    else:
        _check_protocol(protocol)
    seed, workers = check_int(seed, "seed", 0), check_int(workers, "workers", 1)
    check_callable(tree_factory, "tree_factory")
    check_instance(out, (str, Path), "out")
    if Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out must be a folder, but {str(out)!r} is an existing file")
    protocol = copy.deepcopy(protocol)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs, tasks = _tasks(protocol, seed, tree_factory, workers)
    lines = progress is None and not sys.stderr.isatty()
    for task in tasks:
        task["report"] = lines
    results = run_tasks(_task, tasks, workers=workers, desc="reproduce rl", progress=progress is None and not lines)
    done = {}                                 # index of a run -> its result
    for task, res in zip(tasks, results):
        if task["kind"] == "cost":
            done[task["index"]] = res
        else:
            done.update((r["index"], x) for r, x in zip(task["runs"], res))
    curves, measured, lower = [], {}, []
    for run in runs:                          # results in the order of the runs, whatever the batches
        res = done[run["index"]]
        if run["kind"] == "regret":
            curves.append(dict(res, env_name=run["environment"]["name"]))
        elif run["kind"] == "cost":
            measured[run["rho"], run["T"]] = res
        else:
            lower.append(res)
    names = ("rl_regret", "rl_unlearning_cost", "rl_lower_bound")   # drawn here, or on a use_executor block's
    drawn = run_tasks(_draw, [(n, protocol, r, scale, seed) for n, r in zip(names, (curves, measured, lower))], progress=False)
    panels = []
    for name, part, (part_panels, files) in zip(names, ("regret", "cost", "lower_bound"), drawn):
        _write_files(out, files)
        doc = {"experiment": name, "scale": scale, "seed": seed, "protocol": _jsonable(protocol[part]),
               "panels": _jsonable(part_panels)}
        (out / f"{name}.json").write_text(json.dumps(doc, indent=1, allow_nan=False))
        panels.extend(doc["panels"])
    description = {"algorithm": "TV-stable UCB-VI (Paper B, Algorithm 4) on the binary tree; sigma = "
                                "sigma_paper(rho, sqrt(3H), T); rho = inf is non-private UCB-VI; regret and "
                                "lower-bound runs in batches (rl.batch, equal run by run to the single-run learner)",
                   "regret": "exact expected regret by policy evaluation", "scale": scale, "seed": seed}
    return {"experiment": "rl", "protocol": _jsonable(dict(protocol, **description)), "panels": panels}


# %% [markdown]
# ## 5. A run on a tiny protocol
#
# `reproduce_rl` on a protocol small enough for a notebook writes the nine files and the panels of
# the command line's layout; then the sizes of the two stored protocols.

# %%
from bandit_unlearning.experiments.rl_paper import *  # noqa: F403

TINY = {"regret": {"environments": [{"name": "riverswim", "H": 5, "T": 60}], "rhos": [math.inf, 10.0],
                   "bonus_scales": [0.05], "populations": 1, "n_points": 6},
        "cost": {"environment": {"name": "riverswim", "H": 5}, "Ts": [16], "rhos": [1.0], "n_runs": 1,
                 "requests_per_run": 3},
        "lower_bound": {"n_bandits": 2, "n_actions": 2, "H": 2, "gap": 0.25, "T": 100, "rhos": [math.inf, 10.0],
                        "bonus_scales": [0.2], "populations": 1}}
with tempfile.TemporaryDirectory() as tmp:
    result = reproduce_rl(Path(tmp), "quick", seed=1, protocol=TINY, progress=False)
    written = sorted(p.name for p in Path(tmp).iterdir())
    lower_bound_png = (Path(tmp) / "rl_lower_bound.png").read_bytes()
print("files:", written)
print("panels:", [(p["id"], p["vary"], len(p["x"]), sorted(p["methods"])) for p in result["panels"]])
assert written == sorted(f"{stem}.{ext}" for stem in ("rl_regret", "rl_unlearning_cost", "rl_lower_bound")
                         for ext in ("json", "png", "pdf"))
for stem in ("quick", "paper"):
    reg, cost, lb = (PROTOCOLS[stem][k] for k in ("regret", "cost", "lower_bound"))
    episodes = (sum(e["T"] for e in reg["environments"]) * len(reg["rhos"]) * len(reg["bonus_scales"]) * reg["populations"]
                + lb["T"] * len(lb["rhos"]) * len(lb["bonus_scales"]) * lb["populations"])
    print(f"PROTOCOLS[{stem!r}]: regret on {[e['name'] + ' T=' + str(e['T']) for e in reg['environments']]}, "
          f"rhos {[str(r) for r in reg['rhos']]}; cost T {cost['Ts']} x rho {cost['rhos']}; lower bound T = {lb['T']}; "
          f"{episodes:,} training episodes outside the cost runs")

# %% [markdown]
# One of the three figures as the tiny run wrote it (`rl_lower_bound.png`; at this size its curves say
# nothing, but every label, the legend and the four-line title that names the protocol are those of
# the paper-scale figure):

# %%
from IPython.display import Image, display  # noqa: E402

display(Image(data=lower_bound_png, width=900))

# %% [markdown]
# ## Summary
# - `bandit_unlearning.experiments.rl_paper`: `reproduce_rl(out, scale, seed, workers, protocol=None,
#   tree_factory=LightTree)`, `PROTOCOLS` and `DELTA` — the command line's `reproduce rl`, whose three
#   figures (the regret of chapter B7, the deletion cost of chapter B8, the lower-bound illustration of
#   [chapter B9a](09a_lower_bound.ipynb)) name their instance, runs, $\delta$ and axes and explain every
#   line in one shared legend.
