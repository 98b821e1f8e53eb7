"""The claims table: measurements and the verdict rule on a hand-made experiment table."""

import math

import pandas as pd
import pytest

from matcond.claims import CLAIM_COLUMNS, evaluate, to_markdown


def row(component, dim, mean, n_diverged=0):
    return {
        "matrix": "product",
        "epoch": 10,
        "component": component,
        "dim": dim,
        "mean": mean,
        "ci_low": mean - 0.01,
        "ci_high": mean + 0.01,
        "n": 5,
        "n_diverged": n_diverged,
    }


@pytest.fixture
def tables():
    exp = pd.DataFrame(
        [row("kappa", 32, 0.1), row("kappa", 512, 0.5, n_diverged=2), row("norm", 32, 0.13)]
    )
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


def test_verdicts(tables):
    claims = {
        "default_tolerance": 0.25,
        "claims": [
            claim("close", 0.12, filter={"component": "norm", "dim": 32}),
            claim("far", 34.9, filter={"component": "kappa", "dim": 512}),
            claim(
                "far_but_direction",
                34.9,
                filter={"component": "kappa", "dim": 512},
                expect="greater",
                baseline={"component": "kappa", "dim": 32},
            ),
            claim(
                "ratio",
                5.0,
                kind="ratio",
                filter={"component": "kappa", "dim": 512},
                baseline={"component": "kappa", "dim": 32},
            ),
            claim(
                "improvement_wrong_way",
                0.5,
                kind="improvement",
                filter={"component": "kappa", "dim": 512},
                baseline={"component": "kappa", "dim": 32},
                expect="greater",
            ),
            claim("range", [0.0, 0.2], filter={"component": "kappa", "dim": 32}),
            claim("missing_row", 1.0, filter={"component": "kappa", "dim": 64}),
            {**claim("missing_table", 1.0, filter={"component": "kappa"}), "table": "nope"},
        ],
    }
    table = evaluate(claims, tables).set_index("claim_id")
    assert list(table.reset_index().columns) == CLAIM_COLUMNS
    verdicts = table["verdict"].to_dict()
    assert verdicts == {
        "close": "reproduced",
        "far": "not reproduced",
        "far_but_direction": "direction only",
        "ratio": "reproduced",
        "improvement_wrong_way": "not reproduced",
        "range": "reproduced",
        "missing_row": "not comparable",
        "missing_table": "not comparable",
    }
    assert table.loc["ratio", "measured"] == pytest.approx(5.0)
    assert table.loc["improvement_wrong_way", "measured"] == pytest.approx(-4.0)
    assert table.loc["far", "n_diverged"] == 2 and table.loc["ratio", "n_diverged"] == 2
    assert math.isnan(table.loc["missing_row", "measured"])
    assert to_markdown(table.reset_index()).count("\n") == len(table) + 2


def test_the_paper_claims_file_is_well_formed():
    from pathlib import Path

    import yaml

    claims = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "config" / "claims.yaml").read_text()
    )
    ids = [c["claim_id"] for c in claims["claims"]]
    assert len(ids) == len(set(ids)) >= 30
    for c in claims["claims"]:
        assert {"claim_id", "where", "statement", "paper_value", "table"} <= set(c)
        if c.get("kind", "value") in ("ratio", "improvement"):
            assert "baseline" in c and "filter" in c
