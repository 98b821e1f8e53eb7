"""The environments: the direct pins (requirements*.in) are pyproject.toml's dependencies, the
locks (requirements*.txt, written by scripts/lock.py) hold every distribution those install,
and the rules' conda environment is the lock's."""

import importlib.util

import pytest
import yaml
from support import REPO


def pins(path) -> dict[str, str]:
    """``name == version`` of each pinned line of a requirements file, by normalised name."""
    from packaging.utils import canonicalize_name

    out = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.strip().startswith("#"):
            name, version = line.strip().split("==")
            out[canonicalize_name(name)] = version
    return out


def lock_script():
    spec = importlib.util.spec_from_file_location("lock", REPO / "scripts" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_conda_environment_is_written_from_the_lock():
    lock = lock_script()
    text = (REPO / "requirements.txt").read_text()
    runtime = dict(line.split("==") for line in text.splitlines() if "==" in line)
    assert (REPO / "envs" / "matcond.yaml").read_text() == lock.conda_text(runtime)
    env = yaml.safe_load((REPO / "envs" / "matcond.yaml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e .." in pip_section  # the rules import this repository's package


def declared() -> dict[str, object]:
    """pyproject.toml's dependencies and its extras, by normalised distribution name."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *sum(project["optional-dependencies"].values(), [])]
    return {canonicalize_name(Requirement(line).name): Requirement(line) for line in lines}


def test_the_direct_pins_are_the_declared_dependencies_inside_their_ranges():
    """requirements.in pins exactly pyproject.toml's dependencies and extras, each inside its
    range."""
    direct = pins(REPO / "requirements.in")
    ranges = declared()
    assert set(direct) == set(ranges)
    outside = {
        n: (v, str(ranges[n].specifier)) for n, v in direct.items() if v not in ranges[n].specifier
    }
    assert not outside


@pytest.mark.parametrize(
    "direct, locks",
    [
        ("requirements.in", ["requirements.txt"]),
        ("requirements-dev.in", ["requirements.txt", "requirements-dev.txt"]),
    ],
)
def test_each_lock_holds_its_direct_pins(direct, locks):
    lock = {}
    for name in locks:
        assert not set(lock) & set(pins(REPO / name)), "a distribution pinned twice"
        lock |= pins(REPO / name)
    assert {n: lock.get(n) for n in pins(REPO / direct)} == pins(REPO / direct)


def test_the_lock_is_closed():
    """Every requirement of every locked distribution (as installed here, for this Python and
    platform) names a locked distribution: the README's test command installs the lock and
    nothing that pip would add. (tests/test_docs.py checks that each is installed at its
    locked version.)"""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lock = pins(REPO / "requirements.txt") | pins(REPO / "requirements-dev.txt")
    assert len(lock) > 100  # the whole tests' environment, not its direct pins alone
    unlocked = set()
    for name in lock:
        for line in distribution(name).requires or []:
            requirement = Requirement(line)
            applies = requirement.marker is None or requirement.marker.evaluate({"extra": ""})
            if applies and canonicalize_name(requirement.name) not in lock:
                unlocked.add(f"{name} needs {requirement.name}")
    assert not unlocked


def test_every_third_party_import_of_the_package_is_declared():
    """Each module that src/ imports from outside the standard library and this repository
    comes from a distribution pyproject.toml declares (read with ast, as the fingerprints are)."""
    import ast
    import sys
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    own = {p.name for p in (REPO / "src").iterdir() if p.is_dir()}
    modules = set()
    for path in (REPO / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - own - {"__future__"}
    distributions = packages_distributions()
    undeclared = {
        m: distributions.get(m)
        for m in third_party
        if not {canonicalize_name(d) for d in distributions.get(m, [])} & set(declared())
    }
    assert len(third_party) >= 10 and not undeclared


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


@pytest.mark.workflow
def test_the_install_names_an_unsupported_python_first(tmp_path):
    """The README's install starts with `pip install -q --no-deps -e .`: on Python
    3.10 it stops with one line naming the Python it needs, before any pin of
    requirements.txt fails (with pip's list of numpy versions)."""
    import subprocess

    import pytest

    python = older_python()
    if python is None:
        pytest.skip("no Python 3.10 on this machine")
    subprocess.run([python, "-m", "venv", tmp_path / "venv"], check=True)
    pip = tmp_path / "venv" / "bin" / "pip"
    cmd = [pip, "install", "-q", "--no-deps", "-e", REPO]  # as the README does
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-2000:]
    assert errors[0].startswith("ERROR: Package 'matcond' requires a different Python: 3.10")
    assert errors[0].endswith("not in '>=3.11'")


@pytest.mark.workflow
def test_the_built_package_analyses_weights_outside_the_repository(tmp_path):
    """``pip install .`` (the wheel, installed into a folder outside the checkout) gives a
    package whose ``matcond.analyze`` works on a small safetensors file: everything it reads
    at import (the config schema among them) is inside the package."""
    import subprocess
    import sys

    import torch
    from safetensors.torch import save_file

    pip = [sys.executable, "-m", "pip", "-q"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "wheel", REPO]
    subprocess.run(list(map(str, build)), check=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("matcond-*.whl")
    install = [*pip, "install", "--no-deps", "--target", tmp_path / "site", wheel]
    subprocess.run(list(map(str, install)), check=True, cwd=tmp_path)
    save_file({"layer.weight": torch.eye(4) * torch.arange(1.0, 5.0)}, tmp_path / "w.safetensors")
    code = (
        "import matcond, sys; table = matcond.analyze(sys.argv[1]);"
        "print(matcond.__file__, float(table['condition_number'].iloc[0]))"
    )
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code, tmp_path / "w.safetensors"],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    where, kappa = out.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and float(kappa) == 4.0
