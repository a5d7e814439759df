from concurrent.futures import ThreadPoolExecutor

import pytest

from bandit_unlearning.experiments.runner import chunks, run_tasks


def square(x):
    return x * x


def test_serial_pool_and_executor_agree():
    tasks = list(range(12))
    expected = [x * x for x in tasks]
    assert run_tasks(square, tasks, progress=False) == expected
    assert run_tasks(square, tasks, workers=2, progress=False) == expected
    with ThreadPoolExecutor(3) as ex:
        assert run_tasks(square, tasks, ex, progress=False) == expected


def test_bad_arguments():
    with pytest.raises(ValueError, match="workers"):
        run_tasks(square, [1], workers=0)
    with pytest.raises(TypeError, match="Executor"):
        run_tasks(square, [1], executor="pool")
    assert chunks(range(5), 2) == [[0, 1], [2, 3], [4]]


# ------------------------------------------------------------------ progress, executors, --scheduler
import io  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402

from bandit_unlearning import cli  # noqa: E402
from bandit_unlearning.experiments.runner import dask_executor, use_executor  # noqa: E402

LINE = re.compile(r"negate: (\d)/3 tasks done \(\d+\.\d s\)")


@pytest.mark.parametrize("how", ["serial", "executor", "processes"])
def test_one_plain_line_per_finished_task_off_a_terminal(capsys, how):
    kwargs = {"serial": {}, "processes": {"workers": 2}}.get(how, {})
    with ThreadPoolExecutor(2) as ex:
        results = run_tasks(abs, [-1, -2, -3], ex if how == "executor" else None, desc="negate", **kwargs)
    assert results == [1, 2, 3]
    captured = capsys.readouterr()
    matches = [LINE.fullmatch(line) for line in captured.err.splitlines()]
    assert all(matches) and [m.group(1) for m in matches] == ["1", "2", "3"]
    assert captured.out == ""
    assert run_tasks(abs, [-1, -2, -3], desc="negate", progress=False) == [1, 2, 3]
    assert capsys.readouterr().err == ""


def test_a_bar_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert run_tasks(abs, [-1, -2, -3], desc="negate") == [1, 2, 3]
    text = terminal.getvalue()
    assert "\r" in text and "3/3" in text and "tasks done" not in text  # tqdm's bar, not lines


class Counting(ThreadPoolExecutor):
    def __init__(self):
        super().__init__(2)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def test_use_executor_is_the_default_inside_its_block():
    with Counting() as outer, Counting() as inner, Counting() as explicit:
        with use_executor(outer):
            assert run_tasks(square, [1, 2], progress=False) == [1, 4]
            with use_executor(inner):
                assert run_tasks(square, [3], workers=2, progress=False) == [9]  # workers is ignored
                assert run_tasks(square, [4], explicit, progress=False) == [16]  # an explicit one wins
            assert run_tasks(square, [5], progress=False) == [25]
        assert run_tasks(square, [6], progress=False) == [36]  # none active: serial
    assert (outer.submitted, inner.submitted, explicit.submitted) == (3, 1, 1)


@pytest.mark.parametrize(
    "bad",
    [
        "local:0",
        "local:two",
        "locale",
        "tcp://host",
        "host:8786",
        "tcp://h:70000",
        "http://h:8786",
        "tcp://h:8786/x",
        "",
    ],
)
def test_bad_scheduler_values_are_refused(bad):
    with pytest.raises(ValueError, match=r"scheduler \(--scheduler\) must be 'local'"):
        dask_executor(bad)


def test_good_scheduler_values_are_accepted():
    pytest.importorskip("distributed", reason="Dask's distributed scheduler is not installed")
    for good in ("local", "local:3", "tcp://10.0.0.5:8786", "tls://node-1.example:8786", "tcp://[::1]:8786"):
        dask_executor(good)  # checked only; nothing is started before `with`


def test_missing_dask_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now fails
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[dask\]'"):
        dask_executor("local:2")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["reproduce", "table2", "--out", str(tmp_path / "r"), "--scheduler", "tcp://h:8786"])
    assert exit_.value.code == 2 and "[dask]" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("extra", [["--scheduler", "local:0"], ["--scheduler", "local:2", "--workers", "2"]])
def test_cli_refuses_bad_scheduler_before_writing(tmp_path, capsys, extra):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["reproduce", "table2", "--out", str(tmp_path / "r"), *extra])
    assert exit_.value.code == 2 and "--scheduler" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ run_together (reproduce all --workers N)
import os  # noqa: E402
import time  # noqa: E402

from bandit_unlearning.experiments.runner import run_together  # noqa: E402


def started_at(seconds):
    start = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of this machine
    time.sleep(seconds)
    return start, os.getpid()


def fails(x):
    raise ValueError(f"task {x} failed")


def test_run_together_equals_the_jobs_one_by_one_and_keeps_the_job_order():
    jobs = [
        lambda: run_tasks(started_at, [0.3] * 4, progress=False),
        lambda: run_tasks(started_at, [0.0] * 2, progress=False),
        lambda: run_tasks(square, range(5), progress=False) + ["own work"],
    ]
    first, second, third = run_together(jobs, 2)
    assert third == [0, 1, 4, 9, 16, "own work"]
    assert {pid for _, pid in first + second} - {os.getpid()}  # the tasks ran in the pool's processes
    assert len({pid for _, pid in first + second}) <= 2  # one pool of two processes for every job
    # the pool takes the earlier job's queued tasks first: the second job's start after all of them
    assert min(s for s, _ in second) >= max(s for s, _ in first)
    assert run_together([lambda: 1, lambda: 2], 1) == [1, 2]  # one worker: one after the other


def test_run_together_raises_the_first_failure_and_stops_the_others():
    start = time.monotonic()
    jobs = [
        lambda: run_tasks(started_at, [60.0], progress=False),
        lambda: run_tasks(fails, [1], progress=False),
    ]
    with pytest.raises(ValueError, match="task 1 failed"):
        run_together(jobs, 2)
    assert time.monotonic() - start < 30  # the 60 s task was stopped
