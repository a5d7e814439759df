"""Accuracy of TV-stable disjoint LinUCB over rho on scikit-learn's bundled classification sets (chapter B12).

Each set becomes a contextual bandit by the supervised-to-bandit conversion (one arm per class, reward 1
for the right class): ``digits`` (1,797 rows, 10 classes; pixels centred, first 12 principal components),
``iris`` (150, 3), ``wine`` (178, 3), ``breast_cancer`` (569, 2) (features standardised, first 4 principal
components); contexts scaled into the unit ball, rows in a fixed random order.  For every
``rho in --rhos`` the noise is ``sigma = sigma_paper(rho, sqrt 2, T)`` (the chapter's calibration,
unchanged) and ``rho = inf`` (``sigma = 0``, non-private LinUCB, the same for both designs, one run)
and we report the accuracy (fraction of correct arms over the whole stream) of

* ``current``: this package's learner (shift ``2 c_t`` with the GOE spectral bound
  ``c_t = s_t (sqrt(2d) + sqrt(2 ln(3 K t (t+1) / delta)))``, radius
  ``alpha + S (sqrt(l2 + 3 c_t) - sqrt(l2)) + gamma_t / sqrt(l2 + c_t)``);
* ``previous``: the chapter's first design (Gordon's bound ``s_t (2 sqrt d + sqrt(2 ln(2 K t (t+1) / delta)))``,
  shift ``c_t``, radius ``alpha + S (sqrt(l2 + 2 c_t) - sqrt(l2)) + gamma_t / sqrt(l2)``);

beside the majority class's share.  The conversion (``pca_users``) and the loop (``set_accuracy``) are
the chapter's, imported from ``bandit_unlearning.experiments.linucb_sets``.
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
import platform  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import sklearn.datasets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bandit_unlearning.exact.linucb import LinUCBConfig  # noqa: E402
from bandit_unlearning.experiments.linucb_sets import pca_users, set_accuracy  # noqa: E402

SETS = {"digits": (12, False), "iris": (4, True), "wine": (4, True), "breast_cancer": (4, True)}


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
        users = pca_users(name, dim, standardise)  # the chapter's conversion and accuracy loop
        T, K = len(users), users[0].rewards.size
        cfg = LinUCBConfig(K, dim, alpha=0.5, l2=1.0)
        res = set_accuracy(users, cfg, rhos, a.reps, rng, previous_rhos=rhos, previous_reps=a.reps)
        non_private = float(res["non_private"].mean())
        entry = {
            "T": T,
            "K": K,
            "d": dim,
            "majority_class": res["majority"],
            "non_private": non_private,
            "by_rho": {},
        }
        for rho in rhos:
            cur = [float(r.mean()) for r in res["rewards"][rho]]
            prev = [float(r.mean()) for r in res["previous"][rho]]
            entry["by_rho"][f"{rho:g}"] = {
                "sigma": res["sigma"][rho],
                "current": _summary(cur),
                "previous": _summary(prev),
            }
            print(
                f"{name:>13} rho = {rho:5g} sigma = {res['sigma'][rho]:6.3f}: current {np.mean(cur):.3f} "
                f"+- {np.std(cur):.3f}, previous {np.mean(prev):.3f} (non-private {non_private:.3f}, "
                f"majority {res['majority']:.3f})",
                flush=True,
            )
        entry["by_rho"]["inf"] = {
            "sigma": 0.0,
            "current": _summary([non_private]),
            "previous": _summary([non_private]),
        }
        sets[name] = entry

    result = {
        "benchmark": "TV-stable disjoint LinUCB accuracy over rho (bandit_unlearning.exact.linucb), LightTree",
        "calibration": "sigma = sigma_paper(rho, sqrt 2, T) = sqrt(log2 T) / rho (B_0 = sqrt 2), unchanged",
        "alpha": 0.5,
        "l2": 1.0,
        "theta_bound": 1.0,
        "delta": 0.01,
        "reps": a.reps,
        "seed": a.seed,
        "sets": sets,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
        "machine": platform.machine(),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
