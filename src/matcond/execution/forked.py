"""Forking, made safe: whether a child forked from this process can run a job
(:func:`fork_problem`), and a map over independent items in forked worker processes
(:func:`forked_map`).

A job that holds several cores maps a function over independent items in forked workers (rule
``claims``: each claim is evaluated on its own, from fixed seeds). Each worker, and the job
itself when it maps alone, runs BLAS on one thread, so the results are the same bytes for any
number of workers.

Why a probe: some libraries leave a process that a fork cannot copy. Once torch sees a GPU,
the first backward pass starts autograd's device threads, and a child forked after it fails
its own backward ("Unable to handle autograd's threading in combination with fork-based
multiprocessing"); a CUDA driver started in the parent cannot be used in the child. On a
machine without a GPU neither shows. So whoever forks children that run jobs (the job server,
:func:`forked_map`) first forks one child that does what a job does with torch, and forks no
more if it fails.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from threadpoolctl import threadpool_limits

PROBE_SECONDS = 120.0  # a probe child that has not finished by then is hung (CUDA start-up: ~1 s)
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
    forking = workers > 1 and len(items) >= 2
    if forking and (problem := fork_problem()):
        print(f"{problem}: the {len(items)} items are computed in this process", file=sys.stderr)
        forking = False
    if not forking:
        with threadpool_limits(1):
            return [function(item) for item in items]
    _TASK[:] = [(function, items)]
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(items))) as pool:
            return pool.map(_call, range(len(items)), chunksize=1)
    finally:
        _TASK.clear()


def _probe() -> None:
    """What a forked job does with torch: a backward pass on the CPU and, where this process
    sees a GPU, on it (a CUDA driver that cannot start warns; here that is an error)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    for device in devices:
        x = torch.ones(2, device=device, requires_grad=True)
        (x * x).sum().backward()


def fork_problem(timeout: float = PROBE_SECONDS) -> str | None:
    """Why a child forked from this process could not run a job, or None if it can: a child
    forked now runs :func:`_probe` (nothing to probe if this process has not imported torch:
    a child imports its own). The answer is one line naming the child's error, or that it
    hung for ``timeout`` seconds."""
    if "torch" not in sys.modules:
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        status, message = 0, b""
        try:
            _probe()
        except BaseException as err:  # noqa: BLE001 (any failure is the answer)
            status, message = 1, f"{type(err).__name__}: {err}".encode()
        os.write(write, message.splitlines()[0][:300] if message else b"")
        os._exit(status)
    os.close(write)
    try:
        deadline = time.monotonic() + timeout
        ready = []
        while not ready and (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(InterruptedError):
                ready, _, _ = select.select([read], [], [], left)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return f"a forked child hung for {timeout:g} s on a backward pass"
        message = os.read(read, 1000).decode(errors="replace")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read)
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return f"a forked child cannot run torch ({message or f'exit status {status}'})"
