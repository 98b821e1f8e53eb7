"""The code stays formatted and `snakemake --lint` stays clean."""

import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["snakefmt", "--check", "Snakefile", "workflow"],
        pytest.param(["snakemake", "--lint"], marks=pytest.mark.workflow),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_clean(command):
    proc = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
