"""Rule `depth_theory`: deep linear trials' saved weights -> the depth formula's predictions
against the trained products, per trial and per cell."""

import json
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from matcond.depth_theory import prediction_rows, summary_table
from matcond.files import TRIALS_ROOT, load_trial_weights, read_trials, write_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    torch.set_num_threads(snakemake.threads)
    start = time.perf_counter()
    tables = []
    for manifest, block in json.loads(snakemake.params.trials).items():
        cell = Path(manifest).parent.relative_to(TRIALS_ROOT).as_posix()
        trials = [f"{cell}/seed{seed}" for seed in block["seeds"]]
        flags = read_trials([manifest], trials, columns=["seed", "diverged"])
        diverged = flags.groupby("seed")["diverged"].any()  # the block's tables, read once
        for seed, trial in zip(block["seeds"], trials, strict=True):
            spec = {**block["spec"], "seed": seed}
            weights = load_trial_weights(manifest, trial, json.dumps(spec, sort_keys=True))
            fraction = snakemake.params.bottom_fraction
            tables.append(prediction_rows(weights, spec, fraction, bool(diverged[seed])))
    trials = pd.concat(tables, ignore_index=True)
    write_parquet(trials, snakemake.output.per_trial)
    table = summary_table(trials)
    write_parquet(table, snakemake.output.parquet)
    table.to_csv(snakemake.output.csv, index=False)
    seconds = time.perf_counter() - start
    print(f"{len(tables)} trials -> {len(table)} rows in {seconds:.1f} s", file=sys.stderr)
