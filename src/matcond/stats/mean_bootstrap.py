"""The bootstrap interval of a sample mean, on :func:`scipy.stats.bootstrap`'s own resamples
without building them.

A resample's mean is ``counts @ x / n``, with ``counts`` how often each trial was drawn, so
the 9,999 resample means of a batch of groups are one matrix product instead of gathering
9,999 × n values per group (the aggregation's largest cost: 88 of 145 s of
``ctrl_noise_free``'s table). The resamples are scipy's: its generator, seeded as
:func:`matcond.stats.summary.bootstrap_ci` seeds it, drawn as ``scipy.stats.bootstrap`` draws
them (every group resampled at the same positions; numpy's stream does not depend on how
the draws are batched). The interval follows scipy's definitions: BCa with the jackknife's
acceleration (its leave-one-out means in closed form) and ``scipy.stats.quantile`` of the
resample means, percentile where BCa is undefined. It equals scipy's up to rounding (the
sums run in another order; tests/stats/test_mean_bootstrap.py holds it to 1e-9), except
that BCa's bias correction counts a resample mean within the rounding of a sum of the
values as equal to the sample's (a resample that reorders the trials): scipy's exact
comparison leaves those to the rounding of its sums, which for a few trials moves the
interval.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

# about this many resample counts (rows x n) per product
COUNTS_PER_CHUNK = 1 << 21


def resample_means(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The mean of each of ``n_resamples`` bootstrap resamples of every row of ``x`` (groups
    x n): groups x n_resamples, resample b drawing positions ``rng.integers(0, n, n)`` of a
    generator seeded ``seed``, as scipy draws them. The products are ``np.einsum``'s, whose
    sums run in the same order for every row whatever the other rows (BLAS's matrix product
    rounds differently with its shape), so that a row's means do not depend on its block."""
    groups, n = x.shape
    rng = np.random.default_rng(seed)
    means = np.empty((groups, n_resamples))
    rows = max(1, COUNTS_PER_CHUNK // n)
    for first in range(0, n_resamples, rows):
        size = min(rows, n_resamples - first)
        drawn = rng.integers(0, n, (size, n))
        flat = (drawn + (np.arange(size) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)
        means[:, first : first + size] = np.einsum("gn,bn->gb", x, counts)
    return means / n


def mean_ci(
    x: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """95 % (``confidence``) bootstrap interval of the mean of each row of ``x`` (groups x n,
    finite, n >= 2): BCa, percentile where BCa is not finite (e.g. all values equal)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    theta_b = resample_means(x, n_resamples, seed)
    theta = x.mean(axis=-1)[:, None]
    # a resample mean within the rounding of a sum of n values of theta is theta (a
    # reordering of the trials, or ties in them): scipy's exact comparison leaves those to
    # the rounding of its sums
    tie = n * np.finfo(np.float64).eps * np.abs(x).max(axis=-1, keepdims=True)
    below = np.count_nonzero(theta_b < theta - tie, axis=-1)
    below = 2 * below + np.count_nonzero(np.abs(theta_b - theta) <= tie, axis=-1)
    alpha = (1 - confidence) / 2
    with np.errstate(all="ignore"):
        z0 = special.ndtri(below / (2 * n_resamples))
        leave_one_out = (x.sum(axis=-1, keepdims=True) - x) / (n - 1)
        u = (n - 1) * (leave_one_out.mean(axis=-1, keepdims=True) - leave_one_out)
        accel = 1 / 6 * ((u**3).sum(axis=-1) / n**3) / ((u**2).sum(axis=-1) / n**2) ** 1.5
        z = float(special.ndtri(alpha))
        levels = [special.ndtr(z0 + (z0 + s) / (1 - accel * (z0 + s))) for s in (z, -z)]
        ends = stats.quantile(theta_b, np.stack(levels, axis=-1), axis=-1)
    bad = ~np.isfinite(ends).all(axis=-1)
    if bad.any():
        flat = np.broadcast_to([alpha, 1 - alpha], (int(bad.sum()), 2))
        ends[bad] = stats.quantile(theta_b[bad], flat, axis=-1)
    return ends[:, 0], ends[:, 1]
