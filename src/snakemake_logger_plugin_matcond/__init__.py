"""Snakemake logger plugin ``matcond`` (``--logger matcond``, set by profiles/default): a
console that shows a run's progress and its problems, not every job's description.

During a run it prints what Snakemake's console would, less each job's description, its
start and finish lines and the scheduler's "Select jobs to execute..." (four to ten lines per
job); progress is printed at every tenth of the jobs. Warnings, errors and failed jobs (with
their logs, ``show-failed-logs``) are printed in full, as is everything of a dry run (its job
list is what a dry run is for), or of a run with ``--logger-matcond-jobs``. Snakemake's log
file, ``.snakemake/log/*.snakemake.log``, keeps every line either way; ``--quiet`` still
applies on top.
"""

import logging
import sys
from dataclasses import dataclass, field

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

# One line or block per job: its description, start, finish; the scheduler's loop.
PER_JOB = {LogEvent.JOB_INFO, LogEvent.GROUP_INFO, LogEvent.JOB_STARTED, LogEvent.JOB_FINISHED}
PER_JOB |= {LogEvent.SHELLCMD}
SCHEDULER_LINES = ("Select jobs to execute...",)
PROGRESS_STEPS = 10  # progress lines per run


def shown(record: logging.LogRecord, everything: bool, last_step: int) -> tuple[bool, int]:
    """Whether the console shows ``record`` (all records where ``everything``: a dry run, or
    ``--logger-matcond-jobs``), and the progress step shown last (a progress record is shown
    when it reaches a new tenth of the jobs, or the last job)."""
    if everything or record.levelno >= logging.WARNING:
        return True, last_step
    event = getattr(record, "event", None)
    if event in PER_JOB or record.getMessage() in SCHEDULER_LINES:
        return False, last_step
    if event == LogEvent.PROGRESS:
        done, total = record.done, max(record.total, 1)
        step = done * PROGRESS_STEPS // total
        return (step > last_step or done == total), max(step, last_step)
    return True, last_step


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
        if show:
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
