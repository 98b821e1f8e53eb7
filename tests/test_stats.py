"""Aggregation statistics against scipy on small samples, and the divergence bookkeeping."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from matcond.stats import STAT_COLUMNS, VALUE_COLUMNS, aggregate, summarise


def test_summary_matches_scipy():
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.3])
    got = summarise(x, np.zeros(5, bool))
    low, high = stats.t.interval(0.95, df=4, loc=x.mean(), scale=stats.sem(x))
    assert got["mean"] == pytest.approx(x.mean())
    assert got["std"] == pytest.approx(x.std(ddof=1))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high))
    assert (got["q25"], got["median"], got["q75"]) == pytest.approx(
        tuple(np.percentile(x, [25, 50, 75]))
    )
    assert (got["n"], got["n_diverged"], got["n_nonfinite"]) == (5, 0, 0)


def test_diverged_and_nonfinite_values_are_counted_not_averaged():
    x = np.array([1.0, 2.0, np.inf, np.nan, 100.0])
    diverged = np.array([False, False, False, False, True])
    got = summarise(x, diverged)
    assert (got["n"], got["n_diverged"], got["n_nonfinite"]) == (2, 1, 2)
    assert got["mean"] == pytest.approx(1.5)


def test_single_and_empty_groups():
    one = summarise(np.array([2.0]), np.array([False]))
    assert one["mean"] == 2.0 and math.isnan(one["std"]) and math.isnan(one["ci_low"])
    none = summarise(np.array([np.nan]), np.array([True]))
    assert none["n"] == 0 and math.isnan(none["mean"])


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
    assert row["mean"] == pytest.approx(3.0) and row["n"] == 2
    with pytest.raises(KeyError, match="optimizer"):
        aggregate(trials, "exp", ["optimizer"])
