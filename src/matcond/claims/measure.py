"""What a claim measures from its arms, its bootstrap interval and the band it is held
against.

``kind`` says what is measured from the arms (``stat`` is the claim's ``statistic``: unless
given, the mean for the paper's claims, which report means, and the component's headline
statistic of :mod:`matcond.stats.summary` for our checks — median for heavy-tailed components;
``std`` for the paper's dispersions). The other location statistic (median for a mean, mean
for a median) is measured too, as ``companion`` with its interval; a mean dominated by one
trial says so in ``note``:

- ``value``: stat(filter);
- ``ratio``: stat(filter) / stat(baseline); ``improvement``: 1 - that ratio;
- ``improvement_gap``: improvement of ``components[0]`` minus improvement of ``components[1]``
  (filter vs baseline, each with that component);
- ``correlation``: Spearman's rank correlation of the per-trial values of filter and baseline.

``over: {key: [values]}`` evaluates the claim at each value of ``key`` (added to filter and
baseline) and reduces with ``reduce`` (``min`` or ``max``): "at every learning rate".

The 95 % interval is a bootstrap over trials (:func:`matcond.stats.summary.bootstrap_ci`). Arms
whose trials have the same seeds are resampled together (paired): a seed fixes the target, the data
stream and the init, so two arms with one seed differ only in what the claim compares.
"""

from __future__ import annotations

import decimal
import functools
import math

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from matcond.claims.check import OWN, claim_source
from matcond.condition_number import theory
from matcond.core.arms import DERIVED, arm, gn_arm
from matcond.gn_experiments.columns import GN_TABLE_PREFIX
from matcond.stats.summary import STATISTICS, bootstrap_ci, headline

DEFAULT_THRESHOLD = {"ratio": 1.0, "improvement": 0.0, "improvement_gap": 0.0, "correlation": 0.0}
REDUCE = {"min": np.minimum, "max": np.maximum}
THEORY_BAND = (0.8, 1.25)  # default of claims.yaml's theory_band
EXTREMES = ("min", "max")  # statistics of a claim on every trial (or network)


def spearman(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rank correlation of ``a`` and ``b`` along ``axis`` (vectorised over the
    bootstrap's resamples)."""
    ra, rb = scipy_stats.rankdata(a, axis=axis), scipy_stats.rankdata(b, axis=axis)
    ra = ra - ra.mean(axis=axis, keepdims=True)
    rb = rb - rb.mean(axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        return (ra * rb).sum(axis) / np.sqrt((ra**2).sum(axis) * (rb**2).sum(axis))


def statistic_of(claim: dict, component: str | None) -> str:
    """The statistic a claim is judged on: its own ``statistic``; else for the papers' claims
    the mean (both report means ± std), for our checks the component's headline (the median
    for a GN field, heavy-tailed as κ is)."""
    if claim.get("statistic"):
        return claim["statistic"]
    if component in DERIVED or (component is None and claim_source(claim) == OWN):
        return "median"
    return "mean" if claim_source(claim) != OWN else headline(component)


def measurement(claim: dict, tables: dict[str, pd.DataFrame]):
    """The claim's arms, the function of them it measures, and the statistic's name."""
    table = tables[claim["table"]]
    kind = claim.get("kind", "value")
    ((over_key, over_values),) = claim.get("over", {None: [None]}).items()
    wheres, terms = [], []  # terms: per over-value, the arm indices of each comparison
    for value in over_values:
        extra = {} if over_key is None else {over_key: value}
        filt = {**claim.get("filter", {}), **extra}
        base = {**extra, **claim.get("baseline", {})}  # a baseline's own value stays
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
    names = [statistic_of(claim, w.get("component")) for w in wheres]
    if claim["table"].startswith(GN_TABLE_PREFIX):
        reduce_rows = [name if name in EXTREMES else None for name in names]
        arms = [gn_arm(table, w, r) for w, r in zip(wheres, reduce_rows, strict=True)]
    else:
        arms = [arm(table, w, claim.get("field", "error")) for w in wheres]
    stat = [STATISTICS[name] for name in names]

    def compare(index: range, samples, axis: int) -> np.ndarray:
        if len(index) == 1:
            return stat[index[0]](samples[index[0]], axis=axis)
        a, b = index
        if kind == "correlation":
            return spearman(samples[a], samples[b], axis=axis)
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
    if len(wheres) == 1:  # one arm: the statistic itself (the median's interval is exact)
        return arms, stat[0], statistic
    return arms, measure, statistic


def paired_values(arms: list[pd.Series]) -> tuple[list[np.ndarray], bool]:
    """The arms' values, paired on the seeds they share (a seed fixes target, data and init):
    a trial missing from one arm (diverged, not finite) leaves all of them. Arms with fewer
    than two common seeds stay as they are (resampled independently)."""
    common = arms[0].index
    for a in arms[1:]:
        common = common.intersection(a.index)
    paired = len(arms) > 1 and len(common) >= 2
    if paired:
        arms = [a.loc[common] for a in arms]
    return [a.to_numpy() for a in arms], paired


def estimate(arms: list[pd.Series], measure) -> tuple[float, float, float, bool, int]:
    """The measurement on the arms (:func:`paired_values`) and its bootstrap interval, and the
    trials it used."""
    samples, paired = paired_values(arms)
    n = min(s.size for s in samples)
    if n == 0:  # every trial of an arm left out (diverged, not finite)
        return math.nan, math.nan, math.nan, paired, n
    with np.errstate(all="ignore"):
        value = float(measure(*samples))
    if not math.isfinite(value):
        return value, math.nan, math.nan, paired, n
    low, high = bootstrap_ci(samples, measure, paired=paired)
    return value, float(low), float(high), paired, n


def printed_half_unit(value: float) -> float:
    """Half a unit of the last digit of ``value`` as written (0.001 -> 0.0005, 1.0 -> 0.05)."""
    return 0.5 * 10.0 ** decimal.Decimal(repr(value)).as_tuple().exponent


def band(claim: dict, tolerance: float) -> tuple[float, float]:
    """The one band rule: the paper's range where it gives one; else its value ± the larger of
    ``tolerance`` (relative) and half a unit of its printed precision."""
    paper = claim["paper_value"]
    if isinstance(paper, list):
        return float(paper[0]), float(paper[1])
    spread = max(tolerance * abs(paper), printed_half_unit(paper))
    return paper - spread, paper + spread


def reference(
    claim: dict,
    tables: dict[str, pd.DataFrame],
    tolerance: float,
    theory_band: tuple[float, float] = THEORY_BAND,
):
    """The band a claim's interval is held against: the paper's (:func:`band`); for
    ``paper_value: theory`` the theory's prediction for the filter's trials (a point), or, for
    a ratio (the filter's arm a prediction, the baseline's the measurement), ``theory_band``."""
    if claim["paper_value"] != "theory":
        return band(claim, tolerance)
    if claim.get("kind") == "ratio":
        return theory_band
    inputs = theory.trial_inputs(tables[claim["table"]], claim["filter"])
    predicted = theory.predict(inputs, claim["filter"]["component"])
    return predicted, predicted
