"""Rule `gn_sweep`: one GN-paper experiment at initialisation -> its table."""

import json
import sys
import time

import torch

from matcond.core.files import SETTINGS_KEY, write_parquet
from matcond.gauss_newton.reference import warm_up  # noqa: F401 (the job server calls it)
from matcond.gn_experiments.sweeps import run_sweep


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    torch.set_num_threads(snakemake.threads)  # fixed thread count: identical bits on any --cores
    settings = json.loads(snakemake.params.settings)
    start = time.perf_counter()
    table = run_sweep(snakemake.wildcards.sweep, settings["sweep"], settings["data"])
    write_parquet(table, snakemake.output.parquet, {SETTINGS_KEY: snakemake.params.settings})
    table.to_csv(snakemake.output.csv, index=False)
    print(f"{len(table)} rows in {time.perf_counter() - start:.1f} s", file=sys.stderr)
