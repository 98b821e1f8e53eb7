"""Snakemake logger plugin ``matcond`` (``--logger matcond``, set by profiles/default): a
console that shows a run's progress and its problems, not every job's description.

During a run it prints what Snakemake's console would, less each job's description, its
start and finish lines and the scheduler's "Select jobs to execute..." (four to ten lines per
job); progress is printed at every tenth of the jobs. A failed job is one line, its rule and
the error its log ends with, then the log's path (:func:`job_error_line`; Snakemake's own
block, with the job's command and its whole log, is in Snakemake's log file). Warnings and
other errors are printed in full, as is everything of a dry run (its job list is what a dry
run is for), or of a run with ``--logger-matcond-jobs``. Snakemake's log
file, ``.snakemake/log/*.snakemake.log``, keeps every line either way; ``--quiet`` still
applies on top.
"""

import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

# One line or block per job: its description, start, finish; the scheduler's loop.
PER_JOB = {LogEvent.JOB_INFO, LogEvent.GROUP_INFO, LogEvent.JOB_STARTED, LogEvent.JOB_FINISHED}
PER_JOB |= {LogEvent.SHELLCMD}
SCHEDULER_LINES = ("Select jobs to execute...",)
# Set-up chatter of every run: Snakemake's banner and what it says about its own settings.
SETUP_EVENTS = {LogEvent.WORKFLOW_STARTED}
SETUP_LINES = (
    "Assuming unrestricted shared filesystem usage.",
    "Using shell: ",
    "Rules claiming more threads will be scaled down.",
    "Conda environments: ignored",
    "Singularity containers: ignored",
)
JOB_HEREDOC = "<<'MATCOND_JOB'"  # in every rule's command (workflow/rules/common.smk, JOB)
PROGRESS_STEPS = 10  # progress lines per run


def shown(record: logging.LogRecord, everything: bool, last_step: int) -> tuple[bool, int]:
    """Whether the console shows ``record`` (all records where ``everything``: a dry run, or
    ``--logger-matcond-jobs``), and the progress step shown last (a progress record is shown
    when it reaches a new tenth of the jobs, or the last job)."""
    if everything:
        return True, last_step
    if record.levelno >= logging.WARNING:
        # a failed job's command, the request inside it (kilobytes of JSON), repeated in
        # Snakemake's exception record: the job's error line says what failed
        return JOB_HEREDOC not in record.getMessage(), last_step
    event = getattr(record, "event", None)
    message = record.getMessage()
    if event in PER_JOB or event in SETUP_EVENTS or message in SCHEDULER_LINES:
        return False, last_step
    if message.startswith(SETUP_LINES):
        return False, last_step
    if event == LogEvent.PROGRESS:
        done, total = record.done, max(record.total, 1)
        step = done * PROGRESS_STEPS // total
        return (step > last_step or done == total), max(step, last_step)
    return True, last_step


def jobs_line(stats: dict) -> str:
    """Snakemake's table of jobs per rule (a run-info record's ``stats``, rule -> count,
    ``total`` included) as one line, the largest count first: "224 jobs: 89 train, ..."."""
    counts = {rule: n for rule, n in stats.items() if rule != "total"}
    total = stats.get("total", sum(counts.values()))
    parts = [f"{n} {rule}" for rule, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"{total} jobs: " + ", ".join(parts)


# The last line of a Python traceback: "package.module.SomeError: what went wrong".
ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*)(?::\s*(.*))?$")
TAIL_BYTES = 65536  # of a failed job's log, read for its error


def job_error_line(record: logging.LogRecord) -> str:
    """A failed job in one line and the path of its log: "rule <rule> failed: <error>"
    where the error is the last ``SomeError: message`` line of its log (else its last line),
    without the exception's module path."""
    rule = getattr(record, "rule_name", "?")
    logs = [str(f) for f in getattr(record, "log", None) or []]
    cause = ""
    for log in logs:
        try:
            with open(log, "rb") as fh:
                fh.seek(max(0, Path(log).stat().st_size - TAIL_BYTES))
                lines = fh.read().decode(errors="replace").splitlines()
        except OSError:
            continue
        found = [m for line in lines if (m := ERROR_LINE.match(line.strip()))]
        if found:
            name, message = found[-1].groups()
            cause = f"{name}: {message}" if message else name
        elif text := [line.strip() for line in lines if line.strip()]:
            cause = text[-1]
    where = f"\n    log: {', '.join(logs)}" if logs else ""
    return f"Error: rule {rule} failed" + (f": {cause}" if cause else "") + where


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    """``--logger-matcond-jobs``: every job's lines too, as Snakemake's own console."""

    jobs: bool = field(
        default=False,
        metadata={"help": "Show every job's description, as Snakemake's own console does."},
    )


class LogHandler(LogHandlerBase):
    """Snakemake's console handler behind :func:`shown`."""

    def __post_init__(self) -> None:
        from snakemake.logging import ColorizingTextHandler

        stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self.console = ColorizingTextHandler(nocolor=self.common_settings.nocolor, stream=stream)
        self.last_step = -1

    def emit(self, record: logging.LogRecord) -> None:
        everything = self.common_settings.dryrun or (self.settings and self.settings.jobs)
        show, self.last_step = shown(record, everything, self.last_step)
        event = getattr(record, "event", None)
        if show and not everything and event == LogEvent.JOB_ERROR:
            print(job_error_line(record), file=self.console.stream, flush=True)
        elif show and not everything and event == LogEvent.RUN_INFO and hasattr(record, "stats"):
            print(jobs_line(record.stats), file=self.console.stream, flush=True)
        elif show:
            self.console.setFormatter(self.formatter)
            self.console.emit(record)

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False  # Snakemake's own filter (--quiet, --printshellcmds) applies first

    @property
    def has_formatter(self) -> bool:
        return False  # Snakemake's own formatter

    @property
    def needs_rulegraph(self) -> bool:
        return False
