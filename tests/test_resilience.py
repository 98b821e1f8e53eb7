"""Interruption, resume and determinism of the workflow on experiments 1-2 of the small config.

A run killed several times (SIGINT and SIGKILL to its whole process group, at seeded random
moments) and then resumed ends with the same bytes as an uninterrupted run, leaves no temp
file, and the resume recomputes only the blocks of seeds that had not finished. After a SIGKILL,
Snakemake leaves its lock and incomplete-output markers: each restart runs `--unlock` first
and uses `--rerun-incomplete`. Trials are also byte-identical under `--cores 1` and `--cores 2`.
"""

import base64
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support import REPO, run_snakemake, snakemake_command

from matcond.core.config import load_yaml

pytestmark = pytest.mark.workflow  # runs interrupted, damaged and rerun, end to end

JOB_SCRIPT = str(REPO / "scripts" / "job.py")  # every job's client (workflow/rules/common.smk)
SEED = 20240611
# Experiments 1-2 of config/test/config.yaml, 4 seeds (12 trials, 2 tables, figures, claims):
# the whole small config (50+ trials) takes minutes per run, and this file runs it three times.
EXPERIMENTS = ("exp1_dimension", "exp2_optimizer")


def write_config(workdir: Path) -> None:
    config = load_yaml(REPO / "config" / "test" / "config.yaml")
    config["experiments"] = {name: config["experiments"][name] for name in EXPERIMENTS}
    config.pop("gauss_newton")  # its sweeps are not what this test interrupts
    # 12 trials of ~1.5 s each (4000 epochs): the run must outlast the third kill, and with
    # the trial server a 20-epoch trial takes a fraction of a second
    config["defaults"]["epochs"] = 4000
    config["block_size"] = 2  # 6 training jobs of 2 trials: several to interrupt
    for name in EXPERIMENTS:
        config["experiments"][name]["seeds"] = 4
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def command(workdir: Path, *args: str) -> list[str]:
    return snakemake_command(workdir, *args, configfile=workdir / "config.yaml")


def snakemake(workdir: Path, *args: str) -> str:
    proc = run_snakemake(workdir, *args, configfile=workdir / "config.yaml")
    return proc.stdout + proc.stderr


def compared_files(workdir: Path) -> dict[str, bytes]:
    """Trial tables, blocks' manifests, experiment tables, claims: path -> bytes."""
    results = workdir / "results"
    paths = [*(results / "trials").rglob("*.parquet"), *(results / "trials").rglob("*.json")]
    paths += [p for p in (results / "tables").glob("*") if p.suffix in (".parquet", ".csv")]
    paths += results.glob("claims.*")
    return {
        str(p.relative_to(workdir)): p.read_bytes() for p in paths if not p.name.startswith(".")
    }


def incomplete(workdir: Path) -> set[str]:
    """Outputs Snakemake marks incomplete (.snakemake/incomplete: urlsafe base64 of the path)."""
    root = workdir / ".snakemake" / "incomplete"
    files = [f for f in root.rglob("*") if f.is_file() and f.name != "migration_underway"]
    parts = ("".join(p.removeprefix("@") for p in f.relative_to(root).parts) for f in files)
    return {base64.urlsafe_b64decode(p).decode() for p in parts}


def finished_blocks(workdir: Path) -> dict[str, tuple[int, ...]]:
    """Blocks whose manifest exists and is not marked incomplete -> the mtimes (ns) of the
    manifest and the trial tables beside it."""
    marked = incomplete(workdir)
    done = {}
    for manifest in (workdir / "results" / "trials").rglob("seeds*.json"):
        rel = str(manifest.relative_to(workdir))
        if rel in marked:
            continue
        try:  # a manifest is written last, and atomically
            listed = json.loads(manifest.read_text())["trials"].values()
            files = [manifest, *(manifest.parent / n for t in listed for n in sorted(t["files"]))]
            done[rel] = tuple(p.stat().st_mtime_ns for p in files)
        except FileNotFoundError:  # removed as we look
            pass
    return done


def survivors(session: int) -> list[str]:
    """Live (non-zombie) processes of a session."""
    ps = subprocess.run(["ps", "-ww", "-o", "stat=,args=", "-s", str(session)], capture_output=True)
    return [line for line in ps.stdout.decode().splitlines() if not line.startswith("Z")]


def running_jobs(session: int) -> int:
    """Jobs that the Snakemake of ``session`` is running now: their clients, the Python
    processes of scripts/job.py (not the shells that start them)."""
    processes = (line.split(maxsplit=2) for line in survivors(session))
    return sum(
        len(p) == 3 and "python" in Path(p[1]).name and p[2].startswith(JOB_SCRIPT)
        for p in processes
    )


def kill_during_run(workdir: Path, sig: signal.Signals, after_done: int, delay: float) -> dict:
    """Start the workflow; once ``after_done`` blocks are finished and a job is running, wait
    ``delay`` s, send ``sig`` to the process group and wait until all of it has gone."""
    with open(workdir / f"interrupted-{time.monotonic_ns()}.log", "w") as log:
        proc = subprocess.Popen(
            command(workdir, "--cores", "2", "--rerun-incomplete"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 900
        while len(finished_blocks(workdir)) < after_done or not running_jobs(proc.pid):
            assert proc.poll() is None, f"the run ended before the {sig.name}"
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.1)
        time.sleep(delay)
        assert proc.poll() is None, f"the run ended before the {sig.name}"
        running = running_jobs(proc.pid)
        os.killpg(proc.pid, sig)
        proc.wait(timeout=300)
        for _ in range(600):  # jobs may take a while to exit on a loaded machine
            if not survivors(proc.pid):
                break
            time.sleep(0.1)
        assert not survivors(proc.pid), survivors(proc.pid)
    return {"signal": sig.name, "running_jobs": running, "finished": len(finished_blocks(workdir))}


def n_trials(workdir: Path) -> int:
    return len(list((workdir / "results" / "trials").rglob("seed*.parquet")))


def n_blocks(workdir: Path) -> int:
    return len(list((workdir / "results" / "trials").rglob("seeds*.json")))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("reference")
    write_config(workdir)
    snakemake(workdir, "--cores", "2")
    return workdir


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict:
    """Kill the workflow three times while jobs run (once >= 1, 2, 3 blocks are finished, after a
    seeded random delay; SIGINT and SIGKILL in seeded order), then run it to completion."""
    workdir = tmp_path_factory.mktemp("interrupted")
    write_config(workdir)
    rng = random.Random(SEED)
    signals = [signal.SIGINT, signal.SIGKILL, rng.choice([signal.SIGINT, signal.SIGKILL])]
    rng.shuffle(signals)
    kills = []
    for after_done, sig in enumerate(signals, start=1):
        kills.append(kill_during_run(workdir, sig, after_done, rng.uniform(0.0, 1.5)))
        if sig == signal.SIGKILL:  # a SIGKILLed Snakemake leaves its lock behind
            snakemake(workdir, "--unlock")
    before = finished_blocks(workdir)
    output = snakemake(workdir, "--cores", "2", "--rerun-incomplete")
    return {"workdir": workdir, "kills": kills, "before": before, "output": output}


def test_interrupted_run_matches_the_reference(reference, resumed):
    workdir = resumed["workdir"]
    print("kills:", resumed["kills"])  # shown with pytest -s or on failure
    assert len(resumed["kills"]) >= 3, resumed["kills"]
    assert {k["signal"] for k in resumed["kills"]} == {"SIGINT", "SIGKILL"}
    assert all(k["running_jobs"] > 0 for k in resumed["kills"]), resumed["kills"]
    expected = compared_files(reference)
    # trial tables and blocks' manifests (no weights: nothing reads them), experiment tables,
    # theory, readings, calibration and diverged-trials tables, claims (CSV, parquet,
    # Markdown, HTML)
    assert (n_trials(reference), n_blocks(reference)) == (12, 6)
    assert len(expected) == 12 + 6 + 2 * len(EXPERIMENTS) + 5 + 1 + 4
    got = compared_files(workdir)
    assert sorted(got) == sorted(expected)
    differ = [path for path in expected if got[path] != expected[path]]
    assert not differ, differ
    figures = sorted(p.name for p in (reference / "results" / "figures").iterdir())
    assert {"fig1_dimension.png", "fig2_optimizer.pdf"} <= set(figures)
    for name in figures:  # matplotlib's bytes may differ: check only that they exist
        assert (workdir / "results" / "figures" / name).stat().st_size > 1000


def test_no_temp_file_or_marker_is_left(resumed):
    workdir = resumed["workdir"]
    assert not list((workdir / "results").rglob(".*.tmp"))
    assert not incomplete(workdir)


def test_resume_recomputes_only_unfinished_blocks(reference, resumed):
    before, workdir, total = resumed["before"], resumed["workdir"], n_blocks(reference)
    assert 3 <= len(before) < total, resumed["kills"]
    now = finished_blocks(workdir)
    assert len(now) == total
    assert {path: now[path] for path in before} == before  # finished blocks were not rewritten
    # the console shows progress only: the run's complete log lists every job
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    trained = re.findall(r"^(?:local)?rule train:$", logs[-1].read_text(), flags=re.M)
    assert len(trained) == total - len(before)


def test_trials_are_identical_on_1_and_2_cores(reference, tmp_path):
    """The first block (seeds 0 and 1) of each of the reference's three trial settings (there
    run two at a time)."""
    write_config(tmp_path)
    manifests = [p for p in compared_files(reference) if p.endswith("/seeds0-1.json")]
    assert len(manifests) == 3
    snakemake(tmp_path, "--cores", "1", *manifests)
    one_core = compared_files(tmp_path)
    assert len(one_core) == 3 * 3  # a manifest and two tables each
    reference_files = compared_files(reference)
    assert [p for p in one_core if one_core[p] != reference_files[p]] == []


def test_damaged_files_are_set_aside_and_rebuilt(reference, tmp_path):
    """Truncated trial table (old mtime kept), a trial table replaced by another seed's, a
    deleted trial table, a truncated table CSV and claims CSV, a 0-byte figure: the next
    plain run names each (and the manifests of the blocks they belong to), moves them to
    results/damaged/ and rebuilds them, byte for byte; the run after that has nothing to do.
    An empty report is moved aside with the command to redo it."""
    workdir = tmp_path / "copy"
    shutil.copytree(reference, workdir, symlinks=True)
    results = workdir / "results"
    trials = sorted((results / "trials").rglob("seed*.parquet"))
    truncated, replaced, deleted = trials[0], trials[5], trials[8]
    assert len({p.parent for p in (truncated, replaced, deleted)}) == 3  # a block each
    stat = truncated.stat()
    truncated.write_bytes(truncated.read_bytes()[:-100])
    os.utime(truncated, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    other_seed = next(p for p in trials if p.parent != replaced.parent)
    shutil.copy(other_seed, replaced)
    deleted.unlink()
    table_csv = results / "tables" / "exp1_dimension.csv"
    table_csv.write_bytes(table_csv.read_bytes()[:-7])
    claims_csv = results / "claims.csv"
    claims_csv.write_bytes(claims_csv.read_bytes()[:-3])
    figure = next((results / "figures").glob("*.png"))
    figure.write_bytes(b"")
    (results / "report.html").write_bytes(b"")  # as an interrupted --report leaves it
    manifests = [
        next(p for p in path.parent.glob("seeds*.json") if f'"{path.name}"' in p.read_text())
        for path in (truncated, replaced, deleted)
    ]
    damaged = [truncated, replaced, *manifests, table_csv, claims_csv, figure]

    dry = snakemake(workdir, "-n")  # names them, moves nothing, says how to see the rebuild
    for path in damaged:
        assert f"Note: {path.relative_to(workdir)} is damaged" in dry and path.exists()
    for query in (["--summary"], ["--list-changes", "params"]):  # queries move nothing either
        shown = snakemake(workdir, *query)
        assert f"Note: {truncated.relative_to(workdir)} is damaged" in shown
        assert all(path.exists() for path in damaged)
        assert not (results / "damaged").exists()
    files = dry.split("to see it, add --forcerun ")[1].split(" to this command")[0].split()
    forced = snakemake(workdir, "-n", "--forcerun", *files)
    assert "Nothing to be done" not in forced
    for path in [*manifests, table_csv, claims_csv, figure]:  # planned, as outputs of jobs
        assert re.search(rf"output: [^\n]*{re.escape(str(path.relative_to(workdir)))}", forced)

    output = snakemake(workdir, "--cores", "2")
    for path in damaged:
        moved = results / "damaged" / path.relative_to(results)
        assert f"Note: {path.relative_to(workdir)} is damaged" in output
        assert moved.exists()
    assert "not the file its block's manifest lists" in output
    assert "seed0.parquet are missing or altered" in output  # the deleted table's manifest
    assert "truncated CSV" in output and "empty file" in output
    assert "make it again with --report results/report.html" in output
    assert (results / "damaged" / "report.html").exists()
    assert not (results / "report.html").exists()
    assert compared_files(workdir) == compared_files(reference)
    assert figure.stat().st_size > 0
    assert "Nothing to be done" in snakemake(workdir, "-n")


def test_a_dangling_symlink_in_place_of_a_trial_file(reference, tmp_path):
    """A dry run names it (and its block's manifest) and plans nothing wrong; the run sets
    it aside and rebuilds the trial byte for byte."""
    workdir = tmp_path / "copy"
    shutil.copytree(reference, workdir, symlinks=True)
    trial = sorted((workdir / "results" / "trials").rglob("seed*.parquet"))[2]
    trial.unlink()
    os.symlink(tmp_path / "nowhere.parquet", trial)
    dry = snakemake(workdir, "-n")
    relative = trial.relative_to(workdir)
    assert f"Note: {relative} is damaged (not a regular file: a broken symlink)" in dry
    snakemake(workdir, "--cores", "2")
    assert not trial.is_symlink()
    assert compared_files(workdir) == compared_files(reference)


def test_a_console_that_goes_away_does_not_stop_the_run(tmp_path):
    """`snakemake ... | head` that has exited: the workflow's notes before any job and its last
    line meet a closed pipe, and the run still ends, rc 0, with its results."""
    write_config(tmp_path)
    config = load_yaml(tmp_path / "config.yaml")
    config["experiments"] = {"exp1_dimension": config["experiments"]["exp1_dimension"]}
    config["defaults"]["epochs"] = 20
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    # like `| head -1`: the reader takes the first line (Snakemake's own) and goes away
    proc = subprocess.Popen(
        command(tmp_path, "--cores", "2"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    proc.stdout.readline()
    proc.stdout.close()
    proc.wait(timeout=600)
    log = max((tmp_path / ".snakemake" / "log").glob("*.log"), default=None)
    assert proc.returncode == 0, log.read_text()[-3000:] if log else "no log"
    assert (tmp_path / "results" / "claims.csv").is_file()


def test_a_read_only_results_with_damage_to_set_aside_is_one_line(reference, tmp_path):
    """results/ mounted read-only (in a mount namespace of its own; skipped where the kernel
    refuses one) holding a damaged table: one `Cannot start` line, not an OSError traceback
    from moving it aside; nothing in it changed."""
    workdir = tmp_path / "copy"
    shutil.copytree(reference, workdir, symlinks=True)
    table_csv = workdir / "results" / "tables" / "exp1_dimension.csv"
    table_csv.write_bytes(table_csv.read_bytes()[:-7])
    results = workdir / "results"
    run = shlex.join(command(workdir, "--cores", "2"))
    script = f"mount --bind {results} {results} && mount -o remount,bind,ro {results} && {run}"
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode
    ):
        pytest.skip("no mount namespace here")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert lines[-1] == (
        f"Cannot start: cannot write to the results directory {results}: Read-only file system"
    )
    assert "Traceback" not in proc.stderr and "OSError" not in proc.stderr
    assert not (results / "damaged").exists()


def test_a_second_run_moves_nothing_while_another_holds_the_lock(tmp_path):
    """A run started beside a live one (its Snakemake lock file in .snakemake/locks) with
    other settings finds the live run's outputs damaged: one `Cannot start` line, and nothing
    set aside (it used to move them first, then meet the lock)."""
    write_config(tmp_path)
    table_csv = tmp_path / "results" / "tables" / "exp1_dimension.csv"
    table_csv.parent.mkdir(parents=True)
    table_csv.write_text("a,b\n1,")  # cut short: damaged
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text(f"{table_csv.relative_to(tmp_path)}\n")
    proc = subprocess.run(command(tmp_path, "--cores", "1"), capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    last = (proc.stdout + proc.stderr).strip().splitlines()[-1]
    lock = Path(".snakemake/locks/0.output.lock")
    assert last.startswith(f"Cannot start: another run holds this directory's lock ({lock};"), last
    assert table_csv.read_text() == "a,b\n1,"
    assert not (tmp_path / "results" / "damaged").exists()


def test_a_results_symlink_loop_is_one_line(tmp_path):
    """results/ a link to itself: Snakemake's listing of its files raised ELOOP."""
    write_config(tmp_path)
    (tmp_path / "results").symlink_to("results")
    proc = subprocess.run(command(tmp_path, "-n"), capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    last = (proc.stdout + proc.stderr).strip().splitlines()[-1]
    assert last == (
        f"Cannot start: the results directory {tmp_path / 'results'} cannot be reached: "
        "Too many levels of symbolic links"
    )
    assert "Traceback" not in proc.stderr


def test_results_damaged_as_a_file_is_one_line(tmp_path):
    """A damaged table to set aside, and a plain file where results/damaged/ goes."""
    write_config(tmp_path)
    table_csv = tmp_path / "results" / "tables" / "exp1_dimension.csv"
    table_csv.parent.mkdir(parents=True)
    table_csv.write_text("a,b\n1,")  # cut short: damaged
    (tmp_path / "results" / "damaged").write_text("a file")
    proc = subprocess.run(command(tmp_path, "--cores", "1"), capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    last = (proc.stdout + proc.stderr).strip().splitlines()[-1]
    assert last.startswith("Cannot start: results/tables/exp1_dimension.csv is damaged ("), last
    assert "cannot be set aside in results/damaged/ (" in last
    assert "Traceback" not in proc.stderr and table_csv.read_text() == "a,b\n1,"


def test_a_run_without_stdout_and_stderr_plans_its_jobs(tmp_path):
    """`snakemake ... >&- 2>&-`: Python starts with sys.stdout and sys.stderr None; the notes
    before any job are dropped, not an AttributeError that stops the run (a dry run: the
    notes are written at parse time, the same in a run)."""
    write_config(tmp_path)
    closed = ["sh", "-c", 'exec "$@" >&- 2>&-', "sh", *command(tmp_path, "-n")]
    assert subprocess.run(closed).returncode == 0
