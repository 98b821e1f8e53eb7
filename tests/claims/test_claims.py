"""The claims table: measurements, bootstrap intervals and the verdict rule on a hand-made
per-trial table whose distributions are known."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from support import REPO

from matcond.claims.check import (
    GN_PAPER,
    OWN,
    PAPER,
    claim_source,
    pool_mismatches,
    settings_differences,
    table_settings,
    validate_claims,
)
from matcond.claims.evaluate import (
    CLAIM_COLUMNS,
    as_theory_ratio,
    evaluate,
    power_note,
    trials_to_decide,
    verdict,
)
from matcond.claims.markdown import scorecard, summary_markdown, to_markdown
from matcond.claims.measure import band, printed_half_unit
from matcond.claims.readings import (
    admitted,
    calibrate,
    evaluate_readings,
    measured_first,
    readings_scorecard,
    readings_summary,
    with_sensitivity,
)
from matcond.core.arms import falling_share, kappa_error_without_rank_cut
from matcond.core.config import ConfigError, load_yaml, validate_config
from matcond.core.trials import config_cells
from matcond.stats.summary import bootstrap_ci

SEEDS = 12
CLAIMS = load_yaml(REPO / "config" / "claims.yaml")
PAPER_EXPERIMENTS = load_yaml(REPO / "config" / "config.yaml")["experiments"]


def trial_rows(component: str, errors, **settings) -> list[dict]:
    return [
        {
            **settings,
            "seed": seed,
            "matrix": "product",
            "epoch": 10,
            "component": component,
            "trained": 2.0 + seed,
            "target": 1.0 + seed,
            "error": error,
            "diverged": False,
        }
        for seed, error in enumerate(errors)
    ]


@pytest.fixture
def tables():
    rng = np.random.default_rng(0)
    # what the arms of one seed share (target, data): concentrated, so that the tails are
    # known to be light and these tests hold the interval rule (the heavy-tail rule: below)
    shared = rng.lognormal(0, 0.01, SEEDS)
    rows = []
    rows += trial_rows("row_norms", 0.13 + 0.001 * rng.standard_normal(SEEDS), dim=32)
    rows += trial_rows("row_norms", 0.13 + 0.001 * rng.standard_normal(SEEDS), dim=512)
    rows += trial_rows("condition_number", 0.1 * shared, dim=32)
    rows += trial_rows("condition_number", 0.5 * shared * rng.lognormal(0, 1e-3, SEEDS), dim=512)
    rows += trial_rows("spectral_gap", rng.lognormal(0, 0.01, SEEDS), dim=32)  # ~1
    exp = pd.DataFrame(rows)
    exp.loc[
        (exp["component"] == "condition_number") & (exp["dim"] == 512) & (exp["seed"] == 0),
        "diverged",
    ] = True
    return {"exp": exp}


def claim(claim_id, paper_value, **kw):
    return {
        "claim_id": claim_id,
        "where": "§",
        "statement": "s",
        "paper_value": paper_value,
        "table": "exp",
        **kw,
    }


def run(tables, *claims):
    return evaluate({"default_tolerance": 0.25, "claims": list(claims)}, tables).set_index(
        "claim_id"
    )


def test_three_way_verdicts_from_the_interval(tables):
    table = run(
        tables,
        claim("inside", 0.13, filter={"component": "row_norms", "dim": 32}),
        claim("outside", 34.9, filter={"component": "condition_number", "dim": 512}),
        claim("overlapping", 0.8, filter={"component": "spectral_gap", "dim": 32}),
    )
    assert list(table.reset_index().columns) == CLAIM_COLUMNS
    assert table["verdict"].to_dict() == {
        "inside": "reproduced",
        "outside": "not reproduced",
        "overlapping": "inconclusive",
    }
    inside = table.loc["inside"]
    assert inside["band_low"] == pytest.approx(0.0975) and inside["band_high"] == pytest.approx(
        0.1625
    )
    assert inside["ci_low"] <= inside["measured"] <= inside["ci_high"]
    # the paper's claims are judged on the mean, which the paper reports, with the median as
    # the companion
    assert table.loc["outside", "statistic"] == "mean"
    assert table.loc["inside", "statistic"] == "mean"
    assert table["source"].unique().tolist() == [PAPER]
    assert np.isfinite(table.loc["outside", ["companion", "companion_ci_low"]]).all()


def test_own_checks_use_the_headline_statistic_and_are_counted_apart(tables):
    table = run(
        tables,
        claim("paper", 34.9, filter={"component": "condition_number", "dim": 512}),
        claim(
            "control",
            34.9,
            where="control (a check of ours)",
            filter={"component": "condition_number", "dim": 512},
        ),
    )
    assert table["source"].to_dict() == {"paper": PAPER, "control": OWN}
    assert table.loc["control", "statistic"] == "median"  # heavy-tailed: the median
    assert table.loc["control", "companion"] == pytest.approx(table.loc["paper", "measured"])
    card = scorecard(table.reset_index()).set_index("source")
    assert card.loc[PAPER, "claims"] == 1 and card.loc[OWN, "claims"] == 1


def test_one_band_rule_for_every_claim():
    """The paper's range; else ± the larger of the relative tolerance and half a unit of the
    printed precision; and no claim of config/claims.yaml has its own tolerance."""
    assert band({"paper_value": [0.03, 0.13]}, 0.25) == (0.03, 0.13)
    assert band({"paper_value": 0.13}, 0.25) == pytest.approx((0.0975, 0.1625))
    assert band({"paper_value": 0.001}, 0.25) == pytest.approx((0.0005, 0.0015))
    assert band({"paper_value": 1.0}, 0.01) == pytest.approx((0.95, 1.05))  # "~1.0"
    assert band({"paper_value": 13167}, 0.25) == pytest.approx((9875.25, 16458.75))
    assert printed_half_unit(4.8e6) == pytest.approx(0.05)
    claims = load_yaml(REPO / "config" / "claims.yaml")
    assert [c["claim_id"] for c in claims["claims"] if "tolerance" in c] == []


def test_direction_only_needs_the_direction_interval_on_the_expected_side(tables):
    table = run(
        tables,
        claim(
            "grows",
            34.9,
            filter={"component": "condition_number", "dim": 512},
            expect="greater",
            baseline={"component": "condition_number", "dim": 32},
        ),
        claim(
            "shrinks",
            34.9,
            filter={"component": "condition_number", "dim": 512},
            expect="less",
            baseline={"component": "condition_number", "dim": 32},
        ),
    )
    assert table.loc["grows", "verdict"] == "direction only"
    assert table.loc["shrinks", "verdict"] == "not reproduced"


def test_paired_ratio_and_improvement(tables):
    table = run(
        tables,
        claim(
            "ratio",
            5.0,
            kind="ratio",
            filter={"component": "condition_number", "dim": 512},
            baseline={"component": "condition_number", "dim": 32},
        ),
        claim(
            "improvement",
            -4.0,
            kind="improvement",
            filter={"component": "condition_number", "dim": 512},
            baseline={"component": "condition_number", "dim": 32},
        ),
    )
    ratio = table.loc["ratio"]
    assert ratio["verdict"] == "reproduced" and ratio["paired"]
    assert ratio["measured"] == pytest.approx(5.0, rel=0.01)
    assert ratio["ci_low"] <= ratio["measured"] <= ratio["ci_high"] < ratio["ci_low"] + 0.1
    assert table.loc["improvement", "measured"] == pytest.approx(1 - ratio["measured"])
    # the diverged trial of one arm leaves both arms: pairs stay pairs
    assert ratio["n"] == SEEDS - 1 and ratio["n_diverged"] == 1


def test_over_and_reduce(tables):
    table = run(
        tables,
        claim(
            "norm_below_kappa_everywhere",
            [1.0, math.inf],
            kind="ratio",
            filter={"component": "condition_number"},
            baseline={"component": "row_norms"},
            over={"dim": [32, 512]},
            reduce="min",
        ),
    )
    row = table.loc["norm_below_kappa_everywhere"]
    rows = tables["exp"]
    rows = rows[(rows["dim"] == 32) & (rows["seed"] > 0)]  # seed 0 diverged in one arm
    kappa32 = np.mean(rows[rows["component"] == "condition_number"]["error"])  # the paper's
    norm32 = np.mean(rows[rows["component"] == "row_norms"]["error"])
    assert row["measured"] == pytest.approx(kappa32 / norm32)  # the smaller of the two ratios


def test_statistic_std_and_correlation(tables):
    table = run(
        tables,
        claim("spread", 0.1, statistic="std", filter={"component": "condition_number", "dim": 32}),
        claim(
            "together",
            [0.5, 1.0],
            kind="correlation",
            filter={"component": "condition_number", "dim": 32},
            baseline={"component": "condition_number", "dim": 512},
        ),
    )
    rows = tables["exp"]
    errors = rows[(rows["component"] == "condition_number") & (rows["dim"] == 32)]["error"]
    assert table.loc["spread", "measured"] == pytest.approx(errors.std(ddof=1))
    assert table.loc["together", "verdict"] == "reproduced"  # both arms follow `shared`


def test_missing_rows_and_missing_experiments_are_told_apart(tables):
    table = run(
        tables,
        claim("missing_row", 1.0, filter={"component": "condition_number", "dim": 64}),
        {**claim("missing_table", 1.0, filter={"component": "condition_number"}), "table": "nope"},
    )
    assert table.loc["missing_row", "verdict"] == "not comparable"
    assert "no trial matches" in table.loc["missing_row", "note"]
    assert table.loc["missing_table", "verdict"] == "not configured"
    assert to_markdown(table.reset_index()).count("\n") == len(table) + 2


def paper_table_settings(config: dict) -> dict[str, list[dict]]:
    validated = validate_config(config)
    return table_settings(config_cells(validated), validated["gauss_newton"]["sweeps"])


def test_a_changed_adam_learning_rate_is_the_only_difference_from_the_paper_config():
    """Adam at lr 2e-3 in exp2, and 3 seeds instead of 15: exp2's table, and only it, differs
    from the paper config, in lr; the number of seeds is no setting. A GN sweep's width is."""
    paper = load_yaml(REPO / "config" / "config.yaml")
    mine = yaml.safe_load(yaml.safe_dump(paper))
    mine["experiments"]["exp2_optimizer"]["variants"][1]["lr"] = 2.0e-3
    mine["experiments"]["exp1_dimension"]["seeds"] = 3
    mine["gauss_newton"]["sweeps"]["fig3_bounds"]["width"] += 1
    tables = [c["table"] for c in CLAIMS["claims"]]
    differ = settings_differences(paper_table_settings(mine), paper_table_settings(paper), tables)
    assert set(differ) == {"exp2_optimizer", "gn_fig3_bounds"}
    assert differ["exp2_optimizer"] == "lr: 0.002, 0.01 (paper config: 0.001, 0.01)"
    assert differ["gn_fig3_bounds"].startswith("width: ")
    same = paper_table_settings(paper)
    assert settings_differences(same, same, tables) == {}


def test_a_papers_claim_on_settings_that_differ_is_measured_not_judged(tables):
    """The paper's claims on a table whose settings differ get the verdict "settings differ"
    with the difference in their note, and keep their measurement; our own checks on that
    table, and claims on other tables, are judged as before."""
    claims = [
        claim("paper", 0.13, filter={"component": "row_norms", "dim": 32}),
        claim("ours", 0.13, where="control", filter={"component": "row_norms", "dim": 32}),
        {**claim("other", 0.13, filter={"component": "row_norms"}), "table": "nope"},
    ]
    judged = evaluate({"claims": claims}, tables).set_index("claim_id")
    table = evaluate({"claims": claims}, tables, {"exp": "lr: 0.002 (paper config: 0.001)"})
    table = table.set_index("claim_id")
    assert judged.loc["paper", "verdict"] == "reproduced"
    assert table.loc["paper", "verdict"] == "settings differ"
    assert "lr: 0.002 (paper config: 0.001)" in table.loc["paper", "note"]
    assert table.loc["paper", "measured"] == judged.loc["paper", "measured"]
    assert table.loc["ours", "verdict"] == judged.loc["ours", "verdict"] == "reproduced"
    assert table.loc["other", "verdict"] == "not configured"


def test_readings_evaluate_each_claim_under_each_arm(tables):
    reading = tables["exp"].assign(init="gaussian")
    other = tables["exp"].assign(init="orthogonal", error=tables["exp"]["error"] * 10)
    tables = {**tables, "ctrl": pd.concat([reading, other], ignore_index=True)}
    claims = {
        "claims": [
            claim("inside", 0.13, filter={"component": "row_norms", "dim": 32}),
            claim("theory_claim", "theory", filter={"component": "row_norms", "dim": 32}),
        ],
        "readings": [
            {"name": "init", "experiment": "ctrl", "arms_by": ["init"], "stands_for": {"exp": {}}}
        ],
    }
    readings = evaluate_readings(claims, tables)
    pd.testing.assert_frame_equal(evaluate_readings(claims, tables, workers=2), readings)
    assert list(readings["arm"]) == ["init=gaussian", "init=orthogonal"]  # no theory claims
    assert list(readings["verdict"]) == ["reproduced", "not reproduced"]
    summary = readings_summary(readings)
    assert summary.loc[0, "reproduced_by"] == "init=gaussian"


def test_a_claim_judged_by_two_readings_under_one_arm_counts_once(tables):
    """A control whose cells lie inside another's (exp1's readings at every d hold ctrl_readings'
    d = 32 cells): the readings table keeps each reading's rows (the calibration's scorecard
    counts its own readings' rows, unmeasured ones included), and one row per claim and arm is
    the first reading that measures it, which the sensitivity counts once."""
    at_32 = tables["exp"][tables["exp"]["dim"] == 32].assign(init="gaussian")
    tables = {**tables, "small": at_32, "every_d": tables["exp"].assign(init="gaussian")}
    claims = {
        "claims": [
            claim("d32", 0.13, filter={"component": "row_norms", "dim": 32}),
            claim("d512", 0.13, filter={"component": "row_norms", "dim": 512}),
        ],
        "readings": [
            {"name": name, "experiment": name, "arms_by": ["init"], "stands_for": {"exp": {}}}
            for name in ("small", "every_d")
        ],
    }
    readings = evaluate_readings(claims, tables)
    assert list(readings["verdict"]) == ["reproduced", "not comparable", "reproduced", "reproduced"]
    one = measured_first(readings)
    assert one[["reading", "claim_id"]].values.tolist() == [["small", "d32"], ["every_d", "d512"]]
    table = pd.DataFrame({"claim_id": ["d32", "d512"], "source": PAPER, "verdict": "reproduced"})
    out = with_sensitivity(table, readings, {"init": ["gaussian"]})
    assert list(out["reading_verdicts"]) == ["reproduced 1", "reproduced 1"]


def test_the_sensitivity_counts_the_verdicts_under_the_admitted_readings():
    """Per claim, its verdicts under the readings the stated facts admit (the others left
    out, as are readings that do not measure it) and whether they are one; the scorecard
    counts the claims the readings measure and those whose verdict does not depend on them."""
    arms = ["init=gaussian, init_scale=0.01", "init=gaussian, init_scale=0.02",
            "init=gaussian, init_scale=0.001", "init=torch_linear"]  # fmt: skip
    readings = pd.DataFrame(
        [
            {"claim_id": claim_id, "arm": arm, "verdict": verdict}
            for claim_id, verdicts in {
                "robust": ["reproduced", "reproduced", "not reproduced", "not reproduced"],
                "depends": ["reproduced", "inconclusive", "reproduced", "reproduced"],
                "unmeasured": ["not comparable"] * 4,
            }.items()
            for arm, verdict in zip(arms, verdicts, strict=True)
        ]
    )
    table = pd.DataFrame(
        {
            "claim_id": ["robust", "depends", "unmeasured", "elsewhere"],
            "source": PAPER,
            "verdict": "reproduced",
        }  # fmt: skip
    )
    sensitivity = {"init": ["gaussian"], "init_scale": [0.01, 0.02, 0.03]}
    out = with_sensitivity(table, readings, sensitivity).set_index("claim_id")
    assert out["reading_verdicts"].to_dict() == {
        "robust": "reproduced 2",
        "depends": "reproduced 1, inconclusive 1",
        "unmeasured": "",
        "elsewhere": "",
    }
    assert out["reading_robust"].tolist() == [True, False, pd.NA, pd.NA]
    card = scorecard(out.reset_index()).set_index("source")
    assert card.loc[PAPER, ["readings measure", "reading-robust"]].tolist() == [2, 1]
    assert with_sensitivity(table, readings, None)["reading_robust"].isna().all()


def test_an_arm_is_admitted_by_the_settings_it_names():
    """A reading that leaves a setting at the experiment's own value (exp7's init, exp6's row
    scale) is judged by the settings it does vary; one named value outside the admitted
    ones leaves it out."""
    sensitivity = {"init": ["gaussian"], "init_scale": [0.01, 0.02], "row_log_std": [0.25, 0.5]}
    assert admitted("row_log_std=0.25", sensitivity)
    assert admitted("init=gaussian, init_scale=0.02", sensitivity)
    assert admitted("init=gaussian, init_scale=0.01, row_log_std=0.5", sensitivity)
    assert not admitted("row_log_std=0.75", sensitivity)
    assert not admitted("init=gaussian, init_scale=0.03, row_log_std=0.5", sensitivity)
    assert not admitted("init=orthogonal", sensitivity)


def test_a_missing_baseline_of_the_direction_check_is_not_comparable(tables):
    """The direction of a value claim reads its baseline's rows: none match (dim 64)."""
    table = run(
        tables,
        claim(
            "grows",
            34.9,
            filter={"component": "condition_number", "dim": 512},
            expect="greater",
            baseline={"component": "condition_number", "dim": 64},
        ),
    )
    assert table.loc["grows", "verdict"] == "not comparable"
    assert "no trial matches" in table.loc["grows", "note"]


def test_not_configured_and_not_comparable_on_the_paper_claims(tables):
    """Of the paper's claims, with only exp1_dimension run (d = 32 and 512): those on other
    experiments of the paper config are valid and not configured; those on d = 128 (no rows)
    or on a component whose every value is NaN are not comparable."""
    exp = tables["exp"]
    nan_rows = pd.DataFrame(trial_rows("spectral_gap", [math.nan] * SEEDS, dim=128))
    tables = {"exp1_dimension": pd.concat([exp, nan_rows], ignore_index=True)}
    ids = ["exp1_kappa_d32", "review_kappa_d128", "exp1_spectral_gap_d128", "exp2_kappa_sgd"]
    claims = {"claims": [c for c in CLAIMS["claims"] if c["claim_id"] in ids]}
    validate_claims(claims, PAPER_EXPERIMENTS)
    table = evaluate(claims, tables).set_index("claim_id")
    assert table["verdict"].to_dict() == {
        "exp1_kappa_d32": "not reproduced",  # 0.1 against 0.27
        "review_kappa_d128": "not comparable",
        "exp1_spectral_gap_d128": "not comparable",
        "exp2_kappa_sgd": "not configured",
    }
    assert "no trial matches" in table.loc["review_kappa_d128", "note"]
    assert "not finite" in table.loc["exp1_spectral_gap_d128", "note"]
    assert table.loc["exp2_kappa_sgd", "note"] == "no experiment exp2_optimizer"
    # evaluated by two forked workers (rule claims on several cores): the same table
    pd.testing.assert_frame_equal(evaluate(claims, tables, workers=2).set_index("claim_id"), table)
    claims["claims"] = [
        {**c, "table": "exp2_optimiser"} if c["table"] == "exp2_optimizer" else c
        for c in claims["claims"]
    ]
    with pytest.raises(ConfigError, match="exp2_kappa_sgd: table: 'exp2_optimiser'"):
        validate_claims(claims, PAPER_EXPERIMENTS)


def test_a_theory_claim_is_the_ratio_predicted_over_measured_against_the_band():
    """The measured median 0.5 [0.4, 0.625] against a prediction 0.5: ratio 1 [0.8, 1.25],
    inside [0.8, 1.25]; the same interval against a prediction 0.75 leaves the band's top
    edge inside it (inconclusive), against 1.5 wholly above it (not reproduced)."""
    verdicts = {}
    for predicted in (0.5, 0.75, 1.5):
        row = {"band_low": predicted, "band_high": predicted, "measured": 0.5}
        row.update(ci_low=0.4, ci_high=0.625, statistic="median")
        as_theory_ratio(row, (0.8, 1.25))
        assert (row["companion"], row["companion_ci_low"], row["companion_ci_high"]) == (
            0.5,
            0.4,
            0.625,
        )
        assert row["measured"] == pytest.approx(predicted / 0.5)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(
            (predicted / 0.625, predicted / 0.4)
        )
        assert row["statistic"] == "predicted / median"
        verdicts[predicted] = verdict({"paper_value": "theory"}, row)
        if predicted == 0.5:
            # a prediction 1.25 / 0.8 x too high would put the whole interval above 1.25
            assert power_note(row) == (
                "predicted 0.5; the check catches a prediction 1.56x too high or 1.56x too low"
            )
    assert verdicts == {0.5: "reproduced", 0.75: "inconclusive", 1.5: "not reproduced"}


def test_a_theory_ratio_claim_holds_a_per_trial_prediction_against_the_measurement():
    """Prediction 1.1 x the measurement per trial (the depth formula's layout: a
    ``predicted_flow`` matrix beside ``product``): the paired ratio of medians is 1.1, its
    interval narrow, against the theory band; 3 x is refuted."""
    rng = np.random.default_rng(1)
    errors = rng.lognormal(0, 2, SEEDS)
    rows = trial_rows("condition_number", errors, depth=3)
    for factor, matrix in ((1.1, "predicted_flow"), (3.0, "predicted_init")):
        rows += [
            {**r, "matrix": matrix, "error": factor * r["error"]}
            for r in trial_rows("condition_number", errors, depth=3)
        ]
    tables = {"depth_theory": pd.DataFrame(rows)}
    claims = [
        claim(
            f"c_{matrix}",
            "theory",
            where="theory (depth)",
            table="depth_theory",
            kind="ratio",
            filter={"component": "condition_number", "matrix": matrix, "depth": 3},
            baseline={"component": "condition_number", "depth": 3},
        )
        for matrix in ("predicted_flow", "predicted_init")
    ]
    table = evaluate(
        {"default_tolerance": 0.25, "theory_band": [0.8, 1.25], "claims": claims}, tables
    ).set_index("claim_id")
    flow, init = table.loc["c_predicted_flow"], table.loc["c_predicted_init"]
    assert flow["measured"] == pytest.approx(1.1) and init["measured"] == pytest.approx(3.0)
    assert flow["ci_low"] == pytest.approx(1.1) and flow["ci_high"] == pytest.approx(1.1)
    assert (flow["band_low"], flow["band_high"]) == (0.8, 1.25)
    assert flow["statistic"] == "predicted / measured median" and flow["paired"]
    assert (flow["verdict"], init["verdict"]) == ("reproduced", "not reproduced")
    assert flow["source"] == init["source"] == "own check"
    assert flow["note"].startswith("the check catches a prediction")


def gn_table(tightness, relative_error=1e-12, reliable=True) -> pd.DataFrame:
    """A GN sweep's table: two depths per seed, the bound's tightness given per seed at depth
    3 (depth 2: 1.5), kappa growing with depth."""
    rows = []
    for seed, t in enumerate(tightness):
        for depth, tight in ((2, 1.5), (3, t)):
            rows.append(
                {
                    "dataset": "digits",
                    "depth": depth,
                    "seed": seed,
                    "kappa": 10.0 * depth**2 * (1 + 0.01 * seed),
                    "relative_error": relative_error,
                    "reliable": reliable,
                    "tightness_convex": tight,
                }
            )
    return pd.DataFrame(rows)


def gn_claim(claim_id, paper_value, **kw):
    return claim(claim_id, paper_value, where="GN §4.2", table="gn_fig3_bounds", **kw)


def test_the_power_rule_gives_the_trials_at_which_a_right_prediction_decides():
    """A check whose prediction is exactly right (the measured median of lognormal errors is
    the predicted one): from a 40-trial pilot the rule names n; at that n the interval of
    predicted / median lies inside [0.8, 1.25] in most repeats (the rule aims at 0.95), at
    the pilot's n in none. A correlation's interval is scaled linearly."""
    rng = np.random.default_rng(3)
    band = (0.8, 1.25)

    def ratio_row(n: int) -> dict:
        errors = np.exp(rng.normal(0.0, 1.0, n))  # median 1, predicted 1
        low, high = bootstrap_ci([errors], np.median)
        return {"n": n, "ci_low": 1 / high, "ci_high": 1 / low, "band_low": 0.8, "band_high": 1.25}

    n = int(trials_to_decide(ratio_row(40)))
    assert 300 < n < 3000  # (2 * log-width / log-band)^2 * 40, the width ~ 4 sd / sqrt(n)

    def inside(row: dict) -> bool:
        return band[0] <= row["ci_low"] and row["ci_high"] <= band[1]

    fits = sum(inside(ratio_row(n)) for _ in range(40))
    assert fits >= 30 and sum(inside(ratio_row(40)) for _ in range(40)) == 0
    row = {"n": 10, "ci_low": -0.2, "ci_high": 0.9, "band_low": 0.5, "band_high": 1.0}
    assert trials_to_decide(row) == math.ceil(10 * (2 * 1.1 / 0.5) ** 2)
    assert math.isnan(trials_to_decide({**row, "ci_high": math.inf}))
    assert math.isnan(trials_to_decide({**row, "n": 1}))


def test_the_one_sided_power_rule_gives_the_trials_at_which_the_interval_clears_the_edge():
    """A ratio claim with band [1, inf) whose true ratio is 1.3 (medians of lognormal errors):
    from a 40-trial pilot the rule names n; at that n the interval lies above 1 in most
    repeats (the rule aims at 0.975), at the pilot's n in few."""
    rng = np.random.default_rng(5)

    def ratio_row(n: int) -> dict:
        errors = np.exp(rng.normal(np.log(1.3), 1.0, n))  # the ratio to a baseline of 1
        measured = float(np.median(errors))
        low, high = bootstrap_ci([errors], np.median)
        row = {"n": n, "measured": measured, "ci_low": low, "ci_high": high}
        return {**row, "band_low": 1.0, "band_high": math.inf}

    pilots = [trials_to_decide(ratio_row(40)) for _ in range(5)]
    n = int(np.median(pilots))
    assert 100 < n < 5000
    clears = sum(ratio_row(n)["ci_low"] > 1.0 for _ in range(40))
    assert clears >= 30 and sum(ratio_row(40)["ci_low"] > 1.0 for _ in range(40)) <= 15
    below = {"n": 10, "measured": 0.5, "ci_low": 0.25, "ci_high": 2.0, "band_low": 1.0}
    below["band_high"] = math.inf  # an estimate below the edge: the upper half faces it
    assert trials_to_decide(below) == math.ceil(10 * (2 * math.log(4.0) / math.log(2.0)) ** 2)
    assert math.isnan(trials_to_decide({**below, "measured": 1.0}))


def test_the_kappa_error_without_rank_cut_is_the_reviews_float64_reading():
    """A low-rank target's κ is infinite under the rank cut; the derived component counts
    its error at the limit, 1, which is what s_1 / s_min of the same target in float64 (its
    s_min rounding noise) gives to 1e-9. A full-rank target keeps the table's error; an
    infinite learned κ gives NaN."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(32, 8)), rng.normal(size=(32, 8))
    s = np.linalg.svd(a @ b.T / np.sqrt(32 * 8), compute_uv=False)
    learned = 3.0e4
    float64_error = abs(learned - s[0] / s[-1]) / (s[0] / s[-1])

    def trial(trained: float, target: float, error: float) -> pd.DataFrame:
        rows = {"component": "condition_number", "trained": trained, "target": target}
        last = {**rows, "epoch": 200, "error": error}
        return pd.DataFrame([{**rows, "epoch": 0, "error": 0.5}, last])

    assert kappa_error_without_rank_cut(trial(learned, math.inf, math.nan)) == 1.0
    assert abs(float64_error - 1.0) < 1e-9
    assert kappa_error_without_rank_cut(trial(12.0, 10.0, 0.2)) == 0.2
    assert math.isnan(kappa_error_without_rank_cut(trial(math.inf, math.inf, math.nan)))


def test_the_falling_share_counts_the_epochs_at_which_an_error_falls():
    """Per trial, the share of records (after the first) below the previous one: 1 for a
    monotone fall, 0.5 for a zigzag; other components and their order in the table do not
    matter. A mean of shares (bounded) keeps the interval rule at 10 trials; a mean of the
    errors themselves would need the heavy-tail rule, and 10 trials are too few for it."""
    errors = {"row_norms": [0.9, 0.5, 0.3, 0.2, 0.1], "condition_number": [1, 2, 1, 2, 1]}
    rows = pd.DataFrame(
        [
            {"component": c, "epoch": e, "error": v}
            for c, values in errors.items()
            for e, v in reversed(list(enumerate(values)))
        ]
    )
    assert falling_share("row_norms")(rows) == 1.0
    assert falling_share("condition_number")(rows) == 0.5
    assert math.isnan(falling_share("row_norms")(rows.iloc[:1]))
    trials = pd.concat(
        [
            rows.assign(seed=seed, dim=8, matrix="product", trained=1.0, target=1.0, diverged=False)
            for seed in range(10)
        ]
    )[["dim", "seed", "matrix", "epoch", "component", "trained", "target", "error", "diverged"]]
    claim = {
        "claim_id": "m",
        "where": "§4.5",
        "statement": "s",
        "paper_value": 1.0,
        "statistic": "mean",
        "table": "t",
        "filter": {"component": "row_norms_falling_share"},
    }
    row = evaluate({"claims": [claim]}, {"t": trials}).iloc[0]
    assert (row["rule"], row["verdict"], row["measured"]) == ("interval", "reproduced", 1.0)
    # the same 10 trials' errors, unbounded: the heavy-tail rule, which 10 trials cannot feed
    unbounded = {**claim, "filter": {"component": "row_norms"}}
    assert evaluate({"claims": [unbounded]}, {"t": trials}).iloc[0]["verdict"] == "too few trials"
    over = {**claim, "filter": {}, "over": {"component": ["row_norms"]}, "reduce": "max"}
    assert evaluate({"claims": [over]}, {"t": trials}).iloc[0]["verdict"] == "too few trials"


def test_a_gn_claim_reads_one_value_per_seed_and_counts_for_its_paper():
    tables = {"gn_fig3_bounds": gn_table([1.2] * 6)}
    table = run(
        tables,
        gn_claim(
            "quadratic",
            2.25,
            kind="ratio",
            filter={"depth": 3, "field": "kappa"},
            baseline={"depth": 2, "field": "kappa"},
        ),
        gn_claim("tight", 1.0, filter={"depth": 3, "field": "tightness_convex"}),
        gn_claim("several", 1.0, filter={"field": "tightness_convex"}),
    )
    assert table["source"].unique().tolist() == [GN_PAPER]
    assert table.loc["quadratic", "measured"] == pytest.approx(9 / 4)
    assert table.loc["quadratic", "paired"] and table.loc["quadratic", "n"] == 6
    assert table.loc["quadratic", "verdict"] == "reproduced"
    assert table.loc["tight", "verdict"] == "reproduced"  # 1.2 is within 1 ± 25 %
    # without statistic min/max a seed must match one network
    assert table.loc["several", "verdict"] == "not comparable"
    assert "several networks per seed" in table.loc["several", "note"]
    card = scorecard(table.reset_index()).set_index("source")
    assert card.loc[GN_PAPER, "claims"] == 3


@pytest.mark.parametrize(
    ("tightness", "relative_error", "expected"),
    [
        (1 - 4e-15, 3e-12, "reproduced"),  # equal to the exact kappa within its own error
        (1.0 - 1e-6, 3e-12, "not reproduced"),  # below it by more than the error: refuted
        (0.5, 3e-12, "not reproduced"),
    ],
)
def test_every_bound_holds_is_the_smallest_tightness_within_kappas_error(
    tightness, relative_error, expected
):
    """Statistic min takes each seed's smallest over every network the filter matches."""
    values = [1.3, 1.1, tightness, 2.0, 1.7, 1.4]
    tables = {"gn_fig3_bounds": gn_table(values, relative_error)}
    table = run(
        tables,
        gn_claim(
            "holds", [1.0, math.inf], statistic="min", filter={"field": "tightness_convex_upper"}
        ),
    )
    row = table.loc["holds"]
    assert row["verdict"] == expected
    assert row["measured"] == pytest.approx(tightness / (1 - relative_error), rel=1e-15)
    assert row["ci_low"] == pytest.approx(row["measured"], rel=1e-15)


def test_a_gn_field_a_over_b_divides_each_networks_columns():
    """kappa/kappa_sigma: each network's κ over its data's κ, then the claim's statistic."""
    gn = gn_table([1.2] * 4).assign(kappa_sigma=lambda t: 2.0 + t["seed"])
    table = run(
        {"gn_fig3_bounds": gn},
        gn_claim("per_sigma", 1.0, filter={"depth": 3, "field": "kappa/kappa_sigma"}),
    )
    expected = np.mean([90 * (1 + 0.01 * seed) / (2.0 + seed) for seed in range(4)])
    assert table.loc["per_sigma", "measured"] == pytest.approx(expected, rel=1e-14)
    assert table.loc["per_sigma", "n"] == 4


def test_unreliable_kappas_are_left_out_and_said(tables):
    gn = gn_table([1.2] * 6)
    gn.loc[gn["seed"] == 0, "reliable"] = False
    table = run(
        {"gn_fig3_bounds": gn},
        gn_claim("tight", 1.0, filter={"depth": 3, "field": "tightness_convex"}),
    )
    assert table.loc["tight", "n"] == 5
    assert "1 unreliable κ left out" in table.loc["tight", "note"]  # the depth-3 network


def test_the_paper_claims_file_holds_the_gauss_newton_papers_claims():
    sources = pd.Series([claim_source(c) for c in CLAIMS["claims"]]).value_counts()
    assert sources[GN_PAPER] >= 15


def test_a_gn_claim_reads_the_last_epoch_unless_told_and_warns_on_few_seeds():
    early = gn_table([1.2] * 3).assign(epoch=0)
    late = gn_table([1.2] * 3).assign(epoch=5, kappa=lambda t: 2 * t["kappa"])
    table = run(
        {"gn_fig3_bounds": pd.concat([early, late], ignore_index=True)},
        gn_claim("last", 180.0, filter={"depth": 3, "field": "kappa"}),
        gn_claim("first", 90.0, filter={"depth": 3, "epoch": 0, "field": "kappa"}),
    )
    assert table.loc["last", "measured"] == pytest.approx(2 * 90 * 1.01)
    assert table.loc["first", "measured"] == pytest.approx(90 * 1.01)
    assert "only 3 trials" in table.loc["last", "note"]


def test_the_summary_lists_every_claim_under_its_source_and_verdict(tables):
    table = run(
        {**tables, "gn_fig3_bounds": gn_table([1.2] * 6)},
        claim("inside", 0.13, filter={"component": "row_norms", "dim": 32}),
        claim("outside", 34.9, filter={"component": "condition_number", "dim": 512}),
        gn_claim("tight", 1.0, filter={"depth": 3, "field": "tightness_convex"}),
    ).reset_index()
    text = summary_markdown(table)
    paper, gn = text.index(f"## {PAPER}"), text.index(f"## {GN_PAPER}")
    assert text.index("## Scorecard") < paper < gn
    assert paper < text.index("### reproduced (1)") < text.index("`inside`") < gn
    assert text.index("### not reproduced (1)") < text.index("`outside`") < gn
    assert gn < text.index("`tight`")
    row = table.set_index("claim_id").loc["outside"]
    assert f"{row['measured']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]" in text


def test_a_gn_arm_with_nothing_reliable_is_not_comparable():
    gn = gn_table([1.2] * 6, reliable=False)
    table = run(
        {"gn_fig3_bounds": gn},
        gn_claim("holds", [1.0, math.inf], statistic="min", filter={"field": "tightness_convex"}),
    )
    assert table.loc["holds", "verdict"] == "not comparable"
    assert "no reliable, finite tightness_convex" in table.loc["holds", "note"]


def test_a_pool_must_hold_every_setting_of_its_experiment():
    """The pools of config/claims.yaml hold their experiments' settings in the paper config;
    a pool at another learning rate is named, since its trials are not the claims'."""
    paper = validate_config(load_yaml(REPO / "config" / "config.yaml"))
    settings = table_settings(config_cells(paper), {})
    assert pool_mismatches(CLAIMS["heavy_tail"], settings) == []
    settings["pool_exp2_optimizer"] = [
        {**s, "lr": 0.02} if s["optimizer"] == "sgd" else s for s in settings["pool_exp2_optimizer"]
    ]
    (problem,) = pool_mismatches(CLAIMS["heavy_tail"], settings)
    assert problem.startswith("heavy_tail: exp2_optimizer: pool pool_exp2_optimizer lacks")


def test_calibration_rejects_by_the_facts_and_picks_by_the_kappa_claim():
    """Three readings: A misses a norm fact that B and C meet (rejected), B and C meet it; the
    kappa claim's tail probability is largest under A, then C: the pick is C. A fact no
    reading meets rejects none. The held-out count leaves the calibration's claims out, and
    the readings that measure none of them (another experiment's, for the sensitivity only)."""
    rows = []
    for arm, fact, kappa_p, other in (
        ("A", "not reproduced", 0.9, "consistent"),
        ("B", "reproduced", 0.1, "not reproduced"),
        ("C", "reproduced", 0.4, "consistent"),
    ):
        rows += [
            {"arm": arm, "claim_id": "norm", "verdict": fact, "p_value": np.nan},
            {"arm": arm, "claim_id": "never", "verdict": "not reproduced", "p_value": np.nan},
            {"arm": arm, "claim_id": "kappa", "verdict": "consistent", "p_value": kappa_p},
            {"arm": arm, "claim_id": "held", "verdict": other, "p_value": 0.5},
        ]
    elsewhere = {"arm": "B", "claim_id": "exp4", "verdict": "consistent", "p_value": 0.5}
    rows = [{**row, "reading": "calibrating"} for row in rows]
    rows.append({**elsewhere, "reading": "sensitivity only"})
    readings = pd.DataFrame(rows).assign(p_low=0.0, p_high=1.0, source=PAPER)
    calibration = {"facts": ["norm", "never"], "kappa": "kappa"}
    table = calibrate(readings, calibration).set_index("arm")
    assert table["admitted"].to_dict() == {"A": False, "B": True, "C": True}
    assert table["chosen"].to_dict() == {"A": False, "B": False, "C": True}
    assert table.loc["C", "kappa_p_value"] == 0.4
    card = readings_scorecard(readings, calibration).set_index("arm")
    assert card["held-out claims"].tolist() == [1, 1, 1]
    assert card.loc["B", "not reproduced"] == 1 and card.loc["C", "consistent"] == 1


def test_a_claim_on_fewer_trials_than_its_rule_can_judge_says_so():
    """One trial has no interval (a median), and a pool of 10 trials or fewer no tail index
    (a mean: the heavy-tail rule cannot choose its verdict): *too few trials*, with the
    count, instead of a verdict; 11 trials are judged."""
    rng = np.random.default_rng(3)
    tables = {
        "one": pd.DataFrame(trial_rows("row_norms", [0.13])),
        "ten": pd.DataFrame(trial_rows("condition_number", rng.pareto(1.0, 10))),
        "eleven": pd.DataFrame(trial_rows("condition_number", rng.pareto(1.0, 11))),
    }
    row_norm = {"component": "row_norms"}
    kappa = {"component": "condition_number"}
    table = run(
        tables,
        claim("one", 0.13, table="one", filter=row_norm, statistic="median"),
        claim("one_mean", 0.13, table="one", filter=row_norm),
        claim("ten", 1.0, table="ten", filter=kappa),
        claim("eleven", 1.0, table="eleven", filter=kappa),
    )
    assert table.loc["one", "verdict"] == "too few trials"
    assert "1 trial: no interval to judge" in table.loc["one", "note"]
    assert table.loc["one_mean", "verdict"] == "too few trials"  # a mean: the pool's count
    assert table.loc["ten", "verdict"] == "too few trials"
    assert (
        "needs more than 10 trials of ten for a tail index; it has 10" in table.loc["ten", "note"]
    )
    assert table.loc[["one", "ten"], ["ci_low", "ci_high"]].isna().all().all()
    assert table.loc["eleven", "verdict"] != "too few trials"
    assert table.loc["eleven", "rule"] == "predictive"
