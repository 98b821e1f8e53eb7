"""A law (a claim with ``expect``: a direction, growth, ordering or improvement) judged on a
population statistic that exists, on synthetic heavy-tailed arms whose law holds, is absent or
is reversed (docs/statistics-and-verdicts.md, "Laws")."""

import math

import numpy as np
import pandas as pd
import pytest
from support import REPO

from matcond.claims.evaluate import evaluate
from matcond.core.config import load_yaml

SEEDS = 200


def heavy_tables(factor: float, seeds: int = SEEDS) -> dict[str, pd.DataFrame]:
    """Two arms per seed of a Pareto(1) error (no mean: the tail index is 1), the arm ``big``
    ``factor`` times the arm ``small`` in distribution; the seed's draw is shared by both."""
    rng = np.random.default_rng(7)
    shared = rng.pareto(1.0, seeds) + 1.0
    arms = {"small": shared * rng.lognormal(0, 0.3, seeds)}
    arms["big"] = factor * shared * rng.lognormal(0, 0.3, seeds)
    rows = [
        {
            "setting": name,
            "seed": seed,
            "matrix": "product",
            "epoch": 10,
            "component": "condition_number",
            "trained": 1.0,
            "target": 1.0,
            "error": error,
            "diverged": False,
        }
        for name, errors in arms.items()
        for seed, error in enumerate(errors)
    ]
    return {"exp": pd.DataFrame(rows)}


def law_claim(paper_value, kind="ratio", **kw) -> dict:
    return {
        "claim_id": "law",
        "where": "§",
        "statement": "s",
        "paper_value": paper_value,
        "table": "exp",
        "kind": kind,
        "filter": {"component": "condition_number", "setting": "big"},
        "baseline": {"component": "condition_number", "setting": "small"},
        "expect": "greater",
        **kw,
    }


def judged(claim: dict, factor: float) -> pd.Series:
    return evaluate({"claims": [claim]}, heavy_tables(factor)).iloc[0]


@pytest.mark.parametrize(
    ("factor", "law", "verdict"),
    [
        (2.0, "holds", "reproduced"),
        (1.0, "undecided", "inconclusive"),
        (0.5, "fails", "not reproduced"),
    ],
)
def test_a_law_stated_as_a_range_is_judged_on_the_ratio_of_medians(factor, law, verdict):
    row = judged(law_claim([1.0, math.inf]), factor)
    assert row["rule"] == "predictive"  # the mean may not exist: the old rule's ground
    assert row["law_statistic"] == "ratio (median)"
    assert row["law_verdict"] == law and row["verdict"] == verdict
    assert (row["law_band_low"], row["law_band_high"]) == (1.0, math.inf)
    assert row["law_ci_low"] <= row["law"] <= row["law_ci_high"]
    assert row["law"] == pytest.approx(factor, rel=0.3)


def test_equal_arms_that_the_predictive_reading_calls_consistent_are_no_law():
    """The power the rule adds: with no law at all, a 10-trial ratio of means exceeds 1
    often enough for the predictive reading's p to pass; the law's verdict does not."""
    row = judged(law_claim([1.0, math.inf], paper_n=10), 1.0)
    assert row["p_low"] >= 0.05  # the old reading: consistent
    assert row["verdict"] == "inconclusive"


def test_a_growth_short_of_the_claimed_rate_is_direction_only():
    """Super-linear growth claimed ([16, inf)), a two-fold growth measured: it grows, not as
    fast as claimed."""
    row = judged(law_claim([16.0, math.inf], expect_than=1.0), 2.0)
    assert row["law_verdict"] == "fails" and row["verdict"] == "direction only"


@pytest.mark.parametrize(
    ("factor", "verdict"),
    [(2.0, "direction only"), (1.0, "not reproduced"), (0.5, "not reproduced")],
)
def test_a_point_value_keeps_its_verdict_only_where_its_direction_holds(factor, verdict):
    """A value far below every trial (not reproduced on its own) with the claim that it grows
    over its baseline: the direction decides between direction only and not reproduced."""
    claim = law_claim(1e-6, kind="value")
    row = judged(claim, factor)
    assert row["law_statistic"] == "ratio (median)"  # the value against its baseline
    assert (row["law_band_low"], row["law_band_high"]) == (1.0, math.inf)
    assert row["verdict"] == verdict


def test_an_undecided_direction_turns_a_plausible_value_inconclusive():
    """The paper's 1.3 is a plausible 10-trial ratio of means of equal arms, but with no
    direction established the claim "1.3, grows" is not consistent."""
    row = judged(law_claim(1.3, paper_n=10), 1.0)
    assert row["p_high"] >= 0.05 and row["law_verdict"] == "undecided"
    assert row["verdict"] == "inconclusive"


def test_an_improvement_is_judged_on_the_improvement_of_medians():
    claim = law_claim([0.0, 1.0], kind="improvement")
    row = judged(claim, 0.5)  # the filter's errors half the baseline's: a 50 % improvement
    assert row["law_statistic"] == "improvement (median)"
    assert row["law"] == pytest.approx(0.5, abs=0.15)
    assert row["verdict"] == "reproduced"
    assert judged(claim, 2.0)["verdict"] == "not reproduced"


def test_a_range_on_too_few_trials_for_a_tail_index_is_still_judged_on_its_medians():
    """Ten trials: no tail index, so a point value gets *too few trials*, but a law stated as
    a range is judged on the ratio of medians, which exists whatever the tail."""
    tables = heavy_tables(4.0, seeds=10)
    law = evaluate({"claims": [law_claim([1.0, math.inf])]}, tables).iloc[0]
    assert law["law_statistic"] == "ratio (median)" and law["law_verdict"] == "holds"
    assert law["verdict"] == "reproduced"
    point = evaluate({"claims": [law_claim(4.0)]}, tables).iloc[0]
    assert point["verdict"] == "too few trials" and point["law_verdict"] == "holds"


def test_a_claim_without_a_direction_has_no_law():
    claim = law_claim(2.0)
    del claim["expect"]
    row = judged(claim, 2.0)
    assert row["law_verdict"] == "" and math.isnan(row["law"])


def test_every_claim_that_names_a_direction_states_it():
    """An improvement the paper gives as positive, a ratio or a gap given as a range: each
    states a direction, and so needs ``expect`` for its law to be judged."""
    missing = []
    for claim in load_yaml(REPO / "config" / "claims.yaml")["claims"]:
        kind, paper = claim.get("kind", "value"), claim["paper_value"]
        if paper == "theory":
            continue
        ranged = isinstance(paper, list)
        improves = kind == "improvement" and (paper[0] >= 0 if ranged else paper > 0)
        if (
            improves or (kind in ("ratio", "improvement_gap") and ranged)
        ) and "expect" not in claim:
            missing.append(claim["claim_id"])
    assert missing == []


def test_a_claim_names_the_devices_its_trials_trained_on():
    """Issue 58: the claims table says where each setting ran (a block's manifest records it,
    matcond.core.files.read_trials adds it to the trial tables); arms on two devices
    name both, a table without the column names none."""
    claim = law_claim(2.0)
    tables = heavy_tables(2.0)
    assert evaluate({"claims": [claim]}, tables).iloc[0]["device"] == ""
    tables["exp"]["device"] = np.where(tables["exp"]["setting"] == "big", "cuda", "cpu")
    assert evaluate({"claims": [claim]}, tables).iloc[0]["device"] == "cpu+cuda"
    alone = {**claim, "kind": "value", "paper_value": 5.0}
    del alone["baseline"], alone["expect"]
    assert evaluate({"claims": [alone]}, tables).iloc[0]["device"] == "cuda"
