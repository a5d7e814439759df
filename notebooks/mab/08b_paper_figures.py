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

# %% [markdown]
# Helpers of the drawing: a method's label and line style, a panel's title, and the groups of methods
# whose curves coincide (drawn on top of each other, so the panel names them).

# %% tags=["export:bandit_unlearning.experiments.plots_a"]
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
# above, with error bars of one standard error over the independent runs.  Figure 3 compares a few
# fixed configurations, so its panels are grouped bars, one group per configuration:

# %% tags=["export:bandit_unlearning.experiments.plots_a"]
def _bar_figure(pls, protocol: dict, experiment: str, ylabel: str, title: str, errorbars: bool):
    """Figure 3's grouped bars: one panel per source-arm case, one group of bars per configuration."""
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
        ax.set_title(_column_title(pl, protocol, experiment), fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig

# %% [markdown]
# Every other experiment is a grid of line panels: one row per swept quantity ($N$, $k$ or $\gamma$),
# one column per data model and case, the methods drawn slightly apart along $x$ so that coinciding
# curves stay visible (and named in the panel when they coincide exactly).

# %% tags=["export:bandit_unlearning.experiments.plots_a"]
def plot_experiment(result: dict, errorbars: bool = True):
    """One figure for ``result``: a grid of line panels (Figures 1, 2; Table 2) or grouped bars
    (Figure 3), with one shared legend and the fixed settings in the titles.  The y axis is the mean
    sub-optimality mu(a*) - mu(a_hat') of the arm chosen after unlearning; error bars are one standard
    error over the independent runs.

    Parameters
    ----------
    result : dict
        What ``run_experiment`` returns (or its JSON, loaded).
    errorbars : bool
        Whether to draw error bars of one standard error.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown, not saved).
    """
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
        return _bar_figure(pls, protocol, result["experiment"], ylabel, title, errorbars)
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
# ## 4. Table 2's unstated $k$: which $k$ reproduces the paper's row?
#
# The paper does not say how many points Table 2 deletes; the project uses $k = N/2$.  With it,
# Algorithm 2's entries at $N \le 1100$ match the paper's, but not the paper's 0 for Algorithm 2 at
# $N = 1200$, nor its 0.0008 for Algorithm 6 at $N = 900$ (our Algorithm 6 is 0 everywhere).  The cell
# runs the Table 2 protocol (the engine of A8a: $\mathcal M_d$, $C^\star = 1.3$, hard case,
# $\gamma = 0.5$, threshold $1.3\gamma_0$) at $N \in \{900, \dots, 1200\}$ for $k$ a fraction of $N$ and
# for fixed $k$, with 400 trajectories $\times$ 5 requests $\times$ 4 runs = 8,000 replicates per point
# (the paper: 10,000).

# %%
from bandit_unlearning.experiments.protocol import simulate_trajectories

t2_protocol, t2_n = ProtocolA.quick(n_trajectories=400), [900, 1000, 1100, 1200]
t2_rules = [("N/4", lambda n: n // 4), ("N/3", lambda n: n // 3), ("N/2", lambda n: n // 2),
            ("0.6 N", lambda n: int(0.6 * n)), ("2N/3", lambda n: 2 * n // 3)] + \
           [(f"k = {k}", lambda n, k=k: k) for k in (100, 200, 400, 500, 550, 575, 600, 625)]
t2 = {name: np.zeros((4, len(t2_n), 2)) for name, _ in t2_rules}
for run in range(4):
    t2_rng = np.random.default_rng([2026, 2, run])
    t2_traj = simulate_trajectories(t2_protocol.means, "Md", t2_n, t2_protocol.n_trajectories, t2_rng, c_star=1.3)
    for name, rule in t2_rules:
        for i, n in enumerate(t2_n):
            r = evaluate(t2_traj, i, [0], rule(n), 0.5, ["Alg6", "Alg2"], t2_rng, t2_protocol)
            assert r["_excluded"] == 0
            t2[name][run, i] = r["Alg6"], r["Alg2"]
print(f"{'k':>9} | Algorithm 6 at N = {', '.join(map(str, t2_n)):18s} | Algorithm 2 at N = {', '.join(map(str, t2_n))}")
for name, vals in t2.items():
    mean = vals.mean(axis=0)
    print(f"{name:>9} | " + "  ".join(f"{v:.4f}" for v in mean[:, 0]) + "  | " + "  ".join(f"{v:.4f}" for v in mean[:, 1]))
# each rule judged as section 5 judges the paper's numbers: within 2 standard errors (4 runs) + 0.00005
from bandit_unlearning.experiments.paper_numbers import PAPER_A_STATEMENTS, statement_verdict

st_alg2, st_alg6 = (next(s for s in PAPER_A_STATEMENTS if s.id == i) for i in ("table2-alg2-1200", "table2-alg6-900"))
t2_verdicts = {}
for name, vals in t2.items():
    mean, err = vals.mean(axis=0), vals.std(axis=0, ddof=1) / np.sqrt(len(vals))
    t2_verdicts[name] = (statement_verdict(st_alg6, {"Alg6": mean[0, 0]}, {"Alg6": err[0, 0]})["verdict"],
                         statement_verdict(st_alg2, {"Alg2": mean[3, 1]}, {"Alg2": err[3, 1]})["verdict"])
both = [name for name, v in t2_verdicts.items() if v == ("within tolerance", "within tolerance")]
for what, i in (("Algorithm 6 at N = 900 (paper 0.0008)", 0), ("Algorithm 2 at N = 1200 (paper 0)", 1)):
    print(f"{what}: within tolerance for", [name for name, v in t2_verdicts.items() if v[i] == "within tolerance"])
print("k reproducing both:", both or "none")
assert not both
assert t2_verdicts["k = 550"][1] == "within tolerance" and t2_verdicts["N/2"] == ("differs", "differs")
# where Algorithm 2 switches to rollback at N = 1200: gamma = 0.5 >= 1.3 gamma0(N(a*) - k), N(a*) ~ N / 1.3
n_star = round(1200 / 1.3)
switch = max(k for k in range(1, n_star) if 1.3 * gamma0_paper(n_star, k, np.log(5 * 1200)) <= 0.5)
print(f"N = 1200, N(a*) = {n_star}: Algorithm 2 rolls back (loss ~ 0) for k <= {switch}, "
      f"noises a* above it (k = N/2 = 600 sits above)")

# %% [markdown]
# **Reading the sweep.** Algorithm 2's 0 at $N = 1200$ needs $k$ small enough for the rollback branch
# there (the threshold is $k = 594$ at $N(a^\star) = 923 \approx N/1.3$ exactly; $N(a^\star)$ varies by about
# $\pm 15$ between replicates, so the loss leaves 0 already near $k = 575$; e.g. a fixed $k = 550$ reproduces all of
# Algorithm 2's row: about 0.011-0.012 at $N \le 1100$, 0 at 1200), while Algorithm 6's 0.0008 at
# $N = 900$ needs $k$ so large that the best arm's remaining count is close to another arm's
# ($k \approx 590$-600 at $N = 900$: 0 at 575, about 0.0015 at 600).  The two intervals do not meet, and
# $k$ as a fraction of $N$ fares worse (Algorithm 6 turns positive only from $2N/3$, where Algorithm 2
# is about 0.012 at every $N$).  No single $k$ — fixed or proportional to $N$ — reproduces the paper's row;
# the differences (0.0008 against 0, and about 0.007 against 0 at $k = N/2$) are many standard errors
# at 8,000 replicates, so Monte Carlo error does not explain them either.  The project keeps
# $k = N/2$ and lists the entries as differing (errata E21, and section 5).

# %% [markdown]
# ## 5. The paper's numbers beside ours
#
# `bandit_unlearning.experiments.paper_numbers` lists the quantitative statements of Paper A's
# Section 5 that the project holds — Table 2's entries quoted above and Figure 3's "consistently
# competitive" for Algorithm 7 — **not necessarily every number of the paper** (the project does not
# hold the paper's full tables), and gives each the reproduced value and a verdict: a value is within
# tolerance when it lies within two standard errors of the run plus half a unit of the paper's last
# printed digit; "competitive" means at most 1.25 times the best compared method.  `summary.md` of
# `python -m bandit_unlearning reproduce` ends with this table at the scale it ran.  Here, the
# quick-scale runs of section 3:

# %%
from bandit_unlearning.experiments.paper_numbers import compare_with_paper, statement_verdict, PAPER_A_STATEMENTS

rows = compare_with_paper(results.values())
for r in rows:
    print(f"{r['where']:9s} {r['statement'][:60]:60s} paper {r['paper']:>11s}  ours {r['ours']:>40s}  {r['verdict']}")
assert [r["verdict"] for r in rows] == ["differs", "differs", "differs"]
# the verdict logic has teeth: the paper's own numbers pass it, and a competitive Algorithm 7 would too
st = PAPER_A_STATEMENTS
assert statement_verdict(st[1], {"Alg6": 0.0008}, {"Alg6": 0.0})["verdict"] == "within tolerance"
assert statement_verdict(st[2], {"Alg7": 0.006, "Rollback": 0.0059, "Gaussian": 0.015}, {})["verdict"] == "competitive"

# %% [markdown]
# All three differ, each for a stated reason: Table 2's $k$ (section 4), and Figure 3's hard case at
# $(2000, 0.5, 80)$, where the experiments' threshold $1.3\gamma_0' = 0.52$ exceeds $\gamma = 0.5$, so
# Algorithm 7 noises the best arm and loses to Rollback by about a factor of two (0.0126 against
# 0.0059 at the paper's scale, chapter A7 §8) — against the paper's "consistently competitive".

# %% [markdown]
# ## Summary
# - `bandit_unlearning.experiments.protocol` (chapter A8a): trajectories with prefix sharing and O(1) requests.
# - `bandit_unlearning.experiments.paper_a` (chapter A8a): `ProtocolA`, `panels`, `run_experiment` (any executor),
#   `request_losses`/`evaluate` (the vectorised engine); every method is the package's own mechanism.
# - `bandit_unlearning.experiments.plots_a`: `plot_experiment` (self-explaining figures: shared legend,
#   fixed settings in the titles), `METHOD_LABELS` and `METHOD_DESCRIPTIONS` (the methods in words).
# - Paper scale: `python -m bandit_unlearning reproduce all` (or `make reproduce`) writes
#   `results/<name>.json|png|pdf` and `results/summary.md`.
