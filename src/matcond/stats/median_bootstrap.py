"""The bootstrap distribution of a sample median, exactly: no resampling.

Resampling n values with replacement, the median of the resample (``np.median``: the middle
value for odd n, the mean of the two middle values for even n) takes values among the order
statistics x_(1) <= ... <= x_(n) (odd n) or the means (x_(i) + x_(j)) / 2, i <= j (even n),
with probabilities that depend on n only. With N_k the number of draws among the k smallest
values, N_k ~ Binomial(n, k/n), and for n = 2m + 1

    P(median* <= x_(k)) = P(N_k >= m + 1);

for n = 2m the pair (m-th, (m+1)-th smallest draw) is at positions (i, j), i < j, with
probability q_i [((n-j+1)/(n-i))^m - ((n-j)/(n-i))^m], q_i = P(N_i = m, position i drawn), and
both are at position i with P(m-th smallest draw at i) - q_i. So the percentile interval, the
bias correction z0 = Phi^-1((P(median* < median) + P(median* <= median)) / 2) and the BCa
interval (with the jackknife's acceleration, in closed form for the median) are computed from
the exact distribution, with the definitions :func:`scipy.stats.bootstrap` applies to its
resamples. A level's quantile is the
smallest support value whose cumulative probability reaches it (within 1e-12, so that
rounding in the sums cannot move a quantile that sits on a jump).

Cost: n (odd) or n(n+1)/2 (even) support points per group; groups of one size share the
probabilities and are handled together. Most of those points are pairs the resample's median
almost never takes (far from the middle, or far apart): the points whose probabilities add up
to at most :data:`DROPPED_PROBABILITY` in absolute value are left out, so that no cumulative
probability moves by more than a thousandth of :data:`LEVEL_TOLERANCE` (at n = 940, 6,254
of 442,270 points stay).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special, stats

# a cumulative probability within this of a level counts as reaching it
LEVEL_TOLERANCE = 1e-12
# support points whose probabilities add up to at most this (in absolute value) are left out
DROPPED_PROBABILITY = 1e-15
# groups per block: about this many support points (values, probabilities, cumulative sums)
SUPPORT_PER_BLOCK = 1 << 20


@functools.cache
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (0-based, i <= j) of the two order statistics whose mean is the resample's
    median, and their probabilities (for odd n, i = j is the middle one), without the least
    likely points that add up to at most :data:`DROPPED_PROBABILITY`."""
    i, j, p = _all_pairs(n)
    by_size = np.argsort(np.abs(p), kind="stable")
    dropped = np.searchsorted(np.cumsum(np.abs(p[by_size])), DROPPED_PROBABILITY, "right")
    kept = np.sort(by_size[dropped:])
    return i[kept], j[kept], p[kept]


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_pairs` with every support point."""
    k = np.arange(1, n + 1)
    if n % 2:
        m = n // 2
        cdf = stats.binom.sf(m, n, k / n)  # P(N_k >= m + 1)
        return k - 1, k - 1, np.diff(cdf, prepend=0.0)
    m = n // 2
    # P(the m-th smallest draw is at position i) = P(N_i >= m) - P(N_{i-1} >= m)
    at_i = np.diff(stats.binom.sf(m - 1, n, k / n), prepend=0.0)
    # q_i = P(N_i = m) - P(N_{i-1} = m, none at i); the second term, C(n, m) ((i-1)/n)^m
    # ((n-i)/n)^m, written as a binomial probability so that C(n, m) (inf in float64 from
    # n ~ 1030 on) never appears: C(n, m) a^m b^m = P(Binomial(n, a/(a+b)) = m) (a+b)^n
    q = stats.binom.pmf(m, n, k / n) - stats.binom.pmf(m, n, (k - 1) / (n - 1)) * ((n - 1) / n) ** n
    i, j = np.triu_indices(n, 1)  # 0-based, i < j
    above = n - (i + 1)  # positions above i
    gap = ((n - j) / above) ** m - ((n - j - 1) / above) ** m
    off = q[i] * gap
    probs = np.concatenate([at_i - q, off])
    if not np.isfinite(probs).all():  # a number we cannot vouch for is never returned
        raise FloatingPointError(f"the exact bootstrap of the median is not finite at n = {n}")
    return np.concatenate([k - 1, i]), np.concatenate([k - 1, j]), probs


def distribution(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and probabilities of the bootstrap distribution of ``np.median`` of the rows of
    ``x`` (groups x n): two arrays of groups x support, each row sorted by value."""
    x = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    i, j, p = _pairs(x.shape[-1])
    values = (x[:, i] + x[:, j]) / 2  # np.median's mean of the two middle values
    order = np.argsort(values, axis=-1, kind="stable")
    return np.take_along_axis(values, order, -1), p[order]


def _quantiles(values: np.ndarray, probs: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Per row, the smallest value whose cumulative probability reaches each level (groups x
    levels)."""
    cdf = np.cumsum(probs, axis=-1)
    reached = cdf[:, None, :] >= levels[:, :, None] - LEVEL_TOLERANCE
    return np.take_along_axis(values, reached.argmax(axis=-1), -1)


def _jackknife_acceleration(x: np.ndarray) -> np.ndarray:
    """BCa's acceleration from the n leave-one-out medians of each sorted row."""
    n = x.shape[-1]
    m = n // 2
    if n % 2:  # n - 1 = 2m values left: the mean of the two middle ones
        low = (x[:, m] + x[:, m + 1]) / 2
        mid = (x[:, m - 1] + x[:, m + 1]) / 2
        high = (x[:, m - 1] + x[:, m]) / 2
        parts = [np.repeat(low[:, None], m, 1), mid[:, None], np.repeat(high[:, None], m, 1)]
    else:  # n - 1 = 2m - 1 values left: the m-th
        parts = [np.repeat(x[:, m][:, None], m, 1), np.repeat(x[:, m - 1][:, None], m, 1)]
    loo = np.concatenate(parts, axis=1)
    dev = loo.mean(axis=1, keepdims=True) - loo
    with np.errstate(divide="ignore", invalid="ignore"):
        return (dev**3).sum(axis=1) / (6 * ((dev**2).sum(axis=1)) ** 1.5)


def median_ci(
    x: np.ndarray, confidence: float = 0.95, method: str = "BCa"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact bootstrap interval of the median of each row of ``x`` (groups x n, finite).

    ``method``: ``percentile`` or ``BCa`` (bias-corrected and accelerated; percentile where
    BCa is undefined: a zero jackknife spread, e.g. all values equal). Rows of n < 2 give NaN.
    Groups are handled in blocks of about :data:`SUPPORT_PER_BLOCK` support points.
    """
    if method not in ("percentile", "BCa"):
        raise ValueError(f"method must be 'percentile' or 'BCa', not {method!r}")
    x = np.sort(np.atleast_2d(np.asarray(x, dtype=np.float64)), axis=-1)
    groups, n = x.shape
    low, high = np.full(groups, np.nan), np.full(groups, np.nan)
    if n < 2 or groups == 0:
        return low, high
    step = max(1, SUPPORT_PER_BLOCK // len(_pairs(n)[2]))
    for first in range(0, groups, step):
        block = slice(first, first + step)
        low[block], high[block] = _interval(x[block], confidence, method)
    return low, high


def _interval(x: np.ndarray, confidence: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`median_ci` of sorted rows."""
    groups = x.shape[0]
    values, probs = distribution(x)
    alpha = (1 - confidence) / 2
    levels = np.tile([alpha, 1 - alpha], (groups, 1))
    if method == "BCa":
        median = np.median(x, axis=-1)
        below = np.where(values < median[:, None], probs, 0.0).sum(axis=-1)
        at_most = np.where(values <= median[:, None], probs, 0.0).sum(axis=-1)
        z0 = special.ndtri(np.clip((below + at_most) / 2, 0.0, 1.0))
        accel = _jackknife_acceleration(x)
        z = special.ndtri(np.array([alpha, 1 - alpha]))
        with np.errstate(divide="ignore", invalid="ignore"):
            shifted = z0[:, None] + z[None, :]
            bca = special.ndtr(z0[:, None] + shifted / (1 - accel[:, None] * shifted))
        usable = np.isfinite(bca).all(axis=1)
        levels[usable] = bca[usable]
    ends = _quantiles(values, probs, levels)
    return ends[:, 0], ends[:, 1]
