"""Rule `gn_trials_table`: per-trial GN tables -> one summary table."""

import sys

import pandas as pd

from matcond.core.files import read_parquet, write_parquet
from matcond.gn_experiments.exp7 import exp7_table


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    rows = pd.concat([read_parquet(path) for path in snakemake.input], ignore_index=True)
    table = exp7_table(rows, snakemake.params.experiment)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(snakemake.input)} trials -> {len(table)} rows", file=sys.stderr)
