"""Accuracy of TV-stable disjoint LinUCB over rho on scikit-learn's bundled classification sets (chapter B12).

Each set becomes a contextual bandit by the supervised-to-bandit conversion (one arm per class, reward 1
for the right class): ``digits`` (1,797 rows, 10 classes; pixels centred, first 12 principal components),
``iris`` (150, 3), ``wine`` (178, 3), ``breast_cancer`` (569, 2) (features standardised, first 4 principal
components); contexts scaled into the unit ball, rows in a fixed random order.  For every
``rho in --rhos`` the noise is ``sigma = sigma_paper(rho, sqrt 2, T)`` (the chapter's calibration,
unchanged) and we report the accuracy (fraction of correct arms over the whole stream) of

* ``current``: this package's learner (shift ``2 c_t`` with the GOE spectral bound
  ``c_t = s_t (sqrt(2d) + sqrt(2 ln(3 K t (t+1) / delta)))``, radius
  ``alpha + S (sqrt(l2 + 3 c_t) - sqrt(l2)) + gamma_t / sqrt(l2 + c_t)``);
* ``previous``: the chapter's first design (Gordon's bound ``s_t (2 sqrt d + sqrt(2 ln(2 K t (t+1) / delta)))``,
  shift ``c_t``, radius ``alpha + S (sqrt(l2 + 2 c_t) - sqrt(l2)) + gamma_t / sqrt(l2)``);

beside non-private LinUCB (``sigma = 0``, the same for both designs) and the majority class's share.
``alpha = 0.5``, ``l2 = 1``, ``S = 1``, ``delta = 0.01``; ``--reps`` runs per (set, rho, design) with fresh
tree noise.  Usage: ``python benchmarks/linucb_accuracy.py [--out results/linucb_accuracy.json]
[--rhos 0.3,1,3,10,100] [--reps 5] [--seed 0]``
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import sklearn.datasets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.learner import PrefixSumLearner, train  # noqa: E402
from bandit_unlearning.exact.linucb import (  # noqa: E402
    SENSITIVITY_ZERO_DUMMY, LinUCBConfig, LinUCBModel, block_size, choose, classification_users, initial_model,
    linucb_learner, linucb_rewards, linucb_scores, linucb_statistics, noise_nodes, unit_ball, unpack,
)
from bandit_unlearning.exact.tree import sigma_paper  # noqa: E402

SETS = {"digits": (12, False), "iris": (4, True), "wine": (4, True), "breast_cancer": (4, True)}


def pca_users(name: str, dim: int, standardise: bool) -> tuple:
    """Rows of a bundled scikit-learn set as LinUCB users (as in chapter B12, section 4e)."""
    X, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
    X = X - X.mean(axis=0)
    if standardise:
        X = X / np.maximum(X.std(axis=0), 1e-12)
    Z = X @ np.linalg.svd(X, full_matrices=False)[2][:dim].T
    order = np.random.default_rng(11).permutation(len(y))
    return classification_users(unit_ball(Z[order] / np.linalg.norm(Z, axis=1).max()), y[order], int(y.max()) + 1)


def previous_learner(config: LinUCBConfig, sigma: float) -> PrefixSumLearner:
    """The chapter's first design (Gordon's bound, shift c_t, radius term gamma_t / sqrt(l2))."""
    K, d = config.n_arms, config.dim

    def oracle(user, t, model):
        arm = choose(linucb_scores(model, user.context))
        return linucb_statistics(arm, user.context, user.rewards[arm], K)

    def update(u, t, model):
        G, b = unpack(u, K, d)
        s_t = sigma * math.sqrt(noise_nodes(t))
        dev = math.sqrt(2 * math.log(2 * K * t * (t + 1) / config.delta))
        c, g = s_t * (2 * math.sqrt(d) + dev), s_t * (math.sqrt(d) + dev)
        Vinv = np.linalg.inv(G + (config.l2 + c) * np.eye(d))
        radius = config.alpha + config.theta_bound * (math.sqrt(config.l2 + 2 * c) - math.sqrt(config.l2)) \
            + g / math.sqrt(config.l2)
        return LinUCBModel((Vinv @ b[:, :, None])[:, :, 0], Vinv, radius, c)

    return PrefixSumLearner(d=K * block_size(d), sigma=sigma, oracle=oracle, update=update,
                            initial_model=initial_model(config), B=SENSITIVITY_ZERO_DUMMY)


def _summary(values) -> dict:
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else 0.0, "runs": v.tolist()}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "results" / "linucb_accuracy.json"))
    p.add_argument("--rhos", default="0.3,1,3,10,100")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    rhos = [float(r) for r in a.rhos.split(",")]
    rng = np.random.default_rng(a.seed)

    sets = {}
    for name, (dim, standardise) in SETS.items():
        users = pca_users(name, dim, standardise)
        T, K = len(users), users[0].rewards.size
        cfg = LinUCBConfig(K, dim, alpha=0.5, l2=1.0)
        majority = max(float(np.mean([u.rewards[k] for u in users])) for k in range(K))
        entry = {"T": T, "K": K, "d": dim, "majority_class": majority,
                 "non_private": float(linucb_rewards(train(linucb_learner(cfg, 0.0), users, rng)).mean()),
                 "by_rho": {}}
        for rho in rhos:
            sigma = sigma_paper(rho, SENSITIVITY_ZERO_DUMMY, T)
            cur = [linucb_rewards(train(linucb_learner(cfg, sigma), users, rng)).mean() for _ in range(a.reps)]
            prev = [linucb_rewards(train(previous_learner(cfg, sigma), users, rng)).mean() for _ in range(a.reps)]
            entry["by_rho"][f"{rho:g}"] = {"sigma": sigma, "current": _summary(cur), "previous": _summary(prev)}
            print(f"{name:>13} rho = {rho:5g} sigma = {sigma:6.3f}: current {np.mean(cur):.3f} +- {np.std(cur):.3f}, "
                  f"previous {np.mean(prev):.3f} (non-private {entry['non_private']:.3f}, majority {majority:.3f})",
                  flush=True)
        sets[name] = entry

    result = {
        "benchmark": "TV-stable disjoint LinUCB accuracy over rho (bandit_unlearning.exact.linucb), LightTree",
        "calibration": "sigma = sigma_paper(rho, sqrt 2, T) = sqrt(log2 T) / rho (B_0 = sqrt 2), unchanged",
        "alpha": 0.5, "l2": 1.0, "theta_bound": 1.0, "delta": 0.01, "reps": a.reps, "seed": a.seed,
        "sets": sets,
        "python": platform.python_version(), "numpy": np.__version__, "sklearn": sklearn.__version__,
        "machine": platform.machine(),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
