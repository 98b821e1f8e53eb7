"""The record of the last run (matcond.pipeline.run_record): whatever lies at its path reads
as a record or as none, never as an error or a hang; writing never follows a symlink; the
report command it gives is quoted for the shell."""

import json
import os
import shlex
import threading

import pytest

from matcond.pipeline.run_record import (
    MAX_BYTES,
    read_run_config,
    report_command,
    write_run_config,
)

RECORD = {"configfiles": ["/tmp/my configs/a b.yaml"], "config": {"defaults": {"lr": 0.1}}}


def test_a_written_record_reads_back(tmp_path):
    path = tmp_path / ".snakemake" / "record.json"
    write_run_config(RECORD, path)
    assert read_run_config(path) == RECORD
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no partial file left


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"configfiles": [',
        b"[1, 2]",
        b"{}",
        b'{"configfiles": "a", "config": {}}',
        b'{"configfiles": [1], "config": {}}',
        b"\xff\xfe not utf-8",
        b"null",
    ],
    ids=[
        "empty",
        "truncated",
        "a list",
        "empty mapping",
        "files not a list",
        "a file not a string",
        "not UTF-8",
        "null",
    ],
)
def test_anything_but_a_record_reads_as_none(tmp_path, content):
    path = tmp_path / "record.json"
    path.write_bytes(content)
    assert read_run_config(path) is None


def test_special_files_read_as_none_without_being_opened(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    result = []
    reader = threading.Thread(target=lambda: result.append(read_run_config(fifo)), daemon=True)
    reader.start()
    reader.join(5)
    assert result == [None]  # a FIFO opened would block
    assert read_run_config(tmp_path / "missing.json") is None
    assert read_run_config(tmp_path) is None  # a directory
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**RECORD, "pad": "x" * MAX_BYTES}))
    assert read_run_config(big) is None


def test_a_symlink_is_replaced_not_followed(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "record.json"
    link.symlink_to(target)
    assert read_run_config(link) is None
    write_run_config(RECORD, link)
    assert target.read_text() == "keep me"
    assert not link.is_symlink() and read_run_config(link) == RECORD


def test_the_report_command_quotes_paths_and_values():
    command = report_command(RECORD, "results/report.html")
    assert shlex.split(command) == [
        "snakemake",
        "--configfile",
        "/tmp/my configs/a b.yaml",
        "--config",
        'defaults={"lr": 0.1}',
        "--report",
        "results/report.html",
    ]


def test_the_report_command_keeps_the_working_directory():
    for argv in (
        ["snakemake", "--directory", "/tmp/my run", "--report"],
        ["snakemake", "-d", "/tmp/my run"],
        ["snakemake", "--directory=/tmp/my run"],
    ):
        command = shlex.split(report_command(RECORD, "results/report.html", argv))
        assert command[1:3] == ["--directory", "/tmp/my run"]


def test_a_record_that_cannot_be_written_is_a_note_not_a_traceback(tmp_path):
    """A directory where the record goes stopped every run at its start."""
    path = tmp_path / "record.json"
    path.mkdir()
    problem = write_run_config(RECORD, path)
    assert problem.startswith(f"the run record {path} cannot be written (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]  # no partial file
    assert write_run_config(RECORD, tmp_path / "other.json") is None
