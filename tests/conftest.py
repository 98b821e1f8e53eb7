"""Shared fixtures."""

import subprocess
import sys
from pathlib import Path

import pytest

from matcond.config import validate_config

REPO = Path(__file__).resolve().parents[1]
SMALL_CONFIG = REPO / "config" / "test" / "config.yaml"


@pytest.fixture
def spec() -> dict:
    """A small, fully specified trial (the schema's defaults at d = 8, seed 0)."""
    config = validate_config({"experiments": {"x": {"seeds": 1}}})
    return {**config["defaults"], "dim": 8, "seed": 0}


@pytest.fixture(scope="session")
def small_run(tmp_path_factory) -> Path:
    """A working directory where the whole small config (config/test/config.yaml, copied as
    its ``config.yaml``) has run to the end: every trial, GN part, table, figure and claim.
    One run for the session, shared by the end-to-end tests; they may dry-run it with edited
    configs but must not change its results (copy it to rerun anything)."""
    workdir = tmp_path_factory.mktemp("small_run")
    (workdir / "config.yaml").write_text(SMALL_CONFIG.read_text())
    cmd = [Path(sys.executable).with_name("snakemake"), "-s", REPO / "Snakefile"]
    cmd += ["--directory", workdir, "--configfile", workdir / "config.yaml", "--cores", "2"]
    proc = subprocess.run([*map(str, cmd)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir
