"""The pseudo-condition number of a PSD matrix from its eigenvalues, and how far to trust it.

The GN matrix is usually singular, so (as in the GN paper, §4 and appendix C) its condition
number is the *pseudo*-condition number ``lambda_max / lambda_min_nonzero``. Which eigenvalues
count as nonzero is decided by a rank ``r``: the ``r`` largest eigenvalues are kept. The rank
comes from an analytic formula where one is known (deep linear and residual nets, see
:mod:`matcond.gauss_newton.linear`) and otherwise from the precision of the computation.

Every result carries its own reliability:

- ``floor``: the smallest eigenvalue the computation can tell from zero, and
  ``relative_error``: the first-order rounding error of ``lambda_min_nonzero`` (hence of κ)
  that goes with it. Eigenvalues of a formed Gram matrix ``F F^T`` carry absolute errors of
  about ``floor = lambda_max * eps * dim``, so ``relative_error = floor / lambda_min``. The
  singular values of the factor ``F`` itself carry absolute errors of about
  ``eps * max(F.shape) * sigma_max``: their squares resolve eigenvalues down to
  ``floor = lambda_max * (eps * max(F.shape))^2``, with ``relative_error =
  2 sqrt(floor / lambda_min)``. That is why the reference and the refinement of a doubtful
  result work from a factor when it fits in memory;
- ``resolved``: ``relative_error <= 1 / TOLERANCE`` (κ good to about 1 %). A κ whose smallest
  eigenvalue sits at the rounding level is noise, even if positive; a non-positive one gives
  ``kappa = inf``, never a negative κ;
- ``rank_agrees``: with an analytic rank, whether the eigenvalues above ``TOLERANCE * floor``
  are exactly that many (None when only one rank is known);
- ``gap_at_cut``: ``lambda_r / |lambda_{r+1}|``, the smallest kept over the largest dropped
  eigenvalue (``inf`` when nothing was dropped). A rank cut by tolerance is *clear* when the gap
  is at least ``TOLERANCE``: otherwise eigenvalues near the floor could be real or noise;
- ``converged`` and ``residual``: for iterative solvers, whether the extreme Ritz values met
  their residual tolerance (the largest relative residual ``||G v - theta v|| / |theta|``).

``reliable`` combines them; :meth:`GNSpectrum.flags` names what failed. Tables carry both.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

EPS = float(torch.finfo(torch.float64).eps)
# Eigenvalues above TOLERANCE * floor count as nonzero; a cut needs a gap of TOLERANCE.
TOLERANCE = 100.0


def check_rank(rank: int, dim: int) -> None:
    """ValueError unless ``0 < rank <= dim``: a zero GN matrix has no condition number."""
    if not 0 < rank <= dim:
        raise ValueError(f"rank {rank} is not in 1..{dim}: the GN matrix is zero or misshapen")


@dataclass(frozen=True)
class GNSpectrum:
    """Extreme nonzero eigenvalues of a GN matrix, how they were obtained, how far they hold.

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
    floor: float = 0.0
    converged: bool = True
    residual: float = 0.0
    rank_agrees: bool | None = None
    from_factor: bool = False

    @property
    def relative_error(self) -> float:
        """First-order rounding error of ``lambda_min_nonzero`` relative to itself."""
        if self.lambda_min_nonzero <= 0:
            return math.inf
        ratio = self.floor / self.lambda_min_nonzero
        return 2 * math.sqrt(ratio) if self.from_factor else ratio

    @property
    def resolved(self) -> bool:
        """Whether the smallest kept eigenvalue is known to ``1 / TOLERANCE`` of itself."""
        return self.relative_error <= 1 / TOLERANCE

    @property
    def clear_cut(self) -> bool:
        """Whether the rank cut is unambiguous (always, for an analytic rank that agrees)."""
        if self.rank_source == "analytic":
            return self.rank_agrees is not False
        return self.gap_at_cut >= TOLERANCE

    @property
    def reliable(self) -> bool:
        """Whether κ can be trusted: converged, resolved, a clear cut, finite and positive."""
        return self.converged and self.resolved and self.clear_cut and 0 < self.kappa < math.inf

    def flags(self) -> str:
        """What makes κ unreliable ('' when it is reliable), e.g. 'below float64 resolution'."""
        reasons = []
        if not self.converged:
            reasons.append(f"solver did not converge (residual {self.residual:.1e})")
        if not self.resolved:
            reasons.append("smallest eigenvalue below float64 resolution")
        if self.rank_source == "analytic" and self.rank_agrees is False:
            reasons.append("numerical rank differs from the analytic rank")
        if self.rank_source == "tolerance" and not self.clear_cut:
            reasons.append(f"ambiguous rank cut (gap {self.gap_at_cut:.3g})")
        if not self.kappa < math.inf:
            reasons.append("infinite")
        return "; ".join(reasons)


def gram_floor(lambda_max: float, dim: int) -> float:
    """Precision of the eigenvalues of a formed ``dim x dim`` Gram matrix."""
    return abs(lambda_max) * EPS * dim


def factor_floor(lambda_max: float, shape: tuple[int, int]) -> float:
    """Precision of squared singular values of a factor ``F`` (``G = F F^T``) of ``shape``."""
    return abs(lambda_max) * (EPS * max(shape)) ** 2


def gap_ratio(kept: float, dropped: float) -> float:
    """``kept / |dropped|``, ``inf`` when the dropped eigenvalue is exactly zero."""
    return math.inf if dropped == 0 else kept / abs(dropped)


def pseudo_kappa(lambda_max: float, lambda_min: float) -> float:
    """``lambda_max / lambda_min``, ``inf`` when ``lambda_min <= 0`` (never negative)."""
    return lambda_max / lambda_min if lambda_min > 0 else math.inf


def spectrum_from_eigenvalues(
    eigenvalues: torch.Tensor,
    *,
    solver: str,
    seconds: float,
    rank: int | None = None,
    floor: float | None = None,
    from_factor: bool = False,
) -> GNSpectrum:
    """Pseudo-condition number from all eigenvalues of a symmetric PSD matrix.

    ``floor`` is the precision of the eigenvalues (default: :func:`gram_floor`, for a formed
    Gram matrix; ``from_factor``: they are squared singular values of a factor). With ``rank``
    given (an analytic rank) the ``rank`` largest eigenvalues are kept and compared with the
    tolerance rank; otherwise those above ``TOLERANCE * floor`` are kept.
    """
    values = torch.sort(eigenvalues.detach().to(torch.float64).flatten(), descending=True).values
    dim = values.numel()
    lam_max = float(values[0])
    floor = gram_floor(lam_max, dim) if floor is None else floor
    cut = TOLERANCE * floor
    tolerance_rank = int((values > cut).sum()) if lam_max > 0 else 0
    source = "analytic" if rank is not None else "tolerance"
    agrees = None if rank is None else rank == tolerance_rank
    if rank is None:
        rank = tolerance_rank
    check_rank(rank, dim)
    lam_min = float(values[rank - 1])
    gap = math.inf if rank == dim else gap_ratio(lam_min, float(values[rank]))
    return GNSpectrum(
        kappa=pseudo_kappa(lam_max, lam_min),
        lambda_max=lam_max,
        lambda_min_nonzero=lam_min,
        rank=rank,
        gap_at_cut=gap,
        solver=solver,
        seconds=seconds,
        dim=dim,
        rank_source=source,
        floor=floor,
        rank_agrees=agrees,
        from_factor=from_factor,
    )


def spectrum_from_factor(
    factor: torch.Tensor, *, solver: str, seconds_from: float, rank: int | None = None
) -> GNSpectrum:
    """The spectrum of ``factor @ factor.T`` from the singular values of ``factor``.

    A factor more than twice as long as it is wide (or the reverse) is first reduced to the
    triangular ``R`` of its Householder QR, which has the same singular values and is backward
    stable like the SVD itself (so :func:`factor_floor` of the original shape still applies);
    LAPACK's SVD of a 1280 x 18688 Jacobian took 11x longer than QR and SVD of ``R``.
    ``seconds_from`` is the ``time.perf_counter()`` at which the computation started.
    """
    rows, cols = factor.shape
    reduced = factor
    if max(rows, cols) > 2 * min(rows, cols):
        reduced = torch.linalg.qr(factor if rows > cols else factor.T, mode="r").R
    singular = torch.linalg.svdvals(reduced)
    eigenvalues = singular**2
    floor = factor_floor(float(eigenvalues.max()), tuple(factor.shape))
    return spectrum_from_eigenvalues(
        eigenvalues,
        solver=solver,
        seconds=time.perf_counter() - seconds_from,
        rank=rank,
        floor=floor,
        from_factor=True,
    )
