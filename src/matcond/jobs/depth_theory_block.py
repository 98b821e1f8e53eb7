"""Rule `depth_theory_block`: one training block's deep linear trials (their saved weights)
-> the depth formula's predictions against their trained products, one row set per trial."""

import json
import sys
import time
from pathlib import Path

import torch

from matcond.condition_number.depth_theory import prediction_rows
from matcond.core.files import load_trial_weights, read_trials, write_parquet


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    torch.set_num_threads(snakemake.threads)
    start = time.perf_counter()
    manifest = snakemake.input.manifest  # its training job's: the block's or a bundle's
    block = json.loads(snakemake.params.trials)
    cell = Path(snakemake.wildcards.block).parent.as_posix()
    trials = [f"{cell}/seed{seed}" for seed in block["seeds"]]
    flags = read_trials([manifest], trials, columns=["seed", "diverged"])
    diverged = flags.groupby("seed")["diverged"].any()  # the block's tables, read once
    loaded = []
    for seed, trial in zip(block["seeds"], trials, strict=True):
        spec = {**block["spec"], "seed": seed}
        weights = load_trial_weights(manifest, trial, json.dumps(spec, sort_keys=True))
        loaded.append((weights, spec, bool(diverged[seed])))
    params = snakemake.params
    table = prediction_rows(loaded, params.bottom_fraction, params.overlap_seeds)
    write_parquet(table, snakemake.output[0])
    seconds = time.perf_counter() - start
    print(f"{len(loaded)} trials in {seconds:.1f} s", file=sys.stderr)
