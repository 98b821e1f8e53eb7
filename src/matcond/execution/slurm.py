"""Before a run submits to SLURM: the client tools must be there and the controller must
answer, else the executor waits for its first job's status, silently, for as long as it
polls (17 minutes seen with the tools present and no controller)."""

from __future__ import annotations

import shutil
import subprocess

TOOLS = ("sbatch", "squeue", "scontrol")
PING_SECONDS = 15.0  # how long the controller may take to answer `scontrol ping`


def slurm_problem(timeout: float = PING_SECONDS) -> str | None:
    """Why a run cannot submit to SLURM from this machine (a tool missing from PATH, or
    `scontrol ping` not answered UP within ``timeout``); None if it can."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return (
            f"the SLURM executor (--executor slurm, profiles/slurm) needs {' and '.join(missing)} "
            "on PATH, which this machine lacks: run it where SLURM's client tools are (a login "
            "node), or run locally without the profile"
        )
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"SLURM's controller did not answer `scontrol ping` within {timeout:.0f} s"
    answer = " ".join((ping.stdout + ping.stderr).split())
    if ping.returncode != 0 or "UP" not in answer.split():
        return f"SLURM's controller is not up (`scontrol ping`: {answer or ping.returncode})"
    return None
