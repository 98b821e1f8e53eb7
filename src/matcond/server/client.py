"""A rule's job as its shell command hands it over: to the job server, or run in this process.

Every rule runs ``python scripts/job.py LOG`` with the job's *request* on stdin (its ``job``
param, :func:`job_params`, through ``rule_params`` in workflow/rules/common.smk): a JSON
object with the rule, its inputs and outputs (in order, and by name), wildcards, params,
threads and the config.
Starting that client costs ~25 ms of CPU: it imports only the standard library, where
Snakemake's ``script:`` directive starts Python *and* imports Snakemake (~0.1 s per job, the
bulk of the CPU time outside the jobs of a run of a thousand small jobs). The job itself sees
what a ``script:`` job sees of its ``snakemake`` object (:func:`job_from_request`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# The run's server as ``<socket path>#<token>``: the token, drawn per server, goes with every
# request, and a server refuses a request without its own (another run's job).
ADDRESS_ENV = "MATCOND_JOB_SERVER"
TOKEN_ENV = "MATCOND_JOB_SERVER_TOKEN"  # the server's own token, in its environment
# The protocol: the job sends its request (one line of JSON); the server's child answers
# STARTED at once, then the job's exit status (one line) when it ends; or the server
# answers REFUSED (a request without its token) or BUSY (at its cap of connections, or a
# request line too long: the job then runs in its own process).
STARTED = b"started\n"
REFUSED = b"refused\n"
BUSY = b"busy\n"
# The longest a server may take to start a job: past it the job fails, naming the server
# (stopped, overloaded, or not ours: a stale $MATCOND_JOB_SERVER), instead of waiting forever.
ANSWER_SECONDS = 120.0
# How often a job waiting for its server to start it checks that the server still runs.
POLL_SECONDS = 1.0
PID_FILE = "pid"  # the server's pid, beside its socket


class NamedList(list):
    """A list whose named entries are also attributes, as Snakemake's ``Namedlist``:
    ``output.table``, ``input[0]``, ``for path in input``, ``input.items()``."""

    def __init__(self, entries: list, named: Mapping[str, Any] | None = None):
        super().__init__(entries)
        self._named = dict(named or {})

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_named"][name]
        except KeyError:
            raise AttributeError(name) from None

    def items(self):
        """The named entries, ``(name, value)``, in order."""
        return self._named.items()

    def keys(self):
        """The names, in order."""
        return self._named.keys()


def _named_list(namedlist) -> dict[str, Any]:
    """A Snakemake ``Namedlist`` as JSON: its entries and its named ones."""
    return {"entries": list(namedlist), "named": dict(namedlist.items())}


# Snakemake's report places every param of a job inside an HTML <script> as it is: a param
# whose text holds <, > or & (a user's path, an experiment's description in the config) would
# end that script and run its own. Such a param is shown as this prefix and its
# script_safe_json; the job still gets the value itself, from its request.
SCRIPT_SAFE = "script-safe JSON: "
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def script_safe_json(value: Any) -> str:
    """``value`` as JSON whose text has no ``<``, ``>`` or ``&`` (inside its strings, the
    only place JSON has them, they are written ``\\u003c`` ...: the same JSON once read),
    so that it can stand inside an HTML ``<script>``."""
    return re.sub("[<>&]", lambda match: _SCRIPT_ESCAPES[match.group()], json.dumps(value))


def _script_safe(value: Any) -> Any:
    """A param's value as Snakemake shows it: itself, unless its text holds ``<``, ``>`` or
    ``&`` or starts with :data:`SCRIPT_SAFE`; then :data:`SCRIPT_SAFE` and its
    :func:`script_safe_json` (one-to-one, so that an edit of the value still reruns)."""
    text = value if isinstance(value, str) else str(value)
    if re.search("[<>&]", text) or text.startswith(SCRIPT_SAFE):
        return SCRIPT_SAFE + script_safe_json(value if isinstance(value, str) else text)
    return value


def job_params(rule: str, config: Mapping[str, Any], **params: Any) -> dict:
    """A rule's params: ``params`` (constants or functions of the wildcards) as Snakemake
    shows them (:func:`_script_safe`), and ``job``, the JSON request its shell command sends
    (the params evaluated, Snakemake's ``Namedlist`` objects as entries and named entries;
    :func:`script_safe_json`).

    ``job`` reads the job's inputs, outputs, threads and resources (those that are numbers
    or strings, e.g. a training block's ``device``), which makes it a *derived* param that
    Snakemake leaves out of its rerun trigger: the other params decide reruns, as before.
    """

    def evaluate(wildcards) -> dict[str, Any]:
        return {k: v(wildcards) if callable(v) else v for k, v in params.items()}

    def job(wildcards, input, output, threads, resources) -> str:  # noqa: A002 (Snakemake's)
        return script_safe_json(
            {
                "rule": rule,
                "input": _named_list(input),
                "output": _named_list(output),
                "wildcards": dict(wildcards.items()),
                "params": evaluate(wildcards),
                "threads": threads,
                "resources": {
                    name: value
                    for name, value in resources.items()
                    if isinstance(value, int | float | str) and not name.startswith("_")
                },
                "config": config,
            }
        )

    def shown(value: Any) -> Any:
        if callable(value):
            return lambda wildcards: _script_safe(value(wildcards))
        return _script_safe(value)

    return {**{k: shown(v) for k, v in params.items()}, "job": job}


def job_from_request(request: Mapping[str, Any], note: str = "") -> SimpleNamespace:
    """What a job's ``main`` reads, from its request: ``rule``, ``input``, ``output``,
    ``params``, ``wildcards``, ``resources``, ``log`` (``NamedList``), ``threads``, ``config``;
    and ``note``, a first line for the job's log ('' for none)."""

    def named(key: str) -> NamedList:
        return NamedList(request[key]["entries"], request[key]["named"])

    def mapping(key: str) -> NamedList:
        return NamedList(list(request[key].values()), request[key])

    return SimpleNamespace(
        rule=request["rule"],
        input=named("input"),
        output=named("output"),
        params=mapping("params"),
        wildcards=mapping("wildcards"),
        resources=mapping("resources"),
        log=NamedList([request["log"]]),
        threads=request["threads"],
        config=request["config"],
        note=note,
    )


class JobRefused(RuntimeError):
    """The server named by ``$MATCOND_JOB_SERVER`` is not this run's: it refused the job."""


def request_job(request: Mapping[str, Any]) -> int | None:
    """Run the job on the server named by ``$MATCOND_JOB_SERVER``; its exit status.

    None if there is no server to ask, it is busy, or the connection fails before the job
    starts (closed, reset, a broken pipe: e.g. a server at its cap of connections closing
    it unread); the caller then runs the job itself. JobRefused if the server is another
    run's (its token differs); minus the signal's number if a signal killed the job's
    process (e.g. SIGKILL from the out-of-memory killer). A server that is stopped or gone
    before it starts the job (checked every :data:`POLL_SECONDS`), that does not start it
    within :data:`ANSWER_SECONDS`, or that goes away while the job runs, is an error naming
    it.
    """
    address, hashed, token = os.environ.get(ADDRESS_ENV, "").rpartition("#")
    if not hashed:  # an address without a token (no server of ours publishes one)
        address, token = token, ""
    if not address:
        return None
    deadline = time.monotonic() + ANSWER_SECONDS
    conn = _connect(address, deadline)
    if conn is None:
        return None
    with conn:
        sent = {**request, "cwd": os.getcwd(), "token": token}
        try:
            conn.sendall(json.dumps(sent).encode() + b"\n")
            reply, rest = _line(conn, b"", address, deadline)
        except ConnectionError:  # closed or reset unanswered: the job has not started
            return None
        if reply in (BUSY, b""):  # b"": closed before any answer
            return None
        if reply == REFUSED:
            raise JobRefused(
                f"the job server at {address} refused this job (not this run's server: its "
                "token differs); the job ran in its own process"
            )
        if reply == STARTED:  # the job runs: its status comes when it ends, however long
            try:
                reply, _ = _line(conn, rest, address, None)
            except ConnectionError:
                reply = b""
    if not reply:
        raise RuntimeError(f"the job server at {address} stopped before the job finished")
    return int(reply)


def _connect(address: str, deadline: float) -> socket.socket | None:
    """A connection to the server (None if nothing listens there), retried while its backlog
    is full and the server is alive, until ``deadline``."""
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(POLL_SECONDS)
        try:
            conn.connect(address)
            return conn
        except TimeoutError:
            conn.close()
            _check_alive(address, deadline)
        except OSError:
            conn.close()
            return None


def _line(
    conn: socket.socket, pending: bytes, address: str, deadline: float | None
) -> tuple[bytes, bytes]:
    """The next line from ``conn`` (b'' at its end) and the bytes after it. With a
    ``deadline``, the server is checked every POLL_SECONDS while it is awaited."""
    conn.settimeout(None if deadline is None else POLL_SECONDS)
    while b"\n" not in pending:
        try:
            chunk = conn.recv(4096)
        except TimeoutError:
            _check_alive(address, deadline)
            continue
        if not chunk:
            return pending, b""
        pending += chunk
    line, _, rest = pending.partition(b"\n")
    return line + b"\n", rest


def _check_alive(address: str, deadline: float) -> None:
    """RuntimeError naming the server if it is stopped or gone (its pid file, /proc), or if
    ``deadline`` has passed."""
    state = _server_state(address)
    if state in ("T", "t"):
        why = "is stopped (SIGSTOP or a debugger)"
    elif state in ("Z", "X", "gone"):
        why = "is gone"
    elif time.monotonic() > deadline:
        why = f"did not start the job within {ANSWER_SECONDS:.0f} s (hung, or overloaded)"
    else:
        return
    raise RuntimeError(
        f"the job server at {address} {why}; if it is not this run's, unset {ADDRESS_ENV}"
    )


def _server_state(address: str) -> str | None:
    """The state letter of the server's process (/proc/<pid>/stat: 'R', 'S', 'T' for
    stopped...), 'gone' if it no longer exists, None if that cannot be told (no pid file
    beside the socket, no /proc)."""
    try:
        pid = int(Path(address).with_name(PID_FILE).read_text())
    except (OSError, ValueError):
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone" if Path("/proc/self/stat").exists() else None
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0]


SERVED_BY = "run by the job server, pid "  # a served job's log starts with it


def execute(snakemake, server_pid: int | None = None) -> None:
    """Run ``matcond.jobs.<rule>.main(snakemake)`` with stderr, and the traceback of any
    error, in the job's log, whose first line names the job server if one runs it (here or
    in the server's forked child).

    The BLAS and OpenMP libraries loaded by then (numpy's and scipy's OpenBLAS, torch's
    OpenMP) use the job's ``threads``: left alone, OpenBLAS starts a thread per core in every
    job, and two jobs on two cores spin four threads (a d = 512 trial took 2.2 s beside
    another instead of 0.4 s), and its bits would depend on the machine's core count."""
    from threadpoolctl import threadpool_limits

    from matcond.execution.joblog import logging_to

    module = importlib.import_module(f"matcond.jobs.{snakemake.rule}")  # the job's imports
    with logging_to(snakemake.log[0]), threadpool_limits(limits=snakemake.threads):
        if server_pid is not None:
            print(f"{SERVED_BY}{server_pid} (child {os.getpid()})", file=sys.stderr)
        if getattr(snakemake, "note", ""):
            print(snakemake.note, file=sys.stderr)
        module.main(snakemake)


def run_job(request: Mapping[str, Any], execute: Callable[[SimpleNamespace], None]) -> None:
    """Run the job on the job server if one runs, else here with ``execute``; exit with a
    message naming the log if it fails."""
    note = ""
    try:
        status = request_job(request)
    except JobRefused as refused:
        status, note = None, str(refused)
    if status is None:
        execute(job_from_request(request, note))
    elif status < 0:
        sys.exit(
            f"the job's process on the job server was killed by {signal.Signals(-status).name} "
            f"(SIGKILL: often the out-of-memory killer); the server goes on; log: "
            f"{request['log']}"
        )
    elif status:
        sys.exit(f"rule {request['rule']} failed on the job server: see {request['log']}")


def main(argv: list[str]) -> None:
    """``scripts/job.py LOG``, the request on stdin."""

    run_job({**json.loads(sys.stdin.read()), "log": argv[1]}, execute)
