"""The structural components of a weight matrix and their errors (paper §3.1).

This module is the one place where the components are defined; docs/experiments.md repeats the
definitions. Everything is computed in float64 with numpy, whatever dtype the weights had
(a GPU block's singular values in float64 on the GPU: :func:`compare`'s ``spectrum``).

For a matrix W (m x n) with singular values s_1 >= ... >= s_q, q = min(m, n):

- ``row_norms``: the vector (||W[i, :]||_2)_i;           error ||a - b|| / ||b||
- ``col_norms``: the vector (||W[:, j]||_2)_j;           error ||a - b|| / ||b||
- ``singular_values``: the vector (s_1, ..., s_q);       error ||a - b|| / ||b||
- ``spectral_norm``: s_1;                                  error |a - b| / |b|
- ``condition_number``: s_1 / s_q, and ``inf`` when W is numerically rank deficient
  (s_q <= rank_rtol * s_1);                               error |a - b| / |b|
- ``pseudo_condition_number``: s_1 / s_r with r the target's numerical rank (the number of
  its singular values above rank_rtol * s_1), for the trained matrix and the target alike:
  the cut separates the target's signal from the noise a trained low-rank matrix carries in
  its other directions (a matrix without target is cut at its own numerical rank);
                                                           error |a - b| / |b|
- ``log_condition_number``: log(condition_number);       error |a - b| (absolute)
- ``effective_rank_t{t}``: #{i : s_i > t * s_1} for every threshold t;  error |a - b| / |b|
- ``spectral_gap``: (s_1 - s_2) / s_1 (NaN when q = 1); error |a - b| / |b|
- ``frobenius_norm``: ||W||_F;                           error |a - b| / |b|
- ``overall``: the matrix itself;                        error ||W - W*||_F / ||W*||_F

Conventions for non-finite values: a relative error against an infinite or NaN target is NaN
(not comparable); a relative error against a zero target is inf unless both are zero (then 0).
Aggregation counts such values as non-finite and leaves them out of means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ComponentError:
    """One component of one matrix compared with its target.

    ``trained`` and ``target`` are the scalar values (NaN for vector components, whose
    vectors are not stored in the tidy tables).
    """

    component: str
    trained: float
    target: float
    error: float


def relative_error(a: np.ndarray | float, b: np.ndarray | float) -> float:
    """||a - b|| / ||b|| (Euclidean / absolute value); NaN if b is not finite."""
    if isinstance(a, int | float) and isinstance(b, int | float):  # no arrays for two numbers
        if not math.isfinite(b):
            return float("nan")
        num = abs(a - b)
        if b == 0:
            return 0.0 if num == 0.0 else float("inf")
        return float(num / abs(b))
    b = np.asarray(b, dtype=np.float64)
    return _array_error(a, b, _norm_if_finite(b))


def _norm_if_finite(b: np.ndarray) -> float:
    """||b|| (of its entries as one vector), or NaN when an entry is not finite."""
    return float(np.linalg.norm(np.ravel(b))) if np.isfinite(b).all() else float("nan")


def _array_error(a: np.ndarray, b: np.ndarray, b_norm: float) -> float:
    """:func:`relative_error` of two arrays, ``b_norm`` being :func:`_norm_if_finite` of b."""
    if math.isnan(b_norm):
        return float("nan")
    num = float(np.linalg.norm(np.ravel(np.asarray(a, dtype=np.float64) - b)))
    if b_norm == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / b_norm


def singular_values(w: np.ndarray) -> np.ndarray:
    """Singular values of ``w`` in float64, descending."""
    return np.linalg.svd(np.asarray(w, dtype=np.float64), compute_uv=False)


def numerical_rank(s: np.ndarray, rank_rtol: float) -> int:
    """Number of singular values above ``rank_rtol * s_1`` (0 for the zero matrix)."""
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.count_nonzero(s > rank_rtol * s[0]))


def condition_number(s: np.ndarray, rank_rtol: float) -> float:
    """s_1 / s_min, or inf when the matrix is numerically rank deficient."""
    if s.size == 0 or numerical_rank(s, rank_rtol) < s.size:
        return float("inf")
    return float(s[0] / s[-1])


def pseudo_condition_number(s: np.ndarray, rank_rtol: float, rank: int | None = None) -> float:
    """s_1 / s_r, r = ``rank`` or else the numerical rank of ``s`` (NaN for r = 0)."""
    r = numerical_rank(s, rank_rtol) if rank is None else rank
    if r == 0:
        return float("nan")
    return float(s[0] / s[r - 1]) if s[r - 1] > 0 else float("inf")


def effective_rank(s: np.ndarray, threshold: float) -> int:
    """#{i : s_i > threshold * s_1} (the paper uses threshold 0.01)."""
    if s.size == 0:
        return 0
    return int(np.count_nonzero(s > threshold * s[0]))


def spectral_gap(s: np.ndarray) -> float:
    """(s_1 - s_2) / s_1; NaN when there is no second singular value or W = 0."""
    if s.size < 2 or s[0] == 0.0:
        return float("nan")
    return float((s[0] - s[1]) / s[0])


def _log(x: float) -> float:
    return float(np.log(x)) if x > 0 else float("nan")


def component_names(effective_rank_thresholds: Sequence[float]) -> list[str]:
    """Names of the components, in the order :func:`compare` returns them."""
    return [
        "row_norms",
        "col_norms",
        "singular_values",
        "spectral_norm",
        "condition_number",
        "pseudo_condition_number",
        "log_condition_number",
        *(f"effective_rank_t{t:g}" for t in effective_rank_thresholds),
        "spectral_gap",
        "frobenius_norm",
        "overall",
    ]


@dataclass(frozen=True)
class Target:
    """A target's side of every vector component and the norms its errors divide by
    (:func:`_norm_if_finite`), computed once: a trial compares every recorded matrix with one
    fixed target (:func:`describe_target`)."""

    matrix: np.ndarray
    singular_values: np.ndarray
    row_norms: np.ndarray
    col_norms: np.ndarray
    frobenius_norm: float
    norms: dict[str, float]


def describe_target(target: np.ndarray, spectrum: np.ndarray | None = None) -> Target:
    """The :class:`Target` of ``target`` (float64); ``spectrum``: its singular values where
    the caller has them."""
    t = np.asarray(target, dtype=np.float64)
    s = singular_values(t) if spectrum is None else np.asarray(spectrum, dtype=np.float64)
    rows, cols = np.linalg.norm(t, axis=1), np.linalg.norm(t, axis=0)
    vectors = {"row_norms": rows, "col_norms": cols, "singular_values": s, "overall": t}
    norms = {k: _norm_if_finite(v) for k, v in vectors.items()}
    return Target(t, s, rows, cols, float(np.linalg.norm(t)), norms)


def compare(
    trained: np.ndarray,
    target: np.ndarray | Target | None,
    *,
    effective_rank_thresholds: Sequence[float] = (0.01,),
    rank_rtol: float = 1e-10,
    spectrum: np.ndarray | None = None,
) -> list[ComponentError]:
    """Every component of ``trained`` against the same component of ``target`` (a matrix, or
    its :func:`describe_target` where the caller keeps one).

    With ``target=None`` (a matrix that has no target, e.g. one layer of a deep linear net)
    only the trained values are given; targets and errors are NaN. ``spectrum``: the singular
    values of ``trained`` (descending, float64) where the caller has them, e.g. computed on a
    GPU for a whole batch of trials; otherwise numpy's.
    """
    w = np.asarray(trained, dtype=np.float64)
    if target is None:
        nan = float("nan")
        described = compare(
            w,
            w,
            effective_rank_thresholds=effective_rank_thresholds,
            rank_rtol=rank_rtol,
            spectrum=spectrum,
        )
        return [ComponentError(c.component, c.trained, nan, nan) for c in described]
    t = target.matrix if isinstance(target, Target) else np.asarray(target, dtype=np.float64)
    if w.shape != t.shape or w.ndim != 2:
        raise ValueError(f"need two matrices of one shape, got {w.shape} and {t.shape}")
    nan = float("nan")
    if not np.isfinite(w).all():  # a diverged run: nothing is comparable (nor decomposable)
        return [
            ComponentError(name, nan, nan, nan)
            for name in component_names(effective_rank_thresholds)
        ]
    sw = singular_values(w) if spectrum is None else np.asarray(spectrum, dtype=np.float64)
    if not isinstance(target, Target):  # a matrix compared with itself has one spectrum
        target = describe_target(t, sw if t is w else None)
    st = target.singular_values
    target_rank = numerical_rank(st, rank_rtol)

    def scalar(name: str, a: float, b: float) -> ComponentError:
        return ComponentError(name, a, b, relative_error(a, b))

    def vector(name: str, a: np.ndarray, b: np.ndarray) -> ComponentError:
        return ComponentError(name, nan, nan, _array_error(a, b, target.norms[name]))

    kw, kt = condition_number(sw, rank_rtol), condition_number(st, rank_rtol)
    log_kw, log_kt = _log(kw), _log(kt)
    log_err = abs(log_kw - log_kt) if np.isfinite(log_kt) else nan
    return [
        vector("row_norms", np.linalg.norm(w, axis=1), target.row_norms),
        vector("col_norms", np.linalg.norm(w, axis=0), target.col_norms),
        vector("singular_values", sw, st),
        scalar("spectral_norm", float(sw[0]), float(st[0])),
        scalar("condition_number", kw, kt),
        scalar(
            "pseudo_condition_number",
            pseudo_condition_number(sw, rank_rtol, target_rank),
            pseudo_condition_number(st, rank_rtol, target_rank),
        ),
        ComponentError("log_condition_number", log_kw, log_kt, log_err),
        *(
            scalar(f"effective_rank_t{thr:g}", effective_rank(sw, thr), effective_rank(st, thr))
            for thr in effective_rank_thresholds
        ),
        scalar("spectral_gap", spectral_gap(sw), spectral_gap(st)),
        scalar("frobenius_norm", float(np.linalg.norm(w)), target.frobenius_norm),
        vector("overall", w, t),
    ]
