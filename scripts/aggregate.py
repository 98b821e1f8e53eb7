"""Snakemake entry point of rule `aggregate`: trial tables -> one experiment's statistics."""

import json
import sys

import pandas as pd

from matcond.execution.joblog import logging_to
from matcond.stats import aggregate

with logging_to(snakemake.log[0]):
    trials = pd.concat([pd.read_parquet(path) for path in snakemake.input], ignore_index=True)
    trials.to_parquet(snakemake.output.per_trial, index=False)
    table = aggregate(trials, snakemake.wildcards.experiment, json.loads(snakemake.params.swept))
    table.to_parquet(snakemake.output.parquet, index=False)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(snakemake.input)} trials -> {len(table)} rows", file=sys.stderr)
