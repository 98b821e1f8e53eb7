"""Snakemake entry point of rule `train`: one trial -> its tidy parquet table and weights."""

import json
import sys
import time

import torch

from matcond.joblog import logging_to
from matcond.run import run_trial, write_table, write_weights
from matcond.training import resolve_device

with logging_to(snakemake.log[0]):
    spec = json.loads(snakemake.params.spec)
    torch.set_num_threads(snakemake.threads)  # fixed thread count: identical bits on any --cores
    device = resolve_device(snakemake.config["device"])
    start = time.perf_counter()
    table, weights = run_trial(spec, device)
    write_table(table, spec, snakemake.output.table)
    write_weights(weights, spec, snakemake.output.weights)
    print(f"device={device} compute_seconds={time.perf_counter() - start:.3f}", file=sys.stderr)
