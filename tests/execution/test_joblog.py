"""A failing job's traceback reaches its log file (or stderr, on a full disk); a job ends
with the Snakemake process that started it."""

import os
import subprocess
import sys
import time

import pytest

from matcond.execution.joblog import RUN_PID_ENV, logging_to


def test_traceback_lands_in_the_log(tmp_path):
    log = tmp_path / "job.log"
    before = sys.stderr
    with pytest.raises(RuntimeError), logging_to(str(log)):
        print("started", file=sys.stderr)
        raise RuntimeError("config key device is 'cuda' but torch sees no GPU here")
    assert sys.stderr is before
    text = log.read_text()
    assert "started" in text and "RuntimeError: config key device is 'cuda'" in text


def test_a_log_on_a_full_disk_is_said_on_stderr(capsys):
    """/dev/full refuses every write with ENOSPC, as a full disk does: the error and its
    traceback reach the job's stderr (Snakemake's console) instead of vanishing."""
    with pytest.raises(ValueError), logging_to("/dev/full"):
        print("a line", file=sys.stderr)
        raise ValueError("the job's own error")
    err = capsys.readouterr().err
    assert "cannot write the job log /dev/full (No space left on device)" in err
    assert "ValueError: the job's own error" in err


def test_a_job_ends_with_its_snakemake(tmp_path):
    """A job whose Snakemake process is SIGKILLed exits instead of writing its output later."""
    job = (
        "import sys, time\n"
        "from matcond.execution.joblog import logging_to\n"
        f"with logging_to({str(tmp_path / 'job.log')!r}):\n"
        "    time.sleep(5)\n"
        f"    open({str(tmp_path / 'output')!r}, 'w').write('late')\n"
    )
    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = {**os.environ, RUN_PID_ENV: str(run.pid)}
    # as Snakemake starts a script: through a shell that stays between them
    child = subprocess.Popen(
        ["bash", "-c", f'set -e; {sys.executable} -c "$JOB"; true'], env={**env, "JOB": job}
    )
    time.sleep(1.5)
    run.kill()
    run.wait()
    assert child.wait(timeout=10) != 0
    assert not (tmp_path / "output").exists()


def test_without_a_run_pid_the_job_runs_to_the_end(tmp_path, monkeypatch):
    monkeypatch.delenv(RUN_PID_ENV, raising=False)
    with logging_to(str(tmp_path / "job.log")):
        time.sleep(0.2)
    assert (tmp_path / "job.log").exists()
