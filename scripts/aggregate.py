"""Snakemake entry point of rule `aggregate`: trial tables -> one experiment's statistics."""

import json
import sys

import pandas as pd

from matcond.execution.joblog import logging_to
from matcond.files import read_trial, write_parquet
from matcond.stats import aggregate

with logging_to(snakemake.log[0]):
    trials = pd.concat([read_trial(path) for path in snakemake.input], ignore_index=True)
    write_parquet(trials, snakemake.output.per_trial)
    table = aggregate(trials, snakemake.wildcards.experiment, json.loads(snakemake.params.swept))
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(snakemake.input)} trials -> {len(table)} rows", file=sys.stderr)
