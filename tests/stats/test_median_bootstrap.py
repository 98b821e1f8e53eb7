"""The exact bootstrap of the median against brute-force enumeration of every resample and
against scipy's Monte Carlo bootstrap."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from matcond.stats import median_bootstrap
from matcond.stats.median_bootstrap import distribution, median_ci


def enumerated(x: np.ndarray) -> dict[float, float]:
    """The bootstrap distribution of np.median over all n^n resamples, enumerated as the
    multisets of indices they form (each drawn in n! / prod(count!) orders; the median does
    not depend on the order)."""
    n, counts = x.size, {}
    for idx in itertools.combinations_with_replacement(range(n), n):
        orders = math.factorial(n)
        for k in Counter(idx).values():
            orders //= math.factorial(k)
        value = float(np.median(x[list(idx)]))
        counts[value] = counts.get(value, 0) + orders
    assert sum(counts.values()) == n**n
    return {v: c / n**n for v, c in counts.items()}


def merged(values: np.ndarray, probs: np.ndarray) -> dict[float, float]:
    out = {}
    for v, p in zip(values.tolist(), probs.tolist(), strict=True):
        out[v] = out.get(v, 0.0) + p
    return out


@pytest.mark.parametrize(
    "n",
    [2, 3, 4, 5, 6, 7, 8, 9],
)
@pytest.mark.parametrize("ties", [False, True])
def test_distribution_is_that_of_every_resample(n, ties):
    x = np.random.default_rng(n).lognormal(size=n)
    if ties:
        x[: n // 2 + 1] = x[0]  # a tie across the middle
    values, probs = distribution(x[None])
    assert np.all(np.diff(values[0]) >= 0)
    exact, ours = enumerated(x), merged(values[0], probs[0])
    for v in exact.keys() | ours.keys():
        assert ours.get(v, 0.0) == pytest.approx(exact.get(v, 0.0), abs=1e-13)


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize("n", [7, 8, 15, 20, 31])
def test_interval_is_scipys_at_many_resamples(method, n):
    """scipy's Monte Carlo endpoints are order statistics of 200k resample medians; they land
    on the exact quantile's support point unless a level sits near a jump, which these
    seeded samples do not."""
    x = np.random.default_rng(100 + n).lognormal(size=n)
    low, high = median_ci(x[None], method=method)
    mc = stats.bootstrap(
        (x,), np.median, n_resamples=200_000, method=method, random_state=1
    ).confidence_interval
    assert (low[0], high[0]) == (mc.low, mc.high)


def test_groups_are_independent_and_edge_cases():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(4, 9))
    together = median_ci(x)
    for g in range(4):
        alone = median_ci(x[g : g + 1])
        assert (together[0][g], together[1][g]) == (alone[0][0], alone[1][0])
    # all values equal: BCa is undefined, the percentile interval is the value
    low, high = median_ci(np.full((1, 6), 2.5))
    assert (low[0], high[0]) == (2.5, 2.5)
    # one value: no interval
    low, high = median_ci(np.array([[1.0]]))
    assert np.isnan(low[0]) and np.isnan(high[0])
    # at the edge of float64 the mean of two middle values overflows to inf, as np.median's
    # does on the same resample: the distribution is still np.median's
    big = np.array([1e308, 1.5e308, 1.7e308, 1.79e308])
    values, probs = distribution(big[None])
    assert np.isinf(values).any()
    exact, ours = enumerated(big), merged(values[0], probs[0])
    assert exact.keys() == ours.keys()
    assert all(ours[v] == pytest.approx(p, abs=1e-13) for v, p in exact.items())
    with pytest.raises(ValueError, match="method"):
        median_ci(x, method="basic")


@pytest.mark.parametrize("n", [15, 16])
def test_interval_covers_the_true_median_at_about_the_nominal_rate(n):
    """A seeded simulation: 400 samples of n log-normal values, whose median is 1 (the
    median's bootstrap runs a little below nominal at small n)."""
    samples = np.random.default_rng(n).lognormal(sigma=1.5, size=(400, n))
    for method in ("percentile", "BCa"):
        low, high = median_ci(samples, method=method)
        coverage = np.mean((low <= 1.0) & (1.0 <= high))
        assert 0.88 <= coverage <= 0.99, (method, coverage)


@pytest.mark.parametrize("n", [1220, 1800])
def test_large_even_samples_keep_a_proper_distribution(n):
    """From n ~ 1030 on, C(n, n/2) is inf in float64: the probabilities must not be built on
    it (they were NaN, and the interval collapsed onto the smallest value). They stay a
    distribution, and the interval is scipy's Monte Carlo one to within its own noise."""
    x = np.random.default_rng(n).lognormal(sigma=1.5, size=n)
    values, probs = distribution(x[None])
    assert np.isfinite(probs).all() and probs.min() >= -1e-15
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    low, high = median_ci(x[None], method="percentile")
    reference = stats.bootstrap(
        (x,), np.median, n_resamples=4000, method="percentile", random_state=0
    ).confidence_interval
    assert low[0] < np.median(x) < high[0]
    assert low[0] == pytest.approx(reference.low, rel=0.03)
    assert high[0] == pytest.approx(reference.high, rel=0.03)


@pytest.mark.parametrize("n", [60, 61, 400])
def test_leaving_out_the_least_likely_points_moves_no_interval(n, monkeypatch):
    """The intervals from the kept support points are those from every point, bit for bit,
    for heavy-tailed samples with and without ties (the left-out points add up to at most
    DROPPED_PROBABILITY, a thousandth of the level tolerance). At n = 400 all but 5 % of
    the points are left out."""
    rng = np.random.default_rng(n)
    x = rng.pareto(0.8, size=(60, n))
    x[::3, : n // 2] = np.round(x[::3, : n // 2], 1)  # ties, across the middle
    kept = len(median_bootstrap._pairs(n)[2])
    trimmed = {m: median_ci(x, method=m) for m in ("percentile", "BCa")}
    median_bootstrap._pairs.cache_clear()
    monkeypatch.setattr(median_bootstrap, "DROPPED_PROBABILITY", 0.0)
    try:
        assert len(median_bootstrap._pairs(n)[2]) > kept
        for method, (low, high) in trimmed.items():
            full_low, full_high = median_ci(x, method=method)
            np.testing.assert_array_equal(low, full_low)
            np.testing.assert_array_equal(high, full_high)
    finally:
        median_bootstrap._pairs.cache_clear()
