"""Rule `claims`: per-trial and GN sweep tables -> the claims table (CSV, Markdown, HTML)
and the claims under each reading of the paper's ambiguous settings."""

import json
import sys
from pathlib import Path

import pandas as pd

from matcond.claims.evaluate import evaluate
from matcond.claims.markdown import by_source, summary_markdown, to_markdown
from matcond.claims.page import claims_page, landing_scorecard
from matcond.claims.readings import (
    calibrate,
    evaluate_readings,
    readings_scorecard,
    readings_summary,
    with_sensitivity,
)
from matcond.core.config import load_yaml
from matcond.core.files import read_parquet, write_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    claims = load_yaml(snakemake.input.claims)
    paths = [*snakemake.input.tables, *snakemake.input.gn_tables]
    tables = {Path(p).stem: read_parquet(p) for p in paths}
    differ = json.loads(snakemake.params.settings_differ)
    table = evaluate(claims, tables, differ, workers=snakemake.threads)
    readings = evaluate_readings(claims, tables, workers=snakemake.threads)
    table = with_sensitivity(table, readings, claims.get("sensitivity"))
    table.to_csv(snakemake.output.csv, index=False)
    # the same table, so the damage check can tell a cut CSV (paper_value as text: mixed types)
    write_parquet(table.astype({"paper_value": str}), snakemake.output.parquet)
    sections = by_source(table)
    markdown = "".join(f"## {name}\n\n{to_markdown(part)}\n" for name, part in sections.items())
    Path(snakemake.output.md).write_text(markdown)
    Path(snakemake.output.summary).write_text(summary_markdown(table))
    figures = json.loads(snakemake.params.figures)
    Path(snakemake.output.html).write_text(claims_page(table, figures))
    scorecard = landing_scorecard(table, figures, claims.get("findings"))
    Path(snakemake.output.scorecard).write_text(scorecard)
    print(sections["Scorecard"].to_string(index=False), file=sys.stderr)
    write_parquet(readings, snakemake.output.readings)
    readings.to_csv(snakemake.output.readings_csv, index=False)
    calibration = claims.get("calibration")
    picked = calibrate(readings, calibration) if len(readings) and calibration else None
    (pd.DataFrame() if picked is None else picked).to_csv(snakemake.output.calibration, index=False)
    Path(snakemake.output.readings_md).write_text(readings_markdown(readings, picked, calibration))


def readings_markdown(readings: pd.DataFrame, picked, calibration) -> str:
    """results/readings.md: the calibration's pick, the held-out claims' verdicts per
    reading, then per claim the readings under which it is met."""
    if not len(readings):
        return "No reading of the paper's settings is in this run.\n"
    parts = []
    if picked is not None:
        parts += ["## The calibration (docs/theory.md)", "", to_markdown(picked)]
    parts += [
        "## Held-out claims per reading",
        "",
        to_markdown(readings_scorecard(readings, calibration)),
    ]
    parts += ["## Per claim", "", to_markdown(readings_summary(readings))]
    return "\n".join(parts)
