"""Snakemake entry point of rule `gn_trial`: one trial's saved weights -> GN κ and bounds."""

import json
import sys
import time

import torch
from safetensors.numpy import load_file

from matcond.execution.joblog import logging_to
from matcond.gn_experiments.exp7 import exp7_rows

with logging_to(snakemake.log[0]):
    torch.set_num_threads(snakemake.threads)
    spec = json.loads(snakemake.params.spec)
    start = time.perf_counter()
    table = exp7_rows(
        load_file(snakemake.input.weights), spec, json.loads(snakemake.params.settings)
    )
    table.insert(0, "trial", snakemake.wildcards.trial)
    table.to_parquet(snakemake.output[0], index=False)
    print(f"{len(table)} rows in {time.perf_counter() - start:.2f} s", file=sys.stderr)
    print(table.drop(columns="trial").to_string(), file=sys.stderr)
