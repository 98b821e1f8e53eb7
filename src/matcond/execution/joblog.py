"""Where a Snakemake job's messages go, and how a job ends with the run that started it."""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# The pid of the local Snakemake process that runs the workflow (set by common.smk): a job
# whose Snakemake is gone (SIGKILL) exits instead of writing outputs beside a resumed run.
RUN_PID_ENV = "MATCOND_RUN_PID"


def _exit_when_gone(pid: int, poll: float) -> None:
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # alive, another user's: not ours to watch
            return
        time.sleep(poll)


def exit_with_run(poll: float = 0.5) -> None:
    """Exit this process (status 1) within ``poll`` seconds of the run's Snakemake process
    ending, if ``$MATCOND_RUN_PID`` names one; a no-op otherwise."""
    pid = os.environ.get(RUN_PID_ENV)
    if pid:
        threading.Thread(target=_exit_when_gone, args=(int(pid), poll), daemon=True).start()


@contextmanager
def logging_to(path: str) -> Iterator[TextIO]:
    """Send stderr to the job's log file, including the traceback of an exception; end the
    job if its Snakemake process ends (:func:`exit_with_run`).

    (``with open(log) as sys.stderr:`` loses the traceback: it is printed after the file is
    closed.) A log that cannot be written (a full disk) is said on the job's own stderr, which
    reaches Snakemake's console, with the traceback.
    """
    exit_with_run()
    log = open(path, "w")
    previous, sys.stderr = sys.stderr, log
    try:
        yield log
    except BaseException:
        text = traceback.format_exc()
        try:
            log.write(text)
            log.flush()
        except OSError as err:
            print(f"cannot write the job log {path} ({err.strerror}):\n{text}", file=previous)
        raise
    finally:
        sys.stderr = previous
        try:
            log.close()
        except OSError as err:
            print(f"cannot write the job log {path} ({err.strerror})", file=previous)
