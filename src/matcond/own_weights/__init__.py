"""Your own weights: a row per weight matrix, as WeightWatcher's ``analyze()`` gives, with the
condition numbers and components of :mod:`matcond.condition_number.components`.

>>> import matcond
>>> table = matcond.analyze("path/to/model.safetensors")   # or a folder, or an nn.Module
>>> matcond.summarize(table)                               # a row per checkpoint

Where the files come from: :mod:`.load`; which matrices and their names: :mod:`.layers`; the
columns: :mod:`.metrics`; errors against a reference checkpoint: :mod:`.compare`; the exact
Gauss-Newton condition number of a linear or leaky-ReLU stack on your data:
:mod:`.gauss_newton`. The rule ``analyze_weights`` runs the same code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matcond.own_weights.checkpoints import checkpoint_entries
from matcond.own_weights.layers import MAX_ELEMENTS

UNREADABLE_FILE = "(the whole file)"  # the skipped table's tensor for a checkpoint not read

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import torch


def _layer_pattern(layers: str | None) -> re.Pattern:
    """The ``layers`` filter of :func:`full_analysis` and :func:`describe` as a pattern (None: one
    that finds every layer name); ValueError naming it when it is not a regular expression."""
    try:
        return re.compile(layers or "")
    except re.error as err:
        raise ValueError(f"layers: {layers!r} is not a regular expression ({err})") from None


def full_analysis(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
    conv: str = "reshaped",
    config: Mapping[str, Any] | None = None,
    errors: bool = False,
    layers: str | None = None,
) -> tuple[pd.DataFrame, dict[str, dict[str, np.ndarray]], pd.DataFrame, pd.DataFrame | None]:
    """The table of ``source`` with one row per weight matrix, the singular values by
    checkpoint and layer, the entries not analysed (``checkpoint``, ``tensor``,
    ``tensor_shape``, ``reason``; tied weights are analysed once, under the first name, and
    listed here under the others; a checkpoint of a folder that cannot be read is one such
    row, and the others are analysed) and, with ``errors``, the component errors of every
    checkpoint against the first (:func:`.compare.component_errors` with no reference; empty
    for a single checkpoint; None without ``errors``), all from one pass that loads each
    checkpoint once.

    ``source``: a weight file, a Hugging Face model folder or shard index, a folder of
    checkpoints of one run (rows of every checkpoint, with its ``step``), an ``nn.Module`` or
    a state dict. ``conv``: ``"reshaped"`` (a matrix per convolution, out x in * kernel
    size) or ``"per_position"`` (a matrix per kernel position); ``config``: the model's
    settings (default: the ``config.json`` beside the weights, or a Hugging Face model's own).
    ``layers``: a regular expression; only the matrices whose layer name it finds
    (:func:`re.search`, e.g. ``"attn"`` or ``"mlp"``) are analysed (None: every one).
    Columns:
    :mod:`matcond.own_weights.metrics`.
    """
    import pandas as pd

    from matcond.own_weights.compare import errors_between, errors_table
    from matcond.own_weights.layers import matrices, skipped_entries
    from matcond.own_weights.metrics import analyze_matrices

    wanted = _layer_pattern(layers)
    tables, spectra, skipped, error_rows, first, unreadable = [], {}, [], [], None, []
    error_settings = (effective_rank_thresholds, rank_rtol)
    for name, step, entries, model_config, types in checkpoint_entries(source, config, unreadable):
        found = [
            m
            for m in matrices(entries, model_config, conv, max_elements, types)
            if wanted.search(m.layer)
        ]
        table, spectra[name] = analyze_matrices(
            found, effective_rank_thresholds, rank_rtol, name, step
        )
        tables.append(table)
        skipped.append(skipped_entries(entries, max_elements).assign(checkpoint=name))
        if not errors:
            continue
        current = (name, step, {m.layer: m for m in found})
        first = first or current
        if len(tables) == 2:  # a second checkpoint: the first against itself too
            error_rows += errors_between(*first, first[0], first[2], *error_settings)
        if len(tables) >= 2:
            error_rows += errors_between(*current, first[0], first[2], *error_settings)
    skipped += [
        pd.DataFrame(
            {
                "checkpoint": [n],
                "tensor": [UNREADABLE_FILE],
                "tensor_shape": [""],
                "reason": [why],
            }
        )
        for n, why in unreadable
    ]
    skipped_table = pd.concat(skipped, ignore_index=True)
    skipped_table = skipped_table[["checkpoint", "tensor", "tensor_shape", "reason"]]
    comparison = errors_table(error_rows) if errors else None
    return pd.concat(tables, ignore_index=True), spectra, skipped_table, comparison


def analyze(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
    conv: str = "reshaped",
    config: Mapping[str, Any] | None = None,
    layers: str | None = None,
) -> pd.DataFrame:
    """One row per weight matrix of ``source``: the table of :func:`full_analysis` (what each
    argument means), without the spectra and the skipped entries."""
    return full_analysis(
        source, effective_rank_thresholds, rank_rtol, max_elements, conv, config, layers=layers
    )[0]


def describe(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    max_elements: int = MAX_ELEMENTS,
    conv: str = "reshaped",
    config: Mapping[str, Any] | None = None,
    layers: str | None = None,
) -> pd.DataFrame:
    """The matrices :func:`analyze` would analyse, without computing a spectrum: a row per
    matrix with ``checkpoint``, ``step``, ``layer``, ``tensor``, ``layer_type``, ``rows``,
    ``cols``, ``tensor_shape`` and ``note`` (arguments as for :func:`full_analysis`)."""
    import pandas as pd

    from matcond.own_weights.layers import matrices

    wanted = _layer_pattern(layers)
    rows = [
        {
            "checkpoint": name,
            "step": step,
            "layer": m.layer,
            "tensor": m.tensor,
            "layer_type": m.layer_type,
            "rows": m.matrix.shape[0],
            "cols": m.matrix.shape[1],
            "tensor_shape": "x".join(map(str, m.tensor_shape)),
            "note": m.note,
        }
        for name, step, entries, model_config, types in checkpoint_entries(source, config)
        for m in matrices(entries, model_config, conv, max_elements, types)
        if wanted.search(m.layer)
    ]
    columns = ["checkpoint", "step", "layer", "tensor", "layer_type", "rows", "cols"]
    return pd.DataFrame(rows, columns=[*columns, "tensor_shape", "note"])


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """A row per checkpoint of an :func:`analyze` table, over its weight matrices (not the
    per-head products ``attention_qk`` / ``attention_ov``; tied weights, one row in the
    table, count once): ``n_matrices``, ``n_flagged``
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

    from matcond.core.files import write_parquet

    write_parquet(table, path, {"matcond.checkpoint": json.dumps(metadata)})
