"""The paper's relative errors per component between two checkpoints of one model: each
matrix of a trained checkpoint against the same matrix (the same ``layer`` name, see
:mod:`.layers`) of a reference, such as the initial weights.

The components and their errors are :func:`matcond.condition_number.components.compare`'s, the
numbers the experiments report for a trained matrix against its target: ``row_norms``,
``col_norms``, ``singular_values`` (vector errors ||a - b|| / ||b||), ``spectral_norm``,
``condition_number``, ``pseudo_condition_number``, ``log_condition_number`` (|log a - log b|),
``effective_rank_t{t}``, ``spectral_gap``, ``frobenius_norm`` and ``overall`` (||W - W_ref||_F /
||W_ref||_F).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matcond.own_weights.layers import MAX_ELEMENTS

if TYPE_CHECKING:
    import pandas as pd
    import torch

    from matcond.own_weights.layers import Matrix

COLUMNS = [
    "checkpoint",
    "step",
    "reference",
    "layer",
    "layer_type",
    "component",
    "trained",
    "reference_value",
    "relative_error",
]


def errors_between(
    name: str,
    step: int | None,
    found: Mapping[str, Matrix],
    reference: str,
    reference_found: Mapping[str, Matrix],
    effective_rank_thresholds: Sequence[float],
    rank_rtol: float,
) -> list[tuple]:
    """The rows (:data:`COLUMNS`) of checkpoint ``name``'s matrices ``found`` (by layer)
    against those of the same layer in ``reference_found``; ValueError when no layer name
    matches or the shapes of one differ."""
    from matcond.condition_number.components import compare
    from matcond.own_weights.metrics import as_matrix

    common = [layer for layer in found if layer in reference_found]
    if not common:
        raise ValueError(
            f"no layer of {name!r} is in the reference {reference!r} "
            f"(e.g. {list(found)[:3]} against {list(reference_found)[:3]})"
        )
    rows = []
    for layer in common:
        w, w_ref = as_matrix(found[layer].matrix), as_matrix(reference_found[layer].matrix)
        if w.shape != w_ref.shape:
            raise ValueError(f"layer {layer!r}: {w.shape} here, {w_ref.shape} in {reference!r}")
        errors = compare(
            w, w_ref, effective_rank_thresholds=effective_rank_thresholds, rank_rtol=rank_rtol
        )
        kind = found[layer].layer_type
        rows += [
            (name, step, reference, layer, kind, e.component, e.trained, e.target, e.error)
            for e in errors
        ]
    return rows


def errors_table(rows: list[tuple]) -> pd.DataFrame:
    """The table of :func:`errors_between` rows, typed (``step`` Int64, numbers float64)."""
    import numpy as np
    import pandas as pd

    table = pd.DataFrame(rows, columns=COLUMNS)
    table["step"] = table["step"].astype("Int64")
    numbers = ["trained", "reference_value", "relative_error"]
    return table.astype(dict.fromkeys(numbers, np.float64))


def component_errors(
    trained: str | Path | torch.nn.Module | Mapping[str, Any],
    reference: str | Path | torch.nn.Module | Mapping[str, Any] | None = None,
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
    conv: str = "reshaped",
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per checkpoint of ``trained``, matrix and component: its value, the
    reference's and the error (columns :data:`COLUMNS`; ``trained`` / ``reference_value`` are
    NaN for the vector components). ``reference``: any source of one checkpoint (a file, a
    model folder, a module, a state dict); None: the first checkpoint of ``trained`` (a
    folder of a run's checkpoints, so the errors are against its earliest step). Matrices
    are matched by layer name and must have the same shape; ValueError when no name
    matches, or for a reference of several checkpoints. Checkpoints are loaded one at a
    time."""
    from matcond.own_weights.checkpoints import checkpoint_entries, single_checkpoint
    from matcond.own_weights.layers import matrices

    def found(entries, model_config, types):
        return {m.layer: m for m in matrices(entries, model_config, conv, max_elements, types)}

    checkpoints = checkpoint_entries(trained, config)
    if reference is None:
        first = next(checkpoints)
        ref_name, ref_found = first[0], found(*first[2:])
        checkpoints = itertools.chain([first], checkpoints)
    else:
        ref = single_checkpoint(reference, config, "the reference")
        ref_name, ref_found = ref[0], found(*ref[2:])
    rows = []
    for name, step, *rest in checkpoints:
        rows += errors_between(
            name, step, found(*rest), ref_name, ref_found, effective_rank_thresholds, rank_rtol
        )
    return errors_table(rows)
