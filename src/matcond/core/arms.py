"""Values per trial from an experiment's per-trial table (``results/per_trial/{experiment}``)
or per seed from a Gauss-Newton sweep's table (``results/tables/gn_{sweep}``).

A per-trial table is every trial table of one experiment stacked: the trials' settings as
columns, then ``matrix``, ``epoch``, ``component``, ``trained``, ``target``, ``error``,
``loss``, ``diverged``, ``diverged_epoch`` (matcond.condition_number.run). A GN sweep's table has
one row per network and seed (columns: :data:`matcond.gn_experiments.columns.SWEEP_COLUMNS`). An
*arm* is one value per trial (per seed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matcond.core.files import TRIALS_ROOT, block_manifests, read_manifest
from matcond.core.trials import trial_paths


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


def kappa_error_without_rank_cut(rows: pd.DataFrame) -> float:
    """The relative error of one trial's condition number at its last epoch as s_1 / s_min
    reads without a rank cut: a target whose smallest singular value the cut sets to 0
    (κ = inf: a low-rank target) counts at the limit of |κ - κ*| / κ* as κ* grows, 1, for a
    finite learned κ. What the peer review computed (in float64 such a target's s_min is
    rounding noise, κ* ~ 1e16, and the error 1 - κ / κ* rounds to 1.000); NaN if the learned
    κ is infinite too."""
    rows = rows[rows["component"] == "condition_number"]
    last = rows[rows["epoch"] == rows["epoch"].max()]
    if len(last) != 1:
        return float("nan")
    trained, target = float(last["trained"].iloc[0]), float(last["target"].iloc[0])
    if np.isinf(target) and np.isfinite(trained):
        return 1.0
    return float(last["error"].iloc[0])


def falling_share(component: str) -> Callable[[pd.DataFrame], float]:
    """The share of one trial's recorded epochs (after the first) at which ``component``'s
    error is below the previous record's: 1 for an error that falls monotonically (§4.5:
    "norm errors decrease smoothly and monotonically"). NaN with fewer than 2 records."""

    def share(rows: pd.DataFrame) -> float:
        errors = rows[rows["component"] == component].sort_values("epoch")["error"]
        steps = np.diff(errors.to_numpy(float))
        return float(np.mean(steps < 0)) if steps.size else float("nan")

    return share


DERIVED: dict[str, Callable[[pd.DataFrame], float]] = {
    "gradient_ratio": gradient_ratio,
    "log_kappa_autocorrelation": log_kappa_autocorrelation,
    "kappa_error_without_rank_cut": kappa_error_without_rank_cut,
    "row_norms_falling_share": falling_share("row_norms"),
    "condition_number_falling_share": falling_share("condition_number"),
}
# Derived components bounded by construction (shares, in [0, 1]): every moment exists, so a
# mean of them keeps the interval rule whatever the trial count (matcond.claims.evaluate).
BOUNDED = frozenset({"row_norms_falling_share", "condition_number_falling_share"})


def _selected(table: pd.DataFrame, where: dict[str, Any]) -> np.ndarray:
    """Which rows of ``table`` hold the values of ``where`` in their columns (a boolean array:
    one pass per column, and the caller takes the rows once)."""
    selected = np.ones(len(table), dtype=bool)
    for key, value in where.items():
        if key not in table:
            raise MissingRows(f"no column {key!r}")
        selected &= matches(table[key], value).to_numpy(dtype=bool, na_value=False)
    return selected


def cells(table: pd.DataFrame, where: dict[str, Any]) -> set[tuple]:
    """The trial settings (the columns before ``matrix`` but the seed) of the rows of
    ``table`` that the columns named in ``where`` select, one tuple per setting."""
    rows = table
    for key, value in where.items():
        if key in rows:
            rows = rows[matches(rows[key], value)]
    columns = list(table.columns)
    settings = sorted(c for c in columns[: columns.index("matrix")] if c != "seed")
    unique = rows[settings].drop_duplicates()
    return {tuple(str(v) for v in row) for row in unique.itertuples(index=False)}


def arm(table: pd.DataFrame, where: dict[str, Any], field: str = "error") -> pd.Series:
    """One value per trial (indexed by seed) for the rows matching ``where``.

    ``where`` holds setting values, ``component``, ``matrix`` (default ``product``),
    ``epoch`` (default: the table's last) and ``field`` (overrides the argument). Diverged
    trials and non-finite values are dropped; ``attrs["n_diverged"]`` counts the diverged ones,
    ``attrs["devices"]`` names the devices the kept trials trained on (the table's ``device``
    column, where it has one; recorded ones only).
    """
    where = {"matrix": "product", **where}
    component = where.pop("component")
    field = where.pop("field", field)
    epoch = where.pop("epoch", None)
    if component in DERIVED:
        rows = table[_selected(table, where)]
        values = rows.groupby("seed").apply(DERIVED[component], include_groups=False)
        diverged = rows.groupby("seed")["diverged"].any()
    else:
        cell = {"component": component, "epoch": table["epoch"].max() if epoch is None else epoch}
        read = [c for c in ("seed", field, "diverged", "device") if c in table]
        rows = table.loc[_selected(table, {**where, **cell}), read]
        if rows["seed"].duplicated().any():
            raise MissingRows(f"{where | {'component': component}} selects several cells")
        values = rows.set_index("seed")[field]
        diverged = rows.set_index("seed")["diverged"].astype(bool)
    if values.empty:
        raise MissingRows(f"no trial matches {where | {'component': component}}")
    kept = values[~diverged.reindex(values.index).fillna(False).astype(bool)]
    kept = kept[np.isfinite(kept.astype(float))].astype(float).sort_index()
    kept.attrs["n_diverged"] = int(diverged.sum())
    if "device" in rows:
        devices = rows.loc[rows["seed"].isin(kept.index), "device"]
        kept.attrs["devices"] = sorted(set(devices.astype(str).unique()) - {""})
    return kept


UPPER = "_upper"  # a GN field tightness_x_upper: the largest tightness_x within κ's error


def gn_arm(table: pd.DataFrame, where: dict[str, Any], reduce: str | None = None) -> pd.Series:
    """One value per seed (its index) from a GN sweep's table, for the rows matching ``where``.

    ``where`` holds column values, ``field`` (the column read; required) and ``epoch`` (where
    the table has one; default its last). ``reduce`` (``"min"``/``"max"``) takes each seed's
    extreme over several matching rows (e.g. every depth); without it a seed must match one
    row. Field ``{tightness column}_upper`` is bound / (κ (1 - relative_error)), the largest
    tightness the exact κ's own error estimate allows: a bound is refuted only where it is
    below 1. Field ``a/b`` is column ``a`` over column ``b`` of each network (e.g.
    ``kappa/kappa_sigma``: κ per unit of the data's κ). Rows whose κ is not reliable, and
    non-finite values, are dropped: ``attrs["n_unreliable"]`` counts the unreliable ones
    (``attrs["n_diverged"]`` is 0).
    """
    where = dict(where)
    field = where.pop("field")
    if "epoch" in table and "epoch" not in where:
        where["epoch"] = table["epoch"].max()
    rows = table[_selected(table, where)]
    if rows.empty:
        raise MissingRows(f"no network matches {where}")
    column = field.removesuffix(UPPER)
    numerator, _, denominator = column.partition("/")
    for name in filter(None, (numerator, denominator)):
        if name not in rows:
            raise MissingRows(f"no column {name!r}")
    values = rows[numerator].astype(float)
    if denominator:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = values / rows[denominator].astype(float)
    if column != field:
        with np.errstate(divide="ignore"):
            values = values / (1 - rows["relative_error"].astype(float)).clip(lower=0)
    reliable = (
        rows["reliable"].astype(bool) if "reliable" in rows else pd.Series(True, index=rows.index)
    )
    values = values[reliable]
    values = values[np.isfinite(values)]
    if values.empty:
        raise MissingRows(f"no reliable, finite {field} where {where}")
    seeds = rows.loc[values.index, "seed"]
    if reduce is not None:
        values = values.groupby(seeds).agg(reduce)
    elif seeds.duplicated().any():
        raise MissingRows(f"{where} selects several networks per seed")
    else:
        values.index = pd.Index(seeds.to_numpy(), name="seed")
    values = values.sort_index()
    values.attrs.update(n_diverged=0, n_unreliable=int((~reliable).sum()))
    return values


DIVERGED_COLUMNS = ["experiment", "trial", "diverged_epoch"]


def diverged_trials(
    trials: dict[str, dict[str, list[int]]], manifests: list[str | Path]
) -> pd.DataFrame:
    """One row per diverged trial of each experiment (``trials``: experiment -> its trials as
    :func:`matcond.core.trials.seeds_by_cell`), read off its block's manifest (one of
    ``manifests``): experiment, trial, diverged_epoch."""
    epochs = {}
    for manifest in block_manifests(manifests):
        cell = manifest.relative_to(TRIALS_ROOT).parent.as_posix()
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


def divergence_summary(
    diverged: pd.DataFrame,
    n_trials: int,
    expected: Mapping[str, str] | None = None,
    shown: int = 3,
) -> str:
    """One line for the end of a run: how many of ``n_trials`` diverged and in which
    experiments, each with what its config says is expected to diverge (``expected``:
    experiment -> its ``expected_divergence``), the first ``shown`` of them with their
    epochs."""
    if diverged.empty:
        return f"No trial diverged ({n_trials} trials)."
    expected = expected or {}
    trials = diverged.drop_duplicates("trial")
    per_experiment = trials["experiment"].value_counts(sort=False)
    where = ", ".join(
        f"{name} {count}" + (f" (expected: {expected[name]})" if expected.get(name) else "")
        for name, count in per_experiment.items()
    )
    first = [f"{row.trial} (epoch {row.diverged_epoch})" for row in trials.head(shown).itertuples()]
    more = len(trials) - len(first)
    return (
        f"{len(trials)} of {n_trials} trials diverged ({where}; stored as NaN, left out of every "
        f"statistic): {'; '.join(first)}{f'; and {more} more' if more else ''} "
        "(all: results/diverged_trials.html)"
    )
