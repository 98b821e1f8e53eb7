"""Whether this run may move files in its directory before Snakemake locks it.

The damaged outputs are set aside while the Snakefile is parsed (execution.smk), before the
DAG is built and so before Snakemake takes its own lock (``.snakemake/locks``). A second run
started beside a live one must not move the live run's files: every run that may move files
takes this directory's run lock (:func:`hold_run_lock`, an ``flock`` held until the process
ends, even by SIGKILL) first, and moves nothing while another run holds it or Snakemake's
lock files are there (:func:`lock_problem`).
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

RUN_LOCK = Path(".snakemake") / "matcond_run.lock"
# Snakemake's lock files (snakemake.persistence: <n>.input.lock, <n>.output.lock)
SNAKEMAKE_LOCKS = Path(".snakemake") / "locks"
_LOCK_NAME = re.compile(r"[0-9]+\.(input|output)\.lock")
_HELD: list[int] = []  # this process's run lock: its file descriptor, kept open


def hold_run_lock(path: Path = RUN_LOCK) -> str | None:
    """Take the run lock ``path`` for the rest of this process: None once held, else why not
    (another run holds it, or the file cannot be opened)."""
    if _HELD:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as err:
        return f"cannot open the run lock {path} ({err.strerror})"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return f"another run in this directory is going (it holds {path})"
    _HELD.append(fd)
    return None


def snakemake_lock(locks: Path = SNAKEMAKE_LOCKS) -> Path | None:
    """A lock file of Snakemake's in ``locks``, or None: at parse time this run has none, so
    it is another run's (or one a killed run left)."""
    try:
        names = sorted(os.listdir(locks))
    except OSError:  # none yet, or not a directory: Snakemake's own lock decides
        return None
    return next((locks / n for n in names if _LOCK_NAME.fullmatch(n)), None)


def lock_problem(run_lock: Path = RUN_LOCK, locks: Path = SNAKEMAKE_LOCKS) -> str | None:
    """Why this run may not move files now, or None: it holds the run lock and no Snakemake
    lock file is there."""
    if problem := hold_run_lock(run_lock):
        return problem
    if held := snakemake_lock(locks):
        return (
            f"another run holds this directory's lock ({held}; if none is running, "
            "a killed run left it: snakemake --unlock)"
        )
    return None
