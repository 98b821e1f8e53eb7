"""A run moves no file while another run works in its directory (matcond.pipeline.runlock)."""

import os
import subprocess
import sys

import pytest

from matcond.pipeline import runlock
from matcond.pipeline.runlock import lock_problem, snakemake_lock


@pytest.fixture(autouse=True)
def unheld(monkeypatch):
    """This process holds no run lock during a test, nor after it."""
    held = []
    monkeypatch.setattr(runlock, "_HELD", held)
    yield
    for fd in held:
        os.close(fd)


def test_a_snakemake_lock_file_of_another_run_is_named(tmp_path):
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("results/claims.csv\n")
    problem = lock_problem(tmp_path / ".snakemake" / "matcond_run.lock", locks)
    assert problem.startswith(
        f"another run holds this directory's lock ({locks / '0.output.lock'};"
    )


def test_no_lock_file_no_problem(tmp_path):
    locks = tmp_path / ".snakemake" / "locks"
    assert snakemake_lock(locks) is None  # no directory yet
    locks.mkdir(parents=True)
    (locks / "notes.txt").write_text("")  # not one of Snakemake's lock files
    assert lock_problem(tmp_path / ".snakemake" / "matcond_run.lock", locks) is None


def test_the_run_lock_of_a_live_run_is_refused_to_another(tmp_path):
    """A live run (here a child process) holds the run lock from its parse on: a second run
    in the directory may not move files, and may once the first has ended."""
    run_lock = tmp_path / ".snakemake" / "matcond_run.lock"
    holder = (
        "import sys; from pathlib import Path; from matcond.pipeline.runlock import hold_run_lock;"
        f"assert hold_run_lock(Path({str(run_lock)!r})) is None; print('held', flush=True);"
        "sys.stdin.read()"
    )
    live = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert live.stdout.readline() == "held\n"
        problem = lock_problem(run_lock, tmp_path / "locks")
        assert problem == f"another run in this directory is going (it holds {run_lock})"
    finally:
        live.communicate("")
    assert lock_problem(run_lock, tmp_path / "locks") is None
