"""Where a Snakemake job's messages go."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def logging_to(path: str) -> Iterator[TextIO]:
    """Send stderr to the job's log file, including the traceback of an exception.

    (``with open(log) as sys.stderr:`` loses it: the traceback is printed after the file is
    closed.)
    """
    with open(path, "w") as log:
        previous, sys.stderr = sys.stderr, log
        try:
            yield log
        except BaseException:
            traceback.print_exc(file=log)
            raise
        finally:
            sys.stderr = previous
