"""The job server: same bytes as a job run in its own process, for a trial and for the
other rules; clean failure and shutdown."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import psutil
import pytest
import yaml
from support import REPO, SNAKEMAKE

from matcond.core.trials import Block, Trial
from matcond.server import client
from matcond.server.client import (
    ADDRESS_ENV,
    SERVED_BY,
    NamedList,
    execute,
    job_from_request,
    request_job,
)
from matcond.server.jobserver import (
    MAX_REQUEST_BYTES,
    PREFIX,
    REQUEST_SECONDS,
    SERVER_THREADS,
    SOCKET,
    STARTUP_SECONDS,
    JobServer,
    connection_cap,
    slurm_group_rules,
)

pytestmark = pytest.mark.workflow  # a job server for the module; runs through it


@pytest.fixture(scope="module")
def server():
    started = JobServer.start()
    assert started is not None
    yield started
    started.stop()


def request(rule: str, output: dict, log: Path, **fields) -> dict:
    """A job's request as its shell command sends it (matcond.server.client.job_params)."""
    empty = {"entries": [], "named": {}}
    return {
        "rule": rule,
        "input": empty,
        "output": {"entries": list(output.values()), "named": output},
        "wildcards": {},
        "params": {},
        "threads": 1,
        "resources": {"device": "cpu"},
        "config": {"device": "cpu", "gpu_jobs": 1},
        "log": str(log),
        **fields,
    }


def job(spec: dict, directory: Path, name: str, seeds: tuple[int, ...] = ()) -> dict:
    """A training job's request: the block of ``seeds`` (else the spec's seed) of the setting
    of ``spec``, saving their weights; its files go to ``directory``/``name``/."""
    out = directory / name
    out.mkdir(parents=True, exist_ok=True)
    trials = [
        Trial(json.dumps({**spec, "seed": s}, sort_keys=True)) for s in seeds or [spec["seed"]]
    ]
    block = Block(tuple(trials), 0, 64)
    output = {"manifest": str(out / "seeds0-63.json"), "benchmark": str(out / "bench.tsv")}
    params = {"block": block.request(saved={t.path for t in trials})}
    return request("train", output, out / "job.log", params=params)


def trial_file(job: dict, seed: int, suffix: str) -> Path:
    """Where a training job writes a trial's file: beside its manifest."""
    return Path(job["output"]["named"]["manifest"]).with_name(f"seed{seed}{suffix}")


def run_here(job: dict) -> None:
    """Run a job in this process, as the client does without a server."""
    execute(job_from_request(job))


def test_a_request_gives_the_job_what_snakemake_gives_a_script():
    job = job_from_request(
        request(
            "plot",
            {"png": "f.png", "pdf": "f.pdf"},
            Path("f.log"),
            input={"entries": ["a", "b", "c"], "named": {"one": "a", "two": ["b", "c"]}},
            wildcards={"figure": "fig1"},
            params={"caption": "text"},
        )
    )
    assert list(job.input) == ["a", "b", "c"] and job.input[1] == "b"
    assert job.input.one == "a" and job.input.two == ["b", "c"]
    assert dict(job.input.items()) == {"one": "a", "two": ["b", "c"]}
    assert job.output.png == "f.png" and list(job.output) == ["f.png", "f.pdf"]
    assert job.wildcards.figure == "fig1" and job.params.caption == "text"
    assert job.log[0] == "f.log" and job.threads == 1 and job.resources.device == "cpu"
    assert job.config == {"device": "cpu", "gpu_jobs": 1}
    with pytest.raises(AttributeError):
        job.output.missing  # noqa: B018
    assert NamedList(["x"], {"items": "x"}).items() == {"items": "x"}.items()


def children(server: JobServer) -> list[psutil.Process]:
    return psutil.Process(server.process.pid).children()


def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_client_imports_no_more_than_the_standard_library():
    """What every job's shell command starts (scripts/job.py) stays light: no Snakemake, no
    numpy or torch (a `script:` job imported Snakemake, ~0.1 s of CPU per job)."""
    code = (
        "import sys\n"
        "import matcond.server.client\n"
        "heavy = {'snakemake', 'numpy', 'torch', 'pandas', 'threadpoolctl', 'yaml'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_same_bytes_as_in_process(server, spec, tmp_path, monkeypatch):
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    served = job(spec, tmp_path / "served", "trial")
    assert request_job(served) == 0
    local = job(spec, tmp_path / "local", "trial")
    run_here(local)
    for suffix in (".parquet", ".safetensors"):
        mine = trial_file(local, spec["seed"], suffix).read_bytes()
        assert trial_file(served, spec["seed"], suffix).read_bytes() == mine, suffix
    same_file(local, served, "manifest")
    served_log, local_log = (Path(j["log"]).read_text() for j in (served, local))
    assert served_log.startswith(f"{SERVED_BY}{server.process.pid} (child ")
    assert "compute_seconds=" in served_log and SERVED_BY not in local_log
    # the benchmark is the training process's own: torch's memory, not the waiting client's
    bench = pd.read_csv(served["output"]["named"]["benchmark"], sep="\t").iloc[0]
    assert bench["max_rss"] > 100 and 0 < bench["compute_s"] <= bench["s"]
    assert bench["cpu_time"] > 0


def same_file(local: dict, served: dict, key: str) -> bytes:
    """The bytes of output ``key`` of the local job, asserted equal to the served job's."""
    mine = Path(local["output"]["named"][key]).read_bytes()
    assert Path(served["output"]["named"][key]).read_bytes() == mine, key
    return mine


def test_an_aggregation_served_is_the_same_as_in_process(server, spec, tmp_path, monkeypatch):
    """Not only trials: any rule's job (here `aggregate`) gives the same bytes either way."""
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    cell = Trial(json.dumps(spec, sort_keys=True)).cell
    block = job(spec, tmp_path / "results" / "trials", cell, seeds=(0, 1))
    run_here(block)
    inputs = [str(Path(block["output"]["named"]["manifest"]).relative_to(tmp_path))]
    trials = json.dumps({cell: [0, 1]})

    def aggregation(name: str) -> dict:
        out = tmp_path / name
        out.mkdir()
        files = {"parquet": "t.parquet", "csv": "t.csv", "per_trial": "p.parquet"}
        return request(
            "aggregate",
            {k: str(out / v) for k, v in files.items()},
            out / "job.log",
            input={"entries": inputs, "named": {}},
            params={"swept": "[]", "trials": trials},
            wildcards={"experiment": "e"},
        )

    monkeypatch.chdir(tmp_path)
    served, local = aggregation("served"), aggregation("local")
    assert request_job(served) == 0
    run_here(local)
    for key in ("parquet", "csv", "per_trial"):
        same_file(local, served, key)
    assert "2 trials -> " in Path(served["log"]).read_text()


def test_without_a_server_the_caller_runs_the_trial(spec, tmp_path, monkeypatch):
    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    assert request_job(job(spec, tmp_path, "a")) is None
    monkeypatch.setenv(ADDRESS_ENV, str(tmp_path / "gone.sock"))  # a server that stopped
    assert request_job(job(spec, tmp_path, "b")) is None
    assert not list(tmp_path.rglob("*.parquet"))


def test_a_failing_trial_reports_its_status_and_logs_the_traceback(
    server, spec, tmp_path, monkeypatch
):
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    failing = job({**spec, "optimizer": "lbfgs"}, tmp_path, "bad")
    assert request_job(failing) == 1
    assert "Traceback" in Path(failing["log"]).read_text()
    assert not trial_file(failing, spec["seed"], ".parquet").exists()
    assert not Path(failing["output"]["named"]["manifest"]).exists()
    assert server.process.poll() is None  # the server goes on


def long_trial(spec: dict, tmp_path: Path) -> dict:
    return job({**spec, "dim": 64, "epochs": 200_000, "record_every": 200_000}, tmp_path, "long")


def test_a_job_that_goes_away_before_its_request_leaves_the_server_running(server):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    conn.close()
    time.sleep(0.2)
    assert server.process.poll() is None and not children(server)


def test_an_idle_connection_holds_up_no_other_job(server, spec, tmp_path, monkeypatch):
    """A client that connects and sends no request line (a stray connection) neither blocks
    the next job nor stays open past REQUEST_SECONDS."""
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(server.address)
    idle.sendall(b'{"rule": ')  # no newline
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    trial = job(spec, tmp_path, "after_idle", seeds=(0,))
    started = time.monotonic()
    assert request_job(trial) == 0
    assert time.monotonic() - started < REQUEST_SECONDS
    idle.settimeout(REQUEST_SECONDS + 30)
    assert idle.recv(1) == b""  # dropped by the server
    idle.close()


def test_the_server_forks_from_its_only_thread(server, spec, tmp_path, monkeypatch):
    """While it holds an idle connection and runs jobs, the server is one thread: a fork
    copies no lock that another thread holds (a559056's server read every connection in a
    thread of its own and forked there; Python 3.12 warned of it on a GPU machine)."""
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(server.address)
    idle.sendall(b'{"rule": ')  # no newline: the request is still being read
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    status = []
    long = threading.Thread(target=lambda: status.append(request_job(long_trial(spec, tmp_path))))
    long.start()
    try:
        wait_until(lambda: len(children(server)) == 1)
        assert psutil.Process(server.process.pid).num_threads() == 1
        short = [job(spec, tmp_path, f"short{i}", seeds=(i,)) for i in range(3)]
        assert [request_job(trial) for trial in short] == [0, 0, 0]
        assert psutil.Process(server.process.pid).num_threads() == 1
    finally:
        idle.close()
        children(server)[0].kill()
        long.join(timeout=30)
    assert status == [-signal.SIGKILL]


def test_a_request_line_too_long_is_answered_busy_unread(server):
    """It was held whole in the server's memory (512 MB: 479 -> 994 MB) before refused."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    conn.settimeout(60)
    with contextlib.suppress(OSError):  # the server may close before it has all of it
        conn.sendall(b"x" * (MAX_REQUEST_BYTES + 1024))
    assert conn.recv(len(client.BUSY)) == client.BUSY
    conn.close()
    assert server.process.poll() is None and not children(server)


def test_a_request_nested_past_pythons_limit_is_refused_and_the_server_goes_on(server):
    """JSON nested 100,000 deep raises RecursionError, not ValueError, in json.loads."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    conn.settimeout(60)
    conn.sendall(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    assert conn.recv(len(client.REFUSED)) == client.REFUSED
    conn.close()
    assert server.process.poll() is None and not children(server)


def test_connections_beyond_the_cap_are_busy_and_their_jobs_run_in_their_own_process(
    server, spec, tmp_path, monkeypatch
):
    """Idle connections hold their slots (until REQUEST_SECONDS); one more is answered BUSY,
    and its job runs in its own process instead of failing or waiting."""
    idle = []
    for _ in range(connection_cap()):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(server.address)
        idle.append(conn)
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    try:
        wait_until(lambda: request_job(job(spec, tmp_path, "busy")) is None, timeout=5)
    finally:
        for conn in idle:
            conn.close()
    wait_until(lambda: request_job(job(spec, tmp_path, "after")) == 0, timeout=REQUEST_SECONDS)


def test_another_users_server_directory_is_neither_removed_nor_connected_to(tmp_path, monkeypatch):
    """A `matcond-jobs-*` directory another user planted, with a socket whose backlog is full:
    connecting to it blocked the start of root's server (still blocked at 45 s)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"{PREFIX}planted"
    planted.mkdir()
    trap = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    trap.bind(str(planted / SOCKET))
    trap.listen(0)
    waiting = []
    for _ in range(3):  # fill its backlog
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            conn.connect(str(planted / SOCKET))
        waiting.append(conn)
    old = time.time() - 2 * STARTUP_SECONDS
    os.utime(planted, (old, old))
    if os.getuid() == 0:
        os.chown(planted, 65534, 65534)  # nobody's
    started = time.monotonic()
    own = JobServer.start()
    try:
        assert own is not None and time.monotonic() - started < 60
        assert planted.exists()
    finally:
        own.stop()
        trap.close()
        for conn in waiting:
            conn.close()


def test_a_server_that_does_not_answer_fails_the_job_naming_it(tmp_path, monkeypatch):
    """A listener that never starts the job (a stopped server, or a stale address of another
    run's): the job fails after ANSWER_SECONDS with a message, instead of waiting forever."""
    address = str(tmp_path / "silent.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(1)
    monkeypatch.setenv(ADDRESS_ENV, address)
    monkeypatch.setattr(client, "ANSWER_SECONDS", 0.5)
    with pytest.raises(RuntimeError, match=f"the job server at {address} did not start"):
        request_job({"rule": "x", "log": str(tmp_path / "log")})
    listener.close()


def test_a_job_without_the_servers_token_is_refused_and_runs_in_its_own_process(
    server, spec, tmp_path, monkeypatch
):
    """The server a job talks to must be its run's: a request with another token (another
    run's server at that address) or none is refused, no child is forked, the job runs in
    its own process and the first line of its log says why."""
    for published in (f"{server.address}#{'0' * 32}", server.address):
        monkeypatch.setenv(ADDRESS_ENV, published)
        with pytest.raises(client.JobRefused, match="not this run's server"):
            request_job(job(spec, tmp_path / "refused", "trial"))
        assert not children(server) and server.process.poll() is None
    trial = job(spec, tmp_path / "here", "trial")
    client.run_job(trial, execute)  # as the client does: refused, so run here
    log = Path(trial["log"]).read_text()
    assert log.startswith(f"the job server at {server.address} refused this job")
    assert SERVED_BY not in log and trial_file(trial, spec["seed"], ".parquet").exists()


def test_a_cancelled_job_takes_its_child_with_it(server, spec, tmp_path):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(server.address)
    sent = {**long_trial(spec, tmp_path), "cwd": os.getcwd(), "token": server.token}
    conn.sendall(json.dumps(sent).encode() + b"\n")
    wait_until(lambda: len(children(server)) == 1)
    conn.close()  # what the job's end (kill, Ctrl-C) does to its connection
    wait_until(lambda: not children(server))
    assert not list(tmp_path.rglob("*.parquet"))


def test_a_killed_trial_is_reported_with_its_signal(server, spec, tmp_path, monkeypatch):
    """The trial's child killed (as by the out-of-memory killer): the job learns the signal,
    not that the server stopped; the server goes on."""
    monkeypatch.setenv(ADDRESS_ENV, server.published)
    status = []
    trial = long_trial(spec, tmp_path)
    thread = threading.Thread(target=lambda: status.append(request_job(trial)))
    thread.start()
    wait_until(lambda: len(children(server)) == 1)
    children(server)[0].kill()
    thread.join(timeout=30)
    assert status == [-signal.SIGKILL]
    assert server.process.poll() is None
    wait_until(lambda: not children(server))  # reaped, no zombie left


def test_stopping_the_server_fails_the_running_job(spec, tmp_path, monkeypatch):
    own = JobServer.start()
    monkeypatch.setenv(ADDRESS_ENV, own.published)
    errors = []

    def run() -> None:
        try:
            request_job(long_trial(spec, tmp_path))
        except RuntimeError as err:
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: len(children(own)) == 1)
    child = children(own)[0]
    own.stop()
    thread.join(timeout=30)
    assert errors and "stopped before the job finished" in str(errors[0])
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
    own = JobServer.start()
    assert not stale.exists() and recent.exists()
    own.process.send_signal(signal.SIGTERM)
    own.process.wait(timeout=30)
    assert not own.directory.exists()
    own.stop()


def test_a_run_through_the_server_writes_what_a_run_without_it_writes(tmp_path):
    """Every output of a small run (trials, weights, tables, figures, claims, report pages),
    with and without the job server, byte for byte."""
    config = {"defaults": {"epochs": 5, "dim": 4}, "experiments": {}}
    config["experiments"]["exp1_dimension"] = {"seeds": 2, "grid": {"dim": [4, 8]}}
    outputs = {}
    for server in (True, False):
        workdir = tmp_path / f"server-{server}"
        workdir.mkdir()
        (workdir / "config.yaml").write_text(yaml.safe_dump({**config, "job_server": server}))
        cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", workdir, "--cores", "2"]
        cmd += ["--configfile", workdir / "config.yaml"]
        subprocess.run(list(map(str, cmd)), check=True, capture_output=True)
        results = workdir / "results"
        outputs[server] = {
            str(p.relative_to(results)): p.read_bytes()
            for p in results.rglob("*")
            if p.is_file() and p.parts[len(results.parts)] not in ("logs", "benchmarks")
        }
    assert len(outputs[True]) > 20 and any(p.endswith(".png") for p in outputs[True])
    assert sorted(outputs[True]) == sorted(outputs[False])
    assert [p for p in outputs[True] if outputs[True][p] != outputs[False][p]] == []


# Loaded at the start of a server's Python (sitecustomize): autograd's engine as it is on a
# machine where torch sees a GPU. There the first backward pass in a process starts the engine's
# device threads, and a child forked after it fails every backward pass of its own; without a
# GPU nothing shows, so a CPU run could not tell a server that breaks its children from one
# that does not. With AUTOGRAD_AT_START set, the server runs a backward pass at its start.
GPU_AUTOGRAD = """
import os
import torch
from torch.autograd.variable import Variable


class Engine:
    def __init__(self, engine):
        self.engine, self.started_in = engine, None

    def run_backward(self, *args, **kwargs):
        if self.started_in not in (None, os.getpid()):
            raise RuntimeError(
                "Unable to handle autograd's threading in combination with fork-based "
                "multiprocessing (emulated)"
            )
        self.started_in = os.getpid()
        return self.engine.run_backward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.engine, name)


Variable._execution_engine = Engine(Variable._execution_engine)
if os.environ.get("AUTOGRAD_AT_START"):
    torch.ones(1, requires_grad=True).sum().backward()
"""


@pytest.fixture
def gpu_autograd(tmp_path, monkeypatch) -> None:
    """Servers started from here load :data:`GPU_AUTOGRAD` first."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GPU_AUTOGRAD)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))


def test_a_server_leaves_its_children_able_to_run_autograd(
    gpu_autograd, spec, tmp_path, monkeypatch
):
    """A server started as a run starts it (every job module, every warm-up) serves a training
    block, whose child runs backward passes, under autograd's fork rule of a GPU machine:
    nothing before the fork ran one in the server (at a559056 the GN sweep's warm-up called
    torch.func, and this training block failed as every job did on a GPU machine)."""
    started = JobServer.start()
    assert started is not None
    try:
        monkeypatch.setenv(ADDRESS_ENV, started.published)
        block = job(spec, tmp_path, "served")
        status = request_job(block)
        assert status == 0, Path(block["log"]).read_text()[-2000:]
        assert trial_file(block, spec["seed"], ".parquet").exists()
    finally:
        started.stop()


def test_a_server_whose_children_cannot_run_autograd_does_not_start(
    gpu_autograd, monkeypatch, capfd
):
    """A server that ran a backward pass before forking (what a warm-up that computes with
    torch does on a GPU machine) finds it with its probe child, does not start, and says why:
    every job then runs in its own process."""
    monkeypatch.setenv("AUTOGRAD_AT_START", "1")
    assert JobServer.start(rules=["train"]) is None
    err = capfd.readouterr().err
    assert (
        "job server did not start (a forked child cannot run torch (RuntimeError: Unable to "
        "handle autograd's threading in combination with fork-based multiprocessing "
        "(emulated))): every job runs in its own process"
    ) in err, err


def test_a_slurm_group_job_is_told_by_its_command_line():
    """The command line that snakemake-executor-plugin-slurm 2.8.0 puts in a group job's
    sbatch --wrap (abridged) names the rule of each of its jobs; the ones that must not start
    a server name none."""
    group = [
        "/venv/bin/python3", "-m", "snakemake", "--snakefile", "/repo/Snakefile",
        "--target-jobs", "train:block=linear/d8/seeds0-1", "gn_trial:trial=linear/d4/seed0",
        "train:block=linear/d4/seeds0-1", "--allowed-rules", "train", "--cores", "1",
        "--executor", "slurm-jobstep", "--jobs", "1", "--mode", "remote",
    ]  # fmt: skip
    assert slurm_group_rules(group) == ["train", "gn_trial", "train"]
    one = group[:7] + group[9:]  # a SLURM job of one block (trials=1)
    assert slurm_group_rules(one) == ["train"]
    inner = group[:-6] + ["--mode", "remote"]  # the Snakemake that srun starts per job
    assert slurm_group_rules(inner) == []
    local = ["/venv/bin/snakemake", "--cores", "2", "--executor", "local"]
    assert slurm_group_rules(local) == slurm_group_rules(["snakemake", "--executor"]) == []
    last = [*group[:5], "--executor", "slurm-jobstep", "--target-jobs", "a:", "b:"]
    assert slurm_group_rules(last) == ["a", "b"]
    equals = [*group[:5], "--executor=slurm-jobstep", "--target-jobs", "a:", "b:", "--cores=1"]
    assert slurm_group_rules(equals) == ["a", "b"]
    attached = [*group[:5], "--executor=slurm-jobstep", "--target-jobs=a:", "--cores", "1"]
    assert slurm_group_rules(attached) == ["a"]
    other = [*group[:5], "--executor=local", "--target-jobs", "a:"]
    assert slurm_group_rules(other) == []


def test_a_server_for_some_rules_imports_their_job_modules_only():
    """A SLURM group job's server (rules named) imports the job modules of those rules and
    not the others (a group of training blocks does not load matplotlib); with no rules
    named, every job module, and their warm-ups (the GN sweep's imports torch._dynamo, which
    its first torch.func call would import in every job)."""
    code = (
        "import sys\n"
        "from matcond.server.jobserver import prepare\n"
        "prepare(rules=sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.startswith('matcond.jobs.')),"
        " 'matplotlib' in sys.modules, 'torch._dynamo' in sys.modules)\n"
    )
    out = {
        rules: subprocess.run(
            [sys.executable, "-c", code, *rules], capture_output=True, text=True, check=True
        ).stdout
        for rules in [("train",), ()]
    }
    assert out[("train",)].strip() == "['matcond.jobs.train'] False False"
    assert "'matcond.jobs.plot'" in out[()] and out[()].strip().endswith("True True")


@pytest.mark.parametrize("threads", [1, 3])
def test_a_job_runs_its_blas_on_its_own_threads(threads, tmp_path, monkeypatch):
    """numpy's and scipy's OpenBLAS (one thread per core if left alone, so that two jobs on two
    cores spin four) and torch's OpenMP use the job's ``threads`` while it runs."""
    import scipy.linalg  # noqa: F401  (its OpenBLAS, loaded as a job module would)
    import torch  # noqa: F401  (its OpenMP)
    from threadpoolctl import threadpool_info

    seen = []
    probe = SimpleNamespace(main=lambda _: seen.extend(threadpool_info()))
    monkeypatch.setitem(sys.modules, "matcond.jobs.probe", probe)
    run_here(request("probe", {}, tmp_path / "probe.log", threads=threads))
    apis = {pool["internal_api"] for pool in seen}
    assert {"openblas", "openmp"} <= apis, seen
    assert all(pool["num_threads"] == threads for pool in seen), seen
    assert sum(pool["internal_api"] == "openblas" for pool in seen) >= 2, seen  # numpy, scipy


def test_the_server_starts_its_blas_on_one_thread(server):
    """Its children then run at the rules' one thread without lowering OpenBLAS's count
    themselves (which halves OpenBLAS's speed on small problems in a forked child)."""
    environment = psutil.Process(server.process.pid).environ()
    assert {k: environment.get(k) for k in SERVER_THREADS} == SERVER_THREADS
    assert SERVER_THREADS["OPENBLAS_NUM_THREADS"] == SERVER_THREADS["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize("server", [True, False])
def test_a_run_never_sends_its_jobs_to_an_inherited_server(tmp_path, server):
    """A stale $MATCOND_JOB_SERVER in the environment (another workflow's live server) gets no
    job of this run, with the run's own server and without one (`job_server: false`): the
    listener there accepts no connection, and the run trains its trials itself."""
    directory = Path(tempfile.mkdtemp(prefix="stale-"))  # short: a socket path has <= 107 bytes
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(directory / SOCKET))
    listener.listen(8)
    listener.settimeout(0.2)
    connections = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                connections.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    config = {"defaults": {"epochs": 2, "dim": 4}, "job_server": server, "experiments": {}}
    config["experiments"]["exp1_dimension"] = {"seeds": 1, "grid": {"dim": [4]}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "--cores", "1"]
    cmd += ["--configfile", tmp_path / "config.yaml", "--until", "train"]
    env = {**os.environ, ADDRESS_ENV: str(directory / SOCKET)}
    try:
        run = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=env)
    finally:
        done.set()
        thread.join(timeout=5)
        listener.close()
        shutil.rmtree(directory, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert connections == []
    assert list((tmp_path / "results" / "trials").rglob("seed0.parquet"))


def test_a_stopped_server_fails_its_waiting_job_within_seconds(spec, tmp_path, monkeypatch):
    """SIGSTOP on the server: a job that asks it fails within a few POLL_SECONDS naming the
    stopped server (not after ANSWER_SECONDS); after SIGCONT the next job runs there; a
    server gone (its pid file naming a process that has exited) is named as gone."""
    own = JobServer.start()
    assert own is not None
    monkeypatch.setenv(ADDRESS_ENV, own.published)
    try:
        os.kill(own.process.pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=f"the job server at {own.address} is stopped"):
            request_job(job(spec, tmp_path / "stopped", "trial"))
        assert time.monotonic() - started < 10 * client.POLL_SECONDS < client.ANSWER_SECONDS
        os.kill(own.process.pid, signal.SIGCONT)
        assert request_job(job(spec, tmp_path / "resumed", "trial")) == 0
    finally:
        os.kill(own.process.pid, signal.SIGCONT)
        own.stop()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a silent listener ...
    address = str(tmp_path / "silent" / SOCKET)
    Path(address).parent.mkdir()
    listener.bind(address)
    listener.listen(1)
    exited = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    Path(address).with_name("pid").write_text(exited.stdout)  # ... whose server has exited
    monkeypatch.setenv(ADDRESS_ENV, address)
    with pytest.raises(RuntimeError, match="is gone"):
        request_job({"rule": "x", "log": str(tmp_path / "log")})
    listener.close()


def test_jobs_started_at_once_write_the_bytes_of_jobs_run_one_by_one(tmp_path):
    """80 training jobs started together through scripts/job.py (more than the listen
    backlog: some may run in their own process) against the same jobs run here one by one:
    every job accounted for, every trial file the same bytes (benchmarks/server_stress.py
    runs rounds of 100)."""
    import importlib.util

    path = REPO / "benchmarks" / "server_stress.py"
    loaded = importlib.util.spec_from_file_location("server_stress", path)
    stress = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(stress)
    (result,) = stress.stress(80, 1, tmp_path)
    assert result["failed"] == 0 and result["served"] + result["own process"] == 80
    assert result["missing"] == 0 and result["differ"] == 0
