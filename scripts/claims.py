"""Snakemake entry point of rule `claims`: experiment tables -> the claims table (CSV, Markdown)."""

import sys
from pathlib import Path

import pandas as pd
import yaml

from matcond.claims import evaluate, to_markdown
from matcond.joblog import logging_to

with logging_to(snakemake.log[0]):
    claims = yaml.safe_load(Path(snakemake.input.claims).read_text())
    tables = {Path(p).stem: pd.read_parquet(p) for p in snakemake.input.tables}
    table = evaluate(claims, tables)
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.md).write_text(to_markdown(table))
    print(table["verdict"].value_counts().to_string(), file=sys.stderr)
