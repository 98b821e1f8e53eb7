"""The workflow's own console lines (notes before any job, the run's last line).

A console that goes away (``snakemake ... | head``, a closed terminal) must not stop a run:
Snakemake's own log lines survive a closed stream, so ours do too. The first write that finds
the stream closed points it at the null device, so that nothing later (ours, Snakemake's,
Python's flush at exit) fails on it; the run's log file under ``.snakemake/log`` keeps
Snakemake's record.
"""

import os
import sys
from typing import TextIO


def say(line: str, stream: TextIO | None = None) -> None:
    """Write ``line`` and a newline to ``stream`` (default: standard error) and flush; a closed
    stream (broken pipe) is silenced for the rest of the process instead of raising."""
    stream = sys.stderr if stream is None else stream
    try:
        stream.write(f"{line}\n")
        stream.flush()
    except BrokenPipeError:
        silence(stream)


def note(text: str) -> None:
    """A ``Note: ...`` line on standard error (see :func:`say`)."""
    say(f"Note: {text}")


def silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device (its buffered text dropped)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, stream.fileno())
    finally:
        os.close(null)
