"""The paper's quantitative claims checked against the trials, each with a bootstrap interval.

Claims are data (config/claims.yaml, checked before any job by :mod:`matcond.claims.check`
against src/matcond/schemas/claims.schema.yaml). Each names an experiment (``table``) and reads its
per-trial table (``results/per_trial/{experiment}.parquet``, one row per trial, matrix,
recorded epoch and component). An *arm* is one value per trial: the rows matching a filter
(setting values, ``component``, ``matrix`` — ``product`` unless given) at one epoch (the
table's last unless ``epoch`` is given), field ``error`` unless ``field`` says ``trained`` or
``target``. Trials that diverged, and non-finite values, are left out. A derived component
(:data:`matcond.core.arms.DERIVED`) is one value per trial computed from its rows:
``gradient_ratio`` the median over epochs >= 1 of |dL/d sigma_1| / |dL/d sigma_min| (exp3),
``log_kappa_autocorrelation``, ``kappa_error_without_rank_cut`` (the κ error of a low-rank
target as the peer review read it).

A claim is the condition-number paper's (its text, slides, review), the Gauss-Newton paper's
(a claim on a GN sweep's table, ``gn_{sweep}``) or our own check (theory, controls):
``source``, :func:`claim_source`; each is counted apart (:func:`matcond.claims.markdown.scorecard`).
A GN claim's arms are one value per seed of the sweep's table (:func:`matcond.core.arms.gn_arm`):
its filter names the table's columns and the ``field`` read (``tightness_x_upper`` allows for the
exact κ's rounding error); with statistic ``min`` or ``max`` each seed contributes its
extreme over every network the filter matches ("every bound holds").

What is measured and its interval: :mod:`matcond.claims.measure`.

A theory claim (``paper_value: theory``) is measured as the ratio predicted / measured, its
interval from the measured statistic's, and its band is ``theory_band``
(:func:`as_theory_ratio`); its ``note`` says what error the check would catch. A theory claim
of kind ``ratio`` holds a prediction made per trial (the depth formula's ``predicted_*``
matrices, table ``depth_theory``) in its filter's arm and the measurement in its baseline's:
the ratio of their statistics, resampled in pairs, against ``theory_band``.

Verdicts (``band``, :func:`matcond.claims.measure.band`: the paper's range, or its value ± the
larger of ``default_tolerance`` (relative) and half a unit of its printed precision):

- ``reproduced``: the interval lies inside the band;
- ``not reproduced`` also where a value claim on every trial (statistic ``min``/``max``) has
  one trial outside the band: a counterexample, not a sampling question;
- ``not reproduced``: the interval lies outside the band;
- ``inconclusive``: the interval overlaps an edge of the band;
- ``consistent`` (or ``not reproduced`` / ``inconclusive``): the
  heavy-tail rule's predictive verdict, for a claim on means or stds of a quantity whose tail
  index is not known to exceed 2 (4 for a std): is the paper's value a plausible statistic of
  an experiment of the paper's size (``heavy_tail`` in config/claims.yaml: ``paper_n``) drawn
  from a pool of our trials? (:mod:`matcond.stats.heavy_tail`; the columns ``rule`` to ``p_high``);
- a claim with ``expect`` (``greater``/``less``) states a law (a direction, growth, ordering or
  improvement): :func:`judge_law` judges it on a population statistic that exists (the median
  in place of a mean that may not), against the paper's range or the claimed side of
  ``expect_than`` (default 1 for ratios and for a value against its ``baseline``, 0 for
  improvements, gaps and correlations): a range's verdict is its law's, never
  ``consistent``; a point value keeps its verdict only where its direction holds, and is
  ``direction only`` where the direction holds and the value does not;
- ``too few trials``: a claim the heavy-tail rule would judge on a pool of 10 trials or
  fewer (no tail index, so no rule to choose), or one judged by its interval on a single
  trial (no interval); the note gives the count;
- ``not comparable``: the rows are missing or the measurement is not finite;
- ``not configured``: the claim's experiment is not in the config;
- ``settings differ``: a paper's claim whose experiment (or GN sweep) this run configures
  otherwise than the paper config (``config/config.yaml``) does: measured, not judged.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from matcond.claims.check import OWN, claim_source, heavy_tail_setting
from matcond.claims.measure import (
    DEFAULT_THRESHOLD,
    EXTREMES,
    THEORY_BAND,
    band,
    estimate,
    measurement,
    paired_values,
    reference,
)
from matcond.core.arms import BOUNDED, MissingRows, cells
from matcond.execution.forked import forked_map
from matcond.gn_experiments.columns import GN_TABLE_PREFIX
from matcond.stats import heavy_tail

CLAIM_COLUMNS = [
    "claim_id",
    "source",
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
    "n_required",
    "n_diverged",
    "paired",
    "device",
    "verdict",
    "companion",
    "companion_ci_low",
    "companion_ci_high",
    "law_statistic",
    "law",
    "law_ci_low",
    "law_ci_high",
    "law_band_low",
    "law_band_high",
    "law_verdict",
    "rule",
    "tail_index",
    "tail_index_low",
    "tail_index_high",
    "paper_n",
    "pool_n",
    "accepted_low",
    "accepted_high",
    "p_value",
    "p_low",
    "p_high",
    "note",
]
VERDICTS = (
    "reproduced",
    "consistent",
    "direction only",
    "inconclusive",
    "not reproduced",
    "too few trials",
    "settings differ",
    "not comparable",
    "not configured",
)
FEW_TRIALS = 5  # below this many trials a claim's note warns that its interval undercovers


def _inside(low: float, high: float, band_low: float, band_high: float) -> str:
    """``holds`` where [low, high] lies inside the band, ``fails`` where outside, else (an
    edge inside it, or an interval that is not finite) ``undecided``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if band_low <= low and high <= band_high:
        return "holds"
    return "fails" if high < band_low or low > band_high else "undecided"


def verdict(claim: dict, measured: dict) -> str:
    """The claim's verdict from its interval (see the module docstring; a law's direction:
    :func:`judge_law`)."""
    value, low, high = measured["measured"], measured["ci_low"], measured["ci_high"]
    band_low, band_high = measured["band_low"], measured["band_high"]
    if not math.isfinite(value) or math.isnan(band_low) or math.isnan(band_high):
        return "not comparable"
    if claim.get("kind", "value") == "value":  # a min / max is refuted by one trial
        extreme = claim.get("statistic")
        if (extreme == "min" and value < band_low) or (extreme == "max" and value > band_high):
            return "not reproduced"
    inside = _inside(low, high, band_low, band_high)
    return {"holds": "reproduced", "fails": "not reproduced"}.get(inside, "inconclusive")


def _companion(claim: dict, tables, statistic: str) -> tuple[float, float, float]:
    """The claim measured on the other location statistic (median for a mean, mean for a
    median) with its interval; NaN where there is none."""
    other = {"mean": "median", "median": "mean"}.get(statistic)
    if other is None or claim.get("kind", "value") == "correlation":
        return math.nan, math.nan, math.nan
    arms, measure, _ = measurement({**claim, "statistic": other}, tables)
    value, low, high, _, _ = estimate(arms, measure)
    return value, low, high


def _tail_note(arms: list[pd.Series]) -> str:
    """For a mean: the share of the largest trial in the sum, when it dominates (more than
    25 % and more than twice its equal share 1/n)."""
    values = np.abs(arms[0].to_numpy(dtype=float))
    total = values.sum()
    if values.size < 2 or not total > 0 or values.max() / total <= max(0.25, 2 / values.size):
        return ""
    return f"the largest of {values.size} trials is {values.max() / total:.0%} of the mean's sum"


LAW_COLUMNS = CLAIM_COLUMNS[CLAIM_COLUMNS.index("law_statistic") : CLAIM_COLUMNS.index("rule")]
PREDICTIVE_COLUMNS = CLAIM_COLUMNS[CLAIM_COLUMNS.index("tail_index") : -1]


def evaluate_claim(
    claim: dict,
    tables: dict[str, pd.DataFrame],
    tolerance: float,
    theory_band: tuple[float, float] = THEORY_BAND,
    pool: str | None = None,
    paper_n: int | None = None,
) -> dict:
    """One row of the claims table. ``pool`` names the experiment whose trials are the
    heavy-tail rule's pool (default: the claim's own), ``paper_n`` the paper's number of
    trials (default: ours)."""
    row = {k: claim.get(k) for k in ("claim_id", "where", "statement")}
    row["source"] = claim_source(claim)
    row["paper_value"] = str(claim["paper_value"])
    row["kind"] = claim.get("kind", "value")
    nan = math.nan
    row.update(band_low=nan, band_high=nan, statistic="", measured=nan, ci_low=nan, ci_high=nan)
    row.update(n=nan, n_required=nan, n_diverged=nan, paired=False, note="", rule="interval")
    row["device"] = ""
    row.update(companion=nan, companion_ci_low=nan, companion_ci_high=nan)
    row.update(dict.fromkeys(LAW_COLUMNS, nan), law_statistic="", law_verdict="")
    row.update(dict.fromkeys(PREDICTIVE_COLUMNS, nan))
    if claim["table"] not in tables:
        return {**row, "verdict": "not configured", "note": f"no experiment {claim['table']}"}
    try:
        row["band_low"], row["band_high"] = reference(claim, tables, tolerance, theory_band)
        arms, measure, statistic = measurement(claim, tables)
        value, low, high, paired, n = estimate(arms, measure)
        row.update(statistic=statistic, measured=value, ci_low=low, ci_high=high, paired=paired)
        row.update(n=n, n_diverged=max(a.attrs["n_diverged"] for a in arms))
        row["device"] = "+".join(sorted({d for a in arms for d in a.attrs.get("devices", ())}))
        if claim["paper_value"] == "theory" and row["kind"] == "ratio":
            row["statistic"] = f"predicted / measured {statistic}"
        elif claim["paper_value"] == "theory":
            as_theory_ratio(row, theory_band)
        else:
            companion = _companion(claim, tables, statistic)
            row["companion"], row["companion_ci_low"], row["companion_ci_high"] = companion
        row["verdict"] = verdict(claim, row)
        heavy = ""
        if _heavy_tail_applies(claim, statistic) and math.isfinite(value):
            heavy = _judge_heavy_tail(claim, row, tables, pool or claim["table"], paper_n or n)
        judged = row["verdict"] not in ("not comparable", "too few trials")
        if n < 2 and row["rule"] == "interval" and statistic not in EXTREMES and judged:
            row.update(verdict="too few trials", ci_low=nan, ci_high=nan)
            heavy = f"{n} trial: no interval to judge"
        if "expect" in claim and row["verdict"] != "not comparable" and n >= 2:
            judge_law(claim, row, tables)
    except MissingRows as err:
        return {**row, "verdict": "not comparable", "note": str(err)}
    if row["source"] == OWN:
        row["n_required"] = trials_to_decide(row)
    if row["verdict"] == "not comparable":
        row["note"] = "the measurement or its reference is not finite"
    elif claim["paper_value"] == "theory":
        row["note"] = power_note(row)
    elif statistic == "mean" and row["kind"] == "value":
        row["note"] = _tail_note(arms)
    notes = [note for note in (heavy, row["note"]) if note]
    unreliable = sum(a.attrs.get("n_unreliable", 0) for a in arms)
    if unreliable:
        notes.append(f"{unreliable} unreliable κ left out")
    if row["verdict"] == "inconclusive" and math.isfinite(row["n_required"]):
        notes.append(f"about {row['n_required']:.0f} trials would decide it (the power rule)")
    if 2 <= n < FEW_TRIALS:
        notes.append(f"only {n} trials: a bootstrap interval this small undercovers")
    row["note"] = "; ".join(notes)
    return row


def _heavy_tail_applies(claim: dict, statistic: str) -> bool:
    """Whether the heavy-tail rule may apply: a claim on a per-trial table (not a GN sweep's,
    not a theory prediction) judged on means or standard deviations of a quantity not bounded
    by construction (:data:`matcond.core.arms.BOUNDED`)."""
    named = {claim.get(arm_, {}).get("component") for arm_ in ("filter", "baseline")} - {None}
    bounded = bool(named) and named <= BOUNDED  # (a claim `over` components names none)
    return (
        claim["paper_value"] != "theory"
        and not claim["table"].startswith(GN_TABLE_PREFIX)
        and claim.get("kind", "value") != "correlation"
        and set(statistic.split("/")) <= set(heavy_tail.THRESHOLD)
        and not bounded
    )


def _pool_holds(claim: dict, tables, pool: str) -> bool:
    """Whether every arm of the claim selects the same trial settings in ``pool`` as in the
    claim's own table (a pool with other settings would be drawn from other trials)."""
    own, drawn = tables[claim["table"]], tables[pool]
    wheres = [claim.get("filter", {}), claim.get("baseline", {})]
    return all(cells(own, where) == cells(drawn, where) for where in wheres if where)


def _pool_samples(claim: dict, tables, pool: str) -> tuple[list[np.ndarray], object, str]:
    """The claim's arms and measure on the trials of experiment ``pool`` (its own table
    where the pool is not in this run or does not hold the claim's settings,
    :func:`_pool_holds`), and the pool's name."""
    if pool != claim["table"] and pool in tables and _pool_holds(claim, tables, pool):
        try:
            arms, measure, _ = measurement({**claim, "table": pool}, tables)
            return paired_values(arms)[0], measure, pool
        except MissingRows:
            pass
    arms, measure, _ = measurement(claim, tables)
    return paired_values(arms)[0], measure, claim["table"]


def accepted_values(claim: dict, tables, pool: str, paper_n: int) -> tuple[float, float]:
    """The values of the claim's statistic over ``paper_n`` trials that its predictive verdict
    on the pool (:func:`_pool_samples`) accepts as consistent
    (:func:`matcond.stats.heavy_tail.accepted_values`): what a figure draws beside the paper's
    value."""
    samples, measure, _ = _pool_samples(claim, tables, pool)
    return heavy_tail.accepted_values(samples, measure, int(paper_n))


def _judge_heavy_tail(claim: dict, row: dict, tables, pool: str, paper_n: int) -> str:
    """The heavy-tail rule (:mod:`matcond.stats.heavy_tail`): the tail index of every arm in the
    pool; where the smallest one's interval does not lie above the statistic's threshold,
    the verdict is predictive: is the paper's value (its range, or the interval its printed
    digits allow) a plausible ``paper_n``-trial statistic of the pool? The bootstrap interval
    of a mean that may not exist is not reported. Returns the note of a predictive verdict."""
    samples, measure, used = _pool_samples(claim, tables, pool)
    pool_n = min(s.size for s in samples)
    if pool_n <= heavy_tail.HILL_MIN_K:  # no tail index: the rule cannot tell which to apply
        row.update(verdict="too few trials", ci_low=math.nan, ci_high=math.nan)
        return (
            f"the heavy-tail rule needs more than {heavy_tail.HILL_MIN_K} trials of {used} for "
            f"a tail index; it has {pool_n}"
        )
    tails = [heavy_tail.hill(s) for s in samples]
    worst = min(tails, key=lambda t: t.low if not math.isnan(t.low) else -math.inf)
    row.update(tail_index=worst.estimate, tail_index_low=worst.low, tail_index_high=worst.high)
    moment = "std" if "std" in row["statistic"].split("/") else "mean"
    if heavy_tail.moment_exists(worst, moment):
        return ""
    paper = claim["paper_value"]
    low, high = paper if isinstance(paper, list) else band(claim, 0.0)
    result = heavy_tail.predictive(samples, measure, int(paper_n), float(low), float(high))
    row.update(rule="predictive", paper_n=result.n, pool_n=result.pool, ci_low=math.nan)
    row.update(ci_high=math.nan, accepted_low=result.accepted_low)
    row["accepted_high"] = result.accepted_high
    row.update(p_value=result.p, p_low=result.p_low, p_high=result.p_high)
    verdict_ = heavy_tail.predictive_verdict(result)
    far = ""
    # beyond the reach of the pool's own trials: above it, or below it where an arm other
    # than the first can pull the statistic down (a ratio's baseline)
    beyond = float(low) > result.accepted_high or (
        len(samples) > 1 and float(high) < result.accepted_low
    )
    if verdict_ == "not reproduced" and beyond:
        verdict_, far = _judge_far_tail(samples, measure, int(paper_n), low, high)
    row["verdict"] = verdict_
    return predictive_note(row, used) + far


def _judge_far_tail(samples, measure, paper_n: int, low, high) -> tuple[str, str]:
    """A paper value beyond the pool's sampling distribution, judged with a Pareto tail on each
    arm in turn (:func:`matcond.stats.heavy_tail.far_tail`): ``not reproduced`` only where its
    tail probability is below 0.05 over the whole tail index interval of every arm that can
    be modelled, else ``inconclusive`` (the pool's own trials cannot say how far its tail
    reaches); and the note's words."""
    far = heavy_tail.far_tail(samples, measure, paper_n, float(low), float(high))
    if far is None:
        return "not reproduced", ""
    verdict_ = "not reproduced" if far.p_heavy < heavy_tail.ALPHA else "inconclusive"
    share = f"largest {100 * far.share:.0f} %"
    if len(samples) == 1:
        where = f"the pool's {share}"
    else:  # the claim's arms in order: filter, baseline (per value of `over`)
        where = f"the {share} of the pool's arm {far.arm + 1} of {len(samples)}"
    return verdict_, (
        f"; with a Pareto tail above {where}, its tail "
        f"probability is {far.p_light:.2g} to {far.p_heavy:.2g} over the tail index's "
        f"interval ({far.p_estimate:.2g} at its estimate)"
    )


def _direction_claim(claim: dict) -> tuple[dict, float]:
    """The claim whose measure carries its direction and the threshold it is held against: a
    value claim with a baseline becomes its ratio to the baseline, against 1; any other claim
    stays itself, against ``expect_than`` (default 1 for ratios, 0 for improvements, gaps and
    correlations)."""
    kind = claim.get("kind", "value")
    if kind == "value" and "baseline" in claim and "expect_than" not in claim:
        return {**claim, "kind": "ratio"}, 1.0
    return claim, claim.get("expect_than", DEFAULT_THRESHOLD.get(kind, 0.0))


def _law_name(claim: dict, statistic: str) -> str:
    """The law's statistic in words: ``smallest ratio (median) over dim``."""
    kind = claim.get("kind", "value")
    name = statistic if kind == "value" else f"{kind.replace('_', ' ')} ({statistic})"
    if "over" in claim:
        extreme = {"min": "smallest", "max": "largest"}[claim.get("reduce", "min")]
        name = f"{extreme} {name} over {next(iter(claim['over']))}"
    return name


def judge_law(claim: dict, row: dict, tables) -> None:
    """The law a claim with ``expect`` states (a direction, growth, ordering or improvement),
    judged on a population statistic that exists (docs/statistics-and-verdicts.md, "Laws"):
    the claim's own statistic under the interval rule, the median in place of the mean under
    the predictive one (or where the pool is too small to choose), against the paper's range
    or the claimed side of the threshold. Fills the ``law*`` columns and gives the row the
    claim's verdict: a range's is its law's; a point value keeps its own only where its
    direction holds."""
    law_claim, threshold = _direction_claim(claim)
    median = row["rule"] == "predictive" or row["verdict"] == "too few trials"  # no mean, maybe
    if law_claim is claim and not median:  # the claim's own measurement
        statistic, value, low, high = (
            row[k] for k in ("statistic", "measured", "ci_low", "ci_high")
        )
    elif law_claim is claim and row["statistic"] == "mean":  # its companion is the median's
        statistic = "median"
        value, low, high = (row[k] for k in ("companion", "companion_ci_low", "companion_ci_high"))
    else:
        if median:
            law_claim = {**law_claim, "statistic": "median"}
        arms, measure, statistic = measurement(law_claim, tables)
        value, low, high, _, _ = estimate(arms, measure)
    greater = claim["expect"] == "greater"
    side = (threshold, math.inf) if greater else (-math.inf, threshold)
    paper = claim["paper_value"]
    ranged = isinstance(paper, list)
    law_band = (float(paper[0]), float(paper[1])) if ranged else side
    law = _inside(low, high, *law_band)
    row.update(law_statistic=_law_name(law_claim, statistic), law=value, law_ci_low=low)
    row.update(law_ci_high=high, law_band_low=law_band[0], law_band_high=law_band[1])
    row["law_verdict"] = law
    point = row["verdict"]
    if ranged:
        direction = _inside(low, high, *side) == "holds"
        fails = "direction only" if direction else "not reproduced"
        row["verdict"] = {"holds": "reproduced", "undecided": "inconclusive"}.get(law, fails)
    elif point == "too few trials":  # the value cannot be judged, whatever its direction
        pass
    elif law == "holds":
        row["verdict"] = "direction only" if point == "not reproduced" else point
    elif law == "undecided":
        row["verdict"] = "not reproduced" if point == "not reproduced" else "inconclusive"
    else:
        row["verdict"] = "not reproduced"


def predictive_note(row: dict, pool: str) -> str:
    """What a predictive verdict rests on, in words (``pool``: the pool's experiment)."""
    return (
        f"heavy tail (index {row['tail_index']:.2g} [{row['tail_index_low']:.2g}, "
        f"{row['tail_index_high']:.2g}]): a {row['paper_n']:.0f}-trial {row['statistic']} "
        f"from {row['pool_n']:.0f} trials of {pool} is consistent with the paper's value in "
        f"[{row['accepted_low']:.3g}, {row['accepted_high']:.3g}]; the "
        f"paper's value has tail probability {row['p_value']:.2g} "
        f"[{row['p_low']:.2g}, {row['p_high']:.2g}]"
    )


def as_theory_ratio(row: dict, theory_band: tuple[float, float]) -> None:
    """A theory claim measured as predicted / measured, its interval from the measured one's
    (the prediction is that of these trials' targets), held against ``theory_band``; the
    measured statistic moves to the companion columns."""
    predicted, value, low, high = row["band_low"], row["measured"], row["ci_low"], row["ci_high"]
    row.update(companion=value, companion_ci_low=low, companion_ci_high=high)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(predicted, [value, high, low])
    row.update(measured=ratio[0], ci_low=ratio[1], ci_high=ratio[2])
    row["statistic"] = f"predicted / {row['statistic']}"
    row["band_low"], row["band_high"] = theory_band


def trials_to_decide(row: dict) -> float:
    """The power rule of our own checks (docs/statistics-and-verdicts.md, "Power"): the number
    of trials at which the row's 95 % interval would be half as wide as its band, its width
    falling like 1/sqrt(n) from this run's (on the log scale where interval and band are
    positive, as for a ratio; else linear, as for a correlation). At that n a prediction that
    is exactly right gives an interval inside the band with probability about 0.95. For a
    one-sided band (an edge at infinity): the n at which the interval's half on the edge's
    side is half the distance from the estimate to the edge, so that an interval around an
    estimate as far from the edge as this run's clears the edge with probability about 0.975.
    NaN where the interval is not finite, the estimate sits on the edge, or the row has fewer
    than 2 trials."""
    low, high, band_low, band_high = (
        row[k] for k in ("ci_low", "ci_high", "band_low", "band_high")
    )
    measured = row.get("measured", math.nan)
    if not (math.isfinite(low) and math.isfinite(high) and row["n"] >= 2):
        return math.nan
    if math.isinf(band_low) != math.isinf(band_high):  # one-sided: [edge, inf) or (-inf, edge]
        edge = band_low if math.isfinite(band_low) else band_high
        if not math.isfinite(measured) or measured == edge:
            return math.nan
        scale = math.log if low > 0 and edge > 0 else (lambda x: x)
        side = scale(measured) - scale(low) if measured > edge else scale(high) - scale(measured)
        gap = abs(scale(measured) - scale(edge))
        return float(math.ceil(row["n"] * (2 * side / gap) ** 2))
    if not (math.isfinite(band_low) and math.isfinite(band_high) and band_high > band_low):
        return math.nan
    if low > 0 and band_low > 0:
        width, band = math.log(high / low), math.log(band_high / band_low)
    else:
        width, band = high - low, band_high - band_low
    return float(math.ceil(row["n"] * (2 * width / band) ** 2))


def power_note(row: dict) -> str:
    """What a theory claim's interval can catch: a prediction too high or too low by more
    than these factors would leave the band with its whole interval."""
    low, high = row["ci_low"], row["ci_high"]
    band_low, band_high = row["band_low"], row["band_high"]
    if not (math.isfinite(low) and math.isfinite(high) and low > 0):
        return ""
    predicted = row["companion"] * row["measured"]  # NaN for a ratio claim
    return (
        (f"predicted {predicted:.3g}; " if math.isfinite(predicted) else "")
        + f"the check catches a prediction {band_high / low:.2f}x too high or "
        f"{high / band_low:.2f}x too low"
    )


def evaluate(
    claims: dict,
    tables: dict[str, pd.DataFrame],
    settings_differ: dict[str, str] | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """The claims table: one row per claim of ``claims`` (the parsed config/claims.yaml),
    evaluated by ``workers`` processes (:func:`matcond.execution.forked.forked_map`). A
    paper's claim on a table in ``settings_differ`` (table -> what differs from the paper
    config, :func:`matcond.claims.check.settings_differences`) is measured but not judged:
    its verdict is ``settings differ`` and its note says what differs."""
    tolerance = claims.get("default_tolerance", 0.25)
    theory_band = tuple(claims.get("theory_band", THEORY_BAND))

    def one(claim: dict) -> dict:
        return evaluate_claim(
            claim, tables, tolerance, theory_band, *heavy_tail_setting(claims, claim)
        )

    rows = forked_map(one, claims["claims"], workers)
    for claim, row in zip(claims["claims"], rows, strict=True):
        differs = (settings_differ or {}).get(claim["table"])
        if differs and row["source"] != OWN and row["verdict"] != "not configured":
            note = f"not judged, settings differ from the paper config's: {differs}"
            row["note"] = "; ".join(filter(None, [note, row["note"]]))
            row["verdict"] = "settings differ"
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
