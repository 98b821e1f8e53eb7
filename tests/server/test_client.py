"""A job's client (matcond.server.client) against servers that close its connection: before
the job starts it runs in its own process, as when the server is busy; after, it fails."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from matcond.server.client import ADDRESS_ENV, STARTED, request_job, run_job


def fake_server(address: Path, answer: bytes) -> socket.socket:
    """A listener that accepts each connection and closes it: with the request unread and no
    answer (a server at its cap of connections, closing at once), or having read the request
    and sent ``answer`` (a server that starts the job, then goes away)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener closed: the test is over
                return
            if answer:  # read the request first, as the server does
                received = b""
                while not received.endswith(b"\n"):
                    if not (chunk := conn.recv(65536)):
                        break
                    received += chunk
                conn.sendall(answer)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener


@pytest.mark.parametrize(
    "size", [10, 10**7], ids=["reset before the reply", "broken pipe while sending"]
)
def test_a_connection_closed_unanswered_runs_the_job_in_its_own_process(
    size, tmp_path, monkeypatch
):
    """A short request meets a reset (or EOF) where the reply belongs, a long one a broken
    pipe while it is sent: either way the job runs here, not dies of the error."""
    listener = fake_server(tmp_path / "s.sock", b"")
    monkeypatch.setenv(ADDRESS_ENV, f"{tmp_path / 's.sock'}#token")
    ran = []
    try:
        request = {"rule": "x", "log": str(tmp_path / "log"), "config": "x" * size}
        for _ in range(3):  # a reset, EOF or broken pipe, whichever the timing gives
            assert request_job(request) is None
        job = {
            **request,
            **{k: {"entries": [], "named": {}} for k in ("input", "output")},
            **{k: {} for k in ("params", "wildcards", "resources")},
            "threads": 1,
        }
        run_job(job, ran.append)
    finally:
        listener.close()
    assert [job.rule for job in ran] == ["x"]


def test_a_connection_closed_after_the_job_started_fails_it(tmp_path, monkeypatch):
    """Once STARTED, the job runs on the server: a closed connection is the server gone
    while it ran, an error naming it, never a second run of the job here."""
    address = tmp_path / "s.sock"
    listener = fake_server(address, STARTED)
    monkeypatch.setenv(ADDRESS_ENV, f"{address}#token")
    try:
        with pytest.raises(RuntimeError, match="stopped before the job finished"):
            request_job({"rule": "x", "log": str(tmp_path / "log")})
    finally:
        listener.close()
