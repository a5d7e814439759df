"""Replay varied deletion requests on the Open Bandit Dataset log through ``mab.unlearn.unlearn``.

What a practitioner sends: rows of the served arm, rows of another arm, random rows, a user segment
(a block of consecutive rounds) and the rows shown at one position, with k from 1 to 200 (log-uniform).
Each request goes through the four methods (adaptive, gaussian with the paper's 3k/2N sensitivity,
mixing with eta = 1/2, rollback) at (epsilon, delta) = (1, 1e-5), analytic calibration, twice: with
``fallback="refuse"`` (the behaviour before the fallback existed: refuse what the method cannot
certify) and with the default ``fallback="rollback"``.  For every request served it records the
machine-readable ``reason`` and ``reference``; for every request served by falling back it checks that
the output equals retraining on the remaining rows (rollback is exact: the same arm and the same
score vector as ``fit_lcb(D minus U)``).

Usage: ``python benchmarks/obd_request_replay.py [--requests 600] [--seed 20261201]``; writes
``benchmarks/measured/obd_request_replay.json``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from bandit_unlearning.mab.data import OfflineDataset
from bandit_unlearning.mab.lcb import fit_lcb
from bandit_unlearning.mab.mechanisms import DeletionRequest
from bandit_unlearning.mab.unlearn import UnlearnOptions
from bandit_unlearning.protocol import unlearn

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("adaptive", "gaussian", "mixing", "rollback")
KINDS = ("served arm", "another arm", "random rows", "user segment", "one position")


def load_obd():
    table = np.loadtxt(ROOT / "data" / "obd_random_all.csv", delimiter=",", skiprows=1, dtype=np.int64)
    rounds, items, positions, clicks = table.T
    labels, arms = np.unique(items, return_inverse=True)
    return OfflineDataset(arms, clicks.astype(float), labels.size), rounds, positions


def draw_request(kind: str, k: int, dataset, rounds, positions, served: int, rng) -> np.ndarray:
    """Row positions of one request of ``kind`` with at most ``k`` rows (fewer when the pool is smaller)."""
    arms = dataset.arms
    if kind == "served arm":
        pool = np.flatnonzero(arms == served)
    elif kind == "another arm":
        others = np.setdiff1d(np.unique(arms), [served])
        pool = np.flatnonzero(arms == rng.choice(others))
    elif kind == "random rows":
        pool = np.arange(len(dataset))
    elif kind == "user segment":
        start = int(rng.integers(0, len(dataset) - k + 1))
        order = np.argsort(rounds, kind="stable")
        return np.sort(order[start : start + k])
    else:
        pool = np.flatnonzero(positions == rng.choice(np.unique(positions)))
    return np.sort(rng.choice(pool, size=min(k, pool.size), replace=False))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "measured" / "obd_request_replay.json"))
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    dataset, rounds, positions = load_obd()
    state = fit_lcb(dataset)
    tau = state.tau  # fixed at fit: retraining uses the same tau
    out = {
        "requests": args.requests,
        "seed": args.seed,
        "epsilon": 1.0,
        "delta": 1e-5,
        "calibration": "analytic",
        "rows": len(dataset),
        "arms": int(dataset.n_arms),
        "methods": {},
    }
    requests = []
    for _ in range(args.requests):
        kind = KINDS[int(rng.integers(len(KINDS)))]
        k = int(np.clip(np.round(np.exp(rng.uniform(0, np.log(200)))), 1, 200))
        requests.append((kind, draw_request(kind, k, dataset, rounds, positions, state.arm, rng)))
    for method in METHODS:
        extra = {"eta": 0.5} if method == "mixing" else {}
        base = UnlearnOptions(method=method, epsilon=1.0, delta=1e-5, calibration="analytic", **extra)
        refused_before, reasons, references, by_kind = 0, Counter(), Counter(), Counter()
        fallback_exact, fallback_checked, messages = 0, 0, Counter()
        for kind, idx in requests:
            request = DeletionRequest.from_indices(dataset, idx)
            try:
                unlearn(state, request, options=base.replace(fallback="refuse"), rng=rng)[1]
            except ValueError as error:
                refused_before += 1
                by_kind[kind] += 1
                messages[str(error).split(":")[0][:90]] += 1
            result = unlearn(state, request, options=base, rng=rng)[1]  # the default: never refused
            reasons[result.reason] += 1
            references[result.reference] += 1
            if result.fell_back:
                keep = np.setdiff1d(np.arange(len(dataset)), idx)
                retrained = fit_lcb(
                    OfflineDataset(dataset.arms[keep], dataset.rewards[keep], dataset.n_arms), tau
                )
                fallback_checked += 1
                fallback_exact += bool(
                    result.arm == retrained.arm and np.array_equal(result.scores, retrained.scores)
                )
        out["methods"][method] = {
            "refused_with_fallback_refuse": refused_before,
            "refused_by_kind": dict(by_kind),
            "refusal_messages": dict(messages),
            "refused_with_default": 0,
            "reasons": dict(reasons),
            "references": dict(references),
            "fell_back": fallback_checked,
            "fallbacks_equal_to_retraining": fallback_exact,
        }
        assert fallback_exact == fallback_checked, (method, fallback_exact, fallback_checked)
        assert sum(reasons.values()) == args.requests
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    for method, row in out["methods"].items():
        print(
            f"{method:9s} refused before {row['refused_with_fallback_refuse']:4d} / {args.requests}, now 0; "
            f"reasons {row['reasons']}; references {row['references']}; "
            f"fallbacks equal to retraining {row['fallbacks_equal_to_retraining']}/{row['fell_back']}"
        )
    return out


if __name__ == "__main__":
    main()
