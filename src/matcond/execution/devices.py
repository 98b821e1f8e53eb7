"""Which GPU a training block uses when several run at once (where it runs at all:
:func:`matcond.condition_number.batching.block_device`).

Snakemake's resources are only counters: they start at most so many GPU jobs at a time but
never tell a job which GPU to use, so without help all would train on ``cuda:0``.
:func:`claim_device` makes each job claim one slot of one GPU for its lifetime (``gpu_jobs``
slots per GPU: several small blocks keep one GPU busy together) by taking an exclusive
``fcntl.flock`` on one lock file per slot, ``<lock dir>/matcond-gpu-<id>.lock`` for the
first slot and ``matcond-gpu-<id>.slot<k>.lock`` for the others:

- ``<id>`` is the GPU's id as the machine knows it: the entries of ``CUDA_VISIBLE_DEVICES``
  when that is set (so two runs that see ``2,3`` and ``3`` agree that ``3`` is one GPU),
  otherwise ``0 .. torch.cuda.device_count() - 1``. The job then trains on
  ``cuda:<position of the id>``, the ordinal torch gives that GPU.
- Under SLURM (``SLURM_JOB_ID`` set) the scheduler has already given the job its GPUs and may
  number them from 0 in every job (``ConstrainDevices``), so the same id can name different
  GPUs in two jobs. The lock names then carry the job id (``matcond-gpu-slurm<job>-<id>``):
  only trials inside one SLURM job (a group job) share its GPUs and need to be kept apart.
- The lock directory is ``$MATCOND_GPU_LOCK_DIR`` if set, else the system temporary directory
  (``/tmp``): node-local, as the GPUs are, and the same for every job on the machine.

Why a lock and not a counter file: the kernel releases an ``flock`` when the holder's file
descriptor closes, which also happens when the process dies by SIGKILL, the OOM killer, a
``scancel`` or a crash. A counter (or a PID file) has to be decremented by the job itself, so
every killed job would leave a GPU marked busy for good; taking a lock is also atomic, with no
read-modify-write race between two jobs that start together.

When every slot is claimed (more jobs than slots, a second workflow run or another user's
job on the same machine), the job waits, polling
every ``poll`` seconds, until one is free, and says so once on stderr; ``timeout`` bounds the
wait (then :class:`TimeoutError`). Waiting, not failing, is the right default: the job cannot
do anything useful without a GPU, and failing would only make Snakemake retry it later.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch

LOCK_DIR_ENV = "MATCOND_GPU_LOCK_DIR"
DEVICES = ("cpu", "cuda")


class DeviceUnavailableError(RuntimeError):
    """The config asks for a device this machine does not have."""


def gpu_ids(device_count: int, visible: str | None) -> list[str]:
    """The machine's ids of the GPUs torch numbers 0 .. device_count - 1.

    ``visible`` is the value of ``CUDA_VISIBLE_DEVICES`` (None: not set). CUDA uses its entries
    in order, up to the first invalid one; torch's ``device_count()`` already reflects that,
    so the first ``device_count`` entries are the ids.
    """
    if visible is None:
        return [str(i) for i in range(device_count)]
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[:device_count]


def default_lock_dir() -> Path:
    """``$MATCOND_GPU_LOCK_DIR`` if set, else the system temporary directory."""
    return Path(os.environ.get(LOCK_DIR_ENV) or tempfile.gettempdir())


def lock_path(lock_dir: Path, gpu_id: str, scope: str = "", slot: int = 0) -> Path:
    """The lock file of slot ``slot`` of GPU ``gpu_id`` (``scope``: e.g. ``slurm123`` inside
    SLURM job 123); slot 0 has no slot suffix."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu_id)
    prefix = f"matcond-gpu-{scope}-" if scope else "matcond-gpu-"
    suffix = f".slot{slot}" if slot else ""
    return lock_dir / f"{prefix}{safe}{suffix}.lock"


def visible_gpu_count() -> int:
    """How many GPUs torch sees in this process (0 without a CUDA build or a GPU)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _try_lock(path: Path) -> int | None:
    """An open descriptor holding an exclusive flock on ``path``, or None if it is taken."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        writable = True
    except PermissionError:  # another user's lock file (mode 644 under umask 022): flock
        fd = os.open(path, os.O_RDONLY)  # needs no write access
        writable = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    # For whoever looks at the file: which process holds it (the lock does not depend on it).
    if writable:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _lock_first_free(paths: list[Path], gpus: int) -> tuple[int, int] | None:
    """(torch ordinal, locked descriptor) of the first free slot of ``paths`` (slot-major:
    slot 0 of every GPU, then slot 1, ...), or None if all are claimed."""
    for index, path in enumerate(paths):
        fd = _try_lock(path)
        if fd is not None:
            return index % gpus, fd
    return None


def _no_gpu_error(device_count: int, visible: str | None) -> DeviceUnavailableError:
    shown = "not set" if visible is None else repr(visible)
    return DeviceUnavailableError(
        "config key device is 'cuda' but torch sees no GPU here "
        f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None}, "
        f"device count: {device_count}, CUDA_VISIBLE_DEVICES {shown}); set device: cpu"
    )


@contextlib.contextmanager
def claim_device(
    requested: str,
    *,
    device_count: int | None = None,
    visible: str | None = None,
    lock_dir: Path | None = None,
    scope: str | None = None,
    timeout: float | None = None,
    poll: float = 0.5,
    slots: int = 1,
) -> Iterator[torch.device]:
    """The torch device for a block's device; a GPU slot is held until the block exits.

    ``requested`` is ``cpu`` (yields the CPU, claims nothing) or ``cuda`` (claims a free slot
    of a GPU, yields ``cuda:<ordinal>``): ``slots`` jobs may share one GPU (config key
    ``gpu_jobs``), and a claim takes a GPU with the fewest holders first. The other keyword
    arguments exist for tests and special set-ups:
    ``device_count`` (default ``torch.cuda.device_count()``), ``visible`` (default
    ``$CUDA_VISIBLE_DEVICES``; None when unset), ``lock_dir`` (default
    :func:`default_lock_dir`), ``scope`` (default ``slurm$SLURM_JOB_ID`` inside a SLURM job,
    else none), ``timeout`` (seconds to wait for a free GPU; None: no limit) and ``poll``.

    Raises :class:`DeviceUnavailableError` (naming the config key) if
    ``cuda`` is asked for and torch sees no GPU, :class:`TimeoutError` if no GPU frees up
    within ``timeout``.
    """
    if requested not in DEVICES:
        raise ValueError(f"config key device must be one of {DEVICES}, not {requested!r}")
    if requested == "cpu":
        yield torch.device("cpu")
        return
    if device_count is None:
        device_count = torch.cuda.device_count()
    if visible is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = gpu_ids(device_count, visible)
    if not ids:
        raise _no_gpu_error(device_count, visible)
    if scope is None:
        job = os.environ.get("SLURM_JOB_ID")
        scope = f"slurm{job}" if job else ""
    lock_dir = default_lock_dir() if lock_dir is None else Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    paths = [lock_path(lock_dir, i, scope, slot) for slot in range(slots) for i in ids]

    deadline = None if timeout is None else time.monotonic() + timeout
    said_waiting = False
    while (claimed := _lock_first_free(paths, len(ids))) is None:
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(
                f"all {len(ids)} GPUs ({', '.join(ids)}, {slots} jobs each) stayed claimed "
                f"for {timeout} s "
                f"(lock files {paths[0]} ...)"
            )
        if not said_waiting:
            print(
                f"waiting for a free GPU: all of {', '.join(ids)} are claimed "
                f"(lock files in {lock_dir})",
                file=sys.stderr,
                flush=True,
            )
            said_waiting = True
        time.sleep(poll)
    ordinal, fd = claimed
    try:
        yield torch.device("cuda", ordinal)
    finally:
        os.close(fd)  # releases the flock
