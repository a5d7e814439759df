"""Run independent experiment tasks on any ``concurrent.futures.Executor``, with progress reports.

Plain infrastructure (no chapter explains it): a sweep is a list of picklable task descriptions and a
top-level function; results come back in task order whatever executor ran them, so a
``ProcessPoolExecutor`` on this machine or a Dask cluster (``dask_executor``) give the same output for
the same seeds.  ``use_executor`` makes an executor the one used by every ``run_tasks`` call inside a
``with`` block that is not given one, so a whole reproduction (whose sweeps call ``run_tasks`` deep
inside) runs on a cluster without threading an argument through every experiment.

Progress: a tqdm bar when standard error is a terminal, otherwise one plain line per finished task
(readable in CI logs).  Neither changes a result.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator, Sequence

from bandit_unlearning.checks import check_bool, check_callable, check_instance, check_int

__all__ = ["run_tasks", "chunks", "use_executor", "dask_executor"]

try:  # tqdm is a dependency; keep the runner importable without it for copy-paste users
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    tqdm = None

# The executor of the innermost active ``use_executor`` block (None: none is active).
_ACTIVE: ContextVar[Executor | None] = ContextVar("bandit_unlearning_executor", default=None)

# The BLAS/OpenMP thread settings that the Makefile exports; a local cluster's workers get the same.
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class _Lines:
    """Progress for logs: one line per finished task, ``desc: done/total tasks done (elapsed s)``."""

    def __init__(self, total: int, desc: str, stream):
        self.total, self.desc, self.stream, self.done = total, desc, stream, 0
        self.start = time.perf_counter()

    def update(self) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        print(
            f"{self.desc}: {self.done}/{self.total} tasks done ({elapsed:.1f} s)",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        pass


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    if tqdm is not None and _is_terminal(sys.stderr):
        return tqdm(total=total, desc=desc, unit="task", file=sys.stderr, dynamic_ncols=True)
    return _Lines(total, desc, sys.stderr)


def run_tasks(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    executor: Executor | None = None,
    *,
    workers: int = 1,
    desc: str = "tasks",
    progress: bool = True,
) -> list[Any]:
    """``[fn(t) for t in tasks]``, computed serially, on ``executor``, or on ``workers`` processes.

    ``executor`` may be any ``concurrent.futures.Executor`` (it is not shut down here); without one,
    the executor of an active ``use_executor`` block is used; otherwise ``workers > 1`` starts a
    ``ProcessPoolExecutor`` for the call (``workers`` is ignored when an executor is given or active).
    Results are in task order.  ``progress``: a tqdm bar on a terminal, else one line per finished
    task, both on standard error.

    Parameters
    ----------
    fn : callable
        The function applied to each task (picklable for process executors).
    tasks : sequence
        The task descriptions.
    executor : concurrent.futures.Executor or None
        Where to run the tasks (not shut down here).
    workers : int
        Worker processes when no executor is given or active, >= 1.
    desc : str
        The label of the progress output.
    progress : bool
        Whether to report progress on standard error.

    Returns
    -------
    list
        ``fn(t)`` for every task ``t``, in task order.
    """
    check_callable(fn, "fn")
    workers = check_int(workers, "workers", 1)
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    check_instance(desc, str, "desc")
    progress = check_bool(progress, "progress")
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__iter__"):
        raise TypeError(f"tasks must be a sequence of task descriptions, got {type(tasks).__name__}")
    tasks = list(tasks)
    if executor is None:
        executor = _ACTIVE.get()
    bar = _progress(len(tasks), desc, progress)
    try:
        if executor is None and workers == 1:
            results: list[Any] = []
            for task in tasks:
                results.append(fn(task))
                if bar is not None:
                    bar.update()
            return results
        own = executor is None
        pool = (
            ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts)
            if executor is None
            else executor
        )
        try:
            futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
            results = [None] * len(tasks)
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if bar is not None:
                    bar.update()
        except BaseException:
            if own:  # Ctrl-C or a failed task: stop the workers now, without waiting
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.terminate()
                pool.shutdown(wait=False, cancel_futures=True)
            raise
        if own:
            pool.shutdown()
        return results
    finally:
        if bar is not None:
            bar.close()


def _ignore_interrupts() -> None:
    """A pool worker ignores Ctrl-C: the parent handles it (one line, no traceback per worker) and
    stops the workers itself."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def chunks(items: Iterable[Any], size: int) -> list[list[Any]]:
    """Split ``items`` into consecutive lists of at most ``size`` items (``size >= 1``).

    Parameters
    ----------
    items : iterable
        The items to split (not a string).
    size : int
        The largest chunk, >= 1.

    Returns
    -------
    list of list
        The chunks, in order; only the last may be shorter than ``size``.
    """
    size = check_int(size, "size", 1)
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise TypeError(f"items must be iterable, got {type(items).__name__}")
    items = list(items)
    return [items[i : i + size] for i in range(0, len(items), size)]


def use_executor(executor: Executor):
    """``with use_executor(ex): ...`` -- every ``run_tasks`` call in the block that is given no
    executor runs on ``ex`` (which is not shut down here).  Blocks nest; the innermost wins.

    Parameters
    ----------
    executor : concurrent.futures.Executor
        The executor the block's ``run_tasks`` calls use.

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager that yields ``executor``.
    """
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
    return _active(executor)


@contextmanager
def _active(executor: Executor) -> Iterator[Executor]:
    token = _ACTIVE.set(executor)
    try:
        yield executor
    finally:
        _ACTIVE.reset(token)


_ADDRESS = re.compile(r"(?:tcp|tls|ws|wss|ucx)://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
_SCHEDULER_RULE = (
    "'local' (one worker process per core), 'local:N' (N >= 1 worker processes) or a "
    "scheduler address PROTOCOL://HOST:PORT such as tcp://10.0.0.5:8786"
)


def _parse_scheduler(scheduler) -> tuple[str, int | str]:
    """``("local", n_workers)`` or ``("address", address)``; TypeError / ValueError otherwise."""
    if not isinstance(scheduler, str):
        raise TypeError(
            f"scheduler (--scheduler) must be a str: {_SCHEDULER_RULE}; got {type(scheduler).__name__}"
        )
    if scheduler == "local":
        return "local", os.cpu_count() or 1
    local = re.fullmatch(r"local:(\d+)", scheduler)
    if local and int(local.group(1)) >= 1:
        return "local", int(local.group(1))
    address = _ADDRESS.fullmatch(scheduler)
    if address and 1 <= int(address.group(1)) <= 65535:
        return "address", scheduler
    raise ValueError(f"scheduler (--scheduler) must be {_SCHEDULER_RULE}; got {scheduler!r}")


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ModuleNotFoundError(
            "scheduler (--scheduler) needs Dask's distributed scheduler, which is not installed here: "
            "install the 'dask' extra, pip install -e '.[dask]' (or pip install 'bandit_unlearning[dask]')"
        ) from None
    return distributed


def dask_executor(scheduler: str):
    """``with dask_executor(scheduler) as ex: ...`` -- a ``concurrent.futures.Executor`` on a Dask cluster.

    ``scheduler`` is ``"local"`` or ``"local:N"`` (a ``LocalCluster`` of one or N single-threaded worker
    processes on this machine, started on entering and closed on leaving the block; the workers get
    this process's BLAS/OpenMP thread settings) or the address of a running scheduler,
    ``"tcp://HOST:PORT"`` (a ``dask scheduler`` whose ``dask worker``s have this package installed;
    only the client is closed on leaving).  The value is checked, and Dask's presence too, when this is
    called; the cluster is reached on entering the block.  Tasks are submitted with ``pure=False``, so
    each one runs.

    Parameters
    ----------
    scheduler : str
        ``"local"``, ``"local:N"`` or ``"tcp://HOST:PORT"``.

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager that yields a ``concurrent.futures.Executor`` on the cluster.
    """
    kind, value = _parse_scheduler(scheduler)
    distributed = _import_distributed()
    return _dask(distributed, kind, value)


@contextmanager
def _dask(distributed, kind: str, value) -> Iterator[Executor]:
    if kind == "local":
        env = {name: os.environ[name] for name in _THREAD_VARIABLES if name in os.environ}
        with distributed.LocalCluster(
            n_workers=value, threads_per_worker=1, processes=True, dashboard_address=":0", env=env
        ) as cluster:  # any free port
            with distributed.Client(cluster) as client:
                yield client.get_executor(pure=False)
    else:
        try:
            client = distributed.Client(value)
        except OSError as err:  # refused, timed out, unknown host
            raise ConnectionError(f"scheduler (--scheduler) {value!r} could not be reached: {err}") from err
        with client:
            yield client.get_executor(pure=False)
