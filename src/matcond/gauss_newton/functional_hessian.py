r"""Appendix F: the functional Hessian of a one-hidden-layer linear net ``F(x) = W V x``.

Under the MSE loss ``(1/2n) sum_i ||W V x_i - y_i||^2`` the loss Hessian is ``G_O + H_F`` with
``H_F = (1/n) sum_i sum_c delta_ic d^2 F_c(x_i)`` (``delta = F(x) - y``). For ``W V x`` it is
``[[0, Omega (x) I_m], [Omega^T (x) I_m, 0]]`` in the paper's ordering, ``Omega = (1/n) sum_i
delta_i x_i^T`` (``k x d``), so its nonzero eigenvalues are ``+-sigma_i(Omega)``, each ``m``
times, and its pseudo-condition number (largest over smallest nonzero ``|lambda|``) is
``kappa(Omega) = sigma_max / sigma_min^+``. For a teacher ``y = Z x``, ``Omega = (W V - Z)
Sigma`` and Eq. (18) bounds ``kappa(H_F) <= kappa(W V - Z) kappa(Sigma)`` (``k <= d``, Sigma
full rank). :func:`functional_hessian_matrix` is the dense autodiff reference.
"""

from __future__ import annotations

import time

import torch
from torch.func import hessian, jacrev

from matcond.gauss_newton._arrays import ArrayLike, as_float64, as_float64_list, device_of
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_factor


def _residuals(weights: list[ArrayLike], x: ArrayLike, y: ArrayLike):
    device = device_of(weights, x, y)
    v, w = as_float64_list(weights, device, "weights")
    x, y = as_float64(x, device, "x"), as_float64(y, device, "y")
    outputs = x @ v.T @ w.T
    return outputs - y, x, max(float(outputs.abs().max()), float(y.abs().max()))


def residual_input_covariance(weights: list[ArrayLike], x: ArrayLike, y: ArrayLike) -> torch.Tensor:
    """``Omega = (1/n) sum_i (W V x_i - y_i) x_i^T`` (``k x d``); ``weights = [V, W]``, samples
    in the rows of ``x`` (``n x d``) and ``y`` (``n x k``)."""
    delta, x, _ = _residuals(weights, x, y)
    return delta.T @ x / x.shape[0]


def omega_spectrum(weights: list[ArrayLike], x: ArrayLike, y: ArrayLike) -> GNSpectrum:
    """The spectrum of ``Omega^T Omega`` from the singular values of ``Omega``: ``sqrt`` of its
    ``kappa`` is ``kappa(H_F)``, its reliability that of ``kappa(H_F)``. Raises ValueError when
    every residual is at the rounding level of the outputs (``H_F`` is then 0 up to rounding
    and has no condition number)."""
    start = time.perf_counter()
    delta, x, scale = _residuals(weights, x, y)
    if float(delta.abs().max()) <= 100 * torch.finfo(torch.float64).eps * scale:
        raise ValueError("H_F is zero up to rounding: the net fits the targets exactly")
    omega = delta.T @ x / x.shape[0]
    return spectrum_from_factor(omega, solver="omega_svd", seconds_from=start)


def functional_hessian_matrix(weights: list[ArrayLike], x: ArrayLike, y: ArrayLike) -> torch.Tensor:
    """Dense ``H_F`` (``p x p``, parameters ``V`` then ``W``, row-major) by autodiff: the loss
    Hessian minus the GN matrix ``J^T J / n``."""
    device = device_of(weights, x, y)
    v, w = as_float64_list(weights, device, "weights")
    x, y = as_float64(x, device, "x"), as_float64(y, device, "y")
    split = v.numel()

    def outputs(theta: torch.Tensor) -> torch.Tensor:
        return x @ theta[:split].reshape(v.shape).T @ theta[split:].reshape(w.shape).T

    def loss(theta: torch.Tensor) -> torch.Tensor:
        return 0.5 * ((outputs(theta) - y) ** 2).sum() / x.shape[0]

    theta = torch.cat([v.flatten(), w.flatten()])
    jac = jacrev(outputs)(theta).reshape(-1, theta.numel())
    return hessian(loss)(theta) - jac.T @ jac / x.shape[0]
