"""What is at a path when it is not a regular file, found without opening it (a FIFO would
block): the first check of every file the workflow or a user's weights read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def file_kind(path: str | Path) -> str | None:
    """What ``path`` is when it is not a regular file (after symlinks), e.g. 'a FIFO (named
    pipe)', 'a device file', 'a symlink loop', 'a broken symlink', 'a directory', 'missing';
    None for a regular file. Never opens it (a FIFO would block)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symlink loop"
        return "a broken symlink" if os.path.islink(path) else "missing"
    for test, kind in (
        (stat.S_ISREG, None),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a device file"),
        (stat.S_ISBLK, "a device file"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def not_readable_as(path: str | Path, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` (e.g. 'a weight file'), from :func:`file_kind`:
    'does not exist' or 'is a FIFO (named pipe), not <what>'; None for a regular file."""
    if (kind := file_kind(path)) is None:
        return None
    return "does not exist" if kind == "missing" else f"is {kind}, not {what}"
