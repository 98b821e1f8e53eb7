"""The report's pages of the claims: ``results/claims.html`` (every claim, the verdict first
and coloured, the paper's value beside ours with its interval, grouped by paper and section,
with the figures that show it) and ``results/scorecard.html`` (the report's landing page: the
verdict counts per paper, each opening the list of those claims, each claim with links that
show its figures),
written by rule `claims` from the table of :func:`matcond.claims.evaluate.evaluate`; and any
table as a page (:func:`table_page`: the diverged trials).

The HTML comes from the Jinja2 templates in ``templates/`` with escaping on: every text of a
claim, a setting or a table cell reaches the page as text, never as markup."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import jinja2
import pandas as pd

from matcond.claims.check import SOURCES, figure_title
from matcond.claims.evaluate import VERDICTS
from matcond.claims.markdown import interval_text, scorecard, unjudged_claims

COLOURS = {
    "reproduced": "#1a7f37",
    "consistent": "#1b7c83",
    "direction only": "#4d7fc4",
    "inconclusive": "#9a6700",
    "not reproduced": "#cf222e",
    "settings differ": "#8250df",
    "too few trials": "#6e7781",
    "not comparable": "#6e7781",
    "not configured": "#6e7781",
}
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("matcond.claims", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
TEMPLATES.globals["colours"] = COLOURS


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


def _scorecard(table: pd.DataFrame, href: Callable[[str, str], str] | None) -> dict:
    """The verdict counts for the templates' ``scorecard`` macro: one column per source, one
    row per verdict (the first row the number of claims), each cell (source, count, link:
    ``href(source, verdict)``)."""
    card = scorecard(table).set_index("source")
    verdicts = ["claims", *(v for v in VERDICTS if v in card.columns)]
    rows = [
        (
            verdict,
            [
                (source, int(card.loc[source, verdict]), href(source, verdict) if href else "")
                for source in card.index
            ],
        )
        for verdict in verdicts
    ]
    return {"sources": list(card.index), "rows": rows}


def _figure_labels(claim_id: str, figures: Mapping[str, list[str]]) -> list[str]:
    return [figure_title(f) for f in figures.get(claim_id, [])]


def _claim_row(row, figures: Mapping[str, list[str]]) -> dict:
    """One claim as the claims template shows it (``figures``: per claim the figures drawn
    from its table)."""
    ours_notes = []
    if math.isfinite(row.measured):
        n = f"{row.statistic}, n = {row.n:.0f}"
        if row.n_diverged:
            n += f", {row.n_diverged:.0f} diverged left out"
        if isinstance(row.device, str) and row.device:
            n += f", trained on {row.device}"
        ours_notes.append(n)
    if row.rule == "predictive":
        accepted = f"[{_number(row.accepted_low)}, {_number(row.accepted_high)}]"
        ours_notes.append(
            f"a {row.paper_n:.0f}-trial {row.statistic} of ours accepts {accepted}; the "
            f"paper's value: p = {_estimate(row.p_value, row.p_low, row.p_high)}"
        )
    if math.isfinite(row.companion):
        companion = _estimate(row.companion, row.companion_ci_low, row.companion_ci_high)
        name = {"mean": "median", "median": "mean"}.get(row.statistic, "companion")
        ours_notes.append(f"{name}: {companion}")
    if getattr(row, "reading_verdicts", ""):
        ours_notes.append(f"under the admitted readings: {row.reading_verdicts}")
    if row.law_verdict:
        law = _estimate(row.law, row.law_ci_low, row.law_ci_high)
        law_band = f"[{_number(row.law_band_low)}, {_number(row.law_band_high)}]"
        ours_notes.append(
            f"the law, {row.law_statistic}: {law} against {law_band}: {row.law_verdict}"
        )
    has_band = math.isfinite(row.band_low) or math.isfinite(row.band_high)
    return {
        "slug": _slug(row.claim_id),
        "verdict": row.verdict,
        "statement": row.statement,
        "about": [
            row.claim_id,
            row.where,
            *(f"figure {label}" for label in _figure_labels(row.claim_id, figures)),
            *([row.note] if row.note else []),
        ],
        "paper": str(row.paper_value),
        "ours": _estimate(row.measured, row.ci_low, row.ci_high),
        "ours_notes": ours_notes,
        "band": f"[{_number(row.band_low)}, {_number(row.band_high)}]" if has_band else "",
    }


def claims_page(table: pd.DataFrame, figures: Mapping[str, list[str]] | None = None) -> str:
    """``results/claims.html``: the scorecard, then per source and paper section one table of
    its claims, with columns verdict, claim (statement, id, where, note), the paper's value,
    ours (statistic with its 95 % interval, n, the median beside a mean and the mean beside a
    median) and the band; ``figures``: per claim the figures drawn from its table, named
    under it."""
    table = table.fillna({"note": ""})
    figures = figures or {}
    sources = []
    for source in SOURCES:
        rows = table[table["source"] == source]
        if rows.empty:
            continue
        sections = rows["where"].map(section_of)
        sources.append(
            {
                "name": source,
                "slug": _slug(source),
                "count": len(rows),
                "sections": [
                    {
                        "name": section,
                        "rows": [
                            _claim_row(row, figures)
                            for row in rows[sections == section].itertuples(index=False)
                        ],
                    }
                    for section in sorted(sections.unique(), key=_section_order)
                ],
            }
        )
    card = _scorecard(table, href=lambda source, verdict: f"#{_slug(source)}")
    return TEMPLATES.get_template("claims.html").render(title="Claims", card=card, sources=sources)


def table_page(table: pd.DataFrame, title: str) -> str:
    """``table`` as one self-contained HTML page, numbers to 3 significant digits."""
    rows = [
        ["" if pd.isna(v) else _number(v) if isinstance(v, float) else str(v) for v in row]
        for row in table.itertuples(index=False)
    ]
    return TEMPLATES.get_template("table.html").render(
        title=title, columns=[str(c) for c in table.columns], rows=rows
    )


def _group_id(source: str, verdict: str) -> str:
    return f"claims-{_slug(source)}-{_slug(verdict)}"


def _show_figure(figure: str) -> str:
    """A link's target that shows figure ``figure`` with its caption in Snakemake's report
    (its app's view of the figure's PNG, as the figure's own view button does)."""
    if not re.fullmatch(r"\w+", figure):
        raise ValueError(f"not a figure name: {figure!r}")
    path = f"results/figures/{figure}.png"
    return (
        f"javascript:void app.setView({{navbarMode: 'resultinfo', resultPath: '{path}', "
        f"content: 'img', contentPath: results['{path}'].data_uri}})"
    )


def _open_claim(claim_id: str) -> str:
    """A link's target that opens the folded list holding claim ``claim_id`` on the landing
    page and scrolls to it."""
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", claim_id):  # the claims schema's claim_id
        raise ValueError(f"not a claim id: {claim_id!r}")
    item = f"document.getElementById('claim-{claim_id}')"
    return f"javascript:void({item}.closest('details').open = true, {item}.scrollIntoView())"


def landing_scorecard(
    table: pd.DataFrame,
    figures: Mapping[str, list[str]] | None = None,
    findings: list[dict] | None = None,
) -> str:
    """``results/scorecard.html``: the report's landing page's scorecard; the findings
    (``findings``, claims.yaml's: each question with the claims that answer it, their
    paper's value, ours and verdict, linked to the claim below); then per source and verdict
    the list of those claims (folded; a count opens its list), each with the paper's value,
    ours and links that show its figures (``figures``: per claim the figures drawn from its
    table). Where a paper's claim was measured on other settings than the paper's (``settings
    differ``: a smoke test such as the small run), it opens by saying so and where the paper
    run's verdicts and figures are kept."""
    figures = figures or {}
    by_id = {row.claim_id: row for row in table.itertuples(index=False)}

    def shown(row) -> dict:
        return {
            "claim_id": row.claim_id,
            "statement": row.statement,
            "paper": str(row.paper_value),
            "ours": _estimate(row.measured, row.ci_low, row.ci_high),
            "verdict": row.verdict,
            "href": _open_claim(row.claim_id),
        }

    answered = [
        {
            "question": finding["question"],
            "claims": [shown(by_id[c]) for c in finding["claims"] if c in by_id],
        }
        for finding in findings or []
    ]

    def open_list(source: str, verdict: str) -> str:
        if verdict == "claims":
            return "javascript:app.showCategory('Claims')"
        target = f"document.getElementById('{_group_id(source, verdict)}')"
        return f"javascript:void({target}.open = true, {target}.scrollIntoView())"

    card = _scorecard(table, href=open_list)
    groups = []
    for source in card["sources"]:
        for verdict in VERDICTS:
            rows = table[(table["source"] == source) & (table["verdict"] == verdict)]
            if rows.empty:
                continue
            claims = [
                {
                    **shown(row),
                    "figures": [
                        (figure_title(f), _show_figure(f)) for f in figures.get(row.claim_id, [])
                    ],
                }
                for row in rows.itertuples(index=False)
            ]
            groups.append(
                {
                    "id": _group_id(source, verdict),
                    "source": source,
                    "verdict": verdict,
                    "claims": claims,
                }
            )
    unjudged, papers = unjudged_claims(table)
    return TEMPLATES.get_template("scorecard.html").render(
        card=card,
        findings=[f for f in answered if f["claims"]],
        groups=groups,
        smoke_test={"unjudged": unjudged, "papers": papers} if unjudged else None,
    )
