"""The papers' unstated settings: every claim under each reading of them, and the written
rule that picks the reading the default config uses (docs/theory.md, "Which reading the
default uses").

A reading (``readings`` in config/claims.yaml) is an experiment whose arms (the values of its
settings ``arms_by``) are alternative readings of settings the paper leaves open; it stands in
for the experiments listed under ``stands_for``. The calibration (``calibration`` in
config/claims.yaml), fixed before looking at the condition-number claims: a reading is
rejected by a calibration fact (a norm claim) where its verdict on it is ``not reproduced``
while another reading's is ``reproduced`` or ``consistent`` (a fact no reading meets rejects
none); of the others, the pick is the one under which the one named condition-number claim
has the largest tail probability (the first in the config's order on a tie). Every other claim
is held out: :func:`readings_scorecard` counts, per reading, its verdicts on them.
"""

from __future__ import annotations

import pandas as pd

from matcond.claims.check import OWN, heavy_tail_setting
from matcond.claims.evaluate import CLAIM_COLUMNS, evaluate_claim
from matcond.core.trials import format_value
from matcond.execution.forked import forked_map

READING_COLUMNS = ["reading", "arm", *CLAIM_COLUMNS]
GOOD = ("reproduced", "consistent")  # the verdicts that count a claim as met
# what the claims table adds from the readings (:func:`with_sensitivity`)
SENSITIVITY_COLUMNS = ["reading_verdicts", "reading_robust"]
UNMEASURED = ("not comparable", "not configured")


def evaluate_readings(
    claims: dict, tables: dict[str, pd.DataFrame], workers: int = 1
) -> pd.DataFrame:
    """The claims again, under each reading of the paper's ambiguous settings, evaluated by
    ``workers`` processes (:func:`matcond.execution.forked.forked_map`).

    A reading (``readings`` in config/claims.yaml) is an experiment whose arms (the values of
    its settings ``arms_by``) are alternative readings of a setting the paper leaves open; it
    stands in for the experiments listed under ``stands_for`` (with the settings given there
    added to the filter, e.g. ``optimizer: sgd`` for exp1). Every claim on those experiments
    (except theory claims) is evaluated on every arm: one row per reading, arm and claim.
    The reading's experiment is its claims' heavy-tail pool; the paper's number of trials is
    that of the experiment it stands for. Two readings can judge a claim under the same arm
    (one control's cells inside another's): :func:`measured_first` keeps one of the rows.
    """
    tolerance = claims.get("default_tolerance", 0.25)
    tasks = []  # (reading, arm, the claim moved onto the reading's experiment, paper_n)
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
                paper_n = heavy_tail_setting(claims, claim)[1]
                tasks.append((reading["name"], label, moved, paper_n))

    def one(task: tuple) -> dict:
        name, label, moved, paper_n = task
        row = evaluate_claim(moved, tables, tolerance, paper_n=paper_n)
        return {"reading": name, "arm": label, **row}

    return pd.DataFrame(forked_map(one, tasks, workers), columns=READING_COLUMNS)


def measured_first(readings: pd.DataFrame) -> pd.DataFrame:
    """One row per claim and arm of ``readings`` (:func:`evaluate_readings`): where two readings
    judge a claim under one arm (exp1's readings at every d hold ctrl_readings' cells at d = 32
    and 128), the first in the config's order that measures it, else the first."""
    order = readings["verdict"].isin(UNMEASURED).sort_values(kind="stable").index
    kept = readings.loc[order].drop_duplicates(["claim_id", "arm"]).index
    return readings.loc[sorted(kept)]


def admitted(arm: str, sensitivity: dict) -> bool:
    """Whether the arm labelled ``arm`` ("init=gaussian, init_scale=0.02, row_log_std=0.5") has,
    for each setting of ``sensitivity`` (config/claims.yaml) that it names, one of its values
    (a reading that leaves a setting at the experiment's own value does not name it)."""
    settings = dict(part.split("=", 1) for part in arm.split(", "))
    return all(
        settings[key] in {format_value(v) for v in values}
        for key, values in sensitivity.items()
        if key in settings
    )


def with_sensitivity(
    table: pd.DataFrame, readings: pd.DataFrame, sensitivity: dict | None
) -> pd.DataFrame:
    """The claims table with, per claim, its verdicts under the readings ``sensitivity``
    admits (:func:`admitted`) that measure it (``reading_verdicts``: "reproduced 4,
    inconclusive 2") and whether they are all one (``reading_robust``); empty and NA where
    none measures it."""
    verdicts, robust = {}, {}
    if sensitivity and len(readings):
        rows = measured_first(readings[readings["arm"].map(lambda a: admitted(a, sensitivity))])
        rows = rows[~rows["verdict"].isin(UNMEASURED)]
        for claim_id, group in rows.groupby("claim_id", sort=False):
            counts = group["verdict"].value_counts()
            verdicts[claim_id] = ", ".join(f"{v} {n}" for v, n in counts.items())
            robust[claim_id] = len(counts) == 1
    return table.assign(
        reading_verdicts=table["claim_id"].map(lambda claim_id: verdicts.get(claim_id, "")),
        reading_robust=table["claim_id"].map(robust).astype("boolean"),
    )


def readings_summary(readings: pd.DataFrame) -> pd.DataFrame:
    """Per claim: the arms of each reading under which it is reproduced or consistent, and
    those under which it is inconclusive (``none`` if no arm is)."""

    def arms_with(*verdicts: str):
        return lambda rows: "; ".join(rows.loc[rows["verdict"].isin(verdicts), "arm"]) or "none"

    groups = readings.groupby(["claim_id", "reading"], sort=False)
    summary = groups.apply(
        lambda rows: pd.Series(
            {
                "statement": rows["statement"].iloc[0],
                "paper_value": rows["paper_value"].iloc[0],
                "reproduced_by": arms_with(*GOOD)(rows),
                "inconclusive_under": arms_with("inconclusive")(rows),
            }
        ),
        include_groups=False,
    )
    return summary.reset_index()


def calibrate(readings: pd.DataFrame, calibration: dict) -> pd.DataFrame:
    """Per arm (reading): its verdicts on the calibration ``facts``, whether they admit it,
    the tail probability of the named ``kappa`` claim with its interval and verdict, and
    ``chosen``: the arm the rule picks (see the module docstring)."""
    facts, kappa = calibration["facts"], calibration["kappa"]
    rows = readings[readings["claim_id"].isin([*facts, kappa])]
    rows = rows.drop_duplicates(["arm", "claim_id"])
    arms = list(dict.fromkeys(rows["arm"]))
    verdicts = rows.pivot(index="arm", columns="claim_id", values="verdict").reindex(arms)
    table = pd.DataFrame({"arm": arms})
    admitted = pd.Series(True, index=arms)
    for fact in facts:
        verdict = verdicts.get(fact, pd.Series("not comparable", index=arms))
        table[fact] = verdict.to_numpy()
        if verdict.isin(GOOD).any():
            admitted &= verdict != "not reproduced"
    table["admitted"] = admitted.to_numpy()
    measured = rows[rows["claim_id"] == kappa].set_index("arm").reindex(arms)
    for column in ("verdict", "p_value", "p_low", "p_high"):
        table[f"{kappa}_{column}"] = measured[column].to_numpy()
    p = table[f"{kappa}_p_value"].where(table["admitted"])
    table["chosen"] = False
    if p.notna().any():
        table.loc[p.idxmax(), "chosen"] = True  # idxmax: the first of equal maxima
    return table


def readings_scorecard(readings: pd.DataFrame, calibration: dict | None = None) -> pd.DataFrame:
    """Per arm, the verdict counts of the papers' claims under it, leaving out the claims the
    calibration uses (held out: only the others count), over the readings it draws on (those
    that measure one of its claims; the others only say how much a verdict depends on the
    reading)."""
    used = [*calibration["facts"], calibration["kappa"]] if calibration else []
    if calibration:
        drawn_on = readings.loc[readings["claim_id"].isin(used), "reading"]
        readings = readings[readings["reading"].isin(set(drawn_on))]
    rows = readings[(readings["source"] != OWN) & ~readings["claim_id"].isin(used)]
    rows = rows.drop_duplicates(["arm", "claim_id"])
    counts = pd.crosstab(rows["arm"], rows["verdict"])
    counts = counts.reindex(list(dict.fromkeys(rows["arm"])))
    counts.insert(0, "held-out claims", counts.sum(axis=1))
    return counts.reset_index()
