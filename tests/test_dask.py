"""Sweeps on a Dask cluster give bit-identical results to the serial run.

A ``LocalCluster`` of 2 single-threaded worker processes (module fixture, always closed) runs a Paper A
sweep, an RL sweep and the command line's ``--scheduler tcp://...`` path; every result is compared
with the serial run exactly (the JSON text, whose floats are written with round-trip precision), and
Dask's task stream shows the tasks really ran on the cluster's workers.  The figures are not drawn
(``Figure.savefig``/``tight_layout`` are no-ops here): they are made from the compared numbers and
only cost time.  Skipped when Dask's distributed scheduler is not installed (it is in the ``dev`` extra).
"""

from __future__ import annotations

import json
import math
import os
import socket

import pytest

distributed = pytest.importorskip(
    "distributed", reason="Dask's distributed scheduler is not installed (pip install -e '.[dask]')"
)

import matplotlib.figure  # noqa: E402

from bandit_unlearning import cli  # noqa: E402
from bandit_unlearning.experiments import rl_paper, runner  # noqa: E402
from bandit_unlearning.experiments.paper_a import ProtocolA, panels, run_experiment  # noqa: E402

INF = math.inf
# The RL sweep at its smallest: every task kind of reproduce_rl (regret on both environments, the
# unlearning cost, the lower bound), 8 tasks of well under a second each.
TINY_RL = {
    "regret": {
        "environments": [{"name": "riverswim", "H": 5, "T": 200}, {"name": "gridworld", "H": 5, "T": 16}],
        "rhos": [INF, 1.0],
        "bonus_scales": [1.0],
        "populations": 1,
        "n_points": 5,
    },
    "cost": {
        "environment": {"name": "riverswim", "H": 5},
        "Ts": [32],
        "rhos": [0.3, 1.0],
        "n_runs": 1,
        "requests_per_run": 3,
    },
    "lower_bound": {
        "n_bandits": 2,
        "n_actions": 2,
        "H": 2,
        "gap": 0.25,
        "T": 200,
        "rhos": [INF, 1.0],
        "bonus_scales": [1.0],
        "populations": 1,
    },
}
# reproduce_rl's units of work for TINY_RL: one batch per regret environment, one for the lower bound,
# one per (T, rho) of the deletion cost.
RL_TASKS = 8  # 5 units of work and the 3 figures (drawn where the tasks run, returned as bytes)
# Exported as 1 by the Makefile.  Spawned workers inherit them (Dask's nanny sets 1 only where unset);
# the fixture also passes them explicitly, and a test checks what the workers see.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.fixture(scope="module")
def cluster():
    # The workers get this process's BLAS/OpenMP thread settings (the Makefile exports them as 1).
    env = {name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ}
    # dashboard_address=":0": any free port (another test process may hold the default 8787).
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0", env=env
    ) as local:
        yield local


@pytest.fixture
def client(cluster):
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def no_drawing(monkeypatch):
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(matplotlib.figure.Figure, "tight_layout", lambda self, *args, **kwargs: None)


def ran_on_cluster(stream) -> int:
    """The number of tasks the cluster's workers ran, from Dask's task stream."""
    return sum(1 for t in stream.data if t["worker"] is not None)


def test_workers_have_this_process_thread_settings(client):
    for name in THREAD_VARIABLES:
        seen = client.run(os.getenv, name)  # {worker address: value}
        assert len(seen) == 2 and set(seen.values()) == {os.environ.get(name, "1")}


def test_paper_a_sweep_on_cluster_is_bit_identical(client):
    protocol = ProtocolA.quick()
    serial = run_experiment("figure3", protocol, seed=5, progress=False)
    with distributed.get_task_stream(client) as stream:
        on_cluster = run_experiment(
            "figure3", protocol, seed=5, executor=client.get_executor(pure=False), progress=False
        )
    models = {pl["model"] for pl in panels("figure3", protocol)}
    assert ran_on_cluster(stream) == len(models) * protocol.n_runs  # every run, all on the workers
    assert json.dumps(on_cluster) == json.dumps(serial)
    # the comparison can fail: another seed changes the numbers
    assert json.dumps(run_experiment("figure3", protocol, seed=6, progress=False)) != json.dumps(serial)


def test_rl_sweep_on_cluster_is_bit_identical(client, tmp_path, no_drawing):
    serial = rl_paper.reproduce_rl(tmp_path / "serial", "quick", seed=3, protocol=TINY_RL)
    with distributed.get_task_stream(client) as stream:
        with runner.use_executor(client.get_executor(pure=False)):  # reproduce_rl's run_tasks uses it
            on_cluster = rl_paper.reproduce_rl(tmp_path / "dask", "quick", seed=3, protocol=TINY_RL)
    assert ran_on_cluster(stream) == RL_TASKS
    assert json.dumps(on_cluster, allow_nan=False) == json.dumps(serial, allow_nan=False)
    for name in ("rl_regret", "rl_unlearning_cost", "rl_lower_bound"):
        assert (tmp_path / "dask" / f"{name}.json").read_text() == (
            tmp_path / "serial" / f"{name}.json"
        ).read_text()


def test_cli_scheduler_address_is_bit_identical(cluster, tmp_path, no_drawing, capsys):
    def run(out, *extra):
        assert (
            cli.main(["reproduce", "table2", "--scale", "quick", "--seed", "2", "--out", str(out), *extra])
            == 0
        )
        result = json.loads((out / "table2.json").read_text())
        assert result.pop("wall_time_s") >= 0  # the only field that may differ
        return result

    serial = run(tmp_path / "serial")
    on_cluster = run(tmp_path / "dask", "--scheduler", cluster.scheduler_address)
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    assert json.dumps(on_cluster) == json.dumps(serial)
    out = capsys.readouterr().out
    assert out.count("table2: wrote") == 2 and out.count("reproduce: 1 experiment(s) in ") == 2


def test_local_cluster_is_started_and_closed(monkeypatch):
    started = []

    class Recorded(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append((self, kwargs))

    monkeypatch.setattr(distributed, "LocalCluster", Recorded)
    with runner.dask_executor("local:1") as ex:
        assert runner.run_tasks(abs, [-3, 1, -2], ex, progress=False) == [3, 1, 2]
        ((local, kwargs),) = started
        assert local.status.name == "running" and len(local.workers) == 1
        assert kwargs["processes"] is True and kwargs["threads_per_worker"] == 1
    assert local.status.name == "closed"


def test_unreachable_scheduler_is_refused_before_writing(tmp_path, capsys):
    import dask

    with socket.socket() as free:  # a loopback port nobody listens on
        free.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{free.getsockname()[1]}"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(SystemExit) as exit_:
            cli.main(
                [
                    "reproduce",
                    "table2",
                    "--scale",
                    "quick",
                    "--out",
                    str(tmp_path / "r"),
                    "--scheduler",
                    address,
                ]
            )
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "scheduler (--scheduler)" in err and "could not be reached" in err and address in err
    assert not (tmp_path / "r").exists()
