"""GN matrix of linear residual nets ``F(x) = (W_L + beta I) ... (W_1 + beta I) x`` (§4.3).

``I`` is the rectangular identity ``eye(a_l, a_{l-1})`` of each layer. The Jacobian with respect
to ``W_l`` is that of a deep linear net with the shifted weights ``W_l + beta I`` (the skip term
has no parameters), so the paper's modified Eq. (5) is the deep linear GN structure of the
shifted weights, and every linear solver and the analytic rank apply unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from matcond.gauss_newton._arrays import ArrayLike, as_float64_list, device_of
from matcond.gauss_newton.linear import linear_gn_spectrum
from matcond.gauss_newton.spectrum import GNSpectrum


def residual_weights(weights: Sequence[ArrayLike], beta: float) -> list[torch.Tensor]:
    """The shifted weights ``W_l + beta * eye(a_l, a_{l-1})`` (float64)."""
    mats = as_float64_list(weights, device_of(weights), "weights")
    return [w + beta * torch.eye(*w.shape, dtype=w.dtype, device=w.device) for w in mats]


def residual_gn_spectrum(
    weights: Sequence[ArrayLike],
    beta: float,
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    solver: str = "auto",
    dense_max: int = 4096,
    lanczos_tol: float = 1e-10,
) -> GNSpectrum:
    """:func:`matcond.gauss_newton.linear.linear_gn_spectrum` of the shifted weights."""
    return linear_gn_spectrum(
        residual_weights(weights, beta),
        x,
        sigma=sigma,
        solver=solver,
        dense_max=dense_max,
        lanczos_tol=lanczos_tol,
    )
