"""The workflow's own console lines (notes before any job, the run's last line).

A console that goes away (``snakemake ... | head``, a closed terminal), one that cannot take
a line (``2>/dev/full``: ENOSPC) or none at all (``2>&-``: ``sys.stderr`` is None) must not
stop a run: Snakemake's own log lines survive it, so ours do too, and a line that cannot be
written is dropped. The first write that fails points the stream at the null device, so that
nothing later (ours, Snakemake's, Python's flush at exit) fails on it; the run's log file
under ``.snakemake/log`` keeps Snakemake's record.
"""

import os
import sys
from typing import TextIO


def say(line: str, stream: TextIO | None = None) -> None:
    """Write ``line`` and a newline to ``stream`` (default: standard error) and flush. No
    stream drops the line; one that fails (broken pipe, full disk, closed) drops it and is
    silenced for the rest of the process instead of raising."""
    stream = sys.stderr if stream is None else stream
    if stream is None:  # the process started without one
        return
    try:
        stream.write(f"{line}\n")
        stream.flush()
    except (OSError, ValueError):  # ValueError: a closed file object
        silence(stream)


def note(text: str) -> None:
    """A ``Note: ...`` line on standard error (see :func:`say`)."""
    say(f"Note: {text}")


def silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device (its buffered text dropped); one
    without a descriptor (closed, in memory) is left as it is."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
