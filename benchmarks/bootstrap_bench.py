"""Benchmark: the bootstrap of many groups in blocks (matcond.stats.summary) vs all groups in one
call.

An aggregation of a trial table recorded every epoch bootstraps tens of thousands of groups of
one size (ctrl_spectral_reg: 31356 groups of 10 seeds); :func:`matcond.stats.summary.bootstrap_ci`
hands scipy ``GROUPS_PER_CALL`` groups at a time in batches of ``VALUES_PER_BATCH`` values.
This times the mean's intervals of log-normal groups both ways, in one process, and checks
that they are bit-identical; then the median's exact intervals
(matcond.stats.median_bootstrap.median_ci, what the aggregations use) against scipy's Monte Carlo
ones, with how often the two give the same endpoints.

    python benchmarks/bootstrap_bench.py                 # 31356 groups of 10 (~2.5 min)
    python benchmarks/bootstrap_bench.py --groups 4000   # ~20 s
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from matcond.stats import summary as stats
from matcond.stats.median_bootstrap import median_ci


def timed_intervals(samples: np.ndarray, statistic, groups_per_call: int, values_per_batch: int):
    """(seconds, (low, high)) of ``bootstrap_ci`` with the given block and batch sizes."""
    saved = stats.GROUPS_PER_CALL, stats.VALUES_PER_BATCH
    stats.GROUPS_PER_CALL, stats.VALUES_PER_BATCH = groups_per_call, values_per_batch
    try:
        start = time.perf_counter()
        interval = stats.bootstrap_ci([samples], statistic)
        return time.perf_counter() - start, interval
    finally:
        stats.GROUPS_PER_CALL, stats.VALUES_PER_BATCH = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=31356)
    parser.add_argument("--size", type=int, default=10, help="trials per group")
    args = parser.parse_args()
    samples = np.random.default_rng(0).lognormal(sigma=2.0, size=(args.groups, args.size))
    # what the workflow's jobs get: BLAS on one thread (matcond.execution.jobserver)
    with threadpool_limits(1):
        print(f"{args.groups} groups of {args.size}, {stats.N_RESAMPLES} resamples, one core")
        # the bootstrap before blocks: every group in one call, batches of 2e6 values
        whole, reference = timed_intervals(samples, np.mean, args.groups, 2_000_000)
        blocked, interval = timed_intervals(
            samples, np.mean, stats.GROUPS_PER_CALL, stats.VALUES_PER_BATCH
        )
        same = all(np.array_equal(a, b) for a, b in zip(reference, interval, strict=True))
        print(
            f"mean  : one call {whole:6.1f} s, blocks of {stats.GROUPS_PER_CALL} "
            f"{blocked:6.1f} s ({whole / blocked:.2f}x), bit-identical: {same}"
        )
        monte_carlo, (mc_low, mc_high) = timed_intervals(
            samples, np.median, stats.GROUPS_PER_CALL, stats.VALUES_PER_BATCH
        )
        start = time.perf_counter()
        low, high = median_ci(samples)
        exact = time.perf_counter() - start
        agree = np.mean((low == mc_low) & (high == mc_high))
        print(
            f"median: Monte Carlo {monte_carlo:6.1f} s, exact {exact:6.2f} s "
            f"({monte_carlo / exact:.0f}x); same endpoints in {agree:.1%} of groups"
        )


if __name__ == "__main__":
    main()
