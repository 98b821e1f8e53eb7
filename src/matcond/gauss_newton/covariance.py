"""The input covariance ``Sigma = X^T X / n`` (samples in the rows of ``X``) in factored form.

Linear-network GN matrices depend on the data only through ``Sigma``. We keep it as
``Sigma = R R^T`` with ``R = Q diag(sqrt(lambda))`` (``d x s``, ``s = rank(Sigma)``, ``Q`` the
eigenvectors of the nonzero eigenvalues ``lambda``). Using ``R`` instead of ``Sigma^{1/2}``
removes the data null space exactly: the nonzero eigenvalues of
``G_O = U (I_k (x) Sigma) U^T`` equal those of ``(I_k (x) R)^T U^T U (I_k (x) R)`` (``ks x ks``),
because ``G_O = B B^T`` with ``B = U (I_k (x) R)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from matcond.gauss_newton._arrays import ArrayLike, as_float64, device_of, symmetric
from matcond.gauss_newton.spectrum import EPS, TOLERANCE

# sigma - sigma^T may hold rounding of a computed X^T X / n, not more
SYMMETRY_RTOL = 1e-10


@dataclass(frozen=True)
class InputCovariance:
    """``Sigma = factor @ factor.T`` with ``factor = Q diag(sqrt(eigenvalues))`` (``d x s``)."""

    factor: torch.Tensor
    eigenvalues: torch.Tensor

    @property
    def dim(self) -> int:
        """Input dimension ``d``."""
        return self.factor.shape[0]

    @property
    def rank(self) -> int:
        """``s = rank(Sigma)``."""
        return self.factor.shape[1]

    @property
    def matrix(self) -> torch.Tensor:
        """``Sigma`` itself (``d x d``)."""
        return self.factor @ self.factor.T

    @property
    def sqrt(self) -> torch.Tensor:
        """The PSD square root ``Sigma^{1/2} = Q diag(sqrt(lambda)) Q^T`` (``d x d``)."""
        basis = self.factor / self.eigenvalues.sqrt()
        return self.factor @ basis.T

    @property
    def kappa(self) -> float:
        """Pseudo-condition number ``lambda_max / lambda_min_nonzero`` of ``Sigma``."""
        return float(self.eigenvalues.max() / self.eigenvalues.min())

    def is_isotropic(self, rtol: float = 1e-12) -> bool:
        """Whether all nonzero eigenvalues agree to ``rtol`` (``Sigma = c P``, ``P`` a projector).

        Whitened data ``X = U V^T`` gives ``Sigma = V V^T / n``: isotropic even when ``n < d``.
        """
        return bool(
            self.eigenvalues.max() - self.eigenvalues.min() <= rtol * self.eigenvalues.max()
        )


def input_covariance(
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    device: torch.device | None = None,
) -> InputCovariance:
    """Factor ``Sigma`` from samples ``x`` (``n x d``) or from a given covariance ``sigma``,
    on ``device`` (default: theirs; a caller gives its weights' device).

    From samples the factor comes from the SVD of ``x`` (rank cut at
    ``max(n, d) * eps * s_max`` on singular values, far cleaner than cutting eigenvalues of
    a formed ``Sigma``); from ``sigma`` it comes from ``eigh`` with the cut
    ``d * eps * lambda_max``.
    """
    if (x is None) == (sigma is None):
        raise ValueError("give exactly one of x (samples) and sigma (covariance)")
    device = device_of(x, sigma) if device is None else device
    if x is not None:
        samples = as_float64(x, device, "x")
        if samples.ndim != 2:
            raise ValueError(f"x must be n x d, got shape {tuple(samples.shape)}")
        _, svals, vh = torch.linalg.svd(samples, full_matrices=False)
        keep = svals > max(samples.shape) * EPS * svals.max()
        eigenvalues = svals[keep] ** 2 / samples.shape[0]
        basis = vh[keep].T
    else:
        cov = as_float64(sigma, device, "sigma")
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
            raise ValueError(f"sigma must be square, got shape {tuple(cov.shape)}")
        scale = float(torch.linalg.norm(cov))
        if float(torch.linalg.norm(cov - cov.T)) > SYMMETRY_RTOL * scale:
            raise ValueError("sigma is not symmetric: a covariance must be")
        values, vectors = torch.linalg.eigh(symmetric(cov))
        if float(values.min()) < -cov.shape[0] * EPS * TOLERANCE * float(values.abs().max()):
            raise ValueError(
                f"sigma is not positive semi-definite (eigenvalue {float(values.min()):.3g})"
            )
        keep = values > cov.shape[0] * EPS * values.max()
        eigenvalues, basis = values[keep].flip(0), vectors[:, keep].flip(1)
    if eigenvalues.numel() == 0:
        raise ValueError("the input covariance is zero")
    return InputCovariance(factor=basis * eigenvalues.sqrt(), eigenvalues=eigenvalues)
