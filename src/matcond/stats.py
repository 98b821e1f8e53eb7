"""Statistics over trials: one row per experiment cell, component and recorded epoch.

For each group the trials that diverged are counted in ``n_diverged`` and left out; of the
rest, errors that are not finite (e.g. a relative error against an infinite target) are
counted in ``n_nonfinite`` and left out; the remaining ``n`` values give ``mean``, ``std``
(ddof 1), the 95 % confidence interval of the mean from Student's t
(mean +- t_{0.975, n-1} std / sqrt(n); NaN for n < 2), ``median``, ``q25`` and ``q75``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

VALUE_COLUMNS = ["trained_mean", "trained_median", "target_mean"]
STAT_COLUMNS = [
    "mean",
    "std",
    "ci_low",
    "ci_high",
    "median",
    "q25",
    "q75",
    "n",
    "n_diverged",
    "n_nonfinite",
]


def summarise(errors: np.ndarray, diverged: np.ndarray) -> dict[str, float]:
    """The statistics of one group's trial errors (see the module docstring)."""
    errors = np.asarray(errors, dtype=np.float64)
    diverged = np.asarray(diverged, dtype=bool)
    kept = errors[~diverged]
    finite = kept[np.isfinite(kept)]
    n = finite.size
    nan = float("nan")
    mean = float(finite.mean()) if n else nan
    std = float(finite.std(ddof=1)) if n > 1 else nan
    half = float(stats.t.ppf(0.975, n - 1) * std / np.sqrt(n)) if n > 1 else nan
    q25, median, q75 = (
        (float(q) for q in np.quantile(finite, [0.25, 0.5, 0.75])) if n else (nan,) * 3
    )
    return {
        "mean": mean,
        "std": std,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "median": median,
        "q25": q25,
        "q75": q75,
        "n": n,
        "n_diverged": int(diverged.sum()),
        "n_nonfinite": int(kept.size - n),
    }


def aggregate(trials: pd.DataFrame, experiment: str, swept: Sequence[str]) -> pd.DataFrame:
    """Summarise per (swept settings, matrix, epoch, component) the trial tables' errors.

    Every trial must contribute one row per group; ``swept`` are the settings the experiment
    varies. Besides the statistics of ``error`` (:func:`summarise`), each group gets the mean
    and median of the finite ``trained`` values and the mean of the finite ``target`` values of
    its trials that did not diverge (e.g. a layer's condition number, which has no target).
    """
    keys = [*swept, "matrix", "epoch", "component"]
    missing = [k for k in keys if k not in trials.columns]
    if missing:
        raise KeyError(f"trial tables lack the columns {missing}")
    rows = []
    for values, group in trials.groupby(keys, sort=True, dropna=False):
        kept = group[~group["diverged"].astype(bool)]
        trained = kept["trained"][np.isfinite(kept["trained"])]
        target = kept["target"][np.isfinite(kept["target"])]
        rows.append(
            {
                **dict(zip(keys, values, strict=True)),
                **summarise(group["error"], group["diverged"]),
                "trained_mean": trained.mean(),
                "trained_median": trained.median(),
                "target_mean": target.mean(),
            }
        )
    table = pd.DataFrame(rows, columns=[*keys, *STAT_COLUMNS, *VALUE_COLUMNS])
    table.insert(0, "experiment", experiment)
    return table.astype({"n": "int64", "n_diverged": "int64", "n_nonfinite": "int64"})
