"""Shared fixtures.

The tests run on every core (pytest-xdist, ``-n auto --dist loadfile`` in pyproject.toml: a
worker per core and one more, :func:`pytest_xdist_auto_num_workers`): one test file per worker
at a time, so a module's fixtures are set up once, the longest files first
(:data:`LONGEST_FIRST`); what several files share is made once per session by whichever
worker needs it first (:func:`small_run`) or taken in turn (the SLURM test cluster,
tests/slurm/conftest.py).
"""

import fcntl
import os
import subprocess
from pathlib import Path

import pytest
import torch
import yaml
from support import REPO, SMALL_CONFIG, SNAKEMAKE
from threadpoolctl import threadpool_limits

from matcond.core.config import validate_config
from matcond.server.jobserver import SERVER_THREADS

# Under pytest-xdist every worker, and every process a test starts (Snakemake, its jobs), runs
# BLAS and OpenMP on one thread: left alone, each worker's OpenBLAS and torch start a thread
# per core, and on two cores the workers' threads spin against one another (the workflow's
# jobs are held to their own `threads` the same way, matcond.server.jobserver).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    for variable, value in SERVER_THREADS.items():
        os.environ.setdefault(variable, value)
    threadpool_limits(1)  # what this worker has loaded already

# The test files that take longest, in that order, go to the workers first (longest processing
# time first; `--no-loadscope-reorder` in pyproject.toml keeps this order, where pytest-xdist
# would start the files with the most tests first and these last): the SLURM workflow tests
# wait on the cluster's status polling for most of their ~2.5 min, the others run workflows
# (20-120 s each on two cores; a long file started last would run on alone at the end).
LONGEST_FIRST = (
    "slurm/test_workflow_slurm.py",
    "test_resilience.py",
    "gn_experiments/test_sweeps.py",
    "server/test_jobserver.py",
    "test_workflow.py",
    "core/test_config_files.py",
    "pipeline/test_fingerprints.py",
    "own_weights/test_own_weights.py",
)


# What makes a test an end-to-end one (marker `workflow`; `pytest -m "not workflow"` is the
# fast loop): starting one of these programs or modules. A test not so marked that starts
# one fails, saying so (:func:`_end_to_end_tests_carry_their_marker`), so the mark stays true.
END_TO_END = ("snakemake", "mkdocs", "matcond.server.jobserver", "slurmctld", "sbatch", "pip")
_RUNNING: list = [None]  # the test being set up, run or torn down (its fixtures' too)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem) -> None:
    _RUNNING[0] = item


_start = subprocess.Popen.__init__


def _end_to_end_tests_carry_their_marker(self, args, *rest, **kwargs) -> None:
    """subprocess.Popen, except that a test without the ``workflow`` marker (or a fixture it
    sets up) that starts a program of END_TO_END fails, naming the marker."""
    item = _RUNNING[0]
    if item is not None and not item.get_closest_marker("workflow"):
        words = [args] if isinstance(args, (str, os.PathLike)) else list(args)
        words = [w for arg in words for w in str(arg).split()]
        if any(Path(w).name in END_TO_END for w in words):
            raise RuntimeError(
                f"{item.nodeid} starts {' '.join(words[:4])}: mark it @pytest.mark.workflow "
                "(an end-to-end test, left out of the fast loop)"
            )
    _start(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _end_to_end_tests_carry_their_marker


def pytest_collection_modifyitems(items) -> None:
    """Mark the tests that use the shared small run ``workflow``; put the files of
    LONGEST_FIRST first, in its order; the others keep theirs."""
    for item in items:
        if "small_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.workflow)

    def rank(item) -> int:
        path = item.path.relative_to(REPO / "tests").as_posix()
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: a worker per core and one more, which the SLURM tests' waiting leaves the
    cores to."""
    return len(os.sched_getaffinity(0)) + 1


@pytest.fixture
def spec() -> dict:
    """A small, fully specified trial (the schema's defaults at d = 8, seed 0)."""
    config = validate_config({"experiments": {"x": {"seeds": 1}}})
    return {**config["defaults"], "dim": 8, "seed": 0}


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests, as the rules use (tiny problems: threads only
    contend); the GN rooms' conftests use it for every test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def gn_config() -> dict:
    """The validated ``gauss_newton`` block of the small config."""
    return validate_config(yaml.safe_load(SMALL_CONFIG.read_text()))["gauss_newton"]


@pytest.fixture(scope="session")
def small_run(tmp_path_factory) -> Path:
    """A working directory where the whole small config (config/test/config.yaml, copied as
    its ``config.yaml``) has run to the end: every trial, GN part, table, figure and claim.
    One run for the session, shared by the end-to-end tests; they may dry-run it with edited
    configs but must not change its results (copy it to rerun anything)."""
    session_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's basetemp is in the session's
        session_dir = session_dir.parent
    workdir, failed = session_dir / "small_run", session_dir / "small_run.failed"
    with open(session_dir / "small_run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be making it: wait for it
        if not workdir.exists() and not failed.exists():
            workdir.mkdir()
            (workdir / "config.yaml").write_text(SMALL_CONFIG.read_text())
            cmd = [SNAKEMAKE, "-s", REPO / "Snakefile"]
            cmd += ["--directory", workdir, "--configfile", workdir / "config.yaml"]
            proc = subprocess.run([*map(str, cmd), "--cores", "2"], capture_output=True, text=True)
            (session_dir / "small_run.console").write_text(proc.stdout + proc.stderr)
            if proc.returncode:
                failed.write_text(proc.stdout[-3000:] + proc.stderr[-3000:])
    assert not failed.exists(), failed.read_text()
    return workdir
