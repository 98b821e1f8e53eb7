r"""GN matrix of one-hidden-layer leaky-ReLU nets ``F(x) = W sigma(V x)`` (GN paper §5).

``weights = [V, W]`` (``V``: ``m x d``, ``W``: ``k x m``), ``sigma(z) = max(alpha z, z)`` with
``0 <= alpha <= 1`` and the convention ``sigma'(0) = alpha`` (as torch's autograd). Samples are
the rows of ``x`` (``n x d``; the paper's ``X`` is ``x^T``). With the activation pattern
``Lambda[j, i] = sigma'(V_i x_j)`` and the hidden activations ``H = sigma(x V^T)`` (``n x m``;
``H = Lambda * (x V^T)`` because ``sigma(z) = sigma'(z) z``) two exact forms share the nonzero
eigenvalues of ``G_O``:

* ``nk``: Eq. (10) divided by ``n``, sample-major (index ``j * k + a``):
  ``(1/n) [sum_i (Lambda^i x x^T Lambda^i) (x) (w_i w_i^T) + Gamma (x) I_k]`` with
  ``Gamma = sum_i Lambda^i x V_i^T V_i x^T Lambda^i = H H^T``; block ``(j, l)`` is
  ``(1/n) [(x_j . x_l) W diag(Lambda_j Lambda_l) W^T + (h_j . h_l) I_k]``;
* ``p``: ``G_O`` itself, parameters ordered ``[V.flatten(), W.flatten()]``.

No analytic rank is known here: the rank is cut at the precision of the computation
(:mod:`matcond.gauss_newton.spectrum`), and the eigen-gap at the cut is reported. A result that
is not reliable is recomputed from the singular values of the Jacobian ``J`` (``nk x p``,
:func:`leaky_relu_jacobian`) when it fits in ``FACTOR_BYTES``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

import torch

from matcond.gauss_newton._arrays import ArrayLike, as_float64, as_float64_list, device_of
from matcond.gauss_newton.linear import FACTOR_BYTES
from matcond.gauss_newton.solvers import dense_eigenvalues
from matcond.gauss_newton.spectrum import (
    GNSpectrum,
    spectrum_from_eigenvalues,
    spectrum_from_factor,
)

LeakyForm = Literal["nk", "p"]


def leaky_inputs(
    weights: Sequence[ArrayLike], x: ArrayLike, alpha: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(V, W, x)`` of a one-hidden-layer leaky-ReLU net as float64 tensors on one device,
    after its shape and slope checks (a ValueError naming what is wrong)."""
    if len(weights) != 2:
        raise ValueError("a one-hidden-layer net takes weights [V, W]")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"the leaky-ReLU slope must lie in [0, 1], got {alpha}")
    device = device_of(weights, x)
    v, w = as_float64_list(weights, device, "weights")
    samples = as_float64(x, device, "x")
    if v.shape[1] != samples.shape[1] or w.shape[1] != v.shape[0]:
        raise ValueError(f"shapes V {tuple(v.shape)}, W {tuple(w.shape)}, x {tuple(samples.shape)}")
    return v, w, samples


def activation_pattern(v: torch.Tensor, x: torch.Tensor, alpha: float) -> torch.Tensor:
    """``Lambda[j, i] = sigma'(V_i x_j)``: 1 for a positive pre-activation, else ``alpha``."""
    pre = x @ v.T
    return torch.where(pre > 0, torch.ones_like(pre), torch.full_like(pre, alpha))


def leaky_relu_gn_matrix(
    weights: Sequence[ArrayLike], x: ArrayLike, alpha: float, *, form: LeakyForm = "nk"
) -> torch.Tensor:
    """The dense ``nk`` (Eq. 10, divided by ``n``) or ``p`` form of the module docstring."""
    v, w, samples = leaky_inputs(weights, x, alpha)
    n, d = samples.shape
    k, m = w.shape
    pattern = activation_pattern(v, samples, alpha)
    hidden = pattern * (samples @ v.T)
    if form == "nk":
        scaled = (pattern[:, None, :] * w[None, :, :]).reshape(n * k, m)
        data_gram = torch.kron(
            samples @ samples.T, torch.ones(k, k, dtype=w.dtype, device=w.device)
        )
        eye = torch.eye(k, dtype=w.dtype, device=w.device)
        return ((scaled @ scaled.T) * data_gram + torch.kron(hidden @ hidden.T, eye)) / n
    if form == "p":
        z = (pattern[:, :, None] * samples[:, None, :]).reshape(n, m * d)
        ones = torch.ones(d, d, dtype=w.dtype, device=w.device)
        g_vv = (z.T @ z) * torch.kron(w.T @ w, ones)
        eye = torch.eye(k, dtype=w.dtype, device=w.device)
        g_ww = torch.kron(eye, hidden.T @ hidden)
        cross = (z.T @ hidden).reshape(m, d, m)
        g_vw = torch.einsum("icj,ai->icaj", cross, w).reshape(m * d, k * m)
        top = torch.cat([g_vv, g_vw], dim=1)
        bottom = torch.cat([g_vw.T, g_ww], dim=1)
        return torch.cat([top, bottom], dim=0) / n
    raise ValueError(f"unknown form {form!r}")


def leaky_relu_jacobian(weights: Sequence[ArrayLike], x: ArrayLike, alpha: float) -> torch.Tensor:
    """``J`` (``nk x p``), rows sample-major, columns ``[V.flatten(), W.flatten()]``: the
    factor of both forms (``J J^T / n`` is the ``nk`` form, ``J^T J / n`` the ``p`` form)."""
    v, w, samples = leaky_inputs(weights, x, alpha)
    n, d = samples.shape
    k, m = w.shape
    pattern = activation_pattern(v, samples, alpha)
    hidden = pattern * (samples @ v.T)
    jac_v = torch.einsum("ai,ji,jc->jaic", w, pattern, samples).reshape(n * k, m * d)
    eye = torch.eye(k, dtype=w.dtype, device=w.device)
    jac_w = torch.einsum("ab,ji->jabi", eye, hidden).reshape(n * k, k * m)
    return torch.cat([jac_v, jac_w], dim=1)


def leaky_relu_gn_eigenvalues(
    weights: Sequence[ArrayLike], x: ArrayLike, alpha: float
) -> tuple[torch.Tensor, LeakyForm]:
    """All eigenvalues (ascending) of the smaller of the ``nk`` and ``p`` forms, and which."""
    n, d = torch.as_tensor(x).shape
    k, m = torch.as_tensor(weights[1]).shape
    form: LeakyForm = "nk" if n * k <= m * (d + k) else "p"
    return dense_eigenvalues(leaky_relu_gn_matrix(weights, x, alpha, form=form)), form


def leaky_relu_gn_spectrum(
    weights: Sequence[ArrayLike],
    x: ArrayLike,
    alpha: float,
    *,
    rank: int | None = None,
    factor_bytes: int = FACTOR_BYTES,
) -> GNSpectrum:
    """Pseudo-condition number from the smaller of the ``nk`` and ``p`` forms (dense), refined
    from the Jacobian's singular values when it is not reliable and ``J`` fits."""
    start = time.perf_counter()
    n, d = torch.as_tensor(x).shape
    k, m = torch.as_tensor(weights[1]).shape
    eigenvalues, form = leaky_relu_gn_eigenvalues(weights, x, alpha)
    result = spectrum_from_eigenvalues(
        eigenvalues,
        solver=f"dense_{form}",
        seconds=time.perf_counter() - start,
        rank=rank,
    )
    if result.reliable or 8 * n * k * m * (d + k) > factor_bytes:
        return result
    jac = leaky_relu_jacobian(weights, x, alpha) / n**0.5
    return spectrum_from_factor(jac, solver="jacobian_svd", seconds_from=start, rank=rank)
