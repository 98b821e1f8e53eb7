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
