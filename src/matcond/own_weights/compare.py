"""The paper's relative errors per component between two checkpoints of one model: each
matrix of a trained checkpoint against the same matrix (the same ``layer`` name, see
:mod:`.layers`) of a reference, such as the initial weights.

The components and their errors are :func:`matcond.components.compare`'s, the numbers the
experiments report for a trained matrix against its target: ``row_norms``, ``col_norms``,
``singular_values`` (vector errors ||a - b|| / ||b||), ``spectral_norm``, ``condition_number``,
``pseudo_condition_number``, ``log_condition_number`` (|log a - log b|), ``effective_rank_t{t}``,
``spectral_gap``, ``frobenius_norm`` and ``overall`` (||W - W_ref||_F / ||W_ref||_F).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matcond.own_weights.layers import MAX_ELEMENTS

if TYPE_CHECKING:
    import pandas as pd
    import torch

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


def component_errors(
    trained: str | Path | torch.nn.Module | Mapping[str, Any],
    reference: str | Path | torch.nn.Module | Mapping[str, Any] | None = None,
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
    conv: str = "per_position",
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per checkpoint of ``trained``, matrix and component: its value, the
    reference's and the error (columns :data:`COLUMNS`; ``trained`` / ``reference_value`` are
    NaN for the vector components). ``reference``: any source of one checkpoint (a file, a
    model folder, a module, a state dict); None: the first checkpoint of ``trained`` (a
    folder of a run's checkpoints, so the errors are against its earliest step). Matrices
    are matched by layer name and must have the same shape; ValueError when no name
    matches, or for a reference of several checkpoints."""
    import numpy as np
    import pandas as pd

    from matcond.components import compare
    from matcond.own_weights.layers import matrices
    from matcond.own_weights.load import checkpoint_entries
    from matcond.own_weights.metrics import as_matrix

    def found(entries, model_config, types):
        return {m.layer: m for m in matrices(entries, model_config, conv, max_elements, types)}

    checkpoints = checkpoint_entries(trained, config)
    if reference is None:
        ref_name, _, *ref = checkpoints[0]
    else:
        refs = checkpoint_entries(reference, config)
        if len(refs) != 1:
            raise ValueError(f"the reference holds {len(refs)} checkpoints; give one of them")
        ref_name, _, *ref = refs[0]
    ref_matrices = found(*ref)
    rows = []
    for name, step, *rest in checkpoints:
        own = found(*rest)
        common = [layer for layer in own if layer in ref_matrices]
        if not common:
            raise ValueError(
                f"no layer of {name!r} is in the reference {ref_name!r} "
                f"(e.g. {list(own)[:3]} against {list(ref_matrices)[:3]})"
            )
        for layer in common:
            w, w_ref = as_matrix(own[layer].matrix), as_matrix(ref_matrices[layer].matrix)
            if w.shape != w_ref.shape:
                raise ValueError(f"layer {layer!r}: {w.shape} here, {w_ref.shape} in {ref_name!r}")
            errors = compare(
                w,
                w_ref,
                effective_rank_thresholds=effective_rank_thresholds,
                rank_rtol=rank_rtol,
            )
            for e in errors:
                rows.append(
                    (name, step, ref_name, layer, own[layer].layer_type, e.component)
                    + (e.trained, e.target, e.error)
                )
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["step"] = table["step"].astype("Int64")
    numbers = ["trained", "reference_value", "relative_error"]
    return table.astype(dict.fromkeys(numbers, np.float64))
