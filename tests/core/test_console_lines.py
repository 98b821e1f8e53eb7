"""The workflow's own console lines survive a console that went away (matcond.core.console)."""

import io
import os

from matcond.core.console import say


def test_a_line_to_a_closed_pipe_silences_the_stream_instead_of_raising():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone: `... | head` after head has exited
    stream = io.TextIOWrapper(io.FileIO(write_end, "w"), encoding="utf-8")
    say("Note: first", stream)  # EPIPE: silenced, not raised
    say("Note: second", stream)  # now the null device
    stream.flush()
    assert os.readlink(f"/proc/self/fd/{write_end}") == os.devnull
    stream.close()


def test_a_line_reaches_an_open_stream_whole():
    stream = io.StringIO()
    say("Note: one line", stream)
    assert stream.getvalue() == "Note: one line\n"


def test_no_standard_error_drops_the_line(monkeypatch):
    """`snakemake ... 2>&-`: Python starts with sys.stderr None."""
    monkeypatch.setattr("sys.stderr", None)
    say("Note: nowhere to go")  # dropped, not AttributeError


def test_a_full_console_drops_the_line_and_is_silenced():
    """`2>/dev/full`: the flush fails with ENOSPC; the stream then points at the null device,
    so that later writes and the flush at exit do not fail either."""
    stream = open("/dev/full", "w")
    say("Note: first", stream)
    say("Note: second", stream)
    stream.flush()
    assert os.readlink(f"/proc/self/fd/{stream.fileno()}") == os.devnull
    stream.close()


def test_a_closed_stream_drops_the_line():
    stream = io.StringIO()
    stream.close()
    say("Note: closed", stream)  # ValueError inside: dropped
