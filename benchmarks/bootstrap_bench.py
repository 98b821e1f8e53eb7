"""Benchmark: the aggregation's bootstrap intervals against scipy's, in one process.

The mean's interval (:func:`matcond.stats.summary.bootstrap_ci` of one sample, through
matcond.stats.mean_bootstrap.mean_ci) against
:func:`scipy.stats.bootstrap` on the same resamples, handed ``GROUPS_PER_CALL`` groups at a
time in batches of ``VALUES_PER_BATCH`` values (the aggregation before 2026-11-29): seconds,
their ratio and the largest relative difference of the endpoints. Then the median's exact
intervals (matcond.stats.median_bootstrap.median_ci) against scipy's Monte Carlo ones (groups
of up to 100 trials). Two
shapes: an aggregation recorded every epoch (ctrl_spectral_reg: 31356 groups of 10 seeds)
and a pool (ctrl_noise_free: 1313 groups of about 940 trials).

    python benchmarks/bootstrap_bench.py                        # both shapes (~4 min)
    python benchmarks/bootstrap_bench.py --shape 4000x10        # one shape, groups x trials
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import stats as scipy_stats
from threadpoolctl import threadpool_limits

from matcond.stats import summary
from matcond.stats.median_bootstrap import median_ci

SHAPES = ("31356x10", "657x940")
MONTE_CARLO_MAX_SIZE = 100  # the median by resampling: minutes beyond


def scipy_intervals(samples: np.ndarray, statistic) -> tuple[np.ndarray, np.ndarray]:
    """scipy's BCa intervals (percentile where BCa is undefined) in the aggregation's old
    blocks and batches."""
    low, high = np.empty(len(samples)), np.empty(len(samples))
    for first in range(0, len(samples), summary.GROUPS_PER_CALL):
        block = samples[first : first + summary.GROUPS_PER_CALL]
        for method in ("BCa", "percentile"):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ci = scipy_stats.bootstrap(
                    [block],
                    statistic,
                    n_resamples=summary.N_RESAMPLES,
                    batch=max(1, summary.VALUES_PER_BATCH // block.size),
                    vectorized=True,
                    axis=-1,
                    confidence_level=summary.CONFIDENCE,
                    method=method,
                    rng=np.random.default_rng(summary.SEED),
                ).confidence_interval
            ends = slice(first, first + len(block))
            if method == "BCa":
                low[ends], high[ends] = ci.low, ci.high
                bad = ~(np.isfinite(ci.low) & np.isfinite(ci.high))
                if not bad.any():
                    break
            else:
                low[ends][bad], high[ends][bad] = ci.low[bad], ci.high[bad]
    return low, high


def timed(function, *args):
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def compare(groups: int, size: int) -> None:
    """Print both comparisons for ``groups`` groups of ``size`` trials (Pareto, index 1)."""
    samples = np.random.default_rng(0).pareto(1.0, size=(groups, size))
    print(f"{groups} groups of {size}, {summary.N_RESAMPLES} resamples, one core")
    old, (low_s, high_s) = timed(scipy_intervals, samples, np.mean)
    new, (low, high) = timed(summary.bootstrap_ci, [samples], np.mean)
    ends = np.concatenate([low, high])
    theirs = np.concatenate([low_s, high_s])
    relative = np.abs(ends - theirs) / np.abs(theirs)
    moved = np.mean((relative > 1e-9).reshape(2, -1).any(axis=0))
    print(
        f"mean  : scipy {old:7.1f} CPU-s, mean_ci {new:6.2f} CPU-s ({old / new:.0f}x); "
        f"largest relative difference {relative.max():.1e}, over 1e-9 in {moved:.2%} of "
        "groups (a resample reordering the trials: a tie here, rounding's call in scipy)"
    )
    if size > MONTE_CARLO_MAX_SIZE:
        return
    monte_carlo, (mc_low, mc_high) = timed(scipy_intervals, samples, np.median)
    exact, (low, high) = timed(median_ci, samples)
    agree = np.mean((low == mc_low) & (high == mc_high))
    print(
        f"median: Monte Carlo {monte_carlo:7.1f} CPU-s, exact {exact:6.2f} CPU-s "
        f"({monte_carlo / exact:.0f}x); same endpoints in {agree:.1%} of groups"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="groups x trials, e.g. 657x940")
    args = parser.parse_args()
    # what the workflow's jobs get: BLAS on one thread (matcond.server.jobserver)
    with threadpool_limits(1):
        for shape in args.shape or SHAPES:
            groups, size = map(int, shape.split("x"))
            compare(groups, size)


if __name__ == "__main__":
    main()
