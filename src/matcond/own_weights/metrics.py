"""The table of a checkpoint's matrices: one row per matrix (see :mod:`.layers` for which).

A checkpoint without any analysed matrix gives an empty table with the columns below.

Columns (norms are in the units of the weights; everything else is dimensionless):

- ``checkpoint``: the checkpoint's name (its file or folder; one per checkpoint of a run);
  ``step``: the step read from that name (<NA> when it holds no number);
- ``layer``, ``tensor``, ``layer_type``: see :mod:`.layers`; ``tensor_shape``: the stored
  tensor's shape as ``AxBxC``; ``dtype``: its stored dtype; ``rows``, ``cols``: the analysed
  matrix's;
- ``finite``: False if the matrix holds NaN or inf (then every number below is NaN / <NA>);
- ``note``: what to know about the row ('' when nothing): NaN or inf in the weights, a norm
  or ``alpha_xmin`` beyond float64's range (weights of 1e154 and more, or tiny ones; the other
  columns do not depend on the scale and are given), the error that stopped the layer's
  analysis (the other layers are analysed all the same), or why a fused projection was not
  split;
- ``frobenius_norm`` ||W||_F; ``largest_singular_value`` s_1 (named so, not
  ``spectral_norm``, because WeightWatcher's ``spectral_norm`` is s_1^2 and its ``norm`` is
  ||W||_F^2: a column that has a WeightWatcher column's name has its quantity; the mapping
  is in docs/own-weights.md);
- ``condition_number`` s_1 / s_q (inf when numerically rank deficient) and
  ``pseudo_condition_number`` s_1 / s_r, with r = ``numerical_rank`` (#{s_i > rank_rtol s_1});
- ``effective_rank_t{t}`` #{s_i > t s_1}, one column per configured threshold;
- ``stable_rank`` ||W||_F^2 / s_1^2 (NaN for W = 0); ``spectral_gap`` (s_1 - s_2) / s_1;
- ``row_norm_cv`` std / mean of the row norms (population std), ``row_norm_max_over_min``
  max / min of the row norms (inf if a row is zero or the ratio exceeds float64's range), and
  the same two for the columns;
- ``alpha``: the exponent of a power law fitted to the tail of the eigenvalues of W^T W
  (s_i^2 above the numerical rank cut), as WeightWatcher fits it (:func:`power_law_fit`):
  continuous maximum likelihood with x_min chosen by the Kolmogorov-Smirnov distance, which
  is ``alpha_ks_distance``; ``alpha_xmin`` and ``alpha_n_tail`` (eigenvalues >= x_min);
  ``alpha_weighted`` alpha log10(s_1^2) (WeightWatcher's); ``alpha_std_error``
  (alpha - 1) / sqrt(alpha_n_tail), the maximum-likelihood estimate's asymptotic standard
  error; ``alpha_reliable``: the tail holds at least :data:`MIN_TAIL` eigenvalues (the
  search for x_min can settle on a tail of a handful). NaN (and not reliable) for fewer
  than :data:`MIN_EIGENVALUES` eigenvalues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from matcond.condition_number.components import (
    condition_number,
    effective_rank,
    numerical_rank,
    pseudo_condition_number,
    singular_values,
    spectral_gap,
)

if TYPE_CHECKING:
    import pandas as pd
    import torch

    from matcond.own_weights.layers import Matrix

TINY = np.finfo(np.float64).tiny  # the smallest normal float64
# Fewest eigenvalues a power law is fitted to, and fewest in its tail for alpha to count as
# reliable: below about 50 points the maximum-likelihood exponent is biased and its x_min
# poorly determined (Clauset, Shalizi and Newman 2009, section 3.3).
MIN_EIGENVALUES = 10
MIN_TAIL = 50


def as_matrix(tensor: torch.Tensor) -> np.ndarray:
    """The float64 matrix analysed for a 2-D weight tensor (on the CPU)."""
    import torch

    return tensor.detach().to("cpu", torch.float64).numpy()


def result_columns(effective_rank_thresholds: Sequence[float]) -> list[str]:
    """The table's columns, in order."""
    return [
        "checkpoint",
        "step",
        "layer",
        "tensor",
        "layer_type",
        "tensor_shape",
        "dtype",
        "rows",
        "cols",
        "finite",
        "note",
        "frobenius_norm",
        "largest_singular_value",
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
        "alpha_weighted",
        "alpha_std_error",
        "alpha_reliable",
        "alpha_xmin",
        "alpha_ks_distance",
        "alpha_n_tail",
    ]


def power_law_fit(eigenvalues: np.ndarray) -> dict[str, float]:
    """Clauset, Shalizi and Newman's power-law fit to the positive ``eigenvalues``: for every
    candidate x_min (each eigenvalue but the largest) the continuous maximum-likelihood
    exponent of the tail x >= x_min, alpha = 1 + n / sum(log(x / x_min)), and the
    Kolmogorov-Smirnov distance D = max |1 - (x_j / x_min)^(1 - alpha) - j / n| between the
    fitted and the empirical distribution of the tail (j = 0 .. n - 1); the x_min with the
    smallest D is kept (WeightWatcher's fit, made the same way). Returns ``alpha``,
    ``alpha_xmin``, ``alpha_ks_distance`` and ``alpha_n_tail`` (NaN for fewer than
    MIN_EIGENVALUES eigenvalues)."""
    x = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    x = x[x > 0]
    nan = float("nan")
    if x.size < MIN_EIGENVALUES:
        return {"alpha": nan, "alpha_xmin": nan, "alpha_ks_distance": nan, "alpha_n_tail": nan}
    logs = np.log(x)
    n = np.arange(x.size, 1, -1, dtype=np.float64)  # tail sizes for x_min = x[0 .. -2]
    tail_log_sums = np.cumsum(logs[::-1])[::-1][:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        alphas = 1 + n / (tail_log_sums - n * logs[:-1])
    distances = np.full(alphas.size, np.inf)
    for i in np.flatnonzero(np.isfinite(alphas) & (alphas > 1)):
        fitted = 1 - np.exp((1 - alphas[i]) * (logs[i:] - logs[i]))
        distances[i] = np.abs(fitted - np.arange(n[i]) / n[i]).max()
    if not np.isfinite(distances).any():  # every tail is a single repeated value
        return {"alpha": nan, "alpha_xmin": nan, "alpha_ks_distance": nan, "alpha_n_tail": nan}
    best = int(np.argmin(distances))
    return {
        "alpha": float(alphas[best]),
        "alpha_xmin": float(x[best]),
        "alpha_ks_distance": float(distances[best]),
        "alpha_n_tail": float(n[best]),
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
        "largest_singular_value": float(s[0]),
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
    alpha, n_tail = values["alpha"], values["alpha_n_tail"]
    values["alpha_weighted"] = alpha * 2 * (np.log10(s[0]) + e * np.log10(2)) if s[0] else np.nan
    values["alpha_std_error"] = (alpha - 1) / np.sqrt(n_tail)
    values["alpha_reliable"] = bool(n_tail >= MIN_TAIL)
    lost = []
    with np.errstate(over="ignore", under="ignore"):
        for column, power in (
            ("frobenius_norm", e),
            ("largest_singular_value", e),
            ("alpha_xmin", 2 * e),
        ):
            scaled = values[column]
            values[column] = float(np.ldexp(scaled, power))
            if scaled != 0 and not np.isnan(scaled) and not TINY <= abs(values[column]) < np.inf:
                values[column] = float("nan")
                lost.append(column)
        spectrum = None if "largest_singular_value" in lost else np.ldexp(s, e)
    values["note"] = ""
    if lost:
        values["note"] = (
            f"{', '.join(lost)} beyond float64's range (max |w| = {largest:.3g}): NaN; the "
            "other columns do not depend on the scale"
        )
        values["note"] += "; spectrum not drawn" if spectrum is None else ""
    return values, spectrum


def analyze_matrices(
    found: Sequence[Matrix],
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    checkpoint: str = "",
    step: int | None = None,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The table of the matrices ``found`` (:func:`.layers.matrices`) of one checkpoint, and
    the singular values of each that has them, by layer. A matrix whose analysis fails (e.g.
    the SVD does not converge) gets NaN and the error in ``note``."""
    import pandas as pd

    columns = result_columns(effective_rank_thresholds)
    rows, spectra = [], {}
    for m in found:
        w = as_matrix(m.matrix)
        row: dict[str, Any] = {
            "checkpoint": checkpoint,
            "step": step,
            "layer": m.layer,
            "tensor": m.tensor,
            "layer_type": m.layer_type,
            "tensor_shape": "x".join(map(str, m.tensor_shape)),
            "dtype": str(m.matrix.dtype).removeprefix("torch."),
            "rows": w.shape[0],
            "cols": w.shape[1],
            "finite": bool(np.isfinite(w).all()),
            "alpha_reliable": False,
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
                    spectra[m.layer] = spectrum
        row["note"] = "; ".join(n for n in (m.note, row["note"]) if n)
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns)
    int_columns = ["step", "numerical_rank", "alpha_n_tail"]
    int_columns += [c for c in columns if c.startswith("effective_rank_t")]
    numbers = columns[columns.index("frobenius_norm") :]
    dtypes = dict.fromkeys(numbers, "float64") | dict.fromkeys(int_columns, "Int64")
    dtypes |= dict.fromkeys(("checkpoint", "layer", "tensor", "layer_type"), "str")
    dtypes |= {"tensor_shape": "str", "dtype": "str", "note": "str"}
    dtypes |= {"rows": "int64", "cols": "int64", "finite": "bool", "alpha_reliable": "bool"}
    return table.astype(dtypes), spectra
