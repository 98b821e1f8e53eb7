"""Eigenvalue solvers for GN matrices, from closed forms to matrix-free Lanczos.

- ``closed_form``: a Kronecker sum ``A (x) I + I (x) C`` has the eigenvalues ``a_i + c_j``
  (all pairs), so its extreme eigenvalues need only the small factors.
- ``block_diag``: ``A (x) B + I (x) C`` with ``A = Q diag(a) Q^T`` is similar, through
  ``Q (x) I``, to the block diagonal matrix with blocks ``a_i B + C``: all eigenvalues exactly in
  ``O(dim(A)^3 + dim(A) dim(B)^3)``.
- ``dense``: ``eigvalsh`` of the formed matrix.
- ``lanczos``: unrestarted Lanczos in torch on a matrix-free operator (on the operator's
  device); ``arpack``: ``scipy.sparse.linalg.eigsh`` (implicitly restarted Lanczos) on the
  same operator, as an independent implementation. Lanczos finds extreme eigenvalues, and the
  smallest one of a singular matrix is 0, so the callers hand it an operator restricted to the
  range of the GN matrix (positive definite there): its smallest eigenvalue is then the
  smallest *nonzero* one of the GN matrix. Both stop after a bounded number of steps and say
  whether their Ritz values converged (:class:`Extremes`); the caller falls back to a dense
  solve or flags the result, never returning unconverged values as if they were good.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg import eigh_tridiagonal
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from matcond.gauss_newton._arrays import symmetric
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gauss_newton.spectrum import EPS

SOLVERS = ("closed_form", "block_diag", "dense", "lanczos", "arpack")
SMALL_OPERATOR = 16

MatMat = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Extremes:
    """Extreme eigenvalues from an iterative solver: converged or not, and the largest
    relative residual of the two Ritz pairs."""

    top: float
    bottom: float
    converged: bool
    residual: float


def dense_eigenvalues(matrix: torch.Tensor) -> torch.Tensor:
    """All eigenvalues (ascending) of a symmetric matrix, symmetrised against rounding."""
    return torch.linalg.eigvalsh(symmetric(matrix))


def kronecker_sum_extremes(
    a_eigs: torch.Tensor, c_eigs: torch.Tensor, rank_a: int, rank_c: int
) -> tuple[float, float, int, float]:
    """Extremes of the spectrum ``{a_i + c_j}`` of the Kronecker sum of PSD ``A`` and ``C``.

    ``rank_a`` / ``rank_c`` say how many of the (ascending) eigenvalues of ``A`` / ``C`` are
    nonzero; the others are treated as exact zeros. Returns ``(lambda_max, lambda_min_nonzero,
    rank, largest_dropped)``: a sum ``a_i + c_j`` is zero exactly when both terms are, so the rank
    is ``dim(A) dim(C) - (dim(A) - rank_a)(dim(C) - rank_c)``, and ``largest_dropped`` is the
    computed value of the largest of the dropped sums (0 when none is dropped).
    """
    za, zc = a_eigs.numel() - rank_a, c_eigs.numel() - rank_c
    a = torch.cat([torch.zeros(za, dtype=a_eigs.dtype, device=a_eigs.device), a_eigs[za:]])
    c = torch.cat([torch.zeros(zc, dtype=c_eigs.dtype, device=c_eigs.device), c_eigs[zc:]])
    lam_max = float(a[-1] + c[-1])
    if za and zc:
        candidates = [float(a[za])] if rank_a else []
        candidates += [float(c[zc])] if rank_c else []
        if not candidates:
            raise ValueError("the Kronecker sum is zero")
        lam_min = min(candidates)
        dropped = float(a_eigs[za - 1].abs() + c_eigs[zc - 1].abs())
    else:
        lam_min = float(a[0] + c[0])
        dropped = 0.0
    rank = a.numel() * c.numel() - za * zc
    return lam_max, lam_min, rank, dropped


def block_diag_eigenvalues(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, max_batch_bytes: int = 2**25
) -> torch.Tensor:
    """All eigenvalues of ``A (x) B + I (x) C`` (symmetric ``A``, ``B``, ``C``).

    The blocks ``a_i B + C`` are diagonalised in batches of at most ``max_batch_bytes``.
    """
    a_eigs = torch.linalg.eigvalsh(symmetric(a))
    block = b.shape[0]
    per_batch = max(1, max_batch_bytes // (8 * block * block))
    out = []
    for start in range(0, a_eigs.numel(), per_batch):
        scales = a_eigs[start : start + per_batch]
        blocks = scales[:, None, None] * b + c
        out.append(torch.linalg.eigvalsh(symmetric(blocks)).flatten())
    return torch.cat(out)


def restricted_matmat(op: KroneckerSum, mask: torch.Tensor) -> MatMat:
    """The compression ``P^T G P`` of ``op`` to the coordinates where ``mask`` is true.

    ``mask`` has the shape ``op.factor_dims`` and indexes the flattened coordinates; ``P`` is
    the coordinate injection. When the masked coordinates span an invariant subspace (the
    range of a PSD ``G``), the compression has exactly the nonzero eigenvalues of ``G``.
    """
    if bool(mask.all()):
        return op.matmat
    index = mask.flatten().nonzero().squeeze(1)

    def matmat(vectors: torch.Tensor) -> torch.Tensor:
        full = vectors.new_zeros((op.dim, *vectors.shape[1:]))
        full[index] = vectors
        return op.matmat(full)[index]

    return matmat


def _small_extremes(matmat: MatMat, dim: int, device: torch.device) -> Extremes:
    """Extreme eigenvalues of a small operator, formed densely (exact: converged)."""
    values = dense_eigenvalues(matmat(torch.eye(dim, dtype=torch.float64, device=device)))
    return Extremes(float(values[-1]), float(values[0]), True, 0.0)


def _extreme_ritz(alphas: list[float], betas: list[float], index: int) -> tuple[float, float]:
    """Ritz value ``index`` of the Lanczos tridiagonal and its residual ``beta_m |s_m|``."""
    values, vectors = eigh_tridiagonal(
        np.array(alphas), np.array(betas[:-1]), select="i", select_range=(index, index)
    )
    return float(values[0]), abs(betas[-1] * float(vectors[-1, 0]))


def lanczos_extremes(
    matmat: MatMat,
    dim: int,
    device: torch.device,
    tol: float = 1e-10,
    max_steps: int | None = None,
    check_every: int = 25,
) -> Extremes:
    """``lambda_max`` and ``lambda_min`` of a symmetric operator by unrestarted Lanczos.

    Three vectors on ``device``, no reorthogonalisation: lost orthogonality only makes
    converged Ritz values reappear ("ghosts"), the extreme ones still converge (Paige). The
    iteration stops when both extreme Ritz values ``theta`` have residual
    ``beta_m |s_m| <= tol |theta|`` (which bounds their distance to an eigenvalue; for the
    smallest, at least ``dim * eps * lambda_max``, the rounding level), or on breakdown
    (an invariant subspace); after ``max_steps`` (default ``10 dim``) it returns what it has,
    marked not converged. Operators of size at most ``SMALL_OPERATOR`` are solved densely.
    """
    if dim <= SMALL_OPERATOR:
        return _small_extremes(matmat, dim, device)
    generator = torch.Generator(device=device).manual_seed(0)
    vector = torch.randn(dim, dtype=torch.float64, device=device, generator=generator)
    vector /= vector.norm()
    previous = torch.zeros_like(vector)
    alphas: list[float] = []
    betas: list[float] = [0.0]
    scale = 0.0
    steps = max(1, 10 * dim if max_steps is None else max_steps)
    for step in range(1, steps + 1):
        image = matmat(vector) - betas[-1] * previous
        alphas.append(float(image @ vector))
        image -= alphas[-1] * vector
        betas.append(float(image.norm()))
        scale = max(scale, abs(alphas[-1]) + betas[-1])
        breakdown = betas[-1] <= dim * EPS * scale
        if breakdown or step % check_every == 0 or step == steps:
            top, top_res = _extreme_ritz(alphas, betas[1:], step - 1)
            bottom, bottom_res = _extreme_ritz(alphas, betas[1:], 0)
            floor = dim * EPS * abs(top)
            residual = max(top_res / abs(top), bottom_res / max(abs(bottom), floor))
            if breakdown or (
                top_res <= tol * abs(top) and bottom_res <= max(tol * abs(bottom), floor)
            ):
                return Extremes(top, bottom, True, residual)
        previous, vector = vector, image / betas[-1]
    return Extremes(top, bottom, False, residual)


def arpack_extremes(
    matmat: MatMat, dim: int, device: torch.device, tol: float = 1e-12, maxiter: int = 2000
) -> Extremes:
    """``lambda_max`` and ``lambda_min`` of a symmetric operator by ARPACK (LA then SA).

    ``tol`` is ARPACK's relative accuracy of the Ritz values; ``maxiter`` bounds its restarts.
    Without convergence the best Ritz values found are returned, marked not converged. On CPU,
    torch runs single-threaded meanwhile: ARPACK's OpenBLAS threads and torch's OpenMP threads
    otherwise spin against each other (a 5x slowdown measured on 2 cores).
    """
    if dim <= SMALL_OPERATOR:
        return _small_extremes(matmat, dim, device)

    def apply(vectors: np.ndarray) -> np.ndarray:
        tensor = torch.as_tensor(np.asarray(vectors, dtype=np.float64), device=device)
        return matmat(tensor).cpu().numpy()

    operator = LinearOperator((dim, dim), matvec=apply, matmat=apply, dtype=np.float64)
    start = np.random.default_rng(0).standard_normal(dim)
    options = {"k": 1, "tol": tol, "v0": start, "ncv": min(dim, 64), "maxiter": maxiter}
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)
    found, converged = [], True
    try:
        for which in ("LA", "SA"):
            try:
                found.append(float(eigsh(operator, which=which, **options)[0][0]))
            except ArpackNoConvergence as err:
                converged = False
                found.append(float(err.eigenvalues[0]) if len(err.eigenvalues) else math.nan)
    finally:
        torch.set_num_threads(threads)
    residual = 0.0 if converged else math.inf
    return Extremes(found[0], found[1], converged, residual)


def largest_eigenvalue_estimate(
    matmat: MatMat, dim: int, device: torch.device, iterations: int = 30
) -> float:
    """Power-iteration estimate (a lower bound) of ``|lambda|_max`` of a symmetric operator."""
    if dim == 0:
        return 0.0
    generator = torch.Generator(device=device).manual_seed(0)
    vector = torch.randn(dim, dtype=torch.float64, device=device, generator=generator)
    vector /= vector.norm()
    value = 0.0
    for _ in range(iterations):
        image = matmat(vector)
        value = float(image.norm())
        if value == 0.0:
            return 0.0
        vector = image / value
    return value


def choose_linear_solver(
    num_layers: int, isotropic: bool, kron_dim: int, param_dim: int, dense_max: int
) -> str:
    """Solver for a deep linear / residual GN matrix by structure and size.

    ``closed_form`` for ``L = 1`` (``G = I_k (x) Sigma``) and for one hidden layer on whitened
    data (``Sigma = c P``: a Kronecker sum); ``block_diag`` for one hidden layer otherwise;
    ``dense`` when the smaller of the ``ks x ks`` and ``p x p`` forms has at most ``dense_max``
    rows; ``lanczos`` beyond.
    """
    if num_layers == 1 or (num_layers == 2 and isotropic):
        return "closed_form"
    if num_layers == 2:
        return "block_diag"
    return "dense" if min(kron_dim, param_dim) <= dense_max else "lanczos"
