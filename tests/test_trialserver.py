"""The trial server: same bytes as a trial run in its own process, clean failure and shutdown."""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from matcond.execution.trialserver import (
    ADDRESS_ENV,
    PREFIX,
    STARTUP_SECONDS,
    TrialServer,
    request_trial,
)
from matcond.run import run_trial_job


@pytest.fixture(scope="module")
def server():
    started = TrialServer.start()
    assert started is not None
    yield started
    started.stop()


def job(spec: dict, directory: Path, name: str) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spec_json": json.dumps(spec, sort_keys=True),
        "table": str(directory / f"{name}.parquet"),
        "weights": str(directory / f"{name}.safetensors"),
        "log": str(directory / f"{name}.log"),
        "benchmark": str(directory / f"{name}.tsv"),
        "threads": 1,
        "device": "cpu",
    }


def children(server: TrialServer) -> list[psutil.Process]:
    return psutil.Process(server.process.pid).children()


def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_same_bytes_as_in_process(server, spec, tmp_path, monkeypatch):
    monkeypatch.setenv(ADDRESS_ENV, server.address)
    served = job(spec, tmp_path / "served", "trial")
    assert request_trial(**served) == 0
    local = job(spec, tmp_path / "local", "trial")
    run_trial_job(**local)
    for key in ("table", "weights"):
        assert Path(served[key]).read_bytes() == Path(local[key]).read_bytes()
    assert "compute_seconds=" in Path(served["log"]).read_text()
    # the benchmark is the training process's own: torch's memory, not the waiting client's
    bench = pd.read_csv(served["benchmark"], sep="\t").iloc[0]
    assert bench["max_rss"] > 100 and 0 < bench["compute_s"] <= bench["s"]
    assert bench["cpu_time"] > 0


def test_without_a_server_the_caller_runs_the_trial(spec, tmp_path, monkeypatch):
    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    assert request_trial(**job(spec, tmp_path, "a")) is None
    monkeypatch.setenv(ADDRESS_ENV, str(tmp_path / "gone.sock"))  # a server that stopped
    assert request_trial(**job(spec, tmp_path, "b")) is None
    assert not list(tmp_path.glob("*.parquet"))


def test_a_failing_trial_reports_its_status_and_logs_the_traceback(
    server, spec, tmp_path, monkeypatch
):
    monkeypatch.setenv(ADDRESS_ENV, server.address)
    failing = job({**spec, "optimizer": "lbfgs"}, tmp_path, "bad")
    assert request_trial(**failing) == 1
    assert "Traceback" in Path(failing["log"]).read_text()
    assert not Path(failing["table"]).exists()
    assert server.process.poll() is None  # the server goes on


def long_trial(spec: dict, tmp_path: Path) -> dict:
    return job({**spec, "dim": 64, "epochs": 200_000, "record_every": 200_000}, tmp_path, "long")


def test_a_job_that_goes_away_before_its_request_leaves_the_server_running(server):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    conn.close()
    time.sleep(0.2)
    assert server.process.poll() is None and not children(server)


def test_a_cancelled_job_takes_its_child_with_it(server, spec, tmp_path):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    conn.sendall(json.dumps(long_trial(spec, tmp_path)).encode() + b"\n")
    wait_until(lambda: len(children(server)) == 1)
    conn.close()  # what the job's end (kill, Ctrl-C) does to its connection
    wait_until(lambda: not children(server))
    assert not list(tmp_path.glob("*.parquet"))


def test_a_killed_trial_is_reported_with_its_signal(server, spec, tmp_path, monkeypatch):
    """The trial's child killed (as by the out-of-memory killer): the job learns the signal,
    not that the server stopped; the server goes on."""
    monkeypatch.setenv(ADDRESS_ENV, server.address)
    status = []
    trial = long_trial(spec, tmp_path)
    thread = threading.Thread(target=lambda: status.append(request_trial(**trial)))
    thread.start()
    wait_until(lambda: len(children(server)) == 1)
    children(server)[0].kill()
    thread.join(timeout=30)
    assert status == [-signal.SIGKILL]
    assert server.process.poll() is None
    wait_until(lambda: not children(server))  # reaped, no zombie left


def test_stopping_the_server_fails_the_running_job(spec, tmp_path, monkeypatch):
    own = TrialServer.start()
    monkeypatch.setenv(ADDRESS_ENV, own.address)
    errors = []

    def run() -> None:
        try:
            request_trial(**long_trial(spec, tmp_path))
        except RuntimeError as err:
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: len(children(own)) == 1)
    child = children(own)[0]
    own.stop()
    thread.join(timeout=30)
    assert errors and "stopped before the trial finished" in str(errors[0])
    wait_until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE)
    assert not Path(own.address).exists()


def test_a_terminated_server_removes_its_directory_and_stale_ones_go(tmp_path, monkeypatch):
    """SIGTERM (what the server gets when its Snakemake dies) removes the socket's directory;
    a directory left by a SIGKILLed server is removed by the next start once it is old enough
    to be no starting server's, a recent one is left alone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale, recent = tmp_path / f"{PREFIX}stale", tmp_path / f"{PREFIX}recent"
    stale.mkdir()
    recent.mkdir()
    old = time.time() - 2 * STARTUP_SECONDS
    os.utime(stale, (old, old))
    own = TrialServer.start()
    assert not stale.exists() and recent.exists()
    own.process.send_signal(signal.SIGTERM)
    own.process.wait(timeout=30)
    assert not own.directory.exists()
    own.stop()
