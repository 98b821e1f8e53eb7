"""The paper's quantitative claims checked against the experiment tables.

Claims are data (config/claims.yaml). Each names a table, a row filter (``component`` and
setting values; the ``product`` matrix at the table's last epoch unless ``matrix``/``epoch``
say otherwise) and what is measured:

- ``kind: value`` — the row's mean error (or ``field``, e.g. ``trained_median``);
- ``kind: ratio`` — mean(filter) / mean(baseline);
- ``kind: improvement`` — 1 - mean(filter) / mean(baseline);
- ``kind: gradient_ratio`` — median over epochs of mean |dL/d sigma_1| / mean |dL/d sigma_min|.

Verdict rule (also in the README):
- ``not comparable``: the table or row is missing, or the measured value is not finite;
- ``reproduced``: the paper's value is a range [lo, hi] containing the measurement, or a number
  within ``tolerance`` (relative, default 0.25) of it (the 95 % CI is reported beside it but
  does not decide: with few heavy-tailed trials it is too wide to mean anything);
- ``direction only``: not reproduced, but the claim's direction holds: for claims with an
  ``expect`` (``greater``/``less``), the measurement is on that side of ``expect_than``
  (default 1 for ratios, 0 for improvements; for values, the mean of ``baseline``);
- ``not reproduced``: otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

CLAIM_COLUMNS = [
    "claim_id",
    "where",
    "statement",
    "paper_value",
    "measured",
    "ci_low",
    "ci_high",
    "n",
    "n_diverged",
    "verdict",
]


class MissingRow(LookupError):
    """The filter selects no row (an experiment not in the config, a setting not swept)."""


def select(table: pd.DataFrame, where: dict[str, Any]) -> pd.Series:
    """The single row of ``table`` matching ``where`` (matrix product, last epoch by default)."""
    where = {"matrix": "product", **where}
    rows = table
    epoch = where.pop("epoch", None)
    for key, value in where.items():
        if key not in rows:
            raise MissingRow(f"no column {key}")
        rows = rows[
            np.isclose(rows[key], value) if isinstance(value, float) else rows[key] == value
        ]
    rows = rows[rows["epoch"] == (rows["epoch"].max() if epoch is None else epoch)]
    if len(rows) != 1:
        raise MissingRow(f"{len(rows)} rows match {where}")
    return rows.iloc[0]


def gradient_ratio(table: pd.DataFrame) -> float:
    """Median over recorded epochs of mean |dL/d sigma_1| over mean |dL/d sigma_min|."""
    rows = table[(table["matrix"] == "product") & table["component"].str.startswith("grad_sigma_")]
    index = rows["component"].str.removeprefix("grad_sigma_").astype(int)
    top = rows[index == 1].set_index("epoch")["trained_mean"]
    bottom = rows[index == index.max()].set_index("epoch")["trained_mean"]
    return float((top / bottom).median())


def measure(claim: dict, tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    """The measured value of one claim, with the CI and n of its row where there is one."""
    table = tables[claim["table"]]
    kind = claim.get("kind", "value")
    if kind == "gradient_ratio":
        return {
            "measured": gradient_ratio(table),
            "ci_low": math.nan,
            "ci_high": math.nan,
            "n": math.nan,
        }
    row = select(table, dict(claim["filter"]))
    field = claim.get("field", "mean")
    value = float(row[field])
    ci = (row["ci_low"], row["ci_high"]) if field == "mean" else (math.nan, math.nan)
    out = {"measured": value, "ci_low": ci[0], "ci_high": ci[1], "n": row["n"]}
    out["n_diverged"] = row["n_diverged"]
    if kind == "value":
        return out
    base = select(table, dict(claim["baseline"]))
    ratio = value / float(base["mean"])
    out["measured"] = ratio if kind == "ratio" else 1 - ratio
    out.update(ci_low=math.nan, ci_high=math.nan, n=min(row["n"], base["n"]))
    out["n_diverged"] = max(row["n_diverged"], base["n_diverged"])
    return out


def verdict(
    claim: dict, measured: dict[str, float], tables: dict[str, pd.DataFrame], tolerance: float
) -> str:
    """The claim's verdict (see the module docstring)."""
    value = measured["measured"]
    if not math.isfinite(value):
        return "not comparable"
    paper = claim["paper_value"]
    if isinstance(paper, list):
        if paper[0] <= value <= paper[1]:
            return "reproduced"
    else:
        if abs(value - paper) <= claim.get("tolerance", tolerance) * abs(paper):
            return "reproduced"
    if "expect" not in claim:
        return "not reproduced"
    kind = claim.get("kind", "value")
    if "expect_than" in claim:
        threshold = claim["expect_than"]
    elif kind == "value":
        threshold = float(select(tables[claim["table"]], dict(claim["baseline"]))["mean"])
    else:
        threshold = 1.0 if kind == "ratio" else 0.0
    holds = value > threshold if claim["expect"] == "greater" else value < threshold
    return "direction only" if holds else "not reproduced"


def evaluate(claims: dict, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table: one row per claim of ``claims`` (the parsed config/claims.yaml)."""
    tolerance = claims.get("default_tolerance", 0.25)
    rows = []
    for claim in claims["claims"]:
        row = {k: claim.get(k) for k in ("claim_id", "where", "statement")}
        row["paper_value"] = str(claim["paper_value"])
        try:
            measured = measure(claim, tables)
            row.update(measured, verdict=verdict(claim, measured, tables, tolerance))
        except (KeyError, MissingRow):
            row.update(
                measured=math.nan,
                ci_low=math.nan,
                ci_high=math.nan,
                n=math.nan,
                n_diverged=math.nan,
            )
            row["verdict"] = "not comparable"
        rows.append(row)
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def to_markdown(table: pd.DataFrame) -> str:
    """The claims table as a Markdown table, numbers to 3 significant digits."""

    def fmt(v):
        return f"{v:.3g}" if isinstance(v, float | np.floating) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += [
        "| " + " | ".join(fmt(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"
