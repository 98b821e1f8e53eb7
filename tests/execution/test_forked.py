"""matcond.execution.forked: a map over forked workers gives the plain map's results, in
order, whatever the number of workers; the fork probe names a child that cannot run torch."""

import os
import time

import numpy as np

from matcond.execution import forked
from matcond.execution.forked import fork_problem, forked_map


def test_forked_workers_give_the_plain_maps_results_in_order():
    """A closure over a local array (reaching the workers by the fork, not by pickling): the
    results of 1, 2 and 5 workers equal the list comprehension's, and more than one process
    computed them when there were workers."""
    data = np.random.default_rng(0).standard_normal((7, 50))

    def row_stats(i: int) -> tuple[int, float, float]:
        return os.getpid(), float(np.median(data[i])), float(data[i] @ data[i])

    expected = [row_stats(i)[1:] for i in range(7)]
    for workers in (1, 2, 5):
        results = forked_map(row_stats, range(7), workers)
        assert [r[1:] for r in results] == expected
        pids = {r[0] for r in results}
        assert (pids == {os.getpid()}) if workers == 1 else (os.getpid() not in pids)
    assert forked_map(row_stats, [3], 4)[0][0] == os.getpid()  # one item: no fork


def test_a_child_that_can_run_torch_is_no_problem():
    """Here (torch imported, no GPU) a forked child runs a backward pass."""
    import torch  # noqa: F401  (without torch in the process there is nothing to probe)

    assert fork_problem() is None


def test_a_child_that_fails_or_hangs_is_named(monkeypatch):
    """The probe's failure comes back as one line with the child's error; a child that does
    not finish is killed after the timeout and said to hang."""
    import torch  # noqa: F401

    def fails() -> None:
        raise RuntimeError("Unable to handle autograd's threading\nsecond line")

    monkeypatch.setattr(forked, "_probe", fails)
    assert fork_problem() == (
        "a forked child cannot run torch (RuntimeError: Unable to handle autograd's threading)"
    )
    monkeypatch.setattr(forked, "_probe", lambda: time.sleep(60))
    started = time.monotonic()
    assert fork_problem(timeout=0.5) == "a forked child hung for 0.5 s on a backward pass"
    assert time.monotonic() - started < 10


def test_a_map_whose_fork_would_fail_runs_in_this_process(monkeypatch, capfd):
    monkeypatch.setattr(forked, "fork_problem", lambda: "a forked child cannot run torch (x)")
    results = forked_map(lambda i: (os.getpid(), i * i), range(4), 3)
    assert results == [(os.getpid(), i * i) for i in range(4)]
    err = capfd.readouterr().err
    assert "a forked child cannot run torch (x): the 4 items are computed in this process" in err
