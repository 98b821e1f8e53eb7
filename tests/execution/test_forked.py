"""matcond.execution.forked: a map over forked workers gives the plain map's results, in
order, whatever the number of workers."""

import os

import numpy as np

from matcond.execution.forked import forked_map


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
