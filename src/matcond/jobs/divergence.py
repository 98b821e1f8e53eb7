"""Rule `divergence`: every diverged trial of the run, one table (CSV, HTML)."""

import json
import sys
from pathlib import Path

from matcond.claims import to_html
from matcond.selection import diverged_trials, divergence_summary


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    trials = json.loads(snakemake.params.trials)
    table = diverged_trials(trials)
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.html).write_text(to_html(table, "Diverged trials"))
    n_trials = len({path for paths in trials.values() for path in paths})
    print(divergence_summary(table, n_trials), file=sys.stderr)
