"""The checkout that runs is the checkout you edit: two checkouts sharing one environment (this
venv's matcond is installed from this repository) each run their own ``src/``."""

import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO, copy_of_repo, run_snakemake


def dry_run(snakefile: Path, workdir: Path) -> subprocess.CompletedProcess:
    config = REPO / "config" / "test" / "config.yaml"
    args = ("-n", "--quiet", "--config", "marker=1")
    return run_snakemake(
        workdir, *args, configfile=config, snakefile=snakefile, check=False, timeout=300
    )


@pytest.mark.workflow
def test_each_checkout_validates_against_its_own_schema(tmp_path):
    """A config key that only the copy's schema knows: the copy's dry run accepts it, this
    repository's (the installed package's) refuses it by name."""
    copy = copy_of_repo(tmp_path / "copy")
    schema = copy / "src" / "matcond" / "schemas" / "config.schema.yaml"
    text = schema.read_text()
    anchor = "properties:\n  device:\n"
    assert anchor in text
    marker = "properties:\n  marker:\n    type: integer\n  device:\n"
    schema.write_text(text.replace(anchor, marker, 1))
    ours = dry_run(copy / "Snakefile", tmp_path / "run_copy")
    assert ours.returncode == 0, ours.stdout[-2000:] + ours.stderr[-2000:]
    theirs = dry_run(REPO / "Snakefile", tmp_path / "run_repo")
    assert theirs.returncode != 0 and "marker" in theirs.stdout + theirs.stderr


def test_a_job_in_its_own_process_imports_its_checkout_s_package(tmp_path):
    """scripts/job.py (a job outside the job server: SLURM, a fallback) puts its checkout's
    src/ first, whichever matcond the interpreter has installed."""
    copy = copy_of_repo(tmp_path / "copy")
    client = copy / "src" / "matcond" / "server" / "client.py"
    client.write_text(client.read_text() + "\n\ndef main(argv):\n    print(__file__)\n")
    proc = subprocess.run(
        [sys.executable, str(copy / "scripts" / "job.py"), "log"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(proc.stdout.strip()) == client


@pytest.mark.workflow
def test_the_job_server_imports_the_package_of_the_process_that_starts_it(tmp_path):
    """A process that imported a copy's matcond (its src/ put first on sys.path, as the
    Snakefile does, not through PYTHONPATH) starts a job server that runs the copy's code."""
    copy = copy_of_repo(tmp_path / "copy")
    server = copy / "src" / "matcond" / "server" / "jobserver.py"
    mark = tmp_path / "server_module.txt"
    text = server.read_text()
    anchor = 'if __name__ == "__main__":\n'
    assert anchor in text
    server.write_text(
        text.replace(anchor, f"{anchor}    Path({str(mark)!r}).write_text(__file__)\n")
    )
    script = (
        f"import sys; sys.path.insert(0, {str(copy / 'src')!r})\n"
        "from matcond.server.jobserver import JobServer\n"
        "server = JobServer.start(rules=())\n"
        "assert server is not None\n"
        "server.stop()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(mark.read_text()) == server
