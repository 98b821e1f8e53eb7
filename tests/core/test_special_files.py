"""Paths that are not regular files (issue 31): a FIFO, a device file, a symlink loop, a
broken symlink, a directory, a missing file. Each is named for what it is, wherever the
workflow reads a path (YAML files such as config/claims.yaml, weight files given under
`checkpoints`, outputs checked before a run), and none is opened: reading a FIFO would block
the run forever, which the timeouts here would catch."""

import os
import subprocess
import threading
from pathlib import Path

import pytest
from support import REPO, SNAKEMAKE

from matcond.core.config import ConfigError, load_yaml
from matcond.core.paths import file_kind
from matcond.own_weights.load import CheckpointError, check_checkpoint_paths, sources
from matcond.pipeline.damage import damaged_files, query_only

KINDS = {
    "fifo": "a FIFO (named pipe)",
    "device": "a device file",
    "loop": "a symlink loop",
    "broken": "a broken symlink",
    "folder": "a directory",
}


@pytest.fixture
def special(tmp_path) -> dict[str, Path]:
    """One path of each kind in KINDS, plus a missing one."""
    paths = {kind: tmp_path / f"{kind}.yaml" for kind in KINDS}
    os.mkfifo(paths["fifo"])
    os.symlink("/dev/null", paths["device"])
    os.symlink(paths["loop"], paths["loop"])
    os.symlink(tmp_path / "nowhere", paths["broken"])
    paths["folder"].mkdir()
    paths["missing"] = tmp_path / "missing.yaml"
    return paths


def test_each_kind_is_named(special):
    assert {k: file_kind(p) for k, p in special.items()} == KINDS | {"missing": "missing"}
    regular = special["folder"] / "x.yaml"
    regular.write_text("a: 1\n")
    assert file_kind(regular) is None


def outcome_within(call, seconds: float = 30.0) -> BaseException | None:
    """The exception ``call()`` raises (None if none), failing the test if it has not
    returned within ``seconds`` (a read of a FIFO blocks; the thread is left behind)."""
    result: list = []

    def run() -> None:
        try:
            call()
            result.append(None)
        except BaseException as err:  # noqa: BLE001 (handed to the test)
            result.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"still running after {seconds} s (blocked reading?)"
    return result[0]


def test_a_yaml_file_that_is_not_one_is_named_not_read(special):
    for kind, what in KINDS.items():
        err = outcome_within(lambda k=kind: load_yaml(special[k]))
        assert isinstance(err, ConfigError) and f"{kind}.yaml is {what}, not a YAML" in str(err)
    with pytest.raises(ConfigError, match="missing.yaml does not exist"):
        load_yaml(special["missing"])


def test_a_weight_path_that_is_not_a_file_is_named_before_any_job(special, tmp_path):
    for kind in ("fifo", "device", "loop", "broken"):
        err = outcome_within(lambda k=kind: sources(special[k]))
        assert isinstance(err, CheckpointError)
        assert f"is {KINDS[kind]}, not a weight file" in str(err)
    config = {"checkpoints": {k: special[k].name for k in ("fifo", "device", "loop")}}
    with pytest.raises(ConfigError) as err:
        check_checkpoint_paths(config, base=tmp_path)
    for kind in ("fifo", "device", "loop"):
        expected = f"config key checkpoints.{kind}: '{kind}.yaml' is {KINDS[kind]}"
        assert expected in str(err.value)


def test_an_output_that_is_a_fifo_is_set_aside_not_read(tmp_path):
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    os.mkfifo(results / "tables" / "exp1_dimension.parquet")
    os.mkfifo(results / "tables" / "exp1_dimension.csv")
    outputs = ["results/tables/exp1_dimension.parquet", "results/tables/exp1_dimension.csv"]
    found = {}
    assert outcome_within(lambda: found.update(damaged_files(results, {}, outputs))) is None
    expected = "not a regular file: a FIFO (named pipe)"
    assert {p.name: why for p, why in found.items()} == dict.fromkeys(
        ["exp1_dimension.parquet", "exp1_dimension.csv"], expected
    )


@pytest.mark.workflow
def test_a_missing_claims_file_stops_the_run_before_any_job(tmp_path):
    """The workflow's own config/claims.yaml deleted (in a copy of the repository)."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for name in ("Snakefile", "workflow", "profiles", "scripts", "envs"):
        os.symlink(REPO / name, copy / name)
    (copy / "config").mkdir()
    for item in (REPO / "config").iterdir():
        if item.name != "claims.yaml":
            os.symlink(item, copy / "config" / item.name)
    cmd = [SNAKEMAKE, "-s", copy / "Snakefile", "--directory", tmp_path, "-n"]
    cmd += ["--configfile", REPO / "config" / "test" / "config.yaml"]
    proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "config/claims.yaml does not exist" in proc.stdout + proc.stderr
    assert "Invalid claims: " in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_query_commands_are_told_apart_from_runs():
    """matcond.pipeline.damage.query_only: the commands that must not move damaged files."""
    snakemake = "/venv/bin/snakemake"
    for query in (["--summary"], ["-S"], ["--list-changes", "params"], ["--report=r.html"]):
        assert query_only([snakemake, "--cores", "2", *query])
    for run in (["--cores", "2"], ["--cores", "2", "results/claims.csv"], ["-n"], []):
        assert not query_only([snakemake, *run])
