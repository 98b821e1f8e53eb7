"""Rule `gn_trial`: one trial's saved weights -> the exact GN κ and its bounds."""

import json
import sys
import time

import torch

from matcond.core.files import SETTINGS_KEY, load_trial_weights, write_parquet
from matcond.gn_experiments.exp7 import exp7_rows


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    torch.set_num_threads(snakemake.threads)
    spec = json.loads(snakemake.params.spec)
    start = time.perf_counter()
    trial = snakemake.wildcards.trial
    weights = load_trial_weights(snakemake.input.manifest, trial, snakemake.params.spec)
    table = exp7_rows(weights, spec, json.loads(snakemake.params.settings))
    table.insert(0, "trial", trial)
    write_parquet(table, snakemake.output[0], {SETTINGS_KEY: snakemake.params.settings})
    print(f"{len(table)} rows in {time.perf_counter() - start:.2f} s", file=sys.stderr)
    print(table.drop(columns="trial").to_string(), file=sys.stderr)
