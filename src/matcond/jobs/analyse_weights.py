"""Rule `analyse_weights`: weight file -> per-layer table (parquet, CSV), the entries skipped
and why, the spectra figure."""

import hashlib
import json
import sys

from matcond.checkpoints import analyse_tensors, load_checkpoint, skipped_entries, write_table
from matcond.figures.own_weights import plot_spectra


def main(snakemake) -> None:
    """The job, on the rule's ``snakemake`` object (inputs, outputs, params, wildcards)."""
    settings = json.loads(snakemake.params.settings)
    path = snakemake.input[0]
    entries = load_checkpoint(path)
    table, spectra = analyse_tensors(entries, **settings)
    skipped = skipped_entries(entries, settings["max_elements"])
    with open(path, "rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    metadata = {"name": snakemake.wildcards.name, "path": path, "sha256": sha256, **settings}
    write_table(table, snakemake.output.table, metadata)
    table.to_csv(snakemake.output.csv, index=False)
    skipped.to_csv(snakemake.output.skipped, index=False)
    plot_spectra(spectra, snakemake.wildcards.name, snakemake.output.png, snakemake.output.pdf)
    empty = "" if len(table) else " (no weight tensor of 2 or more dimensions: empty table)"
    print(f"{path}: matrices analysed: {len(table)}{empty}", file=sys.stderr)
    for row in skipped.itertuples():
        print(f"skipped {row.layer} ({row.tensor_shape or '-'}): {row.reason}", file=sys.stderr)
    for row in table[table["note"] != ""].itertuples():
        print(f"flagged {row.layer}: {row.note}", file=sys.stderr)
