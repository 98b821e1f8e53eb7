"""Run the workflow's local jobs in forked children of one process that imported everything once.

A job that starts Python and imports torch, pandas, pyarrow and matplotlib spends 2-4 s on it,
often far more than its work (a trial at paper scale trains in well under a second, a figure
draws in a fraction of one). So a local run starts one *job server* (``onstart`` in
workflow/rules/common.smk): a process that imports every job module (:mod:`matcond.jobs`)
once (and runs its ``warm_up()``, if it has one: the plot job's fills matplotlib's caches,
the GN sweep's makes torch.func import what it imports on its first call)
and listens on a Unix socket whose path it publishes in ``$MATCOND_JOB_SERVER``. Every job
is still one Snakemake job with its own outputs, log, threads and resources; its shell
command (scripts/job.py, :mod:`matcond.server.client`) sends the job's request and waits,
and the server forks a child that runs exactly what the job would have run in its own process
(:func:`matcond.server.client.execute`) and reports the exit status back.

- A SLURM group job starts a server of its own at parse time (common.smk): its jobs each
  run through ``srun`` and a Snakemake of their own, whose environment names the server.
- No server (``job_server: false``, a SLURM job of one job, ``--sdm conda``, or the server did
  not come up): the job runs in its own process, with the same result bit for bit.
- A job whose client is killed (Snakemake cancels it) takes its child with it: the child exits
  when the connection to its job closes. A child killed by a signal (the out-of-memory
  killer) is reported to its job with that signal. Children die with the server, and the
  server with the Snakemake process that started it (``PR_SET_PDEATHSIG`` on Linux; it is
  also in Snakemake's process group, so Ctrl-C and ``kill -- -<pgid>`` reach it).
- The server has one thread, which accepts, reads the requests, forks and reaps, so that a
  fork never copies a lock that another thread holds (and Python 3.12 does not warn of it).
  A connection that sends no request within :data:`REQUEST_SECONDS` is dropped: an idle
  client holds up no other job. A request line longer than
  :data:`MAX_REQUEST_BYTES`, and a connection beyond :data:`MAX_CONNECTIONS` (or a quarter of
  the descriptors the process may open) served at once, are answered BUSY: the job runs in
  its own process, as it does when the listen backlog (:data:`BACKLOG`) is full. A job checks every
  second that its server runs (its pid beside the socket, /proc) while it waits to be started, and
  fails, saying so, if the server is stopped or gone, or has not started it within
  :data:`matcond.server.client.ANSWER_SECONDS` (hung). A request without the server's
  token (drawn per server, published with its address) is refused: the job runs in its own
  process (each run also drops an inherited ``$MATCOND_JOB_SERVER``).
- Nothing the server runs before it forks may leave a state that a child cannot use: the
  warm-ups only import or fill pure-Python caches (never a torch computation: on a machine
  with a GPU, one backward pass in the server starts autograd's device threads, after which no
  forked child can run a backward pass; a ``torch.func`` call starts the CUDA driver, after
  which no child can use CUDA). By construction, not by care: before it listens, the server
  forks one probe child that does what a job does with torch
  (:func:`matcond.execution.forked.fork_problem`); if that fails, the server does not start
  and says why in one line, and every job runs in its own process. The server is the same for
  every ``device``.
- Snakemake's ``benchmark:`` of a served job measures the waiting client: its wall time is
  the job's, its memory and CPU time are not (a training job writes its own benchmark).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import itertools
import json
import os
import pkgutil
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from matcond.core.console import say
from matcond.execution.forked import fork_problem
from matcond.server.client import (
    BUSY,
    PID_FILE,
    REFUSED,
    STARTED,
    TOKEN_ENV,
    execute,
    job_from_request,
)

READY = b"ready\n"
OFF = b"off "  # then why, on the line the server prints instead of READY
PREFIX = "matcond-jobs-"  # of the server's directory under the temp directory
STARTUP_SECONDS = 120.0  # the longest a server may take to listen
SOCKET = "jobs.sock"  # the server's socket, in its directory
REQUEST_SECONDS = 10.0  # a connection that sends no request line within this is dropped
MAX_REQUEST_BYTES = 2**24  # a request is kilobytes; a longer line is answered BUSY unread
BACKLOG = 64  # connections waiting to be accepted; a job finding it full runs in its process
# Connections served at once (each holds a descriptor and a thread): at most a quarter of the
# process's descriptors, so that the children's files always find one; the rest are BUSY.
MAX_CONNECTIONS = 256
# The server's BLAS and OpenMP start on one thread, the `threads` of every rule: a forked
# child that lowers OpenBLAS's thread count itself runs small problems at half speed (a d = 32
# trial computed 0.09 s instead of 0.05 s); at the job's own count, execute's limit is a no-op.
# With pyarrow's jemalloc started without its background thread (pyarrow allocates through
# mimalloc; jemalloc only purges), the server is one thread when it forks.
SERVER_THREADS = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
}


def slurm_group_rules(argv: Sequence[str]) -> list[str]:
    """The rule of each job that a Snakemake with command line ``argv`` runs as a SLURM group
    job: its ``--target-jobs`` (``rule:wildcards``) if it runs them with executor
    ``slurm-jobstep`` (as the Snakemake does that snakemake-executor-plugin-slurm's sbatch
    starts), else none. Options may be written ``--executor slurm-jobstep`` or
    ``--executor=slurm-jobstep``."""
    args = []
    for arg in argv:  # --option=value -> --option value, as argparse reads it
        option, equals, value = arg.partition("=")
        args += [option, value] if equals and option in ("--executor", "--target-jobs") else [arg]
    executor = args[args.index("--executor") + 1 :][:1] if "--executor" in args else []
    if executor != ["slurm-jobstep"] or "--target-jobs" not in args:
        return []
    after = args[args.index("--target-jobs") + 1 :]
    jobs = itertools.takewhile(lambda arg: not arg.startswith("-"), after)
    return [job.partition(":")[0] for job in jobs]


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies (no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _run_child(conn: socket.socket, job: dict) -> None:
    """In the forked child: run the requested job, send its exit status, exit (never returns)."""
    status = 1
    try:
        _die_with_parent()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

        def exit_if_job_is_gone() -> None:  # the job sends nothing more: EOF means it is gone
            try:
                gone = not conn.recv(1)
            except OSError:  # reset: the job closed with our STARTED unread
                gone = True
            if gone:
                os._exit(1)

        threading.Thread(target=exit_if_job_is_gone, daemon=True).start()
        conn.sendall(STARTED)
        os.chdir(job["cwd"])
        execute(job_from_request(job), server_pid=os.getppid())
        status = 0
    except BaseException:  # execute has logged it to the job's log
        pass
    finally:
        with contextlib.suppress(OSError):
            conn.sendall(f"{status}\n".encode())
        os._exit(status)


def prepare(rules: Sequence[str] = ()) -> None:
    """Import the job module of each rule in ``rules`` (every job module if none: the
    imports every child shares) and run its ``warm_up()``, if it has one: what its jobs would
    each load (lazy imports, pure-Python caches; never a torch computation)."""
    import matcond.jobs

    for rule in rules or [job.name for job in pkgutil.iter_modules(matcond.jobs.__path__)]:
        module = importlib.import_module(f"matcond.jobs.{rule}")
        if hasattr(module, "warm_up"):
            module.warm_up()


def serve(address: str, rules: Sequence[str] = ()) -> None:
    """:func:`prepare` (``rules``' job modules), probe a fork (:func:`fork_problem`: if a
    child cannot run torch, print why after :data:`OFF` and exit), listen on ``address``, fork
    one child per request."""
    _die_with_parent()
    directory = os.path.dirname(address)

    def stop(*_) -> None:  # SIGTERM: from JobServer.stop, or the parent's death
        shutil.rmtree(directory, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    prepare(rules)
    if problem := fork_problem():
        sys.stdout.buffer.write(OFF + problem.encode() + b"\n")
        sys.stdout.flush()
        stop()

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends server and children quietly
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(BACKLOG)
    Path(directory, PID_FILE).write_text(str(os.getpid()))  # a waiting job checks on it
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    os.dup2(2, 1)  # from now on, stdout (the children's too) goes where Snakemake's stderr goes
    _Loop(listener, os.environ.get(TOKEN_ENV, ""), connection_cap()).run()


def connection_cap() -> int:
    """How many connections the server serves at once: :data:`MAX_CONNECTIONS`, or a quarter
    of the descriptors this process may open if that is fewer."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(MAX_CONNECTIONS, soft // 4)) if soft > 0 else MAX_CONNECTIONS


def _busy(conn: socket.socket) -> None:
    """Answer BUSY (the job runs in its own process) and close."""
    with contextlib.suppress(OSError):
        conn.setblocking(True)
        conn.settimeout(1.0)
        conn.sendall(BUSY)
    conn.close()


class _Loop:
    """The server's one thread: accept connections, read each one's request line (a client
    that sends none within :data:`REQUEST_SECONDS` is dropped and holds up no other; one
    longer than :data:`MAX_REQUEST_BYTES` is answered BUSY), refuse a request without
    ``token`` (another run's job: it then runs in its own process and its log says so), fork
    each job's child and report the child's death. One thread, so that every fork copies a
    process in which no other thread can hold a lock the child needs; children's deaths
    arrive as SIGCHLD through the selector (:func:`signal.set_wakeup_fd`)."""

    def __init__(self, listener: socket.socket, token: str, cap: int):
        self.listener, self.token, self.cap = listener, token, cap
        self.reading: dict[socket.socket, tuple[float, bytearray]] = {}  # deadline, bytes so far
        self.running: dict[int, socket.socket] = {}  # child pid -> its job's connection
        self.selector = selectors.DefaultSelector()
        self.wake_read, self.wake_write = os.pipe()
        for fd in (self.wake_read, self.wake_write):
            os.set_blocking(fd, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the fd is written
        signal.set_wakeup_fd(self.wake_write)
        self.selector.register(listener, selectors.EVENT_READ, self._accept)
        self.selector.register(self.wake_read, selectors.EVENT_READ, self._reap)

    def run(self) -> None:
        """Serve until the process is stopped (never returns)."""
        while True:
            deadline = min((d for d, _ in self.reading.values()), default=None)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in self.selector.select(timeout):
                key.data(key.fileobj)
            now = time.monotonic()
            for conn in [c for c, (d, _) in self.reading.items() if d <= now]:
                self._drop(conn)
                conn.close()

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:  # out of descriptors (EMFILE) for a moment: the jobs wait in the backlog
            time.sleep(0.1)
            return
        if len(self.reading) + len(self.running) >= self.cap:
            _busy(conn)
            return
        conn.setblocking(False)
        self.reading[conn] = (time.monotonic() + REQUEST_SECONDS, bytearray())
        self.selector.register(conn, selectors.EVENT_READ, self._read)

    def _drop(self, conn: socket.socket) -> None:
        """Stop reading ``conn`` (its request is read, or it never comes)."""
        self.selector.unregister(conn)
        del self.reading[conn]

    def _read(self, conn: socket.socket) -> None:
        """Read what ``conn`` has sent; once its request line is whole, start it; once it is
        over :data:`MAX_REQUEST_BYTES`, answer BUSY; if the job went away first, close."""
        received = self.reading[conn][1]
        closed = False
        try:
            while chunk := conn.recv(1 << 16):
                received += chunk
                if b"\n" in chunk or len(received) > MAX_REQUEST_BYTES:
                    break
            else:  # closed before it sent a whole line
                closed = True
        except BlockingIOError:  # all there is for now
            pass
        except OSError:  # reset
            closed = True
        line, newline, _ = received.partition(b"\n")
        whole = bool(newline) and len(line) < MAX_REQUEST_BYTES
        if not (whole or closed or len(received) > MAX_REQUEST_BYTES):
            return  # more to come
        self._drop(conn)
        if whole:
            self._start(conn, bytes(line))
        elif closed:
            conn.close()
        else:
            say(f"job server: a request over {MAX_REQUEST_BYTES} bytes, not read")
            _busy(conn)

    def _start(self, conn: socket.socket, request: bytes) -> None:
        """Refuse ``request`` without this run's token, else fork the job's child."""
        conn.setblocking(True)
        try:
            sent = json.loads(request)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            sent = None
        sent = sent if isinstance(sent, dict) else {}
        if sent.get("token") != self.token:
            with contextlib.suppress(OSError):
                conn.sendall(REFUSED)
            conn.close()
            log = sent.get("log", "?")
            say(f"job server: refused a job without this run's token (log {log})")
            return
        pid = os.fork()
        if pid == 0:
            self._leave(conn)
            _run_child(conn, sent)
        self.running[pid] = conn

    def _leave(self, conn: socket.socket) -> None:
        """In a child: close everything of the server's but the job's connection ``conn``."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for other in [self.listener, *self.reading, *self.running.values()]:
            other.close()
        self.selector.close()
        os.close(self.wake_read)
        os.close(self.wake_write)

    def _reap(self, _) -> None:
        """Reap every child that has ended; one a signal killed (before it could send its
        status) is reported to its job as minus the signal's number."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_read, 4096):
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # no child at all
                return
            if pid == 0:
                return
            conn = self.running.pop(pid, None)
            if conn is None:
                continue
            if os.WIFSIGNALED(status):
                with contextlib.suppress(OSError):
                    conn.sendall(f"{-os.WTERMSIG(status)}\n".encode())
            conn.close()


def _remove_stale_directories() -> None:
    """Remove the directories of this user's servers that were killed (SIGKILL leaves them
    behind): those whose socket no longer answers, once older than a server's start-up may
    take. Another user's directories are left alone and never connected to (a socket whose
    backlog is full would block the connect)."""
    for directory in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            info = directory.lstat()
        except OSError:
            continue
        if info.st_uid != os.getuid() or time.time() - info.st_mtime < STARTUP_SECONDS:
            continue
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(1.0)  # a full backlog answers at once (EAGAIN), a stuck one not
        try:
            conn.connect(str(directory / SOCKET))
        except (ConnectionRefusedError, FileNotFoundError):
            shutil.rmtree(directory, ignore_errors=True)
        except OSError:
            pass  # alive and busy, or not ours to judge (permissions)
        finally:
            conn.close()


class JobServer:
    """A running server: :meth:`start` it, publish its address, :meth:`stop` it."""

    def __init__(self, process: subprocess.Popen, directory: Path, token: str):
        self.process = process
        self.directory = directory
        self.address = str(directory / SOCKET)
        self.token = token
        self.published = f"{self.address}#{token}"  # what $MATCOND_JOB_SERVER holds

    @classmethod
    def start(cls, timeout: float = STARTUP_SECONDS, rules: Sequence[str] = ()) -> JobServer | None:
        """Start a server and wait until it listens; None (with a warning, which says why
        where the server could) if it does not. ``rules``: the only rules whose jobs it will
        serve, so the only job modules it imports first (:func:`prepare`); a job of another
        rule still runs, after importing its module."""
        # /tmp, not the working directory: a socket path has at most 107 bytes
        _remove_stale_directories()
        directory = Path(tempfile.mkdtemp(prefix=PREFIX))
        token = secrets.token_hex(16)
        # the server imports the matcond that this process did (the running checkout's src/),
        # whichever one the environment has installed
        package_root = str(Path(__file__).resolve().parents[2])
        pythonpath = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "matcond.server.jobserver",
                str(directory / SOCKET),
                *sorted(set(rules)),
            ],
            stdout=subprocess.PIPE,
            env={**os.environ, **SERVER_THREADS, TOKEN_ENV: token, "PYTHONPATH": pythonpath},
        )
        ready: list[bytes] = []
        reader = threading.Thread(target=lambda: ready.append(process.stdout.readline()))
        reader.start()
        reader.join(timeout)
        server = cls(process, directory, token)
        if ready != [READY]:
            server.stop()
            line = ready[0].decode(errors="replace").strip() if ready else ""
            why = f" ({line.removeprefix(OFF.decode())})" if line.startswith(OFF.decode()) else ""
            say(f"job server did not start{why}: every job runs in its own process")
            return None
        return server

    def stop(self) -> None:
        """Stop the server (its running children die with it) and remove its socket."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        shutil.rmtree(self.directory, ignore_errors=True)


if __name__ == "__main__":
    serve(sys.argv[1], rules=sys.argv[2:])
