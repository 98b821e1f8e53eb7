"""What many tests share: the repository's root, this interpreter's Snakemake, and a Snakemake
run of the workflow (``import support``: tests/ is on the tests' path, as conftest.py's
directory)."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
SMALL_CONFIG = REPO / "config" / "test" / "config.yaml"  # the small run's
CHECKOUT_PARTS = ("Snakefile", "workflow", "scripts", "config", "profiles", "envs", "src")


def copy_of_repo(root: Path, parts: tuple[str, ...] = CHECKOUT_PARTS) -> Path:
    """The workflow and its package copied to ``root``, a checkout of its own (no results,
    no egg-info): its Snakefile runs its own ``src/``. Without ``src`` in ``parts`` the copy
    runs the installed package."""
    root.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__")
    for part in parts:
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, root / part, ignore=ignore)
        else:
            shutil.copy(REPO / part, root / part)
    return root


def snakemake_command(
    workdir: Path, *args, configfile: Path | None = None, snakefile: Path = REPO / "Snakefile"
) -> list[str]:
    """``snakemake -s SNAKEFILE --directory WORKDIR [--configfile CONFIGFILE] ARGS``."""
    cmd = [SNAKEMAKE, "-s", snakefile, "--directory", workdir]
    if configfile is not None:
        cmd += ["--configfile", configfile]
    return [*map(str, cmd), *map(str, args)]


def run_snakemake(
    workdir: Path,
    *args,
    configfile: Path | None = None,
    snakefile: Path = REPO / "Snakefile",
    env: dict | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """:func:`snakemake_command` run to its end, its output captured; with ``check``, a
    failure shows the tail of its output."""
    cmd = snakemake_command(workdir, *args, configfile=configfile, snakefile=snakefile)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
