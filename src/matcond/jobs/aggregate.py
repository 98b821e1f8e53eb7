"""Rule `aggregate`: trial tables -> one experiment's statistics and its per-trial table."""

import json
import sys

import pandas as pd

from matcond.files import read_trial, write_parquet
from matcond.stats import aggregate


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    trials = pd.concat([read_trial(path) for path in snakemake.input], ignore_index=True)
    write_parquet(trials, snakemake.output.per_trial)
    table = aggregate(trials, snakemake.wildcards.experiment, json.loads(snakemake.params.swept))
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(snakemake.input)} trials -> {len(table)} rows", file=sys.stderr)
