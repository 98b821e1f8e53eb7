"""matcond.stats.mean_bootstrap against scipy.stats.bootstrap itself (the reference: the same
seed, its own resamples, BCa or percentile): equal up to rounding on light and heavy tails,
small and large n, ties and degenerate rows; and the resample means against means of the
resamples built explicitly."""

import warnings

import numpy as np
import pytest
from scipy import stats

from matcond.stats.mean_bootstrap import mean_ci, resample_means
from matcond.stats.summary import CONFIDENCE, N_RESAMPLES, SEED, bootstrap_ci


def scipy_ci(x: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    ci = stats.bootstrap(
        [x],
        np.mean,
        n_resamples=N_RESAMPLES,
        vectorized=True,
        axis=-1,
        confidence_level=CONFIDENCE,
        method=method,
        rng=np.random.default_rng(SEED),
    ).confidence_interval
    return np.asarray(ci.low, float), np.asarray(ci.high, float)


def rows(kind: str, n: int, groups: int = 6) -> np.ndarray:
    rng = np.random.default_rng(n)
    if kind == "normal":
        return rng.normal(1.0, 0.2, (groups, n))
    if kind == "pareto":  # a tail index of 1: the κ errors'
        return rng.pareto(1.0, (groups, n))
    return rng.integers(0, 3, (groups, n)) * 0.25  # ties: three values, exact sums


@pytest.mark.parametrize(
    ("kind", "n"),
    [("normal", 15), ("normal", 200), ("pareto", 15), ("pareto", 200)]
    # quarters: every sum exact, so ties are ties in scipy's sums too
    + [("quarters", n) for n in (2, 3, 15, 200)],
)
def test_the_interval_is_scipys(kind, n):
    x = rows(kind, n)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # scipy's degenerate BCa: the fallback below
        low, high = scipy_ci(x, "BCa")
        bad = ~(np.isfinite(low) & np.isfinite(high))
        if bad.any():  # BCa undefined: the percentile interval, as bootstrap_ci falls back
            low[bad], high[bad] = (v[bad] for v in scipy_ci(x, "percentile"))
    ours = mean_ci(x, CONFIDENCE, N_RESAMPLES, SEED)
    np.testing.assert_allclose(ours[0], low, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours[1], high, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", [3, 15, 200])
def test_ties_are_ties_whatever_the_rounding(n):
    """Trials at multiples of 0.1 (inexact in binary) against the same at multiples of 0.25
    (exact): many resample means equal the sample mean in exact arithmetic, but not in
    rounded sums. The interval scales with the data (BCa is scale-equivariant) only if
    those count as ties; scipy's exact comparison leaves them to rounding."""
    quarters = rows("quarters", n)
    tenths = quarters * 0.4
    exact = np.array(mean_ci(quarters, CONFIDENCE, N_RESAMPLES, SEED))
    np.testing.assert_allclose(
        mean_ci(tenths, CONFIDENCE, N_RESAMPLES, SEED), 0.4 * exact, rtol=1e-9
    )


def test_a_degenerate_row_gets_the_percentile_interval():
    x = np.vstack([np.full(10, 0.5), np.linspace(0, 1, 10)])
    low, high = mean_ci(x, CONFIDENCE, N_RESAMPLES, SEED)
    assert low[0] == high[0] == 0.5
    assert low[1] < 0.5 < high[1]


def test_resample_means_are_the_means_of_the_resamples():
    x = np.random.default_rng(1).normal(size=(3, 7))
    drawn = np.random.default_rng(SEED).integers(0, 7, (50, 7))
    np.testing.assert_allclose(resample_means(x, 50, SEED), x[:, drawn].mean(axis=-1))


def test_bootstrap_ci_takes_it_for_one_sample_and_blocks_do_not_matter(monkeypatch):
    x = rows("pareto", 40, groups=7)
    whole = bootstrap_ci([x], np.mean)
    monkeypatch.setattr("matcond.stats.summary.GROUPS_PER_CALL", 3)
    blocked = bootstrap_ci([x], np.mean)
    np.testing.assert_array_equal(whole, blocked)
    np.testing.assert_allclose(whole, mean_ci(x, CONFIDENCE, N_RESAMPLES, SEED))
