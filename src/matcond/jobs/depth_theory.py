"""Rule `depth_theory`: the per-block tables of rule `depth_theory_block` -> the depth
formula's per-trial table and its table per cell."""

import sys
import time

import pandas as pd

from matcond.condition_number.depth_theory import summary_table
from matcond.core.files import write_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    start = time.perf_counter()
    trials = pd.concat([pd.read_parquet(path) for path in snakemake.input], ignore_index=True)
    write_parquet(trials, snakemake.output.per_trial)
    table = summary_table(trials)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    seconds = time.perf_counter() - start
    print(f"{len(trials)} rows -> {len(table)} rows in {seconds:.1f} s", file=sys.stderr)
