"""Helpers for the single-node SLURM test cluster of ``tests/slurm/cluster.sh``.

The ``slurm_cluster`` fixture (conftest.py) yields a :class:`SlurmCluster`.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_SH = Path(__file__).with_name("cluster.sh")

# Fixed by cluster.sh.
ACCOUNT = "matcond"
PARTITION = "debug"

# Programs cluster.sh needs, from the packages slurmctld, slurmd, slurm-client, munge,
# slurmdbd and mariadb-server.
REQUIRED_PROGRAMS = (
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/sbin/slurmdbd",
    "/usr/bin/sbatch",
    "/usr/bin/sacct",
    "/usr/bin/sacctmgr",
    "/usr/sbin/munged",
    "/usr/sbin/mungekey",
    "/usr/sbin/mariadbd",
    "/usr/bin/mariadb-install-db",
)

# Final job states (sacct), after which a job will not change any more.
FINAL_STATES = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
}


def skip_reason() -> str | None:
    """Why the SLURM cluster cannot be started here, or None if it can."""
    if os.geteuid() != 0:
        return "SLURM test cluster needs root (slurmd must run as root); not running as root"
    missing = [p for p in REQUIRED_PROGRAMS if not os.access(p, os.X_OK)]
    if missing:
        return (
            f"SLURM packages not installed (missing {', '.join(missing)}); "
            "run `tests/slurm/cluster.sh install`"
        )
    return None


def run_script(action: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(CLUSTER_SH), action, str(state_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@dataclass
class SlurmCluster:
    """A running test cluster: its state directory and the environment clients need."""

    state_dir: Path
    env: dict[str, str]
    account: str = ACCOUNT
    partition: str = PARTITION
    up_seconds: float = 0.0
    down_seconds: float | None = field(default=None)

    @property
    def executor_args(self) -> list[str]:
        """Snakemake arguments that submit to this cluster (snakemake-executor-plugin-slurm)."""
        return [
            "--executor",
            "slurm",
            "--default-resources",
            f"slurm_account={self.account}",
            f"slurm_partition={self.partition}",
            "--slurm-init-seconds-before-status-checks",
            "2",
        ]

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess[str]:
        """Run a command (``sbatch``, ``sacct``, ``snakemake`` ...) against this cluster."""
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        kwargs.setdefault("check", True)
        kwargs.setdefault("timeout", 120)
        return subprocess.run(list(args), env=self.env, **kwargs)

    def sbatch(self, *args: str) -> str:
        """Submit a batch job with this cluster's account and partition; return its id."""
        out = self.run(
            "sbatch", "--parsable", "-A", self.account, "-p", self.partition, *args
        ).stdout
        return out.strip().split(";")[0]

    def job_state(self, job_id: str) -> str:
        """The job's state according to sacct ('' while accounting has no record yet)."""
        out = self.run("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State").stdout
        words = out.split()  # e.g. "CANCELLED by 0"
        return words[0] if words else ""

    def wait_job(self, job_id: str, timeout: float = 60.0) -> str:
        """Wait until the job reaches a final state (via sacct) and return that state."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.job_state(job_id)
            if state in FINAL_STATES:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {state or 'unknown'} after {timeout}s")
            time.sleep(0.5)

    def pid_files(self) -> list[Path]:
        """Every daemon PID file cluster.sh uses."""
        return sorted(self.state_dir.rglob("*.pid"))

    def pids(self) -> dict[str, int]:
        """PID per PID file (name relative to the state directory)."""
        pids = {}
        for path in self.pid_files():
            text = path.read_text().strip()
            if text.isdigit():
                pids[str(path.relative_to(self.state_dir))] = int(text)
        return pids

    def down(self) -> None:
        """Stop every daemon (idempotent); raise if ``cluster.sh down`` fails."""
        start = time.monotonic()
        result = run_script("down", self.state_dir)
        if result.returncode != 0:
            raise RuntimeError(f"cluster.sh down failed:\n{result.stdout}\n{result.stderr}")
        if self.down_seconds is None:
            self.down_seconds = time.monotonic() - start


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def client_env(state_dir: Path) -> dict[str, str]:
    """os.environ plus what STATE_DIR/env.sh exports."""
    out = subprocess.run(
        ["bash", "-c", f'. "{state_dir}/env.sh" && env -0'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
