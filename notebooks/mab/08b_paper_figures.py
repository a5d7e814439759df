# ---
# jupyter:
#   bandit_unlearning:
#     export: bandit_unlearning.experiments.plots_a
# ---

# %% [markdown]
# # Chapter A8b — Paper A's experiments: figures, Algorithm 2's branch, reduced-scale runs
#
# *Paper A, Section 5: Figures 1–3 and Table 2.  Exports `bandit_unlearning.experiments.plots_a`; uses
# the protocol and engine of chapter [A8a](08a_paper_experiments.ipynb).  Paper scale:
# `make reproduce` or `python -m bandit_unlearning reproduce all`.*
#
# Chapter [A8a](08a_paper_experiments.ipynb) set out the paper's protocol (methods, cases, sweeps, and
# the choices the paper leaves open) and built the vectorised engine `run_experiment`.  This chapter
# turns its JSON into self-explaining figures (Section 1), shows where Algorithm 2 switches from
# noise to rollback at the experiments' defaults (Section 2, erratum E4), and runs every experiment
# of the paper at reduced scale (Section 3).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.experiments.paper_a import *  # noqa: F403  (the engine of chapter A8a)

# %% [markdown]
# ## 1. Figures from the JSON of `run_experiment`
#
# One figure per experiment, from the JSON layout of `run_experiment` alone (so the CLI draws the
# paper-scale figures with the same code): first the names and styles of the methods, so that lines
# that coincide stay visible.

# %% tags=["export:bandit_unlearning.experiments.plots_a"]
"""Figures of Paper A's experiments from the JSON layout of ``run_experiment``.

Each figure explains itself: the title names the experiment, the scale (trajectories x requests x
runs) and what the error bars are; each row says which of N, k, gamma varies and the values of the
other two; each column says the data model and which arm the deletions come from; one legend, at the
top, names every method in words (``METHOD_LABELS``; ``METHOD_DESCRIPTIONS`` says what each does).
"""

import matplotlib.pyplot as plt
import numpy as np

from bandit_unlearning.checks import check_bool, check_instance

METHOD_LABELS = {
    "Oracle": "Oracle (no deletion)",
    "Gaussian": "Gaussian (always noise)",
    "Rollback": "Rollback (always retrain)",
    "Mixing": "Mixing (Alg. 4, half rolled back)",
    "Alg2": "Algorithm 2 (adaptive)",
    "Alg7": "Algorithm 7 (multi-source)",
    "Alg6": "Algorithm 6 (imitation)",
}
METHOD_DESCRIPTIONS = {
    "Oracle": "Algorithm 1 (LCB) on the original data, nothing deleted: the reference without deletion, "
              "not a floor (Rollback, which is retraining on the remaining data, can lie below it: in the easy "
              "case fewer samples of a worse arm widen its confidence radius and make the learner pick it less)",
    "Gaussian": "noise N(0, sigma^2), sigma = (3k / 2N(a0)) gamma, added to the source arm's score, "
                "whatever the learner chose",
    "Rollback": "the deleted samples removed from the stored statistics (identical to retraining on D \\ U)",
    "Mixing": "Algorithm 4: k' = eta k of the deleted samples rolled back, noise for the other k - k'",
    "Alg2": "Algorithm 2: noise if the learner chose the source arm and gamma < 1.3 gamma0, else rollback",
    "Alg7": "Algorithm 7: Algorithm 2's rule per source arm (noise on at most the learner's arm)",
    "Alg6": "Algorithm 6: the most frequent arm, unlearned by subtracting the deleted counts (exact)",
}
# colour, marker, line style, marker size, hollow marker: lines that coincide stay visible
_STYLE = {"Oracle": ("k", "o", "--", 7, True), "Gaussian": ("C0", "s", "-", 4, False),
          "Rollback": ("C1", "^", "-.", 8, True), "Mixing": ("C2", "D", ":", 4, False),
          "Alg2": ("C3", "x", "-", 6, False), "Alg7": ("C3", "x", "-", 6, False),
          "Alg6": ("C4", "P", "-", 6, False)}
_ETA_MARKERS = "osD^vP"
_VARY = {"N": "N (dataset size)", "k": "k (deleted samples)", "gamma": r"$\gamma$ (noise scale)"}


def _label(name, protocol):
    if name.startswith("eta="):
        extreme = {"0": " (all noise)", "1": " (all rollback)"}.get(name[4:], "")
        return f"Mixing, $\\eta = k'/k$ = {name[4:]}{extreme}"
    if name == "Mixing" and "mixing_eta" in protocol:
        return f"Mixing (Alg. 4, k' = {protocol['mixing_eta']:g} k)"
    return METHOD_LABELS.get(name, name)


def _style(name, i, n):
    if name in _STYLE:
        return _STYLE[name]
    if name.startswith("eta="):
        return plt.cm.viridis(i / max(n - 1, 1)), _ETA_MARKERS[i % len(_ETA_MARKERS)], "-", 5, False
    return f"C{i}", "o", "-", 5, False


def _column_title(pl, protocol, experiment):
    c_star = protocol.get("table2_c_star" if experiment == "table2" else "c_star")
    model = (r"$\mathcal{M}_f$: fixed equal counts" if pl["model"] == "Mf"
             else r"$\mathcal{M}_d$: arms drawn i.i.d." + (f", $C^\\star$ = {c_star:g}" if c_star else ""))
    means, sources = protocol.get("means"), pl.get("sources", [])
    if means:
        arms = " and ".join(f"{a} ($\\mu$ = {means[a]:g}{', the best' if means[a] == max(means) else ''})"
                            for a in sources)
    else:
        arms = " and ".join(map(str, sources))
    return f"{model}\n{pl.get('case', '')}: delete from arm{'s' if len(sources) > 1 else ''} {arms}"


def _fixed(vary, protocol, experiment):
    n, k, g = protocol.get("n"), protocol.get("k"), protocol.get("gamma")
    if experiment == "table2" and "table2_k_fraction" in protocol:
        k = f"{protocol['table2_k_fraction']:g} N"
    fixed = {"N": f"N = {n}", "k": f"k = {k}", "gamma": f"$\\gamma$ = {g:g}" if g is not None else None}
    return ", ".join(v for key, v in fixed.items() if key != vary and v and "None" not in v)


def _coinciding(methods):
    """Groups of two or more methods whose curves are identical (drawn on top of each other)."""
    groups = []
    for name, ys in methods.items():
        for group in groups:
            if np.array_equal(methods[group[0]], ys):
                group.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def _scale(result):
    p = result.get("protocol", {})
    size = (f"{p['n_trajectories']} trajectories x {p['n_requests']} requests x {p['n_runs']} runs"
            if {"n_trajectories", "n_requests", "n_runs"} <= set(p) else "")
    return f"{result['scale']} scale" + (f": {size}" if size else "") + f", seed {result['seed']}"


# %% [markdown]
# The figure: one grid of line panels per experiment (grouped bars for Figure 3), in the styles
# above, with error bars of one standard error over the independent runs.

# %% tags=["export:bandit_unlearning.experiments.plots_a"]
def plot_experiment(result: dict, errorbars: bool = True):
    """One figure for ``result``: a grid of line panels (Figures 1, 2; Table 2) or grouped bars
    (Figure 3), with one shared legend and the fixed settings in the titles.  The y axis is the mean
    sub-optimality mu(a*) - mu(a_hat') of the arm chosen after unlearning; error bars are one standard
    error over the independent runs.  Returns the matplotlib figure."""
    check_instance(result, dict, "result")
    check_bool(errorbars, "errorbars")
    missing = [key for key in ("experiment", "panels", "scale", "seed") if key not in result]
    if missing:
        raise ValueError(f"result must be run_experiment's output; missing keys {missing}")
    if not isinstance(result["panels"], list) or not result["panels"] or not all(
            isinstance(pl, dict) and {"x", "methods", "stderr", "model"} <= set(pl) for pl in result["panels"]):
        raise ValueError("result['panels'] must be a non-empty list of panels (dicts with x, methods, stderr, model)")
    pls, protocol = result["panels"], result.get("protocol", {})
    ylabel = r"sub-optimality $\mu(a^\star) - \mu(\hat a')$"
    bars = "error bars: $\\pm 1$ standard error over runs" if errorbars else "no error bars"
    means = protocol.get("means")
    title = (f"Paper A, {result['experiment'].replace('figure', 'Figure ').replace('table', 'Table ')}: "
             f"mean sub-optimality after unlearning"
             + (f", {len(means)} Bernoulli arms with means {tuple(means)}" if means else "")
             + f"\n{_scale(result)}; {bars}")
    if result["experiment"] == "figure3":
        fig, axes = plt.subplots(1, len(pls), figsize=(6.5 * len(pls), 4.6), squeeze=False, layout="constrained")
        for ax, pl in zip(axes[0], pls):
            names = list(pl["methods"])
            width = 0.8 / len(names)
            xs = np.arange(len(pl["x"]))
            for i, name in enumerate(names):
                color, _, _, _, hollow = _style(name, i, len(names))
                ax.bar(xs + i * width, pl["methods"][name], width, yerr=pl["stderr"][name] if errorbars else None,
                       label=_label(name, protocol), color="white" if hollow else color, edgecolor=color,
                       hatch="//" if hollow else None, capsize=2)
            ax.set_xticks(xs + 0.4 - width / 2)
            ax.set_xticklabels([f"N={n}\n$\\gamma$={g:g}\nk={k}" for n, g, k in pl["x"]], fontsize=7)
            ax.set(ylabel=ylabel, xlabel=r"configuration (k deleted from each source arm)")
            ax.set_title(_column_title(pl, protocol, result["experiment"]), fontsize=9)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
        fig.suptitle(title, fontsize=10)
        return fig
    rows = sorted({pl["vary"] for pl in pls}, key=["N", "k", "gamma"].index)
    cols = list(dict.fromkeys((pl["model"], pl["case"]) for pl in pls))
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(max(3.9 * len(cols), 10), 3.0 * len(rows) + 1.2),
                             squeeze=False, layout="constrained")
    for pl in pls:
        r, c = rows.index(pl["vary"]), cols.index((pl["model"], pl["case"]))
        ax, log = axes[r][c], pl["vary"] == "gamma"
        x = np.asarray(pl["x"], dtype=float)
        names = list(pl["methods"])
        for i, name in enumerate(names):
            color, marker, ls, ms, hollow = _style(name, i, len(names))
            shift = (i - (len(names) - 1) / 2) * 0.025   # small sideways dodge, so coinciding curves stay apart
            xi = x * 10 ** shift if log else x + shift * (x.max() - x.min())
            ax.errorbar(xi, pl["methods"][name], yerr=pl["stderr"][name] if errorbars else None, color=color,
                        marker=marker, ms=ms, ls=ls, lw=1.3, capsize=2, label=_label(name, protocol),
                        mfc="none" if hollow else color, mew=1.2, zorder=3 + i)
        same = _coinciding(pl["methods"])
        if same:
            ax.text(0.98, 0.55, "identical:\n" + "\n".join(" = ".join(_label(m, protocol).split(" (")[0] for m in group)
                                                           for group in same),
                    transform=ax.transAxes, ha="right", va="center", fontsize=7,
                    bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.7"})
        if log:
            ax.set_xscale("log")
        fixed = _fixed(pl["vary"], protocol, result["experiment"])
        ax.set_xlabel(_VARY.get(pl["vary"], pl["vary"]) + (f"  [{fixed}]" if fixed else ""), fontsize=8)
        if c == 0:
            ax.set_ylabel(ylabel, fontsize=8)
        if r == 0:
            ax.set_title(_column_title(pl, protocol, result["experiment"]), fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3 if len(cols) < 3 else 6),
               fontsize=8)
    fixed = {"N": protocol.get("n"), "k": protocol.get("k"), r"$\gamma$": protocol.get("gamma")}
    if len(rows) > 1 and None not in fixed.values():
        title += (f"\neach row varies one of {', '.join(fixed)}, the others fixed at "
                  f"({', '.join(f'{v:g}' for v in fixed.values())})")
    title += ("\nthe methods are drawn slightly apart along the x axis (a sideways dodge, so that coinciding "
              "points stay visible): every point of a group belongs to the same x value")
    fig.suptitle(title, fontsize=10)
    return fig

# %% [markdown]
# ## 2. Which branch Algorithm 2 takes (erratum E4)
#
# With the experiments' threshold $1.3\gamma_0$ and $\gamma_0 = \tfrac43\sqrt{\pi L/(N(a_0) - k)}$,
# Algorithm 2 adds noise (when $\hat a = a_0$) iff $N(a_0) - k < \pi L (1.3 \cdot 4/3)^2/\gamma^2$:
# since $\gamma_0$ *shrinks* like $1/\sqrt N$, the Gaussian branch is taken for **small** $N$ and
# rollback for large $N$ — the opposite of the paper's prose in Section 4.1.  We implement the
# formula; here is where the switch happens at the experiments' defaults ($k = 80$, $\gamma = 0.5$,
# $\mathcal M_f$, $N(a_0) = N/5$):

# %%
from bandit_unlearning.mab.bounds import gamma0_paper

ns_grid = np.arange(500, 5001, 100)
thresholds = np.array([1.3 * gamma0_paper(n // 5, 80, np.log(5 * n)) for n in ns_grid])
assert np.all(np.diff(thresholds) < 0)                       # gamma0 decreases with N (E4)
switch = ns_grid[np.argmax(thresholds <= 0.5)]
print(f"1.3*gamma0 at N=1000: {thresholds[5]:.3f}, at N=5000: {thresholds[-1]:.3f}; "
      f"gamma = 0.5 takes the rollback branch from N = {switch} on")

# %% [markdown]
# ## 3. Reduced-scale runs of every experiment
#
# `ProtocolA.quick()` uses 40 trajectories and 2 runs (the paper: 200 and 10), so the curves are
# noisier than the paper's; the CLI runs the full protocol.  Two properties are checked: the JSON
# has the documented layout, and the result does not depend on the executor (a thread pool gives
# bit-identical numbers to the serial run, because each task seeds its own generator).

# %%
from concurrent.futures import ThreadPoolExecutor

quick = ProtocolA.quick()
start_time = time.perf_counter()
results = {name: run_experiment(name, quick, seed=1, progress=False, scale="quick") for name in EXPERIMENTS}
with ThreadPoolExecutor(2) as pool:
    again = run_experiment("figure3", quick, seed=1, executor=pool, progress=False, scale="quick")
assert again == results["figure3"]
for name, res in results.items():
    assert {"experiment", "scale", "seed", "protocol", "panels"} <= set(res)
    for pl in res["panels"]:
        assert {"id", "model", "case", "vary", "x", "methods", "stderr"} <= set(pl)
        assert all(len(v) == len(pl["x"]) for v in pl["methods"].values())
print({name: len(res["panels"]) for name, res in results.items()}, "panels")

# %%
def default_point(res, vary="N", x=3000):
    """Method -> value at one x of every panel that varies ``vary``."""
    rows = []
    for pl in res["panels"]:
        if pl["vary"] == vary and x in pl["x"]:
            i = pl["x"].index(x)
            rows.append((pl["id"], {m: round(v[i], 4) for m, v in pl["methods"].items()}))
    return rows


for pid, row in default_point(results["figure1"]):
    print(f"{pid:12}", row)

# %% [markdown]
# **How to read the figures.**  The y axis is the *sub-optimality* $\mu(a^\star) - \mu(\hat a')$: how much
# lower the mean reward of the arm chosen after unlearning is than that of the best arm (0 is
# perfect; here at most $0.10 - 0.02 = 0.08$), averaged over trajectories and deletion requests; error
# bars are $\pm 1$ standard error over the independent runs.  Each title says the scale (trajectories
# $\times$ requests $\times$ runs) and the fixed settings; each row varies one knob with the other two
# at the defaults $(N, k, \gamma) = (3000, 80, 0.5)$ — the dataset size $N$, the number $k$ of deleted
# samples, the noise scale $\gamma$ (noise $\sigma = \tfrac{3k}{2N(a_0)}\gamma$: larger $\gamma$ is more
# noise, i.e. a smaller $\varepsilon$).  Columns are the data model and the case:
# - $\mathcal M_f$: every arm has $N/5$ samples (round robin); $\mathcal M_d$: arms drawn i.i.d. from a
#   behaviour policy that gives the best arm probability $1/C^\star = 1/5$;
# - **hard**: the $k$ deleted samples come from the best arm $a^\star$ (arm 0) — noise on its score or
#   fewer of its samples can make the learner lose the right answer;
# - **easy**: they come from arm 2 (mean 0.06), a sub-optimal arm — rolling it back only widens that
#   arm's confidence radius, so the choice rarely changes, and Algorithm 2 never adds noise there
#   unless the learner chose arm 2.
#
# The methods, as the legend names them: **Oracle (no deletion)** — Algorithm 1 on the original data,
# the reference without deletion, not a floor (in the easy case Rollback can lie below it: fewer
# samples of a worse arm widen that arm's confidence radius, so the learner picks it less often);
# **Gaussian (always noise)** — noise on the source arm's score whatever the learner chose; **Rollback (always retrain)** — the deleted samples removed from the statistics,
# identical to retraining; **Mixing** — Algorithm 4, half of the deleted samples rolled back and noise
# for the rest; **Algorithm 2 (adaptive)** — noise only when the learner chose the source arm and
# $\gamma < 1.3\gamma_0$, rollback otherwise.  Curves that coincide exactly are named in a box inside
# the panel (in the easy $\mathcal M_f$ panels Rollback, Mixing and Algorithm 2 often coincide with the
# Oracle: the chosen arm rarely changes), and the methods are shifted slightly sideways so that
# overlapping markers stay visible (the figure's title says so).  `METHOD_DESCRIPTIONS` holds one sentence per method for other uses (the CLI's
# `summary.md`).

# %%
fig = plot_experiment(results["figure1"])
plt.show()

# %% [markdown]
# **Figure 2** is the hard case only, for mixing with a fraction $\eta = k'/k$ of the deleted samples
# rolled back and noise for the rest: $\eta = 0$ is the Gaussian mechanism, $\eta = 1$ is rollback.
# Theorem A.10 says the best $\eta$ is always an end point (chapter A5); the curves show the same.

# %%
fig = plot_experiment(results["figure2"])
plt.show()

# %% [markdown]
# **Figure 3** deletes $k$ samples from each of two arms under $\mathcal M_f$ (hard: arms 0 and 1, the
# best two; easy: arms 2 and 3), at the eight configurations of the paper, for Oracle, Rollback,
# Gaussian (noise on both source arms) and **Algorithm 7** (Algorithm 2's rule per source arm: noise at
# most on the learner's arm).  **Table 2** compares Algorithm 6 (imitation: the most frequent arm,
# unlearned exactly by subtracting counts) with Algorithm 2 under $\mathcal M_d$ with $C^\star = 1.3$,
# deleting $k = N/2$ samples of the best arm at $\gamma = 0.5$.

# %%
fig = plot_experiment(results["figure3"])
plt.show()
for pl in results["table2"]["panels"]:
    print("Table 2 (quick):", {m: [round(v, 4) for v in vals] for m, vals in pl["methods"].items()})

# %% [markdown]
# ## Summary
# - `bandit_unlearning.experiments.protocol` (chapter A8a): trajectories with prefix sharing and O(1) requests.
# - `bandit_unlearning.experiments.paper_a` (chapter A8a): `ProtocolA`, `panels`, `run_experiment` (any executor),
#   `request_losses`/`evaluate` (the vectorised engine); every method is the package's own mechanism.
# - `bandit_unlearning.experiments.plots_a`: `plot_experiment` (self-explaining figures: shared legend,
#   fixed settings in the titles), `METHOD_LABELS` and `METHOD_DESCRIPTIONS` (the methods in words).
# - Paper scale: `python -m bandit_unlearning reproduce all` (or `make reproduce`) writes
#   `results/<name>.json|png|pdf` and `results/summary.md`.
