"""Smoke test of the single-node SLURM test cluster (tests/slurm/cluster.sh).

Submits a CPU job and a job on the fake GPU, checks both through sacct, then stops the
cluster and checks that no daemon survives. The tests share one cluster and run in file
order; the last one stops it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from slurmcluster import SlurmCluster, pid_alive

pytestmark = pytest.mark.workflow  # a SLURM test cluster


def test_cluster_is_up(slurm_cluster: SlurmCluster) -> None:
    print(f"cluster up in {slurm_cluster.up_seconds:.1f} s")
    assert slurm_cluster.run("sinfo", "-h", "-o", "%t").stdout.split() == ["idle"]
    assert slurm_cluster.run("sacct", "-n", "-X", "-a").returncode == 0
    # cluster.sh wrote one PID file per daemon, all alive.
    pids = slurm_cluster.pids()
    assert len(pids) == 5, pids
    assert all(pid_alive(pid) for pid in pids.values()), pids


def test_cpu_job_completes(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job = slurm_cluster.sbatch("-D", str(tmp_path), "-o", "cpu.out", "--wrap", "echo ok")
    assert slurm_cluster.wait_job(job) == "COMPLETED"
    assert (tmp_path / "cpu.out").read_text().strip() == "ok"


def test_gpu_job_sees_device_zero(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job = slurm_cluster.sbatch(
        "--gpus=1",
        "-D",
        str(tmp_path),
        "-o",
        "gpu.out",
        "--wrap",
        'echo "$CUDA_VISIBLE_DEVICES" > cvd.txt',
    )
    assert slurm_cluster.wait_job(job) == "COMPLETED"
    assert (tmp_path / "cvd.txt").read_text().strip() == "0"
    alloc = slurm_cluster.run("sacct", "-n", "-X", "-P", "-j", job, "-o", "AllocTRES").stdout
    assert "gres/gpu=1" in alloc


def test_down_leaves_no_daemon(slurm_cluster: SlurmCluster) -> None:
    pids = slurm_cluster.pids()
    assert len(pids) == 5, pids
    slurm_cluster.down()
    print(f"cluster down in {slurm_cluster.down_seconds:.1f} s")
    alive = {name: pid for name, pid in pids.items() if pid_alive(pid)}
    assert not alive, f"still running after down: {alive}"
    slurm_cluster.down()  # a second down is a no-op
