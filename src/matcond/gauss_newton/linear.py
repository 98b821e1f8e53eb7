r"""GN matrix of deep linear networks ``F(x) = W_L ... W_1 x`` (GN paper §4.1-4.2).

Weights are given input-first, ``weights = [W_1, ..., W_L]`` with ``W_l`` of shape
``a_l x a_{l-1}`` (``a_0 = d``, ``a_L = k``), as a ``torch.nn.Sequential`` stores them. Write
``A_l = W_L ... W_{l+1}`` (``k x a_l``, ``A_L = I_k``) and ``C_l = W_{l-1} ... W_1``
(``a_{l-1} x d``, ``C_1 = I_d``). With ``Sigma = X^T X / n = R R^T`` (see
:mod:`matcond.gauss_newton.covariance`) the nonzero eigenvalues of ``G_O`` equal those of

* ``kd``: ``sum_l (A_l A_l^T) (x) (Sigma^{1/2} C_l^T C_l Sigma^{1/2})`` — the paper's Eq. (4)-(5),
  written in its *symmetric* form (the paper's code uses the non-symmetric
  ``U^T U (I (x) Sigma)``);
* ``ks``: the same with ``R`` (``d x s``) for ``Sigma^{1/2}``, which drops the data null space;
* ``p``: ``G_O`` itself, blocks ``(A_l^T A_m) (x) (C_l Sigma C_m^T)``, parameters ordered as
  ``torch.cat([W_1.flatten(), ..., W_L.flatten()])`` (row-major ``vec``).

**Analytic rank.** Let ``U_l = col(A_l) \subseteq R^k`` and ``V_l = col((C_l R)^T) \subseteq R^s``.
Since ``A_{l-1} = A_l W_l`` and ``C_{l+1} = W_l C_l`` these are flags,
``U_1 \subseteq ... \subseteq U_L = R^k`` and ``V_1 = R^s \supseteq ... \supseteq V_L``, and the
range of the ``ks`` form is ``sum_l U_l (x) V_l``. In bases adapted to both flags this is the
"staircase" of coordinates ``(i, j)`` with ``i < u_l`` and ``j < v_l`` for some ``l``, so

    rank(G_O) = sum_{l=1}^{L} (u_l - u_{l-1}) v_l,
    u_l = rank(W_L ... W_{l+1}),  v_l = rank(W_{l-1} ... W_1 X^T),  u_0 = 0,

valid for any weights (rank-deficient or not). For generic weights with ``q = min_l a_l``,
``rank(Sigma) = s >= q`` it reduces to Singh et al.'s ``q (s + k - q)``. The ranks of these
small products are numerical ranks (:func:`matcond.gauss_newton._arrays.matrix_rank`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from matcond.gauss_newton._arrays import (
    ArrayLike,
    as_float64_list,
    device_of,
    matrix_rank,
    symmetric,
)
from matcond.gauss_newton.covariance import InputCovariance, input_covariance
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gauss_newton.solvers import (
    SOLVERS,
    Extremes,
    arpack_extremes,
    block_diag_eigenvalues,
    choose_linear_solver,
    dense_eigenvalues,
    kronecker_sum_extremes,
    lanczos_extremes,
    largest_eigenvalue_estimate,
    restricted_matmat,
)
from matcond.gauss_newton.spectrum import (
    GNSpectrum,
    check_rank,
    gap_ratio,
    gram_floor,
    pseudo_kappa,
    spectrum_from_eigenvalues,
    spectrum_from_factor,
)

LinearForm = Literal["kd", "ks", "p"]
# Memory allowed for a formed factor (or a dense fallback) when a result must be refined.
FACTOR_BYTES = 2**29


def check_chain(weights: Sequence[torch.Tensor]) -> None:
    """Raise unless ``weights`` are matrices that chain as ``W_L ... W_1``."""
    if not weights:
        raise ValueError("need at least one weight matrix")
    for index, weight in enumerate(weights):
        if weight.ndim != 2:
            raise ValueError(f"weight {index} is not a matrix: shape {tuple(weight.shape)}")
        if index and weight.shape[1] != weights[index - 1].shape[0]:
            raise ValueError(f"weight {index} ({tuple(weight.shape)}) does not chain")


def partial_products(
    weights: Sequence[torch.Tensor],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``([A_1, ..., A_L], [C_1, ..., C_L])``, ``A_l = W_L...W_{l+1}``, ``C_l = W_{l-1}...W_1``."""
    check_chain(weights)
    num = len(weights)
    eye_in = torch.eye(weights[0].shape[1], dtype=weights[0].dtype, device=weights[0].device)
    eye_out = torch.eye(weights[-1].shape[0], dtype=weights[0].dtype, device=weights[0].device)
    inner = [eye_in]
    for weight in weights[:-1]:
        inner.append(weight @ inner[-1])
    outer = [eye_out]
    for weight in reversed(weights[1:]):
        outer.append(outer[-1] @ weight)
    return outer[::-1], inner[:num]


def _flag(mats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, list[int]]:
    """Orthonormal ``Q`` whose first ``r_i`` columns span ``col(mats[i])``, for nested spaces.

    Requires ``col(mats[0]) <= col(mats[1]) <= ...``; ``r_i`` are numerical ranks, forced to be
    non-decreasing.
    """
    basis = mats[0].new_zeros((mats[0].shape[0], 0))
    ranks: list[int] = []
    for mat in mats:
        rank = max(matrix_rank(mat), basis.shape[1])
        if rank > basis.shape[1]:
            residual = mat - basis @ (basis.T @ mat)
            residual = residual - basis @ (basis.T @ residual)
            new = torch.linalg.svd(residual, full_matrices=False)[0][:, : rank - basis.shape[1]]
            basis = torch.linalg.qr(torch.cat([basis, new], dim=1))[0]
        ranks.append(rank)
    return basis, ranks


@dataclass(frozen=True)
class LinearGNStructure:
    """The factors of the ``ks`` form ``sum_l (A_l A_l^T) (x) ((C_l R)^T (C_l R))``."""

    outer: list[torch.Tensor]
    inner: list[torch.Tensor]
    cov: InputCovariance

    @property
    def num_layers(self) -> int:
        """``L``."""
        return len(self.outer)

    @property
    def kron_dim(self) -> int:
        """``k s``, the side of the ``ks`` form."""
        return self.outer[0].shape[0] * self.cov.rank

    @property
    def param_dim(self) -> int:
        """``p``, the number of parameters."""
        return sum(a.shape[1] * c.shape[0] for a, c in zip(self.outer, self.inner, strict=True))

    def reduced_inner(self) -> list[torch.Tensor]:
        """``[C_l R]`` (``a_{l-1} x s``)."""
        return [c @ self.cov.factor for c in self.inner]

    def operator(self, data_factor: torch.Tensor | None = None) -> KroneckerSum:
        """``sum_l (A_l A_l^T) (x) ((C_l F)^T (C_l F))`` with ``F = R`` unless given."""
        factor = self.cov.factor if data_factor is None else data_factor
        right = [c @ factor for c in self.inner]
        left = [symmetric(a @ a.T) for a in self.outer]
        return KroneckerSum(left, [symmetric(cr.T @ cr) for cr in right])

    def factor(self) -> torch.Tensor:
        """``F`` (``ks x p``) with ``F F^T`` the ``ks`` form: ``[A_l (x) (C_l R)^T]_l``."""
        blocks = []
        for a, cr in zip(self.outer, self.reduced_inner(), strict=True):
            # kron by broadcasting: torch.kron fails on some strides of size-1 dimensions
            block = a[:, None, :, None] * cr.T[None, :, None, :]
            blocks.append(block.reshape(a.shape[0] * cr.shape[1], a.shape[1] * cr.shape[0]))
        return torch.cat(blocks, dim=1)

    def param_gram(self) -> torch.Tensor:
        """``G_O`` (``p x p``) with row-major ``vec`` of each ``W_l``, input layer first."""
        reduced = self.reduced_inner()
        rows = []
        for a_l, cr_l in zip(self.outer, reduced, strict=True):
            blocks = [
                torch.kron(a_l.T @ a_m, cr_l @ cr_m.T)
                for a_m, cr_m in zip(self.outer, reduced, strict=True)
            ]
            rows.append(torch.cat(blocks, dim=1))
        return torch.cat(rows, dim=0)

    def flags(self) -> tuple[torch.Tensor, list[int], torch.Tensor, list[int]]:
        """``(E, [u_l], F, [v_l])``: bases of ``R^k`` and ``R^s`` adapted to the two flags."""
        e_basis, u = _flag(self.outer)
        f_basis, v_rev = _flag([cr.T for cr in reversed(self.reduced_inner())])
        return e_basis, u, f_basis, v_rev[::-1]

    def staircase(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(E, F, mask)``: the range of the ``ks`` form is ``mask`` in the ``E (x) F`` basis."""
        e_basis, u, f_basis, v = self.flags()
        mask = torch.zeros(
            (e_basis.shape[1], f_basis.shape[1]), dtype=torch.bool, device=e_basis.device
        )
        previous = 0
        for u_l, v_l in zip(u, v, strict=True):
            mask[previous:u_l, :v_l] = True
            previous = u_l
        return e_basis, f_basis, mask

    def rank(self) -> int:
        """The analytic rank ``sum_l (u_l - u_{l-1}) v_l`` (see the module docstring)."""
        _, u, _, v = self.flags()
        return sum((u_l - u_prev) * v_l for u_l, u_prev, v_l in zip(u, [0, *u], v, strict=False))


def linear_gn_structure(
    weights: Sequence[ArrayLike], x: ArrayLike | None = None, *, sigma: ArrayLike | None = None
) -> LinearGNStructure:
    """Factor a deep linear network's GN matrix; data as samples ``x`` (``n x d``) or ``sigma``."""
    device = device_of(weights, x, sigma)
    mats = as_float64_list(weights, device, "weights")
    cov = input_covariance(x, sigma=sigma, device=device)
    if mats[0].shape[1] != cov.dim:
        raise ValueError(f"W_1 takes {mats[0].shape[1]} inputs but the data have {cov.dim}")
    outer, inner = partial_products(mats)
    # the GN matrix holds the products' Gram matrices: their entries must fit in float64
    if not all(bool(torch.isfinite(p.abs().max() ** 2 * max(p.shape))) for p in outer + inner):
        raise ValueError("the products of the weights overflow float64: scale the weights down")
    return LinearGNStructure(outer=outer, inner=inner, cov=cov)


def linear_gn_matrix(
    weights: Sequence[ArrayLike],
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    form: LinearForm = "kd",
) -> torch.Tensor:
    """The dense ``kd``, ``ks`` or ``p`` form (module docstring); all share nonzero eigenvalues."""
    structure = linear_gn_structure(weights, x, sigma=sigma)
    if form == "kd":
        return structure.operator(structure.cov.sqrt).dense()
    if form == "ks":
        return structure.operator().dense()
    if form == "p":
        return structure.param_gram()
    raise ValueError(f"unknown form {form!r}")


def linear_gn_rank(
    weights: Sequence[ArrayLike], x: ArrayLike | None = None, *, sigma: ArrayLike | None = None
) -> int:
    """Analytic rank of ``G_O`` (module docstring)."""
    return linear_gn_structure(weights, x, sigma=sigma).rank()


def _closed_form(structure: LinearGNStructure, start: float) -> GNSpectrum:
    """Kronecker sums: ``L = 1``: ``0 (+) Sigma``; ``L = 2`` with ``Sigma = c P``:
    ``(c W_2 W_2^T) (+) (R^T W_1^T W_1 R)``."""
    cov = structure.cov
    k = structure.outer[0].shape[0]
    if structure.num_layers == 1:
        a_eigs, rank_a = cov.eigenvalues.new_zeros(k), 0
        c_eigs, rank_c = cov.eigenvalues.flip(0), cov.rank
    elif structure.num_layers == 2 and cov.is_isotropic():
        _, u, _, v = structure.flags()
        kron = structure.operator()
        a_eigs = dense_eigenvalues(cov.eigenvalues.mean() * kron.left[0])
        c_eigs, rank_a, rank_c = dense_eigenvalues(kron.right[1]), u[0], v[1]
    else:
        raise ValueError("closed_form needs L = 1, or L = 2 with isotropic (whitened) data")
    lam_max, lam_min, rank, dropped = kronecker_sum_extremes(a_eigs, c_eigs, rank_a, rank_c)
    return GNSpectrum(
        kappa=pseudo_kappa(lam_max, lam_min),
        lambda_max=lam_max,
        lambda_min_nonzero=lam_min,
        rank=rank,
        gap_at_cut=gap_ratio(lam_min, dropped),
        solver="closed_form",
        seconds=time.perf_counter() - start,
        dim=structure.kron_dim,
        rank_source="analytic",
        floor=gram_floor(lam_max, max(a_eigs.numel(), c_eigs.numel())),
    )


def _block_diag(structure: LinearGNStructure) -> torch.Tensor:
    """All eigenvalues of the ``ks`` form of a net with ``L <= 2`` by block diagonalisation."""
    kron = structure.operator()
    if structure.num_layers == 1:
        return block_diag_eigenvalues(kron.left[0], kron.right[0], torch.zeros_like(kron.right[0]))
    if structure.num_layers == 2:
        return block_diag_eigenvalues(kron.left[0], kron.right[0], kron.right[1])
    raise ValueError("block_diag needs at most one hidden layer (L <= 2)")


def _lanczos(structure: LinearGNStructure, start: float, solver: str, tol: float) -> GNSpectrum:
    """Lanczos (``lanczos`` or ``arpack``) on the ``ks`` form compressed to its range."""
    e_basis, f_basis, mask = structure.staircase()
    rotated = structure.operator().congruence(e_basis, f_basis)
    rank = int(mask.sum())
    check_rank(rank, structure.kron_dim)
    device = e_basis.device
    solve = lanczos_extremes if solver == "lanczos" else arpack_extremes
    found: Extremes = solve(restricted_matmat(rotated, mask), rank, device, tol)
    dropped = largest_eigenvalue_estimate(
        restricted_matmat(rotated, ~mask), structure.kron_dim - rank, device
    )
    return GNSpectrum(
        kappa=pseudo_kappa(found.top, found.bottom),
        lambda_max=found.top,
        lambda_min_nonzero=found.bottom,
        rank=rank,
        gap_at_cut=gap_ratio(found.bottom, dropped),
        solver=solver,
        seconds=time.perf_counter() - start,
        dim=structure.kron_dim,
        rank_source="analytic",
        floor=gram_floor(found.top, rank),
        converged=found.converged,
        residual=found.residual,
    )


def _dense(structure: LinearGNStructure, start: float, solver: str) -> GNSpectrum:
    """Every eigenvalue of the smaller of the ``ks`` and ``p`` forms, or of the blocks."""
    if solver == "block_diag":
        eigenvalues = _block_diag(structure)
        floor = gram_floor(float(eigenvalues.max()), structure.cov.rank)
    elif structure.param_dim < structure.kron_dim:
        eigenvalues = dense_eigenvalues(structure.param_gram())
        floor = None
    else:  # exactly symmetric (its factors are): no symmetrising pass over kd^2 entries
        eigenvalues = torch.linalg.eigvalsh(structure.operator().dense())
        floor = None
    return spectrum_from_eigenvalues(
        eigenvalues,
        solver=solver,
        seconds=time.perf_counter() - start,
        rank=structure.rank(),
        floor=floor,
    )


def _spectrum(
    structure: LinearGNStructure,
    *,
    solver: str = "auto",
    dense_max: int = 4096,
    lanczos_tol: float = 1e-10,
    factor_bytes: int = FACTOR_BYTES,
) -> GNSpectrum:
    """:func:`linear_gn_spectrum` of a factored network."""
    start = time.perf_counter()
    if solver == "auto":
        solver = choose_linear_solver(
            structure.num_layers,
            structure.cov.is_isotropic(),
            structure.kron_dim,
            structure.param_dim,
            dense_max,
        )
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose from {SOLVERS} or 'auto'")
    if solver == "closed_form":
        result = _closed_form(structure, start)
    elif solver in ("lanczos", "arpack"):
        result = _lanczos(structure, start, solver, lanczos_tol)
        if not result.converged and 8 * structure.kron_dim**2 <= factor_bytes:
            result = _dense(structure, start, "dense")
    else:
        result = _dense(structure, start, solver)
    if result.reliable or 8 * structure.kron_dim * structure.param_dim > factor_bytes:
        return result
    # the singular values of the factor resolve eps^2, not eps, of lambda_max
    return spectrum_from_factor(
        structure.factor(), solver="factor_svd", seconds_from=start, rank=structure.rank()
    )


def linear_gn_spectrum(
    weights: Sequence[ArrayLike],
    x: ArrayLike | None = None,
    *,
    sigma: ArrayLike | None = None,
    solver: str = "auto",
    dense_max: int = 4096,
    lanczos_tol: float = 1e-10,
) -> GNSpectrum:
    """Pseudo-condition number of the GN matrix of ``W_L ... W_1 x`` with the analytic rank.

    ``solver`` is ``"auto"`` (:func:`matcond.gauss_newton.solvers.choose_linear_solver`) or one
    of ``closed_form``, ``block_diag``, ``dense`` (the smaller of the ``ks`` and ``p`` forms),
    ``lanczos`` or ``arpack`` (on the range of the ``ks`` form; ``lanczos_tol`` is the relative
    Ritz residual, resp. ARPACK's tolerance). Data are samples ``x`` (``n x d``) or ``sigma``.

    A Lanczos run that does not converge falls back to the dense solve (within
    ``FACTOR_BYTES``); a result that is not reliable (:class:`GNSpectrum`) is recomputed from
    the singular values of the factor ``F`` of the ``ks`` form when it fits in
    ``FACTOR_BYTES`` (solver ``factor_svd``); what still is not reliable is returned flagged.
    """
    structure = linear_gn_structure(weights, x, sigma=sigma)
    return _spectrum(structure, solver=solver, dense_max=dense_max, lanczos_tol=lanczos_tol)
