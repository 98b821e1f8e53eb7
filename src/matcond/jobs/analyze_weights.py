"""Rule `analyze_weights`: weights (a file, a model folder, a folder of checkpoints) -> table
of its matrices (parquet, CSV, an HTML page for the report), the entries skipped and why, the
figures, and for a folder of checkpoints the component errors of each against the first
(empty for one checkpoint)."""

import hashlib
import json
import sys
from pathlib import Path

from matcond.claims.page import table_page
from matcond.figures.own_weights import plot_layer_spectra, plot_own_weights
from matcond.own_weights import UNREADABLE_FILE, full_analysis, write_table


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    settings = json.loads(snakemake.params.settings)
    path = snakemake.params.path
    table, spectra, skipped, errors = full_analysis(path, **settings, errors=True)
    digests = {}
    for file in snakemake.input:
        with open(file, "rb") as fh:
            digests[file] = hashlib.file_digest(fh, "sha256").hexdigest()
    metadata = {"name": snakemake.wildcards.name, "path": path, "sha256": digests, **settings}
    write_table(table, snakemake.output.table, metadata)
    table.to_csv(snakemake.output.csv, index=False)
    title = f"Your weights: {snakemake.wildcards.name}"
    Path(snakemake.output.html).write_text(table_page(table, title))
    skipped.to_csv(snakemake.output.skipped, index=False)
    write_table(errors, snakemake.output.errors, metadata)
    errors.to_csv(snakemake.output.errors_csv, index=False)
    name = snakemake.wildcards.name
    plot_own_weights(table, spectra, name, snakemake.output.png, snakemake.output.pdf)
    out = snakemake.output
    plot_layer_spectra(table, spectra, name, out.layers_png, out.layers_pdf)
    analysed, left = table["checkpoint"].value_counts(), skipped["checkpoint"].value_counts()
    for checkpoint in spectra:  # every checkpoint, in order
        print(
            f"{path}: {checkpoint}: {analysed.get(checkpoint, 0)} matrices analysed, "
            f"{left.get(checkpoint, 0)} entries skipped (why: {snakemake.output.skipped})",
            file=sys.stderr,
        )
    for row in skipped[skipped["tensor"] == UNREADABLE_FILE].itertuples():
        print(f"{path}: {row.checkpoint} not analysed: {row.reason}", file=sys.stderr)
    if not len(table):
        print(f"{path}: no weight tensor of 2 or more dimensions: empty table", file=sys.stderr)
    for row in table[table["note"] != ""].itertuples():
        print(f"flagged {row.checkpoint}: {row.layer}: {row.note}", file=sys.stderr)
