"""Every hot path against its floor: the bulk cost of the random numbers (or the plain loop) it needs.

One table, written as JSON and markdown (default ``benchmarks/measured/floor_table.{json,md}``).  Each
row times one path of the package as it is imported (CPU time, ``time.process_time``: less sensitive
than wall time to other processes on a shared machine) and its *floor*, measured in the same process:

* ``tree_d16_dense``, ``tree_d16_light``, ``tree_d1520_light``: ``append`` + ``noisy_prefix_sum`` per
  step of ``BinaryTree`` / ``LightTree`` (dense statistic, sigma = 1); floor: the ``d`` standard normals
  a step needs (numpy SFC64, one bulk call) plus ``d`` additions;
* ``ucbvi_stable_single``: ``train`` of TV-stable UCB-VI (``stable_ucbvi``, rho = 1) on the 5x5
  gridworld, one run, episodes/s; floor: ``d = 23,000`` standard normals per episode, in bulk;
* ``ucbvi_stable_long``: the same at ``T = 3,000``: at rho = 1 no noisy count passes
  ``eps_unexplored`` in the first ~900 episodes (the planner returns the capped plan without value
  iteration there), so the short run measures mostly that phase and this one mostly the full planner;
* ``paper_a_figure1``: ``run_experiment("figure1")`` (paper scale by default), CPU seconds; floor:
  the random numbers the run draws (uniforms for rewards, arms and request starts, standard normals
  for the noise; counted from the protocol), at their bulk cost;
* ``linucb_sigma0``: ``train`` of disjoint LinUCB at sigma = 0 (K = 10, d = 16), steps/s; floor: a
  plain numpy loop of LinUCB with Sherman-Morrison updates on the same users;
* ``linucb_stable``: TV-stable LinUCB at rho = 0.3, steps/s; floor: a plain numpy loop of the same
  algorithm (binary-counter tree with Gaussian node noise, the noisy Gram matrices inverted per step);
* ``lcb_fit_int``, ``lcb_fit_str``: ``LCBModel.fit`` on 10^7 rows with integer labels / one-character
  string labels (rewards 0/1); floor: two ``bincount`` calls (counts and sums); ``sort_s``: a sort
  of the same labels, the comparison the target names.

``share = floor time / path time`` (1 = at the floor).  ``today`` is measured in the same run by
running this script on an older copy of the package (``--baseline DIR``: a directory holding a
``bandit_unlearning`` package, e.g. ``git archive <commit> bandit_unlearning | tar -x -C DIR``), the
two alternating ``--rounds`` times in fresh processes; medians are reported.  ``issue`` quotes the
figures the review measured (another machine state), for reference only.

Usage: ``python benchmarks/floor_table.py [--baseline DIR] [--rounds 3] [--quick] [--out-dir DIR]``
(``--quick``: smaller sizes, for a smoke run; the shares are then not comparable with the targets).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# (path, unit, what the review measured, target share)
ROWS = {
    "tree_d16_dense": ("binary tree (dense), d = 16: append + noisy_prefix_sum", "us/step", "45-60", 0.05),
    "tree_d16_light": ("binary tree (light), d = 16: append + noisy_prefix_sum", "us/step", "25-35", 0.05),
    "tree_d1520_light": ("binary tree (light), d = 1,520", "us/step", "53-83", 0.5),
    "ucbvi_stable_single": ("TV-stable UCB-VI gridworld, single run", "episodes/s", "1,168-1,232", 0.5),
    "ucbvi_stable_long": ("TV-stable UCB-VI gridworld, single run, T = 3,000", "episodes/s", "-", 0.5),
    "paper_a_figure1": ("Paper A engine (Figure 1)", "CPU-s", "11.6", 0.05),
    "linucb_sigma0": ("LinUCB at sigma = 0, d = 16, K = 10", "steps/s", "3,150", 0.3),
    "linucb_stable": ("TV-stable LinUCB rho = 0.3", "steps/s", "2,570", 0.8),
    "lcb_fit_int": ("LCBModel.fit, N = 10^7, integer labels", "s", "2.3", None),
    "lcb_fit_str": ("LCBModel.fit, N = 10^7, one-character string labels", "s", "15 (tiled labels)", None),
}


def _cpu(f, repeats: int) -> float:
    """Smallest CPU time of ``repeats`` calls of ``f``."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.process_time()
        f()
        best = min(best, time.process_time() - t0)
    return best


def unit_costs(n: int = 1 << 21) -> dict:
    """Bulk CPU seconds per standard normal, per uniform and per addition (numpy, SFC64)."""
    g = np.random.Generator(np.random.SFC64(0))
    out, a, b = np.empty(n), np.ones(n), np.ones(n)
    return {
        "normal_s": _cpu(lambda: g.standard_normal(out=out), 5) / n,
        "uniform_s": _cpu(lambda: g.random(out=out), 5) / n,
        "add_s": _cpu(lambda: np.add(a, b, out=out), 5) / n,
    }


def tree_row(factory, d: int, steps: int, unit: dict) -> dict:
    rng = np.random.default_rng(0)
    xs = rng.random((64, d))

    def run():
        tree = factory(d, 1.0, steps)
        for t in range(1, steps + 1):
            tree.append(xs[t % 64], rng)
            tree.noisy_prefix_sum(t)

    seconds = _cpu(run, 3) / steps
    floor = d * (unit["normal_s"] + unit["add_s"])
    out = {"value": seconds * 1e6, "floor": floor * 1e6, "share": floor / seconds}
    out.update(_reference(lambda: _cpu(run, 3) / steps * 1e6))
    return out


def _reference(measure_value) -> dict:
    """With the optional compiled kernels installed: ``accel`` and the same path timed on the numpy
    reference (``reference_value``, kernels switched off), in this process."""
    try:
        from bandit_unlearning.exact import accel
    except ImportError:  # an older package: no kernels
        return {"accel": False}
    if not accel.enabled():
        return {"accel": False}
    accel.set_enabled(False)
    try:
        return {"accel": True, "reference_value": measure_value()}
    finally:
        accel.set_enabled(True)


def ucbvi_row(T: int, unit: dict) -> dict:
    from bandit_unlearning.exact.learner import train
    from bandit_unlearning.rl.envs import gridworld
    from bandit_unlearning.rl.stable import population_users, stable_ucbvi

    mdp = gridworld()
    learner = stable_ucbvi(mdp, T, 1.0)
    users = _population_users(population_users, mdp, 0, T)
    rng = np.random.default_rng(0)
    train(stable_ucbvi(mdp, 16, 1.0), _population_users(population_users, mdp, 0, 16), rng)  # warm-up
    seconds = _cpu(lambda: train(learner, users, rng), 3) / T
    floor = learner.d * unit["normal_s"]
    out = {
        "value": 1 / seconds,
        "floor": 1 / floor,
        "share": floor / seconds,
        "d": learner.d,
        "floor_ms_per_episode": floor * 1e3,
    }
    out.update(_reference(lambda: T / _cpu(lambda: train(learner, users, rng), 3)))
    return out


def figure1_draws(protocol) -> tuple[int, int]:
    """(uniforms, standard normals) drawn by ``run_experiment("figure1", protocol)``: per run and model
    the rewards (and, under M_d, the arms: one uniform each), per point one uniform per request start
    and one normal per replicate for each of the four methods that call the mechanism."""
    from bandit_unlearning.experiments.paper_a import N_GRID, panels

    R, n_max = protocol.n_trajectories, max(N_GRID)
    uniforms = normals = 0
    for model in ("Mf", "Md"):
        points = sum(len(p["points"]) for p in panels("figure1", protocol) if p["model"] == model)
        uniforms += protocol.n_runs * (
            R * n_max * (2 if model == "Md" else 1) + points * R * protocol.n_requests
        )
        normals += protocol.n_runs * points * R * protocol.n_requests * 4
    return uniforms, normals


def paper_a_row(quick: bool, unit: dict) -> dict:
    from bandit_unlearning.experiments.paper_a import ProtocolA, run_experiment

    protocol = ProtocolA.quick() if quick else ProtocolA()
    seconds = _cpu(lambda: run_experiment("figure1", protocol, seed=0, progress=False), 1)
    uniforms, normals = figure1_draws(protocol)
    floor = uniforms * unit["uniform_s"] + normals * unit["normal_s"]
    return {"value": seconds, "floor": floor, "share": floor / seconds, "draws": uniforms + normals}


def _linucb_setup(T: int, K: int = 10, d: int = 16):
    from bandit_unlearning.exact.linucb import LinUCBConfig, linear_users

    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 1, (K, d)) / math.sqrt(d)
    return LinUCBConfig(K, d, alpha=0.5, l2=1.0), linear_users(theta, T, seed=0)


def sherman_morrison_loop(users, K: int, d: int, alpha: float, l2: float) -> np.ndarray:
    """Plain LinUCB: per arm ``V^-1`` kept by Sherman-Morrison updates; returns the arms chosen."""
    Vinv = np.broadcast_to(np.eye(d) / l2, (K, d, d)).copy()
    b, theta, arms = np.zeros((K, d)), np.zeros((K, d)), []
    for u in users:
        x = u.context
        vx = Vinv @ x
        scores = theta @ x + alpha * np.sqrt(np.maximum(vx @ x, 0.0))
        a = int(np.flatnonzero(scores >= scores.max() - 1e-9)[0])
        v = vx[a]
        Vinv[a] -= np.outer(v, v) / (1.0 + x @ v)
        b[a] += u.rewards[a] * x
        theta[a] = Vinv[a] @ b[a]
        arms.append(a)
    return np.array(arms)


def _population_users(population_users, mdp, seed: int, T: int):
    """``population_users`` of the package at hand: ``(mdp, T, *, seed)`` today, ``(mdp, seed, T)`` in
    the baseline revisions before the constructors took one argument order."""
    try:
        return population_users(mdp, T, seed=seed)
    except TypeError:
        return population_users(mdp, seed, T)


def stable_linucb_loop(users, config, sigma: float, rng) -> None:
    """Plain TV-stable LinUCB: the statistic of each step into a binary counter of noisy nodes (one
    node closed per step, ``sigma`` Gaussian noise on it), the noisy prefix sum unpacked and the
    regularised Gram matrices inverted every step."""
    from bandit_unlearning.exact import linucb
    from bandit_unlearning.exact.linucb import _layout, block_size, gram_shift, vector_bound, widened_radius

    K, d = config.n_arms, config.dim
    # the same algorithm as the package at hand: the learner shifts the noisy Gram matrix by
    # SHIFT_FACTOR c_t (a constant the chapter exports); the baseline revisions measured before that
    # constant existed shifted by 2 c_t if their radius docstring says so, else by c_t
    shift_factor = getattr(linucb, "SHIFT_FACTOR", None)
    if shift_factor is None:
        shift_factor = 2.0 if "shifted by ``2 c``" in (widened_radius.__doc__ or "") else 1.0
    upper, up, down, full = _layout(d)[:4]
    p, m = block_size(d), upper.size
    nodes: list = []  # (size, noisy sum) of the counter's open nodes
    theta, Vinv, radius = (
        np.zeros((K, d)),
        np.broadcast_to(np.eye(d) / config.l2, (K, d, d)).copy(),
        config.alpha,
    )
    for t, u in enumerate(users, start=1):
        x = u.context
        scores = theta @ x + radius * np.sqrt(np.maximum((Vinv @ x) @ x, 0.0))
        a = int(np.flatnonzero(scores >= scores.max() - 1e-9)[0])
        stat = np.zeros(K * p)
        stat[a * p : a * p + m] = np.outer(x, x).ravel()[upper] * up
        stat[a * p + m : (a + 1) * p] = u.rewards[a] * x
        size, exact = 1, stat
        while nodes and nodes[-1][0] == size:  # merge equal-size nodes (a binary counter)
            exact = exact + nodes.pop()[2]
            size *= 2
        nodes.append((size, exact + sigma * rng.standard_normal(K * p), exact))
        total = sum(n[1] for n in nodes)
        blocks = total.reshape(K, p)
        G = (blocks[:, :m] * down)[:, full].reshape(K, d, d)
        c = gram_shift(sigma, d, t, K, config.delta)
        G += (config.l2 + shift_factor * c) * np.eye(d)
        Vinv = np.linalg.inv(G)
        theta = (Vinv @ blocks[:, m:, None])[:, :, 0]
        radius = widened_radius(
            config.alpha, config.l2, config.theta_bound, c, vector_bound(sigma, d, t, K, config.delta)
        )


def linucb_rows(T: int) -> dict:
    from bandit_unlearning.exact.learner import train
    from bandit_unlearning.exact.linucb import SENSITIVITY_ZERO_DUMMY, linucb_arms, linucb_learner
    from bandit_unlearning.exact.tree import sigma_paper

    config, users = _linucb_setup(T)
    rng = np.random.default_rng(0)
    plain = linucb_learner(config, 0.0)
    train(plain, users[:100], rng)  # warm-up
    s0 = _cpu(lambda: train(plain, users, rng), 3) / T
    f0 = _cpu(lambda: sherman_morrison_loop(users, config.n_arms, config.dim, config.alpha, config.l2), 3) / T
    same = bool(
        np.array_equal(
            linucb_arms(train(plain, users, rng)),
            sherman_morrison_loop(users, config.n_arms, config.dim, config.alpha, config.l2),
        )
    )
    sigma = sigma_paper(0.3, SENSITIVITY_ZERO_DUMMY, T)
    stable = linucb_learner(config, sigma)
    s1 = _cpu(lambda: train(stable, users, rng), 3) / T
    f1 = _cpu(lambda: stable_linucb_loop(users, config, sigma, rng), 3) / T
    return {
        "linucb_sigma0": {
            "value": 1 / s0,
            "floor": 1 / f0,
            "share": f0 / s0,
            "same_arms_as_the_plain_loop": same,
        },
        "linucb_stable": {"value": 1 / s1, "floor": 1 / f1, "share": f1 / s1, "sigma": sigma},
    }


def lcb_fit_rows(n: int) -> dict:
    from bandit_unlearning.mab.model import LCBModel

    rng = np.random.default_rng(0)
    arms = rng.integers(0, 10, n)
    rewards = (rng.random(n) < 0.3).astype(float)
    letters = np.array(list("abcdefghij"))[arms]
    floor = _cpu(
        lambda: (np.bincount(arms, minlength=10), np.bincount(arms, weights=rewards, minlength=10)), 3
    )
    out = {}
    for name, labels in (("lcb_fit_int", arms), ("lcb_fit_str", letters)):
        seconds = _cpu(lambda: LCBModel.fit(labels, rewards), 2)
        out[name] = {
            "value": seconds,
            "floor": floor,
            "share": floor / seconds,
            "sort_s": _cpu(lambda: np.sort(labels), 2),
        }
    return out


def measure(quick: bool, only: list | None = None) -> dict:
    """Every row once, in this process, for the ``bandit_unlearning`` it imports."""
    from bandit_unlearning.exact.light_tree import LightTree
    from bandit_unlearning.exact.tree import BinaryTree

    unit = unit_costs()
    wanted = set(only or ROWS)
    rows = {}
    if "tree_d16_dense" in wanted:
        rows["tree_d16_dense"] = tree_row(BinaryTree, 16, 512 if quick else 4096, unit)
    if "tree_d16_light" in wanted:
        rows["tree_d16_light"] = tree_row(LightTree, 16, 512 if quick else 4096, unit)
    if "tree_d1520_light" in wanted:
        rows["tree_d1520_light"] = tree_row(LightTree, 1520, 128 if quick else 1024, unit)
    if "ucbvi_stable_single" in wanted:
        rows["ucbvi_stable_single"] = ucbvi_row(40 if quick else 300, unit)
    if "ucbvi_stable_long" in wanted:
        # past the first ~900 episodes, where no noisy count is above eps_unexplored and the plan is the
        # capped one: the planner's value iteration runs in most of these episodes
        rows["ucbvi_stable_long"] = ucbvi_row(80 if quick else 3000, unit)
    if "paper_a_figure1" in wanted:
        rows["paper_a_figure1"] = paper_a_row(quick, unit)
    if wanted & {"linucb_sigma0", "linucb_stable"}:
        rows.update(linucb_rows(300 if quick else 2000))
    if wanted & {"lcb_fit_int", "lcb_fit_str"}:
        rows.update(lcb_fit_rows(10**5 if quick else 10**7))
    import bandit_unlearning

    return {"package": str(Path(bandit_unlearning.__file__).parent), "unit_costs": unit, "rows": rows}


def _subprocess(package_dir: Path | None, quick: bool, only: list | None = None) -> dict:
    env = dict(os.environ)
    if package_dir is not None:
        env["PYTHONPATH"] = str(package_dir)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure-only"] + (["--quick"] if quick else [])
    cmd += ["--only", ",".join(only)] if only else []
    # run from a neutral directory so that PYTHONPATH (or the installed package) decides what is imported
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd="/")
    return json.loads(done.stdout)


def _fmt(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def table(after: dict, today: dict | None, keys=None) -> str:
    lines = [
        "| path | unit | issue | today | after | floor | share today | share after | target share |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, (label, unit, issue, target) in ROWS.items():
        if keys is not None and key not in keys:
            continue
        a = after[key]
        t = today[key] if today else None
        t_value, t_share = (_fmt(t["value"]), f"{t['share']:.1%}") if t else ("-", "-")
        goal = "-" if target is None else f"{target:.0%}"
        lines.append(
            f"| {label} | {unit} | {issue} | {t_value} | {_fmt(a['value'])} | {_fmt(a['floor'])} | "
            f"{t_share} | {a['share']:.1%} | {goal} |"
        )
    return "\n".join(lines)


def _median_rows(results: list) -> dict:
    rows = {}
    for key in results[0]["rows"]:
        rows[key] = {
            f: statistics.median(r["rows"][key][f] for r in results)
            for f in ("value", "floor", "share", "reference_value")
            if f in results[0]["rows"][key]
        }
        extra = {f: v for f, v in results[0]["rows"][key].items() if f not in rows[key]}
        rows[key].update(extra)
    return rows


def main(argv=None) -> int:
    try:  # the package's kernels are off by default: time them here
        from bandit_unlearning.exact import accel

        if accel.available():
            accel.set_enabled(True)
    except ImportError:  # an older package: no kernels
        pass
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, default=None, help="directory holding an older bandit_unlearning"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "measured")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated row keys (default: every row); "
        "the output files are then named floor_table_<first key's group>",
    )
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    if only and not set(only) <= set(ROWS):
        parser.error(f"--only: unknown rows {sorted(set(only) - set(ROWS))}")
    if args.measure_only:
        print(json.dumps(measure(args.quick, only)))
        return 0
    after_runs, today_runs = [], []
    for _ in range(args.rounds):  # alternating: both see the same machine state
        if args.baseline is not None:
            today_runs.append(_subprocess(args.baseline.resolve(), args.quick, only))
        after_runs.append(_subprocess(None, args.quick, only))
    after = _median_rows(after_runs)
    today = _median_rows(today_runs) if today_runs else None
    result = {
        "benchmark": "hot paths against their floors (benchmarks/floor_table.py)",
        "timing": f"CPU time (process_time), best of repeats per process, median of {args.rounds} alternating "
        "rounds in fresh processes",
        "quick": args.quick,
        "rounds": args.rounds,
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "processor": platform.machine(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "unit_costs_ns": {
            k: statistics.median(r["unit_costs"][k] for r in after_runs) * 1e9
            for k in after_runs[0]["unit_costs"]
        },
        "rows": {
            key: {
                "path": ROWS[key][0],
                "unit": ROWS[key][1],
                "issue": ROWS[key][2],
                "target_share": ROWS[key][3],
                "after": after[key],
                "today": today[key] if today else None,
            }
            for key in ROWS
            if key in after
        },
        "baseline": str(args.baseline) if args.baseline else None,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    stem = "floor_table_quick" if args.quick else "floor_table"
    if only:
        stem += "_" + "_".join(sorted({k.split("_")[0] for k in only}))
    (args.out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    md = [
        f"# Hot paths against their floors ({time.strftime('%Y-%m-%d', time.gmtime())})",
        "",
        f"Written by `benchmarks/floor_table.py`; {result['timing']}.  Load average at the end: "
        f"{result['machine']['load_average_at_end']}.  Unit costs (bulk, ns per element): "
        + ", ".join(f"{k} {v:.2f}" for k, v in result["unit_costs_ns"].items())
        + ".  "
        "`share` = floor time / path time.  `today`: the baseline package "
        f"({result['baseline'] or 'not measured'}); `issue`: the review's figures, quoted.",
        "",
        table(after, today, set(after)),
        "",
    ]
    refs = [
        f"{ROWS[k][0]}: {_fmt(after[k]['reference_value'])} {ROWS[k][1]}"
        for k in ROWS
        if k in after and "reference_value" in after[k]
    ]
    if refs:
        md += [
            "`after` runs the optional compiled kernels (numba, `bandit_unlearning.exact.accel`); the same "
            "paths on the numpy reference (kernels switched off), in the same processes: "
            + "; ".join(refs)
            + ".",
            "",
        ]
    (args.out_dir / f"{stem}.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
