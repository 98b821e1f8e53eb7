"""Statistics over trials: bootstrap intervals (coverage, pairing, edge cases) and aggregation."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from matcond.stats.summary import (
    STAT_COLUMNS,
    VALUE_COLUMNS,
    aggregate,
    bootstrap_ci,
    headline,
    summarise,
)


@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_intervals_do_not_depend_on_how_groups_are_blocked(statistic, monkeypatch):
    """Groups go to scipy in blocks (GROUPS_PER_CALL) and resamples in batches
    (VALUES_PER_BATCH): neither may change an interval, the percentile fallback included."""
    rng = np.random.default_rng(3)
    samples = rng.lognormal(sigma=2.0, size=(11, 10))
    degenerate = [1, 4, 5, 9]  # all values equal: BCa undefined, percentile interval
    samples[degenerate] = np.arange(1.0, 5.0)[:, None]
    whole = np.array(bootstrap_ci([samples], statistic))
    monkeypatch.setattr(
        "matcond.stats.summary.GROUPS_PER_CALL", 3
    )  # BCa 3, 3, 3, 2; percentile 2, 2
    monkeypatch.setattr("matcond.stats.summary.VALUES_PER_BATCH", 170)
    assert np.array_equal(np.array(bootstrap_ci([samples], statistic)), whole)
    low, high = whole
    assert np.array_equal(low[degenerate], [1, 2, 3, 4])
    assert np.array_equal(high[degenerate], [1, 2, 3, 4])
    assert np.all(np.delete(low < statistic(samples, axis=-1), degenerate))
    assert np.all(np.delete(high > statistic(samples, axis=-1), degenerate))


def test_bootstrap_interval_of_the_median_covers_the_true_median_at_about_the_nominal_rate():
    """A seeded simulation: 400 samples of 15 heavy-tailed (log-normal) values; the true
    median is 1. A 95 % interval should cover it in about 95 % of samples (the median's
    bootstrap is known to run a little below nominal at n = 15)."""
    samples = np.random.default_rng(0).lognormal(sigma=1.5, size=(400, 15))
    low, high = bootstrap_ci([samples], np.median)
    coverage = np.mean((low <= 1.0) & (1.0 <= high))
    assert 0.88 <= coverage <= 0.99, coverage


def test_bootstrap_interval_of_the_mean_covers_at_about_the_nominal_rate():
    samples = np.random.default_rng(1).normal(2.0, 1.0, size=(400, 15))
    low, high = bootstrap_ci([samples], np.mean)
    assert 0.90 <= np.mean((low <= 2.0) & (2.0 <= high)) <= 0.99


def test_paired_bootstrap_uses_the_pairing():
    """Two arms that share most of their variation (same seed -> same target and data): the
    paired interval of the ratio of means is far narrower than the unpaired one, and both
    cover the true ratio 1.1."""
    rng = np.random.default_rng(2)
    shared = rng.lognormal(sigma=1.0, size=12)
    a, b = 1.1 * shared * rng.normal(1, 0.01, 12), shared * rng.normal(1, 0.01, 12)

    def ratio(x, y, axis=-1):
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    paired = bootstrap_ci([a, b], ratio, paired=True)
    unpaired = bootstrap_ci([a, b], ratio, paired=False)
    assert paired[0] <= 1.1 <= paired[1] and unpaired[0] <= 1.1 <= unpaired[1]
    assert (paired[1] - paired[0]) < 0.2 * (unpaired[1] - unpaired[0])


def test_intervals_of_non_negative_heavy_tailed_errors_stay_non_negative():
    errors = np.array([1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.3, 7.0, 120.0, 0.004])
    for statistic in (np.mean, np.median):
        low, high = bootstrap_ci([errors], statistic)
        assert 0 <= low <= statistic(errors) <= high


def test_degenerate_samples_fall_back_to_percentile_and_tiny_ones_give_nan():
    low, high = bootstrap_ci([np.zeros(10)], np.median)  # BCa is undefined here
    assert (low, high) == (0.0, 0.0)
    low, high = bootstrap_ci([np.array([3.0])], np.median)
    assert math.isnan(low) and math.isnan(high)


def test_headline_statistic_per_component():
    assert headline("condition_number") == "median"
    assert headline("effective_rank_t0.01") == "median"
    assert headline("spectral_gap") == "median"
    assert headline("row_norms") == "mean" and headline("overall") == "mean"


def test_summary_point_statistics_match_numpy():
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.3])
    got = summarise(x, np.zeros(5, bool), "condition_number")
    assert got["mean"] == pytest.approx(x.mean())
    assert got["std"] == pytest.approx(x.std(ddof=1))
    assert (got["q25"], got["median"], got["q75"]) == pytest.approx(
        tuple(np.percentile(x, [25, 50, 75]))
    )
    assert got["statistic"] == "median" and got["estimate"] == got["median"]
    assert (got["ci_low"], got["ci_high"]) == (got["median_ci_low"], got["median_ci_high"])
    assert got["median_ci_low"] <= got["median"] <= got["median_ci_high"]
    assert (got["n"], got["n_diverged"], got["n_nonfinite"]) == (5, 0, 0)


def test_abslog_mean_is_the_mean_log_ratio():
    trained, target = np.array([2.0, 1.0, 4.0, 1.0]), np.array([1.0, 2.0, 1.0, 1.0])
    got = summarise(np.abs(trained / target - 1), np.zeros(4, bool), "x", trained, target)
    assert got["abslog_mean"] == pytest.approx(np.mean(np.abs(np.log(trained / target))))
    assert got["abslog_ci_low"] <= got["abslog_mean"] <= got["abslog_ci_high"]


def test_diverged_and_nonfinite_values_are_counted_not_averaged():
    x = np.array([1.0, 2.0, np.inf, np.nan, 100.0])
    diverged = np.array([False, False, False, False, True])
    got = summarise(x, diverged, "row_norms")
    assert (got["n"], got["n_diverged"], got["n_nonfinite"]) == (2, 1, 2)
    assert got["mean"] == pytest.approx(1.5) and got["statistic"] == "mean"


def test_single_and_empty_groups():
    one = summarise(np.array([2.0]), np.array([False]))
    assert one["mean"] == 2.0 and math.isnan(one["std"]) and math.isnan(one["ci_low"])
    none = summarise(np.array([np.nan]), np.array([True]))
    assert none["n"] == 0 and math.isnan(none["mean"])


def test_mean_interval_agrees_with_the_t_interval_on_gaussian_data():
    """On well-behaved data the bootstrap interval of the mean is close to Student's."""
    x = np.random.default_rng(3).normal(5.0, 1.0, 200)
    got = summarise(x, np.zeros(x.size, bool), "row_norms")
    low, high = stats.t.interval(0.95, df=x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert got["ci_low"] == pytest.approx(low, abs=0.05)
    assert got["ci_high"] == pytest.approx(high, abs=0.05)


def test_aggregate_groups_by_swept_settings_epoch_and_component():
    trials = pd.DataFrame(
        {
            "dim": [4, 4, 8, 8, 4, 4, 8, 8],
            "seed": [0, 1, 0, 1, 0, 1, 0, 1],
            "epoch": [10] * 8,
            "component": ["overall"] * 4 + ["spectral_gap"] * 4,
            "error": [0.1, 0.3, 0.2, 0.4, 1.0, 1.0, 2.0, 4.0],
            "trained": [1.0, 3.0, np.nan, 5.0, 0, 0, 0, 0],
            "target": [2.0] * 8,
            "diverged": [False] * 8,
            "matrix": ["product"] * 8,
        }
    )
    table = aggregate(trials, "exp", ["dim"])
    assert list(table.columns) == [
        "experiment",
        "dim",
        "matrix",
        "epoch",
        "component",
        *STAT_COLUMNS,
        *VALUE_COLUMNS,
    ]
    first = table.iloc[0]
    assert (first["trained_mean"], first["trained_median"], first["target_mean"]) == (2.0, 2.0, 2.0)
    assert len(table) == 4
    row = table[(table["dim"] == 8) & (table["component"] == "spectral_gap")].iloc[0]
    assert row["median"] == pytest.approx(3.0) and row["n"] == 2 and row["statistic"] == "median"
    with pytest.raises(KeyError, match="optimizer"):
        aggregate(trials, "exp", ["optimizer"])


def test_aggregate_is_deterministic():
    rng = np.random.default_rng(4)
    trials = pd.DataFrame(
        {
            "seed": np.arange(12),
            "epoch": 5,
            "component": "condition_number",
            "error": rng.lognormal(size=12),
            "trained": 1.0,
            "target": 1.0,
            "diverged": False,
            "matrix": "product",
        }
    )
    pd.testing.assert_frame_equal(aggregate(trials, "e", []), aggregate(trials, "e", []))
