"""Snakemake entry point of rule `gn_trial`: one trial's saved weights -> GN κ and bounds."""

import json
import sys
import time

import torch

from matcond.execution.joblog import logging_to
from matcond.files import SETTINGS_KEY, load_weights, write_parquet
from matcond.gn_experiments.exp7 import exp7_rows

with logging_to(snakemake.log[0]):
    torch.set_num_threads(snakemake.threads)
    spec = json.loads(snakemake.params.spec)
    start = time.perf_counter()
    weights = load_weights(snakemake.input.weights, snakemake.params.spec)
    table = exp7_rows(weights, spec, json.loads(snakemake.params.settings))
    table.insert(0, "trial", snakemake.wildcards.trial)
    write_parquet(table, snakemake.output[0], {SETTINGS_KEY: snakemake.params.settings})
    print(f"{len(table)} rows in {time.perf_counter() - start:.2f} s", file=sys.stderr)
    print(table.drop(columns="trial").to_string(), file=sys.stderr)
