"""Run independent experiment tasks on any ``concurrent.futures.Executor``, with a progress bar.

Plain infrastructure (no chapter explains it): a sweep is a list of picklable task descriptions and a
top-level function; results come back in task order whatever executor ran them, so a
``ProcessPoolExecutor`` on this machine or a Dask/Ray executor on a cluster give the same output for
the same seeds.
"""

from __future__ import annotations

import sys
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Sequence

from bandit_unlearning.checks import check_bool, check_callable, check_instance, check_int

__all__ = ["run_tasks", "chunks"]

try:  # tqdm is a dependency; keep the runner importable without it for copy-paste users
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    tqdm = None


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or tqdm is None:
        return None
    return tqdm(total=total, desc=desc, unit="task", file=sys.stderr, dynamic_ncols=True)


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

    ``executor`` may be any ``concurrent.futures.Executor`` (it is not shut down here); otherwise
    ``workers > 1`` starts a ``ProcessPoolExecutor`` for the call.  Results are in task order.
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
    bar = _progress(len(tasks), desc, progress)
    try:
        if executor is None and workers == 1:
            results = []
            for task in tasks:
                results.append(fn(task))
                if bar is not None:
                    bar.update()
            return results
        own = executor is None
        pool = ProcessPoolExecutor(max_workers=workers) if own else executor
        try:
            futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
            results: list[Any] = [None] * len(tasks)
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if bar is not None:
                    bar.update()
            return results
        finally:
            if own:
                pool.shutdown()
    finally:
        if bar is not None:
            bar.close()


def chunks(items: Iterable[Any], size: int) -> list[list[Any]]:
    """Split ``items`` into consecutive lists of at most ``size`` items (``size >= 1``)."""
    size = check_int(size, "size", 1)
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise TypeError(f"items must be iterable, got {type(items).__name__}")
    items = list(items)
    return [items[i:i + size] for i in range(0, len(items), size)]
