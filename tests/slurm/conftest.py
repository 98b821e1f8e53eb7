"""A real single-node SLURM cluster for tests, brought up by ``tests/slurm/cluster.sh``.

Use the module-scoped ``slurm_cluster`` fixture: it starts munged, mariadbd, slurmdbd,
slurmctld and slurmd in a fresh state directory (about 5-15 s), yields a
:class:`slurmcluster.SlurmCluster`, and on teardown stops every daemon and checks that none
is left. Tests are skipped, with the reason, unless run as root with the Debian packages
installed (``tests/slurm/cluster.sh install``).

One cluster per machine at a time: a module waits for the lock ``LOCK`` while another
module's (another pytest-xdist worker's) cluster runs. Set ``SLURM_TEST_PORT`` to move the three
TCP ports (default 16817-16819).
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmcluster import SlurmCluster, client_env, pid_alive, run_script, skip_reason

LOCK = Path(tempfile.gettempdir()) / "matcond-slurm-tests.lock"


@pytest.fixture(scope="module")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A fresh single-node SLURM cluster for the test module; stopped and checked afterwards."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from _cluster()


def _cluster() -> Iterator[SlurmCluster]:
    # Short path under /tmp: munged must reach it and socket paths are limited in length.
    state_dir = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))
    start = time.monotonic()
    result = run_script("up", state_dir)
    if result.returncode != 0:
        shutil.rmtree(state_dir, ignore_errors=True)
        pytest.fail(f"cluster.sh up failed:\n{result.stdout}\n{result.stderr}")
    cluster = SlurmCluster(
        state_dir=state_dir,
        env=client_env(state_dir),
        up_seconds=time.monotonic() - start,
    )
    try:
        yield cluster
    finally:
        pids = cluster.pids()
        cluster.down()
        alive = {name: pid for name, pid in pids.items() if pid_alive(pid)}
        if not alive:
            shutil.rmtree(state_dir, ignore_errors=True)
        assert not alive, f"daemons still alive after cluster.sh down (kept {state_dir}): {alive}"
