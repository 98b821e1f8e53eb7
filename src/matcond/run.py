"""Run one trial end to end and write its tidy table and its weights.

Table layout (one row per recorded epoch and component; documented in the README):
the trial's scalar settings as columns, then ``epoch``, ``component``, ``trained``, ``target``,
``error``, ``loss``, ``diverged``, ``diverged_epoch``. The full spec is also kept as JSON in the
parquet metadata under ``matcond.spec``. Nothing time-dependent is written, so the same spec
gives byte-identical files on the CPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from safetensors.torch import save_file

from matcond.components import compare
from matcond.targets import make_target
from matcond.training import TrainingOutcome, train_linear

RESULT_COLUMNS = [
    "epoch",
    "component",
    "trained",
    "target",
    "error",
    "loss",
    "diverged",
    "diverged_epoch",
]


def _settings_columns(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if not isinstance(v, list)}


def run_trial(spec: dict, device: torch.device) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Train the trial, compare every recorded snapshot with its target.

    Returns the tidy table and the weights to save (``target``, ``initial``, ``final``).
    """
    target = make_target(spec)
    rows = []

    def on_record(epoch: int, weight: np.ndarray, loss: float) -> None:
        comparisons = compare(
            weight,
            target,
            effective_rank_thresholds=spec["effective_rank_thresholds"],
            rank_rtol=spec["rank_rtol"],
        )
        rows.extend((epoch, c.component, c.trained, c.target, c.error, loss) for c in comparisons)

    outcome: TrainingOutcome = train_linear(target, spec, device, on_record)
    table = pd.DataFrame(rows, columns=RESULT_COLUMNS[:6])
    table["diverged"] = outcome.diverged
    table["diverged_epoch"] = pd.array([outcome.diverged_epoch] * len(table), dtype="Int64")
    settings = pd.DataFrame([_settings_columns(spec)] * len(table))
    table = pd.concat([settings, table], axis=1)
    weights = {"target": target, "initial": outcome.initial, "final": outcome.final}
    return table, weights


def _replace_atomically(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def write_table(table: pd.DataFrame, spec: dict, path: str | Path) -> None:
    """Write the tidy table as parquet (atomically), with the spec in the file metadata."""
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    metadata = {
        **(arrow.schema.metadata or {}),
        b"matcond.spec": json.dumps(spec, sort_keys=True).encode(),
    }
    arrow = arrow.replace_schema_metadata(metadata)
    _replace_atomically(Path(path), lambda p: pq.write_table(arrow, p))


def write_weights(weights: dict[str, np.ndarray], spec: dict, path: str | Path) -> None:
    """Write the weights as float64 safetensors (atomically), with the spec in the metadata."""
    tensors = {
        k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)) for k, v in weights.items()
    }
    meta = {"matcond.spec": json.dumps(spec, sort_keys=True)}
    _replace_atomically(Path(path), lambda p: save_file(tensors, str(p), metadata=meta))
