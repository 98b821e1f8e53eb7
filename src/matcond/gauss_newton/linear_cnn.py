r"""GN matrix of a two-layer linear CNN (GN paper Fig. 8), exactly through its Jacobian.

The network maps an image ``x`` (``H x W``, one channel) to ``y = R vec(K * x)``: ``F``
filters ``K`` (``F x s x s``, odd ``s``, stride 1, zero padding ``s // 2``, no bias) followed
by a linear read-out ``R`` (``k x F H W``, the feature maps flattened filter-major). With the
patches ``P(x)`` (``s^2 x H W``, as ``torch.nn.functional.unfold``) the feature maps are
``h_f = K_f P(x)``, so

* ``d y_a / d K[f, q] = sum_t R[a, f, t] P[q, t]``,
* ``d y_a / d R[b, f, t] = delta_ab h_f[t]``,

and ``J`` (``nk x p``, rows sample-major, columns ``[K.flatten(), R.flatten()]``) is formed
directly, without autodiff. κ is the pseudo-condition number of ``J^T J / n`` from the
smaller Gram form, with the rank cut at the computation's precision and a refinement from the
singular values of ``J`` when the Gram result is not reliable (:mod:`.spectrum`).
"""

from __future__ import annotations

import time

import torch

from matcond.gauss_newton._arrays import ArrayLike, as_float64, device_of
from matcond.gauss_newton.linear import FACTOR_BYTES
from matcond.gauss_newton.solvers import dense_eigenvalues
from matcond.gauss_newton.spectrum import (
    GNSpectrum,
    spectrum_from_eigenvalues,
    spectrum_from_factor,
)


def linear_cnn_jacobian(kernel: ArrayLike, readout: ArrayLike, images: ArrayLike) -> torch.Tensor:
    """``J`` (``nk x p``) of the linear CNN at ``kernel`` (``F x s x s``) and ``readout``
    (``k x F H W``) on ``images`` (``n x H x W``)."""
    device = device_of(kernel, readout, images)
    kernel, readout, images = (as_float64(a, device) for a in (kernel, readout, images))
    filters, size, _ = kernel.shape
    if size % 2 == 0:
        raise ValueError(f"kernel size {size} must be odd (same-size output)")
    n, height, width = images.shape
    k = readout.shape[0]
    if readout.shape[1] != filters * height * width:
        raise ValueError(f"readout has {readout.shape[1]} columns, expected F H W")
    patches = torch.nn.functional.unfold(images[:, None], size, padding=size // 2)
    maps = torch.einsum("fq,nqt->nft", kernel.reshape(filters, -1), patches)
    per_filter = readout.reshape(k, filters, height * width)
    jac_kernel = torch.einsum("aft,nqt->nafq", per_filter, patches).reshape(n * k, -1)
    eye = torch.eye(k, dtype=torch.float64, device=device)
    jac_readout = torch.einsum("ab,nft->nabft", eye, maps).reshape(n * k, -1)
    return torch.cat([jac_kernel, jac_readout], dim=1)


def linear_cnn_gn_spectrum(
    kernel: ArrayLike,
    readout: ArrayLike,
    images: ArrayLike,
    *,
    factor_bytes: int = FACTOR_BYTES,
) -> GNSpectrum:
    """Pseudo-condition number of the linear CNN's GN matrix (module docstring)."""
    start = time.perf_counter()
    jac = linear_cnn_jacobian(kernel, readout, images) / torch.as_tensor(images).shape[0] ** 0.5
    gram = jac @ jac.T if jac.shape[0] <= jac.shape[1] else jac.T @ jac
    result = spectrum_from_eigenvalues(
        dense_eigenvalues(gram), solver="dense_jacobian_gram", seconds=time.perf_counter() - start
    )
    if result.reliable or 8 * jac.numel() > factor_bytes:
        return result
    return spectrum_from_factor(jac, solver="jacobian_svd", seconds_from=start)
