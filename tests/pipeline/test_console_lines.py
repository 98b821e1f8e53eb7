"""The workflow's own console lines survive a console that went away (matcond.pipeline.console)."""

import io
import os

from matcond.pipeline.console import say


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
