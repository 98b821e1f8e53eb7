"""The README's and the docs' results cannot drift from the data: the claims scorecard and
every interval they quote ("0.50 [0.27, 0.86]") are those of the paper run's claims table, kept
beside the docs (docs/paper-run/claims.csv, written by rule `claims` on config/config.yaml), or,
for the depth formula's cells (docs/depth-theory.md), of that run's depth_theory table
(docs/paper-run/depth_theory.csv, written by rule `depth_theory`); and the claims table holds
exactly the claims of config/claims.yaml. After changing claims.yaml or the code that judges a
claim, run the paper config again and keep its results there (`python
scripts/snapshot_paper_run.py <run directory>`); then fix the numbers this test names in
README.md and docs/*.md."""

import re

import pandas as pd
import pytest
from support import REPO

from matcond.claims.markdown import scorecard, summary_markdown
from matcond.core.config import load_yaml
from matcond.core.trials import format_value

README = (REPO / "README.md").read_text()
# the README and every page of the docs (docs/paper-run/summary.md is checked whole, below)
PAGES = {
    path.relative_to(REPO).as_posix(): path.read_text()
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
}
SNAPSHOT = REPO / "docs" / "paper-run"


def read_snapshot(name: str) -> pd.DataFrame:
    """A table of the snapshot, its numbers read back exactly: the GPU machine's older pandas,
    with its own CSV parser, read a band edge 0.012750000000000001 1 ulp low (printed 0.0127)."""
    return pd.read_csv(SNAPSHOT / name, engine="pyarrow")


TEXT_COLUMNS = ("note", "law_statistic", "law_verdict", "reading_verdicts")  # empty: NaN in a CSV
CLAIMS = read_snapshot("claims.csv").fillna(dict.fromkeys(TEXT_COLUMNS, ""))
DEPTH = read_snapshot("depth_theory.csv")
CALIBRATION = read_snapshot("calibration.csv")
NUMBER = r"-?\d[\d,]*(?:\.\d+)?"
# an estimate with its interval, maybe in percent: "0.50 [0.27, 0.86]", "-83 % [-1310 %, 0.2 %]"
INTERVAL = re.compile(rf"({NUMBER})\s*(%?)\s*\[({NUMBER})\s*%?,\s*({NUMBER})\s*%?\]")
STATISTICS = [
    ("measured", "ci_low", "ci_high"),
    ("companion", "companion_ci_low", "companion_ci_high"),
    ("p_value", "p_low", "p_high"),  # a predictive verdict's tail probability
    ("law", "law_ci_low", "law_ci_high"),  # a law's statistic
]
# a depth_theory cell: the measured median κ error and the prediction's ratio to it
DEPTH_STATISTICS = [
    ("measured_median", "measured_ci_low", "measured_ci_high"),
    ("ratio", "ratio_ci_low", "ratio_ci_high"),
]
# a reading of the calibration: the tail probability of the paper's first κ number under it
CALIBRATION_STATISTICS = [
    ("exp1_kappa_d32_p_value", "exp1_kappa_d32_p_low", "exp1_kappa_d32_p_high")
]
SCORECARD_ROW = r"^\| ([^|]+?) \|((?: \d+ \|){3,})$"  # a source, then its counts


def printed_as(value: float, text: str) -> bool:
    """``value`` rounds to ``text`` at the precision it is printed with (1,080: tens)."""
    digits = text.replace(",", "").lstrip("-")
    if "." in digits:
        unit = 10.0 ** -len(digits.split(".")[1])
    else:
        unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return abs(value - float(text.replace(",", ""))) <= 0.5 * unit * (1 + 1e-9)


def quoted_intervals() -> list[tuple[str, str, float, tuple[str, str, str]]]:
    """Every estimate with its interval in the README and the docs: (page, as printed, scale,
    its three numbers)."""
    return [
        (page, m.group(0), 100.0 if m.group(2) else 1.0, (m.group(1), m.group(3), m.group(4)))
        for page, text in PAGES.items()
        for m in INTERVAL.finditer(text)
    ]


def matches(table: pd.DataFrame, statistics, scale: float, numbers) -> list[int]:
    """The rows of ``table`` one of whose statistics with its interval is ``numbers``."""
    return [
        i
        for i, row in table.iterrows()
        for columns in statistics
        if all(
            pd.notna(row[c]) and printed_as(float(row[c]) * scale, text)
            for c, text in zip(columns, numbers, strict=True)
        )
    ]


def test_the_snapshot_holds_exactly_the_configured_claims():
    configured = load_yaml(REPO / "config" / "claims.yaml")["claims"]
    assert sorted(CLAIMS["claim_id"]) == sorted(c["claim_id"] for c in configured)
    assert (SNAPSHOT / "summary.md").read_text() == summary_markdown(CLAIMS)


PAGES_WITH_SCORECARD = [
    page for page, text in PAGES.items() if re.search(SCORECARD_ROW, text, re.M)
]


def test_the_readme_has_the_scorecard():
    assert "README.md" in PAGES_WITH_SCORECARD


@pytest.mark.parametrize("page", PAGES_WITH_SCORECARD)
def test_every_scorecard_is_the_snapshots(page):
    rows = re.findall(SCORECARD_ROW, PAGES[page], re.M)
    quoted = {
        name.split(" (")[0]: [int(n) for n in re.findall(r"\d+", numbers)] for name, numbers in rows
    }
    card = scorecard(CLAIMS)
    for _, counts in card.iterrows():
        row = next(v for k, v in quoted.items() if k.startswith(counts["source"]))
        assert row == [counts[c] for c in card.columns[1:]], counts["source"]


def test_the_pages_quote_intervals():
    quoted = quoted_intervals()
    assert len(quoted) >= 60
    assert sum(page == "README.md" for page, *_ in quoted) >= 5
    assert {page for page, *_ in quoted} >= {"docs/results.md", "docs/theory.md"}


@pytest.mark.parametrize(
    "page,printed,scale,numbers", quoted_intervals(), ids=lambda v: str(v)[:30]
)
def test_every_quoted_interval_is_a_claims_statistic(page, printed, scale, numbers):
    """The estimate and both ends match one claim's statistic (or its companion) and
    interval, one cell of the depth formula's table or one reading of the calibration."""
    found = (
        matches(CLAIMS, STATISTICS, scale, numbers)
        or matches(DEPTH, DEPTH_STATISTICS, scale, numbers)
        or matches(CALIBRATION, CALIBRATION_STATISTICS, scale, numbers)
    )
    assert found, (
        f"{page} quotes {printed!r}, which no claim of docs/paper-run/claims.csv (nor cell"
        " of docs/paper-run/depth_theory.csv, nor reading of calibration.csv) has"
    )


def test_the_default_reading_is_the_calibrations_pick():
    """The default config's init and row scale are the reading the calibration rule picked in
    the paper run (docs/theory.md, "Which reading the default uses")."""
    picked = read_snapshot("calibration.csv")
    (arm,) = picked.loc[picked["chosen"], "arm"]
    defaults = load_yaml(REPO / "config" / "config.yaml")["defaults"]
    keys = ("init", "init_scale", "row_log_std")
    assert arm == ", ".join(f"{k}={format_value(defaults[k])}" for k in keys)


def test_the_other_draws_moves_are_those_the_results_page_states():
    """docs/results.md, "On another draw of every trial": how many verdicts moved between the
    snapshot and the same config on other seeds (docs/paper-run/claims-other-seeds.csv,
    benchmarks/reseeded.py), how many claims changed only their reading robustness, how many
    inconclusive claims were decided, consistent ones became inconclusive and reproduced ones
    consistent, that none moved between a decided verdict and not reproduced, and the two
    statistics it quotes: all read off the two tables."""
    page = " ".join(PAGES["docs/results.md"].split())
    ours = CLAIMS.set_index("claim_id")
    other = read_snapshot("claims-other-seeds.csv").set_index("claim_id").loc[ours.index]
    before, after = ours["verdict"], other["verdict"]
    verdict = before != after
    robustness = [table["reading_robust"].fillna("").astype(str) for table in (ours, other)]
    robust = robustness[0] != robustness[1]
    assert f"moved **{verdict.sum()} of the {len(ours)} verdicts**" in page
    assert f"{(robust & ~verdict).sum()} more claims changed only their reading robustness" in page
    moves = (before + " -> " + after)[verdict].value_counts()
    decided = moves[[m for m in moves.index if m.startswith("inconclusive")]].sum()
    assert f"{decided} inconclusive claims were decided there" in page
    assert f"{moves.get('consistent -> inconclusive', 0)} consistent claims became" in page
    assert f"{moves.get('reproduced -> consistent', 0)} reproduced claim consistent" in page
    positive = {"reproduced", "consistent", "direction only"}
    assert not any(
        {b, a} & positive and {b, a} & {"not reproduced"}
        for b, a in zip(before[verdict], after[verdict], strict=True)
    )
    assert (
        decided
        + moves.get("consistent -> inconclusive", 0)
        + moves.get("reproduced -> consistent", 0)
        == verdict.sum()
    )
    adam, theory = other.loc["exp2_adam_worse_everywhere"], other.loc["theory_check_kappa_d512"]
    assert f"{adam['law']:.3g}, interval {adam['law_ci_low']:.3g}-{adam['law_ci_high']:.3g}" in page
    quoted = f"{theory['measured']:.3g}, interval {theory['ci_low']:.3g}-{theory['ci_high']:.3g}"
    assert f"not reproduced: {quoted}" in page
