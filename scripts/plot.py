"""Snakemake entry point of rule `plot`: experiment tables -> one figure (PNG and PDF)."""

import sys

import pandas as pd

from matcond.plotting import FIGURES

with open(snakemake.log[0], "w") as sys.stderr:
    tables = {name: pd.read_parquet(path) for name, path in snakemake.input.items()}
    FIGURES[snakemake.wildcards.figure](tables, snakemake.output.png, snakemake.output.pdf)
