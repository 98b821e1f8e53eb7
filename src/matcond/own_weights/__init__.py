"""Your own weights: a row per weight matrix, as WeightWatcher's ``analyze()`` gives, with the
condition numbers and components of :mod:`matcond.components`.

>>> import matcond
>>> table = matcond.analyze("path/to/model.safetensors")   # or a folder, or an nn.Module
>>> matcond.summarize(table)                               # a row per checkpoint

Where the files come from: :mod:`.load`; which matrices and their names: :mod:`.layers`; the
columns: :mod:`.metrics`; errors against a reference checkpoint: :mod:`.compare`; the exact
Gauss-Newton condition number of a linear or leaky-ReLU stack on your data:
:mod:`.gauss_newton`. The rule ``analyse_weights`` runs the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matcond.own_weights.layers import MAX_ELEMENTS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import torch


def analyse(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
    conv: str = "per_position",
    config: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, dict[str, dict[str, np.ndarray]], pd.DataFrame]:
    """The table of ``source`` with one row per weight matrix, the singular values by
    checkpoint and layer, and the entries not analysed (``checkpoint``, ``tensor``,
    ``tensor_shape``, ``reason``).

    ``source``: a weight file, a Hugging Face model folder or shard index, a folder of
    checkpoints of one run (rows of every checkpoint, with its ``step``), an ``nn.Module`` or
    a state dict. ``conv``: ``"per_position"`` (a matrix per kernel position, WeightWatcher's
    convention) or ``"reshaped"``; ``config``: the model's settings (default: the
    ``config.json`` beside the weights, or a Hugging Face model's own). Columns:
    :mod:`matcond.own_weights.metrics`.
    """
    import pandas as pd

    from matcond.own_weights.layers import matrices, skipped_entries
    from matcond.own_weights.load import checkpoint_entries
    from matcond.own_weights.metrics import analyse_matrices

    tables, spectra, skipped = [], {}, []
    for name, step, entries, model_config, types in checkpoint_entries(source, config):
        found = matrices(entries, model_config, conv, max_elements, types)
        table, spectra[name] = analyse_matrices(
            found, effective_rank_thresholds, rank_rtol, name, step
        )
        tables.append(table)
        skipped.append(skipped_entries(entries, max_elements).assign(checkpoint=name))
    skipped_table = pd.concat(skipped, ignore_index=True)
    skipped_table = skipped_table[["checkpoint", "tensor", "tensor_shape", "reason"]]
    return pd.concat(tables, ignore_index=True), spectra, skipped_table


def analyze(source: str | Path | torch.nn.Module | Mapping[str, Any], **settings) -> pd.DataFrame:
    """One row per weight matrix of ``source``: the table of :func:`analyse`, which lists
    the sources and ``settings`` (``effective_rank_thresholds``, ``rank_rtol``,
    ``max_elements``, ``conv``, ``config``)."""
    return analyse(source, **settings)[0]


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """A row per checkpoint of an :func:`analyze` table, over its weight matrices (not the
    per-head products ``attention_qk`` / ``attention_ov``): ``n_matrices``, ``n_flagged``
    (rows with a note), the median, geometric mean and largest condition number and the layer
    that has it, the median stable rank, and the mean alpha and alpha_weighted over the
    layers whose fit is reliable (``n_alpha_reliable`` of them)."""
    import numpy as np

    def one(rows: pd.DataFrame) -> pd.Series:
        import pandas as pd

        kappa = rows["condition_number"]
        reliable = rows[rows["alpha_reliable"]]
        worst = kappa.idxmax() if kappa.notna().any() else None
        return pd.Series(
            {
                "step": rows["step"].iloc[0],
                "n_matrices": len(rows),
                "n_flagged": int((rows["note"] != "").sum()),
                "condition_number_median": kappa.median(),
                "condition_number_geometric_mean": float(np.exp(np.log(kappa).mean())),
                "condition_number_max": kappa.max(),
                "layer_of_max": "" if worst is None else rows.at[worst, "layer"],
                "stable_rank_median": rows["stable_rank"].median(),
                "n_alpha_reliable": len(reliable),
                "alpha_mean": reliable["alpha"].mean(),
                "alpha_weighted_mean": reliable["alpha_weighted"].mean(),
            }
        )

    weights = table[~table["layer_type"].isin(["attention_qk", "attention_ov"])]
    groups = weights.groupby("checkpoint", sort=False)
    return groups[weights.columns].apply(one).reset_index()


def write_table(table: pd.DataFrame, path: str | Path, metadata: Mapping[str, Any]) -> None:
    """Write the table as checksummed parquet (atomically), ``metadata`` as JSON under
    matcond.checkpoint."""
    import json

    from matcond.files import write_parquet

    write_parquet(table, path, {"matcond.checkpoint": json.dumps(metadata)})
