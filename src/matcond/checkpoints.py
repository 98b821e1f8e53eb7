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
  zero-length dimension, non-floating tensors (integers, booleans, quantized) and matrices of
  more than ``max_elements`` elements (config key ``checkpoint_max_elements``, default
  :data:`MAX_ELEMENTS`), counted from the shape before any data is read or copied.

A checkpoint without any analysed tensor gives an empty table with the columns below.

Columns (norms are in the units of the weights; everything else is dimensionless):

- ``layer``: the tensor's key (nested dicts joined with ``.``); ``tensor_shape``: its stored
  shape as ``AxBxC``; ``dtype``: its stored dtype; ``rows``, ``cols``: the analysed matrix;
- ``finite``: False if the tensor holds NaN or inf (then every number below is NaN / <NA>);
- ``note``: why numbers of the row are NaN ('' when none is): NaN or inf in the weights, a norm
  or ``alpha_xmin`` beyond float64's range (weights of 1e154 and more, or tiny ones; the other
  columns do not depend on the scale and are given), or the error that stopped the layer's
  analysis (the other layers are analysed all the same);
- ``frobenius_norm`` ||W||_F; ``spectral_norm`` s_1;
- ``condition_number`` s_1 / s_q (inf when numerically rank deficient) and
  ``pseudo_condition_number`` s_1 / s_r, with r = ``numerical_rank`` (#{s_i > rank_rtol s_1});
- ``effective_rank_t{t}`` #{s_i > t s_1}, one column per configured threshold;
- ``stable_rank`` ||W||_F^2 / s_1^2 (NaN for W = 0); ``spectral_gap`` (s_1 - s_2) / s_1;
- ``row_norm_cv`` std / mean of the row norms (population std), ``row_norm_max_over_min``
  max / min of the row norms (inf if a row is zero or the ratio exceeds float64's range), and
  the same two for the columns;
- ``alpha``: the exponent of a power law fitted to the tail of the eigenvalues of W^T W
  (s_i^2 above the numerical rank cut), as WeightWatcher reports it: the ``powerlaw``
  package's continuous maximum-likelihood fit with x_min chosen by the Kolmogorov-Smirnov
  distance, which is ``alpha_ks_distance``; ``alpha_xmin`` and ``alpha_n_tail`` (eigenvalues
  >= x_min). NaN for fewer than :data:`MIN_EIGENVALUES` eigenvalues.

Loading never runs code from the file: safetensors files are parsed as safetensors, anything
else goes through ``torch.load(weights_only=True)``, and a file that needs more than tensors
and plain containers to unpickle is refused with :class:`UnsafeCheckpointError`. Safetensors
and torch zip files are memory-mapped: a tensor's data is read only when it is analysed (a
legacy, non-zip torch file is read whole).
"""

from __future__ import annotations

import codecs
import json
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
from matcond.files import safetensors_header, write_parquet

if TYPE_CHECKING:
    import pandas as pd
    import torch


class CheckpointError(ValueError):
    """A checkpoint file cannot be read as a set of tensors."""


class UnsafeCheckpointError(CheckpointError):
    """A pickled checkpoint needs more than tensors to load (it could run code): refused."""


# Largest matrix analysed by default (config key checkpoint_max_elements; see the schema).
MAX_ELEMENTS = 2**24
# Deepest nesting of containers in a torch file (a training checkpoint has a handful).
MAX_DEPTH = 100
SAFETENSORS_MAX_HEADER = 100_000_000  # the safetensors library's own limit
TEXT_PROBE = 65536  # bytes read to tell a text file
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default format
LEGACY_MAGIC = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)  # torch's legacy format
TINY = np.finfo(np.float64).tiny  # the smallest normal float64
BAD_SAFETENSORS = "is truncated or corrupt safetensors"


def check_checkpoint_paths(config: Mapping[str, Any], base: str | Path | None = None) -> None:
    """Raise ConfigError naming ``checkpoints.<name>`` for every path that is not a file, or
    that :func:`file_problem` finds unusable.

    Relative paths are read from ``base`` (default: the working directory, which is
    Snakemake's ``--directory``).
    """
    root = Path.cwd() if base is None else Path(base)
    problems = []
    for name, path in (config.get("checkpoints") or {}).items():
        full = root / path
        if not full.is_file():
            what = "is a directory, not a file" if full.is_dir() else "does not exist"
        else:
            try:
                what = file_problem(full)
            except OSError as err:
                what = f"cannot be read ({err.strerror})"
        if what:
            problems.append(f"config key checkpoints.{name}: {path!r} {what}")
    if problems:
        raise ConfigError("; ".join(problems) + f" (relative paths are read from {root.resolve()})")


def _safetensors_header_len(head: bytes) -> int | None:
    """The JSON header's length if ``head`` starts like safetensors (an 8-byte little-endian
    length, then ``{``), else None."""
    length = int.from_bytes(head[:8], "little")
    return length if head[8:9] == b"{" and 2 <= length <= SAFETENSORS_MAX_HEADER else None


def file_problem(path: Path) -> str | None:
    """What makes ``path`` unusable as a weight file, found without loading it (None: nothing):
    empty, text, or a safetensors header that does not match the file's size."""
    size = path.stat().st_size
    if size == 0:
        return "is empty (0 bytes)"
    with open(path, "rb") as fh:
        head = fh.read(TEXT_PROBE)
        if _safetensors_header_len(head) is not None:
            header = safetensors_header(path)
            return f"{BAD_SAFETENSORS}: {header}" if isinstance(header, str) else None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) == size)
    except UnicodeDecodeError:
        return None
    return None if b"\0" in head else "looks like a text file, not a weight file"


def _flatten(obj: Any, prefix: str, out: dict[str, Any], depth: int = 0) -> None:
    """Collect the leaves (tensors and anything else) of nested dicts / lists under dotted
    names; CheckpointError for containers nested deeper than MAX_DEPTH."""
    import torch

    if isinstance(obj, torch.Tensor):
        out[prefix or "tensor"] = obj
    elif isinstance(obj, Mapping | list | tuple):
        if depth == MAX_DEPTH:
            raise CheckpointError(
                f"containers nested more than {MAX_DEPTH} levels deep (at {prefix[:60]!r}...): "
                "not a state dict or training checkpoint"
            )
        for key, value in obj.items() if isinstance(obj, Mapping) else enumerate(obj):
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    else:
        out[prefix or "value"] = obj


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The entries of a safetensors file or a torch state dict, tensors on the CPU, by name.

    Nested containers (e.g. ``{"model": state_dict, "optimizer": ..., "epoch": 3}``) are
    flattened to dotted names; non-tensor leaves are kept as they are (see
    :func:`skip_reason`). Never unpickles anything but tensors and plain values. Raises
    CheckpointError saying what is wrong (see :func:`file_problem`; a corrupt or truncated
    torch file; a file that is neither; too deep a nesting).
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist or is not a file")
    if problem := file_problem(path):
        raise CheckpointError(f"checkpoint {str(path)!r} {problem}")
    with open(path, "rb") as fh:
        head = fh.read(len(LEGACY_MAGIC))
    if _safetensors_header_len(head) is not None:
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return dict(load_file(str(path), device="cpu"))
        except SafetensorError as err:
            raise CheckpointError(
                f"checkpoint {str(path)!r} is invalid safetensors: {err}"
            ) from None
    is_zip = head.startswith(ZIP_MAGIC)
    what = "neither safetensors nor a torch file"
    if is_zip or head == LEGACY_MAGIC:
        what = "a corrupt or truncated torch file"
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=is_zip)
    except pickle.UnpicklingError as err:
        found = re.search(r"WeightsUnpickler error:\s*(.*?)(?: Please use|\n|$)", str(err))
        reason = found.group(1) if found else str(err)
        if re.search("GLOBAL|allowlist", reason):  # a function or class, not a bad opcode
            raise UnsafeCheckpointError(
                f"refusing to load checkpoint {str(path)!r}: unpickling it needs more than "
                f"tensors and could run code ({reason}). "
                "Save model.state_dict() with torch.save, or convert the file to safetensors."
            ) from None
        raise CheckpointError(f"checkpoint {str(path)!r} is {what}: {reason}") from None
    except Exception as err:  # torch raises many types for a file that is not a checkpoint
        raise CheckpointError(
            f"checkpoint {str(path)!r} is {what}: {type(err).__name__}: {err}"
        ) from None
    entries: dict[str, Any] = {}
    try:
        _flatten(loaded, "", entries)
    except CheckpointError as err:
        raise CheckpointError(f"checkpoint {str(path)!r}: {err}") from None
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


def skip_reason(name: str, value: Any, max_elements: int = MAX_ELEMENTS) -> str | None:
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
    if (n := value.numel()) > max_elements:  # from the shape: nothing is read or copied
        return (
            f"{value.shape[0]}x{n // value.shape[0]} = {n} elements, above the limit of "
            f"{max_elements} (config key checkpoint_max_elements)"
        )
    return None


def skipped_entries(entries: Mapping[str, Any], max_elements: int = MAX_ELEMENTS) -> pd.DataFrame:
    """One row per entry that is not analysed: ``layer``, ``tensor_shape`` ('' for a
    non-tensor), ``reason``."""
    import pandas as pd

    rows = [
        {"layer": name, "tensor_shape": "x".join(map(str, getattr(v, "shape", ()))), "reason": r}
        for name, v in entries.items()
        if (r := skip_reason(name, v, max_elements)) is not None
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
        "note",
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


def _norms(w: np.ndarray, axis: int) -> np.ndarray:
    """The Euclidean norms of the rows (axis 1) or columns (axis 0), each vector scaled by a
    power of two (exactly) first, so that no square underflows or overflows."""
    e = np.frexp(np.abs(w).max(axis=axis, keepdims=True))[1]
    return np.ldexp(np.linalg.norm(np.ldexp(w, -e), axis=axis), e.squeeze(axis))


def matrix_row(
    w: np.ndarray, effective_rank_thresholds: Sequence[float], rank_rtol: float
) -> tuple[dict[str, Any], np.ndarray | None]:
    """The spectral columns (and ``note``) of one finite float64 matrix, and its singular values.

    Computed on W 2^-e, 2^e the power of two just above max |w|: an exact scaling under which
    no square overflows or underflows, and which leaves every column but the norms and
    ``alpha_xmin`` unchanged. Those are scaled back, NaN (and the singular values None) where
    the result is outside float64's normal range; the note says so.
    """
    largest = float(np.abs(w).max())
    e = int(np.frexp(largest)[1])
    w = np.ldexp(w, -e)
    s = singular_values(w)
    frob = float(np.linalg.norm(w))
    rank = numerical_rank(s, rank_rtol)
    row_cv, row_ratio = _spread(_norms(w, 1))
    col_cv, col_ratio = _spread(_norms(w, 0))
    values = {
        "frobenius_norm": frob,
        "spectral_norm": float(s[0]),
        "condition_number": condition_number(s, rank_rtol),
        "pseudo_condition_number": pseudo_condition_number(s, rank_rtol),
        "numerical_rank": rank,
        **{f"effective_rank_t{t:g}": effective_rank(s, t) for t in effective_rank_thresholds},
        "stable_rank": frob**2 / float(s[0]) ** 2 if s[0] > 0 else float("nan"),
        "spectral_gap": spectral_gap(s),
        "row_norm_cv": row_cv,
        "row_norm_max_over_min": row_ratio,
        "col_norm_cv": col_cv,
        "col_norm_max_over_min": col_ratio,
        **power_law_fit(s[:rank] ** 2),
    }
    lost = []
    with np.errstate(over="ignore", under="ignore"):
        for column, power in (("frobenius_norm", e), ("spectral_norm", e), ("alpha_xmin", 2 * e)):
            scaled = values[column]
            values[column] = float(np.ldexp(scaled, power))
            if scaled != 0 and not np.isnan(scaled) and not TINY <= abs(values[column]) < np.inf:
                values[column] = float("nan")
                lost.append(column)
        spectrum = None if "spectral_norm" in lost else np.ldexp(s, e)
    values["note"] = ""
    if lost:
        values["note"] = (
            f"{', '.join(lost)} beyond float64's range (max |w| = {largest:.3g}): NaN; the "
            "other columns do not depend on the scale"
        )
        values["note"] += "; spectrum not drawn" if spectrum is None else ""
    return values, spectrum


def analyse_tensors(
    entries: Mapping[str, Any],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The per-layer table of the weight tensors among ``entries`` (those without a
    :func:`skip_reason`) and the singular values of each layer that has them. A layer whose
    analysis fails (e.g. the SVD does not converge) gets NaN and the error in ``note``."""
    import pandas as pd

    columns = result_columns(effective_rank_thresholds)
    rows, spectra = [], {}
    for name, tensor in entries.items():
        if skip_reason(name, tensor, max_elements) is not None:
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
        row["note"] = "" if row["finite"] else "NaN or inf in the weights"
        if row["finite"]:
            try:
                values, spectrum = matrix_row(w, effective_rank_thresholds, rank_rtol)
            except (ArithmeticError, ValueError) as err:  # LinAlgError is a ValueError
                row["note"] = f"analysis failed: {type(err).__name__}: {err}"
            else:
                row.update(values)
                if spectrum is not None:
                    spectra[name] = spectrum
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns)
    int_columns = ["numerical_rank", *(c for c in columns if c.startswith("effective_rank_t"))]
    int_columns.append("alpha_n_tail")
    numbers = columns[columns.index("frobenius_norm") :]
    dtypes = dict.fromkeys(numbers, "float64") | dict.fromkeys(int_columns, "Int64")
    dtypes |= {"layer": "str", "tensor_shape": "str", "dtype": "str", "note": "str"}
    dtypes |= {"rows": "int64", "cols": "int64", "finite": "bool"}
    return table.astype(dtypes), spectra


def analyse_checkpoint(
    path: str | Path,
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    max_elements: int = MAX_ELEMENTS,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Load ``path`` (see :func:`load_checkpoint`) and analyse it (see :func:`analyse_tensors`)."""
    return analyse_tensors(
        load_checkpoint(path), effective_rank_thresholds, rank_rtol, max_elements
    )


def write_table(table: pd.DataFrame, path: str | Path, metadata: Mapping[str, Any]) -> None:
    """Write the table as checksummed parquet (atomically), ``metadata`` as JSON under
    matcond.checkpoint."""
    write_parquet(table, path, {"matcond.checkpoint": json.dumps(metadata)})
