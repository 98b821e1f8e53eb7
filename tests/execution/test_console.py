"""The console of a run (Snakemake logger plugin ``matcond``, set by profiles/default): what it
shows of each kind of Snakemake log record."""

import logging

from snakemake_interface_logger_plugins.common import LogEvent

from snakemake_logger_plugin_matcond import shown


def record(level=logging.INFO, msg="text", **extra) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake", level, __file__, 1, msg, None, None)
    rec.__dict__.update(extra)
    return rec


def test_a_run_hides_each_jobs_lines_and_shows_problems():
    hidden = [
        record(event=LogEvent.JOB_INFO),
        record(event=LogEvent.JOB_FINISHED),
        record(event=LogEvent.JOB_STARTED, msg="Execute 2 jobs..."),
        record(event=LogEvent.SHELLCMD),
        record(msg="Select jobs to execute..."),
    ]
    for rec in hidden:
        assert shown(rec, everything=False, last_step=3) == (False, 3)
        assert shown(rec, everything=True, last_step=3) == (True, 3)  # a dry run lists its jobs
    problems = [
        record(logging.ERROR, "Error in rule train, jobid: 4", event=LogEvent.JOB_ERROR),
        record(logging.WARNING, "Missing metadata"),
        record(logging.ERROR, "boom", event=LogEvent.ERROR),
    ]
    for rec in problems:
        assert shown(rec, everything=False, last_step=3)[0]
    assert shown(record(msg="Trying to restart job 4."), everything=False, last_step=3)[0]


def test_progress_is_shown_at_each_tenth_and_at_the_end():
    step, lines = -1, []
    for done in range(1, 180):
        show, step = shown(record(event=LogEvent.PROGRESS, done=done, total=179), False, step)
        if show:
            lines.append(done)
    assert lines == [1, 18, 36, 54, 72, 90, 108, 126, 144, 162, 179]
    step, lines = -1, []
    for done in range(1, 4):  # fewer jobs than steps: every one
        show, step = shown(record(event=LogEvent.PROGRESS, done=done, total=3), False, step)
        lines += [done] if show else []
    assert lines == [1, 2, 3]


def test_the_handler_prints_a_jobs_description_only_when_asked(capsys):
    """``--logger-matcond-jobs`` (the plugin's setting) brings every job's lines back."""
    from types import SimpleNamespace

    from snakemake_logger_plugin_matcond import LogHandler, LogHandlerSettings

    common = SimpleNamespace(dryrun=False, nocolor=True, stdout=False)
    job = record(event=LogEvent.SHELLCMD, msg="echo the job's command")
    for jobs, printed in ((False, ""), (True, "echo the job's command\n")):
        handler = LogHandler(common, LogHandlerSettings(jobs=jobs))
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.emit(job)
        assert capsys.readouterr().err == printed


def test_a_failed_job_is_one_line_with_its_error_and_its_log(tmp_path):
    """It was 86 lines: the job's command twice (the request inside it, kilobytes of JSON)
    and the whole log, its internal traceback before the cause."""
    from snakemake_logger_plugin_matcond import job_error_line

    log = tmp_path / "bad.log"
    log.write_text(
        "run by the job server, pid 1 (child 2)\nTraceback (most recent call last):\n"
        '  File "x.py", line 3, in main\n    raise CheckpointError(...)\n'
        "matcond.own_weights.load.CheckpointError: checkpoint 'bad.pt' is not a torch file\n"
    )
    failed = record(logging.ERROR, "Error in rule x", event=LogEvent.JOB_ERROR)
    failed.__dict__.update(rule_name="analyze_weights", log=[str(log)])
    assert job_error_line(failed) == (
        "Error: rule analyze_weights failed: CheckpointError: checkpoint 'bad.pt' is not a "
        f"torch file\n    log: {log}"
    )
    log.write_text("killed by the out-of-memory killer\n")
    assert job_error_line(failed).startswith("Error: rule analyze_weights failed: killed by")
    failed.__dict__.update(log=[str(tmp_path / "missing.log")])
    assert job_error_line(failed).startswith("Error: rule analyze_weights failed\n    log: ")
    command = record(logging.ERROR, "CalledProcessError: Command 'job.py <<'MATCOND_JOB'\n{...}")
    assert shown(command, everything=False, last_step=0) == (False, 0)
    assert shown(command, everything=True, last_step=0) == (True, 0)


def test_a_run_leaves_out_snakemakes_banner_and_set_up_lines():
    """The first screen was a third Snakemake's banner, its settings and its job table."""
    chatter = [
        record(event=LogEvent.WORKFLOW_STARTED, msg=None),
        record(msg="Assuming unrestricted shared filesystem usage."),
        record(msg="Using shell: /usr/bin/bash"),
        record(msg="Rules claiming more threads will be scaled down."),
        record(msg="Conda environments: ignored"),
    ]
    for rec in chatter:
        assert shown(rec, everything=False, last_step=0) == (False, 0)
        assert shown(rec, everything=True, last_step=0) == (True, 0)
    for kept in ("Building DAG of jobs...", "Provided cores: 2", "Nothing to be done."):
        assert shown(record(msg=kept), everything=False, last_step=0)[0]


def test_the_job_table_is_one_line_largest_count_first(capsys):
    from types import SimpleNamespace

    from snakemake_logger_plugin_matcond import LogHandler, jobs_line

    stats = {"gn_sweep": 17, "train": 89, "plot": 53, "all": 1, "claims": 1, "total": 161}
    assert jobs_line(stats) == "161 jobs: 89 train, 53 plot, 17 gn_sweep, 1 all, 1 claims"
    table = record(event=LogEvent.RUN_INFO, msg="Job stats:\n...", stats=stats)
    handler = LogHandler(SimpleNamespace(dryrun=False, nocolor=True, stdout=False), None)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.emit(table)
    assert capsys.readouterr().err == jobs_line(stats) + "\n"
    dry = LogHandler(SimpleNamespace(dryrun=True, nocolor=True, stdout=False), None)
    dry.setFormatter(logging.Formatter("%(message)s"))
    dry.emit(table)  # a dry run's job table is what it is for
    assert capsys.readouterr().err == "Job stats:\n...\n"
