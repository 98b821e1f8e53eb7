"""Snakemake entry point of rule `plot`: experiment tables -> one figure (PNG and PDF)."""

from matcond.execution.joblog import logging_to
from matcond.figures import FIGURES
from matcond.files import read_parquet

with logging_to(snakemake.log[0]):
    tables = {name: read_parquet(path) for name, path in snakemake.input.items()}
    FIGURES[snakemake.wildcards.figure](tables, snakemake.output.png, snakemake.output.pdf)
