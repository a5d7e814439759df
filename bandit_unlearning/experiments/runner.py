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

import functools
import heapq
import os
import re
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from concurrent.futures import CancelledError, Executor, Future, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator, Sequence

from bandit_unlearning.checks import check_bool, check_callable, check_instance, check_int

__all__ = ["run_tasks", "run_together", "chunks", "use_executor", "dask_executor"]

try:  # tqdm is a dependency; keep the runner importable without it for copy-paste users
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    tqdm = None

# The executor of the innermost active ``use_executor`` block (None: none is active).
_ACTIVE: ContextVar[Executor | None] = ContextVar("bandit_unlearning_executor", default=None)

# While a ``run_tasks`` call waits for an executor's results, it enters the context manager this
# factory makes (None: nothing).  ``reproduce`` of several experiments at once (bandit_unlearning.cli)
# sets it, so that an experiment hands the parent process to the others while its tasks run.
_WAITING: ContextVar[Callable[[], Any] | None] = ContextVar("bandit_unlearning_waiting", default=None)

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
        waiting = _WAITING.get()
        try:
            futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
            results = [None] * len(tasks)
            with waiting() if waiting is not None else nullcontext():
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


class _Turns:
    """The parent process's turn, one job at a time (its own Python work: plots, sums; matplotlib's
    pyplot is not thread-safe), granted first come, first served, the first turns in job order; a job
    waiting in ``run_tasks`` for its tasks hands its turn on.  ``stop`` ends every wait."""

    def __init__(self, n_jobs: int):
        self._cond = threading.Condition()
        self._queue, self._stopped = list(range(n_jobs)), False
        self._holder: int | None = None

    def take(self, job: int, queued: bool = False) -> None:
        with self._cond:
            if not queued:
                self._queue.append(job)
            self._cond.wait_for(lambda: self._stopped or (self._holder is None and self._queue[0] == job))
            if self._stopped:
                raise KeyboardInterrupt("run_together stopped")
            self._queue.pop(0)
            self._holder = job

    def give(self) -> None:
        with self._cond:
            self._holder = None
            self._cond.notify_all()

    @contextmanager
    def handed_on(self, job: int) -> Iterator[None]:
        self.give()
        try:
            yield
        finally:
            self.take(job)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


class _OrderedPool(Executor):
    """A process pool fed from a queue ordered by (job, submission): a task goes to the pool only when
    a worker is free, so no worker runs a later job's task while an earlier job's task waits."""

    def __init__(self, workers: int):
        self._pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts)
        for started in [self._pool.submit(int) for _ in range(workers)]:  # fork now, before the threads
            started.result()
        self._free, self._lock, self._count, self._stopped = workers, threading.Lock(), 0, False
        self._queue: list[tuple] = []  # heap of (job, count, future, fn, args, kwargs)
        self._running: set[Future] = set()  # dispatched to the pool, not finished
        self.job: dict[int, int] = {}  # thread id -> the job it runs

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        with self._lock:
            if self._stopped:  # a job that submits after stop() gets a cancelled task
                future.cancel()
                future.set_running_or_notify_cancel()  # what wakes as_completed and wait
                return future
            self._count += 1
            rank = self.job.get(threading.get_ident(), 0)
            heapq.heappush(self._queue, (rank, self._count, future, fn, args, kwargs))
        self._dispatch()
        return future

    def _dispatch(self) -> None:
        ready = []
        with self._lock:
            while self._free and self._queue:
                *_, future, fn, args, kwargs = heapq.heappop(self._queue)
                if future.set_running_or_notify_cancel():
                    self._free -= 1
                    self._running.add(future)
                    ready.append((future, fn, args, kwargs))
        for future, fn, args, kwargs in ready:  # outside the lock: a callback may run at once
            try:
                inner = self._pool.submit(fn, *args, **kwargs)
            except BaseException as err:  # a stopped or broken pool
                with self._lock:
                    mine = future in self._running  # else stop() has already ended it
                    self._running.discard(future)
                if mine:
                    future.set_exception(err)
                continue
            inner.add_done_callback(functools.partial(self._finished, future))

    def _finished(self, future: Future, inner: Future) -> None:
        with self._lock:
            self._free += 1
            if future not in self._running:  # stop() has already ended it
                return
            self._running.discard(future)
        if inner.cancelled():
            future.set_exception(CancelledError())
        elif inner.exception() is not None:
            future.set_exception(inner.exception())
        else:
            future.set_result(inner.result())
        self._dispatch()

    def stop(self) -> None:
        """Cancel the queued tasks and stop the workers now (Ctrl-C or a failed job)."""
        with self._lock:
            queued, self._queue, self._free, self._stopped = [item[2] for item in self._queue], [], 0, True
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        for process in processes:
            process.terminate()
        for process in processes:  # gone before any job wakes up to remove its files
            process.join(10)
        with self._lock:
            running, self._running = list(self._running), set()
        for future in queued:
            future.cancel()
            future.set_running_or_notify_cancel()
        for future in running:  # the pool may not report its killed tasks after shutdown
            future.set_exception(CancelledError())
        self._pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def run_together(jobs: Sequence[Callable[[], Any]], workers: int) -> list[Any]:
    """``[job() for job in jobs]``, the jobs in threads of this process and their ``run_tasks`` on one
    shared pool of ``workers`` processes.

    The pool takes the queued tasks of earlier jobs first (then in submission order), and only when
    a worker is free: give the jobs with the longest tasks first.  One job at a time runs in this
    process (a job's own work, such as its plots, waits for its turn; a job waiting for its tasks
    hands the turn on), the first turns in job order.  Results do not depend on this when every task
    has its own seed.  The first failure (or Ctrl-C) stops the pool and the other jobs, and is
    raised.  With ``workers == 1`` or inside a ``use_executor`` block, the jobs run one after the
    other (on that executor).

    Parameters
    ----------
    jobs : sequence of callable
        Zero-argument callables, in priority order.
    workers : int
        Worker processes of the shared pool, >= 1.

    Returns
    -------
    list
        ``job()`` for every job, in job order.
    """
    if isinstance(jobs, (str, bytes)) or not hasattr(jobs, "__iter__"):
        raise TypeError(f"jobs must be a sequence of callables, got {type(jobs).__name__}")
    jobs = list(jobs)
    for job in jobs:
        check_callable(job, "jobs[i]")
    workers = check_int(workers, "workers", 1)
    if workers == 1 or _ACTIVE.get() is not None or len(jobs) < 2:
        return [job() for job in jobs]
    pool, turns = _OrderedPool(workers), _Turns(len(jobs))
    results: dict[int, Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        pool.job[threading.get_ident()] = i
        _WAITING.set(lambda: turns.handed_on(i))
        try:
            turns.take(i, queued=True)
            try:
                with use_executor(pool):
                    results[i] = jobs[i]()
            finally:
                turns.give()
        except BaseException as err:
            errors.append(err)
            turns.stop()
            pool.stop()
        finally:
            ended[i].set()

    # Events, not Thread.join: a join interrupted by Ctrl-C can leave a live thread marked as ended
    ended = [threading.Event() for _ in jobs]
    try:
        for i in range(len(jobs)):
            threading.Thread(target=work, args=(i,), daemon=True).start()
        for event in ended:
            while not event.wait(0.1):
                pass
    except BaseException:  # Ctrl-C: stop the workers and the waits; every job cleans up
        turns.stop()
        pool.stop()
        for event in ended:
            event.wait()
        raise
    pool.shutdown()
    if errors:
        raise errors[0]
    return [results[i] for i in range(len(jobs))]


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
