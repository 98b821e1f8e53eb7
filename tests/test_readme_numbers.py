"""The README's results cannot drift from the data: its claims scorecard and every interval it
quotes ("0.50 [0.27, 0.86]") are those of the paper run's claims table, kept beside the docs
(docs/paper-run/claims.csv, written by rule `claims` on config/config.yaml), and that table
holds exactly the claims of config/claims.yaml. After changing claims.yaml or the code that
judges a claim, run the paper config again and copy results/claims.csv and results/summary.md
there; then fix the README's numbers this test names."""

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from matcond.claims import scorecard, summary_markdown

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
SNAPSHOT = REPO / "docs" / "paper-run"
CLAIMS = pd.read_csv(SNAPSHOT / "claims.csv").fillna({"note": ""})
NUMBER = r"-?\d[\d,]*(?:\.\d+)?"
# an estimate with its interval, maybe in percent: "0.50 [0.27, 0.86]", "-83 % [-1310 %, 0.2 %]"
INTERVAL = re.compile(rf"({NUMBER})\s*(%?)\s*\[({NUMBER})\s*%?,\s*({NUMBER})\s*%?\]")
STATISTICS = [
    ("measured", "ci_low", "ci_high"),
    ("companion", "companion_ci_low", "companion_ci_high"),
]


def printed_as(value: float, text: str) -> bool:
    """``value`` rounds to ``text`` at the precision it is printed with (1,080: tens)."""
    digits = text.replace(",", "").lstrip("-")
    if "." in digits:
        unit = 10.0 ** -len(digits.split(".")[1])
    else:
        unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return abs(value - float(text.replace(",", ""))) <= 0.5 * unit * (1 + 1e-9)


def quoted_intervals() -> list[tuple[str, float, tuple[str, str, str]]]:
    """Every estimate with its interval in the README: (as printed, scale, its three numbers)."""
    return [
        (m.group(0), 100.0 if m.group(2) else 1.0, (m.group(1), m.group(3), m.group(4)))
        for m in INTERVAL.finditer(README)
    ]


def test_the_snapshot_holds_exactly_the_configured_claims():
    configured = yaml.safe_load((REPO / "config" / "claims.yaml").read_text())["claims"]
    assert sorted(CLAIMS["claim_id"]) == sorted(c["claim_id"] for c in configured)
    assert (SNAPSHOT / "summary.md").read_text() == summary_markdown(CLAIMS)


def test_the_readme_scorecard_is_the_snapshots():
    rows = re.findall(
        r"^\| ([^|]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", README, re.M
    )
    quoted = {name.split(" (")[0]: [int(n) for n in numbers] for name, *numbers in rows}
    card = scorecard(CLAIMS)
    for _, counts in card.iterrows():
        row = next(v for k, v in quoted.items() if k.startswith(counts["source"]))
        expected = [counts[c] for c in card.columns[1:6]]
        assert row == expected, counts["source"]


def test_the_readme_quotes_intervals():
    assert len(quoted_intervals()) >= 20


@pytest.mark.parametrize("printed,scale,numbers", quoted_intervals(), ids=lambda v: str(v)[:30])
def test_every_quoted_interval_is_a_claims_statistic(printed, scale, numbers):
    """The estimate and both ends match one claim's statistic (or its companion) and interval."""
    found = [
        row["claim_id"]
        for _, row in CLAIMS.iterrows()
        for columns in STATISTICS
        if all(
            pd.notna(row[c]) and printed_as(float(row[c]) * scale, text)
            for c, text in zip(columns, numbers, strict=True)
        )
    ]
    assert found, f"README quotes {printed!r}, which no claim of docs/paper-run/claims.csv has"
