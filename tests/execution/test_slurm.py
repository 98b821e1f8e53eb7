"""The check before a run submits to SLURM (matcond.execution.slurm): the client tools on
PATH and a controller that answers, else one line instead of a silent wait."""

import os
import stat

import pytest

from matcond.execution.slurm import slurm_problem


def fake_tools(directory, scontrol: str, tools=("sbatch", "squeue", "scontrol")) -> str:
    """A PATH of shell scripts standing in for SLURM's tools; ``scontrol`` is its body."""
    directory.mkdir()
    for tool in tools:
        script = directory / tool
        script.write_text("#!/bin/sh\n" + (scontrol if tool == "scontrol" else "exit 0\n"))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(directory)


@pytest.mark.parametrize(
    ("scontrol", "problem"),
    [
        ('echo "Slurmctld(primary) at head is UP"\n', None),
        ('echo "Slurmctld(primary) at head is DOWN"\nexit 1\n', "controller is not up"),
        ("exit 1\n", "controller is not up (`scontrol ping`: 1)"),
        ("sleep 5\n", "did not answer `scontrol ping` within 1 s"),
    ],
    ids=["up", "down", "silent failure", "no answer"],
)
def test_the_controller_must_answer_up(tmp_path, monkeypatch, scontrol, problem):
    monkeypatch.setenv("PATH", fake_tools(tmp_path / "bin", scontrol) + os.pathsep + "/bin")
    found = slurm_problem(timeout=1.0)
    assert found is None if problem is None else problem in found


def test_missing_tools_are_named(tmp_path, monkeypatch):
    path = fake_tools(tmp_path / "bin", "exit 0\n", tools=("sbatch",))
    monkeypatch.setenv("PATH", path)
    assert "needs squeue and scontrol on PATH" in slurm_problem()
