"""Statistics over trials: bootstrap intervals that fit heavy-tailed errors.

Condition numbers and the other spectral components have heavy-tailed errors (the target's
smallest singular value sits near 0.5/d, and E[1/s_min] is infinite for square Gaussian-like
matrices), so a mean ± Student-t interval says little and can even go negative. Every interval
here is a 95 % bootstrap interval, BCa where it is defined, percentile where BCa is degenerate
(e.g. all values equal): a median's is exact, computed from the bootstrap distribution of the
median in closed form (:mod:`matcond.stats.median_bootstrap`); the others are Monte Carlo
(:func:`scipy.stats.bootstrap`, a fixed seed, so tables are byte-identical from run to run). A
component's *headline statistic* is the median for heavy-tailed components
(:data:`HEAVY_TAILED`) and the mean for the others (norms, overall).

For one group of trials (an experiment cell, a matrix, an epoch, a component) the trials that
diverged are counted in ``n_diverged`` and left out; of the rest, errors that are not finite
(e.g. a relative error against an infinite target) are counted in ``n_nonfinite`` and left
out; the remaining ``n`` errors give:

- ``statistic``: ``median`` or ``mean`` (the headline), ``estimate``, ``ci_low``, ``ci_high``;
- ``mean``, ``mean_ci_low``, ``mean_ci_high``, ``std`` (ddof 1);
- ``median``, ``median_ci_low``, ``median_ci_high``, ``q25``, ``q75``;
- ``abslog_mean``, ``abslog_ci_low``, ``abslog_ci_high``: the mean of |log(trained/target)|
  over the trials where both are finite and positive (scalar components only);
- ``n``, ``n_diverged``, ``n_nonfinite``.

Intervals need n >= 2 (NaN otherwise).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from matcond.stats.mean_bootstrap import mean_ci
from matcond.stats.median_bootstrap import median_ci

CONFIDENCE = 0.95
N_RESAMPLES = 9999
SEED = 0
# bootstrap_ci hands scipy at most this many groups per call, and resamples in batches of about
# this many values: scipy holds every group's N_RESAMPLES statistics and a batch of resampled
# data at once, and small blocks stay in the CPU's cache (the 31356 groups of
# ctrl_spectral_reg: 102 s in one call, 61 s in blocks). Intervals do not depend on either.
GROUPS_PER_CALL = 500
VALUES_PER_BATCH = 50_000
# Components whose errors are heavy-tailed: summarised by the median.
HEAVY_TAILED = (
    "condition_number",
    "pseudo_condition_number",
    "log_condition_number",
    "spectral_gap",
    "effective_rank_t",
    "sigma_",
)
# Rows of the per-singular-value spectrum (exp3): many, drawn as values: no intervals.
SPECTRUM_PREFIXES = ("sigma_", "grad_sigma_")
VALUE_COLUMNS = ["trained_mean", "trained_median", "target_mean"]
INTERVAL_COLUMNS = [
    f"{name}_ci_{end}" for name in ("mean", "median", "abslog") for end in ("low", "high")
]
STAT_COLUMNS = [
    "statistic",
    "estimate",
    "ci_low",
    "ci_high",
    "mean",
    "mean_ci_low",
    "mean_ci_high",
    "std",
    "median",
    "median_ci_low",
    "median_ci_high",
    "q25",
    "q75",
    "abslog_mean",
    "abslog_ci_low",
    "abslog_ci_high",
    "n",
    "n_diverged",
    "n_nonfinite",
]
Statistic = Callable[..., np.ndarray]


def headline(component: str) -> str:
    """``median`` for a heavy-tailed component, ``mean`` otherwise."""
    return "median" if component.startswith(HEAVY_TAILED) else "mean"


def _std(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.std(x, axis=axis, ddof=1)


STATISTICS: dict[str, Statistic] = {
    "mean": np.mean,
    "median": np.median,
    "std": _std,
    "min": np.min,
    "max": np.max,
}


def bootstrap_ci(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    paired: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """95 % bootstrap interval of ``statistic(*samples, axis=-1)`` (BCa, else percentile);
    exact for ``np.median`` of one sample (:func:`matcond.stats.median_bootstrap.median_ci`),
    and for ``np.mean`` of one sample on scipy's resamples without building them
    (:func:`matcond.stats.mean_bootstrap.mean_ci`).

    ``samples`` are arrays whose last axis runs over trials; leading axes are a batch of
    independent groups (all of one size). ``paired=True`` resamples the same trials from every
    sample (trials that share a seed learn the same target from the same data). Returns
    (low, high), each of the batch shape; NaN where a sample has fewer than 2 trials.

    Every group is resampled with the same seed, and groups go to scipy in blocks of about
    :data:`GROUPS_PER_CALL`, never of one group out of several (numpy adds a lone group's
    resamples in another order): a group's interval does not depend on the blocks.
    """
    samples = [np.asarray(s, dtype=np.float64) for s in samples]
    batch = samples[0].shape[:-1]
    if min(s.shape[-1] for s in samples) < 2:
        return np.full(batch, np.nan), np.full(batch, np.nan)
    if statistic is np.median and len(samples) == 1:  # exact: no resampling
        low, high = median_ci(samples[0].reshape(-1, samples[0].shape[-1]))
        return low.reshape(batch), high.reshape(batch)
    if statistic is np.mean and len(samples) == 1:  # scipy's resamples, as products
        rows = samples[0].reshape(-1, samples[0].shape[-1])
        low, high = np.empty(len(rows)), np.empty(len(rows))
        for first in range(0, len(rows), GROUPS_PER_CALL):
            block = slice(first, first + GROUPS_PER_CALL)
            low[block], high[block] = mean_ci(rows[block], CONFIDENCE, N_RESAMPLES, SEED)
        return low.reshape(batch), high.reshape(batch)

    def run(method: str, data: list[np.ndarray]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate BCa: handled below
            with np.errstate(all="ignore"):
                ci = stats.bootstrap(
                    data,
                    statistic,
                    n_resamples=N_RESAMPLES,
                    batch=max(1, VALUES_PER_BATCH // data[0].size),
                    vectorized=True,
                    paired=paired,
                    axis=-1,
                    confidence_level=CONFIDENCE,
                    method=method,
                    rng=np.random.default_rng(SEED),
                ).confidence_interval
        return np.array(ci.low, dtype=float), np.array(ci.high, dtype=float)

    groups = [s.reshape(-1, s.shape[-1]) for s in samples]

    def in_blocks(method: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high = np.empty(rows.size), np.empty(rows.size)
        for block in np.array_split(np.arange(rows.size), -(-rows.size // GROUPS_PER_CALL)):
            low[block], high[block] = run(method, [g[rows[block]] for g in groups])
        return low, high

    low, high = in_blocks("BCa", np.arange(len(groups[0])))
    bad = ~(np.isfinite(low) & np.isfinite(high))
    if np.any(bad):
        low[bad], high[bad] = in_blocks("percentile", np.flatnonzero(bad))
    return low.reshape(batch), high.reshape(batch)


def _abslog(trained: np.ndarray, target: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.abs(np.log(trained / target))
    ok = (trained > 0) & (target > 0) & np.isfinite(trained) & np.isfinite(target)
    return out[ok]


def _point_stats(errors: np.ndarray) -> dict[str, float]:
    n, nan = errors.size, float("nan")
    q25, median, q75 = (
        (float(q) for q in np.quantile(errors, [0.25, 0.5, 0.75])) if n else [nan] * 3
    )
    return {
        "mean": float(errors.mean()) if n else nan,
        "std": float(errors.std(ddof=1)) if n > 1 else nan,
        "median": median,
        "q25": q25,
        "q75": q75,
    }


def summarise(
    errors: np.ndarray,
    diverged: np.ndarray,
    component: str = "",
    trained: np.ndarray | None = None,
    target: np.ndarray | None = None,
) -> dict[str, float]:
    """The statistics of one group's trial errors (see the module docstring)."""
    return summarise_groups([(errors, diverged, trained, target)], [component])[0]


def summarise_groups(
    groups: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]],
    components: Sequence[str],
) -> list[dict[str, float]]:
    """:func:`summarise` for many groups, bootstrapping groups of one size together.

    Each group is (errors, diverged, trained, target) over its trials. Rows of the
    singular-value spectrum (:data:`SPECTRUM_PREFIXES`) get no intervals.
    """
    rows, batches = [], {}
    for i, ((errors, diverged, trained, target), component) in enumerate(
        zip(groups, components, strict=True)
    ):
        errors = np.asarray(errors, dtype=np.float64)
        diverged = np.asarray(diverged, dtype=bool)
        kept = errors[~diverged]
        finite = kept[np.isfinite(kept)]
        row = {
            "statistic": headline(component),
            **_point_stats(finite),
            "n": finite.size,
            "n_diverged": int(diverged.sum()),
            "n_nonfinite": int(kept.size - finite.size),
            "abslog_mean": np.nan,
            **dict.fromkeys(INTERVAL_COLUMNS, np.nan),
        }
        rows.append(row)
        if component.startswith(SPECTRUM_PREFIXES):
            continue
        batches.setdefault(("error", finite.size), []).append((i, finite))
        if trained is not None and target is not None:
            keep = ~diverged
            logs = _abslog(np.asarray(trained, float)[keep], np.asarray(target, float)[keep])
            if logs.size:
                row["abslog_mean"] = float(logs.mean())
                batches.setdefault(("abslog", logs.size), []).append((i, logs))
    for (kind, size), members in batches.items():
        if size < 2:
            continue
        data = np.stack([values for _, values in members])
        names = ["mean", "median"] if kind == "error" else ["abslog"]
        for name in names:
            low, high = bootstrap_ci([data], np.median if name == "median" else np.mean)
            for (i, _), lo, hi in zip(members, low, high, strict=True):
                rows[i][f"{name}_ci_low"], rows[i][f"{name}_ci_high"] = float(lo), float(hi)
    for row in rows:
        name = row["statistic"]
        row["estimate"] = row[name]
        row["ci_low"], row["ci_high"] = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    return [{k: row[k] for k in STAT_COLUMNS} for row in rows]


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
    labels, groups, values = [], [], []
    for key, group in trials.groupby(keys, sort=True, dropna=False):
        diverged = group["diverged"].to_numpy(bool)
        trained, target = group["trained"].to_numpy(float), group["target"].to_numpy(float)
        labels.append(dict(zip(keys, key, strict=True)))
        groups.append((group["error"].to_numpy(float), diverged, trained, target))
        kept_trained, kept_target = trained[~diverged], target[~diverged]
        kept_trained = kept_trained[np.isfinite(kept_trained)]
        kept_target = kept_target[np.isfinite(kept_target)]
        values.append(
            {
                "trained_mean": kept_trained.mean() if kept_trained.size else np.nan,
                "trained_median": np.median(kept_trained) if kept_trained.size else np.nan,
                "target_mean": kept_target.mean() if kept_target.size else np.nan,
            }
        )
    summaries = summarise_groups(groups, [label["component"] for label in labels])
    rows = [
        {**label, **summary, **value}
        for label, summary, value in zip(labels, summaries, values, strict=True)
    ]
    table = pd.DataFrame(rows, columns=[*keys, *STAT_COLUMNS, *VALUE_COLUMNS])
    table.insert(0, "experiment", experiment)
    return table.astype({"n": "int64", "n_diverged": "int64", "n_nonfinite": "int64"})
