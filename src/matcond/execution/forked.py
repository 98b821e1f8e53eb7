"""A job that holds several cores maps a function over independent items in forked worker
processes (rule ``claims``: each claim is evaluated on its own, from fixed seeds). Each
worker, and the job itself when it maps alone, runs BLAS on one thread, so the results are
the same bytes for any number of workers."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from typing import Any

from threadpoolctl import threadpool_limits

_TASK: list = []  # (function, items) of the running map: forked workers inherit it


def _call(index: int) -> Any:
    function, items = _TASK[0]
    with threadpool_limits(1):
        return function(items[index])


def forked_map(function: Callable[[Any], Any], items: Iterable, workers: int) -> list:
    """``[function(item) for item in items]``, in order, computed by up to ``workers`` forked
    processes (``function`` and the items reach them by the fork, not by pickling; only the
    results are pickled); in this process when ``workers`` <= 1 or there are < 2 items."""
    items = list(items)
    if workers <= 1 or len(items) < 2:
        with threadpool_limits(1):
            return [function(item) for item in items]
    _TASK[:] = [(function, items)]
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(items))) as pool:
            return pool.map(_call, range(len(items)), chunksize=1)
    finally:
        _TASK.clear()
