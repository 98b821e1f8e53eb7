"""Snakemake's job rate limiter and the local run that turns it off
(:mod:`matcond.execution.scheduler`): with it, each finished job leaves a chain of scheduling
passes, each pass a timer thread; without it, Snakemake's thread count stays flat."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow

JOBS = 40
SNAKEFILE = f"""
from matcond.execution.scheduler import drop_job_rate_limiter

onstart:
    if config["drop"]:
        drop_job_rate_limiter(workflow)

rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

rule one:
    output: "out/{{i}}.txt"
    shell: "sleep 0.2; touch {{output}}"
"""


def most_threads(workdir: Path, drop: bool) -> int:
    """Run the toy workflow (JOBS jobs of 0.2 s on 2 cores) and return the most threads its
    Snakemake process held, polled every 20 ms."""
    (workdir / "Snakefile").write_text(SNAKEFILE)
    command = [str(Path(sys.executable).with_name("snakemake")), "-c", "2", "--quiet"]
    command += ["--directory", str(workdir), "-s", str(workdir / "Snakefile")]
    process = subprocess.Popen(
        [*command, "--config", f"drop={int(drop)}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    most = 0
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            break
        threads = next(int(line.split()[1]) for line in status.splitlines() if "Threads" in line)
        most = max(most, threads)
        time.sleep(0.02)
    _, errors = process.communicate()
    assert process.returncode == 0, errors
    assert len(list((workdir / "out").iterdir())) == JOBS
    return most


def test_a_local_run_without_the_rate_limiter_keeps_no_timer_per_finished_job(tmp_path):
    """Snakemake's default limiter: a timer thread per finished job while jobs wait (the
    control: if Snakemake stops doing so, this module and its call can go); turned off: a
    handful of threads, whatever the number of jobs."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    assert most_threads(tmp_path / "on", drop=False) >= JOBS // 2
    assert most_threads(tmp_path / "off", drop=True) <= 8
