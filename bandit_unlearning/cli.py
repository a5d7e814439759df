"""Command-line interface: ``python -m bandit_unlearning reproduce NAME [--out DIR] [--seed S]``.

Every reproduction writes ``DIR/<name>.json`` (the numbers, with the protocol that produced them),
``DIR/<name>.png`` and ``DIR/<name>.pdf``, and appends its table to ``DIR/summary.md``.
Files are written atomically: an experiment writes into a private staging folder inside ``DIR``,
and only when it has finished are its files moved into place one by one (``os.replace``, the JSON
last), so an interrupt (Ctrl-C, a crash, a dead cluster) leaves each file either as it was or as the
new run wrote it, never half-written; a staging folder left by a killed run is removed by the next
run.  ``summary.md`` skips (and names) a result file it cannot read, such as one truncated by an
older version of this command.

``python -m bandit_unlearning copy MODULE DEST [--name NAME]`` copies one module with the package
files it needs (``bandit_unlearning.copying``).

Sweeps run serially, on ``--workers N`` local processes, or on a Dask cluster with ``--scheduler``
(``local``, ``local:N`` or ``tcp://HOST:PORT``; needs the ``dask`` extra).  The results depend only on
``--seed``, never on where the tasks ran.  ``--scheduler`` and ``--workers N > 1`` are refused
together: on a cluster its workers set the parallelism (``--scheduler local:N`` for N processes here).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.checks import check_choice, check_instance, check_int
from bandit_unlearning.experiments.paper_numbers import paper_comparison_markdown

__all__ = ["EXPERIMENTS", "write_summary", "reproduce", "main"]

_STAGING = ".staging-"  # prefix of an experiment's private folder inside --out (see _reproduce)
HEARTBEAT_S = 30.0  # a line on stderr at least this often while an experiment runs


def _lemma31(out: Path, scale: str, seed: int, workers: int) -> dict:
    from bandit_unlearning.experiments.runner import run_tasks

    # one task: here, or on the executor of a use_executor block (the pool of ``reproduce all --workers N``)
    result, files = run_tasks(_in_folder, [(_lemma31_task, (scale, seed))], progress=False)[0]
    _write_files(out, files)
    return result


def _in_folder(job: tuple) -> tuple:
    """``job = (fn, args)`` -> ``(fn(folder, *args), {file name: bytes})`` of the files ``fn`` wrote into
    a fresh temporary folder: top level, and the files come back as bytes, so that any executor may
    run it (a cluster's worker on another machine too)."""
    fn, args = job
    with tempfile.TemporaryDirectory() as tmp:
        result = fn(Path(tmp), *args)
        return result, {f.name: f.read_bytes() for f in sorted(Path(tmp).iterdir())}


def _write_files(out: Path, files: dict) -> None:
    for name, data in files.items():
        (out / name).write_bytes(data)


def _lemma31_task(out: Path, scale: str, seed: int) -> dict:
    """Lemma 3.1's curve, its figure written into ``out``."""
    from bandit_unlearning.experiments.lemma31 import lemma31_curve, plot_lemma31
    from bandit_unlearning.mab.data import PAPER_MEANS

    ns = [250, 500, 1000, 2000, 4000, 8000, 16000]
    reps = 200_000 if scale == "paper" else 20_000
    curve = lemma31_curve(ns, np.random.default_rng(seed), reps=reps)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    plot_lemma31(ns, curve, ax=ax)
    ax.set_title(
        f"Paper A, Lemma 3.1: the LCB learner on the paper's instance (Mf: equal counts; Md: C* = 5)\n"
        f"{reps:,} replicates per N (error bars: 1 standard error), seed {seed}",
        fontsize=8,
    )
    _save_figure(fig, out / "lemma31")
    panels = [
        {
            "id": "lemma31",
            "model": model,
            "vary": "N",
            "x": ns,
            "methods": {"LCB": curve[model], "Lemma 3.1 bound": curve[f"{model} bound"]},
            "stderr": {"LCB": curve[f"{model} stderr"]},
        }
        for model in ("Mf", "Md")
    ]
    protocol = {
        "means": list(PAPER_MEANS),
        "tau": "1/N",
        "replicates": reps,
        "Mf": "equal counts N/5",
        "Md": "behaviour policy with C* = 5",
    }
    return {"experiment": "lemma31", "protocol": protocol, "panels": panels}


def _paper_a(name: str) -> Callable[[Path, str, int, int], dict]:
    def run(out: Path, scale: str, seed: int, workers: int) -> dict:
        from bandit_unlearning.experiments.paper_a import ProtocolA, run_experiment
        from bandit_unlearning.experiments.runner import run_tasks

        protocol = ProtocolA() if scale == "paper" else ProtocolA.quick()
        result = run_experiment(name, protocol, seed=seed, workers=workers, scale=scale)
        # drawn here, or on the executor of a use_executor block (the pool of ``reproduce all``)
        _write_files(out, run_tasks(_in_folder, [(_draw_a, (result, name))], progress=False)[0][1])
        return result

    run.__doc__ = f"Paper A {name} (Paper A §5)."
    return run


def _draw_a(out: Path, result: dict, name: str) -> None:
    """Draw one Paper A figure into ``out``."""
    from bandit_unlearning.experiments.plots_a import plot_experiment

    _save_figure(plot_experiment(result), out / name)


def _rl(out: Path, scale: str, seed: int, workers: int) -> dict:
    """Paper B (chapters B7-B9): regret over T and rho, unlearning cost, lower-bound illustration."""
    from bandit_unlearning.experiments.rl_paper import reproduce_rl

    return reproduce_rl(out, scale, seed, workers)


EXPERIMENTS: dict[str, Callable[[Path, str, int, int], dict]] = {
    "lemma31": _lemma31,
    "rl": _rl,
    **{name: _paper_a(name) for name in ("figure1", "figure2", "figure3", "table2")},
}


def _save_figure(fig, stem: Path) -> None:
    print(f"{stem.name}: saving the figure ({stem.name}.png, {stem.name}.pdf)", file=sys.stderr, flush=True)
    if fig.get_layout_engine() is None:  # figures laid out by their own engine keep it
        fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(stem.with_suffix(f".{ext}"), dpi=150)
    plt.close(fig)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make summary.md private
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _heartbeat(name: str, every: float = HEARTBEAT_S):
    """While the block runs, a line on stderr every ``every`` seconds (long units report nothing)."""
    stop = threading.Event()
    start = time.perf_counter()

    def beat():
        while not stop.wait(every):
            print(
                f"{name}: still running ({time.perf_counter() - start:.0f} s so far)",
                file=sys.stderr,
                flush=True,
            )

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _remove_stale_staging(out: Path) -> None:
    """Remove the staging folders of earlier runs that were killed (their process is gone)."""
    for folder in out.glob(_STAGING + "*"):
        try:
            pid = int(folder.name[len(_STAGING) :].split("-")[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        if not alive and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)


def _check_out(out: Path) -> list[Path]:
    """Refuse an --out that cannot be a folder; the folders that creating it will make (to undo)."""
    missing = []
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                what = (
                    "is an existing file" if folder == out else f"lies under {str(folder)!r}, which is a file"
                )
                raise ValueError(f"--out must be a folder, but {str(out)!r} {what}")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"out (--out): cannot write into {str(folder)!r} (permission denied)")
            break
        missing.append(folder)
    return missing


_PAPER_A = {
    "figure1": "Paper A, Figure 1",
    "figure2": "Paper A, Figure 2",
    "figure3": "Paper A, Figure 3",
    "table2": "Paper A, Table 2",
    "lemma31": "Paper A, Lemma 3.1",
    "rl": "Paper B (chapters B7-B9)",
    "rl_regret": "Paper B, regret of TV-stable UCB-VI (Theorem 4.1)",
    "rl_unlearning_cost": "Paper B, cost of exact unlearning (Theorem 3.3)",
    "rl_lower_bound": "Paper B, the lower bound illustrated (Theorem 4.4)",
}
_WHAT = {
    "figure1": "the five methods against N, k and gamma, in both data models, hard and easy case",
    "figure2": "mixing with a fraction eta = k'/k of the deleted samples rolled back (eta = 0: all noise, "
    "eta = 1: all rollback), hard case",
    "figure3": "deleting k samples from each of two arms (multi-source), M_f",
    "table2": "imitation learning (Algorithm 6) against Algorithm 2 at C* = 1.3",
    "lemma31": "the LCB learner's mean sub-optimality against N (no deletion), beside Lemma 3.1's bound",
    "rl_regret": "the exact expected cumulative regret of TV-stable UCB-VI (Algorithm 4) over the episodes, for "
    "several stability levels rho (rho = inf: non-private UCB-VI), with the paper's confidence bonus "
    "and with the bonus scaled down; then the regret after the last episode against 1/rho",
    "rl_unlearning_cost": "how much of a run exact unlearning (Algorithm 3) recomputes to delete one episode from "
    "TV-stable UCB-VI, against rho and T: measured, exact, and the paper's estimates",
    "rl_lower_bound": "TV-stable UCB-VI on Theorem 4.4's hard instance (independent two-armed bandits): regret after "
    "T episodes and the first episode that plays the best action everywhere, against 1/rho, beside "
    "the lower bound's shape H sqrt(SAT) + SAH/rho -- an illustration, not a test of the theorem",
}
_RL_SCALED = (
    "bonus x s (s < 1): Algorithm 4's confidence bonus b(n) multiplied by s.  At full size b(n) >= 1 for "
    "about (H+1)^2 ln(8SAHT/delta)/2 visits of each (h, s, a), so every Q-value stays at its cap, all "
    "actions tie and the learner repeats action 0 -- a linear burn-in far longer than these T (chapter B6); "
    "the scaled bonus lets the learner leave it within the run (same algorithm and stability, no regret "
    "guarantee)"
)


def _rl_header(result: dict) -> list[str]:
    """What a Paper B result shows, its units and its protocol, in words."""
    from bandit_unlearning.experiments.rl_paper import DELTA

    name, p = result["experiment"], result.get("protocol", {})
    lines = [f"What it shows: {_WHAT[name]}.", ""]
    if name == "rl_regret":
        envs = ", ".join(
            f"{e['name']} (H = {e['H']}, T = {e['T']} episodes)" for e in p.get("environments", [])
        )
        lines += [
            "Units: regret is the cumulative expected regret R(t) = sum over episodes 1..t of V*(s_1) - "
            "V^pi_t(s_1), computed exactly by policy evaluation (not sampled); one episode's return lies "
            "in [0, H], so R(t) <= H t.  Tables over t are log-spaced episode counts.",
            "",
            f"Protocol: {envs}; rho in {_rho_list(p.get('rhos', []))}; confidence delta = {DELTA:g}; "
            f"tree noise sigma of Theorem 4.1 for rho-TV-stability (rho = inf: no noise); bonus scales "
            f"{p.get('bonus_scales')}; {_runs_sentence(p.get('populations', 1))}",
            "",
            "Columns: rho=X is TV-stable UCB-VI at stability rho = X; bonus x 1 is Algorithm 4's bonus "
            f"(Theorem 4.1); {_RL_SCALED}.  Row 1/rho = 0 is non-private UCB-VI.",
            "",
        ]
    elif name == "rl_unlearning_cost":
        env = p.get("environment", {})
        n_req = p.get("n_runs", 0) * p.get("requests_per_run", 0)
        lines += [
            "Units: cost is the number of the T training steps (episodes) that one deletion recomputes, "
            "divided by T (1 = retraining from scratch); retrain probability is the chance that a deletion "
            "recomputes any step (a rejection in the coupling).",
            "",
            f"Protocol: TV-stable UCB-VI with Algorithm 4's bonus, delta = {DELTA:g}, on {env.get('name')} "
            f"(H = {env.get('H')}); T in {p.get('Ts')}, rho in {_rho_list(p.get('rhos', []))}; "
            f"{p.get('n_runs')} training runs per (rho, T) and {p.get('requests_per_run')} deletion requests "
            f"per run at uniformly random positions, each on the original run (exact unlearning, Algorithm 3); "
            f"measured cells read mean ± standard error over the {n_req} requests (they share "
            f"{p.get('n_runs')} runs, so the error understates the run-to-run spread).",
            "",
            "Columns: measured -- what the deletions did; exact (own shifts) -- the exact expectation over the "
            "algorithm's randomness for each deleted episode's own statistics shift ||x_t|| <= B, averaged over "
            "the same requests; exact (shift B) -- the exact expectation at a uniformly random position if every "
            "deleted episode had the worst-case shift B = sqrt(3H), averaged over all T positions; "
            "rho sqrt(ln T) -- the paper's estimate of the cost, and rho sqrt(2 log2 T) -- Theorem 3.3's bound "
            "on the retrain probability (both capped at 1).",
            "",
        ]
    elif name == "rl_lower_bound":
        lines += [
            "Units: R(T) is the cumulative expected regret after T episodes, computed exactly (a wrong first "
            "action costs (H-1) gap in expectation; T (H-1) gap = always wrong); the first-correct episode is "
            "the first episode whose policy plays the best first action at every initial state (mean over "
            "runs; T + 1: never within T); H sqrt(SAT) + SAH/rho is the lower bound's shape without its unknown constant.",
            "",
            f"Protocol: {p.get('n_bandits')} independent bandits with {p.get('n_actions')} actions each "
            f"(best action {p.get('n_actions', 1) - 1} everywhere), H = {p.get('H')}, gap = {p.get('gap')}, "
            f"T = {p.get('T')} episodes; rho in {_rho_list(p.get('rhos', []))}; delta = {DELTA:g}; bonus "
            f"scales {p.get('bonus_scales')}; {_runs_sentence(p.get('populations', 1))}",
            "",
            f"Tables: one per bonus (bonus x 1 is Algorithm 4's; {_RL_SCALED}).  Row 1/rho = 0 is non-private "
            "UCB-VI.",
            "",
        ]
    return lines


def _rho_list(rhos: list) -> str:
    return "{" + ", ".join("inf" if r in ("inf", float("inf")) else f"{r:g}" for r in rhos) + "}"


def _runs_sentence(n: int) -> str:
    if n == 1:
        return "one run per curve or point (its own users and tree noise), so no standard error is shown."
    return (
        f"{n} independent runs per curve or point (own users and own tree noise); a cell reads mean ± "
        f"standard error over the runs (standard deviation / sqrt({n}))."
    )


_SUBOPT = (
    "Each number is the mean sub-optimality mu(a*) - mu(a_hat'): how much lower the mean reward of the "
    "arm chosen after unlearning is than that of the best arm (units: mean reward, a probability; "
    "0 is perfect, the worst possible here is 0.10 - 0.02 = 0.08)"
)


def _decimals(x: float, digits: int) -> int:
    """Decimals that show ``digits`` significant digits of ``x`` (none for large values)."""
    if x == 0 or not np.isfinite(x):
        return 0
    return max(0, digits - 1 - int(np.floor(np.log10(abs(x)))))


def _cell(value: float, stderr: float | None) -> str:
    """``value`` with 4 significant digits, or ``value ± stderr`` with two significant digits of the
    standard error and the value to the same decimal place (``0.000123 ± 0.000045``, ``312.4 ± 5.1``);
    a zero error is shown as ``± 0`` after the value's 4 significant digits."""
    if value is None or stderr is None or not np.isfinite(stderr) or stderr == 0:
        shown = "n/a" if value is None else f"{value:.{_decimals(value, 4)}f}" if value != 0 else "0"
        return shown if stderr is None else f"{shown} ± 0"
    d = _decimals(stderr, 2)
    if d > 0 and round(stderr, d) >= 10.0 ** (2 - d):  # 0.0000999 rounds up to 0.00010, not 0.000100
        d -= 1
    return f"{value:.{d}f} ± {stderr:.{d}f}"


def _paper_a_header(result: dict) -> list[str]:
    """The fixed settings, the scale and the methods of a Paper A experiment, in words."""
    from bandit_unlearning.experiments.plots_a import METHOD_DESCRIPTIONS

    p = result.get("protocol", {})
    lines = []
    if result["experiment"] in _WHAT:
        subopt = _SUBOPT if result["experiment"] != "lemma31" else _SUBOPT.replace(" after unlearning", "")
        lines += [f"What it shows: {_WHAT[result['experiment']]}.  {subopt}.", ""]
    if {"n_trajectories", "n_requests", "n_runs"} <= set(p):
        per_run = p["n_trajectories"] * p["n_requests"]
        lines += [
            f"Scale: {p['n_trajectories']} trajectories x {p['n_requests']} deletion requests = {per_run} "
            f"replicates per point and run, {p['n_runs']} independent runs; a cell reads mean ± standard "
            f"error over the runs (standard deviation of the run means / sqrt({p['n_runs']})).",
            "",
        ]
    if result["experiment"] == "lemma31" and "replicates" in p:
        lines += [
            f"Settings: Bernoulli arms with means {tuple(p.get('means', ()))}, tau = {p.get('tau')}, "
            f"{p['replicates']:,} Monte Carlo replicates per N; M_f: {p.get('Mf')}; M_d: {p.get('Md')}.  "
            "A cell reads mean ± standard error over the replicates; the bound has no error.",
            "",
        ]
    if {
        "means",
        "n",
        "k",
        "gamma",
        "c_star",
        "table2_c_star",
        "table2_k_fraction",
        "easy_arm",
        "threshold_scale",
        "mixing_eta",
    } <= set(p):
        fixed = [
            f"{len(p['means'])} Bernoulli arms with means {tuple(p['means'])} (arm 0 is the best)",
            f"unless a table varies them N = {p['n']} samples, k = {p['k']} deleted samples, "
            f"noise scale gamma = {p['gamma']:g}",
            f"M_f: equal counts N/{len(p['means'])} per arm; M_d: arms drawn i.i.d., the best with "
            f"probability 1/C*, C* = {p['c_star']:g} (Table 2: C* = {p['table2_c_star']:g}, "
            f"k = {p['table2_k_fraction']:g} N)",
            f"hard case: deletions from arm 0 (the best); easy case: from arm {p['easy_arm']}",
            f"Algorithm 2's threshold {p['threshold_scale']:g} gamma0; Mixing rolls back "
            f"k' = {p['mixing_eta']:g} k; tau = 1/N; noise sigma = Delta_f gamma (the paper's "
            "calibration with gamma given directly: no (epsilon, delta) is claimed for these numbers)",
        ]
        lines += ["Fixed settings:", *[f"- {f}" for f in fixed], ""]
    names = sorted(
        {m for pl in result["panels"] for m in pl["methods"] if m in METHOD_DESCRIPTIONS},
        key=list(METHOD_DESCRIPTIONS).index,
    )
    if names:
        lines += ["Methods:", *[f"- {m}: {METHOD_DESCRIPTIONS[m]}" for m in names], ""]
    return lines


def _panel_notes(panel: dict, result: dict) -> list[str]:
    """One sentence each for the replicate counts a panel reports."""
    p = result.get("protocol", {})
    total = ""
    if {"n_trajectories", "n_requests", "n_runs"} <= set(p):
        total = (
            f" of the {len(panel['x']) * p['n_trajectories'] * p['n_requests'] * p['n_runs']:,} replicates"
        )
    notes = []
    if panel.get("exact_sensitivity_replicates"):
        notes.append(
            f"In {panel['exact_sensitivity_replicates']:,}{total} of this table (all its rows and runs), "
            "Lemma A.1's condition k <= N(a0) - sqrt(N(a0) ln(Nm) / 2) failed, so their noise used the "
            "exact worst-case sensitivity instead of 3k / (2 N(a0)) (erratum E2)."
        )
    if panel.get("excluded_replicates"):
        notes.append(
            f"{panel['excluded_replicates']:,}{total} were dropped because their dataset held fewer "
            "than k samples of a source arm."
        )
    return notes


def _panel_title(panel: dict, result: dict) -> str:
    p = result.get("protocol", {})
    name = panel.get("model")
    model = (
        {"Mf": "M_f (equal counts)", "Md": "M_d (arms drawn i.i.d.)"}.get(name, name)
        if name is not None
        else None
    )
    parts = [f"**{panel['id']}**"]
    if model:
        parts.append(f"model {model}")
    if panel.get("case") and panel.get("sources") is not None:
        parts.append(f"{panel['case']} case, deleting from arm(s) {', '.join(map(str, panel['sources']))}")
    if panel.get("vary") in ("N", "k", "gamma") and {"n", "k", "gamma", "table2_k_fraction"} <= set(p):
        fixed = {"N": f"N = {p['n']}", "k": f"k = {p['k']}", "gamma": f"gamma = {p['gamma']:g}"}
        if result["experiment"] == "table2":
            fixed["k"] = f"k = {p['table2_k_fraction']:g} N"
        parts.append(
            f"{panel['vary']} varies ({', '.join(v for key, v in fixed.items() if key != panel['vary'])})"
        )
    elif panel.get("vary"):
        parts.append(f"varies {panel['vary']}")
    return " — ".join(parts)


def _summary_table(result: dict) -> str:
    name = result["experiment"]
    title = _PAPER_A.get(name, name)
    if name == "rl":  # the record of the run; its panels are the three parts'
        return (
            f"## {title} (scale {result['scale']}, seed {result['seed']})\n\n"
            "The combined record (`rl.json`) of the three Paper B figures; their tables, units and protocols "
            "are in the sections rl_lower_bound, rl_regret and rl_unlearning_cost.\n\n"
        )
    lines = [f"## {title} (`{name}.png`; scale {result['scale']}, seed {result['seed']})", ""]
    rl = name.startswith("rl_") and name in _WHAT
    if rl:
        lines += _rl_header(result)
    elif "protocol" in result and isinstance(result["protocol"], dict):
        lines += _paper_a_header(result)
    one_run = rl and result.get("protocol", {}).get("populations") == 1
    for panel in result["panels"]:
        names = list(panel["methods"])
        stderr = {} if one_run else panel.get("stderr", {})
        lines += [_panel_title(panel, result), ""]
        xname = {"gamma": "gamma", "config": "(N, gamma, k)"}.get(panel.get("vary"), panel.get("vary") or "x")
        lines += [f"| {xname} | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for i, x in enumerate(panel["x"]):
            cells = [_cell(panel["methods"][n][i], stderr[n][i] if n in stderr else None) for n in names]
            shown = tuple(x) if isinstance(x, list) else f"{x:.4g}" if isinstance(x, float) else x
            lines.append(f"| {shown} | " + " | ".join(cells) + " |")
        lines += ["", *_panel_notes(panel, result)]
        if panel.get("slopes"):
            lines += [
                "Fitted log-log slope of R(t) over the last decade of t (1: linear regret, still in the "
                "burn-in; 1/2: the sqrt(T) rate): "
                + ", ".join(
                    f"{k} {v:.2f}" if v is not None else f"{k} n/a" for k, v in panel["slopes"].items()
                )
                + ".",
                "",
            ]
        if lines[-1]:
            lines.append("")
    return "\n".join(lines) + "\n"


def write_summary(out: Path) -> Path:
    """Rebuild ``out/summary.md`` from every result JSON in ``out`` (so partial runs accumulate).

    Parameters
    ----------
    out : pathlib.Path
        An existing folder holding result JSON files.

    Returns
    -------
    pathlib.Path
        The path of the summary written, ``out / "summary.md"``.
    """
    check_instance(out, Path, "out")
    if not out.is_dir():
        raise ValueError(f"out must be an existing folder, got {str(out)!r}")
    results = []
    skipped = []
    for path in sorted(out.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            # e.g. truncated by an interrupted run of an older version: skipped, and said so
            print(f"summary: skipping {path.name}: not a readable result file ({err})", file=sys.stderr)
            skipped.append(path.name)
            continue
        if isinstance(data, dict) and "panels" in data and "experiment" in data:
            results.append(data)
    text = (
        "# Reproduced figures and tables\n\n"
        "One section per result file in this folder: what it shows, the scale and fixed settings it was run "
        "with, the methods in words, then one table per panel of its figure (the panel's id is "
        "model-case-varied quantity).  Where there are independent runs a cell reads mean ± standard "
        "error.  The JSON files beside this one hold every number and the full protocol.\n\n"
        + "".join(map(_summary_table, results))
        + paper_comparison_markdown(results)
    )
    if skipped:
        text += (
            "## Skipped files\n\nNot readable as result files (truncated or not JSON), so not summarised: "
            + ", ".join(f"`{name}`" for name in skipped)
            + ".  Re-run their experiments to replace them.\n"
        )
    _write_atomic(out / "summary.md", text)
    return out / "summary.md"


def reproduce(
    names: list[str],
    out: Path,
    scale: str = "paper",
    seed: int = 0,
    workers: int = 1,
    scheduler: str | None = None,
) -> list[dict]:
    """Run the named reproductions; write their JSON, figures and ``summary.md`` into ``out``.

    ``scheduler`` (``--scheduler``): run the sweeps' tasks on a Dask cluster, ``"local"``/``"local:N"``
    (started here and closed at the end) or ``"tcp://HOST:PORT"`` (see
    ``experiments.runner.dask_executor``); not together with ``workers > 1``.  Every argument is
    checked, and the cluster reached, before the folder is created or anything is run.  Prints one
    line per finished experiment and the total wall time.

    Parameters
    ----------
    names : list of str
        Experiments (``figure1``, ``figure2``, ``figure3``, ``table2``, ``lemma31``, ``rl``) or ``all``.
    out : pathlib.Path
        Output folder, created if missing.
    scale : str
        ``"paper"`` (the papers' sizes) or ``"quick"``.
    seed : int
        Master seed, >= 0; the results depend only on it.
    workers : int
        Worker processes, >= 1.
    scheduler : str or None
        A Dask scheduler (``"local"``, ``"local:N"`` or ``"tcp://HOST:PORT"``), or None to run here.

    Returns
    -------
    list of dict
        The JSON-ready result of each experiment, in the order run.
    """
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a list of experiment names, got {names!r}")
    if not names:
        raise ValueError(f"names must name at least one experiment; choose from {sorted(EXPERIMENTS)}")
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; choose from {sorted(EXPERIMENTS)} or 'all'")
    out = Path(check_instance(out, (str, Path), "out"))
    _check_out(out)
    check_choice(scale, "scale", ("paper", "quick"))
    seed = check_int(seed, "seed (--seed)", 0)
    workers = check_int(workers, "workers (--workers)", 1)
    cluster = nullcontext(None)
    if scheduler is not None:
        from bandit_unlearning.experiments.runner import dask_executor

        if workers > 1:
            raise ValueError(
                f"scheduler (--scheduler) runs the tasks on the cluster's workers; do not combine "
                f"it with workers (--workers) {workers} > 1 (use --scheduler local:{workers} for "
                f"{workers} local processes)"
            )
        cluster = dask_executor(scheduler)  # checks the value and that Dask is installed
    start_all = time.perf_counter()
    with cluster as executor:
        if executor is None:
            results = _reproduce(names, out, scale, seed, workers)
        else:
            from bandit_unlearning.experiments.runner import use_executor

            with use_executor(executor):
                results = _reproduce(names, out, scale, seed, workers)
    print(f"reproduce: {len(results)} experiment(s) in {time.perf_counter() - start_all:.1f} s wall time")
    return results


def _reproduce(names: list[str], out: Path, scale: str, seed: int, workers: int) -> list[dict]:
    created = _check_out(out)  # folders made here, removed again if left empty
    out.mkdir(parents=True, exist_ok=True)
    try:
        _remove_stale_staging(out)
        if workers > 1 and len(names) > 1:
            from bandit_unlearning.experiments.runner import run_together

            # one pool for all: the experiments with the longest units first, each told to use it
            order = sorted(names, key=lambda n: _FIRST.index(n) if n in _FIRST else len(_FIRST))
            jobs = [(lambda n=name: _run_one(n, out, scale, seed, workers)) for name in order]
            done = dict(zip(order, run_together(jobs, workers)))
            results = [done[name] for name in names]
        else:
            results = [_run_one(name, out, scale, seed, workers) for name in names]
        write_summary(out)
    except BaseException:
        for folder in created:  # nothing finished: leave no empty folder behind
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return results


# ``reproduce all --workers N``: every experiment in its own thread, all their tasks on one pool of N
# processes (``run_together``), the experiments with the longest units first.
_FIRST = ("rl", "figure1", "figure2", "figure3", "table2", "lemma31")


def _run_one(name: str, out: Path, scale: str, seed: int, workers: int) -> dict:
    """Run one experiment in its private staging folder, then move its files into ``out``."""
    start = time.perf_counter()
    stage = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-{name}-", dir=out))
    try:
        with _heartbeat(name):
            result = {"experiment": name, "scale": scale, "seed": seed}
            result.update(EXPERIMENTS[name](stage, scale, seed, workers))
            result["scale"], result["seed"] = scale, seed
            result["wall_time_s"] = round(time.perf_counter() - start, 2)
            (stage / f"{name}.json").write_text(json.dumps(result, indent=1))
        # into place one file at a time, each atomically; the JSON files (the record) last
        written = sorted(
            (f for f in stage.iterdir() if f.is_file()), key=lambda f: (f.suffix == ".json", f.name)
        )
        for f in written:
            os.replace(f, out / f.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    print(
        f"{name}: wrote {', '.join(sorted(f.name for f in written))} into {out} in {result['wall_time_s']} s"
    )
    return result


def _copy(args, parser) -> int:
    from bandit_unlearning.copying import copy_module, module_files

    try:
        _, needs = module_files(args.module)
        files = copy_module(args.module, args.dest, args.name)
    except (TypeError, ValueError) as err:
        parser.error(str(err))
    root = Path(args.dest) / args.name
    print(
        f"copy: wrote {len(files)} files into {root} ({', '.join(f.relative_to(root).as_posix() for f in files)})"
    )
    print(
        f"copy: import it as {args.name}.{args.module.removesuffix('.py').replace('/', '.').removeprefix('bandit_unlearning.')}"
        f" with {args.dest} on sys.path; it needs {', '.join(needs) or 'only the standard library'}"
    )
    return 0


def _left(out: Path) -> str:
    """What an interrupted run left behind, in words."""
    if not out.is_dir():
        return "nothing was written"
    return f"every file in {out} is as it was or complete (experiments that had finished are in place)"


def _quiet_dask_logs() -> None:
    """On the command line, Dask's own log records (a lost scheduler logs several tracebacks while
    its client tries to reconnect) are silenced below CRITICAL: a lost cluster is reported in one
    line by ``main``, and a task's own error still ends the run with its traceback."""
    import logging

    try:
        import distributed  # noqa: F401  (configures its loggers on import; set the levels after that)
    except ImportError:
        return  # reproduce() says how to install it
    for name in [
        n for n in logging.root.manager.loggerDict if n == "distributed" or n.startswith("distributed.")
    ]:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> int:
    """The command line: ``reproduce`` and ``copy`` (``--help`` lists their options).

    Parameters
    ----------
    argv : list of str or None
        The arguments after the program name (None: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (0 on success).
    """
    if argv is not None and (
        not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv)
    ):
        raise TypeError(f"argv must be a list of strings (command-line arguments), got {argv!r}")
    parser = argparse.ArgumentParser(
        prog="python -m bandit_unlearning", description=__doc__.splitlines()[0].replace("``", "")
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "reproduce",
        help="regenerate paper figures and tables",
        description="Regenerate paper figures and tables: DIR/NAME.json, .png, .pdf and "
        "DIR/summary.md, each file written atomically.",
    )
    rep.add_argument(
        "names", nargs="+", metavar="NAME", help=f"experiments: {', '.join(sorted(EXPERIMENTS))}, or all"
    )
    rep.add_argument(
        "--out",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="output folder, created if missing (default: results)",
    )
    rep.add_argument(
        "--scale",
        choices=("paper", "quick"),
        default="paper",
        help="paper: the papers' sizes (about a minute and a half for all on two cores); quick: "
        "small sizes for a first look, in seconds (default: paper)",
    )
    rep.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="master seed, >= 0; the results depend only on it (default: 0)",
    )
    rep.add_argument(
        "--workers", type=int, default=1, metavar="N", help="worker processes, >= 1 (default: 1)"
    )
    rep.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the sweeps on a Dask cluster: tcp://HOST:PORT of a running scheduler, or start one here "
        "with local (one worker process per core) or local:N (N processes); needs "
        "pip install -e '.[dask]'; not with --workers > 1 (default: none, run here)",
    )
    cp = sub.add_parser(
        "copy",
        help="copy one module with exactly the package files it needs",
        description="Copy MODULE (e.g. mab.unlearn) and the package modules it imports into "
        "DEST/NAME, importable as NAME (absolute imports rewritten); prints what "
        "else it needs (numpy, scipy).",
    )
    cp.add_argument(
        "module", metavar="MODULE", help="e.g. mab.unlearn, bandit_unlearning.exact.tree or mab/unlearn.py"
    )
    cp.add_argument("dest", metavar="DEST", help="folder to write into (created if missing)")
    cp.add_argument(
        "--name",
        default="bandit_unlearning",
        help="package name of the copy; DEST/NAME must not exist (default: bandit_unlearning)",
    )
    args = parser.parse_args(argv)
    if args.command == "copy":
        return _copy(args, cp)
    if args.workers < 1:
        rep.error("--workers must be >= 1")
    if args.seed < 0:
        rep.error("--seed must be >= 0")
    names = sorted(EXPERIMENTS) if "all" in args.names else args.names
    if args.scheduler is not None:
        _quiet_dask_logs()
    try:
        reproduce(names, args.out, args.scale, args.seed, args.workers, args.scheduler)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not break the clean exit
        rep.exit(130, f"{rep.prog}: interrupted; {_left(args.out)}\n")
    except ValueError as err:
        rep.error(str(err))
    except ImportError as err:  # Dask missing for --scheduler
        if args.scheduler is None or "(--scheduler)" not in str(err):
            raise
        rep.error(str(err))
    except ConnectionError as err:  # the --scheduler address could not be reached
        if args.scheduler is None or "(--scheduler)" not in str(err):
            raise
        rep.exit(1, f"{rep.prog}: error: {err}\n")
    except (concurrent.futures.CancelledError, OSError, TimeoutError) as err:
        if args.scheduler is None:  # not a cluster problem: the real traceback
            raise
        rep.exit(
            1,
            f"{rep.prog}: error: the Dask cluster at {args.scheduler} stopped answering during the run "
            f"({type(err).__name__}); {_left(args.out)}\n",
        )
    return 0
