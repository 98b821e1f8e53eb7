"""Rule `plot`: the tables a figure draws and the papers' values it marks -> the figure (PNG
and PDF)."""

import json

import pandas as pd

from matcond.figures import FIGURES
from matcond.figures.style import PAPER_VALUES, warm_up  # noqa: F401 (the job server calls it)
from matcond.files import read_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    tables = {name: read_parquet(path) for name, path in snakemake.input.items()}
    tables[PAPER_VALUES] = pd.DataFrame(json.loads(snakemake.params.paper_values))
    FIGURES[snakemake.wildcards.figure](tables, snakemake.output.png, snakemake.output.pdf)
