"""A failing job's traceback reaches its log file."""

import sys

import pytest

from matcond.execution.joblog import logging_to


def test_traceback_lands_in_the_log(tmp_path):
    log = tmp_path / "job.log"
    before = sys.stderr
    with pytest.raises(RuntimeError), logging_to(str(log)):
        print("started", file=sys.stderr)
        raise RuntimeError("config key device is 'cuda' but torch sees no GPU here")
    assert sys.stderr is before
    text = log.read_text()
    assert "started" in text and "RuntimeError: config key device is 'cuda'" in text
