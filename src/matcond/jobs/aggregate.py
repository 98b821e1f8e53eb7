"""Rule `aggregate`: trial tables -> one experiment's statistics and its per-trial table."""

import json
import sys

from matcond.core.files import read_trials, write_parquet
from matcond.core.trials import trial_paths
from matcond.stats.summary import aggregate


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    paths = trial_paths(json.loads(snakemake.params.trials))
    swept = json.loads(snakemake.params.swept)
    trials = read_trials(snakemake.input, paths, settings=swept)
    write_parquet(trials, snakemake.output.per_trial)
    table = aggregate(trials, snakemake.wildcards.experiment, swept)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(paths)} trials -> {len(table)} rows", file=sys.stderr)
