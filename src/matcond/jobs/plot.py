"""Rule `plot`: the tables a figure draws and the papers' values it marks -> the figure (PNG
and PDF)."""

import json
import math

import pandas as pd

from matcond.claims.evaluate import accepted_values
from matcond.core.arms import MissingRows
from matcond.core.files import read_parquet
from matcond.figures.drawing import drawing
from matcond.figures.style import PAPER_VALUES, warm_up  # noqa: F401 the job server calls it

PER_TRIAL = "_per_trial"  # the suffix of a per-trial table's input name


def with_accepted_values(marks: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The papers' values with, for each mean whose paper's number of trials is known
    (``paper_n``) and whose trials are here, ``ours_low`` and ``ours_high``: the paper values
    that the predictive verdict on means of ``paper_n`` of our trials accepts
    (:func:`matcond.claims.evaluate.accepted_values`, from the claim's pool), which the figure
    draws beside the paper's value."""
    per_trial = {
        name.removesuffix(PER_TRIAL): table
        for name, table in tables.items()
        if name.endswith(PER_TRIAL)
    }
    bands = []
    for mark in marks.to_dict("records"):
        band = (math.nan, math.nan)
        claim = mark.get("claim")
        if isinstance(claim, dict) and claim["table"] in per_trial:
            try:
                band = accepted_values(claim, per_trial, mark["pool"], mark["paper_n"])
            except MissingRows:
                pass
        bands.append(band)
    if not bands:
        return marks
    low, high = zip(*bands, strict=True)
    return marks.assign(ours_low=list(low), ours_high=list(high))


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    tables = {name: read_parquet(path) for name, path in snakemake.input.items()}
    marks = pd.DataFrame(json.loads(snakemake.params.paper_values))
    tables[PAPER_VALUES] = with_accepted_values(marks, tables)
    drawing(snakemake.wildcards.figure)(tables, snakemake.output.png, snakemake.output.pdf)
