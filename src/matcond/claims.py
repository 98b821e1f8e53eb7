"""The paper's quantitative claims checked against the trials, each with a bootstrap interval.

Claims are data (config/claims.yaml, checked before any job by :mod:`matcond.claims_check`
against workflow/schemas/claims.schema.yaml). Each names an experiment (``table``) and reads its
per-trial table (``results/per_trial/{experiment}.parquet``, one row per trial, matrix,
recorded epoch and component). An *arm* is one value per trial: the rows matching a filter
(setting values, ``component``, ``matrix`` — ``product`` unless given) at one epoch (the
table's last unless ``epoch`` is given), field ``error`` unless ``field`` says ``trained`` or
``target``. Trials that diverged, and non-finite values, are left out. A derived component,
``gradient_ratio``, is one value per trial computed from its exp3 rows: the median over
epochs >= 1 of |dL/d sigma_1| / |dL/d sigma_min|.

``kind`` says what is measured from the arms (``stat`` is the claim's ``statistic``: the
component's headline statistic of :mod:`matcond.stats` unless given — median for heavy-tailed
components, mean otherwise; ``std`` for the paper's dispersions):

- ``value``: stat(filter);
- ``ratio``: stat(filter) / stat(baseline); ``improvement``: 1 - that ratio;
- ``improvement_gap``: improvement of ``components[0]`` minus improvement of ``components[1]``
  (filter vs baseline, each with that component);
- ``correlation``: Spearman's rank correlation of the per-trial values of filter and baseline.

``over: {key: [values]}`` evaluates the claim at each value of ``key`` (added to filter and
baseline) and reduces with ``reduce`` (``min`` or ``max``): "at every learning rate".

The 95 % interval is a bootstrap over trials (:func:`matcond.stats.bootstrap_ci`). Arms whose
trials have the same seeds are resampled together (paired): a seed fixes the target, the data
stream and the init, so two arms with one seed differ only in what the claim compares.

Verdicts (``band`` is the paper's range, or its value ± ``tolerance`` (relative, default
``default_tolerance``)):

- ``reproduced``: the interval lies inside the band;
- ``not reproduced``: the interval lies outside the band — or ``direction only`` if the claim
  has an ``expect`` (``greater``/``less``) and the interval of its direction lies wholly on
  that side: of ``expect_than`` (default 1 for ratios, 0 for improvements, gaps and
  correlations); for values, of the ``baseline`` (the ratio filter / baseline against 1);
- ``inconclusive``: the interval overlaps an edge of the band;
- ``not comparable``: the rows are missing or the measurement is not finite;
- ``not configured``: the claim's experiment is not in the config.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from matcond import theory
from matcond.selection import DERIVED, MissingRows, arm
from matcond.stats import STATISTICS, bootstrap_ci, headline
from matcond.trials import format_value

CLAIM_COLUMNS = [
    "claim_id",
    "where",
    "statement",
    "paper_value",
    "band_low",
    "band_high",
    "kind",
    "statistic",
    "measured",
    "ci_low",
    "ci_high",
    "n",
    "n_diverged",
    "paired",
    "verdict",
    "note",
]
VERDICTS = (
    "reproduced",
    "direction only",
    "inconclusive",
    "not reproduced",
    "not comparable",
    "not configured",
)
DEFAULT_THRESHOLD = {"ratio": 1.0, "improvement": 0.0, "improvement_gap": 0.0, "correlation": 0.0}
REDUCE = {"min": np.minimum, "max": np.maximum}


def _spearman(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    ra, rb = scipy_stats.rankdata(a, axis=axis), scipy_stats.rankdata(b, axis=axis)
    ra = ra - ra.mean(axis=axis, keepdims=True)
    rb = rb - rb.mean(axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        return (ra * rb).sum(axis) / np.sqrt((ra**2).sum(axis) * (rb**2).sum(axis))


def _statistic(name: str | None, component: str) -> str:
    return name or (headline(component) if component not in DERIVED else "median")


def _measurement(claim: dict, tables: dict[str, pd.DataFrame]):
    """The claim's arms, the function of them it measures, and the statistic's name."""
    table = tables[claim["table"]]
    kind = claim.get("kind", "value")
    ((over_key, over_values),) = claim.get("over", {None: [None]}).items()
    wheres, terms = [], []  # terms: per over-value, the arm indices of each comparison
    for value in over_values:
        extra = {} if over_key is None else {over_key: value}
        filt = {**claim.get("filter", {}), **extra}
        base = {**claim.get("baseline", {}), **extra}
        if kind == "value":
            comparisons = [(filt,)]
        elif kind == "improvement_gap":
            comparisons = [
                ({**filt, "component": c}, {**base, "component": c}) for c in claim["components"]
            ]
        else:
            comparisons = [(filt, base)]
        term = []
        for comparison in comparisons:
            term.append(range(len(wheres), len(wheres) + len(comparison)))
            wheres.extend(comparison)
        terms.append(term)
    arms = [arm(table, w, claim.get("field", "error")) for w in wheres]
    names = [_statistic(claim.get("statistic"), w["component"]) for w in wheres]
    stat = [STATISTICS[name] for name in names]

    def compare(index: range, samples, axis: int) -> np.ndarray:
        if len(index) == 1:
            return stat[index[0]](samples[index[0]], axis=axis)
        a, b = index
        if kind == "correlation":
            return _spearman(samples[a], samples[b], axis=axis)
        ratio = stat[a](samples[a], axis=axis) / stat[b](samples[b], axis=axis)
        return ratio if kind == "ratio" else 1 - ratio

    reduce = REDUCE[claim.get("reduce", "min")]

    def measure(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        values = []
        for term in terms:
            parts = [compare(index, samples, axis) for index in term]
            values.append(parts[0] - parts[1] if kind == "improvement_gap" else parts[0])
        return functools.reduce(reduce, values)

    statistic = "spearman" if kind == "correlation" else "/".join(dict.fromkeys(names))
    return arms, measure, statistic


def _estimate(arms: list[pd.Series], measure) -> tuple[float, float, float, bool, int]:
    """The measurement on the arms and its bootstrap interval, and the trials it used.

    Arms are paired on the seeds they share (a seed fixes target, data and init): a trial
    missing from one arm (diverged, not finite) leaves all of them. Arms with fewer than two
    common seeds are resampled independently.
    """
    common = arms[0].index
    for a in arms[1:]:
        common = common.intersection(a.index)
    paired = len(arms) > 1 and len(common) >= 2
    if paired:
        arms = [a.loc[common] for a in arms]
    samples = [a.to_numpy() for a in arms]
    n = min(s.size for s in samples)
    with np.errstate(all="ignore"):
        value = float(measure(*samples))
    if not math.isfinite(value):
        return value, math.nan, math.nan, paired, n
    low, high = bootstrap_ci(samples, measure, paired=paired)
    return value, float(low), float(high), paired, n


def band(claim: dict, tolerance: float) -> tuple[float, float]:
    """The paper's range, or its value ± the claim's relative tolerance."""
    paper = claim["paper_value"]
    if isinstance(paper, list):
        return float(paper[0]), float(paper[1])
    spread = claim.get("tolerance", tolerance) * abs(paper)
    return paper - spread, paper + spread


def reference(claim: dict, tables: dict[str, pd.DataFrame], tolerance: float):
    """The band a claim's interval is held against: the paper's (:func:`band`), or for
    ``paper_value: theory`` the theory's prediction for the filter's trials (a point)."""
    if claim["paper_value"] != "theory":
        return band(claim, tolerance)
    inputs = theory.trial_inputs(tables[claim["table"]], claim["filter"])
    predicted = theory.predict(inputs, claim["filter"]["component"])
    return predicted, predicted


def _direction(claim: dict, tables, low: float, high: float) -> bool:
    """Whether the interval of the claim's direction lies wholly on the expected side."""
    kind = claim.get("kind", "value")
    if kind == "value" and "baseline" in claim and "expect_than" not in claim:
        ratio = {**claim, "kind": "ratio"}
        arms, measure, _ = _measurement(ratio, tables)
        _, low, high, _, _ = _estimate(arms, measure)
        threshold = 1.0
    else:
        threshold = claim.get("expect_than", DEFAULT_THRESHOLD.get(kind, 0.0))
    if claim["expect"] == "greater":
        return low > threshold
    return high < threshold


def verdict(claim: dict, measured: dict, tables) -> str:
    """The claim's verdict from its interval (see the module docstring)."""
    value, low, high = measured["measured"], measured["ci_low"], measured["ci_high"]
    band_low, band_high = measured["band_low"], measured["band_high"]
    if not math.isfinite(value) or math.isnan(band_low) or math.isnan(band_high):
        return "not comparable"
    if not (math.isfinite(low) and math.isfinite(high)):
        return "inconclusive"
    if claim["paper_value"] == "theory":
        return "reproduced" if low <= band_low <= high else "not reproduced"
    if band_low <= low and high <= band_high:
        return "reproduced"
    if high < band_low or low > band_high:
        if "expect" in claim and _direction(claim, tables, low, high):
            return "direction only"
        return "not reproduced"
    return "inconclusive"


def evaluate_claim(claim: dict, tables: dict[str, pd.DataFrame], tolerance: float) -> dict:
    """One row of the claims table."""
    row = {k: claim.get(k) for k in ("claim_id", "where", "statement")}
    row["paper_value"] = str(claim["paper_value"])
    row["kind"] = claim.get("kind", "value")
    nan = math.nan
    row.update(band_low=nan, band_high=nan, statistic="", measured=nan, ci_low=nan, ci_high=nan)
    row.update(n=nan, n_diverged=nan, paired=False, note="")
    if claim["table"] not in tables:
        return {**row, "verdict": "not configured", "note": f"no experiment {claim['table']}"}
    try:
        row["band_low"], row["band_high"] = reference(claim, tables, tolerance)
        arms, measure, statistic = _measurement(claim, tables)
        value, low, high, paired, n = _estimate(arms, measure)
        row.update(statistic=statistic, measured=value, ci_low=low, ci_high=high, paired=paired)
        row.update(n=n, n_diverged=max(a.attrs["n_diverged"] for a in arms))
        row["verdict"] = verdict(claim, row, tables)  # the direction may read the baseline's rows
    except MissingRows as err:
        return {**row, "verdict": "not comparable", "note": str(err)}
    if row["verdict"] == "not comparable":
        row["note"] = "the measurement or its reference is not finite"
    elif row["kind"] == "value" and statistic == "median" and "statistic" not in claim:
        mean_arms, mean_measure, _ = _measurement({**claim, "statistic": "mean"}, tables)
        mean, low, high, _, _ = _estimate(mean_arms, mean_measure)
        row["note"] = (
            f"heavy-tailed: median compared; the mean is {mean:.3g} [{low:.3g}, {high:.3g}]"
        )
    return row


def evaluate(claims: dict, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table: one row per claim of ``claims`` (the parsed config/claims.yaml)."""
    tolerance = claims.get("default_tolerance", 0.25)
    rows = [evaluate_claim(claim, tables, tolerance) for claim in claims["claims"]]
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


READING_COLUMNS = ["reading", "arm", *CLAIM_COLUMNS]


def evaluate_readings(claims: dict, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims again, under each reading of the paper's ambiguous settings.

    A reading (``readings`` in config/claims.yaml) is an experiment whose arms (the values of
    its settings ``arms_by``) are alternative readings of a setting the paper leaves open; it
    stands in for the experiments listed under ``stands_for`` (with the settings given there
    added to the filter, e.g. ``optimizer: sgd`` for exp1). Every claim on those experiments
    (except theory claims) is evaluated on every arm: one row per reading, arm and claim.
    """
    tolerance = claims.get("default_tolerance", 0.25)
    rows = []
    for reading in claims.get("readings", []):
        table = tables.get(reading["experiment"])
        if table is None:
            continue
        keys = [k for k in reading["arms_by"] if k in table]
        for values in table[keys].drop_duplicates().sort_values(keys).to_dict("records"):
            values = {k: v for k, v in values.items() if not pd.isna(v)}
            label = ", ".join(f"{k}={format_value(v)}" for k, v in values.items())
            for claim in claims["claims"]:
                extra = reading["stands_for"].get(claim["table"])
                if extra is None or claim["paper_value"] == "theory":
                    continue
                moved = {**claim, "table": reading["experiment"]}
                for key in ("filter", "baseline"):
                    if key in claim:
                        moved[key] = {**claim[key], **extra, **values}
                row = evaluate_claim(moved, tables, tolerance)
                rows.append({"reading": reading["name"], "arm": label, **row})
    return pd.DataFrame(rows, columns=READING_COLUMNS)


def readings_summary(readings: pd.DataFrame) -> pd.DataFrame:
    """Per claim: the arms of each reading that reproduce it (``none`` if no arm does)."""

    def arms_with(verdict: str):
        return lambda rows: "; ".join(rows.loc[rows["verdict"] == verdict, "arm"]) or "none"

    groups = readings.groupby(["claim_id", "reading"], sort=False)
    summary = groups.apply(
        lambda rows: pd.Series(
            {
                "statement": rows["statement"].iloc[0],
                "paper_value": rows["paper_value"].iloc[0],
                "reproduced_by": arms_with("reproduced")(rows),
                "inconclusive_under": arms_with("inconclusive")(rows),
            }
        ),
        include_groups=False,
    )
    return summary.reset_index()


def to_markdown(table: pd.DataFrame) -> str:
    """A table as Markdown, numbers to 3 significant digits."""

    def fmt(v):
        return f"{v:.3g}" if isinstance(v, float | np.floating) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += [
        "| " + " | ".join(fmt(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"


def to_html(table: pd.DataFrame, title: str) -> str:
    """A table as one self-contained HTML page (for the report), numbers to 3 significant
    digits."""
    body = table.to_html(
        index=False,
        na_rep="",
        float_format=lambda v: f"{v:.3g}",
        escape=True,
        border=0,
        classes="claims",
    )
    style = (
        "body{font-family:sans-serif;font-size:13px;margin:1em}"
        "table{border-collapse:collapse}th,td{padding:3px 6px;border-bottom:1px solid #ddd;"
        "text-align:left;vertical-align:top}th{position:sticky;top:0;background:#f4f4f4}"
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{style}</style></head><body><h1>{title}</h1>{body}</body></html>\n"
    )
