"""The conda environment of the rules mirrors the pinned pip requirements exactly."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def pins(lines):
    return sorted(
        line.strip() for line in lines if "==" in line and not line.strip().startswith("#")
    )


def test_conda_env_mirrors_requirements():
    with open(REPO / "envs" / "matcond.yaml") as fh:
        env = yaml.safe_load(fh)
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    requirements = (REPO / "requirements.txt").read_text().splitlines()
    assert pins(pip_section) == pins(requirements)
    assert "-e .." in pip_section  # the rules import this repository's package
    assert all("==" in p for p in pins(requirements))


def older_python() -> str | None:
    """A Python 3.10 on this machine (on PATH, or pyenv's), or None."""
    import glob
    import os
    import shutil
    import subprocess

    pyenv = glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10"))
    for found in filter(None, [shutil.which("python3.10"), *pyenv]):
        if subprocess.run([found, "--version"], capture_output=True).returncode == 0:
            return found
    return None


def test_the_install_names_an_unsupported_python_first(tmp_path):
    """The README's install starts with `pip install -q -e .`: on Python 3.10 it stops with
    one line naming the Python it needs, before any pin of requirements.txt fails (with pip's
    list of numpy versions)."""
    import subprocess

    import pytest

    python = older_python()
    if python is None:
        pytest.skip("no Python 3.10 on this machine")
    subprocess.run([python, "-m", "venv", tmp_path / "venv"], check=True)
    pip = tmp_path / "venv" / "bin" / "pip"
    cmd = [pip, "install", "-q", "-e", REPO]  # as the README does
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-2000:]
    assert errors[0].startswith("ERROR: Package 'matcond' requires a different Python: 3.10")
    assert errors[0].endswith("not in '>=3.11'")
