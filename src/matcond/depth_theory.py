r"""How a deep linear net learns its product: the Gauss-Newton operator in function space.

Setting (docs/depth-theory.md): ``P = W_L ... W_1`` (``k x d``, weights input-first as in
:mod:`matcond.gauss_newton.linear`) learns ``W*`` from inputs with ``E[x x^T] = Sigma`` on the
population loss ``1/2 E||P x - W* x||^2``, whose gradient w.r.t. ``W_l`` is
``A_l^T E Sigma C_l^T`` with ``E = P - W*``, ``A_l = W_L...W_{l+1}`` and ``C_l = W_{l-1}...W_1``.
One gradient step of size ``lr`` on every layer moves the product, to first order in ``lr``, by

    P' - P = -lr sum_l (A_l A_l^T) E Sigma (C_l^T C_l) = -lr K(E),

a linear map of the error whose matrix (row-major ``vec``) is
``sum_l (A_l A_l^T) (x) (C_l^T C_l Sigma)``: the GN paper's Kronecker form of the GN matrix
(:func:`matcond.gauss_newton.linear_gn_matrix`, form ``kd``) up to the similarity
``I (x) Sigma^{1/2}``, so it has the GN matrix's nonzero eigenvalues. For one layer
``K = I (x) Sigma``: every direction of the error shrinks alike. For deeper nets the directions in
the operator's small-eigenvalue subspace shrink slowest; and ``K`` itself changes as the layers
grow. :func:`predicted_error` applies the operator step by step, frozen over stretches of
steps: frozen at the initial weights for the whole run (prediction (a) of the docs), or at each
recorded epoch's saved weights until the next (prediction (b)).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from matcond.gauss_newton._arrays import ArrayLike, as_float64, as_float64_list, device_of
from matcond.gauss_newton.linear import partial_products

Grams = list[tuple[torch.Tensor, torch.Tensor]]


def grams(layers: Sequence[ArrayLike]) -> Grams:
    """``[(A_l A_l^T, C_l^T C_l) for l = 1..L]`` of the layers ``[W_1, ..., W_L]``, float64."""
    outer, inner = partial_products(as_float64_list(layers, device_of(layers)))
    return [(a @ a.T, c.T @ c) for a, c in zip(outer, inner, strict=True)]


def _apply(pairs: Grams, error: torch.Tensor, sigma: torch.Tensor | None) -> torch.Tensor:
    right = error if sigma is None else error @ sigma
    return sum(a @ right @ c for a, c in pairs)


def flow(
    layers: Sequence[ArrayLike], error: ArrayLike, sigma: ArrayLike | None = None
) -> torch.Tensor:
    """``K(E) = sum_l (A_l A_l^T) E Sigma (C_l^T C_l)``: minus the first-order change of the
    product per unit step of gradient descent on every layer (``sigma`` None: identity)."""
    device = device_of(layers)
    cov = None if sigma is None else as_float64(sigma, device)
    return _apply(grams(layers), as_float64(error, device), cov)


def flow_operator(layers: Sequence[ArrayLike], sigma: ArrayLike | None = None) -> torch.Tensor:
    """The matrix of :func:`flow` on the row-major ``vec`` of the error (``kd x kd``)."""
    pairs = grams(layers)
    dim = pairs[0][1].shape[0]
    cov = torch.eye(dim, dtype=torch.float64, device=pairs[0][1].device)
    if sigma is not None:
        cov = as_float64(sigma, cov.device)
    return sum(torch.kron(a, c @ cov) for a, c in pairs)


def predicted_error(
    stretches: Sequence[tuple[Sequence[ArrayLike], int]],
    error: ArrayLike,
    lr: float,
    sigma: ArrayLike | None = None,
) -> torch.Tensor:
    """The error ``P - W*`` after linearised gradient descent from ``error``: for each
    ``(layers, steps)`` in ``stretches``, ``steps`` steps ``E <- E - lr K(E)`` with the
    operator of ``layers`` held fixed."""
    device = device_of(stretches[0][0])
    error = as_float64(error, device)
    cov = None if sigma is None else as_float64(sigma, device)
    for layers, steps in stretches:
        pairs = grams(layers)
        for _ in range(steps):
            error = error - lr * _apply(pairs, error, cov)
    return error


def bottom_overlap(operator: ArrayLike, error: ArrayLike, count: int) -> float:
    """The fraction of ``||E||_F^2`` in the span of the ``count`` eigenvectors of a symmetric
    ``operator`` (``Sigma = I``) with the smallest eigenvalues (``E`` flattened row-major)."""
    device = device_of(operator)
    _, vectors = torch.linalg.eigh(as_float64(operator, device))
    flat = as_float64(error, device).reshape(-1)
    inside = vectors[:, :count].T @ flat
    return float(inside @ inside / (flat @ flat))
