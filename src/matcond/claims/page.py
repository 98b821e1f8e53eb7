"""The report's pages of the claims: ``results/claims.html`` (every claim, the verdict first
and coloured, the paper's value beside ours with its interval, grouped by paper and section)
and ``results/scorecard.html`` (the verdict counts per paper, the report's landing page),
written by rule `claims` from the table of :func:`matcond.claims.evaluate.evaluate`; and any table
as a page (:func:`table_page`: the diverged trials)."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable

import pandas as pd

from matcond.claims.check import SOURCES
from matcond.claims.evaluate import VERDICTS
from matcond.claims.markdown import interval_text, scorecard

COLOURS = {
    "reproduced": "#1a7f37",
    "consistent": "#1b7c83",
    "direction only": "#4d7fc4",
    "inconclusive": "#9a6700",
    "not reproduced": "#cf222e",
    "settings differ": "#8250df",
    "not comparable": "#6e7781",
    "not configured": "#6e7781",
}
_STYLE = (
    "body{font-family:sans-serif;font-size:13px;margin:1em;max-width:1200px}"
    "table{border-collapse:collapse;width:100%;table-layout:fixed}"
    "th,td{padding:3px 6px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere}th{background:#f4f4f4}"
    "table.claims{min-width:860px}table.scorecard,table.table{width:auto;table-layout:auto}"
    ".verdict{font-size:12px}"
    "small{color:#57606a}"
)


def section_of(where: str) -> str:
    """The paper section a claim's ``where`` names: "§4.1 / abstract" -> "§4.1",
    "GN §4.2, Lemma 2 / Fig. 3" -> "GN §4.2", "peer review W6" -> "peer review",
    "control (Experiment 3)" -> "control"; "theory (depth)" stays."""
    section = where.split(" / ")[0].split(",")[0].strip()
    if section.startswith("peer review"):
        return "peer review"
    if "(" in section and ")" not in section:
        return section.split(" (")[0]
    return section


def _section_order(section: str) -> tuple:
    """Sections in the papers' order: numbered sections, then appendices, then the rest."""
    body = section.removeprefix("GN ")
    rank = 0 if body.startswith("§") else 1 if body.startswith("App") else 2
    natural = tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", body))
    return (rank, natural)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _number(value: float) -> str:
    return f"{value:.3g}"


def _estimate(value: float, low: float, high: float) -> str:
    if not math.isfinite(value):
        return "—" if math.isnan(value) else _number(value)
    return interval_text(value, low, high)


def verdict_badge(verdict: str) -> str:
    """The verdict as a coloured label."""
    colour = COLOURS.get(verdict, "#6e7781")
    style = f"background:{colour};color:#fff;border-radius:3px;padding:1px 5px;white-space:nowrap"
    return f'<span class="verdict" style="{style}">{html.escape(verdict)}</span>'


def scorecard_html(table: pd.DataFrame, href: Callable[[str], str] | None = None) -> str:
    """The verdict counts as an HTML table, one column per source and one row per verdict (the
    first row the number of claims), styled inline so that it reads the same in any page;
    each non-zero count links to ``href(source)`` (no links without ``href``)."""
    card = scorecard(table).set_index("source")
    verdicts = [v for v in VERDICTS if v in card.columns]
    cell = 'style="padding:2px 8px;border-bottom:1px solid #ddd;text-align:right"'
    head = "".join(f"<th {cell}>{html.escape(source)}</th>" for source in card.index)
    rows = []
    for verdict in ["claims", *verdicts]:
        label = verdict_badge(verdict) if verdict in COLOURS else "claims"
        cells = []
        for source in card.index:
            count = int(card.loc[source, verdict])
            target = href(source) if href else ""
            text = f'<a href="{target}">{count}</a>' if target and count else str(count)
            data = f'data-source="{html.escape(source)}" data-verdict="{verdict}"'
            cells.append(f"<td {data} {cell}>{text}</td>")
        rows.append(f'<tr><th style="text-align:left">{label}</th>{"".join(cells)}</tr>')
    return (
        '<table class="scorecard" style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _claim_row(row) -> str:
    claim = f"{html.escape(row.statement)}<br><small>{html.escape(row.claim_id)} · "
    claim += html.escape(row.where)
    if row.note:
        claim += f" · {html.escape(row.note)}"
    claim += "</small>"
    ours = _estimate(row.measured, row.ci_low, row.ci_high)
    if math.isfinite(row.measured):
        ours += f"<br><small>{html.escape(row.statistic)}, n = {row.n:.0f}"
        if row.n_diverged:
            ours += f", {row.n_diverged:.0f} diverged left out"
        ours += "</small>"
    if row.rule == "predictive":
        central = f"[{_number(row.predictive_low)}, {_number(row.predictive_high)}]"
        ours += (
            f"<br><small>a {row.paper_n:.0f}-trial {html.escape(row.statistic)} of ours: "
            f"{central} (95 %); the paper's value: p = "
            f"{_estimate(row.p_value, row.p_low, row.p_high)}</small>"
        )
    if math.isfinite(row.companion):
        companion = _estimate(row.companion, row.companion_ci_low, row.companion_ci_high)
        name = {"mean": "median", "median": "mean"}.get(row.statistic, "companion")
        ours += f"<br><small>{name}: {companion}</small>"
    band = (
        f"[{_number(row.band_low)}, {_number(row.band_high)}]"
        if math.isfinite(row.band_low) or math.isfinite(row.band_high)
        else ""
    )
    cells = [verdict_badge(row.verdict), claim, html.escape(str(row.paper_value)), ours, band]
    return f'<tr id="{_slug(row.claim_id)}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def claims_page(table: pd.DataFrame) -> str:
    """``results/claims.html``: the scorecard, then per source and paper section one table of
    its claims, with columns verdict, claim (statement, id, where, note), the paper's value,
    ours (statistic with its 95 % interval, n, the median beside a mean and the mean beside a
    median) and the band."""
    table = table.fillna({"note": ""})
    columns = (
        '<colgroup><col style="width:9.5em"><col><col style="width:9em">'
        '<col style="width:17em"><col style="width:9em"></colgroup>'
        "<thead><tr><th>verdict</th><th>claim</th><th>paper</th>"
        "<th>ours (95 % interval)</th><th>band</th></tr></thead>"
    )
    body = [
        "<h1>Claims</h1>",
        "<p>Every quantitative claim of the two papers (with the slides and the peer review) "
        "and our own checks, judged against the band fixed before the run (docs: statistics "
        "and verdicts). Counts per verdict:</p>",
        scorecard_html(table, href=lambda source: f"#{_slug(source)}"),
    ]
    for source in SOURCES:
        rows = table[table["source"] == source]
        if rows.empty:
            continue
        body.append(f'<h2 id="{_slug(source)}">{html.escape(source)} ({len(rows)})</h2>')
        sections = rows["where"].map(section_of)
        for section in sorted(sections.unique(), key=_section_order):
            chosen = rows[sections == section]
            body.append(f"<h3>{html.escape(section)}</h3>")
            lines = "".join(_claim_row(row) for row in chosen.itertuples(index=False))
            body.append(f'<table class="claims">{columns}<tbody>{lines}</tbody></table>')
    return _page("Claims", "".join(body))


def table_page(table: pd.DataFrame, title: str) -> str:
    """``table`` as one self-contained HTML page, numbers to 3 significant digits."""
    body = table.to_html(
        index=False, na_rep="", float_format=_number, escape=True, border=0, classes="table"
    )
    return _page(title, f"<h1>{html.escape(title)}</h1>{body}")


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{_STYLE}</style></head><body>{body}</body></html>\n"
    )


def landing_scorecard(table: pd.DataFrame) -> str:
    """``results/scorecard.html``: the scorecard for the report's landing page, every count a
    link to the report's claims page."""
    return scorecard_html(table, href=lambda source: "javascript:app.showCategory('Claims')")
