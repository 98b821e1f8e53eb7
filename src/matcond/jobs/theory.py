"""Rule `theory`: per-trial tables -> the theory's predicted vs the measured errors."""

import sys
from pathlib import Path

from matcond.condition_number.theory import prediction_table
from matcond.core.files import read_parquet, write_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    tables = {Path(p).stem: read_parquet(p) for p in snakemake.input}
    table = prediction_table(tables)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    agree = int(table["agrees"].sum()) if len(table) else 0
    print(f"{len(table)} rows; prediction inside the interval in {agree}", file=sys.stderr)
