"""Snakemake entry point of rule `divergence`: every diverged trial of the run, one table."""

import json
import sys
from pathlib import Path

from matcond.claims import to_html
from matcond.execution.joblog import logging_to
from matcond.selection import diverged_trials, divergence_summary

with logging_to(snakemake.log[0]):
    trials = json.loads(snakemake.params.trials)
    table = diverged_trials(trials)
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.html).write_text(to_html(table, "Diverged trials"))
    n_trials = len({path for paths in trials.values() for path in paths})
    print(divergence_summary(table, n_trials), file=sys.stderr)
