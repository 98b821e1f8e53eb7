"""Snakemake entry point of rule `gn_plot`: one GN table -> its figure (PNG and PDF)."""

import pandas as pd

from matcond.execution.joblog import logging_to
from matcond.gauss_newton.plots import FIGURES

with logging_to(snakemake.log[0]):
    table = pd.read_parquet(snakemake.input[0])
    FIGURES[snakemake.wildcards.gnfigure](table, snakemake.output.png, snakemake.output.pdf)
