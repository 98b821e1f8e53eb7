"""Values per trial from an experiment's per-trial table (``results/per_trial/{experiment}``).

A per-trial table is every trial table of one experiment stacked: the trials' settings as
columns, then ``matrix``, ``epoch``, ``component``, ``trained``, ``target``, ``error``,
``loss``, ``diverged``, ``diverged_epoch`` (matcond.run). An *arm* is one value per trial.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matcond.files import TRIALS_ROOT, read_manifest
from matcond.trials import trial_paths


class MissingRows(LookupError):
    """The filter selects no trial (a setting not swept, a component not recorded)."""


def matches(column: pd.Series, value: Any) -> pd.Series:
    """Rows whose ``column`` equals ``value`` (floats compared with np.isclose)."""
    if isinstance(value, float) and not isinstance(value, bool):
        return pd.Series(np.isclose(column.astype(float), value), index=column.index)
    return column == value


def gradient_ratio(rows: pd.DataFrame) -> float:
    """Median over epochs >= 1 of |dL/d sigma_1| / |dL/d sigma_min| for one trial's rows."""
    grads = rows[rows["component"].str.startswith("grad_sigma_") & (rows["epoch"] > 0)]
    index = grads["component"].str.removeprefix("grad_sigma_").astype(int)
    top = grads[index == 1].set_index("epoch")["trained"]
    bottom = grads[index == index.max()].set_index("epoch")["trained"]
    return float((top / bottom).median())


def log_kappa_autocorrelation(rows: pd.DataFrame, last: int = 50) -> float:
    """Lag-1 autocorrelation of e_t = log kappa_t - log kappa* over the last ``last`` recorded
    epochs of one trial: near 1 for a smooth drift, near -1 for a period-2 oscillation (each
    step overshoots), NaN with fewer than 3 epochs or a constant e_t."""
    rows = rows[rows["component"] == "log_condition_number"].sort_values("epoch").tail(last)
    e = (rows["trained"] - rows["target"]).to_numpy(float)
    if e.size < 3:
        return float("nan")
    e = e - e.mean()
    denominator = float(np.sum(e * e))
    return float(np.sum(e[1:] * e[:-1]) / denominator) if denominator > 0 else float("nan")


DERIVED: dict[str, Callable[[pd.DataFrame], float]] = {
    "gradient_ratio": gradient_ratio,
    "log_kappa_autocorrelation": log_kappa_autocorrelation,
}


def arm(table: pd.DataFrame, where: dict[str, Any], field: str = "error") -> pd.Series:
    """One value per trial (indexed by seed) for the rows matching ``where``.

    ``where`` holds setting values, ``component``, ``matrix`` (default ``product``),
    ``epoch`` (default: the table's last) and ``field`` (overrides the argument). Diverged
    trials and non-finite values are dropped; ``attrs["n_diverged"]`` counts the diverged ones.
    """
    where = {"matrix": "product", **where}
    component = where.pop("component")
    field = where.pop("field", field)
    epoch = where.pop("epoch", None)
    rows = table
    for key, value in where.items():
        if key not in rows:
            raise MissingRows(f"no column {key!r}")
        rows = rows[matches(rows[key], value)]
    if component in DERIVED:
        values = rows.groupby("seed").apply(DERIVED[component], include_groups=False)
        diverged = rows.groupby("seed")["diverged"].any()
    else:
        rows = rows[rows["component"] == component]
        rows = rows[rows["epoch"] == (table["epoch"].max() if epoch is None else epoch)]
        if rows["seed"].duplicated().any():
            raise MissingRows(f"{where | {'component': component}} selects several cells")
        values = rows.set_index("seed")[field]
        diverged = rows.set_index("seed")["diverged"].astype(bool)
    if values.empty:
        raise MissingRows(f"no trial matches {where | {'component': component}}")
    kept = values[~diverged.reindex(values.index).fillna(False).astype(bool)]
    kept = kept[np.isfinite(kept.astype(float))].astype(float).sort_index()
    kept.attrs["n_diverged"] = int(diverged.sum())
    return kept


DIVERGED_COLUMNS = ["experiment", "trial", "diverged_epoch"]


def diverged_trials(
    trials: dict[str, dict[str, list[int]]], manifests: list[str | Path]
) -> pd.DataFrame:
    """One row per diverged trial of each experiment (``trials``: experiment -> its trials as
    :func:`matcond.trials.seeds_by_cell`), read off its block's manifest (one of
    ``manifests``): experiment, trial, diverged_epoch."""
    epochs = {}
    for manifest in manifests:
        cell = Path(manifest).relative_to(TRIALS_ROOT).parent.as_posix()
        for name, record in read_manifest(manifest)["trials"].items():
            epochs[f"{cell}/{name}"] = record["diverged_epoch"]
    rows = []
    for experiment, cells in trials.items():
        for path in trial_paths(cells):
            if path not in epochs:
                raise LookupError(f"trial {path} is in none of the blocks' manifests")
            if epochs[path] is not None:
                rows.append(
                    {"experiment": experiment, "trial": path, "diverged_epoch": epochs[path]}
                )
    return pd.DataFrame(rows, columns=DIVERGED_COLUMNS)


def divergence_summary(diverged: pd.DataFrame, n_trials: int, shown: int = 3) -> str:
    """One line for the end of a run: how many of ``n_trials`` diverged, the first ``shown``
    of them with their epochs."""
    if diverged.empty:
        return f"No trial diverged ({n_trials} trials)."
    first = [
        f"{row.trial} (epoch {row.diverged_epoch})"
        for row in diverged.drop_duplicates("trial").head(shown).itertuples()
    ]
    more = diverged["trial"].nunique() - len(first)
    return (
        f"{diverged['trial'].nunique()} of {n_trials} trials diverged (stored as NaN, left out "
        f"of every statistic): {'; '.join(first)}{f'; and {more} more' if more else ''} "
        "(all: results/diverged_trials.html)"
    )
