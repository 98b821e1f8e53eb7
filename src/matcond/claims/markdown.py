"""The claims table as Markdown (results/claims.md, summary.md) and its verdict counts per
source (the scorecard)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from matcond.claims.check import OWN, SOURCES
from matcond.claims.evaluate import VERDICTS


def scorecard(table: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per source (the paper's claims apart from our own checks), and where
    the table has the readings' columns, how many claims the admitted readings measure and
    how many of those keep one verdict under all of them (``reading-robust``)."""
    counts = pd.crosstab(table["source"], table["verdict"])
    counts = counts.reindex(index=[s for s in SOURCES if s in counts.index])
    counts = counts.reindex(columns=[v for v in VERDICTS if v in counts.columns])
    counts.insert(0, "claims", counts.sum(axis=1))
    if "reading_robust" in table:
        robust = table["reading_robust"].astype("boolean").groupby(table["source"])
        counts["readings measure"] = robust.count().reindex(counts.index, fill_value=0)
        counts["reading-robust"] = robust.sum().reindex(counts.index, fill_value=0).astype(int)
    return counts.reset_index()


def unjudged_claims(table: pd.DataFrame) -> tuple[int, int]:
    """How many of the papers' claims were measured on other settings than the papers'
    (``settings differ``: a smoke test such as the small run), and how many there are."""
    papers = table[table["source"] != OWN]
    return int((papers["verdict"] == "settings differ").sum()), len(papers)


def smoke_test_line(table: pd.DataFrame) -> str:
    """One console line for a run whose papers' claims were measured on other settings than
    the papers' (:func:`unjudged_claims`), saying where the paper run's verdicts are kept;
    "" for a run that judges them."""
    unjudged, papers = unjudged_claims(table)
    if not unjudged:
        return ""
    return (
        f"Note: {unjudged} of the papers' {papers} claims were measured on other settings "
        "than the papers' (a smoke test), not judged; the paper run's verdicts and figures, "
        "without a run: docs/results.md and docs/paper-figures.md"
    )


def by_source(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The scorecard, then the claims of each source (the papers' first), as named sections."""
    sections = {"Scorecard": scorecard(table)}
    for source in SOURCES:
        if (table["source"] == source).any():
            sections[f"Claims: {source}"] = table[table["source"] == source]
    return sections


def interval_text(value: float, low: float, high: float) -> str:
    """An estimate with its interval, to 3 significant digits: "0.5 [0.27, 0.86]" (the
    estimate alone where it has no interval)."""
    if math.isnan(low) and math.isnan(high):
        return f"{value:.3g}"
    return f"{value:.3g} [{low:.3g}, {high:.3g}]"


def summary_markdown(table: pd.DataFrame) -> str:
    """``results/summary.md``: the scorecard, then per source and verdict one line per claim
    (statement, measurement with its interval, the paper's value, the companion, a law's
    verdict and the note), written from the claims table so that no prose restates a number
    by hand."""
    lines = ["# What the claims say", "", "Written by rule `claims` from `results/claims.csv`.", ""]
    lines += ["## Scorecard", "", to_markdown(scorecard(table))]
    for source in SOURCES:
        rows = table[table["source"] == source]
        if rows.empty:
            continue
        lines += [f"## {source}", ""]
        for name in VERDICTS:
            chosen = rows[rows["verdict"] == name]
            if chosen.empty:
                continue
            lines += [f"### {name} ({len(chosen)})", ""]
            for row in chosen.itertuples(index=False):
                text = f"- `{row.claim_id}` ({row.where}): {row.statement}."
                if math.isfinite(row.measured):
                    measured = interval_text(row.measured, row.ci_low, row.ci_high)
                    text += f" Measured ({row.statistic}, n = {row.n:.0f}): {measured}"
                    text += f"; band [{row.band_low:.3g}, {row.band_high:.3g}]"
                    text += f" (paper: {row.paper_value})."
                if math.isfinite(row.companion):
                    companion = interval_text(
                        row.companion, row.companion_ci_low, row.companion_ci_high
                    )
                    text += f" Companion: {companion}."
                if row.law_verdict:
                    law = interval_text(row.law, row.law_ci_low, row.law_ci_high)
                    text += f" Law ({row.law_statistic}): {law}"
                    text += f" against [{row.law_band_low:.3g}, {row.law_band_high:.3g}]:"
                    text += f" {row.law_verdict}."
                if getattr(row, "reading_verdicts", ""):
                    text += f" Under the admitted readings: {row.reading_verdicts}."
                if row.note:
                    text += f" Note: {row.note}."
                lines.append(text)
            lines.append("")
    return "\n".join(lines)


def to_markdown(table: pd.DataFrame) -> str:
    """A table as Markdown, numbers to 3 significant digits."""

    def fmt(v):
        return f"{v:.3g}" if isinstance(v, float | np.floating) else str(v)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += [
        "| " + " | ".join(fmt(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"
