"""Snakemake entry point of rule `analyse_weights`: weight file -> per-layer table, spectra."""

import hashlib
import json
import sys

from matcond.checkpoints import analyse_checkpoint, write_table
from matcond.execution.joblog import logging_to
from matcond.figures.own_weights import plot_spectra

with logging_to(snakemake.log[0]):
    settings = json.loads(snakemake.params.settings)
    path = snakemake.input[0]
    table, spectra = analyse_checkpoint(path, **settings)
    with open(path, "rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    metadata = {"name": snakemake.wildcards.name, "path": path, "sha256": sha256, **settings}
    write_table(table, snakemake.output.table, metadata)
    plot_spectra(spectra, snakemake.wildcards.name, snakemake.output.png, snakemake.output.pdf)
    empty = "" if len(table) else " (no tensor of 2 or more dimensions: empty table)"
    print(f"{path}: matrices analysed: {len(table)}{empty}", file=sys.stderr)
