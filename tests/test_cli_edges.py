"""The command line at its edges: errors in one line with the subcommand's usage, help texts with
defaults, atomic results (an interrupt leaves every file as it was or complete, and no empty folder),
a summary that survives an unreadable result file, a dead Dask cluster in one line, and progress
while an experiment runs silently."""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bandit_unlearning import cli

ROOT = Path(__file__).resolve().parents[1]


# Several runs of `python -m bandit_unlearning ARGS` in one fresh interpreter, so that the runs below pay
# Python's start-up and the package's import once: each run does what `-m` does (runpy, as __main__,
# sys.argv set), with its stdout and stderr captured, its exit code the SystemExit's, and an uncaught
# exception printed as the interpreter prints it (a traceback, exit code 1).
_BATCH = """
import contextlib, io, json, runpy, sys, traceback
runs = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["-m", *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("bandit_unlearning", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            if not isinstance(stop.code, (int, type(None))):
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
    runs.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(runs))
"""

VALIDATION = (
    ["reproduce", "figure9"],
    ["reproduce", "lemma31", "--workers", "0"],
    ["copy", "mab.nothing", "x"],
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The command-line runs of the tests below (name -> CompletedProcess), in one subprocess; each
    test's files are in its own folder (name -> Path under "folders")."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("under_a_file", "truncated")}
    (folders["under_a_file"] / "a_file").write_text("x")
    (folders["truncated"] / "figure1.json").write_text('{"experiment": "figure1", "pan')
    quick = ["reproduce", "lemma31", "--scale", "quick", "--out"]
    todo = {
        "under_a_file": [*quick, str(folders["under_a_file"] / "a_file" / "sub")],
        **{f"validation{i}": args for i, args in enumerate(VALIDATION)},
        "help": ["--help"],
        "reproduce_help": ["reproduce", "--help"],
        "truncated": [*quick, str(folders["truncated"])],  # the only run that computes: last
    }
    done = subprocess.run(
        [sys.executable, "-c", _BATCH, json.dumps(list(todo.values()))],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {
        name: subprocess.CompletedProcess(["python", "-m", "bandit_unlearning", *args], code, out, err)
        for (name, args), (code, out, err) in zip(todo.items(), json.loads(done.stdout), strict=True)
    }
    return {**results, "folders": folders}


def test_out_under_a_file_is_one_clean_line_with_the_subcommand_usage(runs):
    done, tmp_path = runs["under_a_file"], runs["folders"]["under_a_file"]
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("usage: python -m bandit_unlearning reproduce ")
    assert "error: --out must be a folder" in done.stderr and "which is a file" in done.stderr
    assert (tmp_path / "a_file").read_text() == "x"


def test_validation_errors_print_the_subcommand_usage(runs):
    for i, args in enumerate(VALIDATION):
        done = runs[f"validation{i}"]
        assert done.returncode == 2 and "Traceback" not in done.stderr, args
        assert done.stderr.startswith(f"usage: python -m bandit_unlearning {args[0]} "), done.stderr


def test_help_has_defaults_and_no_markup(runs):
    top, rep = runs["help"].stdout, runs["reproduce_help"].stdout
    assert runs["help"].returncode == runs["reproduce_help"].returncode == 0
    assert "``" not in top + rep and "copy" in top
    for default in ("(default: paper)", "(default: 0)", "(default: 1)", "(default: results)"):
        assert default in " ".join(rep.split()), default


def test_a_truncated_result_file_does_not_stop_the_summary(runs):
    """A JSON file truncated by an interrupted run of an older version: the run succeeds, its summary
    names the file it skipped."""
    done, tmp_path = runs["truncated"], runs["folders"]["truncated"]
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "Lemma 3.1" in summary and "`figure1.json`" in summary and "Skipped files" in summary
    assert "skipping figure1.json" in done.stderr
    assert oct((tmp_path / "summary.md").stat().st_mode & 0o777) != oct(0o600)  # not mkstemp's private mode


def test_write_summary_skips_unreadable_files(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    path = cli.write_summary(tmp_path)
    assert "`broken.json`" in path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "broken.json",
        "summary.md",
    ]  # no temporary file left


def _interrupt(args, out: Path) -> subprocess.CompletedProcess:
    """Start reproduce, wait until an experiment is running, then press Ctrl-C (SIGINT to the group)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bandit_unlearning", "reproduce", *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
        # Ctrl-C's default action, even where pytest itself was started with SIGINT ignored (a job put in
        # the background by a non-interactive shell), which its children would inherit
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.is_dir() and any(p.name.startswith(f".staging-{proc.pid}-") for p in out.iterdir()):
            break
        time.sleep(0.05)
    time.sleep(1.0)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_ctrl_c_is_one_line_and_leaves_no_empty_folder(tmp_path):
    out = tmp_path / "new" / "deeper"
    done = _interrupt(["rl", "--scale", "quick", "--workers", "2"], out)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert (
        done.stderr.strip().splitlines()[-1]
        == "python -m bandit_unlearning reproduce: interrupted; nothing was written"
    )
    assert not (tmp_path / "new").exists()  # both folders it created are gone


def test_ctrl_c_leaves_the_old_files_as_they_were(tmp_path):
    old = {"experiment": "rl", "scale": "quick", "seed": 0, "panels": [], "note": "the previous run"}
    (tmp_path / "rl.json").write_text(json.dumps(old))
    (tmp_path / "rl_regret.png").write_bytes(b"previous figure")
    (tmp_path / ".staging-999999999-rl-stale").mkdir()  # left by a killed run: removed
    done = _interrupt(["rl", "--scale", "quick"], tmp_path)
    assert done.returncode == 130, done.stderr[-3000:]
    assert json.loads((tmp_path / "rl.json").read_text()) == old
    assert (tmp_path / "rl_regret.png").read_bytes() == b"previous figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rl.json", "rl_regret.png"]


def test_a_dead_dask_cluster_is_one_line(monkeypatch, capsys, tmp_path):
    def cancelled(*args, **kwargs):
        raise concurrent.futures.CancelledError()

    monkeypatch.setattr(cli, "reproduce", cancelled)
    with pytest.raises(SystemExit) as stop:
        cli.main(["reproduce", "table2", "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:8786"])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and len(err.strip().splitlines()) == 1
    assert "the Dask cluster at tcp://127.0.0.1:8786 stopped answering" in err and "CancelledError" in err
    # without --scheduler the same exception is not a cluster problem: its traceback is kept
    with pytest.raises(concurrent.futures.CancelledError):
        cli.main(["reproduce", "table2", "--out", str(tmp_path)])


def test_a_silent_experiment_reports_progress(capsys):
    with cli._heartbeat("figure1", every=0.05):
        time.sleep(0.3)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) >= 2 and all(line.startswith("figure1: still running (") for line in lines)


@pytest.mark.parametrize(
    "value, stderr, shown",
    [
        (0.0001234, 0.0000045, "0.0001234 ± 0.0000045"),  # was "0.0001 ± 0.0000"
        (0.0048, 0.0003, "0.00480 ± 0.00030"),
        (312.44, 5.1, "312.4 ± 5.1"),  # was "312.4400 ± 5.1000"
        (312.44, None, "312.4"),
        (0.00012, None, "0.0001200"),
        (1.5, 0.0, "1.500 ± 0"),
        (0.00108, 0.0000999, "0.00108 ± 0.00010"),  # an error that rounds up to the next decade
    ],
)
def test_summary_cells_show_significant_digits(value, stderr, shown):
    assert cli._cell(value, stderr) == shown


def test_a_scheduler_that_dies_mid_run_is_one_line(tmp_path):
    """A real cluster (a scheduler and one worker on 127.0.0.1), its scheduler killed while a sweep
    runs: one line on stderr (Dask's reconnect tracebacks silenced), exit code 1, nothing left."""
    pytest.importorskip("distributed")
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [
            dask,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dashboard-address",
            ":0",
            "--no-show",
        ],
        **quiet,
    )
    worker = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        worker = subprocess.Popen(
            [dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--dashboard-address", ":0"],
            **quiet,
        )
        out = tmp_path / "out"
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bandit_unlearning",
                "reproduce",
                "figure1",
                "--out",
                str(out),
                "--scheduler",
                address,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            if out.is_dir() and any(p.name.startswith(".staging-") for p in out.iterdir()):
                break
            time.sleep(0.1)
        time.sleep(2.0)
        assert run.poll() is None, "the run ended before the scheduler was stopped"
        scheduler.kill()
        scheduler.wait()
        stdout, stderr = run.communicate(timeout=180)
    finally:
        for proc in (scheduler, worker):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert run.returncode == 1, stderr[-3000:]
    *progress, last = stderr.strip().splitlines()
    assert last == (
        f"python -m bandit_unlearning reproduce: error: the Dask cluster at {address} stopped answering "
        "during the run (CancelledError); nothing was written"
    ), stderr[-3000:]
    assert all(line.startswith("figure1: ") for line in progress), stderr[-3000:]  # progress lines only
    assert not out.exists()


def test_ctrl_c_during_all_with_workers_stops_every_experiment(tmp_path):
    # several experiments at once on one shared pool (run_together): one line, exit 130, no staging
    # folder or worker left behind
    done = _interrupt(["all", "--scale", "quick", "--workers", "2"], tmp_path)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert (
        done.stderr.strip().splitlines()[-1].startswith("python -m bandit_unlearning reproduce: interrupted")
    )
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".staging-")]
