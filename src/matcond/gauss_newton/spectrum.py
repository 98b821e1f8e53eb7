"""The pseudo-condition number of a PSD matrix from its eigenvalues, and its result record.

The GN matrix is usually singular, so (as in the GN paper, §4 and appendix C) its condition
number is the *pseudo*-condition number ``lambda_max / lambda_min_nonzero``. Which eigenvalues
count as nonzero is decided by a rank ``r``: the ``r`` largest eigenvalues are kept. The rank
comes from an analytic formula where one is known (deep linear and residual nets, see
:mod:`matcond.gauss_newton.linear`) and otherwise from the relative tolerance
:func:`default_rtol`. Every result reports ``gap_at_cut = lambda_r / |lambda_{r+1}|``, the ratio
of the smallest kept to the largest dropped eigenvalue (``inf`` when nothing was dropped): a
large gap (say > 1e6) says that the cut is unambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

EPS = float(torch.finfo(torch.float64).eps)


@dataclass(frozen=True)
class GNSpectrum:
    """Extreme nonzero eigenvalues of a GN matrix and how they were obtained.

    ``rank_source`` is ``"analytic"`` or ``"tolerance"``; ``dim`` is the size of the square
    matrix (or operator) whose spectrum was computed; ``seconds`` is wall-clock time. With the
    ``lanczos`` solver the largest dropped eigenvalue in ``gap_at_cut`` is a power-iteration
    estimate on the complement of the range.
    """

    kappa: float
    lambda_max: float
    lambda_min_nonzero: float
    rank: int
    gap_at_cut: float
    solver: str
    seconds: float
    dim: int
    rank_source: str


def default_rtol(dim: int) -> float:
    """Relative eigenvalue tolerance ``100 * dim * eps`` for a computed ``dim x dim`` Gram matrix.

    Eigenvalues of a formed Gram matrix carry absolute errors of order ``dim * eps * lambda_max``,
    so zero eigenvalues come out at that level; the factor 100 is a safety margin. Eigenvalues
    above ``rtol * lambda_max`` count as nonzero.
    """
    return 100.0 * dim * EPS


def numerical_rank(eigenvalues: torch.Tensor, rtol: float) -> int:
    """Number of eigenvalues above ``rtol * max(eigenvalues)``."""
    top = float(eigenvalues.max())
    return int((eigenvalues > rtol * top).sum()) if top > 0 else 0


def gap_ratio(kept: float, dropped: float) -> float:
    """``kept / |dropped|``, ``inf`` when the dropped eigenvalue is exactly zero."""
    return math.inf if dropped == 0 else kept / abs(dropped)


def spectrum_from_eigenvalues(
    eigenvalues: torch.Tensor,
    *,
    solver: str,
    seconds: float,
    rank: int | None = None,
    rtol: float | None = None,
) -> GNSpectrum:
    """Pseudo-condition number from all eigenvalues of a symmetric PSD matrix.

    With ``rank`` given (an analytic rank) the ``rank`` largest eigenvalues are kept; otherwise
    those above ``rtol * lambda_max`` (``rtol`` defaults to :func:`default_rtol`).
    """
    values = torch.sort(eigenvalues.detach().to(torch.float64).flatten(), descending=True).values
    dim = values.numel()
    source = "analytic" if rank is not None else "tolerance"
    if rank is None:
        rank = numerical_rank(values, default_rtol(dim) if rtol is None else rtol)
    if not 0 < rank <= dim:
        raise ValueError(f"rank {rank} is not in 1..{dim}: the GN matrix is zero or misshapen")
    lam_max = float(values[0])
    lam_min = float(values[rank - 1])
    gap = math.inf if rank == dim else gap_ratio(lam_min, float(values[rank]))
    return GNSpectrum(
        kappa=lam_max / lam_min,
        lambda_max=lam_max,
        lambda_min_nonzero=lam_min,
        rank=rank,
        gap_at_cut=gap,
        solver=solver,
        seconds=seconds,
        dim=dim,
        rank_source=source,
    )
