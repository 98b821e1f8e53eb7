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
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gauss_newton.linear import partial_products


def flow_kronecker(layers: Sequence[ArrayLike], sigma: ArrayLike | None = None) -> KroneckerSum:
    """``K = sum_l (A_l A_l^T) (x) (C_l^T C_l Sigma)`` of the layers ``[W_1, ..., W_L]``, matrix
    free (row-major ``vec`` of the error; ``sigma`` None: identity), in float64."""
    device = device_of(layers)
    outer, inner = partial_products(as_float64_list(layers, device))
    right = [c.T @ c for c in inner]
    if sigma is not None:
        cov = as_float64(sigma, device)
        right = [gram @ cov for gram in right]
    return KroneckerSum([a @ a.T for a in outer], right)


def _applied(operator: KroneckerSum, error: torch.Tensor) -> torch.Tensor:
    return operator.matmat(error.reshape(-1)).reshape(error.shape)


def flow(
    layers: Sequence[ArrayLike], error: ArrayLike, sigma: ArrayLike | None = None
) -> torch.Tensor:
    """``K(E) = sum_l (A_l A_l^T) E Sigma (C_l^T C_l)``: minus the first-order change of the
    product per unit step of gradient descent on every layer (``sigma`` None: identity)."""
    return _applied(flow_kronecker(layers, sigma), as_float64(error, device_of(layers)))


def flow_operator(layers: Sequence[ArrayLike], sigma: ArrayLike | None = None) -> torch.Tensor:
    """The matrix of :func:`flow` on the row-major ``vec`` of the error (``kd x kd``)."""
    return flow_kronecker(layers, sigma).dense()


def predicted_error(
    stretches: Sequence[tuple[Sequence[ArrayLike], int]],
    error: ArrayLike,
    lr: float,
    sigma: ArrayLike | None = None,
) -> torch.Tensor:
    """The error ``P - W*`` after linearised gradient descent from ``error``: for each
    ``(layers, steps)`` in ``stretches``, ``steps`` steps ``E <- E - lr K(E)`` with the
    operator of ``layers`` held fixed."""
    error = as_float64(error, device_of(stretches[0][0]))
    for layers, steps in stretches:
        operator = flow_kronecker(layers, sigma)
        for _ in range(steps):
            error = error - lr * _applied(operator, error)
    return error


def bottom_overlap(operator: ArrayLike, error: ArrayLike, count: int) -> float:
    """The fraction of ``||E||_F^2`` in the span of the ``count`` eigenvectors of a symmetric
    ``operator`` (``Sigma = I``) with the smallest eigenvalues (``E`` flattened row-major)."""
    device = device_of(operator)
    _, vectors = torch.linalg.eigh(as_float64(operator, device))
    flat = as_float64(error, device).reshape(-1)
    inside = vectors[:, :count].T @ flat
    return float(inside @ inside / (flat @ flat))
