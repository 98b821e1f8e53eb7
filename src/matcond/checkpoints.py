"""Analyse the weight matrices of a user's own checkpoint: one row per layer.

The interface mirrors WeightWatcher's ``analyze()``: one DataFrame, one row per weight matrix.
Every spectral quantity is taken from :mod:`matcond.components` (float64 SVD), so a layer's
condition number here is the same number the experiments report.

Which tensors are analysed (in the file's order):

- 2-D tensors as they are (rows x cols = out x in for ``nn.Linear``);
- tensors of 3 or more dimensions as convolution kernels (out, in, *kernel), reshaped to
  out x (in * prod(kernel)): Conv1d (3-D), Conv2d (4-D) and Conv3d (5-D) alike. A 3-D tensor
  that is really a stack of matrices (e.g. experts) is flattened the same way, not split;
- skipped, and listed with the reason by :func:`skipped_entries`: optimizer and scheduler
  state (entries under a key such as ``optimizer`` or ``optimizer_state_dict``, or an
  optimizer's ``state.{i}.exp_avg`` and the like: Adam's moments are not weights), normalisation
  buffers (``running_mean``, ``running_var``, ``num_batches_tracked``), entries that are not
  tensors (epoch counters, notes), 0-D and 1-D tensors (biases, norm scales), tensors with a
  zero-length dimension and non-floating tensors (integers, booleans, quantized).

A checkpoint without any analysed tensor gives an empty table with the columns below.

Columns (norms are in the units of the weights; everything else is dimensionless):

- ``layer``: the tensor's key (nested dicts joined with ``.``); ``tensor_shape``: its stored
  shape as ``AxBxC``; ``dtype``: its stored dtype; ``rows``, ``cols``: the analysed matrix;
- ``finite``: False if the tensor holds NaN or inf (then every number below is NaN / <NA>);
- ``frobenius_norm`` ||W||_F; ``spectral_norm`` s_1;
- ``condition_number`` s_1 / s_q (inf when numerically rank deficient) and
  ``pseudo_condition_number`` s_1 / s_r, with r = ``numerical_rank`` (#{s_i > rank_rtol s_1});
- ``effective_rank_t{t}`` #{s_i > t s_1}, one column per configured threshold;
- ``stable_rank`` ||W||_F^2 / s_1^2 (NaN for W = 0); ``spectral_gap`` (s_1 - s_2) / s_1;
- ``row_norm_cv`` std / mean of the row norms (population std), ``row_norm_max_over_min``
  max / min of the row norms (inf if a row is zero), and the same two for the columns;
- ``alpha``: the exponent of a power law fitted to the tail of the eigenvalues of W^T W
  (s_i^2 above the numerical rank cut), as WeightWatcher reports it: the ``powerlaw``
  package's continuous maximum-likelihood fit with x_min chosen by the Kolmogorov-Smirnov
  distance, which is ``alpha_ks_distance``; ``alpha_xmin`` and ``alpha_n_tail`` (eigenvalues
  >= x_min). NaN for fewer than :data:`MIN_EIGENVALUES` eigenvalues.

Loading never runs code from the file: safetensors files are parsed as safetensors, anything
else goes through ``torch.load(weights_only=True)``, and a file that needs more than tensors
and plain containers to unpickle is refused with :class:`UnsafeCheckpointError`.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from matcond.components import (
    condition_number,
    effective_rank,
    numerical_rank,
    pseudo_condition_number,
    singular_values,
    spectral_gap,
)
from matcond.config import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    import torch


class CheckpointError(ValueError):
    """A checkpoint file cannot be read as a set of tensors."""


class UnsafeCheckpointError(CheckpointError):
    """A pickled checkpoint needs more than tensors to load (it could run code): refused."""


def check_checkpoint_paths(config: Mapping[str, Any], base: str | Path | None = None) -> None:
    """Raise ConfigError naming ``checkpoints.<name>`` for every path that is not a file.

    Relative paths are read from ``base`` (default: the working directory, which is
    Snakemake's ``--directory``).
    """
    root = Path.cwd() if base is None else Path(base)
    problems = []
    for name, path in (config.get("checkpoints") or {}).items():
        full = root / path
        if not full.is_file():
            what = "is a directory, not a file" if full.is_dir() else "does not exist"
            problems.append(f"config key checkpoints.{name}: {path!r} {what}")
    if problems:
        raise ConfigError("; ".join(problems) + f" (relative paths are read from {root.resolve()})")


def _is_safetensors(path: Path) -> bool:
    """True if the file starts like safetensors: an 8-byte header length, then a JSON object."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(9)
    if len(head) < 9:
        return False
    header_len = int.from_bytes(head[:8], "little")
    return 0 < header_len <= size - 8 and head[8:9] == b"{"


def _flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    """Collect the leaves (tensors and anything else) of nested dicts / lists under dotted
    names."""
    import torch

    if isinstance(obj, torch.Tensor):
        out[prefix or "tensor"] = obj
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            _flatten(value, f"{prefix}.{i}" if prefix else str(i), out)
    else:
        out[prefix or "value"] = obj


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The entries of a safetensors file or a torch state dict, tensors on the CPU, by name.

    Nested containers (e.g. ``{"model": state_dict, "optimizer": ..., "epoch": 3}``) are
    flattened to dotted names; non-tensor leaves are kept as they are (see
    :func:`skip_reason`). Never unpickles anything but tensors and plain values.
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist or is not a file")
    if _is_safetensors(path):
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return dict(load_file(str(path), device="cpu"))
        except SafetensorError as err:
            raise CheckpointError(f"checkpoint {str(path)!r}: invalid safetensors: {err}") from None
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if "Weights only load failed" not in str(err):
            raise CheckpointError(f"checkpoint {str(path)!r} is corrupt: {err}") from None
        reason = re.search(r"WeightsUnpickler error: *(.*?)(?: Please use|\n|$)", str(err))
        raise UnsafeCheckpointError(
            f"refusing to load checkpoint {str(path)!r}: unpickling it needs more than tensors "
            f"and could run code ({reason.group(1) if reason else 'see torch.load'}). "
            "Save model.state_dict() with torch.save, or convert the file to safetensors."
        ) from None
    except Exception as err:  # torch raises many types for a file that is not a checkpoint
        raise CheckpointError(
            f"checkpoint {str(path)!r} is neither safetensors nor a torch file: "
            f"{type(err).__name__}: {err}"
        ) from None
    entries: dict[str, Any] = {}
    _flatten(loaded, "", entries)
    return entries


# Keys whose entries are optimizer / scheduler state, and an optimizer's per-parameter state.
OPTIMIZER_KEYS = {
    "optimizer",
    "optimizers",
    "optimizer_state",
    "optimizer_state_dict",
    "optim",
    "opt_state",
    "scheduler",
    "lr_scheduler",
    "scaler",
    "grad_scaler",
}
OPTIMIZER_STATE = re.compile(r"(^|\.)state\.\d+\.[a-z_]+$")
BUFFERS = {"running_mean", "running_var", "num_batches_tracked"}


def skip_reason(name: str, value: Any) -> str | None:
    """Why entry ``name`` of a checkpoint is not analysed as a weight matrix (None: it is)."""
    import torch

    if not isinstance(value, torch.Tensor):
        return f"not a tensor ({type(value).__name__})"
    if OPTIMIZER_KEYS & set(name.split(".")) or OPTIMIZER_STATE.search(name):
        return "optimizer or scheduler state"
    if name.rsplit(".", 1)[-1] in BUFFERS:
        return "normalisation buffer"
    if value.ndim < 2:
        return f"{value.ndim}-D tensor (bias, scale or counter)"
    if value.numel() == 0:
        return "empty tensor"
    if not value.is_floating_point():
        return f"not floating point ({str(value.dtype).removeprefix('torch.')})"
    return None


def skipped_entries(entries: Mapping[str, Any]) -> pd.DataFrame:
    """One row per entry that is not analysed: ``layer``, ``tensor_shape`` ('' for a
    non-tensor), ``reason``."""
    import pandas as pd

    rows = [
        {"layer": name, "tensor_shape": "x".join(map(str, getattr(v, "shape", ()))), "reason": r}
        for name, v in entries.items()
        if (r := skip_reason(name, v)) is not None
    ]
    return pd.DataFrame(rows, columns=["layer", "tensor_shape", "reason"])


def as_matrix(tensor: torch.Tensor) -> np.ndarray:
    """The float64 matrix analysed for a weight tensor: out x (everything else)."""
    import torch

    return tensor.detach().to("cpu", torch.float64).reshape(tensor.shape[0], -1).numpy()


def result_columns(effective_rank_thresholds: Sequence[float]) -> list[str]:
    """The table's columns, in order."""
    return [
        "layer",
        "tensor_shape",
        "dtype",
        "rows",
        "cols",
        "finite",
        "frobenius_norm",
        "spectral_norm",
        "condition_number",
        "pseudo_condition_number",
        "numerical_rank",
        *(f"effective_rank_t{t:g}" for t in effective_rank_thresholds),
        "stable_rank",
        "spectral_gap",
        "row_norm_cv",
        "row_norm_max_over_min",
        "col_norm_cv",
        "col_norm_max_over_min",
        "alpha",
        "alpha_xmin",
        "alpha_ks_distance",
        "alpha_n_tail",
    ]


MIN_EIGENVALUES = 10


def power_law_fit(eigenvalues: np.ndarray) -> dict[str, float]:
    """``alpha``, ``alpha_xmin``, ``alpha_ks_distance``, ``alpha_n_tail`` of the ``powerlaw``
    package's fit to the positive ``eigenvalues`` (NaN for fewer than MIN_EIGENVALUES)."""
    values = np.asarray(eigenvalues, dtype=np.float64)
    values = values[values > 0]
    nan = float("nan")
    if values.size < MIN_EIGENVALUES:
        return {"alpha": nan, "alpha_xmin": nan, "alpha_ks_distance": nan, "alpha_n_tail": nan}
    import powerlaw

    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # raised inside powerlaw 2.0
        fit = powerlaw.Fit(values, verbose=False)
    return {
        "alpha": float(fit.power_law.alpha),
        "alpha_xmin": float(fit.xmin),
        "alpha_ks_distance": float(fit.power_law.D),
        "alpha_n_tail": float((values >= fit.xmin).sum()),
    }


def _spread(norms: np.ndarray) -> tuple[float, float]:
    """(std / mean, max / min) of a vector of norms; NaN / inf where undefined."""
    mean, low, high = float(norms.mean()), float(norms.min()), float(norms.max())
    cv = float(norms.std()) / mean if mean > 0 else float("nan")
    if low > 0:
        ratio = high / low
    else:
        ratio = float("inf") if high > 0 else float("nan")
    return cv, ratio


def matrix_row(
    w: np.ndarray, effective_rank_thresholds: Sequence[float], rank_rtol: float
) -> tuple[dict[str, Any], np.ndarray]:
    """The spectral columns of one finite float64 matrix, and its singular values."""
    s = singular_values(w)
    frob = float(np.linalg.norm(w))
    row_cv, row_ratio = _spread(np.linalg.norm(w, axis=1))
    col_cv, col_ratio = _spread(np.linalg.norm(w, axis=0))
    values = {
        "frobenius_norm": frob,
        "spectral_norm": float(s[0]),
        "condition_number": condition_number(s, rank_rtol),
        "pseudo_condition_number": pseudo_condition_number(s, rank_rtol),
        "numerical_rank": numerical_rank(s, rank_rtol),
        **{f"effective_rank_t{t:g}": effective_rank(s, t) for t in effective_rank_thresholds},
        "stable_rank": frob**2 / float(s[0]) ** 2 if s[0] > 0 else float("nan"),
        "spectral_gap": spectral_gap(s),
        "row_norm_cv": row_cv,
        "row_norm_max_over_min": row_ratio,
        "col_norm_cv": col_cv,
        "col_norm_max_over_min": col_ratio,
        **power_law_fit(s[: numerical_rank(s, rank_rtol)] ** 2),
    }
    return values, s


def analyse_tensors(
    entries: Mapping[str, Any],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The per-layer table of the weight tensors among ``entries`` (those without a
    :func:`skip_reason`) and the singular values of each finite layer."""
    import pandas as pd

    columns = result_columns(effective_rank_thresholds)
    rows, spectra = [], {}
    for name, tensor in entries.items():
        if skip_reason(name, tensor) is not None:
            continue
        w = as_matrix(tensor)
        row: dict[str, Any] = {
            "layer": name,
            "tensor_shape": "x".join(map(str, tensor.shape)),
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "rows": w.shape[0],
            "cols": w.shape[1],
            "finite": bool(np.isfinite(w).all()),
        }
        if row["finite"]:
            values, spectra[name] = matrix_row(w, effective_rank_thresholds, rank_rtol)
            row.update(values)
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns)
    int_columns = ["numerical_rank", *(c for c in columns if c.startswith("effective_rank_t"))]
    int_columns.append("alpha_n_tail")
    dtypes = {c: "float64" for c in columns[6:]} | dict.fromkeys(int_columns, "Int64")
    dtypes |= {"layer": "str", "tensor_shape": "str", "dtype": "str"}
    dtypes |= {"rows": "int64", "cols": "int64", "finite": "bool"}
    return table.astype(dtypes), spectra


def analyse_checkpoint(
    path: str | Path,
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Load ``path`` (see :func:`load_checkpoint`) and analyse it (see :func:`analyse_tensors`)."""
    return analyse_tensors(load_checkpoint(path), effective_rank_thresholds, rank_rtol)


def write_table(table: pd.DataFrame, path: str | Path, metadata: Mapping[str, Any]) -> None:
    """Write the table as parquet (atomically), ``metadata`` as JSON under matcond.checkpoint."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    meta = {**(arrow.schema.metadata or {}), b"matcond.checkpoint": json.dumps(metadata).encode()}
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(arrow.replace_schema_metadata(meta), tmp)
    os.replace(tmp, path)
