"""The record of the last run in a directory (its config files and ``--config`` values), so
that ``--report`` on other config can name the command that reports on what is there.

The record is ours but lives in the user's directory: whatever is found there (missing,
truncated, not JSON, the wrong shape, a FIFO, a symlink, huge) reads as "no record", never
as an error or a hang, and writing it never follows a symlink.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from matcond.core.files import JSONFileError, read_json
from matcond.core.paths import file_kind

RUN_CONFIG = Path(".snakemake/matcond_run_config.json")
MAX_BYTES = 2**20  # a record names files and values: kilobytes


def write_run_config(record: dict, path: Path = RUN_CONFIG) -> str | None:
    """Write ``record`` to ``path`` through a new file renamed into place (a symlink or
    anything else found at ``path`` is replaced, its target left alone); None once written,
    else why not (e.g. a directory at ``path``), its partial file removed: the run goes on
    without a record."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.unlink(missing_ok=True)
        partial.write_text(json.dumps(record))
        os.replace(partial, path)
    except OSError as err:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass
        return f"the run record {path} cannot be written ({err.strerror or err})"
    return None


def read_run_config(path: Path = RUN_CONFIG) -> dict | None:
    """The record at ``path``: ``{"configfiles": [str], "config": {str: value}}``; None where
    there is none, or what is there is not such a record."""
    if path.is_symlink() or file_kind(path) is not None or path.stat().st_size > MAX_BYTES:
        return None
    try:
        record = read_json(path, "a run record", MAX_BYTES)
    except JSONFileError:  # unreadable, too large, not UTF-8, not JSON
        return None
    if not (
        isinstance(record, dict)
        and set(record) == {"configfiles", "config"}
        and isinstance(record["configfiles"], list)
        and all(isinstance(f, str) for f in record["configfiles"])
        and isinstance(record["config"], dict)
    ):
        return None
    return record


def report_command(record: dict, report: str, argv: list[str] | None = None) -> str:
    """The shell command that builds ``report`` on the results of the run of ``record``,
    every path and value quoted, with the working directory (``--directory``/``-d``) that
    ``argv`` (this invocation's command line) names, if any."""
    command = "snakemake"
    args = list(argv or [])
    for i, arg in enumerate(args):
        if arg in ("--directory", "-d") and i + 1 < len(args):
            command += f" --directory {shlex.quote(args[i + 1])}"
        elif arg.startswith("--directory="):
            command += f" --directory {shlex.quote(arg.partition('=')[2])}"
    command += "".join(f" --configfile {shlex.quote(f)}" for f in record["configfiles"])
    if record["config"]:
        values = [
            f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in record["config"].items()
        ]
        command += " --config " + " ".join(shlex.quote(v) for v in values)
    return f"{command} --report {shlex.quote(report)}"
