"""Snakemake entry point of rule `plot`: one experiment table -> one figure (PNG and PDF)."""

import sys

import pandas as pd

from matcond.plotting import FIGURES

with open(snakemake.log[0], "w") as sys.stderr:
    table = pd.read_parquet(snakemake.input[0])
    FIGURES[snakemake.wildcards.figure](table, snakemake.output.png, snakemake.output.pdf)
