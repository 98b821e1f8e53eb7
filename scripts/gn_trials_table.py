"""Snakemake entry point of rule `gn_trials_table`: per-trial GN tables -> one summary table."""

import sys

import pandas as pd

from matcond.execution.joblog import logging_to
from matcond.files import read_parquet, write_parquet
from matcond.gn_experiments.exp7 import exp7_table

with logging_to(snakemake.log[0]):
    rows = pd.concat([read_parquet(path) for path in snakemake.input], ignore_index=True)
    table = exp7_table(rows, snakemake.params.experiment)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(snakemake.input)} trials -> {len(table)} rows", file=sys.stderr)
