"""Rule `divergence`: every diverged trial of the run, one table (CSV, HTML), read off the
blocks' manifests."""

import json
import sys
from pathlib import Path

from matcond.claims.page import table_page
from matcond.core.arms import diverged_trials, divergence_summary
from matcond.core.trials import trial_paths


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    trials = json.loads(snakemake.params.trials)
    table = diverged_trials(trials, list(snakemake.input))
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.html).write_text(table_page(table, "Diverged trials"))
    n_trials = len({path for cells in trials.values() for path in trial_paths(cells)})
    print(divergence_summary(table, n_trials), file=sys.stderr)
